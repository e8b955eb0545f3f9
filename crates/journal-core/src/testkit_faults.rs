//! Injected faults (the model: sunlight's `TestSequenceErrors`): a store
//! wrapper that fails one write, either before it reaches the backend or
//! after the backend committed it (the acknowledgement lost), and a matrix
//! that does so at every write the runtime makes while it drives a run with
//! an effect and signs a checkpoint. For each fault the driver does what a
//! worker does: it gets a typed error, then resumes the run.
// Test helpers: their failures are the test's.
#![allow(clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use tlog::{NodeHash, NodeId};

use crate::error::{JournalError, StorageError};
use crate::ids::{RunId, TenantId};
use crate::runtime::{Admission, AdmitRequest, EffectOutput, RunStatus, Runtime, RuntimeBuilder, RuntimeError};
use crate::store::{AppendRequest, LogCounters, RunRows, SealEntry, SignedTree, Store};
use crate::{Budget, Counters, EffectResult, ExpectedHead, Outcome};

/// When the injected failure strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strike {
    /// The write never reaches the backend.
    BeforeCommit,
    /// The backend commits; the caller is told it failed.
    AfterCommit,
}

/// One write the store is asked to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteCall {
    /// `append` of a record of this kind.
    Append(String),
    /// `record_signed_checkpoint`.
    SignedCheckpoint,
    /// `record_cosigned_checkpoint`.
    CosignedCheckpoint,
}

impl std::fmt::Display for WriteCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Append(kind) => write!(f, "append {kind}"),
            Self::SignedCheckpoint => f.write_str("record_signed_checkpoint"),
            Self::CosignedCheckpoint => f.write_str("record_cosigned_checkpoint"),
        }
    }
}

#[derive(Default)]
struct Plan {
    /// Fail the write with this index (counting every write from 0).
    fail_at: Option<(usize, Strike)>,
    writes: Vec<WriteCall>,
    /// Appends the backend acknowledged to the caller: (run, head).
    acknowledged: Vec<(RunId, ExpectedHead)>,
}

/// A store that fails the write its plan names, once.
pub struct FaultyStore {
    inner: Arc<dyn Store>,
    plan: Mutex<Plan>,
}

fn injected(strike: Strike) -> JournalError {
    JournalError::Io(StorageError::message(match strike {
        Strike::BeforeCommit => "injected fault: the write failed before it committed",
        Strike::AfterCommit => "injected fault: the write committed and its acknowledgement was lost",
    }))
}

impl FaultyStore {
    /// Wraps `inner`; with `fail_at`, the write of that index fails.
    pub fn new(inner: Arc<dyn Store>, fail_at: Option<(usize, Strike)>) -> Self {
        Self { inner, plan: Mutex::new(Plan { fail_at, ..Plan::default() }) }
    }

    /// Every write asked for so far, in order.
    pub fn writes(&self) -> Vec<WriteCall> {
        self.plan.lock().expect("plan").writes.clone()
    }

    /// Every append acknowledged to its caller.
    pub fn acknowledged(&self) -> Vec<(RunId, ExpectedHead)> {
        self.plan.lock().expect("plan").acknowledged.clone()
    }

    fn write<T>(&self, call: WriteCall, write: impl FnOnce() -> Result<T, JournalError>) -> Result<T, JournalError> {
        let strike = {
            let mut plan = self.plan.lock().expect("plan");
            let index = plan.writes.len();
            plan.writes.push(call);
            match plan.fail_at {
                Some((at, strike)) if at == index => Some(strike),
                _ => None,
            }
        };
        match strike {
            Some(Strike::BeforeCommit) => Err(injected(Strike::BeforeCommit)),
            Some(Strike::AfterCommit) => write().and_then(|_| Err(injected(Strike::AfterCommit))),
            None => write(),
        }
    }
}

