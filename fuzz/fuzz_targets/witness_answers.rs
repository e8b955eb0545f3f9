//! A witness's answers, as our client reads them: a 200 body of cosignature
//! lines over the checkpoint it sent, and a 409 body naming a size.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tlog::{LeafHash, MemoryHashStore};
use witness::{Checkpoint, Origin};

fuzz_target!(|data: &[u8]| {
    let _ = witness::protocol::parse_conflict_size(Some(witness::protocol::SIZE_CONTENT_TYPE), data);
    let Ok(lines) = std::str::from_utf8(data) else { return };
    let keys = agentplane_fuzz::keys();
    let mut tree = MemoryHashStore::new();
    tree.append(LeafHash::of(b"run 0"));
    let origin = Origin::new(agentplane_fuzz::ORIGIN).expect("a valid origin");
    let checkpoint = Checkpoint::new(&origin, tree.tree());
    let _ = witness::quorum::verified_cosignatures(
        "http://witness.test",
        &checkpoint,
        lines,
        std::slice::from_ref(&keys.trusted_witness),
        200,
    );
});
