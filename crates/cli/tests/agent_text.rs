//! Text agent code hands the runtime (step names, effect keys, outputs,
//! errors) comes from model output, and a store's rows may be written
//! behind the plane: what the commands print of them stays readable.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::sync::Arc;

use journal_core::testkit::TamperAccess;
use journal_core::{Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, RuntimeBuilder, Store};

const ORIGIN: &str = "cli.test/plane/default";

fn tenant() -> journal_core::TenantId {
    journal_core::TenantId::new("default").unwrap()
}

/// A redb plane in `dir` holding one run driven by `drive`; the run's id.
fn plane_with(
    dir: &std::path::Path,
    drive: impl FnOnce(&mut journal_core::RunHandle<'_>),
) -> (Arc<store_redb::RedbStore>, journal_core::RunId) {
    let store = Arc::new(store_redb::RedbStore::create(&dir.join("plane.redb")).unwrap());
    let runtime = RuntimeBuilder::new(Arc::clone(&store) as Arc<dyn Store>)
        .tenant(tenant(), journal_core::Origin::new(ORIGIN).unwrap(), None)
        .build()
        .unwrap();
    let request = AdmitRequest { idempotency_key: "job".into(), plan: vec!["a".into()], budget: Budget::default() };
    let Admission::New(mut run) = runtime.admit(&tenant(), request).unwrap() else { panic!("admitted twice") };
    drive(&mut run);
    (store, run.run().clone())
}

/// R-UX-3: `runs` escaped the control characters of an unverified run's
/// problem with `--ids` (on stderr), but its table printed the problem as
/// it came, and a problem quotes what it could not read: a record written
/// behind the plane with an escape sequence in a field's name (its chain
/// relinked, so it reads as a shape this build does not know) retitled the
/// terminal or erased the lines above it from the listing.
#[test]
fn r_ux_3_runs_prints_no_control_character_of_an_unverified_runs_problem() {
    let dir = tempfile::tempdir().unwrap();
    let (store, run) = plane_with(dir.path(), |run| run.start_step("a").unwrap());
    let rows = store.read_run(&tenant(), &run).unwrap().rows;
    let last = rows.last().unwrap().clone();
    let text = String::from_utf8(last.bytes.clone()).unwrap();
    let forged =
        text.replace("{\"step\":\"a\"}", "{\"step\":\"a\",\"\\u001b[1A\\u001b[2K\\u001b]0;owned\\u0007\\n\":1}");
    assert_ne!(forged, text);
    let hash = journal_core::ChainHash::link(&last.prev_hash, forged.as_bytes());
    let seq = last.seq;
    store.overwrite_row(&tenant(), &run, journal_core::StoredRecord { hash, bytes: forged.into_bytes(), ..last });
    // The recorded head made to match too: nothing else commits to the
    // bytes as written, so the problem is the shape this build cannot read
    // (review 65: with the head left, it is tamper, and quotes nothing).
    store.set_runs_head(&tenant(), &run, journal_core::ExpectedHead { seq, hash });
    drop(store);
    let out = agentplane(dir.path(), &["runs", "--store", "plane.redb", "--origin", ORIGIN]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_ne!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("UNVERIFIED"), "{stdout}");
    assert!(stdout.contains("owned"), "the problem quotes the field: {stdout}");
    assert!(!stdout.chars().any(|c| c.is_control() && c != '\n'), "{stdout:?}");
    assert_eq!(stdout.lines().count(), 2, "a header and the run's one line: {stdout}");
}

/// R-UX-3, R-AUD-1: `verify` (the audit) printed each finding as it came,
/// and a finding's detail quotes what it could not read: the record above,
/// written behind the plane, put its escape sequences on the terminal from
/// the audit's report. Each finding is one line, escaped, now.
#[test]
fn r_ux_3_verify_prints_no_control_character_of_a_finding() {
    let root = tempfile::tempdir().unwrap();
    ok(root.path(), &["demo"]);
    let dir = root.path().join("agentplane-demo");
    let listed = json(&dir, &["runs", "--outcome", "withheld", "--json"]);
    let run = journal_core::RunId::new(listed[0]["run"].as_str().unwrap()).unwrap();
    let store = store_redb::RedbStore::open(&dir.join("agentplane.redb")).unwrap();
    let rows = store.read_run(&tenant(), &run).unwrap().rows;
    let last = rows.last().unwrap().clone();
    let text = String::from_utf8(last.bytes.clone()).unwrap();
    let forged = text.replace("\"outcome\":", "\"\\u001b[1A\\u001b]0;owned\\u0007\\n\":1,\"outcome\":");
    assert_ne!(forged, text);
    let hash = journal_core::ChainHash::link(&last.prev_hash, forged.as_bytes());
    let row = journal_core::StoredRecord { hash, bytes: forged.into_bytes(), signature: None, ..last };
    store.overwrite_row(&tenant(), &run, row);
    drop(store);
    let dir = dir.as_path();
    let out = agentplane(dir, &["verify"]);
    let all = support::text(&out);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(stdout.contains("FINDING") && stdout.contains("owned"), "{all:?}");
    let quoting = stdout.lines().find(|line| line.contains("owned")).unwrap();
    assert!(quoting.starts_with("FINDING") && quoting.contains("expected one of"), "one line: {stdout}");
    assert!(!stdout.chars().any(|c| c.is_control() && c != '\n'), "{stdout:?}");
}

/// R-UX-3: `show` lays its timeline out with every column as wide as its
/// widest cell, and cut only an effect's output and a reason: a step's
/// name, an effect key, the plan or the idempotency key (model output, up
/// to a record's 16 MiB) made its column that wide on every line, so a run
/// of n records with one name of w characters printed n times w. A cell is
/// cut after 80 characters now; `--json` has every text whole.
#[test]
fn r_ux_3_show_cuts_a_huge_name_so_no_column_is_wider_than_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let name = "n".repeat(100_000);
    let (_store, run) = plane_with(dir.path(), |run| {
        run.start_step(&name).unwrap();
        for i in 0..20 {
            run.effect(&format!("ek:{i}"), "a", || EffectOutput {
                result: EffectResult::Ok { output: "ok".into() },
                charged: Counters::default(),
            })
            .unwrap();
        }
    });
    let out = ok(dir.path(), &["show", run.as_str(), "--store", "plane.redb", "--origin", ORIGIN]);
    assert!(out.len() < 20_000, "show printed {} bytes for a name of {}", out.len(), name.len());
    assert!(out.lines().all(|line| line.chars().count() < 400), "no line is wider than its cells: {out}");
    assert!(out.contains("step nnnn"), "the step is shown, cut: {}", out.lines().nth(3).unwrap_or_default());
    let shown = json(dir.path(), &["show", run.as_str(), "--store", "plane.redb", "--origin", ORIGIN, "--json"]);
    assert_eq!(shown["records"].as_array().unwrap().len(), 63, "the JSON has every record");
    assert!(out.contains("plan: a"), "a short text is whole: {out}");
}

