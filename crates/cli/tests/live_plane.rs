//! A live plane (issue 23): read commands beside a plane that writes and a
//! sweep that runs, on one redb file, as separate processes; a file held
//! alone by another process named as such; on PostgreSQL, commands that read
//! never write, connection failures name the server, and no password of a
//! store URL is ever printed; and the one way a command finds its plane.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long the readers run beside the writer: 12 s by default (the issue
/// asked for 30; 12 s keeps the suite fast and still spans about ten sweep
/// rounds and several demo batches on two cores), `AGENTPLANE_LIVE_SECONDS`
/// for longer.
fn live_seconds() -> u64 {
    std::env::var("AGENTPLANE_LIVE_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(12)
}

/// A witness server watching the plane in `dir`'s tenant, added to its
/// configuration with a quorum of one.
fn add_witness(dir: &Path, tenant: &str) -> (witness_server::WitnessServer, tempfile::TempDir) {
    let state = tempfile::tempdir().unwrap();
    let keys = json(dir, &["--tenant", tenant, "keys", "--json"]);
    let logs = vec![witness_server::LogConfig {
        origin: keys["origin"].as_str().unwrap().to_owned(),
        keys: vec![witness::VerifierKey::parse(keys["log_key"].as_str().unwrap()).unwrap()],
    }];
    let cosigner = witness::Cosigner::new(
        witness::SignerKey::from_seed("live.test/w0", witness::ALG_COSIGNATURE_V1, [61; 32]).unwrap(),
    )
    .unwrap();
    let vkey = cosigner.verifier_key().to_string();
    let config = witness_server::WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner,
        logs,
        clock: std::sync::Arc::new(witness_server::SystemClock),
    };
    let server = witness_server::WitnessServer::start(config, &state.path().join("w0.redb"), "127.0.0.1:0").unwrap();
    let mut toml = std::fs::read_to_string(dir.join("agentplane.toml")).unwrap().replace("quorum = 0", "quorum = 1");
    toml.push_str(&format!("\n[[witness]]\nurl = \"{}\"\nkey = \"{vkey}\"\n", server.url()));
    std::fs::write(dir.join("agentplane.toml"), toml).unwrap();
    (server, state)
}

/// R-WIT-8 (the sweep runs off the run path): on one redb file, a plane
/// process writing demo batches, `agentplane sweep --every 1s` as another
/// process, and four reader processes in loops (`runs`, `show`, `audit`,
/// `cost`): every reader call succeeds, every audit is clean, every demo
/// batch succeeds, and the sweep is still running at the end.
#[test]
fn r_wit_8_readers_run_beside_a_writing_plane_and_its_sweep_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    let (_witness, _state) = add_witness(plane, "shop");
    ok(plane, &["demo"]);
    let run = json(plane, &["runs", "--outcome", "succeeded", "--json"])[0]["run"].as_str().unwrap().to_owned();
    let log_key = ok(plane, &["keys", "--print", "log-key"]).trim().to_owned();
    let record_key = ok(plane, &["keys", "--print", "record-key"]).trim().to_owned();

    let mut sweep = Command::new(env!("CARGO_BIN_EXE_agentplane"))
        .current_dir(plane)
        .args(["sweep", "--every", "1s"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(plane.join("sweep.err")).unwrap())
        .spawn()
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(live_seconds());
    let failed = AtomicBool::new(false);
    let readers: [(&str, Vec<&str>); 4] = [
        ("runs", vec!["runs", "--json"]),
        ("show", vec!["show", run.as_str(), "--json"]),
        (
            "audit",
            vec![
                "audit",
                "--log-key",
                log_key.as_str(),
                "--record-key",
                record_key.as_str(),
                "--require-signature",
                "--json",
            ],
        ),
        ("cost", vec!["cost", "--json"]),
    ];
    let (batches, calls) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut batches = 0;
            while Instant::now() < deadline && !failed.load(Ordering::Relaxed) {
                let out = agentplane(plane, &["demo"]);
                if !out.status.success() {
                    failed.store(true, Ordering::Relaxed);
                    panic!("a demo batch failed beside the readers and the sweep: {}", text(&out));
                }
                batches += 1;
            }
            batches
        });
        let readers: Vec<_> = readers
            .iter()
            .map(|(name, args)| {
                let failed = &failed;
                scope.spawn(move || {
                    let mut calls = 0;
                    while Instant::now() < deadline && !failed.load(Ordering::Relaxed) {
                        let out = agentplane(plane, args);
                        if !out.status.success() {
                            failed.store(true, Ordering::Relaxed);
                            panic!("`agentplane {}` failed beside the plane: {}", args.join(" "), text(&out));
                        }
                        if *name == "audit" {
                            let report: Value = serde_json::from_slice(&out.stdout).unwrap();
                            assert!(report["findings"].as_array().unwrap().is_empty(), "{report}");
                            assert_ne!(report["verdict"], "findings", "{report}");
                        }
                        calls += 1;
                    }
                    (*name, calls)
                })
            })
            .collect();
        let calls: Vec<(&str, u32)> = readers.into_iter().map(|reader| reader.join().unwrap()).collect();
        (writer.join().unwrap(), calls)
    });

    let still_running = sweep.try_wait().unwrap().is_none();
    sweep.kill().unwrap();
    sweep.wait().unwrap();
    let said = std::fs::read_to_string(plane.join("sweep.err")).unwrap();
    assert!(still_running, "the sweep stopped beside the plane: {said}");
    assert!(batches >= 1, "the writer ran");
    for (name, count) in &calls {
        assert!(*count >= 1, "{name} ran at least once beside the writer: {calls:?}");
    }
    eprintln!("beside the sweep: {batches} demo batches; reader calls {calls:?}");
    // The kill is a crash of the sweep: killed while it held the file open,
    // it leaves the file needing a repair, which a signing command refuses
    // to do by accident. The operator's remedy, as the refusal says it (a
    // clean file opens cleanly and is left as it is).
    ok(plane, &["repair"]);
    assert!(ok(plane, &["verify", "--require-signature"]).contains("clean and complete"));
    let (code, reports) = {
        let out = agentplane(plane, &["sweep", "--json"]);
        let text = String::from_utf8(out.stdout).unwrap();
        let reports: Vec<Value> =
            serde_json::Deserializer::from_str(&text).into_iter::<Value>().map(Result::unwrap).collect();
        (out.status.code(), reports)
    };
    assert_eq!(code, Some(0), "{reports:?}");
}

