//! C2SP tlog-cosignature v1.1.0-rc.1: `cosignature/v1` (Ed25519, type 0x04)
//! and `subtree/v1` (ML-DSA-44, type 0x06) statements by witnesses, signed
//! and verified. A trusted witness's algorithm comes from its key, never
//! from the line it sent.

use ed25519_dalek::Verifier as _;
use tlog::Tree;

use crate::checkpoint::Checkpoint;
use crate::error::{CosignatureError, KeyError};
use crate::keys::{ALG_COSIGNATURE_V1, ALG_ED25519, ALG_ML_DSA_44, MAX_ML_DSA_NAME_LEN, SignerKey, VerifierKey};
use crate::note::NoteSignature;

/// The largest timestamp cosignature/v1 allows (2^63 - 1).
pub const MAX_TIMESTAMP: u64 = i64::MAX as u64;
/// The length of an ML-DSA-44 signature (FIPS 204).
pub const ML_DSA_44_SIGNATURE_LEN: usize = 2420;
/// The `timestamped_signature` of an Ed25519 cosignature: 8 + 64 bytes.
pub const ED25519_PAYLOAD_LEN: usize = 8 + 64;
/// The `timestamped_signature` of an ML-DSA-44 cosignature: 8 + 2420 bytes.
pub const ML_DSA_44_PAYLOAD_LEN: usize = 8 + ML_DSA_44_SIGNATURE_LEN;
/// The fixed label that opens every `subtree/v1` message (12 bytes).
pub const SUBTREE_V1_LABEL: &[u8; 12] = b"subtree/v1\n\0";

/// The exact bytes a cosignature/v1 signature covers: the header line, the
/// time line, then the whole checkpoint text.
pub fn cosignature_v1_message(checkpoint_text: &str, timestamp: u64) -> String {
    format!("cosignature/v1\ntime {timestamp}\n{checkpoint_text}")
}

/// What a `subtree/v1` (ML-DSA-44) cosignature states: that the subtree
/// `[start, end)` of the log `origin` has root `hash`, as seen by
/// `cosigner_name`; with a non-zero `timestamp`, also that it was the
/// largest consistent tree the cosigner had seen at that time. A checkpoint
/// is the subtree `[0, size)` (tlog-cosignature v1.1.0-rc.1, "ML-DSA-44
/// signed message").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubtreeStatement {
    /// The cosigner's name (its key name), 1 to 255 bytes.
    pub cosigner_name: String,
    /// POSIX seconds, or 0 for no "largest tree" statement; 0 whenever `start` is not.
    pub timestamp: u64,
    /// The log's origin line without its newline, 1 to 255 bytes.
    pub origin: String,
    /// The first leaf index of the subtree (0 for a checkpoint).
    pub start: u64,
    /// One past the last leaf index (the tree size for a checkpoint).
    pub end: u64,
    /// The subtree's root hash.
    pub hash: [u8; 32],
}

impl SubtreeStatement {
    /// The statement a checkpoint cosignature makes: `[0, size)` with the
    /// checkpoint's root. Extension lines are not covered.
    pub fn for_checkpoint(cosigner_name: &str, timestamp: u64, checkpoint: &Checkpoint) -> Self {
        let Tree { size, root } = checkpoint.tree();
        Self {
            cosigner_name: cosigner_name.to_owned(),
            timestamp,
            origin: checkpoint.origin().to_owned(),
            start: 0,
            end: size,
            hash: *root.as_bytes(),
        }
    }

