//! The tlog-witness client: submit checkpoints (`HttpWitness`), read cosigned
//! checkpoints (`WitnessReader`), hold rounds to a quorum, find split views.

use std::collections::HashMap;
use std::io::Read as _;
use std::sync::Mutex;
use std::time::Duration;

use reqwest::blocking::{Client, Response};
use reqwest::redirect;
use tlog::{ConsistencyProof, HashReader, RootHash, Tree};

use crate::checkpoint::{Checkpoint, SignedCheckpoint};
use crate::cosignature::{Cosignature, TrustedWitness, verify_cosignatures};
use crate::error::WitnessError;
use crate::note::parse_signature_lines;
use crate::protocol::{
    ADD_CHECKPOINT_PATH, AddCheckpointRequest, MAX_RESPONSE_BYTES, monitor_path, parse_conflict_size,
};

/// The default time a whole exchange with a witness may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the log offers a client: its roots and consistency proofs at any size
/// it has reached. Implemented for every [`tlog::HashReader`].
pub trait LogHistory {
    /// The root of the first `size` leaves.
    fn root_at(&self, size: u64) -> Result<RootHash, String>;
    /// The consistency proof from `old_size` to `new_size`.
    fn consistency_proof(&self, old_size: u64, new_size: u64) -> Result<ConsistencyProof, String>;
}

impl<R> LogHistory for R
where
    R: HashReader,
    R::Error: std::fmt::Display,
{
    fn root_at(&self, size: u64) -> Result<RootHash, String> {
        tlog::tree_root(self, size).map_err(|err| err.to_string())
    }

    fn consistency_proof(&self, old_size: u64, new_size: u64) -> Result<ConsistencyProof, String> {
        tlog::prove_consistency(self, old_size, new_size).map_err(|err| err.to_string())
    }
}

/// A checkpoint with verified cosignatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosignedCheckpoint {
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// Verified cosignatures from trusted witnesses (at least one).
    pub cosignatures: Vec<Cosignature>,
    /// Trusted witnesses whose lines used an algorithm this build does not verify.
    pub unsupported: Vec<(String, u8)>,
}

/// A witness a log submits to. Implemented by [`HttpWitness`].
pub trait Witness {
    /// A name for reports: the URL.
    fn endpoint(&self) -> &str;
    /// Submits a signed checkpoint with a consistency proof from the size the
    /// witness last cosigned, and returns its verified cosignatures.
    fn add_checkpoint(
        &self,
        signed: &SignedCheckpoint,
        history: &dyn LogHistory,
    ) -> Result<CosignedCheckpoint, WitnessError>;
}

fn http_client(timeout: Duration) -> Result<Client, WitnessError> {
    // Follow a redirect only within the same host: a witness must not send our
    // submission, or our trust, somewhere else.
    let policy = redirect::Policy::custom(|attempt| {
        let same_host = attempt.previous().first().is_some_and(|first| {
            first.host_str() == attempt.url().host_str()
                && first.port_or_known_default() == attempt.url().port_or_known_default()
        });
        if attempt.previous().len() > 3 || !same_host { attempt.stop() } else { attempt.follow() }
    });
    Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(policy)
        .build()
        .map_err(|err| WitnessError::BadUrl { url: String::new(), reason: err.to_string() })
}

fn check_url(url: &str) -> Result<String, WitnessError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|err| WitnessError::BadUrl { url: url.to_owned(), reason: err.to_string() })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(WitnessError::BadUrl { url: url.to_owned(), reason: "the scheme must be http or https".into() });
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// Reads at most [`MAX_RESPONSE_BYTES`] of a body; more is a bad answer.
fn read_capped(witness: &str, response: Response) -> Result<Vec<u8>, WitnessError> {
    let status = response.status().as_u16();
    let mut body = Vec::new();
    response.take(MAX_RESPONSE_BYTES as u64 + 1).read_to_end(&mut body).map_err(|err| WitnessError::Transport {
        witness: witness.to_owned(),
        reason: format!("reading the answer: {err}"),
    })?;
    if body.len() > MAX_RESPONSE_BYTES {
        return Err(WitnessError::BadAnswer {
            witness: witness.to_owned(),
            status,
            reason: format!("answer larger than {MAX_RESPONSE_BYTES} bytes"),
        });
    }
    Ok(body)
}

