#![doc = include_str!("../README.md")]

use std::path::Path;
use std::sync::Arc;

use journal_core::group_commit::{BatchReplies, GroupCommit};
use journal_core::store::{SignedTree, check_append, idempotency_key_of, nodes_for_new_leaf, stored_chain_hash};
use journal_core::{
    AppendRequest, ExpectedHead, JournalError, KeySignature, LogCounters, Outcome, RunId, RunRows, SealEntry,
    StorageError, Store, StoredRecord, TenantId,
};
use redb::{
    Database, ReadTransaction, ReadableDatabase as _, ReadableTable, ReadableTableMetadata as _, TableDefinition,
    WriteTransaction,
};
use tlog::{NodeHash, NodeId, RootHash, Tree};

/// (tenant, run, seq) -> (kind, effect_key, prev_hash, hash, bytes, signature key id, signature)
type RecordValue<'a> = (&'a str, Option<&'a str>, &'a [u8], &'a [u8], &'a [u8], Option<&'a str>, Option<&'a [u8]>);
const RECORDS: TableDefinition<(&str, &str, u64), RecordValue> = TableDefinition::new("records");
/// (tenant, run) -> (head seq, head hash, sealed, outcome)
type RunValue<'a> = (u64, &'a [u8], bool, Option<&'a str>);
const RUNS: TableDefinition<(&str, &str), RunValue> = TableDefinition::new("runs");
/// (tenant, idempotency key) -> run
const IDEMPOTENCY: TableDefinition<(&str, &str), &str> = TableDefinition::new("idempotency");
/// (tenant, outcome, run) -> ()
const OUTCOMES: TableDefinition<(&str, &str, &str), ()> = TableDefinition::new("outcome_index");
/// One table per tenant, `seals/<tenant>`: position -> (run, leaf bytes). Its
/// length is the tenant's seal count in O(1), so holes are noticed cheaply.
fn seals_table(tenant: &str) -> String {
    format!("seals/{tenant}")
}

fn seals_def(name: &str) -> TableDefinition<'_, u64, (&'static str, &'static [u8])> {
    TableDefinition::new(name)
}
/// (tenant, run) -> position
const SEAL_BY_RUN: TableDefinition<(&str, &str), u64> = TableDefinition::new("seal_by_run");
/// tenant -> next log position (the counter advanced inside the sealing transaction; R-LOG-5)
const LOG_COUNTER: TableDefinition<&str, u64> = TableDefinition::new("log_counter");
/// (tenant, level, index) -> node hash (R-LOG-7)
const NODES: TableDefinition<(&str, u8, u64), &[u8]> = TableDefinition::new("log_nodes");
/// (tenant, n) -> (size, root, note): the checkpoints this plane signed, in order.
const SIGNED: TableDefinition<(&str, u64), (u64, &[u8], &str)> = TableDefinition::new("signed_checkpoints");
/// (tenant, n) -> (size, root, cosigned note): each witnessing round that met its quorum.
const COSIGNED: TableDefinition<(&str, u64), (u64, &[u8], &str)> = TableDefinition::new("cosigned_checkpoints");

/// The most appends one group commit carries.
pub const MAX_BATCH: usize = 512;

/// A redb failure, kept as the error's source.
fn io(err: impl Into<redb::Error>) -> JournalError {
    JournalError::Io(StorageError::new("redb", err.into()))
}

/// A failure of this backend's own machinery (its group commit).
fn machinery(what: &str) -> JournalError {
    JournalError::Io(StorageError::message(what))
}

/// Stored data of `tenant` that is not what this backend writes.
fn damaged(tenant: &str, detail: String) -> JournalError {
    match TenantId::new(tenant) {
        Ok(tenant) => JournalError::StoreDamage { tenant, detail },
        Err(_) => {
            JournalError::Io(StorageError::message(format!("a stored tenant id {tenant:?} is invalid: {detail}")))
        }
    }
}

fn open_error(path: &Path, err: impl Into<redb::Error>) -> JournalError {
    JournalError::Io(StorageError::new(path.display().to_string(), err.into()))
}

/// The file, open for writing (with its group commit) or only for reading.
enum Db {
    Writable(Arc<Database>),
    ReadOnly(redb::ReadOnlyDatabase),
}

impl Db {
    fn begin_read(&self) -> Result<ReadTransaction, redb::TransactionError> {
        match self {
            Self::Writable(db) => db.begin_read(),
            Self::ReadOnly(db) => db.begin_read(),
        }
    }
}

/// How [`RedbStore::open_read_only_or_repaired_copy`] opened a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOnlyOpening {
    /// The file itself, read-only.
    Direct,
    /// The file needed a repair (it was left by a crash): a private copy was
    /// repaired and is read; the original is untouched. Opening it once for
    /// writing repairs it in place.
    RepairedCopy,
}

