//! The plane's own guards on a redb file, each held by a test that fails when
//! the guard is weakened (review 78, a mutation review of journal-core's
//! checks): what no other test of the guard's crate or of this one noticed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use journal_core::testkit::{MemoryHighWater, TamperAccess as _};
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, JournalError, Origin, Runtime,
    RuntimeBuilder, RuntimeError, TenantId,
};
use store_redb::RedbStore;
use witness::{ALG_ED25519, LogKey, SignerKey};

const ORIGIN: &str = "redb.test/guards";

fn tenant() -> TenantId {
    TenantId::new("t").unwrap()
}

fn origin() -> Origin {
    Origin::new(ORIGIN).unwrap()
}

fn log_key() -> LogKey {
    LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [7; 32]).unwrap()).unwrap()
}

fn runtime(store: Arc<RedbStore>, mark: Option<Arc<MemoryHighWater>>) -> Runtime {
    let builder = RuntimeBuilder::new(store).tenant(tenant(), origin(), Some(log_key()));
    match mark {
        Some(mark) => builder.high_water(mark).build().unwrap(),
        None => builder.build().unwrap(),
    }
}

fn request(key: &str) -> AdmitRequest {
    AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget: Budget::default() }
}

/// Admits `key`, pays once (counted in `paid`) and, when `finish`, succeeds.
fn admit_and_pay(runtime: &Runtime, key: &str, paid: &AtomicU32, finish: bool) -> Result<(), RuntimeError> {
    let Admission::New(mut run) = runtime.admit(&tenant(), request(key))? else { return Ok(()) };
    run.start_step("work")?;
    run.effect("ek:pay", "work", || {
        paid.fetch_add(1, Ordering::SeqCst);
        EffectOutput { result: EffectResult::Ok { output: "paid".into() }, charged: Counters::default() }
    })?;
    run.finish_step("work")?;
    if finish {
        run.succeed("done")?;
    }
    Ok(())
}

fn open(path: &Path) -> Arc<RedbStore> {
    Arc::new(RedbStore::open(path).unwrap())
}

/// R-RUN-4, R-IDX (review 78): the idempotency index is derived data. A
/// key pointed behind the plane at another run (here a key never admitted,
/// at a run that succeeded) must not be answered with that run: the order
/// would be told it succeeded and never be performed. The admission is
/// refused as damage; nothing is appended.
#[test]
fn r_run_4_a_key_the_index_points_at_another_run_is_damage_not_that_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let paid = AtomicU32::new(0);
    let store = Arc::new(RedbStore::create(&path).unwrap());
    admit_and_pay(&runtime(store.clone(), None), "order-1", &paid, true).unwrap();
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    let paid_run = Runtime::run_id_for(&tenant(), "order-1").unwrap();
    store.set_idempotency(&tenant(), "order-2", &paid_run);
    drop(store);

    let store = open(&path);
    let plane = runtime(store.clone(), None);
    let answer = plane.admit(&tenant(), request("order-2"));
    match answer {
        Err(RuntimeError::Journal(JournalError::StoreDamage { detail, .. })) => {
            assert!(detail.contains("order-2"), "the refusal names the key: {detail}");
        }
        Err(err) => panic!("refused, but not as damage: {err}"),
        Ok(Admission::Existing { run, status }) => {
            panic!("key order-2 was answered with run {run} of order-1 ({status:?})")
        }
        Ok(Admission::New(run)) => panic!("admitted as {}", run.run()),
    }
}

/// R-PLANE-2, R-RUN-5 (review 78): a store put back from a backup taken
/// before a run was admitted, paid and sealed, and the log signed over it.
/// Redelivered, the order's key finds no run and no leaf in that store: only
/// the plane's high-water mark, kept outside the store, says the store is
/// older than what the plane signed. The admission is refused and the
/// payment is not made again.
#[test]
fn r_plane_2_a_store_older_than_the_mark_admits_no_redelivered_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let backup = dir.path().join("backup.redb");
    drop(RedbStore::create(&path).unwrap());
    std::fs::copy(&path, &backup).unwrap();

    let mark = Arc::new(MemoryHighWater::default());
    let paid = AtomicU32::new(0);
    let store = open(&path);
    admit_and_pay(&runtime(store.clone(), Some(mark.clone())), "order-7", &paid, true).unwrap();
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    journal_core::log::sign_current_head(store.as_ref(), &tenant(), &origin(), &log_key(), Some(mark.as_ref()))
        .unwrap();
    drop(store);

    std::fs::copy(&backup, &path).unwrap();
    let store = open(&path);
    let plane = runtime(store.clone(), Some(mark));
    let again = plane.admit(&tenant(), request("order-7"));
    let refused = match again {
        Err(err) => err.to_string(),
        Ok(Admission::Existing { run, status }) => panic!("answered with run {run} ({status:?})"),
        Ok(Admission::New(mut run)) => {
            let _ = run.effect("ek:pay", "work", || {
                paid.fetch_add(1, Ordering::SeqCst);
                EffectOutput { result: EffectResult::Ok { output: "paid".into() }, charged: Counters::default() }
            });
            panic!("order-7 was admitted again on the older store (paid {} times)", paid.load(Ordering::SeqCst))
        }
    };
    // The runtime's check of the mark names the store older; the catch-up
    // of the signed leaves refuses the same store as entries removed.
    assert!(
        refused.contains("older than what the plane signed") || refused.contains("the plane signed 1 of them"),
        "{refused}"
    );
    assert_eq!(paid.load(Ordering::SeqCst), 1);
}

