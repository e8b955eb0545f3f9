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

/// A runtime builder over `store` for `tenant` of [`ORIGIN`], signing with
/// `log_key`, asking every witness of `ws` with a quorum of `quorum`.
fn witnessed(
    store: &Arc<MemoryStore>,
    tenant: &TenantId,
    log_key: &LogKey,
    ws: &Witnesses,
    quorum: usize,
) -> RuntimeBuilder {
    RuntimeBuilder::new(Arc::clone(store) as Arc<dyn Store>)
        .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
        .witnesses(ws.clients.clone(), WitnessQuorum::of(quorum))
        .witness_keys(ws.keys.clone())
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
    let runtime = witnessed(&store, &tenant, &log_key, &ws, 2).build().unwrap();

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
    let runtime = witnessed(&store, &tenant, &log_key, &ws, 1).build().unwrap();
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

/// A witness client that, once, holds its answer back after the witness
/// cosigned: the round of the instance using it is slow to record, as a
/// process descheduled between the quorum and its write is.
struct HeldBack {
    inner: Arc<dyn Witness + Send + Sync>,
    cosigned: std::sync::Mutex<Option<std::sync::mpsc::Sender<()>>>,
    release: std::sync::Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl Witness for HeldBack {
    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }
    fn identities(&self) -> Vec<witness::WitnessIdentity> {
        self.inner.identities()
    }
    fn add_checkpoint(
        &self,
        signed: &witness::SignedCheckpoint,
        history: &dyn witness::LogHistory,
    ) -> Result<witness::CosignedCheckpoint, witness::WitnessError> {
        let answer = self.inner.add_checkpoint(signed, history);
        if let Some(cosigned) = self.cosigned.lock().unwrap().take() {
            cosigned.send(()).unwrap();
            let release = self.release.lock().unwrap().take().unwrap();
            release.recv().unwrap();
        }
        answer
    }
}

/// Review 2 (R-WIT-8, R-WIT-9): two instances of one plane sweep one log, and
/// the instance whose round met the bar first records it last (its quorum
/// came back before the other's round, its write after). Nothing was written
/// behind the plane's back, every note is a genuine cosigned checkpoint of one
/// history: the next sweep must not raise an integrity alarm, and the
/// cosigned rows must not read as "going backwards" (`checkpoint --cosigned`
/// holds them to the same rule).
#[test]
fn r_wit_8_an_older_round_recorded_after_a_newer_one_by_another_instance_raises_no_alarm() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    let url = ws.clients[0].endpoint().to_owned();
    let store = Arc::new(MemoryStore::new());
    let instance = |clients: Vec<Arc<dyn Witness + Send + Sync>>| {
        RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
            .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
            .witnesses(clients, WitnessQuorum::of(1))
            .witness_keys(ws.keys.clone())
            .build()
            .unwrap()
    };
    let (cosigned_tx, cosigned_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel();
    let held: Arc<dyn Witness + Send + Sync> = Arc::new(HeldBack {
        inner: Arc::clone(&ws.clients[0]),
        cosigned: std::sync::Mutex::new(Some(cosigned_tx)),
        release: std::sync::Mutex::new(Some(release_rx)),
    });
    let a = instance(vec![held]);
    let b = instance(vec![client_for(&url, 10, "sweep.test/w0")]);
    seal(&a, &tenant, "first");
    std::thread::scope(|scope| {
        let slow = scope.spawn(|| a.sweep(&tenant).unwrap());
        // The witness cosigned a's size 1; a has not recorded it yet.
        cosigned_rx.recv().unwrap();
        seal(&b, &tenant, "second");
        let report = b.sweep(&tenant).unwrap();
        assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "b: {report:?}");
        release_tx.send(()).unwrap();
        let report = slow.join().unwrap();
        assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "a: {report:?}");
    });
    let sizes: Vec<u64> = store.cosigned_checkpoints(&tenant).unwrap().iter().map(|row| row.tree.size).collect();
    seal(&b, &tenant, "third");
    let report = b.sweep(&tenant).unwrap();
    assert!(
        !report.integrity_refusal(),
        "a healthy plane whose two instances recorded their rounds out of order (rows of sizes {sizes:?}) \
         is refused as written behind its back: {report:?}"
    );
}

/// Review 2 (R-WIT-8, R-WIT-9): the operator replaces a witness (the old one
/// retired, its key dropped from the trust list). The rounds the old witness
/// cosigned are genuine and were met under the configuration of their day;
/// nothing was written behind the plane's back, so the next sweep must hold
/// its round with the new witness instead of refusing to sign for good.
#[test]
fn r_wit_9_a_witness_replaced_by_the_operator_is_no_integrity_alarm() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(2, &log_key);
    let store = Arc::new(MemoryStore::new());
    let with = |witness: usize| {
        RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
            .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
            .witnesses(vec![Arc::clone(&ws.clients[witness])], WitnessQuorum::of(1))
            .witness_keys(vec![ws.keys[witness].clone()])
            .build()
            .unwrap()
    };
    let before = with(0);
    seal(&before, &tenant, "a");
    assert!(matches!(before.sweep(&tenant).unwrap().outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })));
    let after = with(1);
    seal(&after, &tenant, "b");
    let report = after.sweep(&tenant).unwrap();
    assert!(!report.integrity_refusal(), "a witness replaced by the operator: {report:?}");
}

/// R-WIT-9, R-PLANE-2: the kept cosigned rows are held to one rule whatever
/// order they were recorded in: the latest round is the largest tree the
/// trusted quorum cosigned; a genuine row below today's quorum is set aside,
/// never an alarm; a row the plane did not sign, and two roots at one size
/// (a forked history, which a plane that never equivocates does not sign),
/// are alarms naming the rows.
#[test]
fn r_wit_9_kept_cosigned_rows_are_read_by_size_and_a_fork_is_an_alarm() {
    use journal_core::runtime::{CosignedRowsError, verify_cosigned_rows};
    use journal_core::store::SignedTree;
    let origin = journal_core::Origin::new(ORIGIN).unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let row = |size: u64, root: u8| {
        let tree = tlog::Tree::new(size, tlog::RootHash::from_hash_bytes([root; 32]));
        SignedTree {
            tree,
            note: journal_core::log::sign_checkpoint(&origin, tree, &log_key).unwrap().note().to_owned(),
        }
    };
    let verifier = log_key.verifier_key();
    let rows = [row(2, 2), row(5, 5), row(3, 3)];
    let newest = verify_cosigned_rows(&rows, &origin, &verifier, &[], 0).unwrap();
    assert_eq!(newest.map(|(index, tree)| (index, tree.size)), Some((1, 5)), "the largest, not the last");
    assert_eq!(verify_cosigned_rows(&rows, &origin, &verifier, &[], 1).unwrap(), None, "below the quorum: set aside");

    let forked = [row(2, 2), row(5, 5), row(5, 6)];
    assert_eq!(
        verify_cosigned_rows(&forked, &origin, &verifier, &[], 0),
        Err(CosignedRowsError::TwoRootsAtOneSize { first: 2, second: 3, size: 5 })
    );
    let mut forged = rows.clone();
    forged[2].note = "forged".into();
    assert!(matches!(
        verify_cosigned_rows(&forged, &origin, &verifier, &[], 0),
        Err(CosignedRowsError::DoesNotVerify { number: 3, size: 3, .. })
    ));
}

