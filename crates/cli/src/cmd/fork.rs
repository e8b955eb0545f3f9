//! `agentplane fork RUN --at SEQ`: a new run whose journal records where it
//! came from; agent code resuming it is served the source's effects up to
//! there. `agentplane resume RUN`: the answer a stopped run waits for, then
//! its agent code run on (the demo's, the one agent the command line holds).

use journal_core::{
    Admission, AdmitRequest, Budget, Dimension, DoubtAnswer, EffectResult, RunId, RunStatus, RuntimeError, Verdict,
};

use crate::args::run_id;
use crate::config::Settings;
use crate::context::Plane;
use crate::failure::Failure;

/// `agentplane fork RUN --at SEQ [--key KEY]`: prints the new run's id.
pub fn fork(settings: &Settings, run: &str, at: u64, key: Option<&str>) -> Result<(), Failure> {
    let plane = Plane::open(settings, false)?;
    let runtime = plane.runtime()?;
    let source = run_id(run)?;
    let key = key.map_or_else(|| format!("fork-of-{source}-at-{at}"), str::to_owned);
    // The fork follows the source's frozen plan.
    let plan = plane.read(&source)?.plan().map(<[String]>::to_vec).unwrap_or_default();
    let request = AdmitRequest { idempotency_key: key, plan, budget: Budget::default() };
    match runtime.fork(&plane.tenant, &source, at, request)? {
        Admission::New(handle) => outln!("{}", handle.run()),
        Admission::Existing { run, status } => {
            return Err(Failure::Usage(format!("that fork exists already: run {run} ({status})")));
        }
    }
    Ok(())
}

/// `agentplane resume RUN [--raise DIMENSION=N]... [--lift] [--answer EFFECT_KEY=ANSWER]...`.
pub fn resume(settings: &Settings, run: &str, raise: &[String], lift: bool, answers: &[String]) -> Result<(), Failure> {
    let plane = Plane::open(settings, false)?;
    let runtime = plane.runtime()?;
    let run = run_id(run)?;
    let t = &plane.tenant;
    // Every answer is read before anything is written: one spelt wrong
    // leaves the run as it was.
    let raise = raise.iter().map(|spec| ceiling(spec)).collect::<Result<Vec<_>, _>>()?;
    let answers = answers.iter().map(|spec| doubt_answer(spec)).collect::<Result<Vec<_>, _>>()?;
    // Every answer is held to the run before anything is written (each is
    // its own append: one refused after the others would leave the command
    // half done); the runtime checks each again as it appends.
    if lift || !answers.is_empty() {
        let effects: Vec<&str> = answers.iter().map(|(effect, _)| *effect).collect();
        runtime.check_answers(t, &run, &effects, lift).map_err(|err| match err {
            RuntimeError::NotApplicable { .. } => Failure::Usage(format!("{err}; nothing was written")),
            other => other.into(),
        })?;
    }
    for (dimension, ceiling) in raise {
        runtime.raise_ceiling(t, &run, dimension, ceiling)?;
        errln!("raised the {dimension} ceiling of run {run}");
    }
    // A doubt is answered before the hold is lifted: a worker that died
    // inside an effect under a hold no resume has seen is answerable while
    // the hold stands (R-RUN-5), not once it is lifted.
    for (effect, answer) in answers {
        runtime.answer_doubt(t, &run, effect, answer)?;
        errln!("answered the doubt on effect {effect} of run {run}");
    }
    if lift {
        runtime.lift(t, &run, "lifted with agentplane resume")?;
        errln!("lifted the withholding of run {run}");
    }
    let Some(kind) = demo_kind(&plane, &run)? else {
        errln!(
            "run {run} is not run by the demo's agent code: it continues when its own code resumes it (the answers \
             above are recorded)"
        );
        return Ok(());
    };
    let mut handle = runtime.resume(t, &run).map_err(|err| match err {
        RuntimeError::Stopped { run, status } => Failure::Usage(waits_for(settings, &run, &status)),
        other => other.into(),
    })?;
    let outcome = match super::demo::agent(&kind, &mut handle) {
        Ok(()) => "succeeded".to_owned(),
        Err(RuntimeError::Stopped { .. }) => {
            plane.read(&run)?.last_conclusion().map_or_else(|| "running".to_owned(), |c| c.outcome.as_str().to_owned())
        }
        Err(other) => return Err(other.into()),
    };
    outln!("run {run}: {outcome}");
    Ok(())
}

