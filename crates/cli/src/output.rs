//! What the commands print with: JSON from typed rows (one document, or JSON
//! Lines for a stream), and the JSON of a failure. Hashes in JSON are
//! lowercase hex in every command (as in the audit report and exports'
//! records); the signed notes keep their own base64.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use serde::Serialize;

use crate::failure::{Class, Failure};

/// Whether this process has printed JSON on standard output: a command that
/// fails after printing its report does not print a failure object too.
static JSON_PRINTED: AtomicBool = AtomicBool::new(false);

/// Whether standard output was lost: [`NOT_LOST`], [`CLOSED`] (a reader
/// that stopped reading) or [`FAILED`] (another write error: a full disk).
static STDOUT_LOST: AtomicU8 = AtomicU8::new(NOT_LOST);
const NOT_LOST: u8 = 0;
const CLOSED: u8 = 1;
const FAILED: u8 = 2;

/// Whether a write to standard output failed: every later one is skipped,
/// and the command goes on to its end (its store closed, its checkpoint
/// signed, its verdict its exit code).
pub fn stdout_lost() -> bool {
    STDOUT_LOST.load(Ordering::Relaxed) != NOT_LOST
}

/// The exit code of a command that succeeded: 0, or 2 (I/O) when what it
/// printed could not be written; a closed pipe is a reader that had read
/// enough (`runs --ids | head -1`), 0.
pub fn success_exit_code() -> u8 {
    if STDOUT_LOST.load(Ordering::Relaxed) == FAILED { Class::Io.exit_code() } else { 0 }
}

/// Prints a typed row (or any `Serialize` value) as pretty JSON, one value
/// per call: the whole output of a command that prints one document. A
/// row's fields are declared in alphabetical order: the order the JSON has
/// always had.
pub fn print_json<T: Serialize + ?Sized>(value: &T) -> Result<(), Failure> {
    let text = json_for_a_terminal(serde_json::to_string_pretty(value).map_err(|err| Failure::Io(err.to_string()))?);
    JSON_PRINTED.store(true, Ordering::Relaxed);
    outln!("{text}");
    Ok(())
}

/// Prints one object of a stream as a line of its own (JSON Lines: one
/// compact object per line, flushed, so a reader sees each as it comes).
pub fn print_json_line<T: Serialize + ?Sized>(value: &T) -> Result<(), Failure> {
    let text = json_for_a_terminal(serde_json::to_string(value).map_err(|err| Failure::Io(err.to_string()))?);
    JSON_PRINTED.store(true, Ordering::Relaxed);
    outln!("{text}");
    written(std::io::Write::flush(&mut std::io::stdout()));
    Ok(())
}

/// JSON text with every character that rewrites a terminal escaped as
/// `\uXXXX`: JSON lets DEL, the C1 controls (U+009B starts an escape
/// sequence on some terminals), bidirectional overrides and characters that
/// show nothing stand raw in a string, and `--json` is read in terminals too. The same value for any
/// JSON reader: outside strings JSON text holds no such character but the
/// newlines of its layout, which stay.
fn json_for_a_terminal(text: String) -> String {
    let escaped = |c: char| c != '\n' && rewrites_the_terminal(c);
    if !text.chars().any(escaped) {
        return text;
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) {
            // A character past U+FFFF as its surrogate pair: JSON's `\u`
            // takes four hex digits.
            for unit in c.encode_utf16(&mut [0; 2]) {
                shown.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            shown.push(c);
        }
    }
    shown
}

/// The JSON of a failure in `--json` mode, on standard output; the exit
/// code is the class's, as without `--json`.
#[derive(Debug, Serialize)]
pub struct FailureRow {
    /// The class: `findings`, `usage`, `io` or `build_skew`.
    pub class: Class,
    /// A stable code: the class's name, or a more precise one (`export_*`).
    pub code: &'static str,
    /// The message, as printed on stderr without `--json`.
    pub message: String,
}

impl FailureRow {
    pub fn of(failure: &Failure) -> Self {
        // Redacted like stderr: no password of a store URL is ever printed.
        Self { class: failure.class(), code: failure.code(), message: store_pg::redact(&failure.message()) }
    }
}

