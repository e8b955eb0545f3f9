//! Incremental appends that keep only the O(log n) right edge of the tree.

use core::fmt;

use crate::hash::{LeafHash, NodeHash, RootHash};
use crate::node::{NodeId, covering_subtrees};
use crate::prove::{HashReader, ProveError};

/// The hashes of the complete subtrees that cover a tree's leaves, one per
/// set bit of its size (a compact range starting at leaf 0). Enough to append
/// and to compute the root; too little for proofs, which need the stored
/// nodes [`Frontier::append_with`] reports.
#[derive(Clone, PartialEq, Eq)]
pub struct Frontier {
    size: u64,
    /// Largest (leftmost) subtree first.
    subtrees: Vec<NodeHash>,
}

/// The subtree hashes given to [`Frontier::from_subtrees`] do not match the size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontierMismatch {
    /// The size given.
    pub size: u64,
    /// How many subtree hashes that size needs.
    pub expected: usize,
    /// How many were given.
    pub actual: usize,
}

impl fmt::Display for FrontierMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a tree of {} leaves has {} frontier subtrees, got {}", self.size, self.expected, self.actual)
    }
}

impl std::error::Error for FrontierMismatch {}

/// The tree already holds `u64::MAX` leaves: a leaf index is a `u64`, so no
/// further leaf has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeFull;

impl fmt::Display for TreeFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the tree holds u64::MAX leaves and takes no more")
    }
}

impl std::error::Error for TreeFull {}

impl Default for Frontier {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Frontier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frontier").field("size", &self.size).field("root", &self.root()).finish()
    }
}

impl Frontier {
    /// The frontier of the empty tree.
    pub fn new() -> Self {
        Self { size: 0, subtrees: Vec::new() }
    }

    /// Rebuilds a frontier from its subtree hashes, largest first.
    pub fn from_subtrees(size: u64, subtrees: Vec<NodeHash>) -> Result<Self, FrontierMismatch> {
        let expected = size.count_ones() as usize;
        if subtrees.len() != expected {
            return Err(FrontierMismatch { size, expected, actual: subtrees.len() });
        }
        Ok(Self { size, subtrees })
    }

    /// Reads the frontier of the first `size` leaves from a store.
    pub fn from_reader<R: HashReader>(reader: &R, size: u64) -> Result<Self, ProveError<R::Error>> {
        let mut ids = Vec::new();
        covering_subtrees(0, size, &mut ids);
        let subtrees =
            if ids.is_empty() { Vec::new() } else { reader.read_hashes(&ids).map_err(ProveError::Reader)? };
        if subtrees.len() != ids.len() {
            return Err(ProveError::ShortRead { asked: ids.len(), returned: subtrees.len() });
        }
        Ok(Self { size, subtrees })
    }

    /// Number of leaves appended so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The frontier's subtree hashes, largest first.
    pub fn subtrees(&self) -> &[NodeHash] {
        &self.subtrees
    }

    /// Appends a leaf; amortized two hashes per leaf, counting the leaf's own.
    /// Returns the new leaf's index.
    pub fn append(&mut self, leaf: LeafHash) -> Result<u64, TreeFull> {
        self.append_with(leaf, |_, _| {})
    }

    /// Appends a leaf and reports every subtree it completes, the leaf itself
    /// first: exactly the hashes a store keeps so that later proofs need
    /// O(log n) reads. Returns the new leaf's index; a tree of `u64::MAX`
    /// leaves is refused ([`TreeFull`]) before anything is reported.
    pub fn append_with(
        &mut self,
        leaf: LeafHash,
        mut completed: impl FnMut(NodeId, &NodeHash),
    ) -> Result<u64, TreeFull> {
        let index = self.size;
        let next = index.checked_add(1).ok_or(TreeFull)?;
        let mut hash = NodeHash::from(leaf);
        let mut node = NodeId::new(0, index);
        completed(node, &hash);
        while node.index & 1 == 1 {
            let Some(left) = self.subtrees.pop() else {
                break;
            };
            hash = NodeHash::interior(&left, &hash);
            node = NodeId::new(node.level + 1, node.index >> 1);
            completed(node, &hash);
        }
        self.subtrees.push(hash);
        self.size = next;
        Ok(index)
    }

    /// The root over every leaf appended so far: O(log n) hashes.
    pub fn root(&self) -> RootHash {
        let Some((last, earlier)) = self.subtrees.split_last() else {
            return RootHash::empty();
        };
        RootHash::of_nonempty(earlier.iter().rev().fold(*last, |acc, left| NodeHash::interior(left, &acc)))
    }
}
