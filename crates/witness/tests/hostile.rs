//! Hostile keys and limits: a key of the wrong type is named by its type, and
//! what this crate signs it can read back (R-NOTE-1, R-UX-3).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use witness::{ALG_ED25519, KeyError, SignerKey, TrustedWitness};

/// A log's note key (0x01) offered as a witness key is refused with a
/// variant a caller can match, naming the key and its type.
#[test]
fn r_ux_3_a_note_key_offered_as_a_witness_key_is_named_by_its_type() {
    let note_key = SignerKey::from_seed("w.test/a", ALG_ED25519, [1; 32]).unwrap().verifier_key();
    assert_eq!(
        TrustedWitness::new(note_key.clone()).unwrap_err(),
        KeyError::NotAWitnessKey { name: "w.test/a".into(), algorithm: ALG_ED25519 }
    );
    let err = TrustedWitness::parse(&note_key.to_string()).unwrap_err();
    assert!(err.to_string().contains("0x01"), "{err}");
}
