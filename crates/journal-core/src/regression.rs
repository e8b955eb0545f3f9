//! Regression testing as a read of the journal: agent code written against
//! [`RunContext`] runs live on a [`RunHandle`], or
//! replays a recorded run on a [`ReplayHandle`], where every effect is
//! answered from the record without calling its closure and nothing is
//! written anywhere. The first place the new code asks for something the
//! record does not hold is the answer ([`Divergence`]).
//!
//! ```
//! use journal_core::regression::{RunContext, replay};
//! use journal_core::runtime::RuntimeError;
//! use journal_core::{
//!     AdmitRequest, Admission, Budget, ChainCheck, Counters, EffectOutput, EffectResult, Journal, MemoryStore, Origin,
//!     RuntimeBuilder, TenantId, Upcasters, VerifyOptions,
//! };
//! use std::sync::Arc;
//!
//! /// The agent: generic over live and replayed runs.
//! fn agent(run: &mut impl RunContext, extra: bool) -> Result<(), RuntimeError> {
//!     run.start_step("research")?;
//!     run.effect("ek:search", "research", || EffectOutput {
//!         result: EffectResult::Ok { output: "3 hits".into() },
//!         charged: Counters { tokens: 40, ..Counters::default() },
//!     })?;
//!     if extra {
//!         run.effect("ek:translate", "research", || unreachable!("never performed in a replay"))?;
//!     }
//!     run.finish_step("research")?;
//!     run.succeed("answered")
//! }
//!
//! let store = Arc::new(MemoryStore::new());
//! let tenant = TenantId::new("t")?;
//! let origin = Origin::new("example.com/plane/t")?;
//! let runtime = RuntimeBuilder::new(store.clone()).tenant(tenant.clone(), origin.clone(), None).build()?;
//! let request = AdmitRequest { idempotency_key: "job-1".into(), plan: vec!["research".into()], budget: Budget::default() };
//! let Admission::New(mut live) = runtime.admit(&tenant, request)? else { unreachable!() };
//! let id = live.run().clone();
//! agent(&mut *live, false)?;
//!
//! let upcasters = Upcasters::builtin();
//! let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
//! let recorded = Journal::new(store.as_ref(), &tenant, &origin).read(&id, check)?;
//! assert!(replay(&id, &recorded.records, &["research".into()], |run| agent(run, false)).matched());
//! let changed = replay(&id, &recorded.records, &["research".into()], |run| agent(run, true));
//! assert!(!changed.matched());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};

use crate::chain::VerifiedRecord;
use crate::ids::RunId;
use crate::journal::{last_conclusion_at, plan_at};
use crate::record::{Counters, Dimension, DoubtAnswer, EffectResult, Outcome, RecordBody, RunConcluded, Verdict};
use crate::run_state::{RunState, Totals};
use crate::runtime::{EffectOutput, RunHandle, RunStatus, RuntimeError};

/// What agent code calls on a run, live or replayed.
pub trait RunContext {
    /// Starts a step.
    fn start_step(&mut self, step: &str) -> Result<(), RuntimeError>;
    /// Finishes a step.
    fn finish_step(&mut self, step: &str) -> Result<(), RuntimeError>;
    /// Performs an effect at most once (live), or answers it from the record (replay).
    fn effect<F: FnOnce() -> EffectOutput>(
        &mut self,
        effect_key: &str,
        step: &str,
        perform: F,
    ) -> Result<EffectResult, RuntimeError>;
    /// Concludes `succeeded`.
    fn succeed(&mut self, reason: &str) -> Result<(), RuntimeError>;
    /// Concludes `failed` with an error of the caller's.
    fn fail(&mut self, error: &str) -> Result<(), RuntimeError>;
}