/// R-WIT-9 over a plane's life (issue 25's scale): the sweep remembers the
/// kept cosigned rows it verified, so a round verifies the rows added since,
/// not every row the plane kept (one a round, for months). What it trusts is
/// never a row it verified under other bytes or other keys: a remembered row
/// rewritten behind the plane (a forged note, another tree) is verified
/// again and is an alarm, and another quorum or witness list verifies every
/// row afresh.
#[test]
fn r_wit_9_remembered_cosigned_rows_are_verified_again_once_rewritten() {
    use journal_core::runtime::{CosignedRowsError, RememberedStandings, verify_cosigned_rows_remembering};
    use journal_core::store::SignedTree;
    let origin = journal_core::Origin::new(ORIGIN).unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let verifier = log_key.verifier_key();
    let row = |size: u64, root: u8| {
        let tree = tlog::Tree::new(size, tlog::RootHash::from_hash_bytes([root; 32]));
        SignedTree {
            tree,
            note: journal_core::log::sign_checkpoint(&origin, tree, &log_key).unwrap().note().to_owned(),
        }
    };
    let remembered = RememberedStandings::default();
    let mut rows = vec![row(2, 2), row(5, 5), row(3, 3)];
    let verify = |rows: &[SignedTree], quorum: usize| {
        verify_cosigned_rows_remembering(rows, &origin, &verifier, &[], quorum, &remembered)
    };
    assert_eq!(verify(&rows, 0).unwrap().map(|(_, tree)| tree.size), Some(5));
    assert_eq!(remembered.len(), 3, "each row verified is remembered");
    rows.push(row(7, 7));
    assert_eq!(verify(&rows, 0).unwrap().map(|(_, tree)| tree.size), Some(7), "a row added since is read");
    assert_eq!(remembered.len(), 4);

    // The largest row rewritten in place: its tree claims more, its note is the genuine one of size 7.
    let mut grown = rows.clone();
    grown[3].tree = tlog::Tree::new(9, grown[3].tree.root);
    assert!(
        matches!(verify(&grown, 0), Err(CosignedRowsError::DoesNotVerify { number: 4, size: 9, .. })),
        "a remembered row rewritten is verified again"
    );
    let mut forged = rows.clone();
    forged[1].note = "forged".into();
    assert!(matches!(verify(&forged, 0), Err(CosignedRowsError::DoesNotVerify { number: 2, size: 5, .. })));
    assert_eq!(remembered.len(), 4, "what did not verify is not remembered");

    // Another quorum: every row is held to it afresh (none is witnessed by 1 with no witness keys).
    assert_eq!(verify(&rows, 1).unwrap(), None);
    assert_eq!(verify(&rows, 0).unwrap().map(|(_, tree)| tree.size), Some(7));
}

/// R-WIT-9 on a plane of several tenants (review 37): one runtime sweeps
/// every tenant each round, each with its own origin and log key. The
/// memory was emptied whenever a call held its rows to other keys than the
/// call before, so with two tenants every round verified every row of both
/// afresh, as before the memory existed (`sweep --every` verified a row
/// once only on a plane of one tenant). Each tenant's rows are remembered
/// under its own keys, and a row verified under one tenant's keys is never
/// taken as verified under another's.
#[test]
fn r_wit_9_the_cosigned_rows_of_each_tenant_are_remembered_beside_the_others() {
    use journal_core::runtime::{CosignedRowsError, RememberedStandings, verify_cosigned_rows_remembering};
    use journal_core::store::SignedTree;
    let tenant = |origin: &str, seed: u8| {
        let log_key = LogKey::new(SignerKey::from_seed(origin, ALG_ED25519, [seed; 32]).unwrap()).unwrap();
        let origin = journal_core::Origin::new(origin).unwrap();
        let rows: Vec<SignedTree> = (1..=3u8)
            .map(|size| {
                let tree = tlog::Tree::new(u64::from(size), tlog::RootHash::from_hash_bytes([size; 32]));
                let note = journal_core::log::sign_checkpoint(&origin, tree, &log_key).unwrap().note().to_owned();
                SignedTree { tree, note }
            })
            .collect();
        (origin, log_key.verifier_key(), rows)
    };
    let (shop, shop_key, shop_rows) = tenant("sweep.test/shop", 1);
    let (bank, bank_key, bank_rows) = tenant("sweep.test/bank", 2);
    let remembered = RememberedStandings::default();
    let verify =
        |rows: &[SignedTree], origin, key| verify_cosigned_rows_remembering(rows, origin, key, &[], 0, &remembered);
    for round in 0..3 {
        assert_eq!(verify(&shop_rows, &shop, &shop_key).unwrap().map(|(_, tree)| tree.size), Some(3));
        assert_eq!(verify(&bank_rows, &bank, &bank_key).unwrap().map(|(_, tree)| tree.size), Some(3));
        assert_eq!(remembered.len(), 6, "round {round}: both tenants' rows are remembered, none verified again");
    }
    // The shop's rows held to the bank's origin and key: verified, and refused.
    assert!(matches!(verify(&shop_rows, &bank, &bank_key), Err(CosignedRowsError::DoesNotVerify { number: 1, .. })));
    assert!(matches!(verify(&shop_rows, &shop, &bank_key), Err(CosignedRowsError::DoesNotVerify { number: 1, .. })));
    assert_eq!(remembered.len(), 6);
}

/// A witness that answers what it holds: the note given.
struct Holds(String);

impl journal_core::runtime::WitnessProbe for Holds {
    fn endpoint(&self) -> &str {
        "holds"
    }
    fn latest(&self, _: &journal_core::Origin) -> Result<Option<String>, witness::WitnessError> {
        Ok(Some(self.0.clone()))
    }
}

/// The plane's store, as someone writing its database sees it: the log is
/// replaced by `fork` (another history, with no record of what the plane
/// signed) from the second time heads are appended on, that is after the
/// sweep asked the witnesses what they hold and before it signs. The count
/// is of the heads appended.
fn rewritten_after_the_ask(
    honest: Arc<dyn Store>,
    fork: Arc<dyn Store>,
) -> (journal_core::testkit_faults::RoutedStore, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let heads_appended = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&heads_appended);
    let store = journal_core::testkit_faults::RoutedStore::new(Box::new(move |call| {
        if call == journal_core::testkit_faults::StoreCall::AppendHeads {
            count.fetch_add(1, Ordering::SeqCst);
        }
        if count.load(Ordering::SeqCst) >= 2 { Arc::clone(&fork) } else { Arc::clone(&honest) }
    }));
    (store, heads_appended)
}

