//! `agentplane audit` and `verify-export` against what an auditor names
//! (R-AUD-9, R-AUD-10, R-AUD-1): witnesses that are unreachable, stalled or
//! lying fail the audit unless `--allow-unavailable-anchor`; a witness without
//! the monitor endpoint is not checked; one public key under two names is
//! refused and a quorum counts keys; `--quorum 0` is a usage error; the origin
//! is the log key's name; `audit --json` has the documented schema. The real
//! binary, a redb file on disk, witness servers over real HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../audit/tests/support/http.rs"]
mod http;
#[path = "../../audit/tests/support/schema.rs"]
mod schema;

mod support;
use support::*;

use std::path::PathBuf;
use std::process::Output;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// A plane on a redb file, made through the library with sealed runs only
/// (so no heads leaf), its log's public key, and an auditor's empty directory
/// (no configuration, no key file).
struct Setup {
    root: tempfile::TempDir,
    auditor: tempfile::TempDir,
    origin: String,
    log_key: String,
    /// The plane's signed checkpoint of its log.
    signed: witness::SignedCheckpoint,
}

const ORIGIN: &str = "cli.test/plane/default";

impl Setup {
    fn new() -> Self {
        use journal_core::{Admission, AdmitRequest, Budget, RuntimeBuilder, Store, TenantId};
        let root = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(store_redb::RedbStore::create(&root.path().join("plane.redb")).unwrap());
        let tenant = TenantId::new("default").unwrap();
        let origin = journal_core::Origin::new(ORIGIN).unwrap();
        let log_key =
            witness::LogKey::new(witness::SignerKey::from_seed(ORIGIN, witness::ALG_ED25519, [4; 32]).unwrap())
                .unwrap();
        let runtime = RuntimeBuilder::new(std::sync::Arc::clone(&store) as std::sync::Arc<dyn Store>)
            .tenant(tenant.clone(), origin.clone(), Some(log_key.clone()))
            .build()
            .unwrap();
        for n in 0..3 {
            let request = AdmitRequest { idempotency_key: format!("job-{n}"), plan: vec![], budget: Budget::default() };
            let Admission::New(run) = runtime.admit(&tenant, request).unwrap() else { panic!("job-{n} exists") };
            (*run).succeed("done").unwrap();
        }
        let head = journal_core::LogView::open(store.as_ref(), &tenant).unwrap().head().unwrap();
        let signed = journal_core::log::sign_checkpoint(&origin, head.tree, &log_key).unwrap();
        Self {
            root,
            auditor: tempfile::tempdir().unwrap(),
            origin: ORIGIN.to_owned(),
            log_key: log_key.verifier_key().to_string(),
            signed,
        }
    }

    fn store(&self) -> String {
        self.root.path().join("plane.redb").to_str().unwrap().to_owned()
    }

    /// `audit` with the log key, no `--origin`, and `extra`.
    fn audit(&self, extra: &[&str]) -> Output {
        let store = self.store();
        let mut args = vec!["--store", &store, "audit", "--log-key", &self.log_key];
        args.extend_from_slice(extra);
        agentplane(self.auditor.path(), &args)
    }
}

/// A plane made by `demo` (for the commands that need its key file) and its log key.
fn demo() -> (tempfile::TempDir, PathBuf, String) {
    let root = tempfile::tempdir().unwrap();
    ok(root.path(), &["demo"]);
    let plane = root.path().join("agentplane-demo");
    let keys: Value = serde_json::from_str(&ok(&plane, &["keys", "--json"])).unwrap();
    let log_key = keys["log_key"].as_str().unwrap().to_owned();
    (root, plane, log_key)
}

fn cosigner(name: &str, seed: u8) -> witness::Cosigner {
    witness::Cosigner::new(witness::SignerKey::from_seed(name, witness::ALG_COSIGNATURE_V1, [seed; 32]).unwrap())
        .unwrap()
}

/// `NAME=BASE64` of `cosigner`'s public key: the same key under another name.
fn alias(cosigner: &witness::Cosigner, name: &str) -> String {
    format!("{name}={}", STANDARD.encode(cosigner.verifier_key().public_key()))
}

