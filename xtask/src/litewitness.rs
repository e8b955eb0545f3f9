//! Our `HttpWitness` against a witness that is not ours: litewitness
//! (filippo.io/torchwood v0.6.1, pinned by xtask/oracle/go.mod), built here,
//! run on 127.0.0.1 with an ssh-agent key and one log configured.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use tlog::{LeafHash, MemoryHashStore};
use witness::{
    ALG_COSIGNATURE_V1, ALG_ED25519, Checkpoint, HttpWitness, LogKey, SignedCheckpoint, SignerKey, TrustedWitness,
    VerifierKey, Witness, WitnessError, WitnessReader,
};

use crate::{run_command, step, target_dir, workspace_root};

const ORIGIN: &str = "litewitness.test/agentplane";
const WITNESS_NAME: &str = "litewitness.test/witness";

/// Kills a child process when dropped.
pub(crate) struct Guard(pub(crate) Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Stops the ssh-agent daemon when dropped.
struct Agent {
    pid: String,
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(&self.pid).status();
    }
}

fn build(out_dir: &Path) -> Result<()> {
    step("building litewitness and witnessctl (filippo.io/torchwood, pinned by xtask/oracle/go.mod)");
    run_command(
        Command::new("go")
            .args(["build", "-mod=readonly", "-o"])
            .arg(format!("{}/", out_dir.display()))
            .args(["filippo.io/torchwood/cmd/litewitness", "filippo.io/torchwood/cmd/witnessctl"])
            .current_dir(workspace_root().join("xtask").join("oracle")),
    )
}

