//! R-LOG-3: the published vectors of `tests/vectors/published/` (each file names its source): the RFC 6962
//! hasher pins, the eight-leaf tree, its proofs, and all 196
//! transparency-dev/merkle probes, each judged exactly as published.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod common;

use common::*;
use tlog::{ConsistencyProof, InclusionProof, LeafHash, MemoryHashStore, NodeHash, RootHash, Tree};

#[test]
fn r_log_1_hasher_pins() {
    let v = published_vectors();
    let h = &v["rfc6962_hasher"];
    assert_eq!(RootHash::empty().to_string(), str_of(h, "empty_tree_root"));
    assert_eq!(LeafHash::of(b"").to_string(), str_of(h, "leaf_hash_of_empty"));
    assert_eq!(LeafHash::of(&hex_bytes(str_of(&h["leaf_hash"], "input"))).to_string(), str_of(&h["leaf_hash"], "hash"));
    assert_ne!(RootHash::empty().as_bytes(), LeafHash::of(b"").as_bytes(), "empty root is not an empty leaf");
}

fn tree8() -> (serde_json::Value, MemoryHashStore) {
    let v = published_vectors();
    let mut store = MemoryHashStore::new();
    for data in list_of(&v["tree8"], "leaf_inputs") {
        store.append(LeafHash::of(&hex_bytes(data.as_str().unwrap_or_default())));
    }
    (v, store)
}

#[test]
fn r_log_3_tree8_roots_and_proofs() {
    let (v, store) = tree8();
    for size in 0..=8u64 {
        let want = v["tree8"]["roots_by_size"][size.to_string()].as_str().expect("root");
        assert_eq!(tlog::tree_root(&store, size).expect("root").to_string(), want, "root of {size}");
    }
    for key in ["tree8_published_inclusion_proofs", "tree8_all_inclusion_proofs"] {
        let cases = list_of(&v[key], "vectors");
        assert!(!cases.is_empty());
        for case in cases {
            let (index, size) = (u64_of(case, "leaf_index"), u64_of(case, "tree_size"));
            let want = InclusionProof::new(node_list(case, "proof"));
            assert_eq!(store.prove_inclusion(index, size).expect("proof"), want, "{key} {index}/{size}");
            let tree = Tree::new(size, RootHash::from_hex(str_of(case, "root")).expect("hex"));
            let leaf = LeafHash::from_hex(str_of(case, "leaf_hash")).expect("hex");
            tree.verify_inclusion(&leaf, index, &want).expect("published proof verifies");
        }
    }
    for key in ["tree8_published_consistency_proofs", "tree8_all_consistency_proofs"] {
        for case in list_of(&v[key], "vectors") {
            let (old, new) = (u64_of(case, "size1"), u64_of(case, "size2"));
            let want = ConsistencyProof::new(node_list(case, "proof"));
            assert_eq!(store.prove_consistency(old, new).expect("proof"), want, "{key} {old}->{new}");
            let older = Tree::new(old, RootHash::from_hex(str_of(case, "root1")).expect("hex"));
            let newer = Tree::new(new, RootHash::from_hex(str_of(case, "root2")).expect("hex"));
            newer.verify_extends(&older, &want).expect("published proof verifies");
        }
    }
}

#[test]
fn r_log_1_node_hash_pin_over_raw_children() {
    // The published pin hashes two 4-byte strings; our NodeHash children are
    // 32 bytes by construction, so check the construction on the tree instead:
    // level 1 of the eight-leaf tree is interior(leaf0, leaf1).
    let (v, _) = tree8();
    let leaves = list_of(&v["tree8"], "leaf_hashes");
    let level1 = list_of(&v["tree8"]["node_hashes"], "level1");
    for (i, want) in level1.iter().enumerate() {
        let left = node(leaves[2 * i].as_str().unwrap_or_default());
        let right = node(leaves[2 * i + 1].as_str().unwrap_or_default());
        assert_eq!(NodeHash::interior(&left, &right).to_string(), want.as_str().unwrap_or_default());
    }
}

#[test]
fn r_log_4_every_inclusion_probe_judged_as_published() {
    let v = published_vectors();
    let probes = list_of(&v["merkle_inclusion_probes"], "vectors");
    assert_eq!(probes.len() as u64, u64_of(&v["merkle_inclusion_probes"], "count"));
    for probe in probes {
        let verdict = tlog::raw::verify_inclusion(
            &hex_bytes(str_of(probe, "leaf_hash")),
            u64_of(probe, "leaf_index"),
            u64_of(probe, "tree_size"),
            &hex_bytes(str_of(probe, "root")),
            &hex_list(probe, "proof"),
        );
        let want_err = probe["want_err"].as_bool().expect("want_err");
        assert_eq!(verdict.is_err(), want_err, "{}: {} gave {verdict:?}", str_of(probe, "file"), str_of(probe, "desc"));
    }
}

#[test]
fn r_log_4_every_consistency_probe_judged_as_published() {
    let v = published_vectors();
    let probes = list_of(&v["merkle_consistency_probes"], "vectors");
    assert_eq!(probes.len() as u64, u64_of(&v["merkle_consistency_probes"], "count"));
    for probe in probes {
        let verdict = tlog::raw::verify_consistency(
            u64_of(probe, "size1"),
            u64_of(probe, "size2"),
            &hex_bytes(str_of(probe, "root1")),
            &hex_bytes(str_of(probe, "root2")),
            &hex_list(probe, "proof"),
        );
        let want_err = probe["want_err"].as_bool().expect("want_err");
        assert_eq!(verdict.is_err(), want_err, "{}: {} gave {verdict:?}", str_of(probe, "file"), str_of(probe, "desc"));
    }
}
