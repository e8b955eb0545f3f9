//! Driving a run: admission's answer, the handle agent code calls (steps,
//! effects at most once, conclusions), and resume.

use super::{RunStatus, Runtime, RuntimeError, TenantConfig};
use crate::chain::ExpectedHead;
use crate::error::JournalError;
use crate::ids::{RunId, TenantId};
use crate::record::{
    Counters, Dimension, DoubtAnswer, EffectDone, EffectResult, EffectStarted, Holding, Outcome, PlanFrozen,
    RecordBody, Released, RunConcluded, RunForked, StepMark, Verdict,
};
use crate::run_state::RunState;

/// A run being driven by this runtime. Its head is the one it appended last;
/// if another runtime appended since, the next append is a `Conflict`. Its
/// state is the fold of the records it has read and appended: each record it
/// appends is applied ([`RunState::apply`]), and its state changes no other way.
pub struct RunHandle<'rt> {
    pub(super) runtime: &'rt Runtime,
    pub(super) tenant: TenantConfig,
    pub(super) run: RunId,
    pub(super) head: ExpectedHead,
    pub(super) state: RunState,
    /// Set when this handle concluded the run: it drives nothing more (a
    /// resume, after the reason is answered, gives a new handle).
    pub(super) stopped: bool,
    /// The steps a resumed run's history holds, which its code passes again.
    pub(super) steps: StepsReadBack,
}

/// One step record: a step's start or its finish, by the step's name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum StepEdge {
    Start(String),
    Finish(String),
}

/// The step records of a resumed run's history, which its code, driven
/// again from its top, passes again (R-RUN-5): read back in order, as done
/// effects are read back by key, so that a resume records (and counts
/// against a steps ceiling) no step the history already holds. The first
/// call that goes another way than the history ends the reading back, and
/// from there every call is recorded. An effect performed while the
/// history went on past that point (its code is not the history's, or it
/// continues a loop where it stopped under a step name the history
/// started there) first records the steps read back and still open: the
/// effect is then inside a step its journal shows started.
#[derive(Debug, Default)]
pub(super) struct StepsReadBack {
    /// The history's step records not yet passed again, in chain order.
    ahead: std::collections::VecDeque<StepEdge>,
    /// Steps read back as started and not read back as finished, in order.
    open: Vec<String>,
    /// Steps the reading back ended in, where the history went on past
    /// them, not yet recorded again: each stays owed until its start is
    /// written, so a write that failed leaves it to the next call.
    owed: std::collections::VecDeque<String>,
}

impl StepsReadBack {
    /// The step records of `records`, a run's verified history.
    pub(super) fn of(records: &[crate::chain::VerifiedRecord]) -> Self {
        let ahead = records
            .iter()
            .filter_map(|record| match &record.record.body {
                RecordBody::StepStarted(mark) => Some(StepEdge::Start(mark.step.clone())),
                RecordBody::StepFinished(mark) => Some(StepEdge::Finish(mark.step.clone())),
                _ => None,
            })
            .collect();
        Self { ahead, ..Self::default() }
    }

    /// Whether `edge` is the history's next step record: passed, nothing to record.
    fn read_back(&mut self, edge: StepEdge) -> bool {
        if self.ahead.front() != Some(&edge) {
            return false;
        }
        self.ahead.pop_front();
        match edge {
            StepEdge::Start(step) => self.open.push(step),
            StepEdge::Finish(step) => {
                if let Some(at) = self.open.iter().rposition(|open| *open == step) {
                    self.open.remove(at);
                }
            }
        }
        true
    }

    /// Ends the reading back: the steps read back and still open that the
    /// history went on past are owed (each to be recorded again), none
    /// once the code has passed every step record the history holds (its
    /// open steps are the history's).
    fn end(&mut self) {
        let open = std::mem::take(&mut self.open);
        if !self.ahead.is_empty() {
            self.owed.extend(open);
        }
        self.ahead.clear();
    }
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

/// The most bytes of an effect key a run performs an effect under: the
/// key is model output, and every record about the effect quotes it (its
/// start, end and release, a doubt's or a failure's verdict), so a key as
/// large as a record allows its start left no room for the conclusion
/// about it (the run left unconcluded). A key read back (done) is
/// answered whatever its length.
pub const MAX_EFFECT_KEY_BYTES: usize = 4096;

/// The most bytes of an effect's error a `failed` conclusion's verdict
/// quotes: the whole error is its `EffectDone` record's.
pub const MAX_VERDICT_ERROR_BYTES: usize = 64 << 10;

/// The most bytes of an effect key, a step's name or an error a
/// conclusion's human reason quotes.
const MAX_REASON_QUOTE_BYTES: usize = 256;

/// `text` whole when it holds at most `max` bytes, else its first `max`
/// bytes (at a character's boundary) and how long it was, with `whole`:
/// where the rest is.
fn quoted(text: &str, max: usize, whole: &str) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let cut = (0..=max).rev().find(|at| text.is_char_boundary(*at)).unwrap_or(0);
    format!("{}… ({} bytes in all; {whole})", text.get(..cut).unwrap_or_default(), text.len())
}

