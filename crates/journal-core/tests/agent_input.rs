//! What agent code hands the runtime (effect keys, outputs, errors, charges)
//! comes from model output: the runtime and the readers of its journal hold
//! whatever it is to what the run did.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::regression::{RunContext, replay};
use journal_core::runtime::RuntimeError;
use journal_core::{
    Admission, AdmitRequest, Budget, ChainCheck, Counters, EffectOutput, EffectResult, Journal, MemoryStore, Origin,
    RunId, RunStatus, Runtime, TenantId, Upcasters, VerifiedRecord, VerifyOptions,
};

const ORIGIN: &str = "agent-input.test/plane";

fn plane() -> (Arc<MemoryStore>, TenantId, Origin, Runtime) {
    journal_core::testkit_runtime::memory_plane(ORIGIN)
}

fn admit<'rt>(
    runtime: &'rt Runtime,
    tenant: &TenantId,
    key: &str,
    budget: Budget,
) -> Box<journal_core::RunHandle<'rt>> {
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec!["a".into(), "b".into()], budget };
    let Admission::New(handle) = runtime.admit(tenant, request).unwrap() else { panic!("admitted before") };
    handle
}

fn ok(text: &str) -> EffectOutput {
    EffectOutput { result: EffectResult::Ok { output: text.into() }, charged: Counters::default() }
}

fn records(store: &MemoryStore, tenant: &TenantId, origin: &Origin, run: &RunId) -> Vec<VerifiedRecord> {
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    Journal::new(store, tenant, origin).read(run, check).unwrap().records
}

/// R-RUN-1, R-RUN-4: an effect whose error (model output) is over half the
/// record bound was recorded, and then the `failed` conclusion quoting it
/// twice (verdict and reason) was over the bound: refused as too large, the
/// run left with no conclusion and the handle not stopped, so the code went
/// on and sealed the run `succeeded` past its failed effect.
#[test]
fn r_run_1_an_effect_failing_with_a_huge_error_concludes_the_run_failed() {
    let (store, tenant, origin, runtime) = plane();
    let mut run = admit(&runtime, &tenant, "job", Budget::default());
    let id = run.run().clone();
    run.start_step("a").unwrap();
    let error = "e".repeat(journal_core::record::MAX_RECORD_BYTES / 2 + 1024);
    let answer = run.effect("ek:fails", "a", || EffectOutput {
        result: EffectResult::Err { error: error.clone() },
        charged: Counters::default(),
    });
    assert!(matches!(answer, Err(RuntimeError::Stopped { .. })), "the failure stops the code: {:?}", answer.err());
    assert!(
        matches!(run.start_step("b"), Err(RuntimeError::Stopped { .. })),
        "the handle drives nothing more after a failed effect"
    );
    let status = runtime.status(&tenant, &id).unwrap();
    let RunStatus::Failed { verdict: journal_core::Verdict::EffectFailed { effect_key, error: quoted }, reason } =
        status
    else {
        panic!("the run is failed: {status:?}")
    };
    assert_eq!(effect_key, "ek:fails");
    assert!(quoted.len() < journal_core::runtime::handle::MAX_VERDICT_ERROR_BYTES + 200, "the verdict quotes it cut");
    assert!(quoted.starts_with("eee") && quoted.contains("bytes in all"), "and says so");
    assert!(reason.len() < 1024, "the reason quotes it cut: {} bytes", reason.len());
    let chain = records(&store, &tenant, &origin, &id);
    let done = chain.iter().find(|r| matches!(r.record.body, journal_core::RecordBody::EffectDone(_))).unwrap();
    let journal_core::RecordBody::EffectDone(done) = &done.record.body else { unreachable!() };
    assert_eq!(done.result, EffectResult::Err { error }, "the whole error stays in the effect's record");
}

/// R-RUN-1, R-RUN-5: an effect key (model output) as large as a record
/// allowed was started, performed and ended, and then the conclusion about
/// it (a failure's or a doubt's verdict quotes the key) was past the record
/// bound: refused, the run left unconcluded (running) and the handle driving
/// on. A key past its bound is refused, typed, before anything is recorded
/// or performed; a key within it is performed as before.
#[test]
fn r_run_5_an_effect_key_past_its_bound_is_refused_before_it_starts() {
    let (store, tenant, origin, runtime) = plane();
    let mut run = admit(&runtime, &tenant, "job", Budget::default());
    let id = run.run().clone();
    run.start_step("a").unwrap();
    let before = records(&store, &tenant, &origin, &id).len();
    let key = "k".repeat(journal_core::runtime::handle::MAX_EFFECT_KEY_BYTES + 1);
    let answer = run.effect(&key, "a", || unreachable!("never performed"));
    match answer {
        Err(RuntimeError::EffectKeyTooLong { bytes, max, .. }) => {
            assert_eq!((bytes, max), (key.len(), journal_core::runtime::handle::MAX_EFFECT_KEY_BYTES));
        }
        other => panic!("refused as too long: {other:?}"),
    }
    assert_eq!(records(&store, &tenant, &origin, &id).len(), before, "nothing recorded");
    let fine = "k".repeat(journal_core::runtime::handle::MAX_EFFECT_KEY_BYTES);
    run.effect(&fine, "a", || ok("done")).unwrap();
}

