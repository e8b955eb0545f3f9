//! R-AUD-2/3/4: the three ways a hider deletes a sealed run, against no
//! anchor (clean, honestly: not_checked says so), a checkpoint saved earlier,
//! and a witness read over HTTP; forks and split views between witnesses.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use audit::{FindingClass, FindingCode};
use journal_core::testkit::TamperAccess;
use support::*;

fn five_sealed(plane: &Plane) -> Vec<journal_core::RunId> {
    (0..5).map(|n| plane.seal(&format!("job-{n}"))).collect()
}

/// A middle run deleted, and the log rewritten densely over the rest.
fn delete_middle(plane: &Plane, runs: &[journal_core::RunId]) {
    let rest = plane.seals_without(&runs[2]);
    plane.store.delete_run(&plane.tenant, &runs[2]);
    plane.store.rewrite_log(&plane.tenant, &rest);
}

/// The newest run deleted, the counter rolled back and its nodes dropped.
fn delete_newest(plane: &Plane, runs: &[journal_core::RunId]) {
    plane.store.delete_run(&plane.tenant, &runs[4]);
    plane.store.rewind_log(&plane.tenant, 4);
}

#[test]
fn r_aud_3_a_middle_run_deleted_is_clean_without_an_anchor_and_found_with_one() {
    let plane = Plane::signed();
    let runs = five_sealed(&plane);
    let saved = plane.checkpoint();
    delete_middle(&plane, &runs);

    assert_clean_but_deletion_unchecked(&plane.audit(&plane.inputs()));
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved-last-week.note", &saved));
    let report = plane.audit(&inputs);
    assert_eq!(codes(&report), [FindingCode::LogShrank], "{:#?}", report.findings);
    assert_eq!(report.findings[0].anchors, ["saved-last-week.note"]);
    assert_eq!(report.findings[0].class, FindingClass::Deletion);
    assert_eq!(report.checked.anchors, 1);
}

#[test]
fn r_aud_3_the_newest_run_deleted_with_the_counter_rolled_back_is_found_against_the_anchor() {
    let plane = Plane::signed();
    let runs = five_sealed(&plane);
    let saved = plane.checkpoint();
    delete_newest(&plane, &runs);

    assert_clean_but_deletion_unchecked(&plane.audit(&plane.inputs()));
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved.note", &saved));
    let report = plane.audit(&inputs);
    assert_eq!(codes(&report), [FindingCode::LogShrank], "{:#?}", report.findings);
    assert_eq!(report.findings[0].anchors, ["saved.note"]);
}

#[test]
fn r_aud_3_a_new_run_sealed_at_the_reissued_position_is_found_against_the_anchor() {
    let plane = Plane::signed();
    let runs = five_sealed(&plane);
    let saved = plane.checkpoint();
    delete_newest(&plane, &runs);
    plane.seal("job-replacement");

    assert_clean_but_deletion_unchecked(&plane.audit(&plane.inputs()));
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("saved.note", &saved));
    let report = plane.audit(&inputs);
    assert_eq!(codes(&report), [FindingCode::AnchorNotExtended], "{:#?}", report.findings);
    assert!(report.findings[0].detail.contains("another root"), "{}", report.findings[0].detail);
    assert_eq!(report.findings[0].anchors, ["saved.note"]);
}

#[test]
fn r_aud_4_the_log_must_extend_each_anchor_and_grows_past_an_honest_one() {
    let plane = Plane::signed();
    let runs = five_sealed(&plane);
    let at_five = plane.checkpoint();
    plane.seal("job-5");
    plane.seal("job-6");
    let at_seven = plane.checkpoint();
    // Honest growth: both anchors are extended.
    let mut inputs = plane.inputs();
    inputs.anchors.push(plane.saved("at-five", &at_five));
    inputs.anchors.push(plane.saved("at-seven", &at_seven));
    let report = plane.audit(&inputs);
    assert!(report.is_clean(), "{:#?}", report.findings);
    assert_eq!(report.checked.anchors, 2);
    assert!(report.not_checked.is_empty(), "{:?}", report.not_checked);
    report.assert_complete().unwrap();
    // A middle run deleted and the log rewritten, then grown back to seven:
    // each anchor is held on its own, and both are failed, each by name.
    delete_middle(&plane, &runs);
    plane.seal("job-7");
    let report = plane.audit(&inputs);
    let anchors: Vec<&str> = report.findings.iter().flat_map(|f| f.anchors.iter().map(String::as_str)).collect();
    assert_eq!(codes(&report), [FindingCode::AnchorNotExtended, FindingCode::AnchorNotExtended], "{report:#?}");
    assert_eq!(anchors, ["at-five", "at-seven"]);
}