fn transport(witness: &str, err: &reqwest::Error) -> WitnessError {
    let reason = if err.is_timeout() { format!("timed out: {err}") } else { err.to_string() };
    WitnessError::Transport { witness: witness.to_owned(), reason }
}

fn snippet(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(200).collect()
}

/// Verifies the cosignature lines of an answer over a checkpoint body.
fn verified_cosignatures(
    witness: &str,
    checkpoint: &Checkpoint,
    lines: &str,
    trusted: &[TrustedWitness],
    status: u16,
) -> Result<CosignedCheckpoint, WitnessError> {
    let signatures = parse_signature_lines(lines).map_err(|err| WitnessError::BadAnswer {
        witness: witness.to_owned(),
        status,
        reason: err.to_string(),
    })?;
    let report = verify_cosignatures(&checkpoint.to_text(), &signatures, trusted)
        .map_err(|source| WitnessError::Cosignature { witness: witness.to_owned(), source })?;
    if report.valid.is_empty() {
        return Err(WitnessError::NoTrustedCosignature { witness: witness.to_owned() });
    }
    Ok(CosignedCheckpoint {
        checkpoint: checkpoint.clone(),
        cosignatures: report.valid,
        unsupported: report.unsupported,
    })
}

/// A tlog-witness submission client for one witness.
pub struct HttpWitness {
    url: String,
    trusted: Vec<TrustedWitness>,
    http: Client,
    /// The size this witness last cosigned, per origin, as far as we know.
    known_sizes: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for HttpWitness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpWitness").field("url", &self.url).field("trusted", &self.trusted).finish()
    }
}

enum Attempt {
    Cosigned(CosignedCheckpoint),
    WitnessAt(u64),
}

impl HttpWitness {
    /// A client for the witness at `url` (its submission prefix), trusting
    /// `trusted` keys for its cosignatures. Refuses to build with no key.
    pub fn new(url: &str, trusted: Vec<TrustedWitness>) -> Result<Self, WitnessError> {
        Self::with_timeout(url, trusted, DEFAULT_TIMEOUT)
    }

    /// As [`HttpWitness::new`], with a timeout for each exchange.
    pub fn with_timeout(url: &str, trusted: Vec<TrustedWitness>, timeout: Duration) -> Result<Self, WitnessError> {
        if trusted.is_empty() {
            return Err(WitnessError::NoTrustedKeys);
        }
        Ok(Self { url: check_url(url)?, trusted, http: http_client(timeout)?, known_sizes: Mutex::new(HashMap::new()) })
    }

    fn known_size(&self, origin: &str) -> u64 {
        self.known_sizes.lock().map(|sizes| sizes.get(origin).copied().unwrap_or(0)).unwrap_or(0)
    }

    fn remember(&self, origin: &str, size: u64) {
        if let Ok(mut sizes) = self.known_sizes.lock() {
            sizes.insert(origin.to_owned(), size);
        }
    }

    /// Builds and checks the request for `old_size` before anything is sent (R-WIT-2).
    fn request(
        &self,
        signed: &SignedCheckpoint,
        old_size: u64,
        history: &dyn LogHistory,
    ) -> Result<AddCheckpointRequest, WitnessError> {
        let tree = signed.checkpoint().tree();
        if tree.size == 0 && tree.root != RootHash::empty() {
            return Err(WitnessError::EmptyTreeRootMismatch);
        }
        if old_size > tree.size {
            return Err(WitnessError::OldSizeBeyondCheckpoint { old_size, new_size: tree.size });
        }
        let history_error = |reason: String| WitnessError::History { old_size, new_size: tree.size, reason };
        let proof = if old_size == 0 {
            ConsistencyProof::default()
        } else {
            let old_root = history.root_at(old_size).map_err(history_error)?;
            let proof = if old_size == tree.size {
                ConsistencyProof::default()
            } else {
                history.consistency_proof(old_size, tree.size).map_err(history_error)?
            };
            tree.verify_extends(&Tree::new(old_size, old_root), &proof).map_err(|err| {
                WitnessError::OwnProofInvalid { old_size, new_size: tree.size, reason: err.to_string() }
            })?;
            proof
        };
        Ok(AddCheckpointRequest { old_size, proof, checkpoint_note: signed.note().to_owned() })
    }

