//! Issue 20 as a property (R-AUD-3, R-AUD-5): for random planes (runs
//! sealed, failed, or left running after effects) and a random edit made
//! behind the store after the plane signed a checkpoint an observer saved:
//! a cut back to any earlier record, a run deleted outright, or a record's
//! bytes rewritten below its covered head, of any covered run that is not
//! sealed: the audit against the saved checkpoint always finds it, naming
//! the run. `cargo xtask soak` runs it with PROPTEST_CASES=10000. (The
//! algorithm is the audit's own; the store here is the in-memory reference,
//! whose tamper access writes behind it like a file edit, so ten thousand
//! planes fit in a test run. The same attacks on redb files are in
//! `coverage.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::Arc;

use audit::AuditInputs;
use journal_core::testkit::TamperAccess as _;
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, ExpectedHead, MemoryStore, Origin, RunId,
    RuntimeBuilder, Store as _, TenantId,
};
use proptest::prelude::*;
use witness::{ALG_ED25519, LogKey, SignerKey};

const ORIGIN: &str = "props.test/plane/t";

/// `default` cases, or `PROPTEST_CASES` when set (`cargo xtask soak` sets 10000).
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(default)
}

/// How a run of the plane ends.
#[derive(Debug, Clone, Copy)]
enum Ending {
    Sealed,
    Failed,
    Running,
}

#[derive(Debug, Clone, Copy)]
enum Edit {
    /// Cut back to keep this fraction (per mille) of the records, at least one.
    CutBack(u16),
    DeleteRun,
    /// Rewrite the bytes of a record (per mille of its length) below the head.
    Rewrite(u16),
}

fn ending() -> impl Strategy<Value = Ending> {
    prop_oneof![Just(Ending::Sealed), Just(Ending::Failed), Just(Ending::Running)]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![(0u16..1000).prop_map(Edit::CutBack), Just(Edit::DeleteRun), (0u16..1000).prop_map(Edit::Rewrite)]
}

struct Plane {
    store: Arc<MemoryStore>,
    tenant: TenantId,
    origin: Origin,
    log_key: LogKey,
}

fn plane(runs: &[(Ending, u8)]) -> (Plane, Vec<(RunId, Ending)>) {
    let store = Arc::new(MemoryStore::new());
    let tenant = TenantId::new("t").unwrap();
    let origin = Origin::new(ORIGIN).unwrap();
    let log_key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [4; 32]).unwrap()).unwrap();
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn journal_core::Store>)
        .tenant(tenant.clone(), origin.clone(), Some(log_key.clone()))
        .build()
        .unwrap();
    let mut made = Vec::new();
    for (i, (ending, effects)) in runs.iter().enumerate() {
        let request =
            AdmitRequest { idempotency_key: format!("job-{i}"), plan: vec!["work".into()], budget: Budget::default() };
        let Admission::New(mut run) = runtime.admit(&tenant, request).unwrap() else { panic!("new") };
        run.start_step("work").unwrap();
        for e in 0..*effects {
            run.effect(&format!("ek:{i}-{e}"), "work", || EffectOutput {
                result: EffectResult::Ok { output: format!("{i}-{e}") },
                charged: Counters { tokens: 1, ..Counters::default() },
            })
            .unwrap();
        }
        let id = run.run().clone();
        match ending {
            Ending::Sealed => {
                run.finish_step("work").unwrap();
                run.succeed("done").unwrap();
            }
            Ending::Failed => {
                let _ = run.effect("ek:fails", "work", || EffectOutput {
                    result: EffectResult::Err { error: "503".into() },
                    charged: Counters::default(),
                });
            }
            Ending::Running => {}
        }
        made.push((id, *ending));
    }
    (Plane { store, tenant, origin, log_key }, made)
}

fn apply(plane: &Plane, run: &RunId, edit: Edit) {
    let rows = plane.store.read_run(&plane.tenant, run).unwrap().rows;
    let len = rows.len();
    match edit {
        Edit::CutBack(per_mille) => {
            // Keep between 1 and len - 1 records.
            let keep = 1 + (usize::from(per_mille) * (len - 1)) / 1000;
            let keep = keep.min(len - 1).max(1);
            for row in rows.iter().filter(|row| row.seq as usize > keep) {
                plane.store.delete_record(&plane.tenant, run, row.seq);
            }
            let kept = &rows[keep - 1];
            plane.store.set_runs_head(&plane.tenant, run, ExpectedHead { seq: kept.seq, hash: kept.hash });
            plane.store.set_outcome_index(&plane.tenant, run, None);
        }
        Edit::DeleteRun => plane.store.delete_run(&plane.tenant, run),
        Edit::Rewrite(per_mille) => {
            let index = (usize::from(per_mille) * len) / 1000;
            let row = &rows[index.min(len - 1)];
            let mut bytes = row.bytes.clone();
            let at = (usize::from(per_mille) * bytes.len()) / 1000;
            let at = at.min(bytes.len() - 1);
            bytes[at] ^= 0x20;
            plane.store.overwrite_record_bytes(&plane.tenant, run, row.seq, bytes);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(64)))]

    #[test]
    fn r_aud_3_every_edit_of_a_covered_run_is_found(
        runs in proptest::collection::vec((ending(), 0u8..4), 1..6),
        pick in any::<prop::sample::Index>(),
        edit in edit(),
    ) {
        let (plane, made) = plane(&runs);
        let open: Vec<&RunId> = made.iter().filter(|(_, e)| !matches!(e, Ending::Sealed)).map(|(r, _)| r).collect();
        prop_assume!(!open.is_empty());
        let (_, signed) = journal_core::log::sign_current_head(
            plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.log_key, None,
        ).unwrap();
        let mut inputs = AuditInputs::new(plane.tenant.clone(), plane.origin.clone());
        inputs.log_keys = vec![plane.log_key.verifier_key()];
        inputs.anchors.push(
            audit::Anchor::saved("saved", signed.note().as_bytes(), &[plane.log_key.verifier_key()], &plane.origin)
                .unwrap(),
        );
        let clean = audit::audit(plane.store.as_ref(), &inputs).unwrap();
        prop_assert!(clean.is_clean(), "{:#?}", clean.findings);
        prop_assert!(clean.assert_complete().is_ok() || !clean.not_checked.is_empty());

        let victim = open[pick.index(open.len())].clone();
        apply(&plane, &victim, edit);
        let report = audit::audit(plane.store.as_ref(), &inputs).unwrap();
        prop_assert!(
            report.findings.iter().any(|f| f.run.as_deref() == Some(victim.as_str())),
            "{edit:?} of {victim} was not found: {:#?}", report.findings
        );
    }
}
