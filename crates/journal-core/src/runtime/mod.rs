//! The runtime an operator's code calls (R-RUN-1..7): admitting runs,
//! journaled effects, budgets, conclusions, resume, and the reads that
//! recovery and cost accounting are made of. Every decision is read back from
//! the verified journal; no side table is consulted for what happened.

//!
//! The runtime is split in rooms: [`builder`] checks a configuration once,
//! [`handle`] drives a run (admission's answer, effects, conclusions, resume),
//! and [`sweep`] witnesses the log off the run path. A run's state, live or
//! read back, is the fold of its records ([`crate::run_state`]: the one
//! transition behind the handle, resume, status and cost). This module holds
//! the runtime itself and the operator's calls on runs it is not driving.

pub mod builder;
pub mod handle;
pub mod sweep;

use std::sync::Arc;

use sha2::{Digest, Sha256};
use witness::Origin;

pub use crate::run_state::{RunStatus, TimeWindow, charge, cost_in, try_cost_in};
pub use builder::{BuildError, MAX_WITNESS_KEYS, RuntimeBuilder};
pub use handle::{Admission, EffectOutput, RunHandle};
pub use sweep::{
    CosignedRowsError, CosignedStanding, RememberedStandings, SweepOutcome, SweepReport, WitnessProbe, WitnessViews,
    ask_witnesses, verify_cosigned_note, verify_cosigned_rows, verify_cosigned_rows_remembering,
};

use crate::chain::ChainCheck;
use crate::clock::Clock;
use crate::error::JournalError;
use crate::heads::{CoveredHeads, HeadEntry};
use crate::ids::{RunId, TenantId};
use crate::journal::{Journal, VerifiedRun};
use crate::record::{
    Budget, Build, CeilingRaised, Counters, Dimension, DoubtAnswer, DoubtAnswered, Outcome, RecordBody, RunAdmitted,
    RunConcluded, RunForked, Verdict, WithholdingLifted,
};
use crate::run_state::RunState;
use crate::signature::{Signer, Verifier, VerifyOptions};
use crate::store::Store;
use crate::version::Upcasters;