impl RunContext for RunHandle<'_> {
    fn start_step(&mut self, step: &str) -> Result<(), RuntimeError> {
        RunHandle::start_step(self, step)
    }

    fn finish_step(&mut self, step: &str) -> Result<(), RuntimeError> {
        RunHandle::finish_step(self, step)
    }

    fn effect<F: FnOnce() -> EffectOutput>(
        &mut self,
        effect_key: &str,
        step: &str,
        perform: F,
    ) -> Result<EffectResult, RuntimeError> {
        RunHandle::effect(self, effect_key, step, perform)
    }

    fn succeed(&mut self, reason: &str) -> Result<(), RuntimeError> {
        self.conclude_here(Outcome::Succeeded, reason)
    }

    fn fail(&mut self, error: &str) -> Result<(), RuntimeError> {
        self.conclude_here(Outcome::Failed, error)
    }
}

/// Where new code left the recorded run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Divergence {
    /// The new code follows another plan than the one recorded.
    DifferentPlan {
        /// The recorded plan.
        recorded: Vec<String>,
        /// The new plan.
        replayed: Vec<String>,
    },
    /// The new code asks for an effect the record does not have at this point.
    UnexpectedEffect {
        /// The effect asked for.
        effect_key: String,
        /// What the record has here.
        recorded: String,
    },
    /// The record has an effect here that the new code skipped.
    SkippedEffect {
        /// The recorded effect.
        effect_key: String,
        /// What the new code did instead.
        replayed: String,
    },
    /// The new code performs the recorded effect in another step than the
    /// record's `EffectStarted` names: live, it would write another journal.
    EffectInOtherStep {
        /// The effect.
        effect_key: String,
        /// The step the record performed it in.
        recorded: String,
        /// The step the new code performs it in.
        replayed: String,
    },
    /// The new code starts or finishes a step the record does not have here.
    UnexpectedStep {
        /// What the new code did.
        replayed: String,
        /// What the record has here.
        recorded: String,
    },
    /// The new code concludes otherwise than the record.
    DifferentConclusion {
        /// The recorded last conclusion, if any.
        recorded: Option<Outcome>,
        /// The new code's.
        replayed: Option<Outcome>,
    },
    /// The new code concludes as the record does, for another reason (a
    /// failure's is the code's error): `agentplane diff` tells the two apart too.
    DifferentReason {
        /// The outcome both conclude.
        outcome: Outcome,
        /// The recorded reason.
        recorded: String,
        /// The new code's.
        replayed: String,
    },
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::DifferentPlan { recorded, replayed } => {
                write!(f, "plan {replayed:?}, the record has {recorded:?}")
            }
            Self::UnexpectedEffect { effect_key, recorded } => {
                write!(f, "effect {effect_key}, the record has {recorded} here")
            }
            Self::SkippedEffect { effect_key, replayed } => {
                write!(f, "the record has effect {effect_key} here; the new code did {replayed}")
            }
            Self::EffectInOtherStep { effect_key, recorded, replayed } => {
                write!(f, "effect {effect_key} in step {replayed}, the record performed it in step {recorded}")
            }
            Self::UnexpectedStep { replayed, recorded } => write!(f, "{replayed}, the record has {recorded} here"),
            Self::DifferentConclusion { recorded, replayed } => write!(
                f,
                "concludes {}, the record {}",
                replayed.map_or("nothing", |o| o.as_str()),
                recorded.map_or("nothing", |o| o.as_str())
            ),
            Self::DifferentReason { outcome, recorded, replayed } => {
                write!(f, "concludes {outcome} with {replayed:?}, the record with {recorded:?}")
            }
        }
    }
}

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayReport {
    /// The run replayed.
    pub run: RunId,
    /// The first divergence and the seq of the recorded record where it
    /// happened (the record after the run's last, when the new code goes on).
    pub divergence: Option<(u64, Divergence)>,
    /// What the recorded run consumed: the figures `runs` and the console
    /// show, each `None` past `u64::MAX`, never held at the limit (R-RUN-7).
    pub recorded_cost: Totals,
    /// What the replayed code asked for, by the recorded charges, each
    /// `None` past `u64::MAX`.
    pub replayed_cost: Totals,
}

impl ReplayReport {
    /// The new code did what the record did, to the end.
    pub fn matched(&self) -> bool {
        self.divergence.is_none()
    }
}