/// A journal store in one redb file.
pub struct RedbStore {
    /// The appends waiting for a commit; the leading appender writes them.
    commit: GroupCommit,
    db: Db,
    /// The directory of a temporary store or a repaired private copy,
    /// removed when the store is dropped.
    _temporary: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore").finish_non_exhaustive()
    }
}

impl RedbStore {
    /// Opens the store at `path`, creating it if there is no file there.
    pub fn create(path: &Path) -> Result<Self, JournalError> {
        let db = Database::create(path).map_err(|err| open_error(path, err))?;
        Self::start(db)
    }

    /// Opens an existing store; refuses a missing file.
    pub fn open(path: &Path) -> Result<Self, JournalError> {
        let db = Database::open(path).map_err(|err| open_error(path, err))?;
        Self::start(db)
    }

    /// Opens an existing store for reading only: the file is never written,
    /// whatever is in it, and appends are refused.
    pub fn open_read_only(path: &Path) -> Result<Self, JournalError> {
        let db = redb::ReadOnlyDatabase::open(path).map_err(|err| open_error(path, err))?;
        Ok(Self::read_only(db, None))
    }

    /// Opens for reading whatever state the file is in. A file left by a
    /// crash needs a repair, which a read-only open cannot make (redb answers
    /// "repair aborted"): then a private copy is repaired in a temporary
    /// directory and read instead, and [`ReadOnlyOpening::RepairedCopy`] says
    /// so. The original file is never written.
    pub fn open_read_only_or_repaired_copy(path: &Path) -> Result<(Self, ReadOnlyOpening), JournalError> {
        match redb::ReadOnlyDatabase::open(path) {
            Ok(db) => Ok((Self::read_only(db, None), ReadOnlyOpening::Direct)),
            Err(redb::DatabaseError::RepairAborted) => {
                let copy_error = |err: std::io::Error| {
                    JournalError::Io(StorageError::new(format!("repairing a private copy of {}", path.display()), err))
                };
                let dir = tempfile::tempdir().map_err(copy_error)?;
                let copy = dir.path().join("repaired.redb");
                std::fs::copy(path, &copy).map_err(copy_error)?;
                drop(Database::open(&copy).map_err(|err| open_error(&copy, err))?);
                let db = redb::ReadOnlyDatabase::open(&copy).map_err(|err| open_error(&copy, err))?;
                Ok((Self::read_only(db, Some(dir)), ReadOnlyOpening::RepairedCopy))
            }
            Err(err) => Err(open_error(path, err)),
        }
    }

    fn read_only(db: redb::ReadOnlyDatabase, temporary: Option<tempfile::TempDir>) -> Self {
        Self {
            commit: GroupCommit::refusing("the store is open read-only"),
            db: Db::ReadOnly(db),
            _temporary: temporary,
        }
    }

    fn start(db: Database) -> Result<Self, JournalError> {
        let txn = db.begin_write().map_err(io)?;
        txn.open_table(RECORDS).map_err(io)?;
        txn.open_table(RUNS).map_err(io)?;
        txn.open_table(IDEMPOTENCY).map_err(io)?;
        txn.open_table(OUTCOMES).map_err(io)?;
        txn.open_table(SEAL_BY_RUN).map_err(io)?;
        txn.open_table(LOG_COUNTER).map_err(io)?;
        txn.open_table(NODES).map_err(io)?;
        txn.open_table(SIGNED).map_err(io)?;
        txn.open_table(COSIGNED).map_err(io)?;
        txn.commit().map_err(io)?;
        let db = Arc::new(db);
        let writer = Arc::clone(&db);
        let commit = GroupCommit::start(MAX_BATCH, move |batch| commit_batch(&writer, batch));
        Ok(Self { commit, db: Db::Writable(db), _temporary: None })
    }

    /// Compacts the store file at `path` in place: copy-on-write leaves
    /// freed pages behind, which redb reuses but never returns to the file
    /// system on its own. Needs the file to itself (no open store on it;
    /// redb's lock refuses otherwise). Every record stays as it was: only
    /// free space is given back. Returns the file's size before and after.
    pub fn compact(path: &Path) -> Result<(u64, u64), JournalError> {
        let size = |path: &Path| {
            std::fs::metadata(path)
                .map(|meta| meta.len())
                .map_err(|err| JournalError::Io(StorageError::new(path.display().to_string(), err)))
        };
        let before = size(path)?;
        let mut db = Database::open(path).map_err(|err| open_error(path, err))?;
        // compact() returns false when it found nothing more to move; a
        // second pass can free what the first one moved.
        while db.compact().map_err(|err| open_error(path, err))? {}
        drop(db);
        Ok((before, size(path)?))
    }