pub(crate) fn output(command: &mut Command) -> Result<String> {
    let out = command.output().with_context(|| format!("starting {command:?}"))?;
    if !out.status.success() {
        bail!("{command:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ensure_ssh_tools() -> Result<()> {
    if Command::new("ssh-agent").arg("-h").output().is_ok() {
        return Ok(());
    }
    step("ssh-agent is missing (litewitness keeps its key in one): installing Debian's openssh-client");
    run_command(Command::new("apt-get").args(["update", "-q"]))?;
    run_command(Command::new("apt-get").args(["install", "-y", "-q", "openssh-client"]))
}

/// Starts a dedicated ssh-agent holding a fresh Ed25519 key; returns the
/// agent, its socket, the key's SHA256 fingerprint and its raw public key.
fn start_agent(dir: &Path) -> Result<(Agent, PathBuf, String, [u8; 32])> {
    let key = dir.join("litewitness.key");
    output(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-C", "litewitness", "-f"]).arg(&key))?;
    let socket = dir.join("agent.sock");
    // Without -D the agent daemonizes once its socket exists, so no waiting is needed.
    let started = output(Command::new("ssh-agent").arg("-s").arg("-a").arg(&socket))?;
    let pid = started
        .split(';')
        .find_map(|part| part.trim().strip_prefix("SSH_AGENT_PID="))
        .context("ssh-agent did not print its pid")?
        .to_owned();
    let agent = Agent { pid };
    output(Command::new("ssh-add").arg(&key).env("SSH_AUTH_SOCK", &socket))?;
    let fingerprint_line =
        output(Command::new("ssh-keygen").args(["-E", "sha256", "-l", "-f"]).arg(key.with_extension("key.pub")))?;
    let fingerprint =
        fingerprint_line.split_whitespace().nth(1).context("ssh-keygen -l printed no fingerprint")?.to_owned();
    let public_line = std::fs::read_to_string(key.with_extension("key.pub"))?;
    let blob = public_line.split_whitespace().nth(1).context("public key file")?;
    let blob = base64::engine::general_purpose::STANDARD.decode(blob)?;
    let raw: [u8; 32] = blob.get(blob.len().saturating_sub(32)..).context("short key blob")?.try_into()?;
    Ok((agent, socket, fingerprint, raw))
}

pub(crate) fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts litewitness and returns it with the verifier key it announces.
fn start_litewitness(bin: &Path, dir: &Path, socket: &Path, fingerprint: &str, port: u16) -> Result<(Guard, String)> {
    let mut child = Command::new(bin.join("litewitness"))
        .arg("-db")
        .arg(dir.join("litewitness.db"))
        .args(["-name", WITNESS_NAME, "-key", fingerprint, "-ssh-agent"])
        .arg(socket)
        .args(["-listen", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::piped())
        .spawn()
        .context("starting litewitness")?;
    let stderr = child.stderr.take().context("litewitness stderr")?;
    let guard = Guard(child);
    let mut vkey = None;
    let mut lines = BufReader::new(stderr).lines();
    for line in lines.by_ref() {
        let line = line?;
        eprintln!("  litewitness: {line}");
        if let Some(rest) = line.split("vkey=").nth(1) {
            vkey = Some(rest.trim().trim_matches('"').to_owned());
        }
        if line.contains("listening") {
            break;
        }
    }
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            eprintln!("  litewitness: {line}");
        }
    });
    // It announces before its listener is bound: connect until it answers.
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        ensure!(Instant::now() < deadline, "litewitness did not start listening on port {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((guard, vkey.context("litewitness did not announce its verifier key")?))
}

/// A litewitness serving for `cargo xtask bench`: stopped (with its agent
/// and directory) on drop.
pub struct Running {
    _litewitness: Guard,
    _agent: Agent,
    _dir: tempfile::TempDir,
    pub url: String,
    pub vkey: String,
    /// The skeys of the logs it trusts, one a line.
    pub log_keys: String,
}

/// Builds and starts litewitness with `logs` logs (fresh keys), for the benchmark.
pub fn start_for_bench(logs: usize) -> Result<Running> {
    crate::vectors::ensure_go()?;
    ensure_ssh_tools()?;
    let bin = target_dir().join("oracle");
    build(&bin)?;
    let dir = tempfile::tempdir()?;
    let (agent, socket, fingerprint, _) = start_agent(dir.path())?;
    let db = dir.path().join("litewitness.db");
    let mut log_keys = String::new();
    for n in 0..logs {
        let origin = format!("bench.agentplane.test/log{n}");
        let key = SignerKey::generate(&origin, ALG_ED25519)?;
        output(Command::new(bin.join("witnessctl")).args(["add-log", "-db"]).arg(&db).args(["-origin", &origin]))?;
        output(Command::new(bin.join("witnessctl")).args(["add-key", "-db"]).arg(&db).args([
            "-origin",
            &origin,
            "-key",
            &key.verifier_key().to_string(),
        ]))?;
        log_keys.push_str(&key.to_skey());
        log_keys.push('\n');
    }
    let port = free_port()?;
    let (guard, vkey) = start_litewitness(&bin, dir.path(), &socket, &fingerprint, port)?;
    Ok(Running {
        _litewitness: guard,
        _agent: agent,
        _dir: dir,
        url: format!("http://127.0.0.1:{port}"),
        vkey,
        log_keys,
    })
}

struct Log {
    leaves: MemoryHashStore,
    key: LogKey,
    label: &'static str,
}

impl Log {
    fn new(key: &SignerKey, label: &'static str) -> Result<Self> {
        Ok(Self { leaves: MemoryHashStore::new(), key: LogKey::new(key.clone())?, label })
    }

    fn grow_to(&mut self, size: u64, shared: u64) {
        while self.leaves.size() < size {
            let i = self.leaves.size();
            let data = if i < shared { format!("run {i}") } else { format!("run {i} {}", self.label) };
            self.leaves.append(LeafHash::of(data.as_bytes()));
        }
    }

    fn signed(&self, origin: &str) -> Result<SignedCheckpoint> {
        Ok(self.key.sign(&Checkpoint::new(&witness::Origin::new(origin)?, self.leaves.tree()))?)
    }
}

pub fn run() -> Result<()> {
    crate::vectors::ensure_go()?;
    ensure_ssh_tools()?;
    let bin = target_dir().join("oracle");
    build(&bin)?;
    step("talking to litewitness over HTTP on 127.0.0.1");
    let dir = tempfile::tempdir()?;
    let (_agent, socket, fingerprint, raw_public) = start_agent(dir.path())?;

    let log_signer = SignerKey::generate(ORIGIN, ALG_ED25519)?;
    let db = dir.path().join("litewitness.db");
    output(Command::new(bin.join("witnessctl")).args(["add-log", "-db"]).arg(&db).args(["-origin", ORIGIN]))?;
    output(Command::new(bin.join("witnessctl")).args(["add-key", "-db"]).arg(&db).args([
        "-origin",
        ORIGIN,
        "-key",
        &log_signer.verifier_key().to_string(),
    ]))?;
    let port = free_port()?;
    let url = format!("http://127.0.0.1:{port}");
    // The cosignature key we derive from the ssh public key must be the one it announces.
    let derived = VerifierKey::ed25519(WITNESS_NAME, ALG_COSIGNATURE_V1, raw_public)?;
    let plane = Plane::init(dir.path(), &url, &derived.to_string(), &bin, &db)?;
    let (_litewitness, announced) = start_litewitness(&bin, dir.path(), &socket, &fingerprint, port)?;

    ensure!(derived.to_string() == announced, "litewitness announces {announced}, we derive {derived}");
    let trusted = TrustedWitness::parse(&announced)?;
    let client = HttpWitness::new(&url, vec![trusted.clone()])?;
    plane.sweep_twice()?;

    let mut honest = Log::new(&log_signer, "honest")?;
    honest.grow_to(3, u64::MAX);
    let first = client.add_checkpoint(&honest.signed(ORIGIN)?, &honest.leaves)?;
    ensure!(first.cosignatures.len() == 1 && first.cosignatures[0].timestamp > 0, "first cosignature: {first:?}");
    eprintln!("xtask: litewitness cosigned size 3 (first submission, old 0)");

    honest.grow_to(70, u64::MAX);
    client.add_checkpoint(&honest.signed(ORIGIN)?, &honest.leaves)?;
    client.add_checkpoint(&honest.signed(ORIGIN)?, &honest.leaves)?;
    eprintln!("xtask: litewitness cosigned growth 3 -> 70 and the same checkpoint twice");

    honest.grow_to(100, u64::MAX);
    let fresh = HttpWitness::new(&url, vec![trusted.clone()])?;
    fresh.add_checkpoint(&honest.signed(ORIGIN)?, &honest.leaves)?;
    eprintln!("xtask: a client starting from old 0 got 409 (size 70), rebuilt its proof, and was cosigned at 100");

    let mut fork = Log::new(&log_signer, "fork")?;
    fork.grow_to(100, 50);
    expect(client.add_checkpoint(&fork.signed(ORIGIN)?, &fork.leaves), "fork at equal size", |err| {
        matches!(err, WitnessError::Fork { size: 100, .. })
    })?;
    fork.grow_to(120, 50);
    expect(client.add_checkpoint(&fork.signed(ORIGIN)?, &fork.leaves), "history moved, on growth", |err| {
        matches!(err, WitnessError::Inconsistent { old_size: 100, new_size: 120, .. })
    })?;
    let mut short = Log::new(&log_signer, "honest")?;
    short.grow_to(50, u64::MAX);
    expect(fresh_client(&url, &trusted)?.add_checkpoint(&short.signed(ORIGIN)?, &short.leaves), "shrink", |err| {
        matches!(err, WitnessError::Rollback { witness_size: 100, size: 50, .. })
    })?;
    let mut unknown = Log::new(&SignerKey::generate("litewitness.test/unknown", ALG_ED25519)?, "x")?;
    unknown.grow_to(2, u64::MAX);
    expect(
        client.add_checkpoint(&unknown.signed("litewitness.test/unknown")?, &unknown.leaves),
        "unknown origin (litewitness answers 403, not the spec's 404)",
        |err| matches!(err, WitnessError::Forbidden { .. }),
    )?;
    let mut impostor = Log::new(&SignerKey::generate(ORIGIN, ALG_ED25519)?, "impostor")?;
    impostor.grow_to(101, 100);
    expect(client.add_checkpoint(&impostor.signed(ORIGIN)?, &impostor.leaves), "untrusted log key", |err| {
        matches!(err, WitnessError::Forbidden { .. })
    })?;

    // Extension lines: the spec's cosignature covers them. The June 2025
    // torchwood snapshot the spec digest read signed only the first three
    // lines; v0.6.1 signs the whole body, and this pins that.
    honest.grow_to(101, u64::MAX);
    let extended = Checkpoint::with_extensions(
        &witness::Origin::new(ORIGIN)?,
        honest.leaves.tree(),
        vec!["extension line".into()],
    )?;
    let outcome = client.add_checkpoint(&honest.key.sign(&extended)?, &honest.leaves);
    eprintln!("xtask: litewitness with an extension line: {}", describe(&outcome));
    ensure!(outcome.is_ok(), "litewitness's cosignature over a checkpoint with an extension line: {outcome:?}");

    let reader = WitnessReader::new(&url, vec![trusted])?;
    let monitor = reader.latest(ORIGIN);
    eprintln!("xtask: litewitness monitor endpoint: {}", describe(&monitor));
    ensure!(monitor.is_err(), "litewitness v0.6.1 serves no monitor endpoint; if it now does, update the README");
    Ok(())
}

/// A plane of two tenants made by `agentplane init`, pointed at litewitness,
/// whose logs litewitness is configured to watch.
struct Plane {
    agentplane: PathBuf,
    dir: PathBuf,
}

impl Plane {
    fn init(dir: &Path, url: &str, witness_vkey: &str, bin: &Path, db: &Path) -> Result<Self> {
        step("building agentplane for a sweep against litewitness");
        run_command(Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())).args([
            "build",
            "--quiet",
            "-p",
            "agentplane-cli",
        ]))?;
        let plane = Self { agentplane: target_dir().join("debug").join("agentplane"), dir: dir.join("plane") };
        std::fs::create_dir_all(&plane.dir)?;
        plane.run(&[
            "init",
            "--tenant-name",
            "alpha",
            "--tenant-name",
            "beta",
            "--origin-base",
            "litewitness.test/plane",
            "--witness",
            &format!("{url}={witness_vkey}"),
        ])?;
        for tenant in ["alpha", "beta"] {
            let origin = plane.run(&["--tenant", tenant, "keys", "--print", "origin"])?.trim().to_owned();
            let key = plane.run(&["--tenant", tenant, "keys", "--print", "log-key"])?.trim().to_owned();
            output(Command::new(bin.join("witnessctl")).args(["add-log", "-db"]).arg(db).args(["-origin", &origin]))?;
            output(
                Command::new(bin.join("witnessctl"))
                    .args(["add-key", "-db"])
                    .arg(db)
                    .args(["-origin", &origin, "-key", &key]),
            )?;
        }
        Ok(plane)
    }

    fn run(&self, args: &[&str]) -> Result<String> {
        output(Command::new(&self.agentplane).args(args).current_dir(&self.dir))
    }

    /// Two tenants' demo runs, swept: both met by litewitness; swept again,
    /// both skipped (no growth).
    fn sweep_twice(&self) -> Result<()> {
        self.run(&["--tenant", "alpha", "demo"])?;
        self.run(&["--tenant", "beta", "demo"])?;
        let outcomes = |text: String| -> Result<Vec<String>> {
            serde_json::Deserializer::from_str(&text)
                .into_iter::<serde_json::Value>()
                .map(|report| Ok(report?["outcome"].as_str().unwrap_or_default().to_owned()))
                .collect()
        };
        let first = outcomes(self.run(&["sweep", "--json"])?)?;
        ensure!(first == ["met", "met"], "agentplane sweep against litewitness: {first:?}");
        let second = outcomes(self.run(&["sweep", "--json"])?)?;
        ensure!(second == ["skipped", "skipped"], "agentplane sweep again: {second:?}");
        eprintln!("xtask: agentplane sweep: litewitness cosigned both tenants' logs; the next sweep skipped both");
        Ok(())
    }
}

fn fresh_client(url: &str, trusted: &TrustedWitness) -> Result<HttpWitness> {
    Ok(HttpWitness::new(url, vec![trusted.clone()])?)
}

fn describe<T>(outcome: &Result<T, WitnessError>) -> String {
    match outcome {
        Ok(_) => "cosigned".into(),
        Err(err) => err.to_string(),
    }
}

fn expect<T>(outcome: Result<T, WitnessError>, what: &str, want: impl Fn(&WitnessError) -> bool) -> Result<()> {
    match outcome {
        Err(err) if want(&err) => {
            eprintln!("xtask: litewitness refused {what}: {err}");
            Ok(())
        }
        Err(err) => bail!("litewitness, {what}: unexpected answer {err:?}"),
        Ok(_) => bail!("litewitness cosigned {what}"),
    }
}
