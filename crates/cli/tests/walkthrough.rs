//! The README's walk-through, run line by line as a new user would type it:
//! a plane, a witness, a sweep, and an auditor who verifies an export and the
//! store with public keys only. A line ending in `&` is started and awaited
//! until it prints its first line (the witness saying where it listens).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn readme_walkthrough() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let section = readme.split("## Walk-through").nth(1).expect("the README has a Walk-through section");
    let block = section.split("```sh").nth(1).and_then(|rest| rest.split("```").next()).expect("a sh block");
    let mut lines = Vec::new();
    let mut pending = String::new();
    for line in block.lines() {
        match line.strip_suffix('\\') {
            Some(start) => pending.push_str(start),
            None => {
                pending.push_str(line);
                if !pending.trim().is_empty() {
                    lines.push(std::mem::take(&mut pending));
                }
                pending.clear();
            }
        }
    }
    lines
}

/// The directory holding both binaries: `agentplane` is this package's; the
/// witness's is built beside it (by `cargo test --workspace`, or here).
fn binaries() -> PathBuf {
    let agentplane = PathBuf::from(env!("CARGO_BIN_EXE_agentplane"));
    let dir = agentplane.parent().unwrap().to_path_buf();
    if !dir.join("agentplane-witness").is_file() {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--quiet", "-p", "agentplane-witness-server", "--bin", "agentplane-witness"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success(), "building agentplane-witness for the walk-through");
    }
    dir
}

#[test]
fn r_ux_1_the_readme_walkthrough_runs_as_written() {
    let lines = readme_walkthrough();
    assert!(lines.len() >= 10, "{lines:?}");
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let path = format!("{}:{}", binaries().display(), std::env::var("PATH").unwrap_or_default());
    let mut background = Vec::new();
    for line in &lines {
        let line = line.replace("127.0.0.1:7380", &format!("127.0.0.1:{port}"));
        let bash = |script: &str| {
            let mut command = Command::new("bash");
            command.args(["-euo", "pipefail", "-c", script]).current_dir(dir.path()).env("PATH", &path);
            command
        };
        if let Some(started) = line.trim_end().strip_suffix('&') {
            let mut child = bash(&format!("exec {started}")).stdout(Stdio::piped()).spawn().unwrap();
            // A server says it listens; a sweep that keeps running prints its first round.
            // Its stdout stays open (kept below): a sweep's next round must not find a closed pipe.
            let mut first = String::new();
            let mut stdout = BufReader::new(child.stdout.take().unwrap());
            stdout.read_line(&mut first).unwrap();
            let started_as_it_says =
                if line.contains(" serve ") { first.contains("listening") } else { !first.is_empty() };
            assert!(started_as_it_says, "{line}: {first}");
            background.push((KillOnDrop(child), stdout));
            continue;
        }
        let out = bash(&line).output().unwrap();
        assert!(
            out.status.success(),
            "README walk-through line failed: {line}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // What the walk-through promises: the export verified offline with the
    // witness's key, and the auditor's complete, clean audit.
    assert!(dir.path().join("auditor/run.export").is_file());
    assert!(!dir.path().join("auditor/agentplane.key").exists(), "the auditor never had a key file");
}
