//! RFC 9162 section 2.1.3.2 and 2.1.4.2 verification, as methods on the
//! trusted tree head whose size and root the caller got from a signed
//! checkpoint (R-LOG-4: a proof never authenticates its own parameters).

use core::fmt;

use crate::hash::{LeafHash, NodeHash, RootHash};

/// A tree head: a size and the root over that many leaves. Its values come
/// from whoever the caller trusts (a signed checkpoint), never from a proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tree {
    /// Number of leaves.
    pub size: u64,
    /// `MTH` over those leaves.
    pub root: RootHash,
}

/// The audit path of one leaf: sibling subtree hashes from the leaf up.
/// The leaf's index is not part of it: the caller supplies the index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct InclusionProof {
    path: Vec<NodeHash>,
}

/// The hashes that show a larger tree keeps every leaf of a smaller one, in
/// the same positions (RFC 6962 section 2.1.2).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct ConsistencyProof {
    path: Vec<NodeHash>,
}

macro_rules! proof_path {
    ($name:ident) => {
        impl $name {
            /// Wraps a path received from elsewhere; nothing is checked until
            /// it is verified against a trusted [`Tree`].
            pub fn new(path: Vec<NodeHash>) -> Self {
                Self { path }
            }

            /// The hashes, in RFC 6962 order.
            pub fn path(&self) -> &[NodeHash] {
                &self.path
            }

            /// Takes the hashes out.
            pub fn into_path(self) -> Vec<NodeHash> {
                self.path
            }
        }
    };
}
proof_path!(InclusionProof);
proof_path!(ConsistencyProof);

/// Why a proof was refused. Every variant is a refusal; none means "maybe".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// The leaf index is not below the tree size (this includes any index in
    /// the empty tree).
    IndexOutOfRange {
        /// The index the caller asked about.
        index: u64,
        /// The size of the trusted tree.
        size: u64,
    },
    /// The proof has the wrong number of hashes for these sizes or this index.
    WrongProofLength {
        /// The length RFC 9162 prescribes for the parameters.
        expected: usize,
        /// The length received.
        actual: usize,
    },
    /// The inclusion proof folds to a different root: the leaf is not at that
    /// index in that tree, or the proof is wrong.
    RootMismatch,
    /// The "newer" tree is smaller than the older one: a log does not shrink.
    Shrinks {
        /// Size of the older tree.
        old_size: u64,
        /// Size of the newer tree.
        new_size: u64,
    },
    /// No consistency proof is defined from the empty tree. Every tree extends
    /// it; a caller (such as a witness) must handle that case before asking.
    FromEmptyTree,
    /// Two heads of the same size with different roots: two histories.
    SameSizeDifferentRoots {
        /// The size both heads claim.
        size: u64,
    },
    /// The proof does not rebuild the older root.
    OldRootMismatch,
    /// The proof rebuilds the older root but not the newer one.
    NewRootMismatch,
    /// A tree of size 0 whose root is not `SHA-256("")`: no such tree exists.
    EmptyTreeRoot,
}

/// Why [`Tree::extends_with`] refused: the proof could not be had, or it
/// (or the trees themselves) did not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtendsError<E> {
    /// The source of the proof failed to give one.
    Prove(E),
    /// The trees or the proof were refused.
    Verify(VerifyError),
}

impl<E: fmt::Display> fmt::Display for ExtendsError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Prove(err) => write!(f, "no consistency proof: {err}"),
            Self::Verify(err) => err.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for ExtendsError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Prove(err) => Some(err),
            Self::Verify(err) => Some(err),
        }
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::IndexOutOfRange { index, size } => {
                write!(f, "leaf index {index} is not in a tree of {size} leaves")
            }
            Self::WrongProofLength { expected, actual } => {
                write!(f, "proof has {actual} hashes where {expected} are required for these parameters")
            }
            Self::RootMismatch => write!(f, "inclusion proof does not lead to the trusted root"),
            Self::Shrinks { old_size, new_size } => {
                write!(f, "tree of {new_size} leaves cannot extend a tree of {old_size} leaves: a log never shrinks")
            }
            Self::FromEmptyTree => write!(
                f,
                "no consistency proof exists from the empty tree; every tree extends it, check that before asking"
            ),
            Self::SameSizeDifferentRoots { size } => {
                write!(f, "two different roots for the same size {size}: the histories diverge")
            }
            Self::OldRootMismatch => write!(f, "consistency proof does not rebuild the older root"),
            Self::NewRootMismatch => write!(f, "consistency proof does not rebuild the newer root"),
            Self::EmptyTreeRoot => write!(f, "a tree of size 0 must carry the empty tree's root, SHA-256(\"\")"),
        }
    }
}

