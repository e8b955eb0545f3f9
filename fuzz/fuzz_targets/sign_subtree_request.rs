//! The sign-subtree body as the witness server reads it (C2SP tlog-witness
//! HEAD): a parsed request round-trips through `to_body`, and its subtree
//! consistency proof, checked against a fixed 13-leaf tree, never panics and
//! verifies only with the subtree's true hash.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tlog::{LeafHash, MemoryHashStore, Tree};
use witness::protocol::SignSubtreeRequest;

/// Leaf i is the single byte i, as in the seeds.
fn tree() -> &'static (MemoryHashStore, Tree) {
    static TREE: OnceLock<(MemoryHashStore, Tree)> = OnceLock::new();
    TREE.get_or_init(|| {
        let mut store = MemoryHashStore::new();
        for i in 0..13u8 {
            store.append(LeafHash::of(&[i]));
        }
        let tree = store.tree();
        (store, tree)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(request) = SignSubtreeRequest::parse(data) else { return };
    assert_eq!(SignSubtreeRequest::parse(request.to_body().as_bytes()).as_ref(), Ok(&request));
    let (store, tree) = tree();
    if tree.verify_subtree(request.subtree, &request.hash, &request.proof).is_ok() {
        assert_eq!(tlog::subtree_hash(store, request.subtree).ok(), Some(request.hash));
    }
});
