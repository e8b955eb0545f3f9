//! The coverage attacks of issues 20 and 21 on a real backend
//! (`#[path]`-included by `crates/store-redb/tests/coverage_attacks.rs` and
//! `crates/store-pg/tests/coverage_attacks.rs`): an attacker with write access
//! to the store and no key edits it behind the plane (a raw file write, or SQL
//! with the plane's checks bypassed) after an observer saved a checkpoint the
//! plane signed as it does (heads leaves first). Each attack is found by the
//! audit against that checkpoint, classified and named.

use std::sync::Arc;

use audit::{AuditInputs, FindingClass, FindingCode};
use journal_core::testkit::TamperAccess;
use journal_core::{
    Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, ExpectedHead, Origin, Outcome, RunId,
    Runtime, RuntimeBuilder, Store, TenantId,
};
use witness::{ALG_ED25519, LogKey, SignedCheckpoint, SignerKey};

const ORIGIN: &str = "attacks.test/plane/t";

/// A plane on `store` with its runtime and log key.
pub struct Plane<S> {
    pub store: Arc<S>,
    pub tenant: TenantId,
    pub origin: Origin,
    pub key: LogKey,
    pub runtime: Runtime,
}

impl<S: Store + TamperAccess + 'static> Plane<S> {
    pub fn on(store: S) -> Self {
        let store = Arc::new(store);
        let tenant = TenantId::new("t").unwrap();
        let origin = Origin::new(ORIGIN).unwrap();
        let key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [8; 32]).unwrap()).unwrap();
        let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
            .tenant(tenant.clone(), origin.clone(), Some(key.clone()))
            .build()
            .unwrap();
        Self { store, tenant, origin, key, runtime }
    }

    /// A run admitted with one done effect (`ek:wire-transfer`); sealed when `seal`.
    pub fn run(&self, name: &str, seal: bool) -> RunId {
        let request =
            AdmitRequest { idempotency_key: name.into(), plan: vec!["work".into()], budget: Budget::default() };
        let Admission::New(mut run) = self.runtime.admit(&self.tenant, request).unwrap() else { panic!("new") };
        run.start_step("work").unwrap();
        run.effect("ek:wire-transfer", "work", || EffectOutput {
            result: EffectResult::Ok { output: "sent".into() },
            charged: Counters { tokens: 5, ..Counters::default() },
        })
        .unwrap();
        let id = run.run().clone();
        if seal {
            run.finish_step("work").unwrap();
            run.succeed("done").unwrap();
        }
        id
    }

    /// Cuts `run` back to its first two records behind the plane (the
    /// records after them removed, its runs row pointed back: the chain
    /// that remains verifies); returns its rows as they were.
    pub fn cut_back_to_two(&self, run: &RunId) -> Vec<journal_core::StoredRecord> {
        let rows = self.store.read_run(&self.tenant, run).unwrap().rows;
        for row in rows.iter().filter(|row| row.seq > 2) {
            self.store.delete_record(&self.tenant, run, row.seq);
        }
        self.store.set_runs_head(&self.tenant, run, ExpectedHead { seq: 2, hash: rows[1].hash });
        rows
    }

    /// The checkpoint the plane signs (heads leaves first), as an observer saves it.
    pub fn sign(&self) -> SignedCheckpoint {
        self.sign_held_to(None)
    }

    /// The checkpoint the plane signs held to (and raising) its high-water
    /// `mark`, as the CLI's plane does with the mark beside its key file.
    pub fn sign_held_to(&self, mark: Option<&dyn journal_core::log::HighWater>) -> SignedCheckpoint {
        journal_core::log::sign_current_head(self.store.as_ref(), &self.tenant, &self.origin, &self.key, mark)
            .unwrap()
            .1
    }

    pub fn inputs(&self, saved: &SignedCheckpoint) -> AuditInputs {
        let mut inputs = AuditInputs::new(self.tenant.clone(), self.origin.clone());
        inputs.log_keys = vec![self.key.verifier_key()];
        inputs.anchors.push(
            audit::Anchor::saved("saved.note", saved.note().as_bytes(), &[self.key.verifier_key()], &self.origin)
                .unwrap(),
        );
        inputs
    }

    fn finding(&self, inputs: &AuditInputs, code: FindingCode) -> audit::Finding {
        let report = audit::audit(self.store.as_ref(), inputs).unwrap();
        report
            .findings
            .iter()
            .find(|finding| finding.code == code)
            .cloned()
            .unwrap_or_else(|| panic!("{code:?} is found: {:#?}", report.findings))
    }
}

/// Issue 20: an open run whose done effect is cut away after the checkpoint
/// (records removed, its runs row pointed back), and one deleted outright.
pub fn open_runs_cut_back_or_deleted_are_found<S: Store + TamperAccess + 'static>(store: S) {
    let plane = Plane::on(store);
    plane.run("sealed", true);
    let cut = plane.run("transfer-1", false);
    let gone = plane.run("transfer-2", false);
    let saved = plane.sign();
    let inputs = plane.inputs(&saved);
    assert!(audit::audit(plane.store.as_ref(), &inputs).unwrap().is_clean());

    let rows = plane.cut_back_to_two(&cut);
    let head = rows.last().unwrap().seq;
    plane.store.delete_run(&plane.tenant, &gone);

    let report = audit::audit(plane.store.as_ref(), &inputs).unwrap();
    for run in [&cut, &gone] {
        let finding = report
            .findings
            .iter()
            .find(|f| f.code == FindingCode::HeadCutBack && f.run.as_deref() == Some(run.as_str()))
            .unwrap_or_else(|| panic!("{run} is found: {:#?}", report.findings));
        assert_eq!(finding.class, FindingClass::Deletion);
        assert_eq!(finding.anchors, vec!["saved.note".to_owned()]);
    }
    let named = report.findings.iter().find(|f| f.run.as_deref() == Some(cut.as_str())).unwrap();
    assert_eq!(named.seq, Some(head), "the cut run is named at the head the checkpoint committed to");
}

