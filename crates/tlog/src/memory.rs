//! An in-memory node store for tests and small trees.

use core::fmt;

use crate::frontier::Frontier;
use crate::hash::{LeafHash, NodeHash};
use crate::node::NodeId;
use crate::prove::{self, HashReader, ProveError};
use crate::verify::{ConsistencyProof, InclusionProof, Tree};

/// Every complete-subtree hash of a tree, kept in memory, level by level.
#[derive(Debug, Clone, Default)]
pub struct MemoryHashStore {
    levels: Vec<Vec<NodeHash>>,
    frontier: Frontier,
}

/// A read of a subtree the store does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingNode(pub NodeId);

impl fmt::Display for MissingNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no stored hash for level {} index {}", self.0.level, self.0.index)
    }
}

impl std::error::Error for MissingNode {}

impl MemoryHashStore {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a leaf, storing every subtree it completes; returns its index.
    /// (Memory runs out long before `u64::MAX` leaves; were a store to hold
    /// that many, the leaf would be refused and `u64::MAX` returned.)
    pub fn append(&mut self, leaf: LeafHash) -> u64 {
        let levels = &mut self.levels;
        let appended = self.frontier.append_with(leaf, |id, hash| {
            let level = usize::from(id.level);
            if levels.len() <= level {
                levels.resize_with(level + 1, Vec::new);
            }
            if let Some(row) = levels.get_mut(level) {
                row.push(*hash);
            }
        });
        appended.unwrap_or(u64::MAX)
    }

    /// Number of leaves.
    pub fn size(&self) -> u64 {
        self.frontier.size()
    }

    /// The current tree head.
    pub fn tree(&self) -> Tree {
        Tree::new(self.frontier.size(), self.frontier.root())
    }

    /// The inclusion proof of `index` in the tree of the first `size` leaves.
    pub fn prove_inclusion(&self, index: u64, size: u64) -> Result<InclusionProof, ProveError<MissingNode>> {
        prove::prove_inclusion(self, index, size)
    }

    /// The consistency proof from `old_size` to `new_size`.
    pub fn prove_consistency(&self, old_size: u64, new_size: u64) -> Result<ConsistencyProof, ProveError<MissingNode>> {
        prove::prove_consistency(self, old_size, new_size)
    }
}

impl HashReader for MemoryHashStore {
    type Error = MissingNode;

    fn read_hashes(&self, ids: &[NodeId]) -> Result<Vec<NodeHash>, MissingNode> {
        ids.iter()
            .map(|id| {
                let index = usize::try_from(id.index).map_err(|_| MissingNode(*id))?;
                self.levels.get(usize::from(id.level)).and_then(|row| row.get(index)).copied().ok_or(MissingNode(*id))
            })
            .collect()
    }
}