/// R-PLANE-2 / R-WIT-6, the window between asking the witnesses and
/// signing: a plane process whose mark is behind what the witnesses
/// cosigned (a second process of the plane on the shared store, with its
/// own mark; or a mark put back from a backup) asks them what they hold,
/// finds the log extends it, and signs. The log is rewritten in between
/// (whoever writes the database): what the witnesses hold must still bind
/// the signature. Before, it bound only the view asked about, and the plane
/// signed a tree of another history under the origin, sent to the witnesses.
#[test]
fn r_plane_2_what_the_witnesses_hold_binds_the_signature_not_only_the_view_asked_about() {
    let tenant = TenantId::new("t").unwrap();
    let origin = journal_core::Origin::new(ORIGIN).unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    let honest = Arc::new(MemoryStore::new());
    let first = RuntimeBuilder::new(Arc::clone(&honest) as Arc<dyn Store>)
        .tenant(tenant.clone(), origin.clone(), Some(log_key.clone()))
        .witnesses(ws.clients.clone(), WitnessQuorum::of(1))
        .witness_keys(ws.keys.clone())
        .high_water(Arc::new(journal_core::testkit::MemoryHighWater::default()))
        .build()
        .unwrap();
    for key in ["a", "b", "c"] {
        seal(&first, &tenant, key);
    }
    let report = first.sweep(&tenant).unwrap();
    assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "{report:?}");
    let witnessed = report.tree;
    seal(&first, &tenant, "d");

    let fork = Arc::new(MemoryStore::new());
    let fork_runtime = RuntimeBuilder::new(Arc::clone(&fork) as Arc<dyn Store>)
        .tenant(tenant.clone(), origin.clone(), Some(log_key.clone()))
        .build()
        .unwrap();
    for key in ["x", "y"] {
        seal(&fork_runtime, &tenant, key);
    }
    let mark = Arc::new(journal_core::testkit::MemoryHighWater::default());
    let (store, heads_appended) =
        rewritten_after_the_ask(Arc::clone(&honest) as Arc<dyn Store>, Arc::clone(&fork) as Arc<dyn Store>);
    let store = Arc::new(store);
    let second = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), origin.clone(), Some(log_key.clone()))
        .witnesses(ws.clients.clone(), WitnessQuorum::of(1))
        .witness_keys(ws.keys.clone())
        .witness_probes(vec![Arc::new(Holds(
            journal_core::log::sign_checkpoint(&origin, witnessed, &log_key).unwrap().note().to_owned(),
        ))])
        .high_water(Arc::clone(&mark) as Arc<dyn journal_core::log::HighWater>)
        .build()
        .unwrap();
    let report = second.sweep(&tenant).unwrap();
    assert!(
        heads_appended.load(std::sync::atomic::Ordering::SeqCst) >= 2,
        "the log was rewritten before the signature"
    );
    assert!(
        fork.signed_checkpoints(&tenant).unwrap().is_empty(),
        "the plane signed a tree that does not extend size {} a witness cosigned: {report:?}",
        witnessed.size
    );
    assert!(matches!(&report.outcome, SweepOutcome::RefusedToSign { .. }), "{report:?}");
    let fork_head = journal_core::LogView::open(fork.as_ref(), &tenant).unwrap().head().unwrap().tree;
    assert_ne!(
        journal_core::log::HighWater::last(mark.as_ref(), &origin).unwrap(),
        journal_core::log::HighWaterMark::Signed(fork_head)
    );
}

/// What a witness holds, read from it over HTTP as the CLI's probe does;
/// the first time it is asked, `first` runs just before (another process of
/// the plane signing and having the witness cosign a larger tree).
struct ReadsTheWitness {
    reader: witness::WitnessReader,
    log_key: witness::VerifierKey,
    first: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl journal_core::runtime::WitnessProbe for ReadsTheWitness {
    fn endpoint(&self) -> &str {
        self.reader.endpoint()
    }
    fn latest(&self, origin: &journal_core::Origin) -> Result<Option<String>, witness::WitnessError> {
        if let Some(first) = self.first.lock().unwrap().take() {
            first();
        }
        match self.reader.latest_signed_note(origin.as_str(), std::slice::from_ref(&self.log_key)) {
            Ok((note, _)) => Ok(Some(note)),
            Err(witness::WitnessError::NothingCosigned { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }
}

/// R-WIT-8, R-WIT-9, R-PLANE-2 on a busy plane: two processes of one plane
/// (one store, one high-water mark, one witness) sweep. Process A opens its
/// view of the log; before it asks the witness what it holds, process B
/// seals a run, signs the larger log and has the witness cosign it. The
/// witness then holds a tree larger than A's view, which the log extends:
/// nothing is older than anything, and A must not refuse to sign nor raise
/// an integrity alarm. (On main: `RefusedToSign`, "a store older than what
/// the witnesses cosigned is in place".)
#[test]
fn r_wit_9_a_witness_ahead_of_the_view_because_another_process_swept_is_no_alarm() {
    let tenant = TenantId::new("t").unwrap();
    let origin = journal_core::Origin::new(ORIGIN).unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    let url = ws.clients[0].endpoint().to_owned();
    let store = Arc::new(MemoryStore::new());
    let mark = Arc::new(journal_core::testkit::MemoryHighWater::default());
    let instance = |probes: Vec<Arc<dyn journal_core::runtime::WitnessProbe>>| {
        RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
            .tenant(tenant.clone(), origin.clone(), Some(log_key.clone()))
            .witnesses(ws.clients.clone(), WitnessQuorum::of(1))
            .witness_keys(ws.keys.clone())
            .witness_probes(probes)
            .high_water(Arc::clone(&mark) as Arc<dyn journal_core::log::HighWater>)
            .build()
            .unwrap()
    };
    let probe = |first: Option<Box<dyn FnOnce() + Send>>| -> Arc<dyn journal_core::runtime::WitnessProbe> {
        Arc::new(ReadsTheWitness {
            reader: witness::WitnessReader::new(&url, ws.keys.clone()).unwrap(),
            log_key: log_key.verifier_key(),
            first: std::sync::Mutex::new(first),
        })
    };
    let b: &'static Runtime = Box::leak(Box::new(instance(vec![probe(None)])));
    seal(b, &tenant, "first");
    let report = b.sweep(&tenant).unwrap();
    assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "{report:?}");

    let b_tenant = tenant.clone();
    let b_swept = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&b_swept);
    let a = instance(vec![probe(Some(Box::new(move || {
        seal(b, &b_tenant, "meanwhile");
        let report = b.sweep(&b_tenant).unwrap();
        assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "b: {report:?}");
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    })))]);
    seal(&a, &tenant, "a's own");
    let report = a.sweep(&tenant).unwrap();
    assert!(b_swept.load(std::sync::atomic::Ordering::SeqCst), "b swept between a's view and a's ask");
    assert!(!report.needs_attention(), "a healthy plane raised an alarm: {report:?}");
    assert!(
        matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. }) | SweepOutcome::Skipped { .. }),
        "{report:?}"
    );
}

