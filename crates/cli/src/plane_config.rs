//! `agentplane.toml`: the plane's configuration file, as written and read.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A tenant: its own runs, its own log and origin (R-STORE-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantEntry {
    /// The tenant id.
    pub name: String,
    /// Its log's origin (also its log key's name).
    pub origin: String,
}

/// A witness the sweep submits to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WitnessEntry {
    /// Its submission and monitoring prefix.
    pub url: String,
    /// Its cosignature verifier key (a C2SP vkey).
    pub key: String,
}

/// `agentplane.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaneConfig {
    /// The store file, relative to the configuration file.
    pub store: PathBuf,
    /// The key file, relative to the configuration file.
    pub keys: PathBuf,
    /// How many witnesses must cosign a round.
    #[serde(default)]
    pub quorum: usize,
    /// How often `agentplane sweep --every` runs when no interval is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_every: Option<String>,
    /// The tenants, each with its own origin.
    #[serde(default, rename = "tenant")]
    pub tenants: Vec<TenantEntry>,
    /// The witnesses.
    #[serde(default, rename = "witness", skip_serializing_if = "Vec::is_empty")]
    pub witnesses: Vec<WitnessEntry>,
}

/// Reads a configuration file's text; unknown fields are refused.
pub fn parse(text: &str) -> Result<PlaneConfig, toml::de::Error> {
    toml::from_str(text)
}

/// The most of a parser's message [`describe_error`] shows.
const MAX_MESSAGE_SHOWN: usize = 200;

/// A parse error of `text` as one short line: where, and what (at most 200
/// characters), never the line itself, which the
/// parser quotes whole (a line may be a megabyte, or a private key pasted
/// into the file: a message quoting one is not shown).
pub fn describe_error(text: &str, err: &toml::de::Error) -> String {
    let at = err.span().map_or(0, |span| span.start).min(text.len());
    let before = text.get(..at).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |start| start.chars().count()) + 1;
    let message = err.message().trim();
    let message = if message.to_ascii_uppercase().contains("PRIVATE+KEY+") {
        "a value there is a private key (not shown): the configuration names key files, never holds keys".to_owned()
    } else if message.chars().count() > MAX_MESSAGE_SHOWN {
        format!("{}...", message.chars().take(MAX_MESSAGE_SHOWN).collect::<String>())
    } else {
        message.to_owned()
    };
    format!("line {line}, column {column}: {message}")
}

/// A sweep interval (`90s`, `5m`, `1h`): positive, or why not.
pub fn interval(text: &str) -> Result<std::time::Duration, String> {
    let duration: jiff::SignedDuration =
        text.parse().map_err(|err| format!("interval {text:?}: {err} (give 90s, 5m or 1h)"))?;
    std::time::Duration::try_from(duration)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("interval {text:?} must be positive"))
}

/// Why a configuration that parses cannot be a plane's (issue 22).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A tenant name that is not a plain name.
    #[error("tenant name {name:?}: {rule}")]
    TenantName {
        /// The name.
        name: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// One tenant named twice.
    #[error("tenant {0} is listed twice")]
    DuplicateTenant(String),
    /// An origin that is not an origin.
    #[error("tenant {tenant}: origin {origin:?}: {reason}")]
    Origin {
        /// The tenant.
        tenant: String,
        /// The origin.
        origin: String,
        /// Why.
        reason: String,
    },
    /// Two tenants with one origin: two histories of one log.
    #[error("tenants {first} and {second} have the same origin {origin}: every tenant's log needs its own")]
    DuplicateOrigin {
        /// The origin.
        origin: String,
        /// The tenant listed first.
        first: String,
        /// The other.
        second: String,
    },
    /// More witnesses than a cosigned checkpoint can carry.
    #[error(
        "{count} witnesses are configured; a cosigned checkpoint carries at most {max} cosignatures beside the \
         log's own signature: configure fewer witnesses"
    )]
    TooManyWitnesses {
        /// The witnesses configured.
        count: usize,
        /// The most a cosigned checkpoint carries.
        max: usize,
    },
    /// A witness key this build cannot use.
    #[error("witness {url}: {reason}")]
    WitnessKey {
        /// The witness.
        url: String,
        /// Why.
        reason: String,
    },
}

/// Checks a tenant name: 1 to 128 of `A-Z a-z 0-9 - _ . :`, no `/`, no `..`,
/// no whitespace (it names a tenant in stores, paths and messages).
pub fn check_tenant_name(name: &str) -> Result<(), ConfigError> {
    let rule = if name.is_empty() || name.len() > 128 {
        Some("must be 1 to 128 characters")
    } else if name.chars().any(char::is_whitespace) {
        Some("must not hold whitespace")
    } else if name.contains('/') {
        Some("must not hold `/`")
    } else if name.contains("..") {
        Some("must not hold `..`")
    } else if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':')) {
        Some("may hold only A-Z a-z 0-9 - _ . :")
    } else {
        None
    };
    match rule {
        Some(rule) => Err(ConfigError::TenantName { name: name.to_owned(), rule }),
        None => Ok(()),
    }
}

