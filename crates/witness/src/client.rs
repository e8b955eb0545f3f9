//! The tlog-witness HTTP client (feature `client`): submit checkpoints
//! ([`HttpWitness`]), read cosigned checkpoints ([`WitnessReader`]) and read
//! several witnesses for a split view ([`split_view`]). The protocol decisions
//! (what to send, what an answer means) live in [`crate::quorum`] and
//! [`crate::protocol`]; this module only moves bytes.

use std::collections::HashMap;
use std::io::Read as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::blocking::{Client, Response};
use reqwest::redirect;

use crate::checkpoint::{Checkpoint, SignedCheckpoint};
use crate::cosignature::{TrustedWitness, check_distinct_keys};
use crate::error::WitnessError;
use crate::keys::VerifierKey;
use crate::note::NoteVerifier;
use crate::note::split_note;
use crate::protocol::{
    ADD_CHECKPOINT_PATH, AddCheckpointRequest, MAX_RESPONSE_BYTES, monitor_path, parse_conflict_size,
};
use crate::quorum::{
    CosignedCheckpoint, LogHistory, SplitViewReport, Witness, WitnessFailure, WitnessIdentity, build_request,
    find_split_views, verified_cosignatures,
};

/// The default time a whole exchange with a witness may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether a redirect from `from` to `to` stays with the same witness: same
/// scheme, host and port. An `https` witness redirecting to `http` on its
/// own host and port is a downgrade, not the same witness.
fn same_origin(from: &reqwest::Url, to: &reqwest::Url) -> bool {
    from.scheme() == to.scheme()
        && from.host_str() == to.host_str()
        && from.port_or_known_default() == to.port_or_known_default()
}

/// How many times a submission is tried when the witness answers with a
/// server error (500, 502, 504..599; not 429 or 503, which say "busy")
/// before it is reported as failing for the origin: transparency-dev/witness
/// answers an origin or log key it is not configured for with a bodiless 500,
/// which no retry will ever cure (issue 22).
pub const SERVER_ERROR_TRIES: u32 = 3;

/// How many timeouts one submission ([`HttpWitness::add_checkpoint`]) may
/// take over all its exchanges: the tries again after a server error and the
/// requests rebuilt after a 409. Each exchange was bounded on its own, the
/// submission was not: a witness answering each just inside the timeout (a
/// 500 twice, then a 409 one leaf further, three times over) held it, and
/// the sweep round waiting for every witness, for nine timeouts.
pub const SUBMISSION_TIMEOUTS: u32 = 2;

