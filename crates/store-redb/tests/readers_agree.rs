//! Recovery, audit, cost accounting and regression testing are reads of one
//! structure, the verified journal, so they cannot disagree (R-RUN-3,
//! R-RUN-6, R-RUN-7): odd but legal histories driven through the real
//! runtime on a redb file, and every reader of the same run or plane
//! compared.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::regression::replay;
use journal_core::run_state::Totals;
use journal_core::{
    Admission, AdmitRequest, Budget, ChainCheck, Counters, Dimension, DoubtAnswer, EffectOutput, EffectResult, Journal,
    Origin, Outcome, RunHandle, RunId, RunState, RunStatus, Runtime, RuntimeBuilder, RuntimeError, Store, TenantId,
    TimeWindow, Upcasters, VerifiedRun, VerifyOptions,
};
use store_redb::RedbStore;

const ORIGIN: &str = "readers.test/plane";

fn plane(store: &Arc<RedbStore>) -> (Runtime, TenantId) {
    let tenant = TenantId::new("t").unwrap();
    let runtime = RuntimeBuilder::new(Arc::clone(store) as Arc<dyn Store>)
        .tenant(tenant.clone(), Origin::new(ORIGIN).unwrap(), None)
        .build()
        .unwrap();
    (runtime, tenant)
}

fn admit<'rt>(runtime: &'rt Runtime, tenant: &TenantId, key: &str, budget: Budget) -> RunHandle<'rt> {
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec!["a".into()], budget };
    match runtime.admit(tenant, request).unwrap() {
        Admission::New(run) => *run,
        Admission::Existing { .. } => panic!("admitted twice"),
    }
}

fn ok(tokens: u64) -> EffectOutput {
    EffectOutput {
        result: EffectResult::Ok { output: "ok".into() },
        charged: Counters { tokens, cost_micros: tokens / 2, wall_millis: 3, ..Counters::default() },
    }
}

fn read(store: &Arc<RedbStore>, tenant: &TenantId, run: &RunId) -> VerifiedRun {
    let upcasters = Upcasters::default();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    Journal::new(store.as_ref(), tenant, &Origin::new(ORIGIN).unwrap()).read(run, check).unwrap()
}

/// Every reader of `run`, compared: the fold's status and counters, the
/// runtime's status, cost and listing by outcome, the listing's totals, and
/// the regression replay's recorded cost.
fn readers_agree(store: &Arc<RedbStore>, runtime: &Runtime, tenant: &TenantId, run: &RunId, history: &str) {
    let verified = read(store, tenant, run);
    let state = RunState::of(&verified.records);
    let status = runtime.status(tenant, run).unwrap();
    assert_eq!(state.status(), status, "{history}: the fold's status and Runtime::status");
    assert_eq!(
        verified.last_conclusion().map(|c| c.outcome),
        status.outcome(),
        "{history}: the chain's last conclusion and Runtime::status"
    );
    for outcome in Outcome::ALL {
        let listed = runtime.runs(tenant, Some(outcome)).unwrap().contains(run);
        assert_eq!(listed, status.outcome() == Some(outcome), "{history}: the outcome index under {outcome}");
    }
    assert!(runtime.runs(tenant, None).unwrap().contains(run), "{history}: listed among all runs");
    let totals = Totals::of(&verified.records);
    let report = replay(run, &verified.records, &[], |_| Ok(()));
    match runtime.cost(tenant, run) {
        Ok(cost) => {
            for dimension in Dimension::ALL {
                assert_eq!(totals.get(dimension), Some(cost.get(dimension)), "{history}: `runs` and cost, {dimension}");
            }
            assert_eq!(state.counters(), cost, "{history}: the fold's counters and Runtime::cost");
        }
        Err(RuntimeError::CostOverflow(overflow)) => {
            assert_eq!(totals.get(overflow.dimension), None, "{history}: `runs` and cost past u64::MAX");
        }
        Err(err) => panic!("{history}: {err}"),
    }
    assert_eq!(report.recorded_cost, totals, "{history}: the regression replay's recorded cost and `runs`");
}

