//! The property search for wrong verdicts (review 23 on redb, review 25 on
//! PostgreSQL), `#[path]`-included by `crates/audit/tests/tamper_search.rs`
//! (redb) and `crates/store-pg/tests/tamper_search.rs`. A plane on the
//! backend runs random runs of every outcome (sealed three ways,
//! failed, exhausted, withheld, quarantined, left running, forked, moved
//! after a checkpoint), signs checkpoints at random points (some saved by an
//! observer: the anchors), then an attacker with the store and no key makes
//! random store-level mutations: records cut back, deleted or rewritten (and
//! re-chained), derived rows forged or deleted, seal and heads leaves removed
//! with the log rebuilt dense, node hashes overwritten, the counter rolled
//! back, and what only the backend's own access allows ([`RawAttacks`]: SQL
//! on PostgreSQL). The oracle, from the plane before the mutations:
//!
//! - an untampered plane audits with no finding;
//! - a record the newest anchor covers (a heads entry's or a seal leaf's
//!   head) cut away is a `deletion` finding naming the run and an anchor,
//!   one rewritten is a `tamper` finding naming them (R-COVER-2);
//! - any other mutation that changed a row is some finding, except the
//!   harmless ones (a moved mark added to an open run);
//! - a cut or rewrite of what nothing covers, with every derived row made to
//!   agree, is no finding;
//! - the runtime (with the plane's high-water mark) never resumes or
//!   redelivers a run cut below what the log covers.
//!
//! A fixed seed and case count (`PROPTEST_CASES` raises it) make it
//! deterministic in CI. Found with it: a sealed run cut back, deleted or
//! rewritten below its anchored seal, and a covered run cut back with its
//! runs row deleted, were derived data only (the named tests in
//! `crates/audit/tests/coverage.rs`).
// (redb makes no raw attack: what only they use is unused there.)
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use audit::{Anchor, AuditInputs, AuditReport, FindingClass};
use journal_core::heads::HeadsLeaf;
use journal_core::testkit::{MemoryHighWater, TamperAccess};
use journal_core::{
    Admission, AdmitRequest, Budget, ChainCheck, ChainHash, Counters, EffectOutput, EffectResult, ExpectedHead,
    Outcome, RunId, RunStatus, Runtime, RuntimeBuilder, RuntimeError, SealLeaf, Store, StoredRecord, TenantId,
    Upcasters, Verdict, VerifyOptions,
};
use proptest::prelude::*;
use proptest::sample::Index;
use witness::{ALG_ED25519, LogKey, Origin, SignedCheckpoint, SignerKey};

const ORIGIN: &str = "search.test/plane/t";
const RECORD_KEY_ID: &str = "spiffe://search.test/runtime";

/// The plane's record signer (records are signed, so PostgreSQL interns its key).
fn record_signer() -> journal_core::Ed25519Signer {
    journal_core::Ed25519Signer::from_seed(RECORD_KEY_ID, [5; 32])
}

pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(default)
}

#[derive(Debug, Clone, Copy)]
pub enum Ending {
    Succeeded,
    Cancelled,
    Abandoned,
    Failed,
    Exhausted,
    Withheld,
    Quarantined,
    Running,
}

#[derive(Debug, Clone)]
pub enum Op {
    New(Ending, u8),
    /// A later conclusion appended to a run (moves it; a sealing one seals it).
    Conclude(Index, u8),
    Fork(Index, Index),
    /// A checkpoint signed; `true`: an observer saves it (an anchor).
    Checkpoint(bool),
}

#[derive(Debug, Clone)]
pub enum Mutation {
    /// Keep `keep` of the run's records (fewer than it has); `fixup`: make
    /// every derived row agree with what is kept.
    Cut { run: Index, keep: Index, fixup: bool },
    /// Rewrite one record's bytes; `rechain`: rehash it and every record
    /// after it, and point the runs row at the new head.
    Rewrite { run: Index, at: Index, rechain: bool },
    /// One derived row forged or deleted.
    Forge { kind: u8, run: Index, other: Index, value: u8 },
    /// A leaf removed from the log, which is rebuilt dense (counter, nodes).
    DropLeaf { at: Index },
    /// An attack only the backend's own access allows ([`RawAttacks`]).
    Raw { kind: u8, run: Index, other: Index, value: u8 },
}

