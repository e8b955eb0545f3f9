//! The storage contract every backend implements (R-STORE-1) and the
//! conformance suite checks. Synchronous; tenants are explicit arguments.

use tlog::{LeafHash, NodeHash, NodeId, Tree};

use crate::chain::{ChainHash, ExpectedHead, StoredRecord};
use crate::clock::At;
use crate::error::JournalError;
use crate::ids::{RunId, TenantId};
use crate::record::Outcome;
use crate::seal::SealLeaf;

/// Heads entries by the position of their heads leaf.
pub type HeadsByPosition = std::collections::BTreeMap<u64, Vec<crate::heads::HeadEntry>>;

/// The entries of `all` at positions in `positions` (none when the range is empty).
pub fn entries_in(all: &HeadsByPosition, positions: std::ops::Range<u64>) -> HeadsByPosition {
    if positions.is_empty() {
        return HeadsByPosition::new();
    }
    all.range(positions).map(|(position, entries)| (*position, entries.clone())).collect()
}

/// One append: a row, the head it must follow, and the conclusion it records.
#[derive(Debug, Clone)]
pub struct AppendRequest {
    /// The tenant.
    pub tenant: TenantId,
    /// The run.
    pub run: RunId,
    /// The head the appender read (`None`: the run must not exist yet).
    pub expected_head: Option<ExpectedHead>,
    /// The row. Its `seq` is the head's plus one and its `prev_hash` the head's hash.
    pub row: StoredRecord,
    /// The admission's idempotency key, set exactly when the row is a run's
    /// `RunAdmitted`: the idempotency index takes it in the same transaction.
    pub idempotency_key: Option<String>,
    /// Set when the row is a `RunConcluded`: the outcome index takes it in the
    /// same transaction (R-RUN-3), and a sealing outcome also freezes the run
    /// and enters `seal` in the tenant's log (R-RUN-2, R-LOG-5).
    pub conclusion: Option<Conclusion>,
    /// What the backend keeps on disk for `row.bytes`, when it encoded them
    /// on the appender's thread before queueing the request (redb's layout
    /// 2 compresses them there, so a batch's compression runs on its
    /// appenders at once, not on the one thread that commits it). Callers
    /// pass `None`: a backend that encodes sets it itself and ignores what
    /// it was given, so what it keeps is always its own encoding of
    /// `row.bytes`, the bytes the chain commits to.
    pub encoded_bytes: Option<Vec<u8>>,
}

/// A conclusion carried by an append.
#[derive(Debug, Clone)]
pub struct Conclusion {
    /// The outcome.
    pub outcome: Outcome,
    /// The leaf, present exactly when the outcome seals.
    pub seal: Option<SealLeaf>,
}

/// A sealed run's entry in its tenant's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealEntry {
    /// The position the counter gave it (never reused; R-LOG-5).
    pub position: u64,
    /// The run.
    pub run: RunId,
    /// The leaf bytes ([`SealLeaf::to_bytes`]).
    pub leaf_bytes: Vec<u8>,
}

impl SealEntry {
    /// The leaf hash of the stored bytes.
    pub fn leaf_hash(&self) -> LeafHash {
        LeafHash::of(&self.leaf_bytes)
    }
}

/// A run as stored: its rows in seq order, the head the runs table records,
/// whether it is sealed, and its indexed outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRows {
    /// The rows, ordered by seq.
    pub rows: Vec<StoredRecord>,
    /// The head the store recorded at the last append.
    pub head: Option<ExpectedHead>,
    /// The runs table's sealed flag: the store refuses appends while it is
    /// set (R-RUN-2). Derived data the audit holds to the last conclusion.
    pub sealed: bool,
    /// Its seal, if sealed.
    pub seal: Option<SealEntry>,
    /// The outcome index's entry.
    pub outcome: Option<Outcome>,
    /// The runs row names an outcome this build does not know (its text;
    /// `outcome` is then `None`): a newer build's conclusion, whose record
    /// this build then cannot read (build skew, R-VER-4), or a row forged
    /// behind the plane, when every record reads here (damage).
    pub unknown_outcome: Option<String>,
}

