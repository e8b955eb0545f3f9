//! Identifiers: runs and tenants.

use std::fmt;

use crate::error::JournalError;

const MAX_ID_LEN: usize = 128;

fn check_id(what: &'static str, text: &str) -> Result<(), JournalError> {
    let ok = !text.is_empty()
        && text.len() <= MAX_ID_LEN
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'/'));
    // The log keeps heads leaves under this name: no run may take it.
    let reserved = what == "run id" && text == crate::heads::HEADS_LEAF_RUN;
    if ok && !reserved {
        Ok(())
    } else {
        Err(JournalError::InvalidId {
            what,
            id: text.chars().take(MAX_ID_LEN).collect(),
            rule: "1 to 128 characters of A-Z a-z 0-9 - _ . : /, not the reserved agentplane:heads",
        })
    }
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Checks and wraps an identifier.
            pub fn new(text: &str) -> Result<Self, JournalError> {
                check_id($what, text)?;
                Ok(Self(text.to_owned()))
            }

            /// The identifier.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = JournalError;

            fn from_str(text: &str) -> Result<Self, JournalError> {
                Self::new(text)
            }
        }
    };
}

id_type!(
    /// A run's identifier, unique within its tenant.
    RunId,
    "run id"
);
impl RunId {
    /// The reserved name a backend keeps heads leaves under among the log's
    /// leaves ([`crate::heads::HEADS_LEAF_RUN`]): never a run's.
    pub(crate) fn heads_leaf() -> Self {
        Self(crate::heads::HEADS_LEAF_RUN.to_owned())
    }

    /// Whether this is the reserved name of heads leaves, not a run.
    pub fn is_heads_leaf(&self) -> bool {
        self.0 == crate::heads::HEADS_LEAF_RUN
    }
}

id_type!(
    /// A tenant: its own runs, its own log and origin (R-STORE-4).
    TenantId,
    "tenant id"
);