fn at_a_ceiling(run: &mut impl RunContext, then: &str) -> Result<(), RuntimeError> {
    run.start_step("a")?;
    run.effect("ek:one", "a", || ok("one"))?;
    run.finish_step("a")?;
    match then {
        "step" => run.start_step("b")?,
        "effect" => {
            run.effect("ek:two", "a", || ok("two"))?;
        }
        "succeed" => return run.succeed("done"),
        _ => unreachable!(),
    }
    run.succeed("done")
}

/// Regression checks: a run the runtime stopped at its steps (or effects)
/// ceiling was stopped by the call that would have gone past it, a step's
/// start (an effect's); new code that did something else there (performed
/// a new effect, started a step, concluded) is not stopped live, yet the
/// replay stopped it at any call and called the run matched.
#[test]
fn a_replay_stops_at_a_steps_or_effects_ceiling_only_the_call_it_refuses() {
    let (store, tenant, origin, runtime) = plane();
    let steps = Budget { steps: Some(1), ..Budget::default() };
    let effects = Budget { effects: Some(1), ..Budget::default() };
    for (key, budget, recorded, refused) in [("steps", steps, "step", "step"), ("effects", effects, "effect", "effect")]
    {
        let mut run = admit(&runtime, &tenant, key, budget);
        let id = run.run().clone();
        assert!(matches!(at_a_ceiling(&mut *run, recorded), Err(RuntimeError::Stopped { .. })));
        assert!(matches!(runtime.status(&tenant, &id).unwrap(), RunStatus::Exhausted { .. }));
        let chain = records(&store, &tenant, &origin, &id);
        let plan = vec!["a".to_owned(), "b".to_owned()];
        let same = replay(&id, &chain, &plan, |r| at_a_ceiling(r, refused));
        assert!(same.matched(), "{key}: the unchanged code matches: {:?}", same.divergence);
        for changed in ["step", "effect", "succeed"].into_iter().filter(|c| *c != refused) {
            let report = replay(&id, &chain, &plan, |r| at_a_ceiling(r, changed));
            assert!(!report.matched(), "{key}: code that does {changed} at the ceiling diverges");
        }
        // The effect read back (done) is not refused by the ceiling, live or replayed.
        let again = replay(&id, &chain, &plan, |r| {
            r.start_step("a")?;
            r.effect("ek:one", "a", || ok("one"))?;
            r.finish_step("a")?;
            let read = r.effect("ek:one", "a", || unreachable!())?;
            assert_eq!(read, EffectResult::Ok { output: "one".into() });
            if refused == "step" { r.start_step("b") } else { r.effect("ek:two", "a", || ok("two")).map(drop) }
        });
        assert!(again.matched(), "{key}: {:?}", again.divergence);
    }
}

/// Regression checks at a steps or effects ceiling reached: the recorded
/// stop is the call the code made there, so code that returns without
/// making it diverges; and the last effect the ceiling allowed is answered,
/// never stopped, so code that goes on otherwise after it diverges too.
#[test]
fn a_replay_at_a_ceiling_reached_holds_the_refused_call_and_answers_the_last_allowed_effect() {
    let (store, tenant, origin, runtime) = plane();
    let plan = vec!["a".to_owned(), "b".to_owned()];
    let steps = Budget { steps: Some(1), ..Budget::default() };
    let mut run = admit(&runtime, &tenant, "steps-quiet", steps);
    let id = run.run().clone();
    assert!(matches!(at_a_ceiling(&mut *run, "step"), Err(RuntimeError::Stopped { .. })));
    let chain = records(&store, &tenant, &origin, &id);
    let quiet = replay(&id, &chain, &plan, |r| {
        r.start_step("a")?;
        r.effect("ek:one", "a", || ok("one"))?;
        r.finish_step("a")
    });
    assert!(!quiet.matched(), "code that never made the refused call diverges");

    let effects = Budget { effects: Some(1), ..Budget::default() };
    let mut run = admit(&runtime, &tenant, "effects-last", effects);
    let id = run.run().clone();
    let live = (|| {
        run.start_step("a")?;
        run.effect("ek:one", "a", || ok("one"))?;
        run.effect("ek:two", "a", || ok("two")).map(drop)
    })();
    assert!(matches!(live, Err(RuntimeError::Stopped { .. })), "{live:?}");
    let chain = records(&store, &tenant, &origin, &id);
    let other = replay(&id, &chain, &plan, |r| {
        r.start_step("a")?;
        assert_eq!(r.effect("ek:one", "a", || ok("one")).unwrap(), EffectResult::Ok { output: "one".into() });
        r.finish_step("a")?;
        r.succeed("done")
    });
    assert!(!other.matched(), "code that finishes its step where the record was stopped diverges");
}
