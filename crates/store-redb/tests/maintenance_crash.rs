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
