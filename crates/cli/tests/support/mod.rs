//! Running the `agentplane` binary from a test: the one place the CLI test
//! files start it and read its answers.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Runs `agentplane ARGS` in `dir`.
pub fn agentplane(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentplane")).current_dir(dir).args(args).output().unwrap()
}

/// Standard output then standard error, as text.
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Runs it and expects success: its standard output.
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let out = agentplane(dir, args);
    assert!(out.status.success(), "agentplane {args:?} failed: {}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// Runs it and expects exit `code`: its standard error.
pub fn fails(dir: &Path, args: &[&str], code: i32) -> String {
    let out = agentplane(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "agentplane {args:?}: {stderr}");
    stderr
}

/// Runs it and expects success: its standard output as JSON.
pub fn json(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&ok(dir, args)).unwrap()
}

/// Runs it and expects exit `code`: its standard output as JSON (a report
/// or a failure object: `--json` answers on stdout whatever the exit).
pub fn json_exit(dir: &Path, args: &[&str], code: i32) -> Value {
    let out = agentplane(dir, args);
    assert_eq!(out.status.code(), Some(code), "agentplane {args:?}: {}", text(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|err| panic!("agentplane {args:?}: not JSON ({err}): {}", text(&out)))
}

/// Points the plane in `plane` at a fresh PostgreSQL database; its URL.
pub fn point_at_a_fresh_database(plane: &Path) -> String {
    let url = store_pg::testkit::fresh_database();
    let config = std::fs::read_to_string(plane.join("agentplane.toml")).unwrap();
    let configured = config.replace("store = \"agentplane.redb\"", &format!("store = \"{url}\""));
    assert_ne!(configured, config, "the plane's store is named in its configuration");
    std::fs::write(plane.join("agentplane.toml"), &configured).unwrap();
    url
}

/// A witness server a test plane is configured with, its verifier key and
/// its state folder.
pub struct Witness {
    pub server: witness_server::WitnessServer,
    pub vkey: String,
    pub state: tempfile::TempDir,
}

/// A witness server over HTTP watching the `shop` log of the plane in `dir`,
/// added to the plane's configuration (quorum 1).
pub fn witnessed_plane(dir: &Path) -> Witness {
    ok(dir, &["init", "--tenant-name", "shop"]);
    let keys = json(dir, &["--tenant", "shop", "keys", "--json"]);
    let log = witness_server::LogConfig {
        origin: keys["origin"].as_str().unwrap().to_owned(),
        keys: vec![witness::VerifierKey::parse(keys["log_key"].as_str().unwrap()).unwrap()],
    };
    let cosigner = witness::Cosigner::new(
        witness::SignerKey::from_seed("integrity.test/w0", witness::ALG_COSIGNATURE_V1, [77; 32]).unwrap(),
    )
    .unwrap();
    let vkey = cosigner.verifier_key().to_string();
    let state = tempfile::tempdir().unwrap();
    let config = witness_server::WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner,
        logs: vec![log],
        clock: std::sync::Arc::new(witness_server::SystemClock),
    };
    let server = witness_server::WitnessServer::start(config, &state.path().join("w.redb"), "127.0.0.1:0").unwrap();
    let mut config = std::fs::read_to_string(dir.join("agentplane.toml")).unwrap().replace("quorum = 0", "quorum = 1");
    config.push_str(&format!("\n[[witness]]\nurl = \"{}\"\nkey = \"{vkey}\"\n", server.url()));
    std::fs::write(dir.join("agentplane.toml"), config).unwrap();
    Witness { server, vkey, state }
}
