//! Issue 22 (and the sweep's part of issue 21), end to end on the
//! `agentplane` binary, a redb file and witness servers over real HTTP: the
//! plane never signs two histories (R-WIT-1, R-WIT-6, R-WIT-9, R-LOG-2).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

// Only its canned answer is used here.
#[allow(dead_code)]
#[path = "../../audit/tests/support/http.rs"]
mod http;
mod support;
use support::*;

use std::io::{Read as _, Write as _};
use std::path::Path;

use serde_json::Value;

/// A copy of the plane's redb store taken now (`backup.redb` beside it).
fn back_up(plane: &Path) {
    std::fs::copy(plane.join("agentplane.redb"), plane.join("backup.redb")).unwrap();
}

/// The copy [`back_up`] took, put back in the store's place (a restored backup).
fn put_back(plane: &Path) {
    std::fs::copy(plane.join("backup.redb"), plane.join("agentplane.redb")).unwrap();
}

/// The store and the high-water mark beside the key file: what a restore of
/// the plane's folder from one backup puts back together.
const STORE_AND_MARK: [&str; 2] = ["agentplane.redb", "agentplane.highwater"];

/// Copies the store and the mark aside (`backup-NAME`), as a backup.
fn back_up_store_and_mark(plane: &Path) {
    for file in STORE_AND_MARK {
        std::fs::copy(plane.join(file), plane.join(format!("backup-{file}"))).unwrap();
    }
}

/// Puts the store and the mark back from [`back_up_store_and_mark`]'s copy.
fn restore_store_and_mark(plane: &Path) {
    for file in STORE_AND_MARK {
        std::fs::copy(plane.join(format!("backup-{file}")), plane.join(file)).unwrap();
    }
}

/// The tree the witness holds for the plane's origin, read over HTTP.
fn witness_holds(witness: &Witness, origin: &str) -> tlog::Tree {
    let reader = witness::WitnessReader::new(
        &witness.server.url(),
        vec![witness::TrustedWitness::parse(&witness.vkey).unwrap()],
    )
    .unwrap();
    reader.latest(origin).unwrap().checkpoint.tree()
}

fn sweep(dir: &Path) -> (Option<i32>, Value, String) {
    let out = agentplane(dir, &["sweep", "--json"]);
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), report, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A typo in `--tenant` never signs a second history: every command that
/// writes or signs refuses a tenant the configuration does not name (exit 2,
/// naming the configured ones), in a one-tenant plane and in the demo's own.
#[test]
fn r_wit_9_an_unnamed_tenant_is_refused_by_every_command_that_writes_or_signs() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    ok(plane, &["--tenant", "shop", "demo"]);
    let signed = json(plane, &["--tenant", "shop", "checkpoint", "--json"]);
    let run = ok(plane, &["runs", "--outcome", "succeeded", "--ids"]).lines().next().unwrap().to_owned();
    for args in [
        vec!["--tenant", "shpo", "demo"],
        vec!["--tenant", "shpo", "checkpoint"],
        vec!["--tenant", "shpo", "export", &run, "-o", "x.export"],
        vec!["--tenant", "shpo", "fork", &run, "--at", "2"],
        vec!["--tenant", "shpo", "sweep"],
    ] {
        let stderr = fails(plane, &args, 2);
        assert!(stderr.contains("shpo") && stderr.contains("configured tenants are: shop"), "{args:?}: {stderr}");
    }
    assert!(!plane.join("x.export").exists());
    // Nothing was signed for the typo: shop's log is the only one.
    assert_eq!(json(plane, &["--tenant", "shop", "checkpoint", "--json"])["root"], signed["root"]);

    // The demo's own plane names `default` alone.
    let root = tempfile::tempdir().unwrap();
    ok(root.path(), &["demo"]);
    let stderr = fails(root.path(), &["--tenant", "nobody", "demo"], 2);
    assert!(stderr.contains("configured tenants are: default"), "{stderr}");
}

/// R-PLANE-1 (review 3): a mistaken `--origin` never signs one tenant's
/// log as another's. `--tenant shop --origin` of `search` signed shop's log
/// under search's origin with search's log key (exit 0) and raised search's
/// high-water mark to shop's tree. Every command that writes or signs
/// refuses an origin that is not the tenant's configured one (exit 2).
#[test]
fn r_plane_1_an_origin_of_another_tenant_signs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop", "--tenant-name", "search"]);
    ok(plane, &["--tenant", "shop", "demo"]);
    let mark = std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap();
    let run =
        ok(plane, &["--tenant", "shop", "runs", "--outcome", "succeeded", "--ids"]).lines().next().unwrap().to_owned();
    for args in [
        vec!["checkpoint"],
        vec!["demo"],
        vec!["export", &run, "-o", "x.export"],
        vec!["fork", &run, "--at", "2"],
        vec!["resume", &run],
    ] {
        let mut full = vec!["--tenant", "shop", "--origin", "agentplane.local/plane/search"];
        full.extend(args.iter().copied());
        let stderr = fails(plane, &full, 2);
        assert!(stderr.contains("is not the origin of tenant shop"), "{args:?}: {stderr}");
    }
    assert!(!plane.join("x.export").exists());
    assert_eq!(std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap(), mark, "nothing was signed");
    // The tenant's own origin, spelled out, is its origin.
    ok(plane, &["--tenant", "shop", "--origin", "agentplane.local/plane/shop", "checkpoint"]);
}

/// Review 28, R-PLANE-1: without a configuration (the plane's
/// `agentplane.toml` moved away, or a PostgreSQL plane driven from another
/// folder, where no configuration is found beside the store) the plane's
/// one tenant is `default`, and any `--origin` the key file held a log key
/// for was taken: `--origin` of `shop` signed tenant `default`'s log under
/// shop's origin with shop's key (exit 0) and raised shop's high-water mark
/// to default's tree, which shop's own log then never extends. A key file
/// of several logs, with no configuration to say which tenant each signs
/// for, signs nothing and admits nothing (exit 2, saying to use the
/// configuration).
#[test]
fn r_plane_1_without_a_configuration_a_key_file_of_several_logs_signs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "default", "--tenant-name", "shop"]);
    ok(plane, &["--tenant", "default", "demo"]);
    let run = ok(plane, &["--tenant", "default", "runs", "--outcome", "succeeded", "--ids"])
        .lines()
        .next()
        .unwrap()
        .to_owned();
    std::fs::rename(plane.join("agentplane.toml"), plane.join("away.toml")).unwrap();
    let mark = std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap();
    let runs_before = ok(plane, &["--origin", "agentplane.local/plane/default", "runs", "--ids"]);
    // (`demo` with no configuration here makes a plane of its own in ./agentplane-demo.)
    for args in [
        vec!["checkpoint"],
        vec!["export", &run, "-o", "x.export"],
        vec!["fork", &run, "--at", "2"],
        vec!["resume", &run],
    ] {
        let mut full = vec!["--origin", "agentplane.local/plane/shop"];
        full.extend(args.iter().copied());
        let stderr = fails(plane, &full, 2);
        assert!(stderr.contains("log keys of 2 origins") && stderr.contains("agentplane.toml"), "{args:?}: {stderr}");
    }
    assert!(!plane.join("x.export").exists());
    assert_eq!(std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap(), mark, "nothing was signed");
    assert_eq!(ok(plane, &["--origin", "agentplane.local/plane/default", "runs", "--ids"]), runs_before);
    // With its configuration, the plane signs each tenant's log as before.
    ok(plane, &["--config", "away.toml", "--tenant", "default", "checkpoint"]);
}

