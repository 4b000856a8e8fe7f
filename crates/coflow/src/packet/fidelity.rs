//! The intra-coflow results at both fidelities, side by side: the slides' shuffle scenarios
//! A, B, C and broadcasts on the EC2 and DETERlab models, each run by the same mechanism code
//! on the fluid network and in the packet simulator (DCTCP), with checks of what the packet
//! level must confirm.
//!
//! Scale: the fluid model's times are linear in the data, the packet simulator's cost is
//! linear in packets, so the packet-level runs use less data than the slides (shuffle units of
//! 10 MB instead of 2 GB, broadcasts of 100 MB to 20 or 30 receivers; `quick = false`: 100 MB
//! units, 100 receivers). Both fidelities run the same reduced settings.

use crate::broadcast::figures::{deterlab, ec2, figure_config, FIGURE_MECHANISMS, TOPOLOGY_MECHANISMS};
use crate::broadcast::{run_broadcast, BroadcastConfig, Mechanism, Placement, MB};
use crate::net::Topology;
use crate::shuffle::{orchestra_scenario, run_shuffle, ShuffleMechanism};

use super::{run_broadcast_packet, run_shuffle_packet, PacketError, PacketOptions, PacketStats};

/// One shuffle mechanism on one of the slides' scenarios, both fidelities, mean over seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct ShuffleRow {
    /// "A", "B" or "C".
    pub topology: &'static str,
    /// `hadoop-3`, `hadoop-5` or `madd`.
    pub mechanism: &'static str,
    /// Flow level, seconds.
    pub flow_s: f64,
    /// Packet level, seconds.
    pub packet_s: f64,
    /// `Γ` at line rate (flow level), seconds.
    pub flow_gamma_s: f64,
    /// `Γ` at payload rate (packet level), seconds.
    pub packet_gamma_s: f64,
    /// Packet level: the spread of the flows' finishes (last minus first), seconds.
    pub packet_finish_spread_s: f64,
    /// Packet level: packets dropped at switches.
    pub drops: u64,
    /// Packet level: retransmitted segments.
    pub retx: u64,
}

/// One broadcast mechanism on a testbed model, both fidelities.
#[derive(Clone, Debug, PartialEq)]
pub struct BroadcastRow {
    /// "ec2" or "deterlab".
    pub testbed: &'static str,
    /// [`Mechanism::name`].
    pub mechanism: String,
    /// Flow level, seconds.
    pub flow_s: f64,
    /// Packet level, seconds.
    pub packet_s: f64,
    /// Lower bound at line rate, seconds.
    pub flow_lower_bound_s: f64,
    /// Lower bound at payload rate, seconds.
    pub packet_lower_bound_s: f64,
    /// Packet level: block transfers.
    pub transfers: usize,
    /// Packet level: events.
    pub events: u64,
    /// Packet level: packets dropped at switches.
    pub drops: u64,
    /// Packet level: retransmitted segments.
    pub retx: u64,
}

/// A statement the packet level must confirm, and whether it does.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// What is checked.
    pub expectation: String,
    /// Whether it holds.
    pub holds: bool,
    /// The numbers behind the verdict.
    pub detail: String,
}

/// Both tables and the checks.
#[derive(Clone, Debug, PartialEq)]
pub struct Fidelity {
    /// Shuffles A, B, C.
    pub shuffle: Vec<ShuffleRow>,
    /// Broadcasts.
    pub broadcast: Vec<BroadcastRow>,
    /// Checks.
    pub checks: Vec<Check>,
}

/// Packet over flow level within which the two fidelities are said to agree on a completion
/// time. Packets add headers (about 2.7% of a 1500-byte packet), slow start, ACK clocking and
/// queueing at shared links; 15% leaves room for those, not for a different mechanism.
pub const AGREEMENT: f64 = 0.15;

