//! The conformance suite every store backend runs (R-STORE-1), with tamper
//! cases made by writing straight into the backend ([`TamperAccess`]).
//!
//! A backend's test file calls [`conformance_tests!`](crate::conformance_tests)
//! with an expression that makes a fresh, empty store; each case becomes its
//! own `#[test]`.

// Test code: its assertions panic by design.
#![allow(clippy::expect_used, clippy::panic, clippy::indexing_slicing, clippy::unwrap_used)]

use tlog::Tree;

mod memory;

use crate::chain::{ChainCheck, ExpectedHead};
use crate::error::{JournalError, TamperKind};
use crate::ids::{RunId, TenantId};
use crate::journal::Journal;
use crate::log::{LogHead, LogSource, LogView};
use crate::record::{
    Budget, Counters, EffectDone, EffectResult, EffectStarted, Outcome, PlanFrozen, RecordBody, RunAdmitted,
    RunConcluded, StepMark, Verdict,
};
use crate::signature::VerifyOptions;
use crate::store::Store;
use crate::version::Upcasters;

/// Raw access to a backend's own tables, for tamper tests only: what someone
/// with write access to the file or the database can do behind the store.
pub trait TamperAccess {
    /// Overwrites a record's stored bytes (leaving its hash as it was).
    fn overwrite_record_bytes(&self, tenant: &TenantId, run: &RunId, seq: u64, bytes: Vec<u8>);
    /// Replaces the whole stored row at `row.seq` (bytes, hashes, signature, columns).
    fn overwrite_row(&self, tenant: &TenantId, run: &RunId, row: crate::chain::StoredRecord);
    /// Deletes one record row.
    fn delete_record(&self, tenant: &TenantId, run: &RunId, seq: u64);
    /// Deletes a whole run: its rows, its runs-table entry, its seal and its index entry.
    fn delete_run(&self, tenant: &TenantId, run: &RunId);
    /// Moves a run in the outcome index (the listing `runs(tenant, Some(..))`
    /// reads), and nothing else.
    fn set_outcome_index(&self, tenant: &TenantId, run: &RunId, outcome: Option<Outcome>);
    /// Sets or clears the runs table's sealed flag.
    fn set_sealed_flag(&self, tenant: &TenantId, run: &RunId, sealed: bool);
    /// Rewrites the head the runs table records.
    fn set_runs_head(&self, tenant: &TenantId, run: &RunId, head: ExpectedHead);
    /// Rewrites a run's seal leaf bytes in the log.
    fn overwrite_seal_leaf(&self, tenant: &TenantId, run: &RunId, leaf: Vec<u8>);
    /// Points an idempotency key at `run`.
    fn set_idempotency(&self, tenant: &TenantId, key: &str, run: &RunId);
    /// Rolls the log counter back to `next_position` and drops the stored
    /// nodes that cover positions at or past it: what hides the newest seal.
    fn rewind_log(&self, tenant: &TenantId, next_position: u64);
    /// Overwrites one stored log node hash.
    fn overwrite_log_node(&self, tenant: &TenantId, id: tlog::NodeId, hash: tlog::NodeHash);
    /// Replaces the tenant's whole log with `seals` (run, leaf bytes) at
    /// dense positions 0, 1, ..., with a matching counter and node hashes:
    /// what a careful hider does after deleting a sealed run, so that no
    /// hole is left for the store to notice.
    fn rewrite_log(&self, tenant: &TenantId, seals: &[(RunId, Vec<u8>)]);
    /// Deletes a run's runs-table row only, leaving its records.
    fn delete_runs_row(&self, tenant: &TenantId, run: &RunId);
    /// Deletes one run's entry of the heads leaf at `position`.
    fn delete_heads_entry(&self, tenant: &TenantId, position: u64, run: &RunId);
    /// Makes the store's newest-heads lookup ([`Store::newest_heads_of`])
    /// answer "none" for `run`, as someone hiding a cut does: the run's
    /// index row where the backend keeps one (redb), otherwise every heads
    /// entry of the run that the lookup reads (PostgreSQL, memory).
    fn hide_newest_heads_of(&self, tenant: &TenantId, run: &RunId);
    /// Makes the store's seal lookup ([`Store::seal_of`], where a run's read
    /// finds its seal) answer "none" for `run`, its leaf left in the log as
    /// it was: the by-run index row (redb), the leaf row's run column
    /// renamed to the heads leaves' reserved id (PostgreSQL, memory).
    fn hide_seal_of(&self, tenant: &TenantId, run: &RunId);
    /// Marks `run` as moved since its last heads entry (or clears the mark):
    /// the next heads leaf then holds its head as the runs table gives it.
    fn set_moved(&self, tenant: &TenantId, run: &RunId, moved: bool);
    /// Adds (`present`) or removes one row of the admission order, and
    /// nothing else.
    fn set_admission(&self, tenant: &TenantId, admission: &crate::store::AdmittedRun, present: bool);
}

/// The node hashes of a dense log of `leaves`, as a backend stores them.
pub fn dense_log_nodes(leaves: &[Vec<u8>]) -> Vec<(tlog::NodeId, tlog::NodeHash)> {
    let mut frontier = tlog::Frontier::new();
    let mut nodes = Vec::new();
    for leaf in leaves {
        frontier
            .append_with(tlog::LeafHash::of(leaf), |id, hash| nodes.push((id, *hash)))
            .expect("a test log is far from 2^64 leaves");
    }
    nodes
}

/// Whether every leaf under `id` lies below `next_position` (a node a
/// rewound log keeps).
pub fn node_ends_before(id: tlog::NodeId, next_position: u64) -> bool {
    id.index
        .checked_add(1)
        .and_then(|end| tlog::NodeId::new(id.level, end).first_leaf())
        .is_some_and(|end| end <= next_position)
}

/// The tenant the cases use.
pub fn tenant() -> TenantId {
    TenantId::new("tenant-a").expect("a valid tenant id")
}

/// The origin of the case tenant's log.
pub const ORIGIN: &str = "testkit.test/plane/tenant-a";

/// [`ORIGIN`], validated.
pub fn origin() -> witness::Origin {
    witness::Origin::new(ORIGIN).expect("a valid origin")
}

fn origin_ref() -> &'static witness::Origin {
    static ORIGIN_ID: std::sync::OnceLock<witness::Origin> = std::sync::OnceLock::new();
    ORIGIN_ID.get_or_init(origin)
}

fn journal<'a>(store: &'a dyn Store, tenant: &'a TenantId) -> Journal<'a> {
    Journal::new(store, tenant, origin_ref())
}

fn log_head(store: &dyn Store, tenant: &TenantId) -> Result<LogHead, JournalError> {
    LogView::open(store, tenant)?.head()
}

fn check(upcasters: &Upcasters) -> ChainCheck<'_> {
    ChainCheck { upcasters, verifier: None, options: VerifyOptions::default() }
}

fn run_id(name: &str) -> RunId {
    RunId::new(name).unwrap_or_else(|err| panic!("test run id {name}: {err}"))
}