    fn attempt(&self, signed: &SignedCheckpoint, request: &AddCheckpointRequest) -> Result<Attempt, WitnessError> {
        let witness = self.url.as_str();
        let response = self
            .http
            .post(format!("{}{ADD_CHECKPOINT_PATH}", self.url))
            .body(request.to_body())
            .send()
            .map_err(|err| transport(witness, &err))?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let body = read_capped(witness, response)?;
        let checkpoint = signed.checkpoint();
        let new_size = checkpoint.tree().size;
        match status {
            200 => {
                let lines = std::str::from_utf8(&body).map_err(|_| WitnessError::BadAnswer {
                    witness: witness.to_owned(),
                    status,
                    reason: "not UTF-8".into(),
                })?;
                verified_cosignatures(witness, checkpoint, lines, &self.trusted, status).map(Attempt::Cosigned)
            }
            400 => Err(WitnessError::BadRequest { witness: witness.to_owned(), body: snippet(&body) }),
            403 => Err(WitnessError::Forbidden { witness: witness.to_owned() }),
            404 => {
                Err(WitnessError::UnknownOrigin { witness: witness.to_owned(), origin: checkpoint.origin().to_owned() })
            }
            409 => match parse_conflict_size(content_type.as_deref(), &body) {
                Some(size) => Ok(Attempt::WitnessAt(size)),
                // tlog-witness v1.0.0 (and transparency-dev/witness) answer a
                // same-size fork with a bodiless 409.
                None if request.old_size == new_size => {
                    Err(WitnessError::Fork { witness: witness.to_owned(), size: new_size })
                }
                None => Err(WitnessError::BadAnswer {
                    witness: witness.to_owned(),
                    status,
                    reason: format!("409 without a {} size body", crate::protocol::SIZE_CONTENT_TYPE),
                }),
            },
            422 if request.old_size == new_size => {
                Err(WitnessError::Fork { witness: witness.to_owned(), size: new_size })
            }
            422 => {
                Err(WitnessError::Inconsistent { witness: witness.to_owned(), old_size: request.old_size, new_size })
            }
            429 | 500..=599 => Err(WitnessError::Unavailable { witness: witness.to_owned(), status }),
            _ => Err(WitnessError::BadAnswer { witness: witness.to_owned(), status, reason: snippet(&body) }),
        }
    }
}

impl Witness for HttpWitness {
    fn endpoint(&self) -> &str {
        &self.url
    }

    /// Sends from the size this client last saw the witness at (0 at first);
    /// a 409 names the witness's size, and the request is rebuilt from it and
    /// sent once more.
    fn add_checkpoint(
        &self,
        signed: &SignedCheckpoint,
        history: &dyn LogHistory,
    ) -> Result<CosignedCheckpoint, WitnessError> {
        let origin = signed.checkpoint().origin();
        let new_size = signed.checkpoint().tree().size;
        let first = self.request(signed, self.known_size(origin).min(new_size), history)?;
        let second = match self.attempt(signed, &first)? {
            Attempt::Cosigned(cosigned) => {
                self.remember(origin, new_size);
                return Ok(cosigned);
            }
            Attempt::WitnessAt(size) => {
                self.remember(origin, size);
                if size > new_size {
                    return Err(WitnessError::Rollback {
                        witness: self.url.clone(),
                        witness_size: size,
                        size: new_size,
                    });
                }
                self.request(signed, size, history)?
            }
        };
        match self.attempt(signed, &second)? {
            Attempt::Cosigned(cosigned) => {
                self.remember(origin, new_size);
                Ok(cosigned)
            }
            Attempt::WitnessAt(size) => {
                self.remember(origin, size);
                Err(WitnessError::Conflict { witness: self.url.clone(), witness_size: size })
            }
        }
    }
}

