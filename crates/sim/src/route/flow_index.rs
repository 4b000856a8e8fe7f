//! Flow index: member `flow mod group size`, in both directions. A deterministic path choice
//! that another simulator can reproduce exactly (the ns-3 peer's `--ecmp=flowid`), for A/B
//! comparisons free of hash-collision noise.

use units::LinkId;

use super::PathSelection;

/// Per-flow, without hashing.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowIndex;

impl PathSelection for FlowIndex {
    #[inline]
    fn pick(&self, group: &[LinkId], _s: u32, flow: u32, _seq: u64) -> LinkId {
        group[flow as usize % group.len()]
    }
}
