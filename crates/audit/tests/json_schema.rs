//! R-AUD-9: the JSON report has the schema the README documents, with a
//! verdict; real reports (clean, incomplete, findings, every anchor status)
//! are held to it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use std::path::PathBuf;
use std::time::Duration;

use audit::Anchor;
use journal_core::testkit::TamperAccess;
use serde_json::Value;
use support::{Plane, TestWitness, http, schema};

fn readme() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md")
}

fn json(report: &audit::AuditReport) -> Value {
    let value = serde_json::to_value(report).unwrap();
    schema::assert_matches(&readme(), &value);
    value
}

#[test]
fn r_aud_9_real_reports_match_the_documented_json_schema() {
    let plane = Plane::signed();
    let mut runs = Vec::new();
    for n in 0..4 {
        runs.push(plane.seal(&format!("job-{n}")));
    }
    plane.fail("open-one");
    // Signed as the plane signs: the open run's head enters the log first.
    let saved = plane.checkpoint_with_heads();
    let witness = TestWitness::start(&plane, "audit.test/w1", 31);
    plane.submit(&witness);

    // Clean and complete: a saved anchor and a witness, both held.
    let mut inputs = plane.inputs();
    inputs.require_signature = true;
    inputs.anchors.push(plane.saved("saved.note", &saved));
    inputs.anchors.push(witness.anchor());
    let clean = json(&plane.audit(&inputs));
    assert_eq!(clean["verdict"], "clean", "{clean:#}");
    assert_eq!(clean["tenant"], "tenant-a");
    assert_eq!(clean["origin"], support::ORIGIN);
    assert_eq!(clean["log"]["size"], 5, "four seals and the heads leaf");
    assert_eq!(clean["anchors"][0]["kind"], "saved");
    assert_eq!(clean["anchors"][1]["kind"], "witness");
    assert_eq!(clean["anchors"][1]["status"], "held");
    assert_eq!(clean["anchors"][1]["root"], clean["log"]["root"], "one hash encoding across the report");
    assert_eq!(clean["checked"]["anchors"], 2);

    // Incomplete: no anchor; an unreachable witness allowed.
    let mut inputs = plane.inputs();
    inputs.anchors.push(
        Anchor::witness_with_timeout(&http::closed(), vec![witness.trusted.clone()], Duration::from_secs(5)).unwrap(),
    );
    inputs.allow_unavailable_anchor = true;
    let incomplete = json(&plane.audit(&inputs));
    assert_eq!(incomplete["verdict"], "incomplete", "{incomplete:#}");
    assert_eq!(incomplete["anchors"][0]["status"], "not_checked");
    assert!(incomplete["anchors"][0]["size"].is_null());

    // Findings: a sealed run deleted behind the store, an unreachable witness.
    plane.store.delete_run(&plane.tenant, &runs[3]);
    inputs.allow_unavailable_anchor = false;
    inputs.anchors.push(plane.saved("saved.note", &saved));
    let findings = json(&plane.audit(&inputs));
    assert_eq!(findings["verdict"], "findings", "{findings:#}");
    let classes: Vec<&str> =
        findings["findings"].as_array().unwrap().iter().map(|f| f["class"].as_str().unwrap()).collect();
    assert!(classes.contains(&"anchor_unavailable") && classes.contains(&"deletion"), "{classes:?}");
    assert_eq!(findings["anchors"][0]["status"], "unavailable");
    assert_eq!(findings["anchors"][1]["status"], "failed");
    let unavailable =
        findings["findings"].as_array().unwrap().iter().find(|f| f["code"] == "anchor_unavailable").unwrap();
    assert_eq!(unavailable["anchor"], findings["anchors"][0]["label"]);
}
