//! One error enum whose variants carry their class: tamper, build skew,
//! conflict, sealed, I/O (see `JournalError::class`).

use std::fmt;
use std::sync::Arc;

use thiserror::Error;

use crate::ids::{RunId, TenantId};
use crate::writer::Build;

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
    /// A stored value has the wrong length or shape (a hash that is not 32 bytes).
    MalformedRow,
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
            Self::MalformedRow => "a stored value has the wrong length or shape",
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
    /// A write refused by the store because its schema is at another version
    /// than the one this process declared: a newer build migrated it after
    /// this process opened it (a rolling upgrade), so this process would write
    /// under its old idea of the schema. Nothing of the write was kept.
    StoreSchema {
        /// The store (`PostgreSQL`).
        store: String,
        /// The schema version the store is at, if its version row says.
        found: Option<i64>,
        /// The schema version this build writes.
        this_build: i64,
        /// The build that migrated the store to `found`, if it named itself.
        migrated_by: Option<String>,
        /// What was refused.
        detail: String,
        /// What to do.
        remedy: String,
    },
}

impl BuildSkew {
    /// The remedy text: which build wrote it, and which to run instead of
    /// `reader`, the binary that is running.
    pub fn remedy(writer: Option<&Build>, reader: &Build) -> String {
        let this = reader;
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
            Self::StoreSchema { store, detail, remedy, .. } => {
                write!(f, "StoreSchema: {store}: {detail}. {remedy}")
            }
        }
    }
}

/// A storage backend's failure, keeping the backend's own error as its
/// source so a caller can look beneath the message.
#[derive(Debug, Clone)]
pub struct StorageError {
    context: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
    retryable: bool,
}

impl StorageError {
    /// A failure of `context` (what was being done) caused by `source`.
    pub fn new(context: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self { context: context.into(), source: Some(Arc::new(source)), retryable: false }
    }

    /// A failure with no underlying error value.
    pub fn message(context: impl Into<String>) -> Self {
        Self { context: context.into(), source: None, retryable: false }
    }

    /// Marks the failure as one the same call may survive when retried (a
    /// lost connection, a serialization failure): nothing was written.
    #[must_use]
    pub fn retryable(mut self) -> Self {
        self.retryable = true;
        self
    }

    /// Whether the same call may succeed when retried.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }

    /// What was being done.
    pub fn context(&self) -> &str {
        &self.context
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{}: {source}", self.context),
            None => f.write_str(&self.context),
        }
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|source| source as &(dyn std::error::Error + 'static))
    }
}

impl PartialEq for StorageError {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string() && self.retryable == other.retryable
    }
}

