//! Inter-coflow scheduling on a non-blocking fabric, at flow level, event by event.
//!
//! Pipeline: a [`Trace`] goes in, [`run`] plays it on a [`Fabric`] under one [`Scheduler`], and
//! an [`Outcome`] comes out: one [`CoflowRecord`] per coflow (CCT beside its ideal CCT) and,
//! optionally, one [`FlowRecord`] per flow. [`Outcome::summary`] reduces it.
//!
//! The model is the idealised fluid one the coflow papers reason with: flows are fluids with
//! rates, every port has an egress and an ingress capacity ([`crate::fabric`]), and rates are
//! recomputed at every event: a coflow's arrival, a flow's completion and, for D-CLAS, a coflow
//! crossing a queue threshold. Event times are exact (`remaining / rate`); there is no time
//! step. Rates are constant between events. (coflowsim's stepped rules are in
//! [`crate::coflowsim`].)
//!
//! The schedulers (`Scheduler::from_name` names in brackets):
//!
//! - **FAIR** (`fair`): per-flow max-min fairness over all active flows, by progressive filling,
//!   the TCP-like baseline of Varys §7 and Aalo §7.
//! - **FIFO, SCF, NCF, LCF, SEBF** (`fifo`, `scf`, `ncf`, `lcf`, `sebf`): coflows in an order,
//!   each given MADD rates on what the coflows before it left (Varys §5.3, Pseudocode 1:
//!   every flow `d_ij / Gamma`, `Gamma` the coflow's bottleneck time on the free capacity, so
//!   all its flows finish together), then the leftover backfilled greedily in the same order
//!   (work conservation, Varys §5.3 "Ensuring work conservation"). The orders follow coflowsim
//!   (Varys §5.4 compares the same heuristics): FIFO by arrival; SCF "shortest" by longest
//!   flow; NCF "narrowest" by `min(mappers, reducers)`; LCF "lightest" by remaining bytes;
//!   SEBF by the effective bottleneck `Gamma` of the remaining bytes on the idle fabric (Varys
//!   §5.3). Note that coflowsim's SCF is not "smallest total bytes": that is its LCF. Orders are
//!   recomputed when a coflow arrives or departs, as Varys reschedules (Pseudocode 1); rates at
//!   every event.
//! - **D-CLAS** (`dclas`): Aalo §4.2 and Pseudocode 1: discretized coflow-level attained
//!   service. Queue `k` (of 10) holds the coflows that have sent between `10 MiB * 10^(k-1)` and
//!   `10 MiB * 10^k` bytes (queue 0: below 10 MiB); coflows move down as they send. FIFO within
//!   a queue; strict priority across queues (the choice coflowsim's DARK makes and Aalo's
//!   evaluation reports; Aalo's weighted sharing across queues is not implemented). Each coflow
//!   gets max-min fair rates on what higher-priority coflows left, which is work-conserving.
//! - **Sincronia** (`sincronia`): Sincronia §3, Algorithm 1, BSSI: repeatedly take the most
//!   loaded port (ingress or egress) among the unordered coflows, put last the coflow with the
//!   smallest weight / load-on-that-port, and scale the others' weights; then greedy rate
//!   allocation in that order (each flow gets `min(free egress, free ingress)`; §4.2, "greedy"
//!   order-preserving allocation). The order is recomputed at coflow arrivals and departures.
//! - **PFP** (`pfp`): per-flow priority, smallest remaining flow first (pFabric/PDQ-like, as
//!   coflowsim's PFP), each flow in that order getting all it can.
//! - **Fetch limit** (`fetch:K`): Hadoop's reducer behaviour: each reducer of a coflow fetches
//!   from at most `K` mappers at a time (mapper order), and the fetching flows share max-min
//!   fairly.
//!
//! Citations name the papers' sections and algorithms as recalled: no copy of Varys (SIGCOMM
//! 2014), Aalo (SIGCOMM 2015) or Sincronia (SIGCOMM 2018) is in `shared/papers` to check the
//! numbers against; the rules themselves were checked against coflowsim's source.
//!
//! **Cost.** Every event recomputes every rate, and the trace has 40k to 600k events per
//! scheduler. The straightforward engine (`Engine::simulate`'s loop, kept as the reference the
//! tests compare against) touches every running flow at every event: tens of seconds to
//! minutes of CPU on the full FB2010 trace. The fast paths (modules `fast`, `dclas` and `pfp`,
//! and `simulate_fair`) compute the same model with less work per event: MADD coflows advance
//! by one scale factor each, backfill visits only flows that can get capacity, PFP repairs its
//! greedy allocation only where an event changed it, FAIR and
//! FETCH move per port pair and fill per port ([`crate::fabric::PairMaxMin`]), D-CLAS replays
//! the allocation of every coflow whose input has not changed and advances flows lazily.
//! `coflow_bench` has the numbers before and after.
//!
//! INVARIANT: after every allocation, no port carries more than its capacity (up to `eps`),
//! every rate is zero for a finished flow, and the run ends with every coflow finished (a
//! non-finishing run is a bug and panics with the scheduler's name).

use crate::fabric::{lowest, Fabric, MaxMin, PairMaxMin, Residual, DEFAULT_PORT_BYTES_PER_SEC};
use crate::trace::Trace;

mod dclas;
mod fast;
mod pfp;

/// Varys' bins: a coflow is short if its longest flow is below 5 MB (MiB here)...
pub const SHORT_LONGEST_FLOW_BYTES: f64 = 5.0 * 1_048_576.0;
/// ...and narrow if it has at most 50 flows (Varys §7.1).
pub const NARROW_MAX_FLOWS: usize = 50;

/// An inter-coflow scheduler. See the module doc for what each does and where it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheduler {
    /// Per-flow max-min fairness.
    Fair,
    /// Coflows first in, first out, with MADD and backfilling.
    Fifo,
    /// Shortest (longest flow) coflow first.
    Scf,
    /// Narrowest (`min(mappers, reducers)`) coflow first.
    Ncf,
    /// Lightest (remaining bytes) coflow first.
    Lcf,
    /// Varys: smallest effective bottleneck first with MADD.
    Sebf,
    /// Aalo: discretized coflow-level attained service.
    Dclas,
    /// Sincronia: BSSI order and greedy rates.
    Sincronia,
    /// Per-flow priority, smallest remaining flow first.
    Pfp,
    /// Each reducer fetches from at most this many mappers at a time, flows max-min fair.
    Fetch(u32),
}

impl Scheduler {
    /// The schedulers with their default parameters (`fetch:5`, Hadoop's default copies).
    pub const ALL: [Scheduler; 10] = [
        Scheduler::Fair,
        Scheduler::Fifo,
        Scheduler::Scf,
        Scheduler::Ncf,
        Scheduler::Lcf,
        Scheduler::Sebf,
        Scheduler::Dclas,
        Scheduler::Sincronia,
        Scheduler::Pfp,
        Scheduler::Fetch(5),
    ];

    /// Parses `fair`, `fifo`, `scf`, `ncf`, `lcf`, `sebf`, `dclas`, `sincronia`, `pfp` or
    /// `fetch:K` (K >= 1), case-insensitively.
    pub fn from_name(name: &str) -> Option<Scheduler> {
        let lower = name.to_ascii_lowercase();
        if let Some(k) = lower.strip_prefix("fetch:") {
            return k.parse().ok().filter(|&k| k >= 1).map(Scheduler::Fetch);
        }
        Scheduler::ALL.into_iter().find(|s| !matches!(s, Scheduler::Fetch(_)) && s.name() == lower)
    }

