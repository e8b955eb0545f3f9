//! A run's export assembled from the store (R-EXP-1; an open run's with the
//! heads leaf holding its head, issue 20), with the latest cosigned checkpoint
//! that holds the run; the latest cosigned checkpoint read back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::checkpoints::{cosigned_inclusion, latest_cosigned};
use journal_core::export::{ExportCovers, export_run, verify_export};
use journal_core::store::SignedTree;
use journal_core::{
    Admission, AdmitRequest, Budget, ChainCheck, JournalError, LogView, MemoryStore, Origin, RunId, Runtime,
    RuntimeBuilder, Store, TenantId, Upcasters, VerifyOptions,
};
use witness::{ALG_ED25519, LogKey, SignerKey};

const ORIGIN: &str = "export.test/plane";

fn admit(runtime: &Runtime, tenant: &TenantId, key: &str, seal: bool) -> RunId {
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec![], budget: Budget::default() };
    let Admission::New(run) = runtime.admit(tenant, request).unwrap() else { panic!("new run") };
    let id = run.run().clone();
    if seal {
        run.succeed("done").unwrap();
    }
    id
}

/// A plane of tenant `t` on a memory store, its log signed by `key`.
struct Plane {
    tenant: TenantId,
    origin: Origin,
    key: LogKey,
    store: Arc<MemoryStore>,
    runtime: Runtime,
}

fn plane() -> Plane {
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [7; 32]).unwrap()).unwrap();
    let store = Arc::new(MemoryStore::new());
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), origin.clone(), Some(key.clone()))
        .build()
        .unwrap();
    Plane { tenant, origin, key, store, runtime }
}

#[test]
fn r_exp_1_export_run_carries_the_latest_cosigned_checkpoint_that_holds_the_run() {
    let Plane { tenant, origin, key, store, runtime } = plane();
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };

    let first = admit(&runtime, &tenant, "a", true);
    assert_eq!(latest_cosigned(store.as_ref(), &tenant).unwrap(), None, "no round met its quorum yet");
    let before = export_run(store.as_ref(), &tenant, &origin, &key, &first, check, None).unwrap();
    assert_eq!(before.cosigned, None);

    // What a met round keeps: the note of the tree of size 1 (cosignatures aside).
    let view = LogView::open(store.as_ref(), &tenant).unwrap();
    let tree = view.head().unwrap().tree;
    let note = journal_core::log::sign_checkpoint(&origin, tree, &key).unwrap().note().to_owned();
    store.record_cosigned_checkpoint(&tenant, SignedTree { tree, note: note.clone() }).unwrap();
    let latest = latest_cosigned(store.as_ref(), &tenant).unwrap().unwrap();
    assert_eq!((latest.checkpoint.tree(), latest.checkpoint.origin()), (tree, ORIGIN));
    assert_eq!(latest.note, note);

    let second = admit(&runtime, &tenant, "b", true);
    let open = admit(&runtime, &tenant, "c", false);

    let exported = export_run(store.as_ref(), &tenant, &origin, &key, &first, check, None).unwrap();
    let cosigned = exported.cosigned.clone().expect("the cosigned checkpoint of size 1 holds the first run");
    assert_eq!((cosigned.index, cosigned.note.as_str()), (0, note.as_str()));
    let verified = verify_export(&exported.text, &[key.verifier_key()], check).unwrap();
    // Two seals, then the heads leaf the signing appended for the open run.
    assert_eq!((verified.tree.size, verified.cosigned.unwrap().tree), (3, tree));
    assert_eq!(exported.records, verified.chain.len());

    let later = export_run(store.as_ref(), &tenant, &origin, &key, &second, check, None).unwrap();
    assert_eq!(later.cosigned, None, "the cosigned checkpoint of size 1 does not hold leaf 1");

    // An open run exports too (issue 20): its records up to the head the
    // newest heads leaf holds, proven in the checkpoint; a prefix, never a seal.
    let exported = export_run(store.as_ref(), &tenant, &origin, &key, &open, check, None).unwrap();
    let verified = verify_export(&exported.text, &[key.verifier_key()], check).unwrap();
    let head = verified.chain.last().unwrap().stored.seq;
    assert_eq!(exported.covers, ExportCovers::Head { seq: head, entries: 1 });
    assert_eq!((verified.covers, verified.index, verified.outcome), (exported.covers, 2, None));
    assert_eq!(exported.records, verified.chain.len());

    // A kept cosigned tree the log does not hold is damage, not a silent omission.
    let view = LogView::open(store.as_ref(), &tenant).unwrap();
    let inclusion = view.inclusion(&first).unwrap();
    let wrong = tlog::Tree::new(2, view.root_at(1).unwrap());
    let note = journal_core::log::sign_checkpoint(&origin, wrong, &key).unwrap().note().to_owned();
    store.record_cosigned_checkpoint(&tenant, SignedTree { tree: wrong, note }).unwrap();
    assert!(matches!(
        cosigned_inclusion(store.as_ref(), &view, inclusion.index, &inclusion.leaf),
        Err(JournalError::StoreDamage { .. })
    ));

    // A kept note whose checkpoint is not the tree kept beside it is damage
    // (the latest round is the largest tree kept, whatever the rows' order).
    let largest = tlog::Tree::new(tree.size + 5, tree.root);
    store.record_cosigned_checkpoint(&tenant, SignedTree { tree: largest, note: "not a note".into() }).unwrap();
    assert!(matches!(latest_cosigned(store.as_ref(), &tenant), Err(JournalError::StoreDamage { .. })));
}

