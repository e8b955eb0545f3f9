//! Run semantics an operator relies on across crashes, operator answers and
//! forks (R-RUN-4, R-RUN-5): a ceiling crossed holds across resume, a
//! withholding is lifted only by a lift, and an effect with a recorded end
//! is never performed again by a fork. Pure runtime logic: the in-memory
//! store, with a crash injected by [`FaultyStore`].
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use journal_core::runtime::RuntimeError;
use journal_core::testkit_faults::{FaultyStore, Strike, WriteCall};
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, Dimension, DoubtAnswer, EffectOutput, EffectResult, JournalError,
    MemoryStore, Origin, RunHandle, RunId, RunStatus, Runtime, RuntimeBuilder, Store, TenantId, Verdict,
};

fn tenant() -> TenantId {
    TenantId::new("t").unwrap()
}

fn runtime(store: Arc<dyn Store>) -> Runtime {
    RuntimeBuilder::new(store).tenant(tenant(), Origin::new("run-semantics.test/plane").unwrap(), None).build().unwrap()
}

fn admit<'rt>(runtime: &'rt Runtime, key: &str, budget: Budget) -> RunHandle<'rt> {
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget };
    match runtime.admit(&tenant(), request).unwrap() {
        Admission::New(handle) => *handle,
        Admission::Existing { run, .. } => panic!("{key} exists as {run}"),
    }
}

fn counted(ran: &AtomicU32, tokens: u64) -> impl FnOnce() -> EffectOutput + '_ {
    move || {
        ran.fetch_add(1, Ordering::SeqCst);
        EffectOutput {
            result: EffectResult::Ok { output: format!("{tokens} tokens") },
            charged: Counters { tokens, ..Counters::default() },
        }
    }
}

/// The index of the first write of `kind` a clean pass of `drive` makes.
fn write_index(writes: &[WriteCall], kind: &str) -> usize {
    writes.iter().position(|call| *call == WriteCall::Append(kind.into())).unwrap()
}

/// R-RUN-4, R-RUN-5: a worker's effect crosses the tokens ceiling (EffectDone
/// records 130 tokens against a ceiling of 100) and the worker crashes
/// before its `exhausted` conclusion is written. A resume must not continue
/// the run: the ceiling holds whatever the last conclusion was, so the
/// resume concludes `exhausted` with the typed verdict (what redelivery then
/// answers) and the next effect is never performed over the budget.
#[test]
fn r_run_4_a_crash_before_the_exhausted_conclusion_does_not_let_a_resume_spend_past_the_ceiling() {
    let budget = Budget { tokens: Some(100), ..Budget::default() };
    let drive = |runtime: &Runtime, ran: &AtomicU32| -> Result<RunId, RuntimeError> {
        let mut run = admit(runtime, "over", budget);
        run.start_step("work")?;
        run.effect("ek:big", "work", counted(ran, 130))?;
        Ok(run.run().clone())
    };
    // A clean pass names the writes; the conclusion is the one to lose.
    let clean = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), None));
    let _ = drive(&runtime(clean.clone()), &AtomicU32::new(0));
    let concluded = write_index(&clean.writes(), "RunConcluded");

    let store = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), Some((concluded, Strike::BeforeCommit))));
    let runtime = runtime(store);
    let ran = AtomicU32::new(0);
    let crashed = drive(&runtime, &ran);
    assert!(matches!(crashed, Err(RuntimeError::Journal(_))), "the conclusion's write failed: {crashed:?}");
    let run = Runtime::run_id_for(&tenant(), "over").unwrap();
    assert_eq!(runtime.cost(&tenant(), &run).unwrap().tokens, 130, "the journal holds the crossing");

    let after = AtomicU32::new(0);
    match runtime.resume(&tenant(), &run) {
        Ok(mut resumed) => {
            let _ = resumed.effect("ek:next", "work", counted(&after, 10));
        }
        Err(RuntimeError::Stopped { status: RunStatus::Exhausted { verdict, .. }, .. }) => {
            assert!(
                matches!(verdict, Verdict::BudgetExceeded { dimension: Dimension::Tokens, ceiling: 100, counters }
                    if counters.tokens == 130),
                "{verdict:?}"
            );
        }
        Err(other) => panic!("resume: {other:?}"),
    }
    assert_eq!(after.load(Ordering::SeqCst), 0, "an effect was performed on a run past its ceiling");
    assert!(
        matches!(runtime.status(&tenant(), &run).unwrap(), RunStatus::Exhausted { .. }),
        "redelivery answers the exhaustion"
    );

    // The same ceiling crossed by an effect that failed: the run concludes
    // `failed`, and a resume (which a failure always allows) must not spend on.
    let runtime = self::runtime(Arc::new(MemoryStore::new()));
    let mut run = admit(&runtime, "failed-over", budget);
    run.start_step("work").unwrap();
    let failed = run.effect("ek:big", "work", || EffectOutput {
        result: EffectResult::Err { error: "timed out".into() },
        charged: Counters { tokens: 130, ..Counters::default() },
    });
    assert!(matches!(failed, Err(RuntimeError::Stopped { status: RunStatus::Failed { .. }, .. })), "{failed:?}");
    let run = run.run().clone();
    let after = AtomicU32::new(0);
    match runtime.resume(&tenant(), &run) {
        Ok(mut resumed) => {
            let _ = resumed.effect("ek:next", "work", counted(&after, 10));
        }
        Err(RuntimeError::Stopped { status: RunStatus::Exhausted { .. }, .. }) => {}
        Err(other) => panic!("resume: {other:?}"),
    }
    assert_eq!(after.load(Ordering::SeqCst), 0, "an effect was performed on a failed run past its ceiling");
}

/// A run whose worker crashed mid-effect, on a fresh store: `EffectStarted`
/// is written and `EffectDone` is lost, so the effect is in doubt.
fn crashed_mid_effect(key: &str) -> (Runtime, RunId) {
    let drive = |runtime: &Runtime| -> Result<(), RuntimeError> {
        let mut run = admit(runtime, key, Budget::default());
        run.start_step("work")?;
        run.effect("ek:pay", "work", counted(&AtomicU32::new(0), 1))?;
        Ok(())
    };
    let clean = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), None));
    drive(&runtime(clean.clone())).unwrap();
    let done = write_index(&clean.writes(), "EffectDone");
    let runtime = runtime(Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), Some((done, Strike::BeforeCommit)))));
    assert!(drive(&runtime).is_err(), "the EffectDone write failed");
    let run = Runtime::run_id_for(&tenant(), key).unwrap();
    (runtime, run)
}

