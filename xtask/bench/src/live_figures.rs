//! A live plane (issue 23): the writer's durable appends on redb with reader
//! processes attached to the same file (`agentplane runs` in loops, as an
//! operator's would run) beside the same writer with none, in one run.
//! Both sides share the machine's cores with whatever runs: on two cores the
//! readers' own CPU is most of what they cost the writer.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use journal_core::{RuntimeBuilder, Store};

use crate::append::{record_signer, run_of_steps, stored_bytes, tenant};
use crate::measure::{Figure, Unit, alternate, each_in_a_thread};

/// Reader processes attached in the measured side.
const READERS: usize = 4;
/// Runs appended at once by the writer.
const CONCURRENCY: usize = 8;

/// How often a paced reader calls: ten times a second, five to twenty
/// times what an operator's `watch agentplane runs` does.
const PACE: Duration = Duration::from_millis(100);

/// The figures: records per second with [`READERS`] readers attached, over
/// the same without; the readers paced at [`PACE`] (the bar), and in tight
/// loops (no bar: on two cores, four processes spawned back to back take
/// CPU the writer needs, so that figure measures the scheduler more than
/// the store; it is shown so the cost is not hidden).
pub fn figures(agentplane: &Path, rounds: usize, quick: bool) -> Result<Vec<Figure>> {
    // About 1.5 s of writing per round on two cores: long enough that the
    // readers' steady pace is what is measured, not their first spawn.
    let steps = if quick { 2 } else { 600 };
    // Each reader's first call is made before the clock starts; a full run
    // needs at least two more inside the window, or it measured no reader.
    let min_calls = if quick { 1 } else { 3 };
    let figure = |pace: Option<Duration>, bar: Option<f64>| -> Result<Figure> {
        let (with, without) = alternate(
            rounds,
            || writer_round(agentplane, READERS, steps, pace, min_calls),
            || writer_round(agentplane, 0, steps, pace, min_calls),
        )?;
        let how = match pace {
            Some(pace) => format!("each calling every {} ms", pace.as_millis()),
            None => "in tight loops".to_owned(),
        };
        Ok(Figure {
            name: format!(
                "durable append on redb, Runtime, signed, {CONCURRENCY} concurrent runs, {READERS} reader processes \
                 attached (`agentplane runs` on the same file, {how})"
            ),
            ours: with,
            baseline_name: "the same writer, no reader attached".to_owned(),
            baseline: without,
            unit: Unit::PerSecond("records"),
            bar,
            rounds,
        })
    };
    Ok(vec![figure(Some(PACE), Some(0.9))?, figure(None, None)?])
}

/// One round: a fresh store, `readers` reader processes in loops on it
/// (each pausing `pace` between calls, if given), the writer's records per
/// second. The clock starts once every reader has finished its first call,
/// so the readers are attached for the whole measured window. Every reader
/// call must succeed.
fn writer_round(
    agentplane: &Path,
    readers: usize,
    steps: usize,
    pace: Option<Duration>,
    min_calls: u64,
) -> Result<f64> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("journal.redb");
    let store: Arc<dyn Store> = Arc::new(store_redb::RedbStore::create(&path)?);
    let (tenant, origin) = tenant()?;
    let runtime = RuntimeBuilder::new(Arc::clone(&store))
        .signer(Arc::new(record_signer()))
        .tenant(tenant.clone(), origin.clone(), None)
        .build()?;
    let stop = AtomicBool::new(false);
    let (ready, attached_all) = std::sync::mpsc::channel::<()>();
    let (origin_text, tenant_text) = (origin.to_string(), tenant.to_string());
    std::thread::scope(|scope| {
        let attached: Vec<_> = (0..readers)
            .map(|_| {
                // Dropped after this reader's first call, or when it stops.
                let mut ready = Some(ready.clone());
                let (stop, path, tenant_text, origin_text) = (&stop, &path, &tenant_text, &origin_text);
                scope.spawn(move || -> Result<u64> {
                    let mut calls = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let status = Command::new(agentplane)
                            .arg("--store")
                            .arg(path)
                            .args(["--tenant", tenant_text, "--origin", origin_text, "runs", "--ids"])
                            .stdout(Stdio::null())
                            .stderr(Stdio::null())
                            .status()?;
                        if !status.success() {
                            bail!("a reader beside the writer failed ({status})");
                        }
                        calls += 1;
                        ready.take();
                        if let Some(pace) = pace {
                            std::thread::sleep(pace);
                        }
                    }
                    Ok(calls)
                })
            })
            .collect();
        // Nothing is ever sent: the wait ends when every reader has dropped
        // its sender, after its first call or because it failed (which its
        // join then reports), so it never waits on a reader that will not call.
        drop(ready);
        let _ = attached_all.recv();
        let start = Instant::now();
        let written =
            each_in_a_thread(0..CONCURRENCY, |n| run_of_steps(&runtime, &tenant, &format!("live-{n}"), steps));
        let elapsed = start.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        for reader in attached {
            let calls = reader.join().map_err(|_| anyhow!("a reader thread panicked"))??;
            if calls < min_calls {
                bail!("a reader made {calls} calls, fewer than {min_calls}: the window measured no attached reader");
            }
        }
        written?;
        let records: usize = stored_bytes(store.as_ref(), &tenant)?.iter().map(Vec::len).sum();
        Ok(records as f64 / elapsed)
    })
}
