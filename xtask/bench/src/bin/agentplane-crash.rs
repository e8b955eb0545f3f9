//! `agentplane-crash`: the crash campaign `cargo xtask crash` runs.
//!
//! ```text
//! agentplane-crash campaign --kills N --backend redb|postgres [--writers W]
//! agentplane-crash write STORE --writers W --prefix P      (the process the campaign kills)
//! ```
//! The writer drives W runs at once through the Runtime (signed records,
//! an effect each, sealed), signs the log's checkpoint in a thread of its
//! own, and prints what was acknowledged: `sealed RUN`, `checkpoint NOTE`.
//! The campaign SIGKILLs it at a random moment (on PostgreSQL it also stops
//! the server with `pg_ctl stop -m immediate` and starts it again), then
//! reopens the store and holds it to everything printed: every sealed run is
//! there and sealed, and the audit (every chain and signature, the derived
//! data, the log rebuilt and every checkpoint observed as an anchor) is clean.

use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use base64::Engine as _;
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, Ed25519Signer, EffectOutput, EffectResult, Origin, RunId,
    RuntimeBuilder, Signer as _, Store, TenantId,
};
use witness::{ALG_ED25519, LogKey, SignerKey};

const TENANT: &str = "crash";
const ORIGIN: &str = "crash.agentplane.test/plane";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("agentplane-crash: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    match args.first().map(String::as_str) {
        Some("write") => {
            let store = args.get(1).context("write STORE")?;
            let writers = flag("--writers").map_or(Ok(4), |w| w.parse())?;
            let prefix = flag("--prefix").context("--prefix")?;
            write(store, writers, &prefix)
        }
        Some("campaign") => {
            let kills: u64 = flag("--kills").context("--kills N")?.parse()?;
            let writers = flag("--writers").map_or(Ok(4), |w| w.parse())?;
            let backend = flag("--backend").unwrap_or_else(|| "redb".into());
            campaign(kills, writers, &backend)
        }
        _ => bail!("usage: agentplane-crash campaign --kills N --backend redb|postgres [--writers W]"),
    }
}

fn keys() -> Result<(Ed25519Signer, LogKey)> {
    let record = Ed25519Signer::from_seed("spiffe://crash.agentplane.test/runtime", [5; 32]);
    let log = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [6; 32])?)?;
    Ok((record, log))
}

fn open(store: &str) -> Result<Arc<dyn Store>> {
    Ok(if store.starts_with("postgres://") || store.starts_with("postgresql://") {
        Arc::new(store_pg::PgStore::open(store)?)
    } else {
        Arc::new(store_redb::RedbStore::create(Path::new(store))?)
    })
}

/// The process the campaign kills: appenders, seals and checkpoints at once.
fn write(store: &str, writers: usize, prefix: &str) -> Result<()> {
    let store = open(store)?;
    let (record, log) = keys()?;
    let tenant = TenantId::new(TENANT)?;
    let origin = Origin::new(ORIGIN).map_err(|err| anyhow!("{err}"))?;
    let runtime = RuntimeBuilder::new(Arc::clone(&store))
        .signer(Arc::new(record))
        .tenant(tenant.clone(), origin.clone(), None)
        .build()?;
    let out = Mutex::new(std::io::stdout());
    let say = |line: String| -> Result<()> {
        let mut out = out.lock().map_err(|_| anyhow!("stdout lock"))?;
        writeln!(out, "{line}")?;
        out.flush()?;
        Ok(())
    };
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| -> Result<()> {
        let mut workers = Vec::new();
        for _ in 0..writers {
            workers.push(scope.spawn(|| -> Result<()> {
                while !stop.load(Ordering::Relaxed) {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let request = AdmitRequest {
                        idempotency_key: format!("{prefix}-{n}"),
                        plan: vec!["work".into()],
                        budget: Budget::default(),
                    };
                    let Admission::New(mut run) = runtime.admit(&tenant, request)? else {
                        bail!("{prefix}-{n} was admitted before");
                    };
                    let id = run.run().clone();
                    run.start_step("work")?;
                    run.effect("ek:work", "work", || EffectOutput {
                        result: EffectResult::Ok { output: format!("{prefix}-{n}") },
                        charged: Counters { tokens: 3, ..Counters::default() },
                    })?;
                    run.finish_step("work")?;
                    run.succeed("done")?;
                    say(format!("sealed {id}"))?;
                }
                Ok(())
            }));
        }
        let checkpoints = scope.spawn(|| -> Result<()> {
            while !stop.load(Ordering::Relaxed) {
                let (_, signed) = journal_core::log::sign_current_head(store.as_ref(), &tenant, &origin, &log, None)?;
                say(format!("checkpoint {}", base64::engine::general_purpose::STANDARD.encode(signed.note())))?;
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(())
        });
        let mut result = Ok(());
        for worker in workers {
            if let Err(err) = worker.join().map_err(|_| anyhow!("an appender panicked"))? {
                stop.store(true, Ordering::Relaxed);
                result = Err(err);
            }
        }
        stop.store(true, Ordering::Relaxed);
        checkpoints.join().map_err(|_| anyhow!("the checkpoint thread panicked"))??;
        result
    })
}

