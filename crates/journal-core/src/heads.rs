//! Heads leaves: what puts open runs under the log (issue 20). Only sealed
//! runs enter the log with a seal; a run that is running, failed, exhausted,
//! withheld or quarantined would be covered by nothing outside the store. So
//! before the plane signs a checkpoint it appends one *heads leaf* to the
//! tenant's log, committing to `(run, seq, chain hash)` of every run whose
//! head moved since the previous heads leaf and that is not sealed. Once a
//! checkpoint that covers the leaf is saved or cosigned, no such run can be
//! cut back below that head, rewritten or deleted without the audit naming it.
//!
//! A heads entry attests a prefix (the run had this record at this seq),
//! never that a history is complete: that is a seal's job, and the two leaf
//! kinds cannot be confused (their first lines differ, and an entry is never
//! a leaf of the log itself, only of the small tree its heads leaf commits
//! to). The bytes, exactly:
//!
//! ```text
//! heads leaf:   agentplane/heads/v1\n
//!               origin <the tenant's log origin>\n
//!               runs <number of entries, decimal>\n
//!               root <RFC 6962 root of the entries' tree, 64 lowercase hex digits>\n
//!
//! heads entry:  agentplane/head/v1\n
//!               run <run id>\n
//!               seq <the head record's seq, decimal>\n
//!               hash <its chain hash, 64 lowercase hex digits>\n
//! ```
//!
//! The entries' tree has one RFC 6962 leaf per entry (`SHA-256(0x00 ||
//! entry bytes)`), in run id order; the log leaf hash is RFC 6962's over the
//! heads leaf bytes.

use tlog::{InclusionProof, LeafHash, MemoryHashStore, RootHash, Tree};
use witness::Origin;

use crate::chain::{ChainHash, ExpectedHead};
use crate::ids::RunId;
use crate::seal::SealLeaf;

/// The first line of a heads leaf.
pub const HEADS_LEAF_TAG: &str = "agentplane/heads/v1\n";
/// The first line of a heads entry.
pub const HEAD_ENTRY_TAG: &str = "agentplane/head/v1\n";
/// The run id under which a backend keeps a heads leaf among the log's
/// leaves. Reserved: [`RunId::new`] never gives it to a run.
pub const HEADS_LEAF_RUN: &str = "agentplane:heads";
/// The most entries one heads leaf holds; a signing with more moved runs
/// appends several leaves.
pub const MAX_HEADS_PER_LEAF: usize = 65_536;

/// One run's head as a heads leaf commits to it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HeadEntry {
    /// The run.
    pub run: RunId,
    /// The head record's seq.
    pub seq: u64,
    /// Its chain hash.
    pub hash: ChainHash,
}

impl HeadEntry {
    /// The entry of `run` at `head`.
    pub fn new(run: &RunId, head: ExpectedHead) -> Self {
        Self { run: run.clone(), seq: head.seq, hash: head.hash }
    }

    /// The entry's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        format!("{HEAD_ENTRY_TAG}run {}\nseq {}\nhash {}\n", self.run, self.seq, self.hash).into_bytes()
    }

    /// Its leaf hash in the entries' tree.
    pub fn leaf_hash(&self) -> LeafHash {
        LeafHash::of(&self.to_bytes())
    }
}

/// A heads leaf: the origin, how many entries, and their tree's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadsLeaf {
    /// The tenant's log origin.
    pub origin: Origin,
    /// The entries' tree.
    pub entries: Tree,
}

impl HeadsLeaf {
    /// The leaf over `entries`, which must be in run id order (the order
    /// [`sorted_entries`] gives).
    pub fn new(origin: &Origin, entries: &[HeadEntry]) -> Self {
        Self { origin: origin.clone(), entries: entries_tree(entries).tree() }
    }

    /// The leaf bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        format!("{HEADS_LEAF_TAG}origin {}\nruns {}\nroot {}\n", self.origin, self.entries.size, self.entries.root)
            .into_bytes()
    }

    /// Reads a heads leaf's bytes; `None` when they are not one (a seal
    /// leaf, or anything else).
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        let rest = text.strip_prefix(HEADS_LEAF_TAG)?;
        let mut lines = rest.strip_suffix('\n')?.split('\n');
        let origin = Origin::new(lines.next()?.strip_prefix("origin ")?).ok()?;
        let size: u64 = lines.next()?.strip_prefix("runs ")?.parse().ok()?;
        let root = RootHash::from_hex(lines.next()?.strip_prefix("root ")?).ok()?;
        if lines.next().is_some() {
            return None;
        }
        let leaf = Self { origin, entries: Tree::new(size, root) };
        // One spelling only: what parses must write back byte for byte.
        (leaf.to_bytes() == bytes).then_some(leaf)
    }

    /// Whether `bytes` start like a heads leaf (whether or not they parse).
    pub fn is_tagged(bytes: &[u8]) -> bool {
        bytes.starts_with(HEADS_LEAF_TAG.as_bytes())
    }
}