/// An attack with the store and no key: `run`'s rows, read from tenant
/// `from`, appended again under tenant `to`, a `RunConcluded` row (the run
/// ended `succeeded`) sealed into `origin`'s log as this build seals. Its rows.
pub fn copy_run_into(
    store: &dyn Store,
    (from, to): (&TenantId, &TenantId),
    origin: &witness::Origin,
    run: &RunId,
) -> Vec<crate::StoredRecord> {
    let rows = store.read_run(from, run).expect("the run to copy").rows;
    let mut head = None;
    for row in &rows {
        let new_head = ExpectedHead { seq: row.seq, hash: row.hash };
        let conclusion = (row.kind == "RunConcluded").then(|| crate::store::Conclusion {
            outcome: Outcome::Succeeded,
            seal: Some(crate::seal::SealLeaf::new(origin, run, new_head)),
        });
        store
            .append(crate::store::AppendRequest {
                tenant: to.clone(),
                run: run.clone(),
                expected_head: head,
                row: row.clone(),
                idempotency_key: None,
                conclusion,
                encoded_bytes: None,
            })
            .expect("the copy appended");
        head = Some(new_head);
    }
    rows
}

/// Appends a small run ending in `outcome`; returns its head.
pub fn sample_run(journal: &Journal<'_>, run: &RunId, outcome: Outcome) -> Result<ExpectedHead, JournalError> {
    let key = format!("ek:{run}-1");
    let mut head = None;
    let bodies = vec![
        (
            None,
            RecordBody::RunAdmitted(RunAdmitted {
                tenant: journal.tenant.to_string(),
                idempotency_key: format!("idem-{run}"),
                budget: Budget::default(),
            }),
        ),
        (None, RecordBody::PlanFrozen(PlanFrozen { steps: vec!["only".into()] })),
        (None, RecordBody::StepStarted(StepMark { step: "only".into() })),
        (
            Some(key.clone()),
            RecordBody::EffectStarted(EffectStarted { step: "only".into(), reserved: Counters::default() }),
        ),
        (
            Some(key),
            RecordBody::EffectDone(EffectDone {
                result: EffectResult::Ok { output: run.to_string() },
                charged: Counters { tokens: 7, ..Counters::default() },
            }),
        ),
        (None, RecordBody::StepFinished(StepMark { step: "only".into() })),
        (
            None,
            RecordBody::RunConcluded(RunConcluded {
                outcome,
                verdict: Verdict::None,
                reason: format!("{outcome} in the testkit"),
            }),
        ),
    ];
    for (effect_key, body) in bodies {
        head = Some(journal.append(run, head, effect_key, body)?.head);
    }
    head.ok_or_else(|| JournalError::InvalidRecord("empty sample".into()))
}

/// R-CHAIN-1/2: appended rows read back in order, with seq from 1, the genesis link, and hash = SHA-256(prev || bytes).
pub fn append_and_read_back(store: &dyn Store) {
    let tenant = tenant();
    let upcasters = Upcasters::builtin();
    let journal = journal(store, &tenant);
    let run = run_id("run-1");
    let head = sample_run(&journal, &run, Outcome::Failed).expect("append");
    let verified = journal.read(&run, check(&upcasters)).expect("verified read");
    assert_eq!(verified.records.len(), 7);
    assert_eq!(verified.head, Some(head));
    assert_eq!(verified.records[0].stored.prev_hash, crate::chain::ChainHash::GENESIS);
    let mut prev = crate::chain::ChainHash::GENESIS;
    for (i, record) in verified.records.iter().enumerate() {
        assert_eq!(record.stored.seq, i as u64 + 1);
        assert_eq!(record.stored.hash, crate::chain::ChainHash::link(&prev, &record.stored.bytes));
        prev = record.stored.hash;
    }
    assert_eq!(verified.outcome, Some(Outcome::Failed));
    assert_eq!(store.run_by_idempotency_key(&tenant, "idem-run-1").expect("lookup"), Some(run.clone()));
    assert_eq!(store.runs(&tenant, None).expect("runs"), vec![run]);
}

/// R-STORE-3: an appender with a stale head gets a typed conflict; nothing is written.
pub fn stale_head_is_a_conflict(store: &dyn Store) {
    let tenant = tenant();
    let journal = journal(store, &tenant);
    let run = run_id("run-1");
    let first =
        journal.append(&run, None, None, RecordBody::PlanFrozen(PlanFrozen { steps: vec![] })).expect("first append");
    journal
        .append(&run, Some(first.head), None, RecordBody::StepStarted(StepMark { step: "a".into() }))
        .expect("second");
    let stale = journal.append(&run, Some(first.head), None, RecordBody::StepStarted(StepMark { step: "fork".into() }));
    assert!(matches!(stale, Err(JournalError::Conflict { expected_seq: 1, found_seq: 2, .. })), "{stale:?}");
    let again = journal.append(&run, None, None, RecordBody::PlanFrozen(PlanFrozen { steps: vec![] }));
    assert!(matches!(again, Err(JournalError::Conflict { .. })), "{again:?}");
    assert_eq!(store.read_run(&tenant, &run).expect("read").rows.len(), 2);
}

/// Every input has a size bound: a record past
/// [`MAX_RECORD_BYTES`](crate::record::MAX_RECORD_BYTES) is refused before it
/// is hashed or signed, and a row that large handed straight to the store is
/// refused at its append gate; nothing is written. A row of exactly the
/// bound is taken and read back whole.
pub fn oversized_record_is_refused(store: &dyn Store) {
    use crate::chain::{ChainHash, StoredRecord};
    use crate::record::MAX_RECORD_BYTES;
    let tenant = tenant();
    let journal = journal(store, &tenant);
    let run = run_id("run-1");
    let first =
        journal.append(&run, None, None, RecordBody::PlanFrozen(PlanFrozen { steps: vec![] })).expect("first append");
    let step = "x".repeat(MAX_RECORD_BYTES);
    let refused = journal.append(&run, Some(first.head), None, RecordBody::StepStarted(StepMark { step }));
    assert!(
        matches!(&refused, Err(JournalError::RecordTooLarge { seq: 2, bytes, max: MAX_RECORD_BYTES, .. }) if *bytes > MAX_RECORD_BYTES),
        "{refused:?}"
    );
    assert!(refused.as_ref().is_err_and(|err| err.to_string().contains("object store")), "says what to do");
    let row_of = |bytes: Vec<u8>| StoredRecord {
        seq: 2,
        kind: "StepStarted".into(),
        effect_key: None,
        prev_hash: first.head.hash,
        hash: ChainHash::link(&first.head.hash, &bytes),
        bytes,
        signature: None,
    };
    let request_of = |row: StoredRecord| crate::store::AppendRequest {
        tenant: tenant.clone(),
        run: run.clone(),
        expected_head: Some(first.head),
        row,
        idempotency_key: None,
        conclusion: None,
        encoded_bytes: None,
    };
    let straight = store.append(request_of(row_of(vec![b'x'; MAX_RECORD_BYTES + 1])));
    assert!(matches!(straight, Err(JournalError::RecordTooLarge { seq: 2, .. })), "{straight:?}");
    assert_eq!(store.read_run(&tenant, &run).expect("read").rows.len(), 1, "nothing was written");
    store.append(request_of(row_of(vec![b'x'; MAX_RECORD_BYTES]))).expect("a row of exactly the bound");
    let rows = store.read_run(&tenant, &run).expect("read").rows;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].bytes.len(), MAX_RECORD_BYTES, "read back whole");
}

