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