/// Issue 21: index rows with no verified run behind them: an outcome row
/// for a run that does not exist, and a new job's key pointed at an old run;
/// and rows a verified chain does not give: a run's records with no runs
/// row, a seal row whose leaf is not the chain's.
pub fn forged_index_rows_are_found<S: Store + TamperAccess + 'static>(store: S) {
    let plane = Plane::on(store);
    let old = plane.run("job-old", true);
    let rowless = plane.run("job-rowless", false);
    let resealed = plane.run("job-resealed", true);
    let saved = plane.sign();
    let inputs = plane.inputs(&saved);
    let ghost = RunId::new("run-ghost").unwrap();
    plane.store.set_outcome_index(&plane.tenant, &ghost, Some(Outcome::Succeeded));
    plane.store.set_idempotency(&plane.tenant, "job-new", &old);
    plane.store.delete_runs_row(&plane.tenant, &rowless);
    let forged_leaf =
        plane.store.seals(&plane.tenant).unwrap().into_iter().find(|seal| seal.run == resealed).unwrap().leaf_bytes;
    let forged_leaf = String::from_utf8(forged_leaf).unwrap().replace("records ", "records 1");
    plane.store.overwrite_seal_leaf(&plane.tenant, &resealed, forged_leaf.into_bytes());
    let report = audit::audit(plane.store.as_ref(), &inputs).unwrap();
    let named = |code: FindingCode, run: &RunId| {
        report.findings.iter().any(|f| f.code == code && f.run.as_deref() == Some(run.as_str()))
    };
    assert!(named(FindingCode::RunRowMissing, &rowless), "{:#?}", report.findings);
    assert!(named(FindingCode::SealLeafMismatch, &resealed), "{:#?}", report.findings);
    let forged: Vec<_> = report.findings.iter().filter(|f| f.code == FindingCode::IndexWithoutRun).collect();
    assert!(forged.iter().any(|f| f.run.as_deref() == Some("run-ghost")), "{:#?}", report.findings);
    assert!(
        forged.iter().any(|f| f.run.as_deref() == Some(old.as_str()) && f.detail.contains("job-new")),
        "{:#?}",
        report.findings
    );
}

/// Issue 20: a sealed run copied in from another tenant of the same store
/// (its rows re-appended, a seal leaf made for this origin: no key needed).
pub fn a_run_copied_from_another_tenant_is_found<S: Store + TamperAccess + 'static>(store: S) {
    let plane = Plane::on(store);
    let elsewhere = TenantId::new("elsewhere").unwrap();
    let origin_elsewhere = Origin::new("attacks.test/plane/elsewhere").unwrap();
    let other = RuntimeBuilder::new(Arc::clone(&plane.store) as Arc<dyn Store>)
        .tenant(elsewhere.clone(), origin_elsewhere, None)
        .build()
        .unwrap();
    let request = AdmitRequest { idempotency_key: "theirs".into(), plan: vec![], budget: Budget::default() };
    let Admission::New(run) = other.admit(&elsewhere, request).unwrap() else { panic!("new") };
    let id = run.run().clone();
    run.succeed("done").unwrap();
    journal_core::testkit::copy_run_into(plane.store.as_ref(), (&elsewhere, &plane.tenant), &plane.origin, &id);
    let saved = plane.sign();
    let finding = plane.finding(&plane.inputs(&saved), FindingCode::TenantMismatch);
    assert_eq!((finding.class, finding.run.as_deref()), (FindingClass::Tamper, Some(id.as_str())));
}

/// Issue 27, R-AUD-8: the admission order (the console's newest-first
/// listing) held to the verified chains both ways. A run's row removed hides
/// it from the listing; a row moved to another instant reorders it; a row for
/// a run that was never admitted lists a ghost. Each is a finding naming the
/// run; the untouched plane audits clean.
pub fn admission_order_rows_forged_or_missing_are_found<S: Store + TamperAccess + 'static>(store: S) {
    let plane = Plane::on(store);
    let hidden = plane.run("job-hidden", true);
    let moved = plane.run("job-moved", false);
    plane.run("job-kept", true);
    let saved = plane.sign();
    let inputs = plane.inputs(&saved);
    assert!(audit::audit(plane.store.as_ref(), &inputs).unwrap().is_clean());
    let order = plane.store.admissions(&plane.tenant, None, None, 10).unwrap();
    assert_eq!(order.len(), 3, "one row per admitted run: {order:?}");
    let row = |run: &RunId| order.iter().find(|row| &row.run == run).cloned().unwrap();

    plane.store.set_admission(&plane.tenant, &row(&hidden), false);
    let mut elsewhere = row(&moved);
    plane.store.set_admission(&plane.tenant, &elsewhere, false);
    elsewhere.at = journal_core::At::from_unix_millis(elsewhere.at.unix_millis() + 86_400_000).unwrap();
    plane.store.set_admission(&plane.tenant, &elsewhere, true);
    let ghost = journal_core::AdmittedRun { at: elsewhere.at, run: RunId::new("run-ghost").unwrap() };
    plane.store.set_admission(&plane.tenant, &ghost, true);

    let report = audit::audit(plane.store.as_ref(), &inputs).unwrap();
    let found: Vec<_> = report.findings.iter().filter(|f| f.code == FindingCode::AdmissionOrderMismatch).collect();
    let named = |run: &str, says: &str| {
        found
            .iter()
            .any(|f| f.run.as_deref() == Some(run) && f.detail.contains(says) && f.class == FindingClass::DerivedData)
    };
    assert!(named(hidden.as_str(), "no row"), "the missing row: {:#?}", report.findings);
    assert!(named(moved.as_str(), "no row"), "the moved run's own row is gone: {:#?}", report.findings);
    assert!(named(moved.as_str(), "but it was admitted at"), "the forged row: {:#?}", report.findings);
    assert!(named("run-ghost", "no such run"), "the ghost row: {:#?}", report.findings);
    assert_eq!(found.len(), 4, "{:#?}", report.findings);
}

/// The runs named by the findings of `code`, in the report's order.
pub fn runs_found(report: &audit::AuditReport, code: FindingCode) -> Vec<String> {
    report.findings.iter().filter(|f| f.code == code).map(|f| f.run.clone().unwrap_or_default()).collect()
}

