//! The runtime's guards held one at a time (mutation review 94): each test
//! fails when the one check it names is taken out, on a redb file edited
//! behind the plane as an attacker with the store and no key edits it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

// The attacks' plane and refusals; most of the shared attacks run in
// `coverage_attacks.rs`.
#[allow(dead_code)]
#[path = "../../../tests/shared/coverage_attacks.rs"]
mod shared;

use journal_core::testkit::TamperAccess as _;
use journal_core::{
    Admission, AdmitRequest, Budget, Dimension, DoubtAnswer, ExpectedHead, JournalError, Outcome, RunId, RunStatus,
    RuntimeError, Store as _, Verdict,
};
use shared::Plane;
use store_redb::RedbStore;

fn request(key: &str) -> AdmitRequest {
    AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget: Budget::default() }
}

/// Cuts `run` back to its `RunAdmitted` alone behind the plane (what a
/// crash before the plane froze the plan leaves, too); its rows as they were.
fn cut_back_to_admission(plane: &Plane<RedbStore>, run: &RunId) -> Vec<journal_core::StoredRecord> {
    cut_back_to(plane, run, 1)
}

/// Cuts `run` back to its first `keep` records behind the plane.
fn cut_back_to(plane: &Plane<RedbStore>, run: &RunId, keep: u64) -> Vec<journal_core::StoredRecord> {
    let rows = plane.store.read_run(&plane.tenant, run).unwrap().rows;
    for row in rows.iter().filter(|row| row.seq > keep) {
        plane.store.delete_record(&plane.tenant, run, row.seq);
    }
    let head = rows.iter().find(|row| row.seq == keep).unwrap();
    plane.store.set_runs_head(&plane.tenant, run, ExpectedHead { seq: keep, hash: head.hash });
    rows
}

fn assert_tamper(result: Result<(), RuntimeError>, run: &RunId, what: &str) {
    match result {
        Err(RuntimeError::Journal(JournalError::Tamper { run: named, .. })) => assert_eq!(&named, run, "{what}"),
        other => panic!("{what}: not refused as tamper: {other:?}"),
    }
}

fn assert_not_applicable(result: Result<(), RuntimeError>, what: &str) {
    assert!(matches!(result, Err(RuntimeError::NotApplicable { .. })), "{what}: {result:?}");
}

/// R-RUN-5, R-COVER-2: a covered run cut back behind the plane to its
/// `RunAdmitted` looks like an admission that stopped before its plan was
/// frozen, which a redelivery of its key finishes and drives. Its covered
/// head is gone from the chain: the redelivery is refused, not driven into
/// performing the done effect again.
#[test]
fn r_run_5_a_run_cut_back_to_its_admission_is_not_finished_by_a_redelivery() {
    let plane = Plane::on(RedbStore::temporary().unwrap());
    let cut = plane.run("transfer-1", false);
    plane.sign();
    let rows = cut_back_to_admission(&plane, &cut);
    match shared::redelivery_refusal(&plane.runtime, &plane.tenant, "transfer-1", "the run cut to its admission") {
        JournalError::Tamper { run, seq, .. } => assert_eq!((run, seq), (cut, rows.last().unwrap().seq)),
        other => panic!("refused, but not as tamper: {other}"),
    }
}

/// R-COVER-2, R-RUN-5: an operator's answer (a hold, a raised ceiling, a
/// lift, a doubt answered, a cancellation) is held to what resume is held
/// to: none is signed onto a run cut back behind the plane.
#[test]
fn r_cover_2_no_operator_answer_is_appended_to_a_run_cut_back_behind_the_plane() {
    let plane = Plane::on(RedbStore::temporary().unwrap());
    let cut = plane.run("transfer-1", false);
    plane.sign();
    let rows = plane.cut_back_to_two(&cut);
    let (runtime, tenant) = (&plane.runtime, &plane.tenant);
    assert_tamper(runtime.withhold(tenant, &cut, "hold"), &cut, "withhold");
    assert_tamper(runtime.raise_ceiling(tenant, &cut, Dimension::Tokens, Some(9)), &cut, "raise_ceiling");
    assert_tamper(runtime.lift(tenant, &cut, "lift"), &cut, "lift");
    assert_tamper(runtime.cancel(tenant, &cut, "cancel"), &cut, "cancel");
    assert_tamper(
        runtime.answer_doubt(tenant, &cut, "ek:wire-transfer", DoubtAnswer::DidNotHappen),
        &cut,
        "answer_doubt",
    );
    assert_tamper(runtime.check_answers(tenant, &cut, &["ek:wire-transfer"], true), &cut, "check_answers");
    assert_eq!(plane.store.read_run(&plane.tenant, &cut).unwrap().rows.len(), 2, "nothing was appended");
    assert!(rows.len() > 2);
}

