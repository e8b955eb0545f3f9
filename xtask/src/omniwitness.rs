//! `cargo xtask omniwitness`: the plane's sweep against transparency-dev/witness's
//! omniwitness, a witness that is not ours, holding an ML-DSA-44 key.
//!
//! The binary is built from the Go module proxy at the pseudo-version pinned by
//! `xtask/omniwitness/go.mod` and `go.sum` (our files; no third-party code is in the
//! repository). The key is one of ours (`SignerKey`, type 0x06), written as the
//! skey omniwitness reads with `--private_key_path`; the logs it watches are the
//! plane's, given in the `--additional_logs` YAML. The cosigned checkpoints are
//! then verified by `agentplane verify-export --witness-key <0x06 vkey>` and by an
//! independent verifier: the Go oracle's `crosscheck` (Go's `sumdb/note` for the log
//! signature, transparency-dev/formats for the ML-DSA-44 cosignature).
//! Then sign-subtree: transparency-dev/witness's witness, served by our driver
//! `xtask/omniwitness/main.go` with subtree signing on, checks subtree
//! consistency proofs made by `tlog` and signs the subtrees; we verify its lines.

use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};
use tlog::{LeafHash, MemoryHashStore, NodeHash, Subtree, SubtreeConsistencyProof};
use witness::protocol::{SIGN_SUBTREE_PATH, SignSubtreeRequest};
use witness::{
    ALG_ED25519, ALG_ML_DSA_44, Checkpoint, HttpWitness, LogKey, Origin, SignerKey, SubtreeStatement, TrustedWitness,
    Witness,
};

use crate::litewitness::{Guard, free_port, output};
use crate::{run_command, step, target_dir, workspace_root};

/// The omniwitness module version `xtask/omniwitness/go.mod` pins (no tagged
/// version exists; this is the proxy's `latest` of 2026-07-20).
pub const PINNED: &str = "github.com/transparency-dev/witness v0.0.0-20260720115447-2e1c6971d19e";
const PACKAGE: &str = "github.com/transparency-dev/witness/cmd/omniwitness";
const WITNESS_NAME: &str = "omniwitness.test/witness";
/// A log of ours (not the plane's) for sign-subtree, whose leaves xtask holds.
const DIRECT_ORIGIN: &str = "omniwitness.test/direct";
/// What omniwitness logs once its listener is bound (the listener is opened
/// before the HTTP server goroutine starts), so no polling is needed.
const READY: &str = "HTTP server goroutine started";

/// Builds omniwitness and our driver `subtreewitness` (`xtask/omniwitness/main.go`)
/// into the target directory; returns both binaries and the seconds the build
/// took (a cold build compiles modernc.org/sqlite, the slow part; later ones
/// come from Go's build cache).
fn build() -> Result<(PathBuf, PathBuf, f64)> {
    crate::vectors::ensure_go()?;
    let out = target_dir().join("omniwitness");
    let (binary, driver) = (out.join("omniwitness"), out.join("subtreewitness"));
    step(&format!("building omniwitness and subtreewitness ({PINNED}, pinned by xtask/omniwitness/go.mod)"));
    let started = Instant::now();
    for (output, package) in [(&binary, PACKAGE), (&driver, ".")] {
        run_command(
            Command::new("go")
                .args(["build", "-mod=readonly", "-o"])
                .arg(output)
                .arg(package)
                .current_dir(workspace_root().join("xtask").join("omniwitness")),
        )
        .with_context(|| format!("building {package}"))?;
    }
    let seconds = started.elapsed().as_secs_f64();
    eprintln!("xtask: omniwitness and subtreewitness built in {seconds:.1} s");
    Ok((binary, driver, seconds))
}

