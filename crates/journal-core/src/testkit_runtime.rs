//! The runtime's cases, run against every backend (issue: the runtime's tests
//! are part of the suite every store passes).
#![allow(clippy::expect_used, clippy::panic, clippy::indexing_slicing, clippy::unwrap_used)]

use std::cell::Cell;
use std::sync::Arc;

use crate::ids::TenantId;
use crate::record::{Budget, Counters, Dimension, DoubtAnswer, EffectResult, Outcome, Verdict};
use crate::regression::RunContext;
use crate::runtime::{
    Admission, AdmitRequest, EffectOutput, RunHandle, RunStatus, Runtime, RuntimeBuilder, RuntimeError,
};
use crate::store::Store;
use crate::testkit::tenant;

fn runtime(store: Arc<dyn Store>) -> Runtime {
    RuntimeBuilder::new(store).tenant(tenant(), crate::testkit::origin(), None).build().expect("runtime")
}

/// A plane on a memory store: tenant `t` of `origin`, and the runtime over
/// it (the set-up of the tests that need the store behind a runtime).
pub fn memory_plane(origin: &str) -> (Arc<crate::MemoryStore>, TenantId, crate::Origin, Runtime) {
    let store = Arc::new(crate::MemoryStore::new());
    let tenant = TenantId::new("t").expect("a valid tenant id");
    let origin = crate::Origin::new(origin).expect("a valid origin");
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), origin.clone(), None)
        .build()
        .expect("runtime");
    (store, tenant, origin, runtime)
}

fn request(key: &str, budget: Budget) -> AdmitRequest {
    AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget }
}

fn admit<'rt>(runtime: &'rt Runtime, key: &str, budget: Budget) -> RunHandle<'rt> {
    match runtime.admit(&tenant(), request(key, budget)).expect("admit") {
        Admission::New(handle) => *handle,
        Admission::Existing { run, status } => panic!("{key} already admitted as {run}: {status}"),
    }
}

fn ok(output: &str, tokens: u64) -> EffectOutput {
    EffectOutput {
        result: EffectResult::Ok { output: output.into() },
        charged: Counters { tokens, ..Counters::default() },
    }
}

/// R-RUN-1/3: every outcome is reached and listed; sealing ones seal.
pub fn every_outcome_and_its_listing(store: Arc<dyn Store>) {
    let rt = runtime(store);
    let t = tenant();
    let mut ids = Vec::new();
    for (i, outcome) in Outcome::ALL.into_iter().enumerate() {
        let mut run = admit(&rt, &format!("outcome-{i}"), Budget { effects: Some(1), ..Budget::default() });
        let id = run.run().clone();
        run.start_step("work").expect("step");
        match outcome {
            Outcome::Succeeded => run.succeed("done").expect("succeed"),
            Outcome::Cancelled => rt.cancel(&t, &id, "not needed").expect("cancel"),
            Outcome::Abandoned => rt.abandon(&t, &id, "gave up").expect("abandon"),
            Outcome::Failed => {
                let err = run.effect("ek:fail", "work", || EffectOutput {
                    result: EffectResult::Err { error: "503".into() },
                    charged: Counters::default(),
                });
                assert!(matches!(err, Err(RuntimeError::Stopped { status: RunStatus::Failed { .. }, .. })), "{err:?}");
            }
            Outcome::Exhausted => {
                run.effect("ek:1", "work", || ok("one", 1)).expect("first effect");
                let err = run.effect("ek:2", "work", || ok("two", 1));
                assert!(
                    matches!(err, Err(RuntimeError::Stopped { status: RunStatus::Exhausted { .. }, .. })),
                    "{err:?}"
                );
            }
            Outcome::Withheld => rt.withhold(&t, &id, "operator hold").expect("withhold"),
            Outcome::Quarantined => {
                run.effect("ek:q", "work", || ok("x", 0)).expect("effect");
                rt.conclude(&t, &id, Outcome::Quarantined, Verdict::Doubt { effect_key: "ek:q".into() }, "checking")
                    .expect("quarantine");
            }
        }
        assert_eq!(rt.status(&t, &id).expect("status").outcome(), Some(outcome), "{outcome}");
        ids.push((outcome, id));
    }
    for (outcome, id) in &ids {
        assert_eq!(rt.runs(&t, Some(*outcome)).expect("listing"), vec![id.clone()], "listing of {outcome}");
        let sealed = rt.store().seal_of(&t, id).expect("seal lookup").is_some();
        assert_eq!(sealed, outcome.seals(), "{outcome} seals: {}", outcome.seals());
    }
}

