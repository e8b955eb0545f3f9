//! `cargo xtask crash --kills N [--backend redb|postgres|both]`: the crash
//! campaign (`agentplane-crash` in `xtask/bench`): a process with several
//! concurrent appenders, seals and checkpoints SIGKILLed at random moments
//! (on PostgreSQL the server is also stopped with `-m immediate`), the store
//! held after each kill to every acknowledged seal and every checkpoint seen.

use std::process::Command;

use anyhow::{Result, bail};

use crate::{cargo, postgres, run_command, step, target_dir};

pub fn run(kills: u64, backends: &[&str], release: bool, server: &postgres::PgServer) -> Result<()> {
    let profile = if release { "release" } else { "debug" };
    let mut build = cargo();
    build.args(["build", "--quiet", "-p", "agentplane-bench", "--bin", "agentplane-crash"]);
    if release {
        build.arg("--release");
    }
    run_command(&mut build)?;
    let binary = target_dir().join(profile).join("agentplane-crash");
    for backend in backends {
        if !matches!(*backend, "redb" | "postgres") {
            bail!("--backend redb, postgres or both, not {backend}");
        }
        step(&format!("crash campaign: {kills} kills on {backend}"));
        run_command(
            Command::new(&binary)
                .args(["campaign", "--kills", &kills.to_string(), "--backend", backend])
                .envs(server.env()),
        )?;
    }
    Ok(())
}