/// Review 28, R-PLANE-1: a configuration whose tenants' origins were
/// swapped (two `origin =` lines exchanged by an edit) names every tenant
/// and unique origins, so nothing refused it: `--tenant shop checkpoint`
/// signed shop's log with search's key under search's origin (exit 0) and
/// raised search's high-water mark to shop's tree. Every leaf of a log names
/// its origin: a log whose first or newest leaf names another origin than
/// the one it would be signed under is refused (exit 1, naming both), and
/// nothing is signed or appended.
#[test]
fn r_plane_1_a_configuration_with_two_tenants_origins_swapped_signs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop", "--tenant-name", "search"]);
    ok(plane, &["--tenant", "shop", "demo"]);
    let mark = std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap();
    let config = std::fs::read_to_string(plane.join("agentplane.toml")).unwrap();
    let swapped = config
        .replace("\"agentplane.local/plane/shop\"", "\"SWAP\"")
        .replace("\"agentplane.local/plane/search\"", "\"agentplane.local/plane/shop\"")
        .replace("\"SWAP\"", "\"agentplane.local/plane/search\"");
    assert_ne!(swapped, config);
    std::fs::write(plane.join("agentplane.toml"), &swapped).unwrap();
    let stderr = fails(plane, &["--tenant", "shop", "checkpoint"], 1);
    assert!(
        stderr.contains("names the origin agentplane.local/plane/shop") && stderr.contains("agentplane.toml"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap(), mark, "nothing was signed");
    // The configuration put right, shop's log is signed under its own origin.
    std::fs::write(plane.join("agentplane.toml"), &config).unwrap();
    ok(plane, &["--tenant", "shop", "checkpoint"]);
}

/// Tenant names are plain and unique, origins unique across tenants: at
/// `init`, at configuration load (any command), and in `RuntimeBuilder`.
#[test]
fn tenant_names_and_origins_are_checked_at_init_and_at_load() {
    for bad in ["a/b", "a..b", "a b", ""] {
        let dir = tempfile::tempdir().unwrap();
        let stderr = fails(dir.path(), &["init", "--tenant-name", bad], 2);
        assert!(stderr.contains("tenant"), "{bad:?}: {stderr}");
        assert!(!dir.path().join("agentplane.key").exists(), "{bad:?}: nothing is written");
    }
    let dir = tempfile::tempdir().unwrap();
    fails(dir.path(), &["init", "--tenant-name", "shop", "--tenant-name", "shop"], 2);

    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init", "--tenant-name", "shop", "--tenant-name", "search"]);
    let config = std::fs::read_to_string(dir.path().join("agentplane.toml")).unwrap();
    let same = config.replace("agentplane.local/plane/search", "agentplane.local/plane/shop");
    std::fs::write(dir.path().join("agentplane.toml"), same).unwrap();
    let stderr = fails(dir.path(), &["--tenant", "search", "demo"], 2);
    assert!(stderr.contains("same origin"), "{stderr}");
    let stderr = fails(dir.path(), &["runs"], 2);
    assert!(stderr.contains("same origin"), "{stderr}");
}

/// An older store put back (a restored backup): `demo`, `checkpoint` and
/// `sweep` sign nothing, exit 1 and say why; the witness still holds the
/// newer tree, and the plane's high-water mark is unchanged. `backup` takes
/// a copy of the store now; `restore` puts it back in the plane's place.
fn a_restored_backup_is_never_signed(plane: &Path, witness: &Witness, backup: &dyn Fn(), restore: &dyn Fn()) {
    ok(plane, &["demo"]);
    let (code, report, stderr) = sweep(plane);
    assert_eq!((code, report["outcome"].as_str()), (Some(0), Some("met")), "{stderr}");
    backup();
    ok(plane, &["demo"]);
    let (code, report, stderr) = sweep(plane);
    assert_eq!((code, report["outcome"].as_str()), (Some(0), Some("met")), "{stderr}");
    let origin = "agentplane.local/plane/shop";
    let held = witness_holds(witness, origin);
    let mark = std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap();
    assert!(mark.contains(&format!("{origin} {} {}", held.size, held.root)), "{mark}");

    restore();
    // Before any growth: the sweep asks the witness, which holds more.
    let (code, report, stderr) = sweep(plane);
    assert_eq!(code, Some(1), "{report} {stderr}");
    assert_eq!(report["outcome"], "refused_to_sign", "{report}");
    assert!(stderr.contains("agentplane.witness.integrity"), "{stderr}");
    // The witness is asked first (it holds more), then the mark (review 3).
    let older = |stderr: &str| {
        stderr.contains(&format!("holds size {}", held.size))
            || stderr.contains("a store older than the plane's last signature is in place")
            || stderr.contains("the store is older than what the plane signed")
    };
    let stderr = fails(plane, &["checkpoint"], 1);
    assert!(older(&stderr), "{stderr}");
    // A demo admits nothing on it (the runtime holds the store to the mark
    // first), so it never grows to the size the plane signed with another root.
    let stderr = fails(plane, &["demo"], 1);
    assert!(older(&stderr), "{stderr}");
    let stderr = fails(plane, &["checkpoint"], 1);
    assert!(older(&stderr), "{stderr}");
    let (code, report, stderr) = sweep(plane);
    assert_eq!((code, report["outcome"].as_str()), (Some(1), Some("refused_to_sign")), "{stderr}");
    assert_eq!(witness_holds(witness, origin), held, "nothing new reached the witness");
    assert_eq!(std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap(), mark);
}

#[test]
fn r_wit_6_r_log_2_a_restored_backup_is_never_signed_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let witness = witnessed_plane(plane);
    let backup = || back_up(plane);
    let restore = || put_back(plane);
    a_restored_backup_is_never_signed(plane, &witness, &backup, &restore);
}

/// The same on PostgreSQL: the backup is a copy of the database taken
/// between the sweeps, and the restore points the plane at it.
#[test]
fn r_wit_6_r_log_2_a_restored_backup_is_never_signed_on_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let witness = witnessed_plane(plane);
    let url = point_at_a_fresh_database(plane);
    let configured = std::fs::read_to_string(plane.join("agentplane.toml")).unwrap();
    let copy = std::cell::RefCell::new(String::new());
    let backup = || *copy.borrow_mut() = store_pg::testkit::copy_database(&url);
    let restore = || {
        let restored = configured.replace(&url, &copy.borrow());
        std::fs::write(plane.join("agentplane.toml"), restored).unwrap();
    };
    a_restored_backup_is_never_signed(plane, &witness, &backup, &restore);
}