    /// The exact signed bytes, the TLS presentation encoding of the spec's
    /// `cosigned_message`: the 12-byte label, the name with a one-byte
    /// length, the big-endian timestamp, the origin with a one-byte length,
    /// start, end (big-endian u64) and the 32-byte hash. Refuses what the
    /// structure cannot hold or the spec forbids.
    pub fn message(&self) -> Result<Vec<u8>, CosignatureError> {
        let bad = |reason| CosignatureError::BadSubtree { name: self.cosigner_name.clone(), reason };
        let name_len = short_len(&self.cosigner_name).ok_or(bad("the cosigner name must be 1 to 255 bytes"))?;
        let origin_len = short_len(&self.origin).ok_or(bad("the origin must be 1 to 255 bytes"))?;
        if self.start != 0 && self.timestamp != 0 {
            return Err(bad("a subtree that does not start at 0 must have timestamp 0"));
        }
        if self.start > self.end || (self.start != 0 && self.start == self.end) {
            return Err(bad("the subtree range is empty or inverted"));
        }
        let mut message =
            Vec::with_capacity(12 + 1 + self.cosigner_name.len() + 8 + 1 + self.origin.len() + 8 + 8 + 32);
        message.extend_from_slice(SUBTREE_V1_LABEL);
        message.push(name_len);
        message.extend_from_slice(self.cosigner_name.as_bytes());
        message.extend_from_slice(&self.timestamp.to_be_bytes());
        message.push(origin_len);
        message.extend_from_slice(self.origin.as_bytes());
        message.extend_from_slice(&self.start.to_be_bytes());
        message.extend_from_slice(&self.end.to_be_bytes());
        message.extend_from_slice(&self.hash);
        Ok(message)
    }
}

/// The longest log origin a `subtree/v1` (ML-DSA-44) statement can carry:
/// it holds the origin with a one-byte length, as it holds the name.
pub const MAX_SUBTREE_ORIGIN_LEN: usize = MAX_ML_DSA_NAME_LEN;

