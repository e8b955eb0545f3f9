//! The crate's error types: one enum per concern, with variants to match on.

use thiserror::Error;

/// A key that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KeyError {
    /// The key text does not have the vkey or skey shape.
    #[error("malformed key: {0}")]
    Malformed(&'static str),
    /// The key name breaks the signed-note rules.
    #[error(
        "bad key name {name:?}: {reason}; a key name is non-empty, with no white space and no '+'"
    )]
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
    /// No randomness for a fresh key.
    #[error("cannot read randomness for a new key: {0}")]
    Randomness(String),
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
    #[error(
        "the signature of trusted key {name}+{key_id:08x} does not verify: the note was altered or forged"
    )]
    InvalidSignature {
        /// The key name.
        name: String,
        /// The key id.
        key_id: u32,
    },
    /// No signature from a trusted key: the note is well formed but unverified.
    #[error(
        "no signature from a trusted key ({signatures} signatures, none by a key trusted here)"
    )]
    Unverified {
        /// How many signature lines the note has.
        signatures: usize,
    },
    /// Text given to sign breaks the note rules.
    #[error("cannot sign this text: {0}")]
    BadText(&'static str),
}

/// A checkpoint body that is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CheckpointError {
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
    /// The payload is not 8 + 64 bytes.
    #[error("cosignature by {name} has a {length}-byte payload, cosignature/v1 has 72")]
    WrongLength {
        /// The witness's name.
        name: String,
        /// The payload length.
        length: usize,
    },
    /// The Ed25519 signature does not verify.
    #[error(
        "cosignature by trusted witness {name}+{key_id:08x} does not verify over this checkpoint"
    )]
    BadSignature {
        /// The witness's name.
        name: String,
        /// Its key id.
        key_id: u32,
    },
    /// The signing key is not a cosignature key.
    #[error("key {name} has algorithm 0x{algorithm:02x}, not a cosignature/v1 key (0x04)")]
    NotACosigner {
        /// The key name.
        name: String,
        /// Its algorithm.
        algorithm: u8,
    },
}