/// R-RUN-5: a withholding is continued by a lift, and only by one. A run in
/// doubt (crash mid-effect) that an operator withholds, before or after the
/// resume that quarantines it, stays withheld when a person answers the
/// doubt: the answer settles the effect's fate, not the operator's hold. A
/// resume before the lift answers `withheld` and appends nothing; after the
/// lift it continues.
#[test]
fn r_run_5_answering_a_doubt_does_not_lift_a_withholding() {
    for withhold_before_resume in [false, true] {
        let (runtime, run) = crashed_mid_effect(&format!("held-{withhold_before_resume}"));
        let t = tenant();
        if withhold_before_resume {
            runtime.withhold(&t, &run, "under investigation").unwrap();
        }
        let first = runtime.resume(&t, &run).err();
        assert!(matches!(first, Some(RuntimeError::Stopped { .. })), "a doubt or a hold stops the resume: {first:?}");
        if !withhold_before_resume {
            assert!(matches!(runtime.status(&t, &run).unwrap(), RunStatus::Quarantined { .. }));
            runtime.withhold(&t, &run, "under investigation").unwrap();
        }
        assert!(matches!(runtime.status(&t, &run).unwrap(), RunStatus::Withheld { .. }), "the operator's hold stands");

        let answer = DoubtAnswer::Happened { result: EffectResult::Ok { output: "paid".into() } };
        runtime.answer_doubt(&t, &run, "ek:pay", answer).unwrap();
        let ran = AtomicU32::new(0);
        match runtime.resume(&t, &run) {
            Ok(mut resumed) => {
                let _ = resumed.effect("ek:ship", "work", counted(&ran, 1));
                panic!("withheld (before resume: {withhold_before_resume}) continued without a lift");
            }
            Err(RuntimeError::Stopped { status: RunStatus::Withheld { .. }, .. }) => {}
            Err(other) => panic!("withheld (before resume: {withhold_before_resume}): {other:?}"),
        }
        assert_eq!(ran.load(Ordering::SeqCst), 0);

        runtime.lift(&t, &run, "cleared").unwrap();
        let mut resumed = runtime.resume(&t, &run).unwrap();
        assert_eq!(
            resumed.effect("ek:pay", "work", || unreachable!("answered as happened")).unwrap(),
            EffectResult::Ok { output: "paid".into() }
        );
        resumed.effect("ek:ship", "work", counted(&ran, 1)).unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    }
}

fn fork<'rt>(runtime: &'rt Runtime, source: &RunId, key: &str) -> RunHandle<'rt> {
    let at = runtime.store().read_run(&tenant(), source).unwrap().head.unwrap().seq;
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget: Budget::default() };
    match runtime.fork(&tenant(), source, at, request).unwrap() {
        Admission::New(handle) => *handle,
        Admission::Existing { run, .. } => panic!("{key} exists as {run}"),
    }
}

/// R-RUN-5: a fork is served its source's effects up to the fork point,
/// including those the source was itself served from its own source. Run A
/// performs `ek:pay`; B, forked from A, is served it and performs `ek:ship`;
/// C, forked from B after both, is served both (live and on resume) and
/// performs neither: `ek:pay`'s EffectDone is recorded (in A) and B's record
/// at the fork point says it was done.
#[test]
fn r_run_5_a_fork_of_a_fork_is_served_what_its_source_was_served() {
    let runtime = runtime(Arc::new(MemoryStore::new()));
    let (pay, ship) = (AtomicU32::new(0), AtomicU32::new(0));
    let mut a = admit(&runtime, "a", Budget::default());
    a.start_step("work").unwrap();
    a.effect("ek:pay", "work", counted(&pay, 1)).unwrap();
    let a = a.run().clone();

    let mut b = fork(&runtime, &a, "b");
    b.effect("ek:pay", "work", counted(&pay, 1)).unwrap();
    b.effect("ek:ship", "work", counted(&ship, 1)).unwrap();
    assert_eq!((pay.load(Ordering::SeqCst), ship.load(Ordering::SeqCst)), (1, 1), "B is served A's payment");
    let b = b.run().clone();

    let mut c = fork(&runtime, &b, "c");
    c.effect("ek:pay", "work", counted(&pay, 1)).unwrap();
    c.effect("ek:ship", "work", counted(&ship, 1)).unwrap();
    assert_eq!((pay.load(Ordering::SeqCst), ship.load(Ordering::SeqCst)), (1, 1), "C is served what B was");
    let c = c.run().clone();

    let mut resumed = runtime.resume(&tenant(), &c).unwrap();
    resumed.effect("ek:pay", "work", counted(&pay, 1)).unwrap();
    assert_eq!(pay.load(Ordering::SeqCst), 1, "a resumed C is served it too");
}

/// R-RUN-5: a fork point between an effect's `EffectStarted` and its end
/// (what `agentplane fork RUN --at 4` asks of a run whose seq 4 is an
/// `EffectStarted`) leaves the effect started and unended in the fork's
/// prefix: a doubt, which the runtime never settles by performing the effect
/// again. Here the source recorded `EffectDone` for `ek:pay` right after; a
/// fork there must not pay a second time (it is refused, naming the effect).
#[test]
fn r_run_5_a_fork_inside_an_effect_does_not_perform_it_again() {
    let runtime = runtime(Arc::new(MemoryStore::new()));
    let pay = AtomicU32::new(0);
    let mut source = admit(&runtime, "source", Budget::default());
    source.start_step("work").unwrap();
    source.effect("ek:pay", "work", counted(&pay, 1)).unwrap();
    let source = source.run().clone();
    let rows = runtime.store().read_run(&tenant(), &source).unwrap().rows;
    let started = rows.iter().find(|row| row.kind == "EffectStarted").unwrap().seq;
    assert_eq!(started, 4);

    let request = AdmitRequest { idempotency_key: "fork".into(), plan: vec!["work".into()], budget: Budget::default() };
    match runtime.fork(&tenant(), &source, started, request) {
        Ok(Admission::New(mut fork)) => {
            let _ = fork.effect("ek:pay", "work", counted(&pay, 1));
        }
        Ok(Admission::Existing { run, .. }) => panic!("a new fork, not {run}"),
        Err(RuntimeError::NotApplicable { reason, .. }) => assert!(reason.contains("ek:pay"), "{reason}"),
        Err(other) => panic!("{other:?}"),
    }
    assert_eq!(pay.load(Ordering::SeqCst), 1, "the payment whose EffectDone the source recorded ran again");
}

/// A source that paid once (counted in `pay`) and a fork of it whose
/// `RunForked` write failed after its `RunAdmitted`: the runtime, the source,
/// the fork point and the fork's run.
fn an_interrupted_fork(pay: &AtomicU32) -> (Runtime, RunId, u64, RunId) {
    let drive = |runtime: &Runtime| {
        let mut source = admit(runtime, "source", Budget::default());
        source.start_step("work").unwrap();
        source.effect("ek:pay", "work", counted(pay, 1)).unwrap();
        source.run().clone()
    };
    let clean = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), None));
    let clean_runtime = runtime(clean.clone());
    let source = drive(&clean_runtime);
    fork(&clean_runtime, &source, "fork");
    let forked = write_index(&clean.writes(), "RunForked");

    pay.store(0, Ordering::SeqCst);
    let store = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), Some((forked, Strike::BeforeCommit))));
    let runtime = runtime(store);
    let source = drive(&runtime);
    let at = runtime.store().read_run(&tenant(), &source).unwrap().head.unwrap().seq;
    let request = AdmitRequest { idempotency_key: "fork".into(), plan: vec!["work".into()], budget: Budget::default() };
    let failed = runtime.fork(&tenant(), &source, at, request).err();
    assert!(
        matches!(failed, Some(RuntimeError::Journal(JournalError::Io(_)))),
        "the RunForked write failed: {failed:?}"
    );
    let run = Runtime::run_id_for(&tenant(), "fork").unwrap();
    (runtime, source, at, run)
}