/// R-RUN-3/5/6: a failed run resumed to success moves between listings, and
/// its completed effect is read back rather than performed again.
pub fn failed_run_resumed_to_success(store: Arc<dyn Store>) {
    let rt = runtime(store);
    let t = tenant();
    let mut run = admit(&rt, "flaky", Budget::default());
    let id = run.run().clone();
    run.start_step("work").expect("step");
    run.effect("ek:fetch", "work", || ok("page", 10)).expect("fetch");
    let err = run.effect("ek:post", "work", || EffectOutput {
        result: EffectResult::Err { error: "timeout".into() },
        charged: Counters::default(),
    });
    assert!(
        matches!(&err, Err(RuntimeError::Stopped { status: RunStatus::Failed { verdict: Verdict::EffectFailed { effect_key, .. }, .. }, .. }) if effect_key == "ek:post"),
        "{err:?}"
    );
    assert_eq!(rt.runs(&t, Some(Outcome::Failed)).expect("failed"), vec![id.clone()]);

    let mut resumed = rt.resume(&t, &id).expect("a failed run resumes");
    let performed = Cell::new(0);
    let fetched = resumed.effect("ek:fetch", "work", || {
        performed.set(performed.get() + 1);
        ok("page again", 10)
    });
    assert_eq!(fetched.expect("read back"), EffectResult::Ok { output: "page".into() });
    assert_eq!(performed.get(), 0, "a done effect is read back, never performed again");
    resumed.effect("ek:post-retry", "work", || ok("posted", 5)).expect("retry");
    resumed.succeed("done").expect("succeed");
    assert!(rt.runs(&t, Some(Outcome::Failed)).expect("failed").is_empty());
    assert_eq!(rt.runs(&t, Some(Outcome::Succeeded)).expect("succeeded"), vec![id]);
}

/// R-RUN-4: redelivering the admission returns the exact verdict; a raised
/// ceiling continues the run (R-RUN-5).
pub fn exhaustion_redelivery_and_raised_ceiling(store: Arc<dyn Store>) {
    let rt = runtime(store);
    let t = tenant();
    let budget = Budget { tokens: Some(100), ..Budget::default() };
    let mut run = admit(&rt, "hungry", budget);
    let id = run.run().clone();
    run.effect("ek:1", "work", || ok("a", 60)).expect("first");
    let err = run.effect("ek:2", "work", || ok("b", 70)).expect_err("crosses the ceiling");
    let expected = Verdict::BudgetExceeded {
        dimension: Dimension::Tokens,
        ceiling: 100,
        counters: Counters { tokens: 130, effects: 2, ..Counters::default() },
    };
    assert!(
        matches!(&err, RuntimeError::Stopped { status: RunStatus::Exhausted { verdict, .. }, .. } if *verdict == expected),
        "{err:?}"
    );
    // The handle that concluded the run drives nothing more.
    let performed = Cell::new(false);
    let again = run.effect("ek:sneak", "work", || {
        performed.set(true);
        ok("x", 1)
    });
    assert!(matches!(again, Err(RuntimeError::Stopped { .. })) && !performed.get(), "{again:?}");
    assert!(matches!(run.start_step("more"), Err(RuntimeError::Stopped { .. })));
    match rt.admit(&t, request("hungry", budget)).expect("redelivery") {
        Admission::Existing { run, status: RunStatus::Exhausted { verdict, reason } } => {
            assert_eq!(run, id);
            assert_eq!(verdict, expected, "the exact ceiling and counters, from the verified journal");
            assert!(reason.contains("tokens ceiling 100"), "{reason}");
        }
        _ => panic!("redelivery must return the exhausted status"),
    }
    assert!(matches!(rt.resume(&t, &id), Err(RuntimeError::Stopped { status: RunStatus::Exhausted { .. }, .. })));
    rt.raise_ceiling(&t, &id, Dimension::Tokens, Some(1_000)).expect("raise");
    let mut resumed = rt.resume(&t, &id).expect("a raised ceiling continues the run");
    resumed.effect("ek:3", "work", || ok("c", 10)).expect("continues");
    resumed.succeed("done").expect("succeed");
    assert_eq!(rt.cost(&t, &id).expect("cost").tokens, 140);
}