/// Why a run cannot be run on, and the answer to give (the flag of
/// `resume` that gives it, on the plane and tenant of `settings`), or that
/// it is sealed.
fn waits_for(settings: &Settings, run: &RunId, status: &RunStatus) -> String {
    let resume = settings.command("resume");
    let fork = settings.command("fork");
    match status {
        // The run goes on under a ceiling above the one crossed and not below
        // what it consumed: an effect's charge may have gone past it.
        // The least such ceiling is the one printed, so the command works as printed.
        RunStatus::Exhausted { verdict: Verdict::BudgetExceeded { dimension, ceiling, counters }, .. } => {
            let least = ceiling.saturating_add(1).max(counters.get(*dimension));
            format!(
                "run {run} is {status}; to run it on, raise that ceiling to {least} or more: {resume} {run} --raise \
                 {dimension}={least} (or a larger number, or {dimension}=none for no ceiling)"
            )
        }
        RunStatus::Withheld { .. } => {
            format!("run {run} is {status}; once it may run on: {resume} {run} --lift")
        }
        RunStatus::Quarantined { verdict: Verdict::Doubt { effect_key }, .. } => format!(
            "run {run} is {status}; once a person knows: {resume} {run} --answer {effect_key}=happened (or \
             {effect_key}=not-happened)"
        ),
        RunStatus::Succeeded | RunStatus::Cancelled | RunStatus::Abandoned => format!(
            "run {run} is sealed ({status}): its journal is closed and nothing resumes it ({fork} {run} --at SEQ \
             starts a new run from it)"
        ),
        other => format!("run {run} is {other}"),
    }
}

/// `DIMENSION=N` (or `DIMENSION=none`).
fn ceiling(spec: &str) -> Result<(Dimension, Option<u64>), Failure> {
    let shown = crate::output::shown(spec);
    let (name, value) =
        spec.split_once('=').ok_or_else(|| Failure::Usage(format!("--raise {shown}: expected DIMENSION=N")))?;
    let dimension = Dimension::ALL.into_iter().find(|d| d.to_string() == name).ok_or_else(|| {
        Failure::Usage(format!(
            "--raise {shown}: the dimension is one of tokens, cost_micros, steps, effects, wall_millis"
        ))
    })?;
    let ceiling = match value {
        "none" => None,
        number => Some(number.parse::<u64>().map_err(|err| {
            Failure::Usage(format!(
                "--raise {shown}: the new ceiling is a whole number (such as {dimension}=1000), or `none` for no \
                 ceiling ({err})"
            ))
        })?),
    };
    Ok((dimension, ceiling))
}

/// `EFFECT_KEY=happened` or `EFFECT_KEY=not-happened`.
fn doubt_answer(spec: &str) -> Result<(&str, DoubtAnswer), Failure> {
    let shown = crate::output::shown(spec);
    match spec.rsplit_once('=') {
        Some((effect, "happened")) => Ok((
            effect,
            DoubtAnswer::Happened {
                result: EffectResult::Ok { output: "confirmed by a person (agentplane resume)".into() },
            },
        )),
        Some((effect, "not-happened")) => Ok((effect, DoubtAnswer::DidNotHappen)),
        _ => Err(Failure::Usage(format!("--answer {shown}: expected EFFECT_KEY=happened or EFFECT_KEY=not-happened"))),
    }
}

/// The demo scenario a run plays (`demo-N-KIND`), following forks back to
/// their source; `None` for a run of other agent code.
fn demo_kind(plane: &Plane, run: &RunId) -> Result<Option<String>, Failure> {
    let mut current = run.clone();
    // Forks of forks: followed a bounded number of times, never trusted to end.
    for _ in 0..64 {
        let verified = plane.read(&current)?;
        let key = verified.admission().map(|a| a.idempotency_key.clone()).unwrap_or_default();
        if let Some(rest) = key.strip_prefix("demo-") {
            return Ok(rest.split_once('-').map(|(_, kind)| kind.to_owned()));
        }
        match verified.forked_from() {
            Some(fork) => current = run_id(&fork.source_run)?,
            None => return Ok(None),
        }
    }
    Ok(None)
}
