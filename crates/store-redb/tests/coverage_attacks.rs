//! Issues 20 and 21 on redb files: open runs cut back or deleted after a
//! saved checkpoint, forged index rows and a run copied in from another
//! tenant, each written straight into the file and found by the audit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../../tests/shared/coverage_attacks.rs"]
mod shared;

use std::sync::Arc;
use store_redb::RedbStore;

use journal_core::Store;
use journal_core::testkit::TamperAccess as _;

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
        // As such a build wrote it: nor the newest-heads index, which came
        // after the order.
        let order: redb::TableDefinition<(&str, i64, &str), ()> = redb::TableDefinition::new("admission_order");
        assert!(txn.delete_table(order).unwrap(), "the file had the table");
        let by_run: redb::TableDefinition<(&str, &str), u64> = redb::TableDefinition::new("heads_by_run");
        assert!(txn.delete_table(by_run).unwrap(), "the file had the table");
        let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
        txn.open_table(meta).unwrap().remove("admissions_filled").unwrap();
        txn.open_table(meta).unwrap().remove("heads_by_run_filled").unwrap();
        txn.commit().unwrap();
    }
    let inputs = audit::AuditInputs::new(tenant.clone(), origin.clone());
    let older = RedbStore::open_read_only(&path).unwrap();
    // Listed from each run's stored admission, not as no run at all (review
    // 19): a reader of such a file sees what the chains say.
    let listed = older.admissions(&tenant, None, None, 10).unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed[0] > listed[1], "newest first: {listed:?}");
    assert!(runs.iter().all(|run| listed.iter().any(|a| &a.run == run)), "{listed:?}");
    let failed = older.admissions(&tenant, None, Some(Outcome::Failed), 10).unwrap();
    assert_eq!(failed.iter().map(|a| &a.run).collect::<Vec<_>>(), [&runs[1]]);
    assert_eq!(older.admissions(&tenant, Some(&listed[0]), None, 10).unwrap(), listed[1..]);
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

/// The newest-heads index, as a raw write sees it.
type HeadsByRun<'txn> = redb::Table<'txn, (&'static str, &'static str), u64>;

/// A redb file of two open runs (`open-a`, `open-b`) under two heads leaves:
/// both in the first, `open-a` moved and so in the second too. Returns the
/// path, the runs and the two leaves' positions.
fn two_heads_leaves(dir: &std::path::Path) -> (std::path::PathBuf, [journal_core::RunId; 2], [u64; 2]) {
    use journal_core::record::StepMark;
    use journal_core::testkit::{origin, tenant};
    use journal_core::{Admission, AdmitRequest, Budget, Journal, RecordBody, RuntimeBuilder, Store as _};
    use witness::{ALG_ED25519, LogKey, SignerKey};
    let path = dir.join("heads.redb");
    let (tenant, origin) = (tenant(), origin());
    let store = std::sync::Arc::new(RedbStore::create(&path).unwrap());
    let runtime = RuntimeBuilder::new(store.clone()).tenant(tenant.clone(), origin.clone(), None).build().unwrap();
    let runs = ["open-a", "open-b"].map(|key| {
        let request =
            AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget: Budget::default() };
        let Admission::New(run) = runtime.admit(&tenant, request).unwrap() else { panic!("new") };
        run.run().clone()
    });
    let key = LogKey::new(SignerKey::from_seed(origin.as_str(), ALG_ED25519, [5; 32]).unwrap()).unwrap();
    let sign = || journal_core::log::sign_current_head(store.as_ref(), &tenant, &origin, &key, None).unwrap();
    sign();
    let first = store.newest_heads_of(&tenant, &runs[1]).unwrap().expect("open-b is covered");
    let head = store.read_run(&tenant, &runs[0]).unwrap().head;
    Journal::new(store.as_ref(), &tenant, &origin)
        .append(&runs[0], head, None, RecordBody::StepStarted(StepMark { step: "work".into() }))
        .unwrap();
    sign();
    let second = store.newest_heads_of(&tenant, &runs[0]).unwrap().expect("open-a is covered");
    assert!(second > first, "open-a moved: its newest heads leaf is the second ({first}, {second})");
    (path, runs, [first, second])
}

/// Issue 25: `prove` of an open run looks its newest heads leaf up in an
/// index (O(log n) on a million records, not a read of every heads entry);
/// every row of that index is a claim the audit holds to the heads entries,
/// both ways (R-AUD-2): a row pointed at an older leaf, a row for a run no
/// leaf holds, and a missing row are each a finding naming the run.
#[test]
fn r_aud_2_forged_or_missing_newest_heads_index_rows_are_found() {
    use journal_core::testkit::{origin, tenant};
    let dir = tempfile::tempdir().unwrap();
    let (path, runs, [first, second]) = two_heads_leaves(dir.path());
    let inputs = audit::AuditInputs::new(tenant(), origin());
    let index_findings = |path: &std::path::Path| -> Vec<String> {
        let store = RedbStore::open_read_only(path).unwrap();
        let report = audit::audit(&store, &inputs).unwrap();
        report
            .findings
            .iter()
            .filter(|f| f.code == audit::FindingCode::HeadsIndexMismatch)
            .map(|f| f.run.clone().unwrap_or_default())
            .collect()
    };
    assert!(index_findings(&path).is_empty(), "the untouched file is clean");
    let by_run: redb::TableDefinition<(&str, &str), u64> = redb::TableDefinition::new("heads_by_run");
    let forge = |write: &dyn Fn(&mut HeadsByRun<'_>)| {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        write(&mut txn.open_table(by_run).unwrap());
        txn.commit().unwrap();
    };
    let t = tenant();
    forge(&|table| {
        table.insert((t.as_str(), runs[0].as_str()), first).unwrap();
    });
    {
        // The forged row is what `prove` answers from: an older, true head.
        let store = RedbStore::open_read_only(&path).unwrap();
        let view = journal_core::LogView::open(&store, &t).unwrap();
        let head = journal_core::Store::read_run(&store, &t, &runs[0]).unwrap().head.unwrap();
        assert_eq!(view.head_inclusion(&runs[0]).unwrap().entry.seq, head.seq - 1, "the head before the move");
    }
    assert_eq!(index_findings(&path), vec![runs[0].to_string()], "a row pointed at an older leaf");
    forge(&|table| {
        table.insert((t.as_str(), runs[0].as_str()), second).unwrap();
        table.insert((t.as_str(), "run-ghost"), second).unwrap();
    });
    assert_eq!(index_findings(&path), vec!["run-ghost".to_owned()], "a row for a run no leaf holds");
    forge(&|table| {
        table.remove((t.as_str(), "run-ghost")).unwrap();
        table.remove((t.as_str(), runs[1].as_str())).unwrap();
    });
    assert_eq!(index_findings(&path), vec![runs[1].to_string()], "a missing row");
}

