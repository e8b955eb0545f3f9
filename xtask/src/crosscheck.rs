//! Both directions against Go, with fresh keys and the current time: Go's
//! `sumdb/note` verifies notes our crate signs, transparency-dev/formats
//! verifies our cosignatures (Ed25519 and ML-DSA-44), and our crate verifies
//! cosignatures formats makes (Ed25519, and ML-DSA-44 signed by formats'
//! hedged signer on filippo.io/mldsa).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};
use witness::{ALG_COSIGNATURE_V1, ALG_ED25519, ALG_ML_DSA_44, Cosigner, SignerKey, TrustedWitness};

const TEXTS: &[&str] = &[
    "crosscheck.test/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
    "crosscheck.test/log\n123456789\nXcnaead2WamtVZy3Ad7ZqaudgjqtL0lgz+Nw7/RgQyg=\n",
    "crosscheck.test/log\n42\nXcnaead2WamtVZy3Ad7ZqaudgjqtL0lgz+Nw7/RgQyg=\nextension: line\n",
    "free text\n\nwith a blank line and unicode \u{e9}\u{4e2d}\n",
];

fn now() -> Result<u64> {
    Ok(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs())
}

pub fn run(oracle: &Path) -> Result<()> {
    let log_a = SignerKey::generate("crosscheck.test/log", ALG_ED25519)?;
    let log_b = SignerKey::generate("crosscheck.test/other-signer", ALG_ED25519)?;
    let cosigner = Cosigner::new(SignerKey::generate("crosscheck.test/witness", ALG_COSIGNATURE_V1)?)?;
    let ml_cosigner = Cosigner::new(SignerKey::generate("crosscheck.test/mldsa-witness", ALG_ML_DSA_44)?)?;
    let timestamp = now()?;

    let mut notes = Vec::new();
    let mut expect_note_error = Vec::new();
    for (i, text) in TEXTS.iter().enumerate() {
        let signers: Vec<&SignerKey> = if i % 2 == 0 { vec![&log_a] } else { vec![&log_a, &log_b] };
        let note = witness::sign(text, &signers)?;
        let vkeys: Vec<String> = signers.iter().map(|s| s.verifier_key().to_string()).collect();
        notes.push(json!({ "vkeys": vkeys, "note": note }));
        expect_note_error.push(false);
        // The same note with one byte of the text changed must be refused by Go.
        let tampered = note.replacen("crosscheck", "crossch3ck", 1).replacen("free", "fre3", 1);
        notes.push(json!({ "vkeys": vkeys, "note": tampered }));
        expect_note_error.push(true);
    }
    let mut cosigned = Vec::new();
    for text in TEXTS.iter().take(3) {
        for cosigner in [&cosigner, &ml_cosigner] {
            let line = cosigner.cosign(text, timestamp)?.to_line();
            cosigned.push(json!({ "vkey": cosigner.verifier_key().to_string(), "note": format!("{text}\n{line}") }));
        }
    }
    // One ML-DSA-44 cosignature with a bit changed: formats must refuse it.
    let tampered_line = {
        let mut line = ml_cosigner.cosign(TEXTS[1], timestamp)?;
        if let Some(byte) = line.signature.last_mut() {
            *byte ^= 1;
        }
        line.to_line()
    };
    let tampered_index = cosigned.len();
    cosigned.push(
        json!({ "vkey": ml_cosigner.verifier_key().to_string(), "note": format!("{}\n{tampered_line}", TEXTS[1]) }),
    );
    let input = json!({ "notes": notes, "cosigned": cosigned, "to_cosign": TEXTS.iter().take(3).collect::<Vec<_>>() });

    let mut child = Command::new(oracle)
        .arg("crosscheck")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting oracle crosscheck")?;
    child.stdin.take().context("oracle stdin")?.write_all(input.to_string().as_bytes())?;
    let out = child.wait_with_output()?;
    ensure!(out.status.success(), "oracle crosscheck failed");
    let answer: Value = serde_json::from_slice(&out.stdout).context("oracle crosscheck output")?;

    let note_errors = answer["note_errors"].as_array().context("note_errors")?;
    ensure!(
        note_errors.len() == expect_note_error.len(),
        "oracle judged {} notes of {}",
        note_errors.len(),
        expect_note_error.len()
    );
    for (i, (error, expected)) in note_errors.iter().zip(&expect_note_error).enumerate() {
        let refused = !error.as_str().unwrap_or_default().is_empty();
        if refused != *expected {
            bail!("Go's note.Open on our note {i}: expected refused={expected}, got {error}");
        }
    }
    let cosigned_errors = answer["cosigned_errors"].as_array().context("cosigned_errors")?;
    ensure!(
        cosigned_errors.len() == cosigned.len(),
        "formats judged {} cosigned notes of {}",
        cosigned_errors.len(),
        cosigned.len()
    );
    for (i, error) in cosigned_errors.iter().enumerate() {
        if i == tampered_index {
            ensure!(error.as_str() != Some(""), "formats accepted an ML-DSA-44 cosignature with a bit changed");
        } else {
            ensure!(error.as_str() == Some(""), "formats refused our cosignature {i}: {error}");
        }
    }
    let go_key = TrustedWitness::parse(answer["go_cosigner_vkey"].as_str().context("go_cosigner_vkey")?)?;
    let go_cosigned = answer["go_cosigned"].as_array().context("go_cosigned")?;
    ensure!(go_cosigned.len() == 3, "formats made {} cosignatures", go_cosigned.len());
    for (text, note) in TEXTS.iter().zip(go_cosigned) {
        let note = note.as_str().unwrap_or_default();
        let lines =
            note.strip_prefix(text).and_then(|rest| rest.strip_prefix('\n')).context("Go's cosigned note text")?;
        let signatures = witness::parse_signature_lines(lines)?;
        let report = witness::verify_cosignatures(text, &signatures, std::slice::from_ref(&go_key))?;
        ensure!(report.valid.len() == 1, "formats' cosignature did not verify here: {report:?}");
    }
    let go_ml_key =
        TrustedWitness::parse(answer["go_mldsa_cosigner_vkey"].as_str().context("go_mldsa_cosigner_vkey")?)?;
    ensure!(go_ml_key.verifier_key().algorithm() == ALG_ML_DSA_44, "formats' ML-DSA key is not of type 0x06");
    let go_ml_cosigned = answer["go_mldsa_cosigned"].as_array().context("go_mldsa_cosigned")?;
    ensure!(go_ml_cosigned.len() == 3, "formats made {} ML-DSA-44 cosignatures", go_ml_cosigned.len());
    for (text, note) in TEXTS.iter().zip(go_ml_cosigned) {
        let note = note.as_str().unwrap_or_default();
        let lines =
            note.strip_prefix(text).and_then(|rest| rest.strip_prefix('\n')).context("Go's cosigned note text")?;
        let signatures = witness::parse_signature_lines(lines)?;
        let report = witness::verify_cosignatures(text, &signatures, std::slice::from_ref(&go_ml_key))?;
        ensure!(
            report.valid.len() == 1 && report.valid.iter().all(|c| c.algorithm == ALG_ML_DSA_44),
            "formats' ML-DSA-44 cosignature did not verify here: {report:?}"
        );
    }
    eprintln!(
        "xtask: Go verified {} notes and {} cosignatures of ours ({} ML-DSA-44), refusing the {} tampered ones; \
         we verified {} of formats' Ed25519 and {} of its ML-DSA-44 cosignatures",
        expect_note_error.iter().filter(|e| !**e).count(),
        cosigned.len() - 1,
        (cosigned.len() - 1) / 2,
        expect_note_error.iter().filter(|e| **e).count() + 1,
        go_cosigned.len(),
        go_ml_cosigned.len()
    );
    Ok(())
}