fn http_client(timeout: Duration) -> Result<Client, WitnessError> {
    // Follow a redirect only within the same origin (scheme, host, port): a
    // witness must not send our submission, or our trust, somewhere else, nor
    // from TLS to plain HTTP.
    let policy = redirect::Policy::custom(|attempt| {
        let same = attempt.previous().first().is_some_and(|first| same_origin(first, attempt.url()));
        if attempt.previous().len() > 3 || !same { attempt.stop() } else { attempt.follow() }
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
        .map_err(|err| WitnessError::BadUrl { url: shown_url(url), reason: err.to_string() })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(WitnessError::BadUrl { url: shown_url(url), reason: "the scheme must be http or https".into() });
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// A witness URL as it may be shown (errors, logs, reports, `Debug`): a
/// password in its user info (a witness behind a proxy with basic
/// authentication) replaced by `***`, so it never reaches a terminal or a
/// log; requests still carry it. A text that does not parse as a URL loses
/// everything before an `@` that comes before its first `/` after the scheme.
pub fn shown_url(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    match reqwest::Url::parse(trimmed) {
        Ok(mut parsed) if parsed.password().is_some() => {
            if parsed.set_password(Some("***")).is_err() {
                return "(a witness URL with credentials)".into();
            }
            parsed.as_str().trim_end_matches('/').to_owned()
        }
        Ok(_) => trimmed.to_owned(),
        Err(_) => {
            let (scheme, rest) = trimmed.split_once("://").unwrap_or(("", trimmed));
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
            let hidden = if host.len() == authority.len() { "" } else { "***@" };
            if scheme.is_empty() { format!("{hidden}{host}{path}") } else { format!("{scheme}://{hidden}{host}{path}") }
        }
    }
}

/// Reads at most [`MAX_RESPONSE_BYTES`] of a body; more is a bad answer. The
/// body must have arrived by `deadline` (the exchange's start plus its
/// timeout): reqwest's blocking timeout bounds each read, not the whole body,
/// so a witness trickling a byte at a time would otherwise hold the client
/// (and the sweep round waiting for it) for as long as it likes. Each read
/// is bounded by the timeout, so the exchange takes at most twice it.
fn read_capped(witness: &str, response: Response, deadline: Instant) -> Result<Vec<u8>, WitnessError> {
    let status = response.status().as_u16();
    let mut body = Vec::new();
    let mut limited = response.take(MAX_RESPONSE_BYTES as u64 + 1);
    let mut chunk = [0u8; 8192];
    loop {
        if Instant::now() >= deadline {
            return Err(WitnessError::Transport {
                witness: witness.to_owned(),
                reason: "timed out: the answer did not arrive within the timeout".into(),
            });
        }
        let read = limited.read(&mut chunk).map_err(|err| {
            // The request's own timeout ending the body comes as a body error.
            let timed_out = err.kind() == std::io::ErrorKind::TimedOut
                || err
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<reqwest::Error>())
                    .is_some_and(|e| e.is_timeout());
            let reason = if timed_out {
                "timed out: the answer did not arrive within the timeout".to_owned()
            } else {
                format!("reading the answer: {err}")
            };
            WitnessError::Transport { witness: witness.to_owned(), reason }
        })?;
        match chunk.get(..read) {
            Some([]) | None => break,
            Some(bytes) => body.extend_from_slice(bytes),
        }
    }
    if body.len() > MAX_RESPONSE_BYTES {
        return Err(WitnessError::BadAnswer {
            witness: witness.to_owned(),
            status,
            reason: format!("answer larger than {MAX_RESPONSE_BYTES} bytes"),
        });
    }
    Ok(body)
}

fn transport(witness: &str, err: reqwest::Error) -> WitnessError {
    // reqwest names the URL asked for, credentials and all: the witness is named already.
    let err = err.without_url();
    let reason = if err.is_timeout() { format!("timed out: {err}") } else { err.to_string() };
    WitnessError::Transport { witness: witness.to_owned(), reason }
}

/// A server error that says the witness failed, not that it is busy.
fn is_server_error(status: u16) -> bool {
    (500..=599).contains(&status) && status != 503
}

/// At most 200 characters of a witness's answer, to quote in an error: its
/// control characters escaped (`\n`, `\u{1b}`), so a witness can neither
/// send escape sequences to a terminal nor forge lines of the output that
/// quotes it.
fn snippet(body: &[u8]) -> String {
    let mut shown = String::new();
    for c in String::from_utf8_lossy(body).chars().take(200) {
        // What moves the cursor, reorders the text or shows nothing is
        // escaped: the body is the witness's words.
        if crate::text::disguises(c) {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    shown
}

/// A tlog-witness submission client for one witness.
pub struct HttpWitness {
    url: String,
    /// `url` as shown ([`shown_url`]).
    shown: String,
    trusted: Vec<TrustedWitness>,
    http: Client,
    timeout: Duration,
    /// The size this witness last cosigned, per origin, as far as we know.
    known_sizes: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for HttpWitness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpWitness").field("url", &self.shown).field("trusted", &self.trusted).finish()
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

    /// As [`HttpWitness::new`], with a timeout for each exchange: connecting,
    /// the answer and its whole body (an exchange takes at most twice it). A
    /// whole submission starts no exchange past [`SUBMISSION_TIMEOUTS`] times
    /// it, nor lets one run past that (so it takes at most three times it).
    pub fn with_timeout(url: &str, trusted: Vec<TrustedWitness>, timeout: Duration) -> Result<Self, WitnessError> {
        check_trust_list(&trusted)?;
        let url = check_url(url)?;
        Ok(Self {
            shown: shown_url(&url),
            url,
            trusted,
            http: http_client(timeout)?,
            timeout,
            known_sizes: Mutex::new(HashMap::new()),
        })
    }

    fn known_size(&self, origin: &str) -> u64 {
        self.known_sizes.lock().map(|sizes| sizes.get(origin).copied().unwrap_or(0)).unwrap_or(0)
    }

    fn remember(&self, origin: &str, size: u64) {
        if let Ok(mut sizes) = self.known_sizes.lock() {
            sizes.insert(origin.to_owned(), size);
        }
    }

    /// [`Self::attempt_once`], tried again on a server error, at most
    /// [`SERVER_ERROR_TRIES`] times; then the witness is reported as failing
    /// for this origin ([`WitnessError::BadAnswer`], not retryable).
    fn attempt(
        &self,
        signed: &SignedCheckpoint,
        request: &AddCheckpointRequest,
        deadline: Instant,
    ) -> Result<Attempt, WitnessError> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.attempt_once(signed, request, deadline) {
                Err(WitnessError::Unavailable { status, said, .. }) if is_server_error(status) => {
                    if tries >= SERVER_ERROR_TRIES {
                        // A bodiless 500 is transparency-dev/witness's answer
                        // for a log it is not configured for; a witness that
                        // says why it fails (its state cannot be written: a
                        // full disk) is quoted, not second-guessed.
                        let why = if said.trim().is_empty() {
                            "is the log configured there (its origin and log key)?".to_owned()
                        } else {
                            // `said` is escaped already (`snippet`).
                            format!("the last answer said \"{said}\": see to that at the witness")
                        };
                        return Err(WitnessError::BadAnswer {
                            witness: self.shown.clone(),
                            status,
                            reason: format!(
                                "witness {} fails for origin {} ({tries} answers of {status} in a row): {why}",
                                self.shown,
                                signed.checkpoint().origin()
                            ),
                        });
                    }
                    let pause = Duration::from_millis(100 * u64::from(tries));
                    if Instant::now() + pause >= deadline {
                        return Err(self.out_of_time());
                    }
                    std::thread::sleep(pause);
                }
                other => return other,
            }
        }
    }

    /// The submission's time is up ([`SUBMISSION_TIMEOUTS`]).
    fn out_of_time(&self) -> WitnessError {
        WitnessError::Transport {
            witness: self.shown.clone(),
            reason: format!(
                "timed out: the submission did not end within {:?} ({SUBMISSION_TIMEOUTS} timeouts) over all its \
                 exchanges; the witness answers too slowly, or keeps asking again",
                self.timeout * SUBMISSION_TIMEOUTS
            ),
        }
    }

    /// One exchange, ending by `submission` (the whole submission's deadline).
    fn attempt_once(
        &self,
        signed: &SignedCheckpoint,
        request: &AddCheckpointRequest,
        submission: Instant,
    ) -> Result<Attempt, WitnessError> {
        let witness = self.shown.as_str();
        let now = Instant::now();
        let left = submission.saturating_duration_since(now).min(self.timeout);
        if left.is_zero() {
            return Err(self.out_of_time());
        }
        let deadline = now + left;
        let response = self
            .http
            .post(format!("{}{ADD_CHECKPOINT_PATH}", self.url))
            .timeout(left)
            .body(request.to_body())
            .send()
            .map_err(|err| transport(witness, err))?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let body = read_capped(witness, response, deadline)?;
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
            429 | 500..=599 => {
                Err(WitnessError::Unavailable { witness: witness.to_owned(), status, said: snippet(&body) })
            }
            _ => Err(WitnessError::BadAnswer { witness: witness.to_owned(), status, reason: snippet(&body) }),
        }
    }
}

impl HttpWitness {
    /// A witness ahead of the checkpoint: stale when the log has reached its
    /// size since (another instance submitted first), an integrity refusal
    /// when the log never had that many leaves.
    fn ahead(&self, witness_size: u64, size: u64, history: &dyn LogHistory) -> WitnessError {
        let reached = history.reached(witness_size);
        match reached {
            Ok(true) => WitnessError::Stale { witness: self.shown.clone(), witness_size, size },
            Ok(false) => WitnessError::Rollback { witness: self.shown.clone(), witness_size, size },
            Err(source) => WitnessError::History { old_size: size, new_size: witness_size, source },
        }
    }
}

impl Witness for HttpWitness {
    fn endpoint(&self) -> &str {
        &self.shown
    }

    fn identities(&self) -> Vec<WitnessIdentity> {
        self.trusted.iter().map(WitnessIdentity::of).collect()
    }

    /// Sends from the size this client last saw the witness at (0 at first);
    /// a 409 names the witness's size, and the request is rebuilt from it and
    /// sent once more, and once again when a second 409 names a size the
    /// witness moved forward to, short of the checkpoint (another instance
    /// of the plane submitted between the attempts).
    fn add_checkpoint(
        &self,
        signed: &SignedCheckpoint,
        history: &dyn LogHistory,
    ) -> Result<CosignedCheckpoint, WitnessError> {
        let origin = signed.checkpoint().origin();
        let new_size = signed.checkpoint().tree().size;
        let deadline = Instant::now() + self.timeout * SUBMISSION_TIMEOUTS;
        let first = build_request(signed, self.known_size(origin).min(new_size), history)?;
        let second = match self.attempt(signed, &first, deadline)? {
            Attempt::Cosigned(cosigned) => {
                self.remember(origin, new_size);
                return Ok(cosigned);
            }
            Attempt::WitnessAt(size) => {
                self.remember(origin, size);
                if size > new_size {
                    return Err(self.ahead(size, new_size, history));
                }
                build_request(signed, size, history)?
            }
        };
        let third = match self.attempt(signed, &second, deadline)? {
            Attempt::Cosigned(cosigned) => {
                self.remember(origin, new_size);
                return Ok(cosigned);
            }
            Attempt::WitnessAt(size) => {
                self.remember(origin, size);
                // Another instance submitted this checkpoint's size, or
                // past it, between the two attempts: stale (or a rollback),
                // as past it on the first; signed afresh, it is submitted
                // from the witness's size, where an equal root is cosigned
                // and another is a fork.
                if size >= new_size {
                    return Err(self.ahead(size, new_size, history));
                }
                // Another instance submitted a smaller tree between the two
                // attempts: the witness moved forward, short of this
                // checkpoint, and is asked once more from there.
                if size <= second.old_size {
                    return Err(WitnessError::Conflict { witness: self.shown.clone(), witness_size: size });
                }
                build_request(signed, size, history)?
            }
        };
        match self.attempt(signed, &third, deadline)? {
            Attempt::Cosigned(cosigned) => {
                self.remember(origin, new_size);
                Ok(cosigned)
            }
            Attempt::WitnessAt(size) => {
                self.remember(origin, size);
                if size >= new_size {
                    return Err(self.ahead(size, new_size, history));
                }
                Err(WitnessError::Conflict { witness: self.shown.clone(), witness_size: size })
            }
        }
    }
}

/// The exact 404 body of our witness's monitor endpoint for an origin it
/// watches and has cosigned nothing for (`agentplane-witness`).
const NOTHING_COSIGNED_BODY: &[u8] = b"nothing cosigned for this origin\n";

/// The exact 404 body of our witness's monitor endpoint for an origin its
/// configuration does not name. Not "nothing cosigned": a witness whose
/// configuration dropped the log still keeps what it cosigned for it, and
/// says nothing of it (review 46). Every other 404 means the witness serves
/// no monitor endpoint.
const UNKNOWN_ORIGIN_BODY: &[u8] = b"unknown origin\n";

/// Refuses an empty trust list, and one naming one public key twice.
fn check_trust_list(trusted: &[TrustedWitness]) -> Result<(), WitnessError> {
    if trusted.is_empty() {
        return Err(WitnessError::NoTrustedKeys);
    }
    check_distinct_keys(trusted).map_err(WitnessError::TrustList)
}

/// Reads a witness's latest cosigned checkpoint (R-WIT-4). Needs only the
/// monitoring prefix and the witness keys to trust: no log key.
pub struct WitnessReader {
    url: String,
    /// `url` as shown ([`shown_url`]).
    shown: String,
    trusted: Vec<TrustedWitness>,
    http: Client,
    timeout: Duration,
}

impl std::fmt::Debug for WitnessReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WitnessReader").field("url", &self.shown).finish()
    }
}

