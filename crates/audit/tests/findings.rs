//! Every edit behind the store is found, classified and named: records
//! (edits, deletions, swaps), signatures, and every piece of derived data
//! held to the verified chain (R-AUD-2, R-CHAIN-5, R-SIG-3, R-VER-4).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use audit::{FindingClass, FindingCode, RecordKey};
use journal_core::testkit::TamperAccess;
use journal_core::{ChainHash, ExpectedHead, Outcome, Store, StoredRecord};
use support::*;

fn one_finding(plane: &Plane, code: FindingCode, class: FindingClass, run: &journal_core::RunId) -> audit::Finding {
    let report = plane.audit(&plane.inputs());
    assert_eq!(codes(&report), [code], "{:#?}", report.findings);
    let finding = report.findings[0].clone();
    assert_eq!(finding.class, class);
    assert_eq!(finding.run.as_deref(), Some(run.as_str()), "the finding names the run");
    finding
}

#[test]
fn a_clean_plane_audits_clean_with_everything_counted() {
    let plane = Plane::signed();
    let sealed: Vec<_> = (0..4).map(|n| plane.seal(&format!("job-{n}"))).collect();
    plane.fail("job-open");
    let mut inputs = plane.inputs();
    inputs.require_signature = true;
    // Signed as the plane signs: the open run's head enters the log first.
    inputs.anchors.push(plane.saved("now", &plane.checkpoint_with_heads()));
    let report = plane.audit(&inputs);
    report.assert_complete().unwrap();
    let checked = report.checked;
    // Five leaves: four seals and the heads leaf that covers the open run.
    assert_eq!((checked.runs, checked.seals, checked.inclusions, checked.anchors, checked.heads), (5, 5, 4, 1, 1));
    assert_eq!(checked.records, checked.signatures, "every record's signature verified");
    assert!(checked.records > 30 && checked.derived >= 5 * 4 + 7 && checked.nodes >= 7, "{checked:?}");
    assert_eq!(report.log_size, sealed.len() as u64 + 1);
    // The report is serde: stable snake_case codes and classes.
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["checked"]["inclusions"], 4);
}

#[test]
fn r_chain_5_an_edited_record_is_tamper_naming_run_and_seq() {
    let plane = Plane::signed();
    let run = plane.seal("job-0");
    let row = plane.store.read_run(&plane.tenant, &run).unwrap().rows[4].clone();
    let edited = String::from_utf8(row.bytes.clone()).unwrap().replace("\"tokens\":11", "\"tokens\":1");
    assert_ne!(edited.as_bytes(), row.bytes.as_slice());
    plane.store.overwrite_record_bytes(&plane.tenant, &run, 5, edited.into_bytes());
    let finding = one_finding(&plane, FindingCode::ChainBroken, FindingClass::Tamper, &run);
    assert_eq!(finding.seq, Some(5));
}

#[test]
fn r_chain_5_a_deleted_record_and_swapped_records_are_tamper() {
    let plane = Plane::signed();
    let run = plane.fail("job-deleted");
    plane.store.delete_record(&plane.tenant, &run, 2);
    assert_eq!(one_finding(&plane, FindingCode::ChainBroken, FindingClass::Tamper, &run).seq, Some(2));

    let plane = Plane::signed();
    let run = plane.fail("job-swapped");
    let rows = plane.store.read_run(&plane.tenant, &run).unwrap().rows;
    let (three, four) = (rows[2].clone(), rows[3].clone());
    plane.store.overwrite_row(&plane.tenant, &run, StoredRecord { seq: 3, ..four.clone() });
    plane.store.overwrite_row(&plane.tenant, &run, StoredRecord { seq: 4, ..three });
    assert_eq!(one_finding(&plane, FindingCode::ChainBroken, FindingClass::Tamper, &run).seq, Some(3));
}

