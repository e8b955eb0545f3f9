//! Injected faults on PostgreSQL (a fresh database each): every write the runtime makes fails once,
//! before or after it commits (`journal_core::testkit_faults`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../../tests/shared/injected_faults.rs"]
mod shared;

use std::sync::Arc;

/// Every write the runtime makes, failing before it commits and after it
/// committed (the acknowledgement lost), with a witness serving over HTTP so
/// that the sweep's cosigned checkpoint is among them: the driver gets a
/// typed error and resumes; no effect runs twice, an effect whose fate is
/// unknown quarantines the run (a doubt), nothing acknowledged is lost, and
/// the audit of the store is clean afterwards (R-STORE-2, R-RUN-5).
#[test]
fn r_store_2_r_run_5_a_failed_or_unacknowledged_write_never_runs_an_effect_twice_or_loses_a_record() {
    shared::run_fault_matrix(&|| -> Arc<dyn journal_core::Store> {
        Arc::new(store_pg::PgStore::temporary().expect("a PostgreSQL store"))
    });
}
