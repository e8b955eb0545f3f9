//! R-WIT-10 end to end on the `agentplane` binary: a plane swept by one
//! Ed25519 witness and one ML-DSA-44 witness (our server, over real HTTP)
//! meets a quorum of 2; `init`, the configuration, `verify-export` and
//! `audit --witness-key` all take the 0x06 key.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::path::Path;

/// `agentplane verify-export run.export --log-key LOG_KEY EXTRA...` in `plane`.
fn verify_export(plane: &Path, log_key: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["verify-export", "run.export", "--log-key", log_key];
    args.extend_from_slice(extra);
    agentplane(plane, &args)
}

fn start_witness(
    plane: &Path,
    state: &Path,
    name: &str,
    algorithm: u8,
    seed: u8,
) -> (witness_server::WitnessServer, String) {
    let keys = json(plane, &["--tenant", "shop", "keys", "--json"]);
    let log = witness_server::LogConfig {
        origin: keys["origin"].as_str().unwrap().to_owned(),
        keys: vec![witness::VerifierKey::parse(keys["log_key"].as_str().unwrap()).unwrap()],
    };
    let cosigner = witness::Cosigner::new(witness::SignerKey::from_seed(name, algorithm, [seed; 32]).unwrap()).unwrap();
    let vkey = cosigner.verifier_key().to_string();
    let config = witness_server::WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner,
        logs: vec![log],
        clock: std::sync::Arc::new(witness_server::SystemClock),
    };
    let server =
        witness_server::WitnessServer::start(config, &state.join(format!("w{seed}.redb")), "127.0.0.1:0").unwrap();
    (server, vkey)
}