/// Without `--allow-unavailable-anchor`: exit 1, an `anchor_unavailable`
/// finding naming the anchor and why. With it: exit 0, `not_checked` names it.
fn assert_fails_unless_allowed(setup: &Setup, url: &str, why: &str, extra: &[&str]) {
    let key = cosigner("cli.test/w1", 51).verifier_key().to_string();
    let mut args = vec!["--witness", url, "--witness-key", &key, "--json"];
    args.extend_from_slice(extra);
    let failed = setup.audit(&args);
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    let report: Value = serde_json::from_slice(&failed.stdout).unwrap();
    assert_eq!(report["verdict"], "findings");
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report:#}");
    assert_eq!(findings[0]["code"], "anchor_unavailable");
    assert_eq!(findings[0]["class"], "anchor_unavailable");
    assert_eq!(findings[0]["anchor"], url);
    let message = findings[0]["message"].as_str().unwrap();
    assert!(message.contains(url) && message.contains(why), "{message}");

    args.push("--allow-unavailable-anchor");
    let allowed = setup.audit(&args);
    assert_eq!(allowed.status.code(), Some(0), "{}", text(&allowed));
    let report: Value = serde_json::from_slice(&allowed.stdout).unwrap();
    assert_eq!(report["verdict"], "incomplete");
    let not_checked = report["not_checked"].as_array().unwrap();
    let named =
        not_checked.iter().find(|n| n["what"] == format!("anchor {url}")).unwrap_or_else(|| panic!("{report:#}"));
    assert!(named["why"].as_str().unwrap().contains(why), "{named}");
    args.push("--assert-complete");
    assert_eq!(setup.audit(&args).status.code(), Some(1), "--assert-complete still refuses it");
}

#[test]
fn r_aud_9_an_unreachable_witness_fails_the_audit_unless_allowed() {
    let setup = Setup::new();
    assert_fails_unless_allowed(&setup, "http://127.0.0.1:9", "cannot reach witness", &[]);
    assert_fails_unless_allowed(&setup, &http::closed(), "cannot reach witness", &[]);
    // The human output says so too.
    let key = cosigner("cli.test/w1", 51).verifier_key().to_string();
    let out = setup.audit(&["--witness", "http://127.0.0.1:9", "--witness-key", &key]);
    assert!(
        text(&out).contains("FINDING [anchor_unavailable]") && !text(&out).contains("clean as far"),
        "{}",
        text(&out)
    );
}

#[test]
fn r_aud_9_a_stalled_witness_times_out_and_fails_the_audit_unless_allowed() {
    let setup = Setup::new();
    assert_fails_unless_allowed(&setup, &http::silent(), "timed out", &["--witness-timeout", "1"]);
}

#[test]
fn r_aud_9_a_lying_witness_fails_the_audit_unless_allowed() {
    let setup = Setup::new();
    let signed = &setup.signed;
    let w1 = cosigner("cli.test/w1", 51);
    // The trusted name and key id, but a signature over another checkpoint.
    let other = format!("{}\n1\n{}\n", setup.origin, STANDARD.encode([7u8; 32]));
    let line = w1.cosign(&other, 1_700_000_000).unwrap();
    let url = http::canned(200, signed.cosigned_note([&line]));
    assert_fails_unless_allowed(&setup, &url, "does not verify", &[]);
    // Signed by a key the auditor does not trust: no trusted cosignature.
    let stranger = cosigner("cli.test/w1", 52).cosign(&signed.checkpoint().to_text(), 1_700_000_000).unwrap();
    let url = http::canned(200, signed.cosigned_note([&stranger]));
    assert_fails_unless_allowed(&setup, &url, "without a cosignature from any trusted witness key", &[]);
}

#[test]
fn r_aud_9_a_witness_without_the_monitor_endpoint_is_not_checked() {
    let setup = Setup::new();
    let url = http::canned(404, "404 page not found\n".into());
    let key = cosigner("cli.test/w1", 51).verifier_key().to_string();
    let out = setup.audit(&["--witness", &url, "--witness-key", &key]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains(&format!("NOT CHECKED anchor {url}")) && said.contains("serves no monitor endpoint"),
        "{said}"
    );
    assert!(!said.contains("cosigned nothing"), "{said}");
    assert_eq!(setup.audit(&["--witness", &url, "--witness-key", &key, "--assert-complete"]).status.code(), Some(1));
}

