//! The frozen corpus (R-GOLD-1..3): tests compare and verify, never write.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::path::PathBuf;

use journal_core::export::{ExportCovers, ExportError};
use journal_core::golden::{self, GoldenLine};
use journal_core::{ChainCheck, ChainHash, Ed25519Verifier, Signer, Upcasters, VerifyOptions};

fn workspace_file(path: &str) -> String {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
    std::fs::read_to_string(&full)
        .unwrap_or_else(|err| panic!("{}: {err}; run `cargo xtask bless` to create it", full.display()))
}

#[test]
fn r_gold_1_the_bytes_this_build_writes_are_the_frozen_ones() {
    let committed = workspace_file(golden::RECORDS_PATH);
    let fresh = golden::records_corpus().unwrap();
    if committed != fresh {
        let first = committed.lines().zip(fresh.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "the bytes this build writes differ from {} at line {}:\n  frozen: {}\n  now:    {}\n\
             A changed field order, a skipped field or a new format rehashes every record ever written.\n\
             If the change is deliberate, run `cargo xtask bless` and commit the corpus with the reason.",
            golden::RECORDS_PATH,
            first + 1,
            committed.lines().nth(first).unwrap_or(""),
            fresh.lines().nth(first).unwrap_or("")
        );
    }
    // The digests chain over the stored bytes.
    let mut prev = ChainHash::GENESIS;
    for line in committed.lines() {
        let line: GoldenLine = serde_json::from_str(line).unwrap();
        prev = ChainHash::link(&prev, line.record.as_bytes());
        assert_eq!(prev.to_string(), line.chain_hash);
    }
}

fn export_check(
    verifier: &Ed25519Verifier,
    upcasters: &Upcasters,
    text: &str,
) -> Result<journal_core::export::VerifiedExport, journal_core::export::ExportError> {
    let log_key = golden::log_key().unwrap().verifier_key();
    journal_core::export::verify_export(
        text,
        &[log_key],
        ChainCheck { upcasters, verifier: Some(verifier), options: VerifyOptions { require_signature: true } },
    )
}

fn golden_verifier() -> Ed25519Verifier {
    let signer = journal_core::Ed25519Signer::from_seed(golden::RECORD_KEY_ID, golden::RECORD_KEY_SEED);
    let mut verifier = Ed25519Verifier::new();
    verifier.trust(signer.key_id(), signer.public_key()).unwrap();
    verifier
}

