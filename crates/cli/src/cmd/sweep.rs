//! `agentplane sweep`: every tenant's checkpoint, signed now, cosigned by
//! the configured witnesses, each round held to the quorum.

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
use crate::output::print_json;

/// `sweep --json`: one per tenant and round. Fields in alphabetical order,
/// as the JSON has always been printed.
#[derive(Debug, Serialize)]
struct RoundRow<'a> {
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
#[derive(Debug, Serialize)]
struct ProblemRow {
    error: String,
    witness: String,
}

type Witnesses = (Vec<Arc<dyn Witness + Send + Sync>>, Vec<TrustedWitness>, WitnessQuorum);

fn witnesses(settings: &Settings) -> Result<Witnesses, Failure> {
    let plane = settings.plane.as_ref().filter(|plane| !plane.witnesses.is_empty()).ok_or_else(|| {
        Failure::Usage(
            "no witness configured: add [[witness]] url and key to agentplane.toml (agentplane init --witness URL=VKEY)"
                .into(),
        )
    })?;
    let mut clients: Vec<Arc<dyn Witness + Send + Sync>> = Vec::new();
    let mut keys = Vec::new();
    for entry in &plane.witnesses {
        let trusted = agentplane_cli::plane_config::check_witness_key(&entry.key)
            .map_err(|err| Failure::Usage(format!("witness {}: key: {err}", entry.url)))?;
        let client = HttpWitness::new(&entry.url, vec![trusted.clone()])
            .map_err(|err| Failure::Usage(format!("witness: {err}")))?;
        clients.push(Arc::new(client));
        keys.push(trusted);
    }
    Ok((clients, keys, WitnessQuorum::of(plane.quorum)))
}

fn runtime(settings: &Settings, probe_every: std::time::Duration) -> Result<Runtime, Failure> {
    settings.require_named_tenant()?;
    let keys = PlaneKeys::read(&settings.keys)?;
    let store: Arc<dyn Store> = open_for_signing(&settings.store)?;
    let (clients, witness_keys, quorum) = witnesses(settings)?;
    let probes = settings.plane.as_ref().map(|plane| probes(&plane.witnesses)).transpose()?.unwrap_or_default();
    let mut builder = RuntimeBuilder::new(store)
        .signer(Arc::new(keys.record.clone()))
        .verifier(Arc::new(keys.record_verifier()?))
        .witnesses(clients, quorum)
        .witness_keys(witness_keys)
        .witness_probes(probes)
        .probe_every(probe_every)
        .high_water(Arc::new(FileHighWater::beside(&settings.keys)))
        .written_by(cli_build().clone());
    for (tenant, origin) in settings.tenants(Some(&keys))? {
        let log = keys.log_for(&origin)?.clone();
        builder = builder.tenant(tenant, origin, Some(log));
    }
    builder.build().map_err(|err| Failure::Usage(err.to_string()))
}

/// One line or object per tenant; whether the round needs attention.
fn show(report: &SweepReport, json: bool) -> Result<bool, Failure> {
    let tree = report.tree;
    let (outcome, got, needed, problems) = match &report.outcome {
        SweepOutcome::Skipped { .. } => ("skipped", None, None, Vec::new()),
        SweepOutcome::NoWitnesses => ("no_witnesses", None, None, Vec::new()),
        SweepOutcome::RefusedToSign { reason } => {
            ("refused_to_sign", None, None, vec![("plane".to_owned(), reason.clone())])
        }
        SweepOutcome::Round(QuorumOutcome::Met { cosigned, failures }) => (
            "met",
            Some(cosigned.len()),
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
    let problems: Vec<ProblemRow> =
        problems.into_iter().map(|(witness, error)| ProblemRow { error, witness }).collect();
    if json {
        print_json(&RoundRow {
            cosigned: got,
            needed,
            needs_attention: report.needs_attention(),
            outcome,
            problems,
            root: tree.root.to_string(),
            size: tree.size,
            tenant: report.tenant.as_str(),
        })?;
    } else {
        let mut line = format!("tenant {}: {outcome} at size {}", report.tenant, tree.size);
        if let Some(got) = got {
            line.push_str(&format!(", {got} cosigned"));
        }
        if let Some(needed) = needed {
            line.push_str(&format!(" of {needed} needed"));
        }
        outln!("{line}");
        for ProblemRow { error, witness } in problems {
            outln!("  {witness}: {error}");
        }
    }
    Ok(report.needs_attention())
}

fn round(runtime: &Runtime, settings: &Settings, json: bool) -> Result<bool, Failure> {
    let keys = PlaneKeys::read(&settings.keys)?;
    let mut attention = false;
    for (tenant, _) in settings.tenants(Some(&keys))? {
        let report = runtime.sweep(&tenant)?;
        attention |= show(&report, json)?;
    }
    Ok(attention)
}

/// `agentplane sweep [--every DURATION] [--probe-every DURATION]`.
pub fn sweep(settings: &Settings, every: Option<&str>, probe_every: &str, json: bool) -> Result<(), Failure> {
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
    let mut attention = round(&runtime, settings, json)?;
    if let Some(every) = every {
        let signals = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| Failure::Io(err.to_string()))?;
        while !signals.block_on(stopped_within(every))? {
            attention = round(&runtime, settings, json)?;
        }
        eprintln!("agentplane: sweep stopped by a signal");
    }
    if attention {
        Err(Failure::Findings("a round fell short or was refused on integrity grounds".into()))
    } else {
        Ok(())
    }
}

/// Waits `every`; true when SIGINT or SIGTERM came first.
async fn stopped_within(every: std::time::Duration) -> Result<bool, Failure> {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|err| Failure::Io(err.to_string()))?;
        tokio::select! {
            _ = tokio::time::sleep(every) => Ok(false),
            _ = tokio::signal::ctrl_c() => Ok(true),
            _ = term.recv() => Ok(true),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::select! {
            _ = tokio::time::sleep(every) => Ok(false),
            _ = tokio::signal::ctrl_c() => Ok(true),
        }
    }
}