/// The log's bookkeeping for one tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogCounters {
    /// The next position the counter will give.
    pub next_position: u64,
    /// How many seals are stored. Less than `next_position` means holes.
    pub seal_count: u64,
}

impl LogCounters {
    /// Whether seals were removed behind the store's back (R-LOG-6, R-LOG-7).
    pub fn has_holes(&self) -> bool {
        self.seal_count != self.next_position
    }
}

/// The most bytes a stored checkpoint note can hold: its text and its
/// signature lines, each at most [`witness::note::MAX_NOTE_BYTES`]. A row
/// keeping more was written behind the plane; a store refuses it as damage
/// without reading it whole.
pub const MAX_STORED_NOTE_BYTES: usize = 2 * witness::note::MAX_NOTE_BYTES;

/// A checkpoint this plane signed for a tenant's log, kept in the store so
/// the plane never signs a tree that does not extend one it signed before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedTree {
    /// The tree signed.
    pub tree: Tree,
    /// The signed note as it went out.
    pub note: String,
}

/// Which checkpoint rows a store keeps ([`Store::newest_checkpoints`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointRows {
    /// The checkpoints this plane signed ([`Store::signed_checkpoints`]).
    Signed,
    /// The checkpoints a witness quorum cosigned ([`Store::cosigned_checkpoints`]).
    Cosigned,
}

/// A journal store. Every method is atomic; `append` is durable when it returns.
pub trait Store: Send + Sync {
    /// Appends one row in one transaction ([`crate::append::append_one`]
    /// over the backend's [`crate::append::AppendTxn`]), checking in the store itself that
    /// the run is not sealed ([`JournalError::Sealed`]) and that its head is
    /// `expected_head` ([`JournalError::Conflict`]: nothing is written, never
    /// a fork). A conclusion updates the outcome index; a sealing one also
    /// freezes the run, takes the next log position from the tenant's counter,
    /// stores the seal and the node hashes it completes. Returns the log
    /// position when it sealed.
    fn append(&self, request: AppendRequest) -> Result<Option<u64>, JournalError>;

    /// Reads a run.
    fn read_run(&self, tenant: &TenantId, run: &RunId) -> Result<RunRows, JournalError>;

    /// Reads a run as [`Store::read_run`] does, holding at most `max_bytes`
    /// of its rows ([`StoredRecord::held_bytes`], counted with [`RunBound`]):
    /// a run whose rows hold more is [`JournalError::RunTooLarge`], and the
    /// backend reads none of it past the row that passed the bound (a reader
    /// facing a store written behind the plane, such as the console, holds
    /// what it chose, not what the store holds). No default: reading whole
    /// and checking after is no bound.
    fn read_run_within(&self, tenant: &TenantId, run: &RunId, max_bytes: usize) -> Result<RunRows, JournalError>;

    /// The runs of a tenant, all or those whose indexed outcome is `outcome`, in id order.
    fn runs(&self, tenant: &TenantId, outcome: Option<Outcome>) -> Result<Vec<RunId>, JournalError>;

    /// The tenant's admission order, newest first: up to `limit` runs
    /// admitted strictly before `before` (in [`AdmittedRun`] order; `None`:
    /// from the newest), and, given `outcome`, only those whose indexed
    /// outcome it is. The order is a derived index, one row per run written
    /// in the transaction that stores its `RunAdmitted` and keyed by that
    /// record's `at` ([`admitted_at_of`]), so a listing costs O(log n +
    /// rows scanned), never O(runs): unfiltered, the rows scanned are the
    /// rows returned; filtered, the runs of other outcomes passed on the way.
    /// The audit holds the index to the verified chains in both directions
    /// (R-AUD-8).
    fn admissions(
        &self,
        tenant: &TenantId,
        before: Option<&AdmittedRun>,
        outcome: Option<Outcome>,
        limit: usize,
    ) -> Result<Vec<AdmittedRun>, JournalError>;

