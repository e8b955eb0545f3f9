//! `agentplane show RUN`: a run's journal, record by record.

use journal_core::{SignatureCheck, VerifiedRecord, Verifier};
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
    signatures: String,
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
    /// What the signature is worth here: `verified` (a key of this plane
    /// made it), `untrusted key` (signed by a key id this plane does not
    /// trust: nothing about it was checked), `unsigned`, or `not checked`
    /// (no key file at hand).
    signature: &'static str,
    signed_by: Option<String>,
}

impl RecordRow {
    /// The row of `record`; its signature checked with `verifier`, the
    /// plane's record key, when at hand. The chain check already refused a
    /// bad signature by a trusted key, and let one by an unknown key id
    /// pass: this says which, so a key id is never shown as if checked.
    fn of(record: &VerifiedRecord, verifier: Option<&dyn Verifier>) -> Self {
        let row = &record.stored;
        let signature = match (&row.signature, verifier) {
            (None, _) => "unsigned",
            (Some(_), None) => "not checked",
            (Some(signature), Some(verifier)) => {
                match verifier.verify(&signature.key_id, &row.hash, &signature.signature) {
                    SignatureCheck::Valid => "verified",
                    SignatureCheck::UnknownKey => "untrusted key",
                    // Refused by the chain check before it got here.
                    SignatureCheck::Invalid => "bad signature",
                }
            }
        };
        Self {
            at: record.record.at.to_string(),
            effect_key: row.effect_key.clone(),
            hash: row.hash.to_string(),
            kind: row.kind.clone(),
            prev_hash: row.prev_hash.to_string(),
            seq: row.seq,
            signature,
            signed_by: row.signature.as_ref().map(|s| s.key_id.clone()),
        }
    }
}

/// The widest a cell of the timeline grows, in characters.
const MAX_CELL_CHARS: usize = 80;

/// A hash's first ten characters, for the table.
fn short(hash: &str) -> String {
    format!("{}…", hash.chars().take(10).collect::<String>())
}

/// Text cut to `max` characters, on one line with its control characters
/// escaped ([`crate::output::one_line`]).
fn cut(text: &str, max: usize) -> String {
    let line = crate::output::one_line(text);
    match line.char_indices().nth(max) {
        None => line,
        Some((at, _)) => format!("{}…", line.get(..at).unwrap_or_default()),
    }
}

/// How a span of milliseconds reads: `850ms`, `2.4s`, `3m05s`, `2h10m`.
fn duration(millis: i64) -> String {
    match millis {
        i64::MIN..=999 => format!("{}ms", millis.max(0)),
        1_000..=59_999 => format!("{:.1}s", millis as f64 / 1000.0),
        60_000..=3_599_999 => format!("{}m{:02}s", millis / 60_000, millis % 60_000 / 1000),
        _ => format!("{}h{:02}m", millis / 3_600_000, millis % 3_600_000 / 60_000),
    }
}

/// What a record says, for the timeline: the step or effect it is about,
/// and its result; the duration since the record that opened it.
struct Line {
    what: String,
    result: String,
    /// Whether the result is a failure (red on a terminal) or a success (green).
    tone: Option<bool>,
    took: Option<i64>,
}

/// For each record, the one that opened what it ends: a step's end, the
/// latest start of that step before it; an effect's end, the latest effect
/// start before it when that is of its effect. One pass over the run, so a
/// run of any shape is matched in time linear in its length (a scan back
/// from each end made one of ends with no start quadratic; review 39).
fn openers(records: &[VerifiedRecord]) -> Vec<Option<&VerifiedRecord>> {
    use journal_core::RecordBody;
    let mut steps: std::collections::HashMap<&str, &VerifiedRecord> = std::collections::HashMap::new();
    let mut effect: Option<&VerifiedRecord> = None;
    records
        .iter()
        .map(|verified| {
            let record = &verified.record;
            match &record.body {
                RecordBody::StepStarted(step) => {
                    steps.insert(step.step.as_str(), verified);
                    None
                }
                RecordBody::EffectStarted(_) => {
                    effect = Some(verified);
                    None
                }
                RecordBody::StepFinished(step) => steps.get(step.step.as_str()).copied(),
                RecordBody::EffectDone(_) => effect.filter(|o| o.record.effect_key == record.effect_key),
                _ => None,
            }
        })
        .collect()
}

