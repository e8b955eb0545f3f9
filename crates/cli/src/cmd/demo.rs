//! `agentplane demo`: sample agent runs that reach every outcome, on the
//! embedded store, then the runs and the signed checkpoint.

use journal_core::record::EffectStarted;
use journal_core::regression::RunContext;
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, Dimension, DoubtAnswer, EffectOutput, EffectResult, RecordBody,
    RunHandle, Runtime, RuntimeError,
};

use super::checkpoint::sign;
use super::runs::{print_table, run_rows};
use crate::args::Cli;
use crate::config::{DEFAULT_CONFIG, DEMO_DIR, PlaneFiles, Settings, init_plane};
use crate::context::Plane;
use crate::failure::Failure;
use crate::keys::DEFAULT_ORIGIN;

fn charge(output: &str, tokens: u64) -> EffectOutput {
    EffectOutput {
        result: EffectResult::Ok { output: output.to_owned() },
        charged: Counters { tokens, cost_micros: tokens * 2, wall_millis: 40, ..Counters::default() },
    }
}

fn admit<'rt>(runtime: &'rt Runtime, plane: &Plane, key: &str, budget: Budget) -> Result<RunHandle<'rt>, Failure> {
    let request =
        AdmitRequest { idempotency_key: key.to_owned(), plan: vec!["research".into(), "answer".into()], budget };
    match runtime.admit(&plane.tenant, request)? {
        Admission::New(handle) => Ok(*handle),
        Admission::Existing { run, status } => {
            Err(Failure::Usage(format!("{key} was already admitted as {run} ({status})")))
        }
    }
}

/// The demo's agent code, one function per kind of run, written against
/// [`RunContext`] so the same code drives a live run and replays a recorded
/// one (`agentplane demo`'s runs are its regression fixtures).
pub(crate) fn agent(kind: &str, run: &mut impl RunContext) -> Result<(), RuntimeError> {
    match kind {
        "answered" => {
            run.start_step("research")?;
            run.effect("ek:search", "research", || charge("3 sources", 120))?;
            run.effect("ek:summarize", "research", || charge("summary", 80))?;
            run.finish_step("research")?;
            run.succeed("question answered")
        }
        // Its read crosses a 150-token ceiling; once raised, the run goes on.
        "raised" => {
            run.start_step("research")?;
            run.effect("ek:search", "research", || charge("10 sources", 100))?;
            run.effect("ek:read", "research", || charge("long read", 90))?;
            run.effect("ek:answer", "research", || charge("answer", 30))?;
            run.succeed("answered after the ceiling was raised")
        }
        // Its payment's fate is answered by a person.
        "doubt-answered" => {
            run.effect("ek:pay", "research", || charge("never performed: a person answered", 0))?;
            run.succeed("payment confirmed by a person")
        }
        "failed" => {
            run.start_step("research")?;
            run.effect("ek:fetch", "research", || EffectOutput {
                result: EffectResult::Err { error: "upstream 503".into() },
                charged: Counters { wall_millis: 900, ..Counters::default() },
            })?;
            run.succeed("never reached: the fetch fails")
        }
        // Allowed one effect.
        "exhausted" => {
            run.effect("ek:one", "research", || charge("one", 10))?;
            run.effect("ek:two", "research", || charge("two", 10))?;
            run.succeed("never reached: the second effect is refused")
        }
        "quarantined" => {
            run.effect("ek:transfer", "research", || charge("never performed: the worker died", 0))?;
            run.succeed("never reached: the transfer is in doubt")
        }
        // Withheld, cancelled and abandoned before the code ran.
        _ => run.succeed("never reached: an operator stopped the run first"),
    }
}

/// Admits a run that this demo does not drive itself; returns its id.
fn admit_id(runtime: &Runtime, plane: &Plane, key: &str) -> Result<journal_core::RunId, Failure> {
    Ok(admit(runtime, plane, key, Budget::default())?.run().clone())
}

/// Stops the demo unless the error is the conclusion the scenario expects.
fn expect_stop<T>(result: Result<T, RuntimeError>) -> Result<(), Failure> {
    match result {
        Err(RuntimeError::Stopped { .. }) => Ok(()),
        Err(other) => Err(other.into()),
        Ok(_) => Err(Failure::Io("the demo expected this effect to stop the run".into())),
    }
}

/// The number of the next set of sample runs, after the largest set a demo
/// admitted (a demo killed part way leaves its set partly admitted: a
/// number counted from the runs picked it again, refused as admitted every
/// time after); `None` when a run of the store was not admitted by a demo.
fn next_demo_set(plane: &Plane) -> Result<Option<u64>, Failure> {
    let mut largest = 0;
    for run in plane.store.runs(&plane.tenant, None)? {
        let rows = plane.store.read_run(&plane.tenant, &run)?.rows;
        let key = rows.first().and_then(journal_core::store::idempotency_key_of);
        let Some(rest) = key.as_deref().and_then(|key| key.strip_prefix("demo-")) else {
            return Ok(None);
        };
        let set = rest.split_once('-').and_then(|(set, _)| set.parse::<u64>().ok()).unwrap_or(0);
        largest = largest.max(set);
    }
    Ok(Some(largest.saturating_add(1)))
}