    /// A store in a fresh temporary directory, removed on drop (for tests).
    #[cfg(feature = "testkit")]
    pub fn temporary() -> Result<Self, JournalError> {
        let dir = tempfile::tempdir()
            .map_err(|err| JournalError::Io(StorageError::new("creating a temporary directory", err)))?;
        let mut store = Self::create(&dir.path().join("journal.redb"))?;
        store._temporary = Some(dir);
        Ok(store)
    }

    /// How many write transactions appends have committed so far: fewer
    /// than the appends when concurrent appenders share group commits.
    pub fn commits(&self) -> u64 {
        self.commit.commits()
    }

    fn read_txn(&self) -> Result<ReadTransaction, JournalError> {
        self.db.begin_read().map_err(io)
    }

    /// A tenant's checkpoints kept in `definition`, oldest first.
    fn read_trees(
        &self,
        definition: TableDefinition<(&str, u64), (u64, &[u8], &str)>,
        tenant: &TenantId,
    ) -> Result<Vec<SignedTree>, JournalError> {
        let txn = self.read_txn()?;
        let table = match txn.open_table(definition) {
            Ok(table) => table,
            // A file made before the table existed, opened read-only.
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(err) => return Err(io(err)),
        };
        let t = tenant.as_str();
        let mut out = Vec::new();
        for entry in table.range((t, 0)..=(t, u64::MAX)).map_err(io)? {
            let (_, value) = entry.map_err(io)?;
            out.push(signed_tree(t, value.value())?);
        }
        Ok(out)
    }
}

/// Writes one group commit's appends in one transaction.
fn commit_batch(db: &Database, batch: &[&AppendRequest]) -> BatchReplies {
    let fail_all = |err: JournalError| batch.iter().map(|_| Err(err.clone())).collect();
    let txn = match db.begin_write() {
        Ok(txn) => txn,
        Err(err) => return fail_all(io(err)),
    };
    let mut replies = Vec::with_capacity(batch.len());
    {
        // The batch's tables are opened once, not once per append.
        let mut tables = match Tables::open(&txn) {
            Ok(tables) => tables,
            Err(err) => return fail_all(err),
        };
        for request in batch {
            match apply(&txn, &mut tables, request) {
                Ok(position) => replies.push(Ok(position)),
                // Refused before anything was written: only this append fails.
                Err(Applied::Refused(err)) => replies.push(Err(err)),
                // A write failed half way: nothing of this batch may commit.
                Err(Applied::Broken(err)) => {
                    drop(tables);
                    let _ = txn.abort();
                    return fail_all(err);
                }
            }
        }
    }
    match txn.commit() {
        Ok(()) => replies,
        Err(err) => fail_all(io(err)),
    }
}

/// The tables every append touches, open for one batch.
struct Tables<'txn> {
    records: redb::Table<'txn, (&'static str, &'static str, u64), RecordValue<'static>>,
    runs: redb::Table<'txn, (&'static str, &'static str), RunValue<'static>>,
    idempotency: redb::Table<'txn, (&'static str, &'static str), &'static str>,
    outcomes: redb::Table<'txn, (&'static str, &'static str, &'static str), ()>,
    seal_by_run: redb::Table<'txn, (&'static str, &'static str), u64>,
    counter: redb::Table<'txn, &'static str, u64>,
    nodes: redb::Table<'txn, (&'static str, u8, u64), &'static [u8]>,
}

impl<'txn> Tables<'txn> {
    fn open(txn: &'txn WriteTransaction) -> Result<Self, JournalError> {
        Ok(Self {
            records: txn.open_table(RECORDS).map_err(io)?,
            runs: txn.open_table(RUNS).map_err(io)?,
            idempotency: txn.open_table(IDEMPOTENCY).map_err(io)?,
            outcomes: txn.open_table(OUTCOMES).map_err(io)?,
            seal_by_run: txn.open_table(SEAL_BY_RUN).map_err(io)?,
            counter: txn.open_table(LOG_COUNTER).map_err(io)?,
            nodes: txn.open_table(NODES).map_err(io)?,
        })
    }
}

enum Applied {
    Refused(JournalError),
    Broken(JournalError),
}

fn head_of(run: &RunId, value: RunValue<'_>) -> Result<(ExpectedHead, bool, Option<Outcome>), JournalError> {
    let (seq, hash, sealed, outcome) = value;
    let hash = stored_chain_hash(run, seq, hash, "the runs table's head hash")?;
    Ok((ExpectedHead { seq, hash }, sealed, outcome.and_then(Outcome::parse)))
}

