//! Hostile and degenerate inputs get the typed error that names the problem
//! (R-LOG-4, R-UX-3), and proofs cost O(log n) stored-hash reads (R-LOG-7).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod common;
use common::store_of;

use std::cell::Cell;

use tlog::{
    ConsistencyProof, HashParseError, HashReader, InclusionProof, LeafHash, MemoryHashStore, MissingNode, NodeHash,
    NodeId, ProveError, RootHash, Tree, VerifyError,
};

#[test]
fn r_log_4_index_at_or_beyond_size_is_refused() {
    let store = store_of(5);
    let tree = store.tree();
    let leaf = LeafHash::of(&4u64.to_be_bytes());
    let proof = store.prove_inclusion(4, 5).unwrap();
    assert_eq!(tree.verify_inclusion(&leaf, 5, &proof), Err(VerifyError::IndexOutOfRange { index: 5, size: 5 }));
    assert_eq!(
        tree.verify_inclusion(&leaf, u64::MAX, &proof),
        Err(VerifyError::IndexOutOfRange { index: u64::MAX, size: 5 })
    );
}

#[test]
fn r_log_4_size_zero_tree_has_no_leaves() {
    let empty = Tree::empty();
    assert_eq!(empty.root, RootHash::empty());
    let leaf = LeafHash::of(b"");
    assert_eq!(
        empty.verify_inclusion(&leaf, 0, &InclusionProof::default()),
        Err(VerifyError::IndexOutOfRange { index: 0, size: 0 })
    );
}

#[test]
fn r_log_4_wrong_length_is_named_before_hashing() {
    let store = store_of(8);
    let tree = store.tree();
    let leaf = LeafHash::of(&3u64.to_be_bytes());
    let proof = store.prove_inclusion(3, 8).unwrap();
    let mut longer = proof.path().to_vec();
    longer.push(proof.path()[0]);
    assert_eq!(
        tree.verify_inclusion(&leaf, 3, &InclusionProof::new(longer)),
        Err(VerifyError::WrongProofLength { expected: 3, actual: 4 })
    );
    assert_eq!(
        tree.verify_inclusion(&leaf, 3, &InclusionProof::default()),
        Err(VerifyError::WrongProofLength { expected: 3, actual: 0 })
    );
    let mut other = proof.path().to_vec();
    other.swap(0, 1);
    assert_eq!(tree.verify_inclusion(&leaf, 3, &InclusionProof::new(other)), Err(VerifyError::RootMismatch));
}

#[test]
fn r_log_4_consistency_edges() {
    let store = store_of(8);
    let t8 = store.tree();
    let t5 = Tree::new(5, tlog::tree_root(&store, 5).unwrap());
    let proof = store.prove_consistency(5, 8).unwrap();
    assert_eq!(t8.verify_extends(&t5, &proof), Ok(()));
    // Old larger than new.
    assert_eq!(t5.verify_extends(&t8, &proof), Err(VerifyError::Shrinks { old_size: 8, new_size: 5 }));
    // From the empty tree.
    assert_eq!(t8.verify_extends(&Tree::empty(), &ConsistencyProof::default()), Err(VerifyError::FromEmptyTree));
    // Empty proof where one is needed.
    assert_eq!(
        t8.verify_extends(&t5, &ConsistencyProof::default()),
        Err(VerifyError::WrongProofLength { expected: proof.path().len(), actual: 0 })
    );
    // Same size: empty proof and same root, or a fork.
    assert_eq!(t8.verify_extends(&t8, &ConsistencyProof::default()), Ok(()));
    let fork = Tree::new(8, RootHash::from_hash_bytes([7; 32]));
    assert_eq!(
        fork.verify_extends(&t8, &ConsistencyProof::default()),
        Err(VerifyError::SameSizeDifferentRoots { size: 8 })
    );
    assert_eq!(
        t8.verify_extends(&t8, &proof),
        Err(VerifyError::WrongProofLength { expected: 0, actual: proof.path().len() })
    );
    // The old root wrong, then only the new root wrong.
    let wrong_old = Tree::new(5, RootHash::from_hash_bytes([1; 32]));
    assert_eq!(t8.verify_extends(&wrong_old, &proof), Err(VerifyError::OldRootMismatch));
    let wrong_new = Tree::new(8, RootHash::from_hash_bytes([1; 32]));
    assert_eq!(wrong_new.verify_extends(&t5, &proof), Err(VerifyError::NewRootMismatch));
}

#[test]
fn r_log_4_huge_sizes_do_not_panic() {
    let leaf = LeafHash::of(b"x");
    let tree = Tree::new(u64::MAX, RootHash::empty());
    let proof = InclusionProof::new(vec![NodeHash::from(leaf); 63]);
    assert!(matches!(tree.verify_inclusion(&leaf, u64::MAX - 1, &proof), Err(VerifyError::RootMismatch)));
    let older = Tree::new(u64::MAX - 1, RootHash::empty());
    let consistency = ConsistencyProof::new(vec![NodeHash::from(leaf); 200]);
    assert!(matches!(tree.verify_extends(&older, &consistency), Err(VerifyError::WrongProofLength { .. })));
}

