//! The runtime an operator's code calls (R-RUN-1..7): admitting runs,
//! journaled effects, budgets, conclusions, resume, and the reads that
//! recovery and cost accounting are made of. Every decision is read back from
//! the verified journal; no side table is consulted for what happened.

use std::collections::BTreeMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::chain::{ChainCheck, ExpectedHead};
use crate::error::JournalError;
use crate::ids::{RunId, TenantId};
use crate::journal::{Journal, VerifiedRun};
use crate::record::{
    Budget, CeilingRaised, Counters, Dimension, DoubtAnswer, DoubtAnswered, EffectDone, EffectResult, EffectStarted,
    Holding, Outcome, PlanFrozen, RecordBody, Released, RunAdmitted, RunConcluded, StepMark, Verdict,
    WithholdingLifted,
};
use crate::signature::{Signer, Verifier, VerifyOptions};
use crate::store::Store;
use crate::version::Upcasters;

/// A tenant the runtime serves: its id, its log origin and the key that signs its checkpoints.
#[derive(Clone)]
pub struct TenantConfig {
    /// The tenant.
    pub tenant: TenantId,
    /// Its log's origin (C2SP checkpoint origin; also in every seal leaf).
    pub origin: String,
    /// The key that signs its checkpoints as they go out.
    pub log_key: Option<witness::LogKey>,
}

/// Why a runtime could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// No store was given.
    #[error("a runtime needs a store")]
    NoStore,
    /// No tenant was configured.
    #[error("a runtime needs at least one tenant (RuntimeBuilder::tenant)")]
    NoTenant,
    /// A tenant was configured twice.
    #[error("tenant {0} is configured twice")]
    DuplicateTenant(String),
    /// A quorum larger than the witness list: no round could ever meet it (R-WIT-7).
    #[error("a quorum of {quorum} cannot be met by {witnesses} witnesses; every round would report a shortfall")]
    QuorumTooLarge {
        /// The quorum.
        quorum: usize,
        /// The number of witnesses.
        witnesses: usize,
    },
    /// A zero quorum with witnesses configured: it would mean nothing (R-WIT-7).
    #[error("a quorum of 0 with {witnesses} witnesses configured means nothing; set at least 1")]
    ZeroQuorum {
        /// The number of witnesses.
        witnesses: usize,
    },
    /// Witnessing needs every tenant's checkpoints signed.
    #[error("witnesses are configured but tenant {0} has no log key to sign its checkpoints")]
    NoLogKey(String),
}

/// Everything that can go wrong driving a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// The journal refused or failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The tenant is not configured.
    #[error("tenant {0} is not configured in this runtime")]
    UnknownTenant(String),
    /// The run has concluded and cannot continue as asked; its status says why.
    #[error("run {run} is {status}")]
    Stopped {
        /// The run.
        run: RunId,
        /// Its status.
        status: RunStatus,
    },
    /// The tenant's checkpoint could not be made or signed.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// The operation does not fit the run's state.
    #[error("run {run}: {reason}")]
    NotApplicable {
        /// The run.
        run: RunId,
        /// Why.
        reason: String,
    },
}

/// A run's status, read from its verified journal: the last conclusion, or running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    /// No conclusion yet, or one that was continued.
    Running,
    /// Sealed.
    Succeeded,
    /// Sealed.
    Cancelled,
    /// Sealed.
    Abandoned,
    /// An effect failed.
    Failed {
        /// Which and how.
        verdict: Verdict,
        /// For people.
        reason: String,
    },
    /// A ceiling was crossed: `verdict` is `BudgetExceeded` with the ceiling and counters.
    Exhausted {
        /// The typed verdict.
        verdict: Verdict,
        /// For people.
        reason: String,
    },
    /// Held by an operator.
    Withheld {
        /// Why.
        reason: String,
    },
    /// An effect's fate is unknown.
    Quarantined {
        /// `Doubt { effect_key }`.
        verdict: Verdict,
        /// For people.
        reason: String,
    },
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Running => f.write_str("running"),
            Self::Succeeded => f.write_str("succeeded"),
            Self::Cancelled => f.write_str("cancelled"),
            Self::Abandoned => f.write_str("abandoned"),
            Self::Failed { reason, .. } => write!(f, "failed: {reason}"),
            Self::Exhausted { reason, .. } => write!(f, "exhausted: {reason}"),
            Self::Withheld { reason } => write!(f, "withheld: {reason}"),
            Self::Quarantined { reason, .. } => write!(f, "quarantined: {reason}"),
        }
    }
}

