//! Issue 21 on the embedded default: audits beside a running plane. Four
//! appender threads admit, run and seal runs (and leave some failed) while
//! the plane signs checkpoints (heads leaves first) and an auditor audits
//! back to back, each audit over one read transaction: at least 50 audits
//! run during the writes and every one is clean, with every checkpoint the
//! plane signed so far as an anchor. Then a sealed run deleted behind the
//! store, with the log rewritten densely, is found against those anchors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use journal_core::testkit::TamperAccess as _;
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, Origin, RuntimeBuilder, Store, TenantId,
};
use store_redb::RedbStore;
use witness::{ALG_ED25519, LogKey, SignerKey};

const APPENDERS: u32 = 4;
const ORIGIN: &str = "live.test/plane/t";

#[path = "../../../tests/shared/anchors.rs"]
mod anchors;

fn inputs(store: &RedbStore, tenant: &TenantId, origin: &Origin, key: &LogKey) -> audit::AuditInputs {
    anchors::anchored_on_every_signed_checkpoint(store, tenant, origin, key)
}

#[test]
fn r_aud_1_fifty_audits_beside_a_writing_plane_are_all_clean_then_a_deletion_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(RedbStore::create(&dir.path().join("journal.redb")).unwrap());
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [6; 32]).unwrap()).unwrap();
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant.clone(), origin.clone(), Some(key.clone()))
        .build()
        .unwrap();
    let audits = AtomicU32::new(0);
    let done = AtomicBool::new(false);
    // Set when an audit has findings: the writers stop, the test fails.
    let failed = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let auditor = scope.spawn(|| {
            while !done.load(Ordering::Relaxed) || audits.load(Ordering::Relaxed) < 50 {
                let report = audit::audit(store.as_ref(), &inputs(&store, &tenant, &origin, &key)).unwrap();
                if !report.is_clean() {
                    failed.store(true, Ordering::Relaxed);
                    panic!("an audit of the live plane: {:#?}", report.findings);
                }
                if !done.load(Ordering::Relaxed) {
                    audits.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let signer = scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                journal_core::log::sign_current_head(store.as_ref(), &tenant, &origin, &key, None).unwrap();
            }
        });
        let appenders: Vec<_> = (0..APPENDERS)
            .map(|a| {
                let (runtime, tenant, audits, failed) = (&runtime, &tenant, &audits, &failed);
                scope.spawn(move || {
                    let mut n = 0;
                    // Write until the auditor has audited 50 times meanwhile.
                    while (audits.load(Ordering::Relaxed) < 50 || n < 20) && !failed.load(Ordering::Relaxed) {
                        let request = AdmitRequest {
                            idempotency_key: format!("a{a}-{n}"),
                            plan: vec!["work".into()],
                            budget: Budget::default(),
                        };
                        let Admission::New(mut run) = runtime.admit(tenant, request).unwrap() else { panic!() };
                        run.start_step("work").unwrap();
                        let fails = n % 3 == 0;
                        let _ = run.effect("ek:work", "work", || EffectOutput {
                            result: if fails {
                                EffectResult::Err { error: "503".into() }
                            } else {
                                EffectResult::Ok { output: format!("{a}-{n}") }
                            },
                            charged: Counters { tokens: 1, ..Counters::default() },
                        });
                        if !fails {
                            run.finish_step("work").unwrap();
                            run.succeed("done").unwrap();
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        for appender in appenders {
            appender.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        signer.join().unwrap();
        auditor.join().unwrap();
    });
    assert!(audits.load(Ordering::Relaxed) >= 50);

    // Then a careful hider deletes the oldest sealed run and rewrites the log densely.
    journal_core::log::sign_current_head(store.as_ref(), &tenant, &origin, &key, None).unwrap();
    let anchored = inputs(&store, &tenant, &origin, &key);
    let seals = store.seals(&tenant).unwrap();
    let victim = seals.iter().find(|seal| !seal.run.is_heads_leaf()).unwrap().run.clone();
    store.delete_run(&tenant, &victim);
    let kept: Vec<_> =
        seals.into_iter().filter(|seal| seal.run != victim).map(|seal| (seal.run, seal.leaf_bytes)).collect();
    store.rewrite_log(&tenant, &kept);
    let report = audit::audit(store.as_ref(), &anchored).unwrap();
    assert!(
        report.findings.iter().any(|f| f.class == audit::FindingClass::Deletion),
        "the deletion is found against the anchors: {:#?}",
        report.findings
    );
}