/// Issue 25: a file written before the newest-heads index existed answers
/// `prove` of an open run from its heads entries (read-only, no false
/// finding), and its first writable opening fills the index (a migration
/// that only adds a derived table: the entries it derives from stay).
#[test]
fn r_aud_2_a_file_from_before_the_newest_heads_index_is_filled_by_its_first_writer() {
    use journal_core::Store as _;
    use journal_core::testkit::{origin, tenant};
    let dir = tempfile::tempdir().unwrap();
    let (path, runs, [first, second]) = two_heads_leaves(dir.path());
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let by_run: redb::TableDefinition<(&str, &str), u64> = redb::TableDefinition::new("heads_by_run");
        assert!(txn.delete_table(by_run).unwrap(), "the file had the table");
        let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
        txn.open_table(meta).unwrap().remove("heads_by_run_filled").unwrap();
        txn.commit().unwrap();
    }
    let t = tenant();
    let answers = |store: &RedbStore| runs.clone().map(|run| store.newest_heads_of(&t, &run).unwrap());
    let inputs = audit::AuditInputs::new(tenant(), origin());
    let older = RedbStore::open_read_only(&path).unwrap();
    assert_eq!(answers(&older), [Some(second), Some(first)], "answered from the entries");
    let report = audit::audit(&older, &inputs).unwrap();
    assert!(!report.findings.iter().any(|f| f.code == audit::FindingCode::HeadsIndexMismatch), "{report:#?}");
    drop(older);
    drop(RedbStore::open(&path).unwrap());
    let filled = RedbStore::open_read_only(&path).unwrap();
    assert_eq!(answers(&filled), [Some(second), Some(first)], "answered from the filled index");
    let db_rows = {
        drop(filled);
        let db = redb::Database::open(&path).unwrap();
        let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
        let by_run: redb::TableDefinition<(&str, &str), u64> = redb::TableDefinition::new("heads_by_run");
        redb::ReadableTableMetadata::len(&txn.open_table(by_run).unwrap()).unwrap()
    };
    assert_eq!(db_rows, 2, "one row per covered run");
}

/// A redb file of runs `a` and `b` sealed and `c` open (its effect done, no
/// conclusion), then a third sealed run `d` and an open run `e` admitted
/// after the checkpoint an observer saved; the plane is closed. Returns the
/// path, the audit's inputs (the saved checkpoint as its anchor) and the runs.
fn sealed_and_open(dir: &std::path::Path) -> (std::path::PathBuf, audit::AuditInputs, [journal_core::RunId; 5]) {
    let path = dir.join("plane.redb");
    let plane = shared::Plane::on(RedbStore::create(&path).unwrap());
    let (a, b, c) = (plane.run("a", true), plane.run("b", true), plane.run("c", false));
    let saved = plane.sign();
    let (d, e) = (plane.run("d", true), plane.run("e", false));
    let inputs = plane.inputs(&saved);
    drop(plane);
    (path, inputs, [a, b, c, d, e])
}

/// One raw write transaction on the file, as a writer without the key makes it.
fn forge(path: &std::path::Path, write: impl FnOnce(&redb::WriteTransaction)) {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    write(&txn);
    txn.commit().unwrap();
}

fn audit_file(path: &std::path::Path, inputs: &audit::AuditInputs) -> audit::AuditReport {
    audit::audit(&RedbStore::open_read_only(path).unwrap(), inputs).unwrap()
}

/// R-AUD-8, found by an attacker review (session 16): the seal index (which
/// position seals each run: what `prove` and `export` of a sealed run look
/// up) was never held to the verified seals. A sealed run's row deleted
/// (`prove` then says "not sealed"), pointed at another run's seal (`prove`
/// serves that run's leaf), or an open run given a sealed run's position:
/// each audited clean. Each is now a `seal_index_mismatch` naming the run.
#[test]
fn r_aud_8_forged_or_missing_seal_index_rows_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let (path, inputs, [a, b, c, ..]) = sealed_and_open(dir.path());
    let report = audit_file(&path, &inputs);
    assert!(report.findings.is_empty(), "the untouched file is clean: {:#?}", report.findings);
    let by_run: redb::TableDefinition<(&str, &str), u64> = redb::TableDefinition::new("seal_by_run");
    let position = |run: &journal_core::RunId| {
        use redb::ReadableDatabase as _;
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_read().unwrap();
        txn.open_table(by_run).unwrap().get(("t", run.as_str())).unwrap().unwrap().value()
    };
    let (of_a, of_b) = (position(&a), position(&b));
    let code = audit::FindingCode::SealIndexMismatch;

    forge(&path, |txn| {
        txn.open_table(by_run).unwrap().remove(("t", a.as_str())).unwrap();
    });
    assert_eq!(
        shared::runs_found(&audit_file(&path, &inputs), code),
        vec![a.to_string()],
        "a sealed run's row deleted"
    );

    forge(&path, |txn| {
        txn.open_table(by_run).unwrap().insert(("t", a.as_str()), of_b).unwrap();
    });
    assert_eq!(shared::runs_found(&audit_file(&path, &inputs), code), vec![a.to_string()], "pointed at another's seal");

    forge(&path, |txn| {
        let mut table = txn.open_table(by_run).unwrap();
        table.insert(("t", a.as_str()), of_a).unwrap();
        table.insert(("t", c.as_str()), of_a).unwrap();
    });
    let report = audit_file(&path, &inputs);
    assert_eq!(
        shared::runs_found(&report, code),
        vec![c.to_string()],
        "an open run given a seal: {:#?}",
        report.findings
    );
    assert_eq!(report.findings[0].class, audit::FindingClass::DerivedData);
}

/// R-AUD-8 (issue 21 review): the moved marks were held to the verified
/// chains one way only (every moved open run marked). A mark with no open
/// run behind it, for a run that was never stored or for a sealed one,
/// audited clean and complete; a sealed run's mark would have the next heads
/// leaf commit to it on the mark's word. Each is an `index_without_run`
/// naming the run.
#[test]
fn r_aud_8_a_moved_mark_with_no_open_run_behind_it_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let (path, inputs, [sealed, ..]) = sealed_and_open(dir.path());
    let report = audit_file(&path, &inputs);
    assert!(report.findings.is_empty(), "the untouched file is clean: {:#?}", report.findings);
    let moved: redb::TableDefinition<(&str, &str), ()> = redb::TableDefinition::new("moved_runs");
    forge(&path, |txn| {
        let mut table = txn.open_table(moved).unwrap();
        table.insert(("t", "run-ghost"), ()).unwrap();
        table.insert(("t", sealed.as_str()), ()).unwrap();
    });
    let report = audit_file(&path, &inputs);
    let mut named = shared::runs_found(&report, audit::FindingCode::IndexWithoutRun);
    named.sort();
    let mut expected = vec!["run-ghost".to_owned(), sealed.to_string()];
    expected.sort();
    assert_eq!(named, expected, "{:#?}", report.findings);
    assert!(report.findings.iter().all(|f| f.class == audit::FindingClass::DerivedData), "{:#?}", report.findings);
}

