//! The plane's log over sealed runs, read from any [`Store`]: checkpoints,
//! inclusion and consistency proofs (R-LOG-2, R-LOG-6, R-LOG-7).
//!
//! Every read goes through one [`LogView`], which decides once, when it is
//! opened, where the tenant's tree comes from: with no holes (as many seals as
//! positions given) from stored node hashes in O(log n) reads; with holes from
//! the walk of the seals in key order, where a proof uses the run's rank in
//! that walk. The answer says which ([`LogSource`]); cached nodes never
//! override the walk.

use tlog::{ConsistencyProof, HashReader, InclusionProof, LeafHash, MemoryHashStore, NodeHash, NodeId, RootHash, Tree};
use witness::{Checkpoint, LogKey, Origin, SignedCheckpoint};

use crate::ChainHash;
use crate::error::JournalError;
use crate::heads::HeadsLeaf;
use crate::ids::{RunId, TenantId};
use crate::seal::SealLeaf;
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

impl LogSource {
    /// Whether the log has holes (seals removed behind the store's back).
    pub fn has_holes(&self) -> bool {
        *self == Self::WalkWithHoles
    }
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

/// What proves a run in the log ([`LogView::prove_run`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunProof {
    /// A sealed run: its seal leaf's inclusion, a complete history.
    Seal(RunInclusion),
    /// An open run: the newest heads leaf holding its head, a prefix only.
    Head(HeadInclusion),
}

/// An open run's head proven in the log: the heads leaf's inclusion, then
/// the entry's inclusion in the leaf's entries tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadInclusion {
    /// The heads leaf's index in the tree.
    pub index: u64,
    /// The tree it is proven in.
    pub tree: Tree,
    /// The heads leaf's hash.
    pub leaf: LeafHash,
    /// The heads leaf's bytes.
    pub leaf_bytes: Vec<u8>,
    /// The heads leaf's audit path.
    pub proof: InclusionProof,
    /// The entry: the run, the seq and the chain hash of its head then.
    pub entry: crate::heads::HeadEntry,
    /// The entry's index in the leaf's entries tree.
    pub entry_index: u64,
    /// How many entries the leaf holds.
    pub entries: u64,
    /// The entry's audit path in the entries tree.
    pub entry_proof: InclusionProof,
    /// How the log proof was computed.
    pub source: LogSource,
}

impl RunInclusion {
    /// Checks the proof: the leaf's bytes, hashed, in the tree.
    pub fn verify(&self) -> Result<(), tlog::VerifyError> {
        self.tree.verify_inclusion(&LeafHash::of(&self.leaf_bytes), self.index, &self.proof)
    }
}

impl HeadInclusion {
    /// Checks both proofs: the entry in the leaf's root, the leaf in the tree.
    pub fn verify(&self) -> Result<(), tlog::VerifyError> {
        let leaf = crate::heads::HeadsLeaf::parse(&self.leaf_bytes).ok_or(tlog::VerifyError::RootMismatch)?;
        leaf.entries.verify_inclusion(&self.entry.leaf_hash(), self.entry_index, &self.entry_proof)?;
        self.tree.verify_inclusion(&LeafHash::of(&self.leaf_bytes), self.index, &self.proof)
    }
}

/// A consistency proof between two sizes of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConsistency {
    /// The older tree.
    pub old: Tree,
    /// The newer tree.
    pub new: Tree,
    /// The proof that `new` extends `old`.
    pub proof: ConsistencyProof,
    /// How it was computed.
    pub source: LogSource,
}

/// The tree rebuilt from the seals in key order.
pub fn walk(seals: &[SealEntry]) -> MemoryHashStore {
    let mut tree = MemoryHashStore::new();
    for seal in seals {
        tree.append(seal.leaf_hash());
    }
    tree
}

enum Source {
    Stored,
    Walk { seals: Vec<SealEntry>, tree: MemoryHashStore },
}

/// One tenant's log at the size it had when the view was opened: the one
/// way the log is read. It implements [`tlog::HashReader`] (so any `tlog`
/// proof can be served from it) and [`witness::LogHistory`] (so a witness
/// client can prove any `old <= new <= size` consistency, even while seals
/// land during a round).
pub struct LogView<'a> {
    store: &'a dyn Store,
    tenant: &'a TenantId,
    size: u64,
    source: Source,
}

impl std::fmt::Debug for LogView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogView").field("tenant", self.tenant).field("size", &self.size).finish()
    }
}

fn walk_error(tenant: &TenantId, err: impl std::fmt::Display) -> JournalError {
    JournalError::StoreDamage { tenant: tenant.clone(), detail: err.to_string() }
}

impl<'a> LogView<'a> {
    /// Opens the tenant's log: reads its counters once and decides whether it
    /// is served from stored nodes or from the walk (R-LOG-7).
    pub fn open(store: &'a dyn Store, tenant: &'a TenantId) -> Result<Self, JournalError> {
        let counters = store.log_counters(tenant)?;
        if !counters.has_holes() {
            return Ok(Self { store, tenant, size: counters.next_position, source: Source::Stored });
        }
        let seals = store.seals(tenant)?;
        let tree = walk(&seals);
        tracing::warn!(
            tenant = %tenant,
            positions = counters.next_position,
            seals = seals.len(),
            "log positions have holes: answering from the walk of the seals"
        );
        Ok(Self { store, tenant, size: tree.size(), source: Source::Walk { seals, tree } })
    }

