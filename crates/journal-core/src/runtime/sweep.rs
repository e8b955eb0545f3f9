//! The witnessing sweep (R-WIT-8, R-WIT-9): off the run path, the tenant's
//! checkpoint is signed now and submitted to the witnesses with proofs from
//! the log view; the round is held to the quorum.

use super::{Runtime, RuntimeError};
use crate::ids::TenantId;
use crate::log::{LogView, sign_head};

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
    /// The plane refused to sign its own log (holes, or a tree that does not
    /// extend the last checkpoint it signed): nothing was signed or sent. An
    /// integrity finding, like a witness's refusal.
    RefusedToSign {
        /// Why.
        reason: String,
    },
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
        matches!(self.outcome, SweepOutcome::Round(witness::QuorumOutcome::Shortfall { .. }))
            || self.integrity_refusal()
    }

    /// A witness saw this log shrink or fork, or the plane itself refused to
    /// sign it for that reason.
    pub fn integrity_refusal(&self) -> bool {
        matches!(
            self.outcome,
            SweepOutcome::Round(witness::QuorumOutcome::IntegrityRefusal { .. }) | SweepOutcome::RefusedToSign { .. }
        )
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
        let view = LogView::open(self.store.as_ref(), tenant)?;
        let head = view.head()?;
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
        let signed = match sign_head(self.store.as_ref(), &view, &config.origin, log_key) {
            Ok(signed) => signed,
            Err(crate::error::JournalError::WouldSignRollback { reason, .. }) => {
                tracing::error!(
                    target: "agentplane.witness.integrity",
                    tenant = %tenant,
                    size = head.tree.size,
                    root = %head.tree.root,
                    "the plane refused to sign its own log: {reason}"
                );
                return Ok(report(SweepOutcome::RefusedToSign { reason }));
            }
            Err(err) => return Err(err.into()),
        };
        let witnesses: Vec<&(dyn witness::Witness + Sync)> =
            self.witnesses.iter().map(|w| w.as_ref() as &(dyn witness::Witness + Sync)).collect();
        let outcome = witness::cosign_quorum(&witnesses, self.quorum, &signed, &view);
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