/// R-WIT-9 on a busy plane, the sweep's own two reads: process A opens its
/// view of the log, then reads the rounds the store kept; process B sealed
/// a run and recorded a met round of the larger log in between. A round
/// larger than A's view is B's, of this very log: never "its history was
/// rewritten". (On main: `RefusedToSign`, an integrity alarm.)
#[test]
fn r_wit_9_a_round_recorded_by_another_process_after_the_view_is_no_alarm() {
    use journal_core::testkit_faults::{RoutedStore, StoreCall};
    let tenant = TenantId::new("t").unwrap();
    let origin = journal_core::Origin::new(ORIGIN).unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    let inner = Arc::new(MemoryStore::new());
    let mark = Arc::new(journal_core::testkit::MemoryHighWater::default());
    let instance = |store: Arc<dyn Store>| {
        RuntimeBuilder::new(store)
            .tenant(tenant.clone(), origin.clone(), Some(log_key.clone()))
            .witnesses(ws.clients.clone(), WitnessQuorum::of(1))
            .witness_keys(ws.keys.clone())
            .high_water(Arc::clone(&mark) as Arc<dyn journal_core::log::HighWater>)
            .build()
            .unwrap()
    };
    let b: &'static Runtime = Box::leak(Box::new(instance(Arc::clone(&inner) as Arc<dyn Store>)));
    seal(b, &tenant, "first");
    let report = b.sweep(&tenant).unwrap();
    assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "{report:?}");

    // A's store: B seals and sweeps between A's view (its counters) and A's
    // read of the rounds, in whichever order A makes them.
    let sweeping = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let first_read: Arc<std::sync::Mutex<Option<StoreCall>>> = Arc::default();
    let b_swept = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let store: Arc<dyn Store> = {
        let (inner, sweeping, b_swept, first_read, tenant) =
            (Arc::clone(&inner), Arc::clone(&sweeping), Arc::clone(&b_swept), Arc::clone(&first_read), tenant.clone());
        Arc::new(RoutedStore::new(Box::new(move |call| {
            use std::sync::atomic::Ordering::SeqCst;
            let read = matches!(call, StoreCall::LogCounters | StoreCall::CosignedCheckpoints);
            if read && sweeping.load(SeqCst) && !b_swept.load(SeqCst) {
                let mut first = first_read.lock().unwrap();
                match *first {
                    None => *first = Some(call),
                    Some(seen) if seen != call => {
                        b_swept.store(true, SeqCst);
                        seal(b, &tenant, "meanwhile");
                        let report = b.sweep(&tenant).unwrap();
                        assert!(
                            matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })),
                            "b: {report:?}"
                        );
                    }
                    Some(_) => {}
                }
            }
            Arc::clone(&inner) as Arc<dyn Store>
        })))
    };
    let a = instance(store);
    seal(&a, &tenant, "a's own");
    sweeping.store(true, std::sync::atomic::Ordering::SeqCst);
    let report = a.sweep(&tenant).unwrap();
    assert!(b_swept.load(std::sync::atomic::Ordering::SeqCst), "b swept between a's view and a's read of the rounds");
    assert!(!report.needs_attention(), "a healthy plane raised an alarm: {report:?}");
}

/// A store that is `honest` until the plane first records a signature
/// through it: then `meanwhile` runs (another process gets the witness
/// further, the fork parts), that record still goes to `honest`, and every
/// later call goes to `fork`. The flag says whether it parted.
fn parts_at_the_first_signature(
    honest: &Arc<MemoryStore>,
    fork: &Arc<MemoryStore>,
    meanwhile: impl Fn() + Send + Sync + 'static,
) -> (Arc<dyn Store>, Arc<std::sync::atomic::AtomicBool>) {
    parts_at_the_first(journal_core::testkit_faults::StoreCall::RecordSignedCheckpoint, honest, fork, meanwhile)
}

/// [`parts_at_the_first_signature`], parting at the first call `at` instead.
fn parts_at_the_first(
    at: journal_core::testkit_faults::StoreCall,
    honest: &Arc<MemoryStore>,
    fork: &Arc<MemoryStore>,
    meanwhile: impl Fn() + Send + Sync + 'static,
) -> (Arc<dyn Store>, Arc<std::sync::atomic::AtomicBool>) {
    use journal_core::testkit_faults::RoutedStore;
    use std::sync::atomic::Ordering::SeqCst;
    let parted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (honest, fork, flag) = (Arc::clone(honest), Arc::clone(fork), Arc::clone(&parted));
    let store = RoutedStore::new(Box::new(move |call| {
        if call == at && !flag.load(SeqCst) {
            meanwhile();
            flag.store(true, SeqCst);
            return Arc::clone(&honest) as Arc<dyn Store>;
        }
        if flag.load(SeqCst) { Arc::clone(&fork) as Arc<dyn Store> } else { Arc::clone(&honest) as Arc<dyn Store> }
    }));
    (Arc::new(store), parted)
}

/// Process A of the plane on `store`: its own witness client (it last saw
/// the witness at nothing), a probe reading the witness over HTTP, and a
/// mark of its own.
fn asking_process(store: Arc<dyn Store>, ws: &Witnesses, log_key: &LogKey, tenant: &TenantId) -> Runtime {
    asking_process_whose_probe_answers(store, ws, log_key, tenant, usize::MAX)
}

/// [`asking_process`] whose probe answers `answers` times, then fails as an
/// unreachable witness does.
fn asking_process_whose_probe_answers(
    store: Arc<dyn Store>,
    ws: &Witnesses,
    log_key: &LogKey,
    tenant: &TenantId,
    answers: usize,
) -> Runtime {
    let url = ws.clients[0].endpoint().to_owned();
    let client: Arc<dyn Witness + Send + Sync> = Arc::new(HttpWitness::new(&url, ws.keys.clone()).unwrap());
    RuntimeBuilder::new(store)
        .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
        .witnesses(vec![client], WitnessQuorum::of(1))
        .witness_keys(ws.keys.clone())
        .witness_probes(vec![Arc::new(AnswersSoManyTimes {
            probe: ReadsTheWitness {
                reader: witness::WitnessReader::new(&url, ws.keys.clone()).unwrap(),
                log_key: log_key.verifier_key(),
                first: std::sync::Mutex::new(None),
            },
            left: std::sync::atomic::AtomicUsize::new(answers),
        })])
        .high_water(Arc::new(journal_core::testkit::MemoryHighWater::default()))
        .build()
        .unwrap()
}

