//! Subtrees of a log and subtree consistency proofs, as
//! draft-ietf-plants-merkle-tree-certs-03 defines them (section 4.1, "Subtrees";
//! section 4.4, "Subtree Consistency Proofs"): the proof that the subtree
//! `[start, end)` with a given hash is part of the tree of `size` leaves with
//! a given root. C2SP tlog-witness's optional `sign-subtree` endpoint asks a
//! witness to check one before it cosigns the subtree.
//!
//! A checkpoint of size n is the subtree `[0, n)`; a subtree consistency proof
//! for `[0, m)` in a tree of n leaves is an RFC 6962 consistency proof
//! (section 2.1.2) from m to n.

use core::fmt;

use crate::hash::NodeHash;
use crate::node::{NodeId, covering_subtrees, split_point};
use crate::prove::{HashReader, ProveError, read_exact};
use crate::verify::{Tree, VerifyError};

/// A valid subtree `[start, end)`: non-empty, and `start` is a multiple of the
/// smallest power of two at least `end - start` (so the subtree is one node of
/// every tree that contains it, or the left part of the tree's right edge).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Subtree {
    start: u64,
    end: u64,
}

/// Why `[start, end)` is not a subtree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidSubtree {
    /// The first leaf asked for.
    pub start: u64,
    /// One past the last leaf asked for.
    pub end: u64,
}

impl fmt::Display for InvalidSubtree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}, {}) is not a subtree: it must be non-empty and start at a multiple of the smallest power of two \
             at least its length",
            self.start, self.end
        )
    }
}

impl std::error::Error for InvalidSubtree {}

impl Subtree {
    /// `[start, end)`, if it is a valid subtree (draft section 4.1).
    pub fn new(start: u64, end: u64) -> Result<Self, InvalidSubtree> {
        let invalid = InvalidSubtree { start, end };
        if start >= end {
            return Err(invalid);
        }
        if start != 0 {
            // end - start <= 2^63 here (start >= 1), so the power of two fits.
            let width = (end - start).checked_next_power_of_two().ok_or(invalid)?;
            if !start.is_multiple_of(width) {
                return Err(invalid);
            }
        }
        Ok(Self { start, end })
    }

    /// The first leaf index.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// One past the last leaf index.
    pub fn end(&self) -> u64 {
        self.end
    }
}

/// The hashes that show a subtree is part of a larger tree
/// (draft-ietf-plants-merkle-tree-certs-03 section 4.4), in the draft's order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct SubtreeConsistencyProof {
    path: Vec<NodeHash>,
}

impl SubtreeConsistencyProof {
    /// Wraps a path received from elsewhere; nothing is checked until it is
    /// verified against a trusted [`Tree`].
    pub fn new(path: Vec<NodeHash>) -> Self {
        Self { path }
    }

    /// The hashes, in the draft's order.
    pub fn path(&self) -> &[NodeHash] {
        &self.path
    }
}

/// One level of the draft's recursion, from the root down: where the subtree
/// lies relative to the split point `k` of the current window.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Inside the left `k` leaves; the proof holds the right part's hash.
    Left,
    /// Inside the right part; the proof holds the left `k` leaves' hash.
    Right,
    /// Across the split (only when it starts at the window's first leaf): the
    /// proof holds the left `k` leaves' hash, which is also the subtree's left part.
    Across,
}

/// The recursion's path for `subtree` in a tree of `size` leaves: each step
/// with the leaf range whose hash the proof holds for it, from the root
/// down, then the range of the window where the recursion stops, whose hash
/// the proof carries first unless it is the subtree itself (`None`).
/// `subtree.end <= size` is the caller's check.
#[allow(clippy::type_complexity)]
fn shape(subtree: Subtree, size: u64) -> (Vec<(Step, (u64, u64))>, Option<(u64, u64)>) {
    let (mut start, mut end) = (subtree.start, subtree.end);
    let (mut base, mut n) = (0u64, size);
    let mut whole = true;
    let mut steps = Vec::new();
    // Each pass makes the window smaller (k < n and n - k < n), and the loop
    // stops at the latest when n = 1, where [start, end) can only be [0, 1).
    while !(start == 0 && end == n) {
        let k = split_point(n);
        if end <= k {
            steps.push((Step::Left, (base + k, base + n)));
            n = k;
        } else if start >= k {
            steps.push((Step::Right, (base, base + k)));
            (base, start, end, n) = (base + k, start - k, end - k, n - k);
        } else {
            // A valid subtree straddles k only when it starts at 0 (the draft's argument).
            steps.push((Step::Across, (base, base + k)));
            (base, start, end, n) = (base + k, 0, end - k, n - k);
            whole = false;
        }
    }
    (steps, (!whole).then_some((base, base + n)))
}

/// `MTH(D[start:end])` of a subtree of the stored tree.
pub fn subtree_hash<R: HashReader>(reader: &R, subtree: Subtree) -> Result<NodeHash, ProveError<R::Error>> {
    let mut ids = Vec::new();
    covering_subtrees(subtree.start, subtree.end, &mut ids);
    let hashes = read_exact(reader, &ids)?;
    fold(&hashes).ok_or(ProveError::ShortRead { asked: ids.len(), returned: 0 })
}

