#![doc = include_str!("../README.md")]

// A witness that remembers (R-WIT-6): serves C2SP tlog-witness
// `add-checkpoint` and the monitor endpoint, keeps each origin's latest
// cosigned checkpoint durably in redb, and cosigns only a checkpoint it can
// prove extends the last one it cosigned.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use redb::{Database, ReadableDatabase as _, ReadableTable as _, TableDefinition};
use tlog::{RootHash, Tree};
use tokio::sync::watch;
use tokio::task::JoinSet;

use witness::protocol::{
    ADD_CHECKPOINT_PATH, AddCheckpointRequest, MAX_REQUEST_BYTES, MAX_SIGN_SUBTREE_BYTES, SIGN_SUBTREE_PATH,
    SIZE_CONTENT_TYPE, SignSubtreeRequest, origin_hash,
};
use witness::{
    Checkpoint, CheckpointError, Cosigner, NoteError, NoteVerifier, SignedCheckpoint, SubtreeStatement, TrustedWitness,
    VerifierKey,
};

/// origin -> (size, root, the cosigned note served to readers)
const LATEST: TableDefinition<&str, (u64, &[u8], &str)> = TableDefinition::new("latest_cosigned");
/// How the state was last closed, under [`LIFECYCLE_KEY`]: [`OPEN`] from a
/// start (written once the high-water mark is), [`CLOSED_CLEANLY`] once a
/// shutdown's final flush has made every commit durable. A state without it
/// is brand new or was written by a build before it (see
/// [`open_checked`]).
const LIFECYCLE: TableDefinition<&str, &str> = TableDefinition::new("witness_lifecycle");
const LIFECYCLE_KEY: &str = "state";
const OPEN: &str = "open, not closed cleanly";
const CLOSED_CLEANLY: &str = "closed cleanly";
/// Where every refusal is logged (integrity refusals also go to
/// `agentplane.witness.integrity`).
const LOG_TARGET: &str = "agentplane.witness";

/// How many refused requests are logged one by one per
/// [`REFUSAL_LOG_WINDOW`]; past it they are counted, and the count is logged
/// with the first refusal after the window: a client sending garbage cannot
/// flood the operator's log. (Forks, a second root the log signed for a
/// size already cosigned, on `agentplane.witness.integrity`, come only from
/// a log's key holder and are always logged.)
pub const REFUSALS_LOGGED_PER_WINDOW: u32 = 50;
/// The window of [`REFUSALS_LOGGED_PER_WINDOW`].
pub const REFUSAL_LOG_WINDOW: std::time::Duration = std::time::Duration::from_secs(10);

/// The most bytes of a request's method or path a log line quotes: the
/// request line may be up to [`MAX_HEADER_BYTES`] (16 KiB),
/// and [`REFUSALS_LOGGED_PER_WINDOW`] bounds lines, not their length.
pub const LOGGED_REQUEST_FIELD_BYTES: usize = 128;

/// The most bytes of a request's line and headers: a witness request's are
/// a few hundred. Past it the answer is 431 and the connection is closed
/// (hyper's default bound, its read buffer, is about 400 KiB, which every
/// connection of every peer could hold while it trickled its header).
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// `text` as a log line quotes it: at most [`LOGGED_REQUEST_FIELD_BYTES`]
/// bytes (cut at a character boundary), with the length of what was cut.
fn clipped(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= LOGGED_REQUEST_FIELD_BYTES {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = LOGGED_REQUEST_FIELD_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = text.get(..end).unwrap_or_default();
    std::borrow::Cow::Owned(format!("{head}... ({} bytes)", text.len()))
}

/// The refusals logged in the current window, and those counted past it.
#[derive(Default)]
struct RefusalLog(std::sync::Mutex<RefusalWindow>);

#[derive(Default)]
struct RefusalWindow {
    started: Option<std::time::Instant>,
    logged: u32,
    unlogged: u64,
}

impl RefusalLog {
    /// Whether this refusal is logged one by one, and how many went
    /// unlogged in the window that just closed (0 while it is open).
    fn admit(&self) -> (bool, u64) {
        let mut window = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = std::time::Instant::now();
        let mut closed_unlogged = 0;
        if window.started.is_none_or(|started| now.duration_since(started) >= REFUSAL_LOG_WINDOW) {
            closed_unlogged = std::mem::take(&mut window.unlogged);
            window.started = Some(now);
            window.logged = 0;
        }
        if window.logged < REFUSALS_LOGGED_PER_WINDOW {
            window.logged += 1;
            (true, closed_unlogged)
        } else {
            window.unlogged += 1;
            (false, closed_unlogged)
        }
    }
}

mod commit;
mod highwater;
mod pressure;

pub use pressure::{
    ACCEPT_BACKOFF_MAX, ACCEPT_BACKOFF_START, DEFAULT_MAX_PER_PEER, FALLBACK_MAX_CONNECTIONS, FILE_RESERVE, OpenFiles,
    PRESSURE_LOG_INTERVAL, default_max_connections,
};
use pressure::{PressureLog, Registered, Registry, TrackedBody};

/// How long a client may take and how many may be connected: what keeps slow
/// or many clients from stopping the witness (see the README's
/// "Configuration").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// The request line and headers must arrive within this (else the
    /// connection is closed); it applies to each request of a kept-alive
    /// connection too.
    pub header_timeout: Duration,
    /// The body must arrive within this (else 408).
    pub body_timeout: Duration,
    /// Connections served at once. When full, the oldest idle connection (no
    /// complete request header since it was opened or last answered) is
    /// closed to make room; a newcomer is refused only when every
    /// connection is busy. Default: the open-file soft limit less
    /// [`FILE_RESERVE`]; a larger value is lowered to that at start, with a
    /// warning.
    pub max_connections: usize,
    /// Connections one peer (an IPv4 address, or an IPv6 /64) may hold at once. At the cap, the
    /// peer's own oldest idle connection is closed to make room; a
    /// newcomer is refused only when all of the peer's are busy. Default
    /// [`DEFAULT_MAX_PER_PEER`].
    pub max_per_peer: usize,
    /// On shutdown, how long connections in flight may take to finish.
    pub shutdown_grace: Duration,
}