/// Reads a witness's latest cosigned checkpoint (R-WIT-4). Needs only the
/// monitoring prefix and the witness keys to trust: no log key.
pub struct WitnessReader {
    url: String,
    trusted: Vec<TrustedWitness>,
    http: Client,
}

impl std::fmt::Debug for WitnessReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WitnessReader").field("url", &self.url).finish()
    }
}

impl WitnessReader {
    /// A reader of the witness's monitoring prefix.
    pub fn new(url: &str, trusted: Vec<TrustedWitness>) -> Result<Self, WitnessError> {
        if trusted.is_empty() {
            return Err(WitnessError::NoTrustedKeys);
        }
        Ok(Self { url: check_url(url)?, trusted, http: http_client(DEFAULT_TIMEOUT)? })
    }

    /// The monitoring prefix.
    pub fn endpoint(&self) -> &str {
        &self.url
    }

    /// `GET <prefix>/<origin hash>/checkpoint`, verified: the checkpoint's
    /// origin must be the one asked for and at least one trusted witness
    /// cosignature must verify over it. Treat it as a lower bound on what
    /// the witness has cosigned.
    pub fn latest(&self, origin: &str) -> Result<CosignedCheckpoint, WitnessError> {
        let witness = self.url.as_str();
        let response = self
            .http
            .get(format!("{}{}", self.url, monitor_path(origin)))
            .send()
            .map_err(|err| transport(witness, &err))?;
        let status = response.status().as_u16();
        let body = read_capped(witness, response)?;
        let bad =
            |reason: &str| WitnessError::BadAnswer { witness: witness.to_owned(), status, reason: reason.to_owned() };
        match status {
            200 => {}
            404 => {
                return Err(WitnessError::NothingCosigned { witness: witness.to_owned(), origin: origin.to_owned() });
            }
            429 | 500..=599 => {
                return Err(WitnessError::Unavailable { witness: witness.to_owned(), status });
            }
            _ => return Err(bad(&snippet(&body))),
        }
        let note = std::str::from_utf8(&body).map_err(|_| bad("not UTF-8"))?;
        let split = note.rfind("\n\n").ok_or_else(|| bad("not a signed note"))?;
        let (text, lines) = note.split_at(split + 1);
        let checkpoint = Checkpoint::parse(text).map_err(|err| bad(&err.to_string()))?;
        if checkpoint.origin() != origin {
            return Err(bad("a checkpoint for another origin"));
        }
        verified_cosignatures(witness, &checkpoint, lines.strip_prefix('\n').unwrap_or(lines), &self.trusted, status)
    }
}

/// How many verified cosignatures a round needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WitnessQuorum(usize);

impl WitnessQuorum {
    /// A quorum of `n` witnesses.
    pub const fn of(n: usize) -> Self {
        Self(n)
    }

    /// The number of cosignatures needed.
    pub const fn needed(&self) -> usize {
        self.0
    }
}

/// One witness's failure in a round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessFailure {
    /// The witness's endpoint.
    pub witness: String,
    /// What happened.
    pub error: WitnessError,
}