/// R-RUN-5: a fork whose admission is interrupted after its `RunAdmitted`
/// (the `RunForked` write fails, or the process dies there) must not become
/// a plain run: resuming it, or redelivering the same fork, would then
/// perform the source's done effects again, since nothing in its chain says
/// they are served from the source. A resume of the unfinished admission is
/// refused; redelivering the fork finishes it, and the fork is served.
#[test]
fn r_run_5_a_fork_interrupted_after_its_admission_is_still_served_from_its_source() {
    let pay = AtomicU32::new(0);
    let (runtime, source, at, run) = an_interrupted_fork(&pay);
    let request =
        || AdmitRequest { idempotency_key: "fork".into(), plan: vec!["work".into()], budget: Budget::default() };

    // The worker comes back to the run it was handed...
    if let Ok(mut resumed) = runtime.resume(&tenant(), &run) {
        let _ = resumed.effect("ek:pay", "work", counted(&pay, 1));
    }
    assert_eq!(pay.load(Ordering::SeqCst), 1, "a resume of the unfinished fork paid again");
    // ...or the fork is asked for again.
    match runtime.fork(&tenant(), &source, at, request()).unwrap() {
        Admission::New(mut fork) => {
            fork.effect("ek:pay", "work", counted(&pay, 1)).unwrap();
        }
        Admission::Existing { run, .. } => {
            if let Ok(mut resumed) = runtime.resume(&tenant(), &run) {
                let _ = resumed.effect("ek:pay", "work", counted(&pay, 1));
            }
        }
    }
    assert_eq!(pay.load(Ordering::SeqCst), 1, "the fork asked for again paid again");
    let verified = runtime.store().read_run(&tenant(), &run).unwrap();
    assert!(verified.rows.iter().any(|row| row.kind == "RunForked"), "the fork records its provenance");
}

/// R-RUN-5 (mutation review 96): a fork interrupted after its `RunForked`,
/// before its plan (the `PlanFrozen` write fails), is finished by the next
/// delivery of the fork: its provenance is already recorded and is recorded
/// once, never a second `RunForked` after the first; the fork is served its
/// source's effect.
#[test]
fn r_run_5_a_fork_redelivered_after_its_provenance_records_it_once() {
    let pay = AtomicU32::new(0);
    let drive = |runtime: &Runtime| {
        let mut source = admit(runtime, "source", Budget::default());
        source.start_step("work").unwrap();
        source.effect("ek:pay", "work", counted(&pay, 1)).unwrap();
        source.run().clone()
    };
    let clean = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), None));
    let clean_runtime = runtime(clean.clone());
    let source = drive(&clean_runtime);
    fork(&clean_runtime, &source, "fork");
    let writes = clean.writes();
    let forked = write_index(&writes, "RunForked");
    assert_eq!(writes[forked + 1], WriteCall::Append("PlanFrozen".into()));

    pay.store(0, Ordering::SeqCst);
    let store = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), Some((forked + 1, Strike::BeforeCommit))));
    let runtime = runtime(store);
    let source = drive(&runtime);
    let at = runtime.store().read_run(&tenant(), &source).unwrap().head.unwrap().seq;
    let request =
        || AdmitRequest { idempotency_key: "fork".into(), plan: vec!["work".into()], budget: Budget::default() };
    let failed = runtime.fork(&tenant(), &source, at, request()).err();
    assert!(matches!(failed, Some(RuntimeError::Journal(JournalError::Io(_)))), "the plan's write failed: {failed:?}");
    match runtime.fork(&tenant(), &source, at, request()).unwrap() {
        Admission::New(mut fork) => fork.effect("ek:pay", "work", counted(&pay, 1)).unwrap(),
        Admission::Existing { status, .. } => panic!("the fork asked for again is not finished: {status:?}"),
    };
    assert_eq!(pay.load(Ordering::SeqCst), 1, "the fork paid again");
    let run = Runtime::run_id_for(&tenant(), "fork").unwrap();
    let kinds: Vec<String> =
        runtime.store().read_run(&tenant(), &run).unwrap().rows.iter().map(|row| row.kind.clone()).collect();
    assert_eq!(kinds.iter().filter(|kind| *kind == "RunForked").count(), 1, "the fork's records: {kinds:?}");
}

/// Regression replay of a fork, over the store (`replay_store`): the agent
/// code that drove the fork live, unchanged, replays to a match. Live, its
/// first effect was served from the source's record (nothing in the fork's
/// own chain); a replay must serve it the same way, not report it as an
/// effect the record does not have.
#[test]
fn r_run_5_a_fork_replays_to_a_match_with_the_code_that_drove_it() {
    use journal_core::regression::{RunContext, replay_store};
    use journal_core::{ChainCheck, Journal, Upcasters, VerifyOptions};
    fn agent(run: &mut impl RunContext) -> Result<(), RuntimeError> {
        run.start_step("work")?;
        run.effect("ek:pay", "work", || EffectOutput {
            result: EffectResult::Ok { output: "paid".into() },
            charged: Counters::default(),
        })?;
        run.effect("ek:ship", "work", || EffectOutput {
            result: EffectResult::Ok { output: "shipped".into() },
            charged: Counters::default(),
        })?;
        run.finish_step("work")?;
        run.succeed("done")
    }
    let store = Arc::new(MemoryStore::new());
    let runtime = runtime(store.clone());
    let mut source = admit(&runtime, "source", Budget::default());
    source.start_step("work").unwrap();
    source.effect("ek:pay", "work", counted(&AtomicU32::new(0), 0)).unwrap();
    let source = source.run().clone();
    let at = runtime.store().read_run(&tenant(), &source).unwrap().head.unwrap().seq;
    let request = AdmitRequest { idempotency_key: "fork".into(), plan: vec!["work".into()], budget: Budget::default() };
    let Admission::New(mut fork) = runtime.fork(&tenant(), &source, at, request).unwrap() else { panic!() };
    agent(&mut *fork).unwrap();

    let (t, origin) = (tenant(), Origin::new("run-semantics.test/plane").unwrap());
    let journal = Journal::new(store.as_ref(), &t, &origin);
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let replayed = replay_store(&journal, check, &[journal_core::Outcome::Succeeded], &["work".into()], agent);
    assert!(replayed.is_ok(), "{}", replayed.err().unwrap_or_default());
}

