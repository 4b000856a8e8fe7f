//! Building a simulation's network from a validated scenario: links with their ports, switches
//! with their shared buffers and admission policies, the transport configuration, the base RTT
//! and the unloaded paths that the ideal FCT is computed on. No I/O: every file input was read
//! by validation.

use std::collections::{HashMap, VecDeque};

use proto::atp::{OnLoss, Sched};
use proto::{AtpConfig, CcKind, ExpressPassConfig, MltConfig, PfabricConfig, TcpConfig, TransportConfig, UdpConfig};
use units::{Bps, Bytes, Dur, LinkId, NodeId, SwitchId, Time};

use super::switch::{Link, Switch, SwitchBuf, NO_SWITCH};
use crate::admission::{AdmissionCtx, AnyAdmission};
use crate::ideal::{one_way, Hop};
use crate::metrics::SwitchStats;
use crate::queue::{CreditShaper, Port, QueueConf, SelectiveDrop};
use crate::route::Routes;
use crate::spec::{
    AtpOnLoss, AtpSched, NicSchedulerKind, SchedulerKind, Spec, TcpKeys, TransportSpec, DEFAULT_BUFFER_PER_PORT_PER_GBPS,
};
use crate::packet::Packet;
use crate::topo::{Counts, LinkSpec, Topology};
use crate::SimError;

