// serde_json::Value indexing reads Null for a missing key, and the values
// indexed for writing are objects made here: nothing panics.
#![allow(clippy::indexing_slicing)]

//! `agentplane diff`: two runs' journals side by side, the first difference
//! marked. What the runs did is compared (kind, effect key, body); where and
//! when they did it (run, seq, time, writer) is shown, not compared.

use journal_core::{Counters, RunId, VerifiedRecord, VerifyOptions};
use serde_json::{Value, json};

use crate::Failure;
use crate::commands::{print_json, reader, reader_upcasters};
use crate::config::Settings;

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
    let run = RunId::new(which)
        .map_err(|err| Failure::Usage(format!("{which:?} is neither an export file nor a run id: {err}")))?;
    let verified = reader(settings)?.read(&run)?;
    Ok((run.to_string(), verified.records))
}

/// What a record did: its kind, effect key and body, without where or when.
fn what(record: &VerifiedRecord) -> Value {
    let body = serde_json::from_slice::<Value>(&record.stored.bytes).map(|v| v["body"].clone()).unwrap_or(Value::Null);
    json!({ "kind": record.stored.kind, "effect_key": record.stored.effect_key, "body": body })
}

fn side(record: Option<&VerifiedRecord>) -> Value {
    record.map_or(Value::Null, |record| {
        let mut shown = what(record);
        shown["seq"] = json!(record.stored.seq);
        shown["at"] = json!(record.record.at.to_string());
        shown
    })
}

fn counters(c: &Counters) -> Value {
    json!({ "tokens": c.tokens, "cost_micros": c.cost_micros, "steps": c.steps, "effects": c.effects, "wall_millis": c.wall_millis })
}

fn cost(records: &[VerifiedRecord]) -> Counters {
    let mut total = Counters::default();
    for record in records {
        journal_core::runtime::charge(&mut total, &record.record.body);
    }
    total
}

pub fn diff(settings: &Settings, a: &str, b: &str, json: bool) -> Result<(), Failure> {
    let (name_a, records_a) = load(settings, a)?;
    let (name_b, records_b) = load(settings, b)?;
    let length = records_a.len().max(records_b.len());
    let mut first = None;
    let mut rows = Vec::new();
    for index in 0..length {
        let (ra, rb) = (records_a.get(index), records_b.get(index));
        let same = matches!((ra, rb), (Some(x), Some(y)) if what(x) == what(y));
        if !same && first.is_none() {
            first = Some(index + 1);
        }
        rows.push(json!({ "position": index + 1, "same": same, "a": side(ra), "b": side(rb) }));
    }
    let (cost_a, cost_b) = (cost(&records_a), cost(&records_b));
    if json {
        print_json(&json!({
            "a": name_a,
            "b": name_b,
            "first_difference": first,
            "rows": rows,
            "cost": { "a": counters(&cost_a), "b": counters(&cost_b) },
        }))?;
    } else {
        outln!("A = {name_a}\nB = {name_b}");
        outln!("{:>4}  {:<48} {:<48}", "#", "A", "B");
        for row in &rows {
            let cell = |v: &Value| {
                if v.is_null() {
                    "—".to_owned()
                } else {
                    let detail = match v["body"]
                        .get("result")
                        .or_else(|| v["body"].get("outcome"))
                        .or_else(|| v["body"].get("step"))
                    {
                        Some(detail) => format!(" {detail}"),
                        None => String::new(),
                    };
                    let key = v["effect_key"].as_str().map(|k| format!(" {k}")).unwrap_or_default();
                    let text = format!("{}{key}{detail}", v["kind"].as_str().unwrap_or_default());
                    text.chars().take(48).collect()
                }
            };
            let marker =
                if row["position"].as_u64().map(|p| p as usize) == first { "  <- first difference" } else { "" };
            outln!("{:>4}  {:<48} {:<48}{marker}", row["position"], cell(&row["a"]), cell(&row["b"]));
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
