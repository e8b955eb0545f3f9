#![doc = include_str!("../README.md")]

mod guard;
#[cfg(feature = "testkit")]
mod testkit;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use guard::guarded;
use journal_core::append::{AppendFailure, AppendTxn, RunHead, append_heads, stored_run_id as run_id, write_batch};
use journal_core::encoding;
use journal_core::group_commit::{BatchReplies, GroupCommit, fail_all};
use journal_core::heads::{HEADS_LEAF_RUN, HeadEntry};
use journal_core::store::{AdmittedRun, CheckpointRows, SignedTree, stored_chain_hash};
use journal_core::{
    AppendRequest, CollectSnapshot, ExpectedHead, JournalError, LogCounters, Outcome, RecordsInRunOrder, RunId,
    RunRows, SealEntry, SnapshotSink, StorageError, Store, StoredRecord, TenantId, TenantSnapshot,
};
use redb::{
    Database, ReadTransaction, ReadableDatabase as _, ReadableTable, ReadableTableMetadata as _, TableDefinition,
    WriteTransaction,
};
use tlog::{NodeHash, NodeId, RootHash, Tree};

/// (tenant, run, seq) -> (kind, effect_key, prev_hash, hash, bytes, signature key id, signature)
type RecordValue<'a> = (&'a str, Option<&'a str>, &'a [u8], &'a [u8], &'a [u8], Option<&'a str>, Option<&'a [u8]>);
type RecordsDefinition = TableDefinition<'static, (&'static str, &'static str, u64), RecordValue<'static>>;
/// The records of a file of layout 1: the bytes as written.
const RECORDS: RecordsDefinition = TableDefinition::new("records");
/// The records of a file of layout 2: the same row, its bytes encoded
/// (`encoding`: compressed against a frozen dictionary).
const RECORDS_Z: RecordsDefinition = TableDefinition::new("records_z");
/// In a file of layout 2, `records` is this marker, of another type: a
/// build that knows only layout 1 then refuses the file (redb: the table's
/// type does not match) where it would otherwise read no record at all.
const LAYOUT_MARKER: TableDefinition<&str, &str> = TableDefinition::new("records");
/// What the marker says, for whoever looks.
const LAYOUT_MARKER_TEXT: &str = "layout 2: the records are in records_z (agentplane of layout 2 or later reads them)";
/// The bookkeeping key naming the file's layout (absent: layout 1).
const LAYOUT_KEY: &str = "layout";
/// The newest layout this build reads and the one it writes new files in.
pub const LAYOUT: u64 = 2;

/// How this file keeps its records (issue 25). Fixed for an opening: only
/// [`RedbStore::migrate`] changes it, and it needs the file to itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// `records`, the bytes as written: files of builds before layout 2,
    /// until `agentplane migrate`.
    One,
    /// `records_z`, the bytes encoded (`encoding`).
    Two,
}

impl Layout {
    fn records(self) -> RecordsDefinition {
        match self {
            Self::One => RECORDS,
            Self::Two => RECORDS_Z,
        }
    }

    /// `bytes` as this layout stores them.
    fn stored(self, bytes: &[u8]) -> Cow<'_, [u8]> {
        match self {
            Self::One => Cow::Borrowed(bytes),
            Self::Two => Cow::Owned(encoding::encode(bytes)),
        }
    }

    /// The bytes as written, from what this layout stores.
    fn written(self, stored: &[u8]) -> Result<Vec<u8>, encoding::DecodeError> {
        match self {
            Self::One => Ok(stored.to_vec()),
            Self::Two => encoding::decode(stored),
        }
    }

    /// The layout of a file, the same for every opening (R-STORE-3): the
    /// one its bookkeeping names; else layout 1 when it has a `records`
    /// table and no `records_z` (written before layouts were named); else
    /// layout 2, which its first writer names (a new file, or one whose name
    /// was deleted: its records, if any, can only be in `records_z`).
    fn of_file(path: &Path, named: Option<u64>, has_records: bool) -> Result<Self, OpenError> {
        match named {
            Some(_) => Self::named(Some(path), named),
            None if has_records => Ok(Self::One),
            None => Ok(Self::Two),
        }
    }

    /// The layout `meta` names: absent is layout 1. One above this build's
    /// is build skew; layout 0, which no build writes, is damage.
    fn named(path: Option<&Path>, value: Option<u64>) -> Result<Self, OpenError> {
        let path = || path.map(Path::to_path_buf).unwrap_or_default();
        match value {
            None | Some(1) => Ok(Self::One),
            Some(2) => Ok(Self::Two),
            Some(0) => Err(OpenError::DamagedLayout { path: path() }),
            Some(layout) => Err(OpenError::NewerLayout { path: path(), layout }),
        }
    }
}
/// (tenant, run) -> (head seq, head hash, sealed, outcome)
type RunValue<'a> = (u64, &'a [u8], bool, Option<&'a str>);
const RUNS: TableDefinition<(&str, &str), RunValue> = TableDefinition::new("runs");
/// (tenant, idempotency key) -> run
const IDEMPOTENCY: TableDefinition<(&str, &str), &str> = TableDefinition::new("idempotency");
/// (tenant, admitted at in unix milliseconds, run) -> (): the admission
/// order, newest last (issue 27; written with the `RunAdmitted` row).
const ADMISSIONS: TableDefinition<(&str, i64, &str), ()> = TableDefinition::new("admission_order");
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
/// (tenant, run) -> (): runs whose head moved since the last heads leaf (issue 20).
const MOVED: TableDefinition<(&str, &str), ()> = TableDefinition::new("moved_runs");
/// (tenant, heads leaf position, run) -> (seq, chain hash): each heads leaf's entries.
const HEADS: TableDefinition<(&str, u64, &str), (u64, &[u8])> = TableDefinition::new("heads_entries");
/// (tenant, run) -> position of the newest heads leaf holding the run's
/// entry: what `prove` of an open run looks up (derived from HEADS, written
/// in the transaction that writes the entries, held to them by the audit).
const HEADS_BY_RUN: TableDefinition<(&str, &str), u64> = TableDefinition::new("heads_by_run");
/// name -> value: this file's bookkeeping ("moved_runs_filled": the moved
/// set was filled with the runs of a file written before it existed).
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
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

/// How every handle of this crate shares the file: any number of processes
/// write (a plane, its sweep, several plane processes), one write transaction
/// at a time, and any number read beside them (see the README, "Sharing the
/// file").
pub const CONCURRENCY: redb::ConcurrencyMode = redb::ConcurrencyMode::MultiWriter;

fn shared() -> redb::Builder {
    let mut builder = redb::Builder::new();
    builder.set_concurrency_mode(CONCURRENCY);
    builder
}

/// The page cache of a read-only opening. redb's default (1 GiB) lets a
/// reader that goes through the whole file once, as the audit does, keep a
/// copy of all of it: each page read lands in fresh memory that is never
/// read again, so the audit of a 285 MB file grew to 490 MB, with the
/// kernel's zeroing of fresh pages prominent in its profile. Through 64 MiB
/// the same audit took 230 MB and ran about 1.1x as fast from a fresh
/// process, and the console's pages, which read the same pages again and
/// again, measured as fast as before.
pub const READ_ONLY_CACHE_BYTES: usize = 64 << 20;

fn shared_read_only() -> redb::Builder {
    let mut builder = shared();
    builder.set_cache_size(READ_ONLY_CACHE_BYTES);
    builder
}

/// Why a store file could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Another process holds the file in a mode that shuts this opening out:
    /// one that opened it alone (`agentplane compact`, a build of agentplane
    /// from before the file was shared, another redb program). Not damage:
    /// the file is untouched and opens once that process is done.
    #[error(
        "{} is held by another process that opened it alone{}: this is not damage (the file is untouched). \
         Wait for that process to finish, or stop it, then run this again. `agentplane compact` holds the \
         file alone while it runs, and so do agentplane builds from before shared opening and other redb \
         programs; this build's plane, sweep and read commands share the file",
        path.display(),
        holders_text(holders)
    )]
    Held {
        /// The store file.
        path: PathBuf,
        /// The processes that have the file open, when the system says
        /// (Linux's `/proc`); empty when it cannot tell.
        holders: Vec<Holder>,
    },
    /// The file is of a layout newer than this build reads (build skew,
    /// not damage): a newer agentplane migrated or made it.
    #[error(
        "{} is of storage layout {layout}, newer than this build reads (layout {LAYOUT} at most): a newer \
         agentplane made or migrated it. This is build skew, not damage: use that build or a later one",
        path.display()
    )]
    NewerLayout {
        /// The store file.
        path: PathBuf,
        /// The layout the file names.
        layout: u64,
    },
    /// The file names storage layout 0, which no build writes: its
    /// bookkeeping was changed behind the store (damage, not build skew).
    #[error(
        "{} names storage layout 0, which no agentplane build writes: its bookkeeping (table meta, key layout) is \
         damaged. Restore the file from a backup (this one is evidence: keep a copy)",
        path.display()
    )]
    DamagedLayout {
        /// The store file.
        path: PathBuf,
    },
    /// [`RedbStore::compact`] or [`RedbStore::migrate`] needs the file to
    /// itself, and other processes have it open (a plane, its sweep, a
    /// reader: they share the file). Nothing was changed.
    #[error(
        "{task} {} needs the file to itself, and other processes have it open{}: nothing was changed. Stop \
         the plane, its sweep and any command reading the file, then run this again",
        path.display(),
        holders_text(holders)
    )]
    InUse {
        /// What needed it: "compacting", "migrating".
        task: &'static str,
        /// The store file.
        path: PathBuf,
        /// The processes that have the file open, when the system says
        /// (Linux's `/proc`); empty when it cannot tell.
        holders: Vec<Holder>,
    },
    /// Anything else: a missing, unreadable or damaged file.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// Whether the file system refused a write (no room, a file size limit, a
/// quota, a permission, a read-only file system): what stops an upkeep half
/// way in a file that is a store, as against a file that is none (another
/// program's, or no redb database at all).
pub fn refused_a_write(err: &JournalError) -> bool {
    use std::io::ErrorKind;
    let JournalError::Io(storage) = err else { return false };
    let mut cause = std::error::Error::source(storage);
    while let Some(err) = cause {
        let io = match err.downcast_ref::<redb::Error>() {
            Some(redb::Error::Io(io)) => Some(io),
            _ => err.downcast_ref::<std::io::Error>(),
        };
        if let Some(io) = io {
            return matches!(
                io.kind(),
                ErrorKind::StorageFull
                    | ErrorKind::FileTooLarge
                    | ErrorKind::QuotaExceeded
                    | ErrorKind::PermissionDenied
                    | ErrorKind::ReadOnlyFilesystem
            );
        }
        cause = err.source();
    }
    false
}

