//! R-WIT-10: our witness in ML-DSA-44 mode (tlog-cosignature v1.1.0-rc.1,
//! type 0x06), over real HTTP: `keygen --type ml-dsa-44` makes the key, the
//! server cosigns with it, `HttpWitness` and `WitnessReader` verify what it
//! returns and serves, and the ~3.3 kB lines fit every limit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use std::io::{BufRead, BufReader};

use support::*;
use witness::protocol::MAX_RESPONSE_BYTES;
use witness::{ALG_ML_DSA_44, Cosigner, HttpWitness, SignerKey, TrustedWitness, Witness, WitnessError, WitnessReader};

fn ml_dsa_cosigner(seed: u8, name: &str) -> Cosigner {
    Cosigner::new(SignerKey::from_seed(name, ALG_ML_DSA_44, [seed; 32]).unwrap()).unwrap()
}

#[test]
fn r_wit_10_our_witness_cosigns_with_ml_dsa_44_over_http() {
    let mut plane = Plane::new(1);
    plane.grow_to(5, u64::MAX);
    let dir = tempfile::tempdir().unwrap();
    let cosigner = ml_dsa_cosigner(9, "witness.test/mldsa");
    let vkey = cosigner.verifier_key();
    assert_eq!(vkey.algorithm(), ALG_ML_DSA_44);
    let server = start_witness(cosigner, vec![plane.log_config()], &dir.path().join("w.redb"));
    let client = HttpWitness::new(&server.url(), vec![TrustedWitness::new(vkey.clone()).unwrap()]).unwrap();

    let cosigned = client.add_checkpoint(&plane.signed(), &plane.log).unwrap();
    assert_eq!(cosigned.cosignatures.len(), 1);
    let line = &cosigned.cosignatures[0];
    assert_eq!((line.algorithm, line.public_key.as_slice()), (ALG_ML_DSA_44, vkey.public_key()));
    assert_eq!(line.timestamp, 1_700_000_000);
    let text = line.signature.to_line();
    assert!((3200..3400).contains(&text.len()), "an ML-DSA-44 line is about 3.3 kB: {}", text.len());

    // Growth: a consistency proof, a fresh cosignature.
    plane.grow_to(9, u64::MAX);
    let grown = client.add_checkpoint(&plane.signed(), &plane.log).unwrap();
    assert_eq!(grown.checkpoint.tree().size, 9);

    // The monitor endpoint serves the note with the ML-DSA-44 line; a reader
    // holding only the witness's 0x06 key verifies it.
    let reader = WitnessReader::new(&server.url(), vec![TrustedWitness::new(vkey.clone()).unwrap()]).unwrap();
    let latest = reader.latest(&plane.origin).unwrap();
    assert_eq!(latest.checkpoint.tree(), plane.log.tree());
    assert_eq!(latest.cosignatures[0].algorithm, ALG_ML_DSA_44);

    // Trusted by another ML-DSA-44 key of the same name: nothing counts.
    let stranger = ml_dsa_cosigner(10, "witness.test/mldsa").verifier_key();
    let other = HttpWitness::new(&server.url(), vec![TrustedWitness::new(stranger).unwrap()]).unwrap();
    assert!(matches!(
        other.add_checkpoint(&plane.signed(), &plane.log).unwrap_err(),
        WitnessError::NoTrustedCosignature { .. }
    ));
    server.shutdown();
}

/// Sizes: a quorum of ML-DSA-44 lines fits a response and a note; the limits
/// still refuse what is beyond them.
#[test]
fn r_wit_10_size_limits_admit_a_quorum_of_ml_dsa_lines() {
    let plane = {
        let mut plane = Plane::new(1);
        plane.grow_to(3, u64::MAX);
        plane
    };
    let signed = plane.signed();
    let text = signed.checkpoint().to_text();
    let lines: Vec<_> = (0..16u8)
        .map(|i| ml_dsa_cosigner(i, &format!("witness.test/quorum-{i}")).cosign(&text, 1_700_000_000).unwrap())
        .collect();
    let body: String = lines.iter().map(|line| line.to_line()).collect();
    assert!(body.len() < MAX_RESPONSE_BYTES, "16 ML-DSA-44 lines ({} bytes) fit a response", body.len());
    // A note carrying the log's signature and all sixteen opens, and counts sixteen.
    let note = signed.cosigned_note(lines.iter());
    assert!(note.len() < witness::note::MAX_NOTE_BYTES);
    let trusted: Vec<_> = (0..16u8)
        .map(|i| TrustedWitness::new(ml_dsa_cosigner(i, &format!("witness.test/quorum-{i}")).verifier_key()).unwrap())
        .collect();
    let signatures = witness::parse_signature_lines(&body).unwrap();
    assert_eq!(witness::verify_cosignatures(&text, &signatures, &trusted).unwrap().valid.len(), 16);
    // 101 lines are more than a note may carry.
    let many: String = std::iter::repeat_n(lines[0].to_line(), 101).collect();
    assert!(witness::parse_signature_lines(&many).is_err());
}

