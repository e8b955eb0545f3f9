//! Durable appends: the Runtime (signed) and bare `Journal::append`
//! (unsigned), with 1, 8 and 64 concurrent runs, against the same backend's
//! raw writes of the same bytes in transactions of the same size.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use journal_core::record::StepMark;
use journal_core::{
    Admission, AdmitRequest, Budget, Ed25519Signer, Journal, Origin, RecordBody, RunId, RuntimeBuilder, Store, TenantId,
};

use crate::measure::{Figure, Unit, alternate, alternate_three, each_in_a_thread};

/// Which backend a figure runs on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Redb,
    Postgres,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Self::Redb => "redb",
            Self::Postgres => "PostgreSQL",
        }
    }
}

/// Where a fresh store lives: kept as long as the store is used.
pub enum Location {
    /// The directory of `journal.redb`, removed on drop.
    Dir(tempfile::TempDir),
    /// The URL of its PostgreSQL database.
    Url(String),
}

impl Location {
    /// The store opened for reading only, as `agentplane audit` and the
    /// other read commands open it (on redb with their smaller page cache).
    pub fn open_read_only(&self) -> Result<Arc<dyn Store>> {
        Ok(match self {
            Self::Dir(dir) => Arc::new(store_redb::RedbStore::open_read_only(&dir.path().join("journal.redb"))?),
            Self::Url(url) => Arc::new(store_pg::PgStore::open_read_only(url)?),
        })
    }
}

/// A fresh, empty store and where it lives.
pub fn fresh_store(backend: Backend) -> Result<(Arc<dyn Store>, Location)> {
    Ok(match backend {
        Backend::Redb => {
            let dir = tempfile::tempdir()?;
            let store = store_redb::RedbStore::create(&dir.path().join("journal.redb"))?;
            (Arc::new(store), Location::Dir(dir))
        }
        Backend::Postgres => {
            let url = store_pg::testkit::fresh_database();
            (Arc::new(store_pg::PgStore::open(&url)?), Location::Url(url))
        }
    })
}

pub fn tenant() -> Result<(TenantId, Origin)> {
    Ok((TenantId::new("bench")?, Origin::new("bench.agentplane.test/plane").map_err(|err| anyhow!("{err}"))?))
}

pub fn record_signer() -> Ed25519Signer {
    Ed25519Signer::from_seed("spiffe://bench.agentplane.test/runtime", [7u8; 32])
}

/// Every record of every run, as stored (the bytes a raw baseline writes).
pub fn stored_bytes(store: &dyn Store, tenant: &TenantId) -> Result<Vec<Vec<Vec<u8>>>> {
    let mut runs = Vec::new();
    for run in store.runs(tenant, None)? {
        runs.push(store.read_run(tenant, &run)?.rows.into_iter().map(|row| row.bytes).collect());
    }
    Ok(runs)
}

/// `concurrency` runs driven through the Runtime at once, each admitted,
/// `steps` steps started and finished, then sealed: records per second.
/// The Runtime workload: a run admitted under `key`, `steps` steps started
/// and finished, then succeeded (two records a step, four more around them).
pub fn run_of_steps(runtime: &journal_core::Runtime, tenant: &TenantId, key: &str, steps: usize) -> Result<()> {
    let request =
        AdmitRequest { idempotency_key: key.to_owned(), plan: vec!["work".into()], budget: Budget::default() };
    let Admission::New(mut run) = runtime.admit(tenant, request)? else {
        return Err(anyhow!("a fresh store already held {key}"));
    };
    for step in 0..steps {
        let name = format!("step {step}");
        run.start_step(&name)?;
        run.finish_step(&name)?;
    }
    run.succeed("done")?;
    Ok(())
}

