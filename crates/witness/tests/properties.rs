//! Property tests: format then parse is the identity for notes and
//! checkpoints, and any changed byte of a signed note breaks it (R-NOTE-1).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use proptest::prelude::*;
use tlog::{RootHash, Tree};
use witness::{ALG_ED25519, Checkpoint, NoteVerifier, SignerKey, open, sign};

fn line() -> impl Strategy<Value = String> {
    // Printable text, including non-ASCII, never a control character or '\n'.
    "[a-zA-Z0-9 ./:+=_\\-é中—]{1,40}"
}

fn checkpoint() -> impl Strategy<Value = Checkpoint> {
    ("[a-z0-9./\\-]{1,30}", any::<u64>(), any::<[u8; 32]>(), prop::collection::vec(line(), 0..3)).prop_map(
        |(origin, size, root, extensions)| {
            Checkpoint::with_extensions(
                &witness::Origin::new(&origin).unwrap(),
                Tree::new(size, RootHash::from_hash_bytes(root)),
                extensions,
            )
            .unwrap()
        },
    )
}

/// `default` cases, or `PROPTEST_CASES` when set (`cargo xtask soak` sets 10000).
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(default)
}

proptest! {
    #[test]
    fn r_note_1_checkpoint_format_then_parse_is_identity(checkpoint in checkpoint()) {
        prop_assert_eq!(Checkpoint::parse(&checkpoint.to_text()).unwrap(), checkpoint);
    }

    #[test]
    fn r_note_1_note_sign_then_open_is_identity_and_any_byte_change_breaks_it(
        lines in prop::collection::vec(line(), 1..5),
        seed in any::<[u8; 32]>(),
        position in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let key = SignerKey::from_seed("prop.test/log", ALG_ED25519, seed).unwrap();
        let vkey = key.verifier_key();
        let trusted: [&dyn NoteVerifier; 1] = [&vkey];
        let note = sign(&text, &[&key]).unwrap();
        let opened = open(note.as_bytes(), &trusted).unwrap();
        prop_assert_eq!(opened.text(), text.as_str());
        prop_assert_eq!(opened.to_note(), note.clone());

        let mut bytes = note.into_bytes();
        let at = position.index(bytes.len());
        bytes[at] ^= flip;
        prop_assert!(open(&bytes, &trusted).is_err(), "a note with byte {} changed still verified", at);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(512)))]

    /// R-UX-3: hostile bytes get a typed refusal, never a panic.
    #[test]
    fn r_ux_3_arbitrary_input_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..600), text in "\\PC{0,300}") {
        let key = SignerKey::from_seed("prop.test/log", ALG_ED25519, [1; 32]).unwrap().verifier_key();
        let trusted: [&dyn NoteVerifier; 1] = [&key];
        let _ = open(&bytes, &trusted);
        let _ = Checkpoint::parse(&text);
        let _ = witness::protocol::AddCheckpointRequest::parse(&bytes);
        let _ = witness::parse_signature_lines(&text);
        let _ = witness::VerifierKey::parse(&text);
        let _ = witness::SignerKey::parse(&text);
        let _ = witness::TrustedWitness::parse(&text);
        let _ = witness::protocol::parse_conflict_size(Some("text/x.tlog.size"), &bytes);
    }
}