/// The next resume of `run` reads `effect`'s recorded result (5 tokens)
/// back rather than perform it again: performed once in all (`ran`); the
/// run then succeeds.
fn the_result_is_read_back(runtime: &Runtime, run: &RunId, effect: &str, ran: &AtomicU32) {
    let mut resumed = runtime.resume(&tenant(), run).unwrap();
    let again = resumed.effect(effect, "work", counted(ran, 5)).unwrap();
    assert_eq!(again, EffectResult::Ok { output: "5 tokens".into() }, "the recorded result is read back");
    assert_eq!(ran.load(Ordering::SeqCst), 1, "{effect} performed once");
    resumed.succeed("done").unwrap();
}

/// R-RUN-5 (noticed by review 22): an operator withholds a run while its
/// worker is inside an effect. The worker's `EffectDone` met the hold's
/// record at the head (a `Conflict`), so the result the worker held was
/// never recorded: the effect stayed in doubt and a person had to find out
/// what it did. The end is now recorded after the hold (a fact about the
/// world, whatever the operator decided), the worker is told the run is
/// withheld, and once lifted the run reads the result back instead of
/// doubting or performing it again.
#[test]
fn r_run_5_a_hold_while_an_effect_runs_keeps_the_effect_s_result() {
    let runtime = runtime(Arc::new(MemoryStore::new()));
    let ran = AtomicU32::new(0);
    let mut run = admit(&runtime, "held", Budget::default());
    let id = run.run().clone();
    run.start_step("work").unwrap();
    let answer = run.effect("ek:pay", "work", || {
        runtime.withhold(&tenant(), &id, "an operator's hold").unwrap();
        counted(&ran, 5)()
    });
    match answer {
        Err(RuntimeError::Stopped { status: RunStatus::Withheld { .. }, .. }) => {}
        other => panic!("the worker is told the run is withheld: {other:?}"),
    }
    let status = runtime.status(&tenant(), &id).unwrap();
    assert!(matches!(status, RunStatus::Withheld { .. }), "{status:?}");

    runtime.lift(&tenant(), &id, "go on").unwrap();
    the_result_is_read_back(&runtime, &id, "ek:pay", &ran);
}

/// R-RUN-5 (review 40's note): an operator takes a run for crashed and
/// resumes it while its worker is inside an effect. The resume found the
/// effect open and quarantined the run (a doubt); the worker's end then met
/// that conclusion at the head and was refused, so the journal held in
/// doubt an effect that had finished, and a person answering "did not
/// happen" had it performed twice. The end is recorded after the quarantine
/// (a fact about the world), which settles the doubt it was about; the
/// worker is told the run is quarantined, no answer is asked for, and the
/// next resume reads the result back.
#[test]
fn r_run_5_a_resume_beside_the_live_worker_keeps_the_effect_s_result() {
    let runtime = runtime(Arc::new(MemoryStore::new()));
    let ran = AtomicU32::new(0);
    let mut run = admit(&runtime, "beside", Budget::default());
    let id = run.run().clone();
    run.start_step("work").unwrap();
    let answer = run.effect("ek:pay", "work", || {
        let beside = runtime.resume(&tenant(), &id).err();
        assert!(
            matches!(beside, Some(RuntimeError::Stopped { status: RunStatus::Quarantined { .. }, .. })),
            "the resume beside the worker found its effect open: {beside:?}"
        );
        counted(&ran, 5)()
    });
    match answer {
        Err(RuntimeError::Stopped { status: RunStatus::Quarantined { .. }, .. }) => {}
        other => panic!("the worker is told the run is quarantined: {other:?}"),
    }
    let kinds: Vec<String> =
        runtime.store().read_run(&tenant(), &id).unwrap().rows.into_iter().map(|r| r.kind).collect();
    assert_eq!(kinds[kinds.len() - 3..], ["RunConcluded", "EffectDone", "Released"], "the end after the quarantine");
    let answered = runtime.answer_doubt(&tenant(), &id, "ek:pay", DoubtAnswer::DidNotHappen);
    assert!(matches!(answered, Err(RuntimeError::NotApplicable { .. })), "nothing to answer: {answered:?}");

    the_result_is_read_back(&runtime, &id, "ek:pay", &ran);
}

/// R-RUN-5 (review 43): a resume beside the live worker finds two effects
/// open, the first a closure that panicked (its framework caught that and
/// went on) and the second the one the worker is performing, and
/// quarantines the run naming the first. The worker's end met a quarantine
/// that named another effect and was refused as a conflict: the finished
/// effect's result was lost, it stood found in doubt, and a person
/// answering "did not happen" had it performed twice. Any quarantine
/// after the worker's last record found its effect, so the end is recorded
/// after it; the quarantine still waits for the first effect's answer.
#[test]
fn r_run_5_a_resume_beside_the_live_worker_that_finds_two_doubts_keeps_the_second_s_result() {
    let runtime = runtime(Arc::new(MemoryStore::new()));
    let t = tenant();
    let ran = AtomicU32::new(0);
    let mut run = admit(&runtime, "beside-two", Budget::default());
    let id = run.run().clone();
    run.start_step("work").unwrap();
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run.effect("ek:a", "work", || panic!("the closure of ek:a panicked"))
    }));
    assert!(died.is_err());
    let answer = run.effect("ek:b", "work", || {
        let beside = runtime.resume(&t, &id).err();
        assert!(
            matches!(beside, Some(RuntimeError::Stopped { status: RunStatus::Quarantined { .. }, .. })),
            "the resume beside the worker found two effects open: {beside:?}"
        );
        counted(&ran, 5)()
    });
    assert!(
        matches!(answer, Err(RuntimeError::Stopped { status: RunStatus::Quarantined { .. }, .. })),
        "the worker is told the run is quarantined: {answer:?}"
    );
    let answered = runtime.answer_doubt(&t, &id, "ek:b", DoubtAnswer::DidNotHappen);
    assert!(matches!(answered, Err(RuntimeError::NotApplicable { .. })), "ek:b has its end: {answered:?}");
    assert!(matches!(runtime.resume(&t, &id).err(), Some(RuntimeError::Stopped { .. })), "ek:a is still in doubt");
    runtime.answer_doubt(&t, &id, "ek:a", DoubtAnswer::DidNotHappen).unwrap();
    the_result_is_read_back(&runtime, &id, "ek:b", &ran);
}