/// The line of `verified`, whose step or effect `opened` started.
fn line_of(verified: &VerifiedRecord, opened: Option<&VerifiedRecord>) -> Line {
    use journal_core::{EffectResult, RecordBody};
    let record = &verified.record;
    let took = opened.map(|o| record.at.unix_millis() - o.record.at.unix_millis());
    let key = record.effect_key.clone().unwrap_or_default();
    let plain = |what: String, result: String| Line { what, result, tone: None, took: None };
    match &record.body {
        RecordBody::RunAdmitted(admitted) => plain(String::new(), format!("key {}", admitted.idempotency_key)),
        RecordBody::PlanFrozen(plan) => plain(String::new(), format!("plan: {}", plan.steps.join(", "))),
        RecordBody::StepStarted(step) => plain(format!("step {}", step.step), "started".into()),
        RecordBody::StepFinished(step) => {
            Line { what: format!("step {}", step.step), result: "finished".into(), tone: Some(true), took }
        }
        RecordBody::EffectStarted(started) => plain(key, format!("started (step {})", started.step)),
        RecordBody::EffectDone(done) => {
            let tokens = done.charged.tokens;
            let (result, ok) = match &done.result {
                EffectResult::Ok { output } => (format!("ok: {} ({tokens} tokens)", cut(output, 40)), true),
                EffectResult::Err { error } => (format!("error: {}", cut(error, 40)), false),
            };
            Line { what: key, result, tone: Some(ok), took }
        }
        RecordBody::RunConcluded(concluded) => {
            use journal_core::Outcome;
            let tone = match concluded.outcome {
                Outcome::Succeeded => Some(true),
                Outcome::Failed | Outcome::Exhausted | Outcome::Quarantined => Some(false),
                Outcome::Cancelled | Outcome::Abandoned | Outcome::Withheld => None,
            };
            Line {
                what: String::new(),
                result: format!("{}: {}", concluded.outcome.as_str(), cut(&concluded.reason, 50)),
                tone,
                took: None,
            }
        }
        _ => plain(key, String::new()),
    }
}