/// R-CHAIN-1, R-RUN-2, R-RUN-4 (review 78): the store's own append gate,
/// met by a caller that hands it rows (any `Store` user, not only the
/// journal): a row whose hash is not SHA-256(prev_hash || bytes), one not
/// linked to the head it names, one at another seq, an idempotency key on a
/// record other than a run's admission, and a sealing conclusion without its
/// seal (or a seal on one that does not seal) are each refused as an invalid
/// record, and nothing of them is written. The well-formed row is then taken.
#[test]
fn r_chain_1_the_append_gate_refuses_a_row_that_does_not_extend_the_head() {
    use journal_core::chain::{ChainHash, StoredRecord};
    use journal_core::record::{PlanFrozen, RecordBody};
    use journal_core::store::{AppendRequest, Conclusion};
    use journal_core::{Journal, Outcome, RunId, Store as _};

    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::create(&dir.path().join("plane.redb")).unwrap();
    let (tenant, origin, run) = (tenant(), origin(), RunId::new("run-gate").unwrap());
    let journal = Journal::new(&store, &tenant, &origin);
    let first = journal.append(&run, None, None, RecordBody::PlanFrozen(PlanFrozen { steps: vec![] })).unwrap();
    let bytes = b"{\"kind\":\"StepStarted\",\"v\":1}".to_vec();
    let good = StoredRecord {
        seq: 2,
        kind: "StepStarted".into(),
        effect_key: None,
        prev_hash: first.head.hash,
        hash: ChainHash::link(&first.head.hash, &bytes),
        bytes,
        signature: None,
    };
    let request = |row: StoredRecord| AppendRequest {
        tenant: tenant.clone(),
        run: run.clone(),
        expected_head: Some(first.head),
        row,
        idempotency_key: None,
        conclusion: None,
        encoded_bytes: None,
    };
    let forged_hash = StoredRecord { hash: ChainHash::link(&ChainHash::GENESIS, &good.bytes), ..good.clone() };
    let unlinked = {
        let prev = ChainHash::link(&ChainHash::GENESIS, b"another history");
        StoredRecord { prev_hash: prev, hash: ChainHash::link(&prev, &good.bytes), ..good.clone() }
    };
    let skipped = StoredRecord { seq: 3, ..good.clone() };
    let keyed = AppendRequest { idempotency_key: Some("order-9".into()), ..request(good.clone()) };
    let unsealed = AppendRequest {
        conclusion: Some(Conclusion { outcome: Outcome::Succeeded, seal: None }),
        ..request(good.clone())
    };
    let cases = [
        ("a hash over other bytes", request(forged_hash)),
        ("a row linked to another history", request(unlinked)),
        ("a row at seq 3 after seq 1", request(skipped)),
        ("an idempotency key on seq 2", keyed),
        ("a succeeded conclusion with no seal", unsealed),
    ];
    for (what, request) in cases {
        let refused = store.append(request);
        assert!(matches!(refused, Err(JournalError::InvalidRecord(_))), "{what}: {refused:?}");
        let stored = store.read_run(&tenant, &run).unwrap();
        assert_eq!((stored.rows.len(), stored.head), (1, Some(first.head)), "{what}: nothing is written");
        assert_eq!(store.run_by_idempotency_key(&tenant, "order-9").unwrap(), None, "{what}");
        assert_eq!(store.runs(&tenant, Some(Outcome::Succeeded)).unwrap(), Vec::<RunId>::new(), "{what}");
    }
    store.append(request(good)).unwrap();
    assert_eq!(store.read_run(&tenant, &run).unwrap().rows.len(), 2);
}

