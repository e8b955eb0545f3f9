//! `cargo xtask`: the project's developer tasks.
//!
//! - `cargo xtask test`: everything CI runs (format, lints, every test, docs,
//!   and the cross-implementation vector check), installing what is missing.
//! - `cargo xtask vectors [--check]`: rebuilds the Go oracle and regenerates the
//!   committed vector files; `--check` fails on any difference instead.

// serde_json::Value indexing returns Null for a missing key; it does not panic.
#![allow(clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

mod bench;
mod bless;
mod browser;
mod crash;
mod crosscheck;
mod fuzz;
mod litewitness;
mod omniwitness;
mod postgres;
mod vectors;

const USAGE: &str = "usage: cargo xtask <test | vectors [--check]>

  test              format check, clippy -D warnings, every test, docs, vector check
  vectors           regenerate the vector files from the Go oracle (writes them)
  vectors --check   regenerate into memory and fail on any difference
  litewitness       build litewitness (Go) and run our witness client against it
  omniwitness       build transparency-dev/witness's omniwitness (Go) with an ML-DSA-44 key and sweep a plane against it
  bench [--quick] [--only GROUP]...
                    every performance figure beside its baseline, into target/bench/ (--quick: a smoke run)
  fuzz [--seconds N | --runs N] [TARGET...]
                    the libFuzzer targets (cargo-fuzz, nightly), seeded from the golden corpus; a report in target/fuzz/
  crash --kills N [--backend redb|postgres|both]
                    SIGKILL a process of concurrent appenders, seals and checkpoints N times (release build)
  soak [CASES]      every test in release, the property tests at PROPTEST_CASES=CASES (default 10000)
  bless             rewrite the golden corpus (tests/golden/) on purpose, printing what changed
  with-pg CMD...    run CMD with a throwaway PostgreSQL server in AGENTPLANE_PG_URL (e.g. cargo test -p agentplane-store-pg)";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["test"] => test(),
        ["vectors"] => vectors::run(vectors::Mode::Write),
        ["vectors", "--check"] => vectors::run(vectors::Mode::Check),
        ["litewitness"] => litewitness::run(),
        ["omniwitness"] => omniwitness::run(),
        ["bless"] => bless::run(),
        ["fuzz", rest @ ..] => fuzz_command(rest),
        ["crash", rest @ ..] => crash_command(rest),
        ["soak"] => soak("10000"),
        ["soak", cases] => soak(cases),
        ["bench", rest @ ..] => {
            let quick = rest.contains(&"--quick");
            let forwarded: Vec<&str> = rest.iter().copied().filter(|arg| *arg != "--quick").collect();
            bench::run(quick, &postgres::PgServer::start()?, &forwarded)
        }
        ["with-pg", command @ ..] if !command.is_empty() => with_pg(command),
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => bail!("{USAGE}"),
    }
}

/// The workspace root: the parent of this crate's manifest directory.
pub(crate) fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map_or_else(|| manifest.to_path_buf(), Path::to_path_buf)
}

/// Cargo's target directory for this workspace, as `cargo metadata` says
/// (so `CARGO_TARGET_DIR` and `build.target-dir` are honoured); read once.
/// Falls back to `CARGO_TARGET_DIR`, then `./target`, if cargo cannot say.
pub(crate) fn target_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let metadata = cargo()
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .current_dir(workspace_root())
            .stderr(std::process::Stdio::inherit())
            .output();
        let from_metadata = metadata.ok().filter(|out| out.status.success()).and_then(|out| {
            let value: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
            value["target_directory"].as_str().map(PathBuf::from)
        });
        from_metadata
            .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from))
            .unwrap_or_else(|| workspace_root().join("target"))
    })
    .clone()
}

pub(crate) fn step(what: &str) {
    eprintln!("\n==> {what}");
}

/// Runs a command (from the workspace root unless it names a directory) and
/// fails if it does.
pub(crate) fn run_command(command: &mut Command) -> Result<()> {
    if command.get_current_dir().is_none() {
        command.current_dir(workspace_root());
    }
    let status = command.status().with_context(|| format!("starting {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed with {status}");
    }
    Ok(())
}

pub(crate) fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
}