    /// Finds a run by its admission's idempotency key.
    fn run_by_idempotency_key(&self, tenant: &TenantId, key: &str) -> Result<Option<RunId>, JournalError>;

    /// The tenants with at least one run, in id order.
    fn tenants(&self) -> Result<Vec<TenantId>, JournalError>;

    /// The tenant's seals in position (key) order.
    fn seals(&self, tenant: &TenantId) -> Result<Vec<SealEntry>, JournalError>;

    /// The seal of one run.
    fn seal_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<SealEntry>, JournalError>;

    /// The log leaves (seals and heads leaves) at positions in `positions`,
    /// in position order. The default reads every seal (O(the log)); a
    /// backend answers from its key.
    fn seals_in(&self, tenant: &TenantId, positions: std::ops::Range<u64>) -> Result<Vec<SealEntry>, JournalError> {
        Ok(self.seals(tenant)?.into_iter().filter(|seal| positions.contains(&seal.position)).collect())
    }

    /// The log leaf (a seal, or a heads leaf) at `position`, if any. The
    /// default reads every seal (O(the log)); a backend answers from its key.
    fn seal_at(&self, tenant: &TenantId, position: u64) -> Result<Option<SealEntry>, JournalError> {
        Ok(self.seals(tenant)?.into_iter().find(|seal| seal.position == position))
    }

    /// The log counters.
    fn log_counters(&self, tenant: &TenantId) -> Result<LogCounters, JournalError>;

