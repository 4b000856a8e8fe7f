//! The event loop: links, switches and hosts as dense arrays, and [`Simulation`], which drives
//! `proto` endpoints with virtual time.
//!
//! Model:
//! - A [`Link`] is an egress port (queues from `queue`) plus the wire behind it. A packet
//!   leaves its queue (and its switch's shared buffer) when its serialization starts, and
//!   arrives at the far end `tx_time + delay` later.
//! - Switches are output-queued with one shared buffer per switch, asked through `admission`.
//!   Forwarding is a direct call inside the arrival handler: arrive -> route -> enqueue.
//! - Hosts have one NIC link. Transports push every segment they may send into the NIC queue
//!   (unbounded unless `host.nic_buffer_bytes` is set); the NIC serializes at line rate.
//!
//! INVARIANT (htsim): at most one `TxDone` and one `Arrive` event are pending per link,
//! however many packets are queued or in flight, so the heap holds O(links + flows) entries.
//! A `TxDone` exists only while packets wait behind the one being serialized.
//! CORRECTNESS: bytes are conserved: sent = delivered + dropped + in flight (tested).

use std::collections::VecDeque;

use proto::{CcKind, Endpoint, Event as EpEvent, IntHop, IntStack, TcpConfig, TransportConfig, UdpConfig};
use units::{Bps, Bytes, Dur, LinkId, NodeId, Time};

use crate::credence::features::{FeatureVector, Features};
use crate::admission::{AdmissionCtx, AnyAdmission, Arrival, BufferAdmission, BufferView, Verdict};
use crate::ideal::{ideal_fct, one_way, Hop, IdealModel};
use crate::metrics::{
    percentile_sorted, FctRecord, LinkStats, OccupancySample, Output, QueueMax, Summary, SwitchStats, Tier,
};
use crate::packet::Packet;
use crate::queue::{Port, QueueConf};
use crate::route::Routes;
use crate::sched::{Event, Sched};
use crate::spec::{FctAt, Spec, TransportKind, TransportSpec, ValidSpec, DEFAULT_BUFFER_PER_PORT_PER_GBPS};
use crate::topo::Topology;
use crate::workload::{self, FlowSpec, NetInfo};
use crate::SimError;

const NO_SWITCH: u32 = u32::MAX;

/// An egress port and the wire behind it.
#[derive(Debug)]
struct Link {
    dst: NodeId,
    rate: Bps,
    delay: Dur,
    /// Owning switch index, or `NO_SWITCH` for a host NIC.
    switch: u32,
    /// Index of this port among its switch's ports.
    port_idx: u32,
    port: Port,
    /// The end of the current (or last) serialization: the link is idle from then on.
    busy_until: Time,
    /// Whether a `TxDone` for this link is pending.
    tx_done_pending: bool,
    /// Packets being serialized or propagating, with their arrival times at the far end.
    /// FIFO: arrival times never decrease.
    wire: VecDeque<(Time, Packet)>,
    wire_bytes: u64,
    tx_packets: u64,
    tx_bytes: u64,
}

/// Per-switch shared buffer and counters.
#[derive(Debug)]
struct Switch {
    stats: SwitchStats,
    buf: SwitchBuf,
    ports: Vec<LinkId>,
    admission: AnyAdmission,
}

/// What an admission policy sees of a switch: its buffer and every queue's length in bytes.
///
/// INVARIANT: `qlen[p * qpp + c]` equals the bytes queued in class `c` of port `p`, and
/// `occupancy` their sum.
#[derive(Debug)]
struct SwitchBuf {
    capacity: u64,
    occupancy: u64,
    qpp: usize,
    qlen: Vec<u64>,
}

impl BufferView for SwitchBuf {
    #[inline]
    fn capacity(&self) -> u64 {
        self.capacity
    }
    #[inline]
    fn occupancy(&self) -> u64 {
        self.occupancy
    }
    #[inline]
    fn num_queues(&self) -> usize {
        self.qlen.len()
    }
    #[inline]
    fn queues_per_port(&self) -> usize {
        self.qpp
    }
    #[inline]
    fn queue_len(&self, q: usize) -> u64 {
        self.qlen[q]
    }
}

/// A lazily re-armed timer slot of one endpoint (generation-counter cancellation).
#[derive(Clone, Copy, Debug, Default)]
struct TimerSlot {
    scheduled: Option<Time>,
    generation: u32,
}

/// Runtime state of one flow.
#[derive(Debug, Default)]
struct FlowRt {
    sender: Option<Endpoint>,
    receiver: Option<Endpoint>,
    timers: [TimerSlot; 2],
    finished_at: Option<Time>,
    /// Whether the endpoints are done and freed (late packets and timers are ignored).
    released: bool,
    /// Counters captured when the endpoints were freed.
    final_rtos: u32,
    final_retx: u32,
    final_delivered: u64,
}