#[test]
fn r_aud_10_one_key_under_two_names_is_refused_and_quorum_zero_is_a_usage_error() {
    let setup = Setup::new();
    let w1 = cosigner("cli.test/w1", 51);
    let vkey = w1.verifier_key().to_string();
    let out = setup.audit(&[
        "--witness",
        "http://127.0.0.1:9",
        "--witness-key",
        &vkey,
        "--witness-key",
        &alias(&w1, "w1-alias"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cli.test/w1+") && text(&out).contains("w1-alias+"), "names both: {}", text(&out));

    let (_root, plane, log_key) = demo();
    let runs: Value = serde_json::from_str(&ok(&plane, &["runs", "--outcome", "succeeded", "--json"])).unwrap();
    ok(&plane, &["export", runs[0]["run"].as_str().unwrap(), "-o", "run.export"]);
    let alias_vkey = witness::VerifierKey::ed25519(
        "w1-alias",
        witness::ALG_COSIGNATURE_V1,
        w1.verifier_key().public_key().try_into().unwrap(),
    )
    .unwrap()
    .to_string();
    let verify_export = |extra: &[&str]| {
        let mut args = vec!["verify-export", "run.export", "--log-key", &log_key];
        args.extend_from_slice(extra);
        agentplane(&plane, &args)
    };
    let out = verify_export(&["--witness-key", &vkey, "--witness-key", &alias_vkey, "--quorum", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cli.test/w1+") && text(&out).contains("w1-alias+"), "{}", text(&out));
    let out = verify_export(&["--witness-key", &vkey, "--quorum", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("quorum"), "{}", text(&out));
    let root = tempfile::tempdir().unwrap();
    assert_eq!(agentplane(root.path(), &["init", "--quorum", "0"]).status.code(), Some(2));
    assert!(!root.path().join("agentplane.toml").exists(), "nothing made");
}

/// R-AUD-10 end to end: a plane swept by one witness; its export counts one
/// key however often that key is named.
#[test]
fn r_aud_10_verify_export_counts_distinct_keys() {
    let (_root, plane, log_key) = demo();
    let origin =
        serde_json::from_str::<Value>(&ok(&plane, &["keys", "--json"])).unwrap()["origin"].as_str().unwrap().to_owned();
    let state = tempfile::tempdir().unwrap();
    let w1 = cosigner("cli.test/w1", 51);
    let config = witness_server::WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner: w1.clone(),
        logs: vec![witness_server::LogConfig { origin, keys: vec![witness::VerifierKey::parse(&log_key).unwrap()] }],
        clock: std::sync::Arc::new(witness_server::SystemClock),
    };
    let server = witness_server::WitnessServer::start(config, &state.path().join("w.redb"), "127.0.0.1:0").unwrap();
    let vkey = w1.verifier_key().to_string();
    let config_path = plane.join("agentplane.toml");
    let mut config = std::fs::read_to_string(&config_path).unwrap().replace("quorum = 0", "quorum = 1");
    config.push_str(&format!("\n[[witness]]\nurl = \"{}\"\nkey = \"{vkey}\"\n", server.url()));
    std::fs::write(&config_path, config).unwrap();
    ok(&plane, &["sweep"]);
    let runs: Value = serde_json::from_str(&ok(&plane, &["runs", "--outcome", "succeeded", "--json"])).unwrap();
    ok(&plane, &["export", runs[0]["run"].as_str().unwrap(), "-o", "run.export"]);
    let verify_export = |extra: &[&str]| {
        let mut args = vec!["verify-export", "run.export", "--log-key", &log_key];
        args.extend_from_slice(extra);
        agentplane(&plane, &args)
    };
    let one = verify_export(&["--witness-key", &vkey, "--quorum", "1"]);
    assert_eq!(one.status.code(), Some(0), "{}", text(&one));
    assert!(text(&one).contains("1 trusted witness cosigned"), "{}", text(&one));
    let two = verify_export(&["--witness-key", &vkey, "--quorum", "2"]);
    assert_eq!(two.status.code(), Some(1), "one key is not a quorum of 2: {}", text(&two));
}

#[test]
fn r_aud_1_the_origin_is_taken_from_the_log_key_and_a_mismatch_is_a_usage_error() {
    let setup = Setup::new();
    // No --origin: the log key's name.
    let out = setup.audit(&["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["origin"], setup.origin.as_str());
    assert_eq!(report["findings"].as_array().unwrap().len(), 0, "{report:#}");
    // The right --origin agrees.
    let store = setup.store();
    let with = |origin: &str| {
        agentplane(setup.auditor.path(), &["--store", &store, "--origin", origin, "audit", "--log-key", &setup.log_key])
    };
    assert_eq!(with(&setup.origin).status.code(), Some(0));
    // A wrong one: a usage error naming both, not ten seal_leaf_mismatch findings.
    let wrong = with("agentplane.local/plane/elsewhere");
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong));
    let said = text(&wrong);
    assert!(said.contains("agentplane.local/plane/elsewhere") && said.contains(&setup.log_key), "{said}");
    assert!(!said.contains("seal_leaf_mismatch"), "{said}");
}

#[test]
fn r_aud_9_audit_json_matches_the_documented_schema() {
    let setup = Setup::new();
    let readme = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../audit/README.md");
    std::fs::write(setup.auditor.path().join("saved.note"), setup.signed.note()).unwrap();
    let key = cosigner("cli.test/w1", 51).verifier_key().to_string();
    let lost = http::closed();
    let no_monitor = http::canned(404, "404 page not found\n".into());
    for (extra, verdict, code) in [
        (vec!["--checkpoint", "saved.note"], "incomplete", 0),
        (vec!["--checkpoint", "saved.note", "--assert-complete"], "incomplete", 1),
        (vec![], "incomplete", 0),
        (
            vec!["--checkpoint", "saved.note", "--witness", &lost, "--witness", &no_monitor, "--witness-key", &key],
            "findings",
            1,
        ),
    ] {
        let mut args = extra.clone();
        args.push("--json");
        let out = setup.audit(&args);
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
        schema::assert_matches(&readme, &report);
        assert_eq!(report["verdict"], verdict, "{report:#}");
        assert_eq!(out.status.code(), Some(code), "{report:#}");
        assert_eq!(report["log"]["size"], 3);
        assert_eq!(report["origin"], ORIGIN);
        assert_eq!(report["tenant"], "default");
    }
    // Verify's report (the plane's own anchors) has the same schema.
    let (_root, plane, _) = demo();
    let out = agentplane(&plane, &["verify", "--json"]);
    schema::assert_matches(&readme, &serde_json::from_slice(&out.stdout).unwrap());
}

/// R-AUD-9: a saved checkpoint whose signature by the trusted log key does
/// not verify (its size edited) fails the audit with findings (exit 1), as
/// `verify-proof` does with the same file; it is tamper evidence, not a usage
/// error.
#[test]
fn r_aud_9_an_altered_saved_checkpoint_fails_the_audit_with_findings() {
    let setup = Setup::new();
    let note = setup.signed.note().to_owned();
    let size = setup.signed.checkpoint().tree().size;
    let altered = note.replacen(&format!("\n{size}\n"), &format!("\n{}\n", size + 1), 1);
    assert_ne!(altered, note);
    std::fs::write(setup.auditor.path().join("altered.note"), altered).unwrap();
    let out = setup.audit(&["--checkpoint", "altered.note"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("altered.note"), "{}", text(&out));
}

/// R-AUD-9: `--witness-key` without `--witness` is a usage error (exit 2):
/// the audit does not check a saved `--checkpoint`'s cosignature lines, so a
/// witness key given with one only would look checked and was not.
#[test]
fn r_aud_9_a_witness_key_without_a_witness_is_a_usage_error() {
    let setup = Setup::new();
    let w1 = cosigner("cli.test/w1", 51);
    std::fs::write(setup.auditor.path().join("saved.note"), setup.signed.note()).unwrap();
    let vkey = w1.verifier_key().to_string();
    let out = setup.audit(&["--checkpoint", "saved.note", "--witness-key", &vkey]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--witness"), "{}", text(&out));
    assert_eq!(setup.audit(&["--checkpoint", "saved.note"]).status.code(), Some(0));
}

/// R-AUD-9: another tenant's log audited with this tenant's key (a
/// mistaken `--tenant`) is still findings, never clean, and each seal leaf's
/// finding says which log the leaf names and what to check, instead of
/// reading as a flood of unexplained rewrites.
#[test]
fn r_aud_9_a_mistaken_tenant_names_the_log_its_leaves_are_of() {
    let root = tempfile::tempdir().unwrap();
    let plane = root.path();
    ok(plane, &["init", "--tenant-name", "shop", "--tenant-name", "search"]);
    ok(plane, &["--tenant", "shop", "demo"]);
    ok(plane, &["--tenant", "search", "demo"]);
    let keys: Value = serde_json::from_str(&ok(plane, &["--tenant", "shop", "keys", "--json"])).unwrap();
    let shop_key = keys["log_key"].as_str().unwrap();
    // An auditor with a copy of the store and no configuration beside it:
    // the origin is the key's name.
    let auditor = tempfile::tempdir().unwrap();
    let store = auditor.path().join("copy.redb");
    std::fs::copy(plane.join("agentplane.redb"), &store).unwrap();
    let store = store.to_str().unwrap();
    let out =
        agentplane(auditor.path(), &["--store", store, "--tenant", "search", "audit", "--log-key", shop_key, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let leaves: Vec<&Value> =
        report["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "seal_leaf_mismatch").collect();
    assert!(!leaves.is_empty(), "{report}");
    for finding in leaves {
        let message = finding["message"].as_str().unwrap_or_default();
        assert!(message.contains("/search") && message.contains("/shop"), "{finding}");
        assert!(finding["remedy"].as_str().is_some_and(|r| r.contains("--tenant")), "{finding}");
    }
}

/// R-OPS-1: a private seed pasted as `--witness-key NAME=BASE64` (a key
/// file's `record` line) is refused without being printed.
#[test]
fn r_ops_1_a_refused_witness_key_is_not_echoed() {
    let setup = Setup::new();
    // 32 bytes that are not an Ed25519 public key: a seed, as a key file holds.
    let seed = "5UvFvPEQrsrp7ADpqqV/mOLdhMPtnsZnmpAhZX7Mu3s=";
    let out = setup.audit(&["--witness", "http://127.0.0.1:1", "--witness-key", &format!("w1={seed}")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!text(&out).contains(seed), "{}", text(&out));
    assert!(text(&out).contains("w1"), "{}", text(&out));
}

/// R-OPS-1: a witness reached through a proxy with basic authentication is
/// named `http://user:PASSWORD@host/`; the witness client shows it as
/// `user:***@` everywhere (`witness::client::shown_url`), but `audit
/// --witness` labelled the anchor with the URL as given: the password was
/// printed in the finding, the anchor's line and `not_checked`, text and
/// JSON. Every label hides it now; the request still carries it.
#[test]
fn r_ops_1_a_witness_password_is_never_printed_by_the_audit() {
    const SECRET: &str = "s3cret-proxy-pw";
    let setup = Setup::new();
    let key = cosigner("cli.test/w1", 51).verifier_key().to_string();
    for url in [format!("http://auditor:{SECRET}@127.0.0.1:9"), format!("http://auditor:{SECRET}@127.0.0.1:9/")] {
        for extra in [
            &[][..],
            &["--json"][..],
            &["--allow-unavailable-anchor"][..],
            &["--json", "--allow-unavailable-anchor"][..],
        ] {
            let mut args = vec!["--witness", url.as_str(), "--witness-key", &key];
            args.extend_from_slice(extra);
            let out = setup.audit(&args);
            assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
            assert!(!text(&out).contains(SECRET), "`audit {extra:?}` printed the witness's password:\n{}", text(&out));
            assert!(text(&out).contains("auditor:***@127.0.0.1:9"), "the anchor is still named: {}", text(&out));
        }
    }
    // A URL refused as malformed is named without its password either.
    let out = setup.audit(&["--witness", &format!("http://auditor:{SECRET}@[::1"), "--witness-key", &key]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!text(&out).contains(SECRET), "{}", text(&out));
}

/// R-UX-3 (issue 21 review): `audit --checkpoint FILE` (and `verify-proof
/// --checkpoint FILE`) read the whole file before its size was checked, so an
/// endless one (`/dev/zero`, a pipe) took all memory, and a 300 MB one was
/// read whole to be refused as larger than a note. Now at most a note's
/// limit is read: the command stops and refuses it as no checkpoint (exit 1,
/// as a 1.5 MB note that does not parse is: the class never depends on by how
/// much a file is too large; it was exit 2 until session 21). Fed here
/// through a pipe that never ends, the bytes it takes are counted.
#[cfg(target_os = "linux")]
#[test]
fn r_ux_3_an_endless_checkpoint_file_is_refused_after_a_note_s_worth() {
    use std::io::Write as _;
    let setup = Setup::new();
    let store = setup.store();
    let audit = ["--store", &store, "audit", "--log-key", &setup.log_key, "--checkpoint", "/dev/stdin"];
    let verify_proof = ["verify-proof", "proof.json", "--log-key", &setup.log_key, "--checkpoint", "/dev/stdin"];
    for args in [&audit[..], &verify_proof[..]] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane"))
            .current_dir(setup.auditor.path())
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        // At most 64 MiB, then the end of the input (a build that reads all
        // of it ends too, having taken all 64).
        let fed = std::thread::spawn(move || {
            let chunk = [b'a'; 64 * 1024];
            let mut written = 0usize;
            while written < 64 << 20 && stdin.write_all(&chunk).is_ok() {
                written += chunk.len();
            }
            written
        });
        let out = child.wait_with_output().unwrap();
        let written = fed.join().unwrap();
        // No checkpoint, like a note that does not verify at any size (exit 1), never an I/O failure.
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        assert!(text(&out).contains("larger than any note"), "{args:?}: {}", text(&out));
        assert!(written < 4 << 20, "{args:?} read {written} bytes of an endless checkpoint file");
    }
}
