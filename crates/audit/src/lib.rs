#![doc = include_str!("../README.md")]

mod engine;
pub mod inputs;
pub mod report;

pub use engine::{audit, audit_with_progress};
pub use inputs::{Anchor, AnchorSource, AuditInputs, RecordKey};
pub use report::{AuditReport, Checked, Finding, FindingClass, FindingCode, Incomplete, NotChecked};

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
    /// A worker thread stopped without answering for its runs.
    #[error("an audit worker stopped without answering; nothing is reported rather than a partial audit")]
    WorkerFailed,
}
