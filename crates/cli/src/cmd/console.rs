//! `agentplane console`: the plane's read-only web console (the `console`
//! crate), over the store opened for reading, with the plane's public keys.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use crate::config::Settings;
use crate::context::{Reader, reader_upcasters};
use crate::failure::Failure;
use crate::keys::PlaneKeys;

/// The longest token file read (a token is a line).
const MAX_TOKEN_FILE: u64 = 4096;

fn read_token(path: &Path) -> Result<String, Failure> {
    let text = crate::context::read_at_most(path, MAX_TOKEN_FILE)
        .map_err(|err| Failure::Usage(format!("--token-file {}: {err}", path.display())))?;
    let text = String::from_utf8(text)
        .map_err(|_| Failure::Usage(format!("--token-file {}: not UTF-8 text", path.display())))?;
    let token = text.trim().to_owned();
    if !token.chars().all(|c| c.is_ascii_alphanumeric() || "-_.~".contains(c)) {
        return Err(Failure::Usage(format!(
            "--token-file {}: a token is letters, digits and -_.~ (it travels in a URL once)",
            path.display()
        )));
    }
    Ok(token)
}

/// `agentplane console [--listen ADDR] [--token-file FILE] [--max-run-bytes BYTES]`: serves until killed.
pub fn console(
    settings: &Settings,
    listen: SocketAddr,
    token_file: Option<&Path>,
    max_run_bytes: u64,
) -> Result<(), Failure> {
    let token = token_file.map(read_token).transpose()?;
    let keys = PlaneKeys::read_if_present(&settings.keys)?;
    let reader = Reader::open(settings)?;
    let tenants = settings
        .tenants(keys.as_ref())?
        .into_iter()
        .map(|(tenant, origin)| console::TenantLog { tenant, origin })
        .collect::<Vec<_>>();
    let log_keys = match &keys {
        Some(keys) => {
            tenants.iter().filter_map(|log| keys.log_for(&log.origin).ok().map(|key| key.verifier_key())).collect()
        }
        None => Vec::new(),
    };
    let witnesses = settings
        .plane
        .iter()
        .flat_map(|plane| plane.witnesses.iter())
        .map(|entry| {
            witness::TrustedWitness::parse(&entry.key)
                .map_err(|err| Failure::Usage(format!("witness {}: {err}", entry.url)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let plane = console::PlaneView {
        store: reader.store,
        tenants,
        record_verifier: reader.verifier.map(|v| Arc::new(v) as Arc<dyn journal_core::Verifier>),
        log_keys,
        witnesses,
        upcasters: reader_upcasters(),
        folder: settings.folder(),
    };
    let served = console::Console::start(
        plane,
        console::ConsoleOptions {
            listen,
            token,
            max_run_bytes: usize::try_from(max_run_bytes).unwrap_or(usize::MAX),
            ..Default::default()
        },
    )
    .map_err(|err| match err {
        console::ConsoleError::Bind { .. } => Failure::Io(err.to_string()),
        other => Failure::Usage(other.to_string()),
    })?;
    errln!("agentplane console: serving {} (read-only; Ctrl-C stops it)", served.url());
    served.wait();
    Ok(())
}
