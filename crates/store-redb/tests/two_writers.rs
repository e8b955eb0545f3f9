//! Two plane processes appending to one redb file at once (redb's
//! `MultiWriter` mode, `store_redb::CONCURRENCY`), both SIGKILLed at random
//! moments, several times: every acknowledged record is there, every chain
//! verifies, the log's positions are dense (R-LOG-5: each seal took the next
//! position inside its own transaction, whichever process wrote it), the log
//! extends every checkpoint either process saw, and the audit is clean.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use journal_core::{Origin, RunId, Store, TenantId};
use store_redb::RedbStore;
use tlog::Tree;

const CYCLES: u64 = 6;

fn writer(path: &Path, prefix: &str) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_crash-writer")))
        .arg(path)
        .arg(prefix)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

/// Reads `lines` lines of a writer: its acknowledged records and the
/// checkpoints it saw.
fn read_lines(
    reader: &mut BufReader<ChildStdout>,
    lines: u64,
    committed: &mut Vec<(String, u64)>,
    seen: &mut Vec<Tree>,
) {
    let mut line = String::new();
    for _ in 0..lines {
        line.clear();
        assert_ne!(reader.read_line(&mut line).unwrap(), 0, "a writer stopped by itself");
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["committed", run, seq] => committed.push(((*run).to_owned(), seq.parse().unwrap())),
            ["sealed", size, root] => {
                seen.push(Tree::new(size.parse().unwrap(), tlog::RootHash::from_hex(root).unwrap()));
            }
            other => panic!("unexpected writer output {other:?}"),
        }
    }
}

#[test]
fn r_log_5_two_writer_processes_share_one_file_through_kills_dense_and_clean() {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    let mut state = seed;
    let mut random = |below: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.redb");
    drop(RedbStore::create(&path).unwrap());
    let tenant = TenantId::new("crash").unwrap();
    let origin = Origin::new("crash.test/plane").unwrap();
    let (mut committed, mut seen) = (Vec::new(), Vec::new());
    for cycle in 0..CYCLES {
        let (mut a, mut a_out) = writer(&path, "a");
        let (mut b, mut b_out) = writer(&path, "b");
        // Both write at once; each is killed after its own random number of lines.
        read_lines(&mut a_out, 10 + random(60), &mut committed, &mut seen);
        read_lines(&mut b_out, 10 + random(60), &mut committed, &mut seen);
        a.kill().unwrap();
        read_lines(&mut b_out, random(20), &mut committed, &mut seen);
        b.kill().unwrap();
        a.wait().unwrap();
        b.wait().unwrap();

        let store = RedbStore::open_read_only_or_repaired_copy(&path)
            .unwrap_or_else(|err| panic!("seed {seed} cycle {cycle}: reopening: {err}"))
            .0;
        for (run, seq) in &committed {
            let rows = store.read_run(&tenant, &RunId::new(run).unwrap()).unwrap().rows;
            assert!(
                rows.iter().any(|row| row.seq == *seq),
                "seed {seed} cycle {cycle}: acknowledged {run} seq {seq} is lost"
            );
        }
        let seals = store.seals(&tenant).unwrap();
        let counters = store.log_counters(&tenant).unwrap();
        let positions: Vec<u64> = seals.iter().map(|seal| seal.position).collect();
        assert_eq!(
            positions,
            (0..seals.len() as u64).collect::<Vec<_>>(),
            "seed {seed} cycle {cycle}: dense positions"
        );
        assert_eq!(counters.next_position, seals.len() as u64, "seed {seed} cycle {cycle}: the counter");
        assert!(
            seals.iter().any(|s| s.run.as_str().starts_with("a-"))
                && seals.iter().any(|s| s.run.as_str().starts_with("b-"))
        );
        let view = journal_core::LogView::open(&store, &tenant).unwrap();
        let head = view.head().unwrap();
        for checkpoint in seen.iter().filter(|tree| tree.size > 0) {
            let consistency = view.consistency(checkpoint.size, head.tree.size).unwrap();
            head.tree
                .verify_extends(checkpoint, &consistency.proof)
                .unwrap_or_else(|err| panic!("seed {seed} cycle {cycle}: a checkpoint a writer saw: {err}"));
        }
        let mut inputs = audit::AuditInputs::new(tenant.clone(), origin.clone());
        inputs.require_signature = false;
        let report = audit::audit(&store, &inputs).unwrap();
        assert!(report.findings.is_empty(), "seed {seed} cycle {cycle}: {:?}", report.findings);
    }
    assert!(
        committed.iter().any(|(run, _)| run.starts_with("a-"))
            && committed.iter().any(|(run, _)| run.starts_with("b-"))
    );
}
