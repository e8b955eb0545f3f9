//! An attacker review of the export and proof paths (R-EXP-1, R-LOG-4,
//! R-COVER-2, R-UX-3): exports and proofs crafted by a hostile operator, and
//! stores changed by someone with the file and no key. Each test failed
//! before its fix.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::path::{Path, PathBuf};

use journal_core::testkit::TamperAccess;

/// A plane `agentplane demo` made, in a folder of its own.
struct Demo {
    _root: tempfile::TempDir,
    plane: PathBuf,
    vkey: String,
}

fn demo() -> Demo {
    let root = tempfile::tempdir().unwrap();
    ok(root.path(), &["demo"]);
    let plane = root.path().join("agentplane-demo");
    let vkey = ok(&plane, &["keys", "--print", "log-key"]).trim().to_owned();
    Demo { _root: root, plane, vkey }
}

fn first_run(dir: &Path, outcome: &str) -> String {
    ok(dir, &["runs", "--outcome", outcome, "--ids"]).lines().next().unwrap().to_owned()
}

/// A demo plane whose first succeeded run is exported to `run.export` in
/// its folder.
fn exported_demo() -> Demo {
    let demo = demo();
    let sealed = first_run(&demo.plane, "succeeded");
    ok(&demo.plane, &["export", &sealed, "-o", "run.export"]);
    demo
}

fn tenant() -> journal_core::TenantId {
    journal_core::TenantId::new("default").unwrap()
}

/// R-COVER-2, R-EXP-1: an open run cut back in the store file (its last
/// records deleted, its head row moved back, no moved mark) below the head
/// the log's newest heads leaf holds. `export` wrote the shorter records
/// under the heads leaf of the longer history and said "its head at seq 7
/// proven in the log" (exit 0), a file no auditor can verify; now it refuses
/// (exit 1, the cut named) and writes nothing.
#[test]
fn r_cover_2_export_refuses_an_open_run_cut_below_its_covered_head() {
    let demo = demo();
    let dir = demo.plane.as_path();
    let failed = first_run(dir, "failed");
    ok(dir, &["checkpoint"]);
    {
        let store = store_redb::RedbStore::open(&dir.join("agentplane.redb")).unwrap();
        let run = journal_core::RunId::new(&failed).unwrap();
        let rows = journal_core::Store::read_run(&store, &tenant(), &run).unwrap().rows;
        let last = rows.len() as u64;
        store.delete_record(&tenant(), &run, last);
        let kept = &rows[rows.len() - 2];
        store.set_runs_head(&tenant(), &run, journal_core::ExpectedHead { seq: kept.seq, hash: kept.hash });
    }
    let out = agentplane(dir, &["export", &failed, "-o", "cut.export"]);
    let said = text(&out);
    if out.status.success() {
        let verified = agentplane(dir, &["verify-export", "cut.export", "--log-key", &demo.vkey]);
        panic!("export wrote a file ({said}); verify-export says: {}", text(&verified));
    }
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains(&failed) && said.contains("cut back"), "{said}");
    assert!(!dir.join("cut.export").exists(), "nothing is written");
}

/// R-EXP-1, R-WIT-9: a cosigned row whose note is not the checkpoint of the
/// tree kept beside it (an older genuine note put in the store file beside a
/// newer tree). `export` proved the run in the row's tree and wrote the
/// other note under that proof (exit 0, a file verify-export refuses); now
/// every stored note is held to the log key and its tree before it is
/// written, and export refuses (exit 1) without writing.
#[test]
fn r_exp_1_export_refuses_a_cosigned_row_whose_note_is_not_its_tree() {
    let demo = demo();
    let dir = demo.plane.as_path();
    let sealed = first_run(dir, "succeeded");
    let older = ok(dir, &["checkpoint"]);
    ok(dir, &["fork", &sealed, "--at", "2"]);
    let newer = json(dir, &["checkpoint", "--json"]);
    let size = newer["size"].as_u64().unwrap();
    {
        let store = store_redb::RedbStore::open(&dir.join("agentplane.redb")).unwrap();
        let tree = tlog::Tree::new(size, tlog::RootHash::from_hex(newer["root"].as_str().unwrap()).unwrap());
        let row = journal_core::store::SignedTree { tree, note: older.clone() };
        journal_core::Store::record_cosigned_checkpoint(&store, &tenant(), row).unwrap();
    }
    let out = agentplane(dir, &["export", &sealed, "-o", "run.export"]);
    let said = text(&out);
    if out.status.success() {
        let verified = agentplane(dir, &["verify-export", "run.export", "--log-key", &demo.vkey]);
        panic!("export wrote a file ({said}); verify-export says: {}", text(&verified));
    }
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("cosigned"), "{said}");
    assert!(!dir.join("run.export").exists(), "nothing is written");
}

