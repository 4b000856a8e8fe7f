//! Shuffles and broadcasts at packet level: the same mechanisms as [`crate::shuffle`] and
//! [`crate::broadcast`], run as an application of the packet simulator (`sim`) instead of on
//! the fluid [`Net`](crate::net::Net).
//!
//! A mechanism is written once against [`FlowNet`]: it starts flows, reads the clock and the
//! topology, and is told when flows finish and when its timers are due. Here a [`PacketNet`]
//! collects the flows it starts and the application ([`CoflowApp`]) turns each into a
//! simulated transfer (DCTCP by default): fair sharing between a shuffle's fetches emerges from
//! the transport, and MADD's caps `d_ij / Γ` are enforced at the senders by the transport's
//! pacing (`TransferReq::rate_cap`), as the issue asks.
//!
//! # Topology
//!
//! The flow-level [`Topology`] (hosts in racks, each rack's uplink to one core) becomes a
//! leaf-spine with one leaf per rack and one spine whose links run at the rack's cross-rack
//! capacity; a flat topology becomes one leaf holding every host. Only what a leaf-spine can
//! express is accepted: equal racks of consecutive hosts, one host rate, one cross-rack rate
//! ([`PacketError::Topology`] otherwise).
//!
//! # Capacities the mechanisms plan with
//!
//! Packets carry headers, so a link delivers less payload than its line rate. The mechanisms
//! plan with the payload (goodput) capacities: the topology handed to them is the flow-level
//! one scaled by the transport's payload efficiency, measured from the simulator's own
//! contention-free model (the slope of its ideal FCT against size). MADD's `Γ` and caps, and a
//! broadcast's lower bound, are therefore in payload terms, and the unit's ideal CCT is that `Γ`
//! or bound: a packet-level MADD shuffle that matches its `Γ` fills its bottleneck exactly.
//!
//! # Sizes and times
//!
//! Flow sizes are rounded to whole bytes (at least 1); caps are clamped to the simulator's
//! range of rates (`spec::limits`, 1 Mb/s to 100 Tb/s); timers (Cornet's request overhead and
//! polls, BitTorrent's rechokes) are rounded to the simulator's picoseconds.

use std::sync::{Arc, Mutex};

pub mod fidelity;

use sim::app::{AnyApp, AppCtx, Application, TransferDone, TransferReq, UnitRecord};
use sim::spec::limits::{MAX_RATE_BPS, MIN_RATE_BPS};
use sim::spec::Spec;
use sim::Simulation;
use units::{Bps, Dur, Time};

use crate::broadcast::{check_broadcast, Bcast, BroadcastConfig, BroadcastResult, Mechanism, Placement};
use crate::net::{check_flow, Completion, FlowId, FlowNet, ParamError, Topology};
use crate::shuffle::{Shuffle, ShuffleMechanism, ShuffleResult, ShuffleRun};

/// Why a packet-level run could not be made or did not finish.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PacketError {
    /// A parameter of the shuffle or broadcast (the same checks as at flow level).
    #[error(transparent)]
    Param(#[from] ParamError),
    /// The topology has no leaf-spine equivalent (module docs).
    #[error("packet level: {0}")]
    Topology(String),
    /// The generated scenario (or the transport given) was refused by the simulator.
    #[error("packet level: scenario refused: {0}")]
    Scenario(String),
    /// The simulation ended with the coflow unfinished (a transfer gave up).
    #[error("packet level: the simulation ended before the coflow finished: {0}")]
    Unfinished(String),
}

/// How the packet-level network is built.
#[derive(Clone, Debug, PartialEq)]
pub struct PacketOptions {
    /// The scenario's `[transport]` table as TOML (`kind = "dctcp"` when `None`).
    pub transport_toml: Option<String>,
    /// Propagation delay of every link, ns.
    pub delay_ns: u64,
    /// The simulator's seed (ECMP hashing; the mechanisms have their own seeds).
    pub seed: u64,
}

impl Default for PacketOptions {
    fn default() -> Self {
        PacketOptions { transport_toml: None, delay_ns: 1000, seed: 1 }
    }
}

