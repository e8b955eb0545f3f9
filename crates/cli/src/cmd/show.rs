//! `agentplane show RUN`: a run's journal, record by record.

use journal_core::VerifiedRecord;
use serde::Serialize;

use crate::args::run_id;
use crate::config::Settings;
use crate::context::Reader;
use crate::failure::Failure;
use crate::output::print_json;

/// `show --json`. Fields in alphabetical order, as the JSON has always been printed.
#[derive(Debug, Serialize)]
struct Shown {
    forked_from: Option<ForkedFrom>,
    outcome: Option<&'static str>,
    records: Vec<RecordRow>,
    run: String,
    signatures: &'static str,
}

/// Where a forked run came from.
#[derive(Debug, Serialize)]
struct ForkedFrom {
    at_seq: u64,
    hash: String,
    run: String,
}

/// One record: where and when it was written, what kind, its links, its signer.
#[derive(Debug, Serialize)]
struct RecordRow {
    at: String,
    effect_key: Option<String>,
    hash: String,
    kind: String,
    prev_hash: String,
    seq: u64,
    signed_by: Option<String>,
}

impl RecordRow {
    fn of(record: &VerifiedRecord) -> Self {
        let row = &record.stored;
        Self {
            at: record.record.at.to_string(),
            effect_key: row.effect_key.clone(),
            hash: row.hash.to_string(),
            kind: row.kind.clone(),
            prev_hash: row.prev_hash.to_string(),
            seq: row.seq,
            signed_by: row.signature.as_ref().map(|s| s.key_id.clone()),
        }
    }
}

/// A hash's first ten characters, for the table.
fn short(hash: &str) -> String {
    format!("{}…", hash.chars().take(10).collect::<String>())
}

/// `agentplane show RUN [--json]`.
pub fn show(settings: &Settings, run: &str, json: bool) -> Result<(), Failure> {
    let reader = Reader::open(settings)?;
    let run = run_id(run)?;
    let verified = reader.read(&run)?;
    let forked = verified.forked_from();
    let shown = Shown {
        forked_from: forked.map(|f| ForkedFrom {
            at_seq: f.at_seq,
            hash: f.source_hash.clone(),
            run: f.source_run.clone(),
        }),
        outcome: verified.last_conclusion().map(|c| c.outcome.as_str()),
        records: verified.records.iter().map(RecordRow::of).collect(),
        run: run.to_string(),
        signatures: if reader.verifier.is_some() { "checked" } else { "not checked (no key file)" },
    };
    if json {
        return print_json(&shown);
    }
    outln!("run {run} ({}); signatures {}", shown.outcome.unwrap_or("running"), shown.signatures);
    if let Some(forked) = &shown.forked_from {
        outln!("forked from run {} after seq {} (record hash {})", forked.run, forked.at_seq, forked.hash);
    }
    outln!(
        "{:>4}  {:<24} {:<18} {:<22} {:<12} {:<12} SIGNED BY",
        "SEQ",
        "AT (UTC)",
        "KIND",
        "EFFECT KEY",
        "PREV_HASH",
        "HASH"
    );
    for r in &shown.records {
        outln!(
            "{:>4}  {:<24} {:<18} {:<22} {:<12} {:<12} {}",
            r.seq,
            r.at,
            r.kind,
            r.effect_key.as_deref().unwrap_or("–"),
            short(&r.prev_hash),
            short(&r.hash),
            r.signed_by.as_deref().unwrap_or("(unsigned)")
        );
    }
    Ok(())
}
