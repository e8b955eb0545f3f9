//! A rolling upgrade on one store: a worker of the older build drives a run
//! while a process of a newer build concludes it, in a shape and with an
//! outcome the older build does not read (simulated: the newer build's
//! record given a field this build does not know, rehashed, and its runs
//! and index rows naming the outcome). Included by
//! `crates/store-redb/tests/rolling_upgrade.rs` and
//! `crates/store-pg/tests/rolling_upgrade.rs`.

use std::sync::Arc;

use journal_core::testkit::TamperAccess;
use journal_core::{
    Admission, AdmitRequest, Budget, Build, ChainHash, Counters, EffectOutput, EffectResult, ExpectedHead, Origin,
    RunId, Runtime, RuntimeBuilder, RuntimeError, Store, StoredRecord, TenantId,
};

fn tenant() -> TenantId {
    TenantId::new("t").unwrap()
}

fn runtime<S: Store + 'static>(store: &Arc<S>, build: Build) -> Runtime {
    RuntimeBuilder::new(Arc::clone(store) as Arc<dyn Store>)
        .tenant(tenant(), Origin::new("store.test/rolling-upgrade").unwrap(), None)
        .written_by(build)
        .build()
        .unwrap()
}

/// Respells the run's last record as the newer build writes it (a field
/// this build does not know), rehashed, the runs row pointed at it.
fn in_the_newer_shape<S: Store + TamperAccess>(store: &S, run: &RunId) {
    let last = store.read_run(&tenant(), run).unwrap().rows.last().unwrap().clone();
    let bytes = String::from_utf8(last.bytes.clone()).unwrap().replacen("\"body\":", "\"trace\":\"abc\",\"body\":", 1);
    let bytes = bytes.into_bytes();
    let hash = ChainHash::link(&last.prev_hash, &bytes);
    let seq = last.seq;
    store.overwrite_row(&tenant(), run, StoredRecord { bytes, hash, ..last });
    store.set_runs_head(&tenant(), run, ExpectedHead { seq, hash });
}

/// R-VER-4, R-RUN-5: an operator on the newer build withholds a run, in
/// its shape and under an outcome this build does not know (`name_outcome`
/// names it in the runs and index rows), while a worker of the older build
/// performs an effect of it. The worker's end of the effect meets a record
/// at the head and reads the run again, which it cannot read. It answered
/// `Conflict` (retryable, "run that build" nowhere), and on PostgreSQL,
/// locking the run's row, damage for the whole group commit (review 74):
/// it is build skew with the remedy, and nothing is written past it.
pub fn an_effect_ended_past_a_newer_builds_conclusion_is_build_skew<S: Store + TamperAccess + 'static>(
    store: Arc<S>,
    name_outcome: impl Fn(&S, &TenantId, &RunId, &str),
) {
    let older = runtime(&store, Build::new("agentplane-cli", "0.1.0"));
    let newer = runtime(&store, Build::new("agentplane-cli", "9.9.9"));
    let request =
        AdmitRequest { idempotency_key: "order-7".into(), plan: vec!["work".into()], budget: Budget::default() };
    let Admission::New(mut run) = older.admit(&tenant(), request).unwrap() else { panic!("a new run") };
    let id = run.run().clone();
    run.start_step("work").unwrap();
    let ended = run.effect("ek:pay", "work", || {
        newer.withhold(&tenant(), &id, "held for review").unwrap();
        in_the_newer_shape(store.as_ref(), &id);
        name_outcome(&store, &tenant(), &id, "expired");
        EffectOutput { result: EffectResult::Ok { output: "paid".into() }, charged: Counters::default() }
    });
    let err = match ended {
        Err(RuntimeError::Journal(err)) => err,
        other => panic!("the end is refused: {other:?}"),
    };
    assert!(err.is_build_skew() && !err.is_tamper() && !err.is_retryable(), "{err:?}");
    let said = err.to_string();
    assert!(said.contains("9.9.9") && said.contains("0.1.0"), "the remedy names both builds: {said}");
    let rows = store.read_run(&tenant(), &id).unwrap().rows;
    assert!(rows.last().unwrap().bytes.windows(5).any(|w| w == b"trace"), "nothing written past it");
}
