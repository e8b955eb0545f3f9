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

#[test]
fn r_store_3_eight_instances_started_together_on_a_new_database_all_come_up() {
    for round in 0..ROUNDS {
        let url = store_pg::testkit::fresh_database();
        let mut writers: Vec<_> = (0..PROCESSES)
            .map(|p| {
                Command::new(env!("CARGO_BIN_EXE_pg-writer"))
                    .args([url.as_str(), "shared", &format!("p{p}"), &RUNS_EACH.to_string()])
                    .env("PG_WRITER_WAIT_FOR_START", "1")
                    .stdin(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        // Every process is started and waiting; release them together.
        for writer in &mut writers {
            writer.stdin.take().unwrap().write_all(b"go\n").unwrap();
        }
        for writer in writers {
            let output = writer.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "round {round}: an instance did not come up: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
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