impl Default for ServerLimits {
    /// Reads the process's open-file limit for `max_connections`, so raise
    /// it first ([`OpenFiles::raise`]) where wanted.
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_connections: default_max_connections(),
            max_per_peer: DEFAULT_MAX_PER_PEER,
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

impl ServerLimits {
    /// The limits as served: `max_connections` lowered to what fits under
    /// the open-file soft limit now in force (with a warning); zero caps
    /// refused.
    fn effective(mut self) -> Result<Self, ServerError> {
        if self.max_connections == 0 || self.max_per_peer == 0 {
            return Err(ServerError::Config("max_connections and max_per_peer must be at least 1".into()));
        }
        match OpenFiles::current() {
            Ok(files) if self.max_connections > files.connection_ceiling() => {
                tracing::warn!(
                    target: LOG_TARGET,
                    "max_connections {} does not fit under the open-file limit ({} soft, {} hard, {FILE_RESERVE} kept \
                     for the state file, logs and listener): serving at most {} connections",
                    self.max_connections,
                    files.soft,
                    files.hard,
                    files.connection_ceiling()
                );
                self.max_connections = files.connection_ceiling();
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(target: LOG_TARGET, "cannot read the open-file limit: {err}"),
        }
        Ok(self)
    }
}

/// The time source for cosignature timestamps (POSIX seconds).
pub trait Clock: Send + Sync {
    /// Now, in seconds since the epoch. Never 0.
    fn now(&self) -> u64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_secs().max(1))
    }
}

/// A log this witness watches: its origin and the keys it trusts to sign it.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// The checkpoint origin.
    pub origin: String,
    /// The log's note verifier keys (algorithm 0x01).
    pub keys: Vec<VerifierKey>,
}

/// Everything a witness server needs.
pub struct WitnessConfig {
    /// The witness's cosigning key.
    pub cosigner: Cosigner,
    /// Further cosigning keys (an ML-DSA-44 key beside an Ed25519 one, or a
    /// key being rotated in): each adds its own line to every 200 answer and
    /// to the note the monitor endpoint serves, after `cosigner`'s. No two
    /// keys may share a name and key id.
    pub extra_cosigners: Vec<Cosigner>,
    /// The logs it watches.
    pub logs: Vec<LogConfig>,
    /// The time source for cosignature timestamps.
    pub clock: Arc<dyn Clock>,
}

impl WitnessConfig {
    /// Every cosigning key, `cosigner` first.
    pub fn cosigners(&self) -> impl Iterator<Item = &Cosigner> {
        std::iter::once(&self.cosigner).chain(&self.extra_cosigners)
    }
}

/// A server failure.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The state file cannot be opened or written.
    #[error("witness state {path}: {reason}")]
    State {
        /// The state file.
        path: String,
        /// What failed.
        reason: String,
    },
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {reason}")]
    Listen {
        /// The address.
        addr: String,
        /// What failed.
        reason: String,
    },
    /// The configuration cannot be served.
    #[error("configuration: {0}")]
    Config(String),
}

struct Shared {
    config: WitnessConfig,
    /// The state, used by the one commit leader; `None` after an I/O error
    /// latched it (a full disk), until it is opened again.
    db: std::sync::Mutex<Option<Database>>,
    /// Where the state is, to open it again after an I/O error.
    state_path: std::path::PathBuf,
    limits: ServerLimits,
    cosigning: commit::GroupCommit<Submission>,
    refusals: RefusalLog,
    /// The high-water mark's path, and what it holds (the state's latest
    /// trees as of the last commit): written by the one commit leader.
    held: std::sync::Mutex<Marked>,
    /// State commits since the last one flushed (see [`Shared::store_batch`]).
    unflushed_commits: std::sync::atomic::AtomicU64,
}

/// The state is flushed every this many commits (and at shutdown): how much
/// a crash leaves the next start to bring forward from the high-water mark.
const STATE_FLUSH_EVERY: u64 = 1024;

/// The trees the state holds, the mark on disk, and whether it holds them
/// too (false after a failed write of the mark, until one succeeds). The
/// monitor endpoint serves from here while it does.
struct Marked {
    held: highwater::Held,
    file: highwater::MarkFile,
    written: bool,
}

/// An `add-checkpoint` whose note verified, waiting for its write transaction.
struct Submission {
    request: AddCheckpointRequest,
    signed: SignedCheckpoint,
    verified: witness::VerifiedNote,
}

/// A running witness server: an HTTP/1.1 server on tokio. Dropping it (or
/// [`WitnessServer::shutdown`]) stops accepting, lets connections in flight
/// finish within the grace period, and stops.
pub struct WitnessServer {
    addr: SocketAddr,
    limits: ServerLimits,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for WitnessServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WitnessServer").field("addr", &self.addr).finish()
    }
}

fn state_error(path: &Path, err: impl std::fmt::Display) -> ServerError {
    ServerError::State { path: path.display().to_string(), reason: err.to_string() }
}

/// What to do about a state the witness cannot trust: it no longer knows
/// what it last cosigned, and starting afresh (or on an older copy) would let
/// a log begin again from any tree.
const DAMAGED_STATE_REMEDY: &str = "the witness no longer knows the last checkpoint it cosigned for each log, so it \
     will not cosign on it; restore a copy of the file only if it holds the latest checkpoint cosigned for every log, \
     or retire this witness key (make a new one with `keygen`, give its logs the new verifier key) and start on a \
     new state file";

/// Opens the state (R-WIT-6): creates it only where no file is, never over an
/// existing empty file (a state that lost its contents, which the database
/// would initialise as new: trust on first use again for every log); verifies
/// every page's checksum at open, so a file damaged outside the witness is
/// refused rather than trusted (or a panic). A newest commit failing its
/// checksum after a crash is taken by the database for a torn write and
/// falls back to the commit before; if that forgot a checkpoint answered
/// 200, the high-water mark holds it and the state is refused at start (see
/// [`check_high_water`]).
fn open_state(path: &Path) -> Result<Database, ServerError> {
    let mut builder = Database::builder();
    builder.set_check_integrity_on_open(true);
    match std::fs::metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            // The witness makes its state file, never the folder: a path
            // mistyped is named with what to do, not "No such file".
            if let Some(folder) = path.parent().filter(|folder| !folder.as_os_str().is_empty())
                && !folder.is_dir()
            {
                return Err(state_error(
                    path,
                    format!(
                        "its folder {} does not exist: the witness makes the state file, never its folder; create \
                         the folder, or give --state a path in an existing one",
                        folder.display()
                    ),
                ));
            }
            return builder.create(path).map_err(|err| state_error(path, err));
        }
        Err(err) => return Err(state_error(path, err)),
        // The high-water mark holds every checkpoint answered: the state is
        // made anew and brought forward to it (see `check_high_water`), as a
        // deleted one is.
        Ok(meta) if meta.len() == 0 && highwater::path_for(path).exists() => {
            tracing::warn!(target: LOG_TARGET, "the state file is empty: made anew, to be brought forward to its high-water mark");
            return builder.create(path).map_err(|err| state_error(path, err));
        }
        Ok(meta) if meta.len() == 0 => {
            return Err(state_error(
                path,
                format!(
                    "the file is empty and no high-water mark is beside it: it held what this witness cosigned \
                     and lost it (truncated); \
                     {DAMAGED_STATE_REMEDY}; only a witness that has never cosigned may delete the empty file \
                     to start afresh"
                ),
            ));
        }
        Ok(_) => {}
    }
    builder.open(path).map_err(|err| match err {
        redb::DatabaseError::DatabaseAlreadyOpen => state_error(
            path,
            "another process (a second witness?) has this state open, and one state serves one witness process: \
             stop the other, or give this witness its own state file and key",
        ),
        redb::DatabaseError::Storage(redb::StorageError::Corrupted(_)) => {
            state_error(path, format!("the file is damaged ({err}); {DAMAGED_STATE_REMEDY}"))
        }
        other => state_error(path, other),
    })
}

