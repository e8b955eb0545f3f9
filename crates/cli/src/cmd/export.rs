//! `agentplane export` (a run to a self-contained file: a sealed run with its
//! seal, an open run with the heads leaf holding its head, assembled by
//! [`journal_core::export::export_run`]) and `agentplane verify-export` (the
//! file checked offline with only the trusted keys).

use std::path::Path;

use journal_core::export::{ExportCovers, ExportError, VerifiedExport, export_run_asking};
use journal_core::{ChainCheck, Ed25519Verifier, Unvouched, VerifyOptions};
use serde::Serialize;

use crate::args::{key_error, record_key, run_id};
use crate::config::Settings;
use crate::context::{Plane, reader_upcasters, unvouched_said};
use crate::failure::Failure;
use crate::output::{FailureRow, print_json, written};

/// `agentplane export RUN -o FILE [--force]` (`-o -`: standard output).
pub fn export(settings: &Settings, run: &str, output: &Path, force: bool) -> Result<(), Failure> {
    // Refused before anything is signed; the write itself refuses a file made meanwhile.
    if !force && output != Path::new("-") && output.exists() {
        return Err(Failure::Usage(format!("{} exists: give --force to overwrite it", output.display())));
    }
    refuse_a_plane_file(settings, output)?;
    let plane = Plane::open(settings, false)?;
    let run = run_id(run)?;
    let verifier = plane.keys.record_verifier()?;
    let upcasters = reader_upcasters();
    let check = plane.check(&upcasters, &verifier);
    let mark = plane.signing_mark()?;
    // Asked again should signing start over on a fresh view (another signer
    // got further), as `checkpoint` asks: what they hold then binds that
    // signature.
    let ask_again = plane.ask_again(mark)?;
    let exported = export_run_asking(
        plane.store.as_ref(),
        &plane.tenant,
        &plane.origin,
        &plane.log,
        &run,
        check,
        Some(mark),
        &ask_again,
    )?;
    if exported.cosigned.is_none() {
        errln!(
            "note: no witness quorum has cosigned a checkpoint holding this run yet (`{}`)",
            settings.command("sweep")
        );
    }
    if output == Path::new("-") {
        out!("{}", exported.text);
        written(std::io::Write::flush(&mut std::io::stdout()));
    } else {
        write_new(output, exported.text.as_bytes(), force)?;
    }
    let to = if output == Path::new("-") { "standard output".to_owned() } else { output.display().to_string() };
    match exported.covers {
        ExportCovers::Seal => {
            errln!("exported sealed run {run} ({} records) to {to}", exported.records);
        }
        ExportCovers::Head { seq, .. } => errln!(
            "exported open run {run} ({} records, its head at seq {seq} proven in the log: a prefix, not a complete \
             history) to {to}",
            exported.records
        ),
    }
    Ok(())
}