impl WitnessReader {
    /// A reader of the witness's monitoring prefix. Refuses no key, and a
    /// trust list naming one public key twice (R-AUD-10).
    pub fn new(url: &str, trusted: Vec<TrustedWitness>) -> Result<Self, WitnessError> {
        Self::with_timeout(url, trusted, DEFAULT_TIMEOUT)
    }

    /// As [`WitnessReader::new`], with a timeout for the whole exchange
    /// (connecting, and waiting for the answer and its whole body: at most
    /// twice it).
    pub fn with_timeout(url: &str, trusted: Vec<TrustedWitness>, timeout: Duration) -> Result<Self, WitnessError> {
        check_trust_list(&trusted)?;
        let url = check_url(url)?;
        Ok(Self { shown: shown_url(&url), url, trusted, http: http_client(timeout)?, timeout })
    }

    /// The monitoring prefix.
    pub fn endpoint(&self) -> &str {
        &self.shown
    }

    /// `GET <prefix>/<origin hash>/checkpoint`, verified: the checkpoint's
    /// origin must be the one asked for and at least one trusted witness
    /// cosignature must verify over it. Treat it as a lower bound on what
    /// the witness has cosigned. The log's signature is not checked (no log
    /// key is needed): a witness can cosign a tree the log never signed, so
    /// whoever holds the log's keys reads with [`Self::latest_signed`].
    pub fn latest(&self, origin: &str) -> Result<CosignedCheckpoint, WitnessError> {
        self.read(origin).map(|(_, cosigned)| cosigned)
    }

