//! Record signatures (R-SIG-1..5).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use journal_core::record::StepMark;
use journal_core::{
    ChainCheck, ChainHash, Ed25519Signer, Ed25519Verifier, Journal, JournalError, MemoryStore, RecordBody, RunId,
    SignatureCheck, Signer, Store, StoredRecord, TamperKind, TenantId, Upcasters, Verifier, VerifyOptions, verify_run,
};

const SPIFFE: &str = "spiffe://plane.test/ns/agents/sa/planner";

fn signed_run(signer: Option<&dyn Signer>, records: usize) -> (RunId, Vec<StoredRecord>) {
    let store = MemoryStore::new();
    let tenant = TenantId::new("t").unwrap();
    let origin = journal_core::Origin::new("sig.test/plane").unwrap();
    let journal = Journal { signer, ..Journal::new(&store, &tenant, &origin) };
    let run = RunId::new("signed").unwrap();
    let mut head = None;
    for i in 0..records {
        let body = RecordBody::StepStarted(StepMark { step: format!("step {i}") });
        head = Some(journal.append(&run, head, None, body).unwrap().head);
    }
    (run.clone(), store.read_run(&tenant, &run).unwrap().rows)
}

fn verifier(signer: &Ed25519Signer) -> Ed25519Verifier {
    let mut verifier = Ed25519Verifier::new();
    verifier.trust(signer.key_id(), signer.public_key()).unwrap();
    verifier
}

#[test]
fn r_sig_2_editing_record_3_of_10_invalidates_signatures_3_to_10() {
    let signer = Ed25519Signer::from_seed(SPIFFE, [3; 32]);
    let (run, mut rows) = signed_run(Some(&signer), 10);
    let verifier = verifier(&signer);
    // The party holding the store rewrites record 3 and recomputes every hash after it.
    rows[2].bytes = String::from_utf8(rows[2].bytes.clone()).unwrap().replace("step 2", "step X").into_bytes();
    let mut prev = rows[1].hash;
    for row in rows.iter_mut().skip(2) {
        row.prev_hash = prev;
        row.hash = ChainHash::link(&prev, &row.bytes);
        prev = row.hash;
    }
    for row in &rows {
        let signature = row.signature.as_ref().unwrap();
        let verdict = verifier.verify(&signature.key_id, &row.hash, &signature.signature);
        let want = if row.seq < 3 { SignatureCheck::Valid } else { SignatureCheck::Invalid };
        assert_eq!(verdict, want, "record {}", row.seq);
    }
    let upcasters = Upcasters::builtin();
    for options in [VerifyOptions::default(), VerifyOptions { require_signature: true }] {
        let err =
            verify_run(&run, &rows, None, ChainCheck { upcasters: &upcasters, verifier: Some(&verifier), options })
                .unwrap_err();
        assert!(matches!(err, JournalError::Tamper { seq: 3, kind: TamperKind::BadSignature, .. }), "{err:?}");
    }
}

#[test]
fn r_sig_3_unsigned_passes_lenient_and_fails_strict() {
    let (run, rows) = signed_run(None, 4);
    assert!(rows.iter().all(|row| row.signature.is_none()), "R-SIG-4: no signer, no signature");
    let upcasters = Upcasters::builtin();
    let lenient = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
    verify_run(&run, &rows, None, lenient).unwrap();
    let strict = ChainCheck { options: VerifyOptions { require_signature: true }, ..lenient };
    let err = verify_run(&run, &rows, None, strict).unwrap_err();
    assert!(matches!(err, JournalError::Unsigned { seq: 1, .. }), "{err:?}");
}

#[test]
fn r_sig_5_a_signature_by_an_unknown_key_fails_strict_naming_the_key() {
    let stranger = Ed25519Signer::from_seed("spiffe://elsewhere.test/agent", [9; 32]);
    let (run, rows) = signed_run(Some(&stranger), 3);
    let trusted = verifier(&Ed25519Signer::from_seed(SPIFFE, [3; 32]));
    let upcasters = Upcasters::builtin();
    let lenient = ChainCheck { upcasters: &upcasters, verifier: Some(&trusted), options: VerifyOptions::default() };
    verify_run(&run, &rows, None, lenient).unwrap();
    let strict = ChainCheck { options: VerifyOptions { require_signature: true }, ..lenient };
    let err = verify_run(&run, &rows, None, strict).unwrap_err();
    assert!(err.to_string().contains("spiffe://elsewhere.test/agent"), "{err}");
}

#[test]
fn r_sig_1_the_signature_sits_beside_the_hash_with_no_algorithm_field() {
    let signer = Ed25519Signer::from_seed(SPIFFE, [3; 32]);
    let (_, rows) = signed_run(Some(&signer), 1);
    let text = String::from_utf8(rows[0].bytes.clone()).unwrap();
    assert!(!text.contains("signature") && !text.contains(SPIFFE), "the body does not carry the signature: {text}");
    let json = serde_json::to_value(rows[0].signature.as_ref().unwrap()).unwrap();
    let mut fields: Vec<&String> = json.as_object().unwrap().keys().collect();
    fields.sort();
    assert_eq!(fields, ["key_id", "signature"]);
}

/// R-SIG-3, batched: `verify_many` answers every signature exactly as
/// `verify` does, across batch boundaries, naming the one bad signature in a
/// batch that fails, an unknown key, and bytes that are no signature.
#[test]
fn r_sig_3_batch_verification_answers_each_signature_as_single_verification_does() {
    use journal_core::SignedHash;
    let signer = Ed25519Signer::from_seed("k1", [3u8; 32]);
    let other = Ed25519Signer::from_seed("k2", [4u8; 32]);
    let mut verifier = Ed25519Verifier::new();
    verifier.trust("k1", signer.public_key()).unwrap();
    let hashes: Vec<ChainHash> = (0..150u8).map(|i| ChainHash::from_bytes([i; 32])).collect();
    let mut signatures: Vec<(String, Vec<u8>)> = hashes
        .iter()
        .map(|hash| {
            let signed = signer.sign(hash);
            (signed.key_id, signed.signature)
        })
        .collect();
    signatures[70].1[5] ^= 1; // in the second batch
    signatures[3] = (other.key_id().to_owned(), other.sign(&hashes[3]).signature);
    signatures[140].1.truncate(10);
    signatures[141] = (signer.key_id().to_owned(), other.sign(&hashes[141]).signature);
    let items: Vec<SignedHash<'_>> = hashes
        .iter()
        .zip(&signatures)
        .map(|(hash, (key_id, signature))| SignedHash { key_id, hash, signature })
        .collect();
    let many = verifier.verify_many(&items);
    let one_by_one: Vec<SignatureCheck> =
        items.iter().map(|item| verifier.verify(item.key_id, item.hash, item.signature)).collect();
    assert_eq!(many, one_by_one);
    assert_eq!(many[70], SignatureCheck::Invalid);
    assert_eq!(many[3], SignatureCheck::UnknownKey);
    assert_eq!(many[140], SignatureCheck::Invalid);
    assert_eq!(many[141], SignatureCheck::Invalid);
    assert_eq!(many.iter().filter(|check| **check == SignatureCheck::Valid).count(), 146);
}
