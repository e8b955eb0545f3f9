//! `agentplane diff`: two runs' journals side by side, the first difference
//! marked. What the runs did is compared (kind, effect key, body); where and
//! when they did it (run, seq, time, writer) is shown, not compared.

use journal_core::{Counters, RunId, VerifiedRecord, VerifyOptions};
use serde::Serialize;
use serde_json::Value;

use crate::config::Settings;
use crate::context::{Reader, reader_upcasters};
use crate::failure::Failure;
use crate::output::print_json;

/// A run from the store (its id) or an export file (its path); its chain verified.
fn load(settings: &Settings, which: &str) -> Result<(String, Vec<VerifiedRecord>), Failure> {
    let path = std::path::Path::new(which);
    if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|err| Failure::Io(format!("reading {which}: {err}")))?;
        let upcasters = reader_upcasters();
        let check =
            journal_core::ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
        let (run, records) = journal_core::export::verified_chain(&text, check)
            .map_err(|err| Failure::Findings(format!("{which}: {err}")))?;
        return Ok((format!("{run} ({which})"), records));
    }
    let run = RunId::new(which).map_err(|err| {
        Failure::Usage(format!("{} is neither an export file nor a run id: {err}", crate::output::shown(which)))
    })?;
    let verified = Reader::open(settings)?.read(&run)?;
    Ok((run.to_string(), verified.records))
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
    a: CountersRow,
    b: CountersRow,
}

#[derive(Debug, Serialize)]
struct CountersRow {
    cost_micros: u64,
    effects: u64,
    steps: u64,
    tokens: u64,
    wall_millis: u64,
}

impl From<Counters> for CountersRow {
    fn from(c: Counters) -> Self {
        Self {
            cost_micros: c.cost_micros,
            effects: c.effects,
            steps: c.steps,
            tokens: c.tokens,
            wall_millis: c.wall_millis,
        }
    }
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
            body: body(record),
            effect_key: record.stored.effect_key.clone(),
            kind: record.stored.kind.clone(),
            seq: record.stored.seq,
        }
    }

    /// Whether two records did the same: kind, effect key and body (not
    /// where or when).
    fn same_as(&self, other: &Self) -> bool {
        (&self.kind, &self.effect_key, &self.body) == (&other.kind, &other.effect_key, &other.body)
    }

    /// The cell of the table: kind, effect key, and the body's result,
    /// outcome or step, cut to 48 characters.
    fn cell(side: Option<&Self>) -> String {
        let Some(side) = side else {
            return "—".to_owned();
        };
        let detail = ["result", "outcome", "step"]
            .iter()
            .find_map(|field| side.body.get(*field))
            .map(|detail| format!(" {detail}"))
            .unwrap_or_default();
        let key = side.effect_key.as_deref().map(|k| format!(" {k}")).unwrap_or_default();
        format!("{}{key}{detail}", side.kind).chars().take(48).collect()
    }
}

/// A record's body, as its wire bytes hold it (`null` when they hold none).
fn body(record: &VerifiedRecord) -> Value {
    serde_json::from_slice::<Value>(&record.stored.bytes)
        .ok()
        .and_then(|v| v.get("body").cloned())
        .unwrap_or(Value::Null)
}

fn cost(records: &[VerifiedRecord]) -> Counters {
    let mut total = Counters::default();
    for record in records {
        journal_core::runtime::charge(&mut total, &record.record.body);
    }
    total
}

/// `agentplane diff A B [--json]`: exit 1 when the runs differ.
pub fn diff(settings: &Settings, a: &str, b: &str, json: bool) -> Result<(), Failure> {
    let (name_a, records_a) = load(settings, a)?;
    let (name_b, records_b) = load(settings, b)?;
    let length = records_a.len().max(records_b.len());
    let mut first = None;
    let mut rows = Vec::new();
    for index in 0..length {
        let (a, b) = (records_a.get(index).map(Side::of), records_b.get(index).map(Side::of));
        let same = matches!((&a, &b), (Some(x), Some(y)) if x.same_as(y));
        if !same && first.is_none() {
            first = Some(index + 1);
        }
        rows.push(Row { a, b, position: index + 1, same });
    }
    let (cost_a, cost_b) = (cost(&records_a), cost(&records_b));
    if json {
        print_json(&Diff {
            a: name_a,
            b: name_b,
            cost: CostPair { a: cost_a.into(), b: cost_b.into() },
            first_difference: first,
            rows,
        })?;
    } else {
        outln!("A = {name_a}\nB = {name_b}");
        outln!("{:>4}  {:<48} {:<48}", "#", "A", "B");
        for row in &rows {
            let marker = if Some(row.position) == first { "  <- first difference" } else { "" };
            outln!(
                "{:>4}  {:<48} {:<48}{marker}",
                row.position,
                Side::cell(row.a.as_ref()),
                Side::cell(row.b.as_ref())
            );
        }
        outln!(
            "cost A: {} tokens, {} effects, {} steps; B: {} tokens, {} effects, {} steps",
            cost_a.tokens,
            cost_a.effects,
            cost_a.steps,
            cost_b.tokens,
            cost_b.effects,
            cost_b.steps
        );
        match first {
            Some(position) => outln!("first difference at record {position}"),
            None => outln!("the two runs did the same"),
        }
    }
    if first.is_some() { Err(Failure::Findings("the runs differ".into())) } else { Ok(()) }
}
