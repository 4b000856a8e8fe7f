//! ECMP: a stable hash of (flow, switch, seed) picks the next hop, so a flow keeps its path in
//! both the forward and the reverse direction's switches independently (as hardware ECMP on
//! the 5-tuple does). The seed (`routing.hash_seed`) samples another assignment of flows to
//! paths with everything else fixed.

use units::LinkId;

use super::{hash3, member, PathSelection};

/// Per-flow hashing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ecmp {
    /// `routing.hash_seed`.
    pub seed: u64,
}

impl PathSelection for Ecmp {
    #[inline]
    fn pick(&self, group: &[LinkId], s: u32, flow: u32, _seq: u64) -> LinkId {
        member(group, hash3(flow as u64, s as u64, self.seed))
    }
}