/// A probe that answers `left` more times, then is unreachable.
struct AnswersSoManyTimes {
    probe: ReadsTheWitness,
    left: std::sync::atomic::AtomicUsize,
}

impl journal_core::runtime::WitnessProbe for AnswersSoManyTimes {
    fn endpoint(&self) -> &str {
        self.probe.endpoint()
    }
    fn latest(&self, origin: &journal_core::Origin) -> Result<Option<String>, witness::WitnessError> {
        use std::sync::atomic::Ordering::SeqCst;
        if self.left.fetch_update(SeqCst, SeqCst, |left| left.checked_sub(1)).is_err() {
            return Err(witness::WitnessError::Unavailable {
                witness: self.endpoint().to_owned(),
                status: 503,
                said: String::new(),
            });
        }
        self.probe.latest(origin)
    }
}

/// A runtime writing `store` with a clock that reads the same in every
/// runtime made here: two of them write the same records (lockstep).
fn lockstep_writer(
    store: &Arc<MemoryStore>,
    ws: Option<&Witnesses>,
    log_key: &LogKey,
    tenant: &TenantId,
) -> &'static Runtime {
    let start = journal_core::At::from_unix_millis(1_780_000_000_000).unwrap();
    let builder = RuntimeBuilder::new(Arc::clone(store) as Arc<dyn Store>)
        .clock(Arc::new(journal_core::SteppingClock::new(start, 10)))
        .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
        .high_water(Arc::new(journal_core::testkit::MemoryHighWater::default()));
    let builder = match ws {
        Some(ws) => builder.witnesses(ws.clients.clone(), WitnessQuorum::of(1)).witness_keys(ws.keys.clone()),
        None => builder,
    };
    Box::leak(Box::new(builder.build().unwrap()))
}

/// The sweep refused, and the plane never signed `fork`'s head, which is of
/// the size the witness cosigned (`witnessed`) with another root.
fn assert_the_fork_was_not_signed(
    fork: &MemoryStore,
    witnessed: tlog::Tree,
    tenant: &TenantId,
    report: &journal_core::SweepReport,
) {
    assert_the_fork_is_unsigned(fork, witnessed, tenant, report);
    assert!(matches!(&report.outcome, SweepOutcome::RefusedToSign { .. }), "{report:?}");
}

/// `fork`'s head is of the size the witness cosigned (`witnessed`) with
/// another root, and the plane never signed it.
fn assert_the_fork_is_unsigned(
    fork: &MemoryStore,
    witnessed: tlog::Tree,
    tenant: &TenantId,
    report: &journal_core::SweepReport,
) {
    let fork_tree = journal_core::LogView::open(fork, tenant).unwrap().head().unwrap().tree;
    assert_eq!(fork_tree.size, witnessed.size, "the fork is of the size the witness cosigned");
    assert_ne!(fork_tree.root, witnessed.root);
    assert!(
        fork.signed_checkpoints(tenant).unwrap().iter().all(|signed| signed.tree != fork_tree),
        "the plane signed a tree that does not extend what the witness cosigned: {report:?}"
    );
}

/// R-PLANE-2, R-WIT-8 (a signature tried again): process A signs its log;
/// before it records that signature, process B, on the same store but with a
/// mark of its own (restored from a backup, or a second folder), seals a run
/// and has the witness cosign the larger tree, so A's signature conflicts
/// with B's and A signs afresh. Meanwhile whoever writes the database puts
/// another history of that size in place: one that extends everything A
/// itself signed, but not what the witness cosigned. A must ask the witness
/// again before the second signature, and refuse: its key never signs a tree
/// that does not extend what a witness holds. Before, it signed the fork and
/// sent it (the witness refused it as a fork).
#[test]
fn r_plane_2_a_signature_tried_again_is_held_to_what_the_witnesses_hold_then() {
    b_sweeps_and_the_store_forks_at(
        journal_core::testkit_faults::StoreCall::RecordSignedCheckpoint,
        "B swept while A's first round was under way",
    );
}

/// R-PLANE-2, R-WIT-8 (a stale answer): process A signs its log, records it,
/// and submits it; before it does, process B, on a copy of the store with the
/// plane's key (a second folder), has the witness cosign a larger tree of
/// the same history, so the witness answers A "stale, sign afresh". Before A
/// signs afresh, whoever writes the database puts another history of that
/// size in place, extending all A signed but not what the witness cosigned.
/// A must ask the witness again before signing afresh, and refuse. Before,
/// the second round signed the fork and sent it.
#[test]
fn r_plane_2_a_stale_answer_is_asked_again_before_the_plane_signs_afresh() {
    let (report, fork, witnessed, tenant) = a_stale_answer_and_a_fork(usize::MAX);
    assert_the_fork_was_not_signed(&fork, witnessed, &tenant, &report);
}

/// R-PLANE-2, R-WIT-8: the stale answer of the test above, and the witness
/// then cannot be asked what it holds (unreachable, hostile, or serving no
/// monitor endpoint). A new signature could not be held to what it answered
/// stale about: the plane does not sign afresh, and the first round's
/// answer stands (a shortfall, reported; no integrity alarm). Before, the
/// unanswered ask passed and the plane signed the fork.
#[test]
fn r_plane_2_a_stale_witness_that_cannot_be_asked_again_is_not_signed_past() {
    let (report, fork, witnessed, tenant) = a_stale_answer_and_a_fork(1);
    assert_the_fork_is_unsigned(&fork, witnessed, &tenant, &report);
    assert!(
        matches!(&report.outcome, SweepOutcome::Round(QuorumOutcome::Shortfall { .. })),
        "the first round's answer stands: {report:?}"
    );
}

