//! `agentplane diff`: two runs' journals side by side, aligned, every
//! differing row marked (`!`) and the first named. What the runs did is compared (kind, effect key, body); where and
//! when they did it (run, seq, time, writer) is shown, not compared.

use super::cost::{Totals, figure};
use journal_core::compare::{IDENTITY_FIELDS, same_at, wire_body};
use journal_core::{RunId, TimeWindow, VerifiedRecord, VerifyOptions};
use serde::Serialize;
use serde_json::Value;

use crate::config::Settings;
use crate::context::{Reader, reader_upcasters, unvouched, unvouched_said};
use crate::failure::Failure;
use crate::output::print_json;

/// A run from the store (its id) or an export file (its path); its chain verified.
fn load(settings: &Settings, which: &str) -> Result<(String, Vec<VerifiedRecord>), Failure> {
    let path = std::path::Path::new(which);
    if path.is_file() {
        // As `verify-export` reads it: at most 1 GiB, no line over 64 MiB.
        let text = crate::cmd::export::read_export(path)?;
        let upcasters = reader_upcasters();
        let check =
            journal_core::ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
        let (run, records) = journal_core::export::verified_chain(&text, check)
            .map_err(|err| Failure::Findings(format!("{which}: {err}")))?;
        // Its chain alone: the seal, the checkpoint and the signatures that
        // vouch for it are `verify-export`'s, and the label says so, so that
        // "did the same" is never read as more than it checked.
        return Ok((
            format!(
                "{run} ({which}: an export, its chain checked alone; `agentplane verify-export` checks its seal, \
                 checkpoint and signatures)"
            ),
            records,
        ));
    }
    let run = RunId::new(which).map_err(|err| {
        Failure::Usage(format!("{} is neither an export file nor a run id: {err}", crate::output::shown(which)))
    })?;
    let reader = Reader::open(settings)?;
    let verified = reader.read(&run)?;
    // The read is lenient (R-SIG-3): what no trusted key vouches for is
    // compared too, and said beside the run, so that "did the same" is never
    // read as vouched for when it is not.
    let said = match unvouched(&reader, &verified, TimeWindow::ALL) {
        None => Some("its signatures not checked: the key file is not at hand".to_owned()),
        Some(counted) => unvouched_said(
            counted,
            "of its records",
            "`agentplane runs --require-signature` refuses them, `agentplane audit --require-signature` names them",
        ),
    };
    let name = said.map_or_else(|| run.to_string(), |said| format!("{run} ({said})"));
    Ok((name, verified.records))
}

/// `diff --json`. Fields in alphabetical order here and below, as the JSON
/// has always been printed.
#[derive(Debug, Serialize)]
struct Diff {
    a: String,
    b: String,
    cost: CostPair,
    first_difference: Option<usize>,
    rows: Vec<Row>,
}

/// The two runs' costs, by their records.
#[derive(Debug, Serialize)]
struct CostPair {
    a: Totals,
    b: Totals,
}

/// The records at one position of both runs (`None`: that run is shorter).
#[derive(Debug, Serialize)]
struct Row {
    a: Option<Side>,
    b: Option<Side>,
    position: usize,
    same: bool,
}

/// A record as shown: what it did, and where and when.
#[derive(Debug, Serialize)]
struct Side {
    at: String,
    body: Value,
    effect_key: Option<String>,
    kind: String,
    seq: u64,
}

impl Side {
    fn of(record: &VerifiedRecord) -> Self {
        Self {
            at: record.record.at.to_string(),
            body: wire_body(record),
            effect_key: record.stored.effect_key.clone(),
            kind: record.stored.kind.clone(),
            seq: record.stored.seq,
        }
    }

    /// The cell of the table: kind and effect key, then the body's fields
    /// that differ from the other side's (or, when none do, its result,
    /// outcome or step), in words rather than cut JSON.
    fn cell(side: Option<&Self>, other: Option<&Self>) -> String {
        let Some(side) = side else {
            return "-".to_owned();
        };
        let mut parts = vec![side.kind.clone()];
        parts.extend(side.effect_key.clone());
        let fields: Vec<(&String, &Value)> = side.body.as_object().map(|o| o.iter().collect()).unwrap_or_default();
        let differing: Vec<String> = fields
            .iter()
            .filter(|(name, value)| {
                !IDENTITY_FIELDS.contains(&name.as_str())
                    && other.is_some_and(|o| o.kind == side.kind && o.body.get(name.as_str()) != Some(value))
            })
            .map(|(name, value)| format!("{name}={}", words(value)))
            .collect();
        if differing.is_empty() {
            let detail = ["result", "outcome", "step"].iter().find_map(|field| side.body.get(*field));
            parts.extend(detail.map(words));
        } else {
            parts.extend(differing);
        }
        cut(&parts.join(" "), CELL_CHARS)
    }
}

