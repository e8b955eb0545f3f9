//! `RuntimeBuilder::build` validates the witness policy (R-WIT-7).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::{BuildError, MemoryStore, RuntimeBuilder, TenantId};
use witness::{
    ALG_COSIGNATURE_V1, ALG_ED25519, HttpWitness, LogKey, SignerKey, TrustedWitness, Witness, WitnessQuorum,
};

/// Witness `seed`, named `witness.test/w<seed>` (a witness is a name with its keys).
fn witness_client(seed: u8) -> Arc<dyn Witness + Send + Sync> {
    let key = SignerKey::from_seed(&format!("witness.test/w{seed}"), ALG_COSIGNATURE_V1, [seed; 32]).unwrap();
    let trusted = TrustedWitness::new(key.verifier_key()).unwrap();
    Arc::new(HttpWitness::new(&format!("http://127.0.0.{seed}:9"), vec![trusted]).unwrap())
}

fn trusted(name: &str, seed: [u8; 32]) -> TrustedWitness {
    TrustedWitness::new(SignerKey::from_seed(name, ALG_COSIGNATURE_V1, seed).unwrap().verifier_key()).unwrap()
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

/// R-AUD-10, R-WIT-7 (attacker review 16): the keys of one name are one
/// witness, so two endpoints serving one name's two keys cannot make up a
/// quorum of 2; the build refuses it as a bar no round can clear.
#[test]
fn r_aud_10_two_keys_of_one_name_are_one_witness_toward_the_quorum() {
    let endpoint = |seed: u8| -> Arc<dyn Witness + Send + Sync> {
        Arc::new(
            HttpWitness::new(&format!("http://127.0.0.{seed}:9"), vec![trusted("witness.test/one", [seed; 32])])
                .unwrap(),
        )
    };
    let err = builder().witnesses(vec![endpoint(1), endpoint(2)], WitnessQuorum::of(2)).build().err().unwrap();
    assert_eq!(err, BuildError::QuorumTooLarge { quorum: 2, witnesses: 1 });
    builder().witnesses(vec![endpoint(1), endpoint(2)], WitnessQuorum::of(1)).build().unwrap();
}

/// R-AUD-10, R-WIT-3 (attacker review 16): the witness keys the sweep
/// verifies stored cosigned notes with were never checked as a whole (only
/// each endpoint's own): two keys with one name and key id on two endpoints
/// would have the sweep check one witness's lines against the other's key
/// and raise an integrity alarm against itself. The build refuses them.
#[test]
fn r_aud_10_witness_keys_with_one_name_and_key_id_are_refused_at_build() {
    // Two seeds whose keys under this name share a key id (found by search).
    let colliding = |seed: u32| {
        let mut bytes = [0u8; 32];
        bytes[..4].copy_from_slice(&seed.to_be_bytes());
        trusted("witness.test/w1", bytes)
    };
    let (honest, impostor) = (colliding(44_122), colliding(46_625));
    assert_eq!(honest.key_id(), impostor.key_id(), "the seeds collide");
    let err = builder().witness_keys(vec![honest.clone(), impostor]).build().err().unwrap();
    assert!(
        matches!(err, BuildError::WitnessKeysNotDistinct(witness::KeyError::AmbiguousWitnessKey { .. })),
        "{err:?}"
    );
    builder().witness_keys(vec![honest]).build().unwrap();
}

/// Every input has a size bound: a runtime trusting more witness keys than
/// a cosigned note can carry beside the log's signature (100 signature
/// lines, as Go's note package reads) is refused at build. Built, a round
/// met by all of them stored a note no reader opens, and every later round
/// found the store's cosigned checkpoint unverifiable.
#[test]
fn more_witness_keys_than_a_cosigned_note_carries_are_refused_at_build() {
    let clients = |count: u8| (1..=count).map(witness_client).collect::<Vec<_>>();
    assert_eq!(journal_core::MAX_WITNESS_KEYS, 99);
    let err = builder().witnesses(clients(100), WitnessQuorum::of(1)).build().err().unwrap();
    assert_eq!(err, BuildError::TooManyWitnessKeys { keys: 100, max: 99, lines: 100 });
    assert!(err.to_string().contains("configure fewer witnesses"), "{err}");
    let runtime = builder().witnesses(clients(99), WitnessQuorum::of(1)).build().unwrap();
    assert_eq!(runtime.witness_policy().1.needed(), 1);
}
