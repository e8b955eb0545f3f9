//! R-WIT-10: ML-DSA-44 (type 0x06) input: signature lines checked by a
//! trusted 0x06 witness over a checkpoint and as a subtree statement, and
//! verifier and signer key texts. Nothing panics; nothing but the fixed
//! witness's own lines verifies.
#![no_main]
use libfuzzer_sys::fuzz_target;
use witness::note::{NoteSignature, parse_signature_lines};
use witness::{CosignatureCheck, SignerKey, SubtreeStatement, TrustedWitness, VerifierKey};

const BODY: &str = "fuzz.agentplane.test/log\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let keys = agentplane_fuzz::keys();
    let witness = &keys.trusted_ml_dsa_witness;
    if let Ok(line) = NoteSignature::parse_line(text) {
        if let CosignatureCheck::Valid(cosignature) = witness.check(BODY, &line) {
            assert_eq!(cosignature.public_key, witness.public_key());
        }
        let statement = SubtreeStatement {
            cosigner_name: witness.name().to_owned(),
            timestamp: 0,
            origin: agentplane_fuzz::ORIGIN.to_owned(),
            start: 0,
            end: 1,
            hash: [0; 32],
        };
        let _ = witness.check_subtree(&statement, &line);
    }
    if let Ok(lines) = parse_signature_lines(text) {
        let _ = witness::verify_cosignatures(BODY, &lines, &[witness.clone(), keys.trusted_witness.clone()]);
    }
    if let Ok(key) = VerifierKey::parse(text) {
        assert_eq!(VerifierKey::parse(&key.to_string()).ok(), Some(key));
    }
    let _ = TrustedWitness::parse(text);
    if let Ok(key) = SignerKey::parse(text) {
        assert_eq!(SignerKey::parse(&key.to_skey()).map(|k| k.verifier_key()).ok(), Some(key.verifier_key()));
    }
});
