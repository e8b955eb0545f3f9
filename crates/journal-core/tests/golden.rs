//! The frozen corpus (R-GOLD-1..3): tests compare and verify, never write.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::path::PathBuf;

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

#[test]
fn r_gold_2_the_frozen_export_verifies_offline_and_any_altered_line_is_caught() {
    let text = workspace_file(golden::EXPORT_PATH);
    let signer = journal_core::Ed25519Signer::from_seed(golden::RECORD_KEY_ID, golden::RECORD_KEY_SEED);
    let mut verifier = Ed25519Verifier::new();
    verifier.trust(signer.key_id(), signer.public_key()).unwrap();
    let upcasters = Upcasters::builtin();
    let verified = export_check(&verifier, &upcasters, &text).unwrap();
    assert_eq!(verified.run.as_str(), "golden-run-0001");
    assert_eq!(verified.index, 2);

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
        let result = export_check(&verifier, &upcasters, &(copy.join("\n") + "\n"));
        assert!(result.is_err(), "line {} altered and still verified: {altered}", i + 1);
        // Dropping the line is caught too.
        let mut dropped = lines.clone();
        dropped.remove(i);
        assert!(export_check(&verifier, &upcasters, &(dropped.join("\n") + "\n")).is_err(), "line {} removed", i + 1);
    }
}

#[test]
fn r_gold_3_tests_never_write_the_corpus() {
    // Reading twice around the other tests' work: the files are inputs only.
    let before = workspace_file(golden::RECORDS_PATH);
    let _ = golden::records_corpus().unwrap();
    assert_eq!(before, workspace_file(golden::RECORDS_PATH));
}
