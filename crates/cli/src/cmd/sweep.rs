//! `agentplane sweep`: every tenant's checkpoint, signed now, cosigned by
//! the configured witnesses, each round held to the quorum.

use std::collections::BTreeMap;
use std::sync::Arc;

use journal_core::{Runtime, RuntimeBuilder, Store, SweepOutcome, SweepReport};
use serde::Serialize;
use witness::{HttpWitness, QuorumOutcome, TrustedWitness, Witness, WitnessQuorum};

use crate::backend::open_for_signing;
use crate::config::{Settings, interval};
use crate::context::cli_build;
use crate::failure::Failure;
use crate::high_water::{FileHighWater, probes};
use crate::keys::PlaneKeys;
use crate::output::{FailureRow, print_json_line, printable};

/// `sweep --json`: one JSON Lines object per tenant and round. Fields in
/// alphabetical order, as the JSON has always been printed.
#[derive(Debug, Serialize)]
struct RoundRow<'a> {
    /// When the round ended (RFC 3339, UTC, seconds).
    at: &'a str,
    /// The distinct witnesses that cosigned (as the quorum counts them).
    cosigned: Option<usize>,
    needed: Option<usize>,
    needs_attention: bool,
    outcome: &'static str,
    problems: Vec<ProblemRow>,
    root: String,
    size: u64,
    tenant: &'a str,
}

/// A witness that did not cosign, and why.
#[derive(Debug, Clone, Serialize)]
struct ProblemRow {
    error: String,
    witness: String,
}

type Witnesses = (Vec<Arc<dyn Witness + Send + Sync>>, Vec<TrustedWitness>, WitnessQuorum);

fn witnesses(settings: &Settings) -> Result<Witnesses, Failure> {
    let plane = settings.plane.as_ref().filter(|plane| !plane.witnesses.is_empty()).ok_or_else(|| {
        Failure::Usage(
            "no witness configured: add a [[witness]] with its url and key (the witness's verifier key) to \
             agentplane.toml, and set quorum to how many of them must cosign (a new plane: agentplane init --witness \
             URL=VKEY --quorum N)"
                .into(),
        )
    })?;
    // Entries with one URL are one witness holding several keys (Ed25519 and
    // ML-DSA-44, say): one submission, whose answer carries a line per key.
    let mut by_url: Vec<(&str, Vec<TrustedWitness>)> = Vec::new();
    let mut keys = Vec::new();
    for entry in &plane.witnesses {
        let trusted = agentplane_cli::plane_config::check_witness_key(&entry.key)
            .map_err(|err| Failure::Usage(format!("witness {}: key: {err}", entry.url)))?;
        match by_url.iter_mut().find(|(url, _)| *url == entry.url) {
            Some((_, url_keys)) if url_keys.iter().any(|key| key.same_key(&trusted)) => {
                return Err(Failure::Usage(format!(
                    "witness {} is listed twice with one key: a quorum counts distinct witnesses",
                    entry.url
                )));
            }
            Some((_, url_keys)) => url_keys.push(trusted.clone()),
            None => by_url.push((&entry.url, vec![trusted.clone()])),
        }
        keys.push(trusted);
    }
    let mut clients: Vec<Arc<dyn Witness + Send + Sync>> = Vec::new();
    for (url, url_keys) in by_url {
        let client = HttpWitness::new(url, url_keys).map_err(|err| Failure::Usage(format!("witness: {err}")))?;
        clients.push(Arc::new(client));
    }
    Ok((clients, keys, WitnessQuorum::of(plane.quorum)))
}

fn runtime(settings: &Settings, probe_every: std::time::Duration) -> Result<Runtime, Failure> {
    settings.require_named_tenant()?;
    let keys = PlaneKeys::read(&settings.keys)?;
    settings.require_the_tenant_s_log_key(&keys)?;
    let store: Arc<dyn Store> = open_for_signing(&settings.store)?;
    let (clients, witness_keys, quorum) = witnesses(settings)?;
    // What a witness holds counts only when the plane signed it.
    let log_keys = keys
        .origins()
        .iter()
        .map(|origin| keys.log_for(origin).map(witness::LogKey::verifier_key))
        .collect::<Result<Vec<_>, _>>()?;
    let probes =
        settings.plane.as_ref().map(|plane| probes(&plane.witnesses, &log_keys)).transpose()?.unwrap_or_default();
    let mut builder = RuntimeBuilder::new(store)
        .signer(Arc::new(keys.record.clone()))
        .verifier(Arc::new(keys.record_verifier()?))
        .witnesses(clients, quorum)
        .witness_keys(witness_keys)
        .witness_probes(probes)
        .probe_every(probe_every)
        .high_water(Arc::new(FileHighWater::beside(&settings.keys, &keys)))
        .written_by(cli_build().clone());
    for (tenant, origin) in settings.tenants(Some(&keys))? {
        let log = keys.log_for(&origin)?.clone();
        builder = builder.tenant(tenant, origin, Some(log));
    }
    builder.build().map_err(|err| Failure::Usage(err.to_string()))
}

