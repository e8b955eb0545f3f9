#![doc = include_str!("../README.md")]

// A witness that remembers (R-WIT-6): serves C2SP tlog-witness
// `add-checkpoint` and the monitor endpoint, keeps each origin's latest
// cosigned checkpoint durably in redb, and cosigns only a checkpoint it can
// prove extends the last one it cosigned.

use std::io::Read as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

use redb::{Database, ReadableDatabase as _, ReadableTable as _, TableDefinition};
use tiny_http::{Header, Method, Request, Response};
use tlog::{RootHash, Tree};

use witness::protocol::{ADD_CHECKPOINT_PATH, AddCheckpointRequest, MAX_REQUEST_BYTES, SIZE_CONTENT_TYPE, origin_hash};
use witness::{CheckpointError, Cosigner, NoteError, NoteVerifier, SignedCheckpoint, VerifierKey};

/// origin -> (size, root, the cosigned note served to readers)
const LATEST: TableDefinition<&str, (u64, &[u8], &str)> = TableDefinition::new("latest_cosigned");
const WORKERS: usize = 4;

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
    /// The logs it watches.
    pub logs: Vec<LogConfig>,
    /// The time source for cosignature timestamps.
    pub clock: Arc<dyn Clock>,
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
}

struct Shared {
    config: WitnessConfig,
    db: Database,
}

/// A running witness server. Dropping it stops it.
pub struct WitnessServer {
    http: Arc<tiny_http::Server>,
    addr: SocketAddr,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for WitnessServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WitnessServer").field("addr", &self.addr).finish()
    }
}

fn state_error(path: &Path, err: impl std::fmt::Display) -> ServerError {
    ServerError::State { path: path.display().to_string(), reason: err.to_string() }
}

