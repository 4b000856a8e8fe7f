//! Symmetric ECMP: a stable hash of (flow, seed) alone, not of the switch, picks the member
//! index, so at every tier both directions of a flow take the same index of their (equally
//! ordered) groups. On leaf-spine and fat-tree topologies the reverse path is then the forward
//! path reversed, which ExpressPass needs (Cho et al., SIGCOMM'17, §3.1: credits must cross, in
//! reverse, the links their data will cross, so that rate-limiting credits per port limits the
//! data). The price: a flow's choices at different tiers are correlated.

use units::LinkId;

use super::{hash3, member, PathSelection};

/// Per-flow hashing, the same at every switch.
#[derive(Clone, Copy, Debug, Default)]
pub struct SymmetricEcmp {
    /// `routing.hash_seed`.
    pub seed: u64,
}

/// A constant in place of the switch id, so that the hash differs from `Ecmp`'s.
const ANY_SWITCH: u64 = 0x5eed_ec3f;

impl PathSelection for SymmetricEcmp {
    #[inline]
    fn pick(&self, group: &[LinkId], _s: u32, flow: u32, _seq: u64) -> LinkId {
        member(group, hash3(flow as u64, ANY_SWITCH, self.seed))
    }
}
