//! R-AUD-10: a quorum counts distinct public keys. A cosignature/v1 signature
//! does not cover the witness's name, so one key listed under two names must
//! never count twice, and a trust list naming one key twice is refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use tlog::{LeafHash, MemoryHashStore};
use witness::{
    ALG_COSIGNATURE_V1, ALG_ED25519, Checkpoint, CosignedCheckpoint, Cosigner, HttpWitness, KeyError, LogHistory,
    LogKey, NoteSignature, Origin, QuorumOutcome, SignedCheckpoint, SignerKey, TrustedWitness, VerifierKey, Witness,
    WitnessError, WitnessIdentity, WitnessQuorum, WitnessReader, check_distinct_keys, cosign_quorum,
    verify_cosignatures,
};

const ORIGIN: &str = "distinct.test/log";

fn cosigner(name: &str, seed: u8) -> Cosigner {
    Cosigner::new(SignerKey::from_seed(name, ALG_COSIGNATURE_V1, [seed; 32]).unwrap()).unwrap()
}

/// The same public key as `cosigner`, trusted under another name.
fn alias(cosigner: &Cosigner, name: &str) -> TrustedWitness {
    let public: [u8; 32] = cosigner.verifier_key().public_key().try_into().unwrap();
    TrustedWitness::new(VerifierKey::ed25519(name, ALG_COSIGNATURE_V1, public).unwrap()).unwrap()
}

fn trusted(cosigner: &Cosigner) -> TrustedWitness {
    TrustedWitness::new(cosigner.verifier_key()).unwrap()
}

fn log() -> (MemoryHashStore, SignedCheckpoint) {
    let mut store = MemoryHashStore::new();
    for i in 0..3u8 {
        store.append(LeafHash::of(&[i]));
    }
    let key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [1; 32]).unwrap()).unwrap();
    let signed = key.sign(&Checkpoint::new(&Origin::new(ORIGIN).unwrap(), store.tree())).unwrap();
    (store, signed)
}

/// The line `cosigner` made, relabelled under `name` with that name's key id:
/// the signature bytes are unchanged, and still verify.
fn relabelled(line: &NoteSignature, as_key: &TrustedWitness) -> NoteSignature {
    NoteSignature { name: as_key.name().to_owned(), key_id: as_key.key_id(), signature: line.signature.clone() }
}

#[test]
fn r_aud_10_a_trust_list_naming_one_key_twice_is_refused_naming_both() {
    let w1 = cosigner("w1", 7);
    let err = check_distinct_keys(&[trusted(&w1), trusted(&cosigner("w2", 8)), alias(&w1, "w1-alias")]).unwrap_err();
    let KeyError::DuplicateWitnessKey { first, second } = &err else { panic!("{err:?}") };
    assert!(first.starts_with("w1+") && second.starts_with("w1-alias+"), "{err}");
    assert!(err.to_string().contains(first.as_str()) && err.to_string().contains(second.as_str()));
    assert!(check_distinct_keys(&[trusted(&w1), trusted(&cosigner("w2", 8))]).is_ok());

    // Refused at load by both clients, before any request.
    let list = vec![trusted(&w1), alias(&w1, "w1-alias")];
    assert!(matches!(
        WitnessReader::new("http://127.0.0.1:9", list.clone()).unwrap_err(),
        WitnessError::TrustList(KeyError::DuplicateWitnessKey { .. })
    ));
    assert!(matches!(
        HttpWitness::new("http://127.0.0.1:9", list).unwrap_err(),
        WitnessError::TrustList(KeyError::DuplicateWitnessKey { .. })
    ));
}