/// Starts `binary` with `args`, reading its stderr until a line contains
/// `ready` (each binary logs it once its listener is bound, so no polling).
fn start_until(binary: &Path, args: &[String], ready: &str, label: &'static str) -> Result<Guard> {
    let mut child = Command::new(binary)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {label}"))?;
    let stderr = child.stderr.take().with_context(|| format!("{label} stderr"))?;
    let guard = Guard(child);
    let mut lines = BufReader::new(stderr).lines();
    let mut started = false;
    for line in lines.by_ref() {
        let line = line?;
        eprintln!("  {label}: {line}");
        if line.contains(ready) {
            started = true;
            break;
        }
    }
    ensure!(started, "{label} stopped before serving (its log is above)");
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            eprintln!("  {label}: {line}");
        }
    });
    Ok(guard)
}

/// Starts omniwitness on `port` with the key file and the logs file.
fn start(binary: &Path, dir: &Path, key_file: &Path, logs: &Path, port: u16) -> Result<Guard> {
    let args = [
        format!("--listen=127.0.0.1:{port}"),
        "--metrics_listen=".to_owned(),
        format!("--private_key_path={}", key_file.display()),
        format!("--additional_logs={}", logs.display()),
        format!("--db_file={}", dir.join("omniwitness.db").display()),
        "--logtostderr".to_owned(),
    ];
    start_until(binary, &args, READY, "omniwitness")
}

/// A plane of two tenants made by `agentplane init` with omniwitness as its witness.
struct Plane {
    agentplane: PathBuf,
    dir: PathBuf,
}

impl Plane {
    fn run(&self, args: &[&str]) -> Result<String> {
        output(Command::new(&self.agentplane).args(args).current_dir(&self.dir))
    }

    /// The exit code, stdout and stderr of a command that may fail.
    fn status(&self, args: &[&str]) -> Result<(Option<i32>, String, String)> {
        let out = Command::new(&self.agentplane).args(args).current_dir(&self.dir).output()?;
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        Ok((out.status.code(), text(&out.stdout), text(&out.stderr)))
    }

    fn sweep(&self) -> Result<Vec<String>> {
        let text = self.run(&["sweep", "--json"])?;
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .map(|report| {
                let report = report?;
                Ok(report["outcome"].as_str().unwrap_or_default().to_owned())
            })
            .collect()
    }
}

/// The YAML `--additional_logs` takes: one entry per origin with its log key.
fn logs_yaml(logs: &[(String, String)]) -> String {
    let mut yaml = String::from("Logs:\n");
    for (origin, key) in logs {
        yaml.push_str(&format!(
            "  - Origin: \"{origin}\"\n    PublicKey: \"{key}\"\n    URL: \"http://127.0.0.1:9/\"\n"
        ));
    }
    yaml
}

