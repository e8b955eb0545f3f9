//! End-to-end tests of the `agentplane` binary on a temporary directory
//! (R-UX-1..3, R-EXP-1, R-LOG-2).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::path::Path;

use serde_json::Value;

/// A directory where `agentplane demo` ran; `path()` is the plane it made
/// there, in a folder of its own.
struct Demo {
    _root: tempfile::TempDir,
    plane: std::path::PathBuf,
}

impl Demo {
    fn path(&self) -> &Path {
        &self.plane
    }
}

fn demo_dir() -> Demo {
    demo_dir_with_output().0
}

fn demo_dir_with_output() -> (Demo, String) {
    let root = tempfile::tempdir().unwrap();
    let out = ok(root.path(), &["demo"]);
    let plane = root.path().join("agentplane-demo");
    assert!(plane.join("agentplane.toml").is_file() && plane.join("agentplane.redb").is_file());
    (Demo { _root: root, plane }, out)
}

fn vkey_line(text: &str) -> String {
    text.lines().find(|l| l.matches('+').count() >= 2 && !l.contains(' ')).expect("a vkey line").to_owned()
}

fn sealed_run(dir: &Path) -> String {
    let runs = json(dir, &["runs", "--outcome", "succeeded", "--json"]);
    runs[0]["run"].as_str().unwrap().to_owned()
}

#[test]
fn r_ux_1_demo_reaches_every_outcome_and_prints_a_verifiable_checkpoint() {
    let (dir, out) = demo_dir_with_output();
    let vkey = witness::VerifierKey::parse(&vkey_line(&out)).unwrap();
    let runs = json(dir.path(), &["runs", "--json"]);
    let outcomes: Vec<&str> = runs.as_array().unwrap().iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    for outcome in ["succeeded", "cancelled", "abandoned", "failed", "exhausted", "withheld", "quarantined"] {
        assert!(outcomes.contains(&outcome), "demo reaches {outcome}: {outcomes:?}");
    }
    assert!(runs.as_array().unwrap().iter().all(|r| r["run"].is_string()));
    // `checkpoint` prints the signed note exactly as a witness receives it.
    let note = ok(dir.path(), &["checkpoint"]);
    let (signed, _) = witness::SignedCheckpoint::open(note.as_bytes(), &[&vkey]).unwrap();
    // Five sealed runs, then the heads leaf that puts the open ones under
    // the checkpoint (issue 20).
    assert_eq!(signed.checkpoint().tree().size, 6, "five sealed runs and one heads leaf");
    let as_json = json(dir.path(), &["checkpoint", "--json"]);
    assert_eq!(as_json["size"], 6);
    assert_eq!(as_json["origin"], "agentplane.local/plane/default");
    assert!(witness::SignedCheckpoint::open(as_json["note"].as_str().unwrap().as_bytes(), &[&vkey]).is_ok());
    // Running it again reuses the store and the key, and the log only grows.
    ok(dir.path(), &["demo"]);
    let later = ok(dir.path(), &["checkpoint"]);
    let (later, _) = witness::SignedCheckpoint::open(later.as_bytes(), &[&vkey]).unwrap();
    assert_eq!(later.checkpoint().tree().size, 12);
    let proof = json(dir.path(), &["prove", "--consistency", "6", "--json"]);
    let path: Vec<tlog::NodeHash> = proof["proof"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| tlog::NodeHash::from_hex(h.as_str().unwrap()).unwrap())
        .collect();
    // Every hash in JSON is lowercase hex: the checkpoint's root is the note's, re-encoded.
    assert_eq!(as_json["root"], signed.checkpoint().tree().root.to_string());
    assert_eq!(proof["old_root"], signed.checkpoint().tree().root.to_string());
    later.checkpoint().tree().verify_extends(&signed.checkpoint().tree(), &tlog::ConsistencyProof::new(path)).unwrap();
}

#[test]
fn keygen_prints_a_vkey_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(dir.path(), &["keygen", "--origin", "example.test/plane"]);
    let vkey = witness::VerifierKey::parse(out.trim()).unwrap();
    assert_eq!(vkey.name(), "example.test/plane");
    let again = agentplane(dir.path(), &["keygen"]);
    assert_eq!(again.status.code(), Some(2));
}

#[test]
fn r_log_2_prove_json_verifies_against_the_checkpoint() {
    let dir = demo_dir();
    let run = sealed_run(dir.path());
    let proof = json(dir.path(), &["prove", &run, "--json"]);
    for field in ["index", "size", "root", "leaf_hash", "proof"] {
        assert!(!proof[field].is_null(), "prove --json has {field}");
    }
    // Hashes are lowercase hex, as in every command's JSON.
    let hex = |v: &Value| v.as_str().unwrap().to_owned();
    let tree =
        tlog::Tree::new(proof["size"].as_u64().unwrap(), tlog::RootHash::from_hex(&hex(&proof["root"])).unwrap());
    let leaf = tlog::LeafHash::from_hex(&hex(&proof["leaf_hash"])).unwrap();
    let path = proof["proof"].as_array().unwrap().iter().map(|h| tlog::NodeHash::from_hex(&hex(h)).unwrap()).collect();
    tree.verify_inclusion(&leaf, proof["index"].as_u64().unwrap(), &tlog::InclusionProof::new(path)).unwrap();
    let note = json(dir.path(), &["checkpoint", "--json"]);
    assert_eq!(note["root"], proof["root"], "the proof is against the checkpoint's root");
    // A run that is not sealed is proven by the heads leaf that holds its
    // head (issue 20): the leaf in the checkpoint's tree, the entry in the
    // leaf, and the head is the run's last record.
    let failed = json(dir.path(), &["runs", "--outcome", "failed", "--json"])[0]["run"].as_str().unwrap().to_owned();
    let head = json(dir.path(), &["prove", &failed, "--json"]);
    assert_eq!(head["kind"], "head", "{head}");
    let tree = tlog::Tree::new(head["size"].as_u64().unwrap(), tlog::RootHash::from_hex(&hex(&head["root"])).unwrap());
    let path = |key: &str| {
        tlog::InclusionProof::new(
            head[key].as_array().unwrap().iter().map(|h| tlog::NodeHash::from_hex(&hex(h)).unwrap()).collect(),
        )
    };
    let leaf = tlog::LeafHash::from_hex(&hex(&head["leaf_hash"])).unwrap();
    tree.verify_inclusion(&leaf, head["index"].as_u64().unwrap(), &path("proof")).unwrap();
    assert_eq!(note["root"], head["root"], "against the checkpoint's root");
    let shown = json(dir.path(), &["show", &failed, "--json"]);
    let records = shown["records"].as_array().unwrap();
    assert_eq!(head["head_seq"].as_u64().unwrap(), records.len() as u64, "the head is its last record");
    // The text dates the head by its heads leaf, not by the size of the tree
    // the proof is against (the run may have moved on after the leaf; noticed
    // by review 29).
    let text = ok(dir.path(), &["prove", &failed]);
    let index = head["index"].as_u64().unwrap();
    assert!(text.contains(&format!("when heads leaf {index} was written (the log then had {index} leaves)")), "{text}");
    assert_eq!(agentplane(dir.path(), &["prove", "run-not-there"]).status.code(), Some(2));
}

#[test]
fn show_cost_and_runs_read_the_journal() {
    let dir = demo_dir();
    let run = sealed_run(dir.path());
    let shown = json(dir.path(), &["show", &run, "--json"]);
    let records = shown["records"].as_array().unwrap();
    assert_eq!(records[0]["seq"], 1);
    assert_eq!(records[0]["kind"], "RunAdmitted");
    assert!(records.iter().all(|r| r["signed_by"].as_str().unwrap().starts_with("spiffe://")));
    assert_eq!(records.last().unwrap()["kind"], "RunConcluded");
    // R-VER-4: the records name the binary that wrote them.
    let store = store_redb::RedbStore::open_read_only(&dir.path().join("agentplane.redb")).unwrap();
    let tenant = journal_core::TenantId::new("default").unwrap();
    let rows = journal_core::Store::read_run(&store, &tenant, &journal_core::RunId::new(&run).unwrap()).unwrap().rows;
    let header = journal_core::Record::header(&rows[0].bytes).unwrap();
    assert_eq!(header.build.unwrap().name, "agentplane-cli");
    let table = ok(dir.path(), &["show", &run]);
    assert!(table.contains("SEQ") && table.contains("RunAdmitted"));
    let tenant = json(dir.path(), &["cost", "--json"]);
    // 120+80 (answered), 100+90+30 (raised: the exhausting effect is charged too),
    // 10 (the second effect of the exhausted run is refused before it starts).
    assert_eq!(tenant["tokens"], 430);
    let failed_only = json(dir.path(), &["runs", "--outcome", "failed", "--json"]);
    assert_eq!(failed_only.as_array().unwrap().len(), 1);
    assert_eq!(agentplane(dir.path(), &["runs", "--outcome", "bogus"]).status.code(), Some(2));
}

/// Issue 25, a plane of a million records: `runs --limit N` lists a page of
/// the admission order (newest first, O(log n + N)); following the cursor
/// it prints on stderr walks every run exactly once, and the last page
/// prints none. A cursor it did not write, and `--before` without
/// `--limit`, are usage errors.
#[test]
fn runs_limit_pages_the_admission_order_newest_first() {
    let dir = demo_dir();
    let all: std::collections::BTreeSet<String> =
        ok(dir.path(), &["runs", "--ids"]).lines().map(str::to_owned).collect();
    assert!(all.len() >= 3, "the demo makes several runs: {all:?}");
    let mut walked = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut args = vec!["runs", "--limit", "2", "--ids"];
        if let Some(cursor) = before.as_deref() {
            args.extend(["--before", cursor]);
        }
        let out = agentplane(dir.path(), &args);
        assert!(out.status.success(), "{}", text(&out));
        let page: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect();
        assert!(!page.is_empty() && page.len() <= 2, "{page:?}");
        walked.extend(page);
        let stderr = String::from_utf8(out.stderr).unwrap();
        match stderr
            .lines()
            .find_map(|line| line.strip_prefix("next page: agentplane runs --tenant default --limit 2 --ids --before "))
        {
            Some(cursor) => before = Some(cursor.trim().to_owned()),
            None => break,
        }
        assert!(walked.len() <= all.len(), "the pages repeat runs: {walked:?}");
    }
    assert_eq!(walked.len(), all.len(), "every run once: {walked:?}");
    assert_eq!(walked.iter().cloned().collect::<std::collections::BTreeSet<_>>(), all);
    let first = json(dir.path(), &["runs", "--limit", "1", "--json"]);
    assert_eq!(first.as_array().unwrap().len(), 1);
    assert_eq!(first[0]["run"], walked[0].as_str(), "--json lists the same page");
    fails(dir.path(), &["runs", "--limit", "2", "--before", "yesterday"], 2);
    fails(dir.path(), &["runs", "--before", "1:run-x"], 2);
    fails(dir.path(), &["runs", "--limit", "0"], 2);
}

/// R-AUD-8, R-UX-2 (review 80, a lying clock): someone with write access
/// to the store and no key writes a second admission-order row for the
/// demo's oldest run at a far-future instant (or a plane process whose
/// clock jumped ahead wrote it). `runs --limit` paged that order without
/// holding a row to the run's verified `RunAdmitted` instant, so the run was
/// listed twice (first page and its own) as verified, exit 0. The forged row
/// is now UNVERIFIED, named with both instants, exit 1, and walking every
/// page with `--ids` prints each run exactly once.
#[test]
fn r_aud_8_a_page_of_runs_holds_each_admission_instant_to_its_chain() {
    use journal_core::testkit::TamperAccess;
    let dir = demo_dir();
    let oldest = ok(dir.path(), &["runs", "--limit", "1000", "--ids"]).lines().last().unwrap().to_owned();
    let all: std::collections::BTreeSet<String> =
        ok(dir.path(), &["runs", "--ids"]).lines().map(str::to_owned).collect();
    {
        let store = store_redb::RedbStore::open(&dir.path().join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("default").unwrap();
        let forged = journal_core::AdmittedRun {
            at: journal_core::At::parse("9999-01-01T00:00:00.000Z").unwrap(),
            run: journal_core::RunId::new(&oldest).unwrap(),
        };
        store.set_admission(&tenant, &forged, true);
    }
    let first = json_exit(dir.path(), &["runs", "--limit", "1", "--json"], 1);
    assert_eq!(first[0]["run"], oldest.as_str(), "the forged row is the newest: {first}");
    assert_eq!(first[0]["verified"], false, "{first}");
    let problem = first[0]["problem"].as_str().unwrap();
    assert!(problem.contains("9999-01-01T00:00:00.000Z") && problem.contains("admission order"), "{problem}");
    let mut walked = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut args = vec!["runs", "--limit", "2", "--ids"];
        if let Some(cursor) = before.as_deref() {
            args.extend(["--before", cursor]);
        }
        let out = agentplane(dir.path(), &args);
        walked.extend(String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned));
        let stderr = String::from_utf8(out.stderr).unwrap();
        match stderr
            .lines()
            .find_map(|line| line.strip_prefix("next page: agentplane runs --tenant default --limit 2 --ids --before "))
        {
            Some(cursor) => before = Some(cursor.trim().to_owned()),
            None => break,
        }
        assert!(walked.len() <= all.len() + 1, "the pages loop: {walked:?}");
    }
    assert_eq!(walked.len(), all.len(), "every run exactly once: {walked:?}");
    assert_eq!(walked.into_iter().collect::<std::collections::BTreeSet<_>>(), all);
}

/// R-STORE-4: the "next page" line `runs --limit` prints names the tenant
/// it pages, so the command run as printed lists that tenant's next page.
/// Without it, the next page of tenant `search` was the configuration's
/// first tenant's runs, listed with no word of it.
#[test]
fn r_store_4_the_next_page_of_runs_is_of_the_tenant_paged() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop", "--tenant-name", "search"]);
    ok(plane, &["--tenant", "shop", "demo"]);
    ok(plane, &["--tenant", "search", "demo"]);
    let search: std::collections::BTreeSet<String> =
        ok(plane, &["--tenant", "search", "runs", "--ids"]).lines().map(str::to_owned).collect();
    let out = agentplane(plane, &["--tenant", "search", "runs", "--limit", "2", "--ids"]);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let again = stderr.lines().find_map(|line| line.strip_prefix("next page: agentplane ")).unwrap();
    // As printed: `--ids` is repeated, as the page was asked for.
    let args: Vec<&str> = again.split_whitespace().collect();
    let next: Vec<String> = ok(plane, &args).lines().map(str::to_owned).collect();
    assert_eq!(next.len(), 2, "{again}: {next:?}");
    assert!(next.iter().all(|run| search.contains(run)), "`{again}` lists tenant search's runs: {next:?}");
}