/// One simulation: build with [`Simulation::new`], run with [`Simulation::advance`] or
/// [`Simulation::run_to_end`], read with [`Simulation::output`].
#[derive(Debug)]
pub struct Simulation {
    sched: Sched,
    topo: Topology,
    routes: Routes,
    links: Vec<Link>,
    switches: Vec<Switch>,
    flows: Vec<FlowSpec>,
    rt: Vec<FlowRt>,
    next_flow: usize,
    finished: u64,
    transport: TransportConfig,
    header: u32,
    ideal: IdealModel,
    is_tcp: bool,
    stop: Option<Time>,
    stopped_early: bool,
    sample_every: Option<Dur>,
    samples: Vec<OccupancySample>,
    events: u64,
    hops: u64,
    bytes_sent: u64,
    bytes_delivered: u64,
    bytes_dropped: u64,
    nic_drops: u64,
    nic_marks: u64,
    txbuf: Vec<proto::SegmentRepr>,
    /// Data bytes of a flow's initial window: packets below it are "first RTT" for ABM.
    first_rtt_bytes: u64,
    /// The base RTT of the topology (see [`base_rtt`]).
    base_rtt: Dur,
    /// Per-packet admission records, when enabled (Credence's training data).
    trace: Option<Box<DecisionTrace>>,
    /// Whether the transport asks for in-band telemetry (PowerTCP).
    uses_int: bool,
    /// Telemetry stacks of the packets in flight that carry one, by `Packet::int` slot.
    int_slab: Vec<IntStack>,
    /// Free slots of `int_slab`.
    int_free: Vec<u32>,
    /// Telemetry to attach to the segments of `txbuf`, by position.
    int_txbuf: Vec<Option<IntStack>>,
}

/// One switch arrival of a decision trace: the features Credence's oracle sees (§3.4) and
/// whether the packet was eventually dropped (refused, or pushed out later) or transmitted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceRow {
    /// Switch index.
    pub switch: u32,
    /// Arrival time, picoseconds.
    pub time_ps: u64,
    /// Destination queue (port x queues per port + class).
    pub queue: u32,
    /// `[queue_len, avg_queue_len, occupancy, avg_occupancy]` in bytes, averaged over one base
    /// RTT exactly as the Credence policy computes them.
    pub features: FeatureVector,
    /// Whether the packet was dropped on arrival or pushed out later.
    pub dropped: bool,
}

/// Decision-trace state: a feature tracker per switch and, per queue, the rows of the packets
/// it holds (front = next to leave, back = first to be pushed out).
#[derive(Debug)]
struct DecisionTrace {
    features: Vec<Features>,
    pending: Vec<Vec<VecDeque<u32>>>,
    rows: Vec<TraceRow>,
}

/// The transport configuration a spec asks for (defaults documented in `spec`). PowerTCP
/// takes its base RTT and NIC rate from the network.
pub fn transport_config(t: &TransportSpec, base_rtt: Dur, host_rate: Bps) -> TransportConfig {
    match t.kind {
        TransportKind::Dctcp | TransportKind::Newreno | TransportKind::PowerTcp => TransportConfig::Tcp(TcpConfig {
            cc: match t.kind {
                TransportKind::Dctcp => CcKind::Dctcp { g: t.dctcp_g, init_alpha: t.dctcp_init_alpha },
                TransportKind::PowerTcp => {
                    let mut cc = CcKind::power_tcp_default(base_rtt, host_rate);
                    if let CcKind::PowerTcp { gamma, beta_bytes, .. } = &mut cc {
                        *gamma = t.powertcp_gamma;
                        if let Some(b) = t.powertcp_beta_bytes {
                            *beta_bytes = b;
                        }
                    }
                    cc
                }
                _ => CcKind::NewReno,
            },
            mss: t.mss_bytes,
            init_cwnd_pkts: t.init_cwnd_pkts,
            min_rto: Dur::from_us(t.min_rto_us),
            init_rto: Dur::from_us(t.init_rto_us),
            max_rto: Dur::from_us(t.max_rto_us),
            dupack_threshold: t.dupack_threshold,
            delayed_ack: (t.delayed_ack_segments > 0).then(|| proto::tcp::DelayedAck {
                count: t.delayed_ack_segments,
                timeout: Dur::from_us(t.delayed_ack_timeout_us),
            }),
            handshake: t.handshake,
            prio: 0,
        }),
        TransportKind::Udp => TransportConfig::Udp(UdpConfig {
            mss: t.mss_bytes,
            rate: t.udp_rate_gbps.map(Bps::from_gbps_f64),
            header_bytes: t.header_bytes,
            prio: 0,
        }),
    }
}

/// The unloaded round trip between the two hosts farthest apart in hops (host 0 and the last
/// host in the topologies built here): propagation both ways plus serializing one full packet
/// out and one ACK back at every hop. Credence's and ABM's averaging and refresh period.
fn base_rtt(topo: &Topology, routes: &Routes, full: u64, ack: u64) -> Dur {
    let last = topo.num_hosts - 1;
    if last == 0 {
        return Dur::ZERO;
    }
    one_way(&first_path(topo, routes, 0, last), Bytes(full)) + one_way(&first_path(topo, routes, last, 0), Bytes(ack))
}