/// R-RUN-3, R-RUN-7: forks of forks, a quarantine answered "happened" with a
/// result, exhausted then raised and resumed, withheld and lifted
/// mid-effect, failed then resumed to success, several conclusions, a run
/// with no effect, one step name twice: every reader says the same of each.
#[test]
fn r_run_3_r_run_7_every_reader_of_odd_legal_histories_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(RedbStore::create(&dir.path().join("plane.redb")).unwrap());
    let (runtime, tenant) = plane(&store);
    let mut runs = Vec::new();

    // No effect at all, concluded.
    let mut empty = admit(&runtime, &tenant, "empty", Budget::default());
    let id = empty.run().clone();
    empty.start_step("a").unwrap();
    empty.finish_step("a").unwrap();
    empty.succeed("nothing to do").unwrap();
    runs.push(("zero effects", id));

    // One step name twice, and a run left running.
    let mut twice = admit(&runtime, &tenant, "twice", Budget::default());
    for n in 0..2 {
        twice.start_step("a").unwrap();
        twice.effect(&format!("ek:{n}"), "a", || ok(10)).unwrap();
        twice.finish_step("a").unwrap();
    }
    runs.push(("a step name twice", twice.run().clone()));
    drop(twice);

    // Failed, resumed to success.
    let mut failed = admit(&runtime, &tenant, "failed", Budget::default());
    let id = failed.run().clone();
    failed.start_step("a").unwrap();
    failed.effect("ek:x", "a", || ok(5)).unwrap();
    failed.fail("transient").unwrap();
    let mut resumed = runtime.resume(&tenant, &id).unwrap();
    resumed.effect("ek:x", "a", || unreachable!("read back")).unwrap();
    resumed.effect("ek:y", "a", || ok(7)).unwrap();
    resumed.finish_step("a").unwrap();
    resumed.succeed("done").unwrap();
    runs.push(("failed then resumed to success", id));

    // Exhausted, raised, resumed, withheld, lifted, failed: several conclusions.
    let budget = Budget { tokens: Some(50), ..Budget::default() };
    let mut exhausted = admit(&runtime, &tenant, "exhausted", budget);
    let id = exhausted.run().clone();
    exhausted.start_step("a").unwrap();
    let crossed = exhausted.effect("ek:big", "a", || ok(60));
    assert!(matches!(&crossed, Err(RuntimeError::Stopped { status: RunStatus::Exhausted { .. }, .. })), "{crossed:?}");
    runtime.raise_ceiling(&tenant, &id, Dimension::Tokens, Some(1000)).unwrap();
    let mut resumed = runtime.resume(&tenant, &id).unwrap();
    resumed.effect("ek:more", "a", || ok(1)).unwrap();
    drop(resumed);
    runtime.withhold(&tenant, &id, "look").unwrap();
    runtime.lift(&tenant, &id, "looked").unwrap();
    runtime.resume(&tenant, &id).unwrap().fail("gave up").unwrap();
    runs.push(("exhausted, raised, resumed, withheld, lifted, failed", id));

    // Withheld and lifted while an effect runs.
    let mut held = admit(&runtime, &tenant, "held", Budget::default());
    let id = held.run().clone();
    held.start_step("a").unwrap();
    held.effect("ek:slow", "a", || {
        runtime.withhold(&tenant, &id, "hold").unwrap();
        runtime.lift(&tenant, &id, "go").unwrap();
        ok(8)
    })
    .unwrap();
    held.effect("ek:after", "a", || ok(2)).unwrap();
    held.succeed("done").unwrap();
    runs.push(("withheld and lifted mid-effect", id));

    // A crash mid-effect: quarantined, answered "happened" with a result, resumed.
    let id = {
        let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut run = admit(&runtime, &tenant, "doubt", Budget::default());
            let id = run.run().clone();
            run.start_step("a").unwrap();
            run.effect("ek:ok", "a", || ok(4)).unwrap();
            let _ = run.effect("ek:pay", "a", || std::panic::panic_any(id.clone()));
        }));
        *crashed.unwrap_err().downcast::<RunId>().unwrap()
    };
    let resumed = runtime.resume(&tenant, &id).map(|_| ());
    assert!(
        matches!(&resumed, Err(RuntimeError::Stopped { status: RunStatus::Quarantined { .. }, .. })),
        "quarantined: {resumed:?}"
    );
    let happened = DoubtAnswer::Happened { result: EffectResult::Ok { output: "receipt".into() } };
    runtime.answer_doubt(&tenant, &id, "ek:pay", happened).unwrap();
    let mut resumed = runtime.resume(&tenant, &id).unwrap();
    resumed.effect("ek:pay", "a", || unreachable!("answered")).unwrap();
    resumed.succeed("paid").unwrap();
    runs.push(("quarantine answered happened", id));

    // A fork of a fork.
    let mut source = admit(&runtime, &tenant, "source", Budget::default());
    let source_id = source.run().clone();
    source.start_step("a").unwrap();
    source.effect("ek:1", "a", || ok(100)).unwrap();
    source.effect("ek:2", "a", || ok(200)).unwrap();
    source.succeed("done").unwrap();
    let at = read(&store, &tenant, &source_id).records.last().unwrap().stored.seq;
    let request =
        |key: &str| AdmitRequest { idempotency_key: key.into(), plan: vec!["a".into()], budget: Budget::default() };
    let Admission::New(mut fork) = runtime.fork(&tenant, &source_id, at, request("fork")).unwrap() else { panic!() };
    let fork_id = fork.run().clone();
    fork.start_step("a").unwrap();
    fork.effect("ek:1", "a", || unreachable!("served")).unwrap();
    fork.effect("ek:3", "a", || ok(300)).unwrap();
    fork.succeed("done").unwrap();
    let at = read(&store, &tenant, &fork_id).records.last().unwrap().stored.seq;
    let Admission::New(mut fork2) = runtime.fork(&tenant, &fork_id, at, request("fork2")).unwrap() else { panic!() };
    let fork2_id = fork2.run().clone();
    fork2.start_step("a").unwrap();
    fork2.effect("ek:2", "a", || unreachable!("served from the source's source")).unwrap();
    fork2.effect("ek:4", "a", || ok(400)).unwrap();
    fork2.succeed("done").unwrap();
    runs.push(("a fork's source", source_id));
    runs.push(("a fork", fork_id));
    runs.push(("a fork of a fork", fork2_id));

    // Charges near u64::MAX.
    let mut huge = admit(&runtime, &tenant, "huge", Budget::default());
    huge.start_step("a").unwrap();
    huge.effect("ek:h1", "a", || ok(u64::MAX - 1)).unwrap();
    huge.effect("ek:h2", "a", || ok(u64::MAX - 1)).unwrap();
    runs.push(("two charges past u64::MAX", huge.run().clone()));
    drop(huge);

    for (history, run) in &runs {
        readers_agree(&store, &runtime, &tenant, run, history);
    }
}