/// R-RUN-5 (review 43): a person's answer races the live worker's end. An
/// operator withholds a run while its worker is inside an effect (an
/// ordinary hold of a live run), and a person answers the open effect "did
/// not happen" under the hold, which `answer_doubt` takes (a crash under a
/// hold is answerable before any resume). The worker's end then met the
/// answer at the head and was refused as a conflict, so the result was lost
/// and the resume after the lift performed the effect a second time. The
/// end is a fact about the world and nothing started the effect again since
/// the answer: it is recorded after it, the worker is told the run is
/// withheld, and after the lift the result is read back. The same holds
/// when a resume beside the worker quarantined the run first.
#[test]
fn r_run_5_an_answer_that_did_not_happen_before_the_live_worker_s_end_keeps_its_result() {
    for beside in [false, true] {
        let runtime = runtime(Arc::new(MemoryStore::new()));
        let t = tenant();
        let ran = AtomicU32::new(0);
        let mut run = admit(&runtime, &format!("answered-live-{beside}"), Budget::default());
        let id = run.run().clone();
        run.start_step("work").unwrap();
        let answer = run.effect("ek:pay", "work", || {
            if beside {
                assert!(runtime.resume(&t, &id).is_err(), "the resume beside quarantines the run");
            } else {
                runtime.withhold(&t, &id, "an operator's hold").unwrap();
            }
            runtime.answer_doubt(&t, &id, "ek:pay", DoubtAnswer::DidNotHappen).unwrap();
            counted(&ran, 5)()
        });
        assert!(matches!(answer, Err(RuntimeError::Stopped { .. })), "the worker is stopped ({beside}): {answer:?}");
        if !beside {
            runtime.lift(&t, &id, "go on").unwrap();
        }
        the_result_is_read_back(&runtime, &id, "ek:pay", &ran);
        assert_eq!(runtime.cost(&t, &id).unwrap().tokens, 5, "charged once");
    }
}

/// R-RUN-5 (noticed by review 22): the regression harness over a folder of
/// exports replays a fork with the effects its source served it, read from
/// the source's export beside it, as `replay_store` does from the store (it
/// reported the unchanged agent as diverging at its first served effect);
/// without the source's export the fork is a failure that says so, never a
/// false divergence.
#[test]
fn r_run_5_a_fork_replays_from_exports_with_its_source_beside_it() {
    use journal_core::regression::{RunContext, replay_folder};
    use journal_core::{ChainCheck, Upcasters, VerifyOptions};
    fn agent(run: &mut impl RunContext) -> Result<(), RuntimeError> {
        run.start_step("work")?;
        for (key, output) in [("ek:pay", "paid"), ("ek:ship", "shipped")] {
            run.effect(key, "work", || EffectOutput {
                result: EffectResult::Ok { output: output.into() },
                charged: Counters::default(),
            })?;
        }
        run.finish_step("work")?;
        run.succeed("done")
    }
    let store = Arc::new(MemoryStore::new());
    let runtime = runtime(store.clone());
    let mut source = admit(&runtime, "source", Budget::default());
    agent(&mut source).unwrap();
    let source = source.run().clone();
    let rows = runtime.store().read_run(&tenant(), &source).unwrap().rows;
    let at = rows.iter().find(|row| row.kind == "Released").unwrap().seq;
    let request = AdmitRequest { idempotency_key: "fork".into(), plan: vec!["work".into()], budget: Budget::default() };
    let Admission::New(mut forked) = runtime.fork(&tenant(), &source, at, request).unwrap() else { panic!() };
    let fork = forked.run().clone();
    agent(&mut *forked).unwrap();

    let origin = Origin::new("run-semantics.test/plane").unwrap();
    let key =
        witness::LogKey::new(witness::SignerKey::from_seed(origin.as_str(), witness::ALG_ED25519, [5; 32]).unwrap())
            .unwrap();
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let folder = tempfile::tempdir().unwrap();
    for run in [&source, &fork] {
        let export =
            journal_core::export::export_run(store.as_ref(), &tenant(), &origin, &key, run, check, None).unwrap();
        std::fs::write(folder.path().join(format!("{run}.export")), export.text).unwrap();
    }
    let keys = [key.verifier_key()];
    let replayed = replay_folder(folder.path(), &keys, check, &["work".into()], agent);
    assert_eq!(replayed.map(|reports| reports.len()), Ok(2), "both replay to a match");

    std::fs::remove_file(folder.path().join(format!("{source}.export"))).unwrap();
    let alone = replay_folder(folder.path(), &keys, check, &["work".into()], agent).unwrap_err();
    assert!(alone.contains(&format!("{source}")) && !alone.contains("diverges"), "{alone}");
}

/// R-RUN-5: an operator withholds a run while one of its effects runs, and
/// lifts the hold before the effect ends (having raised a ceiling under
/// it, say). The effect's end is a fact about the world as much as
/// under a standing hold: it is recorded after the lift and the run goes
/// on, rather than the result being lost to a conflict and the effect left
/// in doubt, quarantining the run until a person says what the worker knew.
#[test]
fn r_run_5_a_hold_lifted_while_an_effect_runs_keeps_the_effect_s_result() {
    let runtime = runtime(Arc::new(MemoryStore::new()));
    let ran = AtomicU32::new(0);
    let mut run = admit(&runtime, "held-and-lifted", Budget::default());
    let id = run.run().clone();
    run.start_step("work").unwrap();
    let answer = run.effect("ek:pay", "work", || {
        runtime.withhold(&tenant(), &id, "an operator's hold").unwrap();
        runtime.raise_ceiling(&tenant(), &id, Dimension::Tokens, Some(1_000)).unwrap();
        runtime.lift(&tenant(), &id, "go on").unwrap();
        counted(&ran, 5)()
    });
    assert_eq!(answer.unwrap(), EffectResult::Ok { output: "5 tokens".into() }, "the worker goes on");
    run.finish_step("work").unwrap();
    run.succeed("done").unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1, "performed once");
    assert_eq!(runtime.status(&tenant(), &id).unwrap(), RunStatus::Succeeded);
}

/// R-RUN-5: a fork interrupted after its `RunAdmitted` (its `RunForked`
/// lost) is seen by an operator as a stuck run, who withholds it and lifts
/// the hold. Its chain then holds more than admission records, and the
/// unfinished admission was no longer recognised: a resume ran it as a
/// plain run, paying the source's payment again, and a redelivery of the
/// fork answered `Existing` and could never finish it. An admission without
/// its frozen plan stays unfinished whatever an operator appended: resume
/// refuses it, a redelivery finishes it with its provenance, and the hold
/// lifted lets the fork go on, served from its source.
#[test]
fn r_run_5_an_interrupted_fork_held_and_lifted_is_still_served_from_its_source() {
    let pay = AtomicU32::new(0);
    let (runtime, source, at, run) = an_interrupted_fork(&pay);
    let request =
        || AdmitRequest { idempotency_key: "fork".into(), plan: vec!["work".into()], budget: Budget::default() };
    runtime.withhold(&tenant(), &run, "stuck: looking into it").unwrap();
    runtime.lift(&tenant(), &run, "go on").unwrap();

    if let Ok(mut resumed) = runtime.resume(&tenant(), &run) {
        let _ = resumed.effect("ek:pay", "work", counted(&pay, 1));
    }
    assert_eq!(pay.load(Ordering::SeqCst), 1, "a resume of the unfinished fork paid again");
    match runtime.fork(&tenant(), &source, at, request()).unwrap() {
        Admission::New(mut fork) => {
            fork.effect("ek:pay", "work", counted(&pay, 1)).unwrap();
        }
        Admission::Existing { status, .. } => panic!("the fork asked for again is not finished: {status:?}"),
    }
    assert_eq!(pay.load(Ordering::SeqCst), 1, "the fork asked for again paid again");
    let rows = runtime.store().read_run(&tenant(), &run).unwrap().rows;
    assert!(rows.iter().any(|row| row.kind == "RunForked"), "the fork records its provenance");
}