impl Store for FaultyStore {
    fn append(&self, request: AppendRequest) -> Result<Option<u64>, JournalError> {
        let (run, head) = (request.run.clone(), ExpectedHead { seq: request.row.seq, hash: request.row.hash });
        let position = self.write(WriteCall::Append(request.row.kind.clone()), || self.inner.append(request))?;
        self.plan.lock().expect("plan").acknowledged.push((run, head));
        Ok(position)
    }
    fn read_run(&self, tenant: &TenantId, run: &RunId) -> Result<RunRows, JournalError> {
        self.inner.read_run(tenant, run)
    }
    fn read_run_within(&self, tenant: &TenantId, run: &RunId, max_bytes: usize) -> Result<RunRows, JournalError> {
        self.inner.read_run_within(tenant, run, max_bytes)
    }
    fn runs(&self, tenant: &TenantId, outcome: Option<Outcome>) -> Result<Vec<RunId>, JournalError> {
        self.inner.runs(tenant, outcome)
    }
    fn admissions(
        &self,
        tenant: &TenantId,
        before: Option<&crate::store::AdmittedRun>,
        outcome: Option<Outcome>,
        limit: usize,
    ) -> Result<Vec<crate::store::AdmittedRun>, JournalError> {
        self.inner.admissions(tenant, before, outcome, limit)
    }
    fn run_by_idempotency_key(&self, tenant: &TenantId, key: &str) -> Result<Option<RunId>, JournalError> {
        self.inner.run_by_idempotency_key(tenant, key)
    }
    fn tenants(&self) -> Result<Vec<TenantId>, JournalError> {
        self.inner.tenants()
    }
    fn seals(&self, tenant: &TenantId) -> Result<Vec<SealEntry>, JournalError> {
        self.inner.seals(tenant)
    }
    fn seal_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<SealEntry>, JournalError> {
        self.inner.seal_of(tenant, run)
    }
    fn log_counters(&self, tenant: &TenantId) -> Result<LogCounters, JournalError> {
        self.inner.log_counters(tenant)
    }
    fn read_log_nodes(&self, tenant: &TenantId, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
        self.inner.read_log_nodes(tenant, ids)
    }
    fn signed_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        self.inner.signed_checkpoints(tenant)
    }
    fn record_signed_checkpoint(
        &self,
        tenant: &TenantId,
        expected_last: Option<tlog::Tree>,
        signed: SignedTree,
    ) -> Result<(), JournalError> {
        self.write(WriteCall::SignedCheckpoint, || self.inner.record_signed_checkpoint(tenant, expected_last, signed))
    }
    fn cosigned_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        self.inner.cosigned_checkpoints(tenant)
    }
    fn newest_checkpoints(
        &self,
        tenant: &TenantId,
        kind: crate::store::CheckpointRows,
        limit: usize,
    ) -> Result<Vec<SignedTree>, JournalError> {
        self.inner.newest_checkpoints(tenant, kind, limit)
    }
    fn record_cosigned_checkpoint(&self, tenant: &TenantId, cosigned: SignedTree) -> Result<(), JournalError> {
        self.write(WriteCall::CosignedCheckpoint, || self.inner.record_cosigned_checkpoint(tenant, cosigned))
    }
    fn snapshot(&self, tenant: &TenantId) -> Result<crate::snapshot::TenantSnapshot, JournalError> {
        self.inner.snapshot(tenant)
    }
    fn snapshot_streamed(&self, tenant: &TenantId, sink: &mut dyn crate::SnapshotSink) -> Result<(), JournalError> {
        self.inner.snapshot_streamed(tenant, sink)
    }
    fn append_heads(&self, tenant: &TenantId, origin: &witness::Origin) -> Result<Vec<u64>, JournalError> {
        self.inner.append_heads(tenant, origin)
    }
    fn heads_entries(&self, tenant: &TenantId, position: u64) -> Result<Vec<crate::heads::HeadEntry>, JournalError> {
        self.inner.heads_entries(tenant, position)
    }
    fn heads_entries_in(
        &self,
        tenant: &TenantId,
        positions: std::ops::Range<u64>,
    ) -> Result<crate::store::HeadsByPosition, JournalError> {
        self.inner.heads_entries_in(tenant, positions)
    }
    fn newest_heads_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<u64>, JournalError> {
        self.inner.newest_heads_of(tenant, run)
    }
    fn seal_at(&self, tenant: &TenantId, position: u64) -> Result<Option<SealEntry>, JournalError> {
        self.inner.seal_at(tenant, position)
    }
    fn last_signed_checkpoint(&self, tenant: &TenantId) -> Result<Option<SignedTree>, JournalError> {
        self.inner.last_signed_checkpoint(tenant)
    }
}

