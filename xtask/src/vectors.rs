//! The cross-implementation vector files: computed by our Go oracle
//! (`xtask/oracle`, which calls Go's reference libraries), committed, and read
//! by plain `cargo test`.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{run_command, step, workspace_root};

/// Write the files, or only compare.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Write,
    Check,
}

/// One vector file and the oracle subcommand that makes it.
struct VectorFile {
    subcommand: &'static str,
    path: &'static str,
}

const FILES: &[VectorFile] = &[
    VectorFile { subcommand: "tlog", path: "crates/tlog/tests/vectors/go.json" },
    VectorFile { subcommand: "witness", path: "crates/witness/tests/vectors/go.json" },
    VectorFile { subcommand: "mldsa", path: "crates/witness/tests/vectors/mldsa44.json" },
];

/// Makes sure a Go toolchain is on PATH, installing Debian's `golang-go` when
/// it is missing and we are allowed to (root, as on CI machines).
pub fn ensure_go() -> Result<()> {
    if go_version().is_some() {
        return Ok(());
    }
    let is_root = Command::new("id").arg("-u").output().is_ok_and(|out| out.stdout.starts_with(b"0"));
    if is_root && Command::new("apt-get").arg("--version").output().is_ok() {
        step("Go is missing: installing Debian's golang-go (apt-get)");
        run_command(Command::new("apt-get").args(["update", "-q"]))?;
        run_command(Command::new("apt-get").args(["install", "-y", "-q", "golang-go"]))?;
    }
    match go_version() {
        Some(version) => {
            eprintln!("xtask: using {version}");
            Ok(())
        }
        None => bail!(
            "the Go toolchain is missing, and the cross-implementation vector check needs it.\n\
             Install it (Debian: `apt-get install golang-go`, or Go from the module proxy's \
             golang.org/toolchain) and run again; the check does not pass without it"
        ),
    }
}

fn go_version() -> Option<String> {
    let out = Command::new("go").arg("version").output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn oracle_dir() -> PathBuf {
    workspace_root().join("xtask").join("oracle")
}

/// Builds the oracle into the target directory; go.sum pins every module.
pub fn build_oracle() -> Result<PathBuf> {
    ensure_go()?;
    let binary = workspace_root().join("target").join("oracle").join("oracle");
    step("building the Go oracle (xtask/oracle)");
    run_command(
        Command::new("go").args(["build", "-mod=readonly", "-o"]).arg(&binary).arg(".").current_dir(oracle_dir()),
    )
    .context("building xtask/oracle")?;
    Ok(binary)
}

fn oracle_output(binary: &PathBuf, subcommand: &str) -> Result<Vec<u8>> {
    let out = Command::new(binary).arg(subcommand).output().with_context(|| format!("running oracle {subcommand}"))?;
    if !out.status.success() {
        bail!("oracle {subcommand} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    // Parse to be sure the oracle wrote one JSON document.
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .with_context(|| format!("oracle {subcommand} wrote something that is not JSON"))?;
    Ok(out.stdout)
}

pub fn run(mode: Mode) -> Result<()> {
    let binary = build_oracle()?;
    let mut stale = Vec::new();
    for file in FILES {
        let fresh = oracle_output(&binary, file.subcommand)?;
        let path = workspace_root().join(file.path);
        let committed = std::fs::read(&path).unwrap_or_default();
        if committed == fresh {
            eprintln!("xtask: {} matches the oracle", file.path);
            continue;
        }
        match mode {
            Mode::Check => stale.push(file.path),
            Mode::Write => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                std::fs::write(&path, &fresh).with_context(|| format!("writing {}", file.path))?;
                eprintln!("xtask: wrote {}", file.path);
            }
        }
    }
    step("cross-checking signed notes and cosignatures with Go, both directions");
    crate::crosscheck::run(&binary)?;
    if !stale.is_empty() {
        bail!(
            "these vector files differ from what the Go oracle computes now: {}\n\
             Look at why (a changed oracle or library version?), then run `cargo xtask vectors` and commit",
            stale.join(", ")
        );
    }
    Ok(())
}