/// Validates then writes one append inside the batch's transaction.
fn apply(txn: &WriteTransaction, tables: &mut Tables<'_>, request: &AppendRequest) -> Result<Option<u64>, Applied> {
    let refused = Applied::Refused;
    let broken = |err: redb::Error| Applied::Broken(io(err));
    let tenant = request.tenant.as_str();
    let run = request.run.as_str();
    let current = match tables.runs.get((tenant, run)).map_err(|e| refused(io(e)))? {
        Some(value) => Some(head_of(&request.run, value.value()).map_err(refused)?),
        None => None,
    };
    let (head, sealed, old_outcome) = current.map_or((None, false, None), |(h, s, o)| (Some(h), s, o));
    check_append(request, head, sealed).map_err(refused)?;

    // Everything the seal needs is computed before the first write.
    let seal = request.conclusion.as_ref().and_then(|c| c.seal.as_ref());
    let sealing = match seal {
        Some(seal) => {
            let position = tables.counter.get(tenant).map_err(|e| refused(io(e)))?.map_or(0, |v| v.value());
            let nodes = &tables.nodes;
            let read = |ids: &[NodeId]| -> Result<Vec<NodeHash>, JournalError> { read_nodes(nodes, tenant, ids) };
            let new_nodes = nodes_for_new_leaf(&request.tenant, &read, position, seal.leaf_hash()).map_err(refused)?;
            Some((position, seal.to_bytes(), new_nodes))
        }
        None => None,
    };

    let row = &request.row;
    tables.records.insert((tenant, run, row.seq), record_value(row)).map_err(|e| broken(e.into()))?;
    if let Some(key) = idempotency_key_of(row) {
        tables.idempotency.insert((tenant, key.as_str()), run).map_err(|e| broken(e.into()))?;
    }
    let outcome = request.conclusion.as_ref().map(|c| c.outcome).or(old_outcome);
    if let Some(conclusion) = &request.conclusion {
        if let Some(old) = old_outcome {
            tables.outcomes.remove((tenant, old.as_str(), run)).map_err(|e| broken(e.into()))?;
        }
        tables.outcomes.insert((tenant, conclusion.outcome.as_str(), run), ()).map_err(|e| broken(e.into()))?;
    }
    let mut position = None;
    if let Some((next, leaf_bytes, new_nodes)) = sealing {
        let name = seals_table(tenant);
        let mut seals = txn.open_table(seals_def(&name)).map_err(|e| broken(e.into()))?;
        seals.insert(next, (run, leaf_bytes.as_slice())).map_err(|e| broken(e.into()))?;
        tables.seal_by_run.insert((tenant, run), next).map_err(|e| broken(e.into()))?;
        tables.counter.insert(tenant, next + 1).map_err(|e| broken(e.into()))?;
        for (id, hash) in new_nodes {
            tables
                .nodes
                .insert((tenant, id.level, id.index), hash.as_bytes().as_slice())
                .map_err(|e| broken(e.into()))?;
        }
        position = Some(next);
    }
    let sealed_now = position.is_some();
    tables
        .runs
        .insert((tenant, run), (row.seq, row.hash.as_bytes().as_slice(), sealed_now, outcome.map(|o| o.as_str())))
        .map_err(|e| broken(e.into()))?;
    Ok(position)
}

fn read_nodes(
    table: &impl ReadableTable<(&'static str, u8, u64), &'static [u8]>,
    tenant: &str,
    ids: &[NodeId],
) -> Result<Vec<NodeHash>, JournalError> {
    ids.iter()
        .map(|id| {
            let value = table.get((tenant, id.level, id.index)).map_err(io)?;
            let bytes = value.ok_or_else(|| damaged(tenant, format!("log node {id:?} is missing")))?;
            NodeHash::try_from(bytes.value()).map_err(|_| damaged(tenant, format!("log node {id:?} is not 32 bytes")))
        })
        .collect()
}

/// A row as the records table holds it; `row_of` reads it back.
fn record_value(row: &StoredRecord) -> RecordValue<'_> {
    let signature = row.signature.as_ref();
    (
        row.kind.as_str(),
        row.effect_key.as_deref(),
        row.prev_hash.as_bytes().as_slice(),
        row.hash.as_bytes().as_slice(),
        row.bytes.as_slice(),
        signature.map(|s| s.key_id.as_str()),
        signature.map(|s| s.signature.as_slice()),
    )
}