/// Whether the state was closed cleanly when it was last open: `None` when
/// it holds no record of it (brand new, or written by a build before it).
fn closed_cleanly(db: &Database, state_path: &Path) -> Result<Option<bool>, ServerError> {
    let read = || -> Result<Option<bool>, redb::Error> {
        let txn = db.begin_read()?;
        let table = match txn.open_table(LIFECYCLE) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(err) => return Err(err.into()),
        };
        Ok(table.get(LIFECYCLE_KEY)?.map(|closed| closed.value() == CLOSED_CLEANLY))
    };
    read().map_err(|err| state_error(state_path, err))
}

/// Records in the state how it is closed (`how`: [`OPEN`] or
/// [`CLOSED_CLEANLY`]), committed durably with every commit before it.
fn record_lifecycle(db: &Database, how: &str) -> Result<(), redb::Error> {
    let txn = db.begin_write()?;
    txn.open_table(LIFECYCLE)?.insert(LIFECYCLE_KEY, how)?;
    txn.commit()?;
    Ok(())
}

/// Holds the state to its high-water mark (see the `highwater` module): for
/// every origin, the later of the two is taken, the state brought forward to
/// the mark where it is behind (an older copy put back, a lost file, a crash
/// before the state was flushed) and the restore logged; two roots for one
/// size are damage, refused. `remembered` is held to as the mark is: what a
/// running witness held when an I/O error closed its state (empty at a
/// start), which includes every checkpoint it answered 200 even when the
/// mark on disk no longer does (removed, or an older copy put back, while
/// the state was closed). With `unclean` (a start on a state not closed
/// cleanly), a missing mark is refused: the state's commits since its last
/// flush were left to the mark, so a crash may have taken from it
/// checkpoints answered 200, and a mark made from it would let the witness
/// cosign forks of them. Then writes the mark from the result, which is
/// returned.
fn check_high_water(
    db: &Database,
    state_path: &Path,
    mark: &Path,
    remembered: &highwater::Held,
    unclean: bool,
) -> Result<Marked, ServerError> {
    // Origin -> what is wrong with its entry in the state (changed outside
    // the witness): left out of what it holds, to be brought forward from
    // the mark, or the start refused naming it.
    let mut damaged = std::collections::BTreeMap::new();
    let mut read = || -> Result<highwater::Held, redb::Error> {
        let txn = db.begin_read()?;
        let table = txn.open_table(LATEST)?;
        let mut held = highwater::Held::new();
        for entry in table.iter()? {
            let (origin, value) = entry?;
            let (size, root, note) = value.value();
            let origin = origin.value().to_owned();
            let Ok(root) = RootHash::try_from(root) else {
                damaged.insert(origin, "its root is not 32 bytes");
                continue;
            };
            let latest = highwater::Latest { tree: Tree::new(size, root), note: note.to_owned() };
            match check_entry(&origin, &latest) {
                Ok(()) => {
                    held.insert(origin, latest);
                }
                Err(why) => {
                    damaged.insert(origin, why);
                }
            }
        }
        Ok(held)
    };
    let mut held = read().map_err(|err| state_error(state_path, err))?;
    let keep_the_state = "remove the mark only if the state file is known to hold the latest checkpoints cosigned";
    let marked = highwater::read(mark).map_err(|err| state_error(state_path, format!("{err}; {keep_the_state}")))?;
    if marked.is_none() && unclean {
        return Err(state_error(
            state_path,
            format!(
                "its high-water mark {} is missing and the state was not closed cleanly (the witness stopped \
                 without its shutdown: killed, crashed, or its machine lost power), so the state may have lost \
                 checkpoints this witness cosigned (its last commits were left to the mark) and it would cosign \
                 forks of them; put the mark back (the file as the witness left it, never an older copy) and start \
                 again; if it is lost, {DAMAGED_STATE_REMEDY}",
                mark.display()
            ),
        ));
    }
    for (origin, latest) in marked.iter().flat_map(|(marked, _)| marked) {
        check_entry(origin, latest).map_err(|why| {
            state_error(
                state_path,
                format!("the high-water mark {}: the entry for {origin}: {why}; {keep_the_state}", mark.display()),
            )
        })?;
    }
    // The mark first, then what the running witness held (`remembered`),
    // each against the state as brought forward so far.
    let mut forward = highwater::Held::new();
    // Origin -> whether what the witness held (not the mark) moved it last.
    let mut behind = std::collections::BTreeMap::new();
    let on_disk = marked.as_ref().map(|(marked, _)| marked);
    for (remembering, origin, latest) in on_disk
        .into_iter()
        .flatten()
        .map(|(origin, latest)| (false, origin, latest))
        .chain(remembered.iter().map(|(origin, latest)| (true, origin, latest)))
    {
        let stored = forward.get(origin).or_else(|| held.get(origin)).map(|stored| stored.tree);
        match stored {
            Some(stored) if stored.size > latest.tree.size => {}
            Some(stored) if stored.size == latest.tree.size && stored.root == latest.tree.root => {}
            Some(stored) if stored.size == latest.tree.size => {
                let which = if remembering {
                    format!(
                        "the file or its high-water mark {} and what this witness held when it closed the state",
                        mark.display()
                    )
                } else {
                    format!("the file and its high-water mark {}", mark.display())
                };
                return Err(state_error(
                    state_path,
                    format!(
                        "{which} hold two roots for size {} of {origin} ({} and {}): one of them is damaged; \
                         {DAMAGED_STATE_REMEDY}",
                        stored.size, stored.root, latest.tree.root
                    ),
                ));
            }
            _ => {
                forward.insert(origin.clone(), latest.clone());
                behind.insert(origin.clone(), remembering);
            }
        }
    }
    for (origin, why) in &damaged {
        if !forward.contains_key(origin) {
            return Err(state_error(
                state_path,
                format!(
                    "the entry for {origin}: {why} (the file was changed outside the witness), and no high-water \
                     mark holds that log; {DAMAGED_STATE_REMEDY}"
                ),
            ));
        }
        tracing::warn!(
            target: LOG_TARGET,
            origin = origin.as_str(),
            "the state's entry is damaged ({why}): brought forward from the high-water mark"
        );
    }
    if !forward.is_empty() {
        let bring_forward = || -> Result<(), redb::Error> {
            let txn = db.begin_write()?;
            {
                let mut table = txn.open_table(LATEST)?;
                for (origin, latest) in &forward {
                    let root = latest.tree.root.as_bytes().as_slice();
                    table.insert(origin.as_str(), (latest.tree.size, root, latest.note.as_str()))?;
                }
            }
            txn.commit()?;
            Ok(())
        };
        bring_forward().map_err(|err| state_error(state_path, err))?;
        // Logged once brought forward: a reopen that fails (the disk still
        // full) is tried again by each submission, and logs nothing here.
        for (origin, remembering) in behind {
            let state_size = held.get(&origin).map_or(0, |stored| stored.tree.size);
            let cosigned_size = forward.get(&origin).map_or(0, |latest| latest.tree.size);
            if remembering {
                tracing::warn!(
                    target: LOG_TARGET,
                    origin = origin.as_str(),
                    state_size,
                    cosigned_size,
                    "the state and its high-water mark were behind what this witness held when it closed the state \
                     (their last writes failed, or the mark was removed or an older copy put back while it was \
                     closed): brought forward to the checkpoint last cosigned"
                );
            } else {
                tracing::warn!(
                    target: LOG_TARGET,
                    origin = origin.as_str(),
                    state_size,
                    cosigned_size,
                    "the state was behind its high-water mark (an older copy of the file put back, the file lost, or \
                     a crash before it was flushed): brought forward to the checkpoint last cosigned"
                );
            }
        }
        held.extend(forward);
    }
    let writing =
        |err: std::io::Error| state_error(state_path, format!("writing the high-water mark {}: {err}", mark.display()));
    let file = match marked {
        Some((_, mut file)) => {
            file.write(&held).map_err(writing)?;
            file
        }
        None => highwater::MarkFile::create(mark, &held).map_err(writing)?,
    };
    Ok(Marked { held, file, written: true })
}

