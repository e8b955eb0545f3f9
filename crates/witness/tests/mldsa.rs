//! R-WIT-10: ML-DSA-44 cosignatures (tlog-cosignature v1.1.0-rc.1, type 0x06),
//! pinned to `tests/vectors/mldsa44.json`: keys from fixed FIPS 204 seeds by
//! filippo.io/mldsa, key ids and vkeys accepted by transparency-dev/formats,
//! signatures verified by formats' own `subtree/v1` code (written by
//! `cargo xtask vectors`, checked by `cargo xtask vectors --check`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::path::PathBuf;

use serde_json::Value;
use tlog::{LeafHash, MemoryHashStore};
use witness::{
    ALG_COSIGNATURE_V1, ALG_ED25519, ALG_ML_DSA_44, Checkpoint, CosignatureCheck, CosignatureError, CosignedCheckpoint,
    Cosigner, KeyError, LogHistory, LogKey, NoteSignature, Origin, QuorumOutcome, SignedCheckpoint, SignerKey,
    SubtreeStatement, TrustedWitness, VerifierKey, Witness, WitnessError, WitnessIdentity, WitnessQuorum,
    check_distinct_keys, cosign_quorum, parse_signature_lines, verify_cosignatures,
};

fn vectors() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/mldsa44.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("{key} missing"))
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

fn seed(text: &str) -> [u8; 32] {
    hex(text).try_into().unwrap()
}

fn key_of(v: &Value, index: usize) -> SignerKey {
    let key = &v["keys"][index];
    SignerKey::from_seed(s(key, "name"), ALG_ML_DSA_44, seed(s(key, "seed"))).unwrap()
}

fn statement(v: &Value, vector: &Value) -> SubtreeStatement {
    let key = &v["keys"][vector["key"].as_u64().unwrap() as usize];
    SubtreeStatement {
        cosigner_name: s(key, "name").to_owned(),
        timestamp: vector["timestamp"].as_u64().unwrap(),
        origin: s(vector, "origin").to_owned(),
        start: vector["start"].as_u64().unwrap(),
        end: vector["end"].as_u64().unwrap(),
        hash: hex(s(vector, "hash")).try_into().unwrap(),
    }
}

fn line_of(vector: &Value) -> NoteSignature {
    let mut lines = parse_signature_lines(s(vector, "line")).unwrap();
    assert_eq!(lines.len(), 1);
    lines.remove(0)
}

#[test]
fn r_wit_10_keys_match_formats_byte_for_byte() {
    let v = vectors();
    for (i, key) in v["keys"].as_array().unwrap().iter().enumerate() {
        let ours = key_of(&v, i);
        assert_eq!(ours.verifier_key().to_string(), s(key, "vkey"));
        assert_eq!(format!("{:08x}", ours.key_id()), s(key, "key_id"));
        assert_eq!(ours.verifier_key().public_key(), hex(s(key, "public_key")).as_slice());
        assert_eq!(ours.to_skey(), s(key, "skey"));
        let parsed = SignerKey::parse(s(key, "skey")).unwrap();
        assert_eq!(parsed.verifier_key(), ours.verifier_key());
        let vkey = VerifierKey::parse(s(key, "vkey")).unwrap();
        assert_eq!((vkey.algorithm(), vkey.public_key().len()), (ALG_ML_DSA_44, 1312));
        assert_eq!(vkey.to_string(), s(key, "vkey"));
        TrustedWitness::parse(s(key, "vkey")).unwrap();
    }
}

