//! What signing a checkpoint costs now that open runs enter the log first
//! (issue 20): with 10,000 runs moved since the last checkpoint, against the
//! floor of the work (hashing the same number of heads entries into their
//! tree in memory); and with 100 runs moved on a plane of 10,000 against 100
//! moved on a plane of 100, which shows the cost follows the runs moved, not
//! the plane's size.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, anyhow, bail};
use journal_core::heads::{HeadEntry, HeadsLeaf, sorted_entries};
use journal_core::record::StepMark;
use journal_core::{
    Admission, AdmitRequest, Budget, ChainHash, ExpectedHead, Journal, RecordBody, RunId, RuntimeBuilder, Store,
};
use witness::{ALG_ED25519, LogKey, SignerKey};

use crate::append::{Backend, fresh_store, tenant};
use crate::measure::{Figure, Unit, alternate, for_each_on_64_threads};

fn log_key(origin: &journal_core::Origin) -> Result<LogKey> {
    let skey = SignerKey::from_seed(origin.as_str(), ALG_ED25519, [3; 32]).map_err(|err| anyhow!("{err}"))?;
    LogKey::new(skey).map_err(|err| anyhow!("{err}"))
}

/// A plane of `runs` open runs (admitted, plan frozen), on 64 appenders.
fn plane(backend: Backend, runs: usize) -> Result<(Arc<dyn Store>, crate::append::Location, Vec<RunId>)> {
    let (store, location) = fresh_store(backend)?;
    let (tenant, origin) = tenant()?;
    let runtime = RuntimeBuilder::new(Arc::clone(&store)).tenant(tenant.clone(), origin, None).build()?;
    for_each_on_64_threads(runs, |n| {
        let request =
            AdmitRequest { idempotency_key: format!("open-{n}"), plan: vec!["work".into()], budget: Budget::default() };
        let Admission::New(_) = runtime.admit(&tenant, request)? else {
            bail!("open-{n} was admitted twice");
        };
        Ok(())
    })?;
    let ids = store.runs(&tenant, None)?;
    Ok((store, location, ids))
}

/// Appends one record to each of `runs`: their heads move.
fn move_runs(store: &dyn Store, runs: &[RunId]) -> Result<()> {
    let (tenant, origin) = tenant()?;
    let journal = Journal::new(store, &tenant, &origin);
    for run in runs {
        let head = store.read_run(&tenant, run)?.head;
        journal.append(run, head, None, RecordBody::StepStarted(StepMark { step: "work".into() }))?;
    }
    Ok(())
}

/// Nanoseconds to sign the plane's checkpoint (heads leaves first).
fn sign_nanos(store: &dyn Store) -> Result<f64> {
    let (tenant, origin) = tenant()?;
    let key = log_key(&origin)?;
    let start = Instant::now();
    journal_core::log::sign_current_head(store, &tenant, &origin, &key, None)?;
    Ok(start.elapsed().as_nanos() as f64)
}

pub fn figures(backend: Backend, rounds: usize, quick: bool) -> Result<Vec<Figure>> {
    let moved_all = if quick { 200 } else { 10_000 };
    let (_, origin) = tenant()?;
    let (ours, floor) = alternate(
        rounds,
        || {
            let (store, _location, _) = plane(backend, moved_all)?;
            sign_nanos(store.as_ref())
        },
        || {
            let entries: Vec<HeadEntry> = (0..moved_all)
                .map(|n| {
                    let run = RunId::new(&format!("run-{n:024x}"))?;
                    let hash = ChainHash::link(&ChainHash::GENESIS, format!("{n}").as_bytes());
                    Ok(HeadEntry::new(&run, ExpectedHead { seq: 2, hash }))
                })
                .collect::<Result<_>>()?;
            let start = Instant::now();
            let leaf = HeadsLeaf::new(&origin, &sorted_entries(entries));
            std::hint::black_box(leaf.to_bytes());
            Ok(start.elapsed().as_nanos() as f64)
        },
    )?;
    let few = 100;
    let (large, small) = alternate(
        rounds,
        || {
            let (store, _location, runs) = plane(backend, moved_all)?;
            sign_nanos(store.as_ref())?;
            move_runs(store.as_ref(), runs.get(..few).unwrap_or(&runs))?;
            sign_nanos(store.as_ref())
        },
        || {
            let (store, _location, runs) = plane(backend, few)?;
            sign_nanos(store.as_ref())?;
            move_runs(store.as_ref(), &runs)?;
            sign_nanos(store.as_ref())
        },
    )?;
    let kept = if quick { 50 } else { 2_000 };
    let (remembered, first) = kept_cosigned_rows(backend, rounds, kept)?;
    let (old_plane, young_plane) = (if quick { 300 } else { 20_000 }, 20);
    let (old, young) = export_beside_kept_rows(backend, rounds, old_plane, young_plane)?;
    Ok(vec![
        Figure {
            name: format!(
                "`export` of a sealed run (its cosigned inclusion found) on {}, {old_plane} cosigned rows kept",
                backend.name()
            ),
            ours: old,
            baseline_name: format!("the same with {young_plane} rows kept"),
            baseline: young,
            unit: Unit::Nanos,
            bar: None,
            rounds,
        },
        Figure {
            name: format!(
                "the sweep's check of the kept cosigned rows on {}, {kept} rows kept (a log signature and a witness's \
                 cosignature each), in a round after the first",
                backend.name()
            ),
            ours: remembered,
            baseline_name: "the same rows in the first round (every row verified: each round, before session 28)"
                .into(),
            baseline: first,
            unit: Unit::Nanos,
            bar: None,
            rounds,
        },
        Figure {
            name: format!("checkpoint signed on {}, {moved_all} open runs moved (heads leaf first)", backend.name()),
            ours,
            baseline_name: format!("hashing {moved_all} heads entries into their tree in memory"),
            baseline: floor,
            unit: Unit::Nanos,
            bar: None,
            rounds,
        },
        Figure {
            name: format!("checkpoint signed on {}, {few} runs moved on a plane of {moved_all}", backend.name()),
            ours: large,
            baseline_name: format!("{few} runs moved on a plane of {few}"),
            baseline: small,
            unit: Unit::Nanos,
            bar: None,
            rounds,
        },
    ])
}