impl From<OpenError> for JournalError {
    fn from(err: OpenError) -> Self {
        match err {
            OpenError::Journal(err) => err,
            other @ (OpenError::Held { .. }
            | OpenError::InUse { .. }
            | OpenError::NewerLayout { .. }
            | OpenError::DamagedLayout { .. }) => JournalError::Io(StorageError::message(other.to_string())),
        }
    }
}

/// A process that has a store file open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// Its process id.
    pub pid: u32,
    /// Its command line, passwords of URLs in it replaced by `***`.
    pub command: String,
}

fn holders_text(holders: &[Holder]) -> String {
    if holders.is_empty() {
        return String::new();
    }
    let list: Vec<String> = holders.iter().map(|h| format!("pid {} `{}`", h.pid, h.command)).collect();
    format!(" ({})", list.join(", "))
}

/// The most holders a refusal names.
const MAX_HOLDERS: usize = 8;
/// The most characters of a holder's command line a refusal shows.
const MAX_COMMAND: usize = 160;

/// The other processes that have `path` open, read from `/proc` (Linux);
/// empty where the system does not say. Best effort: a process that cannot
/// be inspected is left out.
pub fn holders(path: &Path) -> Vec<Holder> {
    let Ok(target) = std::fs::canonicalize(path) else {
        return Vec::new();
    };
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    let mut out = Vec::new();
    for entry in procs.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        if !fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|link| link == target)) {
            continue;
        }
        let command = std::fs::read(entry.path().join("cmdline"))
            .map(|bytes| {
                let words: Vec<String> = bytes
                    .split(|b| *b == 0)
                    .filter(|word| !word.is_empty())
                    .map(|word| redact_url_password(&String::from_utf8_lossy(word)))
                    .collect();
                words.join(" ").chars().take(MAX_COMMAND).collect()
            })
            .unwrap_or_default();
        out.push(Holder { pid, command });
        if out.len() == MAX_HOLDERS {
            break;
        }
    }
    out
}

/// `scheme://user:secret@host` with the secret replaced by `***`. The user
/// info ends at the word's last `@`, not at the first `/`: a password typed
/// with an unescaped `/` (which PostgreSQL's parser still reads as one) is
/// hidden whole; a `@` later in the path hides more than it must, never less.
fn redact_url_password(word: &str) -> String {
    let Some(scheme_end) = word.find("://") else {
        return word.to_owned();
    };
    let rest = &word[scheme_end + 3..];
    let Some(at) = rest.rfind('@') else {
        return word.to_owned();
    };
    match rest[..at].find(':') {
        Some(colon) => format!("{}{}:***{}", &word[..scheme_end + 3], &rest[..colon], &rest[at..]),
        None => word.to_owned(),
    }
}

/// Turns redb's lock refusals into [`OpenError::Held`].
fn opening(path: &Path, err: redb::DatabaseError) -> OpenError {
    match err {
        redb::DatabaseError::DatabaseAlreadyOpen | redb::DatabaseError::LockProtocolMismatch => {
            OpenError::Held { path: path.to_path_buf(), holders: holders(path) }
        }
        other => OpenError::Journal(open_error(path, other)),
    }
}

/// Why a file that this process must have to itself would not open: held
/// by others is [`OpenError::InUse`], saying what needed it.
fn opening_alone(task: &'static str, path: &Path, err: redb::DatabaseError) -> OpenError {
    match opening(path, err) {
        OpenError::Held { path, holders } => OpenError::InUse { task, path, holders },
        other => other,
    }
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
    layout: Layout,
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
    /// Other processes may have it open for writing and reading meanwhile
    /// ([`CONCURRENCY`]).
    pub fn create(path: &Path) -> Result<Self, OpenError> {
        guarded(None, || {
            let db = shared().create(path).map_err(|err| opening(path, err))?;
            Self::start(db, path)
        })
    }

    /// Opens an existing store for writing; refuses a missing file. Other
    /// processes may have it open for writing and reading meanwhile
    /// ([`CONCURRENCY`]).
    pub fn open(path: &Path) -> Result<Self, OpenError> {
        guarded(None, || {
            if path.is_file() {
                refuse_what_is_not_ours_to_write(path)?;
            }
            let db = shared().open(path).map_err(|err| opening(path, err))?;
            Self::start(db, path)
        })
    }

    /// Opens an existing store for reading only: the file is never written,
    /// whatever is in it, and appends are refused. Works beside processes
    /// that write to it, and sees each of their commits.
    pub fn open_read_only(path: &Path) -> Result<Self, OpenError> {
        guarded(None, || {
            let db = shared_read_only().open_read_only(path).map_err(|err| opening(path, err))?;
            Self::read_only(db, path, None)
        })
    }

    /// Opens for reading whatever state the file is in. A file left by a
    /// crash needs a repair, which a read-only open cannot make (redb answers
    /// "repair aborted"): then a private copy is repaired in a temporary
    /// directory and read instead, and [`ReadOnlyOpening::RepairedCopy`] says
    /// so. The original file is never written.
    pub fn open_read_only_or_repaired_copy(path: &Path) -> Result<(Self, ReadOnlyOpening), OpenError> {
        guarded(None, || {
            match shared_read_only().open_read_only(path) {
                Ok(db) => Ok((Self::read_only(db, path, None)?, ReadOnlyOpening::Direct)),
                Err(redb::DatabaseError::RepairAborted) => {
                    let copy_error = |err: std::io::Error| {
                        JournalError::Io(StorageError::new(
                            format!("repairing a private copy of {}", path.display()),
                            err,
                        ))
                    };
                    let dir = tempfile::tempdir().map_err(copy_error)?;
                    let copy = dir.path().join("repaired.redb");
                    std::fs::copy(path, &copy).map_err(copy_error)?;
                    // Errors name the file the user gave, never the private copy's temporary path.
                    drop(Database::open(&copy).map_err(|err| open_error(path, err))?);
                    let db = redb::Builder::new()
                        .set_cache_size(READ_ONLY_CACHE_BYTES)
                        .open_read_only(&copy)
                        .map_err(|err| open_error(path, err))?;
                    Ok((Self::read_only(db, path, Some(dir))?, ReadOnlyOpening::RepairedCopy))
                }
                Err(err) => Err(opening(path, err)),
            }
        })
    }

    fn read_only(
        db: redb::ReadOnlyDatabase,
        path: &Path,
        temporary: Option<tempfile::TempDir>,
    ) -> Result<Self, OpenError> {
        let layout = {
            let txn = db.begin_read().map_err(io)?;
            let named = named_layout(&txn)?;
            let has_records = holds_layout_1_records(txn.list_tables().map_err(io)?);
            Layout::of_file(path, named, has_records)?
        };
        Ok(Self {
            commit: GroupCommit::refusing("the store is open read-only"),
            db: Db::ReadOnly(db),
            layout,
            _temporary: temporary,
        })
    }

    fn start(db: Database, path: &Path) -> Result<Self, OpenError> {
        let txn = db.begin_write().map_err(io)?;
        let layout = settle_layout(&txn, path)?;
        txn.open_table(RUNS).map_err(io)?;
        txn.open_table(IDEMPOTENCY).map_err(io)?;
        txn.open_table(OUTCOMES).map_err(io)?;
        txn.open_table(SEAL_BY_RUN).map_err(io)?;
        txn.open_table(LOG_COUNTER).map_err(io)?;
        txn.open_table(NODES).map_err(io)?;
        txn.open_table(SIGNED).map_err(io)?;
        txn.open_table(COSIGNED).map_err(io)?;
        txn.open_table(HEADS).map_err(io)?;
        txn.open_table(ADMISSIONS).map_err(io)?;
        txn.open_table(HEADS_BY_RUN).map_err(io)?;
        fill_moved_runs_once(&txn)?;
        fill_admissions_once(&txn, layout)?;
        fill_heads_by_run_once(&txn)?;
        txn.commit().map_err(io)?;
        let db = Arc::new(db);
        let writer = Arc::clone(&db);
        let commit = GroupCommit::start(MAX_BATCH, move |batch| commit_batch(&writer, layout, batch));
        Ok(Self { commit, db: Db::Writable(db), layout, _temporary: None })
    }

    /// Compacts the store file at `path` in place: copy-on-write leaves
    /// freed pages behind, which redb reuses but never returns to the file
    /// system on its own, and concurrent runs' appends land all over the
    /// records table, whose leaves stay a little over half full (issue 25:
    /// 359 bytes of free leaf space for each 515 stored, 70,000 records).
    /// So each of this crate's tables is first rewritten in key order, which
    /// fills its leaves, in one transaction of its own: the old table is
    /// deleted and the new one takes its name only when every row was
    /// copied, so an interruption leaves the old table as it was. Then the
    /// freed pages are given back.
    ///
    /// Needs the file to itself: it opens the file alone, so it is refused
    /// ([`OpenError::InUse`]) while any other process has it open, and shuts
    /// out every other opening while it runs. Every row stays as it was
    /// (key and value, byte for byte); only the space around them changes.
    /// A file of a newer layout is refused ([`OpenError::NewerLayout`]):
    /// its tables are that build's to rewrite. Returns the file's size
    /// before and after.
    pub fn compact(path: &Path) -> Result<(u64, u64), OpenError> {
        guarded(None, || {
            let before = file_size(path)?;
            refuse_what_is_not_ours_to_write(path)?;
            read_every_row(path)?;
            let mut db = Database::open(path).map_err(|err| opening_alone("compacting", path, err))?;
            // A newer layout's tables are that build's to rewrite (R-STORE-3).
            Layout::named(Some(path), named_layout(&db.begin_read().map_err(io)?)?)?;
            give_space_back(&mut db, path)?;
            drop(db);
            Ok((before, file_size(path)?))
        })
    }

    /// Migrates the store file at `path` to this build's layout ([`LAYOUT`]):
    /// layout 1 kept each record's bytes as written, layout 2 compresses
    /// them against a frozen dictionary (issue 25); every other table is
    /// the same. Needs the file to itself, as [`RedbStore::compact`] does.
    ///
    /// The way back: before anything is written, the file is copied whole
    /// to [`RedbStore::backup_path`], which a build of layout 1 opens as it
    /// was. The records then move in one transaction, checked row for row
    /// (each row's bytes read back as written) before the old table is
    /// deleted: an interruption (a crash, a full disk) leaves the file at
    /// layout 1 as it was, and running this again starts over. Then the
    /// space is given back as `compact` does. A file of layout 2 is left
    /// alone.
    pub fn migrate(path: &Path) -> Result<Migration, OpenError> {
        guarded(None, || {
            let before = file_size(path)?;
            refuse_what_is_not_ours_to_write(path)?;
            read_every_row(path)?;
            let mut db = Database::open(path).map_err(|err| opening_alone("migrating", path, err))?;
            let from = {
                let txn = db.begin_read().map_err(io)?;
                let named = named_layout(&txn)?;
                let has_records = holds_layout_1_records(txn.list_tables().map_err(io)?);
                // The rule every opening follows: a file that names no layout
                // and has no records table is not a store of any layout yet
                // (its first writer makes it layout 2).
                match Layout::of_file(path, named, has_records)? {
                    Layout::One => Layout::One,
                    Layout::Two => {
                        return Ok(Migration { from: LAYOUT, to: LAYOUT, backup: None, before, after: before });
                    }
                }
            };
            let backup = Self::backup_path(path);
            copy_durably(path, &backup)?;
            move_records(&db, from).map_err(|err| open_error(path, err))?;
            give_space_back(&mut db, path)?;
            drop(db);
            Ok(Migration { from: 1, to: LAYOUT, backup: Some(backup), before, after: file_size(path)? })
        })
    }

    /// Where [`RedbStore::migrate`] keeps the file as it was: beside it,
    /// named after it (`journal.redb` -> `journal.redb.layout1`).
    pub fn backup_path(path: &Path) -> PathBuf {
        let mut name = path.file_name().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
        name.push(".layout1");
        path.with_file_name(name)
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

    /// The log leaves at `positions` (every one, for `..`), in position order.
    fn leaves_in(
        &self,
        tenant: &TenantId,
        positions: impl std::ops::RangeBounds<u64>,
    ) -> Result<Vec<SealEntry>, JournalError> {
        let txn = self.read_txn()?;
        let name = seals_table(tenant.as_str());
        let Some(seals) = open_if_there(&txn, seals_def(&name))? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in seals.range(positions).map_err(io)? {
            let (key, value) = entry.map_err(io)?;
            let (run, leaf) = value.value();
            out.push(SealEntry { position: key.value(), run: run_id(tenant, run)?, leaf_bytes: leaf.to_vec() });
        }
        Ok(out)
    }

    /// A tenant's checkpoints kept in `definition`, oldest first.
    fn read_trees(
        &self,
        definition: TableDefinition<(&str, u64), (u64, &[u8], &str)>,
        tenant: &TenantId,
    ) -> Result<Vec<SignedTree>, JournalError> {
        read_trees(&self.read_txn()?, definition, tenant)
    }
}

/// A tenant's checkpoints kept in `definition`, oldest first.
fn read_trees(
    txn: &ReadTransaction,
    definition: TableDefinition<(&str, u64), (u64, &[u8], &str)>,
    tenant: &TenantId,
) -> Result<Vec<SignedTree>, JournalError> {
    // A file made before the table existed, opened read-only, has none.
    let Some(table) = open_if_there(txn, definition)? else {
        return Ok(Vec::new());
    };
    let t = tenant.as_str();
    let mut out = Vec::new();
    for entry in table.range((t, 0)..=(t, u64::MAX)).map_err(io)? {
        let (_, value) = entry.map_err(io)?;
        out.push(signed_tree(t, value.value())?);
    }
    Ok(out)
}

/// The newest `limit` of a tenant's checkpoints kept in `definition`,
/// oldest first: its last keys, read from the end.
fn read_newest_trees(
    txn: &ReadTransaction,
    definition: TableDefinition<(&str, u64), (u64, &[u8], &str)>,
    tenant: &TenantId,
    limit: usize,
) -> Result<Vec<SignedTree>, JournalError> {
    let Some(table) = open_if_there(txn, definition)? else {
        return Ok(Vec::new());
    };
    let t = tenant.as_str();
    let mut out = Vec::new();
    for entry in table.range((t, 0)..=(t, u64::MAX)).map_err(io)?.rev().take(limit) {
        let (_, value) = entry.map_err(io)?;
        out.push(signed_tree(t, value.value())?);
    }
    out.reverse();
    Ok(out)
}

/// Whether `table` is named as layout 1's records table (in layout 2, the
/// marker of that name).
/// Whether a file's tables hold layout 1's records: a `records` table and
/// no `records_z`. In layout 2 `records` is only a marker, and a layout-2
/// file whose layout name was deleted still holds `records_z`.
fn holds_layout_1_records(tables: impl Iterator<Item = redb::UntypedTableHandle>) -> bool {
    let (mut records, mut compressed) = (false, false);
    for table in tables {
        records |= redb::TableHandle::name(&table) == redb::TableHandle::name(&RECORDS);
        compressed |= redb::TableHandle::name(&table) == redb::TableHandle::name(&RECORDS_Z);
    }
    records && !compressed
}

/// Refuses a file of a newer layout, or another program's database, through
/// a read-only opening, before a writer, `compact` or `migrate` opens it for
/// writing: an opening for writing rewrites
/// the file's header even when nothing is committed, and a newer build's
/// file is left byte for byte as it was. (A file that needs a repair cannot
/// be opened read-only: it is checked again once opened alone.)
fn refuse_what_is_not_ours_to_write(path: &Path) -> Result<(), OpenError> {
    let db = match shared_read_only().open_read_only(path) {
        Ok(db) => db,
        Err(redb::DatabaseError::RepairAborted) => return Ok(()),
        Err(err) => return Err(opening(path, err)),
    };
    let txn = db.begin_read().map_err(io)?;
    // Nor is another program's database this build's to write, repair or
    // compact (review 37's note): refused before it is opened for writing,
    // which rewrites its header.
    if another_programs(txn.list_tables().map_err(io)?) {
        return Err(another_program(path));
    }
    Layout::named(Some(path), named_layout(&txn)?).map(drop)
}

/// The layout the file's bookkeeping names, if it names one.
fn named_layout(txn: &ReadTransaction) -> Result<Option<u64>, JournalError> {
    Ok(match open_if_there(txn, META)? {
        Some(meta) => meta.get(LAYOUT_KEY).map_err(io)?.map(|value| value.value()),
        None => None,
    })
}

/// What [`RedbStore::migrate`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    /// The layout the file was of.
    pub from: u64,
    /// The layout it is of now ([`LAYOUT`]).
    pub to: u64,
    /// The copy of the file as it was, when it was migrated.
    pub backup: Option<PathBuf>,
    /// The file's size before, in bytes.
    pub before: u64,
    /// The file's size after.
    pub after: u64,
}