    /// As [`Self::latest`], and the note must also carry a valid signature by
    /// one of `log_keys` (the monitor endpoint serves the log's signatures
    /// beside the witness's): a tree the log never signed, cosigned by a lying
    /// witness, is a bad answer of that witness, never a tree the log must
    /// extend.
    pub fn latest_signed(&self, origin: &str, log_keys: &[VerifierKey]) -> Result<CosignedCheckpoint, WitnessError> {
        self.latest_signed_note(origin, log_keys).map(|(_, cosigned)| cosigned)
    }

    /// As [`Self::latest_signed`], with the note as the witness served it
    /// (the log's signature and the cosignatures): what a reader hands on
    /// for others to verify again.
    pub fn latest_signed_note(
        &self,
        origin: &str,
        log_keys: &[VerifierKey],
    ) -> Result<(String, CosignedCheckpoint), WitnessError> {
        let (note, cosigned) = self.read(origin)?;
        let verifiers: Vec<&dyn NoteVerifier> = log_keys.iter().map(|key| key as &dyn NoteVerifier).collect();
        match SignedCheckpoint::open(note.as_bytes(), &verifiers) {
            Ok((signed, _)) if signed.checkpoint() == &cosigned.checkpoint => Ok((note, cosigned)),
            Ok(_) => Err(self.unsigned(String::from("the log signed another checkpoint"))),
            Err(err) => Err(self.unsigned(err.to_string())),
        }
    }

