//! A run's state as a fold over its records: one transition,
//! [`RunState::apply`], from which every reader of a run's state is made.
//!
//! The live [`RunHandle`](crate::runtime::RunHandle) applies each record it has
//! just appended (and changes its state no other way); resume, status and cost
//! fold the verified journal with the same transition; a regression replay
//! reads the recorded cost and the recorded stop from it. So what a live run
//! decides from and what a later read of its journal rebuilds cannot drift:
//! they are one function over the same records.

use std::collections::{BTreeMap, BTreeSet};

use crate::chain::VerifiedRecord;
use crate::clock::At;
use crate::error::{JournalError, TamperKind};
use crate::ids::RunId;
use crate::journal::VerifiedRun;
use crate::record::{
    Budget, CostOverflow, Counters, Dimension, DoubtAnswer, EffectResult, Outcome, Record, RecordBody, RunConcluded,
    RunForked, Verdict,
};

/// A run's state: its budget, what it consumed, which effects have a
/// recorded end (and their results), which are in doubt, and its last
/// conclusion. Built only by [`apply`](Self::apply), record by record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunState {
    budget: Budget,
    counters: Counters,
    /// Effects with a recorded end: key -> result.
    done: BTreeMap<String, EffectResult>,
    /// Effects started with no recorded end (and no answer), in start order.
    open: OpenEffects,
    /// Effects a person answered a doubt of (R-RUN-5).
    answered: BTreeSet<String>,
    last: Option<RunConcluded>,
    /// Whether the answer the last conclusion waits for came after it: a
    /// lift for a withholding, a doubt's answer for a quarantine.
    continued_after_last: bool,
}

/// The effects started with no recorded end and no answer, in start order
/// and by key, so that an end finds its start in O(log n) whatever the run
/// holds: a run written behind the plane with every effect started before
/// any ends made a scan of the open effects per end quadratic (review 39).
#[derive(Debug, Clone, Default)]
struct OpenEffects {
    /// Start number -> key, in start order.
    by_start: BTreeMap<u64, String>,
    /// Key -> the numbers of its open starts.
    by_key: BTreeMap<String, Vec<u64>>,
    /// Starts so far: the next one's number.
    starts: u64,
    /// The starts numbered below this one came before the last quarantine:
    /// a resume found them in doubt.
    found_before: u64,
}

impl OpenEffects {
    fn start(&mut self, key: &str) {
        let number = self.starts;
        self.starts = self.starts.saturating_add(1);
        self.by_start.insert(number, key.to_owned());
        self.by_key.entry(key.to_owned()).or_default().push(number);
    }

    /// Ends every open start of `key`.
    fn end(&mut self, key: &str) {
        for number in self.by_key.remove(key).unwrap_or_default() {
            self.by_start.remove(&number);
        }
    }

    /// A quarantine: every start so far was found in doubt.
    fn found(&mut self) {
        self.found_before = self.starts;
    }

    /// Whether every open start of `key` came before the last quarantine.
    fn is_found(&self, key: &str) -> bool {
        self.by_key.get(key).and_then(|numbers| numbers.last()).is_some_and(|last| *last < self.found_before)
    }

    /// The open starts in start order: each key, and whether a quarantine found it.
    fn listed(&self) -> impl Iterator<Item = (&String, bool)> {
        self.by_start.iter().map(|(number, key)| (key, *number < self.found_before))
    }
}

/// Two states hold the same open effects when they list the same keys in
/// the same order, each found in doubt by a quarantine or not, however many
/// starts each applied.
impl PartialEq for OpenEffects {
    fn eq(&self, other: &Self) -> bool {
        self.listed().eq(other.listed())
    }
}

impl Eq for OpenEffects {}

