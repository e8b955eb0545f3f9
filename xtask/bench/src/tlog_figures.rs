//! The transparency log: appends against raw SHA-256 and against Go's
//! sumdb/tlog; proofs against Go's sumdb/tlog (the oracle's `bench-tlog`).

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use tlog::{LeafHash, MemoryHashStore};

use crate::measure::{Figure, Unit, alternate, rate};

/// The leaf the Go side uses too: the index big-endian, then zeros.
fn leaf(i: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    if let Some(head) = out.get_mut(..8) {
        head.copy_from_slice(&i.to_be_bytes());
    }
    out
}

fn ours_append(size: u64) -> MemoryHashStore {
    let mut store = MemoryHashStore::new();
    for i in 0..size {
        store.append(LeafHash::of(&leaf(i)));
    }
    store
}

/// What an append cannot avoid: the leaf hash and one interior hash.
fn raw_sha256(size: u64) -> [u8; 32] {
    let mut acc = [0u8; 32];
    for i in 0..size {
        let mut data = [0u8; 33];
        if let Some(tail) = data.get_mut(1..) {
            tail.copy_from_slice(&leaf(i));
        }
        let leaf_hash: [u8; 32] = Sha256::digest(data).into();
        let mut hasher = Sha256::new();
        hasher.update([1u8]);
        hasher.update(acc);
        hasher.update(leaf_hash);
        acc = hasher.finalize().into();
    }
    acc
}

struct GoRound {
    append_ns_per_leaf: f64,
    inclusion_ns: f64,
    consistency_ns: f64,
}

fn go_round(oracle: &Path, bits: u32, iterations: u64) -> Result<GoRound> {
    let out = Command::new(oracle)
        .args(["bench-tlog", &bits.to_string(), &iterations.to_string()])
        .output()
        .with_context(|| format!("running {} bench-tlog", oracle.display()))?;
    if !out.status.success() {
        bail!("oracle bench-tlog failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).context("oracle bench-tlog output")?;
    let number = |key: &str| value.get(key).and_then(serde_json::Value::as_f64).context(key.to_owned());
    Ok(GoRound {
        append_ns_per_leaf: number("append_ns_per_leaf")?,
        inclusion_ns: number("inclusion_ns")?,
        consistency_ns: number("consistency_ns")?,
    })
}

fn nanos_per(iterations: u64, mut work: impl FnMut() -> Result<()>) -> Result<f64> {
    let start = Instant::now();
    for _ in 0..iterations {
        work()?;
    }
    Ok(start.elapsed().as_nanos() as f64 / iterations as f64)
}

pub fn figures(rounds: usize, bits: u32, oracle: Option<&Path>) -> Result<Vec<Figure>> {
    let size = 1u64 << bits;
    let mut out = Vec::new();
    let (ours, raw) = alternate(
        rounds,
        || {
            rate(size, || {
                black_box(ours_append(size).size());
                Ok(())
            })
        },
        || {
            rate(size, || {
                black_box(raw_sha256(size));
                Ok(())
            })
        },
    )?;
    out.push(Figure {
        name: format!("tlog append, nodes stored, 2^{bits} leaves"),
        ours,
        baseline_name: "raw SHA-256, two hashes per leaf".into(),
        baseline: raw,
        unit: Unit::PerSecond("leaves"),
        bar: None,
        rounds,
    });
    let Some(oracle) = oracle else { return Ok(out) };

    let store = ours_append(size);
    let (index, old) = (size / 3, size / 2 + 1);
    let iterations = if bits >= 16 { 20_000 } else { 1_000 };
    let mut go = Vec::new();
    let mut ours_rounds = Vec::new();
    for _ in 0..rounds {
        go.push(go_round(oracle, bits, iterations)?);
        let append = {
            let start = Instant::now();
            black_box(ours_append(size).size());
            start.elapsed().as_nanos() as f64 / size as f64
        };
        let inclusion = nanos_per(iterations, || {
            black_box(store.prove_inclusion(black_box(index), size)?);
            Ok(())
        })?;
        let consistency = nanos_per(iterations, || {
            black_box(store.prove_consistency(black_box(old), size)?);
            Ok(())
        })?;
        ours_rounds.push((append, inclusion, consistency));
    }
    let median = crate::measure::median;
    let pick = |f: fn(&(f64, f64, f64)) -> f64| median(ours_rounds.iter().map(f).collect());
    let go_pick = |f: fn(&GoRound) -> f64| median(go.iter().map(f).collect());
    for (name, ours, theirs) in [
        (
            format!("tlog append, nodes stored, 2^{bits} leaves, per leaf"),
            pick(|r| r.0),
            go_pick(|g| g.append_ns_per_leaf),
        ),
        (format!("tlog inclusion proof at 2^{bits}"), pick(|r| r.1), go_pick(|g| g.inclusion_ns)),
        (format!("tlog consistency proof at 2^{bits}"), pick(|r| r.2), go_pick(|g| g.consistency_ns)),
    ] {
        out.push(Figure {
            name,
            ours,
            baseline_name: "Go sumdb/tlog".into(),
            baseline: theirs,
            unit: Unit::Nanos,
            bar: None,
            rounds,
        });
    }
    Ok(out)
}