/// R-EXP-1 (every input has a size bound): an export is authenticated
/// before any record's body is read. Reading bodies costs several times
/// their bytes, so a file no trusted key covers must cost its bytes and no
/// more. Here the last record is replaced by a body this build cannot read
/// (a list of 100,000 empty strings: 300 kB of text, several MB read),
/// re-chained, and the seal line made to match it: the file is refused
/// because its leaf is not the one the signed checkpoint holds, never for
/// its body (which it never read).
#[test]
fn r_exp_1_an_export_is_authenticated_before_any_body_is_read() {
    let Plane { tenant, origin, key, store, runtime } = plane();
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let run = admit(&runtime, &tenant, "a", true);
    let exported = export_run(store.as_ref(), &tenant, &origin, &key, &run, check, None).unwrap();
    verify_export(&exported.text, &[key.verifier_key()], check).unwrap();

    let mut lines: Vec<serde_json::Value> =
        exported.text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let last = lines.iter().rposition(|line| line.get("bytes").is_some()).unwrap();
    let prev = journal_core::ChainHash::from_hex(lines[last]["prev_hash"].as_str().unwrap()).unwrap();
    let seq = lines[last]["seq"].as_u64().unwrap();
    let body = format!("{{\"v\":1,\"seq\":{seq},\"body\":{{\"Unknown\":[{}]}}}}", vec!["\"\""; 100_000].join(","));
    let hash = journal_core::ChainHash::link(&prev, body.as_bytes());
    lines[last]["bytes"] = body.into();
    lines[last]["hash"] = hash.to_string().into();
    let seal = journal_core::SealLeaf::new(&origin, &run, journal_core::ExpectedHead { seq, hash });
    let seal_line = lines.iter().position(|line| line.get("leaf").is_some()).unwrap();
    lines[seal_line]["leaf"] = String::from_utf8(seal.to_bytes()).unwrap().into();
    let forged: String = lines.iter().map(|line| format!("{line}\n")).collect();

    let refused = verify_export(&forged, &[key.verifier_key()], check).unwrap_err();
    assert!(
        matches!(&refused, journal_core::export::ExportError::Mismatch(why) if why.contains("inclusion proof fails")),
        "refused for its place in the log, not its body: {refused:?}"
    );
}

/// An export's cosigned line for a log of `leaves` signed by `key`, proving
/// the leaf at `index`.
fn cosigned_line(origin: &Origin, key: &LogKey, leaves: &[tlog::LeafHash], index: u64) -> serde_json::Value {
    let mut log = tlog::MemoryHashStore::new();
    for leaf in leaves {
        log.append(*leaf);
    }
    let tree = log.tree();
    let proof = log.prove_inclusion(index, tree.size).unwrap();
    let note = journal_core::log::sign_checkpoint(origin, tree, key).unwrap().note().to_owned();
    let path: Vec<String> = proof.path().iter().map(ToString::to_string).collect();
    serde_json::json!({"type": "cosigned", "note": note, "index": index, "proof": path})
}