/// A [`Store`] method, as a [`RoutedStore`]'s route sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum StoreCall {
    Append,
    ReadRun,
    Runs,
    Admissions,
    RunByIdempotencyKey,
    Tenants,
    Seals,
    SealOf,
    SealsIn,
    SealAt,
    LogCounters,
    ReadLogNodes,
    SignedCheckpoints,
    LastSignedCheckpoint,
    RecordSignedCheckpoint,
    CosignedCheckpoints,
    NewestCheckpoints,
    RecordCosignedCheckpoint,
    AppendHeads,
    HeadsEntries,
    HeadsEntriesIn,
    NewestHeadsOf,
    Snapshot,
    SnapshotStreamed,
}

/// The store a [`RoutedStore`] sends one call to, picked before the call.
pub type Route = Box<dyn Fn(StoreCall) -> Arc<dyn Store> + Send + Sync>;

/// A store that sends each call to the store its route picks: what someone
/// writing the database can do between two reads of the plane (rewrite the
/// nodes after its checks, put another log in place after it asked the
/// witnesses), told as which store answers which call. The route may count
/// or remember the calls it sees.
pub struct RoutedStore {
    route: Route,
}

impl RoutedStore {
    /// Every call goes where `route` says.
    pub fn new(route: Route) -> Self {
        Self { route }
    }

    fn to(&self, call: StoreCall) -> Arc<dyn Store> {
        (self.route)(call)
    }
}

