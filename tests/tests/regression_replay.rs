//! Regression replays of runs recorded on a redb file: a replay says "the
//! same" only when the new code did what the record holds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::regression::{Divergence, RunContext, replay, replay_store};
use journal_core::runtime::RuntimeError;
use journal_core::{
    Admission, AdmitRequest, Budget, ChainCheck, Counters, EffectOutput, EffectResult, Journal, Origin, Outcome,
    RuntimeBuilder, Store, TenantId, Upcasters, VerifyOptions,
};
use store_redb::RedbStore;

/// The agent: one step, one effect, then it concludes `outcome` with `reason`.
fn agent(run: &mut impl RunContext, outcome: Outcome, reason: &str) -> Result<(), RuntimeError> {
    run.start_step("check")?;
    run.effect("ek:validate", "check", || EffectOutput {
        result: EffectResult::Ok { output: "schema v2".into() },
        charged: Counters { tokens: 7, ..Counters::default() },
    })?;
    run.finish_step("check")?;
    if outcome == Outcome::Failed { run.fail(reason) } else { run.succeed(reason) }
}

/// A conclusion the code makes carries its reason (a failure's is the
/// code's error), and `agentplane diff` compares it: two runs failing with
/// different errors differ. A replay compared the outcome alone, so new code
/// failing for another reason ("quota exceeded" where the record failed on
/// "input rejected: missing field") replayed as a match: a false "same".
/// Now the reason is compared, and its divergence is typed and placed at
/// the conclusion's seq.
#[test]
fn a_replay_concluding_with_another_reason_diverges() {
    let folder = tempfile::tempdir().unwrap();
    let store = Arc::new(RedbStore::create(&folder.path().join("plane.redb")).unwrap());
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new("regression.test/plane/t").unwrap();
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), origin.clone(), None)
        .build()
        .unwrap();
    let plan = vec!["check".to_owned()];
    let request = AdmitRequest { idempotency_key: "job-1".into(), plan: plan.clone(), budget: Budget::default() };
    let Admission::New(mut live) = runtime.admit(&tenant, request).unwrap() else { panic!() };
    let id = live.run().clone();
    agent(&mut *live, Outcome::Failed, "input rejected: missing field").unwrap();
    drop(live);

    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let journal = Journal::new(store.as_ref(), &tenant, &origin);
    let recorded = journal.read(&id, check).unwrap().records;
    let concluded_at = recorded.last().unwrap().stored.seq;

    let same = replay(&id, &recorded, &plan, |run| agent(run, Outcome::Failed, "input rejected: missing field"));
    assert!(same.matched(), "{same:?}");
    let other = replay(&id, &recorded, &plan, |run| agent(run, Outcome::Failed, "quota exceeded"));
    match &other.divergence {
        Some((seq, divergence @ Divergence::DifferentReason { recorded, replayed, .. })) => {
            assert_eq!(*seq, concluded_at);
            assert_eq!((recorded.as_str(), replayed.as_str()), ("input rejected: missing field", "quota exceeded"));
            assert!(divergence.to_string().contains("quota exceeded"), "{divergence}");
        }
        other => panic!("a failure for another reason replayed as {other:?}"),
    }
    let harness = replay_store(&journal, check, &[], &plan, |run| agent(run, Outcome::Failed, "quota exceeded"));
    assert!(harness.unwrap_err().contains("quota exceeded"), "the store harness fails the test");
}