pub fn run() -> Result<()> {
    let (binary, driver, build_seconds) = build()?;
    let oracle = crate::vectors::build_oracle()?;
    step("building agentplane for a sweep against omniwitness");
    run_command(crate::cargo().args(["build", "--quiet", "-p", "agentplane-cli"]))?;

    let dir = tempfile::tempdir()?;
    let key = SignerKey::generate(WITNESS_NAME, ALG_ML_DSA_44)?;
    let vkey = key.verifier_key().to_string();
    let key_file = dir.path().join("witness.skey");
    std::fs::write(&key_file, key.to_skey())?;

    let port = free_port()?;
    let url = format!("http://127.0.0.1:{port}");
    let plane = Plane { agentplane: target_dir().join("debug").join("agentplane"), dir: dir.path().join("plane") };
    std::fs::create_dir_all(&plane.dir)?;
    plane.run(&[
        "init",
        "--tenant-name",
        "alpha",
        "--tenant-name",
        "beta",
        "--origin-base",
        "omniwitness.test/plane",
        "--witness",
        &format!("{url}={vkey}"),
    ])?;
    let mut logs = Vec::new();
    for tenant in ["alpha", "beta"] {
        let origin = plane.run(&["--tenant", tenant, "keys", "--print", "origin"])?.trim().to_owned();
        let log_key = plane.run(&["--tenant", tenant, "keys", "--print", "log-key"])?.trim().to_owned();
        logs.push((origin, log_key));
    }
    let direct_key = SignerKey::generate(DIRECT_ORIGIN, ALG_ED25519)?;
    logs.push((DIRECT_ORIGIN.to_owned(), direct_key.verifier_key().to_string()));
    let logs_file = dir.path().join("logs.yaml");
    std::fs::write(&logs_file, logs_yaml(&logs))?;

    step("the plane's sweep against omniwitness with an ML-DSA-44 key over HTTP on 127.0.0.1");
    let _omniwitness = start(&binary, dir.path(), &key_file, &logs_file, port)?;
    plane.run(&["--tenant", "alpha", "demo"])?;
    plane.run(&["--tenant", "beta", "demo"])?;
    let first = plane.sweep()?;
    ensure!(first == ["met", "met"], "agentplane sweep against omniwitness: {first:?}");
    // Growth: the next submission carries a consistency proof omniwitness checks.
    plane.run(&["--tenant", "alpha", "demo"])?;
    let second = plane.sweep()?;
    ensure!(second == ["met", "skipped"], "agentplane sweep after alpha grew: {second:?}");
    eprintln!("xtask: omniwitness (ML-DSA-44) cosigned both tenants' logs, then alpha's growth with a proof");

    let mut notes = Vec::new();
    let mut cosigned = Vec::new();
    for (tenant, (_, log_key)) in ["alpha", "beta"].iter().zip(&logs) {
        let note = plane.run(&["--tenant", tenant, "checkpoint", "--cosigned"])?;
        let line = note
            .lines()
            .find(|line| line.starts_with(&format!("— {WITNESS_NAME} ")))
            .with_context(|| format!("no omniwitness cosignature in {tenant}'s cosigned checkpoint: {note}"))?;
        let signature = witness::parse_signature_lines(&format!("{line}\n"))?;
        let bytes = signature.first().map_or(0, |s| s.signature.len());
        ensure!(bytes == 8 + 2420, "omniwitness's line carries {bytes} bytes, not an ML-DSA-44 timestamped signature");
        notes.push(json!({ "vkeys": [log_key], "note": note }));
        cosigned.push(json!({ "vkey": vkey, "note": note }));
        verify_export(&plane, tenant, log_key, &vkey)?;
    }
    // One cosigned note with a bit of the ML-DSA-44 signature changed: the
    // independent verifier must refuse it, or its approval means nothing.
    let tampered = tamper(cosigned.first().and_then(|c| c["note"].as_str()).context("no cosigned note")?)?;
    cosigned.push(json!({ "vkey": vkey, "note": tampered }));

    // omniwitness cannot enable sign-subtree at this version: our driver serves
    // its `witness` package with subtree signing on, with the same key and logs.
    let driver_port = free_port()?;
    let driver_url = format!("http://127.0.0.1:{driver_port}");
    let driver_args = [
        format!("-listen=127.0.0.1:{driver_port}"),
        format!("-private_key_path={}", key_file.display()),
        format!("-logs={}", logs_file.display()),
    ];
    let _driver = start_until(&driver, &driver_args, "listening", "subtreewitness")?;
    sign_subtree(&driver_url, &vkey, direct_key)?;

    step("the cosigned checkpoints through an independent verifier (Go sumdb/note and transparency-dev/formats)");
    let answer = crosscheck(&oracle, &json!({ "notes": notes, "cosigned": cosigned, "to_cosign": [] }))?;
    let note_errors = answer["note_errors"].as_array().context("note_errors")?;
    ensure!(
        note_errors.len() == 2 && note_errors.iter().all(|e| e.as_str() == Some("")),
        "Go's note.Open refused a log signature: {note_errors:?}"
    );
    let cosigned_errors = answer["cosigned_errors"].as_array().context("cosigned_errors")?;
    match cosigned_errors.as_slice() {
        [alpha, beta, tampered] => {
            ensure!(alpha.as_str() == Some("") && beta.as_str() == Some(""), "formats refused: {cosigned_errors:?}");
            ensure!(tampered.as_str() != Some(""), "formats accepted an omniwitness cosignature with a bit changed");
        }
        _ => bail!("formats judged {} cosigned notes of 3", cosigned_errors.len()),
    }
    eprintln!(
        "xtask: omniwitness: build {build_seconds:.1} s; 2 cosigned checkpoints verified by verify-export and by \
         Go/formats, the tampered one refused"
    );
    Ok(())
}