/// The widest a cell of `diff` grows, in characters.
const CELL_CHARS: usize = 56;

/// A JSON value in words: strings bare, objects as `name=value`.
fn words(value: &Value) -> String {
    match value {
        Value::String(text) => text.replace(['\n', '\r'], " "),
        // `{"ok":{"output":"x"}}` reads `ok: x`.
        Value::Object(fields) if fields.len() == 1 => fields
            .iter()
            .map(|(name, inner)| match inner.as_object().filter(|o| o.len() == 1).and_then(|o| o.values().next()) {
                Some(Value::String(text)) => format!("{name}: {}", text.replace(['\n', '\r'], " ")),
                _ => format!("{name} {}", words(inner)),
            })
            .collect(),
        Value::Object(fields) => {
            fields.iter().map(|(name, value)| format!("{name}={}", words(value))).collect::<Vec<_>>().join(" ")
        }
        Value::Array(items) => items.iter().map(words).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// Text cut to `max` characters, a cut marked with `…`, on one line with
/// its control characters escaped ([`crate::output::one_line`]).
fn cut(text: &str, max: usize) -> String {
    let text = crate::output::one_line(text);
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((at, _)) if text.chars().count() > max => format!("{}…", text.get(..at).unwrap_or_default()),
        _ => text,
    }
}

/// `agentplane diff A B [--json]`: exit 1 when the runs differ.
pub fn diff(settings: &Settings, a: &str, b: &str, json: bool) -> Result<(), Failure> {
    let (name_a, records_a) = load(settings, a)?;
    let (name_b, records_b) = load(settings, b)?;
    let length = records_a.len().max(records_b.len());
    let mut first = None;
    let mut rows = Vec::new();
    for index in 0..length {
        let (record_a, record_b) = (records_a.get(index), records_b.get(index));
        let (a, b) = (record_a.map(Side::of), record_b.map(Side::of));
        let same = record_a.is_some() && record_b.is_some() && same_at(record_a, record_b);
        if !same && first.is_none() {
            first = Some(index + 1);
        }
        rows.push(Row { a, b, position: index + 1, same });
    }
    let (cost_a, cost_b) = (Totals::of(&records_a), Totals::of(&records_b));
    let answer = if first.is_some() { Err(Failure::Findings("the runs differ".into())) } else { Ok(()) };
    if json {
        print_json(&Diff {
            a: name_a,
            b: name_b,
            cost: CostPair { a: cost_a, b: cost_b },
            first_difference: first,
            rows,
        })?;
    } else {
        // A name quotes the export's file name, whatever it holds.
        let one_line = crate::output::one_line;
        outln!("A = {}\nB = {}", one_line(&name_a), one_line(&name_b));
        let cells: Vec<(String, String)> = rows
            .iter()
            .map(|row| (Side::cell(row.a.as_ref(), row.b.as_ref()), Side::cell(row.b.as_ref(), row.a.as_ref())))
            .collect();
        let width = |pick: fn(&(String, String)) -> &String| {
            cells.iter().map(|cell| pick(cell).chars().count()).max().unwrap_or(0).max(1)
        };
        let (wide_a, wide_b) = (width(|c| &c.0), width(|c| &c.1));
        let number = rows.len().to_string().len().max(1);
        let pad =
            |text: &str, width: usize| format!("{text}{}", " ".repeat(width.saturating_sub(text.chars().count())));
        outln!("{}  {}  {}  B", pad("", 1), pad(&format!("{:>number$}", "#"), number), pad("A", wide_a));
        for (row, (a, b)) in rows.iter().zip(&cells) {
            // Every differing row is marked `!`; the first also in words.
            let mark = if row.same { " " } else { "!" };
            let first = if Some(row.position) == first { "  <- first difference" } else { "" };
            let line = format!("{mark}  {:>number$}  {}  {}", row.position, pad(a, wide_a), pad(b, wide_b));
            outln!("{}{first}", line.trim_end());
        }
        outln!(
            "cost A: {} tokens, {} effects, {} steps; B: {} tokens, {} effects, {} steps",
            figure(cost_a.tokens),
            figure(cost_a.effects),
            figure(cost_a.steps),
            figure(cost_b.tokens),
            figure(cost_b.effects),
            figure(cost_b.steps)
        );
        match first {
            Some(position) => outln!("first difference at record {position}"),
            None => outln!("the two runs did the same"),
        }
    }
    answer
}
