//! R-STORE-3, R-LOG-5: four processes each admit and seal 250 runs on one
//! database while checkpoints are read as fast as they come: no two seals
//! share a position, positions are dense, the final log extends every
//! checkpoint read meanwhile, every run verifies, and the audit is clean.
//! Meanwhile audits run back to back against the live plane: every one of
//! them is clean (issue 21: one snapshot per audit, no false alarm).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use journal_core::{LogView, Origin, Store, TenantId};
use store_pg::PgStore;

const PROCESSES: usize = 4;
const RUNS_EACH: u32 = 250;
const MAX_WAVES: u64 = 6;

#[test]
fn r_store_3_four_processes_seal_in_commit_order_and_every_checkpoint_is_extended() {
    let url = store_pg::testkit::fresh_database();
    let store = PgStore::open(&url).unwrap();
    let tenant = TenantId::new("shared").unwrap();
    let done = AtomicBool::new(false);
    let audits = AtomicU32::new(0);
    let observed = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut trees = Vec::new();
            while !done.load(Ordering::Relaxed) {
                let view = LogView::open(&store, &tenant).unwrap();
                assert!(!view.source().has_holes(), "a reader never sees a hole while seals commit");
                let head = view.head().unwrap().tree;
                if trees.last() != Some(&head) {
                    trees.push(head);
                }
            }
            trees
        });
        // Issue 21: audits of the live plane, each over one snapshot, have
        // no findings however the writers' commits fall between its reads.
        let auditor = scope.spawn(|| {
            let origin = Origin::new("pg.test/concurrent").unwrap();
            while !done.load(Ordering::Relaxed) {
                let report = audit::audit(&store, &audit::AuditInputs::new(tenant.clone(), origin.clone())).unwrap();
                let n = audits.load(Ordering::Relaxed);
                assert!(report.is_clean(), "audit {n} of a healthy live plane: {:#?}", report.findings);
                audits.fetch_add(1, Ordering::Relaxed);
            }
        });
        // Waves of four writer processes, until 50 audits ran during the
        // writes (a slow machine audits less often per wave).
        let mut waves = 0;
        while waves == 0 || (audits.load(Ordering::Relaxed) < 50 && waves < MAX_WAVES) {
            let writers: Vec<_> = (0..PROCESSES)
                .map(|p| {
                    Command::new(env!("CARGO_BIN_EXE_pg-writer"))
                        .args([url.as_str(), "shared", &format!("w{waves}p{p}"), &RUNS_EACH.to_string()])
                        .spawn()
                        .unwrap()
                })
                .collect();
            let failed = writers.into_iter().map(|mut writer| writer.wait().unwrap()).find(|status| !status.success());
            if let Some(status) = failed {
                // Stop the reader and the auditor first, or the scope waits on them forever.
                done.store(true, Ordering::Relaxed);
                panic!("a writer failed: {status}");
            }
            waves += 1;
        }
        done.store(true, Ordering::Relaxed);
        auditor.join().unwrap();
        let audits = audits.load(Ordering::Relaxed);
        assert!(audits >= 50, "50 audits ran while the writers wrote: {audits}");
        (reader.join().unwrap(), waves)
    });
    let (observed, waves) = observed;

    let total = waves * PROCESSES as u64 * u64::from(RUNS_EACH);
    let seals = store.seals(&tenant).unwrap();
    let positions: Vec<u64> = seals.iter().map(|seal| seal.position).collect();
    assert_eq!(positions, (0..total).collect::<Vec<_>>(), "positions are dense and unique");
    let runs: BTreeSet<_> = seals.iter().map(|seal| seal.run.clone()).collect();
    assert_eq!(runs.len() as u64, total, "no run sealed twice");

    let view = LogView::open(&store, &tenant).unwrap();
    let head = view.head().unwrap().tree;
    assert_eq!(head.size, total);
    assert!(observed.len() > 2, "checkpoints were read while the log grew: {}", observed.len());
    for tree in observed.iter().filter(|tree| tree.size > 0) {
        let proof = view.consistency(tree.size, head.size).unwrap().proof;
        head.verify_extends(tree, &proof)
            .unwrap_or_else(|err| panic!("the final log does not extend the checkpoint of {}: {err}", tree.size));
    }

    let origin = Origin::new("pg.test/concurrent").unwrap();
    let report = audit::audit(&store, &audit::AuditInputs::new(tenant.clone(), origin)).unwrap();
    assert!(report.is_clean(), "{:#?}", report.findings);
    assert_eq!(report.checked.runs, total);
    assert_eq!(report.checked.inclusions, total);
}