/// The one-byte length of a `<1..2^8-1>` vector, if it fits.
fn short_len(text: &str) -> Option<u8> {
    u8::try_from(text.len()).ok().filter(|&len| len != 0 && usize::from(len) <= MAX_SUBTREE_ORIGIN_LEN)
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

fn parse_checkpoint(name: &str, checkpoint_text: &str) -> Result<Checkpoint, CosignatureError> {
    Checkpoint::parse(checkpoint_text)
        .map_err(|err| CosignatureError::NotACheckpoint { name: name.to_owned(), reason: err.to_string() })
}

/// A witness's cosigning key: Ed25519 cosignature/v1 (algorithm 0x04) or
/// ML-DSA-44 subtree/v1 (algorithm 0x06).
#[derive(Debug, Clone)]
pub struct Cosigner {
    key: SignerKey,
}

impl Cosigner {
    /// A cosigner from a key of algorithm 0x04 or 0x06.
    pub fn new(key: SignerKey) -> Result<Self, CosignatureError> {
        if !matches!(key.algorithm(), ALG_COSIGNATURE_V1 | ALG_ML_DSA_44) {
            return Err(CosignatureError::NotACosigner { name: key.name().to_owned(), algorithm: key.algorithm() });
        }
        Ok(Self { key })
    }

    /// The witness's name.
    pub fn name(&self) -> &str {
        self.key.name()
    }

    /// The signature type byte: 0x04 or 0x06.
    pub fn algorithm(&self) -> u8 {
        self.key.algorithm()
    }

    /// The verifier key clients configure to trust this witness.
    pub fn verifier_key(&self) -> VerifierKey {
        self.key.verifier_key()
    }

    /// Cosigns a checkpoint body as observed at `timestamp` (POSIX seconds,
    /// never 0; taken as an argument so that callers control the clock).
    /// Ed25519 signs the cosignature/v1 message over the whole body; ML-DSA-44
    /// signs the subtree/v1 statement `[0, size)` (the body must parse as a
    /// checkpoint, and its extension lines are not covered), with FIPS 204's
    /// deterministic variant, so equal inputs give equal bytes.
    pub fn cosign(&self, checkpoint_text: &str, timestamp: u64) -> Result<NoteSignature, CosignatureError> {
        let name = self.key.name();
        check_timestamp(name, timestamp)?;
        let signature = match self.key.algorithm() {
            ALG_ML_DSA_44 => {
                let checkpoint = parse_checkpoint(name, checkpoint_text)?;
                return self.sign_statement(&SubtreeStatement::for_checkpoint(name, timestamp, &checkpoint));
            }
            _ => self.key.sign_ed25519(cosignature_v1_message(checkpoint_text, timestamp).as_bytes()),
        };
        let signature = signature
            .ok_or(CosignatureError::NotACosigner { name: name.to_owned(), algorithm: self.key.algorithm() })?;
        let mut payload = Vec::with_capacity(ED25519_PAYLOAD_LEN);
        payload.extend_from_slice(&timestamp.to_be_bytes());
        payload.extend_from_slice(&signature);
        Ok(NoteSignature { name: name.to_owned(), key_id: self.key.key_id(), signature: payload })
    }

    /// Signs a `subtree/v1` statement (ML-DSA-44 keys only); the statement's
    /// cosigner name must be this key's name.
    pub fn sign_statement(&self, statement: &SubtreeStatement) -> Result<NoteSignature, CosignatureError> {
        let name = self.key.name();
        if statement.cosigner_name != name {
            return Err(CosignatureError::BadSubtree {
                name: name.to_owned(),
                reason: "the statement names another cosigner",
            });
        }
        if statement.timestamp > MAX_TIMESTAMP {
            return Err(CosignatureError::TimestampOutOfRange {
                name: name.to_owned(),
                timestamp: statement.timestamp,
            });
        }
        let message = statement.message()?;
        let signature = self
            .key
            .sign_ml_dsa_44(&message)
            .ok_or(CosignatureError::NotACosigner { name: name.to_owned(), algorithm: self.key.algorithm() })?;
        let mut payload = Vec::with_capacity(ML_DSA_44_PAYLOAD_LEN);
        payload.extend_from_slice(&statement.timestamp.to_be_bytes());
        payload.extend_from_slice(&signature);
        Ok(NoteSignature { name: name.to_owned(), key_id: self.key.key_id(), signature: payload })
    }
}

/// How a trusted witness's signatures are checked. New algorithms are new
/// variants here; callers of [`TrustedWitness`] do not change.
#[derive(Debug, Clone)]
enum WitnessAlgorithm {
    CosignatureV1(ed25519_dalek::VerifyingKey),
    /// Boxed: an expanded ML-DSA-44 public key is tens of kilobytes.
    MlDsa44(Box<ml_dsa::VerifyingKey<ml_dsa::MlDsa44>>),
}

impl WitnessAlgorithm {
    fn payload_len(&self) -> usize {
        match self {
            Self::CosignatureV1(_) => ED25519_PAYLOAD_LEN,
            Self::MlDsa44(_) => ML_DSA_44_PAYLOAD_LEN,
        }
    }
}

/// A witness key a client trusts: name, key id and algorithm.
#[derive(Debug, Clone)]
pub struct TrustedWitness {
    key: VerifierKey,
    algorithm: WitnessAlgorithm,
}

impl PartialEq for TrustedWitness {
    fn eq(&self, other: &Self) -> bool {
        // The algorithm is a function of the key.
        self.key == other.key
    }
}

impl Eq for TrustedWitness {}

/// A verified cosignature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cosignature {
    /// The witness's name.
    pub name: String,
    /// Its key id.
    pub key_id: u32,
    /// The key's type: 0x04 (Ed25519) or 0x06 (ML-DSA-44).
    pub algorithm: u8,
    /// The public key that verified it (without the algorithm byte): what a
    /// quorum counts, since a cosignature/v1 signature does not cover the
    /// name (R-AUD-10).
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
    /// The payload has the length of the other cosignature type (an
    /// ML-DSA-44 payload under an Ed25519 key's name and id, or the reverse):
    /// key ids bind the type, so the line is not this key's. Ignored: neither
    /// counted nor failed (R-WIT-10).
    OtherType {
        /// The witness's name.
        name: String,
        /// The payload length found.
        length: usize,
    },
}