fn row_of(run: &RunId, seq: u64, value: RecordValue<'_>) -> Result<StoredRecord, JournalError> {
    let (kind, effect_key, prev, hash, bytes, key_id, signature) = value;
    let hash_of = |b: &[u8]| stored_chain_hash(run, seq, b, "a stored record hash");
    Ok(StoredRecord {
        seq,
        kind: kind.to_owned(),
        effect_key: effect_key.map(str::to_owned),
        prev_hash: hash_of(prev)?,
        hash: hash_of(hash)?,
        bytes: bytes.to_vec(),
        signature: match (key_id, signature) {
            (Some(key_id), Some(signature)) => {
                Some(KeySignature { key_id: key_id.to_owned(), signature: signature.to_vec() })
            }
            _ => None,
        },
    })
}

fn run_id(tenant: &TenantId, text: &str) -> Result<RunId, JournalError> {
    RunId::new(text).map_err(|_| damaged(tenant.as_str(), format!("a stored run id {text:?} is invalid")))
}

impl Store for RedbStore {
    fn append(&self, request: AppendRequest) -> Result<Option<u64>, JournalError> {
        self.commit.append(request)
    }

    fn read_run(&self, tenant: &TenantId, run: &RunId) -> Result<RunRows, JournalError> {
        let txn = self.read_txn()?;
        let runs = txn.open_table(RUNS).map_err(io)?;
        let (head, sealed, outcome) = match runs.get((tenant.as_str(), run.as_str())).map_err(io)? {
            Some(value) => head_of(run, value.value())?,
            None => return Err(JournalError::NotFound { tenant: tenant.clone(), run: run.clone() }),
        };
        let records = txn.open_table(RECORDS).map_err(io)?;
        let mut rows = Vec::new();
        for entry in
            records.range((tenant.as_str(), run.as_str(), 0)..=(tenant.as_str(), run.as_str(), u64::MAX)).map_err(io)?
        {
            let (key, value) = entry.map_err(io)?;
            rows.push(row_of(run, key.value().2, value.value())?);
        }
        let seal = seal_of(&txn, tenant, run)?;
        Ok(RunRows { rows, head: Some(head), sealed, seal, outcome })
    }

    fn runs(&self, tenant: &TenantId, outcome: Option<Outcome>) -> Result<Vec<RunId>, JournalError> {
        let txn = self.read_txn()?;
        let t = tenant.as_str();
        let mut out = Vec::new();
        match outcome {
            Some(outcome) => {
                let index = txn.open_table(OUTCOMES).map_err(io)?;
                let o = outcome.as_str();
                for entry in index.range((t, o, "")..).map_err(io)? {
                    let (key, _) = entry.map_err(io)?;
                    let (kt, ko, run) = key.value();
                    if kt != t || ko != o {
                        break;
                    }
                    out.push(run_id(tenant, run)?);
                }
            }
            None => {
                let runs = txn.open_table(RUNS).map_err(io)?;
                for entry in runs.range((t, "")..).map_err(io)? {
                    let (key, _) = entry.map_err(io)?;
                    let (kt, run) = key.value();
                    if kt != t {
                        break;
                    }
                    out.push(run_id(tenant, run)?);
                }
            }
        }
        Ok(out)
    }

    fn run_by_idempotency_key(&self, tenant: &TenantId, key: &str) -> Result<Option<RunId>, JournalError> {
        let txn = self.read_txn()?;
        let table = txn.open_table(IDEMPOTENCY).map_err(io)?;
        table.get((tenant.as_str(), key)).map_err(io)?.map(|v| run_id(tenant, v.value())).transpose()
    }

    fn tenants(&self) -> Result<Vec<TenantId>, JournalError> {
        let txn = self.read_txn()?;
        let runs = txn.open_table(RUNS).map_err(io)?;
        let mut out: Vec<TenantId> = Vec::new();
        for entry in runs.iter().map_err(io)? {
            let (key, _) = entry.map_err(io)?;
            let tenant = key.value().0;
            if out.last().is_none_or(|last| last.as_str() != tenant) {
                out.push(TenantId::new(tenant).map_err(|_| damaged(tenant, "a stored tenant id is invalid".into()))?);
            }
        }
        Ok(out)
    }