/// What the packet simulator did in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PacketStats {
    /// Events processed.
    pub events: u64,
    /// Packet hops (a packet crossing one link).
    pub packet_hops: u64,
    /// Packets dropped at switches.
    pub switch_drops: u64,
    /// Retransmitted segments, over every transfer.
    pub retx_segments: u64,
    /// Retransmission timeouts, over every transfer.
    pub rtos: u64,
    /// Packets marked CE.
    pub ecn_marks: u64,
    /// Payload bytes per line-rate byte of a full-size transfer (the factor the planning
    /// capacities were scaled by; module docs).
    pub payload_efficiency: f64,
}

/// The leaf-spine scenario equivalent to `topo` (module docs), as TOML, without a workload.
pub fn scenario_toml(topo: &Topology, opts: &PacketOptions) -> Result<String, PacketError> {
    let bad = |why: String| Err(PacketError::Topology(why));
    topo.validate()?;
    let n = topo.num_hosts();
    let rate = topo.host_up_gbps[0];
    if topo.host_up_gbps.iter().chain(&topo.host_down_gbps).any(|&g| g != rate) {
        return bad("every host link must have one rate (a leaf-spine has one host rate)".into());
    }
    let transport = opts.transport_toml.as_deref().unwrap_or("kind = \"dctcp\"");
    let head = format!("name = \"coflow_packet\"\nseed = {}\n\n[transport]\n{transport}\n\n[topology]\n", opts.seed);
    let d = opts.delay_ns;
    if topo.is_flat() {
        return Ok(format!(
            "{head}kind = \"leaf_spine\"\nleaves = 1\nhosts_per_leaf = {n}\nspines = 0\n\
             host_rate_gbps = {rate:?}\nfabric_rate_gbps = {rate:?}\nhost_delay_ns = {d}\nfabric_delay_ns = {d}\n"
        ));
    }
    let racks = topo.num_racks();
    if !n.is_multiple_of(racks) {
        return bad(format!("{n} hosts do not split into {racks} equal racks"));
    }
    let per = n / racks;
    if let Some(h) = (0..n).find(|&h| topo.rack_of[h] != h / per) {
        return bad(format!("host {h} is in rack {}, but a leaf-spine puts it in rack {}", topo.rack_of[h], h / per));
    }
    let cross = topo.rack_up_gbps[0];
    if topo.rack_up_gbps.iter().chain(&topo.rack_down_gbps).any(|&g| g != cross) {
        return bad("every rack link must have one rate (a leaf-spine has one fabric rate)".into());
    }
    Ok(format!(
        "{head}kind = \"leaf_spine\"\nleaves = {racks}\nhosts_per_leaf = {per}\nspines = 1\n\
         host_rate_gbps = {rate:?}\nfabric_rate_gbps = {cross:?}\nhost_delay_ns = {d}\nfabric_delay_ns = {d}\n"
    ))
}

/// The packet simulator seen as a [`FlowNet`]: flows a mechanism starts wait here until the
/// application hands them to the simulator at the end of its callback.
#[derive(Clone, Debug)]
pub(crate) struct PacketNet {
    now: f64,
    topo: Topology,
    starts: Vec<Start>,
    next_flow: u32,
}

#[derive(Clone, Copy, Debug)]
struct Start {
    src: usize,
    dst: usize,
    bytes: f64,
    cap_gbps: Option<f64>,
    tag: u64,
}

impl FlowNet for PacketNet {
    fn now(&self) -> f64 {
        self.now
    }
    fn topology(&self) -> &Topology {
        &self.topo
    }
    fn start_flow(
        &mut self,
        src: usize,
        dst: usize,
        bytes: f64,
        cap_gbps: Option<f64>,
        tag: u64,
    ) -> Result<FlowId, ParamError> {
        check_flow(&self.topo, src, dst, bytes, cap_gbps)?;
        self.starts.push(Start { src, dst, bytes, cap_gbps, tag });
        self.next_flow += 1;
        Ok(FlowId(self.next_flow - 1))
    }
}

