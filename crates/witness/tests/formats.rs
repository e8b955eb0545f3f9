//! Signed notes, checkpoints and cosignatures against the specs' published
//! examples and Go's reference code (R-NOTE-1, R-WIT-3).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::path::PathBuf;

use serde_json::Value;
use witness::{
    ALG_COSIGNATURE_V1, ALG_ED25519, Checkpoint, CheckpointError, CosignatureCheck, CosignatureError, Cosigner,
    KeyError, LogKey, NoteError, NoteSignature, NoteVerifier, SignedCheckpoint, SignerKey, TrustedWitness, VerifierKey,
    open, sign, verify_cosignatures,
};

fn read_json(path: PathBuf) -> Value {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("reading {}: {err}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The published vectors the tests use, kept in the repository as test data
/// (`tests/vectors/published/`, one file per source naming its repository,
/// commit and licence), merged into one object.
fn published() -> Value {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/published");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|entry| entry.unwrap().path()).collect();
    files.sort();
    let mut merged = serde_json::Map::new();
    for file in files {
        let Value::Object(entries) = read_json(file.clone()) else { panic!("{} is not an object", file.display()) };
        assert!(entries.contains_key("_source"), "{} names no source", file.display());
        merged.extend(entries.into_iter().filter(|(key, _)| key != "_source"));
    }
    Value::Object(merged)
}

fn go() -> Value {
    read_json(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/go.json"))
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("{key} missing in {v}"))
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

fn seed(text: &str) -> [u8; 32] {
    hex(text).try_into().unwrap()
}

#[test]
fn r_note_1_spec_example_note_verifies() {
    let v = published();
    let examples = v["signed_note_examples"].as_array().unwrap();
    let mut verified_examples = 0;
    for example in examples {
        let Some(vkey) = example["vkey"].as_str() else {
            // Published without a key: the note must at least parse as unverified.
            let note = s(example, "signed_note_utf8");
            assert!(matches!(open(note.as_bytes(), &[]), Err(NoteError::Unverified { .. })), "{note}");
            continue;
        };
        verified_examples += 1;
        let key = VerifierKey::parse(vkey).unwrap();
        assert_eq!(key.name(), s(example, "key_name"));
        assert_eq!(format!("{:08x}", key.key_id()), s(example, "key_id"));
        assert_eq!(key.public_key(), hex(s(example, "public_key")).as_slice());
        assert_eq!(key.to_string(), s(example, "vkey"), "vkey formats back byte for byte");
        let note = s(example, "signed_note_utf8");
        let verdict = open(note.as_bytes(), &[&key]);
        assert_eq!(verdict.is_ok(), example["verifies"].as_bool().unwrap_or(true), "{verdict:?}");
        if let Ok(verified) = verdict {
            assert_eq!(verified.text(), s(example, "note_text_utf8"));
            assert_eq!(verified.to_note(), note);
        }
    }
    assert!(verified_examples >= 1);
}

#[test]
fn r_note_1_go_signing_pin_and_negative_cases() {
    let v = published();
    let negative = &v["signed_note_negative"];
    for bad in negative["bad_vkeys"].as_array().unwrap() {
        assert!(VerifierKey::parse(bad.as_str().unwrap()).is_err(), "{bad} must be refused");
    }
    let peter = VerifierKey::parse("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW").unwrap();
    let signer =
        SignerKey::parse("PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz").unwrap();
    assert_eq!(signer.verifier_key(), peter);
    let text = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
    let signed = sign(text, &[&signer]).unwrap();
    assert!(signed.contains(
        "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
    ));
    for malformed in negative["malformed_notes_utf8"].as_array().unwrap() {
        let verdict = open(malformed.as_str().unwrap().as_bytes(), &[&peter]);
        assert!(matches!(verdict, Err(NoteError::Malformed(_))), "{malformed}: {verdict:?}");
    }
    let mut invalid_utf8 = vec![0xff];
    invalid_utf8.extend_from_slice(signed.as_bytes());
    assert!(matches!(open(&invalid_utf8, &[&peter]), Err(NoteError::Malformed(_))));
    let too_many = format!(
        "{text}\n{}",
        "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
            .repeat(101)
    );
    assert!(matches!(open(too_many.as_bytes(), &[&peter]), Err(NoteError::Malformed(_))));
    let forged = s(negative, "invalid_signature_from_known_key");
    assert_eq!(
        open(forged.as_bytes(), &[&peter]),
        Err(NoteError::InvalidSignature { name: "PeterNeumann".into(), key_id: 0xc74f20a3 })
    );
    // A note signed only by keys not trusted here is unverified, not accepted.
    let enoch = VerifierKey::parse("EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop").unwrap();
    assert_eq!(open(signed.as_bytes(), &[&enoch]), Err(NoteError::Unverified { signatures: 1 }));
}

/// signed-note: "unknown signatures MUST be ignored". A line from a key not
/// trusted here whose base64 Go's `base64.StdEncoding` reads but is not the
/// canonical spelling (non-zero trailing bits) is kept unverified, as Go's
/// `note.Open` does, instead of refusing the whole note.
#[test]
fn r_note_1_an_unknown_keys_non_canonical_line_is_ignored_as_go_does() {
    let peter = VerifierKey::parse("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW").unwrap();
    let signer =
        SignerKey::parse("PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz").unwrap();
    let text = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
    let signed = sign(text, &[&signer]).unwrap();
    // 68 bytes end in one padding '=': the character before it carries two
    // unused bits, zero in the canonical spelling; the next character of the
    // alphabet sets one of them and decodes to the same bytes.
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let canonical = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, [0x5a; 68]);
    let last = canonical.chars().rev().nth(1).unwrap();
    let bumped = ALPHABET.chars().nth(ALPHABET.find(last).unwrap() + 1).unwrap();
    let non_canonical = format!("{}{bumped}=", &canonical[..canonical.len() - 2]);
    assert_ne!(non_canonical, canonical);
    let with_unknown = format!("{signed}— someone.else/key {non_canonical}\n");
    let verified = open(with_unknown.as_bytes(), &[&peter]).expect("an unknown key's line is ignored");
    assert_eq!(verified.text(), text);
    assert_eq!(verified.verified_signatures().len(), 1);
    assert_eq!(verified.other_signatures().len(), 1);
    assert_eq!(verified.other_signatures()[0].name, "someone.else/key");
    // Not base64 at all is still malformed, as in Go.
    let garbage = format!("{signed}— someone.else/key !!!!\n");
    assert!(matches!(open(garbage.as_bytes(), &[&peter]), Err(NoteError::Malformed(_))));
}

/// R-NOTE-1: the trusted key's own line spelled with a padding bit set
/// decodes (as Go decodes it) to the very signature that verifies, and is
/// still refused: a verified note is byte for byte what its signer wrote.
/// Found by the sign-then-open property (byte 129 changed still verified).
#[test]
fn r_note_1_a_trusted_keys_non_canonical_line_is_refused() {
    let peter = VerifierKey::parse("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW").unwrap();
    let signer =
        SignerKey::parse("PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz").unwrap();
    let signed = sign("a line\n", &[&signer]).unwrap();
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    // The signature line ends "<char>=\n": that char carries two padding bits, zero as signed.
    let at = signed.len() - 3;
    let last = signed[at..].chars().next().unwrap();
    let bumped = ALPHABET.chars().nth(ALPHABET.find(last).unwrap() + 1).unwrap();
    let tampered = format!("{}{bumped}{}", &signed[..at], &signed[at + 1..]);
    assert_ne!(tampered, signed);
    let line = tampered.lines().last().unwrap();
    let reread = witness::note::NoteSignature::parse_line(line).unwrap();
    let original = witness::note::NoteSignature::parse_line(signed.lines().last().unwrap()).unwrap();
    assert_eq!(reread, original, "both spellings decode to the one signature");
    assert!(open(signed.as_bytes(), &[&peter]).is_ok());
    assert!(matches!(open(tampered.as_bytes(), &[&peter]), Err(NoteError::Malformed(_))));
}

#[test]
fn r_note_1_key_ids_from_formats() {
    let v = published();
    for pin in v["vkey_key_id_vectors"].as_array().unwrap() {
        let key = VerifierKey::parse(s(pin, "vkey")).unwrap();
        assert_eq!(format!("{:08x}", key.key_id()), s(pin, "key_id"));
        if let Some(cosig) = pin["as_cosignature_v1_vkey"].as_str() {
            let trusted = TrustedWitness::parse(cosig).unwrap();
            assert_eq!(format!("{:08x}", trusted.key_id()), s(pin, "as_cosignature_v1_key_id"));
        }
    }
}

#[test]
fn r_note_1_notes_signed_by_go_verify_and_ours_are_identical() {
    let vectors = go();
    let mut keys = Vec::new();
    for key in vectors["keys"].as_array().unwrap() {
        let signer = SignerKey::parse(s(key, "skey")).unwrap();
        assert_eq!(signer.to_skey(), s(key, "skey"));
        assert_eq!(signer.verifier_key().to_string(), s(key, "vkey"), "our vkey equals Go's NewEd25519VerifierKey");
        let from_seed = SignerKey::from_seed(s(key, "name"), ALG_COSIGNATURE_V1, seed(s(key, "seed"))).unwrap();
        assert_eq!(from_seed.verifier_key().to_string(), s(key, "cosignature_vkey"), "formats' VKeyToCosignatureV1");
        keys.push(signer);
    }
    let verifiers: Vec<VerifierKey> = keys.iter().map(SignerKey::verifier_key).collect();
    let trusted: Vec<&dyn NoteVerifier> = verifiers.iter().map(|k| k as &dyn NoteVerifier).collect();
    let notes = vectors["notes"].as_array().unwrap();
    assert!(notes.len() >= 5);
    for entry in notes {
        let note = s(entry, "note");
        let verified = open(note.as_bytes(), &trusted).unwrap_or_else(|err| panic!("Go's note refused: {err}\n{note}"));
        assert_eq!(verified.text(), s(entry, "text"));
        let signers: Vec<&SignerKey> = entry["signers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|name| keys.iter().find(|k| k.name() == name.as_str().unwrap()).unwrap())
            .collect();
        assert_eq!(sign(s(entry, "text"), &signers).unwrap(), note, "our signature bytes equal Go's note.Sign");
    }
}

#[test]
fn r_wit_3_cosignature_pinned_to_the_spec_example() {
    let v = published();
    let example = &v["c2sp_checkpoint_example"];
    let body = s(example, "body_utf8");
    let checkpoint = Checkpoint::parse(body).unwrap();
    assert_eq!(checkpoint.origin(), s(example, "origin"));
    assert_eq!(checkpoint.tree().size, example["size"].as_u64().unwrap());
    assert_eq!(checkpoint.tree().root.to_string(), s(example, "root_hash"));
    assert_eq!(checkpoint.to_text(), body);
    // The published cosignature line: key id and timestamp layout.
    let note = s(example, "signed_note_utf8");
    let line = note.lines().find(|line| line.contains("witness.example.com/w1")).unwrap();
    let signature = NoteSignature::parse_line(line).unwrap();
    let cosig = &example["cosignature"];
    assert_eq!(format!("{:08x}", signature.key_id), s(cosig, "key_id"));
    assert_eq!(4 + signature.signature.len(), cosig["total_len"].as_u64().unwrap() as usize);
    assert_eq!(u64::from_be_bytes(signature.signature[..8].try_into().unwrap()), cosig["timestamp"].as_u64().unwrap());
    assert_eq!(signature.signature[8..], hex(s(cosig, "ed25519_signature")));
    assert_eq!(
        witness::cosignature::cosignature_v1_message(body, cosig["timestamp"].as_u64().unwrap()),
        s(example, "cosigned_message_utf8")
    );
}

#[test]
fn r_wit_3_derived_cosignature_reproduced_byte_for_byte() {
    let v = published();
    let derived = &v["derived_cosignature_v1_example"];
    let cosigner_spec = &derived["cosigner"];
    let key =
        SignerKey::from_seed(s(cosigner_spec, "key_name"), ALG_COSIGNATURE_V1, seed(s(cosigner_spec, "private_seed")))
            .unwrap();
    assert_eq!(key.verifier_key().to_string(), s(cosigner_spec, "vkey"));
    assert_eq!(format!("{:08x}", key.key_id()), s(cosigner_spec, "key_id"));
    let log_spec = &derived["log"];
    let log_signer = SignerKey::parse(s(log_spec, "skey")).unwrap();
    assert_eq!(log_signer.verifier_key().to_string(), s(log_spec, "vkey"));
    let body = s(derived, "checkpoint_body_utf8");
    let checkpoint = Checkpoint::parse(body).unwrap();
    let log_key = LogKey::new(log_signer).unwrap();
    let signed = log_key.sign(&checkpoint).unwrap();
    assert!(signed.note().contains(s(log_spec, "signature_line_b64")), "log signature line reproduced");

    let cosigner = Cosigner::new(key).unwrap();
    let timestamp = derived["timestamp"].as_u64().unwrap();
    let line = cosigner.cosign(body, timestamp).unwrap().to_line();
    assert_eq!(line, s(derived, "response_body_utf8"));
    let full = format!("{}{line}", signed.note());
    assert_eq!(full, s(derived, "full_cosigned_note_utf8"));
    let trusted = TrustedWitness::parse(s(cosigner_spec, "vkey")).unwrap();
    let signature = NoteSignature::parse_line(line.trim_end()).unwrap();
    assert!(matches!(trusted.check(body, &signature), CosignatureCheck::Valid(c) if c.timestamp == timestamp));
    // Over a different body it fails, naming the witness.
    let other = body.replace("20852163", "20852164");
    assert!(matches!(
        trusted.check(&other, &signature),
        CosignatureCheck::Invalid(CosignatureError::BadSignature { .. })
    ));
    if let Some(with_ext) = derived.get("with_extension_line").filter(|v| v.is_object()) {
        let body = s(with_ext, "checkpoint_body_utf8");
        let line = cosigner.cosign(body, timestamp).unwrap().to_line();
        assert_eq!(line, format!("— witness.example.com/w1 {}\n", s(with_ext, "cosignature_line_b64")));
    }
}

#[test]
fn r_wit_3_zero_and_huge_timestamps_are_refused() {
    let cosigner = Cosigner::new(SignerKey::from_seed("w.test/a", ALG_COSIGNATURE_V1, [9; 32]).unwrap()).unwrap();
    let body = "log.test\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n";
    assert!(matches!(cosigner.cosign(body, 0), Err(CosignatureError::ZeroTimestamp { .. })));
    assert!(matches!(cosigner.cosign(body, 1 << 63), Err(CosignatureError::TimestampOutOfRange { .. })));
    // A zero-timestamp line made by hand with the right key is still refused.
    let mut line = cosigner.cosign(body, 5).unwrap();
    line.signature[..8].copy_from_slice(&0u64.to_be_bytes());
    let trusted = TrustedWitness::new(cosigner.verifier_key()).unwrap();
    assert_eq!(
        verify_cosignatures(body, &[line], &[trusted]),
        Err(CosignatureError::ZeroTimestamp { name: "w.test/a".into() })
    );
}

#[test]
fn r_wit_3_untrusted_lines_ignored_and_bad_trusted_lines_refused() {
    let body = "log.test\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n";
    let ours = Cosigner::new(SignerKey::from_seed("w.test/a", ALG_COSIGNATURE_V1, [1; 32]).unwrap()).unwrap();
    let stranger = Cosigner::new(SignerKey::from_seed("w.test/b", ALG_COSIGNATURE_V1, [2; 32]).unwrap()).unwrap();
    let trusted = [TrustedWitness::new(ours.verifier_key()).unwrap()];
    let good = ours.cosign(body, 1_700_000_000).unwrap();
    let unknown = stranger.cosign(body, 1_700_000_000).unwrap();
    let report = verify_cosignatures(body, &[unknown.clone(), good.clone()], &trusted).unwrap();
    assert_eq!(report.valid.len(), 1);
    assert_eq!(report.ignored, vec![unknown]);
    let mut bad = good;
    bad.signature[20] ^= 1;
    assert!(matches!(verify_cosignatures(body, &[bad], &trusted), Err(CosignatureError::BadSignature { .. })));
    // A note key is not a cosignature key: refused with a reason, not re-derived.
    let note_key = SignerKey::from_seed("w.test/a", ALG_ED25519, [1; 32]).unwrap().verifier_key();
    assert!(matches!(TrustedWitness::new(note_key), Err(KeyError::NotAWitnessKey { algorithm: ALG_ED25519, .. })));
}

#[test]
fn checkpoints_parse_strictly() {
    let v = published();
    let formats = &v["formats_checkpoint_marshal"];
    for body in formats["invalid_bodies_utf8"].as_array().unwrap() {
        assert!(Checkpoint::parse(body.as_str().unwrap()).is_err(), "{body}");
    }
    // formats accepts non-32-byte hashes; a checkpoint of an RFC 6962 log must not.
    for valid in formats["valid"].as_array().unwrap() {
        assert!(matches!(Checkpoint::parse(s(valid, "body_utf8")), Err(CheckpointError::Malformed(_))));
    }
    let root = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
    for bad in [
        format!("log\n01\n{root}\n"),
        format!("log\n+1\n{root}\n"),
        format!("log\n18446744073709551616\n{root}\n"),
        format!("log\n1\n{root}\n\n"),
        format!("log\n1\n{root}"),
        format!("\n1\n{root}\n"),
        "log\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFV=\n".to_owned(),
    ] {
        assert!(Checkpoint::parse(&bad).is_err(), "{bad:?} must be refused");
    }
    let ok = Checkpoint::parse(&format!("log\n18446744073709551615\n{root}\next\n")).unwrap();
    assert_eq!(ok.tree().size, u64::MAX);
    assert_eq!(ok.extensions(), ["ext"]);
    let sumdb = &v["go_sumdb_tree_note"];
    let tree = Checkpoint::parse(s(sumdb, "tree_note_utf8")).unwrap();
    assert_eq!(tree.tree().root.to_string(), s(sumdb, "record_hash"));
}

#[test]
fn r_note_2_log_key_signs_each_checkpoint_as_it_goes_out() {
    let log_key = LogKey::new(SignerKey::from_seed("log.test", ALG_ED25519, [4; 32]).unwrap()).unwrap();
    let vkey = log_key.verifier_key();
    let first = Checkpoint::parse("log.test\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n").unwrap();
    let second = Checkpoint::parse("log.test\n2\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n").unwrap();
    let a = log_key.sign(&first).unwrap();
    let b = log_key.sign(&second).unwrap();
    assert_ne!(a.note().lines().last(), b.note().lines().last(), "a fresh signature per checkpoint");
    let (opened, _) = SignedCheckpoint::open(b.note().as_bytes(), &[&vkey]).unwrap();
    assert_eq!(opened.checkpoint(), &second);
    // A held signature moved onto another checkpoint is refused.
    let spliced = format!("{}\n{}\n", second.to_text(), a.note().lines().last().unwrap());
    assert!(matches!(
        SignedCheckpoint::open(spliced.as_bytes(), &[&vkey]),
        Err(CheckpointError::Note(NoteError::InvalidSignature { .. }))
    ));
}

/// R-WIT-10: an ML-DSA-44 line from a trusted 0x06 key is verified, never
/// skipped: a payload of the right length that does not verify refuses the note.
#[test]
fn r_wit_10_a_trusted_ml_dsa_line_that_does_not_verify_is_refused() {
    use base64::Engine as _;
    let name = "w.test/mldsa";
    let public = vec![7u8; 1312];
    let id = witness::key_id(name, witness::ALG_ML_DSA_44, &public);
    let mut encoded = vec![witness::ALG_ML_DSA_44];
    encoded.extend_from_slice(&public);
    let vkey = format!("{name}+{id:08x}+{}", base64::engine::general_purpose::STANDARD.encode(&encoded));
    let trusted = TrustedWitness::parse(&vkey).unwrap();
    let line = NoteSignature { name: name.into(), key_id: id, signature: vec![1; 8 + 2420] };
    let body = "log.test\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n";
    assert!(matches!(
        trusted.check(body, &line),
        CosignatureCheck::Invalid(witness::CosignatureError::BadSignature { key_id, .. }) if key_id == id
    ));
    assert!(matches!(
        verify_cosignatures(body, &[line], &[trusted]).unwrap_err(),
        witness::CosignatureError::BadSignature { .. }
    ));
}

#[test]
fn r_wit_409_parsing_follows_the_published_vectors() {
    let v = published();
    for case in v["witness_409_parse"]["vectors"].as_array().unwrap() {
        let got = witness::protocol::parse_conflict_size(
            case["content_type"].as_str(),
            case["body"].as_str().unwrap().as_bytes(),
        );
        assert_eq!(got, case["expect_size"].as_u64(), "{case}");
    }
}

#[test]
fn one_note_assembly_serves_signing_reopening_and_cosigning() {
    let log_key = LogKey::new(SignerKey::from_seed("log.test", ALG_ED25519, [4; 32]).unwrap()).unwrap();
    let vkey = log_key.verifier_key();
    let checkpoint = Checkpoint::parse("log.test\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n").unwrap();
    let signed = log_key.sign(&checkpoint).unwrap();
    let (_, verified) = SignedCheckpoint::open(signed.note().as_bytes(), &[&vkey]).unwrap();
    // Text, blank line, the lines in order: the same bytes whichever way it is reached.
    assert_eq!(witness::assemble(verified.text(), verified.verified_signatures()), signed.note());
    assert_eq!(verified.to_note(), signed.note());
    assert_eq!(witness::split_note(signed.note()).unwrap().0, checkpoint.to_text());

    let cosigner = Cosigner::new(SignerKey::from_seed("witness.test", ALG_COSIGNATURE_V1, [5; 32]).unwrap()).unwrap();
    let line = cosigner.cosign(&checkpoint.to_text(), 1_700_000_000).unwrap();
    let other = cosigner.cosign(&checkpoint.to_text(), 1_700_000_001).unwrap();
    // One line per witness identity, after the log's own, the note otherwise as it was.
    let cosigned = signed.cosigned_note([&line, &other]);
    assert_eq!(cosigned, format!("{}{}", signed.note(), line.to_line()));
    assert_eq!(cosigned, witness::assemble(verified.text(), verified.verified_signatures().iter().chain([&line])));
    let (_, reopened) = SignedCheckpoint::open(cosigned.as_bytes(), &[&vkey]).unwrap();
    assert_eq!(reopened.other_signatures(), [line]);
}

/// The origin line is the log's identity, byte for byte: spaces in it (a
/// trailing one too) are kept, never trimmed, so a checkpoint parsed from a
/// body gives back exactly that body (what a cosignature/v1 signature
/// covers) and is never read as a checkpoint of another origin.
#[test]
fn r_wit_3_a_checkpoint_origin_is_kept_byte_for_byte() {
    let root = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
    for origin in ["example.com/log ", " example.com/log", "example.com/a log", "example.com/log\u{a0}"] {
        let body = format!("{origin}\n3\n{root}\n");
        let checkpoint = Checkpoint::parse(&body).unwrap();
        assert_eq!(checkpoint.origin(), origin);
        assert_eq!(checkpoint.to_text(), body);
        assert_ne!(checkpoint, Checkpoint::parse(&format!("example.com/log\n3\n{root}\n")).unwrap(), "{origin:?}");
    }
}

/// R-WIT-2: an old size beyond the checkpoint is refused by its own error
/// before the log's history is read, whatever the history holds.
#[test]
fn r_wit_2_build_request_refuses_an_old_size_beyond_the_checkpoint_by_name() {
    let key = LogKey::new(SignerKey::from_seed("example.com/log", ALG_ED25519, [3; 32]).unwrap()).unwrap();
    let mut log = tlog::MemoryHashStore::new();
    for leaf in 0..5u8 {
        log.append(tlog::LeafHash::of(&[leaf]));
    }
    let origin = witness::Origin::new("example.com/log").unwrap();
    let small = key.sign(&Checkpoint::new(&origin, tlog::Tree::new(3, tlog::tree_root(&log, 3).unwrap()))).unwrap();
    assert_eq!(
        witness::quorum::build_request(&small, 4, &log),
        Err(witness::WitnessError::OldSizeBeyondCheckpoint { old_size: 4, new_size: 3 })
    );
}