/// A reader that finds the file held alone by another process (here this
/// test, with redb's default exclusive opening, as `agentplane compact` or
/// an older build holds it) says it is held, by whom, and what to do: not
/// that the file is not a store. Exit 2; once the holder is gone the plane
/// verifies clean.
#[test]
fn a_reader_refused_by_an_exclusive_holder_names_it_and_the_remedy() {
    let root = tempfile::tempdir().unwrap();
    ok(root.path(), &["demo"]);
    let plane = root.path().join("agentplane-demo");
    let store = plane.join("agentplane.redb");
    let held = redb::Database::open(&store).unwrap();
    let stderr = fails(&plane, &["runs"], 2);
    assert!(stderr.contains("held by another process"), "{stderr}");
    assert!(stderr.contains(&format!("pid {}", std::process::id())), "the holder is named: {stderr}");
    assert!(stderr.contains("Wait for that process to finish"), "the remedy: {stderr}");
    assert!(!stderr.contains("not a readable agentplane store"), "{stderr}");
    let stderr = fails(&plane, &["demo"], 2);
    assert!(stderr.contains("held by another process"), "a writer too: {stderr}");
    drop(held);
    assert!(ok(&plane, &["verify", "--require-signature"]).contains("clean and complete"));
}

/// After `agentplane demo`, a command in the same folder says where the
/// plane is (`cd agentplane-demo`); `--store` of the plane's store finds its
/// configuration and keys beside it; `init --store/--keys` are written.
#[test]
fn a_command_finds_its_plane_or_says_where_it_is() {
    let root = tempfile::tempdir().unwrap();
    let said = agentplane(root.path(), &["demo"]);
    assert!(text(&said).contains("cd agentplane-demo"), "{}", text(&said));
    let stderr = fails(root.path(), &["runs"], 2);
    assert!(stderr.contains("cd agentplane-demo"), "{stderr}");
    let runs = json(root.path(), &["--store", "agentplane-demo/agentplane.redb", "runs", "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), 9, "the plane found from its store: {runs}");
    assert!(
        ok(root.path(), &["--store", "agentplane-demo/agentplane.redb", "verify", "--require-signature"])
            .contains("clean and complete"),
        "its key file found too"
    );

    let other = tempfile::tempdir().unwrap();
    ok(other.path(), &["--store", "journal.redb", "--keys", "plane.key", "init"]);
    let config = std::fs::read_to_string(other.path().join("agentplane.toml")).unwrap();
    assert!(config.contains("store = \"journal.redb\"") && config.contains("keys = \"plane.key\""), "{config}");
    assert!(other.path().join("plane.key").is_file());
    ok(other.path(), &["demo"]);
    assert!(other.path().join("journal.redb").is_file() && !other.path().join("agentplane.redb").exists());
}

/// The test server's URL with a password put in (the throwaway server trusts
/// every connection, so any password is accepted): the secret to look for.
fn url_with_password(url: &str, password: &str) -> String {
    let config: postgres::Config = url.parse().unwrap();
    let user = config.get_user().unwrap_or("postgres");
    let rest = url.split_once('@').map_or_else(|| url.split_once("://").unwrap().1, |(_, rest)| rest);
    format!("postgres://{user}:{password}@{rest}")
}

fn table_count(url: &str) -> i64 {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client
        .query_one("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'", &[])
        .unwrap()
        .get(0)
}

/// Commands that read never write (issue 23): `runs`, `audit`, `show`,
/// `cost`, `verify` and `prove` on an empty database say "no agentplane store
/// here" (exit 2) and leave it empty; `agentplane migrate` makes the schema.
#[test]
fn read_commands_on_an_empty_postgresql_database_leave_it_empty() {
    let url = store_pg::testkit::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let origin = "agentplane.local/plane/default";
    let keys = tempfile::tempdir().unwrap();
    ok(keys.path(), &["init"]);
    let log_key = ok(keys.path(), &["keys", "--print", "log-key"]).trim().to_owned();
    let log_key = log_key.as_str();
    for args in [
        vec!["runs"],
        vec!["show", "run-1"],
        vec!["cost"],
        vec!["prove", "--consistency", "1"],
        vec!["audit", "--log-key", log_key],
    ] {
        let mut all = vec!["--store", url.as_str(), "--origin", origin];
        all.extend(args.iter().copied());
        let stderr = fails(dir.path(), &all, 2);
        assert!(stderr.contains("no agentplane store here"), "{args:?}: {stderr}");
    }
    assert_eq!(table_count(&url), 0, "a command that reads created nothing");
    ok(dir.path(), &["--store", &url, "migrate"]);
    assert!(table_count(&url) > 0, "migrate makes the schema");
    let runs = json(dir.path(), &["--store", &url, "--origin", origin, "runs", "--json"]);
    assert_eq!(runs, serde_json::json!([]));
}

/// R-STORE-3 (attacker review, session 18): the schema version table
/// dropped behind the plane beside the journal's tables made `audit` say
/// "no agentplane store here" (exit 2: a wrong URL); it is damage (exit 1).
#[test]
fn an_audit_of_a_store_whose_schema_version_was_dropped_reports_damage() {
    let url = store_pg::testkit::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let origin = "agentplane.local/plane/default";
    let keys = tempfile::tempdir().unwrap();
    ok(keys.path(), &["init"]);
    let log_key = ok(keys.path(), &["keys", "--print", "log-key"]).trim().to_owned();
    ok(dir.path(), &["--store", &url, "migrate"]);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client.batch_execute("DROP TABLE agentplane_schema").unwrap();
    let stderr = fails(dir.path(), &["--store", &url, "--origin", origin, "audit", "--log-key", &log_key], 1);
    assert!(stderr.contains("schema version is damaged"), "{stderr}");
}

/// A schema a newer build migrated is refused by a read with the remedy,
/// as build skew (exit 3, like a redb file of a newer layout; it was an
/// I/O failure, exit 2, until session 20); an older one is not migrated by
/// a read (`agentplane migrate` is named, exit 2).
#[test]
fn a_read_refuses_a_schema_of_another_version_with_the_remedy() {
    let older = store_pg::testkit::database_at_version(1);
    let dir = tempfile::tempdir().unwrap();
    let origin = "agentplane.local/plane/default";
    let stderr = fails(dir.path(), &["--store", &older, "--origin", origin, "runs"], 2);
    assert!(stderr.contains("older than this build") && stderr.contains("agentplane migrate"), "{stderr}");
    ok(dir.path(), &["--store", &older, "migrate"]);
    ok(dir.path(), &["--store", &older, "--origin", origin, "runs"]);

    let newer = store_pg::testkit::fresh_database();
    ok(dir.path(), &["--store", &newer, "migrate"]);
    let mut client = postgres::Client::connect(&newer, postgres::NoTls).unwrap();
    client.batch_execute("UPDATE agentplane_schema SET version = 99").unwrap();
    let keys = tempfile::tempdir().unwrap();
    ok(keys.path(), &["init"]);
    let log_key = ok(keys.path(), &["keys", "--print", "log-key"]).trim().to_owned();
    for command in [vec!["runs"], vec!["show", "run-1"], vec!["audit", "--log-key", &log_key], vec!["migrate"]] {
        let mut args = vec!["--store", newer.as_str()];
        if command != ["migrate"] {
            args.extend(["--origin", origin]);
        }
        args.extend(command.iter().copied());
        let stderr = fails(dir.path(), &args, 3);
        assert!(stderr.contains("newer than this build") && stderr.contains("run that build"), "{command:?}: {stderr}");
    }
}

/// An unreachable server's message names the host, the port, the database
/// and the cause, and never the password.
#[test]
fn an_unreachable_postgresql_server_is_named_with_its_cause() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://agent:unreachable-pw-81@127.0.0.1:{port}/plane_db");
    let dir = tempfile::tempdir().unwrap();
    for args in [vec!["runs"], vec!["demo"]] {
        let mut all = vec!["--store", url.as_str(), "--origin", "agentplane.local/plane/default"];
        all.extend(args);
        let stderr = fails(dir.path(), &all, 2);
        assert!(stderr.contains("127.0.0.1") && stderr.contains(&port.to_string()), "{stderr}");
        assert!(stderr.contains("plane_db"), "the database is named: {stderr}");
        assert!(stderr.to_lowercase().contains("refused"), "the cause: {stderr}");
        assert!(!stderr.contains("unreachable-pw-81"), "{stderr}");
    }
}

/// `demo --store postgres://...` in an empty folder makes a plane folder
/// pointed at that database; then every command, run in it, prints nothing
/// of the URL's password: stdout, stderr and the logs (`RUST_LOG=debug`),
/// the "an auditor runs:" line of `agentplane keys` included.
#[test]
fn the_password_of_a_store_url_appears_in_no_output_of_any_command() {
    const SECRET: &str = "pw-Zq81-never-printed";
    let url = url_with_password(&store_pg::testkit::fresh_database(), SECRET);
    let root = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    let mut run = |dir: &Path, args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_agentplane"))
            .current_dir(dir)
            .env("RUST_LOG", "debug")
            .args(args)
            .output()
            .unwrap();
        let all = text(&out);
        outputs.push((args.join(" "), all.clone()));
        (out.status.code(), all)
    };
    let (code, said) = run(root.path(), &["--store", &url, "demo"]);
    assert_eq!(code, Some(0), "{said}");
    let plane = root.path().join("agentplane-demo");
    let config = std::fs::read_to_string(plane.join("agentplane.toml")).unwrap();
    assert!(config.contains("postgres://"), "the plane folder points at the database: {config}");
    assert!(!plane.join("agentplane.redb").exists());
    let (_, ids) = run(&plane, &["runs", "--outcome", "succeeded", "--ids"]);
    let id = ids.lines().find(|l| l.starts_with("run-")).unwrap_or("run-1").to_owned();
    let log_key = ok(&plane, &["keys", "--print", "log-key"]).trim().to_owned();
    let (_, keys) = run(&plane, &["keys"]);
    assert!(keys.contains("an auditor runs:") && keys.contains("postgres://"), "{keys}");
    let export = plane.join("run.export");
    let export = export.to_str().unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["runs"],
        vec!["runs", "--json"],
        vec!["show", &id],
        vec!["verify", "--require-signature"],
        vec!["audit", "--log-key", &log_key],
        vec!["checkpoint"],
        vec!["checkpoint", "--cosigned"],
        vec!["prove", &id],
        vec!["cost"],
        vec!["export", &id, "-o", export],
        vec!["sweep"],
        vec!["migrate"],
        vec!["repair"],
        vec!["compact"],
        vec!["keys", "--json"],
        vec!["keygen", "--origin", "example.com/x"],
        vec!["init"],
        vec!["demo"],
    ];
    for args in &commands {
        run(&plane, args);
    }
    // The URL on the command line, and a refused connection with it.
    run(root.path(), &["--store", &url, "--origin", "agentplane.local/plane/default", "runs"]);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let refused = format!("postgres://agent:{SECRET}@127.0.0.1:{closed}/db");
    run(root.path(), &["--store", &refused, "demo"]);
    let bad = format!("postgres://agent:{SECRET}@[bad/db");
    run(root.path(), &["--store", &bad, "runs"]);
    for (command, output) in &outputs {
        assert!(!output.contains(SECRET), "`agentplane {command}` printed the password:\n{output}");
    }
    assert!(outputs.iter().any(|(_, o)| o.contains(":***@")), "the URL is shown, redacted");
}