/// R-STORE-1, R-UX-3: a bounded read ([`Store::read_run_within`]) hands
/// over a run whose rows hold at most its bound, the same rows as
/// [`Store::read_run`]; a larger run is [`JournalError::RunTooLarge`],
/// naming the run, the bound and what to do, its read stopped at the row
/// that passed the bound (the bytes it held then are at most those rows',
/// not the whole run's, which a read that took everything and checked
/// after gives).
pub fn a_run_past_the_read_bound_is_refused(store: &dyn Store) {
    use crate::chain::StoredRecord;
    let tenant = tenant();
    let upcasters = Upcasters::builtin();
    let journal = journal(store, &tenant);
    let (small, large) = (run_id("run-small"), run_id("run-large"));
    sample_run(&journal, &small, Outcome::Succeeded).expect("a small run");
    let mut head =
        journal.append(&large, None, None, RecordBody::PlanFrozen(PlanFrozen { steps: vec![] })).expect("admit").head;
    for n in 0..4 {
        let step = format!("{n}{}", "x".repeat(256 << 10));
        head = journal.append(&large, Some(head), None, RecordBody::StepStarted(StepMark { step })).expect("step").head;
    }
    let whole = store.read_run(&tenant, &large).expect("read whole");
    let held: Vec<usize> = whole.rows.iter().map(StoredRecord::held_bytes).collect();
    let total: usize = held.iter().sum();
    assert_eq!(store.read_run_within(&tenant, &large, total).expect("a run of exactly the bound"), whole);
    let past = |bound: usize| match store.read_run_within(&tenant, &large, bound) {
        Err(JournalError::RunTooLarge { tenant: t, run, bound: said, held }) => {
            assert_eq!((&t, &run, said), (&tenant, &large, bound));
            held
        }
        other => panic!("a run past a bound of {bound} bytes: {other:?}"),
    };
    // What the read held when it stopped: past the bound, and no more than
    // the rows through the one that passed it hold (a server that sums
    // what it sends may stop on its count, which is never more).
    let stopped_at = |bound: usize, through: usize| {
        let stopped = past(bound);
        assert!(stopped > bound && stopped <= held[..=through].iter().sum(), "{stopped} at a bound of {bound}");
    };
    stopped_at(total - 1, held.len() - 1);
    let two: usize = held[..2].iter().sum();
    stopped_at(two, 2);
    stopped_at(0, 0);
    let said = store.read_run_within(&tenant, &large, two).expect_err("too large").to_string();
    for what in ["run-large", &two.to_string(), "agentplane export run-large -o FILE", "--max-run-bytes"] {
        assert!(said.contains(what), "the error names {what:?}: {said}");
    }
    assert_eq!(
        store.read_run_within(&tenant, &small, 1 << 20).expect("small"),
        store.read_run(&tenant, &small).unwrap()
    );
    let verified = journal.read_within(&small, check(&upcasters), 1 << 20).expect("verified within the bound");
    assert_eq!(verified.records.len(), 7);
    let refused = journal.read_within(&large, check(&upcasters), two);
    assert!(matches!(refused, Err(JournalError::RunTooLarge { .. })), "{refused:?}");
    let missing = store.read_run_within(&tenant, &run_id("run-none"), 1 << 20);
    assert!(matches!(missing, Err(JournalError::NotFound { .. })), "{missing:?}");
}

/// Appends `rows` rows of 1 MiB each to `run` behind the plane, each chained
/// on the one before (unsigned, of no record's shape): a run made large by
/// someone with the store and no key.
pub fn grow_run_behind_the_plane(
    store: &(impl Store + TamperAccess + ?Sized),
    tenant: &TenantId,
    run: &RunId,
    rows: u64,
) {
    use crate::chain::{ChainHash, StoredRecord};
    let stored = store.read_run(tenant, run).expect("the run's rows").rows;
    let (mut prev, first) = (stored.last().expect("a run with rows").hash, stored.len() as u64 + 1);
    for seq in first..first + rows {
        let bytes = vec![b'x'; 1 << 20];
        let hash = ChainHash::link(&prev, &bytes);
        let row = StoredRecord {
            seq,
            kind: "StepStarted".into(),
            effect_key: None,
            prev_hash: prev,
            hash,
            bytes,
            signature: None,
        };
        store.overwrite_row(tenant, run, row);
        prev = hash;
    }
}

/// A read of `large` bounded at 2 MiB is refused as too large, stopped at
/// the row that passed the bound (well before the end of a run grown by
/// several MiB past it), and `small` reads within that bound as it reads whole.
pub fn a_read_bounded_at_two_mib_stops_past_the_bound(
    store: &dyn Store,
    tenant: &TenantId,
    large: &RunId,
    small: &RunId,
) {
    let bound = 2 << 20;
    match store.read_run_within(tenant, large, bound) {
        Err(JournalError::RunTooLarge { run, bound: said, held, .. }) => {
            assert_eq!((&run, said), (large, bound));
            assert!(held > bound && held < (3 << 20) + 4096, "stopped at the row past the bound: {held}");
        }
        other => panic!("a run past the bound: {other:?}"),
    }
    assert_eq!(
        store.read_run_within(tenant, small, bound).expect("small"),
        store.read_run(tenant, small).expect("small")
    );
}

/// R-RUN-2: a sealed run refuses appends in the store itself.
pub fn sealed_run_refuses_appends(store: &dyn Store) {
    let tenant = tenant();
    let journal = journal(store, &tenant);
    let run = run_id("run-1");
    let head = sample_run(&journal, &run, Outcome::Succeeded).expect("sealed run");
    let late = journal.append(&run, Some(head), None, RecordBody::StepStarted(StepMark { step: "late".into() }));
    assert!(matches!(late, Err(JournalError::Sealed { .. })), "{late:?}");
    let stored = store.read_run(&tenant, &run).expect("read");
    assert_eq!(stored.rows.len(), 7);
    assert!(stored.sealed, "the runs table's flag says sealed");
    let open = run_id("run-open");
    sample_run(&journal, &open, Outcome::Failed).expect("open run");
    assert!(!store.read_run(&tenant, &open).expect("read").sealed, "a failed run stays open");
}

/// The plane's signed checkpoints are kept with a compare-and-swap on the
/// last one, so two signers cannot both extend the same predecessor unseen.
pub fn signed_checkpoints_are_kept_in_order(store: &dyn Store) {
    let tenant = tenant();
    let a =
        crate::store::SignedTree { tree: Tree::new(1, tlog::RootHash::from_hash_bytes([1; 32])), note: "a\n".into() };
    let b =
        crate::store::SignedTree { tree: Tree::new(3, tlog::RootHash::from_hash_bytes([3; 32])), note: "b\n".into() };
    assert!(store.signed_checkpoints(&tenant).expect("none yet").is_empty());
    assert_eq!(store.last_signed_checkpoint(&tenant).expect("none yet"), None);
    store.record_signed_checkpoint(&tenant, None, a.clone()).expect("first");
    assert_eq!(store.last_signed_checkpoint(&tenant).expect("last"), Some(a.clone()));
    let stale = store.record_signed_checkpoint(&tenant, None, b.clone());
    assert!(matches!(stale, Err(JournalError::CheckpointConflict { expected: None, found: Some(1), .. })), "{stale:?}");
    store.record_signed_checkpoint(&tenant, Some(a.tree), b.clone()).expect("second");
    assert_eq!(store.last_signed_checkpoint(&tenant).expect("last"), Some(b.clone()));
    assert_eq!(store.signed_checkpoints(&tenant).expect("list"), vec![a, b]);
    let other = TenantId::new("tenant-b").expect("id");
    assert!(store.signed_checkpoints(&other).expect("per tenant").is_empty());
    assert_eq!(store.last_signed_checkpoint(&other).expect("per tenant"), None);
}

