// serde_json::Value indexing returns Null for a missing key; it does not panic.
#![allow(clippy::indexing_slicing)]

//! The commands.

use std::io::IsTerminal as _;
use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use journal_core::log::sign_checkpoint;
use journal_core::{
    At, Build, ChainCheck, Ed25519Verifier, Journal, LogSource, LogView, Outcome, RunId, Runtime, RuntimeBuilder,
    Signer as _, Store, TenantId, TimeWindow, Upcasters, VerifiedRun, Verifier, VerifyOptions,
};
use serde_json::json;
use store_redb::RedbStore;

use crate::keys::PlaneKeys;
use crate::{Cli, Command, Failure};

/// This binary, named as the writer of every record it appends (R-VER-4).
pub fn cli_build() -> &'static Build {
    static BUILD: std::sync::OnceLock<Build> = std::sync::OnceLock::new();
    BUILD.get_or_init(|| Build::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")))
}

/// What every command works on.
pub struct Plane {
    pub store: Arc<RedbStore>,
    pub tenant: TenantId,
    pub keys: PlaneKeys,
}

impl Plane {
    pub fn journal(&self) -> Journal<'_> {
        Journal::new(self.store.as_ref(), &self.tenant, self.keys.origin()).written_by(cli_build())
    }

    pub fn runtime(&self) -> Result<Runtime, Failure> {
        RuntimeBuilder::new(Arc::clone(&self.store) as Arc<dyn Store>)
            .signer(Arc::new(self.keys.record.clone()))
            .verifier(Arc::new(self.keys.record_verifier()?))
            .tenant(self.tenant.clone(), self.keys.origin().clone(), Some(self.keys.log.clone()))
            .written_by(cli_build().clone())
            .build()
            .map_err(|err| Failure::Usage(err.to_string()))
    }

    pub fn read(
        &self,
        run: &RunId,
        verifier: Option<&dyn Verifier>,
        options: VerifyOptions,
    ) -> Result<VerifiedRun, Failure> {
        let upcasters = reader_upcasters();
        Ok(self.journal().read(run, ChainCheck { upcasters: &upcasters, verifier, options })?)
    }

    /// The tenant's log, as one view (R-LOG-7).
    pub fn log(&self) -> Result<LogView<'_>, Failure> {
        Ok(LogView::open(self.store.as_ref(), &self.tenant)?)
    }
}

/// What this binary reads, naming itself in a build-skew remedy (R-VER-4).
pub fn reader_upcasters() -> Upcasters {
    Upcasters::builtin().read_by(cli_build().clone())
}

fn tenant(text: &str) -> Result<TenantId, Failure> {
    TenantId::new(text).map_err(|err| Failure::Usage(err.to_string()))
}

fn run_id(text: &str) -> Result<RunId, Failure> {
    RunId::new(text).map_err(|err| Failure::Usage(err.to_string()))
}

/// Opens an existing store without ever writing to it.
fn open_existing(path: &Path) -> Result<RedbStore, Failure> {
    if !path.is_file() {
        return Err(Failure::Usage(format!(
            "no store at {} (run `agentplane demo` to make one, or pass --store)",
            path.display()
        )));
    }
    RedbStore::open_read_only(path).map_err(|err| {
        Failure::Io(format!("{err}; the file is not a readable agentplane store (it was left untouched)"))
    })
}

pub fn plane(cli: &Cli, writable: bool) -> Result<Plane, Failure> {
    let keys = PlaneKeys::read(&cli.keys)?;
    let store = if writable {
        RedbStore::create(&cli.store).map_err(|err| Failure::Io(err.to_string()))?
    } else {
        open_existing(&cli.store)?
    };
    Ok(Plane { store: Arc::new(store), tenant: tenant(&cli.tenant)?, keys })
}

fn print_json(value: &serde_json::Value) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value).map_err(|err| Failure::Io(err.to_string()))?;
    println!("{text}");
    Ok(())
}

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