impl TrustedWitness {
    /// Trusts a witness's verifier key: a cosignature/v1 key (0x04) or an
    /// ML-DSA-44 key (0x06). A note key (0x01) is refused
    /// ([`KeyError::NotAWitnessKey`]) rather than silently re-derived: its
    /// key id is not the one on the witness's cosignature lines.
    pub fn new(key: VerifierKey) -> Result<Self, KeyError> {
        let algorithm = match key.algorithm() {
            ALG_COSIGNATURE_V1 => WitnessAlgorithm::CosignatureV1(
                key.ed25519_key().ok_or(KeyError::Malformed("not a valid Ed25519 point"))?,
            ),
            ALG_ML_DSA_44 => WitnessAlgorithm::MlDsa44(Box::new(
                key.ml_dsa_44_key().ok_or(KeyError::Malformed("not a 1312-byte ML-DSA-44 public key"))?,
            )),
            ALG_ED25519 => {
                return Err(KeyError::NotAWitnessKey { name: key.name().to_owned(), algorithm: ALG_ED25519 });
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

    /// Checks a signature line that [`Self::matches`] over a checkpoint body,
    /// as an add-checkpoint cosignature: the timestamp must not be 0. For an
    /// ML-DSA-44 key the body must parse as a checkpoint: the signed
    /// statement is `[0, size)` with its origin and root.
    pub fn check(&self, checkpoint_text: &str, signature: &NoteSignature) -> CosignatureCheck {
        let name = self.key.name().to_owned();
        let payload = signature.signature.as_slice();
        let expected = self.algorithm.payload_len();
        if payload.len() != expected {
            if matches!(payload.len(), ED25519_PAYLOAD_LEN | ML_DSA_44_PAYLOAD_LEN) {
                return CosignatureCheck::OtherType { name, length: payload.len() };
            }
            return CosignatureCheck::Invalid(CosignatureError::WrongLength { name, length: payload.len(), expected });
        }
        let Some((time, raw)) = payload.split_first_chunk::<8>() else {
            return CosignatureCheck::Invalid(CosignatureError::WrongLength { name, length: payload.len(), expected });
        };
        let timestamp = u64::from_be_bytes(*time);
        if let Err(err) = check_timestamp(&name, timestamp) {
            return CosignatureCheck::Invalid(err);
        }
        let verified = match &self.algorithm {
            WitnessAlgorithm::CosignatureV1(key) => ed25519_dalek::Signature::from_slice(raw).is_ok_and(|sig| {
                key.verify(cosignature_v1_message(checkpoint_text, timestamp).as_bytes(), &sig).is_ok()
            }),
            WitnessAlgorithm::MlDsa44(key) => {
                let checkpoint = match parse_checkpoint(&name, checkpoint_text) {
                    Ok(checkpoint) => checkpoint,
                    Err(err) => return CosignatureCheck::Invalid(err),
                };
                let statement = SubtreeStatement::for_checkpoint(&name, timestamp, &checkpoint);
                match statement.message() {
                    Ok(message) => verify_ml_dsa_44(key, &message, raw),
                    Err(err) => return CosignatureCheck::Invalid(err),
                }
            }
        };
        if !verified {
            return CosignatureCheck::Invalid(CosignatureError::BadSignature { name, key_id: self.key.key_id() });
        }
        CosignatureCheck::Valid(Cosignature {
            name,
            key_id: self.key.key_id(),
            algorithm: self.key.algorithm(),
            public_key: self.key.public_key().to_vec(),
            timestamp,
            signature: signature.clone(),
        })
    }

    /// Checks a `subtree/v1` cosignature line over `statement` (whose
    /// timestamp is ignored: the line's own is used). ML-DSA-44 keys only;
    /// the statement's cosigner name is this key's name. Subtree
    /// cosignatures from sign-subtree carry timestamp 0, which is allowed here.
    pub fn check_subtree(
        &self,
        statement: &SubtreeStatement,
        signature: &NoteSignature,
    ) -> Result<u64, CosignatureError> {
        let name = self.key.name().to_owned();
        let WitnessAlgorithm::MlDsa44(key) = &self.algorithm else {
            return Err(CosignatureError::NotACosigner { name, algorithm: self.key.algorithm() });
        };
        if !self.matches(signature) {
            return Err(CosignatureError::BadSignature { name, key_id: self.key.key_id() });
        }
        let payload = signature.signature.as_slice();
        let (Some((time, raw)), true) = (payload.split_first_chunk::<8>(), payload.len() == ML_DSA_44_PAYLOAD_LEN)
        else {
            return Err(CosignatureError::WrongLength { name, length: payload.len(), expected: ML_DSA_44_PAYLOAD_LEN });
        };
        let timestamp = u64::from_be_bytes(*time);
        if timestamp > MAX_TIMESTAMP {
            return Err(CosignatureError::TimestampOutOfRange { name, timestamp });
        }
        let statement = SubtreeStatement { cosigner_name: name.clone(), timestamp, ..statement.clone() };
        if !verify_ml_dsa_44(key, &statement.message()?, raw) {
            return Err(CosignatureError::BadSignature { name, key_id: self.key.key_id() });
        }
        Ok(timestamp)
    }
}

/// FIPS 204 ML-DSA.Verify with the empty context string, as
/// transparency-dev/formats and filippo.io/mldsa sign.
fn verify_ml_dsa_44(key: &ml_dsa::VerifyingKey<ml_dsa::MlDsa44>, message: &[u8], signature: &[u8]) -> bool {
    ml_dsa::Signature::<ml_dsa::MlDsa44>::try_from(signature)
        .is_ok_and(|signature| key.verify_with_context(message, &[], &signature))
}

/// Refuses a trust list that names one public key twice, under any names
/// (R-AUD-10): cosignature/v1 does not sign the witness's name, so a line
/// relabelled under a second name would otherwise count as a second witness.
/// Refuses as well two keys with one name and one key id: a line is matched
/// to its key by those alone ([`TrustedWitness::matches`]), so one of them
/// would be checked against the other's key ([`KeyError::AmbiguousWitnessKey`]).
/// The error names both entries.
pub fn check_distinct_keys(trusted: &[TrustedWitness]) -> Result<(), KeyError> {
    for (i, first) in trusted.iter().enumerate() {
        for second in trusted.iter().skip(i + 1) {
            if first.same_key(second) {
                let label = |w: &TrustedWitness| format!("{}+{:08x}", w.name(), w.key_id());
                return Err(KeyError::DuplicateWitnessKey { first: label(first), second: label(second) });
            }
            if first.name() == second.name() && first.key_id() == second.key_id() {
                return Err(KeyError::AmbiguousWitnessKey {
                    first: first.verifier_key().to_string(),
                    second: second.verifier_key().to_string(),
                });
            }
        }
    }
    Ok(())
}

/// The cosignatures found on a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CosignatureReport {
    /// Verified cosignatures, one per distinct public key at most; a quorum
    /// counts the witnesses they come from ([`CosignatureReport::witnesses`]).
    pub valid: Vec<Cosignature>,
    /// Lines from keys not trusted here, and lines whose payload has the other
    /// cosignature type's length under a trusted name and id
    /// ([`CosignatureCheck::OtherType`]): ignored, as the spec says.
    pub ignored: Vec<NoteSignature>,
}

impl CosignatureReport {
    /// How many witnesses the verified cosignatures come from: what a quorum
    /// counts ([`count_witnesses`]).
    pub fn witnesses(&self) -> usize {
        count_witnesses(self.valid.iter().map(|c| (c.name.as_str(), c.public_key.as_slice())))
    }
}

/// How many witnesses a set of verified cosigners (name, public key) are,
/// which is what every quorum counts (R-AUD-10). A witness is a name with
/// its keys (C2SP), so the Ed25519 and ML-DSA-44 keys of one name are one
/// witness; and a cosignature/v1 signature does not cover the name, so one
/// public key under two names is one witness too. Cosigners sharing either
/// are counted once, however they chain.
pub fn count_witnesses<'a>(cosigners: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> usize {
    let cosigners: Vec<(&str, &[u8])> = cosigners.into_iter().collect();
    // Each cosigner's witness is the smallest index it is linked to; linking
    // repeats until no witness changes (a handful of keys, so quadratic is fine).
    let mut witness: Vec<usize> = (0..cosigners.len()).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for (i, (name, key)) in cosigners.iter().enumerate() {
            for (j, (other_name, other_key)) in cosigners.iter().enumerate() {
                let linked = name == other_name || key == other_key;
                if let (true, Some(&mine), Some(&theirs)) = (linked, witness.get(i), witness.get(j))
                    && theirs < mine
                    && let Some(slot) = witness.get_mut(i)
                {
                    *slot = theirs;
                    changed = true;
                }
            }
        }
    }
    witness.iter().enumerate().filter(|&(index, &witness)| index == witness).count()
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
            CosignatureCheck::OtherType { .. } => report.ignored.push(signature.clone()),
        }
    }
    Ok(report)
}
