//! Our witness over real HTTP holding two keys (Ed25519 cosignature/v1 and
//! ML-DSA-44 subtree/v1): every answer carries both lines. And its optional
//! `POST /sign-subtree` (C2SP tlog-witness HEAD): a subtree of a checkpoint
//! it cosigned is signed with timestamp 0 by its ML-DSA-44 key, after the
//! subtree consistency proof (draft-ietf-plants-merkle-tree-certs-03 section
//! 4.4) verifies; every other request gets the spec's status.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use support::*;
use tlog::{NodeHash, Subtree, SubtreeConsistencyProof, prove_subtree_consistency, subtree_hash};
use witness::protocol::{MAX_SIGN_SUBTREE_BYTES, SIGN_SUBTREE_PATH, SignSubtreeRequest};
use witness::{
    ALG_COSIGNATURE_V1, ALG_ML_DSA_44, Cosigner, HttpWitness, SignerKey, SubtreeStatement, TrustedWitness, Witness,
    WitnessReader,
};
use witness_server::{LogConfig, WitnessConfig, WitnessServer};

const NAME: &str = "witness.test/both";

fn key(algorithm: u8, seed: u8) -> Cosigner {
    Cosigner::new(SignerKey::from_seed(NAME, algorithm, [seed; 32]).unwrap()).unwrap()
}

fn start(cosigner: Cosigner, extra: Vec<Cosigner>, logs: Vec<LogConfig>, state: &Path) -> WitnessServer {
    let config = WitnessConfig {
        cosigner,
        extra_cosigners: extra,
        logs,
        clock: Arc::new(FixedClock(AtomicU64::new(1_700_000_000))),
    };
    WitnessServer::start(config, state, "127.0.0.1:0").unwrap()
}

fn trusted(cosigner: &Cosigner) -> TrustedWitness {
    TrustedWitness::new(cosigner.verifier_key()).unwrap()
}

#[test]
fn r_wit_10_a_witness_with_both_keys_returns_both_lines() {
    let mut plane = Plane::new(1);
    plane.grow_to(6, u64::MAX);
    let dir = tempfile::tempdir().unwrap();
    let (ed, ml) = (key(ALG_COSIGNATURE_V1, 11), key(ALG_ML_DSA_44, 12));
    let server = start(ed.clone(), vec![ml.clone()], vec![plane.log_config()], &dir.path().join("w.redb"));

    let both = HttpWitness::new(&server.url(), vec![trusted(&ed), trusted(&ml)]).unwrap();
    let cosigned = both.add_checkpoint(&plane.signed(), &plane.log).unwrap();
    let algorithms: Vec<u8> = cosigned.cosignatures.iter().map(|c| c.algorithm).collect();
    assert_eq!(algorithms, [ALG_COSIGNATURE_V1, ALG_ML_DSA_44], "the Ed25519 line first, then the ML-DSA-44 line");

    // A client trusting one of the keys counts that one and ignores the other line.
    plane.grow_to(8, u64::MAX);
    let ml_only = HttpWitness::new(&server.url(), vec![trusted(&ml)]).unwrap();
    let one = ml_only.add_checkpoint(&plane.signed(), &plane.log).unwrap();
    assert_eq!(one.cosignatures.len(), 1);
    assert_eq!(one.cosignatures[0].algorithm, ALG_ML_DSA_44);

    // The monitor endpoint serves both lines.
    let reader = WitnessReader::new(&server.url(), vec![trusted(&ed), trusted(&ml)]).unwrap();
    let latest = reader.latest(&plane.origin).unwrap();
    assert_eq!(latest.checkpoint.tree().size, 8);
    assert_eq!(latest.cosignatures.len(), 2);
}

#[test]
fn a_witness_refuses_one_key_given_twice() {
    let plane = Plane::new(1);
    let dir = tempfile::tempdir().unwrap();
    let ml = key(ALG_ML_DSA_44, 12);
    let config = WitnessConfig {
        cosigner: ml.clone(),
        extra_cosigners: vec![ml],
        logs: vec![plane.log_config()],
        clock: Arc::new(FixedClock(AtomicU64::new(1_700_000_000))),
    };
    let err = WitnessServer::start(config, &dir.path().join("w.redb"), "127.0.0.1:0").unwrap_err();
    assert!(err.to_string().contains("given twice"), "{err}");
}

/// A plane at 13 leaves cosigned by a witness holding both keys; the
/// cosigned note, as a log would send it back to sign-subtree.
struct Setup {
    plane: Plane,
    server: WitnessServer,
    ed: Cosigner,
    ml: Cosigner,
    note: String,
    _dir: tempfile::TempDir,
}

fn setup() -> Setup {
    let mut plane = Plane::new(1);
    plane.grow_to(13, u64::MAX);
    let dir = tempfile::tempdir().unwrap();
    let (ed, ml) = (key(ALG_COSIGNATURE_V1, 11), key(ALG_ML_DSA_44, 12));
    let server = start(ed.clone(), vec![ml.clone()], vec![plane.log_config()], &dir.path().join("w.redb"));
    let client = HttpWitness::new(&server.url(), vec![trusted(&ed), trusted(&ml)]).unwrap();
    let signed = plane.signed();
    let cosigned = client.add_checkpoint(&signed, &plane.log).unwrap();
    let note = signed.cosigned_note(cosigned.cosignatures.iter().map(|c| &c.signature));
    Setup { plane, server, ed, ml, note, _dir: dir }
}

impl Setup {
    fn request(&self, start: u64, end: u64) -> SignSubtreeRequest {
        let subtree = Subtree::new(start, end).unwrap();
        SignSubtreeRequest {
            subtree,
            hash: subtree_hash(&self.plane.log, subtree).unwrap(),
            proof: prove_subtree_consistency(&self.plane.log, subtree, 13).unwrap(),
            checkpoint_note: self.note.clone(),
        }
    }