/// A witnessed plane swept, backed up (`back_up`), and swept again past the
/// backup: the witness holds a tree the backup's store is older than.
fn witnessed_past_a_backup(plane: &Path) -> Witness {
    let witness = witnessed_plane(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    back_up(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    witness
}

/// The high-water file lost: the plane says so and asks the witness before
/// it signs; an honest store is signed (and the mark written again), an
/// older one put back is refused on what the witness holds.
#[test]
fn r_wit_6_a_lost_high_water_mark_asks_the_witnesses_before_signing() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let witness = witnessed_past_a_backup(plane);

    let held = witness_holds(&witness, "agentplane.local/plane/shop");
    std::fs::remove_file(plane.join("agentplane.highwater")).unwrap();
    let out = agentplane(plane, &["checkpoint"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("is lost") && stderr.contains("asking the 1 configured witnesses"), "{stderr}");
    let mark = std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap();
    assert!(mark.contains(&format!(" {} {}", held.size, held.root)), "{mark}");

    std::fs::remove_file(plane.join("agentplane.highwater")).unwrap();
    put_back(plane);
    let stderr = fails(plane, &["checkpoint"], 1);
    assert!(stderr.contains(&format!("holds size {}", held.size)), "{stderr}");
    let (code, report, _) = sweep(plane);
    assert_eq!((code, report["outcome"].as_str()), (Some(1), Some("refused_to_sign")));
}

/// R-PLANE-2, R-WIT-6 (noted in session 19, fixed in session 20): the mark
/// lost and an older store put back, on a plane with two witnesses, the one
/// that cosigned the newer tree unreachable (blocked, or down). The plane
/// reset its mark from the answer of the other, which holds only the older
/// tree, and signed a second root at a size the unreachable witness had
/// cosigned. A lost mark is now rebuilt only when every configured witness
/// answered; otherwise nothing is signed and the refusal names the witness.
#[test]
fn r_plane_2_a_lost_mark_is_never_rebuilt_while_a_witness_cannot_be_asked() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let witness = witnessed_plane(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    back_up(plane);
    let stale = witness_holds(&witness, "agentplane.local/plane/shop");
    let second = witness::Cosigner::new(
        witness::SignerKey::from_seed("integrity.test/w1", witness::ALG_COSIGNATURE_V1, [78; 32]).unwrap(),
    )
    .unwrap()
    .verifier_key()
    .to_string();
    let mut config = std::fs::read_to_string(plane.join("agentplane.toml")).unwrap();
    config.push_str(&format!("\n[[witness]]\nurl = \"http://127.0.0.1:9\"\nkey = \"{second}\"\n"));
    std::fs::write(plane.join("agentplane.toml"), config).unwrap();
    // The reachable witness stays at the older tree; the plane signs more
    // (as if only the unreachable one had cosigned it since).
    ok(plane, &["demo"]);
    ok(plane, &["checkpoint"]);
    assert_eq!(witness_holds(&witness, "agentplane.local/plane/shop"), stale);

    std::fs::remove_file(plane.join("agentplane.highwater")).unwrap();
    put_back(plane);
    let stderr = fails(plane, &["checkpoint"], 1);
    assert!(stderr.contains("http://127.0.0.1:9") && stderr.contains("could not be asked"), "{stderr}");
    assert!(!plane.join("agentplane.highwater").exists(), "no mark was rebuilt from one witness's answer");
}

/// R-PLANE-2, R-WIT-6 (review 46): the mark lost and an older store put
/// back, on a plane whose one witness cosigned the newer tree and was then
/// restarted with the log left out of its configuration (its state still
/// holds the tree). Its monitor endpoint answers 404 "unknown origin", which
/// the plane read as "has cosigned nothing": every witness had answered, the
/// mark was rebuilt from nothing, and the plane signed the older store's
/// head, a smaller tree after the larger one the witness cosigned. A witness
/// that does not know the origin cannot say what the plane signed: the mark
/// is not rebuilt from it, and nothing is signed.
#[test]
fn r_plane_2_a_lost_mark_is_never_rebuilt_from_a_witness_that_does_not_know_the_origin() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let witness = witnessed_past_a_backup(plane);
    let origin = "agentplane.local/plane/shop";
    let held = witness_holds(&witness, origin);
    let Witness { server, state, .. } = witness;
    let old_url = server.url();
    server.shutdown();

    // The same witness (its key and state), its configuration now naming another log only.
    let keys = json(plane, &["--tenant", "shop", "keys", "--json"]);
    let other = witness_server::LogConfig {
        origin: "agentplane.local/plane/elsewhere".to_owned(),
        keys: vec![witness::VerifierKey::parse(keys["log_key"].as_str().unwrap()).unwrap()],
    };
    let cosigner = witness::Cosigner::new(
        witness::SignerKey::from_seed("integrity.test/w0", witness::ALG_COSIGNATURE_V1, [77; 32]).unwrap(),
    )
    .unwrap();
    let config = witness_server::WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner,
        logs: vec![other],
        clock: std::sync::Arc::new(witness_server::SystemClock),
    };
    let server = witness_server::WitnessServer::start(config, &state.path().join("w.redb"), "127.0.0.1:0").unwrap();
    assert_eq!(
        witness_server::high_water_mark(&state.path().join("w.redb")).unwrap().unwrap().get(origin),
        Some(&held),
        "the witness still holds what it cosigned"
    );
    let config = std::fs::read_to_string(plane.join("agentplane.toml")).unwrap().replace(&old_url, &server.url());
    std::fs::write(plane.join("agentplane.toml"), config).unwrap();

    std::fs::remove_file(plane.join("agentplane.highwater")).unwrap();
    put_back(plane);
    let stderr = fails(plane, &["checkpoint"], 1);
    assert!(stderr.contains("does not name this origin") && stderr.contains("nothing was signed"), "{stderr}");
    assert!(!plane.join("agentplane.highwater").exists(), "no mark was rebuilt from an answer that says nothing");
}

/// R-PLANE-2, R-WIT-6 (attacker review 16): a witness without the monitor
/// endpoint (litewitness, transparency-dev/witness) can never say what it
/// holds, so a plane using one cannot rebuild a lost mark from it, and the
/// refusal told the operator to make it reachable, which cannot help. It
/// says the witness serves no monitor endpoint and how to give the mark
/// back by hand; written so, the plane signs again.
#[test]
fn r_plane_2_a_lost_mark_with_a_witness_without_a_monitor_endpoint_says_how_to_give_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    let key = witness::Cosigner::new(
        witness::SignerKey::from_seed("integrity.test/lite", witness::ALG_COSIGNATURE_V1, [79; 32]).unwrap(),
    )
    .unwrap()
    .verifier_key()
    .to_string();
    let url = http::canned(404, "404 page not found\n".into());
    let mut config =
        std::fs::read_to_string(plane.join("agentplane.toml")).unwrap().replace("quorum = 0", "quorum = 1");
    config.push_str(&format!("\n[[witness]]\nurl = \"{url}\"\nkey = \"{key}\"\n"));
    std::fs::write(plane.join("agentplane.toml"), config).unwrap();
    ok(plane, &["demo"]);
    ok(plane, &["checkpoint"]);
    let mark = std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap();

    std::fs::remove_file(plane.join("agentplane.highwater")).unwrap();
    let stderr = fails(plane, &["checkpoint"], 1);
    assert!(stderr.contains("serves no monitor endpoint"), "{stderr}");
    assert!(stderr.contains("agentplane.local/plane/shop SIZE ROOT"), "says how to write the mark: {stderr}");
    assert!(!plane.join("agentplane.highwater").exists(), "nothing was signed");

    std::fs::write(plane.join("agentplane.highwater"), &mark).unwrap();
    ok(plane, &["checkpoint"]);
}