    /// The name [`Scheduler::from_name`] reads.
    pub fn name(self) -> String {
        match self {
            Scheduler::Fair => "fair".into(),
            Scheduler::Fifo => "fifo".into(),
            Scheduler::Scf => "scf".into(),
            Scheduler::Ncf => "ncf".into(),
            Scheduler::Lcf => "lcf".into(),
            Scheduler::Sebf => "sebf".into(),
            Scheduler::Dclas => "dclas".into(),
            Scheduler::Sincronia => "sincronia".into(),
            Scheduler::Pfp => "pfp".into(),
            Scheduler::Fetch(k) => format!("fetch:{k}"),
        }
    }

    /// Whether no capacity a waiting flow could use is ever left idle (for FIFO..SEBF, with
    /// [`Options::backfill`], the default). FETCH is not: a reducer's waiting flows cannot use
    /// a free port.
    pub fn is_work_conserving(self) -> bool {
        !matches!(self, Scheduler::Fetch(_))
    }
}

/// D-CLAS' queues (Aalo §4.2; the defaults are Aalo's and coflowsim's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DclasConfig {
    /// Upper edge of the first queue, in bytes sent. Default 10 MiB.
    pub first_threshold_bytes: f64,
    /// Each queue's edge is this times the previous one. Default 10.
    pub multiplier: f64,
    /// Number of queues; the last is unbounded. Default 10.
    pub num_queues: usize,
}

impl Default for DclasConfig {
    fn default() -> Self {
        DclasConfig { first_threshold_bytes: 10.0 * 1_048_576.0, multiplier: 10.0, num_queues: 10 }
    }
}

/// Run options; every default is in [`Options::default`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Capacity of every port, each way, in bytes per second. Default: coflowsim's port, 1 MiB
    /// per 8 ms ([`DEFAULT_PORT_BYTES_PER_SEC`]).
    pub port_bytes_per_sec: f64,
    /// Whether to return one [`FlowRecord`] per flow. Default: no.
    pub record_flows: bool,
    /// D-CLAS' queues.
    pub dclas: DclasConfig,
    /// Whether FIFO, SCF, NCF, LCF and SEBF hand the capacity MADD leaves to flows in coflow
    /// order (Varys' work conservation). Default: yes; `false` is MADD alone, for ablations.
    pub backfill: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            port_bytes_per_sec: DEFAULT_PORT_BYTES_PER_SEC,
            record_flows: false,
            dclas: DclasConfig::default(),
            backfill: true,
        }
    }
}

/// Varys' coflow bins (§7.1): short/long by longest flow, narrow/wide by number of flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bin {
    /// Short and narrow.
    SN,
    /// Long and narrow.
    LN,
    /// Short and wide.
    SW,
    /// Long and wide.
    LW,
}

impl Bin {
    /// The four bins in order.
    pub const ALL: [Bin; 4] = [Bin::SN, Bin::LN, Bin::SW, Bin::LW];

    /// The bin of a coflow with this longest flow and number of flows.
    pub fn of(longest_flow_bytes: f64, num_flows: usize) -> Bin {
        let short = longest_flow_bytes < SHORT_LONGEST_FLOW_BYTES;
        let narrow = num_flows <= NARROW_MAX_FLOWS;
        match (short, narrow) {
            (true, true) => Bin::SN,
            (false, true) => Bin::LN,
            (true, false) => Bin::SW,
            (false, false) => Bin::LW,
        }
    }
}

/// The result for one coflow.
#[derive(Clone, Debug, PartialEq)]
pub struct CoflowRecord {
    /// The trace's coflow id.
    pub id: u64,
    /// Arrival (s).
    pub arrival_s: f64,
    /// When its last flow finished (s).
    pub finish_s: f64,
    /// `finish_s - arrival_s`.
    pub cct_s: f64,
    /// Its bottleneck bound alone on the fabric (s): no scheduler can do better.
    pub ideal_cct_s: f64,
    /// Total bytes.
    pub bytes: f64,
    /// Number of flows.
    pub width: u32,
    /// Its longest flow (bytes).
    pub longest_flow_bytes: f64,
    /// Varys bin.
    pub bin: Bin,
}

/// The result for one flow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowRecord {
    /// The coflow's trace id.
    pub coflow_id: u64,
    /// Sending port.
    pub src: u32,
    /// Receiving port.
    pub dst: u32,
    /// Size (bytes).
    pub bytes: f64,
    /// Completion (s).
    pub finish_s: f64,
}

/// What [`run`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The scheduler that produced it.
    pub scheduler: Scheduler,
    /// One record per coflow, in arrival order (ties in trace order).
    pub coflows: Vec<CoflowRecord>,
    /// One record per flow if [`Options::record_flows`], coflow by coflow; else empty.
    pub flows: Vec<FlowRecord>,
    /// Events processed (arrivals, completion instants, threshold crossings).
    pub num_events: u64,
}

/// Averages and tails of an [`Outcome`].
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Coflows.
    pub num_coflows: usize,
    /// Mean CCT (s).
    pub avg_cct_s: f64,
    /// 95th percentile CCT (s, nearest rank).
    pub p95_cct_s: f64,
    /// Mean of CCT / ideal CCT.
    pub avg_slowdown: f64,
    /// Per bin: (bin, coflows, mean CCT in s; 0 if empty).
    pub per_bin: Vec<(Bin, usize, f64)>,
}

impl Outcome {
    /// Mean and p95 CCT, mean slowdown, per-bin means.
    pub fn summary(&self) -> Summary {
        let mut cct: Vec<f64> = self.coflows.iter().map(|c| c.cct_s).collect();
        cct.sort_by(f64::total_cmp);
        let n = cct.len();
        let mean = |s: f64, k: usize| if k == 0 { 0.0 } else { s / k as f64 };
        let p95 = if n == 0 { 0.0 } else { cct[((0.95 * n as f64).ceil() as usize).clamp(1, n) - 1] };
        let per_bin = Bin::ALL
            .iter()
            .map(|&b| {
                let v: Vec<f64> = self.coflows.iter().filter(|c| c.bin == b).map(|c| c.cct_s).collect();
                (b, v.len(), mean(v.iter().sum(), v.len()))
            })
            .collect();
        Summary {
            num_coflows: n,
            avg_cct_s: mean(cct.iter().sum(), n),
            p95_cct_s: p95,
            avg_slowdown: mean(self.coflows.iter().map(|c| c.cct_s / c.ideal_cct_s).sum(), n),
            per_bin,
        }
    }

    /// Factor of improvement over `baseline` (Varys §7: baseline's mean CCT over ours).
    pub fn improvement_over(&self, baseline: &Outcome) -> f64 {
        baseline.summary().avg_cct_s / self.summary().avg_cct_s
    }
}

/// Plays `trace` under `scheduler` on a fabric of `trace.num_ports` ports of
/// `opts.port_bytes_per_sec` each.
pub fn run(trace: &Trace, scheduler: Scheduler, opts: &Options) -> Outcome {
    let fabric = Fabric::uniform(trace.num_ports as usize, opts.port_bytes_per_sec);
    run_on(trace, &fabric, scheduler, opts)
}

