//! Concurrent appenders share durable commits, and every append is durable
//! when it returns (R-STORE-2).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::{Arc, Barrier};

use journal_core::record::StepMark;
use journal_core::{ChainCheck, Journal, RecordBody, RunId, Store, TenantId, Upcasters, VerifyOptions};
use store_redb::RedbStore;

const THREADS: usize = 16;
const APPENDS: u64 = 20;

#[test]
fn r_store_2_concurrent_appenders_are_group_committed_and_durable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let tenant = TenantId::new("t").unwrap();
    {
        let store = Arc::new(RedbStore::create(&path).unwrap());
        let barrier = Arc::new(Barrier::new(THREADS));
        std::thread::scope(|scope| {
            for n in 0..THREADS {
                let (store, barrier, tenant) = (Arc::clone(&store), Arc::clone(&barrier), tenant.clone());
                scope.spawn(move || {
                    let origin = journal_core::Origin::new("g.test/plane").unwrap();
                    let journal = Journal::new(store.as_ref(), &tenant, &origin);
                    let run = RunId::new(&format!("run-{n}")).unwrap();
                    barrier.wait();
                    let mut head = None;
                    for i in 0..APPENDS {
                        let body = RecordBody::StepStarted(StepMark { step: format!("{i}") });
                        head = Some(journal.append(&run, head, None, body).unwrap().head);
                    }
                });
            }
        });
        let appends = THREADS as u64 * APPENDS;
        assert!(store.commits() < appends, "{} commits for {appends} concurrent appends: no batching", store.commits());
    }
    // Reopened, every acknowledged append is there and verifies.
    let store = RedbStore::open(&path).unwrap();
    let origin = journal_core::Origin::new("g.test/plane").unwrap();
    let journal = Journal::new(&store, &tenant, &origin);
    let upcasters = Upcasters::builtin();
    let runs = store.runs(&tenant, None).unwrap();
    assert_eq!(runs.len(), THREADS);
    for run in runs {
        let verified = journal
            .read(&run, ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() })
            .unwrap();
        assert_eq!(verified.records.len() as u64, APPENDS);
    }
}