impl RunStatus {
    fn of(concluded: &RunConcluded) -> Self {
        let (verdict, reason) = (concluded.verdict.clone(), concluded.reason.clone());
        match concluded.outcome {
            Outcome::Succeeded => Self::Succeeded,
            Outcome::Cancelled => Self::Cancelled,
            Outcome::Abandoned => Self::Abandoned,
            Outcome::Failed => Self::Failed { verdict, reason },
            Outcome::Exhausted => Self::Exhausted { verdict, reason },
            Outcome::Withheld => Self::Withheld { reason },
            Outcome::Quarantined => Self::Quarantined { verdict, reason },
        }
    }

    /// The outcome, if concluded.
    pub fn outcome(&self) -> Option<Outcome> {
        Some(match self {
            Self::Running => return None,
            Self::Succeeded => Outcome::Succeeded,
            Self::Cancelled => Outcome::Cancelled,
            Self::Abandoned => Outcome::Abandoned,
            Self::Failed { .. } => Outcome::Failed,
            Self::Exhausted { .. } => Outcome::Exhausted,
            Self::Withheld { .. } => Outcome::Withheld,
            Self::Quarantined { .. } => Outcome::Quarantined,
        })
    }
}

/// A request to run something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmitRequest {
    /// Redelivering the same key returns the same run's status (R-RUN-4).
    pub idempotency_key: String,
    /// The steps the run will follow.
    pub plan: Vec<String>,
    /// Its ceilings.
    pub budget: Budget,
}

/// What the runtime was given to run, and how to verify what it reads.
pub struct Runtime {
    store: Arc<dyn Store>,
    signer: Option<Arc<dyn Signer>>,
    verifier: Option<Arc<dyn Verifier>>,
    tenants: Vec<TenantConfig>,
    witnesses: Vec<Arc<dyn witness::Witness + Send + Sync>>,
    quorum: witness::WitnessQuorum,
    upcasters: Upcasters,
    /// Per tenant, the log size the last round that met the quorum witnessed.
    witnessed: std::sync::Mutex<BTreeMap<TenantId, u64>>,
    /// The build named as the writer of every record.
    build: crate::record::Build,
}

/// Builds a [`Runtime`].
#[derive(Default)]
pub struct RuntimeBuilder {
    store: Option<Arc<dyn Store>>,
    signer: Option<Arc<dyn Signer>>,
    verifier: Option<Arc<dyn Verifier>>,
    tenants: Vec<TenantConfig>,
    witnesses: Vec<Arc<dyn witness::Witness + Send + Sync>>,
    quorum: Option<witness::WitnessQuorum>,
    upcasters: Option<Upcasters>,
    build: Option<crate::record::Build>,
}