/// The run as a timeline: each record with its time, the time since the
/// run was admitted, what it is about, its result and the duration of the
/// step or effect it ends; every column as wide as its widest cell, so any
/// number of records lines up. Colour only on a terminal.
fn print_timeline(records: &[VerifiedRecord], rows: &[RecordRow]) {
    let colour = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let admitted = records.first().map_or(0, |r| r.record.at.unix_millis());
    let header = ["SEQ", "AT (UTC)", "+T", "KIND", "ABOUT", "TOOK", "RESULT", "HASH", "SIGNED BY"];
    let mut table: Vec<([String; 9], Option<bool>)> = Vec::new();
    for ((record, row), opened) in records.iter().zip(rows).zip(openers(records)) {
        let line = line_of(record, opened);
        let mut cells = [
            row.seq.to_string(),
            row.at.clone(),
            format!("+{}", duration(record.record.at.unix_millis() - admitted)),
            row.kind.clone(),
            if line.what.is_empty() { "-".into() } else { line.what },
            line.took.map_or_else(|| "-".into(), duration),
            if line.result.is_empty() { "-".into() } else { line.result },
            short(&row.hash),
            match (&row.signed_by, row.signature) {
                (None, _) => "(unsigned)".into(),
                // The key id is cut, never what its signature is worth.
                (Some(key_id), "verified" | "not checked") => cut(key_id, MAX_CELL_CHARS),
                (Some(key_id), worth) => format!("{} ({worth}: NOT verified)", cut(key_id, MAX_CELL_CHARS)),
            },
        ];
        // A record's text (a key, a step, a signer's key id) is someone
        // else's: no control character of it reaches the terminal, and no
        // cell is wider than a line (a column is as wide as its widest cell
        // on every line; `--json` has every text whole). The signer's cell
        // holds its key id cut already.
        for (column, cell) in cells.iter_mut().enumerate() {
            *cell = if column == 8 { crate::output::one_line(cell) } else { cut(cell, MAX_CELL_CHARS) };
        }
        table.push((cells, line.tone));
    }
    let mut widths = header.map(|h| h.chars().count());
    for (cells, _) in &table {
        for (width, cell) in widths.iter_mut().zip(cells) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let pad = |text: &str, width: usize, right: bool| {
        let fill = " ".repeat(width.saturating_sub(text.chars().count()));
        if right { format!("{fill}{text}") } else { format!("{text}{fill}") }
    };
    let render = |cells: [&str; 9], tone: Option<bool>| {
        let mut parts = Vec::new();
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            // The last column is not padded: no trailing blanks.
            let text = if i == 8 { (*cell).to_owned() } else { pad(cell, width, matches!(i, 0 | 2 | 5)) };
            let text = match (i, tone, colour) {
                (6, Some(true), true) => format!("\u{1b}[32m{text}\u{1b}[0m"),
                (6, Some(false), true) => format!("\u{1b}[31m{text}\u{1b}[0m"),
                _ => text,
            };
            parts.push(text);
        }
        parts.join("  ")
    };
    outln!("{}", render(header, None));
    for (cells, tone) in &table {
        let cells: [&str; 9] = std::array::from_fn(|i| cells.get(i).map_or("", String::as_str));
        outln!("{}", render(cells, *tone));
    }
}

/// What was checked of the run's signatures, in a few words: a record
/// signed by a key id this plane does not trust is never counted as checked.
fn signatures_said(key_at_hand: bool, records: &[RecordRow]) -> String {
    if !key_at_hand {
        return "not checked (no key file)".into();
    }
    let untrusted = records.iter().filter(|r| r.signature == "untrusted key").count();
    let unsigned = records.iter().filter(|r| r.signature == "unsigned").count();
    match (untrusted, unsigned) {
        (0, 0) => "checked".into(),
        (0, unsigned) => format!("checked ({unsigned} records unsigned)"),
        (untrusted, _) => format!(
            "NOT all verified: {untrusted} records are signed by a key id this plane does not trust (see SIGNED BY)"
        ),
    }
}

/// `agentplane show RUN [--json]`.
pub fn show(settings: &Settings, run: &str, json: bool) -> Result<(), Failure> {
    let reader = Reader::open(settings)?;
    let run = run_id(run)?;
    let verified = reader.read(&run)?;
    let forked = verified.forked_from();
    let records: Vec<RecordRow> = verified
        .records
        .iter()
        .map(|record| RecordRow::of(record, reader.verifier.as_ref().map(|v| v as &dyn Verifier)))
        .collect();
    let shown = Shown {
        forked_from: forked.map(|f| ForkedFrom {
            at_seq: f.at_seq,
            hash: f.source_hash.clone(),
            run: f.source_run.clone(),
        }),
        outcome: verified.last_conclusion().map(|c| c.outcome.as_str()),
        signatures: signatures_said(reader.verifier.is_some(), &records),
        records,
        run: run.to_string(),
    };
    if json {
        return print_json(&shown);
    }
    outln!("run {run} ({}); signatures {}", shown.outcome.unwrap_or("running"), shown.signatures);
    if let Some(forked) = &shown.forked_from {
        outln!(
            "forked from run {} after seq {} (record hash {})",
            crate::output::one_line(&forked.run),
            forked.at_seq,
            crate::output::one_line(&forked.hash)
        );
    }
    print_timeline(&verified.records, &shown.records);
    Ok(())
}