/// R-AUD-8, R-AUD-3, found by the same review: the run column of a heads
/// leaf's seal row was read as "this run is sealed", so an open run
/// admitted after the newest anchor was no longer said to be uncovered (a
/// cut or deletion of it then unseen), and the audit was clean. Heads
/// entries stored at a position holding no heads leaf fed the newest-heads
/// index unchecked (`prove` of the run then failed). Both are findings now,
/// and the open run stays listed as not covered.
#[test]
fn r_aud_8_a_heads_leaf_row_renamed_or_entries_where_no_leaf_is_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let (path, inputs, [.., open_after]) = sealed_and_open(dir.path());
    let uncovered = |report: &audit::AuditReport| report.not_checked.iter().any(|n| n.what.ends_with("open runs"));
    let report = audit_file(&path, &inputs);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert!(uncovered(&report), "the run admitted after the anchor is not covered: {:#?}", report.not_checked);

    let seals: redb::TableDefinition<u64, (&str, &[u8])> = redb::TableDefinition::new("seals/t");
    forge(&path, |txn| {
        use redb::ReadableTable as _;
        let mut table = txn.open_table(seals).unwrap();
        let heads_leaf = table
            .iter()
            .unwrap()
            .map(|entry| entry.unwrap())
            .find(|(_, value)| journal_core::heads::HeadsLeaf::is_tagged(value.value().1))
            .map(|(key, value)| (key.value(), value.value().1.to_vec()))
            .expect("the plane signed a heads leaf");
        table.insert(heads_leaf.0, (open_after.as_str(), heads_leaf.1.as_slice())).unwrap();
    });
    let report = audit_file(&path, &inputs);
    assert!(
        shared::runs_found(&report, audit::FindingCode::SealIndexMismatch).contains(&open_after.to_string()),
        "{:#?}",
        report.findings
    );
    assert!(uncovered(&report), "the open run is still said to be uncovered: {:#?}", report.not_checked);

    let dir = tempfile::tempdir().unwrap();
    let (path, inputs, [.., c, _, _]) = sealed_and_open(dir.path());
    let store = RedbStore::open_read_only(&path).unwrap();
    let head = journal_core::Store::read_run(&store, &shared_tenant(), &c).unwrap().head.unwrap();
    drop(store);
    let entries: redb::TableDefinition<(&str, u64, &str), (u64, &[u8])> = redb::TableDefinition::new("heads_entries");
    let by_run: redb::TableDefinition<(&str, &str), u64> = redb::TableDefinition::new("heads_by_run");
    forge(&path, |txn| {
        txn.open_table(entries)
            .unwrap()
            .insert(("t", 99, c.as_str()), (head.seq, head.hash.as_bytes().as_slice()))
            .unwrap();
        txn.open_table(by_run).unwrap().insert(("t", c.as_str()), 99).unwrap();
    });
    let report = audit_file(&path, &inputs);
    shared::assert_stray_heads_entries_found(&report, 99, &c);
}

fn shared_tenant() -> journal_core::TenantId {
    journal_core::TenantId::new("t").unwrap()
}

/// Attacker review (session 17), R-COVER-2, R-AUD-8: the moved set
/// (`moved_runs`: the runs whose head moved since the last heads leaf, the
/// only thing the plane reads to decide which open runs the next heads leaf
/// covers) was never held to the chains. One row deleted after a run moved
/// makes every later checkpoint leave the move out; the audit against such a
/// checkpoint only said the records were "written after the newest heads
/// entry an anchor covers ... bring a newer checkpoint" (not a finding, and
/// no newer checkpoint ever covers them), and once the attacker cuts the run
/// back to its old covered head, records written before the checkpoint are
/// gone and the audit is clean and complete: nothing can tell afterwards.
/// So the missing row must be a finding while it is missing.
#[test]
fn r_cover_2_a_moved_runs_row_deleted_is_found_before_the_move_can_be_cut_unseen() {
    use journal_core::record::StepMark;
    use journal_core::testkit::TamperAccess as _;
    use journal_core::{Journal, RecordBody, Store as _};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let t = shared_tenant();
    let plane = shared::Plane::on(RedbStore::create(&path).unwrap());
    let open = plane.run("open", false);
    plane.run("sealed-1", true);
    plane.sign();
    let covered = plane.store.read_run(&t, &open).unwrap().head.unwrap();
    // The run moves: two more records, which the next checkpoint must cover.
    let journal = Journal::new(plane.store.as_ref(), &plane.tenant, &plane.origin);
    let mut head = Some(covered);
    for step in ["refund", "notify"] {
        let appended =
            journal.append(&open, head, None, RecordBody::StepStarted(StepMark { step: step.into() })).unwrap();
        head = Some(appended.head);
    }
    drop(plane);

    let moved: redb::TableDefinition<(&str, &str), ()> = redb::TableDefinition::new("moved_runs");
    forge(&path, |txn| {
        assert!(txn.open_table(moved).unwrap().remove(("t", open.as_str())).unwrap().is_some(), "the run was marked");
    });

    // The plane goes on: another sealed run, a checkpoint an observer saves.
    let plane = shared::Plane::on(RedbStore::open(&path).unwrap());
    plane.run("sealed-2", true);
    let saved = plane.sign();
    let inputs = plane.inputs(&saved);
    let entry = plane.store.newest_heads_of(&t, &open).unwrap();
    drop(plane);
    assert!(entry.is_some());
    let window = audit_file(&path, &inputs);

    // What the attacker can do from now on, shown on a copy: cut the run
    // back to the head the first checkpoint covered. Written before the
    // saved checkpoint, the two records are gone and the audit is clean and
    // complete; no audit can tell any more.
    let copy = dir.path().join("cut.redb");
    std::fs::copy(&path, &copy).unwrap();
    {
        let store = RedbStore::open(&copy).unwrap();
        for seq in covered.seq + 1..=head.unwrap().seq {
            store.delete_record(&t, &open, seq);
        }
        store.set_runs_head(&t, &open, covered);
    }
    let after_cut = audit_file(&copy, &inputs);
    // (This plane signs no records: that is the only thing not checked.)
    let complete = |report: &audit::AuditReport| report.not_checked.iter().all(|n| n.what == "record signatures");
    assert!(
        after_cut.findings.is_empty() && complete(&after_cut),
        "the cut after the checkpoint is invisible once made: {after_cut:#?}"
    );

    // So it must be found while the moved row is missing (today: no
    // finding, only "2 records of 1 open runs" not checked).
    assert!(!complete(&window), "{:#?}", window.not_checked);
    assert!(
        shared::runs_found(&window, audit::FindingCode::MovedMarkMissing).contains(&open.to_string()),
        "a run whose head moved before the saved checkpoint, left out of it by a deleted moved_runs row, is \
         named by a finding; the audit said: findings {:#?}, not checked {:#?}",
        window.findings,
        window.not_checked
    );
}

