//! Issue 22 in journal-core: one origin per tenant in `RuntimeBuilder`, and
//! `sign_head` held to a high-water mark kept outside the store (R-LOG-2,
//! R-WIT-6).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::log::{HighWater as _, sign_current_head};
use journal_core::testkit_faults::{RoutedStore, StoreCall};
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

/// R-STORE-4, R-LOG-2 (review 69): tenant `shop` given the log key of
/// tenant `bank` (its name `bank`'s origin) was built, and every checkpoint
/// of `shop`'s log went out signed with `bank`'s key: a note of one log
/// under another log's key, which `shop`'s auditors refuse as unsigned and
/// `bank`'s key vouches for. Each tenant's log key must be named by its own
/// origin, as every verifier of the log finds its key by that name.
#[test]
fn r_store_4_a_tenant_given_another_tenants_log_key_is_refused() {
    let (shop, bank) = (Origin::new("plane.test/shop").unwrap(), Origin::new("plane.test/bank").unwrap());
    let key = |origin: &Origin, seed: u8| {
        LogKey::new(SignerKey::from_seed(origin.as_str(), ALG_ED25519, [seed; 32]).unwrap()).unwrap()
    };
    let built = RuntimeBuilder::new(Arc::new(MemoryStore::new()))
        .tenant(TenantId::new("shop").unwrap(), shop.clone(), Some(key(&bank, 4)))
        .tenant(TenantId::new("bank").unwrap(), bank.clone(), Some(key(&bank, 4)))
        .build();
    assert!(
        matches!(&built, Err(BuildError::LogKeyOfAnotherOrigin { tenant, origin, key })
            if tenant == "shop" && origin == shop.as_str() && key == bank.as_str()),
        "{:?}",
        built.as_ref().err()
    );
    // Each tenant with its own key is built.
    RuntimeBuilder::new(Arc::new(MemoryStore::new()))
        .tenant(TenantId::new("shop").unwrap(), shop.clone(), Some(key(&shop, 5)))
        .tenant(TenantId::new("bank").unwrap(), bank.clone(), Some(key(&bank, 4)))
        .build()
        .unwrap();
}

