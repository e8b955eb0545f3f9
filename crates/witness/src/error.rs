//! The crate's error types: one enum per concern, with variants to match on.

use thiserror::Error;
use tlog::ProveError;

/// A key that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KeyError {
    /// The key text does not have the vkey or skey shape.
    #[error("malformed key: {0}")]
    Malformed(&'static str),
    /// The key name breaks the signed-note rules.
    #[error("bad key name {name:?}: {reason}; a key name is non-empty, with no white space and no '+'")]
    BadName {
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A signature type this crate does not know.
    #[error("unknown signature algorithm 0x{0:02x}")]
    UnknownAlgorithm(u8),
    /// The key bytes have the wrong length for the algorithm.
    #[error("algorithm 0x{algorithm:02x} takes {expected}-byte keys, got {actual}")]
    WrongKeyLength {
        /// The algorithm byte.
        algorithm: u8,
        /// The length it requires.
        expected: usize,
        /// The length found.
        actual: usize,
    },
    /// The key id in the text is not the one the name and key give.
    #[error(
        "key id {stated:08x} does not match the key (computed {computed:08x}); the key text was altered or mixed up"
    )]
    KeyIdMismatch {
        /// The id written in the key text.
        stated: u32,
        /// The id computed from name, algorithm and key.
        computed: u32,
    },
    /// An Ed25519 public key of small order (the identity or another
    /// torsion point): under RFC 8032 verification one signature verifies
    /// for every message, so anyone could sign as it. No one's key.
    #[error(
        "the key is an Ed25519 point of small order: a signature anyone can make verifies under it for every message, so it vouches for nothing; ask its owner for the real key"
    )]
    WeakKey,
    /// A cosignature key (0x04 Ed25519, 0x06 ML-DSA-44) where a log's note
    /// key is wanted: a log signs its checkpoints with an Ed25519 note key
    /// (0x01), and no note signature verifies under another type here.
    #[error(
        "key {name} is of type 0x{algorithm:02x}, a witness cosignature key (0x04 Ed25519, 0x06 ML-DSA-44), not a log's note key: a log signs its checkpoints with an Ed25519 note key, type 0x01; give the log's own verifier key"
    )]
    NotANoteKey {
        /// The key name.
        name: String,
        /// Its type byte.
        algorithm: u8,
    },
    /// A log's note key (0x01) where a witness's cosignature key is wanted:
    /// a witness is trusted by its cosignature key (0x04 Ed25519, 0x06
    /// ML-DSA-44), whose key id is the one on its cosignature lines; a note
    /// key is not silently re-derived as one.
    #[error(
        "key {name} is of type 0x{algorithm:02x}, a log's note-signing key, not a witness cosignature key: a witness is trusted by its cosignature key, type 0x04 (Ed25519) or 0x06 (ML-DSA-44); ask the witness for that vkey"
    )]
    NotAWitnessKey {
        /// The key name.
        name: String,
        /// Its type byte.
        algorithm: u8,
    },
    /// No randomness for a fresh key.
    #[error("cannot read randomness for a new key: {0}")]
    Randomness(String),
    /// A list of trusted witness keys names one public key twice (R-AUD-10).
    /// A cosignature/v1 signature does not cover the witness's name, so one
    /// key under two names would count as two witnesses.
    #[error(
        "witness keys {first} and {second} are one public key under two names: a quorum counts distinct witnesses, so trust it once"
    )]
    DuplicateWitnessKey {
        /// The first key, as `name+keyid`.
        first: String,
        /// The second key naming the same public key, as `name+keyid`.
        second: String,
    },
    /// A list of trusted witness keys holds two keys with one name and one
    /// key id (R-AUD-10): a signature line is matched to its key by those
    /// two alone, so it could be checked against the wrong one (a key id is
    /// 32 bits: a witness can make one collide). Go's `note.VerifierList`
    /// refuses the same lookup as ambiguous.
    #[error(
        "witness keys {first} and {second} share one name and key id: a cosignature line cannot say which of them made it; trust one of them, or ask the witness for a key with another name"
    )]
    AmbiguousWitnessKey {
        /// The first key, as its whole vkey.
        first: String,
        /// The second key with the same name and key id, as its whole vkey.
        second: String,
    },
}

