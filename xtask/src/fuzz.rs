//! `cargo xtask fuzz [--seconds N | --runs N] [TARGET...]`: the libFuzzer
//! targets of `fuzz/` (cargo-fuzz, nightly), each seeded from the golden
//! corpus and from notes, cosignatures, requests and proofs made here with
//! the targets' fixed keys. Prints and writes (`target/fuzz/report.md`) the
//! executions each target ran; a crash fails the run and leaves its input in
//! `target/fuzz/artifacts/TARGET/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use tlog::{LeafHash, MemoryHashStore};
use witness::protocol::AddCheckpointRequest;
use witness::{
    ALG_COSIGNATURE_V1, ALG_ED25519, ALG_ML_DSA_44, Checkpoint, Cosigner, LogKey, Origin, SignerKey, SubtreeStatement,
};

use crate::{run_command, step, target_dir, workspace_root};

/// Every target, in `fuzz/Cargo.toml`'s order.
pub const TARGETS: &[&str] = &[
    "record",
    "note_open",
    "checkpoint",
    "keys",
    "cosignature_line",
    "add_checkpoint_request",
    "witness_answers",
    "export_file",
    "tlog_verify",
    "plane_config",
    "mldsa_line",
    "sign_subtree_request",
];

/// How long each target runs.
pub enum Budget {
    Seconds(u64),
    Runs(u64),
}

fn fuzz_dir() -> PathBuf {
    target_dir().join("fuzz")
}

fn ensure_cargo_fuzz() -> Result<()> {
    let installed = Command::new("cargo").args(["+nightly", "fuzz", "--version"]).output();
    if installed.is_ok_and(|out| out.status.success()) {
        return Ok(());
    }
    step("cargo-fuzz is missing: installing it from crates.io (cargo install cargo-fuzz)");
    run_command(Command::new("cargo").args(["install", "--locked", "cargo-fuzz"]))
}

