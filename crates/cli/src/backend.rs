//! Opening a backend: a redb file or a PostgreSQL URL, read-only, for
//! signing, or new; and the maintenance of a redb file (repair, compact).
//! The one module that names the backends.

use std::path::Path;
use std::sync::Arc;

use journal_core::Store;
use store_redb::{ReadOnlyOpening, RedbStore};

use crate::failure::Failure;

/// How a store is shown to a person: a path as it is, a PostgreSQL URL
/// with its password replaced by `***`.
pub fn display(store: &Path) -> String {
    store_pg::redact(&store.display().to_string())
}

/// The PostgreSQL URL a `--store` names, if it names one.
pub fn postgres_url(store: &Path) -> Option<&str> {
    store.to_str().filter(|text| text.starts_with("postgres://") || text.starts_with("postgresql://"))
}

/// libpq's connection keywords (PostgreSQL 18): a word of the store that
/// is one, followed by `=`, makes it a key=value connection string, whichever
/// keyword comes first (a string led by `target_session_attrs=` holds a
/// password as well as one led by `host=`).
const KEY_VALUE_KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "require_auth",
    "channel_binding",
    "connect_timeout",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "replication",
    "gssencmode",
    "sslmode",
    "requiressl",
    "sslnegotiation",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslcertmode",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "min_protocol_version",
    "max_protocol_version",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "service",
    "target_session_attrs",
    "load_balance_hosts",
    "scram_client_key",
    "scram_server_key",
    "oauth_issuer",
    "oauth_client_id",
    "oauth_client_secret",
    "oauth_scope",
];

/// The libpq keywords whose value is a secret: a word of the store that is
/// one followed by `=` refuses it wherever it stands, so that no file is
/// named after a password.
const SECRET_KEYWORDS: &[&str] =
    &["password", "sslpassword", "scram_client_key", "scram_server_key", "oauth_client_secret"];

/// Refuses a `--store` (or configured store) that is a PostgreSQL key=value
/// connection string: read as a redb path it would make a file named after
/// it, a password in the name, beside the plane. Only URLs name PostgreSQL.
/// Its first word (split at white space) a libpq keyword followed by `=`
/// (spaces allowed around it, as libpq allows) makes it one, as does a
/// secret's keyword (`password=`) at any word. A later word such as
/// `host=` alone does not: libpq takes no string led by another word, and
/// a redb path may hold one after a space (`Agent plane host=eu1.redb`).
pub fn refuse_key_value_string(store: &Path) -> Result<(), Failure> {
    let Some(text) = store.to_str() else { return Ok(()) };
    let words: Vec<&str> = text.split_whitespace().collect();
    let is_key_value = words.iter().enumerate().any(|(i, word)| {
        let word_end = word.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(word.len());
        let (keyword, rest) = word.split_at(word_end);
        let keywords = if i == 0 { KEY_VALUE_KEYWORDS } else { SECRET_KEYWORDS };
        keywords.iter().any(|known| keyword.eq_ignore_ascii_case(known))
            && (rest.starts_with('=')
                || (rest.is_empty() && words.get(i + 1).is_some_and(|next| next.starts_with('='))))
    });
    if is_key_value {
        return Err(Failure::Usage(format!(
            "the store {} reads as a PostgreSQL key=value connection string, which agentplane does not take (as a \
             path it would name a new redb file): give the store as a URL, \
             postgresql://USER@HOST[:PORT]/DBNAME (a password, if any, after USER and a colon; a socket folder as \
             ?host=/run/postgresql), or a redb file's path",
            display(store)
        )));
    }
    Ok(())
}

/// The refusal for a store file that is not there (never created by a read).
pub fn no_store(path: &Path) -> Failure {
    // Redacted: a connection string given where a path or URL goes (a
    // key-value `host=... password=...`) is echoed here.
    Failure::Usage(format!("no store at {} (run `agentplane demo` to make one, or pass --store)", display(path)))
}

/// Opens a PostgreSQL store for a command that writes: the schema is made
/// or migrated.
fn open_postgres(url: &str) -> Result<Arc<dyn Store>, Failure> {
    Ok(Arc::new(store_pg::PgStore::open(url).map_err(pg_failure)?))
}

