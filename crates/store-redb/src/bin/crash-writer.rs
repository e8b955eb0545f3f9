//! A writer for the crash test: appends and seals runs in a loop on a redb
//! file, printing each committed append, until it is killed.
//!
//! `crash-writer <path> [PREFIX]` prints `committed <run> <seq>` after each
//! durable append and `sealed <size> <root hex>` after each seal. Its runs
//! are `PREFIX-NNNNNN` (`run` by default): writers of different prefixes
//! share one file (the two-writer test).

use std::io::Write as _;
use std::process::ExitCode;

use journal_core::record::{PlanFrozen, RunConcluded, StepMark};
use journal_core::{Journal, Outcome, RecordBody, RunId, Store as _, TenantId, Verdict};
use store_redb::RedbStore;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("crash-writer: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: crash-writer <path> [PREFIX]")?;
    let prefix = std::env::args().nth(2).unwrap_or_else(|| "run".to_owned());
    let store = RedbStore::create(std::path::Path::new(&path))?;
    let tenant = TenantId::new("crash")?;
    let origin = journal_core::Origin::new("crash.test/plane")?;
    let journal = Journal::new(&store, &tenant, &origin);
    let mut stdout = std::io::stdout().lock();
    let start = store.runs(&tenant, None)?.len();
    for i in start.. {
        let run = RunId::new(&format!("{prefix}-{i:06}"))?;
        let mut head = None;
        let mut bodies = vec![RecordBody::PlanFrozen(PlanFrozen { steps: vec!["a".into(), "b".into()] })];
        bodies.extend((0..3).map(|s| RecordBody::StepStarted(StepMark { step: format!("step {s}") })));
        bodies.push(RecordBody::RunConcluded(RunConcluded {
            outcome: Outcome::Succeeded,
            verdict: Verdict::None,
            reason: "done".into(),
        }));
        for body in bodies {
            let appended = journal.append(&run, head, None, body)?;
            head = Some(appended.head);
            writeln!(stdout, "committed {run} {}", appended.head.seq)?;
            if appended.position.is_some() {
                let log = journal_core::LogView::open(&store, &tenant)?.head()?;
                writeln!(stdout, "sealed {} {}", log.tree.size, log.tree.root)?;
            }
            stdout.flush()?;
        }
    }
    Ok(())
}