impl Runtime {
    /// Resumes a run (R-RUN-5, R-RUN-6): verifies its chain, reads its own last
    /// outcome from that history, and continues when the reason for stopping
    /// is answered. An effect started with no recorded end quarantines it.
    pub fn resume(&self, tenant: &TenantId, run: &RunId) -> Result<RunHandle<'_>, RuntimeError> {
        let config = self.tenant(tenant)?.clone();
        self.refuse_older_store(&config)?;
        let covered = self.covered_head(&config, run)?;
        let verified = self.read(&config, run)?;
        Self::refuse_cut_back(run, covered, &verified.records)?;
        let head = verified.head.ok_or_else(|| JournalError::NotFound { tenant: tenant.clone(), run: run.clone() })?;
        if super::unfinished_admission(&verified) {
            // A fork interrupted before its provenance would run as a plain
            // run and perform its source's done effects again (R-RUN-5).
            return Err(RuntimeError::NotApplicable {
                run: run.clone(),
                reason: "its admission did not finish (it has no PlanFrozen): deliver the admission again, with \
                         the same idempotency key, to finish it"
                    .into(),
            });
        }
        let state = self.state_of(&config, run, &verified)?;
        let steps = StepsReadBack::of(&verified.records);
        let mut handle =
            RunHandle { runtime: self, tenant: config, run: run.clone(), head, state, stopped: false, steps };
        if handle.state.standing().is_some_and(|c| c.outcome == Outcome::Withheld) {
            // An operator's hold comes first: a doubt found under it is
            // quarantined once the hold is lifted, never in its place.
            return Err(handle.stopped());
        }
        if let Some(key) = handle.state.in_doubt().first().map(|key| (*key).to_owned()) {
            let already = handle.state.standing().is_some_and(|c| c.outcome == Outcome::Quarantined);
            if !already {
                handle.conclude(
                    Outcome::Quarantined,
                    Verdict::Doubt { effect_key: key.clone() },
                    &format!(
                        "effect {} started and has no recorded end; a person must say whether it happened",
                        quoted(&key, MAX_REASON_QUOTE_BYTES, "cut")
                    ),
                )?;
            }
            return Err(handle.stopped());
        }
        if !handle.state.may_continue() {
            // The reason to stop is unanswered: the verdict already in the
            // journal is the answer, and nothing more is appended.
            return Err(handle.stopped());
        }
        // A ceiling the journal already crossed holds whatever the last
        // conclusion says (a crash before the `exhausted` conclusion, a
        // failed effect that also crossed it, a ceiling lowered): the run
        // concludes exhausted here rather than perform past it (R-RUN-4).
        let counters = handle.state.counters();
        if let Some((dimension, ceiling)) = handle.state.budget().first_exceeded(&counters) {
            return Err(handle.exhaust(dimension, ceiling, counters, "resuming"));
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
        self.state.counters()
    }

    /// The run's state: the fold of its journal up to this handle's head
    /// (a fork's source effects up to its fork point served as done).
    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// Appends after this handle's head and applies the record written.
    pub(super) fn append(&mut self, effect_key: Option<String>, body: RecordBody) -> Result<(), RuntimeError> {
        if self.stopped {
            return Err(self.stopped());
        }
        let (appended, record) =
            self.runtime.journal(&self.tenant).append_record(&self.run, Some(self.head), effect_key, body)?;
        self.head = appended.head;
        self.state.apply(&record);
        Ok(())
    }