/// What one tenant's round came to, for printing and for the exit.
struct Round {
    outcome: &'static str,
    got: Option<usize>,
    needed: Option<usize>,
    problems: Vec<ProblemRow>,
}

impl Round {
    fn of(report: &SweepReport) -> Self {
        let (outcome, got, needed, problems) = match &report.outcome {
            SweepOutcome::Skipped { .. } => ("skipped", None, None, Vec::new()),
            SweepOutcome::NoWitnesses => ("no_witnesses", None, None, Vec::new()),
            SweepOutcome::RefusedToSign { reason } => {
                ("refused_to_sign", None, None, vec![("plane".to_owned(), reason.clone())])
            }
            SweepOutcome::Round(QuorumOutcome::Met { cosigned, failures }) => (
                "met",
                // Witnesses, as the quorum counted them (and as a shortfall
                // reports them): not answers, of which one witness listed
                // under two URLs gives two (R-AUD-10).
                Some(witness::count_witnesses(
                    cosigned.iter().flat_map(|c| &c.cosignatures).map(|c| (c.name.as_str(), c.public_key.as_slice())),
                )),
                None,
                failures.iter().map(|f| (f.witness.clone(), f.error.to_string())).collect(),
            ),
            SweepOutcome::Round(QuorumOutcome::Shortfall { got, needed, failures }) => (
                "shortfall",
                Some(*got),
                Some(*needed),
                failures.iter().map(|f| (f.witness.clone(), f.error.to_string())).collect(),
            ),
            SweepOutcome::Round(QuorumOutcome::IntegrityRefusal { refusals, got, needed, failures, .. }) => (
                "integrity",
                Some(*got),
                Some(*needed),
                refusals.iter().chain(failures).map(|f| (f.witness.clone(), f.error.to_string())).collect(),
            ),
        };
        let problems = problems.into_iter().map(|(witness, error)| ProblemRow { error, witness }).collect();
        Self { outcome, got, needed, problems }
    }

    /// The round in one line: the tenant, the outcome, the size and counts.
    fn line(&self, report: &SweepReport) -> String {
        let mut line = format!("tenant {}: {} at size {}", report.tenant, self.outcome, report.tree.size);
        if let Some(got) = self.got {
            line.push_str(&format!(", {got} cosigned"));
        }
        if let Some(needed) = self.needed {
            line.push_str(&format!(" of {needed} needed"));
        }
        line
    }

    /// Why the round needs attention, naming the tenant, each witness and its cause.
    fn cause(&self, report: &SweepReport) -> String {
        let why: Vec<String> =
            self.problems.iter().map(|ProblemRow { error, witness }| format!("{witness}: {error}")).collect();
        if why.is_empty() { self.line(report) } else { format!("{} ({})", self.line(report), why.join("; ")) }
    }
}

/// Prints one tenant's round (a line, or a JSON Lines object); with
/// `timed`, a text line starts with the time. Returns the round.
fn show(report: &SweepReport, json: bool, timed: bool) -> Result<Round, Failure> {
    let round = Round::of(report);
    let at = now();
    if json {
        print_json_line(&RoundRow {
            at: &at,
            cosigned: round.got,
            needed: round.needed,
            needs_attention: report.needs_attention(),
            outcome: round.outcome,
            problems: round.problems.clone(),
            root: report.tree.root.to_string(),
            size: report.tree.size,
            tenant: report.tenant.as_str(),
        })?;
    } else {
        let stamp = if timed { format!("{at} ") } else { String::new() };
        outln!("{stamp}{}", round.line(report));
        for ProblemRow { error, witness } in &round.problems {
            outln!("{stamp}  {witness}: {error}");
        }
    }
    Ok(round)
}

