//! Issue 20 end to end on the `agentplane` binary, on redb and PostgreSQL:
//! an open run (failed, exhausted) cut back or deleted behind the store
//! after an observer saved a checkpoint is found by the audit, classified
//! as a deletion, naming the run and the anchor; the operator's `verify`
//! refuses the store before anything resumes the cut run (R-AUD-3, R-AUD-6).
//! The same cut of a run no anchor covers yet is listed as not checked,
//! never as clean and complete.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::path::{Path, PathBuf};

use journal_core::testkit::TamperAccess;
use journal_core::{ExpectedHead, RunId, Store, TenantId};
use serde_json::Value;

/// Write access to the store and no key: the attacker's seat.
trait Behind: Store + TamperAccess {}
impl<T: Store + TamperAccess> Behind for T {}

enum Backend {
    Redb(PathBuf),
    Postgres(String),
}

impl Backend {
    fn store_arg(&self) -> String {
        match self {
            Self::Redb(path) => path.to_str().unwrap().to_owned(),
            Self::Postgres(url) => url.clone(),
        }
    }

    fn open(&self) -> Box<dyn Behind> {
        match self {
            Self::Redb(path) => Box::new(store_redb::RedbStore::open(path).unwrap()),
            Self::Postgres(url) => Box::new(store_pg::PgStore::open(url).unwrap()),
        }
    }
}

/// A one-tenant plane (`shop`) in `dir` on `backend`, after one demo.
fn make_plane(dir: &Path, postgres: bool) -> Backend {
    ok(dir, &["init", "--tenant-name", "shop"]);
    let backend = if postgres {
        Backend::Postgres(point_at_a_fresh_database(dir))
    } else {
        Backend::Redb(dir.join("agentplane.redb"))
    };
    ok(dir, &["--tenant", "shop", "demo"]);
    backend
}

fn first_run(dir: &Path, outcome: &str) -> RunId {
    let ids = ok(dir, &["--tenant", "shop", "runs", "--outcome", outcome, "--ids"]);
    RunId::new(ids.lines().next().unwrap_or_else(|| panic!("the demo makes a {outcome} run"))).unwrap()
}

/// An auditor in a folder of its own, with the plane's public keys and the
/// checkpoint it saved.
struct Auditor {
    folder: tempfile::TempDir,
    store: String,
    origin: String,
    log_key: String,
    record_key: String,
}

impl Auditor {
    fn saving_a_checkpoint_of(plane: &Path, backend: &Backend) -> Self {
        let keys = json(plane, &["--tenant", "shop", "keys", "--json"]);
        let field = |name: &str| keys[name].as_str().unwrap().to_owned();
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("saved.note"), ok(plane, &["--tenant", "shop", "checkpoint"])).unwrap();
        Self {
            folder,
            store: backend.store_arg(),
            origin: field("origin"),
            log_key: field("log_key"),
            record_key: field("record_key"),
        }
    }

    /// `audit --checkpoint saved.note --require-signature --json`, plus `extra`.
    fn audit(&self, extra: &[&str]) -> (Option<i32>, Value) {
        let mut args = vec![
            "--store",
            &self.store,
            "--origin",
            &self.origin,
            "--tenant",
            "shop",
            "audit",
            "--log-key",
            &self.log_key,
            "--record-key",
            &self.record_key,
            "--require-signature",
            "--checkpoint",
            "saved.note",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = agentplane(self.folder.path(), &args);
        let report = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code(), report)
    }
}

/// The failed run cut back to its third record (its runs row pointed there,
/// its outcome-index row removed), as the issue's attacker did.
fn cut_back_to_three(store: &dyn Behind, run: &RunId) {
    let tenant = TenantId::new("shop").unwrap();
    let rows = store.read_run(&tenant, run).unwrap().rows;
    assert!(rows.len() > 3, "the run has records to cut");
    for row in rows.iter().skip(3) {
        store.delete_record(&tenant, run, row.seq);
    }
    store.set_runs_head(&tenant, run, ExpectedHead { seq: 3, hash: rows[2].hash });
    store.set_outcome_index(&tenant, run, None);
}

