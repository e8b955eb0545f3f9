//! `agentplane-witness`: a C2SP tlog-witness server that remembers.
//!
//! It is a crate of its own, beside the protocol crate it serves, so that a
//! witness operator installs one small binary with no journal code in it, and
//! no log or auditor inherits an HTTP server.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use witness::{ALG_COSIGNATURE_V1, ALG_ML_DSA_44, Cosigner, SignerKey, VerifierKey};
use witness_server::{LogConfig, OpenFiles, ServerLimits, SystemClock, WitnessConfig, WitnessServer};

/// A C2SP tlog-witness: cosigns checkpoints of the logs it is configured to
/// watch, only when it can prove each extends the last it cosigned.
///
/// Logging: RUST_LOG (default `info`); refused requests are logged on
/// `agentplane.witness` (at most 50 one by one per 10 s, the rest counted),
/// and every fork (a second root the log signed for a cosigned size) on
/// `agentplane.witness.integrity`.
#[derive(Parser)]
#[command(name = "agentplane-witness", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve `POST /add-checkpoint`, `GET /<origin hash>/checkpoint` and, with an ML-DSA-44 key,
    /// `POST /sign-subtree`, until SIGINT or SIGTERM.
    Serve {
        /// A configuration file (TOML: listen, state, key_file (a path or a list), `[[log]]` origin and
        /// keys, `[limits]`);
        /// the flags below override it.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Address to listen on (port 0 picks a free one; the address is printed). Default 127.0.0.1:7380.
        #[arg(long)]
        listen: Option<String>,
        /// The redb file holding each origin's latest cosigned checkpoint (beside it, FILE.highwater
        /// holds what was cosigned last, flushed before every answer: a state found behind it, an
        /// older copy put back or a crash, is brought forward to it).
        #[arg(long)]
        state: Option<PathBuf>,
        /// File holding a signer key of the witness (PRIVATE+KEY+name+id+..., made by `keygen`):
        /// Ed25519 (cosignature/v1) or ML-DSA-44 (subtree/v1). Repeatable: a witness given both
        /// returns both lines, in the order of the files. Replaces the configuration's key files.
        #[arg(long = "key-file", value_name = "FILE")]
        key_files: Vec<PathBuf>,
        /// A log to watch: ORIGIN=VKEY (repeatable; several keys for one origin are allowed). Added to
        /// the configuration's `[[log]]` entries, not replacing them.
        #[arg(long = "log", value_name = "ORIGIN=VKEY")]
        logs: Vec<String>,
        #[command(flatten)]
        limits: LimitFlags,
    },
    /// Make a cosigning key: writes the signer key to FILE, prints the verifier key.
    Keygen {
        /// The witness's name (a schema-less URL, such as witness.example.com/w1).
        #[arg(long)]
        name: String,
        /// Where to write the signer key (refuses to overwrite).
        #[arg(long)]
        out: PathBuf,
        /// The cosignature type: `ed25519` (cosignature/v1, type 0x04) or
        /// `ml-dsa-44` (subtree/v1, type 0x06, tlog-cosignature v1.1.0-rc.1).
        #[arg(long = "type", value_enum, default_value_t = KeyType::Ed25519)]
        key_type: KeyType,
    },
}

/// The cosignature types `keygen` makes.
#[derive(Clone, Copy, clap::ValueEnum)]
enum KeyType {
    /// cosignature/v1, Ed25519 (type 0x04).
    Ed25519,
    /// subtree/v1, ML-DSA-44 (type 0x06), which tlog-witness says witnesses SHOULD use.
    #[value(name = "ml-dsa-44")]
    MlDsa44,
}

/// Connection limits (issue 22); each also in the configuration file's `[limits]` table.
#[derive(clap::Args, serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct LimitFlags {
    /// Set the process's soft open-file limit (RLIMIT_NOFILE) to N, at most the hard limit.
    /// Default: raise the soft limit to the hard limit.
    #[arg(long, value_name = "N")]
    max_open_files: Option<u64>,
    /// Connections served at once. When full, the oldest idle connection (no complete request
    /// header yet) is closed for the newcomer; it is refused only when all are busy.
    /// Default and maximum: the open-file soft limit less 64 (kept for the state file, logs and
    /// listener); a larger value is lowered to that, with a warning.
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Connections one client (an IPv4 address, or an IPv6 /64) may hold at once. At the cap,
    /// its oldest idle connection is closed for the newcomer; it is refused only when all of
    /// them are busy.
    /// Default 64.
    #[arg(long, value_name = "N")]
    max_per_peer: Option<usize>,
    /// Seconds a client has to send a request's line and headers, else its connection is closed
    /// (each request of a kept-alive connection too). Default 10.
    #[arg(long, value_name = "SECONDS")]
    header_timeout: Option<u64>,
    /// Seconds a client has to send a request's body, else 408. Default 10.
    #[arg(long, value_name = "SECONDS")]
    body_timeout: Option<u64>,
}

