//! A run's status: what its verified journal's last conclusion says.

use crate::record::{Outcome, RunConcluded, Verdict};

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