/// A signed note that is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NoteError {
    /// The bytes do not have the signed-note shape.
    #[error("malformed note: {0}")]
    Malformed(&'static str),
    /// The note is larger than this crate accepts.
    #[error("note of {size} bytes is larger than the {limit}-byte limit")]
    TooLarge {
        /// The size received.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A signature whose name and key id match a trusted key does not verify:
    /// the whole note is refused.
    #[error("the signature of trusted key {name}+{key_id:08x} does not verify: the note was altered or forged")]
    InvalidSignature {
        /// The key name.
        name: String,
        /// The key id.
        key_id: u32,
    },
    /// No signature from a trusted key: the note is well formed but unverified.
    #[error("no signature from a trusted key ({signatures} signatures, none by a key trusted here)")]
    Unverified {
        /// How many signature lines the note has.
        signatures: usize,
    },
    /// A key trusted to verify the note is of a type that verifies no note
    /// signature here (a cosignature key, 0x04 or 0x06): refused before any
    /// line is read, so that a mistaken key is never taken for a forged note.
    #[error(
        "trusted key {name} is of type 0x{algorithm:02x}, a witness cosignature key (0x04 Ed25519, 0x06 ML-DSA-44), not a log's note key: a log signs its checkpoints with an Ed25519 note key, type 0x01; give the log's own verifier key"
    )]
    NotANoteKey {
        /// The key name.
        name: String,
        /// Its type byte.
        algorithm: u8,
    },
    /// Text given to sign breaks the note rules.
    #[error("cannot sign this text: {0}")]
    BadText(&'static str),
}

