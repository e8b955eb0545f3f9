//! `agentplane cost`: what a run, or the whole tenant, has consumed, by the
//! time on each record; every figure read through chain verification.

use journal_core::runtime::try_cost_in;
use journal_core::{CostOverflow, Counters, TimeWindow, Unvouched};
use serde::Serialize;

use crate::args::run_id;
use crate::config::Settings;
use crate::context::{Reader, SignatureRead, strictly, unvouched, unvouched_said};
use crate::failure::Failure;
use crate::output::print_json;

/// `cost --json`. Fields in alphabetical order, as the JSON has always been printed.
#[derive(Debug, Serialize)]
struct CostRow {
    cost_micros: u64,
    effects: u64,
    runs: usize,
    scope: String,
    /// `checked` (every signature verified with the plane's record key) or
    /// `not checked` (no key file at hand, or `--skip-signatures`).
    signatures: &'static str,
    since: Option<String>,
    steps: u64,
    tokens: u64,
    /// Of the records counted, how many carry no signature: `null` when
    /// signatures were not checked.
    unsigned: Option<u64>,
    until: Option<String>,
    /// Of the records counted, how many are signed by a key id this plane
    /// does not trust (nothing about them was checked): `null` when
    /// signatures were not checked.
    untrusted: Option<u64>,
    wall_millis: u64,
}

pub use journal_core::run_state::Totals;

/// A figure as text: the number, or that it passes `u64::MAX`.
pub fn figure(total: Option<u64>) -> String {
    total.map_or_else(|| "past 2^64-1".to_owned(), |total| total.to_string())
}

/// A total past `u64::MAX`: no figure is printed, as one held at the limit
/// would hide every charge after it (R-RUN-7).
fn overflow(err: CostOverflow) -> Failure {
    Failure::Usage(err.to_string())
}

/// `agentplane cost [RUN] [--since AT] [--until AT] [--skip-signatures | --require-signature] [--json]`.
pub fn cost(
    settings: &Settings,
    run: Option<&str>,
    window: TimeWindow,
    signatures: SignatureRead,
    json: bool,
) -> Result<(), Failure> {
    // A window that holds no instant counts nothing: the flags are wrong, not the spending nil.
    if let (Some(since), Some(until)) = (window.since, window.until)
        && until <= since
    {
        return Err(Failure::Usage(format!(
            "--until {until} is not after --since {since}: the window counts records written at or after --since and \
             before --until, so it holds none (were the two swapped?)"
        )));
    }
    let reader = Reader::open(settings)?.signatures(signatures);
    let run = run.map(run_id).transpose()?;
    let mut counted = Unvouched::default();
    let (runs, counters) = match &run {
        // A figure read from bytes nobody verified is not reported: the run's problem is.
        Some(run) => {
            let verified = reader.read(run)?;
            counted = counted.plus(unvouched(&reader, &verified, window).unwrap_or_default());
            (1, try_cost_in(&verified, window).map_err(overflow)?)
        }
        // The tenant's: every run whose records are stored, read in one
        // snapshot, so a run the runs table no longer lists is refused, not
        // left out of the figure (R-RUN-7).
        None => {
            let (mut runs, mut counters) = (0, Ok(Counters::default()));
            reader.each_run(&mut |_, verified| {
                let verified = verified?;
                counted = counted.plus(unvouched(&reader, &verified, window).unwrap_or_default());
                counters = counters.and_then(|sum: Counters| sum.checked_add(&try_cost_in(&verified, window)?));
                runs += 1;
                Ok(())
            })?;
            (runs, counters.map_err(overflow)?)
        }
    };
    let checked = reader.verifier.is_some();
    let mut scope = run.as_ref().map_or_else(|| format!("tenant {}", reader.tenant), |r| format!("run {r}"));
    if let Some(since) = window.since {
        scope.push_str(&format!(" since {since}"));
    }
    if let Some(until) = window.until {
        scope.push_str(&format!(" until {until}"));
    }
    if json {
        return print_json(&CostRow {
            cost_micros: counters.cost_micros,
            effects: counters.effects,
            runs,
            scope,
            signatures: if checked { "checked" } else { "not checked" },
            since: window.since.map(|at| at.to_string()),
            steps: counters.steps,
            tokens: counters.tokens,
            unsigned: checked.then_some(counted.unsigned),
            until: window.until.map(|at| at.to_string()),
            untrusted: checked.then_some(counted.untrusted),
            wall_millis: counters.wall_millis,
        });
    }
    outln!(
        "{scope}, {} run{}: {} tokens, {} cost micros, {} steps, {} effects, {} ms",
        runs,
        if runs == 1 { "" } else { "s" },
        counters.tokens,
        counters.cost_micros,
        counters.steps,
        counters.effects,
        counters.wall_millis
    );
    if checked && let Some(said) = unvouched_said(counted, "of the records counted", &strictly("cost")) {
        outln!("{said}");
    }
    Ok(())
}