impl LimitFlags {
    /// Flags over the file.
    fn or(self, file: Self) -> Self {
        Self {
            max_open_files: self.max_open_files.or(file.max_open_files),
            max_connections: self.max_connections.or(file.max_connections),
            max_per_peer: self.max_per_peer.or(file.max_per_peer),
            header_timeout: self.header_timeout.or(file.header_timeout),
            body_timeout: self.body_timeout.or(file.body_timeout),
        }
    }

    /// Sets the open-file limit, then the server limits (whose default
    /// `max_connections` depends on it).
    fn apply(&self) -> Result<ServerLimits, String> {
        let files = match self.max_open_files {
            Some(0) => return Err("max_open_files must be at least 1".into()),
            Some(n) => OpenFiles::set_soft(n).map_err(|err| format!("setting the open-file limit to {n}: {err}"))?,
            None => OpenFiles::raise()
                .or_else(|err| {
                    tracing::warn!(target: "agentplane.witness", "cannot raise the open-file limit: {err}");
                    OpenFiles::current()
                })
                .map_err(|err| format!("reading the open-file limit: {err}"))?,
        };
        tracing::info!(target: "agentplane.witness", soft = files.soft, hard = files.hard, "open-file limit");
        let mut limits = ServerLimits::default();
        if let Some(n) = self.max_connections {
            limits.max_connections = n;
        }
        if let Some(n) = self.max_per_peer {
            limits.max_per_peer = n;
        }
        if let Some(seconds) = self.header_timeout {
            limits.header_timeout = Duration::from_secs(seconds);
        }
        if let Some(seconds) = self.body_timeout {
            limits.body_timeout = Duration::from_secs(seconds);
        }
        Ok(limits)
    }
}

/// The configuration file.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    listen: Option<String>,
    state: Option<PathBuf>,
    /// One key file, or a list of them (`key_file = ["ed.key", "ml.key"]`).
    key_file: Option<KeyFiles>,
    #[serde(default, rename = "log")]
    logs: Vec<LogEntry>,
    #[serde(default)]
    limits: LimitFlags,
}

/// `key_file` in the configuration: a path or a list of paths.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum KeyFiles {
    One(PathBuf),
    Many(Vec<PathBuf>),
}

impl KeyFiles {
    fn into_vec(self) -> Vec<PathBuf> {
        match self {
            Self::One(path) => vec![path],
            Self::Many(paths) => paths,
        }
    }
}

/// The most key files a witness takes (one per algorithm, and one more of
/// each while a key is rotated).
const MAX_KEY_FILES: usize = 4;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LogEntry {
    origin: String,
    keys: Vec<String>,
}

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Plain text when the log goes to a file or a pipe: colour only on a terminal.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    // A log line that cannot be written is dropped: tracing-subscriber's own
    // report of it would panic on the same full disk or closed pipe.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .log_internal_errors(false)
        .init();
    // No argument of any command is a private key: one given by mistake (for
    // a key file's path, or stray) is refused here, before the argument
    // parser or a file error could quote it.
    if std::env::args_os().skip(1).any(|arg| looks_private(&arg.to_string_lossy())) {
        complain(
            "agentplane-witness: an argument is neither a path nor a public key: this is a private key \
             (PRIVATE+KEY+..., not shown here); give the witness its key as a file (--key-file FILE, written by \
             keygen), each log its public verifier key (--log ORIGIN=NAME+KEYID+BASE64), and keep private keys off \
             command lines",
        );
        return ExitCode::from(2);
    }
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            complain(&format!("agentplane-witness: {message}"));
            ExitCode::from(2)
        }
    }
}

/// A line on standard output, flushed. `println!` panics when the output
/// cannot take it (a closed pipe, a full disk): the witness answers with
/// its exit code instead.
fn say(line: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()
}

