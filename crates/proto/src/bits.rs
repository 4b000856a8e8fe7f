//! A bitmap allocated in 512-byte leaves as its bits are set.
//!
//! The receivers keep a bit per packet (the bounded-loss receiver per packet of its message,
//! the ATP receiver per packet of each partial message and per whole message of its job), and
//! a packet names the size of what it belongs to. Allocated whole at the first packet, one
//! datagram claiming a huge message made a real-transport receiver allocate its whole bitmap
//! (96 KB for a 1 GiB message; 2 MB for an ATP message id near 2^24), outside the node's
//! receive budget. Here a size alone allocates only the table of leaves, 8 bytes per 4,096
//! bits; a leaf is allocated when a bit of it is first set.

/// Words of one leaf: 4,096 bits in 512 bytes.
pub(crate) const LEAF_WORDS: usize = 64;

/// Bits of one leaf.
const LEAF_BITS: usize = LEAF_WORDS * 64;

/// The bitmap (module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct LazyBits {
    leaves: Vec<Option<Box<[u64; LEAF_WORDS]>>>,
}

impl LazyBits {
    /// `n` bits, all clear: only the table of leaves is allocated.
    pub(crate) fn new(n: usize) -> LazyBits {
        LazyBits { leaves: vec![None; n.div_ceil(LEAF_BITS)] }
    }

    /// Whether bit `i` is set (a bit beyond the table is clear).
    pub(crate) fn get(&self, i: usize) -> bool {
        match self.leaves.get(i / LEAF_BITS) {
            Some(Some(leaf)) => leaf[(i % LEAF_BITS) / 64] >> (i % 64) & 1 == 1,
            _ => false,
        }
    }

    /// Whether setting bit `i` would allocate a leaf (or grow the table).
    pub(crate) fn needs_leaf(&self, i: usize) -> bool {
        !matches!(self.leaves.get(i / LEAF_BITS), Some(Some(_)))
    }

    /// Set bit `i`, growing the table if it lies beyond it; returns whether it was clear.
    pub(crate) fn set(&mut self, i: usize) -> bool {
        let l = i / LEAF_BITS;
        if self.leaves.len() <= l {
            self.leaves.resize(l + 1, None);
        }
        let leaf = self.leaves[l].get_or_insert_with(|| Box::new([0; LEAF_WORDS]));
        let (w, bit) = ((i % LEAF_BITS) / 64, 1u64 << (i % 64));
        let was_clear = leaf[w] & bit == 0;
        leaf[w] |= bit;
        was_clear
    }

    /// The words in order, an absent leaf's as zeros (`LEAF_WORDS` per leaf of the table).
    pub(crate) fn words(&self) -> impl Iterator<Item = u64> + '_ {
        self.leaves.iter().flat_map(|l| l.as_deref().copied().unwrap_or([0; LEAF_WORDS]))
    }

    /// 64-bit words allocated: the leaves and the table (one word per entry).
    pub(crate) fn cost_words(&self) -> usize {
        self.leaves.len() + LEAF_WORDS * self.leaves.iter().filter(|l| l.is_some()).count()
    }

    /// Leaves allocated.
    #[cfg(test)]
    pub(crate) fn leaves_allocated(&self) -> usize {
        self.leaves.iter().filter(|l| l.is_some()).count()
    }

    /// Entries of the table of leaves.
    #[cfg(test)]
    pub(crate) fn table_len(&self) -> usize {
        self.leaves.len()
    }

    /// The bitmap of these words (tests).
    #[cfg(test)]
    pub(crate) fn from_words(words: &[u64]) -> LazyBits {
        let leaves = words
            .chunks(LEAF_WORDS)
            .map(|c| {
                let mut leaf = [0; LEAF_WORDS];
                leaf[..c.len()].copy_from_slice(c);
                Some(Box::new(leaf))
            })
            .collect();
        LazyBits { leaves }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_set_read_back_and_allocate_only_their_leaves() {
        let mut b = LazyBits::new(1 << 20);
        assert_eq!((b.table_len(), b.leaves_allocated(), b.cost_words()), (256, 0, 256));
        assert!(!b.get(1_000_000) && b.needs_leaf(1_000_000));
        assert!(b.set(1_000_000));
        assert!(!b.set(1_000_000), "set twice: not clear the second time");
        assert!(b.get(1_000_000) && !b.get(999_999) && !b.get(1_000_001));
        assert_eq!((b.leaves_allocated(), b.cost_words()), (1, 256 + 64));
        assert!(!b.needs_leaf(1_000_001));
        // The words: zeros but the one bit, at word 1_000_000 / 64, bit 1_000_000 % 64.
        let words: Vec<u64> = b.words().collect();
        assert_eq!(words.len(), 256 * LEAF_WORDS);
        assert_eq!(words.iter().filter(|&&w| w != 0).count(), 1);
        assert_eq!(words[1_000_000 / 64], 1 << (1_000_000 % 64));
        // Beyond the table: clear, and setting grows it.
        let mut g = LazyBits::default();
        assert!(!g.get(5_000) && g.set(5_000) && g.get(5_000));
        assert_eq!(g.table_len(), 2);
    }
}
