//! The read side on one large signed plane: the audit (`verify
//! --require-signature` rides it) against what the CPU cannot avoid, tenant
//! cost against the runs table, and bytes on disk per byte of record.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, Ed25519Signer, EffectOutput, EffectResult, Origin, Runtime,
    RuntimeBuilder, Signer as _, Store, TenantId,
};
use sha2::{Digest, Sha256};

use crate::append::{Backend, Location, fresh_store, record_signer, tenant};
use crate::measure::{Figure, Unit, alternate, alternate_three, each_in_a_thread, for_each_on_64_threads, rate};

/// Fills `store` with `runs` sealed, signed runs (admitted, one step of three
/// charged effects, succeeded), on 64 appenders.
pub fn fill(
    store: &Arc<dyn Store>,
    tenant: &TenantId,
    origin: &Origin,
    signer: &Ed25519Signer,
    runs: usize,
) -> Result<()> {
    let runtime = signed_runtime(store, tenant, origin, signer)?;
    fill_with(&runtime, tenant, 0..runs, None)
}

/// The Runtime the benches append through: signed with `signer`, `tenant`
/// under `origin`.
pub fn signed_runtime(
    store: &Arc<dyn Store>,
    tenant: &TenantId,
    origin: &Origin,
    signer: &Ed25519Signer,
) -> Result<Runtime> {
    Ok(RuntimeBuilder::new(Arc::clone(store))
        .signer(Arc::new(signer.clone()))
        .tenant(tenant.clone(), origin.clone(), None)
        .build()?)
}

/// Runs numbered `numbers` through `runtime`, on 64 appenders: 14 records
/// each (admitted, one step of three charged effects, succeeded), except
/// that every `open_every`-th (from the first) stops after its step, open.
pub fn fill_with(
    runtime: &Runtime,
    tenant: &TenantId,
    numbers: std::ops::Range<usize>,
    open_every: Option<usize>,
) -> Result<()> {
    let first = numbers.start;
    for_each_on_64_threads(numbers.len(), |offset| {
        let n = first + offset;
        let request = AdmitRequest {
            idempotency_key: format!("bench-{n}"),
            plan: vec!["work".into()],
            budget: Budget::default(),
        };
        let Admission::New(mut run) = runtime.admit(tenant, request)? else {
            bail!("bench-{n} was admitted twice");
        };
        run.start_step("work")?;
        for effect in 0..3 {
            run.effect(&format!("ek:{effect}"), "work", || EffectOutput {
                result: EffectResult::Ok { output: format!("output of effect {effect} of run {n}") },
                charged: Counters { tokens: 100, cost_micros: 250, wall_millis: 40, ..Counters::default() },
            })?;
        }
        run.finish_step("work")?;
        if open_every.is_some_and(|every| n.is_multiple_of(every)) {
            return Ok(());
        }
        Ok(run.succeed("done")?)
    })
}

/// Every record's bytes, hash and signature, read once for the baselines.
struct Plane {
    bytes: Vec<Vec<u8>>,
    signed: Vec<([u8; 32], [u8; 64])>,
}

fn read_plane(store: &dyn Store, tenant: &TenantId) -> Result<Plane> {
    let mut plane = Plane { bytes: Vec::new(), signed: Vec::new() };
    for run in store.runs(tenant, None)? {
        for row in store.read_run(tenant, &run)?.rows {
            let signature = row.signature.as_ref().context("an unsigned record in a signed plane")?;
            let signature: [u8; 64] =
                signature.signature.as_slice().try_into().map_err(|_| anyhow!("a signature of the wrong size"))?;
            plane.signed.push((*row.hash.as_bytes(), signature));
            plane.bytes.push(row.bytes);
        }
    }
    Ok(plane)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// SHA-256 over every record's bytes, on every core.
fn sha256_everything(plane: &Plane) {
    let chunk = plane.bytes.len().div_ceil(cores()).max(1);
    let _ = each_in_a_thread(plane.bytes.chunks(chunk), |part| {
        part.iter().for_each(|bytes| {
            std::hint::black_box(Sha256::digest(bytes));
        });
        Ok(())
    });
}

/// The batch sizes the Ed25519 baseline is measured at; its figure is the
/// fastest of them (issue 25: the limit is the best batching).
const BASELINE_BATCHES: [usize; 5] = [64, 128, 256, 512, 1024];

/// The ways the Ed25519 baseline batches: its figure is the fastest.
#[derive(Debug, Clone, Copy)]
enum Batching {
    /// ed25519-dalek's `verify_batch`: the key multiplied once per signature.
    Dalek,
    /// ed25519-zebra's batch, which folds one key's signatures into one
    /// multiplication: what the audit itself uses.
    FoldedByKey,
}

impl Batching {
    fn name(self) -> &'static str {
        match self {
            Batching::Dalek => "ed25519-dalek verify_batch",
            Batching::FoldedByKey => "ed25519-zebra, folded by key",
        }
    }
}

