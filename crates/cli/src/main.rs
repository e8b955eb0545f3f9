//! `agentplane`: the journal on the embedded redb store, from the command line.
//!
//! Exit codes: 0 clean, 1 findings (tampering, failed verification), 2 usage
//! or I/O, 3 build skew (this binary cannot read what a newer or older build
//! wrote: the history is not damaged; run the binary the message names).

mod commands;
mod demo;
mod keys;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Why a command stopped: decides the exit code.
#[derive(Debug)]
pub enum Failure {
    /// Findings: the journal, an export or a proof does not verify (exit 1).
    Findings(String),
    /// Bad input or usage (exit 2).
    Usage(String),
    /// Storage or I/O (exit 2).
    Io(String),
    /// This binary cannot read what another build wrote (exit 3): never damage.
    BuildSkew(String),
}

impl Failure {
    fn exit_code(&self) -> u8 {
        match self {
            Self::Findings(_) => 1,
            Self::Usage(_) | Self::Io(_) => 2,
            Self::BuildSkew(_) => 3,
        }
    }

    /// The one-line message, with its remedy.
    pub fn message(&self) -> &str {
        match self {
            Self::Findings(m) | Self::Usage(m) | Self::Io(m) | Self::BuildSkew(m) => m,
        }
    }
}

impl From<journal_core::JournalError> for Failure {
    fn from(err: journal_core::JournalError) -> Self {
        match err.class() {
            journal_core::ErrorClass::Tamper => Self::Findings(err.to_string()),
            journal_core::ErrorClass::BuildSkew => Self::BuildSkew(err.to_string()),
            journal_core::ErrorClass::Io => Self::Io(err.to_string()),
            _ => Self::Usage(err.to_string()),
        }
    }
}

impl From<journal_core::RuntimeError> for Failure {
    fn from(err: journal_core::RuntimeError) -> Self {
        match err {
            journal_core::RuntimeError::Journal(err) => err.into(),
            other => Self::Usage(other.to_string()),
        }
    }
}

/// agentplane: the append-only, hash-chained, signed journal of agent runs.
#[derive(Parser)]
#[command(name = "agentplane", version, about)]
struct Cli {
    /// The store file.
    #[arg(long, global = true, default_value = "agentplane.redb")]
    store: PathBuf,
    /// The plane's key file (log key and record key).
    #[arg(long, global = true, default_value = "agentplane.key")]
    keys: PathBuf,
    /// The tenant.
    #[arg(long, global = true, default_value = "default")]
    tenant: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run sample agent runs that reach every outcome, then print the runs and the signed checkpoint.
    Demo,
    /// Make the plane's keys; prints the log's verifier key (a C2SP vkey line).
    Keygen {
        /// The log's origin, also its key name.
        #[arg(long, default_value = keys::DEFAULT_ORIGIN)]
        origin: String,
    },
    /// List runs.
    Runs {
        /// Only runs whose answer is this outcome.
        #[arg(long)]
        outcome: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Show a run's journal: seq, time written, kind, effect key, hashes, signer.
    Show {
        /// The run.
        run: String,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Verify every run's chain, signatures, shapes and seal (exit 1 on findings).
    Verify {
        /// Every record must carry a signature by the plane's record key.
        #[arg(long)]
        require_signature: bool,
        /// Only this run.
        #[arg(long)]
        run: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Print the log's checkpoint as a signed note, exactly as a witness receives it.
    Checkpoint {
        /// JSON output: origin, size, root (base64) and the note.
        #[arg(long)]
        json: bool,
    },
    /// Prove a sealed run's inclusion, or the log's consistency with an older size.
    Prove {
        /// The run (for an inclusion proof).
        run: Option<String>,
        /// The older size (for a consistency proof).
        #[arg(long, value_name = "OLD_SIZE", conflicts_with = "run")]
        consistency: Option<u64>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// What a run, or the whole tenant, has consumed (by the time on each record).
    Cost {
        /// The run (the tenant when absent).
        run: Option<String>,
        /// Count only records written at or after this instant (2026-11-01 or 2026-11-01T09:00:00Z, UTC).
        #[arg(long)]
        since: Option<String>,
        /// Count only records written before this instant (same forms as --since).
        #[arg(long)]
        until: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Export a sealed run to a self-contained file.
    Export {
        /// The run.
        run: String,
        /// The file to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Verify an export offline with only the trusted keys (exit 1 on findings).
    VerifyExport {
        /// The export file.
        file: PathBuf,
        /// The log's verifier key (C2SP vkey).
        #[arg(long)]
        log_key: String,
        /// A trusted record key: KEY_ID=BASE64_PUBLIC_KEY (repeatable).
        #[arg(long)]
        record_key: Vec<String>,
        /// Every record must carry a signature by a trusted record key.
        #[arg(long)]
        require_signature: bool,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("agentplane: {}", failure.message());
            ExitCode::from(failure.exit_code())
        }
    }
}