/// What a raw attack is aimed at.
pub struct RawTarget<'a> {
    pub tenant: &'a TenantId,
    pub kind: u8,
    pub run: &'a RunId,
    pub other: &'a RunId,
    pub value: u8,
    /// The run's rows before the attack.
    pub rows: &'a [StoredRecord],
}

/// Attacks only a backend's own access allows (SQL on PostgreSQL), beyond
/// [`TamperAccess`]: [`Self::KINDS`] of them.
pub trait RawAttacks {
    const KINDS: u8;
    /// Makes attack `target.kind`; what the oracle expects of it (`None`:
    /// some finding exactly when the snapshot changed).
    fn raw_attack(&self, target: &RawTarget<'_>) -> Option<Expect>;
}

fn ending() -> impl Strategy<Value = Ending> {
    prop_oneof![
        Just(Ending::Succeeded),
        Just(Ending::Cancelled),
        Just(Ending::Abandoned),
        Just(Ending::Failed),
        Just(Ending::Exhausted),
        Just(Ending::Withheld),
        Just(Ending::Quarantined),
        Just(Ending::Running),
    ]
}

pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (ending(), 0u8..3).prop_map(|(e, n)| Op::New(e, n)),
        1 => (any::<Index>(), 0u8..8).prop_map(|(i, o)| Op::Conclude(i, o)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(i, a)| Op::Fork(i, a)),
        2 => any::<bool>().prop_map(Op::Checkpoint),
    ]
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), any::<Index>(), any::<bool>()).prop_map(|(run, keep, fixup)| Mutation::Cut { run, keep, fixup }),
        2 => (any::<Index>(), any::<Index>(), any::<bool>()).prop_map(|(run, at, rechain)| Mutation::Rewrite { run, at, rechain }),
        3 => (0u8..12, any::<Index>(), any::<Index>(), any::<u8>()).prop_map(|(kind, run, other, value)| Mutation::Forge { kind, run, other, value }),
        1 => any::<Index>().prop_map(|at| Mutation::DropLeaf { at }),
    ]
}

/// [`mutation`], and `S`'s raw attacks as often as its derived row forgeries.
pub fn mutation_of<S: RawAttacks>() -> impl Strategy<Value = Mutation> {
    let kinds = S::KINDS.max(1);
    prop_oneof![
        9 => mutation(),
        if S::KINDS == 0 { 0 } else { 3 } => (0..kinds, any::<Index>(), any::<Index>(), any::<u8>())
            .prop_map(|(kind, run, other, value)| Mutation::Raw { kind, run, other, value }),
    ]
}

pub struct Plane<S> {
    store: Arc<S>,
    mark: Arc<MemoryHighWater>,
    runtime: Runtime,
    tenant: TenantId,
    origin: Origin,
    key: LogKey,
    /// Every run admitted, with its idempotency key.
    runs: Vec<(RunId, String)>,
    anchors: Vec<SignedCheckpoint>,
}

fn ok(output: &str) -> EffectOutput {
    EffectOutput {
        result: EffectResult::Ok { output: output.into() },
        charged: Counters { tokens: 1, ..Counters::default() },
    }
}