impl RuntimeBuilder {
    /// A builder over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store: Some(store), ..Self::default() }
    }

    /// Signs every record with `signer`. Without one, records are unsigned:
    /// the runtime never mints a key (R-SIG-4).
    pub fn signer(mut self, signer: Arc<dyn Signer>) -> Self {
        self.signer = Some(signer);
        self
    }

    /// Trusted record keys for the runtime's own reads (lenient: resume my history).
    pub fn verifier(mut self, verifier: Arc<dyn Verifier>) -> Self {
        self.verifier = Some(verifier);
        self
    }

    /// Serves a tenant with its log origin and checkpoint key.
    pub fn tenant(mut self, tenant: TenantId, origin: &str, log_key: Option<witness::LogKey>) -> Self {
        self.tenants.push(TenantConfig { tenant, origin: origin.to_owned(), log_key });
        self
    }

    /// The witnesses a sweep submits to, and how many must cosign (R-WIT-7).
    pub fn witnesses(
        mut self,
        witnesses: Vec<Arc<dyn witness::Witness + Send + Sync>>,
        quorum: witness::WitnessQuorum,
    ) -> Self {
        self.witnesses = witnesses;
        self.quorum = Some(quorum);
        self
    }

    /// Names the binary that writes (its package name and version), so that a
    /// build-skew refusal can say which binary wrote a journal (R-VER-4).
    /// Defaults to this build of journal-core.
    pub fn written_by(mut self, build: crate::record::Build) -> Self {
        self.build = Some(build);
        self
    }

    /// Replaces the upcaster registry (tests, extensions).
    pub fn upcasters(mut self, upcasters: Upcasters) -> Self {
        self.upcasters = Some(upcasters);
        self
    }

    /// Checks the configuration and builds.
    pub fn build(self) -> Result<Runtime, BuildError> {
        let store = self.store.ok_or(BuildError::NoStore)?;
        if self.tenants.is_empty() {
            return Err(BuildError::NoTenant);
        }
        for (i, tenant) in self.tenants.iter().enumerate() {
            if self.tenants.iter().skip(i + 1).any(|other| other.tenant == tenant.tenant) {
                return Err(BuildError::DuplicateTenant(tenant.tenant.to_string()));
            }
        }
        let quorum = self.quorum.unwrap_or(witness::WitnessQuorum::of(0));
        let count = self.witnesses.len();
        if quorum.needed() > count {
            return Err(BuildError::QuorumTooLarge { quorum: quorum.needed(), witnesses: count });
        }
        if count > 0 && quorum.needed() == 0 {
            return Err(BuildError::ZeroQuorum { witnesses: count });
        }
        if count > 0
            && let Some(tenant) = self.tenants.iter().find(|t| t.log_key.is_none())
        {
            return Err(BuildError::NoLogKey(tenant.tenant.to_string()));
        }
        Ok(Runtime {
            store,
            signer: self.signer,
            verifier: self.verifier,
            tenants: self.tenants,
            witnesses: self.witnesses,
            quorum,
            upcasters: self.upcasters.unwrap_or_else(Upcasters::builtin),
            witnessed: std::sync::Mutex::new(BTreeMap::new()),
            build: self.build.unwrap_or_else(crate::record::Build::current),
        })
    }
}

/// The state of a run, rebuilt from its verified journal.
#[derive(Debug, Clone, Default)]
struct Replay {
    budget: Budget,
    counters: Counters,
    /// Effects with a recorded end: key -> result.
    done: BTreeMap<String, EffectResult>,
    /// Effects started with no recorded end (and no answer).
    open: Vec<String>,
    last: Option<RunConcluded>,
    /// Whether a lift or answer came after the last conclusion.
    continued_after_last: bool,
}

fn replay(verified: &VerifiedRun) -> Replay {
    let mut state = Replay::default();
    for record in &verified.records {
        let key = record.record.effect_key.clone();
        match &record.record.body {
            RecordBody::RunAdmitted(admitted) => state.budget = admitted.budget,
            RecordBody::StepStarted(_) => state.counters.steps += 1,
            RecordBody::EffectStarted(_) => {
                if let Some(key) = key {
                    state.open.push(key);
                }
            }
            RecordBody::EffectDone(done) => {
                if let Some(key) = key {
                    state.open.retain(|open| *open != key);
                    state.counters.add(&done.charged);
                    state.counters.effects += 1;
                    state.done.insert(key, done.result.clone());
                }
            }
            RecordBody::DoubtAnswered(answered) => {
                if let Some(key) = key {
                    state.open.retain(|open| *open != key);
                    if let DoubtAnswer::Happened { result } = &answered.answer {
                        state.counters.effects += 1;
                        state.done.insert(key, result.clone());
                    }
                    state.continued_after_last = true;
                }
            }
            RecordBody::CeilingRaised(raised) => state.budget.set_ceiling(raised.dimension, raised.ceiling),
            RecordBody::WithholdingLifted(_) => state.continued_after_last = true,
            RecordBody::RunConcluded(concluded) => {
                state.last = Some(concluded.clone());
                state.continued_after_last = false;
            }
            RecordBody::PlanFrozen(_) | RecordBody::Released(_) | RecordBody::StepFinished(_) => {}
        }
    }
    state
}