/// Each record's hash column by run and seq, in the order asked, `None`
/// where there is no such record (a seq past the run's, a run of another
/// tenant, a run never written, a seq past bigint), whatever the backend
/// (R-COVER-1: what signing holds the newest log leaves to).
pub fn stored_hashes_answer_by_run_and_seq(store: &dyn Store) {
    let tenant = tenant();
    let other = TenantId::new("tenant-b").expect("id");
    let (run, elsewhere, never) = (run_id("run-1"), run_id("run-2"), run_id("run-never"));
    sample_run(&journal(store, &tenant), &run, Outcome::Failed).expect("append");
    sample_run(&journal(store, &other), &elsewhere, Outcome::Failed).expect("append");
    let rows = store.read_run(&tenant, &run).expect("read").rows;
    let last = rows.len() as u64;
    let asked = vec![
        (run.clone(), last),
        (run.clone(), 1),
        (run.clone(), last + 1),
        (elsewhere.clone(), 1),
        (never, 1),
        (run.clone(), u64::MAX),
        (run.clone(), 1),
    ];
    let by_seq = |seq: u64| rows.iter().find(|row| row.seq == seq).map(|row| row.hash);
    let expected = vec![by_seq(last), by_seq(1), None, None, None, None, by_seq(1)];
    assert!(expected[0].is_some() && expected[1].is_some());
    assert_eq!(store.stored_hashes(&tenant, &asked).expect("hashes"), expected);
    assert_eq!(store.stored_hashes(&tenant, &[]).expect("none asked"), Vec::new());
    let theirs = store.read_run(&other, &elsewhere).expect("read").rows;
    assert_eq!(store.stored_hashes(&other, &[(elsewhere, 1)]).expect("hashes"), vec![theirs.first().map(|r| r.hash)]);
}

/// A page's or an export's read of the newest checkpoint rows is the tail
/// of what the store keeps, in the order recorded, of its tenant only,
/// whatever the limit (R-LOG-2: what they show is what was recorded).
pub fn newest_checkpoints_are_the_last_kept_rows(store: &dyn Store) {
    use crate::store::{CheckpointRows, SignedTree};
    let tenant = tenant();
    let other = TenantId::new("tenant-b").expect("id");
    let row = |size: u64, what: &str| SignedTree {
        tree: Tree::new(size, tlog::RootHash::from_hash_bytes([size as u8; 32])),
        note: format!("{what} {size}\n"),
    };
    for kind in [CheckpointRows::Signed, CheckpointRows::Cosigned] {
        assert!(store.newest_checkpoints(&tenant, kind, 3).expect("none yet").is_empty(), "{kind:?}");
    }
    for (place, sizes) in [(&other, [2u64, 4, 6, 8, 10]), (&tenant, [1, 3, 5, 7, 9])] {
        let mut last = None;
        for size in sizes {
            store.record_signed_checkpoint(place, last, row(size, "signed")).expect("signed");
            last = Some(row(size, "signed").tree);
        }
        // Recorded as rounds finish: not in order of size.
        for size in [sizes[0], sizes[2], sizes[1], sizes[4], sizes[3]] {
            store.record_cosigned_checkpoint(place, row(size, "cosigned")).expect("cosigned");
        }
    }
    for kind in [CheckpointRows::Signed, CheckpointRows::Cosigned] {
        for place in [&tenant, &other] {
            let all = match kind {
                CheckpointRows::Signed => store.signed_checkpoints(place),
                CheckpointRows::Cosigned => store.cosigned_checkpoints(place),
            }
            .expect("all");
            assert_eq!(all.len(), 5, "{kind:?}");
            for limit in [0, 1, 3, 5, 9] {
                let newest = store.newest_checkpoints(place, kind, limit).expect("newest");
                assert_eq!(newest, all[all.len().saturating_sub(limit)..], "{kind:?}, the newest {limit}");
            }
        }
    }
}

/// R-RUN-3: several conclusions in one chain; the last is the answer and the index moves.
pub fn outcome_index_follows_the_last_conclusion(store: &dyn Store) {
    let tenant = tenant();
    let upcasters = Upcasters::builtin();
    let journal = journal(store, &tenant);
    let run = run_id("run-1");
    let head = sample_run(&journal, &run, Outcome::Failed).expect("failed run");
    assert_eq!(store.runs(&tenant, Some(Outcome::Failed)).expect("failed"), vec![run.clone()]);
    journal
        .append(
            &run,
            Some(head),
            None,
            RecordBody::RunConcluded(RunConcluded {
                outcome: Outcome::Succeeded,
                verdict: Verdict::None,
                reason: "resumed".into(),
            }),
        )
        .expect("second conclusion");
    assert!(store.runs(&tenant, Some(Outcome::Failed)).expect("failed").is_empty());
    assert_eq!(store.runs(&tenant, Some(Outcome::Succeeded)).expect("succeeded"), vec![run.clone()]);
    let verified = journal.read(&run, check(&upcasters)).expect("read");
    assert_eq!(verified.last_conclusion().map(|c| c.outcome), Some(Outcome::Succeeded));
    assert!(verified.seal.is_some());
}