#[test]
fn r_aud_2_an_edited_outcome_index_is_derived_data_held_to_the_last_conclusion() {
    let plane = Plane::signed();
    let run = plane.fail("job-failed");
    plane.store.set_outcome_index(&plane.tenant, &run, Some(Outcome::Succeeded));
    let report = plane.audit(&plane.inputs());
    assert!(!report.is_clean());
    for finding in &report.findings {
        assert_eq!((finding.code, finding.class), (FindingCode::OutcomeIndexMismatch, FindingClass::DerivedData));
        assert_eq!(finding.run.as_deref(), Some(run.as_str()));
    }
    assert!(report.findings.iter().any(|f| f.detail.contains("lists it as succeeded")), "{:#?}", report.findings);
}

/// The runs table keeps its own outcome (what `show` and `runs` read), apart
/// from the outcome index: a failed run's row edited to say `succeeded`,
/// with the index left as it was, is held to the last conclusion too.
#[test]
fn r_aud_2_a_runs_row_whose_outcome_was_edited_is_held_to_the_last_conclusion() {
    let plane = Plane::signed();
    let run = plane.seal("job-sealed");
    plane.store.name_outcome(&plane.tenant, &run, "failed");
    // The index says succeeded again: only the runs row lies.
    plane.store.set_outcome_index(&plane.tenant, &run, Some(Outcome::Succeeded));
    let finding = one_finding(&plane, FindingCode::OutcomeIndexMismatch, FindingClass::DerivedData, &run);
    assert!(finding.detail.contains("the runs table says failed"), "{}", finding.detail);
}

#[test]
fn r_run_2_a_cleared_sealed_flag_is_found() {
    let plane = Plane::signed();
    let run = plane.seal("job-0");
    plane.store.set_sealed_flag(&plane.tenant, &run, false);
    let finding = one_finding(&plane, FindingCode::SealedFlagMismatch, FindingClass::DerivedData, &run);
    assert!(finding.detail.contains("accepts appends"), "{}", finding.detail);
}

/// The runs table still lists a run whose every record was deleted: the
/// streamed snapshot gives no records for it, and the audit still holds its
/// row to its (now empty) chain (R-AUD-8).
#[test]
fn r_aud_8_a_run_whose_records_were_all_deleted_is_found_by_its_runs_row() {
    let plane = Plane::signed();
    let kept = plane.seal("job-kept");
    let run = plane.fail("job-emptied");
    let records = plane.store.read_run(&plane.tenant, &run).unwrap().rows.len() as u64;
    for seq in 1..=records {
        plane.store.delete_record(&plane.tenant, &run, seq);
    }
    let report = plane.audit(&plane.inputs());
    let named: Vec<FindingCode> =
        report.findings.iter().filter(|f| f.run.as_deref() == Some(run.as_str())).map(|f| f.code).collect();
    assert!(named.contains(&FindingCode::RunsHeadMismatch), "{:#?}", report.findings);
    assert!(named.contains(&FindingCode::OutcomeIndexMismatch), "{:#?}", report.findings);
    let kept_records = plane.store.read_run(&plane.tenant, &kept).unwrap().rows.len() as u64;
    assert_eq!(report.checked.records, kept_records, "only the kept run's records were there to check");
}

/// More runs than the workers' channel holds, and a progress report that
/// panics: the audit still answers, and whole (a stopped worker would have
/// left the snapshot's reader waiting forever).
#[test]
fn an_audit_whose_progress_report_panics_still_answers_for_every_run() {
    let plane = Plane::unsigned();
    let runs = 1_000;
    for n in 0..runs {
        plane.fail(&format!("job-{n}"));
    }
    let report =
        audit::audit_with_progress(plane.store.as_ref(), &plane.inputs(), &|_, _| panic!("a broken progress bar"))
            .unwrap();
    assert_eq!(report.checked.runs, runs);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
}

#[test]
fn a_moved_runs_head_is_derived_data() {
    let plane = Plane::signed();
    let run = plane.fail("job-0");
    let rows = plane.store.read_run(&plane.tenant, &run).unwrap().rows;
    plane.store.set_runs_head(&plane.tenant, &run, ExpectedHead { seq: 3, hash: rows[2].hash });
    one_finding(&plane, FindingCode::RunsHeadMismatch, FindingClass::DerivedData, &run);
}

