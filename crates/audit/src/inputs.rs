//! What the auditor holds: the tenant and its origin, the keys it trusts, and
//! the anchors (checkpoints saved earlier, witnesses to read).

use std::time::Duration;

use journal_core::{Build, Origin, TenantId};
use tlog::Tree;
use witness::{Checkpoint, NoteVerifier, SignedCheckpoint, TrustedWitness, VerifierKey, WitnessError, WitnessReader};

use crate::AuditError;
use crate::report::AnchorKind;

/// How much of an unverified note's origin line an error quotes.
const MAX_ORIGIN_SHOWN: usize = 200;

/// The time a witness anchor may take to answer, by default.
pub const DEFAULT_WITNESS_TIMEOUT: Duration = Duration::from_secs(10);

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
        let (signed, verified) = SignedCheckpoint::open(note, &verifiers).map_err(|source| {
            // A note of another log (another tenant's, say) is signed by that
            // log's key, so it fails as unsigned: its first line says why.
            let named = note.split(|byte| *byte == b'\n').next().and_then(|line| std::str::from_utf8(line).ok());
            let reason = match named {
                Some(named) if named != origin.as_str() && !named.is_empty() => format!(
                    "{source}: it names the log {:?}, not {:?}: bring a checkpoint of the audited log, signed by its \
                     key",
                    named.chars().take(MAX_ORIGIN_SHOWN).collect::<String>(),
                    origin.as_str()
                ),
                _ => source.to_string(),
            };
            AuditError::Anchor { label: label.to_owned(), reason }
        })?;
        if signed.checkpoint().origin_id() != origin {
            return Err(AuditError::Anchor {
                label: label.to_owned(),
                reason: format!("a checkpoint of \"{}\", not of \"{origin}\"", signed.checkpoint().origin()),
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
    /// for its cosignatures. A trust list naming one public key twice is
    /// refused (R-AUD-10).
    pub fn witness(url: &str, keys: Vec<TrustedWitness>) -> Result<Self, AuditError> {
        Self::witness_with_timeout(url, keys, DEFAULT_WITNESS_TIMEOUT)
    }

    /// As [`Anchor::witness`], waiting at most `timeout` for the witness:
    /// one that does not answer in time is unavailable.
    pub fn witness_with_timeout(url: &str, keys: Vec<TrustedWitness>, timeout: Duration) -> Result<Self, AuditError> {
        // Named as the witness client shows it: a password in the URL (a
        // witness behind a proxy with basic authentication) never reaches a
        // finding, a report or a terminal (R-OPS-1); requests still carry it.
        let label = witness::client::shown_url(url);
        let reader = WitnessReader::with_timeout(url, keys, timeout)
            .map_err(|source| AuditError::Anchor { label: label.clone(), reason: source.to_string() })?;
        Ok(Self { label, source: AnchorSource::Witness(reader) })
    }

    /// Saved or witness.
    pub fn kind(&self) -> AnchorKind {
        match self.source {
            AnchorSource::Saved { .. } => AnchorKind::Saved,
            AnchorSource::Witness(_) => AnchorKind::Witness,
        }
    }

    /// The tree this anchor holds for `origin`: a saved one's, or the
    /// latest a witness cosigned, read and verified now: its cosignature by
    /// a trusted witness key and, given `log_keys`, the log's signature, as
    /// a saved one's is. A witness can cosign a tree the log never signed; it
    /// is that witness's bad answer (unavailable), not a tree the log must
    /// extend.
    pub(crate) fn read(&self, origin: &Origin, log_keys: &[VerifierKey]) -> AnchorRead {
        match &self.source {
            AnchorSource::Saved { checkpoint, .. } => AnchorRead::Tree(checkpoint.tree()),
            AnchorSource::Witness(reader) => match if log_keys.is_empty() {
                reader.latest(origin.as_str())
            } else {
                reader.latest_signed(origin.as_str(), log_keys)
            } {
                Ok(cosigned) => AnchorRead::Tree(cosigned.checkpoint.tree()),
                // A definite answer that anchors nothing: not a failure.
                Err(
                    err @ (WitnessError::NoMonitorEndpoint { .. }
                    | WitnessError::NothingCosigned { .. }
                    | WitnessError::UnknownOrigin { .. }),
                ) => AnchorRead::Nothing(err.to_string()),
                // Unreachable, timed out, refused, or an answer that does
                // not verify (a cosignature that fails is a lying witness).
                Err(err) => AnchorRead::Unavailable(err.to_string()),
            },
        }
    }
}

/// What reading an anchor gave.
pub(crate) enum AnchorRead {
    /// The tree it holds.
    Tree(Tree),
    /// It answered, and anchors nothing: no monitor endpoint, or nothing
    /// cosigned for the origin.
    Nothing(String),
    /// It could not be read or verified, and why.
    Unavailable(String),
}

/// The origin the auditor's log keys give (R-AUD-1): a log's note key is named
/// after its origin, so every log key's name must equal `given` (`--origin`),
/// and with none given the origin is the keys' name. A mismatch is refused
/// naming both, rather than audited into tamper findings.
pub fn origin_of_log_keys(given: Option<&str>, log_keys: &[VerifierKey]) -> Result<Origin, AuditError> {
    let origin = match (given, log_keys.first()) {
        (Some(given), _) => given,
        (None, Some(key)) => key.name(),
        (None, None) => return Err(AuditError::NoOrigin),
    };
    if let Some(key) = log_keys.iter().find(|key| key.name() != origin) {
        return Err(AuditError::OriginMismatch { origin: origin.to_owned(), log_key: key.to_string() });
    }
    Origin::new(origin).map_err(|err| AuditError::BadOrigin { origin: origin.to_owned(), reason: err.to_string() })
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
    /// An anchor that cannot be read or verified is listed in `not_checked`
    /// instead of failing the audit with `anchor_unavailable` (R-AUD-9).
    pub allow_unavailable_anchor: bool,
    /// The binary auditing, named in a build-skew remedy.
    pub reader: Build,
    /// The most of one run's rows the audit holds in memory
    /// ([`journal_core::StoredRecord::held_bytes`]; [`DEFAULT_MAX_RUN_BYTES`]
    /// unless the auditor says otherwise). A run past it is listed in
    /// `not_checked` (verdict incomplete), its stored hashes still held to
    /// the log and the anchors: a store forged with one enormous run gets a
    /// verdict, not an audit that runs out of memory.
    pub max_run_bytes: usize,
}

/// [`AuditInputs::max_run_bytes`] unless the auditor says otherwise: a run
/// of a gibibyte is far past what agents write (a million records of a
/// kilobyte), and the audit then holds a few such at most.
pub const DEFAULT_MAX_RUN_BYTES: usize = 1 << 30;

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
            allow_unavailable_anchor: false,
            reader: Build::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            max_run_bytes: DEFAULT_MAX_RUN_BYTES,
        }
    }
}
