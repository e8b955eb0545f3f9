//! Reaching the server: the store URL parsed, its password filled in from
//! `PGPASSWORD` or a password file when the URL has none, connection
//! failures that name the server, and URLs printed without their password.

use std::path::{Path, PathBuf};
use std::str::FromStr as _;
use std::time::Duration;

use journal_core::{JournalError, StorageError};

/// How long a connection attempt waits when the URL sets no
/// `connect_timeout`: an unreachable host is reported, not waited on.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most bytes of a password file read.
const MAX_PGPASS_BYTES: u64 = 1 << 20;

/// The server and database a store URL names, for messages (never the
/// password).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The host (or the socket directory).
    pub host: String,
    /// The port.
    pub port: u16,
    /// The database.
    pub database: String,
    /// The user.
    pub user: String,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "database {:?} on {}:{} as user {:?}", self.database, self.host, self.port, self.user)
    }
}

/// Why a PostgreSQL store could not be opened. Every message names the
/// server and database and never holds the password.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The store URL does not parse.
    #[error("the store URL {url} is not a PostgreSQL connection string: {cause}")]
    BadUrl {
        /// The URL, its password replaced by `***`.
        url: String,
        /// What the parser said.
        cause: String,
    },
    /// The server could not be reached or refused the connection.
    #[error("cannot connect to PostgreSQL, {target}: {cause}")]
    Connect {
        /// Where it tried.
        target: Target,
        /// The underlying cause, every level of it.
        cause: String,
        /// Whether the same open may succeed later (the server unreachable
        /// or starting), as opposed to refused credentials or a database
        /// that does not exist.
        retryable: bool,
    },
    /// A read found no agentplane schema: nothing was created.
    #[error(
        "no agentplane store here: {target} has no agentplane schema (a command that reads never creates one; \
         a command that writes, such as `agentplane demo`, or `agentplane migrate` makes it)"
    )]
    NoStore {
        /// The database looked at.
        target: Target,
    },
    /// The schema was migrated by a newer build.
    #[error(
        "the database's schema is version {found}, newer than this build's {supported}: it was migrated by a \
         newer agentplane; run that build (or a later one), not this one"
    )]
    NewerSchema {
        /// The database's schema version.
        found: i32,
        /// This build's.
        supported: i32,
    },
    /// A read found a schema older than this build's, which only a command
    /// that writes may migrate.
    #[error(
        "the database's schema is version {found}, older than this build's {supported}: a command that reads \
         never migrates it; run `agentplane migrate` (or any command that writes) with this build first"
    )]
    OlderSchema {
        /// The database's schema version.
        found: i32,
        /// This build's.
        supported: i32,
    },
    /// The schema's version is not one a plane wrote (its table or row
    /// deleted beside the journal's tables, two rows, a version below 1):
    /// damage to the store, neither "no store here" nor a build to change.
    #[error(
        "the database holds an agentplane store whose schema version is damaged: {detail}; it was changed behind \
         the plane (nothing was read, created or migrated)"
    )]
    DamagedSchema {
        /// What is wrong with it.
        detail: String,
    },
    /// Anything else, from the database.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

impl OpenError {
    /// Whether the same open may succeed when retried.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Connect { retryable, .. } => *retryable,
            Self::Journal(err) => err.is_retryable(),
            _ => false,
        }
    }
}

impl From<OpenError> for JournalError {
    fn from(err: OpenError) -> Self {
        match err {
            OpenError::Journal(err) => err,
            other => {
                let retryable = other.is_retryable();
                let storage = StorageError::message(other.to_string());
                JournalError::Io(if retryable { storage.retryable() } else { storage })
            }
        }
    }
}