/// The path a packet from host `src` to host `dst` takes if every switch picks the first
/// equal-cost next hop (all equal-cost paths have the same rates and delays in the
/// topologies built here).
fn first_path(topo: &Topology, routes: &Routes, src: u32, dst: u32) -> Vec<Hop> {
    let mut hops = Vec::new();
    let mut l = routes.nic(NodeId(src));
    loop {
        let spec = &topo.links[l.idx()];
        hops.push(Hop { rate: spec.rate, delay: spec.delay });
        match topo.switch_of(spec.dst) {
            None => return hops,
            Some(s) => l = routes.group(s.0, NodeId(dst))[0],
        }
    }
}

/// Shared buffer of switch `s` per the spec.
fn buffer_of(spec: &Spec, topo: &Topology, out_links: &[Vec<LinkId>], node: NodeId) -> u64 {
    if let Some(b) = spec.switch.buffer_bytes {
        return b;
    }
    if let (None, crate::spec::AdmissionSpec::Static { port_bytes: Some(p) }) =
        (spec.switch.buffer_per_port_per_gbps, &spec.switch.admission)
    {
        return p * out_links[node.idx()].len() as u64;
    }
    let per = spec.switch.buffer_per_port_per_gbps.unwrap_or(DEFAULT_BUFFER_PER_PORT_PER_GBPS);
    let gbps: f64 = out_links[node.idx()].iter().map(|l| topo.links[l.idx()].rate.as_gbps_f64()).sum();
    (per * gbps).round() as u64
}