/// The transport configuration a spec asks for (defaults documented in `spec`). PowerTCP
/// takes its base RTT and NIC rate from the network, and so do pFabric's default initial window
/// (one BDP) and RTO (three base RTTs).
pub fn transport_config(t: &TransportSpec, base_rtt: Dur, host_rate: Bps) -> TransportConfig {
    let tcp = |k: TcpKeys, cc: CcKind| {
        TransportConfig::Tcp(TcpConfig {
            cc,
            mss: k.mss_bytes,
            init_cwnd_pkts: k.init_cwnd_pkts,
            init_cwnd_covers_transfer: k.init_cwnd_covers_transfer,
            min_rto: Dur::from_us(k.min_rto_us),
            init_rto: Dur::from_us(k.init_rto_us),
            max_rto: Dur::from_us(k.max_rto_us),
            max_retries: k.max_retries,
            dupack_threshold: k.dupack_threshold,
            limited_transmit: k.limited_transmit,
            sack: k.sack,
            rack_tlp: k.rack_tlp,
            prr: k.prr,
            slow_start: k.slow_start,
            delayed_ack: (k.delayed_ack_segments > 0).then(|| proto::tcp::DelayedAck {
                count: k.delayed_ack_segments,
                timeout: Dur::from_us(k.delayed_ack_timeout_us),
            }),
            handshake: k.handshake,
            prio: 0,
        })
    };
    match t {
        TransportSpec::Dctcp(d) => tcp(d.tcp(), CcKind::Dctcp {
            g: d.g,
            init_alpha: d.init_alpha,
            loss_by_alpha: d.loss_response == crate::spec::DctcpLossResponse::Alpha,
            ns3_cwr: d.loss_in_cwr == crate::spec::DctcpLossInCwr::Ns3,
            ece_only_on_new_acks: d.ece_only_on_new_acks,
        }),
        TransportSpec::Newreno(n) => tcp(n.tcp(), CcKind::NewReno),
        TransportSpec::PowerTcp(p) => {
            let mut cc = CcKind::power_tcp_default(base_rtt, host_rate);
            if let CcKind::PowerTcp { gamma, beta_bytes, .. } = &mut cc {
                *gamma = p.gamma;
                if let Some(b) = p.beta_bytes {
                    *beta_bytes = b;
                }
            }
            tcp(p.tcp(), cc)
        }
        TransportSpec::Udp(u) => TransportConfig::Udp(UdpConfig {
            mss: u.mss_bytes,
            rate: u.rate_gbps.map(Bps::from_gbps_f64),
            header_bytes: u.header_bytes,
            prio: 0,
        }),
        TransportSpec::Mlt(m) => TransportConfig::Mlt(MltConfig {
            mss: m.mss_bytes,
            value_bytes: m.value_bytes,
            complete_fraction: m.complete_fraction,
            init_cwnd_pkts: m.init_cwnd_pkts,
            cc: m.cc.into(),
            g: m.g,
            init_alpha: m.init_alpha,
            rto: Dur::from_us(m.rto_us),
            max_rto: Dur::from_us(m.max_rto_us),
            dupack_threshold: m.dupack_threshold,
            send_order: m.send_order.into(),
            tag: 0,
            tail_probe: m.tail_probe,
        }),
        TransportSpec::Pfabric(p) => {
            let mtu = u64::from(p.mss_bytes) + u64::from(p.header_bytes);
            TransportConfig::Pfabric(PfabricConfig {
                mss: p.mss_bytes,
                init_cwnd_pkts: p
                    .init_cwnd_pkts
                    .unwrap_or_else(|| pfabric_bdp_pkts(host_rate, base_rtt, mtu, p.max_cwnd_pkts)),
                max_cwnd_pkts: p.max_cwnd_pkts,
                // §4.2: "a small fixed RTO", about three RTTs (45 µs at §5.1's 14.6 µs).
                rto: p.rto_us.map_or(base_rtt.saturating_mul(3), |us| Dur::from_secs_f64(us * 1e-6)).max(Dur::from_ps(1)),
                probe_after_timeouts: p.probe_after_timeouts,
            })
        }
        TransportSpec::Atp(a) => {
            let v = AtpConfig::variant(a.variant.name()).expect("every AtpVariant names a proto variant");
            TransportConfig::Atp(AtpConfig {
                mss: a.mss_bytes,
                header_bytes: a.header_bytes,
                rate: a.rate_gbps.map(Bps::from_gbps_f64),
                m: a.m,
                init_rtt: a.init_rtt_us.map_or(base_rtt, |us| Dur::from_secs_f64(us * 1e-6)),
                classes: a.classes,
                ack_prio: a.ack_prio,
                rate_control: a.rate_control.unwrap_or(v.rate_control),
                dynamic_tlr: a.dynamic_tlr.unwrap_or(v.dynamic_tlr),
                dynamic_prio: a.dynamic_prio.unwrap_or(v.dynamic_prio),
                sched: a.sched.map_or(v.sched, |s| match s {
                    AtpSched::Mrdf => Sched::Mrdf,
                    AtpSched::InOrder => Sched::InOrder,
                    AtpSched::NewFirst => Sched::NewFirst,
                }),
                on_loss: match a.on_loss {
                    AtpOnLoss::GiveUp => OnLoss::GiveUp,
                    AtpOnLoss::Resend => OnLoss::Resend,
                },
                message_bytes: a.message_bytes.unwrap_or(u64::from(a.mss_bytes)),
                msr: a.msr,
                max_silent_epochs: a.max_silent_epochs,
                // The simulator polls a sender exactly when its next packet is due.
                pacing_burst_bytes: 0,
                // Its hosts answer every packet at once: the paper's timeout, unbounded below.
                min_loss_timeout: units::Dur::ZERO,
            })
        }
        TransportSpec::Expresspass(x) | TransportSpec::Aeolus(x) => {
            // Aeolus §3.1: one BDP (host line rate x base RTT) unscheduled unless given.
            let bdp = host_rate.bytes_in(base_rtt).get().max(1);
            let unscheduled_bytes = match t {
                TransportSpec::Aeolus(_) => x.unscheduled_bytes.unwrap_or(bdp),
                _ => 0,
            };
            TransportConfig::ExpressPass(ExpressPassConfig {
                mss: x.mss_bytes,
                header_bytes: x.header_bytes,
                line_rate: host_rate,
                unscheduled_bytes,
                target_loss: x.target_loss,
                w_init: x.w_init,
                w_min: x.w_min,
                w_max: x.w_max,
                init_rate: x.init_rate,
                init_rtt: x.init_rtt_us.map_or(base_rtt, |us| Dur::from_secs_f64(us * 1e-6)),
                rto: Dur::from_us(x.rto_us),
                max_retries: x.max_retries,
            })
        }
    }
}

/// The path a packet from host `src` to host `dst` takes if every switch picks the first
/// equal-cost next hop (all equal-cost paths have the same rates and delays in the
/// topologies built here).
pub(crate) fn first_path(topo: &Topology, routes: &Routes, src: u32, dst: u32) -> Vec<Hop> {
    let mut hops = Vec::new();
    let mut l = routes.nic(NodeId(src));
    loop {
        let spec = &topo.links[l.idx()];
        hops.push(Hop { rate: spec.rate, delay: spec.delay });
        match topo.switch_of(spec.dst) {
            None => return hops,
            Some(s) => match routes.group(s.0, NodeId(dst)).first() {
                Some(&next) => l = next,
                None => return hops,
            },
        }
    }
}