/// The binary: `keygen --type ml-dsa-44` writes an ML-DSA-44 skey and prints
/// its 0x06 vkey; `serve` with that key file cosigns with it.
#[test]
fn r_wit_10_the_binary_makes_and_serves_an_ml_dsa_key() {
    let mut plane = Plane::new(1);
    plane.grow_to(4, u64::MAX);
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("w.key");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["keygen", "--type", "ml-dsa-44", "--name", "witness.test/bin-mldsa", "--out"])
        .arg(&key_file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let vkey = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let trusted = TrustedWitness::parse(&vkey).unwrap();
    assert_eq!(trusted.verifier_key().algorithm(), ALG_ML_DSA_44);
    let skey = std::fs::read_to_string(&key_file).unwrap();
    assert!(!vkey.contains(skey.trim()) && !skey.contains(&vkey), "the vkey printed is not the secret");
    assert_eq!(SignerKey::parse(skey.trim()).unwrap().verifier_key().to_string(), vkey);

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["serve", "--listen", "127.0.0.1:0", "--state"])
        .arg(dir.path().join("w.redb"))
        .arg("--key-file")
        .arg(&key_file)
        .arg("--log")
        .arg(format!("{}={}", plane.origin, plane.key.verifier_key()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    let client = HttpWitness::new(&url, vec![trusted]).unwrap();
    let cosigned = client.add_checkpoint(&plane.signed(), &plane.log);
    let status = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(status.success());
    assert!(child.wait().unwrap().success());
    let cosigned = cosigned.unwrap();
    assert_eq!(cosigned.cosignatures[0].algorithm, ALG_ML_DSA_44);
    assert_eq!(cosigned.checkpoint.tree().size, 4);
}

/// The binary with two key files (`keygen` makes either type): it announces
/// both verifier keys and answers with both lines; the configuration file
/// takes the same two files as a list.
#[test]
fn r_wit_10_the_binary_serves_both_keys_from_its_key_files() {
    let mut plane = Plane::new(1);
    plane.grow_to(4, u64::MAX);
    let dir = tempfile::tempdir().unwrap();
    let keygen = |kind: &str, file: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
            .args(["keygen", "--type", kind, "--name", "witness.test/bin-both", "--out"])
            .arg(dir.path().join(file))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        TrustedWitness::parse(String::from_utf8(out.stdout).unwrap().trim()).unwrap()
    };
    let (ed, ml) = (keygen("ed25519", "ed.key"), keygen("ml-dsa-44", "ml.key"));
    let config = dir.path().join("witness.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\nstate = \"{}\"\nkey_file = [\"{}\", \"{}\"]\n\n[[log]]\norigin = \"{}\"\nkeys = [\"{}\"]\n",
            dir.path().join("w.redb").display(),
            dir.path().join("ed.key").display(),
            dir.path().join("ml.key").display(),
            plane.origin,
            plane.key.verifier_key()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains(&ed.verifier_key().to_string()) && line.contains(&ml.verifier_key().to_string()), "{line}");
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    let cosigned = HttpWitness::new(&url, vec![ed, ml]).unwrap().add_checkpoint(&plane.signed(), &plane.log);
    let status = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(status.success());
    assert!(child.wait().unwrap().success());
    let algorithms: Vec<u8> = cosigned.unwrap().cosignatures.iter().map(|c| c.algorithm).collect();
    assert_eq!(algorithms, [witness::ALG_COSIGNATURE_V1, ALG_ML_DSA_44]);
}

/// R-WIT-10 (noticed by review 20): a `subtree/v1` cosignature holds the
/// log's origin in at most 255 bytes, so an ML-DSA-44 witness listing a log
/// whose origin is longer started as if all were well and then answered 500
/// to every checkpoint of that log. It is refused at start, naming the log;
/// an Ed25519 witness (cosignature/v1 has no such bound) still serves it.
#[test]
fn r_wit_10_an_ml_dsa_witness_refuses_at_start_a_log_whose_origin_no_subtree_can_hold() {
    let dir = tempfile::tempdir().unwrap();
    let long = format!("witness.test/{}", "o".repeat(250));
    let key = SignerKey::from_seed(&long, witness::ALG_ED25519, [3; 32]).unwrap();
    let log = witness_server::LogConfig { origin: long.clone(), keys: vec![key.verifier_key()] };
    let config = |cosigner| witness_server::WitnessConfig {
        cosigner,
        extra_cosigners: Vec::new(),
        logs: vec![witness_server::LogConfig { origin: log.origin.clone(), keys: log.keys.clone() }],
        clock: std::sync::Arc::new(FixedClock(std::sync::atomic::AtomicU64::new(1_700_000_000))),
    };
    let refused = witness_server::WitnessServer::start(
        config(ml_dsa_cosigner(9, "witness.test/mldsa")),
        &dir.path().join("m.redb"),
        "127.0.0.1:0",
    );
    assert!(
        matches!(&refused, Err(witness_server::ServerError::Config(why)) if why.contains("255") && why.contains(&long)),
        "{refused:?}"
    );
    let ed25519 =
        Cosigner::new(SignerKey::from_seed("witness.test/ed", witness::ALG_COSIGNATURE_V1, [4; 32]).unwrap()).unwrap();
    witness_server::WitnessServer::start(config(ed25519), &dir.path().join("e.redb"), "127.0.0.1:0").unwrap();
}