impl Simulation {
    /// Build the network, generate the workload and schedule the first events.
    pub fn new(valid: &ValidSpec) -> Result<Simulation, SimError> {
        let spec = valid.spec();
        let topo = Topology::build(&spec.topology);
        let routes = Routes::with_hash_seed(&topo, spec.routing.mode, spec.routing.hash_seed);
        let mut out_links: Vec<Vec<LinkId>> = vec![Vec::new(); topo.num_nodes() as usize];
        for (i, l) in topo.links.iter().enumerate() {
            out_links[l.src.idx()].push(LinkId::from_idx(i));
        }
        let t = &spec.transport;
        let quantum = (t.mss_bytes + t.header_bytes) as u64;
        let sw_conf: Vec<QueueConf> = spec
            .switch
            .queues
            .iter()
            .map(|q| QueueConf { ecn_threshold: q.ecn_threshold_bytes, cap: q.cap_bytes, dt_alpha: q.dt_alpha })
            .collect();
        let nic_k = spec.host.ecn_threshold_bytes.or(spec.switch.queues[0].ecn_threshold_bytes);
        let nic_conf = vec![QueueConf {
            ecn_threshold: nic_k.filter(|_| spec.host.ecn_marking),
            cap: spec.host.nic_buffer_bytes,
            dt_alpha: 1.0,
        }];
        let links: Vec<Link> = topo
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let sw = topo.switch_of(l.src);
                let port_idx = out_links[l.src.idx()].iter().position(|&x| x == LinkId::from_idx(i));
                Link {
                    dst: l.dst,
                    rate: l.rate,
                    delay: l.delay,
                    switch: sw.map_or(NO_SWITCH, |s| s.0),
                    port_idx: port_idx.expect("a link is a port of its source") as u32,
                    port: Port::new(
                        if sw.is_some() { sw_conf.clone() } else { nic_conf.clone() },
                        spec.switch.scheduler,
                        quantum,
                    ),
                    busy_until: Time::ZERO,
                    tx_done_pending: false,
                    wire: VecDeque::new(),
                    wire_bytes: 0,
                    tx_packets: 0,
                    tx_bytes: 0,
                }
            })
            .collect();
        let dt_alpha: Vec<f64> = spec.switch.queues.iter().map(|q| q.dt_alpha).collect();
        let base_rtt = base_rtt(&topo, &routes, t.mss_bytes as u64 + t.header_bytes as u64, t.header_bytes as u64);
        let switches: Vec<Switch> = topo
            .tiers
            .iter()
            .enumerate()
            .map(|(s, tier)| {
                let node = NodeId(topo.num_hosts + s as u32);
                let ports = out_links[node.idx()].clone();
                let buffer = buffer_of(spec, &topo, &out_links, node);
                let qpp = sw_conf.len();
                Switch {
                    stats: SwitchStats {
                        switch: s as u32,
                        node: node.0,
                        tier: tier.as_str(),
                        buffer_bytes: buffer,
                        ..Default::default()
                    },
                    buf: SwitchBuf { capacity: buffer, occupancy: 0, qpp, qlen: vec![0; ports.len() * qpp] },
                    ports,
                    admission: {
                        let port_rates: Vec<Bps> =
                            out_links[node.idx()].iter().map(|l| topo.links[l.idx()].rate).collect();
                        AnyAdmission::from_spec(
                            &spec.switch.admission,
                            AdmissionCtx {
                                dt_alpha: &dt_alpha,
                                port_rates: &port_rates,
                                base_rtt: Some(base_rtt),
                                seed: spec.seed,
                                buffer_index: s as u64,
                            },
                        )
                    },
                }
            })
            .collect();
        let leaf_buffer = switches
            .iter()
            .find(|s| s.stats.tier == Tier::Leaf.as_str())
            .map_or(0, |s| s.stats.buffer_bytes);
        let flows = workload::generate(&spec.workload, spec.seed, NetInfo { topo: &topo, leaf_buffer })?;
        let transport = transport_config(t, base_rtt, topo.host_rate);
        let is_tcp = t.kind != TransportKind::Udp;
        let ideal = IdealModel {
            mss: t.mss_bytes as u64,
            header: t.header_bytes as u64,
            handshake: t.handshake && is_tcp,
            acked: is_tcp && spec.run.fct_at == FctAt::Sender,
        };
        let uses_int = Endpoint::sender(&transport, 0, Bytes(1), Time::ZERO).wants_int();
        let mut sched = Sched::new();
        if let Some(f) = flows.first() {
            sched.at(f.start, Event::FlowStart);
        }
        let sample_every = (spec.run.sample_interval_us > 0.0)
            .then(|| Dur::from_secs_f64(spec.run.sample_interval_us * 1e-6))
            .filter(|d| *d > Dur::ZERO);
        if sample_every.is_some() && !flows.is_empty() {
            sched.at(Time::ZERO, Event::Sample);
        }
        let rt = (0..flows.len()).map(|_| FlowRt::default()).collect();
        Ok(Simulation {
            sched,
            routes,
            links,
            switches,
            rt,
            flows,
            next_flow: 0,
            finished: 0,
            transport,
            header: t.header_bytes,
            ideal,
            is_tcp,
            stop: spec.run.stop_ms.map(|ms| Time::from_secs_f64(ms * 1e-3)),
            stopped_early: false,
            sample_every,
            samples: Vec::new(),
            events: 0,
            hops: 0,
            bytes_sent: 0,
            bytes_delivered: 0,
            bytes_dropped: 0,
            nic_drops: 0,
            nic_marks: 0,
            txbuf: Vec::new(),
            first_rtt_bytes: t.init_cwnd_pkts as u64 * t.mss_bytes as u64,
            base_rtt,
            trace: None,
            uses_int,
            int_slab: Vec::new(),
            int_free: Vec::new(),
            int_txbuf: Vec::new(),
            topo,
        })
    }

    /// Record every switch arrival from now on: its features and whether it is eventually
    /// dropped ([`TraceRow`]). Run a scenario under LQD with this on to collect the training
    /// data of Credence's drop oracle (Credence §3.4: "packet-level traces from each switch ...
    /// when using LQD").
    pub fn enable_decision_trace(&mut self) {
        let features = self
            .switches
            .iter()
            .map(|sw| {
                let mut f = Features::new(self.base_rtt);
                f.init(sw.buf.qlen.len());
                f
            })
            .collect();
        let pending = self.switches.iter().map(|sw| vec![VecDeque::new(); sw.buf.qlen.len()]).collect();
        self.trace = Some(Box::new(DecisionTrace { features, pending, rows: Vec::new() }));
    }

    /// The decision trace so far (empty unless enabled). A packet still queued when the run
    /// stops counts as transmitted.
    pub fn decision_trace(&self) -> &[TraceRow] {
        self.trace.as_ref().map_or(&[], |t| &t.rows)
    }

    /// The topology's base round-trip time (host 0 to the farthest host and back, unloaded).
    pub fn base_rtt(&self) -> Dur {
        self.base_rtt
    }

    /// The flows of this run in start order (the generated or replayed workload).
    pub fn flows(&self) -> &[FlowSpec] {
        &self.flows
    }

    /// The flows as a flow list in the peer-bench format (`id src dst start_s size_bytes
    /// incast`), with start times to the picosecond, so that other simulators (and a
    /// `flow_list` workload) replay exactly this workload.
    pub fn flow_list_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::from("# id src dst start_s size_bytes incast | generated by slacknet\n");
        for f in &self.flows {
            let ps = f.start.ps();
            let _ = writeln!(
                s,
                "{} {} {} {}.{:012} {} {}",
                f.id,
                f.src,
                f.dst,
                ps / units::PS_PER_S,
                ps % units::PS_PER_S,
                f.size,
                u8::from(f.incast)
            );
        }
        s
    }

    /// Current simulated time.
    pub fn now(&self) -> Time {
        self.sched.now()
    }
    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }
    /// Packet transmissions over links so far.
    pub fn packet_hops(&self) -> u64 {
        self.hops
    }
    /// Flows in the run.
    pub fn num_flows(&self) -> u64 {
        self.flows.len() as u64
    }
    /// Flows finished so far.
    pub fn finished_flows(&self) -> u64 {
        self.finished
    }
    /// An estimate of the end time for progress displays: the stop time, or the last flow's
    /// start time (or now, if later).
    pub fn horizon(&self) -> Time {
        match self.stop {
            Some(s) => s,
            None => self.flows.last().map_or(Time::ZERO, |f| f.start).max(self.now()),
        }
    }

    /// Whether the run has ended: every flow finished, nothing left to happen, or the stop
    /// time reached.
    pub fn is_done(&self) -> bool {
        (self.finished == self.flows.len() as u64) || self.sched.is_empty() || self.stopped_early
    }

    /// Process up to `max_events` events. Returns whether work remains.
    pub fn advance(&mut self, max_events: u64) -> bool {
        let until = self.stop.unwrap_or(Time::MAX);
        for _ in 0..max_events {
            if self.is_done() {
                return false;
            }
            let Some((_, ev)) = self.sched.pop_until(until) else {
                // Events remain beyond the stop time.
                self.sched.advance_clock(until);
                self.stopped_early = true;
                return false;
            };
            self.events += 1;
            match ev {
                Event::TxDone { link } => self.on_tx_done(link),
                Event::Arrive { link } => self.on_arrive(link),
                Event::Timer { ep, generation } => self.on_timer(ep, generation),
                Event::FlowStart => self.on_flow_start(),
                Event::Sample => self.on_sample(),
            }
        }
        !self.is_done()
    }

    /// Run until [`Simulation::is_done`].
    pub fn run_to_end(&mut self) {
        while self.advance(1 << 20) {}
    }

    // ---- event handlers -------------------------------------------------------------------

    fn on_flow_start(&mut self) {
        let now = self.sched.now();
        while self.next_flow < self.flows.len() && self.flows[self.next_flow].start <= now {
            let f = self.next_flow;
            self.next_flow += 1;
            let spec = self.flows[f];
            self.rt[f].sender = Some(Endpoint::sender(&self.transport, f as u32, Bytes(spec.size), now));
            self.flush(f, 0);
        }
        if let Some(next) = self.flows.get(self.next_flow) {
            self.sched.at(next.start, Event::FlowStart);
        }
    }

    fn on_tx_done(&mut self, l: LinkId) {
        self.links[l.idx()].tx_done_pending = false;
        self.start_tx(l);
    }

    fn on_arrive(&mut self, l: LinkId) {
        let link = &mut self.links[l.idx()];
        let (_, mut pkt) = link.wire.pop_front().expect("Arrive implies a packet on the wire");
        link.wire_bytes -= pkt.size as u64;
        if let Some(&(next, _)) = link.wire.front() {
            self.sched.at(next, Event::Arrive { link: l });
        }
        let node = link.dst;
        match self.topo.switch_of(node) {
            None => self.deliver(pkt),
            Some(s) => {
                let out = self.routes.next_hop(s.0, pkt.dst, pkt.seg.conn, pkt.seg.seq);
                pkt.hops = pkt.hops.saturating_add(1);
                self.enqueue(out, pkt);
            }
        }
    }

    fn on_timer(&mut self, ep: u32, generation: u32) {
        let (f, side) = ((ep / 2) as usize, (ep % 2) as usize);
        let slot = &mut self.rt[f].timers[side];
        if slot.generation != generation {
            return; // cancelled (re-armed earlier) since
        }
        slot.scheduled = None;
        let now = self.sched.now();
        let rt = &mut self.rt[f];
        let ep = if side == 0 { rt.sender.as_mut() } else { rt.receiver.as_mut() };
        if let Some(ep) = ep {
            ep.handle_timeout(now);
            self.flush(f, side);
        }
    }

    fn on_sample(&mut self) {
        let now = self.sched.now();
        for (s, sw) in self.switches.iter().enumerate() {
            self.samples.push(OccupancySample { time_ps: now.ps(), switch: s as u32, bytes: sw.buf.occupancy });
        }
        // Only keep sampling while something else can still happen.
        if let (Some(d), false) = (self.sample_every, self.sched.is_empty()) {
            self.sched.after(d, Event::Sample);
        }
    }

    // ---- mechanism ------------------------------------------------------------------------

    /// Hand a packet to link `l`'s egress port: static cap, shared-buffer admission, ECN
    /// marking, then start serialization if the link is idle.
    fn enqueue(&mut self, l: LinkId, pkt: Packet) {
        let link = &mut self.links[l.idx()];
        let q = link.port.queue_of(pkt.seg.prio);
        let size = pkt.size as u64;
        if link.switch == NO_SWITCH {
            if link.port.check_cap(q, size).is_err() {
                self.nic_drops += 1;
                self.bytes_dropped += size;
                self.forget(&pkt);
                return;
            }
            if link.port.enqueue(q, pkt) {
                self.nic_marks += 1;
            }
        } else {
            let s = link.switch as usize;
            let sw = &mut self.switches[s];
            sw.stats.arrivals += 1;
            if link.port.check_cap(q, size).is_err() {
                sw.stats.drops_queue_cap += 1;
                sw.stats.dropped_bytes += size;
                self.bytes_dropped += size;
                self.forget(&pkt);
                return;
            }
            let now = self.sched.now();
            let qi = link.port_idx as usize * sw.buf.qpp + q;
            let first_rtt = pkt.to_receiver && pkt.seg.seq < self.first_rtt_bytes;
            let verdict = sw.admission.admit(&sw.buf, &Arrival { queue: qi, size, now, first_rtt });
            if let Some(t) = self.trace.as_deref_mut() {
                let features = t.features[s].sample(qi, sw.buf.qlen[qi], sw.buf.occupancy, now);
                let row = t.rows.len() as u32;
                let dropped = verdict == Verdict::Drop;
                t.rows.push(TraceRow { switch: s as u32, time_ps: now.ps(), queue: qi as u32, features, dropped });
                if !dropped {
                    t.pending[s][qi].push_back(row);
                }
            }
            if verdict == Verdict::Drop {
                sw.stats.drops_admission += 1;
                sw.stats.dropped_bytes += size;
                self.bytes_dropped += size;
                self.forget(&pkt);
                return;
            }
            // INVARIANT: the shared buffer never holds more than its size (after push-out).
            debug_assert!(
                verdict == Verdict::PushOut || sw.buf.occupancy + size <= sw.buf.capacity,
                "admission overfilled the buffer"
            );
            sw.buf.occupancy += size;
            sw.buf.qlen[qi] += size;
            sw.stats.enqueued_bytes += size;
            sw.admission.on_enqueue(qi, size, now);
            if link.port.enqueue(q, pkt) {
                sw.stats.ecn_marks += 1;
            }
            if verdict == Verdict::PushOut {
                self.push_out(s);
            }
            let sw = &mut self.switches[s];
            if sw.buf.occupancy > sw.stats.max_occupancy_bytes {
                sw.stats.max_occupancy_bytes = sw.buf.occupancy;
            }
        }
        let link = &mut self.links[l.idx()];
        // PERF: an idle link starts at once; a busy one gets a TxDone only now that a packet
        // waits, so uncongested links never schedule one (about a third fewer events on the
        // 256-host comparison scenario).
        if !link.tx_done_pending {
            let now = self.sched.now();
            if link.busy_until <= now {
                self.start_tx(l);
            } else {
                link.tx_done_pending = true;
                self.sched.at(link.busy_until, Event::TxDone { link: l });
            }
        }
    }

    /// Drop from the tail of the longest queue of switch `s` until its buffer fits (LQD's
    /// push-out; the arriving packet itself goes if its queue is the longest).
    fn push_out(&mut self, s: usize) {
        let now = self.sched.now();
        let sw = &mut self.switches[s];
        while sw.buf.occupancy > sw.buf.capacity {
            let (victim, _) = sw.buf.longest_queue();
            let (port, class) = (victim / sw.buf.qpp, victim % sw.buf.qpp);
            let link = &mut self.links[sw.ports[port].idx()];
            let pkt = link.port.pop_back(class).expect("the longest queue of a full buffer is not empty");
            let size = pkt.size as u64;
            sw.buf.occupancy -= size;
            sw.buf.qlen[victim] -= size;
            if let Some(t) = self.trace.as_deref_mut() {
                let row = t.pending[s][victim].pop_back().expect("a traced packet per queued packet");
                t.rows[row as usize].dropped = true;
            }
            if pkt.int != Packet::NO_INT {
                self.int_free.push(pkt.int);
            }
            sw.stats.drops_pushout += 1;
            sw.stats.pushed_out_bytes += size;
            sw.stats.dropped_bytes += size;
            self.bytes_dropped += size;
            sw.admission.on_push_out(victim, size, now);
        }
    }

    /// Dequeue the next packet and put it on the wire: it arrives at the far end after its
    /// serialization and the propagation delay. If more packets wait, the link's next start
    /// is scheduled at the end of this serialization.
    fn start_tx(&mut self, l: LinkId) {
        let now = self.sched.now();
        let link = &mut self.links[l.idx()];
        debug_assert!(link.busy_until <= now && !link.tx_done_pending);
        let Some((q, pkt)) = link.port.dequeue() else { return };
        let size = pkt.size as u64;
        if link.switch != NO_SWITCH {
            let sw = &mut self.switches[link.switch as usize];
            let qi = link.port_idx as usize * sw.buf.qpp + q;
            sw.buf.occupancy -= size;
            sw.buf.qlen[qi] -= size;
            sw.stats.dequeued_bytes += size;
            sw.admission.on_dequeue(qi, size, now);
            if let Some(t) = self.trace.as_deref_mut() {
                t.pending[link.switch as usize][qi].pop_front();
            }
        }
        let end = now + link.rate.tx_time(Bytes(size));
        link.busy_until = end;
        self.hops += 1;
        link.tx_packets += 1;
        link.tx_bytes += size;
        if pkt.int != Packet::NO_INT && pkt.to_receiver && link.switch != NO_SWITCH {
            // HPCC/PowerTCP INT: written as the packet leaves the egress port.
            self.int_slab[pkt.int as usize].push(IntHop {
                qlen_bytes: link.port.total_bytes(),
                tx_bytes: link.tx_bytes,
                ts_ps: now.ps(),
                rate_bps: link.rate.get(),
            });
        }
        let at = end + link.delay;
        link.wire.push_back((at, pkt));
        link.wire_bytes += size;
        if link.wire.len() == 1 {
            self.sched.at(at, Event::Arrive { link: l });
        }
        if !link.port.is_empty() {
            link.tx_done_pending = true;
            self.sched.at(end, Event::TxDone { link: l });
        }
    }

    /// A packet reached its destination host: hand it to the flow's endpoint.
    fn deliver(&mut self, pkt: Packet) {
        self.bytes_delivered += pkt.size as u64;
        let f = pkt.seg.conn as usize;
        if self.rt[f].released {
            self.forget(&pkt);
            return; // a late duplicate for a finished flow
        }
        let rt = &mut self.rt[f];
        let now = self.sched.now();
        let side = if pkt.to_receiver { 1 } else { 0 };
        let ep = if side == 1 {
            let t = &self.transport;
            rt.receiver.get_or_insert_with(|| Endpoint::receiver(t, f as u32))
        } else {
            match rt.sender.as_mut() {
                Some(s) => s,
                None => {
                    self.forget(&pkt);
                    return;
                }
            }
        };
        if pkt.int == Packet::NO_INT {
            ep.handle_segment(now, &pkt.seg);
        } else {
            let stack = self.int_slab[pkt.int as usize];
            self.int_free.push(pkt.int);
            ep.handle_segment_int(now, &pkt.seg, Some(&stack));
        }
        self.flush(f, side);
    }

    /// Store a telemetry stack for a packet about to be sent; returns its slot.
    fn int_alloc(&mut self, stack: IntStack) -> u32 {
        match self.int_free.pop() {
            Some(i) => {
                self.int_slab[i as usize] = stack;
                i
            }
            None => {
                self.int_slab.push(stack);
                (self.int_slab.len() - 1) as u32
            }
        }
    }

    /// A packet left the network without being delivered: free its telemetry slot.
    #[inline]
    fn forget(&mut self, pkt: &Packet) {
        if pkt.int != Packet::NO_INT {
            self.int_free.push(pkt.int);
        }
    }

    /// Drain an endpoint after an input: transmit, re-arm its timer, handle its events.
    fn flush(&mut self, f: usize, side: usize) {
        let now = self.sched.now();
        let spec = self.flows[f];
        let mut txbuf = std::mem::take(&mut self.txbuf);
        let rt = &mut self.rt[f];
        let Some(ep) = (if side == 0 { rt.sender.as_mut() } else { rt.receiver.as_mut() }) else {
            self.txbuf = txbuf;
            return;
        };
        let uses_int = self.uses_int;
        let mut int_txbuf = std::mem::take(&mut self.int_txbuf);
        while let Some(seg) = ep.poll_transmit(now) {
            txbuf.push(seg);
            if uses_int {
                // A receiver echoes the stack of the data it acknowledges; a sender's data
                // segments start an empty stack that every switch egress appends to.
                let echo = ep.take_echo_int();
                let fresh = (side == 0 && seg.len > 0).then(IntStack::default);
                int_txbuf.push(echo.or(fresh));
            }
        }
        let deadline = ep.poll_timeout();
        let (mut measure, mut release) = (false, false);
        while let Some(ev) = ep.poll_event() {
            match ev {
                // TCP sender: every byte acknowledged. The FCT ends here with fct_at =
                // "sender"; either way the transfer is over.
                EpEvent::Completed if self.is_tcp => {
                    measure |= self.ideal.acked;
                    release = true;
                }
                // A UDP source handed out its last datagram: the receiver decides.
                EpEvent::Completed => {}
                // Receiver has every byte: the FCT ends here with fct_at = "receiver" (and
                // always for UDP, which then has nothing left to do).
                EpEvent::ReceivedAll => {
                    measure |= !self.ideal.acked;
                    release |= !self.is_tcp;
                }
            }
        }
        // Timer: arm only if earlier than what is already pending (lazy re-arm on fire).
        if let Some(d) = deadline {
            let slot = &mut rt.timers[side];
            if slot.scheduled.is_none_or(|s| d < s) {
                slot.generation = slot.generation.wrapping_add(1);
                slot.scheduled = Some(d);
                let ep_idx = (f * 2 + side) as u32;
                self.sched.at(d.max(now), Event::Timer { ep: ep_idx, generation: slot.generation });
            }
        }
        let (host, dst) = if side == 0 { (spec.src, spec.dst) } else { (spec.dst, spec.src) };
        let nic = self.routes.nic(NodeId(host));
        for (i, mut seg) in txbuf.drain(..).enumerate() {
            seg.prio = spec.prio;
            let int = match int_txbuf.get_mut(i).and_then(Option::take) {
                Some(stack) => self.int_alloc(stack),
                None => Packet::NO_INT,
            };
            let pkt = Packet {
                size: seg.len + self.header,
                seg,
                dst: NodeId(dst),
                to_receiver: side == 0,
                hops: 0,
                int,
            };
            self.bytes_sent += pkt.size as u64;
            self.enqueue(nic, pkt);
        }
        int_txbuf.clear();
        self.int_txbuf = int_txbuf;
        self.txbuf = txbuf;
        if measure {
            let rt = &mut self.rt[f];
            debug_assert!(rt.finished_at.is_none());
            rt.finished_at = Some(now);
            self.finished += 1;
        }
        if release {
            self.release_flow(f);
        }
    }

    /// Free a flow's state machines once its transfer is over, keeping their counters.
    fn release_flow(&mut self, f: usize) {
        let rt = &mut self.rt[f];
        debug_assert!(!rt.released);
        rt.released = true;
        let (rtos, retx) = rt.sender.as_ref().map_or((0, 0), |s| {
            let st = s.stats();
            (st.num_rtos as u32, st.segments_retx as u32)
        });
        rt.final_rtos = rtos;
        rt.final_retx = retx;
        rt.final_delivered = rt.receiver.as_ref().map_or(0, |r| r.stats().bytes_received);
        rt.sender = None;
        rt.receiver = None;
    }

    // ---- output ---------------------------------------------------------------------------

    /// Everything the run produced so far.
    pub fn output(&self) -> Output {
        let mut records = Vec::with_capacity(self.flows.len());
        let mut num_rtos = 0u64;
        for (f, spec) in self.flows.iter().enumerate() {
            let rt = &self.rt[f];
            let fwd = first_path(&self.topo, &self.routes, spec.src, spec.dst);
            let rev = first_path(&self.topo, &self.routes, spec.dst, spec.src);
            let ideal = ideal_fct(&fwd, &rev, spec.size, &self.ideal).ps();
            let (rtos, retx, delivered) = match rt.released {
                true => (rt.final_rtos, rt.final_retx, rt.final_delivered),
                false => {
                    let (a, b) = rt.sender.as_ref().map_or((0, 0), |s| {
                        let st = s.stats();
                        (st.num_rtos as u32, st.segments_retx as u32)
                    });
                    (a, b, rt.receiver.as_ref().map_or(0, |r| r.stats().bytes_received))
                }
            };
            num_rtos += rtos as u64;
            let fct = rt.finished_at.map(|t| t.since(spec.start).ps());
            records.push(FctRecord {
                id: spec.id,
                src: spec.src,
                dst: spec.dst,
                size_bytes: spec.size,
                start_ps: spec.start.ps(),
                fct_ps: fct.map_or(-1, |x| x as i64),
                ideal_fct_ps: ideal,
                slowdown: fct.map_or(f64::NAN, |x| x as f64 / ideal as f64),
                finished: fct.is_some(),
                incast: spec.incast,
                prio: spec.prio,
                workload: spec.workload,
                num_rtos: rtos,
                retx_segments: retx,
                bytes_delivered: delivered,
            });
        }
        let mut per_switch: Vec<Vec<u64>> = vec![Vec::new(); self.switches.len()];
        for s in &self.samples {
            per_switch[s.switch as usize].push(s.bytes);
        }
        let mut switches = Vec::with_capacity(self.switches.len());
        let mut queues = Vec::new();
        let mut switch_drops = 0;
        let mut ecn_marks = self.nic_marks;
        for (s, sw) in self.switches.iter().enumerate() {
            let mut st = sw.stats.clone();
            let v = &mut per_switch[s];
            v.sort_unstable();
            st.occ_p50_bytes = percentile_sorted(v, 0.5);
            st.occ_p90_bytes = percentile_sorted(v, 0.9);
            st.occ_p99_bytes = percentile_sorted(v, 0.99);
            st.occ_p9999_bytes = percentile_sorted(v, 0.9999);
            st.final_occupancy_bytes = sw.buf.occupancy;
            if let Some(c) = sw.admission.credence_stats() {
                st.credence_safeguard_accepts = c.safeguard_accepts;
                st.credence_oracle_drops = c.oracle_drops;
                st.credence_oracle_accepts = c.oracle_accepts;
                st.credence_threshold_drops = c.threshold_drops;
            }
            switch_drops += st.drops_admission + st.drops_queue_cap + st.drops_pushout;
            ecn_marks += st.ecn_marks;
            switches.push(st);
            for &l in &sw.ports {
                for (q, &m) in self.links[l.idx()].port.max_bytes().iter().enumerate() {
                    if m > 0 {
                        queues.push(QueueMax { switch: s as u32, link: l.0, queue: q as u8, max_bytes: m });
                    }
                }
            }
        }
        let in_flight: u64 = self
            .links
            .iter()
            .map(|l| l.port.total_bytes() + l.wire_bytes)
            .sum();
        let summary = Summary {
            num_flows: self.flows.len() as u64,
            finished_flows: self.finished,
            events: self.events,
            packet_hops: self.hops,
            sim_end_ps: self.sched.now().ps(),
            bytes_sent: self.bytes_sent,
            bytes_delivered: self.bytes_delivered,
            bytes_dropped: self.bytes_dropped,
            bytes_in_flight: in_flight,
            switch_drops,
            nic_drops: self.nic_drops,
            ecn_marks,
            num_rtos,
            stopped_early: self.stopped_early,
        };
        let links = self
            .links
            .iter()
            .zip(&self.topo.links)
            .enumerate()
            .map(|(i, (l, spec))| LinkStats {
                link: i as u32,
                src: spec.src.0,
                dst: spec.dst.0,
                rate_bps: l.rate.get(),
                tx_packets: l.tx_packets,
                tx_bytes: l.tx_bytes,
            })
            .collect();
        Output { records, switches, queues, occupancy: self.samples.clone(), links, summary }
    }
}