    fn post(&self, body: impl Into<Vec<u8>>) -> (u16, String) {
        let response = reqwest::blocking::Client::new()
            .post(format!("{}{SIGN_SUBTREE_PATH}", self.server.url()))
            .body(body.into())
            .send()
            .unwrap();
        let status = response.status().as_u16();
        (status, response.text().unwrap())
    }
}

#[test]
fn sign_subtree_signs_a_proven_subtree_with_timestamp_zero() {
    let setup = setup();
    for (start, end) in [(8, 12), (0, 8), (12, 13), (0, 13), (0, 5)] {
        let request = setup.request(start, end);
        let (status, body) = setup.post(request.to_body());
        assert_eq!(status, 200, "[{start}, {end}): {body}");
        let lines = witness::parse_signature_lines(&body).unwrap();
        assert_eq!(lines.len(), 1, "only the ML-DSA-44 key signs subtrees: {body}");
        let statement = SubtreeStatement {
            cosigner_name: NAME.into(),
            timestamp: 0,
            origin: setup.plane.origin.clone(),
            start,
            end,
            hash: *request.hash.as_bytes(),
        };
        assert_eq!(trusted(&setup.ml).check_subtree(&statement, &lines[0]), Ok(0), "[{start}, {end})");
        // The signature covers the range: the same line does not verify for another one.
        let shifted = SubtreeStatement { end: end + 1, ..statement };
        assert!(trusted(&setup.ml).check_subtree(&shifted, &lines[0]).is_err());
    }
}

#[test]
fn sign_subtree_refuses_with_the_specs_statuses() {
    let setup = setup();
    let good = setup.request(8, 12);

    // 422: a proof that does not lead to the checkpoint's root, and a wrong subtree hash.
    let mut bad_proof = good.clone();
    let mut path = bad_proof.proof.path().to_vec();
    path[0] = NodeHash::from_hex(&"ab".repeat(32)).unwrap();
    bad_proof.proof = SubtreeConsistencyProof::new(path);
    assert_eq!(setup.post(bad_proof.to_body()).0, 422);
    let mut bad_hash = good.clone();
    bad_hash.hash = NodeHash::from_hex(&"cd".repeat(32)).unwrap();
    assert_eq!(setup.post(bad_hash.to_body()).0, 422);

    // 400: past the checkpoint, not a subtree, malformed, too large.
    let mut past = good.clone();
    past.subtree = Subtree::new(8, 16).unwrap();
    assert_eq!(setup.post(past.to_body()).0, 400);
    let not_a_subtree = good.to_body().replacen("subtree 8 12", "subtree 3 12", 1);
    assert_eq!(setup.post(not_a_subtree).0, 400);
    assert_eq!(setup.post(good.to_body().replacen("subtree 8 12", "subtree 08 12", 1)).0, 400);
    assert_eq!(setup.post("garbage").0, 400);
    assert_eq!(setup.post(vec![b'a'; MAX_SIGN_SUBTREE_BYTES + 1]).0, 400);

    // 403: the reference checkpoint without this witness's cosignature, or
    // with a cosignature of another key under its name.
    let mut bare = good.clone();
    bare.checkpoint_note = setup.plane.signed().note().to_owned();
    assert_eq!(setup.post(bare.to_body()).0, 403);
    let stranger = key(ALG_ML_DSA_44, 9);
    let forged_line = stranger.cosign(&setup.plane.signed().checkpoint().to_text(), 1_700_000_000).unwrap();
    let mut forged = good.clone();
    forged.checkpoint_note = setup.plane.signed().cosigned_note([&forged_line]);
    assert_eq!(setup.post(forged.to_body()).0, 403);

    // 404: an origin it does not watch.
    let mut other = Plane::new(2);
    other.origin = "agentplane.test/other".into();
    other.key =
        witness::LogKey::new(SignerKey::from_seed(&other.origin, witness::ALG_ED25519, [2; 32]).unwrap()).unwrap();
    other.grow_to(13, u64::MAX);
    let mut unknown = good.clone();
    unknown.checkpoint_note = other.signed().note().to_owned();
    assert_eq!(setup.post(unknown.to_body()).0, 404);

    // 405 for another method.
    let get = reqwest::blocking::get(format!("{}{SIGN_SUBTREE_PATH}", setup.server.url())).unwrap();
    assert_eq!(get.status().as_u16(), 405);
    // And the good request still passes after all that.
    assert_eq!(setup.post(good.to_body()).0, 200);
    let _ = &setup.ed;
}

#[test]
fn a_witness_without_an_ml_dsa_key_serves_no_sign_subtree() {
    let mut plane = Plane::new(1);
    plane.grow_to(4, u64::MAX);
    let dir = tempfile::tempdir().unwrap();
    let ed = key(ALG_COSIGNATURE_V1, 11);
    let server = start(ed.clone(), Vec::new(), vec![plane.log_config()], &dir.path().join("w.redb"));
    let signed = plane.signed();
    let cosigned = HttpWitness::new(&server.url(), vec![trusted(&ed)]).unwrap().add_checkpoint(&signed, &plane.log);
    let note = signed.cosigned_note(cosigned.unwrap().cosignatures.iter().map(|c| &c.signature));
    let subtree = Subtree::new(0, 4).unwrap();
    let request = SignSubtreeRequest {
        subtree,
        hash: subtree_hash(&plane.log, subtree).unwrap(),
        proof: prove_subtree_consistency(&plane.log, subtree, 4).unwrap(),
        checkpoint_note: note,
    };
    let response = reqwest::blocking::Client::new()
        .post(format!("{}{SIGN_SUBTREE_PATH}", server.url()))
        .body(request.to_body())
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
}
