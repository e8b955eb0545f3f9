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
