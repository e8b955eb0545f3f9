//! Verification over untyped byte strings, for callers holding wire data
//! (JSON, another implementation's test vectors). Each hash is checked to be
//! 32 bytes before it is used; a wrong length is a refusal, never a
//! truncation. These functions judge every probe of transparency-dev/merkle's
//! `testdata` exactly as published.

use core::fmt;

use crate::hash::{HashParseError, LeafHash, NodeHash, RootHash};
use crate::verify::{ConsistencyProof, InclusionProof, Tree, VerifyError};

/// A refusal of untyped input: a malformed hash, or a proof that fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawVerifyError {
    /// One of the byte strings is not a 32-byte hash.
    Malformed {
        /// Which input: `"leaf"`, `"root"`, `"old root"`, `"new root"` or `"proof"`.
        what: &'static str,
        /// What is wrong with it.
        error: HashParseError,
    },
    /// The hashes are well formed and the proof is refused.
    Refused(VerifyError),
}

impl fmt::Display for RawVerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed { what, error } => write!(f, "{what}: {error}"),
            Self::Refused(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for RawVerifyError {}

impl From<VerifyError> for RawVerifyError {
    fn from(err: VerifyError) -> Self {
        Self::Refused(err)
    }
}

fn typed<T: for<'a> TryFrom<&'a [u8], Error = HashParseError>>(
    what: &'static str,
    bytes: &[u8],
) -> Result<T, RawVerifyError> {
    T::try_from(bytes).map_err(|error| RawVerifyError::Malformed { what, error })
}

fn typed_path<B: AsRef<[u8]>>(path: &[B]) -> Result<Vec<NodeHash>, RawVerifyError> {
    path.iter().map(|hash| typed("proof", hash.as_ref())).collect()
}

/// [`Tree::verify_inclusion`] over byte strings.
pub fn verify_inclusion<B: AsRef<[u8]>>(
    leaf: &[u8],
    index: u64,
    size: u64,
    root: &[u8],
    path: &[B],
) -> Result<(), RawVerifyError> {
    if index >= size {
        return Err(VerifyError::IndexOutOfRange { index, size }.into());
    }
    let leaf: LeafHash = typed("leaf", leaf)?;
    let tree = Tree::new(size, typed("root", root)?);
    Ok(tree.verify_inclusion(&leaf, index, &InclusionProof::new(typed_path(path)?))?)
}

/// [`Tree::verify_extends`] over byte strings.
///
/// With equal non-zero sizes nothing is hashed: the proof must be empty and
/// the two roots equal as byte strings, whatever their length, as in
/// transparency-dev/merkle.
pub fn verify_consistency<B: AsRef<[u8]>>(
    old_size: u64,
    new_size: u64,
    old_root: &[u8],
    new_root: &[u8],
    path: &[B],
) -> Result<(), RawVerifyError> {
    if new_size < old_size {
        return Err(VerifyError::Shrinks { old_size, new_size }.into());
    }
    if old_size == 0 {
        return Err(VerifyError::FromEmptyTree.into());
    }
    if old_size == new_size {
        if !path.is_empty() {
            return Err(VerifyError::WrongProofLength { expected: 0, actual: path.len() }.into());
        }
        return if old_root == new_root {
            Ok(())
        } else {
            Err(VerifyError::SameSizeDifferentRoots { size: new_size }.into())
        };
    }
    let older = Tree::new(old_size, typed::<RootHash>("old root", old_root)?);
    let newer = Tree::new(new_size, typed::<RootHash>("new root", new_root)?);
    Ok(newer.verify_extends(&older, &ConsistencyProof::new(typed_path(path)?))?)
}