/// The RFC 6962 tree of entries in the order given.
pub fn entries_tree(entries: &[HeadEntry]) -> MemoryHashStore {
    let mut tree = MemoryHashStore::new();
    for entry in entries {
        tree.append(entry.leaf_hash());
    }
    tree
}

/// The entries of moved runs in run id order, one per run.
pub fn sorted_entries(mut entries: Vec<HeadEntry>) -> Vec<HeadEntry> {
    entries.sort();
    entries.dedup_by(|a, b| a.run == b.run);
    entries
}

/// The proof that entry `index` is in a heads leaf's entries tree.
pub fn prove_entry(entries: &[HeadEntry], index: u64) -> Option<InclusionProof> {
    let tree = entries_tree(entries);
    tree.prove_inclusion(index, tree.size()).ok()
}

/// Every run's longest head in a tenant's log, read from the log itself: its
/// leaves in position order, each heads leaf's entries held to the leaf's
/// bytes, each seal leaf read as the head it seals, and the leaves up to the tree the plane last signed held to that
/// tree's root. Never from the newest-heads index, which is derived data:
/// someone with the store and no key can delete a run's index row along
/// with the records it covers, and a resume that asked the index would then
/// drive the cut run again (R-RUN-5, R-COVER-2).
///
/// Read once (O(the log), in reads of a few thousand leaves and their
/// entries), then brought up to date with the leaves appended since
/// ([`CoveredHeads::catch_up`]: one range read, usually empty).
#[derive(Debug)]
pub struct CoveredHeads {
    /// The leaves kept so far, as a tree (also: how many): up to the tree
    /// the plane signed, when a signed tree is given.
    frontier: tlog::Frontier,
    /// The longest head each run has in the leaves kept.
    longest: std::collections::HashMap<RunId, (u64, HeadEntry)>,
    /// The longest head each run has in the leaves past the signed tree,
    /// as the last catch-up read them: read again at every catch-up, never
    /// kept. Kept, a leaf forged there and read, then taken out before the
    /// plane signed its own leaf at that position, would stand in for the
    /// signed one, whose root is then never checked (a signed tree no
    /// larger than what was read is checked only when reached).
    past_signed: std::collections::HashMap<RunId, (u64, HeadEntry)>,
    /// The signed tree the leaves past it were read under, and the
    /// frontier that reading reached: the next catch-up under the same
    /// signed tree reads on from there. Read again from the signed tree
    /// at every catch-up, every admission and resume read every leaf
    /// appended since the plane last signed (all of them on a plane that
    /// never signed: 14 ms to 47 ms an admission over 3,000 runs, review
    /// 48); kept only while the plane signs nothing new, no leaf it signs
    /// is ever stood in for by one read before (review 47's attack needs a
    /// signature over the position).
    past_read: Option<(Tree, tlog::Frontier)>,
    /// Leaves read at a time.
    per_read: u64,
}

impl Default for CoveredHeads {
    fn default() -> Self {
        Self::reading_at_most(LEAVES_PER_READ)
    }
}

/// Enters `entry` (found at `position`) into `longest` unless a head as
/// long is there: a run's chain only grows, so every head the log ever
/// held for it is in the chain that holds the longest. A later leaf holding
/// a shorter head (a cut run's, marked moved behind the plane) does not
/// lower what the run is held to.
fn hold_longest(longest: &mut std::collections::HashMap<RunId, (u64, HeadEntry)>, position: u64, entry: HeadEntry) {
    match longest.get(&entry.run) {
        Some((_, held)) if held.seq >= entry.seq => {}
        _ => {
            longest.insert(entry.run.clone(), (position, entry));
        }
    }
}

/// Leaves read at a time while catching up: bounds the memory of a first
/// reading of a long log.
const LEAVES_PER_READ: u64 = 4096;

impl CoveredHeads {
    /// Nothing read yet; the log will be read `per_read` leaves at a time
    /// (at least one; [`Default`] reads a few thousand).
    pub fn reading_at_most(per_read: u64) -> Self {
        Self {
            frontier: tlog::Frontier::new(),
            longest: std::collections::HashMap::new(),
            past_signed: std::collections::HashMap::new(),
            past_read: None,
            per_read: per_read.max(1),
        }
    }