/// Checks a witness verifier key: a vkey of a type this build verifies
/// (cosignature/v1 Ed25519, 0x04, or ML-DSA-44, 0x06); any other type is
/// refused, named.
pub fn check_witness_key(vkey: &str) -> Result<witness::TrustedWitness, String> {
    let key = witness::VerifierKey::parse(vkey).map_err(|err| err.to_string())?;
    match key.algorithm() {
        witness::ALG_COSIGNATURE_V1 | witness::ALG_ML_DSA_44 => {
            witness::TrustedWitness::new(key).map_err(|err| err.to_string())
        }
        witness::ALG_ED25519 => Err(format!(
            "key {} is of type 0x01 (a note-signing key): a witness is trusted by its cosignature key \
             (type 0x04 Ed25519 or 0x06 ML-DSA-44)",
            key.name()
        )),
        other => Err(format!(
            "key {} is of type 0x{other:02x}, which this build cannot verify: give a cosignature key \
             (type 0x04 Ed25519 or 0x06 ML-DSA-44)",
            key.name()
        )),
    }
}

/// Checks what parsing cannot: tenant names plain and unique, origins valid
/// and unique across tenants, witness keys of a type this build verifies.
pub fn check(config: &PlaneConfig) -> Result<(), ConfigError> {
    for (i, tenant) in config.tenants.iter().enumerate() {
        check_tenant_name(&tenant.name)?;
        witness::Origin::new(&tenant.origin).map_err(|err| ConfigError::Origin {
            tenant: tenant.name.clone(),
            origin: tenant.origin.clone(),
            reason: err.to_string(),
        })?;
        for other in config.tenants.iter().skip(i + 1) {
            if other.name == tenant.name {
                return Err(ConfigError::DuplicateTenant(tenant.name.clone()));
            }
            if other.origin == tenant.origin {
                return Err(ConfigError::DuplicateOrigin {
                    origin: tenant.origin.clone(),
                    first: tenant.name.clone(),
                    second: other.name.clone(),
                });
            }
        }
    }
    if config.witnesses.len() > journal_core::MAX_WITNESS_KEYS {
        return Err(ConfigError::TooManyWitnesses {
            count: config.witnesses.len(),
            max: journal_core::MAX_WITNESS_KEYS,
        });
    }
    for entry in &config.witnesses {
        check_witness_key(&entry.key).map_err(|reason| ConfigError::WitnessKey { url: entry.url.clone(), reason })?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A configuration's parse error is one short line that quotes neither
    /// the line it stops at (the parser's own message quotes it whole) nor
    /// a private key pasted into the file.
    #[test]
    fn a_parse_error_names_the_place_and_never_quotes_the_line_or_a_key() {
        let long = format!("sweep_every = \"90s\"\nstore = [\"{}\"", "x".repeat(100_000));
        let err = parse(&long).unwrap_err();
        assert!(err.to_string().len() > 100_000, "the parser quotes the line");
        let said = describe_error(&long, &err);
        assert!(said.starts_with("line 2, column "), "{said}");
        assert!(said.len() < 300, "{said}");

        let key = "PRIVATE+KEY+plane.example+1a2b3c4d+AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
        for pasted in [format!("{key}\n"), format!("tenant = \"{key}\"\n")] {
            let err = parse(&pasted).unwrap_err();
            assert!(err.to_string().contains("AQAAAA"), "the parser quotes the key: {err}");
            let said = describe_error(&pasted, &err);
            assert!(!said.contains("AQAAAA") && !said.contains("1a2b3c4d"), "{said}");
            assert!(said.starts_with("line 1, column "), "{said}");
        }
    }

    /// Every input has a size bound: a configuration naming more witnesses
    /// than a cosigned checkpoint carries (99 beside the log's signature)
    /// is refused when read, before a runtime is built on it.
    #[test]
    fn more_witnesses_than_a_cosigned_checkpoint_carries_are_refused() {
        let entry = "[[witness]]\nurl = \"http://w.example\"\nkey = \"w+00000000+AQ\"\n";
        let config = parse(&format!("store = \"s.redb\"\nkeys = \"k\"\n{}", entry.repeat(100))).unwrap();
        assert_eq!(check(&config), Err(ConfigError::TooManyWitnesses { count: 100, max: 99 }));
    }
}