    /// The tenant's log as it is now: a new view of the same store.
    pub fn reopen(&self) -> Result<LogView<'a>, JournalError> {
        Self::open(self.store, self.tenant)
    }

    /// The tenant.
    pub fn tenant(&self) -> &TenantId {
        self.tenant
    }

    /// The log's size when the view was opened.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Where answers come from.
    pub fn source(&self) -> LogSource {
        match self.source {
            Source::Stored => LogSource::StoredNodes,
            Source::Walk { .. } => LogSource::WalkWithHoles,
        }
    }

    fn prove_error(&self, err: tlog::ProveError<JournalError>) -> JournalError {
        match err {
            tlog::ProveError::Reader(err) => err,
            other => walk_error(self.tenant, other),
        }
    }

    /// The root of the first `size` leaves, for any `size <= self.size()`.
    pub fn root_at(&self, size: u64) -> Result<RootHash, JournalError> {
        if size > self.size {
            return Err(JournalError::NoConsistencyProof { old_size: size, new_size: size, size: self.size });
        }
        tlog::tree_root(self, size).map_err(|err| self.prove_error(err))
    }

    /// The current head (R-LOG-2).
    pub fn head(&self) -> Result<LogHead, JournalError> {
        Ok(LogHead { tree: Tree::new(self.size, self.root_at(self.size)?), source: self.source() })
    }

    /// The inclusion proof of a sealed run in the tree of this view
    /// (R-LOG-2, R-LOG-6): at its stored position, or its rank in the walk.
    pub fn inclusion(&self, run: &RunId) -> Result<RunInclusion, JournalError> {
        let not_sealed = || self.not_sealed(run);
        let (index, seal) = match &self.source {
            Source::Walk { seals, .. } => {
                let rank = seals.iter().position(|seal| seal.run == *run).ok_or_else(not_sealed)?;
                let seal = seals.get(rank).cloned().ok_or_else(not_sealed)?;
                (rank as u64, seal)
            }
            Source::Stored => {
                let seal = self.store.seal_of(self.tenant, run)?.ok_or_else(not_sealed)?;
                (seal.position, seal)
            }
        };
        if index >= self.size {
            // Sealed after this view was opened.
            return Err(not_sealed());
        }
        let proof = tlog::prove_inclusion(self, index, self.size).map_err(|err| self.prove_error(err))?;
        Ok(RunInclusion {
            index,
            tree: self.head()?.tree,
            leaf: seal.leaf_hash(),
            leaf_bytes: seal.leaf_bytes,
            proof,
            source: self.source(),
        })
    }

    /// What proves `run` in the log: its seal leaf's inclusion when it is
    /// sealed, else the newest heads leaf holding its head. A seal or heads
    /// leaf written after this view was opened lies past its size; it is
    /// asked of a view opened afresh (any position committed before that
    /// opening is inside it), so a run sealed or covered meanwhile is proven,
    /// not called unsealed (review 18): an answer that is not a seal's is
    /// asked again of a fresh view. Each answer carries its own tree.
    pub fn prove_run(&self, run: &RunId) -> Result<RunProof, JournalError> {
        match self.proof_in_view(run) {
            Ok(RunProof::Head(_)) | Err(JournalError::NotSealed { .. }) => self.reopen()?.proof_in_view(run),
            answer => answer,
        }
    }

    fn proof_in_view(&self, run: &RunId) -> Result<RunProof, JournalError> {
        match self.inclusion(run) {
            Err(JournalError::NotSealed { .. }) => self.head_inclusion(run).map(RunProof::Head),
            answer => answer.map(RunProof::Seal),
        }
    }

    /// The proof that an open run had a head at this view's size (issue 20):
    /// the newest heads leaf that holds an entry of `run`, its inclusion in
    /// this tree, and the entry's inclusion in the leaf's entries tree. An
    /// attestation of a prefix (the run had this record at this seq), never
    /// that its history is complete.
    pub fn head_inclusion(&self, run: &RunId) -> Result<HeadInclusion, JournalError> {
        let not_covered = || self.not_sealed(run);
        let position = self.store.newest_heads_of(self.tenant, run)?.ok_or_else(not_covered)?;
        let index = match &self.source {
            Source::Stored => position,
            Source::Walk { seals, .. } => {
                seals.iter().position(|seal| seal.position == position).ok_or_else(not_covered)? as u64
            }
        };
        if index >= self.size {
            return Err(not_covered());
        }
        let leaf_bytes =
            self.store.seal_at(self.tenant, position)?.map(|seal| seal.leaf_bytes).ok_or_else(not_covered)?;
        let entries = self.store.heads_entries(self.tenant, position)?;
        let entry_index = entries.iter().position(|entry| entry.run == *run).ok_or_else(not_covered)?;
        let entry = entries.get(entry_index).cloned().ok_or_else(not_covered)?;
        let entry_proof = crate::heads::prove_entry(&entries, entry_index as u64).ok_or_else(|| {
            JournalError::StoreDamage { tenant: self.tenant.clone(), detail: "a heads leaf's entries tree".into() }
        })?;
        let proof = tlog::prove_inclusion(self, index, self.size).map_err(|err| self.prove_error(err))?;
        Ok(HeadInclusion {
            index,
            tree: self.head()?.tree,
            leaf: LeafHash::of(&leaf_bytes),
            leaf_bytes,
            proof,
            entry,
            entry_index: entry_index as u64,
            entries: entries.len() as u64,
            entry_proof,
            source: self.source(),
        })
    }

    /// The consistency proof from `old_size` to `new_size`, for any
    /// `1 <= old_size <= new_size <= self.size()` (R-LOG-2).
    pub fn consistency(&self, old_size: u64, new_size: u64) -> Result<LogConsistency, JournalError> {
        if old_size == 0 || old_size > new_size || new_size > self.size {
            return Err(JournalError::NoConsistencyProof { old_size, new_size, size: self.size });
        }
        let proof = tlog::prove_consistency(self, old_size, new_size).map_err(|err| self.prove_error(err))?;
        Ok(LogConsistency {
            old: Tree::new(old_size, self.root_at(old_size)?),
            new: Tree::new(new_size, self.root_at(new_size)?),
            proof,
            source: self.source(),
        })
    }

    fn not_sealed(&self, run: &RunId) -> JournalError {
        match self.store.read_run(self.tenant, run) {
            Ok(rows) if !rows.rows.is_empty() => {
                JournalError::NotSealed { tenant: self.tenant.clone(), run: run.clone() }
            }
            _ => JournalError::NotFound { tenant: self.tenant.clone(), run: run.clone() },
        }
    }
}