/// `verify-export` of one of the tenant's runs with omniwitness's 0x06 key:
/// a quorum of 1 passes, 2 fails, a stranger ML-DSA-44 key under the same name fails.
fn verify_export(plane: &Plane, tenant: &str, log_key: &str, vkey: &str) -> Result<()> {
    let runs: Value = serde_json::from_str(&plane.run(&["--tenant", tenant, "runs", "--json"])?)?;
    let run = runs[0]["run"].as_str().context("no run")?.to_owned();
    let file = format!("{tenant}.export");
    plane.run(&["--tenant", tenant, "export", &run, "-o", &file])?;
    let check = |key: &str, quorum: &str| {
        plane.status(&[
            "verify-export",
            &file,
            "--log-key",
            log_key,
            "--witness-key",
            key,
            "--quorum",
            quorum,
            "--json",
        ])
    };
    let (code, stdout, stderr) = check(vkey, "1")?;
    ensure!(code == Some(0), "verify-export --witness-key <omniwitness 0x06 key> on {tenant}: {stdout}{stderr}");
    let verified: Value = serde_json::from_str(&stdout).context("verify-export --json")?;
    ensure!(verified["cosignatures"] == 1 && verified["valid"] == true, "verify-export of {tenant}: {stdout}");
    let (code, stdout, stderr) = check(vkey, "2")?;
    ensure!(code == Some(1), "one key is not a quorum of 2, yet: {stdout}{stderr}");
    let stranger = SignerKey::generate(WITNESS_NAME, ALG_ML_DSA_44)?.verifier_key().to_string();
    let (code, stdout, stderr) = check(&stranger, "1")?;
    ensure!(code == Some(1), "a stranger ML-DSA-44 key was accepted: {stdout}{stderr}");
    // The verifier key parses as a trusted witness of type 0x06.
    ensure!(TrustedWitness::parse(vkey)?.verifier_key().algorithm() == ALG_ML_DSA_44, "not a 0x06 key");
    eprintln!(
        "xtask: verify-export of {tenant}'s run with omniwitness's 0x06 key: quorum 1 met, 2 not, a stranger refused"
    );
    Ok(())
}

/// The note with one base64 character of omniwitness's signature changed
/// (well inside the ML-DSA-44 signature, past the key id and timestamp).
fn tamper(note: &str) -> Result<String> {
    let line_start = note.find(&format!("— {WITNESS_NAME} ")).context("no omniwitness line")?;
    let position = line_start + "— ".len() + WITNESS_NAME.len() + 1 + 1000;
    let mut bytes = note.as_bytes().to_vec();
    let byte = bytes.get_mut(position).context("short signature line")?;
    *byte = if *byte == b'A' { b'B' } else { b'A' };
    Ok(String::from_utf8(bytes)?)
}

fn crosscheck(oracle: &Path, input: &Value) -> Result<Value> {
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
    serde_json::from_slice(&out.stdout).context("oracle crosscheck output")
}