/// More representative hosts than this and the base RTT is the largest over pairs that
/// include the first representative (a bound on setup time; exact for symmetric fabrics).
const MAX_RTT_REPRESENTATIVES: usize = 512;

/// The base RTT: the largest unloaded round trip between any two hosts, propagation both ways
/// plus serializing one full packet out and one ACK back at every hop. Credence's and ABM's
/// averaging and refresh period, and PowerTCP's horizon.
///
/// Hosts attached to the same switch through links of the same rate and delay (both ways) are
/// equivalent, so one representative of each such class is paired with every other (and two
/// hosts of a class with each other when a class has more than one host). No pair is assumed
/// to be the farthest.
pub(crate) fn base_rtt(topo: &Topology, routes: &Routes, full: u64, ack: u64) -> Dur {
    let mut classes: HashMap<(u32, u64, u64, u64, u64), Vec<u32>> = HashMap::new();
    let mut order = Vec::new();
    let mut down_of = vec![(0u64, 0u64); topo.num_hosts as usize];
    for l in &topo.links {
        if topo.switch_of(l.dst).is_none() {
            down_of[l.dst.idx()] = (l.rate.get(), l.delay.0);
        }
    }
    for h in 0..topo.num_hosts {
        let up = &topo.links[routes.nic(NodeId(h)).idx()];
        let down = down_of[h as usize];
        let key = (up.dst.0, up.rate.get(), up.delay.0, down.0, down.1);
        let members = classes.entry(key).or_default();
        if members.is_empty() {
            order.push(key);
        }
        if members.len() < 2 {
            members.push(h);
        }
    }
    let rtt = |a: u32, b: u32| {
        one_way(&first_path(topo, routes, a, b), Bytes(full)) + one_way(&first_path(topo, routes, b, a), Bytes(ack))
    };
    let reps: Vec<&Vec<u32>> = order.iter().map(|k| &classes[k]).collect();
    let mut best = Dur::ZERO;
    for (i, a) in reps.iter().enumerate() {
        if a.len() > 1 {
            best = best.max(rtt(a[0], a[1])).max(rtt(a[1], a[0]));
        }
        for (j, b) in reps.iter().enumerate() {
            if i == j || (reps.len() > MAX_RTT_REPRESENTATIVES && i != 0 && j != 0) {
                continue;
            }
            best = best.max(rtt(a[0], b[0]));
        }
    }
    best
}

/// The memory a network of `c` takes once built (ports with `qpp` queues each, wires, switch
/// buffers and admission state, routing tables, the topology and its adjacency lists),
/// estimated from its counts before anything is allocated: validation refuses more than
/// `spec::limits::MAX_NETWORK_BYTES`. The per-item sizes are the types' own; on a k = 48
/// fat-tree (27,648 hosts; 2,880 switches; 165,888 links) it gives 411 MB against a measured
/// peak of 414 MB (the whole process, before any traffic), on a leaf-spine with 100,000 spines
/// 303 MB against 321 MB.
pub(crate) fn network_bytes(c: &Counts, qpp: usize) -> f64 {
    use std::mem::size_of;
    // Heap blocks carry the allocator's header and rounding.
    const BLOCK: usize = 16;
    let queue = size_of::<VecDeque<Packet>>() + 2 * size_of::<u64>() + size_of::<QueueConf>();
    // A link: its port (four vectors of `qpp` entries), wire, spec, and its id in the
    // adjacency lists, its switch's port list and the routing groups.
    let link = size_of::<Link>() + size_of::<LinkSpec>() + 5 * size_of::<LinkId>() + 4 * BLOCK + qpp * queue;
    // A switch port's queue in the shared buffer: its length, and up to seven more words of
    // admission state (the LQD followers' virtual queues, ABM's rates).
    let switch_queue = size_of::<[u64; 8]>();
    let switch = size_of::<Switch>() + 8 * BLOCK;
    // A node: adjacency lists, BFS state; a host: its generators' per-host state.
    let node = 3 * (size_of::<Vec<LinkId>>() + BLOCK) + size_of::<u32>();
    let host = 64;
    let switch_ports = (c.links - c.hosts).max(0.0);
    c.links * link as f64
        + switch_ports * (qpp * switch_queue) as f64
        + c.switches * switch as f64
        + (c.hosts + c.switches) * node as f64
        + c.hosts * host as f64
        // The routing table: one group index per (switch, destination host).
        + c.switches * c.hosts * size_of::<u32>() as f64
}

