//! Issue 22 in journal-core: one origin per tenant in `RuntimeBuilder`, and
//! `sign_head` held to a high-water mark kept outside the store (R-LOG-2,
//! R-WIT-6).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::log::sign_current_head;
use journal_core::{
    Admission, AdmitRequest, Budget, BuildError, JournalError, MemoryStore, Origin, RuntimeBuilder, Store, TenantId,
};
use witness::{ALG_ED25519, LogKey, SignerKey};

const ORIGIN: &str = "highwater.test/plane";

type Mark = journal_core::testkit::MemoryHighWater;

fn log_key() -> LogKey {
    LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [3; 32]).unwrap()).unwrap()
}

#[test]
fn two_tenants_with_one_origin_are_refused() {
    let origin = Origin::new(ORIGIN).unwrap();
    let built = RuntimeBuilder::new(Arc::new(MemoryStore::new()))
        .tenant(TenantId::new("shop").unwrap(), origin.clone(), Some(log_key()))
        .tenant(TenantId::new("shpo").unwrap(), origin, Some(log_key()))
        .build();
    assert!(
        matches!(built, Err(BuildError::DuplicateOrigin { ref first, ref second, .. }) if first == "shop" && second == "shpo")
    );
}

fn seal(store: &Arc<MemoryStore>, key: &str) {
    let runtime = RuntimeBuilder::new(Arc::clone(store) as Arc<dyn Store>)
        .tenant(TenantId::new("t").unwrap(), Origin::new(ORIGIN).unwrap(), Some(log_key()))
        .build()
        .unwrap();
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec![], budget: Budget::default() };
    let Admission::New(run) = runtime.admit(&TenantId::new("t").unwrap(), request).unwrap() else { panic!("new") };
    run.succeed("done").unwrap();
}

fn open_run(store: &Arc<MemoryStore>, key: &str) {
    let runtime = RuntimeBuilder::new(Arc::clone(store) as Arc<dyn Store>)
        .tenant(TenantId::new("t").unwrap(), Origin::new(ORIGIN).unwrap(), Some(log_key()))
        .build()
        .unwrap();
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec![], budget: Budget::default() };
    let Admission::New(_run) = runtime.admit(&TenantId::new("t").unwrap(), request).unwrap() else { panic!("new") };
}

/// A store put back (a fresh store standing for an older backup: its own
/// record of what the plane signed is gone too) is refused by the mark kept
/// outside it, with the integrity message; the store alone would sign it.
#[test]
fn r_log_2_sign_head_refuses_a_store_older_than_the_high_water_mark() {
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let mark = Mark::default();
    let newer = Arc::new(MemoryStore::new());
    for key in ["a", "b", "c"] {
        seal(&newer, key);
    }
    sign_current_head(newer.as_ref(), &tenant, &origin, &log_key(), Some(&mark)).unwrap();
    let older = Arc::new(MemoryStore::new());
    seal(&older, "a");
    open_run(&older, "still-open");
    let positions_before = older.log_counters(&tenant).unwrap().next_position;
    let refused = sign_current_head(older.as_ref(), &tenant, &origin, &log_key(), Some(&mark));
    assert!(
        matches!(&refused, Err(JournalError::WouldSignRollback { reason, .. })
            if reason.contains("a store older than the plane's last signature is in place")),
        "{refused:?}"
    );
    assert!(older.signed_checkpoints(&tenant).unwrap().is_empty(), "nothing was signed");
    assert_eq!(
        older.log_counters(&tenant).unwrap().next_position,
        positions_before,
        "a refused store gets no heads leaf for its open run either: nothing is written before the refusal"
    );
    assert!(sign_current_head(older.as_ref(), &tenant, &origin, &log_key(), None).is_ok(), "the store alone would");

    // A lost mark refuses until the witnesses were asked.
    let lost = Mark::lost("gone");
    let refused = sign_current_head(newer.as_ref(), &tenant, &origin, &log_key(), Some(&lost));
    assert!(matches!(&refused, Err(JournalError::WouldSignRollback { reason, .. }) if reason.contains("is lost")));
}
