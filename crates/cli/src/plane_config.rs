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

/// A sweep interval (`90s`, `5m`, `1h`): positive, or why not.
pub fn interval(text: &str) -> Result<std::time::Duration, String> {
    let duration: jiff::SignedDuration =
        text.parse().map_err(|err| format!("interval {text:?}: {err} (give 90s, 5m or 1h)"))?;
    std::time::Duration::try_from(duration)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("interval {text:?} must be positive"))
}
