//! The upcaster seam (R-VER-1..6): consulted on every read, even while it is
//! empty, so that its first migration is not also its first exercise.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::error::{BuildSkew, JournalError};
use crate::record::{RecordHeader, RecordKind};
use crate::writer::Build;

/// A pure, total function from the bytes of one version of a kind to the
/// bytes of the next version (R-VER-6). It is a read-time view: the chain is
/// always verified over the bytes as written (R-VER-5).
pub type Upcaster = fn(&[u8]) -> Result<Vec<u8>, String>;

/// What this build reads: upcasters by `(kind name, from version)`, the
/// version it reads for each kind, and the binary that is reading (named in
/// a build-skew remedy as the one not to use, R-VER-4).
#[derive(Clone)]
pub struct Upcasters {
    steps: BTreeMap<(String, u32), Upcaster>,
    /// Versions read for kinds that are not journal-core's own (tests, extensions).
    extra_current: BTreeMap<String, u32>,
    reader: Build,
}

impl Default for Upcasters {
    fn default() -> Self {
        Self { steps: BTreeMap::new(), extra_current: BTreeMap::new(), reader: Build::current() }
    }
}

impl std::fmt::Debug for Upcasters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upcasters").field("steps", &self.steps.keys().collect::<Vec<_>>()).finish()
    }
}

impl Upcasters {
    /// The registry this build ships: empty until the format freeze.
    pub fn builtin() -> Self {
        Self::default()
    }

    /// Names the binary that reads (its package name and version), so a
    /// refusal says which binary is running; defaults to journal-core.
    #[must_use]
    pub fn read_by(mut self, reader: Build) -> Self {
        self.reader = reader;
        self
    }

    /// The binary that reads.
    pub fn reader(&self) -> &Build {
        &self.reader
    }

    /// Registers an upcaster from `from_version` to `from_version + 1` of `kind`.
    pub fn register(&mut self, kind: &str, from_version: u32, upcaster: Upcaster) {
        self.steps.insert((kind.to_owned(), from_version), upcaster);
    }

    /// Declares the version this build reads for a kind that is not one of
    /// journal-core's (a test kind, or an extension's).
    pub fn declare_current(&mut self, kind: &str, version: u32) {
        self.extra_current.insert(kind.to_owned(), version);
    }

    /// The version this build reads for `kind`, if it knows the kind.
    pub fn current_version(&self, kind: &str) -> Option<u32> {
        RecordKind::parse(kind).map(|k| k.current_version()).or_else(|| self.extra_current.get(kind).copied())
    }

    /// Brings `bytes` to the version this build reads, or refuses with
    /// `UnknownRecordVersion` (a version ahead of this build, or one no
    /// upcaster chain reaches).
    pub fn upcast<'a>(&self, header: &RecordHeader, bytes: &'a [u8]) -> Result<Cow<'a, [u8]>, JournalError> {
        let unknown = |readable: Option<u32>, detail: &str| {
            JournalError::BuildSkew(Box::new(BuildSkew::UnknownRecordVersion {
                kind: header.kind.clone(),
                v: header.v,
                readable,
                writer: header.build.clone(),
                detail: detail.to_owned(),
                remedy: BuildSkew::remedy(header.build.as_ref(), &self.reader),
            }))
        };
        let Some(current) = self.current_version(&header.kind) else {
            return Err(unknown(None, "this build does not know the kind"));
        };
        if header.v == current {
            return Ok(Cow::Borrowed(bytes));
        }
        if header.v > current {
            return Err(unknown(Some(current), "written by a newer build"));
        }
        let mut version = header.v;
        let mut out = bytes.to_vec();
        while version < current {
            let Some(step) = self.steps.get(&(header.kind.clone(), version)) else {
                return Err(unknown(Some(current), "no upcaster reaches this build's version"));
            };
            out =
                step(&out).map_err(|err| unknown(Some(current), &format!("upcaster from v{version} failed: {err}")))?;
            version += 1;
        }
        Ok(Cow::Owned(out))
    }
}
