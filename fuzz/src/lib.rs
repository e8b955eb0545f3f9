//! Fixed keys the fuzz targets verify against, made once per process.

use std::sync::OnceLock;

use witness::{
    ALG_COSIGNATURE_V1, ALG_ED25519, ALG_ML_DSA_44, Cosigner, LogKey, SignerKey, TrustedWitness, VerifierKey,
};

/// The log the targets' checkpoints claim to come from.
pub const ORIGIN: &str = "fuzz.agentplane.test/log";

/// Keys shared by every execution.
pub struct Keys {
    pub log: LogKey,
    pub log_verifier: VerifierKey,
    pub witness: Cosigner,
    pub trusted_witness: TrustedWitness,
    pub ml_dsa_witness: Cosigner,
    pub trusted_ml_dsa_witness: TrustedWitness,
}

/// The keys (deterministic seeds, so a crash reproduces).
pub fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let log_signer = SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).expect("a valid key name");
        let witness_signer = SignerKey::from_seed("fuzz.agentplane.test/witness", ALG_COSIGNATURE_V1, [2; 32])
            .expect("a valid key name");
        let witness = Cosigner::new(witness_signer).expect("a cosignature key");
        let ml_dsa_signer = SignerKey::from_seed("fuzz.agentplane.test/mldsa-witness", ALG_ML_DSA_44, [3; 32])
            .expect("a valid key name");
        let ml_dsa_witness = Cosigner::new(ml_dsa_signer).expect("an ML-DSA-44 cosignature key");
        Keys {
            trusted_ml_dsa_witness: TrustedWitness::new(ml_dsa_witness.verifier_key()).expect("a witness key"),
            ml_dsa_witness,
            log_verifier: log_signer.verifier_key(),
            log: LogKey::new(log_signer).expect("a log key"),
            trusted_witness: TrustedWitness::new(witness.verifier_key()).expect("a witness key"),
            witness,
        }
    })
}

/// Splits fuzz input at its first `\0`: two inputs from one.
pub fn split(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|byte| *byte == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}