#[test]
fn r_wit_10_known_answer_vectors_verify_and_our_signatures_are_identical() {
    let v = vectors();
    let cases = v["vectors"].as_array().unwrap();
    assert!(cases.len() >= 6);
    for vector in cases {
        let comment = s(vector, "comment");
        let key = &v["keys"][vector["key"].as_u64().unwrap() as usize];
        let trusted = TrustedWitness::parse(s(key, "vkey")).unwrap();
        let statement = statement(&v, vector);
        assert_eq!(statement.message().unwrap(), hex(s(vector, "message")), "{comment}");
        let line = line_of(vector);
        assert!(trusted.matches(&line), "{comment}");
        assert_eq!(&line.signature[8..], hex(s(vector, "signature")).as_slice(), "{comment}");

        // FIPS 204's deterministic variant: our signature equals Go's.
        let cosigner = Cosigner::new(key_of(&v, vector["key"].as_u64().unwrap() as usize)).unwrap();
        assert_eq!(cosigner.sign_statement(&statement).unwrap(), line, "{comment}");
        assert_eq!(trusted.check_subtree(&statement, &line).unwrap(), statement.timestamp, "{comment}");

        if let Some(text) = vector["checkpoint"].as_str() {
            match trusted.check(text, &line) {
                CosignatureCheck::Valid(cosignature) => {
                    assert_eq!(cosignature.algorithm, ALG_ML_DSA_44);
                    assert_eq!(cosignature.timestamp, statement.timestamp);
                    assert_eq!(cosignature.public_key, trusted.public_key());
                }
                other => panic!("{comment}: {other:?}"),
            }
            assert_eq!(cosigner.cosign(text, statement.timestamp).unwrap(), line, "{comment}");
            let report = verify_cosignatures(text, std::slice::from_ref(&line), &[trusted]).unwrap();
            assert_eq!(report.valid.len(), 1, "{comment}");
        }
    }
}

/// Every field of the `subtree/v1` message is signed: one flipped bit in
/// any of them (cosigner name, timestamp, origin, start, end, hash), or in the
/// signature, fails.
#[test]
fn r_wit_10_a_one_bit_change_in_any_message_field_fails() {
    let v = vectors();
    let vector = &v["vectors"][0];
    let trusted = TrustedWitness::parse(s(&v["keys"][0], "vkey")).unwrap();
    let good = statement(&v, vector);
    let line = line_of(vector);
    assert!(trusted.check_subtree(&good, &line).is_ok());

    let flip = |text: &str| {
        let mut bytes = text.as_bytes().to_vec();
        bytes[3] ^= 0x01;
        String::from_utf8(bytes).unwrap()
    };
    let mut hash = good.hash;
    hash[31] ^= 0x80;
    let mutants = [
        ("origin", SubtreeStatement { origin: flip(&good.origin), ..good.clone() }),
        ("end", SubtreeStatement { end: good.end ^ 1, ..good.clone() }),
        ("hash", SubtreeStatement { hash, ..good.clone() }),
    ];
    for (field, mutant) in mutants {
        assert!(
            matches!(trusted.check_subtree(&mutant, &line), Err(CosignatureError::BadSignature { .. })),
            "a changed {field} verified"
        );
    }
    // The start, on the subtree vector (a checkpoint's start is 0, and a
    // non-zero start with a timestamp is refused before any signature check).
    let subtree = &v["vectors"][4];
    let key1 = TrustedWitness::parse(s(&v["keys"][1], "vkey")).unwrap();
    let sub = statement(&v, subtree);
    assert!(key1.check_subtree(&sub, &line_of(subtree)).is_ok());
    let moved = SubtreeStatement { start: sub.start ^ 1, ..sub.clone() };
    assert!(matches!(key1.check_subtree(&moved, &line_of(subtree)), Err(CosignatureError::BadSignature { .. })));
    assert!(matches!(
        trusted.check_subtree(&SubtreeStatement { start: 1, ..good.clone() }, &line),
        Err(CosignatureError::BadSubtree { .. })
    ));
    // The timestamp travels in the line: change it there.
    let mut retimed = line.clone();
    retimed.signature[7] ^= 0x01;
    assert!(matches!(trusted.check_subtree(&good, &retimed), Err(CosignatureError::BadSignature { .. })));
    // The signature itself, at its first, a middle and its last byte.
    for at in [8, 8 + 1210, 8 + 2419] {
        let mut bad = line.clone();
        bad.signature[at] ^= 0x01;
        assert!(
            matches!(trusted.check_subtree(&good, &bad), Err(CosignatureError::BadSignature { .. })),
            "signature byte {at}"
        );
    }
    // The cosigner name is signed (unlike cosignature/v1): the same key
    // trusted under a name one bit away, the line relabelled to it, fails.
    let renamed = VerifierKey::parse(&{
        let vkey = s(&v["keys"][0], "vkey");
        let (_, rest) = vkey.split_once('+').unwrap();
        let (_, key) = rest.split_once('+').unwrap();
        let name = flip(s(&v["keys"][0], "name"));
        let public = trusted.public_key();
        format!("{name}+{:08x}+{key}", witness::key_id(&name, ALG_ML_DSA_44, public))
    })
    .unwrap();
    let renamed = TrustedWitness::new(renamed).unwrap();
    let relabelled =
        NoteSignature { name: renamed.name().to_owned(), key_id: renamed.key_id(), signature: line.signature.clone() };
    let text = s(vector, "checkpoint");
    assert!(matches!(
        renamed.check(text, &relabelled),
        CosignatureCheck::Invalid(CosignatureError::BadSignature { .. })
    ));

    // Through the checkpoint text: origin, size and root are covered.
    let base = Checkpoint::parse(text).unwrap();
    let tree = base.tree();
    let other_origin = Origin::new("example.com/behind-the-sofA").unwrap();
    let changed = [
        Checkpoint::new(&other_origin, tree).to_text(),
        Checkpoint::new(base.origin_id(), tlog::Tree::new(tree.size ^ 1, tree.root)).to_text(),
        Checkpoint::new(base.origin_id(), tlog::Tree::new(tree.size, tlog::RootHash::from_hash_bytes(hash))).to_text(),
    ];
    for changed in changed {
        assert!(
            matches!(trusted.check(&changed, &line), CosignatureCheck::Invalid(CosignatureError::BadSignature { .. })),
            "{changed}"
        );
    }
}