impl RunState {
    /// The state after `records`, in chain order.
    pub fn fold<'r>(records: impl IntoIterator<Item = &'r Record>) -> Self {
        let mut state = Self::default();
        for record in records {
            state.apply(record);
        }
        state
    }

    /// The state of a verified chain.
    pub fn of(records: &[VerifiedRecord]) -> Self {
        Self::fold(records.iter().map(|verified| &verified.record))
    }

    /// The transition: what one record, appended after the records already
    /// applied, changes. The only way a `RunState` changes.
    pub fn apply(&mut self, record: &Record) {
        charge(&mut self.counters, &record.body);
        let key = record.effect_key.as_ref();
        match &record.body {
            RecordBody::RunAdmitted(admitted) => self.budget = admitted.budget,
            RecordBody::EffectStarted(_) => {
                if let Some(key) = key {
                    self.open.start(key);
                }
            }
            RecordBody::EffectDone(done) => {
                if let Some(key) = key {
                    self.open.end(key);
                    self.done.insert(key.clone(), done.result.clone());
                    // The worker's end, recorded after a resume beside it
                    // quarantined the run for this effect, settles that
                    // doubt as a person's answer would (R-RUN-5).
                    if self.standing().is_some_and(|last| {
                        last.outcome == Outcome::Quarantined
                            && matches!(&last.verdict, Verdict::Doubt { effect_key } if effect_key == key)
                    }) {
                        self.continue_after(Outcome::Quarantined);
                    }
                }
            }
            RecordBody::DoubtAnswered(answered) => {
                if let Some(key) = key {
                    self.open.end(key);
                    self.answered.insert(key.clone());
                    if let DoubtAnswer::Happened { result } = &answered.answer {
                        self.done.insert(key.clone(), result.clone());
                    }
                    // An answer settles a doubt, never an operator's hold.
                    self.continue_after(Outcome::Quarantined);
                }
            }
            RecordBody::CeilingRaised(raised) => self.budget.set_ceiling(raised.dimension, raised.ceiling),
            RecordBody::WithholdingLifted(_) => self.continue_after(Outcome::Withheld),
            RecordBody::RunConcluded(concluded) => {
                if concluded.outcome == Outcome::Quarantined {
                    self.open.found();
                }
                self.last = Some(concluded.clone());
                self.continued_after_last = false;
            }
            RecordBody::RunForked(_)
            | RecordBody::PlanFrozen(_)
            | RecordBody::StepStarted(_)
            | RecordBody::Released(_)
            | RecordBody::StepFinished(_) => {}
        }
    }

    /// Marks the last conclusion continued when it is `outcome`: the one
    /// conclusion the record just applied answers (R-RUN-5).
    fn continue_after(&mut self, outcome: Outcome) {
        if self.last.as_ref().is_some_and(|last| last.outcome == outcome) {
            self.continued_after_last = true;
        }
    }

    /// Serves the effects `source` has a recorded end for as done here too,
    /// unless this run has its own end for them: a fork's effects up to its
    /// fork point come from its source's record.
    pub fn serve_from(&mut self, source: RunState) {
        for (key, result) in source.done {
            self.done.entry(key).or_insert(result);
        }
    }

    /// The ceilings, as admitted and since raised.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// What the run consumed (R-RUN-7).
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The recorded result of an effect with a recorded end (done, or
    /// answered as having happened).
    pub fn done(&self, effect_key: &str) -> Option<&EffectResult> {
        self.done.get(effect_key)
    }

    /// Every effect with a recorded end here (or served here), with its result.
    pub fn done_effects(&self) -> impl Iterator<Item = (&str, &EffectResult)> {
        self.done.iter().map(|(key, result)| (key.as_str(), result))
    }

    /// The effects started with no recorded end and no answer, in the order they started.
    pub fn in_doubt(&self) -> Vec<&str> {
        self.open.by_start.values().map(String::as_str).collect()
    }

    /// Whether `effect_key` was started with no recorded end and no answer.
    pub fn is_in_doubt(&self, effect_key: &str) -> bool {
        self.open.by_key.contains_key(effect_key)
    }

    /// Whether `effect_key` is in doubt and a resume found it so: every
    /// open start of it came before the run's last quarantine (R-RUN-5).
    /// One started since is a resume's (or a worker's) performance, which
    /// no resume has found in doubt yet.
    pub fn is_found_in_doubt(&self, effect_key: &str) -> bool {
        self.open.is_found(effect_key)
    }

    /// Whether a person has answered a doubt of `effect_key`: an open start
    /// of it since is a performance that answer allowed.
    pub fn was_answered(&self, effect_key: &str) -> bool {
        self.answered.contains(effect_key)
    }

    /// The last conclusion applied: the run's answer (R-RUN-3), the one
    /// [`last_conclusion`](crate::journal::last_conclusion) reads from a chain.
    pub fn last_conclusion(&self) -> Option<&RunConcluded> {
        self.last.as_ref()
    }

    /// Whether a person's answer to a doubt of `effect_key` applies to the
    /// run as it stands (R-RUN-5), and why not: it answers a doubt a resume
    /// found (the effect started before the run's last quarantine: every
    /// effect that quarantine found, however many), or an effect open under
    /// an operator's hold that no answer has allowed to be performed again.
    /// An effect started again since its doubt was answered is a resume
    /// performing it until a resume finds it in doubt, hold or not (the same
    /// answer given twice would otherwise say "did not happen" of the
    /// performance it allowed, and the next resume perform it again).
    pub fn doubt_answerable(&self, effect_key: &str) -> Result<(), String> {
        if !self.is_in_doubt(effect_key) {
            return Err(format!("effect {effect_key} is not in doubt"));
        }
        let held = self.standing().is_some_and(|c| c.outcome == Outcome::Withheld);
        if self.is_found_in_doubt(effect_key) || (held && !self.was_answered(effect_key)) {
            return Ok(());
        }
        Err(format!(
            "no resume has found its effect {effect_key} in doubt since it was started{}: a worker may be \
             performing it now (resume the run{}: a doubt it finds quarantines it, to be answered then)",
            if self.was_answered(effect_key) { " again after its doubt was answered" } else { "" },
            if held { " once the hold is lifted" } else { "" }
        ))
    }

    /// The last conclusion while it stands: `None` once what it waits for
    /// came after it (a lift after a withholding, an answer after a
    /// quarantine), or when there is none.
    pub fn standing(&self) -> Option<&RunConcluded> {
        self.last.as_ref().filter(|_| !self.continued_after_last)
    }

    /// The run's status: its last conclusion, or running (R-RUN-3).
    pub fn status(&self) -> RunStatus {
        self.last.as_ref().map_or(RunStatus::Running, RunStatus::of)
    }

    /// Whether the reason the run last stopped has been answered, so a
    /// resume may continue it (R-RUN-5): a failure always may; an exhaustion
    /// only once the crossed ceiling was raised above what the verdict
    /// recorded; a withholding once lifted; a doubt once answered.
    pub fn may_continue(&self) -> bool {
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

/// The effects a forked run is served from its source's record: those done
/// at or before the fork point, once the source's record there is the one
/// the fork names (provenance), and those the source was itself served up
/// to there when it is a fork too (the nearer source's record first).
/// `read` reads a run's verified journal. What the live handle, resume and a
/// regression replay of a fork all serve.
pub fn fork_seed(
    mut read: impl FnMut(&RunId) -> Result<VerifiedRun, JournalError>,
    run: &RunId,
    forked: &RunForked,
) -> Result<RunState, JournalError> {
    let mut seed = RunState::default();
    let (mut run, mut forked) = (run.clone(), forked.clone());
    // Provenance cannot loop (each link names a chain hash its fork's own
    // record then commits to); the walk stops on a run seen anyway.
    let mut seen = std::collections::BTreeSet::from([run.clone()]);
    loop {
        let source = RunId::new(&forked.source_run)?;
        let verified = read(&source)?;
        let at = verified.records.iter().position(|record| record.stored.seq == forked.at_seq);
        let holds =
            at.and_then(|at| verified.records.get(at)).is_some_and(|r| r.stored.hash.to_string() == forked.source_hash);
        let Some(at) = at.filter(|_| holds) else {
            return Err(JournalError::Tamper {
                run: run.clone(),
                seq: 2,
                kind: TamperKind::SealMismatch,
                detail: Some(format!(
                    "it was forked from run {source} at seq {}, whose record there is no longer the one it names",
                    forked.at_seq
                )),
            });
        };
        let prefix = verified.records.get(..=at).unwrap_or_default();
        seed.serve_from(RunState::of(prefix));
        match crate::journal::forked_from(prefix) {
            Some(next) if !seen.contains(&source) => {
                forked = next.clone();
                seen.insert(source.clone());
                run = source;
            }
            _ => return Ok(seed),
        }
    }
}

/// What one record consumed (R-RUN-7): the charges it carries (a performed
/// effect's) and what it counts (a started step, a performed effect, an
/// effect a person said happened). The one place the journal is turned into
/// cost; [`charge`] and [`try_cost_in`] add it up.
fn consumed(body: &RecordBody) -> (Option<&Counters>, Counters) {
    let one_effect = Counters { effects: 1, ..Counters::default() };
    match body {
        RecordBody::StepStarted(_) => (None, Counters { steps: 1, ..Counters::default() }),
        RecordBody::EffectDone(done) => (Some(&done.charged), one_effect),
        RecordBody::DoubtAnswered(answered) if matches!(answered.answer, DoubtAnswer::Happened { .. }) => {
            (None, one_effect)
        }
        _ => (None, Counters::default()),
    }
}

/// Adds what one record consumed to `counters`, saturating (what a budget
/// is held to; [`RunState::apply`] counts with it).
pub fn charge(counters: &mut Counters, body: &RecordBody) {
    let (charged, counted) = consumed(body);
    if let Some(charged) = charged {
        counters.add(charged);
    }
    counters.add(&counted);
}

/// What one record consumed, or the dimension whose count passes
/// `u64::MAX`.
fn charged_by(body: &RecordBody) -> Result<Counters, CostOverflow> {
    let (charged, counted) = consumed(body);
    charged.map_or(Ok(counted), |charged| charged.checked_add(&counted))
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

/// What records consumed, each dimension summed on its own and checked:
/// `None` (JSON `null`) for a dimension whose total passes `u64::MAX`,
/// never a figure held at the limit, which would hide every charge after it
/// (R-RUN-7, as [`try_cost_in`] refuses it). What a listing shows per run
/// (the CLI's `runs` and `diff`, the console's run page); fields in
/// alphabetical order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Totals {
    /// Cost in micro-units of the plane's currency.
    pub cost_micros: Option<u64>,
    /// Effects performed.
    pub effects: Option<u64>,
    /// Steps started.
    pub steps: Option<u64>,
    /// Model tokens.
    pub tokens: Option<u64>,
    /// Wall time in milliseconds.
    pub wall_millis: Option<u64>,
}

impl Default for Totals {
    fn default() -> Self {
        Self { cost_micros: Some(0), effects: Some(0), steps: Some(0), tokens: Some(0), wall_millis: Some(0) }
    }
}

impl Totals {
    /// The totals of `records`.
    pub fn of<'a>(records: impl IntoIterator<Item = &'a VerifiedRecord>) -> Self {
        let mut totals = Self::default();
        for record in records {
            let (charged, counted) = consumed(&record.record.body);
            for dimension in Dimension::ALL {
                let one = charged.map_or(Some(0), |charged| Some(charged.get(dimension)));
                let total = totals.slot(dimension);
                *total =
                    total.zip(one).and_then(|(total, one)| total.checked_add(one)?.checked_add(counted.get(dimension)));
            }
        }
        totals
    }

    /// Adds `counters`, each dimension checked: one that passes
    /// `u64::MAX` is `None` from then on.
    pub fn add(&mut self, counters: &Counters) {
        for dimension in Dimension::ALL {
            let total = self.slot(dimension);
            *total = total.and_then(|total| total.checked_add(counters.get(dimension)));
        }
    }

    /// The total of `dimension`, `None` past `u64::MAX`.
    pub fn get(&self, dimension: Dimension) -> Option<u64> {
        match dimension {
            Dimension::Tokens => self.tokens,
            Dimension::CostMicros => self.cost_micros,
            Dimension::Steps => self.steps,
            Dimension::Effects => self.effects,
            Dimension::WallMillis => self.wall_millis,
        }
    }

    fn slot(&mut self, dimension: Dimension) -> &mut Option<u64> {
        match dimension {
            Dimension::Tokens => &mut self.tokens,
            Dimension::CostMicros => &mut self.cost_micros,
            Dimension::Steps => &mut self.steps,
            Dimension::Effects => &mut self.effects,
            Dimension::WallMillis => &mut self.wall_millis,
        }
    }
}

/// What a verified run consumed within `window`, by the time on each
/// record, as a figure to report: a total past `u64::MAX` is refused, never
/// held at the limit where it would hide the charges after it (R-RUN-7).
pub fn try_cost_in(verified: &VerifiedRun, window: TimeWindow) -> Result<Counters, CostOverflow> {
    verified
        .records
        .iter()
        .filter(|record| window.contains(record.record.at))
        .try_fold(Counters::default(), |total, record| total.checked_add(&charged_by(&record.record.body)?))
}

/// What a verified run consumed within `window`, by the time on each
/// record, each total held at `u64::MAX` ([`try_cost_in`] refuses instead).
pub fn cost_in(verified: &VerifiedRun, window: TimeWindow) -> Counters {
    let mut counters = Counters::default();
    for record in verified.records.iter().filter(|record| window.contains(record.record.at)) {
        charge(&mut counters, &record.record.body);
    }
    counters
}

/// A run's status, read from its verified journal: the last conclusion, or running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    /// No conclusion yet. A run continued after a conclusion (a lift, an
    /// answer, a raised ceiling) keeps that conclusion as its status until it
    /// concludes again (R-RUN-3: the last conclusion is the answer, and the
    /// outcome index says the same).
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
    pub(crate) fn of(concluded: &RunConcluded) -> Self {
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