/// A log of `origin` signed with a fresh key, holding `leaves`: its
/// signed note, its verifier key, its tree, and the inclusion proof of each leaf.
fn signed_log(origin: &str, leaves: &[Vec<u8>]) -> (String, String, tlog::Tree, Vec<tlog::InclusionProof>) {
    let signer = witness::SignerKey::generate(origin, witness::ALG_ED25519).unwrap();
    let mut hashes = tlog::MemoryHashStore::new();
    for leaf in leaves {
        hashes.append(tlog::LeafHash::of(leaf));
    }
    let tree = hashes.tree();
    let proofs = (0..leaves.len() as u64).map(|i| hashes.prove_inclusion(i, tree.size).unwrap()).collect();
    let key = witness::LogKey::new(signer.clone()).unwrap();
    let origin = witness::Origin::new(origin).unwrap();
    let note = key.sign(&witness::Checkpoint::new(&origin, tree)).unwrap().note().to_owned();
    (note, signer.verifier_key().to_string(), tree, proofs)
}

/// The JSON of `prove RUN --json` for leaf `index` of a log.
fn proof_json(run: &str, leaf: &[u8], index: u64, tree: tlog::Tree, proof: &tlog::InclusionProof) -> String {
    serde_json::json!({
        "from_walk_with_holes": false,
        "index": index,
        "leaf": String::from_utf8(leaf.to_vec()).unwrap(),
        "leaf_hash": tlog::LeafHash::of(leaf).to_string(),
        "proof": proof.path().iter().map(ToString::to_string).collect::<Vec<_>>(),
        "root": tree.root.to_string(),
        "run": run,
        "size": tree.size,
    })
    .to_string()
}

fn seal_leaf(origin: &str, run: &str) -> Vec<u8> {
    format!("agentplane/seal/v1\norigin {origin}\nrun {run}\nrecords 3\nhead {}\n", "ab".repeat(32)).into_bytes()
}