impl HashReader for LogView<'_> {
    type Error = JournalError;

    fn read_hashes(&self, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
        match &self.source {
            Source::Stored => self.store.read_log_nodes(self.tenant, ids),
            Source::Walk { tree, .. } => tree.read_hashes(ids).map_err(|err| walk_error(self.tenant, err)),
        }
    }
}

impl witness::LogHistory for LogView<'_> {
    fn root_at(&self, size: u64) -> Result<RootHash, witness::HistoryError> {
        Ok(tlog::tree_root(self, size)?)
    }

    fn consistency_proof(&self, old_size: u64, new_size: u64) -> Result<ConsistencyProof, witness::HistoryError> {
        Ok(tlog::prove_consistency(self, old_size, new_size)?)
    }

    /// Read afresh: another instance may have sealed more since the view opened.
    fn reached(&self, size: u64) -> Result<bool, witness::HistoryError> {
        let counters = self
            .store
            .log_counters(self.tenant)
            .map_err(|err| witness::HistoryError::Store { reason: err.to_string() })?;
        Ok(counters.seal_count >= size)
    }
}

/// Signs a checkpoint of `tree` for `origin` with `key`, now (R-NOTE-2).
/// The plane itself signs through [`sign_head`], which first makes sure the
/// tree is one it may sign; this is the bare signature, for fixtures and
/// observers' copies.
pub fn sign_checkpoint(origin: &Origin, tree: Tree, key: &LogKey) -> Result<SignedCheckpoint, JournalError> {
    key.sign(&Checkpoint::new(origin, tree))
        .map_err(|err| JournalError::InvalidRecord(format!("signing the checkpoint of {origin}: {err}")))
}

/// Why the plane's high-water mark could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HighWaterError {
    /// The mark's file could not be read or written.
    #[error("the plane's high-water mark {path}: {reason}")]
    Io {
        /// Where the mark is kept.
        path: String,
        /// What failed.
        reason: String,
    },
    /// The mark's file does not parse.
    #[error("the plane's high-water mark {path} is damaged: {reason}")]
    Damaged {
        /// Where the mark is kept.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The mark of `origin` was kept for another log key than the one that
    /// signs it now: a key file copied beside another plane's mark (every
    /// `init` gives the tenant `default` one origin), or a mark copied
    /// beside another plane's keys. It says nothing of what this key signed.
    #[error(
        "the plane's high-water mark {path} was written for the log key {marked} of {origin}, and {origin} is \
         signed here with the log key {key}: the key file was copied from another plane, or the mark from beside \
         another plane's keys"
    )]
    OtherKey {
        /// Where the mark is kept.
        path: String,
        /// The origin whose line names another key.
        origin: String,
        /// The key the mark's line was kept for (a verifier key).
        marked: String,
        /// The key that signs the origin here (a verifier key).
        key: String,
    },
}

/// What the plane's high-water mark says about one origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HighWaterMark {
    /// The plane has never signed a checkpoint of this origin.
    Never,
    /// The last tree the plane signed for this origin.
    Signed(Tree),
    /// The mark of this origin is gone (its file lost or deleted): the plane
    /// cannot tell what it signed last, and must ask its witnesses before it
    /// signs again ([`HighWater::raise`] with what they hold).
    Lost {
        /// Where the mark was kept, and what is missing.
        reason: String,
    },
}

/// What [`HighWater::raise`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Raised {
    /// The mark says the tree now (or said it already).
    Raised,
    /// The mark no longer says what the caller saw: nothing was written.
    Moved(HighWaterMark),
}

impl HighWaterMark {
    /// Whether the mark `now` is still what a caller `seen`: the same tree,
    /// never for never, lost for lost (the reason may be worded otherwise).
    pub fn unchanged_since(&self, seen: &HighWaterMark) -> bool {
        match (self, seen) {
            (Self::Signed(now), Self::Signed(seen)) => now == seen,
            (Self::Never, Self::Never) | (Self::Lost { .. }, Self::Lost { .. }) => true,
            _ => false,
        }
    }
}

/// The plane's own record of the last tree it signed per origin, kept
/// outside the store (beside the plane's key file), so that a store put back
/// from a backup cannot make the plane sign a second history: the store's
/// record of what it signed came back with the backup; this one did not.
pub trait HighWater: Send + Sync {
    /// What the mark says about `origin`.
    fn last(&self, origin: &Origin) -> Result<HighWaterMark, HighWaterError>;
    /// Records `tree` as the last the plane signed for `origin` (or, after a
    /// loss, the largest tree a witness holds), durably, before the
    /// signature leaves the process, if the mark still says `seen`, what
    /// the caller checked `tree` against (a lost mark is seen as lost
    /// whatever its reason), or says `tree` already. One step against every
    /// other process of the plane: when the mark moved since it was read
    /// (another process signed meanwhile), nothing is written and the answer
    /// is [`Raised::Moved`] with what it says now; the caller must check its
    /// tree against that before it signs anything.
    fn raise(&self, origin: &Origin, seen: &HighWaterMark, tree: Tree) -> Result<Raised, HighWaterError>;
    /// Where the mark is kept, for messages.
    fn location(&self) -> String;
}