    /// Reads the tenant's leaves appended since the last call. When
    /// `signed` (a tree the plane signed, from its high-water mark, read
    /// afresh for every call: the plane signs while a runtime runs; the
    /// empty tree when it never signed) is reached, the leaves read must
    /// give its root: a leaf rewritten or removed in the store (with its
    /// heads entries) is damage, not a run the log never covered. Only the
    /// leaves up to `signed` are kept; the ones past it are read again at
    /// the next call (all are kept when `signed` is `None`: no mark to hold
    /// them to). On an error nothing is kept of this call's reading.
    pub fn catch_up(
        &mut self,
        store: &dyn crate::store::Store,
        tenant: &crate::ids::TenantId,
        origin: &Origin,
        signed: Option<Tree>,
    ) -> Result<(), crate::error::JournalError> {
        let damaged = |detail: String| crate::error::JournalError::StoreDamage { tenant: tenant.clone(), detail };
        let resumed = match (&self.past_read, signed) {
            (Some((under, reached)), Some(now)) if *under == now => Some(reached.clone()),
            _ => None,
        };
        let reading_on = resumed.is_some();
        let mut frontier = resumed.unwrap_or_else(|| self.frontier.clone());
        let mut found = Vec::new();
        let check_signed = |frontier: &tlog::Frontier| match signed {
            Some(tree) if tree.size == frontier.size() && tree.root != frontier.root() => Err(damaged(format!(
                "the first {} entries of its log are not the tree the plane signed at that size (root {}): an \
                 entry was rewritten or removed behind the plane (run `agentplane audit`)",
                tree.size, tree.root
            ))),
            _ => Ok(()),
        };
        check_signed(&frontier)?;
        // The reading kept: the frontier when it reaches the signed tree
        // (at the start, or as a leaf is read).
        let keep_to = signed.map(|tree| tree.size);
        let mut kept = (keep_to == Some(frontier.size())).then(|| frontier.clone());
        loop {
            let from = frontier.size();
            let positions = from..from.saturating_add(self.per_read);
            let leaves = store.seals_in(tenant, positions.clone())?;
            let mut entries = if leaves.iter().any(|leaf| HeadsLeaf::is_tagged(&leaf.leaf_bytes)) {
                store.heads_entries_in(tenant, positions)?
            } else {
                crate::store::HeadsByPosition::new()
            };
            let whole = leaves.len() as u64 == self.per_read;
            for leaf in leaves {
                let position = frontier.size();
                if leaf.position != position {
                    return Err(damaged(format!(
                        "its log has no entry at position {position} but one at {}: entries were removed behind the \
                         plane (run `agentplane audit`)",
                        leaf.position
                    )));
                }
                frontier
                    .append(leaf.leaf_hash())
                    .map_err(|_| damaged("its log claims more entries than a log can hold".to_owned()))?;
                check_signed(&frontier)?;
                if keep_to == Some(frontier.size()) {
                    kept = Some(frontier.clone());
                }
                if !HeadsLeaf::is_tagged(&leaf.leaf_bytes) {
                    // A seal leaf holds its run's head as a heads leaf does
                    // (the whole chain, as it sealed): a sealed run no heads
                    // leaf ever held is covered by it alone. (A leaf of
                    // another origin, or not a seal, is the audit's finding.)
                    if let Some(seal) = SealLeaf::parse(&leaf.leaf_bytes).filter(|seal| seal.origin == *origin) {
                        let head = ExpectedHead { seq: seal.record_count, hash: seal.head };
                        found.push((position, HeadEntry::new(&seal.run, head)));
                    }
                    continue;
                }
                // In run id order by bytes, as the leaf commits to them,
                // whatever order (a server's text collation) they came in.
                let mut held = entries.remove(&position).unwrap_or_default();
                held.sort();
                if HeadsLeaf::new(origin, &held).to_bytes() != leaf.leaf_bytes {
                    return Err(damaged(format!(
                        "the heads entries at log position {position} are not the heads leaf stored there (run \
                         `agentplane verify`)"
                    )));
                }
                found.extend(held.into_iter().map(|entry| (position, entry)));
            }
            if !whole {
                break;
            }
        }
        if let Some(tree) = signed.filter(|tree| tree.size > frontier.size()) {
            return Err(damaged(format!(
                "its log holds {} entries, and the plane signed {} of them: entries were removed behind the plane \
                 (run `agentplane audit`)",
                frontier.size(),
                tree.size
            )));
        }
        // Kept: up to the signed tree (none of it when the reading kept
        // before is already past it: a mark put back lower holds nothing
        // more), or all without a signed tree.
        let kept_size = match signed {
            None => {
                self.frontier = frontier;
                self.past_read = None;
                u64::MAX
            }
            Some(tree) => {
                if let Some(kept) = kept {
                    self.frontier = kept;
                }
                self.past_read = Some((tree, frontier));
                self.frontier.size()
            }
        };
        if !reading_on {
            self.past_signed.clear();
        }
        for (position, entry) in found {
            if position < kept_size {
                hold_longest(&mut self.longest, position, entry);
            } else {
                hold_longest(&mut self.past_signed, position, entry);
            }
        }
        Ok(())
    }

    /// The longest head a heads leaf or a seal leaf holds for `run` (the
    /// first leaf that held it at that seq), with the leaf's position;
    /// `None` when no leaf read holds the run. A chain that does not hold it was cut back or
    /// rewritten after the log covered it.
    pub fn longest(&self, run: &RunId) -> Option<&(u64, HeadEntry)> {
        match (self.longest.get(run), self.past_signed.get(run)) {
            (Some(kept), Some(past)) if past.1.seq > kept.1.seq => Some(past),
            (Some(kept), _) => Some(kept),
            (None, past) => past,
        }
    }

    /// How many leaves of the log are kept read (the ones past the signed
    /// tree are read again at each catch-up).
    pub fn leaves_read(&self) -> u64 {
        self.frontier.size()
    }
}
