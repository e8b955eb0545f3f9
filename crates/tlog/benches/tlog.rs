//! `cargo bench -p agentplane-tlog`: appends, proofs from stored nodes at
//! n = 2^10, 2^16, 2^20, verification, raw SHA-256 as the baseline, and the
//! same operations in ct-merkle for comparison.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, missing_docs)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ct_merkle::mem_backed_tree::MemoryBackedTree;
use sha2::{Digest, Sha256};
use tlog::{Frontier, LeafHash, MemoryHashStore, Tree};

const APPEND_BATCH: u64 = 1 << 14;
const SIZES: [u32; 3] = [10, 16, 20];

fn entry(i: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    out[..8].copy_from_slice(&i.to_be_bytes());
    out
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("append");
    group.throughput(Throughput::Elements(APPEND_BATCH));
    group.bench_function("raw sha256, two hashes per leaf", |b| {
        b.iter(|| {
            let mut acc = [0u8; 32];
            for i in 0..APPEND_BATCH {
                let mut leaf = [0u8; 33];
                leaf[1..].copy_from_slice(&entry(i));
                let leaf_hash: [u8; 32] = Sha256::digest(leaf).into();
                let mut node = [1u8; 65];
                node[1..33].copy_from_slice(&acc);
                node[33..].copy_from_slice(&leaf_hash);
                acc = Sha256::digest(node).into();
            }
            black_box(acc)
        })
    });
    group.bench_function("tlog Frontier::append", |b| {
        b.iter(|| {
            let mut frontier = Frontier::new();
            for i in 0..APPEND_BATCH {
                frontier.append(LeafHash::of(&entry(i))).unwrap();
            }
            black_box(frontier.size())
        })
    });
    group.bench_function("tlog MemoryHashStore::append (stores nodes)", |b| {
        b.iter(|| {
            let mut store = MemoryHashStore::new();
            for i in 0..APPEND_BATCH {
                store.append(LeafHash::of(&entry(i)));
            }
            black_box(store.size())
        })
    });
    group.bench_function("ct-merkle push", |b| {
        b.iter(|| {
            let mut tree = MemoryBackedTree::<Sha256, [u8; 32]>::new();
            for i in 0..APPEND_BATCH {
                tree.push(entry(i));
            }
            black_box(tree.len())
        })
    });
    group.finish();
}

fn proofs(c: &mut Criterion) {
    for bits in SIZES {
        let size = 1u64 << bits;
        let mut ours = MemoryHashStore::new();
        let mut theirs = MemoryBackedTree::<Sha256, [u8; 32]>::new();
        for i in 0..size {
            ours.append(LeafHash::of(&entry(i)));
            theirs.push(entry(i));
        }
        let tree = ours.tree();
        let index = size / 3;
        let old_size = size / 2 + 1;
        let older = Tree::new(old_size, tlog::tree_root(&ours, old_size).unwrap());
        let inclusion = ours.prove_inclusion(index, size).unwrap();
        let consistency = ours.prove_consistency(old_size, size).unwrap();
        let leaf = LeafHash::of(&entry(index));

        let their_root = theirs.root();
        let their_inclusion = theirs.prove_inclusion(index as usize);
        let their_consistency = theirs.prove_consistency((size - old_size) as usize);
        let mut their_old = MemoryBackedTree::<Sha256, [u8; 32]>::new();
        for i in 0..old_size {
            their_old.push(entry(i));
        }
        let their_old_root = their_old.root();

        let mut group = c.benchmark_group(format!("n=2^{bits}"));
        group.bench_function(BenchmarkId::new("inclusion proof", "tlog"), |b| {
            b.iter(|| ours.prove_inclusion(black_box(index), size).unwrap())
        });
        group.bench_function(BenchmarkId::new("inclusion proof", "ct-merkle"), |b| {
            b.iter(|| theirs.prove_inclusion(black_box(index as usize)))
        });
        group.bench_function(BenchmarkId::new("consistency proof", "tlog"), |b| {
            b.iter(|| ours.prove_consistency(black_box(old_size), size).unwrap())
        });
        group.bench_function(BenchmarkId::new("consistency proof", "ct-merkle"), |b| {
            b.iter(|| theirs.prove_consistency(black_box((size - old_size) as usize)))
        });
        group.bench_function(BenchmarkId::new("verify inclusion", "tlog"), |b| {
            b.iter(|| tree.verify_inclusion(&leaf, black_box(index), &inclusion).unwrap())
        });
        group.bench_function(BenchmarkId::new("verify inclusion", "ct-merkle"), |b| {
            b.iter(|| their_root.verify_inclusion(&entry(index), black_box(index), &their_inclusion).unwrap())
        });
        group.bench_function(BenchmarkId::new("verify consistency", "tlog"), |b| {
            b.iter(|| tree.verify_extends(black_box(&older), &consistency).unwrap())
        });
        group.bench_function(BenchmarkId::new("verify consistency", "ct-merkle"), |b| {
            b.iter(|| their_root.verify_consistency(black_box(&their_old_root), &their_consistency).unwrap())
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = append, proofs
}
criterion_main!(benches);
