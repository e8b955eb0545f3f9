//! Issue 20 (R-AUD-3, R-AUD-5, R-LOG-6): every run covered, open ones
//! included. Before the plane signs a checkpoint it enters the head of every
//! run that moved into the log (a heads leaf); an observer saves that
//! checkpoint; then an attacker with the store file and no key cuts an open
//! run back or deletes it. Each attack is found, classified and named with
//! the anchor; the same attack before any anchor covers the run is listed as
//! not checked, never called complete. Also: a run copied in from another
//! tenant, and index rows with no verified run behind them (issue 21).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use audit::{FindingClass, FindingCode};
use journal_core::testkit::TamperAccess as _;
use journal_core::{ExpectedHead, Outcome, Store as _};
use support::{Plane, codes};
use witness::SignedCheckpoint;

/// The plane signs its checkpoint as it does for `agentplane checkpoint`:
/// heads leaves first, so open runs are covered.
fn sign_now(plane: &Plane) -> SignedCheckpoint {
    try_to_sign(plane).unwrap()
}

/// The plane's checkpoint signed now (no high-water mark), or why not.
fn try_to_sign(plane: &Plane) -> Result<SignedCheckpoint, journal_core::JournalError> {
    journal_core::log::sign_current_head(plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.log_key, None)
        .map(|(_, signed)| signed)
}

fn head_at(plane: &Plane, run: &journal_core::RunId, seq: u64) -> ExpectedHead {
    let rows = plane.store.read_run(&plane.tenant, run).unwrap().rows;
    let row = rows.iter().find(|row| row.seq == seq).unwrap();
    ExpectedHead { seq, hash: row.hash }
}

/// An open (failed) run cut back to its first records behind the store: the
/// records after seq 2 removed, its runs row pointed at record 2, its
/// outcome index row removed. A consistent-looking store.
fn cut_back(plane: &Plane, run: &journal_core::RunId) {
    let rows = plane.store.read_run(&plane.tenant, run).unwrap().rows;
    for row in rows.iter().filter(|row| row.seq > 2) {
        plane.store.delete_record(&plane.tenant, run, row.seq);
    }
    plane.store.set_runs_head(&plane.tenant, run, head_at_rows(&rows, 2));
    plane.store.set_outcome_index(&plane.tenant, run, None);
}

fn head_at_rows(rows: &[journal_core::StoredRecord], seq: u64) -> ExpectedHead {
    let row = rows.iter().find(|row| row.seq == seq).unwrap();
    ExpectedHead { seq, hash: row.hash }
}

#[test]
fn r_aud_3_an_open_run_cut_back_after_a_saved_checkpoint_is_a_deletion_naming_the_anchor() {
    let plane = Plane::signed();
    plane.seal("sealed-1");
    let failed = plane.fail("failed-1");
    let saved = sign_now(&plane);
    let before = plane.store.read_run(&plane.tenant, &failed).unwrap().rows.len() as u64;
    assert!(before > 2, "the failed run has records to cut");

    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));
    let clean = plane.audit(&inputs);
    assert!(clean.is_clean(), "{:#?}", clean.findings);
    assert!(clean.checked.heads >= 1, "the open run's head was held to its chain");

    cut_back(&plane, &failed);
    let report = plane.audit(&inputs);
    let finding = report.findings.iter().find(|f| f.code == FindingCode::HeadCutBack).unwrap_or_else(|| {
        panic!("the cut is found: {:#?}", report.findings);
    });
    assert_eq!(finding.class, FindingClass::Deletion);
    assert_eq!(finding.run.as_deref(), Some(failed.as_str()));
    assert_eq!(finding.seq, Some(before), "names the head the checkpoint committed to");
    assert_eq!(finding.anchors, vec!["saved".to_owned()], "names the anchor that covers it");
    assert!(report.assert_complete().is_err());
}

#[test]
fn r_aud_3_an_open_run_deleted_outright_after_a_saved_checkpoint_is_found() {
    let plane = Plane::signed();
    plane.seal("sealed-1");
    let failed = plane.fail("failed-1");
    let saved = sign_now(&plane);
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));

    plane.store.delete_run(&plane.tenant, &failed);
    let report = plane.audit(&inputs);
    assert!(codes(&report).contains(&FindingCode::HeadCutBack), "{:#?}", report.findings);
    let finding = report.findings.iter().find(|f| f.code == FindingCode::HeadCutBack).unwrap();
    assert_eq!(finding.run.as_deref(), Some(failed.as_str()));
    assert_eq!(finding.class, FindingClass::Deletion);
}

/// A run left open (running) after its effect `ek:wire-transfer` was done.
fn open_with_effect_done(plane: &Plane, key: &str) -> journal_core::RunId {
    let request = journal_core::AdmitRequest {
        idempotency_key: key.into(),
        plan: vec!["work".into()],
        budget: journal_core::Budget::default(),
    };
    let journal_core::Admission::New(mut run) = plane.runtime.admit(&plane.tenant, request).unwrap() else {
        panic!("{key} is new");
    };
    run.start_step("work").unwrap();
    run.effect("ek:wire-transfer", "work", || journal_core::EffectOutput {
        result: journal_core::EffectResult::Ok { output: "sent".into() },
        charged: journal_core::Counters { tokens: 5, ..journal_core::Counters::default() },
    })
    .unwrap();
    run.run().clone()
}

#[test]
fn r_aud_3_an_open_run_whose_done_effect_is_cut_after_a_checkpoint_is_found_before_any_resume() {
    let plane = Plane::signed();
    let open = open_with_effect_done(&plane, "transfer-1");
    let saved = sign_now(&plane);
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));
    // Cut back to before the effect: a resume would run the transfer again.
    cut_back(&plane, &open);
    let report = plane.audit(&inputs);
    let finding = report.findings.iter().find(|f| f.code == FindingCode::HeadCutBack);
    let finding = finding.unwrap_or_else(|| panic!("found before anything resumes it: {:#?}", report.findings));
    assert_eq!(finding.run.as_deref(), Some(open.as_str()));
}

#[test]
fn r_aud_5_the_same_cut_before_any_anchor_covers_the_run_is_not_checked_never_complete() {
    let plane = Plane::signed();
    plane.seal("sealed-1");
    let saved = sign_now(&plane);
    // Admitted after the checkpoint the observer saved: nothing covers it.
    let failed = open_with_effect_done(&plane, "transfer-late");
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));

    cut_back(&plane, &failed);
    let report = plane.audit(&inputs);
    assert!(report.is_clean(), "nothing the anchor covers was touched: {:#?}", report.findings);
    assert!(
        report.not_checked.iter().any(|n| n.what.contains("open runs") && n.why.contains("newest anchor")),
        "the uncovered run is named as not checked: {:?}",
        report.not_checked
    );
    assert!(report.assert_complete().is_err(), "never clean and complete over what no anchor covers");
}