/// One thing the agent did, as the record shows it.
#[derive(Debug, Clone)]
enum Action {
    Step(String),
    StepEnd(String),
    /// An effect: its key, the step its `EffectStarted` names (`None`
    /// when the record holds no start of it), its result and charges.
    Effect(String, Option<String>, EffectResult, Counters),
    /// The code's conclusion, with its reason.
    Conclusion(Outcome, String),
    /// The run's end was the runtime's or an operator's (a failed effect, a
    /// ceiling, a doubt, a hold, a cancel): the code is stopped there, as it was live.
    Stop(RunConcluded),
}

impl Action {
    fn describe(&self) -> String {
        match self {
            Self::Step(step) => format!("step {step} starting"),
            Self::StepEnd(step) => format!("step {step} finishing"),
            Self::Effect(key, ..) => format!("effect {key}"),
            Self::Conclusion(outcome, _) => format!("the conclusion {outcome}"),
            Self::Stop(concluded) => format!("the run stopped {}", concluded.outcome),
        }
    }
}

/// What the code calls, as far as a recorded stop tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    /// Starting a step.
    StepStart,
    /// An effect the replay has not answered yet.
    Effect,
    /// Anything else: finishing a step, concluding.
    Other,
}

/// The one call a recorded stop refuses, when it refuses only one: a steps
/// (effects) ceiling reached, not crossed, refused the next step's start
/// (the next effect's) before it was recorded, and the runtime lets every
/// other call through (finishing a step, concluding, an effect read back).
/// `None`: the stop is one the code meets at whatever it calls next (an
/// operator's, a doubt, a ceiling crossed).
fn refused_only(concluded: &RunConcluded) -> Option<Call> {
    match &concluded.verdict {
        Verdict::BudgetExceeded { dimension: Dimension::Steps, ceiling, counters } if counters.steps <= *ceiling => {
            Some(Call::StepStart)
        }
        Verdict::BudgetExceeded { dimension: Dimension::Effects, ceiling, counters }
            if counters.effects <= *ceiling =>
        {
            Some(Call::Effect)
        }
        _ => None,
    }
}

/// A recorded run being replayed. Nothing it does is written anywhere.
#[derive(Debug)]
pub struct ReplayHandle {
    actions: Vec<(u64, Action)>,
    cursor: usize,
    done: BTreeMap<String, EffectResult>,
    end_seq: u64,
    divergence: Option<(u64, Divergence)>,
    replayed_cost: Totals,
    stopped: Option<RunStatus>,
    /// The effect whose end the recorded stop was met at (see [`Self::new`]).
    stop_after_effect: Option<String>,
}

/// The run the replay stopped: where the record stops (with its status), or
/// at the first divergence.
fn diverged(run: &RunId, handle: &ReplayHandle) -> RuntimeError {
    RuntimeError::Stopped { run: run.clone(), status: handle.stopped.clone().unwrap_or(RunStatus::Running) }
}