fn file_size(path: &Path) -> Result<u64, JournalError> {
    std::fs::metadata(path)
        .map(|meta| meta.len())
        .map_err(|err| JournalError::Io(StorageError::new(path.display().to_string(), err)))
}

/// Copies the store file `from`, which this process holds open alone (so
/// no commit lands meanwhile), to `to`, through a file created fresh beside
/// it under a name of its own (never an existing file, nor a symlink planted
/// there: the copy never writes anywhere but the file it made), synced
/// before it takes its name: `to` is never a half copy. A file open for
/// writing is marked as needing recovery in its header, and so is the copy:
/// the copy is opened once and closed, which checks it and clears the mark,
/// so whatever build opens it next reads it as it is.
fn copy_durably(from: &Path, to: &Path) -> Result<(), OpenError> {
    let failed = |err: std::io::Error| {
        JournalError::Io(StorageError::new(format!("copying {} to {}", from.display(), to.display()), err))
    };
    let dir = match to.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut prefix = to.file_name().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
    prefix.push(".partial.");
    remove_stale_partials(dir, &prefix);
    // Created with O_EXCL under a random name, removed on any failure.
    let mut partial = tempfile::Builder::new().prefix(&prefix).tempfile_in(dir).map_err(failed)?;
    std::fs::File::open(from)
        .and_then(|mut source| std::io::copy(&mut source, partial.as_file_mut()))
        .and_then(|_| std::fs::metadata(from))
        .and_then(|meta| partial.as_file().set_permissions(meta.permissions()))
        .map_err(failed)?;
    drop(Database::open(partial.path()).map_err(|err| open_error(to, err))?);
    partial.as_file().sync_all().map_err(failed)?;
    partial.persist(to).map_err(|err| failed(err.error))?;
    std::fs::File::open(dir).and_then(|dir| dir.sync_all()).map_err(failed)?;
    Ok(())
}

/// Removes the partial copies an interrupted [`copy_durably`] left in
/// `dir` (regular files named `prefix`...; a link of that name is removed,
/// never followed). Best effort: what cannot be removed stays.
fn remove_stale_partials(dir: &Path, prefix: &std::ffi::OsStr) {
    let (Ok(entries), Some(prefix)) = (std::fs::read_dir(dir), prefix.to_str()) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = entry.file_name().to_str().is_some_and(|name| name.starts_with(prefix));
        if stale && entry.file_type().is_ok_and(|kind| kind.is_file() || kind.is_symlink()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Layout 1 to layout 2 in one transaction (see [`RedbStore::migrate`]).
fn move_records(db: &Database, from: Layout) -> Result<(), redb::Error> {
    let txn = db.begin_write()?;
    {
        let old = txn.open_table(from.records())?;
        let mut new = txn.open_table(RECORDS_Z)?;
        let mut moved = 0_u64;
        for row in old.iter()? {
            let (key, value) = row?;
            let (kind, effect_key, prev, hash, bytes, key_id, signature) = value.value();
            let stored = Layout::Two.stored(bytes);
            if Layout::Two.written(&stored).ok().as_deref() != Some(bytes) {
                return Err(redb::Error::Corrupted(format!(
                    "record {:?} does not read back as written once encoded; nothing was migrated",
                    key.value()
                )));
            }
            new.insert(key.value(), (kind, effect_key, prev, hash, stored.as_ref(), key_id, signature))?;
            moved += 1;
        }
        if new.len()? != moved || old.len()? != moved {
            return Err(redb::Error::Corrupted("the records moved do not add up; nothing was migrated".into()));
        }
    }
    txn.delete_table(from.records())?;
    txn.open_table(LAYOUT_MARKER)?.insert(LAYOUT_KEY, LAYOUT_MARKER_TEXT)?;
    txn.open_table(META)?.insert(LAYOUT_KEY, LAYOUT)?;
    txn.commit()?;
    Ok(())
}

/// Rebuilds every table in key order and gives the freed pages back.
fn give_space_back(db: &mut Database, path: &Path) -> Result<(), OpenError> {
    rebuild_every_table(db).map_err(|err| open_error(path, err))?;
    // compact() returns false when it found nothing more to move; a
    // second pass can free what the first one moved.
    while db.compact().map_err(|err| open_error(path, err))? {}
    Ok(())
}

/// A table's name while `compact` rebuilds it: no table of this crate
/// starts so (they are fixed names and `seals/<tenant>`), so it can never
/// be mistaken for one, and it never outlives the rebuild's transaction.
const REBUILDING: &str = "rebuilding:";

/// This crate's tables in a file, by name, and the layout its bookkeeping
/// names.
fn tables_of(txn: &ReadTransaction) -> Result<(Vec<String>, Option<u64>), redb::Error> {
    let names: Vec<String> = txn.list_tables()?.map(|handle| redb::TableHandle::name(&handle).to_owned()).collect();
    let layout = match txn.open_table(META) {
        Ok(meta) => meta.get(LAYOUT_KEY)?.map(|value| value.value()),
        Err(redb::TableError::TableDoesNotExist(_)) => None,
        Err(err) => return Err(err.into()),
    };
    Ok((names, layout))
}

/// What is done to each of this crate's tables, given its key and value
/// types ([`each_table`]).
trait EachTable {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(&self, name: &str) -> Result<(), redb::Error>;
}

/// Does `task` to every table of this crate among `names`, a table this
/// crate does not know left alone.
fn each_table(names: &[String], layout: Option<u64>, task: &impl EachTable) -> Result<(), redb::Error> {
    for name in names {
        match name.as_str() {
            // Layout 2's marker is one row: nothing to gain.
            "records" if layout.is_some_and(|layout| layout >= 2) => {}
            "records" | "records_z" => task.table::<(&str, &str, u64), RecordValue>(name)?,
            "runs" => task.table::<(&str, &str), RunValue>(name)?,
            "idempotency" => task.table::<(&str, &str), &str>(name)?,
            "admission_order" => task.table::<(&str, i64, &str), ()>(name)?,
            "outcome_index" => task.table::<(&str, &str, &str), ()>(name)?,
            "seal_by_run" | "heads_by_run" => task.table::<(&str, &str), u64>(name)?,
            "log_nodes" => task.table::<(&str, u8, u64), &[u8]>(name)?,
            "moved_runs" => task.table::<(&str, &str), ()>(name)?,
            "heads_entries" => task.table::<(&str, u64, &str), (u64, &[u8])>(name)?,
            "signed_checkpoints" | "cosigned_checkpoints" => task.table::<(&str, u64), (u64, &[u8], &str)>(name)?,
            seals if seals.starts_with("seals/") => task.table::<u64, (&str, &[u8])>(name)?,
            _ => {}
        }
    }
    Ok(())
}

/// Rewrites every table of this crate in key order (see
/// [`RedbStore::compact`]); a table this crate does not know is left alone.
fn rebuild_every_table(db: &Database) -> Result<(), redb::Error> {
    struct Rebuild<'a>(&'a Database);
    impl EachTable for Rebuild<'_> {
        fn table<K: redb::Key + 'static, V: redb::Value + 'static>(&self, name: &str) -> Result<(), redb::Error> {
            rebuild::<K, V>(self.0, name)
        }
    }
    let (names, layout) = tables_of(&db.begin_read()?)?;
    each_table(&names, layout, &Rebuild(db))
}

