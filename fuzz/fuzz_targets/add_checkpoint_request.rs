//! The add-checkpoint request, as a witness server reads it: the body, the
//! note opened with the log's key, the consistency proof from an old tree.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tlog::{LeafHash, MemoryHashStore, Tree};
use witness::SignedCheckpoint;
use witness::protocol::AddCheckpointRequest;

fuzz_target!(|data: &[u8]| {
    let Ok(request) = AddCheckpointRequest::parse(data) else { return };
    let keys = agentplane_fuzz::keys();
    let Ok((signed, _)) = SignedCheckpoint::open(request.checkpoint_note.as_bytes(), &[&keys.log_verifier]) else {
        return;
    };
    // The witness's view: a small log it saw before.
    let mut seen = MemoryHashStore::new();
    for i in 0..request.old_size.min(64) {
        seen.append(LeafHash::of(&i.to_be_bytes()));
    }
    let old = if request.old_size <= 64 { seen.tree() } else { Tree::new(request.old_size, seen.tree().root) };
    let _ = signed.checkpoint().tree().verify_extends(&old, &request.proof);
});
