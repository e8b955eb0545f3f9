//! One tenant of a shared plane against another on a redb file (R-STORE-4).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::append::MAX_IDEMPOTENCY_KEY_BYTES;
use journal_core::{
    Admission, AdmitRequest, Budget, ErrorClass, JournalError, Origin, RuntimeBuilder, RuntimeError, Store, TenantId,
};
use store_redb::RedbStore;

/// R-STORE-4 (review 69): an idempotency key past the bound PostgreSQL's
/// index holds failed the group commit there, every tenant's appends in it
/// (see store-pg's `tenant_isolation`); redb stored it. Every backend holds
/// a tenant's keys to one bound, refused as that tenant's own invalid input
/// with nothing written, so a plane moved between backends keeps its answers.
#[test]
fn r_store_4_an_idempotency_key_past_the_bound_is_refused_with_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(RedbStore::create(&dir.path().join("plane.redb")).unwrap());
    let (a, b) = (TenantId::new("a").unwrap(), TenantId::new("a:b").unwrap());
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(a.clone(), Origin::new("redb.test/plane/a").unwrap(), None)
        .tenant(b.clone(), Origin::new("redb.test/plane/a:b").unwrap(), None)
        .build()
        .unwrap();
    let request = |key: String| AdmitRequest { idempotency_key: key, plan: vec![], budget: Budget::default() };
    let refused = runtime.admit(&a, request("k".repeat(MAX_IDEMPOTENCY_KEY_BYTES + 1)));
    assert!(
        matches!(&refused, Err(RuntimeError::Journal(err @ JournalError::IdempotencyKeyTooLong { bytes, .. }))
            if *bytes == MAX_IDEMPOTENCY_KEY_BYTES + 1 && err.class() == ErrorClass::Invalid),
        "{:?}",
        refused.as_ref().err()
    );
    assert!(store.runs(&a, None).unwrap().is_empty(), "nothing was written");
    // A key at the bound is stored and found again, in its own tenant only.
    let key = "k".repeat(MAX_IDEMPOTENCY_KEY_BYTES);
    let Admission::New(run) = runtime.admit(&a, request(key.clone())).unwrap() else { panic!("a new run") };
    let id = run.run().clone();
    run.succeed("done").unwrap();
    assert!(matches!(runtime.admit(&a, request(key.clone())).unwrap(), Admission::Existing { run, .. } if run == id));
    assert_eq!(store.run_by_idempotency_key(&b, &key).unwrap(), None);
    assert!(matches!(runtime.admit(&b, request(key)).unwrap(), Admission::New(run) if run.run() != &id));
}
