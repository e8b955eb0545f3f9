//! Addresses of complete subtrees, the unit a store keeps.

/// A complete subtree of `2^level` leaves: leaves
/// `[index * 2^level, (index + 1) * 2^level)`. Level 0 holds leaf hashes.
///
/// Stores keep the hash of every complete subtree ([`crate::Frontier`]
/// reports each one as it completes); roots and proofs of any size are then
/// computed from O(log n) of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    /// Height above the leaves (0 for a leaf).
    pub level: u8,
    /// Position among the subtrees of this level, from the left.
    pub index: u64,
}

impl NodeId {
    /// The subtree at `level`, `index`.
    pub const fn new(level: u8, index: u64) -> Self {
        Self { level, index }
    }

    /// The first leaf the subtree covers, or `None` when that is past
    /// `u64::MAX` (no tree of `u64` leaves has such a node).
    pub const fn first_leaf(&self) -> Option<u64> {
        if self.level >= 64 || self.index > (u64::MAX >> self.level) {
            return None;
        }
        Some(self.index << self.level)
    }

    /// The position this node has in the flat sequence Go's
    /// `golang.org/x/mod/sumdb/tlog` uses (`StoredHashIndex`): all stored
    /// hashes in the order they complete. A store that wants one integer key
    /// per node can use it and share a layout with Go's sumdb.
    ///
    /// `None` when the position does not fit a `u64` (Go's `int64` would
    /// wrap there): nodes of trees past about 2^62 leaves.
    pub const fn stored_index(&self) -> Option<u64> {
        // Move to the last leaf under this node, count every hash stored up to
        // and including that leaf's, then the `level` hashes completed after it.
        let mut n = self.index;
        let mut level = self.level;
        while level > 0 {
            n = match n.checked_mul(2) {
                Some(double) => match double.checked_add(1) {
                    Some(next) => next,
                    None => return None,
                },
                None => return None,
            };
            level -= 1;
        }
        let mut stored: u64 = 0;
        while n > 0 {
            stored = match stored.checked_add(n) {
                Some(sum) => sum,
                None => return None,
            };
            n >>= 1;
        }
        stored.checked_add(self.level as u64)
    }
}

/// Splits `[start, end)` into maximal aligned complete subtrees, left to
/// right. For the ranges RFC 6962's recursion produces, folding these from
/// the right (`interior(left, acc)`) gives the range's `MTH`.
pub(crate) fn covering_subtrees(mut start: u64, end: u64, out: &mut Vec<NodeId>) {
    while start < end {
        let remaining = end - start;
        let fits = u64::BITS - 1 - remaining.leading_zeros();
        let aligned = if start == 0 { u64::BITS - 1 } else { start.trailing_zeros() };
        let level = fits.min(aligned);
        // level < 64, so the cast and the shifts are exact.
        out.push(NodeId::new(level as u8, start >> level));
        start += 1 << level;
    }
}

/// The largest power of two strictly less than `n`, for `n >= 2` (RFC 6962's `k`).
pub(crate) fn split_point(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1 << (u64::BITS - 1 - (n - 1).leading_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_point_is_largest_power_of_two_below() {
        assert_eq!(split_point(2), 1);
        assert_eq!(split_point(3), 2);
        assert_eq!(split_point(4), 2);
        assert_eq!(split_point(5), 4);
        assert_eq!(split_point(8), 4);
        assert_eq!(split_point(9), 8);
        assert_eq!(split_point(u64::MAX), 1 << 63);
    }

    #[test]
    fn covering_subtrees_of_seven_leaves() {
        let mut ids = Vec::new();
        covering_subtrees(0, 7, &mut ids);
        assert_eq!(ids, vec![NodeId::new(2, 0), NodeId::new(1, 2), NodeId::new(0, 6)]);
    }

    #[test]
    fn stored_index_matches_go_layout_for_first_nodes() {
        // Go's StoredHashes order for leaves 0..4: L0[0], L0[1], L1[0], L0[2], L0[3], L1[1], L2[0].
        let order = [(0, 0), (0, 1), (1, 0), (0, 2), (0, 3), (1, 1), (2, 0)];
        for (position, (level, index)) in order.into_iter().enumerate() {
            assert_eq!(NodeId::new(level, index).stored_index(), Some(position as u64));
        }
    }

    #[test]
    fn node_arithmetic_at_the_extremes_is_checked_not_wrapped() {
        assert_eq!(NodeId::new(63, 1).first_leaf(), Some(1 << 63));
        assert_eq!(NodeId::new(63, 2).first_leaf(), None);
        assert_eq!(NodeId::new(64, 0).first_leaf(), None);
        assert_eq!(NodeId::new(255, u64::MAX).first_leaf(), None);
        assert_eq!(NodeId::new(0, u64::MAX).first_leaf(), Some(u64::MAX));
        assert_eq!(NodeId::new(0, u64::MAX).stored_index(), None);
        assert_eq!(NodeId::new(255, 1).stored_index(), None);
        assert_eq!(NodeId::new(0, 1 << 61).stored_index(), Some((1 << 62) - 1));
    }
}