/// R-RUN-4, R-RUN-7: a steps or effects ceiling refuses the step or effect it
/// would cross, and the verdict's counters are exactly what `cost` reads from
/// the same journal; a resume with no raised ceiling answers with the verdict
/// and appends nothing; an exhausted conclusion with no verdict is refused.
pub fn count_ceilings_match_cost_and_resume_appends_nothing(store: Arc<dyn Store>) {
    let rt = runtime(store.clone());
    let t = tenant();
    let mut run = admit(&rt, "steps", Budget { steps: Some(2), ..Budget::default() });
    let id = run.run().clone();
    run.start_step("a").expect("first step");
    run.start_step("b").expect("second step");
    let err = run.start_step("c").expect_err("the third step crosses the ceiling");
    let RuntimeError::Stopped { status: RunStatus::Exhausted { verdict, .. }, .. } = err else {
        panic!("exhausted expected: {err:?}")
    };
    let cost = rt.cost(&t, &id).expect("cost");
    assert_eq!(verdict, Verdict::BudgetExceeded { dimension: Dimension::Steps, ceiling: 2, counters: cost });
    assert_eq!(cost.steps, 2, "the refused step was never started");
    let rows = store.read_run(&t, &id).expect("rows").rows.len();
    let again = rt.resume(&t, &id);
    assert!(
        matches!(&again, Err(RuntimeError::Stopped { status: RunStatus::Exhausted { verdict: v, .. }, .. }) if *v == verdict),
        "{:?}",
        again.as_ref().err()
    );
    assert_eq!(
        store.read_run(&t, &id).expect("rows").rows.len(),
        rows,
        "a resume that cannot continue appends nothing"
    );
    rt.raise_ceiling(&t, &id, Dimension::Steps, Some(3)).expect("raise");
    rt.resume(&t, &id).expect("a raised ceiling continues").start_step("c").expect("the third step now");

    let mut run = admit(&rt, "effects", Budget { effects: Some(1), ..Budget::default() });
    let id = run.run().clone();
    run.effect("ek:1", "work", || ok("one", 3)).expect("first effect");
    let performed = Cell::new(false);
    let err = run.effect("ek:2", "work", || {
        performed.set(true);
        ok("two", 3)
    });
    assert!(!performed.get(), "an effect past the ceiling is not performed");
    let Err(RuntimeError::Stopped { status: RunStatus::Exhausted { verdict, .. }, .. }) = err else {
        panic!("exhausted expected: {err:?}")
    };
    let cost = rt.cost(&t, &id).expect("cost");
    assert_eq!(verdict, Verdict::BudgetExceeded { dimension: Dimension::Effects, ceiling: 1, counters: cost });
    assert_eq!(cost.effects, 1);

    let bare = rt.conclude(&t, &id, Outcome::Exhausted, Verdict::None, "out of budget");
    assert!(
        matches!(&bare, Err(RuntimeError::Journal(crate::error::JournalError::InvalidRecord(why))) if why.contains("BudgetExceeded")),
        "{bare:?}"
    );
}