/// Now, in RFC 3339 UTC to the second.
fn now() -> String {
    jiff::Timestamp::now().round(jiff::Unit::Second).map_or_else(|_| String::new(), |t| t.to_string())
}

/// `sweep --every --json`: a round (or one tenant's part of it) that
/// failed, and the sweep goes on: the failure's JSON with the time.
#[derive(Debug, Serialize)]
struct FailedRoundRow<'a> {
    at: &'a str,
    #[serde(flatten)]
    failure: FailureRow,
}

/// What one round came to: the causes of the tenants' rounds that need
/// attention, and the failures (a tenant's round that could not be held,
/// or the round's own set-up), in the order they happened.
#[derive(Default)]
struct RoundResult {
    causes: Vec<String>,
    failures: Vec<Failure>,
}

/// Says a round's failure with its time: a JSON line on stdout with
/// `--json` (the stream says it where it happened), and on stderr when
/// `on_stderr` (the command's own exit says the first of a one-shot sweep).
/// Under `--every` (`goes_on`), the sweep goes on and tries again next round.
fn say_failed(failure: &Failure, json: bool, on_stderr: bool, goes_on: bool) {
    let at = now();
    if json {
        // A line that cannot be printed is said on stderr anyway.
        let _ = print_json_line(&FailedRoundRow { at: &at, failure: FailureRow::of(failure) });
    }
    if on_stderr {
        let then = if goes_on { ", the sweep goes on" } else { "" };
        errln!(
            "{at} agentplane: a round failed ({}){then}: {}",
            failure.class().as_str(),
            printable(&store_pg::redact(&failure.message()))
        );
    }
}

/// A failure of one tenant's round, named as that tenant's.
fn of_tenant(tenant: &str, failure: Failure) -> Failure {
    let named = |message: String| format!("tenant {tenant}: {message}");
    match failure {
        Failure::Findings(message) => Failure::Findings(named(message)),
        Failure::Usage(message) => Failure::Usage(named(message)),
        Failure::Io(message) => Failure::Io(named(message)),
        Failure::BuildSkew(message) => Failure::BuildSkew(named(message)),
        other => other,
    }
}