/// R-CHAIN-5, R-COVER-1 (review 78): rows whose chain links hold but which
/// say something else than where they are stored are tamper on a read of
/// a redb file: a run's kind column changed beside its unchanged bytes, a
/// whole run's rows copied under another run's id (the chain from genesis
/// verifies; the records name the run they were written for), and a seal
/// leaf rewritten to commit to an earlier head of the run.
#[test]
fn r_chain_5_rows_that_say_another_place_than_where_they_are_stored_are_tamper() {
    use journal_core::chain::ExpectedHead;
    use journal_core::record::{PlanFrozen, RecordBody, StepMark};
    use journal_core::{ChainCheck, Journal, RunId, SealLeaf, Store as _, TamperKind, Upcasters, VerifyOptions};

    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::create(&dir.path().join("plane.redb")).unwrap();
    let (tenant, origin) = (tenant(), origin());
    let journal = Journal::new(&store, &tenant, &origin);
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let two_records = |name: &str| {
        let run = RunId::new(name).unwrap();
        let first = journal.append(&run, None, None, RecordBody::PlanFrozen(PlanFrozen { steps: vec![] })).unwrap();
        let step = RecordBody::StepStarted(StepMark { step: "work".into() });
        let second = journal.append(&run, Some(first.head), None, step).unwrap();
        (run, second.head)
    };
    let tamper_at = |run: &RunId| match journal.read(run, check) {
        Err(JournalError::Tamper { kind, seq, .. }) => (kind, seq),
        other => panic!("run {run} read as {:?}", other.map(|verified| verified.head)),
    };

    let (column, _) = two_records("run-column");
    let mut row = store.read_run(&tenant, &column).unwrap().rows[1].clone();
    row.kind = "StepFinished".into();
    store.overwrite_row(&tenant, &column, row);
    assert_eq!(tamper_at(&column), (TamperKind::ColumnMismatch, 2));

    let (original, head) = two_records("run-original");
    let (copy, _) = two_records("run-copy");
    for row in store.read_run(&tenant, &original).unwrap().rows {
        store.overwrite_row(&tenant, &copy, row);
    }
    store.set_runs_head(&tenant, &copy, head);
    assert_eq!(tamper_at(&copy), (TamperKind::Reorder, 1));
    assert!(journal.read(&original, check).is_ok(), "the run copied from reads as it was");

    let (sealed, _) = two_records("run-sealed");
    let rows = store.read_run(&tenant, &sealed).unwrap().rows;
    let head = ExpectedHead { seq: 2, hash: rows[1].hash };
    let concluded = journal_core::record::RunConcluded {
        outcome: journal_core::Outcome::Succeeded,
        verdict: journal_core::record::Verdict::None,
        reason: "done".into(),
    };
    let last = journal.append(&sealed, Some(head), None, RecordBody::RunConcluded(concluded)).unwrap();
    assert!(last.position.is_some(), "the run sealed");
    let earlier = SealLeaf::new(&origin, &sealed, ExpectedHead { seq: 1, hash: rows[0].hash });
    store.overwrite_seal_leaf(&tenant, &sealed, earlier.to_bytes());
    assert_eq!(tamper_at(&sealed), (TamperKind::SealMismatch, 3));
}

/// R-COVER-1 (review 88): a heads leaf commits to each moved run's head as
/// its runs row names it, and that head must be a record the run has (its
/// hash column the row's hash). A runs row changed behind the plane to a
/// seq past the run's records, or to the hash of another record, is refused
/// as damage: no heads leaf is appended over it.
#[test]
fn r_cover_1_a_heads_leaf_is_never_appended_over_a_runs_head_no_record_has() {
    use journal_core::testkit::sample_run;
    use journal_core::{ExpectedHead, Journal, Outcome, RunId, Store as _};
    let store = RedbStore::temporary().unwrap();
    let run = RunId::new("open-1").unwrap();
    let head = sample_run(&Journal::new(&store, &tenant(), &origin()), &run, Outcome::Failed).unwrap();
    let first = store.read_run(&tenant(), &run).unwrap().rows[0].hash;
    let leaves = store.seals(&tenant()).unwrap().len();
    for forged in [ExpectedHead { seq: head.seq + 1, hash: head.hash }, ExpectedHead { seq: head.seq, hash: first }] {
        store.set_runs_head(&tenant(), &run, forged);
        match store.append_heads(&tenant(), &origin()) {
            Err(JournalError::StoreDamage { detail, .. }) => assert!(detail.contains("open-1"), "{detail}"),
            other => panic!("a heads leaf over a head the run does not have: {other:?}"),
        }
        assert_eq!(store.seals(&tenant()).unwrap().len(), leaves, "nothing appended");
    }
    store.set_runs_head(&tenant(), &run, head);
    assert_eq!(store.append_heads(&tenant(), &origin()).unwrap().len(), 1, "the true head is covered");
}

