//! End-to-end tests of the `agentplane` binary on a temporary directory
//! (R-UX-1..3, R-EXP-1, R-LOG-2).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::path::Path;
use std::process::{Command, Output};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

fn agentplane(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentplane")).current_dir(dir).args(args).output().unwrap()
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = agentplane(dir, args);
    assert!(out.status.success(), "agentplane {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn json(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&ok(dir, args)).unwrap()
}

fn demo_dir() -> tempfile::TempDir {
    demo_dir_with_output().0
}

fn demo_dir_with_output() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(dir.path(), &["demo"]);
    (dir, out)
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
    let dir = tempfile::tempdir().unwrap();
    let out = ok(dir.path(), &["demo"]);
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
    assert_eq!(signed.checkpoint().tree().size, 5, "five sealed runs");
    let as_json = json(dir.path(), &["checkpoint", "--json"]);
    assert_eq!(as_json["size"], 5);
    assert_eq!(as_json["origin"], "agentplane.local/plane");
    assert!(witness::SignedCheckpoint::open(as_json["note"].as_str().unwrap().as_bytes(), &[&vkey]).is_ok());
    // Running it again reuses the store and the key, and the log only grows.
    ok(dir.path(), &["demo"]);
    let later = ok(dir.path(), &["checkpoint"]);
    let (later, _) = witness::SignedCheckpoint::open(later.as_bytes(), &[&vkey]).unwrap();
    assert_eq!(later.checkpoint().tree().size, 10);
    let proof = json(dir.path(), &["prove", "--consistency", "5", "--json"]);
    let path: Vec<tlog::NodeHash> = proof["proof"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| tlog::NodeHash::try_from(STANDARD.decode(h.as_str().unwrap()).unwrap().as_slice()).unwrap())
        .collect();
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
    let decode = |v: &Value| STANDARD.decode(v.as_str().unwrap()).unwrap();
    let tree = tlog::Tree::new(
        proof["size"].as_u64().unwrap(),
        tlog::RootHash::try_from(decode(&proof["root"]).as_slice()).unwrap(),
    );
    let leaf = tlog::LeafHash::try_from(decode(&proof["leaf_hash"]).as_slice()).unwrap();
    let path = proof["proof"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| tlog::NodeHash::try_from(decode(h).as_slice()).unwrap())
        .collect();
    tree.verify_inclusion(&leaf, proof["index"].as_u64().unwrap(), &tlog::InclusionProof::new(path)).unwrap();
    let note = ok(dir.path(), &["checkpoint"]);
    assert!(note.contains(proof["root"].as_str().unwrap()), "the proof is against the checkpoint's root");
    // A run that is not sealed has no inclusion proof.
    let failed = json(dir.path(), &["runs", "--outcome", "failed", "--json"])[0]["run"].as_str().unwrap().to_owned();
    assert_eq!(agentplane(dir.path(), &["prove", &failed]).status.code(), Some(2));
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

#[test]
fn r_chain_5_verify_finds_a_record_edited_in_the_store_file() {
    let dir = demo_dir();
    assert!(ok(dir.path(), &["verify", "--require-signature"]).contains("0 findings"));
    let clean = json(dir.path(), &["verify", "--json"]);
    assert_eq!(clean["inclusions_checked"], 5, "every sealed run proves inclusion: {clean}");
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
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0]["run"], run.as_str());
    assert!(findings[0]["finding"].as_str().unwrap().contains("seq 2"), "{findings:?}");
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
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} was modified by {args:?}");
        }
    }
    let out = agentplane(dir.path(), &["--store", "missing.redb", "runs"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("missing.redb").exists(), "a read command never creates a store");
}

#[test]
fn r_ux_2_every_command_has_help_and_usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for command in
        ["demo", "keygen", "runs", "show", "verify", "checkpoint", "prove", "cost", "export", "verify-export"]
    {
        let out = ok(dir.path(), &[command, "--help"]);
        assert!(out.contains("Usage"), "{command} --help");
    }
    assert_eq!(agentplane(dir.path(), &["no-such-command"]).status.code(), Some(2));
    assert_eq!(agentplane(dir.path(), &["prove"]).status.code(), Some(2));
}