/// R-RUN-7: the plane's cost is the sum of its runs' (the runs the index
/// lists, forks and runs left running among them), and any instant splits
/// it into the costs before and from it, for the plane and for each run.
#[test]
fn r_run_7_the_plane_cost_is_the_sum_of_its_runs_and_of_its_windows() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(RedbStore::create(&dir.path().join("plane.redb")).unwrap());
    let (runtime, tenant) = plane(&store);
    let mut source = admit(&runtime, &tenant, "source", Budget::default());
    let source_id = source.run().clone();
    source.start_step("a").unwrap();
    source.effect("ek:1", "a", || ok(100)).unwrap();
    source.succeed("done").unwrap();
    let at = read(&store, &tenant, &source_id).records.last().unwrap().stored.seq;
    let request = AdmitRequest { idempotency_key: "fork".into(), plan: vec!["a".into()], budget: Budget::default() };
    let Admission::New(mut fork) = runtime.fork(&tenant, &source_id, at, request).unwrap() else { panic!() };
    fork.start_step("a").unwrap();
    fork.effect("ek:1", "a", || unreachable!("served")).unwrap();
    fork.effect("ek:2", "a", || ok(50)).unwrap();
    drop(fork);
    let mut open = admit(&runtime, &tenant, "open", Budget::default());
    open.start_step("a").unwrap();
    open.effect("ek:1", "a", || ok(7)).unwrap();
    drop(open);

    let runs = runtime.runs(&tenant, None).unwrap();
    assert_eq!(runs.len(), 3);
    let mut sum = Counters::default();
    let mut instants = Vec::new();
    for run in &runs {
        sum = sum.checked_add(&runtime.cost(&tenant, run).unwrap()).unwrap();
        instants.extend(read(&store, &tenant, run).records.iter().map(|r| r.record.at));
    }
    assert_eq!(runtime.tenant_cost(&tenant).unwrap(), sum, "the plane's cost and its runs'");
    for at in instants {
        let before = runtime.tenant_cost_in(&tenant, TimeWindow { since: None, until: Some(at) }).unwrap();
        let from = runtime.tenant_cost_in(&tenant, TimeWindow { since: Some(at), until: None }).unwrap();
        assert_eq!(before.checked_add(&from).unwrap(), sum, "split at {at}");
        for run in &runs {
            let verified = read(&store, &tenant, run);
            let before =
                journal_core::runtime::try_cost_in(&verified, TimeWindow { since: None, until: Some(at) }).unwrap();
            let from =
                journal_core::runtime::try_cost_in(&verified, TimeWindow { since: Some(at), until: None }).unwrap();
            assert_eq!(before.checked_add(&from).unwrap(), runtime.cost(&tenant, run).unwrap(), "run {run} at {at}");
        }
    }
}