/// R-UX-3 (review 88): a byte of a run id changed by hand in the file makes
/// redb panic where it reads the key. That panic is the damage of the
/// tenant read, said as `StoreDamage` of that tenant (the audit's finding),
/// not a bare I/O error and not a panic.
#[test]
fn r_ux_3_a_run_id_changed_by_hand_is_the_tenant_s_store_damage() {
    use journal_core::testkit::sample_run;
    use journal_core::{Journal, Outcome, RunId, Store as _};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let run = RunId::new("run-changed-by-hand").unwrap();
    {
        let store = RedbStore::create(&path).unwrap();
        sample_run(&Journal::new(&store, &tenant(), &origin()), &run, Outcome::Failed).unwrap();
    }
    let mut bytes = std::fs::read(&path).unwrap();
    let id = run.as_str().as_bytes();
    let mut changed = 0;
    for start in 0..bytes.len().saturating_sub(id.len()) {
        if &bytes[start..start + id.len()] == id {
            bytes[start] = 0xff;
            changed += 1;
        }
    }
    assert!(changed > 0, "the run id is stored in plain bytes");
    std::fs::write(&path, &bytes).unwrap();
    let store = RedbStore::open_read_only(&path).unwrap();
    match store.snapshot(&tenant()) {
        Err(JournalError::StoreDamage { tenant: damaged, detail }) => {
            assert_eq!(damaged, tenant());
            assert!(detail.contains("redb failed on bytes it never wrote"), "{detail}");
        }
        other => panic!("a run id changed by hand is not the tenant's damage: {other:?}"),
    }
}

/// R-UX-3 (review 88): a snapshot sink's own panic is the caller's, carried
/// back out as that panic, never turned into an error that blames the file.
#[test]
fn r_ux_3_a_snapshot_sink_s_own_panic_is_carried_back_out() {
    use journal_core::{RunId, SnapshotSink, Store as _, StoredRecord, TenantSnapshot};
    struct Panics;
    impl SnapshotSink for Panics {
        fn tables(&mut self, _: TenantSnapshot) -> Result<(), JournalError> {
            std::panic::panic_any("the sink's own bug")
        }
        fn run_records(&mut self, _: RunId, _: Vec<StoredRecord>) -> Result<(), JournalError> {
            Ok(())
        }
    }
    let store = RedbStore::temporary().unwrap();
    let caught =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| store.snapshot_streamed(&tenant(), &mut Panics)));
    match caught {
        Err(payload) => assert_eq!(payload.downcast_ref::<&str>(), Some(&"the sink's own bug")),
        Ok(answer) => panic!("the sink's panic was answered as {answer:?}"),
    }
}

/// R-STORE-4 (review 88): a tenant's heads leaf covers its own moved runs
/// only. Another tenant's moved mark for a run of the same id is not this
/// tenant's: with none of its own runs moved, no leaf is appended to its log.
#[test]
fn r_store_4_a_heads_leaf_never_takes_another_tenant_s_moved_mark() {
    use journal_core::testkit::sample_run;
    use journal_core::{Journal, Outcome, RunId, Store as _};
    let store = RedbStore::temporary().unwrap();
    let other = TenantId::new("u").unwrap();
    let run = RunId::new("same-id").unwrap();
    sample_run(&Journal::new(&store, &tenant(), &origin()), &run, Outcome::Failed).unwrap();
    assert_eq!(store.append_heads(&tenant(), &origin()).unwrap().len(), 1, "its own moved run is covered once");
    let other_origin = Origin::new("redb.test/guards-u").unwrap();
    sample_run(&Journal::new(&store, &other, &other_origin), &run, Outcome::Failed).unwrap();
    assert_eq!(store.append_heads(&tenant(), &origin()).unwrap(), Vec::<u64>::new(), "none of its runs moved");
    assert_eq!(store.append_heads(&other, &other_origin).unwrap().len(), 1, "the other tenant's run is its own");
}