/// Heads entries of `run` forged at `position`, where the log holds no heads
/// leaf (with the newest-heads index pointed there): a `heads_leaf_broken`
/// naming the position, and the index's row for `run` a mismatch.
pub fn assert_stray_heads_entries_found(report: &audit::AuditReport, position: u64, run: &RunId) {
    let at = format!("position {position}");
    assert!(
        report.findings.iter().any(|f| f.code == FindingCode::HeadsLeafBroken && f.detail.contains(&at)),
        "{:#?}",
        report.findings
    );
    assert_eq!(runs_found(report, FindingCode::HeadsIndexMismatch), vec![run.to_string()], "{:#?}", report.findings);
}

/// R-PLANE-2 (the attacker review of session 17): the plane signs the root
/// its stored node hashes give, and held only that tree to the last one it
/// signed, by a consistency proof made of the same stored nodes. One stored
/// node above the last signed tree overwritten (the newest seal's leaf
/// node, replaced by the leaf hash of a seal of a run that never existed)
/// was signed as it is: the plane's signature (and, through the sweep, its
/// witnesses' cosignatures) then covered a tree its own leaves do not give.
/// The plane must refuse to sign it.
pub fn a_forged_node_is_never_signed<S: Store + TamperAccess + 'static>(store: S) {
    let plane = plane_with_a_forged_node(store);
    let signed =
        journal_core::log::sign_current_head(plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.key, None);
    let signed = match signed {
        Err(journal_core::JournalError::WouldSignRollback { reason, .. }) => {
            assert!(reason.contains("a stored node was changed behind the plane"), "{reason}");
            return;
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok((_, signed)) => signed,
    };
    let report = audit::audit(plane.store.as_ref(), &plane.inputs(&signed)).unwrap();
    panic!(
        "the plane signed size {} root {} over a forged node; the log its leaves give has root {}; the audit of that \
         checkpoint: {:#?}",
        signed.checkpoint().tree().size,
        signed.checkpoint().tree().root,
        report.log_root,
        report.findings
    );
}

/// Four sealed runs signed, a fifth sealed, and the stored leaf node of the
/// fifth (position 4, above the signed tree) overwritten with the leaf hash
/// of a seal of a run that never existed.
pub fn plane_with_a_forged_node<S: Store + TamperAccess + 'static>(store: S) -> Plane<S> {
    let plane = Plane::on(store);
    for name in ["a", "b", "c", "d"] {
        plane.run(name, true);
    }
    let first = plane.sign();
    assert_eq!(first.checkpoint().tree().size, 4);
    plane.run("e", true);
    let ghost = journal_core::RunId::new("run-ghost").unwrap();
    let forged = journal_core::SealLeaf::new(
        &plane.origin,
        &ghost,
        journal_core::ExpectedHead { seq: 1, hash: journal_core::ChainHash::GENESIS },
    );
    plane.store.overwrite_log_node(&plane.tenant, tlog::NodeId::new(0, 4), forged.leaf_hash().into());
    plane
}

/// R-RUN-5, R-COVER-2 (review 3): the promise is that a finished effect
/// never runs twice, and that a run cut back or deleted after a checkpoint
/// is detected rather than silently run again. An open run whose done
/// effect (`ek:wire-transfer`) a signed checkpoint's heads leaf covers, then
/// cut back in the store (records removed, its runs row pointed back: the
/// chain that remains verifies), must not be resumed into performing it
/// again; and the same run deleted outright must not be admitted afresh by a
/// redelivery of its idempotency key. Both are refused with a typed tamper
/// error naming the run and the head the heads leaf holds.
pub fn a_run_cut_back_or_deleted_after_a_checkpoint_is_never_run_again<S: Store + TamperAccess + 'static>(store: S) {
    let plane = Plane::on(store);
    let cut = plane.run("transfer-1", false);
    let gone = plane.run("transfer-2", false);
    plane.sign();

    let rows = plane.cut_back_to_two(&cut);
    plane.store.delete_run(&plane.tenant, &gone);

    match resume_refusal(&plane.runtime, &plane.tenant, &cut, "the cut-back run") {
        journal_core::JournalError::Tamper { run, seq, .. } => {
            assert_eq!((run, seq), (cut.clone(), rows.last().unwrap().seq), "names the run and the covered head");
        }
        other => panic!("refused, but not as tamper: {other}"),
    }
    match redelivery_refusal(&plane.runtime, &plane.tenant, "transfer-2", "the deleted run") {
        journal_core::JournalError::Tamper { run, .. } => assert_eq!(run, gone),
        other => panic!("refused, but not as tamper: {other}"),
    }
}

/// R-RUN-5, R-COVER-2 (noted in sessions 17 to 19, fixed in session 20):
/// the same cuts as above, each also hidden from the store's newest-heads
/// lookup (redb: the run's index row; PostgreSQL: the run's heads entries,
/// which its lookup reads). Resume and redelivery asked that lookup, found
/// nothing and drove the cut runs again, performing their done effects a
/// second time. They now read the heads leaves of the log itself, each
/// leaf's entries held to its bytes, so the hidden cut is refused as
/// tamper (the covered head is missing) or as damage (the entries no
/// longer make the leaf), on a runtime that was running before the cut and
/// on one started after it.
pub fn a_cut_hidden_from_the_heads_index_is_never_run_again<S: Store + TamperAccess + 'static>(store: S) {
    let plane = Plane::on(store);
    let cut = plane.run("transfer-1", false);
    let gone = plane.run("transfer-2", false);
    plane.sign();

    plane.cut_back_to_two(&cut);
    plane.store.hide_newest_heads_of(&plane.tenant, &cut);
    plane.store.delete_run(&plane.tenant, &gone);
    plane.store.hide_newest_heads_of(&plane.tenant, &gone);
    assert_eq!(plane.store.newest_heads_of(&plane.tenant, &cut).unwrap(), None, "the lookup is blind to the cut");
    assert_eq!(plane.store.newest_heads_of(&plane.tenant, &gone).unwrap(), None);

    let restarted = RuntimeBuilder::new(Arc::clone(&plane.store) as Arc<dyn Store>)
        .tenant(plane.tenant.clone(), plane.origin.clone(), Some(plane.key.clone()))
        .build()
        .unwrap();
    for runtime in [&plane.runtime, &restarted] {
        assert_refused_as_tamper(&resume_refusal(runtime, &plane.tenant, &cut, "the hidden cut"), &cut);
        let refused = redelivery_refusal(runtime, &plane.tenant, "transfer-2", "the hidden deleted run");
        assert_refused_as_tamper(&refused, &gone);
    }
}