impl Eq for StorageError {}

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
    /// Another signer recorded a checkpoint first: nothing was written.
    #[error(
        "the last checkpoint signed for tenant {tenant} is at size {found:?}, not {expected:?}: another signer got there first; sign again"
    )]
    CheckpointConflict {
        /// The tenant.
        tenant: TenantId,
        /// The size the caller read as the last signed.
        expected: Option<u64>,
        /// The size found.
        found: Option<u64>,
    },
    /// The plane was asked to sign a tree that does not extend what it signed
    /// before, or a tree read with holes: it never signs a rollback.
    #[error("refusing to sign the log of tenant {tenant}: {reason}")]
    WouldSignRollback {
        /// The tenant.
        tenant: TenantId,
        /// What is wrong with the tree.
        reason: String,
    },
    /// The run is sealed: its journal is frozen (R-RUN-2).
    #[error("run {run} is sealed: its journal is frozen and takes no more records")]
    Sealed {
        /// The run.
        run: RunId,
    },
    /// Stored data of a tenant is damaged outside any one run's chain: a log
    /// node hash missing or of the wrong length, a stored id that is not one.
    #[error("tamper evidence in the store of tenant {tenant}: {detail}")]
    StoreDamage {
        /// The tenant.
        tenant: TenantId,
        /// What was found.
        detail: String,
    },
    /// The store's own schema, which every tenant shares, was changed behind
    /// the plane (its version row lowered or deleted under a running
    /// process): damage, not a newer build's migration (which raises it,
    /// [`BuildSkew::StoreSchema`]). Nothing of the write was kept.
    #[error("tamper evidence in the schema of the {store} store: {detail}")]
    SchemaDamage {
        /// The store (`PostgreSQL`).
        store: String,
        /// What was found, what was refused, and what to do.
        detail: String,
    },
    /// No such run.
    #[error("no run {run} in tenant {tenant}")]
    NotFound {
        /// The tenant.
        tenant: TenantId,
        /// The run.
        run: RunId,
    },
    /// The run exists but is not sealed, so it has no leaf, no inclusion
    /// proof and no export yet.
    #[error("run {run} of tenant {tenant} is not sealed: it has no place in the log yet (conclude it first)")]
    NotSealed {
        /// The tenant.
        tenant: TenantId,
        /// The run.
        run: RunId,
    },
    /// A consistency proof asked for sizes the log cannot prove.
    #[error("no consistency proof from size {old_size} to size {new_size}: the log has {size} leaves")]
    NoConsistencyProof {
        /// The older size asked for.
        old_size: u64,
        /// The newer size asked for.
        new_size: u64,
        /// The log's size.
        size: u64,
    },
    /// The store failed.
    #[error("storage: {0}")]
    Io(#[from] StorageError),
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
    /// A record whose bytes pass [`crate::record::MAX_RECORD_BYTES`]: nothing
    /// was written.
    #[error(
        "run {run} seq {seq}: the record is {bytes} bytes, past the journal's bound of {max} bytes per record; \
         keep large outputs outside the journal (an object store) and record a reference and its digest"
    )]
    RecordTooLarge {
        /// The run.
        run: RunId,
        /// The record it would have been.
        seq: u64,
        /// Its size in bytes.
        bytes: usize,
        /// The bound.
        max: usize,
    },
    /// An idempotency key past [`crate::append::MAX_IDEMPOTENCY_KEY_BYTES`]:
    /// nothing was written. A key past what a backend's index holds failed
    /// the whole group commit, other tenants' appends with it (R-STORE-4).
    #[error(
        "run {run}: an idempotency key of {bytes} bytes is past the bound of {max}; nothing was written. Name the \
         request with a shorter key (a digest of a long one)"
    )]
    IdempotencyKeyTooLong {
        /// The run it would have admitted.
        run: RunId,
        /// The key's length in bytes.
        bytes: usize,
        /// The bound.
        max: usize,
    },
    /// A bounded read ([`crate::store::Store::read_run_within`]) stopped:
    /// the run's rows hold more than the reader holds of one run. Nothing
    /// of the run is handed over, never a prefix passed off as the run.
    #[error(
        "run {run} of tenant {tenant}: its records hold more than {bound} bytes (the read stopped at {held}), past \
         what this reader holds of one run; read it on the command line (`agentplane show {run}`, `agentplane export \
         {run} -o FILE`), or audit it with `agentplane audit --max-run-bytes BYTES`"
    )]
    RunTooLarge {
        /// The tenant.
        tenant: TenantId,
        /// The run.
        run: RunId,
        /// The bound ([`crate::StoredRecord::held_bytes`] summed over its rows).
        bound: usize,
        /// What the rows read held when the read stopped (past `bound`; a
        /// server that bounds what it sends counts their stored lengths).
        held: usize,
    },
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
            Self::Tamper { .. }
            | Self::StoreDamage { .. }
            | Self::SchemaDamage { .. }
            | Self::WouldSignRollback { .. } => ErrorClass::Tamper,
            Self::BuildSkew(_) => ErrorClass::BuildSkew,
            Self::Conflict { .. } | Self::CheckpointConflict { .. } => ErrorClass::Conflict,
            Self::Sealed { .. } => ErrorClass::Sealed,
            Self::Io(_) => ErrorClass::Io,
            Self::NotFound { .. }
            | Self::NotSealed { .. }
            | Self::NoConsistencyProof { .. }
            | Self::InvalidId { .. }
            | Self::InvalidRecord(_)
            | Self::RecordTooLarge { .. }
            | Self::RunTooLarge { .. }
            | Self::IdempotencyKeyTooLong { .. }
            | Self::Unsigned { .. } => ErrorClass::Invalid,
        }
    }

    /// Damage or tampering.
    pub fn is_tamper(&self) -> bool {
        self.class() == ErrorClass::Tamper
    }

    /// A failure the same call may survive when retried (a conflict, or a
    /// storage failure the backend marked retryable): nothing was written.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Conflict { .. } | Self::CheckpointConflict { .. } => true,
            Self::Io(storage) => storage.is_retryable(),
            _ => false,
        }
    }

    /// A build skew.
    pub fn is_build_skew(&self) -> bool {
        self.class() == ErrorClass::BuildSkew
    }
}
