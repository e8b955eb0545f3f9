//! One tenant of a shared plane against another (R-STORE-4): what one
//! tenant's agent chooses never fails another tenant's appends.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::{
    Admission, AdmitRequest, Budget, ErrorClass, JournalError, Origin, RuntimeBuilder, RuntimeError, Store, TenantId,
};
use store_pg::PgStore;

/// `len` characters that no compression shortens much (a PostgreSQL index
/// entry is compressed before its size is checked).
fn incompressible(len: usize, seed: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            char::from(ALPHABET[usize::try_from(state >> 33).unwrap() % ALPHABET.len()])
        })
        .collect()
}

/// R-STORE-4 (review 69): tenant `a`'s agent admitted runs under an
/// idempotency key of 16 KB. PostgreSQL's index of keys holds no entry past
/// about 2.7 KB, so the insert failed, which broke the whole group commit:
/// every append of tenant `b` in the same batch failed with it, as a storage
/// error, and `a` could do it again and again. The key is refused before
/// anything is written, as `a`'s own invalid input; `b` never notices.
#[test]
fn r_store_4_one_tenants_long_idempotency_key_never_fails_another_tenants_appends() {
    let store = Arc::new(PgStore::temporary().unwrap());
    let (a, b) = (TenantId::new("a").unwrap(), TenantId::new("b").unwrap());
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(a.clone(), Origin::new("pg.test/plane/a").unwrap(), None)
        .tenant(b.clone(), Origin::new("pg.test/plane/b").unwrap(), None)
        .build()
        .unwrap();
    let request = |key: String| AdmitRequest { idempotency_key: key, plan: vec![], budget: Budget::default() };
    let b_failures = std::sync::Mutex::new(Vec::new());
    let a_answers = std::thread::scope(|scope| {
        for worker in 0..3 {
            let (runtime, b, b_failures) = (&runtime, &b, &b_failures);
            scope.spawn(move || {
                let Admission::New(mut run) = runtime.admit(b, request(format!("b-{worker}"))).unwrap() else {
                    panic!("a new run of b")
                };
                for n in 0..40 {
                    if let Err(err) = run.start_step(&format!("step-{n}")) {
                        b_failures.lock().unwrap().push(err.to_string());
                        return;
                    }
                }
            });
        }
        (0..20u64).map(|n| runtime.admit(&a, request(incompressible(16 << 10, n))).map(|_| ())).collect::<Vec<_>>()
    });
    let b_failures = b_failures.into_inner().unwrap();
    assert!(b_failures.is_empty(), "tenant a's keys failed tenant b's appends: {b_failures:?}");
    for answer in &a_answers {
        assert!(
            matches!(answer, Err(RuntimeError::Journal(err @ JournalError::IdempotencyKeyTooLong { .. }))
                if err.class() == ErrorClass::Invalid),
            "{answer:?}"
        );
    }
    assert!(store.runs(&a, None).unwrap().is_empty(), "nothing of tenant a was written");
    assert_eq!(store.runs(&b, None).unwrap().len(), 3);
    // A key at the bound is stored and found again.
    let key = incompressible(journal_core::append::MAX_IDEMPOTENCY_KEY_BYTES, 99);
    let Admission::New(run) = runtime.admit(&a, request(key.clone())).unwrap() else { panic!("a new run") };
    let id = run.run().clone();
    run.succeed("done").unwrap();
    assert!(matches!(runtime.admit(&a, request(key)).unwrap(), Admission::Existing { run, .. } if run == id));
}
