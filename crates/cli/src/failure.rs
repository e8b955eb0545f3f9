//! Why a command stopped, and the exit code that says so.

use journal_core::export::ExportError;
use serde::Serialize;

/// The class of a failure, which decides the exit code (README, "Exit
/// codes"): 1 findings, 2 usage or I/O, 3 build skew.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The journal, an export or a proof does not verify (exit 1).
    Findings,
    /// The command line or its input is wrong (exit 2).
    Usage,
    /// Storage or I/O failed (exit 2).
    Io,
    /// This binary cannot read what another build wrote (exit 3): never damage.
    BuildSkew,
}

impl Class {
    /// The exit code of this class.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Findings => 1,
            Self::Usage | Self::Io => 2,
            Self::BuildSkew => 3,
        }
    }

    /// The class as JSON and the text name it (`findings`, `usage`, `io`, `build_skew`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Findings => "findings",
            Self::Usage => "usage",
            Self::Io => "io",
            Self::BuildSkew => "build_skew",
        }
    }
}

/// Why a command stopped: its class decides the exit code.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// Findings: the journal, an export or a proof does not verify (exit 1).
    #[error("{0}")]
    Findings(String),
    /// Bad input or usage (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Storage or I/O (exit 2).
    #[error("{0}")]
    Io(String),
    /// This binary cannot read what another build wrote (exit 3): never damage.
    #[error("{0}")]
    BuildSkew(String),
    /// An export that does not verify: findings, or build skew when this
    /// build does not read its format or its records' versions.
    #[error("{0}")]
    Export(#[from] ExportError),
    /// A file given as an export that cannot be one: not UTF-8 text, or
    /// past the limits `verify-export` reads (findings, exit 1).
    #[error("{0}")]
    NotAnExport(String),
}

impl Failure {
    /// The class, which decides the exit code.
    pub fn class(&self) -> Class {
        match self {
            Self::Findings(_) => Class::Findings,
            Self::Usage(_) => Class::Usage,
            Self::Io(_) => Class::Io,
            Self::BuildSkew(_) => Class::BuildSkew,
            Self::Export(err) if err.is_build_skew() => Class::BuildSkew,
            // Too little given (a fork without its source): no finding.
            Self::Export(ExportError::ForkWithoutSource { .. }) => Class::Usage,
            Self::Export(_) | Self::NotAnExport(_) => Class::Findings,
        }
    }

    /// A stable, machine-readable code (`--json`'s `code`): the class's
    /// name, or for an export the kind of refusal.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Export(ExportError::Malformed { .. }) => "export_malformed",
            Self::Export(ExportError::Journal(_)) => "export_records",
            Self::Export(ExportError::Checkpoint(_)) => "export_checkpoint",
            Self::Export(ExportError::Mismatch(_)) => "export_mismatch",
            Self::Export(ExportError::Cosignatures(_)) => "export_cosignatures",
            Self::Export(ExportError::UnreadableFormat { .. }) => "export_format_unreadable",
            Self::NotAnExport(_) => "not_an_export",
            other => other.class().as_str(),
        }
    }

    pub fn exit_code(&self) -> u8 {
        self.class().exit_code()
    }

    /// The one-line message, with its remedy.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

impl From<journal_core::JournalError> for Failure {
    fn from(err: journal_core::JournalError) -> Self {
        // A record no trusted key vouches for, read strictly
        // (`--require-signature`), is a finding about what the store holds,
        // as the audit's, not a mistake in the command.
        if matches!(err, journal_core::JournalError::Unsigned { .. }) {
            return Self::Findings(err.to_string());
        }
        match err.class() {
            journal_core::ErrorClass::Tamper => Self::Findings(err.to_string()),
            journal_core::ErrorClass::BuildSkew => Self::BuildSkew(err.to_string()),
            journal_core::ErrorClass::Io => Self::Io(err.to_string()),
            _ => Self::Usage(err.to_string()),
        }
    }
}

impl From<journal_core::RuntimeError> for Failure {
    fn from(err: journal_core::RuntimeError) -> Self {
        match err {
            journal_core::RuntimeError::Journal(err) => err.into(),
            other => Self::Usage(other.to_string()),
        }
    }
}