fn finding_of<'r>(report: &'r Value, run: &RunId) -> &'r Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["run"] == run.as_str() && finding["code"] == "head_cut_back")
        .unwrap_or_else(|| panic!("no head_cut_back finding for {run}: {report:#}"))
}

fn open_runs_cut_back_or_deleted_after_a_saved_checkpoint_are_found(postgres: bool) {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let backend = make_plane(plane, postgres);
    let auditor = Auditor::saving_a_checkpoint_of(plane, &backend);
    let (code, report) = auditor.audit(&["--assert-complete"]);
    assert_eq!((code, report["verdict"].as_str()), (Some(0), Some("clean")), "{report:#}");

    let failed = first_run(plane, "failed");
    let exhausted = first_run(plane, "exhausted");
    {
        let store = backend.open();
        cut_back_to_three(store.as_ref(), &failed);
        store.delete_run(&TenantId::new("shop").unwrap(), &exhausted);
    }
    let (code, report) = auditor.audit(&["--assert-complete"]);
    assert_eq!((code, report["verdict"].as_str()), (Some(1), Some("findings")), "{report:#}");
    for run in [&failed, &exhausted] {
        let finding = finding_of(&report, run);
        assert_eq!(finding["class"], "deletion", "{finding}");
        assert!(finding["anchors"].as_array().unwrap().iter().any(|a| a == "saved.note"), "{finding}");
    }
    // The operator's own verify refuses the store before a resume runs the
    // cut run's finished effects again.
    let out = agentplane(plane, &["--tenant", "shop", "verify", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let verified: Value = serde_json::from_slice(&out.stdout).unwrap();
    finding_of(&verified, &failed);
}

/// The same cut made to a run admitted after the saved checkpoint: no anchor
/// covers it, so the audit lists the open runs it could not hold to one and
/// `--assert-complete` fails; it is never "clean and complete".
fn a_cut_no_anchor_covers_is_not_checked_never_clean(postgres: bool) {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let backend = make_plane(plane, postgres);
    let auditor = Auditor::saving_a_checkpoint_of(plane, &backend);
    let before: Vec<String> =
        ok(plane, &["--tenant", "shop", "runs", "--outcome", "failed", "--ids"]).lines().map(str::to_owned).collect();
    ok(plane, &["--tenant", "shop", "demo"]);
    let after = ok(plane, &["--tenant", "shop", "runs", "--outcome", "failed", "--ids"]);
    let newer = after.lines().find(|id| !before.iter().any(|old| old == id)).expect("the second demo fails a run");
    cut_back_to_three(backend.open().as_ref(), &RunId::new(newer).unwrap());

    let (code, report) = auditor.audit(&[]);
    assert_ne!(report["verdict"], "clean", "{report:#}");
    let not_checked = report["not_checked"].as_array().unwrap();
    assert!(not_checked.iter().any(|n| n["what"].as_str().unwrap().ends_with("open runs")), "{report:#}");
    assert!(code == Some(0) || code == Some(1), "{report:#}");
    let (code, _) = auditor.audit(&["--assert-complete"]);
    assert_eq!(code, Some(1), "--assert-complete refuses what no anchor covers");
}

#[test]
fn issue_20_open_runs_cut_back_or_deleted_after_a_checkpoint_are_found_on_redb() {
    open_runs_cut_back_or_deleted_after_a_saved_checkpoint_are_found(false);
}

#[test]
fn issue_20_open_runs_cut_back_or_deleted_after_a_checkpoint_are_found_on_postgresql() {
    open_runs_cut_back_or_deleted_after_a_saved_checkpoint_are_found(true);
}

#[test]
fn issue_20_a_cut_no_anchor_covers_is_not_checked_on_redb() {
    a_cut_no_anchor_covers_is_not_checked_never_clean(false);
}

#[test]
fn issue_20_a_cut_no_anchor_covers_is_not_checked_on_postgresql() {
    a_cut_no_anchor_covers_is_not_checked_never_clean(true);
}
