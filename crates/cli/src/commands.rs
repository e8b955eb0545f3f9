// serde_json::Value indexing returns Null for a missing key; it does not panic.
#![allow(clippy::indexing_slicing)]

//! The commands.

use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use journal_core::log::sign_current_head;
use journal_core::runtime::cost_in;
use journal_core::{
    At, Build, ChainCheck, Counters, Ed25519Verifier, Journal, LogView, Origin, Outcome, RunId, Runtime,
    RuntimeBuilder, Signer as _, Store, TenantId, TimeWindow, Upcasters, VerifiedRun, Verifier, VerifyOptions,
};
use serde_json::json;
use store_redb::{ReadOnlyOpening, RedbStore};

use crate::config::Settings;
use crate::keys::PlaneKeys;
use crate::{Cli, Command, Failure};

/// This binary, named as the writer of every record it appends (R-VER-4).
pub fn cli_build() -> &'static Build {
    static BUILD: std::sync::OnceLock<Build> = std::sync::OnceLock::new();
    BUILD.get_or_init(|| Build::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")))
}

/// What the commands that sign work on: the store open for writing, and the
/// plane's private keys.
pub struct Plane {
    pub store: Arc<dyn Store>,
    pub tenant: TenantId,
    pub origin: Origin,
    pub log: witness::LogKey,
    pub keys: PlaneKeys,
}

impl Plane {
    pub fn journal(&self) -> Journal<'_> {
        Journal::new(self.store.as_ref(), &self.tenant, &self.origin).written_by(cli_build())
    }

    pub fn runtime(&self) -> Result<Runtime, Failure> {
        RuntimeBuilder::new(Arc::clone(&self.store) as Arc<dyn Store>)
            .signer(Arc::new(self.keys.record.clone()))
            .verifier(Arc::new(self.keys.record_verifier()?))
            .tenant(self.tenant.clone(), self.origin.clone(), Some(self.log.clone()))
            .written_by(cli_build().clone())
            .build()
            .map_err(|err| Failure::Usage(err.to_string()))
    }

    pub fn read(&self, run: &RunId) -> Result<VerifiedRun, Failure> {
        let verifier = self.keys.record_verifier()?;
        let upcasters = reader_upcasters();
        let check = ChainCheck { upcasters: &upcasters, verifier: Some(&verifier), options: VerifyOptions::default() };
        Ok(self.journal().read(run, check)?)
    }
}

/// What the read commands work on: the store opened read-only, the origin,
/// and the plane's record key when its key file is at hand. No private key
/// is needed to read.
pub struct Reader {
    pub store: Arc<dyn Store>,
    pub tenant: TenantId,
    pub origin: Origin,
    pub verifier: Option<Ed25519Verifier>,
}

impl Reader {
    /// Whether reads also verify signatures (when the record key is at
    /// hand); without, they verify the chain alone, which is what the
    /// figures of `runs` and `cost` need to be the chain's.
    pub fn signatures(self, verify: bool) -> Self {
        if verify { self } else { Self { verifier: None, ..self } }
    }