/// R-PLANE-2, R-LOG-7 (attacker review, session 17): a stored node forged
/// above the last signed tree is never signed (`shared::a_forged_node_is_never_signed`).
#[test]
fn r_plane_2_the_plane_never_signs_a_tree_its_stored_leaves_do_not_give() {
    shared::a_forged_node_is_never_signed(RedbStore::temporary().unwrap());
}

/// R-COVER-2: a file written before the moved marks (no `moved_runs_filled`
/// bookkeeping, no `moved_runs` table, nor anything a writer that marks
/// made in the same opening: the heads entries' table, the admission order,
/// the newest-heads index) is not reported unmarked run by run: the audit
/// says the marks were not checked, and the first writer of this build
/// marks every open run, after which they are checked and hold.
#[test]
fn r_cover_2_a_file_from_before_the_moved_marks_is_not_checked_until_a_writer_marks_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("older.redb");
    let plane = shared::Plane::on(RedbStore::create(&path).unwrap());
    let open = plane.run("open", false);
    plane.run("sealed", true);
    let inputs = audit::AuditInputs::new(plane.tenant.clone(), plane.origin.clone());
    drop(plane);
    forge(&path, |txn| {
        // As such a build wrote it: none of what came with the marks or after them.
        drop_the_marks_and_all_that_came_with_them(txn);
    });
    let unmarked = |report: &audit::AuditReport| shared::runs_found(report, audit::FindingCode::MovedMarkMissing);
    let marks_not_checked =
        |report: &audit::AuditReport| report.not_checked.iter().any(|n| n.what == "the moved marks");

    let older = audit_file(&path, &inputs);
    assert!(unmarked(&older).is_empty(), "no false alarm: {:#?}", older.findings);
    assert!(marks_not_checked(&older), "{:#?}", older.not_checked);

    drop(RedbStore::open(&path).unwrap());
    let filled = audit_file(&path, &inputs);
    assert!(unmarked(&filled).is_empty(), "{:#?}", filled.findings);
    assert!(!marks_not_checked(&filled), "{:#?}", filled.not_checked);

    // And now a mark deleted is found again, naming the run.
    forge(&path, |txn| {
        let moved: redb::TableDefinition<(&str, &str), ()> = redb::TableDefinition::new("moved_runs");
        assert!(txn.open_table(moved).unwrap().remove(("t", open.as_str())).unwrap().is_some());
    });
    assert_eq!(unmarked(&audit_file(&path, &inputs)), vec![open.to_string()]);
}

/// R-LOG-5, found by the attacker review (session 17): the log counter
/// moved back by one made the next sealing append overwrite the seal leaf
/// already at that position (another run's). Now that append is refused
/// as store damage and the leaf stays as it was (PostgreSQL's key refuses
/// the same insert).
#[test]
fn r_log_5_a_counter_moved_back_never_overwrites_a_seal_leaf() {
    use journal_core::{Admission, AdmitRequest, Budget, Store as _};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let plane = shared::Plane::on(RedbStore::create(&path).unwrap());
    plane.run("a", true);
    plane.run("b", true);
    let before = plane.store.seals(&plane.tenant).unwrap();
    assert_eq!(before.len(), 2);
    drop(plane);
    forge(&path, |txn| {
        let counter: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("log_counter");
        assert_eq!(txn.open_table(counter).unwrap().insert("t", 1).unwrap().map(|v| v.value()), Some(2));
    });
    let plane = shared::Plane::on(RedbStore::open(&path).unwrap());
    let request = AdmitRequest { idempotency_key: "c".into(), plan: vec!["work".into()], budget: Budget::default() };
    let Admission::New(run) = plane.runtime.admit(&plane.tenant, request).unwrap() else { panic!("new") };
    let refused = run.succeed("done").map(drop).unwrap_err().to_string();
    assert!(refused.contains("already holds a leaf"), "{refused}");
    assert_eq!(plane.store.seals(&plane.tenant).unwrap(), before, "no leaf was overwritten");
}

/// R-PLANE-2: the same forged node, with a `signed_checkpoints` row forged
/// to match it (the forged tree recorded as the last one the plane signed,
/// its note signed by a key that is not the plane's). Without a high-water
/// mark the plane held the tail to that row, so the forged row vouched for
/// the forged node; a recorded checkpoint is trusted only when its note
/// carries the plane's own signature.
#[test]
fn r_plane_2_a_forged_signed_row_does_not_vouch_for_a_forged_node() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let plane = shared::plane_with_a_forged_node(RedbStore::create(&path).unwrap());
    let view = journal_core::log::LogView::open(plane.store.as_ref(), &plane.tenant).unwrap();
    let forged_tree = view.head().unwrap().tree;
    let other_key = witness::LogKey::new(
        witness::SignerKey::from_seed(plane.origin.as_str(), witness::ALG_ED25519, [9; 32]).unwrap(),
    )
    .unwrap();
    let note = journal_core::log::sign_checkpoint(&plane.origin, forged_tree, &other_key).unwrap();
    let (origin, key, tenant) = (plane.origin.clone(), plane.key.clone(), plane.tenant.clone());
    drop(view);
    drop(plane);
    forge(&path, |txn| {
        let signed: redb::TableDefinition<(&str, u64), (u64, &[u8], &str)> =
            redb::TableDefinition::new("signed_checkpoints");
        let mut table = txn.open_table(signed).unwrap();
        let n = redb::ReadableTableMetadata::len(&table).unwrap();
        let root = forged_tree.root.as_bytes().to_vec();
        table.insert(("t", n), (forged_tree.size, root.as_slice(), note.note())).unwrap();
    });
    let store = RedbStore::open(&path).unwrap();
    match journal_core::log::sign_current_head(&store, &tenant, &origin, &key, None) {
        Err(journal_core::JournalError::WouldSignRollback { reason, .. }) => {
            assert!(reason.contains("a stored node was changed behind the plane"), "{reason}");
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok((_, signed)) => panic!("the plane signed the forged tree {:?}", signed.checkpoint().tree()),
    }
}