/// R-PLANE-2 (review 3): the store AND the high-water mark beside the key
/// file put back from one backup taken between two witnessed rounds (a
/// restore of the plane's folder). The mark then agrees with the store, so
/// only the witness knows the plane signed more: `checkpoint`, `demo` and
/// `export` signed without asking it (only a lost mark made them ask), and
/// the plane's key signed a second root at a size the witness had cosigned
/// (the sweep refused only afterwards). Every command that signs asks the
/// configured witnesses first and refuses (exit 1), signing nothing.
#[test]
fn r_plane_2_a_store_and_its_high_water_mark_restored_together_are_held_to_the_witnesses() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let witness = witnessed_plane(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    back_up_store_and_mark(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    let origin = "agentplane.local/plane/shop";
    let held = witness_holds(&witness, origin);
    let run = ok(plane, &["runs", "--outcome", "succeeded", "--ids"]).lines().next().unwrap().to_owned();

    restore_store_and_mark(plane);
    let mark = std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap();
    for args in [vec!["checkpoint"], vec!["demo"], vec!["export", &run, "-o", "run.export"]] {
        let stderr = fails(plane, &args, 1);
        assert!(stderr.contains(&format!("holds size {}", held.size)), "{args:?}: {stderr}");
    }
    assert!(!plane.join("run.export").exists());
    assert_eq!(std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap(), mark, "nothing was signed");
    assert_eq!(witness_holds(&witness, origin), held);
}

/// R-RUN-5, R-PLANE-2 (review 85): the store and the mark beside the key
/// file put back together (a restore of the plane's folder) while a witness
/// holds a larger tree. The mark agrees with the store, so the runtime,
/// held to the mark alone, admitted `demo`'s runs and sealed them into the
/// older store (its log grew a second history past what the witness
/// cosigned) before the signature at its end was refused; a run of the lost
/// part redelivered there would run its recorded effects again. The plane
/// asks the configured witnesses before it admits or resumes anything.
#[test]
fn r_run_5_a_store_and_its_mark_restored_together_admit_nothing_a_witness_knows_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let witness = witnessed_plane(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    back_up_store_and_mark(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    let held = witness_holds(&witness, "agentplane.local/plane/shop");
    restore_store_and_mark(plane);
    let (runs_before, size_before) = (ok(plane, &["runs", "--ids"]), log_size(plane));
    let stderr = fails(plane, &["demo"], 1);
    assert!(stderr.contains(&format!("holds size {}", held.size)), "{stderr}");
    assert_eq!(ok(plane, &["runs", "--ids"]), runs_before, "demo admitted runs into the older store");
    assert_eq!(log_size(plane), size_before, "the older store's log grew");
    let run = runs_before.lines().next().unwrap().to_owned();
    fails(plane, &["fork", &run, "--at", "1"], 1);
    assert_eq!(ok(plane, &["runs", "--ids"]), runs_before, "fork admitted a run into the older store");
}

/// R-PLANE-2, R-AUD-8 (review 85): the refusal of a store older than what
/// the witnesses cosigned says to put the newest store back, then run
/// `agentplane verify`. Run on the store and mark restored together (the
/// operator put back the wrong copy), `verify` said "clean and complete",
/// exit 0: its anchors were the store's own rows and the mark, both rolled
/// back. It holds the store to the configured witnesses as well, and a
/// witness it cannot read is listed as not checked, never "complete".
#[test]
fn r_plane_2_verify_holds_the_store_to_the_configured_witnesses() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let witness = witnessed_plane(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    assert!(ok(plane, &["verify"]).contains("clean and complete"));
    back_up_store_and_mark(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    let newest: Vec<Vec<u8>> = STORE_AND_MARK.iter().map(|f| std::fs::read(plane.join(f)).unwrap()).collect();
    restore_store_and_mark(plane);
    let report = json_of(plane, &["verify", "--json"]);
    assert_eq!(report["verdict"], "findings", "{report:#}");
    assert!(report["findings"].to_string().contains("log_shrank"), "{report:#}");

    // The newest store put back, as the refusal says: verify holds it clean.
    for (file, bytes) in STORE_AND_MARK.iter().zip(&newest) {
        std::fs::write(plane.join(file), bytes).unwrap();
    }
    assert!(ok(plane, &["verify"]).contains("clean and complete"));
    // A witness that cannot be read is not checked: never "complete".
    drop(witness);
    let report = json_of(plane, &["verify", "--json"]);
    assert_eq!(report["verdict"], "incomplete", "{report:#}");
    fails(plane, &["verify", "--assert-complete"], 1);
}

/// R-PLANE-2 (review 85): an older store put back, and no copy of the one
/// the plane last signed from survives. Every refusal said to put that store
/// back and "never sign from this one", and nothing more: a dead end for an
/// operator who has no such copy (writing the mark back by hand, the only
/// thing left to try, signs a second history). The refusals say what is
/// left: this log is over; read and audit it, and start a new log under an
/// origin of its own. Followed, that plane signs; the old one still refuses.
#[test]
fn r_plane_2_a_store_older_than_the_mark_with_no_newer_copy_says_what_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    ok(plane, &["demo"]);
    back_up(plane);
    ok(plane, &["demo"]);
    ok(plane, &["checkpoint"]);
    put_back(plane);
    for args in [vec!["checkpoint"], vec!["demo"]] {
        let stderr = fails(plane, &args, 1);
        assert!(stderr.contains("If no copy of it is left") && stderr.contains("--origin-base"), "{args:?}: {stderr}");
    }
    // Followed: a new folder, a new origin; the older store is left as it is.
    let next = tempfile::tempdir().unwrap();
    ok(next.path(), &["init", "--tenant-name", "shop", "--origin-base", "agentplane.local/plane-2"]);
    ok(next.path(), &["demo"]);
    assert!(ok(next.path(), &["checkpoint"]).starts_with("agentplane.local/plane-2/shop\n"));
    fails(plane, &["checkpoint"], 1);
}

/// R-PLANE-2 (review 3): the high-water file emptied (or deleted) on a
/// plane with no witness, and an older store put back. The plane re-seeded
/// its mark from the store's own record of what it signed (which the backup
/// rolled back with it), and the next `demo` signed a second root at size
/// 12, exit 0, a note on standard error the only trace. With no one to ask,
/// every command that signs refuses (exit 1) until the operator puts the
/// mark back; a mark written by hand is then held as any other.
#[test]
fn r_plane_2_a_lost_mark_with_no_witness_to_ask_signs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    ok(plane, &["demo"]);
    back_up(plane);
    ok(plane, &["demo"]);
    let signed = json(plane, &["checkpoint", "--json"]);
    let kept = std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap();

    put_back(plane);
    std::fs::write(plane.join("agentplane.highwater"), "").unwrap();
    let run = ok(plane, &["runs", "--outcome", "succeeded", "--ids"]).lines().next().unwrap().to_owned();
    let runs_before = ok(plane, &["runs", "--ids"]);
    for args in [vec!["demo"], vec!["checkpoint"], vec!["export", &run, "-o", "run.export"]] {
        let stderr = fails(plane, &args, 1);
        assert!(stderr.contains("no witness is configured to ask") && stderr.contains("Nothing was"), "{stderr}");
    }
    assert!(!plane.join("run.export").exists());
    // Nor is any run admitted or driven on it (R-RUN-5): with the mark lost
    // nothing holds the log's leaves to a signed root.
    assert_eq!(ok(plane, &["runs", "--ids"]), runs_before, "demo admitted runs on a lost mark");
    std::fs::remove_file(plane.join("agentplane.highwater")).unwrap();
    fails(plane, &["checkpoint"], 1);

    // The operator puts the mark back: the older store is refused on it.
    std::fs::write(plane.join("agentplane.highwater"), &kept).unwrap();
    let stderr = fails(plane, &["checkpoint"], 1);
    assert!(stderr.contains("a store older than the plane's last signature is in place"), "{stderr}");
    assert!(kept.contains(signed["root"].as_str().unwrap()), "{kept}");
}

/// A forged `cosigned_checkpoints` row claiming the current head never
/// silences witnessing: the sweep and `checkpoint --cosigned` verify every
/// kept note first, and an unverifiable one is an integrity alarm (exit 1).
fn a_forged_cosigned_row_is_an_integrity_alarm(plane: &Path, open_store: &dyn Fn() -> Box<dyn journal_core::Store>) {
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    ok(plane, &["checkpoint", "--cosigned"]);
    ok(plane, &["demo"]);
    {
        let store = open_store();
        let tenant = journal_core::TenantId::new("shop").unwrap();
        let head = journal_core::LogView::open(store.as_ref(), &tenant).unwrap().head().unwrap().tree;
        store
            .record_cosigned_checkpoint(
                &tenant,
                journal_core::store::SignedTree { tree: head, note: "forged\n".into() },
            )
            .unwrap();
    }
    let (code, report, stderr) = sweep(plane);
    assert_eq!(code, Some(1), "{report} {stderr}");
    assert_eq!(report["outcome"], "refused_to_sign", "{report}");
    assert_eq!(report["needs_attention"], true);
    assert!(stderr.contains("agentplane.witness.integrity") && stderr.contains("does not verify"), "{stderr}");
    let stderr = fails(plane, &["checkpoint", "--cosigned"], 1);
    assert!(stderr.contains("does not verify"), "{stderr}");
}

#[test]
fn r_wit_9_a_forged_cosigned_row_is_an_integrity_alarm_not_a_skip_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let _witness = witnessed_plane(plane);
    let path = plane.join("agentplane.redb");
    a_forged_cosigned_row_is_an_integrity_alarm(plane, &|| Box::new(store_redb::RedbStore::open(&path).unwrap()));
}

#[test]
fn r_wit_9_a_forged_cosigned_row_is_an_integrity_alarm_not_a_skip_on_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let _witness = witnessed_plane(plane);
    let url = point_at_a_fresh_database(plane);
    a_forged_cosigned_row_is_an_integrity_alarm(plane, &|| Box::new(store_pg::PgStore::open(&url).unwrap()));
}

