//! The commands, one module each, and the dispatch from the command line.
//! A command reads the [`Settings`], opens what it works on
//! ([`crate::context`]), and prints typed rows ([`crate::output`]).

mod audit;
mod checkpoint;
mod console;
mod cost;
mod demo;
mod diff;
mod export;
mod fork;
mod init;
mod keys;
mod maintenance;
mod prove;
mod runs;
mod show;
mod sweep;

use crate::args::{Cli, Command, instant};
use crate::config::Settings;
use crate::context::SignatureRead;
use crate::failure::Failure;

/// Runs the command the flags name.
pub fn run(flags: Cli) -> Result<(), Failure> {
    let settings = Settings::resolve(&flags)?;
    let cli = &settings;
    if !matches!(flags.command, Command::Init { .. } | Command::Demo | Command::Keygen | Command::VerifyExport { .. }) {
        cli.require_plane_here()?;
    }
    match &flags.command {
        Command::Init { tenants, origin_base, witnesses, quorum, sweep_every } => {
            let defaults = crate::config::PlaneFiles::default();
            let files = crate::config::PlaneFiles {
                store: flags.store.clone().unwrap_or(defaults.store),
                keys: flags.keys.clone().unwrap_or(defaults.keys),
            };
            init::init(&files, tenants, origin_base, witnesses, *quorum, sweep_every)
        }
        Command::Sweep { every, probe_every, json } => {
            sweep::sweep(cli, flags.tenant.as_deref(), every.as_deref(), probe_every, *json)
        }
        Command::Keygen => keys::keygen(cli),
        Command::Keys { witness_config, print, json } => keys::keys(cli, *witness_config, *print, *json),
        Command::Demo => demo::run(cli, &flags),
        Command::Runs { outcome, ids, limit, before, skip_signatures, verify_signatures, require_signature, json } => {
            let signatures = signatures_read(cli, *skip_signatures, *verify_signatures, *require_signature)?;
            let flags = [
                (*ids, " --ids"),
                (*json, " --json"),
                (signatures == SignatureRead::Skip, " --skip-signatures"),
                (signatures == SignatureRead::Require, " --require-signature"),
            ]
            .iter()
            .filter_map(|(given, flag)| given.then_some(*flag))
            .collect::<String>();
            let page = limit.map(|limit| runs::Page { limit, before: before.as_deref(), settings: cli, flags: &flags });
            runs::runs(cli, outcome.map(|o| o.outcome()), page, *ids, signatures, *json)
        }
        Command::Show { run, json } => show::show(cli, run, *json),
        Command::Verify { require_signature, assert_complete, max_run_bytes, json } => {
            audit::verify(cli, *require_signature, (*assert_complete, *max_run_bytes), *json)
        }
        Command::Audit(args) => audit::audit(cli, args),
        Command::Checkpoint { cosigned, json } => checkpoint::checkpoint(cli, *cosigned, *json),
        Command::Prove { run, consistency, json } => match (run, consistency) {
            (Some(run), None) => prove::inclusion(cli, run, *json),
            (None, Some(old)) => prove::consistency(cli, *old, *json),
            _ => Err(Failure::Usage("give a RUN, or --consistency OLD_SIZE".into())),
        },
        Command::Cost { run, since, until, skip_signatures, verify_signatures, require_signature, json } => {
            let window = journal_core::TimeWindow {
                since: since.as_deref().map(|t| instant("--since", t)).transpose()?,
                until: until.as_deref().map(|t| instant("--until", t)).transpose()?,
            };
            let signatures = signatures_read(cli, *skip_signatures, *verify_signatures, *require_signature)?;
            cost::cost(cli, run.as_deref(), window, signatures, *json)
        }
        Command::Diff { a, b, json } => diff::diff(cli, a, b, *json),
        Command::Fork { run, at, key } => fork::fork(cli, run, *at, key.as_deref()),
        Command::Resume { run, raise, lift, answer } => fork::resume(cli, run, raise, *lift, answer),
        Command::Export { run, output, force } => export::export(cli, run, output, *force),
        Command::VerifyExport { file, log_key, record_key, require_signature, witness_keys, quorum, json } => {
            let trust = export::Trust {
                log_key,
                record_keys: record_key,
                require_signature: *require_signature,
                witness_keys,
                quorum: *quorum,
            };
            export::verify_export(file, &trust, *json)
        }
        Command::VerifyProof { file, checkpoints, log_key, root, size, json } => {
            let trusted =
                prove::Trusted { checkpoints, log_key: log_key.as_deref(), root: root.as_deref(), size: *size };
            prove::verify_proof(file, &trusted, *json)
        }
        Command::Repair => maintenance::repair(cli),
        Command::Compact => maintenance::compact(cli),
        Command::Console { listen, token_file, max_run_bytes } => {
            console::console(cli, *listen, token_file.as_deref(), *max_run_bytes)
        }
        Command::Migrate => maintenance::migrate(cli),
    }
}

/// How `runs` and `cost` read signatures: unless skipped, verified whenever
/// the plane's key file is at hand, as `show` does, and required with
/// `--require-signature`. Asked for by name (`--verify-signatures`,
/// `--require-signature`) with no key file to verify them with, the command
/// is refused rather than read through the chain alone.
fn signatures_read(cli: &Settings, skip: bool, asked: bool, required: bool) -> Result<SignatureRead, Failure> {
    let flag = if required { "--require-signature" } else { "--verify-signatures" };
    if (asked || required) && crate::keys::PlaneKeys::read_if_present(&cli.keys)?.is_none() {
        return Err(Failure::Usage(format!(
            "{flag}: {} is missing, and the records' signatures are verified with the plane's record key it holds; run \
             beside the key file (or give --keys), or read the chain alone with --skip-signatures",
            cli.keys.display()
        )));
    }
    Ok(match (skip, required) {
        (true, _) => SignatureRead::Skip,
        (false, true) => SignatureRead::Require,
        (false, false) => SignatureRead::Verify,
    })
}
