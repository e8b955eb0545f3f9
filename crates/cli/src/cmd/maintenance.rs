//! `agentplane repair` and `agentplane compact`: a redb file's upkeep;
//! `agentplane migrate`: a PostgreSQL store's schema.

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

/// `agentplane migrate`: makes or migrates a PostgreSQL store's schema.
pub fn migrate(cli: &Settings) -> Result<(), Failure> {
    match backend::migrate(&cli.store)? {
        Some((from, to)) => eprintln!("{}: schema migrated from version {from} to {to}", backend::display(&cli.store)),
        None => eprintln!("{}: the schema is this build's already", backend::display(&cli.store)),
    }
    Ok(())
}