/// The reads and `verify` agree on the kept cosigned notes (review 19): a
/// forged `cosigned_checkpoints` row makes the sweep refuse to witness,
/// `checkpoint --cosigned` and `export` fail, and the console's plane page
/// error out, each as an integrity alarm telling the operator to run
/// `agentplane verify`; `verify` never read those rows and answered "clean
/// and complete" (exit 0). Now it holds every kept cosigned note as the
/// reads do (R-AUD-8, R-WIT-9): a finding naming the row, exit 1.
#[test]
fn r_aud_8_verify_finds_the_forged_cosigned_row_the_sweep_refuses_on() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let _witness = witnessed_plane(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    let clean = ok(plane, &["verify", "--require-signature"]);
    assert!(clean.contains("clean and complete"), "{clean}");
    {
        let store = store_redb::RedbStore::open(&plane.join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("shop").unwrap();
        let head = journal_core::LogView::open(&store, &tenant).unwrap().head().unwrap().tree;
        let forged = journal_core::store::SignedTree { tree: head, note: "forged\n".into() };
        journal_core::Store::record_cosigned_checkpoint(&store, &tenant, forged).unwrap();
    }
    let alarm = fails(plane, &["checkpoint", "--cosigned"], 1);
    assert!(alarm.contains("does not verify") && alarm.contains("agentplane verify"), "{alarm}");
    let out = agentplane(plane, &["verify", "--require-signature"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "verify calls clean the row checkpoint --cosigned alarms on: {said}");
    assert!(said.contains("cosigned checkpoint #2") && said.contains("does not verify"), "{said}");
    let report = json_of(plane, &["verify", "--json"]);
    assert!(report["findings"].as_array().unwrap().iter().any(|f| f["code"] == "store_damaged"), "{report}");
}

/// The JSON a command printed on standard output, whatever its exit code.
fn json_of(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_slice(&agentplane(dir, args).stdout).unwrap()
}

/// A witness that answers 500 with an empty body (transparency-dev/witness
/// for an origin it is not configured for) is reported after a bounded
/// number of tries, naming the witness and the origin.
#[test]
fn r_wit_2_a_witness_answering_500_is_reported_after_three_tries() {
    let (problem, served) = sweep_against_a_witness_answering_500(b"");
    assert!(problem.contains("fails for origin agentplane.local/plane/shop"), "{problem}");
    assert!(problem.contains("is the log configured there"), "{problem}");
    // The probe (one GET) and three submissions, not more.
    assert!(served <= 4, "{served}");
}

/// A witness that says why it fails (its state cannot be written: the disk
/// is full) is quoted to its operator, not second-guessed as a log it is
/// not configured for.
#[test]
fn r_wit_2_a_witness_saying_why_it_answers_500_is_quoted() {
    let said = b"state: writing the high-water mark: No space left on device (os error 28)\n";
    let (problem, served) = sweep_against_a_witness_answering_500(said);
    assert!(problem.contains("fails for origin agentplane.local/plane/shop"), "{problem}");
    assert!(problem.contains("No space left on device"), "the witness's words reach its operator: {problem}");
    assert!(!problem.contains("is the log configured there"), "no guess over what the witness said: {problem}");
    assert!(served <= 4, "{served}");
}

/// A plane whose one witness answers every request with 500 and `body`,
/// swept once: the sweep's problem for it, and how many requests it served.
fn sweep_against_a_witness_answering_500(body: &'static [u8]) -> (String, u32) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let served = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let count = std::sync::Arc::clone(&served);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let head = format!(
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: \
                 close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&[head.as_bytes(), body].concat());
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let key = witness::SignerKey::from_seed("five.test/w", witness::ALG_COSIGNATURE_V1, [5; 32]).unwrap();
    ok(plane, &["init", "--tenant-name", "shop", "--witness", &format!("{url}={}", key.verifier_key())]);
    ok(plane, &["demo"]);
    // The demo asks the witness what it holds before it signs (one GET).
    served.store(0, std::sync::atomic::Ordering::SeqCst);
    let (code, report, stderr) = sweep(plane);
    assert_eq!(code, Some(1), "{report} {stderr}");
    let problem = report["problems"][0]["error"].as_str().unwrap_or_default().to_owned();
    (problem, served.load(std::sync::atomic::Ordering::SeqCst))
}

/// Attacker review (session 17), R-PLANE-2, R-AUD-2: `agentplane verify`
/// anchors on the checkpoints the store says the plane signed
/// (`signed_checkpoints` rows), never on the plane's high-water mark beside
/// its key file. A store put back from a backup (or the newest
/// `signed_checkpoints` rows deleted with the runs and seals after them) is
/// refused by `checkpoint`, which reads the mark; `verify --assert-complete`
/// called the same store clean and complete (exit 0), the deleted runs and
/// seals unseen.
#[test]
fn r_plane_2_verify_holds_the_store_to_the_plane_s_high_water_mark() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    ok(plane, &["demo"]);
    ok(plane, &["checkpoint"]);
    back_up(plane);
    ok(plane, &["demo"]);
    ok(plane, &["checkpoint"]);
    ok(plane, &["verify", "--require-signature", "--assert-complete"]);
    let mark = std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap();

    // The attacker puts the older file back: the second demo's runs and
    // seals, and the plane's record of its second checkpoint, are gone.
    put_back(plane);
    let stderr = fails(plane, &["checkpoint"], 1);
    assert!(stderr.contains("a store older than the plane's last signature is in place"), "{stderr}");
    assert_eq!(std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap(), mark);

    let out = agentplane(plane, &["verify", "--require-signature", "--assert-complete", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        out.status.code(),
        Some(1),
        "verify finds what the plane's own mark ({}) says was deleted: {report:#}",
        mark.lines().last().unwrap_or_default()
    );
    assert_eq!(report["verdict"], "findings", "{report:#}");
}

/// Review 3, R-RUN-5 and R-PLANE-2: a store put back from a backup lost
/// the runs recorded after it, and their heads entries with them, so
/// nothing in the store says a redelivered or resumed run's effects were
/// performed. The runtime holds the store to the plane's high-water mark
/// before it admits or resumes anything: the rolled-back store admits no
/// run (before, `demo` admitted and drove its runs there, and only the
/// signature at its end was refused).
#[test]
fn r_run_5_a_store_older_than_the_plane_s_mark_admits_and_resumes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    ok(plane, &["demo"]);
    back_up(plane);
    ok(plane, &["demo"]);
    put_back(plane);
    let runs_before = json(plane, &["runs", "--json"]).as_array().map(Vec::len);
    let stderr = fails(plane, &["demo"], 1);
    assert!(stderr.contains("older than what the plane signed"), "{stderr}");
    assert_eq!(json(plane, &["runs", "--json"]).as_array().map(Vec::len), runs_before, "nothing was admitted");
}

