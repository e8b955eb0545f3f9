//! The PostgreSQL backend's own guards, each held by a test that fails
//! without it (review 86's mutation review): the snapshot's one
//! transaction, the tenant's log lock (seals and heads leaves), the
//! idempotency key's bound and the read-only open's schema version check.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use journal_core::record::StepMark;
use journal_core::snapshot::TenantSnapshot;
use journal_core::{
    Admission, AdmitRequest, Budget, Journal, JournalError, Origin, RecordBody, RunId, RuntimeBuilder, RuntimeError,
    SnapshotSink, Store, StoredRecord, TenantId,
};
use store_pg::PgStore;

const ORIGIN: &str = "pg.test/plane";

fn step(name: &str) -> RecordBody {
    RecordBody::StepStarted(StepMark { step: name.into() })
}

/// A sink that appends a record to `run` once it has the tables, before
/// the records are read: what a snapshot taken while the plane runs meets.
struct AppendMidway<'a> {
    journal: Journal<'a>,
    run: RunId,
    head_in_tables: Option<u64>,
    rows_read: usize,
}

impl SnapshotSink for AppendMidway<'_> {
    fn tables(&mut self, tables: TenantSnapshot) -> Result<(), JournalError> {
        let head = tables.runs[&self.run].head.as_ref().unwrap().head;
        self.head_in_tables = Some(head.seq);
        self.journal.append(&self.run, Some(head), None, step("midway")).unwrap();
        Ok(())
    }

    fn run_records(&mut self, run: RunId, rows: Vec<StoredRecord>) -> Result<(), JournalError> {
        if run == self.run {
            self.rows_read = rows.len();
        }
        Ok(())
    }
}

/// R-AUD-7: the snapshot reads every table in one REPEATABLE READ
/// transaction, so a record committed while it reads is in none of its
/// tables: its runs rows and its records are of one instant, and the audit
/// never finds a run "longer than its head" that an append made meanwhile.
#[test]
fn r_aud_7_a_record_appended_while_the_snapshot_reads_is_in_none_of_its_tables() {
    let store = PgStore::temporary().unwrap();
    let (tenant, origin) = (TenantId::new("t").unwrap(), Origin::new(ORIGIN).unwrap());
    let run = RunId::new("run-1").unwrap();
    let journal = Journal::new(&store, &tenant, &origin);
    let mut head = None;
    for n in 0..3 {
        head = Some(journal.append(&run, head, None, step(&format!("step {n}"))).unwrap().head);
    }
    let mut sink = AppendMidway { journal, run: run.clone(), head_in_tables: None, rows_read: 0 };
    store.snapshot_streamed(&tenant, &mut sink).unwrap();
    assert_eq!(sink.head_in_tables, Some(3));
    assert_eq!(sink.rows_read, 3, "the snapshot read a record committed after its runs rows");
    // The append did commit: the next snapshot has it.
    assert_eq!(store.read_run(&tenant, &run).unwrap().rows.len(), 4);
}

/// R-LOG-5: a seal takes its log position under the tenant's advisory lock,
/// held until commit: while another transaction holds it, the seal waits
/// (positions follow commit order), and it completes once the lock is free.
#[test]
fn r_log_5_a_seal_waits_for_the_tenants_log_lock() {
    let store = Arc::new(PgStore::temporary().unwrap());
    let tenant = TenantId::new("t").unwrap();
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), Origin::new(ORIGIN).unwrap(), None)
        .build()
        .unwrap();
    let request = AdmitRequest { idempotency_key: "job".into(), plan: vec![], budget: Budget::default() };
    let Admission::New(run) = runtime.admit(&tenant, request).unwrap() else { panic!("a new run") };
    let mut raw = store.raw();
    let seals = |raw: &mut postgres::Client| -> i64 {
        raw.query_one("SELECT count(*) FROM seals WHERE tenant = $1", &[&tenant.as_str()]).unwrap().get(0)
    };
    let mut lock = store.raw();
    let mut txn = lock.transaction().unwrap();
    txn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", &[&tenant.as_str()]).unwrap();
    std::thread::scope(|scope| {
        let sealer = scope.spawn(move || run.succeed("done").map(drop));
        store_pg::testkit::await_an_advisory_lock_waiter(&mut raw, "the tenant's log lock");
        assert_eq!(seals(&mut raw), 0, "the seal committed while another transaction held the tenant's log lock");
        assert!(!sealer.is_finished());
        txn.commit().unwrap();
        sealer.join().unwrap().unwrap();
    });
    assert_eq!(seals(&mut raw), 1);
}

