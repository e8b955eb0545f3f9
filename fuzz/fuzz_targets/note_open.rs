//! A signed note opened with a trusted key.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let keys = agentplane_fuzz::keys();
    if let Ok(note) = witness::note::open(data, &[&keys.log_verifier]) {
        // What `open` accepted was signed by the trusted key, byte for byte.
        assert_eq!(note.to_note().as_bytes(), data);
    }
});