/// R-RUN-7 (review 55): `cost` held a total past `u64::MAX` at the limit and
/// printed it as the figure, so a charge near the limit an effect reported
/// hid every charge after it (the tenant's total did not move). It is now a
/// typed refusal naming the dimension, and no figure is printed.
#[test]
fn r_run_7_cost_refuses_a_total_past_u64_max() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, run) = plane_with(dir.path(), tokens_past_u64_max);
    for args in [vec!["cost"], vec!["cost", run.as_str()]] {
        let args: Vec<&str> = args.into_iter().chain(["--store", "plane.redb", "--origin", ORIGIN]).collect();
        let said = fails(dir.path(), &args, 2);
        assert!(said.contains("tokens") && said.contains("18446744073709551615"), "{args:?}: {said}");
    }
}

/// R-RUN-7, R-UX-2 (review 72): `cost` refuses a total past u64::MAX, since
/// a figure held at the limit hides every charge after it, but `runs --json`
/// and `diff --json` printed the same run's tokens held at the limit
/// (18446744073709551615, exact in the text, a number no charge made): two
/// commands, two answers for one figure. A figure past the limit is `null`
/// in both JSON documents, and `past 2^64-1` in the tables.
#[test]
fn r_run_7_runs_and_diff_print_no_figure_held_at_u64_max() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, run) = plane_with(dir.path(), tokens_past_u64_max);
    let plane = ["--store", "plane.redb", "--origin", ORIGIN];
    let runs = json(dir.path(), &[&["runs", "--json"][..], &plane].concat());
    assert_eq!(runs[0]["run"], run.as_str(), "{runs}");
    assert_eq!(runs[0]["tokens"], serde_json::Value::Null, "{runs}");
    let out = agentplane(dir.path(), &[&["diff", run.as_str(), run.as_str(), "--json"][..], &plane].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let diff: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(diff["cost"]["a"]["tokens"], serde_json::Value::Null, "{diff}");
    assert_eq!(diff["cost"]["a"]["effects"], 2, "the other figures stand: {diff}");
    let table = ok(dir.path(), &[&["runs"][..], &plane].concat());
    assert!(!table.contains("18446744073709551615"), "{table}");
}

/// Drives `run` through two effects whose tokens together pass `u64::MAX`.
fn tokens_past_u64_max(run: &mut journal_core::RunHandle<'_>) {
    run.start_step("a").unwrap();
    for (key, tokens) in [("ek:huge", u64::MAX - 5), ("ek:more", 1000)] {
        let charged = Counters { tokens, ..Counters::default() };
        run.effect(key, "a", || EffectOutput { result: EffectResult::Ok { output: "ok".into() }, charged }).unwrap();
    }
}
