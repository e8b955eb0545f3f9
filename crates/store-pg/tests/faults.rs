//! R-STORE-2 on PostgreSQL: the server stopped with `pg_ctl stop -m immediate`
//! (a crash) while appenders run, then started again: every append that
//! returned is there, no half row exists, the store reopens and the audit is
//! clean. Alone in its test binary: it stops the shared test server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use journal_core::{Journal, Origin, RunId, Store, TenantId};
use store_pg::PgStore;

#[test]
fn r_store_2_a_crashed_server_loses_no_append_that_returned() {
    let url = store_pg::testkit::fresh_database();
    let store = PgStore::open(&url).unwrap();
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new("pg.test/faults").unwrap();
    let acknowledged: Mutex<Vec<(RunId, u64)>> = Mutex::new(Vec::new());
    let failed = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let (store, tenant, origin, acknowledged, failed) = (&store, &tenant, &origin, &acknowledged, &failed);
            scope.spawn(move || {
                let journal = Journal::new(store, tenant, origin);
                let run = RunId::new(&format!("run-{thread}")).unwrap();
                let mut head = None;
                for i in 0..10_000 {
                    let body =
                        journal_core::RecordBody::StepStarted(journal_core::record::StepMark { step: format!("s{i}") });
                    match journal.append(&run, head, None, body) {
                        Ok(appended) => {
                            head = Some(appended.head);
                            acknowledged.lock().unwrap().push((run.clone(), appended.head.seq));
                        }
                        Err(err) => {
                            assert!(err.is_retryable() || matches!(err, journal_core::JournalError::Io(_)), "{err}");
                            failed.store(true, Ordering::Relaxed);
                            return;
                        }
                    }
                }
            });
        }
        // Crash the server once the appenders have something acknowledged.
        while acknowledged.lock().unwrap().len() < 200 {
            std::thread::yield_now();
        }
        store_pg::testkit::crash_server().unwrap();
    });
    assert!(failed.load(Ordering::Relaxed), "the appenders saw the crash");
    store_pg::testkit::start_server().unwrap();
    drop(store);

    let store = PgStore::open(&url).unwrap();
    let acknowledged = acknowledged.into_inner().unwrap();
    for thread in 0..4 {
        let run = RunId::new(&format!("run-{thread}")).unwrap();
        let stored = store.read_run(&tenant, &run).unwrap();
        let last = acknowledged.iter().filter(|(r, _)| *r == run).map(|(_, seq)| *seq).max().unwrap_or(0);
        assert!(
            stored.rows.len() as u64 >= last,
            "run-{thread}: acknowledged seq {last}, stored {}",
            stored.rows.len()
        );
        assert_eq!(stored.head.map(|h| h.seq), Some(stored.rows.len() as u64), "no half row: the head is the last row");
    }
    let report = audit::audit(&store, &audit::AuditInputs::new(tenant, origin)).unwrap();
    assert!(report.is_clean(), "{:#?}", report.findings);
}
