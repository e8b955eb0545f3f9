//! What only PostgreSQL can show: the sealing constraint against raw SQL, the
//! schema version, group commit, a connection killed mid-append, and tampering
//! through SQL found by the audit (R-RUN-2, R-STORE-3, R-AUD-3).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::testkit::TamperAccess;
use journal_core::{
    Admission, AdmitRequest, Budget, Journal, JournalError, LogView, Origin, RuntimeBuilder, Store, TenantId,
};
use store_pg::PgStore;

const ORIGIN: &str = "pg.test/plane";

fn seal_runs(store: &Arc<PgStore>, tenant: &TenantId, keys: std::ops::Range<u32>) -> Vec<journal_core::RunId> {
    let runtime = RuntimeBuilder::new(Arc::clone(store) as Arc<dyn Store>)
        .tenant(tenant.clone(), Origin::new(ORIGIN).unwrap(), None)
        .build()
        .unwrap();
    keys.map(|n| {
        let request = AdmitRequest { idempotency_key: format!("job-{n}"), plan: vec![], budget: Budget::default() };
        let Admission::New(run) = runtime.admit(tenant, request).unwrap() else { panic!("new run") };
        let id = run.run().clone();
        run.succeed("done").unwrap();
        id
    })
    .collect()
}

/// A step's start: the body of an ordinary (plain) append.
fn step(name: &str) -> journal_core::RecordBody {
    journal_core::RecordBody::StepStarted(journal_core::record::StepMark { step: name.into() })
}

/// A fresh database, and the tenant, origin and run id its one-run tests
/// append to.
fn fresh_run() -> (PgStore, TenantId, Origin, journal_core::RunId) {
    let store = PgStore::temporary().unwrap();
    (store, TenantId::new("t").unwrap(), Origin::new(ORIGIN).unwrap(), journal_core::RunId::new("run-1").unwrap())
}

/// How many records of `run` the database holds, read with SQL.
fn records_stored(raw: &mut postgres::Client, tenant: &TenantId, run: &journal_core::RunId) -> i64 {
    raw.query_one("SELECT count(*) FROM records WHERE tenant = $1 AND run = $2", &[&tenant.as_str(), &run.as_str()])
        .unwrap()
        .get(0)
}

#[test]
fn r_run_2_the_database_refuses_a_row_for_a_sealed_run_even_from_raw_sql() {
    let store = Arc::new(PgStore::temporary().unwrap());
    let tenant = TenantId::new("t").unwrap();
    let run = seal_runs(&store, &tenant, 0..1).remove(0);
    let refused = store.raw().execute(
        "INSERT INTO records (tenant, run, seq, kind, effect_key, prev_hash, hash, bytes)
         VALUES ($1, $2, 99, 'StepStarted', NULL, '\\x00', '\\x00', '\\x00')",
        &[&tenant.as_str(), &run.as_str()],
    );
    let err = refused.unwrap_err();
    assert_eq!(err.code().map(|c| c.code()), Some("AP001"), "{err}");
    let message = err.as_db_error().map(|db| db.message().to_owned()).unwrap_or_default();
    assert!(message.contains("sealed"), "{message}");
    // An open run takes rows.
    let journal_rows = store.read_run(&tenant, &run).unwrap().rows.len();
    assert!(journal_rows >= 3);
}

#[test]
fn a_schema_newer_than_this_build_is_refused_with_its_remedy() {
    let url = store_pg::testkit::fresh_database();
    drop(PgStore::open(&url).unwrap());
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client.execute("UPDATE agentplane_schema SET version = $1", &[&(store_pg::SCHEMA_VERSION + 1)]).unwrap();
    let refused = PgStore::open(&url).unwrap_err();
    assert!(refused.to_string().contains("newer than this build"), "{refused}");
    // Opening again at the same version applies nothing twice.
    client.execute("UPDATE agentplane_schema SET version = $1", &[&store_pg::SCHEMA_VERSION]).unwrap();
    drop(PgStore::open(&url).unwrap());
}