/// `text` with the password of a `postgres://user:password@host/db` URL,
/// of a `password=` query parameter and of a `password=...` key-value
/// connection string replaced by `***`. Anything else is returned as it is.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let url = rest.find("://");
        match next_password(rest) {
            // A key-value password before any URL: hidden whole, a `://`
            // inside it too (never read as the start of a URL).
            Some((found, value_start)) if url.is_none_or(|start| found < start) => {
                rest = hide_value(&mut out, rest, value_start);
            }
            _ => {
                let Some(start) = url else { break };
                let (before, from_scheme) = rest.split_at(start + 3);
                out.push_str(before);
                let (url, after) = from_scheme.split_at(url_end(before, from_scheme));
                out.push_str(&redact_query(&redact_one_url(url)));
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where a URL that starts `from_scheme` ends in a text. At white space,
/// never at a quote: a password may hold `'` (or `\"`, as a configuration
/// file escapes it), and a quote closing the URL is left inside the host
/// part, which is shown. But PostgreSQL's URL parser reads a URL to the end
/// of its text, white space and all (review 38): the user info ends at the
/// text's first `@`, so a user or password typed with white space reaches
/// past it to that `@`; and a `password=` parameter ends at `&` only, so
/// one the URL ends in reaches past it to the next `&`, else as far as it
/// may reach (which hides more than it must). Neither reaches past its line
/// or into the next URL on it, which is redacted on its own: a password
/// holding white space and a line break or a `://` is not looked for.
fn url_end(before: &str, from_scheme: &str) -> usize {
    let to_white_space = |from: usize| {
        from_scheme.get(from..).and_then(|tail| tail.find(char::is_whitespace)).map_or(from_scheme.len(), |i| from + i)
    };
    let mut end = to_white_space(0);
    if !(before.ends_with("postgres://") || before.ends_with("postgresql://")) {
        return end;
    }
    // As far as a password holding white space may reach: its line's end,
    // or the white space before the next URL on the line.
    let line = from_scheme.find('\n').unwrap_or(from_scheme.len());
    let reach = match from_scheme[..line].find("://") {
        Some(next) => from_scheme[..next].rfind(char::is_whitespace).unwrap_or(next),
        None => line,
    };
    if end < reach
        && !from_scheme[..end].contains('@')
        && let Some(at) = from_scheme[..reach].find('@')
        && from_scheme[..at].contains(':')
    {
        end = to_white_space(at);
    }
    let mut unended = false;
    let mut url = &from_scheme[..end];
    while let Some((_, value_start)) = next_query_password(url) {
        let value = &url[value_start..];
        unended = !value.contains('&');
        url = value;
    }
    if unended && end < reach {
        end = match from_scheme[end..reach].find('&') {
            Some(amp) => to_white_space(end + amp),
            None => reach,
        };
    }
    end
}

/// The key a password follows, in a key-value string or a URL's query.
const PASSWORD: &str = "password";

/// Every libpq key whose value is a secret, hidden as a password is
/// (`sslpassword` holds [`PASSWORD`]; the others are keys of their own).
const SECRET_KEYS: &[&str] = &[PASSWORD, "sslpassword", "scram_client_key", "scram_server_key", "oauth_client_secret"];

/// The first secret parameter of `text` (`password=`, or another of
/// [`SECRET_KEYS`]), in any case and with white space around the `=` (as a
/// key-value string may spell it): where the key starts, and where its
/// value starts.
fn next_password(text: &str) -> Option<(usize, usize)> {
    // Every key is compared at each byte, in ASCII's cases, in one pass
    // (each call reads only up to what it finds: the loops that call it go
    // over a text once).
    let bytes = text.as_bytes();
    (0..bytes.len()).find_map(|found| {
        // Every key starts with one of these: most bytes are passed at once.
        if !bytes.get(found).is_some_and(|b| matches!(b.to_ascii_lowercase(), b'p' | b's' | b'o')) {
            return None;
        }
        let key = SECRET_KEYS.iter().find(|key| {
            bytes.get(found..found + key.len()).is_some_and(|word| word.eq_ignore_ascii_case(key.as_bytes()))
        })?;
        let tail = text.get(found + key.len()..).unwrap_or_default();
        let value = tail.trim_start().strip_prefix('=')?;
        Some((found, text.len() - value.trim_start().len()))
    })
}

/// The first password parameter of a URL's `text`: a `password=` as
/// [`next_password`] finds it, or a key PostgreSQL's URL parser
/// percent-decodes to `password` (`pass%77ord=`; review 38).
fn next_query_password(text: &str) -> Option<(usize, usize)> {
    let plain = next_password(text);
    // Only a key before the plain one counts; a key ends at its
    // parameter's first `=`.
    let before = plain.map_or(text.len(), |(found, _)| found);
    let mut key_start = Some(0);
    for (i, c) in text.char_indices() {
        match c {
            '?' | '&' if i >= before => break,
            '?' | '&' => key_start = Some(i + 1),
            '=' => {
                let Some(start) = key_start.take() else { continue };
                let key = &text[start..i];
                if key.contains('%')
                    && SECRET_KEYS.iter().any(|secret| percent_decoded(key).eq_ignore_ascii_case(secret.as_bytes()))
                {
                    return Some((start, i + 1));
                }
            }
            _ => {}
        }
    }
    plain
}

/// `text` with each `%` and two hex digits decoded to the byte they name
/// (another `%` is kept, as PostgreSQL's URL parser keeps it).
fn percent_decoded(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        let hex = bytes.get(i + 1..i + 3).filter(|hex| hex.iter().all(u8::is_ascii_hexdigit));
        match hex.and_then(|hex| u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()) {
            Some(decoded) if byte == b'%' => {
                out.push(decoded);
                i += 3;
            }
            _ => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// The part of one URL after `scheme://`. The userinfo ends at the URL's
/// last `@`, not at the first `/` or `?`: a password typed with an
/// unescaped `/`, `?` or `@` (which PostgreSQL's parser still reads as a
/// password) is hidden whole. A `@` later in the query hides more than it
/// must, never less.
fn redact_one_url(url: &str) -> String {
    let Some((userinfo, host)) = url.rsplit_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => format!("{user}:***@{host}"),
        None => url.to_owned(),
    }
}

/// A URL with the value of each password parameter replaced by `***`: up
/// to the next `&` or the URL's end, as PostgreSQL's URL parser reads it
/// (white space, a quote, a backslash and a `#` are part of the value).
fn redact_query(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some((_, value_start)) = next_query_password(rest) {
        let (before, value) = rest.split_at(value_start);
        out.push_str(before);
        let end = value.find('&').unwrap_or(value.len());
        if end > 0 {
            out.push_str("***");
        }
        rest = &value[end..];
    }
    out.push_str(rest);
    out
}

/// Writes `text` up to the key-value password at `value_start`, then `***`
/// for the value (up to [`password_end`]); what follows the value.
fn hide_value<'t>(out: &mut String, text: &'t str, value_start: usize) -> &'t str {
    let (before, value) = text.split_at(value_start);
    out.push_str(before);
    let end = password_end(value);
    if end > 0 {
        out.push_str("***");
    }
    value.get(end..).unwrap_or_default()
}

/// Where the key-value password `value` starts ends: a quoted one at its
/// closing quote (escapes skipped), another at white space only, as libpq
/// reads it (a `"` or `&` is part of it).
fn password_end(value: &str) -> usize {
    if let Some(quoted) = value.strip_prefix('\'') {
        // A quoted key-value password: up to the closing quote, escapes skipped.
        let mut escaped = false;
        let close = quoted.char_indices().find(|&(_, c)| {
            let closes = c == '\'' && !escaped;
            escaped = c == '\\' && !escaped;
            closes
        });
        close.map_or(value.len(), |(i, _)| i + 2)
    } else {
        // Unquoted, a backslash escapes the character after it (libpq reads
        // `a\ b` as `a b`): an escaped space does not end the value.
        let mut escaped = false;
        let end = value.char_indices().find(|&(_, c)| {
            let ends_here = !escaped && c.is_whitespace();
            escaped = c == '\\' && !escaped;
            ends_here
        });
        end.map_or(value.len(), |(i, _)| i)
    }
}

/// Parses the store URL and fills in what the URL leaves out: the password
/// from `PGPASSWORD`, else from the password file (`PGPASSFILE`, else
/// `~/.pgpass`, as libpq reads it: `host:port:database:user:password`
/// lines, `*` matching anything, ignored unless only its owner can read
/// it), and a connect timeout of [`DEFAULT_CONNECT_TIMEOUT`].
pub(crate) fn config(url: &str) -> Result<(postgres::Config, Target), OpenError> {
    let mut config = postgres::Config::from_str(url)
        .map_err(|err| OpenError::BadUrl { url: redact(url), cause: redact(&causes(&err)) })?;
    let target = target_of(&config);
    if config.get_password().is_none() {
        if let Some(password) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
            config.password(password.as_encoded_bytes());
        } else if let Some(password) = pgpass_file().and_then(|file| pgpass_lookup(&file, &target)) {
            config.password(password);
        }
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
    }
    Ok((config, target))
}