/// R-LOG-1 (review 88): a heads leaf is a log leaf but no run's seal: the
/// seal index holds sealed runs only, and a tenant with a heads leaf and no
/// sealed run has none (a row under the reserved heads id would be read
/// back as a seal of a run no id names).
#[test]
fn r_log_1_a_heads_leaf_is_never_indexed_as_a_run_s_seal() {
    use journal_core::testkit::sample_run;
    use journal_core::{Journal, Outcome, RunId, Store as _};
    let store = RedbStore::temporary().unwrap();
    let run = RunId::new("open-1").unwrap();
    sample_run(&Journal::new(&store, &tenant(), &origin()), &run, Outcome::Failed).unwrap();
    assert_eq!(store.append_heads(&tenant(), &origin()).unwrap().len(), 1);
    let snapshot = store.snapshot(&tenant()).unwrap();
    assert_eq!(snapshot.seals.len(), 1, "the heads leaf is in the log");
    assert!(snapshot.seal_by_run.is_empty(), "{:?}", snapshot.seal_by_run);
}

/// R-COVER-2 (review 88): a file from before moved marks gets them at its
/// first writable opening, for its open runs only: a sealed run is covered
/// by its seal leaf and never marked moved (a mark on it would put a sealed
/// run's head in the next heads leaf, and read as a mark with no open run).
#[test]
fn r_cover_2_a_file_from_before_moved_marks_marks_only_its_open_runs() {
    use journal_core::testkit::sample_run;
    use journal_core::{Journal, Outcome, RunId, Store as _};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("older.redb");
    let (sealed, open_run) = (RunId::new("sealed-1").unwrap(), RunId::new("open-1").unwrap());
    {
        let store = RedbStore::create(&path).unwrap();
        let (tenant, origin) = (tenant(), origin());
        let journal = Journal::new(&store, &tenant, &origin);
        sample_run(&journal, &sealed, Outcome::Succeeded).unwrap();
        sample_run(&journal, &open_run, Outcome::Failed).unwrap();
    }
    {
        // As a build before the marks wrote it: no marks, no bookkeeping of them.
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let moved: redb::TableDefinition<(&str, &str), ()> = redb::TableDefinition::new("moved_runs");
        assert!(txn.delete_table(moved).unwrap(), "the file had the table");
        let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
        assert!(txn.open_table(meta).unwrap().remove("moved_runs_filled").unwrap().is_some());
        txn.commit().unwrap();
    }
    let store = RedbStore::open(&path).unwrap();
    let marked: Vec<RunId> = store.snapshot(&tenant()).unwrap().moved.into_iter().collect();
    assert_eq!(marked, vec![open_run]);
}

/// R-STORE-4 (review 88): the tenants are listed once each, however many
/// runs each holds (the listing the audit and `runs` walk tenant by tenant).
#[test]
fn r_store_4_each_tenant_is_listed_once() {
    use journal_core::testkit::sample_run;
    use journal_core::{Journal, Outcome, RunId, Store as _};
    let store = RedbStore::temporary().unwrap();
    let (tenant, origin) = (tenant(), origin());
    let journal = Journal::new(&store, &tenant, &origin);
    for run in ["run-1", "run-2", "run-3"] {
        sample_run(&journal, &RunId::new(run).unwrap(), Outcome::Failed).unwrap();
    }
    assert_eq!(store.tenants().unwrap(), vec![tenant]);
}

/// R-LOG-3 (review 88): a stored log node is a 32-byte hash. One made longer
/// behind the plane is damage, named as such, never cut to its first 32
/// bytes and served as a hash of the tree.
#[test]
fn r_log_3_a_log_node_longer_than_a_hash_is_damage_not_cut() {
    use journal_core::testkit::sample_run;
    use journal_core::{Journal, Outcome, RunId, Store as _};
    use tlog::NodeId;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    {
        let store = RedbStore::create(&path).unwrap();
        let (tenant, origin) = (tenant(), origin());
        sample_run(&Journal::new(&store, &tenant, &origin), &RunId::new("sealed-1").unwrap(), Outcome::Succeeded)
            .unwrap();
    }
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let nodes: redb::TableDefinition<(&str, u8, u64), &[u8]> = redb::TableDefinition::new("log_nodes");
        {
            let mut table = txn.open_table(nodes).unwrap();
            use redb::ReadableTable as _;
            let mut longer = table.get(("t", 0, 0)).unwrap().unwrap().value().to_vec();
            longer.push(0);
            table.insert(("t", 0, 0), longer.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let store = RedbStore::open_read_only(&path).unwrap();
    match store.read_log_nodes(&tenant(), &[NodeId::new(0, 0)]) {
        Err(JournalError::StoreDamage { detail, .. }) => assert!(detail.contains("not 32 bytes"), "{detail}"),
        other => panic!("a 33-byte log node was read as {other:?}"),
    }
}
