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
/// The last build of storage layout 1 (records kept as written).
const LAYOUT_1_FIXTURE: &str = "tests/fixtures/plane-8112791";
const FILES: [&str; 4] = ["agentplane.redb", "agentplane.toml", "agentplane.key", "agentplane.highwater"];

/// A copy of the fixture (the fixture itself is never opened).
fn copy_of_fixture() -> (tempfile::TempDir, PathBuf) {
    copy_of(FIXTURE)
}

/// A copy of the fixture at `fixture`.
fn copy_of(fixture: &str) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let plane = root.path().join("plane");
    std::fs::create_dir(&plane).unwrap();
    for file in FILES {
        std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(fixture).join(file), plane.join(file)).unwrap();
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
    // No order is kept yet: a page is read from each run's stored admission.
    let before_the_writer = ids(&ok(&plane, &["runs", "--limit", "20", "--ids"]));
    let mut listed = before_the_writer.clone();
    listed.sort();
    let mut expected = all.clone();
    expected.sort();
    assert_eq!(listed, expected, "a page of an older file lists its runs before any writer");

    // The first writing command of this build fills the order and the index.
    let as_written = std::fs::read(plane.join("agentplane.redb")).unwrap();
    ok(&plane, &["checkpoint"]);
    assert_ne!(as_written, std::fs::read(plane.join("agentplane.redb")).unwrap(), "the first writer migrated the file");
    let paged = ids(&ok(&plane, &["runs", "--limit", "20", "--ids"]));
    let mut sorted = paged.clone();
    sorted.sort();
    assert_eq!(sorted, expected, "every run of the older file is in the order, once");
    assert_eq!(paged, before_the_writer, "the order read before the writer is the order it filled");
    for run in &open {
        let proved = ok(&plane, &["prove", run]);
        assert!(proved.contains("is not sealed") && proved.contains("heads leaf"), "{proved}");
    }
    let verified = ok(&plane, &["verify"]);
    assert!(verified.contains("clean and complete"), "{verified}");
    assert!(!verified.contains("NOT CHECKED the admission order"), "{verified}");
}

/// R-STORE-3, R-UX-3 (review 35's note): a migration that runs out of room
/// (every file it writes limited to 8 KiB, SIGXFSZ ignored) exits 2 and
/// says it did not finish, not that the file is unreadable (which sent an
/// operator after a store that reads as it did); the store reads as before
/// and migrates once there is room.
#[cfg(unix)]
#[test]
fn r_store_3_a_migration_out_of_room_says_so_and_the_store_reads_as_before() {
    let (_root, plane) = copy_of(LAYOUT_1_FIXTURE);
    let listed = ok(&plane, &["runs", "--json"]);
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"trap "" XFSZ; ulimit -f 8; exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_agentplane"))
        .arg("migrate")
        .current_dir(&plane)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("`agentplane migrate` did not finish"), "{said}");
    assert!(!said.contains("not a readable agentplane store"), "{said}");
    assert_eq!(ok(&plane, &["runs", "--json"]), listed, "the store reads as it did");
    let migrated = agentplane(&plane, &["migrate"]);
    assert!(String::from_utf8_lossy(&migrated.stderr).contains("migrated from 1 to 2"), "once there is room");
}