/// The mechanism an application runs, before and after it is planned.
#[derive(Debug)]
enum Intra {
    /// Planned at the first callback, once the payload efficiency is known.
    Shuffle { shuffle: Shuffle, mechanism: ShuffleMechanism, seed: u64 },
    Broadcast { placement: Placement, mechanism: Mechanism, cfg: BroadcastConfig, block: f64 },
    RunningShuffle { run: ShuffleRun, net: PacketNet },
    RunningBroadcast { run: Box<Bcast<PacketNet>>, placement: Placement },
    Done,
}

/// What a run leaves for its caller.
#[derive(Debug)]
enum Finished {
    Shuffle(ShuffleResult),
    Broadcast(BroadcastResult),
}

type Slot = Arc<Mutex<Option<Result<(Finished, f64), PacketError>>>>;

/// One shuffle or broadcast as an application of the packet simulator (module docs). It
/// records one unit (`"shuffle"` or `"broadcast"`) whose ideal is the payload `Γ` or lower
/// bound.
#[derive(Debug)]
pub struct CoflowApp {
    intra: Intra,
    /// The flow-level topology (line rates).
    topo: Topology,
    /// Per transfer started (by the simulator's transfer index, counted from this app's
    /// first): the mechanism's tag and size.
    meta: Vec<(u64, f64)>,
    /// The simulator's id of this app's first transfer.
    first_transfer: Option<u32>,
    /// The time the pending alarm was set for, seconds.
    alarm: Option<f64>,
    efficiency: f64,
    bytes: u64,
    slot: Slot,
}

impl CoflowApp {
    fn new(topo: &Topology, intra: Intra, slot: Slot) -> Self {
        CoflowApp {
            intra,
            topo: topo.clone(),
            meta: Vec::new(),
            first_transfer: None,
            alarm: None,
            efficiency: 1.0,
            bytes: 0,
            slot,
        }
    }

    fn fail(&mut self, e: PacketError, ctx: &mut AppCtx<'_>) {
        self.intra = Intra::Done;
        ctx.cancel_sleep();
        if let Ok(mut s) = self.slot.lock() {
            s.get_or_insert(Err(e));
        }
    }

    /// Payload bytes per line-rate byte, from the simulator's contention-free model.
    fn measure_efficiency(ctx: &AppCtx<'_>) -> f64 {
        let (small, large) = (1_000_000u64, 11_000_000u64);
        let slope = ctx.ideal_fct(0, 1, large).as_secs_f64() - ctx.ideal_fct(0, 1, small).as_secs_f64();
        let line = ctx.host_rate(0).get() as f64 / 8.0;
        let eff = (large - small) as f64 / slope / line;
        if eff.is_finite() && eff > 0.0 { eff.min(1.0) } else { 1.0 }
    }

    /// Plans the mechanism on the payload topology and starts it (first callback).
    fn plan(&mut self, ctx: &mut AppCtx<'_>) -> Result<(), PacketError> {
        self.efficiency = Self::measure_efficiency(ctx);
        let e = self.efficiency;
        let mut payload = self.topo.clone();
        for v in [&mut payload.host_up_gbps, &mut payload.host_down_gbps, &mut payload.rack_up_gbps, &mut payload.rack_down_gbps] {
            v.iter_mut().for_each(|g| *g *= e);
        }
        let net = PacketNet { now: 0.0, topo: payload, starts: Vec::new(), next_flow: 0 };
        self.intra = match std::mem::replace(&mut self.intra, Intra::Done) {
            Intra::Shuffle { shuffle, mechanism, seed } => {
                let mut run = ShuffleRun::new(&net.topo, &shuffle, mechanism)?;
                let mut net = net;
                run.begin(&mut net, seed)?;
                Intra::RunningShuffle { run, net }
            }
            Intra::Broadcast { placement, mechanism, cfg, block } => {
                let mut run = Box::new(Bcast::new(net, &placement, mechanism, &cfg, block)?);
                run.begin()?;
                Intra::RunningBroadcast { run, placement }
            }
            other => other,
        };
        Ok(())
    }

    fn net(&mut self) -> Option<&mut PacketNet> {
        match &mut self.intra {
            Intra::RunningShuffle { net, .. } => Some(net),
            Intra::RunningBroadcast { run, .. } => Some(&mut run.net),
            _ => None,
        }
    }

