//! Topology builders: leaf-spine and k-ary fat-tree, compiled to dense arrays.
//!
//! INVARIANT: hosts are nodes `0..num_hosts` and switches `num_hosts..num_nodes`; switch `s`
//! is node `num_hosts + s`. Every link is unidirectional and appears with its reverse. Link ids
//! are dense in build order, which is a fixed function of the spec.

use units::{Bps, Dur, NodeId, SwitchId};

use crate::metrics::Tier;
use crate::spec::{FatTree, LeafSpine, TopologySpec};

/// One unidirectional link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSpec {
    /// Transmitting node (its egress port).
    pub src: NodeId,
    /// Receiving node.
    pub dst: NodeId,
    /// Line rate.
    pub rate: Bps,
    /// Propagation delay.
    pub delay: Dur,
}

/// A built network.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// Hosts, `0..num_hosts`.
    pub num_hosts: u32,
    /// Role of each switch, indexed by [`SwitchId`].
    pub tiers: Vec<Tier>,
    /// All links.
    pub links: Vec<LinkSpec>,
    /// Leaf (edge switch) index of each host.
    pub leaf_of_host: Vec<u32>,
    /// Number of leaves (edge switches).
    pub num_leaves: u32,
    /// Hosts under each leaf.
    pub hosts_per_leaf: u32,
    /// Host access link rate.
    pub host_rate: Bps,
    /// Total uplink capacity of one leaf (edge switch).
    pub leaf_uplink: Bps,
}

/// The size of a topology, computed from its spec without building it. Floating point, because
/// validation uses it to refuse networks too large to build, whose counts need not fit the id
/// types.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counts {
    /// Hosts.
    pub hosts: f64,
    /// Switches.
    pub switches: f64,
    /// Unidirectional links (each host and each switch port has one).
    pub links: f64,
}

impl Topology {
    /// The counts [`Topology::build`] would produce for `spec` (tested equal).
    pub fn counts(spec: &TopologySpec) -> Counts {
        match *spec {
            TopologySpec::LeafSpine(LeafSpine { leaves, hosts_per_leaf, spines, links_per_spine, .. }) => {
                let (l, h, s, m) = (leaves as f64, hosts_per_leaf as f64, spines as f64, links_per_spine as f64);
                Counts { hosts: l * h, switches: l + s, links: 2.0 * (l * h + l * s * m) }
            }
            TopologySpec::FatTree(FatTree { k, .. }) => {
                let k = k as f64;
                // k^3/4 hosts and as many edge-aggregation and aggregation-core links, duplex.
                Counts { hosts: k * k * k / 4.0, switches: 1.25 * k * k, links: 1.5 * k * k * k }
            }
        }
    }

    /// Build the network a spec describes.
    pub fn build(spec: &TopologySpec) -> Topology {
        match *spec {
            TopologySpec::LeafSpine(LeafSpine {
                leaves,
                hosts_per_leaf,
                spines,
                links_per_spine,
                host_rate_gbps,
                fabric_rate_gbps,
                host_delay_ns,
                fabric_delay_ns,
            }) => leaf_spine(
                leaves,
                hosts_per_leaf,
                spines,
                links_per_spine,
                Bps::from_gbps_f64(host_rate_gbps),
                Bps::from_gbps_f64(fabric_rate_gbps),
                Dur::from_ns(host_delay_ns),
                Dur::from_ns(fabric_delay_ns),
            ),
            TopologySpec::FatTree(FatTree { k, rate_gbps, delay_ns }) => {
                fat_tree(k, Bps::from_gbps_f64(rate_gbps), Dur::from_ns(delay_ns))
            }
        }
    }

    /// Nodes in total.
    pub fn num_nodes(&self) -> u32 {
        self.num_hosts + self.tiers.len() as u32
    }

    /// Node id of switch `s`.
    pub fn switch_node(&self, s: SwitchId) -> NodeId {
        NodeId(self.num_hosts + s.0)
    }

    /// Switch id of node `n`, if it is a switch.
    pub fn switch_of(&self, n: NodeId) -> Option<SwitchId> {
        n.0.checked_sub(self.num_hosts).map(SwitchId)
    }

    fn push_duplex(&mut self, a: NodeId, b: NodeId, rate: Bps, delay: Dur) {
        self.links.push(LinkSpec { src: a, dst: b, rate, delay });
        self.links.push(LinkSpec { src: b, dst: a, rate, delay });
    }
}