/// Opens a PostgreSQL store for a command that reads: nothing is created.
fn open_postgres_read_only(url: &str) -> Result<Arc<dyn Store>, Failure> {
    Ok(Arc::new(store_pg::PgStore::open_read_only(url).map_err(pg_failure)?))
}

fn pg_failure(err: store_pg::OpenError) -> Failure {
    match err {
        store_pg::OpenError::Journal(err) => redacted(err.into()),
        store_pg::OpenError::NoStore { .. } | store_pg::OpenError::BadUrl { .. } => Failure::Usage(err.to_string()),
        damaged @ store_pg::OpenError::DamagedSchema { .. } => Failure::Findings(damaged.to_string()),
        // Like a redb file of a newer layout: the remedy is another build.
        newer @ store_pg::OpenError::NewerSchema { .. } => Failure::BuildSkew(newer.to_string()),
        older @ store_pg::OpenError::OlderSchema { .. } => Failure::Usage(older.to_string()),
        other => Failure::Io(other.to_string()),
    }
}

/// The failure with any password in its message replaced by `***`.
fn redacted(failure: Failure) -> Failure {
    match failure {
        Failure::Findings(m) => Failure::Findings(store_pg::redact(&m)),
        Failure::Usage(m) => Failure::Usage(store_pg::redact(&m)),
        Failure::Io(m) => Failure::Io(store_pg::redact(&m)),
        Failure::BuildSkew(m) => Failure::BuildSkew(store_pg::redact(&m)),
        Failure::NotAnExport(m) => Failure::NotAnExport(store_pg::redact(&m)),
        // An export's refusal quotes the file, never a store URL.
        export @ Failure::Export(_) => export,
    }
}

/// A redb file that would not open: held by another process (said as such,
/// with who and what to do), or not a readable store.
fn redb_failure(err: store_redb::OpenError) -> Failure {
    redb_upkeep_failure(err, None)
}

/// [`redb_failure`] for `agentplane COMMAND` (repair, compact, migrate),
/// which may fail half way for want of space or permission in a file that
/// opened: then it says that, not that the file is unreadable, which would
/// send an operator after a store that reads as it did.
fn redb_upkeep_failure(err: store_redb::OpenError, command: Option<&str>) -> Failure {
    match err {
        held @ (store_redb::OpenError::Held { .. } | store_redb::OpenError::InUse { .. }) => {
            Failure::Io(held.to_string())
        }
        newer @ store_redb::OpenError::NewerLayout { .. } => Failure::BuildSkew(newer.to_string()),
        damaged @ store_redb::OpenError::DamagedLayout { .. } => Failure::Findings(damaged.to_string()),
        store_redb::OpenError::Journal(err)
            if let Some(command) = command
                && store_redb::refused_a_write(&err) =>
        {
            Failure::Io(format!(
                "{err}; `agentplane {command}` did not finish: it changes the store only by whole commits (a \
                 migration writes a copy beside it), so the store reads as it did; free space or a permission is the \
                 usual cause (`agentplane verify` reads it)"
            ))
        }
        store_redb::OpenError::Journal(err) => {
            Failure::Io(format!("{err}; the file is not a readable agentplane store (it was left untouched)"))
        }
    }
}

