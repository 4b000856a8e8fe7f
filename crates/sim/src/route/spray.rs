//! Packet spraying: a stable hash of (flow, switch, sequence number, seed) picks the next hop
//! per packet, spreading a flow over every equal-cost path (and reordering it).

use units::LinkId;

use super::{hash3, member, PathSelection};

/// Per-packet hashing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spray {
    /// `routing.hash_seed`.
    pub seed: u64,
}

impl PathSelection for Spray {
    #[inline]
    fn pick(&self, group: &[LinkId], s: u32, flow: u32, seq: u64) -> LinkId {
        member(group, hash3(flow as u64 ^ self.seed.rotate_left(32), s as u64, seq.wrapping_add(1)))
    }
}
