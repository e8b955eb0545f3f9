//! Subtree hashes and subtree consistency proofs
//! (draft-ietf-plants-merkle-tree-certs-03 sections 4.1 and 4.4), pinned to
//! the draft's accumulated test vectors as transparency-dev/merkle reproduces
//! them (`tests/vectors/published/transparency-dev-merkle.json`,
//! `mtc_subtree_accumulated`), and verified both ways: every proof the
//! generator makes verifies, and every change to one is refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod common;

use common::*;
use sha2::{Digest, Sha256};
use tlog::{
    LeafHash, MemoryHashStore, NodeHash, RootHash, Subtree, SubtreeConsistencyProof, Tree, VerifyError,
    prove_subtree_consistency, subtree_hash,
};

const LEAVES: u64 = 130;

/// The draft's tree: leaf i is the single byte i.
fn draft_tree() -> MemoryHashStore {
    let mut store = MemoryHashStore::new();
    for i in 0..LEAVES {
        store.append(LeafHash::of(&[u8::try_from(i).unwrap()]));
    }
    store
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Is `[start, end)` a subtree in the vectors' sense (which also counts the
/// empty `[start, start)`, for which we have no type: it is no subtree to sign).
fn vector_subtree(start: u64, end: u64) -> Option<Option<Subtree>> {
    if start == end { Some(None) } else { Subtree::new(start, end).ok().map(Some) }
}

fn tree_of(store: &MemoryHashStore, size: u64) -> Tree {
    Tree::new(size, tlog::tree_root(store, size).unwrap())
}

#[test]
fn r_log_3_subtree_hashes_match_the_drafts_accumulated_vector() {
    let vectors = published_vectors();
    let want = str_of(&vectors["mtc_subtree_accumulated"], "subtree_hash_sha256");
    let store = draft_tree();
    let mut accumulated = Sha256::new();
    let mut count = 0;
    for end in 0..=LEAVES {
        for start in 0..=end {
            let Some(subtree) = vector_subtree(start, end) else { continue };
            let hash = match subtree {
                None => *RootHash::empty().as_bytes(),
                Some(subtree) => *subtree_hash(&store, subtree).unwrap().as_bytes(),
            };
            accumulated.update(format!("[{start}, {end}) {}\n", hex(&hash)));
            count += 1;
        }
    }
    assert_eq!(count, 712, "subtrees of up to 130 leaves, the empty ones included");
    assert_eq!(hex(&accumulated.finalize()), want);
}

#[test]
fn r_log_3_subtree_consistency_proofs_match_the_drafts_accumulated_vector_and_verify() {
    let vectors = published_vectors();
    let want = str_of(&vectors["mtc_subtree_accumulated"], "subtree_consistency_sha256");
    let store = draft_tree();
    let mut accumulated = Sha256::new();
    let mut verified = 0;
    for n in 0..=LEAVES {
        let tree = tree_of(&store, n);
        for end in 0..=n {
            for start in 0..=end {
                let Some(subtree) = vector_subtree(start, end) else { continue };
                let mut line = format!("[{start}, {end}) {n}");
                if let Some(subtree) = subtree {
                    let proof = prove_subtree_consistency(&store, subtree, n).unwrap();
                    for hash in proof.path() {
                        line.push_str(&format!(" {}", hex(hash.as_bytes())));
                    }
                    let hash = subtree_hash(&store, subtree).unwrap();
                    tree.verify_subtree(subtree, &hash, &proof).unwrap_or_else(|err| {
                        panic!("[{start}, {end}) in {n}: our own proof is refused: {err}");
                    });
                    verified += 1;
                }
                line.push('\n');
                accumulated.update(line);
            }
        }
    }
    assert!(verified > 10_000, "{verified} proofs");
    assert_eq!(hex(&accumulated.finalize()), want);
}

/// `[0, m)` in a tree of n is the RFC 6962 consistency proof from m to n.
#[test]
fn a_prefix_subtree_proof_is_the_rfc_6962_consistency_proof() {
    let store = draft_tree();
    for n in 1..=40 {
        for m in 1..=n {
            let subtree = prove_subtree_consistency(&store, Subtree::new(0, m).unwrap(), n).unwrap();
            let rfc = store.prove_consistency(m, n).unwrap();
            assert_eq!(subtree.path(), rfc.path(), "[0, {m}) in {n}");
        }
    }
}

/// Every one-bit change of every proof hash, of the subtree hash and of the
/// root, every removed or added hash, and every other tree size is refused.
#[test]
fn every_change_to_a_subtree_proof_is_refused() {
    let store = draft_tree();
    let mut checked = 0;
    for n in 1..=33 {
        let tree = tree_of(&store, n);
        for end in 1..=n {
            for start in 0..end {
                let Ok(subtree) = Subtree::new(start, end) else { continue };
                let proof = prove_subtree_consistency(&store, subtree, n).unwrap();
                let hash = subtree_hash(&store, subtree).unwrap();
                for i in 0..proof.path().len() {
                    for bit in [0, 7, 255] {
                        let mut path = proof.path().to_vec();
                        path[i] = flip(&path[i], bit);
                        let err = tree.verify_subtree(subtree, &hash, &SubtreeConsistencyProof::new(path));
                        assert!(
                            matches!(err, Err(VerifyError::OldRootMismatch | VerifyError::NewRootMismatch)),
                            "[{start}, {end}) in {n}, hash {i} bit {bit}: {err:?}"
                        );
                    }
                }
                let err = tree.verify_subtree(subtree, &flip(&hash, 3), &proof);
                assert!(
                    matches!(err, Err(VerifyError::OldRootMismatch | VerifyError::NewRootMismatch)),
                    "[{start}, {end}) in {n}, another subtree hash: {err:?}"
                );
                let other_root = Tree::new(n, RootHash::empty());
                assert_eq!(other_root.verify_subtree(subtree, &hash, &proof), Err(VerifyError::NewRootMismatch));
                let mut longer = proof.path().to_vec();
                longer.push(hash);
                assert!(matches!(
                    tree.verify_subtree(subtree, &hash, &SubtreeConsistencyProof::new(longer)),
                    Err(VerifyError::WrongProofLength { .. })
                ));
                if let Some((_, shorter)) = proof.path().split_last() {
                    assert!(matches!(
                        tree.verify_subtree(subtree, &hash, &SubtreeConsistencyProof::new(shorter.to_vec())),
                        Err(VerifyError::WrongProofLength { .. })
                    ));
                }
                for other in [n - 1, n + 1, 2 * n] {
                    if other >= end && other != n && other <= LEAVES {
                        assert!(
                            tree_of(&store, other).verify_subtree(subtree, &hash, &proof).is_err(),
                            "[{start}, {end}): the proof for {n} verified in a tree of {other}"
                        );
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 500, "{checked} cases");
}

#[test]
fn a_subtree_past_the_tree_is_refused_not_proved() {
    let store = draft_tree();
    let subtree = Subtree::new(8, 16).unwrap();
    assert!(matches!(
        prove_subtree_consistency(&store, subtree, 12),
        Err(tlog::ProveError::IndexOutOfRange { index: 15, size: 12 })
    ));
    let hash = subtree_hash(&store, subtree).unwrap();
    assert_eq!(
        tree_of(&store, 12).verify_subtree(subtree, &hash, &SubtreeConsistencyProof::default()),
        Err(VerifyError::IndexOutOfRange { index: 15, size: 12 })
    );
}

fn flip(hash: &NodeHash, bit: usize) -> NodeHash {
    let mut bytes = *hash.as_bytes();
    bytes[bit / 8 % 32] ^= 1 << (bit % 8);
    NodeHash::from_hex(&hex(&bytes)).unwrap()
}