#[test]
fn an_edited_seal_leaf_is_found_against_the_leaf_the_chain_gives() {
    let plane = Plane::signed();
    plane.seal("job-0");
    let run = plane.seal("job-1");
    let seal = plane.store.seal_of(&plane.tenant, &run).unwrap().unwrap();
    let mut leaf = seal.leaf_bytes.clone();
    *leaf.last_mut().unwrap() = b'\n';
    leaf.insert(0, b'x');
    plane.store.overwrite_seal_leaf(&plane.tenant, &run, leaf);
    let report = plane.audit(&plane.inputs());
    assert!(report.with_code(FindingCode::SealLeafMismatch).any(|f| f.run.as_deref() == Some(run.as_str())));
    // The cached nodes still hold the old leaf: the rebuild disagrees with them too.
    assert!(report.with_code(FindingCode::CachedNodesMismatch).count() == 1, "{:#?}", report.findings);
}

#[test]
fn a_redirected_idempotency_key_is_found() {
    let plane = Plane::signed();
    let first = plane.seal("job-0");
    let second = plane.seal("job-1");
    plane.store.set_idempotency(&plane.tenant, "job-0", &second);
    let report = plane.audit(&plane.inputs());
    // Both ways (issue 21): the run whose key was taken, and the row that
    // points the key at a run whose admission does not carry it.
    assert_eq!(codes(&report), [FindingCode::IdempotencyIndexMismatch, FindingCode::IndexWithoutRun]);
    let (taken, row) = (&report.findings[0], &report.findings[1]);
    assert_eq!((taken.class, taken.run.as_deref()), (FindingClass::DerivedData, Some(first.as_str())));
    assert_eq!((row.class, row.run.as_deref()), (FindingClass::DerivedData, Some(second.as_str())));
    assert!(taken.detail.contains("\"job-0\"") && row.detail.contains("\"job-0\""), "{report:#?}");
}

#[test]
fn r_log_7_an_edited_cached_node_is_found_by_the_rebuild_never_trusted() {
    let plane = Plane::signed();
    for n in 0..4 {
        plane.seal(&format!("job-{n}"));
    }
    plane.store.overwrite_log_node(&plane.tenant, tlog::NodeId::new(1, 1), tlog::NodeHash::from_hash_bytes([7; 32]));
    let report = plane.audit(&plane.inputs());
    assert_eq!(codes(&report), [FindingCode::CachedNodesMismatch], "{:#?}", report.findings);
    assert!(report.findings[0].detail.contains("level 1 index 1"), "{}", report.findings[0].detail);
    assert_eq!(report.checked.inclusions, 4, "inclusion is proven in the rebuild, not the cache");
}

/// R-AUD-8, R-LOG-7: every stored log node is held to the rebuild, those
/// of no complete subtree of the log included. A node planted for a position
/// not sealed yet (no key needed) was never read: the audit said clean over
/// a row added behind the plane, and on PostgreSQL, whose sealing append
/// inserts that node, every later seal of the tenant would fail on it.
#[test]
fn r_log_7_a_node_planted_beyond_the_log_is_found() {
    let plane = Plane::signed();
    for n in 0..3 {
        plane.seal(&format!("job-{n}"));
    }
    assert!(plane.audit(&plane.inputs()).is_clean());
    plane.store.overwrite_log_node(&plane.tenant, tlog::NodeId::new(0, 3), tlog::NodeHash::from_hash_bytes([7; 32]));
    let report = plane.audit(&plane.inputs());
    assert_eq!(codes(&report), [FindingCode::CachedNodesMismatch], "{:#?}", report.findings);
    assert!(report.findings[0].detail.contains("level 0 index 3"), "{}", report.findings[0].detail);
}