/// A refusal of the tamper class: the covered head missing from `run`'s
/// chain, or the heads entries no longer making their leaf.
fn assert_refused_as_tamper(err: &journal_core::JournalError, run: &RunId) {
    match err {
        journal_core::JournalError::Tamper { run: named, .. } => assert_eq!(named, run),
        journal_core::JournalError::StoreDamage { detail, .. } => {
            assert!(detail.contains("heads entries at log position"), "{detail}");
        }
        other => panic!("refused, but not as tamper: {other}"),
    }
}

/// R-RUN-5, R-COVER-2 (session 20): the cut is carried into the log
/// instead of hidden. After cutting an open run back, the attacker marks it
/// moved, so the plane's next checkpoint puts a heads leaf holding the cut
/// head in the log; the newest leaf then agrees with the cut chain. A run's
/// chain only grows, so resume holds it to the longest head any leaf ever
/// held for it, and refuses.
pub fn a_cut_carried_into_a_later_heads_leaf_is_never_run_again<S: Store + TamperAccess + 'static>(store: S) {
    let plane = Plane::on(store);
    let cut = plane.run("transfer-1", false);
    plane.sign();
    let rows = plane.cut_back_to_two(&cut);
    let covered = rows.last().unwrap().seq;
    plane.store.set_moved(&plane.tenant, &cut, true);
    plane.sign();
    let newest = plane.store.newest_heads_of(&plane.tenant, &cut).unwrap().expect("a heads leaf holds the run");
    let entries = plane.store.heads_entries(&plane.tenant, newest).unwrap();
    assert!(
        entries.iter().any(|entry| entry.run == cut && entry.seq == 2),
        "the newest heads leaf holds the cut head: {entries:?}"
    );

    match resume_refusal(&plane.runtime, &plane.tenant, &cut, "the cut carried into the log") {
        journal_core::JournalError::Tamper { run, seq, .. } => {
            assert_eq!((run, seq), (cut.clone(), covered), "names the longest head the log held");
        }
        other => panic!("refused, but not as tamper: {other}"),
    }
}

/// A plane whose runtime signs every record: one sealed run, `a`.
pub fn signed_plane<S: Store + 'static>(store: Arc<S>) -> (TenantId, RunId) {
    let tenant = TenantId::new("t").unwrap();
    let signer = journal_core::Ed25519Signer::from_seed("spiffe://attacks.test/runtime", [9; 32]);
    let runtime = RuntimeBuilder::new(store as Arc<dyn Store>)
        .signer(Arc::new(signer))
        .tenant(tenant.clone(), Origin::new(ORIGIN).unwrap(), None)
        .build()
        .unwrap();
    let request = AdmitRequest { idempotency_key: "a".into(), plan: vec!["work".into()], budget: Budget::default() };
    let Admission::New(mut run) = runtime.admit(&tenant, request).unwrap() else { panic!("new") };
    run.start_step("work").unwrap();
    run.finish_step("work").unwrap();
    let id = run.run().clone();
    run.succeed("done").unwrap();
    (tenant, id)
}

/// R-SIG-3, R-CHAIN-5 (noted in session 18, fixed in session 20): record 2
/// of `run` had one of its two signature columns cleared behind the plane.
/// Read as unsigned, it passed every lenient read (resume, `verify` without
/// `--require-signature`, the audit with no record key) although the plane
/// signed it. Half a pair is a malformed row: `read_run` refuses it, and the
/// audit names the run broken at that seq and goes on.
///
/// The finding says what is wrong with the row (`why`, a part of its
/// message), never that the bytes do not hash to the chain: the bytes are
/// intact, and an auditor sent to them would look at the wrong column.
pub fn a_half_signature_pair_is_a_malformed_row<S: Store>(store: &S, tenant: &TenantId, run: &RunId, why: &str) {
    match store.read_run(tenant, run) {
        Err(journal_core::JournalError::Tamper { kind: journal_core::TamperKind::MalformedRow, seq, .. }) => {
            assert_eq!(seq, 2);
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(rows) => panic!("read as {:?}", rows.rows.get(1).map(|row| &row.signature)),
    }
    let inputs = AuditInputs::new(tenant.clone(), Origin::new(ORIGIN).unwrap());
    let report = audit::audit(store, &inputs).unwrap();
    assert!(
        report.findings.iter().any(|finding| finding.code == FindingCode::ChainBroken
            && finding.run.as_deref() == Some(run.as_str())
            && finding.seq == Some(2)
            && finding.detail.contains(why)
            && !finding.detail.contains("does not match the stored bytes")),
        "the lenient audit names the row and what is wrong with it ({why}): {:#?}",
        report.findings
    );
}

/// A runtime on `plane`'s store held to `mark` (the plane's high-water
/// mark, as the CLI keeps one beside its key file).
pub fn runtime_with_mark<S: Store + 'static>(
    plane: &Plane<S>,
    mark: &Arc<journal_core::testkit::MemoryHighWater>,
) -> Runtime {
    RuntimeBuilder::new(Arc::clone(&plane.store) as Arc<dyn Store>)
        .tenant(plane.tenant.clone(), plane.origin.clone(), Some(plane.key.clone()))
        .high_water(Arc::clone(mark) as Arc<dyn journal_core::log::HighWater>)
        .build()
        .unwrap()
}

