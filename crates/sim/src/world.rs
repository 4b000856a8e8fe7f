//! The simulation: [`Simulation`] owns the network (links, switches, routes), the transfers
//! with their `proto` endpoints, and the applications that start them, and runs the event loop
//! in virtual time.
//!
//! The rooms (one job each):
//! - `build`: the network from a validated scenario (ports, buffers, admission, base RTT, the
//!   unloaded paths of the ideal FCT). No I/O.
//! - `switch`: links and switches, and the handlers that move packets (arrive, route,
//!   admit, enqueue and mark, push out, serialize).
//! - `host`: the host driver: transfers and their endpoints, drained in `proto`'s call order.
//! - `transfers`: every transfer by index, in pages freed once their records were taken, so
//!   that memory follows the transfers in flight.
//! - `apps`: the application layer's alarms, notifications and commands.
//! - `output`: records and counters, assembled on demand.
//! - `trace` and `telemetry`: optional, policy-specific observers kept out of the hot-path
//!   files (Credence's decision trace; PowerTCP's in-band telemetry slab).
//! - `observe`: the opt-in time series of queues and transfers (`[run.timeseries]`).
//!
//! Hosts have one NIC link. Transports push every segment they may send into the NIC queue
//! (unbounded unless `host.nic_buffer_bytes` is set), unless TSQ (`host.tsq_pkts`, see `host`)
//! holds a sender back; the NIC serializes at line rate, in FIFO or per-flow round-robin order.
//!
//! On a network whose links exceed `PREFETCH_ABOVE_BYTES` the event loop prefetches what
//! the next four events will read first (`Simulation::prefetch_next`); a hint that changes no
//! result (tested).
//!
//! CORRECTNESS: bytes are conserved: sent = delivered + dropped + in flight (tested).
//! Determinism: events at equal times run in scheduling order; applications' alarms at equal
//! times run in application order.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use proto::{Endpoint, TransportConfig};
use units::{AppId, Bytes, Dur, LinkId, Time};

use crate::app::{AnyApp, TransferDone, UnitRecord};
use crate::ideal::IdealModel;
use crate::metrics::{OccupancySample, Tier};
use crate::packet::HeaderSlab;
use crate::route::Routes;
use crate::sched::{Event, Sched};
use crate::spec::limits::MAX_OCCUPANCY_ROWS;
use crate::spec::{FctAt, ValidSpec};
use crate::topo::Topology;
use crate::workload::{self, FlowSpec, NetInfo};
use crate::SimError;

mod apps;
mod build;
mod flowtrace;
mod host;
mod observe;
mod output;
mod switch;
mod telemetry;
mod trace;
mod transfers;

pub use build::transport_config;
pub(crate) use build::{network_bytes, switch_buffers};
pub use output::TakenRecords;
pub use trace::{TraceRow, TraceTooLate, MAX_TRACE_ROWS};
pub use flowtrace::{DropCause, FlowEvent, FlowTraceRow, MAX_FLOW_TRACE_ROWS};

use host::{TimerSlot, Transfer, TransferRt, Tsq};
use transfers::Transfers;
use observe::Observer;
use switch::{Link, Switch};
use telemetry::{IntSlab, SackSlab};
use trace::DecisionTrace;
use flowtrace::FlowTrace;

/// The last instant a run can reach: one picosecond before [`Time::MAX`], the saturated
/// "never". Validation bounds every scenario far below it (`spec::limits::MAX_TIME_PS`); a run
/// that still gets here (applications given in code that never stop) stops at it, as at a stop time, instead of wrapping the clock.
pub const CLOCK_END: Time = Time::from_ps(u64::MAX - 1);

/// The memory one transfer costs a run that keeps every record to the end (`run`): its
/// request, its runtime state (the boxed endpoints are freed when it ends) and its record. A
/// caller that takes the records as the run goes pays it only for the transfers held.
/// Validation estimates a scenario's transfers with it (`spec::limits::MAX_FLOWS`).
pub(crate) const BYTES_PER_TRANSFER: usize =
    std::mem::size_of::<Transfer>() + std::mem::size_of::<TransferRt>() + std::mem::size_of::<crate::metrics::FctRecord>();

/// The bytes at the start of a flow whose packets ABM treats as its first round trip's: the
/// spec's `first_rtt_bytes`, else one propagation round trip at the host link rate (the
/// Credence artifact's `RTTBytes`, Credence §4.1; [`crate::spec::AdmissionSpec::Abm`]). Only
/// ABM reads it ([`crate::admission::Arrival::first_rtt`]); other policies get 0 without the
/// search over host pairs.
fn abm_first_rtt_bytes(admission: &crate::spec::AdmissionSpec, topo: &Topology, routes: &Routes) -> u64 {
    match admission {
        crate::spec::AdmissionSpec::Abm { first_rtt_bytes: Some(b), .. } => *b,
        // Zero-byte packets: the longest round trip of propagation alone.
        crate::spec::AdmissionSpec::Abm { first_rtt_bytes: None, .. } => {
            topo.host_rate.bytes_in(build::base_rtt(topo, routes, 0, 0)).0
        }
        _ => 0,
    }
}