/// Reads, through a read-only opening, every row of every table that
/// `compact` and `migrate` rewrite, each key and value decoded as they
/// decode it, before either opens the file for writing. redb panics on a
/// page changed by hand; in the middle of a rewrite that panic leaves the
/// file needing a repair, whose checksums then find the changed page under
/// both roots ("All roots are corrupted": the whole store unreadable, where
/// every other run read before). Read here, the damage is refused (by
/// [`guarded`]) with nothing written. A file that needs a repair cannot be
/// opened read-only: it is repaired, which checks every page, when opened.
fn read_every_row(path: &Path) -> Result<(), OpenError> {
    struct ReadEveryRow<'a>(&'a ReadTransaction);
    impl EachTable for ReadEveryRow<'_> {
        fn table<K: redb::Key + 'static, V: redb::Value + 'static>(&self, name: &str) -> Result<(), redb::Error> {
            let table = self.0.open_table(TableDefinition::<K, V>::new(name))?;
            for row in table.iter()? {
                let (key, value) = row?;
                drop((key.value(), value.value()));
            }
            Ok(())
        }
    }
    let db = match shared_read_only().open_read_only(path) {
        Ok(db) => db,
        Err(redb::DatabaseError::RepairAborted) => return Ok(()),
        Err(err) => return Err(opening(path, err)),
    };
    let txn = db.begin_read().map_err(io)?;
    let (names, layout) = tables_of(&txn).map_err(|err| open_error(path, err))?;
    each_table(&names, layout, &ReadEveryRow(&txn)).map_err(|err| open_error(path, err))?;
    Ok(())
}

/// Copies table `name` in key order into a fresh table that then takes its
/// name, in one transaction: appending in key order fills each leaf (redb
/// splits a leaf as it grows at its right end), where inserts all over the
/// key space leave leaves half full.
fn rebuild<K: redb::Key + 'static, V: redb::Value + 'static>(db: &Database, name: &str) -> Result<(), redb::Error> {
    let source: TableDefinition<K, V> = TableDefinition::new(name);
    let rebuilt_name = format!("{REBUILDING}{name}");
    let rebuilt: TableDefinition<K, V> = TableDefinition::new(&rebuilt_name);
    let txn = db.begin_write()?;
    // Left behind by nothing (an interrupted rebuild never commits), but a
    // stale one would otherwise receive this copy on top of its rows.
    txn.delete_table(rebuilt)?;
    {
        let from = txn.open_table(source)?;
        let mut to = txn.open_table(rebuilt)?;
        for row in from.iter()? {
            let (key, value) = row?;
            to.insert(key.value(), value.value())?;
        }
        if to.len()? != from.len()? {
            // Not expected of redb; checked because the old rows are deleted next.
            return Err(redb::Error::Corrupted(format!("rebuilding {name} copied a different number of rows")));
        }
    }
    txn.delete_table(source)?;
    txn.rename_table(rebuilt, source)?;
    txn.commit()?;
    Ok(())
}

