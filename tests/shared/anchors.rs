//! The audit's inputs for a live-plane test: the log key, and every
//! checkpoint the plane has signed so far as an anchor (`#[path]`-included by
//! `crates/store-redb/tests/live_audit.rs` and `crates/store-pg/tests/live_heads.rs`).

use journal_core::{Origin, Store, TenantId};
use witness::LogKey;

pub fn anchored_on_every_signed_checkpoint(
    store: &dyn Store,
    tenant: &TenantId,
    origin: &Origin,
    key: &LogKey,
) -> audit::AuditInputs {
    let mut inputs = audit::AuditInputs::new(tenant.clone(), origin.clone());
    inputs.log_keys = vec![key.verifier_key()];
    for (n, signed) in store.signed_checkpoints(tenant).unwrap().iter().enumerate() {
        inputs.anchors.push(
            audit::Anchor::saved(&format!("signed-{n}"), signed.note.as_bytes(), &[key.verifier_key()], origin)
                .unwrap(),
        );
    }
    inputs
}
