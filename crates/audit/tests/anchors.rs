//! R-AUD-9: an anchor the auditor named that cannot be read or verified fails
//! the audit (`anchor_unavailable`), unless the auditor allows it, and then it
//! is `not_checked`; a witness without the monitor endpoint is `not_checked`.
//! Witnesses are real servers over real TCP, the store a redb file on disk.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use std::time::{Duration, Instant};

use audit::{Anchor, AnchorStatus, AuditReport, FindingClass, FindingCode, Verdict};
use support::{Plane, TestWitness, http};
use witness::{ALG_COSIGNATURE_V1, Checkpoint, Cosigner, SignerKey, TrustedWitness};

fn cosigner() -> Cosigner {
    Cosigner::new(SignerKey::from_seed("audit.test/w1", ALG_COSIGNATURE_V1, [21; 32]).unwrap()).unwrap()
}

fn trusted() -> Vec<TrustedWitness> {
    vec![TrustedWitness::new(cosigner().verifier_key()).unwrap()]
}

fn plane() -> Plane {
    let plane = Plane::signed();
    for n in 0..3 {
        plane.seal(&format!("job-{n}"));
    }
    plane
}

/// The audit with one witness anchor at `url`, allowed to be unavailable or not.
fn audit_with(plane: &Plane, url: &str, allow: bool, timeout: Duration) -> AuditReport {
    let mut inputs = plane.inputs();
    inputs.anchors.push(Anchor::witness_with_timeout(url, trusted(), timeout).unwrap());
    inputs.allow_unavailable_anchor = allow;
    plane.audit(&inputs)
}

/// Without the flag: one `anchor_unavailable` finding naming the anchor and
/// why. With it: no finding, `not_checked` names it.
fn assert_fails_unless_allowed(plane: &Plane, url: &str, why: &str, timeout: Duration) {
    let label = url.trim_end_matches('/');
    let failed = audit_with(plane, url, false, timeout);
    assert_eq!(failed.verdict(), Verdict::Findings);
    let [finding] = failed.findings.as_slice() else { panic!("{:#?}", failed.findings) };
    assert_eq!((finding.code, finding.class), (FindingCode::AnchorUnavailable, FindingClass::AnchorUnavailable));
    assert_eq!(finding.anchors, [label]);
    assert!(finding.detail.contains(label) && finding.detail.contains(why), "{}", finding.detail);
    assert_eq!(failed.anchors[0].status, AnchorStatus::Unavailable);
    assert_eq!(failed.checked.anchors, 0);

    let allowed = audit_with(plane, url, true, timeout);
    assert!(allowed.is_clean(), "{:#?}", allowed.findings);
    assert_eq!(allowed.verdict(), Verdict::Incomplete);
    let named = allowed.not_checked.iter().find(|n| n.what == format!("anchor {label}")).expect("not_checked names it");
    assert!(named.why.contains(why), "{}", named.why);
    assert_eq!(allowed.anchors[0].status, AnchorStatus::NotChecked);
    assert!(allowed.assert_complete().is_err());
}

#[test]
fn r_aud_9_an_unreachable_witness_fails_the_audit_unless_allowed() {
    let plane = plane();
    assert_fails_unless_allowed(&plane, &http::closed(), "cannot reach witness", Duration::from_secs(5));
    // The discard port the issue names.
    assert_fails_unless_allowed(&plane, "http://127.0.0.1:9", "cannot reach witness", Duration::from_secs(5));
}

#[test]
fn r_aud_9_a_witness_that_never_answers_times_out_and_fails_the_audit() {
    let plane = plane();
    let url = http::silent();
    let started = Instant::now();
    assert_fails_unless_allowed(&plane, &url, "timed out", Duration::from_millis(500));
    assert!(started.elapsed() < Duration::from_secs(8), "each read waited its timeout only: {:?}", started.elapsed());
}

#[test]
fn r_aud_9_a_lying_witness_whose_cosignature_does_not_verify_fails_the_audit() {
    let plane = plane();
    let signed = plane.checkpoint();
    // The trusted witness's name and key id, over another checkpoint: the
    // line does not verify over this one.
    let other = Checkpoint::new(&plane.origin, tlog::Tree::empty()).to_text();
    let line = cosigner().cosign(&other, 1_700_000_000).unwrap();
    let url = http::canned(200, signed.cosigned_note([&line]));
    assert_fails_unless_allowed(&plane, &url, "does not verify", Duration::from_secs(5));
    // A 5xx is unavailable too, and what it said is quoted.
    assert_fails_unless_allowed(
        &plane,
        &http::canned(503, "busy\n".into()),
        "unavailable (503: \"busy",
        Duration::from_secs(5),
    );
}

/// R-AUD-9: a witness's cosignature/v1 does not cover the log's signature,
/// so a lying witness can cosign, and serve, a tree the log never signed. The
/// auditor holds the log key: such an anchor is that witness's bad answer
/// (`anchor_unavailable`, naming why), never a log that shrank (it was
/// `log_shrank`, a deletion, blaming an honest log).
#[test]
fn r_aud_9_a_witness_serving_a_tree_the_log_never_signed_fails_as_unavailable_not_as_a_shrunk_log() {
    let plane = plane();
    let invented = Checkpoint::new(&plane.origin, tlog::Tree::new(1_000_000, tlog::RootHash::empty())).to_text();
    let line = cosigner().cosign(&invented, 1_700_000_000).unwrap();
    let url = http::canned(200, witness::assemble(&invented, [&line]));
    let report = audit_with(&plane, &url, false, Duration::from_secs(5));
    assert!(!support::codes(&report).contains(&FindingCode::LogShrank), "{:#?}", report.findings);
    assert_fails_unless_allowed(&plane, &url, "not signed by the log", Duration::from_secs(5));
}

