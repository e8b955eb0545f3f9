//! Issue 22 in journal-core: one origin per tenant in `RuntimeBuilder`, and
//! `sign_head` held to a high-water mark kept outside the store (R-LOG-2,
//! R-WIT-6).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::log::{HighWater as _, sign_current_head};
use journal_core::{
    Admission, AdmitRequest, Budget, BuildError, JournalError, MemoryStore, Origin, RuntimeBuilder, Store, TenantId,
};
use witness::{ALG_ED25519, LogKey, SignerKey};

const ORIGIN: &str = "highwater.test/plane";

type Mark = journal_core::testkit::MemoryHighWater;

fn log_key() -> LogKey {
    LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [3; 32]).unwrap()).unwrap()
}

#[test]
fn two_tenants_with_one_origin_are_refused() {
    let origin = Origin::new(ORIGIN).unwrap();
    let built = RuntimeBuilder::new(Arc::new(MemoryStore::new()))
        .tenant(TenantId::new("shop").unwrap(), origin.clone(), Some(log_key()))
        .tenant(TenantId::new("shpo").unwrap(), origin, Some(log_key()))
        .build();
    assert!(
        matches!(built, Err(BuildError::DuplicateOrigin { ref first, ref second, .. }) if first == "shop" && second == "shpo")
    );
}

fn seal(store: &Arc<MemoryStore>, key: &str) {
    let runtime = RuntimeBuilder::new(Arc::clone(store) as Arc<dyn Store>)
        .tenant(TenantId::new("t").unwrap(), Origin::new(ORIGIN).unwrap(), Some(log_key()))
        .build()
        .unwrap();
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec![], budget: Budget::default() };
    let Admission::New(run) = runtime.admit(&TenantId::new("t").unwrap(), request).unwrap() else { panic!("new") };
    run.succeed("done").unwrap();
}

fn open_run(store: &Arc<MemoryStore>, key: &str) {
    let runtime = RuntimeBuilder::new(Arc::clone(store) as Arc<dyn Store>)
        .tenant(TenantId::new("t").unwrap(), Origin::new(ORIGIN).unwrap(), Some(log_key()))
        .build()
        .unwrap();
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec![], budget: Budget::default() };
    let Admission::New(_run) = runtime.admit(&TenantId::new("t").unwrap(), request).unwrap() else { panic!("new") };
}

/// A store put back (a fresh store standing for an older backup: its own
/// record of what the plane signed is gone too) is refused by the mark kept
/// outside it, with the integrity message; the store alone would sign it.
#[test]
fn r_log_2_sign_head_refuses_a_store_older_than_the_high_water_mark() {
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let mark = Mark::default();
    let newer = Arc::new(MemoryStore::new());
    for key in ["a", "b", "c"] {
        seal(&newer, key);
    }
    sign_current_head(newer.as_ref(), &tenant, &origin, &log_key(), Some(&mark)).unwrap();
    let older = Arc::new(MemoryStore::new());
    seal(&older, "a");
    open_run(&older, "still-open");
    let positions_before = older.log_counters(&tenant).unwrap().next_position;
    let refused = sign_current_head(older.as_ref(), &tenant, &origin, &log_key(), Some(&mark));
    assert!(
        matches!(&refused, Err(JournalError::WouldSignRollback { reason, .. })
            if reason.contains("a store older than the plane's last signature is in place")),
        "{refused:?}"
    );
    assert!(older.signed_checkpoints(&tenant).unwrap().is_empty(), "nothing was signed");
    assert_eq!(
        older.log_counters(&tenant).unwrap().next_position,
        positions_before,
        "a refused store gets no heads leaf for its open run either: nothing is written before the refusal"
    );
    assert!(sign_current_head(older.as_ref(), &tenant, &origin, &log_key(), None).is_ok(), "the store alone would");

    // A lost mark refuses until the witnesses were asked.
    let lost = Mark::lost("gone");
    let refused = sign_current_head(newer.as_ref(), &tenant, &origin, &log_key(), Some(&lost));
    assert!(matches!(&refused, Err(JournalError::WouldSignRollback { reason, .. }) if reason.contains("is lost")));
}

/// The mark as two processes of one plane share it, where the other one
/// signs its own store between this one's check of the mark and its raise:
/// the moment the check-then-sign race lives in.
struct OtherProcessSignsMeanwhile<'a> {
    mark: &'a Mark,
    other: std::sync::Mutex<Option<Box<dyn FnOnce() + Send + 'a>>>,
}

