//! `[topology]` (a tagged choice of builder) and `[routing]` (path selection).

#[allow(unused_imports)]
use super::*;

/// The network to build.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// Two-tier leaf-spine. Oversubscription follows from the numbers:
    /// `hosts_per_leaf * host_rate / (spines * links_per_spine * fabric_rate)`.
    LeafSpine(LeafSpine),
    /// Three-tier k-ary fat-tree (Al-Fares et al.): k pods of k/2 edge and k/2 aggregation
    /// switches, (k/2)^2 cores, k^3/4 hosts. All links at one rate and delay.
    FatTree(FatTree),
}

/// Keys of `kind = "leaf_spine"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeafSpine {
    /// Number of leaf (top-of-rack) switches.
    pub leaves: u32,
    /// Hosts under each leaf.
    pub hosts_per_leaf: u32,
    /// Number of spine switches (0 only with a single leaf); `spines * links_per_spine` is at
    /// most [`MAX_LEAF_UPLINKS`](super::limits::MAX_LEAF_UPLINKS) and `leaves` times that at most
    /// [`MAX_FABRIC_LINKS`](super::limits::MAX_FABRIC_LINKS).
    pub spines: u32,
    /// Parallel links between each leaf and each spine.
    #[serde(default = "one")]
    pub links_per_spine: u32,
    /// Host-to-leaf link rate.
    pub host_rate_gbps: f64,
    /// Leaf-to-spine link rate.
    pub fabric_rate_gbps: f64,
    /// Host-to-leaf propagation delay (at most [`MAX_DELAY_NS`](super::limits::MAX_DELAY_NS)).
    #[serde(default = "default_delay_ns")]
    pub host_delay_ns: u64,
    /// Leaf-to-spine propagation delay (at most [`MAX_DELAY_NS`](super::limits::MAX_DELAY_NS)).
    #[serde(default = "default_delay_ns")]
    pub fabric_delay_ns: u64,
}

/// Keys of `kind = "fat_tree"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FatTree {
    /// Switch radix; even, at least 2.
    pub k: u32,
    /// Rate of every link.
    pub rate_gbps: f64,
    /// Propagation delay of every link (at most [`MAX_DELAY_NS`](super::limits::MAX_DELAY_NS)).
    #[serde(default = "default_delay_ns")]
    pub delay_ns: u64,
}

fn one() -> u32 {
    1
}
fn default_delay_ns() -> u64 {
    1000
}

/// Path selection among equal-cost paths.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingSpec {
    /// `ecmp` (per-flow hash), `spray` (per-packet) or `flow_index` (flow index mod paths).
    #[serde(default)]
    pub mode: RoutingMode,
    /// Seed of the ECMP and spraying hash (default 0). Change it to sample routing noise: which
    /// equal-cost path each flow takes, with everything else fixed.
    #[serde(default)]
    pub hash_seed: u64,
}

/// How a switch picks among equal-cost next hops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoutingMode {
    /// Per-flow: a stable hash of (flow, switch) picks the next hop; a flow keeps its path.
    #[default]
    Ecmp,
    /// Per-packet: a stable hash of (flow, sequence, switch) picks the next hop.
    Spray,
    /// Per-flow without hashing: member `flow index mod group size`, in both directions. A
    /// deterministic path choice that another simulator can reproduce exactly (the ns-3 peer's
    /// `--ecmp=flowid`), for A/B comparisons free of hash-collision noise.
    FlowIndex,
    /// Per-flow: a stable hash of the flow alone picks the same member index at every switch,
    /// so both directions of a flow take one path (ExpressPass §3.1 needs it: credits must
    /// cross their data's links in reverse; see `route::SymmetricEcmp`).
    SymmetricEcmp,
}