/// Ed25519 batch verification of every signature, on every core, in
/// batches of `size`.
fn batch_verify_everything(
    plane: &Plane,
    public: &ed25519_dalek::VerifyingKey,
    batching: Batching,
    size: usize,
) -> Result<()> {
    use rand_chacha::rand_core::SeedableRng as _;
    let chunk = plane.signed.len().div_ceil(cores()).max(1);
    each_in_a_thread(plane.signed.chunks(chunk), |part| {
        // A fixed seed: the baseline's coefficients need no secrecy, only
        // the same cost as the audit's OS-seeded ones.
        let mut coefficients = rand_chacha::ChaCha12Rng::from_seed([7; 32]);
        for batch in part.chunks(size) {
            let verified = match batching {
                Batching::Dalek => {
                    let messages: Vec<&[u8]> = batch.iter().map(|(hash, _)| hash.as_slice()).collect();
                    let signatures: Vec<ed25519_dalek::Signature> =
                        batch.iter().map(|(_, sig)| ed25519_dalek::Signature::from_bytes(sig)).collect();
                    let keys = vec![*public; batch.len()];
                    ed25519_dalek::verify_batch(&messages, &signatures, &keys).is_ok()
                }
                Batching::FoldedByKey => {
                    let key = ed25519_zebra::VerificationKeyBytes::from(public.to_bytes());
                    let mut verifier = ed25519_zebra::batch::Verifier::new();
                    for (hash, sig) in batch {
                        verifier.queue((key, ed25519_zebra::Signature::from_bytes(sig), hash));
                    }
                    verifier.verify(&mut coefficients).is_ok()
                }
            };
            if !verified {
                bail!("the baseline's batch did not verify ({})", batching.name());
            }
        }
        Ok(())
    })
}

pub fn audit_inputs(tenant: &TenantId, origin: &Origin, signer: &Ed25519Signer) -> audit::AuditInputs {
    let mut inputs = audit::AuditInputs::new(tenant.clone(), origin.clone());
    inputs.require_signature = true;
    inputs.record_keys = vec![audit::RecordKey { key_id: signer.key_id().to_owned(), public_key: signer.public_key() }];
    inputs
}

fn audit_rate(store: &dyn Store, inputs: &audit::AuditInputs, records: usize) -> Result<f64> {
    let start = Instant::now();
    let report = audit::audit(store, inputs)?;
    let elapsed = start.elapsed().as_secs_f64();
    if !report.findings.is_empty() || report.checked.signatures != records as u64 {
        bail!(
            "the audit of the benchmark's plane is not clean: {} findings, {} of {records} signatures",
            report.findings.len(),
            report.checked.signatures
        );
    }
    Ok(records as f64 / elapsed)
}

/// The audit of a plane of `runs` runs, against the CPU's floor.
pub fn audit_figures(backend: Backend, rounds: usize, runs: usize) -> Result<(Vec<Figure>, Filled)> {
    let (store, location) = fresh_store(backend)?;
    let (tenant, origin) = tenant()?;
    let signer = record_signer();
    fill(&store, &tenant, &origin, &signer, runs)?;
    let plane = read_plane(store.as_ref(), &tenant)?;
    let records = plane.bytes.len();
    if records < runs {
        bail!("the plane holds {records} records for {runs} runs");
    }
    let public = ed25519_dalek::VerifyingKey::from_bytes(&signer.public_key())?;
    let inputs = audit_inputs(&tenant, &origin, &signer);
    // Each round audits a fresh read-only opening, as `agentplane audit`
    // does: the writer's page cache, warm from the fill, is not the auditor's.
    drop(store);
    let (ours, sha) = alternate(
        rounds,
        || audit_rate(location.open_read_only()?.as_ref(), &inputs, records),
        || {
            rate(records as u64, || {
                sha256_everything(&plane);
                Ok(())
            })
        },
    )?;
    let mut batch = 0.0_f64;
    let mut best = (Batching::Dalek, 0);
    for batching in [Batching::Dalek, Batching::FoldedByKey] {
        for size in BASELINE_BATCHES {
            let (_, at_size) = alternate(
                rounds,
                || Ok(0.0),
                || rate(records as u64, || batch_verify_everything(&plane, &public, batching, size)),
            )?;
            // Every size's figure, so the README can state what was tried.
            eprintln!("  baseline: {} in batches of {size}: {at_size:.0} records/s", batching.name());
            if at_size > batch {
                (batch, best) = (at_size, (batching, size));
            }
        }
    }
    let floor = sha.min(batch);
    let floor_name = if sha <= batch {
        "SHA-256 on every core".to_owned()
    } else {
        format!(
            "Ed25519 batch verify on every core, {} in batches of {} (best of ed25519-dalek and ed25519-zebra at \
             {BASELINE_BATCHES:?})",
            best.0.name(),
            best.1
        )
    };
    let figures = vec![Figure {
        name: format!("audit (= verify --require-signature) on {}, {records} signed records", backend.name()),
        ours,
        baseline_name: format!("min(SHA-256, Ed25519 batch verify) on {} cores = {floor_name}", cores()),
        baseline: floor,
        unit: Unit::PerSecond("records"),
        bar: Some(0.8),
        rounds,
    }];
    let record_bytes: usize = plane.bytes.iter().map(Vec::len).sum();
    Ok((figures, Filled { location, record_bytes, runs }))
}