/// R-AUD-8, issue 27: the admission order lists a tenant's runs newest first,
/// one row per admitted run keyed by its `RunAdmitted`'s `at`; pages follow
/// each other from a cursor without a gap or a repeat; the outcome filter
/// follows the runs table (a resumed run moves); other tenants stay apart;
/// the snapshot holds the same rows.
pub fn admission_order_pages_newest_first(store: &dyn Store) {
    use crate::store::AdmittedRun;
    let tenant = tenant();
    let upcasters = Upcasters::builtin();
    let journal = journal(store, &tenant);
    let outcomes = [Outcome::Succeeded, Outcome::Failed, Outcome::Succeeded, Outcome::Cancelled, Outcome::Failed];
    let mut heads = Vec::new();
    for (i, outcome) in outcomes.iter().enumerate() {
        let run = run_id(&format!("run-{i}"));
        heads.push((run.clone(), sample_run(&journal, &run, *outcome).expect("run")));
    }
    // A run with no admission (a bare chain) is not in the order.
    journal.append(&run_id("bare"), None, None, RecordBody::PlanFrozen(PlanFrozen { steps: vec![] })).expect("bare");
    let other = TenantId::new("tenant-other").expect("id");
    let origin_other = witness::Origin::new("testkit.test/plane/tenant-other").expect("origin");
    sample_run(&Journal::new(store, &other, &origin_other), &run_id("elsewhere"), Outcome::Succeeded).expect("other");

    let all = store.admissions(&tenant, None, None, 100).expect("admissions");
    let mut expected: Vec<AdmittedRun> = heads
        .iter()
        .map(|(run, _)| {
            let verified = journal.read(run, check(&upcasters)).expect("read");
            AdmittedRun { at: verified.records[0].record.at, run: run.clone() }
        })
        .collect();
    expected.sort_by(|a, b| b.cmp(a));
    assert_eq!(all, expected, "one row per admitted run, newest first, at its RunAdmitted's instant");
    let mut paged = Vec::new();
    let mut cursor: Option<AdmittedRun> = None;
    loop {
        let page = store.admissions(&tenant, cursor.as_ref(), None, 2).expect("page");
        assert!(page.len() <= 2, "a page holds at most its limit");
        let Some(last) = page.last().cloned() else { break };
        paged.extend(page);
        cursor = Some(last);
    }
    assert_eq!(paged, expected, "pages from a cursor neither skip nor repeat");
    let failed = store.admissions(&tenant, None, Some(Outcome::Failed), 100).expect("failed");
    assert_eq!(
        failed,
        expected.iter().filter(|a| a.run == run_id("run-1") || a.run == run_id("run-4")).cloned().collect::<Vec<_>>()
    );
    let first_failed = store.admissions(&tenant, None, Some(Outcome::Failed), 1).expect("one");
    assert_eq!(first_failed.len(), 1, "the limit holds under a filter");
    // The failed run-1 is resumed and succeeds: it moves between listings.
    let (run, head) = heads[1].clone();
    journal
        .append(
            &run,
            Some(head),
            None,
            RecordBody::RunConcluded(RunConcluded {
                outcome: Outcome::Succeeded,
                verdict: Verdict::None,
                reason: "resumed".into(),
            }),
        )
        .expect("second conclusion");
    let failed = store.admissions(&tenant, None, Some(Outcome::Failed), 100).expect("failed");
    assert_eq!(failed.iter().map(|a| a.run.clone()).collect::<Vec<_>>(), vec![run_id("run-4")]);
    let succeeded = store.admissions(&tenant, None, Some(Outcome::Succeeded), 100).expect("succeeded");
    assert!(succeeded.iter().any(|a| a.run == run), "{succeeded:?}");
    assert_eq!(store.admissions(&tenant, None, None, 100).expect("all"), expected, "the order itself never moves");
    let snapshot = store.snapshot(&tenant).expect("snapshot");
    assert_eq!(snapshot.admissions.iter().rev().cloned().collect::<Vec<_>>(), expected, "the snapshot holds the rows");
    assert_eq!(snapshot.admissions(&tenant, None, None, 100).expect("snapshot"), expected);
    let elsewhere = store.admissions(&other, None, None, 100).expect("other");
    assert_eq!(elsewhere.iter().map(|a| a.run.clone()).collect::<Vec<_>>(), vec![run_id("elsewhere")]);
    assert!(store.admissions(&TenantId::new("tenant-none").expect("id"), None, None, 10).expect("none").is_empty());
}

/// R-LOG-2/5: seals take positions 0, 1, 2, ...; every run proves inclusion; the log only grows.
pub fn log_checkpoints_and_proofs(store: &dyn Store) {
    let tenant = tenant();
    let journal = journal(store, &tenant);
    let mut trees: Vec<Tree> = vec![log_head(store, &tenant).expect("empty head").tree];
    assert_eq!(trees[0], Tree::empty());
    let runs: Vec<RunId> = (0..9).map(|i| run_id(&format!("run-{i}"))).collect();
    for (i, run) in runs.iter().enumerate() {
        let outcome = if i % 3 == 2 { Outcome::Failed } else { Outcome::Succeeded };
        sample_run(&journal, run, outcome).expect("run");
        trees.push(log_head(store, &tenant).expect("head").tree);
    }
    let head = log_head(store, &tenant).expect("head");
    assert_eq!(head.source, LogSource::StoredNodes);
    assert_eq!(head.tree.size, 6, "six of nine runs sealed");
    let mut position = 0;
    for (i, run) in runs.iter().enumerate() {
        let seal = store.seal_of(&tenant, run).expect("seal lookup");
        if i % 3 == 2 {
            assert!(seal.is_none());
            continue;
        }
        let seal = seal.expect("sealed");
        assert_eq!(seal.position, position, "positions follow seal order");
        assert_eq!(store.seal_at(&tenant, position).expect("by position"), Some(seal), "one leaf, either key");
        let inclusion = LogView::open(store, &tenant).and_then(|view| view.inclusion(run)).expect("inclusion");
        assert_eq!(inclusion.index, position);
        head.tree.verify_inclusion(&inclusion.leaf, inclusion.index, &inclusion.proof).expect("proof verifies");
        position += 1;
    }
    // One view serves consistency between any two sizes it holds, not only
    // to its newest (a witness round must not fail because a seal landed).
    let view = LogView::open(store, &tenant).expect("view");
    for old in trees.iter().filter(|t| t.size > 0) {
        for new in trees.iter().filter(|t| t.size >= old.size) {
            let consistency = view.consistency(old.size, new.size).expect("consistency");
            assert_eq!(consistency.new, *new, "the view's root at {} is the head seen then", new.size);
            new.verify_extends(old, &consistency.proof).expect("the log only grew");
        }
    }
    let beyond = view.consistency(1, head.tree.size + 1);
    assert!(matches!(beyond, Err(JournalError::NoConsistencyProof { size: 6, .. })), "{beyond:?}");
    // A view opened before more seals still proves what it saw.
    sample_run(&journal, &run_id("run-late"), Outcome::Succeeded).expect("late run");
    let late = view.consistency(2, head.tree.size).expect("an older view still proves");
    head.tree.verify_extends(&late.old, &late.proof).expect("verifies");
    // An open run is "not sealed", a missing run "not found": two answers.
    let open = view.inclusion(&runs[2]);
    assert!(matches!(open, Err(JournalError::NotSealed { .. })), "{open:?}");
    let missing = view.inclusion(&run_id("no-such-run"));
    assert!(matches!(missing, Err(JournalError::NotFound { .. })), "{missing:?}");
    assert_eq!(store.seal_at(&tenant, 1_000).expect("past the end"), None);
    // Heads leaves (issue 20): the open run is covered by the first, moved,
    // then covered by the second, and the newest-heads lookup follows it.
    let key = witness::LogKey::new(
        witness::SignerKey::from_seed(origin().as_str(), witness::ALG_ED25519, [8; 32]).expect("key"),
    )
    .expect("log key");
    crate::log::sign_current_head(store, &tenant, &origin(), &key, None).expect("first heads leaf");
    let first = store.newest_heads_of(&tenant, &runs[2]).expect("lookup").expect("the open run is covered");
    assert!(store.seal_at(&tenant, first).expect("the heads leaf").is_some_and(|leaf| leaf.run.is_heads_leaf()));
    let head = store.read_run(&tenant, &runs[2]).expect("read").head;
    journal
        .append(&runs[2], head, None, crate::RecordBody::StepStarted(crate::record::StepMark { step: "again".into() }))
        .expect("move");
    crate::log::sign_current_head(store, &tenant, &origin(), &key, None).expect("second heads leaf");
    let second = store.newest_heads_of(&tenant, &runs[2]).expect("lookup").expect("covered");
    assert!(second > first, "the newest leaf holding it: {first} then {second}");
    // What resume holds a run to (R-RUN-5) is read from the leaves
    // themselves, whatever the size of each read, and agrees with the index.
    let moved = store.read_run(&tenant, &runs[2]).expect("read").head.expect("a head");
    let size = LogView::open(store, &tenant).and_then(|view| view.head()).expect("head").tree.size;
    // A sealed run is in no heads leaf: its seal leaf holds its head.
    let sealed = store.read_run(&tenant, &runs[0]).expect("read").head.expect("a head");
    let seal = store.seal_of(&tenant, &runs[0]).expect("lookup").expect("sealed").position;
    for per_read in [1, 2, 3, 4096] {
        let mut covered = crate::heads::CoveredHeads::reading_at_most(per_read);
        covered.catch_up(store, &tenant, &origin(), None).expect("the covered heads");
        let longest = covered.longest(&runs[2]).map(|(position, entry)| (*position, entry.seq, entry.hash));
        assert_eq!(longest, Some((second, moved.seq, moved.hash)), "read {per_read} leaves at a time");
        let longest = covered.longest(&runs[0]).map(|(position, entry)| (*position, entry.seq, entry.hash));
        assert_eq!(longest, Some((seal, sealed.seq, sealed.hash)), "a sealed run is held to its seal leaf");
        assert_eq!(covered.leaves_read(), size, "read {per_read} leaves at a time");
    }
    assert_eq!(store.newest_heads_of(&tenant, &run_id("no-such-run")).expect("lookup"), None);
    let proven = LogView::open(store, &tenant).and_then(|view| view.head_inclusion(&runs[2])).expect("head proof");
    assert_eq!(proven.index, second);
    proven.verify().expect("the head proof verifies");
}