/// Issue 25 (R-STORE-3): `agentplane migrate` moves a plane of storage
/// layout 1 (each record's bytes as written; the fixtures of the two last
/// builds that wrote it) to layout 2 (compressed). Before it, this build
/// reads and writes the older file as it is; the migration keeps the file
/// as it was, byte for byte, beside it; after it every run reads exactly as
/// before, the audit stays as clean, a writer goes on, and a second
/// migration changes nothing.
#[test]
fn r_store_3_migrate_moves_a_layout_1_plane_to_compressed_records_and_keeps_the_way_back() {
    for fixture in [LAYOUT_1_FIXTURE, FIXTURE] {
        let (_root, plane) = copy_of(fixture);
        let store = plane.join("agentplane.redb");
        // Read, then written as it is: this build's first writer on the old layout.
        ok(&plane, &["checkpoint"]);
        let listed = ok(&plane, &["runs", "--json"]);
        let shown: Vec<String> =
            ids(&ok(&plane, &["runs", "--ids"])).iter().map(|run| ok(&plane, &["show", run, "--json"])).collect();
        assert_eq!(shown.len(), 9, "{fixture}: the demo's nine runs");
        let verified = ok(&plane, &["verify", "--require-signature"]);
        assert!(verified.contains("clean and complete"), "{fixture}: {verified}");
        let as_it_was = std::fs::read(&store).unwrap();

        let migrated = agentplane(&plane, &["migrate"]);
        let said = String::from_utf8_lossy(&migrated.stderr).into_owned();
        assert_eq!(migrated.status.code(), Some(0), "{fixture}: {said}");
        assert!(said.contains("storage layout migrated from 1 to 2"), "{fixture}: {said}");
        let backup = plane.join("agentplane.redb.layout1");
        assert!(said.contains("kept in agentplane.redb.layout1"), "{fixture}: the way back is named: {said}");
        // And what going back costs (review 85's note).
        assert!(said.contains("Going back loses what is written from now on"), "{fixture}: {said}");
        assert_ne!(std::fs::read(&store).unwrap(), as_it_was, "{fixture}: the file was migrated");
        // The way back holds every run as it was, and is still of layout 1.
        let old = backup.to_str().unwrap();
        assert_eq!(ok(&plane, &["--store", old, "runs", "--json"]), listed, "{fixture}");
        let shown_back: Vec<String> = ids(&ok(&plane, &["--store", old, "runs", "--ids"]))
            .iter()
            .map(|run| ok(&plane, &["--store", old, "show", run, "--json"]))
            .collect();
        assert_eq!(shown_back, shown, "{fixture}: the way back reads as the file did");
        let again = agentplane(&plane, &["--store", old, "migrate"]);
        assert!(String::from_utf8_lossy(&again.stderr).contains("migrated from 1 to 2"), "{fixture}: layout 1");

        assert_eq!(ok(&plane, &["runs", "--json"]), listed, "{fixture}");
        let shown_after: Vec<String> =
            ids(&ok(&plane, &["runs", "--ids"])).iter().map(|run| ok(&plane, &["show", run, "--json"])).collect();
        assert_eq!(shown_after, shown, "{fixture}: every run reads exactly as before");
        assert_eq!(ok(&plane, &["verify", "--require-signature"]), verified, "{fixture}");

        let again = agentplane(&plane, &["migrate"]);
        assert_eq!(again.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&again.stderr).contains("already"), "{fixture}");
        // A writer of layout 2 goes on: the demo's open runs are concluded by a sweep round's checkpoint.
        ok(&plane, &["checkpoint"]);
        assert!(ok(&plane, &["verify", "--require-signature"]).contains("clean and complete"), "{fixture}");
    }
}

/// R-STORE-3 and R-VER-4 at the command line: a file of a storage layout
/// newer than this build's is build skew (exit 3, `build_skew`) for the
/// commands that read, write, migrate or compact it, and is left untouched.
#[test]
fn r_store_3_a_newer_layout_is_build_skew_for_every_command() {
    let (_root, plane) = copy_of(LAYOUT_1_FIXTURE);
    ok(&plane, &["migrate"]);
    let store = plane.join("agentplane.redb");
    {
        let db = redb::Database::open(&store).unwrap();
        let txn = db.begin_write().unwrap();
        let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
        txn.open_table(meta).unwrap().insert("layout", 3).unwrap();
        txn.commit().unwrap();
    }
    let as_it_was = std::fs::read(&store).unwrap();
    for args in [&["runs"][..], &["verify"], &["checkpoint"], &["compact"], &["migrate"], &["runs", "--json"]] {
        let said = fails(&plane, args, 3);
        assert!(said.contains("storage layout 3"), "{args:?}: {said}");
        assert!(std::fs::read(&store).unwrap() == as_it_was, "{args:?} left the file byte for byte as it was");
    }
}