    /// Hands the flows the mechanism started to the simulator, sets the alarm for its next
    /// timer, and finishes the run when the coflow is complete.
    fn flush(&mut self, ctx: &mut AppCtx<'_>) -> Result<(), PacketError> {
        let starts = match self.net() {
            Some(net) => std::mem::take(&mut net.starts),
            None => return Ok(()),
        };
        for s in starts {
            let size = (s.bytes.round() as u64).max(1);
            let cap = s.cap_gbps.map(|g| Bps(((g * 1e9).round() as u64).clamp(MIN_RATE_BPS, MAX_RATE_BPS)));
            let req = TransferReq { rate_cap: cap, tag: self.meta.len() as u64, ..TransferReq::new(s.src as u32, s.dst as u32, size) };
            let id = ctx.start_transfer(req).map_err(|e| PacketError::Unfinished(e.to_string()))?;
            self.first_transfer.get_or_insert(id.0);
            self.meta.push((s.tag, s.bytes));
            self.bytes += size;
        }
        let (complete, next) = match &self.intra {
            Intra::RunningShuffle { run, .. } => (run.is_complete(), None),
            Intra::RunningBroadcast { run, .. } => (run.is_complete(), run.next_timer_s()),
            _ => return Ok(()),
        };
        if complete {
            self.finish(ctx);
            return Ok(());
        }
        self.alarm = next;
        match next {
            Some(t) => ctx.sleep_until(Time::from_secs_f64(t)),
            None => ctx.cancel_sleep(),
        }
        Ok(())
    }

    fn finish(&mut self, ctx: &mut AppCtx<'_>) {
        ctx.cancel_sleep();
        let (done, ideal_s, kind) = match std::mem::replace(&mut self.intra, Intra::Done) {
            Intra::RunningShuffle { run, .. } => {
                let r = run.into_result();
                let g = r.gamma_s;
                (Finished::Shuffle(r), g, "shuffle")
            }
            Intra::RunningBroadcast { run, placement } => {
                let topo = run.net.topo.clone();
                let r = run.into_result(&topo, &placement);
                let lb = r.lower_bound_s;
                (Finished::Broadcast(r), lb, "broadcast")
            }
            _ => return,
        };
        ctx.record_unit(UnitRecord {
            app: 0,
            kind,
            unit: 0,
            start: Time::ZERO,
            end: ctx.now(),
            ideal: Some(Dur::from_secs_f64(ideal_s)),
            num_transfers: self.meta.len().min(u32::MAX as usize) as u32,
            bytes: self.bytes,
            job: None,
            sent: None,
            src: None,
            dst: None,
            lost_fraction: None,
        });
        if let Ok(mut s) = self.slot.lock() {
            s.get_or_insert(Ok((done, self.efficiency)));
        }
    }

    fn step(&mut self, ctx: &mut AppCtx<'_>, f: impl FnOnce(&mut Self, f64) -> Result<(), PacketError>) {
        let now = ctx.now().as_secs_f64();
        if let Some(net) = self.net() {
            net.now = now;
        }
        if let Err(e) = f(self, now).and_then(|()| self.flush(ctx)) {
            self.fail(e, ctx);
        }
    }
}

impl Application for CoflowApp {
    fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
        if let Err(e) = self.plan(ctx).and_then(|()| self.flush(ctx)) {
            self.fail(e, ctx);
        }
    }

    fn on_timer(&mut self, ctx: &mut AppCtx<'_>) {
        // The alarm was rounded to a picosecond: fire what it was set for even if the clock
        // reads a hair earlier.
        let alarm = self.alarm.take();
        self.step(ctx, |app, now| match &mut app.intra {
            Intra::RunningBroadcast { run, .. } => Ok(run.fire_due_timers(alarm.map_or(now, |a| a.max(now)))?),
            _ => Ok(()),
        });
    }

    fn on_transfer_done(&mut self, done: &TransferDone, ctx: &mut AppCtx<'_>) {
        let Some(i) = self.first_transfer.and_then(|f| done.transfer.0.checked_sub(f)) else { return };
        let Some(&(tag, bytes)) = self.meta.get(i as usize) else { return };
        if done.outcome != sim::app::Outcome::Complete {
            let e = PacketError::Unfinished(format!(
                "transfer {} -> {} of {} bytes ended {}",
                done.src,
                done.dst,
                done.size,
                done.outcome.as_str()
            ));
            return self.fail(e, ctx);
        }
        let c = Completion {
            flow: FlowId(i),
            tag,
            src: done.src as usize,
            dst: done.dst as usize,
            bytes,
            start_s: done.start.as_secs_f64(),
            finish_s: ctx.now().as_secs_f64(),
        };
        self.step(ctx, |app, _| match &mut app.intra {
            Intra::RunningShuffle { run, net } => Ok(run.on_flow_done(net, &c)?),
            Intra::RunningBroadcast { run, .. } => Ok(run.on_transfer_done(&c)?),
            _ => Ok(()),
        });
    }
}