/// Copies of `apps` before they start, if every one is an open-loop generator (whose flows can
/// then be listed without a network).
fn unstarted_generators(apps: &[AnyApp]) -> Option<Vec<AnyApp>> {
    apps.iter().map(AnyApp::clone_generator).collect()
}

/// The size of the links above which the event loop prefetches (`Simulation::prefetch_next`).
// PERF: user + sys CPU seconds, 1 ms of the k = 16 fat-tree (experiments/scale/fat_tree_k16.toml
// with `stop_ms = 1`, 1.2 MB of links), runs alternated on the loaded 2-core machine: 11.9-19.2
// before, 7.4-10.0 with it; k = 12 (498 kB) 2.3-3.3 -> 2.0-2.5; k = 10 (288 kB) no change. Below
// this size the links stay in cache and the hint costs more than it saves (about 80
// instructions per event; S2: +9.7% instructions).
const PREFETCH_ABOVE_BYTES: usize = 256 << 10;

/// Ask the CPU to start loading every cache line of `*value`, so that a later read finds it
/// in cache.
#[inline(always)]
fn prefetch<T>(value: &T) {
    prefetch_prefix(value, usize::MAX);
}

/// Ask the CPU to start loading the cache lines of the first `bytes` of `*value` (all of it if
/// it is smaller): for a large value of which a handler reads the start.
#[inline(always)]
fn prefetch_prefix<T>(value: &T, bytes: usize) {
    let (p, size) = ((value as *const T).cast::<u8>(), std::mem::size_of::<T>().min(bytes));
    // PERF: a `while` on a constant size unrolls; a `step_by` loop cost 45 instructions
    // per event. The last byte's line is the one more that an unaligned value can reach.
    let mut offset = 0;
    while offset < size {
        prefetch_line(p.wrapping_add(offset));
        offset += 64;
    }
    if size > 0 {
        prefetch_line(p.wrapping_add(size - 1));
    }
}

/// Ask the CPU to start loading the cache line at `p` (any address: a prefetch never faults
/// and changes no memory).
#[inline(always)]
fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and changes no memory.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// How much of a transport endpoint (`proto::Endpoint`, about 470 bytes) the event loop
/// prefetches before a delivery: the lines its packet handling reads first.
const ENDPOINT_PREFETCH_BYTES: usize = 128;

/// One transport of a run, with what the host driver and the ideal model need of it.
#[derive(Debug)]
pub(crate) struct RunTransport {
    cfg: TransportConfig,
    /// Header bytes on the wire per packet.
    header: u32,
    /// Whether its endpoints use in-band telemetry (PowerTCP).
    uses_int: bool,
    /// Whether its ACKs carry SACK blocks (TCP with `sack`).
    uses_sack: bool,
    /// Priority class of its segments without payload (`ack_prio`); `None`: the flow's.
    ack_prio: Option<u8>,
    /// Whether the transport sets each packet's class itself (ATP): the driver leaves it.
    stamps_prio: bool,
    /// The closed form of its transfers' ideal FCT.
    ideal: IdealModel,
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
    // ---- transfers (host driver) ----
    /// Every transfer started, by index (pages freed as their records are taken).
    transfers: Transfers,
    /// Retransmission timeouts of the transfers whose records were taken.
    taken_rtos: u64,
    finished: u64,
    /// Transfers whose sender gave up (never finished).
    given_up: u64,
    /// Transfers their application cancelled.
    cancelled: u64,
    /// `finished + given_up + cancelled`, kept with them.
    // PERF: `is_done` runs once per event; one counter instead of a sum of three saved 0.5%
    // of the 256-host run's instructions.
    ended: u64,
    /// The run's transports: the scenario's `[transport]` first, then each workload entry's
    /// own, in order. A transfer names one by index.
    transports: Vec<RunTransport>,
    /// Each application's transport (its workload entry's, else the scenario's).
    app_transport: Vec<u16>,
    /// Per transport: whether it is ATP (carries jobs of messages).
    is_atp: Vec<bool>,
    /// The packets of the endpoint being drained, made as it polled (`host`).
    txpkts: Vec<crate::packet::Packet>,
    // ---- applications ----
    apps: Vec<AnyApp>,
    app_slots: Vec<TimerSlot>,
    app_heap: BinaryHeap<Reverse<(Time, u32, u32)>>,
    app_wake_at: Option<Time>,
    notes: VecDeque<(AppId, TransferDone)>,
    cmds: apps::Commands,
    units: Vec<UnitRecord>,
    /// Open-loop applications as built, for flow-list export (`None` if any reacts).
    open_loop: Option<Vec<AnyApp>>,
    // ---- run control and counters ----
    stop: Option<Time>,
    stopped_early: bool,
    sample_every: Option<Dur>,
    /// Whether a `Sample` event is pending.
    sample_armed: bool,
    samples: Vec<OccupancySample>,
    /// The most occupancy samples kept ([`MAX_OCCUPANCY_ROWS`]; lowered in tests).
    occupancy_limit: u64,
    /// Occupancy sampling stopped at `occupancy_limit`.
    occupancy_truncated: bool,
    events: u64,
    hops: u64,
    bytes_sent: u64,
    bytes_delivered: u64,
    /// ExpressPass/Aeolus credits that reached their sender's host, and data packets senders
    /// sent for a credit: the difference is credits wasted (Summary).
    credits_delivered: u64,
    credits_answered: u64,
    bytes_dropped: u64,
    nic_drops: u64,
    nic_marks: u64,
    /// A flow's first bytes whose packets are "first RTT" for ABM (`abm_first_rtt_bytes`).
    first_rtt_bytes: u64,
    /// The base RTT of the network (see `build::base_rtt`).
    base_rtt: Dur,
    // ---- optional observers ----
    /// Per-packet admission records, when enabled (Credence's training data).
    trace: Option<Box<DecisionTrace>>,
    /// One transfer's packet-level history, when enabled (`flowtrace`).
    flow_trace: Option<Box<FlowTrace>>,
    /// The traced transfer's index once it started, else `u32::MAX` (`flowtrace`): compared
    /// with the transfer of each drain, whose packets it marks traced.
    pub(crate) trace_conn: u32,