pub fn run(budget: Budget, targets: &[&str]) -> Result<()> {
    for target in targets {
        if !TARGETS.contains(target) {
            bail!("no fuzz target {target:?}; the targets: {}", TARGETS.join(", "));
        }
    }
    let targets = if targets.is_empty() { TARGETS } else { targets };
    ensure_cargo_fuzz()?;
    let seeds = fuzz_dir().join("seeds");
    write_seeds(&seeds)?;
    let mut report = String::from("| target | executions | seconds | crashes |\n| --- | --- | --- | --- |\n");
    for target in targets {
        step(&format!("fuzzing {target}"));
        let corpus = fuzz_dir().join("corpus").join(target);
        let artifacts = fuzz_dir().join("artifacts").join(target);
        std::fs::create_dir_all(&corpus)?;
        std::fs::create_dir_all(&artifacts)?;
        let limit = match budget {
            Budget::Seconds(seconds) => format!("-max_total_time={seconds}"),
            Budget::Runs(runs) => format!("-runs={runs}"),
        };
        let out = Command::new("cargo")
            .args(["+nightly", "fuzz", "run", "--fuzz-dir"])
            .arg(workspace_root().join("fuzz"))
            .arg("--target-dir")
            .arg(fuzz_dir().join("build"))
            .arg(target)
            .arg(&corpus)
            .arg(seeds.join(target))
            .arg("--")
            .arg(limit)
            .arg(format!("-artifact_prefix={}/", artifacts.display()))
            .arg("-print_final_stats=1")
            .current_dir(workspace_root())
            .output()
            .with_context(|| format!("running cargo fuzz run {target}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let (runs, seconds) = final_stats(&stderr);
        let crashed = !out.status.success();
        report.push_str(&format!("| {target} | {runs} | {seconds} | {} |\n", if crashed { "1" } else { "0" }));
        eprintln!("xtask: {target}: {runs} executions in {seconds} s");
        if crashed {
            let tail: Vec<&str> = stderr.lines().rev().take(40).collect();
            eprintln!("{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
            std::fs::write(fuzz_dir().join("report.md"), &report)?;
            bail!(
                "fuzz target {target} crashed; its input is in {}. Make it a regression test first, then fix it",
                artifacts.display()
            );
        }
    }
    std::fs::write(fuzz_dir().join("report.md"), &report)?;
    println!("{report}");
    Ok(())
}

/// `Done 1234 runs in 5 second(s)` and `stat::number_of_executed_units: 1234`.
fn final_stats(stderr: &str) -> (u64, u64) {
    let mut runs = 0;
    let mut seconds = 0;
    for line in stderr.lines() {
        if let Some(rest) = line.strip_prefix("stat::number_of_executed_units:") {
            runs = rest.trim().parse().unwrap_or(runs);
        }
        if let Some(rest) = line.strip_prefix("Done ") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            if let [count, "runs", "in", secs, ..] = words.as_slice() {
                runs = count.parse().unwrap_or(runs);
                seconds = secs.parse().unwrap_or(seconds);
            }
        }
    }
    (runs, seconds)
}

fn put(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(name), bytes).with_context(|| format!("writing seed {name}"))
}

/// Seeds for every target: the golden corpus and the exports, and notes,
/// cosignatures, requests and proofs made with the targets' fixed keys.
fn write_seeds(seeds: &Path) -> Result<()> {
    let golden = workspace_root().join("tests").join("golden");
    let records = std::fs::read_to_string(golden.join("records.jsonl"))?;
    for (n, line) in records.lines().enumerate() {
        let value: serde_json::Value = serde_json::from_str(line)?;
        if let Some(record) = value.get("record").and_then(serde_json::Value::as_str) {
            put(&seeds.join("record"), &format!("golden-{n}"), record.as_bytes())?;
        }
    }
    for entry in std::fs::read_dir(golden.join("exports"))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("export").to_owned();
        put(&seeds.join("export_file"), &name, &std::fs::read(&path)?)?;
    }

    // The same keys as fuzz/src/lib.rs.
    let log_signer = SignerKey::from_seed("fuzz.agentplane.test/log", ALG_ED25519, [1; 32])?;
    let witness_signer = SignerKey::from_seed("fuzz.agentplane.test/witness", ALG_COSIGNATURE_V1, [2; 32])?;
    let log = LogKey::new(log_signer.clone())?;
    let cosigner = Cosigner::new(witness_signer.clone())?;
    let origin = Origin::new("fuzz.agentplane.test/log")?;
    let mut tree = MemoryHashStore::new();
    let mut notes = Vec::new();
    for i in 0..8u64 {
        tree.append(LeafHash::of(format!("run {i}").as_bytes()));
        notes.push((tree.size(), log.sign(&Checkpoint::new(&origin, tree.tree()))?));
    }
    for (size, signed) in &notes {
        let note = signed.note();
        put(&seeds.join("note_open"), &format!("size-{size}"), note.as_bytes())?;
        put(&seeds.join("checkpoint"), &format!("note-{size}"), note.as_bytes())?;
        put(&seeds.join("checkpoint"), &format!("body-{size}"), signed.checkpoint().to_text().as_bytes())?;
        let cosignature = cosigner.cosign(&signed.checkpoint().to_text(), 1_700_000_000 + size)?;
        put(&seeds.join("cosignature_line"), &format!("line-{size}"), cosignature.to_line().as_bytes())?;
        let old_size = (size / 2).max(1);
        let proof = tree.prove_consistency(old_size, *size).context("a consistency proof")?;
        let request = AddCheckpointRequest { old_size, proof: proof.clone(), checkpoint_note: note.to_owned() };
        put(&seeds.join("add_checkpoint_request"), &format!("size-{size}"), request.to_body().as_bytes())?;
        let mut verify = Vec::new();
        verify.extend_from_slice(&size.to_be_bytes());
        verify.extend_from_slice(&(size / 3).to_be_bytes());
        verify.extend_from_slice(&old_size.to_be_bytes());
        verify.extend_from_slice(signed.checkpoint().tree().root.as_bytes());
        verify.extend_from_slice(tlog::tree_root(&tree, old_size).context("a root")?.as_bytes());
        for hash in proof.path() {
            verify.extend_from_slice(hash.as_bytes());
        }
        put(&seeds.join("tlog_verify"), &format!("size-{size}"), &verify)?;
    }
    // The client's answers: the 200 body for the first checkpoint (cosigned
    // by the trusted witness) and a 409 body.
    let first = &notes.first().context("a checkpoint")?.1;
    let line = cosigner.cosign(&first.checkpoint().to_text(), 1_700_000_001)?.to_line();
    put(&seeds.join("witness_answers"), "cosigned", format!("{line}\n").as_bytes())?;
    put(&seeds.join("witness_answers"), "conflict", b"5\n")?;
    for (name, text) in [
        ("minimal", "store = \"agentplane.redb\"\nkeys = \"agentplane.key\"\n"),
        (
            "full",
            "store = \"agentplane.redb\"\nkeys = \"agentplane.key\"\nquorum = 1\nsweep_every = \"5m\"\n\n\
             [[tenant]]\nname = \"shop\"\norigin = \"agentplane.local/plane/shop\"\n\n\
             [[witness]]\nurl = \"http://127.0.0.1:7380\"\nkey = \"witness.example/w1+abcd1234+B...\"\n",
        ),
    ] {
        put(&seeds.join("plane_config"), name, text.as_bytes())?;
    }
    put(&seeds.join("keys"), "vkey", log_signer.verifier_key().to_string().as_bytes())?;
    put(&seeds.join("keys"), "skey", log_signer.to_skey().as_bytes())?;
    put(&seeds.join("keys"), "witness-vkey", cosigner.verifier_key().to_string().as_bytes())?;

    // ML-DSA-44 (the fixed key of fuzz/src/lib.rs): lines over the target's
    // body, a subtree line, the witness's vkey and skey.
    let ml_signer = SignerKey::from_seed("fuzz.agentplane.test/mldsa-witness", ALG_ML_DSA_44, [3; 32])?;
    let ml = Cosigner::new(ml_signer.clone())?;
    let body = "fuzz.agentplane.test/log\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";
    let dir = seeds.join("mldsa_line");
    put(&dir, "line", ml.cosign(body, 1_700_000_000)?.to_line().as_bytes())?;
    let both =
        format!("{}{}", ml.cosign(body, 1_700_000_001)?.to_line(), cosigner.cosign(body, 1_700_000_001)?.to_line());
    put(&dir, "two-lines", both.as_bytes())?;
    let statement = SubtreeStatement {
        cosigner_name: ml.name().to_owned(),
        timestamp: 0,
        origin: "fuzz.agentplane.test/log".to_owned(),
        start: 0,
        end: 1,
        hash: [0; 32],
    };
    put(&dir, "subtree", ml.sign_statement(&statement)?.to_line().as_bytes())?;
    put(&dir, "vkey", ml_signer.verifier_key().to_string().as_bytes())?;
    put(&dir, "skey", ml_signer.to_skey().as_bytes())?;
    put(&seeds.join("keys"), "mldsa-vkey", ml_signer.verifier_key().to_string().as_bytes())?;

    // sign-subtree bodies over the target's 13-leaf tree (leaf i is the byte i).
    let mut small = MemoryHashStore::new();
    for i in 0..13u8 {
        small.append(LeafHash::of(&[i]));
    }
    let dir = seeds.join("sign_subtree_request");
    for (start, end) in [(8, 12), (0, 13), (12, 13), (0, 5)] {
        let subtree = tlog::Subtree::new(start, end)?;
        let request = witness::protocol::SignSubtreeRequest {
            subtree,
            hash: tlog::subtree_hash(&small, subtree).context("a subtree hash")?,
            proof: tlog::prove_subtree_consistency(&small, subtree, 13).context("a subtree proof")?,
            checkpoint_note: first.note().to_owned(),
        };
        put(&dir, &format!("subtree-{start}-{end}"), request.to_body().as_bytes())?;
    }
    Ok(())
}