/// The agent of the mid-effect stops: `during` runs while its first effect
/// is being performed (live), never on replay.
fn mid_effect_agent(
    run: &mut impl journal_core::regression::RunContext,
    during: &dyn Fn(),
) -> Result<(), RuntimeError> {
    run.start_step("a")?;
    run.effect("ek:slow", "a", || {
        during();
        ok(8)
    })?;
    run.effect("ek:after", "a", || ok(2))?;
    run.succeed("done")
}

/// R-RUN-7, R-RUN-6: a run withheld (or quarantined by a resume beside the
/// worker) while an effect runs records the effect's end after the stop,
/// and the worker is told the run stopped. Replayed with the same code, the
/// replay stopped the code at the stop before that effect, so the unchanged
/// agent "matched" while its replayed cost left out the effect the run's
/// recorded cost (and `cost`, and `runs`) counts.
#[test]
fn r_run_7_a_replay_of_a_run_stopped_mid_effect_counts_the_effect_it_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(RedbStore::create(&dir.path().join("plane.redb")).unwrap());
    let (runtime, tenant) = plane(&store);
    type Stop<'a> = &'a dyn Fn(&RunId);
    let stops: [(&str, Stop<'_>); 2] = [
        ("withheld", &|id| runtime.withhold(&tenant, id, "hold").unwrap()),
        ("quarantined", &|id| {
            let resumed = runtime.resume(&tenant, id).map(|_| ());
            assert!(
                matches!(&resumed, Err(RuntimeError::Stopped { status: RunStatus::Quarantined { .. }, .. })),
                "a resume beside finds it in doubt: {resumed:?}"
            );
        }),
    ];
    for (key, stop) in stops {
        let mut run = admit(&runtime, &tenant, key, Budget::default());
        let id = run.run().clone();
        let live = mid_effect_agent(&mut run, &|| stop(&id));
        assert!(matches!(live, Err(RuntimeError::Stopped { .. })), "{key}: the worker is told: {live:?}");
        drop(run);
        readers_agree(&store, &runtime, &tenant, &id, key);
        let verified = read(&store, &tenant, &id);
        let report = replay(&id, &verified.records, &["a".to_owned()], |replaying| {
            mid_effect_agent(replaying, &|| unreachable!("never performed on replay"))
        });
        assert!(report.matched(), "{key}: the unchanged agent: {:?}", report.divergence);
        assert_eq!(report.replayed_cost, report.recorded_cost, "{key}: the replayed cost and the recorded");
    }
}

/// R-RUN-7: a hold lifted while the effect it interrupted ran is no stop
/// to the worker (it carries on); with the run left running, the hold is
/// its last conclusion, and the replay stopped there, before the effects
/// the run went on to record.
#[test]
fn r_run_7_a_replay_goes_on_past_a_hold_lifted_mid_effect() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(RedbStore::create(&dir.path().join("plane.redb")).unwrap());
    let (runtime, tenant) = plane(&store);
    type Effect<'a> = dyn FnMut(&str, &dyn Fn()) -> Result<(), RuntimeError> + 'a;
    let agent = |run: &mut Effect<'_>, during: &dyn Fn()| {
        run("ek:slow", during)?;
        run("ek:after", &|| ())
    };
    let mut live = admit(&runtime, &tenant, "lifted", Budget::default());
    let id = live.run().clone();
    live.start_step("a").unwrap();
    let during = || {
        runtime.withhold(&tenant, &id, "hold").unwrap();
        runtime.lift(&tenant, &id, "go").unwrap();
    };
    agent(
        &mut |key, during| {
            live.effect(key, "a", || {
                during();
                ok(8)
            })
            .map(drop)
        },
        &during,
    )
    .unwrap();
    drop(live);
    readers_agree(&store, &runtime, &tenant, &id, "lifted mid-effect, left running");
    let verified = read(&store, &tenant, &id);
    let report = replay(&id, &verified.records, &["a".to_owned()], |replaying| {
        use journal_core::regression::RunContext as _;
        replaying.start_step("a")?;
        agent(&mut |key, _| replaying.effect(key, "a", || unreachable!("replayed")).map(drop), &|| ())
    });
    assert!(report.matched(), "the unchanged agent: {:?}", report.divergence);
    assert_eq!(report.replayed_cost, report.recorded_cost);
}