/// R-RUN-5, R-RUN-1: an admission that stopped before its plan was frozen,
/// then withheld by an operator, is finished by a redelivery of its key and
/// waits for the lift: the answer is the run's status, never a handle that
/// drives a withheld run. One cancelled instead is sealed: the redelivery
/// answers its status and appends nothing.
#[test]
fn r_run_5_a_stuck_admission_held_or_cancelled_is_answered_not_driven() {
    let plane = Plane::on(RedbStore::temporary().unwrap());
    let held = plane.run("held", false);
    cut_back_to_admission(&plane, &held);
    plane.runtime.withhold(&plane.tenant, &held, "wait").unwrap();
    match plane.runtime.admit(&plane.tenant, request("held")).unwrap() {
        Admission::Existing { run, status } => {
            assert_eq!(run, held);
            assert!(matches!(status, RunStatus::Withheld { .. }), "{status}");
        }
        Admission::New(handle) => panic!("a withheld run was handed out to drive: {}", handle.run()),
    }

    let cancelled = plane.run("cancelled", false);
    cut_back_to_admission(&plane, &cancelled);
    plane.runtime.cancel(&plane.tenant, &cancelled, "no").unwrap();
    let before = plane.store.read_run(&plane.tenant, &cancelled).unwrap().rows.len();
    match plane.runtime.admit(&plane.tenant, request("cancelled")) {
        Ok(Admission::Existing { run, status }) => {
            assert_eq!(run, cancelled);
            assert!(matches!(status, RunStatus::Cancelled), "{status}");
        }
        Ok(Admission::New(handle)) => panic!("a cancelled run was handed out to drive: {}", handle.run()),
        Err(err) => panic!("the redelivery of a cancelled stuck admission failed: {err}"),
    }
    assert_eq!(plane.store.read_run(&plane.tenant, &cancelled).unwrap().rows.len(), before, "nothing appended");
}

/// R-RUN-5: a lift lifts a hold, nothing else: a failed run is not withheld.
/// And `check_answers` refuses, writing nothing, an effect answered twice, a
/// doubt that is not one, and a lift with no hold to lift.
#[test]
fn r_run_5_answers_that_do_not_fit_the_run_are_refused() {
    let plane = Plane::on(RedbStore::temporary().unwrap());
    let run = plane.run("failed", false);
    plane.runtime.conclude(&plane.tenant, &run, Outcome::Failed, Verdict::None, "broke").unwrap();
    let before = plane.store.read_run(&plane.tenant, &run).unwrap().rows.len();
    assert_not_applicable(plane.runtime.lift(&plane.tenant, &run, "lift"), "a lift of a failed run");
    let check = |keys: &[&str], lift| plane.runtime.check_answers(&plane.tenant, &run, keys, lift);
    assert_not_applicable(check(&[], true), "check_answers: a lift with no hold");
    assert_not_applicable(check(&["ek:wire-transfer"], false), "check_answers: a done effect is no doubt");
    assert_eq!(plane.store.read_run(&plane.tenant, &run).unwrap().rows.len(), before, "nothing appended");

    // A run whose effect has a start and no end (a crash mid-effect, no
    // checkpoint since): a doubt, answerable once.
    let doubted = plane.run("doubted", false);
    let rows = plane.store.read_run(&plane.tenant, &doubted).unwrap().rows;
    let started = rows.iter().find(|row| row.kind == "EffectStarted").unwrap().seq;
    cut_back_to(&plane, &doubted, started);
    let resumed = plane.runtime.resume(&plane.tenant, &doubted);
    assert!(matches!(resumed, Err(RuntimeError::Stopped { .. })), "the doubt quarantines the run");
    let check = |keys: &[&str]| plane.runtime.check_answers(&plane.tenant, &doubted, keys, false);
    check(&["ek:wire-transfer"]).unwrap();
    assert_not_applicable(check(&["ek:wire-transfer", "ek:wire-transfer"]), "check_answers: one doubt twice");
}