impl<S: Store + TamperAccess + 'static> Plane<S> {
    pub fn on(store: S) -> Self {
        let store = Arc::new(store);
        let mark = Arc::new(MemoryHighWater::default());
        let tenant = TenantId::new("t").unwrap();
        let origin = Origin::new(ORIGIN).unwrap();
        let key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [7; 32]).unwrap()).unwrap();
        let runtime = Self::runtime_on(&store, &mark, &tenant, &origin, &key);
        Self { store, mark, runtime, tenant, origin, key, runs: Vec::new(), anchors: Vec::new() }
    }

    fn runtime_on(
        store: &Arc<S>,
        mark: &Arc<MemoryHighWater>,
        tenant: &TenantId,
        origin: &Origin,
        key: &LogKey,
    ) -> Runtime {
        let mut verifier = journal_core::Ed25519Verifier::new();
        verifier.trust(RECORD_KEY_ID, record_signer().public_key()).unwrap();
        RuntimeBuilder::new(Arc::clone(store) as Arc<dyn Store>)
            .signer(Arc::new(record_signer()))
            .verifier(Arc::new(verifier))
            .tenant(tenant.clone(), origin.clone(), Some(key.clone()))
            .high_water(Arc::clone(mark) as Arc<dyn journal_core::log::HighWater>)
            .build()
            .unwrap()
    }

    fn play(&mut self, op: &Op) {
        let t = self.tenant.clone();
        match op {
            Op::New(ending, effects) => {
                let n = self.runs.len();
                let key = format!("job-{n}");
                let budget = match ending {
                    Ending::Exhausted => Budget { effects: Some(u64::from(*effects)), ..Budget::default() },
                    _ => Budget::default(),
                };
                let request = AdmitRequest { idempotency_key: key.clone(), plan: vec!["work".into()], budget };
                let Admission::New(mut run) = self.runtime.admit(&t, request).unwrap() else { panic!("new") };
                let id = run.run().clone();
                self.runs.push((id.clone(), key));
                run.start_step("work").unwrap();
                for e in 0..*effects {
                    run.effect(&format!("ek:{n}-{e}"), "work", || ok(&format!("{n}-{e}"))).unwrap();
                }
                match ending {
                    Ending::Succeeded => run.succeed("done").unwrap(),
                    Ending::Cancelled => {
                        drop(run);
                        self.runtime.cancel(&t, &id, "not needed").unwrap();
                    }
                    Ending::Abandoned => {
                        drop(run);
                        self.runtime.abandon(&t, &id, "gave up").unwrap();
                    }
                    Ending::Failed => {
                        let failed = run.effect("ek:fails", "work", || EffectOutput {
                            result: EffectResult::Err { error: "503".into() },
                            charged: Counters::default(),
                        });
                        assert!(
                            matches!(failed, Err(RuntimeError::Stopped { status: RunStatus::Failed { .. }, .. })),
                            "{failed:?}"
                        );
                    }
                    Ending::Exhausted => {
                        let over = run.effect("ek:over", "work", || ok("over"));
                        assert!(
                            matches!(over, Err(RuntimeError::Stopped { status: RunStatus::Exhausted { .. }, .. })),
                            "{over:?}"
                        );
                    }
                    Ending::Withheld => {
                        drop(run);
                        self.runtime.withhold(&t, &id, "hold").unwrap();
                    }
                    Ending::Quarantined => {
                        drop(run);
                        self.runtime
                            .conclude(&t, &id, Outcome::Quarantined, Verdict::Doubt { effect_key: "ek:q".into() }, "?")
                            .unwrap();
                    }
                    Ending::Running => {}
                }
            }
            Op::Conclude(pick, outcome) => {
                if self.runs.is_empty() {
                    return;
                }
                let (id, _) = &self.runs[pick.index(self.runs.len())];
                let outcome = Outcome::ALL[usize::from(*outcome) % Outcome::ALL.len()];
                // A sealed run refuses it: nothing is written.
                let _ = self.runtime.conclude(&t, id, outcome, Verdict::None, "later");
            }
            Op::Fork(pick, at) => {
                if self.runs.is_empty() {
                    return;
                }
                let (source, _) = self.runs[pick.index(self.runs.len())].clone();
                let len = self.store.read_run(&t, &source).unwrap().rows.len();
                let at_seq = at.index(len) as u64 + 1;
                let n = self.runs.len();
                let key = format!("fork-{n}");
                let request =
                    AdmitRequest { idempotency_key: key.clone(), plan: vec!["work".into()], budget: Budget::default() };
                if let Ok(Admission::New(run)) = self.runtime.fork(&t, &source, at_seq, request) {
                    self.runs.push((run.run().clone(), key));
                }
            }
            Op::Checkpoint(save) => {
                let (_, signed) = journal_core::log::sign_current_head(
                    self.store.as_ref(),
                    &self.tenant,
                    &self.origin,
                    &self.key,
                    Some(self.mark.as_ref()),
                )
                .unwrap();
                if *save {
                    self.anchors.push(signed);
                }
            }
        }
    }

    fn inputs(&self) -> AuditInputs {
        let mut inputs = AuditInputs::new(self.tenant.clone(), self.origin.clone());
        inputs.log_keys = vec![self.key.verifier_key()];
        // Lenient (a re-chained record is unsigned), but every signature is checked.
        inputs.record_keys =
            vec![audit::RecordKey { key_id: RECORD_KEY_ID.into(), public_key: record_signer().public_key() }];
        for (i, signed) in self.anchors.iter().enumerate() {
            inputs.anchors.push(
                Anchor::saved(&format!("saved-{i}"), signed.note().as_bytes(), &inputs.log_keys, &self.origin).unwrap(),
            );
        }
        inputs
    }

    fn audit(&self) -> AuditReport {
        audit::audit(self.store.as_ref(), &self.inputs()).unwrap()
    }

    fn rows(&self, run: &RunId) -> Vec<StoredRecord> {
        self.store.read_run(&self.tenant, run).map(|rows| rows.rows).unwrap_or_default()
    }
}