impl ReplayHandle {
    fn new(records: &[VerifiedRecord]) -> Self {
        let last_conclusion = last_conclusion_at(records).map(|(seq, _)| seq);
        let mut actions = Vec::new();
        // The step each effect was last started in, by its key.
        let mut started: BTreeMap<String, String> = BTreeMap::new();
        // The effects started with no end yet.
        let mut open: BTreeSet<String> = BTreeSet::new();
        // A stop recorded while effects were open (an operator's hold, a
        // resume's quarantine beside a live worker): the worker met it at
        // their end, after recording it, so it goes where it was met.
        let mut pending: Option<((u64, Action), BTreeSet<String>)> = None;
        let mut stop_after_effect = None;
        // Pushes the pending stop once the effect `key` that ended was the last it waits for.
        let mut ended = |key: &str, actions: &mut Vec<(u64, Action)>, pending: &mut Option<_>| {
            let met = pending
                .as_mut()
                .is_some_and(|(_, waiting): &mut (_, BTreeSet<String>)| waiting.remove(key) && waiting.is_empty());
            if let Some((stop, _)) = pending.take_if(|_| met) {
                actions.push(stop);
                stop_after_effect = Some(key.to_owned());
            }
        };
        for record in records {
            let seq = record.stored.seq;
            let key = record.record.effect_key.clone().unwrap_or_default();
            match &record.record.body {
                RecordBody::StepStarted(mark) => actions.push((seq, Action::Step(mark.step.clone()))),
                RecordBody::StepFinished(mark) => actions.push((seq, Action::StepEnd(mark.step.clone()))),
                RecordBody::EffectStarted(start) => {
                    open.insert(key.clone());
                    started.insert(key, start.step.clone());
                }
                RecordBody::EffectDone(done) => {
                    let step = started.get(&key).cloned();
                    open.remove(&key);
                    actions.push((seq, Action::Effect(key.clone(), step, done.result.clone(), done.charged)));
                    ended(&key, &mut actions, &mut pending);
                }
                RecordBody::DoubtAnswered(answered) => {
                    if let DoubtAnswer::Happened { result } = &answered.answer {
                        let step = started.get(&key).cloned();
                        open.remove(&key);
                        actions.push((seq, Action::Effect(key.clone(), step, result.clone(), Counters::default())));
                        ended(&key, &mut actions, &mut pending);
                    }
                }
                // A hold lifted before the effects it interrupted ended:
                // the live worker carried on, never meeting it.
                RecordBody::WithholdingLifted(_) => {
                    pending.take_if(|((_, stop), _)| {
                        matches!(stop, Action::Stop(concluded) if concluded.outcome == Outcome::Withheld)
                    });
                }
                // Only the answer counts: conclusions the run was continued after were the runtime's, not the code's.
                RecordBody::RunConcluded(concluded) if Some(seq) == last_conclusion => {
                    let by_code = matches!(concluded.outcome, Outcome::Succeeded | Outcome::Failed)
                        && concluded.verdict == Verdict::None;
                    let action = if by_code {
                        Action::Conclusion(concluded.outcome, concluded.reason.clone())
                    } else {
                        Action::Stop(concluded.clone())
                    };
                    if matches!(action, Action::Stop(_)) && !open.is_empty() {
                        pending = Some(((seq, action), open.clone()));
                    } else {
                        actions.push((seq, action));
                    }
                }
                _ => {}
            }
        }
        if let Some((stop, _)) = pending {
            actions.push(stop);
            stop_after_effect = None;
        }
        // A stop the record holds the code's calls after was continued (a
        // lift, an answer, a raised ceiling) and the run resumed: the code
        // went on past it, and so does its replay.
        if let Some(at) = actions.iter().position(|(_, action)| matches!(action, Action::Stop(_)))
            && at + 1 < actions.len()
        {
            actions.remove(at);
            stop_after_effect = None;
        }
        let end_seq = records.last().map_or(1, |r| r.stored.seq + 1);
        Self {
            actions,
            cursor: 0,
            done: BTreeMap::new(),
            end_seq,
            divergence: None,
            replayed_cost: Totals::default(),
            stopped: None,
            stop_after_effect,
        }
    }

    /// Whether the record ends here by the runtime's or an operator's
    /// conclusion that stops `call`; if so the code is stopped from now on.
    /// A stop that refuses another call only ([`refused_only`]) is a
    /// recorded action `call` is compared with, as live it does not stop it.
    fn stops_here(&mut self, call: Call) -> bool {
        if let Some((_, Action::Stop(concluded))) = self.next()
            && refused_only(concluded).is_none_or(|only| only == call)
        {
            self.stopped = Some(RunStatus::of(concluded));
        }
        self.stopped.is_some()
    }

    /// Whether the recorded stop was caused by the effect just replayed (its
    /// error, or a ceiling its charge crossed), as the runtime stops the
    /// effect's caller live.
    fn stopped_by_effect(&mut self, effect_key: &str) -> bool {
        let caused = match self.next() {
            Some((_, Action::Stop(concluded))) => match &concluded.verdict {
                Verdict::EffectFailed { effect_key: failed, .. } => failed == effect_key,
                // Steps and effects ceilings reached refuse before the next
                // step or effect starts: that call is stopped, not this one.
                Verdict::BudgetExceeded { .. } => refused_only(concluded).is_none(),
                // Recorded while it ran, met by its worker at its end.
                _ => self.stop_after_effect.as_deref() == Some(effect_key),
            },
            _ => false,
        };
        caused && self.stops_here(Call::Other)
    }

