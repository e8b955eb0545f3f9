//! Hostile keys and limits: a key of the wrong type is named by its type, and
//! what this crate signs it can read back (R-NOTE-1, R-UX-3).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use witness::{ALG_ED25519, KeyError, SignerKey, TrustedWitness};

/// An skey of a type this crate does not know (0x02, ECDSA in
/// transparency-dev/witness) is refused as that type, whatever its length:
/// "algorithm 0x02 takes 32-byte keys" would be false.
#[test]
fn r_ux_3_an_skey_of_an_unknown_type_is_refused_by_its_type_not_its_length() {
    for length in [0usize, 31, 32, 33, 121] {
        let mut encoded = vec![0x02];
        encoded.extend(std::iter::repeat_n(7u8, length));
        let text = format!("PRIVATE+KEY+log.test+00000000+{}", STANDARD.encode(&encoded));
        assert_eq!(SignerKey::parse(&text).unwrap_err(), KeyError::UnknownAlgorithm(0x02), "{length} bytes");
    }
    // A known type with a seed of the wrong length still says so.
    let text = format!("PRIVATE+KEY+log.test+00000000+{}", STANDARD.encode([ALG_ED25519; 20]));
    assert_eq!(
        SignerKey::parse(&text).unwrap_err(),
        KeyError::WrongKeyLength { algorithm: ALG_ED25519, expected: 32, actual: 19 }
    );
}

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