    /// Stored complete-subtree hashes of the tenant's log, by position (R-LOG-7).
    fn read_log_nodes(&self, tenant: &TenantId, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError>;

    /// The checkpoints this plane signed for the tenant's log, oldest first.
    fn signed_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError>;

    /// The newest checkpoint this plane signed: what signing extends. The
    /// default reads them all (O(checkpoints)); a backend reads its last key.
    fn last_signed_checkpoint(&self, tenant: &TenantId) -> Result<Option<SignedTree>, JournalError> {
        Ok(self.signed_checkpoints(tenant)?.pop())
    }

    /// Records a checkpoint the plane signed, durably, in one transaction
    /// that first checks that the last one recorded is `previous` (`None`:
    /// none yet); otherwise nothing is written and the answer is
    /// [`JournalError::CheckpointConflict`]. The caller proves, before it
    /// signs, that `signed` extends `previous`.
    fn record_signed_checkpoint(
        &self,
        tenant: &TenantId,
        previous: Option<Tree>,
        signed: SignedTree,
    ) -> Result<(), JournalError>;

    /// The cosigned checkpoints of the tenant's log (one per witnessing round
    /// that met its quorum: the note carries the log's signature and the
    /// witnesses' cosignatures), oldest first.
    fn cosigned_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError>;

    /// Records a met round's cosigned checkpoint, durably.
    fn record_cosigned_checkpoint(&self, tenant: &TenantId, cosigned: SignedTree) -> Result<(), JournalError>;

    /// The newest `limit` rows of [`Store::signed_checkpoints`] or
    /// [`Store::cosigned_checkpoints`] (in the order they were recorded),
    /// oldest first: what a page or an export reads, so its cost does not
    /// grow with the rows a plane has kept over the years (a row a witnessing
    /// round). The default reads them all (O(rows)); a backend reads its last
    /// keys (O(limit)).
    fn newest_checkpoints(
        &self,
        tenant: &TenantId,
        kind: CheckpointRows,
        limit: usize,
    ) -> Result<Vec<SignedTree>, JournalError> {
        let mut rows = match kind {
            CheckpointRows::Signed => self.signed_checkpoints(tenant)?,
            CheckpointRows::Cosigned => self.cosigned_checkpoints(tenant)?,
        };
        Ok(rows.split_off(rows.len().saturating_sub(limit)))
    }

    /// Appends heads leaves for the tenant's runs whose head moved since the
    /// last one, in one transaction ([`crate::append::append_heads`]): what
    /// the plane does before it signs a checkpoint, so the checkpoint covers
    /// open runs too. Returns the positions appended.
    fn append_heads(&self, tenant: &TenantId, origin: &witness::Origin) -> Result<Vec<u64>, JournalError>;

    /// The entries stored for the heads leaf at `position` (none if there is none).
    fn heads_entries(&self, tenant: &TenantId, position: u64) -> Result<Vec<crate::heads::HeadEntry>, JournalError>;

    /// The entries stored for the heads leaves at positions in `positions`,
    /// by position. The default reads the tenant's snapshot (O(the tenant));
    /// a backend answers from its key in one read.
    fn heads_entries_in(
        &self,
        tenant: &TenantId,
        positions: std::ops::Range<u64>,
    ) -> Result<HeadsByPosition, JournalError> {
        Ok(entries_in(&self.snapshot(tenant)?.heads_entries, positions))
    }

    /// The position of the newest heads leaf that holds an entry of `run`,
    /// if any. The default reads the tenant's snapshot (O(the tenant)); a
    /// backend answers from an index (redb's `heads_by_run`, PostgreSQL's
    /// `heads_entries_by_run`), so `prove` of an open run stays O(log n).
    fn newest_heads_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<u64>, JournalError> {
        Ok(crate::snapshot::newest_heads(&self.snapshot(tenant)?.heads_entries).remove(run))
    }

    /// The hash column of each record asked for by run and seq, in the order
    /// asked: `None` where the store holds no such record. What signing holds
    /// the log's newest leaves to (a leaf that names a record the store does
    /// not have was written behind the plane). The default reads each run
    /// named whole; a backend answers each from its key.
    fn stored_hashes(
        &self,
        tenant: &TenantId,
        records: &[(RunId, u64)],
    ) -> Result<Vec<Option<crate::ChainHash>>, JournalError> {
        let mut runs: std::collections::BTreeMap<&RunId, std::collections::BTreeMap<u64, crate::ChainHash>> =
            std::collections::BTreeMap::new();
        for (run, _) in records {
            if runs.contains_key(run) {
                continue;
            }
            let rows = match self.read_run(tenant, run) {
                Ok(stored) => stored.rows.iter().map(|row| (row.seq, row.hash)).collect(),
                Err(JournalError::NotFound { .. }) => Default::default(),
                Err(err) => return Err(err),
            };
            runs.insert(run, rows);
        }
        Ok(records.iter().map(|(run, seq)| runs.get(run).and_then(|rows| rows.get(seq)).copied()).collect())
    }

    /// Everything the store holds for `tenant`, read in one snapshot (one
    /// read transaction; on a server, in bulk): what the audit checks, so
    /// appends committing meanwhile are seen whole or not at all.
    fn snapshot(&self, tenant: &TenantId) -> Result<crate::snapshot::TenantSnapshot, JournalError>;

    /// The same snapshot as [`Store::snapshot`], handed to `sink` as it is
    /// read: every table but the records first, then each run's records, so
    /// a reader (the audit) verifies runs while later ones are still being
    /// read, and never holds the whole tenant in memory. The default splits
    /// [`Store::snapshot`]; a backend reading in bulk streams instead.
    fn snapshot_streamed(&self, tenant: &TenantId, sink: &mut dyn SnapshotSink) -> Result<(), JournalError> {
        crate::snapshot::stream_snapshot(self.snapshot(tenant)?, sink)
    }
}

/// Where [`Store::snapshot_streamed`] delivers one snapshot, in order.
pub trait SnapshotSink {
    /// Every table of the snapshot but the records (its runs hold no rows),
    /// before any run's records.
    fn tables(&mut self, tables: crate::snapshot::TenantSnapshot) -> Result<(), JournalError>;