/// The careful hider's work under a running runtime: a sealed run and two
/// open runs (`transfer-1`, `transfer-2`) signed under `mark`, then the
/// first cut back to two records and the second deleted, each with the heads
/// leaf that covered it, and the log rebuilt from the sealed run's leaf
/// alone. Returns the runtime that ran before the hiding, and the cut run.
pub fn hide_two_open_runs_carefully<S: Store + TamperAccess + 'static>(
    plane: &Plane<S>,
    mark: &Arc<journal_core::testkit::MemoryHighWater>,
) -> (Runtime, RunId) {
    let sign = || plane.sign_held_to(Some(mark.as_ref()));
    let sealed = plane.run("sealed", true);
    sign();
    let running = runtime_with_mark(plane, mark);
    assert!(
        matches!(running.resume(&plane.tenant, &sealed), Err(journal_core::RuntimeError::Stopped { .. })),
        "the running plane has read the log once"
    );
    let cut = plane.run("transfer-1", false);
    let gone = plane.run("transfer-2", false);
    sign();
    let kept: Vec<_> = plane
        .store
        .seals(&plane.tenant)
        .unwrap()
        .into_iter()
        .filter(|leaf| leaf.run == sealed)
        .map(|leaf| (leaf.run, leaf.leaf_bytes))
        .collect();
    assert_eq!(kept.len(), 1);

    plane.cut_back_to_two(&cut);
    plane.store.hide_newest_heads_of(&plane.tenant, &cut);
    plane.store.delete_run(&plane.tenant, &gone);
    plane.store.hide_newest_heads_of(&plane.tenant, &gone);
    plane.store.rewrite_log(&plane.tenant, &kept);
    (running, cut)
}

/// R-RUN-5, R-PLANE-2 (attacker review, session 20): a runtime that had
/// read the log once (any admission or resume reads it) held only that
/// first reading to the plane's high-water mark; the leaves it caught up
/// with later were taken as the store gave them. So under a running plane,
/// a heads leaf signed after that first reading could be removed from the
/// store (the log rewritten without it, counter and nodes to match) with
/// the records it covered: the runtime found no leaf holding the run,
/// resumed the cut run and admitted the deleted one afresh, performing
/// their done effects again, although the mark it was given says the log
/// is longer. Every catch-up is held to the mark now, as a restart is.
pub fn a_heads_leaf_removed_under_a_running_runtime_is_held_to_the_signed_tree<S: Store + TamperAccess + 'static>(
    store: S,
) {
    let plane = Plane::on(store);
    let mark = Arc::new(journal_core::testkit::MemoryHighWater::default());
    let (running, cut) = hide_two_open_runs_carefully(&plane, &mark);

    let restarted = runtime_with_mark(&plane, &mark);
    for (name, runtime) in [("the running runtime", &running), ("a restarted runtime", &restarted)] {
        let resumed = resume_refusal(runtime, &plane.tenant, &cut, &format!("{name}: the cut run"));
        let redelivered = redelivery_refusal(runtime, &plane.tenant, "transfer-2", &format!("{name}: the deleted run"));
        for refused in [resumed, redelivered] {
            assert!(refused.is_tamper(), "{name}: refused, but not as damage: {refused}");
        }
    }
}

/// R-RUN-5, R-PLANE-2 (review 47): a running runtime kept every leaf it
/// read, the ones past the tree the plane had signed too, and held them to
/// a signed root only at the size it reached them. So leaves forged past
/// the mark (any bytes, nodes to match), read by a running runtime (any
/// admission or resume reads them), then taken out again before the plane
/// appended its own heads leaf there and signed a tree shorter than what
/// the runtime had read, stayed in its reading: the signed leaf that
/// covered the open run was never read, its root never checked. The run
/// cut back behind that signed leaf was resumed, and its done effect ran
/// again; a runtime restarted then refused it. Leaves past the signed tree
/// are read again at every catch-up now, never kept.
pub fn leaves_read_past_the_mark_and_taken_out_hide_no_signed_leaf<S: Store + TamperAccess + 'static>(store: S) {
    let plane = Plane::on(store);
    let mark = Arc::new(journal_core::testkit::MemoryHighWater::default());
    let sealed = plane.run("sealed", true);
    plane.sign_held_to(Some(mark.as_ref()));
    let running = runtime_with_mark(&plane, &mark);
    let cut = plane.run("transfer-1", false);
    let signed: Vec<_> =
        plane.store.seals(&plane.tenant).unwrap().into_iter().map(|leaf| (leaf.run, leaf.leaf_bytes)).collect();
    let size = signed.len();

    // Two leaves forged past the mark, read by the running runtime...
    let forged = RunId::new("forged").unwrap();
    let mut with_forged = signed.clone();
    with_forged.extend([(forged.clone(), b"forged-1".to_vec()), (forged, b"forged-2".to_vec())]);
    plane.store.rewrite_log(&plane.tenant, &with_forged);
    assert!(
        matches!(running.resume(&plane.tenant, &sealed), Err(journal_core::RuntimeError::Stopped { .. })),
        "the running runtime read the forged leaves"
    );
    // ...and taken out before the plane covers the open run and signs.
    plane.store.rewrite_log(&plane.tenant, &signed);
    plane.sign_held_to(Some(mark.as_ref()));
    let covered = plane.store.newest_heads_of(&plane.tenant, &cut).unwrap().expect("a signed heads leaf holds the run");
    assert_eq!(covered, size as u64, "the signed heads leaf is where the first forged leaf was");

    plane.cut_back_to_two(&cut);
    let restarted = runtime_with_mark(&plane, &mark);
    for (name, runtime) in [("a restarted runtime", &restarted), ("the running runtime", &running)] {
        match resume_refusal(runtime, &plane.tenant, &cut, &format!("{name}: the cut run")) {
            journal_core::JournalError::Tamper { run, .. } => assert_eq!(run, cut, "{name}"),
            other => panic!("{name}: refused, but not as tamper: {other}"),
        }
    }
}

