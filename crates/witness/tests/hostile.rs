//! Hostile keys and limits: a key of the wrong type is named by its type, and
//! what this crate signs it can read back (R-NOTE-1, R-UX-3).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use witness::note::{MAX_NOTE_BYTES, MAX_SIGNATURES};
use witness::{ALG_ED25519, KeyError, NoteError, NoteVerifier, SignerKey, TrustedWitness, open, sign};

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

/// R-NOTE-1: what `sign` returns, `open` reads. Text that fits the limit
/// alone but not with its signature line, or more signers than a note may
/// carry, is refused when signing rather than producing a note no reader
/// (Go's included) accepts.
#[test]
fn r_note_1_sign_never_returns_a_note_open_refuses() {
    let signer = SignerKey::from_seed("log.test", ALG_ED25519, [3; 32]).unwrap();
    let verifier = signer.verifier_key();
    let trusted: [&dyn NoteVerifier; 1] = [&verifier];

    let near_limit = format!("{}\n", "a".repeat(MAX_NOTE_BYTES - 50));
    assert!(matches!(sign(&near_limit, &[&signer]), Err(NoteError::BadText(_))));

    // The longest text that still fits signs and opens.
    let line_len = sign("a\n", &[&signer]).unwrap().len() - "a\n".len();
    let fits = format!("{}\n", "a".repeat(MAX_NOTE_BYTES - line_len - 1));
    let note = sign(&fits, &[&signer]).unwrap();
    assert_eq!(note.len(), MAX_NOTE_BYTES);
    assert_eq!(open(note.as_bytes(), &trusted).unwrap().text(), fits);

    let keys: Vec<SignerKey> = (0..=MAX_SIGNATURES)
        .map(|i| SignerKey::from_seed(&format!("log.test/{i}"), ALG_ED25519, [i as u8; 32]).unwrap())
        .collect();
    let many: Vec<&SignerKey> = keys.iter().collect();
    assert!(matches!(sign("text\n", &many), Err(NoteError::BadText(_))));
    let note = sign("text\n", &many[..MAX_SIGNATURES]).unwrap();
    let first = keys[0].verifier_key();
    assert!(open(note.as_bytes(), &[&first]).is_ok());
}

/// R-NOTE-1, a path the test above did not take: a key name may hold a
/// control character (only white space and '+' are refused in a name, as in
/// Go), and `open` refuses a note with any control character but the
/// newline, so `sign` with such a key returned a note no reader opens. It is
/// refused when signing.
#[test]
fn r_note_1_sign_never_returns_a_note_whose_key_name_open_refuses() {
    let signer = SignerKey::from_seed("log\u{1}.test", ALG_ED25519, [4; 32]).unwrap();
    assert!(matches!(sign("text\n", &[&signer]), Err(NoteError::BadText(_))));
    let fine = SignerKey::from_seed("log.test", ALG_ED25519, [4; 32]).unwrap();
    let verifier = fine.verifier_key();
    let trusted: [&dyn NoteVerifier; 1] = [&verifier];
    assert!(open(sign("text\n", &[&fine]).unwrap().as_bytes(), &trusted).is_ok());
}

/// R-UX-3 (review 83's note): no new key is made under a name a person
/// would read as another's (a zero-width space, a right-to-left override);
/// one read from elsewhere is still read, as Go reads it.
#[test]
fn r_ux_3_no_key_is_generated_under_a_name_that_disguises_itself() {
    for name in ["w\u{200b}1", "witness.example/\u{202e}1w", "w1\u{2066}"] {
        let refused = SignerKey::generate(name, ALG_ED25519);
        assert!(matches!(refused, Err(KeyError::BadName { .. })), "{name:?}: {refused:?}");
    }
    assert!(SignerKey::generate("witness.example/w1", ALG_ED25519).is_ok());
    let read = SignerKey::from_seed("w\u{200b}1", ALG_ED25519, [3; 32]).unwrap();
    assert!(SignerKey::parse(&read.to_skey()).is_ok(), "a foreign key's name is still read");
}
