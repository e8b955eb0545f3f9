//! Property tests: every proof of random trees verifies, and any change to a
//! proof, root, leaf, index or size makes it fail (R-LOG-4).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod common;
use common::store_of;

use proptest::prelude::*;
use tlog::{ConsistencyProof, InclusionProof, LeafHash, NodeHash, RootHash, Tree};

fn flip(bytes: &[u8; 32], bit: usize) -> [u8; 32] {
    let mut out = *bytes;
    out[(bit / 8) % 32] ^= 1 << (bit % 8);
    out
}

/// A tree size, a leaf in it, and a bit to flip.
fn inclusion_case() -> impl Strategy<Value = (u64, u64, usize)> {
    (1u64..3000).prop_flat_map(|size| (Just(size), 0..size, 0usize..256))
}

/// Two sizes `0 < old <= new`, and a bit to flip.
fn consistency_case() -> impl Strategy<Value = (u64, u64, usize)> {
    (1u64..3000).prop_flat_map(|new| (1..=new, Just(new), 0usize..256))
}

/// `default` cases, or `PROPTEST_CASES` when set (`cargo xtask soak` sets 10000).
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    #[test]
    fn r_log_4_inclusion_verifies_and_every_mutation_fails((size, index, bit) in inclusion_case()) {
        // One store of twice the size serves the tree and its larger neighbours.
        let store = store_of(size * 2);
        let tree = Tree::new(size, tlog::tree_root(&store, size).unwrap());
        let leaf = LeafHash::of(&index.to_be_bytes());
        let proof = store.prove_inclusion(index, size).unwrap();
        prop_assert_eq!(tree.verify_inclusion(&leaf, index, &proof), Ok(()));

        // Flip one bit of each proof element in turn.
        for position in 0..proof.path().len() {
            let mut path = proof.path().to_vec();
            path[position] = NodeHash::from_hash_bytes(flip(path[position].as_bytes(), bit));
            prop_assert!(tree.verify_inclusion(&leaf, index, &InclusionProof::new(path)).is_err());
        }
        // Flip the root, the leaf.
        let bad_root = Tree::new(size, RootHash::from_hash_bytes(flip(tree.root.as_bytes(), bit)));
        prop_assert!(bad_root.verify_inclusion(&leaf, index, &proof).is_err());
        let bad_leaf = LeafHash::from_hash_bytes(flip(leaf.as_bytes(), bit));
        prop_assert!(tree.verify_inclusion(&bad_leaf, index, &proof).is_err());
        // Another index, another size (with the root of that size: only the
        // claimed parameters change, so a pass would be a forgery).
        for other in [index.wrapping_add(1), index.wrapping_sub(1), index ^ 1, size] {
            if other != index {
                prop_assert!(tree.verify_inclusion(&leaf, other, &proof).is_err());
            }
        }
        for other_size in [size + 1, size.saturating_sub(1), size * 2] {
            if other_size != size && other_size > 0 {
                let other = Tree::new(other_size, tlog::tree_root(&store, other_size).unwrap());
                prop_assert!(other.verify_inclusion(&leaf, index, &proof).is_err());
            }
        }
        // A truncated and an extended proof.
        if let Some((_, shorter)) = proof.path().split_last() {
            prop_assert!(tree.verify_inclusion(&leaf, index, &InclusionProof::new(shorter.to_vec())).is_err());
        }
        let mut longer = proof.path().to_vec();
        longer.push(NodeHash::from(leaf));
        prop_assert!(tree.verify_inclusion(&leaf, index, &InclusionProof::new(longer)).is_err());
    }

    #[test]
    fn r_log_4_consistency_verifies_and_every_mutation_fails((old, new, bit) in consistency_case()) {
        let store = store_of(new + 1);
        let newer = Tree::new(new, tlog::tree_root(&store, new).unwrap());
        let older = Tree::new(old, tlog::tree_root(&store, old).unwrap());
        let proof = store.prove_consistency(old, new).unwrap();
        prop_assert_eq!(newer.verify_extends(&older, &proof), Ok(()));

        for position in 0..proof.path().len() {
            let mut path = proof.path().to_vec();
            path[position] = NodeHash::from_hash_bytes(flip(path[position].as_bytes(), bit));
            prop_assert!(newer.verify_extends(&older, &ConsistencyProof::new(path)).is_err());
        }
        let bad_old = Tree::new(old, RootHash::from_hash_bytes(flip(older.root.as_bytes(), bit)));
        prop_assert!(newer.verify_extends(&bad_old, &proof).is_err());
        let bad_new = Tree::new(new, RootHash::from_hash_bytes(flip(newer.root.as_bytes(), bit)));
        prop_assert!(bad_new.verify_extends(&older, &proof).is_err());
        // Claimed sizes changed, with the honest roots of those sizes.
        let bigger = &store;
        for (o, n) in [(old + 1, new), (old.saturating_sub(1), new), (old, new + 1)] {
            if (o, n) != (old, new) && o <= n && n <= new + 1 {
                let o_tree = Tree::new(o, tlog::tree_root(&bigger, o).unwrap());
                let n_tree = Tree::new(n, tlog::tree_root(&bigger, n).unwrap());
                prop_assert!(n_tree.verify_extends(&o_tree, &proof).is_err(), "sizes {o}->{n} accepted the proof for {old}->{new}");
            }
        }
        if let Some((_, shorter)) = proof.path().split_last() {
            prop_assert!(newer.verify_extends(&older, &ConsistencyProof::new(shorter.to_vec())).is_err());
        }
        let mut longer = proof.path().to_vec();
        longer.push(NodeHash::from_hash_bytes(*older.root.as_bytes()));
        prop_assert!(newer.verify_extends(&older, &ConsistencyProof::new(longer)).is_err());
    }

    #[test]
    fn frontier_rebuilt_from_stored_nodes_continues_identically(size in 0u64..2000, more in 1u64..100) {
        let store = store_of(size + more);
        let mut resumed = tlog::Frontier::from_reader(&store, size).unwrap();
        let mut fresh = tlog::Frontier::new();
        for i in 0..size { fresh.append(LeafHash::of(&i.to_be_bytes())).unwrap(); }
        prop_assert_eq!(&resumed, &fresh);
        for i in size..size + more {
            resumed.append(LeafHash::of(&i.to_be_bytes())).unwrap();
        }
        prop_assert_eq!(resumed.root(), store.tree().root);
    }
}
