//! R-LOG-3: roots, stored node hashes and proofs agree with values computed by
//! Go's golang.org/x/mod/sumdb/tlog and github.com/transparency-dev/merkle
//! (`tests/vectors/go.json`, made by `cargo xtask vectors`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;

use common::*;
use tlog::{
    ConsistencyProof, Frontier, HashReader, InclusionProof, LeafHash, MemoryHashStore, NodeHash, NodeId, RootHash, Tree,
};

fn go_vectors() -> serde_json::Value {
    read_json(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/go.json"))
}

fn store_and_roots() -> (serde_json::Value, MemoryHashStore, Vec<RootHash>) {
    let vectors = go_vectors();
    let mut store = MemoryHashStore::new();
    let mut roots = vec![store.tree().root];
    for (i, data) in list_of(&vectors, "leaf_data").iter().enumerate() {
        let leaf = LeafHash::of(&hex_bytes(data.as_str().unwrap_or_default()));
        assert_eq!(leaf.to_string(), list_of(&vectors, "leaf_hashes")[i], "leaf hash {i}");
        store.append(leaf);
        roots.push(store.tree().root);
    }
    (vectors, store, roots)
}

#[test]
fn r_log_3_roots_of_every_size_match_go() {
    let (vectors, store, roots) = store_and_roots();
    let want = list_of(&vectors, "roots");
    assert_eq!(roots.len(), want.len());
    assert!(roots.len() > 64, "the vector file must cover several levels");
    let mut frontier = Frontier::new();
    for (size, want_root) in want.iter().enumerate() {
        let want_root = want_root.as_str().unwrap_or_default();
        assert_eq!(roots[size].to_string(), want_root, "incremental root of size {size}");
        let from_reader = tlog::tree_root(&store, size as u64).expect("stored nodes cover every size");
        assert_eq!(from_reader.to_string(), want_root, "root of size {size} from stored nodes");
        assert_eq!(frontier.root().to_string(), want_root, "frontier root of size {size}");
        if let Some(data) = list_of(&vectors, "leaf_data").get(size) {
            frontier.append(LeafHash::of(&hex_bytes(data.as_str().unwrap_or_default()))).unwrap();
        }
    }
}

#[test]
fn r_log_3_stored_node_hashes_and_layout_match_go() {
    let (vectors, store, _) = store_and_roots();
    let nodes = list_of(&vectors, "stored_nodes");
    assert!(!nodes.is_empty());
    for entry in nodes {
        let id = NodeId::new(u64_of(entry, "level") as u8, u64_of(entry, "index"));
        assert_eq!(id.stored_index(), Some(u64_of(entry, "stored_index")), "Go's StoredHashIndex of {id:?}");
        let got = store.read_hashes(&[id]).expect("node stored");
        assert_eq!(got[0].to_string(), str_of(entry, "hash"), "hash of {id:?}");
    }
}

#[test]
fn r_log_3_inclusion_proofs_match_go() {
    let (vectors, store, roots) = store_and_roots();
    let leaves = list_of(&vectors, "leaf_hashes");
    let cases = list_of(&vectors, "inclusion");
    assert!(cases.len() > 500);
    for case in cases {
        let (index, size) = (u64_of(case, "index"), u64_of(case, "size"));
        let want = InclusionProof::new(node_list(case, "proof"));
        let got = store.prove_inclusion(index, size).expect("proof");
        assert_eq!(got, want, "inclusion proof of {index} in {size}");
        let leaf = LeafHash::from_hex(leaves[index as usize].as_str().unwrap_or_default()).expect("hex");
        Tree::new(size, roots[size as usize]).verify_inclusion(&leaf, index, &want).expect("Go's proof verifies");
    }
}

#[test]
fn r_log_3_consistency_proofs_match_go() {
    let (vectors, store, roots) = store_and_roots();
    let cases = list_of(&vectors, "consistency");
    assert!(cases.len() > 300);
    for case in cases {
        let (old, new) = (u64_of(case, "old"), u64_of(case, "new"));
        let want = ConsistencyProof::new(node_list(case, "proof"));
        let got = store.prove_consistency(old, new).expect("proof");
        assert_eq!(got, want, "consistency proof {old} -> {new}");
        Tree::new(new, roots[new as usize])
            .verify_extends(&Tree::new(old, roots[old as usize]), &want)
            .expect("Go's proof verifies");
    }
}

/// The synthetic tree of `xtask/oracle/huge.go`: made-up hashes for every
/// complete subtree except the ancestors of `paths`, which are hashed from
/// their children, so proofs about those leaves verify in trees no one can build.
struct Synthetic {
    paths: Vec<u64>,
}

impl Synthetic {
    fn node(&self, level: u8, index: u64) -> NodeHash {
        if level > 0 && self.paths.iter().any(|p| p >> level == index) {
            return NodeHash::interior(&self.node(level - 1, 2 * index), &self.node(level - 1, 2 * index + 1));
        }
        use sha2::Digest as _;
        let mut hasher = sha2::Sha256::new();
        hasher.update(b"agentplane/synthetic-node");
        hasher.update([0, level]);
        hasher.update(index.to_be_bytes());
        NodeHash::from_hash_bytes(hasher.finalize().into())
    }
}

impl HashReader for Synthetic {
    type Error = std::convert::Infallible;

    fn read_hashes(&self, ids: &[NodeId]) -> Result<Vec<NodeHash>, Self::Error> {
        Ok(ids.iter().map(|id| self.node(id.level, id.index)).collect())
    }
}

/// Hostile sizes (R-LOG-3, R-UX-3): in trees of up to 2^64 - 1 leaves our
/// proofs and roots are transparency-dev/merkle's, byte for byte, and its
/// proofs verify here (Go's shift semantics past 2^63; nothing panics).
#[test]
fn r_log_3_proofs_near_two_to_the_64_match_go_and_verify() {
    let vectors = go_vectors();
    let huge = &vectors["huge"];
    let inclusions = list_of(huge, "inclusion");
    assert!(inclusions.iter().any(|v| u64_of(v, "size") == u64::MAX), "the vectors reach 2^64 - 1");
    for vector in inclusions {
        let (index, size) = (u64_of(vector, "index"), u64_of(vector, "size"));
        let tree = Synthetic { paths: vec![index, size - 1] };
        let go_proof = hex_list(vector, "proof");
        let root = tlog::tree_root(&tree, size).unwrap();
        assert_eq!(root.to_string(), str_of(vector, "root"), "root of {size}");
        let ours = tlog::prove_inclusion(&tree, index, size).unwrap();
        let ours: Vec<Vec<u8>> = ours.path().iter().map(|h| h.as_bytes().to_vec()).collect();
        assert_eq!(ours, go_proof, "inclusion of {index} in {size}");
        tlog::raw::verify_inclusion(&hex_bytes(str_of(vector, "leaf")), index, size, root.as_bytes(), &go_proof)
            .unwrap_or_else(|err| panic!("Go's inclusion of {index} in {size} refused: {err}"));
        let mut forged = go_proof.clone();
        forged[0][0] ^= 1;
        assert!(
            tlog::raw::verify_inclusion(&hex_bytes(str_of(vector, "leaf")), index, size, root.as_bytes(), &forged)
                .is_err()
        );
    }
    for vector in list_of(huge, "consistency") {
        let (old, new) = (u64_of(vector, "old"), u64_of(vector, "new"));
        let tree = Synthetic { paths: vec![old - 1, new - 1] };
        let go_proof = hex_list(vector, "proof");
        let old_root = tlog::tree_root(&tree, old).unwrap();
        let new_root = tlog::tree_root(&tree, new).unwrap();
        assert_eq!(old_root.to_string(), str_of(vector, "old_root"), "root of {old}");
        assert_eq!(new_root.to_string(), str_of(vector, "new_root"), "root of {new}");
        let ours = tlog::prove_consistency(&tree, old, new).unwrap();
        assert_eq!(ours.path().iter().map(|h| h.as_bytes().to_vec()).collect::<Vec<_>>(), go_proof, "{old} to {new}");
        Tree::new(new, new_root)
            .verify_extends(&Tree::new(old, old_root), &ConsistencyProof::new(node_list(vector, "proof")))
            .unwrap_or_else(|err| panic!("Go's consistency {old} to {new} refused: {err}"));
    }
}

/// Every `u64` input to the verifiers is answered, never a panic (R-UX-3).
#[test]
fn verifiers_answer_every_extreme_size_without_panicking() {
    let leaf = LeafHash::of(b"x");
    let root = RootHash::empty();
    let extremes = [0, 1, 2, 3, (1 << 63) - 1, 1 << 63, (1 << 63) + 1, u64::MAX - 1, u64::MAX];
    for size in extremes {
        for index in extremes {
            for length in [0, 1, 63, 64, 65] {
                let path = InclusionProof::new(vec![NodeHash::from_hash_bytes([7; 32]); length]);
                assert!(Tree::new(size, root).verify_inclusion(&leaf, index, &path).is_err());
                let proof = ConsistencyProof::new(path.path().to_vec());
                let older = Tree::new(index, root);
                let _ = Tree::new(size, root).verify_extends(&older, &proof);
            }
        }
    }
}
