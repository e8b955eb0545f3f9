//! R-EXP-1, R-COVER-2: `export_run` of a redb file damaged behind the
//! plane refuses with a typed error naming the damage, before it assembles
//! anything (no text to write): a run cut back or rewritten below the head a
//! heads leaf covers, a heads entry naming an older head than its leaf
//! holds, a stored cosigned checkpoint of another origin, a sealed run whose
//! seal lookup was cleared.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::export::export_run;
use journal_core::store::SignedTree;
use journal_core::testkit::{TamperAccess as _, origin, tenant};
use journal_core::{
    Admission, AdmitRequest, Budget, ChainCheck, ChainHash, ExpectedHead, JournalError, LogView, RunId, Runtime,
    RuntimeBuilder, Store as _, StoredRecord, TamperKind, Upcasters, VerifyOptions,
};
use store_redb::RedbStore;
use witness::{ALG_ED25519, LogKey, SignerKey};

/// A redb plane of one sealed and one open run, both covered by a signed checkpoint.
struct Plane {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    store: Arc<RedbStore>,
    key: LogKey,
    sealed: RunId,
    open: RunId,
    runtime: Option<Runtime>,
}

fn plane() -> Plane {
    let plane = unsigned_plane();
    journal_core::log::sign_current_head(plane.store.as_ref(), &tenant(), &origin(), &plane.key, None).unwrap();
    plane
}

/// [`plane`] before any checkpoint is signed: the open run's head entered
/// in a heads leaf, no tree signed yet.
fn unsigned_plane() -> Plane {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let (tenant, origin) = (tenant(), origin());
    let store = Arc::new(RedbStore::create(&path).unwrap());
    let key = LogKey::new(SignerKey::from_seed(origin.as_str(), ALG_ED25519, [9; 32]).unwrap()).unwrap();
    let runtime = RuntimeBuilder::new(store.clone()).tenant(tenant.clone(), origin.clone(), None).build().unwrap();
    let [sealed, open] = ["sealed", "open"].map(|idem| {
        let request = AdmitRequest { idempotency_key: idem.into(), plan: vec![], budget: Budget::default() };
        let Admission::New(run) = runtime.admit(&tenant, request).unwrap() else { panic!("new run") };
        let id = run.run().clone();
        if idem == "sealed" {
            run.succeed("done").unwrap();
        }
        id
    });
    store.append_heads(&tenant, &origin).unwrap();
    Plane { _dir: dir, path, store, key, sealed, open, runtime: Some(runtime) }
}

fn export(plane: &Plane, run: &RunId) -> Result<journal_core::export::RunExport, JournalError> {
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    export_run(plane.store.as_ref(), &tenant(), &origin(), &plane.key, run, check, None)
}

fn rows(plane: &Plane, run: &RunId) -> Vec<StoredRecord> {
    plane.store.read_run(&tenant(), run).unwrap().rows
}

/// The refusal's text, asserted to say nothing was exported.
fn refused(answer: Result<journal_core::export::RunExport, JournalError>) -> JournalError {
    let err = answer.map(|exported| exported.text).expect_err("a damaged store is never exported");
    assert!(err.to_string().contains("nothing was exported"), "{err}");
    err
}

#[test]
fn r_exp_1_an_undamaged_plane_exports_both_runs() {
    let plane = plane();
    for run in [&plane.sealed, &plane.open] {
        let exported = export(&plane, run).unwrap();
        let upcasters = Upcasters::builtin();
        let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
        journal_core::export::verify_export(&exported.text, &[plane.key.verifier_key()], check).unwrap();
    }
}