/// What the plane held before the attack, per run: the longest head the
/// newest anchor covers, the longest any leaf holds, and the fork points
/// other runs name in it.
#[derive(Default, Debug)]
pub struct Truth {
    pub covered: BTreeMap<RunId, u64>,
    pub in_any_leaf: BTreeMap<RunId, u64>,
    pub sealed: BTreeSet<RunId>,
    pub forked_at: BTreeMap<RunId, u64>,
    pub anchor_size: u64,
    pub newest_entry: BTreeMap<RunId, (u64, ChainHash)>,
}

fn truth<S: Store + TamperAccess + RawAttacks + 'static>(plane: &Plane<S>) -> Truth {
    let snapshot = plane.store.snapshot(&plane.tenant).unwrap();
    let anchor_size = plane.anchors.iter().map(|a| a.checkpoint().tree().size).max().unwrap_or(0);
    let mut truth = Truth { anchor_size, ..Truth::default() };
    for (rank, seal) in snapshot.seals.values().enumerate() {
        let mut heads = Vec::new();
        if HeadsLeaf::is_tagged(&seal.leaf_bytes) {
            for entry in snapshot.heads_entries.get(&seal.position).into_iter().flatten() {
                heads.push((entry.run.clone(), entry.seq));
                truth.newest_entry.insert(entry.run.clone(), (entry.seq, entry.hash));
            }
        } else if let Some(leaf) = SealLeaf::parse(&seal.leaf_bytes) {
            truth.sealed.insert(leaf.run.clone());
            heads.push((leaf.run, leaf.record_count));
        }
        for (run, seq) in heads {
            let any = truth.in_any_leaf.entry(run.clone()).or_insert(0);
            *any = (*any).max(seq);
            if (rank as u64) < anchor_size {
                let covered = truth.covered.entry(run).or_insert(0);
                *covered = (*covered).max(seq);
            }
        }
    }
    let upcasters = Upcasters::builtin();
    for (run, _) in &plane.runs {
        let rows = plane.rows(run);
        let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
        let records = journal_core::verify_run(run, &rows, None, check).unwrap();
        if let Some(forked) = journal_core::journal::forked_from(&records) {
            let source = RunId::new(&forked.source_run).unwrap();
            let at = truth.forked_at.entry(source).or_insert(0);
            *at = (*at).max(forked.at_seq);
        }
    }
    truth
}