/// Refuses an output that is one of the plane's own files, named directly
/// or through a link: `--force` replaces an earlier export, never the
/// store, the key file, its high-water mark or the configuration (a
/// mistyped or completed name would lose every run, or the plane's keys).
fn refuse_a_plane_file(settings: &Settings, output: &Path) -> Result<(), Failure> {
    // Nothing there yet is nothing of the plane's.
    let Ok(target) = std::fs::canonicalize(output) else { return Ok(()) };
    let mark = crate::high_water::path_beside(&settings.keys);
    let beside = |path: &Path, suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        std::path::PathBuf::from(name)
    };
    // The lock is beside the file the mark is (through a link at its place).
    let mark_lock = beside(&std::fs::canonicalize(&mark).unwrap_or_else(|_| mark.clone()), ".lock");
    let way_back = store_redb::RedbStore::backup_path(&settings.store);
    let plane_files = [
        (Some(settings.store.as_path()), "store"),
        (Some(settings.keys.as_path()), "key file"),
        (Some(mark.as_path()), "high-water mark"),
        (Some(mark_lock.as_path()), "high-water mark's lock"),
        (Some(way_back.as_path()), "store as it was before `agentplane migrate` (its only way back)"),
        (settings.config_path.as_deref(), "configuration"),
    ];
    for (file, what) in plane_files {
        if file.and_then(|file| std::fs::canonicalize(file).ok()).is_some_and(|file| file == target) {
            return Err(Failure::Usage(format!(
                "{} is the plane's {what}: an export never replaces it (give -o another file)",
                output.display()
            )));
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` whole or not at all (R-UX-3): a new file, or
/// with `force` in place of the file there, which a full disk or a crash
/// leaves as it was (never truncated first). A terminal, a pipe or a device
/// holds nothing to keep: it is written through.
fn write_new(path: &Path, bytes: &[u8], force: bool) -> Result<(), Failure> {
    let written = match std::fs::metadata(path) {
        Ok(meta) if force && !meta.is_file() => std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut file| std::io::Write::write_all(&mut file, bytes)),
        _ if force => crate::output::write_replacing(path, bytes),
        _ => crate::output::write_new(path, bytes, false),
    };
    written.map_err(|err| match err.kind() {
        std::io::ErrorKind::AlreadyExists => {
            Failure::Usage(format!("{} exists: give --force to overwrite it", path.display()))
        }
        _ => Failure::Io(format!("writing {}: {err}", path.display())),
    })
}

/// Reads an export (`-`: standard input) within the limits
/// (`journal_core::export::read_export_text`), as text.
pub(crate) fn read_export(file: &Path) -> Result<String, Failure> {
    use journal_core::export::{ExportReadError, read_export_text};
    let stdin = file == Path::new("-");
    let name = if stdin { "standard input".to_owned() } else { file.display().to_string() };
    let read = if stdin {
        read_export_text(&mut std::io::stdin().lock(), &name)
    } else {
        let mut opened = std::fs::File::open(file).map_err(|err| Failure::Io(format!("reading {name}: {err}")))?;
        read_export_text(&mut opened, &name)
    };
    read.map_err(|err| match err {
        ExportReadError::Io { .. } => Failure::Io(err.to_string()),
        ExportReadError::LineTooLong { .. } | ExportReadError::TooLarge { .. } | ExportReadError::NotText { .. } => {
            Failure::NotAnExport(err.to_string())
        }
    })
}

/// What `verify-export` trusts: the flags, as given.
pub struct Trust<'a> {
    /// `--log-key`: the log's verifier key (a vkey).
    pub log_key: &'a str,
    /// `--record-key KEY_ID=BASE64`, each.
    pub record_keys: &'a [String],
    /// `--require-signature`.
    pub require_signature: bool,
    /// `--witness-key VKEY`, each.
    pub witness_keys: &'a [String],
    /// `--quorum N`.
    pub quorum: Option<usize>,
}

impl Trust<'_> {
    /// What the record signatures were held to, said in words.
    fn record_check(&self) -> &'static str {
        if self.record_keys.is_empty() {
            "not checked (no --record-key)"
        } else if self.require_signature {
            "every record signed by a trusted key"
        } else {
            "signatures by trusted keys verified; unsigned records and records under key ids not trusted here accepted"
        }
    }
}

/// `verify-export --json` of a valid export. Fields in alphabetical order,
/// as the JSON has always been printed.
#[derive(Debug, Serialize)]
struct ValidRow<'a> {
    cosignatures: Option<usize>,
    cosigned_size: Option<u64>,
    /// `"seal"` (a sealed run, complete) or `"head"` (an open run's head: a prefix).
    covers: &'static str,
    index: u64,
    origin: &'a str,
    outcome: Option<&'static str>,
    record_signatures: &'static str,
    records: u64,
    run: &'a str,
    size: u64,
    /// Records with no signature; null without `--record-key`.
    unsigned: Option<u64>,
    /// Records signed under a key id no `--record-key` names; null without
    /// `--record-key`.
    untrusted: Option<u64>,
    valid: bool,
}

/// `verify-export --json` of an export that does not verify, or of a file
/// that cannot be read as one: the failure's class and code, its message,
/// and `valid: false`.
#[derive(Debug, Serialize)]
struct Invalid {
    #[serde(flatten)]
    failure: FailureRow,
    valid: bool,
}

/// What [`verified`] found of a valid export: the export, how many trusted
/// witnesses cosigned it (`None` when none were given), and what no trusted
/// record key vouches for (`None` without `--record-key`).
type Valid = (VerifiedExport, Option<usize>, Option<Unvouched>);

/// The export in `file` verified with the trusted log and record keys, then
/// its cosigned checkpoint held to the trusted witnesses when any are given
/// (with how many of them cosigned); the outer error is the flags' or the file's.
fn verified(file: &Path, trust: &Trust<'_>) -> Result<Result<Valid, ExportError>, Failure> {
    if trust.require_signature && trust.record_keys.is_empty() {
        return Err(Failure::Usage(
            "--require-signature needs the record key to check with: give --record-key KEY_ID=BASE64 \
             (`agentplane keys --print record-key` prints it on the plane)"
                .into(),
        ));
    }
    let log_key = crate::args::log_key(trust.log_key)?;
    let mut verifier = Ed25519Verifier::new();
    for spec in trust.record_keys {
        let (key_id, public) = record_key(spec)?;
        verifier.trust(&key_id, public).map_err(Failure::Usage)?;
    }
    let text = read_export(file)?;
    let trusted = trust
        .witness_keys
        .iter()
        .map(|key| witness::TrustedWitness::parse(key).map_err(|err| key_error("--witness-key", key, &err)))
        .collect::<Result<Vec<_>, _>>()?;
    // One public key under two names would count twice (R-AUD-10).
    witness::check_distinct_keys(&trusted).map_err(|err| Failure::Usage(format!("--witness-key: {err}")))?;
    if trust.quorum == Some(0) {
        return Err(Failure::Usage("--quorum 0 would accept a checkpoint no witness cosigned; give at least 1".into()));
    }
    if trust.quorum.is_some() && trusted.is_empty() {
        return Err(Failure::Usage("--quorum needs at least one --witness-key".into()));
    }
    let upcasters = reader_upcasters();
    let options = VerifyOptions { require_signature: trust.require_signature };
    let check = ChainCheck { upcasters: &upcasters, verifier: Some(&verifier), options };
    Ok(journal_core::export::verify_export(&text, &[log_key], check).and_then(|verified| {
        let cosignatures = match trust.quorum.or((!trusted.is_empty()).then_some(1)) {
            Some(quorum) => Some(verified.cosignatures(&trusted, quorum)?),
            None => None,
        };
        let unvouched = (!trust.record_keys.is_empty()).then(|| Unvouched::count(&verified.chain, &verifier));
        Ok((verified, cosignatures, unvouched))
    }))
}

/// `agentplane verify-export FILE --log-key VKEY ...`: exit 1 on findings,
/// 2 on usage or I/O, 3 on a format or record version this build does not
/// read. With `--json` every answer is one JSON object on stdout.
pub fn verify_export(file: &Path, trust: &Trust<'_>, json: bool) -> Result<(), Failure> {
    let result = verified(file, trust).and_then(|verified| verified.map_err(Failure::Export));
    match result {
        Ok((verified, cosignatures, unvouched)) => {
            print_valid(&verified, cosignatures, (trust.record_check(), unvouched), json)
        }
        Err(failure) => {
            if json {
                print_json(&Invalid { failure: FailureRow::of(&failure), valid: false })?;
            }
            Err(failure)
        }
    }
}

fn print_valid(
    verified: &VerifiedExport,
    cosignatures: Option<usize>,
    (record_check, unvouched): (&'static str, Option<Unvouched>),
    json: bool,
) -> Result<(), Failure> {
    if json {
        return print_json(&ValidRow {
            cosignatures,
            covers: verified.covers.as_str(),
            cosigned_size: verified.cosigned.as_ref().map(|c| c.tree.size),
            index: verified.index,
            origin: verified.origin.as_str(),
            outcome: verified.outcome.map(|o| o.as_str()),
            record_signatures: record_check,
            records: verified.records,
            run: verified.run.as_str(),
            size: verified.tree.size,
            unsigned: unvouched.map(|counted| counted.unsigned),
            untrusted: unvouched.map(|counted| counted.untrusted),
            valid: true,
        });
    }
    let witness_check = cosignatures.map_or_else(
        || "not checked (no --witness-key)".to_owned(),
        // Witnesses, as `cosignatures` counts them: one witness's two keys'
        // lines are one (R-AUD-10).
        |count| match count {
            1 => "1 trusted witness cosigned a checkpoint holding the run".to_owned(),
            count => format!("{count} distinct trusted witnesses cosigned a checkpoint holding the run"),
        },
    );
    match verified.covers {
        ExportCovers::Seal => outln!(
            "valid: run {} ({} records, {}) is leaf {} of {} in {}",
            verified.run,
            verified.records,
            verified.outcome.map_or("?", |o| o.as_str()),
            verified.index,
            verified.tree.size,
            verified.origin
        ),
        ExportCovers::Head { seq, entries } => outln!(
            "valid: open run {} ({}) had these {} records, its head at seq {seq}, when leaf {} of {} in {} was \
             logged (a heads leaf of {entries} runs); a prefix, not a complete history",
            verified.run,
            verified.outcome.map_or("running", |o| o.as_str()),
            verified.records,
            verified.index,
            verified.tree.size,
            verified.origin
        ),
    }
    outln!("record signatures: {record_check}");
    if let Some(said) = unvouched.and_then(|counted| {
        unvouched_said(counted, "of the exported records", "`verify-export --require-signature` refuses them")
    }) {
        outln!("{said}");
    }
    outln!("witnesses: {witness_check}");
    Ok(())
}