/// R-STORE-4: tenants have their own runs, logs and positions.
pub fn tenants_are_separate(store: &dyn Store) {
    let a = tenant();
    let b = TenantId::new("tenant-b").expect("id");
    let run = run_id("same-name");
    sample_run(&journal(store, &a), &run, Outcome::Succeeded).expect("a");
    let origin_b = witness::Origin::new("testkit.test/plane/tenant-b").expect("origin");
    let journal_b = Journal::new(store, &b, &origin_b);
    sample_run(&journal_b, &run, Outcome::Succeeded).expect("b");
    assert_eq!(store.seal_of(&a, &run).expect("a").map(|s| s.position), Some(0));
    assert_eq!(store.seal_of(&b, &run).expect("b").map(|s| s.position), Some(0));
    assert_ne!(log_head(store, &a).expect("a").tree.root, log_head(store, &b).expect("b").tree.root);
    assert_eq!(store.tenants().expect("tenants"), vec![a, b]);
}

/// R-STORE-1 (issue 21): a snapshot holds exactly what the store's own reads
/// give, every index row included, and reads through it like the store.
pub fn snapshot_is_the_store_at_one_instant(store: &dyn Store) {
    let tenant = tenant();
    let journal = journal(store, &tenant);
    let runs = [run_id("run-a"), run_id("run-b"), run_id("run-c")];
    sample_run(&journal, &runs[0], Outcome::Succeeded).expect("a");
    sample_run(&journal, &runs[1], Outcome::Failed).expect("b");
    sample_run(&journal, &runs[2], Outcome::Cancelled).expect("c");
    let other = TenantId::new("tenant-other").expect("id");
    let origin_other = witness::Origin::new("testkit.test/plane/tenant-other").expect("origin");
    sample_run(&Journal::new(store, &other, &origin_other), &run_id("elsewhere"), Outcome::Succeeded)
        .expect("other tenant");

    let snapshot = store.snapshot(&tenant).expect("snapshot");
    assert_eq!(snapshot.runs.keys().cloned().collect::<Vec<_>>(), runs.to_vec(), "only this tenant's runs");
    for run in &runs {
        let read = store.read_run(&tenant, run).expect("read");
        assert_eq!(snapshot.read_run(&tenant, run).expect("snapshot read"), read, "{run}");
        assert!(snapshot.outcome_index.contains(&(read.outcome.expect("concluded"), run.clone())), "{run}");
    }
    assert_eq!(snapshot.outcome_index.len(), runs.len(), "one index row per concluded run");
    assert_eq!(snapshot.idempotency.len(), runs.len(), "one idempotency row per admission");
    for (key, run) in &snapshot.idempotency {
        assert_eq!(store.run_by_idempotency_key(&tenant, key).expect("key").as_ref(), Some(run));
    }
    assert_eq!(snapshot.seals(&tenant).expect("seals"), store.seals(&tenant).expect("seals"));
    assert_eq!(snapshot.log_counters(&tenant).expect("c"), store.log_counters(&tenant).expect("c"));
    assert_eq!(log_head(&snapshot, &tenant).expect("head"), log_head(store, &tenant).expect("head"));
    let empty = store.snapshot(&TenantId::new("tenant-none").expect("id")).expect("empty");
    assert!(empty.is_empty(), "a tenant with nothing stored has an empty snapshot");

    // Streamed, the same snapshot comes in the promised order: the tables
    // (no rows in them) before any records, each run once, seqs in order.
    let mut order = StreamOrder::default();
    store.snapshot_streamed(&tenant, &mut order).expect("streamed");
    let mut tables = order.tables.expect("the tables came");
    assert!(tables.runs.values().all(|run| run.rows.is_empty()), "the tables hold no records");
    assert_eq!(order.runs.iter().map(|(run, _)| run.clone()).collect::<Vec<_>>(), runs.to_vec(), "each run once");
    for (run, rows) in order.runs {
        let seqs: Vec<u64> = rows.iter().map(|row| row.seq).collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "{run}'s records in seq order");
        tables.runs.entry(run).or_default().rows = rows;
    }
    assert_eq!(tables, snapshot, "streamed and collected, one snapshot");

    // A sink's bound on one run's rows (what the audit holds): a run past
    // it comes as its size and hash columns, never as its records; a run
    // at it comes whole.
    let held = |run: &RunId| -> usize { snapshot.runs[run].rows.iter().map(crate::StoredRecord::held_bytes).sum() };
    let smallest = runs.iter().map(held).min().expect("runs");
    let mut bounded = StreamOrder { bound: Some(smallest), ..StreamOrder::default() };
    store.snapshot_streamed(&tenant, &mut bounded).expect("streamed with a bound");
    for run in &runs {
        let rows = &snapshot.runs[run].rows;
        let whole = bounded.runs.iter().find(|(seen, _)| seen == run);
        let kept = bounded.too_large.iter().find(|(seen, _)| seen == run);
        if held(run) > smallest {
            let (_, kept) = kept.unwrap_or_else(|| panic!("{run} is past the bound: {:?}", bounded.runs));
            assert!(whole.is_none(), "{run} comes once");
            assert_eq!(kept.records, rows.len() as u64, "{run}");
            assert_eq!(kept.bytes, held(run) as u64, "{run}");
            assert_eq!(kept.hashes, rows.iter().map(|row| (row.seq, row.hash)).collect::<Vec<_>>(), "{run}");
        } else {
            assert_eq!(whole.map(|(_, rows)| rows), Some(rows), "{run} at the bound comes whole");
            assert!(kept.is_none(), "{run} comes once");
        }
    }
    assert!(!bounded.too_large.is_empty(), "some run is past the smallest one's size");
}

/// Checks [`Store::snapshot_streamed`]'s order as it is delivered.
#[derive(Default)]
struct StreamOrder {
    tables: Option<crate::TenantSnapshot>,
    runs: Vec<(RunId, Vec<crate::StoredRecord>)>,
    /// The bound the sink names on one run's rows.
    bound: Option<usize>,
    /// The runs past it.
    too_large: Vec<(RunId, crate::RunTooLarge)>,
}