fn open_if_there<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &ReadTransaction,
    definition: TableDefinition<K, V>,
) -> Result<Option<redb::ReadOnlyTable<K, V>>, JournalError> {
    match txn.open_table(definition) {
        Ok(table) => Ok(Some(table)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(err) => Err(io(err)),
    }
}

/// The heads entries of `tenant`'s heads leaves at `positions`, by position.
fn read_heads_entries(
    table: &impl ReadableTable<(&'static str, u64, &'static str), (u64, &'static [u8])>,
    tenant: &TenantId,
    positions: std::ops::RangeInclusive<u64>,
) -> Result<std::collections::BTreeMap<u64, Vec<HeadEntry>>, JournalError> {
    let t = tenant.as_str();
    let mut out: std::collections::BTreeMap<u64, Vec<HeadEntry>> = std::collections::BTreeMap::new();
    for entry in table.range((t, *positions.start(), "")..).map_err(io)? {
        let (key, value) = entry.map_err(io)?;
        let (kt, position, run) = key.value();
        if kt != t || position > *positions.end() {
            break;
        }
        let run = run_id(tenant, run)?;
        let (seq, hash) = value.value();
        let hash = stored_chain_hash(&run, seq, hash, "a heads entry's hash")?;
        out.entry(position).or_default().push(HeadEntry { run, seq, hash });
    }
    Ok(out)
}

/// Everything of `tenant`, read in the one read transaction `txn` and
/// handed to `sink`: the tables, then the records run by run.
fn read_snapshot(
    txn: &ReadTransaction,
    layout: Layout,
    tenant: &TenantId,
    sink: &mut dyn SnapshotSink,
) -> Result<(), JournalError> {
    let t = tenant.as_str();
    sink.tables(read_tables(txn, tenant)?)?;
    let Some(records) = open_if_there(txn, layout.records())? else { return Ok(()) };
    let mut in_order = RecordsInRunOrder::new(sink);
    for entry in records.range((t, "", 0)..).map_err(io)? {
        let (key, value) = entry.map_err(io)?;
        let (kt, run, seq) = key.value();
        if kt != t {
            break;
        }
        let run = in_order.run_named(run, |name| run_id(tenant, name))?;
        match row_of(layout, tenant, &run, seq, value.value()) {
            Ok(row) => in_order.push(run, row)?,
            // Bytes that do not decode are handed on as no bytes, which no
            // record's chain hash covers, so the audit finds this record (its
            // run's chain broken at this seq) and goes on to every other run,
            // where an error here would end the snapshot at the first one.
            // Never as stored: a row rewritten as the bytes as written with
            // no tag (a record starts with `{`, no tag) would hash to the
            // chain, and the audit would pass what `read_run` refuses.
            // So is a row whose signature columns are half a pair.
            Err(
                why @ (JournalError::StoreDamage { .. }
                | JournalError::Tamper { kind: journal_core::TamperKind::MalformedRow, .. }),
            ) => in_order.push_unreadable(run.clone(), row_without_bytes(tenant, &run, seq, value.value())?, &why)?,
            Err(err) => return Err(err),
        }
    }
    in_order.finish()
}

/// Every table of `tenant` but the records, in the read transaction `txn`.
fn read_tables(txn: &ReadTransaction, tenant: &TenantId) -> Result<TenantSnapshot, JournalError> {
    let t = tenant.as_str();
    let mut snapshot = TenantSnapshot::empty(tenant);
    if let Some(runs) = open_if_there(txn, RUNS)? {
        for entry in runs.range((t, "")..).map_err(io)? {
            let (key, value) = entry.map_err(io)?;
            let (kt, run) = key.value();
            if kt != t {
                break;
            }
            let run = run_id(tenant, run)?;
            let (head, sealed, outcome) = head_of(&run, value.value())?;
            let unknown_outcome = unknown_outcome(value.value());
            snapshot.runs.entry(run).or_default().head = Some(RunHead { head, sealed, outcome, unknown_outcome });
        }
    }
    if let Some(index) = open_if_there(txn, OUTCOMES)? {
        for entry in index.range((t, "", "")..).map_err(io)? {
            let (key, _) = entry.map_err(io)?;
            let (kt, outcome, run) = key.value();
            if kt != t {
                break;
            }
            // An outcome this build does not know is a newer build's, or
            // forged: the audit holds it to the run's chain (R-VER-4).
            match Outcome::parse(outcome) {
                Some(known) => snapshot.outcome_index.insert((known, run_id(tenant, run)?)),
                None => snapshot.unknown_outcomes.insert((Outcome::unknown_name(outcome), run_id(tenant, run)?)),
            };
        }
    }
    if let Some(index) = open_if_there(txn, IDEMPOTENCY)? {
        for entry in index.range((t, "")..).map_err(io)? {
            let (key, value) = entry.map_err(io)?;
            let (kt, idempotency_key) = key.value();
            if kt != t {
                break;
            }
            snapshot.idempotency.insert(idempotency_key.to_owned(), run_id(tenant, value.value())?);
        }
    }
    match open_if_there(txn, ADMISSIONS)? {
        Some(order) => {
            for entry in order.range((t, i64::MIN, "")..=(t, i64::MAX, "\u{10FFFF}")).map_err(io)? {
                let (key, _) = entry.map_err(io)?;
                let (_, millis, run) = key.value();
                snapshot.admissions.insert(AdmittedRun { at: admitted_at(t, millis)?, run: run_id(tenant, run)? });
            }
        }
        // Absent from a file whose bookkeeping says a writer of this build
        // filled it: dropped behind the plane, every row of it deleted (a
        // finding per run), not an older build's file (not checked).
        None => snapshot.admission_order_absent = !admission_order_kept(txn)?,
    }
    let name = seals_table(t);
    if let Some(seals) = open_if_there(txn, seals_def(&name))? {
        for entry in seals.iter().map_err(io)? {
            let (key, value) = entry.map_err(io)?;
            let (run, leaf) = value.value();
            let position = key.value();
            snapshot
                .seals
                .insert(position, SealEntry { position, run: run_id(tenant, run)?, leaf_bytes: leaf.to_vec() });
        }
    }
    if let Some(by_run) = open_if_there(txn, SEAL_BY_RUN)? {
        for entry in by_run.range((t, "")..).map_err(io)? {
            let (key, value) = entry.map_err(io)?;
            let (kt, run) = key.value();
            if kt != t {
                break;
            }
            snapshot.seal_by_run.insert(run_id(tenant, run)?, value.value());
        }
    }
    if let Some(counter) = open_if_there(txn, LOG_COUNTER)? {
        snapshot.next_position = counter.get(t).map_err(io)?.map_or(0, |v| v.value());
    }
    if let Some(nodes) = open_if_there(txn, NODES)? {
        for entry in nodes.range((t, 0, 0)..=(t, u8::MAX, u64::MAX)).map_err(io)? {
            let (key, value) = entry.map_err(io)?;
            let (_, level, index) = key.value();
            let id = NodeId::new(level, index);
            let hash = NodeHash::try_from(value.value())
                .map_err(|_| damaged(t, format!("log node {id:?} is not 32 bytes")))?;
            snapshot.nodes.insert(id, hash);
        }
    }
    if let Some(heads) = open_if_there(txn, HEADS)? {
        snapshot.heads_entries = read_heads_entries(&heads, tenant, 0..=u64::MAX)?;
    }
    let kept = heads_by_run_kept(txn)?;
    // A file that says it keeps the index and has no table of it had the
    // table dropped behind the plane: no row at all, never the index
    // derived from the entries as for a file older than it.
    match open_if_there(txn, HEADS_BY_RUN)?.filter(|_| kept) {
        Some(by_run) => {
            for entry in by_run.range((t, "")..).map_err(io)? {
                let (key, value) = entry.map_err(io)?;
                let (kt, run) = key.value();
                if kt != t {
                    break;
                }
                snapshot.heads_by_run.insert(run_id(tenant, run)?, value.value());
            }
        }
        None if kept => {}
        None => snapshot.index_heads_by_run(),
    }
    // Marks came with heads leaves (issue 20), and every build that keeps
    // them marks the file's runs at its first opening: a file that holds
    // heads entries, or whose bookkeeping says its runs were marked, keeps
    // marks. Without a table of them it had it dropped behind the plane (no
    // mark at all); without the bookkeeping, that was removed with them.
    let marked = meta_says(txn, MOVED_RUNS_FILLED)? || !snapshot.heads_entries.is_empty() || moved_marks_kept(txn)?;
    match open_if_there(txn, MOVED)?.filter(|_| marked) {
        Some(moved) => {
            for entry in moved.range((t, "")..).map_err(io)? {
                let (key, _) = entry.map_err(io)?;
                let (kt, run) = key.value();
                if kt != t {
                    break;
                }
                snapshot.moved.insert(run_id(tenant, run)?);
            }
        }
        None => snapshot.moved_marks_absent = !marked,
    }
    snapshot.signed = read_trees(txn, SIGNED, tenant)?;
    snapshot.cosigned = read_trees(txn, COSIGNED, tenant)?;
    Ok(snapshot)
}

/// Whether a file's tables are another program's: it holds tables, and none
/// of the runs and records tables every writer of every build made at its
/// first opening.
fn another_programs(tables: impl Iterator<Item = redb::UntypedTableHandle>) -> bool {
    let ours = [redb::TableHandle::name(&RUNS), redb::TableHandle::name(&RECORDS), redb::TableHandle::name(&RECORDS_Z)];
    let mut tables = tables.peekable();
    tables.peek().is_some() && !tables.any(|table| ours.contains(&redb::TableHandle::name(&table)))
}

/// The refusal of another program's redb database.
fn another_program(path: &Path) -> OpenError {
    OpenError::Journal(JournalError::Io(StorageError::message(format!(
        "{} is a redb database of another program (it holds tables, none of them agentplane's): it was left \
         untouched; give agentplane a file of its own",
        path.display()
    ))))
}

/// The layout of the file a writer opens: the one its bookkeeping names,
/// layout 1 for a file with a `records` table and no name (written before
/// layouts were named), and for a new file this build's, made here.
fn settle_layout(txn: &WriteTransaction, path: &Path) -> Result<Layout, OpenError> {
    // Every writer of every build made the runs and records tables at its
    // first opening: a file holding tables but none of those is another
    // program's database, which gets none of ours (the transaction is
    // dropped, nothing written).
    if another_programs(txn.list_tables().map_err(io)?) {
        return Err(another_program(path));
    }
    let mut meta = txn.open_table(META).map_err(io)?;
    let named = meta.get(LAYOUT_KEY).map_err(io)?.map(|value| value.value());
    let has_records = holds_layout_1_records(txn.list_tables().map_err(io)?);
    if named.is_some() || has_records {
        return Layout::of_file(path, named, has_records);
    }
    txn.open_table(LAYOUT_MARKER).map_err(io)?.insert(LAYOUT_KEY, LAYOUT_MARKER_TEXT).map_err(io)?;
    txn.open_table(RECORDS_Z).map_err(io)?;
    meta.insert(LAYOUT_KEY, LAYOUT).map_err(io)?;
    Ok(Layout::Two)
}

/// A file written before heads leaves existed has no moved set: every run
/// not sealed is marked moved once, so the next heads leaf covers it.
fn fill_moved_runs_once(txn: &WriteTransaction) -> Result<(), JournalError> {
    let mut meta = txn.open_table(META).map_err(io)?;
    if meta.get(MOVED_RUNS_FILLED).map_err(io)?.is_some() {
        return Ok(());
    }
    let runs = txn.open_table(RUNS).map_err(io)?;
    let mut moved = txn.open_table(MOVED).map_err(io)?;
    for entry in runs.iter().map_err(io)? {
        let (key, value) = entry.map_err(io)?;
        let (tenant, run) = key.value();
        if !value.value().2 {
            moved.insert((tenant, run), ()).map_err(io)?;
        }
    }
    meta.insert(MOVED_RUNS_FILLED, 1).map_err(io)?;
    Ok(())
}

/// Fills the admission order from the seq-1 rows of a file written before
/// it existed, once (until then a read-only opening lists its runs by
/// `admissions_without_order`, O(runs) a page).
fn fill_admissions_once(txn: &WriteTransaction, layout: Layout) -> Result<(), JournalError> {
    let mut meta = txn.open_table(META).map_err(io)?;
    if meta.get(ADMISSIONS_FILLED).map_err(io)?.is_some() {
        return Ok(());
    }
    let records = txn.open_table(layout.records()).map_err(io)?;
    let mut admissions = txn.open_table(ADMISSIONS).map_err(io)?;
    for entry in records.iter().map_err(io)? {
        let (key, value) = entry.map_err(io)?;
        let (tenant, run, seq) = key.value();
        if seq != 1 {
            continue;
        }
        let (Ok(run_id), Ok(tenant_id)) = (RunId::new(run), TenantId::new(tenant)) else { continue };
        let Ok(row) = row_of(layout, &tenant_id, &run_id, seq, value.value()) else { continue };
        if let Some(at) = journal_core::store::admitted_at_of(&row) {
            admissions.insert((tenant, at.unix_millis(), run), ()).map_err(io)?;
        }
    }
    meta.insert(ADMISSIONS_FILLED, 1).map_err(io)?;
    Ok(())
}

/// Fills the newest-heads index from the heads entries of a file written
/// before it existed, once. Until a writer has opened such a file, readers
/// derive the index from the entries (`heads_by_run_filled` says which).
fn fill_heads_by_run_once(txn: &WriteTransaction) -> Result<(), JournalError> {
    let mut meta = txn.open_table(META).map_err(io)?;
    if meta.get(HEADS_BY_RUN_FILLED).map_err(io)?.is_some() {
        return Ok(());
    }
    let heads = txn.open_table(HEADS).map_err(io)?;
    let mut by_run = txn.open_table(HEADS_BY_RUN).map_err(io)?;
    // Keys ascend by (tenant, position): the last write of a run is its newest.
    for entry in heads.iter().map_err(io)? {
        let (key, _) = entry.map_err(io)?;
        let (tenant, position, run) = key.value();
        by_run.insert((tenant, run), position).map_err(io)?;
    }
    meta.insert(HEADS_BY_RUN_FILLED, 1).map_err(io)?;
    Ok(())
}

/// The admission order of a file that keeps none (written by a build before
/// it, and opened read-only before any writer of this build filled it; or
/// dropped behind the plane, which the audit reports): read from each run's
/// stored admission, O(runs), so a reader lists what the chains say rather
/// than nothing.
fn admissions_without_order(
    txn: &ReadTransaction,
    layout: Layout,
    runs: &redb::ReadOnlyTable<(&'static str, &'static str), RunValue<'static>>,
    tenant: &TenantId,
    before: Option<&AdmittedRun>,
    outcome: Option<Outcome>,
    limit: usize,
) -> Result<Vec<AdmittedRun>, JournalError> {
    let t = tenant.as_str();
    let records = txn.open_table(layout.records()).map_err(io)?;
    let mut admitted = Vec::new();
    for entry in runs.range((t, "")..).map_err(io)? {
        let (key, value) = entry.map_err(io)?;
        let (kt, run) = key.value();
        if kt != t {
            break;
        }
        if outcome.is_some() && value.value().3.and_then(Outcome::parse) != outcome {
            continue;
        }
        let run = run_id(tenant, run)?;
        let Some(first) = records.get((t, run.as_str(), 1)).map_err(io)? else { continue };
        let row = row_of(layout, tenant, &run, 1, first.value())?;
        if let Some(at) = journal_core::store::admitted_at_of(&row) {
            admitted.push(AdmittedRun { at, run });
        }
    }
    Ok(journal_core::store::page_of_admissions(admitted.into_iter(), before, limit))
}

/// The bookkeeping key saying the admission order was filled.
const ADMISSIONS_FILLED: &str = "admissions_filled";
/// The bookkeeping key saying the newest-heads index was filled.
const HEADS_BY_RUN_FILLED: &str = "heads_by_run_filled";
/// The bookkeeping key saying the moved set was filled: without it a
/// reader cannot tell an unmarked run from a file written before marks.
const MOVED_RUNS_FILLED: &str = "moved_runs_filled";

/// Whether this file keeps the newest-heads index (a writer of this build
/// has opened it).
fn heads_by_run_kept(txn: &ReadTransaction) -> Result<bool, JournalError> {
    meta_says(txn, HEADS_BY_RUN_FILLED)
}

/// Whether this file keeps the admission order. Every writer that filled
/// the newest-heads index (its key, or its table: both only ever made in
/// the opening that fills it) filled the order in the same transaction,
/// so either one outlives the order's own key removed with its table.
fn admission_order_kept(txn: &ReadTransaction) -> Result<bool, JournalError> {
    Ok(meta_says(txn, ADMISSIONS_FILLED)? || heads_by_run_kept(txn)? || open_if_there(txn, HEADS_BY_RUN)?.is_some())
}

/// Whether this file keeps moved marks, whatever its `moved_runs_filled`
/// key says (a key is one row to delete): every writer that made the
/// `moved_runs` or `heads_entries` table, or filled the admission order or
/// the newest-heads index (which came after the marks), marked the file's
/// runs in the same opening (`RedbStore::start`). A file from before the
/// marks has none of these; `migrate` and `compact` make none of them.
fn moved_marks_kept(txn: &ReadTransaction) -> Result<bool, JournalError> {
    Ok(open_if_there(txn, MOVED)?.is_some()
        || open_if_there(txn, HEADS)?.is_some()
        || open_if_there(txn, ADMISSIONS)?.is_some()
        || admission_order_kept(txn)?)
}

/// Whether this file's bookkeeping holds `name` (a fill done once).
fn meta_says(txn: &ReadTransaction, name: &str) -> Result<bool, JournalError> {
    Ok(match open_if_there(txn, META)? {
        Some(meta) => meta.get(name).map_err(io)?.is_some(),
        None => false,
    })
}

/// Appends heads leaves in one write transaction of its own (redb runs one
/// writer at a time, so it never interleaves with a group commit).
fn write_heads(
    db: &Database,
    layout: Layout,
    tenant: &TenantId,
    origin: &journal_core::Origin,
) -> Result<Vec<u64>, JournalError> {
    let txn = db.begin_write().map_err(io)?;
    refuse_lost_marks(&txn, tenant)?;
    let positions = {
        let mut tables = Tables::open(&txn, layout)?;
        append_heads(&mut tables, tenant, origin).map_err(AppendFailure::into_error)?
    };
    if positions.is_empty() {
        return Ok(positions);
    }
    txn.commit().map_err(io)?;
    Ok(positions)
}

/// Refuses a heads leaf on a file whose moved marks' bookkeeping is gone
/// (attacker review 17, R-COVER-2): this handle's own opening marked the
/// file's runs and wrote `moved_runs_filled` (`RedbStore::start`), and no
/// build removes it, so its absence now is the marks dropped behind the
/// plane with everything that would tell a reader so, which reads as a file
/// from before the marks (not checked). A leaf from what is left would
/// leave every moved run out of this and every later checkpoint.
fn refuse_lost_marks(txn: &WriteTransaction, tenant: &TenantId) -> Result<(), JournalError> {
    let kept = txn.open_table(META).map_err(io)?.get(MOVED_RUNS_FILLED).map_err(io)?.is_some();
    if kept {
        return Ok(());
    }
    Err(damaged(
        tenant.as_str(),
        format!(
            "the file's record that its runs carry moved marks (meta key {MOVED_RUNS_FILLED}), written when this \
             plane opened it, is gone: the marks were removed behind the plane, and a heads leaf made from what is \
             left would leave moved runs out of the checkpoint. Nothing was signed: run `agentplane verify`, then \
             open the store again (its opening marks every open run)"
        ),
    ))
}

/// Writes one group commit's appends in one transaction: the append
/// algorithm is journal-core's; this backend only opens the tables.
fn commit_batch(db: &Database, layout: Layout, batch: &[&AppendRequest]) -> BatchReplies {
    let txn = match db.begin_write() {
        Ok(txn) => txn,
        Err(err) => return fail_all(batch, io(err)),
    };
    let written = Tables::open(&txn, layout).and_then(|mut tables| write_batch(&mut tables, batch));
    match written {
        Ok(replies) => match txn.commit() {
            Ok(()) => replies,
            Err(err) => fail_all(batch, io(err)),
        },
        // Nothing of this batch may commit: dropping the transaction aborts it.
        Err(err) => fail_all(batch, err),
    }
}

/// The tables every append touches, open for one batch: the append
/// algorithm's transaction on this backend.
struct Tables<'txn> {
    txn: &'txn WriteTransaction,
    layout: Layout,
    records: redb::Table<'txn, (&'static str, &'static str, u64), RecordValue<'static>>,
    runs: redb::Table<'txn, (&'static str, &'static str), RunValue<'static>>,
    idempotency: redb::Table<'txn, (&'static str, &'static str), &'static str>,
    admissions: redb::Table<'txn, (&'static str, i64, &'static str), ()>,
    outcomes: redb::Table<'txn, (&'static str, &'static str, &'static str), ()>,
    seal_by_run: redb::Table<'txn, (&'static str, &'static str), u64>,
    counter: redb::Table<'txn, &'static str, u64>,
    nodes: redb::Table<'txn, (&'static str, u8, u64), &'static [u8]>,
    moved: redb::Table<'txn, (&'static str, &'static str), ()>,
    heads: redb::Table<'txn, (&'static str, u64, &'static str), (u64, &'static [u8])>,
    heads_by_run: redb::Table<'txn, (&'static str, &'static str), u64>,
}