/// Runs `runs` to success on `store`, tenant `t` of [`ORIGIN`], timed by
/// `clock` when one is given.
fn succeed_runs(store: &MemoryStore, clock: Option<&journal_core::SteppingClock>, runs: &[&str]) {
    let (tenant, origin) = (TenantId::new("t").unwrap(), Origin::new(ORIGIN).unwrap());
    let journal = journal_core::Journal::new(store, &tenant, &origin);
    let journal = match clock {
        Some(clock) => journal.timed_by(clock),
        None => journal,
    };
    for run in runs {
        let run = journal_core::RunId::new(run).unwrap();
        journal_core::testkit::sample_run(&journal, &run, journal_core::Outcome::Succeeded).unwrap();
    }
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
/// plane has finished checking its head against the seal rows (its last
/// read, `seals_in`): what someone writing the database (PostgreSQL, shared
/// with the plane) can do between the check and the signature. The flag
/// says the rewrite happened.
fn nodes_rewritten_after_check(
    inner: Arc<dyn Store>,
    forged: Arc<dyn Store>,
) -> (RoutedStore, Arc<std::sync::atomic::AtomicBool>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let checked = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&checked);
    let store = RoutedStore::new(Box::new(move |call| match call {
        StoreCall::SealsIn => {
            seen.store(true, Ordering::SeqCst);
            Arc::clone(&inner)
        }
        StoreCall::ReadLogNodes if seen.load(Ordering::SeqCst) => Arc::clone(&forged),
        _ => Arc::clone(&inner),
    }));
    (store, checked)
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
    let (store, checked) = nodes_rewritten_after_check(Arc::clone(&plane) as Arc<dyn Store>, forged);
    let view = journal_core::LogView::open(&store, &tenant).unwrap();
    let signed = journal_core::log::sign_head(&store, &view, &origin, &log_key(), Some(&mark));
    assert!(checked.load(std::sync::atomic::Ordering::SeqCst), "the nodes were rewritten after the checks");
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

/// A witness that answers what it holds: the note given.
struct Holds(String);

impl Holds {
    /// A witness holding `tree` of `origin` as the plane's log key signed it.
    fn signed(origin: &Origin, tree: tlog::Tree) -> Self {
        Self(journal_core::log::sign_checkpoint(origin, tree, &log_key()).unwrap().note().to_owned())
    }
}

impl journal_core::runtime::WitnessProbe for Holds {
    fn endpoint(&self) -> &str {
        "holds"
    }
    fn latest(&self, _: &Origin) -> Result<Option<String>, witness::WitnessError> {
        Ok(Some(self.0.clone()))
    }
}

/// R-PLANE-2 (review 46): a plane process whose mark is behind what a
/// witness cosigned (another process of the plane signed it, with its own
/// mark) asks the witness and raises its mark to the witness's tree, which
/// binds the signature that follows. The proof that the witness's tree
/// extends the mark is read from the store: when that read failed (a
/// connection dropped) or gave nodes that do not prove it (whoever writes
/// the database), the mark was left where it was and the ask answered as if
/// all were well; the log put in place before the signature (another
/// history, extending the mark but not the witness's tree) was signed and
/// would be sent. Such a read is the store's failure or a refusal, and
/// nothing is signed.
#[test]
fn r_plane_2_a_witness_tree_not_proven_to_extend_the_mark_is_never_left_unbound() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let honest = Arc::new(MemoryStore::new());
    let fork = Arc::new(MemoryStore::new());
    // One history of two runs, written alike to both stores.
    for store in [&honest, &fork] {
        let clock = journal_core::SteppingClock::new(journal_core::At::from_unix_millis(1_700_000_000_000).unwrap(), 1);
        succeed_runs(store, Some(&clock), &["run-0", "run-1"]);
    }
    let mark = Mark::default();
    let (_, signed) = sign_current_head(honest.as_ref(), &tenant, &origin, &log_key(), Some(&mark)).unwrap();
    let marked = signed.checkpoint().tree();
    let fork_at_mark = journal_core::LogView::open(fork.as_ref(), &tenant).unwrap().head().unwrap().tree;
    assert_eq!(fork_at_mark, marked, "the fork shares the history the plane signed");
    // Another process of the plane signs one more run, and a witness cosigns it.
    succeed_runs(&honest, None, &["run-2"]);
    let (_, cosigned) =
        sign_current_head(honest.as_ref(), &tenant, &origin, &log_key(), Some(&Mark::default())).unwrap();
    let cosigned = cosigned.checkpoint().tree();
    // The fork grows otherwise: it extends the mark, not the witness's tree.
    succeed_runs(&fork, None, &["run-x", "run-y"]);

    // The second read of log nodes while the witness is asked is the proof
    // from the mark to the witness's tree: answered from a store without
    // them. Once asked, the log is the fork.
    let (reads, asked) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let store = {
        let (honest, fork, reads, asked) =
            (Arc::clone(&honest), Arc::clone(&fork), Arc::clone(&reads), Arc::clone(&asked));
        let nowhere: Arc<dyn Store> = Arc::new(MemoryStore::new());
        RoutedStore::new(Box::new(move |call| {
            if asked.load(Ordering::SeqCst) {
                return Arc::clone(&fork) as Arc<dyn Store>;
            }
            if call == StoreCall::ReadLogNodes && reads.fetch_add(1, Ordering::SeqCst) == 1 {
                return Arc::clone(&nowhere);
            }
            Arc::clone(&honest) as Arc<dyn Store>
        }))
    };
    let answer = asked_then_not_signed(&store, &tenant, &origin, cosigned, &mark, || {
        assert!(reads.load(Ordering::SeqCst) >= 2, "the proof from the mark was read");
        asked.store(true, Ordering::SeqCst);
    });
    assert!(
        matches!(&answer, Err(JournalError::WouldSignRollback { reason, .. }) if reason.contains("holds size")),
        "{answer:?}"
    );
}

/// A mark another process of the plane raises to `between` just before this
/// one raises it (a `checkpoint` beside the sweep, each signing).
struct RaisedMeanwhile {
    mark: Mark,
    between: std::sync::Mutex<Option<tlog::Tree>>,
}