impl WitnessServer {
    /// Opens (or creates) the state at `state_path` and serves on `listen`
    /// (`127.0.0.1:0` picks a free port; see [`WitnessServer::addr`]).
    pub fn start(config: WitnessConfig, state_path: &Path, listen: &str) -> Result<Self, ServerError> {
        let db = Database::create(state_path).map_err(|err| state_error(state_path, err))?;
        let txn = db.begin_write().map_err(|err| state_error(state_path, err))?;
        txn.open_table(LATEST).map_err(|err| state_error(state_path, err))?;
        txn.commit().map_err(|err| state_error(state_path, err))?;

        let http = tiny_http::Server::http(listen)
            .map_err(|err| ServerError::Listen { addr: listen.to_owned(), reason: err.to_string() })?;
        let addr = http
            .server_addr()
            .to_ip()
            .ok_or_else(|| ServerError::Listen { addr: listen.to_owned(), reason: "not an IP address".into() })?;
        let http = Arc::new(http);
        let shared = Arc::new(Shared { config, db });
        let workers = (0..WORKERS)
            .map(|_| {
                let http = Arc::clone(&http);
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || {
                    while let Ok(request) = http.recv() {
                        shared.handle(request);
                    }
                })
            })
            .collect();
        Ok(Self { http, addr, workers })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://addr`: both the submission and the monitoring prefix.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Blocks until the server stops (it runs until the process ends).
    pub fn wait(mut self) {
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

impl Drop for WitnessServer {
    fn drop(&mut self) {
        for _ in 0..self.workers.len() {
            self.http.unblock();
        }
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

/// A status, a content type and a body.
struct Answer {
    status: u16,
    content_type: &'static str,
    body: String,
}

impl Answer {
    fn text(status: u16, body: impl Into<String>) -> Self {
        Self { status, content_type: "text/plain; charset=utf-8", body: body.into() }
    }
}

impl Shared {
    fn handle(&self, mut request: Request) {
        let path = request.url().to_owned();
        let answer = match (request.method(), path.as_str()) {
            (Method::Post, ADD_CHECKPOINT_PATH) => {
                let mut body = Vec::new();
                match request.as_reader().take(MAX_REQUEST_BYTES as u64 + 1).read_to_end(&mut body) {
                    Ok(_) if body.len() > MAX_REQUEST_BYTES => Answer::text(400, "request body too large\n"),
                    Ok(_) => self.add_checkpoint(&body),
                    Err(err) => Answer::text(400, format!("reading the request: {err}\n")),
                }
            }
            (Method::Get, _) => self.monitor(&path),
            _ => Answer::text(404, "not found\n"),
        };
        let mut response = Response::from_string(answer.body).with_status_code(answer.status);
        if let Ok(header) = Header::from_bytes("Content-Type", answer.content_type) {
            response = response.with_header(header);
        }
        if let Err(err) = request.respond(response) {
            tracing::debug!("witness: answering failed: {err}");
        }
    }

    fn monitor(&self, path: &str) -> Answer {
        let Some(hash) = path.strip_prefix('/').and_then(|rest| rest.strip_suffix("/checkpoint")) else {
            return Answer::text(404, "not found\n");
        };
        let Some(log) = self.config.logs.iter().find(|log| origin_hash(&log.origin) == hash) else {
            return Answer::text(404, "unknown origin\n");
        };
        let read = || -> Result<Option<String>, redb::Error> {
            let txn = self.db.begin_read()?;
            let table = txn.open_table(LATEST)?;
            Ok(table.get(log.origin.as_str())?.map(|entry| entry.value().2.to_owned()))
        };
        match read() {
            Ok(Some(note)) => Answer::text(200, note),
            Ok(None) => Answer::text(404, "nothing cosigned for this origin\n"),
            Err(err) => Answer::text(500, format!("state: {err}\n")),
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
        let checkpoint = signed.checkpoint();
        let new = checkpoint.tree();
        if request.old_size > new.size {
            return Answer::text(400, "old size is larger than the checkpoint size\n");
        }
        match self.check_and_store(&request, &signed, &verified) {
            Ok(answer) => answer,
            Err(err) => Answer::text(500, format!("state: {err}\n")),
        }
    }

    /// The check of the stored size and the update happen in one write
    /// transaction, so two racing submissions cannot roll the state back.
    fn check_and_store(
        &self,
        request: &AddCheckpointRequest,
        signed: &SignedCheckpoint,
        verified: &witness::VerifiedNote,
    ) -> Result<Answer, redb::Error> {
        let checkpoint = signed.checkpoint();
        let new = checkpoint.tree();
        let txn = self.db.begin_write()?;
        let answer = {
            let mut table = txn.open_table(LATEST)?;
            let stored = match table.get(checkpoint.origin())? {
                Some(entry) => {
                    let (size, root, _) = entry.value();
                    match RootHash::try_from(root) {
                        Ok(root) => Tree::new(size, root),
                        // Never cosign on top of a state we cannot read.
                        Err(_) => {
                            return Ok(Answer::text(500, "stored state for this origin is damaged\n"));
                        }
                    }
                }
                None => Tree::empty(),
            };
            if request.old_size != stored.size {
                return Ok(Answer { status: 409, content_type: SIZE_CONTENT_TYPE, body: format!("{}\n", stored.size) });
            }
            if new.size == 0 && new.root != RootHash::empty() {
                return Ok(Answer::text(422, "a checkpoint of size 0 must carry the empty tree's root\n"));
            }
            if request.old_size == 0 && !request.proof.path().is_empty() {
                return Ok(Answer::text(422, "old size 0 takes no consistency proof\n"));
            }
            if stored.size > 0
                && let Err(err) = new.verify_extends(&stored, &request.proof)
            {
                tracing::warn!(target: "agentplane.witness.integrity", origin = checkpoint.origin(), "refused: {err}");
                return Ok(Answer::text(422, format!("{err}\n")));
            }
            let timestamp = self.config.clock.now();
            let cosignature = match self.config.cosigner.cosign(&checkpoint.to_text(), timestamp) {
                Ok(line) => line.to_line(),
                Err(err) => return Ok(Answer::text(500, format!("cannot cosign: {err}\n"))),
            };
            let mut served = format!("{}\n", verified.text());
            for line in verified.verified_signatures() {
                served.push_str(&line.to_line());
            }
            served.push_str(&cosignature);
            table.insert(checkpoint.origin(), (new.size, new.root.as_bytes().as_slice(), served.as_str()))?;
            Answer::text(200, cosignature)
        };
        // Durable before the cosignature leaves.
        txn.commit()?;
        Ok(answer)
    }
}
