//! R-RUN-5 on PostgreSQL, checked sound by an attacker review: two processes
//! resume one run at once on one database (two stores, two runtimes), and
//! the effect each resumed code asks for is performed once, by the one whose
//! `EffectStarted` the database took; a run whose rows were deleted behind
//! the store is never admitted afresh over its records.
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

/// R-RUN-5: a writer without the key deletes an open run's runs row and its
/// idempotency row, leaving its records; a second admission of the same
/// request (the same derived run id) is refused, its effect not performed
/// again, the run's records untouched (the records' primary key holds).
#[test]
fn r_run_5_a_readmission_never_overwrites_a_run_whose_rows_were_deleted() {
    use journal_core::Store as _;
    use journal_core::testkit::TamperAccess as _;
    let url = store_pg::testkit::fresh_database();
    let tenant = TenantId::new("t").unwrap();
    let paid = AtomicU32::new(0);
    let admit_and_pay = |runtime: &Runtime| -> Result<(), journal_core::RuntimeError> {
        let request =
            AdmitRequest { idempotency_key: "order-7".into(), plan: vec!["work".into()], budget: Budget::default() };
        let Admission::New(mut run) = runtime.admit(&tenant, request)? else { return Ok(()) };
        run.effect("ek:pay", "work", || {
            paid.fetch_add(1, Ordering::SeqCst);
            EffectOutput { result: EffectResult::Ok { output: "paid".into() }, charged: Counters::default() }
        })?;
        Ok(())
    };
    admit_and_pay(&runtime(&url)).unwrap();
    let run = Runtime::run_id_for(&tenant, "order-7").unwrap();
    let store = PgStore::open(&url).unwrap();
    let before = store.read_run(&tenant, &run).unwrap().rows;
    store.delete_runs_row(&tenant, &run);
    let mut client = store_pg::testkit::connect_declared(&url);
    client.execute("DELETE FROM idempotency WHERE tenant = 't' AND key = 'order-7'", &[]).unwrap();

    let again = admit_and_pay(&runtime(&url));
    assert_eq!(paid.load(Ordering::SeqCst), 1, "the payment ran again: {again:?}");
    assert!(again.is_err(), "the admission is refused: {again:?}");
    let asked: Vec<_> = (1..=before.len() as u64 + 1).map(|seq| (run.clone(), seq)).collect();
    let mut expected: Vec<_> = before.iter().map(|row| Some(row.hash)).collect();
    expected.push(None);
    assert_eq!(store.stored_hashes(&tenant, &asked).unwrap(), expected, "the run's records were overwritten");
}
