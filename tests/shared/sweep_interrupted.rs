//! A sweep stopped (power lost, a SIGKILL) at each of its store writes,
//! then the plane started again: included by
//! `crates/store-redb/tests/sweep_interrupted.rs` and
//! `crates/store-pg/tests/sweep_interrupted.rs`.

use std::sync::Arc;

use journal_core::log::{HighWater, HighWaterMark};
use journal_core::runtime::{Admission, AdmitRequest, Runtime, RuntimeBuilder};
use journal_core::testkit_faults::{FaultyStore, Strike, WriteCall, matrix_log_key};
use journal_core::{Budget, Store, SweepOutcome, testkit};
use witness::{ALG_COSIGNATURE_V1, Cosigner, HttpWitness, SignerKey, TrustedWitness};
use witness_server::{LogConfig, SystemClock, WitnessConfig, WitnessServer};

fn runtime(
    store: Arc<dyn Store>,
    mark: &Arc<testkit::MemoryHighWater>,
    url: &str,
    trusted: &TrustedWitness,
) -> Runtime {
    let client = HttpWitness::new(url, vec![trusted.clone()]).unwrap();
    RuntimeBuilder::new(store)
        .tenant(testkit::tenant(), testkit::origin(), Some(matrix_log_key()))
        .witnesses(vec![Arc::new(client)], witness::WitnessQuorum::of(1))
        .witness_keys(vec![trusted.clone()])
        .high_water(Arc::clone(mark) as Arc<dyn HighWater>)
        .build()
        .unwrap()
}

fn sealed_run(runtime: &Runtime, key: &str) {
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget: Budget::default() };
    let Admission::New(handle) = runtime.admit(&testkit::tenant(), request).unwrap() else { panic!("a new run") };
    let mut handle = *handle;
    handle.start_step("work").unwrap();
    handle.finish_step("work").unwrap();
    handle.succeed("done").unwrap();
}

/// R-PLANE-2, R-WIT-8, R-STORE-2: a sweep stopped at each of its store
/// writes (the signed checkpoint's row, the cosigned one's), before the
/// write committed and after (its acknowledgement never read), with its
/// high-water mark raised and, for the second, the witness holding its
/// cosignature. Started again, the plane's next sweep meets the quorum and
/// keeps the round; the plane's key signed one root at that size (the
/// witness's, the mark's and the stored notes' agree), and the audit finds
/// nothing: no false alarm on a plane that merely stopped.
pub fn a_sweep_stopped_at_each_write_is_held_again_on_restart(fresh: &dyn Fn() -> Arc<dyn Store>) {
    let cosigner =
        Cosigner::new(SignerKey::from_seed("restart.test/witness", ALG_COSIGNATURE_V1, [6; 32]).unwrap()).unwrap();
    let trusted = TrustedWitness::new(cosigner.verifier_key()).unwrap();
    for (index, call) in [(0, WriteCall::SignedCheckpoint), (1, WriteCall::CosignedCheckpoint)] {
        for strike in [Strike::BeforeCommit, Strike::AfterCommit] {
            let state = tempfile::tempdir().unwrap();
            let log = LogConfig { origin: testkit::origin().to_string(), keys: vec![matrix_log_key().verifier_key()] };
            let config = WitnessConfig {
                extra_cosigners: Vec::new(),
                cosigner: cosigner.clone(),
                logs: vec![log],
                clock: Arc::new(SystemClock),
            };
            let server = WitnessServer::start(config, &state.path().join("witness.redb"), "127.0.0.1:0").unwrap();
            let inner = fresh();
            let mark = Arc::new(testkit::MemoryHighWater::default());
            let first = runtime(Arc::clone(&inner), &mark, &server.url(), &trusted);
            sealed_run(&first, "before");
            assert!(!first.sweep(&testkit::tenant()).unwrap().needs_attention());
            sealed_run(&first, "stopped");
            drop(first);

            // The sweep stopped at the write (the process gone with it).
            let faulty = Arc::new(FaultyStore::new(Arc::clone(&inner), Some((index, strike))));
            let stopped = runtime(Arc::clone(&faulty) as Arc<dyn Store>, &mark, &server.url(), &trusted);
            let failed = stopped.sweep(&testkit::tenant());
            assert!(failed.is_err(), "{call} {strike:?}: the write failed: {failed:?}");
            assert_eq!(faulty.writes().get(index), Some(&call), "{call} {strike:?}: {:?}", faulty.writes());
            drop(stopped);

            // Started again.
            let again = runtime(Arc::clone(&inner), &mark, &server.url(), &trusted);
            let report = again.sweep(&testkit::tenant()).unwrap();
            assert!(
                matches!(
                    report.outcome,
                    SweepOutcome::Round(witness::QuorumOutcome::Met { .. }) | SweepOutcome::Skipped { .. }
                ),
                "{call} {strike:?}: the next sweep after the restart: {report:?}"
            );
            let tree = report.tree;
            let cosigned = inner.cosigned_checkpoints(&testkit::tenant()).unwrap();
            assert_eq!(cosigned.last().map(|row| row.tree), Some(tree), "{call} {strike:?}: the round was kept");
            let signed = inner.signed_checkpoints(&testkit::tenant()).unwrap();
            assert_eq!(signed.last().map(|row| row.tree), Some(tree), "{call} {strike:?}: {signed:?}");
            for row in &signed {
                assert!(
                    signed.iter().all(|other| other.tree.size != row.tree.size || other.tree == row.tree),
                    "{call} {strike:?}: two roots at size {}",
                    row.tree.size
                );
            }
            assert_eq!(mark.last(&testkit::origin()).unwrap(), HighWaterMark::Signed(tree), "{call} {strike:?}");
            let inputs = audit::AuditInputs::new(testkit::tenant(), testkit::origin());
            let audited = audit::audit(inner.as_ref(), &inputs).unwrap();
            assert!(audited.findings.is_empty(), "{call} {strike:?}: {:?}", audited.findings);
            // And the round after that: nothing new, nothing to do.
            let next = again.sweep(&testkit::tenant()).unwrap();
            assert!(!next.needs_attention(), "{call} {strike:?}: {next:?}");
            server.shutdown();
        }
    }
}