/// R-AUD-5: an anchor of size n covers the leaves at ranks below n. A run
/// sealed at rank n, the first past it, is not covered: named, never
/// called complete.
#[test]
fn r_aud_5_a_run_sealed_at_the_rank_of_the_anchors_size_is_not_checked() {
    let plane = Plane::signed();
    plane.seal("sealed-1");
    let saved = sign_now(&plane);
    assert_eq!(saved.checkpoint().tree().size, 1);
    plane.seal("sealed-2");
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));
    let report = plane.audit(&inputs);
    assert!(report.is_clean(), "{:#?}", report.findings);
    assert!(
        report.not_checked.iter().any(|n| n.what == "1 runs sealed after the newest anchor"),
        "{:?}",
        report.not_checked
    );
    assert!(report.assert_complete().is_err());
}

/// R-AUD-5: a heads leaf at rank n, the first past an anchor of size n,
/// is no anchor's: the open run it enters is not covered.
#[test]
fn r_aud_5_a_heads_leaf_at_the_rank_of_the_anchors_size_covers_nothing() {
    let plane = Plane::signed();
    plane.fail("open-1");
    let saved = sign_now(&plane);
    assert_eq!(saved.checkpoint().tree().size, 1);
    plane.fail("open-2");
    // The plane signs again (a heads leaf at rank 1 enters open-2); the
    // auditor holds only the first checkpoint.
    sign_now(&plane);
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));
    let report = plane.audit(&inputs);
    assert!(report.is_clean(), "{:#?}", report.findings);
    assert!(report.not_checked.iter().any(|n| n.what == "1 open runs"), "{:?}", report.not_checked);
    assert!(report.assert_complete().is_err());
}

#[test]
fn r_aud_5_records_written_after_the_newest_anchored_head_are_not_checked() {
    let plane = Plane::signed();
    let open = plane.fail("failed-1");
    let saved = sign_now(&plane);
    // The run moves on after the checkpoint: a resume appends a conclusion.
    let head = plane.store.read_run(&plane.tenant, &open).unwrap().head;
    let journal = journal_core::Journal::new(plane.store.as_ref(), &plane.tenant, &plane.origin);
    journal
        .append(
            &open,
            head,
            None,
            journal_core::RecordBody::RunConcluded(journal_core::record::RunConcluded {
                outcome: Outcome::Failed,
                verdict: journal_core::record::Verdict::None,
                reason: "gave up".into(),
            }),
        )
        .unwrap();
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));
    let report = plane.audit(&inputs);
    assert!(report.not_checked.iter().any(|n| n.what.contains("records of 1 open runs")), "{:?}", report.not_checked);
}

#[test]
fn r_aud_1_a_sealed_run_copied_in_from_another_tenant_is_tamper() {
    let plane = Plane::signed();
    let run = plane.seal("sealed-1");
    // Another tenant of the same store, whose log the attacker extends with
    // the copied rows and a seal leaf made for its origin: no key needed.
    let other = journal_core::TenantId::new("tenant-b").unwrap();
    let origin_b = journal_core::Origin::new("audit.test/plane/tenant-b").unwrap();
    let rows = plane.store.read_run(&plane.tenant, &run).unwrap().rows;
    let mut head = None;
    for row in &rows {
        let concluded = row.kind == "RunConcluded";
        let new_head = ExpectedHead { seq: row.seq, hash: row.hash };
        plane
            .store
            .append(journal_core::AppendRequest {
                tenant: other.clone(),
                run: run.clone(),
                expected_head: head,
                row: row.clone(),
                idempotency_key: None,
                conclusion: concluded.then(|| journal_core::Conclusion {
                    outcome: Outcome::Succeeded,
                    seal: Some(journal_core::SealLeaf::new(&origin_b, &run, new_head)),
                }),
                encoded_bytes: None,
            })
            .unwrap();
        head = Some(new_head);
    }
    let mut inputs = audit::AuditInputs::new(other, origin_b);
    inputs.record_keys = plane.inputs().record_keys;
    let report = audit::audit(plane.store.as_ref(), &inputs).unwrap();
    let finding = report.findings.iter().find(|f| f.code == FindingCode::TenantMismatch);
    let finding = finding.unwrap_or_else(|| panic!("the transplant is found: {:#?}", report.findings));
    assert_eq!(finding.class, FindingClass::Tamper);
    assert_eq!(finding.run.as_deref(), Some(run.as_str()));
}

/// R-AUD-1: a run's id is the one its tenant and idempotency key give. A
/// run whose admission was rewritten to carry another key (the chain
/// re-linked with no key; the admission still names this tenant) is found
/// by its id, which that key does not give.
#[test]
fn r_aud_1_an_admission_rewritten_to_carry_another_key_is_tamper_by_its_id() {
    let plane = Plane::unsigned();
    let run = plane.fail("open-1");
    rechain_admission(&plane, &run, ("\"open-1\"", "\"open-9\""));
    let report = plane.audit(&plane.inputs());
    let finding = report.with_code(FindingCode::TenantMismatch).next();
    let finding = finding.unwrap_or_else(|| panic!("the run is found by its id: {:#?}", report.findings));
    assert_eq!((finding.class, finding.run.as_deref()), (FindingClass::Tamper, Some(run.as_str())));
    assert!(finding.detail.contains("give run id"), "{}", finding.detail);
}

/// Rewrites `edit.0` as `edit.1` in `run`'s admission and re-chains every
/// record after it, unsigned, as someone with the file and no key does.
fn rechain_admission(plane: &Plane, run: &journal_core::RunId, edit: (&str, &str)) {
    rewrite_and_rechain(plane, run, 1, |bytes| {
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains(edit.0), "{text}");
        text.replacen(edit.0, edit.1, 1).into_bytes()
    });
}

/// R-AUD-1: a run whose admission was rewritten to name another tenant (its
/// id left as this tenant's key gives it, the chain re-linked with no key)
/// is found by the tenant its admission names.
#[test]
fn r_aud_1_an_admission_rewritten_to_name_another_tenant_is_tamper() {
    let plane = Plane::unsigned();
    let run = plane.fail("open-1");
    rechain_admission(&plane, &run, ("\"tenant-a\"", "\"tenant-b\""));
    let report = plane.audit(&plane.inputs());
    assert_eq!(codes(&report), [FindingCode::TenantMismatch], "{:#?}", report.findings);
    let finding = &report.findings[0];
    assert_eq!(
        (finding.class, finding.run.as_deref(), finding.seq),
        (FindingClass::Tamper, Some(run.as_str()), Some(1))
    );
    assert!(finding.detail.contains("tenant-b"), "{}", finding.detail);
}