    /// All the stored records of one run, in seq order; each run at most
    /// once, whether or not the runs table has a row for it.
    fn run_records(&mut self, run: RunId, rows: Vec<StoredRecord>) -> Result<(), JournalError>;

    /// Row `seq` of `run` could not be read as a record (`why`: its bytes
    /// do not decode, or its signature columns are not a pair); it comes
    /// with its run's records as a row with no bytes and no signature, which
    /// no chain hash covers. Said before that run's records are handed on,
    /// so the reader can name what is wrong with the row rather than only
    /// that its bytes do not hash. The default ignores it.
    fn unreadable_row(&mut self, run: &RunId, seq: u64, why: &JournalError) -> Result<(), JournalError> {
        let _ = (run, seq, why);
        Ok(())
    }

    /// The most of one run's rows this sink holds at once
    /// ([`StoredRecord::held_bytes`]); `None`, the default: no bound. A run
    /// past it comes as [`SnapshotSink::run_too_large`] instead of its records.
    fn run_bytes_bound(&self) -> Option<usize> {
        None
    }

    /// A run whose rows passed [`SnapshotSink::run_bytes_bound`]: what is
    /// kept of it instead of its records (each instead of
    /// [`SnapshotSink::run_records`], at most once a run). The default
    /// refuses it, for a sink that names no bound.
    fn run_too_large(&mut self, run: RunId, kept: crate::snapshot::RunTooLarge) -> Result<(), JournalError> {
        Err(JournalError::Io(crate::error::StorageError::message(format!(
            "run {run} holds {} records, {} bytes: more than this reader holds at once",
            kept.records, kept.bytes
        ))))
    }
}

/// What a bounded read ([`Store::read_run_within`]) has held of one run's
/// rows: each row is counted as it is read, and the read stops at the first
/// that takes it past the bound.
#[derive(Debug)]
pub struct RunBound<'a> {
    tenant: &'a TenantId,
    run: &'a RunId,
    max_bytes: usize,
    held: usize,
}

impl<'a> RunBound<'a> {
    /// Nothing held yet of `run`, at most `max_bytes` to hold.
    pub fn new(tenant: &'a TenantId, run: &'a RunId, max_bytes: usize) -> Self {
        Self { tenant, run, max_bytes, held: 0 }
    }

    /// Counts `row`: [`JournalError::RunTooLarge`] once the rows counted
    /// hold more than the bound (the caller stops reading).
    pub fn hold(&mut self, row: &StoredRecord) -> Result<(), JournalError> {
        self.held = self.held.saturating_add(row.held_bytes());
        if self.held > self.max_bytes {
            return Err(JournalError::RunTooLarge {
                tenant: self.tenant.clone(),
                run: self.run.clone(),
                bound: self.max_bytes,
                held: self.held,
            });
        }
        Ok(())
    }
}

/// The rows of `rows` a bounded read holds (a copy of each, in order),
/// stopping at the first past `max_bytes`: how a store that keeps its rows
/// in memory answers [`Store::read_run_within`].
pub fn rows_within(
    tenant: &TenantId,
    run: &RunId,
    rows: &[StoredRecord],
    max_bytes: usize,
) -> Result<Vec<StoredRecord>, JournalError> {
    let mut bound = RunBound::new(tenant, run, max_bytes);
    let mut held = Vec::new();
    for row in rows {
        bound.hold(row)?;
        held.push(row.clone());
    }
    Ok(held)
}

/// Keys the idempotency index by `RunAdmitted`'s key: backends call this
/// when they store a seq-1 row.
pub fn idempotency_key_of(row: &StoredRecord) -> Option<String> {
    if row.seq != 1 || row.kind != "RunAdmitted" {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(&row.bytes).ok()?;
    value.get("body")?.get("idempotency_key")?.as_str().map(str::to_owned)
}

/// One row of a tenant's admission order ([`Store::admissions`]): when the
/// run was admitted, as its `RunAdmitted` record says, and the run. Ordered
/// by instant, then run id (two runs admitted in one millisecond).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AdmittedRun {
    /// The `at` of the run's `RunAdmitted`.
    pub at: At,
    /// The run.
    pub run: RunId,
}

