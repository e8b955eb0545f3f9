//! A plane on a real redb file, witnesses over real HTTP, and the auditor's inputs.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use audit::{Anchor, AuditInputs, AuditReport, FindingCode, RecordKey};
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, Ed25519Signer, EffectOutput, EffectResult, LogView, Origin, RunId,
    Runtime, RuntimeBuilder, Signer as _, Store, TenantId,
};
use store_redb::RedbStore;
use witness::{
    ALG_COSIGNATURE_V1, ALG_ED25519, Cosigner, HttpWitness, LogKey, SignedCheckpoint, SignerKey, TrustedWitness,
    Witness as _,
};
use witness_server::{LogConfig, SystemClock, WitnessConfig, WitnessServer};

pub const ORIGIN: &str = "audit.test/plane/tenant-a";

pub struct Plane {
    pub store: Arc<RedbStore>,
    pub tenant: TenantId,
    pub origin: Origin,
    pub log_key: LogKey,
    pub signer: Option<Ed25519Signer>,
    pub runtime: Runtime,
}

impl Plane {
    pub fn signed() -> Self {
        Self::build(Some(Ed25519Signer::from_seed("spiffe://audit.test/runtime", [9; 32])))
    }

    pub fn unsigned() -> Self {
        Self::build(None)
    }

    fn build(signer: Option<Ed25519Signer>) -> Self {
        let store = Arc::new(RedbStore::temporary().unwrap());
        let tenant = TenantId::new("tenant-a").unwrap();
        let origin = Origin::new(ORIGIN).unwrap();
        let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [4; 32]).unwrap()).unwrap();
        let mut builder = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>).tenant(
            tenant.clone(),
            origin.clone(),
            Some(log_key.clone()),
        );
        if let Some(signer) = &signer {
            builder = builder.signer(Arc::new(signer.clone()));
        }
        let runtime = builder.build().unwrap();
        Self { store, tenant, origin, log_key, signer, runtime }
    }

    fn admit(&self, key: &str) -> journal_core::RunHandle<'_> {
        let request =
            AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget: Budget::default() };
        match self.runtime.admit(&self.tenant, request).unwrap() {
            Admission::New(handle) => *handle,
            Admission::Existing { run, .. } => panic!("{key} exists as {run}"),
        }
    }

    /// A run with one effect that succeeds: sealed.
    pub fn seal(&self, key: &str) -> RunId {
        let mut run = self.admit(key);
        run.start_step("work").unwrap();
        run.effect(&format!("ek:{key}"), "work", || EffectOutput {
            result: EffectResult::Ok { output: format!("{key} done") },
            charged: Counters { tokens: 11, ..Counters::default() },
        })
        .unwrap();
        run.finish_step("work").unwrap();
        let id = run.run().clone();
        run.succeed("done").unwrap();
        id
    }

    /// A run whose effect fails: open.
    pub fn fail(&self, key: &str) -> RunId {
        let mut run = self.admit(key);
        let id = run.run().clone();
        let _ = run.effect("ek:fails", "work", || EffectOutput {
            result: EffectResult::Err { error: "503".into() },
            charged: Counters::default(),
        });
        id
    }

    /// The plane's checkpoint now, signed, as an observer would save it.
    pub fn checkpoint(&self) -> SignedCheckpoint {
        let head = LogView::open(self.store.as_ref(), &self.tenant).unwrap().head().unwrap();
        journal_core::log::sign_checkpoint(&self.origin, head.tree, &self.log_key).unwrap()
    }

    /// The plane's checkpoint signed as the plane signs it: heads leaves
    /// first, so open runs are covered (issue 20).
    pub fn checkpoint_with_heads(&self) -> SignedCheckpoint {
        journal_core::log::sign_current_head(self.store.as_ref(), &self.tenant, &self.origin, &self.log_key, None)
            .unwrap()
            .1
    }

    /// What an auditor holds: the log vkey and the record key; no anchor yet.
    pub fn inputs(&self) -> AuditInputs {
        let mut inputs = AuditInputs::new(self.tenant.clone(), self.origin.clone());
        inputs.log_keys = vec![self.log_key.verifier_key()];
        if let Some(signer) = &self.signer {
            inputs.record_keys =
                vec![RecordKey { key_id: signer.key_id().to_owned(), public_key: signer.public_key() }];
        }
        inputs
    }

    pub fn saved(&self, label: &str, checkpoint: &SignedCheckpoint) -> Anchor {
        Anchor::saved(label, checkpoint.note().as_bytes(), &[self.log_key.verifier_key()], &self.origin).unwrap()
    }

    pub fn audit(&self, inputs: &AuditInputs) -> AuditReport {
        audit::audit(self.store.as_ref(), inputs).unwrap()
    }

    /// The log's seals as (run, leaf) without `run`, for a careful hider.
    pub fn seals_without(&self, run: &RunId) -> Vec<(RunId, Vec<u8>)> {
        self.store
            .seals(&self.tenant)
            .unwrap()
            .into_iter()
            .filter(|seal| seal.run != *run)
            .map(|seal| (seal.run, seal.leaf_bytes))
            .collect()
    }

    /// Submits the plane's current checkpoint to a witness.
    pub fn submit(&self, witness: &TestWitness) -> witness::CosignedCheckpoint {
        let view = LogView::open(self.store.as_ref(), &self.tenant).unwrap();
        witness.client.add_checkpoint(&self.checkpoint(), &view).unwrap()
    }
}

/// A witness server on 127.0.0.1 that watches the plane's log.
pub struct TestWitness {
    pub server: WitnessServer,
    pub client: HttpWitness,
    pub trusted: TrustedWitness,
    _dir: tempfile::TempDir,
}

impl TestWitness {
    pub fn start(plane: &Plane, name: &str, seed: u8) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let cosigner = Cosigner::new(SignerKey::from_seed(name, ALG_COSIGNATURE_V1, [seed; 32]).unwrap()).unwrap();
        let config = WitnessConfig {
            extra_cosigners: Vec::new(),
            cosigner: cosigner.clone(),
            logs: vec![LogConfig { origin: ORIGIN.into(), keys: vec![plane.log_key.verifier_key()] }],
            clock: Arc::new(SystemClock),
        };
        let server = WitnessServer::start(config, &dir.path().join("w.redb"), "127.0.0.1:0").unwrap();
        let trusted = TrustedWitness::new(cosigner.verifier_key()).unwrap();
        let client = HttpWitness::new(&server.url(), vec![trusted.clone()]).unwrap();
        Self { server, client, trusted, _dir: dir }
    }

    /// The anchor an auditor makes of this witness: its URL and its key.
    pub fn anchor(&self) -> Anchor {
        Anchor::witness(&self.server.url(), vec![self.trusted.clone()]).unwrap()
    }
}

pub fn codes(report: &AuditReport) -> Vec<FindingCode> {
    report.findings.iter().map(|finding| finding.code).collect()
}

/// The report is clean, and says it could not check deletion.
pub fn assert_clean_but_deletion_unchecked(report: &AuditReport) {
    assert!(report.is_clean(), "{:#?}", report.findings);
    assert!(
        report.not_checked.iter().any(|n| n.what.contains("deletion")),
        "not_checked names deletion: {:?}",
        report.not_checked
    );
    assert!(report.assert_complete().is_err(), "a skipped check is not complete");
}

pub mod http;
pub mod schema;