impl std::error::Error for VerifyError {}

/// Bit length of `x`: the number of bits after the leading zeros.
fn bit_len(x: u64) -> usize {
    (u64::BITS - x.leading_zeros()) as usize
}

/// Splits the audit path of `index` in a tree of `size` leaves into the part
/// below the point where its path and the last leaf's path meet, and the
/// part above (the right border). Their sum is the proof length.
fn inclusion_shape(index: u64, size: u64) -> (usize, usize) {
    let inner = bit_len(index ^ (size - 1));
    // `inner` is 64 when the index and the last leaf differ in bit 63: Go's
    // shift then gives 0, Rust's would panic (debug) or shift by 0 (release).
    let border = index.checked_shr(inner as u32).unwrap_or(0).count_ones() as usize;
    (inner, border)
}

impl Tree {
    /// The empty tree: size 0, root `SHA-256("")`.
    pub fn empty() -> Self {
        Self { size: 0, root: RootHash::empty() }
    }

    /// A tree head with the given size and root.
    pub fn new(size: u64, root: RootHash) -> Self {
        Self { size, root }
    }

    /// Checks that `leaf` is at `index` in this tree (RFC 9162 section 2.1.3.2).
    pub fn verify_inclusion(&self, leaf: &LeafHash, index: u64, proof: &InclusionProof) -> Result<(), VerifyError> {
        if index >= self.size {
            return Err(VerifyError::IndexOutOfRange { index, size: self.size });
        }
        let (inner, border) = inclusion_shape(index, self.size);
        let expected = inner + border;
        if proof.path.len() != expected {
            return Err(VerifyError::WrongProofLength { expected, actual: proof.path.len() });
        }
        let mut node = index;
        let mut last = self.size - 1;
        let mut hash = NodeHash::from(*leaf);
        for sibling in &proof.path {
            if last == 0 {
                return Err(VerifyError::WrongProofLength { expected, actual: proof.path.len() });
            }
            if node & 1 == 1 || node == last {
                hash = NodeHash::interior(sibling, &hash);
                while node & 1 == 0 && node != 0 {
                    node >>= 1;
                    last >>= 1;
                }
            } else {
                hash = NodeHash::interior(&hash, sibling);
            }
            node >>= 1;
            last >>= 1;
        }
        if last != 0 {
            return Err(VerifyError::WrongProofLength { expected, actual: proof.path.len() });
        }
        if hash.as_bytes() == self.root.as_bytes() { Ok(()) } else { Err(VerifyError::RootMismatch) }
    }

