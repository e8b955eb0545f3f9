//! Injected faults on redb (files on disk): every write the runtime makes fails once,
//! before or after it commits (`journal_core::testkit_faults`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::Store;
use journal_core::testkit;
use journal_core::testkit_faults::{FaultCase, fault_matrix, fault_table};

/// Every write the runtime makes, failing before it commits and after it
/// committed (the acknowledgement lost): the driver gets a typed error and
/// resumes; no effect runs twice, an effect whose fate is unknown
/// quarantines the run (a doubt), nothing acknowledged is lost, and the audit
/// of the store is clean afterwards (R-store_redb::RedbStore::temporary().expect("a redb store")-2, R-RUN-5).
#[test]
fn r_store_2_r_run_5_a_failed_or_unacknowledged_write_never_runs_an_effect_twice_or_loses_a_record() {
    let fresh = || -> Arc<dyn Store> { Arc::new(store_redb::RedbStore::temporary().expect("a redb store")) };
    let check = |store: &dyn Store, case: &FaultCase| {
        let inputs = audit::AuditInputs::new(testkit::tenant(), testkit::origin());
        let report = audit::audit(store, &inputs).expect("the audit runs");
        assert!(report.findings.is_empty(), "{case:?}: {:?}", report.findings);
        assert!(report.checked.records > 0, "{case:?}: the audit read nothing");
    };
    println!("{}", fault_table(&fault_matrix(&fresh, &check)));
}