/// R-RUN-5 (review 40): a person's answer to a doubt answers the stop it was
/// given for, never an effect a resume has started since. A quarantined run
/// is answered "did not happen" and resumed; while the resumed worker
/// performs the effect again, the same answer comes a second time (the
/// command run twice: a retry, a second operator). That second answer found
/// the effect open again (the live worker's start) and was recorded against
/// it: the worker's end was then refused as a conflict, and the next resume
/// performed the effect a second time. The second answer is refused (the
/// run is not stopped waiting for it), the worker's end is recorded, and
/// the effect is performed once.
#[test]
fn r_run_5_an_answer_given_twice_never_answers_the_effect_a_resume_is_performing() {
    let (runtime, run) = crashed_mid_effect("answered-twice");
    let t = tenant();
    let quarantined = runtime.resume(&t, &run).err();
    assert!(
        matches!(quarantined, Some(RuntimeError::Stopped { status: RunStatus::Quarantined { .. }, .. })),
        "{quarantined:?}"
    );
    runtime.answer_doubt(&t, &run, "ek:pay", DoubtAnswer::DidNotHappen).unwrap();
    let ran = AtomicU32::new(0);
    let second = std::cell::RefCell::new(None);
    let mut resumed = runtime.resume(&t, &run).unwrap();
    let paid = resumed.effect("ek:pay", "work", || {
        // The same answer again, while the resumed worker pays.
        *second.borrow_mut() = Some(runtime.answer_doubt(&t, &run, "ek:pay", DoubtAnswer::DidNotHappen));
        counted(&ran, 1)()
    });
    // Whatever the worker was told, no later resume pays again.
    if let Ok(mut again) = runtime.resume(&t, &run) {
        let _ = again.effect("ek:pay", "work", counted(&ran, 1));
    }
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the payment was performed twice");
    let second = second.into_inner();
    assert!(matches!(second, Some(Err(RuntimeError::NotApplicable { .. }))), "the second answer: {second:?}");
    assert_eq!(paid.unwrap(), EffectResult::Ok { output: "1 tokens".into() }, "the worker's end is recorded");
}

/// R-RUN-5 (review 41): every doubt a resume found is a person's to answer,
/// however many the quarantine found. A worker whose first effect's closure
/// panicked (the framework around it caught that and went on) and which
/// then died in its second leaves two effects started with no end; the
/// resume quarantines the run (naming the first) and a person answers both,
/// as `agentplane resume RUN --answer A --answer B` does. The first answer
/// continued the quarantine, and the second was refused as "not stopped
/// waiting for an answer, started after its last stop was answered, by a
/// resume that may be performing it", which no resume was: both effects
/// were started before the quarantine. Both answers are recorded, and the
/// next resume reads the one back and performs the other once.
#[test]
fn r_run_5_every_doubt_a_quarantine_found_is_answered() {
    let runtime = runtime(Arc::new(MemoryStore::new()));
    let t = tenant();
    let mut run = admit(&runtime, "two-doubts", Budget::default());
    let id = run.run().clone();
    for key in ["ek:a", "ek:b"] {
        let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run.effect(key, "work", || panic!("the worker died performing {key}"))
        }));
        assert!(died.is_err(), "{key}");
    }
    drop(run);
    let quarantined = runtime.resume(&t, &id).err();
    assert!(
        matches!(quarantined, Some(RuntimeError::Stopped { status: RunStatus::Quarantined { .. }, .. })),
        "{quarantined:?}"
    );
    let happened = DoubtAnswer::Happened { result: EffectResult::Ok { output: "a".into() } };
    runtime.answer_doubt(&t, &id, "ek:a", happened).unwrap();
    runtime.answer_doubt(&t, &id, "ek:b", DoubtAnswer::DidNotHappen).unwrap();
    let ran = AtomicU32::new(0);
    let mut resumed = runtime.resume(&t, &id).unwrap();
    assert_eq!(
        resumed.effect("ek:a", "work", || unreachable!("answered as happened")).unwrap(),
        EffectResult::Ok { output: "a".into() }
    );
    resumed.effect("ek:b", "work", counted(&ran, 1)).unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

/// R-RUN-5 (review 41): the same answer given twice never answers the
/// effect a resume has started again since, an operator's hold between the
/// two notwithstanding. A quarantined run is answered "did not happen" and
/// resumed; while the resumed worker performs the effect again an operator
/// withholds the run (an ordinary hold of a live run), and the same answer
/// comes a second time (a retry). Taking any withheld run as stopped for
/// its open effects, the second answer was recorded against the live
/// worker's start: its end was refused as a conflict, and the resume after
/// the lift performed the effect a second time. The second answer is
/// refused, the worker's end is recorded under the hold, and after the
/// lift the result is read back.
#[test]
fn r_run_5_an_answer_given_twice_under_a_hold_never_answers_the_effect_a_resume_is_performing() {
    let (runtime, run) = crashed_mid_effect("answered-twice-held");
    let t = tenant();
    assert!(matches!(runtime.resume(&t, &run).err(), Some(RuntimeError::Stopped { .. })));
    runtime.answer_doubt(&t, &run, "ek:pay", DoubtAnswer::DidNotHappen).unwrap();
    let ran = AtomicU32::new(0);
    let second = std::cell::RefCell::new(None);
    let mut resumed = runtime.resume(&t, &run).unwrap();
    let paid = resumed.effect("ek:pay", "work", || {
        runtime.withhold(&t, &run, "held while it pays").unwrap();
        *second.borrow_mut() = Some(runtime.answer_doubt(&t, &run, "ek:pay", DoubtAnswer::DidNotHappen));
        counted(&ran, 1)()
    });
    drop(resumed);
    let second = second.into_inner();
    assert!(matches!(second, Some(Err(RuntimeError::NotApplicable { .. }))), "the second answer: {second:?}");
    assert!(
        matches!(paid, Err(RuntimeError::Stopped { status: RunStatus::Withheld { .. }, .. })),
        "the worker's end is recorded under the hold: {paid:?}"
    );
    runtime.lift(&t, &run, "cleared").unwrap();
    let mut again = runtime.resume(&t, &run).unwrap();
    let read_back = again.effect("ek:pay", "work", counted(&ran, 1));
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the payment was performed twice");
    assert_eq!(read_back.unwrap(), EffectResult::Ok { output: "1 tokens".into() });
}