/// R-LOG-4: a proof whose leaf seals a run in another origin's log (bank's),
/// proven in the tree of the checkpoint the auditor trusts (shop's). verify-proof
/// said "valid ... the leaf seals run X" of a run the leaf itself places in
/// another log (verify-export refuses the same as a mismatch); now the seal
/// leaf's origin must be the trusted checkpoint's (exit 1, both named).
#[test]
fn r_log_4_verify_proof_refuses_a_seal_leaf_of_another_origin() {
    let dir = tempfile::tempdir().unwrap();
    let run = "run-0123456789abcdef01234567";
    let foreign = seal_leaf("bank.test/log", run);
    let own = seal_leaf("shop.test/log", "run-76543210fedcba9876543210");
    let (note, vkey, tree, proofs) = signed_log("shop.test/log", &[own.clone(), foreign.clone()]);
    std::fs::write(dir.path().join("shop.note"), &note).unwrap();
    std::fs::write(dir.path().join("own.json"), proof_json("run-76543210fedcba9876543210", &own, 0, tree, &proofs[0]))
        .unwrap();
    std::fs::write(dir.path().join("foreign.json"), proof_json(run, &foreign, 1, tree, &proofs[1])).unwrap();
    let trusted = ["--checkpoint", "shop.note", "--log-key", vkey.as_str()];
    ok(dir.path(), &[&["verify-proof", "own.json"][..], &trusted].concat());
    let refused = json_exit(dir.path(), &[&["verify-proof", "foreign.json", "--json"][..], &trusted].concat(), 1);
    assert_eq!(refused["class"], "findings", "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains("bank.test/log") && message.contains("shop.test/log"), "{message}");
}

/// R-LOG-4: with a signed checkpoint and a `--root` given together, a proof
/// of the `--root` tree (one the checkpoint does not vouch for) was answered
/// "trusted by a checkpoint signed by the log key"; now `trusted_by` names
/// the input whose tree the proof is of.
#[test]
fn r_log_4_verify_proof_names_the_input_that_vouched_for_its_tree() {
    let dir = tempfile::tempdir().unwrap();
    let run = "run-0123456789abcdef01234567";
    let leaf = seal_leaf("shop.test/log", run);
    let (note, vkey, _, _) = signed_log("shop.test/log", std::slice::from_ref(&leaf));
    // Another tree holding the same leaf, that no checkpoint signed.
    let (_, _, other, proofs) = signed_log("shop.test/log", &[seal_leaf("shop.test/log", "run-x"), leaf.clone()]);
    std::fs::write(dir.path().join("shop.note"), &note).unwrap();
    std::fs::write(dir.path().join("proof.json"), proof_json(run, &leaf, 1, other, &proofs[1])).unwrap();
    let root = other.root.to_string();
    let size = other.size.to_string();
    let args = [
        "verify-proof",
        "proof.json",
        "--checkpoint",
        "shop.note",
        "--log-key",
        vkey.as_str(),
        "--root",
        root.as_str(),
        "--size",
        size.as_str(),
        "--json",
    ];
    let answer = json(dir.path(), &args);
    assert_eq!(answer["trusted_by"], "--root", "{answer}");
}

/// `verify-proof` with `input` on standard input.
fn verify_proof_stdin(dir: &Path, input: &[u8], trusted: &[&str]) -> std::process::Output {
    use std::io::Write as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane"))
        .current_dir(dir)
        .args([&["verify-proof", "-", "--json"][..], trusted].concat())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The command may stop reading early (past its limit): a closed pipe is its answer.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

/// R-UX-2, R-UX-3: a proof past the 1 MiB `verify-proof` reads, or one that
/// is not UTF-8, is not a proof (exit 1, findings) whether it comes in a file
/// or on standard input. Before, the file past the limit was an I/O error
/// (exit 2), standard input was cut at the limit and refused as "EOF while
/// parsing", and non-UTF-8 standard input was an I/O error (exit 2) where the
/// same bytes in a file were findings (exit 1).
#[test]
fn r_ux_3_verify_proof_classes_an_oversized_or_non_utf8_proof_alike_from_a_file_or_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let root = "00".repeat(32);
    let trusted = ["--root", root.as_str(), "--size", "1"];
    let mut oversized = br#"{"size":1,"root":""#.to_vec();
    oversized.extend(std::iter::repeat_n(b'0', 2 << 20));
    oversized.extend_from_slice(br#"","proof":[]}"#);
    let not_utf8 = b"{\"size\":1,\"root\":\"\xff\xfe\",\"proof\":[]}".to_vec();
    for (name, input, says) in [("oversized", &oversized, "1 MiB"), ("not-utf8", &not_utf8, "UTF-8")] {
        std::fs::write(dir.path().join(name), input).unwrap();
        let from_file = json_exit(dir.path(), &[&["verify-proof", name, "--json"][..], &trusted].concat(), 1);
        let out = verify_proof_stdin(dir.path(), input, &trusted);
        assert_eq!(out.status.code(), Some(1), "{name} on stdin: {}", text(&out));
        let from_stdin: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for answer in [&from_file, &from_stdin] {
            assert_eq!(answer["class"], "findings", "{name}: {answer}");
            assert!(answer["message"].as_str().unwrap().contains(says), "{name}: {answer}");
        }
    }
}

/// R-LOG-4, R-LOG-7: a sealed run's leaf bytes changed in the store file
/// (its node hashes left as they were). `prove` printed the changed leaf, its
/// hash and the stored path as "run X is leaf i of n" (exit 0), a proof that
/// leads to no root the log signs; now `prove` checks its proof against the
/// tree before printing it, as it does for an open run's head, and refuses
/// (exit 1, the store named as changed).
#[test]
fn r_log_4_prove_refuses_a_seal_leaf_changed_behind_the_log() {
    let demo = demo();
    let dir = demo.plane.as_path();
    let sealed = first_run(dir, "succeeded");
    let proof = json(dir, &["prove", &sealed, "--json"]);
    {
        let store = store_redb::RedbStore::open(&dir.join("agentplane.redb")).unwrap();
        let run = journal_core::RunId::new(&sealed).unwrap();
        let leaf = proof["leaf"].as_str().unwrap().replace("records ", "records 1");
        store.overwrite_seal_leaf(&tenant(), &run, leaf.into_bytes());
    }
    let out = agentplane(dir, &["prove", &sealed, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["class"], "findings", "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("audit"), "{answer}");
}

/// R-LOG-4, someone with the store file and no key: the whole log rewritten
/// (node hashes, counter) so that one seal leaf names another origin's log,
/// the run it names unchanged. The proof then reaches the store's root, and
/// still proves nothing about this plane: `prove` refuses it (exit 1), as
/// `verify-proof` and `verify-export` do, where it printed the proof.
#[test]
fn r_log_4_prove_refuses_a_seal_leaf_of_another_origin() {
    let demo = demo();
    let dir = demo.plane.as_path();
    let sealed = first_run(dir, "succeeded");
    {
        use journal_core::Store as _;
        let store = store_redb::RedbStore::open(&dir.join("agentplane.redb")).unwrap();
        let seals: Vec<(journal_core::RunId, Vec<u8>)> = store
            .seals_in(&tenant(), 0..u64::MAX)
            .unwrap()
            .into_iter()
            .map(|entry| {
                let leaf = if entry.run.as_str() == sealed {
                    String::from_utf8(entry.leaf_bytes)
                        .unwrap()
                        .replace("agentplane.local/plane/default", "elsewhere.example/plane")
                        .into_bytes()
                } else {
                    entry.leaf_bytes
                };
                (entry.run, leaf)
            })
            .collect();
        store.rewrite_log(&tenant(), &seals);
    }
    let out = agentplane(dir, &["prove", &sealed, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["class"], "findings", "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("elsewhere.example/plane"), "{answer}");
}

/// The terminal text of a failure: no control character but the newline,
/// and no line after the first that starts where a line of a command's own
/// output would.
fn assert_printable(stderr: &str, what: &str) {
    assert!(!stderr.trim_end_matches('\n').chars().any(|c| c.is_control() && c != '\n'), "{what}: {stderr:?}");
    for line in stderr.trim_end_matches('\n').lines().skip(1) {
        assert!(line.starts_with(' '), "{what}: a line of its own in the failure: {line:?} in {stderr:?}");
    }
}

/// R-UX-3: an export file is hostile input (`verify-export` is the
/// auditor's command for a file someone else gave them, and `diff` reads
/// one as a run). A line whose type, or a field name, is text of the
/// attacker's choosing was refused with serde's message, which quotes it
/// as it came: escape sequences reached the auditor's terminal (a title
/// set, the line erased) and a newline printed a line of the attacker's
/// own ("valid: ...") under the refusal. The refusal still names what it
/// read, its control characters escaped and any later line indented.
#[test]
fn r_ux_3_a_hostile_export_puts_no_control_character_on_the_terminal() {
    let demo = demo();
    let dir = demo.plane.as_path();
    let forged = "\u{1b}]0;owned\u{7}\u{1b}[2K\rvalid: export verified\nvalid: forged";
    let lines = [
        serde_json::json!({ "type": forged }).to_string(),
        serde_json::json!({ "type": "header", "format": "agentplane-export/v4", "origin": "o", "run": "r", forged: 1 })
            .to_string(),
    ];
    for (i, line) in lines.iter().enumerate() {
        let file = dir.join(format!("hostile-{i}.export"));
        std::fs::write(&file, format!("{line}\n")).unwrap();
        let file = file.to_str().unwrap();
        let stderr = fails(dir, &["verify-export", file, "--log-key", &demo.vkey], 1);
        assert!(stderr.contains("valid: forged"), "the refusal still quotes what it read: {stderr:?}");
        assert_printable(&stderr, "verify-export");
        assert_printable(&fails(dir, &["diff", file, file], 1), "diff");
    }
}

/// R-UX-3: `diff` reads an export file as a run, its chain checked alone,
/// and a chain is only SHA-256: anyone can write a run whose records say
/// what they like (as a tool's output an agent recorded can). A body's text
/// with escape sequences in it was printed as it came in the table: only
/// newlines were flattened, so the file could erase the lines above it,
/// retitle the terminal, or backspace over the `!` that marks a differing
/// row. A cell now shows every control character escaped.
#[test]
fn r_ux_3_diff_of_a_hostile_export_prints_no_control_character_in_its_table() {
    let demo = demo();
    let dir = demo.plane.as_path();
    let run = first_run(dir, "succeeded");
    ok(dir, &["export", &run, "-o", "honest.export"]);
    let honest = std::fs::read_to_string(dir.join("honest.export")).unwrap();
    // Also a right-to-left override, which shows the text after it reversed.
    let forged = "\u{1b}[1A\u{1b}[2K\u{8}\u{8}\u{202e}emas\u{2069}the runs did the same\u{1b}]0;owned\u{7}";
    let mut prev = journal_core::ChainHash::from_hex(&"0".repeat(64)).unwrap();
    let mut hostile = String::new();
    for line in honest.lines() {
        let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
        if value["type"] == "record" {
            let mut bytes: serde_json::Value = serde_json::from_str(value["bytes"].as_str().unwrap()).unwrap();
            if let Some(reason) = bytes["body"].get_mut("reason") {
                *reason = serde_json::Value::String(format!("{forged}{}", reason.as_str().unwrap()));
            }
            let bytes = serde_json::to_string(&bytes).unwrap();
            let hash = journal_core::ChainHash::link(&prev, bytes.as_bytes());
            value["prev_hash"] = prev.to_string().into();
            value["hash"] = hash.to_string().into();
            value["bytes"] = bytes.into();
            value["signature"] = serde_json::Value::Null;
            prev = hash;
        }
        hostile.push_str(&format!("{value}\n"));
    }
    assert!(hostile.contains("owned"), "the run holds a record with a reason to forge");
    std::fs::write(dir.join("hostile.export"), hostile).unwrap();
    let out = agentplane(dir, &["diff", "honest.export", "hostile.export"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "the runs differ: {stdout}");
    assert!(!stdout.chars().any(|c| c.is_control() && c != '\n'), "{stdout:?}");
    let bidi = |c: char| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    assert!(!stdout.chars().any(bidi), "no bidirectional override reorders the table: {stdout:?}");
    assert!(stdout.contains("RunConcluded reason=\\u{1b}[1A"), "the differing reason is shown, escaped: {stdout}");
}

/// R-UX-3: `show` escaped the control characters of an effect's output and
/// of a conclusion's reason, but printed the rest of a record's text as it
/// came: the idempotency key (from whoever delivers the admission), the
/// plan's and steps' names and the effect keys (from agent code). A key
/// holding escape sequences could erase the lines above it or retitle the
/// terminal; every cell of the timeline is now escaped.
#[test]
fn r_ux_3_show_prints_no_control_character_of_a_key_or_a_step() {
    use journal_core::{Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, RuntimeBuilder, Store};
    let dir = tempfile::tempdir().unwrap();
    let origin = "cli.test/plane/default";
    let forged = "\u{1b}[1A\u{1b}[2K\u{1b}]0;owned\u{7}";
    let run = {
        let store = std::sync::Arc::new(store_redb::RedbStore::create(&dir.path().join("plane.redb")).unwrap());
        let runtime = RuntimeBuilder::new(std::sync::Arc::clone(&store) as std::sync::Arc<dyn Store>)
            .tenant(tenant(), journal_core::Origin::new(origin).unwrap(), None)
            .build()
            .unwrap();
        let step = format!("step{forged}");
        let request = AdmitRequest {
            idempotency_key: format!("key{forged}"),
            plan: vec![step.clone()],
            budget: Budget::default(),
        };
        let Admission::New(mut run) = runtime.admit(&tenant(), request).unwrap() else { panic!("admitted twice") };
        run.start_step(&step).unwrap();
        run.effect(&format!("ek{forged}"), &step, || EffectOutput {
            result: EffectResult::Ok { output: "ok".into() },
            charged: Counters::default(),
        })
        .unwrap();
        run.finish_step(&step).unwrap();
        let id = run.run().clone();
        (*run).succeed("done").unwrap();
        id.to_string()
    };
    let out = ok(dir.path(), &["show", &run, "--store", "plane.redb", "--origin", origin]);
    assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
    for escaped in ["key\\u{1b}[1A", "step\\u{1b}[1A", "ek\\u{1b}[1A"] {
        assert!(out.contains(escaped), "{escaped} is shown, escaped: {out}");
    }
}

/// R-LOG-4: a consistency proof from the checkpoint the auditor trusts (of
/// size 1) to a tree nobody signed (size 2, its second leaf made up): anyone who
/// knows a trusted tree can make one to a root of their choosing. verify-proof
/// answered "valid: the tree of size 2 (root R) extends size 1", `root: R`,
/// `trusted_by: a checkpoint signed by the log key`: a root vouched for by
/// nothing but the proof itself. Now the newer end must be a trusted tree
/// (exit 1, findings, naming both sizes); with the newer checkpoint given
/// too, the same proof verifies.
#[test]
fn r_log_4_verify_proof_never_vouches_for_the_newer_root_of_a_consistency_proof() {
    let dir = tempfile::tempdir().unwrap();
    let origin = witness::Origin::new("shop.test/log").unwrap();
    let signer = witness::SignerKey::generate(origin.as_str(), witness::ALG_ED25519).unwrap();
    let key = witness::LogKey::new(signer.clone()).unwrap();
    let vkey = signer.verifier_key().to_string();
    let mut log = tlog::MemoryHashStore::new();
    log.append(tlog::LeafHash::of(&seal_leaf("shop.test/log", "run-a")));
    let old = log.tree();
    log.append(tlog::LeafHash::of(b"a leaf this log never held"));
    let made_up = log.tree();
    let sign = |tree| key.sign(&witness::Checkpoint::new(&origin, tree)).unwrap().note().to_owned();
    std::fs::write(dir.path().join("old.note"), sign(old)).unwrap();
    std::fs::write(dir.path().join("new.note"), sign(made_up)).unwrap();
    let proof = serde_json::json!({
        "from_walk_with_holes": false,
        "old_root": old.root.to_string(),
        "old_size": old.size,
        "proof": log.prove_consistency(1, 2).unwrap().path().iter().map(ToString::to_string).collect::<Vec<_>>(),
        "root": made_up.root.to_string(),
        "size": made_up.size,
    });
    std::fs::write(dir.path().join("consistency.json"), proof.to_string()).unwrap();
    let base = ["verify-proof", "consistency.json", "--log-key", vkey.as_str(), "--json"];
    let refused = json_exit(dir.path(), &[&base[..], &["--checkpoint", "old.note"]].concat(), 1);
    assert_eq!(refused["class"], "findings", "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains("size 2") && message.contains("size 1"), "{message}");
    // The newer tree trusted (alone, or with the older one): its root is the one vouched for.
    for trusted in [&["--checkpoint", "new.note"][..], &["--checkpoint", "old.note", "--checkpoint", "new.note"]] {
        let valid = json(dir.path(), &[&base[..], trusted].concat());
        assert_eq!(valid["root"], made_up.root.to_string(), "{valid}");
        assert_eq!(valid["trusted_by"], "a checkpoint signed by the log key", "{valid}");
    }
}

/// R-LOG-4, R-AUD-10: a "log key" of small order (here the identity point,
/// its key id computed as anyone can). Under cofactorless RFC 8032
/// verification the signature (R = identity, s = 0) verifies for every text,
/// so a checkpoint of any tree "signed" by it needs no private key, nor
/// does a witness's cosignature under such a witness key. verify-proof
/// trusted the made-up tree ("valid ... trusted by a checkpoint signed by the
/// log key"); now the key itself is refused (exit 2, usage, saying why),
/// wherever a key is read: `--log-key`, `--witness-key`, `--record-key`
/// (under which anyone could sign every record), a configuration.
#[test]
fn r_log_4_a_small_order_key_vouches_for_nothing() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let name = "weak.test/log";
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let vkey = |algorithm: u8| {
        let mut encoded = vec![algorithm];
        encoded.extend_from_slice(&identity);
        let id = witness::key_id(name, algorithm, &identity);
        format!("{name}+{id:08x}+{}", base64::engine::general_purpose::STANDARD.encode(encoded))
    };
    let leaf = seal_leaf(name, "run-a");
    let mut log = tlog::MemoryHashStore::new();
    log.append(tlog::LeafHash::of(&leaf));
    let tree = log.tree();
    let text = witness::Checkpoint::new(&witness::Origin::new(name).unwrap(), tree).to_text();
    let mut signature = witness::key_id(name, witness::ALG_ED25519, &identity).to_be_bytes().to_vec();
    signature.extend_from_slice(&identity);
    signature.extend_from_slice(&[0; 32]);
    let note = format!("{text}\n\u{2014} {name} {}\n", base64::engine::general_purpose::STANDARD.encode(signature));
    std::fs::write(dir.path().join("forged.note"), note).unwrap();
    let proof = proof_json("run-a", &leaf, 0, tree, &log.prove_inclusion(0, 1).unwrap());
    std::fs::write(dir.path().join("proof.json"), proof).unwrap();
    let log_key = vkey(witness::ALG_ED25519);
    let args = ["verify-proof", "proof.json", "--checkpoint", "forged.note", "--log-key", log_key.as_str(), "--json"];
    let refused = json_exit(dir.path(), &args, 2);
    assert_eq!(refused["class"], "usage", "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("small order"), "{refused}");
    let witness_key = vkey(witness::ALG_COSIGNATURE_V1);
    let said = fails(dir.path(), &["verify-export", "proof.json", "--log-key", &witness_key], 2);
    assert!(said.contains("small order"), "{said}");
    let said =
        fails(dir.path(), &["verify-export", "proof.json", "--log-key", &log_key, "--witness-key", &witness_key], 2);
    assert!(said.contains("small order"), "{said}");
    let demo = demo();
    ok(&demo.plane, &["export", &first_run(&demo.plane, "succeeded"), "-o", "run.export"]);
    let record_key = format!("weak={}", base64::engine::general_purpose::STANDARD.encode(identity));
    let args = ["verify-export", "run.export", "--log-key", &demo.vkey, "--record-key", &record_key];
    let said = fails(&demo.plane, &[&args[..], &["--require-signature"]].concat(), 2);
    assert!(said.contains("small order"), "{said}");
}

/// R-UX-3 (review 83): the escaping of `show` (and of every printer) left
/// the characters that show nothing or reorder by a mark: a zero-width
/// space, a right-to-left mark, a line separator, a tag. An effect key
/// `charge-card` and another `charge-card` plus a zero-width space are two
/// effects (two charges) that the timeline showed as the same one, twice.
/// Each is now shown as its escape, in text and in `--json` (there as a
/// `\u` escape, a surrogate pair past U+FFFF, the same JSON value).
#[test]
fn r_ux_3_show_shows_an_invisible_or_reordering_character_as_its_escape() {
    use journal_core::{Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, RuntimeBuilder, Store};
    let dir = tempfile::tempdir().unwrap();
    let origin = "cli.test/plane/default";
    let (key, step, effect) = ("key\u{feff}", "deploy\u{200f}-1", "charge-card\u{200b}");
    let (output, reason) = ("paid\u{2028}valid", "done\u{e0041}\u{ad}");
    let run = {
        let store = std::sync::Arc::new(store_redb::RedbStore::create(&dir.path().join("plane.redb")).unwrap());
        let runtime = RuntimeBuilder::new(std::sync::Arc::clone(&store) as std::sync::Arc<dyn Store>)
            .tenant(tenant(), journal_core::Origin::new(origin).unwrap(), None)
            .build()
            .unwrap();
        let request = AdmitRequest { idempotency_key: key.into(), plan: vec![step.into()], budget: Budget::default() };
        let Admission::New(mut run) = runtime.admit(&tenant(), request).unwrap() else { panic!("admitted twice") };
        run.start_step(step).unwrap();
        run.effect(effect, step, || EffectOutput {
            result: EffectResult::Ok { output: output.into() },
            charged: Counters::default(),
        })
        .unwrap();
        run.finish_step(step).unwrap();
        let id = run.run().clone();
        (*run).succeed(reason).unwrap();
        id.to_string()
    };
    let args = ["show", &run, "--store", "plane.redb", "--origin", origin];
    let out = ok(dir.path(), &args);
    assert!(!out.chars().any(|c| c != '\n' && witness::text::disguises(c)), "{out:?}");
    for escaped in ["key\\u{feff}", "deploy\\u{200f}-1", "charge-card\\u{200b}", "paid\\u{2028}valid"] {
        assert!(out.contains(escaped), "{escaped} is shown, escaped: {out}");
    }
    let json = ok(dir.path(), &[&args[..], &["--json"]].concat());
    assert!(!json.chars().any(|c| c != '\n' && witness::text::disguises(c)), "{json:?}");
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let keys: Vec<&str> =
        value["records"].as_array().unwrap().iter().filter_map(|r| r["effect_key"].as_str()).collect();
    assert!(keys.contains(&effect), "the same value: {json}");
}

/// R-UX-3 (review 83): an export handed over is a file and its name, and
/// `diff` printed the name in its `A = ...` header as it came: a name
/// holding escape sequences (Linux takes any byte but `/` and NUL) could
/// clear the screen or, with a right-to-left override, show another name.
/// The header is escaped as the table is.
#[test]
fn r_ux_3_diff_prints_a_hostile_export_file_name_escaped() {
    let demo = demo();
    let dir = demo.plane.as_path();
    let run = first_run(dir, "succeeded");
    let name = "a\u{1b}[2J\u{1b}[1A\u{202e}tropxe.txt";
    ok(dir, &["export", &run, "-o", name]);
    let out = agentplane(dir, &["diff", name, &run]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(!stdout.chars().any(|c| c != '\n' && witness::text::disguises(c)), "{stdout:?}");
    assert!(stdout.contains("a\\u{1b}[2J\\u{1b}[1A\\u{202e}tropxe.txt"), "the name shown escaped: {stdout}");
}

/// R-AUD-10: `verify-export --quorum 0` is a usage error (exit 2) naming
/// the flag, never a check that counts no witness and accepts the export
/// (mutation review 87: the refusal removed went unnoticed).
#[test]
fn r_aud_10_verify_export_refuses_a_quorum_of_zero() {
    let demo = exported_demo();
    let dir = demo.plane.as_path();
    let stranger = witness::SignerKey::from_seed("export.test/w", witness::ALG_COSIGNATURE_V1, [7; 32]).unwrap();
    let said = fails(
        dir,
        &[
            "verify-export",
            "run.export",
            "--log-key",
            &demo.vkey,
            "--witness-key",
            &stranger.verifier_key().to_string(),
            "--quorum",
            "0",
        ],
        2,
    );
    assert!(said.contains("at least 1"), "{said}");
}

/// R-UX-3: `export` to a file that exists, without `--force`, is refused
/// before anything is signed: the plane's high-water mark (what it last
/// signed) is as it was, and the file too (mutation review 87: with the
/// early refusal removed, the export signed a new checkpoint, then the
/// write refused).
#[test]
fn r_ux_3_export_refuses_an_existing_file_before_signing() {
    let demo = demo();
    let dir = demo.plane.as_path();
    let sealed = first_run(dir, "succeeded");
    // A run the last checkpoint does not hold: an export would sign anew.
    ok(dir, &["fork", &sealed, "--at", "2"]);
    std::fs::write(dir.join("kept.export"), "mine").unwrap();
    let marks = || {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "highwater"))
            .map(|path| (path.clone(), std::fs::read(&path).unwrap_or_default()))
            .collect();
        files.sort();
        files
    };
    let before = marks();
    assert!(!before.is_empty(), "the plane keeps a high-water mark beside its key file");
    let said = fails(dir, &["export", &sealed, "-o", "kept.export"], 2);
    assert!(said.contains("--force"), "{said}");
    assert_eq!(marks(), before, "nothing was signed");
    assert_eq!(std::fs::read_to_string(dir.join("kept.export")).unwrap(), "mine");
}

/// R-AUD-10: one witness's public key given twice under two names is a
/// usage error (exit 2), never two witnesses toward `--quorum 2`
/// (mutation review 87: with the check removed, the refusal was not
/// seen by any test).
#[test]
fn r_aud_10_verify_export_refuses_one_witness_key_twice() {
    let demo = exported_demo();
    let dir = demo.plane.as_path();
    let one = witness::SignerKey::from_seed("export.test/a", witness::ALG_COSIGNATURE_V1, [7; 32]).unwrap();
    let same = witness::SignerKey::from_seed("export.test/b", witness::ALG_COSIGNATURE_V1, [7; 32]).unwrap();
    let (one, same) = (one.verifier_key().to_string(), same.verifier_key().to_string());
    let args = ["verify-export", "run.export", "--log-key", &demo.vkey, "--witness-key", &one, "--witness-key", &same];
    let said = fails(dir, &args, 2);
    assert!(said.contains("--witness-key"), "{said}");
}

/// R-EXP-1: `verify-export --require-signature` with a record key trusted
/// under another key id refuses the export (exit 1): every record is signed
/// by a key id not trusted here (mutation review 87: with the option not
/// passed to the chain check, the export was "valid", exit 0).
#[test]
fn r_exp_1_verify_export_require_signature_refuses_records_of_an_untrusted_key_id() {
    let demo = exported_demo();
    let dir = demo.plane.as_path();
    let spec = ok(dir, &["keys", "--print", "record-key"]).trim().to_owned();
    let (_, public) = spec.split_once('=').unwrap();
    let other = format!("spiffe://other.test/runtime={public}");
    let args = ["verify-export", "run.export", "--log-key", &demo.vkey, "--record-key", &other];
    ok(dir, &args);
    let said = fails(dir, &[&args[..], &["--require-signature"]].concat(), 1);
    assert!(said.contains("not trusted here"), "{said}");
}

/// R-AUD-10: `--witness-key` without `--quorum` asks one of them: an export
/// no trusted witness cosigned is refused (exit 1), never "valid" with its
/// witnesses unchecked (mutation review 87: with no default quorum, the
/// witness key was read and then ignored, exit 0).
#[test]
fn r_aud_10_verify_export_witness_key_alone_asks_one_cosignature() {
    let demo = exported_demo();
    let dir = demo.plane.as_path();
    let stranger = witness::SignerKey::from_seed("export.test/w", witness::ALG_COSIGNATURE_V1, [7; 32]).unwrap();
    let stranger = stranger.verifier_key().to_string();
    let args = ["verify-export", "run.export", "--log-key", &demo.vkey, "--witness-key", &stranger, "--json"];
    let refused = json_exit(dir, &args, 1);
    assert_eq!(refused["valid"], false, "{refused}");
}

/// R-LOG-4: a printed inclusion proof whose `run` is changed to another
/// run's id, its seal leaf kept, is refused (exit 1): the leaf does not seal
/// the run the proof names (mutation review 87: with that check removed,
/// `verify-proof` said "the leaf seals run" of the other run, exit 0).
#[test]
fn r_log_4_verify_proof_refuses_a_proof_renamed_to_another_run() {
    let demo = demo();
    let dir = demo.plane.as_path();
    let mut runs = ok(dir, &["runs", "--outcome", "succeeded", "--ids"]).lines().map(str::to_owned).collect::<Vec<_>>();
    runs.extend(ok(dir, &["runs", "--outcome", "failed", "--ids"]).lines().map(str::to_owned));
    std::fs::write(dir.join("head.note"), ok(dir, &["checkpoint"])).unwrap();
    let mut proof = json(dir, &["prove", &runs[0], "--json"]);
    proof["run"] = serde_json::Value::from(runs[1].clone());
    std::fs::write(dir.join("renamed.json"), proof.to_string()).unwrap();
    let said = fails(dir, &["verify-proof", "renamed.json", "--checkpoint", "head.note", "--log-key", &demo.vkey], 1);
    assert!(said.contains("does not seal run"), "{said}");
}

/// R-LOG-4: a printed proof whose leaf bytes are another run's seal leaf,
/// its leaf hash and path kept, is refused (exit 1): the leaf does not hash
/// to the leaf hash proven (mutation review 87: with that check removed,
/// `verify-proof` said "the leaf seals run" of the other run, exit 0).
#[test]
fn r_log_4_verify_proof_refuses_leaf_bytes_of_another_leaf() {
    let demo = demo();
    let dir = demo.plane.as_path();
    let sealed = ok(dir, &["runs", "--outcome", "succeeded", "--ids"]).lines().map(str::to_owned).collect::<Vec<_>>();
    std::fs::write(dir.join("head.note"), ok(dir, &["checkpoint"])).unwrap();
    let other = json(dir, &["prove", &sealed[1], "--json"]);
    let mut proof = json(dir, &["prove", &sealed[0], "--json"]);
    proof["leaf"] = other["leaf"].clone();
    proof["run"] = other["run"].clone();
    std::fs::write(dir.join("swapped.json"), proof.to_string()).unwrap();
    let said = fails(dir, &["verify-proof", "swapped.json", "--checkpoint", "head.note", "--log-key", &demo.vkey], 1);
    assert!(said.contains("does not hash to its leaf_hash"), "{said}");
}

/// R-LOG-4: an open run's head proof held to a checkpoint of another origin
/// over the same tree (signed by that origin's key) is refused (exit 1):
/// the heads leaf names the log it is of (mutation review 87: with that
/// check removed, the head was "valid" in the other log, exit 0).
#[test]
fn r_log_4_verify_proof_refuses_a_heads_leaf_of_another_origin() {
    let demo = demo();
    let dir = demo.plane.as_path();
    let sealed = first_run(dir, "succeeded");
    let fork = ok(dir, &["fork", &sealed, "--at", "2"]).trim().to_owned();
    ok(dir, &["checkpoint"]);
    let proof = json(dir, &["prove", &fork, "--json"]);
    assert_eq!(proof["kind"], "head", "{proof}");
    std::fs::write(dir.join("head.json"), proof.to_string()).unwrap();
    let tree = tlog::Tree::new(
        proof["size"].as_u64().unwrap(),
        tlog::RootHash::from_hex(proof["root"].as_str().unwrap()).unwrap(),
    );
    let signer = witness::SignerKey::generate("bank.test/log", witness::ALG_ED25519).unwrap();
    let key = witness::LogKey::new(signer.clone()).unwrap();
    let origin = witness::Origin::new("bank.test/log").unwrap();
    let note = key.sign(&witness::Checkpoint::new(&origin, tree)).unwrap().note().to_owned();
    std::fs::write(dir.join("bank.note"), note).unwrap();
    let vkey = signer.verifier_key().to_string();
    let said = fails(dir, &["verify-proof", "head.json", "--checkpoint", "bank.note", "--log-key", &vkey], 1);
    assert!(said.contains("bank.test/log"), "{said}");
}

/// R-UX-3: `export -o` naming the plane's own store or key file, even with
/// `--force`, is refused (exit 2) and both are left whole (mutation review
/// 87: with the refusal removed, `--force` replaced the store with the
/// export, every run lost, and no test saw it).
#[test]
fn r_ux_3_export_never_replaces_the_planes_own_files() {
    let demo = demo();
    let dir = demo.plane.as_path();
    let sealed = first_run(dir, "succeeded");
    let runs = ok(dir, &["runs", "--ids"]);
    let key_file = std::fs::read(dir.join("agentplane.key")).unwrap();
    for (file, what) in [("agentplane.redb", "store"), ("agentplane.key", "key file")] {
        let said = fails(dir, &["export", &sealed, "-o", file, "--force"], 2);
        assert!(said.contains(&format!("the plane's {what}")), "{said}");
    }
    assert_eq!(ok(dir, &["runs", "--ids"]), runs, "the store is whole");
    assert_eq!(std::fs::read(dir.join("agentplane.key")).unwrap(), key_file, "the key file is whole");
}
