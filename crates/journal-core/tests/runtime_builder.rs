//! `RuntimeBuilder::build` validates the witness policy (R-WIT-7).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::{BuildError, MemoryStore, RuntimeBuilder, TenantId};
use witness::{
    ALG_COSIGNATURE_V1, ALG_ED25519, HttpWitness, LogKey, SignerKey, TrustedWitness, Witness, WitnessQuorum,
};

fn witness_client(seed: u8) -> Arc<dyn Witness + Send + Sync> {
    let key = SignerKey::from_seed("witness.test/w", ALG_COSIGNATURE_V1, [seed; 32]).unwrap();
    let trusted = TrustedWitness::new(key.verifier_key()).unwrap();
    Arc::new(HttpWitness::new(&format!("http://127.0.0.{seed}:9"), vec![trusted]).unwrap())
}

fn log_key() -> LogKey {
    LogKey::new(SignerKey::from_seed("example.test/plane", ALG_ED25519, [1; 32]).unwrap()).unwrap()
}

fn builder() -> RuntimeBuilder {
    RuntimeBuilder::new(Arc::new(MemoryStore::new())).tenant(
        TenantId::new("t").unwrap(),
        journal_core::Origin::new("example.test/plane").unwrap(),
        Some(log_key()),
    )
}

#[test]
fn r_wit_7_quorum_larger_than_the_witness_list_is_refused() {
    let err =
        builder().witnesses(vec![witness_client(1), witness_client(2)], WitnessQuorum::of(3)).build().err().unwrap();
    assert_eq!(err, BuildError::QuorumTooLarge { quorum: 3, witnesses: 2 });
    assert!(builder().witnesses(vec![], WitnessQuorum::of(1)).build().is_err(), "a quorum with no witnesses at all");
}

#[test]
fn r_wit_7_zero_quorum_with_witnesses_is_refused() {
    let err = builder().witnesses(vec![witness_client(1)], WitnessQuorum::of(0)).build().err().unwrap();
    assert_eq!(err, BuildError::ZeroQuorum { witnesses: 1 });
}

#[test]
fn r_wit_7_a_valid_policy_builds_and_witnessing_needs_log_keys() {
    let runtime =
        builder().witnesses(vec![witness_client(1), witness_client(2)], WitnessQuorum::of(2)).build().unwrap();
    assert_eq!(runtime.witness_policy().1.needed(), 2);
    let no_key = RuntimeBuilder::new(Arc::new(MemoryStore::new()))
        .tenant(TenantId::new("t").unwrap(), journal_core::Origin::new("example.test/plane").unwrap(), None)
        .witnesses(vec![witness_client(1)], WitnessQuorum::of(1))
        .build()
        .err()
        .unwrap();
    assert_eq!(no_key, BuildError::NoLogKey("t".into()));
    assert_eq!(RuntimeBuilder::new(Arc::new(MemoryStore::new())).build().err().unwrap(), BuildError::NoTenant);
}