    /// The full headers of the packets in the network (`packet`).
    hdrs: HeaderSlab,
    /// Telemetry stacks of the packets in flight that carry one, by header slot.
    int: IntSlab,
    /// SACK blocks of the ACKs in flight that carry some, by header slot.
    sack: SackSlab,
    /// The time-series sampler (`[run.timeseries]`), `None` when off.
    observe: Option<Box<Observer>>,
    /// NIC backpressure (TSQ, `host.tsq_pkts`).
    tsq: Tsq,
    /// Whether the event loop prefetches (the links exceed [`PREFETCH_ABOVE_BYTES`]).
    prefetches: bool,
    /// The outgoing link `prefetch_next` routed the next event's packet to (`RouteHint`),
    /// and the one it routed the event being handled to (`on_arrive` uses it).
    route_next: RouteHint,
    pub(crate) route_cur: RouteHint,
    /// Switch hops forwarded by the prefetch's routing (`RouteHint`; tests look).
    #[cfg(debug_assertions)]
    pub(crate) route_hint_hops: u64,
}

/// An arrival at a switch already routed: the packet at the head of `link`'s wire, in header
/// slot `hdr`, leaves by `out`. Routing is a pure function of the packet and the switch, so
/// the prefetch's answer is the hop's, if it is still for the same packet (`RouteHint::out`).
// PERF: on large networks every switch hop was routed twice, once to prefetch its outgoing
// link and once to forward the packet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RouteHint {
    link: LinkId,
    hdr: u32,
    out: LinkId,
}

impl RouteHint {
    const NONE: RouteHint = RouteHint { link: LinkId(u32::MAX), hdr: u32::MAX, out: LinkId(u32::MAX) };

    /// The outgoing link, if this hint is for the packet in slot `hdr` arriving over `link`.
    // CORRECTNESS: a wire's head changes only when its own arrival is handled, and the hint
    // handed to a handler was made just before the handler before it ran, so a hint that
    // names this link and this header slot was made for this packet.
    #[inline(always)]
    pub(crate) fn out(self, link: LinkId, hdr: u32) -> Option<LinkId> {
        (self.link == link && self.hdr == hdr).then_some(self.out)
    }
}

impl Simulation {
    /// Build the network and the applications, and schedule the first events. Does no I/O.
    pub fn new(valid: &ValidSpec) -> Result<Simulation, SimError> {
        Self::build(valid, None)
    }

    /// As [`Simulation::new`], tracing the transfer whose id is `id` (the first one, if several
    /// share it) from its start: its rows are [`Simulation::flow_trace`]'s ([`FlowTraceRow`]).
    /// The trace starts before the applications do, so transfers that start at time 0 are
    /// traced from their first segment.
    pub fn with_flow_trace(valid: &ValidSpec, id: u64) -> Result<Simulation, SimError> {
        Self::build(valid, Some(id))
    }