/// A run being driven by this runtime. Its head is the one it appended last;
/// if another runtime appended since, the next append is a `Conflict`.
pub struct RunHandle<'rt> {
    runtime: &'rt Runtime,
    tenant: TenantConfig,
    run: RunId,
    head: ExpectedHead,
    state: Replay,
    /// Set when this handle concluded the run: it drives nothing more (a
    /// resume, after the reason is answered, gives a new handle).
    stopped: bool,
}

/// What `admit` found.
pub enum Admission<'rt> {
    /// A new run, ready to drive (boxed: a handle carries the run's replayed state).
    New(Box<RunHandle<'rt>>),
    /// The key was admitted before: the run's status, from its verified journal.
    Existing {
        /// The run.
        run: RunId,
        /// Its status.
        status: RunStatus,
    },
}

/// What an effect's closure reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectOutput {
    /// The result to record (and to read back on resume).
    pub result: EffectResult,
    /// What it cost.
    pub charged: Counters,
}

impl Runtime {
    fn tenant(&self, tenant: &TenantId) -> Result<&TenantConfig, RuntimeError> {
        self.tenants.iter().find(|t| t.tenant == *tenant).ok_or_else(|| RuntimeError::UnknownTenant(tenant.to_string()))
    }

    fn journal<'a>(&'a self, tenant: &'a TenantConfig) -> Journal<'a> {
        Journal {
            store: self.store.as_ref(),
            tenant: &tenant.tenant,
            origin: &tenant.origin,
            signer: self.signer.as_deref(),
            build: &self.build,
        }
    }

    fn read(&self, tenant: &TenantConfig, run: &RunId) -> Result<VerifiedRun, RuntimeError> {
        let check = ChainCheck {
            upcasters: &self.upcasters,
            verifier: self.verifier.as_deref(),
            options: VerifyOptions::default(),
        };
        Ok(self.journal(tenant).read(run, check)?)
    }

    /// The store.
    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The configured witnesses and quorum.
    pub fn witness_policy(&self) -> (&[Arc<dyn witness::Witness + Send + Sync>], witness::WitnessQuorum) {
        (&self.witnesses, self.quorum)
    }

    /// The run id an idempotency key gets: derived, so that two admissions of
    /// one key race to the same run and the store's conflict settles it.
    pub fn run_id_for(tenant: &TenantId, idempotency_key: &str) -> Result<RunId, JournalError> {
        let digest: [u8; 32] = Sha256::digest(format!("{tenant}\n{idempotency_key}").as_bytes()).into();
        let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
        RunId::new(&format!("run-{hex}"))
    }