/// R-COVER-4, R-RUN-7: a run copied in from another tenant behind the
/// plane (its rows appended again under this tenant, sealed into this
/// tenant's log) is never this tenant's: its status is refused, and so is
/// the tenant's cost, rather than counting another tenant's spending.
#[test]
fn r_cover_4_a_run_copied_from_another_tenant_is_neither_read_nor_counted() {
    let plane = Plane::on(RedbStore::temporary().unwrap());
    let other = journal_core::TenantId::new("other").unwrap();
    let other_origin = journal_core::Origin::new("attacks.test/plane/other").unwrap();
    let run = RunId::new("copied").unwrap();
    journal_core::testkit::sample_run(
        &journal_core::Journal::new(&*plane.store, &other, &other_origin),
        &run,
        Outcome::Succeeded,
    )
    .unwrap();
    journal_core::testkit::copy_run_into(&*plane.store, (&other, &plane.tenant), &plane.origin, &run);
    let damage = |refused: &RuntimeError| {
        matches!(refused, RuntimeError::Journal(journal_core::JournalError::StoreDamage { .. }))
    };
    let status = plane.runtime.status(&plane.tenant, &run);
    assert!(status.as_ref().is_err_and(damage), "the copied run's status is refused: {status:?}");
    let cost = plane.runtime.cost(&plane.tenant, &run);
    assert!(cost.as_ref().is_err_and(damage), "the copied run's cost is refused: {cost:?}");
    let tenant_cost = plane.runtime.tenant_cost(&plane.tenant);
    assert!(tenant_cost.as_ref().is_err_and(damage), "the tenant's cost counts no copied run: {tenant_cost:?}");
}

/// R-RUN-5, R-COVER-2: a sealed run's seal leaf is in the log from its
/// seal on, before the plane signs a tree that holds it. Deleted with its
/// seal lookup before that signature, on a plane that keeps a high-water
/// mark, a redelivery of its key is still held to the leaf past the signed
/// tree: it is refused, never admitted afresh to perform its effect again.
#[test]
fn r_run_5_a_sealed_run_deleted_before_the_next_signature_is_never_admitted_again() {
    let plane = Plane::on(RedbStore::temporary().unwrap());
    let mark = std::sync::Arc::new(journal_core::testkit::MemoryHighWater::default());
    plane.run("first", true);
    plane.sign_held_to(Some(mark.as_ref()));
    let runtime = shared::runtime_with_mark(&plane, &mark);
    let gone = plane.run("transfer-2", true);
    plane.store.hide_seal_of(&plane.tenant, &gone);
    plane.store.delete_run(&plane.tenant, &gone);
    match shared::redelivery_refusal(&runtime, &plane.tenant, "transfer-2", "the deleted sealed run") {
        JournalError::Tamper { run, .. } => assert_eq!(run, gone),
        other => panic!("refused, but not as tamper: {other}"),
    }
}

/// R-COVER-2, R-RUN-5: a covered run rewritten behind the plane below its
/// covered head (deleted, and another chain of the same run appended in its
/// place, as long as the covered one and longer) holds a record at the
/// covered seq, but not the covered record: resume is refused, the seq
/// alone is not what the log holds.
#[test]
fn r_cover_2_a_run_rewritten_below_its_covered_head_is_never_run_again() {
    let plane = Plane::on(RedbStore::temporary().unwrap());
    let run = plane.run("transfer-1", false);
    plane.sign();
    let covered = plane.store.read_run(&plane.tenant, &run).unwrap().rows;

    // The same run (same key, same id) driven elsewhere to another history.
    let elsewhere = Plane::on(RedbStore::temporary().unwrap());
    let Admission::New(mut other) = elsewhere.runtime.admit(&elsewhere.tenant, request("transfer-1")).unwrap() else {
        panic!("new")
    };
    assert_eq!(other.run(), &run);
    other.start_step("work").unwrap();
    other
        .effect("ek:wire-transfer", "work", || journal_core::EffectOutput {
            result: journal_core::EffectResult::Ok { output: "sent elsewhere".into() },
            charged: journal_core::Counters::default(),
        })
        .unwrap();
    other.finish_step("work").unwrap();
    drop(other);
    let forged = elsewhere.store.read_run(&elsewhere.tenant, &run).unwrap().rows;
    assert!(forged.len() > covered.len());

    plane.store.delete_run(&plane.tenant, &run);
    let mut head = None;
    for row in forged {
        let next = ExpectedHead { seq: row.seq, hash: row.hash };
        plane
            .store
            .append(journal_core::store::AppendRequest {
                tenant: plane.tenant.clone(),
                run: run.clone(),
                expected_head: head,
                row,
                idempotency_key: None,
                conclusion: None,
                encoded_bytes: None,
            })
            .unwrap();
        head = Some(next);
    }
    match shared::resume_refusal(&plane.runtime, &plane.tenant, &run, "the rewritten run") {
        JournalError::Tamper { run: named, seq, .. } => assert_eq!((named, seq), (run, covered.last().unwrap().seq)),
        other => panic!("refused, but not as tamper: {other}"),
    }
}