    fn next(&self) -> Option<&(u64, Action)> {
        self.actions.get(self.cursor)
    }

    fn here(&self) -> (u64, String) {
        self.next().map_or((self.end_seq, "its end".to_owned()), |(seq, action)| (*seq, action.describe()))
    }

    fn diverge(&mut self, divergence: Divergence) -> Result<(), ()> {
        if self.divergence.is_none() {
            let (seq, _) = self.here();
            self.divergence = Some((seq, divergence));
        }
        Err(())
    }

    fn step(&mut self, replayed: Action) -> Result<(), ()> {
        let call = if matches!(replayed, Action::Step(_)) { Call::StepStart } else { Call::Other };
        if self.divergence.is_some() || self.stops_here(call) {
            return Err(());
        }
        let matches = match (self.next().map(|(_, a)| a), &replayed) {
            (Some(Action::Step(a)), Action::Step(b)) | (Some(Action::StepEnd(a)), Action::StepEnd(b)) => a == b,
            _ => false,
        };
        if matches {
            if let Action::Step(_) = replayed {
                self.replayed_cost.add(&Counters { steps: 1, ..Counters::default() });
            }
            self.cursor += 1;
            return Ok(());
        }
        let recorded = self.here().1;
        match self.next().map(|(_, a)| a.clone()) {
            Some(Action::Effect(effect_key, ..)) => {
                self.diverge(Divergence::SkippedEffect { effect_key, replayed: replayed.describe() })
            }
            _ => self.diverge(Divergence::UnexpectedStep { replayed: replayed.describe(), recorded }),
        }
    }

    fn replay_effect(&mut self, effect_key: &str, step: &str) -> Result<EffectResult, ()> {
        if self.divergence.is_some() || self.stopped.is_some() {
            return Err(());
        }
        if let Some(result) = self.done.get(effect_key) {
            // Asked again (as after a resume): read back, as the runtime
            // does, before any ceiling (nothing is recorded).
            return Ok(result.clone());
        }
        if self.stops_here(Call::Effect) {
            return Err(());
        }
        match self.next().map(|(_, a)| a.clone()) {
            Some(Action::Effect(key, Some(recorded), ..)) if key == effect_key && recorded != step => self
                .diverge(Divergence::EffectInOtherStep { effect_key: key, recorded, replayed: step.to_owned() })
                .map(|()| EffectResult::Err { error: String::new() }),
            Some(Action::Effect(key, _, result, charged)) if key == effect_key => {
                self.cursor += 1;
                self.replayed_cost.add(&charged);
                self.replayed_cost.add(&Counters { effects: 1, ..Counters::default() });
                self.done.insert(key, result.clone());
                if self.stopped_by_effect(effect_key) {
                    return Err(());
                }
                Ok(result)
            }
            Some(Action::Effect(key, ..))
                if self
                    .actions
                    .iter()
                    .skip(self.cursor)
                    .any(|(_, a)| matches!(a, Action::Effect(k, ..) if k == effect_key)) =>
            {
                self.diverge(Divergence::SkippedEffect { effect_key: key, replayed: format!("effect {effect_key}") })
                    .map(|()| EffectResult::Err { error: String::new() })
            }
            _ => {
                let recorded = self.here().1;
                self.diverge(Divergence::UnexpectedEffect { effect_key: effect_key.to_owned(), recorded })
                    .map(|()| EffectResult::Err { error: String::new() })
            }
        }
    }

