//! vkeys, skeys and cosignature keys.
#![no_main]
use libfuzzer_sys::fuzz_target;
use witness::{SignerKey, TrustedWitness, VerifierKey};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(key) = VerifierKey::parse(text) {
        assert_eq!(VerifierKey::parse(&key.to_string()).ok(), Some(key));
    }
    if let Ok(key) = SignerKey::parse(text) {
        assert_eq!(SignerKey::parse(&key.to_skey()).map(|k| k.verifier_key()).ok(), Some(key.verifier_key()));
    }
    let _ = TrustedWitness::parse(text);
});