/// Process A sweeps; its witness answers stale (see
/// [`r_plane_2_a_stale_answer_is_asked_again_before_the_plane_signs_afresh`])
/// and the store is a fork from then on. A's probe answers `answers` times.
fn a_stale_answer_and_a_fork(answers: usize) -> (journal_core::SweepReport, Arc<MemoryStore>, tlog::Tree, TenantId) {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    // Three stores written in lockstep: A's, B's copy, and a fork that parts
    // at the third run.
    let (honest, copy, fork) =
        (Arc::new(MemoryStore::new()), Arc::new(MemoryStore::new()), Arc::new(MemoryStore::new()));
    let plane = lockstep_writer(&honest, None, &log_key, &tenant);
    let b = lockstep_writer(&copy, Some(&ws), &log_key, &tenant);
    let forger = lockstep_writer(&fork, None, &log_key, &tenant);
    for key in ["first", "a's own"] {
        let run = seal(b, &tenant, key);
        assert_eq!(seal(plane, &tenant, key), run);
        assert_eq!(seal(forger, &tenant, key), run);
        if key == "first" {
            let report = b.sweep(&tenant).unwrap();
            assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "{report:?}");
        }
    }
    let b_tenant = tenant.clone();
    let (store, parted) = parts_at_the_first_signature(&honest, &fork, move || {
        // A has signed its view: B, on its copy, seals the run the plane
        // seals too and has the witness cosign the larger log; the fork
        // parts there.
        assert_eq!(seal(b, &b_tenant, "next"), seal(plane, &b_tenant, "next"));
        seal(forger, &b_tenant, "next, forged");
        let report = b.sweep(&b_tenant).unwrap();
        assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "b: {report:?}");
    });
    let report = asking_process_whose_probe_answers(store, &ws, &log_key, &tenant, answers).sweep(&tenant).unwrap();
    assert!(parted.load(std::sync::atomic::Ordering::SeqCst), "B swept while A's first round was under way");
    let witnessed = journal_core::LogView::open(copy.as_ref(), &tenant).unwrap().head().unwrap().tree;
    (report, fork, witnessed, tenant)
}

/// R-PLANE-2, R-WIT-8 (a check tried again before the first signature):
/// process A asked the witness, then checks its view before it appends
/// the heads leaves; while it reads the store's record of the last
/// signature, process B (same store, a mark of its own) seals a run and has
/// the witness cosign the larger tree, so A's check finds its view stale and
/// starts over on a fresh one: another signer got further. Meanwhile
/// whoever writes the database puts another history of that size in place,
/// extending all A signed but not what the witness cosigned. The signature
/// that follows is the first A tries, but it comes after a fresh view that
/// another signer's progress forced: the witness must be asked again before
/// it, as after any view signing starts over on. (On main: the plane signed
/// the fork and sent it; the witness refused it as a fork.)
#[test]
fn r_plane_2_a_check_started_over_before_the_first_signature_is_held_to_what_the_witnesses_hold_then() {
    b_sweeps_and_the_store_forks_at(
        journal_core::testkit_faults::StoreCall::LastSignedCheckpoint,
        "B swept while A checked its view",
    );
}

/// The two tests above: B (the same store, a mark of its own) seals a run
/// and has the witness cosign the larger log when A first makes the store
/// call `at`; whoever writes the database puts a fork of that size in place
/// from then on. A's sweep must not sign the fork.
fn b_sweeps_and_the_store_forks_at(at: journal_core::testkit_faults::StoreCall, parted_when: &str) {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    // The honest store and a fork written in lockstep with it until they part.
    let (honest, fork) = (Arc::new(MemoryStore::new()), Arc::new(MemoryStore::new()));
    let (b, forger) =
        (lockstep_writer(&honest, Some(&ws), &log_key, &tenant), lockstep_writer(&fork, None, &log_key, &tenant));
    assert_eq!(seal(b, &tenant, "first"), seal(forger, &tenant, "first"));
    let report = b.sweep(&tenant).unwrap();
    assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "{report:?}");
    assert_eq!(seal(b, &tenant, "a's own"), seal(forger, &tenant, "a's own"));
    let b_tenant = tenant.clone();
    let (store, parted) = parts_at_the_first(at, &honest, &fork, move || {
        // B seals another run and has the witness cosign the larger log
        // first; the fork parts there.
        seal(b, &b_tenant, "b's next");
        seal(forger, &b_tenant, "b's next, forged");
        let report = b.sweep(&b_tenant).unwrap();
        assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "b: {report:?}");
    });
    let report = asking_process(store, &ws, &log_key, &tenant).sweep(&tenant).unwrap();
    assert!(parted.load(std::sync::atomic::Ordering::SeqCst), "{parted_when}");
    let witnessed = journal_core::LogView::open(honest.as_ref(), &tenant).unwrap().head().unwrap().tree;
    assert_the_fork_was_not_signed(&fork, witnessed, &tenant, &report);
}

/// The size of the tenant's log as the store holds it.
fn log_size(store: &dyn Store, tenant: &TenantId) -> u64 {
    journal_core::LogView::open(store, tenant).unwrap().head().unwrap().tree.size
}

/// R-WIT-9 (mutation review 96): a log rewritten to the size a quorum
/// cosigned is refused naming what the quorum cosigned and what the log
/// holds now, both roots, so the operator can tell which history is which.
#[test]
fn r_wit_9_a_log_rewritten_to_the_cosigned_size_is_refused_naming_both_roots() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    let store = Arc::new(MemoryStore::new());
    let runtime = witnessed(&store, &tenant, &log_key, &ws, 1).build().unwrap();
    seal(&runtime, &tenant, "a");
    let newest = seal(&runtime, &tenant, "b");
    let cosigned = runtime.sweep(&tenant).unwrap().tree;
    store.delete_run(&tenant, &newest);
    store.rewind_log(&tenant, 1);
    seal(&runtime, &tenant, "c");
    let report = runtime.sweep(&tenant).unwrap();
    assert_eq!(report.tree.size, cosigned.size);
    let SweepOutcome::RefusedToSign { reason } = &report.outcome else { panic!("not refused: {report:?}") };
    assert!(
        reason.contains(&format!(
            "with root {}; a quorum cosigned size {} with root {}",
            report.tree.root, cosigned.size, cosigned.root
        )),
        "{reason}"
    );
}

/// R-WIT-9, R-PLANE-2 (mutation review 96): a log rewritten and grown past
/// what a quorum cosigned does not extend it; the sweep refuses to sign it
/// even when the witnesses no longer hold that checkpoint (a witness whose
/// state was lost cosigns whatever it is sent first): the store's cosigned
/// rows are the plane's own memory of what was witnessed.
#[test]
fn r_wit_9_a_log_grown_past_a_rewrite_of_what_a_quorum_cosigned_is_refused_when_the_witness_forgot() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    let store = Arc::new(MemoryStore::new());
    let runtime = witnessed(&store, &tenant, &log_key, &ws, 1).build().unwrap();
    seal(&runtime, &tenant, "a");
    let newest = seal(&runtime, &tenant, "b");
    let cosigned = runtime.sweep(&tenant).unwrap().tree;
    store.delete_run(&tenant, &newest);
    store.rewind_log(&tenant, 1);
    for key in ["c", "d", "e"] {
        seal(&runtime, &tenant, key);
    }
    // The same witness (its key), its state lost: it holds nothing.
    let dir = tempfile::tempdir().unwrap();
    let cosigner = Cosigner::new(SignerKey::from_seed("sweep.test/w0", ALG_COSIGNATURE_V1, [10; 32]).unwrap()).unwrap();
    let config = WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner,
        logs: vec![LogConfig { origin: ORIGIN.into(), keys: vec![log_key.verifier_key()] }],
        clock: Arc::new(SystemClock),
    };
    let forgot = WitnessServer::start(config, &dir.path().join("w.redb"), "127.0.0.1:0").unwrap();
    let after = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
        .witnesses(vec![client_for(&forgot.url(), 10, "sweep.test/w0")], WitnessQuorum::of(1))
        .witness_keys(ws.keys.clone())
        .build()
        .unwrap();
    let report = after.sweep(&tenant).unwrap();
    assert!(report.tree.size > cosigned.size);
    assert!(
        matches!(&report.outcome, SweepOutcome::RefusedToSign { reason }
            if reason.contains(&format!("does not extend the checkpoint of {} a quorum cosigned", cosigned.size))),
        "a rewritten history was signed and sent: {report:?}"
    );
    assert_eq!(store.cosigned_checkpoints(&tenant).unwrap().len(), 1, "nothing more recorded as cosigned");
}