impl journal_core::log::HighWater for RaisedMeanwhile {
    fn last(&self, origin: &Origin) -> Result<journal_core::log::HighWaterMark, journal_core::log::HighWaterError> {
        self.mark.last(origin)
    }
    fn raise(
        &self,
        origin: &Origin,
        seen: &journal_core::log::HighWaterMark,
        tree: tlog::Tree,
    ) -> Result<journal_core::log::Raised, journal_core::log::HighWaterError> {
        if let Some(between) = self.between.lock().unwrap().take() {
            let now = self.mark.last(origin)?;
            self.mark.raise(origin, &now, between)?;
        }
        self.mark.raise(origin, seen, tree)
    }
    fn location(&self) -> String {
        "memory".into()
    }
}

/// R-PLANE-2 (review 46): a plane process whose mark is behind what a
/// witness cosigned asks the witness, and its raise of the mark to the
/// witness's tree finds that another process of the plane raised the mark
/// meanwhile, to a smaller tree. The ask ended there ("checked by the
/// signing itself"): the signing was held to the other process's tree
/// only, and the log put in place before it (another history, extending
/// that tree but not the witness's) was signed. The witness's tree is
/// raised over what the mark says now, and binds the signature.
#[test]
fn r_plane_2_a_mark_moved_while_the_witness_tree_is_raised_still_binds_it() {
    use std::sync::atomic::{AtomicBool, Ordering};

    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let honest = Arc::new(MemoryStore::new());
    let fork = Arc::new(MemoryStore::new());
    let start = journal_core::At::from_unix_millis(1_700_000_000_000).unwrap();
    let clocks = [journal_core::SteppingClock::new(start, 1), journal_core::SteppingClock::new(start, 1)];
    let sample = |store: &Arc<MemoryStore>, clock: &journal_core::SteppingClock, run: &str| {
        succeed_runs(store, Some(clock), &[run]);
    };
    // One history of three runs, written alike to both stores; this process
    // signed it at two.
    let mark = Mark::default();
    for (store, clock) in [(&honest, &clocks[0]), (&fork, &clocks[1])] {
        sample(store, clock, "run-0");
        sample(store, clock, "run-1");
    }
    sign_current_head(honest.as_ref(), &tenant, &origin, &log_key(), Some(&mark)).unwrap();
    for (store, clock) in [(&honest, &clocks[0]), (&fork, &clocks[1])] {
        sample(store, clock, "run-2");
    }
    let between = journal_core::LogView::open(honest.as_ref(), &tenant).unwrap().head().unwrap().tree;
    assert_eq!(journal_core::LogView::open(fork.as_ref(), &tenant).unwrap().head().unwrap().tree, between);
    // Another process signs one more run, and a witness cosigns it; the fork grows otherwise.
    sample(&honest, &clocks[0], "run-3");
    let (_, cosigned) =
        sign_current_head(honest.as_ref(), &tenant, &origin, &log_key(), Some(&Mark::default())).unwrap();
    let cosigned = cosigned.checkpoint().tree();
    sample(&fork, &clocks[1], "run-x");

    let plane = RaisedMeanwhile { mark, between: std::sync::Mutex::new(Some(between)) };
    let asked = Arc::new(AtomicBool::new(false));
    let store = {
        let (honest, fork, asked) = (Arc::clone(&honest), Arc::clone(&fork), Arc::clone(&asked));
        RoutedStore::new(Box::new(move |_| {
            if asked.load(Ordering::SeqCst) {
                Arc::clone(&fork) as Arc<dyn Store>
            } else {
                Arc::clone(&honest) as Arc<dyn Store>
            }
        }))
    };
    let answer = asked_then_not_signed(&store, &tenant, &origin, cosigned, &plane, || {
        asked.store(true, Ordering::SeqCst);
    });
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(plane.last(&origin).unwrap(), journal_core::log::HighWaterMark::Signed(cosigned));
}

