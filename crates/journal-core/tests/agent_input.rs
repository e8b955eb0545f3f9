//! What agent code hands the runtime (effect keys, outputs, errors, charges)
//! comes from model output: the runtime and the readers of its journal hold
//! whatever it is to what the run did.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::runtime::RuntimeError;
use journal_core::{
    Admission, AdmitRequest, Budget, ChainCheck, Counters, EffectOutput, EffectResult, Journal, MemoryStore, Origin,
    RunId, RunStatus, Runtime, RuntimeBuilder, Store, TenantId, Upcasters, VerifiedRecord, VerifyOptions,
};

const ORIGIN: &str = "agent-input.test/plane";

fn plane() -> (Arc<MemoryStore>, TenantId, Origin, Runtime) {
    let store = Arc::new(MemoryStore::new());
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), origin.clone(), None)
        .build()
        .unwrap();
    (store, tenant, origin, runtime)
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
