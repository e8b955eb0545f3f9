//! Issues 20 and 21 on redb files: open runs cut back or deleted after a
//! saved checkpoint, forged index rows and a run copied in from another
//! tenant, each written straight into the file and found by the audit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../../tests/shared/coverage_attacks.rs"]
mod shared;

use store_redb::RedbStore;

#[test]
fn r_aud_3_open_runs_cut_back_or_deleted_after_a_saved_checkpoint_are_found() {
    shared::open_runs_cut_back_or_deleted_are_found(RedbStore::temporary().unwrap());
}

#[test]
fn r_aud_2_forged_index_rows_are_found() {
    shared::forged_index_rows_are_found(RedbStore::temporary().unwrap());
}

#[test]
fn r_aud_1_a_run_copied_from_another_tenant_is_found() {
    shared::a_run_copied_from_another_tenant_is_found(RedbStore::temporary().unwrap());
}

#[test]
fn r_aud_8_forged_or_missing_admission_order_rows_are_found() {
    shared::admission_order_rows_forged_or_missing_are_found(RedbStore::temporary().unwrap());
}

/// Issue 27: a file written before the admission order existed (its table
/// dropped here, as such a build wrote it) is audited read-only without a
/// false alarm: the order is listed as not checked, never as a finding per
/// run. Its next writable opening fills the order from the stored
/// admissions, and the audit then checks it.
#[test]
fn r_aud_8_a_file_from_before_the_admission_order_is_not_checked_until_a_writer_fills_it() {
    use journal_core::testkit::{origin, sample_run, tenant};
    use journal_core::{Journal, Outcome, RunId, Store as _};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("older.redb");
    let (tenant, origin) = (tenant(), origin());
    let runs = [RunId::new("run-a").unwrap(), RunId::new("run-b").unwrap()];
    {
        let store = RedbStore::create(&path).unwrap();
        let journal = Journal::new(&store, &tenant, &origin);
        sample_run(&journal, &runs[0], Outcome::Succeeded).unwrap();
        sample_run(&journal, &runs[1], Outcome::Failed).unwrap();
    }
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let order: redb::TableDefinition<(&str, i64, &str), ()> = redb::TableDefinition::new("admission_order");
        assert!(txn.delete_table(order).unwrap(), "the file had the table");
        let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
        txn.open_table(meta).unwrap().remove("admissions_filled").unwrap();
        txn.commit().unwrap();
    }
    let inputs = audit::AuditInputs::new(tenant.clone(), origin.clone());
    let older = RedbStore::open_read_only(&path).unwrap();
    assert!(older.admissions(&tenant, None, None, 10).unwrap().is_empty());
    // (The testkit's run ids are not derived from their keys: a tenant
    // finding each, which is not what this test is about.)
    let order_findings = |report: &audit::AuditReport| {
        report.findings.iter().filter(|f| f.code == audit::FindingCode::AdmissionOrderMismatch).count()
    };
    let report = audit::audit(&older, &inputs).unwrap();
    assert_eq!(order_findings(&report), 0, "no false alarm: {:#?}", report.findings);
    assert!(report.not_checked.iter().any(|n| n.what.contains("admission order")), "{:#?}", report.not_checked);
    drop(older);

    drop(RedbStore::open(&path).unwrap());
    let filled = RedbStore::open_read_only(&path).unwrap();
    let listed: Vec<RunId> = filled.admissions(&tenant, None, None, 10).unwrap().into_iter().map(|a| a.run).collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(runs.iter().all(|run| listed.contains(run)), "{listed:?}");
    let report = audit::audit(&filled, &inputs).unwrap();
    assert_eq!(order_findings(&report), 0, "{:#?}", report.findings);
    assert!(report.checked.derived > 0);
    assert!(!report.not_checked.iter().any(|n| n.what.contains("admission order")), "{:#?}", report.not_checked);
}