#[test]
fn r_chain_5_verify_finds_a_record_edited_in_the_store_file() {
    let dir = demo_dir();
    assert!(ok(dir.path(), &["verify", "--require-signature"]).contains("clean and complete"));
    let clean = json(dir.path(), &["verify", "--json"]);
    assert_eq!(clean["checked"]["inclusions"], 5, "every sealed run proves inclusion: {clean}");
    assert_eq!(clean["checked"]["anchors"], 1, "the checkpoint the demo signed is an anchor: {clean}");
    let run = sealed_run(dir.path());
    {
        use journal_core::testkit::TamperAccess;
        let store = store_redb::RedbStore::open(&dir.path().join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("default").unwrap();
        let run = journal_core::RunId::new(&run).unwrap();
        let rows = journal_core::Store::read_run(&store, &tenant, &run).unwrap().rows;
        let edited = String::from_utf8(rows[1].bytes.clone()).unwrap().replace("research", "research!").into_bytes();
        store.overwrite_record_bytes(&tenant, &run, 2, edited);
    }
    let out = agentplane(dir.path(), &["verify", "--json"]);
    assert_eq!(out.status.code(), Some(1), "findings exit 1");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0]["run"], run.as_str());
    assert_eq!(findings[0]["seq"], 2);
    assert_eq!(findings[0]["code"], "chain_broken");
    assert_eq!(findings[0]["class"], "tamper");
    // `runs` shows no figure read from bytes nobody verified, and exits 1
    // for the row it could not verify.
    let rows = json_exit(dir.path(), &["runs", "--json"], 1);
    let edited = rows.as_array().unwrap().iter().find(|r| r["run"] == run.as_str()).unwrap();
    assert_eq!(edited["verified"], false);
    assert_eq!(edited["class"], "findings");
    assert!(edited["tokens"].is_null(), "{edited}");
    let table = agentplane(dir.path(), &["runs"]);
    assert_eq!(table.status.code(), Some(1), "runs exits 1 when it shows an UNVERIFIED row");
    assert!(String::from_utf8_lossy(&table.stdout).contains("UNVERIFIED"));
    assert_eq!(agentplane(dir.path(), &["cost"]).status.code(), Some(1), "cost refuses an unverifiable figure");
}

#[test]
fn r_exp_1_export_verifies_offline_and_a_changed_byte_or_wrong_key_is_refused() {
    let (dir, demo_out) = demo_dir_with_output();
    let run = sealed_run(dir.path());
    let vkey = vkey_line(&demo_out);
    ok(dir.path(), &["export", &run, "-o", "run.export"]);
    let export = dir.path().join("run.export");
    let verified = json(dir.path(), &["verify-export", "run.export", "--log-key", &vkey, "--json"]);
    assert_eq!(verified["valid"], true);
    assert_eq!(verified["run"], run.as_str());

    let mut bytes = std::fs::read(&export).unwrap();
    let at = bytes.iter().position(|b| *b == b'5').unwrap_or(bytes.len() / 2);
    bytes[at] = if bytes[at] == b'5' { b'6' } else { b'5' };
    std::fs::write(dir.path().join("changed.export"), &bytes).unwrap();
    assert_eq!(agentplane(dir.path(), &["verify-export", "changed.export", "--log-key", &vkey]).status.code(), Some(1));

    let other = tempfile::tempdir().unwrap();
    let wrong = ok(other.path(), &["keygen"]).trim().to_owned();
    let out = agentplane(dir.path(), &["verify-export", "run.export", "--log-key", &wrong]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("checkpoint"));
    assert_eq!(
        agentplane(dir.path(), &["verify-export", "run.export", "--log-key", "not-a-key"]).status.code(),
        Some(2)
    );
}

/// Issue 20: an open (failed) run exports with the heads leaf that holds its
/// head, so an offline verifier learns "this run had this head at this
/// checkpoint"; the file says it covers a head, never a seal, and a record
/// cut from its end is refused.
#[test]
fn r_exp_1_an_open_run_exports_with_its_head_proven_and_verifies_offline() {
    let (dir, demo_out) = demo_dir_with_output();
    let vkey = vkey_line(&demo_out);
    let failed = json(dir.path(), &["runs", "--outcome", "failed", "--json"])[0]["run"].as_str().unwrap().to_owned();
    ok(dir.path(), &["export", &failed, "-o", "open.export"]);
    let verified = json(dir.path(), &["verify-export", "open.export", "--log-key", &vkey, "--json"]);
    assert_eq!((verified["valid"].as_bool(), verified["covers"].as_str()), (Some(true), Some("head")), "{verified}");
    let shown = json(dir.path(), &["show", &failed, "--json"]);
    assert_eq!(verified["records"].as_u64(), Some(shown["records"].as_array().unwrap().len() as u64));
    let said = ok(dir.path(), &["verify-export", "open.export", "--log-key", &vkey]);
    assert!(said.contains("open run") && said.contains("not a complete history"), "{said}");

    // The last record dropped: the head line no longer matches the chain.
    let text = std::fs::read_to_string(dir.path().join("open.export")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let head_line = lines.iter().position(|line| line.contains(r#""type":"head""#)).unwrap();
    let mut cut = lines.clone();
    cut.remove(head_line - 1);
    std::fs::write(dir.path().join("cut.export"), cut.join("\n") + "\n").unwrap();
    let out = agentplane(dir.path(), &["verify-export", "cut.export", "--log-key", &vkey]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("heads leaf holds no entry"));
}

#[test]
fn r_ux_3_corrupt_truncated_or_missing_store_files_are_refused_and_untouched() {
    let dir = demo_dir();
    let store = dir.path().join("agentplane.redb");
    let original = std::fs::read(&store).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage.redb", (0..original.len()).map(|i| (i * 7 % 251) as u8).collect()),
        ("truncated.redb", original[..original.len() / 3].to_vec()),
        ("empty.redb", Vec::new()),
    ];
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        for args in [vec!["runs"], vec!["verify"], vec!["checkpoint"]] {
            let mut full = vec!["--store", name];
            full.extend(args.iter());
            let out = agentplane(dir.path(), &full);
            assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.starts_with("agentplane: ") && !stderr.contains("panicked"), "{stderr}");
            // The file the user named, never the temporary path of a private repaired copy.
            assert!(!stderr.contains("repaired.redb"), "{stderr}");
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} was modified by {args:?}");
        }
    }
    let out = agentplane(dir.path(), &["--store", "missing.redb", "runs"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("missing.redb").exists(), "a read command never creates a store");
}

/// R-UX-3: redb trusts the bytes of its file. Someone with the file and no
/// key who changes one byte of a run id on disk (a hex editor, no redb)
/// leaves a key that is not UTF-8, which redb unwraps as a `&str` where it
/// reads it: every reader, the audit first, died in a panic (exit 101) with
/// redb's backtrace. It is damage, said as such: exit 1, no panic.
#[test]
fn r_ux_3_a_store_file_with_a_run_id_changed_by_hand_is_damage_not_a_panic() {
    let dir = demo_dir();
    let log_key = ok(dir.path(), &["keys", "--print", "log-key"]).trim().to_owned();
    let runs = ok(dir.path(), &["runs", "--ids"]);
    let run = runs.lines().next().unwrap().to_owned();
    let other = runs.lines().nth(1).unwrap().to_owned();
    let store = dir.path().join("agentplane.redb");
    let mut bytes = std::fs::read(&store).unwrap();
    let id = run.as_bytes();
    let mut changed = 0;
    for start in 0..bytes.len().saturating_sub(id.len()) {
        if &bytes[start..start + id.len()] == id {
            bytes[start] = 0xff;
            changed += 1;
        }
    }
    assert!(changed > 0, "the run id is stored in plain bytes");
    std::fs::write(&store, &bytes).unwrap();
    // What reads the whole tenant finds the damage; a run read alone is
    // read (its own rows are whole), or not found (its id is no longer
    // there): never a panic.
    for (args, whole) in [
        (vec!["verify"], true),
        (vec!["runs"], true),
        (vec!["audit", "--log-key", &log_key], true),
        (vec!["checkpoint"], false),
        (vec!["show", &run], false),
        (vec!["show", &other], false),
        (vec!["export", &other, "-o", "other.export"], false),
    ] {
        let out = agentplane(dir.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
        if whole {
            assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
            assert!(text(&out).contains("damaged"), "{args:?} says what it found: {}", text(&out));
        } else {
            assert!(matches!(out.status.code(), Some(0..=2)), "{args:?}: {}", text(&out));
        }
    }
}

#[test]
fn r_ux_2_every_command_has_help_and_usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for command in [
        "demo",
        "keygen",
        "keys",
        "runs",
        "show",
        "verify",
        "audit",
        "checkpoint",
        "prove",
        "cost",
        "export",
        "verify-export",
        "repair",
    ] {
        let out = ok(dir.path(), &[command, "--help"]);
        assert!(out.contains("Usage"), "{command} --help");
    }
    assert_eq!(agentplane(dir.path(), &["no-such-command"]).status.code(), Some(2));
    assert_eq!(agentplane(dir.path(), &["prove"]).status.code(), Some(2));
}