    /// Appends the rest of an admission after its `RunAdmitted`: a fork's
    /// provenance (its source's effects up to the fork point then served
    /// here), then the frozen plan.
    pub(super) fn finish_admission(
        &mut self,
        forked: Option<RunForked>,
        plan: Vec<String>,
    ) -> Result<(), RuntimeError> {
        if let Some(forked) = forked {
            self.state.serve_from(self.runtime.fork_seed(&self.tenant, &self.run, &forked)?);
            self.append(None, RecordBody::RunForked(forked))?;
        }
        self.append(None, RecordBody::PlanFrozen(PlanFrozen { steps: plan }))
    }

    pub(super) fn conclude(&mut self, outcome: Outcome, verdict: Verdict, reason: &str) -> Result<(), RuntimeError> {
        let concluded = RunConcluded { outcome, verdict, reason: reason.to_owned() };
        let written = self.append(None, RecordBody::RunConcluded(concluded));
        // Tried, the conclusion stops the handle whether or not it was
        // written: the run ends here (an effect failed, a ceiling crossed, a
        // doubt), and agent code must not drive on past that because the
        // store failed to take the record. What it did write is what resume
        // reads, and the failed effect read back there concludes it again.
        self.stopped = true;
        written
    }

    pub(super) fn stopped(&self) -> RuntimeError {
        RuntimeError::Stopped { run: self.run.clone(), status: self.state.status() }
    }

    fn exhaust(&mut self, dimension: Dimension, ceiling: u64, counters: Counters, what: &str) -> RuntimeError {
        let what = quoted(what, MAX_REASON_QUOTE_BYTES, "cut");
        let reason = format!("{what}: {dimension} ceiling {ceiling} reached at {}", counters.get(dimension));
        match self.conclude(Outcome::Exhausted, Verdict::BudgetExceeded { dimension, ceiling, counters }, &reason) {
            Ok(()) => self.stopped(),
            Err(err) => err,
        }
    }

    /// Starts a step; the steps ceiling is checked first. A step the
    /// ceiling refuses is not started, so the verdict's counters are what
    /// the journal holds (what `cost` reads), not what the step would have
    /// made. On a resumed run, the history's next step record when it is
    /// this step's start: read back, nothing recorded or counted (R-RUN-5).
    pub fn start_step(&mut self, step: &str) -> Result<(), RuntimeError> {
        if self.stopped {
            return Err(self.stopped());
        }
        if self.steps.read_back(StepEdge::Start(step.to_owned())) {
            return Ok(());
        }
        self.record_open_steps()?;
        self.record_step_start(step)
    }

    fn record_step_start(&mut self, step: &str) -> Result<(), RuntimeError> {
        let counters = self.state.counters();
        if let Some(ceiling) = self.state.budget().ceiling(Dimension::Steps).filter(|c| counters.steps >= *c) {
            return Err(self.exhaust(Dimension::Steps, ceiling, counters, &format!("starting step {step}")));
        }
        self.append(None, RecordBody::StepStarted(StepMark { step: step.to_owned() }))
    }

    /// Ends the reading back of a resumed run's steps, recording the steps
    /// read back and still open where the history went on past them.
    /// A step stays owed until its start is written: an effect retried
    /// after that write failed is still performed inside it (R-RUN-5).
    fn record_open_steps(&mut self) -> Result<(), RuntimeError> {
        self.steps.end();
        while let Some(step) = self.steps.owed.front().cloned() {
            self.record_step_start(&step)?;
            self.steps.owed.pop_front();
        }
        Ok(())
    }

    /// Finishes a step. On a resumed run, the history's next step record
    /// when it is this step's finish: read back, nothing recorded (R-RUN-5).
    pub fn finish_step(&mut self, step: &str) -> Result<(), RuntimeError> {
        if self.stopped {
            return Err(self.stopped());
        }
        if self.steps.read_back(StepEdge::Finish(step.to_owned())) {
            return Ok(());
        }
        self.record_open_steps()?;
        self.append(None, RecordBody::StepFinished(StepMark { step: step.to_owned() }))
    }