/// What is wrong with an entry of the state or the mark, read back from
/// disk: a size 0 must carry the empty tree's root, and the note must be a
/// checkpoint of the entry's origin, size and root (it is what the monitor
/// endpoint serves as cosigned).
fn check_entry(origin: &str, latest: &highwater::Latest) -> Result<(), &'static str> {
    if latest.tree.size == 0 && latest.tree.root != RootHash::empty() {
        return Err("its size is 0 but its root is not the empty tree's");
    }
    let checkpoint = witness::split_note(&latest.note)
        .ok()
        .and_then(|(text, _)| Checkpoint::parse(text).ok())
        .ok_or("its note is not a signed checkpoint")?;
    if checkpoint.origin() != origin || checkpoint.tree() != latest.tree {
        return Err("its note is a checkpoint of another origin, size or root than the entry's");
    }
    Ok(())
}

/// Opens the state at `state_path` and holds it to its high-water mark:
/// what a start does, and what a witness whose state an I/O error latched
/// (redb refuses every later write until it is opened again) does before
/// its next commit, so a disk that filled and was given room again is
/// served again without a restart: `reopening` is then what the witness
/// held, and the state is held to it too (see [`check_high_water`]).
///
/// At a start (`reopening` is `None`) a state recorded open, not closed
/// cleanly ([`LIFECYCLE`]), is refused without its mark. The state is then
/// recorded open (durably, once the mark is written: a crash before that
/// leaves a state without a record only if nothing was cosigned on it)
/// until a clean shutdown records it closed ([`Shared::flush_state`]). A
/// state with no record, brand new or written by a build before it, is
/// taken without its mark as before: builds before the mark committed every
/// cosignature durably.
fn open_checked(state_path: &Path, reopening: Option<&highwater::Held>) -> Result<(Database, Marked), ServerError> {
    let db = open_state(state_path)?;
    let unclean = reopening.is_none() && closed_cleanly(&db, state_path)? == Some(false);
    let txn = db.begin_write().map_err(|err| state_error(state_path, err))?;
    txn.open_table(LATEST).map_err(|err| state_error(state_path, err))?;
    txn.commit().map_err(|err| state_error(state_path, err))?;
    let remembered = reopening.cloned().unwrap_or_default();
    let marked = check_high_water(&db, state_path, &highwater::path_for(state_path), &remembered, unclean)?;
    record_lifecycle(&db, OPEN).map_err(|err| state_error(state_path, err))?;
    Ok((db, marked))
}

/// Whether `err` leaves the state unusable until it is opened again.
fn latches(err: &redb::Error) -> bool {
    matches!(err, redb::Error::Io(_) | redb::Error::PreviousIo)
}

/// What the high-water mark beside the state at `state_path` holds: the
/// latest tree cosigned for each origin (`None` when there is no mark). For
/// an operator's check of a state and its mark before a restore.
pub fn high_water_mark(state_path: &Path) -> Result<Option<std::collections::BTreeMap<String, Tree>>, ServerError> {
    let held = highwater::read(&highwater::path_for(state_path)).map_err(|err| state_error(state_path, err))?;
    Ok(held.map(|(held, _)| held.into_iter().map(|(origin, latest)| (origin, latest.tree)).collect()))
}

impl WitnessServer {
    /// Opens (or creates) the state at `state_path` and serves on `listen`
    /// (`127.0.0.1:0` picks a free port; see [`WitnessServer::addr`]).
    pub fn start(config: WitnessConfig, state_path: &Path, listen: &str) -> Result<Self, ServerError> {
        Self::start_with(config, state_path, listen, ServerLimits::default())
    }

