//! The injected-fault test both backends run (`#[path]`-included by
//! `crates/store-redb/tests/injected_faults.rs` and
//! `crates/store-pg/tests/injected_faults.rs`): the matrix of
//! `journal_core::testkit_faults`, a witness serving over HTTP per case, and
//! the audit after each.

use std::sync::Arc;

use journal_core::testkit_faults::{self, FaultCase, Witnesses, fault_matrix, fault_table};
use journal_core::{Store, testkit};
use witness::{ALG_COSIGNATURE_V1, Cosigner, HttpWitness, SignerKey, TrustedWitness};
use witness_server::{LogConfig, SystemClock, WitnessConfig, WitnessServer};

/// Runs the matrix on stores from `fresh` and prints the README's fault table.
pub fn run_fault_matrix(fresh: &dyn Fn() -> Arc<dyn Store>) {
    let witnesses = || -> Witnesses {
        let cosigner =
            Cosigner::new(SignerKey::from_seed("faults.test/witness", ALG_COSIGNATURE_V1, [4; 32]).unwrap()).unwrap();
        let state = tempfile::tempdir().unwrap();
        let log = LogConfig {
            origin: testkit::origin().to_string(),
            keys: vec![testkit_faults::matrix_log_key().verifier_key()],
        };
        let config = WitnessConfig {
            extra_cosigners: Vec::new(),
            cosigner: cosigner.clone(),
            logs: vec![log],
            clock: Arc::new(SystemClock),
        };
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
    println!("{}", fault_table(&fault_matrix(fresh, Some(&witnesses), &check)));
}