pub fn run(cli: Cli) -> Result<(), Failure> {
    match &cli.command {
        Command::Keygen { origin } => {
            let keys = PlaneKeys::generate(origin)?;
            keys.write(&cli.keys)?;
            eprintln!("wrote {}; the record key id is {}", cli.keys.display(), keys.record.key_id());
            println!("{}", keys.log.verifier_key());
            Ok(())
        }
        Command::Demo => crate::demo::run(&cli),
        Command::Runs { outcome, json } => {
            let plane = plane(&cli, false)?;
            let outcome = outcome
                .as_deref()
                .map(|o| Outcome::parse(o).ok_or_else(|| Failure::Usage(format!("unknown outcome {o:?}; one of succeeded, cancelled, abandoned, failed, exhausted, withheld, quarantined"))))
                .transpose()?;
            runs(&plane, outcome, *json)
        }
        Command::Show { run, json } => show(&plane(&cli, false)?, &run_id(run)?, *json),
        Command::Verify { require_signature, run, json } => {
            verify(&plane(&cli, false)?, run.as_deref().map(run_id).transpose()?, *require_signature, *json)
        }
        Command::Checkpoint { json } => {
            let plane = plane(&cli, false)?;
            let signed = checkpoint(&plane)?;
            if *json {
                let body = signed.checkpoint();
                return print_json(&json!({
                    "origin": body.origin(),
                    "size": body.tree().size,
                    "root": b64(body.tree().root.as_bytes()),
                    "note": signed.note(),
                }));
            }
            print!("{}", signed.note());
            Ok(())
        }
        Command::Prove { run, consistency, json } => {
            let plane = plane(&cli, false)?;
            match (run, consistency) {
                (Some(run), None) => prove_inclusion(&plane, &run_id(run)?, *json),
                (None, Some(old)) => prove_consistency(&plane, *old, *json),
                _ => Err(Failure::Usage("give a RUN, or --consistency OLD_SIZE".into())),
            }
        }
        Command::Cost { run, since, until, json } => {
            let window = TimeWindow {
                since: since.as_deref().map(|t| instant("--since", t)).transpose()?,
                until: until.as_deref().map(|t| instant("--until", t)).transpose()?,
            };
            cost(&plane(&cli, false)?, run.as_deref().map(run_id).transpose()?, window, *json)
        }
        Command::Export { run, output } => export(&plane(&cli, false)?, &run_id(run)?, output),
        Command::VerifyExport { file, log_key, record_key, require_signature, json } => {
            verify_export(file, log_key, record_key, *require_signature, *json)
        }
    }
}

fn instant(flag: &str, text: &str) -> Result<At, Failure> {
    At::parse_lenient(text)
        .map_err(|err| Failure::Usage(format!("{flag}: {err} (give 2026-11-01 or 2026-11-01T09:00:00Z)")))
}

/// The current log head signed now (R-NOTE-2).
pub fn checkpoint(plane: &Plane) -> Result<witness::SignedCheckpoint, Failure> {
    let head = plane.log()?.head()?;
    Ok(sign_checkpoint(plane.keys.origin(), head.tree, &plane.keys.log)?)
}

pub fn run_rows(plane: &Plane, outcome: Option<Outcome>) -> Result<Vec<serde_json::Value>, Failure> {
    let mut out = Vec::new();
    for run in plane.store.runs(&plane.tenant, outcome)? {
        let rows = plane.store.read_run(&plane.tenant, &run)?;
        let tokens = rows
            .rows
            .iter()
            .filter_map(|row| serde_json::from_slice::<serde_json::Value>(&row.bytes).ok())
            .filter_map(|v| v["body"]["charged"]["tokens"].as_u64())
            .sum::<u64>();
        out.push(json!({
            "run": run.as_str(),
            "outcome": rows.outcome.map(|o| o.as_str()),
            "records": rows.rows.len(),
            "sealed": rows.seal.is_some(),
            "position": rows.seal.map(|s| s.position),
            "tokens": tokens,
        }));
    }
    Ok(out)
}