/// What the oracle expects of one mutation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// A finding naming the run, of one of these classes, naming an anchor.
    Covered(RunId, Vec<FindingClass>),
    /// A finding naming the run, of one of these classes.
    Found(RunId, Vec<FindingClass>),
    /// Some finding.
    Some,
    /// A finding of class deletion or tamper naming an anchor.
    AnchorFails,
    /// No finding.
    Silent,
    /// Nothing: a later mutation of the same run may have undone it.
    Undone,
    /// Some finding; and every signed record is read no further (a raw
    /// attack on what every signature names: PostgreSQL's signing keys), so
    /// each run is named as broken, whatever hides behind the break.
    BreaksEveryChain,
}

fn last_outcome(run: &RunId, rows: &[StoredRecord]) -> Option<Outcome> {
    let upcasters = Upcasters::builtin();
    let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    let records = journal_core::verify_run(run, rows, None, check).ok()?;
    journal_core::last_conclusion(&records).map(|c| c.outcome)
}

/// Changes one character of the record's `at` instant (its millisecond
/// digit), so the record still reads.
fn reworded(bytes: &[u8]) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let at = text.find("\"at\":\"").expect("every record says when") + 6;
    // "2026-01-01T00:00:00.123Z": the last millisecond digit is at +22.
    let digit = at + 22;
    // One up (nine to zero): two rewrites never give the original back.
    bytes[digit] = b'0' + (bytes[digit] - b'0' + 1) % 10;
    bytes
}