/// Noted in session 19, fixed in session 20: `init` with a PostgreSQL URL
/// that carries a password wrote `agentplane.toml` with the umask's mode
/// (world-readable here), and the password with it. Such a configuration is
/// now readable by its owner alone, like the key file; one without a
/// password keeps the usual mode. The password is never printed.
#[cfg(unix)]
#[test]
fn init_keeps_a_configuration_holding_a_store_password_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let url = store_pg::testkit::fresh_database();
    let with_password = url.replacen("postgres://postgres@", "postgres://postgres:hunter2@", 1);
    assert_ne!(with_password, url, "the test URL names its user");
    // Typed with white space, which PostgreSQL's URL parser reads as part of
    // it (review 38: printed whole, and the file kept the umask's mode).
    let spaced = url.replacen("postgres://postgres@", "postgres://postgres:hunter2 spaced@", 1);
    for (store, private) in [(with_password.as_str(), true), (spaced.as_str(), true), (url.as_str(), false)] {
        let dir = tempfile::tempdir().unwrap();
        let printed = ok(dir.path(), &["init", "--store", store]);
        assert!(!printed.contains("hunter2") && !printed.contains("spaced"), "{printed}");
        let mode = std::fs::metadata(dir.path().join("agentplane.toml")).unwrap().permissions().mode() & 0o777;
        if private {
            assert_eq!(mode, 0o600, "a configuration holding a password is its owner's alone");
        } else {
            let probe = dir.path().join("probe");
            std::fs::write(&probe, b"").unwrap();
            let usual = std::fs::metadata(&probe).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, usual, "one without a password has the mode the umask gives a new file");
        }
    }
}