impl AdmittedRun {
    /// This row as a page cursor, `MILLIS:RUN` (what `agentplane runs
    /// --before` and the console's `before=` take back).
    pub fn cursor(&self) -> String {
        format!("{}:{}", self.at.unix_millis(), self.run)
    }

    /// A cursor [`AdmittedRun::cursor`] wrote; `None` for any other text.
    pub fn from_cursor(text: &str) -> Option<Self> {
        let (millis, run) = text.split_once(':')?;
        if millis.is_empty() || millis.len() > 19 || !millis.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let at = At::from_unix_millis(millis.parse::<i64>().ok()?).ok()?;
        Some(Self { at, run: RunId::new(run).ok()? })
    }
}

/// Keys the admission order by `RunAdmitted`'s `at`: backends call this
/// when they store a seq-1 row, as they call [`idempotency_key_of`].
pub fn admitted_at_of(row: &StoredRecord) -> Option<At> {
    if row.seq != 1 || row.kind != "RunAdmitted" {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(&row.bytes).ok()?;
    At::parse(value.get("at")?.as_str()?).ok()
}

/// The admissions of `rows` (any order) newest first, as
/// [`Store::admissions`] answers: a reference for backends that hold their
/// rows in memory.
pub fn page_of_admissions(
    rows: impl Iterator<Item = AdmittedRun>,
    before: Option<&AdmittedRun>,
    limit: usize,
) -> Vec<AdmittedRun> {
    let mut rows: Vec<AdmittedRun> = rows.filter(|row| before.is_none_or(|before| row < before)).collect();
    rows.sort_by(|a, b| b.cmp(a));
    rows.truncate(limit);
    rows
}

/// The compare of [`Store::record_signed_checkpoint`]: the last checkpoint
/// recorded must be the one the caller extended, as every backend checks
/// inside its transaction.
pub fn check_last_signed(tenant: &TenantId, last: Option<Tree>, previous: Option<Tree>) -> Result<(), JournalError> {
    if last == previous {
        return Ok(());
    }
    Err(JournalError::CheckpointConflict {
        tenant: tenant.clone(),
        expected: previous.map(|tree| tree.size),
        found: last.map(|tree| tree.size),
    })
}

/// A chain hash a backend read back for `run` at `seq`: bytes that are not
/// 32 long are a malformed row (tamper), and `what` names the value.
pub fn stored_chain_hash(run: &RunId, seq: u64, bytes: &[u8], what: &str) -> Result<ChainHash, JournalError> {
    ChainHash::from_slice(bytes).ok_or_else(|| JournalError::Tamper {
        run: run.clone(),
        seq,
        kind: crate::error::TamperKind::MalformedRow,
        detail: Some(format!("{what} is not 32 bytes")),
    })
}

/// A stored row's signature columns as a [`KeySignature`](crate::signature::KeySignature): both or neither.
/// One without the other is a malformed row, never an unsigned record (a
/// lenient reader accepts unsigned records, so dropping a signature's key id
/// must not make a signed record pass as one).
pub fn stored_signature(
    run: &RunId,
    seq: u64,
    key_id: Option<String>,
    signature: Option<Vec<u8>>,
) -> Result<Option<crate::signature::KeySignature>, JournalError> {
    match (key_id, signature) {
        (Some(key_id), Some(signature)) => Ok(Some(crate::signature::KeySignature { key_id, signature })),
        (None, None) => Ok(None),
        (key_id, _) => Err(JournalError::Tamper {
            run: run.clone(),
            seq,
            kind: crate::error::TamperKind::MalformedRow,
            detail: Some(format!(
                "the row holds {} without {}",
                if key_id.is_some() { "a signing key id" } else { "a signature" },
                if key_id.is_some() { "its signature" } else { "the key id that made it" }
            )),
        }),
    }
}
