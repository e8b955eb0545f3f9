//! R-LOG-3: roots, stored node hashes and proofs agree with values computed by
//! Go's golang.org/x/mod/sumdb/tlog and github.com/transparency-dev/merkle
//! (`tests/vectors/go.json`, made by `cargo xtask vectors`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod common;

use std::path::PathBuf;

use common::*;
use tlog::{ConsistencyProof, Frontier, HashReader, InclusionProof, LeafHash, MemoryHashStore, NodeId, RootHash, Tree};

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
            frontier.append(LeafHash::of(&hex_bytes(data.as_str().unwrap_or_default())));
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
        assert_eq!(id.stored_index(), u64_of(entry, "stored_index"), "Go's StoredHashIndex of {id:?}");
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