/// R-STORE-3: an idempotency key one byte past
/// [`journal_core::append::MAX_IDEMPOTENCY_KEY_BYTES`] is refused with its
/// typed error, and nothing of its run is stored; one at the bound is kept.
#[test]
fn r_store_3_an_idempotency_key_one_byte_past_the_bound_is_refused() {
    let store = Arc::new(PgStore::temporary().unwrap());
    let tenant = TenantId::new("t").unwrap();
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), Origin::new(ORIGIN).unwrap(), None)
        .build()
        .unwrap();
    let bound = journal_core::append::MAX_IDEMPOTENCY_KEY_BYTES;
    let request = |key: String| AdmitRequest { idempotency_key: key, plan: vec![], budget: Budget::default() };
    let refused = runtime.admit(&tenant, request("k".repeat(bound + 1)));
    assert!(
        matches!(refused, Err(RuntimeError::Journal(JournalError::IdempotencyKeyTooLong { bytes, max, .. }))
            if bytes == bound + 1 && max == bound),
        "{:?}",
        refused.map(|_| ())
    );
    assert!(store.runs(&tenant, None).unwrap().is_empty(), "nothing of the refused run was written");
    assert!(matches!(runtime.admit(&tenant, request("k".repeat(bound))).unwrap(), Admission::New(_)));
}

/// R-STORE-3: a read-only open migrates nothing, so a schema of another
/// version is refused with its remedy: a newer one (this build is older than
/// the plane that wrote it) and an older one (the writer's open migrates it).
#[test]
fn r_store_3_a_read_only_open_refuses_a_schema_newer_or_older_than_this_build() {
    let url = store_pg::testkit::fresh_database();
    drop(PgStore::open(&url).unwrap());
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client.execute("UPDATE agentplane_schema SET version = $1", &[&(store_pg::SCHEMA_VERSION + 1)]).unwrap();
    let newer = PgStore::open_read_only(&url).unwrap_err();
    assert!(matches!(newer, store_pg::OpenError::NewerSchema { found, .. } if found == store_pg::SCHEMA_VERSION + 1));
    let older = store_pg::testkit::database_at_version(store_pg::SCHEMA_VERSION - 1);
    let refused = PgStore::open_read_only(&older).unwrap_err();
    assert!(matches!(refused, store_pg::OpenError::OlderSchema { found, .. } if found == store_pg::SCHEMA_VERSION - 1));
    // The writer's open migrates it; then a reader opens it.
    drop(PgStore::open(&older).unwrap());
    drop(PgStore::open_read_only(&older).unwrap());
}

/// R-LOG-5, R-COVER-2: a heads leaf reads the moved runs only once it holds
/// the tenant's log lock, so it enters the heads committed before it, never
/// ones read while an earlier signer still held the lock (a stale head in a
/// later leaf than the fresh one reads as a moved mark deleted).
#[test]
fn r_log_5_a_heads_leaf_reads_the_moved_runs_under_the_tenants_log_lock() {
    let store = PgStore::temporary().unwrap();
    let (tenant, origin) = (TenantId::new("t").unwrap(), Origin::new(ORIGIN).unwrap());
    let run = RunId::new("run-1").unwrap();
    let journal = Journal::new(&store, &tenant, &origin);
    let mut head = None;
    for n in 0..2 {
        head = Some(journal.append(&run, head, None, step(&format!("step {n}"))).unwrap().head);
    }
    let mut lock = store.raw();
    let mut txn = lock.transaction().unwrap();
    txn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", &[&tenant.as_str()]).unwrap();
    let positions = std::thread::scope(|scope| {
        let leaf = scope.spawn(|| store.append_heads(&tenant, &origin));
        store_pg::testkit::await_an_advisory_lock_waiter(&mut store.raw(), "the tenant's log lock");
        journal.append(&run, head, None, step("while the lock is held")).unwrap();
        txn.commit().unwrap();
        leaf.join().unwrap().unwrap()
    });
    let position = *positions.last().unwrap();
    let entries = store.heads_entries(&tenant, position).unwrap();
    let entry = entries.iter().find(|entry| entry.run == run).unwrap();
    assert_eq!(entry.seq, 3, "the heads leaf entered a head read before it held the tenant's log lock");
}

