//! `agentplane init`: a plane's configuration and fresh keys.

use crate::args::key_error;
use crate::config::{DEFAULT_CONFIG, PlaneFiles, WitnessEntry, init_plane};
use crate::failure::Failure;

/// `agentplane init`: the configuration and fresh keys in this directory;
/// the store and the key file are `--store` and `--keys` when given.
pub fn init(
    files: &PlaneFiles,
    tenants: &[String],
    origin_base: &str,
    witnesses: &[String],
    quorum: Option<usize>,
    sweep_every: &str,
) -> Result<(), Failure> {
    let mut entries = Vec::new();
    let mut trusted_keys = Vec::new();
    for spec in witnesses {
        // A private key pasted by mistake (a witness's key file) is named
        // and never echoed, not even its first characters (R-OPS-1).
        // The whole argument is looked at first: a key's base64 may end in
        // `=`, which would split it into a "URL" that is the key itself.
        if spec.to_ascii_uppercase().contains("PRIVATE+KEY+") {
            return Err(key_error("--witness", spec, &"a private key"));
        }
        let (url, key) = spec
            .split_once('=')
            .ok_or_else(|| Failure::Usage(format!("--witness {}: expected URL=VKEY", crate::output::shown(spec))))?;
        let trusted = agentplane_cli::plane_config::check_witness_key(key)
            .map_err(|err| Failure::Usage(format!("--witness {}: {err}", crate::output::shown(url))))?;
        entries.push(WitnessEntry { url: url.to_owned(), key: key.to_owned() });
        trusted_keys.push(trusted);
    }
    // The keys of one name are one witness (its Ed25519 and ML-DSA-44 keys).
    let distinct = witness::count_witnesses(trusted_keys.iter().map(|key| (key.name(), key.public_key())));
    let quorum = quorum.unwrap_or(distinct);
    if quorum > distinct || (quorum == 0 && !entries.is_empty()) {
        return Err(Failure::Usage(format!(
            "--quorum {quorum} does not fit {distinct} witnesses (the keys of one name are one witness)"
        )));
    }
    let (config, keys) =
        init_plane(std::path::Path::new("."), files, tenants, origin_base, entries, quorum, sweep_every)?;
    errln!(
        "wrote {DEFAULT_CONFIG} and {} (keep it secret); the store will be {}",
        files.keys.display(),
        crate::backend::display(&files.store)
    );
    for tenant in &config.tenants {
        let origin = journal_core::Origin::new(&tenant.origin).map_err(|err| Failure::Usage(err.to_string()))?;
        outln!("tenant {}  origin {}  log key {}", tenant.name, origin, keys.log_for(&origin)?.verifier_key());
    }
    outln!("record key {}", keys.record_key_spec());
    Ok(())
}