fn runtime_round(backend: Backend, concurrency: usize, steps: usize) -> Result<(f64, Vec<Vec<Vec<u8>>>)> {
    let (store, _dir) = fresh_store(backend)?;
    let (tenant, origin) = tenant()?;
    let runtime = RuntimeBuilder::new(Arc::clone(&store))
        .signer(Arc::new(record_signer()))
        .tenant(tenant.clone(), origin, None)
        .build()?;
    let start = Instant::now();
    each_in_a_thread(0..concurrency, |n| run_of_steps(&runtime, &tenant, &format!("bench-{n}"), steps))?;
    let elapsed = start.elapsed().as_secs_f64();
    let bytes = stored_bytes(store.as_ref(), &tenant)?;
    let records: usize = bytes.iter().map(Vec::len).sum();
    Ok((records as f64 / elapsed, bytes))
}

/// `concurrency` runs of `records` unsigned `StepStarted` records each,
/// appended with bare `Journal::append`.
fn journal_round(backend: Backend, concurrency: usize, records: usize) -> Result<(f64, Vec<Vec<Vec<u8>>>)> {
    let (store, _dir) = fresh_store(backend)?;
    let (tenant, origin) = tenant()?;
    let start = Instant::now();
    each_in_a_thread(0..concurrency, |n| {
        let journal = Journal::new(store.as_ref(), &tenant, &origin);
        let run = RunId::new(&format!("run-{n}"))?;
        let mut head = None;
        for i in 0..records {
            let body = RecordBody::StepStarted(StepMark { step: format!("step {i}") });
            head = Some(journal.append(&run, head, None, body)?.head);
        }
        Ok(())
    })?;
    let elapsed = start.elapsed().as_secs_f64();
    let bytes = stored_bytes(store.as_ref(), &tenant)?;
    let count: usize = bytes.iter().map(Vec::len).sum();
    Ok((count as f64 / elapsed, bytes))
}

const RAW: redb::TableDefinition<(&str, u64), &[u8]> = redb::TableDefinition::new("raw");

/// How the raw redb baseline opens its file: alone, redb's fastest mode
/// and the bar's baseline, or shared as every agentplane handle opens it
/// (`store_redb::CONCURRENCY`, issue 23): the engine's own rate in the
/// mode a plane must use, shown beside the first. `AloneTwoPhase` is alone
/// but committing in two phases, as redb makes every commit of a file other
/// processes may open (4.6, `WriteTransaction::commit`: a one-phase commit
/// publishes its slot before the pages it names are flushed, which another
/// process would follow): two flushes a commit where the bar's baseline
/// makes one, the price of sharing the file apart from its locks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RawRedb {
    Alone,
    AloneTwoPhase,
    Shared,
}

/// Transaction `j` holds record `j` of every run: as many records per
/// transaction as runs append at once, the best group commit can do.
fn raw_round(backend: Backend, runs: &[Vec<Vec<u8>>], opened: RawRedb) -> Result<f64> {
    let depth = runs.iter().map(Vec::len).max().unwrap_or(0);
    let records: usize = runs.iter().map(Vec::len).sum();
    let names: Vec<String> = (0..runs.len()).map(|n| format!("run-{n}")).collect();
    match backend {
        Backend::Redb => {
            let dir = tempfile::tempdir()?;
            let mut builder = redb::Builder::new();
            if opened == RawRedb::Shared {
                builder.set_concurrency_mode(store_redb::CONCURRENCY);
            }
            let db = builder.create(dir.path().join("raw.redb"))?;
            let start = Instant::now();
            for seq in 0..depth {
                let mut txn = db.begin_write()?;
                txn.set_two_phase_commit(opened == RawRedb::AloneTwoPhase);
                {
                    let mut table = txn.open_table(RAW)?;
                    for (name, run) in names.iter().zip(runs) {
                        if let Some(bytes) = run.get(seq) {
                            table.insert((name.as_str(), seq as u64), bytes.as_slice())?;
                        }
                    }
                }
                txn.commit()?;
            }
            Ok(records as f64 / start.elapsed().as_secs_f64())
        }
        Backend::Postgres => {
            let url = store_pg::testkit::fresh_database();
            let mut client = postgres::Client::connect(&url, postgres::NoTls)?;
            client.batch_execute("CREATE TABLE raw (run text, seq bigint, bytes bytea, PRIMARY KEY (run, seq))")?;
            let insert = client.prepare("INSERT INTO raw (run, seq, bytes) VALUES ($1, $2, $3)")?;
            let start = Instant::now();
            for seq in 0..depth {
                let mut txn = client.transaction()?;
                for (name, run) in names.iter().zip(runs) {
                    if let Some(bytes) = run.get(seq) {
                        txn.execute(&insert, &[name, &(seq as i64), bytes])?;
                    }
                }
                txn.commit()?;
            }
            Ok(records as f64 / start.elapsed().as_secs_f64())
        }
    }
}

