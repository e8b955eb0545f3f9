//! A throwaway PostgreSQL server for the tests: installed from Debian's
//! `postgresql` where it is missing, initialised in a temporary directory,
//! run as the `postgres` user (PostgreSQL refuses root) on a free port, and
//! stopped when the guard is dropped, on failure as on success.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{run_command, step};

/// The environment variable the tests read the server's URL from.
pub const URL_VARIABLE: &str = "AGENTPLANE_PG_URL";

/// A running server; dropping it stops it.
pub struct PgServer {
    bin: PathBuf,
    data: PathBuf,
    url: String,
    options: String,
    _dir: tempfile::TempDir,
}

impl PgServer {
    /// What a test needs to reach the server and to stop and start it (the
    /// crash test): the URL, the data directory, `pg_ctl`, and whether
    /// `pg_ctl` must run as the `postgres` user.
    pub fn env(&self) -> [(&'static str, String); 5] {
        [
            ("AGENTPLANE_PG_OPTIONS", self.options.clone()),
            (URL_VARIABLE, self.url.clone()),
            ("AGENTPLANE_PG_DATA", self.data.display().to_string()),
            ("AGENTPLANE_PG_CTL", self.bin.join("pg_ctl").display().to_string()),
            ("AGENTPLANE_PG_AS_POSTGRES", if is_root() { "1".into() } else { "0".into() }),
        ]
    }

    /// Starts one.
    pub fn start() -> Result<Self> {
        let bin = bin_dir()?;
        let dir = tempfile::tempdir()?;
        let data = dir.path().join("data");
        let as_root = is_root();
        if as_root {
            run_command(Command::new("chown").arg("postgres:postgres").arg(dir.path()))?;
        }
        step("starting a throwaway PostgreSQL server");
        run_command(
            as_postgres(as_root, &bin.join("initdb"))
                .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "-D"])
                .arg(&data)
                .stdout(std::process::Stdio::null()),
        )
        .context("initdb")?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let options =
            format!("-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200", dir.path().display());
        run_command(
            as_postgres(as_root, &bin.join("pg_ctl"))
                .args(["-w", "-D"])
                .arg(&data)
                .arg("-l")
                .arg(data.join("server.log"))
                .args(["-o", &options, "start"])
                .stdout(std::process::Stdio::null()),
        )
        .context("pg_ctl start")?;
        let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        eprintln!("xtask: PostgreSQL at {url}");
        Ok(Self { bin, data, url, options, _dir: dir })
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = as_postgres(is_root(), &self.bin.join("pg_ctl"))
            .args(["-D"])
            .arg(&self.data)
            .args(["-m", "immediate", "stop"])
            .stdout(std::process::Stdio::null())
            .status();
    }
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|out| out.stdout.starts_with(b"0\n"))
}

/// `program` run as the `postgres` user when we are root (PostgreSQL refuses root).
fn as_postgres(as_root: bool, program: &Path) -> Command {
    if as_root {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// The directory of `initdb` and `pg_ctl`, installing Debian's `postgresql` when missing.
fn bin_dir() -> Result<PathBuf> {
    if let Some(dir) = find_bin_dir() {
        return Ok(dir);
    }
    if !is_root() {
        bail!("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); install Debian's postgresql");
    }
    step("PostgreSQL is missing: installing Debian's postgresql (apt-get)");
    run_command(Command::new("apt-get").args(["update", "-q"]))?;
    run_command(
        Command::new("apt-get").args(["install", "-y", "-q", "postgresql"]).env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    find_bin_dir().context("postgresql installed, but no /usr/lib/postgresql/*/bin/initdb")
}

fn find_bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| entry.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    versions.sort();
    versions.pop()
}
