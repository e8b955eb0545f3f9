//! Forks with provenance: a run forked from the middle of another performs
//! only the effects after the fork point; its provenance verifies; once its
//! source is deleted behind the store, the audit names the orphaned fork.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use std::cell::RefCell;

use audit::{FindingClass, FindingCode};
use journal_core::testkit::TamperAccess;
use journal_core::{Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, Store};
use support::*;

fn three_effects(run: &mut journal_core::RunHandle<'_>, performed: &RefCell<Vec<String>>) {
    for key in ["ek:a", "ek:b", "ek:c"] {
        run.effect(key, "work", || {
            performed.borrow_mut().push(key.to_owned());
            EffectOutput {
                result: EffectResult::Ok { output: key.into() },
                charged: Counters { tokens: 1, ..Counters::default() },
            }
        })
        .unwrap();
    }
}

/// What a run of this file is admitted with, under idempotency key `key`.
fn request(key: &str) -> AdmitRequest {
    AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget: Budget::default() }
}

/// A run sealed after its three effects (each pushed to `performed` as it
/// runs): its id and the seq of ek:b's record of completion, a fork point.
fn sealed_source_and_ek_b_done(plane: &Plane, performed: &RefCell<Vec<String>>) -> (journal_core::RunId, u64) {
    let Admission::New(mut source) = plane.runtime.admit(&plane.tenant, request("source")).unwrap() else { panic!() };
    let source_id = source.run().clone();
    three_effects(&mut source, performed);
    source.succeed("done").unwrap();
    let rows = plane.store.read_run(&plane.tenant, &source_id).unwrap().rows;
    let at_seq = rows.iter().find(|r| r.kind == "EffectDone" && r.effect_key.as_deref() == Some("ek:b")).unwrap().seq;
    (source_id, at_seq)
}

#[test]
fn a_fork_performs_only_what_follows_the_fork_point_and_its_provenance_is_audited() {
    let plane = Plane::signed();
    let performed = RefCell::new(Vec::new());
    let (source_id, at_seq) = sealed_source_and_ek_b_done(&plane, &performed);
    assert_eq!(performed.borrow().len(), 3);
    performed.borrow_mut().clear();
    let Admission::New(mut fork) = plane.runtime.fork(&plane.tenant, &source_id, at_seq, request("fork")).unwrap()
    else {
        panic!()
    };
    let fork_id = fork.run().clone();
    three_effects(&mut fork, &performed);
    fork.succeed("done differently").unwrap();
    assert_eq!(*performed.borrow(), ["ek:c"], "the source's effects up to the fork point are served from its record");

    let fork_rows = plane.store.read_run(&plane.tenant, &fork_id).unwrap().rows;
    assert_eq!(fork_rows[1].kind, "RunForked", "the provenance follows RunAdmitted");
    let report = plane.audit(&plane.inputs());
    assert!(report.is_clean(), "{:#?}", report.findings);

    // The source deleted (and the log rewritten over it): the fork is an orphan.
    let rest = plane.seals_without(&source_id);
    plane.store.delete_run(&plane.tenant, &source_id);
    plane.store.rewrite_log(&plane.tenant, &rest);
    let report = plane.audit(&plane.inputs());
    assert_eq!(codes(&report), [FindingCode::ForkSourceMissing], "{:#?}", report.findings);
    assert_eq!(report.findings[0].run.as_deref(), Some(fork_id.as_str()));
    assert_eq!(report.findings[0].class, FindingClass::Deletion);
}

#[test]
fn a_fork_whose_source_record_changed_is_found() {
    let (plane, fork_id) = fork_of_a_rewritten_source(false);
    let report = plane.audit(&plane.inputs());
    assert!(
        report.with_code(FindingCode::ForkSourceChanged).any(|f| f.run.as_deref() == Some(fork_id.as_str())),
        "{:#?}",
        report.findings
    );
}

/// R-VER-4, R-AUD-2: a source rewritten behind the fork point, its last
/// record made one this build cannot read, is still held to the fork's
/// provenance: the linked hashes name the changed record, and the audit is
/// not "build skew only".
#[test]
fn r_ver_4_a_fork_whose_source_this_build_cannot_read_is_still_held_to_its_provenance() {
    let (plane, fork_id) = fork_of_a_rewritten_source(true);
    let mut inputs = plane.inputs();
    inputs.reader = journal_core::Build::new("agentplane-cli", "0.1.0");
    let report = plane.audit(&inputs);
    assert!(report.with_code(FindingCode::BuildSkew).next().is_some(), "{:#?}", report.findings);
    assert!(!report.only_build_skew(), "{:#?}", report.findings);
    assert!(
        report.with_code(FindingCode::ForkSourceChanged).any(|f| f.run.as_deref() == Some(fork_id.as_str())),
        "{:#?}",
        report.findings
    );
}

