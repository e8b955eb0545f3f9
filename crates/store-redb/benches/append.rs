//! `cargo bench -p agentplane-store-redb`: records appended per second with
//! 1, 8 and 64 concurrent runs (each appender on its own run, every append
//! durable before it returns), beside raw redb inserting the same bytes in
//! transactions of the same size (what group commit achieves at best).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use journal_core::record::StepMark;
use journal_core::{Journal, RecordBody, RunId, TenantId};
use redb::{Database, TableDefinition};
use store_redb::RedbStore;

const RECORDS_PER_RUN: u64 = 16;
const RAW: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("raw");

fn journal_appends(concurrency: usize, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for round in 0..iters {
        let store = Arc::new(RedbStore::temporary().unwrap());
        let tenant = TenantId::new("bench").unwrap();
        let start = Instant::now();
        std::thread::scope(|scope| {
            for n in 0..concurrency {
                let store = Arc::clone(&store);
                let tenant = tenant.clone();
                scope.spawn(move || {
                    let origin = journal_core::Origin::new("bench.test/plane").unwrap();
                    let journal = Journal::new(store.as_ref(), &tenant, &origin);
                    let run = RunId::new(&format!("run-{round}-{n}")).unwrap();
                    let mut head = None;
                    for i in 0..RECORDS_PER_RUN {
                        let body = RecordBody::StepStarted(StepMark { step: format!("step {i}") });
                        head = Some(journal.append(&run, head, None, body).unwrap().head);
                    }
                });
            }
        });
        total += start.elapsed();
    }
    total
}

fn raw_inserts(concurrency: usize, iters: u64) -> Duration {
    let record = br#"{"kind":"StepStarted","v":1,"run":"run-0-0","seq":1,"effect_key":null,"build":{"name":"agentplane-journal-core","version":"0.1.0"},"body":{"step":"step 1"}}"#;
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("raw.redb")).unwrap();
        let start = Instant::now();
        // The same records in transactions of `concurrency` records each.
        for seq in 0..RECORDS_PER_RUN {
            let txn = db.begin_write().unwrap();
            {
                let mut table = txn.open_table(RAW).unwrap();
                for n in 0..concurrency {
                    table.insert((format!("run-{n}").as_str(), seq), record.as_slice()).unwrap();
                }
            }
            txn.commit().unwrap();
        }
        total += start.elapsed();
    }
    total
}

fn appends(c: &mut Criterion) {
    let mut group = c.benchmark_group("durable appends");
    group.sample_size(10).warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_secs(3));
    for concurrency in [1usize, 8, 64] {
        group.throughput(Throughput::Elements(concurrency as u64 * RECORDS_PER_RUN));
        group.bench_with_input(BenchmarkId::new("journal (RedbStore)", concurrency), &concurrency, |b, &k| {
            b.iter_custom(|iters| journal_appends(k, iters))
        });
        group.bench_with_input(BenchmarkId::new("raw redb, same batches", concurrency), &concurrency, |b, &k| {
            b.iter_custom(|iters| raw_inserts(k, iters))
        });
    }
    group.finish();
}

criterion_group!(benches, appends);
criterion_main!(benches);
