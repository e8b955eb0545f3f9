//! C2SP tlog-cosignature: cosignature/v1 (Ed25519, type 0x04) statements by
//! witnesses, signed and verified; ML-DSA-44 (0x06) lines are recognised and
//! reported as unsupported, never as valid or invalid.

use ed25519_dalek::Verifier as _;

use crate::error::{CosignatureError, KeyError};
use crate::keys::{ALG_COSIGNATURE_V1, ALG_ED25519, ALG_ML_DSA_44, SignerKey, VerifierKey};
use crate::note::NoteSignature;

/// The largest timestamp cosignature/v1 allows (2^63 - 1).
pub const MAX_TIMESTAMP: u64 = i64::MAX as u64;
const PAYLOAD_LEN: usize = 8 + 64;

/// The exact bytes a cosignature/v1 signature covers: the header line, the
/// time line, then the whole checkpoint text.
pub fn cosignature_v1_message(checkpoint_text: &str, timestamp: u64) -> String {
    format!("cosignature/v1\ntime {timestamp}\n{checkpoint_text}")
}

fn check_timestamp(name: &str, timestamp: u64) -> Result<(), CosignatureError> {
    if timestamp == 0 {
        return Err(CosignatureError::ZeroTimestamp { name: name.to_owned() });
    }
    if timestamp > MAX_TIMESTAMP {
        return Err(CosignatureError::TimestampOutOfRange { name: name.to_owned(), timestamp });
    }
    Ok(())
}

/// A witness's cosigning key (algorithm 0x04).
#[derive(Debug, Clone)]
pub struct Cosigner {
    key: SignerKey,
}

impl Cosigner {
    /// A cosigner from an Ed25519 key of algorithm 0x04.
    pub fn new(key: SignerKey) -> Result<Self, CosignatureError> {
        if key.algorithm() != ALG_COSIGNATURE_V1 {
            return Err(CosignatureError::NotACosigner { name: key.name().to_owned(), algorithm: key.algorithm() });
        }
        Ok(Self { key })
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        self.key.name()
    }

    /// The verifier key clients configure to trust this witness.
    pub fn verifier_key(&self) -> VerifierKey {
        self.key.verifier_key()
    }

    /// Cosigns a checkpoint body as observed at `timestamp` (POSIX seconds;
    /// taken as an argument so that callers control the clock).
    pub fn cosign(&self, checkpoint_text: &str, timestamp: u64) -> Result<NoteSignature, CosignatureError> {
        check_timestamp(self.key.name(), timestamp)?;
        let signature = self.key.sign_bytes(cosignature_v1_message(checkpoint_text, timestamp).as_bytes());
        let mut payload = Vec::with_capacity(PAYLOAD_LEN);
        payload.extend_from_slice(&timestamp.to_be_bytes());
        payload.extend_from_slice(&signature);
        Ok(NoteSignature { name: self.key.name().to_owned(), key_id: self.key.key_id(), signature: payload })
    }
}

/// How a trusted witness's signatures are checked. New algorithms are new
/// variants here; callers of [`TrustedWitness`] do not change.
#[derive(Debug, Clone, PartialEq, Eq)]
enum WitnessAlgorithm {
    CosignatureV1(ed25519_dalek::VerifyingKey),
    /// Known, not verified by this build (ML-DSA-44).
    Unsupported(u8),
}

/// A witness key a client trusts: name, key id and algorithm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedWitness {
    key: VerifierKey,
    algorithm: WitnessAlgorithm,
}

/// A verified cosignature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cosignature {
    /// The witness's name.
    pub name: String,
    /// Its key id.
    pub key_id: u32,
    /// The public key that verified it (without the algorithm byte): what a
    /// quorum counts, since the signature does not cover the name (R-AUD-10).
    pub public_key: Vec<u8>,
    /// When it observed the checkpoint (POSIX seconds, never 0).
    pub timestamp: u64,
    /// The line as received.
    pub signature: NoteSignature,
}

/// What checking one signature line against one trusted witness found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CosignatureCheck {
    /// It verifies.
    Valid(Cosignature),
    /// It does not: bad signature, zero timestamp, wrong length.
    Invalid(CosignatureError),
    /// The witness signs with an algorithm this build cannot verify.
    Unsupported {
        /// The witness's name.
        name: String,
        /// Its algorithm byte.
        algorithm: u8,
    },
}

impl TrustedWitness {
    /// Trusts a witness's verifier key. A cosignature key is algorithm 0x04
    /// (or 0x06, recognised but reported as unsupported). A note key (0x01)
    /// is refused rather than silently re-derived: its key id is not the one
    /// on the witness's cosignature lines.
    pub fn new(key: VerifierKey) -> Result<Self, KeyError> {
        let algorithm = match key.algorithm() {
            ALG_COSIGNATURE_V1 => WitnessAlgorithm::CosignatureV1(
                key.ed25519_key().ok_or(KeyError::Malformed("not a valid Ed25519 point"))?,
            ),
            ALG_ML_DSA_44 => WitnessAlgorithm::Unsupported(ALG_ML_DSA_44),
            ALG_ED25519 => {
                return Err(KeyError::Malformed(
                    "this is a note-signing key (0x01); a witness is trusted by its cosignature/v1 key (0x04)",
                ));
            }
            other => return Err(KeyError::UnknownAlgorithm(other)),
        };
        Ok(Self { key, algorithm })
    }