/// R-AUD-5, R-AUD-1: a run whose first record is not a `RunAdmitted` (only
/// a direct `Journal` writer makes one: the runtime admits every run, forks
/// included) names no tenant and no key its id derives from, so its binding
/// to the audited tenant cannot be checked: the audit says so rather than
/// call the tenant complete (a run of another tenant copied in would pass).
#[test]
fn r_aud_5_a_run_with_no_admission_leaves_its_tenant_binding_not_checked() {
    let plane = Plane::signed();
    plane.seal("sealed-1");
    let signer = plane.signer.clone().unwrap();
    let journal = journal_core::Journal::new(plane.store.as_ref(), &plane.tenant, &plane.origin).signed_by(&signer);
    let run = journal_core::RunId::new("run-unadmitted").unwrap();
    let step = journal_core::record::StepMark { step: "search".into() };
    journal.append(&run, None, None, journal_core::record::RecordBody::StepStarted(step)).unwrap();
    let report = plane.audit(&plane.inputs());
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    let binding = report.not_checked.iter().find(|n| n.what.contains("tenant binding"));
    let binding = binding.unwrap_or_else(|| panic!("the unbound run is named: {:#?}", report.not_checked));
    assert!(binding.what.contains("1 run"), "{binding:?}");
    assert!(binding.why.contains("RunAdmitted"), "{binding:?}");
    assert_eq!(report.verdict(), audit::Verdict::Incomplete);
}

#[test]
fn r_aud_2_an_outcome_index_row_for_a_run_that_does_not_exist_is_found() {
    let plane = Plane::signed();
    plane.seal("sealed-1");
    let ghost = journal_core::RunId::new("run-ghost").unwrap();
    plane.store.set_outcome_index(&plane.tenant, &ghost, Some(Outcome::Succeeded));
    assert!(plane.store.runs(&plane.tenant, Some(Outcome::Succeeded)).unwrap().contains(&ghost), "listed");
    let report = plane.audit(&plane.inputs());
    let finding = report.findings.iter().find(|f| f.code == FindingCode::IndexWithoutRun);
    let finding = finding.unwrap_or_else(|| panic!("the forged row is found: {:#?}", report.findings));
    assert_eq!(finding.run.as_deref(), Some("run-ghost"));
}

#[test]
fn r_aud_2_an_idempotency_key_pointed_at_an_existing_run_is_found() {
    let plane = Plane::signed();
    let run = plane.seal("sealed-1");
    // Admitting "new-job" would now answer with the old run: the job never runs.
    plane.store.set_idempotency(&plane.tenant, "new-job", &run);
    let report = plane.audit(&plane.inputs());
    let finding = report.findings.iter().find(|f| f.code == FindingCode::IndexWithoutRun);
    let finding = finding.unwrap_or_else(|| panic!("the forged key is found: {:#?}", report.findings));
    assert_eq!(finding.run.as_deref(), Some(run.as_str()));
    assert!(finding.detail.contains("new-job"), "{}", finding.detail);
}

#[test]
fn r_aud_2_records_whose_runs_row_was_deleted_are_found() {
    let plane = Plane::signed();
    let run = plane.fail("failed-1");
    plane.store.delete_runs_row(&plane.tenant, &run);
    let report = plane.audit(&plane.inputs());
    assert!(codes(&report).contains(&FindingCode::RunRowMissing), "{:#?}", report.findings);
}

#[test]
fn heads_leaf_edits_are_found() {
    let plane = Plane::signed();
    plane.fail("failed-1");
    plane.fail("failed-2");
    let saved = sign_now(&plane);
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));
    let snapshot = plane.store.snapshot(&plane.tenant).unwrap();
    let (&position, entries) = snapshot.heads_entries.iter().next().unwrap();
    assert_eq!(entries.len(), 2, "one entry per moved run");
    // The attacker drops one entry so the cut of that run would pass.
    plane.store.delete_heads_entry(&plane.tenant, position, &entries[0].run);
    let report = plane.audit(&inputs);
    assert!(codes(&report).contains(&FindingCode::HeadsLeafBroken), "{:#?}", report.findings);
    let _ = head_at;
}

#[test]
fn r_aud_5_an_empty_store_is_never_clean_and_with_an_anchor_that_saw_runs_it_is_a_deletion() {
    let plane = Plane::signed();
    let empty = plane.audit(&plane.inputs());
    assert!(
        empty.not_checked.iter().any(|n| n.what.contains("holds nothing")),
        "an empty store is named: {:?}",
        empty.not_checked
    );
    assert!(empty.assert_complete().is_err(), "never clean and complete");

    // An anchor saw a log of two runs; the store (or the database named) is empty.
    let other = Plane::signed();
    other.seal("sealed-1");
    other.seal("sealed-2");
    let saved = sign_now(&other);
    let mut inputs = plane.inputs();
    inputs.anchors.push(other.saved("saved", &saved));
    let report = plane.audit(&inputs);
    let finding = report.findings.iter().find(|f| f.class == FindingClass::Deletion);
    assert!(finding.is_some(), "{:#?}", report.findings);
}

/// A failed run whose last record is rewritten as a newer build's (rehashed,
/// no key), and the inputs of an audit by a build that cannot read it: the
/// run, that record's seq, and the inputs.
fn a_failed_run_rewritten_as_a_newer_builds(plane: &Plane) -> (journal_core::RunId, u64, audit::AuditInputs) {
    let run = plane.fail("failed-1");
    let last = plane.store.read_run(&plane.tenant, &run).unwrap().rows.len() as u64;
    let mut inputs = plane.inputs();
    inputs.reader = as_newer_build(plane, &run, last);
    (run, last, inputs)
}

/// Rewrites record `seq` of `run` as a newer build would have written it (a
/// version this build does not read, a field it does not know), rehashed so
/// its link holds, the runs row pointed at it when it is the last: no key
/// is needed. Returns the reader that is older than that "writer".
fn as_newer_build(plane: &Plane, run: &journal_core::RunId, seq: u64) -> journal_core::Build {
    let rows = plane.store.read_run(&plane.tenant, run).unwrap().rows;
    let row = rows.iter().find(|row| row.seq == seq).unwrap().clone();
    let bytes = String::from_utf8(row.bytes.clone())
        .unwrap()
        .replace("\"version\":\"0.1.0\"}", "\"version\":\"9.9.9\"}")
        .replacen("\"body\":", "\"trace\":\"abc\",\"body\":", 1)
        .into_bytes();
    assert_ne!(bytes, row.bytes, "the record was rewritten");
    let hash = journal_core::ChainHash::link(&row.prev_hash, &bytes);
    plane.store.overwrite_row(&plane.tenant, run, journal_core::StoredRecord { bytes, hash, ..row });
    if rows.last().is_some_and(|last| last.seq == seq) {
        plane.store.set_runs_head(&plane.tenant, run, ExpectedHead { seq, hash });
    }
    journal_core::Build::new("agentplane-cli", "0.1.0")
}