    /// Admits a run, or returns the status of the run admitted before with the
    /// same idempotency key, read from its verified journal (R-RUN-4).
    pub fn admit(&self, tenant: &TenantId, request: AdmitRequest) -> Result<Admission<'_>, RuntimeError> {
        let config = self.tenant(tenant)?.clone();
        if let Some(run) = self.store.run_by_idempotency_key(tenant, &request.idempotency_key)? {
            let status = self.status(tenant, &run)?;
            return Ok(Admission::Existing { run, status });
        }
        let run = Self::run_id_for(tenant, &request.idempotency_key)?;
        let journal = self.journal(&config);
        let admitted = RecordBody::RunAdmitted(RunAdmitted {
            tenant: tenant.to_string(),
            idempotency_key: request.idempotency_key.clone(),
            budget: request.budget,
        });
        let first = match journal.append(&run, None, None, admitted) {
            Ok(appended) => appended,
            Err(JournalError::Conflict { .. }) => {
                let status = self.status(tenant, &run)?;
                return Ok(Admission::Existing { run, status });
            }
            Err(err) => return Err(err.into()),
        };
        let frozen =
            journal.append(&run, Some(first.head), None, RecordBody::PlanFrozen(PlanFrozen { steps: request.plan }))?;
        let state = Replay { budget: request.budget, ..Replay::default() };
        Ok(Admission::New(Box::new(RunHandle {
            runtime: self,
            tenant: config,
            run,
            head: frozen.head,
            state,
            stopped: false,
        })))
    }

    /// The run's status from its verified journal: its last conclusion, the
    /// same answer the outcome index gives (R-RUN-3). A lifted withholding or
    /// an answered doubt changes it at the run's next conclusion.
    pub fn status(&self, tenant: &TenantId, run: &RunId) -> Result<RunStatus, RuntimeError> {
        let verified = self.read(self.tenant(tenant)?, run)?;
        Ok(replay(&verified).last.as_ref().map_or(RunStatus::Running, RunStatus::of))
    }

    /// The runs of a tenant whose answer is `outcome` (all when `None`).
    pub fn runs(&self, tenant: &TenantId, outcome: Option<Outcome>) -> Result<Vec<RunId>, RuntimeError> {
        self.tenant(tenant)?;
        Ok(self.store.runs(tenant, outcome)?)
    }

    /// What a run has consumed, read from its journal (R-RUN-7).
    pub fn cost(&self, tenant: &TenantId, run: &RunId) -> Result<Counters, RuntimeError> {
        Ok(replay(&self.read(self.tenant(tenant)?, run)?).counters)
    }

    /// What all of a tenant's runs have consumed (R-RUN-7).
    pub fn tenant_cost(&self, tenant: &TenantId) -> Result<Counters, RuntimeError> {
        let mut total = Counters::default();
        for run in self.runs(tenant, None)? {
            total.add(&self.cost(tenant, &run)?);
        }
        Ok(total)
    }

    fn append_to(
        &self,
        tenant: &TenantId,
        run: &RunId,
        effect_key: Option<String>,
        body: RecordBody,
    ) -> Result<(), RuntimeError> {
        let config = self.tenant(tenant)?;
        let verified = self.read(config, run)?;
        if verified.seal.is_some() {
            return Err(JournalError::Sealed { run: run.clone() }.into());
        }
        self.journal(config).append(run, verified.head, effect_key, body)?;
        Ok(())
    }

    /// Raises (or lifts, with `None`) a ceiling; a resume then continues an exhausted run.
    pub fn raise_ceiling(
        &self,
        tenant: &TenantId,
        run: &RunId,
        dimension: Dimension,
        ceiling: Option<u64>,
    ) -> Result<(), RuntimeError> {
        self.append_to(tenant, run, None, RecordBody::CeilingRaised(CeilingRaised { dimension, ceiling }))
    }

    /// Withholds a run: it concludes `withheld` until lifted.
    pub fn withhold(&self, tenant: &TenantId, run: &RunId, reason: &str) -> Result<(), RuntimeError> {
        self.conclude(tenant, run, Outcome::Withheld, Verdict::None, reason)
    }

    /// Lifts a withholding; a resume then continues the run.
    pub fn lift(&self, tenant: &TenantId, run: &RunId, note: &str) -> Result<(), RuntimeError> {
        let state = replay(&self.read(self.tenant(tenant)?, run)?);
        let withheld = matches!(&state.last, Some(c) if c.outcome == Outcome::Withheld) && !state.continued_after_last;
        if !withheld {
            return Err(RuntimeError::NotApplicable { run: run.clone(), reason: "it is not withheld".into() });
        }
        self.append_to(tenant, run, None, RecordBody::WithholdingLifted(WithholdingLifted { note: note.to_owned() }))
    }

    /// Cancels a run: it concludes `cancelled` and seals.
    pub fn cancel(&self, tenant: &TenantId, run: &RunId, reason: &str) -> Result<(), RuntimeError> {
        self.conclude(tenant, run, Outcome::Cancelled, Verdict::None, reason)
    }

    /// Abandons a run: it concludes `abandoned` and seals.
    pub fn abandon(&self, tenant: &TenantId, run: &RunId, reason: &str) -> Result<(), RuntimeError> {
        self.conclude(tenant, run, Outcome::Abandoned, Verdict::None, reason)
    }

    /// A person's answer to a doubt: the effect happened with a result (read
    /// back from now on), or did not (it may be performed again).
    pub fn answer_doubt(
        &self,
        tenant: &TenantId,
        run: &RunId,
        effect_key: &str,
        answer: DoubtAnswer,
    ) -> Result<(), RuntimeError> {
        let verified = self.read(self.tenant(tenant)?, run)?;
        if !replay(&verified).open.iter().any(|open| open == effect_key) {
            return Err(RuntimeError::NotApplicable {
                run: run.clone(),
                reason: format!("effect {effect_key} is not in doubt"),
            });
        }
        self.append_to(tenant, run, Some(effect_key.to_owned()), RecordBody::DoubtAnswered(DoubtAnswered { answer }))
    }

    /// Appends a conclusion to a run not being driven here.
    pub fn conclude(
        &self,
        tenant: &TenantId,
        run: &RunId,
        outcome: Outcome,
        verdict: Verdict,
        reason: &str,
    ) -> Result<(), RuntimeError> {
        self.append_to(
            tenant,
            run,
            None,
            RecordBody::RunConcluded(RunConcluded { outcome, verdict, reason: reason.to_owned() }),
        )
    }

    /// Resumes a run (R-RUN-5, R-RUN-6): verifies its chain, reads its own last
    /// outcome from that history, and continues when the reason for stopping
    /// is answered. An effect started with no recorded end quarantines it.
    pub fn resume(&self, tenant: &TenantId, run: &RunId) -> Result<RunHandle<'_>, RuntimeError> {
        let config = self.tenant(tenant)?.clone();
        let verified = self.read(&config, run)?;
        let head =
            verified.head.ok_or_else(|| JournalError::NotFound { tenant: tenant.to_string(), run: run.to_string() })?;
        let state = replay(&verified);
        let mut handle = RunHandle { runtime: self, tenant: config, run: run.clone(), head, state, stopped: false };
        if let Some(key) = handle.state.open.first().cloned() {
            let already = matches!(&handle.state.last, Some(c) if c.outcome == Outcome::Quarantined && !handle.state.continued_after_last);
            if !already {
                handle.conclude(
                    Outcome::Quarantined,
                    Verdict::Doubt { effect_key: key.clone() },
                    &format!("effect {key} started and has no recorded end; a person must say whether it happened"),
                )?;
            }
            return Err(handle.stopped());
        }
        if let Some(last) = handle.state.last.clone() {
            let continues = match last.outcome {
                Outcome::Succeeded | Outcome::Cancelled | Outcome::Abandoned => false,
                Outcome::Failed => true,
                Outcome::Exhausted => handle.state.budget.first_exceeded(&handle.state.counters).is_none(),
                Outcome::Withheld | Outcome::Quarantined => handle.state.continued_after_last,
            };
            if !continues {
                return Err(RuntimeError::Stopped { run: run.clone(), status: RunStatus::of(&last) });
            }
        }
        Ok(handle)
    }
}