/// A witness that refuses every checkpoint as inconsistent with what it
/// holds (an integrity refusal: its word alone).
struct RefusesAsInconsistent;

impl Witness for RefusesAsInconsistent {
    fn endpoint(&self) -> &str {
        "refuses.test"
    }
    fn identities(&self) -> Vec<witness::WitnessIdentity> {
        Vec::new()
    }
    fn add_checkpoint(
        &self,
        signed: &witness::SignedCheckpoint,
        _: &dyn witness::LogHistory,
    ) -> Result<witness::CosignedCheckpoint, witness::WitnessError> {
        Err(witness::WitnessError::Inconsistent {
            witness: self.endpoint().to_owned(),
            old_size: 0,
            new_size: signed.checkpoint().tree().size,
        })
    }
}

/// R-WIT-1, R-WIT-9 (mutation review 96): a round with fewer cosignatures
/// than the quorum, short or beside an integrity refusal, records no
/// cosigned checkpoint: a row the store keeps as cosigned is one a quorum
/// agreed to, whatever reads set aside later.
#[test]
fn r_wit_9_a_round_short_of_the_quorum_records_no_cosigned_checkpoint() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(2, &log_key);
    let nobody =
        TrustedWitness::new(SignerKey::from_seed("x.test/w", ALG_COSIGNATURE_V1, [9; 32]).unwrap().verifier_key())
            .unwrap();
    let dead: Arc<dyn Witness + Send + Sync> =
        Arc::new(HttpWitness::new("http://127.0.0.1:9", vec![nobody.clone()]).unwrap());
    let refuses: Arc<dyn Witness + Send + Sync> = Arc::new(RefusesAsInconsistent);
    // Each case on its own store and witness: one log, one history per witness.
    let cases = [(0, dead, "a shortfall"), (1, refuses, "an integrity refusal short of the quorum")];
    for (witness, second, what) in cases {
        let store = Arc::new(MemoryStore::new());
        let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
            .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
            .witnesses(vec![Arc::clone(&ws.clients[witness]), second], WitnessQuorum::of(2))
            .witness_keys(vec![ws.keys[witness].clone(), nobody.clone()])
            .build()
            .unwrap();
        seal(&runtime, &tenant, &format!("{what} a"));
        let report = runtime.sweep(&tenant).unwrap();
        match &report.outcome {
            SweepOutcome::Round(QuorumOutcome::Shortfall { got: 1, needed: 2, .. }) => {}
            SweepOutcome::Round(QuorumOutcome::IntegrityRefusal { got: 1, quorum_met: false, .. }) => {}
            other => panic!("{what}: {other:?}"),
        }
        assert!(report.needs_attention(), "{what}");
        assert_eq!(
            store.cosigned_checkpoints(&tenant).unwrap(),
            Vec::new(),
            "{what}: a checkpoint one witness cosigned was recorded as cosigned by the quorum"
        );
    }
}

/// A probe that counts how often it is asked; it holds nothing.
#[derive(Default)]
struct CountsAsks(std::sync::atomic::AtomicUsize);

impl journal_core::runtime::WitnessProbe for CountsAsks {
    fn endpoint(&self) -> &str {
        "counts"
    }
    fn latest(&self, _: &journal_core::Origin) -> Result<Option<String>, witness::WitnessError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(None)
    }
}

/// R-WIT-8, R-PLANE-2 (mutation review 96): a round is skipped when the log
/// has not grown since one met the bar, yet the witnesses are still asked
/// what they hold once they are due (a store put back is caught even on an
/// idle plane), and not before.
#[test]
fn r_wit_8_an_idle_log_skips_its_round_and_asks_the_witnesses_only_when_due() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(2, &log_key);
    for (witness, every, asked) in [(0, std::time::Duration::from_secs(3600), 1), (1, std::time::Duration::ZERO, 2)] {
        let probe = Arc::new(CountsAsks::default());
        let runtime = RuntimeBuilder::new(Arc::new(MemoryStore::new()))
            .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
            .witnesses(vec![Arc::clone(&ws.clients[witness])], WitnessQuorum::of(1))
            .witness_keys(vec![ws.keys[witness].clone()])
            .witness_probes(vec![Arc::clone(&probe) as Arc<dyn journal_core::runtime::WitnessProbe>])
            .probe_every(every)
            .build()
            .unwrap();
        seal(&runtime, &tenant, "a");
        let report = runtime.sweep(&tenant).unwrap();
        assert!(matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })), "{report:?}");
        assert_eq!(probe.0.load(std::sync::atomic::Ordering::SeqCst), 1, "asked before the first round");
        let report = runtime.sweep(&tenant).unwrap();
        assert_eq!(report.outcome, SweepOutcome::Skipped { size: 1 }, "no growth, no round");
        assert_eq!(
            probe.0.load(std::sync::atomic::Ordering::SeqCst),
            asked,
            "asking every {every:?}: asked {} times over two sweeps",
            asked
        );
    }
}

/// R-WIT-7, R-WIT-8 (mutation review 96): a round cosigned by one witness
/// stands below a quorum raised to two since: the next sweep holds a round
/// for the new quorum rather than skipping as if it were witnessed.
#[test]
fn r_wit_8_a_round_below_a_quorum_raised_since_is_held_again_not_skipped() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(2, &log_key);
    let store = Arc::new(MemoryStore::new());
    let with = |witnesses: usize| {
        RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
            .tenant(tenant.clone(), journal_core::Origin::new(ORIGIN).unwrap(), Some(log_key.clone()))
            .witnesses(ws.clients[..witnesses].to_vec(), WitnessQuorum::of(witnesses))
            .witness_keys(ws.keys.clone())
            .build()
            .unwrap()
    };
    let one = with(1);
    seal(&one, &tenant, "a");
    assert!(matches!(one.sweep(&tenant).unwrap().outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })));
    let two = with(2);
    let report = two.sweep(&tenant).unwrap();
    assert!(
        matches!(&report.outcome, SweepOutcome::Round(QuorumOutcome::Met { cosigned, .. }) if cosigned.len() == 2),
        "a checkpoint one witness cosigned was taken as witnessed by a quorum of two: {report:?}"
    );
    assert_eq!(two.sweep(&tenant).unwrap().outcome, SweepOutcome::Skipped { size: report.tree.size });
}

