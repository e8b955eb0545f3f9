//! `agentplane repair` and `agentplane compact`: a redb file's upkeep;
//! `agentplane migrate`: a PostgreSQL store's schema, a redb file's layout.

use crate::backend;
use crate::config::Settings;
use crate::failure::Failure;

/// `agentplane repair`: repairs, in place, a store a crash left.
pub fn repair(cli: &Settings) -> Result<(), Failure> {
    let note = backend::repair(&cli.store)?;
    errln!(
        "{} opens cleanly{}",
        backend::display(&cli.store),
        note.map(|note| format!(" ({note})")).unwrap_or_default()
    );
    Ok(())
}

/// `agentplane compact`: gives a redb file's free pages back.
pub fn compact(cli: &Settings) -> Result<(), Failure> {
    let (before, after) = backend::compact(&cli.store)?;
    outln!("{}: {before} bytes before, {after} after", backend::display(&cli.store));
    Ok(())
}

/// `agentplane migrate`: makes or migrates a PostgreSQL store's schema, or
/// moves a redb file to this build's storage layout.
pub fn migrate(cli: &Settings) -> Result<(), Failure> {
    let store = backend::display(&cli.store);
    match backend::migrate(&cli.store)? {
        backend::Migrated::Schema(Some((from, to))) => {
            errln!("{store}: schema migrated from version {from} to {to}")
        }
        backend::Migrated::Schema(None) => errln!("{store}: the schema is this build's already"),
        backend::Migrated::Layout(migration) => match migration.backup {
            Some(backup) => errln!(
                "{store}: storage layout migrated from {} to {} ({} bytes before, {} after); the file as it was is \
                 kept in {} (a build of layout {} opens it): delete it once you no longer need the way back. Going \
                 back loses what is written from now on, and the plane never signs from that copy once it has \
                 signed more (its high-water mark refuses it)",
                migration.from,
                migration.to,
                migration.before,
                migration.after,
                backup.display(),
                migration.from
            ),
            None => errln!("{store}: the storage layout is this build's already ({})", migration.to),
        },
    }
    Ok(())
}