/// Every export ever blessed, one file per format, by name.
fn frozen_exports() -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(golden::EXPORTS_DIR);
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("{}: {err}; run `cargo xtask bless` to create it", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn r_gold_2_every_export_ever_blessed_still_verifies_offline() {
    let verifier = golden_verifier();
    let upcasters = Upcasters::builtin();
    let exports = frozen_exports();
    let current = golden::export_file_name();
    assert!(
        exports.iter().any(|(name, _)| *name == current),
        "no frozen export for this build's format ({current} in {}): run `cargo xtask bless` and commit it",
        golden::EXPORTS_DIR
    );
    let open = golden::open_export_file_name();
    assert!(
        exports.iter().any(|(name, _)| *name == open),
        "no frozen export of an open run for this build's format ({open} in {}): run `cargo xtask bless` and commit it",
        golden::EXPORTS_DIR
    );
    for (name, text) in &exports {
        let verified = export_check(&verifier, &upcasters, text).unwrap_or_else(|err| {
            panic!(
                "{}/{name}, an export an earlier build blessed, no longer verifies: {err}.\n\
                 Every build must verify every export ever blessed (R-GOLD-2): fix this build, never the file.",
                golden::EXPORTS_DIR
            )
        });
        assert_eq!(verified.run.as_str(), "golden-run-0001", "{name}");
        assert_eq!(verified.index, 2, "{name}");
        // An open run's export says it covers a head (a prefix), never a seal.
        let expected =
            if name.ends_with("-open.jsonl") { ExportCovers::Head { seq: 7, entries: 2 } } else { ExportCovers::Seal };
        assert_eq!(verified.covers, expected, "{name}");
    }
}

#[test]
fn r_gold_2_this_build_writes_its_format_byte_for_byte_as_frozen() {
    let current = golden::export_file_name();
    let frozen = frozen_exports().into_iter().find(|(name, _)| *name == current).map(|(_, text)| text);
    let fresh = golden::export_corpus().unwrap();
    assert!(
        frozen.as_deref() == Some(fresh.as_str()),
        "the export this build writes differs from {}/{current}: a frozen format cannot change. \
         Name a new format (journal_core::export::EXPORT_FORMAT) and run `cargo xtask bless`, which adds its file.",
        golden::EXPORTS_DIR
    );
    let open = golden::open_export_file_name();
    let frozen = frozen_exports().into_iter().find(|(name, _)| *name == open).map(|(_, text)| text);
    assert!(
        frozen.as_deref() == Some(golden::open_export_corpus().unwrap().as_str()),
        "the open-run export this build writes differs from {}/{open}: a frozen format cannot change",
        golden::EXPORTS_DIR
    );
}

/// The export and the witness quorum its cosigned checkpoint must meet.
fn export_and_cosignatures(
    verifier: &Ed25519Verifier,
    upcasters: &Upcasters,
    text: &str,
) -> Result<usize, journal_core::export::ExportError> {
    let trusted = witness::TrustedWitness::new(golden::witness_cosigner().unwrap().verifier_key()).unwrap();
    export_check(verifier, upcasters, text)?.cosignatures(&[trusted], 1)
}

#[test]
fn r_exp_1_the_export_carries_a_cosigned_checkpoint_checked_offline() {
    let verifier = golden_verifier();
    let upcasters = Upcasters::builtin();
    let text = golden::export_corpus().unwrap();
    assert_eq!(export_and_cosignatures(&verifier, &upcasters, &text).unwrap(), 1);
    let verified = export_check(&verifier, &upcasters, &text).unwrap();
    // A witness key that did not cosign it: the quorum is not met.
    let other = witness::SignerKey::from_seed("golden.test/other", witness::ALG_COSIGNATURE_V1, [1; 32]).unwrap();
    let other = witness::TrustedWitness::new(other.verifier_key()).unwrap();
    let refused = verified.cosignatures(&[other], 1);
    assert!(matches!(refused, Err(journal_core::export::ExportError::Cosignatures(_))), "{refused:?}");
    assert!(refused.unwrap_err().is_tamper());
}

#[test]
fn r_gold_2_any_altered_or_dropped_line_of_the_export_is_caught() {
    let verifier = golden_verifier();
    let upcasters = Upcasters::builtin();
    for text in [golden::export_corpus().unwrap(), golden::open_export_corpus().unwrap()] {
        every_altered_or_dropped_line_is_caught(&verifier, &upcasters, &text);
    }
}

fn every_altered_or_dropped_line_is_caught(verifier: &Ed25519Verifier, upcasters: &Upcasters, text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        // Change one character inside the line (a digit or a letter), keeping it JSON where possible.
        let position = line
            .char_indices()
            .filter(|(_, c)| c.is_ascii_alphanumeric())
            .map(|(p, _)| p)
            .nth(line.len() / 3)
            .unwrap_or(2);
        let mut altered: Vec<char> = line.chars().collect();
        let byte_index = line[..position].chars().count();
        altered[byte_index] = if altered[byte_index] == 'a' { 'b' } else { 'a' };
        let altered: String = altered.into_iter().collect();
        let mut copy = lines.clone();
        copy[i] = &altered;
        let result = export_and_cosignatures(verifier, upcasters, &(copy.join("\n") + "\n"));
        assert!(result.is_err(), "line {} altered and still verified: {altered}", i + 1);
        // Dropping the line is caught too (the cosigned one by the quorum asked for).
        let mut dropped = lines.clone();
        dropped.remove(i);
        let result = export_and_cosignatures(verifier, upcasters, &(dropped.join("\n") + "\n"));
        assert!(result.is_err(), "line {} removed", i + 1);
    }
}

