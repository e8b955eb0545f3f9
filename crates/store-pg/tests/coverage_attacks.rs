//! Issues 20 and 21 on PostgreSQL (a fresh database each): open runs cut back or deleted after a
//! saved checkpoint, forged index rows and a run copied in from another
//! tenant, each written with SQL behind the plane and found by the audit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../../tests/shared/coverage_attacks.rs"]
mod shared;

use store_pg::PgStore;

#[test]
fn r_aud_3_open_runs_cut_back_or_deleted_after_a_saved_checkpoint_are_found() {
    shared::open_runs_cut_back_or_deleted_are_found(PgStore::temporary().unwrap());
}

#[test]
fn r_aud_2_forged_index_rows_are_found() {
    shared::forged_index_rows_are_found(PgStore::temporary().unwrap());
}

#[test]
fn r_aud_1_a_run_copied_from_another_tenant_is_found() {
    shared::a_run_copied_from_another_tenant_is_found(PgStore::temporary().unwrap());
}

#[test]
fn r_aud_8_forged_or_missing_admission_order_rows_are_found() {
    shared::admission_order_rows_forged_or_missing_are_found(PgStore::temporary().unwrap());
}
