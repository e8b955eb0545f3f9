#![doc = include_str!("../README.md")]

mod engine;
pub mod inputs;
pub mod report;

pub use engine::{audit, audit_with_progress};
pub use inputs::{
    Anchor, AnchorSource, AuditInputs, DEFAULT_MAX_RUN_BYTES, DEFAULT_WITNESS_TIMEOUT, RecordKey, origin_of_log_keys,
};
pub use report::{
    AnchorKind, AnchorReport, AnchorStatus, AuditReport, Checked, Finding, FindingClass, FindingCode, Incomplete,
    JSON_SCHEMA, NotChecked, Verdict,
};

/// Why an audit could not run (as opposed to what it found).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    /// The store could not be read.
    #[error("reading the store: {0}")]
    Store(#[source] journal_core::JournalError),
    /// An anchor could not be loaded: not a checkpoint of this log, or not
    /// signed by a trusted log key.
    #[error("anchor {label}: {reason}")]
    Anchor {
        /// The anchor's label.
        label: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A record key the auditor gave is not a key.
    #[error("record key {key_id}: {reason}")]
    RecordKey {
        /// The key id.
        key_id: String,
        /// What is wrong.
        reason: String,
    },
    /// No origin given, and no log key to take it from.
    #[error("no origin: give the log's origin, or its log key (whose name is the origin)")]
    NoOrigin,
    /// The origin given is not the log key's name (R-AUD-1): a log's note key
    /// is named after its origin, so one of the two is wrong.
    #[error(
        "origin {origin:?} is not the name of log key {log_key}: a log key is named after its origin; fix one of them"
    )]
    OriginMismatch {
        /// The origin given.
        origin: String,
        /// The log key whose name differs.
        log_key: String,
    },
    /// The origin is not a valid origin line.
    #[error("origin {origin:?}: {reason}")]
    BadOrigin {
        /// The origin given.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// A worker thread stopped without answering for its runs.
    #[error("an audit worker stopped without answering; nothing is reported rather than a partial audit")]
    WorkerFailed,
}