/// Opens an existing store without ever writing to it. A file a crash left
/// needing a repair is read through a repaired private copy, and said so.
/// A PostgreSQL store is opened as any other client does.
pub fn open_existing(path: &Path) -> Result<Arc<dyn Store>, Failure> {
    if let Some(url) = postgres_url(path) {
        return open_postgres_read_only(url);
    }
    if !path.is_file() {
        return Err(no_store(path));
    }
    let (store, opening) = RedbStore::open_read_only_or_repaired_copy(path).map_err(redb_failure)?;
    if opening == ReadOnlyOpening::RepairedCopy {
        errln!(
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
        Err(err) => return Err(redb_failure(err)),
    }
    Ok(Arc::new(RedbStore::open(path).map_err(redb_failure)?))
}

/// Opens the store for a command that writes to it, making a redb file that
/// is not there yet (the demo's own plane); a PostgreSQL store is opened.
pub fn open_or_create(path: &Path) -> Result<Arc<dyn Store>, Failure> {
    match postgres_url(path) {
        Some(url) => open_postgres(url),
        None => Ok(Arc::new(RedbStore::create(path).map_err(redb_failure)?)),
    }
}

/// Repairs, in place, a redb file a crash left. A PostgreSQL server
/// recovers its own store: it is opened read-only, so that a script run
/// after every crash learns whether the store is there and this build's,
/// and what there is to say about it is returned.
pub fn repair(path: &Path) -> Result<Option<&'static str>, Failure> {
    if let Some(url) = postgres_url(path) {
        drop(open_postgres_read_only(url)?);
        return Ok(Some("a PostgreSQL server recovers its own store after a crash: nothing to repair"));
    }
    if !path.is_file() {
        return Err(no_store(path));
    }
    drop(RedbStore::open(path).map_err(|err| redb_upkeep_failure(err, Some("repair")))?);
    Ok(None)
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
    RedbStore::compact(path).map_err(|err| redb_upkeep_failure(err, Some("compact")))
}

/// What `agentplane migrate` did to a store.
pub enum Migrated {
    /// A PostgreSQL schema, from and to its versions; `None` when it was this
    /// build's already.
    Schema(Option<(i32, i32)>),
    /// A redb file's storage layout.
    Layout(store_redb::Migration),
}

/// Makes or migrates a PostgreSQL store's schema, or migrates a redb file
/// to this build's storage layout (keeping the file as it was beside it).
pub fn migrate(path: &Path) -> Result<Migrated, Failure> {
    let Some(url) = postgres_url(path) else {
        if !path.is_file() {
            return Err(no_store(path));
        }
        return RedbStore::migrate(path).map(Migrated::Layout).map_err(|err| redb_upkeep_failure(err, Some("migrate")));
    };
    Ok(Migrated::Schema(store_pg::PgStore::open(url).map_err(pg_failure)?.migrated()))
}

/// Whether the store holds runs of any tenant; a store that is not there
/// (no file, a database without the schema) holds none. Never creates one.
pub fn holds_runs(path: &Path) -> Result<bool, Failure> {
    if let Some(url) = postgres_url(path) {
        return match store_pg::PgStore::open_read_only(url) {
            Ok(store) => Ok(!store.tenants()?.is_empty()),
            Err(store_pg::OpenError::NoStore { .. }) => Ok(false),
            Err(err) => Err(pg_failure(err)),
        };
    }
    if !path.is_file() {
        return Ok(false);
    }
    Ok(!open_existing(path)?.tenants()?.is_empty())
}

#[cfg(test)]
mod key_value_tests {
    use super::*;

    /// R-OPS-1: a redb path is never refused as a key=value connection
    /// string for a later word that reads as a libpq keyword followed by
    /// `=` (`Agent plane host=eu1.redb`, a folder name with a space): libpq
    /// takes no string whose first word is no `keyword=`, so such a path
    /// names no PostgreSQL server, and an operator had no way to use it
    /// (`./` in front changed nothing). A string led by any libpq keyword,
    /// or holding a password at any word, is still refused.
    #[test]
    fn r_ops_1_a_redb_path_with_a_later_keyword_word_is_a_path() {
        for path in [
            "Agent plane host=eu1.redb",
            "/srv/agent runs service=billing/journal.redb",
            "./plane copy options=v2.redb",
            "/data/tenant=shop/journal.redb",
        ] {
            assert!(refuse_key_value_string(Path::new(path)).is_ok(), "{path}");
        }
        for string in [
            "host=db dbname=plane",
            " target_session_attrs=any host=db",
            "keepalives = 1 host=db",
            "plane.redb password = s3cret",
            "/srv/plane.redb sslpassword=s3cret",
            "x oauth_client_secret=s3cret",
        ] {
            assert!(matches!(refuse_key_value_string(Path::new(string)), Err(Failure::Usage(_))), "{string}");
        }
    }
}