pub fn run(settings: &Settings, cli: &Cli) -> Result<(), Failure> {
    // A plane of its own, unless the caller chose one. `--store` of a
    // PostgreSQL database with no plane here (no configuration, no key
    // file) makes that plane folder too, pointed at the database.
    let own;
    let postgres_without_plane = settings.config_path.is_none()
        && crate::backend::postgres_url(&settings.store).is_some()
        && !settings.keys.exists();
    let settings = if settings.config_path.is_none() && (!settings.store_chosen || postgres_without_plane) {
        let dir = std::path::Path::new(DEMO_DIR);
        let config = dir.join(DEFAULT_CONFIG);
        let files = if postgres_without_plane {
            PlaneFiles { store: settings.store.clone(), ..PlaneFiles::default() }
        } else {
            PlaneFiles::default()
        };
        if !config.is_file() {
            std::fs::create_dir_all(dir).map_err(|err| Failure::Io(format!("creating {}: {err}", dir.display())))?;
            init_plane(dir, &files, &[], DEFAULT_ORIGIN, Vec::new(), 0, "5m")?;
        }
        own = Settings::of_config(config, cli)?;
        if postgres_without_plane && own.store != settings.store {
            return Err(Failure::Usage(format!(
                "./{DEMO_DIR} is a demo plane on {} already, not on {}: run the demo in another folder for \
                 this database",
                crate::backend::display(&own.store),
                crate::backend::display(&settings.store)
            )));
        }
        &own
    } else {
        settings
    };
    let plane = Plane::open(settings, true)?;
    let Some(batch) = next_demo_set(&plane)? else {
        return Err(Failure::Usage(format!(
            "{} holds runs the demo did not make: the demo writes only to a plane of its own (run it without --store or --config)",
            crate::backend::display(&settings.store)
        )));
    };
    let cli = settings;
    let runtime = plane.runtime()?;
    let t = &plane.tenant;
    let key = |name: &str| format!("demo-{batch}-{name}");
    errln!(
        "demo: admitting 9 sample runs (set {batch}) for tenant {} in {}",
        plane.tenant,
        crate::backend::display(&cli.store)
    );

    // Succeeded: two effects, sealed.
    let mut run = admit(&runtime, &plane, &key("answered"), Budget::default())?;
    agent("answered", &mut run)?;

    // Exhausted, raised, resumed, succeeded.
    let mut run = admit(&runtime, &plane, &key("raised"), Budget { tokens: Some(150), ..Budget::default() })?;
    let id = run.run().clone();
    expect_stop(agent("raised", &mut run))?;
    runtime.raise_ceiling(t, &id, Dimension::Tokens, Some(1_000))?;
    // The resumed worker picks up after the read (done effects read back, never performed twice).
    let mut resumed = runtime.resume(t, &id)?;
    resumed.effect("ek:read", "research", || charge("never performed twice", 999))?;
    resumed.effect("ek:answer", "research", || charge("answer", 30))?;
    resumed.succeed("answered after the ceiling was raised")?;

    // Quarantined (a worker died mid-effect), answered, succeeded.
    let id = admit_id(&runtime, &plane, &key("doubt-answered"))?;
    simulate_crash_mid_effect(&plane, &id, "ek:pay")?;
    expect_stop(runtime.resume(t, &id))?;
    runtime.answer_doubt(
        t,
        &id,
        "ek:pay",
        DoubtAnswer::Happened { result: EffectResult::Ok { output: "receipt 42".into() } },
    )?;
    runtime.resume(t, &id)?.succeed("payment confirmed by a person")?;

    // Left open: failed, exhausted, withheld, quarantined.
    let mut run = admit(&runtime, &plane, &key("failed"), Budget::default())?;
    expect_stop(agent("failed", &mut run))?;
    let mut run = admit(&runtime, &plane, &key("exhausted"), Budget { effects: Some(1), ..Budget::default() })?;
    expect_stop(agent("exhausted", &mut run))?;
    let id = admit_id(&runtime, &plane, &key("withheld"))?;
    runtime.withhold(t, &id, "held for compliance review")?;
    let id = admit_id(&runtime, &plane, &key("quarantined"))?;
    simulate_crash_mid_effect(&plane, &id, "ek:transfer")?;
    expect_stop(runtime.resume(t, &id))?;

    // Sealed without success: cancelled, abandoned.
    let id = admit_id(&runtime, &plane, &key("cancelled"))?;
    runtime.cancel(t, &id, "the user withdrew the question")?;
    let id = admit_id(&runtime, &plane, &key("abandoned"))?;
    runtime.abandon(t, &id, "superseded")?;

    print_table(&run_rows(plane.store.as_ref(), &plane.tenant, None, &|run| plane.read(run), &|_| None)?);
    outln!();
    outln!("log verifier key:");
    outln!("{}", plane.log.verifier_key());
    outln!();
    outln!("signed checkpoint:");
    out!("{}", sign(&plane)?.note());
    errln!(
        "the plane is {}: its configuration {}, keys {}, store {}",
        settings
            .config_path
            .as_deref()
            .and_then(|p| p.parent())
            .filter(|dir| !dir.as_os_str().is_empty())
            .map_or_else(|| "this directory".into(), |p| p.display().to_string()),
        settings.config_path.as_deref().map_or_else(|| "(none)".into(), |p| p.display().to_string()),
        settings.keys.display(),
        crate::backend::display(&settings.store)
    );
    if settings.config_path.as_deref().and_then(|p| p.parent()) == Some(std::path::Path::new(DEMO_DIR)) {
        errln!("run the other commands in the plane's folder: `cd {DEMO_DIR}`, then `agentplane runs`");
    }
    Ok(())
}