/// The spec: extension lines are not covered by an ML-DSA-44 cosignature.
#[test]
fn r_wit_10_extension_lines_are_not_covered() {
    let v = vectors();
    let (plain, extended) = (&v["vectors"][0], &v["vectors"][1]);
    assert_ne!(s(plain, "checkpoint"), s(extended, "checkpoint"));
    assert_eq!(s(plain, "line"), s(extended, "line"));
    let trusted = TrustedWitness::parse(s(&v["keys"][0], "vkey")).unwrap();
    let line = line_of(plain);
    assert!(matches!(trusted.check(s(extended, "checkpoint"), &line), CosignatureCheck::Valid(_)));
}

#[test]
fn r_wit_10_refusals_are_named() {
    let v = vectors();
    let vector = &v["vectors"][0];
    let trusted = TrustedWitness::parse(s(&v["keys"][0], "vkey")).unwrap();
    let text = s(vector, "checkpoint");
    let line = line_of(vector);
    // A zero timestamp on a checkpoint cosignature (tlog-witness forbids it).
    let subtree = &v["vectors"][4];
    assert_eq!(subtree["timestamp"].as_u64(), Some(0));
    let key1 = TrustedWitness::parse(s(&v["keys"][1], "vkey")).unwrap();
    assert!(matches!(
        key1.check("oracle.test/log\n16\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n", &line_of(subtree)),
        CosignatureCheck::Invalid(CosignatureError::ZeroTimestamp { .. })
    ));
    // Beyond 2^63-1.
    let mut huge = line.clone();
    huge.signature[0] = 0x80;
    assert!(matches!(
        trusted.check(text, &huge),
        CosignatureCheck::Invalid(CosignatureError::TimestampOutOfRange { .. })
    ));
    // A payload of neither type's length.
    let mut short = line.clone();
    short.signature.pop();
    assert!(matches!(
        trusted.check(text, &short),
        CosignatureCheck::Invalid(CosignatureError::WrongLength { length: 2427, expected: 2428, .. })
    ));
    // Text that is not a checkpoint cannot be checked against subtree/v1.
    assert!(matches!(
        trusted.check("free text\n", &line),
        CosignatureCheck::Invalid(CosignatureError::NotACheckpoint { .. })
    ));
    // Statements the spec forbids are refused before signing.
    let cosigner = Cosigner::new(key_of(&v, 1)).unwrap();
    let good = statement(&v, subtree);
    for (bad, why) in [
        (SubtreeStatement { timestamp: 5, ..good.clone() }, "non-zero start with a timestamp"),
        (SubtreeStatement { start: 16, ..good.clone() }, "empty range"),
        (SubtreeStatement { start: 17, ..good.clone() }, "inverted range"),
        (SubtreeStatement { origin: "o".repeat(256), ..good.clone() }, "origin of 256 bytes"),
        (SubtreeStatement { origin: String::new(), ..good.clone() }, "empty origin"),
    ] {
        assert!(matches!(cosigner.sign_statement(&bad), Err(CosignatureError::BadSubtree { .. })), "{why} was signed");
    }
    // A name an ML-DSA-44 message cannot carry is refused as a key.
    assert!(matches!(SignerKey::from_seed(&"n".repeat(256), ALG_ML_DSA_44, [1; 32]), Err(KeyError::BadName { .. })));
    // An Ed25519 cosigner cannot sign subtree statements.
    let ed = Cosigner::new(SignerKey::from_seed("w.test/ed", ALG_COSIGNATURE_V1, [1; 32]).unwrap()).unwrap();
    let statement = SubtreeStatement { cosigner_name: "w.test/ed".into(), ..good };
    assert!(matches!(ed.sign_statement(&statement), Err(CosignatureError::NotACosigner { algorithm: 0x04, .. })));
}

