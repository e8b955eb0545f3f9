//! Why a command stopped, and the exit code that says so.

/// Why a command stopped: decides the exit code.
#[derive(Debug)]
pub enum Failure {
    /// Findings: the journal, an export or a proof does not verify (exit 1).
    Findings(String),
    /// Bad input or usage (exit 2).
    Usage(String),
    /// Storage or I/O (exit 2).
    Io(String),
    /// This binary cannot read what another build wrote (exit 3): never damage.
    BuildSkew(String),
}

impl Failure {
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Findings(_) => 1,
            Self::Usage(_) | Self::Io(_) => 2,
            Self::BuildSkew(_) => 3,
        }
    }

    /// The one-line message, with its remedy.
    pub fn message(&self) -> &str {
        match self {
            Self::Findings(m) | Self::Usage(m) | Self::Io(m) | Self::BuildSkew(m) => m,
        }
    }
}

impl From<journal_core::JournalError> for Failure {
    fn from(err: journal_core::JournalError) -> Self {
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