    /// A run, its chain verified from the stored bytes (and its signatures,
    /// when the plane's record key is at hand).
    pub fn read(&self, run: &RunId) -> Result<VerifiedRun, Failure> {
        let upcasters = reader_upcasters();
        let verifier = self.verifier.as_ref().map(|v| v as &dyn Verifier);
        let check = ChainCheck { upcasters: &upcasters, verifier, options: VerifyOptions::default() };
        let journal = Journal::new(self.store.as_ref(), &self.tenant, &self.origin);
        Ok(journal.read(run, check)?)
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

fn run_id(text: &str) -> Result<RunId, Failure> {
    RunId::new(text).map_err(|err| Failure::Usage(err.to_string()))
}

fn no_store(path: &Path) -> Failure {
    Failure::Usage(format!("no store at {} (run `agentplane demo` to make one, or pass --store)", path.display()))
}

/// The PostgreSQL URL a `--store` names, if it names one.
pub fn postgres_url(store: &Path) -> Option<&str> {
    store.to_str().filter(|text| text.starts_with("postgres://") || text.starts_with("postgresql://"))
}

fn open_postgres(url: &str) -> Result<Arc<dyn Store>, Failure> {
    Ok(Arc::new(store_pg::PgStore::open(url)?))
}

/// Opens an existing store without ever writing to it. A file a crash left
/// needing a repair is read through a repaired private copy, and said so.
/// A PostgreSQL store is opened as any other client does.
pub fn open_existing(path: &Path) -> Result<Arc<dyn Store>, Failure> {
    if let Some(url) = postgres_url(path) {
        return open_postgres(url);
    }
    if !path.is_file() {
        return Err(no_store(path));
    }
    let (store, opening) = RedbStore::open_read_only_or_repaired_copy(path).map_err(|err| {
        Failure::Io(format!("{err}; the file is not a readable agentplane store (it was left untouched)"))
    })?;
    if opening == ReadOnlyOpening::RepairedCopy {
        eprintln!(
            "agentplane: {} was not closed cleanly (a crash) and needs a repair; reading a repaired private copy, \
             the file itself untouched. `agentplane repair` repairs it in place.",
            path.display()
        );
    }
    Ok(Arc::new(store))
}

/// Opens an existing store for a command that writes to it (a signed
/// checkpoint is recorded in it), refusing one that needs a repair or is not
/// a store: a writing command repairs nothing by accident.
pub fn open_for_signing(path: &Path) -> Result<Arc<dyn Store>, Failure> {
    if let Some(url) = postgres_url(path) {
        return open_postgres(url);
    }
    if !path.is_file() {
        return Err(no_store(path));
    }
    match RedbStore::open_read_only_or_repaired_copy(path) {
        Ok((_, ReadOnlyOpening::Direct)) => {}
        Ok((_, ReadOnlyOpening::RepairedCopy)) => {
            return Err(Failure::Usage(format!(
                "{} was not closed cleanly (a crash) and needs a repair first: run `agentplane repair`",
                path.display()
            )));
        }
        Err(err) => {
            return Err(Failure::Io(format!(
                "{err}; the file is not a readable agentplane store (it was left untouched)"
            )));
        }
    }
    Ok(Arc::new(RedbStore::open(path).map_err(|err| Failure::Io(err.to_string()))?))
}

/// The plane, for a command that signs: its key file is required.
pub fn plane(settings: &Settings, create: bool) -> Result<Plane, Failure> {
    let keys = PlaneKeys::read(&settings.keys)?;
    let origin = settings.origin(Some(&keys))?;
    let log = keys.log_for(&origin)?.clone();
    let store: Arc<dyn Store> = match (create, postgres_url(&settings.store)) {
        (_, Some(url)) => open_postgres(url)?,
        (true, None) => Arc::new(RedbStore::create(&settings.store).map_err(|err| Failure::Io(err.to_string()))?),
        (false, None) => open_for_signing(&settings.store)?,
    };
    Ok(Plane { store, tenant: settings.tenant_id()?, origin, log, keys })
}

/// The store for reading, with the origin from `--origin`, the configuration or the key file.
pub fn reader(settings: &Settings) -> Result<Reader, Failure> {
    let keys = PlaneKeys::read_if_present(&settings.keys)?;
    let origin = settings.origin(keys.as_ref())?;
    let verifier = keys.as_ref().map(PlaneKeys::record_verifier).transpose()?;
    let store = open_existing(&settings.store)?;
    Ok(Reader { store, tenant: settings.tenant_id()?, origin, verifier })
}

pub fn print_json(value: &serde_json::Value) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value).map_err(|err| Failure::Io(err.to_string()))?;
    outln!("{text}");
    Ok(())
}

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

