//! The checkpoints a witness quorum cosigned, read back from the store for
//! what goes out: the latest one (as `agentplane checkpoint --cosigned`
//! prints it), and a sealed run's inclusion in the latest one that holds the
//! run (what an export carries, [`crate::export::export_run`]).
//!
//! The sweep records them ([`crate::Runtime::sweep`]); this module only reads.

use witness::Checkpoint;

use crate::error::JournalError;
use crate::export::CosignedInclusion;
use crate::ids::TenantId;
use crate::log::LogView;
use crate::store::{CheckpointRows, Store};

/// The latest checkpoint a witness quorum cosigned for a tenant's log, as
/// the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosignedCheckpoint {
    /// The checkpoint the note carries (origin and tree), parsed, not
    /// verified: a reader verifies [`Self::note`] with the keys it trusts.
    pub checkpoint: Checkpoint,
    /// The note as kept: the checkpoint, the log's signature and the
    /// witnesses' cosignatures.
    pub note: String,
}

fn damaged(tenant: &TenantId, detail: String) -> JournalError {
    JournalError::StoreDamage { tenant: tenant.clone(), detail }
}

/// How many of the newest cosigned rows (in the order they were recorded)
/// [`latest_cosigned`] and [`cosigned_inclusion`] read: enough for two
/// instances of a plane recording their rounds as they finish, while a plane
/// that has kept a row a round for years is read in the same time as a new
/// one. A row older than these is never the latest (the log only grows, and
/// each round cosigns it as it is then).
pub const NEWEST_COSIGNED_READ: usize = 256;

/// The latest checkpoint a witness quorum cosigned for the tenant's log:
/// the kept row of the largest tree among the newest
/// [`NEWEST_COSIGNED_READ`], whatever order they were recorded in (two
/// instances of a plane record their rounds as they finish); `None` before
/// the first round that met its quorum. A kept note whose checkpoint does
/// not parse, or is not of the tree kept beside it, is
/// [`JournalError::StoreDamage`]. Not verified: a reader verifies the note
/// with the keys it trusts (`runtime::verify_cosigned_rows`).
pub fn latest_cosigned(store: &dyn Store, tenant: &TenantId) -> Result<Option<CosignedCheckpoint>, JournalError> {
    let rows = store.newest_checkpoints(tenant, CheckpointRows::Cosigned, NEWEST_COSIGNED_READ)?;
    let latest = rows.iter().enumerate().max_by_key(|(i, row)| (row.tree.size, *i)).map(|(_, row)| row);
    latest.map(|row| cosigned_of(tenant, row)).transpose()
}

/// One kept cosigned row as a checkpoint and its note; a note whose
/// checkpoint does not parse, or is not of the tree kept beside it, is
/// [`JournalError::StoreDamage`].
pub fn cosigned_of(tenant: &TenantId, row: &crate::store::SignedTree) -> Result<CosignedCheckpoint, JournalError> {
    let damaged_note = |detail: String| damaged(tenant, format!("the stored cosigned note is damaged: {detail}"));
    let (text, _) = witness::split_note(&row.note).map_err(|err| damaged_note(err.to_string()))?;
    let checkpoint = Checkpoint::parse(text).map_err(|err| damaged_note(err.to_string()))?;
    if checkpoint.tree() != row.tree {
        return Err(damaged_note(format!(
            "its checkpoint is of size {}, the tree kept beside it of size {}",
            checkpoint.tree().size,
            row.tree.size
        )));
    }
    Ok(CosignedCheckpoint { checkpoint, note: row.note.clone() })
}

/// The latest checkpoint a witness quorum cosigned that holds the leaf
/// `leaf` at `index` of `view` (a run's seal leaf, or the heads leaf holding
/// an open run's head), with the leaf's inclusion proof in it; `None` when
/// none of the newest [`NEWEST_COSIGNED_READ`] cosigned rows holds the leaf
/// yet (an older row is of a smaller tree than the newest). The proof is
/// checked against the cosigned tree: a cosigned checkpoint the view's log
/// does not extend is [`JournalError::StoreDamage`].
pub fn cosigned_inclusion(
    store: &dyn Store,
    view: &LogView<'_>,
    index: u64,
    leaf: &tlog::LeafHash,
) -> Result<Option<CosignedInclusion>, JournalError> {
    let tenant = view.tenant();
    let holding = store
        .newest_checkpoints(tenant, CheckpointRows::Cosigned, NEWEST_COSIGNED_READ)?
        .into_iter()
        .rev()
        .find(|cosigned| cosigned.tree.size > index && cosigned.tree.size <= view.size());
    let Some(cosigned) = holding else {
        return Ok(None);
    };
    let size = cosigned.tree.size;
    let proof = tlog::prove_inclusion(view, index, size).map_err(|err| match err {
        tlog::ProveError::Reader(err) => err,
        other => damaged(tenant, format!("proving leaf {index} in the cosigned checkpoint of size {size}: {other}")),
    })?;
    cosigned.tree.verify_inclusion(leaf, index, &proof).map_err(|err| {
        damaged(tenant, format!("the cosigned checkpoint of size {size} does not hold leaf {index}: {err}"))
    })?;
    Ok(Some(CosignedInclusion { note: cosigned.note, index, proof }))
}