/// Attacker review (session 17), R-WIT-9: the kept cosigned notes swapped.
/// `checkpoint --cosigned` printed the last row as "the latest checkpoint a
/// witness quorum cosigned" (the older note: a stale anchor for the auditor
/// it is handed to), and then, fixed as an alarm, it called a healthy plane
/// whose two instances recorded their rounds as they finished tampered
/// (review 2). The order of the rows now means nothing: the latest round is
/// the largest tree cosigned, printed whatever the order, and the sweep goes
/// on without an alarm.
#[test]
fn r_wit_9_cosigned_rows_out_of_order_print_the_latest_round_not_a_stale_one() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let _witness = witnessed_plane(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    let latest = json(plane, &["checkpoint", "--cosigned", "--json"]);
    use redb::ReadableTable as _;
    let cosigned: redb::TableDefinition<(&str, u64), (u64, &[u8], &str)> =
        redb::TableDefinition::new("cosigned_checkpoints");
    {
        let db = redb::Database::open(plane.join("agentplane.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(cosigned).unwrap();
            let rows: Vec<(u64, Vec<u8>, String)> = (0..2)
                .map(|n| {
                    let value = table.get(("shop", n)).unwrap().unwrap();
                    let (size, root, note) = value.value();
                    (size, root.to_vec(), note.to_owned())
                })
                .collect();
            assert!(rows[0].0 < rows[1].0, "two rounds, the log grew");
            for (n, (size, root, note)) in rows.iter().rev().enumerate() {
                table.insert(("shop", n as u64), (*size, root.as_slice(), note.as_str())).unwrap();
            }
        }
        txn.commit().unwrap();
    }
    let printed = json(plane, &["checkpoint", "--cosigned", "--json"]);
    assert_eq!(printed, latest, "the latest round, whatever the rows' order");
    let (code, report, _) = sweep(plane);
    assert_eq!(code, Some(0), "no alarm over rows recorded out of order: {report}");
}

/// A plane whose store was put back from a backup taken after its first
/// checkpoint (size 6), after it had signed a second (size 12): `verify`
/// holds it to the high-water mark and finds the deletion. Returns the
/// mark's text.
fn plane_with_a_restored_backup(plane: &Path, backup: &dyn Fn(), restore: &dyn Fn()) -> String {
    ok(plane, &["demo"]);
    ok(plane, &["checkpoint"]);
    backup();
    ok(plane, &["demo"]);
    ok(plane, &["checkpoint"]);
    ok(plane, &["verify", "--require-signature", "--assert-complete"]);
    let mark = std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap();
    restore();
    let report = json_exit(plane, &["verify", "--require-signature", "--assert-complete", "--json"], 1);
    assert_eq!(report["verdict"], "findings", "{report:#}");
    mark
}

/// R-PLANE-2, R-COVER-3 (issue 21 review): `verify` held the log to the
/// plane's high-water mark only when the mark read as a signed tree; a mark
/// that is lost (its file gone, or no line for the origin) was passed over
/// in silence, and a store put back from a backup verified "clean and
/// complete" (exit 0 with `--assert-complete`). What the mark would have
/// checked is now listed as not checked, naming the mark and why.
#[test]
fn r_plane_2_verify_says_a_lost_high_water_mark_leaves_a_rollback_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    let backup = || back_up(plane);
    let restore = || put_back(plane);
    let mark = plane_with_a_restored_backup(plane, &backup, &restore);

    let without_shop: String = mark
        .lines()
        .filter(|line| !line.starts_with("agentplane.local/plane/shop "))
        .map(|l| format!("{l}\n"))
        .collect();
    for (lost, why) in [(Some(without_shop), "has no line for agentplane.local/plane/shop"), (None, "is missing")] {
        match lost {
            Some(text) => std::fs::write(plane.join("agentplane.highwater"), text).unwrap(),
            None => std::fs::remove_file(plane.join("agentplane.highwater")).unwrap(),
        }
        let report = json_exit(plane, &["verify", "--require-signature", "--assert-complete", "--json"], 1);
        assert_eq!(report["verdict"], "incomplete", "never clean with the mark lost: {report:#}");
        let said = report["not_checked"].as_array().unwrap().iter().any(|n| {
            n["what"].as_str().unwrap().contains("before the plane's last signature")
                && n["why"].as_str().unwrap().contains(why)
        });
        assert!(said, "the lost mark is named, and why ({why}): {report:#}");
        let text = ok(plane, &["verify", "--require-signature"]);
        assert!(text.contains("NOT CHECKED a store put back") && !text.contains("clean and complete"), "{text}");
    }
}

/// R-PLANE-2, R-AUD-2 (issue 21 review): `verify` passed over the plane's
/// high-water mark whenever a `signed_checkpoints` row's size and root
/// matched it, and never compared those columns with the note beside them.
/// An attacker with write access to the store and no key put a backup back
/// and added one row whose columns copy the mark (a public tree) beside a
/// genuine older note: `verify --require-signature --assert-complete` said
/// clean and complete. And a row whose note does not verify made `verify`
/// a usage error (exit 2, no report). The mark is now compared with the
/// verified notes; each such row is a `store_damaged` finding (exit 1).
fn a_signed_row_copying_the_mark_hides_no_rollback(
    plane: &Path,
    open_store: &dyn Fn() -> Box<dyn journal_core::Store>,
    backup: &dyn Fn(),
    restore: &dyn Fn(),
) {
    let mark = plane_with_a_restored_backup(plane, backup, restore);
    let line = mark.lines().find(|line| line.starts_with("agentplane.local/plane/shop ")).unwrap();
    let words: Vec<&str> = line.split(' ').collect();
    let marked = tlog::Tree::new(words[1].parse().unwrap(), tlog::RootHash::from_hex(words[2]).unwrap());
    let tenant = journal_core::TenantId::new("shop").unwrap();
    let forge = |note: &str| {
        let store = open_store();
        let rows = store.signed_checkpoints(&tenant).unwrap();
        let last = rows.last().unwrap().tree;
        let note = if note.is_empty() { rows[0].note.clone() } else { note.to_owned() };
        store
            .record_signed_checkpoint(&tenant, Some(last), journal_core::store::SignedTree { tree: marked, note })
            .unwrap();
    };

    // The genuine note of the older checkpoint, the mark's tree beside it.
    forge("");
    let report = json_exit(plane, &["verify", "--require-signature", "--assert-complete", "--json"], 1);
    assert_eq!(report["verdict"], "findings", "{report:#}");
    let codes: Vec<&str> = report["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"log_shrank") && codes.contains(&"store_damaged"), "{report:#}");

    // A note that is not the plane's at all: a finding, never a usage error.
    forge("forged\n");
    let report = json_exit(plane, &["verify", "--json"], 1);
    let damaged = report["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "store_damaged").count();
    assert_eq!((report["verdict"].as_str(), damaged), (Some("findings"), 2), "{report:#}");
    assert!(report["anchors"].as_array().unwrap().iter().any(|a| a["status"] == "failed" && a["size"].is_null()));
}

#[test]
fn r_plane_2_a_signed_row_copying_the_mark_hides_no_rollback_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    let store = plane.join("agentplane.redb");
    let backup = || back_up(plane);
    let restore = || put_back(plane);
    let open = || Box::new(store_redb::RedbStore::open(&store).unwrap()) as Box<dyn journal_core::Store>;
    a_signed_row_copying_the_mark_hides_no_rollback(plane, &open, &backup, &restore);
}

#[test]
fn r_plane_2_a_signed_row_copying_the_mark_hides_no_rollback_on_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    let url = point_at_a_fresh_database(plane);
    let configured = std::fs::read_to_string(plane.join("agentplane.toml")).unwrap();
    let copy = std::cell::RefCell::new(String::new());
    let backup = || *copy.borrow_mut() = store_pg::testkit::copy_database(&url);
    let restore = || {
        std::fs::write(plane.join("agentplane.toml"), configured.replace(&url, &copy.borrow())).unwrap();
    };
    let open = || Box::new(store_pg::PgStore::open(&copy.borrow()).unwrap()) as Box<dyn journal_core::Store>;
    a_signed_row_copying_the_mark_hides_no_rollback(plane, &open, &backup, &restore);
}

/// R-PLANE-2, R-UX-3: the high-water mark is read to a bound and only from a
/// regular file. A FIFO put in its place used to hold every command that
/// signs waiting for a writer; bytes that are not UTF-8 were an I/O failure.
/// Both are now a damaged mark (exit 1) and nothing is signed.
#[cfg(unix)]
#[test]
fn r_plane_2_a_mark_that_is_no_regular_file_or_not_utf8_is_damage_and_nothing_is_signed() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    ok(plane, &["demo"]);
    ok(plane, &["checkpoint"]);
    let mark = plane.join("agentplane.highwater");

    std::fs::remove_file(&mark).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&mark).status().unwrap();
    assert!(made.success());
    let stderr = fails(plane, &["checkpoint"], 1);
    assert!(stderr.contains("not a regular file"), "{stderr}");
    use std::os::unix::fs::FileTypeExt as _;
    assert!(std::fs::metadata(&mark).unwrap().file_type().is_fifo(), "left as it was");

    std::fs::remove_file(&mark).unwrap();
    let damaged = b"agentplane.local/plane/shop 3 \xff\xfe\n";
    std::fs::write(&mark, damaged).unwrap();
    let stderr = fails(plane, &["checkpoint"], 1);
    assert!(stderr.contains("not UTF-8"), "{stderr}");
    assert_eq!(std::fs::read(&mark).unwrap(), damaged, "nothing was signed: the mark was not rewritten");
}