impl crate::SnapshotSink for StreamOrder {
    fn tables(&mut self, tables: crate::TenantSnapshot) -> Result<(), JournalError> {
        assert!(self.tables.is_none() && self.runs.is_empty(), "the tables come first, once");
        self.tables = Some(tables);
        Ok(())
    }

    fn run_records(&mut self, run: RunId, rows: Vec<crate::StoredRecord>) -> Result<(), JournalError> {
        assert!(self.tables.is_some(), "records after the tables");
        assert!(self.runs.iter().all(|(seen, _)| *seen != run), "{run} comes once");
        self.runs.push((run, rows));
        Ok(())
    }

    fn run_bytes_bound(&self) -> Option<usize> {
        self.bound
    }

    fn run_too_large(&mut self, run: RunId, kept: crate::RunTooLarge) -> Result<(), JournalError> {
        assert!(self.tables.is_some(), "records after the tables");
        self.too_large.push((run, kept));
        Ok(())
    }
}

/// R-CHAIN-5: a record's bytes edited in the backend are found, naming the run and seq.
pub fn edited_record_is_tamper(store: &(impl Store + TamperAccess)) {
    let tenant = tenant();
    let upcasters = Upcasters::builtin();
    let journal = journal(store, &tenant);
    let run = run_id("run-1");
    sample_run(&journal, &run, Outcome::Failed).expect("run");
    let original = store.read_run(&tenant, &run).expect("read").rows[4].bytes.clone();
    let edited = String::from_utf8_lossy(&original).replace("\"tokens\":7", "\"tokens\":1").into_bytes();
    assert_ne!(edited, original);
    store.overwrite_record_bytes(&tenant, &run, 5, edited);
    let err = journal.read(&run, check(&upcasters)).expect_err("edit found");
    assert!(
        matches!(&err, JournalError::Tamper { seq: 5, kind: TamperKind::HashMismatch, run: r, .. } if *r == run),
        "{err:?}"
    );
    assert!(err.is_tamper() && !err.is_build_skew());
}

/// R-CHAIN-5: a record deleted in the backend is found.
pub fn deleted_record_is_tamper(store: &(impl Store + TamperAccess)) {
    let tenant = tenant();
    let upcasters = Upcasters::builtin();
    let journal = journal(store, &tenant);
    let run = run_id("run-1");
    sample_run(&journal, &run, Outcome::Failed).expect("run");
    store.delete_record(&tenant, &run, 3);
    let err = journal.read(&run, check(&upcasters)).expect_err("deletion found");
    assert!(matches!(err, JournalError::Tamper { seq: 3, kind: TamperKind::Gap, .. }), "{err:?}");
    // The tail record deleted: the recorded head shows it.
    let run2 = run_id("run-2");
    sample_run(&journal, &run2, Outcome::Failed).expect("run");
    store.delete_record(&tenant, &run2, 7);
    let err = journal.read(&run2, check(&upcasters)).expect_err("tail deletion found");
    assert!(matches!(err, JournalError::Tamper { seq: 7, kind: TamperKind::Gap, .. }), "{err:?}");
}

/// R-LOG-6/7: a whole sealed run deleted is found only against a checkpoint
/// saved before; every surviving run still proves inclusion; the deleted cannot.
pub fn deleted_sealed_run_breaks_consistency(store: &(impl Store + TamperAccess)) {
    let tenant = tenant();
    let upcasters = Upcasters::builtin();
    let journal = journal(store, &tenant);
    let runs: Vec<RunId> = (0..6).map(|i| run_id(&format!("run-{i}"))).collect();
    for run in &runs {
        sample_run(&journal, run, Outcome::Succeeded).expect("run");
    }
    let saved = log_head(store, &tenant).expect("head").tree;
    store.delete_run(&tenant, &runs[2]);
    // Every remaining chain verifies: the chain alone cannot see a deleted run.
    for run in runs.iter().filter(|r| **r != runs[2]) {
        journal.read(run, check(&upcasters)).expect("survivor verifies");
    }
    let after = log_head(store, &tenant).expect("head");
    assert_eq!(after.source, LogSource::WalkWithHoles, "the store notices the hole");
    assert_eq!(after.tree.size, 5);
    // The saved checkpoint is not extended by the log as it is now.
    let view = LogView::open(store, &tenant).expect("view");
    assert_eq!(view.source(), LogSource::WalkWithHoles);
    let extends = view.consistency(saved.size, view.size());
    assert!(matches!(extends, Err(JournalError::NoConsistencyProof { .. })), "the log shrank below: {extends:?}");
    for run in runs.iter().filter(|r| **r != runs[2]) {
        let inclusion = view.inclusion(run).expect("inclusion");
        after
            .tree
            .verify_inclusion(&inclusion.leaf, inclusion.index, &inclusion.proof)
            .expect("survivor proves inclusion");
    }
    let gone = view.inclusion(&runs[2]);
    assert!(matches!(gone, Err(JournalError::NotFound { .. })), "the deleted run cannot prove inclusion: {gone:?}");
}

/// The plane never signs a rollback: a tree with holes, a shrunken log, or
/// another root at a size it signed is refused before anything is signed,
/// and nothing is recorded; honest growth is signed and recorded once.
pub fn the_plane_never_signs_a_rollback(store: &(impl Store + TamperAccess)) {
    use crate::log::sign_head;
    let tenant = tenant();
    let journal = journal(store, &tenant);
    let origin = origin();
    let signer = witness::SignerKey::from_seed(ORIGIN, witness::ALG_ED25519, [8; 32]).expect("key");
    let key = witness::LogKey::new(signer).expect("log key");
    let sign = || LogView::open(store, &tenant).and_then(|view| sign_head(store, &view, &origin, &key, None));
    let runs: Vec<RunId> = (0..4).map(|i| run_id(&format!("run-{i}"))).collect();
    for run in &runs[..3] {
        sample_run(&journal, run, Outcome::Succeeded).expect("run");
    }
    assert_eq!(sign().expect("first").checkpoint().tree().size, 3);
    sign().expect("the same tree again");
    assert_eq!(store.signed_checkpoints(&tenant).expect("list").len(), 1, "the same tree is recorded once");
    sample_run(&journal, &runs[3], Outcome::Succeeded).expect("run");
    assert_eq!(sign().expect("growth").checkpoint().tree().size, 4);
    assert_eq!(store.signed_checkpoints(&tenant).expect("list").len(), 2);

    store.delete_run(&tenant, &runs[3]);
    store.rewind_log(&tenant, 3);
    let shrunk = sign();
    assert!(
        matches!(&shrunk, Err(JournalError::WouldSignRollback { reason, .. }) if reason.contains("shrank")),
        "{shrunk:?}"
    );
    sample_run(&journal, &run_id("run-replacement"), Outcome::Succeeded).expect("run");
    let rewritten = sign();
    assert!(
        matches!(&rewritten, Err(JournalError::WouldSignRollback { reason, .. }) if reason.contains("another root")),
        "{rewritten:?}"
    );
    store.delete_run(&tenant, &runs[1]);
    let holes = sign();
    assert!(
        matches!(&holes, Err(JournalError::WouldSignRollback { reason, .. }) if reason.contains("holes")),
        "{holes:?}"
    );
    assert!(holes.as_ref().is_err_and(JournalError::is_tamper));
    assert_eq!(store.signed_checkpoints(&tenant).expect("list").len(), 2, "nothing was recorded");
}