/// The shared buffer of every switch, in switch order, as the run will size them.
pub(crate) fn switch_buffers(spec: &Spec, topo: &Topology) -> Vec<u64> {
    let mut out_links: Vec<Vec<LinkId>> = vec![Vec::new(); topo.num_nodes() as usize];
    for (i, l) in topo.links.iter().enumerate() {
        out_links[l.src.idx()].push(LinkId::from_idx(i));
    }
    (0..topo.tiers.len() as u32).map(|s| buffer_of(spec, topo, &out_links, topo.switch_node(SwitchId(s)))).collect()
}

/// Shared buffer of the switch at `node` per the spec.
fn buffer_of(spec: &Spec, topo: &Topology, out_links: &[Vec<LinkId>], node: NodeId) -> u64 {
    if let Some(b) = spec.switch.buffer_bytes {
        return b;
    }
    if let (None, crate::spec::AdmissionSpec::Static { port_bytes: Some(p) }) =
        (spec.switch.buffer_per_port_per_gbps, &spec.switch.admission)
    {
        return p.saturating_mul(out_links[node.idx()].len() as u64);
    }
    let per = spec.switch.buffer_per_port_per_gbps.unwrap_or(DEFAULT_BUFFER_PER_PORT_PER_GBPS);
    let gbps: f64 = out_links[node.idx()].iter().map(|l| topo.links[l.idx()].rate.as_gbps_f64()).sum();
    (per * gbps).round() as u64
}

/// A switch port's credit queue (`switch.credit_queue_pkts`) and the gap between its credits at
/// `rate`: one serialization of a credit (the smallest header of the run's credit-scheduled
/// transports) and the run's largest data packet (ExpressPass §3.1); `None` when off.
fn credit_gap(spec: &Spec, rate: Bps) -> Option<(usize, Dur)> {
    let cap = spec.switch.credit_queue_pkts?;
    let credit = std::iter::once(&spec.transport)
        .chain(spec.workload.iter().filter_map(|w| w.transport()))
        .filter(|t| matches!(t, TransportSpec::Expresspass(_) | TransportSpec::Aeolus(_)))
        .map(|t| u64::from(t.header_bytes()))
        .min()
        .unwrap_or(u64::from(spec.transport.header_bytes()));
    Some((cap as usize, rate.tx_time(Bytes(credit.saturating_add(spec.largest_packet())))))
}

/// The links (egress ports and wires) of the network.
pub(crate) fn links(spec: &Spec, topo: &Topology, out_links: &[Vec<LinkId>], base_rtt: Dur) -> Vec<Link> {
    // DRR quanta are at least the largest packet of any of the run's transports.
    let quantum = std::iter::once(&spec.transport)
        .chain(spec.workload.iter().filter_map(|w| w.transport()))
        .map(|t| u64::from(t.mss_bytes()) + u64::from(t.header_bytes()))
        .max()
        .unwrap_or(1);
    let mut sw_conf: Vec<QueueConf> = spec
        .switch
        .queues
        .iter()
        .map(|q| QueueConf { ecn_threshold: q.ecn_threshold_bytes, cap: q.cap_bytes })
        .collect();
    if spec.switch.scheduler == SchedulerKind::Pfabric {
        for c in sw_conf.iter_mut().filter(|c| c.cap.is_none()) {
            c.cap = Some(pfabric_default_buffer(topo.host_rate, base_rtt, quantum));
        }
    }
    let nic_k = spec.host.ecn_threshold_bytes.or(spec.switch.queues[0].ecn_threshold_bytes);
    let nic_conf = QueueConf {
        ecn_threshold: nic_k.filter(|_| spec.host.ecn_marking),
        cap: spec.host.nic_buffer_bytes,
    };
    let nic_port = || match spec.host.scheduler {
        // A FIFO NIC under pFabric switches stays a FIFO (see `SchedulerKind::Pfabric`).
        NicSchedulerKind::Fifo => Port::new(vec![nic_conf], nic_fifo_kind(spec.switch.scheduler), quantum),
        NicSchedulerKind::PerFlowRr => Port::per_flow(nic_conf, quantum),
        NicSchedulerKind::Pfabric => Port::new(vec![nic_conf], SchedulerKind::Pfabric, quantum),
    };
    // A node's ports are its links in id order (`out_links`), so a link's port index is the
    // number of earlier links from the same node (counted, not searched: a leaf with a million
    // uplinks would take minutes to search).
    let mut next_port = vec![0u32; out_links.len()];
    topo.links
        .iter()
        .map(|l| {
            let sw = topo.switch_of(l.src);
            let port_idx = next_port[l.src.idx()];
            next_port[l.src.idx()] += 1;
            // Ports times queues per port is below the queue-length table's size, which the
            // network's memory estimate bounds far below `u32::MAX`.
            let queue_base = u32::try_from(port_idx as usize * spec.switch.queues.len()).unwrap_or(u32::MAX);
            let port = if sw.is_some() { Port::new(sw_conf.clone(), spec.switch.scheduler, quantum) } else { nic_port() };
            let credit = credit_gap(spec, l.rate).map(|(cap, gap)| Box::new(CreditShaper::new(cap, gap)));
            Link {
                dst: l.dst,
                rate: l.rate,
                delay: l.delay,
                switch: sw.map_or(NO_SWITCH, |s| s.0),
                queue_base,
                // An empty port: whether it is an idle FIFO is whether it may ever pass.
                passable: port.is_idle_fifo(),
                port,
                busy_until: Time::ZERO,
                tx_done_pending: false,
                has_credit: credit.is_some(),
                wire: VecDeque::new(),
                credit,
                tx_packets: 0,
                tx_bytes: 0,
            }
        })
        .collect()
}