/// An open run's export attests a prefix: relabelled as a format from before
/// open runs exported (v3), its head line is refused by name.
#[test]
fn r_exp_1_an_open_run_export_needs_format_v4() {
    let text = golden::open_export_corpus().unwrap().replace("agentplane-export/v4", "agentplane-export/v3");
    let err = export_check(&golden_verifier(), &Upcasters::builtin(), &text).unwrap_err();
    assert!(matches!(&err, ExportError::Malformed { line: 9, detail } if detail.contains("head line")), "{err}");
}

/// The export of the format before records carried `at` (a hard cut before
/// the format freeze) is refused by name, never read as damage.
#[test]
fn r_ver_4_an_export_from_before_the_hard_cut_is_refused_by_its_format() {
    let text = workspace_file("tests/golden/retired/agentplane-export-v1.jsonl");
    let err = export_check(&golden_verifier(), &Upcasters::builtin(), &text).unwrap_err();
    assert!(!err.is_tamper(), "{err}");
    let message = err.to_string();
    assert!(message.contains("agentplane-export/v1") && message.contains("not read by this build"), "{message}");
}

#[test]
fn r_gold_3_tests_never_write_the_corpus() {
    // Reading twice around the other tests' work: the files are inputs only.
    let before = workspace_file(golden::RECORDS_PATH);
    let _ = golden::records_corpus().unwrap();
    assert_eq!(before, workspace_file(golden::RECORDS_PATH));
}

/// The golden export with each line passed through `edit` (by its `type`);
/// `None` drops the line.
fn edited(text: &str, edit: impl Fn(&str, serde_json::Value) -> Option<serde_json::Value>) -> String {
    text.lines()
        .filter_map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let kind = value["type"].as_str().unwrap().to_owned();
            edit(&kind, value).map(|value| value.to_string() + "\n")
        })
        .collect()
}

/// R-EXP-1: the inclusion line's tree is the checkpoint's. An inclusion in a
/// tree of the file's own making (one leaf, the root its hash) proves
/// nothing a trusted key signed, beside a genuine checkpoint.
#[test]
fn r_exp_1_an_inclusion_in_a_tree_the_checkpoint_does_not_sign_is_refused() {
    let text = golden::export_corpus().unwrap();
    let seal = text
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|line| line["type"] == "seal")
        .unwrap()["leaf"]
        .as_str()
        .unwrap()
        .to_owned();
    let root = tlog::LeafHash::of(seal.as_bytes()).to_string();
    let forged = edited(&text, |kind, mut line| match kind {
        "inclusion" => {
            line["index"] = 0.into();
            line["size"] = 1.into();
            line["root"] = root.clone().into();
            line["proof"] = serde_json::json!([]);
            Some(line)
        }
        "cosigned" => None,
        _ => Some(line),
    });
    let err = export_check(&golden_verifier(), &Upcasters::builtin(), &forged).unwrap_err();
    assert!(matches!(&err, ExportError::Mismatch(detail) if detail.contains("another tree")), "{err}");
}

