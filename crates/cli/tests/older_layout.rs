//! A plane written by an older build, kept as a fixture
//! (`tests/fixtures/plane-74c9e4e`, see its SOURCE.md), opened by this one
//! (issue 25: "a migration test opens a file written by the previous
//! layout"; R-STORE-3). That build kept neither the admission order nor the
//! newest-heads index: read commands work on it and say what they cannot
//! check yet; the first command that writes fills both, after which every
//! read is answered from them and the audit is complete.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::path::{Path, PathBuf};

const FIXTURE: &str = "tests/fixtures/plane-74c9e4e";
const FILES: [&str; 4] = ["agentplane.redb", "agentplane.toml", "agentplane.key", "agentplane.highwater"];

/// A copy of the fixture (the fixture itself is never opened).
fn copy_of_fixture() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let plane = root.path().join("plane");
    std::fs::create_dir(&plane).unwrap();
    for file in FILES {
        std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE).join(file), plane.join(file)).unwrap();
    }
    // Git keeps no file modes: the key file is the plane's own again.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(plane.join("agentplane.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    (root, plane)
}

fn ids(out: &str) -> Vec<String> {
    out.lines().map(str::to_owned).collect()
}

#[test]
fn r_store_3_a_plane_of_the_previous_layout_reads_audits_and_is_filled_by_its_first_writer() {
    let (_root, plane) = copy_of_fixture();
    let all = ids(&ok(&plane, &["runs", "--ids"]));
    assert_eq!(all.len(), 9, "the demo's nine runs: {all:?}");
    let open: Vec<String> = json(&plane, &["runs", "--json"])
        .as_array()
        .unwrap()
        .iter()
        .filter(|run| run["sealed"] == false)
        .map(|run| run["run"].as_str().unwrap().to_owned())
        .collect();
    assert!(!open.is_empty(), "the demo leaves runs open (failed, exhausted, quarantined, withheld)");

    // Read-only, before any writer of this build: the chains, signatures,
    // log and anchors check; the admission order is said to be unchecked.
    let verified = ok(&plane, &["verify"]);
    assert!(verified.contains("NOT CHECKED the admission order"), "{verified}");
    assert!(verified.contains("0 findings"), "{verified}");
    assert!(ids(&ok(&plane, &["runs", "--limit", "20", "--ids"])).is_empty(), "no order is kept yet");

    // The first writing command of this build fills the order and the index.
    let as_written = std::fs::read(plane.join("agentplane.redb")).unwrap();
    ok(&plane, &["checkpoint"]);
    assert_ne!(as_written, std::fs::read(plane.join("agentplane.redb")).unwrap(), "the first writer migrated the file");
    let paged = ids(&ok(&plane, &["runs", "--limit", "20", "--ids"]));
    let mut sorted = paged.clone();
    sorted.sort();
    let mut expected = all.clone();
    expected.sort();
    assert_eq!(sorted, expected, "every run of the older file is in the order, once");
    for run in &open {
        let proved = ok(&plane, &["prove", run]);
        assert!(proved.contains("is not sealed") && proved.contains("heads leaf"), "{proved}");
    }
    let verified = ok(&plane, &["verify"]);
    assert!(verified.contains("clean and complete"), "{verified}");
    assert!(!verified.contains("NOT CHECKED the admission order"), "{verified}");
}
