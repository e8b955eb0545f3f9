//! `agentplane prove`: a sealed run's inclusion in the log, or the log's
//! consistency with an older size; hashes in lowercase hex, as in every
//! command's JSON (the audit report, `show`, `sweep` and exports).

use journal_core::LogSource;
use serde::Serialize;

use crate::args::run_id;
use crate::config::Settings;
use crate::context::Reader;
use crate::failure::Failure;
use crate::output::print_json;

/// `prove RUN --json`. Fields in alphabetical order, as the JSON has always been printed.
#[derive(Debug, Serialize)]
struct InclusionRow {
    from_walk_with_holes: bool,
    index: u64,
    leaf_hash: String,
    proof: Vec<String>,
    root: String,
    run: String,
    size: u64,
}

/// `prove --consistency OLD_SIZE --json`.
#[derive(Debug, Serialize)]
struct ConsistencyRow {
    from_walk_with_holes: bool,
    old_root: String,
    old_size: u64,
    proof: Vec<String>,
    root: String,
    size: u64,
}

fn warn_if_walked(source: LogSource) {
    if source.has_holes() {
        eprintln!("warning: the log's positions have holes (a sealed run was removed); this proof is from the walk");
    }
}

/// `prove RUN --json` for a run that is not sealed (issue 20): the heads
/// leaf that holds its head, proven in the log, and the entry proven in the
/// leaf. Fields in alphabetical order, like the sealed form.
#[derive(Debug, Serialize)]
struct HeadRow {
    entries: u64,
    entry_index: u64,
    entry_proof: Vec<String>,
    from_walk_with_holes: bool,
    head_hash: String,
    head_seq: u64,
    index: u64,
    kind: &'static str,
    leaf_hash: String,
    proof: Vec<String>,
    root: String,
    run: String,
    size: u64,
}

/// An open run: the newest heads leaf that holds it. This attests that the
/// run had this record at this seq when the checkpoint was signed, never
/// that its history is complete.
fn head_inclusion(reader: &Reader, run: &journal_core::RunId, json: bool) -> Result<(), Failure> {
    let log = reader.log()?;
    let proven = log.head_inclusion(run)?;
    proven.verify().map_err(|err| Failure::Findings(format!("the head proof does not verify: {err}")))?;
    let row = HeadRow {
        entries: proven.entries,
        entry_index: proven.entry_index,
        entry_proof: proven.entry_proof.path().iter().map(ToString::to_string).collect(),
        from_walk_with_holes: proven.source.has_holes(),
        head_hash: proven.entry.hash.to_string(),
        head_seq: proven.entry.seq,
        index: proven.index,
        kind: "head",
        leaf_hash: proven.leaf.to_string(),
        proof: proven.proof.path().iter().map(ToString::to_string).collect(),
        root: proven.tree.root.to_string(),
        run: run.to_string(),
        size: proven.tree.size,
    };
    if json {
        return print_json(&row);
    }
    warn_if_walked(proven.source);
    outln!(
        "run {run} is not sealed: it had record {} (hash {}) when the log had {} leaves",
        row.head_seq,
        row.head_hash,
        row.size
    );
    outln!("  (a head, not a complete history: only a seal says that)");
    outln!("heads leaf {} of {}", row.index, row.size);
    outln!("root       {}", row.root);
    outln!("leaf hash  {}", row.leaf_hash);
    for hash in &row.proof {
        outln!("proof      {hash}");
    }
    outln!("entry {} of {} in the heads leaf", row.entry_index, row.entries);
    for hash in &row.entry_proof {
        outln!("entry proof {hash}");
    }
    Ok(())
}

/// `agentplane prove RUN [--json]`.
pub fn inclusion(settings: &Settings, run: &str, json: bool) -> Result<(), Failure> {
    let reader = Reader::open(settings)?;
    let run = run_id(run)?;
    let inclusion = match reader.log()?.inclusion(&run) {
        Ok(inclusion) => inclusion,
        Err(journal_core::JournalError::NotSealed { .. }) => return head_inclusion(&reader, &run, json),
        Err(err) => return Err(err.into()),
    };
    let row = InclusionRow {
        from_walk_with_holes: inclusion.source.has_holes(),
        index: inclusion.index,
        leaf_hash: inclusion.leaf.to_string(),
        proof: inclusion.proof.path().iter().map(ToString::to_string).collect(),
        root: inclusion.tree.root.to_string(),
        run: run.to_string(),
        size: inclusion.tree.size,
    };
    if json {
        return print_json(&row);
    }
    warn_if_walked(inclusion.source);
    outln!("run {run} is leaf {} of {}", row.index, row.size);
    outln!("root      {}", row.root);
    outln!("leaf hash {}", row.leaf_hash);
    for hash in &row.proof {
        outln!("proof     {hash}");
    }
    Ok(())
}

/// `agentplane prove --consistency OLD_SIZE [--json]`.
pub fn consistency(settings: &Settings, old: u64, json: bool) -> Result<(), Failure> {
    let reader = Reader::open(settings)?;
    let log = reader.log()?;
    let consistency = log.consistency(old, log.size())?;
    let row = ConsistencyRow {
        from_walk_with_holes: consistency.source.has_holes(),
        old_root: consistency.old.root.to_string(),
        old_size: old,
        proof: consistency.proof.path().iter().map(ToString::to_string).collect(),
        root: consistency.new.root.to_string(),
        size: consistency.new.size,
    };
    if json {
        return print_json(&row);
    }
    warn_if_walked(consistency.source);
    outln!("size {old} -> {}", row.size);
    outln!("old root {}", row.old_root);
    outln!("root     {}", row.root);
    for hash in &row.proof {
        outln!("proof {hash}");
    }
    Ok(())
}