/// R-COVER-2, R-VER-4: a record this build cannot read is build skew, never
/// tamper; but a record rewritten as a newer build's (no key needed: it is
/// only rehashed) must not hide what an anchor commits to. An open run cut
/// back below its covered head, its new last record made unreadable here,
/// is still a deletion naming the anchor; a sealed run whose last record is
/// rewritten so is still held to its anchored seal leaf (tamper naming the
/// anchor). Neither audit may
/// answer "build skew only" (exit 3, "upgrade the binary").
#[test]
fn r_cover_2_a_cut_behind_a_record_rewritten_as_a_newer_builds_is_still_a_deletion() {
    let plane = Plane::signed();
    let sealed = plane.seal("sealed-1");
    let failed = plane.fail("failed-1");
    let covered = plane.store.read_run(&plane.tenant, &failed).unwrap().rows.len() as u64;
    let saved = sign_now(&plane);
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));
    inputs.reader = journal_core::Build::new("agentplane-cli", "0.1.0");
    let clean = plane.audit(&inputs);
    assert!(clean.is_clean(), "{:#?}", clean.findings);

    cut_back(&plane, &failed);
    as_newer_build(&plane, &failed, 2);
    let report = plane.audit(&inputs);
    assert!(!report.only_build_skew(), "a cut is not build skew: {:#?}", report.findings);
    let cut = report.with_code(FindingCode::HeadCutBack).find(|f| f.run.as_deref() == Some(failed.as_str()));
    let cut = cut.unwrap_or_else(|| panic!("the cut is found: {:#?}", report.findings));
    assert_eq!((cut.class, cut.seq), (FindingClass::Deletion, Some(covered)));
    assert_eq!(cut.anchors, vec!["saved".to_owned()], "names the anchor that covers it");

    let last = plane.store.read_run(&plane.tenant, &sealed).unwrap().rows.len() as u64;
    as_newer_build(&plane, &sealed, last);
    let report = plane.audit(&inputs);
    // Rewritten at its sealed head, under the anchor: tamper naming it
    // (review 23), not a seal row to rebuild.
    let rewritten = report.with_code(FindingCode::HeadRewritten).find(|f| f.run.as_deref() == Some(sealed.as_str()));
    let rewritten = rewritten.unwrap_or_else(|| panic!("the sealed run is held to its seal: {:#?}", report.findings));
    assert_eq!((rewritten.class, rewritten.seq), (FindingClass::Tamper, Some(last)));
    assert_eq!(rewritten.anchors, vec!["saved".to_owned()]);
}

/// R-CHAIN-4, R-VER-4: the links of a run are checked from the stored bytes
/// whatever its records' versions (hash before parse), so a record made
/// unreadable here does not stop the check of the rows after it: one of
/// them deleted behind it is tamper, not build skew.
#[test]
fn r_chain_4_rows_after_a_record_of_a_newer_build_are_still_linked() {
    let plane = Plane::signed();
    let run = plane.fail("failed-1");
    let rows = plane.store.read_run(&plane.tenant, &run).unwrap().rows.len() as u64;
    assert!(rows >= 4, "records after the rewritten one: {rows}");
    let mut inputs = plane.inputs();
    inputs.reader = as_newer_build(&plane, &run, 2);
    // A newer writer rehashes every link after it; this one removes a row.
    plane.store.delete_record(&plane.tenant, &run, 3);
    let report = plane.audit(&inputs);
    assert!(!report.only_build_skew(), "a deleted row is not build skew: {:#?}", report.findings);
    let broken = report.with_code(FindingCode::ChainBroken).find(|f| f.run.as_deref() == Some(run.as_str()));
    let broken =
        broken.unwrap_or_else(|| panic!("the chain is broken after the skewed record: {:#?}", report.findings));
    assert_eq!(broken.class, FindingClass::Tamper);
}

/// R-AUD-2, R-VER-4: the runs table's head is derived data held to the
/// chain even when this build cannot read a record of it: the links are
/// checked from the stored bytes, so the head they end at is known. A head
/// set back (which makes the next append continue below the cut-off rows)
/// is a finding, not "build skew only".
#[test]
fn r_aud_2_the_head_of_a_run_this_build_cannot_read_is_held_to_its_links() {
    let plane = Plane::unsigned();
    let run = plane.fail("failed-1");
    let rows = plane.store.read_run(&plane.tenant, &run).unwrap().rows;
    let mut inputs = plane.inputs();
    inputs.reader = as_newer_build(&plane, &run, rows.len() as u64);
    let skew_only = plane.audit(&inputs);
    assert!(skew_only.only_build_skew(), "untouched, only build skew: {:#?}", skew_only.findings);

    let earlier = &rows[rows.len() - 2];
    plane.store.set_runs_head(&plane.tenant, &run, ExpectedHead { seq: earlier.seq, hash: earlier.hash });
    let report = plane.audit(&inputs);
    assert!(!report.only_build_skew(), "a head set back is not build skew: {:#?}", report.findings);
    let head = report.with_code(FindingCode::RunsHeadMismatch).find(|f| f.run.as_deref() == Some(run.as_str()));
    assert!(head.is_some(), "the runs row's head is named: {:#?}", report.findings);
}

/// R-COVER-2, R-VER-4: an open run this build cannot read still needs its
/// moved mark (its linked head is not in a heads leaf yet): the mark deleted
/// would leave it out of the next heads leaf, unanchored, while the audit
/// said "build skew only".
#[test]
fn r_cover_2_the_moved_mark_of_a_run_this_build_cannot_read_is_held() {
    let plane = Plane::unsigned();
    let (run, _, inputs) = a_failed_run_rewritten_as_a_newer_builds(&plane);
    let skew_only = plane.audit(&inputs);
    assert!(skew_only.only_build_skew(), "marked, only build skew: {:#?}", skew_only.findings);

    plane.store.set_moved(&plane.tenant, &run, false);
    let report = plane.audit(&inputs);
    assert!(!report.only_build_skew(), "a deleted mark is not build skew: {:#?}", report.findings);
    let unmarked = report.with_code(FindingCode::MovedMarkMissing).find(|f| f.run.as_deref() == Some(run.as_str()));
    assert!(unmarked.is_some(), "the run is named: {:#?}", report.findings);
}