/// Steps per run: enough records per round to time, fewer with more runs.
fn steps_for(concurrency: usize, quick: bool) -> usize {
    match (quick, concurrency) {
        (true, _) => 2,
        (false, 1) => 200,
        (false, 8) => 60,
        _ => 40,
    }
}

pub fn figures(backend: Backend, rounds: usize, quick: bool) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    for (signed, what) in [(true, "Runtime, signed"), (false, "bare Journal::append, unsigned")] {
        for concurrency in [1usize, 8, 64] {
            let steps = steps_for(concurrency, quick);
            let round = |concurrency| {
                if signed {
                    runtime_round(backend, concurrency, steps)
                } else {
                    journal_round(backend, concurrency, 2 * steps + 2)
                }
            };
            // One round first: the bytes the raw side writes are ours.
            let (_, bytes) = round(concurrency).context("the first round")?;
            let ours_round = || Ok(round(concurrency)?.0);
            let raw_alone = || raw_round(backend, &bytes, RawRedb::Alone);
            let (ours, raw, raw_shared) = match backend {
                Backend::Redb => {
                    let raw_shared = || raw_round(backend, &bytes, RawRedb::Shared);
                    let (ours, raw, shared) = alternate_three(rounds, ours_round, raw_alone, raw_shared)?;
                    (ours, raw, Some(shared))
                }
                Backend::Postgres => {
                    let (ours, raw) = alternate(rounds, ours_round, raw_alone)?;
                    (ours, raw, None)
                }
            };
            // Issue 25's goals, both for the signed Runtime: redb at 0.8 (1,
            // 8 and 64 runs), PostgreSQL at 0.5 (8 and 64 runs).
            let bar = match backend {
                Backend::Redb => signed.then_some(0.8),
                Backend::Postgres => (signed && concurrency != 1).then_some(0.5),
            };
            let name = format!("durable append on {}, {what}, {concurrency} concurrent runs", backend.name());
            out.push(Figure {
                name: name.clone(),
                ours,
                baseline_name: format!("raw {}, same bytes, same-size transactions", backend.name()),
                baseline: raw,
                unit: Unit::PerSecond("records"),
                bar,
                rounds,
            });
            if backend == Backend::Redb && signed {
                // What the file's sharing alone costs raw redb: the ceiling
                // of the bar's ratio for any plane other processes may read.
                let two_phase = || raw_round(backend, &bytes, RawRedb::AloneTwoPhase);
                let (two_phase, one_phase) = alternate(rounds, two_phase, raw_alone)?;
                out.push(Figure {
                    name: format!(
                        "raw redb alone committing in two phases (as redb commits any file it shares), {concurrency} concurrent runs' transactions"
                    ),
                    ours: two_phase,
                    baseline_name: "raw redb alone, one-phase commits (the bar's baseline)".into(),
                    baseline: one_phase,
                    unit: Unit::PerSecond("records"),
                    bar: None,
                    rounds,
                });
            }
            if let Some(raw_shared) = raw_shared {
                out.push(Figure {
                    name: format!("{name}, against raw redb sharing its file as the plane does"),
                    ours,
                    baseline_name: "raw redb opened shared (MultiWriter), same bytes, same-size transactions".into(),
                    baseline: raw_shared,
                    unit: Unit::PerSecond("records"),
                    bar: None,
                    rounds,
                });
            }
        }
    }
    Ok(out)
}
