//! A plane of 1,000,000 records against one of 10,000 (issue 25), side by
//! side in one run: the append rate, what a user asks of one run (`show`,
//! `prove`, `export`, a page of `runs`), `checkpoint` after the same number
//! of runs moved, and the audit. Appends and reads alternate between the two
//! planes, so the machine's mood falls on both alike; each figure is the large
//! plane against the small one, so "flat" reads as a ratio near 1.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, anyhow, bail};
use journal_core::{
    ChainCheck, Ed25519Signer, Ed25519Verifier, Journal, LogView, Origin, RunId, Runtime, Signer as _, Store, TenantId,
    Upcasters, VerifyOptions,
};
use witness::{ALG_ED25519, LogKey, SignerKey};

use crate::append::{Backend, Location, fresh_store, record_signer, tenant};
use crate::audit_figures::{audit_inputs, fill_with, postgres_bytes, signed_runtime};
use crate::measure::{Figure, Unit, median};

/// Records a bench run holds (admitted, a step of three effects, succeeded).
const RECORDS_PER_RUN: usize = 14;
/// One run in this many stays open: `prove` then proves its head.
const OPEN_EVERY: usize = 50;
/// A checkpoint is signed after this many runs (10,000 records) while a
/// plane fills, as a plane's `sweep` or `checkpoint` does as it goes: a
/// heads leaf holds the runs moved since the one before, and proving an
/// open run's head costs O(log n + the entries of its leaf).
const SIGN_EVERY: usize = 715;

/// One plane and what the figures ask of it.
struct Plane {
    store: Arc<dyn Store>,
    location: Location,
    runtime: Runtime,
    tenant: TenantId,
    origin: Origin,
    signer: Ed25519Signer,
    /// How many runs it holds (the next run's number).
    runs: usize,
    sealed: Vec<RunId>,
    open: Vec<RunId>,
}

impl Plane {
    fn new(backend: Backend, runs: usize) -> Result<Self> {
        let (store, location) = fresh_store(backend)?;
        let (tenant, origin) = tenant()?;
        let signer = record_signer();
        let runtime = signed_runtime(&store, &tenant, &origin, &signer)?;
        let mut plane =
            Self { store, location, runtime, tenant, origin, signer, runs: 0, sealed: Vec::new(), open: Vec::new() };
        while plane.runs < runs {
            plane.grow(SIGN_EVERY.min(runs - plane.runs))?;
            plane.sign()?;
        }
        let ids = plane.store.runs(&plane.tenant, None)?;
        let sealed = plane.store.runs(&plane.tenant, Some(journal_core::Outcome::Succeeded))?;
        let sealed_set: std::collections::BTreeSet<&RunId> = sealed.iter().collect();
        plane.open = ids.iter().filter(|run| !sealed_set.contains(run)).cloned().collect();
        plane.sealed = sealed;
        if plane.open.is_empty() || plane.sealed.is_empty() {
            bail!("the plane of {runs} runs has {} open and {} sealed", plane.open.len(), plane.sealed.len());
        }
        Ok(plane)
    }

    /// Appends `runs` more runs; their records per second.
    fn grow(&mut self, runs: usize) -> Result<f64> {
        let start = Instant::now();
        fill_with(&self.runtime, &self.tenant, self.runs..self.runs + runs, Some(OPEN_EVERY))?;
        let elapsed = start.elapsed().as_secs_f64().max(1e-9);
        let before = self.records();
        self.runs += runs;
        Ok((self.records() - before) as f64 / elapsed)
    }

    fn log_key(&self) -> Result<LogKey> {
        let skey = SignerKey::from_seed(self.origin.as_str(), ALG_ED25519, [3; 32]).map_err(|err| anyhow!("{err}"))?;
        LogKey::new(skey).map_err(|err| anyhow!("{err}"))
    }

    /// Signs a checkpoint (heads leaf first), as `agentplane checkpoint`
    /// does; its nanoseconds.
    fn sign(&self) -> Result<f64> {
        let key = self.log_key()?;
        let start = Instant::now();
        journal_core::log::sign_current_head(self.store.as_ref(), &self.tenant, &self.origin, &key, None)?;
        Ok(start.elapsed().as_nanos() as f64)
    }

    fn verifier(&self) -> Result<Ed25519Verifier> {
        let mut verifier = Ed25519Verifier::new();
        verifier.trust(self.signer.key_id(), self.signer.public_key()).map_err(|err| anyhow!("{err}"))?;
        Ok(verifier)
    }