/// R-UX-2, the `--json` contract (review 72's note): a command line that
/// does not parse, asked for JSON, answers with the failure object on
/// stdout (class `usage`, exit 2), as every other usage error does; it was
/// clap's text alone, nothing on stdout, so a script reading the JSON read
/// nothing. Without `--json` it stays text; `--help` stays help.
#[test]
fn r_ux_2_a_command_line_that_does_not_parse_answers_json_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["audit", "--json", "--no-such-flag"][..],
        &["runs", "--json", "--limit"],
        &["prove", "--json"],
        &["--json", "sweep", "--every", "5m", "--bogus"],
        &["checkpoint", "--json", "--tenant", "t", "--keys", "k", "--keys", "k"],
    ] {
        let out = agentplane(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let failure: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|err| panic!("{args:?}: stdout is no JSON object ({err}): {stdout:?}"));
        assert_eq!(failure["class"], "usage", "{args:?}: {failure}");
        assert!(failure["message"].as_str().is_some_and(|m| !m.is_empty()), "{args:?}: {failure}");
        assert!(!String::from_utf8_lossy(&out.stderr).is_empty(), "{args:?}: said on stderr too");
    }
    let bogus = agentplane(dir.path(), &["audit", "--json", "--no-such-flag"]);
    assert!(String::from_utf8_lossy(&bogus.stdout).contains("--no-such-flag"), "the flag is named");
    let text_mode = agentplane(dir.path(), &["audit", "--no-such-flag"]);
    assert_eq!(text_mode.status.code(), Some(2));
    assert!(text_mode.stdout.is_empty(), "text mode prints nothing on stdout");
    let after_terminator = agentplane(dir.path(), &["show", "--", "--json", "--bogus"]);
    assert!(after_terminator.stdout.is_empty() || serde_json::from_slice::<Value>(&after_terminator.stdout).is_err());
    let help = agentplane(dir.path(), &["audit", "--json", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage"), "help stays help");
}

fn keys_of(dir: &Path) -> (String, String, String) {
    let keys = json(dir, &["keys", "--json"]);
    let field = |name: &str| keys[name].as_str().unwrap().to_owned();
    (field("origin"), field("log_key"), field("record_key"))
}

/// Deletes the newest sealed run behind the store and rolls the log back over
/// it, as someone with the file would: nothing is left for the store to notice.
fn hide_the_newest_sealed_run(store_path: &Path) {
    let store = store_redb::RedbStore::open(store_path).unwrap();
    let tenant = journal_core::TenantId::new("default").unwrap();
    hide_newest_sealed(&store, &tenant);
}

/// Deletes the newest sealed run and rewrites the log densely without it
/// and without every leaf after it (the heads leaf the plane appended when
/// it signed): a careful hider leaves no hole.
fn hide_newest_sealed(store: &store_redb::RedbStore, tenant: &journal_core::TenantId) {
    use journal_core::testkit::TamperAccess;
    let seals = journal_core::Store::seals(store, tenant).unwrap();
    let newest = seals.iter().rev().find(|seal| !seal.run.is_heads_leaf()).unwrap().clone();
    store.delete_run(tenant, &newest.run);
    let kept: Vec<_> = seals
        .into_iter()
        .filter(|seal| seal.position < newest.position)
        .map(|seal| (seal.run, seal.leaf_bytes))
        .collect();
    store.rewrite_log(tenant, &kept);
}

/// R-AUD-3, R-AUD-6: an auditor holding only the log vkey, a record key and a
/// checkpoint saved last week finds a deletion made since, with one command,
/// in a directory with no key file.
#[test]
fn r_aud_6_an_auditor_with_public_keys_and_a_saved_checkpoint_finds_a_deletion() {
    let dir = demo_dir();
    let (origin, log_key, record_key) = keys_of(dir.path());
    let auditor = tempfile::tempdir().unwrap();
    std::fs::write(auditor.path().join("last-week.note"), ok(dir.path(), &["checkpoint"])).unwrap();
    let store = dir.path().join("agentplane.redb");
    let store = store.to_str().unwrap();
    let audit = |extra: &[&str]| {
        let mut args =
            vec!["--store", store, "--origin", &origin, "audit", "--log-key", &log_key, "--record-key", &record_key];
        args.extend_from_slice(extra);
        agentplane(auditor.path(), &args)
    };
    let before = audit(&["--checkpoint", "last-week.note", "--require-signature", "--assert-complete"]);
    assert_eq!(before.status.code(), Some(0), "{}", String::from_utf8_lossy(&before.stdout));
    assert!(String::from_utf8_lossy(&before.stdout).contains("clean and complete"));
    // The text summary says what the JSON counts, the heads entries among
    // them (review 82's note: the text left them out).
    let counted = audit(&["--checkpoint", "last-week.note", "--json"]);
    let checked = serde_json::from_slice::<Value>(&counted.stdout).unwrap()["checked"].clone();
    let heads = checked["heads"].as_u64().unwrap();
    assert!(heads > 0, "the demo's open runs are in heads leaves: {checked}");
    let summary = String::from_utf8_lossy(&before.stdout);
    assert!(summary.contains(&format!(", {heads} heads entries, ")), "{summary}");

    hide_the_newest_sealed_run(&dir.path().join("agentplane.redb"));
    // No anchor: clean, honestly, and it says what it could not check.
    let blind = audit(&[]);
    assert_eq!(blind.status.code(), Some(0));
    let text = String::from_utf8_lossy(&blind.stdout);
    assert!(text.contains("NOT CHECKED deletion of sealed runs"), "{text}");
    assert_eq!(audit(&["--assert-complete"]).status.code(), Some(1), "a skipped check fails --assert-complete");
    // The saved checkpoint: the deletion, naming the anchor.
    let found = audit(&["--checkpoint", "last-week.note", "--json"]);
    assert_eq!(found.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&found.stdout).unwrap();
    assert_eq!(report["findings"][0]["code"], "log_shrank", "{report}");
    // What to do, and what is left when no newer copy survives (review 85's note).
    let remedy = report["findings"][0]["remedy"].as_str().unwrap_or_default();
    assert!(remedy.contains("newest copy of the store") && remedy.contains("--origin-base"), "{report}");
    assert_eq!(report["findings"][0]["class"], "deletion");
    assert_eq!(report["findings"][0]["anchors"][0], "last-week.note");
    assert!(!auditor.path().join("agentplane.key").exists(), "the auditor never needed a key file");
}

/// Issue 21: a new job's idempotency key pointed at an old run behind the
/// store (admitting it would answer with the old run: the job never runs) is
/// refused by the operator's `verify` first, naming the row.
#[test]
fn r_aud_2_verify_refuses_a_forged_idempotency_row_before_anything_admits_it() {
    let dir = demo_dir();
    let old = sealed_run(dir.path());
    {
        use journal_core::testkit::TamperAccess;
        let store = store_redb::RedbStore::open(&dir.path().join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("default").unwrap();
        store.set_idempotency(&tenant, "tomorrows-job", &journal_core::RunId::new(&old).unwrap());
    }
    let verify = agentplane(dir.path(), &["verify", "--json"]);
    assert_eq!(verify.status.code(), Some(1), "{}", String::from_utf8_lossy(&verify.stderr));
    let report: Value = serde_json::from_slice(&verify.stdout).unwrap();
    let forged = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "index_without_run")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(forged["run"], old.as_str());
    assert!(forged["message"].as_str().unwrap().contains("tomorrows-job"), "{forged}");
}

/// The plane never signs the shrunken log, and its own verify holds the
/// store to every checkpoint it signed before.
#[test]
fn the_plane_refuses_to_sign_a_rollback_and_verify_finds_it() {
    let dir = demo_dir();
    hide_the_newest_sealed_run(&dir.path().join("agentplane.redb"));
    let refused = agentplane(dir.path(), &["checkpoint"]);
    assert_eq!(refused.status.code(), Some(1), "an integrity refusal, never a new signature");
    assert!(refused.stdout.is_empty(), "nothing was signed");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("shrank"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let verify = agentplane(dir.path(), &["verify", "--json"]);
    assert_eq!(verify.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(report["findings"][0]["code"], "log_shrank", "{report}");
}

/// R-AUD-3 from the command line: the anchor read from a witness over HTTP.
#[test]
fn r_aud_6_audit_reads_the_anchor_from_a_witness() {
    let dir = demo_dir();
    let (origin, log_key, record_key) = keys_of(dir.path());
    let state = tempfile::tempdir().unwrap();
    let cosigner = witness::Cosigner::new(
        witness::SignerKey::from_seed("cli.test/witness", witness::ALG_COSIGNATURE_V1, [3; 32]).unwrap(),
    )
    .unwrap();
    let config = witness_server::WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner: cosigner.clone(),
        logs: vec![witness_server::LogConfig {
            origin: origin.clone(),
            keys: vec![witness::VerifierKey::parse(&log_key).unwrap()],
        }],
        clock: std::sync::Arc::new(witness_server::SystemClock),
    };
    let server = witness_server::WitnessServer::start(config, &state.path().join("w.redb"), "127.0.0.1:0").unwrap();
    {
        let note = ok(dir.path(), &["checkpoint"]);
        let (signed, _) =
            witness::SignedCheckpoint::open(note.as_bytes(), &[&witness::VerifierKey::parse(&log_key).unwrap()])
                .unwrap();
        let store = store_redb::RedbStore::open_read_only(&dir.path().join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("default").unwrap();
        let view = journal_core::LogView::open(&store, &tenant).unwrap();
        let client = witness::HttpWitness::new(
            &server.url(),
            vec![witness::TrustedWitness::new(cosigner.verifier_key()).unwrap()],
        )
        .unwrap();
        witness::Witness::add_checkpoint(&client, &signed, &view).unwrap();
    }
    hide_the_newest_sealed_run(&dir.path().join("agentplane.redb"));
    let auditor = tempfile::tempdir().unwrap();
    let store = dir.path().join("agentplane.redb");
    let witness_key = cosigner.verifier_key().to_string();
    let out = agentplane(
        auditor.path(),
        &[
            "--store",
            store.to_str().unwrap(),
            "--origin",
            &origin,
            "audit",
            "--log-key",
            &log_key,
            "--record-key",
            &record_key,
            "--witness",
            &server.url(),
            "--witness-key",
            &witness_key,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["findings"][0]["code"], "log_shrank", "{report}");
    assert_eq!(report["findings"][0]["anchors"][0], server.url());
}

/// R-SIG-3, the attacker with the store file and no key: a record re-signed
/// under a look-alike key id the plane does not trust passes the chain
/// check (an unknown key id is not a bad signature), so `show` must not
/// list it as checked: the record says `untrusted key`, the run's summary
/// says not all verified, and the plane's own records say `verified`.
#[test]
fn r_sig_3_show_never_lists_a_signature_by_an_untrusted_key_as_checked() {
    let dir = demo_dir();
    let run = sealed_run(dir.path());
    let trusted = json(dir.path(), &["show", &run, "--json"]);
    assert_eq!(trusted["signatures"], "checked");
    assert!(trusted["records"].as_array().unwrap().iter().all(|r| r["signature"] == "verified"), "{trusted}");
    let look_alike = "spiffe://agentplane.local/plane/default/runtime-2";
    {
        use journal_core::Signer as _;
        use journal_core::testkit::TamperAccess;
        let store = store_redb::RedbStore::open(&dir.path().join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("default").unwrap();
        let run = journal_core::RunId::new(&run).unwrap();
        let rows = journal_core::Store::read_run(&store, &tenant, &run).unwrap().rows;
        let forger = journal_core::Ed25519Signer::from_seed(look_alike, [9; 32]);
        let row = rows[1].clone();
        let signature = Some(forger.sign(&row.hash));
        store.overwrite_row(&tenant, &run, journal_core::StoredRecord { signature, ..row });
    }
    let shown = json(dir.path(), &["show", &run, "--json"]);
    let records = shown["records"].as_array().unwrap();
    assert_eq!(records[1]["signature"], "untrusted key", "{shown}");
    assert_eq!(records[1]["signed_by"], look_alike);
    assert!(records.iter().enumerate().all(|(i, r)| i == 1 || r["signature"] == "verified"), "{shown}");
    assert!(shown["signatures"].as_str().unwrap().starts_with("NOT all verified"), "{shown}");
    let table = ok(dir.path(), &["show", &run]);
    assert!(table.contains("NOT all verified") && table.contains("untrusted key: NOT verified"), "{table}");
    // Without the key file nothing is checked, and nothing says so.
    std::fs::rename(dir.path().join("agentplane.key"), dir.path().join("elsewhere.key")).unwrap();
    let unchecked = json(dir.path(), &["--origin", "agentplane.local/plane/default", "show", &run, "--json"]);
    assert!(unchecked["records"].as_array().unwrap().iter().all(|r| r["signature"] == "not checked"), "{unchecked}");
}

/// R-VER-4 at the command line: a record from a newer writer gets the build
/// skew exit code (3) and its remedy on stderr, never "tamper".
#[test]
fn r_ver_4_build_skew_has_an_exit_code_of_its_own() {
    let dir = demo_dir();
    let (origin, log_key, _) = keys_of(dir.path());
    {
        use journal_core::testkit::TamperAccess;
        let store = store_redb::RedbStore::open(&dir.path().join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("default").unwrap();
        let failed = journal_core::Store::runs(&store, &tenant, Some(journal_core::Outcome::Failed)).unwrap();
        let run = &failed[0];
        let rows = journal_core::Store::read_run(&store, &tenant, run).unwrap().rows;
        let last = rows.last().unwrap().clone();
        // A newer writer appends after the head the log already covers; it
        // does not rewrite a logged record (that would be tamper, and is).
        let next = last.seq + 1;
        let bytes = String::from_utf8(last.bytes.clone())
            .unwrap()
            .replace(
                "\"name\":\"agentplane-cli\",\"version\":\"0.1.0\"",
                "\"name\":\"agentplane-cli\",\"version\":\"7.0.0\"",
            )
            .replacen(&format!("\"seq\":{}", last.seq), &format!("\"seq\":{next}"), 1)
            .replacen("\"body\":", "\"priority\":1,\"body\":", 1)
            .into_bytes();
        let hash = journal_core::ChainHash::link(&last.hash, &bytes);
        let row = journal_core::StoredRecord {
            seq: next,
            prev_hash: last.hash,
            bytes,
            hash,
            signature: None,
            ..last.clone()
        };
        store.overwrite_row(&tenant, run, row);
        store.set_runs_head(&tenant, run, journal_core::ExpectedHead { seq: next, hash });
        // As that writer's append does: the run moved past its heads entry.
        store.set_moved(&tenant, run, true);
    }
    let out = agentplane(dir.path(), &["--origin", &origin, "audit", "--log-key", &log_key]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("agentplane-cli 7.0.0") && stderr.contains("not agentplane-cli 0.1.0"), "{stderr}");
}

#[test]
fn keygen_refuses_a_store_that_holds_runs_and_reads_need_no_key_file() {
    let dir = demo_dir();
    let (origin, _, _) = keys_of(dir.path());
    std::fs::rename(dir.path().join("agentplane.key"), dir.path().join("elsewhere.key")).unwrap();
    let keygen = agentplane(dir.path(), &["keygen"]);
    assert_eq!(keygen.status.code(), Some(2));
    assert!(!dir.path().join("agentplane.key").exists(), "no key was minted for a store with runs");
    let checkpoint = agentplane(dir.path(), &["checkpoint"]);
    assert_eq!(checkpoint.status.code(), Some(2));
    let advice = String::from_utf8_lossy(&checkpoint.stderr);
    assert!(advice.contains("agentplane audit") && !advice.contains("run `agentplane keygen`"), "{advice}");
    let rows = json(dir.path(), &["--origin", &origin, "runs", "--json"]);
    assert!(rows.as_array().unwrap().iter().all(|r| r["verified"] == true), "{rows}");
    assert!(
        ok(dir.path(), &["--origin", &origin, "show", &sealed_run_with_origin(dir.path(), &origin)])
            .contains("not checked")
    );
}

fn sealed_run_with_origin(dir: &Path, origin: &str) -> String {
    let runs = json(dir, &["--origin", origin, "runs", "--outcome", "succeeded", "--json"]);
    runs[0]["run"].as_str().unwrap().to_owned()
}

struct Witnesses {
    servers: Vec<witness_server::WitnessServer>,
    vkeys: Vec<String>,
    _state: tempfile::TempDir,
}

/// Starts `count` witness servers that watch every tenant log of the plane in `dir`.
fn start_witnesses(dir: &Path, tenants: &[&str], count: u8) -> Witnesses {
    let state = tempfile::tempdir().unwrap();
    let mut logs = Vec::new();
    for tenant in tenants {
        let keys = json(dir, &["--tenant", tenant, "keys", "--json"]);
        logs.push(witness_server::LogConfig {
            origin: keys["origin"].as_str().unwrap().to_owned(),
            keys: vec![witness::VerifierKey::parse(keys["log_key"].as_str().unwrap()).unwrap()],
        });
    }
    let (mut servers, mut vkeys) = (Vec::new(), Vec::new());
    for i in 0..count {
        let cosigner = witness::Cosigner::new(
            witness::SignerKey::from_seed(&format!("cli.test/w{i}"), witness::ALG_COSIGNATURE_V1, [40 + i; 32])
                .unwrap(),
        )
        .unwrap();
        vkeys.push(cosigner.verifier_key().to_string());
        let config = witness_server::WitnessConfig {
            extra_cosigners: Vec::new(),
            cosigner,
            logs: logs.clone(),
            clock: std::sync::Arc::new(witness_server::SystemClock),
        };
        let path = state.path().join(format!("w{i}.redb"));
        servers.push(witness_server::WitnessServer::start(config, &path, "127.0.0.1:0").unwrap());
    }
    Witnesses { servers, vkeys, _state: state }
}

/// A new plane in `dir` of `tenants` (the first is the configuration's
/// first), witnessed by one witness server whose cosignature is the quorum.
fn plane_with_one_witness(dir: &Path, tenants: &[&str]) -> Witnesses {
    let mut init = vec!["init"];
    for tenant in tenants {
        init.extend(["--tenant-name", tenant]);
    }
    ok(dir, &init);
    let witnesses = start_witnesses(dir, tenants, 1);
    let mut config = std::fs::read_to_string(dir.join("agentplane.toml")).unwrap().replace("quorum = 0", "quorum = 1");
    config.push_str(&format!(
        "\n[[witness]]\nurl = \"{}\"\nkey = \"{}\"\n",
        witnesses.servers[0].url(),
        witnesses.vkeys[0]
    ));
    std::fs::write(dir.join("agentplane.toml"), config).unwrap();
    witnesses
}

fn sweep_json(dir: &Path) -> (Option<i32>, Vec<Value>, String) {
    let out = agentplane(dir, &["sweep", "--json"]);
    let text = String::from_utf8(out.stdout).unwrap();
    // JSON Lines: each line is one whole object.
    let reports = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    (out.status.code(), reports, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// R-WIT-1/8/9, R-STORE-4: a plane with two tenants, each its own log and
/// origin, swept against two witness servers over HTTP: met, skipped without
/// growth, a shortfall with one witness down, an integrity refusal (logged)
/// after a sealed run is deleted and another sealed at the same size; and an
/// export carrying a cosigned checkpoint that verifies offline.
#[test]
fn r_wit_8_sweep_meets_skips_falls_short_and_refuses_a_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop", "--tenant-name", "search"]);
    let mut witnesses = start_witnesses(plane, &["shop", "search"], 2);
    let mut config = std::fs::read_to_string(plane.join("agentplane.toml")).unwrap();
    config = config.replace("quorum = 0", "quorum = 2");
    for (server, vkey) in witnesses.servers.iter().zip(&witnesses.vkeys) {
        config.push_str(&format!("\n[[witness]]\nurl = \"{}\"\nkey = \"{vkey}\"\n", server.url()));
    }
    std::fs::write(plane.join("agentplane.toml"), config).unwrap();
    ok(plane, &["--tenant", "shop", "demo"]);
    ok(plane, &["--tenant", "search", "demo"]);

    let (code, reports, _) = sweep_json(plane);
    assert_eq!(code, Some(0), "{reports:?}");
    assert_eq!(reports.len(), 2, "one report per tenant: {reports:?}");
    assert!(reports.iter().all(|r| r["outcome"] == "met" && r["size"] == 6), "{reports:?}");
    let (code, reports, _) = sweep_json(plane);
    assert_eq!(code, Some(0));
    assert!(reports.iter().all(|r| r["outcome"] == "skipped"), "no growth, no round: {reports:?}");
    // The cosigned checkpoint is kept; an export carries it and verifies offline.
    let cosigned = ok(plane, &["--tenant", "shop", "checkpoint", "--cosigned"]);
    assert_eq!(cosigned.matches("\n— ").count(), 3, "the log's signature and two cosignatures: {cosigned}");
    let run = json(plane, &["--tenant", "shop", "runs", "--outcome", "succeeded", "--json"])[0]["run"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(plane, &["--tenant", "shop", "export", &run, "-o", "run.export"]);
    let log_key = json(plane, &["--tenant", "shop", "keys", "--json"])["log_key"].as_str().unwrap().to_owned();
    let verified = json(
        plane,
        &[
            "verify-export",
            "run.export",
            "--log-key",
            &log_key,
            "--witness-key",
            &witnesses.vkeys[0],
            "--witness-key",
            &witnesses.vkeys[1],
            "--quorum",
            "2",
            "--json",
        ],
    );
    assert_eq!(verified["cosignatures"], 2, "{verified}");
    let stranger = witness::SignerKey::from_seed("cli.test/stranger", witness::ALG_COSIGNATURE_V1, [99; 32]).unwrap();
    let refused = agentplane(
        plane,
        &[
            "verify-export",
            "run.export",
            "--log-key",
            &log_key,
            "--witness-key",
            &stranger.verifier_key().to_string(),
            "--quorum",
            "1",
        ],
    );
    assert_eq!(refused.status.code(), Some(1), "a witness that did not cosign it does not count");

    // One witness down: the shop tenant grows and falls short.
    ok(plane, &["--tenant", "shop", "demo"]);
    let down = witnesses.servers.pop().unwrap();
    down.shutdown();
    let (code, reports, _) = sweep_json(plane);
    assert_eq!(code, Some(1), "{reports:?}");
    let shop = reports.iter().find(|r| r["tenant"] == "shop").unwrap();
    assert_eq!(shop["outcome"], "shortfall", "{shop}");
    assert_eq!(shop["cosigned"], 1);
    assert_eq!(reports.iter().find(|r| r["tenant"] == "search").unwrap()["outcome"], "skipped");

    // search: the newest sealed run deleted and another sealed in its place.
    {
        let store = store_redb::RedbStore::open(&plane.join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("search").unwrap();
        hide_newest_sealed(&store, &tenant);
        // A run sealed at the reissued position, written straight into the store.
        let origin = journal_core::Origin::new(
            json(plane, &["--tenant", "search", "keys", "--json"])["origin"].as_str().unwrap(),
        )
        .unwrap();
        let journal = journal_core::Journal::new(&store, &tenant, &origin);
        let run = journal_core::RunId::new("run-replacement").unwrap();
        let concluded = journal_core::RecordBody::RunConcluded(journal_core::record::RunConcluded {
            outcome: journal_core::Outcome::Succeeded,
            verdict: journal_core::Verdict::None,
            reason: "replacement".into(),
        });
        journal.append(&run, None, None, concluded).unwrap();
    }
    let (code, reports, stderr) = sweep_json(plane);
    assert_eq!(code, Some(1));
    let search = reports.iter().find(|r| r["tenant"] == "search").unwrap();
    assert_eq!(search["outcome"], "refused_to_sign", "{search}");
    assert_eq!(search["needs_attention"], true);
    assert!(stderr.contains("agentplane.witness.integrity"), "the refusal is logged: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "no colour codes in a log that is not a terminal: {stderr:?}");
    // One closing message names the tenant, the outcome and the cause.
    let last = stderr.lines().last().unwrap();
    assert!(last.contains("tenant search: refused_to_sign") && last.contains("plane:"), "{last}");
}

/// R-OPS-1 (review 42's note): `repair`, run by a script after every crash,
/// failed (exit 2, "needs no repair") on a PostgreSQL store, which its
/// server recovers itself. It opens the store read-only and succeeds, and
/// still fails where there is no agentplane store to open.
#[test]
fn r_ops_1_repair_of_a_postgresql_store_succeeds_and_says_why_nothing_is_done() {
    let url = store_pg::testkit::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let empty = agentplane(dir.path(), &["--store", &url, "repair"]);
    assert_eq!(empty.status.code(), Some(2), "no store in a fresh database: {}", text(&empty));
    ok(dir.path(), &["--store", &url, "migrate"]);
    let out = agentplane(dir.path(), &["--store", &url, "repair"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("nothing to repair"), "{}", text(&out));
}

/// The whole command line on PostgreSQL (`--store postgres://...` or the
/// store in agentplane.toml): demo, runs, verify, checkpoint, sweep against a
/// witness, export, and an outside audit that finds a deletion made through SQL.
#[test]
fn every_command_runs_on_postgresql_too() {
    let url = store_pg::testkit::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    let config = std::fs::read_to_string(plane.join("agentplane.toml")).unwrap();
    std::fs::write(
        plane.join("agentplane.toml"),
        config.replace("store = \"agentplane.redb\"", &format!("store = \"{url}\"")),
    )
    .unwrap();
    let witnesses = start_witnesses(plane, &["shop"], 1);
    let mut config =
        std::fs::read_to_string(plane.join("agentplane.toml")).unwrap().replace("quorum = 0", "quorum = 1");
    config.push_str(&format!(
        "\n[[witness]]\nurl = \"{}\"\nkey = \"{}\"\n",
        witnesses.servers[0].url(),
        witnesses.vkeys[0]
    ));
    std::fs::write(plane.join("agentplane.toml"), config).unwrap();

    ok(plane, &["demo"]);
    assert!(!plane.join("agentplane.redb").exists(), "everything went to PostgreSQL");
    let runs = json(plane, &["runs", "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), 9, "the demo's nine runs");
    assert!(runs.as_array().unwrap().iter().all(|r| r["verified"] == true));
    assert!(ok(plane, &["verify", "--require-signature"]).contains("clean and complete"));
    let saved = ok(plane, &["checkpoint"]);
    let (code, reports, _) = sweep_json(plane);
    assert_eq!(code, Some(0), "{reports:?}");
    assert_eq!(reports[0]["outcome"], "met");
    let run = ok(plane, &["runs", "--outcome", "succeeded", "--ids"]).lines().next().unwrap().to_owned();
    ok(plane, &["export", &run, "-o", "run.export"]);
    let log_key = ok(plane, &["keys", "--print", "log-key"]).trim().to_owned();
    ok(
        plane,
        &["verify-export", "run.export", "--log-key", &log_key, "--witness-key", &witnesses.vkeys[0], "--quorum", "1"],
    );

    // A database administrator hides the newest sealed run.
    {
        use journal_core::testkit::TamperAccess;
        let store = store_pg::PgStore::open(&url).unwrap();
        let tenant = journal_core::TenantId::new("shop").unwrap();
        let seals = journal_core::Store::seals(&store, &tenant).unwrap();
        let newest = seals.last().unwrap();
        store.delete_run(&tenant, &newest.run);
        store.rewind_log(&tenant, newest.position);
    }
    let auditor = tempfile::tempdir().unwrap();
    std::fs::write(auditor.path().join("saved.note"), saved).unwrap();
    let origin = ok(plane, &["keys", "--print", "origin"]).trim().to_owned();
    let out = agentplane(
        auditor.path(),
        &[
            "--store",
            &url,
            "--tenant",
            "shop",
            "--origin",
            &origin,
            "audit",
            "--log-key",
            &log_key,
            "--checkpoint",
            "saved.note",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["findings"][0]["code"], "log_shrank", "{report}");
    assert_eq!(agentplane(plane, &["checkpoint"]).status.code(), Some(1), "the plane refuses to sign the rollback");
}

/// `diff`: two runs side by side, the first difference marked; a run and its
/// own export do the same.
#[test]
fn diff_marks_the_first_difference_and_reads_exports() {
    let dir = demo_dir();
    let succeeded: Vec<String> =
        ok(dir.path(), &["runs", "--outcome", "succeeded", "--ids"]).lines().map(str::to_owned).collect();
    let failed = ok(dir.path(), &["runs", "--outcome", "failed", "--ids"]).lines().next().unwrap().to_owned();
    let out = agentplane(dir.path(), &["diff", &succeeded[0], &failed, "--json"]);
    assert_eq!(out.status.code(), Some(1), "different runs exit 1");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = report["first_difference"].as_u64().unwrap();
    assert!(first >= 1);
    let row = &report["rows"][(first - 1) as usize];
    assert_eq!(row["same"], false);
    assert!(report["rows"][0]["a"]["at"].is_string(), "times are shown");
    ok(dir.path(), &["export", &succeeded[0], "-o", "a.export"]);
    let same = ok(dir.path(), &["diff", &succeeded[0], "a.export"]);
    assert!(same.contains("the two runs did the same"), "{same}");
    assert!(same.contains("its chain checked alone"), "what was checked of the export is said: {same}");
    let table = String::from_utf8(agentplane(dir.path(), &["diff", &succeeded[0], &failed]).stdout).unwrap();
    assert!(table.contains("<- first difference"), "{table}");
}

/// `fork` admits a run that records where it came from; `show` prints it and
/// the audit holds it to its source. (It forks after the plan: the first
/// succeeded demo run's seq 3 starts an effect, and a fork point inside an
/// effect is refused.)
#[test]
fn fork_records_its_provenance_and_show_prints_it() {
    let dir = demo_dir();
    let source = ok(dir.path(), &["runs", "--outcome", "succeeded", "--ids"]).lines().next().unwrap().to_owned();
    let fork = ok(dir.path(), &["fork", &source, "--at", "2"]).trim().to_owned();
    assert_ne!(fork, source);
    let shown = ok(dir.path(), &["show", &fork]);
    assert!(shown.contains(&format!("forked from run {source} after seq 2")), "{shown}");
    let as_json = json(dir.path(), &["show", &fork, "--json"]);
    assert_eq!(as_json["forked_from"]["run"], source.as_str());
    assert_eq!(as_json["forked_from"]["at_seq"], 2);
    assert!(ok(dir.path(), &["verify"]).contains("0 findings") || ok(dir.path(), &["verify"]).contains("clean"));
    assert_eq!(agentplane(dir.path(), &["fork", &source, "--at", "2"]).status.code(), Some(2), "the same fork twice");
    assert_eq!(agentplane(dir.path(), &["fork", &source, "--at", "999"]).status.code(), Some(2), "no such record");
}

/// R-SIG-2, R-AUD-8: `cost` and `runs` verify every record's signature by
/// default, as `show` does, so the three never disagree about a record: a
/// signature changed beside an intact chain is refused as tamper by each
/// (exit 1). `--skip-signatures` reads through the chain alone;
/// `--verify-signatures`, from when that was not the default, is still taken.
#[test]
fn cost_runs_and_show_agree_about_a_signature_changed_beside_its_chain() {
    let dir = demo_dir();
    let run = {
        use journal_core::testkit::TamperAccess;
        let (store, tenant, run, rows) = first_succeeded_run(dir.path());
        let mut first = rows[0].clone();
        let signature = first.signature.as_mut().expect("the demo signs its records");
        signature.signature[0] ^= 1;
        store.overwrite_row(&tenant, &run, first);
        run
    };
    let shown = agentplane(dir.path(), &["show", run.as_str()]);
    assert_eq!(shown.status.code(), Some(1), "{}", String::from_utf8_lossy(&shown.stdout));
    for command in [&["cost"][..], &["cost", "--verify-signatures"][..], &["cost", run.as_str()][..]] {
        let out = agentplane(dir.path(), command);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {}", String::from_utf8_lossy(&out.stdout));
        assert!(String::from_utf8_lossy(&out.stderr).contains("signature"), "{command:?} names the signature");
    }
    for command in [&["runs", "--json"][..], &["runs", "--json", "--limit", "50"][..]] {
        let runs = json_exit(dir.path(), command, 1);
        assert!(runs.to_string().contains("signature"), "{command:?}: the run is marked: {runs}");
    }
    for command in [&["cost", "--json", "--skip-signatures"][..], &["runs", "--json", "--skip-signatures"][..]] {
        let out = agentplane(dir.path(), command);
        assert_eq!(out.status.code(), Some(0), "{command:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let both = agentplane(dir.path(), &["cost", "--skip-signatures", "--verify-signatures"]);
    assert_eq!(both.status.code(), Some(2), "the two flags contradict each other");
    // With no key file at hand the reads verify the chain alone, as `show`
    // does; asked by name to verify signatures they cannot, they refuse.
    let keyless = ["--keys", "no-such.key"];
    for command in [&["cost", "--verify-signatures"][..], &["runs", "--verify-signatures"][..]] {
        let out = agentplane(dir.path(), &[command, &keyless[..]].concat());
        assert_eq!(
            out.status.code(),
            Some(2),
            "{command:?} without a key file: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("no-such.key"), "names the missing file");
    }
}

/// The demo plane's redb store in `dir`, opened for tampering, with its
/// default tenant, its first succeeded run and that run's rows.
fn first_succeeded_run(
    dir: &Path,
) -> (store_redb::RedbStore, journal_core::TenantId, journal_core::RunId, Vec<journal_core::StoredRecord>) {
    let store = store_redb::RedbStore::open(&dir.join("agentplane.redb")).unwrap();
    let tenant = journal_core::TenantId::new("default").unwrap();
    let answered = journal_core::Store::runs(&store, &tenant, Some(journal_core::Outcome::Succeeded)).unwrap();
    let run = answered[0].clone();
    let rows = journal_core::Store::read_run(&store, &tenant, &run).unwrap().rows;
    (store, tenant, run, rows)
}

/// What a forger with the store file and no key does to a succeeded run of
/// the demo in `dir`: strips its first record's signature and signs its
/// second under a key id of its own, both beside intact chains. The run.
fn strip_one_signature_and_sign_another_as_an_intruder(dir: &Path) -> journal_core::RunId {
    use journal_core::Signer as _;
    use journal_core::testkit::TamperAccess;
    let (store, tenant, run, rows) = first_succeeded_run(dir);
    let mut stripped = rows[0].clone();
    stripped.signature = None;
    store.overwrite_row(&tenant, &run, stripped);
    let intruder = journal_core::Ed25519Signer::from_seed("spiffe://intruder.test/forger", [9; 32]);
    let mut resigned = rows[1].clone();
    resigned.signature = Some(intruder.sign(&resigned.hash));
    store.overwrite_row(&tenant, &run, resigned);
    run
}

/// R-SIG-3: a read is lenient by default and strict on demand, and what its
/// figure rests on is said. A forger with the store file and no key strips
/// one record's signature and signs another under a key id of its own, both
/// beside intact chains: `cost` still counts them (the lenient read), but
/// says how many of the records it counted no key of the plane vouches for;
/// `--require-signature` refuses them, in `cost` and `runs` alike (exit 1).
#[test]
fn r_sig_3_cost_says_what_no_trusted_key_vouches_for_and_refuses_it_on_demand() {
    let dir = demo_dir();
    let run = strip_one_signature_and_sign_another_as_an_intruder(dir.path());
    for command in [&["cost", "--json"][..], &["cost", run.as_str(), "--json"][..]] {
        let counted = json_exit(dir.path(), command, 0);
        assert_eq!(counted["signatures"], "checked", "{command:?}: {counted}");
        assert_eq!(
            (counted["unsigned"].as_u64(), counted["untrusted"].as_u64()),
            (Some(1), Some(1)),
            "{command:?}: the two records no trusted key vouches for are counted, and said: {counted}"
        );
    }
    let text = agentplane(dir.path(), &["cost"]);
    assert_eq!(text.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&text.stdout).contains("NOT all vouched for"), "the text says it too");
    for command in [&["cost", "--require-signature"][..], &["cost", run.as_str(), "--require-signature"][..]] {
        let out = agentplane(dir.path(), command);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {}", String::from_utf8_lossy(&out.stdout));
        assert!(String::from_utf8_lossy(&out.stderr).contains(run.as_str()), "{command:?} names the run");
    }
    let listed = json_exit(dir.path(), &["runs", "--json", "--require-signature"], 1);
    let row = listed.as_array().unwrap().iter().find(|row| row["run"] == run.as_str()).unwrap();
    assert_eq!(row["verified"], false, "strict, the run is not listed as verified: {row}");
    let strict = agentplane(dir.path(), &["runs", "--require-signature"]);
    assert!(
        String::from_utf8_lossy(&strict.stderr).contains("agentplane verify --require-signature"),
        "the findings are pointed at the audit that counts them: {}",
        String::from_utf8_lossy(&strict.stderr)
    );
    let lenient = json_exit(dir.path(), &["runs", "--json"], 0);
    assert!(lenient.as_array().unwrap().iter().all(|row| row["verified"] == true), "lenient, it is: {lenient}");
    // Each row says what no trusted key vouches for in its run, so a script
    // reading `verified: true` can tell a vouched-for run from a forged one.
    for row in lenient.as_array().unwrap() {
        let counts = (row["unsigned"].as_u64(), row["untrusted"].as_u64());
        let expected = if row["run"] == run.as_str() { (Some(1), Some(1)) } else { (Some(0), Some(0)) };
        assert_eq!(counts, expected, "each row counts its own run's records: {row}");
    }
    let unchecked = json_exit(dir.path(), &["runs", "--json", "--skip-signatures"], 0);
    let row = unchecked.as_array().unwrap().iter().find(|row| row["run"] == run.as_str()).unwrap();
    assert_eq!(
        (&row["unsigned"], &row["untrusted"]),
        (&serde_json::Value::Null, &serde_json::Value::Null),
        "unchecked is never read as vouched for: {row}"
    );
    for command in [&["runs"][..], &["runs", "--limit", "50"][..], &["runs", "--outcome", "succeeded"][..]] {
        let out = agentplane(dir.path(), command);
        assert_eq!(out.status.code(), Some(0), "{command:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("NOT all vouched for") && said.contains("1 unsigned and 1 signed"),
            "{command:?}: {said}"
        );
    }
    let chain_alone = json_exit(dir.path(), &["cost", "--json", "--skip-signatures"], 0);
    assert_eq!(
        (&chain_alone["signatures"], &chain_alone["unsigned"]),
        (&serde_json::json!("not checked"), &serde_json::Value::Null),
        "unchecked is never read as vouched for: {chain_alone}"
    );
    let both = agentplane(dir.path(), &["cost", "--skip-signatures", "--require-signature"]);
    assert_eq!(both.status.code(), Some(2), "the two flags contradict each other");
    let keyless = agentplane(dir.path(), &["runs", "--require-signature", "--keys", "no-such.key"]);
    assert_eq!(keyless.status.code(), Some(2), "strict needs the key: {}", String::from_utf8_lossy(&keyless.stderr));
    assert!(String::from_utf8_lossy(&keyless.stderr).contains("--require-signature"), "names the flag");
}

/// R-SIG-3: `diff` read a run a forger re-signed (one record's signature
/// stripped, another's made under a key id of its own) and said "the two
/// runs did the same" with no word that no key of the plane vouches for
/// what it compared: a regression passed on records nobody signed. The
/// lenient read still compares, and now says what no trusted key vouches
/// for on that side, in the text and in `--json`; without the key file it
/// says the signatures were not checked.
#[test]
fn r_sig_3_diff_says_what_no_trusted_key_vouches_for_on_each_side() {
    let dir = demo_dir();
    let run = strip_one_signature_and_sign_another_as_an_intruder(dir.path());
    let text = ok(dir.path(), &["diff", run.as_str(), run.as_str()]);
    assert!(text.contains("the two runs did the same"), "{text}");
    assert!(
        text.contains("NOT all vouched for") && text.contains("1 unsigned and 1 signed"),
        "what no trusted key vouches for is said: {text}"
    );
    let report = json_exit(dir.path(), &["diff", run.as_str(), run.as_str(), "--json"], 0);
    for side in ["a", "b"] {
        assert!(report[side].as_str().unwrap().contains("NOT all vouched for"), "{side}: {report}");
    }
    let genuine = ok(dir.path(), &["runs", "--outcome", "cancelled", "--ids"]).lines().next().unwrap().to_owned();
    let vouched = ok(dir.path(), &["diff", genuine.as_str(), genuine.as_str()]);
    assert!(!vouched.contains("vouched") && !vouched.contains("not checked"), "{vouched}");
    let keyless = ok(dir.path(), &["diff", run.as_str(), run.as_str(), "--keys", "no-such.key"]);
    assert!(keyless.contains("signatures not checked"), "unchecked is never read as vouched for: {keyless}");
}

/// R-SIG-3 offline: an export of a run a forger re-signed (one record's
/// signature stripped, another's made under a key id of its own) verifies
/// against the log key, leniently, as the chain and the checkpoint hold; but
/// `verify-export --record-key` says how many records no trusted key vouches
/// for (it said "signatures by trusted keys verified" over them), and
/// `--require-signature` refuses them.
#[test]
fn r_sig_3_verify_export_says_what_no_trusted_record_key_vouches_for() {
    let dir = demo_dir();
    let run = strip_one_signature_and_sign_another_as_an_intruder(dir.path());
    ok(dir.path(), &["export", run.as_str(), "-o", "run.export"]);
    let log_key = ok(dir.path(), &["keys", "--print", "log-key"]).trim().to_owned();
    let record_key = ok(dir.path(), &["keys", "--print", "record-key"]).trim().to_owned();
    let base = ["verify-export", "run.export", "--log-key", log_key.as_str()];
    let with_key = [&base[..], &["--record-key", record_key.as_str()]].concat();
    let counted = json_exit(dir.path(), &[&with_key[..], &["--json"]].concat(), 0);
    assert_eq!(
        (counted["unsigned"].as_u64(), counted["untrusted"].as_u64()),
        (Some(1), Some(1)),
        "the two records no trusted key vouches for are counted: {counted}"
    );
    let text = ok(dir.path(), &with_key);
    assert!(text.contains("NOT all vouched for") && text.contains("1 unsigned and 1 signed"), "{text}");
    let unchecked = json_exit(dir.path(), &[&base[..], &["--json"]].concat(), 0);
    assert_eq!(unchecked["unsigned"], Value::Null, "without a record key nothing is known of them: {unchecked}");
    let strict = agentplane(dir.path(), &[&with_key[..], &["--require-signature"]].concat());
    assert_eq!(strict.status.code(), Some(1), "{}", String::from_utf8_lossy(&strict.stderr));
    let cancelled = ok(dir.path(), &["runs", "--outcome", "cancelled", "--ids"]);
    let genuine = cancelled.lines().next().unwrap();
    ok(dir.path(), &["export", genuine, "-o", "genuine.export"]);
    let vouched = json_exit(
        dir.path(),
        &["verify-export", "genuine.export", "--log-key", &log_key, "--record-key", &record_key, "--json"],
        0,
    );
    assert_eq!((vouched["unsigned"].as_u64(), vouched["untrusted"].as_u64()), (Some(0), Some(0)), "{vouched}");
}

/// R-SIG-3 on every path of `runs`: `--ids` alone lists the ids without
/// reading a chain, and a strict read asked for by name is never skipped.
/// With `--require-signature`, `--ids` (a page of them too) prints only the
/// runs a trusted key vouches for, the others on stderr, exit 1, as `--ids
/// --outcome` does; without it, it prints every id, as it always has.
#[test]
fn r_sig_3_runs_ids_refuses_on_demand_what_no_trusted_key_vouches_for() {
    let dir = demo_dir();
    let run = strip_one_signature_and_sign_another_as_an_intruder(dir.path());
    let lenient = ok(dir.path(), &["runs", "--ids"]);
    assert!(lenient.lines().any(|line| line == run.as_str()), "lenient, the id is listed: {lenient}");
    for command in [
        &["runs", "--ids", "--require-signature"][..],
        &["runs", "--ids", "--limit", "50", "--require-signature"][..],
        &["runs", "--ids", "--outcome", "succeeded", "--require-signature"][..],
    ] {
        let out = agentplane(dir.path(), command);
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{command:?}: {stdout}{stderr}");
        assert!(!stdout.lines().any(|line| line == run.as_str()), "{command:?}: not among the ids: {stdout}");
        assert!(!stdout.trim().is_empty(), "{command:?}: the runs a trusted key vouches for are still listed");
        assert!(stderr.contains(run.as_str()), "{command:?}: said on stderr: {stderr}");
    }
}

/// A reader that closes the pipe before the output is written
/// (`agentplane show RUN --json | head -1`) ends the command quietly: no
/// panic, exit 0.
#[test]
fn a_closed_pipe_ends_a_command_quietly() {
    let dir = demo_dir();
    let run = sealed_run(dir.path());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane"))
        .args(["show", &run, "--json"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// R-UX-3: standard error that cannot take a line (a full disk) is no
/// panic: a refused command still exits with its class's code (2 here), and
/// a warning the log cannot write is dropped. Before, `eprintln!` and the
/// log's own report of the failed write panicked: exit 101.
#[cfg(unix)]
#[test]
fn r_ux_3_a_command_whose_standard_error_fails_exits_with_its_code_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane"))
        .args(["runs"])
        .current_dir(dir.path())
        .env("RUST_LOG", "debug")
        .stderr(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "no plane here: a usage failure, whose message could not be written");
}

/// `agentplane compact` gives free pages back without touching a record:
/// the file does not grow, every run reads the same and `verify` is clean.
#[test]
fn compact_keeps_every_record_and_the_plane_verifies() {
    let dir = demo_dir();
    let before = ok(dir.path(), &["runs", "--json"]);
    let size = |dir: &Path| std::fs::metadata(dir.join("agentplane.redb")).unwrap().len();
    let size_before = size(dir.path());
    let said = ok(dir.path(), &["compact"]);
    assert!(said.contains("bytes before"), "{said}");
    assert!(size(dir.path()) <= size_before);
    assert_eq!(ok(dir.path(), &["runs", "--json"]), before);
    assert!(ok(dir.path(), &["verify", "--require-signature"]).contains("clean and complete"));
    assert_eq!(agentplane(dir.path(), &["--store", "postgres://localhost/x", "compact"]).status.code(), Some(2));
}

/// R-WIT-8, issue 24: `sweep --every` says each change once, with its time,
/// and stays quiet while rounds only repeat a skip; `--tenant` sweeps that
/// tenant alone; a signal stops it cleanly.
#[test]
fn r_wit_8_sweep_every_is_quiet_until_something_changes() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let _witnesses = plane_with_one_witness(plane, &["shop", "search"]);
    ok(plane, &["--tenant", "shop", "demo"]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane"))
        .current_dir(plane)
        .args(["sweep", "--tenant", "shop", "--every", "100ms", "--probe-every", "1h"])
        .env("RUST_LOG", "agentplane.sweep=debug")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Awaits five rounds, each said on stderr as it ends, then stops it.
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut rounds = std::io::BufRead::lines(stderr);
    let mut ended = 0;
    while ended < 5 {
        let line = rounds.next().expect("the sweep ended before five rounds").unwrap();
        ended += usize::from(line.contains("round ended"));
    }
    std::thread::spawn(move || rounds.for_each(drop));
    let out = stopped_by_a_signal(child);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "the round that met, the first skip, then nothing:\n{stdout}");
    assert!(lines[0].contains("tenant shop: met at size 6") && lines[1].contains("tenant shop: skipped"), "{stdout}");
    for line in &lines {
        let stamp = line.split(' ').next().unwrap();
        assert!(stamp.parse::<jiff::Timestamp>().is_ok(), "each line starts with its time: {line}");
    }
    assert!(!stdout.contains("search"), "--tenant shop sweeps shop alone:\n{stdout}");
}

/// R-WIT-8 (review 40's note): `sweep --every` is the plane's witnessing
/// for months; a round that failed (here its key file being replaced, as a
/// store unreachable for a moment would) ended the whole sweep, and the log
/// stayed unwitnessed until someone restarted it. The failure is now said
/// on its own JSON line with its time and class, and the next round, once
/// the cause is gone, meets the quorum again.
#[test]
fn r_wit_8_sweep_every_goes_on_after_a_round_that_failed() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let _witnesses = plane_with_one_witness(plane, &["shop"]);
    ok(plane, &["demo"]);
    let mut child = spawned(plane, &["sweep", "--every", "100ms", "--probe-every", "1h", "--json"]);
    let (line, lines) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for text in std::io::BufReader::new(stdout).lines() {
            let Ok(text) = text else { return };
            if line.send(serde_json::from_str(&text).unwrap()).is_err() {
                return;
            }
        }
    });
    // The next line the sweep prints (none once it has exited: the channel closes).
    let next = || lines.recv().ok();
    let first = next().expect("the first round's line");
    assert_eq!(first["outcome"], "met", "{first}");
    let key = plane.join("agentplane.key");
    let aside = plane.join("agentplane.key.aside");
    std::fs::rename(&key, &aside).unwrap();
    let failed = loop {
        let line = next().expect("the sweep goes on after a round that failed; it exited");
        if line.get("class").is_some() {
            break line;
        }
    };
    let fields: Vec<&String> = failed.as_object().unwrap().keys().collect();
    assert_eq!(fields, ["at", "class", "code", "message"], "the schema the CLI README gives: {failed}");
    assert!(failed["at"].as_str().unwrap().parse::<jiff::Timestamp>().is_ok(), "{failed}");
    assert!(failed["message"].as_str().unwrap().contains("agentplane.key"), "{failed}");
    std::fs::rename(&aside, &key).unwrap();
    ok(plane, &["demo"]);
    let met = loop {
        let line = next().expect("the sweep goes on");
        if line["outcome"] == "met" {
            break line;
        }
    };
    assert!(met["size"].as_u64().unwrap() > first["size"].as_u64().unwrap(), "{met}");
    let out = stopped_by_a_signal(child);
    assert_eq!(out.status.code(), Some(0), "the last round met: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the sweep goes on"));
}

/// The command started in `plane`, its output and errors piped to the test.
fn spawned(plane: &Path, args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_agentplane"))
        .current_dir(plane)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends SIGTERM to a `sweep --every` and waits for it to end. A sweep that
/// does not end within two minutes (a signal it lost) is killed, and the
/// test fails there rather than hang.
fn stopped_by_a_signal(child: std::process::Child) -> std::process::Output {
    stopped_by_signals(child, &["-TERM"])
}

/// Sends each of `signals` (as `kill` spells them), one after another, to a
/// `sweep --every` and waits for it to end, as `stopped_by_a_signal`.
fn stopped_by_signals(child: std::process::Child, signals: &[&str]) -> std::process::Output {
    let id = child.id();
    for signal in signals {
        let killed = std::process::Command::new("kill").arg(signal).arg(id.to_string()).status().unwrap();
        assert!(killed.success());
    }
    let (ended, out) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = ended.send(child.wait_with_output());
    });
    match out.recv_timeout(std::time::Duration::from_secs(120)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = std::process::Command::new("kill").arg("-KILL").arg(id.to_string()).status();
            panic!("the sweep did not stop on {signals:?}: it lost a signal");
        }
    }
}

/// R-WIT-8, R-OPS-1: a SIGTERM (a service manager stopping the plane) that
/// came while a round of `sweep --every` ran was lost, and the sweep never
/// stopped (found when this file's other `--every` test hung for 17
/// minutes). The sweep listened for signals only while it waited between
/// rounds; during a round no one listened, and the witness client's own
/// runtime took the signal off tokio's pipe and handed it to no one (and
/// before the first wait, the signal's default action ended the sweep in
/// the middle of its round). With rounds back to back (every millisecond,
/// 100 sweeps) a signal comes during a round in some: the sweep before this
/// change failed each of three runs of this test. The sweep now listens from
/// before its first round to its end, and stops once the round is done.
#[test]
fn r_wit_8_a_signal_that_comes_during_a_round_stops_the_sweep() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let _witnesses = plane_with_one_witness(plane, &["shop"]);
    ok(plane, &["demo"]);
    for _ in 0..100 {
        let mut child = spawned(plane, &["sweep", "--every", "1ms", "--probe-every", "1ms", "--json"]);
        // Its first round said: it is past its start, and rounds follow back to back.
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        assert!(first.contains("\"outcome\""), "{first}");
        // Read on: a sweep whose output is closed ends at once (exit 0).
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        let out = stopped_by_a_signal(child);
        assert_eq!(out.status.code(), Some(0), "stopped cleanly: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("stopped by a signal"));
    }
}

/// A plane of tenant `shop` after `demo`, whose quorum of one is a witness
/// that takes the connection and says nothing until told (the listener,
/// returned): a round of the sweep waits on it. The witness servers
/// returned only lend it a key.
fn plane_with_a_silent_witness(plane: &Path) -> (Witnesses, std::net::TcpListener) {
    ok(plane, &["init", "--tenant-name", "shop"]);
    ok(plane, &["demo"]);
    let witnesses = start_witnesses(plane, &["shop"], 1);
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let mut config = std::fs::read_to_string(plane.join("agentplane.toml")).unwrap();
    config = config.replace("quorum = 0", "quorum = 1");
    config.push_str(&format!("\n[[witness]]\nurl = \"{url}\"\nkey = \"{}\"\n", witnesses.vkeys[0]));
    std::fs::write(plane.join("agentplane.toml"), config).unwrap();
    (witnesses, silent)
}

/// R-WIT-8 (review 43): `sweep --every`, stopped by a signal, exits as its
/// last round came to, a signal that comes during a round included. The
/// sweep listened for SIGINT and SIGTERM only while it waited between
/// rounds: one that came during the first round killed it outright (no
/// exit code, nothing said), and one during a later round was taken by the
/// handler with no one listening and lost, so the sweep went on until it
/// was killed. Here the round waits on a witness that has accepted the
/// connection and not answered; the signal comes then, the witness drops
/// the connection, and the sweep ends that round (a shortfall: exit 1).
#[test]
fn r_wit_8_sweep_every_stopped_during_a_round_exits_as_the_round_came_to() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let (_witnesses, silent) = plane_with_a_silent_witness(plane);
    let child = spawned(plane, &["sweep", "--every", "1h", "--probe-every", "1h"]);
    // The round is under way once the sweep has connected to the witness.
    let (held, _) = silent.accept().unwrap();
    let killed = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(killed.success());
    // The witness drops this connection and every later one: the round
    // ends. Once the sweep has exited, one last connection of the test's
    // own ends the witness.
    drop(held);
    let done = std::sync::atomic::AtomicBool::new(false);
    let out = std::thread::scope(|scope| {
        scope.spawn(|| {
            for connection in silent.incoming() {
                drop(connection);
                if done.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
            }
        });
        let out = child.wait_with_output().unwrap();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        drop(std::net::TcpStream::connect(silent.local_addr().unwrap()));
        out
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "the round fell short, and it was the last: {stderr}");
    assert!(stderr.contains("sweep stopped by a signal"), "{stderr}");
}

/// R-WIT-8, R-OPS-1 (session 29's note): a second signal ends `sweep
/// --every` at once. The first is kept until the round under way is done;
/// a round waiting on a witness that took the connection and says nothing
/// held an operator's second Ctrl-C, too, for the witness's whole timeout
/// (the sweep went on to end that round: a shortfall, exit 1, "stopped by a
/// signal"). Now the second ends it mid-round, saying so, exit 2.
#[test]
fn r_wit_8_a_second_signal_ends_sweep_every_in_the_middle_of_a_round() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let (_witnesses, silent) = plane_with_a_silent_witness(plane);
    let child = spawned(plane, &["sweep", "--every", "1h", "--probe-every", "1h"]);
    // The round is under way, and stays so while this connection is held.
    let (_held, _) = silent.accept().unwrap();
    let out = stopped_by_signals(child, &["-TERM", "-INT"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("a second signal: the sweep stops now, in the middle of its round"), "{stderr}");
    assert!(!stderr.contains("sweep stopped by a signal"), "it did not wait for the round: {stderr}");
    assert_eq!(out.status.code(), Some(2), "{stderr}");
}

/// R-RUN-5 (session 29's note, review 43's): `resume` with several answers
/// wrote each as it came, so an answer the runtime refused (an effect not in
/// doubt, one effect answered twice, a lift of a run not withheld) left the
/// ceilings and answers before it written and the command failed half done.
/// Every answer is now held to the run as it stands before anything is
/// written (this test holds `r_run_5_resume_lift_of_a_run_not_withheld_writes_nothing`'s case).
#[test]
fn r_run_5_resume_with_one_answer_refused_writes_nothing() {
    let dir = demo_dir();
    let plane = dir.path();
    let quarantined =
        json(plane, &["runs", "--outcome", "quarantined", "--json"])[0]["run"].as_str().unwrap().to_owned();
    let records = || json(plane, &["show", &quarantined, "--json"])["records"].as_array().unwrap().len();
    let before = records();
    for (answers, said) in [
        (&["--answer", "ek:transfer=happened", "--answer", "ek:never-started=happened"][..], "not in doubt"),
        (&["--answer", "ek:transfer=happened", "--answer", "ek:transfer=not-happened"], "twice"),
        (&["--lift", "--answer", "ek:transfer=happened"], "not withheld"),
    ] {
        let mut args = vec!["resume", quarantined.as_str(), "--raise", "steps=100"];
        args.extend(answers);
        let refused = agentplane(plane, &args);
        assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
        assert!(text(&refused).contains(said), "{}", text(&refused));
        assert!(text(&refused).contains("nothing was written"), "{}", text(&refused));
        assert_eq!(records(), before, "nothing was written: {answers:?}");
    }
    let answered = agentplane(plane, &["resume", &quarantined, "--answer", "ek:transfer=happened"]);
    assert!(answered.status.success(), "{}", text(&answered));
}

/// R-RUN-5 (review 41's note): a worker crashed inside an effect and an
/// operator withheld the run before any resume found the doubt. `resume RUN
/// --lift --answer EK=...` recorded the lift first, and then the answer was
/// refused (no hold stood, no quarantine had found the doubt): the lift was
/// written, the answer was not. Every answer is now recorded before the
/// lift, and an answer the command line spells wrong is refused before
/// anything is written.
#[test]
fn r_run_5_resume_lift_and_answer_of_a_crash_under_a_hold_records_both() {
    use journal_core::{Admission, AdmitRequest, Budget, RuntimeBuilder, Store};
    let dir = demo_dir();
    let plane = dir.path();
    let keys = json(plane, &["keys", "--json"]);
    let origin = journal_core::Origin::new(keys["origin"].as_str().unwrap()).unwrap();
    let tenant = journal_core::TenantId::new("default").unwrap();
    let run = {
        let store = std::sync::Arc::new(store_redb::RedbStore::open(&plane.join("agentplane.redb")).unwrap());
        let runtime = RuntimeBuilder::new(std::sync::Arc::clone(&store) as std::sync::Arc<dyn Store>)
            .tenant(tenant.clone(), origin, None)
            .build()
            .unwrap();
        let request =
            AdmitRequest { idempotency_key: "crashed".into(), plan: vec!["work".into()], budget: Budget::default() };
        let Admission::New(mut run) = runtime.admit(&tenant, request).unwrap() else { panic!("admitted twice") };
        run.start_step("work").unwrap();
        let id = run.run().clone();
        // The worker dies inside the effect: its start is recorded, no end.
        let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = run.effect("ek:pay", "work", || panic!("the worker dies here"));
        }));
        assert!(crashed.is_err());
        runtime.withhold(&tenant, &id, "an operator's hold").unwrap();
        id.to_string()
    };
    let records = || json(plane, &["show", &run, "--json"])["records"].as_array().unwrap().len();
    let before = records();
    let refused = agentplane(plane, &["resume", &run, "--lift", "--answer", "ek:pay=perhaps"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert_eq!(records(), before, "a misspelt answer is refused before the lift is written");
    let out = agentplane(plane, &["resume", &run, "--lift", "--answer", "ek:pay=not-happened"]);
    assert!(out.status.success(), "{}", text(&out));
    let kinds: Vec<String> = json(plane, &["show", &run, "--json"])["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|record| record["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds[before..], ["DoubtAnswered", "WithholdingLifted"], "both recorded, the answer first");
}

/// R-LOG-4, R-AUD-8 (an attacker review, session 16): the store's seal index
/// pointed at another run's seal made `prove` print that run's leaf under the
/// name asked. `prove` now holds the leaf to the run it names: exit 1, the
/// index named as damaged; the audit finds the row.
#[test]
fn r_log_4_prove_refuses_a_leaf_the_seal_index_misattributes() {
    use redb::ReadableDatabase as _;
    let dir = demo_dir();
    let sealed: Vec<String> =
        ok(dir.path(), &["runs", "--outcome", "succeeded", "--ids"]).lines().map(str::to_owned).collect();
    assert!(sealed.len() >= 2, "the demo seals two runs at least: {sealed:?}");
    ok(dir.path(), &["prove", &sealed[0]]);
    let path = dir.path().join("agentplane.redb");
    let by_run: redb::TableDefinition<(&str, &str), u64> = redb::TableDefinition::new("seal_by_run");
    let other = {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_read().unwrap();
        txn.open_table(by_run).unwrap().get(("default", sealed[1].as_str())).unwrap().unwrap().value()
    };
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(by_run).unwrap().insert(("default", sealed[0].as_str()), other).unwrap();
        txn.commit().unwrap();
    }
    let refused = agentplane(dir.path(), &["prove", &sealed[0], "--json"]);
    assert_eq!(refused.status.code(), Some(1), "{}", String::from_utf8_lossy(&refused.stdout));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("does not seal run") && stderr.contains("seal index"), "{stderr}");
    let verify = agentplane(dir.path(), &["verify", "--json"]);
    assert_eq!(verify.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&verify.stdout).unwrap();
    let codes: Vec<&str> = report["findings"].as_array().unwrap().iter().filter_map(|f| f["code"].as_str()).collect();
    assert!(codes.contains(&"seal_index_mismatch"), "{report}");
}

/// R-RUN-3, R-AUD-8 (review 29): someone with write access to the store
/// and no key lists a failed run among the succeeded ones, in the outcome
/// index (what `runs --outcome` reads) and in the runs table's outcome
/// column (what a page, `--limit`, reads). `runs --outcome succeeded`
/// printed it as a verified row, exit 0, and `--ids` printed its id with
/// nothing read (the README's walk-through exports the first of them),
/// while `show` of the same run says failed. Every listing by outcome now
/// holds each run to its verified chain's last conclusion: the forged row
/// is UNVERIFIED, named with what the index claimed and what the chain
/// says, the genuine ones listed, exit 1; the audit finds the rows.
#[test]
fn r_run_3_runs_by_outcome_lists_no_run_whose_chain_concluded_otherwise() {
    use redb::ReadableTable as _;
    let dir = demo_dir();
    let succeeded: Vec<String> =
        ok(dir.path(), &["runs", "--outcome", "succeeded", "--ids"]).lines().map(str::to_owned).collect();
    let failed = ok(dir.path(), &["runs", "--outcome", "failed", "--ids"]).lines().next().unwrap().to_owned();
    let path = dir.path().join("agentplane.redb");
    {
        use journal_core::testkit::TamperAccess;
        let store = store_redb::RedbStore::open(&path).unwrap();
        let tenant = journal_core::TenantId::new("default").unwrap();
        let run = journal_core::RunId::new(&failed).unwrap();
        store.set_outcome_index(&tenant, &run, Some(journal_core::Outcome::Succeeded));
    }
    {
        let runs: redb::TableDefinition<(&str, &str), RunsRow> = redb::TableDefinition::new("runs");
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(runs).unwrap();
            let (seq, hash, sealed) = {
                let row = table.get(("default", failed.as_str())).unwrap().unwrap();
                let (seq, hash, sealed, outcome) = row.value();
                assert_eq!(outcome, Some("failed"));
                (seq, hash.to_vec(), sealed)
            };
            table.insert(("default", failed.as_str()), (seq, hash.as_slice(), sealed, Some("succeeded"))).unwrap();
        }
        txn.commit().unwrap();
    }
    assert_eq!(json(dir.path(), &["show", &failed, "--json"])["outcome"], "failed", "the chain says failed");
    for page in [&[][..], &["--limit", "50"][..]] {
        let args: Vec<&str> =
            ["runs", "--outcome", "succeeded", "--json"].iter().copied().chain(page.iter().copied()).collect();
        let rows = json_exit(dir.path(), &args, 1);
        let row = rows.as_array().unwrap().iter().find(|row| row["run"] == failed.as_str()).unwrap();
        assert_eq!(row["verified"], false, "{args:?}: {row}");
        let problem = row["problem"].as_str().unwrap();
        assert!(problem.contains("succeeded") && problem.contains("failed"), "{problem}");
        for genuine in &succeeded {
            let row = rows.as_array().unwrap().iter().find(|row| row["run"] == genuine.as_str()).unwrap();
            assert_eq!(row["verified"], true, "{args:?}: {row}");
        }
        let args: Vec<&str> =
            ["runs", "--outcome", "succeeded", "--ids"].iter().copied().chain(page.iter().copied()).collect();
        let out = agentplane(dir.path(), &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        let ids: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
        assert!(!ids.contains(&failed), "{args:?}: the failed run is printed as succeeded: {ids:?}");
        assert_eq!(ids.len(), succeeded.len(), "{args:?}: {ids:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("{failed} UNVERIFIED")), "{}", text(&out));
    }
    let verify = agentplane(dir.path(), &["verify", "--json"]);
    assert_eq!(verify.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&verify.stdout).unwrap();
    let codes: Vec<&str> = report["findings"].as_array().unwrap().iter().filter_map(|f| f["code"].as_str()).collect();
    assert!(codes.contains(&"outcome_index_mismatch"), "{report}");
}

/// R-RUN-7, R-AUD-8 (review 29): someone with write access to the store and
/// no key deletes a run's runs-table row and leaves its records. `cost`
/// and `runs` listed the tenant's runs from that table, so `cost` summed one
/// run fewer and printed the smaller figure as the tenant's spending, and
/// `runs` left the run out, both exit 0, while the audit finds the run's
/// records with no row. Both now read one snapshot of the records stored:
/// `cost` refuses (exit 1, the run named), `runs` lists it UNVERIFIED.
#[test]
fn r_run_7_cost_does_not_leave_out_a_run_whose_runs_row_was_deleted() {
    let dir = demo_dir();
    let before = json(dir.path(), &["cost", "--json"]);
    let runs = json(dir.path(), &["runs", "--json"]);
    let spent = runs.as_array().unwrap().iter().max_by_key(|row| row["tokens"].as_u64().unwrap()).unwrap();
    let run = spent["run"].as_str().unwrap().to_owned();
    let alone = json(dir.path(), &["cost", &run, "--json"]);
    assert!(alone["tokens"].as_u64().unwrap() > 0, "{alone}");
    {
        use journal_core::testkit::TamperAccess;
        let store = store_redb::RedbStore::open(&dir.path().join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("default").unwrap();
        store.delete_runs_row(&tenant, &journal_core::RunId::new(&run).unwrap());
    }
    let out = agentplane(dir.path(), &["cost", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "cost left the run out (the tenant spent {} tokens, the answer is below): {}",
        before["tokens"],
        text(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&run) && stderr.contains("runs table has no row"), "{stderr}");
    // `runs` agrees: the run is listed, UNVERIFIED, not left out.
    let rows = json_exit(dir.path(), &["runs", "--json"], 1);
    let row = rows.as_array().unwrap().iter().find(|row| row["run"] == run.as_str()).unwrap();
    assert_eq!(row["verified"], false, "{row}");
    let verify = agentplane(dir.path(), &["verify", "--json"]);
    assert_eq!(verify.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&verify.stdout).unwrap();
    let codes: Vec<&str> = report["findings"].as_array().unwrap().iter().filter_map(|f| f["code"].as_str()).collect();
    assert!(codes.contains(&"run_row_missing"), "{report}");
}

/// R-RUN-3, R-RUN-7, R-AUD-8 (review 29), on PostgreSQL: the same two
/// attacks made through SQL by someone who may write the database and holds
/// no key. A failed run moved to `succeeded` in the outcome index and the
/// runs table is not listed as succeeded (paged or not), and a run whose
/// runs row is deleted is not left out of `cost`: both are refused, exit 1.
#[test]
fn r_run_7_reads_on_postgresql_hold_derived_rows_to_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init"]);
    let url = point_at_a_fresh_database(plane);
    ok(plane, &["demo"]);
    let failed = ok(plane, &["runs", "--outcome", "failed", "--ids"]).lines().next().unwrap().to_owned();
    let runs = json(plane, &["runs", "--json"]);
    let spent = runs.as_array().unwrap().iter().max_by_key(|row| row["tokens"].as_u64().unwrap()).unwrap();
    let spent = spent["run"].as_str().unwrap().to_owned();
    let mut client = store_pg::testkit::connect_declared(&url);
    let moved = client
        .execute(
            "UPDATE outcome_index SET outcome = 'succeeded' WHERE tenant = 'default' AND run = $1 AND outcome = 'failed'",
            &[&failed],
        )
        .unwrap();
    assert_eq!(moved, 1);
    client.execute("UPDATE runs SET outcome = 'succeeded' WHERE tenant = 'default' AND run = $1", &[&failed]).unwrap();
    for page in [&[][..], &["--limit", "50"][..]] {
        let args: Vec<&str> =
            ["runs", "--outcome", "succeeded", "--json"].iter().copied().chain(page.iter().copied()).collect();
        let rows = json_exit(plane, &args, 1);
        let row = rows.as_array().unwrap().iter().find(|row| row["run"] == failed.as_str()).unwrap();
        assert_eq!(row["verified"], false, "{args:?}: {row}");
    }
    client.execute("DELETE FROM runs WHERE tenant = 'default' AND run = $1", &[&spent]).unwrap();
    let out = agentplane(plane, &["cost", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&spent) && stderr.contains("runs table has no row"), "{stderr}");
    let rows = json_exit(plane, &["runs", "--json"], 1);
    let row = rows.as_array().unwrap().iter().find(|row| row["run"] == spent.as_str()).unwrap();
    assert_eq!(row["verified"], false, "{row}");
}

/// R-COVER-4, R-RUN-7 (review 29): someone with write access to the store
/// and no key copies a run of tenant `shop` (its records, signed by the
/// plane's record key, which signs for every tenant) into tenant `search`,
/// with a runs row. The chain verifies, so `cost` of `search` counted the
/// run's tokens as `search`'s spending, and `runs` and `show` read it as a
/// verified run of `search`, while the audit of `search` finds it bound to
/// another tenant. Every read of a run now holds its admission to the tenant
/// read, as the audit does.
#[test]
fn r_cover_4_reads_refuse_a_run_copied_in_from_another_tenant() {
    use redb::ReadableTable as _;
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop", "--tenant-name", "search"]);
    ok(plane, &["--tenant", "shop", "demo"]);
    ok(plane, &["--tenant", "search", "demo"]);
    let before = json(plane, &["--tenant", "search", "cost", "--json"]);
    let runs = json(plane, &["--tenant", "shop", "runs", "--json"]);
    let spent = runs.as_array().unwrap().iter().max_by_key(|row| row["tokens"].as_u64().unwrap()).unwrap();
    let run = spent["run"].as_str().unwrap().to_owned();
    let path = plane.join("agentplane.redb");
    let head = {
        use journal_core::testkit::TamperAccess;
        let store = store_redb::RedbStore::open(&path).unwrap();
        let (shop, search) =
            (journal_core::TenantId::new("shop").unwrap(), journal_core::TenantId::new("search").unwrap());
        let id = journal_core::RunId::new(&run).unwrap();
        let stored = journal_core::Store::read_run(&store, &shop, &id).unwrap();
        for row in stored.rows {
            store.overwrite_row(&search, &id, row);
        }
        stored.head.unwrap()
    };
    {
        let runs: redb::TableDefinition<(&str, &str), RunsRow> = redb::TableDefinition::new("runs");
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(runs).unwrap();
            assert!(table.get(("search", run.as_str())).unwrap().is_none());
            table.insert(("search", run.as_str()), (head.seq, head.hash.as_bytes().as_slice(), false, None)).unwrap();
        }
        txn.commit().unwrap();
    }
    let out = agentplane(plane, &["--tenant", "search", "cost", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "search's cost counted shop's run (it was {} tokens): {}",
        before["tokens"],
        text(&out)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("tenant"), "{}", text(&out));
    let rows = json_exit(plane, &["--tenant", "search", "runs", "--json"], 1);
    let row = rows.as_array().unwrap().iter().find(|row| row["run"] == run.as_str()).unwrap();
    assert_eq!(row["verified"], false, "{row}");
    fails(plane, &["--tenant", "search", "show", &run], 1);
    fails(plane, &["--tenant", "search", "cost", &run], 1);
    ok(plane, &["--tenant", "shop", "show", &run]);
    let verify = agentplane(plane, &["--tenant", "search", "verify", "--json"]);
    assert_eq!(verify.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&verify.stdout).unwrap();
    let codes: Vec<&str> = report["findings"].as_array().unwrap().iter().filter_map(|f| f["code"].as_str()).collect();
    assert!(codes.contains(&"tenant_mismatch"), "{report}");
}

/// R-RUN-2, R-AUD-8 (review 29): someone with write access and no key
/// removes a sealed run's row from the store's seal lookup (redb's
/// `seal_by_run`), its seal leaf left in the log. `runs` listed the run as
/// verified and not sealed (SEALED `-`, `sealed: false`), exit 0, while its
/// verified chain's last conclusion seals it and `show` says so. `runs` now
/// holds the seal lookup to the chain: the row is UNVERIFIED, exit 1.
#[test]
fn r_run_2_runs_does_not_list_a_sealed_run_as_open_when_its_seal_lookup_is_gone() {
    let dir = demo_dir();
    let run = sealed_run(dir.path());
    {
        use journal_core::testkit::TamperAccess;
        let store = store_redb::RedbStore::open(&dir.path().join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("default").unwrap();
        store.hide_seal_of(&tenant, &journal_core::RunId::new(&run).unwrap());
    }
    assert_eq!(json(dir.path(), &["show", &run, "--json"])["outcome"], "succeeded");
    let rows = json_exit(dir.path(), &["runs", "--json"], 1);
    let row = rows.as_array().unwrap().iter().find(|row| row["run"] == run.as_str()).unwrap();
    assert_eq!(row["verified"], false, "a sealed run listed as open: {row}");
    assert!(row["problem"].as_str().unwrap().contains("seal"), "{row}");
}

/// R-RUN-2, R-LOG-2 (review 29): with a sealed run's row removed from the
/// store's seal lookup (its seal leaf left in the log), `prove` and `export`
/// answered from the lookup alone that the run is not sealed (or not
/// covered), while its verified chain's last conclusion seals it and `show`
/// says so. Both now hold the lookup to the chain and name the
/// contradiction (exit 1), as the audit does.
#[test]
fn r_run_2_prove_and_export_do_not_call_a_sealed_run_unsealed_when_its_seal_lookup_is_gone() {
    let dir = demo_dir();
    let run = sealed_run(dir.path());
    {
        use journal_core::testkit::TamperAccess;
        let store = store_redb::RedbStore::open(&dir.path().join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("default").unwrap();
        store.hide_seal_of(&tenant, &journal_core::RunId::new(&run).unwrap());
    }
    for args in [vec!["prove", run.as_str()], vec!["export", run.as_str(), "-o", "run.export"]] {
        let out = agentplane(dir.path(), &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        assert!(text(&out).contains("finds no seal of it"), "{args:?}: {}", text(&out));
    }
}

/// A row of redb's `runs` table: head seq, head hash, sealed, outcome.
type RunsRow<'a> = (u64, &'a [u8], bool, Option<&'a str>);

/// R-UX-1 (review 40): `agentplane demo` killed part way (Ctrl-C, a kill)
/// leaves its set of sample runs partly admitted, and the next demo still
/// runs. It numbered its set from the count of runs (one set of nine in
/// every eight runs), so a set left with one run admitted (the state made
/// here: ten runs, `demo-2-answered` among them, as a demo killed after its
/// first admission leaves) was picked again and refused as already
/// admitted, every time after: the plane's demo could never run again. The
/// next set is the one after the largest set admitted.
#[test]
fn r_ux_1_a_demo_killed_part_way_does_not_stop_every_later_demo() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path().join("agentplane-demo");
    ok(dir.path(), &["demo"]);
    let run = json(&plane, &["runs", "--outcome", "succeeded", "--json"])[0]["run"].as_str().unwrap().to_owned();
    // What a demo killed after its first admission leaves: set 2 begun.
    ok(&plane, &["fork", &run, "--at", "1", "--key", "demo-2-answered"]);
    let again = ok(dir.path(), &["demo"]);
    assert!(again.contains("succeeded"), "{again}");
    let runs = json(&plane, &["runs", "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), 19, "nine sample runs more");
}

/// R-OPS-1 (review 39): `show` matched each step's end to its start by a
/// scan of every record before it, so a run written straight into the file
/// (an unsigned chain that links passes a lenient read) of steps finished
/// and never started made `show` take time in the square of its length
/// (300,000 such records: past two minutes; 13.5 s in a debug build once
/// matched in one pass, measured once by review 39: no test asserts a
/// time). This holds the one pass to the same answers on such a run: each
/// end timed from its start, an end with no start untimed.
#[test]
fn r_ops_1_show_matches_each_end_to_its_start_in_a_forged_run() {
    use journal_core::record::StepMark;
    use journal_core::{At, Build, ChainHash, Record, RecordBody, RunId};
    const RECORDS: u64 = 3_000;
    let dir = demo_dir();
    let run = RunId::new("run-forged-long").unwrap();
    let at = |seq: u64| At::from_unix_millis(1_767_225_600_000 + 1_000 * seq as i64).unwrap();
    {
        type Value<'a> = (&'a str, Option<&'a str>, &'a [u8], &'a [u8], &'a [u8], Option<&'a str>, Option<&'a [u8]>);
        let records: redb::TableDefinition<(&str, &str, u64), Value> = redb::TableDefinition::new("records_z");
        let runs: redb::TableDefinition<(&str, &str), RunsRow> = redb::TableDefinition::new("runs");
        let db = redb::Database::open(dir.path().join("agentplane.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(records).unwrap();
            let mut prev = ChainHash::GENESIS;
            for seq in 1..=RECORDS {
                let record = Record {
                    run: run.clone(),
                    seq,
                    at: at(seq),
                    effect_key: None,
                    build: Build::current(),
                    // Odd: a step started; even: a step finished, of the start
                    // before it when seq is a multiple of four, never started else.
                    body: if seq % 2 == 1 {
                        RecordBody::StepStarted(StepMark { step: format!("s{seq}") })
                    } else if seq % 4 == 0 {
                        RecordBody::StepFinished(StepMark { step: format!("s{}", seq - 1) })
                    } else {
                        RecordBody::StepFinished(StepMark { step: format!("never-{seq}") })
                    },
                };
                let bytes = record.encode().unwrap();
                let hash = ChainHash::link(&prev, &bytes);
                // Tag 0: the bytes as written.
                let stored = [&[0u8][..], &bytes].concat();
                let row = (record.kind().as_str(), None, prev.as_bytes().as_slice(), hash.as_bytes().as_slice());
                table
                    .insert(("default", run.as_str(), seq), (row.0, row.1, row.2, row.3, &stored[..], None, None))
                    .unwrap();
                prev = hash;
            }
            let mut runs = txn.open_table(runs).unwrap();
            runs.insert(("default", run.as_str()), (RECORDS, prev.as_bytes().as_slice(), false, None)).unwrap();
        }
        txn.commit().unwrap();
    }
    let shown = agentplane(dir.path(), &["show", run.as_str()]);
    assert!(shown.status.success(), "{}", text(&shown));
    let shown = String::from_utf8(shown.stdout).unwrap();
    assert_eq!(shown.lines().count() as u64, 2 + RECORDS, "a heading, the columns, then every record");
    // A step's end is timed from its start (a second before); an end with
    // no start is not timed.
    let timed = shown.lines().filter(|line| line.contains("step s") && line.contains("finished")).count() as u64;
    assert_eq!(timed, RECORDS / 4);
    for line in shown.lines().filter(|line| line.contains("finished")) {
        let took_one_second = line.split_whitespace().any(|cell| cell == "1.0s");
        assert_eq!(took_one_second, line.contains("step s"), "{line}");
    }
}

/// Rewrites record `seq` of `run` as a newer build's (its version raised,
/// unsigned, its own hash made to match), as someone with the store file
/// and no key can; with `head`, the runs table's head follows it.
fn raise_version_in_place(plane: &Path, run: &str, seq: Option<u64>, head: bool) {
    use journal_core::testkit::TamperAccess;
    let store = store_redb::RedbStore::open(&plane.join("agentplane.redb")).unwrap();
    let tenant = journal_core::TenantId::new("default").unwrap();
    let run = journal_core::RunId::new(run).unwrap();
    let rows = journal_core::Store::read_run(&store, &tenant, &run).unwrap().rows;
    let seq = seq.unwrap_or(rows.len() as u64);
    let row = rows[seq as usize - 1].clone();
    let bytes = String::from_utf8(row.bytes.clone()).unwrap().replacen("\"v\":1,", "\"v\":2,", 1).into_bytes();
    let hash = journal_core::ChainHash::link(&row.prev_hash, &bytes);
    store.overwrite_row(&tenant, &run, journal_core::StoredRecord { bytes, hash, signature: None, ..row });
    if head {
        store.set_runs_head(&tenant, &run, journal_core::ExpectedHead { seq, hash });
    }
}

/// R-VER-4, R-UX-2: a record whose version was raised and whose own hash
/// was made to match, the record after it still linking to the hash as
/// written (or, for the last record of a sealed run, its seal committing to
/// it), was answered by every read command as build skew (exit 3, "read it
/// with the build that wrote it": an operator upgrades and moves on). The
/// chain says the bytes are not the ones written: exit 1, findings.
#[test]
fn r_ver_4_a_version_raised_in_place_is_a_finding_in_every_read_command_not_build_skew() {
    let dir = demo_dir();
    let (origin, log_key, _) = keys_of(dir.path());
    let sealed = sealed_run(dir.path());
    let failed = json(dir.path(), &["runs", "--outcome", "failed", "--json"])[0]["run"].as_str().unwrap().to_owned();
    // The failed run: record 2 of it; the sealed run: its last record, the
    // runs table's head made to follow (only the seal still disagrees).
    raise_version_in_place(dir.path(), &failed, Some(2), false);
    raise_version_in_place(dir.path(), &sealed, None, true);
    for run in [&failed, &sealed] {
        for args in [
            vec!["show", run.as_str()],
            vec!["cost", run.as_str()],
            vec!["export", run.as_str(), "-o", "out.export"],
            vec!["diff", failed.as_str(), sealed.as_str()],
        ] {
            let out = agentplane(dir.path(), &args);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        }
    }
    for args in [
        vec!["runs"],
        vec!["cost"],
        vec!["resume", failed.as_str()],
        vec!["verify"],
        vec!["--origin", &origin, "audit", "--log-key", &log_key],
    ] {
        let out = agentplane(dir.path(), &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
    }
}

/// R-OPS-1: a PostgreSQL key=value connection string given as the store
/// (`--store`, `init --store` or a configuration's `store`) is refused as a
/// usage error saying to give a URL; read as a redb path it made a file
/// named after it, its password in the name, and said nothing.
#[test]
fn r_ops_1_a_key_value_connection_string_as_the_store_is_refused_never_made_a_file() {
    const SECRET: &str = "kv-s3cret-77";
    let dir = tempfile::tempdir().unwrap();
    let kv = format!("dbname=plane user=agent password={SECRET}");
    for args in [
        vec!["--store", kv.as_str(), "demo"],
        vec!["--store", kv.as_str(), "verify"],
        vec!["init", "--store", " host = localhost dbname=plane"],
    ] {
        let said = fails(dir.path(), &args, 2);
        assert!(said.contains("key=value connection string") && said.contains("postgresql://"), "{args:?}: {said}");
        assert!(!said.contains(SECRET), "the password is never printed: {said}");
    }
    std::fs::write(dir.path().join("agentplane.toml"), format!("store = \"{kv}\"\nkeys = \"agentplane.key\"\n"))
        .unwrap();
    let said = fails(dir.path(), &["runs"], 2);
    assert!(said.contains("key=value connection string") && !said.contains(SECRET), "{said}");
    let made: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(made, vec![std::ffi::OsString::from("agentplane.toml")], "no file made but the test's own");
}

/// R-OPS-1, a bypass of the refusal above: only a string whose first word
/// was one of twelve libpq keywords was refused, so one that starts with
/// any other (`target_session_attrs=`, `sslrootcert=`, `keepalives=`...)
/// or puts `password=` after a path-like first word still made a redb file
/// named after it, the password in the name. Every libpq keyword, at any
/// word of the string, now makes it a key=value string.
#[test]
fn r_ops_1_a_key_value_string_led_by_any_libpq_keyword_is_refused_never_made_a_file() {
    const SECRET: &str = "kv-s3cret-78";
    let dir = tempfile::tempdir().unwrap();
    for store in [
        format!("target_session_attrs=any host=db password={SECRET}"),
        format!("keepalives=1 host=db password={SECRET}"),
        format!("sslcertmode=allow user=agent password={SECRET}"),
        format!("plane.redb password = {SECRET}"),
    ] {
        for args in [vec!["--store", store.as_str(), "demo"], vec!["init", "--store", store.as_str()]] {
            let said = fails(dir.path(), &args, 2);
            assert!(said.contains("key=value connection string"), "{args:?}: {said}");
            assert!(!said.contains(SECRET), "the password is never printed: {said}");
            // The URL's form is said whole (redaction took `[:PASSWORD]@` for a password).
            assert!(said.contains("postgresql://USER@HOST[:PORT]/DBNAME"), "{said}");
        }
    }
    let made: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(made.is_empty(), "no file made: {made:?}");
}

/// R-WIT-8, R-UX-2: `sweep --every` is the plane's witnessing, run for
/// months under a supervisor. Its standard output lost (the log reader it
/// was piped to died), it stopped after that round and exited 0, as if it
/// had been asked to stop and its last round was clean: a supervisor that
/// restarts on failure left the log unwitnessed from then on. It still
/// stops (its rounds no one reads), and exits 2 (I/O), saying why.
#[cfg(unix)]
#[test]
fn r_wit_8_a_sweep_every_whose_stdout_is_lost_never_exits_as_a_success() {
    let dir = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let _witnesses = plane_with_one_witness(plane, &["shop"]);
    ok(plane, &["demo"]);
    let mut child = spawned(plane, &["sweep", "--every", "100ms", "--probe-every", "1h", "--json"]);
    drop(child.stdout.take());
    // A guard, not a timing: a sweep that never ends fails the test here.
    let mut waited = 0;
    while child.try_wait().unwrap().is_none() && waited < 1200 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    }
    if child.try_wait().unwrap().is_none() {
        child.kill().unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("standard output is lost"), "{stderr}");
}

/// R-UX-3 (review 83): a finding quotes what it found (an untrusted
/// signer's key id, an idempotency key), and a record's key id is as long
/// as its writer likes: one record signed under a 200 000-character key id
/// made `audit` print a finding line of 200 KB, thousands of screens of
/// one line between the findings above it and the verdict. A finding's line
/// is cut, saying how long it was and that `--json` holds it whole.
#[test]
fn r_ux_3_audit_cuts_a_finding_line_that_quotes_a_huge_key_id() {
    use journal_core::Signer as _;
    use journal_core::testkit::TamperAccess;
    let dir = demo_dir();
    let run = {
        let (store, tenant, run, rows) = first_succeeded_run(dir.path());
        let huge = format!("spiffe://intruder.test/{}", "x".repeat(200_000));
        let intruder = journal_core::Ed25519Signer::from_seed(&huge, [9; 32]);
        let mut resigned = rows[1].clone();
        resigned.signature = Some(intruder.sign(&resigned.hash));
        store.overwrite_row(&tenant, &run, resigned);
        run
    };
    let (_, log_key, record_key) = keys_of(dir.path());
    let audit = ["audit", "--log-key", &log_key, "--record-key", &record_key, "--require-signature"];
    let out = agentplane(dir.path(), &audit);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a finding: {} {stderr}", &stdout[..stdout.len().min(2000)]);
    let finding = stdout.lines().find(|line| line.contains(run.as_str()) && line.starts_with("FINDING")).unwrap();
    assert!(finding.chars().count() <= 1_100, "the finding's line is cut: {} chars", finding.chars().count());
    assert!(finding.contains("--json"), "and says where it is whole: {}", &finding[..finding.len().min(2000)]);
    let json = agentplane(dir.path(), &[&audit[..], &["--json"]].concat());
    assert!(String::from_utf8_lossy(&json.stdout).contains(&"x".repeat(200_000)), "--json has it whole");
}

/// R-PLANE-2 (review 54): `keygen --origin` starting with `#` is refused
/// (exit 2) and no key file is written: the high-water mark would read that
/// origin's line as a comment (mutation review 87: with the refusal
/// removed, the key was written and no test saw it).
#[test]
fn keygen_refuses_an_origin_the_high_water_mark_reads_as_a_comment() {
    let dir = tempfile::tempdir().unwrap();
    let said = fails(dir.path(), &["--origin", "#shop.test/log", "keygen"], 2);
    assert!(said.contains("starts with #"), "{said}");
    assert!(!dir.path().join("agentplane.key").exists(), "no key file is written");
}

/// `keygen` beside a store that holds runs is refused (exit 2)
/// and writes no key file, even under another name: new keys would mix two
/// planes in one store (mutation review 87: with the refusal removed,
/// `--keys other.key keygen` wrote fresh keys and no test saw it).
#[test]
fn keygen_refuses_a_store_that_holds_runs() {
    let root = tempfile::tempdir().unwrap();
    ok(root.path(), &["demo"]);
    let plane = root.path().join("agentplane-demo");
    let said = fails(&plane, &["--keys", "other.key", "keygen"], 2);
    assert!(said.contains("already holds runs"), "{said}");
    assert!(!plane.join("other.key").exists(), "no key file is written");
}
