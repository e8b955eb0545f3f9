//! The leaf a sealed run enters the plane's log with.

use tlog::LeafHash;

use witness::Origin;

use crate::chain::{ChainHash, ExpectedHead, VerifiedRecord};
use crate::ids::RunId;

/// The bytes of a sealed run's log leaf, exactly:
///
/// ```text
/// agentplane/seal/v1\n
/// origin <the tenant's log origin>\n
/// run <run id>\n
/// records <number of records, decimal>\n
/// head <hash of the last record, 64 lowercase hex digits>\n
/// ```
///
/// The leaf hash is RFC 6962's `SHA-256(0x00 || bytes)`. The origin binds the
/// leaf to one tenant's log; the record count and head hash bind it to the
/// whole chain, so a run edited, truncated or extended after sealing no
/// longer matches its leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealLeaf {
    /// The tenant's log origin.
    pub origin: Origin,
    /// The sealed run.
    pub run: RunId,
    /// How many records the sealed journal holds.
    pub record_count: u64,
    /// The hash of its last record.
    pub head: ChainHash,
}

impl SealLeaf {
    /// The leaf of `run` in `origin`'s log, sealed at `head` (its last
    /// record): the one place a seal leaf is made from a chain.
    pub fn new(origin: &Origin, run: &RunId, head: ExpectedHead) -> Self {
        Self { origin: origin.clone(), run: run.clone(), record_count: head.seq, head: head.hash }
    }

    /// The leaf a verified chain gives: `run` in `origin`'s log, at the last
    /// verified record (its seq and hash); `None` for a chain with no record.
    /// The one place a seal read back is derived from records: the journal's
    /// read, an export's verification and the audit compare the stored leaf
    /// against this one ([`SealLeaf::matches`]). Whether the run's last
    /// conclusion seals is the caller's question, asked of the same chain.
    pub fn of_verified_chain(origin: &Origin, run: &RunId, records: &[VerifiedRecord]) -> Option<Self> {
        let last = records.last()?;
        Some(Self::new(origin, run, ExpectedHead { seq: last.stored.seq, hash: last.stored.hash }))
    }

    /// Whether `leaf_bytes` (a stored or exported seal) are exactly this
    /// leaf's bytes.
    pub fn matches(&self, leaf_bytes: &[u8]) -> bool {
        self.to_bytes() == leaf_bytes
    }

    /// Reads a seal leaf's bytes (this version's layout); `None` when they
    /// are not one (a heads leaf, or anything else). One spelling only:
    /// what parses writes back byte for byte.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.strip_prefix("agentplane/seal/v1\n")?.strip_suffix('\n')?.split('\n');
        let origin = Origin::new(lines.next()?.strip_prefix("origin ")?).ok()?;
        let run = RunId::new(lines.next()?.strip_prefix("run ")?).ok()?;
        let record_count = lines.next()?.strip_prefix("records ")?.parse().ok()?;
        let head = ChainHash::from_hex(lines.next()?.strip_prefix("head ")?)?;
        if lines.next().is_some() {
            return None;
        }
        let leaf = Self { origin, run, record_count, head };
        leaf.matches(bytes).then_some(leaf)
    }

    /// The leaf bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        format!(
            "agentplane/seal/v1\norigin {}\nrun {}\nrecords {}\nhead {}\n",
            self.origin, self.run, self.record_count, self.head
        )
        .into_bytes()
    }

    /// The RFC 6962 leaf hash of those bytes.
    pub fn leaf_hash(&self) -> LeafHash {
        LeafHash::of(&self.to_bytes())
    }

    /// The origin a seal leaf (this version's layout) names, if it is one:
    /// where it differs from the log's, the leaf is of another log (a
    /// mistaken tenant or key, or a leaf copied across logs).
    pub fn origin_named(leaf_bytes: &[u8]) -> Option<&str> {
        let text = std::str::from_utf8(leaf_bytes).ok()?;
        let mut lines = text.lines();
        (lines.next() == Some("agentplane/seal/v1")).then_some(())?;
        lines.next()?.strip_prefix("origin ")
    }

    /// Whether `leaf_bytes` are a seal leaf (this version's layout) of
    /// `run`: what ties a proof's leaf to the run it is said to seal, where
    /// the index that found the leaf cannot be trusted (a proof read from a
    /// store, or received in a file).
    pub fn names_run(leaf_bytes: &[u8], run: &str) -> bool {
        let Ok(text) = std::str::from_utf8(leaf_bytes) else { return false };
        let mut lines = text.lines();
        lines.next() == Some("agentplane/seal/v1")
            && lines.next().is_some_and(|line| line.starts_with("origin "))
            && lines.next().and_then(|line| line.strip_prefix("run ")) == Some(run)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// R-LOG-4: a leaf names exactly the run it seals: not another, not one
    /// whose id merely starts the same, and never from other bytes.
    #[test]
    fn r_log_4_a_seal_leaf_names_exactly_its_run() {
        let origin = Origin::new("seal.test/plane").unwrap();
        let head = ExpectedHead { seq: 3, hash: ChainHash::GENESIS };
        let leaf = SealLeaf::new(&origin, &RunId::new("run-a").unwrap(), head).to_bytes();
        assert!(SealLeaf::names_run(&leaf, "run-a"));
        assert!(!SealLeaf::names_run(&leaf, "run-b"));
        assert!(!SealLeaf::names_run(&leaf, "run-"));
        assert!(!SealLeaf::names_run(&leaf, "run-ab"));
        assert!(!SealLeaf::names_run(b"agentplane/heads/v1\norigin x\nrun run-a\n", "run-a"));
        assert_eq!(SealLeaf::origin_named(&leaf), Some("seal.test/plane"));
        assert_eq!(SealLeaf::origin_named(b"agentplane/heads/v1\norigin x\n"), None);
        assert!(!SealLeaf::names_run(&[0xff, 0xfe], "run-a"));
        assert_eq!(SealLeaf::parse(&leaf), Some(SealLeaf::new(&origin, &RunId::new("run-a").unwrap(), head)));
        let mut longer = leaf.clone();
        longer.extend_from_slice(b"more\n");
        assert_eq!(SealLeaf::parse(&longer), None);
        let padded = String::from_utf8(leaf.clone()).unwrap().replace("records 3", "records 03");
        assert_eq!(SealLeaf::parse(padded.as_bytes()), None, "one spelling only");
        assert_eq!(SealLeaf::parse(b"agentplane/heads/v1\norigin x\nruns 0\nroot 00\n"), None);
    }
}