impl Store for RoutedStore {
    fn append(&self, request: AppendRequest) -> Result<Option<u64>, JournalError> {
        self.to(StoreCall::Append).append(request)
    }
    fn read_run(&self, tenant: &TenantId, run: &RunId) -> Result<RunRows, JournalError> {
        self.to(StoreCall::ReadRun).read_run(tenant, run)
    }
    fn read_run_within(&self, tenant: &TenantId, run: &RunId, max_bytes: usize) -> Result<RunRows, JournalError> {
        self.to(StoreCall::ReadRun).read_run_within(tenant, run, max_bytes)
    }
    fn runs(&self, tenant: &TenantId, outcome: Option<Outcome>) -> Result<Vec<RunId>, JournalError> {
        self.to(StoreCall::Runs).runs(tenant, outcome)
    }
    fn admissions(
        &self,
        tenant: &TenantId,
        before: Option<&crate::store::AdmittedRun>,
        outcome: Option<Outcome>,
        limit: usize,
    ) -> Result<Vec<crate::store::AdmittedRun>, JournalError> {
        self.to(StoreCall::Admissions).admissions(tenant, before, outcome, limit)
    }
    fn run_by_idempotency_key(&self, tenant: &TenantId, key: &str) -> Result<Option<RunId>, JournalError> {
        self.to(StoreCall::RunByIdempotencyKey).run_by_idempotency_key(tenant, key)
    }
    fn tenants(&self) -> Result<Vec<TenantId>, JournalError> {
        self.to(StoreCall::Tenants).tenants()
    }
    fn seals(&self, tenant: &TenantId) -> Result<Vec<SealEntry>, JournalError> {
        self.to(StoreCall::Seals).seals(tenant)
    }
    fn seal_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<SealEntry>, JournalError> {
        self.to(StoreCall::SealOf).seal_of(tenant, run)
    }
    fn seals_in(&self, tenant: &TenantId, positions: std::ops::Range<u64>) -> Result<Vec<SealEntry>, JournalError> {
        self.to(StoreCall::SealsIn).seals_in(tenant, positions)
    }
    fn seal_at(&self, tenant: &TenantId, position: u64) -> Result<Option<SealEntry>, JournalError> {
        self.to(StoreCall::SealAt).seal_at(tenant, position)
    }
    fn log_counters(&self, tenant: &TenantId) -> Result<LogCounters, JournalError> {
        self.to(StoreCall::LogCounters).log_counters(tenant)
    }
    fn read_log_nodes(&self, tenant: &TenantId, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
        self.to(StoreCall::ReadLogNodes).read_log_nodes(tenant, ids)
    }
    fn signed_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        self.to(StoreCall::SignedCheckpoints).signed_checkpoints(tenant)
    }
    fn last_signed_checkpoint(&self, tenant: &TenantId) -> Result<Option<SignedTree>, JournalError> {
        self.to(StoreCall::LastSignedCheckpoint).last_signed_checkpoint(tenant)
    }
    fn record_signed_checkpoint(
        &self,
        tenant: &TenantId,
        expected_last: Option<tlog::Tree>,
        signed: SignedTree,
    ) -> Result<(), JournalError> {
        self.to(StoreCall::RecordSignedCheckpoint).record_signed_checkpoint(tenant, expected_last, signed)
    }
    fn cosigned_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        self.to(StoreCall::CosignedCheckpoints).cosigned_checkpoints(tenant)
    }
    fn newest_checkpoints(
        &self,
        tenant: &TenantId,
        kind: crate::store::CheckpointRows,
        limit: usize,
    ) -> Result<Vec<SignedTree>, JournalError> {
        self.to(StoreCall::NewestCheckpoints).newest_checkpoints(tenant, kind, limit)
    }
    fn record_cosigned_checkpoint(&self, tenant: &TenantId, cosigned: SignedTree) -> Result<(), JournalError> {
        self.to(StoreCall::RecordCosignedCheckpoint).record_cosigned_checkpoint(tenant, cosigned)
    }
    fn append_heads(&self, tenant: &TenantId, origin: &witness::Origin) -> Result<Vec<u64>, JournalError> {
        self.to(StoreCall::AppendHeads).append_heads(tenant, origin)
    }
    fn heads_entries(&self, tenant: &TenantId, position: u64) -> Result<Vec<crate::heads::HeadEntry>, JournalError> {
        self.to(StoreCall::HeadsEntries).heads_entries(tenant, position)
    }
    fn heads_entries_in(
        &self,
        tenant: &TenantId,
        positions: std::ops::Range<u64>,
    ) -> Result<crate::store::HeadsByPosition, JournalError> {
        self.to(StoreCall::HeadsEntriesIn).heads_entries_in(tenant, positions)
    }
    fn newest_heads_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<u64>, JournalError> {
        self.to(StoreCall::NewestHeadsOf).newest_heads_of(tenant, run)
    }
    fn snapshot(&self, tenant: &TenantId) -> Result<crate::snapshot::TenantSnapshot, JournalError> {
        self.to(StoreCall::Snapshot).snapshot(tenant)
    }
    fn snapshot_streamed(&self, tenant: &TenantId, sink: &mut dyn crate::SnapshotSink) -> Result<(), JournalError> {
        self.to(StoreCall::SnapshotStreamed).snapshot_streamed(tenant, sink)
    }
}

/// What one injected fault led to.
#[derive(Debug)]
pub struct FaultCase {
    /// The write that failed.
    pub call: WriteCall,
    /// When it failed.
    pub strike: Strike,
    /// The error the driver got first (a typed error, never a panic).
    pub first_error: String,
    /// How the run ended after the driver resumed it.
    pub outcome: Option<Outcome>,
    /// How many times the effect ran in all (at most once).
    pub effect_runs: u32,
}