/// R-VER-4 (rolling upgrade review): `sweep --every` of this build runs on
/// a PostgreSQL plane while a newer build migrates the store (its version
/// row raised, as a migration does). The sweep's next write is refused as
/// build skew, which no later round can cure; the sweep said "the sweep
/// goes on" and failed every round for good, never exiting, so a
/// supervisor never restarted it with the newer build. It now ends: exit 3,
/// the remedy on stderr, nothing of the refused checkpoint stored.
#[test]
fn r_ver_4_a_sweep_every_whose_store_a_newer_build_migrated_ends_as_build_skew() {
    use journal_core::{
        Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, Origin, RuntimeBuilder, TenantId,
    };
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    let url = point_at_a_fresh_database(plane);
    let (_witness, _state) = add_witness(plane, "shop");
    ok(plane, &["demo"]);
    let origin = json(plane, &["--tenant", "shop", "keys", "--json"])["origin"].as_str().unwrap().to_owned();
    let mut sweep = Command::new(env!("CARGO_BIN_EXE_agentplane"))
        .current_dir(plane)
        .args(["sweep", "--every", "1s"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(plane.join("sweep.err")).unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    // The log grows without a checkpoint (a library plane), so the sweep's
    // next round signs one: a write.
    {
        let store = std::sync::Arc::new(store_pg::PgStore::open(&url).unwrap());
        let tenant = TenantId::new("shop").unwrap();
        let runtime =
            RuntimeBuilder::new(store).tenant(tenant.clone(), Origin::new(&origin).unwrap(), None).build().unwrap();
        let request =
            AdmitRequest { idempotency_key: "grown".into(), plan: vec!["work".into()], budget: Budget::default() };
        let Admission::New(mut run) = runtime.admit(&tenant, request).unwrap() else { panic!("admitted") };
        run.effect("ek:work", "work", || EffectOutput {
            result: EffectResult::Ok { output: "grown".into() },
            charged: Counters::default(),
        })
        .unwrap();
        run.succeed("done").unwrap();
    }
    let mut newer = store_pg::testkit::connect_declared(&url);
    let signed = |client: &mut postgres::Client| -> i64 {
        client.query_one("SELECT count(*) FROM signed_checkpoints", &[]).unwrap().get(0)
    };
    let before = signed(&mut newer);
    newer.execute("UPDATE agentplane_schema SET version = $1", &[&(store_pg::SCHEMA_VERSION + 1)]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = sweep.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            sweep.kill().unwrap();
            sweep.wait().unwrap();
            let stderr = std::fs::read_to_string(plane.join("sweep.err")).unwrap();
            panic!("the sweep went on after build skew: {stderr}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let stderr = std::fs::read_to_string(plane.join("sweep.err")).unwrap();
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("(build_skew)") && stderr.contains("replace this process"), "{stderr}");
    assert!(!stderr.contains("(build_skew), the sweep goes on"), "{stderr}");
    assert_eq!(signed(&mut newer), before, "nothing of the refused checkpoint was stored");
}