    fn unsigned(&self, why: String) -> WitnessError {
        WitnessError::BadAnswer {
            witness: self.shown.clone(),
            status: 200,
            reason: format!(
                "a cosigned checkpoint not signed by the log ({why}): the witness cosigned what the log never signed"
            ),
        }
    }

    /// The monitor note and its verified cosignatures.
    fn read(&self, origin: &str) -> Result<(String, CosignedCheckpoint), WitnessError> {
        let witness = self.shown.as_str();
        let deadline = Instant::now() + self.timeout;
        let response = self
            .http
            .get(format!("{}{}", self.url, monitor_path(origin)))
            .send()
            .map_err(|err| transport(witness, err))?;
        let status = response.status().as_u16();
        let body = read_capped(witness, response, deadline)?;
        let bad =
            |reason: &str| WitnessError::BadAnswer { witness: witness.to_owned(), status, reason: reason.to_owned() };
        match status {
            200 => {}
            // Our witness says why it has nothing; any other 404 (litewitness,
            // transparency-dev/witness) is a witness without the endpoint.
            404 if body == NOTHING_COSIGNED_BODY => {
                return Err(WitnessError::NothingCosigned { witness: witness.to_owned(), origin: origin.to_owned() });
            }
            // Our witness does not watch the origin (now): what it holds of
            // it is unknown, never "nothing", or a plane rebuilding its lost
            // high-water mark would take it for a witness that never
            // cosigned, and sign below what it did.
            404 if body == UNKNOWN_ORIGIN_BODY => {
                return Err(WitnessError::UnknownOrigin { witness: witness.to_owned(), origin: origin.to_owned() });
            }
            404 => {
                return Err(WitnessError::NoMonitorEndpoint {
                    witness: witness.to_owned(),
                    path: monitor_path(origin),
                });
            }
            429 | 500..=599 => {
                return Err(WitnessError::Unavailable { witness: witness.to_owned(), status, said: snippet(&body) });
            }
            _ => return Err(bad(&snippet(&body))),
        }
        let note = std::str::from_utf8(&body).map_err(|_| bad("not UTF-8"))?;
        let (text, lines) = split_note(note).map_err(|err| bad(&err.to_string()))?;
        let checkpoint = Checkpoint::parse(text).map_err(|err| bad(&err.to_string()))?;
        if checkpoint.origin() != origin {
            return Err(bad("a checkpoint for another origin"));
        }
        let cosigned = verified_cosignatures(witness, &checkpoint, lines, &self.trusted, status)?;
        Ok((note.to_owned(), cosigned))
    }
}