/// R-COVER-2: an open run cut back (its last record deleted, its head row
/// moved back, no moved mark) below the head its heads leaf holds.
#[test]
fn r_cover_2_export_refuses_an_open_run_cut_below_its_covered_head() {
    let plane = plane();
    let rows = rows(&plane, &plane.open);
    let (last, kept) = (&rows[rows.len() - 1], &rows[rows.len() - 2]);
    plane.store.delete_record(&tenant(), &plane.open, last.seq);
    plane.store.set_runs_head(&tenant(), &plane.open, ExpectedHead { seq: kept.seq, hash: kept.hash });
    let err = refused(export(&plane, &plane.open));
    assert!(
        matches!(&err, JournalError::Tamper { kind: TamperKind::SealMismatch, seq, .. } if *seq == last.seq),
        "{err:?}"
    );
    assert!(err.to_string().contains("cut back"), "{err}");
}

/// R-COVER-2: an open run's head record rewritten (another body at the same
/// seq, re-linked, its head row moved to it) under the heads leaf that
/// holds the old head's hash.
#[test]
fn r_cover_2_export_refuses_an_open_run_rewritten_at_its_covered_head() {
    let plane = plane();
    let rows = rows(&plane, &plane.open);
    let (last, prev) = (&rows[rows.len() - 1], &rows[rows.len() - 2]);
    let bytes = String::from_utf8(last.bytes.clone()).unwrap().replacen("\"seq\"", " \"seq\"", 1).into_bytes();
    assert_ne!(bytes, last.bytes);
    let hash = ChainHash::link(&prev.hash, &bytes);
    plane.store.overwrite_row(&tenant(), &plane.open, StoredRecord { bytes, hash, ..last.clone() });
    plane.store.set_runs_head(&tenant(), &plane.open, ExpectedHead { seq: last.seq, hash });
    let err = refused(export(&plane, &plane.open));
    assert!(matches!(&err, JournalError::Tamper { kind: TamperKind::SealMismatch, .. }), "{err:?}");
    assert!(err.to_string().contains(&last.hash.to_string()), "the covered hash is named: {err}");
}

/// R-COVER-2: the open run's heads entry renamed to an older head of its
/// chain (a record it does hold) than the one its heads leaf's entries
/// tree commits to: the entry is not the leaf's.
#[test]
fn r_cover_2_export_refuses_a_heads_entry_its_leaf_does_not_hold() {
    let plane = plane();
    let position = plane.store.newest_heads_of(&tenant(), &plane.open).unwrap().unwrap();
    let rows = rows(&plane, &plane.open);
    let older = &rows[rows.len() - 2];
    // One raw write on the file, as a writer without the key makes it.
    let Plane { _dir, path, store, key, sealed, open, runtime } = plane;
    drop((runtime, store));
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let heads: redb::TableDefinition<(&str, u64, &str), (u64, &[u8])> = redb::TableDefinition::new("heads_entries");
        txn.open_table(heads)
            .unwrap()
            .insert((tenant().as_str(), position, open.as_str()), (older.seq, older.hash.as_bytes().as_slice()))
            .unwrap();
        txn.commit().unwrap();
    }
    let store = Arc::new(RedbStore::open(&path).unwrap());
    let plane = Plane { _dir, path, store, key, sealed, open, runtime: None };
    let err = refused(export(&plane, &plane.open));
    assert!(matches!(&err, JournalError::StoreDamage { .. }), "{err:?}");
    assert!(err.to_string().contains("does not hold the entry"), "{err}");
}

/// R-EXP-1: a stored cosigned checkpoint the log key signed for another
/// origin (one key may sign several tenants' logs), of the very tree the
/// run is proven in.
#[test]
fn r_exp_1_export_refuses_a_stored_cosigned_checkpoint_of_another_origin() {
    let plane = plane();
    let tree = LogView::open(plane.store.as_ref(), &tenant()).unwrap().head().unwrap().tree;
    let other = witness::Origin::new("other.test/log").unwrap();
    let note = journal_core::log::sign_checkpoint(&other, tree, &plane.key).unwrap().note().to_owned();
    plane.store.record_cosigned_checkpoint(&tenant(), SignedTree { tree, note }).unwrap();
    let err = refused(export(&plane, &plane.sealed));
    assert!(matches!(&err, JournalError::StoreDamage { .. }), "{err:?}");
    assert!(err.to_string().contains("other.test/log"), "{err}");
}

