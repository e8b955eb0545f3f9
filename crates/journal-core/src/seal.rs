//! The leaf a sealed run enters the plane's log with.

use tlog::LeafHash;

use witness::Origin;

use crate::chain::{ChainHash, ExpectedHead};
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
}
