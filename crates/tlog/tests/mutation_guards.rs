//! Checks that no other test of this crate held (review 88, a mutation
//! review): each test fails when the check it names is weakened.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod common;
use common::store_of;

use tlog::raw::{self, RawVerifyError};
use tlog::{
    ConsistencyProof, Frontier, FrontierMismatch, HashReader, LeafHash, MissingNode, NodeHash, NodeId, ProveError,
    RootHash, Subtree, Tree, TreeFull, VerifyError,
};

/// R-UX-3: `from_hex` takes 64 hex digits of either case, as its doc says;
/// an uppercase digit is the same hash, not a parse error.
#[test]
fn r_ux_3_a_hash_parses_from_hex_of_either_case() {
    let leaf = LeafHash::of(b"case");
    let lower = leaf.to_string();
    let upper = lower.to_ascii_uppercase();
    assert_ne!(lower, upper, "the hash has hex letters to change case");
    assert_eq!(LeafHash::from_hex(&upper), Ok(leaf));
    assert_eq!(
        NodeHash::from_hex("ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789").map(|h| h.as_bytes()[0]),
        Ok(0xab)
    );
}

/// R-LOG-4: a smaller tree is refused as one that shrinks, whatever else is
/// wrong with it: a head of size 0 with a forged root is named as the log
/// shrinking, the first rule of `Tree::extends`.
#[test]
fn r_log_4_a_shrinking_log_is_named_before_its_empty_root() {
    let store = store_of(2);
    let forged_empty = Tree::new(0, RootHash::from_hash_bytes([9; 32]));
    assert_eq!(
        forged_empty.extends(&store.tree(), &ConsistencyProof::default()),
        Err(VerifyError::Shrinks { old_size: 2, new_size: 0 })
    );
}

/// R-LOG-4: the raw verifiers judge the sizes before the byte strings, as
/// transparency-dev/merkle does: an index outside the tree, or a tree that
/// shrinks, is named as such even when the hashes are malformed too.
#[test]
fn r_log_4_raw_verifiers_name_the_sizes_before_the_hashes() {
    let none: [&[u8]; 0] = [];
    assert_eq!(
        raw::verify_inclusion(&[0; 3], 5, 5, &[0; 32], &none),
        Err(RawVerifyError::Refused(VerifyError::IndexOutOfRange { index: 5, size: 5 }))
    );
    assert_eq!(
        raw::verify_consistency(5, 3, &[0; 3], &[0; 4], &none),
        Err(RawVerifyError::Refused(VerifyError::Shrinks { old_size: 5, new_size: 3 }))
    );
}

/// R-LOG-4: `[0, n)` is a subtree for every n (a checkpoint of size n is
/// one), also past 2^63 leaves, where no power of two covers n.
#[test]
fn r_log_4_a_subtree_from_leaf_zero_is_valid_at_any_size() {
    assert!(Subtree::new(0, u64::MAX).is_ok());
    assert!(Subtree::new(0, (1 << 63) + 1).is_ok());
}

/// R-LOG-7: a frontier is rebuilt only from one hash per set bit of its size;
/// any other count is refused, never a frontier whose root is wrong.
#[test]
fn r_log_7_a_frontier_needs_one_hash_per_set_bit_of_its_size() {
    let hash = NodeHash::from(LeafHash::of(b"x"));
    assert_eq!(Frontier::from_subtrees(3, vec![hash]), Err(FrontierMismatch { size: 3, expected: 2, actual: 1 }));
    assert!(Frontier::from_subtrees(3, vec![hash, hash]).is_ok());
}

/// R-LOG-7: a store that answers fewer hashes than the frontier needs is
/// refused as a short read, never taken as a smaller frontier.
#[test]
fn r_log_7_a_short_read_of_the_frontier_is_refused() {
    struct OneShort;
    impl HashReader for OneShort {
        type Error = MissingNode;
        fn read_hashes(&self, ids: &[NodeId]) -> Result<Vec<NodeHash>, MissingNode> {
            Ok(vec![NodeHash::from(LeafHash::of(b"x")); ids.len() - 1])
        }
    }
    assert!(matches!(Frontier::from_reader(&OneShort, 7), Err(ProveError::ShortRead { asked: 3, returned: 2 })));
}

/// R-LOG-5: a tree of `u64::MAX` leaves takes no more: the append is refused
/// and nothing changes, never a wrap of the size to 0.
#[test]
fn r_log_5_a_full_tree_refuses_the_next_leaf() {
    let hashes = vec![NodeHash::from(LeafHash::of(b"x")); 64];
    let mut full = Frontier::from_subtrees(u64::MAX, hashes).unwrap();
    let root = full.root();
    let mut reported = 0;
    assert_eq!(full.append_with(LeafHash::of(b"one more"), |_, _| reported += 1), Err(TreeFull));
    assert_eq!((full.size(), full.root(), reported), (u64::MAX, root, 0));
}
