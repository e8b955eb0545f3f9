//! Roots and proofs computed from stored complete-subtree hashes, in
//! O(log n) reads per call (R-LOG-7).

use core::fmt;

use crate::hash::{NodeHash, RootHash};
use crate::node::{NodeId, covering_subtrees, split_point};
use crate::verify::{ConsistencyProof, InclusionProof};

/// Storage of complete-subtree hashes, as a store keeps them.
///
/// Implementations answer one batch per proof. Every id asked for is a
/// complete subtree of a tree the caller says exists; a store that lacks one
/// returns its own error. The `tlog` crate never asks for more than
/// `2 * log2(n) + 2` hashes for one root or proof of a tree of n leaves.
pub trait HashReader {
    /// The store's own error.
    type Error;

    /// Returns the hash of each subtree in `ids`, in the same order.
    fn read_hashes(&self, ids: &[NodeId]) -> Result<Vec<NodeHash>, Self::Error>;
}

impl<R: HashReader + ?Sized> HashReader for &R {
    type Error = R::Error;

    fn read_hashes(&self, ids: &[NodeId]) -> Result<Vec<NodeHash>, Self::Error> {
        (**self).read_hashes(ids)
    }
}

/// Why a root or proof could not be produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProveError<E> {
    /// The leaf index is not below the tree size.
    IndexOutOfRange {
        /// Requested leaf.
        index: u64,
        /// Tree size.
        size: u64,
    },
    /// A consistency proof was asked for sizes that have none: the old size
    /// is zero or larger than the new one.
    NoConsistencyProof {
        /// The older size.
        old_size: u64,
        /// The newer size.
        new_size: u64,
    },
    /// The reader answered with a different number of hashes than asked for.
    ShortRead {
        /// Hashes asked for.
        asked: usize,
        /// Hashes returned.
        returned: usize,
    },
    /// The reader failed.
    Reader(E),
}

impl<E: fmt::Display> fmt::Display for ProveError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::IndexOutOfRange { index, size } => {
                write!(f, "no leaf {index} in a tree of {size} leaves")
            }
            Self::NoConsistencyProof { old_size, new_size } => write!(
                f,
                "no consistency proof from size {old_size} to size {new_size}: the old size must be between 1 and the new size"
            ),
            Self::ShortRead { asked, returned } => {
                write!(f, "hash reader returned {returned} hashes for {asked} requested: the store is inconsistent")
            }
            Self::Reader(err) => write!(f, "reading stored hashes: {err}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for ProveError<E> {
    /// The reader's own error, so a caller walking the chain of causes
    /// reaches what the store said.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Reader(err) => Some(err),
            _ => None,
        }
    }
}

/// A list of ranges whose `MTH`s form a proof, each as its covering subtrees.
struct Plan {
    ids: Vec<NodeId>,
    /// How many ids each proof element (one range) takes, in proof order.
    group_sizes: Vec<usize>,
}

impl Plan {
    fn new() -> Self {
        Self { ids: Vec::new(), group_sizes: Vec::new() }
    }

    fn push_range(&mut self, start: u64, end: u64) {
        let before = self.ids.len();
        covering_subtrees(start, end, &mut self.ids);
        self.group_sizes.push(self.ids.len() - before);
    }

    /// Reads every id in one batch and folds each range to its hash.
    fn execute<R: HashReader>(self, reader: &R) -> Result<Vec<NodeHash>, ProveError<R::Error>> {
        let hashes = read_exact(reader, &self.ids)?;
        let mut rest = hashes.as_slice();
        let mut out = Vec::with_capacity(self.group_sizes.len());
        for size in self.group_sizes {
            let (group, tail) = rest.split_at(size.min(rest.len()));
            rest = tail;
            if let Some(hash) = fold_range(group) {
                out.push(hash);
            }
        }
        Ok(out)
    }
}

pub(crate) fn read_exact<R: HashReader>(reader: &R, ids: &[NodeId]) -> Result<Vec<NodeHash>, ProveError<R::Error>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let hashes = reader.read_hashes(ids).map_err(ProveError::Reader)?;
    if hashes.len() != ids.len() {
        return Err(ProveError::ShortRead { asked: ids.len(), returned: hashes.len() });
    }
    Ok(hashes)
}

/// `MTH` of a range from its covering subtrees, left to right.
fn fold_range(subtrees: &[NodeHash]) -> Option<NodeHash> {
    let (last, earlier) = subtrees.split_last()?;
    Some(earlier.iter().rev().fold(*last, |acc, left| NodeHash::interior(left, &acc)))
}

/// The root of the first `size` leaves.
pub fn tree_root<R: HashReader>(reader: &R, size: u64) -> Result<RootHash, ProveError<R::Error>> {
    let mut ids = Vec::new();
    covering_subtrees(0, size, &mut ids);
    let hashes = read_exact(reader, &ids)?;
    Ok(fold_range(&hashes).map_or_else(RootHash::empty, RootHash::of_nonempty))
}

/// The inclusion proof of leaf `index` in the tree of the first `size`
/// leaves (RFC 6962 section 2.1.1 `PATH`).
pub fn prove_inclusion<R: HashReader>(
    reader: &R,
    index: u64,
    size: u64,
) -> Result<InclusionProof, ProveError<R::Error>> {
    if index >= size {
        return Err(ProveError::IndexOutOfRange { index, size });
    }
    let mut plan = Plan::new();
    // PATH(m, D[start:end]), walked from the root down; the proof lists the
    // siblings from the leaf up, so the ranges are pushed in reverse.
    let mut ranges = Vec::new();
    let (mut start, mut end) = (0, size);
    while end - start > 1 {
        let k = split_point(end - start);
        if index - start < k {
            ranges.push((start + k, end));
            end = start + k;
        } else {
            ranges.push((start, start + k));
            start += k;
        }
    }
    for (range_start, range_end) in ranges.into_iter().rev() {
        plan.push_range(range_start, range_end);
    }
    plan.execute(reader).map(InclusionProof::new)
}

/// The proof that the tree of `new_size` leaves extends the tree of
/// `old_size` leaves (RFC 6962 section 2.1.2 `PROOF`), for
/// `0 < old_size <= new_size`. Equal sizes give the empty proof.
pub fn prove_consistency<R: HashReader>(
    reader: &R,
    old_size: u64,
    new_size: u64,
) -> Result<ConsistencyProof, ProveError<R::Error>> {
    if old_size == 0 || old_size > new_size {
        return Err(ProveError::NoConsistencyProof { old_size, new_size });
    }
    // SUBPROOF(m, D[start:end], whole), walked from the root down.
    let mut ranges = Vec::new();
    let (mut m, mut start, mut end) = (old_size, 0, new_size);
    let mut whole = true;
    while m != end - start {
        let k = split_point(end - start);
        if m <= k {
            ranges.push((start + k, end));
            end = start + k;
        } else {
            ranges.push((start, start + k));
            m -= k;
            start += k;
            whole = false;
        }
    }
    if !whole {
        ranges.push((start, end));
    }
    let mut plan = Plan::new();
    for (range_start, range_end) in ranges.into_iter().rev() {
        plan.push_range(range_start, range_end);
    }
    plan.execute(reader).map(ConsistencyProof::new)
}