/// A checkpoint body that is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CheckpointError {
    /// The origin is not one printable line.
    #[error("invalid origin: {0}")]
    BadOrigin(&'static str),
    /// The body is not a tlog-checkpoint.
    #[error("malformed checkpoint: {0}")]
    Malformed(&'static str),
    /// The note around it failed.
    #[error(transparent)]
    Note(#[from] NoteError),
}

/// A cosignature that is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CosignatureError {
    /// The timestamp is zero, which tlog-witness forbids.
    #[error("cosignature by {name} has timestamp 0: the spec requires the observation time")]
    ZeroTimestamp {
        /// The witness's name.
        name: String,
    },
    /// The timestamp is above 2^63-1.
    #[error("cosignature by {name} has timestamp {timestamp} beyond 2^63-1")]
    TimestampOutOfRange {
        /// The witness's name.
        name: String,
        /// The timestamp found.
        timestamp: u64,
    },
    /// The payload is not 8 + 64 bytes (Ed25519) or 8 + 2420 bytes (ML-DSA-44).
    #[error("cosignature by {name} has a {length}-byte payload, its key's type takes {expected}")]
    WrongLength {
        /// The witness's name.
        name: String,
        /// The payload length.
        length: usize,
        /// The length the trusted key's type takes (72 or 2428).
        expected: usize,
    },
    /// The Ed25519 signature does not verify.
    #[error("cosignature by trusted witness {name}+{key_id:08x} does not verify over this checkpoint")]
    BadSignature {
        /// The witness's name.
        name: String,
        /// Its key id.
        key_id: u32,
    },
    /// The cosigned text is not a checkpoint: an ML-DSA-44 cosignature
    /// signs the checkpoint's origin, size and root, so they must be read.
    #[error("cannot cosign or check with {name}: {reason}")]
    NotACheckpoint {
        /// The witness's name.
        name: String,
        /// Why the text could not be read as a checkpoint.
        reason: String,
    },
    /// A `subtree/v1` statement the spec forbids: a non-zero start with a
    /// non-zero timestamp, an empty or inverted range, or a name or origin
    /// longer than 255 bytes.
    #[error("bad subtree/v1 statement by {name}: {reason}")]
    BadSubtree {
        /// The witness's name.
        name: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The signing key is not a cosignature key.
    #[error("key {name} has algorithm 0x{algorithm:02x}, not a cosignature key (0x04 Ed25519 or 0x06 ML-DSA-44)")]
    NotACosigner {
        /// The key name.
        name: String,
        /// Its algorithm.
        algorithm: u8,
    },
}

/// What a witness exchange ended in, when it did not end in a cosignature.
///
/// [`WitnessError::is_integrity`] tells evidence about the log (a fork, a
/// history that moved) from everything else; [`WitnessError::is_retryable`]
/// tells a witness that is busy or away.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WitnessError {
    /// A client configured with no trusted witness key could count nothing.
    #[error("no trusted witness key configured: cosignatures could not be verified, so none would count")]
    NoTrustedKeys,
    /// The witness URL is not usable.
    #[error("bad witness URL {url:?}: {reason}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// Refused before sending: a size-zero checkpoint must carry the empty tree's root.
    #[error("refused before sending: checkpoint of size 0 does not carry the empty tree's root")]
    EmptyTreeRootMismatch,
    /// Refused before sending: the old size is beyond the checkpoint.
    #[error("refused before sending: old size {old_size} is larger than the checkpoint size {new_size}")]
    OldSizeBeyondCheckpoint {
        /// The old size.
        old_size: u64,
        /// The checkpoint's size.
        new_size: u64,
    },
    /// Refused before sending: this log's own consistency proof does not verify
    /// against its own roots. The log's storage is damaged or its history moved.
    #[error(
        "refused before sending: this log's consistency proof from {old_size} to {new_size} does not verify against its own roots ({reason}); its stored tree is damaged or its history moved"
    )]
    OwnProofInvalid {
        /// The old size.
        old_size: u64,
        /// The new size.
        new_size: u64,
        /// The verifier's reason.
        reason: String,
    },
    /// The log could not produce a root or proof.
    #[error("this log could not produce its proof from {old_size} to {new_size}: {source}")]
    History {
        /// The old size.
        old_size: u64,
        /// The new size.
        new_size: u64,
        /// Why the log could not.
        #[source]
        source: HistoryError,
    },
    /// Integrity: the witness holds a different tree at the old size (a 422 on
    /// growth). Either the proof this log built is wrong, or its history moved.
    #[error(
        "witness {witness} refused the consistency proof from {old_size} to {new_size} (422): either this log built a wrong proof, or its history moved since the witness cosigned size {old_size}"
    )]
    Inconsistent {
        /// The witness URL.
        witness: String,
        /// The old size sent.
        old_size: u64,
        /// The checkpoint's size.
        new_size: u64,
    },
    /// Integrity: the witness cosigned another root for this same size.
    #[error("witness {witness} holds a different root for size {size}: two histories of this log exist (fork)")]
    Fork {
        /// The witness URL.
        witness: String,
        /// The size with two roots.
        size: u64,
    },
    /// Integrity: the witness cosigned a larger tree than this log has
    /// reached: the log lost history.
    #[error(
        "witness {witness} has cosigned size {witness_size} of this log, larger than anything the log has ({size}): the log lost history"
    )]
    Rollback {
        /// The witness URL.
        witness: String,
        /// The size the witness cosigned.
        witness_size: u64,
        /// The checkpoint's size.
        size: u64,
    },
    /// Not integrity: the witness cosigned a larger size of this log, which
    /// the log has also reached (another instance of the plane submitted
    /// first). Sign the log's current checkpoint and submit again.
    #[error(
        "witness {witness} has cosigned size {witness_size}, which this log has reached since its checkpoint of size {size} was signed: stale, sign afresh"
    )]
    Stale {
        /// The witness URL.
        witness: String,
        /// The size the witness cosigned.
        witness_size: u64,
        /// The stale checkpoint's size.
        size: u64,
    },
    /// 404: the witness does not know this origin.
    #[error("witness {witness} does not know origin {origin:?} (404); its operator must configure this log")]
    UnknownOrigin {
        /// The witness URL.
        witness: String,
        /// The origin.
        origin: String,
    },
    /// 403: the witness does not accept this checkpoint's signature (litewitness
    /// also answers 403 for an unknown origin).
    #[error(
        "witness {witness} refused the checkpoint signature (403): it does not trust this log key for the origin, or (litewitness) does not know the origin"
    )]
    Forbidden {
        /// The witness URL.
        witness: String,
    },
    /// 400: the witness found the request malformed.
    #[error("witness {witness} called the request malformed (400): {body}")]
    BadRequest {
        /// The witness URL.
        witness: String,
        /// The start of its answer.
        body: String,
    },
    /// 409 twice: the witness's size moved between attempts.
    #[error("witness {witness} is at size {witness_size}, which moved during the exchange (409 after a retry)")]
    Conflict {
        /// The witness URL.
        witness: String,
        /// The size it reported last.
        witness_size: u64,
    },
    /// The witness is rate limiting or failing (429, 5xx): try later.
    #[error("witness {witness} is unavailable ({status}{}); try again later", quoted(said))]
    Unavailable {
        /// The witness URL.
        witness: String,
        /// The HTTP status.
        status: u16,
        /// The start of what its answer said (control characters escaped),
        /// empty for an answer with no body: a witness that cannot write
        /// its state says so, and its operator must hear it rather than a
        /// guess.
        said: String,
    },
    /// A transport failure or timeout: try later.
    #[error("cannot reach witness {witness}: {reason}")]
    Transport {
        /// The witness URL.
        witness: String,
        /// What failed.
        reason: String,
    },
    /// An answer that breaks the protocol.
    #[error("witness {witness} gave a bad answer ({status}): {reason}")]
    BadAnswer {
        /// The witness URL.
        witness: String,
        /// The HTTP status.
        status: u16,
        /// What is wrong with it.
        reason: String,
    },
    /// A 200 whose lines include no verified cosignature from a trusted key.
    #[error("witness {witness} answered 200 without a cosignature from any trusted witness key")]
    NoTrustedCosignature {
        /// The witness URL.
        witness: String,
    },
    /// A cosignature line from a trusted key failed.
    #[error("witness {witness}: {source}")]
    Cosignature {
        /// The witness URL.
        witness: String,
        /// The failure.
        source: CosignatureError,
    },
    /// Nothing cosigned yet: our witness's 404 on the monitor endpoint, with
    /// the body that says so.
    #[error("witness {witness} has cosigned nothing for origin {origin:?}")]
    NothingCosigned {
        /// The witness URL.
        witness: String,
        /// The origin.
        origin: String,
    },
    /// Any other 404 on the monitor endpoint: the witness serves no monitor
    /// endpoint (litewitness and transparency-dev/witness do not), so what it
    /// cosigned cannot be read from it.
    #[error(
        "witness {witness} serves no monitor endpoint (404 on GET {path}): what it cosigned cannot be read from it"
    )]
    NoMonitorEndpoint {
        /// The witness URL.
        witness: String,
        /// The path asked for.
        path: String,
    },
    /// The trusted witness keys given are not a usable trust list.
    #[error("the trusted witness keys: {0}")]
    TrustList(#[source] KeyError),
}