/// Review 28, R-PLANE-2: a high-water mark holding two lines for one origin
/// (two copies of the file joined, a line added by hand below the one the
/// plane wrote) was read by its first line. With the older line first, a
/// store put back from before the newer one was signed, and once `demo`
/// grew it again the plane signed a second root at the size it had signed
/// before (exit 0 both times). A second line for an origin is damage: every
/// command that signs refuses (exit 1, naming the line), nothing is admitted,
/// and the file is left as it was.
#[test]
fn r_plane_2_a_mark_with_two_lines_for_one_origin_is_damage_and_nothing_is_signed() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    ok(plane, &["demo"]);
    let older = json(plane, &["checkpoint", "--json"]);
    back_up(plane);
    ok(plane, &["demo"]);
    let newer = json(plane, &["checkpoint", "--json"]);
    assert!(newer["size"].as_u64() > older["size"].as_u64());
    put_back(plane);
    let origin = "agentplane.local/plane/shop";
    let mark = format!(
        "{origin} {} {}\n{origin} {} {}\n",
        older["size"],
        older["root"].as_str().unwrap(),
        newer["size"],
        newer["root"].as_str().unwrap()
    );
    std::fs::write(plane.join("agentplane.highwater"), &mark).unwrap();
    let runs_before = ok(plane, &["runs", "--ids"]);
    for args in [vec!["checkpoint"], vec!["demo"]] {
        let stderr = fails(plane, &args, 1);
        assert!(stderr.contains("is damaged") && stderr.contains("line 2") && stderr.contains(origin), "{stderr}");
    }
    assert_eq!(ok(plane, &["runs", "--ids"]), runs_before, "nothing was admitted");
    assert_eq!(std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap(), mark, "left as it was");
}

/// Review 28, R-UX-2 and R-WIT-9: a high-water mark that cannot be written
/// (a full disk, a path in the way: here `agentplane.highwater.new` is a
/// directory) is a failure of I/O, not evidence about the log. `checkpoint`
/// exited 1 as findings, and the sweep reported `refused_to_sign` to
/// `agentplane.witness.integrity`, the alarm whose audience is told "this
/// history moved", for a log that had only grown. Both now exit 2 naming
/// the mark; nothing is signed, nothing reaches the witness, and once the
/// path is clear the same log is signed and witnessed.
#[test]
fn r_wit_9_a_mark_that_cannot_be_written_is_an_io_failure_not_an_integrity_alarm() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let witness = witnessed_plane(plane);
    ok(plane, &["demo"]);
    let (code, report, stderr) = sweep(plane);
    assert_eq!((code, report["outcome"].as_str()), (Some(0), Some("met")), "{stderr}");
    let origin = "agentplane.local/plane/shop";
    let held = witness_holds(&witness, origin);
    let run = ok(plane, &["runs", "--outcome", "succeeded", "--ids"]).lines().next().unwrap().to_owned();
    // The log grows without a signature: a fork is admitted (its head moves).
    ok(plane, &["fork", &run, "--at", "2"]);
    let mark = std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap();
    std::fs::create_dir(plane.join("agentplane.highwater.new")).unwrap();

    let stderr = fails(plane, &["checkpoint"], 2);
    assert!(stderr.contains("agentplane.highwater.new") && stderr.contains("nothing was signed"), "{stderr}");
    let (code, report, stderr) = sweep(plane);
    assert_eq!(code, Some(2), "{report} {stderr}");
    assert_ne!(report["outcome"], "refused_to_sign", "{report}");
    assert!(!stderr.contains("agentplane.witness.integrity"), "{stderr}");
    assert!(stderr.contains("agentplane.highwater.new") && stderr.contains("nothing was signed"), "{stderr}");
    assert_eq!(witness_holds(&witness, origin), held, "nothing new reached the witness");
    assert_eq!(std::fs::read_to_string(plane.join("agentplane.highwater")).unwrap(), mark);

    std::fs::remove_dir(plane.join("agentplane.highwater.new")).unwrap();
    let (code, report, stderr) = sweep(plane);
    assert_eq!((code, report["outcome"].as_str()), (Some(0), Some("met")), "{stderr}");
    assert!(witness_holds(&witness, origin).size > held.size);
}

/// Review 28, R-PLANE-2 and R-UX-2: `verify` holds the store to the plane's
/// high-water mark, and read a mark that does not parse (here two lines for
/// one origin, which `checkpoint` refuses as damage, exit 1) as a failure of
/// I/O (exit 2): the one command meant to find what is wrong with the plane
/// called its damaged record of what it signed a disk's trouble. It is a
/// finding now (exit 1, naming the line), as for every command that signs.
#[test]
fn r_plane_2_verify_calls_a_damaged_mark_a_finding_not_an_io_failure() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    ok(plane, &["demo"]);
    let signed = json(plane, &["checkpoint", "--json"]);
    let origin = "agentplane.local/plane/shop";
    let line = format!("{origin} {} {}\n", signed["size"], signed["root"].as_str().unwrap());
    std::fs::write(plane.join("agentplane.highwater"), format!("{origin} never\n{line}")).unwrap();
    let stderr = fails(plane, &["checkpoint"], 1);
    assert!(stderr.contains("is damaged") && stderr.contains("line 2"), "{stderr}");
    let stderr = fails(plane, &["verify"], 1);
    assert!(stderr.contains("is damaged") && stderr.contains("line 2"), "{stderr}");
    // The operator leaves one line: verify is clean again.
    std::fs::write(plane.join("agentplane.highwater"), line).unwrap();
    ok(plane, &["verify"]);
}

/// The tenant's log size in the redb store of the plane in `plane`, read beside it.
fn log_size(plane: &Path) -> u64 {
    let store = store_redb::RedbStore::open_read_only(&plane.join("agentplane.redb")).unwrap();
    let tenant = journal_core::TenantId::new("shop").unwrap();
    journal_core::LogView::open(&store, &tenant).unwrap().size()
}

/// Review 28, R-PLANE-2: a store put back from a backup taken while a run
/// had moved since the last heads leaf. The sweep appended a heads leaf to
/// it before anything checked it against what the plane signed, and only
/// then refused to sign: the refused store was written to, its log now a
/// fork of the signed one at the position the plane signed another leaf
/// (`checkpoint` and `export` refuse before they append anything). The
/// sweep now holds the store to the mark first: refused, nothing appended.
#[test]
fn r_plane_2_a_sweep_refusing_a_restored_store_appends_nothing_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let _witness = witnessed_plane(plane);
    ok(plane, &["demo"]);
    let (code, report, stderr) = sweep(plane);
    assert_eq!((code, report["outcome"].as_str()), (Some(0), Some("met")), "{stderr}");
    let run = ok(plane, &["runs", "--outcome", "succeeded", "--ids"]).lines().next().unwrap().to_owned();
    ok(plane, &["fork", &run, "--at", "2"]);
    back_up(plane);
    ok(plane, &["fork", &run, "--at", "2", "--key", "a second fork"]);
    let (code, report, stderr) = sweep(plane);
    assert_eq!((code, report["outcome"].as_str()), (Some(0), Some("met")), "{stderr}");

    put_back(plane);
    let before = log_size(plane);
    let (code, report, stderr) = sweep(plane);
    assert_eq!((code, report["outcome"].as_str()), (Some(1), Some("refused_to_sign")), "{report} {stderr}");
    assert_eq!(log_size(plane), before, "the sweep wrote a heads leaf to a store it refused to sign: {report}");
}