/// [`run`] on a given fabric (e.g. with unequal ports). PRECONDITION: the fabric has at least
/// `trace.num_ports` ports.
pub fn run_on(trace: &Trace, fabric: &Fabric, scheduler: Scheduler, opts: &Options) -> Outcome {
    assert!(fabric.num_ports() >= trace.num_ports as usize, "fabric smaller than the trace");
    let mut e = Engine::new(trace, fabric, scheduler, opts);
    e.simulate();
    e.outcome()
}

/// [`run_on`] with the straightforward per-flow engine (every rate recomputed and every running
/// flow advanced at every event), the reference the fast paths in `fast` are tested against.
#[cfg(test)]
fn run_reference(trace: &Trace, fabric: &Fabric, scheduler: Scheduler, opts: &Options) -> Outcome {
    let mut e = Engine::new(trace, fabric, scheduler, opts);
    e.is_reference = true;
    e.simulate();
    e.outcome()
}

/// An `f64` ordered by `total_cmp`, for heaps.
#[derive(Clone, Copy, Debug, PartialEq)]
struct OrdF64(f64);

impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A key that changes as coflows send (LCF's remaining bytes, SEBF's bottleneck), rounded to
/// 24 significant bits so that keys equal in exact arithmetic compare equal and fall to the
/// documented tie-break (arrival), whatever rounding computed them: two coflows whose
/// remaining bytes are both 40 MiB in exact arithmetic may otherwise come out as `40 MiB - 1
/// ulp` and `40 MiB`, an order decided by rounding noise, which also differs between the
/// reference and the fast path (`fast`). Keys within ~6e-8 relative of each other can tie.
fn tie_key(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    const DROP: u32 = 52 - 23;
    let bits = x.to_bits().wrapping_add(1 << (DROP - 1)) & !((1u64 << DROP) - 1);
    f64::from_bits(bits)
}

/// Relative tolerance below which a flow's remaining bytes count as none.
const DONE_TOL: f64 = 1e-9;

/// The state of one run. Flows are stored as parallel arrays indexed by flow id; coflows by
/// their rank in arrival order; reducers (a coflow's flows into one port) by a global id.
///
/// PERF: per-coflow, per-port remaining bytes (`c_load`) and live-flow counts (`c_cnt`) are
/// dense (coflows x 2 ports) and kept up to date as flows move and finish, so MADD's
/// bottleneck and the orders cost O(ports of the coflow), not O(its flows); the backfill skips
/// a whole reducer whose ingress is full. Before this, FIFO on the full trace took > 120 s.
#[derive(Debug)]
struct Engine<'a> {
    sched: Scheduler,
    opts: Options,
    fabric: &'a Fabric,
    n: usize,
    // Coflows, in arrival order.
    c_id: Vec<u64>,
    c_arrival: Vec<f64>,
    /// Flows `c_first[c]..c_first[c + 1]`, reducer by reducer.
    c_first: Vec<u32>,
    /// Reducers `c_rfirst[c]..c_rfirst[c + 1]`.
    c_rfirst: Vec<u32>,
    c_narrowness: Vec<u32>,
    c_longest: Vec<f64>,
    c_total: Vec<f64>,
    c_num_left: Vec<u32>,
    c_sent: Vec<f64>,
    c_rate: Vec<f64>,
    c_finish: Vec<f64>,
    /// Ports the coflow uses (egress `p`, ingress `n + p`).
    c_ports: Vec<Vec<u32>>,
    /// Its mappers' ports in trace order: flow `c_first[c] + j * m + i` goes from mapper `i`
    /// to the coflow's `j`-th reducer (`m` mappers).
    c_mappers: Vec<Vec<u32>>,
    /// Remaining bytes of coflow `c` at port `p` over `c_scale[c]`: `c_load[c * 2n + p]`.
    c_load: Vec<f64>,
    /// The factor by which the fast path's scaled bytes (`c_load`, `f_rem`, `c_qsum`) of coflow
    /// `c` are multiplied to give bytes; 1 unless the fast path runs MADD (see `fast`).
    c_scale: Vec<f64>,
    /// The sum of the coflow's scaled remaining bytes (fast path only).
    c_qsum: Vec<f64>,
    /// Unfinished flows of coflow `c` at port `p`.
    c_cnt: Vec<u32>,
    // Reducers.
    r_dst: Vec<u32>,
    /// The reducer's unfinished flows, in mapper order.
    r_live: Vec<Vec<u32>>,
    // Flows.
    f_src: Vec<u32>,
    f_dst: Vec<u32>,
    f_coflow: Vec<u32>,
    f_reducer: Vec<u32>,
    f_size: Vec<f64>,
    /// Remaining bytes over the coflow's `c_scale`.
    f_rem: Vec<f64>,
    f_rate: Vec<f64>,
    f_finish: Vec<f64>,
    /// Active coflows in arrival order.
    active: Vec<u32>,
    /// Coflow order for the ordered schedulers, refreshed when `order_stale`.
    order: Vec<u32>,
    order_stale: bool,
    /// Coflows admitted so far (`0..num_admitted`), and how many of them PFP's flow order
    /// (kept in `order`) includes.
    num_admitted: usize,
    num_ordered: usize,
    /// Flows with a positive rate.
    running: Vec<u32>,
    res: Residual,
    maxmin: MaxMin,
    scratch: Vec<u32>,
    now: f64,
    num_events: u64,
    /// Whether to run the per-flow reference engine instead of the fast paths.
    is_reference: bool,
    fast: fast::State,
    dclas: dclas::State,
    pfp: pfp::State,
}

