//! End to end across the crates: a plane on redb seals runs, signs its
//! checkpoints as they go out, and a witness over real HTTP cosigns them
//! while the log grows, and refuses once a sealed run is deleted behind the
//! store's back (R-LOG-6, R-WIT-6, R-NOTE-2).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::LogView;
use journal_core::testkit::TamperAccess;
use journal_core::{Admission, AdmitRequest, Budget, Ed25519Signer, RunId, RuntimeBuilder, Store, TenantId};
use store_redb::RedbStore;
use witness::{
    ALG_COSIGNATURE_V1, ALG_ED25519, Checkpoint, Cosigner, HttpWitness, LogKey, SignerKey, TrustedWitness, Witness,
};
use witness_server::{LogConfig, SystemClock, WitnessConfig, WitnessServer};

const ORIGIN: &str = "e2e.test/plane/tenant-a";

fn seal_runs(store: &Arc<RedbStore>, tenant: &TenantId, keys: std::ops::Range<u32>) -> Vec<RunId> {
    let runtime = RuntimeBuilder::new(Arc::clone(store) as Arc<dyn Store>)
        .signer(Arc::new(Ed25519Signer::from_seed("spiffe://e2e.test/runtime", [3; 32])))
        .tenant(tenant.clone(), witness::Origin::new(ORIGIN).unwrap(), None)
        .build()
        .unwrap();
    keys.map(|n| {
        let request =
            AdmitRequest { idempotency_key: format!("job-{n}"), plan: vec!["work".into()], budget: Budget::default() };
        let Admission::New(run) = runtime.admit(tenant, request).unwrap() else { panic!("new run") };
        let id = run.run().clone();
        run.succeed("done").unwrap();
        id
    })
    .collect()
}

/// Why admitting a run on `store` was refused (panics if it was not).
fn admission_refusal(store: &Arc<RedbStore>, tenant: &TenantId) -> String {
    let runtime = RuntimeBuilder::new(Arc::clone(store) as Arc<dyn Store>)
        .tenant(tenant.clone(), witness::Origin::new(ORIGIN).unwrap(), None)
        .build()
        .unwrap();
    let request = AdmitRequest { idempotency_key: "job-late".into(), plan: vec![], budget: Budget::default() };
    match runtime.admit(tenant, request) {
        Ok(_) => panic!("the plane admitted a run on a log with a hole"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn a_witness_cosigns_the_growing_log_and_refuses_it_after_a_deletion() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(RedbStore::temporary().unwrap());
    let tenant = TenantId::new("tenant-a").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let cosigner =
        Cosigner::new(SignerKey::from_seed("e2e.test/witness", ALG_COSIGNATURE_V1, [2; 32]).unwrap()).unwrap();
    let config = WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner: cosigner.clone(),
        logs: vec![LogConfig { origin: ORIGIN.into(), keys: vec![log_key.verifier_key()] }],
        clock: Arc::new(SystemClock),
    };
    let server = WitnessServer::start(config, &dir.path().join("witness.redb"), "127.0.0.1:0").unwrap();
    let client = HttpWitness::new(&server.url(), vec![TrustedWitness::new(cosigner.verifier_key()).unwrap()]).unwrap();
    let submit = || {
        let view = LogView::open(store.as_ref(), &tenant).unwrap();
        let signed =
            log_key.sign(&Checkpoint::new(&witness::Origin::new(ORIGIN).unwrap(), view.head().unwrap().tree)).unwrap();
        client.add_checkpoint(&signed, &view)
    };

    let runs = seal_runs(&store, &tenant, 0..3);
    assert_eq!(submit().unwrap().checkpoint.tree().size, 3);
    seal_runs(&store, &tenant, 3..8);
    assert_eq!(submit().unwrap().checkpoint.tree().size, 8, "growth is proven from the store's own nodes");

    // Someone with access to the file deletes a sealed run. A plane refuses
    // to admit anything on a log with a hole in it (R-RUN-5: what resume is
    // held to is read from the log's leaves), so the careful hider also
    // rewrites the log densely around the hole, and the plane seals again.
    store.delete_run(&tenant, &runs[1]);
    let holed = admission_refusal(&store, &tenant);
    assert!(holed.contains("entries were removed behind the plane"), "{holed}");
    let kept: Vec<(RunId, Vec<u8>)> =
        store.seals(&tenant).unwrap().into_iter().map(|seal| (seal.run, seal.leaf_bytes)).collect();
    store.rewrite_log(&tenant, &kept);
    seal_runs(&store, &tenant, 8..9);
    let refused = submit().unwrap_err();
    assert!(refused.is_integrity(), "the witness that saw size 8 refuses the rewritten log: {refused:?}");
}
