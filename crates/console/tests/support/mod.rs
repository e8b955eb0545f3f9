//! A plane on a redb file with runs of every shape the console shows, and
//! the console serving it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use console::{Console, ConsoleOptions, PlaneView, TenantLog};
use journal_core::runtime::EffectOutput;
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, Ed25519Signer, Ed25519Verifier, EffectResult, Origin, RunId, Runtime,
    RuntimeBuilder, Signer, Store, TenantId,
};
use witness::{ALG_ED25519, LogKey, SignerKey};

pub const ORIGIN: &str = "console.test/plane/shop";
/// What a hostile agent puts in an effect result.
pub const HOSTILE: &str = r#"<script>document.title='owned'</script>"><img src=x onerror=alert(1)>"#;

pub struct Plane {
    pub dir: tempfile::TempDir,
    pub store: Arc<store_redb::RedbStore>,
    pub tenant: TenantId,
    pub origin: Origin,
    pub key: LogKey,
    pub runtime: Runtime,
    pub signer: Arc<Ed25519Signer>,
}

impl Plane {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(store_redb::RedbStore::create(&dir.path().join("plane.redb")).unwrap());
        let tenant = TenantId::new("shop").unwrap();
        let origin = Origin::new(ORIGIN).unwrap();
        let key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [9; 32]).unwrap()).unwrap();
        let signer = Arc::new(Ed25519Signer::from_seed("spiffe://console.test/agent", [4; 32]));
        let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
            .signer(Arc::clone(&signer) as Arc<dyn Signer>)
            .tenant(tenant.clone(), origin.clone(), Some(key.clone()))
            .build()
            .unwrap();
        Self { dir, store, tenant, origin, key, runtime, signer }
    }

    /// A run: one step, the given effects (key, output; `Err` for a failed
    /// effect), then succeeded, or failed when `fail`.
    pub fn run(&self, key: &str, effects: &[(&str, Result<&str, &str>)], fail: bool) -> RunId {
        let budget = Budget { tokens: Some(1_000), ..Budget::default() };
        let request = AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget };
        let Admission::New(mut run) = self.runtime.admit(&self.tenant, request).unwrap() else { panic!("a new run") };
        run.start_step("work").unwrap();
        for (effect, output) in effects {
            let result = match output {
                Ok(output) => EffectResult::Ok { output: (*output).to_owned() },
                Err(error) => EffectResult::Err { error: (*error).to_owned() },
            };
            let charged = Counters { tokens: 40, ..Counters::default() };
            if run.effect(effect, "work", || EffectOutput { result, charged }).is_err() {
                // A failed effect concludes the run (failed) by itself.
                return run.run().clone();
            }
        }
        let id = run.run().clone();
        if fail {
            run.fail("the agent gave up").unwrap();
        } else {
            run.finish_step("work").unwrap();
            run.succeed("plan complete").unwrap();
        }
        id
    }

    /// A run admitted under `key` with no ceiling, its one step (`work`) started.
    pub fn started(&self, key: &str) -> Box<journal_core::RunHandle<'_>> {
        let request =
            AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget: Budget::default() };
        let Admission::New(mut run) = self.runtime.admit(&self.tenant, request).unwrap() else { panic!("a new run") };
        run.start_step("work").unwrap();
        run
    }

    /// Signs the log's head (heads leaves first), as `agentplane checkpoint` does.
    pub fn checkpoint(&self) {
        journal_core::log::sign_current_head(self.store.as_ref(), &self.tenant, &self.origin, &self.key, None).unwrap();
    }

    pub fn view(&self) -> PlaneView {
        let mut verifier = Ed25519Verifier::new();
        verifier.trust(self.signer.key_id(), self.signer.public_key()).unwrap();
        PlaneView {
            store: Arc::clone(&self.store) as Arc<dyn Store>,
            tenants: vec![TenantLog { tenant: self.tenant.clone(), origin: self.origin.clone() }],
            record_verifier: Some(Arc::new(verifier)),
            log_keys: vec![self.key.verifier_key()],
            witnesses: Vec::new(),
            upcasters: journal_core::Upcasters::builtin(),
            folder: Some(self.dir.path().to_path_buf()),
        }
    }

    /// A console over `store` in the plane's place (a store that interleaves
    /// another process's writes with the page's reads), no token.
    pub fn console_over(&self, store: Arc<dyn Store>) -> Console {
        let mut view = self.view();
        view.store = store;
        let options = ConsoleOptions { listen: "127.0.0.1:0".parse().unwrap(), ..Default::default() };
        Console::start(view, options).unwrap()
    }

    pub fn console(&self, token: Option<&str>) -> Console {
        let options = ConsoleOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            token: token.map(str::to_owned),
            ..Default::default()
        };
        Console::start(self.view(), options).unwrap()
    }
}

/// The demo's shapes: a succeeded run, a failed one, one with a hostile result.
pub fn demo() -> (Plane, Vec<RunId>) {
    let plane = Plane::new();
    let ok = plane.run("job-ok", &[("ek:search", Ok("3 hits")), ("ek:summary", Ok("done"))], false);
    let failed = plane.run("job-failed", &[("ek:charge", Err("card declined"))], true);
    let hostile = plane.run("job-hostile", &[("ek:search", Ok(HOSTILE))], false);
    plane.checkpoint();
    (plane, vec![ok, failed, hostile])
}

pub fn get(url: &str) -> (u16, String) {
    let response = reqwest::blocking::get(url).unwrap();
    let status = response.status().as_u16();
    (status, response.text().unwrap())
}