/// R-STORE-3 (attacker review, session 18), with SQL: the schema version
/// table dropped beside the journal's tables made every read say "no
/// agentplane store here" (a usage error: the auditor is told the URL is
/// wrong), its row deleted made it "older, run migrate" (which then fails on
/// the tables already there), and a row of version 0 or a second row were
/// read as versions. Each is a damaged schema now, for reads and writes.
#[test]
fn r_store_3_a_schema_version_deleted_or_doubled_behind_the_plane_is_damage() {
    let attacks = [
        "DROP TABLE agentplane_schema",
        "DELETE FROM agentplane_schema",
        "UPDATE agentplane_schema SET version = 0",
        "UPDATE agentplane_schema SET version = -4",
        "INSERT INTO agentplane_schema (version) VALUES (1)",
        // Of another type: an I/O failure (exit 2, retried) it was, not damage.
        "ALTER TABLE agentplane_schema ALTER version TYPE bigint",
    ];
    let mut wrong = Vec::new();
    for attack in attacks {
        let url = store_pg::testkit::fresh_database();
        drop(PgStore::open(&url).unwrap());
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        client.batch_execute(attack).unwrap();
        for (how, opened) in [("read", PgStore::open_read_only(&url)), ("write", PgStore::open(&url))] {
            match opened {
                Err(store_pg::OpenError::DamagedSchema { .. }) => {}
                Err(other) => wrong.push(format!("{attack}, open to {how}: {other}")),
                Ok(_) => wrong.push(format!("{attack}, open to {how}: opened")),
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // A database with no store is still no store, and a new one opens.
    let url = store_pg::testkit::fresh_database();
    assert!(matches!(PgStore::open_read_only(&url), Err(store_pg::OpenError::NoStore { .. })));
    drop(PgStore::open(&url).unwrap());
    drop(PgStore::open_read_only(&url).unwrap());
}

#[test]
fn concurrent_appenders_share_commits() {
    let store = Arc::new(PgStore::temporary().unwrap());
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    std::thread::scope(|scope| {
        for thread in 0..16 {
            let (store, tenant, origin) = (&store, &tenant, &origin);
            scope.spawn(move || {
                let journal = Journal::new(store.as_ref(), tenant, origin);
                let run = journal_core::RunId::new(&format!("run-{thread}")).unwrap();
                let mut head = None;
                for i in 0..20 {
                    let body =
                        journal_core::RecordBody::StepStarted(journal_core::record::StepMark { step: format!("s{i}") });
                    head = Some(journal.append(&run, head, None, body).unwrap().head);
                }
            });
        }
    });
    assert!(store.commits() < 16 * 20, "group commit shares transactions: {} commits for 320 appends", store.commits());
    for thread in 0..16 {
        let run = journal_core::RunId::new(&format!("run-{thread}")).unwrap();
        assert_eq!(store.read_run(&tenant, &run).unwrap().rows.len(), 20);
    }
}

/// R-STORE-3 (issue 25): plain appends go to the database in one statement
/// of their own, which moves a run's row only from the head its append
/// expects. Two stores on one database (two planes' writers) race appends
/// to the same runs from stale heads: every append either commits once or
/// is refused as a conflict, and every run stays one chain whose stored head
/// is its last row (no fork, no record without its head, no head without its
/// record).
#[test]
fn r_store_3_racing_writers_of_plain_appends_never_fork_a_run() {
    use journal_core::chain::ChainHash;
    let url = store_pg::testkit::fresh_database();
    let stores = [PgStore::open(&url).unwrap(), PgStore::open(&url).unwrap()];
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let runs: Vec<journal_core::RunId> =
        (0..4).map(|n| journal_core::RunId::new(&format!("run-{n}")).unwrap()).collect();
    let first = Journal::new(&stores[0], &tenant, &origin);
    for run in &runs {
        let body = journal_core::RecordBody::PlanFrozen(journal_core::record::PlanFrozen { steps: vec![] });
        first.append(run, None, None, body).unwrap();
    }
    let committed = std::sync::atomic::AtomicUsize::new(0);
    let conflicts = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for thread in 0..8 {
            let (store, tenant, origin, runs) = (&stores[thread % 2], &tenant, &origin, &runs);
            let (committed, conflicts) = (&committed, &conflicts);
            scope.spawn(move || {
                let journal = Journal::new(store, tenant, origin);
                for i in 0..40 {
                    let run = &runs[(thread + i) % runs.len()];
                    let head = store.read_run(tenant, run).unwrap().head;
                    let body = journal_core::RecordBody::StepStarted(journal_core::record::StepMark {
                        step: format!("{thread}/{i}"),
                    });
                    match journal.append(run, head, None, body) {
                        Ok(_) => committed.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                        Err(JournalError::Conflict { .. }) => {
                            conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                        }
                        Err(other) => panic!("an append of {run} failed: {other}"),
                    };
                }
            });
        }
    });
    let committed = committed.into_inner();
    assert_eq!(committed + conflicts.into_inner(), 8 * 40, "every append answered once");
    let mut stored = 0;
    for run in &runs {
        let read = stores[1].read_run(&tenant, run).unwrap();
        let mut prev = ChainHash::GENESIS;
        for (at, row) in read.rows.iter().enumerate() {
            assert_eq!(row.seq, at as u64 + 1, "{run}: seqs follow each other");
            assert_eq!(row.prev_hash, prev, "{run} seq {}: linked to the row before", row.seq);
            assert_eq!(ChainHash::link(&prev, &row.bytes), row.hash, "{run} seq {}", row.seq);
            prev = row.hash;
        }
        let last = read.rows.last().unwrap();
        assert_eq!(read.head.map(|h| (h.seq, h.hash)), Some((last.seq, last.hash)), "{run}: the head is the last row");
        stored += read.rows.len() - 1;
    }
    assert_eq!(stored, committed, "every committed append is stored once, and nothing else");
}

/// R-STORE-3: the one statement of plain appends holds each run's row to
/// the head its append expects, not only to the records' primary key. A
/// runs row moved back behind the plane (its head at seq 1 while seq 2 is
/// stored), or sealed behind it, refuses the append the row no longer
/// agrees with, and nothing is written.
#[test]
fn r_store_3_a_plain_append_is_held_to_its_runs_row() {
    let (store, tenant, origin, run) = fresh_run();
    let journal = Journal::new(&store, &tenant, &origin);
    let first = journal.append(&run, None, None, step("a")).unwrap().head;
    let second = journal.append(&run, Some(first), None, step("b")).unwrap().head;
    let mut raw = store.raw();
    raw.execute(
        "UPDATE runs SET head_seq = 1, head_hash = $3 WHERE tenant = $1 AND run = $2",
        &[&tenant.as_str(), &run.as_str(), &first.hash.as_bytes().as_slice()],
    )
    .unwrap();
    // Seq 3 is not stored: only the runs row can refuse it.
    let refused = journal.append(&run, Some(second), None, step("c"));
    assert!(matches!(refused, Err(JournalError::Conflict { expected_seq: 2, found_seq: 1, .. })), "{refused:?}");
    raw.execute(
        "UPDATE runs SET head_seq = 2, head_hash = $3, sealed = true WHERE tenant = $1 AND run = $2",
        &[&tenant.as_str(), &run.as_str(), &second.hash.as_bytes().as_slice()],
    )
    .unwrap();
    let refused = journal.append(&run, Some(second), None, step("c"));
    assert!(matches!(refused, Err(JournalError::Sealed { .. })), "{refused:?}");
    assert_eq!(records_stored(&mut raw, &tenant, &run), 2, "nothing was written");
}

/// R-STORE-3: no runs row moves without its record, in the one statement of
/// plain appends as in the transaction. A record the database does not
/// write (a trigger behind the plane skips the insert) leaves its run's
/// row at the head whose record is stored, however the append is answered:
/// the next append is never linked to a head with no record.
#[test]
fn r_store_3_a_plain_append_never_moves_a_runs_row_without_its_record() {
    let (store, tenant, origin, run) = fresh_run();
    let journal = Journal::new(&store, &tenant, &origin);
    let first = journal.append(&run, None, None, step("a")).unwrap().head;
    let second = journal.append(&run, Some(first), None, step("b")).unwrap().head;
    let mut raw = store.raw();
    raw.batch_execute(
        "CREATE FUNCTION skip_record() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
         CREATE TRIGGER records_skipped BEFORE INSERT ON records FOR EACH ROW EXECUTE FUNCTION skip_record();",
    )
    .unwrap();
    let answer = journal.append(&run, Some(second), None, step("c"));
    let row = raw
        .query_one(
            "SELECT head_seq, (SELECT max(seq) FROM records WHERE tenant = $1 AND run = $2) FROM runs
             WHERE tenant = $1 AND run = $2",
            &[&tenant.as_str(), &run.as_str()],
        )
        .unwrap();
    let (head, stored): (i64, i64) = (row.get(0), row.get(1));
    assert_eq!(head, stored, "the runs row's head has its record ({answer:?})");
    assert!(
        matches!(&answer, Err(JournalError::StoreDamage { detail, .. }) if detail.contains("trigger or rule")),
        "an append whose record the database skipped did not happen: {answer:?}"
    );
    let new_run = journal_core::RunId::new("run-2").unwrap();
    let created = journal.append(&new_run, None, None, step("a"));
    assert!(matches!(created, Err(JournalError::StoreDamage { .. })), "nor did a new run's first: {created:?}");
    assert!(matches!(store.read_run(&tenant, &new_run), Err(JournalError::NotFound { .. })), "nothing of it stored");
}

/// R-STORE-3: the one statement of plain appends takes its runs' rows in
/// run order, as a batch's transaction does (`lock_runs`): it never holds a
/// run's row while it waits for a run before it. Otherwise two writers'
/// batches that share runs deadlock, and when the victim is a batch's
/// transaction every append of that batch fails. Here another session holds
/// `run-a`; the plane's batch of plain appends to `run-b` and `run-a` waits
/// for it, and must not hold `run-b` meanwhile.
#[test]
fn r_store_3_plain_appends_take_their_runs_rows_in_run_order() {
    let url = store_pg::testkit::fresh_database();
    let store = PgStore::open(&url).unwrap();
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let journal = Journal::new(&store, &tenant, &origin);
    let [a, b, c] = ["run-a", "run-b", "run-c"].map(|name| journal_core::RunId::new(name).unwrap());
    let mut heads = std::collections::HashMap::new();
    for run in [&a, &b, &c, &a] {
        let head = journal.append(run, heads.get(run).copied(), None, step("s")).unwrap().head;
        heads.insert(run.clone(), head);
    }
    let session = || postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let hold = |client: &mut postgres::Client, run: &str| {
        client.batch_execute("BEGIN").unwrap();
        client.execute("SELECT 1 FROM runs WHERE run = $1 FOR UPDATE", &[&run]).unwrap();
    };
    let (mut holds_c, mut holds_a, mut probe) = (session(), session(), session());
    let waiting = |probe: &mut postgres::Client| -> i64 {
        probe
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
                &[],
            )
            .unwrap()
            .get(0)
    };
    let wait_for = |probe: &mut postgres::Client, count: i64| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while waiting(probe) != count {
            assert!(std::time::Instant::now() < deadline, "no session came to wait");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    hold(&mut holds_c, "run-c");
    hold(&mut holds_a, "run-a");
    let held_b = std::thread::scope(|scope| {
        let append = |run: &journal_core::RunId| {
            let (journal, head) = (&journal, heads[run]);
            let run = run.clone();
            scope.spawn(move || journal.append(&run, Some(head), None, step("t")).map(|_| ()))
        };
        // The first batch waits for run-c: the next two appends queue behind it, into one batch.
        let first = append(&c);
        wait_for(&mut probe, 1);
        let second = append(&b);
        std::thread::sleep(std::time::Duration::from_millis(200));
        let third = append(&a);
        std::thread::sleep(std::time::Duration::from_millis(200));
        holds_c.batch_execute("COMMIT").unwrap();
        first.join().unwrap().unwrap();
        // The batch of run-b and run-a now waits for run-a.
        wait_for(&mut probe, 1);
        std::thread::sleep(std::time::Duration::from_millis(100));
        let held_b = probe.execute("SELECT 1 FROM runs WHERE run = 'run-b' FOR UPDATE NOWAIT", &[]);
        holds_a.batch_execute("COMMIT").unwrap();
        second.join().unwrap().unwrap();
        third.join().unwrap().unwrap();
        held_b
    });
    assert!(held_b.is_ok(), "the plane held run-b while it waited for run-a: {held_b:?}");
}

/// R-STORE-3, R-AUD-2: a runs row naming an outcome no build writes (forged
/// behind the plane) is damage to a plain append too, as it is to every
/// append a batch's transaction reads its row for: refused, nothing written.
#[test]
fn r_store_3_a_plain_append_to_a_run_whose_row_names_no_outcome_is_refused_as_damage() {
    let (store, tenant, origin, run) = fresh_run();
    let journal = Journal::new(&store, &tenant, &origin);
    let first = journal.append(&run, None, None, step("a")).unwrap().head;
    let mut raw = store.raw();
    raw.execute(
        "UPDATE runs SET outcome = 'paid-out' WHERE tenant = $1 AND run = $2",
        &[&tenant.as_str(), &run.as_str()],
    )
    .unwrap();
    let refused = journal.append(&run, Some(first), None, step("b"));
    assert!(
        matches!(&refused, Err(JournalError::StoreDamage { detail, .. }) if detail.contains("paid-out")),
        "{refused:?}"
    );
    assert_eq!(records_stored(&mut raw, &tenant, &run), 1, "nothing was written");
}

#[test]
fn a_backend_killed_mid_append_is_a_typed_retryable_error_and_loses_nothing() {
    let store = Arc::new(PgStore::temporary().unwrap());
    let tenant = TenantId::new("t").unwrap();
    let before = seal_runs(&store, &tenant, 0..3);
    // Terminate the committer's connection (every other backend of this database).
    let killed: i64 = store
        .raw()
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(killed >= 1, "the committer's connection was terminated");
    let origin = Origin::new(ORIGIN).unwrap();
    let journal = Journal::new(store.as_ref(), &tenant, &origin);
    let run = journal_core::RunId::new("after-the-kill").unwrap();
    let body = || journal_core::RecordBody::StepStarted(journal_core::record::StepMark { step: "s".into() });
    let err = journal.append(&run, None, None, body()).unwrap_err();
    assert!(err.is_retryable(), "a killed connection is retryable: {err}");
    assert!(matches!(err, JournalError::Io(_)), "{err:?}");
    // Retried, it goes through on a fresh connection.
    journal.append(&run, None, None, body()).unwrap();
    for run in &before {
        assert!(store.read_run(&tenant, run).unwrap().seal.is_some(), "nothing committed was lost");
    }
    assert_eq!(store.read_run(&tenant, &run).unwrap().rows.len(), 1, "exactly one copy of the retried append");
}

/// A database administrator deletes a sealed run's rows, seal and nodes
/// through SQL: the audit with a checkpoint saved before names the anchor;
/// without one it is clean and says deletion was not checked.
#[test]
fn r_aud_3_a_deletion_through_sql_is_found_against_a_saved_checkpoint() {
    let store = Arc::new(PgStore::temporary().unwrap());
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let runs = seal_runs(&store, &tenant, 0..5);
    let key =
        witness::LogKey::new(witness::SignerKey::from_seed(ORIGIN, witness::ALG_ED25519, [5; 32]).unwrap()).unwrap();
    let view = LogView::open(store.as_ref(), &tenant).unwrap();
    let saved = journal_core::log::sign_checkpoint(&origin, view.head().unwrap().tree, &key).unwrap();
    drop(view);
    let newest = store.seal_of(&tenant, &runs[4]).unwrap().unwrap();
    store.delete_run(&tenant, &runs[4]);
    store.rewind_log(&tenant, newest.position);

    let mut inputs = audit::AuditInputs::new(tenant.clone(), origin.clone());
    inputs.log_keys = vec![key.verifier_key()];
    let blind = audit::audit(store.as_ref(), &inputs).unwrap();
    assert!(blind.is_clean(), "{:#?}", blind.findings);
    assert!(blind.not_checked.iter().any(|n| n.what.contains("deletion")));
    inputs
        .anchors
        .push(audit::Anchor::saved("saved.note", saved.note().as_bytes(), &inputs.log_keys, &origin).unwrap());
    let found = audit::audit(store.as_ref(), &inputs).unwrap();
    assert_eq!(found.findings.len(), 1, "{:#?}", found.findings);
    assert_eq!(found.findings[0].code, audit::FindingCode::LogShrank);
    assert_eq!(found.findings[0].anchors, ["saved.note"]);
}

/// Issue 25, schema v4: a database at v3 that already holds seals (made here
/// by taking v4's additions off a database this build wrote) is migrated with
/// its seal count filled in, and the trigger then follows every insert and
/// delete of a seal row, SQL behind the plane's back included, so opening the
/// log still tells a log with holes (R-LOG-7) without counting the seals.
#[test]
fn r_store_3_the_v4_migration_counts_the_seals_stored_and_the_trigger_keeps_counting() {
    let url = store_pg::testkit::fresh_database();
    let tenant = TenantId::new("t").unwrap();
    seal_runs(&Arc::new(PgStore::open(&url).unwrap()), &tenant, 0..5);
    let mut client = store_pg::testkit::connect_declared(&url);
    client
        .batch_execute(
            "DROP TRIGGER seals_counted ON seals; DROP FUNCTION agentplane_count_seals();
             ALTER TABLE log_counter DROP COLUMN seal_count; DROP INDEX heads_entries_by_run;
             UPDATE agentplane_schema SET version = 3;",
        )
        .unwrap();
    let store = Arc::new(PgStore::open(&url).unwrap());
    let counters = store.log_counters(&tenant).unwrap();
    assert_eq!((counters.next_position, counters.seal_count), (5, 5), "the seals stored before are counted");
    assert!(!counters.has_holes());
    seal_runs(&store, &tenant, 5..7);
    assert_eq!(store.log_counters(&tenant).unwrap().seal_count, 7, "new seals are counted");
    client.execute("DELETE FROM seals WHERE tenant = $1 AND position = 2", &[&tenant.as_str()]).unwrap();
    let counters = store.log_counters(&tenant).unwrap();
    assert_eq!((counters.next_position, counters.seal_count), (7, 6), "a row deleted through SQL is counted too");
    assert!(counters.has_holes());
    assert_eq!(LogView::open(store.as_ref(), &tenant).unwrap().source(), journal_core::LogSource::WalkWithHoles);
}

/// The log's nodes, read in one query (not one round trip each), come back in
/// the order asked, repeats included, exactly as the snapshot of the same
/// tables answers; a node deleted through SQL is store damage naming it,
/// never a shorter answer (R-LOG-7).
#[test]
fn r_log_7_log_nodes_come_back_in_the_order_asked_and_a_missing_one_is_damage() {
    let store = Arc::new(PgStore::temporary().unwrap());
    let tenant = TenantId::new("t").unwrap();
    seal_runs(&store, &tenant, 0..11);
    let stored: Vec<tlog::NodeId> = store
        .raw()
        .query("SELECT level, index FROM log_nodes WHERE tenant = $1 ORDER BY index DESC, level", &[&tenant.as_str()])
        .unwrap()
        .into_iter()
        .map(|row| tlog::NodeId::new(u8::try_from(row.get::<_, i16>(0)).unwrap(), row.get::<_, i64>(1) as u64))
        .collect();
    assert!(stored.len() > 11, "interior nodes are stored too");
    let mut asked = stored.clone();
    asked.push(stored[0]);
    let snapshot = store.snapshot(&tenant).unwrap();
    assert_eq!(store.read_log_nodes(&tenant, &asked).unwrap(), snapshot.read_log_nodes(&tenant, &asked).unwrap());
    assert!(store.read_log_nodes(&tenant, &[]).unwrap().is_empty());
    let gone = stored[3];
    store
        .raw()
        .execute(
            "DELETE FROM log_nodes WHERE tenant = $1 AND level = $2 AND index = $3",
            &[&tenant.as_str(), &i16::from(gone.level), &(gone.index as i64)],
        )
        .unwrap();
    let err = store.read_log_nodes(&tenant, &asked).unwrap_err();
    assert!(matches!(err, JournalError::StoreDamage { .. }), "{err:?}");
    assert!(err.to_string().contains(&format!("{gone:?}")), "{err}");
}

/// The V3 migration fills the admission order from the admissions stored;
/// one whose bytes are not UTF-8 JSON with an instant (damage, or a row
/// forged through SQL) gets no row instead of failing the upgrade for the
/// whole database, so an attacker with write access cannot pin a plane to an
/// old schema, and the audit still names that run (R-STORE-3, R-AUD-8).
#[test]
fn r_store_3_the_v3_migration_is_not_blocked_by_an_admission_that_does_not_parse() {
    let url = store_pg::testkit::database_at_version(2);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let admissions: [(&str, &[u8]); 4] = [
        ("run-good", br#"{"kind":"RunAdmitted","at":"2026-01-02T03:04:05.678Z"}"#),
        ("run-not-utf8", b"{\"at\":\"\xff\xfe\"}"),
        ("run-not-json", b"not json at all"),
        ("run-not-an-instant", br#"{"at":"half past nine"}"#),
    ];
    for (run, bytes) in admissions {
        client
            .execute(
                "INSERT INTO records (tenant, run, seq, kind, prev_hash, hash, bytes) \
                 VALUES ('t', $1, 1, 'RunAdmitted', $2, $2, $3)",
                &[&run, &vec![0u8; 32], &bytes],
            )
            .unwrap();
    }
    let store = PgStore::open(&url).expect("the migration runs past the rows that do not parse");
    assert_eq!(store.migrated(), Some((2, store_pg::SCHEMA_VERSION)));
    let rows: Vec<(String, i64)> = client
        .query("SELECT run, at_millis FROM admission_order WHERE tenant = 't' ORDER BY run", &[])
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    assert_eq!(rows, vec![("run-good".to_owned(), 1_767_323_045_678)]);
}