/// What a worker that died between starting an effect and recording its end
/// leaves behind: an `EffectStarted` with no `EffectDone`.
fn simulate_crash_mid_effect(plane: &Plane, run: &journal_core::RunId, effect_key: &str) -> Result<(), Failure> {
    let head = plane.store.read_run(&plane.tenant, run)?.head;
    let signer = plane.keys.record.clone();
    let journal = plane.journal().signed_by(&signer);
    let body = RecordBody::EffectStarted(EffectStarted {
        step: "research".into(),
        reserved: Counters { effects: 1, ..Counters::default() },
    });
    journal.append(run, head, Some(effect_key.to_owned()), body)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use clap::Parser;
    use journal_core::regression::{Divergence, replay};
    use journal_core::{ChainCheck, Upcasters, VerifyOptions};

    use super::*;

    /// The demo's runs are regression fixtures of the demo's own agent code:
    /// every run (each outcome, resumed, raised, answered) replays through the
    /// unchanged code to a match at the recorded cost; other code diverges;
    /// and the replays leave the redb file's bytes and counters as they were.
    #[test]
    fn every_demo_run_replays_through_the_unchanged_demo_agent() {
        let dir = tempfile::tempdir().unwrap();
        init_plane(dir.path(), &PlaneFiles::default(), &[], DEFAULT_ORIGIN, Vec::new(), 0, "5m").unwrap();
        let config = dir.path().join(DEFAULT_CONFIG);
        let cli = Cli::try_parse_from(["agentplane", "--config", config.to_str().unwrap(), "demo"]).unwrap();
        let settings = Settings::of_config(config, &cli).unwrap();
        run(&settings, &cli).unwrap();

        let plane = Plane::open(&settings, false).unwrap();
        let before = std::fs::read(&settings.store).unwrap();
        let counters = plane.store.log_counters(&plane.tenant).unwrap();
        let upcasters = Upcasters::builtin();
        let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
        let plan = ["research".to_owned(), "answer".to_owned()];
        let runs = plane.store.runs(&plane.tenant, None).unwrap();
        let mut kinds = Vec::new();
        for id in &runs {
            let verified = plane.journal().read(id, check).unwrap();
            let key = verified.idempotency_key().unwrap().to_owned();
            let kind = key.strip_prefix("demo-1-").unwrap().to_owned();
            let report = replay(id, &verified.records, &plan, |r| agent(&kind, r));
            assert!(report.matched(), "{kind}: {report:?}");
            assert_eq!(report.recorded_cost.tokens, report.replayed_cost.tokens, "{kind}");
            if kind == "answered" || kind == "raised" {
                let other = if kind == "answered" { "raised" } else { "answered" };
                let changed = replay(id, &verified.records, &plan, |r| agent(other, r));
                assert!(
                    matches!(changed.divergence, Some((_, Divergence::UnexpectedEffect { .. }))),
                    "{kind} replayed as {other}: {changed:?}"
                );
            }
            kinds.push(kind);
        }
        kinds.sort();
        assert_eq!(
            kinds,
            [
                "abandoned",
                "answered",
                "cancelled",
                "doubt-answered",
                "exhausted",
                "failed",
                "quarantined",
                "raised",
                "withheld"
            ]
        );
        assert_eq!(plane.store.log_counters(&plane.tenant).unwrap(), counters);
        assert!(std::fs::read(&settings.store).unwrap() == before, "a replay changed the redb file");
    }
}
