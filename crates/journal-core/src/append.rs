//! The one append algorithm (R-STORE-1, R-RUN-2, R-RUN-3, R-LOG-5, R-LOG-7):
//! every backend runs [`append_one`] (or [`write_batch`] for a group commit)
//! over a small transaction interface, [`AppendTxn`], in the manner of Go
//! sumdb's `storage.ReadWrite`. The checks (sealed, head, link, conclusion),
//! the log position, the node hashes and the order of the writes are here,
//! once; a backend only reads and puts rows inside its own transaction.
//!
//! Every read and every computation comes before the first write, so an
//! append refused by a check has written nothing; a write that fails is the
//! backend's to classify: [`AppendFailure::Refused`] (only this append fails:
//! a unique key another writer took first, a trigger's refusal, rolled back
//! to the append's savepoint) or [`AppendFailure::Broken`] (nothing of the
//! batch may commit).

use tlog::{LeafHash, NodeHash, NodeId};
use witness::Origin;

use crate::chain::{ChainHash, ExpectedHead, StoredRecord};
use crate::clock::At;
use crate::error::JournalError;
use crate::group_commit::BatchReplies;
use crate::heads::{HEADS_LEAF_RUN, HeadEntry, HeadsLeaf, MAX_HEADS_PER_LEAF, sorted_entries};
use crate::ids::{RunId, TenantId};
use crate::record::Outcome;
use crate::store::AppendRequest;

/// The longest idempotency key stored, in bytes. Every backend indexes the
/// keys of a tenant, and PostgreSQL's index holds no entry past about 2.7 KB
/// (with the tenant's id, at most 128 bytes): a longer key failed the whole
/// group commit it was written in, other tenants' appends with it
/// (R-STORE-4). Refused before anything is written, for every backend.
pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 2048;

/// Why one append did not apply.
#[derive(Debug)]
pub enum AppendFailure {
    /// Refused, and nothing of it is written: only this append fails.
    Refused(JournalError),
    /// The transaction is broken: nothing of the batch may commit.
    Broken(JournalError),
}

impl AppendFailure {
    /// The error, whichever way it failed.
    pub fn into_error(self) -> JournalError {
        match self {
            Self::Refused(err) | Self::Broken(err) => err,
        }
    }
}

/// A run's row in the runs table: its head, whether it is sealed, and its
/// indexed outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunHead {
    /// The last record's seq and hash.
    pub head: ExpectedHead,
    /// Set once a sealing conclusion is appended; the store then refuses appends.
    pub sealed: bool,
    /// The last conclusion's outcome.
    pub outcome: Option<Outcome>,
    /// The outcome the row names that this build has no name for (`outcome`
    /// is then `None`), cut as [`Outcome::unknown_name`] cuts it: a newer
    /// build's conclusion, or a forged row.
    pub unknown_outcome: Option<String>,
}

/// What a backend's write transaction offers the append algorithm. Reads
/// see the transaction's own earlier writes (an earlier append of the same
/// batch). Every call names the request it serves, so a backend can classify
/// a failure (a conflict names the run and its seqs).
pub trait AppendTxn {
    /// Starts one append inside the batch's transaction (PostgreSQL: a
    /// savepoint, so a refused append rolls back alone). An error breaks the batch.
    fn begin_append(&mut self) -> Result<(), JournalError> {
        Ok(())
    }

    /// Ends one append: `kept` when it applied, otherwise it was refused and
    /// whatever it wrote is undone. An error breaks the batch.
    fn end_append(&mut self, kept: bool) -> Result<(), JournalError> {
        let _ = kept;
        Ok(())
    }

    /// The run's row, `None` when the run does not exist.
    fn run_head(&mut self, request: &AppendRequest) -> Result<Option<RunHead>, AppendFailure>;

    /// The tenant's next log position. A backend shared by several writers
    /// takes, here, whatever lock makes positions follow commit order.
    fn next_position(&mut self, tenant: &TenantId) -> Result<u64, AppendFailure>;