    /// Performs an effect at most once (R-RUN-5): `EffectStarted` is recorded
    /// before `perform` runs and `EffectDone` after. An effect already done
    /// (or answered as happened) is read back, not performed. Charges count
    /// against the budget; crossing a ceiling concludes `exhausted`; an error
    /// concludes `failed`, performed or read back (R-RUN-6).
    pub fn effect(
        &mut self,
        effect_key: &str,
        step: &str,
        perform: impl FnOnce() -> EffectOutput,
    ) -> Result<EffectResult, RuntimeError> {
        if self.stopped {
            return Err(self.stopped());
        }
        if let Some(result) = self.state.done(effect_key) {
            if let EffectResult::Err { error } = result {
                // A failed effect read back stops the code as it did live
                // (R-RUN-5, R-RUN-6): read back as an answer, the code drove
                // on past it (a crash before its `failed` conclusion, or a
                // failed run resumed with the same code) and sealed the run.
                let error = error.clone();
                return Err(self.fail_effect(effect_key, &error));
            }
            return Ok(result.clone());
        }
        if effect_key.len() > MAX_EFFECT_KEY_BYTES {
            return Err(RuntimeError::EffectKeyTooLong {
                run: self.run.clone(),
                bytes: effect_key.len(),
                max: MAX_EFFECT_KEY_BYTES,
            });
        }
        self.record_open_steps()?;
        let counters = self.state.counters();
        if let Some(ceiling) = self.state.budget().ceiling(Dimension::Effects).filter(|c| counters.effects >= *c) {
            return Err(self.exhaust(Dimension::Effects, ceiling, counters, &format!("effect {effect_key}")));
        }
        let key = Some(effect_key.to_owned());
        let reserved = Counters { effects: 1, ..Counters::default() };
        self.append(key.clone(), RecordBody::EffectStarted(EffectStarted { step: step.to_owned(), reserved }))?;
        let output = perform();
        let done = RecordBody::EffectDone(EffectDone { result: output.result.clone(), charged: output.charged });
        match self.append(key.clone(), done.clone()) {
            Err(conflict @ RuntimeError::Journal(JournalError::Conflict { .. })) => {
                self.end_after_an_operator(effect_key, done, reserved, conflict)?;
            }
            answer => answer?,
        }
        self.append(key, RecordBody::Released(Released { holding: Holding::Reservation, amount: reserved }))?;
        if let EffectResult::Err { error } = &output.result {
            return Err(self.fail_effect(effect_key, error));
        }
        let counters = self.state.counters();
        if let Some((dimension, ceiling)) = self.state.budget().first_exceeded(&counters) {
            return Err(self.exhaust(dimension, ceiling, counters, &format!("effect {effect_key}")));
        }
        Ok(output.result)
    }

    /// Concludes `failed` for the effect `effect_key` that ended in `error`
    /// and stops the handle; what the code is told. Read back, a failure
    /// the run's standing conclusion already names is not concluded again
    /// (each resume of the same code reads the same failure back).
    fn fail_effect(&mut self, effect_key: &str, error: &str) -> RuntimeError {
        let named = self.state.standing().is_some_and(|c| {
            c.outcome == Outcome::Failed
                && matches!(&c.verdict, Verdict::EffectFailed { effect_key: failed, .. } if failed == effect_key)
        });
        if named {
            self.stopped = true;
            return self.stopped();
        }
        // The error is model output of any size the effect's record held:
        // the conclusion quotes it cut, so that it is never too large to
        // record (the run would stay unconcluded, the handle driving on past
        // its failed effect). The whole error is the `EffectDone` record's.
        let whole = "the whole error is the effect's EffectDone record";
        let verdict = Verdict::EffectFailed {
            effect_key: effect_key.to_owned(),
            error: quoted(error, MAX_VERDICT_ERROR_BYTES, whole),
        };
        let reason = format!(
            "effect {} failed: {}",
            quoted(effect_key, MAX_REASON_QUOTE_BYTES, "cut"),
            quoted(error, MAX_REASON_QUOTE_BYTES, whole)
        );
        match self.conclude(Outcome::Failed, verdict, &reason) {
            Ok(()) => self.stopped(),
            Err(err) => err,
        }
    }

