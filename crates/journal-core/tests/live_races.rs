//! Races of a healthy, busy plane that must not look like tampering
//! (review 18): two reads of the plane that are not one snapshot, with
//! another process writing between them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use journal_core::log::sign_current_head;
use journal_core::runtime::{RunHandle, Runtime};
use journal_core::testkit_faults::{RoutedStore, StoreCall};
use journal_core::{Admission, AdmitRequest, Budget, MemoryStore, Origin, RunStatus, RuntimeBuilder, Store, TenantId};
use witness::{ALG_ED25519, LogKey, SignerKey};

const ORIGIN: &str = "races.test/plane";

type Mark = journal_core::testkit::MemoryHighWater;

fn log_key() -> LogKey {
    LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [7; 32]).unwrap()).unwrap()
}

fn tenant() -> TenantId {
    TenantId::new("t").unwrap()
}

fn runtime(store: Arc<dyn Store>, mark: Arc<Mark>) -> Runtime {
    RuntimeBuilder::new(store)
        .tenant(tenant(), Origin::new(ORIGIN).unwrap(), Some(log_key()))
        .high_water(mark)
        .build()
        .unwrap()
}

fn request(key: &str) -> AdmitRequest {
    AdmitRequest { idempotency_key: key.into(), plan: vec!["step".into()], budget: Budget::default() }
}

/// R-RUN-4, R-COVER-2 on a busy plane: an admission is redelivered (the
/// same idempotency key) while a worker is still driving the run, and the
/// sweep signs a checkpoint at that moment. The redelivery reads the run's
/// chain, then the log's leaves: between the two reads the worker appended
/// a record and the checkpoint put a heads leaf holding that new head in
/// the log. The leaf holds a record the chain read a moment before did not
/// have yet; nothing was cut back, so the answer is the run's status, never
/// a tamper refusal. (On main: `Tamper { kind: SealMismatch }`, "the run was
/// cut back, rewritten or deleted behind the plane".)
#[test]
fn r_run_4_a_redelivery_racing_a_worker_and_a_checkpoint_is_not_called_a_cut() {
    let inner = Arc::new(MemoryStore::new());
    let mark = Arc::new(Mark::default());
    // The worker's process: admits the run and holds its handle.
    let worker: &'static Runtime = Box::leak(Box::new(runtime(inner.clone(), Arc::clone(&mark))));
    let Admission::New(handle) = worker.admit(&tenant(), request("job")).unwrap() else { panic!("new") };
    sign_current_head(inner.as_ref(), &tenant(), &Origin::new(ORIGIN).unwrap(), &log_key(), Some(mark.as_ref()))
        .unwrap();
    let handle: Arc<Mutex<Option<Box<RunHandle<'static>>>>> = Arc::new(Mutex::new(Some(handle)));

    // The redelivery's process: between its read of the run's chain and
    // its read of the log's leaves (in whichever order it makes them), the
    // worker moves and the sweep signs.
    let first_read: Arc<Mutex<Option<StoreCall>>> = Arc::new(Mutex::new(None));
    let (asked, moved) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let store: Arc<dyn Store> = {
        let (inner, mark, asked, moved, handle, first_read) = (
            inner.clone(),
            Arc::clone(&mark),
            Arc::clone(&asked),
            Arc::clone(&moved),
            Arc::clone(&handle),
            Arc::clone(&first_read),
        );
        Arc::new(RoutedStore::new(Box::new(move |call| {
            match call {
                StoreCall::RunByIdempotencyKey => asked.store(true, Ordering::SeqCst),
                StoreCall::ReadRun | StoreCall::SealsIn
                    if asked.load(Ordering::SeqCst) && !moved.load(Ordering::SeqCst) =>
                {
                    let mut first = first_read.lock().unwrap();
                    match *first {
                        None => *first = Some(call),
                        Some(seen) if seen != call => {
                            let mut held = handle.lock().unwrap();
                            held.as_mut().unwrap().start_step("step").unwrap();
                            sign_current_head(
                                inner.as_ref(),
                                &tenant(),
                                &Origin::new(ORIGIN).unwrap(),
                                &log_key(),
                                Some(mark.as_ref()),
                            )
                            .unwrap();
                            moved.store(true, Ordering::SeqCst);
                        }
                        Some(_) => {}
                    }
                }
                _ => {}
            }
            inner.clone() as Arc<dyn Store>
        })))
    };
    let redelivery = runtime(store, Arc::clone(&mark));
    let answer = redelivery.admit(&tenant(), request("job"));
    assert!(moved.load(Ordering::SeqCst), "the worker moved and the sweep signed between the two reads");
    match answer {
        Ok(Admission::Existing { status, .. }) => assert!(matches!(status, RunStatus::Running), "{status:?}"),
        Ok(Admission::New(_)) => panic!("admitted twice"),
        Err(err) => panic!("a healthy plane refused a redelivery: {err}"),
    }
    // And the worker goes on.
    let handle = handle.lock().unwrap().take().unwrap();
    handle.succeed("done").unwrap();
}

/// R-LOG-3, R-COVER-2 on a busy plane (left by review 18): a run sealed, or
/// an open run entered in a heads leaf, after a view of the log was opened
/// lies past that view's size. `LogView::prove_run` asks a view opened
/// afresh, so `agentplane prove` and the console answer with the seal's
/// inclusion (or the leaf's) instead of a stale "not sealed" or "not
/// covered".
#[test]
fn r_log_3_a_run_sealed_or_covered_after_the_view_was_opened_is_proven_not_called_unsealed() {
    use journal_core::testkit::sample_run;
    use journal_core::{Journal, LogView, Outcome, RunId, RunProof};
    let store = MemoryStore::new();
    let (tenant, origin) = (tenant(), Origin::new(ORIGIN).unwrap());
    let journal = Journal::new(&store, &tenant, &origin);
    sample_run(&journal, &RunId::new("run-first").unwrap(), Outcome::Succeeded).unwrap();

    let view = LogView::open(&store, &tenant).unwrap();
    let late = RunId::new("run-sealed-late").unwrap();
    sample_run(&journal, &late, Outcome::Succeeded).unwrap();
    assert!(
        matches!(view.inclusion(&late), Err(journal_core::JournalError::NotSealed { .. })),
        "the view itself is older than the seal"
    );
    match view.prove_run(&late).unwrap() {
        RunProof::Seal(inclusion) => {
            assert_eq!(inclusion.tree.size, 2);
            inclusion.verify().unwrap();
        }
        RunProof::Head(head) => panic!("a sealed run proven by a head: {head:?}"),
    }

    let open = RunId::new("run-open").unwrap();
    sample_run(&journal, &open, Outcome::Failed).unwrap();
    let view = LogView::open(&store, &tenant).unwrap();
    sign_current_head(&store, &tenant, &origin, &log_key(), None).unwrap();
    assert!(
        matches!(view.head_inclusion(&open), Err(journal_core::JournalError::NotSealed { .. })),
        "the view itself is older than the heads leaf"
    );
    match view.prove_run(&open).unwrap() {
        RunProof::Head(head) => head.verify().unwrap(),
        RunProof::Seal(inclusion) => panic!("an open run proven by a seal: {inclusion:?}"),
    }
    let missing = view.prove_run(&RunId::new("run-none").unwrap());
    assert!(matches!(missing, Err(journal_core::JournalError::NotFound { .. })), "{missing:?}");
}