/// Runs one application in the scenario equivalent to `topo`; returns what it left and the
/// simulator's statistics.
fn run_app(topo: &Topology, intra: Intra, opts: &PacketOptions) -> Result<(Finished, PacketStats), PacketError> {
    let text = scenario_toml(topo, opts)?;
    let valid = Spec::from_toml_str(&text)
        .and_then(|s| s.validate(std::path::Path::new(".")))
        .map_err(|e| PacketError::Scenario(e.to_string()))?;
    let slot: Slot = Arc::new(Mutex::new(None));
    let app = CoflowApp::new(topo, intra, slot.clone());
    let mut sim = Simulation::with_apps(&valid, vec![AnyApp::Custom(Box::new(app))])
        .map_err(|e| PacketError::Scenario(e.to_string()))?;
    sim.run_to_end();
    let out = sim.output();
    let result = slot.lock().ok().and_then(|mut s| s.take());
    let (finished, efficiency) = match result {
        Some(r) => r?,
        None => {
            let unfinished = out.records.iter().filter(|r| !r.finished).count();
            return Err(PacketError::Unfinished(format!(
                "{} transfers started, {unfinished} unfinished at {:.6} s",
                out.records.len(),
                out.summary.sim_end_ps as f64 * 1e-12
            )));
        }
    };
    let s = &out.summary;
    let stats = PacketStats {
        events: s.events,
        packet_hops: s.packet_hops,
        switch_drops: s.switch_drops,
        retx_segments: out.records.iter().map(|r| r.retx_segments).sum(),
        rtos: s.num_rtos,
        ecn_marks: s.ecn_marks,
        payload_efficiency: efficiency,
    };
    Ok((finished, stats))
}

/// Runs one shuffle at packet level (module docs). `seed` is Hadoop's fetch order, as in
/// [`crate::shuffle::run_shuffle`]; the result's `gamma_s` is the payload `Γ`.
pub fn run_shuffle_packet(
    topo: &Topology,
    shuffle: &Shuffle,
    mechanism: ShuffleMechanism,
    seed: u64,
    opts: &PacketOptions,
) -> Result<(ShuffleResult, PacketStats), PacketError> {
    // The same checks as at flow level, before building anything.
    ShuffleRun::new(topo, shuffle, mechanism)?;
    match run_app(topo, Intra::Shuffle { shuffle: shuffle.clone(), mechanism, seed }, opts)? {
        (Finished::Shuffle(r), st) => Ok((r, st)),
        (Finished::Broadcast(_), _) => Err(PacketError::Unfinished("a shuffle finished as a broadcast".into())),
    }
}

/// Runs one broadcast at packet level (module docs); the result's lower bound is in payload
/// terms.
pub fn run_broadcast_packet(
    topo: &Topology,
    placement: &Placement,
    mechanism: Mechanism,
    cfg: &BroadcastConfig,
    opts: &PacketOptions,
) -> Result<(BroadcastResult, PacketStats), PacketError> {
    let block = check_broadcast(topo, placement, mechanism, cfg)?;
    let intra = Intra::Broadcast { placement: placement.clone(), mechanism, cfg: cfg.clone(), block };
    match run_app(topo, intra, opts)? {
        (Finished::Broadcast(r), st) => Ok((r, st)),
        (Finished::Shuffle(_), _) => Err(PacketError::Unfinished("a broadcast finished as a shuffle".into())),
    }
}