    /// What a read command asks, by name, of the `n`-th run it picks.
    fn read(&self, what: Read, n: usize) -> Result<()> {
        let upcasters = Upcasters::builtin();
        let verifier = self.verifier()?;
        let check = ChainCheck {
            upcasters: &upcasters,
            verifier: Some(&verifier),
            options: VerifyOptions { require_signature: true },
        };
        let pick = |runs: &[RunId]| runs.get(spread(n, runs.len())).cloned().ok_or_else(|| anyhow!("no run to pick"));
        match what {
            Read::Show => {
                let run = pick(&self.sealed)?;
                std::hint::black_box(Journal::new(self.store.as_ref(), &self.tenant, &self.origin).read(&run, check)?);
            }
            Read::ProveSealed => {
                let run = pick(&self.sealed)?;
                let view = LogView::open(self.store.as_ref(), &self.tenant)?;
                std::hint::black_box(view.inclusion(&run)?);
            }
            Read::ProveOpen => {
                let run = pick(&self.open)?;
                let view = LogView::open(self.store.as_ref(), &self.tenant)?;
                std::hint::black_box(view.head_inclusion(&run)?);
            }
            Read::Export => {
                let run = pick(&self.sealed)?;
                let key = self.log_key()?;
                std::hint::black_box(journal_core::export::export_run(
                    self.store.as_ref(),
                    &self.tenant,
                    &self.origin,
                    &key,
                    &run,
                    check,
                    None,
                )?);
            }
            Read::RunsPage => {
                let page = self.store.admissions(&self.tenant, None, None, RUNS_PAGE)?;
                let journal = Journal::new(self.store.as_ref(), &self.tenant, &self.origin);
                for admitted in &page {
                    std::hint::black_box(journal.read(&admitted.run, check)?);
                }
            }
        }
        Ok(())
    }

    fn audit_rate(&self) -> Result<f64> {
        let inputs = audit_inputs(&self.tenant, &self.origin, &self.signer);
        let start = Instant::now();
        let report = audit::audit(self.store.as_ref(), &inputs)?;
        let elapsed = start.elapsed().as_secs_f64().max(1e-9);
        if !report.findings.is_empty() || report.checked.records != self.records() as u64 {
            bail!(
                "the audit of the scale plane found {} findings in {} records (of {})",
                report.findings.len(),
                report.checked.records,
                self.records()
            );
        }
        Ok(report.checked.records as f64 / elapsed)
    }

    fn bytes_on_disk(&self) -> Result<u64> {
        Ok(match &self.location {
            Location::Dir(dir) => std::fs::metadata(dir.path().join("journal.redb"))?.len(),
            Location::Url(url) => postgres_bytes(url)?,
        })
    }

    /// Its records: every run's, less the conclusion an open run lacks.
    fn records(&self) -> usize {
        self.runs * RECORDS_PER_RUN - self.runs.div_ceil(OPEN_EVERY)
    }
}

/// The runs a `runs` page lists (the console's page).
const RUNS_PAGE: usize = 50;

#[derive(Debug, Clone, Copy)]
enum Read {
    Show,
    ProveSealed,
    ProveOpen,
    Export,
    RunsPage,
}

impl Read {
    fn name(self) -> &'static str {
        match self {
            Read::Show => "`show` (a sealed run read and verified, signatures too)",
            Read::ProveSealed => "`prove` of a sealed run (its inclusion proof)",
            Read::ProveOpen => "`prove` of an open run (its head's proofs)",
            Read::Export => "`export` of a sealed run (signs, proves, writes)",
            Read::RunsPage => "a page of `runs` (the newest 50, each verified)",
        }
    }
}

/// The `n`-th pick among `len`, spread over all of them (a stride prime to
/// any plane size here), so the large plane's reads are not all cache hits.
fn spread(n: usize, len: usize) -> usize {
    n.wrapping_mul(7_919).wrapping_add(13) % len.max(1)
}

/// Runs `measure` on both planes `rounds` times, who goes first
/// alternating; the large plane's answers, then the small one's.
fn on_both<T>(
    rounds: usize,
    large: &mut Plane,
    small: &mut Plane,
    mut measure: impl FnMut(&mut Plane, usize) -> Result<T>,
) -> Result<(Vec<T>, Vec<T>)> {
    let (mut on_large, mut on_small) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            on_large.push(measure(large, round)?);
            on_small.push(measure(small, round)?);
        } else {
            on_small.push(measure(small, round)?);
            on_large.push(measure(large, round)?);
        }
    }
    Ok((on_large, on_small))
}