#[test]
fn r_run_5_a_run_cut_back_or_deleted_after_a_checkpoint_is_never_run_again() {
    shared::a_run_cut_back_or_deleted_after_a_checkpoint_is_never_run_again(RedbStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_cut_hidden_from_the_heads_index_is_never_run_again() {
    shared::a_cut_hidden_from_the_heads_index_is_never_run_again(RedbStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_cut_carried_into_a_later_heads_leaf_is_never_run_again() {
    shared::a_cut_carried_into_a_later_heads_leaf_is_never_run_again(RedbStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_lost_mark_admits_and_resumes_nothing() {
    shared::a_lost_mark_admits_and_resumes_nothing(RedbStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_heads_leaf_removed_under_a_running_runtime_is_held_to_the_signed_tree() {
    shared::a_heads_leaf_removed_under_a_running_runtime_is_held_to_the_signed_tree(RedbStore::temporary().unwrap());
}

#[test]
fn r_run_5_leaves_read_past_the_mark_and_taken_out_hide_no_signed_leaf() {
    shared::leaves_read_past_the_mark_and_taken_out_hide_no_signed_leaf(RedbStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_fork_of_a_run_cut_back_behind_a_checkpoint_is_refused() {
    shared::a_fork_of_a_run_cut_back_behind_a_checkpoint_is_refused(RedbStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_sealed_run_cut_back_or_deleted_behind_its_seal_is_never_run_again() {
    shared::a_sealed_run_cut_back_or_deleted_behind_its_seal_is_never_run_again(RedbStore::temporary().unwrap());
}

/// R-AUD-1, R-STORE-3 (attacker review of layout 2): someone with the file
/// and no key rewrites each row of a signed run in `records_z` as the bytes
/// as written, without the encoding's tag byte (a record starts with `{`,
/// which is no tag). `read_run` refuses every such row as damage; the
/// audit's snapshot handed an undecodable row on "as stored", which here is
/// exactly what was signed, so the chain held and the store audited clean
/// while the plane could read none of the run. The snapshot now hands such
/// a row on with no bytes, which no chain hash covers.
#[test]
fn r_aud_1_a_row_stored_without_its_encoding_tag_is_never_audited_clean() {
    use journal_core::Store as _;
    use redb::ReadableTable as _;
    type RecordValue<'a> = (&'a str, Option<&'a str>, &'a [u8], &'a [u8], &'a [u8], Option<&'a str>, Option<&'a [u8]>);
    const RECORDS_Z: redb::TableDefinition<(&str, &str, u64), RecordValue> = redb::TableDefinition::new("records_z");
    let dir = tempfile::tempdir().unwrap();
    let (path, inputs, [a, ..]) = sealed_and_open(dir.path());
    let report = audit_file(&path, &inputs);
    assert!(report.findings.is_empty(), "the untouched file is clean: {:#?}", report.findings);
    let tenant = inputs.tenant.clone();
    let rows = RedbStore::open_read_only(&path).unwrap().read_run(&tenant, &a).unwrap().rows;
    assert!(!rows.is_empty());
    forge(&path, |txn| {
        let mut records = txn.open_table(RECORDS_Z).unwrap();
        for row in &rows {
            let key = (tenant.as_str(), a.as_str(), row.seq);
            let value = records.get(key).unwrap().unwrap();
            let (kind, effect_key, prev, hash, _, key_id, signature) = value.value();
            let (kind, effect_key, prev, hash) =
                (kind.to_owned(), effect_key.map(str::to_owned), prev.to_vec(), hash.to_vec());
            let (key_id, signature) = (key_id.map(str::to_owned), signature.map(<[u8]>::to_vec));
            drop(value);
            let forged = (
                kind.as_str(),
                effect_key.as_deref(),
                prev.as_slice(),
                hash.as_slice(),
                row.bytes.as_slice(),
                key_id.as_deref(),
                signature.as_deref(),
            );
            records.insert(key, forged).unwrap();
        }
    });
    match RedbStore::open_read_only(&path).unwrap().read_run(&tenant, &a) {
        Err(journal_core::JournalError::StoreDamage { .. }) => {}
        other => panic!("read_run refuses an untagged row: {:?}", other.map(|rows| rows.rows.len())),
    }
    let report = audit_file(&path, &inputs);
    assert!(
        report.findings.iter().any(
            |finding| finding.code == audit::FindingCode::ChainBroken && finding.run.as_deref() == Some(a.as_str())
        ),
        "rows read_run refuses are never audited clean: {:#?}",
        report.findings
    );
}

/// R-RUN-5, R-PLANE-2 (session 20): a careful hider rewrites the heads leaf
/// itself: the entries of a cut run deleted, the leaf's bytes made again
/// from the entries left (so entries and leaf agree), the index row gone,
/// and the log's stored node hashes left as the plane signed them (so the
/// stored log still extends the plane's high-water mark). Only the leaves
/// disagree with the tree the plane signed; resume holds the leaves it
/// reads to the mark's root and refuses, where it drove the run again.
#[test]
fn r_run_5_a_heads_leaf_rewritten_without_a_cut_run_is_held_to_the_signed_tree() {
    use journal_core::log::HighWater as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let mark = Arc::new(journal_core::testkit::MemoryHighWater::default());
    let (tenant, cut, position, kept) = {
        let plane = shared::Plane::on(RedbStore::create(&path).unwrap());
        let cut = plane.run("transfer-1", false);
        plane.run("transfer-2", false);
        plane.sign_held_to(Some(mark.as_ref()));
        assert!(matches!(mark.last(&plane.origin).unwrap(), journal_core::log::HighWaterMark::Signed(_)));
        let position = plane.store.newest_heads_of(&plane.tenant, &cut).unwrap().expect("the leaf covers the run");
        let kept: Vec<_> = plane
            .store
            .heads_entries(&plane.tenant, position)
            .unwrap()
            .into_iter()
            .filter(|entry| entry.run != cut)
            .collect();
        plane.cut_back_to_two(&cut);
        plane.store.delete_heads_entry(&plane.tenant, position, &cut);
        plane.store.hide_newest_heads_of(&plane.tenant, &cut);
        (plane.tenant.clone(), cut, position, kept)
    };
    let origin = journal_core::Origin::new("attacks.test/plane/t").unwrap();
    let leaf = journal_core::heads::HeadsLeaf::new(&origin, &kept).to_bytes();
    forge(&path, |txn| {
        let seals: redb::TableDefinition<u64, (&str, &[u8])> = redb::TableDefinition::new("seals/t");
        txn.open_table(seals)
            .unwrap()
            .insert(position, (journal_core::heads::HEADS_LEAF_RUN, leaf.as_slice()))
            .unwrap();
    });

    let store: Arc<dyn Store> = Arc::new(RedbStore::open(&path).unwrap());
    let key = witness::LogKey::new(
        witness::SignerKey::from_seed("attacks.test/plane/t", witness::ALG_ED25519, [8; 32]).unwrap(),
    )
    .unwrap();
    let runtime = journal_core::RuntimeBuilder::new(store)
        .tenant(tenant.clone(), origin, Some(key))
        .high_water(mark)
        .build()
        .unwrap();
    match runtime.resume(&tenant, &cut) {
        Err(journal_core::RuntimeError::Journal(journal_core::JournalError::StoreDamage { detail, .. })) => {
            assert!(detail.contains("not the tree the plane signed"), "{detail}");
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("the run cut out of a rewritten heads leaf was resumed"),
    }
}

/// R-SIG-3, R-CHAIN-5: one of a signed row's two signature columns cleared
/// in the file ([`shared::a_half_signature_pair_is_a_malformed_row`]).
#[test]
fn r_sig_3_a_half_signature_pair_is_a_malformed_row() {
    use redb::ReadableTable as _;
    type RecordValue<'a> = (&'a str, Option<&'a str>, &'a [u8], &'a [u8], &'a [u8], Option<&'a str>, Option<&'a [u8]>);
    const RECORDS_Z: redb::TableDefinition<(&str, &str, u64), RecordValue> = redb::TableDefinition::new("records_z");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let (tenant, run) = shared::signed_plane(Arc::new(RedbStore::create(&path).unwrap()));
    for drop_key_id in [true, false] {
        let copy = dir.path().join(format!("copy-{drop_key_id}.redb"));
        std::fs::copy(&path, &copy).unwrap();
        forge(&copy, |txn| {
            let mut records = txn.open_table(RECORDS_Z).unwrap();
            let key = (tenant.as_str(), run.as_str(), 2);
            let value = records.get(key).unwrap().unwrap();
            let (kind, effect_key, prev, hash, stored, key_id, signature) = value.value();
            let owned = (
                kind.to_owned(),
                effect_key.map(str::to_owned),
                prev.to_vec(),
                hash.to_vec(),
                stored.to_vec(),
                key_id.map(str::to_owned),
                signature.map(<[u8]>::to_vec),
            );
            drop(value);
            assert!(owned.5.is_some() && owned.6.is_some(), "the plane signed the row");
            let (key_id, signature) = if drop_key_id { (None, owned.6.as_deref()) } else { (owned.5.as_deref(), None) };
            let forged = (
                owned.0.as_str(),
                owned.1.as_deref(),
                owned.2.as_slice(),
                owned.3.as_slice(),
                owned.4.as_slice(),
                key_id,
                signature,
            );
            records.insert(key, forged).unwrap();
        });
        let why = if drop_key_id { "a signature without the key id" } else { "a signing key id without its signature" };
        shared::a_half_signature_pair_is_a_malformed_row(
            &RedbStore::open_read_only(&copy).unwrap(),
            &tenant,
            &run,
            why,
        );
    }
}

/// R-AUD-8: the admission order dropped whole together with its bookkeeping
/// key (`admissions_filled`) is not a file from before the order when the
/// file keeps what every later writer made in the same opening that filled
/// the order (the newest-heads index, its table or its key): every row of
/// the order deleted, a finding per run, not "not checked" with exit 0.
#[test]
fn r_aud_8_the_admission_order_dropped_with_its_key_is_found_by_what_came_after_it() {
    use journal_core::testkit::{origin, sample_run, tenant};
    use journal_core::{Journal, Outcome, RunId};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dropped.redb");
    let (tenant, origin) = (tenant(), origin());
    {
        let store = RedbStore::create(&path).unwrap();
        let journal = Journal::new(&store, &tenant, &origin);
        sample_run(&journal, &RunId::new("run-a").unwrap(), Outcome::Succeeded).unwrap();
        sample_run(&journal, &RunId::new("run-b").unwrap(), Outcome::Failed).unwrap();
    }
    forge(&path, |txn| {
        let order: redb::TableDefinition<(&str, i64, &str), ()> = redb::TableDefinition::new("admission_order");
        assert!(txn.delete_table(order).unwrap(), "the file had the table");
        let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
        assert!(txn.open_table(meta).unwrap().remove("admissions_filled").unwrap().is_some());
    });
    let inputs = audit::AuditInputs::new(tenant.clone(), origin.clone());
    let report = audit_file(&path, &inputs);
    let missing = report.findings.iter().filter(|f| f.code == audit::FindingCode::AdmissionOrderMismatch).count();
    assert_eq!(missing, 2, "{:#?}", report.findings);
    assert!(!report.not_checked.iter().any(|n| n.what.contains("admission order")), "{:#?}", report.not_checked);
}

/// R-AUD-8, R-COVER-2: a file whose bookkeeping says a writer of this build
/// filled the admission order and the moved marks (`admissions_filled`,
/// `moved_runs_filled`) is not an older build's file: each table dropped
/// whole behind the plane (one raw write, no key) is every row of it
/// deleted, a finding per run, never "not checked" as if no build had kept
/// it (which audits with exit 0, and which no writer's opening refills).
#[test]
fn r_aud_8_a_table_dropped_whole_from_a_file_that_kept_it_is_found() {
    use journal_core::testkit::{origin, sample_run, tenant};
    use journal_core::{Journal, Outcome, RunId};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dropped.redb");
    let (tenant, origin) = (tenant(), origin());
    let open = RunId::new("run-open").unwrap();
    {
        let store = RedbStore::create(&path).unwrap();
        let journal = Journal::new(&store, &tenant, &origin);
        sample_run(&journal, &RunId::new("run-sealed").unwrap(), Outcome::Succeeded).unwrap();
        sample_run(&journal, &open, Outcome::Failed).unwrap();
    }
    let inputs = audit::AuditInputs::new(tenant.clone(), origin.clone());
    let codes = |report: &audit::AuditReport, code: audit::FindingCode| -> Vec<String> {
        report.findings.iter().filter(|f| f.code == code).map(|f| f.run.clone().unwrap_or_default()).collect()
    };
    {
        let report = audit::audit(&RedbStore::open_read_only(&path).unwrap(), &inputs).unwrap();
        assert!(codes(&report, audit::FindingCode::AdmissionOrderMismatch).is_empty(), "{:#?}", report.findings);
        assert!(codes(&report, audit::FindingCode::MovedMarkMissing).is_empty(), "{:#?}", report.findings);
    }
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let order: redb::TableDefinition<(&str, i64, &str), ()> = redb::TableDefinition::new("admission_order");
        assert!(txn.delete_table(order).unwrap(), "the file had the table");
        let moved: redb::TableDefinition<(&str, &str), ()> = redb::TableDefinition::new("moved_runs");
        assert!(txn.delete_table(moved).unwrap(), "the file had the table");
        txn.commit().unwrap();
    }
    let report = audit::audit(&RedbStore::open_read_only(&path).unwrap(), &inputs).unwrap();
    assert_eq!(codes(&report, audit::FindingCode::AdmissionOrderMismatch).len(), 2, "{:#?}", report.findings);
    assert_eq!(codes(&report, audit::FindingCode::MovedMarkMissing), [open.to_string()], "{:#?}", report.findings);
    assert!(!report.not_checked.iter().any(|n| n.what.contains("admission order") || n.what.contains("moved marks")));
}

/// R-AUD-2: the same for the newest-heads index. A file whose bookkeeping
/// says it keeps the index (`heads_by_run_filled`) and has no table of it
/// had the table dropped behind the plane: `prove` of an open run then
/// fails to read it, and the audit must not answer from the entries as if
/// the file were older than the index (clean).
#[test]
fn r_aud_2_the_newest_heads_index_dropped_whole_from_a_file_that_kept_it_is_found() {
    use journal_core::testkit::{origin, tenant};
    let dir = tempfile::tempdir().unwrap();
    let (path, runs, _) = two_heads_leaves(dir.path());
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let by_run: redb::TableDefinition<(&str, &str), u64> = redb::TableDefinition::new("heads_by_run");
        assert!(txn.delete_table(by_run).unwrap(), "the file had the table");
        txn.commit().unwrap();
    }
    let report =
        audit::audit(&RedbStore::open_read_only(&path).unwrap(), &audit::AuditInputs::new(tenant(), origin())).unwrap();
    let found: std::collections::BTreeSet<String> = report
        .findings
        .iter()
        .filter(|f| f.code == audit::FindingCode::HeadsIndexMismatch)
        .map(|f| f.run.clone().unwrap_or_default())
        .collect();
    assert_eq!(found, runs.map(|run| run.to_string()).into(), "{:#?}", report.findings);
}

/// R-COVER-2: a file that holds heads leaves was written by a build that
/// kept moved marks (they came together, issue 20), and every such build
/// marks the file's runs at its first opening. Its `moved_runs_filled`
/// bookkeeping removed along with the marks is tamper, not a file from
/// before the marks: an open run moved past its newest heads entry and left
/// unmarked is a finding, never "the moved marks" not checked (exit 0).
#[test]
fn r_cover_2_moved_marks_dropped_with_their_bookkeeping_from_a_file_with_heads_leaves_are_found() {
    use journal_core::record::StepMark;
    use journal_core::testkit::{origin, tenant};
    use journal_core::{Journal, RecordBody, Store as _};
    let dir = tempfile::tempdir().unwrap();
    let (path, runs, _) = two_heads_leaves(dir.path());
    {
        let store = RedbStore::open(&path).unwrap();
        let head = store.read_run(&tenant(), &runs[1]).unwrap().head;
        Journal::new(&store, &tenant(), &origin())
            .append(&runs[1], head, None, RecordBody::StepStarted(StepMark { step: "work".into() }))
            .unwrap();
    }
    let inputs = audit::AuditInputs::new(tenant(), origin());
    assert!(shared::runs_found(&audit_file(&path, &inputs), audit::FindingCode::MovedMarkMissing).is_empty());
    forge(&path, |txn| {
        let moved: redb::TableDefinition<(&str, &str), ()> = redb::TableDefinition::new("moved_runs");
        assert!(txn.delete_table(moved).unwrap(), "the file had the table");
        let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
        assert!(txn.open_table(meta).unwrap().remove("moved_runs_filled").unwrap().is_some());
    });
    let report = audit_file(&path, &inputs);
    assert_eq!(shared::runs_found(&report, audit::FindingCode::MovedMarkMissing), vec![runs[1].to_string()]);
    assert!(!report.not_checked.iter().any(|n| n.what == "the moved marks"), "{:#?}", report.not_checked);
}

/// R-COVER-2, R-AUD-8 (attacker review 15): a tenant whose log holds no
/// heads leaf yet (it never signed with a run open) keeps moved marks all
/// the same, and the file says so by what every writer that marks made in
/// the same opening: the `moved_runs` and `heads_entries` tables, and the
/// later bookkeeping (`admissions_filled`, `heads_by_run_filled`). An open
/// run's mark deleted together with the one key `moved_runs_filled` was
/// read as a file from before the marks: "the moved marks" NOT CHECKED
/// (exit 0, with a false reason), and a long-running sweep then left the
/// run out of every later heads leaf. It is a `moved_mark_missing`
/// finding naming the run.
#[test]
fn r_cover_2_a_mark_deleted_with_its_bookkeeping_key_is_found_by_what_came_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let plane = shared::Plane::on(RedbStore::create(&path).unwrap());
    plane.run("sealed", true);
    let open = plane.run("open", false);
    let inputs = audit::AuditInputs::new(plane.tenant.clone(), plane.origin.clone());
    drop(plane);
    let marks_not_checked =
        |report: &audit::AuditReport| report.not_checked.iter().any(|n| n.what == "the moved marks");
    let honest = audit_file(&path, &inputs);
    assert!(shared::runs_found(&honest, audit::FindingCode::MovedMarkMissing).is_empty(), "{:#?}", honest.findings);
    assert!(!marks_not_checked(&honest), "{:#?}", honest.not_checked);
    forge(&path, |txn| {
        let moved: redb::TableDefinition<(&str, &str), ()> = redb::TableDefinition::new("moved_runs");
        assert!(txn.open_table(moved).unwrap().remove(("t", open.as_str())).unwrap().is_some());
        let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
        assert!(txn.open_table(meta).unwrap().remove("moved_runs_filled").unwrap().is_some());
    });
    let report = audit_file(&path, &inputs);
    assert_eq!(
        shared::runs_found(&report, audit::FindingCode::MovedMarkMissing),
        vec![open.to_string()],
        "{:#?} {:#?}",
        report.findings,
        report.not_checked
    );
    assert!(!marks_not_checked(&report), "{:#?}", report.not_checked);
}

/// R-COVER-2, R-AUD-8 (attacker review 17): the whole of what came with the
/// moved marks and after them (the `moved_runs`, `heads_entries`,
/// `admission_order` and `heads_by_run` tables, and the bookkeeping keys
/// `moved_runs_filled`, `admissions_filled`, `heads_by_run_filled`) dropped
/// from a tenant with no heads leaf yet makes the file read as one from
/// before the marks: the audit says "the moved marks" were not checked
/// (exit 0), which is all it can say. But a plane that has the file open
/// opened it as a writer of this build, which marked its runs and wrote the
/// bookkeeping: a quiet one (no append to recreate the tables) went on to
/// sign checkpoints that leave the open run out, however long it ran, so a
/// later cut of the run is never found and its done effect runs again. The
/// plane holding the file must refuse to sign on a file whose bookkeeping
/// vanished under it.
#[test]
fn r_cover_2_a_running_plane_never_signs_past_moved_marks_dropped_with_all_their_bookkeeping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let plane = shared::Plane::on(RedbStore::create(&path).unwrap());
    plane.run("sealed", true);
    plane.sign();
    let open = plane.run("open", false);
    // Another process with the file, while the plane runs.
    {
        let db = redb::Builder::new().set_concurrency_mode(store_redb::CONCURRENCY).open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        drop_the_marks_and_all_that_came_with_them(&txn);
        txn.commit().unwrap();
    }
    let signed =
        journal_core::log::sign_current_head(plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.key, None);
    match signed {
        Err(err) => assert!(err.to_string().contains("moved"), "refused, naming the marks: {err}"),
        Ok((_, saved)) => {
            let inputs = plane.inputs(&saved);
            let report = audit_file(&path, &inputs);
            panic!(
                "the plane signed a checkpoint that leaves the open run {open} out; the audit against it: findings \
                 {:#?}, not checked {:#?}",
                report.findings, report.not_checked
            );
        }
    }
}

/// Drops the moved marks with every table and meta key that came with them
/// or after them (the admission order, heads entries, the heads-by-run
/// index): what a file from before the marks holds.
fn drop_the_marks_and_all_that_came_with_them(txn: &redb::WriteTransaction) {
    let moved: redb::TableDefinition<(&str, &str), ()> = redb::TableDefinition::new("moved_runs");
    assert!(txn.delete_table(moved).unwrap(), "the file had the table");
    let heads: redb::TableDefinition<(&str, u64, &str), (u64, &[u8])> = redb::TableDefinition::new("heads_entries");
    assert!(txn.delete_table(heads).unwrap(), "the file had the table");
    let order: redb::TableDefinition<(&str, i64, &str), ()> = redb::TableDefinition::new("admission_order");
    assert!(txn.delete_table(order).unwrap(), "the file had the table");
    let by_run: redb::TableDefinition<(&str, &str), u64> = redb::TableDefinition::new("heads_by_run");
    assert!(txn.delete_table(by_run).unwrap(), "the file had the table");
    let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
    let mut meta = txn.open_table(meta).unwrap();
    for key in ["moved_runs_filled", "admissions_filled", "heads_by_run_filled"] {
        assert!(meta.remove(key).unwrap().is_some(), "{key}");
    }
}

#[test]
fn r_run_2_a_sealed_run_with_its_seal_lookup_cleared_takes_no_record() {
    shared::a_sealed_run_with_its_seal_lookup_cleared_takes_no_record(RedbStore::temporary().unwrap());
}

/// R-LOG-5 (review 39), as the PostgreSQL test of session 18 shows it with
/// SQL: a `signed_checkpoints` or `cosigned_checkpoints` row written
/// straight into the file under the largest number (a copy of the last
/// one, so the plane's own check of the previous tree passes) made the
/// next signing add one to it: a panic in a debug build, and in a release
/// build a wrap to 0 that overwrote the first checkpoint the plane ever
/// recorded. It is damage now; nothing is recorded and no row changes.
#[test]
fn r_log_5_a_checkpoint_numbered_the_largest_u64_is_damage_not_an_overflow() {
    use journal_core::JournalError;
    use journal_core::store::SignedTree;
    use redb::ReadableTable as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let plane = shared::Plane::on(RedbStore::create(&path).unwrap());
    plane.run("a", true);
    let first = plane.sign();
    let cosigned = SignedTree { tree: first.checkpoint().tree(), note: first.note().to_owned() };
    plane.store.record_cosigned_checkpoint(&plane.tenant, cosigned.clone()).unwrap();
    drop(plane);
    type Trees = redb::TableDefinition<'static, (&'static str, u64), (u64, &'static [u8], &'static str)>;
    for name in ["signed_checkpoints", "cosigned_checkpoints"] {
        forge(&path, |txn| {
            let mut table = txn.open_table(Trees::new(name)).unwrap();
            let (size, root, note) = {
                let row = table.get(("t", 0)).unwrap().unwrap();
                let (size, root, note) = row.value();
                (size, root.to_vec(), note.to_owned())
            };
            table.insert(("t", u64::MAX), (size, root.as_slice(), note.as_str())).unwrap();
        });
    }
    let plane = shared::Plane::on(RedbStore::open(&path).unwrap());
    let signed_before = plane.store.signed_checkpoints(&plane.tenant).unwrap();
    let cosigned_before = plane.store.cosigned_checkpoints(&plane.tenant).unwrap();
    assert_eq!((signed_before.len(), cosigned_before.len()), (2, 2));
    plane.run("b", true);
    let signed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        journal_core::log::sign_current_head(plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.key, None)
            .map(drop)
    }));
    let Ok(signed) = signed else { panic!("signing panicked") };
    assert!(
        matches!(&signed, Err(JournalError::StoreDamage { detail, .. }) if detail.contains("numbered")),
        "{signed:?}"
    );
    let recorded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        plane.store.record_cosigned_checkpoint(&plane.tenant, cosigned)
    }));
    let Ok(recorded) = recorded else { panic!("recording a cosigned checkpoint panicked") };
    assert!(
        matches!(&recorded, Err(JournalError::StoreDamage { detail, .. }) if detail.contains("numbered")),
        "{recorded:?}"
    );
    assert_eq!(plane.store.signed_checkpoints(&plane.tenant).unwrap(), signed_before, "no signed row changed");
    assert_eq!(plane.store.cosigned_checkpoints(&plane.tenant).unwrap(), cosigned_before, "no cosigned row changed");
}

/// R-COVER-1, R-PLANE-2 (review 48): see
/// `shared::a_leaf_the_plane_never_appends_is_never_signed`.
#[test]
fn r_cover_1_a_leaf_the_plane_never_appends_is_never_signed() {
    shared::a_leaf_the_plane_never_appends_is_never_signed(|| RedbStore::temporary().unwrap());
}

#[test]
fn r_run_7_tenant_cost_refuses_a_run_whose_runs_row_was_deleted() {
    shared::tenant_cost_refuses_a_run_whose_runs_row_was_deleted(RedbStore::temporary().unwrap());
}

#[test]
fn r_ver_4_an_outcome_a_newer_build_concluded_is_build_skew_never_damage() {
    shared::an_outcome_a_newer_build_concluded_is_build_skew_never_damage(
        RedbStore::temporary().unwrap(),
        RedbStore::name_outcome,
    );
}

#[test]
fn r_ver_4_an_append_at_a_head_whose_row_names_an_unknown_outcome_is_refused_as_damage() {
    shared::an_append_at_a_head_whose_row_names_an_unknown_outcome_is_refused_as_damage(
        RedbStore::temporary().unwrap(),
        RedbStore::name_outcome,
    );
}
