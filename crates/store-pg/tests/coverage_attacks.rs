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

#[test]
fn r_run_5_a_run_cut_back_or_deleted_after_a_checkpoint_is_never_run_again() {
    shared::a_run_cut_back_or_deleted_after_a_checkpoint_is_never_run_again(PgStore::temporary().unwrap());
}

/// R-AUD-8, R-AUD-3, found by an attacker review (session 16), with SQL:
/// a heads leaf's seal row renamed to an open run admitted after the
/// anchor (the seal lookup `prove` uses reads that column) hid the run from
/// "not covered" and audited clean; heads entries inserted at a position
/// holding no heads leaf fed the newest-heads index unchecked. Both are
/// findings now, and the open run stays listed as not covered.
#[test]
fn r_aud_8_a_heads_leaf_row_renamed_or_entries_where_no_leaf_is_are_found() {
    let plane = shared::Plane::on(PgStore::temporary().unwrap());
    let (_sealed, open) = (plane.run("a", true), plane.run("c", false));
    let saved = plane.sign();
    let open_after = plane.run("e", false);
    let inputs = plane.inputs(&saved);
    let audit_now = || audit::audit(plane.store.as_ref(), &inputs).unwrap();
    let uncovered = |report: &audit::AuditReport| report.not_checked.iter().any(|n| n.what.ends_with("open runs"));
    let report = audit_now();
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert!(uncovered(&report), "{:#?}", report.not_checked);

    let mut sql = plane.store.raw();
    let renamed = sql
        .execute(
            "UPDATE seals SET run = $1 WHERE tenant = 't' AND position = (SELECT min(position) FROM seals WHERE tenant = 't' AND run = 'agentplane:heads')",
            &[&open_after.as_str()],
        )
        .unwrap();
    assert_eq!(renamed, 1);
    let report = audit_now();
    let named = shared::runs_found(&report, audit::FindingCode::SealIndexMismatch);
    assert_eq!(named, vec![open_after.to_string()], "{:#?}", report.findings);
    assert!(uncovered(&report), "the open run is still said to be uncovered: {:#?}", report.not_checked);
    sql.execute("UPDATE seals SET run = 'agentplane:heads' WHERE tenant = 't' AND run = $1", &[&open_after.as_str()])
        .unwrap();

    let head = journal_core::Store::read_run(plane.store.as_ref(), &plane.tenant, &open).unwrap().head.unwrap();
    sql.execute(
        "INSERT INTO heads_entries (tenant, position, run, seq, hash) VALUES ('t', 99, $1, $2, $3)",
        &[&open.as_str(), &(head.seq as i64), &head.hash.as_bytes().as_slice()],
    )
    .unwrap();
    let report = audit_now();
    shared::assert_stray_heads_entries_found(&report, 99, &open);
}

/// Attacker review (session 17), R-COVER-2, R-AUD-8, with SQL: the moved
/// mark (`runs.covered`, what the plane reads to pick the open runs the next
/// heads leaf covers) set to true after a run moved leaves the move out of
/// every later checkpoint; the audit against such a checkpoint only listed
/// the records as not checked ("bring a newer checkpoint", which never
/// covers them), and a cut back to the old covered head after it audits
/// clean and complete. The stale mark must be a finding while it is there.
#[test]
fn r_cover_2_a_moved_mark_cleared_with_sql_is_found_before_the_move_can_be_cut_unseen() {
    use journal_core::record::StepMark;
    use journal_core::testkit::TamperAccess as _;
    use journal_core::{Journal, RecordBody, Store as _};
    let plane = shared::Plane::on(PgStore::temporary().unwrap());
    let t = plane.tenant.clone();
    let open = plane.run("open", false);
    plane.run("sealed-1", true);
    plane.sign();
    let covered = plane.store.read_run(&t, &open).unwrap().head.unwrap();
    let journal = Journal::new(plane.store.as_ref(), &plane.tenant, &plane.origin);
    let mut head = covered;
    for step in ["refund", "notify"] {
        head = journal
            .append(&open, Some(head), None, RecordBody::StepStarted(StepMark { step: step.into() }))
            .unwrap()
            .head;
    }
    let cleared = plane
        .store
        .raw()
        .execute("UPDATE runs SET covered = true WHERE tenant = 't' AND run = $1", &[&open.as_str()])
        .unwrap();
    assert_eq!(cleared, 1);
    plane.run("sealed-2", true);
    let saved = plane.sign();
    let inputs = plane.inputs(&saved);
    let complete = |report: &audit::AuditReport| report.not_checked.iter().all(|n| n.what == "record signatures");
    let window = audit::audit(plane.store.as_ref(), &inputs).unwrap();

    let records = plane.store.read_run(&t, &open).unwrap().rows;
    for row in records.iter().filter(|row| row.seq > covered.seq) {
        plane.store.delete_record(&t, &open, row.seq);
    }
    plane.store.set_runs_head(&t, &open, covered);
    let after_cut = audit::audit(plane.store.as_ref(), &inputs).unwrap();
    assert!(after_cut.findings.is_empty() && complete(&after_cut), "the cut is invisible once made: {after_cut:#?}");
    assert!(head.seq > covered.seq);

    assert!(!complete(&window), "{:#?}", window.not_checked);
    assert!(
        shared::runs_found(&window, audit::FindingCode::MovedMarkMissing).contains(&open.to_string()),
        "a run whose head moved before the saved checkpoint, left out of it by a cleared moved mark, is named by a \
         finding; the audit said: findings {:#?}, not checked {:#?}",
        window.findings,
        window.not_checked
    );
}

/// R-PLANE-2, R-LOG-7 (attacker review, session 17), with SQL: a stored
/// node forged above the last signed tree is never signed; the seal rows
/// since that tree are read in one range query (`Store::seals_in`).
#[test]
fn r_plane_2_the_plane_never_signs_a_tree_its_stored_leaves_do_not_give() {
    shared::a_forged_node_is_never_signed(PgStore::temporary().unwrap());
}
