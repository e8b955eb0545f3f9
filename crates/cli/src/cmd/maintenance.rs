//! `agentplane repair` and `agentplane compact`: a redb file's upkeep.

use crate::backend;
use crate::config::Settings;
use crate::failure::Failure;

/// `agentplane repair`: repairs, in place, a store a crash left.
pub fn repair(cli: &Settings) -> Result<(), Failure> {
    backend::repair(&cli.store)?;
    eprintln!("{} opens cleanly", cli.store.display());
    Ok(())
}

/// `agentplane compact`: gives a redb file's free pages back.
pub fn compact(cli: &Settings) -> Result<(), Failure> {
    let (before, after) = backend::compact(&cli.store)?;
    outln!("{}: {before} bytes before, {after} after", cli.store.display());
    Ok(())
}
