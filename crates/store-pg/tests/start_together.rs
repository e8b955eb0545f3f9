//! Issue 28, R-STORE-3: plane instances that start together on a new
//! database all come up. Eight processes are released at one moment (a
//! barrier on their standard input, not a sleep) against a fresh database,
//! twenty times: every one sets up or finds the schema, appends and seals;
//! positions are dense and the audit is clean.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::io::Write as _;
use std::process::{Command, Stdio};

use journal_core::{Origin, Store, TenantId};
use store_pg::PgStore;

const PROCESSES: usize = 8;
const ROUNDS: usize = 20;
const RUNS_EACH: u32 = 2;

/// Starts eight writers on `url` released at one moment; their outputs.
fn start_together(url: &str, round: usize) -> Vec<String> {
    let mut writers: Vec<_> = (0..PROCESSES)
        .map(|p| {
            Command::new(env!("CARGO_BIN_EXE_pg-writer"))
                .args([url, "shared", &format!("p{p}"), &RUNS_EACH.to_string()])
                .env("PG_WRITER_WAIT_FOR_START", "1")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Every process is started and waiting; release them together.
    for writer in &mut writers {
        writer.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    writers
        .into_iter()
        .map(|writer| {
            let output = writer.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "round {round}: an instance did not come up: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8_lossy(&output.stdout).into_owned()
        })
        .collect()
}

/// Issue 28: on a database at the previous schema version, eight instances
/// started together: exactly one migrates (in one transaction), the others
/// wait for it and then run.
#[test]
fn r_store_3_eight_instances_on_an_older_schema_one_migrates_the_others_wait() {
    let previous = store_pg::SCHEMA_VERSION - 1;
    for round in 0..5 {
        let url = store_pg::testkit::database_at_version(previous);
        let outputs = start_together(&url, round);
        let migrated: Vec<&String> = outputs.iter().filter(|out| out.contains("migrated")).collect();
        assert_eq!(migrated.len(), 1, "round {round}: exactly one instance migrates: {outputs:?}");
        assert!(migrated[0].contains(&format!("migrated {previous} {}", store_pg::SCHEMA_VERSION)));
        let store = PgStore::open(&url).unwrap();
        assert_eq!(store.migrated(), None, "the schema is this build's now");
        let tenant = TenantId::new("shared").unwrap();
        let total = PROCESSES as u64 * u64::from(RUNS_EACH);
        assert_eq!(store.seals(&tenant).unwrap().len() as u64, total, "round {round}: every instance ran");
    }
}

#[test]
fn r_store_3_eight_instances_started_together_on_a_new_database_all_come_up() {
    for round in 0..ROUNDS {
        let url = store_pg::testkit::fresh_database();
        start_together(&url, round);
        let store = PgStore::open(&url).unwrap();
        let tenant = TenantId::new("shared").unwrap();
        let total = PROCESSES as u64 * u64::from(RUNS_EACH);
        let positions: Vec<u64> = store.seals(&tenant).unwrap().iter().map(|seal| seal.position).collect();
        assert_eq!(positions, (0..total).collect::<Vec<_>>(), "round {round}: positions are dense");
        let origin = Origin::new("pg.test/concurrent").unwrap();
        let report = audit::audit(&store, &audit::AuditInputs::new(tenant, origin)).unwrap();
        assert!(report.is_clean(), "round {round}: {:#?}", report.findings);
    }
}