pub fn figures(backend: Backend, rounds: usize, quick: bool) -> Result<Vec<Figure>> {
    // 715 runs hold 10,000 records; 71,429 hold 1,000,000.
    let (small_runs, large_runs, window, reads) = if quick { (20, 200, 10, 3) } else { (715, 71_429, 216, 100) };
    let mut large = Plane::new(backend, large_runs)?;
    let mut small = Plane::new(backend, small_runs)?;
    let (large_records, small_records) = (large.records(), small.records());
    eprintln!("  scale on {}: planes of {large_records} and {small_records} records", backend.name());
    let name = |what: &str| format!("{what} on {}: {large_records} records against {small_records}", backend.name());
    let mut figures = Vec::new();

    // Appends, each window followed by a checkpoint: both planes have the
    // same runs moved when they sign.
    let (large_rounds, small_rounds) = on_both(rounds, &mut large, &mut small, |plane, _| {
        let appends = plane.grow(window)?;
        Ok((appends, plane.sign()?))
    })?;
    let (large_appends, large_signs): (Vec<f64>, Vec<f64>) = large_rounds.into_iter().unzip();
    let (small_appends, small_signs): (Vec<f64>, Vec<f64>) = small_rounds.into_iter().unzip();
    figures.push(Figure {
        name: name("signed Runtime appends (64 appenders)"),
        ours: median(large_appends),
        baseline_name: "the same appends to the small plane".into(),
        baseline: median(small_appends),
        unit: Unit::PerSecond("records"),
        bar: Some(0.8),
        rounds,
    });
    figures.push(Figure {
        name: name(&format!("`checkpoint` after {window} runs moved")),
        ours: median(large_signs),
        baseline_name: "the same on the small plane".into(),
        baseline: median(small_signs),
        unit: Unit::Nanos,
        bar: Some(0.5),
        rounds,
    });

    for read in [Read::Show, Read::ProveSealed, Read::ProveOpen, Read::Export, Read::RunsPage] {
        let (large_times, small_times) = on_both(rounds, &mut large, &mut small, |plane, round| {
            let start = Instant::now();
            for n in 0..reads {
                plane.read(read, round * reads + n)?;
            }
            Ok(start.elapsed().as_nanos() as f64 / reads as f64)
        })?;
        figures.push(Figure {
            name: name(read.name()),
            ours: median(large_times),
            baseline_name: "the same on the small plane".into(),
            baseline: median(small_times),
            unit: Unit::Nanos,
            bar: Some(0.5),
            rounds,
        });
    }

    let audit_rounds = rounds.min(3);
    let (large_rates, small_rates) = on_both(audit_rounds, &mut large, &mut small, |plane, _| plane.audit_rate())?;
    figures.push(Figure {
        name: name("the audit (records/s: linear when flat)"),
        ours: median(large_rates),
        baseline_name: "the audit of the small plane".into(),
        baseline: median(small_rates),
        unit: Unit::PerSecond("records"),
        bar: Some(0.8),
        rounds: audit_rounds,
    });

    let record_bytes = |plane: &Plane| -> Result<u64> {
        let mut total = 0u64;
        for run in plane.store.runs(&plane.tenant, None)? {
            total +=
                plane.store.read_run(&plane.tenant, &run)?.rows.iter().map(|row| row.bytes.len() as u64).sum::<u64>();
        }
        Ok(total)
    };
    let (on_disk, bytes) = (large.bytes_on_disk()?, record_bytes(&large)?);
    let size = |what: &str, on_disk: u64| Figure {
        name: name(&format!("store size{what} ({} MiB for {} MiB of records)", on_disk >> 20, bytes >> 20)),
        ours: on_disk as f64 / bytes as f64,
        baseline_name: "the record bytes".into(),
        baseline: 1.0,
        unit: Unit::Factor("x"),
        bar: None,
        rounds: 1,
    };
    figures.push(size("", on_disk));
    // Compacting needs the file alone: the plane's handles go first.
    let Plane { location, runtime, store, .. } = large;
    drop((runtime, store));
    if let Location::Dir(dir) = &location {
        let (_, after) = store_redb::RedbStore::compact(&dir.path().join("journal.redb"))?;
        figures.push(size(" after `agentplane compact`", after));
    }
    Ok(figures)
}