/// R-WIT-10: the algorithm comes from the trusted key, never from the line.
/// An ML-DSA-44 payload under an Ed25519 key's name and id (and the reverse)
/// is ignored: not counted, not a failure. A witness holding both keys,
/// trusted by one, counts by that one.
#[test]
fn r_wit_10_an_ml_dsa_line_under_an_ed25519_key_id_is_ignored_not_counted() {
    let name = "both.test/w";
    let ed = Cosigner::new(SignerKey::from_seed(name, ALG_COSIGNATURE_V1, [3; 32]).unwrap()).unwrap();
    let ml = Cosigner::new(SignerKey::from_seed(name, ALG_ML_DSA_44, [4; 32]).unwrap()).unwrap();
    assert_ne!(ed.verifier_key().key_id(), ml.verifier_key().key_id());
    let text = "log.test/x\n5\nXcnaead2WamtVZy3Ad7ZqaudgjqtL0lgz+Nw7/RgQyg=\n";
    let ed_line = ed.cosign(text, 1_700_000_000).unwrap();
    let ml_line = ml.cosign(text, 1_700_000_000).unwrap();
    assert_eq!((ed_line.signature.len(), ml_line.signature.len()), (72, 2428));
    let trust_ed = TrustedWitness::new(ed.verifier_key()).unwrap();
    let trust_ml = TrustedWitness::new(ml.verifier_key()).unwrap();

    let disguised = NoteSignature { key_id: ed.verifier_key().key_id(), ..ml_line.clone() };
    assert!(matches!(trust_ed.check(text, &disguised), CosignatureCheck::OtherType { length: 2428, .. }));
    let report = verify_cosignatures(text, std::slice::from_ref(&disguised), std::slice::from_ref(&trust_ed)).unwrap();
    assert!(report.valid.is_empty());
    assert_eq!(report.ignored, vec![disguised]);

    let reverse = NoteSignature { key_id: ml.verifier_key().key_id(), ..ed_line.clone() };
    let report = verify_cosignatures(text, std::slice::from_ref(&reverse), std::slice::from_ref(&trust_ml)).unwrap();
    assert!(report.valid.is_empty() && report.ignored.len() == 1);

    // Both lines returned, only the Ed25519 key trusted: one valid, one ignored.
    let both = [ed_line.clone(), ml_line.clone()];
    let report = verify_cosignatures(text, &both, std::slice::from_ref(&trust_ed)).unwrap();
    assert_eq!((report.valid.len(), report.valid[0].algorithm, report.ignored.len()), (1, ALG_COSIGNATURE_V1, 1));
    // Both trusted: two distinct keys, two cosignatures, one witness.
    let report = verify_cosignatures(text, &both, &[trust_ed, trust_ml]).unwrap();
    assert_eq!((report.valid.len(), report.witnesses()), (2, 1));
}

const ORIGIN: &str = "mixed.test/log";

fn log() -> (MemoryHashStore, SignedCheckpoint) {
    let mut store = MemoryHashStore::new();
    for i in 0..5u8 {
        store.append(LeafHash::of(&[i]));
    }
    let key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let signed = key.sign(&Checkpoint::new(&Origin::new(ORIGIN).unwrap(), store.tree())).unwrap();
    (store, signed)
}

/// A witness answering with cosignatures made in advance.
struct Canned {
    endpoint: String,
    answer: CosignedCheckpoint,
}

impl Witness for Canned {
    fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn identities(&self) -> Vec<WitnessIdentity> {
        self.answer.cosignatures.iter().map(WitnessIdentity::of_cosignature).collect()
    }

    fn add_checkpoint(&self, _: &SignedCheckpoint, _: &dyn LogHistory) -> Result<CosignedCheckpoint, WitnessError> {
        Ok(self.answer.clone())
    }
}

