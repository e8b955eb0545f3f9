//! R-RUN-5, R-CHAIN-1 on a redb file: a writer without the key deletes an
//! open run's runs row and its idempotency row (derived data), leaving its
//! records. A second admission of the same request derives the same run id,
//! finds no row and no index entry, and appended its records over the run's
//! own: redb's insert replaced each stored record as the new run reached its
//! seq, so the run's effects were performed again and the records that
//! showed them done were overwritten. The first record of a run is refused
//! where records of that run are stored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use journal_core::testkit::TamperAccess as _;
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, JournalError, Origin, Runtime,
    RuntimeBuilder, RuntimeError, Store, TenantId,
};
use store_redb::RedbStore;

const IDEMPOTENCY: redb::TableDefinition<(&str, &str), &str> = redb::TableDefinition::new("idempotency");

fn tenant() -> TenantId {
    TenantId::new("t").unwrap()
}

fn runtime(store: Arc<RedbStore>) -> Runtime {
    RuntimeBuilder::new(store).tenant(tenant(), Origin::new("redb.test/readmission").unwrap(), None).build().unwrap()
}

/// Admits `key` and pays once (counted in `paid`); the run stays open.
fn admit_and_pay(runtime: &Runtime, paid: &AtomicU32) -> Result<(), RuntimeError> {
    let request =
        AdmitRequest { idempotency_key: "order-7".into(), plan: vec!["work".into()], budget: Budget::default() };
    let Admission::New(mut run) = runtime.admit(&tenant(), request)? else { return Ok(()) };
    run.start_step("work")?;
    run.effect("ek:pay", "work", || {
        paid.fetch_add(1, Ordering::SeqCst);
        EffectOutput { result: EffectResult::Ok { output: "paid".into() }, charged: Counters::default() }
    })?;
    Ok(())
}

#[test]
fn r_run_5_a_readmission_never_overwrites_a_run_whose_rows_were_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let paid = AtomicU32::new(0);
    let store = Arc::new(RedbStore::create(&path).unwrap());
    admit_and_pay(&runtime(store.clone()), &paid).unwrap();
    let run = Runtime::run_id_for(&tenant(), "order-7").unwrap();
    let before = store.read_run(&tenant(), &run).unwrap().rows;
    store.delete_runs_row(&tenant(), &run);
    drop(store);
    let db = redb::Database::open(&path).unwrap();
    let txn = db.begin_write().unwrap();
    txn.open_table(IDEMPOTENCY).unwrap().remove(("t", "order-7")).unwrap();
    txn.commit().unwrap();
    drop(db);

    let store = Arc::new(RedbStore::open(&path).unwrap());
    let again = admit_and_pay(&runtime(store.clone()), &paid);
    assert_eq!(paid.load(Ordering::SeqCst), 1, "the payment ran again: {again:?}");
    assert!(
        matches!(again, Err(RuntimeError::Journal(JournalError::StoreDamage { .. }))),
        "the admission is refused as damage: {again:?}"
    );
    // The run's own records are still there, as they were.
    let asked: Vec<_> = (1..=before.len() as u64 + 1).map(|seq| (run.clone(), seq)).collect();
    let mut expected: Vec<_> = before.iter().map(|row| Some(row.hash)).collect();
    expected.push(None);
    assert_eq!(store.stored_hashes(&tenant(), &asked).unwrap(), expected, "the run's records were overwritten");
}