impl FaultCase {
    /// What the runtime did, in a few words, for the README's fault table.
    pub fn what_the_runtime_does(&self) -> String {
        let outcome = self.outcome.map_or("running", |outcome| outcome.as_str());
        format!("typed Io error; resumed: {outcome}, effect ran {}x", self.effect_runs)
    }
}

/// The README's fault table: one row per write, before and after commit.
pub fn fault_table(cases: &[FaultCase]) -> String {
    let mut table = String::from(
        "| call | fails before commit | fails after commit (acknowledgement lost) |\n| --- | --- | --- |\n",
    );
    for pair in cases.chunks(2) {
        if let [before, after] = pair {
            assert_eq!((before.strike, after.strike), (Strike::BeforeCommit, Strike::AfterCommit));
            table.push_str(&format!(
                "| {} | {} | {} |\n",
                before.call,
                before.what_the_runtime_does(),
                after.what_the_runtime_does()
            ));
        }
    }
    table
}

const KEY: &str = "fault-run";

/// Witnesses for one case (fresh: a witness remembers the log it saw), and
/// whatever keeps them serving until the case ends.
pub type Witnesses = (Vec<Arc<dyn witness::Witness + Send + Sync>>, Box<dyn std::any::Any>);

/// Drives the scenario once on `runtime`: admit (or resume), a step with one
/// effect, success; then the plane signs its checkpoint, and with witnesses
/// holds a sweep (the round's cosigned checkpoint is stored).
fn drive(runtime: &Runtime, tenant: &TenantId, ran: &AtomicU32, log_key: &witness::LogKey) -> Result<(), RuntimeError> {
    let request = AdmitRequest { idempotency_key: KEY.into(), plan: vec!["work".into()], budget: Budget::default() };
    let mut handle = match runtime.admit(tenant, request)? {
        Admission::New(handle) => *handle,
        Admission::Existing { run, status: RunStatus::Running } => runtime.resume(tenant, &run)?,
        Admission::Existing { .. } => return sign(runtime, tenant, log_key),
    };
    handle.start_step("work")?;
    handle.effect("ek:transfer", "work", || {
        ran.fetch_add(1, Ordering::SeqCst);
        EffectOutput {
            result: EffectResult::Ok { output: "sent".into() },
            charged: Counters { cost_micros: 10, ..Counters::default() },
        }
    })?;
    handle.finish_step("work")?;
    handle.succeed("done")?;
    sign(runtime, tenant, log_key)
}

fn sign(runtime: &Runtime, tenant: &TenantId, log_key: &witness::LogKey) -> Result<(), RuntimeError> {
    crate::log::sign_current_head(runtime.store(), tenant, &crate::testkit::origin(), log_key, None)?;
    if !runtime.witness_policy().0.is_empty() {
        let report = runtime.sweep(tenant)?;
        if report.needs_attention() {
            return Err(RuntimeError::Checkpoint(format!("the sweep needs attention: {:?}", report.outcome)));
        }
    }
    Ok(())
}

/// The log key the matrix signs checkpoints with (a witness must trust it).
pub fn matrix_log_key() -> witness::LogKey {
    witness::LogKey::new(
        witness::SignerKey::from_seed(crate::testkit::origin().as_str(), witness::ALG_ED25519, [9; 32])
            .expect("a log key"),
    )
    .expect("a log key")
}