/// R-RUN-5: a withheld run continues only after it is lifted.
pub fn withhold_and_lift(store: Arc<dyn Store>) {
    let rt = runtime(store);
    let t = tenant();
    let run = admit(&rt, "held", Budget::default());
    let id = run.run().clone();
    drop(run);
    rt.withhold(&t, &id, "compliance review").expect("withhold");
    assert!(matches!(rt.resume(&t, &id), Err(RuntimeError::Stopped { status: RunStatus::Withheld { .. }, .. })));
    assert_eq!(rt.runs(&t, Some(Outcome::Withheld)).expect("listing"), vec![id.clone()]);
    rt.lift(&t, &id, "review passed").expect("lift");
    assert!(matches!(rt.lift(&t, &id, "again"), Err(RuntimeError::NotApplicable { .. })), "lifted once");
    // The answer stays the last conclusion, as in the index, until the run concludes again.
    assert!(matches!(rt.status(&t, &id).expect("status"), RunStatus::Withheld { .. }));
    rt.resume(&t, &id).expect("continues").succeed("done").expect("succeed");
    assert_eq!(rt.status(&t, &id).expect("status"), RunStatus::Succeeded);
    assert_eq!(rt.runs(&t, Some(Outcome::Succeeded)).expect("listing"), vec![id]);
}

/// R-RUN-5: a crash between EffectStarted and EffectDone is a doubt: resume
/// quarantines the run naming the effect, never performing it twice; a
/// person's answer continues it, both ways.
pub fn crash_mid_effect_quarantines_and_answers_continue(store: Arc<dyn Store>) {
    let t = tenant();
    let mut ids = Vec::new();
    for key in ["crash-a", "crash-b"] {
        let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let rt = runtime(Arc::clone(&store));
            let mut run = admit(&rt, key, Budget::default());
            ids.push(run.run().clone());
            // The process dies while the payment is in flight: the runtime is dropped mid-effect.
            run.effect("ek:pay", "work", || panic!("power cut"))
        }));
        assert!(crashed.is_err());
    }
    let rt = runtime(store);
    let performed = Cell::new(0);
    for (id, answer) in ids.iter().zip([
        DoubtAnswer::Happened { result: EffectResult::Ok { output: "receipt 42".into() } },
        DoubtAnswer::DidNotHappen,
    ]) {
        let err = rt.resume(&t, id).err().expect("a doubt stops the resume");
        match &err {
            RuntimeError::Stopped {
                status: RunStatus::Quarantined { verdict: Verdict::Doubt { effect_key }, .. },
                ..
            } => {
                assert_eq!(effect_key, "ek:pay");
            }
            other => panic!("expected quarantine, got {other:?}"),
        }
        assert!(rt.runs(&t, Some(Outcome::Quarantined)).expect("listing").contains(id));
        let happened = matches!(answer, DoubtAnswer::Happened { .. });
        rt.answer_doubt(&t, id, "ek:pay", answer).expect("answer");
        let mut resumed = rt.resume(&t, id).expect("an answered doubt continues");
        let result = resumed
            .effect("ek:pay", "work", || {
                performed.set(performed.get() + 1);
                ok("paid now", 1)
            })
            .expect("effect");
        if happened {
            assert_eq!(result, EffectResult::Ok { output: "receipt 42".into() }, "the answer is read back");
        } else {
            assert_eq!(result, EffectResult::Ok { output: "paid now".into() }, "did not happen: performed now");
        }
        resumed.succeed("done").expect("succeed");
    }
    assert_eq!(performed.get(), 1, "performed again only where a person said it did not happen");
}