pub fn run(flags: Cli) -> Result<(), Failure> {
    let settings = Settings::resolve(&flags)?;
    let cli = &settings;
    match &flags.command {
        Command::Init { tenants, origin_base, witnesses, quorum, sweep_every } => {
            crate::sweep::init(tenants, origin_base, witnesses, *quorum, sweep_every)
        }
        Command::Sweep { every, json } => crate::sweep::sweep(cli, every.as_deref(), *json),
        Command::Keygen { origin } => keygen(cli, origin),
        Command::Keys { witness_config, print, json } => keys(cli, *witness_config, *print, *json),
        Command::Demo => crate::demo::run(cli, &flags),
        Command::Runs { outcome, ids, verify_signatures, json } => {
            let reader = reader(cli)?.signatures(*verify_signatures);
            let outcome = outcome
                .as_deref()
                .map(|o| Outcome::parse(o).ok_or_else(|| Failure::Usage(format!("unknown outcome {o:?}; one of succeeded, cancelled, abandoned, failed, exhausted, withheld, quarantined"))))
                .transpose()?;
            if *ids {
                for run in reader.store.runs(&reader.tenant, outcome)? {
                    outln!("{run}");
                }
                return Ok(());
            }
            let rows = run_rows(reader.store.as_ref(), &reader.tenant, outcome, &|run| reader.read(run))?;
            if *json {
                return print_json(&serde_json::Value::Array(rows));
            }
            print_runs_table(&rows);
            Ok(())
        }
        Command::Show { run, json } => show(&reader(cli)?, &run_id(run)?, *json),
        Command::Verify { require_signature, assert_complete, json } => {
            crate::audit::verify(cli, *require_signature, *assert_complete, *json)
        }
        Command::Audit(args) => crate::audit::audit(cli, args),
        Command::Checkpoint { cosigned, json } => {
            let (body, note) = if *cosigned {
                let reader = reader(cli)?;
                let latest = reader.store.cosigned_checkpoints(&reader.tenant)?.pop().ok_or_else(|| {
                    Failure::Usage(format!(
                        "no witness quorum has cosigned tenant {}'s log yet: run `agentplane sweep`",
                        reader.tenant
                    ))
                })?;
                let opened = witness::SignedCheckpoint::open(latest.note.as_bytes(), &[&NoKeyCheck])
                    .map(|(signed, _)| signed.checkpoint().clone());
                let body = match opened {
                    Ok(body) => body,
                    Err(_) => witness::Checkpoint::parse(
                        witness::split_note(&latest.note).map(|(text, _)| text).unwrap_or_default(),
                    )
                    .map_err(|err| Failure::Findings(format!("the stored cosigned note is damaged: {err}")))?,
                };
                (body, latest.note)
            } else {
                let plane = plane(cli, false)?;
                let signed = checkpoint(&plane)?;
                (signed.checkpoint().clone(), signed.note().to_owned())
            };
            if *json {
                return print_json(&json!({
                    "origin": body.origin(),
                    "size": body.tree().size,
                    "root": b64(body.tree().root.as_bytes()),
                    "note": note,
                }));
            }
            out!("{note}");
            Ok(())
        }
        Command::Prove { run, consistency, json } => {
            let reader = reader(cli)?;
            match (run, consistency) {
                (Some(run), None) => prove_inclusion(&reader, &run_id(run)?, *json),
                (None, Some(old)) => prove_consistency(&reader, *old, *json),
                _ => Err(Failure::Usage("give a RUN, or --consistency OLD_SIZE".into())),
            }
        }
        Command::Cost { run, since, until, verify_signatures, json } => {
            let window = TimeWindow {
                since: since.as_deref().map(|t| instant("--since", t)).transpose()?,
                until: until.as_deref().map(|t| instant("--until", t)).transpose()?,
            };
            cost(&reader(cli)?.signatures(*verify_signatures), run.as_deref().map(run_id).transpose()?, window, *json)
        }
        Command::Diff { a, b, json } => crate::diff::diff(cli, a, b, *json),
        Command::Fork { run, at, key } => {
            let plane = plane(cli, false)?;
            let runtime = plane.runtime()?;
            let source = run_id(run)?;
            let key = key.clone().unwrap_or_else(|| format!("fork-of-{source}-at-{at}"));
            let plan = plane
                .read(&source)?
                .records
                .iter()
                .find_map(|r| match &r.record.body {
                    journal_core::RecordBody::PlanFrozen(frozen) => Some(frozen.steps.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            let request =
                journal_core::AdmitRequest { idempotency_key: key, plan, budget: journal_core::Budget::default() };
            match runtime.fork(&plane.tenant, &source, *at, request)? {
                journal_core::Admission::New(handle) => outln!("{}", handle.run()),
                journal_core::Admission::Existing { run, status } => {
                    return Err(Failure::Usage(format!("that fork exists already: run {run} ({status})")));
                }
            }
            Ok(())
        }
        Command::Export { run, output } => export(&plane(cli, false)?, &run_id(run)?, output),
        Command::VerifyExport { file, log_key, record_key, require_signature, witness_keys, quorum, json } => {
            verify_export(file, log_key, record_key, *require_signature, witness_keys, *quorum, *json)
        }
        Command::Repair => {
            if postgres_url(&cli.store).is_some() {
                return Err(Failure::Usage("a PostgreSQL store needs no repair: the server recovers itself".into()));
            }
            if !cli.store.is_file() {
                return Err(no_store(&cli.store));
            }
            drop(RedbStore::open(&cli.store).map_err(|err| Failure::Io(err.to_string()))?);
            eprintln!("{} opens cleanly", cli.store.display());
            Ok(())
        }
        Command::Compact => {
            if postgres_url(&cli.store).is_some() {
                return Err(Failure::Usage(
                    "a PostgreSQL store is compacted by the server (VACUUM); this command is for redb files".into(),
                ));
            }
            if !cli.store.is_file() {
                return Err(no_store(&cli.store));
            }
            let (before, after) = RedbStore::compact(&cli.store).map_err(|err| Failure::Io(err.to_string()))?;
            outln!("{}: {before} bytes before, {after} after", cli.store.display());
            Ok(())
        }
    }
}

fn keygen(cli: &Settings, origin: &str) -> Result<(), Failure> {
    // A store that holds runs was signed by keys already: minting new ones
    // would mix two planes in one file.
    if cli.store.is_file() {
        let store = open_existing(&cli.store)?;
        if !store.tenants()?.is_empty() {
            return Err(Failure::Usage(format!(
                "{} already holds runs: its keys exist (use the plane's key file); an auditor needs no key file \
                 (`agentplane audit` with the public keys `agentplane keys` prints on the plane)",
                cli.store.display()
            )));
        }
    }
    let origin = Origin::new(origin).map_err(|err| Failure::Usage(format!("--origin: {err}")))?;
    let keys = PlaneKeys::generate(&[origin])?;
    keys.write(&cli.keys)?;
    eprintln!("wrote {}; the record key id is {}", cli.keys.display(), keys.record.key_id());
    for origin in keys.origins() {
        outln!("{}", keys.log_for(&origin)?.verifier_key());
    }
    Ok(())
}

fn keys(cli: &Settings, witness_config: bool, print: Option<crate::KeyPart>, json: bool) -> Result<(), Failure> {
    let keys = PlaneKeys::read(&cli.keys)?;
    if witness_config {
        for origin in keys.origins() {
            outln!(
                "[[log]]\norigin = {:?}\nkeys = [{:?}]\n",
                origin.as_str(),
                keys.log_for(&origin)?.verifier_key().to_string()
            );
        }
        return Ok(());
    }
    let origin = cli.origin(Some(&keys))?;
    let vkey = keys.log_for(&origin)?.verifier_key().to_string();
    let record_key = keys.record_key_spec();
    match print {
        Some(crate::KeyPart::LogKey) => {
            outln!("{vkey}");
            return Ok(());
        }
        Some(crate::KeyPart::RecordKey) => {
            outln!("{record_key}");
            return Ok(());
        }
        Some(crate::KeyPart::Origin) => {
            outln!("{origin}");
            return Ok(());
        }
        None => {}
    }
    if json {
        return print_json(
            &json!({ "tenant": cli.tenant, "origin": origin.as_str(), "log_key": vkey, "record_key": record_key }),
        );
    }
    outln!("tenant      {}", cli.tenant);
    outln!("origin      {origin}");
    outln!("log key     {vkey}");
    outln!("record key  {record_key}");
    outln!();
    outln!("an auditor runs:");
    outln!(
        "  agentplane --store {} --tenant {} --origin '{origin}' audit --log-key '{vkey}' --record-key '{record_key}' --checkpoint SAVED.note",
        cli.store.display(),
        cli.tenant,
    );
    Ok(())
}

/// Only parses a note's checkpoint: no key is trusted, so opening always
/// fails verification, which is all the caller needs to fall back to parsing.
struct NoKeyCheck;

impl witness::NoteVerifier for NoKeyCheck {
    fn name(&self) -> &str {
        ""
    }
    fn key_id(&self) -> u32 {
        0
    }
    fn verify(&self, _: &[u8], _: &[u8]) -> bool {
        false
    }
}

fn instant(flag: &str, text: &str) -> Result<At, Failure> {
    At::parse_lenient(text)
        .map_err(|err| Failure::Usage(format!("{flag}: {err} (give 2026-11-01 or 2026-11-01T09:00:00Z)")))
}

/// The current log head signed now (R-NOTE-2), never a rollback.
pub fn checkpoint(plane: &Plane) -> Result<witness::SignedCheckpoint, Failure> {
    let (_, signed) = sign_current_head(plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.log)?;
    Ok(signed)
}

/// One row per run, every figure read through chain verification; a run
/// whose chain does not verify is listed with its problem and no figures.
pub fn run_rows(
    store: &dyn Store,
    tenant: &TenantId,
    outcome: Option<Outcome>,
    read: &dyn Fn(&RunId) -> Result<VerifiedRun, Failure>,
) -> Result<Vec<serde_json::Value>, Failure> {
    let mut out = Vec::new();
    for run in store.runs(tenant, outcome)? {
        match read(&run) {
            Ok(verified) => {
                let cost = cost_in(&verified, TimeWindow::ALL);
                out.push(json!({
                    "run": run.as_str(),
                    "verified": true,
                    "outcome": verified.last_conclusion().map(|c| c.outcome.as_str()),
                    "records": verified.records.len(),
                    "sealed": verified.seal.is_some(),
                    "position": verified.seal.as_ref().map(|s| s.position),
                    "tokens": cost.tokens,
                }));
            }
            Err(Failure::Io(message)) => return Err(Failure::Io(message)),
            Err(problem) => out.push(json!({
                "run": run.as_str(),
                "verified": false,
                "problem": problem.message(),
            })),
        }
    }
    Ok(out)
}

pub fn print_runs_table(rows: &[serde_json::Value]) {
    outln!("{:<30} {:<12} {:>7} {:>7} {:>8}", "RUN", "OUTCOME", "RECORDS", "SEALED", "TOKENS");
    for row in rows {
        if row["verified"] == false {
            outln!(
                "{:<30} UNVERIFIED: {}",
                row["run"].as_str().unwrap_or_default(),
                row["problem"].as_str().unwrap_or_default()
            );
            continue;
        }
        let sealed = row["position"].as_u64().map_or_else(|| "-".to_owned(), |p| format!("#{p}"));
        outln!(
            "{:<30} {:<12} {:>7} {:>7} {:>8}",
            row["run"].as_str().unwrap_or_default(),
            row["outcome"].as_str().unwrap_or("running"),
            row["records"].as_u64().unwrap_or(0),
            sealed,
            row["tokens"].as_u64().unwrap_or(0)
        );
    }
}

fn show(reader: &Reader, run: &RunId, json: bool) -> Result<(), Failure> {
    let verified = reader.read(run)?;
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
    let outcome = verified.last_conclusion().map(|c| c.outcome.as_str());
    let signatures = if reader.verifier.is_some() { "checked" } else { "not checked (no key file)" };
    let forked = verified.records.iter().find_map(|r| match &r.record.body {
        journal_core::RecordBody::RunForked(forked) => Some(forked.clone()),
        _ => None,
    });
    if json {
        let forked_from =
            forked.as_ref().map(|f| json!({ "run": f.source_run, "at_seq": f.at_seq, "hash": f.source_hash }));
        return print_json(&json!({
            "run": run.as_str(),
            "outcome": outcome,
            "signatures": signatures,
            "forked_from": forked_from,
            "records": records,
        }));
    }
    outln!("run {run} ({}); signatures {signatures}", outcome.unwrap_or("running"));
    if let Some(forked) = &forked {
        outln!(
            "forked from run {} after seq {} (record hash {})",
            forked.source_run,
            forked.at_seq,
            forked.source_hash
        );
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
    for r in &records {
        let short = |key: &str| r[key].as_str().map(|h| format!("{}…", &h[..h.len().min(10)])).unwrap_or_default();
        outln!(
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

fn warn_if_walked(source: journal_core::LogSource) {
    if source.has_holes() {
        eprintln!("warning: the log's positions have holes (a sealed run was removed); this proof is from the walk");
    }
}

fn prove_inclusion(reader: &Reader, run: &RunId, json: bool) -> Result<(), Failure> {
    let inclusion = reader.log()?.inclusion(run)?;
    let proof: Vec<String> = inclusion.proof.path().iter().map(|h| b64(h.as_bytes())).collect();
    if json {
        return print_json(&json!({
            "run": run.as_str(),
            "index": inclusion.index,
            "size": inclusion.tree.size,
            "root": b64(inclusion.tree.root.as_bytes()),
            "leaf_hash": b64(inclusion.leaf.as_bytes()),
            "proof": proof,
            "from_walk_with_holes": inclusion.source.has_holes(),
        }));
    }
    warn_if_walked(inclusion.source);
    outln!("run {run} is leaf {} of {}", inclusion.index, inclusion.tree.size);
    outln!("root      {}", b64(inclusion.tree.root.as_bytes()));
    outln!("leaf hash {}", b64(inclusion.leaf.as_bytes()));
    for hash in proof {
        outln!("proof     {hash}");
    }
    Ok(())
}

fn prove_consistency(reader: &Reader, old: u64, json: bool) -> Result<(), Failure> {
    let log = reader.log()?;
    let consistency = log.consistency(old, log.size())?;
    let hashes: Vec<String> = consistency.proof.path().iter().map(|h| b64(h.as_bytes())).collect();
    if json {
        return print_json(&json!({
            "old_size": old,
            "old_root": b64(consistency.old.root.as_bytes()),
            "size": consistency.new.size,
            "root": b64(consistency.new.root.as_bytes()),
            "proof": hashes,
            "from_walk_with_holes": consistency.source.has_holes(),
        }));
    }
    warn_if_walked(consistency.source);
    outln!("size {old} -> {}", consistency.new.size);
    for hash in hashes {
        outln!("proof {hash}");
    }
    Ok(())
}

fn cost(reader: &Reader, run: Option<RunId>, window: TimeWindow, json: bool) -> Result<(), Failure> {
    let runs = match &run {
        Some(run) => vec![run.clone()],
        None => reader.store.runs(&reader.tenant, None)?,
    };
    let mut counters = Counters::default();
    for run in &runs {
        // A figure read from bytes nobody verified is not reported: the run's problem is.
        counters.add(&cost_in(&reader.read(run)?, window));
    }
    let mut scope = run.as_ref().map_or_else(|| format!("tenant {}", reader.tenant), |r| format!("run {r}"));
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
            "runs": runs.len(),
            "tokens": counters.tokens,
            "cost_micros": counters.cost_micros,
            "steps": counters.steps,
            "effects": counters.effects,
            "wall_millis": counters.wall_millis,
        }));
    }
    outln!(
        "{scope}: {} tokens, {} cost micros, {} steps, {} effects, {} ms",
        counters.tokens,
        counters.cost_micros,
        counters.steps,
        counters.effects,
        counters.wall_millis
    );
    Ok(())
}

fn export(plane: &Plane, run: &RunId, output: &Path) -> Result<(), Failure> {
    let verified = plane.read(run)?;
    if verified.seal.is_none() {
        return Err(Failure::Usage(format!("run {run} is not sealed; only sealed runs export")));
    }
    let (view, signed) = sign_current_head(plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.log)?;
    let inclusion = view.inclusion(run)?;
    // The latest checkpoint a witness quorum cosigned that covers the run, with
    // the run's inclusion in it, so a reader can check the witnesses offline.
    let cosigned = plane
        .store
        .cosigned_checkpoints(&plane.tenant)?
        .into_iter()
        .rev()
        .find(|cosigned| cosigned.tree.size > inclusion.index && cosigned.tree.size <= view.size())
        .map(|cosigned| -> Result<journal_core::export::CosignedInclusion, Failure> {
            let proof = tlog::prove_inclusion(&view, inclusion.index, cosigned.tree.size)
                .map_err(|err| Failure::Io(format!("proving the run in the cosigned checkpoint: {err}")))?;
            cosigned
                .tree
                .verify_inclusion(&inclusion.leaf, inclusion.index, &proof)
                .map_err(|err| Failure::Findings(format!("the cosigned checkpoint does not hold the run: {err}")))?;
            Ok(journal_core::export::CosignedInclusion { note: cosigned.note, index: inclusion.index, proof })
        })
        .transpose()?;
    let text = journal_core::export::write_export(
        &plane.tenant,
        &plane.origin,
        run,
        &verified,
        &inclusion,
        &signed,
        cosigned.as_ref(),
    )?;
    if cosigned.is_none() {
        eprintln!("note: no witness quorum has cosigned a checkpoint holding this run yet (`agentplane sweep`)");
    }
    std::fs::write(output, text).map_err(|err| Failure::Io(format!("writing {}: {err}", output.display())))?;
    eprintln!("exported run {run} ({} records) to {}", verified.records.len(), output.display());
    Ok(())
}

/// Parses `KEY_ID=BASE64_PUBLIC_KEY`.
pub fn record_key(spec: &str) -> Result<(String, [u8; 32]), Failure> {
    let (key_id, public) =
        spec.split_once('=').ok_or_else(|| Failure::Usage(format!("--record-key {spec:?}: expected KEY_ID=BASE64")))?;
    let public = STANDARD.decode(public).ok().and_then(|b| <[u8; 32]>::try_from(b).ok());
    let public = public.ok_or_else(|| Failure::Usage(format!("--record-key {spec:?}: not a base64 32-byte key")))?;
    Ok((key_id.to_owned(), public))
}

fn verify_export(
    file: &Path,
    log_key: &str,
    record_keys: &[String],
    require_signature: bool,
    witness_keys: &[String],
    quorum: Option<usize>,
    json: bool,
) -> Result<(), Failure> {
    let log_key = witness::VerifierKey::parse(log_key).map_err(|err| Failure::Usage(format!("--log-key: {err}")))?;
    let mut verifier = Ed25519Verifier::new();
    for spec in record_keys {
        let (key_id, public) = record_key(spec)?;
        verifier.trust(&key_id, public).map_err(Failure::Usage)?;
    }
    let text = std::fs::read(file).map_err(|err| Failure::Io(format!("reading {}: {err}", file.display())))?;
    let text =
        String::from_utf8(text).map_err(|_| Failure::Findings(format!("{} is not UTF-8 text", file.display())))?;
    let upcasters = reader_upcasters();
    let check =
        ChainCheck { upcasters: &upcasters, verifier: Some(&verifier), options: VerifyOptions { require_signature } };
    let trusted = witness_keys
        .iter()
        .map(|key| witness::TrustedWitness::parse(key).map_err(|err| Failure::Usage(format!("--witness-key: {err}"))))
        .collect::<Result<Vec<_>, _>>()?;
    if quorum.is_some() && trusted.is_empty() {
        return Err(Failure::Usage("--quorum needs at least one --witness-key".into()));
    }
    let result = journal_core::export::verify_export(&text, &[log_key], check).and_then(|verified| {
        let cosignatures = match quorum.or((!trusted.is_empty()).then_some(1)) {
            Some(quorum) => Some(verified.cosignatures(&trusted, quorum)?),
            None => None,
        };
        Ok((verified, cosignatures))
    });
    let record_check = if record_keys.is_empty() {
        "not checked (no --record-key)".to_owned()
    } else if require_signature {
        "every record signed by a trusted key".to_owned()
    } else {
        "signatures by trusted keys verified; unsigned records accepted".to_owned()
    };
    match result {
        Ok((verified, cosignatures)) => {
            let witness_check = cosignatures.map_or_else(
                || "not checked (no --witness-key)".to_owned(),
                |count| format!("{count} trusted witnesses cosigned a checkpoint holding the run"),
            );
            if json {
                print_json(&json!({
                    "valid": true,
                    "origin": verified.origin.as_str(),
                    "run": verified.run.as_str(),
                    "records": verified.records,
                    "index": verified.index,
                    "size": verified.tree.size,
                    "outcome": verified.outcome.map(|o| o.as_str()),
                    "record_signatures": record_check,
                    "cosignatures": cosignatures,
                    "cosigned_size": verified.cosigned.as_ref().map(|c| c.tree.size),
                }))?;
            } else {
                outln!(
                    "valid: run {} ({} records, {}) is leaf {} of {} in {}",
                    verified.run,
                    verified.records,
                    verified.outcome.map_or("?", |o| o.as_str()),
                    verified.index,
                    verified.tree.size,
                    verified.origin
                );
                outln!("record signatures: {record_check}");
                outln!("witnesses: {witness_check}");
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
