//! The link of a run's chain, `SHA-256(prev_hash || bytes)`. Its own module
//! so that `chain` (which verifies links and signatures) and `signature`
//! (which signs links) both use it, one way.

use std::fmt;

use sha2::{Digest, Sha256};

/// A link of a run's chain.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChainHash([u8; 32]);

impl ChainHash {
    /// The `prev_hash` of every run's first record: 32 zero bytes.
    pub const GENESIS: ChainHash = ChainHash([0; 32]);

    /// `SHA-256(prev || bytes)`.
    pub fn link(prev: &ChainHash, bytes: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(prev.0);
        hasher.update(bytes);
        Self(hasher.finalize().into())
    }

    /// Wraps 32 stored bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The 32 bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Parses 64 hex digits.
    pub fn from_hex(text: &str) -> Option<Self> {
        tlog::NodeHash::from_hex(text).ok().map(|h| Self(*h.as_bytes()))
    }

    /// Wraps bytes of any length, refusing all but 32.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(Self)
    }
}

impl fmt::Display for ChainHash {
    /// Lowercase hex, spelled as the log's hashes are.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&tlog::NodeHash::from_hash_bytes(self.0), f)
    }
}

impl fmt::Debug for ChainHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChainHash({self})")
    }
}