impl<'txn> Tables<'txn> {
    fn open(txn: &'txn WriteTransaction, layout: Layout) -> Result<Self, JournalError> {
        Ok(Self {
            txn,
            layout,
            records: txn.open_table(layout.records()).map_err(io)?,
            runs: txn.open_table(RUNS).map_err(io)?,
            idempotency: txn.open_table(IDEMPOTENCY).map_err(io)?,
            admissions: txn.open_table(ADMISSIONS).map_err(io)?,
            outcomes: txn.open_table(OUTCOMES).map_err(io)?,
            seal_by_run: txn.open_table(SEAL_BY_RUN).map_err(io)?,
            counter: txn.open_table(LOG_COUNTER).map_err(io)?,
            nodes: txn.open_table(NODES).map_err(io)?,
            moved: txn.open_table(MOVED).map_err(io)?,
            heads: txn.open_table(HEADS).map_err(io)?,
            heads_by_run: txn.open_table(HEADS_BY_RUN).map_err(io)?,
        })
    }
}

/// An admission row's instant; one out of range is a damaged row.
fn admitted_at(tenant: &str, millis: i64) -> Result<journal_core::At, JournalError> {
    journal_core::At::from_unix_millis(millis)
        .map_err(|err| damaged(tenant, format!("an admission order row has no valid instant: {err}")))
}

fn head_of(run: &RunId, value: RunValue<'_>) -> Result<(ExpectedHead, bool, Option<Outcome>), JournalError> {
    let (seq, hash, sealed, outcome) = value;
    let hash = stored_chain_hash(run, seq, hash, "the runs table's head hash")?;
    Ok((ExpectedHead { seq, hash }, sealed, outcome.and_then(Outcome::parse)))
}

/// A runs row's outcome that this build does not know (a newer build's, or
/// forged), which [`head_of`] reads as none: [`RunRows::unknown_outcome`].
fn unknown_outcome(value: RunValue<'_>) -> Option<String> {
    value.3.filter(|text| Outcome::parse(text).is_none()).map(Outcome::unknown_name)
}

/// A read failed: nothing is written yet, only this append fails.
fn refused(err: impl Into<redb::Error>) -> AppendFailure {
    AppendFailure::Refused(io(err))
}

/// A write failed half way: nothing of the batch may commit.
fn broken(err: impl Into<redb::Error>) -> AppendFailure {
    AppendFailure::Broken(io(err))
}

