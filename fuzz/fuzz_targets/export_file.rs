//! An export file, verified offline with the log's key.
#![no_main]
use journal_core::{ChainCheck, Upcasters, VerifyOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let keys = agentplane_fuzz::keys();
    let _ = journal_core::export::verify_export(text, std::slice::from_ref(&keys.log_verifier), check);
});
