//! Cost accounting is a read of the journal (R-RUN-7): the library's
//! figures over a real redb file agree with the verified chains, or refuse.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::testkit::TamperAccess as _;
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, Dimension, EffectOutput, EffectResult, Origin, RunId, Runtime,
    RuntimeBuilder, RuntimeError, Store, TenantId,
};
use store_redb::RedbStore;

fn plane(path: &std::path::Path) -> (Arc<RedbStore>, Runtime, TenantId) {
    let store = Arc::new(RedbStore::create(path).unwrap());
    let tenant = TenantId::new("t").unwrap();
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), Origin::new("cost.test/plane").unwrap(), None)
        .build()
        .unwrap();
    (store, runtime, tenant)
}

/// A run under `key` whose effects charge `tokens` each.
fn run_charging(runtime: &Runtime, tenant: &TenantId, key: &str, tokens: &[u64]) -> RunId {
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec!["a".into()], budget: Budget::default() };
    let Admission::New(mut run) = runtime.admit(tenant, request).unwrap() else { panic!("admitted twice") };
    run.start_step("a").unwrap();
    for (n, tokens) in tokens.iter().enumerate() {
        let charged = Counters { tokens: *tokens, ..Counters::default() };
        run.effect(&format!("ek:{n}"), "a", || EffectOutput {
            result: EffectResult::Ok { output: "ok".into() },
            charged,
        })
        .unwrap();
    }
    run.run().clone()
}

/// R-RUN-7, R-AUD-8 (review 55): `Runtime::tenant_cost` summed the runs the
/// runs table lists, derived data, so with one run's row deleted behind the
/// plane (its records, signed and chained, left in place) it answered the
/// other runs' spend as the tenant's, with no word of the run left out. It
/// now reads every run whose records are stored, as `agentplane cost` does,
/// and the run whose row is gone is refused, not left out of the figure.
#[test]
fn r_run_7_tenant_cost_does_not_leave_out_a_run_whose_runs_row_was_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (store, runtime, tenant) = plane(&dir.path().join("plane.redb"));
    run_charging(&runtime, &tenant, "kept", &[10]);
    let hidden = run_charging(&runtime, &tenant, "hidden", &[1000]);
    assert_eq!(runtime.tenant_cost(&tenant).unwrap().tokens, 1010);
    store.delete_runs_row(&tenant, &hidden);
    match runtime.tenant_cost(&tenant) {
        Err(err) => assert!(err.to_string().contains(hidden.as_str()), "the run left out is named: {err}"),
        Ok(total) => panic!("the tenant's cost left out run {hidden}'s 1000 tokens: {total:?}"),
    }
}

/// R-RUN-7 (review 55): a total past `u64::MAX` was held at the limit, so
/// every charge counted after it changed nothing and the figure read as an
/// answer: a run whose effect reported a charge near the limit hid every
/// other run's spend from the tenant's total. A total that passes the limit
/// is now a typed error naming the dimension, for a run and for the tenant.
#[test]
fn r_run_7_a_cost_total_past_u64_max_is_a_typed_error_not_a_saturated_figure() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, runtime, tenant) = plane(&dir.path().join("plane.redb"));
    let huge = run_charging(&runtime, &tenant, "huge", &[u64::MAX - 5]);
    assert_eq!(runtime.cost(&tenant, &huge).unwrap().tokens, u64::MAX - 5, "one charge near the limit is counted");
    run_charging(&runtime, &tenant, "ordinary", &[1000]);
    match runtime.tenant_cost(&tenant) {
        Err(RuntimeError::CostOverflow(overflow)) => assert_eq!(overflow.dimension, Dimension::Tokens),
        other => panic!("the tenant's total hid 1000 tokens at the limit: {other:?}"),
    }
    let twice = run_charging(&runtime, &tenant, "twice", &[u64::MAX / 2 + 1, u64::MAX / 2 + 1]);
    assert!(matches!(runtime.cost(&tenant, &twice), Err(RuntimeError::CostOverflow(_))), "a run's own total too");
}
