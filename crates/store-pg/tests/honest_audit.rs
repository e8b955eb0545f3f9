//! R-AUD-7, R-AUD-5 (hostile review 61, the false alarm): an honest plane of
//! two tenants on PostgreSQL (a log key is Ed25519: `LogKey` takes no other), whose runs are
//! forked, exhausted and raised, withheld and lifted, resumed, sealed and
//! left open, on several connections at once, while both tenants' heads are
//! signed again and again. Audits meanwhile, anchored on every checkpoint
//! signed so far and with the smallest `--max-run-bytes`, report no finding
//! on either tenant.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use journal_core::{
    Admission, AdmitRequest, Budget, Counters, Dimension, EffectOutput, EffectResult, Origin, Runtime, RuntimeBuilder,
    Store, TenantId,
};
use store_pg::PgStore;
use witness::{ALG_ED25519, LogKey, SignerKey};

type Mark = journal_core::testkit::MemoryHighWater;

#[path = "../../../tests/shared/anchors.rs"]
mod anchors;

struct Tenant {
    id: TenantId,
    origin: Origin,
    key: LogKey,
}

fn tenants() -> Vec<Tenant> {
    [("alpha", "honest.test/alpha", ALG_ED25519), ("beta", "honest.test/beta", ALG_ED25519)]
        .into_iter()
        .map(|(id, origin, alg)| Tenant {
            id: TenantId::new(id).unwrap(),
            origin: Origin::new(origin).unwrap(),
            key: LogKey::new(SignerKey::from_seed(origin, alg, [7; 32]).unwrap()).unwrap(),
        })
        .collect()
}

fn output(tokens: u64) -> impl FnOnce() -> EffectOutput {
    move || EffectOutput {
        result: EffectResult::Ok { output: format!("{tokens}") },
        charged: Counters { tokens, ..Counters::default() },
    }
}

/// One honest worker's runs, `n` the round: each kind of life a run has.
fn work(runtime: &Runtime, tenant: &TenantId, w: usize, n: usize) {
    let admit = |key: String, budget: Budget| {
        let request = AdmitRequest { idempotency_key: key, plan: vec!["work".into()], budget };
        match runtime.admit(tenant, request).unwrap() {
            Admission::New(run) => *run,
            Admission::Existing { run, .. } => panic!("{run} admitted twice"),
        }
    };
    // Sealed, then forked after its first effect and the fork sealed.
    let mut run = admit(format!("w{w}-{n}-sealed"), Budget::default());
    run.start_step("work").unwrap();
    run.effect("ek:a", "work", output(1)).unwrap();
    run.effect("ek:b", "work", output(1)).unwrap();
    run.finish_step("work").unwrap();
    let source = run.run().clone();
    run.succeed("done").unwrap();
    let request = AdmitRequest {
        idempotency_key: format!("w{w}-{n}-fork"),
        plan: vec!["work".into()],
        budget: Budget::default(),
    };
    let at = runtime.status(tenant, &source).map(|_| 3).unwrap();
    if let Admission::New(mut fork) = runtime.fork(tenant, &source, at, request).unwrap() {
        fork.start_step("work").unwrap();
        fork.effect("ek:a", "work", output(1)).unwrap();
        fork.effect("ek:c", "work", output(1)).unwrap();
        if n.is_multiple_of(2) { fork.succeed("forked").unwrap() } else { fork.fail("forked, failed").unwrap() }
    }
    // Exhausted, raised, resumed.
    let mut run = admit(format!("w{w}-{n}-exhausted"), Budget { tokens: Some(2), ..Budget::default() });
    run.start_step("work").unwrap();
    let over = run.effect("ek:big", "work", output(5));
    assert!(over.is_err(), "the ceiling held");
    let id = run.run().clone();
    drop(run);
    runtime.raise_ceiling(tenant, &id, Dimension::Tokens, Some(100)).unwrap();
    let mut run = runtime.resume(tenant, &id).unwrap();
    run.effect("ek:after", "work", output(1)).unwrap();
    if n.is_multiple_of(3) {
        run.succeed("raised").unwrap();
    }
    // Withheld, lifted, resumed, left open.
    let mut run = admit(format!("w{w}-{n}-withheld"), Budget::default());
    run.start_step("work").unwrap();
    run.effect("ek:x", "work", output(1)).unwrap();
    let id = run.run().clone();
    drop(run);
    runtime.withhold(tenant, &id, "looking").unwrap();
    runtime.lift(tenant, &id, "fine").unwrap();
    let mut run = runtime.resume(tenant, &id).unwrap();
    run.effect("ek:y", "work", output(1)).unwrap();
    if n % 2 == 1 {
        runtime.cancel(tenant, &id, "enough").unwrap();
    }
}

