//! `agentplane checkpoint`: the log's head signed now, or the latest
//! checkpoint a witness quorum cosigned.

use journal_core::checkpoints::latest_cosigned;
use journal_core::log::sign_current_head;
use serde::Serialize;

use crate::config::Settings;
use crate::context::{Plane, Reader};
use crate::failure::Failure;
use crate::output::{b64, print_json};

/// `checkpoint --json`. Fields in alphabetical order, as the JSON has always been printed.
#[derive(Debug, Serialize)]
struct CheckpointRow {
    note: String,
    origin: String,
    root: String,
    size: u64,
}

impl CheckpointRow {
    fn of(checkpoint: &witness::Checkpoint, note: String) -> Self {
        let tree = checkpoint.tree();
        Self { note, origin: checkpoint.origin().to_owned(), root: b64(tree.root.as_bytes()), size: tree.size }
    }
}

/// The current log head signed now (R-NOTE-2), never a rollback.
pub fn sign(plane: &Plane) -> Result<witness::SignedCheckpoint, Failure> {
    let mark = plane.signing_mark()?;
    let (_, signed) = sign_current_head(plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.log, Some(mark))?;
    Ok(signed)
}

/// `agentplane checkpoint [--cosigned] [--json]`.
pub fn checkpoint(settings: &Settings, cosigned: bool, json: bool) -> Result<(), Failure> {
    let row = if cosigned {
        let reader = Reader::open(settings)?;
        let latest = latest_cosigned(reader.store.as_ref(), &reader.tenant)?.ok_or_else(|| {
            Failure::Usage(format!(
                "no witness quorum has cosigned tenant {}'s log yet: run `agentplane sweep`",
                reader.tenant
            ))
        })?;
        CheckpointRow::of(&latest.checkpoint, latest.note)
    } else {
        let signed = sign(&Plane::open(settings, false)?)?;
        CheckpointRow::of(signed.checkpoint(), signed.note().to_owned())
    };
    if json {
        return print_json(&row);
    }
    out!("{}", row.note);
    Ok(())
}
