//! The hasher of the node loop's maps: connections by `(peer, connection id, side)` and an ATP
//! receiver's partial messages by id, each looked up once or twice per datagram.
//!
//! Why not the standard `SipHash`: it was 5-8% of the ATP sender's thread (two lookups per
//! ACK, one ACK per data packet; `make bench-udp` under `perf`). This one mixes each word of
//! the key as FxHash does (`h = (rotl(h, 5) ^ w) * K`) and finishes with a folded multiply
//! (the 128-bit product's halves XORed) by a per-map random key, as foldhash does.
//!
//! Untrusted keys: a peer picks its connection and message ids. For one peer, keys differ only
//! in those words, and each mixing step is a bijection of the state (XOR with a different word,
//! then multiplication by an odd constant), so distinct keys reach the finish with distinct
//! 64-bit states; the finish, keyed by a secret the peer does not see, then spreads them over
//! the buckets with every bit of the state. A peer cannot aim its ids at one bucket without
//! knowing the key, and the maps are bounded anyway (`NodeConfig::max_connections`, the
//! receive memory limits).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

/// FxHash's multiplier (odd: multiplication by it is a bijection of `u64`).
const K: u64 = 0xf135_7aea_2e62_a9c5;

/// A `HashMap` with [`KeyedFx`].
pub(crate) type FastMap<K, V> = HashMap<K, V, KeyedFx>;

/// A new empty [`FastMap`] with a fresh random key.
pub(crate) fn fast_map<K, V>() -> FastMap<K, V> {
    HashMap::with_hasher(KeyedFx::new())
}

/// Builds [`FxFold`] hashers with one random key (module docs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyedFx {
    seed: u64,
    key: u64,
}

impl KeyedFx {
    /// Keys drawn from the standard library's per-process random state.
    pub(crate) fn new() -> KeyedFx {
        let r = std::collections::hash_map::RandomState::new();
        let seed = r.hash_one(0x5eed_u64);
        // Odd, so that the finish multiplies by a unit.
        let key = r.hash_one(0x006b_6579_u64) | 1;
        KeyedFx { seed, key }
    }
}

impl BuildHasher for KeyedFx {
    type Hasher = FxFold;
    fn build_hasher(&self) -> FxFold {
        FxFold { h: self.seed, key: self.key }
    }
}

/// The hasher (module docs).
#[derive(Debug)]
pub(crate) struct FxFold {
    h: u64,
    key: u64,
}

impl FxFold {
    #[inline]
    fn add(&mut self, w: u64) {
        self.h = (self.h.rotate_left(5) ^ w).wrapping_mul(K);
    }
}

impl Hasher for FxFold {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            // The length in the top byte: "ab" and "ab\0" differ.
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 56));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        let p = u128::from(self.h) * u128::from(self.key);
        (p as u64) ^ ((p >> 64) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_of_one_peer_spread_over_the_buckets() {
        let b = KeyedFx::new();
        // Ids that agree in their low bits (an attempt to aim at one bucket without the key).
        let hashes: Vec<u64> = (0..4096u32).map(|i| b.hash_one(("127.0.0.1:9000", i << 12, true))).collect();
        assert_eq!(hashes.iter().collect::<HashSet<_>>().len(), 4096, "no full collisions");
        // The low 12 bits pick a bucket of a 4096-bucket table: most buckets get at most a few.
        let mut per = vec![0u32; 4096];
        for h in &hashes {
            per[(h & 4095) as usize] += 1;
        }
        assert!(per.iter().max().copied().unwrap_or(0) <= 12, "clustered: {:?}", per.iter().max());
    }

    #[test]
    fn a_map_finds_what_it_holds() {
        let mut m: FastMap<u32, u32> = fast_map();
        for i in 0..10_000 {
            m.insert(i * 64, i);
        }
        assert!((0..10_000).all(|i| m.get(&(i * 64)) == Some(&i)));
        assert_eq!(m.get(&1), None);
    }
}