fn apply<S: Store + TamperAccess + RawAttacks + 'static>(
    plane: &Plane<S>,
    truth: &Truth,
    mutation: &Mutation,
) -> Expect {
    let t = &plane.tenant;
    let store = plane.store.as_ref();
    let before = store.snapshot(t).unwrap();
    match mutation {
        Mutation::Cut { run, keep, fixup } => {
            let (id, _) = &plane.runs[run.index(plane.runs.len())];
            let rows = plane.rows(id);
            if rows.is_empty() {
                return Expect::Silent;
            }
            let keep = keep.index(rows.len()) as u64;
            for row in rows.iter().filter(|row| row.seq > keep) {
                store.delete_record(t, id, row.seq);
            }
            let kept: Vec<StoredRecord> = rows.iter().filter(|row| row.seq <= keep).cloned().collect();
            if *fixup {
                if keep == 0 {
                    store.delete_run(t, id);
                    store.set_moved(t, id, false);
                } else {
                    let last = kept.last().unwrap();
                    store.set_runs_head(t, id, ExpectedHead { seq: last.seq, hash: last.hash });
                    let outcome = last_outcome(id, &kept);
                    store.set_outcome_index(t, id, outcome);
                    let seals = outcome.is_some_and(|o| o.seals());
                    store.set_sealed_flag(t, id, seals);
                    if !seals {
                        store.hide_seal_of(t, id);
                        store.set_moved(t, id, true);
                    }
                }
            }
            let covered = truth.covered.get(id).copied().unwrap_or(0);
            if keep < covered {
                return Expect::Covered(id.clone(), vec![FindingClass::Deletion]);
            }
            let referenced = truth.in_any_leaf.get(id).is_some_and(|seq| keep < *seq)
                || truth.forked_at.get(id).is_some_and(|seq| keep < *seq)
                || truth.sealed.contains(id);
            // The testkit cannot set the runs row's outcome column.
            let outcome_moved = keep > 0 && last_outcome(id, &kept) != last_outcome(id, &rows);
            if !fixup || referenced || outcome_moved { Expect::Some } else { Expect::Silent }
        }
        Mutation::Rewrite { run, at, rechain } => {
            let (id, _) = &plane.runs[run.index(plane.runs.len())];
            let rows = plane.rows(id);
            if rows.is_empty() {
                return Expect::Silent;
            }
            let index = at.index(rows.len());
            let seq = rows[index].seq;
            let bytes = reworded(&rows[index].bytes);
            if *rechain {
                let mut prev = rows[index].prev_hash;
                for (i, row) in rows.iter().enumerate().skip(index) {
                    let bytes = if i == index { bytes.clone() } else { row.bytes.clone() };
                    let hash = ChainHash::link(&prev, &bytes);
                    store.overwrite_row(
                        t,
                        id,
                        StoredRecord { prev_hash: prev, hash, bytes, signature: None, ..row.clone() },
                    );
                    prev = hash;
                }
                store.set_runs_head(t, id, ExpectedHead { seq: rows.last().unwrap().seq, hash: prev });
                if !truth.sealed.contains(id) {
                    store.set_moved(t, id, true);
                }
            } else {
                store.overwrite_record_bytes(t, id, seq, bytes);
            }
            if !rechain {
                // The hash no longer matches the bytes: found with no anchor.
                return Expect::Found(id.clone(), vec![FindingClass::Tamper]);
            }
            let covered = truth.covered.get(id).copied().unwrap_or(0);
            if seq <= covered {
                // Cut back below it before: the cut is what is named.
                let cut = (rows.len() as u64) < covered;
                let classes =
                    if cut { vec![FindingClass::Tamper, FindingClass::Deletion] } else { vec![FindingClass::Tamper] };
                return Expect::Covered(id.clone(), classes);
            }
            let referenced = truth.in_any_leaf.get(id).is_some_and(|s| seq <= *s)
                || truth.forked_at.get(id).is_some_and(|s| seq <= *s)
                || truth.sealed.contains(id)
                || seq == 1;
            if referenced { Expect::Some } else { Expect::Silent }
        }
        Mutation::Forge { kind, run, other, value } => {
            let (id, key) = &plane.runs[run.index(plane.runs.len())];
            let (other_id, _) = &plane.runs[other.index(plane.runs.len())];
            let mut harmless = false;
            match kind {
                0 => {
                    let outcome = Outcome::ALL.get(usize::from(*value) % (Outcome::ALL.len() + 1)).copied();
                    store.set_outcome_index(t, id, outcome);
                }
                1 => {
                    let sealed = before.runs.get(id).and_then(|r| r.head.as_ref()).is_some_and(|h| h.sealed);
                    store.set_sealed_flag(t, id, !sealed);
                }
                2 => {
                    let rows = plane.rows(id);
                    if let Some(row) = rows.get(usize::from(*value) % rows.len().max(1)) {
                        store.set_runs_head(t, id, ExpectedHead { seq: row.seq, hash: row.hash });
                    }
                }
                3 => store.delete_runs_row(t, id),
                4 => store.set_idempotency(t, key, other_id),
                5 => {
                    if let Some(admission) = before.admissions.iter().find(|a| &a.run == id) {
                        store.set_admission(t, admission, false);
                    }
                }
                6 => store.hide_seal_of(t, id),
                7 => store.hide_newest_heads_of(t, id),
                8 => {
                    if let Some((position, _)) =
                        before.heads_entries.iter().find(|(_, e)| e.iter().any(|e| &e.run == id))
                    {
                        store.delete_heads_entry(t, *position, id);
                    }
                }
                9 => {
                    let moved = value % 2 == 0;
                    store.set_moved(t, id, moved);
                    let open = !truth.sealed.contains(id);
                    let head = before.runs.get(id).and_then(|r| r.head.as_ref()).map(|h| h.head);
                    let entered = truth.newest_entry.get(id).copied() == head.map(|h| (h.seq, h.hash));
                    harmless = (moved && open) || (!moved && (!open || entered));
                }
                10 => {
                    let ids: Vec<_> = before.nodes.keys().copied().collect();
                    if let Some(node) = ids.get(usize::from(*value) % ids.len().max(1)) {
                        store.overwrite_log_node(t, *node, tlog::NodeHash::from(tlog::LeafHash::of(&[*value])));
                    }
                }
                _ => {
                    if before.next_position > 0 {
                        store.rewind_log(t, u64::from(*value) % before.next_position);
                    }
                }
            }
            let after = store.snapshot(t).unwrap();
            if after == before || harmless { Expect::Silent } else { Expect::Some }
        }
        Mutation::Raw { kind, run, other, value } => {
            let (id, _) = &plane.runs[run.index(plane.runs.len())];
            let (other, _) = &plane.runs[other.index(plane.runs.len())];
            let rows = plane.rows(id);
            let target = RawTarget { tenant: t, kind: *kind, run: id, other, value: *value, rows: &rows };
            let expect = store.raw_attack(&target);
            // A store it damaged may not even give a snapshot.
            let changed = store.snapshot(t).map_or(true, |after| after != before);
            expect.unwrap_or(if changed { Expect::Some } else { Expect::Silent })
        }
        Mutation::DropLeaf { at } => {
            let seals = store.seals(t).unwrap();
            if seals.is_empty() {
                return Expect::Silent;
            }
            let drop = at.index(seals.len());
            let kept: Vec<(RunId, Vec<u8>)> = seals
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != drop)
                .map(|(_, seal)| (seal.run.clone(), seal.leaf_bytes.clone()))
                .collect();
            store.rewrite_log(t, &kept);
            if (drop as u64) < truth.anchor_size {
                Expect::AnchorFails
            } else {
                // Past every anchor: what a later cut makes agree is unseen.
                Expect::Undone
            }
        }
    }
}