/// Generates one `#[test]` per conformance case for a backend.
///
/// ```text
/// journal_core::conformance_tests!(my_backend::Store::open_temporary());
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        #[test]
        fn conformance_r_chain_1_append_and_read_back() {
            $crate::testkit::append_and_read_back(&$make);
        }
        #[test]
        fn conformance_r_store_3_stale_head_is_a_conflict() {
            $crate::testkit::stale_head_is_a_conflict(&$make);
        }
        #[test]
        fn conformance_an_oversized_record_is_refused_and_nothing_is_written() {
            $crate::testkit::oversized_record_is_refused(&$make);
        }
        #[test]
        fn conformance_r_store_1_r_ux_3_a_run_past_the_read_bound_is_refused() {
            $crate::testkit::a_run_past_the_read_bound_is_refused(&$make);
        }
        #[test]
        fn conformance_r_run_2_sealed_run_refuses_appends() {
            $crate::testkit::sealed_run_refuses_appends(&$make);
        }
        #[test]
        fn conformance_signed_checkpoints_are_kept_in_order() {
            $crate::testkit::signed_checkpoints_are_kept_in_order(&$make);
        }
        #[test]
        fn conformance_r_cover_1_stored_hashes_answer_by_run_and_seq() {
            $crate::testkit::stored_hashes_answer_by_run_and_seq(&$make);
        }
        #[test]
        fn conformance_r_log_2_newest_checkpoints_are_the_last_kept_rows() {
            $crate::testkit::newest_checkpoints_are_the_last_kept_rows(&$make);
        }
        #[test]
        fn conformance_r_run_3_outcome_index_follows_the_last_conclusion() {
            $crate::testkit::outcome_index_follows_the_last_conclusion(&$make);
        }
        #[test]
        fn conformance_r_log_2_checkpoints_and_proofs() {
            $crate::testkit::log_checkpoints_and_proofs(&$make);
        }
        #[test]
        fn conformance_r_aud_8_admission_order_pages_newest_first() {
            $crate::testkit::admission_order_pages_newest_first(&$make);
        }
        #[test]
        fn conformance_r_store_4_tenants_are_separate() {
            $crate::testkit::tenants_are_separate(&$make);
        }
        #[test]
        fn conformance_r_store_1_snapshot_is_the_store_at_one_instant() {
            $crate::testkit::snapshot_is_the_store_at_one_instant(&$make);
        }
        #[test]
        fn conformance_r_chain_5_edited_record_is_tamper() {
            $crate::testkit::edited_record_is_tamper(&$make);
        }
        #[test]
        fn conformance_r_chain_5_deleted_record_is_tamper() {
            $crate::testkit::deleted_record_is_tamper(&$make);
        }
        #[test]
        fn conformance_r_log_6_deleted_sealed_run_breaks_consistency() {
            $crate::testkit::deleted_sealed_run_breaks_consistency(&$make);
        }
        #[test]
        fn conformance_the_plane_never_signs_a_rollback() {
            $crate::testkit::the_plane_never_signs_a_rollback(&$make);
        }
        #[test]
        fn runtime_r_run_1_every_outcome_and_its_listing() {
            $crate::testkit_runtime::every_outcome_and_its_listing(std::sync::Arc::new($make));
        }
        #[test]
        fn runtime_r_run_3_failed_run_resumed_to_success() {
            $crate::testkit_runtime::failed_run_resumed_to_success(std::sync::Arc::new($make));
        }
        #[test]
        fn runtime_r_run_4_exhaustion_redelivery_and_raised_ceiling() {
            $crate::testkit_runtime::exhaustion_redelivery_and_raised_ceiling(std::sync::Arc::new($make));
        }
        #[test]
        fn runtime_r_run_4_count_ceilings_match_cost_and_resume_appends_nothing() {
            $crate::testkit_runtime::count_ceilings_match_cost_and_resume_appends_nothing(std::sync::Arc::new($make));
        }
        #[test]
        fn runtime_r_run_5_resume_reads_steps_back() {
            $crate::testkit_runtime::resume_reads_steps_back(std::sync::Arc::new($make));
        }
        #[test]
        fn runtime_r_run_5_resume_records_again_only_the_steps_it_is_in() {
            $crate::testkit_runtime::resume_records_again_only_the_steps_it_is_in(std::sync::Arc::new($make));
        }
        #[test]
        fn runtime_r_run_5_withhold_and_lift() {
            $crate::testkit_runtime::withhold_and_lift(std::sync::Arc::new($make));
        }
        #[test]
        fn runtime_r_run_5_crash_mid_effect_quarantines_and_answers_continue() {
            $crate::testkit_runtime::crash_mid_effect_quarantines_and_answers_continue(std::sync::Arc::new($make));
        }
        #[test]
        fn runtime_r_store_3_second_runtime_conflicts() {
            $crate::testkit_runtime::second_runtime_conflicts(std::sync::Arc::new($make));
        }
        #[test]
        fn runtime_r_run_7_cost_is_read_from_the_journal() {
            $crate::testkit_runtime::cost_is_read_from_the_journal(std::sync::Arc::new($make));
        }
        #[test]
        fn runtime_r_sig_4_signed_and_unsigned_planes() {
            $crate::testkit_runtime::signed_and_unsigned_planes(std::sync::Arc::new($make));
        }
        #[test]
        fn runtime_unknown_tenant_is_refused() {
            $crate::testkit_runtime::unknown_tenant_is_refused(std::sync::Arc::new($make));
        }
    };
}

/// A plane's high-water mark kept in memory, for tests: what the CLI keeps
/// beside its key file, without the file. One mark for every origin; it
/// only ever rises.
#[derive(Debug, Default)]
pub struct MemoryHighWater(std::sync::Mutex<Option<crate::log::HighWaterMark>>);

impl MemoryHighWater {
    /// A mark that cannot be read (the file damaged or gone).
    pub fn lost(reason: &str) -> Self {
        Self(std::sync::Mutex::new(Some(crate::log::HighWaterMark::Lost { reason: reason.into() })))
    }

    /// Loses the mark under whoever holds it (its file deleted).
    pub fn lose(&self, reason: &str) {
        *self.0.lock().expect("the mark's lock") = Some(crate::log::HighWaterMark::Lost { reason: reason.into() });
    }
}

impl crate::log::HighWater for MemoryHighWater {
    fn last(&self, _: &witness::Origin) -> Result<crate::log::HighWaterMark, crate::log::HighWaterError> {
        Ok(self.0.lock().expect("the mark's lock").clone().unwrap_or(crate::log::HighWaterMark::Never))
    }

    fn raise(
        &self,
        _: &witness::Origin,
        seen: &crate::log::HighWaterMark,
        tree: Tree,
    ) -> Result<crate::log::Raised, crate::log::HighWaterError> {
        let mut mark = self.0.lock().expect("the mark's lock");
        let now = mark.clone().unwrap_or(crate::log::HighWaterMark::Never);
        if now == crate::log::HighWaterMark::Signed(tree) {
            return Ok(crate::log::Raised::Raised);
        }
        let backwards = matches!(now, crate::log::HighWaterMark::Signed(old) if old.size > tree.size);
        if backwards || !now.unchanged_since(seen) {
            return Ok(crate::log::Raised::Moved(now));
        }
        *mark = Some(crate::log::HighWaterMark::Signed(tree));
        Ok(crate::log::Raised::Raised)
    }

    fn location(&self) -> String {
        "memory".into()
    }
}