pub fn print_runs_table(rows: &[serde_json::Value]) {
    println!("{:<30} {:<12} {:>7} {:>7} {:>8}", "RUN", "OUTCOME", "RECORDS", "SEALED", "TOKENS");
    for row in rows {
        let sealed = row["position"].as_u64().map_or_else(|| "-".to_owned(), |p| format!("#{p}"));
        println!(
            "{:<30} {:<12} {:>7} {:>7} {:>8}",
            row["run"].as_str().unwrap_or_default(),
            row["outcome"].as_str().unwrap_or("running"),
            row["records"].as_u64().unwrap_or(0),
            sealed,
            row["tokens"].as_u64().unwrap_or(0)
        );
    }
}

fn runs(plane: &Plane, outcome: Option<Outcome>, json: bool) -> Result<(), Failure> {
    let rows = run_rows(plane, outcome)?;
    if json {
        return print_json(&serde_json::Value::Array(rows));
    }
    print_runs_table(&rows);
    Ok(())
}

fn show(plane: &Plane, run: &RunId, json: bool) -> Result<(), Failure> {
    let verifier = plane.keys.record_verifier()?;
    let verified = plane.read(run, Some(&verifier), VerifyOptions::default())?;
    let records: Vec<serde_json::Value> = verified
        .records
        .iter()
        .map(|r| {
            json!({
                "seq": r.stored.seq,
                "at": r.record.at.to_string(),
                "kind": r.stored.kind,
                "effect_key": r.stored.effect_key,
                "prev_hash": r.stored.prev_hash.to_string(),
                "hash": r.stored.hash.to_string(),
                "signed_by": r.stored.signature.as_ref().map(|s| s.key_id.clone()),
            })
        })
        .collect();
    if json {
        return print_json(
            &json!({ "run": run.as_str(), "outcome": verified.outcome.map(|o| o.as_str()), "records": records }),
        );
    }
    println!("run {run} ({})", verified.outcome.map_or("running", |o| o.as_str()));
    println!(
        "{:>4}  {:<24} {:<18} {:<22} {:<12} {:<12} SIGNED BY",
        "SEQ", "AT (UTC)", "KIND", "EFFECT KEY", "PREV_HASH", "HASH"
    );
    for r in &records {
        let short = |key: &str| r[key].as_str().map(|h| format!("{}…", &h[..h.len().min(10)])).unwrap_or_default();
        println!(
            "{:>4}  {:<24} {:<18} {:<22} {:<12} {:<12} {}",
            r["seq"],
            r["at"].as_str().unwrap_or_default(),
            r["kind"].as_str().unwrap_or_default(),
            r["effect_key"].as_str().unwrap_or("–"),
            short("prev_hash"),
            short("hash"),
            r["signed_by"].as_str().unwrap_or("(unsigned)")
        );
    }
    Ok(())
}