/// A fork at seq 2 of an open run, then the source's tail rewritten with a
/// consistent chain from seq 2 on (no key needed: the plane is unsigned);
/// `newer_last` also makes the last record a newer build's.
fn fork_of_a_rewritten_source(newer_last: bool) -> (Plane, journal_core::RunId) {
    let plane = Plane::unsigned();
    let source = plane.fail("source");
    let rows = plane.store.read_run(&plane.tenant, &source).unwrap().rows;
    let Admission::New(fork) = plane
        .runtime
        .fork(
            &plane.tenant,
            &source,
            2,
            AdmitRequest { idempotency_key: "fork".into(), plan: vec![], budget: Budget::default() },
        )
        .unwrap()
    else {
        panic!()
    };
    let fork_id = fork.run().clone();
    drop(fork);
    let mut prev = rows[0].hash;
    for (index, row) in rows.iter().enumerate().skip(1) {
        let mut text = String::from_utf8(row.bytes.clone()).unwrap().replace("\"work\"", "\"WORK\"");
        if newer_last && index + 1 == rows.len() {
            text = text.replace("\"version\":\"0.1.0\"}", "\"version\":\"9.9.9\"}").replacen(
                "\"body\":",
                "\"trace\":\"abc\",\"body\":",
                1,
            );
        }
        let bytes = text.into_bytes();
        let hash = journal_core::ChainHash::link(&prev, &bytes);
        plane.store.overwrite_row(
            &plane.tenant,
            &source,
            journal_core::StoredRecord { prev_hash: prev, hash, bytes, ..row.clone() },
        );
        prev = hash;
    }
    plane.store.set_runs_head(
        &plane.tenant,
        &source,
        journal_core::ExpectedHead { seq: rows.len() as u64, hash: prev },
    );
    (plane, fork_id)
}

/// A run of tenant `elsewhere` with three effects done, copied into
/// `plane`'s tenant behind the plane (its rows re-appended: no key
/// needed); its id and its rows.
fn copied_in_from_elsewhere(plane: &Plane) -> (journal_core::RunId, Vec<journal_core::StoredRecord>) {
    let elsewhere = journal_core::TenantId::new("elsewhere").unwrap();
    let other = journal_core::RuntimeBuilder::new(std::sync::Arc::clone(&plane.store) as std::sync::Arc<dyn Store>)
        .tenant(elsewhere.clone(), journal_core::Origin::new("audit.test/plane/elsewhere").unwrap(), None)
        .build()
        .unwrap();
    let Admission::New(mut theirs) = other.admit(&elsewhere, request("theirs")).unwrap() else { panic!() };
    let id = theirs.run().clone();
    let performed = RefCell::new(Vec::new());
    three_effects(&mut theirs, &performed);
    drop(theirs);
    let rows =
        journal_core::testkit::copy_run_into(plane.store.as_ref(), (&elsewhere, &plane.tenant), &plane.origin, &id);
    (id, rows)
}

/// Issue 20, R-RUN-5: a run copied in from another tenant of the same store
/// (its rows re-appended under this tenant: no key needed) was forked by
/// `Runtime::fork` as if it were this tenant's, and the fork was served the
/// other tenant's effects from it as done. The CLI's reads hold a run to its
/// tenant; the runtime's did not. Now the fork is refused, naming the tenant.
#[test]
fn a_run_copied_in_from_another_tenant_is_never_forked() {
    let plane = Plane::signed();
    let (id, rows) = copied_in_from_elsewhere(&plane);
    let at_seq = rows.last().unwrap().seq;
    let forked = plane.runtime.fork(&plane.tenant, &id, at_seq, request("fork"));
    let Err(err) = forked else { panic!("a run of tenant elsewhere was forked under {}", plane.tenant) };
    assert!(err.to_string().contains("elsewhere"), "the refusal names the tenant the run belongs to: {err}");
    assert!(
        plane.store.run_by_idempotency_key(&plane.tenant, "fork").unwrap().is_none(),
        "nothing was admitted for the fork"
    );
}