/// Connects, naming the server and the cause on failure.
pub(crate) fn connect(config: &postgres::Config, target: &Target) -> Result<postgres::Client, OpenError> {
    config.connect(postgres::NoTls).map_err(|err| connect_error(target, &err))
}

/// A failed connection, named.
pub(crate) fn connect_error(target: &Target, err: &postgres::Error) -> OpenError {
    // A server's answer (a bad password, no such database) is final; a lost
    // or refused connection may not be.
    let retryable = err.as_db_error().is_none_or(|db| db.code().code().starts_with("57P"));
    OpenError::Connect { target: target.clone(), cause: redact(&causes(err)), retryable }
}

/// Every level of an error's chain, joined: postgres's own Display says
/// only "error connecting to server".
pub(crate) fn causes(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = match err.downcast_ref::<postgres::Error>().and_then(postgres::Error::as_db_error) {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => err.to_string(),
    };
    let mut source = err.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}

fn target_of(config: &postgres::Config) -> Target {
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(host)) => host.clone(),
        #[cfg(unix)]
        Some(postgres::config::Host::Unix(dir)) => dir.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config
        .get_user()
        .map(str::to_owned)
        .or_else(|| std::env::var("USER").ok())
        .or_else(|| std::env::var("LOGNAME").ok())
        .unwrap_or_default();
    let database = config.get_dbname().map_or_else(|| user.clone(), str::to_owned);
    Target { host, port, database, user }
}

