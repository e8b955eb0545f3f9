//! A checkpoint body, and a signed checkpoint note opened with the log's key.
#![no_main]
use libfuzzer_sys::fuzz_target;
use witness::{Checkpoint, SignedCheckpoint};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(checkpoint) = Checkpoint::parse(text)
    {
        // A parsed checkpoint writes back as the same text.
        assert_eq!(checkpoint.to_text(), text);
    }
    let _ = SignedCheckpoint::open(data, &[&agentplane_fuzz::keys().log_verifier]);
});
