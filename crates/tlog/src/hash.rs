//! The three hash types of an RFC 6962 tree. They are distinct so that a
//! caller cannot hand raw data, an interior node or a root where a leaf hash
//! is wanted: that mistake fails to compile (R-LOG-1).

use core::fmt;

use sha2::{Digest, Sha256};

/// The length in bytes of every hash in the tree (SHA-256).
pub const HASH_LEN: usize = 32;

const LEAF_PREFIX: u8 = 0x00;
const NODE_PREFIX: u8 = 0x01;

/// A byte string that is not a 32-byte hash, or text that is not the
/// lowercase or uppercase hex of one. Each variant says what was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashParseError {
    /// A byte string of another length than 32: refused, never truncated
    /// or padded.
    WrongLength {
        /// The length received, in bytes.
        actual: usize,
    },
    /// Hex text of another length than 64 bytes.
    WrongHexLength {
        /// The length received, in bytes of text.
        actual: usize,
    },
    /// A byte of the hex text that is not `0-9`, `a-f` or `A-F`.
    NotHexDigit {
        /// Its byte offset in the text.
        position: usize,
    },
}

impl fmt::Display for HashParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a {HASH_LEN}-byte SHA-256 hash: ")?;
        match self {
            Self::WrongLength { actual } => write!(f, "got {actual} bytes"),
            Self::WrongHexLength { actual } => {
                write!(f, "expected {} hex digits, got {actual} bytes of text", HASH_LEN * 2)
            }
            Self::NotHexDigit { position } => write!(f, "byte {position} of the text is not a hex digit"),
        }
    }
}

impl std::error::Error for HashParseError {}

fn parse_hex(text: &str) -> Result<[u8; HASH_LEN], HashParseError> {
    let digits = text.as_bytes();
    if digits.len() != HASH_LEN * 2 {
        return Err(HashParseError::WrongHexLength { actual: digits.len() });
    }
    let digit = |position: usize| {
        let value = match digits.get(position) {
            Some(&d @ b'0'..=b'9') => d - b'0',
            Some(&d @ b'a'..=b'f') => d - b'a' + 10,
            Some(&d @ b'A'..=b'F') => d - b'A' + 10,
            _ => return Err(HashParseError::NotHexDigit { position }),
        };
        Ok(value)
    };
    let mut out = [0u8; HASH_LEN];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = (digit(2 * i)? << 4) | digit(2 * i + 1)?;
    }
    Ok(out)
}

/// Lowercase hex in one write: hashes are spelled in every note, leaf and
/// report line, and a formatted write per byte cost the audit's seal pass
/// more than hashing the leaf.
fn write_hex(bytes: &[u8; HASH_LEN], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let digit = |nibble: u8| if nibble < 10 { b'0' + nibble } else { b'a' + nibble - 10 };
    let mut text = [0u8; HASH_LEN * 2];
    for (pair, byte) in text.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&[digit(byte >> 4), digit(byte & 0x0f)]);
    }
    f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
}

macro_rules! hash_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name([u8; HASH_LEN]);

        impl $name {
            /// Wraps 32 bytes that the caller asserts already are this kind
            /// of hash, such as a value read back from storage or a proof.
            /// No hashing happens here.
            pub const fn from_hash_bytes(bytes: [u8; HASH_LEN]) -> Self {
                Self(bytes)
            }

            /// The hash's 32 bytes.
            pub const fn as_bytes(&self) -> &[u8; HASH_LEN] {
                &self.0
            }

            /// Parses 64 hex digits (either case).
            pub fn from_hex(text: &str) -> Result<Self, HashParseError> {
                parse_hex(text).map(Self)
            }
        }

        impl TryFrom<&[u8]> for $name {
            type Error = HashParseError;

            /// Refuses any length but 32: a short or long "hash" from the
            /// wire is an error, never a truncation or a padding.
            fn try_from(bytes: &[u8]) -> Result<Self, HashParseError> {
                <[u8; HASH_LEN]>::try_from(bytes)
                    .map(Self)
                    .map_err(|_| HashParseError::WrongLength { actual: bytes.len() })
            }
        }

        impl AsRef<[u8]> for $name {
            fn as_ref(&self) -> &[u8] {
                &self.0
            }
        }

        impl fmt::Display for $name {
            /// Lowercase hex.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write_hex(&self.0, f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}(", stringify!($name))?;
                write_hex(&self.0, f)?;
                write!(f, ")")
            }
        }

        #[cfg(feature = "serde")]
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        #[cfg(feature = "serde")]
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Self::from_hex(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

hash_type!(
    /// The hash of one leaf: `SHA-256(0x00 || data)` (RFC 6962 section 2.1).
    ///
    /// [`LeafHash::of`] is the one constructor that hashes; raw bytes are not
    /// a `LeafHash`, so forgetting the hashing step does not compile:
    ///
    /// ```compile_fail
    /// let tree = tlog::MemoryHashStore::default();
    /// let mut store = tree;
    /// store.append(b"not hashed yet"); // expects a LeafHash
    /// ```
    LeafHash
);

hash_type!(
    /// The hash of a subtree of one or more leaves, `SHA-256(0x01 || left || right)`
    /// for an interior node, or a leaf hash for a subtree of one leaf. Proof
    /// paths are lists of these.
    NodeHash
);

hash_type!(
    /// The root of a whole tree, `MTH(D[n])`. For the empty tree it is
    /// `SHA-256("")`, which is not the hash of an empty leaf.
    RootHash
);

impl LeafHash {
    /// Hashes one leaf's data with the RFC 6962 leaf prefix 0x00.
    pub fn of(data: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update([LEAF_PREFIX]);
        hasher.update(data);
        Self(hasher.finalize().into())
    }
}

impl NodeHash {
    /// Hashes two children with the RFC 6962 interior prefix 0x01.
    pub fn interior(left: &NodeHash, right: &NodeHash) -> Self {
        let mut block = [0u8; 1 + 2 * HASH_LEN];
        let (prefix, children) = block.split_at_mut(1);
        let (left_half, right_half) = children.split_at_mut(HASH_LEN);
        prefix.copy_from_slice(&[NODE_PREFIX]);
        left_half.copy_from_slice(&left.0);
        right_half.copy_from_slice(&right.0);
        Self(Sha256::digest(block).into())
    }
}

impl From<LeafHash> for NodeHash {
    /// A leaf hash is the hash of the subtree holding just that leaf.
    fn from(leaf: LeafHash) -> Self {
        Self(leaf.0)
    }
}

impl RootHash {
    /// The root of the empty tree: `SHA-256("")`.
    pub fn empty() -> Self {
        Self(Sha256::digest([]).into())
    }

    pub(crate) fn of_nonempty(node: NodeHash) -> Self {
        Self(node.0)
    }

    pub(crate) fn as_node(&self) -> NodeHash {
        NodeHash(self.0)
    }
}