fn test() -> Result<()> {
    vectors::ensure_go()?;
    browser::ensure_chromium()?;

    step("cargo fmt --all --check");
    run_command(cargo().args(["fmt", "--all", "--check"]))?;

    step("cargo clippy --workspace --all-targets --all-features -- -D warnings");
    run_command(cargo().args(["clippy", "--workspace", "--all-targets", "--all-features", "--", "-D", "warnings"]))?;

    let server = postgres::PgServer::start()?;
    step("cargo test --workspace --all-features");
    let counts = run_tests(cargo().args(["test", "--workspace", "--all-features"]).envs(server.env()))?;

    step("cargo publish --dry-run -p agentplane-tlog (publishable on its own)");
    run_command(cargo().args(["publish", "--dry-run", "--quiet", "--allow-dirty", "-p", "agentplane-tlog"]))?;

    step("cargo doc --workspace --no-deps (warnings are errors)");
    run_command(
        cargo().args(["doc", "--workspace", "--no-deps", "--all-features"]).env("RUSTDOCFLAGS", "-D warnings"),
    )?;

    step("cargo xtask vectors --check (Go oracle)");
    vectors::run(vectors::Mode::Check)?;

    step("cargo xtask litewitness (a real witness that is not ours)");
    litewitness::run()?;

    step("cargo xtask omniwitness (transparency-dev/witness with an ML-DSA-44 key)");
    omniwitness::run()?;

    step("a short crash campaign (cargo xtask crash runs the long one)");
    crash::run(10, &["redb"], false, &server)?;
    crash::run(3, &["postgres"], false, &server)?;

    step("cargo xtask bench --quick (every figure still runs; nothing about speed is asserted)");
    bench::run(true, &server, &[])?;
    drop(server);

    eprintln!("\nxtask: all checks passed");
    // The closing line CI reads: the totals of every test binary above.
    println!("xtask: {} passed, {} failed", counts.passed, counts.failed);
    Ok(())
}

/// `crash --kills N [--backend redb|postgres|both]` (both by default).
fn crash_command(args: &[&str]) -> Result<()> {
    let (mut kills, mut backends) = (None, vec!["redb", "postgres"]);
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match (*arg, args.next()) {
            ("--kills", Some(n)) => kills = Some(n.parse().with_context(|| format!("--kills {n:?}"))?),
            ("--backend", Some(&"both")) => backends = vec!["redb", "postgres"],
            ("--backend", Some(backend)) => backends = vec![*backend],
            _ => bail!("usage: cargo xtask crash --kills N [--backend redb|postgres|both]"),
        }
    }
    crash::run(kills.context("--kills N")?, &backends, true, &postgres::PgServer::start()?)
}

/// `fuzz [--seconds N | --runs N] [TARGET...]` (60 seconds a target by default).
fn fuzz_command(args: &[&str]) -> Result<()> {
    let mut budget = fuzz::Budget::Seconds(60);
    let mut targets = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut number = |flag: &str| -> Result<u64> {
            let text = args.next().with_context(|| format!("{flag} needs a number"))?;
            text.parse().with_context(|| format!("{flag} {text:?} is not a number"))
        };
        match *arg {
            "--seconds" => budget = fuzz::Budget::Seconds(number("--seconds")?),
            "--runs" => budget = fuzz::Budget::Runs(number("--runs")?),
            target => targets.push(target),
        }
    }
    fuzz::run(budget, &targets)
}

/// The property tests at `cases` cases each (the tamper properties: every
/// single-byte edit, swap and removal detected and named; arbitrary input
/// never panics), with every other test, in release, with a PostgreSQL server.
fn soak(cases: &str) -> Result<()> {
    let count: u32 = cases.parse().with_context(|| format!("soak CASES must be a number, not {cases:?}"))?;
    let server = postgres::PgServer::start()?;
    step(&format!("cargo test --workspace --all-features --release with PROPTEST_CASES={count}"));
    let counts = run_tests(
        cargo()
            .args(["test", "--workspace", "--all-features", "--release"])
            .env("PROPTEST_CASES", count.to_string())
            .envs(server.env()),
    )?;
    println!("xtask: soak at {count} cases: {} passed, {} failed", counts.passed, counts.failed);
    Ok(())
}

/// Runs a command with a throwaway PostgreSQL server, stopped afterwards.
fn with_pg(command: &[&str]) -> Result<()> {
    let server = postgres::PgServer::start()?;
    let (program, args) = command.split_first().context("with-pg needs a command")?;
    run_command(Command::new(program).args(args).envs(server.env()))
}

/// Totals over every `test result:` line of a `cargo test` run.
#[derive(Default)]
struct TestCounts {
    passed: u64,
    failed: u64,
}

/// Runs `cargo test`, echoing its output, and adds up its result lines.
fn run_tests(command: &mut Command) -> Result<TestCounts> {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    command.current_dir(workspace_root()).stdout(Stdio::piped());
    let mut child = command.spawn().with_context(|| format!("starting {command:?}"))?;
    let mut counts = TestCounts::default();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            println!("{line}");
            if let Some(summary) = line.strip_prefix("test result: ") {
                counts.passed += count_before(summary, " passed");
                counts.failed += count_before(summary, " failed");
            }
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("{command:?} failed with {status} ({} passed, {} failed)", counts.passed, counts.failed);
    }
    if counts.passed == 0 {
        bail!("cargo test ran no test");
    }
    Ok(counts)
}

/// The number just before `label` in a summary like `ok. 3 passed; 0 failed; ...`.
fn count_before(summary: &str, label: &str) -> u64 {
    summary
        .split(';')
        .find_map(|part| {
            part.trim().trim_start_matches("ok. ").trim_start_matches("FAILED. ").strip_suffix(label.trim_start())
        })
        .and_then(|number| number.trim().parse().ok())
        .unwrap_or(0)
}