impl WitnessError {
    /// Evidence about the log: a witness saw it fork or its history move.
    pub fn is_integrity(&self) -> bool {
        matches!(self, Self::Inconsistent { .. } | Self::Fork { .. } | Self::Rollback { .. })
    }

    /// A witness that is busy or away: the same request may succeed later.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable { .. } | Self::Transport { .. } | Self::Conflict { .. } | Self::Stale { .. })
    }
}

/// Why a log could not give a root or a consistency proof.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HistoryError {
    /// The log has not reached a size asked for.
    #[error("the log has not reached size {size}")]
    NotReached {
        /// The size asked for.
        size: u64,
    },
    /// The sizes have no consistency proof (old is zero or beyond new).
    #[error("no consistency proof from size {old_size} to size {new_size}")]
    NoProof {
        /// The older size.
        old_size: u64,
        /// The newer size.
        new_size: u64,
    },
    /// The log's own stored data is damaged: a missing or malformed hash.
    #[error("the log's stored hashes are damaged: {reason}")]
    Damaged {
        /// What is damaged.
        reason: String,
    },
    /// The log's store failed to answer.
    #[error("the log's store failed: {reason}")]
    Store {
        /// What failed.
        reason: String,
    },
}

impl<E: std::fmt::Display> From<ProveError<E>> for HistoryError {
    fn from(err: ProveError<E>) -> Self {
        match err {
            ProveError::IndexOutOfRange { size, .. } => Self::NotReached { size },
            ProveError::NoConsistencyProof { old_size, new_size } => Self::NoProof { old_size, new_size },
            ProveError::ShortRead { .. } => Self::Damaged { reason: err.to_string() },
            ProveError::Reader(reader) => Self::Store { reason: reader.to_string() },
        }
    }
}

/// `said` as the end of a parenthesis: `: "said"`, or nothing for an empty answer.
fn quoted(said: &str) -> String {
    // Escaped already, where it was read: quoted here, not escaped again.
    if said.trim().is_empty() { String::new() } else { format!(": \"{said}\"") }
}
