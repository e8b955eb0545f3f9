//! `agentplane keygen` (the plane's keys, alone) and `agentplane keys` (its
//! public keys, in the forms `agentplane audit` takes).

use journal_core::{Origin, Signer as _};
use serde::Serialize;

use crate::args::KeyPart;
use crate::config::Settings;
use crate::failure::Failure;
use crate::keys::{DEFAULT_ORIGIN, PlaneKeys};
use crate::output::print_json;

/// `keys --json`. Fields in alphabetical order, as the JSON has always been printed.
#[derive(Debug, Serialize)]
struct KeysRow<'a> {
    log_key: &'a str,
    origin: &'a str,
    record_key: &'a str,
    tenant: &'a str,
}

/// `agentplane keygen [--origin ORIGIN]`: prints the log's verifier key.
/// The origin defaults to the configuration's tenant's, else to the one
/// `init` gives the tenant `default` (`agentplane.local/plane/default`).
pub fn keygen(cli: &Settings) -> Result<(), Failure> {
    // A store that holds runs was signed by keys already: minting new ones
    // would mix two planes in one file.
    // Either backend: a PostgreSQL URL is no file, and its runs count too.
    if crate::backend::holds_runs(&cli.store)? {
        return Err(Failure::Usage(format!(
            "{} already holds runs: its keys exist (use the plane's key file); an auditor needs no key file \
             (`agentplane audit` with the public keys `agentplane keys` prints on the plane). {}",
            crate::backend::display(&cli.store),
            crate::keys::KEY_LOST_FOR_GOOD
        )));
    }
    let default = format!("{DEFAULT_ORIGIN}/default");
    let origin = cli.origin.as_deref().unwrap_or(&default);
    let origin = Origin::new(origin).map_err(|err| Failure::Usage(format!("--origin: {err}")))?;
    let keys = PlaneKeys::generate(&[origin])?;
    keys.write(&cli.keys)?;
    errln!("wrote {}; the record key id is {}", cli.keys.display(), keys.record.key_id());
    for origin in keys.origins() {
        outln!("{}", keys.log_for(&origin)?.verifier_key());
    }
    Ok(())
}

/// `agentplane keys [--witness-config | --print PART | --json]`.
pub fn keys(cli: &Settings, witness_config: bool, print: Option<KeyPart>, json: bool) -> Result<(), Failure> {
    let keys = PlaneKeys::read(&cli.keys)?;
    if witness_config {
        for origin in keys.origins() {
            outln!(
                "[[log]]\norigin = {:?}\nkeys = [{:?}]\n",
                origin.as_str(),
                keys.log_for(&origin)?.verifier_key().to_string()
            );
        }
        return Ok(());
    }
    let origin = cli.origin(Some(&keys))?;
    let vkey = keys.log_for(&origin)?.verifier_key().to_string();
    let record_key = keys.record_key_spec();
    match print {
        Some(KeyPart::LogKey) => {
            outln!("{vkey}");
            return Ok(());
        }
        Some(KeyPart::RecordKey) => {
            outln!("{record_key}");
            return Ok(());
        }
        Some(KeyPart::Origin) => {
            outln!("{origin}");
            return Ok(());
        }
        None => {}
    }
    if json {
        return print_json(&KeysRow {
            log_key: &vkey,
            origin: origin.as_str(),
            record_key: &record_key,
            tenant: &cli.tenant,
        });
    }
    outln!("tenant      {}", cli.tenant);
    outln!("origin      {origin}");
    outln!("log key     {vkey}");
    outln!("record key  {record_key}");
    outln!();
    outln!("an auditor runs:");
    outln!(
        "  agentplane --store {} --tenant {} --origin '{origin}' audit --log-key '{vkey}' --record-key '{record_key}' --checkpoint SAVED.note",
        crate::backend::display(&cli.store),
        cli.tenant,
    );
    Ok(())
}