    fn seals(&self, tenant: &TenantId) -> Result<Vec<SealEntry>, JournalError> {
        let txn = self.read_txn()?;
        let name = seals_table(tenant.as_str());
        let seals = match txn.open_table(seals_def(&name)) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(err) => return Err(io(err)),
        };
        let mut out = Vec::new();
        for entry in seals.iter().map_err(io)? {
            let (key, value) = entry.map_err(io)?;
            let (run, leaf) = value.value();
            out.push(SealEntry { position: key.value(), run: run_id(tenant, run)?, leaf_bytes: leaf.to_vec() });
        }
        Ok(out)
    }

    fn seal_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<SealEntry>, JournalError> {
        seal_of(&self.read_txn()?, tenant, run)
    }

    fn log_counters(&self, tenant: &TenantId) -> Result<LogCounters, JournalError> {
        let txn = self.read_txn()?;
        let counter = txn.open_table(LOG_COUNTER).map_err(io)?;
        let next_position = counter.get(tenant.as_str()).map_err(io)?.map_or(0, |v| v.value());
        let name = seals_table(tenant.as_str());
        let seal_count = match txn.open_table(seals_def(&name)) {
            Ok(table) => table.len().map_err(io)?,
            Err(redb::TableError::TableDoesNotExist(_)) => 0,
            Err(err) => return Err(io(err)),
        };
        Ok(LogCounters { next_position, seal_count })
    }

    fn read_log_nodes(&self, tenant: &TenantId, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
        let txn = self.read_txn()?;
        let nodes = txn.open_table(NODES).map_err(io)?;
        read_nodes(&nodes, tenant.as_str(), ids)
    }

    fn signed_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        self.read_trees(SIGNED, tenant)
    }

    fn cosigned_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        self.read_trees(COSIGNED, tenant)
    }

    fn record_cosigned_checkpoint(&self, tenant: &TenantId, cosigned: SignedTree) -> Result<(), JournalError> {
        let Db::Writable(db) = &self.db else {
            return Err(machinery("the store is open read-only: it cannot record a cosigned checkpoint"));
        };
        let t = tenant.as_str();
        let txn = db.begin_write().map_err(io)?;
        {
            let mut table = txn.open_table(COSIGNED).map_err(io)?;
            let next = table
                .range((t, 0)..=(t, u64::MAX))
                .map_err(io)?
                .next_back()
                .transpose()
                .map_err(io)?
                .map_or(0, |(key, _)| key.value().1 + 1);
            table
                .insert(
                    (t, next),
                    (cosigned.tree.size, cosigned.tree.root.as_bytes().as_slice(), cosigned.note.as_str()),
                )
                .map_err(io)?;
        }
        txn.commit().map_err(io)
    }

    fn record_signed_checkpoint(
        &self,
        tenant: &TenantId,
        previous: Option<Tree>,
        signed: SignedTree,
    ) -> Result<(), JournalError> {
        let Db::Writable(db) = &self.db else {
            return Err(machinery("the store is open read-only: it cannot record a signed checkpoint"));
        };
        let t = tenant.as_str();
        let txn = db.begin_write().map_err(io)?;
        {
            let mut table = txn.open_table(SIGNED).map_err(io)?;
            let (next, last_tree) = {
                let last = table.range((t, 0)..=(t, u64::MAX)).map_err(io)?.next_back().transpose().map_err(io)?;
                match last {
                    Some((key, value)) => (key.value().1 + 1, Some(signed_tree(t, value.value())?.tree)),
                    None => (0, None),
                }
            };
            journal_core::store::check_last_signed(tenant, last_tree, previous)?;
            table
                .insert((t, next), (signed.tree.size, signed.tree.root.as_bytes().as_slice(), signed.note.as_str()))
                .map_err(io)?;
        }
        txn.commit().map_err(io)
    }
}

fn signed_tree(tenant: &str, (size, root, note): (u64, &[u8], &str)) -> Result<SignedTree, JournalError> {
    let root = RootHash::try_from(root)
        .map_err(|_| damaged(tenant, format!("a signed checkpoint's root at size {size} is not 32 bytes")))?;
    Ok(SignedTree { tree: Tree::new(size, root), note: note.to_owned() })
}

fn seal_of(txn: &ReadTransaction, tenant: &TenantId, run: &RunId) -> Result<Option<SealEntry>, JournalError> {
    let by_run = txn.open_table(SEAL_BY_RUN).map_err(io)?;
    let Some(position) = by_run.get((tenant.as_str(), run.as_str())).map_err(io)?.map(|v| v.value()) else {
        return Ok(None);
    };
    let name = seals_table(tenant.as_str());
    let seals = match txn.open_table(seals_def(&name)) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(err) => return Err(io(err)),
    };
    let Some(value) = seals.get(position).map_err(io)? else {
        return Ok(None);
    };
    let (stored_run, leaf) = value.value();
    Ok(Some(SealEntry { position, run: run_id(tenant, stored_run)?, leaf_bytes: leaf.to_vec() }))
}

#[cfg(feature = "testkit")]
impl RedbStore {
    fn writable(&self) -> Result<&Database, Box<dyn std::error::Error>> {
        match &self.db {
            Db::Writable(db) => Ok(db),
            Db::ReadOnly(_) => Err("read-only store".into()),
        }
    }
}