/// A tenant the runtime serves: its id, its log origin and the key that signs its checkpoints.
#[derive(Clone)]
pub struct TenantConfig {
    /// The tenant.
    pub tenant: TenantId,
    /// Its log's origin (C2SP checkpoint origin; also in every seal leaf).
    pub origin: Origin,
    /// The key that signs its checkpoints as they go out.
    pub log_key: Option<witness::LogKey>,
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
    /// An effect key past [`handle::MAX_EFFECT_KEY_BYTES`]: refused before
    /// the effect starts, nothing recorded.
    #[error(
        "run {run}: an effect key of {bytes} bytes is past the bound of {max}; nothing was recorded or performed. \
         An effect key names its effect (every record about the effect, its conclusions too, quotes it): keep what \
         the effect carries in its output, and name it with a shorter key (a digest of a long one)"
    )]
    EffectKeyTooLong {
        /// The run.
        run: RunId,
        /// The key's length in bytes.
        bytes: usize,
        /// The bound.
        max: usize,
    },
    /// A cost total passed `u64::MAX`: no figure is given (R-RUN-7).
    #[error(transparent)]
    CostOverflow(#[from] crate::record::CostOverflow),
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
    /// The build named as the writer of every record.
    build: Build,
    /// Where the time on every record comes from.
    clock: Arc<dyn Clock>,
    /// The plane's record of the last tree it signed per origin, outside the store.
    high_water: Option<Arc<dyn crate::log::HighWater>>,
    /// The keys a stored cosigned note's cosignatures are held to.
    witness_keys: Vec<witness::TrustedWitness>,
    /// How the sweep learns what each witness holds before it signs.
    probes: Vec<Arc<dyn WitnessProbe>>,
    /// How often the sweep asks the witnesses even when the log has not grown.
    probe_every: std::time::Duration,
    /// When each tenant's witnesses were last asked.
    last_probe: std::sync::Mutex<std::collections::HashMap<TenantId, std::time::Instant>>,
    /// The tenants whose stored log this runtime found to extend the
    /// plane's high-water mark: checked once, before the first run it
    /// admits or resumes there (a store does not roll back under an open
    /// handle; one put back while the plane was stopped is caught then).
    extends_mark: std::sync::Mutex<std::collections::HashSet<TenantId>>,
    /// Each tenant's covered heads, read from its log's leaves once and
    /// brought up to date before each use.
    covered: std::sync::Mutex<std::collections::HashMap<TenantId, CoveredHeads>>,
    /// The kept cosigned rows this runtime verified: each is verified once
    /// (again only if rewritten), not once a round.
    cosigned_verified: RememberedStandings,
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
            clock: self.clock.as_ref(),
        }
    }

    fn read(&self, tenant: &TenantConfig, run: &RunId) -> Result<VerifiedRun, RuntimeError> {
        let check = ChainCheck {
            upcasters: &self.upcasters,
            verifier: self.verifier.as_deref(),
            options: VerifyOptions::default(),
        };
        // A run copied in from another tenant behind the plane is never
        // this tenant's to resume or fork (issue 20).
        let verified = self.journal(tenant).read(run, check)?;
        verified.bound_to(&tenant.tenant, run)?;
        Ok(verified)
    }

    /// The store.
    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The plane's high-water mark, when one was given.
    pub fn high_water(&self) -> Option<&dyn crate::log::HighWater> {
        self.high_water.as_deref()
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
    /// same idempotency key, read from its verified journal (R-RUN-4). An
    /// admission that stopped before its plan was frozen (a crash, a failed
    /// write) is finished by the next delivery of its key, which drives it.
    pub fn admit(&self, tenant: &TenantId, request: AdmitRequest) -> Result<Admission<'_>, RuntimeError> {
        self.admit_with(tenant, request, None)
    }

    /// Forks `source` after its record `at_seq`: admits a new run whose
    /// journal records where it came from (`RunForked`: the source, the seq,
    /// that record's chain hash) and whose handle serves the source's effects
    /// done up to that point from the record, performing only the ones after.
    /// A point between an effect's start and its end is refused: the fork
    /// cannot know whether that effect happened.
    pub fn fork(
        &self,
        tenant: &TenantId,
        source: &RunId,
        at_seq: u64,
        request: AdmitRequest,
    ) -> Result<Admission<'_>, RuntimeError> {
        let config = self.tenant(tenant)?;
        // The source is held to what resume holds a run to (R-RUN-5,
        // R-COVER-2): forked at the head of a run cut back behind the
        // plane, the fork would perform the cut-away done effects again,
        // its source's record of them gone.
        self.refuse_older_store(config)?;
        let covered = self.covered_head(config, source)?;
        let verified = self.read(config, source)?;
        Self::refuse_cut_back(source, covered, &verified.records)?;
        let record = verified.records.iter().find(|record| record.stored.seq == at_seq).ok_or_else(|| {
            RuntimeError::NotApplicable {
                run: source.clone(),
                reason: format!("it has no record at seq {at_seq} to fork after"),
            }
        })?;
        // An effect started and not ended by the fork point is a doubt in
        // the fork's prefix; the fork would perform it again (R-RUN-5).
        let prefix = verified.records.iter().take_while(|r| r.stored.seq <= at_seq).map(|r| &r.record);
        let at_point = RunState::fold(prefix);
        if let Some(key) = at_point.in_doubt().first() {
            return Err(RuntimeError::NotApplicable {
                run: source.clone(),
                reason: format!(
                    "its effect {key} is started and not ended at seq {at_seq}: fork before the effect starts or \
                     after its end"
                ),
            });
        }
        // An effect answered "did not happen" by the fork point whose start
        // the source records an end for after it (the live worker's, kept
        // after the answer): it happened, and the fork would perform it
        // again (R-RUN-5).
        if let Some((key, ended)) = ended_after(&verified.records, at_seq, &at_point) {
            return Err(RuntimeError::NotApplicable {
                run: source.clone(),
                reason: format!(
                    "its effect {key} is started by seq {at_seq} and its end is recorded at seq {ended} (it was \
                     answered as not happened, and then ended): fork before the effect starts or after seq {ended}"
                ),
            });
        }
        let forked = RunForked { source_run: source.to_string(), at_seq, source_hash: record.stored.hash.to_string() };
        self.admit_with(tenant, request, Some(forked))
    }

    /// The effects a forked run is served from its source's record (see
    /// [`crate::run_state::fork_seed`]).
    fn fork_seed(&self, config: &TenantConfig, run: &RunId, forked: &RunForked) -> Result<RunState, RuntimeError> {
        let check = ChainCheck {
            upcasters: &self.upcasters,
            verifier: self.verifier.as_deref(),
            options: VerifyOptions::default(),
        };
        let journal = self.journal(config);
        let read = |source: &RunId| {
            let verified = journal.read(source, check)?;
            verified.bound_to(&config.tenant, source).map(|()| verified)
        };
        Ok(crate::run_state::fork_seed(read, run, forked)?)
    }

    /// A run's state from its journal, with a fork's source effects served from the source.
    pub(crate) fn state_of(
        &self,
        config: &TenantConfig,
        run: &RunId,
        verified: &VerifiedRun,
    ) -> Result<RunState, RuntimeError> {
        let mut state = RunState::of(&verified.records);
        if let Some(forked) = verified.forked_from() {
            state.serve_from(self.fork_seed(config, run, forked)?);
        }
        Ok(state)
    }

    /// The longest head a heads leaf or a seal leaf of the tenant's log
    /// holds for `run` (R-COVER-2), with the leaf's position, read from the log's leaves and
    /// held to the tree the plane last signed ([`CoveredHeads`]), never from
    /// the newest-heads index alone: deleting a run's index row with the
    /// records it covers must not make the run look uncovered (R-RUN-5).
    /// A seal leaf counts as a heads leaf does: the seal lookup
    /// ([`Store::seal_of`]) is derived data too. `None` when no leaf holds
    /// the run.
    fn covered_head(&self, config: &TenantConfig, run: &RunId) -> Result<Option<(u64, HeadEntry)>, RuntimeError> {
        // A panic while catching up keeps nothing of that reading, so a
        // poisoned lock still guards a sound map.
        let mut covered = self.covered.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let heads = covered.entry(config.tenant.clone()).or_default();
        // Read at every catch-up, not only the first: a leaf the plane
        // signed after this runtime first read the log, removed from the
        // store behind it, must not look like a leaf never appended.
        let signed = match self.high_water.as_deref() {
            Some(high_water) => match high_water
                .last(&config.origin)
                .map_err(|err| crate::log::high_water_error(&config.tenant, err))?
            {
                crate::log::HighWaterMark::Signed(tree) => Some(tree),
                // Nothing signed yet: every leaf is past the signed tree,
                // read again until the plane signs (none is kept, so none
                // forged and taken out meanwhile stands in for a leaf the
                // plane signs later).
                crate::log::HighWaterMark::Never => Some(tlog::Tree::empty()),
                crate::log::HighWaterMark::Lost { reason } => return Err(lost_mark(config, &reason, high_water)),
            },
            None => None,
        };
        heads.catch_up(self.store.as_ref(), &config.tenant, &config.origin, signed)?;
        Ok(heads.longest(run).cloned())
    }

    /// Refuses to admit or resume runs on a store older than what the plane
    /// signed (R-PLANE-2, R-RUN-5): a store put back from a backup lost the
    /// runs recorded after it, and their heads entries with them, so a run
    /// redelivered or resumed there would perform effects whose results were
    /// recorded and signed. Nothing is appended.
    fn refuse_older_store(&self, config: &TenantConfig) -> Result<(), RuntimeError> {
        let Some(high_water) = self.high_water.as_deref() else { return Ok(()) };
        // Read every time, before what this process already checked: a mark
        // lost under a running plane leaves nothing to hold the log to.
        if let crate::log::HighWaterMark::Lost { reason } =
            high_water.last(&config.origin).map_err(|err| crate::log::high_water_error(&config.tenant, err))?
        {
            return Err(lost_mark(config, &reason, high_water));
        }
        let checked = |set: &std::collections::HashSet<TenantId>| set.contains(&config.tenant);
        if self.extends_mark.lock().is_ok_and(|set| checked(&set)) {
            return Ok(());
        }
        if let Some(reason) =
            crate::log::older_than_mark(self.store.as_ref(), &config.tenant, &config.origin, high_water)?
        {
            return Err(JournalError::StoreDamage {
                tenant: config.tenant.clone(),
                detail: format!(
                    "{reason}. No run is admitted or resumed here (their recorded effects could run again): put \
                     the store the plane last signed from back in place, then run `agentplane verify`. {}",
                    crate::log::NO_NEWER_COPY
                ),
            }
            .into());
        }
        if let Ok(mut set) = self.extends_mark.lock() {
            set.insert(config.tenant.clone());
        }
        Ok(())
    }

    /// Refuses to go on with `run` when a heads or seal leaf the plane put in
    /// its log (and signed, or is about to sign) holds a record of it the verified
    /// chain no longer has (R-RUN-5, R-COVER-2): the run was cut back,
    /// rewritten or deleted behind the plane, and driving it again would
    /// perform effects whose results were recorded. Nothing is appended.
    ///
    /// `covered` is [`Self::covered_head`] read *before* the chain
    /// `records` was: a chain only grows, so a head the log held then is in
    /// any chain read after it. Read the other way round, a record appended
    /// and covered by a checkpoint between the two reads (a worker driving
    /// the run, the sweep signing) would look cut from the older chain.
    fn refuse_cut_back(
        run: &RunId,
        covered: Option<(u64, HeadEntry)>,
        records: &[crate::chain::VerifiedRecord],
    ) -> Result<(), RuntimeError> {
        let Some((position, entry)) = covered else {
            return Ok(());
        };
        let holds = records.iter().any(|r| r.stored.seq == entry.seq && r.stored.hash == entry.hash);
        if holds {
            return Ok(());
        }
        let now =
            records.last().map_or_else(|| "no records".to_owned(), |r| format!("its head at seq {}", r.stored.seq));
        Err(JournalError::Tamper {
            run: run.clone(),
            seq: entry.seq,
            kind: crate::error::TamperKind::SealMismatch,
            detail: Some(format!(
                "the log leaf at position {position} holds its record at seq {} ({}), and the store has {now}: \
                 the run was cut back, rewritten or deleted behind the plane, so it is not driven again (its recorded \
                 effects would run twice); run `agentplane verify`, and restore the store from a copy that holds the \
                 run",
                entry.seq, entry.hash
            )),
        }
        .into())
    }

    fn admit_with(
        &self,
        tenant: &TenantId,
        request: AdmitRequest,
        forked: Option<RunForked>,
    ) -> Result<Admission<'_>, RuntimeError> {
        let config = self.tenant(tenant)?.clone();
        self.refuse_older_store(&config)?;
        if let Some(run) = self.store.run_by_idempotency_key(tenant, &request.idempotency_key)? {
            let covered = self.covered_head(&config, &run)?;
            let verified = self.read(&config, &run)?;
            Self::refuse_cut_back(&run, covered, &verified.records)?;
            if verified.idempotency_key() != Some(request.idempotency_key.as_str()) {
                return Err(JournalError::StoreDamage {
                    tenant: tenant.clone(),
                    detail: format!(
                        "the idempotency index points key {:?} at run {run}, which was not admitted under it (run \
                         `agentplane verify`)",
                        request.idempotency_key
                    ),
                }
                .into());
            }
            if let (true, Some(head)) = (unfinished_admission(&verified), verified.head) {
                // The admission stopped after its first records (a crash, a
                // failed write): this delivery finishes it, so a fork's
                // provenance is recorded before anything runs (R-RUN-5).
                let state = self.state_of(&config, &run, &verified)?;
                let forked = forked.filter(|_| verified.forked_from().is_none());
                let handle = RunHandle {
                    runtime: self,
                    tenant: config,
                    run,
                    head,
                    state,
                    stopped: false,
                    steps: Default::default(),
                };
                return match self.finish_admission(handle, forked, request.plan)? {
                    // An operator's hold on the stuck run still stands: the
                    // admission is finished, and the run waits for the lift.
                    Admission::New(handle) if !handle.state.may_continue() => {
                        Ok(Admission::Existing { run: handle.run.clone(), status: handle.state.status() })
                    }
                    admission => Ok(admission),
                };
            }
            let status = RunState::of(&verified.records).status();
            return Ok(Admission::Existing { run, status });
        }
        let run = Self::run_id_for(tenant, &request.idempotency_key)?;
        if let Some(covered) = self.covered_head(&config, &run)? {
            // A run the log covers, gone from the store: admitting it afresh
            // would perform its recorded effects again.
            let records = match self.read(&config, &run) {
                Ok(verified) => verified.records,
                Err(RuntimeError::Journal(JournalError::NotFound { .. })) => Vec::new(),
                Err(err) => return Err(err),
            };
            Self::refuse_cut_back(&run, Some(covered), &records)?;
        }
        let journal = self.journal(&config);
        let admitted = RecordBody::RunAdmitted(RunAdmitted {
            tenant: tenant.to_string(),
            idempotency_key: request.idempotency_key.clone(),
            budget: request.budget,
        });
        let (first, admitted) = match journal.append_record(&run, None, None, admitted) {
            Ok(appended) => appended,
            Err(JournalError::Conflict { .. }) => {
                let status = self.status(tenant, &run)?;
                return Ok(Admission::Existing { run, status });
            }
            Err(err) => return Err(err.into()),
        };
        let state = RunState::fold([&admitted]);
        let handle = RunHandle {
            runtime: self,
            tenant: config,
            run,
            head: first.head,
            state,
            stopped: false,
            steps: Default::default(),
        };
        self.finish_admission(handle, forked, request.plan)
    }

    /// Appends the rest of an admission after its `RunAdmitted` (a fork's
    /// provenance, then the plan) on `handle`; a delivery of the same key
    /// that got there first makes this one's answer that run's status.
    fn finish_admission<'rt>(
        &'rt self,
        mut handle: RunHandle<'rt>,
        forked: Option<RunForked>,
        plan: Vec<String>,
    ) -> Result<Admission<'rt>, RuntimeError> {
        match handle.finish_admission(forked, plan) {
            Ok(()) => Ok(Admission::New(Box::new(handle))),
            Err(RuntimeError::Journal(JournalError::Conflict { .. })) => {
                let status = self.status(&handle.tenant.tenant, &handle.run)?;
                Ok(Admission::Existing { run: handle.run, status })
            }
            Err(err) => Err(err),
        }
    }

    /// The run's status from its verified journal: its last conclusion, the
    /// same answer the outcome index gives (R-RUN-3). A lifted withholding or
    /// an answered doubt changes it at the run's next conclusion.
    pub fn status(&self, tenant: &TenantId, run: &RunId) -> Result<RunStatus, RuntimeError> {
        let verified = self.read(self.tenant(tenant)?, run)?;
        Ok(RunState::of(&verified.records).status())
    }

    /// The runs of a tenant whose answer is `outcome` (all when `None`).
    pub fn runs(&self, tenant: &TenantId, outcome: Option<Outcome>) -> Result<Vec<RunId>, RuntimeError> {
        self.tenant(tenant)?;
        Ok(self.store.runs(tenant, outcome)?)
    }

    /// What a run has consumed, read from its journal (R-RUN-7).
    pub fn cost(&self, tenant: &TenantId, run: &RunId) -> Result<Counters, RuntimeError> {
        Ok(try_cost_in(&self.read(self.tenant(tenant)?, run)?, TimeWindow::ALL)?)
    }

    /// What all of a tenant's runs have consumed (R-RUN-7).
    pub fn tenant_cost(&self, tenant: &TenantId) -> Result<Counters, RuntimeError> {
        self.tenant_cost_in(tenant, TimeWindow::ALL)
    }

    /// What a tenant's runs consumed within `window`, by the time written on
    /// each record ("what did this tenant spend in November"). Every run
    /// whose records are stored is read, in one snapshot, not the runs
    /// table's list (derived data): a run whose row is gone is refused, not
    /// left out of the figure (R-RUN-7, R-AUD-8).
    pub fn tenant_cost_in(&self, tenant: &TenantId, window: TimeWindow) -> Result<Counters, RuntimeError> {
        let config = self.tenant(tenant)?;
        let check = ChainCheck {
            upcasters: &self.upcasters,
            verifier: self.verifier.as_deref(),
            options: VerifyOptions::default(),
        };
        let mut total = Ok(Counters::default());
        self.journal(config).each_run(check, &mut |run, verified| {
            // A run copied in from another tenant is never this one's
            // spending (issue 20, R-COVER-4), as the CLI's `cost` holds it.
            let verified = verified?;
            verified.bound_to(&config.tenant, &run)?;
            total = total.and_then(|sum: Counters| sum.checked_add(&try_cost_in(&verified, window)?));
            Ok(())
        })?;
        Ok(total?)
    }

    fn append_to(
        &self,
        tenant: &TenantId,
        run: &RunId,
        effect_key: Option<String>,
        body: RecordBody,
    ) -> Result<(), RuntimeError> {
        self.append_to_if(tenant, run, effect_key, body, |_| Ok(()))
    }

    /// [`Self::append_to`] when `applies` accepts the run's state as read for
    /// the append (why not, else): the check and the append are of one read,
    /// the record appended after the head that read found, so a record
    /// another process appended meanwhile (a resume that answered the same
    /// stop and performs the effect again) makes it a conflict, never an
    /// answer to something the check did not see.
    fn append_to_if(
        &self,
        tenant: &TenantId,
        run: &RunId,
        effect_key: Option<String>,
        body: RecordBody,
        applies: impl FnOnce(&RunState) -> Result<(), String>,
    ) -> Result<(), RuntimeError> {
        let config = self.tenant(tenant)?;
        let verified = self.answerable_run(config, run)?;
        applies(&RunState::of(&verified.records))
            .map_err(|reason| RuntimeError::NotApplicable { run: run.clone(), reason })?;
        self.journal(config).append(run, verified.head, effect_key, body)?;
        Ok(())
    }

    /// `run` read and verified for an answer to be appended to it. An answer
    /// (a raised ceiling, a lifted withholding, a doubt answered, a
    /// conclusion) is held to what resume is held to: never signed onto a
    /// store older than the plane's mark, or onto a run cut back behind it
    /// (R-RUN-5, R-COVER-2), nor onto a sealed run.
    fn answerable_run(&self, config: &TenantConfig, run: &RunId) -> Result<VerifiedRun, RuntimeError> {
        self.refuse_older_store(config)?;
        let covered = self.covered_head(config, run)?;
        let verified = self.read(config, run)?;
        Self::refuse_cut_back(run, covered, &verified.records)?;
        if verified.sealed() {
            return Err(JournalError::Sealed { run: run.clone() }.into());
        }
        Ok(verified)
    }

    /// Holds the answers a command is about to record for `run` (each
    /// effect's doubt answered, and the hold lifted with `lift`) to the run
    /// as it stands, writing nothing: every check each answer's append
    /// makes, and an effect answered twice refused. Each answer is its own
    /// append, so a command recording several asks this first: one refused
    /// after the others were written would leave it half done.
    pub fn check_answers(
        &self,
        tenant: &TenantId,
        run: &RunId,
        effect_keys: &[&str],
        lift: bool,
    ) -> Result<(), RuntimeError> {
        let config = self.tenant(tenant)?;
        let state = RunState::of(&self.answerable_run(config, run)?.records);
        let not_applicable = |reason: String| RuntimeError::NotApplicable { run: run.clone(), reason };
        let mut answered = std::collections::BTreeSet::new();
        for effect_key in effect_keys {
            if !answered.insert(*effect_key) {
                return Err(not_applicable(format!(
                    "effect {effect_key} is answered twice: give each effect one answer"
                )));
            }
            state.doubt_answerable(effect_key).map_err(not_applicable)?;
        }
        if lift {
            lift_applies(&state).map_err(not_applicable)?;
        }
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
        let lifted = RecordBody::WithholdingLifted(WithholdingLifted { note: note.to_owned() });
        self.append_to_if(tenant, run, None, lifted, lift_applies)
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
    /// back from now on), or did not (it may be performed again). Refused
    /// where [`RunState::doubt_answerable`] says it does not apply.
    pub fn answer_doubt(
        &self,
        tenant: &TenantId,
        run: &RunId,
        effect_key: &str,
        answer: DoubtAnswer,
    ) -> Result<(), RuntimeError> {
        let answered = RecordBody::DoubtAnswered(DoubtAnswered { answer });
        self.append_to_if(tenant, run, Some(effect_key.to_owned()), answered, |state| {
            state.doubt_answerable(effect_key)
        })
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
}

/// The first effect started by `at_seq`, neither done nor open there (a
/// person answered it as not happened), whose end `records` hold after
/// `at_seq` with no start of it between: that start's end. Its key and the
/// end's seq.
fn ended_after(records: &[crate::chain::VerifiedRecord], at_seq: u64, at_point: &RunState) -> Option<(String, u64)> {
    let key_of = |record: &crate::chain::VerifiedRecord| record.record.effect_key.clone();
    let (prefix, rest): (Vec<_>, Vec<_>) = records.iter().partition(|r| r.stored.seq <= at_seq);
    let started: std::collections::BTreeSet<String> = prefix
        .iter()
        .filter(|r| matches!(r.record.body, RecordBody::EffectStarted(_)))
        .filter_map(|r| key_of(r))
        .filter(|key| at_point.done(key).is_none())
        .collect();
    let mut started_again = std::collections::BTreeSet::new();
    for record in rest {
        let Some(key) = key_of(record) else { continue };
        match record.record.body {
            RecordBody::EffectStarted(_) => {
                started_again.insert(key);
            }
            RecordBody::EffectDone(_) if started.contains(&key) && !started_again.contains(&key) => {
                return Some((key, record.stored.seq));
            }
            _ => {}
        }
    }
    None
}

/// Whether a hold stands on the run for a lift to lift.
fn lift_applies(state: &RunState) -> Result<(), String> {
    let withheld = state.standing().is_some_and(|c| c.outcome == Outcome::Withheld);
    if withheld { Ok(()) } else { Err("it is not withheld: there is no hold to lift".into()) }
}

/// Whether an open run's admission stopped part way: its chain begins with
/// a `RunAdmitted`, holds no `PlanFrozen`, and nothing of the run was driven
/// (a fork's `RunForked` aside, only what an operator appends to a run:
/// conclusions, lifts, raised ceilings). Only a delivery of the admission
/// knows the rest, an operator's hold on the stuck run notwithstanding.
pub(crate) fn unfinished_admission(verified: &VerifiedRun) -> bool {
    let Some((first, rest)) = verified.records.split_first() else { return false };
    !verified.sealed()
        && matches!(first.record.body, RecordBody::RunAdmitted(_))
        && rest.iter().all(|record| {
            matches!(
                record.record.body,
                RecordBody::RunForked(_)
                    | RecordBody::RunConcluded(_)
                    | RecordBody::WithholdingLifted(_)
                    | RecordBody::CeilingRaised(_)
            )
        })
}

/// The refusal to admit or resume on a lost mark (R-PLANE-2, R-RUN-5): the
/// plane cannot tell whether the store is older than what it signed, nor
/// hold the log's leaves to a signed root, so a cut hidden with the leaf
/// that covered it would run its done effects again. The plane signs
/// nothing on it either.
fn lost_mark(config: &TenantConfig, reason: &str, high_water: &dyn crate::log::HighWater) -> RuntimeError {
    JournalError::StoreDamage {
        tenant: config.tenant.clone(),
        detail: format!(
            "the plane's record of its last signature is lost ({reason}): it cannot tell whether this store is \
             older than what it signed. No run is admitted or resumed here (their recorded effects could run \
             again): put {} back from a backup, or let the configured witnesses rebuild it (`agentplane \
             checkpoint` asks every one)",
            high_water.location()
        ),
    }
    .into()
}