fn pgpass_file() -> Option<PathBuf> {
    match std::env::var_os("PGPASSFILE") {
        Some(file) => Some(PathBuf::from(file)),
        None => std::env::var_os("HOME").map(|home| Path::new(&home).join(".pgpass")),
    }
}

/// The password of the first line of the password file that matches
/// `target`; none when the file is missing, too large, or readable by
/// others than its owner (libpq ignores such a file too).
pub(crate) fn pgpass_lookup(file: &Path, target: &Target) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > MAX_PGPASS_BYTES {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                file = %file.display(),
                "the password file is readable by others than its owner; ignored (chmod 0600 it)"
            );
            return None;
        }
    }
    let text = std::fs::read_to_string(file).ok()?;
    let port = target.port.to_string();
    text.lines().filter(|line| !line.starts_with('#')).find_map(|line| {
        let fields = pgpass_fields(line)?;
        let wanted = [target.host.as_str(), port.as_str(), target.database.as_str(), target.user.as_str()];
        let matches = fields[..4].iter().zip(wanted).all(|(field, want)| field == "*" || field == want);
        matches.then(|| fields[4].clone())
    })
}

/// The five fields of a password file line, `\:` and `\\` unescaped.
fn pgpass_fields(line: &str) -> Option<[String; 5]> {
    let mut fields: Vec<String> = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut()?.push(chars.next().unwrap_or('\\')),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut()?.push(c),
        }
    }
    fields.try_into().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_in_every_spelling() {
        assert_eq!(redact("postgres://u:s3cret@db.internal:5433/x"), "postgres://u:***@db.internal:5433/x");
        assert_eq!(
            redact("agentplane --store postgresql://u:s3cret@h/db audit"),
            "agentplane --store postgresql://u:***@h/db audit"
        );
        assert_eq!(
            redact("postgres://u@h/db?password=s3cret&sslmode=disable"),
            "postgres://u@h/db?password=***&sslmode=disable"
        );
        assert_eq!(redact("host=h user=u password=s3cret dbname=d"), "host=h user=u password=*** dbname=d");
        assert_eq!(redact("host=h password='a b\\' c' dbname=d"), "host=h password=*** dbname=d");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("http://127.0.0.1:7380"), "http://127.0.0.1:7380");
        assert!(!redact("postgres://u:p%40ss@h/db").contains("p%40ss"));
    }

    /// R-OPS-1: a password typed unescaped (PostgreSQL's parser reads
    /// `u:Se/cret@h` as user and password) is hidden whole in every message.
    #[test]
    fn r_ops_1_an_unescaped_password_is_redacted_whole() {
        for (url, secret) in [
            ("postgres://admin:Se/cret@127.0.0.1:1/db?sslmode=bogus", "cret"),
            ("postgres://admin:Se?cret@127.0.0.1:1/db", "cret"),
            ("postgresql://admin:p@ss@h/db", "ss@h"),
        ] {
            let shown = redact(&format!("the store URL {url} is not a PostgreSQL connection string"));
            assert!(!shown.contains(secret), "{shown}");
            assert!(shown.contains("admin:***@"), "{shown}");
        }
        assert!(!redact("postgresql://admin:p@ss@h/db").contains("p@ss"));
        assert_eq!(redact("postgres://admin:Se/cret@h:5/db"), "postgres://admin:***@h:5/db");
    }

    /// R-OPS-1 (review 36): a URL was taken to end at a quote, so a
    /// password holding `'` (legal in a URL's userinfo, and PostgreSQL's
    /// parser reads it) or `\"` (as a configuration file escapes it) was
    /// shown from the quote on, `@host` and all: `agentplane --config` of a
    /// configuration whose store line does not parse printed it whole.
    #[test]
    fn r_ops_1_a_password_holding_a_quote_is_redacted_whole() {
        for (text, secret) in [
            ("postgres://admin:it's2@h/db", "it's2"),
            ("  1 | store = \"postgres://admin:it's2@localhost/db", "it's2"),
            ("  1 | store = \"postgres://admin:hun\\\"ter2@localhost/db\"", "ter2"),
            ("the store 'postgresql://admin:o'hara@h/db' is unreachable", "hara"),
        ] {
            let shown = redact(text);
            assert!(!shown.contains(secret), "{shown}");
            assert!(shown.contains("admin:***@"), "{shown}");
        }
        assert_eq!(redact("\"postgres://u:pw@h/db\" is not"), "\"postgres://u:***@h/db\" is not");
        // In a key-value string only white space ends an unquoted value (review 36's note).
        for (text, secret) in
            [("host=h password=hun\"ter2 dbname=d", "ter2"), ("  1 | store = \"host=h password=a&b=c\"", "b=c")]
        {
            let shown = redact(text);
            assert!(!shown.contains(secret) && shown.contains("password=***"), "{shown}");
        }
    }

    /// R-OPS-1 (review 37): review 36 split the text at every `://` and
    /// redacted what came before it on its own, so a key-value password
    /// holding `://` was hidden only up to it and shown from there on; and
    /// it ended a URL's `password=` parameter at `#`, which PostgreSQL's URL
    /// parser reads as part of the value (it knows no fragment). Both were
    /// hidden whole before.
    #[test]
    fn r_ops_1_a_password_holding_a_scheme_or_a_hash_is_redacted_whole() {
        for (text, secret) in [
            ("host=h password=ab://s3cr3t dbname=d", "s3cr3t"),
            ("host=h password='a b://s3cr3t' dbname=d", "s3cr3t"),
            ("  1 | store = \"host=h password=x://s3cr3t@h\"", "s3cr3t"),
            ("postgres://u@h/db?password=ab#s3cr3t&sslmode=disable", "s3cr3t"),
            ("postgres://u@h/db?password=ab#s3cr3t", "s3cr3t"),
        ] {
            let shown = redact(text);
            assert!(!shown.contains(secret) && shown.contains("password=***"), "{shown}");
        }
        // As a key-value string may spell it (review 37's note): white space
        // around the `=`, another case, an escaped space inside the value.
        for (text, secret) in [
            ("host=h password = hunter2secret dbname=d", "hunter2secret"),
            ("host=h PASSWORD=hunter2secret dbname=d", "hunter2secret"),
            ("host=h password=a\\ s3cr3t dbname=d", "s3cr3t"),
        ] {
            let shown = redact(text);
            assert!(!shown.contains(secret) && shown.contains("***") && shown.contains("dbname=d"), "{shown}");
        }
        assert_eq!(
            redact("host=h password=ab://cd postgres://u:pw@h/db?password=x&sslmode=disable"),
            "host=h password=*** postgres://u:***@h/db?password=***&sslmode=disable"
        );
    }

    /// R-OPS-1: libpq takes secrets under other keys than `password`
    /// (`oauth_client_secret`, `scram_client_key`, `scram_server_key`), and
    /// a store given with one was quoted whole: the key=value refusal and
    /// the URL the postgres crate refused ("unknown option") printed the
    /// secret on stderr. Each is hidden as a password is, in a key-value
    /// string and in a URL's query, spelt plain or percent-encoded.
    #[test]
    fn r_ops_1_every_libpq_secret_is_redacted_not_only_password() {
        for (text, secret) in [
            ("host=db oauth_client_secret=TOPSECRET1 dbname=d", "TOPSECRET1"),
            ("host=db scram_client_key = TOPSECRET2", "TOPSECRET2"),
            ("postgresql://u@h/db?oauth_client_secret=TOPSECRET3&sslmode=disable", "TOPSECRET3"),
            ("postgresql://u@h/db?SCRAM_SERVER_KEY=TOPSECRET4", "TOPSECRET4"),
            ("postgresql://u@h/db?oauth_client_%73ecret=TOPSECRET5", "TOPSECRET5"),
            ("postgresql://u@h/db?sslpass%77ord=TOPSECRET6", "TOPSECRET6"),
        ] {
            let shown = redact(text);
            assert!(!shown.contains(secret) && shown.contains("***"), "{shown}");
        }
        assert_eq!(
            redact("host=db oauth_client_secret=s sslmode=disable"),
            "host=db oauth_client_secret=*** sslmode=disable"
        );
    }

    #[test]
    fn pgpass_lines_match_with_wildcards_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "# comment\nother:5432:*:*:no\nh:*:d\\:b:u:pa\\:ss\n*:*:*:*:fallback\n").unwrap();
        let target =
            |host: &str, db: &str| Target { host: host.into(), port: 5432, database: db.into(), user: "u".into() };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
            assert_eq!(pgpass_lookup(&file, &target("h", "d:b")), None, "a file others can read is ignored");
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        assert_eq!(pgpass_lookup(&file, &target("h", "d:b")).as_deref(), Some("pa:ss"));
        assert_eq!(pgpass_lookup(&file, &target("x", "y")).as_deref(), Some("fallback"));
    }
}
