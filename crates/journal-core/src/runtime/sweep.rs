//! The witnessing sweep (R-WIT-8, R-WIT-9): off the run path, the tenant's
//! checkpoint is signed now and submitted to the witnesses with proofs from
//! the log view; the round is held to the quorum.

use super::{Runtime, RuntimeError};
use crate::error::JournalError;
use crate::ids::TenantId;
use crate::log::{LogView, sign_current_head};
use crate::store::SignedTree;

/// A round held, or why the plane refused to sign.
type Round = Result<(witness::SignedCheckpoint, witness::QuorumOutcome), String>;

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

/// Whether any witness answered that the checkpoint was stale.
fn has_stale(outcome: &witness::QuorumOutcome) -> bool {
    let failures = match outcome {
        witness::QuorumOutcome::Met { failures, .. }
        | witness::QuorumOutcome::Shortfall { failures, .. }
        | witness::QuorumOutcome::IntegrityRefusal { failures, .. } => failures,
    };
    failures.iter().any(|failure| matches!(failure.error, witness::WitnessError::Stale { .. }))
}

/// The cosigned note of a met round: the checkpoint, the log's signature,
/// then every verified cosignature (one per identity).
fn cosigned_note(signed: &witness::SignedCheckpoint, outcome: &witness::QuorumOutcome) -> String {
    match outcome {
        witness::QuorumOutcome::Met { cosigned, .. } => {
            signed.cosigned_note(cosigned.iter().flat_map(|c| c.cosignatures.iter()).map(|c| &c.signature))
        }
        _ => signed.note().to_owned(),
    }
}

fn integrity(tenant: &TenantId, tree: tlog::Tree, what: &str) {
    tracing::error!(
        target: "agentplane.witness.integrity",
        tenant = %tenant,
        size = tree.size,
        root = %tree.root,
        "{what}"
    );
}

impl Runtime {
    /// Signs the tenant's current head (never a rollback) and holds one
    /// round: the tree, its signed note, and the outcome; or why the plane
    /// refused to sign.
    fn round(&self, config: &super::TenantConfig, log_key: &witness::LogKey) -> Result<Round, RuntimeError> {
        let (view, signed) = match sign_current_head(self.store.as_ref(), &config.tenant, &config.origin, log_key) {
            Ok(signed) => signed,
            Err(JournalError::WouldSignRollback { reason, .. }) => return Ok(Err(reason)),
            Err(err) => return Err(err.into()),
        };
        let witnesses: Vec<&(dyn witness::Witness + Sync)> =
            self.witnesses.iter().map(|w| w.as_ref() as &(dyn witness::Witness + Sync)).collect();
        let outcome = witness::cosign_quorum(&witnesses, self.quorum, &signed, &view);
        Ok(Ok((signed, outcome)))
    }

    /// Submits the tenant's current checkpoint, signed now, to the configured
    /// witnesses and holds the round to the quorum. Off the run path: call it
    /// periodically. A round is skipped when the log has not grown since the
    /// last round that met the bar; a shortfall or an integrity refusal is
    /// reported (`needs_attention`), and an integrity refusal is also logged to
    /// the tracing target `agentplane.witness.integrity`.
    pub fn sweep(&self, tenant: &TenantId) -> Result<SweepReport, RuntimeError> {
        let config = self.tenant(tenant)?;
        // Runs that moved since the last heads leaf make the log grow, so
        // the round is held even when no run was sealed (issue 20).
        if !self.witnesses.is_empty() && config.log_key.is_some() {
            self.store.append_heads(tenant, &config.origin)?;
        }
        let view = LogView::open(self.store.as_ref(), tenant)?;
        let head = view.head()?;
        let report = |outcome| SweepReport { tenant: tenant.clone(), tree: head.tree, outcome };
        if self.witnesses.is_empty() {
            return Ok(report(SweepOutcome::NoWitnesses));
        }
        // The last round that met the bar, kept in the store: the same tree is
        // skipped; the same size (or less) with another tree is a rewrite.
        let last_met = self.store.cosigned_checkpoints(tenant)?.pop().map(|met| met.tree);
        if let Some(met) = last_met {
            if met == head.tree {
                return Ok(report(SweepOutcome::Skipped { size: head.tree.size }));
            }
            if met.size >= head.tree.size {
                let reason = format!(
                    "the log has {} sealed runs with root {}; a quorum cosigned size {} with root {}: its history was rewritten",
                    head.tree.size, head.tree.root, met.size, met.root
                );
                integrity(tenant, head.tree, &reason);
                return Ok(report(SweepOutcome::RefusedToSign { reason }));
            }
        }
        let log_key = config.log_key.as_ref().ok_or_else(|| {
            RuntimeError::Checkpoint(format!("tenant {tenant} has no log key to sign its checkpoints"))
        })?;
        drop(view);
        let mut round = self.round(config, log_key)?;
        // Another instance had the witnesses cosign more of this log: sign the
        // log as it is now and hold the round again, once.
        if let Ok((_, outcome)) = &round
            && has_stale(outcome)
        {
            round = self.round(config, log_key)?;
        }
        let tree = match &round {
            Ok((signed, _)) => signed.checkpoint().tree(),
            Err(_) => head.tree,
        };
        let report = |outcome| SweepReport { tenant: tenant.clone(), tree, outcome };
        let (signed, outcome) = match round {
            Ok(round) => round,
            Err(reason) => {
                integrity(tenant, tree, &format!("the plane refused to sign its own log: {reason}"));
                return Ok(report(SweepOutcome::RefusedToSign { reason }));
            }
        };
        match &outcome {
            witness::QuorumOutcome::Met { .. } => {
                let note = cosigned_note(&signed, &outcome);
                self.store.record_cosigned_checkpoint(tenant, SignedTree { tree, note })?;
            }
            witness::QuorumOutcome::IntegrityRefusal { refusals, .. } => {
                for refusal in refusals {
                    tracing::error!(
                        target: "agentplane.witness.integrity",
                        tenant = %tenant,
                        origin = %config.origin,
                        size = tree.size,
                        root = %tree.root,
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
