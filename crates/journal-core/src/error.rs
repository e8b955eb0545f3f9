//! One error enum whose variants carry their class: tamper, build skew,
//! conflict, sealed, I/O (see `JournalError::class`).

use std::fmt;

use thiserror::Error;

use crate::ids::RunId;
use crate::record::Build;

/// What kind of damage a chain check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TamperKind {
    /// The stored hash is not `SHA-256(prev_hash || bytes)`: the bytes or the hash were edited.
    HashMismatch,
    /// `prev_hash` is not the previous record's hash: a record was removed or replaced.
    BrokenLink,
    /// A sequence number is missing.
    Gap,
    /// Records are out of order, or a record names another position or run than where it is stored.
    Reorder,
    /// A stored column (kind, effect key) disagrees with the record's bytes.
    ColumnMismatch,
    /// A signature by a trusted key does not verify over the record's hash.
    BadSignature,
    /// A run's seal or log entry disagrees with its journal.
    SealMismatch,
}

impl fmt::Display for TamperKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::HashMismatch => "stored hash does not match the stored bytes",
            Self::BrokenLink => "prev_hash does not link to the previous record",
            Self::Gap => "a sequence number is missing",
            Self::Reorder => "records are out of order or moved",
            Self::ColumnMismatch => "a stored column disagrees with the record bytes",
            Self::BadSignature => "a trusted key's signature does not verify",
            Self::SealMismatch => "the seal disagrees with the journal",
        })
    }
}

/// A read refused because this build and the writer disagree (R-VER-4): never damage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildSkew {
    /// A version this build does not read, and no upcaster reaches.
    UnknownRecordVersion {
        /// The kind as written.
        kind: String,
        /// The version as written.
        v: u32,
        /// The version this build reads, if it knows the kind.
        readable: Option<u32>,
        /// The build that wrote the record.
        writer: Option<Build>,
        /// What exactly.
        detail: String,
        /// What to do.
        remedy: String,
    },
    /// A shape this build cannot read at a version it does read (an unknown field, a missing one).
    UnreadableRecordShape {
        /// The kind as written.
        kind: String,
        /// The version as written.
        v: u32,
        /// The build that wrote the record.
        writer: Option<Build>,
        /// The parser's complaint.
        detail: String,
        /// What to do.
        remedy: String,
    },
}

impl BuildSkew {
    /// The remedy text: which build wrote it, and which to run.
    pub fn remedy(writer: Option<&Build>) -> String {
        let this = Build::current();
        match writer {
            Some(writer) => format!(
                "this journal was written by {writer}; read it with {writer} (or a later build that reads its records), not {this}"
            ),
            None => {
                format!("the writer is not named; read it with the build that wrote it, not {this}")
            }
        }
    }
}

impl fmt::Display for BuildSkew {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownRecordVersion { kind, v, readable, detail, remedy, .. } => {
                let reads = readable.map_or_else(|| "no version of it".to_owned(), |r| format!("v{r}"));
                write!(f, "UnknownRecordVersion: {kind} v{v} ({detail}; this build reads {reads}). {remedy}")
            }
            Self::UnreadableRecordShape { kind, v, detail, remedy, .. } => {
                write!(f, "UnreadableRecordShape: {kind} v{v}: {detail}. {remedy}")
            }
        }
    }
}

/// The class of an error, for callers that route on it (exit codes, alarms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The stored history is not what was written.
    Tamper,
    /// The reader and the writer builds disagree.
    BuildSkew,
    /// Another writer got there first.
    Conflict,
    /// The run is sealed.
    Sealed,
    /// Storage or I/O failed.
    Io,
    /// The caller's input is invalid.
    Invalid,
}

/// Everything that can go wrong reading or writing the journal.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum JournalError {
    /// Damage or tampering, naming the run and the first bad record (R-CHAIN-5).
    #[error("tamper evidence in run {run} at seq {seq}: {kind}{}", detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Tamper {
        /// The run.
        run: RunId,
        /// The first bad sequence number.
        seq: u64,
        /// What was found.
        kind: TamperKind,
        /// More detail, such as a key id.
        detail: Option<String>,
    },
    /// A build skew (R-VER-4), boxed to keep the error small.
    #[error("{0}")]
    BuildSkew(Box<BuildSkew>),
    /// Another appender moved the run's head (R-STORE-3): nothing was written.
    #[error(
        "conflict on run {run}: its head moved (expected seq {expected_seq}, found {found_seq}); reread the run and retry"
    )]
    Conflict {
        /// The run.
        run: RunId,
        /// The head seq the caller expected.
        expected_seq: u64,
        /// The head seq found.
        found_seq: u64,
    },
    /// The run is sealed: its journal is frozen (R-RUN-2).
    #[error("run {run} is sealed: its journal is frozen and takes no more records")]
    Sealed {
        /// The run.
        run: RunId,
    },
    /// No such run.
    #[error("no run {run} in tenant {tenant}")]
    NotFound {
        /// The tenant.
        tenant: String,
        /// The run.
        run: String,
    },
    /// The store failed.
    #[error("storage: {0}")]
    Io(String),
    /// An identifier breaks the rules.
    #[error("invalid {what} {id:?}: {rule}")]
    InvalidId {
        /// Which identifier.
        what: &'static str,
        /// The value (truncated).
        id: String,
        /// The rule.
        rule: &'static str,
    },
    /// A record that cannot be written as given.
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// A strict verification found a record without a usable signature (R-SIG-3).
    #[error("run {run} seq {seq}: {problem}")]
    Unsigned {
        /// The run.
        run: RunId,
        /// The record.
        seq: u64,
        /// Unsigned, or signed by a key not trusted here.
        problem: String,
    },
}

impl JournalError {
    /// The error's class.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Tamper { .. } => ErrorClass::Tamper,
            Self::BuildSkew(_) => ErrorClass::BuildSkew,
            Self::Conflict { .. } => ErrorClass::Conflict,
            Self::Sealed { .. } => ErrorClass::Sealed,
            Self::Io(_) => ErrorClass::Io,
            Self::NotFound { .. } | Self::InvalidId { .. } | Self::InvalidRecord(_) | Self::Unsigned { .. } => {
                ErrorClass::Invalid
            }
        }
    }

    /// Damage or tampering.
    pub fn is_tamper(&self) -> bool {
        self.class() == ErrorClass::Tamper
    }

    /// A build skew.
    pub fn is_build_skew(&self) -> bool {
        self.class() == ErrorClass::BuildSkew
    }
}