/// R-WIT-10, R-AUD-10: one Ed25519 and one ML-DSA-44 witness meet a quorum
/// of 2; one ML-DSA-44 key under two names counts once, and a trust list
/// naming it twice is refused.
#[test]
fn r_wit_10_mixed_quorum_and_one_ml_dsa_key_under_two_names_counts_once() {
    let (store, signed) = log();
    let text = signed.checkpoint().to_text();
    let ed = Cosigner::new(SignerKey::from_seed("mixed.test/ed", ALG_COSIGNATURE_V1, [5; 32]).unwrap()).unwrap();
    let ml = Cosigner::new(SignerKey::from_seed("mixed.test/ml", ALG_ML_DSA_44, [6; 32]).unwrap()).unwrap();
    let answer = |cosigner: &Cosigner, trust: &TrustedWitness| {
        let line = cosigner.cosign(&text, 1_700_000_000).unwrap();
        let report = verify_cosignatures(&text, &[line], std::slice::from_ref(trust)).unwrap();
        CosignedCheckpoint { checkpoint: signed.checkpoint().clone(), cosignatures: report.valid }
    };
    let trust_ed = TrustedWitness::new(ed.verifier_key()).unwrap();
    let trust_ml = TrustedWitness::new(ml.verifier_key()).unwrap();
    let a = Canned { endpoint: "http://ed".into(), answer: answer(&ed, &trust_ed) };
    let b = Canned { endpoint: "http://ml".into(), answer: answer(&ml, &trust_ml) };
    match cosign_quorum(&[&a, &b], WitnessQuorum::of(2), &signed, &store) {
        QuorumOutcome::Met { .. } => {}
        other => panic!("one Ed25519 and one ML-DSA-44 witness did not meet 2: {other:?}"),
    }

    // The same ML-DSA-44 key under a second name (a second endpoint).
    let alias_key = SignerKey::from_seed("mixed.test/ml-alias", ALG_ML_DSA_44, [6; 32]).unwrap();
    assert_eq!(alias_key.verifier_key().public_key(), ml.verifier_key().public_key());
    let alias = Cosigner::new(alias_key).unwrap();
    let trust_alias = TrustedWitness::new(alias.verifier_key()).unwrap();
    let c = Canned { endpoint: "http://ml-alias".into(), answer: answer(&alias, &trust_alias) };
    assert_eq!(b.identities(), c.identities(), "one key is one identity, whatever its name");
    match cosign_quorum(&[&b, &c], WitnessQuorum::of(2), &signed, &store) {
        QuorumOutcome::Shortfall { got: 1, needed: 2, .. } => {}
        other => panic!("one ML-DSA-44 key under two names met a quorum of 2: {other:?}"),
    }
    // Both lines on one note, both names trusted: counted once.
    let lines = [ml.cosign(&text, 1_700_000_000).unwrap(), alias.cosign(&text, 1_700_000_000).unwrap()];
    let report = verify_cosignatures(&text, &lines, &[trust_ml.clone(), trust_alias.clone()]).unwrap();
    assert_eq!(report.valid.len(), 1, "{report:?}");
    assert!(matches!(check_distinct_keys(&[trust_ml, trust_alias]), Err(KeyError::DuplicateWitnessKey { .. })));
}

/// R-AUD-10, R-WIT-10 (attacker review 16): a witness is a name with its
/// keys, and one witness holding an Ed25519 and an ML-DSA-44 key (as ours
/// does, and as a witness moving to ML-DSA-44 does) answers one submission
/// with two lines. Counted by public key, that one witness met a quorum of 2
/// on its own: a lying witness whose two keys an auditor trusts beside one
/// honest witness cosigned a fork to the quorum alone. Keys of one name are
/// one witness toward every quorum.
#[test]
fn r_aud_10_one_witness_with_two_keys_is_one_witness_toward_a_quorum() {
    let (store, signed) = log();
    let text = signed.checkpoint().to_text();
    let name = "mixed.test/liar";
    let ed = Cosigner::new(SignerKey::from_seed(name, ALG_COSIGNATURE_V1, [7; 32]).unwrap()).unwrap();
    let ml = Cosigner::new(SignerKey::from_seed(name, ALG_ML_DSA_44, [8; 32]).unwrap()).unwrap();
    let (trust_ed, trust_ml) =
        (TrustedWitness::new(ed.verifier_key()).unwrap(), TrustedWitness::new(ml.verifier_key()).unwrap());
    check_distinct_keys(&[trust_ed.clone(), trust_ml.clone()]).unwrap();
    let lines = [ed.cosign(&text, 1_700_000_000).unwrap(), ml.cosign(&text, 1_700_000_000).unwrap()];
    let report = verify_cosignatures(&text, &lines, &[trust_ed, trust_ml]).unwrap();
    assert_eq!(report.valid.len(), 2, "both lines verify and are kept");
    assert_eq!(report.witnesses(), 1, "but they are one witness's");

    let liar = Canned {
        endpoint: "http://liar".into(),
        answer: CosignedCheckpoint { checkpoint: signed.checkpoint().clone(), cosignatures: report.valid },
    };
    match cosign_quorum(&[&liar], WitnessQuorum::of(2), &signed, &store) {
        QuorumOutcome::Shortfall { got: 1, needed: 2, .. } => {}
        other => panic!("one witness with two keys met a quorum of 2: {other:?}"),
    }
}

