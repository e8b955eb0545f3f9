//! The proof verifiers with hostile sizes, indexes and paths.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tlog::{ConsistencyProof, InclusionProof, LeafHash, NodeHash, RootHash, Tree};

fn u64_at(data: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = data.get(at + i).copied().unwrap_or(0);
    }
    u64::from_be_bytes(bytes)
}

fuzz_target!(|data: &[u8]| {
    let (size, index, old_size) = (u64_at(data, 0), u64_at(data, 8), u64_at(data, 16));
    let rest = data.get(24..).unwrap_or(&[]);
    let hashes: Vec<[u8; 32]> = rest
        .chunks_exact(32)
        .map(|chunk| {
            let mut hash = [0u8; 32];
            hash.copy_from_slice(chunk);
            hash
        })
        .collect();
    let root = RootHash::from_hash_bytes(hashes.first().copied().unwrap_or_default());
    let old_root = RootHash::from_hash_bytes(hashes.get(1).copied().unwrap_or_default());
    let path: Vec<NodeHash> = hashes.iter().skip(2).map(|h| NodeHash::from_hash_bytes(*h)).collect();
    let tree = Tree::new(size, root);
    let leaf = LeafHash::of(rest);
    let _ = tree.verify_inclusion(&leaf, index, &InclusionProof::new(path.clone()));
    let _ = tree.verify_extends(&Tree::new(old_size, old_root), &ConsistencyProof::new(path));
});
