//! `agentplane`: the journal on the embedded redb store, from the command line.
//!
//! Exit codes: 0 clean, 1 findings (tampering, failed verification), 2 usage
//! or I/O, 3 build skew (this binary cannot read what a newer or older build
//! wrote: the history is not damaged; run the binary the message names).
//! A reader that closes the pipe early (`agentplane runs --ids | head -1`)
//! costs the command its output alone: it goes on to its end quietly, with
//! its own exit (0 for a listing, 1 for a verdict with findings, a failure's
//! class); a full disk too, said on stderr, and 2 where it would be 0.

/// mimalloc, not the system allocator: the audit's reader allocates every
/// record and its workers free them on other threads, which glibc's malloc
/// pays for in arena locks and consolidation (about a seventh of the
/// audit workers' time in the profile of issue 25).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `println!` that never panics nor ends the command: once standard output
/// is lost (a closed pipe, a full disk) nothing more is written to it
/// (`output::written`).
/// Its arguments are evaluated whatever became of standard output (one may
/// sign a checkpoint).
macro_rules! outln {
    () => {
        $crate::output::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that never panics (see `outln!`).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_out(format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics: a line standard error cannot take (a full
/// disk, a closed pipe) is dropped; the exit code still says what happened.
macro_rules! errln {
    ($($arg:tt)*) => {{
        let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{}\n", format_args!($($arg)*)));
    }};
}

mod args;
mod backend;
mod cmd;
mod config;
mod context;
mod failure;
mod high_water;
mod keys;
mod output;
mod usage;

use std::process::ExitCode;

fn main() -> ExitCode {
    // Integrity refusals are logged on `agentplane.witness.integrity`: they are errors, and shown by default.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Plain text when stderr is a file or a pipe: colour only on a terminal.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    // A log line that cannot be written is dropped: tracing-subscriber's own
    // report of it would panic on the same full disk or closed pipe.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .log_internal_errors(false)
        .init();
    let (json, lines, result) = match usage::parse() {
        Ok(cli) => (cli.command.json(), cli.command.json_lines(), cmd::run(cli)),
        // One compact object: a JSON document and a JSON Lines line alike.
        Err(failure) => (usage::asked_for_json(), true, Err(failure)),
    };
    match result {
        Ok(()) => ExitCode::from(output::success_exit_code()),
        Err(failure) => {
            // Said on stderr first: standard output may not take the
            // failure object (a closed pipe, a full disk).
            // No password of a store URL is ever printed, whatever the message
            // quotes, and no control character of what it quotes.
            errln!("agentplane: {}", output::printable(&store_pg::redact(&failure.message())));
            if json {
                output::print_failure_json(&failure, lines);
            }
            ExitCode::from(failure.exit_code())
        }
    }
}