#[cfg(feature = "testkit")]
impl RedbStore {
    /// Runs one write transaction straight on the file, behind the store's
    /// back; a failure is logged (tamper helpers have no caller to tell).
    fn tamper(&self, what: &str, write: impl FnOnce(&WriteTransaction) -> Result<(), Box<dyn std::error::Error>>) {
        let result = (|| -> Result<(), Box<dyn std::error::Error>> {
            let txn = self.writable()?.begin_write()?;
            write(&txn)?;
            txn.commit()?;
            Ok(())
        })();
        if let Err(err) = result {
            tracing::error!("tamper {what} failed: {err}");
        }
    }

    fn update_run(
        &self,
        tenant: &TenantId,
        run: &RunId,
        change: impl FnOnce(&mut (u64, Vec<u8>, bool, Option<String>)),
    ) {
        self.tamper("runs row", |txn| {
            let mut runs = txn.open_table(RUNS)?;
            let key = (tenant.as_str(), run.as_str());
            let current = runs.get(key)?.map(|v| {
                let (seq, hash, sealed, outcome) = v.value();
                (seq, hash.to_vec(), sealed, outcome.map(str::to_owned))
            });
            if let Some(mut row) = current {
                change(&mut row);
                runs.insert(key, (row.0, row.1.as_slice(), row.2, row.3.as_deref()))?;
            }
            Ok(())
        });
    }
}

#[cfg(feature = "testkit")]
impl journal_core::testkit::TamperAccess for RedbStore {
    fn overwrite_record_bytes(&self, tenant: &TenantId, run: &RunId, seq: u64, bytes: Vec<u8>) {
        let write = || -> Result<(), Box<dyn std::error::Error>> {
            let txn = self.writable()?.begin_write()?;
            {
                let mut records = txn.open_table(RECORDS)?;
                let key = (tenant.as_str(), run.as_str(), seq);
                let old = records.get(key)?.map(|v| {
                    let (kind, ek, prev, hash, _, kid, sig) = v.value();
                    (
                        kind.to_owned(),
                        ek.map(str::to_owned),
                        prev.to_vec(),
                        hash.to_vec(),
                        kid.map(str::to_owned),
                        sig.map(<[u8]>::to_vec),
                    )
                });
                if let Some((kind, ek, prev, hash, kid, sig)) = old {
                    records.insert(
                        key,
                        (
                            kind.as_str(),
                            ek.as_deref(),
                            prev.as_slice(),
                            hash.as_slice(),
                            bytes.as_slice(),
                            kid.as_deref(),
                            sig.as_deref(),
                        ),
                    )?;
                }
            }
            txn.commit()?;
            Ok(())
        };
        if let Err(err) = write() {
            tracing::error!("tamper write failed: {err}");
        }
    }

    fn overwrite_row(&self, tenant: &TenantId, run: &RunId, row: StoredRecord) {
        self.tamper("overwrite row", |txn| {
            txn.open_table(RECORDS)?.insert((tenant.as_str(), run.as_str(), row.seq), record_value(&row))?;
            Ok(())
        });
    }

    fn set_outcome_index(&self, tenant: &TenantId, run: &RunId, outcome: Option<Outcome>) {
        self.tamper("outcome index", |txn| {
            let mut index = txn.open_table(OUTCOMES)?;
            for old in Outcome::ALL {
                index.remove((tenant.as_str(), old.as_str(), run.as_str()))?;
            }
            if let Some(outcome) = outcome {
                index.insert((tenant.as_str(), outcome.as_str(), run.as_str()), ())?;
            }
            Ok(())
        });
    }

    fn set_sealed_flag(&self, tenant: &TenantId, run: &RunId, sealed: bool) {
        self.update_run(tenant, run, |row| row.2 = sealed);
    }

    fn set_runs_head(&self, tenant: &TenantId, run: &RunId, head: ExpectedHead) {
        self.update_run(tenant, run, |row| {
            row.0 = head.seq;
            row.1 = head.hash.as_bytes().to_vec();
        });
    }

    fn overwrite_seal_leaf(&self, tenant: &TenantId, run: &RunId, leaf: Vec<u8>) {
        self.tamper("seal leaf", |txn| {
            let position = txn.open_table(SEAL_BY_RUN)?.get((tenant.as_str(), run.as_str()))?.map(|v| v.value());
            if let Some(position) = position {
                let name = seals_table(tenant.as_str());
                txn.open_table(seals_def(&name))?.insert(position, (run.as_str(), leaf.as_slice()))?;
            }
            Ok(())
        });
    }

    fn set_idempotency(&self, tenant: &TenantId, key: &str, run: &RunId) {
        self.tamper("idempotency index", |txn| {
            txn.open_table(IDEMPOTENCY)?.insert((tenant.as_str(), key), run.as_str())?;
            Ok(())
        });
    }

