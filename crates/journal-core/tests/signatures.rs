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

/// `verify_many` over `signatures` (key id, bytes) of `hashes`, beside the
/// one-by-one answers.
fn many_and_single(
    verifier: &Ed25519Verifier,
    hashes: &[ChainHash],
    signatures: &[(String, Vec<u8>)],
) -> (Vec<SignatureCheck>, Vec<SignatureCheck>) {
    use journal_core::SignedHash;
    let items: Vec<SignedHash<'_>> = hashes
        .iter()
        .zip(signatures)
        .map(|(hash, (key_id, signature))| SignedHash { key_id, hash, signature })
        .collect();
    let single = items.iter().map(|item| verifier.verify(item.key_id, item.hash, item.signature)).collect();
    (verifier.verify_many(&items), single)
}

/// R-SIG-3, batched and folded by key: a batch holding signatures of two
/// trusted keys (each key's terms folded into one multiplication) answers
/// each exactly as single verification; a signature of one key presented
/// under the other's id is invalid, not folded into the wrong sum.
#[test]
fn r_sig_3_a_batch_of_two_keys_answers_each_signature_as_single_verification_does() {
    let first = Ed25519Signer::from_seed("k1", [3u8; 32]);
    let second = Ed25519Signer::from_seed("k2", [4u8; 32]);
    let mut verifier = Ed25519Verifier::new();
    verifier.trust("k1", first.public_key()).unwrap();
    verifier.trust("k2", second.public_key()).unwrap();
    let hashes: Vec<ChainHash> = (0..40u8).map(|i| ChainHash::from_bytes([i; 32])).collect();
    let mut signatures: Vec<(String, Vec<u8>)> = hashes
        .iter()
        .enumerate()
        .map(|(i, hash)| {
            let signed = if i % 2 == 0 { first.sign(hash) } else { second.sign(hash) };
            (signed.key_id, signed.signature)
        })
        .collect();
    let (many, single) = many_and_single(&verifier, &hashes, &signatures);
    assert_eq!(many, single);
    assert!(many.iter().all(|check| *check == SignatureCheck::Valid), "{many:?}");

    signatures[7].0 = "k1".to_owned(); // k2's signature under k1's id
    let (many, single) = many_and_single(&verifier, &hashes, &signatures);
    assert_eq!(many, single);
    assert_eq!(many[7], SignatureCheck::Invalid);
    assert_eq!(many.iter().filter(|check| **check == SignatureCheck::Valid).count(), 39);
}

/// R-SIG-3, batched: every one-bit change of a signature inside a batch is
/// named invalid and only it, and an `s` past the group order (`s + l`, the
/// classic malleation) is refused as single verification refuses it.
#[test]
fn r_sig_3_every_bit_flip_and_a_malleated_s_are_refused_inside_a_batch() {
    let signer = Ed25519Signer::from_seed("k1", [3u8; 32]);
    let verifier = verifier(&signer);
    let hashes: Vec<ChainHash> = (0..8u8).map(|i| ChainHash::from_bytes([i; 32])).collect();
    let signatures: Vec<(String, Vec<u8>)> = hashes
        .iter()
        .map(|hash| {
            let signed = signer.sign(hash);
            (signed.key_id, signed.signature)
        })
        .collect();
    for bit in 0..512 {
        let mut changed = signatures.clone();
        changed[5].1[bit / 8] ^= 1 << (bit % 8);
        let (many, single) = many_and_single(&verifier, &hashes, &changed);
        assert_eq!(many, single, "bit {bit}");
        assert_eq!(many[5], SignatureCheck::Invalid, "bit {bit}");
        assert_eq!(many.iter().filter(|check| **check == SignatureCheck::Valid).count(), 7, "bit {bit}");
    }
    // l = 2^252 + 27742317777372353535851937790883648493, little-endian.
    const ORDER: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];
    let mut malleated = signatures.clone();
    let s = &mut malleated[2].1[32..];
    let mut carry = 0u16;
    for (byte, add) in s.iter_mut().zip(ORDER) {
        let sum = u16::from(*byte) + u16::from(add) + carry;
        *byte = sum as u8;
        carry = sum >> 8;
    }
    assert_eq!(carry, 0, "s + l fits in 32 bytes for any canonical s");
    let (many, single) = many_and_single(&verifier, &hashes, &malleated);
    assert_eq!(many, single);
    assert_eq!(many[2], SignatureCheck::Invalid);
}