    /// Stored node hashes of the tenant's log; a missing one is store damage.
    fn log_nodes(&mut self, tenant: &TenantId, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError>;

    /// Writes the record row.
    fn put_record(&mut self, request: &AppendRequest) -> Result<(), AppendFailure>;

    /// Points the idempotency key at the run.
    fn put_idempotency_key(&mut self, request: &AppendRequest, key: &str) -> Result<(), AppendFailure>;

    /// Enters the run in the tenant's admission order at `at`, its
    /// `RunAdmitted`'s instant ([`crate::store::Store::admissions`]).
    fn put_admission(&mut self, request: &AppendRequest, at: At) -> Result<(), AppendFailure>;

    /// Moves the run's outcome index entry from `old` to `new`.
    fn put_outcome(&mut self, request: &AppendRequest, old: Option<Outcome>, new: Outcome)
    -> Result<(), AppendFailure>;

    /// Stores a log leaf at `position`: a run's seal (`run` is the run and
    /// the store also indexes its seal by run), or a heads leaf (`run` is
    /// [`HEADS_LEAF_RUN`]).
    fn put_leaf(&mut self, tenant: &TenantId, run: &str, position: u64, leaf: &[u8]) -> Result<(), AppendFailure>;

    /// Stores one complete-subtree hash of the tenant's log.
    fn put_log_node(&mut self, tenant: &TenantId, id: NodeId, hash: &NodeHash) -> Result<(), AppendFailure>;

    /// Advances the tenant's log counter.
    fn put_next_position(&mut self, tenant: &TenantId, next: u64) -> Result<(), AppendFailure>;

    /// Writes the run's row, and marks the run's head as moved since the
    /// last heads leaf (unless `row.sealed`: a seal covers it whole).
    fn put_run_head(&mut self, request: &AppendRequest, row: RunHead) -> Result<(), AppendFailure>;

    /// The heads of the tenant's runs marked moved, in any order, read
    /// under the lock [`AppendTxn::next_position`] takes: read before it,
    /// they may predate a heads leaf another writer commits first, and a
    /// later leaf would then hold older heads than an earlier one. Each
    /// with whether the run's stored record at that seq has that hash (a
    /// stored record never changes, so any read of it answers alike).
    fn moved_heads(&mut self, tenant: &TenantId) -> Result<Vec<(HeadEntry, bool)>, AppendFailure>;

    /// Stores the entries of the heads leaf at `position` and clears the
    /// moved mark of each entry's run.
    fn put_heads_entries(
        &mut self,
        tenant: &TenantId,
        position: u64,
        entries: &[HeadEntry],
    ) -> Result<(), AppendFailure>;
}

/// Applies one append inside `txn`: checks it against the run's row, then
/// writes the record, the idempotency key, the outcome index, the seal with
/// its log position and node hashes, and the run's new head. Returns the log
/// position when it sealed.
pub fn append_one(txn: &mut impl AppendTxn, request: &AppendRequest) -> Result<Option<u64>, AppendFailure> {
    let stored = txn.run_head(request)?;
    check_append(request, stored.as_ref().map(|s| s.head), stored.as_ref().is_some_and(|s| s.sealed))
        .map_err(AppendFailure::Refused)?;
    if let Some(unknown) = stored.as_ref().and_then(|s| s.unknown_outcome.as_deref()) {
        // A newer build's conclusion is a record past the caller's head (its
        // append meets the conflict above, its reread the build skew,
        // R-VER-4); at the caller's head no build concluded so: forged.
        return Err(AppendFailure::Refused(JournalError::StoreDamage {
            tenant: request.tenant.clone(),
            detail: format!(
                "run {}'s runs row names an outcome {unknown:?} no build concluded at its head (seq {}): nothing was \
                 written. Run `agentplane audit`, which names it",
                request.run,
                request.row.seq.saturating_sub(1)
            ),
        }));
    }
    let old_outcome = stored.and_then(|s| s.outcome);

    // Everything the seal needs is computed before the first write.
    let seal = request.conclusion.as_ref().and_then(|c| c.seal.as_ref());
    let sealing = match seal {
        Some(seal) => {
            let position = txn.next_position(&request.tenant)?;
            let nodes =
                nodes_for_new_leaf(txn, &request.tenant, position, seal.leaf_hash()).map_err(AppendFailure::Refused)?;
            Some((position, seal.to_bytes(), nodes))
        }
        None => None,
    };

    txn.put_record(request)?;
    if let Some(key) = &request.idempotency_key {
        txn.put_idempotency_key(request, key)?;
        if let Some(at) = crate::store::admitted_at_of(&request.row) {
            txn.put_admission(request, at)?;
        }
    }
    if let Some(conclusion) = &request.conclusion {
        txn.put_outcome(request, old_outcome, conclusion.outcome)?;
    }
    let mut position = None;
    if let Some((next, leaf, nodes)) = sealing {
        put_log_leaf(txn, &request.tenant, request.run.as_str(), next, &leaf, &nodes)?;
        position = Some(next);
    }
    let outcome = request.conclusion.as_ref().map(|c| c.outcome).or(old_outcome);
    let head = ExpectedHead { seq: request.row.seq, hash: request.row.hash };
    txn.put_run_head(request, RunHead { head, sealed: position.is_some(), outcome, unknown_outcome: None })?;
    Ok(position)
}

/// Writes a leaf, the node hashes it completes and the advanced counter.
fn put_log_leaf(
    txn: &mut impl AppendTxn,
    tenant: &TenantId,
    run: &str,
    position: u64,
    leaf: &[u8],
    nodes: &[(NodeId, NodeHash)],
) -> Result<(), AppendFailure> {
    txn.put_leaf(tenant, run, position, leaf)?;
    for (id, hash) in nodes {
        txn.put_log_node(tenant, *id, hash)?;
    }
    txn.put_next_position(tenant, position + 1)
}

/// Appends heads leaves for the tenant's moved runs (issue 20; see
/// [`crate::heads`]): each leaf commits to up to [`MAX_HEADS_PER_LEAF`]
/// entries in run id order, stored beside it so an auditor can read them,
/// and the runs' moved marks are cleared. Costs O(runs moved), never
/// O(all runs). Returns the positions appended (none when no run moved).
pub fn append_heads(txn: &mut impl AppendTxn, tenant: &TenantId, origin: &Origin) -> Result<Vec<u64>, AppendFailure> {
    let moved = txn.moved_heads(tenant)?;
    // The head entered is the runs row's, derived data: one naming a record
    // the run does not have (the row changed behind the plane just before a
    // checkpoint, then put back) would be signed, and from then on every
    // audit would report the run cut back below it and every resume refuse
    // it, its records untouched. Refused: nothing is appended or signed.
    if let Some((entry, _)) = moved.iter().find(|(_, held)| !held) {
        return Err(AppendFailure::Refused(JournalError::StoreDamage {
            tenant: tenant.clone(),
            detail: format!(
                "the runs row of run {} names its head at seq {} ({}), a record the run does not have: the row was \
                 changed behind the plane, and no heads leaf is signed over it (run `agentplane verify`)",
                entry.run, entry.seq, entry.hash
            ),
        }));
    }
    let moved = sorted_entries(moved.into_iter().map(|(entry, _)| entry).collect());
    let mut positions = Vec::new();
    for entries in moved.chunks(MAX_HEADS_PER_LEAF) {
        let leaf = HeadsLeaf::new(origin, entries).to_bytes();
        let position = txn.next_position(tenant)?;
        let nodes = nodes_for_new_leaf(txn, tenant, position, LeafHash::of(&leaf)).map_err(AppendFailure::Refused)?;
        put_log_leaf(txn, tenant, HEADS_LEAF_RUN, position, &leaf, &nodes)?;
        txn.put_heads_entries(tenant, position, entries)?;
        positions.push(position);
    }
    Ok(positions)
}

/// Applies a group commit's appends in order inside one transaction: one
/// reply per append. `Err` means the transaction is broken: the caller
/// drops it (nothing of the batch commits) and answers every append with it.
pub fn write_batch(txn: &mut impl AppendTxn, batch: &[&AppendRequest]) -> Result<BatchReplies, JournalError> {
    let mut replies = Vec::with_capacity(batch.len());
    for request in batch {
        txn.begin_append()?;
        match append_one(txn, request) {
            Ok(position) => {
                txn.end_append(true)?;
                replies.push(Ok(position));
            }
            Err(AppendFailure::Refused(err)) => {
                txn.end_append(false)?;
                replies.push(Err(err));
            }
            Err(AppendFailure::Broken(err)) => return Err(err),
        }
    }
    Ok(replies)
}

/// Whether `request` is a plain append: to a run that exists (it expects a
/// head), with no idempotency key and no conclusion, and passing every check
/// of [`append_one`] that reads nothing from the store, given the head it
/// expects. Such an append writes only its record and moves its run's head.
/// A backend may write plain appends of distinct runs in one statement that
/// holds each run's stored row to the head its append expects, unsealed (the
/// only reads [`append_one`] makes of it), writing each record only where
/// its run's row moved; an append that statement did not write goes to
/// [`write_batch`], which answers it.
pub fn is_plain_append(request: &AppendRequest) -> bool {
    request.expected_head.is_some()
        && request.idempotency_key.is_none()
        && request.conclusion.is_none()
        && check_append(request, request.expected_head, false).is_ok()
}

/// Checks an append against the run's stored head and sealed flag.
fn check_append(request: &AppendRequest, head: Option<ExpectedHead>, sealed: bool) -> Result<(), JournalError> {
    if sealed {
        return Err(JournalError::Sealed { run: request.run.clone() });
    }
    if head != request.expected_head {
        return Err(JournalError::Conflict {
            run: request.run.clone(),
            expected_seq: request.expected_head.map_or(0, |h| h.seq),
            found_seq: head.map_or(0, |h| h.seq),
        });
    }
    crate::record::within_record_bound(&request.run, request.row.seq, request.row.bytes.len())?;
    let (seq, prev) = head.map_or((1, ChainHash::GENESIS), |h| (h.seq + 1, h.hash));
    if request.row.seq != seq || request.row.prev_hash != prev {
        return Err(JournalError::InvalidRecord(format!(
            "row seq {} does not follow the head (seq {seq} expected, linked to its hash)",
            request.row.seq
        )));
    }
    if ChainHash::link(&prev, &request.row.bytes) != request.row.hash {
        return Err(JournalError::InvalidRecord("row hash is not SHA-256(prev_hash || bytes)".into()));
    }
    if let Some(key) = &request.idempotency_key
        && key.len() > MAX_IDEMPOTENCY_KEY_BYTES
    {
        return Err(JournalError::IdempotencyKeyTooLong {
            run: request.run.clone(),
            bytes: key.len(),
            max: MAX_IDEMPOTENCY_KEY_BYTES,
        });
    }
    if request.idempotency_key.is_some() && !is_admission(&request.row) {
        return Err(JournalError::InvalidRecord(
            "only a run's first record, its RunAdmitted, carries an idempotency key".into(),
        ));
    }
    match &request.conclusion {
        Some(conclusion) if conclusion.outcome.seals() != conclusion.seal.is_some() => {
            Err(JournalError::InvalidRecord(format!(
                "a {} conclusion {} a seal",
                conclusion.outcome,
                if conclusion.outcome.seals() { "needs" } else { "takes no" }
            )))
        }
        _ => Ok(()),
    }
}

fn is_admission(row: &StoredRecord) -> bool {
    row.seq == 1 && row.kind == "RunAdmitted"
}

/// The node hashes a new leaf at `position` completes, read from the nodes
/// `txn` already stores.
fn nodes_for_new_leaf(
    txn: &mut impl AppendTxn,
    tenant: &TenantId,
    position: u64,
    leaf: LeafHash,
) -> Result<Vec<(NodeId, NodeHash)>, JournalError> {
    struct Reader<'a, T: AppendTxn>(std::cell::RefCell<&'a mut T>, &'a TenantId);
    impl<T: AppendTxn> tlog::HashReader for Reader<'_, T> {
        type Error = JournalError;
        fn read_hashes(&self, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
            self.0.borrow_mut().log_nodes(self.1, ids)
        }
    }
    let reader = Reader(std::cell::RefCell::new(txn), tenant);
    let mut frontier = tlog::Frontier::from_reader(&reader, position).map_err(|err| match err {
        tlog::ProveError::Reader(err) => err,
        other => JournalError::StoreDamage { tenant: tenant.clone(), detail: format!("log nodes: {other}") },
    })?;
    let mut nodes = Vec::new();
    frontier.append_with(leaf, |id, hash| nodes.push((id, *hash))).map_err(|full| JournalError::StoreDamage {
        tenant: tenant.clone(),
        detail: format!("the log counter is at {position}: {full}"),
    })?;
    Ok(nodes)
}

/// A run id a backend read back from a row of `tenant` (or the reserved
/// name of heads leaves, in the log's leaves): one that does not parse is
/// store damage.
pub fn stored_run_id(tenant: &TenantId, text: &str) -> Result<RunId, JournalError> {
    if text == HEADS_LEAF_RUN {
        return Ok(RunId::heads_leaf());
    }
    RunId::new(text).map_err(|_| JournalError::StoreDamage {
        tenant: tenant.clone(),
        detail: format!("a stored run id {text:?} is invalid"),
    })
}