/// R-SIG-2, R-SIG-3, R-VER-4: a signature is over the chain hash, which
/// every build computes the same way, so a run this build cannot read still
/// has its signatures checked: a record rewritten as a newer build's keeps
/// the signature of the record it replaced, which the trusted key's check
/// fails (a finding even lenient), and strict, an unsigned one is named.
#[test]
fn r_sig_2_a_record_rewritten_as_a_newer_builds_still_fails_the_trusted_key() {
    let plane = Plane::signed();
    let (run, last, mut inputs) = a_failed_run_rewritten_as_a_newer_builds(&plane);
    let report = plane.audit(&inputs);
    assert!(!report.only_build_skew(), "a forged record is not build skew: {:#?}", report.findings);
    let bad = report.with_code(FindingCode::BadSignature).find(|f| f.run.as_deref() == Some(run.as_str()));
    let bad = bad.unwrap_or_else(|| panic!("the trusted key's check fails: {:#?}", report.findings));
    assert_eq!(bad.seq, Some(last));

    let row = plane.store.read_run(&plane.tenant, &run).unwrap().rows.last().unwrap().clone();
    plane.store.overwrite_row(&plane.tenant, &run, journal_core::StoredRecord { signature: None, ..row });
    inputs.require_signature = true;
    let report = plane.audit(&inputs);
    let unsigned = report.with_code(FindingCode::UnsignedRecord).find(|f| f.run.as_deref() == Some(run.as_str()));
    assert!(unsigned.is_some(), "strict names the unsigned record: {:#?}", report.findings);
}

/// R-AUD-8, R-COVER-4, R-VER-4 (attacker review 17): an idempotency row is
/// derived data, and a run's id is the one its tenant and key give, so a row
/// pointing a key at a run this build cannot read is still held to that: a
/// key forged onto such a run (a new job the plane would answer with an old
/// run it never reads) is a finding, never hidden behind "build skew only"
/// (exit 3), which the newer build's remedy would not clear when no build
/// wrote the record (it was only rehashed, no key needed).
#[test]
fn r_aud_8_a_key_forged_onto_a_run_this_build_cannot_read_is_not_build_skew_only() {
    let plane = Plane::unsigned();
    let (run, _, inputs) = a_failed_run_rewritten_as_a_newer_builds(&plane);
    let skew_only = plane.audit(&inputs);
    assert!(skew_only.only_build_skew(), "untouched, only build skew: {:#?}", skew_only.findings);

    plane.store.set_idempotency(&plane.tenant, "another-job", &run);
    let report = plane.audit(&inputs);
    assert!(!report.only_build_skew(), "a forged index row is not build skew: {:#?}", report.findings);
    let forged = report.with_code(FindingCode::IndexWithoutRun).find(|f| f.run.as_deref() == Some(run.as_str()));
    let forged = forged.unwrap_or_else(|| panic!("the forged row is named: {:#?}", report.findings));
    assert!(forged.detail.contains("another-job"), "{}", forged.detail);
}

/// Rewrites record `seq` of `run` with `edit` and re-chains every record
/// after it, unsigned, as someone with the file and no key does; the runs
/// row is pointed at the new head.
fn rewrite_and_rechain(plane: &Plane, run: &journal_core::RunId, seq: u64, edit: impl Fn(Vec<u8>) -> Vec<u8>) {
    let rows = plane.store.read_run(&plane.tenant, run).unwrap().rows;
    let mut prev = rows[seq as usize - 1].prev_hash;
    for row in rows.iter().filter(|row| row.seq >= seq) {
        let bytes = if row.seq == seq { edit(row.bytes.clone()) } else { row.bytes.clone() };
        let hash = journal_core::ChainHash::link(&prev, &bytes);
        let row = journal_core::StoredRecord { prev_hash: prev, hash, bytes, signature: None, ..row.clone() };
        plane.store.overwrite_row(&plane.tenant, run, row);
        prev = hash;
    }
    plane.store.set_runs_head(&plane.tenant, run, ExpectedHead { seq: rows.last().unwrap().seq, hash: prev });
}

/// One digit of a record's instant changed.
fn bump_instant_digit(mut bytes: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8(bytes.clone()).unwrap();
    let digit = text.find("\"at\":\"").unwrap() + 6 + 22;
    bytes[digit] = b'0' + (bytes[digit] - b'0' + 1) % 10;
    bytes
}

/// R-COVER-2 (review 23): a sealed run's seal leaf holds its head as a heads
/// entry holds an open run's, and the anchor that covers the leaf covers
/// that head. A sealed run cut back below its seal (its seal leaf left in
/// the log as the plane signed it, so the anchor holds; its runs row made
/// open, its outcome row removed), one deleted with its leaf left, and one
/// rewritten below its seal and re-chained were each reported only as
/// derived data (`seal_without_run`, `seal_leaf_mismatch`, naming no seq
/// and no anchor): an index to rebuild, not covered history cut or
/// rewritten. Each is a deletion or tamper naming the run, its sealed seq
/// and the anchor.
#[test]
fn r_cover_2_a_sealed_run_cut_deleted_or_rewritten_below_its_anchored_seal_names_the_anchor() {
    let plane = Plane::signed();
    let cut = plane.seal("sealed-cut");
    let gone = plane.seal("sealed-gone");
    let rewritten = plane.seal("sealed-rewritten");
    let saved = sign_now(&plane);
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));
    assert!(plane.audit(&inputs).is_clean());
    let sealed_at = |run| plane.store.read_run(&plane.tenant, run).unwrap().rows.len() as u64;
    let (cut_len, gone_len, rewritten_len) = (sealed_at(&cut), sealed_at(&gone), sealed_at(&rewritten));

    cut_back(&plane, &cut);
    plane.store.set_sealed_flag(&plane.tenant, &cut, false);
    for seq in 1..=gone_len {
        plane.store.delete_record(&plane.tenant, &gone, seq);
    }
    plane.store.delete_runs_row(&plane.tenant, &gone);
    plane.store.set_outcome_index(&plane.tenant, &gone, None);
    rewrite_and_rechain(&plane, &rewritten, 2, bump_instant_digit);

    let report = plane.audit(&inputs);
    assert_eq!(report.log_size, saved.checkpoint().tree().size, "every seal leaf is in the log as signed");
    for (run, code, class, seq) in [
        (&cut, FindingCode::HeadCutBack, FindingClass::Deletion, cut_len),
        (&gone, FindingCode::HeadCutBack, FindingClass::Deletion, gone_len),
        (&rewritten, FindingCode::HeadRewritten, FindingClass::Tamper, rewritten_len),
    ] {
        let finding = report
            .findings
            .iter()
            .find(|f| f.run.as_deref() == Some(run.as_str()) && f.code == code)
            .unwrap_or_else(|| panic!("{run}: no {code:?} finding: {:#?}", report.findings));
        assert_eq!(finding.class, class);
        assert_eq!(finding.seq, Some(seq), "names the sealed head");
        assert_eq!(finding.anchors, vec!["saved".to_owned()], "names the anchor that covers the seal");
    }
}