impl journal_core::log::HighWater for OtherProcessSignsMeanwhile<'_> {
    fn last(
        &self,
        origin: &witness::Origin,
    ) -> Result<journal_core::log::HighWaterMark, journal_core::log::HighWaterError> {
        self.mark.last(origin)
    }

    fn raise(
        &self,
        origin: &witness::Origin,
        seen: &journal_core::log::HighWaterMark,
        tree: tlog::Tree,
    ) -> Result<journal_core::log::Raised, journal_core::log::HighWaterError> {
        if let Some(other) = self.other.lock().unwrap().take() {
            other();
        }
        self.mark.raise(origin, seen, tree)
    }

    fn location(&self) -> String {
        self.mark.location()
    }
}

/// R-LOG-2, the plane that never equivocates: a process on a restored copy
/// of the store and the plane share one key and one mark. Both check the
/// mark before either raised it; the plane signs first. The copy's tree does
/// not extend what the plane signed, so its raise finds the mark moved, and
/// on a fresh look it refuses: one history under the origin, never two.
/// (Before, the raise kept the larger mark in silence and the copy signed.)
#[test]
fn r_log_2_two_processes_checking_the_mark_at_once_never_both_sign() {
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let mark = Mark::default();
    let plane = Arc::new(MemoryStore::new());
    seal(&plane, "a");
    sign_current_head(plane.as_ref(), &tenant, &origin, &log_key(), Some(&mark)).unwrap();
    // The restored copy: the same first run, then a history of its own.
    let copy = Arc::new(MemoryStore::new());
    seal(&copy, "a");
    seal(&copy, "fork");
    seal(&plane, "b");
    seal(&plane, "c");
    let racing = OtherProcessSignsMeanwhile {
        mark: &mark,
        other: std::sync::Mutex::new(Some(Box::new(|| {
            sign_current_head(plane.as_ref(), &tenant, &origin, &log_key(), Some(&mark)).unwrap();
        }))),
    };
    let refused = sign_current_head(copy.as_ref(), &tenant, &origin, &log_key(), Some(&racing));
    assert!(
        matches!(&refused, Err(JournalError::WouldSignRollback { reason, .. })
            if reason.contains("a store older than the plane's last signature is in place")),
        "{refused:?}"
    );
    assert!(copy.signed_checkpoints(&tenant).unwrap().is_empty(), "the copy signed nothing");
    let plane_signed = plane.signed_checkpoints(&tenant).unwrap();
    assert_eq!(
        mark.last(&origin).unwrap(),
        journal_core::log::HighWaterMark::Signed(plane_signed.last().unwrap().tree),
        "the mark is the plane's last signature"
    );
}

/// A store whose stored node hashes are rewritten (here: served from
/// `forged`, a log of another history of the same size) the moment the
/// plane has finished checking its head against the seal rows: what someone
/// writing the database (PostgreSQL, shared with the plane) can do between
/// the check and the signature.
struct NodesRewrittenAfterCheck {
    inner: Arc<dyn Store>,
    forged: Arc<dyn Store>,
    checked: std::sync::atomic::AtomicBool,
}

impl NodesRewrittenAfterCheck {
    fn nodes(&self) -> &dyn Store {
        if self.checked.load(std::sync::atomic::Ordering::SeqCst) { self.forged.as_ref() } else { self.inner.as_ref() }
    }
}