    fn conclude(&mut self, outcome: Outcome, reason: &str) -> Result<(), ()> {
        if self.divergence.is_some() || self.stops_here(Call::Other) {
            return Err(());
        }
        match self.next().map(|(_, a)| a.clone()) {
            Some(Action::Conclusion(recorded, said)) if recorded == outcome && said == reason => {
                self.cursor += 1;
                Ok(())
            }
            Some(Action::Conclusion(recorded, said)) if recorded == outcome => {
                self.diverge(Divergence::DifferentReason { outcome, recorded: said, replayed: reason.to_owned() })
            }
            Some(Action::Conclusion(recorded, _)) => {
                self.diverge(Divergence::DifferentConclusion { recorded: Some(recorded), replayed: Some(outcome) })
            }
            Some(Action::Effect(effect_key, ..)) => {
                self.diverge(Divergence::SkippedEffect { effect_key, replayed: format!("the conclusion {outcome}") })
            }
            Some(other) => self.diverge(Divergence::UnexpectedStep {
                replayed: format!("the conclusion {outcome}"),
                recorded: other.describe(),
            }),
            None => self.diverge(Divergence::DifferentConclusion { recorded: None, replayed: Some(outcome) }),
        }
    }

    /// After the code returned: whatever the record still holds was skipped.
    fn finish(&mut self) {
        if self.divergence.is_some() || self.stopped.is_some() {
            return;
        }
        match self.next().map(|(_, a)| a.clone()) {
            // The runtime's or an operator's end is not the code's to reach
            // (a ceiling reached is: the code made the call it refused).
            None => {}
            Some(Action::Stop(concluded)) if refused_only(&concluded).is_none() => {}
            Some(Action::Conclusion(recorded, _)) => {
                let _ = self.diverge(Divergence::DifferentConclusion { recorded: Some(recorded), replayed: None });
            }
            Some(Action::Effect(effect_key, ..)) => {
                let _ = self.diverge(Divergence::SkippedEffect { effect_key, replayed: "nothing more".into() });
            }
            Some(other) => {
                let _ = self.diverge(Divergence::UnexpectedStep {
                    replayed: "nothing more".into(),
                    recorded: other.describe(),
                });
            }
        }
    }
}

/// A [`ReplayHandle`] bound to its run's id, so a divergence stops the code
/// the way a concluded run stops it.
#[derive(Debug)]
pub struct Replaying {
    run: RunId,
    handle: ReplayHandle,
}

impl RunContext for Replaying {
    fn start_step(&mut self, step: &str) -> Result<(), RuntimeError> {
        self.handle.step(Action::Step(step.to_owned())).map_err(|()| diverged(&self.run, &self.handle))
    }

    fn finish_step(&mut self, step: &str) -> Result<(), RuntimeError> {
        self.handle.step(Action::StepEnd(step.to_owned())).map_err(|()| diverged(&self.run, &self.handle))
    }

    /// Never calls `perform`: the recorded result is the answer.
    fn effect<F: FnOnce() -> EffectOutput>(
        &mut self,
        effect_key: &str,
        step: &str,
        _perform: F,
    ) -> Result<EffectResult, RuntimeError> {
        self.handle.replay_effect(effect_key, step).map_err(|()| diverged(&self.run, &self.handle))
    }

    fn succeed(&mut self, reason: &str) -> Result<(), RuntimeError> {
        self.handle.conclude(Outcome::Succeeded, reason).map_err(|()| diverged(&self.run, &self.handle))
    }

    fn fail(&mut self, error: &str) -> Result<(), RuntimeError> {
        self.handle.conclude(Outcome::Failed, error).map_err(|()| diverged(&self.run, &self.handle))
    }
}

/// Replays a verified run's `records` (from a store, or an export) through
/// `agent`, which follows `plan`. Nothing is written; no effect's closure runs.
pub fn replay(
    run: &RunId,
    records: &[VerifiedRecord],
    plan: &[String],
    agent: impl FnOnce(&mut Replaying) -> Result<(), RuntimeError>,
) -> ReplayReport {
    replay_served(run, records, &RunState::default(), plan, agent)
}