    fn build(valid: &ValidSpec, trace_id: Option<u64>) -> Result<Simulation, SimError> {
        let spec = valid.spec();
        let topo = Topology::build(&spec.topology);
        let routes = Routes::with_hash_seed(&topo, spec.routing.mode, spec.routing.hash_seed);
        let mut out_links: Vec<Vec<LinkId>> = vec![Vec::new(); topo.num_nodes() as usize];
        for (i, l) in topo.links.iter().enumerate() {
            out_links[l.src.idx()].push(LinkId::from_idx(i));
        }
        let t = &spec.transport;
        let (mss, header) = (t.mss_bytes() as u64, t.header_bytes() as u64);
        // CORRECTNESS: at most 1 + 2^16 - 1 transports (one per workload entry; validation
        // bounds the entries far below that), so a transport index fits in u16.
        let base_rtt = build::base_rtt(&topo, &routes, mss + header, header);
        let links = build::links(spec, &topo, &out_links, base_rtt);
        let switches = build::switches(spec, &topo, &out_links, base_rtt)?;
        let leaf_buffer = switches
            .iter()
            .find(|s| s.stats.tier == Tier::Leaf.as_str())
            .map_or(0, |s| s.stats.buffer_bytes);
        let apps = workload::build_apps(&spec.workload, spec.seed, NetInfo { topo: &topo, leaf_buffer })?;
        let open_loop = unstarted_generators(&apps);
        let run_transport = |t: &crate::spec::TransportSpec| {
            let cfg = transport_config(t, base_rtt, topo.host_rate);
            RunTransport {
                ideal: IdealModel {
                    mss: t.mss_bytes() as u64,
                    header: t.header_bytes() as u64,
                    handshake: cfg.has_handshake(),
                    // A transport whose receiver cannot tell completion (ATP) is measured at the
                    // sender whatever `fct_at` says.
                    acked: cfg.confirms_delivery()
                        && (spec.run.fct_at == FctAt::Sender || !cfg.receiver_knows_completion()),
                },
                header: t.header_bytes(),
                ack_prio: t.tcp().and_then(|k| k.ack_prio),
                stamps_prio: cfg.stamps_prio(),
                uses_int: Endpoint::sender(&cfg, 0, Bytes(1), Time::ZERO).wants_int(),
                uses_sack: matches!(&cfg, TransportConfig::Tcp(c) if c.sack),
                cfg,
            }
        };
        let mut transports = vec![run_transport(t)];
        let mut app_transport = Vec::with_capacity(spec.workload.len());
        for w in &spec.workload {
            match w.run_transport(&spec.transport) {
                Some(own) => {
                    transports.push(run_transport(&own));
                    app_transport.push((transports.len() - 1) as u16);
                }
                None => app_transport.push(0),
            }
        }
        let sample_every = (spec.run.sample_interval_us > 0.0)
            .then(|| Dur::from_secs_f64(spec.run.sample_interval_us * 1e-6))
            .filter(|d| *d > Dur::ZERO);
        let num_apps = apps.len();
        let observe = Observer::new(spec.run.timeseries.as_ref(), &links);
        let packet_bytes = || transports.iter().map(|t| u64::from(t.cfg.mss()) + u64::from(t.header));
        let tsq = Tsq::new(spec.host.tsq_pkts, packet_bytes());
        // The event queue's ring reaches two of the longest hops (see `Sched::with_reach`).
        let mtu = packet_bytes().max().unwrap_or(1500);
        let hop = links.iter().map(|l| l.delay + l.rate.tx_time(Bytes(mtu))).max().unwrap_or(Dur::ZERO);
        let first_rtt_bytes = abm_first_rtt_bytes(&spec.switch.admission, &topo, &routes);
        let mut sim = Simulation {
            sched: Sched::with_reach(hop),
            routes,
            links,
            switches,
            transfers: Transfers::default(),
            taken_rtos: 0,
            finished: 0,
            given_up: 0,
            cancelled: 0,
            ended: 0,
            is_atp: transports.iter().map(|t| matches!(t.cfg, TransportConfig::Atp(_))).collect(),
            transports,
            app_transport,
            txpkts: Vec::new(),
            apps,
            app_slots: vec![TimerSlot::default(); num_apps],
            app_heap: BinaryHeap::new(),
            app_wake_at: None,
            notes: VecDeque::new(),
            cmds: apps::Commands::default(),
            units: Vec::new(),
            open_loop,
            stop: spec.run.stop_ms.map(|ms| Time::from_secs_f64(ms * 1e-3)),
            stopped_early: false,
            sample_every,
            sample_armed: false,
            samples: Vec::new(),
            occupancy_limit: MAX_OCCUPANCY_ROWS,
            occupancy_truncated: false,
            events: 0,
            hops: 0,
            bytes_sent: 0,
            bytes_delivered: 0,
            credits_delivered: 0,
            credits_answered: 0,
            bytes_dropped: 0,
            nic_drops: 0,
            nic_marks: 0,
            first_rtt_bytes,
            base_rtt,
            trace: None,
            flow_trace: None,
            trace_conn: u32::MAX,
            hdrs: HeaderSlab::default(),
            int: IntSlab::default(),
            sack: SackSlab::default(),
            observe,
            tsq,
            topo,
            prefetches: false,
            route_next: RouteHint::NONE,
            route_cur: RouteHint::NONE,
            #[cfg(debug_assertions)]
            route_hint_hops: 0,
        };
        sim.prefetches = std::mem::size_of_val(&sim.links[..]) > PREFETCH_ABOVE_BYTES;
        sim.flow_trace = trace_id.map(|id| Box::new(FlowTrace::new(id)));
        sim.start_apps();
        sim.start_sampling();
        Ok(sim)
    }

    /// Run the applications of a user's own choosing instead of the scenario's workload
    /// (which is dropped, with its entries' own transports); they use the scenario's
    /// `[transport]`.
    pub fn with_apps(valid: &ValidSpec, apps: Vec<AnyApp>) -> Result<Simulation, SimError> {
        let mut spec = valid.spec().clone();
        spec.workload.clear();
        let mut sim = Simulation::new(&ValidSpec::from_validated(spec))?;
        sim.open_loop = unstarted_generators(&apps);
        sim.app_slots = vec![TimerSlot::default(); apps.len()];
        sim.app_transport = vec![0; apps.len()];
        sim.apps = apps;
        sim.start_apps();
        sim.start_sampling();
        Ok(sim)
    }