/// transparency-dev/witness's `POST /sign-subtree`, served by our driver
/// `subtreewitness` (omniwitness's own command cannot serve it at the pinned
/// version; see `xtask/omniwitness/main.go`): a log of ours at 13 leaves is
/// cosigned, then subtrees of it are sent with proofs `tlog` makes; the witness
/// checks them with transparency-dev/merkle, and we check its timestamp-0
/// `subtree/v1` lines with `TrustedWitness::check_subtree`. A changed proof hash must be a 422,
/// a subtree past the checkpoint a 400, a checkpoint without its cosignature a 403.
fn sign_subtree(url: &str, vkey: &str, log_key: SignerKey) -> Result<()> {
    step("omniwitness's sign-subtree with subtree consistency proofs made by tlog");
    let trusted = TrustedWitness::parse(vkey)?;
    let mut leaves = MemoryHashStore::new();
    for i in 0..13u8 {
        leaves.append(LeafHash::of(&[i]));
    }
    let log = LogKey::new(log_key)?;
    let signed = log.sign(&Checkpoint::new(&Origin::new(DIRECT_ORIGIN)?, leaves.tree()))?;
    let cosigned = HttpWitness::new(url, vec![trusted.clone()])?.add_checkpoint(&signed, &leaves)?;
    let note = signed.cosigned_note(cosigned.cosignatures.iter().map(|c| &c.signature));
    let http = reqwest::blocking::Client::new();
    let post = |request: &SignSubtreeRequest| -> Result<(u16, String)> {
        let response = http.post(format!("{url}{SIGN_SUBTREE_PATH}")).body(request.to_body()).send()?;
        Ok((response.status().as_u16(), response.text()?))
    };
    let request = |start: u64, end: u64| -> Result<SignSubtreeRequest> {
        let subtree = Subtree::new(start, end)?;
        Ok(SignSubtreeRequest {
            subtree,
            hash: tlog::subtree_hash(&leaves, subtree)?,
            proof: tlog::prove_subtree_consistency(&leaves, subtree, 13)?,
            checkpoint_note: note.clone(),
        })
    };
    let ranges = [(8, 12), (0, 13), (12, 13), (0, 5), (4, 6)];
    for (start, end) in ranges {
        let request = request(start, end)?;
        let (status, body) = post(&request)?;
        ensure!(status == 200, "omniwitness sign-subtree [{start}, {end}): {status} {body}");
        let lines = witness::parse_signature_lines(&body)?;
        let statement = SubtreeStatement {
            cosigner_name: WITNESS_NAME.to_owned(),
            timestamp: 0,
            origin: DIRECT_ORIGIN.to_owned(),
            start,
            end,
            hash: *request.hash.as_bytes(),
        };
        match lines.as_slice() {
            [line] => {
                let timestamp = trusted.check_subtree(&statement, line)?;
                ensure!(timestamp == 0, "omniwitness's subtree line has timestamp {timestamp}, not 0");
            }
            _ => bail!("omniwitness answered {} lines to sign-subtree: {body}", lines.len()),
        }
    }
    let good = request(8, 12)?;
    let mut bad_proof = good.clone();
    let mut path = bad_proof.proof.path().to_vec();
    let first = path.first_mut().context("a proof for [8, 12) in 13 is not empty")?;
    *first = NodeHash::from_hex(&"ab".repeat(32))?;
    bad_proof.proof = SubtreeConsistencyProof::new(path);
    let mut past = good.clone();
    past.subtree = Subtree::new(8, 16)?;
    let mut bare = good.clone();
    bare.checkpoint_note = signed.note().to_owned();
    for (what, request, want) in [
        ("a changed proof hash", &bad_proof, 422),
        ("past the checkpoint", &past, 400),
        ("no cosignature of its own", &bare, 403),
    ] {
        let (status, body) = post(request)?;
        ensure!(status == want, "omniwitness sign-subtree, {what}: {status} (want {want}) {body}");
    }
    eprintln!(
        "xtask: transparency-dev/witness (subtreewitness) signed {} subtrees proved by tlog (each line verified here, timestamp 0) and refused a \
         changed proof (422), a subtree past the checkpoint (400) and a checkpoint it had not cosigned (403)",
        ranges.len()
    );
    Ok(())
}
