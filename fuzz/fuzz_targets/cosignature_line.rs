//! Signature lines (a cosignature among them), checked over a checkpoint.
#![no_main]
use libfuzzer_sys::fuzz_target;
use witness::note::{NoteSignature, parse_signature_lines};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let keys = agentplane_fuzz::keys();
    if let Ok(line) = NoteSignature::parse_line(text) {
        let _ = keys
            .trusted_witness
            .check("fuzz.agentplane.test/log\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", &line);
    }
    if let Ok(lines) = parse_signature_lines(text) {
        let _ = witness::verify_cosignatures(
            "fuzz.agentplane.test/log\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
            &lines,
            std::slice::from_ref(&keys.trusted_witness),
        );
    }
});