/// In `--json` mode, prints the failure as JSON unless the command already
/// printed its own report (whose content says what failed): one compact
/// line when the command's output is a stream in JSON Lines (`lines`).
pub fn print_failure_json(failure: &Failure, lines: bool) {
    if !JSON_PRINTED.load(Ordering::Relaxed) {
        let row = FailureRow::of(failure);
        // A failure to print is already reported on stderr by the caller.
        let _ = if lines { print_json_line(&row) } else { print_json(&row) };
    }
}

/// Writes `text` to standard output unless it is lost ([`stdout_lost`]),
/// noting a write that fails ([`written`]): what `out!` and `outln!` do.
pub fn write_out(text: std::fmt::Arguments<'_>) {
    if !stdout_lost() {
        written(std::io::Write::write_fmt(&mut std::io::stdout(), text));
    }
}

/// Notes a write to standard output that failed: a closed pipe quietly,
/// another write error with a message (once). The command is never ended
/// here: it goes on without its output (see [`stdout_lost`]), and its exit
/// is its own answer (its findings, its failure), else
/// [`success_exit_code`]. Ended here, a command that writes stopped part
/// way with its store open (`demo | head -1`: no checkpoint signed, a redb
/// file every later writer refused until `repair`).
pub fn written(result: std::io::Result<()>) {
    if let Err(err) = result {
        let lost = if err.kind() == std::io::ErrorKind::BrokenPipe { CLOSED } else { FAILED };
        if STDOUT_LOST.fetch_max(lost, Ordering::Relaxed) != FAILED && lost == FAILED {
            errln!("agentplane: writing to standard output: {err}");
        }
    }
}

/// A failure's message as the terminal gets it: a message may quote hostile
/// input (an export's line, a witness's answer), so every control character
/// but the newline, every bidirectional override and every character that
/// shows nothing, is escaped (`\u{1b}`:
/// no escape sequence reaches the terminal), and every line after the first
/// is indented, so that no quoted
/// newline starts a line that reads as the command's own.
pub fn printable(message: &str) -> String {
    let mut shown = String::with_capacity(message.len());
    for c in message.trim_end_matches('\n').chars() {
        match c {
            '\n' => shown.push_str("\n  "),
            c if rewrites_the_terminal(c) => shown.extend(c.escape_default()),
            c => shown.push(c),
        }
    }
    shown
}

/// A character that moves the cursor, rewrites the terminal, reorders what
/// is shown after it or shows nothing: the workspace's one rule
/// ([`witness::text::disguises`]), which the console and the witness
/// client's errors escape by too.
fn rewrites_the_terminal(c: char) -> bool {
    witness::text::disguises(c)
}

/// Text recorded by someone else (a record's body, an export's) as one
/// line of a table: newlines and carriage returns as spaces, every other
/// control character, every bidirectional override and every character
/// that shows nothing escaped, so nothing it holds moves the cursor,
/// rewrites the terminal, reorders the line or passes for other text.
pub fn one_line(text: &str) -> String {
    let mut line = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' => line.push(' '),
            c if rewrites_the_terminal(c) => line.extend(c.escape_default()),
            c => line.push(c),
        }
    }
    line
}

/// Text of many lines as the terminal gets it (a signed note, whose
/// signature lines of keys nobody trusts are anyone's who wrote the store):
/// its newlines kept, every other character that rewrites the terminal,
/// reorders or shows nothing escaped. A note holding none is printed byte
/// for byte; `--json` has any note exactly.
pub fn lines_shown(text: &str) -> String {
    text.chars().fold(String::with_capacity(text.len()), |mut shown, c| {
        if c != '\n' && rewrites_the_terminal(c) {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
        shown
    })
}

/// The longest line of a report quoting someone else's text (an audit's
/// finding), in characters.
pub const MAX_LINE_CHARS: usize = 1000;

/// [`one_line`], cut after [`MAX_LINE_CHARS`] characters, saying how long it
/// was and `whole`: where it is whole. A finding quoting a 16 MiB key id is
/// not thousands of screens of one line between the lines around it.
pub fn one_line_cut(text: &str, whole: &str) -> String {
    let line = one_line(text);
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None => line,
        Some((cut, _)) => {
            format!("{}… ({} characters in all; {whole})", line.get(..cut).unwrap_or_default(), line.chars().count())
        }
    }
}

