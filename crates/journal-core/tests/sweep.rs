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
    keys: Vec<TrustedWitness>,
}

fn witnesses(count: u8, log_key: &LogKey) -> Witnesses {
    let (mut dirs, mut servers, mut clients, mut keys) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..count {
        let cosigner =
            Cosigner::new(SignerKey::from_seed(&format!("sweep.test/w{i}"), ALG_COSIGNATURE_V1, [i + 10; 32]).unwrap())
                .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config = WitnessConfig {
            extra_cosigners: Vec::new(),
            cosigner: cosigner.clone(),
            logs: vec![LogConfig { origin: ORIGIN.into(), keys: vec![log_key.verifier_key()] }],
            clock: Arc::new(SystemClock),
        };
        let server = WitnessServer::start(config, &dir.path().join("w.redb"), "127.0.0.1:0").unwrap();
        let client: Arc<dyn Witness + Send + Sync> = Arc::new(
            HttpWitness::new(&server.url(), vec![TrustedWitness::new(cosigner.verifier_key()).unwrap()]).unwrap(),
        );
        clients.push(client);
        keys.push(TrustedWitness::new(cosigner.verifier_key()).unwrap());
        servers.push(server);
        dirs.push(dir);
    }
    Witnesses { _dirs: dirs, _servers: servers, clients, keys }
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
        .witness_keys(ws.keys.clone())
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

fn client_for(server_url: &str, cosigner_seed: u8, name: &str) -> Arc<dyn Witness + Send + Sync> {
    let key = SignerKey::from_seed(name, ALG_COSIGNATURE_V1, [cosigner_seed; 32]).unwrap().verifier_key();
    Arc::new(HttpWitness::new(server_url, vec![TrustedWitness::new(key).unwrap()]).unwrap())
}

/// A log rewritten to the size a quorum cosigned (a sealed run deleted, another
/// sealed in its place) is an integrity refusal, never a skip: the sweep
/// remembers the root of the last met round, not only its size.
#[test]
fn r_wit_9_a_log_rewritten_to_the_same_size_is_an_integrity_refusal_not_a_skip() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    let store = Arc::new(MemoryStore::new());
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
        .witnesses(ws.clients.clone(), WitnessQuorum::of(1))
        .witness_keys(ws.keys.clone())
        .build()
        .unwrap();
    seal(&runtime, &tenant, "a");
    let newest = seal(&runtime, &tenant, "b");
    assert!(matches!(runtime.sweep(&tenant).unwrap().outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })));
    assert_eq!(store.cosigned_checkpoints(&tenant).unwrap().len(), 1, "the met round is kept, cosigned");
    store.delete_run(&tenant, &newest);
    store.rewind_log(&tenant, 1);
    seal(&runtime, &tenant, "c");
    let report = runtime.sweep(&tenant).unwrap();
    assert!(report.integrity_refusal() && report.needs_attention(), "{report:?}");
    assert!(
        matches!(&report.outcome, SweepOutcome::RefusedToSign { reason } if reason.contains("rewritten")),
        "{report:?}"
    );
}

/// Two instances of one plane sweeping one log: each sees witnesses ahead of
/// what it last sent, and neither raises an integrity alarm; both end cosigned.
#[test]
fn r_wit_8_two_instances_sweeping_one_log_raise_no_alarm_and_both_end_cosigned() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(2, &log_key);
    let urls: Vec<String> = ws.clients.iter().map(|c| c.endpoint().to_owned()).collect();
    let store = Arc::new(MemoryStore::new());
    let instance = |clients: Vec<Arc<dyn Witness + Send + Sync>>| {
        RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
            .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
            .witnesses(clients, WitnessQuorum::of(2))
            .witness_keys(ws.keys.clone())
            .build()
            .unwrap()
    };
    let a = instance(ws.clients.clone());
    let b = instance(vec![client_for(&urls[0], 10, "sweep.test/w0"), client_for(&urls[1], 11, "sweep.test/w1")]);
    for round in 0..3 {
        seal(&a, &tenant, &format!("a-{round}"));
        let report = a.sweep(&tenant).unwrap();
        assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "a {round}: {report:?}");
        seal(&b, &tenant, &format!("b-{round}"));
        let report = b.sweep(&tenant).unwrap();
        assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "b {round}: {report:?}");
    }
    let report = a.sweep(&tenant).unwrap();
    assert_eq!(report.outcome, SweepOutcome::Skipped { size: 6 }, "b's met round counts for a: one log, one store");
    assert_eq!(store.cosigned_checkpoints(&tenant).unwrap().last().unwrap().tree.size, 6);
}

/// One witness listed twice (its URL with and without a slash) is refused
/// when the runtime is built: a quorum counts witnesses, not list entries.
#[test]
fn r_wit_7_one_witness_listed_twice_is_refused() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    let url = ws.clients[0].endpoint().to_owned();
    let twice = vec![Arc::clone(&ws.clients[0]), client_for(&format!("{url}/"), 10, "sweep.test/w0")];
    let built = RuntimeBuilder::new(Arc::new(MemoryStore::new()))
        .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
        .witnesses(twice, WitnessQuorum::of(2))
        .build();
    assert!(matches!(built, Err(journal_core::BuildError::DuplicateWitness(_))), "{:?}", built.err());
}
