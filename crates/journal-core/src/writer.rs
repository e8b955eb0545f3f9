//! The build that writes: a record's envelope names it, and a build-skew
//! refusal names it in its remedy. Its own module so that both `record` and
//! `error` use it without using each other both ways.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The build that wrote a record: names the binary in a refusal's remedy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Build {
    /// Package name.
    pub name: String,
    /// Package version.
    pub version: String,
}

impl Build {
    /// A build by package name and version; a binary names itself with
    /// `Build::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))`.
    pub fn new(name: &str, version: &str) -> Self {
        Self { name: name.to_owned(), version: version.to_owned() }
    }

    /// This build of journal-core.
    pub fn current() -> Self {
        Self::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
    }

    /// [`Build::current`], shared.
    pub fn journal_core() -> &'static Build {
        static CURRENT: std::sync::OnceLock<Build> = std::sync::OnceLock::new();
        CURRENT.get_or_init(Build::current)
    }
}

impl fmt::Display for Build {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.version)
    }
}
