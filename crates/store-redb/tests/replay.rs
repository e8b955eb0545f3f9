//! A replay is a read: replaying every run of a redb file, the unchanged agent
//! and a changed one, leaves the file's bytes and the store's counters as
//! they were, and no effect's closure runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::regression::{RunContext, replay_store};
use journal_core::runtime::RuntimeError;
use journal_core::{
    Admission, AdmitRequest, Budget, ChainCheck, Counters, EffectOutput, EffectResult, Journal, Origin, RuntimeBuilder,
    Store, TenantId, Upcasters, VerifyOptions,
};
use store_redb::RedbStore;

fn agent(run: &mut impl RunContext, extra: bool) -> Result<(), RuntimeError> {
    let output = |text: &str| EffectOutput {
        result: EffectResult::Ok { output: text.into() },
        charged: Counters { tokens: 25, ..Counters::default() },
    };
    run.start_step("research")?;
    run.effect("ek:search", "research", || output("hits"))?;
    if extra {
        run.effect("ek:translate", "research", || panic!("a replay never performs an effect"))?;
    }
    run.finish_step("research")?;
    run.succeed("answered")
}

#[test]
fn replaying_a_redb_store_changes_neither_its_bytes_nor_its_counters() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new("replay.test/plane").unwrap();
    let plan = vec!["research".to_owned()];
    {
        let store: Arc<dyn Store> = Arc::new(RedbStore::create(&path).unwrap());
        let runtime = RuntimeBuilder::new(store).tenant(tenant.clone(), origin.clone(), None).build().unwrap();
        for n in 0..4 {
            let request =
                AdmitRequest { idempotency_key: format!("job-{n}"), plan: plan.clone(), budget: Budget::default() };
            let Admission::New(mut run) = runtime.admit(&tenant, request).unwrap() else { panic!() };
            agent(&mut *run, false).unwrap();
        }
    }
    // Opened for writing, as a running plane holds it; the bytes are taken
    // after the open (which may write redb's own header) and before the close.
    let store = RedbStore::open(&path).unwrap();
    let before = std::fs::read(&path).unwrap();
    let counters = store.log_counters(&tenant).unwrap();
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let journal = Journal::new(&store, &tenant, &origin);

    let matched = replay_store(&journal, check, &[], &plan, |r| agent(r, false)).unwrap();
    assert_eq!(matched.len(), 4);
    let diverged = replay_store(&journal, check, &[], &plan, |r| agent(r, true)).unwrap_err();
    assert_eq!(diverged.lines().count(), 4, "{diverged}");

    assert_eq!(store.log_counters(&tenant).unwrap(), counters);
    assert!(std::fs::read(&path).unwrap() == before, "the redb file's bytes changed during a replay");
}

/// R-RUN-7, R-AUD-8 (review 29): the regression harness over a redb file
/// where someone with write access and no key deleted one run's runs-table
/// row and left its records. `replay_store` listed the runs from that table,
/// so it replayed one run fewer and answered `Ok` with no word of the run
/// left out: a changed agent that diverges on it passed. It now replays
/// every run whose records are stored, read in one snapshot, and the run
/// whose row is gone is a failure that names it.
#[test]
fn r_run_7_replaying_a_store_does_not_skip_a_run_whose_runs_row_was_deleted() {
    use journal_core::testkit::TamperAccess as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new("replay.test/plane").unwrap();
    let plan = vec!["research".to_owned()];
    let mut ids = Vec::new();
    {
        let store: Arc<dyn Store> = Arc::new(RedbStore::create(&path).unwrap());
        let runtime = RuntimeBuilder::new(store).tenant(tenant.clone(), origin.clone(), None).build().unwrap();
        for n in 0..3 {
            let request =
                AdmitRequest { idempotency_key: format!("job-{n}"), plan: plan.clone(), budget: Budget::default() };
            let Admission::New(mut run) = runtime.admit(&tenant, request).unwrap() else { panic!() };
            ids.push(run.run().clone());
            agent(&mut *run, false).unwrap();
        }
    }
    let store = RedbStore::open(&path).unwrap();
    store.delete_runs_row(&tenant, &ids[1]);
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let journal = Journal::new(&store, &tenant, &origin);
    let answer = replay_store(&journal, check, &[], &plan, |r| agent(r, false));
    let failure = answer.expect_err("a run of the store was left out of the regression test");
    assert!(failure.contains(ids[1].as_str()) && failure.contains("runs table has no row"), "{failure}");
    assert_eq!(failure.lines().count(), 1, "the other runs replay as recorded: {failure}");
}

/// R-RUN-5, R-RUN-7 (review 55): replay answered an effect by its key alone
/// and dropped the step the new code performs it in, so an agent that moved
/// `ek:search` from step `research` to step `summarize` replayed as a match
/// over a redb file whose `EffectStarted` records `research`: live, the same
/// code writes a different journal. The recorded step is now compared, and
/// the move is a divergence at the effect's seq that names both steps.
#[test]
fn r_run_7_a_replay_that_performs_an_effect_in_another_step_diverges() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new("replay.test/plane").unwrap();
    let plan = vec!["research".to_owned()];
    let moved = |run: &mut journal_core::regression::Replaying| -> Result<(), RuntimeError> {
        run.start_step("research")?;
        run.effect("ek:search", "summarize", || panic!("a replay never performs an effect"))?;
        run.finish_step("research")?;
        run.succeed("answered")
    };
    {
        let store: Arc<dyn Store> = Arc::new(RedbStore::create(&path).unwrap());
        let runtime = RuntimeBuilder::new(store).tenant(tenant.clone(), origin.clone(), None).build().unwrap();
        let request = AdmitRequest { idempotency_key: "job".into(), plan: plan.clone(), budget: Budget::default() };
        let Admission::New(mut run) = runtime.admit(&tenant, request).unwrap() else { panic!() };
        agent(&mut *run, false).unwrap();
    }
    let store = RedbStore::open(&path).unwrap();
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let journal = Journal::new(&store, &tenant, &origin);
    assert_eq!(replay_store(&journal, check, &[], &plan, |r| agent(r, false)).unwrap().len(), 1);
    let failure = replay_store(&journal, check, &[], &plan, moved).expect_err("the effect moved to another step");
    assert!(
        failure.contains("ek:search") && failure.contains("summarize") && failure.contains("research"),
        "{failure}"
    );
}
