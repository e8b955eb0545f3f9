//! The protocol rule "B extends A" ([`Tree::extends`], [`Tree::extends_with`]):
//! the empty tree, equal sizes, a shrinking log and a proof only when needed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod common;
use common::store_of;

use std::cell::Cell;

use tlog::{ConsistencyProof, ExtendsError, LeafHash, NodeHash, RootHash, Tree, VerifyError};

fn none() -> ConsistencyProof {
    ConsistencyProof::default()
}

#[test]
fn every_tree_extends_the_empty_tree_with_an_empty_proof() {
    let t8 = store_of(8).tree();
    assert_eq!(t8.extends(&Tree::empty(), &none()), Ok(()));
    assert_eq!(Tree::empty().extends(&Tree::empty(), &none()), Ok(()));
    // The RFC's check alone refuses to judge it.
    assert_eq!(t8.verify_extends(&Tree::empty(), &none()), Err(VerifyError::FromEmptyTree));
    // A proof from the empty tree is refused, not ignored.
    let stray = ConsistencyProof::new(vec![NodeHash::from(LeafHash::of(b"x"))]);
    assert_eq!(t8.extends(&Tree::empty(), &stray), Err(VerifyError::WrongProofLength { expected: 0, actual: 1 }));
}

#[test]
fn a_tree_of_size_zero_carries_the_empty_root() {
    let t8 = store_of(8).tree();
    let bad_empty = Tree::new(0, RootHash::from_hash_bytes([3; 32]));
    assert_eq!(t8.extends(&bad_empty, &none()), Err(VerifyError::EmptyTreeRoot));
    assert_eq!(bad_empty.extends(&Tree::empty(), &none()), Err(VerifyError::EmptyTreeRoot));
    assert_eq!(bad_empty.extends(&bad_empty, &none()), Err(VerifyError::EmptyTreeRoot));
}

#[test]
fn equal_sizes_extend_only_with_equal_roots_and_no_proof() {
    let store = store_of(8);
    let t8 = store.tree();
    assert_eq!(t8.extends(&t8, &none()), Ok(()));
    let fork = Tree::new(8, RootHash::from_hash_bytes([7; 32]));
    assert_eq!(fork.extends(&t8, &none()), Err(VerifyError::SameSizeDifferentRoots { size: 8 }));
    assert_eq!(t8.extends(&fork, &none()), Err(VerifyError::SameSizeDifferentRoots { size: 8 }));
    let proof = store.prove_consistency(5, 8).unwrap();
    assert_eq!(t8.extends(&t8, &proof), Err(VerifyError::WrongProofLength { expected: 0, actual: proof.path().len() }));
}

#[test]
fn a_smaller_tree_never_extends_a_larger_one() {
    let store = store_of(8);
    let t8 = store.tree();
    let t5 = Tree::new(5, tlog::tree_root(&store, 5).unwrap());
    assert_eq!(t5.extends(&t8, &none()), Err(VerifyError::Shrinks { old_size: 8, new_size: 5 }));
    assert_eq!(Tree::empty().extends(&t8, &none()), Err(VerifyError::Shrinks { old_size: 8, new_size: 0 }));
}

#[test]
fn growth_needs_a_proof_that_verifies() {
    let store = store_of(8);
    let t8 = store.tree();
    let t5 = Tree::new(5, tlog::tree_root(&store, 5).unwrap());
    let proof = store.prove_consistency(5, 8).unwrap();
    assert_eq!(t8.extends(&t5, &proof), Ok(()));
    assert_eq!(
        t8.extends(&t5, &none()),
        Err(VerifyError::WrongProofLength { expected: proof.path().len(), actual: 0 })
    );
    let wrong_old = Tree::new(5, RootHash::from_hash_bytes([1; 32]));
    assert_eq!(t8.extends(&wrong_old, &proof), Err(VerifyError::OldRootMismatch));
}

#[test]
fn extends_with_asks_for_a_proof_only_when_the_sizes_need_one() {
    let store = store_of(8);
    let t8 = store.tree();
    let t5 = Tree::new(5, tlog::tree_root(&store, 5).unwrap());
    let asked = Cell::new(0);
    let prove = |old, new| {
        asked.set(asked.get() + 1);
        store.prove_consistency(old, new)
    };
    assert_eq!(t8.extends_with(&Tree::empty(), prove), Ok(none()));
    assert_eq!(t8.extends_with(&t8, prove), Ok(none()));
    assert_eq!(
        t5.extends_with(&t8, prove),
        Err(ExtendsError::Verify(VerifyError::Shrinks { old_size: 8, new_size: 5 }))
    );
    assert_eq!(asked.get(), 0);
    assert_eq!(t8.extends_with(&t5, prove), Ok(store.prove_consistency(5, 8).unwrap()));
    assert_eq!(asked.get(), 1);
    assert!(t8.needs_proof_from(&t5));
    assert!(!t8.needs_proof_from(&t8) && !t8.needs_proof_from(&Tree::empty()) && !t5.needs_proof_from(&t8));
    // The source's failure is passed on as such.
    let failing = |_, _| Err::<ConsistencyProof, _>("store away");
    assert_eq!(t8.extends_with(&t5, failing), Err(ExtendsError::Prove("store away")));
}