/// [`replay`] of a fork: the effects `served` has done (its source's, by
/// [`crate::run_state::fork_seed`]) are answered from it, as the live fork
/// was served them, never asked of `records`.
pub fn replay_served(
    run: &RunId,
    records: &[VerifiedRecord],
    served: &RunState,
    plan: &[String],
    agent: impl FnOnce(&mut Replaying) -> Result<(), RuntimeError>,
) -> ReplayReport {
    // Summed and checked as `runs`, `diff` and the console sum them: the
    // fold's counters are held at `u64::MAX` for the budget, a figure that
    // would hide every charge after it (R-RUN-7).
    let recorded_cost = Totals::of(records);
    let mut handle = ReplayHandle::new(records);
    handle.done.extend(served.done_effects().map(|(key, result)| (key.to_owned(), result.clone())));
    let mut replaying = Replaying { run: run.clone(), handle };
    if let Some((seq, recorded)) = plan_at(records)
        && recorded != plan
    {
        let different = Divergence::DifferentPlan { recorded: recorded.to_vec(), replayed: plan.to_vec() };
        replaying.handle.divergence = Some((seq, different));
    } else {
        // A stop is the divergence already recorded; any other error is the code's own.
        let _ = agent(&mut replaying);
        replaying.handle.finish();
    }
    ReplayReport {
        run: run.clone(),
        divergence: replaying.handle.divergence,
        recorded_cost,
        replayed_cost: replaying.handle.replayed_cost,
    }
}

/// Verifies an export offline (chain, signatures, seal, inclusion, the log's
/// signature) and only then replays its run: a tampered export is refused
/// before any replay starts. A fork's export is refused
/// ([`ExportError::ForkWithoutSource`](crate::export::ExportError::ForkWithoutSource)):
/// the effects its source served it are not in it, and replayed alone it
/// would diverge where the live fork did not; [`replay_folder`] replays it
/// beside its source's export.
pub fn replay_export(
    text: &str,
    log_keys: &[witness::VerifierKey],
    check: crate::chain::ChainCheck<'_>,
    plan: &[String],
    agent: impl FnOnce(&mut Replaying) -> Result<(), RuntimeError>,
) -> Result<ReplayReport, crate::export::ExportError> {
    let verified = crate::export::verify_export(text, log_keys, check)?;
    if let Some(forked) = crate::journal::forked_from(&verified.chain) {
        return Err(crate::export::ExportError::ForkWithoutSource {
            run: verified.run.clone(),
            source_run: forked.source_run.clone(),
            at_seq: forked.at_seq,
        });
    }
    Ok(replay(&verified.run, &verified.chain, plan, agent))
}

/// The regression-test harness over a store: replays every run of `tenant`
/// whose verified last conclusion is one of `outcomes` (every run when empty)
/// through `agent`, and fails with every divergence, named by run and seq.
/// The outcome is read from each run's verified chain, not from the store's
/// outcome index, and the runs are those whose records are stored, read in
/// one snapshot, not the runs table's list, so an edited index or a deleted
/// runs row cannot hide a run from the test. Each chain is checked before
/// its replay; a run that does not verify is a failure.
pub fn replay_store<A>(
    journal: &crate::journal::Journal<'_>,
    check: crate::chain::ChainCheck<'_>,
    outcomes: &[Outcome],
    plan: &[String],
    agent: A,
) -> Result<Vec<ReplayReport>, String>
where
    A: Fn(&mut Replaying) -> Result<(), RuntimeError>,
{
    let mut reports = Vec::new();
    let mut problems = Vec::new();
    // Every run whose records are stored, read in one snapshot: a run the
    // runs table (derived data) no longer lists is a failure, never a run
    // the test silently skips.
    journal
        .each_run(check, &mut |run, verified| {
            // A run copied in from another tenant is never this one's to
            // replay (issue 20, R-COVER-4), nor a fork's source.
            let verified =
                match verified.and_then(|verified| verified.bound_to(journal.tenant, &run).map(|()| verified)) {
                    Ok(verified) => verified,
                    Err(err) => {
                        problems.push(format!("run {run} does not verify: {err}"));
                        return Ok(());
                    }
                };
            let outcome = verified.last_conclusion().map(|c| c.outcome);
            if !outcomes.is_empty() && !outcome.is_some_and(|o| outcomes.contains(&o)) {
                return Ok(());
            }
            let served = match verified.forked_from() {
                Some(forked) => match crate::run_state::fork_seed(
                    |source| journal.read(source, check).and_then(|v| v.bound_to(journal.tenant, source).map(|()| v)),
                    &run,
                    forked,
                ) {
                    Ok(served) => served,
                    Err(err) => {
                        problems.push(format!("run {run} is a fork whose source does not serve it: {err}"));
                        return Ok(());
                    }
                },
                None => RunState::default(),
            };
            let report = replay_served(&run, &verified.records, &served, plan, &agent);
            if let Some((seq, divergence)) = &report.divergence {
                problems.push(format!("run {run} diverges at seq {seq}: {divergence}"));
            }
            reports.push(report);
            Ok(())
        })
        .map_err(|err| format!("reading the runs: {err}"))?;
    if problems.is_empty() { Ok(reports) } else { Err(problems.join("\n")) }
}

