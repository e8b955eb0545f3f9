//! `agentplane-witness`: a C2SP tlog-witness server that remembers.
//!
//! It is a crate of its own, beside the protocol crate it serves, so that a
//! witness operator installs one small binary with no journal code in it, and
//! no log or auditor inherits an HTTP server.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use witness::{ALG_COSIGNATURE_V1, Cosigner, SignerKey, VerifierKey};
use witness_server::{LogConfig, SystemClock, WitnessConfig, WitnessServer};

/// A C2SP tlog-witness: cosigns checkpoints of the logs it is configured to
/// watch, only when it can prove each extends the last it cosigned.
#[derive(Parser)]
#[command(name = "agentplane-witness", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve `POST /add-checkpoint` and `GET /<origin hash>/checkpoint`.
    Serve {
        /// Address to listen on (port 0 picks a free one; the address is printed).
        #[arg(long, default_value = "127.0.0.1:7380")]
        listen: String,
        /// The redb file holding each origin's latest cosigned checkpoint.
        #[arg(long)]
        state: PathBuf,
        /// File holding the witness's signer key (PRIVATE+KEY+name+id+..., made by `keygen`).
        #[arg(long)]
        key_file: PathBuf,
        /// A log to watch: ORIGIN=VKEY (repeatable; several keys for one origin are allowed).
        #[arg(long = "log", value_name = "ORIGIN=VKEY", required = true)]
        logs: Vec<String>,
    },
    /// Make a cosigning key: writes the signer key to FILE, prints the verifier key.
    Keygen {
        /// The witness's name (a schema-less URL, such as witness.example.com/w1).
        #[arg(long)]
        name: String,
        /// Where to write the signer key (refuses to overwrite).
        #[arg(long)]
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("agentplane-witness: {message}");
            ExitCode::from(2)
        }
    }
}

fn parse_logs(specs: &[String]) -> Result<Vec<LogConfig>, String> {
    let mut logs: Vec<LogConfig> = Vec::new();
    for spec in specs {
        let (origin, vkey) = spec.split_once('=').ok_or_else(|| format!("--log {spec:?}: expected ORIGIN=VKEY"))?;
        let key = VerifierKey::parse(vkey).map_err(|err| format!("--log {spec:?}: {err}"))?;
        match logs.iter_mut().find(|log| log.origin == origin) {
            Some(log) => log.keys.push(key),
            None => logs.push(LogConfig { origin: origin.to_owned(), keys: vec![key] }),
        }
    }
    Ok(logs)
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Keygen { name, out } => {
            let key = SignerKey::generate(&name, ALG_COSIGNATURE_V1).map_err(|err| err.to_string())?;
            write_secret(&out, &key.to_skey())?;
            println!("{}", key.verifier_key());
            Ok(())
        }
        Command::Serve { listen, state, key_file, logs } => {
            let text =
                std::fs::read_to_string(&key_file).map_err(|err| format!("reading {}: {err}", key_file.display()))?;
            let key = SignerKey::parse(text.trim()).map_err(|err| format!("{}: {err}", key_file.display()))?;
            let cosigner = Cosigner::new(key).map_err(|err| err.to_string())?;
            let vkey = cosigner.verifier_key();
            let config = WitnessConfig { cosigner, logs: parse_logs(&logs)?, clock: Arc::new(SystemClock) };
            let server = WitnessServer::start(config, &state, &listen).map_err(|err| err.to_string())?;
            println!("agentplane-witness {vkey} listening on {}", server.url());
            server.wait();
            Ok(())
        }
    }
}

fn write_secret(path: &PathBuf, contents: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|err| format!("creating {}: {err}", path.display()))?;
    writeln!(file, "{contents}").map_err(|err| format!("writing {}: {err}", path.display()))
}