#[test]
fn r_aud_3_the_anchor_read_from_a_witness_needs_no_cooperation_from_the_operator() {
    let plane = Plane::signed();
    let witness = TestWitness::start(&plane, "audit.test/witness-1", 21);
    let runs = five_sealed(&plane);
    assert_eq!(plane.submit(&witness).checkpoint.tree().size, 5);
    delete_newest(&plane, &runs);
    plane.seal("job-replacement");

    let mut inputs = plane.inputs();
    inputs.anchors.push(witness.anchor());
    let report = plane.audit(&inputs);
    assert_eq!(codes(&report), [FindingCode::AnchorNotExtended], "{:#?}", report.findings);
    assert_eq!(report.findings[0].anchors, [witness.server.url()]);
}

#[test]
fn r_aud_4_a_fork_cosigned_by_a_fresh_witness_is_named_by_the_honest_witness() {
    let plane = Plane::signed();
    let honest = TestWitness::start(&plane, "audit.test/honest", 31);
    let fresh = TestWitness::start(&plane, "audit.test/fresh", 32);
    let runs = five_sealed(&plane);
    assert_eq!(plane.submit(&honest).checkpoint.tree().size, 5);
    // The operator forks: the newest run goes, two others are sealed, and a
    // witness that never saw the log cosigns the longer, forked history.
    delete_newest(&plane, &runs);
    plane.seal("fork-a");
    plane.seal("fork-b");
    assert_eq!(plane.submit(&fresh).checkpoint.tree().size, 6);

    let mut inputs = plane.inputs();
    inputs.anchors.push(fresh.anchor());
    inputs.anchors.push(honest.anchor());
    let report = plane.audit(&inputs);
    assert_eq!(codes(&report), [FindingCode::AnchorNotExtended], "{:#?}", report.findings);
    assert_eq!(report.findings[0].anchors, [honest.server.url()], "the honest, shorter checkpoint is the evidence");
}

#[test]
fn r_wit_5_two_witnesses_holding_one_size_with_two_roots_is_a_split_view_naming_both() {
    let plane = Plane::signed();
    let first = TestWitness::start(&plane, "audit.test/w-first", 41);
    let second = TestWitness::start(&plane, "audit.test/w-second", 42);
    let runs = five_sealed(&plane);
    plane.submit(&first);
    delete_newest(&plane, &runs);
    plane.seal("job-rewritten");
    plane.submit(&second);

    let mut inputs = plane.inputs();
    inputs.anchors.push(first.anchor());
    inputs.anchors.push(second.anchor());
    let report = plane.audit(&inputs);
    let split: Vec<_> = report.with_code(FindingCode::SplitView).collect();
    assert_eq!(split.len(), 1, "{:#?}", report.findings);
    assert_eq!(split[0].anchors, [first.server.url(), second.server.url()]);
    assert_eq!(split[0].class, FindingClass::Fork);
    assert!(report.with_code(FindingCode::AnchorNotExtended).any(|f| f.anchors == [first.server.url()]));
}

/// R-AUD-9: a witness that went away fails the audit; allowed, it is not
/// checked, and never clean.
#[test]
fn an_unreachable_witness_fails_the_audit_and_allowed_is_not_checked_never_clean() {
    let plane = Plane::signed();
    five_sealed(&plane);
    let witness = TestWitness::start(&plane, "audit.test/gone", 51);
    let anchor = witness.anchor();
    drop(witness);
    let mut inputs = plane.inputs();
    inputs.anchors.push(anchor);
    let report = plane.audit(&inputs);
    assert_eq!(codes(&report), [FindingCode::AnchorUnavailable], "{:#?}", report.findings);
    inputs.allow_unavailable_anchor = true;
    let report = plane.audit(&inputs);
    assert!(report.is_clean(), "{:#?}", report.findings);
    assert_eq!(report.checked.anchors, 0);
    assert!(report.not_checked.iter().any(|n| n.what.starts_with("anchor http")), "{:?}", report.not_checked);
    assert!(report.not_checked.iter().any(|n| n.what.contains("deletion")), "{:?}", report.not_checked);
}