/// The regression-test harness: replays every export (`*.export` or
/// `*.jsonl`) of `folder` through `agent` and fails with every divergence,
/// named by file, run and seq. A fork is served the effects its source
/// served it from the source's export in the same folder (a fork without
/// it is a failure saying so). Call it from a `#[test]`.
pub fn replay_folder<A>(
    folder: &std::path::Path,
    log_keys: &[witness::VerifierKey],
    check: crate::chain::ChainCheck<'_>,
    plan: &[String],
    agent: A,
) -> Result<Vec<ReplayReport>, String>
where
    A: Fn(&mut Replaying) -> Result<(), RuntimeError>,
{
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(folder)
        .map_err(|err| format!("reading {}: {err}", folder.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "export" || ext == "jsonl"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no exports in {}", folder.display()));
    }
    let mut reports = Vec::new();
    let mut problems = Vec::new();
    let mut verified = Vec::new();
    for file in files {
        let name = file.display().to_string();
        let mut opened = std::fs::File::open(&file).map_err(|err| format!("reading {name}: {err}"))?;
        // Within the bounds every export reader keeps (1 GiB, lines of 64 MiB).
        let text = match crate::export::read_export_text(&mut opened, &name) {
            Ok(text) => text,
            Err(err @ crate::export::ExportReadError::Io { .. }) => return Err(err.to_string()),
            Err(not_an_export) => {
                problems.push(not_an_export.to_string());
                continue;
            }
        };
        match crate::export::verify_export(&text, log_keys, check) {
            Ok(export) => verified.push((file, export.run, export.chain)),
            Err(err) => problems.push(format!("{}: not a verified export: {err}", file.display())),
        }
    }
    // A fork is served its source's effects from the source's export beside
    // it, as the live fork was served them from the store.
    let chains: BTreeMap<&RunId, &[VerifiedRecord]> =
        verified.iter().map(|(_, run, chain)| (run, chain.as_slice())).collect();
    let read = |source: &RunId| match chains.get(source) {
        Some(records) => {
            Ok(crate::journal::VerifiedRun { records: records.to_vec(), head: None, seal: None, outcome: None })
        }
        None => Err(crate::error::JournalError::InvalidRecord(format!(
            "the export of run {source}, its source, is not in the folder: add it to replay the effects it served"
        ))),
    };
    for (file, run, chain) in &verified {
        let served = match crate::journal::forked_from(chain) {
            Some(forked) => match crate::run_state::fork_seed(read, run, forked) {
                Ok(served) => served,
                Err(err) => {
                    problems.push(format!("{}: run {run} is a fork: {err}", file.display()));
                    continue;
                }
            },
            None => RunState::default(),
        };
        let report = replay_served(run, chain, &served, plan, &agent);
        if let Some((seq, divergence)) = &report.divergence {
            problems.push(format!("{}: run {run} diverges at seq {seq}: {divergence}", file.display()));
        }
        reports.push(report);
    }
    if problems.is_empty() { Ok(reports) } else { Err(problems.join("\n")) }
}