/// A mark that does not parse was written by no plane: damage, and the
/// plane refuses to sign. A mark that cannot be read or written (a full
/// disk, a path in the way) says nothing about the log: a failure of I/O,
/// never an integrity refusal, whose audience is told the history moved
/// (review 28).
pub fn high_water_error(tenant: &TenantId, err: HighWaterError) -> JournalError {
    match err {
        HighWaterError::Io { .. } => JournalError::Io(crate::error::StorageError::new(
            format!(
                "the high-water mark of tenant {tenant}'s log could not be read or written, so nothing was signed \
                 or admitted (make the mark's file and folder writable, or free the disk, then run the command \
                 again)"
            ),
            err,
        )),
        HighWaterError::Damaged { .. } => {
            JournalError::WouldSignRollback { tenant: tenant.clone(), reason: err.to_string() }
        }
        // One origin held to two marks lets one key sign two histories
        // of it (review 54).
        HighWaterError::OtherKey { .. } => JournalError::WouldSignRollback {
            tenant: tenant.clone(),
            reason: format!(
                "{err}. Nothing was signed or admitted. Put back the mark kept beside this key file where it \
                 signed (or this folder's own key file); a key signs one origin's log from one store, held to \
                 one mark"
            ),
        },
    }
}

/// Whether `head` (of `view`) extends `last`, a tree this plane signed
/// before: `Ok(None)` when it does; `Ok(Some(reason))` when it does not;
/// a retryable [`JournalError::CheckpointConflict`] when the view is stale
/// (another signer saw more of this log after it was opened).
/// What is left when no copy of the store the plane last signed from
/// survives (review 85): every refusal of an older store says it, else the
/// operator met a dead end whose only way out, a mark written back by hand,
/// signs a second history.
pub const NO_NEWER_COPY: &str = "If no copy of it is left, this log can never be signed again (any tree signed now \
     would be a second history under the plane's key): keep this store to read and audit, and start a new log under \
     an origin of its own in a new folder (`agentplane init --origin-base BASE`, a BASE never used before), its \
     witnesses told its new origin and log key";

/// Why the tenant's stored log is older than what the plane signed, when
/// it is (R-PLANE-2, R-RUN-5): its high-water mark is a tree the log does
/// not extend, so the store was put back from a backup (or rewritten), and
/// runs recorded and signed after that backup are gone from it. `None` when
/// the log extends the mark, or no tree is marked (never signed, or the mark
/// is lost: signing refuses then, and asks the witnesses).
pub fn older_than_mark(
    store: &dyn Store,
    tenant: &TenantId,
    origin: &Origin,
    high_water: &dyn HighWater,
) -> Result<Option<String>, JournalError> {
    let HighWaterMark::Signed(mark) = high_water.last(origin).map_err(|err| high_water_error(tenant, err))? else {
        return Ok(None);
    };
    let view = LogView::open(store, tenant)?;
    let head = view.head()?.tree;
    let reason = match refuses_to_extend(store, &view, head, mark) {
        Ok(reason) => reason,
        // A view older than the log: the log is newer than the mark's tree, not older.
        Err(JournalError::CheckpointConflict { .. }) => None,
        Err(err) => return Err(err),
    };
    Ok(reason.map(|reason| {
        format!(
            "the plane signed size {} (root {}) of {origin} (recorded in {}), and {reason}: the store is older than \
             what the plane signed",
            mark.size,
            mark.root,
            high_water.location()
        )
    }))
}

/// Whether `tree` extends `older`, the consistency proof read from `view`
/// only where the sizes need one (tlog's one rule). A proof the store failed
/// to give (a connection dropped or ended by the server, a timeout: class
/// I/O) is that failure, the outer `Err`: it says nothing of the log's
/// history. Only a proof that does not verify, or damage met reading it, is
/// a verdict on the log (the inner `Err`).
pub(crate) fn extends_or_failed_read(
    view: &LogView<'_>,
    tree: Tree,
    older: &Tree,
) -> Result<Result<(), tlog::ExtendsError<JournalError>>, JournalError> {
    match tree.extends_with(older, |old, new| view.consistency(old, new).map(|c| c.proof)) {
        Ok(_) => Ok(Ok(())),
        Err(tlog::ExtendsError::Prove(err)) if err.class() == crate::ErrorClass::Io => Err(err),
        Err(err) => Ok(Err(err)),
    }
}

fn refuses_to_extend(
    store: &dyn Store,
    view: &LogView<'_>,
    head: Tree,
    last: Tree,
) -> Result<Option<String>, JournalError> {
    let tenant = view.tenant();
    // Another signer saw more of this log after this view was opened when
    // the log read afresh, as any view reads it, reaches `last`: the view
    // is stale, not the log. Nothing is signed; open a new view. Never the
    // stored seal count alone: a counter row raised behind the plane (on
    // PostgreSQL a column) over a log cut below `last` made a store older
    // than what the plane signed a retryable conflict, admission's check
    // and the sweep's let it through, and the sweep appended its heads leaf
    // to it. A fresh view reads the leaves themselves where the count and
    // the positions disagree.
    if head.size < last.size && store.log_counters(tenant)?.seal_count >= last.size && view.reopen()?.size >= last.size
    {
        return Err(JournalError::CheckpointConflict {
            tenant: tenant.clone(),
            expected: Some(head.size),
            found: Some(last.size),
        });
    }
    // The one rule (tlog's): a proof is computed only when the sizes need one.
    let extends = extends_or_failed_read(view, head, &last)?;
    Ok(extends.err().map(|err| match err {
        tlog::ExtendsError::Verify(tlog::VerifyError::Shrinks { .. }) => {
            format!("the log has {} sealed runs; this plane signed {} before: the log shrank", head.size, last.size)
        }
        err => {
            let reason = match err {
                tlog::ExtendsError::Verify(tlog::VerifyError::SameSizeDifferentRoots { size }) => {
                    format!("another root at size {size}")
                }
                err => err.to_string(),
            };
            format!(
                "the log of {} does not extend the checkpoint of {} this plane signed before ({reason}): its history was rewritten",
                head.size, last.size
            )
        }
    }))
}