/// What the CLI does, held to never signing: asks one witness holding
/// `cosigned` what it holds (with `mark`), then (after `once_asked`) signs
/// only if the ask passed. Asserts nothing was signed; the ask's answer.
fn asked_then_not_signed(
    store: &dyn Store,
    tenant: &TenantId,
    origin: &Origin,
    cosigned: tlog::Tree,
    mark: &dyn journal_core::log::HighWater,
    once_asked: impl FnOnce(),
) -> Result<(), JournalError> {
    let view = journal_core::LogView::open(store, tenant).unwrap();
    let probes: Vec<Arc<dyn journal_core::runtime::WitnessProbe>> = vec![Arc::new(Holds::signed(origin, cosigned))];
    let log = log_key().verifier_key();
    let answer = journal_core::runtime::ask_witnesses(&view, (origin, &log), &probes, Some(mark)).map(drop);
    drop(view);
    once_asked();
    let signed = match &answer {
        Ok(()) => sign_current_head(store, tenant, origin, &log_key(), Some(mark)).map(|(_, signed)| signed),
        Err(err) => Err(JournalError::InvalidRecord(format!("not signed: {err}"))),
    };
    assert!(
        signed.is_err(),
        "the plane signed {:?}, another history than size {} a witness cosigned",
        signed.map(|signed| signed.checkpoint().tree()),
        cosigned.size
    );
    answer
}

/// R-RUN-5, issue 25 (review 48's cost of review 47's fix): under one signed
/// tree a catch-up of the covered heads reads on from the leaf where the last
/// one stopped. Read again from the signed tree at every catch-up, every
/// admission and resume read every leaf appended since the plane last signed
/// (all of them on a plane that never signed: 14 ms to 47 ms an admission
/// over 3,000 runs). Once the plane signs a new tree, the leaves past the old
/// one are read again (review 47's attack: a leaf read before the signature
/// must never stand in for the one signed).
#[test]
fn r_run_5_leaves_past_the_signed_tree_are_read_once_while_the_plane_signs_nothing_new() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let store = Arc::new(MemoryStore::new());
    succeed_runs(&store, None, &["run-0", "run-1", "run-2", "run-3", "run-4", "run-5"]);
    let reads = Arc::new(AtomicUsize::new(0));
    let counted = {
        let (store, reads) = (Arc::clone(&store), Arc::clone(&reads));
        RoutedStore::new(Box::new(move |call| {
            if call == StoreCall::SealsIn {
                reads.fetch_add(1, Ordering::SeqCst);
            }
            Arc::clone(&store) as Arc<dyn Store>
        }))
    };
    let catch_up = |covered: &mut journal_core::heads::CoveredHeads, signed: tlog::Tree| {
        covered.catch_up(&counted, &tenant, &origin, Some(signed)).unwrap();
        reads.swap(0, Ordering::SeqCst)
    };
    // One leaf a read: six leaves and the read that finds no seventh.
    let mut covered = journal_core::heads::CoveredHeads::reading_at_most(1);
    let never = tlog::Tree::empty();
    assert_eq!(catch_up(&mut covered, never), 7);
    assert_eq!(catch_up(&mut covered, never), 1, "read on from the seventh position");
    // The plane signs four of them: the leaves past the old tree are read again.
    let mut four = tlog::Frontier::new();
    for leaf in store.seals_in(&tenant, 0..4).unwrap() {
        four.append(leaf.leaf_hash()).unwrap();
    }
    let signed = tlog::Tree::new(4, four.root());
    assert_eq!(catch_up(&mut covered, signed), 7);
    assert_eq!(catch_up(&mut covered, signed), 1);
}