/// A line on standard error; one that cannot be written is dropped, the
/// exit code still says what happened (`eprintln!` would panic, exit 101).
fn complain(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

fn add_log(logs: &mut Vec<LogConfig>, origin: &str, vkey: &str, what: &str) -> Result<(), String> {
    if looks_private(vkey) {
        return Err(private_key_refusal(what));
    }
    let key = VerifierKey::parse(vkey).map_err(|err| format!("{what}: {err}"))?;
    match logs.iter_mut().find(|log| log.origin == origin) {
        Some(log) => log.keys.push(key),
        None => logs.push(LogConfig { origin: origin.to_owned(), keys: vec![key] }),
    }
    Ok(())
}

/// Whether a key given where a public key is wanted is a private key
/// (`PRIVATE+KEY+...`, as `keygen` writes it): such text is never echoed.
fn looks_private(text: &str) -> bool {
    // The skey's own prefix, not the word: a log named `private.example/log`
    // has a public key whose name says "private".
    text.to_ascii_uppercase().contains("PRIVATE+KEY+")
}

/// Whether a key file's path is rather a key's base64 (a seed pasted where
/// its file's path goes): such a path is never printed.
fn looks_like_key_material(path: &Path) -> bool {
    witness::may_be_key_material(&path.to_string_lossy()) && !path.exists()
}

/// The refusal of a private key given where a log's public key is wanted;
/// it does not show the key.
fn private_key_refusal(what: &str) -> String {
    format!(
        "{what}: this is a private key: it is never given to the witness as a log key (and is not shown here); \
         give the log's public verifier key NAME+KEYID+BASE64, and keep the private key secret"
    )
}

/// The largest configuration file read: a few lines per log.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The largest key file read: an skey is under 400 bytes.
const MAX_KEY_FILE_BYTES: u64 = 4096;

fn read_cosigner(path: &Path) -> Result<Cosigner, String> {
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(path).and_then(|file| file.take(MAX_KEY_FILE_BYTES + 1).read_to_string(&mut text)).map_err(
        |err| match looks_like_key_material(path) {
            true => format!(
                "reading the key file: {err}; what was given as its path looks like key material (base64), not a \
                 path, and is not shown: give the path of the file keygen wrote"
            ),
            false => format!("reading {}: {err}", path.display()),
        },
    )?;
    if text.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(format!("{}: larger than {MAX_KEY_FILE_BYTES} bytes, not a key file", path.display()));
    }
    let key = SignerKey::parse(text.trim()).map_err(|err| format!("{}: {err}", path.display()))?;
    Cosigner::new(key).map_err(|err| format!("{}: {err}", path.display()))
}