/// R-EXP-1, R-PLANE-2: an export whose cosigned checkpoint places the run's
/// leaf at another index than its checkpoint does. Both trees are signed by
/// the log key and each proof verifies in its own tree, but one leaf at two
/// positions is two histories under one key (a seal leaf is in the log
/// once): the witnesses cosigned another history than the one the run is
/// proven in; so is a cosigned tree of the checkpoint's size with another
/// root. `verify_export` accepted both; now each is refused as a mismatch.
#[test]
fn r_exp_1_a_cosigned_checkpoint_placing_the_leaf_elsewhere_is_refused() {
    let Plane { tenant, origin, key, store, runtime } = plane();
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let first = admit(&runtime, &tenant, "a", true);
    let exported = export_run(store.as_ref(), &tenant, &origin, &key, &first, check, None).unwrap();
    let leaf = LogView::open(store.as_ref(), &tenant).unwrap().inclusion(&first).unwrap().leaf;
    assert_eq!(verify_export(&exported.text, &[key.verifier_key()], check).unwrap().index, 0);

    // Another history: some other leaf first, the run's second.
    let line = cosigned_line(&origin, &key, &[tlog::LeafHash::of(b"another history"), leaf], 1);
    let forged = format!("{}{line}\n", exported.text);
    match verify_export(&forged, &[key.verifier_key()], check) {
        Err(journal_core::export::ExportError::Mismatch(said)) => {
            assert!(said.contains("index 1") && said.contains("index 0"), "{said}");
        }
        other => panic!("a cosigned checkpoint of another history: {other:?}"),
    }

    // The checkpoint's size, another root: the run's leaf first, another second.
    let second = admit(&runtime, &tenant, "b", true);
    let exported = export_run(store.as_ref(), &tenant, &origin, &key, &first, check, None).unwrap();
    let verified = verify_export(&exported.text, &[key.verifier_key()], check).unwrap();
    assert_eq!((verified.tree.size, verified.index), (2, 0), "{second}");
    let line = cosigned_line(&origin, &key, &[leaf, tlog::LeafHash::of(b"another second leaf")], 0);
    let forged = format!("{}{line}\n", exported.text);
    match verify_export(&forged, &[key.verifier_key()], check) {
        Err(journal_core::export::ExportError::Mismatch(said)) => {
            assert!(said.contains("size 2 with different roots"), "{said}");
        }
        other => panic!("a cosigned checkpoint of the same size, another root: {other:?}"),
    }
}

/// R-EXP-1 (every input has a size bound; review 79's note): a proof line
/// holding more hashes than any tree's audit path (64) is refused at the
/// 65th, never read whole: a line of millions of empty strings cost about
/// ten times its bytes before it was refused (serde buffering each value).
#[test]
fn r_exp_1_a_proof_longer_than_any_tree_has_is_refused_as_it_is_read() {
    let Plane { tenant, origin, key, store, runtime } = plane();
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let run = admit(&runtime, &tenant, "a", true);
    let exported = export_run(store.as_ref(), &tenant, &origin, &key, &run, check, None).unwrap();
    let lines: Vec<&str> = exported.text.lines().collect();
    let at = lines.iter().position(|line| line.contains("\"type\":\"inclusion\"")).unwrap();
    let mut inclusion: serde_json::Value = serde_json::from_str(lines[at]).unwrap();
    for (count, refused) in [(64, false), (65, true), (2_000_000, true)] {
        inclusion["proof"] = serde_json::Value::from(vec![""; count]);
        let mut forged = lines.clone();
        let line = inclusion.to_string();
        forged[at] = &line;
        let text = forged.join("\n");
        match verify_export(&text, &[key.verifier_key()], check) {
            Err(journal_core::export::ExportError::Malformed { line, detail }) if refused => {
                assert_eq!(line, at + 1);
                assert!(detail.contains("at most 64 hashes"), "{detail}");
            }
            // 64 empty hashes parse, and are then refused as hashes.
            Err(journal_core::export::ExportError::Malformed { detail, .. }) if !refused => {
                assert!(!detail.contains("at most 64"), "{detail}");
            }
            other => panic!("a proof of {count} hashes: {other:?}"),
        }
    }
    // Unknown fields and types are still refused, as the format says.
    let mut extra: serde_json::Value = serde_json::from_str(lines[at]).unwrap();
    extra["extra"] = serde_json::Value::from(1);
    let line = extra.to_string();
    let mut forged = lines.clone();
    forged[at] = &line;
    let refused = verify_export(&forged.join("\n"), &[key.verifier_key()], check).unwrap_err();
    assert!(refused.to_string().contains("unknown field `extra`"), "{refused}");
    let line = r#"{"type":"footnote"}"#;
    forged[at] = line;
    let refused = verify_export(&forged.join("\n"), &[key.verifier_key()], check).unwrap_err();
    assert!(refused.to_string().contains("unknown variant `footnote`"), "{refused}");
}