/// Reads `origin` from every reader and reports any size with two roots (R-WIT-5).
pub fn split_view(readers: &[&WitnessReader], origin: &str) -> SplitViewReport {
    let mut report = SplitViewReport::default();
    for reader in readers {
        match reader.latest(origin) {
            Ok(cosigned) => report.read.push((reader.endpoint().to_owned(), cosigned)),
            Err(error) => report.failures.push(WitnessFailure { witness: reader.endpoint().to_owned(), error }),
        }
    }
    report.split_views = find_split_views(&report.read);
    report
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn url(text: &str) -> reqwest::Url {
        reqwest::Url::parse(text).unwrap()
    }

    /// R-WIT-3: a redirect is followed only to the same witness. An https
    /// witness redirecting to plain http on its own host and port is a
    /// downgrade, and a redirect to another host or port leaves the witness.
    #[test]
    fn r_wit_3_a_redirect_from_https_to_http_on_the_same_host_and_port_is_not_followed() {
        let from = url("https://witness.example:8443/add-checkpoint");
        assert!(same_origin(&from, &url("https://witness.example:8443/elsewhere")));
        assert!(!same_origin(&from, &url("http://witness.example:8443/add-checkpoint")), "a TLS downgrade");
        assert!(!same_origin(&from, &url("https://witness.example:8444/add-checkpoint")));
        assert!(!same_origin(&from, &url("https://other.example:8443/add-checkpoint")));
        assert!(!same_origin(&url("https://witness.example/"), &url("http://witness.example:443/")));
    }
}