/// R-RUN-5 (review 41): a doubt a resume found is answered after the hold
/// an operator put on the quarantined run is lifted, the order
/// `agentplane resume RUN --lift --answer EFFECT=...` records them in. The
/// lift continued the hold, and the answer was refused as "not stopped
/// waiting for an answer": the lift was recorded and the doubt could not be
/// answered with it. The answer is recorded and the resume after it reads
/// the effect back.
#[test]
fn r_run_5_a_doubt_found_before_a_hold_is_answered_after_the_lift() {
    let (runtime, run) = crashed_mid_effect("found-then-held");
    let t = tenant();
    assert!(matches!(
        runtime.resume(&t, &run).err(),
        Some(RuntimeError::Stopped { status: RunStatus::Quarantined { .. }, .. })
    ));
    runtime.withhold(&t, &run, "under investigation").unwrap();
    runtime.lift(&t, &run, "cleared").unwrap();
    let answer = DoubtAnswer::Happened { result: EffectResult::Ok { output: "paid".into() } };
    runtime.answer_doubt(&t, &run, "ek:pay", answer).unwrap();
    let mut resumed = runtime.resume(&t, &run).unwrap();
    assert_eq!(
        resumed.effect("ek:pay", "work", || unreachable!("answered as happened")).unwrap(),
        EffectResult::Ok { output: "paid".into() }
    );
}

/// R-RUN-1, R-RUN-4: when the runtime decides a run ends (an effect failed,
/// a ceiling crossed) and the conclusion's write then fails (a server that
/// went away, a conflict), the handle was left going: the agent code drove
/// on past its failed effect, performed the next effect and sealed the run
/// `succeeded`. A conclusion tried stops the handle whether or not it was
/// written; the run is what resume finds (the failed effect, read back,
/// concludes it again).
#[test]
fn r_run_1_a_conclusion_whose_write_fails_still_stops_the_handle() {
    let failing = || EffectOutput { result: EffectResult::Err { error: "503".into() }, charged: Counters::default() };
    for (key, budget, output) in [
        ("failed-effect", Budget::default(), failing as fn() -> EffectOutput),
        ("over-budget", Budget { tokens: Some(100), ..Budget::default() }, || EffectOutput {
            result: EffectResult::Ok { output: "big".into() },
            charged: Counters { tokens: 130, ..Counters::default() },
        }),
    ] {
        fn drive<'rt>(
            runtime: &'rt Runtime,
            key: &str,
            budget: Budget,
            output: fn() -> EffectOutput,
        ) -> (RunHandle<'rt>, Result<EffectResult, RuntimeError>) {
            let mut run = admit(runtime, key, budget);
            run.start_step("work").unwrap();
            let done = run.effect("ek:first", "work", output);
            (run, done)
        }
        let clean = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), None));
        let _ = drive(&runtime(clean.clone()), key, budget, output);
        let concluded = write_index(&clean.writes(), "RunConcluded");

        let store = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), Some((concluded, Strike::BeforeCommit))));
        let runtime = runtime(store);
        let (mut run, done) = drive(&runtime, key, budget, output);
        assert!(matches!(done, Err(RuntimeError::Journal(_))), "{key}: the conclusion's write failed: {done:?}");
        let after = AtomicU32::new(0);
        let next = run.effect("ek:next", "work", counted(&after, 1));
        assert!(matches!(next, Err(RuntimeError::Stopped { .. })), "{key}: the handle drove on: {next:?}");
        assert_eq!(after.load(Ordering::SeqCst), 0, "{key}: an effect ran past the run's end");
        let id = run.run().clone();
        let sealed = run.succeed("done");
        assert!(matches!(sealed, Err(RuntimeError::Stopped { .. })), "{key}: the run sealed past its end: {sealed:?}");
        assert!(
            !matches!(runtime.status(&tenant(), &id).unwrap(), RunStatus::Succeeded),
            "{key}: the run is never succeeded"
        );
    }
}

/// R-RUN-5, R-RUN-6: an effect that ended in an error stops its run live
/// (the run concludes `failed` and the code is told it stopped). Read back
/// on resume (the worker died before the `failed` conclusion was written,
/// or the failed run is resumed with the same code), the recorded error
/// must stop the code again, as the history it verified says: read back as
/// an ordinary answer, the code drove on past its failed effect, performed
/// the next one (which the live run never reached) and sealed the run
/// `succeeded` over a failure.
#[test]
fn r_run_5_a_failed_effect_read_back_on_resume_stops_the_run_as_it_did_live() {
    use journal_core::regression::RunContext;
    fn agent(run: &mut impl RunContext, fetches: &AtomicU32, next: &AtomicU32) -> Result<(), RuntimeError> {
        run.start_step("work")?;
        run.effect("ek:fetch", "work", || {
            fetches.fetch_add(1, Ordering::SeqCst);
            EffectOutput { result: EffectResult::Err { error: "upstream 503".into() }, charged: Counters::default() }
        })?;
        run.effect("ek:next", "work", counted(next, 1))?;
        run.finish_step("work")?;
        run.succeed("never reached: the fetch fails")
    }
    let key = "fails";
    let clean = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), None));
    let _ = agent(&mut admit(&runtime(clean.clone()), key, Budget::default()), &AtomicU32::new(0), &AtomicU32::new(0));
    let concluded = write_index(&clean.writes(), "RunConcluded");
    // The conclusion lost (the worker died there), then none lost.
    for fault in [Some((concluded, Strike::BeforeCommit)), None] {
        let runtime = runtime(Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), fault)));
        let (fetches, next) = (AtomicU32::new(0), AtomicU32::new(0));
        let live = agent(&mut admit(&runtime, key, Budget::default()), &fetches, &next);
        assert!(live.is_err(), "{fault:?}: the failed fetch stops the run live: {live:?}");
        let run = Runtime::run_id_for(&tenant(), key).unwrap();
        for _ in 0..2 {
            if let Ok(mut resumed) = runtime.resume(&tenant(), &run) {
                let again = agent(&mut resumed, &fetches, &next);
                assert!(
                    matches!(again, Err(RuntimeError::Stopped { status: RunStatus::Failed { .. }, .. })),
                    "{fault:?}: the failed fetch read back stops the resumed code: {again:?}"
                );
            }
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 1, "{fault:?}: the fetch was performed again");
        assert_eq!(next.load(Ordering::SeqCst), 0, "{fault:?}: an effect past the failed one was performed");
        let status = runtime.status(&tenant(), &run).unwrap();
        assert!(matches!(status, RunStatus::Failed { .. }), "{fault:?}: the run is {status}");
        let conclusions = runtime.store().read_run(&tenant(), &run).unwrap().rows;
        let conclusions = conclusions.iter().filter(|row| row.kind == "RunConcluded").count();
        assert_eq!(conclusions, 1, "{fault:?}: each resume read the same failure back; it is concluded once");
    }
}