/// The result of a submission round: three answers kept apart (R-WIT-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuorumOutcome {
    /// Enough witnesses cosigned and none saw the log misbehave.
    Met {
        /// Every verified cosignature.
        cosigned: Vec<CosignedCheckpoint>,
        /// Witnesses that did not cosign, for reasons that are not integrity.
        failures: Vec<WitnessFailure>,
    },
    /// Too few cosignatures: a finding to clear.
    Shortfall {
        /// Cosignatures gathered.
        got: usize,
        /// Cosignatures needed.
        needed: usize,
        /// Why the others did not cosign.
        failures: Vec<WitnessFailure>,
    },
    /// A witness saw this log fork or its history move. Reported whether or
    /// not the quorum was met.
    IntegrityRefusal {
        /// The witnesses that refused on integrity grounds.
        refusals: Vec<WitnessFailure>,
        /// Cosignatures gathered all the same.
        got: usize,
        /// Cosignatures needed.
        needed: usize,
        /// Whether `got >= needed`.
        quorum_met: bool,
        /// Every other failure.
        failures: Vec<WitnessFailure>,
    },
}

/// Submits `signed` to every witness concurrently and holds the round to `quorum`.
pub fn cosign_quorum(
    witnesses: &[&(dyn Witness + Sync)],
    quorum: WitnessQuorum,
    signed: &SignedCheckpoint,
    history: &(dyn LogHistory + Sync),
) -> QuorumOutcome {
    let results: Vec<(String, Result<CosignedCheckpoint, WitnessError>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = witnesses
            .iter()
            .map(|witness| {
                scope.spawn(move || (witness.endpoint().to_owned(), witness.add_checkpoint(signed, history)))
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    (
                        String::from("?"),
                        Err(WitnessError::Transport {
                            witness: "?".into(),
                            reason: "submission thread panicked".into(),
                        }),
                    )
                })
            })
            .collect()
    });
    let mut cosigned = Vec::new();
    let mut refusals = Vec::new();
    let mut failures = Vec::new();
    for (witness, result) in results {
        match result {
            Ok(ok) => cosigned.push(ok),
            Err(error) if error.is_integrity() => refusals.push(WitnessFailure { witness, error }),
            Err(error) => failures.push(WitnessFailure { witness, error }),
        }
    }
    let got = cosigned.len();
    let needed = quorum.needed();
    if !refusals.is_empty() {
        return QuorumOutcome::IntegrityRefusal { refusals, got, needed, quorum_met: got >= needed, failures };
    }
    if got >= needed {
        QuorumOutcome::Met { cosigned, failures }
    } else {
        QuorumOutcome::Shortfall { got, needed, failures }
    }
}

/// Two witnesses holding two roots for one size of one log (R-WIT-5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitView {
    /// The size with two roots.
    pub size: u64,
    /// Each witness with the root it cosigned.
    pub views: Vec<(String, RootHash)>,
}

/// What reading several witnesses found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SplitViewReport {
    /// Sizes at which witnesses disagree on the root.
    pub split_views: Vec<SplitView>,
    /// Verified checkpoints read, by witness.
    pub read: Vec<(String, CosignedCheckpoint)>,
    /// Witnesses that could not be read.
    pub failures: Vec<WitnessFailure>,
}

/// Reads `origin` from every reader and reports any size with two roots.
pub fn split_view(readers: &[&WitnessReader], origin: &str) -> SplitViewReport {
    let mut report = SplitViewReport::default();
    for reader in readers {
        match reader.latest(origin) {
            Ok(cosigned) => report.read.push((reader.endpoint().to_owned(), cosigned)),
            Err(error) => report.failures.push(WitnessFailure { witness: reader.endpoint().to_owned(), error }),
        }
    }
    let mut by_size: Vec<(u64, Vec<(String, RootHash)>)> = Vec::new();
    for (witness, cosigned) in &report.read {
        let tree = cosigned.checkpoint.tree();
        match by_size.iter_mut().find(|(size, _)| *size == tree.size) {
            Some((_, views)) => views.push((witness.clone(), tree.root)),
            None => by_size.push((tree.size, vec![(witness.clone(), tree.root)])),
        }
    }
    for (size, views) in by_size {
        if views.iter().any(|(_, root)| *root != views.first().map_or(*root, |(_, first)| *first)) {
            report.split_views.push(SplitView { size, views });
        }
    }
    report
}
