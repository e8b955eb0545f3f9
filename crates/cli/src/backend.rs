//! Opening a backend: a redb file or a PostgreSQL URL, read-only, for
//! signing, or new; and the maintenance of a redb file (repair, compact).
//! The one module that names the backends.

use std::path::Path;
use std::sync::Arc;

use journal_core::Store;
use store_redb::{ReadOnlyOpening, RedbStore};

use crate::failure::Failure;

/// The PostgreSQL URL a `--store` names, if it names one.
pub fn postgres_url(store: &Path) -> Option<&str> {
    store.to_str().filter(|text| text.starts_with("postgres://") || text.starts_with("postgresql://"))
}

/// The refusal for a store file that is not there (never created by a read).
pub fn no_store(path: &Path) -> Failure {
    Failure::Usage(format!("no store at {} (run `agentplane demo` to make one, or pass --store)", path.display()))
}

fn open_postgres(url: &str) -> Result<Arc<dyn Store>, Failure> {
    Ok(Arc::new(store_pg::PgStore::open(url)?))
}

fn not_a_store(err: impl std::fmt::Display) -> Failure {
    Failure::Io(format!("{err}; the file is not a readable agentplane store (it was left untouched)"))
}

/// Opens an existing store without ever writing to it. A file a crash left
/// needing a repair is read through a repaired private copy, and said so.
/// A PostgreSQL store is opened as any other client does.
pub fn open_existing(path: &Path) -> Result<Arc<dyn Store>, Failure> {
    if let Some(url) = postgres_url(path) {
        return open_postgres(url);
    }
    if !path.is_file() {
        return Err(no_store(path));
    }
    let (store, opening) = RedbStore::open_read_only_or_repaired_copy(path).map_err(not_a_store)?;
    if opening == ReadOnlyOpening::RepairedCopy {
        eprintln!(
            "agentplane: {} was not closed cleanly (a crash) and needs a repair; reading a repaired private copy, \
             the file itself untouched. `agentplane repair` repairs it in place.",
            path.display()
        );
    }
    Ok(Arc::new(store))
}

/// Opens an existing store for a command that writes to it (a signed
/// checkpoint is recorded in it), refusing one that needs a repair or is not
/// a store: a writing command repairs nothing by accident.
pub fn open_for_signing(path: &Path) -> Result<Arc<dyn Store>, Failure> {
    if let Some(url) = postgres_url(path) {
        return open_postgres(url);
    }
    if !path.is_file() {
        return Err(no_store(path));
    }
    match RedbStore::open_read_only_or_repaired_copy(path) {
        Ok((_, ReadOnlyOpening::Direct)) => {}
        Ok((_, ReadOnlyOpening::RepairedCopy)) => {
            return Err(Failure::Usage(format!(
                "{} was not closed cleanly (a crash) and needs a repair first: run `agentplane repair`",
                path.display()
            )));
        }
        Err(err) => return Err(not_a_store(err)),
    }
    Ok(Arc::new(RedbStore::open(path).map_err(|err| Failure::Io(err.to_string()))?))
}

/// Opens the store for a command that writes to it, making a redb file that
/// is not there yet (the demo's own plane); a PostgreSQL store is opened.
pub fn open_or_create(path: &Path) -> Result<Arc<dyn Store>, Failure> {
    match postgres_url(path) {
        Some(url) => open_postgres(url),
        None => Ok(Arc::new(RedbStore::create(path).map_err(|err| Failure::Io(err.to_string()))?)),
    }
}

/// Repairs, in place, a redb file a crash left; a PostgreSQL server
/// recovers itself.
pub fn repair(path: &Path) -> Result<(), Failure> {
    if postgres_url(path).is_some() {
        return Err(Failure::Usage("a PostgreSQL store needs no repair: the server recovers itself".into()));
    }
    if !path.is_file() {
        return Err(no_store(path));
    }
    drop(RedbStore::open(path).map_err(|err| Failure::Io(err.to_string()))?);
    Ok(())
}

/// Gives a redb file's free pages back to the file system; the file's size
/// before and after. A PostgreSQL store is compacted by its server.
pub fn compact(path: &Path) -> Result<(u64, u64), Failure> {
    if postgres_url(path).is_some() {
        return Err(Failure::Usage(
            "a PostgreSQL store is compacted by the server (VACUUM); this command is for redb files".into(),
        ));
    }
    if !path.is_file() {
        return Err(no_store(path));
    }
    RedbStore::compact(path).map_err(|err| Failure::Io(err.to_string()))
}