fn describe(report: &AuditReport) -> String {
    report
        .findings
        .iter()
        .map(|f| {
            format!("{:?}/{:?} run={:?} seq={:?} anchors={:?}: {}", f.code, f.class, f.run, f.seq, f.anchors, f.detail)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn check<S: Store + TamperAccess + RawAttacks + 'static>(
    plane: &mut Plane<S>,
    ops: &[Op],
    mutations: &[Mutation],
) -> Result<(), TestCaseError> {
    for op in ops {
        plane.play(op);
    }
    if plane.runs.is_empty() {
        plane.play(&Op::New(Ending::Running, 1));
    }
    if plane.anchors.is_empty() {
        plane.play(&Op::Checkpoint(true));
    }
    let clean = plane.audit();
    prop_assert!(clean.findings.is_empty(), "an untampered plane has findings:\n{}", describe(&clean));
    let truth = truth(plane);
    let mut expects: Vec<Expect> = Vec::new();
    let mut targets: Vec<Option<RunId>> = Vec::new();
    let mut broken: BTreeSet<RunId> = BTreeSet::new();
    for mutation in mutations {
        let target = match mutation {
            Mutation::Cut { run, .. }
            | Mutation::Rewrite { run, .. }
            | Mutation::Forge { run, .. }
            | Mutation::Raw { run, .. } => Some(plane.runs[run.index(plane.runs.len())].0.clone()),
            Mutation::DropLeaf { .. } => None,
        };
        // A later mutation of the same run may undo or remove what an
        // earlier one did: only the last one's expectation stands.
        // A covered record cut or rewritten stays so whatever follows (no
        // mutation puts a record back): it is still named, as a cut or a
        // rewrite.
        for (earlier, expect) in targets.iter().zip(expects.iter_mut()) {
            if target.is_some() && *earlier == target {
                let breaks = matches!(mutation, Mutation::Rewrite { rechain: false, .. });
                *expect = match expect {
                    // Read no further than the break: named as the break.
                    Expect::Covered(run, _) if breaks => {
                        Expect::Found(run.clone(), vec![FindingClass::Deletion, FindingClass::Tamper])
                    }
                    Expect::Covered(run, _) => {
                        Expect::Covered(run.clone(), vec![FindingClass::Deletion, FindingClass::Tamper])
                    }
                    _ => Expect::Undone,
                };
            }
        }
        let mut expect = apply(plane, &truth, mutation);
        if matches!(mutation, Mutation::DropLeaf { .. }) && expect == Expect::Undone {
            // A leaf past every anchor gone: what an earlier edit
            // contradicted in it is gone with it.
            for earlier in expects.iter_mut().filter(|e| **e == Expect::Some) {
                *earlier = Expect::Undone;
            }
        }
        // A chain broken before (a record's bytes edited in place) is read
        // no further: what hides behind the break is named as that break.
        if let (Expect::Covered(run, _), Some(target)) = (&expect, &target)
            && broken.contains(target)
        {
            expect = Expect::Found(run.clone(), vec![FindingClass::Deletion, FindingClass::Tamper]);
        }
        if let (Mutation::Rewrite { rechain: false, .. }, Some(target)) = (mutation, &target) {
            broken.insert(target.clone());
        }
        if expect == Expect::BreaksEveryChain {
            broken.extend(plane.runs.iter().map(|(run, _)| run.clone()));
            for earlier in &mut expects {
                if let Expect::Covered(run, _) = earlier {
                    *earlier = Expect::Found(run.clone(), vec![FindingClass::Deletion, FindingClass::Tamper]);
                }
            }
            expect = Expect::Some;
        }
        expects.push(expect);
        targets.push(target);
    }
    let report = plane.audit();
    let found = format!("{}\n(ops {ops:?}, mutations {mutations:?})", describe(&report));
    let silent = expects.iter().all(|e| matches!(e, Expect::Silent));
    if silent && mutations.len() == 1 {
        prop_assert!(report.findings.is_empty(), "{expects:?}: no finding expected:\n{found}");
    }
    for expect in &expects {
        match expect {
            Expect::Covered(run, classes) => {
                prop_assert!(
                    // Or a finding of the log against an anchor (a leaf gone, or
                    // a heads leaf's entries that no longer give its root),
                    // which cannot tell which run was cut.
                    report.findings.iter().any(|f| !f.anchors.is_empty()
                        && match f.run.as_deref() {
                            Some(named) => named == run.as_str() && classes.contains(&f.class),
                            None => matches!(f.class, FindingClass::Deletion | FindingClass::Tamper),
                        }),
                    "{expect:?} (anchor size {}): not found as such:\n{found}",
                    truth.anchor_size
                );
            }
            Expect::Found(run, classes) => {
                prop_assert!(
                    report
                        .findings
                        .iter()
                        .any(|f| f.run.as_deref() == Some(run.as_str()) && classes.contains(&f.class)),
                    "{expect:?}: not found as such:\n{found}"
                );
            }
            Expect::AnchorFails => prop_assert!(
                report
                    .findings
                    .iter()
                    .any(|f| !f.anchors.is_empty() && matches!(f.class, FindingClass::Deletion | FindingClass::Tamper)),
                "{expect:?}: not found as such: {found}"
            ),
            Expect::Some | Expect::BreaksEveryChain => {
                prop_assert!(!report.findings.is_empty(), "{expect:?}: nothing found: {found}")
            }
            Expect::Silent | Expect::Undone => {}
        }
    }
    // The runtime never drives again a run cut below what the log covers.
    for expect in &expects {
        let Expect::Covered(run, _) = expect else { continue };
        let key = &plane.runs.iter().find(|(id, _)| id == run).unwrap().1;
        let runtime = Plane::<S>::runtime_on(&plane.store, &plane.mark, &plane.tenant, &plane.origin, &plane.key);
        let before = plane.rows(run).len();
        if let Ok(handle) = runtime.resume(&plane.tenant, run) {
            prop_assert!(false, "{run} was resumed at seq {} after {expect:?}", handle.state().counters().effects);
        }
        let request =
            AdmitRequest { idempotency_key: key.clone(), plan: vec!["work".into()], budget: Budget::default() };
        match runtime.admit(&plane.tenant, request) {
            Ok(Admission::New(_)) => prop_assert!(false, "{run} admitted afresh after {expect:?}"),
            Ok(Admission::Existing { status, .. }) => {
                prop_assert!(false, "{run} answered as existing ({status}) after {expect:?}")
            }
            Err(_) => {}
        }
        prop_assert_eq!(plane.rows(run).len(), before, "nothing appended to {}", run);
    }
    Ok(())
}