/// R-WIT-10, R-NOTE-2 (attacker review 60): a log signs its checkpoints with
/// an Ed25519 note key (0x01); a cosignature key, ML-DSA-44 (0x06) or
/// Ed25519 (0x04), can verify no note signature here. Given as a log key it
/// was taken, and every checkpoint then read as altered or forged
/// (`InvalidSignature`) when it carried a line under that key, even the
/// key's own valid `subtree/v1` line (tlog-checkpoint lets a log sign with
/// one): a tamper claim made of a mistaken key. And `LogKey` called type
/// 0x06 "unknown". Now the key is refused by its type, named, saying what to
/// give instead.
#[test]
fn r_wit_10_a_cosignature_key_given_as_a_log_key_is_refused_by_its_type_not_read_as_tampering() {
    let text = "log.test/x\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n";
    for algorithm in [ALG_ML_DSA_44, ALG_COSIGNATURE_V1] {
        let signer = SignerKey::from_seed("log.test/x", algorithm, [5; 32]).unwrap();
        let key = signer.verifier_key();
        let err = LogKey::new(signer.clone()).unwrap_err();
        assert!(matches!(&err, KeyError::NotANoteKey { algorithm: a, .. } if *a == algorithm), "{err}");
        assert!(!err.to_string().contains("unknown"), "type 0x{algorithm:02x} called unknown: {err}");
        assert!(err.to_string().contains("0x01"), "says nothing of the note key to give: {err}");

        // A valid line by that very key on the checkpoint.
        let line = Cosigner::new(signer).unwrap().cosign(text, 1_700_000_000).unwrap();
        let note = witness::assemble(text, [&line]);
        // Or only the real log key's line.
        let real = SignerKey::from_seed("log.test/x", ALG_ED25519, [6; 32]).unwrap();
        let signed = witness::sign(text, &[&real]).unwrap();
        for (what, note) in [("its own line", note), ("only the real log key's line", signed)] {
            let err = witness::open(note.as_bytes(), &[&key]).unwrap_err();
            assert!(
                matches!(&err, witness::NoteError::NotANoteKey { name, algorithm: a } if name == "log.test/x" && *a == algorithm),
                "0x{algorithm:02x} log key, {what}: {err}"
            );
            assert!(err.to_string().contains("0x01"), "0x{algorithm:02x} log key, {what}: {err}");
        }
    }
}

/// R-WIT-10, attack: a `subtree/v1` line is matched to its key by name and
/// key id. The signed statement carries the key's own name, so a line taken
/// from one witness and relabelled under another name (or key id) still
/// verifies under the first key: it must be refused as not this key's line,
/// or one witness's subtree signature reads as another's.
#[test]
fn r_wit_10_a_subtree_line_relabelled_under_another_name_or_key_id_is_refused() {
    let v = vectors();
    let vector = &v["vectors"][0];
    let trusted = TrustedWitness::parse(s(&v["keys"][0], "vkey")).unwrap();
    let good = statement(&v, vector);
    let line = line_of(vector);
    assert!(trusted.check_subtree(&good, &line).is_ok());
    let renamed = NoteSignature { name: "witness.example/impostor".to_owned(), ..line.clone() };
    let rekeyed = NoteSignature { key_id: line.key_id ^ 1, ..line.clone() };
    for (what, relabelled) in [("name", renamed), ("key id", rekeyed)] {
        assert!(
            matches!(trusted.check_subtree(&good, &relabelled), Err(CosignatureError::BadSignature { .. })),
            "a line under another {what} was taken as this key's"
        );
    }
}