/// The step records a run's journal holds, by name, in chain order.
fn step_marks(store: &Arc<dyn Store>, run: &crate::ids::RunId) -> Vec<String> {
    let rows = store.read_run(&tenant(), run).expect("rows").rows;
    let upcasters = crate::Upcasters::default();
    let check = crate::chain::ChainCheck { upcasters: &upcasters, verifier: None, options: Default::default() };
    let records = crate::chain::verify_run(run, &rows, None, check).expect("a verified chain");
    records
        .iter()
        .filter_map(|record| match &record.record.body {
            crate::RecordBody::StepStarted(mark) => Some(format!("start {}", mark.step)),
            crate::RecordBody::StepFinished(mark) => Some(format!("finish {}", mark.step)),
            _ => None,
        })
        .collect()
}

/// R-RUN-5, R-RUN-4: a resumed run's code, driven again from its top, passes
/// the steps its history holds as it passes its done effects: read back in
/// order, nothing recorded and nothing counted again. A steps ceiling of the
/// plan's length no longer exhausts the run at its first resume; a resume
/// that stops again (a failed effect read back) appends nothing; and code
/// that goes another way than its history (continuing a loop where it
/// stopped, under a step name the history already holds) records the step
/// it is in before the effect it performs there, counted as any step.
pub fn resume_reads_steps_back(store: Arc<dyn Store>) {
    let rt = runtime(Arc::clone(&store));
    let t = tenant();
    let performed = Cell::new(0);
    let perform = |output: &str, tokens| {
        performed.set(performed.get() + 1);
        ok(output, tokens)
    };
    // Two steps, the draft crossing the tokens ceiling.
    let agent = |run: &mut RunHandle<'_>| -> Result<(), RuntimeError> {
        run.start_step("search")?;
        run.effect("ek:search", "search", || perform("sources", 60))?;
        run.finish_step("search")?;
        run.start_step("answer")?;
        run.effect("ek:draft", "answer", || perform("draft", 60))?;
        run.effect("ek:answer", "answer", || perform("answer", 10))?;
        run.finish_step("answer")?;
        RunContext::succeed(run, "answered")
    };
    let budget = Budget { steps: Some(2), tokens: Some(100), ..Budget::default() };
    let mut run = admit(&rt, "steps-read-back", budget);
    let id = run.run().clone();
    let stopped = agent(&mut run);
    assert!(matches!(&stopped, Err(RuntimeError::Stopped { status: RunStatus::Exhausted { .. }, .. })), "{stopped:?}");
    assert_eq!(performed.get(), 2);
    rt.raise_ceiling(&t, &id, Dimension::Tokens, Some(1_000)).expect("raise");
    let mut resumed = rt.resume(&t, &id).expect("a raised ceiling continues");
    agent(&mut resumed).expect("the code, driven again from its top, finishes under its steps ceiling");
    assert_eq!(performed.get(), 3, "done effects read back, the last one performed once");
    assert_eq!(rt.status(&t, &id).expect("status"), RunStatus::Succeeded);
    assert_eq!(rt.cost(&t, &id).expect("cost").steps, 2, "each step counted once");
    assert_eq!(
        step_marks(&store, &id),
        ["start search", "finish search", "start answer", "finish answer"],
        "the journal holds each step once, as a run never interrupted would"
    );

    // A failed effect read back stops the code again, and the resume writes nothing.
    let mut run = admit(&rt, "steps-failed", Budget::default());
    let id = run.run().clone();
    let failing = |run: &mut RunHandle<'_>| -> Result<(), RuntimeError> {
        run.start_step("fetch")?;
        run.effect("ek:fetch", "fetch", || EffectOutput {
            result: EffectResult::Err { error: "upstream 503".into() },
            charged: Counters::default(),
        })?;
        run.finish_step("fetch")?;
        RunContext::succeed(run, "fetched")
    };
    let failed = failing(&mut run);
    assert!(matches!(&failed, Err(RuntimeError::Stopped { status: RunStatus::Failed { .. }, .. })), "{failed:?}");
    let rows = store.read_run(&t, &id).expect("rows").rows.len();
    let mut resumed = rt.resume(&t, &id).expect("a failed run resumes");
    let again = failing(&mut resumed);
    assert!(matches!(&again, Err(RuntimeError::Stopped { status: RunStatus::Failed { .. }, .. })), "{again:?}");
    assert_eq!(store.read_run(&t, &id).expect("rows").rows.len(), rows, "a resume that stops again appends nothing");

    // Code continuing a loop where it stopped, under a step name its history
    // holds: its start matches the history's first, and the effect it then
    // performs, where the history finished that step, shows the step is new.
    let mut run = admit(&rt, "steps-loop", Budget::default());
    let id = run.run().clone();
    run.start_step("fetch").expect("first page's step");
    run.effect("ek:page-1", "fetch", || ok("page", 60)).expect("first page");
    run.finish_step("fetch").expect("finish");
    rt.withhold(&t, &id, "held between pages").expect("withhold");
    rt.lift(&t, &id, "go on").expect("lift");
    let mut resumed = rt.resume(&t, &id).expect("resumed");
    resumed.start_step("fetch").expect("the second page's step");
    resumed.effect("ek:page-2", "fetch", || ok("page", 60)).expect("the second page");
    resumed.finish_step("fetch").expect("finish");
    assert_eq!(rt.cost(&t, &id).expect("cost").steps, 2, "two steps started, two counted");
    assert_eq!(step_marks(&store, &id), ["start fetch", "finish fetch", "start fetch", "finish fetch"]);

    // Code going on where its history stopped mid-step: nothing read back, each call recorded.
    let mut run = admit(&rt, "steps-continued", Budget { tokens: Some(100), ..Budget::default() });
    let id = run.run().clone();
    run.start_step("fetch").expect("step");
    run.effect("ek:big", "fetch", || ok("page", 160)).expect_err("crosses the ceiling");
    rt.raise_ceiling(&t, &id, Dimension::Tokens, None).expect("raise");
    let mut resumed = rt.resume(&t, &id).expect("resumed");
    resumed.finish_step("fetch").expect("the open step finished");
    resumed.start_step("fetch").expect("the next step");
    resumed.finish_step("fetch").expect("finish");
    assert_eq!(rt.cost(&t, &id).expect("cost").steps, 2);
    assert_eq!(step_marks(&store, &id), ["start fetch", "finish fetch", "start fetch", "finish fetch"]);
}

