//! The plane's upkeep and recovery paths, attacked as a careless operator
//! would: `init` and `keygen` on a disk that fills up, `keygen` against a
//! store that holds runs, `compact` beside a process that has the store
//! open (R-UX-3: nothing already stored is lost, every refusal says what
//! was wrong and what to do; R-SIG-4; R-OPS-1).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::path::Path;
use std::process::{Command, Output};

/// Runs `agentplane ARGS` in `dir` with every file it writes limited to
/// 1 KiB (`ulimit -f 1`, SIGXFSZ ignored): a write past that fails as on a
/// full disk, after the bytes that fitted were written.
fn agentplane_on_a_full_disk(dir: &Path, args: &[&str]) -> Output {
    Command::new("bash")
        .current_dir(dir)
        .arg("-c")
        .arg(r#"trap "" XFSZ; ulimit -f 1; exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_agentplane"))
        .args(args)
        .output()
        .unwrap()
}

/// R-UX-3: `init` on a disk that fills up while the key file is written
/// fails (exit 2) and leaves no half-written key file, high-water mark or
/// configuration behind: the same `init` succeeds once there is room, and
/// its keys read.
#[test]
fn r_ux_3_init_on_a_full_disk_leaves_no_half_written_key_file() {
    let dir = tempfile::tempdir().unwrap();
    // Sixteen tenants: a key file of about 2 KiB, past the limit.
    let names: Vec<String> = (1..=16).map(|i| format!("tenant-number-{i}")).collect();
    let mut args = vec!["init"];
    for name in &names {
        args.extend(["--tenant-name", name.as_str()]);
    }
    let out = agentplane_on_a_full_disk(dir.path(), &args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    for left in ["agentplane.key", "agentplane.highwater", "agentplane.toml"] {
        assert!(!dir.path().join(left).exists(), "{left} was left behind by a failed init: {}", text(&out));
    }
    ok(dir.path(), &args);
    let keys = json(dir.path(), &["--tenant", "tenant-number-16", "keys", "--json"]);
    assert_eq!(keys["origin"], "agentplane.local/plane/tenant-number-16", "{keys}");
}

/// R-UX-3: the same for `keygen` (a long origin makes its key file larger
/// than the limit): no truncated key file is left to refuse the next try.
#[test]
fn r_ux_3_keygen_on_a_full_disk_leaves_no_half_written_key_file() {
    let dir = tempfile::tempdir().unwrap();
    let origin = format!("example.test/{}", "a".repeat(600));
    let out = agentplane_on_a_full_disk(dir.path(), &["keygen", "--origin", &origin]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    for left in ["agentplane.key", "agentplane.highwater"] {
        assert!(!dir.path().join(left).exists(), "{left} was left behind by a failed keygen: {}", text(&out));
    }
    let vkey = ok(dir.path(), &["keygen", "--origin", &origin]);
    assert!(vkey.starts_with(&origin), "{vkey}");
    assert_eq!(ok(dir.path(), &["--origin", &origin, "keys", "--print", "origin"]).trim(), origin);
}

/// R-SIG-4: `keygen` refuses a PostgreSQL store that holds runs, as it does
/// a redb file: a plane never mints keys for a history it did not sign
/// (`cargo xtask with-pg cargo test -p agentplane-cli --test maintenance`).
#[test]
fn r_sig_4_keygen_refuses_a_postgresql_store_that_holds_runs() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    point_at_a_fresh_database(dir.path());
    ok(dir.path(), &["demo"]);
    let said = fails(dir.path(), &["keygen", "--keys", "fresh.key"], 2);
    assert!(said.contains("already holds runs"), "{said}");
    assert!(!dir.path().join("fresh.key").exists(), "no key was minted for a store with runs");
    assert!(!dir.path().join("fresh.highwater").exists());
}

/// R-UX-3: `export --force` on a disk that fills up while the export is
/// written fails (exit 2) and leaves the file it would have replaced as it
/// was; `export` to a new file leaves no half-written export to be read, or
/// to refuse the next try. Before, the old file was truncated first and the
/// new export cut at the limit: the export kept there was lost. The store is
/// a PostgreSQL database, so the only files the command writes are the
/// export and the small high-water mark (`cargo xtask with-pg cargo test -p
/// agentplane-cli --test maintenance`).
#[test]
fn r_ux_3_export_on_a_full_disk_keeps_the_file_it_would_replace() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    point_at_a_fresh_database(dir.path());
    ok(dir.path(), &["demo"]);
    let run = ok(dir.path(), &["runs", "--outcome", "succeeded", "--ids"]).lines().next().unwrap().to_owned();
    let whole = ok(dir.path(), &["export", &run, "-o", "-"]);
    assert!(whole.len() > 2048, "an export larger than the limit: {} bytes", whole.len());
    let kept = dir.path().join("kept.export");
    std::fs::write(&kept, "an export kept from before").unwrap();
    let listing = || {
        let mut names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    };
    let before = listing();
    let out = agentplane_on_a_full_disk(dir.path(), &["export", &run, "-o", "kept.export", "--force"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "an export kept from before", "{}", text(&out));
    let out = agentplane_on_a_full_disk(dir.path(), &["export", &run, "-o", "new.export"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(listing(), before, "a failed export left a file behind: {}", text(&out));
    ok(dir.path(), &["export", &run, "-o", "new.export"]);
    ok(dir.path(), &["export", &run, "-o", "kept.export", "--force"]);
    for name in ["new.export", "kept.export"] {
        let written = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert_eq!(written.lines().count(), whole.lines().count(), "{name}");
    }
}

/// R-UX-3: `export --force` replaces an earlier export, never one of the
/// plane's own files, named directly or through a link (a mistyped or
/// completed name): the store, the key file, the high-water mark and the
/// configuration are refused (exit 2) and left byte for byte as they were.
/// Before, `export RUN -o agentplane.redb --force` wrote the export over the
/// store it had just read from, and exited 0: every run was gone, and so
/// were the plane's keys with `-o agentplane.key`.
#[test]
fn r_ux_3_export_force_never_replaces_the_plane_s_own_files() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    ok(dir.path(), &["demo"]);
    let run = ok(dir.path(), &["runs", "--outcome", "succeeded", "--ids"]).lines().next().unwrap().to_owned();
    #[cfg(unix)]
    std::os::unix::fs::symlink("agentplane.key", dir.path().join("link.export")).unwrap();
    // The way back a migration keeps (review 37's note), and the mark's lock.
    std::fs::write(dir.path().join("agentplane.redb.layout1"), "the store as it was").unwrap();
    assert!(dir.path().join("agentplane.highwater.lock").exists(), "the demo signed: its mark's lock is there");
    for name in [
        "agentplane.redb",
        "agentplane.key",
        "agentplane.highwater",
        "agentplane.highwater.lock",
        "agentplane.redb.layout1",
        "agentplane.toml",
        "link.export",
    ] {
        if !dir.path().join(name).exists() {
            continue;
        }
        let before = std::fs::read(dir.path().join(name)).unwrap();
        let said = fails(dir.path(), &["export", &run, "-o", name, "--force"], 2);
        assert!(said.contains("the plane's"), "{name}: {said}");
        assert!(std::fs::read(dir.path().join(name)).unwrap() == before, "{name} was written over");
    }
    assert!(ok(dir.path(), &["verify"]).contains("clean"));
    ok(dir.path(), &["export", &run, "-o", "run.export", "--force"]);
}

/// R-UX-3 (review 37): `repair`, `compact` and `migrate` of a file that is
/// no agentplane store (a text file, another program's redb database) say
/// so and leave it untouched, as they did before review 35's note was
/// answered: not that the command "did not finish", with free space or a
/// permission as the usual cause and `agentplane verify` to read the store,
/// which sends the operator after a disk that is not full.
#[test]
fn r_ux_3_upkeep_of_a_file_that_is_no_store_says_so_not_that_it_ran_out_of_room() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.redb"), "not a store\n").unwrap();
    {
        let other = redb::Database::create(dir.path().join("other.redb")).unwrap();
        let txn = other.begin_write().unwrap();
        txn.open_table(redb::TableDefinition::<&str, &str>::new("theirs")).unwrap().insert("a", "b").unwrap();
        txn.commit().unwrap();
    }
    // Another program's database is refused by each, before it is opened
    // for writing (which rewrote its header; `compact` compacted it): left
    // byte for byte (review 37's note).
    for file in ["notes.redb", "other.redb"] {
        let before = std::fs::read(dir.path().join(file)).unwrap();
        for command in ["repair", "compact", "migrate"] {
            let said = fails(dir.path(), &["--store", file, command], 2);
            assert!(!said.contains("did not finish") && !said.contains("free space"), "{file} {command}: {said}");
            assert!(said.contains("not a readable agentplane store") || said.contains("another program"), "{said}");
            assert!(std::fs::read(dir.path().join(file)).unwrap() == before, "{file} was written by {command}");
        }
    }
}

/// R-UX-3, R-OPS-1: `compact` beside a process that shares the file (a
/// plane, its sweep, a reader) changes nothing and says why truly: compact
/// needs the file to itself, and which process has it open; not that the
/// other process "opened it alone", which a plane of this build never does.
#[test]
fn r_ops_1_compact_beside_a_plane_says_it_needs_the_file_to_itself() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    ok(dir.path(), &["demo"]);
    let store = dir.path().join("agentplane.redb");
    let before = std::fs::read(&store).unwrap();
    // This test process is the plane: it has the file open, shared.
    let plane = store_redb::RedbStore::open(&store).unwrap();
    let said = fails(dir.path(), &["compact"], 2);
    assert!(said.contains("to itself") && said.contains(&format!("pid {}", std::process::id())), "{said}");
    assert!(
        !said.contains("opened it alone"),
        "the plane shares the file; compact is the one that needs it alone: {said}"
    );
    drop(plane);
    assert_eq!(std::fs::read(&store).unwrap().len(), before.len(), "nothing was compacted beside the plane");
    assert!(ok(dir.path(), &["compact"]).contains("bytes before"));
}

/// The records of `run` of tenant `shop` in the redb store of `plane`, read
/// without writing.
fn records_of(plane: &Path, run: &journal_core::RunId) -> usize {
    use journal_core::Store as _;
    let store = store_redb::RedbStore::open_read_only(&plane.join("agentplane.redb")).unwrap();
    store.read_run(&journal_core::TenantId::new("shop").unwrap(), run).unwrap().rows.len()
}

/// The first run of tenant `shop` whose answer is `outcome`.
fn first_run(plane: &Path, outcome: &str) -> journal_core::RunId {
    let ids = ok(plane, &["--tenant", "shop", "runs", "--outcome", outcome, "--ids"]);
    journal_core::RunId::new(ids.lines().next().unwrap_or_else(|| panic!("the demo makes a {outcome} run"))).unwrap()
}

/// The first `exhausted`, `withheld` and `quarantined` runs of tenant
/// `shop`, as `runs --outcome` lists them (read before the store is
/// tampered with: a run whose conclusion was cut away is no longer listed
/// under the outcome its index row still names).
fn stopped_runs(plane: &Path) -> [journal_core::RunId; 3] {
    ["exhausted", "withheld", "quarantined"].map(|outcome| first_run(plane, outcome))
}

/// `resume` with each answer it takes, on the `exhausted`, `withheld` (with
/// `lift`) and `quarantined` runs of a store the plane must not go on with:
/// each exits 1 saying `why`, and no run gained a record.
fn resume_appends_nothing(plane: &Path, runs: [journal_core::RunId; 3], why: &str, lift: bool) {
    let [exhausted, withheld, quarantined] = runs;
    let effect = ok(plane, &["--tenant", "shop", "show", quarantined.as_str(), "--json"]);
    let effect: serde_json::Value = serde_json::from_str(&effect).unwrap();
    let effect = effect["records"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| (r["kind"] == "EffectStarted").then(|| r["effect_key"].as_str().unwrap().to_owned()))
        .unwrap();
    let before: Vec<usize> = [&exhausted, &withheld, &quarantined].iter().map(|run| records_of(plane, run)).collect();
    let answer = format!("{effect}=not-happened");
    let mut cases = vec![
        vec!["--tenant", "shop", "resume", exhausted.as_str(), "--raise", "tokens=100000"],
        vec!["--tenant", "shop", "resume", quarantined.as_str(), "--answer", answer.as_str()],
    ];
    if lift {
        cases.push(vec!["--tenant", "shop", "resume", withheld.as_str(), "--lift"]);
    }
    for args in cases {
        let out = agentplane(plane, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(why), "{args:?}: {}", text(&out));
    }
    let after: Vec<usize> = [&exhausted, &withheld, &quarantined].iter().map(|run| records_of(plane, run)).collect();
    assert_eq!(after, before, "resume appended to runs it refused to resume");
}

/// R-RUN-5, R-PLANE-2: on a store older than what the plane signed (a
/// backup put back), `resume --raise`, `--lift` and `--answer` append
/// nothing. Before, each answer was appended (signed with the plane's
/// record key, extending the rolled-back history) and only the resume after
/// it was refused with "no run is admitted or resumed here".
#[test]
fn r_run_5_resume_on_a_store_older_than_the_mark_appends_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    ok(plane, &["demo"]);
    std::fs::copy(plane.join("agentplane.redb"), plane.join("backup.redb")).unwrap();
    ok(plane, &["demo"]);
    std::fs::copy(plane.join("backup.redb"), plane.join("agentplane.redb")).unwrap();
    resume_appends_nothing(plane, stopped_runs(plane), "older than what the plane signed", true);
}

