//! R-STORE-2: a writer killed with SIGKILL at random moments, many times:
//! after each kill the file opens, every committed record is there, no half
//! record exists, every chain verifies, and the log is consistent with the
//! checkpoint seen before the kill.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use journal_core::{ChainCheck, Journal, RunId, Store, TenantId, Upcasters, VerifyOptions};
use store_redb::RedbStore;
use tlog::Tree;

const CYCLES: u64 = 30;

fn writer() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_crash-writer"))
}

/// A small deterministic generator, seeded from the clock (printed on failure).
struct Random(u64);

impl Random {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

#[test]
fn r_store_2_sigkill_at_random_moments_loses_nothing_committed() {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    let mut random = Random(seed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.redb");
    let tenant = TenantId::new("crash").unwrap();
    let upcasters = Upcasters::builtin();
    let mut committed: Vec<(String, u64)> = Vec::new();
    let mut last_seen: Option<Tree> = None;
    for cycle in 0..CYCLES {
        let mut child = Command::new(writer()).arg(&path).stdout(Stdio::piped()).spawn().unwrap();
        let lines_before_kill = 1 + random.next(80);
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        for _ in 0..lines_before_kill {
            line.clear();
            if reader.read_line(&mut line).unwrap() == 0 {
                panic!("seed {seed} cycle {cycle}: the writer stopped by itself: {:?}", child.wait());
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["committed", run, seq] => committed.push(((*run).to_owned(), seq.parse().unwrap())),
                ["sealed", size, root] => {
                    last_seen = Some(Tree::new(size.parse().unwrap(), tlog::RootHash::from_hex(root).unwrap()));
                }
                other => panic!("unexpected writer output {other:?}"),
            }
        }
        // SIGKILL while it keeps appending.
        child.kill().unwrap();
        child.wait().unwrap();
        drop(reader);

        let store = RedbStore::open(&path).unwrap_or_else(|err| panic!("seed {seed} cycle {cycle}: reopening: {err}"));
        let origin = journal_core::Origin::new("crash.test/plane").unwrap();
        let journal = Journal::new(&store, &tenant, &origin);
        let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
        for run in store.runs(&tenant, None).unwrap() {
            journal.read(&run, check).unwrap_or_else(|err| panic!("seed {seed} cycle {cycle}: run {run}: {err}"));
        }
        for (run, seq) in &committed {
            let rows = store.read_run(&tenant, &RunId::new(run).unwrap()).unwrap().rows;
            assert!(
                rows.iter().any(|row| row.seq == *seq),
                "seed {seed} cycle {cycle}: committed {run} seq {seq} is lost"
            );
        }
        if let Some(seen) = last_seen {
            let view = journal_core::LogView::open(&store, &tenant).unwrap();
            let head = view.head().unwrap();
            assert!(head.tree.size >= seen.size);
            if seen.size > 0 {
                let consistency = view.consistency(seen.size, head.tree.size).unwrap();
                head.tree
                    .verify_extends(&seen, &consistency.proof)
                    .unwrap_or_else(|err| panic!("seed {seed} cycle {cycle}: {err}"));
            }
        }
    }
    assert!(committed.len() as u64 >= CYCLES, "the writer committed records in every cycle");
}

/// A file a crash left behind needs a repair a read-only open cannot make:
/// readers then read a repaired private copy, with every committed record,
/// and the original file is not written.
#[test]
fn a_crashed_file_is_read_through_a_repaired_private_copy_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.redb");
    let mut child = Command::new(writer()).arg(&path).stdout(Stdio::piped()).spawn().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut committed = Vec::new();
    let mut line = String::new();
    while committed.len() < 20 {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the writer stopped by itself");
        if let ["committed", run, seq] = line.split_whitespace().collect::<Vec<_>>().as_slice() {
            committed.push(((*run).to_owned(), seq.parse::<u64>().unwrap()));
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = std::fs::read(&path).unwrap();

    let direct = RedbStore::open_read_only(&path);
    assert!(direct.is_err(), "a crashed file cannot be opened read-only as it is");
    let (store, opening) = RedbStore::open_read_only_or_repaired_copy(&path).unwrap();
    assert_eq!(opening, store_redb::ReadOnlyOpening::RepairedCopy);
    let tenant = TenantId::new("crash").unwrap();
    for (run, seq) in &committed {
        let rows = store.read_run(&tenant, &RunId::new(run).unwrap()).unwrap().rows;
        assert!(rows.iter().any(|row| row.seq == *seq), "committed {run} seq {seq} is in the repaired copy");
    }
    drop(store);
    assert!(std::fs::read(&path).unwrap() == before, "the original file was not written");
    // A writer repairs it in place; then readers open it directly.
    drop(RedbStore::open(&path).unwrap());
    let (_, opening) = RedbStore::open_read_only_or_repaired_copy(&path).unwrap();
    assert_eq!(opening, store_redb::ReadOnlyOpening::Direct);
}