/// A pFabric port's buffer when `queues[0].cap_bytes` is absent: twice the bandwidth-delay
/// product of the hosts' links over the base RTT (§5.1: 36 KB, about 2 BDP at 10 Gb/s), and at
/// least one full packet of `mtu` bytes, at most `spec::limits::MAX_PFABRIC_BUFFER_BYTES`.
pub(crate) fn pfabric_default_buffer(host_rate: Bps, base_rtt: Dur, mtu: u64) -> u64 {
    let two_bdp = host_rate.bytes_in(base_rtt).get().saturating_mul(2);
    two_bdp.min(crate::spec::limits::MAX_PFABRIC_BUFFER_BYTES).max(mtu)
}

/// pFabric's initial window when `[transport] init_cwnd_pkts` is absent: one bandwidth-delay
/// product of the hosts' links over the base RTT (§4.2), in full packets of `mtu` bytes,
/// rounded up, at least 1 and at most `max`.
pub(crate) fn pfabric_bdp_pkts(host_rate: Bps, base_rtt: Dur, mtu: u64, max: u32) -> u32 {
    let pkts = host_rate.bytes_in(base_rtt).get().div_ceil(mtu.max(1));
    u32::try_from(pkts).unwrap_or(u32::MAX).clamp(1, max.max(1))
}

/// The policy of a FIFO NIC: the switches' (one queue either way) unless that is pFabric, whose
/// order a FIFO NIC does not take.
fn nic_fifo_kind(k: SchedulerKind) -> SchedulerKind {
    match k {
        SchedulerKind::Pfabric => SchedulerKind::StrictPriority,
        k => k,
    }
}

/// The switches, with their shared buffers and admission policies.
pub(crate) fn switches(
    spec: &Spec,
    topo: &Topology,
    out_links: &[Vec<LinkId>],
    base_rtt: Dur,
) -> Result<Vec<Switch>, SimError> {
    let dt_alpha: Vec<f64> = spec.switch.queues.iter().map(|q| q.dt_alpha).collect();
    let qpp = spec.switch.queues.len();
    topo.tiers
        .iter()
        .enumerate()
        .map(|(s, tier)| {
            let node = NodeId(topo.num_hosts + s as u32);
            let ports = out_links[node.idx()].clone();
            let buffer = buffer_of(spec, topo, out_links, node);
            let port_rates: Vec<Bps> = ports.iter().map(|l| topo.links[l.idx()].rate).collect();
            let admission = AnyAdmission::from_spec(
                &spec.switch.admission,
                AdmissionCtx {
                    dt_alpha: &dt_alpha,
                    port_rates: &port_rates,
                    base_rtt: Some(base_rtt),
                    seed: spec.seed,
                    buffer_index: s as u64,
                },
            )
            .map_err(|message| SimError::Setup { key: "switch.admission".into(), message })?;
            Ok(Switch {
                stats: SwitchStats {
                    switch: s as u32,
                    node: node.0,
                    tier: tier.as_str(),
                    buffer_bytes: buffer,
                    ..Default::default()
                },
                buf: SwitchBuf { capacity: buffer, occupancy: 0, qpp, qlen: vec![0; ports.len() * qpp] },
                ports,
                watches: admission.watches_queues(),
                admission,
                selective: spec.switch.selective_drop_bytes.map(|threshold_bytes| SelectiveDrop { threshold_bytes }),
            })
        })
        .collect()
}