impl Store for NodesRewrittenAfterCheck {
    fn append(&self, request: journal_core::AppendRequest) -> Result<Option<u64>, JournalError> {
        self.inner.append(request)
    }
    fn read_run(&self, tenant: &TenantId, run: &journal_core::RunId) -> Result<journal_core::RunRows, JournalError> {
        self.inner.read_run(tenant, run)
    }
    fn runs(
        &self,
        tenant: &TenantId,
        outcome: Option<journal_core::Outcome>,
    ) -> Result<Vec<journal_core::RunId>, JournalError> {
        self.inner.runs(tenant, outcome)
    }
    fn admissions(
        &self,
        tenant: &TenantId,
        before: Option<&journal_core::AdmittedRun>,
        outcome: Option<journal_core::Outcome>,
        limit: usize,
    ) -> Result<Vec<journal_core::AdmittedRun>, JournalError> {
        self.inner.admissions(tenant, before, outcome, limit)
    }
    fn run_by_idempotency_key(
        &self,
        tenant: &TenantId,
        key: &str,
    ) -> Result<Option<journal_core::RunId>, JournalError> {
        self.inner.run_by_idempotency_key(tenant, key)
    }
    fn tenants(&self) -> Result<Vec<TenantId>, JournalError> {
        self.inner.tenants()
    }
    fn seals(&self, tenant: &TenantId) -> Result<Vec<journal_core::SealEntry>, JournalError> {
        self.inner.seals(tenant)
    }
    fn seal_of(
        &self,
        tenant: &TenantId,
        run: &journal_core::RunId,
    ) -> Result<Option<journal_core::SealEntry>, JournalError> {
        self.inner.seal_of(tenant, run)
    }
    fn seals_in(
        &self,
        tenant: &TenantId,
        positions: std::ops::Range<u64>,
    ) -> Result<Vec<journal_core::SealEntry>, JournalError> {
        // The last read of the plane's checks: its head was held to these rows.
        let rows = self.inner.seals_in(tenant, positions);
        self.checked.store(true, std::sync::atomic::Ordering::SeqCst);
        rows
    }
    fn log_counters(&self, tenant: &TenantId) -> Result<journal_core::LogCounters, JournalError> {
        self.inner.log_counters(tenant)
    }
    fn read_log_nodes(&self, tenant: &TenantId, ids: &[tlog::NodeId]) -> Result<Vec<tlog::NodeHash>, JournalError> {
        self.nodes().read_log_nodes(tenant, ids)
    }
    fn signed_checkpoints(&self, tenant: &TenantId) -> Result<Vec<journal_core::store::SignedTree>, JournalError> {
        self.inner.signed_checkpoints(tenant)
    }
    fn record_signed_checkpoint(
        &self,
        tenant: &TenantId,
        expected_last: Option<tlog::Tree>,
        signed: journal_core::store::SignedTree,
    ) -> Result<(), JournalError> {
        self.inner.record_signed_checkpoint(tenant, expected_last, signed)
    }
    fn cosigned_checkpoints(&self, tenant: &TenantId) -> Result<Vec<journal_core::store::SignedTree>, JournalError> {
        self.inner.cosigned_checkpoints(tenant)
    }
    fn record_cosigned_checkpoint(
        &self,
        tenant: &TenantId,
        cosigned: journal_core::store::SignedTree,
    ) -> Result<(), JournalError> {
        self.inner.record_cosigned_checkpoint(tenant, cosigned)
    }
    fn append_heads(&self, tenant: &TenantId, origin: &Origin) -> Result<Vec<u64>, JournalError> {
        self.inner.append_heads(tenant, origin)
    }
    fn heads_entries(
        &self,
        tenant: &TenantId,
        position: u64,
    ) -> Result<Vec<journal_core::heads::HeadEntry>, JournalError> {
        self.inner.heads_entries(tenant, position)
    }
    fn snapshot(&self, tenant: &TenantId) -> Result<journal_core::TenantSnapshot, JournalError> {
        self.inner.snapshot(tenant)
    }
}

/// R-LOG-2 / R-PLANE-2, the check-then-sign window: the plane holds its
/// head to the mark and to the seal rows, then signs. The tree it signs must
/// be the tree it checked; read again from the stored nodes after the
/// checks, a node rewritten in between was signed as it was: a root of
/// another history at the mark's size, a fork under the origin, and the mark
/// raised to it. (Before, `sign_head` read its head a second time.)
#[test]
fn r_plane_2_the_tree_signed_is_the_tree_checked_not_one_read_after_the_checks() {
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let mark = Mark::default();
    let plane = Arc::new(MemoryStore::new());
    seal(&plane, "a");
    seal(&plane, "b");
    sign_current_head(plane.as_ref(), &tenant, &origin, &log_key(), Some(&mark)).unwrap();
    seal(&plane, "c");
    let honest = journal_core::LogView::open(plane.as_ref(), &tenant).unwrap().head().unwrap().tree;
    // Another history of the same size: what the rewritten nodes give.
    let forged = Arc::new(MemoryStore::new());
    for key in ["x", "y", "z"] {
        seal(&forged, key);
    }
    let forged_head = journal_core::LogView::open(forged.as_ref(), &tenant).unwrap().head().unwrap().tree;
    assert_eq!(forged_head.size, honest.size);
    assert_ne!(forged_head.root, honest.root);
    let store = NodesRewrittenAfterCheck {
        inner: Arc::clone(&plane) as Arc<dyn Store>,
        forged: forged as Arc<dyn Store>,
        checked: std::sync::atomic::AtomicBool::new(false),
    };
    let view = journal_core::LogView::open(&store, &tenant).unwrap();
    let signed = journal_core::log::sign_head(&store, &view, &origin, &log_key(), Some(&mark));
    assert!(store.checked.load(std::sync::atomic::Ordering::SeqCst), "the nodes were rewritten after the checks");
    if let Ok(signed) = &signed {
        assert_eq!(
            signed.checkpoint().tree(),
            honest,
            "the plane signed a tree it never checked: another root at size {}",
            honest.size
        );
    }
    assert_ne!(
        mark.last(&origin).unwrap(),
        journal_core::log::HighWaterMark::Signed(forged_head),
        "the mark was raised to a tree the plane never checked"
    );
}