impl AppendTxn for Tables<'_> {
    fn run_head(&mut self, request: &AppendRequest) -> Result<Option<RunHead>, AppendFailure> {
        let (tenant, run) = (request.tenant.as_str(), request.run.as_str());
        let Some(value) = self.runs.get((tenant, run)).map_err(refused)? else {
            // No row, and records of the run stored: its row was deleted
            // behind the store. A new run's records would replace them
            // (redb's insert overwrites), and its admission perform their
            // effects again (R-RUN-5, R-CHAIN-1): refused, nothing written.
            let mut stored = self.records.range((tenant, run, 0)..=(tenant, run, u64::MAX)).map_err(refused)?;
            if let Some(first) = stored.next() {
                let seq = first.map_err(refused)?.0.value().2;
                return Err(AppendFailure::Refused(JournalError::StoreDamage {
                    tenant: request.tenant.clone(),
                    detail: format!(
                        "run {run} has records stored (seq {seq} and on) and no runs row: the row was deleted \
                         behind the store, and a new run's records would overwrite them; nothing was written. Run \
                         `agentplane verify`, and restore the store from a copy that holds the run's row"
                    ),
                }));
            }
            return Ok(None);
        };
        let (head, sealed, outcome) = head_of(&request.run, value.value()).map_err(AppendFailure::Refused)?;
        Ok(Some(RunHead { head, sealed, outcome, unknown_outcome: unknown_outcome(value.value()) }))
    }

    fn next_position(&mut self, tenant: &TenantId) -> Result<u64, AppendFailure> {
        Ok(self.counter.get(tenant.as_str()).map_err(refused)?.map_or(0, |v| v.value()))
    }

    fn log_nodes(&mut self, tenant: &TenantId, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
        read_nodes(&self.nodes, tenant.as_str(), ids)
    }

    fn put_record(&mut self, request: &AppendRequest) -> Result<(), AppendFailure> {
        let row = &request.row;
        let key = (request.tenant.as_str(), request.run.as_str(), row.seq);
        let stored = match (&request.encoded_bytes, self.layout) {
            (Some(encoded), Layout::Two) => Cow::Borrowed(encoded.as_slice()),
            _ => self.layout.stored(&row.bytes),
        };
        self.records.insert(key, record_value(row, &stored)).map(drop).map_err(broken)
    }

    fn put_idempotency_key(&mut self, request: &AppendRequest, key: &str) -> Result<(), AppendFailure> {
        let run = request.run.as_str();
        self.idempotency.insert((request.tenant.as_str(), key), run).map(drop).map_err(broken)
    }

    fn put_admission(&mut self, request: &AppendRequest, at: journal_core::At) -> Result<(), AppendFailure> {
        let key = (request.tenant.as_str(), at.unix_millis(), request.run.as_str());
        self.admissions.insert(key, ()).map(drop).map_err(broken)
    }

    fn put_outcome(
        &mut self,
        request: &AppendRequest,
        old: Option<Outcome>,
        new: Outcome,
    ) -> Result<(), AppendFailure> {
        let (tenant, run) = (request.tenant.as_str(), request.run.as_str());
        if let Some(old) = old {
            self.outcomes.remove((tenant, old.as_str(), run)).map_err(broken)?;
        }
        self.outcomes.insert((tenant, new.as_str(), run), ()).map(drop).map_err(broken)
    }

    fn put_leaf(&mut self, tenant: &TenantId, run: &str, position: u64, leaf: &[u8]) -> Result<(), AppendFailure> {
        let t = tenant.as_str();
        let name = seals_table(t);
        let mut seals = self.txn.open_table(seals_def(&name)).map_err(broken)?;
        if seals.insert(position, (run, leaf)).map_err(broken)?.is_some() {
            // The counter was moved back behind the store: a leaf is never
            // overwritten (PostgreSQL's key refuses it the same way).
            return Err(AppendFailure::Broken(damaged(
                t,
                format!(
                    "the log counter gives position {position}, which already holds a leaf (run `agentplane audit`)"
                ),
            )));
        }
        drop(seals);
        if run == HEADS_LEAF_RUN {
            return Ok(());
        }
        self.seal_by_run.insert((t, run), position).map(drop).map_err(broken)
    }

    fn put_log_node(&mut self, tenant: &TenantId, id: NodeId, hash: &NodeHash) -> Result<(), AppendFailure> {
        let key = (tenant.as_str(), id.level, id.index);
        self.nodes.insert(key, hash.as_bytes().as_slice()).map(drop).map_err(broken)
    }

    fn put_next_position(&mut self, tenant: &TenantId, next: u64) -> Result<(), AppendFailure> {
        self.counter.insert(tenant.as_str(), next).map(drop).map_err(broken)
    }

    fn put_run_head(&mut self, request: &AppendRequest, row: RunHead) -> Result<(), AppendFailure> {
        let key = (request.tenant.as_str(), request.run.as_str());
        let value = (row.head.seq, row.head.hash.as_bytes().as_slice(), row.sealed, row.outcome.map(|o| o.as_str()));
        self.runs.insert(key, value).map_err(broken)?;
        if row.sealed {
            self.moved.remove(key).map(drop).map_err(broken)
        } else if self.moved.get(key).map_err(broken)?.is_none() {
            // Marked once per heads leaf, not once per append: a page is
            // dirtied only when the run first moves.
            self.moved.insert(key, ()).map(drop).map_err(broken)
        } else {
            Ok(())
        }
    }

    fn moved_heads(&mut self, tenant: &TenantId) -> Result<Vec<(HeadEntry, bool)>, AppendFailure> {
        let t = tenant.as_str();
        let mut out = Vec::new();
        for entry in self.moved.range((t, "")..).map_err(refused)? {
            let (key, _) = entry.map_err(refused)?;
            let (kt, run) = key.value();
            if kt != t {
                break;
            }
            let run = run_id(tenant, run).map_err(AppendFailure::Refused)?;
            if let Some(value) = self.runs.get((t, run.as_str())).map_err(refused)? {
                let (head, _, _) = head_of(&run, value.value()).map_err(AppendFailure::Refused)?;
                // The record's hash column, as stored: a row whose bytes do
                // not give it is the audit's finding, not this read's.
                let held = self
                    .records
                    .get((t, run.as_str(), head.seq))
                    .map_err(refused)?
                    .is_some_and(|record| record.value().3 == head.hash.as_bytes().as_slice());
                out.push((HeadEntry::new(&run, head), held));
            }
        }
        Ok(out)
    }

    fn put_heads_entries(
        &mut self,
        tenant: &TenantId,
        position: u64,
        entries: &[HeadEntry],
    ) -> Result<(), AppendFailure> {
        let t = tenant.as_str();
        for entry in entries {
            let run = entry.run.as_str();
            self.heads.insert((t, position, run), (entry.seq, entry.hash.as_bytes().as_slice())).map_err(broken)?;
            self.heads_by_run.insert((t, run), position).map_err(broken)?;
            self.moved.remove((t, run)).map_err(broken)?;
        }
        Ok(())
    }
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

/// A row as the records table holds it, its bytes `stored` as the file's
/// layout keeps them; `row_of` reads it back.
fn record_value<'a>(row: &'a StoredRecord, stored: &'a [u8]) -> RecordValue<'a> {
    let signature = row.signature.as_ref();
    (
        row.kind.as_str(),
        row.effect_key.as_deref(),
        row.prev_hash.as_bytes().as_slice(),
        row.hash.as_bytes().as_slice(),
        stored,
        signature.map(|s| s.key_id.as_str()),
        signature.map(|s| s.signature.as_slice()),
    )
}

/// The row of a record whose bytes or signature columns do not decode,
/// with no bytes and no signature (see `read_snapshot`).
fn row_without_bytes(
    tenant: &TenantId,
    run: &RunId,
    seq: u64,
    value: RecordValue<'_>,
) -> Result<StoredRecord, JournalError> {
    let (kind, effect_key, prev, hash, ..) = value;
    row_of(Layout::One, tenant, run, seq, (kind, effect_key, prev, hash, &[], None, None))
}

fn row_of(
    layout: Layout,
    tenant: &TenantId,
    run: &RunId,
    seq: u64,
    value: RecordValue<'_>,
) -> Result<StoredRecord, JournalError> {
    let (kind, effect_key, prev, hash, stored, key_id, signature) = value;
    let bytes =
        layout.written(stored).map_err(|err| damaged(tenant.as_str(), format!("run {run}, record {seq}: {err}")))?;
    let hash_of = |b: &[u8]| stored_chain_hash(run, seq, b, "a stored record hash");
    Ok(StoredRecord {
        seq,
        kind: kind.to_owned(),
        effect_key: effect_key.map(str::to_owned),
        prev_hash: hash_of(prev)?,
        hash: hash_of(hash)?,
        bytes,
        signature: journal_core::store::stored_signature(
            run,
            seq,
            key_id.map(str::to_owned),
            signature.map(<[u8]>::to_vec),
        )?,
    })
}

impl Store for RedbStore {
    fn append(&self, mut request: AppendRequest) -> Result<Option<u64>, JournalError> {
        let tenant = request.tenant.clone();
        guarded(Some(&tenant), move || {
            // Here, on the appender's thread: a batch's records are then
            // compressed by its appenders at once, not one after another by the
            // thread that commits them. Always this store's own encoding of
            // `row.bytes`, never one the caller brought: the chain commits to
            // those bytes, and what the file keeps must decode to exactly them.
            journal_core::record::within_record_bound(&request.run, request.row.seq, request.row.bytes.len())?;
            request.encoded_bytes = (self.layout == Layout::Two).then(|| encoding::encode(&request.row.bytes));
            self.commit.append(request)
        })
    }

    fn read_run(&self, tenant: &TenantId, run: &RunId) -> Result<RunRows, JournalError> {
        self.read_run_within(tenant, run, usize::MAX)
    }

    fn read_run_within(&self, tenant: &TenantId, run: &RunId, max_bytes: usize) -> Result<RunRows, JournalError> {
        guarded(Some(tenant), || {
            let txn = self.read_txn()?;
            let runs = txn.open_table(RUNS).map_err(io)?;
            let ((head, sealed, outcome), unknown_outcome) =
                match runs.get((tenant.as_str(), run.as_str())).map_err(io)? {
                    Some(value) => (head_of(run, value.value())?, unknown_outcome(value.value())),
                    None => return Err(JournalError::NotFound { tenant: tenant.clone(), run: run.clone() }),
                };
            let records = txn.open_table(self.layout.records()).map_err(io)?;
            let mut rows = Vec::new();
            // Counted as each row is decoded: the iteration stops at the
            // first row past the bound, the rest of the run never read.
            let mut bound = journal_core::store::RunBound::new(tenant, run, max_bytes);
            for entry in records
                .range((tenant.as_str(), run.as_str(), 0)..=(tenant.as_str(), run.as_str(), u64::MAX))
                .map_err(io)?
            {
                let (key, value) = entry.map_err(io)?;
                let row = row_of(self.layout, tenant, run, key.value().2, value.value())?;
                bound.hold(&row)?;
                rows.push(row);
            }
            let seal = seal_of(&txn, tenant, run)?;
            Ok(RunRows { rows, head: Some(head), sealed, seal, outcome, unknown_outcome })
        })
    }

    fn stored_hashes(
        &self,
        tenant: &TenantId,
        records: &[(RunId, u64)],
    ) -> Result<Vec<Option<journal_core::ChainHash>>, JournalError> {
        guarded(Some(tenant), || {
            let txn = self.read_txn()?;
            let Some(table) = open_if_there(&txn, self.layout.records())? else {
                return Ok(vec![None; records.len()]);
            };
            let t = tenant.as_str();
            records
                .iter()
                .map(|(run, seq)| {
                    let Some(value) = table.get((t, run.as_str(), *seq)).map_err(io)? else { return Ok(None) };
                    let hash = value.value().3;
                    journal_core::ChainHash::from_slice(hash).map(Some).ok_or_else(|| {
                        damaged(t, format!("record {seq} of run {run} has a hash column that is not 32 bytes"))
                    })
                })
                .collect()
        })
    }

    fn runs(&self, tenant: &TenantId, outcome: Option<Outcome>) -> Result<Vec<RunId>, JournalError> {
        guarded(Some(tenant), || {
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
        })
    }

    fn admissions(
        &self,
        tenant: &TenantId,
        before: Option<&AdmittedRun>,
        outcome: Option<Outcome>,
        limit: usize,
    ) -> Result<Vec<AdmittedRun>, JournalError> {
        guarded(Some(tenant), || {
            let txn = self.read_txn()?;
            let runs = txn.open_table(RUNS).map_err(io)?;
            let t = tenant.as_str();
            let Some(order) = open_if_there(&txn, ADMISSIONS)? else {
                return admissions_without_order(&txn, self.layout, &runs, tenant, before, outcome, limit);
            };
            let mut out = Vec::new();
            let range = match before {
                // Keys below (tenant, at, run): a run id is never empty, so "" sorts first.
                Some(before) => order.range((t, i64::MIN, "")..(t, before.at.unix_millis(), before.run.as_str())),
                None => order.range((t, i64::MIN, "")..=(t, i64::MAX, "\u{10FFFF}")),
            }
            .map_err(io)?;
            for entry in range.rev() {
                if out.len() >= limit {
                    break;
                }
                let (key, _) = entry.map_err(io)?;
                let (_, millis, run) = key.value();
                if let Some(outcome) = outcome {
                    let indexed =
                        runs.get((t, run)).map_err(io)?.and_then(|value| value.value().3.and_then(Outcome::parse));
                    if indexed != Some(outcome) {
                        continue;
                    }
                }
                out.push(AdmittedRun { at: admitted_at(t, millis)?, run: run_id(tenant, run)? });
            }
            Ok(out)
        })
    }