    /// Parses a vkey and trusts it.
    pub fn parse(vkey: &str) -> Result<Self, KeyError> {
        Self::new(VerifierKey::parse(vkey)?)
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        self.key.name()
    }

    /// Its key id.
    pub fn key_id(&self) -> u32 {
        self.key.key_id()
    }

    /// Its verifier key.
    pub fn verifier_key(&self) -> &VerifierKey {
        &self.key
    }

    /// Its public key bytes (without the algorithm byte): who the witness
    /// is, whatever name it is listed under.
    pub fn public_key(&self) -> &[u8] {
        self.key.public_key()
    }

    /// Whether `other` is the same key under any name: same algorithm and
    /// public key.
    pub fn same_key(&self, other: &Self) -> bool {
        self.key.algorithm() == other.key.algorithm() && self.key.public_key() == other.key.public_key()
    }

    /// Whether this witness's key made `signature` (by name and key id).
    pub fn matches(&self, signature: &NoteSignature) -> bool {
        signature.name == self.key.name() && signature.key_id == self.key.key_id()
    }

    /// Checks a signature line that [`Self::matches`] over a checkpoint body.
    pub fn check(&self, checkpoint_text: &str, signature: &NoteSignature) -> CosignatureCheck {
        let name = self.key.name().to_owned();
        let key = match &self.algorithm {
            WitnessAlgorithm::Unsupported(algorithm) => {
                return CosignatureCheck::Unsupported { name, algorithm: *algorithm };
            }
            WitnessAlgorithm::CosignatureV1(key) => key,
        };
        let Some((time, ed25519)) = signature.signature.split_first_chunk::<8>() else {
            return CosignatureCheck::Invalid(CosignatureError::WrongLength {
                name,
                length: signature.signature.len(),
            });
        };
        if signature.signature.len() != PAYLOAD_LEN {
            return CosignatureCheck::Invalid(CosignatureError::WrongLength {
                name,
                length: signature.signature.len(),
            });
        }
        let timestamp = u64::from_be_bytes(*time);
        if let Err(err) = check_timestamp(&name, timestamp) {
            return CosignatureCheck::Invalid(err);
        }
        let Ok(ed25519) = ed25519_dalek::Signature::from_slice(ed25519) else {
            return CosignatureCheck::Invalid(CosignatureError::BadSignature { name, key_id: self.key.key_id() });
        };
        let message = cosignature_v1_message(checkpoint_text, timestamp);
        if key.verify(message.as_bytes(), &ed25519).is_err() {
            return CosignatureCheck::Invalid(CosignatureError::BadSignature { name, key_id: self.key.key_id() });
        }
        CosignatureCheck::Valid(Cosignature {
            name,
            key_id: self.key.key_id(),
            public_key: self.key.public_key().to_vec(),
            timestamp,
            signature: signature.clone(),
        })
    }
}

/// Refuses a trust list that names one public key twice, under any names
/// (R-AUD-10): cosignature/v1 does not sign the witness's name, so a line
/// relabelled under a second name would otherwise count as a second witness.
/// The error names both entries.
pub fn check_distinct_keys(trusted: &[TrustedWitness]) -> Result<(), KeyError> {
    for (i, first) in trusted.iter().enumerate() {
        if let Some(second) = trusted.iter().skip(i + 1).find(|other| first.same_key(other)) {
            let label = |w: &TrustedWitness| format!("{}+{:08x}", w.name(), w.key_id());
            return Err(KeyError::DuplicateWitnessKey { first: label(first), second: label(second) });
        }
    }
    Ok(())
}

/// The cosignatures found on a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CosignatureReport {
    /// Verified cosignatures, one per distinct public key at most: a quorum
    /// is `valid.len()` (R-AUD-10).
    pub valid: Vec<Cosignature>,
    /// Lines of trusted witnesses whose algorithm this build does not verify:
    /// neither counted nor failed.
    pub unsupported: Vec<(String, u8)>,
    /// Lines from keys not trusted here: ignored, as the spec says.
    pub ignored: Vec<NoteSignature>,
}

/// Checks every signature line against the trusted witnesses. A line from a
/// trusted witness that does not verify is an error, never a skipped line.
/// Cosignatures are counted by public key: two lines that verify under one
/// key (the same line relabelled under a second trusted name) are one.
pub fn verify_cosignatures(
    checkpoint_text: &str,
    signatures: &[NoteSignature],
    trusted: &[TrustedWitness],
) -> Result<CosignatureReport, CosignatureError> {
    let mut report = CosignatureReport::default();
    for signature in signatures {
        let Some(witness) = trusted.iter().find(|witness| witness.matches(signature)) else {
            report.ignored.push(signature.clone());
            continue;
        };
        match witness.check(checkpoint_text, signature) {
            CosignatureCheck::Valid(cosignature) => {
                if !report.valid.iter().any(|seen| seen.public_key == cosignature.public_key) {
                    report.valid.push(cosignature);
                }
            }
            CosignatureCheck::Invalid(err) => return Err(err),
            CosignatureCheck::Unsupported { name, algorithm } => report.unsupported.push((name, algorithm)),
        }
    }
    Ok(report)
}