    /// As [`WitnessServer::start`], with explicit limits.
    pub fn start_with(
        config: WitnessConfig,
        state_path: &Path,
        listen: &str,
        limits: ServerLimits,
    ) -> Result<Self, ServerError> {
        let own: Vec<VerifierKey> = config.cosigners().map(Cosigner::verifier_key).collect();
        for (i, log) in config.logs.iter().enumerate() {
            // Quoted (escaped) and cut: an origin may be any text here.
            let shown: String = log.origin.chars().take(40).collect();
            if let Err(err) = witness::Origin::new(&log.origin) {
                return Err(ServerError::Config(format!(
                    "log {shown:?}: no checkpoint can carry this origin ({err}); give the log's origin line exactly"
                )));
            }
            if config.logs.iter().skip(i + 1).any(|other| other.origin == log.origin) {
                return Err(ServerError::Config(format!(
                    "log {shown:?}: listed twice; list it once, with all its keys"
                )));
            }
            if log.keys.iter().any(|key| own.iter().any(|own| key.public_key() == own.public_key())) {
                return Err(ServerError::Config(format!(
                    "log {}: the witness's own key is listed as a log key; a witness cannot witness itself",
                    log.origin
                )));
            }
            // Only Ed25519 note signatures (0x01) verify as a log's signature
            // here: a log listed with another type of key (a witness's
            // cosignature key, say) would have every checkpoint refused 403
            // by a witness that started as if all were well.
            if let Some(key) = log.keys.iter().find(|key| key.algorithm() != witness::ALG_ED25519) {
                return Err(ServerError::Config(format!(
                    "log {}: the key {key} is of type 0x{:02x}, not an Ed25519 note key (0x01): no checkpoint \
                     signature can verify under it",
                    log.origin,
                    key.algorithm()
                )));
            }
        }
        // A subtree/v1 (ML-DSA-44) cosignature holds the origin in at most
        // 255 bytes: such a witness could cosign nothing of a longer one.
        if own.iter().any(|key| key.algorithm() == witness::ALG_ML_DSA_44)
            && let Some(log) =
                config.logs.iter().find(|log| log.origin.len() > witness::cosignature::MAX_SUBTREE_ORIGIN_LEN)
        {
            return Err(ServerError::Config(format!(
                "log {}: its origin is {} bytes, and an ML-DSA-44 cosignature (subtree/v1) holds at most {}: \
                 this witness could cosign none of its checkpoints; shorten the origin or cosign it with an \
                 Ed25519 key alone",
                log.origin,
                log.origin.len(),
                witness::cosignature::MAX_SUBTREE_ORIGIN_LEN
            )));
        }
        for (i, key) in own.iter().enumerate() {
            if own.iter().skip(i + 1).any(|other| other.name() == key.name() && other.key_id() == key.key_id()) {
                return Err(ServerError::Config(format!(
                    "the cosigning key {key} is given twice (or two keys share its name and key id)"
                )));
            }
        }
        let limits = limits.effective()?;
        let (db, marked) = open_checked(state_path, None)?;

        let listen_error = |reason: String| ServerError::Listen { addr: listen.to_owned(), reason };
        let listener = std::net::TcpListener::bind(listen).map_err(|err| listen_error(err.to_string()))?;
        listener.set_nonblocking(true).map_err(|err| listen_error(err.to_string()))?;
        let addr = listener.local_addr().map_err(|err| listen_error(err.to_string()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("agentplane-witness")
            .enable_all()
            .build()
            .map_err(|err| listen_error(err.to_string()))?;
        tracing::info!(
            target: LOG_TARGET,
            max_connections = limits.max_connections,
            max_per_peer = limits.max_per_peer,
            header_timeout_ms = limits.header_timeout.as_millis(),
            body_timeout_ms = limits.body_timeout.as_millis(),
            "limits"
        );
        let shared = Arc::new(Shared {
            config,
            db: std::sync::Mutex::new(Some(db)),
            state_path: state_path.to_owned(),
            limits,
            cosigning: commit::GroupCommit::new(),
            refusals: RefusalLog::default(),
            held: std::sync::Mutex::new(marked),
            unflushed_commits: std::sync::atomic::AtomicU64::new(0),
        });
        let serving = Arc::clone(&shared);
        let (shutdown, stop) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("agentplane-witness-accept".into())
            .spawn(move || {
                let flushing = Arc::clone(&serving);
                runtime.block_on(async move {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => serve(listener, serving, stop).await,
                        Err(err) => tracing::error!(target: LOG_TARGET, "listening: {err}"),
                    }
                });
                // Dropping the runtime waits out the submissions still
                // being stored (blocking tasks past the grace period), so
                // none commits after the state is recorded closed cleanly.
                drop(runtime);
                flushing.flush_state();
            })
            .map_err(|err| listen_error(err.to_string()))?;
        Ok(Self { addr, limits, shared, shutdown, thread: Some(thread) })
    }

    /// The limits it serves with (`max_connections` as lowered to fit
    /// under the open-file limit).
    pub fn limits(&self) -> ServerLimits {
        self.limits
    }

    /// How many write transactions have stored cosigned checkpoints: fewer
    /// than the checkpoints cosigned when submissions arrived together and
    /// shared one (group commit).
    pub fn state_commits(&self) -> u64 {
        self.shared.cosigning.commits()
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://addr`: both the submission and the monitoring prefix.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets connections in flight finish (within the grace
    /// period), and returns when the server has stopped.
    pub fn shutdown(mut self) {
        self.stop();
    }

    /// Blocks until the server stops (after [`WitnessServer::shutdown`] from
    /// elsewhere, or never).
    pub fn wait(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// A handle that stops the server from another thread (a signal handler).
    pub fn stopper(&self) -> impl Fn() + Send + Sync + 'static {
        let shutdown = self.shutdown.clone();
        move || {
            let _ = shutdown.send(true);
        }
    }

    fn stop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for WitnessServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Accepts connections until told to stop, each on a task of its own (a
/// client that stalls holds only its own task), at most `max_connections`
/// and `max_per_peer` from one address, idle ones closed first to make room.
/// Accept errors pause the loop (doubling up to [`ACCEPT_BACKOFF_MAX`]; out
/// of descriptors, an idle connection is closed instead) and are logged at
/// most once per [`PRESSURE_LOG_INTERVAL`].
async fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let limits = shared.limits;
    let registry = Arc::new(Registry::new(limits.max_connections, limits.max_per_peer));
    let mut pressure = PressureLog::new();
    let mut report = tokio::time::interval(PRESSURE_LOG_INTERVAL);
    report.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut backoff = ACCEPT_BACKOFF_START;
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => accepted,
            // Reap finished connections as we go, so the set stays small.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            _ = report.tick() => {
                pressure.flush();
                continue;
            }
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                backoff = ACCEPT_BACKOFF_START;
                accepted
            }
            Err(err) => {
                pressure.accept_error(&err);
                if pressure::concerns_one_connection(&err) {
                    continue;
                }
                if pressure::out_of_descriptors(&err) {
                    if let Some(max) = registry.follow_open_file_limit() {
                        tracing::warn!(
                            target: LOG_TARGET,
                            "the open-file limit was lowered under the running server: serving at most {max} connections"
                        );
                    }
                    // The oldest idle connection gives a descriptor back.
                    if let Some(victim) = registry.evict_oldest_idle() {
                        pressure.idle_closed(1);
                        pressure::until_closed(&victim).await;
                        continue;
                    }
                }
                tokio::select! {
                    _ = stop.changed() => break,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        let admitted = match registry.admit(peer.ip()) {
            Ok(admitted) => admitted,
            Err(refusal) => {
                tracing::debug!(target: LOG_TARGET, %peer, "refused: {refusal:?}");
                pressure.refused(refusal);
                drop(stream);
                continue;
            }
        };
        pressure.idle_closed(admitted.evicted.len());
        // Their descriptors back before the next accept.
        for victim in &admitted.evicted {
            pressure::until_closed(victim).await;
        }
        let shared = Arc::clone(&shared);
        let mut stop = stop.clone();
        let registered = Registered { registry: Arc::clone(&registry), id: admitted.id, signals: admitted.signals };
        connections.spawn(async move {
            // Declared before the connection: dropped (and the registry told) after the socket is closed.
            let registered = registered;
            let (registry, id) = (Arc::clone(&registered.registry), registered.id);
            let service = hyper::service::service_fn(move |request| {
                // A complete request header: busy until the response is written.
                let busy = registry.busy(id);
                let shared = Arc::clone(&shared);
                async move { Ok::<_, Infallible>(shared.handle(request).await.map(|body| TrackedBody::new(body, busy))) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_header_size(MAX_HEADER_BYTES)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(err) = result {
                        tracing::debug!(target: LOG_TARGET, %peer, "connection: {err}");
                    }
                }
                // Closed to make room (it was idle).
                () = registered.signals.close.notified() => {}
                _ = stop.changed() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    // Stopped: no new connections; those in flight get the grace period.
    pressure.flush();
    let _ =
        tokio::time::timeout(limits.shutdown_grace, async { while connections.join_next().await.is_some() {} }).await;
}

/// A status, a content type and a body.
struct Answer {
    status: u16,
    content_type: &'static str,
    body: String,
    allow: Option<&'static str>,
}

impl Answer {
    fn text(status: u16, body: impl Into<String>) -> Self {
        Self { status, content_type: "text/plain; charset=utf-8", body: body.into(), allow: None }
    }

    fn not_allowed(allow: &'static str) -> Self {
        Self { allow: Some(allow), ..Self::text(405, format!("method not allowed; use {allow}\n")) }
    }

    fn into_response(self) -> Response<Full<Bytes>> {
        let mut response = Response::new(Full::new(Bytes::from(self.body)));
        *response.status_mut() = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(self.content_type));
        if let Some(allow) = self.allow {
            response.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
        }
        response
    }
}

impl Shared {
    async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path().to_owned();
        let method = request.method().clone();
        let answer = match (method.clone(), path.as_str()) {
            (Method::POST, ADD_CHECKPOINT_PATH) => match self.read_body(request, MAX_REQUEST_BYTES).await {
                Err(answer) => answer,
                Ok(body) => {
                    let shared = Arc::clone(&self);
                    tokio::task::spawn_blocking(move || shared.add_checkpoint(&body))
                        .await
                        .unwrap_or_else(|err| Answer::text(500, format!("cosigning failed: {err}\n")))
                }
            },
            (_, ADD_CHECKPOINT_PATH) => Answer::not_allowed("POST"),
            (Method::POST, SIGN_SUBTREE_PATH) => match self.read_body(request, MAX_SIGN_SUBTREE_BYTES).await {
                Err(answer) => answer,
                Ok(body) => {
                    let shared = Arc::clone(&self);
                    tokio::task::spawn_blocking(move || shared.sign_subtree(&body))
                        .await
                        .unwrap_or_else(|err| Answer::text(500, format!("signing failed: {err}\n")))
                }
            },
            (_, SIGN_SUBTREE_PATH) => Answer::not_allowed("POST"),
            (Method::GET, _) => {
                let shared = Arc::clone(&self);
                let lookup = path.clone();
                tokio::task::spawn_blocking(move || shared.monitor(&lookup))
                    .await
                    .unwrap_or_else(|err| Answer::text(500, format!("reading state failed: {err}\n")))
            }
            (_, other) if other.ends_with("/checkpoint") => Answer::not_allowed("GET"),
            _ => Answer::text(404, "not found\n"),
        };
        // A 409 is the protocol's normal exchange (the log sent an old size
        // and resubmits with the one in the body), not an error.
        if answer.status == 409 {
            let (method, path) = (clipped(method.as_str()), clipped(&path));
            tracing::debug!(target: LOG_TARGET, %method, ?path, status = answer.status, "conflict: {}", answer.body.trim_end());
        } else if answer.status >= 400 {
            let (one_by_one, unlogged) = self.refusals.admit();
            if unlogged > 0 {
                tracing::warn!(
                    target: LOG_TARGET,
                    "{unlogged} more refused requests were not logged one by one in the last window (at most \
                     {REFUSALS_LOGGED_PER_WINDOW} a {} s)",
                    REFUSAL_LOG_WINDOW.as_secs()
                );
            }
            if one_by_one {
                let (method, path) = (clipped(method.as_str()), clipped(&path));
                tracing::warn!(target: LOG_TARGET, %method, ?path, status = answer.status, "refused: {}", answer.body.trim_end());
            }
        }
        answer.into_response()
    }

    /// The request body, at most `limit` bytes, within the body timeout.
    async fn read_body(&self, request: Request<Incoming>, limit: usize) -> Result<Bytes, Answer> {
        let limited = Limited::new(request.into_body(), limit);
        match tokio::time::timeout(self.limits.body_timeout, limited.collect()).await {
            Err(_) => Err(Answer::text(408, "the request body did not arrive in time\n")),
            Ok(Err(err)) if err.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
                Err(Answer::text(400, "request body too large\n"))
            }
            Ok(Err(err)) => Err(Answer::text(400, format!("reading the request: {err}\n"))),
            Ok(Ok(body)) => Ok(body.to_bytes()),
        }
    }

    /// `POST /sign-subtree` (C2SP tlog-witness HEAD, optional): cosigns the
    /// subtree `[start, end)` with timestamp 0 when the reference checkpoint
    /// carries a valid cosignature of this witness and the subtree consistency
    /// proof (draft-ietf-plants-merkle-tree-certs-03 section 4.4) leads from the
    /// subtree to its root. The witness's own cosignature is the whole trust
    /// argument: it cosigned that tree only after proving it extends what it
    /// had cosigned before, so nothing needs reading from the state. Only
    /// ML-DSA-44 keys can sign a subtree (cosignature/v1 has no subtree form);
    /// a witness with none answers 404, as for an endpoint it does not serve.
    fn sign_subtree(&self, body: &[u8]) -> Answer {
        let subtree_signers: Vec<&Cosigner> =
            self.config.cosigners().filter(|cosigner| cosigner.algorithm() == witness::ALG_ML_DSA_44).collect();
        if subtree_signers.is_empty() {
            return Answer::text(404, "this witness holds no ML-DSA-44 key, so it signs no subtrees\n");
        }
        let request = match SignSubtreeRequest::parse(body) {
            Ok(request) => request,
            Err(err) => return Answer::text(400, format!("{err}\n")),
        };
        let (text, signatures) = match witness::split_note(&request.checkpoint_note)
            .and_then(|(text, block)| Ok((text, witness::parse_signature_lines(block)?)))
        {
            Ok(parts) => parts,
            Err(err) => return Answer::text(400, format!("reference checkpoint: {err}\n")),
        };
        let checkpoint = match Checkpoint::parse(text) {
            Ok(checkpoint) => checkpoint,
            Err(err) => return Answer::text(400, format!("reference checkpoint: {err}\n")),
        };
        if !self.config.logs.iter().any(|log| log.origin == checkpoint.origin()) {
            return Answer::text(404, "unknown origin\n");
        }
        let own: Vec<TrustedWitness> =
            self.config.cosigners().filter_map(|cosigner| TrustedWitness::new(cosigner.verifier_key()).ok()).collect();
        match witness::verify_cosignatures(text, &signatures, &own) {
            Ok(report) if !report.valid.is_empty() => {}
            _ => return Answer::text(403, "the reference checkpoint carries no valid cosignature of this witness\n"),
        }
        let tree = checkpoint.tree();
        if request.subtree.end() > tree.size {
            return Answer::text(400, "the subtree ends past the reference checkpoint\n");
        }
        if let Err(err) = tree.verify_subtree(request.subtree, &request.hash, &request.proof) {
            return Answer::text(422, format!("subtree consistency proof: {err}\n"));
        }
        let mut lines = String::new();
        for cosigner in subtree_signers {
            let statement = SubtreeStatement {
                cosigner_name: cosigner.name().to_owned(),
                timestamp: 0,
                origin: checkpoint.origin().to_owned(),
                start: request.subtree.start(),
                end: request.subtree.end(),
                hash: *request.hash.as_bytes(),
            };
            match cosigner.sign_statement(&statement) {
                Ok(line) => lines.push_str(&line.to_line()),
                Err(err) => return Answer::text(500, format!("cannot sign the subtree: {err}\n")),
            }
        }
        Answer::text(200, lines)
    }

    fn monitor(&self, path: &str) -> Answer {
        let Some(hash) = path.strip_prefix('/').and_then(|rest| rest.strip_suffix("/checkpoint")) else {
            return Answer::text(404, "not found\n");
        };
        let Some(log) = self.config.logs.iter().find(|log| origin_hash(&log.origin) == hash) else {
            return Answer::text(404, "unknown origin\n");
        };
        // Served from what the high-water mark holds, never from the state:
        // a state commit is seen by readers before the mark holding it is
        // written (or when its write failed, answered 500), and a note served
        // then is a cosignature that a crash lets the witness contradict.
        // The lock waits out a mark write under way.
        let marked = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !marked.written {
            return Answer::text(503, "state: the high-water mark cannot be written\n");
        }
        match marked.held.get(log.origin.as_str()) {
            Some(latest) => Answer::text(200, latest.note.clone()),
            None => Answer::text(404, "nothing cosigned for this origin\n"),
        }
    }

    fn add_checkpoint(&self, body: &[u8]) -> Answer {
        let request = match AddCheckpointRequest::parse(body) {
            Ok(request) => request,
            Err(err) => return Answer::text(400, format!("{err}\n")),
        };
        let origin = request.checkpoint_note.split('\n').next().unwrap_or_default();
        let Some(log) = self.config.logs.iter().find(|log| log.origin == origin) else {
            return Answer::text(404, "unknown origin\n");
        };
        let keys: Vec<&dyn NoteVerifier> = log.keys.iter().map(|key| key as &dyn NoteVerifier).collect();
        let (signed, verified) = match SignedCheckpoint::open(request.checkpoint_note.as_bytes(), &keys) {
            Ok(opened) => opened,
            Err(CheckpointError::Note(NoteError::InvalidSignature { .. } | NoteError::Unverified { .. })) => {
                return Answer::text(403, "no valid signature from a key trusted for this origin\n");
            }
            Err(err) => return Answer::text(400, format!("{err}\n")),
        };
        if request.old_size > signed.checkpoint().tree().size {
            return Answer::text(400, "old size is larger than the checkpoint size\n");
        }
        self.cosigning.submit(Submission { request, signed, verified }, |batch| self.store_batch(batch))
    }

    /// Checks and stores a batch of submissions in one write transaction,
    /// each against the state the ones before it left; answers each, in
    /// order. Nothing is answered 200 before the high-water mark holding it
    /// is durable, and if the transaction or the mark's write fails, every
    /// submission of the batch gets a 500 (an answer computed from state that
    /// never became durable is not given).
    fn store_batch(&self, batch: &[Submission]) -> Vec<Answer> {
        let mut db = self.db.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if db.is_none() {
            // Everything answered 200 is in what the witness holds, whatever
            // became of the mark on disk while the state was closed.
            let remembered = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner).held.clone();
            match open_checked(&self.state_path, Some(&remembered)) {
                Ok((reopened, marked)) => {
                    tracing::warn!(target: LOG_TARGET, "the state was opened again after an I/O error, and held to its high-water mark");
                    *self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = marked;
                    *db = Some(reopened);
                }
                Err(err) => {
                    // Why, but not where: anyone who replays a log's
                    // checkpoint gets this answer, and the state's directory
                    // (a home, a user name) is the operator's business.
                    let state = self.state_path.display().to_string();
                    let name = self.state_path.file_name().unwrap_or_default().to_string_lossy();
                    let why = err.to_string().replace(&state, &name);
                    let answer = format!("state: opening it again after an I/O error: {why}\n");
                    return batch.iter().map(|_| Answer::text(500, answer.clone())).collect();
                }
            }
        }
        let Some(open) = db.as_ref() else {
            return batch.iter().map(|_| Answer::text(500, "state: not open\n")).collect();
        };
        let stored = || -> Result<Vec<(Answer, Option<String>)>, redb::Error> {
            let mut txn = open.begin_write()?;
            // The state is the working copy: the high-water mark, flushed
            // below before any answer leaves, is what makes a cosigned
            // checkpoint durable, so the state is flushed only now and then
            // (one flush a commit, not two). Whatever a crash takes from it,
            // the next start brings forward from the mark.
            let flush =
                self.unflushed_commits.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1 >= STATE_FLUSH_EVERY;
            if !flush {
                txn.set_durability(redb::Durability::None)?;
            }
            let answers = {
                let mut table = txn.open_table(LATEST)?;
                batch
                    .iter()
                    .map(|submission| self.check_and_store(&mut table, submission))
                    .collect::<Result<Vec<_>, _>>()?
            };
            txn.commit()?;
            if flush {
                self.unflushed_commits.store(0, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(answers)
        };
        let answers = match stored() {
            Ok(answers) => answers,
            Err(err) => {
                if latches(&err) {
                    // Closed now, opened again before the next commit: held
                    // to the mark then, as at a start.
                    tracing::error!(target: LOG_TARGET, "writing the state: {err}; it is opened again before the next commit");
                    *db = None;
                }
                return batch.iter().map(|_| Answer::text(500, format!("state: {err}\n"))).collect();
            }
        };
        drop(db);
        // Durable before the cosignature leaves: the high-water mark holds
        // every checkpoint answered 200. (A batch that moved no tree, all
        // 409s or the same trees again, writes none.)
        let mut marked = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = Vec::with_capacity(answers.len());
        for (submission, (answer, served)) in batch.iter().zip(answers) {
            if let Some(note) = served {
                let checkpoint = submission.signed.checkpoint();
                let tree = checkpoint.tree();
                let moved = marked.held.get(checkpoint.origin()).is_none_or(|latest| latest.tree != tree);
                marked.held.insert(checkpoint.origin().to_owned(), highwater::Latest { tree, note });
                if moved {
                    marked.written = false;
                }
            }
            out.push(answer);
        }
        if marked.written {
            return out;
        }
        let Marked { held, file, .. } = &mut *marked;
        match file.write(held) {
            Ok(()) => {
                marked.written = true;
                out
            }
            Err(err) => out
                .into_iter()
                .map(|answer| {
                    if answer.status == 200 {
                        Answer::text(500, format!("state: writing the high-water mark: {err}\n"))
                    } else {
                        answer
                    }
                })
                .collect(),
        }
    }

    /// Flushes the state (at shutdown), recording it closed cleanly in the
    /// same durable commit: it then holds every tree its mark does, so a
    /// start may make a mark from it. Its commits since the last flush are
    /// in the mark already, so a failure here loses nothing (the state stays
    /// recorded open, refused at start without its mark), and a state
    /// closed after an I/O error stays recorded open.
    fn flush_state(&self) {
        let db = self.db.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(open) = db.as_ref() else { return };
        if let Err(err) = record_lifecycle(open, CLOSED_CLEANLY) {
            tracing::warn!(target: LOG_TARGET, "flushing the state at shutdown: {err} (the high-water mark holds it)");
        }
    }

    /// The check of the stored size and the update happen in one write
    /// transaction, so two racing submissions cannot roll the state back.
    fn check_and_store(
        &self,
        table: &mut redb::Table<'_, &'static str, (u64, &'static [u8], &'static str)>,
        submission: &Submission,
    ) -> Result<(Answer, Option<String>), redb::Error> {
        let Submission { request, signed, verified } = submission;
        let checkpoint = signed.checkpoint();
        let new = checkpoint.tree();
        let stored = match table.get(checkpoint.origin())? {
            Some(entry) => {
                let (size, root, _) = entry.value();
                match RootHash::try_from(root) {
                    Ok(root) => Tree::new(size, root),
                    // Never cosign on top of a state we cannot read.
                    Err(_) => {
                        return Ok((Answer::text(500, "stored state for this origin is damaged\n"), None));
                    }
                }
            }
            None => Tree::empty(),
        };
        if request.old_size != stored.size {
            let conflict = Answer {
                status: 409,
                content_type: SIZE_CONTENT_TYPE,
                body: format!("{}\n", stored.size),
                allow: None,
            };
            return Ok((conflict, None));
        }
        // The one rule (tlog's): a size-0 checkpoint carries the empty
        // root, old size 0 takes no proof, equal sizes need equal roots.
        if let Err(err) = new.extends(&stored, &request.proof) {
            // Evidence is two roots the log signed for one size. A proof that
            // does not verify proves nothing about the log: it is also what
            // anyone sends who replays the log's public newer checkpoint with
            // a forged proof, so it is an ordinary refusal (logged within the
            // refusal log's limit), never an integrity alarm.
            if stored.size > 0 && matches!(err, tlog::VerifyError::SameSizeDifferentRoots { .. }) {
                tracing::warn!(
                    target: "agentplane.witness.integrity",
                    witness = self.config.cosigner.name(),
                    origin = checkpoint.origin(),
                    cosigned_size = stored.size,
                    cosigned_root = %stored.root,
                    size = new.size,
                    root = %new.root,
                    "refused a second root the log signed for a size already cosigned (a fork): {err}"
                );
            }
            return Ok((Answer::text(422, format!("{err}\n")), None));
        }
        let timestamp = self.config.clock.now();
        let text = checkpoint.to_text();
        let mut cosignatures = Vec::with_capacity(1 + self.config.extra_cosigners.len());
        for cosigner in self.config.cosigners() {
            match cosigner.cosign(&text, timestamp) {
                Ok(line) => cosignatures.push(line),
                Err(err) => return Ok((Answer::text(500, format!("cannot cosign: {err}\n")), None)),
            }
        }
        let served = witness::assemble(verified.text(), verified.verified_signatures().iter().chain(&cosignatures));
        table.insert(checkpoint.origin(), (new.size, new.root.as_bytes().as_slice(), served.as_str()))?;
        Ok((
            Answer::text(200, cosignatures.iter().map(witness::NoteSignature::to_line).collect::<String>()),
            Some(served),
        ))
    }
}