impl RunHandle<'_> {
    /// The run.
    pub fn run(&self) -> &RunId {
        &self.run
    }

    /// What the run has consumed so far.
    pub fn counters(&self) -> Counters {
        self.state.counters
    }

    fn append(&mut self, effect_key: Option<String>, body: RecordBody) -> Result<(), RuntimeError> {
        if self.stopped {
            return Err(self.stopped());
        }
        let appended = self.runtime.journal(&self.tenant).append(&self.run, Some(self.head), effect_key, body)?;
        self.head = appended.head;
        Ok(())
    }

    fn conclude(&mut self, outcome: Outcome, verdict: Verdict, reason: &str) -> Result<(), RuntimeError> {
        let concluded = RunConcluded { outcome, verdict, reason: reason.to_owned() };
        self.append(None, RecordBody::RunConcluded(concluded.clone()))?;
        self.state.last = Some(concluded);
        self.state.continued_after_last = false;
        self.stopped = true;
        Ok(())
    }

    fn stopped(&self) -> RuntimeError {
        let status = self.state.last.as_ref().map_or(RunStatus::Running, RunStatus::of);
        RuntimeError::Stopped { run: self.run.clone(), status }
    }

    fn exhaust(&mut self, dimension: Dimension, ceiling: u64, counters: Counters, what: &str) -> RuntimeError {
        let reason = format!("{what}: {dimension} ceiling {ceiling} crossed at {}", counters.get(dimension));
        match self.conclude(Outcome::Exhausted, Verdict::BudgetExceeded { dimension, ceiling, counters }, &reason) {
            Ok(()) => self.stopped(),
            Err(err) => err,
        }
    }

    /// Starts a step; the steps ceiling is checked first.
    pub fn start_step(&mut self, step: &str) -> Result<(), RuntimeError> {
        let mut after = self.state.counters;
        after.steps += 1;
        if let Some(ceiling) = self.state.budget.ceiling(Dimension::Steps).filter(|c| after.steps > *c) {
            return Err(self.exhaust(Dimension::Steps, ceiling, after, &format!("starting step {step}")));
        }
        self.append(None, RecordBody::StepStarted(StepMark { step: step.to_owned() }))?;
        self.state.counters = after;
        Ok(())
    }

    /// Finishes a step.
    pub fn finish_step(&mut self, step: &str) -> Result<(), RuntimeError> {
        self.append(None, RecordBody::StepFinished(StepMark { step: step.to_owned() }))
    }

    /// Performs an effect at most once (R-RUN-5): `EffectStarted` is recorded
    /// before `perform` runs and `EffectDone` after. An effect already done
    /// (or answered as happened) is read back, not performed. Charges count
    /// against the budget; crossing a ceiling concludes `exhausted`; an error
    /// concludes `failed`.
    pub fn effect(
        &mut self,
        effect_key: &str,
        step: &str,
        perform: impl FnOnce() -> EffectOutput,
    ) -> Result<EffectResult, RuntimeError> {
        if self.stopped {
            return Err(self.stopped());
        }
        if let Some(result) = self.state.done.get(effect_key) {
            return Ok(result.clone());
        }
        let mut after = self.state.counters;
        after.effects += 1;
        if let Some(ceiling) = self.state.budget.ceiling(Dimension::Effects).filter(|c| after.effects > *c) {
            return Err(self.exhaust(Dimension::Effects, ceiling, after, &format!("effect {effect_key}")));
        }
        let key = Some(effect_key.to_owned());
        let reserved = Counters { effects: 1, ..Counters::default() };
        self.append(key.clone(), RecordBody::EffectStarted(EffectStarted { step: step.to_owned(), reserved }))?;
        self.state.open.push(effect_key.to_owned());
        let output = perform();
        self.append(
            key.clone(),
            RecordBody::EffectDone(EffectDone { result: output.result.clone(), charged: output.charged }),
        )?;
        self.append(key, RecordBody::Released(Released { holding: Holding::Reservation, amount: reserved }))?;
        self.state.open.retain(|open| open != effect_key);
        self.state.counters.add(&output.charged);
        self.state.counters.effects += 1;
        self.state.done.insert(effect_key.to_owned(), output.result.clone());
        if let EffectResult::Err { error } = &output.result {
            let verdict = Verdict::EffectFailed { effect_key: effect_key.to_owned(), error: error.clone() };
            self.conclude(Outcome::Failed, verdict, &format!("effect {effect_key} failed: {error}"))?;
            return Err(self.stopped());
        }
        if let Some((dimension, ceiling)) = self.state.budget.first_exceeded(&self.state.counters) {
            let counters = self.state.counters;
            return Err(self.exhaust(dimension, ceiling, counters, &format!("effect {effect_key}")));
        }
        Ok(output.result)
    }

    /// Concludes `succeeded`: the run seals and enters the log. Returns its log position.
    pub fn succeed(mut self, reason: &str) -> Result<(), RuntimeError> {
        self.conclude(Outcome::Succeeded, Verdict::None, reason)
    }

    /// Concludes `failed` with an error of the caller's.
    pub fn fail(mut self, error: &str) -> Result<(), RuntimeError> {
        self.conclude(Outcome::Failed, Verdict::None, error)
    }
}