/// R-RUN-5, R-COVER-2: runs cut back behind the plane after a checkpoint
/// covered their heads: `resume` with an answer appends nothing to them (an
/// answer signed onto a cut history, `not-happened` to an effect whose end
/// was cut away, would have the plane vouch for the forgery and run the
/// effect again).
#[test]
fn r_cover_2_resume_of_a_cut_back_run_appends_no_answer() {
    use journal_core::Store as _;
    use journal_core::testkit::TamperAccess as _;
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    ok(plane, &["demo"]);
    ok(plane, &["--tenant", "shop", "checkpoint"]);
    let runs = stopped_runs(plane);
    {
        let store = store_redb::RedbStore::open(&plane.join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("shop").unwrap();
        // Their conclusions cut away: the exhausted run takes a raised
        // ceiling, the quarantined one's effect is still in doubt.
        for run in [&runs[0], &runs[2]] {
            let rows = store.read_run(&tenant, run).unwrap().rows;
            let keep = rows.len() - 1;
            store.delete_record(&tenant, run, rows[keep].seq);
            store.set_runs_head(
                &tenant,
                run,
                journal_core::ExpectedHead { seq: rows[keep - 1].seq, hash: rows[keep - 1].hash },
            );
        }
    }
    resume_appends_nothing(plane, runs, "cut back", false);
}

/// Runs `agentplane ARGS` in `dir`, killed (SIGXFSZ at its default action)
/// by the first write that takes a file past 1 KiB: a crash at that very
/// write, with every file written before it on disk as the plane left it.
fn agentplane_killed_at_the_first_write_past_1_kib(dir: &Path, args: &[&str]) -> Output {
    Command::new("bash")
        .current_dir(dir)
        .arg("-c")
        .arg(r#"trap - XFSZ; ulimit -f 1; exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_agentplane"))
        .args(args)
        .output()
        .unwrap()
}

/// R-PLANE-2, R-UX-3: `init` and `keygen` killed part way (power lost, a
/// SIGKILL) between their two files. The key file was made first and the
/// high-water mark after it: killed in between, the key file stayed without
/// its mark, so the next `init` or `keygen` refused ("exists"), and every
/// signature and admission of the plane, which had never signed anything,
/// refused as an integrity alarm (its mark lost). The mark, saying nothing
/// is signed yet, is now on disk before the key file; a mark left alone
/// (killed before the key file was made) says nothing was signed by any
/// key, and the same `init` or `keygen` makes the plane again. A mark that
/// says a tree was signed is still never replaced.
#[test]
fn r_plane_2_init_and_keygen_killed_between_their_files_are_run_again() {
    // A base whose key file fits in 1 KiB and whose mark does not: each
    // grows by two bytes a byte of the origin, and the mark is the larger.
    let measured = tempfile::tempdir().unwrap();
    let base = |n: usize| format!("example.test/{}", "a".repeat(n));
    ok(measured.path(), &["keygen", "--origin", &format!("{}/default", base(300))]);
    let size = |file: &str| usize::try_from(std::fs::metadata(measured.path().join(file)).unwrap().len()).unwrap();
    let (key, mark) = (size("agentplane.key"), size("agentplane.highwater"));
    assert!(key < 1024 && mark > key + 2, "key file {key} bytes, mark {mark}");
    let base = base(300 + (1024 - key) / 2);
    let origin = format!("{base}/default");
    let runs: [Vec<&str>; 2] =
        [vec!["init", "--origin-base", &base], vec!["--store", "k.redb", "keygen", "--origin", &origin]];
    for args in &runs {
        let dir = tempfile::tempdir().unwrap();
        let killed = agentplane_killed_at_the_first_write_past_1_kib(dir.path(), args);
        assert_eq!(killed.status.code(), None, "killed by the signal: {}", text(&killed));
        assert!(
            !dir.path().join("agentplane.key").exists() || dir.path().join("agentplane.highwater").exists(),
            "{} killed part way left a key file without its high-water mark",
            args[0]
        );
        ok(dir.path(), args);
        if args[0] == "init" {
            ok(dir.path(), &["demo"]);
            ok(dir.path(), &["checkpoint"]);
        } else {
            assert!(ok(dir.path(), &["--origin", &origin, "keys", "--print", "log-key"]).starts_with(&origin));
        }
    }

    // Killed after the mark was on disk, before the key file (and the
    // configuration) were: the mark alone, saying nothing was signed.
    for args in &runs {
        let dir = tempfile::tempdir().unwrap();
        ok(dir.path(), args);
        let mark = std::fs::read_to_string(dir.path().join("agentplane.highwater")).unwrap();
        for file in ["agentplane.key", "agentplane.toml"] {
            let _ = std::fs::remove_file(dir.path().join(file));
        }
        ok(dir.path(), args);
        let again = std::fs::read_to_string(dir.path().join("agentplane.highwater")).unwrap();
        assert_ne!(again, mark, "the new keys' mark replaced the one no key file was left beside");
        assert!(dir.path().join("agentplane.key").exists());
    }

    // A mark that says a tree was signed is never replaced.
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    ok(dir.path(), &["demo"]);
    ok(dir.path(), &["checkpoint"]);
    let mark = std::fs::read_to_string(dir.path().join("agentplane.highwater")).unwrap();
    for file in ["agentplane.key", "agentplane.toml"] {
        std::fs::remove_file(dir.path().join(file)).unwrap();
    }
    // Another store: the one the plane signed holds runs, refused first.
    for args in [["--store", "k.redb", "init"], ["--store", "k.redb", "keygen"]] {
        let said = fails(dir.path(), &args, 2);
        assert!(said.contains("agentplane.highwater"), "{said}");
        assert_eq!(std::fs::read_to_string(dir.path().join("agentplane.highwater")).unwrap(), mark);
        assert!(!dir.path().join("agentplane.key").exists());
    }
}

/// R-SIG-4: keys `keygen` made (a plane with no configuration) whose store
/// holds runs their record key signed (a runtime admitted them; no
/// checkpoint yet, so the mark still says `never`). `init` there told the
/// operator that the keys "never signed anything" and to delete the key
/// file and its mark and run `init` again: the record key of the store's
/// runs deleted, and the next `init` refused anyway (the store holds runs).
/// A store that holds runs is refused first, its keys never called unused.
#[test]
fn r_sig_4_init_beside_keys_whose_store_holds_runs_never_says_to_delete_them() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["keygen"]);
    let other = tempfile::tempdir().unwrap();
    ok(other.path(), &["init"]);
    ok(other.path(), &["demo"]);
    std::fs::copy(other.path().join("agentplane.redb"), dir.path().join("agentplane.redb")).unwrap();
    let said = fails(dir.path(), &["init"], 2);
    assert!(said.contains("already holds runs"), "{said}");
    assert!(!said.contains("never signed anything") && !said.contains("delete"), "{said}");
    assert!(dir.path().join("agentplane.key").exists() && dir.path().join("agentplane.highwater").exists());
}