/// A filled plane, kept for the figures that read it.
pub struct Filled {
    pub location: Location,
    pub record_bytes: usize,
    pub runs: usize,
}

/// Bytes the backend keeps per byte of record (its file, or its tables);
/// for redb also after `agentplane compact` (`RedbStore::compact`).
pub fn storage_figures(backend: Backend, filled: &Filled) -> Result<Vec<Figure>> {
    let figure = |what: &str, on_disk: u64, bar: Option<f64>| Figure {
        name: format!("bytes on disk on {}{what}, {} runs", backend.name(), filled.runs),
        ours: on_disk as f64 / filled.record_bytes as f64,
        baseline_name: "the record bytes".into(),
        baseline: 1.0,
        unit: Unit::Factor("x"),
        bar,
        rounds: 1,
    };
    Ok(match &filled.location {
        Location::Dir(dir) => {
            let (before, after) = store_redb::RedbStore::compact(&dir.path().join("journal.redb"))?;
            vec![figure("", before, None), figure(" after `agentplane compact`", after, Some(BYTES_BAR))]
        }
        Location::Url(url) => vec![figure("", postgres_bytes(url)?, Some(BYTES_BAR))],
    })
}

/// Issue 25's bar for bytes on disk per byte of record, on both backends
/// (redb after `agentplane compact`, which gives free pages back).
const BYTES_BAR: f64 = 2.0;

/// The size of every table (with its indexes and TOAST) of the database at `url`.
pub fn postgres_bytes(url: &str) -> Result<u64> {
    let mut client = postgres::Client::connect(url, postgres::NoTls)?;
    client.batch_execute("CHECKPOINT")?;
    let row = client.query_one(
        "SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c \
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'",
        &[],
    )?;
    Ok(u64::try_from(row.get::<_, i64>(0))?)
}

/// `agentplane cost` for the whole tenant against `agentplane runs`, both
/// the real binary on a plane made by `agentplane init`.
pub fn cost_figures(agentplane: &Path, rounds: usize, runs: usize) -> Result<Vec<Figure>> {
    let dir = tempfile::tempdir()?;
    let status = Command::new(agentplane).arg("init").current_dir(dir.path()).output()?;
    if !status.status.success() {
        bail!("agentplane init: {}", String::from_utf8_lossy(&status.stderr));
    }
    let keys = std::fs::read_to_string(dir.path().join("agentplane.key"))?;
    let signer = plane_record_signer(&keys)?;
    let tenant = TenantId::new("default")?;
    let origin = Origin::new("agentplane.local/plane/default").map_err(|err| anyhow!("{err}"))?;
    {
        let store: Arc<dyn Store> = Arc::new(store_redb::RedbStore::create(&dir.path().join("agentplane.redb"))?);
        fill(&store, &tenant, &origin, &signer, runs)?;
    }
    let command = |args: &[&str]| -> Result<()> {
        let out = Command::new(agentplane).args(args).current_dir(dir.path()).output()?;
        if !out.status.success() {
            bail!("agentplane {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    };
    // Both read every signature, as they do by default (each in batches
    // over every core, as `show` and the audit check them).
    let (cost, list, chain_alone) = alternate_three(
        rounds,
        || rate(1, || command(&["cost", "--json"])),
        || rate(1, || command(&["runs", "--json"])),
        || rate(1, || command(&["cost", "--json", "--skip-signatures"])),
    )?;
    Ok(vec![
        Figure {
            name: format!("`agentplane cost` for a tenant of {runs} runs"),
            ours: 1e9 / cost,
            baseline_name: "`agentplane runs` on the same plane".into(),
            baseline: 1e9 / list,
            unit: Unit::Nanos,
            bar: Some(0.5),
            rounds,
        },
        Figure {
            name: format!("`agentplane cost` for a tenant of {runs} runs, every signature verified (the default)"),
            ours: 1e9 / cost,
            baseline_name: "`agentplane cost --skip-signatures` (the chain alone)".into(),
            baseline: 1e9 / chain_alone,
            unit: Unit::Nanos,
            bar: None,
            rounds,
        },
    ])
}

/// The record signer of a plane's key file (`record <key id> <base64 seed>`).
fn plane_record_signer(keys: &str) -> Result<Ed25519Signer> {
    use base64::Engine as _;
    let line = keys.lines().find_map(|line| line.strip_prefix("record ")).context("no record key in the key file")?;
    let (key_id, seed) = line.rsplit_once(' ').context("a record line without its seed")?;
    let seed = base64::engine::general_purpose::STANDARD.decode(seed.trim())?;
    let seed: [u8; 32] = seed.try_into().map_err(|_| anyhow!("the record seed is not 32 bytes"))?;
    Ok(Ed25519Signer::from_seed(key_id, seed))
}