/// R-RUN-5: a fork at a point between an effect's start and its recorded
/// end is refused, the fork not knowing whether the effect happened. A
/// person answered the live worker's open effect "did not happen" (under a
/// hold, or after a resume beside it quarantined the run), and the worker's
/// end was then recorded after the answer: the effect happened. A fork at
/// a point after the answer and before that end read the prefix alone,
/// found nothing open and nothing done, and performed the effect again,
/// though its source records the effect's end for that very start.
#[test]
fn r_run_5_a_fork_before_the_end_a_live_worker_recorded_after_an_answer_is_refused() {
    for beside in [false, true] {
        let runtime = runtime(Arc::new(MemoryStore::new()));
        let t = tenant();
        let ran = AtomicU32::new(0);
        let mut run = admit(&runtime, &format!("answered-then-ended-{beside}"), Budget::default());
        let source = run.run().clone();
        run.start_step("work").unwrap();
        let answered_at = std::cell::Cell::new(0);
        let _ = run.effect("ek:pay", "work", || {
            if beside {
                assert!(runtime.resume(&t, &source).is_err(), "the resume beside quarantines the run");
            } else {
                runtime.withhold(&t, &source, "an operator's hold").unwrap();
            }
            runtime.answer_doubt(&t, &source, "ek:pay", DoubtAnswer::DidNotHappen).unwrap();
            answered_at.set(runtime.store().read_run(&t, &source).unwrap().head.unwrap().seq);
            counted(&ran, 5)()
        });
        let rows = runtime.store().read_run(&t, &source).unwrap().rows;
        let ended = rows.iter().find(|row| row.kind == "EffectDone").unwrap().seq;
        assert!(ended > answered_at.get(), "the worker's end is recorded after the answer");

        let request = AdmitRequest {
            idempotency_key: format!("fork-{beside}"),
            plan: vec!["work".into()],
            budget: Budget::default(),
        };
        match runtime.fork(&t, &source, answered_at.get(), request) {
            Ok(Admission::New(mut fork)) => {
                let _ = fork.effect("ek:pay", "work", counted(&ran, 5));
            }
            Ok(Admission::Existing { run, .. }) => panic!("a new fork, not {run}"),
            Err(RuntimeError::NotApplicable { reason, .. }) => {
                assert!(reason.contains("ek:pay") && reason.contains(&format!("seq {ended}")), "{reason}")
            }
            Err(other) => panic!("{other:?}"),
        }
        assert_eq!(ran.load(Ordering::SeqCst), 1, "({beside}) the payment its source recorded ran again in the fork");
    }
}

/// R-RUN-5, R-RUN-4: a resumed run's code reads back a step its history
/// finished, then performs an effect there, so the runtime first records
/// that step again. When that write fails (the store down for a moment)
/// and the code retries the effect, the step is still owed: the effect is
/// performed only after its step is recorded and counted. The step was
/// dropped at the failed write, and the retried effect was performed with
/// no step its journal showed started, its step never counted against a
/// steps ceiling.
#[test]
fn r_run_5_a_failed_write_of_a_step_read_back_leaves_it_owed_not_dropped() {
    let drive = |runtime: &Runtime, ran: &AtomicU32| -> RunId {
        let mut run = admit(runtime, "owed", Budget::default());
        let id = run.run().clone();
        run.start_step("fetch").unwrap();
        run.effect("ek:page-1", "fetch", counted(ran, 1)).unwrap();
        run.finish_step("fetch").unwrap();
        runtime.withhold(&tenant(), &id, "held between pages").unwrap();
        runtime.lift(&tenant(), &id, "go on").unwrap();
        let mut resumed = runtime.resume(&tenant(), &id).unwrap();
        resumed.start_step("fetch").unwrap();
        // Hostile (or merely persistent) code retries an effect its store refused.
        if resumed.effect("ek:page-2", "fetch", counted(ran, 1)).is_err() {
            let _ = resumed.effect("ek:page-2", "fetch", counted(ran, 1));
        }
        let _ = resumed.finish_step("fetch");
        id
    };
    let clean = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), None));
    let _ = drive(&runtime(clean.clone()), &AtomicU32::new(0));
    let writes = clean.writes();
    let restarted = writes.iter().rposition(|call| *call == WriteCall::Append("StepStarted".into())).unwrap();
    assert!(restarted > write_index(&writes, "WithholdingLifted"), "the clean pass records the step again");

    let store = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), Some((restarted, Strike::BeforeCommit))));
    let runtime = runtime(store);
    let ran = AtomicU32::new(0);
    let id = drive(&runtime, &ran);
    let kinds: Vec<String> =
        runtime.store().read_run(&tenant(), &id).unwrap().rows.into_iter().map(|r| r.kind).collect();
    let lifted = kinds.iter().position(|kind| kind == "WithholdingLifted").unwrap();
    let after: Vec<&str> = kinds[lifted + 1..].iter().map(String::as_str).collect();
    if ran.load(Ordering::SeqCst) == 2 {
        assert_eq!(
            after.first().copied(),
            Some("StepStarted"),
            "the second page was performed with no step its journal shows started: {after:?}"
        );
    }
    let starts = kinds.iter().filter(|kind| *kind == "StepStarted").count() as u64;
    assert_eq!(runtime.cost(&tenant(), &id).unwrap().steps, starts);
    assert_eq!(starts, 1 + u64::from(ran.load(Ordering::SeqCst) == 2), "each page's step counted: {kinds:?}");
}

/// R-RUN-5, R-RUN-4: a fork's code, driven from its top, is served its
/// source's done effects and records its own steps (its history has none
/// of its source's), counted once against the fork's steps ceiling of the
/// plan's length; stopped by an operator and resumed, the same code reads
/// the fork's own steps back and finishes under that ceiling, performing
/// only the effect after the fork point, once.
#[test]
fn r_run_5_a_resumed_fork_reads_its_own_steps_back_within_its_steps_ceiling() {
    let runtime = runtime(Arc::new(MemoryStore::new()));
    let t = tenant();
    let ran = AtomicU32::new(0);
    let mut source = admit(&runtime, "steps-source", Budget::default());
    let source_id = source.run().clone();
    source.start_step("search").unwrap();
    source.effect("ek:search", "search", counted(&ran, 1)).unwrap();
    source.finish_step("search").unwrap();
    let at = runtime.store().read_run(&t, &source_id).unwrap().head.unwrap().seq;
    let request = AdmitRequest {
        idempotency_key: "steps-fork".into(),
        plan: vec!["work".into()],
        budget: Budget { steps: Some(2), ..Budget::default() },
    };
    let Admission::New(mut forked) = runtime.fork(&t, &source_id, at, request).unwrap() else { panic!() };
    let id = forked.run().clone();
    let agent = |run: &mut RunHandle<'_>| -> Result<(), RuntimeError> {
        run.start_step("search")?;
        run.effect("ek:search", "search", || unreachable!("served from the source"))?;
        run.finish_step("search")?;
        run.start_step("answer")?;
        run.effect("ek:answer", "answer", counted(&ran, 1))?;
        run.finish_step("answer")
    };
    forked.start_step("search").unwrap();
    forked.effect("ek:search", "search", || unreachable!("served from the source")).unwrap();
    forked.finish_step("search").unwrap();
    runtime.withhold(&t, &id, "held").unwrap();
    runtime.lift(&t, &id, "go on").unwrap();
    let mut resumed = runtime.resume(&t, &id).unwrap();
    agent(&mut resumed).expect("the fork's code, from its top, finishes under its steps ceiling");
    resumed.succeed("answered").unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 2, "the source's search once, the fork's answer once");
    assert_eq!(runtime.cost(&t, &id).unwrap().steps, 2);
}