    /// The protocol rule "this tree extends `older`", whole: the one place a
    /// log, a witness or an auditor decides whether a newer head may follow
    /// an older one (C2SP tlog-witness, R-LOG-4).
    ///
    /// - a smaller tree never extends a larger one ([`VerifyError::Shrinks`]);
    /// - a tree of size 0 must carry the empty root ([`VerifyError::EmptyTreeRoot`]),
    ///   and every tree extends the empty tree, with an empty proof;
    /// - equal sizes need an empty proof and equal roots
    ///   ([`VerifyError::SameSizeDifferentRoots`]);
    /// - otherwise the proof must verify as [`Tree::verify_extends`] checks it.
    ///
    /// Use [`Tree::extends_with`] when the proof is computed on demand: it
    /// asks for one only when the sizes need it.
    ///
    /// ```
    /// use tlog::{ConsistencyProof, LeafHash, MemoryHashStore, Tree, VerifyError};
    ///
    /// let mut log = MemoryHashStore::new();
    /// log.append(LeafHash::of(b"a"));
    /// let one = log.tree();
    /// log.append(LeafHash::of(b"b"));
    /// let two = log.tree();
    ///
    /// let none = ConsistencyProof::default();
    /// assert_eq!(two.extends(&Tree::empty(), &none), Ok(()));
    /// assert_eq!(two.extends(&two, &none), Ok(()));
    /// assert_eq!(one.extends(&two, &none), Err(VerifyError::Shrinks { old_size: 2, new_size: 1 }));
    /// two.extends(&one, &log.prove_consistency(1, 2)?)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn extends(&self, older: &Tree, proof: &ConsistencyProof) -> Result<(), VerifyError> {
        if self.size < older.size {
            return Err(VerifyError::Shrinks { old_size: older.size, new_size: self.size });
        }
        for tree in [self, older] {
            if tree.size == 0 && tree.root != RootHash::empty() {
                return Err(VerifyError::EmptyTreeRoot);
            }
        }
        if older.size == 0 {
            return if proof.path.is_empty() {
                Ok(())
            } else {
                Err(VerifyError::WrongProofLength { expected: 0, actual: proof.path.len() })
            };
        }
        self.verify_extends(older, proof)
    }

    /// Whether [`Tree::extends`] needs a proof to decide that this tree
    /// extends `older`: only when `older` is neither empty nor as large.
    pub fn needs_proof_from(&self, older: &Tree) -> bool {
        0 < older.size && older.size < self.size
    }

    /// [`Tree::extends`] with the proof asked of `prove(old_size, new_size)`
    /// only when one is needed ([`Tree::needs_proof_from`]); returns the
    /// proof that verified (empty when none was needed), ready to send on.
    ///
    /// ```
    /// use tlog::{LeafHash, MemoryHashStore, Tree};
    ///
    /// let mut log = MemoryHashStore::new();
    /// for leaf in [&b"a"[..], b"b", b"c"] {
    ///     log.append(LeafHash::of(leaf));
    /// }
    /// let older = Tree::new(2, tlog::tree_root(&log, 2)?);
    /// let proof = log.tree().extends_with(&older, |old, new| log.prove_consistency(old, new))?;
    /// assert_eq!(proof.path().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn extends_with<E>(
        &self,
        older: &Tree,
        prove: impl FnOnce(u64, u64) -> Result<ConsistencyProof, E>,
    ) -> Result<ConsistencyProof, ExtendsError<E>> {
        let proof = if self.needs_proof_from(older) {
            prove(older.size, self.size).map_err(ExtendsError::Prove)?
        } else {
            ConsistencyProof::default()
        };
        self.extends(older, &proof).map_err(ExtendsError::Verify)?;
        Ok(proof)
    }

    /// Checks that this tree extends `older`: every leaf of `older` is in this
    /// tree at the same position (RFC 9162 section 2.1.4.2). This is the RFC's
    /// proof check; the protocol rule, with the empty tree, is [`Tree::extends`].
    ///
    /// Equal sizes need an empty proof and equal roots. An empty `older` is
    /// refused with [`VerifyError::FromEmptyTree`], as transparency-dev/merkle
    /// does: the RFC defines no proof for it.
    pub fn verify_extends(&self, older: &Tree, proof: &ConsistencyProof) -> Result<(), VerifyError> {
        let path = proof.path.as_slice();
        if self.size < older.size {
            return Err(VerifyError::Shrinks { old_size: older.size, new_size: self.size });
        }
        if older.size == 0 {
            return Err(VerifyError::FromEmptyTree);
        }
        if older.size == self.size {
            if !path.is_empty() {
                return Err(VerifyError::WrongProofLength { expected: 0, actual: path.len() });
            }
            return if older.root == self.root {
                Ok(())
            } else {
                Err(VerifyError::SameSizeDifferentRoots { size: self.size })
            };
        }

        let old_is_complete = older.size.is_power_of_two();
        let (inner, border) = inclusion_shape(older.size - 1, self.size);
        let shift = older.size.trailing_zeros() as usize;
        let expected = usize::from(!old_is_complete) + inner - shift + border;
        if path.len() != expected {
            return Err(VerifyError::WrongProofLength { expected, actual: path.len() });
        }

        // RFC 9162 2.1.4.2 step 2: a complete old tree is its own first node.
        let (seed, rest) = if old_is_complete {
            (older.root.as_node(), path)
        } else {
            match path.split_first() {
                Some((first, rest)) => (*first, rest),
                None => {
                    return Err(VerifyError::WrongProofLength { expected, actual: 0 });
                }
            }
        };
        let mut node = older.size - 1;
        let mut last = self.size - 1;
        while node & 1 == 1 {
            node >>= 1;
            last >>= 1;
        }
        let mut old_hash = seed;
        let mut new_hash = seed;
        for sibling in rest {
            if last == 0 {
                return Err(VerifyError::WrongProofLength { expected, actual: path.len() });
            }
            if node & 1 == 1 || node == last {
                old_hash = NodeHash::interior(sibling, &old_hash);
                new_hash = NodeHash::interior(sibling, &new_hash);
                while node & 1 == 0 && node != 0 {
                    node >>= 1;
                    last >>= 1;
                }
            } else {
                new_hash = NodeHash::interior(&new_hash, sibling);
            }
            node >>= 1;
            last >>= 1;
        }
        if last != 0 {
            return Err(VerifyError::WrongProofLength { expected, actual: path.len() });
        }
        if old_hash.as_bytes() != older.root.as_bytes() {
            return Err(VerifyError::OldRootMismatch);
        }
        if new_hash.as_bytes() != self.root.as_bytes() {
            return Err(VerifyError::NewRootMismatch);
        }
        Ok(())
    }
}