/// R-COVER-2, R-AUD-8 (review 23): records no runs row lists were never
/// read as a chain, so an open run cut back below the head an anchored
/// heads leaf holds, and a sealed run cut back below its anchored seal,
/// each with its runs row deleted too, were reported as `run_row_missing`
/// only (derived data, naming no seq and no anchor): a row to rebuild, not
/// covered history cut. Their links are checked and held to what the log
/// commits to: each cut is a deletion naming the run, the seq and the
/// anchor.
#[test]
fn r_cover_2_a_cut_run_whose_runs_row_is_deleted_is_still_a_deletion_naming_the_anchor() {
    let report = cuts_found_as_deletions(|plane, run| plane.store.delete_runs_row(&plane.tenant, run));
    // The rows are still named for what they are.
    assert!(report.with_code(FindingCode::RunRowMissing).count() == 2, "{:#?}", report.findings);
}

/// An open and a sealed run of a plane an anchor `saved` covers, each cut
/// back below what it covers and then changed by `also`: the audit names
/// each cut a deletion, with the run, the covered seq and the anchor.
fn cuts_found_as_deletions(also: impl Fn(&Plane, &journal_core::RunId)) -> audit::AuditReport {
    let Anchored { plane, open, sealed, inputs, open_len, sealed_len } = anchored_open_and_sealed();

    for run in [&open, &sealed] {
        cut_back(&plane, run);
        also(&plane, run);
    }
    let report = plane.audit(&inputs);
    assert_cuts_found(&report, [(&open, open_len), (&sealed, sealed_len)]);
    report
}

/// A plane with an open (failed) and a sealed run, both covered by the
/// checkpoint an anchor `saved` holds, audited clean; each run's length.
struct Anchored {
    plane: Plane,
    open: journal_core::RunId,
    sealed: journal_core::RunId,
    inputs: audit::AuditInputs,
    open_len: u64,
    sealed_len: u64,
}

fn anchored_open_and_sealed() -> Anchored {
    let plane = Plane::signed();
    let open = plane.fail("failed-1");
    let sealed = plane.seal("sealed-1");
    let saved = sign_now(&plane);
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));
    assert!(plane.audit(&inputs).is_clean());
    let len = |run| plane.store.read_run(&plane.tenant, run).unwrap().rows.len() as u64;
    let (open_len, sealed_len) = (len(&open), len(&sealed));
    Anchored { plane, open, sealed, inputs, open_len, sealed_len }
}

/// Each run cut back below the head the anchor `saved` covers (`seq`) is a
/// deletion naming the run, that seq and the anchor.
fn assert_cuts_found(report: &audit::AuditReport, cuts: [(&journal_core::RunId, u64); 2]) {
    for (run, seq) in cuts {
        let finding = report
            .with_code(FindingCode::HeadCutBack)
            .find(|f| f.run.as_deref() == Some(run.as_str()))
            .unwrap_or_else(|| panic!("{run}: the cut is not found as such: {:#?}", report.findings));
        assert_eq!(finding.class, FindingClass::Deletion);
        assert_eq!(finding.seq, Some(seq), "names the covered head");
        assert_eq!(finding.anchors, vec!["saved".to_owned()], "names the anchor that covers it");
    }
}

/// R-RUN-2, R-COVER-2 (noticed by review 23): a sealed run's journal is
/// frozen, and the seal leaf an anchor covers commits to its last record.
/// Records appended after the sealed head behind the plane (the head's own
/// record intact, the runs row moved to the new head) were reported as a
/// seal row to rebuild (`seal_leaf_mismatch`, derived data, no anchor): now
/// a tamper finding naming the run, the sealed seq and the anchor.
#[test]
fn r_run_2_records_appended_after_an_anchored_seal_are_tamper_naming_the_anchor() {
    let plane = Plane::signed();
    let run = plane.seal("sealed-1");
    let saved = sign_now(&plane);
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));
    assert!(plane.audit(&inputs).is_clean());
    let rows = plane.store.read_run(&plane.tenant, &run).unwrap().rows;
    let last = rows.last().unwrap().clone();
    let appended = journal_core::Record {
        run: run.clone(),
        seq: last.seq + 1,
        at: journal_core::At::parse("2026-12-04T12:00:00.000Z").unwrap(),
        effect_key: None,
        build: journal_core::Build::journal_core().clone(),
        body: journal_core::record::RecordBody::StepStarted(journal_core::record::StepMark { step: "more".into() }),
    };
    let row = journal_core::StoredRecord::new(&appended, last.hash, None).unwrap();
    let hash = row.hash;
    plane.store.overwrite_row(&plane.tenant, &run, row);
    plane.store.set_runs_head(&plane.tenant, &run, ExpectedHead { seq: last.seq + 1, hash });

    let report = plane.audit(&inputs);
    let finding = report
        .findings
        .iter()
        .find(|f| f.run.as_deref() == Some(run.as_str()) && f.class == FindingClass::Tamper && f.seq == Some(last.seq))
        .unwrap_or_else(|| panic!("the append after the seal is not tamper at the sealed seq: {:#?}", report.findings));
    assert_eq!(finding.anchors, vec!["saved".to_owned()], "names the anchor that covers the seal");
    assert!(finding.detail.contains("after"), "{}", finding.detail);
}

