//! The plane's own guards on a redb file, each held by a test that fails when
//! the guard is weakened (review 78, a mutation review of journal-core's
//! checks): what no other test of the guard's crate or of this one noticed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use journal_core::testkit::{MemoryHighWater, TamperAccess as _};
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, JournalError, Origin, Runtime,
    RuntimeBuilder, RuntimeError, TenantId,
};
use store_redb::RedbStore;
use witness::{ALG_ED25519, LogKey, SignerKey};

const ORIGIN: &str = "redb.test/guards";

fn tenant() -> TenantId {
    TenantId::new("t").unwrap()
}

fn origin() -> Origin {
    Origin::new(ORIGIN).unwrap()
}

fn log_key() -> LogKey {
    LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [7; 32]).unwrap()).unwrap()
}

fn runtime(store: Arc<RedbStore>, mark: Option<Arc<MemoryHighWater>>) -> Runtime {
    let builder = RuntimeBuilder::new(store).tenant(tenant(), origin(), Some(log_key()));
    match mark {
        Some(mark) => builder.high_water(mark).build().unwrap(),
        None => builder.build().unwrap(),
    }
}

fn request(key: &str) -> AdmitRequest {
    AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget: Budget::default() }
}

/// Admits `key`, pays once (counted in `paid`) and, when `finish`, succeeds.
fn admit_and_pay(runtime: &Runtime, key: &str, paid: &AtomicU32, finish: bool) -> Result<(), RuntimeError> {
    let Admission::New(mut run) = runtime.admit(&tenant(), request(key))? else { return Ok(()) };
    run.start_step("work")?;
    run.effect("ek:pay", "work", || {
        paid.fetch_add(1, Ordering::SeqCst);
        EffectOutput { result: EffectResult::Ok { output: "paid".into() }, charged: Counters::default() }
    })?;
    run.finish_step("work")?;
    if finish {
        run.succeed("done")?;
    }
    Ok(())
}

fn open(path: &Path) -> Arc<RedbStore> {
    Arc::new(RedbStore::open(path).unwrap())
}

/// R-RUN-4, R-IDX (review 78): the idempotency index is derived data. A
/// key pointed behind the plane at another run (here a key never admitted,
/// at a run that succeeded) must not be answered with that run: the order
/// would be told it succeeded and never be performed. The admission is
/// refused as damage; nothing is appended.
#[test]
fn r_run_4_a_key_the_index_points_at_another_run_is_damage_not_that_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let paid = AtomicU32::new(0);
    let store = Arc::new(RedbStore::create(&path).unwrap());
    admit_and_pay(&runtime(store.clone(), None), "order-1", &paid, true).unwrap();
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    let paid_run = Runtime::run_id_for(&tenant(), "order-1").unwrap();
    store.set_idempotency(&tenant(), "order-2", &paid_run);
    drop(store);

    let store = open(&path);
    let plane = runtime(store.clone(), None);
    let answer = plane.admit(&tenant(), request("order-2"));
    match answer {
        Err(RuntimeError::Journal(JournalError::StoreDamage { detail, .. })) => {
            assert!(detail.contains("order-2"), "the refusal names the key: {detail}");
        }
        Err(err) => panic!("refused, but not as damage: {err}"),
        Ok(Admission::Existing { run, status }) => {
            panic!("key order-2 was answered with run {run} of order-1 ({status:?})")
        }
        Ok(Admission::New(run)) => panic!("admitted as {}", run.run()),
    }
}

/// R-PLANE-2, R-RUN-5 (review 78): a store put back from a backup taken
/// before a run was admitted, paid and sealed, and the log signed over it.
/// Redelivered, the order's key finds no run and no leaf in that store: only
/// the plane's high-water mark, kept outside the store, says the store is
/// older than what the plane signed. The admission is refused and the
/// payment is not made again.
#[test]
fn r_plane_2_a_store_older_than_the_mark_admits_no_redelivered_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let backup = dir.path().join("backup.redb");
    drop(RedbStore::create(&path).unwrap());
    std::fs::copy(&path, &backup).unwrap();

    let mark = Arc::new(MemoryHighWater::default());
    let paid = AtomicU32::new(0);
    let store = open(&path);
    admit_and_pay(&runtime(store.clone(), Some(mark.clone())), "order-7", &paid, true).unwrap();
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    journal_core::log::sign_current_head(store.as_ref(), &tenant(), &origin(), &log_key(), Some(mark.as_ref()))
        .unwrap();
    drop(store);

    std::fs::copy(&backup, &path).unwrap();
    let store = open(&path);
    let plane = runtime(store.clone(), Some(mark));
    let again = plane.admit(&tenant(), request("order-7"));
    let refused = match again {
        Err(err) => err.to_string(),
        Ok(Admission::Existing { run, status }) => panic!("answered with run {run} ({status:?})"),
        Ok(Admission::New(mut run)) => {
            let _ = run.effect("ek:pay", "work", || {
                paid.fetch_add(1, Ordering::SeqCst);
                EffectOutput { result: EffectResult::Ok { output: "paid".into() }, charged: Counters::default() }
            });
            panic!("order-7 was admitted again on the older store (paid {} times)", paid.load(Ordering::SeqCst))
        }
    };
    // The runtime's check of the mark names the store older; the catch-up
    // of the signed leaves refuses the same store as entries removed.
    assert!(
        refused.contains("older than what the plane signed") || refused.contains("the plane signed 1 of them"),
        "{refused}"
    );
    assert_eq!(paid.load(Ordering::SeqCst), 1);
}