/// Review 54, R-PLANE-2: a key file copied into another plane's folder
/// (every `init` gives the tenant `default` the same origin) was held to the
/// mark `init` wrote there for that folder's own key, which said its origin
/// was never signed: the copied key then signed a second history of its
/// origin, another root at a size it had signed from its own store. The
/// mark names the key it was kept for, and a mark kept for another key
/// signs nothing (exit 1, naming both keys), its folder's own key still does.
#[test]
fn r_plane_2_a_key_file_copied_beside_another_key_s_mark_signs_nothing() {
    let first = tempfile::tempdir().unwrap();
    ok(first.path(), &["init"]);
    ok(first.path(), &["demo"]);
    let signed = json(first.path(), &["checkpoint", "--json"]);
    let second = tempfile::tempdir().unwrap();
    ok(second.path(), &["init"]);
    let own_key = std::fs::read(second.path().join("agentplane.key")).unwrap();
    let mark = std::fs::read_to_string(second.path().join("agentplane.highwater")).unwrap();
    std::fs::copy(first.path().join("agentplane.key"), second.path().join("agentplane.key")).unwrap();
    let out = agentplane(second.path(), &["demo"]);
    if out.status.success() {
        let forked = json(second.path(), &["checkpoint", "--json"]);
        panic!(
            "the copied key signed a second history of {}: size {} root {} here, size {} root {} in its own plane",
            signed["origin"], forked["size"], forked["root"], signed["size"], signed["root"]
        );
    }
    let stderr = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("written for the log key") && stderr.contains("another plane"), "{stderr}");
    let stderr = fails(second.path(), &["checkpoint"], 1);
    assert!(stderr.contains("written for the log key"), "{stderr}");
    assert_eq!(std::fs::read_to_string(second.path().join("agentplane.highwater")).unwrap(), mark, "nothing signed");
    // The folder's own key signs again.
    std::fs::write(second.path().join("agentplane.key"), own_key).unwrap();
    ok(second.path(), &["demo"]);
    ok(second.path(), &["checkpoint"]);
}

/// Review 54's note, R-PLANE-2: an origin that starts with `#` was accepted
/// by `init` and `keygen`, and its line in the high-water mark read as a
/// comment: the mark was always lost, and the plane signed and admitted
/// nothing. Refused before anything is written (exit 2).
#[test]
fn r_plane_2_an_origin_the_mark_would_read_as_a_comment_is_refused_at_init() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = fails(dir.path(), &["init", "--origin-base", "#plane"], 2);
    assert!(stderr.contains("starts with #"), "{stderr}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
    let stderr = fails(dir.path(), &["keygen", "--origin", "#plane/default"], 2);
    assert!(stderr.contains("starts with #"), "{stderr}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
}

/// R-PLANE-2, R-UX-3 (review 83's note): an origin holding a character that
/// shows as nothing or reorders what is around it (a zero-width space, a
/// right-to-left override) reads, to an auditor, as another origin: the
/// plane would sign under a name no one can tell from its neighbour's.
/// Refused at `init` and `keygen`, nothing written, the character named.
#[test]
fn r_plane_2_an_origin_that_disguises_itself_is_refused_at_init() {
    let dir = tempfile::tempdir().unwrap();
    for (base, shown) in [("exa\u{200b}mple.com/plane", "U+200B"), ("example.com/\u{202e}enalp", "U+202E")] {
        let stderr = fails(dir.path(), &["init", "--origin-base", base], 2);
        assert!(stderr.contains(shown) && stderr.contains("visible"), "{stderr}");
        assert!(!stderr.contains(base), "the character itself is never printed: {stderr}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
        let stderr = fails(dir.path(), &["keygen", "--origin", &format!("{base}/default")], 2);
        assert!(stderr.contains(shown), "{stderr}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
    }
}

/// R-WIT-7, R-WIT-9 (review 68's note): a configuration whose `quorum` is
/// 0 or missing (serde's default) beside its witnesses made `checkpoint
/// --cosigned` take a kept note with no cosignature at all for the latest
/// cosigned checkpoint: a row a store writer copied from the plane's own
/// signed checkpoint passed for witnessed. As `audit` does, it counts at
/// least one witness.
#[test]
fn r_wit_7_checkpoint_cosigned_never_takes_a_note_no_witness_cosigned() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let _witness = witnessed_plane(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    let witnessed = json(plane, &["checkpoint", "--cosigned", "--json"]);
    ok(plane, &["demo"]);
    let signed = json(plane, &["checkpoint", "--json"]);
    assert_ne!(signed["size"], witnessed["size"], "{signed} {witnessed}");
    {
        let store = store_redb::RedbStore::open(&plane.join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("shop").unwrap();
        let head = journal_core::LogView::open(&store, &tenant).unwrap().head().unwrap().tree;
        let copied = journal_core::store::SignedTree { tree: head, note: signed["note"].as_str().unwrap().to_owned() };
        journal_core::Store::record_cosigned_checkpoint(&store, &tenant, copied).unwrap();
    }
    let config = std::fs::read_to_string(plane.join("agentplane.toml")).unwrap();
    std::fs::write(plane.join("agentplane.toml"), config.replace("quorum = 1", "quorum = 0")).unwrap();
    let latest = json(plane, &["checkpoint", "--cosigned", "--json"]);
    assert_eq!(latest["size"], witnessed["size"], "the uncosigned copy passed for witnessed: {latest}");
}

/// R-UX-3 (review 83): a signed note may carry signature lines of keys
/// nobody trusts (C2SP: a verifier skips them), and a key's name may hold
/// any character but a blank and `+`. Whoever writes the store appended a
/// line to the kept cosigned note under a name with a right-to-left
/// override and a zero-width space; the note still verifies, and
/// `checkpoint --cosigned` printed it as it came, reordering the line on
/// the auditor's terminal. Such characters are shown as their escapes, as
/// everywhere else.
#[test]
fn r_ux_3_checkpoint_prints_an_untrusted_signature_line_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let _witness = witnessed_plane(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    let note = json(plane, &["checkpoint", "--cosigned", "--json"])["note"].as_str().unwrap().to_owned();
    {
        let store = store_redb::RedbStore::open(&plane.join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("shop").unwrap();
        let head = journal_core::LogView::open(&store, &tenant).unwrap().head().unwrap().tree;
        let note = format!("{note}\u{2014} witness.test/\u{202e}1w\u{200b} {}\n", "A".repeat(92));
        let forged = journal_core::store::SignedTree { tree: head, note };
        journal_core::Store::record_cosigned_checkpoint(&store, &tenant, forged).unwrap();
    }
    let out = ok(plane, &["checkpoint", "--cosigned"]);
    assert!(!out.chars().any(|c| c != '\n' && witness::text::disguises(c)), "{out:?}");
    assert!(out.contains("witness.test/\\u{202e}1w\\u{200b} "), "shown as its escapes: {out}");
}

/// R-WIT-9: `checkpoint --cosigned` counts at least one witness whatever
/// the configuration's quorum says: with `quorum = 0` and a configured
/// witness that cosigned nothing, no kept note is printed (exit 2), never
/// one no trusted witness cosigned (mutation review 87: with the quorum
/// taken as written, the note was printed, exit 0).
#[test]
fn r_wit_9_checkpoint_cosigned_counts_at_least_one_witness() {
    let root = tempfile::tempdir().unwrap();
    let plane = root.path();
    let witness = witnessed_plane(plane);
    ok(plane, &["demo"]);
    assert_eq!(sweep(plane).0, Some(0));
    ok(plane, &["checkpoint", "--cosigned"]);
    let stranger = witness::SignerKey::from_seed("integrity.test/w9", witness::ALG_COSIGNATURE_V1, [9; 32]).unwrap();
    let config = std::fs::read_to_string(plane.join("agentplane.toml"))
        .unwrap()
        .replace("quorum = 1", "quorum = 0")
        .replace(&witness.vkey, &stranger.verifier_key().to_string());
    std::fs::write(plane.join("agentplane.toml"), config).unwrap();
    let said = fails(plane, &["checkpoint", "--cosigned"], 2);
    assert!(said.contains("no quorum"), "{said}");
}
