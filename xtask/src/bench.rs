//! `cargo xtask bench [--quick]`: builds the benchmark program
//! (`xtask/bench`), the `agentplane` binary and the Go oracle (whose
//! `bench-tlog` is the Go baseline), starts a throwaway PostgreSQL server and
//! runs every figure beside its baseline. The table lands in `target/bench/`.
//! It measures the `dist` build (the one to ship: whole-program optimized);
//! `--quick` is a smoke run on the debug build, for `cargo xtask test`.

use std::process::Command;

use anyhow::Result;

use crate::{cargo, postgres, run_command, step, target_dir, vectors};

/// `forwarded` goes to the program as it is (`--only GROUP`).
pub fn run(quick: bool, server: &postgres::PgServer, forwarded: &[&str]) -> Result<()> {
    let oracle = vectors::build_oracle()?;
    let profile = if quick { "debug" } else { "dist" };
    step(&format!("building agentplane-bench and agentplane ({profile})"));
    let mut build = cargo();
    build.args(["build", "--quiet", "-p", "agentplane-bench", "-p", "agentplane-cli"]);
    if !quick {
        build.args(["--profile", "dist"]);
    }
    run_command(&mut build)?;
    let bin = target_dir().join(profile);
    step(&format!(
        "agentplane-bench{}",
        if quick { " --quick (a smoke run: it asserts nothing about speed)" } else { "" }
    ));
    let litewitness = crate::litewitness::start_for_bench(9)?;
    let logs = tempfile::NamedTempFile::new()?;
    std::fs::write(logs.path(), &litewitness.log_keys)?;
    let mut bench = Command::new(bin.join("agentplane-bench"));
    bench
        .arg("--oracle")
        .arg(&oracle)
        .arg("--agentplane")
        .arg(bin.join("agentplane"))
        .args(["--litewitness", &litewitness.url, "--litewitness-vkey", &litewitness.vkey])
        .arg("--litewitness-logs")
        .arg(logs.path())
        .arg("--out")
        .arg(target_dir().join("bench"))
        .envs(server.env());
    if quick {
        bench.arg("--quick");
    }
    run_command(bench.args(forwarded))
}