/// Signs the head of `view` with the plane's log key, never a rollback: a
/// tree read with holes, or one that does not extend the last checkpoint this
/// plane signed for the tenant, is refused with
/// [`JournalError::WouldSignRollback`] and nothing is signed.
///
/// Two records of the last signature are held: the plane's `high_water`
/// mark, kept outside the store (when given: a store put back from a backup
/// cannot roll it back), checked first and raised (durably) before the
/// signature is made; and the store's own record, kept as a second check. A
/// new tree is recorded as the last signed in the same transaction that
/// checks the one before it is still the last
/// ([`Store::record_signed_checkpoint`]). When another signer got further
/// since the view was opened, the answer is the retryable
/// [`JournalError::CheckpointConflict`]: open a new view and sign again
/// ([`sign_current_head`] does).
pub fn sign_head(
    store: &dyn Store,
    view: &LogView<'_>,
    origin: &Origin,
    key: &LogKey,
    high_water: Option<&dyn HighWater>,
) -> Result<SignedCheckpoint, JournalError> {
    // The tree checked is the tree signed: read again from the stored nodes,
    // a node rewritten after the checks would be signed as it is.
    let Checked { head, last, seen } = refusal(store, view, origin, key, high_water)?;
    if let (Some(high_water), Some(seen)) = (high_water, seen) {
        // Durable before any signature of this tree exists, and only if no
        // other process of the plane signed since the mark was checked: two
        // processes on two stores (the plane, and one on a restored copy)
        // would otherwise both pass the check and sign a fork.
        if let Raised::Moved(now) =
            high_water.raise(origin, &seen, head).map_err(|err| high_water_error(view.tenant(), err))?
        {
            return Err(JournalError::CheckpointConflict {
                tenant: view.tenant().clone(),
                expected: match seen {
                    HighWaterMark::Signed(tree) => Some(tree.size),
                    _ => None,
                },
                found: match now {
                    HighWaterMark::Signed(tree) => Some(tree.size),
                    _ => None,
                },
            });
        }
    }
    let signed = sign_checkpoint(origin, head, key)?;
    if last != Some(head) {
        store.record_signed_checkpoint(
            view.tenant(),
            last,
            crate::store::SignedTree { tree: head, note: signed.note().to_owned() },
        )?;
    }
    Ok(signed)
}

/// What [`refusal`] checked: the view's head (the one tree that may be
/// signed), the last checkpoint the store recorded, and the mark the head
/// was checked against (with a high-water mark).
struct Checked {
    head: Tree,
    last: Option<Tree>,
    seen: Option<HighWaterMark>,
}

/// Every check of [`sign_head`] that refuses to sign `view`, signing
/// nothing: the head it held to every check, read once, when the view may
/// be signed.
fn refusal(
    store: &dyn Store,
    view: &LogView<'_>,
    origin: &Origin,
    key: &LogKey,
    high_water: Option<&dyn HighWater>,
) -> Result<Checked, JournalError> {
    let tenant = view.tenant();
    let refuse = |reason: String| JournalError::WouldSignRollback { tenant: tenant.clone(), reason };
    if view.source().has_holes() {
        return Err(refuse(
            "its positions have holes: sealed runs were removed behind the store (run `agentplane audit`)".into(),
        ));
    }
    let head = view.head()?.tree;
    if let Some(reason) = log_of_another_origin(store, tenant, head.size, origin)? {
        return Err(refuse(reason));
    }
    let mut marked = None;
    let mut seen = None;
    if let Some(high_water) = high_water {
        let mark = high_water.last(origin).map_err(|err| high_water_error(tenant, err))?;
        seen = Some(mark.clone());
        match mark {
            HighWaterMark::Never => {}
            HighWaterMark::Signed(mark) => {
                marked = Some(mark);
                if let Some(reason) = refuses_to_extend(store, view, head, mark)? {
                    return Err(refuse(format!(
                        "a store older than the plane's last signature is in place: the plane signed size {} \
                         (root {}) of {origin} (recorded in {}), and {reason}. Nothing was signed. Put the \
                         store the plane last signed from back in place (or the newest backup that has it), \
                         then run `agentplane verify`; never sign from this one. {NO_NEWER_COPY}",
                        mark.size,
                        mark.root,
                        high_water.location()
                    )));
                }
            }
            HighWaterMark::Lost { reason } => {
                return Err(refuse(format!(
                    "the plane's record of its last signature is lost ({reason}): it cannot tell whether this \
                     store is older than what it signed. Nothing was signed. Restore {} from a backup, or run \
                     `agentplane sweep`, which asks the witnesses what they hold before it signs",
                    high_water.location()
                )));
            }
        }
    }
    let last_row = store.last_signed_checkpoint(tenant)?;
    let last = last_row.as_ref().map(|signed| signed.tree);
    if let Some(last) = last
        && let Some(reason) = refuses_to_extend(store, view, head, last)?
    {
        return Err(refuse(reason));
    }
    // The newest tree the plane can trust: its mark, kept outside the store;
    // without one, the store's last recorded checkpoint only when its note
    // carries the plane's own signature (a row forged to match forged nodes
    // would otherwise vouch for them).
    let trusted = marked.or_else(|| last_row.filter(|row| signed_by(key, origin, row)).map(|row| row.tree));
    let from = trusted.map_or(0, |tree| tree.size).min(head.size);
    let rows = store.seals_in(tenant, from..head.size)?;
    if let Some(reason) = nodes_disagree_with_seals(view, head, trusted, from, &rows)? {
        return Err(refuse(reason));
    }
    if let Some(reason) = leaves_disagree_with_records(store, tenant, origin, &rows)? {
        return Err(refuse(reason));
    }
    Ok(Checked { head, last, seen })
}