/// R-SIG-2: a reading of the whole tenant (`Journal::each_run`, what `cost`
/// and `runs` read) checks signatures many runs at a time, over every core:
/// it answers each run as a read of that run alone does. One changed
/// signature among more than one window's worth names its run alone, and
/// every run comes in the order of the unsigned reading.
#[test]
fn r_sig_2_a_tenant_read_checks_signatures_together_and_names_the_one_changed() {
    use journal_core::testkit::TamperAccess;
    let signer = Ed25519Signer::from_seed(SPIFFE, [5; 32]);
    let store = MemoryStore::new();
    let tenant = TenantId::new("t").unwrap();
    let origin = journal_core::Origin::new("sig.test/plane").unwrap();
    let journal = Journal { signer: Some(&signer), ..Journal::new(&store, &tenant, &origin) };
    // 800 runs of 12 records: 9,600 signatures, past one window of 8,192.
    for n in 0..800 {
        let run = RunId::new(&format!("run-{n:03}")).unwrap();
        let mut head = None;
        for i in 0..12 {
            let body = RecordBody::StepStarted(StepMark { step: format!("step {i}") });
            head = Some(journal.append(&run, head, None, body).unwrap().head);
        }
    }
    let changed = RunId::new("run-700").unwrap();
    let mut row = store.read_run(&tenant, &changed).unwrap().rows[4].clone();
    row.signature.as_mut().unwrap().signature[7] ^= 0x10;
    store.overwrite_row(&tenant, &changed, row);

    let upcasters = Upcasters::builtin();
    let verifier = verifier(&signer);
    let read = |verifier: Option<&dyn Verifier>| {
        let check = ChainCheck { upcasters: &upcasters, verifier, options: VerifyOptions::default() };
        let mut answers = Vec::new();
        journal
            .each_run(check, &mut |run, verified| {
                answers.push((run, verified.map(|v| v.records.len())));
                Ok(())
            })
            .unwrap();
        answers
    };
    let unsigned = read(None);
    let signed = read(Some(&verifier));
    assert_eq!(signed.len(), 800);
    let order =
        |answers: &[(RunId, Result<usize, JournalError>)]| answers.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>();
    assert_eq!(order(&signed), order(&unsigned), "the same runs in the same order");
    for (run, answer) in &signed {
        if *run == changed {
            assert!(
                matches!(answer, Err(JournalError::Tamper { seq: 5, kind: TamperKind::BadSignature, .. })),
                "{run}: {answer:?}"
            );
        } else {
            assert!(matches!(answer, Ok(12)), "{run}: {answer:?}");
        }
    }
    assert!(unsigned.iter().all(|(_, answer)| matches!(answer, Ok(12))), "the chain alone does not see it");
}

/// R-SIG-2: a reading of the whole tenant verifies each window of runs it
/// reads (on the reading's thread since 4b7cca3: verifying beside the
/// reading measured no faster; the test's name is the change it was written
/// for). Over four windows (26,400 signatures) every run still comes in the
/// order of the unsigned reading, each verified; an error `each` returns
/// stops the read at that run and is the answer.
#[test]
fn r_sig_2_a_tenant_read_verifies_beside_the_reading_in_order_and_stops_at_an_error() {
    let signer = Ed25519Signer::from_seed(SPIFFE, [5; 32]);
    let store = MemoryStore::new();
    let tenant = TenantId::new("t").unwrap();
    let origin = journal_core::Origin::new("sig.test/plane").unwrap();
    let journal = Journal { signer: Some(&signer), ..Journal::new(&store, &tenant, &origin) };
    for n in 0..2_200 {
        let run = RunId::new(&format!("run-{n:04}")).unwrap();
        let mut head = None;
        for i in 0..12 {
            let body = RecordBody::StepStarted(StepMark { step: format!("step {i}") });
            head = Some(journal.append(&run, head, None, body).unwrap().head);
        }
    }
    let upcasters = Upcasters::builtin();
    let verifier = verifier(&signer);
    let check = |verifier: Option<&'static Ed25519Verifier>| ChainCheck {
        upcasters: &upcasters,
        verifier: verifier.map(|v| v as &dyn Verifier),
        options: VerifyOptions::default(),
    };
    let verifier: &'static Ed25519Verifier = Box::leak(Box::new(verifier));
    let mut unsigned = Vec::new();
    journal
        .each_run(check(None), &mut |run, verified| {
            unsigned.push(run);
            verified.map(drop)
        })
        .unwrap();
    let mut signed = Vec::new();
    journal
        .each_run(check(Some(verifier)), &mut |run, verified| {
            assert!(matches!(&verified, Ok(v) if v.records.len() == 12), "{run}: {:?}", verified.err());
            signed.push(run);
            Ok(())
        })
        .unwrap();
    assert_eq!(signed.len(), 2_200);
    assert_eq!(signed, unsigned, "the same runs in the same order");
    let mut called = 0;
    let stopped = journal.each_run(check(Some(verifier)), &mut |run, _| {
        called += 1;
        if called == 1_500 { Err(JournalError::NotFound { tenant: tenant.clone(), run }) } else { Ok(()) }
    });
    assert!(matches!(&stopped, Err(JournalError::NotFound { run, .. }) if run.as_str() == "run-1499"), "{stopped:?}");
    assert_eq!(called, 1_500, "nothing is handed on after the error");
}

/// R-SIG-2: signatures checked ahead ([`journal_core::Prechecked`]) are
/// matched to their answers by position, so a verifier whose `verify_many`
/// answers a count other than it was asked (a broken contract: here the
/// first answer is dropped, and every later one shifts onto the signature
/// before it) is not believed: every signature is then answered as it is
/// checked alone, the changed one invalid.
#[test]
fn r_sig_2_a_verifier_answering_the_wrong_count_is_not_matched_by_position() {
    struct DropsTheFirst(Ed25519Verifier);
    impl Verifier for DropsTheFirst {
        fn verify(&self, key_id: &str, hash: &ChainHash, signature: &[u8]) -> SignatureCheck {
            self.0.verify(key_id, hash, signature)
        }
        fn trusts(&self, key_id: &str) -> bool {
            self.0.trusts(key_id)
        }
        fn verify_many(&self, items: &[journal_core::SignedHash<'_>]) -> Vec<SignatureCheck> {
            self.0.verify_many(items).into_iter().skip(1).collect()
        }
    }
    let signer = Ed25519Signer::from_seed(SPIFFE, [6; 32]);
    let (_, mut rows) = signed_run(Some(&signer), 6);
    rows[2].signature.as_mut().unwrap().signature[0] ^= 1;
    let verifier = DropsTheFirst(verifier(&signer));
    let items = journal_core::signature::signed_hashes(&rows);
    let prechecked = journal_core::Prechecked::new(&verifier, &items);
    for (at, item) in items.iter().enumerate() {
        let expected = if at == 2 { SignatureCheck::Invalid } else { SignatureCheck::Valid };
        assert_eq!(prechecked.verify(item.key_id, item.hash, item.signature), expected, "signature {at}");
    }
}
