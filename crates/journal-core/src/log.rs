//! The plane's log over sealed runs, read from any [`Store`]: checkpoints,
//! inclusion and consistency proofs (R-LOG-2, R-LOG-6, R-LOG-7).
//!
//! With no holes (as many seals as positions given) proofs come from stored
//! node hashes in O(log n) reads. With holes the tree is the walk of the seals
//! in key order, the proof uses the run's rank in that walk, and the answer
//! says so; cached nodes never override the walk.

use tlog::{ConsistencyProof, HashReader, InclusionProof, LeafHash, MemoryHashStore, NodeHash, NodeId, Tree};

use crate::error::JournalError;
use crate::ids::{RunId, TenantId};
use crate::store::{SealEntry, Store};

/// Where an answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogSource {
    /// Stored node hashes (no holes).
    StoredNodes,
    /// A walk of the seals in key order: positions have holes, so seals were
    /// removed behind the store's back.
    WalkWithHoles,
}

/// A checkpoint's tree with its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogHead {
    /// Size and root.
    pub tree: Tree,
    /// How it was computed.
    pub source: LogSource,
}

/// An inclusion proof for a sealed run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInclusion {
    /// The run's rank in the walk (its leaf index).
    pub index: u64,
    /// The tree it is proven in.
    pub tree: Tree,
    /// The leaf hash.
    pub leaf: LeafHash,
    /// The leaf's bytes.
    pub leaf_bytes: Vec<u8>,
    /// The audit path.
    pub proof: InclusionProof,
    /// How it was computed.
    pub source: LogSource,
}

struct StoredNodes<'a> {
    store: &'a dyn Store,
    tenant: &'a TenantId,
}

impl HashReader for StoredNodes<'_> {
    type Error = JournalError;

    fn read_hashes(&self, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
        self.store.read_log_nodes(self.tenant, ids)
    }
}

fn prove_error(err: tlog::ProveError<JournalError>) -> JournalError {
    match err {
        tlog::ProveError::Reader(err) => err,
        other => JournalError::Io(format!("log: {other}")),
    }
}

/// The tree rebuilt from the seals in key order.
pub fn walk(seals: &[SealEntry]) -> MemoryHashStore {
    let mut tree = MemoryHashStore::new();
    for seal in seals {
        tree.append(seal.leaf_hash());
    }
    tree
}

/// The tenant's current log head (R-LOG-2).
pub fn log_head(store: &dyn Store, tenant: &TenantId) -> Result<LogHead, JournalError> {
    let counters = store.log_counters(tenant)?;
    if counters.has_holes() {
        let tree = walk(&store.seals(tenant)?).tree();
        tracing::warn!(tenant = %tenant, "log positions have holes: answering from the walk of the seals");
        return Ok(LogHead { tree, source: LogSource::WalkWithHoles });
    }
    let size = counters.next_position;
    let root = tlog::tree_root(&StoredNodes { store, tenant }, size).map_err(prove_error)?;
    Ok(LogHead { tree: Tree::new(size, root), source: LogSource::StoredNodes })
}

/// The inclusion proof of a sealed run in the current log (R-LOG-2, R-LOG-6).
pub fn inclusion_proof(store: &dyn Store, tenant: &TenantId, run: &RunId) -> Result<RunInclusion, JournalError> {
    let counters = store.log_counters(tenant)?;
    if counters.has_holes() {
        let seals = store.seals(tenant)?;
        let rank = seals.iter().position(|seal| seal.run == *run).ok_or_else(|| not_sealed(tenant, run))?;
        let tree = walk(&seals);
        let proof = tree.prove_inclusion(rank as u64, tree.size()).map_err(|err| JournalError::Io(err.to_string()))?;
        let seal = seals.get(rank).ok_or_else(|| not_sealed(tenant, run))?;
        return Ok(RunInclusion {
            index: rank as u64,
            tree: tree.tree(),
            leaf: seal.leaf_hash(),
            leaf_bytes: seal.leaf_bytes.clone(),
            proof,
            source: LogSource::WalkWithHoles,
        });
    }
    let seal = store.seal_of(tenant, run)?.ok_or_else(|| not_sealed(tenant, run))?;
    let head = log_head(store, tenant)?;
    let nodes = StoredNodes { store, tenant };
    let proof = tlog::prove_inclusion(&nodes, seal.position, head.tree.size).map_err(prove_error)?;
    Ok(RunInclusion {
        index: seal.position,
        tree: head.tree,
        leaf: seal.leaf_hash(),
        leaf_bytes: seal.leaf_bytes,
        proof,
        source: LogSource::StoredNodes,
    })
}

/// The consistency proof from `old_size` to the current log (R-LOG-2).
pub fn consistency_proof(
    store: &dyn Store,
    tenant: &TenantId,
    old_size: u64,
) -> Result<(ConsistencyProof, LogHead), JournalError> {
    let head = log_head(store, tenant)?;
    if old_size == 0 || old_size > head.tree.size {
        return Err(JournalError::InvalidRecord(format!(
            "no consistency proof from size {old_size} to the log's size {}",
            head.tree.size
        )));
    }
    let proof = match head.source {
        LogSource::StoredNodes => {
            tlog::prove_consistency(&StoredNodes { store, tenant }, old_size, head.tree.size).map_err(prove_error)?
        }
        LogSource::WalkWithHoles => walk(&store.seals(tenant)?)
            .prove_consistency(old_size, head.tree.size)
            .map_err(|err| JournalError::Io(err.to_string()))?,
    };
    Ok((proof, head))
}

/// The root of the first `size` leaves of the current log.
pub fn root_at(store: &dyn Store, tenant: &TenantId, size: u64) -> Result<tlog::RootHash, JournalError> {
    let head = log_head(store, tenant)?;
    match head.source {
        LogSource::StoredNodes => tlog::tree_root(&StoredNodes { store, tenant }, size).map_err(prove_error),
        LogSource::WalkWithHoles => {
            tlog::tree_root(&walk(&store.seals(tenant)?), size).map_err(|err| JournalError::Io(err.to_string()))
        }
    }
}

fn not_sealed(tenant: &TenantId, run: &RunId) -> JournalError {
    JournalError::NotFound { tenant: tenant.to_string(), run: format!("{run} (sealed)") }
}

/// A tenant's log as a [`witness::LogHistory`]: what a witness client needs
/// to prove that the checkpoint it submits extends the one a witness holds.
pub struct StoreHistory<'a> {
    /// The store.
    pub store: &'a dyn Store,
    /// The tenant.
    pub tenant: &'a TenantId,
}

impl witness::LogHistory for StoreHistory<'_> {
    fn root_at(&self, size: u64) -> Result<tlog::RootHash, String> {
        root_at(self.store, self.tenant, size).map_err(|err| err.to_string())
    }

    fn consistency_proof(&self, old_size: u64, new_size: u64) -> Result<ConsistencyProof, String> {
        let (proof, head) = consistency_proof(self.store, self.tenant, old_size).map_err(|err| err.to_string())?;
        if head.tree.size != new_size {
            return Err(format!("the log is at size {}, not {new_size}: sign a fresh checkpoint", head.tree.size));
        }
        Ok(proof)
    }
}