/// Two-tier leaf-spine. Host `h` sits under leaf `h / hosts_per_leaf`.
#[allow(clippy::too_many_arguments)]
pub fn leaf_spine(
    leaves: u32,
    hosts_per_leaf: u32,
    spines: u32,
    links_per_spine: u32,
    host_rate: Bps,
    fabric_rate: Bps,
    host_delay: Dur,
    fabric_delay: Dur,
) -> Topology {
    let num_hosts = leaves * hosts_per_leaf;
    let mut tiers = vec![Tier::Leaf; leaves as usize];
    tiers.extend(std::iter::repeat_n(Tier::Spine, spines as usize));
    let mut t = Topology {
        num_hosts,
        tiers,
        links: Vec::new(),
        leaf_of_host: (0..num_hosts).map(|h| h / hosts_per_leaf).collect(),
        num_leaves: leaves,
        hosts_per_leaf,
        host_rate,
        leaf_uplink: Bps(fabric_rate.get().saturating_mul(spines as u64).saturating_mul(links_per_spine as u64)),
    };
    let leaf = |l: u32| NodeId(num_hosts + l);
    let spine = |s: u32| NodeId(num_hosts + leaves + s);
    for h in 0..num_hosts {
        t.push_duplex(NodeId(h), leaf(h / hosts_per_leaf), host_rate, host_delay);
    }
    for l in 0..leaves {
        for s in 0..spines {
            for _ in 0..links_per_spine {
                t.push_duplex(leaf(l), spine(s), fabric_rate, fabric_delay);
            }
        }
    }
    t
}

/// Three-tier k-ary fat-tree (Al-Fares et al., SIGCOMM'08): pod `p` has edge switches
/// `p*k/2 ..` and as many aggregation switches; aggregation switch `i` of every pod connects to
/// cores `i*k/2 .. (i+1)*k/2`. Host `h` sits under edge switch `h / (k/2)`.
pub fn fat_tree(k: u32, rate: Bps, delay: Dur) -> Topology {
    let half = k / 2;
    let num_hosts = k * k * k / 4;
    let num_edge = k * half;
    let num_agg = k * half;
    let num_core = half * half;
    let mut tiers = vec![Tier::Leaf; num_edge as usize];
    tiers.extend(std::iter::repeat_n(Tier::Spine, num_agg as usize));
    tiers.extend(std::iter::repeat_n(Tier::Core, num_core as usize));
    let mut t = Topology {
        num_hosts,
        tiers,
        links: Vec::new(),
        leaf_of_host: (0..num_hosts).map(|h| h / half).collect(),
        num_leaves: num_edge,
        hosts_per_leaf: half,
        host_rate: rate,
        leaf_uplink: Bps(rate.get().saturating_mul(half as u64)),
    };
    let edge = |e: u32| NodeId(num_hosts + e);
    let agg = |a: u32| NodeId(num_hosts + num_edge + a);
    let core = |c: u32| NodeId(num_hosts + num_edge + num_agg + c);
    for h in 0..num_hosts {
        t.push_duplex(NodeId(h), edge(h / half), rate, delay);
    }
    for p in 0..k {
        for e in 0..half {
            for a in 0..half {
                t.push_duplex(edge(p * half + e), agg(p * half + a), rate, delay);
            }
        }
    }
    for p in 0..k {
        for a in 0..half {
            for c in 0..half {
                t.push_duplex(agg(p * half + a), core(a * half + c), rate, delay);
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_spine_counts_and_oversubscription() {
        let t = leaf_spine(
            2,
            16,
            4,
            1,
            Bps::from_gbps(10),
            Bps::from_gbps(10),
            Dur::from_us(3),
            Dur::from_us(3),
        );
        assert_eq!(t.num_hosts, 32);
        assert_eq!(t.num_nodes(), 38);
        assert_eq!(t.links.len(), 2 * (32 + 2 * 4));
        assert_eq!(t.leaf_uplink, Bps::from_gbps(40));
        // 16 x 10G down vs 40G up: 4:1.
        assert_eq!(16 * t.host_rate.get() / t.leaf_uplink.get(), 4);
        assert_eq!(t.leaf_of_host[17], 1);
    }

    #[test]
    fn counts_equal_what_the_builders_build() {
        let ls = |leaves, hosts_per_leaf, spines, links_per_spine| {
            TopologySpec::LeafSpine(LeafSpine {
                leaves,
                hosts_per_leaf,
                spines,
                links_per_spine,
                host_rate_gbps: 10.0,
                fabric_rate_gbps: 40.0,
                host_delay_ns: 1,
                fabric_delay_ns: 1,
            })
        };
        let ft = |k| TopologySpec::FatTree(FatTree { k, rate_gbps: 10.0, delay_ns: 1 });
        for spec in [ls(2, 16, 4, 1), ls(1, 5, 0, 1), ls(3, 2, 5, 3), ft(2), ft(4), ft(8)] {
            let t = Topology::build(&spec);
            let c = Topology::counts(&spec);
            assert_eq!((c.hosts, c.switches, c.links), (t.num_hosts as f64, t.tiers.len() as f64, t.links.len() as f64));
        }
    }

    #[test]
    fn fat_tree_k4_counts() {
        let t = fat_tree(4, Bps::from_gbps(10), Dur::from_us(1));
        assert_eq!(t.num_hosts, 16);
        assert_eq!(t.tiers.len(), 8 + 8 + 4);
        // Every switch has k ports: 20 switches * 4 ports / 2 ends + 16 host links = duplex links.
        let duplex = t.links.len() / 2;
        assert_eq!(duplex, 16 + 16 + 16);
        let mut degree = vec![0; t.num_nodes() as usize];
        for l in &t.links {
            degree[l.src.idx()] += 1;
        }
        assert!(degree[16..].iter().all(|&d| d == 4), "{degree:?}");
    }
}