/// R-WIT-8, R-WIT-9 (mutation review 96): a plane given no witness keys
/// checks no cosignature, so no stored row counts as witnessed: a row
/// written into the store holding only the plane's signed note of the head
/// (what `agentplane checkpoint` hands out) does not stop the round that
/// shows it to the witnesses.
#[test]
fn r_wit_8_without_witness_keys_no_stored_row_skips_a_round() {
    let tenant = TenantId::new("t").unwrap();
    let origin = journal_core::Origin::new(ORIGIN).unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    let store = Arc::new(MemoryStore::new());
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), origin.clone(), Some(log_key.clone()))
        .witnesses(ws.clients.clone(), WitnessQuorum::of(1))
        .build()
        .unwrap();
    seal(&runtime, &tenant, "a");
    let (_, signed) = journal_core::log::sign_current_head(store.as_ref(), &tenant, &origin, &log_key, None).unwrap();
    let tree = signed.checkpoint().tree();
    store
        .record_cosigned_checkpoint(&tenant, journal_core::store::SignedTree { tree, note: signed.note().to_owned() })
        .unwrap();
    let report = runtime.sweep(&tenant).unwrap();
    assert!(
        matches!(report.outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })),
        "a row no witness cosigned skipped the round: {report:?}"
    );
}

/// R-WIT-9, R-AUD-10 (mutation review 96): a standing remembered under one
/// trust list is never reused under another: a witness's key replaced
/// (same name, same quorum), the rows only the old key cosigned stand below
/// the quorum.
#[test]
fn r_wit_9_a_remembered_standing_is_not_reused_after_a_witness_key_is_replaced() {
    use journal_core::runtime::{RememberedStandings, verify_cosigned_rows_remembering};
    let tenant = TenantId::new("t").unwrap();
    let origin = journal_core::Origin::new(ORIGIN).unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    let store = Arc::new(MemoryStore::new());
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), origin.clone(), Some(log_key.clone()))
        .witnesses(ws.clients.clone(), WitnessQuorum::of(1))
        .witness_keys(ws.keys.clone())
        .build()
        .unwrap();
    seal(&runtime, &tenant, "a");
    assert!(matches!(runtime.sweep(&tenant).unwrap().outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })));
    let rows = store.cosigned_checkpoints(&tenant).unwrap();
    let replaced = TrustedWitness::new(
        SignerKey::from_seed("sweep.test/w0", ALG_COSIGNATURE_V1, [99; 32]).unwrap().verifier_key(),
    )
    .unwrap();
    let verifier = log_key.verifier_key();
    let remembered = RememberedStandings::default();
    let verify = |keys: &[TrustedWitness]| {
        verify_cosigned_rows_remembering(&rows, &origin, &verifier, keys, 1, &remembered).unwrap()
    };
    assert_eq!(verify(&ws.keys).map(|(_, tree)| tree), Some(rows[0].tree), "witnessed under the old key");
    assert_eq!(
        verify(std::slice::from_ref(&replaced)),
        None,
        "the old key's cosignature counted after it was replaced"
    );
}

/// R-PLANE-1 (mutation review 96): a sweep for a tenant whose origin was
/// changed in the configuration is refused before its heads leaf is
/// appended: a leaf under the new origin would be a leaf of another log in
/// this one.
#[test]
fn r_plane_1_a_sweep_under_another_origin_appends_nothing() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    let store = Arc::new(MemoryStore::new());
    let under = |origin: &str| {
        let log_key = LogKey::new(SignerKey::from_seed(origin, ALG_ED25519, [1; 32]).unwrap()).unwrap();
        RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
            .tenant(tenant.clone(), journal_core::Origin::new(origin).unwrap(), Some(log_key))
            .witnesses(ws.clients.clone(), WitnessQuorum::of(1))
            .witness_keys(ws.keys.clone())
            .build()
            .unwrap()
    };
    let before = under(ORIGIN);
    seal(&before, &tenant, "a");
    // A run still open: the next sweep has a heads leaf to append.
    let request = AdmitRequest { idempotency_key: "open".into(), plan: vec![], budget: Budget::default() };
    assert!(matches!(before.admit(&tenant, request).unwrap(), Admission::New(_)));
    let size = log_size(store.as_ref(), &tenant);
    let report = under("sweep.test/renamed").sweep(&tenant).unwrap();
    assert!(
        matches!(&report.outcome, SweepOutcome::RefusedToSign { reason } if reason.contains("another origin")),
        "{report:?}"
    );
    assert_eq!(log_size(store.as_ref(), &tenant), size, "a heads leaf of another origin was appended to the log");
}

/// R-PLANE-2 (mutation review 96): a store put back from before the plane's
/// last signature is refused by the sweep before its heads leaf is appended:
/// appended, the leaf forked the signed log before the refusal came.
#[test]
fn r_plane_2_a_sweep_of_a_store_older_than_the_mark_appends_nothing() {
    let tenant = TenantId::new("t").unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let ws = witnesses(1, &log_key);
    let store = Arc::new(MemoryStore::new());
    let runtime = witnessed(&store, &tenant, &log_key, &ws, 1)
        .high_water(Arc::new(journal_core::testkit::MemoryHighWater::default()))
        .build()
        .unwrap();
    seal(&runtime, &tenant, "a");
    let request = AdmitRequest { idempotency_key: "open".into(), plan: vec![], budget: Budget::default() };
    assert!(matches!(runtime.admit(&tenant, request).unwrap(), Admission::New(_)));
    let newest = seal(&runtime, &tenant, "b");
    assert!(matches!(runtime.sweep(&tenant).unwrap().outcome, SweepOutcome::Round(QuorumOutcome::Met { .. })));
    // Put back from before the signature: the newest run and the leaves
    // after the first are gone; the open run is still open.
    let first = store.seals_in(&tenant, 0..1).unwrap().remove(0);
    store.delete_run(&tenant, &newest);
    store.rewrite_log(&tenant, &[(first.run, first.leaf_bytes)]);
    assert_eq!(log_size(store.as_ref(), &tenant), 1);
    let report = runtime.sweep(&tenant).unwrap();
    assert!(matches!(&report.outcome, SweepOutcome::RefusedToSign { .. }), "{report:?}");
    assert_eq!(log_size(store.as_ref(), &tenant), 1, "a heads leaf was appended to a store older than the mark");
}