/// R-RUN-5, R-COVER-2 (review 47): a fork read its source as the store
/// gave it, never held to what the log covers, as resume and the answers
/// are. So a run cut back behind a signed heads leaf (records removed after
/// the checkpoint, its runs row pointed back) was forked at its cut head,
/// the last record the store still had: the new run, its source's effects
/// up to there served, performed the cut-away done effect again. A fork of
/// a source cut back behind the plane is refused as the resume is.
pub fn a_fork_of_a_run_cut_back_behind_a_checkpoint_is_refused<S: Store + TamperAccess + 'static>(store: S) {
    let plane = Plane::on(store);
    let cut = plane.run("transfer-1", false);
    plane.sign();
    plane.cut_back_to_two(&cut);
    let request =
        AdmitRequest { idempotency_key: "fork-1".into(), plan: vec!["work".into()], budget: Budget::default() };
    match plane.runtime.fork(&plane.tenant, &cut, 2, request) {
        Err(journal_core::RuntimeError::Journal(journal_core::JournalError::Tamper { run, .. })) => {
            assert_eq!(run, cut, "names the cut source");
        }
        Err(other) => panic!("refused, but not as tamper: {other}"),
        Ok(Admission::Existing { run, status }) => panic!("answered as existing: {run} {status}"),
        Ok(Admission::New(mut handle)) => {
            let ran = handle.effect("ek:wire-transfer", "work", transfer_again).is_ok();
            panic!("the fork of the cut run was admitted; its source's done effect ran again: {ran}");
        }
    }
}

/// R-RUN-5, R-PLANE-2 (attacker review 15, session 22): the plane's mark
/// lost (its file deleted beside the store) left nothing to hold the log's
/// leaves to, so the careful hider's cut (the heads leaf that covered the
/// run removed, the log rebuilt from the other leaves) was resumed and the
/// deleted run admitted afresh, performing their done effects again, while
/// the plane refused to sign on that same lost mark. A lost mark cannot
/// tell whether the store is older than what the plane signed: no run is
/// admitted or resumed on it, by a running runtime or a restarted one.
pub fn a_lost_mark_admits_and_resumes_nothing<S: Store + TamperAccess + 'static>(store: S) {
    let plane = Plane::on(store);
    let mark = Arc::new(journal_core::testkit::MemoryHighWater::default());
    let (running, cut) = hide_two_open_runs_carefully(&plane, &mark);
    mark.lose("agentplane.highwater is missing");

    let restarted = runtime_with_mark(&plane, &mark);
    for (name, runtime) in [("the running runtime", &running), ("a restarted runtime", &restarted)] {
        let resumed = resume_refusal(runtime, &plane.tenant, &cut, &format!("{name}: the cut run"));
        let redelivered = redelivery_refusal(runtime, &plane.tenant, "transfer-2", &format!("{name}: the deleted run"));
        for refused in [resumed, redelivered] {
            assert!(refused.to_string().contains("is lost"), "{name}: refused for the lost mark: {refused}");
        }
    }
}

/// R-RUN-5, R-COVER-2 (attacker review, session 20): a sealed run enters
/// the log with its seal leaf, and no heads leaf ever holds it when it was
/// admitted, did its effect and sealed between two checkpoints. Resume and
/// redelivery read a run's covered head from the heads leaves only, and a
/// run's read finds its seal by the store's seal lookup (derived data). So
/// with the seal hidden from that lookup (its leaf left in the log as the
/// plane signed it), a sealed run cut back to before its done effect (its
/// runs row made open) was resumed, and one deleted outright was admitted
/// afresh by a redelivery of its key: each performed its done effect again.
/// A seal leaf holds its run's head as a heads leaf does: both are refused.
pub fn a_sealed_run_cut_back_or_deleted_behind_its_seal_is_never_run_again<S: Store + TamperAccess + 'static>(
    store: S,
) {
    let plane = Plane::on(store);
    let cut = plane.run("transfer-1", true);
    let gone = plane.run("transfer-2", true);
    plane.sign();
    assert_eq!(plane.store.newest_heads_of(&plane.tenant, &cut).unwrap(), None, "no heads leaf holds the run");

    let rows = plane.cut_back_to_two(&cut);
    plane.store.set_sealed_flag(&plane.tenant, &cut, false);
    plane.store.set_outcome_index(&plane.tenant, &cut, None);
    plane.store.hide_seal_of(&plane.tenant, &cut);
    plane.store.hide_seal_of(&plane.tenant, &gone);
    plane.store.delete_run(&plane.tenant, &gone);
    assert_eq!(plane.store.seals(&plane.tenant).unwrap().len(), 2, "both seal leaves are still in the log");
    assert!(plane.store.seal_of(&plane.tenant, &cut).unwrap().is_none(), "the lookup is blind to the seal");

    let restarted = RuntimeBuilder::new(Arc::clone(&plane.store) as Arc<dyn Store>)
        .tenant(plane.tenant.clone(), plane.origin.clone(), Some(plane.key.clone()))
        .build()
        .unwrap();
    for runtime in [&plane.runtime, &restarted] {
        match resume_refusal(runtime, &plane.tenant, &cut, "the cut sealed run") {
            journal_core::JournalError::Tamper { run, seq, .. } => {
                assert_eq!((run, seq), (cut.clone(), rows.last().unwrap().seq), "names the run and its sealed head");
            }
            other => panic!("refused, but not as tamper: {other}"),
        }
        match redelivery_refusal(runtime, &plane.tenant, "transfer-2", "the deleted sealed run") {
            journal_core::JournalError::Tamper { run, .. } => assert_eq!(run, gone),
            other => panic!("refused, but not as tamper: {other}"),
        }
    }
}

/// Resumes `run` through `runtime` and, when it is resumed, performs its done
/// effect again as a plane driving it would, then fails the test naming
/// `what`; the journal's refusal otherwise.
pub fn resume_refusal(runtime: &Runtime, tenant: &TenantId, run: &RunId, what: &str) -> journal_core::JournalError {
    match runtime.resume(tenant, run) {
        Err(journal_core::RuntimeError::Journal(err)) => err,
        Err(other) => panic!("{what}: refused, but not by the journal: {other}"),
        Ok(mut handle) => {
            let ran = handle.effect("ek:wire-transfer", "work", transfer_again).is_ok();
            panic!("{what} was resumed; its done effect ran again: {ran}");
        }
    }
}