/// R-SIG-4 (review 85): the key file lost for good. `checkpoint` said
/// "never make new keys for an existing store", `keygen` and `init`
/// refused to (rightly: new keys would sign a history they never signed),
/// and nothing said what was left: a dead end. Each now says it: this log
/// can be read and audited, never signed again, and a new log starts under
/// an origin of its own in a new folder. Followed, that plane signs.
#[test]
fn r_sig_4_a_key_file_lost_for_good_says_what_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init"]);
    ok(plane, &["demo"]);
    std::fs::remove_file(plane.join("agentplane.key")).unwrap();
    for args in [vec!["checkpoint"], vec!["keygen"]] {
        let stderr = fails(plane, &args, 2);
        assert!(stderr.contains("lost for good") && stderr.contains("--origin-base"), "{args:?}: {stderr}");
    }
    let next = tempfile::tempdir().unwrap();
    let store = plane.join("agentplane.redb");
    let stderr = fails(next.path(), &["init", "--store", store.to_str().unwrap()], 2);
    assert!(stderr.contains("lost for good") && stderr.contains("--origin-base"), "{stderr}");
    ok(next.path(), &["init", "--origin-base", "agentplane.local/plane-2"]);
    ok(next.path(), &["demo"]);
    assert!(ok(next.path(), &["checkpoint"]).starts_with("agentplane.local/plane-2/default\n"));
}