    /// An effect's end met another record at the head: an operator withheld
    /// the run while the effect ran (and may have raised a ceiling or lifted
    /// the hold since), or resumed it beside this worker and so quarantined
    /// it (a quarantine after this handle's last record found this effect
    /// open, whichever doubt its verdict names), or a person answered this
    /// effect "did not happen" before its end came. The end is a fact about
    /// the world, so it is recorded after those records while nothing has
    /// started the effect again: under a standing hold or quarantine (which
    /// the end settles, as an answer would, when the quarantine names this
    /// effect), or after a quarantine or an answer, with its reservation
    /// released, and the worker is told the run is stopped (once lifted,
    /// answered or resumed, the run reads the result back instead of
    /// doubting it or performing it again); with only a hold and its lift
    /// between, `Ok` and the effect goes on as if uninterrupted (R-RUN-5).
    /// Anything else (the chain no longer holding this handle's last record,
    /// a sealed run, another conclusion, an answer that it happened, the
    /// effect started again) answers the conflict.
    fn end_after_an_operator(
        &mut self,
        effect_key: &str,
        done: RecordBody,
        reserved: Counters,
        conflict: RuntimeError,
    ) -> Result<(), RuntimeError> {
        let fresh = match self.runtime.read(&self.tenant, &self.run) {
            Ok(fresh) => fresh,
            // A record at the head this build cannot read (a newer build's
            // operator, R-VER-4): nothing tells a hold from a run taken
            // over, and the answer is the build skew with its remedy, not
            // a conflict to retry; nothing is written past it.
            Err(RuntimeError::Journal(err)) if err.is_build_skew() => return Err(err.into()),
            Err(_) => return Err(conflict),
        };
        let ours = usize::try_from(self.head.seq).ok();
        let extends_ours = ours
            .and_then(|seq| seq.checked_sub(1))
            .and_then(|index| fresh.records.get(index))
            .is_some_and(|record| record.stored.hash == self.head.hash);
        let after = fresh.records.get(ours.unwrap_or(usize::MAX)..);
        // A person answered this effect "did not happen" while it ran.
        let answered_not_happened = |record: &crate::chain::VerifiedRecord| {
            matches!(&record.record.body, RecordBody::DoubtAnswered(answered) if answered.answer == DoubtAnswer::DidNotHappen)
                && record.record.effect_key.as_deref() == Some(effect_key)
        };
        // Only an operator's hold, its lift and raised ceilings, a
        // quarantine by a resume beside this live worker (any after this
        // handle's last record found this effect open), or a person's
        // answer that it did not happen, came after this handle's last
        // record: nothing that performs the effect again.
        let operators_only = after.is_some_and(|after| {
            after.iter().all(|record| match &record.record.body {
                RecordBody::RunConcluded(concluded) => {
                    matches!(concluded.outcome, Outcome::Withheld | Outcome::Quarantined)
                }
                RecordBody::WithholdingLifted(_) | RecordBody::CeilingRaised(_) => true,
                RecordBody::DoubtAnswered(_) => answered_not_happened(record),
                _ => false,
            })
        });
        // A quarantine or an answer came after this handle's last record:
        // the run stopped for this worker, whatever stands now.
        let interrupted = after.is_some_and(|after| {
            after.iter().any(|record| match &record.record.body {
                RecordBody::RunConcluded(concluded) => concluded.outcome == Outcome::Quarantined,
                RecordBody::DoubtAnswered(_) => true,
                _ => false,
            })
        });
        let state = RunState::of(&fresh.records);
        let held = state.standing().is_some_and(|c| {
            c.outcome == Outcome::Withheld || (c.outcome == Outcome::Quarantined && state.is_found_in_doubt(effect_key))
        });
        let open = state.is_in_doubt(effect_key);
        let answered = after.is_some_and(|after| after.iter().any(answered_not_happened));
        let ends = (held && open) || (operators_only && (open || answered));
        let (Some(head), true) = (fresh.head, extends_ours && ends && !fresh.sealed()) else {
            return Err(conflict);
        };
        let Ok(state) = self.runtime.state_of(&self.tenant, &self.run, &fresh) else { return Err(conflict) };
        (self.head, self.state) = (head, state);
        let key = Some(effect_key.to_owned());
        self.append(key.clone(), done)?;
        if !held && !interrupted {
            return Ok(());
        }
        let released = RecordBody::Released(Released { holding: Holding::Reservation, amount: reserved });
        self.append(key, released)?;
        self.stopped = true;
        Err(self.stopped())
    }

    /// Concludes with `outcome` (no machine verdict) and stops the handle:
    /// what [`RunContext`](crate::regression::RunContext) calls, by reference.
    pub(crate) fn conclude_here(&mut self, outcome: Outcome, reason: &str) -> Result<(), RuntimeError> {
        if self.stopped {
            return Err(self.stopped());
        }
        self.conclude(outcome, Verdict::None, reason)
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