/// R-STORE-1, R-UX-3: a run made large behind the plane (four rows of
/// 1 MiB inserted straight into `records`, then a row naming an encoding no
/// build writes, which a read of the whole run meets): a read bounded at
/// 2 MiB is `RunTooLarge`, naming the run and the bound, without reaching
/// that row; a run within the bound still reads whole.
#[test]
fn r_store_1_r_ux_3_a_run_made_large_behind_the_plane_is_refused_without_reading_it_whole() {
    use journal_core::Outcome;
    use journal_core::testkit::{origin, sample_run, tenant};
    let store = PgStore::temporary().unwrap();
    let (tenant, origin) = (tenant(), origin());
    let (small, large) = (RunId::new("run-small").unwrap(), RunId::new("run-large").unwrap());
    let journal = Journal::new(&store, &tenant, &origin);
    sample_run(&journal, &small, Outcome::Succeeded).unwrap();
    // Failed: an open run, whose records the store's trigger lets in.
    sample_run(&journal, &large, Outcome::Failed).unwrap();
    append_megabyte_rows(&store, &tenant, &large, (8..13).map(|seq| (seq, if seq == 12 { 99 } else { 0 })));
    let whole = store.read_run(&tenant, &large);
    assert!(matches!(whole, Err(JournalError::StoreDamage { .. })), "the whole read meets the raw row: {whole:?}");
    journal_core::testkit::a_read_bounded_at_two_mib_stops_past_the_bound(&store, &tenant, &large, &small);
}

/// Appends to `run` behind the plane, by SQL, one row of 1 MiB at each
/// `(seq, encoding)`, chained on the run's last row (encoding 99 is one no
/// build reads: fetching that row is damage).
fn append_megabyte_rows(
    store: &PgStore,
    tenant: &journal_core::TenantId,
    run: &RunId,
    rows: impl IntoIterator<Item = (i64, i16)>,
) {
    let mut prev = store.read_run(tenant, run).unwrap().rows.last().unwrap().hash;
    let mut client = store.raw();
    for (seq, encoding) in rows {
        let bytes = vec![b'x'; 1 << 20];
        let hash = journal_core::ChainHash::link(&prev, &bytes);
        client
            .execute(
                "INSERT INTO records (tenant, run, seq, kind, prev_hash, hash, bytes, encoding)
                 VALUES ($1, $2, $3, 'StepStarted', $4, $5, $6, $7)",
                &[
                    &tenant.as_str(),
                    &run.as_str(),
                    &seq,
                    &prev.as_bytes().as_slice(),
                    &hash.as_bytes().as_slice(),
                    &bytes,
                    &encoding,
                ],
            )
            .unwrap();
        prev = hash;
    }
}

/// R-STORE-1, R-UX-3: PostgreSQL bounds the read on the server: the row
/// whose stored length takes the run past the bound is sent as its sum
/// alone, never its columns, nor any row after it. Here that row names an
/// encoding no build writes, so a read that fetched it (a server that sent
/// every row, the client's count stopping it after decoding) meets it as
/// damage; the bounded read is `RunTooLarge`. The test above holds the
/// unreadable row after the client's count would stop too, so it passed
/// with the server's bound taken out of the query.
#[test]
fn r_store_1_r_ux_3_postgresql_sends_no_column_of_the_row_that_passes_the_bound() {
    use journal_core::Outcome;
    use journal_core::testkit::{origin, sample_run, tenant};
    let store = PgStore::temporary().unwrap();
    let (tenant, origin) = (tenant(), origin());
    let large = RunId::new("run-large").unwrap();
    sample_run(&Journal::new(&store, &tenant, &origin), &large, Outcome::Failed).unwrap();
    append_megabyte_rows(&store, &tenant, &large, [(8, 0), (9, 99)]);
    let whole = store.read_run(&tenant, &large);
    assert!(matches!(whole, Err(JournalError::StoreDamage { .. })), "the whole read meets the raw row: {whole:?}");
    let bound = (1 << 20) + (64 << 10);
    match store.read_run_within(&tenant, &large, bound) {
        Err(JournalError::RunTooLarge { bound: said, held, .. }) => {
            assert_eq!(said, bound);
            assert!(held > (2 << 20), "the server's sum through the row that passed: {held}");
        }
        other => panic!("the row past the bound was fetched: {other:?}"),
    }
}