    fn rewind_log(&self, tenant: &TenantId, next_position: u64) {
        self.tamper("rewind log", |txn| {
            let t = tenant.as_str();
            txn.open_table(LOG_COUNTER)?.insert(t, next_position)?;
            let mut nodes = txn.open_table(NODES)?;
            let doomed: Vec<(u8, u64)> = nodes
                .range((t, 0, 0)..=(t, u8::MAX, u64::MAX))?
                .filter_map(|entry| entry.ok().map(|(key, _)| (key.value().1, key.value().2)))
                .filter(|(level, index)| {
                    !journal_core::testkit::node_ends_before(NodeId::new(*level, *index), next_position)
                })
                .collect();
            for (level, index) in doomed {
                nodes.remove((t, level, index))?;
            }
            Ok(())
        });
    }

    fn overwrite_log_node(&self, tenant: &TenantId, id: NodeId, hash: NodeHash) {
        self.tamper("log node", |txn| {
            txn.open_table(NODES)?.insert((tenant.as_str(), id.level, id.index), hash.as_bytes().as_slice())?;
            Ok(())
        });
    }

    fn rewrite_log(&self, tenant: &TenantId, seals: &[(RunId, Vec<u8>)]) {
        self.tamper("rewrite log", |txn| {
            let t = tenant.as_str();
            let name = seals_table(t);
            let mut table = txn.open_table(seals_def(&name))?;
            let old: Vec<u64> = table.iter()?.filter_map(|entry| entry.ok().map(|(key, _)| key.value())).collect();
            for position in old {
                table.remove(position)?;
            }
            let mut by_run = txn.open_table(SEAL_BY_RUN)?;
            let old: Vec<String> = by_run
                .range((t, "")..)?
                .filter_map(|entry| entry.ok())
                .map(|(key, _)| {
                    let (kt, run) = key.value();
                    (kt == t, run.to_owned())
                })
                .take_while(|(ours, _)| *ours)
                .map(|(_, run)| run)
                .collect();
            for run in old {
                by_run.remove((t, run.as_str()))?;
            }
            let mut nodes = txn.open_table(NODES)?;
            let old: Vec<(u8, u64)> = nodes
                .range((t, 0, 0)..=(t, u8::MAX, u64::MAX))?
                .filter_map(|entry| entry.ok().map(|(key, _)| (key.value().1, key.value().2)))
                .collect();
            for (level, index) in old {
                nodes.remove((t, level, index))?;
            }
            for (position, (run, leaf)) in seals.iter().enumerate() {
                table.insert(position as u64, (run.as_str(), leaf.as_slice()))?;
                by_run.insert((t, run.as_str()), position as u64)?;
            }
            let leaves: Vec<Vec<u8>> = seals.iter().map(|(_, leaf)| leaf.clone()).collect();
            for (id, hash) in journal_core::testkit::dense_log_nodes(&leaves) {
                nodes.insert((t, id.level, id.index), hash.as_bytes().as_slice())?;
            }
            txn.open_table(LOG_COUNTER)?.insert(t, seals.len() as u64)?;
            Ok(())
        });
    }

    fn delete_record(&self, tenant: &TenantId, run: &RunId, seq: u64) {
        let write = || -> Result<(), Box<dyn std::error::Error>> {
            let txn = self.writable()?.begin_write()?;
            txn.open_table(RECORDS)?.remove((tenant.as_str(), run.as_str(), seq))?;
            txn.commit()?;
            Ok(())
        };
        if let Err(err) = write() {
            tracing::error!("tamper delete failed: {err}");
        }
    }

    fn delete_run(&self, tenant: &TenantId, run: &RunId) {
        let write = || -> Result<(), Box<dyn std::error::Error>> {
            let (t, r) = (tenant.as_str(), run.as_str());
            let txn = self.writable()?.begin_write()?;
            {
                let mut records = txn.open_table(RECORDS)?;
                let seqs: Vec<u64> = records
                    .range((t, r, 0)..=(t, r, u64::MAX))?
                    .filter_map(|e| e.ok().map(|(k, _)| k.value().2))
                    .collect();
                for seq in seqs {
                    records.remove((t, r, seq))?;
                }
                let outcome = txn.open_table(RUNS)?.remove((t, r))?.and_then(|v| v.value().3.map(str::to_owned));
                if let Some(outcome) = outcome {
                    txn.open_table(OUTCOMES)?.remove((t, outcome.as_str(), r))?;
                }
                if let Some(position) = txn.open_table(SEAL_BY_RUN)?.remove((t, r))?.map(|v| v.value()) {
                    let name = seals_table(t);
                    txn.open_table(seals_def(&name))?.remove(position)?;
                }
            }
            txn.commit()?;
            Ok(())
        };
        if let Err(err) = write() {
            tracing::error!("tamper delete failed: {err}");
        }
    }
}