/// Reads the configuration file, at most [`MAX_CONFIG_BYTES`]: a larger
/// file, a FIFO or `/dev/zero` is refused without reading on.
fn read_config(path: &Path) -> Result<ConfigFile, String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|err| format!("reading {}: {err}", path.display()))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(format!(
            "{}: larger than {MAX_CONFIG_BYTES} bytes, not a witness configuration (a few lines per log)",
            path.display()
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{}: not UTF-8 text, not a TOML configuration", path.display()))?;
    // Nothing in a configuration is a private key (`key_file` names the file
    // holding the witness's; `[[log]]` keys are the logs' public keys), and
    // the TOML parser's errors quote the line they stop at: refused unshown.
    if looks_private(&text) {
        return Err(format!(
            "{}: holds a private key (PRIVATE+KEY+...; it is not shown here): `key_file` is the path of the file \
             holding the witness's key, `[[log]]` keys are the logs' public verifier keys; remove the private key \
             from the configuration",
            path.display()
        ));
    }
    toml::from_str(&text).map_err(|err| format!("{}: {}", path.display(), config_error(&text, &err)))
}

/// The keys a configuration may hold: the only text of a line a refusal names.
const CONFIG_KEYS: &[&str] = &[
    "listen",
    "state",
    "key_file",
    "log",
    "origin",
    "keys",
    "limits",
    "max_open_files",
    "max_connections",
    "max_per_peer",
    "header_timeout",
    "body_timeout",
];

/// A configuration's parse error, by line, column and field, with the
/// message's quoted values left out. The parser's own rendering quotes the
/// line it stops at (and serde's messages the value refused): a line may
/// hold a secret without the `PRIVATE+KEY+` prefix [`looks_private`] sees
/// (a seed's base64 pasted for `key_file`, a password under a key the
/// witness does not know), and no secret is ever printed.
fn config_error(text: &str, err: &toml::de::Error) -> String {
    let mut message = String::with_capacity(err.message().len());
    let mut quoted = false;
    let mut escaped = false;
    for c in err.message().chars() {
        match (quoted, escaped, c) {
            (false, _, '"') => {
                quoted = true;
                message.push_str("\"(not shown)\"");
            }
            (false, ..) => message.push(c),
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => quoted = false,
            (true, false, _) => {}
        }
    }
    let message = values_not_shown(message.trim_end());
    let Some(start) = err.span().map(|span| span.start.min(text.len())) else {
        return format!("{message} (the line is not quoted: it may hold a secret)");
    };
    let before = text.get(..start).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let column = text.get(line_start..start).map_or(1, |head| head.chars().count() + 1);
    let line_text = text.get(line_start..).unwrap_or_default().split('\n').next().unwrap_or_default();
    let key = line_text.split_once('=').map(|(key, _)| key.trim());
    let field = match key {
        Some(key) if CONFIG_KEYS.contains(&key) => format!(", field `{key}`"),
        _ => String::new(),
    };
    format!("line {line}, column {column}{field}: {message} (the line is not quoted: it may hold a secret)")
}

/// Serde's words for a value it quotes between backticks (`integer `5``):
/// a number pasted under a field may be a secret (a PIN, a token of digits).
const QUOTED_VALUES: &[&str] = &["integer `", "floating point `", "character `", "boolean `"];

/// `message` with each value serde quotes between backticks left out; the
/// names it quotes so (a field, what was expected) are kept.
fn values_not_shown(message: &str) -> String {
    let mut shown = String::with_capacity(message.len());
    let mut rest = message;
    while let Some((at, word)) =
        QUOTED_VALUES.iter().filter_map(|word| rest.find(word).map(|at| (at, *word))).min_by_key(|(at, _)| *at)
    {
        let (before, after) = rest.split_at(at + word.len());
        shown.push_str(before);
        shown.push_str("(not shown)`");
        // Past the closing backtick, or the whole rest when there is none.
        rest = after.split_once('`').map_or("", |(_, tail)| tail);
    }
    shown.push_str(rest);
    shown
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Keygen { name, out, key_type } => {
            let algorithm = match key_type {
                KeyType::Ed25519 => ALG_COSIGNATURE_V1,
                KeyType::MlDsa44 => ALG_ML_DSA_44,
            };
            let key = SignerKey::generate(&name, algorithm).map_err(|err| err.to_string())?;
            write_secret(&out, &key.to_skey())?;
            say(&key.verifier_key().to_string()).map_err(|err| {
                format!(
                    "wrote {}, but could not print its verifier key ({err}); `agentplane-witness serve --key-file {}` \
                     prints it when it starts",
                    out.display(),
                    out.display()
                )
            })
        }
        Command::Serve { config, listen, state, key_files, logs, limits } => {
            let mut file = config.as_deref().map(read_config).transpose()?.unwrap_or_default();
            let limits = limits.or(std::mem::take(&mut file.limits)).apply()?;
            let listen = listen.or(file.listen).unwrap_or_else(|| "127.0.0.1:7380".to_owned());
            let state = state.or(file.state).ok_or("no state file: --state or `state` in the configuration")?;
            let key_files = if key_files.is_empty() {
                file.key_file.map(KeyFiles::into_vec).unwrap_or_default()
            } else {
                key_files
            };
            if key_files.is_empty() {
                return Err("no key file: --key-file or `key_file` in the configuration".into());
            }
            if key_files.len() > MAX_KEY_FILES {
                return Err(format!("{} key files: a witness takes at most {MAX_KEY_FILES}", key_files.len()));
            }
            let mut watched = Vec::new();
            for entry in &file.logs {
                for vkey in &entry.keys {
                    add_log(&mut watched, &entry.origin, vkey, &format!("log {}", entry.origin))?;
                }
            }
            for spec in &logs {
                // Only the origin is echoed: the key may be a private key
                // pasted by mistake (whose base64 may end in `=`, so the
                // whole argument is looked at first), and no secret is ever printed.
                if looks_private(spec) {
                    return Err(private_key_refusal("--log"));
                }
                // Without `ORIGIN=` it is not shown either: a private key
                // pasted without its `PRIVATE+KEY+` prefix has a verifier
                // key's shape, and a cosignature key's base64 has no `=`.
                let (origin, vkey) = spec.split_once('=').ok_or_else(|| {
                    "--log: expected ORIGIN=VKEY (what was given is not shown, in case it is a private key)".to_owned()
                })?;
                add_log(&mut watched, origin, vkey, &format!("--log {origin:?}=..."))?;
            }
            if watched.is_empty() {
                return Err("no log to watch: --log ORIGIN=VKEY or [[log]] in the configuration".into());
            }
            let mut cosigners =
                key_files.iter().map(|path| read_cosigner(path)).collect::<Result<Vec<_>, _>>()?.into_iter();
            let cosigner = cosigners.next().ok_or("no key file: --key-file or `key_file` in the configuration")?;
            let cosigners: Vec<Cosigner> = cosigners.collect();
            let vkeys: Vec<String> =
                std::iter::once(&cosigner).chain(&cosigners).map(|c| c.verifier_key().to_string()).collect();
            let config =
                WitnessConfig { cosigner, extra_cosigners: cosigners, logs: watched, clock: Arc::new(SystemClock) };
            let signals = StopSignals::install()?;
            let server = WitnessServer::start_with(config, &state, &listen, limits).map_err(|err| err.to_string())?;
            // One line, the URL last (tests and scripts take the last word).
            let listening = format!("agentplane-witness {} listening on {}", vkeys.join(" "), server.url());
            if say(&listening).is_err() {
                // Nobody reads standard output: the log says it instead.
                tracing::info!(target: "agentplane.witness", "{listening}");
            }
            signals.wait()?;
            tracing::info!(target: "agentplane.witness", "stopping: finishing the requests in flight");
            server.shutdown();
            Ok(())
        }
    }
}