#[test]
fn r_aud_10_a_relabelled_cosignature_counts_once() {
    let (_, signed) = log();
    let text = signed.checkpoint().to_text();
    let w1 = cosigner("w1", 7);
    let line = w1.cosign(&text, 1_700_000_000).unwrap();
    let alias = alias(&w1, "w1-alias");
    let lines = vec![line.clone(), relabelled(&line, &alias)];
    // The relabelled line verifies on its own: the name is not signed.
    assert_eq!(verify_cosignatures(&text, &lines[1..], std::slice::from_ref(&alias)).unwrap().valid.len(), 1);
    // Trusting both names, the one key counts once.
    let report = verify_cosignatures(&text, &lines, &[trusted(&w1), alias]).unwrap();
    assert_eq!(report.valid.len(), 1, "{report:?}");
    assert_eq!(report.valid[0].public_key, w1.verifier_key().public_key());
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

#[test]
fn r_aud_10_cosign_quorum_counts_public_keys_not_names() {
    let (store, signed) = log();
    let text = signed.checkpoint().to_text();
    let w1 = cosigner("w1", 7);
    let alias = alias(&w1, "w1-alias");
    let line = w1.cosign(&text, 1_700_000_000).unwrap();
    let answer = |trust: TrustedWitness, line: NoteSignature| {
        let report = verify_cosignatures(&text, &[line], &[trust]).unwrap();
        CosignedCheckpoint { checkpoint: signed.checkpoint().clone(), cosignatures: report.valid }
    };
    // Two endpoints, two names, one key.
    let a = Canned { endpoint: "http://a".into(), answer: answer(trusted(&w1), line.clone()) };
    let b = Canned { endpoint: "http://b".into(), answer: answer(alias.clone(), relabelled(&line, &alias)) };
    assert_eq!(a.identities(), b.identities(), "one key is one identity, whatever its name");
    match cosign_quorum(&[&a, &b], WitnessQuorum::of(2), &signed, &store) {
        QuorumOutcome::Shortfall { got: 1, needed: 2, .. } => {}
        other => panic!("one key under two names met a quorum of 2: {other:?}"),
    }
    // A second key does count.
    let w2 = cosigner("w2", 8);
    let c =
        Canned { endpoint: "http://c".into(), answer: answer(trusted(&w2), w2.cosign(&text, 1_700_000_001).unwrap()) };
    assert!(matches!(cosign_quorum(&[&a, &b, &c], WitnessQuorum::of(2), &signed, &store), QuorumOutcome::Met { .. }));
}

/// Two Ed25519 cosigner seeds whose keys under [`IMPOSTOR_NAME`] share one
/// 4-byte key id (`546d2eca`): a collision of 32 bits takes about 2^16
/// keys, seconds of work, so a witness can make one with any name.
const IMPOSTOR_NAME: &str = "witness.test/w1";
const COLLIDING_SEEDS: [u32; 2] = [44_122, 46_625];

fn colliding(index: usize) -> Cosigner {
    let mut seed = [0u8; 32];
    seed[..4].copy_from_slice(&COLLIDING_SEEDS[index].to_be_bytes());
    Cosigner::new(SignerKey::from_seed(IMPOSTOR_NAME, ALG_COSIGNATURE_V1, seed).unwrap()).unwrap()
}

/// R-AUD-10, R-WIT-3: a line is matched to a trusted key by name and key id,
/// so two trusted keys with one name and one key id are ambiguous: a hostile
/// witness on the trust list that takes an honest witness's name and a key
/// id colliding with its key made the honest witness's valid cosignature be
/// checked against the impostor's key, and the whole note refused ("does not
/// verify": the honest witness blamed, verify-export and a witness anchor
/// failing on an honest plane). Such a trust list is refused at load, naming
/// both keys, as Go's `note.VerifierList` refuses the lookup.
#[test]
fn r_aud_10_two_trusted_keys_with_one_name_and_key_id_are_refused_as_ambiguous() {
    let (honest, impostor) = (colliding(0), colliding(1));
    assert_eq!(honest.verifier_key().key_id(), impostor.verifier_key().key_id(), "the seeds collide");
    assert_ne!(honest.verifier_key().public_key(), impostor.verifier_key().public_key());
    let (_, signed) = log();
    let text = signed.checkpoint().to_text();
    let line = honest.cosign(&text, 1_700_000_000).unwrap();
    assert_eq!(verify_cosignatures(&text, std::slice::from_ref(&line), &[trusted(&honest)]).unwrap().valid.len(), 1);

    let list = vec![trusted(&impostor), trusted(&honest)];
    // Trusted as given, the honest line was checked against the impostor's key.
    let err = check_distinct_keys(&list).expect_err("an ambiguous trust list is refused at load");
    assert!(matches!(err, KeyError::AmbiguousWitnessKey { .. }), "{err:?}");
    for key in [&impostor, &honest] {
        assert!(err.to_string().contains(&key.verifier_key().to_string()), "names both keys whole: {err}");
    }
    assert!(matches!(WitnessReader::new("http://127.0.0.1:9", list.clone()), Err(WitnessError::TrustList(_))));
    assert!(matches!(HttpWitness::new("http://127.0.0.1:9", list), Err(WitnessError::TrustList(_))));
}

/// The vkey text of `name` with the 32 public-key bytes `public` under
/// `algorithm`, with its key id computed: what anyone can write.
fn vkey_text(name: &str, algorithm: u8, public: &[u8; 32]) -> String {
    use base64::Engine as _;
    let mut encoded = vec![algorithm];
    encoded.extend_from_slice(public);
    let id = witness::key_id(name, algorithm, public);
    format!("{name}+{id:08x}+{}", base64::engine::general_purpose::STANDARD.encode(encoded))
}

/// The identity point's encoding: a public key of order 1.
const IDENTITY: [u8; 32] = {
    let mut bytes = [0; 32];
    bytes[0] = 1;
    bytes
};

/// R-AUD-10: an Ed25519 key of small order (the identity point, a torsion
/// point) is no one's key: under cofactorless RFC 8032 verification the
/// signature (R = identity, s = 0) verifies for every message, so anyone
/// could cosign as that "witness" (and sign checkpoints as that "log").
/// `TrustedWitness::parse` accepted it and `verify_cosignatures` counted a
/// line nobody signed; now such a key is refused where it is read
/// ([`KeyError::WeakKey`]), for note keys and cosignature keys alike.
#[test]
fn r_aud_10_a_small_order_ed25519_key_is_refused_where_it_is_read() {
    let name = "weak.test/w";
    // A point of order 8 as well as the identity (from the curve's torsion subgroup).
    let order_8: [u8; 32] = [
        0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f, 0x2a, 0x20,
        0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a,
    ];
    for public in [IDENTITY, order_8] {
        for algorithm in [ALG_COSIGNATURE_V1, ALG_ED25519] {
            let text = vkey_text(name, algorithm, &public);
            assert!(matches!(VerifierKey::parse(&text), Err(KeyError::WeakKey)), "{text} was read as a key");
            assert!(matches!(VerifierKey::ed25519(name, algorithm, public), Err(KeyError::WeakKey)));
        }
    }
    assert!(matches!(TrustedWitness::parse(&vkey_text(name, ALG_COSIGNATURE_V1, &IDENTITY)), Err(KeyError::WeakKey)));
    // An ordinary key still reads.
    let honest = cosigner("honest.test/w", 9).verifier_key().to_string();
    assert_eq!(VerifierKey::parse(&honest).unwrap().to_string(), honest);
}

/// R-WIT-1: a round counts only cosignatures of the checkpoint it
/// submitted. A witness client (any `Witness`) answering with a valid
/// cosignature of another checkpoint of the log (another root, another
/// size) met the quorum with it, and the plane kept that line beside its
/// own checkpoint as if it covered it (the next sweep then found the kept
/// note unverifiable and refused to sign). It is now a bad answer of that
/// witness, counted for nothing.
#[test]
fn r_wit_1_a_cosignature_of_another_checkpoint_never_counts_toward_the_round() {
    let (store, signed) = log();
    let w1 = cosigner("w1", 7);
    let other = {
        let mut tree = store.tree();
        tree.size -= 1;
        Checkpoint::new(&Origin::new(ORIGIN).unwrap(), tree)
    };
    let other_text = other.to_text();
    let report =
        verify_cosignatures(&other_text, &[w1.cosign(&other_text, 1_700_000_000).unwrap()], &[trusted(&w1)]).unwrap();
    let elsewhere = Canned {
        endpoint: "http://elsewhere".into(),
        answer: CosignedCheckpoint { checkpoint: other, cosignatures: report.valid },
    };
    match cosign_quorum(&[&elsewhere], WitnessQuorum::of(1), &signed, &store) {
        QuorumOutcome::Shortfall { got: 0, needed: 1, failures } => {
            assert!(matches!(&failures[..], [failure] if matches!(failure.error, WitnessError::BadAnswer { .. })));
            assert!(failures[0].error.to_string().contains("another checkpoint"), "{}", failures[0].error);
        }
        other => panic!("a cosignature of another checkpoint met the round: {other:?}"),
    }
}
