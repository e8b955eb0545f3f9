//! The plane's key file: one checkpoint key per tenant log (named after its
//! origin) and the record signer.
//!
//! ```text
//! # agentplane plane keys: keep this file secret
//! log PRIVATE+KEY+<origin>+<hexid>+<base64>      (one line per tenant log)
//! record <key id> <base64 Ed25519 seed>
//! ```

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use journal_core::{Ed25519Signer, Ed25519Verifier, Signer as _};
use witness::{ALG_ED25519, LogKey, Origin, SignerKey};

use crate::failure::Failure;

/// The largest key file read (a plane's keys are a few lines each).
pub(crate) const MAX_KEY_FILE_BYTES: u64 = 1 << 20;

/// What is left when a store's key file is lost for good (review 85): said
/// by every refusal to sign without it or to mint keys for a store that
/// holds runs, which was otherwise a dead end.
pub const KEY_LOST_FOR_GOOD: &str = "If the key file is lost for good, nothing can sign this store's log again: it \
     stays readable (`agentplane runs`, `show`, and `audit --log-key` with the log key its high-water mark names); \
     start a new log under an origin of its own in a new folder (`agentplane init --origin-base BASE`, a BASE never \
     used before), its witnesses told its new origin and log key";

/// The default origin base: `init` and `demo` give tenant NAME the origin
/// `agentplane.local/plane/NAME` (and `keygen` the origin of tenant `default`).
pub const DEFAULT_ORIGIN: &str = "agentplane.local/plane";

/// Whether a key file's path is rather a key's base64 (the record seed of a
/// key file's line, pasted where its path goes): such a path is never
/// printed (R-OPS-1).
fn looks_like_key_material(path: &Path) -> bool {
    witness::may_be_key_material(&path.to_string_lossy()) && !path.exists()
}

/// The plane's keys.
pub struct PlaneKeys {
    logs: Vec<(SignerKey, Origin, LogKey)>,
    /// Signs records.
    pub record: Ed25519Signer,
}

impl PlaneKeys {
    /// Fresh keys: a log key for each origin, one record key.
    pub fn generate(origins: &[Origin]) -> Result<Self, Failure> {
        let mut logs = Vec::new();
        for origin in origins {
            // The high-water mark reads a line that starts with `#` as a
            // comment: that origin's mark would always read as lost, and
            // the plane would sign nothing of it (review 54).
            if origin.as_str().starts_with('#') {
                return Err(Failure::Usage(format!(
                    "the origin {origin} starts with #, which the plane's high-water mark reads as a comment: name \
                     the log by its address (for instance --origin-base example.com/plane)"
                )));
            }
            // An auditor reads the origin: a character that shows as
            // nothing or reorders the text around it would make it read as
            // another log's.
            if let Some((at, hidden)) = origin.as_str().char_indices().find(|(_, c)| witness::text::disguises(*c)) {
                return Err(Failure::Usage(format!(
                    "the origin holds U+{:04X} at byte {at}, a character that shows as nothing or reorders the text \
                     around it, so an auditor would read another origin: name the log in visible characters (for \
                     instance --origin-base example.com/plane)",
                    u32::from(hidden)
                )));
            }
            let signer =
                SignerKey::generate(origin.as_str(), ALG_ED25519).map_err(|err| Failure::Usage(err.to_string()))?;
            let log = LogKey::new(signer.clone()).map_err(|err| Failure::Usage(err.to_string()))?;
            logs.push((signer, origin.clone(), log));
        }
        let first = origins.first().map_or(DEFAULT_ORIGIN, Origin::as_str);
        let record = Ed25519Signer::generate(&format!("spiffe://{first}/runtime")).map_err(Failure::Io)?;
        Ok(Self { logs, record })
    }