/// R-COVER-2, R-VER-4 (review 26): a run sealed by a newer build, whose
/// seal leaf is in that build's spelling (one this build cannot parse, the
/// row naming the run), is sealed: the moved-mark check holds it to its seal
/// as `check_log` does (by the row, when the leaf's bytes name no run this
/// build can read), not to a moved mark a sealed run never has. The audit
/// answers "build skew only", not a deleted mark.
#[test]
fn r_cover_2_a_run_sealed_by_a_newer_build_in_its_leaf_spelling_needs_no_moved_mark() {
    let plane = Plane::unsigned();
    plane.seal("sealed-0");
    let run = plane.seal("sealed-1");
    let last = plane.store.read_run(&plane.tenant, &run).unwrap().rows.len() as u64;
    let mut inputs = plane.inputs();
    inputs.reader = as_newer_build(&plane, &run, last);
    let head = plane.store.read_run(&plane.tenant, &run).unwrap().rows.last().unwrap().hash;
    // The newer build's seal leaf: its own spelling, over the head it wrote.
    let leaf =
        format!("agentplane/seal/v2\norigin {origin}\nrun {run}\nrecords {last}\nhead {head}\n", origin = plane.origin)
            .into_bytes();
    assert!(journal_core::SealLeaf::parse(&leaf).is_none(), "a spelling this build cannot parse");
    let seals: Vec<(journal_core::RunId, Vec<u8>)> = plane
        .store
        .seals(&plane.tenant)
        .unwrap()
        .into_iter()
        .map(|seal| if seal.run == run { (seal.run, leaf.clone()) } else { (seal.run, seal.leaf_bytes) })
        .collect();
    plane.store.rewrite_log(&plane.tenant, &seals);

    let report = plane.audit(&inputs);
    let unmarked = report.with_code(FindingCode::MovedMarkMissing).find(|f| f.run.as_deref() == Some(run.as_str()));
    assert!(unmarked.is_none(), "a sealed run needs no moved mark: {:#?}", report.findings);
    assert!(report.only_build_skew(), "only build skew: {:#?}", report.findings);
}

/// R-COVER-2: a run cut back below what an anchor covers, with one record
/// below the cut also broken behind the store (its kind column edited, which
/// leaves every link intact; or record 1 deleted, which breaks the links at
/// the start), was reported only as its chain broken at that record: tamper
/// at seq 1, naming no anchor and not the cut, the covered records gone
/// unsaid, the open one's and the sealed one's alike. The covered head is
/// held to the records whose links still verify: each cut is a deletion
/// naming the run, the covered seq and the anchor.
#[test]
fn r_cover_2_a_cut_run_with_a_broken_record_below_the_cut_is_still_a_deletion_naming_the_anchor() {
    for break_first in [
        (|plane: &Plane, run: &journal_core::RunId| {
            let mut first = plane.store.read_run(&plane.tenant, run).unwrap().rows[0].clone();
            first.kind = "PlanFrozen".into();
            plane.store.overwrite_row(&plane.tenant, run, first);
        }) as fn(&Plane, &journal_core::RunId),
        |plane, run| plane.store.delete_record(&plane.tenant, run, 1),
    ] {
        let report = cuts_found_as_deletions(break_first);
        // The broken record is still named for what it is.
        assert_eq!(report.with_code(FindingCode::ChainBroken).count(), 2, "{:#?}", report.findings);
    }
}

/// R-COVER-1, R-RUN-5: a heads leaf enters the head the runs row gives
/// (derived data). A row pointed behind the plane at a head its run does not
/// have (a seq past its records, or another record's hash) just before a
/// checkpoint, and put back right after, was signed into the leaf: from then
/// on every audit against that checkpoint reported the run, its records
/// untouched, cut back below the leaf (a deletion that never happened, with
/// no copy of the store to restore it from), and every resume refused the
/// run for good. The plane refuses to append a heads leaf over such a row:
/// nothing is signed, and the checkpoint after the row is put back covers
/// the run's true head.
#[test]
fn r_cover_1_a_runs_head_no_record_has_is_never_signed_into_a_heads_leaf() {
    let plane = Plane::signed();
    plane.seal("sealed-1");
    let open = plane.fail("failed-1");
    let rows = plane.store.read_run(&plane.tenant, &open).unwrap().rows;
    let head = head_at_rows(&rows, rows.len() as u64);
    let size = |plane: &Plane| plane.store.seals(&plane.tenant).unwrap().len();
    let before = size(&plane);
    for forged in
        [ExpectedHead { seq: head.seq + 1, hash: head.hash }, ExpectedHead { seq: head.seq, hash: rows[0].hash }]
    {
        plane.store.set_runs_head(&plane.tenant, &open, forged);
        let signed = try_to_sign(&plane);
        match signed {
            Err(journal_core::JournalError::StoreDamage { detail, .. }) => {
                assert!(detail.contains(open.as_str()), "names the run: {detail}");
            }
            other => panic!("a heads leaf over a head the run does not have: {other:?}"),
        }
        assert_eq!(size(&plane), before, "nothing appended");
    }

    plane.store.set_runs_head(&plane.tenant, &open, head);
    let saved = sign_now(&plane);
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved", &saved));
    let report = plane.audit(&inputs);
    assert!(report.is_clean(), "{:#?}", report.findings);
    report.assert_complete().unwrap();
}

/// R-COVER-1, R-PLANE-2 (review 45's third finding): a leaf appended to the
/// log behind the plane, past the newest tree it signed, with node hashes to
/// match, was signed at the next checkpoint: a seal of an open run at a seq
/// it never reached (or at a record it has records after), or a heads leaf
/// whose entries name a record the store does not have. No key is needed to
/// write one, and once signed every audit against that checkpoint named the
/// intact run cut back, and every resume refused it, with no store copy to
/// restore. The plane holds each leaf since its trusted tree to the records
/// before it signs: nothing is signed.
#[test]
fn r_cover_1_a_leaf_naming_records_the_store_has_not_is_never_signed() {
    let refused = |plane: &Plane| {
        let signed = try_to_sign(plane);
        match signed {
            Err(journal_core::JournalError::WouldSignRollback { reason, .. }) => reason,
            other => panic!("a leaf the store's records do not hold was signed: {other:?}"),
        }
    };
    let leaves = |plane: &Plane| -> Vec<(journal_core::RunId, Vec<u8>)> {
        plane.store.seals(&plane.tenant).unwrap().into_iter().map(|seal| (seal.run, seal.leaf_bytes)).collect()
    };
    let first = |plane: &Plane, run: &journal_core::RunId| head_at(plane, run, 1);
    let beyond = ExpectedHead { seq: 99, hash: journal_core::ChainHash::GENESIS };
    for (forged, said) in
        [("past its records", "which the store does not have"), ("before its last", "records of it after")]
    {
        let plane = Plane::signed();
        plane.seal("sealed-1");
        let open = plane.fail("failed-1");
        sign_now(&plane);
        let head = if forged == "past its records" { beyond } else { first(&plane, &open) };
        let mut log = leaves(&plane);
        log.push((open.clone(), journal_core::SealLeaf::new(&plane.origin, &open, head).to_bytes()));
        plane.store.rewrite_log(&plane.tenant, &log);
        let reason = refused(&plane);
        assert!(reason.contains(open.as_str()) && reason.contains(said), "{forged}: {reason}");
    }

    // A heads leaf appended as the plane does, then its entries or the run
    // behind them changed before the signing.
    let plane = Plane::signed();
    plane.fail("failed-1");
    sign_now(&plane);
    let other = plane.fail("failed-2");
    plane.store.append_heads(&plane.tenant, &plane.origin).unwrap();
    let position = plane.store.seals(&plane.tenant).unwrap().last().unwrap().position;
    plane.store.delete_heads_entry(&plane.tenant, position, &other);
    assert!(refused(&plane).contains("entries the store does not keep"));

    let plane = Plane::signed();
    plane.fail("failed-1");
    sign_now(&plane);
    let cut = plane.fail("failed-2");
    plane.store.append_heads(&plane.tenant, &plane.origin).unwrap();
    let last = plane.store.read_run(&plane.tenant, &cut).unwrap().rows.len() as u64;
    plane.store.delete_record(&plane.tenant, &cut, last);
    plane.store.set_runs_head(&plane.tenant, &cut, head_at(&plane, &cut, last - 1));
    let reason = refused(&plane);
    assert!(reason.contains(cut.as_str()) && reason.contains("does not have"), "{reason}");
}

