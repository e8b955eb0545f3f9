//! A run's state rebuilt from its verified journal: budget, counters, what is
//! done, what is in doubt, the last conclusion. Recovery (resume), status and
//! cost accounting are all this one read.

use std::collections::BTreeMap;

use crate::clock::At;
use crate::journal::VerifiedRun;
use crate::record::{Budget, Counters, DoubtAnswer, EffectResult, Outcome, RecordBody, RunConcluded, Verdict};

/// The state of a run, rebuilt from its verified journal.
#[derive(Debug, Clone, Default)]
pub(crate) struct Replay {
    pub(crate) budget: Budget,
    pub(crate) counters: Counters,
    /// Effects with a recorded end: key -> result.
    pub(crate) done: BTreeMap<String, EffectResult>,
    /// Effects started with no recorded end (and no answer).
    pub(crate) open: Vec<String>,
    pub(crate) last: Option<RunConcluded>,
    /// Whether a lift or answer came after the last conclusion.
    pub(crate) continued_after_last: bool,
}

/// Adds what one record consumed to `counters` (R-RUN-7): a started step, a
/// performed effect and its charges, an effect a person said happened. The
/// one place the journal is turned into cost.
pub fn charge(counters: &mut Counters, body: &RecordBody) {
    match body {
        RecordBody::StepStarted(_) => counters.steps = counters.steps.saturating_add(1),
        RecordBody::EffectDone(done) => {
            counters.add(&done.charged);
            counters.effects = counters.effects.saturating_add(1);
        }
        RecordBody::DoubtAnswered(answered) if matches!(answered.answer, DoubtAnswer::Happened { .. }) => {
            counters.effects = counters.effects.saturating_add(1);
        }
        _ => {}
    }
}

/// A span of time by the instants written on records: `since` included,
/// `until` excluded; an open end is unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeWindow {
    /// The first instant counted.
    pub since: Option<At>,
    /// The first instant no longer counted.
    pub until: Option<At>,
}

impl TimeWindow {
    /// Every instant.
    pub const ALL: TimeWindow = TimeWindow { since: None, until: None };

    /// Whether `at` falls in the window.
    pub fn contains(&self, at: At) -> bool {
        self.since.is_none_or(|since| at >= since) && self.until.is_none_or(|until| at < until)
    }
}

/// What a verified run consumed within `window`, by the time on each record.
pub fn cost_in(verified: &VerifiedRun, window: TimeWindow) -> Counters {
    let mut counters = Counters::default();
    for record in verified.records.iter().filter(|record| window.contains(record.record.at)) {
        charge(&mut counters, &record.record.body);
    }
    counters
}

pub(crate) fn replay(verified: &VerifiedRun) -> Replay {
    let mut state = Replay::default();
    for record in &verified.records {
        charge(&mut state.counters, &record.record.body);
        let key = record.record.effect_key.clone();
        match &record.record.body {
            RecordBody::RunAdmitted(admitted) => state.budget = admitted.budget,
            RecordBody::EffectStarted(_) => {
                if let Some(key) = key {
                    state.open.push(key);
                }
            }
            RecordBody::EffectDone(done) => {
                if let Some(key) = key {
                    state.open.retain(|open| *open != key);
                    state.done.insert(key, done.result.clone());
                }
            }
            RecordBody::DoubtAnswered(answered) => {
                if let Some(key) = key {
                    state.open.retain(|open| *open != key);
                    if let DoubtAnswer::Happened { result } = &answered.answer {
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
            RecordBody::RunForked(_)
            | RecordBody::PlanFrozen(_)
            | RecordBody::StepStarted(_)
            | RecordBody::Released(_)
            | RecordBody::StepFinished(_) => {}
        }
    }
    state
}

impl Replay {
    /// Whether the reason the run last stopped has been answered, so a
    /// resume may continue it (R-RUN-5): a failure always may; an exhaustion
    /// only once the crossed ceiling was raised above what the verdict
    /// recorded; a withholding once lifted; a doubt once answered.
    pub(crate) fn may_continue(&self) -> bool {
        let Some(last) = &self.last else {
            return true;
        };
        match last.outcome {
            Outcome::Succeeded | Outcome::Cancelled | Outcome::Abandoned => false,
            Outcome::Failed => true,
            Outcome::Exhausted => match last.verdict {
                Verdict::BudgetExceeded { dimension, ceiling, .. } => {
                    self.budget.ceiling(dimension).is_none_or(|now| now > ceiling)
                        && self.budget.first_exceeded(&self.counters).is_none()
                }
                _ => false,
            },
            Outcome::Withheld | Outcome::Quarantined => self.continued_after_last,
        }
    }
}