/// R-PLANE-2 (review 51): what a witness holds binds the plane only when
/// the plane's log key signed it. The probe trait answered a tree, taken on
/// the probe's word: a probe built on a witness's monitor endpoint without
/// the log key (an embedder's) passed on a size of 1,000,000 that the log
/// never reached, and every signing was refused as a rollback, for good, by
/// one witness. The probe now answers the note, which `ask_witnesses` holds
/// to the plane's log key: such a note is that witness's bad answer, and the
/// plane signs. The same tree under the plane's own key is still refused.
#[test]
fn r_plane_2_a_witness_tree_the_plane_never_signed_never_stops_it_signing() {
    let store = Arc::new(MemoryStore::new());
    seal(&store, "a");
    let (tenant, origin) = (TenantId::new("t").unwrap(), Origin::new(ORIGIN).unwrap());
    let root = journal_core::LogView::open(store.as_ref(), &tenant).unwrap().head().unwrap().tree.root;
    let far = tlog::Tree::new(1_000_000, root);
    let another = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [99; 32]).unwrap()).unwrap();
    let unsigned = Holds(journal_core::log::sign_checkpoint(&origin, far, &another).unwrap().note().to_owned());
    let log = log_key().verifier_key();
    let ask = |holds: Holds| {
        let view = journal_core::LogView::open(store.as_ref(), &tenant).unwrap();
        let probes: Vec<Arc<dyn journal_core::runtime::WitnessProbe>> = vec![Arc::new(holds)];
        journal_core::runtime::ask_witnesses(&view, (&origin, &log), &probes, None)
    };

    let views = ask(unsigned).unwrap();
    assert!(views.held.is_empty() && views.answered == 0, "{views:?}");
    assert!(
        matches!(views.failures.as_slice(), [(_, witness::WitnessError::BadAnswer { reason, .. })] if reason.contains("did not sign")),
        "{views:?}"
    );
    sign_current_head(store.as_ref(), &tenant, &origin, &log_key(), None).unwrap();

    let signed = ask(Holds::signed(&origin, far));
    assert!(matches!(signed, Err(JournalError::WouldSignRollback { .. })), "{signed:?}");
}

/// A witness that answers only once every witness of the round has been
/// asked: it waits (up to 10 s) for the others to arrive.
struct AnswersWhenAllAsked {
    asked: Arc<(std::sync::Mutex<usize>, std::sync::Condvar)>,
    all: usize,
    url: String,
}

impl journal_core::runtime::WitnessProbe for AnswersWhenAllAsked {
    fn endpoint(&self) -> &str {
        &self.url
    }
    fn latest(&self, _: &Origin) -> Result<Option<String>, witness::WitnessError> {
        let (count, arrived) = &*self.asked;
        let mut asked = count.lock().unwrap();
        *asked += 1;
        arrived.notify_all();
        let (asked, waited) =
            arrived.wait_timeout_while(asked, std::time::Duration::from_secs(10), |asked| *asked < self.all).unwrap();
        if waited.timed_out() {
            return Err(witness::WitnessError::Transport {
                witness: self.url.clone(),
                reason: format!("asked alone ({} of {} asked)", *asked, self.all),
            });
        }
        Ok(None)
    }
}

/// R-WIT-8 (review 68's note): before it signs, the sweep asks every
/// witness what it holds, and asked one after another each slow witness
/// added its whole timeout to the round (20 s each per tenant). They are
/// asked at once: each of these witnesses answers only once all of them
/// have been asked, which one at a time never happens.
#[test]
fn r_wit_8_the_witnesses_are_asked_what_they_hold_at_once() {
    let store = Arc::new(MemoryStore::new());
    seal(&store, "a");
    let (tenant, origin) = (TenantId::new("t").unwrap(), Origin::new(ORIGIN).unwrap());
    let asked = Arc::new((std::sync::Mutex::new(0), std::sync::Condvar::new()));
    let probes: Vec<Arc<dyn journal_core::runtime::WitnessProbe>> = (0..3)
        .map(|n| {
            Arc::new(AnswersWhenAllAsked { asked: Arc::clone(&asked), all: 3, url: format!("http://w{n}.test") })
                as Arc<dyn journal_core::runtime::WitnessProbe>
        })
        .collect();
    let view = journal_core::LogView::open(store.as_ref(), &tenant).unwrap();
    let views =
        journal_core::runtime::ask_witnesses(&view, (&origin, &log_key().verifier_key()), &probes, None).unwrap();
    assert!(views.failures.is_empty(), "{views:?}");
    assert_eq!(views.answered, 3, "{views:?}");
}

/// A witness that cannot be asked (unreachable).
struct Unreachable;

impl journal_core::runtime::WitnessProbe for Unreachable {
    fn endpoint(&self) -> &str {
        "unreachable"
    }
    fn latest(&self, _: &Origin) -> Result<Option<String>, witness::WitnessError> {
        Err(witness::WitnessError::Transport { witness: "unreachable".into(), reason: "down".into() })
    }
}