#[test]
fn raw_hashes_of_wrong_length_are_refused_not_padded() {
    assert!(LeafHash::try_from(&[0u8; 31][..]).is_err());
    assert!(RootHash::try_from(&[0u8; 33][..]).is_err());
    let err = tlog::raw::verify_inclusion(&[0u8; 12], 0, 1, &[0u8; 12], &[] as &[&[u8]]).unwrap_err();
    assert!(matches!(err, tlog::raw::RawVerifyError::Malformed { what: "leaf", .. }), "{err:?}");
}

/// R-UX-3: a malformed hash is refused with a variant a caller can match,
/// saying what was wrong (how long it was, where the bad digit is).
#[test]
fn r_ux_3_a_malformed_hash_says_what_was_wrong() {
    assert_eq!(LeafHash::try_from(&[0u8; 31][..]), Err(HashParseError::WrongLength { actual: 31 }));
    assert_eq!(RootHash::try_from(&[][..]), Err(HashParseError::WrongLength { actual: 0 }));
    assert_eq!(NodeHash::from_hex("abc"), Err(HashParseError::WrongHexLength { actual: 3 }));
    let mut text = "0".repeat(64);
    text.replace_range(10..11, "g");
    assert_eq!(RootHash::from_hex(&text), Err(HashParseError::NotHexDigit { position: 10 }));
    // A two-byte character where two digits go: 64 bytes, not hex.
    let accented = format!("\u{e9}{}", "0".repeat(62));
    assert_eq!(RootHash::from_hex(&accented), Err(HashParseError::NotHexDigit { position: 0 }));
    let err = RootHash::try_from(&[0u8; 33][..]).unwrap_err();
    assert_eq!(err.to_string(), "not a 32-byte SHA-256 hash: got 33 bytes");
}

#[test]
fn proving_outside_the_tree_is_a_typed_error() {
    let store = store_of(4);
    assert_eq!(store.prove_inclusion(4, 4), Err(ProveError::IndexOutOfRange { index: 4, size: 4 }));
    assert_eq!(store.prove_consistency(0, 4), Err(ProveError::NoConsistencyProof { old_size: 0, new_size: 4 }));
    assert_eq!(store.prove_consistency(5, 4), Err(ProveError::NoConsistencyProof { old_size: 5, new_size: 4 }));
    // Beyond what the store holds: the reader's own error comes back.
    assert!(matches!(store.prove_inclusion(1, 9), Err(ProveError::Reader(MissingNode(_)))));
    // And a caller walking the causes reaches it.
    let err = store.prove_inclusion(1, 9).unwrap_err();
    let source = std::error::Error::source(&err).expect("the reader's error is the source");
    assert!(source.downcast_ref::<MissingNode>().is_some(), "{source}");
    assert!(std::error::Error::source(&ProveError::<MissingNode>::IndexOutOfRange { index: 4, size: 4 }).is_none());
}

/// A reader that counts the hashes asked for and answers one batch per call.
struct CountingReader<'a> {
    inner: &'a MemoryHashStore,
    hashes_read: Cell<usize>,
    batches: Cell<usize>,
}

impl HashReader for CountingReader<'_> {
    type Error = MissingNode;

    fn read_hashes(&self, ids: &[NodeId]) -> Result<Vec<NodeHash>, MissingNode> {
        self.hashes_read.set(self.hashes_read.get() + ids.len());
        self.batches.set(self.batches.get() + 1);
        self.inner.read_hashes(ids)
    }
}

#[test]
fn r_log_7_proofs_read_o_log_n_stored_hashes() {
    let size = (1u64 << 14) + 12_345;
    let store = store_of(size);
    let log2 = (u64::BITS - size.leading_zeros()) as usize;
    let bound = 2 * log2 + 2;
    let reader = CountingReader { inner: &store, hashes_read: Cell::new(0), batches: Cell::new(0) };
    let mut probes: Vec<u64> = (0..size).step_by(997).collect();
    probes.extend([0, 1, size / 2, size - 2, size - 1]);
    for index in probes {
        for tree_size in [index + 1, size / 2 + index / 2 + 1, size] {
            if index >= tree_size {
                continue;
            }
            reader.hashes_read.set(0);
            reader.batches.set(0);
            tlog::prove_inclusion(&reader, index, tree_size).unwrap();
            assert!(
                reader.hashes_read.get() <= bound,
                "inclusion {index}/{tree_size}: {} reads",
                reader.hashes_read.get()
            );
            assert!(reader.batches.get() <= 1, "one batch per proof");

            reader.hashes_read.set(0);
            tlog::prove_consistency(&reader, index + 1, tree_size).unwrap();
            assert!(
                reader.hashes_read.get() <= bound,
                "consistency {}/{tree_size}: {} reads",
                index + 1,
                reader.hashes_read.get()
            );

            reader.hashes_read.set(0);
            tlog::tree_root(&reader, tree_size).unwrap();
            assert!(reader.hashes_read.get() <= log2);
        }
    }
}

#[test]
fn short_reads_from_a_store_are_detected() {
    struct Liar;
    impl HashReader for Liar {
        type Error = MissingNode;
        fn read_hashes(&self, _: &[NodeId]) -> Result<Vec<NodeHash>, MissingNode> {
            Ok(Vec::new())
        }
    }
    assert!(matches!(tlog::prove_inclusion(&Liar, 3, 10), Err(ProveError::ShortRead { returned: 0, .. })));
    assert!(matches!(tlog::tree_root(&Liar, 10), Err(ProveError::ShortRead { returned: 0, .. })));
}