/// Why the tenant's log of `size` leaves is not `origin`'s, when its first
/// or its newest leaf (a seal or a heads leaf, each naming the origin of
/// the log it was appended to) names another origin (R-PLANE-1): two
/// tenants' origins swapped in the configuration, or one changed, would
/// sign one tenant's log with another's key under its origin. A leaf this
/// build cannot parse says nothing here (the audit reads it). Two reads.
pub(crate) fn log_of_another_origin(
    store: &dyn Store,
    tenant: &TenantId,
    size: u64,
    origin: &Origin,
) -> Result<Option<String>, JournalError> {
    let positions = match size {
        0 => return Ok(None),
        1 => vec![0],
        _ => vec![0, size - 1],
    };
    for position in positions {
        let Some(leaf) = store.seal_at(tenant, position)? else { continue };
        let named = crate::seal::SealLeaf::parse(&leaf.leaf_bytes)
            .map(|seal| seal.origin)
            .or_else(|| crate::heads::HeadsLeaf::parse(&leaf.leaf_bytes).map(|heads| heads.origin));
        if let Some(named) = named.filter(|named| named != origin) {
            return Ok(Some(format!(
                "its leaf at position {position} names the origin {named}, not {origin}: it is the log of another \
                 origin (the tenant's origin in agentplane.toml was changed, or two tenants' origins swapped). \
                 Nothing was signed. Give the tenant its own origin back in the configuration; a log is never \
                 signed under another origin"
            )));
        }
    }
    Ok(None)
}

/// Whether `row`'s note is a checkpoint of `origin` at its tree signed by
/// the plane's `key`.
fn signed_by(key: &LogKey, origin: &Origin, row: &crate::store::SignedTree) -> bool {
    let verifier = key.verifier_key();
    SignedCheckpoint::open(row.note.as_bytes(), &[&verifier as &dyn witness::NoteVerifier]).is_ok_and(|(signed, _)| {
        signed.checkpoint().origin() == origin.as_str() && signed.checkpoint().tree() == row.tree
    })
}

/// The head a view of stored nodes gives, held to the seal rows above the
/// newest tree the plane trusts (its high-water mark, or the last checkpoint
/// it recorded and signed; the empty tree otherwise): the stored
/// frontier at that size must give its root, and that frontier with the
/// leaf of every seal row after it must give the head's root. The
/// consistency proof from the trusted tree is made of the same stored
/// nodes, so a node changed above it (a leaf hash of a seal that does not
/// exist) would otherwise be signed as it is, and witnessed. O(the rows
/// since that tree + log n) reads.
fn nodes_disagree_with_seals(
    view: &LogView<'_>,
    head: Tree,
    trusted: Option<Tree>,
    from: u64,
    rows: &[SealEntry],
) -> Result<Option<String>, JournalError> {
    if !matches!(view.source, Source::Stored) {
        // A walk is rebuilt from the seal rows themselves.
        return Ok(None);
    }
    let mut frontier = tlog::Frontier::from_reader(view, from).map_err(|err| view.prove_error(err))?;
    if let Some(trusted) = trusted.filter(|tree| tree.size == from)
        && frontier.root() != trusted.root
    {
        return Ok(Some(format!(
            "its stored node hashes of the first {from} entries do not give the root this plane signed at that \
             size: a stored node was changed behind the plane (run `agentplane audit`)"
        )));
    }
    let mut expected = from;
    for row in rows {
        if row.position != expected {
            return Ok(Some(format!(
                "its log has no entry at position {expected}: entries were removed behind the store (run \
                 `agentplane audit`)"
            )));
        }
        frontier.append(row.leaf_hash()).map_err(|err| walk_error(view.tenant(), err))?;
        expected += 1;
    }
    if expected != head.size || frontier.root() != head.root {
        return Ok(Some(format!(
            "the root its stored node hashes give at size {} is not the root its {} entries after size {from} \
             give: a stored node was changed behind the plane (run `agentplane audit`)",
            head.size,
            head.size - from
        )));
    }
    Ok(None)
}

