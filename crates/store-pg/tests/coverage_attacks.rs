//! Issues 20 and 21 on PostgreSQL (a fresh database each): open runs cut back or deleted after a
//! saved checkpoint, forged index rows and a run copied in from another
//! tenant, each written with SQL behind the plane and found by the audit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../../tests/shared/coverage_attacks.rs"]
mod shared;

use audit::{FindingClass, FindingCode};
use store_pg::PgStore;

#[test]
fn r_aud_3_open_runs_cut_back_or_deleted_after_a_saved_checkpoint_are_found() {
    shared::open_runs_cut_back_or_deleted_are_found(PgStore::temporary().unwrap());
}

#[test]
fn r_aud_2_forged_index_rows_are_found() {
    shared::forged_index_rows_are_found(PgStore::temporary().unwrap());
}

#[test]
fn r_aud_1_a_run_copied_from_another_tenant_is_found() {
    shared::a_run_copied_from_another_tenant_is_found(PgStore::temporary().unwrap());
}

#[test]
fn r_aud_8_forged_or_missing_admission_order_rows_are_found() {
    shared::admission_order_rows_forged_or_missing_are_found(PgStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_run_cut_back_or_deleted_after_a_checkpoint_is_never_run_again() {
    shared::a_run_cut_back_or_deleted_after_a_checkpoint_is_never_run_again(PgStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_cut_hidden_from_the_heads_index_is_never_run_again() {
    shared::a_cut_hidden_from_the_heads_index_is_never_run_again(PgStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_cut_carried_into_a_later_heads_leaf_is_never_run_again() {
    shared::a_cut_carried_into_a_later_heads_leaf_is_never_run_again(PgStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_lost_mark_admits_and_resumes_nothing() {
    shared::a_lost_mark_admits_and_resumes_nothing(PgStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_heads_leaf_removed_under_a_running_runtime_is_held_to_the_signed_tree() {
    shared::a_heads_leaf_removed_under_a_running_runtime_is_held_to_the_signed_tree(PgStore::temporary().unwrap());
}

#[test]
fn r_run_5_leaves_read_past_the_mark_and_taken_out_hide_no_signed_leaf() {
    shared::leaves_read_past_the_mark_and_taken_out_hide_no_signed_leaf(PgStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_fork_of_a_run_cut_back_behind_a_checkpoint_is_refused() {
    shared::a_fork_of_a_run_cut_back_behind_a_checkpoint_is_refused(PgStore::temporary().unwrap());
}

#[test]
fn r_run_5_a_sealed_run_cut_back_or_deleted_behind_its_seal_is_never_run_again() {
    shared::a_sealed_run_cut_back_or_deleted_behind_its_seal_is_never_run_again(PgStore::temporary().unwrap());
}

/// R-AUD-8, R-AUD-3, found by an attacker review (session 16), with SQL:
/// a heads leaf's seal row renamed to an open run admitted after the
/// anchor (the seal lookup `prove` uses reads that column) hid the run from
/// "not covered" and audited clean; heads entries inserted at a position
/// holding no heads leaf fed the newest-heads index unchecked. Both are
/// findings now, and the open run stays listed as not covered.
#[test]
fn r_aud_8_a_heads_leaf_row_renamed_or_entries_where_no_leaf_is_are_found() {
    let plane = shared::Plane::on(PgStore::temporary().unwrap());
    let (_sealed, open) = (plane.run("a", true), plane.run("c", false));
    let saved = plane.sign();
    let open_after = plane.run("e", false);
    let inputs = plane.inputs(&saved);
    let audit_now = || audit::audit(plane.store.as_ref(), &inputs).unwrap();
    let uncovered = |report: &audit::AuditReport| report.not_checked.iter().any(|n| n.what.ends_with("open runs"));
    let report = audit_now();
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert!(uncovered(&report), "{:#?}", report.not_checked);

    let mut sql = plane.store.raw();
    let renamed = sql
        .execute(
            "UPDATE seals SET run = $1 WHERE tenant = 't' AND position = (SELECT min(position) FROM seals WHERE tenant = 't' AND run = 'agentplane:heads')",
            &[&open_after.as_str()],
        )
        .unwrap();
    assert_eq!(renamed, 1);
    let report = audit_now();
    let named = shared::runs_found(&report, audit::FindingCode::SealIndexMismatch);
    assert_eq!(named, vec![open_after.to_string()], "{:#?}", report.findings);
    assert!(uncovered(&report), "the open run is still said to be uncovered: {:#?}", report.not_checked);
    sql.execute("UPDATE seals SET run = 'agentplane:heads' WHERE tenant = 't' AND run = $1", &[&open_after.as_str()])
        .unwrap();

    let head = journal_core::Store::read_run(plane.store.as_ref(), &plane.tenant, &open).unwrap().head.unwrap();
    sql.execute(
        "INSERT INTO heads_entries (tenant, position, run, seq, hash) VALUES ('t', 99, $1, $2, $3)",
        &[&open.as_str(), &(head.seq as i64), &head.hash.as_bytes().as_slice()],
    )
    .unwrap();
    let report = audit_now();
    shared::assert_stray_heads_entries_found(&report, 99, &open);
}

/// Attacker review (session 17), R-COVER-2, R-AUD-8, with SQL: the moved
/// mark (`runs.covered`, what the plane reads to pick the open runs the next
/// heads leaf covers) set to true after a run moved leaves the move out of
/// every later checkpoint; the audit against such a checkpoint only listed
/// the records as not checked ("bring a newer checkpoint", which never
/// covers them), and a cut back to the old covered head after it audits
/// clean and complete. The stale mark must be a finding while it is there.
#[test]
fn r_cover_2_a_moved_mark_cleared_with_sql_is_found_before_the_move_can_be_cut_unseen() {
    use journal_core::record::StepMark;
    use journal_core::testkit::TamperAccess as _;
    use journal_core::{Journal, RecordBody, Store as _};
    let plane = shared::Plane::on(PgStore::temporary().unwrap());
    let t = plane.tenant.clone();
    let open = plane.run("open", false);
    plane.run("sealed-1", true);
    plane.sign();
    let covered = plane.store.read_run(&t, &open).unwrap().head.unwrap();
    let journal = Journal::new(plane.store.as_ref(), &plane.tenant, &plane.origin);
    let mut head = covered;
    for step in ["refund", "notify"] {
        head = journal
            .append(&open, Some(head), None, RecordBody::StepStarted(StepMark { step: step.into() }))
            .unwrap()
            .head;
    }
    let cleared = plane
        .store
        .raw()
        .execute("UPDATE runs SET covered = true WHERE tenant = 't' AND run = $1", &[&open.as_str()])
        .unwrap();
    assert_eq!(cleared, 1);
    plane.run("sealed-2", true);
    let saved = plane.sign();
    let inputs = plane.inputs(&saved);
    let complete = |report: &audit::AuditReport| report.not_checked.iter().all(|n| n.what == "record signatures");
    let window = audit::audit(plane.store.as_ref(), &inputs).unwrap();

    let records = plane.store.read_run(&t, &open).unwrap().rows;
    for row in records.iter().filter(|row| row.seq > covered.seq) {
        plane.store.delete_record(&t, &open, row.seq);
    }
    plane.store.set_runs_head(&t, &open, covered);
    let after_cut = audit::audit(plane.store.as_ref(), &inputs).unwrap();
    assert!(after_cut.findings.is_empty() && complete(&after_cut), "the cut is invisible once made: {after_cut:#?}");
    assert!(head.seq > covered.seq);

    assert!(!complete(&window), "{:#?}", window.not_checked);
    assert!(
        shared::runs_found(&window, audit::FindingCode::MovedMarkMissing).contains(&open.to_string()),
        "a run whose head moved before the saved checkpoint, left out of it by a cleared moved mark, is named by a \
         finding; the audit said: findings {:#?}, not checked {:#?}",
        window.findings,
        window.not_checked
    );
}

/// R-PLANE-2, R-LOG-7 (attacker review, session 17), with SQL: a stored
/// node forged above the last signed tree is never signed; the seal rows
/// since that tree are read in one range query (`Store::seals_in`).
#[test]
fn r_plane_2_the_plane_never_signs_a_tree_its_stored_leaves_do_not_give() {
    shared::a_forged_node_is_never_signed(PgStore::temporary().unwrap());
}

/// What an audit of a store whose rows were written with SQL says: a
/// finding, or the store refused as damaged (`ErrorClass::Tamper`, exit 1),
/// never clean and never a panic. `None` when it called the store clean.
fn audit_refuses(plane: &shared::Plane<PgStore>, inputs: &audit::AuditInputs) -> Option<String> {
    match audit::audit(plane.store.as_ref(), inputs) {
        Ok(report) if report.findings.is_empty() => None,
        Ok(report) => Some(format!("{:?}", report.findings.iter().map(|f| (f.code, &f.detail)).collect::<Vec<_>>())),
        Err(audit::AuditError::Store(err)) => {
            assert_eq!(err.class(), journal_core::ErrorClass::Tamper, "{err}");
            Some(err.to_string())
        }
        Err(other) => panic!("the audit failed otherwise: {other}"),
    }
}

/// R-AUD-1, R-AUD-2 (attacker review, session 18), with DDL the redb
/// testkit cannot express: a column whose NOT NULL was dropped, then set to
/// NULL, or retyped, made every read of it panic (`Row::get`), the audit
/// included, instead of reporting damage. Each is damage now, on every read
/// path the audit and the commands take.
#[test]
fn r_aud_2_null_or_retyped_columns_are_damage_never_a_panic() {
    use journal_core::Store as _;
    let attacks = [
        "ALTER TABLE records ALTER COLUMN bytes DROP NOT NULL; UPDATE records SET bytes = NULL WHERE seq = 2",
        "ALTER TABLE records ALTER COLUMN kind DROP NOT NULL; UPDATE records SET kind = NULL WHERE seq = 2",
        "ALTER TABLE records ALTER COLUMN seq TYPE integer",
        "ALTER TABLE runs ALTER COLUMN head_hash DROP NOT NULL; UPDATE runs SET head_hash = NULL",
        "ALTER TABLE runs ALTER COLUMN sealed DROP NOT NULL; UPDATE runs SET sealed = NULL",
        "ALTER TABLE runs ALTER COLUMN covered DROP NOT NULL; UPDATE runs SET covered = NULL",
        "ALTER TABLE seals ALTER COLUMN leaf DROP NOT NULL; UPDATE seals SET leaf = NULL",
        "ALTER TABLE signed_checkpoints ALTER COLUMN note DROP NOT NULL; UPDATE signed_checkpoints SET note = NULL",
        "ALTER TABLE log_nodes ALTER COLUMN level TYPE integer",
        "ALTER TABLE log_counter ALTER COLUMN next_position DROP NOT NULL; UPDATE log_counter SET next_position = NULL",
        "ALTER TABLE heads_entries ALTER COLUMN hash DROP NOT NULL; UPDATE heads_entries SET hash = NULL",
        "ALTER TABLE admission_order ALTER COLUMN at_millis TYPE numeric",
        "ALTER TABLE idempotency ALTER COLUMN run DROP NOT NULL; UPDATE idempotency SET run = NULL",
    ];
    let mut failed = Vec::new();
    for attack in attacks {
        let plane = shared::Plane::on(PgStore::temporary().unwrap());
        let (sealed, open) = (plane.run("a", true), plane.run("c", false));
        let saved = plane.sign();
        let inputs = plane.inputs(&saved);
        assert!(audit::audit(plane.store.as_ref(), &inputs).unwrap().findings.is_empty());
        plane.store.raw().batch_execute(attack).unwrap();
        let verdict = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let store = plane.store.as_ref();
            for run in [&sealed, &open] {
                let _ = store.read_run(&plane.tenant, run);
                let _ = store.seal_of(&plane.tenant, run);
            }
            let _ = (store.seals(&plane.tenant), store.log_counters(&plane.tenant), store.runs(&plane.tenant, None));
            let _ = (store.signed_checkpoints(&plane.tenant), store.admissions(&plane.tenant, None, None, 10));
            let _ = store.run_by_idempotency_key(&plane.tenant, "a");
            audit_refuses(&plane, &inputs)
        }));
        match verdict {
            Ok(Some(_)) => {}
            Ok(None) => failed.push(format!("{attack}: audited clean")),
            Err(_) => failed.push(format!("{attack}: a read panicked")),
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// R-AUD-8 (attacker review, session 18), with SQL: a runs row's outcome
/// set to a text no outcome has was read as "no outcome", which agrees with
/// an open run, so the forged row audited clean. It is damage now: a
/// finding of the audit, and every read of the run, since every record of
/// it reads at this build (beside a record this build cannot read, it is a
/// newer build's conclusion: build skew, see
/// `r_ver_4_an_outcome_a_newer_build_concluded_is_build_skew_never_damage`).
#[test]
fn r_aud_8_a_runs_row_naming_an_unknown_outcome_is_found() {
    let plane = shared::Plane::on(PgStore::temporary().unwrap());
    let open = plane.run("c", false);
    let saved = plane.sign();
    let inputs = plane.inputs(&saved);
    assert!(audit::audit(plane.store.as_ref(), &inputs).unwrap().findings.is_empty());
    let forged = plane
        .store
        .raw()
        .execute("UPDATE runs SET outcome = 'bogus' WHERE tenant = 't' AND run = $1", &[&open.as_str()])
        .unwrap();
    assert_eq!(forged, 1);
    let refused = audit_refuses(&plane, &inputs).expect("a forged outcome audits clean");
    assert!(refused.contains("OutcomeIndexMismatch") && refused.contains("\\\"bogus\\\""), "{refused}");
    let read = plane.runtime.status(&plane.tenant, &open).unwrap_err();
    assert!(
        matches!(read, journal_core::RuntimeError::Journal(journal_core::JournalError::StoreDamage { .. })),
        "{read}"
    );
}

/// R-AUD-1, R-AUD-8 (attacker review, session 18), with DDL: a table's
/// primary key dropped and a second row written under a key the plane wrote
/// (a forged node hash, a stale runs head, a second counter). The snapshot
/// kept one row per key, whichever came last, so the audit called clean a
/// store whose other row a reader may be served. A key met twice is damage.
#[test]
fn r_aud_8_a_key_written_twice_behind_a_dropped_primary_key_is_found() {
    use journal_core::Store as _;
    let attacks = [
        "ALTER TABLE runs DROP CONSTRAINT runs_pkey; INSERT INTO runs SELECT * FROM runs WHERE NOT sealed",
        "ALTER TABLE log_nodes DROP CONSTRAINT log_nodes_pkey;
         INSERT INTO log_nodes SELECT tenant, level, index, sha256(hash) FROM log_nodes;
         UPDATE log_nodes SET hash = hash WHERE hash NOT IN (SELECT sha256(hash) FROM log_nodes)",
        "ALTER TABLE log_counter DROP CONSTRAINT log_counter_pkey; INSERT INTO log_counter SELECT * FROM log_counter",
        "ALTER TABLE idempotency DROP CONSTRAINT idempotency_pkey;
         INSERT INTO idempotency SELECT tenant, key, 'forged' FROM idempotency;
         UPDATE idempotency SET run = run WHERE run <> 'forged'",
    ];
    let mut clean = Vec::new();
    for attack in attacks {
        let plane = shared::Plane::on(PgStore::temporary().unwrap());
        let (_sealed, open) = (plane.run("a", true), plane.run("c", false));
        let saved = plane.sign();
        let inputs = plane.inputs(&saved);
        assert!(audit::audit(plane.store.as_ref(), &inputs).unwrap().findings.is_empty());
        let head = plane.store.read_run(&plane.tenant, &open).unwrap().head;
        plane.store.raw().batch_execute(attack).unwrap();
        match audit_refuses(&plane, &inputs) {
            Some(refused) => assert!(refused.contains("twice"), "{attack}: {refused}"),
            None => clean.push(attack),
        }
        // What the plane and the commands read of the same key is damage too,
        // never one of the two rows, nor a retryable failure.
        let (store, t) = (plane.store.as_ref(), &plane.tenant);
        let read = match attack.split_whitespace().nth(2) {
            Some("runs") => store.read_run(t, &open).map(drop),
            Some("log_nodes") => store.read_log_nodes(t, &[tlog::NodeId::new(0, 0)]).map(drop),
            Some("log_counter") => store.log_counters(t).map(drop),
            _ => store.run_by_idempotency_key(t, "c").map(drop),
        };
        assert!(matches!(read, Err(journal_core::JournalError::StoreDamage { .. })), "{attack}: {read:?}");
        // And an append that reads the key (a run's head, the log counter)
        // is refused as damage, not answered with a retryable failure
        // (noted in session 18, fixed in session 20).
        let append = match attack.split_whitespace().nth(2) {
            Some("runs") => {
                let step = journal_core::RecordBody::StepStarted(journal_core::record::StepMark { step: "x".into() });
                Some(journal_core::Journal::new(store, t, &plane.origin).append(&open, head, None, step).map(drop))
            }
            Some("log_counter") => Some(seal_one(&plane)),
            _ => None,
        };
        if let Some(append) = append {
            assert!(matches!(append, Err(journal_core::JournalError::StoreDamage { .. })), "{attack}: {append:?}");
        }
    }
    assert!(clean.is_empty(), "audited clean: {clean:#?}");
}

/// R-LOG-5 (attacker review, session 18), with SQL: the last signed
/// checkpoint's number set to the largest bigint made the next signing add
/// one to it (an overflow: a panic, or a wrap to the smallest number, below
/// every row). It is damage now, and nothing is signed.
#[test]
fn r_log_5_a_signed_checkpoint_numbered_the_largest_bigint_is_damage_not_an_overflow() {
    let plane = shared::Plane::on(PgStore::temporary().unwrap());
    plane.run("a", true);
    plane.sign();
    let moved = plane.store.raw().execute("UPDATE signed_checkpoints SET n = $1", &[&i64::MAX]).unwrap();
    assert_eq!(moved, 1);
    plane.run("b", true);
    let signed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        journal_core::log::sign_current_head(plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.key, None)
            .map(drop)
    }));
    let Ok(signed) = signed else { panic!("signing panicked") };
    assert!(matches!(signed, Err(journal_core::JournalError::StoreDamage { .. })), "{signed:?}");
}

/// R-LOG-5 (review 39's note), with SQL: a cosigned checkpoint row numbered
/// the largest bigint made the next round's `max(n) + 1` fail in the server
/// ("bigint out of range"), reported as an I/O failure (exit 2, a sweep that
/// retries it every round) where it is damage. Nothing is recorded.
#[test]
fn r_log_5_a_cosigned_checkpoint_numbered_the_largest_bigint_is_damage() {
    use journal_core::Store as _;
    let plane = shared::Plane::on(PgStore::temporary().unwrap());
    plane.run("a", true);
    let signed = plane.sign();
    let row = journal_core::store::SignedTree { tree: signed.checkpoint().tree(), note: signed.note().to_owned() };
    plane.store.record_cosigned_checkpoint(&plane.tenant, row.clone()).unwrap();
    let moved = plane.store.raw().execute("UPDATE cosigned_checkpoints SET n = $1", &[&i64::MAX]).unwrap();
    assert_eq!(moved, 1);
    let recorded = plane.store.record_cosigned_checkpoint(&plane.tenant, row.clone());
    assert!(matches!(recorded, Err(journal_core::JournalError::StoreDamage { .. })), "{recorded:?}");
    assert_eq!(plane.store.cosigned_checkpoints(&plane.tenant).unwrap(), vec![row], "nothing was recorded");
}

/// R-SIG-3, R-CHAIN-5: one of a signed row's two signature columns cleared
/// with SQL ([`shared::a_half_signature_pair_is_a_malformed_row`]); or the
/// row's key reference pointed at no `signing_keys` row (the key's row
/// deleted with its constraints dropped, or the reference rewritten), which
/// the finding names as such, not as bytes that do not hash.
#[test]
fn r_sig_3_a_half_signature_pair_is_a_malformed_row() {
    // Schema 5 names a row's key by reference, older rows by its text.
    for (columns, why) in [
        ("key_id = NULL, key_ref = NULL", "a signature without the key id"),
        ("signature = NULL", "a signing key id without its signature"),
        ("key_id = NULL, key_ref = 424242", "key reference 424242 names no `signing_keys` row"),
    ] {
        let store = std::sync::Arc::new(PgStore::temporary().unwrap());
        let (tenant, run) = shared::signed_plane(std::sync::Arc::clone(&store));
        let cleared = store
            .raw()
            .execute(
                &format!("UPDATE records SET {columns} WHERE tenant = $1 AND run = $2 AND seq = 2"),
                &[&tenant.as_str(), &run.as_str()],
            )
            .unwrap();
        assert_eq!(cleared, 1);
        shared::a_half_signature_pair_is_a_malformed_row(store.as_ref(), &tenant, &run, why);
    }
}

/// Seals a new run through the runtime, reporting the journal's error.
fn seal_one(plane: &shared::Plane<PgStore>) -> Result<(), journal_core::JournalError> {
    let request = journal_core::AdmitRequest {
        idempotency_key: "sealed-late".into(),
        plan: vec![],
        budget: journal_core::Budget::default(),
    };
    let journal = |err: journal_core::RuntimeError| match err {
        journal_core::RuntimeError::Journal(err) => err,
        other => panic!("not a journal error: {other}"),
    };
    let journal_core::Admission::New(run) = plane.runtime.admit(&plane.tenant, request).map_err(journal)? else {
        panic!("a new key")
    };
    run.succeed("done").map_err(journal)
}

/// The audit of `tenant` with the signed plane's record key, every record
/// required to be signed ([`shared::signed_plane`]).
fn audit_signed(store: &PgStore, tenant: &journal_core::TenantId) -> audit::AuditReport {
    use journal_core::Signer as _;
    let signer = journal_core::Ed25519Signer::from_seed("spiffe://attacks.test/runtime", [9; 32]);
    let mut inputs =
        audit::AuditInputs::new(tenant.clone(), journal_core::Origin::new("attacks.test/plane/t").unwrap());
    inputs.require_signature = true;
    inputs.record_keys = vec![audit::RecordKey { key_id: signer.key_id().to_owned(), public_key: signer.public_key() }];
    audit::audit(store, &inputs).unwrap()
}

/// Issue 25, R-STORE-3, R-CHAIN-1 (schema 5, session 20): a row written now
/// keeps its bytes encoded (zstd against the frozen dictionary: fewer bytes
/// than written), its key by reference and no previous hash; it reads back
/// as written, signatures verified, and so does a row in the form of
/// schema 4 (bytes as written, the key id's text, the previous hash)
/// beside it. A row whose encoding is forged (a number no build writes, a
/// frame that does not decode, an unknown tag, a frame naming more than
/// the encoding's bound) is damage to `read_run` and a broken chain at its
/// seq to the audit, which goes on; never a panic or an allocation.
#[test]
fn r_store_3_schema_5_rows_are_encoded_keyed_by_reference_and_read_as_written() {
    use journal_core::Store as _;
    use journal_core::testkit::TamperAccess as _;
    let store = std::sync::Arc::new(PgStore::temporary().unwrap());
    let (tenant, run) = shared::signed_plane(std::sync::Arc::clone(&store));
    let rows = store.read_run(&tenant, &run).unwrap().rows;
    assert!(rows.len() >= 3 && rows.iter().all(|row| row.signature.is_some()));
    let stored = store
        .raw()
        .query(
            "SELECT encoding, octet_length(bytes), key_id IS NULL AND key_ref IS NOT NULL, prev_hash IS NULL
             FROM records WHERE tenant = $1 AND run = $2 ORDER BY seq",
            &[&tenant.as_str(), &run.as_str()],
        )
        .unwrap();
    let mut stored_bytes = 0;
    for row in &stored {
        assert_eq!(row.get::<_, i16>(0), 1, "encoded");
        stored_bytes += row.get::<_, i32>(1);
        assert!(row.get::<_, bool>(2) && row.get::<_, bool>(3), "keyed by reference, no previous hash");
    }
    let written: usize = rows.iter().map(|row| row.bytes.len()).sum();
    assert!((stored_bytes as usize) < written, "{stored_bytes} stored for {written} written");
    let report = audit_signed(&store, &tenant);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert_eq!(report.checked.signatures, rows.len() as u64);

    // Every other row put back in the form of schema 4.
    for row in rows.iter().step_by(2) {
        store.overwrite_row(&tenant, &run, row.clone());
    }
    assert_eq!(store.read_run(&tenant, &run).unwrap().rows, rows, "old and new rows side by side read as written");
    let report = audit_signed(&store, &tenant);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert_eq!(report.checked.signatures, rows.len() as u64);

    let bomb = {
        let mut frame = vec![1u8];
        frame.extend(zstd::bulk::compress(&vec![b' '; 1 << 20], 19).unwrap());
        frame
    };
    for forged in ["encoding = 7", "bytes = '\\x01ffff'::bytea", "bytes = '\\x09'::bytea || bytes", "bytes = $3"] {
        let store = std::sync::Arc::new(PgStore::temporary().unwrap());
        let (tenant, run) = shared::signed_plane(std::sync::Arc::clone(&store));
        let params: [&(dyn postgres::types::ToSql + Sync); 3] = [&tenant.as_str(), &run.as_str(), &bomb];
        // Rows written now are encoded (encoding 1): each forgery keeps that.
        let sql = format!("UPDATE records SET {forged} WHERE tenant = $1 AND run = $2 AND seq = 2 AND encoding = 1");
        let changed = if forged.contains("$3") {
            store.raw().execute(&sql, &params).unwrap()
        } else {
            store.raw().execute(&sql, &params[..2]).unwrap()
        };
        assert_eq!(changed, 1);
        match store.read_run(&tenant, &run) {
            Err(journal_core::JournalError::StoreDamage { detail, .. }) => {
                assert!(detail.contains("record 2"), "{detail}")
            }
            other => panic!("{forged}: {:?}", other.map(|rows| rows.rows.len())),
        }
        let report = audit_signed(&store, &tenant);
        assert!(
            report.findings.iter().any(|finding| finding.code == audit::FindingCode::ChainBroken
                && finding.run.as_deref() == Some(run.as_str())
                && finding.seq == Some(2)),
            "{forged}: {:#?}",
            report.findings
        );
    }
}

/// R-STORE-3 (attacker review of schema 5): a trigger on `signing_keys`
/// that skips every insert and update (DDL behind the plane) makes the
/// interning of a signing key return no row. `query_one` made that a
/// row-count error without a SQLSTATE, which `pg` calls retryable: every
/// signed append of every new writer connection failed as a passing fault,
/// retried for ever, while the store is damaged. It is damage now.
#[test]
fn r_store_3_a_signing_key_that_interns_to_no_row_is_damage_not_retryable() {
    let store = PgStore::temporary().unwrap();
    store
        .raw()
        .batch_execute(
            "CREATE FUNCTION skip_every_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
             CREATE TRIGGER signing_keys_skipped BEFORE INSERT OR UPDATE ON signing_keys
                 FOR EACH ROW EXECUTE FUNCTION skip_every_row();",
        )
        .unwrap();
    let tenant = journal_core::TenantId::new("t").unwrap();
    let origin = journal_core::Origin::new("attacks.test/plane/t").unwrap();
    let signer = journal_core::Ed25519Signer::from_seed("spiffe://attacks.test/runtime", [9; 32]);
    let run = journal_core::RunId::new("a").unwrap();
    let step = journal_core::RecordBody::StepStarted(journal_core::record::StepMark { step: "x".into() });
    let appended =
        journal_core::Journal::new(&store, &tenant, &origin).signed_by(&signer).append(&run, None, None, step);
    match appended {
        Err(err @ journal_core::JournalError::StoreDamage { .. }) => assert!(!err.is_retryable(), "{err}"),
        other => panic!("{:?}", other.map(drop)),
    }
}

/// R-AUD-8 (attacker review of schema 5): `signing_keys`' primary key
/// dropped and a second row written under a reference the plane wrote.
/// The snapshot found the reference twice (damage), but `read_run` joined
/// the table and so served every signed row once per key row: a run of
/// three records read as six, which its verifier then called a reordered
/// chain, blaming the records for what was done to the keys. A reference
/// met twice is damage to both.
#[test]
fn r_aud_8_a_signing_key_reference_written_twice_is_damage_to_read_run_and_the_audit() {
    use journal_core::Store as _;
    let store = std::sync::Arc::new(PgStore::temporary().unwrap());
    let (tenant, run) = shared::signed_plane(std::sync::Arc::clone(&store));
    store
        .raw()
        .batch_execute(
            "ALTER TABLE signing_keys DROP CONSTRAINT signing_keys_pkey;
             ALTER TABLE signing_keys DROP CONSTRAINT signing_keys_key_id_key;
             INSERT INTO signing_keys (ref, key_id) OVERRIDING SYSTEM VALUE SELECT ref, key_id FROM signing_keys",
        )
        .unwrap();
    for read in [store.read_run(&tenant, &run).map(drop), store.snapshot(&tenant).map(drop)] {
        match read {
            Err(journal_core::JournalError::StoreDamage { detail, .. }) => {
                assert!(detail.contains("signing_keys") && detail.contains("twice"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
    }
}

/// R-AUD-2, R-LOG-7: a heads leaf commits to its entries in run id order by
/// bytes. A database whose text collation orders ids otherwise (ICU `en`:
/// `run-a` before `run-B`, where bytes put `B` first) must still give the
/// entries in that order to every reader: no false finding in the audit, the
/// newest-heads answers and the entries a proof is made from as the leaf
/// holds them.
#[test]
fn r_aud_2_heads_entries_are_in_byte_order_whatever_the_database_collation() {
    use journal_core::testkit::{origin, sample_run, tenant};
    use journal_core::{Journal, Outcome, RunId, Store as _};
    let url = store_pg::testkit::fresh_database_collated("en");
    let store = PgStore::open(&url).unwrap();
    let (tenant, origin) = (tenant(), origin());
    let runs = ["run-a", "run-B", "run-b", "run-A"].map(|id| RunId::new(id).unwrap());
    let journal = Journal::new(&store, &tenant, &origin);
    for run in &runs {
        sample_run(&journal, run, Outcome::Failed).unwrap();
    }
    let positions = store.append_heads(&tenant, &origin).unwrap();
    assert_eq!(positions.len(), 1, "one heads leaf for the moved runs");
    let entries = store.heads_entries(&tenant, positions[0]).unwrap();
    let ids: Vec<&str> = entries.iter().map(|entry| entry.run.as_str()).collect();
    assert_eq!(ids, ["run-A", "run-B", "run-a", "run-b"], "byte order");
    let by_range = store.heads_entries_in(&tenant, 0..u64::MAX).unwrap();
    assert_eq!(by_range.get(&positions[0]), Some(&entries), "the range read agrees");

    let inputs = audit::AuditInputs::new(tenant.clone(), origin.clone());
    let report = audit::audit(&store, &inputs).unwrap();
    // (The testkit's run ids are not derived from their keys: a tenant
    // finding each, which is not what this test is about.)
    let other: Vec<_> = report.findings.iter().filter(|f| f.code != audit::FindingCode::TenantMismatch).collect();
    assert!(other.is_empty(), "{other:#?}");
    for run in &runs {
        assert_eq!(store.newest_heads_of(&tenant, run).unwrap(), Some(positions[0]), "{run}");
    }
}

/// R-LOG-7, R-AUD-8 (attacker review 14), with SQL: the seal count kept
/// beside the log counter (schema 4's trigger) is what the plane reads to
/// tell whether positions have holes. Moved off the seals stored (the
/// trigger switched off, or the row updated) on a log with no hole, it made
/// the plane refuse to sign ("sealed runs were removed behind the store
/// (run `agentplane audit`)") and `prove` answer from the walk "with holes",
/// while the audit, which counted the seals it read in place of the stored
/// count, called the store clean: its check of the count compared the
/// snapshot with itself. The stored count is a finding now (derived data),
/// and no hole is claimed for it.
#[test]
fn r_log_7_a_stale_seal_count_that_makes_the_plane_refuse_to_sign_is_found() {
    use journal_core::{LogSource, LogView};
    for (attack, then_seal) in [
        ("UPDATE log_counter SET seal_count = seal_count - 1", false),
        ("UPDATE log_counter SET seal_count = seal_count + 1", false),
        // The plane seals a run while the trigger is off: that seal is not counted.
        ("ALTER TABLE seals DISABLE TRIGGER seals_counted", true),
    ] {
        let plane = shared::Plane::on(PgStore::temporary().unwrap());
        plane.run("a", true);
        plane.run("c", false);
        let saved = plane.sign();
        let inputs = plane.inputs(&saved);
        assert!(audit::audit(plane.store.as_ref(), &inputs).unwrap().findings.is_empty());
        plane.store.raw().batch_execute(attack).unwrap();
        if then_seal {
            plane.run("b", true);
        }
        // What the plane makes of it: holes, and no signature.
        let view = LogView::open(plane.store.as_ref(), &plane.tenant).unwrap();
        assert_eq!(view.source(), LogSource::WalkWithHoles, "{attack}");
        let signed =
            journal_core::log::sign_current_head(plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.key, None);
        assert!(matches!(signed, Err(journal_core::JournalError::WouldSignRollback { .. })), "{attack}: {signed:?}");
        // What the audit makes of it: the count, not a deletion.
        let report = audit::audit(plane.store.as_ref(), &inputs).unwrap();
        let codes: Vec<_> = report.findings.iter().map(|f| f.code).collect();
        assert_eq!(codes, [audit::FindingCode::CachedNodesMismatch], "{attack}: {:#?}", report.findings);
        assert!(report.findings[0].detail.contains("seals"), "{attack}: {:#?}", report.findings);
    }
}

/// Review 25 (the tamper search on PostgreSQL), R-COVER-2, R-AUD-8: a
/// sealed run cut back after a saved checkpoint covered its seal leaf, its
/// runs row and outcome index made to agree, and its seal row's run column
/// (what the seal lookup reads: derived data) renamed with SQL, to the
/// heads leaf's reserved name or to another sealed run. The audit told
/// which run a seal leaf seals by that column, not by the leaf's bytes, so
/// the anchored leaf was never held to the cut run's chain: the cut was
/// derived data only (a seal "of a run with no journal", an outcome index
/// that disagrees), never the deletion the anchor shows. A seal leaf is
/// told by its bytes now, as a heads leaf is.
#[test]
fn r_cover_2_a_sealed_run_cut_back_with_its_seal_row_renamed_is_a_deletion_under_the_anchor() {
    use journal_core::Store as _;
    use journal_core::testkit::TamperAccess as _;
    for renamed_to in [journal_core::heads::HEADS_LEAF_RUN, "other"] {
        let plane = shared::Plane::on(PgStore::temporary().unwrap());
        let cut = plane.run("transfer-1", true);
        let other = plane.run("transfer-2", true);
        let saved = plane.sign();
        let inputs = plane.inputs(&saved);
        let report = audit::audit(plane.store.as_ref(), &inputs).unwrap();
        assert!(report.findings.is_empty(), "{:#?}", report.findings);

        let rows = plane.cut_back_to_two(&cut);
        let (t, c) = (plane.tenant.as_str(), cut.as_str());
        plane.store.set_sealed_flag(&plane.tenant, &cut, false);
        plane.store.set_outcome_index(&plane.tenant, &cut, None);
        plane.store.set_moved(&plane.tenant, &cut, true);
        let name = if renamed_to == "other" { other.as_str() } else { renamed_to };
        plane.store.raw().execute("UPDATE runs SET outcome = NULL WHERE tenant = $1 AND run = $2", &[&t, &c]).unwrap();
        let renamed = plane
            .store
            .raw()
            .execute("UPDATE seals SET run = $3 WHERE tenant = $1 AND run = $2", &[&t, &c, &name])
            .unwrap();
        assert_eq!(renamed, 1);
        assert!(plane.store.seal_of(&plane.tenant, &cut).unwrap().is_none(), "the lookup is blind to the seal");

        let report = audit::audit(plane.store.as_ref(), &inputs).unwrap();
        assert!(
            report.findings.iter().any(|f| f.code == FindingCode::HeadCutBack
                && f.class == FindingClass::Deletion
                && f.run.as_deref() == Some(cut.as_str())
                && f.seq == Some(rows.len() as u64)
                && f.anchors == ["saved.note"]),
            "renamed to {renamed_to}: {:#?}",
            report.findings
        );
        // And the lookup's lie is named too.
        assert!(
            report.findings.iter().any(|f| f.code == FindingCode::SealIndexMismatch),
            "renamed to {renamed_to}: {:#?}",
            report.findings
        );
    }
}

#[test]
fn r_run_2_a_sealed_run_with_its_seal_lookup_cleared_takes_no_record() {
    shared::a_sealed_run_with_its_seal_lookup_cleared_takes_no_record(PgStore::temporary().unwrap());
}

/// R-PLANE-2, R-RUN-5 (review 47), with SQL: the careful hider's cut (open
/// runs cut back and deleted with the heads leaf that covered them, the log
/// rebuilt from the other leaves, below the plane's mark) with the
/// `seal_count` of the counter row raised to the size the plane signed.
/// The stale-view test read that column alone ("another signer saw more"),
/// so the store was not older than the mark for admission's check, for the
/// sweep (which appended its heads leaf to the cut log) and for signing
/// (a retryable conflict, never the refusal). The log the store gives is
/// what is held to the mark: it shrank. Resume and redelivery were refused
/// by the leaves' reading all along.
#[test]
fn r_plane_2_a_cut_log_with_its_seal_count_raised_is_older_than_the_mark() {
    use journal_core::log::{HighWater as _, HighWaterMark};
    let plane = shared::Plane::on(PgStore::temporary().unwrap());
    let mark = std::sync::Arc::new(journal_core::testkit::MemoryHighWater::default());
    let (running, cut) = shared::hide_two_open_runs_carefully(&plane, &mark);
    let HighWaterMark::Signed(signed) = mark.last(&plane.origin).unwrap() else { panic!("the plane signed") };
    let raised = plane
        .store
        .raw()
        .execute("UPDATE log_counter SET seal_count = $1 WHERE tenant = 't'", &[&(signed.size as i64)])
        .unwrap();
    assert_eq!(raised, 1);

    let older = journal_core::log::older_than_mark(plane.store.as_ref(), &plane.tenant, &plane.origin, mark.as_ref());
    assert!(matches!(&older, Ok(Some(reason)) if reason.contains("shrank")), "the store is older: {older:?}");
    let signing = journal_core::log::sign_current_head(
        plane.store.as_ref(),
        &plane.tenant,
        &plane.origin,
        &plane.key,
        Some(mark.as_ref()),
    );
    assert!(
        matches!(signing, Err(journal_core::JournalError::WouldSignRollback { .. })),
        "refused as a rollback, not a conflict to retry: {:?}",
        signing.map(|(_, signed)| signed.note().to_owned())
    );
    let restarted = shared::runtime_with_mark(&plane, &mark);
    for (name, runtime) in [("the running runtime", &running), ("a restarted runtime", &restarted)] {
        let resumed = shared::resume_refusal(runtime, &plane.tenant, &cut, &format!("{name}: the cut run"));
        let redelivered =
            shared::redelivery_refusal(runtime, &plane.tenant, "transfer-2", &format!("{name}: the deleted run"));
        for refused in [resumed, redelivered] {
            assert!(refused.is_tamper(), "{name}: refused, but not as damage: {refused}");
        }
    }
}

/// R-COVER-1, R-PLANE-2 (review 48): see
/// `shared::a_leaf_the_plane_never_appends_is_never_signed`.
#[test]
fn r_cover_1_a_leaf_the_plane_never_appends_is_never_signed() {
    shared::a_leaf_the_plane_never_appends_is_never_signed(|| PgStore::temporary().unwrap());
}

/// R-STORE-3, R-UX-3: heads entries planted with SQL at the log position
/// the next heads leaf takes (for a run that then moves). Signing met them
/// as it stored that leaf's entries: a storage error (exit 2, "duplicate
/// key"), so every signing and sweep round failed the same way as if the
/// server were down. It is damage naming the row, with what to do.
#[test]
fn r_store_3_heads_entries_planted_at_the_next_position_are_damage_to_signing() {
    let plane = shared::Plane::on(PgStore::temporary().unwrap());
    let open = plane.run("c", false);
    plane.sign();
    let next: i64 =
        plane.store.raw().query_one("SELECT next_position FROM log_counter WHERE tenant = 't'", &[]).unwrap().get(0);
    let planted = plane
        .store
        .raw()
        .execute(
            "INSERT INTO heads_entries (tenant, position, run, seq, hash)
             SELECT tenant, $1, run, head_seq, head_hash FROM runs WHERE tenant = 't' AND run = $2",
            &[&next, &open.as_str()],
        )
        .unwrap();
    assert_eq!(planted, 1);
    let mut run = plane.runtime.resume(&plane.tenant, &open).unwrap();
    run.finish_step("work").unwrap();
    let signed =
        journal_core::log::sign_current_head(plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.key, None);
    match signed {
        Err(journal_core::JournalError::StoreDamage { tenant, detail }) => {
            assert_eq!(tenant, plane.tenant);
            assert!(detail.contains(&format!("position {next}")) && detail.contains("agentplane verify"), "{detail}");
        }
        other => panic!("signing over planted heads entries: {:?}", other.map(drop)),
    }
}

/// R-UX-3 (attacker review 50): a bigint column the plane reads as a count,
/// a seq or a position set negative with SQL (or an admission instant
/// before 1970). Every reader refused it as
/// damage, but said only "a stored count or position is negative (-1)":
/// neither the table, the column nor the row, in a store of millions of
/// rows. The damage names them now, for the audit and the reader that met it.
#[test]
fn r_ux_3_a_negative_count_seq_or_position_is_damage_naming_its_row() {
    use journal_core::Store as _;
    let attacks = [
        ("UPDATE records SET seq = -1 WHERE seq = 2 AND run = $1", "records row of run", "seq"),
        ("UPDATE runs SET head_seq = -5 WHERE run = $1", "runs row of run", "head_seq"),
        ("UPDATE log_counter SET next_position = -1 WHERE tenant <> $1", "log_counter row", "next_position"),
        ("UPDATE log_counter SET seal_count = -1 WHERE tenant <> $1", "log_counter row", "seal_count"),
        ("UPDATE seals SET position = -1 WHERE run <> $1 AND position = 0", "seals row of run", "position"),
        ("UPDATE heads_entries SET seq = -1 WHERE run = $1", "heads_entries row of run", "seq"),
        ("UPDATE heads_entries SET position = -1 WHERE run = $1", "heads_entries row of run", "position"),
        ("UPDATE signed_checkpoints SET size = -1 WHERE tenant <> $1", "signed_checkpoints row", "size"),
        ("UPDATE log_nodes SET index = -1 WHERE level = 0 AND index = 1 AND tenant <> $1", "log_nodes row", "index"),
        ("UPDATE admission_order SET at_millis = -1 WHERE run = $1", "admission_order row of run", "instant"),
    ];
    let mut unnamed = Vec::new();
    for (attack, row, column) in attacks {
        let plane = shared::Plane::on(PgStore::temporary().unwrap());
        let (_sealed, open) = (plane.run("a", true), plane.run("c", false));
        let saved = plane.sign();
        let inputs = plane.inputs(&saved);
        assert!(audit::audit(plane.store.as_ref(), &inputs).unwrap().findings.is_empty());
        assert_eq!(plane.store.raw().execute(attack, &[&open.as_str()]).unwrap(), 1, "{attack}");
        let (store, t) = (plane.store.as_ref(), &plane.tenant);
        let read = match attack.split_whitespace().nth(1) {
            Some("records" | "runs") => store.read_run(t, &open).map(drop),
            Some("log_counter") => store.log_counters(t).map(drop),
            Some("seals") => store.seals(t).map(drop),
            Some("heads_entries") if column == "seq" => store.heads_entries_in(t, 0..10).map(drop),
            Some("heads_entries") => store.newest_heads_of(t, &open).map(drop),
            Some("signed_checkpoints") => store.signed_checkpoints(t).map(drop),
            Some("admission_order") => store.admissions(t, None, None, 10).map(drop),
            _ => store.read_log_nodes(t, &[tlog::NodeId::new(0, 1)]).map(drop),
        };
        let audited = audit_refuses(&plane, &inputs).unwrap_or_else(|| "audited clean".into());
        for said in [read.map_err(|err| err.to_string()).err().unwrap_or_else(|| "read".into()), audited] {
            let what = if column == "instant" { "1970" } else { "negative" };
            let names = said.contains(row) && said.contains(column) && said.contains(what);
            let missing = column == "index" && said.contains("log node") && said.contains("missing");
            if !names && !missing {
                unnamed.push(format!("{attack}: {said}"));
            }
        }
    }
    assert!(unnamed.is_empty(), "{unnamed:#?}");
}

/// R-UX-3 (attacker review 50): a signed or cosigned checkpoint row whose
/// note was made huge with SQL (PostgreSQL keeps up to a gigabyte a value).
/// Every reader of those rows (signing, `verify`, `checkpoint --cosigned`,
/// `export`, the sweep's every round, the console, the audit) read each note
/// whole: four rows of 100 MB took a gigabyte to list, and nothing bounded
/// it. A note past what a signed note can be (its text and its signatures,
/// each at most the note bound) is damage naming the row, and is not read.
#[test]
fn r_ux_3_a_checkpoint_note_past_the_note_bound_is_damage_never_read_whole() {
    use journal_core::Store as _;
    use journal_core::store::CheckpointRows;
    let past = i32::try_from(journal_core::store::MAX_STORED_NOTE_BYTES).unwrap();
    for table in ["signed_checkpoints", "cosigned_checkpoints"] {
        let plane = shared::Plane::on(PgStore::temporary().unwrap());
        plane.run("a", true);
        let saved = plane.sign();
        let inputs = plane.inputs(&saved);
        let row = journal_core::store::SignedTree { tree: saved.checkpoint().tree(), note: saved.note().to_owned() };
        plane.store.record_cosigned_checkpoint(&plane.tenant, row).unwrap();
        let grown = plane
            .store
            .raw()
            .execute(&format!("UPDATE {table} SET note = note || repeat('x', $1)"), &[&(past + 1)])
            .unwrap();
        assert_eq!(grown, 1);
        let (store, t) = (plane.store.as_ref(), &plane.tenant);
        let reads = [
            store.signed_checkpoints(t).map(drop),
            store.last_signed_checkpoint(t).map(drop),
            store.newest_checkpoints(t, CheckpointRows::Signed, 1).map(drop),
            store.cosigned_checkpoints(t).map(drop),
            store.newest_checkpoints(t, CheckpointRows::Cosigned, 1).map(drop),
        ];
        let refused: Vec<String> = reads.into_iter().filter_map(|read| read.err().map(|err| err.to_string())).collect();
        let reading_it = if table == "signed_checkpoints" { 3 } else { 2 };
        assert_eq!(refused.len(), reading_it, "{table}: every read of the row refuses it: {refused:?}");
        for said in &refused {
            assert!(said.contains(&format!("{table} row")) && said.contains("note of"), "{table}: {said}");
        }
        let audited = audit_refuses(&plane, &inputs).expect("audited clean");
        assert!(audited.contains(&format!("{table} row")), "{table}: {audited}");
    }
}

/// R-AUD-3, R-AUD-5 (review 50's open item): a records row whose seq was
/// set negative with SQL ended the whole snapshot as damage, so the audit
/// gave no verdict on any other run: a sealed run deleted beside it was not
/// found. The row stands where it came, its run's chain broken there with
/// the row named, and the audit goes on: the deletion is found too (the log
/// shrank below the anchor).
#[test]
fn r_aud_3_a_records_row_with_a_negative_seq_breaks_its_run_alone() {
    use journal_core::testkit::TamperAccess as _;
    let plane = shared::Plane::on(PgStore::temporary().unwrap());
    let (sealed, open) = (plane.run("a", true), plane.run("c", false));
    let saved = plane.sign();
    let inputs = plane.inputs(&saved);
    assert!(audit::audit(plane.store.as_ref(), &inputs).unwrap().findings.is_empty());
    let forged =
        plane.store.raw().execute("UPDATE records SET seq = -1 WHERE seq = 2 AND run = $1", &[&open.as_str()]).unwrap();
    assert_eq!(forged, 1);
    plane.store.delete_run(&plane.tenant, &sealed);

    let report = audit::audit(plane.store.as_ref(), &inputs).expect("a verdict, not an error");
    let broken = report
        .with_code(FindingCode::ChainBroken)
        .find(|f| f.run.as_deref() == Some(open.as_str()))
        .unwrap_or_else(|| panic!("the forged row's run is broken: {:#?}", report.findings));
    assert!(broken.detail.contains("records row of run") && broken.detail.contains("negative"), "{}", broken.detail);
    assert!(
        report.findings.iter().any(|f| f.class == FindingClass::Deletion),
        "the deleted sealed run is found: {:#?}",
        report.findings
    );
}

#[test]
fn r_run_7_tenant_cost_refuses_a_run_whose_runs_row_was_deleted() {
    shared::tenant_cost_refuses_a_run_whose_runs_row_was_deleted(PgStore::temporary().unwrap());
}

#[test]
fn r_ver_4_an_outcome_a_newer_build_concluded_is_build_skew_never_damage() {
    shared::an_outcome_a_newer_build_concluded_is_build_skew_never_damage(
        PgStore::temporary().unwrap(),
        PgStore::name_outcome,
    );
}

#[test]
fn r_ver_4_an_append_at_a_head_whose_row_names_an_unknown_outcome_is_refused_as_damage() {
    shared::an_append_at_a_head_whose_row_names_an_unknown_outcome_is_refused_as_damage(
        PgStore::temporary().unwrap(),
        PgStore::name_outcome,
    );
}

/// R-UX-3, R-AUD-3 (review 79): a records row's bytes were read whole
/// whatever their size, though no build stores a record past
/// [`journal_core::record::MAX_RECORD_BYTES`] (and its tag byte): a row grown
/// with SQL to a gigabyte (a few megabytes on disk, PostgreSQL compressing
/// it) cost every reader of its run a gigabyte, and each such row of a run
/// another. A row past the bound is damage naming its size, not read; the
/// audit finds its run's chain broken there and goes on.
#[test]
fn r_ux_3_a_records_row_past_the_record_bound_is_damage_never_read_whole() {
    use journal_core::Store as _;
    let past = i32::try_from(journal_core::record::MAX_RECORD_BYTES + 1).unwrap();
    let plane = shared::Plane::on(PgStore::temporary().unwrap());
    let run = plane.run("a", true);
    let saved = plane.sign();
    let inputs = plane.inputs(&saved);
    // Kept as written (tag 0), so the row decodes to what it holds.
    let grown = plane
        .store
        .raw()
        .execute(
            "UPDATE records SET bytes = '\\x00'::bytea || convert_to(repeat('x', $3), 'UTF8'), encoding = 1
             WHERE tenant = $1 AND run = $2 AND seq = 2",
            &[&plane.tenant.as_str(), &run.as_str(), &past],
        )
        .unwrap();
    assert_eq!(grown, 1);
    match plane.store.read_run(&plane.tenant, &run) {
        Err(journal_core::JournalError::StoreDamage { detail, .. }) => {
            assert!(detail.contains("record 2") && detail.contains(&format!("{} bytes", past + 1)), "{detail}");
        }
        other => panic!("a row past the bound is read: {:?}", other.map(|rows| rows.rows.len())),
    }
    let report = audit::audit(plane.store.as_ref(), &inputs).expect("audited");
    let broken = report.findings.iter().find(|finding| {
        finding.code == audit::FindingCode::ChainBroken
            && finding.run.as_deref() == Some(run.as_str())
            && finding.seq == Some(2)
    });
    let broken = broken.unwrap_or_else(|| panic!("{:#?}", report.findings));
    assert!(broken.detail.contains(&format!("{} bytes", past + 1)), "{broken:#?}");
}