/// R-COVER-4, R-RUN-7 (review 74): the runtime's reads hold a run to its
/// tenant (issue 20), but its reads of the whole tenant did not: a run
/// copied in from another tenant was counted in `Runtime::tenant_cost` as
/// this tenant's spending, and `replay_store` replayed it as this tenant's
/// run. Both refuse it now, naming the tenant it belongs to, as the CLI's
/// `cost` does.
#[test]
fn r_cover_4_a_run_copied_in_from_another_tenant_is_never_counted_nor_replayed_as_this_tenants() {
    let plane = Plane::signed();
    let (id, _) = copied_in_from_elsewhere(&plane);
    let cost = plane.runtime.tenant_cost(&plane.tenant);
    let Err(err) = cost else { panic!("tenant {} was charged run {id} of tenant elsewhere: {cost:?}", plane.tenant) };
    assert!(err.to_string().contains("elsewhere"), "the refusal names the tenant the run belongs to: {err}");

    let upcasters = journal_core::Upcasters::default();
    let check = journal_core::chain::ChainCheck {
        upcasters: &upcasters,
        verifier: None,
        options: journal_core::VerifyOptions::default(),
    };
    let journal = journal_core::Journal::new(plane.store.as_ref(), &plane.tenant, &plane.origin);
    let replayed = journal_core::regression::replay_store(&journal, check, &[], &["work".into()], |_| Ok(()));
    let Err(problems) = replayed else { panic!("run {id} of tenant elsewhere was replayed as this tenant's") };
    assert!(problems.contains("elsewhere"), "the failure names the tenant the run belongs to: {problems}");
}

/// The export of a sealed run of `plane`, as `agentplane export` writes it.
fn export_of(plane: &Plane, run: &journal_core::RunId) -> String {
    let upcasters = journal_core::Upcasters::builtin();
    let check = journal_core::ChainCheck {
        upcasters: &upcasters,
        verifier: None,
        options: journal_core::VerifyOptions::default(),
    };
    let verified =
        journal_core::Journal::new(plane.store.as_ref(), &plane.tenant, &plane.origin).read(run, check).unwrap();
    let view = journal_core::LogView::open(plane.store.as_ref(), &plane.tenant).unwrap();
    let inclusion = view.inclusion(run).unwrap();
    let signed = journal_core::log::sign_checkpoint(&plane.origin, inclusion.tree, &plane.log_key).unwrap();
    journal_core::export::write_export(
        &plane.tenant,
        &plane.origin,
        run,
        &verified,
        journal_core::export::ExportProof::Seal(&inclusion),
        &signed,
        None,
    )
    .unwrap()
}

/// A fork's export replayed alone by `replay_export` against the very code
/// that made it was reported as a divergence ("effect ek:a, the record has
/// ... here"): the effects its source served it are in the source's journal,
/// not the fork's, and `replay_export` never served them. An honest
/// regression failed. Now the fork is refused with a typed error that names
/// its source and says to replay it beside its source's export
/// (`replay_folder`), which matches.
#[test]
fn a_forks_export_replayed_alone_is_refused_not_reported_as_a_divergence() {
    use journal_core::regression::{RunContext, replay_export, replay_folder};
    let plane = Plane::signed();
    let performed = RefCell::new(Vec::new());
    let (source_id, at_seq) = sealed_source_and_ek_b_done(&plane, &performed);
    let Admission::New(mut fork) = plane.runtime.fork(&plane.tenant, &source_id, at_seq, request("fork")).unwrap()
    else {
        panic!()
    };
    let fork_id = fork.run().clone();
    three_effects(&mut fork, &performed);
    fork.succeed("done").unwrap();

    let agent = |run: &mut journal_core::regression::Replaying| -> Result<(), journal_core::RuntimeError> {
        for key in ["ek:a", "ek:b", "ek:c"] {
            run.effect(key, "work", || unreachable!("a replay performs nothing"))?;
        }
        run.succeed("done")
    };
    let keys = [plane.log_key.verifier_key()];
    let upcasters = journal_core::Upcasters::builtin();
    let check = journal_core::ChainCheck {
        upcasters: &upcasters,
        verifier: None,
        options: journal_core::VerifyOptions::default(),
    };
    let plan = vec!["work".to_owned()];
    let folder = tempfile::tempdir().unwrap();
    for run in [&source_id, &fork_id] {
        std::fs::write(folder.path().join(format!("{run}.export")), export_of(&plane, run)).unwrap();
    }
    let reports = replay_folder(folder.path(), &keys, check, &plan, agent).unwrap();
    assert_eq!(reports.len(), 2, "beside its source, the fork replays to a match");

    let alone = replay_export(&export_of(&plane, &fork_id), &keys, check, &plan, agent);
    match alone {
        Err(err @ journal_core::export::ExportError::ForkWithoutSource { .. }) => {
            let said = err.to_string();
            assert!(said.contains(source_id.as_str()) && said.contains("replay_folder"), "{said}");
            assert!(!err.is_tamper() && !err.is_build_skew(), "{said}");
        }
        other => panic!("a fork's export replayed without its source: {other:?}"),
    }
    let source_alone = replay_export(&export_of(&plane, &source_id), &keys, check, &plan, agent).unwrap();
    assert!(source_alone.matched(), "{source_alone:?}");
}