/// What one witnessing round of a tenant's log came to (R-WIT-8, R-WIT-9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SweepOutcome {
    /// The log has not grown since the last round that met the bar.
    Skipped {
        /// The size already witnessed by a quorum.
        size: u64,
    },
    /// No witnesses are configured.
    NoWitnesses,
    /// A round was held: met, short, or an integrity refusal.
    Round(witness::QuorumOutcome),
}

/// The report of [`Runtime::sweep`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepReport {
    /// The tenant swept.
    pub tenant: TenantId,
    /// The tree submitted (or found already witnessed).
    pub tree: tlog::Tree,
    /// What happened.
    pub outcome: SweepOutcome,
}

impl SweepReport {
    /// A shortfall or an integrity refusal: a finding for the operator to clear.
    pub fn needs_attention(&self) -> bool {
        matches!(
            self.outcome,
            SweepOutcome::Round(
                witness::QuorumOutcome::Shortfall { .. } | witness::QuorumOutcome::IntegrityRefusal { .. }
            )
        )
    }

    /// A witness saw this log shrink or fork.
    pub fn integrity_refusal(&self) -> bool {
        matches!(self.outcome, SweepOutcome::Round(witness::QuorumOutcome::IntegrityRefusal { .. }))
    }
}

impl Runtime {
    /// Submits the tenant's current checkpoint, signed now, to the configured
    /// witnesses and holds the round to the quorum. Off the run path: call it
    /// periodically. A round is skipped when the log has not grown since the
    /// last round that met the bar; a shortfall or an integrity refusal is
    /// reported (`needs_attention`), and an integrity refusal is also logged to
    /// the tracing target `agentplane.witness.integrity`.
    pub fn sweep(&self, tenant: &TenantId) -> Result<SweepReport, RuntimeError> {
        let config = self.tenant(tenant)?;
        let head = crate::log::log_head(self.store.as_ref(), tenant)?;
        let report = |outcome| SweepReport { tenant: tenant.clone(), tree: head.tree, outcome };
        if self.witnesses.is_empty() {
            return Ok(report(SweepOutcome::NoWitnesses));
        }
        let last_met = self.witnessed.lock().map(|sizes| sizes.get(tenant).copied()).unwrap_or(None);
        if last_met == Some(head.tree.size) {
            return Ok(report(SweepOutcome::Skipped { size: head.tree.size }));
        }
        let log_key = config.log_key.as_ref().ok_or_else(|| {
            RuntimeError::Checkpoint(format!("tenant {tenant} has no log key to sign its checkpoints"))
        })?;
        let body = witness::Checkpoint::new(&config.origin, head.tree)
            .map_err(|err| RuntimeError::Checkpoint(err.to_string()))?;
        let signed = log_key.sign(&body).map_err(|err| RuntimeError::Checkpoint(err.to_string()))?;
        let witnesses: Vec<&(dyn witness::Witness + Sync)> =
            self.witnesses.iter().map(|w| w.as_ref() as &(dyn witness::Witness + Sync)).collect();
        let history = crate::log::StoreHistory { store: self.store.as_ref(), tenant };
        let outcome = witness::cosign_quorum(&witnesses, self.quorum, &signed, &history);
        match &outcome {
            witness::QuorumOutcome::Met { .. } => {
                if let Ok(mut sizes) = self.witnessed.lock() {
                    sizes.insert(tenant.clone(), head.tree.size);
                }
            }
            witness::QuorumOutcome::IntegrityRefusal { refusals, .. } => {
                for refusal in refusals {
                    tracing::error!(
                        target: "agentplane.witness.integrity",
                        tenant = %tenant,
                        size = head.tree.size,
                        witness = %refusal.witness,
                        "{}",
                        refusal.error
                    );
                }
            }
            witness::QuorumOutcome::Shortfall { got, needed, .. } => {
                tracing::warn!(tenant = %tenant, got, needed, "witness quorum not met");
            }
        }
        Ok(report(SweepOutcome::Round(outcome)))
    }
}