#[test]
fn a_sloppy_hider_who_leaves_holes_is_found_without_an_anchor() {
    let plane = Plane::signed();
    let runs = five_sealed(&plane);
    plane.store.delete_run(&plane.tenant, &runs[1]);
    let report = plane.audit(&plane.inputs());
    assert_eq!(codes(&report), [FindingCode::LogHoles], "{:#?}", report.findings);
    assert_eq!(report.findings[0].class, FindingClass::Deletion);
}

/// R-AUD-2: a sealed run's seal taken out of the log (rewritten densely over
/// the rest, its nodes and seal index recomputed: no key needed) while its
/// journal stays is found without an anchor: its last conclusion seals it.
#[test]
fn r_aud_2_a_sealed_run_whose_seal_was_taken_out_of_the_log_is_found_without_an_anchor() {
    let plane = Plane::signed();
    let runs = five_sealed(&plane);
    let rest = plane.seals_without(&runs[2]);
    plane.store.rewrite_log(&plane.tenant, &rest);
    let report = plane.audit(&plane.inputs());
    assert_eq!(codes(&report), [FindingCode::SealMissing], "{:#?}", report.findings);
    assert_eq!(report.findings[0].run.as_deref(), Some(runs[2].as_str()));
}

/// R-LOG-6: a hider who deletes a middle run, rolls the counter back by one
/// so that it counts the seals left, and stores the nodes of the dense log
/// over them leaves the positions with a hole: found without an anchor.
#[test]
fn r_log_6_a_hole_left_under_a_counter_rolled_back_to_the_seal_count_is_found() {
    let plane = Plane::signed();
    let runs = five_sealed(&plane);
    plane.store.delete_run(&plane.tenant, &runs[1]);
    plane.store.rewind_log(&plane.tenant, 4);
    let leaves: Vec<Vec<u8>> = journal_core::Store::seals(plane.store.as_ref(), &plane.tenant)
        .unwrap()
        .into_iter()
        .map(|s| s.leaf_bytes)
        .collect();
    assert_eq!(leaves.len(), 4);
    for (id, hash) in journal_core::testkit::dense_log_nodes(&leaves) {
        plane.store.overwrite_log_node(&plane.tenant, id, hash);
    }
    let report = plane.audit(&plane.inputs());
    assert_eq!(codes(&report), [FindingCode::LogHoles], "{:#?}", report.findings);
    assert_eq!(report.findings[0].class, FindingClass::Deletion);
}

#[test]
fn an_anchor_not_signed_by_the_log_key_or_of_another_origin_is_refused_when_loaded() {
    let plane = Plane::signed();
    five_sealed(&plane);
    let saved = plane.checkpoint();
    let other =
        witness::LogKey::new(witness::SignerKey::from_seed(ORIGIN, witness::ALG_ED25519, [99; 32]).unwrap()).unwrap();
    let refused = audit::Anchor::saved("x", saved.note().as_bytes(), &[other.verifier_key()], &plane.origin);
    assert!(matches!(refused, Err(audit::AuditError::Anchor { .. })), "{refused:?}");
    let elsewhere = journal_core::Origin::new("elsewhere.test/log").unwrap();
    let refused = audit::Anchor::saved("x", saved.note().as_bytes(), &[plane.log_key.verifier_key()], &elsewhere);
    assert!(matches!(refused, Err(audit::AuditError::Anchor { reason, .. }) if reason.contains("not of")));
    // Another tenant's checkpoint, signed by that tenant's key (noticed by
    // review 21): named as a checkpoint of another log, not only as "no
    // signature from a trusted key".
    let tenant_b = journal_core::Origin::new("audit.test/plane/tenant-b").unwrap();
    let key_b =
        witness::LogKey::new(witness::SignerKey::from_seed(tenant_b.as_str(), witness::ALG_ED25519, [98; 32]).unwrap())
            .unwrap();
    let note_b = journal_core::log::sign_checkpoint(&tenant_b, saved.checkpoint().tree(), &key_b).unwrap();
    let refused = audit::Anchor::saved("b", note_b.note().as_bytes(), &[plane.log_key.verifier_key()], &plane.origin);
    assert!(
        matches!(&refused, Err(audit::AuditError::Anchor { reason, .. })
            if reason.contains("audit.test/plane/tenant-b") && reason.contains(plane.origin.as_str())),
        "{refused:?}"
    );
}
