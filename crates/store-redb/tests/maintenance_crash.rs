//! `migrate` and `compact` killed at random moments (R-STORE-3): the file
//! opens after each kill, at layout 1 or 2, with every record as it was,
//! and the backup, once named, is whole.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::path::Path;
use std::time::Duration;

use journal_core::testkit::{origin, sample_run, tenant};
use journal_core::{Journal, Outcome, RunId, Store as _};
use store_redb::RedbStore;

type RecordValue<'a> = (&'a str, Option<&'a str>, &'a [u8], &'a [u8], &'a [u8], Option<&'a str>, Option<&'a [u8]>);
const LAYOUT_1_RECORDS: redb::TableDefinition<(&str, &str, u64), RecordValue> = redb::TableDefinition::new("records");

/// Set in the child process: `migrate:<path>` or `compact:<path>`.
const CHILD: &str = "AGENTPLANE_MAINTENANCE_CRASH_CHILD";

/// The child's side: runs one task on the file, to be killed meanwhile.
#[test]
fn maintenance_child() {
    let Ok(spec) = std::env::var(CHILD) else { return };
    let (task, path) = spec.split_once(':').unwrap();
    match task {
        "migrate" => drop(RedbStore::migrate(Path::new(path)).unwrap()),
        _ => drop(RedbStore::compact(Path::new(path)).unwrap()),
    }
}

#[test]
fn r_store_3_migrate_and_compact_killed_at_random_moments_leave_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let seed_path = dir.path().join("seed.redb");
    {
        let db = redb::Database::create(&seed_path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(LAYOUT_1_RECORDS).unwrap();
        txn.commit().unwrap();
    }
    let (tenant, origin) = (tenant(), origin());
    let runs: Vec<RunId> = (0..150).map(|i| RunId::new(&format!("run-{i:04}")).unwrap()).collect();
    let expected = {
        let store = RedbStore::open(&seed_path).unwrap();
        for run in &runs {
            sample_run(&Journal::new(&store, &tenant, &origin), run, Outcome::Succeeded).unwrap();
        }
        runs.iter().map(|run| store.read_run(&tenant, run).unwrap().rows).collect::<Vec<_>>()
    };
    let exe = std::env::current_exe().unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut rng = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for cycle in 0..12 {
        let case = dir.path().join(format!("case-{cycle}"));
        std::fs::create_dir(&case).unwrap();
        let path = case.join("journal.redb");
        std::fs::copy(&seed_path, &path).unwrap();
        for task in ["migrate", "compact", "migrate"] {
            let mut child = std::process::Command::new(&exe)
                .args(["--exact", "maintenance_child", "--nocapture", "--test-threads=1"])
                .env(CHILD, format!("{task}:{}", path.display()))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(rng() % 150));
            let _ = child.kill();
            let _ = child.wait();
            let store = RedbStore::open(&path).unwrap_or_else(|err| panic!("cycle {cycle} {task}: {err}"));
            for (run, rows) in runs.iter().zip(&expected) {
                let read = store.read_run(&tenant, run).unwrap_or_else(|err| panic!("cycle {cycle} {task}: {err}"));
                assert!(read.rows == *rows, "cycle {cycle} {task}: {run} changed");
            }
        }
        let backup = RedbStore::backup_path(&path);
        if backup.exists() {
            let store = RedbStore::open_read_only(&backup).unwrap_or_else(|err| panic!("cycle {cycle} backup: {err}"));
            for (run, rows) in runs.iter().zip(&expected) {
                assert!(store.read_run(&tenant, run).unwrap().rows == *rows, "cycle {cycle} backup: {run}");
            }
        }
        RedbStore::migrate(&path).unwrap();
    }
}

/// Every run's rows, or the error reading it gave, through a reading that
/// never writes the file (a repaired private copy if it needs a repair).
fn every_run(path: &Path, runs: &[RunId]) -> Result<Vec<String>, String> {
    let (store, _) = RedbStore::open_read_only_or_repaired_copy(path).map_err(|err| err.to_string())?;
    Ok(runs.iter().map(|run| format!("{:?}", store.read_run(&tenant(), run).map(|read| read.rows))).collect())
}

/// R-STORE-3, R-UX-3 ("nothing already stored is lost"): `compact` and
/// `migrate` of a damaged file (one run's id changed by hand to bytes that
/// are not UTF-8, wherever it is in the file) refuse it and leave it byte
/// for byte as it was: every other run reads as before and the damage stays
/// evidence. Before, redb panicked on the damaged key in the middle of a
/// table's rebuild, the file was left needing a repair, and the repair's
/// checksums found the damaged page under both roots: "All roots are
/// corrupted", the whole store unreadable, every run lost.
#[test]
fn r_store_3_compact_and_migrate_of_a_damaged_file_leave_it_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let runs: Vec<RunId> = (0..60).map(|i| RunId::new(&format!("run-{i:04}")).unwrap()).collect();
    let (tenant, origin) = (tenant(), origin());
    for layout_1 in [false, true] {
        let path = dir.path().join(format!("journal-{layout_1}.redb"));
        if layout_1 {
            let db = redb::Database::create(&path).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(LAYOUT_1_RECORDS).unwrap();
            txn.commit().unwrap();
        }
        {
            let store = RedbStore::create(&path).unwrap();
            for run in &runs {
                sample_run(&Journal::new(&store, &tenant, &origin), run, Outcome::Succeeded).unwrap();
            }
        }
        let mut bytes = std::fs::read(&path).unwrap();
        let id = b"run-0042";
        let mut damaged = 0;
        for at in 0..bytes.len() - id.len() {
            if &bytes[at..at + id.len()] == id {
                bytes[at + 4] = 0xff;
                damaged += 1;
            }
        }
        assert!(damaged > 0, "the run id is in the file");
        std::fs::write(&path, &bytes).unwrap();
        let read = every_run(&path, &runs).unwrap();
        for task in ["compact", "migrate"] {
            let done = match task {
                "compact" => RedbStore::compact(&path).map(drop),
                _ => RedbStore::migrate(&path).map(drop),
            };
            assert!(done.is_err() || !layout_1 && task == "migrate", "layout 1: {layout_1}, {task} of a damaged file");
            assert!(std::fs::read(&path).unwrap() == bytes, "layout 1: {layout_1}, {task} left the file as it was");
            assert_eq!(every_run(&path, &runs), Ok(read.clone()), "layout 1: {layout_1}, {task}: every run as before");
        }
    }
}