#[test]
fn r_aud_9_a_witness_without_the_monitor_endpoint_is_not_checked_not_cosigned_nothing() {
    let plane = plane();
    // litewitness and transparency-dev/witness: Go's 404.
    let url = http::canned(404, "404 page not found\n".into());
    let report = audit_with(&plane, &url, false, Duration::from_secs(5));
    assert!(report.is_clean(), "a witness without the endpoint is no failure: {:#?}", report.findings);
    let [named] = report.not_checked.iter().filter(|n| n.what.starts_with("anchor ")).collect::<Vec<_>>()[..] else {
        panic!("{:#?}", report.not_checked)
    };
    assert!(named.why.contains("serves no monitor endpoint"), "{}", named.why);
    assert!(!named.why.contains("cosigned nothing"), "{}", named.why);
    assert_eq!(report.anchors[0].status, AnchorStatus::NotChecked);
    assert_eq!(report.verdict(), Verdict::Incomplete);

    // Our witness, which has cosigned nothing yet, says so.
    let witness = TestWitness::start(&plane, "audit.test/w2", 22);
    let mut inputs = plane.inputs();
    inputs.anchors.push(witness.anchor());
    let report = plane.audit(&inputs);
    assert!(report.is_clean(), "{:#?}", report.findings);
    assert!(
        report.not_checked.iter().any(|n| n.why.contains("has cosigned nothing for origin")),
        "{:#?}",
        report.not_checked
    );
    // Once it has cosigned, it is an anchor the log is held to.
    plane.submit(&witness);
    let report = plane.audit(&inputs);
    assert_eq!(report.anchors[0].status, AnchorStatus::Held);
    assert_eq!(report.anchors[0].size, Some(3));
    assert_eq!(report.checked.anchors, 1);
}

#[test]
fn r_aud_10_a_witness_anchor_trusting_one_key_twice_is_refused() {
    let w = cosigner();
    let public: [u8; 32] = w.verifier_key().public_key().try_into().unwrap();
    let alias = witness::VerifierKey::ed25519("audit.test/w1-alias", ALG_COSIGNATURE_V1, public).unwrap();
    let keys = vec![TrustedWitness::new(w.verifier_key()).unwrap(), TrustedWitness::new(alias).unwrap()];
    let err = Anchor::witness("http://127.0.0.1:9", keys).unwrap_err();
    assert!(err.to_string().contains("audit.test/w1+") && err.to_string().contains("audit.test/w1-alias+"), "{err}");
}

#[test]
fn r_aud_1_the_origin_is_the_log_keys_name() {
    let plane = plane();
    let keys = [plane.log_key.verifier_key()];
    assert_eq!(audit::origin_of_log_keys(None, &keys).unwrap(), plane.origin);
    assert_eq!(audit::origin_of_log_keys(Some(support::ORIGIN), &keys).unwrap(), plane.origin);
    let err = audit::origin_of_log_keys(Some("audit.test/plane/other"), &keys).unwrap_err();
    let audit::AuditError::OriginMismatch { origin, log_key } = &err else { panic!("{err:?}") };
    assert_eq!(origin, "audit.test/plane/other");
    assert!(log_key.starts_with(support::ORIGIN), "{log_key}");
    assert!(matches!(audit::origin_of_log_keys(None, &[]), Err(audit::AuditError::NoOrigin)));
}

/// R-AUD-7, R-AUD-3: a live plane keeps sealing and its sweep keeps the
/// witness cosigning while the audit runs. The audit read the store in one
/// snapshot, verified every run, and only then asked the witness what it
/// holds: a witness that cosigned a larger tree after the snapshot was
/// taken (the plane signs only what it committed, so an honest one) was
/// `log_shrank`, a deletion, against an honest plane. Each witness is asked
/// before the store is read: what it holds then, the store holds too.
#[test]
fn r_aud_7_a_witness_that_cosigns_while_the_store_is_read_is_no_shrunk_log() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use journal_core::Store;
    use journal_core::testkit_faults::{RoutedStore, StoreCall};

    let plane = Arc::new(plane());
    let witness = Arc::new(TestWitness::start(&plane, "audit.test/w2", 22));
    plane.submit(&witness);
    let moved = Arc::new(AtomicBool::new(false));
    let live = {
        let (plane, witness, moved) = (Arc::clone(&plane), Arc::clone(&witness), Arc::clone(&moved));
        RoutedStore::new(Box::new(move |call| match call {
            // The audit's one snapshot: read now, then the plane seals a run
            // and its sweep has the witness cosign the larger log.
            StoreCall::SnapshotStreamed if !moved.swap(true, Ordering::SeqCst) => {
                let snapshot = plane.store.snapshot(&plane.tenant).unwrap();
                plane.seal("job-during-the-audit");
                plane.submit(&witness);
                Arc::new(snapshot) as Arc<dyn Store>
            }
            _ => Arc::clone(&plane.store) as Arc<dyn Store>,
        }))
    };
    let mut inputs = plane.inputs();
    inputs.anchors.push(witness.anchor());
    let report = audit::audit(&live, &inputs).unwrap();
    assert!(moved.load(Ordering::SeqCst), "the audit read one snapshot");
    assert!(report.is_clean(), "an honest live plane audited with findings: {:#?}", report.findings);
    assert_eq!(report.anchors[0].status, AnchorStatus::Held);
    assert_eq!((report.log_size, report.anchors[0].size), (3, Some(3)));
    // The next audit holds the store to the larger tree the witness holds now.
    let report = plane.audit(&inputs);
    assert!(report.is_clean(), "{:#?}", report.findings);
    assert_eq!((report.log_size, report.anchors[0].size), (4, Some(4)));
}