/// The longest argument echoed back in a message, in characters.
const SHOWN_CHARS: usize = 60;

/// An argument quoted for a message, cut after 60 characters (with how long
/// it was): a 100 KB argument is not echoed back whole.
pub fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        None => format!("{text:?}"),
        Some((cut, _)) => format!("{:?}... ({} bytes)", text.get(..cut).unwrap_or_default(), text.len()),
    }
}

/// Writes a new file whole, or nothing: the bytes go to a temporary file
/// beside `path` (mode 0600 when `private`, else as the umask gives a new
/// file), synced, then linked in place, refusing an existing file
/// (`ErrorKind::AlreadyExists`), and the directory synced. A disk that fills
/// up, or a crash, never leaves a half-written file at `path` to be read, or
/// to refuse the next try.
pub fn write_new(path: &std::path::Path, bytes: &[u8], private: bool) -> std::io::Result<()> {
    let (dir, file) = written_aside(path, bytes, private, None)?;
    file.persist_noclobber(path).map_err(|err| err.error)?;
    sync_dir(dir)
}

/// Replaces the file at `path` (a link is followed: the file it names is
/// replaced, the link kept) whole, or not at all: the bytes go to a
/// temporary file beside it, with its permissions, synced, then renamed
/// over it, and the directory synced. A disk that fills up, or a crash,
/// leaves the file as it was, never half of the new one. Where nothing is
/// there yet, the file is made as [`write_new`] makes it.
pub fn write_replacing(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let (target, permissions) = match std::fs::metadata(path) {
        Ok(meta) => (std::fs::canonicalize(path)?, Some(meta.permissions())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => (path.to_path_buf(), None),
        Err(err) => return Err(err),
    };
    let (dir, file) = written_aside(&target, bytes, false, permissions)?;
    file.persist(&target).map_err(|err| err.error)?;
    sync_dir(dir)
}

/// `bytes` in a temporary file in the directory of `path`, synced, and that
/// directory. The file is made with mode 0600 when `private`, else as the
/// umask gives a new file, then given `keep` when there are permissions to
/// keep (those of the file it replaces).
fn written_aside<'a>(
    path: &'a std::path::Path,
    bytes: &[u8],
    private: bool,
    keep: Option<std::fs::Permissions>,
) -> std::io::Result<(&'a std::path::Path, tempfile::NamedTempFile)> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".agentplane-new-");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(if private { 0o600 } else { 0o666 }));
    #[cfg(not(unix))]
    let _ = private;
    let mut file = builder.tempfile_in(dir)?;
    if let Some(keep) = keep {
        file.as_file().set_permissions(keep)?;
    }
    std::io::Write::write_all(&mut file, bytes)?;
    file.as_file().sync_all()?;
    Ok((dir, file))
}

/// Makes the names just linked or renamed in `dir` durable.
fn sync_dir(dir: &std::path::Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod json_tests {
    use super::*;

    /// R-UX-3 (review 52): agent text in `--json` output reaches terminals
    /// too; serde_json escapes the C0 controls but leaves DEL, the C1
    /// controls and bidirectional overrides raw. They are escaped, and the
    /// JSON still reads back as the same value.
    #[test]
    fn json_output_escapes_what_rewrites_a_terminal_and_keeps_the_value() {
        let hostile = serde_json::json!({ "step": "a\u{9b}31m\u{202e}b\u{7f}c\u{1b}[2J\u{200b}\u{e0041}", "n": 1 });
        for text in [serde_json::to_string_pretty(&hostile).unwrap(), serde_json::to_string(&hostile).unwrap()] {
            assert!(text.contains('\u{9b}'), "serde_json leaves C1 raw: {text:?}");
            let shown = json_for_a_terminal(text);
            assert!(!shown.chars().any(|c| c != '\n' && rewrites_the_terminal(c)), "{shown:?}");
            assert_eq!(serde_json::from_str::<serde_json::Value>(&shown).unwrap(), hostile);
        }
    }
}