/// One round over every tenant. `last` holds what each tenant's previous
/// round printed: under `--every`, a round that only repeats a skip is not
/// printed again. A tenant's round that fails leaves the others to be
/// swept; its failure is in the result.
fn round(
    runtime: &Runtime,
    settings: &Settings,
    only: Option<&str>,
    json: bool,
    last: &mut BTreeMap<String, (&'static str, u64)>,
    timed: bool,
) -> RoundResult {
    let mut result = RoundResult::default();
    let tenants = PlaneKeys::read(&settings.keys).and_then(|keys| settings.tenants(Some(&keys)));
    let tenants = match tenants {
        Ok(tenants) => tenants,
        Err(failure) => {
            result.failures.push(failure);
            return result;
        }
    };
    for (tenant, _) in tenants {
        if only.is_some_and(|only| only != tenant.as_str()) {
            continue;
        }
        let report = match runtime.sweep(&tenant).map_err(Failure::from).and_then(|report| {
            let seen = (Round::of(&report).outcome, report.tree.size);
            let repeat = timed && seen.0 == "skipped" && last.get(tenant.as_str()) == Some(&seen);
            let round = if repeat { Round::of(&report) } else { show(&report, json, timed)? };
            last.insert(tenant.to_string(), seen);
            Ok((report, round))
        }) {
            Ok(report) => report,
            Err(failure) => {
                // Said again next time it is seen: what the round last said is forgotten.
                last.remove(tenant.as_str());
                result.failures.push(of_tenant(tenant.as_str(), failure));
                continue;
            }
        };
        let (report, round) = report;
        if report.needs_attention() {
            result.causes.push(round.cause(&report));
        }
    }
    result
}

/// `agentplane sweep [--every DURATION] [--probe-every DURATION]`.
/// With `only` (`--tenant`), that tenant alone is swept. Under `--every`, a
/// round that fails (a store unreachable for a moment, a key file being
/// replaced) is said with its time and the next round tries again: a sweep
/// that stopped at a passing failure would leave the log unwitnessed until
/// someone restarted it. Its exit, after a signal, follows its last round.
/// Build skew is not passing: it ends the sweep (exit 3, R-VER-4).
pub fn sweep(
    settings: &Settings,
    only: Option<&str>,
    every: Option<&str>,
    probe_every: &str,
    json: bool,
) -> Result<(), Failure> {
    let runtime = runtime(settings, interval(probe_every)?)?;
    let every = match every {
        None => None,
        Some("") => {
            let configured =
                settings.plane.as_ref().and_then(|p| p.sweep_every.clone()).ok_or_else(|| {
                    Failure::Usage("--every needs a DURATION, or sweep_every in agentplane.toml".into())
                })?;
            Some(interval(&configured)?)
        }
        Some(text) => Some(interval(text)?),
    };
    let timed = every.is_some();
    let mut last = BTreeMap::new();
    // Under --every, a signal is listened for before the first round.
    let waiting = match every {
        Some(every) => Some((every, StopSignals::listen()?)),
        None => None,
    };
    let mut result = round(&runtime, settings, only, json, &mut last, timed);
    if let Some((every, stop)) = waiting {
        loop {
            // Build skew does not pass: a newer build migrated the store (or
            // wrote what this one cannot read), so no later round of this
            // process can do better (R-VER-4). The sweep ends with it (exit
            // 3), for its supervisor to restart it with the build its
            // remedy names, instead of failing every round for good.
            let skew = result.failures.iter().position(|failure| failure.class() == crate::failure::Class::BuildSkew);
            for failure in &result.failures {
                say_failed(failure, json, true, skew.is_none());
            }
            if let Some(skew) = skew {
                errln!(
                    "agentplane: sweep stopped: this build cannot go on with the store (build skew); the log goes \
                     unwitnessed until the sweep is started again with the build the remedy names"
                );
                return Err(result.failures.swap_remove(skew));
            }
            tracing::debug!(target: "agentplane.sweep", "round ended");
            // Rounds no one reads: the sweep ends after this one, its store
            // closed (a closed pipe, a full disk). Never as a success: it
            // was not asked to stop, and a supervisor that restarts it on
            // failure must (R-WIT-8).
            if crate::output::stdout_lost() {
                let lost = "sweep stopped: its standard output is lost (the reader of its pipe ended, or a full \
                            disk); the log goes unwitnessed until it is started again with its output going \
                            somewhere";
                return match exit_of(result) {
                    Ok(()) => Err(Failure::Io(lost.to_owned())),
                    Err(failure) => {
                        errln!("agentplane: {lost}");
                        Err(failure)
                    }
                };
            }
            if stop.stopped_within(every) {
                errln!("agentplane: sweep stopped by a signal");
                break;
            }
            result = round(&runtime, settings, only, json, &mut last, timed);
        }
    } else {
        let exit = exit_index(&result);
        for (n, failure) in result.failures.iter().enumerate() {
            say_failed(failure, json, Some(n) != exit, false);
        }
    }
    exit_of(result)
}

/// Which of a round's failures the sweep exits with, if one (the others
/// are said on stderr). Findings come first: a tenant that needs attention
/// (an integrity refusal, a shortfall) or whose round found damage is the
/// exit (1) whatever another tenant's round failed of, never hidden behind
/// a passing I/O failure (2); else the first failure (R-WIT-8).
fn exit_index(result: &RoundResult) -> Option<usize> {
    if !result.causes.is_empty() {
        return None;
    }
    let findings = result.failures.iter().position(|failure| failure.class() == crate::failure::Class::Findings);
    findings.or_else(|| (!result.failures.is_empty()).then_some(0))
}

/// The sweep's exit, as its last round came to.
fn exit_of(result: RoundResult) -> Result<(), Failure> {
    if let Some(failure) = exit_index(&result).and_then(|n| result.failures.into_iter().nth(n)) {
        return Err(failure);
    }
    if result.causes.is_empty() {
        Ok(())
    } else {
        Err(Failure::Findings(format!("the sweep needs attention: {}", result.causes.join("; "))))
    }
}

/// The signals that stop `sweep --every`, listened for on a thread of
/// their own from before its first round to its end. The first SIGINT or
/// SIGTERM is kept and stops the sweep once the round under way is done
/// (listened for afresh at each wait, one that came during a round was
/// lost and the sweep never stopped). A second ends the process at once:
/// a round hung on witnesses that do not answer would otherwise hold an
/// operator's Ctrl-C for up to their timeouts (exit 2, as a crash would
/// leave it: what the round stored is kept, each write whole or not at all,
/// and the next sweep goes on from there).
struct StopSignals {
    stopped: std::sync::mpsc::Receiver<()>,
}

/// Said when a second signal ends the sweep in the middle of a round.
const SECOND_SIGNAL: &str = "agentplane: a second signal: the sweep stops now, in the middle of its round; what the \
round stored is kept (each write whole or not at all), and the next sweep goes on from there";

impl StopSignals {
    /// Listens from now on (the signals are taken here, before the thread
    /// starts, so none that comes after this returns is missed).
    fn listen() -> Result<Self, Failure> {
        let signals = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| Failure::Io(format!("listening for signals: {err}")))?;
        let mut received = {
            let _context = signals.enter();
            Received::listen()?
        };
        let (stop, stopped) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("agentplane-signals".into())
            .spawn(move || {
                signals.block_on(async {
                    received.next().await;
                    // The sweep may have ended already: no one to tell.
                    let _ = stop.send(());
                    received.next().await;
                    errln!("{SECOND_SIGNAL}");
                    std::process::exit(i32::from(crate::failure::Class::Io.exit_code()));
                });
            })
            .map_err(|err| Failure::Io(format!("listening for signals: {err}")))?;
        Ok(Self { stopped })
    }

    /// Waits `every`; true when a signal came first, or came since the
    /// last wait.
    fn stopped_within(&self, every: std::time::Duration) -> bool {
        !matches!(self.stopped.recv_timeout(every), Err(std::sync::mpsc::RecvTimeoutError::Timeout))
    }
}

