//! R-RUN-5: two processes resume one run at once on one database (two
//! stores, two runtimes): the effect each resumed code asks for is
//! performed once, by the one whose `EffectStarted` the database took; the
//! other is told of the conflict before it performs anything.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier};

use journal_core::{
    Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, Origin, RunStatus, Runtime, RuntimeBuilder,
    TenantId,
};
use store_pg::PgStore;

fn runtime(url: &str) -> Runtime {
    let store = Arc::new(PgStore::open(url).unwrap());
    RuntimeBuilder::new(store)
        .tenant(TenantId::new("t").unwrap(), Origin::new("pg.test/resume-race").unwrap(), None)
        .build()
        .unwrap()
}

#[test]
fn r_run_5_two_processes_resuming_one_run_perform_its_effect_once() {
    let url = store_pg::testkit::fresh_database();
    let runtimes = [runtime(&url), runtime(&url)];
    let tenant = TenantId::new("t").unwrap();
    for round in 0..20 {
        let key = format!("race-{round}");
        let request =
            AdmitRequest { idempotency_key: key.clone(), plan: vec!["work".into()], budget: Budget::default() };
        let run = match runtimes[0].admit(&tenant, request).unwrap() {
            Admission::New(mut handle) => {
                handle.start_step("work").unwrap();
                handle.run().clone()
            }
            Admission::Existing { run, .. } => panic!("{run} exists"),
        };
        let performed = AtomicU32::new(0);
        let barrier = Barrier::new(2);
        std::thread::scope(|scope| {
            for runtime in &runtimes {
                let (tenant, run, performed, barrier) = (&tenant, &run, &performed, &barrier);
                scope.spawn(move || {
                    let resumed = runtime.resume(tenant, run);
                    barrier.wait();
                    let Ok(mut handle) = resumed else { return };
                    let paid = handle.effect("ek:pay", "work", || {
                        performed.fetch_add(1, Ordering::SeqCst);
                        EffectOutput {
                            result: EffectResult::Ok { output: "paid".into() },
                            charged: Counters::default(),
                        }
                    });
                    if paid.is_ok() {
                        let _ = handle.succeed("paid");
                    }
                });
            }
        });
        assert_eq!(performed.load(Ordering::SeqCst), 1, "round {round}: the payment ran twice or never");
        assert_eq!(runtimes[1].status(&tenant, &run).unwrap(), RunStatus::Succeeded, "round {round}");
    }
}