/// Nanoseconds for the sweep's check of `kept` cosigned rows (each the
/// plane's signed checkpoint and one witness's cosignature), read from the
/// store and verified (issue 21) as a round does: with the rows remembered
/// from an earlier round, against a first round's (every row verified).
fn kept_cosigned_rows(backend: Backend, rounds: usize, kept: usize) -> Result<(f64, f64)> {
    use journal_core::runtime::{RememberedStandings, verify_cosigned_rows_remembering};
    use journal_core::store::SignedTree;
    let (store, _location) = fresh_store(backend)?;
    let (tenant, origin) = tenant()?;
    let key = log_key(&origin)?;
    let cosigner = witness::Cosigner::new(
        SignerKey::from_seed("bench.witness/w", witness::ALG_COSIGNATURE_V1, [5; 32])
            .map_err(|err| anyhow!("{err}"))?,
    )
    .map_err(|err| anyhow!("{err}"))?;
    let witness_keys = vec![witness::TrustedWitness::new(cosigner.verifier_key()).map_err(|err| anyhow!("{err}"))?];
    for size in 1..=kept as u64 {
        let tree = tlog::Tree::new(
            size,
            tlog::RootHash::from_hash_bytes(*ChainHash::link(&ChainHash::GENESIS, &size.to_be_bytes()).as_bytes()),
        );
        let signed = journal_core::log::sign_checkpoint(&origin, tree, &key)?;
        let cosignature =
            cosigner.cosign(&signed.checkpoint().to_text(), 1_700_000_000 + size).map_err(|err| anyhow!("{err}"))?;
        store.record_cosigned_checkpoint(&tenant, SignedTree { tree, note: signed.cosigned_note([&cosignature]) })?;
    }
    let verifier = key.verifier_key();
    let check = |remembered: &RememberedStandings| -> Result<f64> {
        let start = Instant::now();
        let rows = store.cosigned_checkpoints(&tenant)?;
        let newest = verify_cosigned_rows_remembering(&rows, &origin, &verifier, &witness_keys, 1, remembered)
            .map_err(|err| anyhow!("{err}"))?;
        let nanos = start.elapsed().as_nanos() as f64;
        if newest.map(|(_, tree)| tree.size) != Some(kept as u64) {
            bail!("the kept rows' newest is {newest:?}, not size {kept}");
        }
        Ok(nanos)
    };
    let warm = RememberedStandings::default();
    check(&warm)?;
    alternate(rounds, || check(&warm), || check(&RememberedStandings::default()))
}

/// Nanoseconds for `export` of a sealed run on a plane that kept `old`
/// cosigned rows (a witnessing round's each, all holding the run), against
/// the same plane with `young` kept: an export reads the newest rows only
/// (`Store::newest_checkpoints`), so a plane's age does not slow it.
fn export_beside_kept_rows(backend: Backend, rounds: usize, old: usize, young: usize) -> Result<(f64, f64)> {
    let (tenant, origin) = tenant()?;
    let key = log_key(&origin)?;
    let plane = |kept: usize| -> Result<(Arc<dyn Store>, crate::append::Location, RunId)> {
        let (store, location) = fresh_store(backend)?;
        let runtime = RuntimeBuilder::new(Arc::clone(&store)).tenant(tenant.clone(), origin.clone(), None).build()?;
        crate::append::run_of_steps(&runtime, &tenant, "sealed", 2)?;
        let run = store.runs(&tenant, None)?.into_iter().next().ok_or_else(|| anyhow!("no run was admitted"))?;
        let (_, signed) = journal_core::log::sign_current_head(store.as_ref(), &tenant, &origin, &key, None)?;
        let row = journal_core::store::SignedTree { tree: signed.checkpoint().tree(), note: signed.note().to_owned() };
        for _ in 0..kept {
            store.record_cosigned_checkpoint(&tenant, row.clone())?;
        }
        Ok((store, location, run))
    };
    let (old_store, _old_location, old_run) = plane(old)?;
    let (young_store, _young_location, young_run) = plane(young)?;
    let upcasters = journal_core::Upcasters::builtin();
    let check = journal_core::ChainCheck { upcasters: &upcasters, verifier: None, options: Default::default() };
    let export = |store: &Arc<dyn Store>, run: &RunId| -> Result<f64> {
        let start = Instant::now();
        let export = journal_core::export::export_run(store.as_ref(), &tenant, &origin, &key, run, check, None)?;
        let nanos = start.elapsed().as_nanos() as f64;
        if std::hint::black_box(export).cosigned.is_none() {
            bail!("the export carries no cosigned inclusion");
        }
        Ok(nanos)
    };
    alternate(rounds, || export(&old_store, &old_run), || export(&young_store, &young_run))
}