fn fold(subtrees: &[NodeHash]) -> Option<NodeHash> {
    let (last, earlier) = subtrees.split_last()?;
    Some(earlier.iter().rev().fold(*last, |acc, left| NodeHash::interior(left, &acc)))
}

/// The subtree consistency proof for `subtree` in the tree of the first
/// `size` leaves (draft section 4.4.1), in one batch of reads.
pub fn prove_subtree_consistency<R: HashReader>(
    reader: &R,
    subtree: Subtree,
    size: u64,
) -> Result<SubtreeConsistencyProof, ProveError<R::Error>> {
    if subtree.end > size {
        return Err(ProveError::IndexOutOfRange { index: subtree.end - 1, size });
    }
    let (steps, base) = shape(subtree, size);
    let ranges: Vec<(u64, u64)> = base.into_iter().chain(steps.iter().rev().map(|(_, range)| *range)).collect();
    let mut ids: Vec<NodeId> = Vec::new();
    let mut groups = Vec::with_capacity(ranges.len());
    for (start, end) in &ranges {
        let before = ids.len();
        covering_subtrees(*start, *end, &mut ids);
        groups.push(ids.len() - before);
    }
    let hashes = read_exact(reader, &ids)?;
    let mut rest = hashes.as_slice();
    let mut path = Vec::with_capacity(groups.len());
    for count in groups {
        let (group, tail) = rest.split_at(count.min(rest.len()));
        rest = tail;
        path.push(fold(group).ok_or(ProveError::ShortRead { asked: ids.len(), returned: hashes.len() })?);
    }
    Ok(SubtreeConsistencyProof::new(path))
}

impl Tree {
    /// Checks that `subtree`, whose hash is `hash`, is part of this tree
    /// (draft-ietf-plants-merkle-tree-certs-03 section 4.4.2): the proof must
    /// have exactly the length the parameters prescribe, rebuild `hash`
    /// ([`VerifyError::OldRootMismatch`] otherwise) and this tree's root
    /// ([`VerifyError::NewRootMismatch`]). A subtree ending past this tree is
    /// [`VerifyError::IndexOutOfRange`].
    ///
    /// ```
    /// use tlog::{LeafHash, MemoryHashStore, Subtree};
    ///
    /// let mut log = MemoryHashStore::new();
    /// for i in 0..7u8 {
    ///     log.append(LeafHash::of(&[i]));
    /// }
    /// let subtree = Subtree::new(4, 6)?;
    /// let hash = tlog::subtree_hash(&log, subtree)?;
    /// let proof = tlog::prove_subtree_consistency(&log, subtree, 7)?;
    /// log.tree().verify_subtree(subtree, &hash, &proof)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn verify_subtree(
        &self,
        subtree: Subtree,
        hash: &NodeHash,
        proof: &SubtreeConsistencyProof,
    ) -> Result<(), VerifyError> {
        if subtree.end > self.size {
            return Err(VerifyError::IndexOutOfRange { index: subtree.end - 1, size: self.size });
        }
        let (steps, base) = shape(subtree, self.size);
        let expected = steps.len() + usize::from(base.is_some());
        if proof.path.len() != expected {
            return Err(VerifyError::WrongProofLength { expected, actual: proof.path.len() });
        }
        let mut path = proof.path.iter();
        // `part` rebuilds the subtree's hash, `root` the window's, bottom up.
        let start = if base.is_some() { path.next().copied() } else { Some(*hash) };
        let Some(start) = start else {
            return Err(VerifyError::WrongProofLength { expected, actual: proof.path.len() });
        };
        let (mut part, mut root) = (start, start);
        for ((step, _), sibling) in steps.iter().rev().zip(path) {
            match step {
                Step::Left => root = NodeHash::interior(&root, sibling),
                Step::Right => root = NodeHash::interior(sibling, &root),
                Step::Across => {
                    root = NodeHash::interior(sibling, &root);
                    part = NodeHash::interior(sibling, &part);
                }
            }
        }
        if part != *hash {
            return Err(VerifyError::OldRootMismatch);
        }
        if root.as_bytes() != self.root.as_bytes() {
            return Err(VerifyError::NewRootMismatch);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_subtrees_follow_the_draft() {
        assert!(Subtree::new(0, 1).is_ok());
        assert!(Subtree::new(0, 13).is_ok());
        assert!(Subtree::new(4, 6).is_ok());
        assert!(Subtree::new(8, 13).is_ok());
        assert_eq!(Subtree::new(3, 3), Err(InvalidSubtree { start: 3, end: 3 }));
        assert_eq!(Subtree::new(5, 3), Err(InvalidSubtree { start: 5, end: 3 }));
        // The transparency-dev/merkle probes' invalid subtrees.
        for (start, end) in [(1, 15), (1, 3), (2, 5), (2, 6)] {
            assert_eq!(Subtree::new(start, end), Err(InvalidSubtree { start, end }));
        }
        assert!(Subtree::new(1 << 63, u64::MAX).is_ok());
        assert!(Subtree::new(1, u64::MAX).is_err());
    }
}
