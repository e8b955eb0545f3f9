//! `agentplane demo`: sample agent runs that reach every outcome, on the
//! embedded store, then the runs and the signed checkpoint.

use journal_core::record::EffectStarted;
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, Dimension, DoubtAnswer, EffectOutput, EffectResult, RecordBody,
    RunHandle, Runtime, RuntimeError,
};

use crate::commands::{checkpoint, plane, print_runs_table, run_rows};
use crate::config::{DEFAULT_CONFIG, DEMO_DIR, Settings, init_plane};
use crate::keys::DEFAULT_ORIGIN;
use crate::{Cli, Failure};

fn charge(output: &str, tokens: u64) -> EffectOutput {
    EffectOutput {
        result: EffectResult::Ok { output: output.to_owned() },
        charged: Counters { tokens, cost_micros: tokens * 2, wall_millis: 40, ..Counters::default() },
    }
}

fn admit<'rt>(
    runtime: &'rt Runtime,
    plane: &crate::commands::Plane,
    key: &str,
    budget: Budget,
) -> Result<RunHandle<'rt>, Failure> {
    let request =
        AdmitRequest { idempotency_key: key.to_owned(), plan: vec!["research".into(), "answer".into()], budget };
    match runtime.admit(&plane.tenant, request)? {
        Admission::New(handle) => Ok(*handle),
        Admission::Existing { run, status } => {
            Err(Failure::Usage(format!("{key} was already admitted as {run} ({status})")))
        }
    }
}

/// Admits a run that this demo does not drive itself; returns its id.
fn admit_id(runtime: &Runtime, plane: &crate::commands::Plane, key: &str) -> Result<journal_core::RunId, Failure> {
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

/// Whether every run of the store was admitted by a demo.
fn only_demo_runs(plane: &crate::commands::Plane) -> Result<bool, Failure> {
    for run in plane.store.runs(&plane.tenant, None)? {
        let rows = plane.store.read_run(&plane.tenant, &run)?.rows;
        let key = rows.first().and_then(journal_core::store::idempotency_key_of);
        if !key.is_some_and(|key| key.starts_with("demo-")) {
            return Ok(false);
        }
    }
    Ok(true)
}

pub fn run(settings: &Settings, cli: &Cli) -> Result<(), Failure> {
    // A plane of its own, unless the caller chose one.
    let own;
    let settings = if settings.config_path.is_none() && !settings.store_chosen {
        let dir = std::path::Path::new(DEMO_DIR);
        let config = dir.join(DEFAULT_CONFIG);
        if !config.is_file() {
            std::fs::create_dir_all(dir).map_err(|err| Failure::Io(format!("creating {}: {err}", dir.display())))?;
            init_plane(dir, &[], DEFAULT_ORIGIN, Vec::new(), 0, "5m")?;
        }
        own = Settings::of_config(config, cli)?;
        &own
    } else {
        settings
    };
    let plane = plane(settings, true)?;
    if !only_demo_runs(&plane)? {
        return Err(Failure::Usage(format!(
            "{} holds runs the demo did not make: the demo writes only to a plane of its own (run it without --store or --config)",
            settings.store.display()
        )));
    }
    let cli = settings;
    let runtime = plane.runtime()?;
    let t = &plane.tenant;
    let batch = plane.store.runs(t, None)?.len() / 8 + 1;
    let key = |name: &str| format!("demo-{batch}-{name}");
    eprintln!("running demo batch {batch} in {}", cli.store.display());

    // Succeeded: two effects, sealed.
    let mut run = admit(&runtime, &plane, &key("answered"), Budget::default())?;
    run.start_step("research")?;
    run.effect("ek:search", "research", || charge("3 sources", 120))?;
    run.effect("ek:summarize", "research", || charge("summary", 80))?;
    run.finish_step("research")?;
    run.succeed("question answered")?;

    // Exhausted, raised, resumed, succeeded.
    let mut run = admit(&runtime, &plane, &key("raised"), Budget { tokens: Some(150), ..Budget::default() })?;
    let id = run.run().clone();
    run.start_step("research")?;
    run.effect("ek:search", "research", || charge("10 sources", 100))?;
    expect_stop(run.effect("ek:read", "research", || charge("long read", 90)))?;
    runtime.raise_ceiling(t, &id, Dimension::Tokens, Some(1_000))?;
    let mut resumed = runtime.resume(t, &id)?;
    resumed.effect("ek:search", "research", || charge("never performed twice", 999))?;
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
    run.start_step("research")?;
    expect_stop(run.effect("ek:fetch", "research", || EffectOutput {
        result: EffectResult::Err { error: "upstream 503".into() },
        charged: Counters { wall_millis: 900, ..Counters::default() },
    }))?;
    let mut run = admit(&runtime, &plane, &key("exhausted"), Budget { effects: Some(1), ..Budget::default() })?;
    run.effect("ek:one", "research", || charge("one", 10))?;
    expect_stop(run.effect("ek:two", "research", || charge("two", 10)))?;
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

    print_runs_table(&run_rows(plane.store.as_ref(), &plane.tenant, None, &|run| plane.read(run))?);
    println!();
    println!("log verifier key:");
    println!("{}", plane.log.verifier_key());
    println!();
    println!("signed checkpoint:");
    print!("{}", checkpoint(&plane)?.note());
    eprintln!(
        "the plane is {}: its configuration {}, keys {}, store {}",
        settings
            .config_path
            .as_deref()
            .and_then(|p| p.parent())
            .map_or_else(|| ".".into(), |p| p.display().to_string()),
        settings.config_path.as_deref().map_or_else(|| "(none)".into(), |p| p.display().to_string()),
        settings.keys.display(),
        settings.store.display()
    );
    Ok(())
}

/// What a worker that died between starting an effect and recording its end
/// leaves behind: an `EffectStarted` with no `EffectDone`.
fn simulate_crash_mid_effect(
    plane: &crate::commands::Plane,
    run: &journal_core::RunId,
    effect_key: &str,
) -> Result<(), Failure> {
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