/// R-COVER-1, R-PLANE-2 (review 48): a leaf appended behind the plane past
/// its trusted tree, with node hashes to match, that names only records the
/// store holds, yet is no leaf the plane appends: a seal of an open run at
/// its head (its last conclusion does not seal), a second seal of a run
/// sealed since, a sealed run's leaf under another run's row, a seal naming another
/// log's origin. Each, once signed, is a finding of every audit against that
/// checkpoint that no store copy clears. Nothing is signed.
#[test]
fn r_cover_1_a_leaf_the_plane_never_appends_is_never_signed() {
    type Forge = fn(&Plane, &journal_core::RunId, &journal_core::RunId) -> (journal_core::RunId, Vec<u8>);
    let forgeries: [(&str, Forge); 4] = [
        ("a seal of an open run", |plane, _, open| {
            let rows = plane.store.read_run(&plane.tenant, open).unwrap().rows;
            let head = head_at_rows(&rows, rows.len() as u64);
            (open.clone(), journal_core::SealLeaf::new(&plane.origin, open, head).to_bytes())
        }),
        ("a second seal", |plane, _, _| {
            // Of the run sealed since the trusted tree, whose leaf comes next.
            let newest = plane.store.seals(&plane.tenant).unwrap().pop().unwrap();
            (newest.run, newest.leaf_bytes)
        }),
        ("a seal under another run's row", |plane, sealed, open| {
            (open.clone(), plane.store.seal_of(&plane.tenant, sealed).unwrap().unwrap().leaf_bytes)
        }),
        ("a seal of another origin", |plane, sealed, _| {
            let mut leaf =
                journal_core::SealLeaf::parse(&plane.store.seal_of(&plane.tenant, sealed).unwrap().unwrap().leaf_bytes)
                    .unwrap();
            leaf.origin = witness::Origin::new("example.com/another-log").unwrap();
            (sealed.clone(), leaf.to_bytes())
        }),
    ];
    let mut signed_forgeries = Vec::new();
    for (forged, forge) in forgeries {
        let plane = Plane::signed();
        let sealed = plane.seal("sealed-1");
        let open = plane.fail("failed-1");
        let saved = sign_now(&plane);
        plane.seal("sealed-2");
        let mut log: Vec<(journal_core::RunId, Vec<u8>)> =
            plane.store.seals(&plane.tenant).unwrap().into_iter().map(|seal| (seal.run, seal.leaf_bytes)).collect();
        // In the middle of what the next checkpoint would sign: the first
        // and newest leaves are the plane's own.
        let newest = log.pop().unwrap();
        log.push(forge(&plane, &sealed, &open));
        log.push(newest);
        plane.store.rewrite_log(&plane.tenant, &log);
        let signed = try_to_sign(&plane);
        match signed {
            Err(journal_core::JournalError::WouldSignRollback { .. }) => {}
            other => {
                let mut inputs = plane.inputs();
                inputs.anchors.push(plane.saved("saved", &saved));
                if let Ok(note) = &other {
                    inputs.anchors.push(plane.saved("after", note));
                }
                let report = plane.audit(&inputs);
                let codes: Vec<FindingCode> = report.findings.iter().map(|finding| finding.code).collect();
                signed_forgeries.push(format!("{forged} ({:?}; the audit after: {codes:?})", other.map(|_| ())));
            }
        }
    }
    assert!(signed_forgeries.is_empty(), "signed: {signed_forgeries:#?}");
}

/// R-AUD-5 (every input has a size bound): a store forged with one enormous
/// run (records up to 16 MiB each, a stored frame decompressing to 64
/// times its size) made the audit hold that run whole, and run out of
/// memory rather than give a verdict. A run past `max_run_bytes` is now
/// listed as not checked, never read whole; its stored hashes are still
/// held to what the anchors cover. Here every run is past a bound of one
/// byte: the intact plane has no finding (verdict incomplete, each run
/// named), and runs cut back below the anchor are still deletions naming
/// it.
#[test]
fn r_aud_5_a_run_past_the_audits_memory_bound_is_not_checked_and_a_cut_of_it_still_found() {
    let Anchored { plane, open, sealed, mut inputs, open_len, sealed_len } = anchored_open_and_sealed();
    inputs.max_run_bytes = 1;

    let intact = plane.audit(&inputs);
    assert!(intact.findings.is_empty(), "an unread run is no finding: {:#?}", intact.findings);
    assert_eq!(intact.verdict(), audit::Verdict::Incomplete);
    for (run, records) in [(&open, open_len), (&sealed, sealed_len)] {
        let unread = intact
            .not_checked
            .iter()
            .find(|n| n.what.starts_with(&format!("run {run}: {records} records")))
            .unwrap_or_else(|| panic!("{run} is not listed as not checked: {:#?}", intact.not_checked));
        assert!(unread.why.contains("--max-run-bytes"), "says how to check it: {}", unread.why);
    }
    assert_eq!(intact.checked.records, 0, "no record was read as checked");

    for run in [&open, &sealed] {
        cut_back(&plane, run);
    }
    plane.store.set_sealed_flag(&plane.tenant, &sealed, false);
    assert_cuts_found(&plane.audit(&inputs), [(&open, open_len), (&sealed, sealed_len)]);

    inputs.max_run_bytes = audit::DEFAULT_MAX_RUN_BYTES;
    let whole = plane.audit(&inputs);
    assert!(whole.not_checked.iter().all(|n| !n.what.starts_with("run ")), "{:#?}", whole.not_checked);
    assert!(whole.with_code(FindingCode::HeadCutBack).count() == 2, "{:#?}", whole.findings);
}
