//! Injected faults on PostgreSQL (a fresh database each): every write the runtime makes fails once,
//! before or after it commits (`journal_core::testkit_faults`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::testkit_faults::{self, FaultCase, Witnesses, fault_matrix, fault_table};
use journal_core::{Store, testkit};
use witness::{ALG_COSIGNATURE_V1, Cosigner, HttpWitness, SignerKey, TrustedWitness};
use witness_server::{LogConfig, SystemClock, WitnessConfig, WitnessServer};

/// Every write the runtime makes, failing before it commits and after it
/// committed (the acknowledgement lost), with a witness serving over HTTP so
/// that the sweep's cosigned checkpoint is among them: the driver gets a
/// typed error and resumes; no effect runs twice, an effect whose fate is
/// unknown quarantines the run (a doubt), nothing acknowledged is lost, and
/// the audit of the store is clean afterwards (R-store_pg::PgStore::temporary().expect("a PostgreSQL store")-2, R-RUN-5).
#[test]
fn r_store_2_r_run_5_a_failed_or_unacknowledged_write_never_runs_an_effect_twice_or_loses_a_record() {
    let fresh = || -> Arc<dyn Store> { Arc::new(store_pg::PgStore::temporary().expect("a PostgreSQL store")) };
    let witnesses = || -> Witnesses {
        let cosigner =
            Cosigner::new(SignerKey::from_seed("faults.test/witness", ALG_COSIGNATURE_V1, [4; 32]).unwrap()).unwrap();
        let state = tempfile::tempdir().unwrap();
        let log = LogConfig {
            origin: testkit::origin().to_string(),
            keys: vec![testkit_faults::matrix_log_key().verifier_key()],
        };
        let config = WitnessConfig { cosigner: cosigner.clone(), logs: vec![log], clock: Arc::new(SystemClock) };
        let server = WitnessServer::start(config, &state.path().join("witness.redb"), "127.0.0.1:0").unwrap();
        let client =
            HttpWitness::new(&server.url(), vec![TrustedWitness::new(cosigner.verifier_key()).unwrap()]).unwrap();
        (vec![Arc::new(client)], Box::new((server, state)))
    };
    let check = |store: &dyn Store, case: &FaultCase| {
        let inputs = audit::AuditInputs::new(testkit::tenant(), testkit::origin());
        let report = audit::audit(store, &inputs).expect("the audit runs");
        assert!(report.findings.is_empty(), "{case:?}: {:?}", report.findings);
        assert!(report.checked.records > 0, "{case:?}: the audit read nothing");
    };
    println!("{}", fault_table(&fault_matrix(&fresh, Some(&witnesses), &check)));
}
