//! `agentplane checkpoint`: the log's head signed now, or the latest
//! checkpoint a witness quorum cosigned.

use journal_core::checkpoints::{CosignedCheckpoint, cosigned_of};
use journal_core::log::sign_current_head_asking;
use journal_core::runtime::verify_cosigned_rows;
use serde::Serialize;

use crate::config::Settings;
use crate::context::{Plane, Reader};
use crate::failure::Failure;
use crate::keys::PlaneKeys;
use crate::output::print_json;

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
        Self { note, origin: checkpoint.origin().to_owned(), root: tree.root.to_string(), size: tree.size }
    }
}

/// The current log head signed now (R-NOTE-2), never a rollback. The
/// configured witnesses are asked what they hold before it is signed, and
/// asked again should signing start over on a fresh view (another signer
/// got further meanwhile): what they hold then binds that signature.
pub fn sign(plane: &Plane) -> Result<witness::SignedCheckpoint, Failure> {
    let mark = plane.signing_mark()?;
    let ask_again = plane.ask_again(mark)?;
    let (_, signed) = sign_current_head_asking(
        plane.store.as_ref(),
        &plane.tenant,
        &plane.origin,
        &plane.log,
        Some(mark),
        &ask_again,
    )?;
    Ok(signed)
}

/// Verifies every cosigned note the store keeps before one is printed
/// (issue 21, `verify_cosigned_rows`): each the plane's signed checkpoint of
/// the tree kept beside it, no trusted cosignature that fails, no two roots
/// at one size; one that does not verify is an integrity alarm (exit 1).
/// The latest round the configured witnesses cosigned to the quorum, when
/// there is one.
fn verified_latest_cosigned(settings: &Settings, reader: &Reader) -> Result<Option<CosignedCheckpoint>, Failure> {
    let keys = PlaneKeys::read_if_present(&settings.keys)?.ok_or_else(|| {
        Failure::Usage(format!(
            "checkpoint --cosigned verifies the kept notes with the plane's log key: run it beside the key file ({} is \
             missing); an auditor reads a witness with `agentplane audit --witness`",
            settings.keys.display()
        ))
    })?;
    let log_key = keys.log_for(&reader.origin)?.verifier_key();
    let plane = settings.plane.as_ref().filter(|plane| !plane.witnesses.is_empty()).ok_or_else(|| {
        Failure::Usage(
            "no witness configured: a cosigned note is verified with the witness keys of agentplane.toml".into(),
        )
    })?;
    let mut witness_keys = Vec::new();
    for entry in &plane.witnesses {
        witness_keys.push(
            agentplane_cli::plane_config::check_witness_key(&entry.key)
                .map_err(|err| Failure::Usage(format!("witness {}: {err}", entry.url)))?,
        );
    }
    let rows = reader.store.cosigned_checkpoints(&reader.tenant)?;
    // At least one witness, as `audit` counts: a quorum of 0 (written, or
    // missing from the file) would take a note no witness cosigned.
    let quorum = plane.quorum.max(1);
    match verify_cosigned_rows(&rows, &reader.origin, &log_key, &witness_keys, quorum) {
        Ok(newest) => {
            let row = newest.and_then(|(index, _)| rows.get(index));
            Ok(row.map(|row| cosigned_of(&reader.tenant, row)).transpose()?)
        }
        Err(err) => {
            let message = format!(
                "tenant {}: {err}: the store was written behind the plane's back (run `{}`)",
                reader.tenant,
                settings.command("verify")
            );
            tracing::error!(target: "agentplane.witness.integrity", tenant = %reader.tenant, "{message}");
            Err(Failure::Findings(message))
        }
    }
}

/// `agentplane checkpoint [--cosigned] [--json]`.
pub fn checkpoint(settings: &Settings, cosigned: bool, json: bool) -> Result<(), Failure> {
    let row = if cosigned {
        let reader = Reader::open(settings)?;
        let latest = verified_latest_cosigned(settings, &reader)?.ok_or_else(|| {
            Failure::Usage(format!(
                "no quorum of the configured witnesses has cosigned tenant {}'s log yet: run `{}`",
                reader.tenant,
                settings.command("sweep")
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
    // A kept note may carry lines of keys nobody trusts, in anyone's words.
    out!("{}", crate::output::lines_shown(&row.note));
    Ok(())
}
