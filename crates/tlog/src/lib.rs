#![doc = include_str!("../README.md")]

mod frontier;
mod hash;
mod memory;
mod node;
mod prove;
pub mod raw;
mod subtree;
mod verify;

pub use frontier::{Frontier, FrontierMismatch, TreeFull};
pub use hash::{HASH_LEN, HashParseError, LeafHash, NodeHash, RootHash};
pub use memory::{MemoryHashStore, MissingNode};
pub use node::NodeId;
pub use prove::{HashReader, ProveError, prove_consistency, prove_inclusion, tree_root};
pub use subtree::{InvalidSubtree, Subtree, SubtreeConsistencyProof, prove_subtree_consistency, subtree_hash};
pub use verify::{ConsistencyProof, ExtendsError, InclusionProof, Tree, VerifyError};
