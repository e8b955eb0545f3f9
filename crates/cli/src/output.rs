//! What the commands print with: JSON from typed rows, base64 as in checkpoints.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;

use crate::failure::Failure;

/// Prints a typed row (or any `Serialize` value) as pretty JSON, one value
/// per call. A row's fields are declared in alphabetical order: the order
/// the JSON has always had.
pub fn print_json<T: Serialize + ?Sized>(value: &T) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value).map_err(|err| Failure::Io(err.to_string()))?;
    outln!("{text}");
    Ok(())
}

/// Standard base64, as hashes are written in checkpoints and proofs.
pub fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Ends the command when standard output cannot be written.
pub fn written(result: std::io::Result<()>) {
    if let Err(err) = result {
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("agentplane: writing to standard output: {err}");
        std::process::exit(2);
    }
}
