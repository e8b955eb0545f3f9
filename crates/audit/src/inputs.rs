//! What the auditor holds: the tenant and its origin, the keys it trusts, and
//! the anchors (checkpoints saved earlier, witnesses to read).

use journal_core::{Build, Origin, TenantId};
use witness::{Checkpoint, NoteVerifier, SignedCheckpoint, TrustedWitness, VerifierKey, WitnessReader};

use crate::AuditError;

/// A checkpoint an observer holds, which the log must extend (R-AUD-4).
#[derive(Debug)]
pub struct Anchor {
    /// How findings name it (a file name, a witness URL).
    pub label: String,
    /// Where it comes from.
    pub source: AnchorSource,
}

/// Where an anchor comes from.
#[derive(Debug)]
pub enum AnchorSource {
    /// A signed checkpoint note saved earlier, verified against the log key
    /// when loaded; a cosigned note keeps its witness lines.
    Saved {
        /// The checkpoint.
        checkpoint: Checkpoint,
        /// The note as saved.
        note: String,
        /// Signature lines by keys other than the log's (witness cosignatures).
        other_signatures: usize,
    },
    /// A witness whose latest cosigned checkpoint of the origin is read
    /// during the audit: no cooperation from the operator (R-AUD-3).
    Witness(WitnessReader),
}

impl Anchor {
    /// A saved signed checkpoint note: verified now against the log's keys,
    /// and refused unless it is a checkpoint of `origin`.
    pub fn saved(label: &str, note: &[u8], log_keys: &[VerifierKey], origin: &Origin) -> Result<Self, AuditError> {
        let verifiers: Vec<&dyn NoteVerifier> = log_keys.iter().map(|key| key as &dyn NoteVerifier).collect();
        let (signed, verified) = SignedCheckpoint::open(note, &verifiers)
            .map_err(|source| AuditError::Anchor { label: label.to_owned(), reason: source.to_string() })?;
        if signed.checkpoint().origin_id() != origin {
            return Err(AuditError::Anchor {
                label: label.to_owned(),
                reason: format!("a checkpoint of {:?}, not of {origin:?}", signed.checkpoint().origin()),
            });
        }
        Ok(Self {
            label: label.to_owned(),
            source: AnchorSource::Saved {
                checkpoint: signed.checkpoint().clone(),
                note: signed.note().to_owned(),
                other_signatures: verified.other_signatures().len(),
            },
        })
    }

    /// A witness to read at `url` (its monitoring prefix), trusting `keys`
    /// for its cosignatures.
    pub fn witness(url: &str, keys: Vec<TrustedWitness>) -> Result<Self, AuditError> {
        let reader = WitnessReader::new(url, keys)
            .map_err(|source| AuditError::Anchor { label: url.to_owned(), reason: source.to_string() })?;
        Ok(Self { label: url.trim_end_matches('/').to_owned(), source: AnchorSource::Witness(reader) })
    }
}

/// A record key the auditor trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordKey {
    /// The key id records name.
    pub key_id: String,
    /// The Ed25519 public key.
    pub public_key: [u8; 32],
}

/// Everything the auditor brings. None of it is a private key.
#[derive(Debug)]
pub struct AuditInputs {
    /// The tenant whose journal and log are audited.
    pub tenant: TenantId,
    /// Its log's origin.
    pub origin: Origin,
    /// The log's note verifier keys the auditor trusts (for saved anchors
    /// and the log's own signed checkpoints).
    pub log_keys: Vec<VerifierKey>,
    /// The record keys the auditor trusts.
    pub record_keys: Vec<RecordKey>,
    /// Every record must carry a signature by a trusted key (R-SIG-3).
    pub require_signature: bool,
    /// The anchors, each held to the log on its own.
    pub anchors: Vec<Anchor>,
    /// The binary auditing, named in a build-skew remedy.
    pub reader: Build,
}

impl AuditInputs {
    /// Inputs with no keys and no anchors: an audit of the chains and the
    /// derived data alone, which says plainly what it could not check.
    pub fn new(tenant: TenantId, origin: Origin) -> Self {
        Self {
            tenant,
            origin,
            log_keys: Vec::new(),
            record_keys: Vec::new(),
            require_signature: false,
            anchors: Vec::new(),
            reader: Build::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        }
    }
}