/// SIGINT and SIGTERM as one stream.
struct Received {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Received {
    /// Listens, in the current runtime's context.
    fn listen() -> Result<Self, Failure> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let listen = |kind| signal(kind).map_err(|err| Failure::Io(format!("listening for signals: {err}")));
            Ok(Self { terminate: listen(SignalKind::terminate())?, interrupt: listen(SignalKind::interrupt())? })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// The next signal.
    async fn next(&mut self) {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.terminate.recv() => {}
                _ = self.interrupt.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::failure::Class;

    /// R-WIT-8 (review 43): a round whose tenants came to different ends
    /// exits as its findings say. One tenant's round failed of I/O (a store
    /// unreachable for a moment) and another's needs attention (a witness
    /// saw the log fork), or found damage (its mark lost): the exit was the
    /// first failure's, 2 (usage or I/O), and its message named that failure
    /// alone, so the integrity alarm a supervisor watches exit 1 for was
    /// hidden behind a passing failure. Findings come first: exit 1, the
    /// message naming the tenant that needs attention; the failure the exit
    /// does not carry is said on stderr.
    #[test]
    fn r_wit_8_an_integrity_alarm_is_the_sweep_s_exit_whatever_another_tenant_s_round_failed_of() {
        let io = || Failure::Io("tenant shop: the store is unreachable".into());
        let attention =
            RoundResult { causes: vec!["tenant lab: witness w saw the log fork".into()], failures: vec![io()] };
        assert_eq!(exit_index(&attention), None, "the exit is the causes' findings, not the I/O failure");
        let exit = exit_of(attention).unwrap_err();
        assert_eq!(exit.class(), Class::Findings, "{exit}");
        assert!(exit.message().contains("tenant lab: witness w saw the log fork"), "{exit}");

        let damage = Failure::Findings("tenant lab: the plane's record of its last signature is lost".into());
        let found = RoundResult { causes: Vec::new(), failures: vec![io(), damage] };
        assert_eq!(exit_index(&found), Some(1), "the findings failure is the exit; the I/O one is said");
        let exit = exit_of(found).unwrap_err();
        assert_eq!(exit.class(), Class::Findings, "{exit}");
        assert!(exit.message().contains("tenant lab"), "{exit}");

        let passing = RoundResult { causes: Vec::new(), failures: vec![io()] };
        assert_eq!(exit_of(passing).unwrap_err().class(), Class::Io, "a failure alone is the exit");
        assert!(exit_of(RoundResult::default()).is_ok());
    }
}