/// R-EXP-1, R-COVER-2: a sealed run rewritten between the export's read of
/// it and its seal's lookup in the log (another chain sealed under the same
/// id, its own seal beside it: what someone writing the database can do
/// between two reads of the plane). The leaf the signed tree holds is not
/// the seal of the chain read; `export_run` refuses as store damage and
/// assembles nothing.
#[test]
fn r_exp_1_a_run_rewritten_between_its_read_and_its_seal_lookup_is_never_exported() {
    use journal_core::testkit::{origin, sample_run, tenant};
    use journal_core::testkit_faults::{RoutedStore, StoreCall};
    let (tenant, origin) = (tenant(), origin());
    let run = RunId::new("run-rewritten").unwrap();
    let logged = Arc::new(MemoryStore::new());
    sample_run(&journal_core::Journal::new(logged.as_ref(), &tenant, &origin), &run, journal_core::Outcome::Succeeded)
        .unwrap();
    let rewritten = Arc::new(MemoryStore::new());
    sample_run(
        &journal_core::Journal::new(rewritten.as_ref(), &tenant, &origin),
        &run,
        journal_core::Outcome::Cancelled,
    )
    .unwrap();
    let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (to_logged, to_rewritten) = (Arc::clone(&logged), Arc::clone(&rewritten));
    let store = RoutedStore::new(Box::new(move |call| {
        // The export's first read of the run is answered by the rewritten chain.
        if call == StoreCall::ReadRun && reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            to_rewritten.clone() as Arc<dyn Store>
        } else {
            to_logged.clone() as Arc<dyn Store>
        }
    }));
    let key = LogKey::new(SignerKey::from_seed(origin.as_str(), ALG_ED25519, [7; 32]).unwrap()).unwrap();
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let err = export_run(&store, &tenant, &origin, &key, &run, check, None).map(|exported| exported.text).unwrap_err();
    assert!(matches!(&err, JournalError::StoreDamage { .. }), "{err:?}");
    let said = err.to_string();
    assert!(
        said.contains("is not the seal of its verified journal") && said.contains("nothing was exported"),
        "{said}"
    );
}

/// R-COVER-2 (issue 20): an open run that grew between the export's read of
/// it and the signature (its new head entered in the heads leaf the signing
/// appends) is read again, and exported to the head the checkpoint covers,
/// never refused as cut back nor cut at the older head.
#[test]
fn r_cover_2_an_open_run_grown_between_its_read_and_the_signature_exports_its_new_head() {
    use journal_core::record::StepMark;
    use journal_core::testkit_faults::{RoutedStore, StoreCall};
    let Plane { tenant, origin, key, store: inner, runtime } = plane();
    let request =
        AdmitRequest { idempotency_key: "grows".into(), plan: vec!["work".into()], budget: Budget::default() };
    let Admission::New(open) = runtime.admit(&tenant, request).unwrap() else { panic!("new run") };
    let run = open.run().clone();
    let before = inner.read_run(&tenant, &run).unwrap().head.unwrap();
    let grown = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (to_inner, on) = (Arc::clone(&inner), (tenant.clone(), origin.clone(), run.clone()));
    let store = RoutedStore::new(Box::new(move |call| {
        if call == StoreCall::AppendHeads && !grown.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let (tenant, origin, run) = &on;
            let head = to_inner.read_run(tenant, run).unwrap().head;
            journal_core::Journal::new(to_inner.as_ref(), tenant, origin)
                .append(run, head, None, journal_core::RecordBody::StepStarted(StepMark { step: "work".into() }))
                .unwrap();
        }
        to_inner.clone() as Arc<dyn Store>
    }));
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let exported = export_run(&store, &tenant, &origin, &key, &run, check, None).unwrap();
    assert_eq!(exported.covers, ExportCovers::Head { seq: before.seq + 1, entries: 1 });
    let verified = verify_export(&exported.text, &[key.verifier_key()], check).unwrap();
    assert_eq!((verified.records, exported.records as u64), (before.seq + 1, before.seq + 1));
}