#[test]
fn r_aud_7_an_honest_plane_of_every_kind_of_run_audits_clean_while_it_writes_and_signs() {
    let url = store_pg::testkit::fresh_database();
    let tenants = tenants();
    // One mark per origin: the memory mark keeps one tree whatever the origin.
    let marks = [Mark::default(), Mark::default()];
    let done = AtomicBool::new(false);
    let failed = AtomicBool::new(false);
    let audits = AtomicU32::new(0);
    let signings = AtomicU32::new(0);
    std::thread::scope(|scope| {
        let auditors: Vec<_> = (0..2)
            .map(|a| {
                let (url, tenants, done, failed, audits) = (&url, &tenants, &done, &failed, &audits);
                scope.spawn(move || {
                    let store = PgStore::open(url).unwrap();
                    let mut i = a;
                    while !done.load(Ordering::Relaxed) && !failed.load(Ordering::Relaxed) {
                        let t = &tenants[i % 2];
                        i += 1;
                        let mut inputs = anchors::anchored_on_every_signed_checkpoint(&store, &t.id, &t.origin, &t.key);
                        if i.is_multiple_of(3) {
                            inputs.max_run_bytes = 1 << 20;
                        }
                        let report = audit::audit(&store, &inputs).unwrap();
                        if !report.is_clean() {
                            failed.store(true, Ordering::Relaxed);
                            panic!("an audit of tenant {} of the live plane: {:#?}", t.id, report.findings);
                        }
                        audits.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        let signer = {
            let (url, tenants, done, failed, signings, marks) = (&url, &tenants, &done, &failed, &signings, &marks);
            scope.spawn(move || {
                let store = PgStore::open(url).unwrap();
                while !done.load(Ordering::Relaxed) && !failed.load(Ordering::Relaxed) {
                    for (t, mark) in tenants.iter().zip(marks) {
                        if let Err(err) =
                            journal_core::log::sign_current_head(&store, &t.id, &t.origin, &t.key, Some(mark))
                        {
                            failed.store(true, Ordering::Relaxed);
                            panic!("signing a healthy plane was refused: {err}");
                        }
                        signings.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        };
        let workers: Vec<_> = (0..3)
            .map(|w| {
                let (url, tenants, failed) = (&url, &tenants, &failed);
                scope.spawn(move || {
                    let store = Arc::new(PgStore::open(url).unwrap());
                    let mut builder = RuntimeBuilder::new(store as Arc<dyn Store>);
                    for t in tenants {
                        builder = builder.tenant(t.id.clone(), t.origin.clone(), Some(t.key.clone()));
                    }
                    let runtime = builder.build().unwrap();
                    for n in 0..12 {
                        if failed.load(Ordering::Relaxed) {
                            return;
                        }
                        work(&runtime, &tenants[(w + n) % 2].id, w, n);
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        signer.join().unwrap();
        for auditor in auditors {
            auditor.join().unwrap();
        }
    });
    let (signings, audits) = (signings.load(Ordering::Relaxed), audits.load(Ordering::Relaxed));
    assert!(signings > 0 && audits > 0, "{signings} signings and {audits} audits ran beside the writes");
    eprintln!("{signings} signings and {audits} audits ran beside the writes");
    let store = PgStore::open(&url).unwrap();
    for (t, mark) in tenants.iter().zip(&marks) {
        journal_core::log::sign_current_head(&store, &t.id, &t.origin, &t.key, Some(mark)).unwrap();
        let mut inputs = anchors::anchored_on_every_signed_checkpoint(&store, &t.id, &t.origin, &t.key);
        inputs.max_run_bytes = 1 << 20;
        let report = audit::audit(&store, &inputs).unwrap();
        assert!(report.is_clean(), "{:#?}", report.findings);
        assert!(report.not_checked.iter().all(|n| !n.what.contains("open runs")), "{:#?}", report.not_checked);
    }
}

/// The boundary cases of the same review: an empty plane anchored on its
/// checkpoint of size 0, then one open run (its heads leaf signed, an anchor
/// equal to the log), audit with no finding, at the smallest
/// `--max-run-bytes` too.
#[test]
fn r_aud_7_an_empty_plane_and_one_open_run_audit_with_no_finding_under_anchors_of_size_0_and_of_the_log() {
    let url = store_pg::testkit::fresh_database();
    let t = &tenants()[0];
    let mark = Mark::default();
    let store = Arc::new(PgStore::open(&url).unwrap());
    let empty = journal_core::log::sign_current_head(store.as_ref(), &t.id, &t.origin, &t.key, Some(&mark)).unwrap();
    assert_eq!(empty.1.checkpoint().tree().size, 0);
    let audit_all = |store: &PgStore| {
        for max_run_bytes in [1 << 20, audit::DEFAULT_MAX_RUN_BYTES] {
            let mut inputs = anchors::anchored_on_every_signed_checkpoint(store, &t.id, &t.origin, &t.key);
            inputs.max_run_bytes = max_run_bytes;
            let report = audit::audit(store, &inputs).unwrap();
            assert!(report.is_clean(), "{:#?}", report.findings);
        }
    };
    audit_all(&store);
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(t.id.clone(), t.origin.clone(), Some(t.key.clone()))
        .build()
        .unwrap();
    let request = AdmitRequest { idempotency_key: "one".into(), plan: vec!["work".into()], budget: Budget::default() };
    let Admission::New(_) = runtime.admit(&t.id, request).unwrap() else { panic!("admitted before") };
    audit_all(&store);
    journal_core::log::sign_current_head(store.as_ref(), &t.id, &t.origin, &t.key, Some(&mark)).unwrap();
    audit_all(&store);
}
