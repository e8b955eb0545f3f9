//! The browser the console's tests drive: Debian's `chromium` and
//! `chromium-driver`, installed (as root, with apt-get) when missing, like
//! PostgreSQL and Go.

use std::path::Path;
use std::process::Command;

use anyhow::{Result, bail};

use crate::{run_command, step};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

pub fn ensure_chromium() -> Result<()> {
    let present = || Path::new(CHROMIUM).is_file() && Path::new(CHROMEDRIVER).is_file();
    if present() {
        return Ok(());
    }
    let is_root = Command::new("id").arg("-u").output().is_ok_and(|out| out.stdout.starts_with(b"0\n"));
    if !is_root || Command::new("apt-get").arg("--version").output().is_err() {
        bail!(
            "Chromium is missing ({CHROMIUM}, {CHROMEDRIVER}): the console's browser test needs it. \
             Install Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
        );
    }
    step("Chromium is missing: installing Debian's chromium and chromium-driver (apt-get)");
    run_command(Command::new("apt-get").args(["update", "-q"]))?;
    run_command(
        Command::new("apt-get")
            .args(["install", "-y", "-q", "chromium", "chromium-driver"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    if !present() {
        bail!("chromium installed, but {CHROMIUM} or {CHROMEDRIVER} is not there");
    }
    Ok(())
}