    /// Reads the key file when there is one: read commands use it for the
    /// origin and the record key, and need none.
    pub fn read_if_present(path: &Path) -> Result<Option<Self>, Failure> {
        if !path.exists() {
            return Ok(None);
        }
        Self::read_because(
            path,
            "A reading command takes the origin and the record key that checks signatures from it: make it readable \
             to this user, or point --keys at the plane's key file",
        )
        .map(Some)
    }

    /// Reads a key file.
    pub fn read(path: &Path) -> Result<Self, Failure> {
        Self::read_because(
            path,
            &format!(
                "This command signs with the plane's private keys: run it on the plane, beside its key file. To \
                 check a plane from outside, use `agentplane audit`, which needs only the public keys (`agentplane \
                 keys` prints them on the plane); never make new keys for an existing store. {KEY_LOST_FOR_GOOD}"
            ),
        )
    }

    /// Reads a key file; `why` says, when it cannot be read, what the
    /// command needs it for and what to do.
    fn read_because(path: &Path, why: &str) -> Result<Self, Failure> {
        let text = crate::context::read_at_most(path, MAX_KEY_FILE_BYTES).and_then(|bytes| {
            String::from_utf8(bytes).map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidData, err))
        });
        let text = text.map_err(|err| {
            Failure::Usage(match looks_like_key_material(path) {
                true => format!(
                    "reading the key file: {err}; what was given as its path looks like key material (base64), not a \
                     path, and is not shown: give the path of the plane's key file. {why}"
                ),
                false => format!("reading key file {}: {err}. {why}", path.display()),
            })
        })?;
        let bad = |what: &str| Failure::Usage(format!("key file {}: {what}", path.display()));
        let mut logs = Vec::new();
        let mut record = None;
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next(), words.next()) {
                (Some("log"), Some(skey), None, None) => {
                    let signer = SignerKey::parse(skey).map_err(|err| bad(&format!("log key: {err}")))?;
                    let log = LogKey::new(signer.clone()).map_err(|err| bad(&format!("log key: {err}")))?;
                    let origin = Origin::new(log.name())
                        .map_err(|err| bad(&format!("a log key's name is not an origin: {err}")))?;
                    logs.push((signer, origin, log));
                }
                (Some("record"), Some(key_id), Some(seed), None) => {
                    let seed = STANDARD.decode(seed).map_err(|_| bad("record seed is not base64"))?;
                    let seed: [u8; 32] = seed.try_into().map_err(|_| bad("record seed is not 32 bytes"))?;
                    record = Some(Ed25519Signer::from_seed(key_id, seed));
                }
                _ => return Err(bad("expected `log <skey>` and `record <key id> <seed>` lines")),
            }
        }
        if logs.is_empty() {
            return Err(bad("no log key"));
        }
        Ok(Self { logs, record: record.ok_or_else(|| bad("no record key"))? })
    }

    /// Writes a new key file, refusing to overwrite one, and before it the
    /// plane's high-water mark with nothing signed yet for its origins
    /// ([`crate::high_water`]): killed in between (power lost, a SIGKILL),
    /// the mark is left alone, which the same command replaces
    /// ([`mark_in_the_way`]). Made the other way round, a key file was left
    /// without its mark, and the plane, which had signed nothing, refused to
    /// sign or admit anything (its mark lost).
    pub fn write(&self, path: &Path) -> Result<(), Failure> {
        if path.exists() {
            return Err(Failure::Usage(format!(
                "key file {} exists: a plane's keys are never overwritten (use them, or give --keys another path)",
                path.display()
            )));
        }
        let high_water = crate::high_water::path_beside(path);
        if mark_in_the_way(path)? {
            // It says nothing was signed, and no key file is beside it.
            std::fs::remove_file(&high_water)
                .map_err(|err| Failure::Io(format!("removing {}: {err}", high_water.display())))?;
        }
        crate::high_water::FileHighWater::create(path, self).map_err(|err| Failure::Io(err.to_string()))?;
        let mut body = String::from("# agentplane plane keys: keep this file secret\n");
        for (signer, _, _) in &self.logs {
            body.push_str(&format!("log {}\n", signer.to_skey()));
        }
        body.push_str(&format!("record {} {}\n", self.record.key_id(), STANDARD.encode(self.record.seed())));
        // Whole or not at all (R-UX-3): a disk that fills up leaves no
        // half-written key file to refuse the next try.
        if let Err(err) = crate::output::write_new(path, body.as_bytes(), true) {
            // Nothing was signed with the keys not written: their mark goes
            // again, so that the next try starts from nothing.
            let _ = std::fs::remove_file(&high_water);
            return Err(Failure::Io(format!("creating key file {}: {err}", path.display())));
        }
        Ok(())
    }

    /// The origins this file holds a log key for.
    pub fn origins(&self) -> Vec<Origin> {
        self.logs.iter().map(|(_, origin, _)| origin.clone()).collect()
    }

    /// The origin, when the file holds exactly one log key.
    pub fn single_origin(&self) -> Option<&Origin> {
        match self.logs.as_slice() {
            [(_, origin, _)] => Some(origin),
            _ => None,
        }
    }

    /// The key that signs `origin`'s checkpoints.
    pub fn log_for(&self, origin: &Origin) -> Result<&LogKey, Failure> {
        self.logs.iter().find(|(_, o, _)| o == origin).map(|(_, _, log)| log).ok_or_else(|| {
            Failure::Usage(format!(
                "the key file holds no log key for origin {origin} (it has: {})",
                self.origins().iter().map(Origin::as_str).collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// The record key as `--record-key` takes it: `KEY_ID=BASE64`.
    pub fn record_key_spec(&self) -> String {
        format!("{}={}", self.record.key_id(), STANDARD.encode(self.record.public_key()))
    }

    /// The trusted-record-key verifier for this plane's own signer.
    pub fn record_verifier(&self) -> Result<Ed25519Verifier, Failure> {
        let mut verifier = Ed25519Verifier::new();
        verifier.trust(self.record.key_id(), self.record.public_key()).map_err(Failure::Io)?;
        Ok(verifier)
    }
}

/// Whether a high-water mark is beside the key file at `keys`, to be
/// replaced: a mark saying nothing was signed, with no key file beside it,
/// is what `init` or `keygen` killed before its key file was made leaves
/// (`Ok(true)`); no mark is `Ok(false)`; any other mark is the mark of a
/// plane's keys, and new keys are never made beside it (the refusal).
pub fn mark_in_the_way(keys: &Path) -> Result<bool, Failure> {
    let high_water = crate::high_water::path_beside(keys);
    if !high_water.exists() {
        return Ok(false);
    }
    let signed_nothing = crate::high_water::FileHighWater::says_nothing_signed(&high_water).unwrap_or(false);
    if signed_nothing && !keys.exists() {
        return Ok(true);
    }
    Err(Failure::Usage(format!(
        "{} exists: it is the high-water mark of a plane's keys (never make new keys beside it)",
        high_water.display()
    )))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// R-OPS-1: the record key's seed (the base64 of the key file's
    /// `record` line) given where the key file's path goes (`--keys`, or
    /// `keys =` in agentplane.toml) was printed back: "reading key file
    /// SEED: No such file or directory". Such a path is not shown; a path
    /// that is one still is.
    #[test]
    fn r_ops_1_a_seed_given_as_the_key_file_path_is_not_echoed() {
        let seed = STANDARD.encode([0x5a_u8; 32]);
        let said = PlaneKeys::read(Path::new(&seed)).err().unwrap().message();
        assert!(!said.contains(seed.trim_end_matches('=')) && said.contains("not shown"), "{said}");
        let missing = "/nonexistent/agentplane/agentplane.key";
        let said = PlaneKeys::read(Path::new(missing)).err().unwrap().message();
        assert!(said.contains(missing), "{said}");
    }
}