/// SIGINT and SIGTERM, caught from the moment this is made (before the
/// address is printed, so a signal sent as soon as it is read stops the
/// server gracefully).
struct StopSignals {
    runtime: tokio::runtime::Runtime,
    #[cfg(unix)]
    signals: (tokio::signal::unix::Signal, tokio::signal::unix::Signal),
}

impl StopSignals {
    fn install() -> Result<Self, String> {
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|err| err.to_string())?;
        #[cfg(unix)]
        let signals = {
            use tokio::signal::unix::{SignalKind, signal};
            let _context = runtime.enter();
            (
                signal(SignalKind::interrupt()).map_err(|err| err.to_string())?,
                signal(SignalKind::terminate()).map_err(|err| err.to_string())?,
            )
        };
        Ok(Self {
            runtime,
            #[cfg(unix)]
            signals,
        })
    }

    /// Blocks until SIGINT or SIGTERM.
    fn wait(self) -> Result<(), String> {
        #[cfg(unix)]
        {
            let (mut interrupt, mut terminate) = self.signals;
            self.runtime.block_on(async {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            });
            Ok(())
        }
        #[cfg(not(unix))]
        {
            self.runtime.block_on(tokio::signal::ctrl_c()).map_err(|err| err.to_string())
        }
    }
}

/// Writes a new secret file whole, or nothing (R-UX-3): to a temporary file
/// beside `path` (mode 0600), synced, then linked in place, refusing an
/// existing file, and the directory synced. A disk that fills up, or a
/// crash, never leaves an empty or half-written key at `path`, which the
/// next `keygen` would refuse as existing and `serve` could not read.
fn write_secret(path: &Path, contents: &str) -> Result<(), String> {
    use std::io::Write as _;
    let writing = |err: std::io::Error| format!("writing {}: {err}", path.display());
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    // tempfile makes its files with mode 0600.
    let mut file = tempfile::Builder::new().prefix(".agentplane-witness-key-").tempfile_in(dir).map_err(writing)?;
    writeln!(file, "{contents}").and_then(|()| file.as_file().sync_all()).map_err(writing)?;
    file.persist_noclobber(path).map_err(|err| match err.error.kind() {
        std::io::ErrorKind::AlreadyExists => format!(
            "{} exists: keygen never overwrites a key file (a witness's key is what its logs and auditors trust); \
             give --out a new path, or move the old key away first if nothing trusts it any more",
            path.display()
        ),
        _ => format!("creating {}: {}", path.display(), err.error),
    })?;
    #[cfg(unix)]
    std::fs::File::open(dir).and_then(|dir| dir.sync_all()).map_err(writing)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{looks_private, read_cosigner};

    /// R-OPS-1 (review 53's note): a key's seed given where its file's
    /// path goes was printed back ("reading SEED: No such file"). Such a
    /// path is not shown; a path that is one still is.
    #[test]
    fn r_ops_1_a_seed_given_as_the_key_file_path_is_not_echoed() {
        let seed = "BFuEQKUUEWpDHJ7FEK68tV9lmaDqnijilR6l0a1b2c3d";
        let said = read_cosigner(std::path::Path::new(seed)).err().unwrap_or_default();
        assert!(!said.contains(seed) && said.contains("not shown"), "{said}");
        let missing = "/nonexistent/agentplane/witness.key";
        let said = read_cosigner(std::path::Path::new(missing)).err().unwrap_or_default();
        assert!(said.contains(missing), "{said}");
    }

    #[test]
    fn a_private_key_is_told_by_its_prefix_not_by_a_name_saying_private() {
        assert!(looks_private("PRIVATE+KEY+w.test/x+0a0b0c0d+AbCd="));
        assert!(looks_private("o=private+key+w.test/x+0a0b0c0d+AbCd"));
        assert!(!looks_private("private.example/log+0a0b0c0d+AbCdEf"));
    }
}
