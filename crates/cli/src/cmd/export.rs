//! `agentplane export` (a run to a self-contained file: a sealed run with its
//! seal, an open run with the heads leaf holding its head, assembled by
//! [`journal_core::export::export_run`]) and `agentplane verify-export` (the
//! file checked offline with only the trusted keys).

use std::path::Path;

use journal_core::export::{ExportCovers, ExportError, VerifiedExport, export_run};
use journal_core::{ChainCheck, Ed25519Verifier, VerifyOptions};
use serde::Serialize;

use crate::args::{record_key, run_id};
use crate::config::Settings;
use crate::context::{Plane, reader_upcasters};
use crate::failure::Failure;
use crate::output::print_json;

/// `agentplane export RUN -o FILE`.
pub fn export(settings: &Settings, run: &str, output: &Path) -> Result<(), Failure> {
    let plane = Plane::open(settings, false)?;
    let run = run_id(run)?;
    let verifier = plane.keys.record_verifier()?;
    let upcasters = reader_upcasters();
    let check = plane.check(&upcasters, &verifier);
    let mark = Some(plane.signing_mark()?);
    let exported = export_run(plane.store.as_ref(), &plane.tenant, &plane.origin, &plane.log, &run, check, mark)?;
    if exported.cosigned.is_none() {
        eprintln!("note: no witness quorum has cosigned a checkpoint holding this run yet (`agentplane sweep`)");
    }
    std::fs::write(output, exported.text).map_err(|err| Failure::Io(format!("writing {}: {err}", output.display())))?;
    match exported.covers {
        ExportCovers::Seal => {
            eprintln!("exported sealed run {run} ({} records) to {}", exported.records, output.display());
        }
        ExportCovers::Head { seq, .. } => eprintln!(
            "exported open run {run} ({} records, its head at seq {seq} proven in the log: a prefix, not a complete \
             history) to {}",
            exported.records,
            output.display()
        ),
    }
    Ok(())
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
            "signatures by trusted keys verified; unsigned records accepted"
        }
    }
}

/// `verify-export --json` of a valid export. Fields in alphabetical order,
/// as the JSON has always been printed.
#[derive(Debug, Serialize)]
struct Valid<'a> {
    cosignatures: Option<usize>,
    /// `"seal"` (a sealed run, complete) or `"head"` (an open run's head: a prefix).
    covers: &'static str,
    cosigned_size: Option<u64>,
    index: u64,
    origin: &'a str,
    outcome: Option<&'static str>,
    record_signatures: &'static str,
    records: u64,
    run: &'a str,
    size: u64,
    valid: bool,
}

/// `verify-export --json` of an export that does not verify.
#[derive(Debug, Serialize)]
struct Invalid {
    finding: String,
    valid: bool,
}

/// The export in `file` verified with the trusted log and record keys, then
/// its cosigned checkpoint held to the trusted witnesses when any are given
/// (with how many of them cosigned); the outer error is the flags' or the file's.
fn verified(file: &Path, trust: &Trust<'_>) -> Result<Result<(VerifiedExport, Option<usize>), ExportError>, Failure> {
    let log_key =
        witness::VerifierKey::parse(trust.log_key).map_err(|err| Failure::Usage(format!("--log-key: {err}")))?;
    let mut verifier = Ed25519Verifier::new();
    for spec in trust.record_keys {
        let (key_id, public) = record_key(spec)?;
        verifier.trust(&key_id, public).map_err(Failure::Usage)?;
    }
    let text = std::fs::read(file).map_err(|err| Failure::Io(format!("reading {}: {err}", file.display())))?;
    let text =
        String::from_utf8(text).map_err(|_| Failure::Findings(format!("{} is not UTF-8 text", file.display())))?;
    let trusted = trust
        .witness_keys
        .iter()
        .map(|key| witness::TrustedWitness::parse(key).map_err(|err| Failure::Usage(format!("--witness-key: {err}"))))
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
        Ok((verified, cosignatures))
    }))
}

/// `agentplane verify-export FILE --log-key VKEY ...`: exit 1 on findings.
pub fn verify_export(file: &Path, trust: &Trust<'_>, json: bool) -> Result<(), Failure> {
    let record_check = trust.record_check();
    match verified(file, trust)? {
        Ok((verified, cosignatures)) => {
            if json {
                return print_json(&Valid {
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
                    valid: true,
                });
            }
            let witness_check = cosignatures.map_or_else(
                || "not checked (no --witness-key)".to_owned(),
                |count| format!("{count} distinct trusted witness keys cosigned a checkpoint holding the run"),
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
                    "valid: open run {} ({}) had these {} records, its head at seq {seq}, when leaf {} of {} in {} \
                     was logged (a heads leaf of {entries} runs); a prefix, not a complete history",
                    verified.run,
                    verified.outcome.map_or("running", |o| o.as_str()),
                    verified.records,
                    verified.index,
                    verified.tree.size,
                    verified.origin
                ),
            }
            outln!("record signatures: {record_check}");
            outln!("witnesses: {witness_check}");
            Ok(())
        }
        Err(err) => {
            if json {
                print_json(&Invalid { finding: err.to_string(), valid: false })?;
            }
            Err(Failure::Findings(err.to_string()))
        }
    }
}