/// A run of `steps` (each `+name` a start, `-name` a finish) stopped and
/// continued by an operator (withheld, lifted), and its resumed handle.
fn resumed_after<'rt>(rt: &'rt Runtime, key: &str, budget: Budget, steps: &[&str]) -> RunHandle<'rt> {
    let mut run = admit(rt, key, budget);
    let id = run.run().clone();
    for step in steps {
        match step.split_at(1) {
            ("+", name) => run.start_step(name).expect("start"),
            (_, name) => run.finish_step(name).expect("finish"),
        }
    }
    rt.withhold(&tenant(), &id, "held").expect("withhold");
    rt.lift(&tenant(), &id, "go on").expect("lift");
    rt.resume(&tenant(), &id).expect("resumed")
}

/// R-RUN-5, R-RUN-4: where a resumed run's code goes another way than its
/// history, exactly the steps it read back and is still in are recorded
/// again, in the order it entered them, before anything else it records,
/// and each is counted against the steps ceiling as any start: a step read
/// back as finished is not recorded again; a step name open twice is closed
/// at its innermost start (an older build's nested steps); a step started
/// inside one read back records the outer one first; the steps ceiling
/// refuses the effect whose step it would start again (the effect is not
/// performed); and a handle that stopped reads nothing back after.
pub fn resume_records_again_only_the_steps_it_is_in(store: Arc<dyn Store>) {
    let rt = runtime(Arc::clone(&store));
    let t = tenant();
    let tail = |id: &crate::ids::RunId, from: usize| step_marks(&store, id)[from..].to_vec();

    // Two steps read back, the first finished: only the second is recorded again.
    let mut run = resumed_after(&rt, "again-finished", Budget::default(), &["+a", "-a", "+b", "-b"]);
    let id = run.run().clone();
    run.start_step("a").expect("read back");
    run.finish_step("a").expect("read back");
    run.start_step("b").expect("read back");
    run.effect("ek:new", "b", || ok("new", 1)).expect("performed");
    assert_eq!(tail(&id, 4), ["start b"], "only the step the effect is in is recorded again");
    assert_eq!(rt.cost(&t, &id).expect("cost").steps, 3);

    // The same name open twice: its finish closes the innermost.
    let mut run = resumed_after(&rt, "again-nested", Budget::default(), &["+a", "+b", "+a", "-a", "-b", "-a"]);
    let id = run.run().clone();
    for step in ["+a", "+b", "+a", "-a"] {
        match step.split_at(1) {
            ("+", name) => run.start_step(name).expect("read back"),
            (_, name) => run.finish_step(name).expect("read back"),
        }
    }
    run.effect("ek:nested", "b", || ok("new", 1)).expect("performed");
    assert_eq!(tail(&id, 6), ["start a", "start b"], "the steps it is in, outermost first");

    // A step started inside one read back: the outer one is recorded first.
    let mut run = resumed_after(&rt, "again-inner", Budget::default(), &["+a", "-a"]);
    let id = run.run().clone();
    run.start_step("a").expect("read back");
    run.start_step("b").expect("a new inner step");
    run.effect("ek:inner", "b", || ok("new", 1)).expect("performed");
    run.finish_step("b").expect("finish");
    run.finish_step("a").expect("finish");
    assert_eq!(tail(&id, 2), ["start a", "start b", "finish b", "finish a"]);

    // The steps ceiling the history reached refuses the step recorded again,
    // and the effect in it is not performed.
    let mut run = resumed_after(&rt, "again-ceiling", Budget { steps: Some(1), ..Budget::default() }, &["+a", "-a"]);
    let id = run.run().clone();
    run.start_step("a").expect("read back");
    let performed = Cell::new(false);
    let refused = run.effect("ek:past", "a", || {
        performed.set(true);
        ok("past", 1)
    });
    assert!(!performed.get(), "an effect was performed in a step past the steps ceiling");
    let Err(RuntimeError::Stopped { status: RunStatus::Exhausted { verdict, .. }, .. }) = refused else {
        panic!("{refused:?}")
    };
    let cost = rt.cost(&t, &id).expect("cost");
    assert!(
        matches!(verdict, Verdict::BudgetExceeded { dimension: Dimension::Steps, ceiling: 1, counters } if counters == cost),
        "{verdict:?} against {cost:?}"
    );
    assert_eq!(cost.steps, 1);

    // A stopped handle reads nothing back: each call is told it stopped.
    let failing = EffectOutput { result: EffectResult::Err { error: "503".into() }, charged: Counters::default() };
    let mut run = admit(&rt, "again-stopped", Budget::default());
    let id = run.run().clone();
    run.start_step("a").expect("start");
    run.finish_step("a").expect("finish");
    run.start_step("b").expect("start");
    run.effect("ek:fails", "b", || failing.clone()).expect_err("failed");
    let mut resumed = rt.resume(&t, &id).expect("a failed run resumes");
    resumed.effect("ek:fails", "b", || failing.clone()).expect_err("read back, it stops the code again");
    let start = resumed.start_step("a");
    assert!(matches!(start, Err(RuntimeError::Stopped { .. })), "{start:?}");
    let mut resumed = rt.resume(&t, &id).expect("a failed run resumes");
    resumed.start_step("a").expect("read back");
    resumed.effect("ek:fails", "b", || failing.clone()).expect_err("read back, it stops the code again");
    let finish = resumed.finish_step("a");
    assert!(matches!(finish, Err(RuntimeError::Stopped { .. })), "{finish:?}");
}