/// R-EXP-1, R-RUN-2: a sealed run whose seal lookup was cleared is never
/// exported as an open run's prefix.
#[test]
fn r_exp_1_export_refuses_a_sealed_run_whose_seal_lookup_was_cleared() {
    let plane = plane();
    plane.store.hide_seal_of(&tenant(), &plane.sealed);
    let err = export(&plane, &plane.sealed).map(|exported| exported.text).expect_err("never exported");
    assert!(matches!(&err, JournalError::StoreDamage { .. }), "{err:?}");
    assert!(err.to_string().contains("finds no seal of it"), "{err}");
}

/// The log's leaves as stored, each with the name it is kept under.
fn leaves(plane: &Plane) -> Vec<(RunId, Vec<u8>)> {
    let next = plane.store.log_counters(&tenant()).unwrap().next_position;
    (0..next)
        .map(|position| {
            let seal = plane.store.seal_at(&tenant(), position).unwrap().expect("a dense log");
            (seal.run, seal.leaf_bytes)
        })
        .collect()
}

/// R-EXP-1, R-COVER-2: the log rewritten whole (its nodes made to match,
/// before any tree was signed) with the open run's heads leaf, neither the
/// log's first leaf nor its newest, renamed to another origin, its entries
/// as they were: nothing is signed and nothing exported.
#[test]
fn r_cover_2_export_refuses_a_heads_leaf_of_another_origin() {
    let plane = unsigned_plane();
    let position = plane.store.newest_heads_of(&tenant(), &plane.open).unwrap().unwrap();
    // A run sealed after it: the heads leaf is neither the log's first leaf nor its newest.
    let request = AdmitRequest { idempotency_key: "later".into(), plan: vec![], budget: Budget::default() };
    let runtime = plane.runtime.as_ref().unwrap();
    let Admission::New(later) = runtime.admit(&tenant(), request).unwrap() else { panic!("new run") };
    later.succeed("done").unwrap();
    let mut leaves = leaves(&plane);
    assert!(leaves.len() as u64 > position + 1, "{position} is not the newest leaf");
    let leaf = &mut leaves[position as usize].1;
    let heads = journal_core::heads::HeadsLeaf::parse(leaf).unwrap();
    let other = witness::Origin::new("other.test/log").unwrap();
    *leaf = journal_core::heads::HeadsLeaf { origin: other, ..heads }.to_bytes();
    plane.store.rewrite_log(&tenant(), &leaves);
    // Refused before anything is signed (the signer reads every leaf past
    // the last signed tree), so never as far as the export's own check.
    let err = export(&plane, &plane.open).map(|exported| exported.text).expect_err("never exported");
    assert!(matches!(&err, JournalError::WouldSignRollback { .. }), "{err:?}");
    assert!(err.to_string().contains("names the log other.test/log"), "{err}");
}

/// R-EXP-1, R-PLANE-2: the stored node beside the open run's heads leaf
/// (the sealed run's leaf hash: the heads leaf's audit path) overwritten
/// before any tree was signed: the tree the stored nodes give does not hold
/// the stored leaf as proven.
#[test]
fn r_exp_1_export_refuses_a_covering_leaf_its_log_nodes_do_not_hold() {
    let plane = unsigned_plane();
    let position = plane.store.newest_heads_of(&tenant(), &plane.open).unwrap().unwrap();
    let forged = tlog::NodeHash::from_hex(&"ab".repeat(32)).unwrap();
    plane.store.overwrite_log_node(&tenant(), tlog::NodeId::new(0, position ^ 1), forged);
    let err = refused(export(&plane, &plane.open));
    assert!(matches!(&err, JournalError::StoreDamage { .. }), "{err:?}");
    assert!(err.to_string().contains("inclusion in the tree signed fails"), "{err}");
}