/// Why a leaf appended since the newest tree the plane trusts (`rows`) does
/// not hold to the records the store keeps (R-COVER-1, R-PLANE-2): a seal
/// leaf whose run has no record at its seq with its hash, or has one after
/// it; a heads leaf whose stored entries do not give its root, or name a
/// record the store does not have. Such a leaf was written behind the plane
/// (with node hashes to match): signed, it would be a claim under the
/// plane's key that no store copy could clear, every audit after naming an
/// intact run cut back and every resume refusing it. So is a leaf that
/// names only records the store holds yet is none the plane appends (a seal
/// naming another origin, filed under another run's row, of a run sealed
/// already, or of a run whose sealed record is no conclusion that seals):
/// each is a finding of every audit against the checkpoint that signs it. A
/// leaf in a spelling this build does not write says nothing here (the
/// audit reads it). One read of the stored heads entries, one of the
/// records' hashes, and one of each run sealed since the trusted tree.
fn leaves_disagree_with_records(
    store: &dyn Store,
    tenant: &TenantId,
    origin: &Origin,
    rows: &[SealEntry],
) -> Result<Option<String>, JournalError> {
    let mut sealed_here = std::collections::BTreeSet::new();
    for row in rows {
        if let Some(reason) = seal_disagrees_with_records(store, tenant, origin, row, &mut sealed_here)? {
            return Ok(Some(format!(
                "its leaf at position {} {reason}: the log was written behind the plane, or the run cut back \
                 since (run `agentplane audit`)",
                row.position
            )));
        }
    }
    let heads_positions: Vec<u64> =
        rows.iter().filter(|row| HeadsLeaf::is_tagged(&row.leaf_bytes)).map(|row| row.position).collect();
    let mut entries = match (heads_positions.first(), heads_positions.last()) {
        (Some(first), Some(last)) => store.heads_entries_in(tenant, *first..last.saturating_add(1))?,
        _ => Default::default(),
    };
    // Each record a heads leaf claims, the hash it claims for it, and the
    // leaf's position.
    let mut claims: Vec<((RunId, u64), Option<ChainHash>, u64)> = Vec::new();
    for row in rows {
        if let Some(leaf) = HeadsLeaf::parse(&row.leaf_bytes) {
            if leaf.origin != *origin {
                return Ok(Some(format!(
                    "its heads leaf at position {} names the log {}, not {origin}: the log was written behind the \
                     plane (run `agentplane audit`)",
                    row.position, leaf.origin
                )));
            }
            let mut stored = entries.remove(&row.position).unwrap_or_default();
            stored.sort();
            if crate::heads::entries_tree(&stored).tree() != leaf.entries {
                return Ok(Some(format!(
                    "its heads leaf at position {} commits to {} entries the store does not keep (it keeps {}, or \
                     others): the log or its heads entries were written behind the plane (run `agentplane audit`)",
                    row.position,
                    leaf.entries.size,
                    stored.len()
                )));
            }
            claims.extend(stored.into_iter().map(|entry| ((entry.run, entry.seq), Some(entry.hash), row.position)));
        }
    }
    let asked: Vec<(RunId, u64)> = claims.iter().map(|(record, _, _)| record.clone()).collect();
    let found = store.stored_hashes(tenant, &asked)?;
    for (((run, seq), claimed, position), found) in claims.into_iter().zip(found) {
        if claimed == found {
            continue;
        }
        let wrong = match found {
            None => format!("names record {seq} of run {run}, which the store does not have"),
            Some(_) => format!("names record {seq} of run {run} with a hash the store's record has not"),
        };
        return Ok(Some(format!(
            "its leaf at position {position} {wrong}: the log was written behind the plane, or the run cut back \
             since (run `agentplane audit`)"
        )));
    }
    Ok(None)
}

/// Why the seal leaf in `row` is none the plane appends, held to the run it
/// names as the store keeps it: the leaf names this log's origin and the
/// row's run, is that run's one seal (none before it in `sealed_here`, its
/// run's seal found at this row), and seals the run's last record, whose
/// bytes give the sealed hash and are a conclusion that seals. A leaf in
/// this build's seal spelling that does not parse is refused too; one in
/// another spelling (a newer build's) says nothing here. One read of the
/// run.
fn seal_disagrees_with_records(
    store: &dyn Store,
    tenant: &TenantId,
    origin: &Origin,
    row: &SealEntry,
    sealed_here: &mut std::collections::BTreeSet<RunId>,
) -> Result<Option<String>, JournalError> {
    if HeadsLeaf::is_tagged(&row.leaf_bytes) {
        return Ok(HeadsLeaf::parse(&row.leaf_bytes)
            .is_none()
            .then(|| "is spelled as no heads leaf this plane writes".to_owned()));
    }
    let Some(seal) = SealLeaf::parse(&row.leaf_bytes) else {
        return Ok(row
            .leaf_bytes
            .starts_with(SEAL_LEAF_TAG.as_bytes())
            .then(|| "is spelled as no seal leaf this plane writes".to_owned()));
    };
    if seal.origin != *origin {
        return Ok(Some(format!("seals run {} in the log {}, not {origin}", seal.run, seal.origin)));
    }
    if seal.run != row.run {
        return Ok(Some(format!("seals run {}, but is filed under run {}", seal.run, row.run)));
    }
    if !sealed_here.insert(seal.run.clone()) {
        return Ok(Some(format!("seals run {} a second time", seal.run)));
    }
    let stored = match store.read_run(tenant, &seal.run) {
        Ok(stored) => stored,
        Err(JournalError::NotFound { .. }) => {
            return Ok(Some(format!(
                "names record {} of run {}, which the store does not have",
                seal.record_count, seal.run
            )));
        }
        Err(err) => return Err(err),
    };
    if let Some(first) = stored.seal.as_ref().filter(|first| first.position != row.position) {
        return Ok(Some(format!("seals run {} a second time (its seal is at position {})", seal.run, first.position)));
    }
    let Some(record) = stored.rows.iter().find(|record| record.seq == seal.record_count) else {
        return Ok(Some(format!(
            "names record {} of run {}, which the store does not have",
            seal.record_count, seal.run
        )));
    };
    if stored.rows.iter().any(|later| later.seq > seal.record_count) {
        return Ok(Some(format!(
            "seals run {} at seq {}, and the store holds records of it after",
            seal.run, seal.record_count
        )));
    }
    // The bytes read are the sealed hash's only when they link to it: a
    // kind or body edited under a kept hash column would pass for a
    // conclusion.
    if record.hash != seal.head || ChainHash::link(&record.prev_hash, &record.bytes) != seal.head {
        return Ok(Some(format!(
            "names record {} of run {} with a hash the store's record has not",
            seal.record_count, seal.run
        )));
    }
    let not_sealing =
        || format!("seals run {} at record {}, which is no conclusion that seals it", seal.run, seal.record_count);
    if crate::record::Record::header(&record.bytes).is_none_or(|header| header.kind != "RunConcluded") {
        return Ok(Some(not_sealing()));
    }
    // A conclusion of a version this build cannot read (a newer build's)
    // says nothing more here: the audit reads it.
    let Ok(decoded) = crate::record::Record::decode_verified(&record.bytes, &crate::version::Upcasters::builtin())
    else {
        return Ok(None);
    };
    let seals = decoded.run == seal.run
        && decoded.seq == seal.record_count
        && matches!(&decoded.body, crate::record::RecordBody::RunConcluded(concluded) if concluded.outcome.seals());
    Ok((!seals).then(not_sealing))
}