/// R-EXP-1: the format's order is held: the inclusion line before the seal
/// line, or a cosigned line in a v2 file (cosigned lines came with v3), is
/// refused by its line, never read.
#[test]
fn r_exp_1_lines_out_of_the_formats_order_are_refused() {
    let text = golden::export_corpus().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let seal = lines.iter().position(|line| line.contains(r#""type":"seal""#)).unwrap();
    let mut swapped = lines.clone();
    swapped.swap(seal, seal + 1);
    let err = export_check(&golden_verifier(), &Upcasters::builtin(), &(swapped.join("\n") + "\n")).unwrap_err();
    assert!(
        matches!(&err, ExportError::Malformed { line, detail } if *line == seal + 1 && detail.contains("out of the format's order")),
        "{err}"
    );
    let v2 = workspace_file(&format!("{}/agentplane-export-v2.jsonl", golden::EXPORTS_DIR));
    let cosigned = lines.iter().find(|line| line.contains(r#""type":"cosigned""#)).unwrap();
    let with_cosigned = format!("{v2}{cosigned}\n");
    let err = export_check(&golden_verifier(), &Upcasters::builtin(), &with_cosigned).unwrap_err();
    assert!(
        matches!(&err, ExportError::Malformed { line, detail } if *line == with_cosigned.lines().count() && detail.contains("out of the format's order")),
        "{err}"
    );
}

/// R-EXP-1: the cosigned checkpoint's inclusion proof is checked: a proof
/// that does not hold the run's leaf in the cosigned tree is refused, so
/// witnesses are never said to have cosigned a tree that lacks the run.
#[test]
fn r_exp_1_a_cosigned_checkpoint_whose_proof_fails_is_refused() {
    let text = golden::export_corpus().unwrap();
    let forged = edited(&text, |kind, mut line| {
        if kind == "cosigned" {
            let proof = line["proof"].as_array_mut().unwrap();
            if proof.is_empty() {
                proof.push(tlog::LeafHash::of(b"not in the tree").to_string().into());
            } else {
                proof[0] = tlog::LeafHash::of(b"not in the tree").to_string().into();
            }
        }
        Some(line)
    });
    let err = export_check(&golden_verifier(), &Upcasters::builtin(), &forged).unwrap_err();
    assert!(
        matches!(&err, ExportError::Mismatch(detail) if detail.contains("inclusion in the cosigned checkpoint")),
        "{err}"
    );
}

/// R-EXP-1: a v2/v3 hash in base64 of other than 32 bytes is malformed by
/// its line, never padded or cut to a hash.
#[test]
fn r_exp_1_a_base64_hash_of_another_length_is_malformed() {
    use base64::Engine as _;
    let v3 = workspace_file(&format!("{}/agentplane-export-v3.jsonl", golden::EXPORTS_DIR));
    let mut root = [0_u8; 32];
    let inclusion = v3.lines().position(|line| line.contains(r#""type":"inclusion""#)).unwrap();
    let line: serde_json::Value = serde_json::from_str(v3.lines().nth(inclusion).unwrap()).unwrap();
    let decoded = base64::engine::general_purpose::STANDARD.decode(line["root"].as_str().unwrap()).unwrap();
    root.copy_from_slice(&decoded);
    let short = base64::engine::general_purpose::STANDARD.encode(&root[..31]);
    let forged = edited(&v3, |kind, mut line| {
        if kind == "inclusion" {
            line["root"] = short.clone().into();
        }
        Some(line)
    });
    let err = export_check(&golden_verifier(), &Upcasters::builtin(), &forged).unwrap_err();
    assert!(matches!(&err, ExportError::Malformed { line, .. } if *line == inclusion + 1), "{err}");
}

/// R-EXP-1 (every input has a size bound): a line of exactly 64 MiB is read,
/// one byte more is refused, wherever the line starts; a read the system
/// interrupted is retried, not an error.
#[test]
fn r_exp_1_the_export_reader_takes_lines_up_to_its_bound_exactly() {
    use journal_core::export::{ExportReadError, MAX_EXPORT_LINE_BYTES, read_export_text};
    let mut at_bound = b"{}\n".to_vec();
    at_bound.resize(3 + MAX_EXPORT_LINE_BYTES, b'a');
    let read = read_export_text(&mut std::io::Cursor::new(&at_bound), "at-bound").unwrap();
    assert_eq!(read.len(), at_bound.len());
    at_bound.push(b'a');
    let err = read_export_text(&mut std::io::Cursor::new(&at_bound), "past").unwrap_err();
    assert!(matches!(err, ExportReadError::LineTooLong { .. }), "{err}");
    drop(at_bound);

    /// Interrupted once, then `{}` and a newline, then the end.
    struct Interrupting(u8);
    impl std::io::Read for Interrupting {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.0 += 1;
            match self.0 {
                1 => Err(std::io::ErrorKind::Interrupted.into()),
                2 => {
                    buf[..3].copy_from_slice(b"{}\n");
                    Ok(3)
                }
                _ => Ok(0),
            }
        }
    }
    assert_eq!(read_export_text(&mut Interrupting(0), "interrupted").unwrap(), "{}\n");
}

/// `text` with its covering line replaced by a seal line holding `leaf`, the
/// leaf alone in a tree whose checkpoint the golden log key signs for
/// `origin`, and no cosigned line: what a trusted key's holder could sign.
fn covered_alone(text: &str, leaf: &str, origin: &str) -> String {
    let root = tlog::RootHash::from_hex(&tlog::LeafHash::of(leaf.as_bytes()).to_string()).unwrap();
    let origin = journal_core::Origin::new(origin).unwrap();
    let signed =
        journal_core::log::sign_checkpoint(&origin, tlog::Tree::new(1, root), &golden::log_key().unwrap()).unwrap();
    edited(text, |kind, line| match kind {
        "seal" | "head" => Some(serde_json::json!({"type": "seal", "leaf": leaf})),
        "inclusion" => {
            Some(serde_json::json!({"type": "inclusion", "index": 0, "size": 1, "root": root.to_string(), "proof": []}))
        }
        "checkpoint" => Some(serde_json::json!({"type": "checkpoint", "note": signed.note()})),
        "cosigned" => None,
        _ => Some(line),
    })
}

/// R-EXP-1: what a trusted log key signed is held to the export too: a
/// checkpoint of another origin (one key may sign several tenants' logs)
/// never vouches for this origin's run, and a seal leaf over an open run's
/// head (a run whose last conclusion does not seal) is refused.
#[test]
fn r_exp_1_a_trusted_checkpoint_of_another_origin_or_a_seal_of_an_unsealed_run_is_refused() {
    let sealed = golden::export_corpus().unwrap();
    let line_of = |text: &str, kind: &str| {
        text.lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .rfind(|line| line["type"] == kind)
            .unwrap()
    };
    let header = line_of(&sealed, "header");
    let origin = header["origin"].as_str().unwrap();
    let leaf = line_of(&sealed, "seal")["leaf"].as_str().unwrap().to_owned();
    // The golden export re-signed alone for its own origin verifies: the forgeries below differ only as named.
    export_check(&golden_verifier(), &Upcasters::builtin(), &covered_alone(&sealed, &leaf, origin)).unwrap();
    let elsewhere = covered_alone(&sealed, &leaf, "other.test/log");
    let err = export_check(&golden_verifier(), &Upcasters::builtin(), &elsewhere).unwrap_err();
    assert!(matches!(&err, ExportError::Mismatch(detail) if detail.contains("checkpoint is for origin")), "{err}");

    let open = golden::open_export_corpus().unwrap();
    let last = line_of(&open, "record");
    let head = journal_core::chain::ExpectedHead {
        seq: last["seq"].as_u64().unwrap(),
        hash: ChainHash::from_hex(last["hash"].as_str().unwrap()).unwrap(),
    };
    let run = journal_core::RunId::new(header["run"].as_str().unwrap()).unwrap();
    let seal = journal_core::seal::SealLeaf::new(&journal_core::Origin::new(origin).unwrap(), &run, head);
    let seal = String::from_utf8(seal.to_bytes()).unwrap();
    let err =
        export_check(&golden_verifier(), &Upcasters::builtin(), &covered_alone(&open, &seal, origin)).unwrap_err();
    assert!(matches!(&err, ExportError::Mismatch(detail) if detail.contains("must seal it")), "{err}");
}

/// `text` with its covering line replaced by `covering` (whose leaf is
/// `leaf`), the leaf alone in a tree whose checkpoint the golden log key
/// signs for `origin`, and a cosigned line of that tree signed for
/// `cosigned_origin` when given.
fn covered_alone_by(
    text: &str,
    covering: &serde_json::Value,
    leaf: &str,
    origin: &str,
    cosigned_origin: Option<&str>,
) -> String {
    let root = tlog::RootHash::from_hex(&tlog::LeafHash::of(leaf.as_bytes()).to_string()).unwrap();
    let tree = tlog::Tree::new(1, root);
    let note = |origin: &str| {
        let origin = journal_core::Origin::new(origin).unwrap();
        journal_core::log::sign_checkpoint(&origin, tree, &golden::log_key().unwrap()).unwrap().note().to_owned()
    };
    let mut edited = edited(text, |kind, line| match kind {
        "seal" | "head" => Some(covering.clone()),
        "inclusion" => {
            Some(serde_json::json!({"type": "inclusion", "index": 0, "size": 1, "root": root.to_string(), "proof": []}))
        }
        "checkpoint" => Some(serde_json::json!({"type": "checkpoint", "note": note(origin)})),
        "cosigned" => None,
        _ => Some(line),
    });
    if let Some(cosigned) = cosigned_origin {
        let line = serde_json::json!({"type": "cosigned", "note": note(cosigned), "index": 0, "proof": []});
        edited.push_str(&format!("{line}\n"));
    }
    edited
}

/// R-EXP-1: a trusted log key (one key may sign several tenants' logs) that
/// signs this origin's tree holding a heads leaf of another origin, with the
/// run's head among its entries, never vouches for this origin's run; nor
/// does a cosigned checkpoint it signed for another origin, though of the
/// very tree the checkpoint proves the run in. Each is refused as a
/// mismatch naming the origin.
#[test]
fn r_exp_1_a_trusted_heads_leaf_or_cosigned_checkpoint_of_another_origin_is_refused() {
    let open = golden::open_export_corpus().unwrap();
    let lines: Vec<serde_json::Value> = open.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let origin = lines.iter().find(|line| line["type"] == "header").unwrap()["origin"].as_str().unwrap().to_owned();
    let head = lines.iter().find(|line| line["type"] == "head").unwrap().clone();
    let leaf = head["leaf"].as_str().unwrap();
    let heads = journal_core::heads::HeadsLeaf::parse(leaf.as_bytes()).unwrap();
    let check = |text: &str| export_check(&golden_verifier(), &Upcasters::builtin(), text);
    // Re-signed alone for its own origin, the open export verifies, with a
    // cosigned line of its own origin too: the forgeries below differ only as named.
    check(&covered_alone_by(&open, &head, leaf, &origin, None)).unwrap();
    let cosigned = check(&covered_alone_by(&open, &head, leaf, &origin, Some(&origin))).unwrap();
    assert!(cosigned.cosigned.is_some());

    let elsewhere =
        journal_core::heads::HeadsLeaf { origin: journal_core::Origin::new("other.test/log").unwrap(), ..heads };
    let elsewhere = String::from_utf8(elsewhere.to_bytes()).unwrap();
    let mut forged = head.clone();
    forged["leaf"] = elsewhere.clone().into();
    let err = check(&covered_alone_by(&open, &forged, &elsewhere, &origin, None)).unwrap_err();
    assert!(
        matches!(&err, ExportError::Mismatch(detail) if detail.contains("heads leaf is for origin \"other.test/log\"")),
        "{err}"
    );

    let err = check(&covered_alone_by(&open, &head, leaf, &origin, Some("other.test/log"))).unwrap_err();
    assert!(
        matches!(&err, ExportError::Mismatch(detail) if detail.contains("cosigned checkpoint is for another origin")),
        "{err}"
    );
}