/// R-STORE-3: a second runtime appending to the same run gets a conflict, never a fork.
pub fn second_runtime_conflicts(store: Arc<dyn Store>) {
    let first = runtime(Arc::clone(&store));
    let second = runtime(store);
    let t = tenant();
    let mut a = admit(&first, "contended", Budget::default());
    let mut b = second.resume(&t, a.run()).expect("second runtime resumes");
    a.start_step("a").expect("first appends");
    let err = b.start_step("b").expect_err("second conflicts");
    assert!(matches!(err, RuntimeError::Journal(crate::error::JournalError::Conflict { .. })), "{err:?}");
    assert_eq!(first.store().read_run(&t, a.run()).expect("read").rows.len(), 3, "no fork was written");
}

/// R-RUN-7: cost per run and per tenant are reads of the journal.
pub fn cost_is_read_from_the_journal(store: Arc<dyn Store>) {
    let rt = runtime(store);
    let t = tenant();
    for (key, tokens) in [("cost-a", 5), ("cost-b", 7)] {
        let mut run = admit(&rt, key, Budget::default());
        run.start_step("work").expect("step");
        run.effect("ek:1", "work", || ok("x", tokens)).expect("effect");
        run.succeed("done").expect("succeed");
    }
    let total = rt.tenant_cost(&t).expect("tenant cost");
    assert_eq!((total.tokens, total.effects, total.steps), (12, 2, 2));
}