#[test]
fn r_sig_3_strict_audits_name_unsigned_records_and_untrusted_keys() {
    let plane = Plane::unsigned();
    let run = plane.seal("job-0");
    let other = journal_core::Ed25519Signer::from_seed("spiffe://audit.test/other", [5; 32]);
    let mut inputs = plane.inputs();
    inputs.record_keys = vec![RecordKey { key_id: "spiffe://audit.test/other".into(), public_key: other.public_key() }];
    let lenient = plane.audit(&inputs);
    assert!(lenient.is_clean(), "{:#?}", lenient.findings);
    assert!(lenient.not_checked.iter().any(|n| n.what.contains("authorship")), "{:?}", lenient.not_checked);
    inputs.require_signature = true;
    let strict = plane.audit(&inputs);
    assert_eq!(codes(&strict), [FindingCode::UnsignedRecord], "{:#?}", strict.findings);
    assert_eq!(strict.findings[0].run.as_deref(), Some(run.as_str()));
    assert_eq!(strict.findings[0].seq, Some(1));

    let signed = Plane::signed();
    signed.seal("job-0");
    let mut inputs = signed.inputs();
    inputs.record_keys = vec![RecordKey { key_id: "spiffe://audit.test/other".into(), public_key: other.public_key() }];
    inputs.require_signature = true;
    let strict = signed.audit(&inputs);
    assert_eq!(codes(&strict), [FindingCode::UntrustedKey], "{:#?}", strict.findings);
    assert!(strict.findings[0].detail.contains("spiffe://audit.test/runtime"), "names the key id");
    assert_eq!(strict.findings[0].class, FindingClass::Signature);
}

#[test]
fn r_sig_2_a_record_resigned_by_an_impostor_fails_the_trusted_key() {
    let plane = Plane::signed();
    let run = plane.seal("job-0");
    let rows = plane.store.read_run(&plane.tenant, &run).unwrap().rows;
    let impostor = journal_core::Ed25519Signer::from_seed("spiffe://audit.test/runtime", [66; 32]);
    let forged =
        StoredRecord { signature: Some(journal_core::Signer::sign(&impostor, &rows[3].hash)), ..rows[3].clone() };
    plane.store.overwrite_row(&plane.tenant, &run, forged);
    let finding = one_finding(&plane, FindingCode::BadSignature, FindingClass::Signature, &run);
    assert_eq!(finding.seq, Some(4));
}

#[test]
fn r_ver_4_a_record_from_a_newer_writer_is_build_skew_with_its_remedy_never_tamper() {
    let plane = Plane::unsigned();
    let run = plane.fail("job-0");
    let rows = plane.store.read_run(&plane.tenant, &run).unwrap().rows;
    // A newer build appended a record with a field this build does not know:
    // the chain is intact (it rehashed honestly), the shape is not readable here.
    let last = rows.last().unwrap().clone();
    let bytes = String::from_utf8(last.bytes.clone())
        .unwrap()
        .replace("\"version\":\"0.1.0\"}", "\"version\":\"9.9.9\"}")
        .replacen("\"body\":", "\"trace\":\"abc\",\"body\":", 1)
        .into_bytes();
    let hash = ChainHash::link(&last.prev_hash, &bytes);
    plane.store.overwrite_row(&plane.tenant, &run, StoredRecord { bytes, hash, ..last.clone() });
    plane.store.set_runs_head(&plane.tenant, &run, ExpectedHead { seq: last.seq, hash });
    let mut inputs = plane.inputs();
    inputs.reader = journal_core::Build::new("agentplane-cli", "0.1.0");
    let report = plane.audit(&inputs);
    assert_eq!(codes(&report), [FindingCode::BuildSkew], "{:#?}", report.findings);
    let finding = &report.findings[0];
    assert_eq!(finding.class, FindingClass::BuildSkew);
    assert!(report.only_build_skew());
    let remedy = finding.remedy.as_deref().unwrap();
    assert!(remedy.contains("9.9.9") && remedy.contains("not agentplane-cli 0.1.0"), "{remedy}");
}