    fn run_by_idempotency_key(&self, tenant: &TenantId, key: &str) -> Result<Option<RunId>, JournalError> {
        guarded(Some(tenant), || {
            let txn = self.read_txn()?;
            let table = txn.open_table(IDEMPOTENCY).map_err(io)?;
            table.get((tenant.as_str(), key)).map_err(io)?.map(|v| run_id(tenant, v.value())).transpose()
        })
    }

    fn tenants(&self) -> Result<Vec<TenantId>, JournalError> {
        guarded(None, || {
            let txn = self.read_txn()?;
            let runs = txn.open_table(RUNS).map_err(io)?;
            let mut out: Vec<TenantId> = Vec::new();
            for entry in runs.iter().map_err(io)? {
                let (key, _) = entry.map_err(io)?;
                let tenant = key.value().0;
                if out.last().is_none_or(|last| last.as_str() != tenant) {
                    out.push(
                        TenantId::new(tenant).map_err(|_| damaged(tenant, "a stored tenant id is invalid".into()))?,
                    );
                }
            }
            Ok(out)
        })
    }

    fn seals(&self, tenant: &TenantId) -> Result<Vec<SealEntry>, JournalError> {
        guarded(Some(tenant), || self.leaves_in(tenant, ..))
    }

    fn seals_in(&self, tenant: &TenantId, positions: std::ops::Range<u64>) -> Result<Vec<SealEntry>, JournalError> {
        guarded(Some(tenant), || self.leaves_in(tenant, positions))
    }

    fn seal_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<SealEntry>, JournalError> {
        guarded(Some(tenant), || seal_of(&self.read_txn()?, tenant, run))
    }

    fn log_counters(&self, tenant: &TenantId) -> Result<LogCounters, JournalError> {
        guarded(Some(tenant), || {
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
        })
    }

    fn read_log_nodes(&self, tenant: &TenantId, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
        guarded(Some(tenant), || {
            let txn = self.read_txn()?;
            let nodes = txn.open_table(NODES).map_err(io)?;
            read_nodes(&nodes, tenant.as_str(), ids)
        })
    }

    fn signed_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        guarded(Some(tenant), || self.read_trees(SIGNED, tenant))
    }

    fn last_signed_checkpoint(&self, tenant: &TenantId) -> Result<Option<SignedTree>, JournalError> {
        guarded(Some(tenant), || {
            let txn = self.read_txn()?;
            let Some(table) = open_if_there(&txn, SIGNED)? else {
                return Ok(None);
            };
            let t = tenant.as_str();
            let last = table.range((t, 0)..=(t, u64::MAX)).map_err(io)?.next_back().transpose().map_err(io)?;
            last.map(|(_, value)| signed_tree(t, value.value())).transpose()
        })
    }

    fn cosigned_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        guarded(Some(tenant), || self.read_trees(COSIGNED, tenant))
    }

    fn newest_checkpoints(
        &self,
        tenant: &TenantId,
        kind: CheckpointRows,
        limit: usize,
    ) -> Result<Vec<SignedTree>, JournalError> {
        guarded(Some(tenant), || {
            let definition = match kind {
                CheckpointRows::Signed => SIGNED,
                CheckpointRows::Cosigned => COSIGNED,
            };
            read_newest_trees(&self.read_txn()?, definition, tenant, limit)
        })
    }

    fn record_cosigned_checkpoint(&self, tenant: &TenantId, cosigned: SignedTree) -> Result<(), JournalError> {
        guarded(Some(tenant), || {
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
                    .map_or(Ok(0), |(key, _)| next_checkpoint_number(t, "cosigned", key.value().1))?;
                table
                    .insert(
                        (t, next),
                        (cosigned.tree.size, cosigned.tree.root.as_bytes().as_slice(), cosigned.note.as_str()),
                    )
                    .map_err(io)?;
            }
            txn.commit().map_err(io)
        })
    }

    fn snapshot(&self, tenant: &TenantId) -> Result<TenantSnapshot, JournalError> {
        guarded(Some(tenant), || {
            let mut collect = CollectSnapshot::default();
            read_snapshot(&self.read_txn()?, self.layout, tenant, &mut collect)?;
            collect.finish()
        })
    }

    fn snapshot_streamed(&self, tenant: &TenantId, sink: &mut dyn SnapshotSink) -> Result<(), JournalError> {
        // The caller's sink is called outside the guard: its own panic is
        // not the file's damage.
        let mut sink = guard::Unguarded::new(sink);
        let read = guarded(Some(tenant), || read_snapshot(&self.read_txn()?, self.layout, tenant, &mut sink));
        sink.finish(read)
    }

    fn append_heads(&self, tenant: &TenantId, origin: &journal_core::Origin) -> Result<Vec<u64>, JournalError> {
        guarded(Some(tenant), || {
            let Db::Writable(db) = &self.db else {
                return Err(machinery("the store is open read-only: it cannot append a heads leaf"));
            };
            write_heads(db, self.layout, tenant, origin)
        })
    }

    fn newest_heads_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<u64>, JournalError> {
        guarded(Some(tenant), || {
            let txn = self.read_txn()?;
            if heads_by_run_kept(&txn)? {
                let by_run = txn.open_table(HEADS_BY_RUN).map_err(io)?;
                return Ok(by_run.get((tenant.as_str(), run.as_str())).map_err(io)?.map(|v| v.value()));
            }
            let Some(table) = open_if_there(&txn, HEADS)? else {
                return Ok(None);
            };
            Ok(journal_core::snapshot::newest_heads(&read_heads_entries(&table, tenant, 0..=u64::MAX)?).remove(run))
        })
    }

    fn seal_at(&self, tenant: &TenantId, position: u64) -> Result<Option<SealEntry>, JournalError> {
        guarded(Some(tenant), || seal_at(&self.read_txn()?, tenant, position))
    }

    fn heads_entries(&self, tenant: &TenantId, position: u64) -> Result<Vec<HeadEntry>, JournalError> {
        guarded(Some(tenant), || {
            let txn = self.read_txn()?;
            let Some(table) = open_if_there(&txn, HEADS)? else {
                return Ok(Vec::new());
            };
            read_heads_entries(&table, tenant, position..=position)
                .map(|mut by_position| by_position.remove(&position).unwrap_or_default())
        })
    }

    fn heads_entries_in(
        &self,
        tenant: &TenantId,
        positions: std::ops::Range<u64>,
    ) -> Result<journal_core::store::HeadsByPosition, JournalError> {
        guarded(Some(tenant), || {
            let txn = self.read_txn()?;
            let (Some(table), Some(last)) = (open_if_there(&txn, HEADS)?, positions.end.checked_sub(1)) else {
                return Ok(Default::default());
            };
            if positions.start > last {
                return Ok(Default::default());
            }
            read_heads_entries(&table, tenant, positions.start..=last)
        })
    }

    fn record_signed_checkpoint(
        &self,
        tenant: &TenantId,
        previous: Option<Tree>,
        signed: SignedTree,
    ) -> Result<(), JournalError> {
        guarded(Some(tenant), || {
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
                        Some((key, value)) => (
                            next_checkpoint_number(t, "signed", key.value().1)?,
                            Some(signed_tree(t, value.value())?.tree),
                        ),
                        None => (0, None),
                    }
                };
                journal_core::store::check_last_signed(tenant, last_tree, previous)?;
                table
                    .insert((t, next), (signed.tree.size, signed.tree.root.as_bytes().as_slice(), signed.note.as_str()))
                    .map_err(io)?;
            }
            txn.commit().map_err(io)
        })
    }
}

/// The number after the tenant's last `which` checkpoint, `last`: the
/// largest number is a row written behind the plane (no plane signs 2^64
/// times), damage, never an overflow (a panic, or a wrap to 0 that
/// overwrote the first checkpoint the plane recorded).
fn next_checkpoint_number(tenant: &str, which: &str, last: u64) -> Result<u64, JournalError> {
    last.checked_add(1).ok_or_else(|| {
        damaged(
            tenant,
            format!(
                "the last {which} checkpoint is numbered {last}, the largest number: no plane signs that often, so \
                 the row was written behind the plane (run `agentplane audit` against a checkpoint you saved)"
            ),
        )
    })
}

fn signed_tree(tenant: &str, (size, root, note): (u64, &[u8], &str)) -> Result<SignedTree, JournalError> {
    let root = RootHash::try_from(root)
        .map_err(|_| damaged(tenant, format!("a signed checkpoint's root at size {size} is not 32 bytes")))?;
    Ok(SignedTree { tree: Tree::new(size, root), note: note.to_owned() })
}

fn seal_of(txn: &ReadTransaction, tenant: &TenantId, run: &RunId) -> Result<Option<SealEntry>, JournalError> {
    let by_run = txn.open_table(SEAL_BY_RUN).map_err(io)?;
    match by_run.get((tenant.as_str(), run.as_str())).map_err(io)? {
        Some(position) => seal_at(txn, tenant, position.value()),
        None => Ok(None),
    }
}

/// The log leaf at `position`: one read by key.
fn seal_at(txn: &ReadTransaction, tenant: &TenantId, position: u64) -> Result<Option<SealEntry>, JournalError> {
    let name = seals_table(tenant.as_str());
    let Some(seals) = open_if_there(txn, seals_def(&name))? else {
        return Ok(None);
    };
    let Some(value) = seals.get(position).map_err(io)? else {
        return Ok(None);
    };
    let (stored_run, leaf) = value.value();
    Ok(Some(SealEntry { position, run: run_id(tenant, stored_run)?, leaf_bytes: leaf.to_vec() }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::redact_url_password;

    /// No secret is printed (R-OPS-1): the command line of a process holding
    /// the file is shown with any URL password hidden, a `/` in it included.
    #[test]
    fn a_url_password_is_hidden_whole_from_a_holder_s_command_line() {
        assert_eq!(redact_url_password("postgres://u:pa/ss@db/x"), "postgres://u:***@db/x");
        assert_eq!(redact_url_password("https://agent:s3cret@w.example/p"), "https://agent:***@w.example/p");
        assert_eq!(redact_url_password("https://w.example/p"), "https://w.example/p");
        assert_eq!(redact_url_password("https://agent@w.example/p"), "https://agent@w.example/p");
        assert_eq!(redact_url_password("--tenant"), "--tenant");
    }
}