/// R-SIG-4: a plane with no signer writes unsigned records; with one, every record is signed.
#[cfg(feature = "signing")]
pub fn signed_and_unsigned_planes(store: Arc<dyn Store>) {
    use crate::chain::ChainCheck;
    use crate::signature::{Ed25519Signer, Ed25519Verifier, Signer as _, VerifyOptions};
    use crate::version::Upcasters;

    let t = tenant();
    let unsigned = runtime(Arc::clone(&store));
    let plain = admit(&unsigned, "plain", Budget::default());
    let plain_id = plain.run().clone();
    plain.succeed("done").expect("succeed");
    let signer = Arc::new(Ed25519Signer::from_seed("spiffe://plane.test/runtime", [5; 32]));
    let signed = RuntimeBuilder::new(Arc::clone(&store))
        .signer(signer.clone())
        .tenant(t.clone(), crate::testkit::origin(), None)
        .build()
        .expect("runtime");
    let run = admit(&signed, "signed", Budget::default());
    let signed_id = run.run().clone();
    run.succeed("done").expect("succeed");

    let mut verifier = Ed25519Verifier::new();
    verifier.trust(signer.key_id(), signer.public_key()).expect("key");
    let upcasters = Upcasters::builtin();
    let strict = ChainCheck {
        upcasters: &upcasters,
        verifier: Some(&verifier),
        options: VerifyOptions { require_signature: true },
    };
    let origin = crate::testkit::origin();
    let journal = crate::journal::Journal::new(store.as_ref(), &t, &origin);
    journal.read(&signed_id, strict).expect("every record signed and verified");
    assert!(store.read_run(&t, &plain_id).expect("read").rows.iter().all(|r| r.signature.is_none()));
    assert!(journal.read(&plain_id, strict).is_err(), "strict refuses the unsigned plane's records");
}

/// Without the `signing` feature there is nothing to sign with.
#[cfg(not(feature = "signing"))]
pub fn signed_and_unsigned_planes(_store: Arc<dyn Store>) {}

/// A tenant the runtime does not serve is refused.
pub fn unknown_tenant_is_refused(store: Arc<dyn Store>) {
    let rt = runtime(store);
    let other = TenantId::new("nobody").expect("id");
    assert!(matches!(rt.admit(&other, request("x", Budget::default())), Err(RuntimeError::UnknownTenant(_))));
}