    /// The topology's base round-trip time (the largest unloaded RTT between two hosts).
    pub fn base_rtt(&self) -> Dur {
        self.base_rtt
    }

    /// Every flow of this run's open-loop applications in start order, found without a
    /// network; `None` if an application reacts to the network (its flows depend on the run).
    pub fn open_loop_flows(&self) -> Option<Vec<FlowSpec>> {
        workload::dry_run(unstarted_generators(self.open_loop.as_ref()?)?)
    }

    /// The flows as a flow list in the peer-bench format (`id src dst start_s size_bytes
    /// incast`), with start times to the picosecond, so that other simulators (and a
    /// `flow_list` workload) replay exactly this workload. `None` if an application reacts to
    /// the network.
    pub fn flow_list_text(&self) -> Option<String> {
        use std::fmt::Write;
        let flows = self.open_loop_flows()?;
        let mut s = String::from("# id src dst start_s size_bytes incast | generated by slacknet\n");
        for f in &flows {
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
        Some(s)
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
    /// Flows (transfers) started so far.
    pub fn num_flows(&self) -> u64 {
        self.total_transfers() as u64
    }
    /// Transfers whose state (and record) the run holds now: those on the pages of 1,024
    /// transfers not all taken yet ([`Simulation::take_records`]). What a run's memory
    /// grows with.
    pub fn held_transfers(&self) -> usize {
        self.transfers.held()
    }
    /// Flows finished so far.
    pub fn finished_flows(&self) -> u64 {
        self.finished
    }
    /// An estimate of the end time for progress displays: the stop time, or the latest time
    /// at which an application says it will start something (or now, if later).
    pub fn horizon(&self) -> Time {
        match self.stop {
            Some(s) => s,
            None => self.apps.iter().filter_map(AnyApp::horizon).max().unwrap_or(Time::ZERO).max(self.now()),
        }
    }

    /// Whether the run has ended: every transfer finished and no application will start
    /// another, nothing left to happen, or the stop time reached.
    pub fn is_done(&self) -> bool {
        debug_assert_eq!(self.ended, self.finished + self.given_up + self.cancelled);
        (self.ended == self.total_transfers() as u64 && self.apps_idle())
            || self.sched.is_empty()
            || self.stopped_early
    }

    /// Process up to `max_events` events. Returns whether work remains.
    ///
    /// A run without `run.stop_ms` ends at [`CLOCK_END`] at the latest: an event that
    /// saturated to [`Time::MAX`] ("never", see `units`) does not happen, and the run counts
    /// as stopped early.
    pub fn advance(&mut self, max_events: u64) -> bool {
        let until = self.stop.unwrap_or(CLOCK_END);
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
            if self.prefetches {
                self.route_cur = self.route_next;
                self.prefetch_next();
            }
            match ev {
                Event::TxDone { link } => self.on_tx_done(link),
                Event::Arrive { link } => self.on_arrive(link),
                Event::Timer { ep, generation } => self.on_timer(ep, generation),
                Event::AppWake => self.on_app_wake(),
                Event::Sample => self.on_sample(),
                Event::Observe => self.on_observe(),
            }
            if !self.notes.is_empty() {
                self.drain_app_notes();
            }
        }
        !self.is_done()
    }

    /// Start loading what the next four events will read first, one step of the way per
    /// event, each step's address read from what the step before loaded: the link of the
    /// fourth event; the packet at the head of the third's wire (an arrival) or its port's
    /// FIFO bookkeeping (a serialization end); if the second delivers a packet to its host,
    /// the packet's full header and its transfer's request and state, if it brings a packet
    /// to a switch, the routing table's entry for it, and if it ends a serialization, the
    /// packet at the head of the FIFO; if the next one delivers, the start of the endpoint
    /// that will handle the packet, if it brings a packet to a switch, the outgoing link
    /// (routed here already: routing is a pure function of the packet and the switch), and if
    /// it ends a serialization, the wire's slot that the next packet goes into.
    // PERF: on the k = 16 fat-tree most events wait on memory: a link's wire was last touched
    // about a microsecond of simulated time and 70,000 events before. The deliveries' stages
    // (header, transfer, endpoint) took 3 ms of it from 13.39 to 11.91 CPU s (medians of 3
    // alternated runs; -11%); of that, the endpoint's stage about 2%. The serialization ends'
    // stages: faster in 7 of 8 alternated pairs on one pinned core, median pair ratio 0.975
    // (the machine's speed drifted by a fifth over the pairs). The switch arrivals' stages
    // (table entry, outgoing link), 1 ms of k = 16, 7 alternated pairs on one pinned core:
    // PGO 2.18 -> 2.05 CPU s (faster in 7 of 7), plain 2.31 -> 2.17 (5 of 5); routing and
    // prefetching the link in one stage, without the table's: plain -2%, PGO -1%. The third
    // stage selects its address without a branch: 10% fewer mispredicted branches on 0.3 ms of
    // k = 16 (cachegrind), 1 ms plain 2.30 -> 2.27 s (seven pairs, within the noise). The
    // serialization end's wire slot (the line after the wire's last packet): 1 ms plain 2.34 ->
    // 2.29 s (5 of 7 pairs), 3 ms plain 14.31 -> 13.88 (3 of 4), 1 ms PGO 2.22 -> 2.20 (11
    // pairs; small, in the noise's direction everywhere).
    #[inline(always)]
    fn prefetch_next(&mut self) {
        let [first, second, third, fourth] = self.sched.peek_links();
        let mut hint = RouteHint::NONE;
        match first.and_then(|l| Some((l.0, self.arriving_head(l)?))) {
            // The delivered packet's endpoint.
            Some((_, (None, pkt))) => {
                if let Some((_, rt)) = self.transfers.get(pkt.conn as usize) {
                    let ep = if pkt.to_receiver() { rt.receiver.as_deref() } else { rt.sender.as_deref() };
                    if let Some(ep) = ep {
                        prefetch_prefix(ep, ENDPOINT_PREFETCH_BYTES);
                    }
                }
            }
            // The lines of the outgoing link that a hop reads (`Link`).
            Some((link, (Some(s), pkt))) => {
                let out = self.routes.next_hop(s, pkt.dst, pkt.conn, pkt.seq);
                prefetch_prefix(&self.links[out.idx()], 128);
                hint = RouteHint { link, hdr: pkt.hdr, out };
            }
            None => {}
        }
        self.route_next = hint;
        // A serialization end: the wire's slot its packet goes into.
        if let Some((l, false)) = first {
            if let Some(last) = self.links[l.idx()].wire.back() {
                prefetch_line((last as *const (Time, crate::packet::Packet)).wrapping_add(1).cast());
            }
        }
        match second {
            Some(l @ (_, true)) => match self.arriving_head(l) {
                // A delivery: the packet's full header and its transfer.
                Some((None, pkt)) => {
                    if let Some(h) = self.hdrs.get(pkt.hdr) {
                        prefetch(h);
                    }
                    if let Some((spec, rt)) = self.transfers.get(pkt.conn as usize) {
                        prefetch(spec);
                        prefetch(rt);
                    }
                }
                Some((Some(s), pkt)) => {
                    if let Some(e) = self.routes.table_entry(s, pkt.dst) {
                        prefetch(e);
                    }
                }
                None => {}
            },
            // A serialization end: the packet at the head of the port's first FIFO (whose
            // bookkeeping the step before loaded).
            Some((l, false)) => {
                if let Some(head) = self.links[l.idx()].port.head_hint() {
                    prefetch(head);
                }
            }
            None => {}
        }
        if let Some((l, arrives)) = third {
            // Both addresses, then a select: which one is a coin toss for a branch.
            let link = &self.links[l.idx()];
            let here = (link as *const Link).cast::<u8>();
            let head = link.wire.front().map_or(here, |h| (h as *const (Time, crate::packet::Packet)).cast());
            let fifo = link.port.fifo_hint().map_or(here, |f| (f as *const VecDeque<crate::packet::Packet>).cast());
            prefetch_line(if arrives { head } else { fifo });
        }
        if let Some((l, _)) = fourth {
            prefetch(&self.links[l.idx()]);
        }
    }

    /// For an event of `peek_links` (`(link, is an arrival)`) that is an arrival: the switch
    /// the packet at the head of the wire arrives at (`None`: its host), and the packet.
    #[inline(always)]
    fn arriving_head(&self, (l, arrives): (LinkId, bool)) -> Option<(Option<u32>, &crate::packet::Packet)> {
        if !arrives {
            return None;
        }
        let link = &self.links[l.idx()];
        let (_, pkt) = link.wire.front()?;
        Some((self.topo.switch_of(link.dst).map(|s| s.0), pkt))
    }

    /// Run until [`Simulation::is_done`].
    pub fn run_to_end(&mut self) {
        while self.advance(1 << 20) {}
    }

    /// Schedule the first occupancy sample, if sampling is on and anything will happen (and
    /// the first time-series sample, likewise).
    fn start_sampling(&mut self) {
        if self.sample_every.is_some() && !self.sample_armed && !(self.apps_idle() && self.total_transfers() == 0) {
            self.sample_armed = true;
            self.sched.at(Time::ZERO, Event::Sample);
        }
        self.start_observing();
    }

    fn on_sample(&mut self) {
        let now = self.sched.now();
        self.sample_armed = false;
        // Validation refuses a scenario estimated above the limit; one that outlasts its
        // estimate (no horizon, or a long drain) stops sampling there, and says so in the summary.
        if (self.samples.len() + self.switches.len()) as u64 > self.occupancy_limit {
            self.occupancy_truncated = true;
            return;
        }
        reserve_capped(&mut self.samples, self.switches.len(), self.occupancy_limit);
        for (s, sw) in self.switches.iter().enumerate() {
            self.samples.push(OccupancySample { time_ps: now.ps(), switch: s as u32, bytes: sw.buf.occupancy });
        }
        // Only keep sampling while something else can still happen (a pending time-series
        // sample is not work: the two samplers must not keep each other alive).
        let others_pending = self.sched.len() > usize::from(self.is_observe_pending());
        if let (Some(d), true) = (self.sample_every, others_pending) {
            self.sample_armed = true;
            self.sched.after(d, Event::Sample);
        }
    }
}

/// Make room in `v` for `n` more rows of a series capped at `limit` rows: grow by doubling, as
/// `Vec` does, but never past the cap, so a full series holds `limit` rows' memory and not the
/// up to twice as much that plain doubling reserves (`limits::MAX_SERIES_BYTES`).
/// PRECONDITION: `v.len() + n <= limit`.
pub(crate) fn reserve_capped<T>(v: &mut Vec<T>, n: usize, limit: u64) {
    debug_assert!((v.len() + n) as u64 <= limit, "a series past its cap");
    if v.capacity() - v.len() < n {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let want = v.capacity().saturating_mul(2).max(64).min(limit).max(v.len() + n);
        v.reserve_exact(want - v.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packets on the wires and in the port and credit queues.
    fn packets_in_network(sim: &Simulation) -> usize {
        let queued = |l: &Link| l.port.num_packets() + l.credit.as_deref().map_or(0, |c| c.num_packets());
        sim.links.iter().map(|l| l.wire.len() + queued(l)).sum()
    }

    #[test]
    fn every_header_slot_belongs_to_one_packet_in_the_network() {
        // CORRECTNESS (`packet`): every way a packet leaves the network frees its header slot:
        // delivery, a late packet for a finished transfer, and each kind of drop (admission,
        // LQD push-out, queue caps, pFabric push-out, credit queues, Aeolus's selective drop).
        let leaf_spine = "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 4\nspines = 2\n\
                          host_rate_gbps = 10\nfabric_rate_gbps = 10\n";
        let incast = "[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.6\nduration_ms = 1\n\
                      [[workload]]\nkind = \"incast\"\nquery_rate_per_host = 4000\nfan_in = 6\nburst_bytes = 300000\nduration_ms = 1\n";
        let cases = [
            "[switch]\nbuffer_bytes = 60000\nadmission = { policy = \"lqd\" }\n",
            "[switch]\nbuffer_bytes = 60000\nqueues = [{ ecn_threshold_bytes = 20000, cap_bytes = 20000 }]\n",
            "[transport]\nkind = \"power_tcp\"\n[switch]\nbuffer_bytes = 60000\n",
            "[transport]\nkind = \"pfabric\"\n[switch]\nscheduler = \"pfabric\"\n\
             admission = { policy = \"complete_sharing\" }\nqueues = [{}]\n",
            "[transport]\nkind = \"aeolus\"\n[switch]\ncredit_queue_pkts = 2\nselective_drop_bytes = 8000\n\
             [routing]\nmode = \"symmetric_ecmp\"\n",
        ];
        for case in cases {
            let text = format!("{leaf_spine}{case}{incast}");
            let valid = crate::Spec::from_toml_str(&text).unwrap().validate(std::path::Path::new(".")).unwrap();
            let mut sim = Simulation::new(&valid).unwrap();
            let mut most = 0;
            while sim.advance(997) {
                assert_eq!(sim.hdrs.live(), packets_in_network(&sim), "{case}");
                most = most.max(sim.hdrs.live());
            }
            assert_eq!(sim.hdrs.live(), packets_in_network(&sim), "{case}");
            let out = sim.output();
            let s = &out.summary;
            let drops = s.bytes_dropped;
            assert!(most > 0 && drops > 0, "{case}: the case drops nothing ({s:?})");
        }
    }

    #[test]
    fn abm_first_rtt_is_one_propagation_round_trip_at_the_host_rate() {
        // Credence's S2 leaf-spine (10 Gb/s, 3 us links, 8 links a round trip): the artifact's
        // `RTTBytes` = 10 Gb/s x 24 us = 30,000 B, less than an incast response of 32,896 B, so
        // its last packets are not first-RTT; with 1 us links 10,000 B, with 8 us 80,000 B.
        let sim_with = |delay_ns: u64, admission: &str| {
            let text = format!(
                "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 16\nspines = 4\n\
                 host_rate_gbps = 10\nfabric_rate_gbps = 10\nhost_delay_ns = {delay_ns}\nfabric_delay_ns = {delay_ns}\n\
                 [switch]\nadmission = {admission}\n[transport]\nkind = \"dctcp\"\ninit_cwnd_pkts = 30\n\
                 [[workload]]\nkind = \"flows\"\nflows = [ {{ src = 0, dst = 16, size_bytes = 1000, start_ns = 0 }} ]\n"
            );
            let valid = crate::Spec::from_toml_str(&text).unwrap().validate(std::path::Path::new(".")).unwrap();
            Simulation::new(&valid).unwrap()
        };
        let abm = "{ policy = \"abm\" }";
        assert_eq!(sim_with(3000, abm).first_rtt_bytes, 30_000);
        assert_eq!(sim_with(1000, abm).first_rtt_bytes, 10_000);
        assert_eq!(sim_with(8000, abm).first_rtt_bytes, 80_000);
        // Not the initial window (30 x 1460 B), and the key overrides it.
        assert_eq!(sim_with(3000, "{ policy = \"abm\", first_rtt_bytes = 43800 }").first_rtt_bytes, 43_800);
    }

    #[test]
    fn prefetching_never_changes_a_run() {
        // The scenario is far below `PREFETCH_ABOVE_BYTES`; turn the hints on by hand.
        let text = "[topology]\nkind = \"fat_tree\"\nk = 4\nrate_gbps = 10\ndelay_ns = 1000\n\
                    [[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.6\n\
                    load_reference = \"host_link\"\ndestinations = \"uniform\"\nduration_ms = 4.0\n";
        let valid = crate::Spec::from_toml_str(text).unwrap().validate(std::path::Path::new(".")).unwrap();
        let plain = crate::run(&valid).unwrap();
        let mut sim = Simulation::new(&valid).unwrap();
        assert!(!sim.prefetches);
        sim.prefetches = true;
        sim.run_to_end();
        // Most switch hops took the prefetch's route (`RouteHint`) instead of routing again.
        #[cfg(debug_assertions)]
        assert!(sim.route_hint_hops * 2 > sim.hops, "{} of {} hops", sim.route_hint_hops, sim.hops);
        let hinted = sim.output();
        assert!(plain.summary.finished_flows > 20, "{:?}", plain.summary);
        assert_eq!(hinted, plain);
    }

    #[test]
    fn occupancy_sampling_stops_at_its_limit_and_says_so() {
        let text = "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 2\nspines = 1\n\
                    host_rate_gbps = 10\nfabric_rate_gbps = 10\n[run]\nsample_interval_us = 1\n\
                    [[workload]]\nkind = \"flows\"\nflows = [ { src = 0, dst = 3, size_bytes = 1000000, start_ns = 0 } ]\n";
        let valid = crate::Spec::from_toml_str(text).unwrap().validate(std::path::Path::new(".")).unwrap();
        let full = crate::run(&valid).unwrap();
        assert!(!full.summary.occupancy_truncated);
        let mut sim = Simulation::new(&valid).unwrap();
        sim.occupancy_limit = 30;
        sim.run_to_end();
        let out = sim.output();
        assert!(out.summary.occupancy_truncated);
        // Three switches per sample: ten whole samples, then nothing.
        assert_eq!(out.occupancy.len(), 30);
        assert!(full.occupancy.len() > 30);
        // Sampling never changes the run.
        assert_eq!(out.records, full.records);
    }

    #[test]
    fn the_shortest_periods_without_a_stop_time_stay_within_the_caps() {
        // The audit's case: no stop time and one flow at t = 0, so validation's horizon is 0 and
        // its estimate one sample; the run then samples every nanosecond (the shortest period
        // validation takes) for as long as the flow lasts. The caps are lowered, as the real ones
        // are 512 MiB per series.
        let text = "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 2\nspines = 1\n\
                    host_rate_gbps = 10\nfabric_rate_gbps = 10\n[run]\nsample_interval_us = 0.001\n\
                    [run.timeseries]\ninterval_us = 0.001\n\
                    [[workload]]\nkind = \"flows\"\nflows = [ { src = 0, dst = 3, size_bytes = 100000 } ]\n";
        let valid = crate::Spec::from_toml_str(text).unwrap().validate(std::path::Path::new(".")).unwrap();
        let mut sim = Simulation::new(&valid).unwrap();
        sim.occupancy_limit = 3_000;
        sim.observe.as_deref_mut().unwrap().limits = (500, 200);
        sim.run_to_end();
        // No series ever reserved more than its cap.
        assert!(sim.samples.capacity() <= 3_000, "{}", sim.samples.capacity());
        let obs = sim.observe.as_deref().unwrap();
        assert!(obs.queue_rows.capacity() <= 500 && obs.transfer_rows.capacity() <= 200);
        let out = sim.output();
        assert!(out.summary.occupancy_truncated && out.summary.timeseries_truncated, "{:?}", out.summary);
        // Whole samples only: three switches per occupancy sample; the one transfer in flight
        // fills its table first, and the queue table ends at the same sample.
        assert_eq!(out.occupancy.len(), 3_000);
        let (queues, transfers) = (&out.queue_series, &out.transfer_series);
        assert!(queues.len() <= 500 && transfers.len() == 200, "{} queue rows", queues.len());
        assert_eq!(queues.last().map(|q| q.time_ps), transfers.last().map(|t| t.time_ps));
        // The flow finished all the same, as it does without sampling.
        let off = text.replace("sample_interval_us = 0.001\n[run.timeseries]\ninterval_us = 0.001\n", "sample_interval_us = 0\n");
        let plain = crate::run(&crate::Spec::from_toml_str(&off).unwrap().validate(std::path::Path::new(".")).unwrap()).unwrap();
        assert!(plain.occupancy.is_empty() && plain.transfer_series.is_empty());
        assert_eq!(out.records, plain.records);
    }

    #[test]
    fn a_capped_series_never_reserves_past_its_cap() {
        let mut v: Vec<u64> = Vec::new();
        for i in 0..999 {
            reserve_capped(&mut v, 1, 999);
            v.push(i);
            assert!(v.capacity() <= 999);
        }
        assert_eq!(v.capacity(), 999, "plain doubling would have reserved 1024");
        let mut w: Vec<u64> = Vec::new();
        reserve_capped(&mut w, 3, 1000);
        assert!(w.capacity() >= 64, "grows as a Vec does below the cap");
    }
}