/// R-PLANE-2, R-WIT-6: a lost mark is rebuilt from what the witnesses hold
/// only once every configured witness answered: one that could not be
/// asked may hold a larger tree than those that did, and a mark rebuilt
/// without it could let the plane sign a second root at a size it
/// cosigned. With none answering (or none to ask), nothing is rebuilt either; with all
/// answering, the mark is the largest tree they hold.
#[test]
fn r_plane_2_a_lost_mark_is_rebuilt_only_when_every_witness_answered() {
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let store = Arc::new(MemoryStore::new());
    succeed_runs(&store, None, &["run-0", "run-1"]);
    let (_, signed) = sign_current_head(store.as_ref(), &tenant, &origin, &log_key(), None).unwrap();
    let held = signed.checkpoint().tree();
    let log = log_key().verifier_key();
    let ask = |probes: Vec<Arc<dyn journal_core::runtime::WitnessProbe>>| {
        let mark = Mark::default();
        mark.lose("agentplane.highwater is missing");
        let view = journal_core::LogView::open(store.as_ref(), &tenant).unwrap();
        let answer = journal_core::runtime::ask_witnesses(&view, (&origin, &log), &probes, Some(&mark)).map(drop);
        (answer, mark.last(&origin).unwrap())
    };
    let (answer, mark) = ask(vec![Arc::new(Holds::signed(&origin, held)), Arc::new(Unreachable)]);
    assert!(matches!(answer, Err(JournalError::WouldSignRollback { .. })), "one unasked: {answer:?}");
    assert!(matches!(mark, journal_core::log::HighWaterMark::Lost { .. }), "not rebuilt: {mark:?}");
    let (answer, mark) = ask(vec![Arc::new(Unreachable)]);
    assert!(matches!(answer, Err(JournalError::WouldSignRollback { .. })), "none answered: {answer:?}");
    assert!(matches!(mark, journal_core::log::HighWaterMark::Lost { .. }), "not rebuilt: {mark:?}");
    let (answer, mark) = ask(Vec::new());
    assert!(matches!(answer, Err(JournalError::WouldSignRollback { .. })), "no witness to ask: {answer:?}");
    assert!(matches!(mark, journal_core::log::HighWaterMark::Lost { .. }), "not rebuilt empty: {mark:?}");
    let (answer, mark) = ask(vec![Arc::new(Holds::signed(&origin, held))]);
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(mark, journal_core::log::HighWaterMark::Signed(held), "rebuilt from the witness");
}

/// R-PLANE-1, R-WIT-6: what a witness holds for another origin, even under
/// the plane's own log key, binds nothing of this one: the answer is a bad
/// one (counted as not answered), never a tree this log is held to. A kept
/// cosigned note of another origin does not verify for this one either.
#[test]
fn r_plane_1_a_checkpoint_of_another_origin_binds_nothing_here() {
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let elsewhere = Origin::new("highwater.test/elsewhere").unwrap();
    let store = Arc::new(MemoryStore::new());
    succeed_runs(&store, None, &["run-0"]);
    let (_, signed) = sign_current_head(store.as_ref(), &tenant, &origin, &log_key(), None).unwrap();
    let other = tlog::Tree::new(signed.checkpoint().tree().size + 5, tlog::RootHash::empty());
    let log = log_key().verifier_key();
    let probes: Vec<Arc<dyn journal_core::runtime::WitnessProbe>> = vec![Arc::new(Holds::signed(&elsewhere, other))];
    let view = journal_core::LogView::open(store.as_ref(), &tenant).unwrap();
    let views = journal_core::runtime::ask_witnesses(&view, (&origin, &log), &probes, None).unwrap();
    assert!(views.held.is_empty(), "another origin's tree is held to nothing here: {views:?}");
    assert_eq!((views.answered, views.failures.len()), (0, 1), "a bad answer");

    let note = journal_core::log::sign_checkpoint(&elsewhere, other, &log_key()).unwrap().note().to_owned();
    let kept = journal_core::runtime::verify_cosigned_note(&note, other, &origin, &log, &[], 0);
    assert!(kept.is_err(), "a note of another origin verifies for none but its own: {kept:?}");
}