#[test]
fn r_wit_10_a_mixed_quorum_of_ed25519_and_ml_dsa_witnesses_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let plane = dir.path();
    ok(plane, &["init", "--tenant-name", "shop"]);
    let (ed, ed_vkey) = start_witness(plane, state.path(), "cli.test/ed", witness::ALG_COSIGNATURE_V1, 61);
    let (ml, ml_vkey) = start_witness(plane, state.path(), "cli.test/ml", witness::ALG_ML_DSA_44, 62);
    assert!(ml_vkey.len() > 1700, "a 0x06 vkey carries a 1312-byte key");
    let config = config_with_witnesses(plane, 2, &[(ed.url(), &ed_vkey), (ml.url(), &ml_vkey)]);
    std::fs::write(plane.join("agentplane.toml"), config).unwrap();
    ok(plane, &["--tenant", "shop", "demo"]);

    let out = agentplane(plane, &["sweep", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(report["outcome"], "met", "{report}");
    let cosigned = ok(plane, &["--tenant", "shop", "checkpoint", "--cosigned"]);
    assert_eq!(cosigned.matches("\n— ").count(), 3, "the log's signature and two cosignatures: {cosigned}");
    assert!(cosigned.contains("— cli.test/ml "), "{cosigned}");

    let run = json(plane, &["--tenant", "shop", "runs", "--outcome", "succeeded", "--json"])[0]["run"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(plane, &["--tenant", "shop", "export", &run, "-o", "run.export"]);
    let log_key = json(plane, &["--tenant", "shop", "keys", "--json"])["log_key"].as_str().unwrap().to_owned();
    let verify_export = |extra: &[&str]| verify_export(plane, &log_key, extra);
    let both = verify_export(&["--witness-key", &ed_vkey, "--witness-key", &ml_vkey, "--quorum", "2", "--json"]);
    assert_eq!(both.status.code(), Some(0), "{}", text(&both));
    let verified: serde_json::Value = serde_json::from_slice(&both.stdout).unwrap();
    assert_eq!(verified["cosignatures"], 2, "{verified}");
    let ml_only = verify_export(&["--witness-key", &ml_vkey, "--quorum", "1"]);
    assert_eq!(ml_only.status.code(), Some(0), "the ML-DSA-44 key alone: {}", text(&ml_only));
    let short = verify_export(&["--witness-key", &ml_vkey, "--quorum", "2"]);
    assert_eq!(short.status.code(), Some(1), "one key is not a quorum of 2: {}", text(&short));

    // The auditor anchors on what the ML-DSA-44 witness serves.
    let audit = agentplane(
        plane,
        &["--tenant", "shop", "audit", "--log-key", &log_key, "--witness", &ml.url(), "--witness-key", &ml_vkey],
    );
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
    // A witness key it does not hold: the anchor cannot be verified, the audit fails.
    let stranger = witness::SignerKey::from_seed("cli.test/ml", witness::ALG_ML_DSA_44, [63; 32]).unwrap();
    let refused = agentplane(
        plane,
        &[
            "--tenant",
            "shop",
            "audit",
            "--log-key",
            &log_key,
            "--witness",
            &ml.url(),
            "--witness-key",
            &stranger.verifier_key().to_string(),
        ],
    );
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
}

/// `init --witness URL=<0x06 vkey>` writes the key into the configuration; a
/// note-signing key (0x01) is still refused, naming its type.
#[test]
fn r_wit_10_init_accepts_an_ml_dsa_witness_key_and_refuses_a_note_key() {
    let ml = witness::SignerKey::from_seed("cli.test/init-ml", witness::ALG_ML_DSA_44, [64; 32]).unwrap();
    let vkey = ml.verifier_key().to_string();
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init", "--quorum", "1", "--witness", &format!("http://127.0.0.1:9={vkey}")]);
    let config = std::fs::read_to_string(dir.path().join("agentplane.toml")).unwrap();
    assert!(config.contains(&vkey), "{config}");

    let note_key = witness::SignerKey::from_seed("cli.test/note", witness::ALG_ED25519, [65; 32]).unwrap();
    let other = tempfile::tempdir().unwrap();
    let stderr =
        fails(other.path(), &["init", "--witness", &format!("http://127.0.0.1:9={}", note_key.verifier_key())], 2);
    assert!(stderr.contains("0x01"), "{stderr}");
}

/// R-WIT-10, R-AUD-10 (attacker review 16): one witness holding both keys
/// (Ed25519 cosignature/v1 and ML-DSA-44) returns both lines to one
/// submission, and the export carries both; but it is one witness toward
/// every quorum (it met a quorum of 2 alone, when quorums counted keys): a
/// plane configured for 2 is refused before anything is signed, one for 1
/// meets it, and `verify-export --quorum 2` trusting both keys fails.
#[test]
fn r_aud_10_one_witness_with_both_keys_is_one_witness_toward_a_quorum() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let (server, ed_vkey, ml_vkey) = shop_and_a_witness_with_both_keys(plane, state.path(), "cli.test/both", 71);
    let config = config_with_witnesses(plane, 2, &[(server.url(), &ed_vkey), (server.url(), &ml_vkey)]);
    std::fs::write(plane.join("agentplane.toml"), config.replace("quorum = 2", "quorum = 1")).unwrap();
    ok(plane, &["--tenant", "shop", "demo"]);
    std::fs::write(plane.join("agentplane.toml"), &config).unwrap();
    let refused = agentplane(plane, &["sweep", "--json"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(text(&refused).contains("1 distinct witnesses"), "{}", text(&refused));
    std::fs::write(plane.join("agentplane.toml"), config.replace("quorum = 2", "quorum = 1")).unwrap();

    let out = agentplane(plane, &["sweep", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(report["outcome"], "met", "{report}");
    let cosigned = ok(plane, &["--tenant", "shop", "checkpoint", "--cosigned"]);
    assert_eq!(cosigned.matches("\n— cli.test/both ").count(), 2, "both lines of the one witness: {cosigned}");

    let run = json(plane, &["--tenant", "shop", "runs", "--outcome", "succeeded", "--json"])[0]["run"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(plane, &["--tenant", "shop", "export", &run, "-o", "run.export"]);
    let log_key = json(plane, &["--tenant", "shop", "keys", "--json"])["log_key"].as_str().unwrap().to_owned();
    let both = verify_export(
        plane,
        &log_key,
        &["--witness-key", &ed_vkey, "--witness-key", &ml_vkey, "--quorum", "1", "--json"],
    );
    assert_eq!(both.status.code(), Some(0), "{}", text(&both));
    let verified: serde_json::Value = serde_json::from_slice(&both.stdout).unwrap();
    assert_eq!(verified["cosignatures"], 1, "two lines, one witness: {verified}");
    // The text says witnesses too, as the JSON counts them (it said "1
    // distinct trusted witness keys cosigned" of two keys' lines), and so
    // does the help of --quorum.
    let said = verify_export(plane, &log_key, &["--witness-key", &ed_vkey, "--witness-key", &ml_vkey]);
    assert!(text(&said).contains("witnesses: 1 trusted witness cosigned"), "{}", text(&said));
    let help = ok(plane, &["verify-export", "--help"]);
    assert!(help.contains("distinct trusted witnesses") && !help.contains("witness keys must"), "{help}");
    let two = verify_export(plane, &log_key, &["--witness-key", &ed_vkey, "--witness-key", &ml_vkey, "--quorum", "2"]);
    assert_eq!(two.status.code(), Some(1), "one witness's two keys met a quorum of 2: {}", text(&two));
    // The same key twice is one cosigner: a quorum of 2 is not met by it.
    let once = verify_export(plane, &log_key, &["--witness-key", &ml_vkey, "--witness-key", &ml_vkey, "--quorum", "2"]);
    assert_ne!(once.status.code(), Some(0), "one key listed twice met a quorum of 2: {}", text(&once));

    // One URL listed twice with one key is refused, naming it, before anything is sent.
    let config = std::fs::read_to_string(plane.join("agentplane.toml")).unwrap();
    std::fs::write(
        plane.join("agentplane.toml"),
        format!("{config}\n[[witness]]\nurl = \"{}\"\nkey = \"{ml_vkey}\"\n", server.url()),
    )
    .unwrap();
    let twice = agentplane(plane, &["sweep", "--json"]);
    assert_eq!(twice.status.code(), Some(2), "{}", text(&twice));
    assert!(text(&twice).contains("listed twice with one key"), "{}", text(&twice));
}

/// R-AUD-10, R-WIT-1: the count a met round reports is of witnesses, as the
/// quorum counts them. One witness's two keys listed under two URLs of it
/// (two clients, two answers) met a quorum of 1 as one witness, and the
/// round said `2 cosigned` (JSON `"cosigned": 2`): the answers, not the
/// witnesses, which a shortfall and an integrity round count.
#[test]
fn r_aud_10_a_met_round_reports_witnesses_not_answers() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let plane = dir.path();
    let (server, ed_vkey, ml_vkey) = shop_and_a_witness_with_both_keys(plane, state.path(), "cli.test/two-urls", 73);
    let by_name = format!("http://localhost:{}", server.addr().port());
    let config = config_with_witnesses(plane, 1, &[(server.url(), &ed_vkey), (by_name, &ml_vkey)]);
    std::fs::write(plane.join("agentplane.toml"), config).unwrap();
    ok(plane, &["--tenant", "shop", "demo"]);

    let out = agentplane(plane, &["sweep", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(report["outcome"], "met", "{report}");
    assert_eq!(report["cosigned"], 1, "two answers of one witness: {report}");
    let cosigned = ok(plane, &["--tenant", "shop", "checkpoint", "--cosigned"]);
    assert_eq!(cosigned.matches("\n— cli.test/two-urls ").count(), 2, "both lines of the one witness: {cosigned}");
}

/// A plane of tenant `shop` in `plane`, and a witness named `name` holding
/// an Ed25519 cosignature/v1 key (seed `seed`) and an ML-DSA-44 key (seed
/// `seed + 1`) that witnesses its log, its state in `state`: the server and
/// the two keys' vkeys.
fn shop_and_a_witness_with_both_keys(
    plane: &Path,
    state: &Path,
    name: &str,
    seed: u8,
) -> (witness_server::WitnessServer, String, String) {
    ok(plane, &["init", "--tenant-name", "shop"]);
    let keys = json(plane, &["--tenant", "shop", "keys", "--json"]);
    let log = witness_server::LogConfig {
        origin: keys["origin"].as_str().unwrap().to_owned(),
        keys: vec![witness::VerifierKey::parse(keys["log_key"].as_str().unwrap()).unwrap()],
    };
    let cosigner = |algorithm, seed| {
        witness::Cosigner::new(witness::SignerKey::from_seed(name, algorithm, [seed; 32]).unwrap()).unwrap()
    };
    let (ed, ml) = (cosigner(witness::ALG_COSIGNATURE_V1, seed), cosigner(witness::ALG_ML_DSA_44, seed + 1));
    let (ed_vkey, ml_vkey) = (ed.verifier_key().to_string(), ml.verifier_key().to_string());
    let config = witness_server::WitnessConfig {
        cosigner: ed,
        extra_cosigners: vec![ml],
        logs: vec![log],
        clock: std::sync::Arc::new(witness_server::SystemClock),
    };
    let server = witness_server::WitnessServer::start(config, &state.join("both.redb"), "127.0.0.1:0").unwrap();
    (server, ed_vkey, ml_vkey)
}

/// The plane's `agentplane.toml` with `quorum` and a `[[witness]]` entry
/// for each `(url, vkey)`, as text (not written).
fn config_with_witnesses(plane: &Path, quorum: usize, witnesses: &[(String, &String)]) -> String {
    let mut config = std::fs::read_to_string(plane.join("agentplane.toml"))
        .unwrap()
        .replace("quorum = 0", &format!("quorum = {quorum}"));
    for (url, vkey) in witnesses {
        config.push_str(&format!("\n[[witness]]\nurl = \"{url}\"\nkey = \"{vkey}\"\n"));
    }
    config
}