/// R-RUN-5: a fork at a point where an effect is started and not ended
/// (a worker stopped mid-effect, its start the source's head) cannot know whether the effect happened: refused, nothing admitted (the
/// fork would perform it again).
#[test]
fn r_run_5_a_fork_between_an_effects_start_and_its_end_is_refused() {
    let plane = Plane::on(RedbStore::temporary().unwrap());
    let source = plane.run("source", false);
    let rows = plane.store.read_run(&plane.tenant, &source).unwrap().rows;
    let started = rows.iter().find(|row| row.kind == "EffectStarted").unwrap().seq;
    // The worker stopped mid-effect: its start is the source's head.
    cut_back_to(&plane, &source, started);
    match plane.runtime.fork(&plane.tenant, &source, started, request("fork-1")) {
        Err(RuntimeError::NotApplicable { run, .. }) => assert_eq!(run, source),
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a fork inside an effect was admitted"),
    }
    let fork = journal_core::Runtime::run_id_for(&plane.tenant, "fork-1").unwrap();
    let admitted = plane.store.read_run(&plane.tenant, &fork);
    assert!(matches!(admitted, Err(journal_core::JournalError::NotFound { .. })), "nothing admitted: {admitted:?}");
}

/// R-RUN-5, R-COVER-2: a cut run's entry taken out of the heads leaf that
/// covered it (with its lookup row), the leaf's bytes left as signed: the
/// entries no longer make the leaf, which is damage, never a run the log
/// did not cover. The cut run is not resumed.
#[test]
fn r_run_5_a_cut_hidden_by_removing_its_heads_entry_is_never_run_again() {
    let plane = Plane::on(RedbStore::temporary().unwrap());
    let cut = plane.run("transfer-1", false);
    plane.sign();
    let position = plane.store.newest_heads_of(&plane.tenant, &cut).unwrap().expect("a heads leaf holds the run");
    plane.cut_back_to_two(&cut);
    plane.store.delete_heads_entry(&plane.tenant, position, &cut);
    plane.store.hide_newest_heads_of(&plane.tenant, &cut);
    let restarted = journal_core::RuntimeBuilder::new(
        std::sync::Arc::clone(&plane.store) as std::sync::Arc<dyn journal_core::Store>
    )
    .tenant(plane.tenant.clone(), plane.origin.clone(), Some(plane.key.clone()))
    .build()
    .unwrap();
    match shared::resume_refusal(&restarted, &plane.tenant, &cut, "the cut hidden from its heads leaf") {
        JournalError::StoreDamage { detail, .. } => {
            assert!(detail.contains("heads entries at log position"), "{detail}")
        }
        other => panic!("refused, but not as damage: {other}"),
    }
}

/// R-LOG-6, R-RUN-5 (mutation review 96): on a plane with no high-water
/// mark (it never signed), a sealed run deleted behind the store leaves a
/// hole in its log positions. Read past the hole, the leaves after it took
/// the positions before them and the deleted run's seal was simply absent:
/// a redelivery of its key admitted it afresh and performed its done effect
/// again. The hole is damage, and the redelivery to a process started
/// afresh (which has read none of the log) is refused.
#[test]
fn r_log_6_a_hole_in_an_unsigned_log_refuses_the_deleted_runs_redelivery() {
    let plane = Plane::on(RedbStore::temporary().unwrap());
    let gone = plane.run("transfer-1", true);
    plane.run("transfer-2", true);
    plane.store.delete_run(&plane.tenant, &gone);
    // A process started afresh: it has read none of the log yet.
    let restarted = journal_core::RuntimeBuilder::new(
        std::sync::Arc::clone(&plane.store) as std::sync::Arc<dyn journal_core::Store>
    )
    .tenant(plane.tenant.clone(), plane.origin.clone(), Some(plane.key.clone()))
    .build()
    .unwrap();
    match shared::redelivery_refusal(&restarted, &plane.tenant, "transfer-1", "the deleted sealed run") {
        JournalError::StoreDamage { detail, .. } => assert!(detail.contains("no entry at position 0"), "{detail}"),
        other => panic!("refused, but not as damage: {other}"),
    }
}