/// Redelivers idempotency key `key` through `runtime` and, when a run is
/// admitted afresh, performs the effect again, then fails the test naming
/// `what`; the journal's refusal otherwise.
pub fn redelivery_refusal(runtime: &Runtime, tenant: &TenantId, key: &str, what: &str) -> journal_core::JournalError {
    let request = AdmitRequest { idempotency_key: key.into(), plan: vec!["work".into()], budget: Budget::default() };
    match runtime.admit(tenant, request) {
        Err(journal_core::RuntimeError::Journal(err)) => err,
        Err(other) => panic!("{what}: refused, but not by the journal: {other}"),
        Ok(Admission::Existing { run, status }) => panic!("{what}: answered as existing: {run} {status}"),
        Ok(Admission::New(mut handle)) => {
            let ran = handle.effect("ek:wire-transfer", "work", transfer_again).is_ok();
            panic!("{what} was admitted afresh; its done effect ran again: {ran}");
        }
    }
}

/// The wire transfer, performed a second time.
fn transfer_again() -> EffectOutput {
    EffectOutput { result: EffectResult::Ok { output: "sent again".into() }, charged: Counters::default() }
}

/// Review 25, R-RUN-2, R-RUN-5: a sealed run whose seal lookup and sealed
/// flag (both derived data) were cleared behind the plane, its records
/// untouched. The runtime told a sealed run by the seal lookup alone, so an
/// operator's answer (a conclusion, a withholding, a raised ceiling) was
/// appended after the seal, and a `failed` conclusion let a resume drive
/// the sealed run again (a cancelled run's remaining plan performed). A
/// chain whose last conclusion seals is frozen, whatever the derived rows
/// say: nothing is appended, and the run is not resumed.
pub fn a_sealed_run_with_its_seal_lookup_cleared_takes_no_record<S: Store + TamperAccess + 'static>(store: S) {
    let plane = Plane::on(store);
    let sealed = plane.run("transfer-1", true);
    plane.sign();
    let before = plane.store.read_run(&plane.tenant, &sealed).unwrap().rows.len();
    plane.store.hide_seal_of(&plane.tenant, &sealed);
    plane.store.set_sealed_flag(&plane.tenant, &sealed, false);
    assert!(plane.store.seal_of(&plane.tenant, &sealed).unwrap().is_none(), "the lookup is blind to the seal");

    let reopened =
        plane.runtime.conclude(&plane.tenant, &sealed, Outcome::Failed, journal_core::Verdict::None, "again");
    let refused_as_sealed = |answer: &Result<(), journal_core::runtime::RuntimeError>| {
        matches!(answer, Err(journal_core::runtime::RuntimeError::Journal(journal_core::JournalError::Sealed { .. })))
    };
    assert!(refused_as_sealed(&reopened), "a failed conclusion was appended after the seal: {reopened:?}");
    let withheld = plane.runtime.withhold(&plane.tenant, &sealed, "hold");
    assert!(refused_as_sealed(&withheld), "a withholding was appended after the seal: {withheld:?}");
    match plane.runtime.resume(&plane.tenant, &sealed) {
        Err(journal_core::runtime::RuntimeError::Stopped { status: journal_core::RunStatus::Succeeded, .. }) => {}
        Err(other) => panic!("the sealed run is refused as sealed, not for another reason: {other:?}"),
        Ok(_) => panic!("the sealed run was resumed"),
    }
    assert_eq!(plane.store.read_run(&plane.tenant, &sealed).unwrap().rows.len(), before, "nothing appended");
}

/// R-COVER-1, R-PLANE-2 (review 48): a leaf written behind the plane past
/// its signed tree, in the middle of what the next checkpoint signs, with
/// node hashes to match, naming only records the store holds, yet none the
/// plane appends: a seal of an open run at its head, a second seal of a run
/// sealed since, a sealed run's leaf filed under an open run's row, and a
/// seal naming another log. Nothing is signed, whatever the backend's seal
/// lookup answers.
pub fn a_leaf_the_plane_never_appends_is_never_signed<S: Store + TamperAccess + 'static>(make: impl Fn() -> S) {
    type Forge<S> = fn(&Plane<S>, &RunId, &RunId) -> (RunId, Vec<u8>);
    let forgeries: [(&str, Forge<S>); 4] = [
        ("a seal of an open run", |plane, _, open| {
            let rows = plane.store.read_run(&plane.tenant, open).unwrap().rows;
            let last = rows.last().unwrap();
            let head = ExpectedHead { seq: last.seq, hash: last.hash };
            (open.clone(), journal_core::SealLeaf::new(&plane.origin, open, head).to_bytes())
        }),
        ("a second seal", |plane, _, _| {
            let newest = plane.store.seals(&plane.tenant).unwrap().pop().unwrap();
            (newest.run, newest.leaf_bytes)
        }),
        ("a seal under another run's row", |plane, sealed, open| {
            (open.clone(), plane.store.seal_of(&plane.tenant, sealed).unwrap().unwrap().leaf_bytes)
        }),
        ("a seal of another log", |plane, sealed, _| {
            let bytes = plane.store.seal_of(&plane.tenant, sealed).unwrap().unwrap().leaf_bytes;
            let mut leaf = journal_core::SealLeaf::parse(&bytes).unwrap();
            leaf.origin = Origin::new("example.com/another-log").unwrap();
            (sealed.clone(), leaf.to_bytes())
        }),
    ];
    for (forged, forge) in forgeries {
        let plane = Plane::on(make());
        let sealed = plane.run("sealed-1", true);
        let open = plane.run("open-1", false);
        plane.sign();
        plane.run("sealed-2", true);
        let mut log: Vec<(RunId, Vec<u8>)> =
            plane.store.seals(&plane.tenant).unwrap().into_iter().map(|seal| (seal.run, seal.leaf_bytes)).collect();
        let newest = log.pop().unwrap();
        log.push(forge(&plane, &sealed, &open));
        log.push(newest);
        plane.store.rewrite_log(&plane.tenant, &log);
        let signed =
            journal_core::log::sign_current_head(plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.key, None);
        match signed {
            Err(
                journal_core::JournalError::WouldSignRollback { .. } | journal_core::JournalError::StoreDamage { .. },
            ) => {}
            other => panic!("{forged}: {:?}", other.map(|(_, signed)| signed.note().to_owned())),
        }
    }
}