/// Runs the scenario with a fault at every write it makes, before and after
/// commit, each on a fresh store from `fresh` (and fresh witnesses from
/// `witnesses`, trusting [`matrix_log_key`], when given: then the sweep's
/// cosigned checkpoint is among the writes); checks what must hold whatever
/// failed (no effect twice, a doubt quarantines, nothing acknowledged lost)
/// and hands each store to `check` (the backend's test runs the audit there).
pub fn fault_matrix(
    fresh: &dyn Fn() -> Arc<dyn Store>,
    witnesses: Option<&dyn Fn() -> Witnesses>,
    check: &dyn Fn(&dyn Store, &FaultCase),
) -> Vec<FaultCase> {
    let tenant = crate::testkit::tenant();
    let log_key = matrix_log_key();
    let runtime_over = |store: Arc<dyn Store>| {
        let builder =
            RuntimeBuilder::new(store).tenant(tenant.clone(), crate::testkit::origin(), Some(log_key.clone()));
        let (builder, serving) = match witnesses {
            Some(make) => {
                let (clients, serving) = make();
                (builder.witnesses(clients, witness::WitnessQuorum::of(1)), Some(serving))
            }
            None => (builder, None),
        };
        (builder.build().expect("a runtime"), serving)
    };
    // A clean pass names the writes.
    let clean = Arc::new(FaultyStore::new(fresh(), None));
    let (runtime, _serving) = runtime_over(Arc::clone(&clean) as Arc<dyn Store>);
    drive(&runtime, &tenant, &AtomicU32::new(0), &log_key).expect("the scenario without faults");
    let writes = clean.writes();
    let mut cases = Vec::new();
    for (index, call) in writes.iter().enumerate() {
        for strike in [Strike::BeforeCommit, Strike::AfterCommit] {
            let inner = fresh();
            let faulty = Arc::new(FaultyStore::new(Arc::clone(&inner), Some((index, strike))));
            let (runtime, _serving) = runtime_over(Arc::clone(&faulty) as Arc<dyn Store>);
            let ran = AtomicU32::new(0);
            let first_error = match drive(&runtime, &tenant, &ran, &log_key) {
                Err(err) => err.to_string(),
                Ok(()) => panic!("{call} failing {strike:?} went unnoticed"),
            };
            // The worker comes back: the fault was once; resume until it stops.
            let resumed = drive(&runtime, &tenant, &ran, &log_key);
            let run = Runtime::run_id_for(&tenant, KEY).expect("a run id");
            let rows = inner.read_run(&tenant, &run).ok();
            let outcome = rows.as_ref().and_then(|rows| rows.outcome);
            match (&resumed, outcome) {
                (Ok(()), Some(Outcome::Succeeded)) => {}
                (Err(RuntimeError::Stopped { .. }), Some(Outcome::Quarantined)) => {}
                other => panic!("{call} failing {strike:?}: resuming gave {other:?}"),
            }
            let effect_runs = ran.load(Ordering::SeqCst);
            assert!(effect_runs <= 1, "{call} failing {strike:?}: the effect ran {effect_runs} times");
            if outcome == Some(Outcome::Quarantined) {
                assert!(
                    matches!(call, WriteCall::Append(kind) if kind == "EffectStarted" || kind == "EffectDone"),
                    "{call} failing {strike:?} quarantined a run whose effect's fate was known"
                );
            }
            // Nothing acknowledged is lost: every acknowledged head is in the store.
            for (run, head) in faulty.acknowledged() {
                let stored = inner.read_run(&tenant, &run).expect("an acknowledged run");
                let row = stored.rows.iter().find(|row| row.seq == head.seq);
                assert_eq!(row.map(|row| row.hash), Some(head.hash), "{call} failing {strike:?} lost seq {}", head.seq);
            }
            let case = FaultCase { call: call.clone(), strike, first_error, outcome, effect_runs };
            check(inner.as_ref(), &case);
            cases.push(case);
        }
    }
    assert!(cases.len() >= 16, "every write of the scenario, twice: {cases:?}");
    if witnesses.is_some() {
        assert!(cases.iter().any(|case| case.call == WriteCall::CosignedCheckpoint), "the sweep's write is covered");
    }
    assert!(cases.iter().any(|case| case.outcome == Some(Outcome::Quarantined)), "a doubt among them");
    cases
}
