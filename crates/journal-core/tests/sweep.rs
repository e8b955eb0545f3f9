//! The witnessing sweep (R-WIT-8, R-WIT-9): off the run path, skipped when the
//! log has not grown since a round met the bar, three answers kept apart.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::testkit::TamperAccess;
use journal_core::{
    Admission, AdmitRequest, Budget, MemoryStore, RunId, Runtime, RuntimeBuilder, Store, SweepOutcome, TenantId,
};
use witness::{
    ALG_COSIGNATURE_V1, ALG_ED25519, Cosigner, HttpWitness, LogKey, QuorumOutcome, SignerKey, TrustedWitness, Witness,
    WitnessQuorum,
};
use witness_server::{LogConfig, SystemClock, WitnessConfig, WitnessServer};

const ORIGIN: &str = "sweep.test/plane";

struct Witnesses {
    _dirs: Vec<tempfile::TempDir>,
    _servers: Vec<WitnessServer>,
    clients: Vec<Arc<dyn Witness + Send + Sync>>,
}

fn witnesses(count: u8, log_key: &LogKey) -> Witnesses {
    let (mut dirs, mut servers, mut clients) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..count {
        let cosigner =
            Cosigner::new(SignerKey::from_seed(&format!("sweep.test/w{i}"), ALG_COSIGNATURE_V1, [i + 10; 32]).unwrap())
                .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config = WitnessConfig {
            cosigner: cosigner.clone(),
            logs: vec![LogConfig { origin: ORIGIN.into(), keys: vec![log_key.verifier_key()] }],
            clock: Arc::new(SystemClock),
        };
        let server = WitnessServer::start(config, &dir.path().join("w.redb"), "127.0.0.1:0").unwrap();
        let client: Arc<dyn Witness + Send + Sync> = Arc::new(
            HttpWitness::new(&server.url(), vec![TrustedWitness::new(cosigner.verifier_key()).unwrap()]).unwrap(),
        );
        clients.push(client);
        servers.push(server);
        dirs.push(dir);
    }
    Witnesses { _dirs: dirs, _servers: servers, clients }
}

fn seal(runtime: &Runtime, tenant: &TenantId, key: &str) -> RunId {
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec![], budget: Budget::default() };
    let Admission::New(run) = runtime.admit(tenant, request).unwrap() else { panic!("new run") };
    let id = run.run().clone();
    run.succeed("done").unwrap();
    id
}

#[test]
fn r_wit_8_r_wit_9_rounds_meet_skip_fall_short_and_refuse() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(2, &log_key);
    let store = Arc::new(MemoryStore::new());
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
        .witnesses(ws.clients.clone(), WitnessQuorum::of(2))
        .build()
        .unwrap();

    // Sealing does not wait on witnessing: the run is sealed before any round.
    let first = seal(&runtime, &tenant, "a");
    let report = runtime.sweep(&tenant).unwrap();
    assert!(
        matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { ref cosigned, .. }) if cosigned.len() == 2),
        "{report:?}"
    );
    assert!(!report.needs_attention());
    assert_eq!(runtime.sweep(&tenant).unwrap().outcome, SweepOutcome::Skipped { size: 1 }, "no growth, no round");

    seal(&runtime, &tenant, "b");
    assert!(matches!(runtime.sweep(&tenant).unwrap().outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })));

    // A runtime whose second witness is unreachable falls short: a finding.
    let nobody = SignerKey::from_seed("x.test/w", ALG_COSIGNATURE_V1, [9; 32]).unwrap().verifier_key();
    let dead: Arc<dyn Witness + Send + Sync> =
        Arc::new(HttpWitness::new("http://127.0.0.1:9", vec![TrustedWitness::new(nobody).unwrap()]).unwrap());
    let short = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
        .witnesses(vec![Arc::clone(&ws.clients[0]), dead], WitnessQuorum::of(2))
        .build()
        .unwrap();
    seal(&short, &tenant, "c");
    let report = short.sweep(&tenant).unwrap();
    assert!(
        matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Shortfall { got: 1, needed: 2, .. })),
        "{report:?}"
    );
    assert!(report.needs_attention() && !report.integrity_refusal());

    // A sealed run deleted behind the store's back: the plane refuses to sign
    // the rewritten log before any witness sees it, and says why.
    store.delete_run(&tenant, &first);
    seal(&runtime, &tenant, "d");
    let report = runtime.sweep(&tenant).unwrap();
    assert!(report.integrity_refusal() && report.needs_attention(), "{report:?}");
    assert!(
        matches!(&report.outcome, SweepOutcome::RefusedToSign { reason } if reason.contains("holes")),
        "{report:?}"
    );
}

#[test]
fn a_plane_without_witnesses_reports_so() {
    let tenant = TenantId::new("t").unwrap();
    let runtime = RuntimeBuilder::new(Arc::new(MemoryStore::new()))
        .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), None)
        .build()
        .unwrap();
    assert_eq!(runtime.sweep(&tenant).unwrap().outcome, SweepOutcome::NoWitnesses);
}