fn verify(plane: &Plane, only: Option<RunId>, require_signature: bool, json: bool) -> Result<(), Failure> {
    let verifier = plane.keys.record_verifier()?;
    let runs = match only {
        Some(run) => vec![run],
        None => plane.store.runs(&plane.tenant, None)?,
    };
    let progress = if std::io::stderr().is_terminal() {
        indicatif::ProgressBar::new(runs.len() as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let log = plane.log()?;
    let head = log.head()?;
    let mut findings = Vec::new();
    let mut inclusions = 0;
    for run in &runs {
        progress.inc(1);
        match plane.read(run, Some(&verifier), VerifyOptions { require_signature }) {
            Err(err) => findings.push(json!({ "run": run.as_str(), "finding": failure_text(&err) })),
            // A sealed run must also prove its inclusion in the current log.
            Ok(verified) if verified.seal.is_some() => {
                inclusions += 1;
                let proven = log.inclusion(run).map_err(|err| err.to_string()).and_then(|p| {
                    head.tree.verify_inclusion(&p.leaf, p.index, &p.proof).map_err(|err| err.to_string())
                });
                if let Err(reason) = proven {
                    findings.push(json!({ "run": run.as_str(), "finding": format!("sealed run does not prove inclusion: {reason}") }));
                }
            }
            Ok(_) => {}
        }
    }
    progress.finish_and_clear();
    if head.source == LogSource::WalkWithHoles {
        findings.push(json!({ "run": null, "finding": "the log's positions have holes: a sealed run was removed behind the store's back" }));
    }
    if json {
        print_json(&json!({
            "runs_checked": runs.len(),
            "inclusions_checked": inclusions,
            "log_size": head.tree.size,
            "findings": findings,
        }))?;
    } else {
        for finding in &findings {
            println!(
                "FINDING {}: {}",
                finding["run"].as_str().unwrap_or("log"),
                finding["finding"].as_str().unwrap_or_default()
            );
        }
        println!(
            "{} runs checked, {inclusions} sealed runs proven in the log of size {}, {} findings",
            runs.len(),
            head.tree.size,
            findings.len()
        );
    }
    if findings.is_empty() { Ok(()) } else { Err(Failure::Findings(format!("{} findings", findings.len()))) }
}

fn failure_text(failure: &Failure) -> String {
    match failure {
        Failure::Findings(m) | Failure::Usage(m) | Failure::Io(m) | Failure::BuildSkew(m) => m.clone(),
    }
}

fn prove_inclusion(plane: &Plane, run: &RunId, json: bool) -> Result<(), Failure> {
    let inclusion = plane.log()?.inclusion(run)?;
    let proof: Vec<String> = inclusion.proof.path().iter().map(|h| b64(h.as_bytes())).collect();
    let walked = inclusion.source.has_holes();
    if json {
        return print_json(&json!({
            "run": run.as_str(),
            "index": inclusion.index,
            "size": inclusion.tree.size,
            "root": b64(inclusion.tree.root.as_bytes()),
            "leaf_hash": b64(inclusion.leaf.as_bytes()),
            "proof": proof,
            "from_walk_with_holes": walked,
        }));
    }
    if walked {
        eprintln!("warning: the log's positions have holes (a sealed run was removed); this proof is from the walk");
    }
    println!("run {run} is leaf {} of {}", inclusion.index, inclusion.tree.size);
    println!("root      {}", b64(inclusion.tree.root.as_bytes()));
    println!("leaf hash {}", b64(inclusion.leaf.as_bytes()));
    for hash in proof {
        println!("proof     {hash}");
    }
    Ok(())
}

fn prove_consistency(plane: &Plane, old: u64, json: bool) -> Result<(), Failure> {
    let log = plane.log()?;
    let consistency = log.consistency(old, log.size())?;
    let hashes: Vec<String> = consistency.proof.path().iter().map(|h| b64(h.as_bytes())).collect();
    let walked = consistency.source.has_holes();
    if json {
        return print_json(&json!({
            "old_size": old,
            "old_root": b64(consistency.old.root.as_bytes()),
            "size": consistency.new.size,
            "root": b64(consistency.new.root.as_bytes()),
            "proof": hashes,
            "from_walk_with_holes": walked,
        }));
    }
    if walked {
        eprintln!("warning: the log's positions have holes (a sealed run was removed); this proof is from the walk");
    }
    println!("size {old} -> {}", consistency.new.size);
    for hash in hashes {
        println!("proof {hash}");
    }
    Ok(())
}

fn cost(plane: &Plane, run: Option<RunId>, window: TimeWindow, json: bool) -> Result<(), Failure> {
    let runtime = plane.runtime()?;
    let counters = match &run {
        Some(run) => {
            let verifier = plane.keys.record_verifier()?;
            journal_core::runtime::cost_in(&plane.read(run, Some(&verifier), VerifyOptions::default())?, window)
        }
        None => runtime.tenant_cost_in(&plane.tenant, window)?,
    };
    let mut scope = run.as_ref().map_or_else(|| format!("tenant {}", plane.tenant), |r| format!("run {r}"));
    if let Some(since) = window.since {
        scope.push_str(&format!(" since {since}"));
    }
    if let Some(until) = window.until {
        scope.push_str(&format!(" until {until}"));
    }
    if json {
        return print_json(&json!({
            "scope": scope,
            "since": window.since.map(|at| at.to_string()),
            "until": window.until.map(|at| at.to_string()),
            "tokens": counters.tokens,
            "cost_micros": counters.cost_micros,
            "steps": counters.steps,
            "effects": counters.effects,
            "wall_millis": counters.wall_millis,
        }));
    }
    println!(
        "{scope}: {} tokens, {} cost micros, {} steps, {} effects, {} ms",
        counters.tokens, counters.cost_micros, counters.steps, counters.effects, counters.wall_millis
    );
    Ok(())
}

fn export(plane: &Plane, run: &RunId, output: &Path) -> Result<(), Failure> {
    let verifier = plane.keys.record_verifier()?;
    let verified = plane.read(run, Some(&verifier), VerifyOptions::default())?;
    if verified.seal.is_none() {
        return Err(Failure::Usage(format!("run {run} is not sealed; only sealed runs export")));
    }
    let inclusion = plane.log()?.inclusion(run)?;
    let signed = sign_checkpoint(plane.keys.origin(), inclusion.tree, &plane.keys.log)?;
    let text =
        journal_core::export::write_export(&plane.tenant, plane.keys.origin(), run, &verified, &inclusion, &signed)?;
    std::fs::write(output, text).map_err(|err| Failure::Io(format!("writing {}: {err}", output.display())))?;
    eprintln!("exported run {run} ({} records) to {}", verified.records.len(), output.display());
    Ok(())
}

fn verify_export(
    file: &Path,
    log_key: &str,
    record_keys: &[String],
    require_signature: bool,
    json: bool,
) -> Result<(), Failure> {
    let log_key = witness::VerifierKey::parse(log_key).map_err(|err| Failure::Usage(format!("--log-key: {err}")))?;
    let mut verifier = Ed25519Verifier::new();
    for spec in record_keys {
        let (key_id, public) = spec
            .split_once('=')
            .ok_or_else(|| Failure::Usage(format!("--record-key {spec:?}: expected KEY_ID=BASE64")))?;
        let public = STANDARD.decode(public).ok().and_then(|b| <[u8; 32]>::try_from(b).ok());
        let public =
            public.ok_or_else(|| Failure::Usage(format!("--record-key {spec:?}: not a base64 32-byte key")))?;
        verifier.trust(key_id, public).map_err(Failure::Usage)?;
    }
    let text = std::fs::read(file).map_err(|err| Failure::Io(format!("reading {}: {err}", file.display())))?;
    let text =
        String::from_utf8(text).map_err(|_| Failure::Findings(format!("{} is not UTF-8 text", file.display())))?;
    let upcasters = reader_upcasters();
    let check =
        ChainCheck { upcasters: &upcasters, verifier: Some(&verifier), options: VerifyOptions { require_signature } };
    match journal_core::export::verify_export(&text, &[log_key], check) {
        Ok(verified) => {
            if json {
                print_json(&json!({
                    "valid": true,
                    "origin": verified.origin.as_str(),
                    "run": verified.run.as_str(),
                    "records": verified.records,
                    "index": verified.index,
                    "size": verified.tree.size,
                    "outcome": verified.outcome.map(|o| o.as_str()),
                }))?;
            } else {
                println!(
                    "valid: run {} ({} records, {}) is leaf {} of {} in {}",
                    verified.run,
                    verified.records,
                    verified.outcome.map_or("?", |o| o.as_str()),
                    verified.index,
                    verified.tree.size,
                    verified.origin
                );
            }
            Ok(())
        }
        Err(err) => {
            if json {
                print_json(&json!({ "valid": false, "finding": err.to_string() }))?;
            }
            Err(Failure::Findings(err.to_string()))
        }
    }
}