impl<'a> Engine<'a> {
    fn new(trace: &Trace, fabric: &'a Fabric, sched: Scheduler, opts: &Options) -> Engine<'a> {
        let mut idx: Vec<usize> = (0..trace.coflows.len()).collect();
        idx.sort_by_key(|&i| trace.coflows[i].arrival_ms);
        let n = fabric.num_ports();
        let num_c = idx.len();
        let mut e = Engine {
            sched,
            opts: *opts,
            fabric,
            n,
            c_id: Vec::new(),
            c_arrival: Vec::new(),
            c_first: vec![0],
            c_rfirst: vec![0],
            c_narrowness: Vec::new(),
            c_longest: Vec::new(),
            c_total: Vec::new(),
            c_num_left: Vec::new(),
            c_sent: vec![0.0; num_c],
            c_rate: vec![0.0; num_c],
            c_finish: vec![f64::NAN; num_c],
            c_ports: Vec::new(),
            c_mappers: Vec::new(),
            c_load: vec![0.0; num_c * 2 * n],
            c_scale: vec![1.0; num_c],
            c_qsum: Vec::new(),
            c_cnt: vec![0; num_c * 2 * n],
            r_dst: Vec::new(),
            r_live: Vec::new(),
            f_src: Vec::new(),
            f_dst: Vec::new(),
            f_coflow: Vec::new(),
            f_reducer: Vec::new(),
            f_size: Vec::new(),
            f_rem: Vec::new(),
            f_rate: Vec::new(),
            f_finish: Vec::new(),
            active: Vec::new(),
            order: Vec::new(),
            order_stale: true,
            num_admitted: 0,
            num_ordered: 0,
            running: Vec::new(),
            res: Residual::new(fabric),
            maxmin: MaxMin::default(),
            scratch: Vec::new(),
            now: 0.0,
            num_events: 0,
            is_reference: false,
            fast: fast::State::new(num_c),
            dclas: dclas::State::default(),
            pfp: pfp::State::default(),
        };
        for i in idx {
            let c = &trace.coflows[i];
            let ci = e.c_id.len();
            e.c_id.push(c.id);
            e.c_arrival.push(c.arrival_ms as f64 / 1000.0);
            e.c_narrowness.push(c.mappers.len().min(c.reducers.len()) as u32);
            let (mut longest, mut total) = (0.0f64, 0.0);
            let base = ci * 2 * n;
            let mut ports = Vec::new();
            for f in c.flows() {
                let fid = e.f_src.len() as u32;
                if e.r_dst.last() != Some(&f.dst) || e.r_dst.len() == e.c_rfirst[ci] as usize {
                    e.r_dst.push(f.dst);
                    e.r_live.push(Vec::new());
                }
                e.r_live.last_mut().expect("just pushed").push(fid);
                e.f_reducer.push(e.r_dst.len() as u32 - 1);
                e.f_src.push(f.src);
                e.f_dst.push(f.dst);
                e.f_coflow.push(ci as u32);
                e.f_size.push(f.bytes);
                longest = longest.max(f.bytes);
                total += f.bytes;
                for p in [f.src as usize, n + f.dst as usize] {
                    if e.c_cnt[base + p] == 0 {
                        ports.push(p as u32);
                    }
                    e.c_cnt[base + p] += 1;
                    e.c_load[base + p] += f.bytes;
                }
            }
            ports.sort_unstable();
            e.c_ports.push(ports);
            e.c_mappers.push(c.mappers.clone());
            e.c_longest.push(longest);
            e.c_total.push(total);
            e.c_qsum.push(total);
            e.c_num_left.push(c.num_flows() as u32);
            e.c_first.push(e.f_src.len() as u32);
            e.c_rfirst.push(e.r_dst.len() as u32);
        }
        e.f_rem = e.f_size.clone();
        e.f_rate = vec![0.0; e.f_src.len()];
        e.f_finish = vec![f64::NAN; e.f_src.len()];
        e
    }

    fn outcome(&self) -> Outcome {
        let coflows = (0..self.c_id.len())
            .map(|c| {
                let flows = self.c_first[c] as usize..self.c_first[c + 1] as usize;
                let ideal = self.fabric.bottleneck_time(flows.clone().map(|f| (self.f_src[f], self.f_dst[f], self.f_size[f])));
                CoflowRecord {
                    id: self.c_id[c],
                    arrival_s: self.c_arrival[c],
                    finish_s: self.c_finish[c],
                    cct_s: self.c_finish[c] - self.c_arrival[c],
                    ideal_cct_s: ideal,
                    bytes: self.c_total[c],
                    width: flows.len() as u32,
                    longest_flow_bytes: self.c_longest[c],
                    bin: Bin::of(self.c_longest[c], flows.len()),
                }
            })
            .collect();
        let flows = if self.opts.record_flows {
            (0..self.f_src.len())
                .map(|f| FlowRecord {
                    coflow_id: self.c_id[self.f_coflow[f] as usize],
                    src: self.f_src[f],
                    dst: self.f_dst[f],
                    bytes: self.f_size[f],
                    finish_s: self.f_finish[f],
                })
                .collect()
        } else {
            Vec::new()
        };
        Outcome { scheduler: self.sched, coflows, flows, num_events: self.num_events }
    }

    fn reducers(&self, c: u32) -> std::ops::Range<usize> {
        self.c_rfirst[c as usize] as usize..self.c_rfirst[c as usize + 1] as usize
    }

    /// Capacity of port `p` (egress `0..n`, ingress `n..2n`) on the idle fabric, and free now.
    fn cap(&self, p: usize) -> f64 {
        if p < self.n {
            self.fabric.egress[p]
        } else {
            self.fabric.ingress[p - self.n]
        }
    }

    fn free(&self, p: usize) -> f64 {
        if p < self.n {
            self.res.egress[p]
        } else {
            self.res.ingress[p - self.n]
        }
    }

    /// The D-CLAS queue of coflow `c`: how many thresholds its bytes sent have reached.
    fn queue(&self, c: u32) -> usize {
        self.queue_of(self.c_sent[c as usize])
    }

    /// The D-CLAS queue of a coflow that has sent `sent` bytes.
    fn queue_of(&self, sent: f64) -> usize {
        let cfg = &self.opts.dclas;
        let mut thr = cfg.first_threshold_bytes;
        let mut q = 0;
        while q + 1 < cfg.num_queues && sent >= thr * (1.0 - DONE_TOL) {
            q += 1;
            thr *= cfg.multiplier;
        }
        q
    }

    /// Bytes coflow `c` must still send to reach its next D-CLAS threshold (infinite in the
    /// last queue).
    fn to_next_threshold(&self, c: u32) -> f64 {
        self.to_next_threshold_of(self.c_sent[c as usize])
    }

    /// Bytes a coflow that has sent `sent` bytes must still send to reach its next threshold.
    fn to_next_threshold_of(&self, sent: f64) -> f64 {
        let cfg = &self.opts.dclas;
        let q = self.queue_of(sent);
        if q + 1 >= cfg.num_queues {
            return f64::INFINITY;
        }
        cfg.first_threshold_bytes * cfg.multiplier.powi(q as i32) - sent
    }

    /// The start of an event of every event loop but FAIR's: admits the coflows that have
    /// arrived by `now` (into `active`, then `on_admit` with each one's index) from `*next` on,
    /// moves an idle fabric's clock to the next arrival, and counts the event. False when
    /// every coflow has arrived and finished.
    fn begin_event(&mut self, next: &mut usize, mut on_admit: impl FnMut(&mut Self, usize)) -> bool {
        let num_c = self.c_id.len();
        loop {
            while *next < num_c && self.c_arrival[*next] <= self.now {
                self.active.push(*next as u32);
                on_admit(self, *next);
                *next += 1;
            }
            self.num_admitted = *next;
            if !self.active.is_empty() {
                self.num_events += 1;
                return true;
            }
            if *next == num_c {
                return false;
            }
            self.now = self.c_arrival[*next];
        }
    }

    fn simulate(&mut self) {
        match self.sched {
            Scheduler::Fair => return self.simulate_fair(None),
            Scheduler::Fetch(k) if !self.is_reference => return self.simulate_fair(Some(k)),
            _ => {}
        }
        if !self.is_reference && self.sched == Scheduler::Dclas {
            return self.simulate_dclas();
        }
        if !self.is_reference && self.sched == Scheduler::Pfp {
            return self.simulate_pfp();
        }
        if !self.is_reference && self.has_fast_path() {
            return self.simulate_fast();
        }
        let num_c = self.c_id.len();
        let mut next = 0;
        while self.begin_event(&mut next, |e, _| e.order_stale = true) {
            self.allocate();
            // The next event: a completion, an arrival or a D-CLAS threshold.
            let mut dt = if next < num_c { self.c_arrival[next] - self.now } else { f64::INFINITY };
            let mut first: Option<u32> = None;
            for &f in &self.running {
                let t = self.f_rem[f as usize] / self.f_rate[f as usize];
                if t < dt {
                    dt = t;
                    first = Some(f);
                }
            }
            if self.sched == Scheduler::Dclas {
                for &c in &self.active {
                    let r = self.c_rate[c as usize];
                    if r > 0.0 {
                        let t = self.to_next_threshold(c) / r;
                        if t < dt {
                            dt = t.max(0.0);
                            first = None;
                        }
                    }
                }
            }
            assert!(
                dt.is_finite(),
                "{}: coflows are active but nothing progresses at t = {} s",
                self.sched.name(),
                self.now
            );
            let n2 = 2 * self.n;
            for &f in &self.running {
                let f = f as usize;
                let moved = self.f_rate[f] * dt;
                self.f_rem[f] -= moved;
                let c = self.f_coflow[f] as usize;
                self.c_sent[c] += moved;
                self.c_load[c * n2 + self.f_src[f] as usize] -= moved;
                self.c_load[c * n2 + self.n + self.f_dst[f] as usize] -= moved;
            }
            self.now += dt;
            if let Some(f) = first {
                self.f_rem[f as usize] = 0.0;
            }
            self.complete_flows();
        }
    }

    /// FAIR, per port pair. Max-min fairness gives every flow between the same two ports the
    /// same rate at all times, so a pair's flows progress together: the pair keeps its service
    /// so far (bytes each of its flows has received since the pair's epoch) and a min-heap of
    /// the service at which each flow ends (service at its arrival plus its size).
    ///
    /// PERF: an event costs O(active pairs + fill), not O(active flows): the full trace has up
    /// to ~10^5 flows active at once under FAIR; per flow, it took minutes. The fill is
    /// [`PairMaxMin`]'s per-port one (the reference keeps the list-based `MaxMin` fill, which
    /// gives bit-identical rates): 14.6 -> 5.6 CPU s for FAIR, 15.9 -> 6.5 for FETCH:5. The
    /// pairs with flows sit in slots, their service, first end and rate in arrays of their own
    /// (a pair keeps its slot while it has flows; its service waits in `served_idle` while it
    /// has none): the passes of an event over them read memory in order. With the pairs' data
    /// in `n x n` arrays, FETCH's ~3,200 active pairs were ~3,200 cache misses per array per
    /// event, and FAIR passed over all 22,500 pairs (~14,700 active) to avoid them. With the
    /// slots, the times by multiplication and `PairMaxMin`'s branch-free freezes, FB2010 went
    /// from 6.4 to 3.7 CPU s for FAIR (36,568 events) and from 7.7 to 4.6 for FETCH:5
    /// (124,376): medians of four `coflow_bench` runs alternated with the build before, at
    /// load average 11 to 13 on 2 cores; every coflow's and flow's finish bit-identical to
    /// before. Setting up the run (`Engine::new`) and the outcome take under 1% of it. Left
    /// per event: the fill (~110 freezes, each a pass over the opposite ports and a search for
    /// the least level on both sides: about half the time) and three passes over the slots.
    ///
    /// With `fetch_limit` `Some(k)`, this is FETCH: only each reducer's first `k` live flows
    /// (mapper order) take part, and a flow joins its pair (service so far plus its size)
    /// when one ahead of it in its reducer finishes. The flows that do not take part are
    /// exactly the ones that do not move, so the max-min rates are FETCH's.
    fn simulate_fair(&mut self, fetch_limit: Option<u32>) {
        use std::cmp::Reverse;
        let n = self.n;
        let num_c = self.c_id.len();
        let pair_src: Vec<u32> = (0..n * n).map(|p| (p / n) as u32).collect();
        let pair_dst: Vec<u32> = (0..n * n).map(|p| (p % n) as u32).collect();
        // Per pair: its flows, the service at which each ends (least first), its slot (while
        // it has flows) and its service while it has none.
        let mut count = vec![0u32; n * n];
        let mut ends: Vec<std::collections::BinaryHeap<Reverse<(OrdF64, u32)>>> = vec![Default::default(); n * n];
        let mut slot_of = vec![u32::MAX; n * n];
        let mut served_idle = vec![0.0f64; n * n];
        // Per slot: its pair (and the pair's two ports), service so far, the service at which
        // its first flow ends (the head of its heap), rate, and time until that end.
        let mut pair: Vec<u32> = Vec::new();
        let (mut src, mut dst): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        let mut served: Vec<f64> = Vec::new();
        let mut first_end: Vec<f64> = Vec::new();
        let mut rate: Vec<f64> = Vec::new();
        let mut inv: Vec<f64> = Vec::new();
        let mut due: Vec<f64> = Vec::new();
        let mut pm = PairMaxMin::new(n);
        // The reference's fill: its pairs in order, and the rate of each by pair.
        let mut sorted: Vec<u32> = Vec::new();
        let mut pair_rate = if self.is_reference { vec![0.0f64; n * n] } else { Vec::new() };
        // The pairs with a flow due at this event.
        let mut done: Vec<u32> = Vec::new();
        // FETCH: each reducer's next flow to join (the ones before it have joined), and the
        // flows joining at this instant.
        let mut r_next = vec![0u32; self.r_dst.len()];
        let mut joining: Vec<u32> = Vec::new();
        let mut next = 0;
        loop {
            while next < num_c && self.c_arrival[next] <= self.now {
                let m = self.c_mappers[next].len() as u32;
                for r in self.reducers(next as u32) {
                    let row = self.c_first[next] + (r as u32 - self.c_rfirst[next]) * m;
                    let k = fetch_limit.unwrap_or(m).min(m);
                    joining.extend(row..row + k);
                    r_next[r] = row + k;
                }
                next += 1;
            }
            for &f in &joining {
                let p = (self.f_src[f as usize] as usize) * n + self.f_dst[f as usize] as usize;
                if count[p] == 0 {
                    slot_of[p] = pair.len() as u32;
                    pair.push(p as u32);
                    src.push(pair_src[p]);
                    dst.push(pair_dst[p]);
                    served.push(served_idle[p]);
                    first_end.push(f64::INFINITY);
                    rate.push(0.0);
                    inv.push(0.0);
                    due.push(f64::INFINITY);
                }
                count[p] += 1;
                pm.add(pair_src[p], pair_dst[p]);
                let i = slot_of[p] as usize;
                let end = served[i] + self.f_size[f as usize];
                ends[p].push(Reverse((OrdF64(end), f)));
                first_end[i] = first_end[i].min(end);
            }
            joining.clear();
            if pair.is_empty() {
                if next == num_c {
                    break;
                }
                self.now = self.c_arrival[next];
                continue;
            }
            self.num_events += 1;
            self.res.reset(self.fabric);
            if self.is_reference {
                sorted.clear();
                sorted.extend_from_slice(&pair);
                sorted.sort_unstable();
                self.maxmin.fill_weighted(&sorted, &pair_src, &pair_dst, Some(&count), &mut self.res, &mut pair_rate);
                for ((r, v), &p) in rate.iter_mut().zip(inv.iter_mut()).zip(&pair) {
                    *r = pair_rate[p as usize];
                    *v = 1.0 / *r;
                }
            } else {
                // PERF: `PairMaxMin` needs no pair order, and the least time below breaks ties
                // by pair index as a scan in sorted order would; sorting took 14% of FETCH's time.
                pm.fill(&mut self.res);
                pm.rates_of(&src, &dst, &mut rate, &mut inv);
            }
            // The time until each pair's first flow ends is `(first_end - served) / rate`; the
            // least decides the event. PERF: a division per pair was most of FAIR's scan (a
            // divider is slow, and shared with the other hyperthread); `due` holds the times
            // times the rate's inverse instead, a multiplication, and only the pairs within
            // 1e-12 of the least of those are divided. CORRECTNESS: each is within 3 ulps of the
            // quotient (one rounding in the inverse, one in the product), and the quotient
            // within 1 ulp, so every pair whose quotient is the least is among them, and the
            // least quotient and its lowest pair are what dividing every pair gives.
            let m = pair.len();
            let (sv, fe, rt) = (&mut served[..m], &first_end[..m], &rate[..m]);
            for (((t, &e), &s), (&r, &v)) in due[..m].iter_mut().zip(fe).zip(&*sv).zip(rt.iter().zip(&inv)) {
                *t = if r > 0.0 { (e - s) * v } else { f64::INFINITY };
            }
            let (low, _) = lowest(&due[..m]);
            let near = low + low.abs() * 1e-12;
            let mut least = f64::INFINITY;
            let mut first = None;
            for i in 0..m {
                if due[i] <= near {
                    let t = (fe[i] - sv[i]) / rt[i];
                    if t < least || (t == least && first.is_some_and(|j: usize| pair[i] < pair[j])) {
                        least = t;
                        first = Some(i);
                    }
                }
            }
            let mut dt = if next < num_c { self.c_arrival[next] - self.now } else { f64::INFINITY };
            // The pair with the least time, if it comes before the next arrival.
            if least < dt {
                dt = least;
            } else {
                first = None;
            }
            assert!(dt.is_finite(), "fair: flows are active but nothing progresses at t = {} s", self.now);
            self.now += dt;
            done.clear();
            // PERF: eight pairs at a time, branch-free (and so vectorized), and the pairs due
            // picked out of the few blocks that have one.
            for ((sv, e), (r, p)) in sv.chunks_mut(8).zip(fe.chunks(8)).zip(rt.chunks(8).zip(pair.chunks(8))) {
                let mut any = false;
                for ((s, &e), &r) in sv.iter_mut().zip(e).zip(r) {
                    *s += r * dt;
                    any |= e - *s <= e * DONE_TOL;
                }
                if any {
                    done.extend(sv.iter().zip(e).zip(p).filter(|((&s, &e), _)| e - s <= e * DONE_TOL).map(|(_, &p)| p));
                }
            }
            if let Some(i) = first {
                // The pair that set the event: its first flow is done, whatever the rounding.
                served[i] = served[i].max(first_end[i]);
                if !done.contains(&pair[i]) {
                    done.push(pair[i]);
                }
            }
            for &p in &done {
                let p = p as usize;
                let i = slot_of[p] as usize;
                while let Some(&Reverse((OrdF64(end), f))) = ends[p].peek() {
                    if end - served[i] > self.f_size[f as usize] * DONE_TOL {
                        break;
                    }
                    ends[p].pop();
                    first_end[i] = ends[p].peek().map_or(f64::INFINITY, |Reverse((OrdF64(e), _))| *e);
                    count[p] -= 1;
                    pm.remove(pair_src[p], pair_dst[p]);
                    let f = f as usize;
                    self.f_rem[f] = 0.0;
                    self.f_finish[f] = self.now;
                    let c = self.f_coflow[f] as usize;
                    self.c_num_left[c] -= 1;
                    if self.c_num_left[c] == 0 {
                        self.c_finish[c] = self.now;
                    }
                    let r = self.f_reducer[f] as usize;
                    let row_end = self.c_first[c] + (r as u32 - self.c_rfirst[c] + 1) * self.c_mappers[c].len() as u32;
                    if fetch_limit.is_some() && r_next[r] < row_end {
                        joining.push(r_next[r]);
                        r_next[r] += 1;
                    }
                }
            }
            // Pairs left without flows give up their slots (the last slot moves in).
            for &p in &done {
                let p = p as usize;
                if count[p] > 0 {
                    continue;
                }
                let i = slot_of[p] as usize;
                served_idle[p] = served[i];
                slot_of[p] = u32::MAX;
                let last = pair.len() - 1;
                slot_of[pair[last] as usize] = i as u32;
                pair.swap_remove(i);
                src.swap_remove(i);
                dst.swap_remove(i);
                served.swap_remove(i);
                first_end.swap_remove(i);
                rate.swap_remove(i);
                inv.swap_remove(i);
                due.swap_remove(i);
            }
        }
    }

    /// Finishes the running flows with (almost) nothing left, and their coflows.
    fn complete_flows(&mut self) {
        let n2 = 2 * self.n;
        let mut any = false;
        self.scratch.clear();
        for k in 0..self.running.len() {
            let f = self.running[k] as usize;
            if self.f_rem[f] > self.f_size[f] * DONE_TOL {
                continue;
            }
            let c = self.f_coflow[f] as usize;
            for p in [self.f_src[f] as usize, self.n + self.f_dst[f] as usize] {
                let i = c * n2 + p;
                self.c_cnt[i] -= 1;
                // INVARIANT: a port without live flows carries no load (no rounding residue).
                self.c_load[i] = if self.c_cnt[i] == 0 { 0.0 } else { self.c_load[i] - self.f_rem[f] };
            }
            self.f_rem[f] = 0.0;
            self.f_finish[f] = self.now;
            self.c_num_left[c] -= 1;
            if self.c_num_left[c] == 0 {
                self.c_finish[c] = self.now;
                self.order_stale = true;
            }
            self.scratch.push(self.f_reducer[f]);
            any = true;
        }
        if !any {
            return;
        }
        let mut reducers = std::mem::take(&mut self.scratch);
        reducers.sort_unstable();
        reducers.dedup();
        for &r in &reducers {
            let rem = &self.f_rem;
            self.r_live[r as usize].retain(|&f| rem[f as usize] > 0.0);
        }
        reducers.clear();
        self.scratch = reducers;
        let left = &self.c_num_left;
        self.active.retain(|&c| left[c as usize] > 0);
    }

    /// Collects the live flows of coflow `c` into `scratch` (appending).
    fn push_live(&mut self, c: u32) {
        for r in self.reducers(c) {
            self.scratch.extend_from_slice(&self.r_live[r]);
        }
    }

    /// Collects the live flows of coflow `c` whose two ports both have capacity left into
    /// `scratch`. PERF: the others would get zero from max-min anyway; D-CLAS fills coflow
    /// after coflow on what is left, and skipping them halved its time on the full trace.
    fn push_open(&mut self, c: u32) {
        for r in self.reducers(c) {
            if self.res.ingress[self.r_dst[r] as usize] <= self.res.eps {
                continue;
            }
            for &f in &self.r_live[r] {
                if self.res.egress[self.f_src[f as usize] as usize] > self.res.eps {
                    self.scratch.push(f);
                }
            }
        }
    }

    /// Sets every active flow's rate for the scheduler, and `running`.
    fn allocate(&mut self) {
        for &f in &self.running {
            self.f_rate[f as usize] = 0.0;
        }
        for &c in &self.active {
            self.c_rate[c as usize] = 0.0;
        }
        self.running.clear();
        self.res.reset(self.fabric);
        self.scratch.clear();
        match self.sched {
            Scheduler::Fair => {
                for k in 0..self.active.len() {
                    self.push_live(self.active[k]);
                }
                self.fill_scratch_maxmin();
            }
            Scheduler::Fetch(k) => {
                for &c in &self.active {
                    for r in self.reducers(c) {
                        let live = &self.r_live[r];
                        self.scratch.extend_from_slice(&live[..live.len().min(k as usize)]);
                    }
                }
                self.fill_scratch_maxmin();
            }
            Scheduler::Pfp => {
                // PERF: the order persists between events (new coflows' flows appended,
                // finished ones dropped), so the sort sees nearly sorted input; re-sorting the
                // live flows from scratch at every event made PFP the slowest scheduler.
                let mut order = std::mem::take(&mut self.order);
                for c in self.num_ordered..self.num_admitted {
                    for r in self.reducers(c as u32) {
                        order.extend_from_slice(&self.r_live[r]);
                    }
                }
                self.num_ordered = self.num_admitted;
                let rem = &self.f_rem;
                order.retain(|&f| rem[f as usize] > 0.0);
                // Smallest remaining first; ties by flow id (arrival, then trace order).
                order.sort_by(|&a, &b| rem[a as usize].total_cmp(&rem[b as usize]).then(a.cmp(&b)));
                for &f in &order {
                    if self.res.is_saturated() {
                        break;
                    }
                    self.greedy(f);
                }
                self.order = order;
            }
            Scheduler::Dclas => {
                let mut order = std::mem::take(&mut self.order);
                order.clear();
                order.extend_from_slice(&self.active);
                // Strict priority across queues, FIFO (arrival) within one.
                order.sort_by_key(|&c| (self.queue(c), c));
                for &c in &order {
                    if self.res.is_saturated() {
                        break;
                    }
                    if !self.has_open_pair(c) {
                        continue;
                    }
                    self.scratch.clear();
                    self.push_open(c);
                    self.fill_scratch_maxmin();
                }
                self.order = order;
            }
            Scheduler::Sincronia => {
                let order = self.take_order();
                self.backfill(&order);
                self.order = order;
            }
            Scheduler::Fifo | Scheduler::Scf | Scheduler::Ncf | Scheduler::Lcf | Scheduler::Sebf => {
                let order = self.take_order();
                for &c in &order {
                    if self.res.is_saturated() {
                        break;
                    }
                    self.madd(c);
                }
                // Work conservation: backfill greedily in the same order.
                if self.opts.backfill {
                    self.backfill(&order);
                }
                self.order = order;
            }
        }
        // INVARIANT: no port is over capacity...
        debug_assert!(self.res.egress.iter().chain(&self.res.ingress).all(|&c| c >= -self.res.eps * 1e3));
        // ...and, for a work-conserving scheduler, every waiting flow has a full port.
        #[cfg(debug_assertions)]
        if self.sched.is_work_conserving() && (self.opts.backfill || !self.is_madd()) {
            for &c in &self.active {
                for r in self.reducers(c) {
                    for &f in &self.r_live[r] {
                        let (s, d) = (self.f_src[f as usize], self.f_dst[f as usize]);
                        debug_assert!(
                            self.res.headroom(s, d) == 0.0,
                            "{}: flow {f} could use {} more at t = {}",
                            self.sched.name(),
                            self.res.headroom(s, d),
                            self.now
                        );
                    }
                }
            }
        }
    }

    #[cfg(debug_assertions)]
    fn is_madd(&self) -> bool {
        matches!(self.sched, Scheduler::Fifo | Scheduler::Scf | Scheduler::Ncf | Scheduler::Lcf | Scheduler::Sebf)
    }

    /// Whether coflow `c` has an open egress and an open ingress among the ports of its live
    /// flows: necessary for any of them to get capacity, and O(ports) to check.
    fn has_open_pair(&self, c: u32) -> bool {
        let base = c as usize * 2 * self.n;
        let (mut out, mut inn) = (false, false);
        for &p in &self.c_ports[c as usize] {
            let p = p as usize;
            if self.c_cnt[base + p] > 0 && self.free(p) > self.res.eps {
                if p < self.n {
                    out = true;
                } else {
                    inn = true;
                }
            }
        }
        out && inn
    }

    /// Greedy allocation (each flow all its ports have left) over the coflows in `order`.
    fn backfill(&mut self, order: &[u32]) {
        for &c in order {
            if self.res.is_saturated() {
                return;
            }
            if !self.has_open_pair(c) {
                continue;
            }
            for r in self.reducers(c) {
                if self.res.ingress[self.r_dst[r] as usize] <= self.res.eps {
                    continue;
                }
                for k in 0..self.r_live[r].len() {
                    let f = self.r_live[r][k];
                    self.greedy(f);
                }
            }
        }
    }

    /// Max-min fair rates for the flows in `scratch` on the residual capacity.
    fn fill_scratch_maxmin(&mut self) {
        self.maxmin.fill(&self.scratch, &self.f_src, &self.f_dst, &mut self.res, &mut self.f_rate);
        for &f in &self.scratch {
            let r = self.f_rate[f as usize];
            if r > 0.0 {
                self.running.push(f);
                self.c_rate[self.f_coflow[f as usize] as usize] += r;
            }
        }
    }

    /// Gives flow `f` all the capacity its two ports have left.
    fn greedy(&mut self, f: u32) {
        let (s, d) = (self.f_src[f as usize], self.f_dst[f as usize]);
        let h = self.res.headroom(s, d);
        if h > 0.0 {
            if self.f_rate[f as usize] == 0.0 {
                self.running.push(f);
            }
            self.f_rate[f as usize] += h;
            self.res.take(s, d, h);
        }
    }

    /// Coflow `c`'s bottleneck time: its remaining bytes per port over `cap_of(port)`, max
    /// over its ports; `None` if a port it needs has no capacity.
    fn gamma(&self, c: u32, cap_of: impl Fn(usize) -> f64) -> Option<f64> {
        let base = c as usize * 2 * self.n;
        let mut gamma = 0.0f64;
        for &p in &self.c_ports[c as usize] {
            let p = p as usize;
            if self.c_cnt[base + p] == 0 {
                continue;
            }
            let cap = cap_of(p);
            if cap <= self.res.eps {
                return None;
            }
            gamma = gamma.max((self.c_load[base + p] * self.c_scale[c as usize]).max(0.0) / cap);
        }
        Some(gamma)
    }

    /// MADD (Varys §5.3): rates `rem / Gamma` with `Gamma` the coflow's bottleneck time on
    /// the residual capacity; nothing if one of its ports is full.
    fn madd(&mut self, c: u32) {
        let Some(gamma) = self.gamma(c, |p| self.free(p)) else { return };
        if gamma <= 0.0 {
            return;
        }
        for r in self.reducers(c) {
            for k in 0..self.r_live[r].len() {
                let f = self.r_live[r][k] as usize;
                // Never more than the ports have left (rounding in Gamma).
                let rate = (self.f_rem[f] / gamma).min(self.res.headroom(self.f_src[f], self.f_dst[f]));
                if rate > 0.0 {
                    self.f_rate[f] = rate;
                    self.c_rate[c as usize] += rate;
                    self.running.push(f as u32);
                    self.res.take(self.f_src[f], self.f_dst[f], rate);
                }
            }
        }
    }

    /// Coflow `c`'s remaining bytes (LCF's key).
    fn remaining_bytes(&self, c: u32) -> f64 {
        if self.is_scaled() {
            self.c_scale[c as usize] * self.c_qsum[c as usize]
        } else {
            self.c_total[c as usize] - self.c_sent[c as usize]
        }
    }

    /// The coflow order (Sincronia's BSSI, else the ordered schedulers' key), recomputed only
    /// when `order_stale`; taken out of `self` for the caller to put back.
    fn take_order(&mut self) -> Vec<u32> {
        if self.order_stale {
            self.order = if self.sched == Scheduler::Sincronia { self.bssi_order() } else { self.coflow_order() };
            self.order_stale = false;
        }
        std::mem::take(&mut self.order)
    }

    /// The order of the active coflows for FIFO, SCF, NCF, LCF and SEBF (ties by arrival).
    fn coflow_order(&mut self) -> Vec<u32> {
        let order = self.active.clone();
        let key: Vec<f64> = match self.sched {
            Scheduler::Fifo => return order,
            Scheduler::Scf => order.iter().map(|&c| self.c_longest[c as usize]).collect(),
            Scheduler::Ncf => order.iter().map(|&c| self.c_narrowness[c as usize] as f64).collect(),
            Scheduler::Lcf => order.iter().map(|&c| tie_key(self.remaining_bytes(c))).collect(),
            // Effective bottleneck of the remaining bytes on the idle fabric.
            _ => order.iter().map(|&c| tie_key(self.gamma(c, |p| self.cap(p)).unwrap_or(f64::INFINITY))).collect(),
        };
        let mut idx: Vec<usize> = (0..order.len()).collect();
        idx.sort_by(|&a, &b| key[a].total_cmp(&key[b]).then(order[a].cmp(&order[b])));
        idx.into_iter().map(|i| order[i]).collect()
    }

    /// Sincronia's BSSI (Algorithm 1) over the active coflows, unit weights. Loads are in
    /// seconds (bytes over the port's capacity) so ports of unequal speed compare.
    fn bssi_order(&mut self) -> Vec<u32> {
        let n2 = 2 * self.n;
        let k = self.active.len();
        let load = |e: &Engine<'_>, i: usize, p: usize| {
            let c = e.active[i] as usize;
            e.c_load[c * n2 + p].max(0.0) / e.cap(p)
        };
        let mut total = vec![0.0f64; n2];
        for i in 0..k {
            for &p in &self.c_ports[self.active[i] as usize] {
                total[p as usize] += load(self, i, p as usize);
            }
        }
        let mut weight = vec![1.0f64; k];
        let mut unordered: Vec<usize> = (0..k).collect();
        let mut order = vec![0u32; k];
        for slot in (0..k).rev() {
            // The most loaded port (lowest index on ties).
            let b = (0..n2).fold(0usize, |best, p| if total[p] > total[best] { p } else { best });
            // Among coflows on it, the smallest weight / load goes last (ties: later arrival).
            let mut pick: Option<(usize, usize)> = None;
            let mut best = f64::INFINITY;
            for (pos, &i) in unordered.iter().enumerate() {
                let d = load(self, i, b);
                if d > 0.0 {
                    let r = weight[i] / d;
                    if r < best || (r == best && pick.is_some_and(|(_, j)| i > j)) {
                        best = r;
                        pick = Some((pos, i));
                    }
                }
            }
            // If no unordered coflow loads any port (loads all zero), take the latest.
            let (pos, i) = pick.unwrap_or((unordered.len() - 1, unordered[unordered.len() - 1]));
            let db = load(self, i, b);
            if db > 0.0 {
                for &j in &unordered {
                    let d = load(self, j, b);
                    if j != i && d > 0.0 {
                        weight[j] -= weight[i] * d / db;
                    }
                }
            }
            for &p in &self.c_ports[self.active[i] as usize] {
                total[p as usize] -= load(self, i, p as usize);
            }
            unordered.remove(pos);
            order[slot] = self.active[i];
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testrng::{random_trace as random_trace_of, TraceShape};
    use crate::trace::BYTES_PER_MB;

    /// 1 MiB per second, so a flow of `k` MB alone takes `k` seconds.
    fn opts() -> Options {
        Options { port_bytes_per_sec: BYTES_PER_MB, record_flows: true, ..Options::default() }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-6 * b.abs().max(1.0)
    }

    /// Up to 8 coflows of up to 4 x 4 flows on 3 to 8 ports, 1 to 6 MB per flow.
    fn random_trace(seed: u64) -> Trace {
        random_trace_of(seed, &TraceShape { ports: 6, coflows: 8, gap: 3000, width: 4, mb: 6 })
    }

    #[test]
    fn random_traces_finish_every_coflow_no_sooner_than_ideal_and_conserve_bytes() {
        let mut schedulers = Scheduler::ALL.to_vec();
        schedulers.extend([Scheduler::Fetch(1), Scheduler::Fetch(2)]);
        for seed in 0..200 {
            let t = random_trace(seed);
            for &s in &schedulers {
                let out = run(&t, s, &opts());
                assert_eq!(out.coflows.len(), t.coflows.len());
                let mut bytes = 0.0;
                for c in &out.coflows {
                    assert!(c.finish_s.is_finite(), "seed {seed} {}: coflow {} unfinished", s.name(), c.id);
                    assert!(
                        c.cct_s >= c.ideal_cct_s * (1.0 - 1e-9),
                        "seed {seed} {}: coflow {} beats its bound ({} < {})",
                        s.name(),
                        c.id,
                        c.cct_s,
                        c.ideal_cct_s
                    );
                    bytes += c.bytes;
                }
                // Conservation: the flows delivered exactly the trace's bytes, each by its
                // coflow's finish, and the last one at it.
                let spec_bytes: f64 = t.coflows.iter().map(|c| c.total_bytes()).sum();
                let flow_bytes: f64 = out.flows.iter().map(|f| f.bytes).sum();
                assert!(close(bytes, spec_bytes) && close(flow_bytes, spec_bytes));
                for c in &out.coflows {
                    let last = out.flows.iter().filter(|f| f.coflow_id == c.id).map(|f| f.finish_s).fold(0.0, f64::max);
                    assert_eq!(last, c.finish_s, "seed {seed} {}", s.name());
                }
            }
        }
    }


    #[test]
    fn same_input_same_output() {
        for seed in [3, 17, 99] {
            let t = random_trace(seed);
            for s in Scheduler::ALL {
                assert_eq!(run(&t, s, &opts()), run(&t, s, &opts()), "{}", s.name());
            }
        }
    }


    #[test]
    fn fair_per_pair_agrees_with_per_flow_max_min() {
        // FAIR runs per port pair; fetch:K with K above every coflow's mapper count is the same
        // max-min allocation computed flow by flow.
        for seed in 0..100 {
            let t = random_trace(seed);
            let pair = run(&t, Scheduler::Fair, &opts());
            let flow = run(&t, Scheduler::Fetch(1000), &opts());
            for (a, b) in pair.coflows.iter().zip(&flow.coflows) {
                assert!(close(a.finish_s, b.finish_s), "seed {seed}: coflow {} {} vs {}", a.id, a.finish_s, b.finish_s);
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for s in Scheduler::ALL {
            assert_eq!(Scheduler::from_name(&s.name()), Some(s));
        }
        assert_eq!(Scheduler::from_name("FETCH:3"), Some(Scheduler::Fetch(3)));
        assert_eq!(Scheduler::from_name("fetch:0"), None);
        assert_eq!(Scheduler::from_name("nope"), None);
    }
}