/// MADD at packet level is on time when it ends within this fraction past its payload `Γ`.
pub const MADD_ON_TIME: f64 = 0.02;

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// Runs both fidelities (module docs). `quick`: the reduced settings (about half a minute of
/// packet simulation in a release build).
pub fn fidelity(quick: bool) -> Result<Fidelity, PacketError> {
    let opts = PacketOptions::default();
    let (unit, seeds) = if quick { (10e6, 3u64) } else { (100e6, 10) };
    let mut shuffle = Vec::new();
    let mut checks = Vec::new();
    for (name, n) in [("A", 2), ("B", 3), ("C", 4)] {
        let (topo, sh) = orchestra_scenario(n, unit, 1.0)?;
        let mut by_mech = Vec::new();
        for (mname, m, runs) in [
            ("hadoop-3", ShuffleMechanism::Hadoop { max_fetches: 3 }, seeds),
            ("hadoop-5", ShuffleMechanism::Hadoop { max_fetches: 5 }, 1),
            ("madd", ShuffleMechanism::Madd, 1),
        ] {
            let (mut f, mut p, mut spread) = (Vec::new(), Vec::new(), Vec::new());
            let (mut fg, mut pg, mut drops, mut retx) = (0.0, 0.0, 0, 0);
            for seed in 1..=runs {
                let fr = run_shuffle(&topo, &sh, m, seed)?;
                let (pr, st) = run_shuffle_packet(&topo, &sh, m, seed, &opts)?;
                let first = pr.flows.iter().map(|c| c.finish_s).fold(f64::INFINITY, f64::min);
                f.push(fr.completion_s);
                p.push(pr.completion_s);
                spread.push(pr.completion_s - first);
                (fg, pg) = (fr.gamma_s, pr.gamma_s);
                drops += st.switch_drops;
                retx += st.retx_segments;
            }
            let row = ShuffleRow {
                topology: name,
                mechanism: mname,
                flow_s: mean(&f),
                packet_s: mean(&p),
                flow_gamma_s: fg,
                packet_gamma_s: pg,
                packet_finish_spread_s: mean(&spread),
                drops,
                retx,
            };
            by_mech.push(row);
        }
        let (k3, madd) = (&by_mech[0], &by_mech[2]);
        checks.push(Check {
            expectation: format!(
                "{name}: MADD enforced at the senders ends within {:.0}% of its payload Γ, every flow together",
                100.0 * MADD_ON_TIME
            ),
            holds: madd.packet_s <= madd.packet_gamma_s * (1.0 + MADD_ON_TIME)
                && madd.packet_finish_spread_s <= MADD_ON_TIME * madd.packet_gamma_s,
            detail: format!(
                "{:.4} s against Γ {:.4} s; flows finished within {:.2} ms of each other",
                madd.packet_s,
                madd.packet_gamma_s,
                1e3 * madd.packet_finish_spread_s
            ),
        });
        let (sp_f, sp_p) = (k3.flow_s / madd.flow_s - 1.0, k3.packet_s / madd.packet_s - 1.0);
        checks.push(Check {
            expectation: format!(
                "{name}: MADD speeds up the standard shuffle (K = 3) at packet level as at flow level \
                 (within 10 points)"
            ),
            holds: sp_p > 0.0 && (sp_p - sp_f).abs() <= 0.10,
            detail: format!("packet {:.0}%, flow {:.0}%", 100.0 * sp_p, 100.0 * sp_f),
        });
        shuffle.extend(by_mech);
    }

    let mut broadcast = Vec::new();
    let bytes = 100.0 * MB;
    let (ec2_receivers, deter_gbps) = if quick { (20, 1.0) } else { (100, 1.0) };
    let (ec2_topo, ec2_place) = ec2(ec2_receivers)?;
    let (deter_topo, deter_place) = deterlab(deter_gbps)?;
    let cfg = figure_config(bytes, 1);
    let runs: Vec<(&'static str, &Topology, &Placement, Mechanism)> = FIGURE_MECHANISMS
        .iter()
        .map(|&m| ("ec2", &ec2_topo, &ec2_place, m))
        .chain(TOPOLOGY_MECHANISMS.iter().map(|&m| ("deterlab", &deter_topo, &deter_place, m)))
        .collect();
    for (testbed, topo, place, m) in runs {
        broadcast.push(broadcast_row(testbed, topo, place, m, &cfg, &opts)?);
    }
    for r in &broadcast {
        let ratio = r.packet_s / r.flow_s;
        checks.push(Check {
            expectation: format!(
                "{} {}: packet-level completion within {:.0}% of flow level",
                r.testbed,
                r.mechanism,
                100.0 * AGREEMENT
            ),
            holds: (ratio - 1.0).abs() <= AGREEMENT,
            detail: format!("packet {:.3} s, flow {:.3} s ({:.2}x)", r.packet_s, r.flow_s, ratio),
        });
    }
    let time = |testbed: &str, m: Mechanism, packet: bool| {
        broadcast
            .iter()
            .find(|r| r.testbed == testbed && r.mechanism == m.name())
            .map_or(f64::NAN, |r| if packet { r.packet_s } else { r.flow_s })
    };
    for packet in [false, true] {
        let level = if packet { "packet" } else { "flow" };
        let cornet = time("ec2", Mechanism::Cornet, packet);
        let others = [Mechanism::Hdfs { replicas: 3 }, Mechanism::Hdfs { replicas: 10 }];
        let fastest_hdfs = others.iter().map(|&m| time("ec2", m, packet)).fold(f64::INFINITY, f64::min);
        checks.push(Check {
            expectation: format!("EC2, {level} level: Cornet is faster than HDFS-3 and HDFS-10"),
            holds: cornet < fastest_hdfs,
            detail: format!("Cornet {cornet:.3} s, the faster HDFS {fastest_hdfs:.3} s"),
        });
        let (c, ct) = (time("deterlab", Mechanism::Cornet, packet), time("deterlab", Mechanism::CornetTopology, packet));
        checks.push(Check {
            expectation: format!("DETERlab, {level} level: knowing the racks makes Cornet faster"),
            holds: ct < c,
            detail: format!("CornetTopology {ct:.3} s, Cornet {c:.3} s ({:.2}x)", c / ct),
        });
    }
    Ok(Fidelity { shuffle, broadcast, checks })
}

fn broadcast_row(
    testbed: &'static str,
    topo: &Topology,
    place: &Placement,
    m: Mechanism,
    cfg: &BroadcastConfig,
    opts: &PacketOptions,
) -> Result<BroadcastRow, PacketError> {
    let f = run_broadcast(topo, place, m, cfg)?;
    let (p, st): (_, PacketStats) = run_broadcast_packet(topo, place, m, cfg, opts)?;
    Ok(BroadcastRow {
        testbed,
        mechanism: m.name(),
        flow_s: f.completion_s,
        packet_s: p.completion_s,
        flow_lower_bound_s: f.lower_bound_s,
        packet_lower_bound_s: p.lower_bound_s,
        transfers: p.num_transfers,
        events: st.events,
        drops: st.switch_drops,
        retx: st.retx_segments,
    })
}