/// A small generator seeded from the clock (the seed is printed).
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn campaign(kills: u64, writers: usize, backend: &str) -> Result<()> {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos() as u64 | 1;
    let mut random = Random(seed);
    let dir = tempfile::tempdir()?;
    let store_spec = match backend {
        "redb" => dir.path().join("crash.redb").display().to_string(),
        "postgres" => store_pg::testkit::fresh_database(),
        other => bail!("--backend redb or postgres, not {other}"),
    };
    let writer = std::env::current_exe()?;
    let (record, log) = keys()?;
    let tenant = TenantId::new(TENANT)?;
    let origin = Origin::new(ORIGIN).map_err(|err| anyhow!("{err}"))?;
    let mut sealed: Vec<String> = Vec::new();
    let mut checkpoints: Vec<(u64, Vec<u8>)> = Vec::new();
    let started = Instant::now();
    eprintln!("agentplane-crash: {kills} kills on {backend}, {writers} writers, seed {seed}");
    for kill in 0..kills {
        let mut child = Command::new(&writer)
            .args(["write", &store_spec, "--writers", &writers.to_string(), "--prefix", &format!("k{kill}")])
            .stdout(Stdio::piped())
            .spawn()?;
        let lines = 1 + random.below(60);
        let mut reader = BufReader::new(child.stdout.take().context("the writer's stdout")?);
        let mut line = String::new();
        for _ in 0..lines {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                bail!("seed {seed} kill {kill}: the writer stopped by itself: {:?}", child.wait()?);
            }
            match line.split_whitespace().collect::<Vec<_>>().as_slice() {
                ["sealed", run] => sealed.push((*run).to_owned()),
                ["checkpoint", note] => {
                    let note = base64::engine::general_purpose::STANDARD.decode(note)?;
                    let size = witness::SignedCheckpoint::open(&note, &[&log.verifier_key()])
                        .map_err(|err| anyhow!("seed {seed} kill {kill}: a checkpoint the writer printed: {err}"))?
                        .0
                        .checkpoint()
                        .tree()
                        .size;
                    if checkpoints.last().is_none_or(|(last, _)| *last != size) {
                        checkpoints.push((size, note));
                    }
                }
                other => bail!("unexpected writer output {other:?}"),
            }
        }
        child.kill()?;
        child.wait()?;
        if backend == "postgres" {
            store_pg::testkit::crash_server().map_err(|err| anyhow!(err))?;
            store_pg::testkit::start_server().map_err(|err| anyhow!(err))?;
        }
        check(&store_spec, &tenant, &origin, &record, &log, &sealed, &checkpoints)
            .with_context(|| format!("seed {seed}, after kill {kill}"))?;
    }
    let summary = format!(
        "agentplane-crash: {kills} kills on {backend} ({writers} writers, seed {seed}) in {:.0} s: {} sealed runs \
         acknowledged, all present; {} checkpoints observed, the log consistent with each; the audit clean after every kill",
        started.elapsed().as_secs_f64(),
        sealed.len(),
        checkpoints.len()
    );
    println!("{summary}");
    Ok(())
}

fn check(
    store_spec: &str,
    tenant: &TenantId,
    origin: &Origin,
    record: &Ed25519Signer,
    log: &LogKey,
    sealed: &[String],
    checkpoints: &[(u64, Vec<u8>)],
) -> Result<()> {
    let store = open(store_spec).context("reopening the store")?;
    for run in sealed {
        let rows = store.read_run(tenant, &RunId::new(run)?)?;
        if !rows.sealed {
            bail!("run {run} was acknowledged sealed and is not");
        }
    }
    let mut inputs = audit::AuditInputs::new(tenant.clone(), origin.clone());
    inputs.require_signature = true;
    inputs.record_keys = vec![audit::RecordKey { key_id: record.key_id().to_owned(), public_key: record.public_key() }];
    inputs.log_keys = vec![log.verifier_key()];
    // Every checkpoint observed: the log must extend each (a consistency proof).
    for (size, note) in checkpoints {
        inputs.anchors.push(audit::Anchor::saved(
            &format!("checkpoint at size {size}"),
            note,
            &inputs.log_keys,
            origin,
        )?);
    }
    let report = audit::audit(store.as_ref(), &inputs)?;
    if !report.findings.is_empty() {
        bail!("the audit found: {:?}", report.findings);
    }
    Ok(())
}