/// R-RUN-7, R-AUD-8 (review 55): the tenant's cost (`Runtime::tenant_cost`)
/// with one run's runs row deleted behind the plane, its records left: the
/// run is refused, never left out of the figure.
pub fn tenant_cost_refuses_a_run_whose_runs_row_was_deleted<S: Store + TamperAccess + 'static>(store: S) {
    let plane = Plane::on(store);
    plane.run("kept", false);
    let rowless = plane.run("rowless", true);
    assert_eq!(plane.runtime.tenant_cost(&plane.tenant).unwrap().tokens, 10);
    plane.store.delete_runs_row(&plane.tenant, &rowless);
    match plane.runtime.tenant_cost(&plane.tenant) {
        Err(err) => assert!(err.to_string().contains(rowless.as_str()), "the run left out is named: {err}"),
        Ok(total) => panic!("the tenant's cost left out run {rowless}: {total:?}"),
    }
}

/// R-VER-4, R-AUD-8 (a rolling upgrade): a newer build concludes a run with
/// an outcome this build has no name for, and writes that name into the
/// runs row and the outcome index as it concludes. Read by this (older)
/// build, the run is build skew with its remedy (exit 3): the conclusion is
/// a record it cannot read. It was the whole tenant's audit failing as
/// damage ("the outcome index names an unknown outcome", exit 1), and on
/// PostgreSQL every read of the run too, before its records were looked at.
/// The same rows written behind the plane onto a run every record of which
/// reads here are still damage, never build skew: no build wrote them.
pub fn an_outcome_a_newer_build_concluded_is_build_skew_never_damage<S: Store + TamperAccess + 'static>(
    store: S,
    name_outcome: impl Fn(&S, &TenantId, &RunId, &str),
) {
    let plane = Plane::on(store);
    plane.run("sealed", true);
    let newer = plane.run("expiring", false);
    let forged = plane.run("forged", false);
    let saved = plane.sign();
    let inputs = plane.inputs(&saved);
    // The newer build's conclusion, appended after the checkpoint: this
    // build's `withheld` conclusion respelt as that build writes one.
    plane.runtime.withhold(&plane.tenant, &newer, "held").unwrap();
    let last = plane.store.read_run(&plane.tenant, &newer).unwrap().rows.last().unwrap().clone();
    let bytes = String::from_utf8(last.bytes.clone())
        .unwrap()
        .replace("\"outcome\":\"withheld\"", "\"outcome\":\"expired\"")
        .replace("\"version\":\"0.1.0\"}", "\"version\":\"9.9.9\"}")
        .into_bytes();
    assert!(String::from_utf8_lossy(&bytes).contains("\"expired\""), "the conclusion was respelt");
    let hash = journal_core::ChainHash::link(&last.prev_hash, &bytes);
    let seq = last.seq;
    plane.store.overwrite_row(&plane.tenant, &newer, journal_core::StoredRecord { bytes, hash, ..last });
    plane.store.set_runs_head(&plane.tenant, &newer, ExpectedHead { seq, hash });
    name_outcome(&plane.store, &plane.tenant, &newer, "expired");

    let read = plane.runtime.status(&plane.tenant, &newer).unwrap_err();
    let journal_core::RuntimeError::Journal(read) = read else { panic!("{read:?}") };
    assert!(read.is_build_skew() && !read.is_tamper(), "{read:?}");
    assert!(read.to_string().contains("9.9.9"), "the remedy names the build that wrote it: {read}");
    let report = audit::audit(plane.store.as_ref(), &inputs).unwrap();
    assert!(report.only_build_skew(), "only build skew: {:#?}", report.findings);

    name_outcome(&plane.store, &plane.tenant, &forged, "expired");
    let read = plane.runtime.status(&plane.tenant, &forged).unwrap_err();
    let journal_core::RuntimeError::Journal(read) = read else { panic!("{read:?}") };
    assert!(read.is_tamper() && !read.is_build_skew(), "{read:?}");
    let report = audit::audit(plane.store.as_ref(), &inputs).unwrap();
    assert!(!report.only_build_skew(), "a forged outcome is not build skew: {:#?}", report.findings);
    let named = report.findings.iter().filter(|f| f.run.as_deref() == Some(forged.as_str())).collect::<Vec<_>>();
    assert!(
        named.iter().any(|f| f.code == FindingCode::OutcomeIndexMismatch && f.detail.contains("expired")),
        "{:#?}",
        report.findings
    );
    assert!(named.iter().all(|f| f.class != FindingClass::BuildSkew), "{named:#?}");
}

/// R-VER-4, R-CHAIN-1 (review 74's note): a runs row an attacker gave an
/// outcome no build has a name for, on a run whose every record reads here:
/// an append at that run's head is refused as damage, nothing written, on
/// every backend. On redb the row read as an open run and the append went
/// on (a conclusion then left the forged name in the outcome index beside
/// the new one); PostgreSQL refused it. No build concluded so at the head
/// the caller holds: a newer build's conclusion is a record past it.
pub fn an_append_at_a_head_whose_row_names_an_unknown_outcome_is_refused_as_damage<
    S: Store + TamperAccess + 'static,
>(
    store: S,
    name_outcome: impl Fn(&S, &TenantId, &RunId, &str),
) {
    let plane = Plane::on(store);
    let forged = plane.run("forged", false);
    let before = plane.store.read_run(&plane.tenant, &forged).unwrap().rows;
    let head = before.last().map(|row| ExpectedHead { seq: row.seq, hash: row.hash });
    name_outcome(&plane.store, &plane.tenant, &forged, "expired");
    let journal = journal_core::Journal::new(plane.store.as_ref(), &plane.tenant, &plane.origin);
    let body = journal_core::RecordBody::StepStarted(journal_core::record::StepMark { step: "work".into() });
    match journal.append(&forged, head, None, body) {
        Err(err @ journal_core::JournalError::StoreDamage { .. }) => {
            assert!(err.is_tamper() && err.to_string().contains("\"expired\""), "the name is said: {err}");
        }
        other => panic!("an append at a forged outcome's head: {other:?}"),
    }
    let after = plane.store.read_run(&plane.tenant, &forged).unwrap().rows;
    assert_eq!(after.len(), before.len(), "nothing was written");
}