/// How every seal leaf this build writes begins ([`SealLeaf::to_bytes`]).
const SEAL_LEAF_TAG: &str = "agentplane/seal/v1\n";

/// Appends heads leaves for the runs whose head moved ([`Store::append_heads`]),
/// then opens the tenant's log and signs its head ([`sign_head`], held to
/// `high_water` when given), opening a
/// new view when another signer got further meanwhile (a few times at most).
pub fn sign_current_head<'a>(
    store: &'a dyn Store,
    tenant: &'a TenantId,
    origin: &Origin,
    key: &LogKey,
    high_water: Option<&dyn HighWater>,
) -> Result<(LogView<'a>, SignedCheckpoint), JournalError> {
    sign_current_head_asking(store, tenant, origin, key, high_water, &|_| Ok(()))
}

/// [`sign_current_head`] for a signer that asked the witnesses what they
/// hold before it began (the sweep): `ask_again` runs on every fresh view
/// after the first one signing tried, before that view is checked or
/// signed. Another signer got further meanwhile, and what the witnesses
/// hold may have grown with it; asked again, it binds the new signature as
/// it bound the first (the log may have been replaced meanwhile by another
/// history that extends all this plane signed, but not what they cosigned).
pub fn sign_current_head_asking<'a>(
    store: &'a dyn Store,
    tenant: &'a TenantId,
    origin: &Origin,
    key: &LogKey,
    high_water: Option<&dyn HighWater>,
    ask_again: &dyn Fn(&LogView<'a>) -> Result<(), JournalError>,
) -> Result<(LogView<'a>, SignedCheckpoint), JournalError> {
    // Refused before anything is written: a store the plane must not sign
    // from (restored, cut back) gets no heads leaf either. A check that
    // started over on a fresh view (another signer got further) is a
    // signing that started over too: the witnesses are asked again before
    // the first signature, not only before a second one.
    let started_over = std::cell::Cell::new(false);
    let note_start_over = |_: &LogView<'a>| {
        started_over.set(true);
        Ok(())
    };
    on_a_fresh_view(store, tenant, false, &note_start_over, |view| {
        refusal(store, view, origin, key, high_water).map(|_| ())
    })?;
    // Open runs enter the log before it is signed (issue 20): the checkpoint
    // then commits to every run's head, not only to the sealed ones.
    store.append_heads(tenant, origin)?;
    on_a_fresh_view(store, tenant, started_over.get(), ask_again, |view| {
        sign_head(store, view, origin, key, high_water)
    })
}

/// How many times a signature is tried again after another signer recorded
/// a checkpoint first.
const SIGNING_CONFLICT_ATTEMPTS: u32 = 16;

/// Runs `act` on the tenant's log as it is now, again on a fresh view when
/// another process of the plane got further meanwhile (a few times at most),
/// each fresh view first given to `ask_again` (the first one too when
/// `ask_first`: the caller already started over once).
fn on_a_fresh_view<'a, T>(
    store: &'a dyn Store,
    tenant: &'a TenantId,
    ask_first: bool,
    ask_again: &dyn Fn(&LogView<'a>) -> Result<(), JournalError>,
    mut act: impl FnMut(&LogView<'a>) -> Result<T, JournalError>,
) -> Result<(LogView<'a>, T), JournalError> {
    let (mut attempts, mut conflicts) = (0, 0);
    loop {
        let view = LogView::open(store, tenant)?;
        let done = if attempts + conflicts == 0 && !ask_first {
            act(&view)
        } else {
            ask_again(&view).and_then(|()| act(&view))
        };
        match done {
            Ok(done) => return Ok((view, done)),
            // Two signers in step (the sweep and a `checkpoint`, two plane
            // processes) can keep each other's view stale attempt after
            // attempt: a growing pause breaks the step (0.1 ms to 6.4 ms,
            // under 0.1 s in all), so a healthy plane is not told to sign
            // again (a CI run saw five conflicts in a row).
            Err(JournalError::CheckpointConflict { .. }) if conflicts < SIGNING_CONFLICT_ATTEMPTS => {
                std::thread::sleep(std::time::Duration::from_micros(100 << conflicts.min(6)));
                conflicts += 1;
            }
            // Another process of the plane signed a larger tree after this
            // view was read (its mark is then ahead of the view): a fresh
            // view that grew is held to the same checks again. A store that
            // is really older does not grow past the mark, and stays refused.
            Err(err @ JournalError::WouldSignRollback { .. }) if attempts < 4 => {
                if LogView::open(store, tenant)?.head()?.tree.size <= view.head()?.tree.size {
                    return Err(err);
                }
                attempts += 1;
            }
            Err(err) => return Err(err),
        }
    }
}
