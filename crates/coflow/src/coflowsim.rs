//! A coflowsim-compatible mode: the reference simulator's rules, step for step.
//!
//! coflowsim (github.com/coflow/coflowsim, commit b61f209, Java) is the simulator the Varys and
//! Aalo papers report their trace-driven results with. This module re-implements its rules in
//! our own Rust so that, on the same trace, every coflow gets the same start, finish and
//! duration as coflowsim prints (`coflowsim_b61f209_results/*.out`), number for number. It is a
//! compatibility mode, not a model we recommend: [`crate::inter`] is the idealised,
//! event-driven model. The rules, as read from coflowsim's source:
//!
//! - **Time.** A "second" is 1024 ms. A port moves `2^30 / 8` bytes per such second, i.e.
//!   1 MiB per 8 ms step (`SIMULATION_QUANTA`). Coflows are admitted per 10240 ms epoch: at
//!   epoch start `t`, every coflow with arrival `<= t + 10240` is admitted *and starts at `t`*
//!   (so a coflow can start before its arrival). Within an epoch the simulator runs 8 ms steps
//!   while any coflow is active. A reducer that empties during the step starting at `t` finishes
//!   at `t + 8`. A coflow's start is its admission epoch; its finish is its last reducer's.
//! - **Sizes.** A reducer's MB are read as MiB, rounded up to a whole MiB, then up to a multiple
//!   of `num_mappers` MiB; each flow gets `reducer bytes / num_mappers` (at least 1 MiB).
//!   Mappers and reducers are ordered by rack. A flow is done when at most `1e-3` bytes remain.
//! - **FAIR** (`FlowSimulator.fairShare`): each step, a flow into port `d` from port `s` moves
//!   `min(1 MiB / n_d, 1 MiB / n_s)` where `n_d` counts the flows into `d` and `n_s` those out of
//!   `s` (not max-min fairness: leftover capacity is not redistributed). **FAIR5** is the same
//!   with at most 5 flows per reducer at a time (Hadoop's parallel copies), the next one
//!   added when one finishes.
//! - **PFP** (`proceedFlowsInAllRacksInSortedOrder`): each receiving port serves one flow per
//!   step, the first in its list (kept in insertion order by flow size) whose sender is not yet
//!   busy this step, at the full 1 MiB.
//! - **FIFO, SCF, NCF, LCF, SEBF** (`CoflowSimulator`): coflows are ordered by arrival (FIFO),
//!   longest flow (SCF, "shortest"), `min(mappers, reducers)` (NCF, "narrowest"), remaining
//!   bytes at admission (LCF, "lightest") or the static bottleneck bytes (SEBF), a new coflow
//!   inserted before the first with a strictly larger key. Rates change only at admissions and
//!   coflow departures: in order, each coflow gets MADD rates `remaining * 8 / Gamma` with
//!   `Gamma` its bottleneck time on the capacity left (Varys §5.3); coflows that find a port
//!   full share the rest per-flow; then the leftover is handed out greedily, coflows in order
//!   of `(int)(start + deadline - now)` (their random "deadline"), flows in rack order.
//! - **DARK** (`CoflowSimulatorDark`, Aalo's D-CLAS): 10 queues with thresholds 10 MiB x 10^k
//!   on bytes sent; FIFO within a queue, strict priority across queues; each coflow's flows get
//!   `min(free_s / n_s, free_d / n_d)` counted within the coflow; a coflow moves down at most
//!   one queue per pass at admissions and departures.
//!
//! Each printed column is reproduced: `JOB-id start finish mappers reducers total_bytes
//! max_reducer_bytes duration round(deadline) sum_of_reducer_durations`. The "deadline" is
//! `bottleneck bytes / port rate * (1 + U) * 1000` with `U` drawn from Java's `Random(17)`
//! (`U = 0` for DARK); it also orders the work-conserving refill above.
//!
//! **Status** (FB2010 trace, against `coflowsim_b61f209_results/*.out`; `coflow_bench` and the
//! ignored test `every_scheduler_matches_on_the_whole_trace` check it): every column of every
//! coflow equal for all nine: FAIR, FAIR5, PFP, FIFO, SCF, NCF, LCF, SEBF and DARK (526/526
//! each, maximum relative CCT difference 0). FAIR5 is not a
//! scheduler of b61f209's command line (its `FAIR` branch overrides the 5-flow cap); the
//! reference must come from a build without that override, and FAIR with the cap matches it.
//!
//! **Cost.** This mode is slow on purpose: it steps 8 ms at a time and visits every flow with a
//! positive rate at every step, as coflowsim does. CPU time on the full trace (release, one
//! core of a shared machine): PFP 1.6 s, FAIR5 11 s, FAIR 83 s, FIFO/SCF/NCF/LCF/SEBF/DARK
//! 2 to 3 minutes each. A faster exact mode would fast-forward a
//! flow's repeated `rem -= b` between rate changes (within one binade of `rem` the rounded
//! decrement is constant after one step, so k steps can be jumped at once), but the per-reducer
//! and per-coflow sums must then be replayed in the same order, which is the hard part.
//!
//! CORRECTNESS: floating-point operations are done in coflowsim's order (per step, per port,
//! per flow in its port list), because a flow's finish step depends on whether its remaining
//! bytes drop below 1e-3, and the sums that decide it are rounded. Flows whose rate is zero are
//! skipped in a step: in coflowsim they move no bytes and change no state.

use crate::trace::Trace;

/// Bytes a port moves in one second of coflowsim (`RACK_BITS_PER_SEC / 8`).
const RACK_BYTES_PER_SEC: f64 = 1024.0 * 1_048_576.0 / 8.0;
/// Bits per second of a port (`RACK_BITS_PER_SEC`).
const RACK_BITS_PER_SEC: f64 = 1024.0 * 1_048_576.0;
/// Milliseconds in a coflowsim second.
const SECOND_MS: i64 = 1024;
/// The step: 8 ms, the time a port takes for 1 MiB.
const QUANTA_MS: i64 = SECOND_MS / (RACK_BYTES_PER_SEC as i64 / 1_048_576);
/// The float tolerance coflowsim calls `ZERO`.
const ZERO: f64 = 1e-3;
/// Aalo's queues in coflowsim: count, first threshold and multiplier.
const DARK_QUEUES: usize = 10;
const DARK_FIRST_LIMIT: f64 = 1_048_576.0 * 10.0;
const DARK_MULT: f64 = 10.0;
/// Java's `Double.MIN_VALUE` (the smallest subnormal), where coflowsim's `Utils.max` starts.
const JAVA_MIN_VALUE: f64 = 4.9e-324;
/// Hadoop's parallel copies per reducer, for FAIR5.
const FAIR5_FLOWS: usize = 5;

/// The coflowsim schedulers (its `SHARING_ALGO`, plus FAIR5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algo {
    /// Per-flow fair sharing (coflowsim's definition, see the module doc).
    Fair,
    /// FAIR with at most 5 concurrent flows per reducer.
    Fair5,
    /// Per-flow prioritisation, smallest flow first.
    Pfp,
    /// Coflows first in, first out.
    Fifo,
    /// Shortest coflow (longest flow) first.
    Scf,
    /// Narrowest coflow (`min(mappers, reducers)`) first.
    Ncf,
    /// Lightest coflow (remaining bytes) first.
    Lcf,
    /// Smallest effective bottleneck first with MADD (Varys).
    Sebf,
    /// Aalo's D-CLAS.
    Dark,
}

impl Algo {
    /// Every scheduler, in the order of the reference result files.
    pub const ALL: [Algo; 9] = [
        Algo::Fair,
        Algo::Fair5,
        Algo::Pfp,
        Algo::Fifo,
        Algo::Scf,
        Algo::Ncf,
        Algo::Lcf,
        Algo::Sebf,
        Algo::Dark,
    ];

    /// The name coflowsim's command line and result files use (`FAIR`, `SEBF`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Algo::Fair => "FAIR",
            Algo::Fair5 => "FAIR5",
            Algo::Pfp => "PFP",
            Algo::Fifo => "FIFO",
            Algo::Scf => "SCF",
            Algo::Ncf => "NCF",
            Algo::Lcf => "LCF",
            Algo::Sebf => "SEBF",
            Algo::Dark => "DARK",
        }
    }

    /// Parses a name as [`Algo::name`] prints it (case-insensitive).
    pub fn from_name(name: &str) -> Option<Algo> {
        Algo::ALL.into_iter().find(|a| a.name().eq_ignore_ascii_case(name))
    }

    fn is_flow_level(self) -> bool {
        matches!(self, Algo::Fair | Algo::Fair5 | Algo::Pfp)
    }
}

/// Knobs of the compatible mode; [`Options::default`] is coflowsim's own setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Stop at this time (ms); coflows unfinished by then get finish `-1`, as in coflowsim.
    /// Default: coflowsim's `SIMULATION_ENDTIME_MILLIS`, 86400 * 1024.
    pub end_ms: i64,
}

impl Default for Options {
    fn default() -> Self {
        Options { end_ms: 86_400 * SECOND_MS }
    }
}

/// One output line of coflowsim, for one coflow.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The trace's coflow id (`JOB-<id>`).
    pub id: u64,
    /// Simulated start: the admission epoch (ms).
    pub start_ms: f64,
    /// Simulated finish (ms), `-1` if unfinished (some reducer still running).
    pub finish_ms: f64,
    /// Mapper racks.
    pub num_mappers: u32,
    /// Reducer racks.
    pub num_reducers: u32,
    /// Bytes after coflowsim's rounding.
    pub total_bytes: f64,
    /// The largest reducer's bytes.
    pub max_reducer_bytes: f64,
    /// `finish - start`, or `-1` if unfinished.
    pub duration_ms: f64,
    /// The rounded "deadline" column.
    pub deadline_ms: i64,
    /// Sum over reducers of their own finish minus start.
    pub reducer_duration_sum_ms: f64,
}

/// Why a reference line could not be read.
#[derive(Debug, thiserror::Error)]
#[error("reference line {line}: {what}")]
pub struct ReferenceError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub what: String,
}

/// Reads coflowsim's output (`JOB-id start finish ...` lines; the final total line is skipped).
pub fn parse_reference(text: &str) -> Result<Vec<Record>, ReferenceError> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.is_empty() || !t[0].starts_with("JOB-") {
            continue;
        }
        let err = |what: &str| ReferenceError { line: i + 1, what: what.to_string() };
        if t.len() != 10 {
            return Err(err("expected 10 columns"));
        }
        let f = |k: usize| t[k].parse::<f64>().map_err(|_| err(&format!("column {} is not a number", k + 1)));
        out.push(Record {
            id: t[0][4..].parse().map_err(|_| err("bad JOB id"))?,
            start_ms: f(1)?,
            finish_ms: f(2)?,
            num_mappers: f(3)? as u32,
            num_reducers: f(4)? as u32,
            total_bytes: f(5)?,
            max_reducer_bytes: f(6)?,
            duration_ms: f(7)?,
            deadline_ms: f(8)? as i64,
            reducer_duration_sum_ms: f(9)?,
        });
    }
    Ok(out)
}

/// How our records compare with a reference file.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Coflows present in both.
    pub num_compared: usize,
    /// Coflows whose every column is equal.
    pub num_exact: usize,
    /// Largest `|ours - reference| / reference` of the duration over compared coflows.
    pub max_rel_diff: f64,
}

/// Compares `ours` with `reference` by coflow id. With `only_finished`, coflows we left
/// unfinished (a run cut short by [`Options::end_ms`]) are not compared.
pub fn compare(ours: &[Record], reference: &[Record], only_finished: bool) -> Comparison {
    let by_id: std::collections::HashMap<u64, &Record> = reference.iter().map(|r| (r.id, r)).collect();
    let mut c = Comparison::default();
    for r in ours {
        if only_finished && r.finish_ms < 0.0 {
            continue;
        }
        let Some(x) = by_id.get(&r.id) else { continue };
        c.num_compared += 1;
        if r == *x {
            c.num_exact += 1;
        }
        let rel = (r.duration_ms - x.duration_ms).abs() / x.duration_ms.abs().max(1.0);
        c.max_rel_diff = c.max_rel_diff.max(rel);
    }
    c
}

/// Java's `java.util.Random` (a 48-bit LCG), for the "deadline" column.
#[derive(Debug)]
struct JavaRandom(u64);

impl JavaRandom {
    const MULT: u64 = 0x5_DEEC_E66D;
    const MASK: u64 = (1 << 48) - 1;

    fn new(seed: u64) -> Self {
        JavaRandom((seed ^ Self::MULT) & Self::MASK)
    }

    fn next(&mut self, bits: u32) -> u64 {
        self.0 = (self.0.wrapping_mul(Self::MULT).wrapping_add(0xB)) & Self::MASK;
        self.0 >> (48 - bits)
    }

    fn next_double(&mut self) -> f64 {
        let hi = self.next(26);
        let lo = self.next(27);
        ((hi << 27) + lo) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[derive(Debug)]
struct Job {
    id: u64,
    arrival: f64,
    mappers: Vec<u32>,
    reducers: std::ops::Range<usize>,
    total_bytes: f64,
    max_bytes: f64,
    alpha: f64,
    deadline: f64,
    start: f64,
    finish: f64,
    reducer_sum: f64,
    bytes_completed: f64,
    queue: usize,
    is_active: bool,
    num_active_tasks: u32,
}

#[derive(Debug)]
struct Reducer {
    rack: u32,
    job: u32,
    /// `shuffleBytesLeft`.
    left: f64,
    /// The job's `shuffleBytesPerRack` entry for this rack (only LCF reads it).
    per_rack_left: f64,
    start: f64,
    finish: f64,
    flows: std::ops::Range<usize>,
    /// Flows still in coflowsim's `rt.flows`.
    num_flows: usize,
    /// FAIR5: no flow before this index is unconsidered.
    cursor: usize,
}

#[derive(Debug)]
struct Sim {
    algo: Algo,
    num_ports: usize,
    jobs: Vec<Job>,
    reducers: Vec<Reducer>,
    f_src: Vec<u32>,
    f_red: Vec<u32>,
    f_size: Vec<f64>,
    f_rem: Vec<f64>,
    f_bps: Vec<f64>,
    /// Still in its reducer's `rt.flows`.
    f_in_rt: Vec<bool>,
    f_considered: Vec<bool>,
    /// Marked for `removeAll` at the end of its port's pass.
    f_remove: Vec<bool>,
    /// `flowsInRacks`: flows by receiving port, in coflowsim's order.
    racks: Vec<Vec<u32>>,
    /// CoflowSimulator family: the flows of `racks[i]` with a positive rate, same order.
    live: Vec<Vec<u32>>,
    /// FAIR: flows out of each port over all lists (duplicates counted, as coflowsim does).
    num_out: Vec<u32>,
    /// Coflow order (FIFO..SEBF) or DARK's queues (`queues[0]` otherwise).
    queues: Vec<Vec<u32>>,
    send_free: Vec<f64>,
    recv_free: Vec<f64>,
    num_active_jobs: usize,
    num_active_tasks: i64,
}

/// Runs coflowsim's scheduler `algo` over `trace` with coflowsim's defaults.
pub fn run(trace: &Trace, algo: Algo) -> Vec<Record> {
    run_with(trace, algo, &Options::default())
}

/// [`run`] with the scheduler given by name (`FAIR`, `FAIR5`, `PFP`, `FIFO`, `SCF`, `NCF`, `LCF`,
/// `SEBF`, `DARK`, any case); `None` for an unknown name.
pub fn run_named(trace: &Trace, name: &str) -> Option<Vec<Record>> {
    Algo::from_name(name).map(|algo| run(trace, algo))
}

/// Runs coflowsim's scheduler `algo` over `trace`. Records come in coflowsim's output order
/// (by arrival, ties in trace order).
pub fn run_with(trace: &Trace, algo: Algo, opts: &Options) -> Vec<Record> {
    let mut sim = Sim::new(trace, algo);
    sim.simulate(opts.end_ms);
    sim.records()
}

/// Rounds `bytes` up to a whole multiple of `n` MiB, through a Java `long` as coflowsim does.
fn round_to_mib_multiple(bytes: f64, n: u64) -> f64 {
    let tmp = bytes as i64;
    let mult = (n * 1_048_576) as i64;
    let mut num = tmp / mult;
    if tmp % mult > 0 {
        num += 1;
    }
    (mult * num) as f64
}

impl Sim {
    fn new(trace: &Trace, algo: Algo) -> Sim {
        let num_ports = trace.num_ports as usize;
        let mut order: Vec<usize> = (0..trace.coflows.len()).collect();
        // JobCollection.sortByStartTime: a stable sort by arrival.
        order.sort_by_key(|&i| trace.coflows[i].arrival_ms);
        let mut rng = JavaRandom::new(17);
        let deadline_factor = if algo == Algo::Dark { 0.0 } else { 1.0 };
        let mut sim = Sim {
            algo,
            num_ports,
            jobs: Vec::new(),
            reducers: Vec::new(),
            f_src: Vec::new(),
            f_red: Vec::new(),
            f_size: Vec::new(),
            f_rem: Vec::new(),
            f_bps: Vec::new(),
            f_in_rt: Vec::new(),
            f_considered: Vec::new(),
            f_remove: Vec::new(),
            racks: vec![Vec::new(); num_ports],
            live: vec![Vec::new(); num_ports],
            num_out: vec![0; num_ports],
            queues: vec![Vec::new(); DARK_QUEUES],
            send_free: vec![RACK_BITS_PER_SEC; num_ports],
            recv_free: vec![RACK_BITS_PER_SEC; num_ports],
            num_active_jobs: 0,
            num_active_tasks: 0,
        };
        for &ci in &order {
            let c = &trace.coflows[ci];
            let mut mappers = c.mappers.clone();
            mappers.sort_unstable();
            let mut reds: Vec<(u32, f64)> = c
                .reducers
                .iter()
                // ReduceTask's constructor: MB * 1048576, rounded up to a whole MiB.
                .map(|r| (r.rack, round_to_mib_multiple(r.mb * 1_048_576.0, 1)))
                .collect();
            reds.sort_by_key(|r| r.0);
            let m = mappers.len() as u64;
            let job = sim.jobs.len() as u32;
            let first = sim.reducers.len();
            let (mut total, mut max) = (0.0f64, 0.0f64);
            for &(rack, per_rack) in &reds {
                // Job.coalesceReducers: rounded up to a multiple of num_mappers MiB.
                let bytes = round_to_mib_multiple(per_rack, m);
                total += bytes;
                max = max.max(bytes);
                let f0 = sim.f_src.len();
                let size = (bytes / m as f64).max(1_048_576.0);
                for &src in &mappers {
                    sim.f_src.push(src);
                    sim.f_red.push(sim.reducers.len() as u32);
                    sim.f_size.push(size);
                    sim.f_rem.push(size);
                }
                sim.reducers.push(Reducer {
                    rack,
                    job,
                    left: bytes,
                    per_rack_left: per_rack,
                    start: -1.0,
                    finish: -1.0,
                    flows: f0..sim.f_src.len(),
                    num_flows: mappers.len(),
                    cursor: f0,
                });
            }
            // Job.calcAlphaDeadline.
            let per_mapper = total / m as f64;
            let max_recv = sim.reducers[first..].iter().fold(JAVA_MIN_VALUE, |a, r| {
                let b = r.left;
                if b > a {
                    b
                } else {
                    a
                }
            });
            let alpha = if per_mapper > max_recv { per_mapper } else { max_recv };
            let mult = 1.0 + rng.next_double() * deadline_factor;
            let deadline = alpha / RACK_BYTES_PER_SEC * mult * 1000.0;
            sim.jobs.push(Job {
                id: c.id,
                arrival: c.arrival_ms as f64,
                mappers,
                reducers: first..sim.reducers.len(),
                total_bytes: total,
                max_bytes: max,
                alpha,
                deadline,
                start: -1.0,
                finish: -1.0,
                reducer_sum: 0.0,
                bytes_completed: 0.0,
                queue: 0,
                is_active: false,
                num_active_tasks: 0,
            });
        }
        let n = sim.f_src.len();
        sim.f_bps = vec![0.0; n];
        sim.f_in_rt = vec![true; n];
        sim.f_considered = vec![false; n];
        sim.f_remove = vec![false; n];
        sim
    }

    fn records(&self) -> Vec<Record> {
        self.jobs
            .iter()
            .map(|j| {
                // A coflow cut short by `end_ms` with some reducers done is unfinished too
                // (coflowsim, which never cuts a run short, would print the partial finish).
                let done = j.start >= 0.0 && j.finish >= 0.0 && j.num_active_tasks == 0;
                Record {
                    id: j.id,
                    start_ms: j.start,
                    finish_ms: if done { j.finish } else { -1.0 },
                    num_mappers: j.mappers.len() as u32,
                    num_reducers: j.reducers.len() as u32,
                    total_bytes: j.total_bytes,
                    max_reducer_bytes: j.max_bytes,
                    duration_ms: if done { j.finish - j.start } else { -1.0 },
                    // Java's Math.round: floor(x + 0.5).
                    deadline_ms: (j.deadline + 0.5).floor() as i64,
                    reducer_duration_sum_ms: j.reducer_sum,
                }
            })
            .collect()
    }

    /// Simulator.simulate: epochs of 10 s, steps of 8 ms.
    fn simulate(&mut self, end_ms: i64) {
        let epoch = 10 * SECOND_MS;
        let mut next_job = 0;
        let mut now = 0i64;
        while now < end_ms && (next_job < self.jobs.len() || self.num_active_tasks > 0) {
            let mut added = 0;
            while next_job < self.jobs.len() {
                if self.jobs[next_job].arrival > (now + epoch) as f64 {
                    break;
                }
                added += 1;
                self.admit(next_job as u32, now);
                next_job += 1;
            }
            if added > 0 {
                self.after_admission(now);
            }
            let mut i = 0;
            while i < epoch {
                let before = self.num_active_jobs;
                if before == 0 {
                    break;
                }
                let t = now + i;
                match self.algo {
                    Algo::Fair | Algo::Fair5 => self.fair_share(t),
                    Algo::Pfp => self.pfp_step(t),
                    _ => self.proceed_flows(t),
                }
                if before > self.num_active_jobs {
                    self.after_departure(t);
                }
                i += QUANTA_MS;
            }
            now += epoch;
        }
    }

    /// `uponJobAdmission` of the three simulators.
    fn admit(&mut self, j: u32, now: i64) {
        let job = &mut self.jobs[j as usize];
        for r in job.reducers.clone() {
            self.reducers[r].start = now as f64;
            if job.start < 0.0 || job.start > now as f64 {
                job.start = now as f64;
            }
            job.num_active_tasks += 1;
            job.is_active = true;
            self.num_active_tasks += 1;
        }
        self.num_active_jobs += 1;
        if self.algo.is_flow_level() {
            for r in self.jobs[j as usize].reducers.clone() {
                let flows = self.reducers[r].flows.clone();
                let cap = if self.algo == Algo::Fair5 { FAIR5_FLOWS } else { usize::MAX };
                for f in flows.take(cap) {
                    self.add_ascending(f as u32);
                }
            }
        } else if self.algo == Algo::Dark {
            self.queues[0].push(j);
            self.jobs[j as usize].queue = 0;
        } else {
            self.add_to_sorted(j);
        }
    }

    /// FlowSimulator.addAscending: before the first flow with more bytes left than `f`'s size.
    fn add_ascending(&mut self, f: u32) {
        let rack = self.reducers[self.f_red[f as usize] as usize].rack as usize;
        let size = self.f_size[f as usize];
        let list = &self.racks[rack];
        let at = list.iter().position(|&g| self.f_rem[g as usize] > size).unwrap_or(list.len());
        self.f_considered[f as usize] = true;
        self.racks[rack].insert(at, f);
        self.num_out[self.f_src[f as usize] as usize] += 1;
    }

    /// Job.calcShuffleBytesLeft: the per-rack sums, in rack order.
    fn bytes_left(&self, j: u32) -> f64 {
        self.reducers[self.jobs[j as usize].reducers.clone()].iter().fold(0.0, |s, r| s + r.per_rack_left)
    }

    /// CoflowSimulator.addToSortedJobs: before the first coflow with a strictly larger key.
    fn add_to_sorted(&mut self, j: u32) {
        let key = |sim: &Sim, x: u32| -> f64 {
            let job = &sim.jobs[x as usize];
            match sim.algo {
                Algo::Scf => job.max_bytes / job.mappers.len() as f64,
                Algo::Ncf => job.mappers.len().min(job.reducers.len()) as f64,
                Algo::Lcf => sim.bytes_left(x),
                Algo::Sebf => job.alpha,
                _ => 0.0,
            }
        };
        let q = &self.queues[0];
        let at = if self.algo == Algo::Fifo {
            q.len()
        } else {
            let k = key(self, j);
            q.iter().position(|&s| k < key(self, s)).unwrap_or(q.len())
        };
        self.queues[0].insert(at, j);
    }

    fn after_admission(&mut self, now: i64) {
        match self.algo {
            Algo::Fair | Algo::Fair5 | Algo::Pfp => {}
            Algo::Dark => {
                self.update_job_order();
                self.layout();
                self.dark_rates();
            }
            _ => {
                self.layout();
                self.dynamic_alpha_rates(now);
            }
        }
    }

    fn after_departure(&mut self, now: i64) {
        match self.algo {
            Algo::Fair | Algo::Fair5 | Algo::Pfp => {}
            Algo::Dark => {
                self.update_job_order();
                self.layout();
                self.dark_rates();
            }
            _ => self.dynamic_alpha_rates(now),
        }
    }

    /// layoutFlowsInJobOrder: port lists rebuilt in coflow order.
    fn layout(&mut self) {
        for l in &mut self.racks {
            l.clear();
        }
        for q in 0..self.queues.len() {
            for &j in &self.queues[q] {
                for r in self.jobs[j as usize].reducers.clone() {
                    let red = &self.reducers[r];
                    if red.finish >= 0.0 {
                        continue;
                    }
                    for f in red.flows.clone() {
                        if self.f_in_rt[f] {
                            self.racks[red.rack as usize].push(f as u32);
                        }
                    }
                }
            }
        }
    }

    /// After a rate change: the port lists without completed flows, and their positive-rate
    /// subsequences, which are all a step has to visit.
    fn refresh_live(&mut self) {
        for i in 0..self.num_ports {
            let (rem, bps) = (&self.f_remove, &self.f_bps);
            self.racks[i].retain(|&f| !rem[f as usize]);
            let live = &mut self.live[i];
            live.clear();
            live.extend(self.racks[i].iter().copied().filter(|&f| bps[f as usize] > 0.0));
        }
    }

    fn in_rt_flows(&self, r: usize) -> impl Iterator<Item = usize> + '_ {
        self.reducers[r].flows.clone().filter(move |&f| self.f_in_rt[f])
    }

    /// CoflowSimulator.calcAlphaOnline: the coflow's bottleneck time on the free capacity,
    /// or `None` if it needs a port with none left.
    fn alpha_online(&self, j: u32, send: &mut [f64], recv: &mut [f64]) -> Option<f64> {
        send.iter_mut().for_each(|x| *x = 0.0);
        recv.iter_mut().for_each(|x| *x = 0.0);
        for r in self.jobs[j as usize].reducers.clone() {
            recv[self.reducers[r].rack as usize] = self.reducers[r].left;
            for f in self.in_rt_flows(r) {
                send[self.f_src[f] as usize] += self.f_rem[f];
            }
        }
        for i in 0..self.num_ports {
            if (send[i] > 0.0 && self.send_free[i] <= ZERO) || (recv[i] > 0.0 && self.recv_free[i] <= ZERO) {
                return None;
            }
            send[i] = send[i] * 8.0 / self.send_free[i];
            recv[i] = recv[i] * 8.0 / self.recv_free[i];
        }
        // Utils.max starts at Double.MIN_VALUE and skips NaN (0 / 0 on a full, unused port).
        let max = |a: &[f64]| a.iter().fold(JAVA_MIN_VALUE, |m, &x| if x > m { x } else { m });
        let (s, r) = (max(send), max(recv));
        Some(if s > r { s } else { r })
    }

    /// CoflowSimulator.updateRatesDynamicAlpha (not a trial run).
    fn dynamic_alpha_rates(&mut self, now: i64) {
        let n = self.num_ports;
        self.send_free.iter_mut().for_each(|x| *x = RACK_BITS_PER_SEC);
        self.recv_free.iter_mut().for_each(|x| *x = RACK_BITS_PER_SEC);
        let mut skipped = Vec::new();
        let (mut s_used, mut r_used) = (vec![0.0; n], vec![0.0; n]);
        let (mut s_tmp, mut r_tmp) = (vec![0.0; n], vec![0.0; n]);
        let order = self.queues[0].clone();
        for &j in &order {
            for r in self.jobs[j as usize].reducers.clone() {
                for f in self.in_rt_flows(r).collect::<Vec<_>>() {
                    self.f_bps[f] = 0.0;
                }
            }
            let Some(alpha) = self.alpha_online(j, &mut s_tmp, &mut r_tmp) else {
                skipped.push(j);
                continue;
            };
            s_used.iter_mut().for_each(|x| *x = 0.0);
            r_used.iter_mut().for_each(|x| *x = 0.0);
            // updateRatesDynamicAlphaOneJob: MADD on what is free.
            for r in self.jobs[j as usize].reducers.clone() {
                let dst = self.reducers[r].rack as usize;
                if self.recv_free[dst] <= ZERO {
                    continue;
                }
                for f in self.reducers[r].flows.clone() {
                    if !self.f_in_rt[f] {
                        continue;
                    }
                    let src = self.f_src[f] as usize;
                    let mut bps = self.f_rem[f] * 8.0 / alpha;
                    if bps > self.send_free[src] || bps > self.recv_free[dst] {
                        bps = self.send_free[src].min(self.recv_free[dst]);
                    }
                    s_used[src] += bps;
                    r_used[dst] += bps;
                    self.f_bps[f] = bps;
                }
            }
            for i in 0..n {
                self.send_free[i] -= s_used[i];
                self.recv_free[i] -= r_used[i];
            }
        }
        // Work conservation, first the skipped coflows' per-flow share.
        s_used.iter_mut().for_each(|x| *x = 0.0);
        r_used.iter_mut().for_each(|x| *x = 0.0);
        self.share_per_flow(&skipped, &mut s_used, &mut r_used, false);
        for i in 0..n {
            self.send_free[i] -= s_used[i];
            self.recv_free[i] -= r_used[i];
        }
        // Then the greedy refill, by (int)(start + deadline - now), stable.
        let mut by_edf = order;
        let key = |j: &Job| (j.start + j.deadline - now as f64) as i32;
        by_edf.sort_by_key(|&j| key(&self.jobs[j as usize]));
        for &j in &by_edf {
            for r in self.jobs[j as usize].reducers.clone() {
                let dst = self.reducers[r].rack as usize;
                if self.recv_free[dst] <= ZERO {
                    continue;
                }
                for f in self.reducers[r].flows.clone() {
                    if !self.f_in_rt[f] {
                        continue;
                    }
                    let src = self.f_src[f] as usize;
                    let mut free = self.send_free[src].min(self.recv_free[dst]);
                    if free <= ZERO {
                        free = 0.0;
                    }
                    self.f_bps[f] += free;
                    self.send_free[src] -= free;
                    self.recv_free[dst] -= free;
                }
            }
        }
        self.refresh_live();
    }

    /// updateRatesFairShare (`zero_skipped = false`) and one coflow of DARK's updateRates
    /// (`zero_skipped = true`, which also zeroes the rates of flows it cannot serve).
    fn share_per_flow(&mut self, jobs: &[u32], s_used: &mut [f64], r_used: &mut [f64], zero_skipped: bool) {
        let n = self.num_ports;
        let (mut n_out, mut n_in) = (vec![0u32; n], vec![0u32; n]);
        for &j in jobs {
            for r in self.jobs[j as usize].reducers.clone() {
                let dst = self.reducers[r].rack as usize;
                let dst_full = self.recv_free[dst] <= ZERO;
                for f in self.reducers[r].flows.clone() {
                    if !self.f_in_rt[f] {
                        continue;
                    }
                    let src = self.f_src[f] as usize;
                    if dst_full || self.send_free[src] <= ZERO {
                        if zero_skipped {
                            self.f_bps[f] = 0.0;
                        }
                        continue;
                    }
                    n_out[src] += 1;
                    n_in[dst] += 1;
                }
            }
        }
        for &j in jobs {
            for r in self.jobs[j as usize].reducers.clone() {
                let dst = self.reducers[r].rack as usize;
                if self.recv_free[dst] <= ZERO || n_in[dst] == 0 {
                    continue;
                }
                for f in self.reducers[r].flows.clone() {
                    if !self.f_in_rt[f] {
                        continue;
                    }
                    let src = self.f_src[f] as usize;
                    if self.send_free[src] <= ZERO || n_out[src] == 0 {
                        continue;
                    }
                    let mut free = (self.send_free[src] / n_out[src] as f64)
                        .min(self.recv_free[dst] / n_in[dst] as f64);
                    if free <= ZERO {
                        free = 0.0;
                    }
                    self.f_bps[f] = free;
                    s_used[src] += free;
                    r_used[dst] += free;
                }
            }
        }
    }

    /// CoflowSimulatorDark.updateRates: queue by queue, coflow by coflow, per-flow shares of
    /// what the coflows before left.
    fn dark_rates(&mut self) {
        let n = self.num_ports;
        self.send_free.iter_mut().for_each(|x| *x = RACK_BITS_PER_SEC);
        self.recv_free.iter_mut().for_each(|x| *x = RACK_BITS_PER_SEC);
        let (mut s_used, mut r_used) = (vec![0.0; n], vec![0.0; n]);
        for q in 0..DARK_QUEUES {
            for k in 0..self.queues[q].len() {
                let j = self.queues[q][k];
                s_used.iter_mut().for_each(|x| *x = 0.0);
                r_used.iter_mut().for_each(|x| *x = 0.0);
                self.share_per_flow(&[j], &mut s_used, &mut r_used, true);
                for i in 0..n {
                    self.send_free[i] -= s_used[i];
                    self.recv_free[i] -= r_used[i];
                }
            }
        }
        self.refresh_live();
    }

    /// CoflowSimulatorDark.updateJobOrder: demote by bytes sent, one queue per pass.
    fn update_job_order(&mut self) {
        for i in 0..DARK_QUEUES {
            let mut moved = Vec::new();
            for &j in &self.queues[i] {
                let job = &mut self.jobs[j as usize];
                let mut q = 0;
                let mut k = DARK_FIRST_LIMIT;
                while k < job.bytes_completed {
                    q += 1;
                    k *= DARK_MULT;
                }
                if job.queue < q {
                    job.queue += 1;
                    moved.push(j);
                }
            }
            if i + 1 < DARK_QUEUES && !moved.is_empty() {
                self.queues[i].retain(|j| !moved.contains(j));
                self.queues[i + 1].extend(moved);
            }
        }
    }

    /// Task.cleanupTask and Job.onTaskFinish for reducer `r` at `t`, and the departure of
    /// its coflow if it was the last.
    fn finish_reducer(&mut self, r: usize, t: i64) {
        let red = &mut self.reducers[r];
        red.finish = t as f64;
        red.left = 0.0;
        let job = &mut self.jobs[red.job as usize];
        if job.finish < 0.0 || job.finish < red.finish {
            job.finish = red.finish;
        }
        job.reducer_sum += red.finish - red.start;
        job.num_active_tasks -= 1;
        if job.num_active_tasks == 0 {
            job.is_active = false;
            let j = red.job;
            self.num_active_jobs -= 1;
            for q in &mut self.queues {
                if let Some(p) = q.iter().position(|&x| x == j) {
                    q.remove(p);
                    break;
                }
            }
        }
        self.num_active_tasks -= 1;
    }

    /// Moves `bytes` of flow `f` (already subtracted from `f_rem`): the reducer and coflow
    /// counters, and completions. `per_rack` says whether this scheduler keeps the per-rack
    /// sums (PFP and the coflow schedulers do; FAIR does not).
    fn account(&mut self, f: usize, bytes: f64, t: i64, per_rack: bool) {
        let r = self.f_red[f] as usize;
        let red = &mut self.reducers[r];
        red.left -= bytes;
        if per_rack {
            red.per_rack_left -= bytes;
            if red.per_rack_left < 0.0 {
                red.per_rack_left = 0.0;
            }
        }
        if !self.algo.is_flow_level() {
            self.jobs[red.job as usize].bytes_completed += bytes;
        }
        if (red.left <= ZERO || red.num_flows == 0) && red.finish < 0.0 {
            self.finish_reducer(r, t + QUANTA_MS);
        }
    }

    /// Removes flow `f` from its reducer's `rt.flows` (a no-op if it is already gone).
    fn remove_from_rt(&mut self, f: usize) {
        if std::mem::replace(&mut self.f_in_rt[f], false) {
            self.reducers[self.f_red[f] as usize].num_flows -= 1;
        }
    }

    /// FlowSimulator.fairShare, one step.
    fn fair_share(&mut self, t: i64) {
        let out = self.num_out.clone();
        let unit = RACK_BYTES_PER_SEC * (QUANTA_MS as f64 / SECOND_MS as f64);
        for i in 0..self.num_ports {
            let n = self.racks[i].len();
            if n == 0 {
                continue;
            }
            let mut to_add = Vec::new();
            let mut any_removed = false;
            for k in 0..n {
                let f = self.racks[i][k] as usize;
                let src = self.f_src[f] as usize;
                let mut b = (unit / n as f64).min(unit / out[src] as f64);
                b = b.min(self.f_rem[f]);
                self.f_rem[f] -= b;
                if self.f_rem[f] <= ZERO {
                    self.remove_from_rt(f);
                    self.f_remove[f] = true;
                    any_removed = true;
                    if self.algo == Algo::Fair5 {
                        // The first flow of the reducer not yet considered, if any. Two flows
                        // finishing in one step both pick it, and it is then added twice, as
                        // in coflowsim.
                        let red = &mut self.reducers[self.f_red[f] as usize];
                        while red.cursor < red.flows.end && self.f_considered[red.cursor] {
                            red.cursor += 1;
                        }
                        if red.cursor < red.flows.end {
                            to_add.push(red.cursor as u32);
                        }
                    }
                }
                self.account(f, b, t, false);
            }
            if any_removed {
                let (rem, num_out) = (&self.f_remove, &mut self.num_out);
                self.racks[i].retain(|&f| {
                    let keep = !rem[f as usize];
                    if !keep {
                        num_out[self.f_src[f as usize] as usize] -= 1;
                    }
                    keep
                });
            }
            for f in to_add {
                self.add_ascending(f);
            }
        }
    }

    /// FlowSimulator.proceedFlowsInAllRacksInSortedOrder, one step.
    fn pfp_step(&mut self, t: i64) {
        let mut busy = vec![false; self.num_ports];
        let unit = RACK_BYTES_PER_SEC * (QUANTA_MS as f64 / SECOND_MS as f64);
        for i in 0..self.num_ports {
            let Some(k) = self.racks[i].iter().position(|&f| !busy[self.f_src[f as usize] as usize]) else {
                continue;
            };
            let f = self.racks[i][k] as usize;
            busy[self.f_src[f] as usize] = true;
            let b = unit.min(self.f_rem[f]);
            self.f_rem[f] -= b;
            if self.f_rem[f] <= ZERO {
                self.remove_from_rt(f);
                self.racks[i].remove(k);
            }
            self.account(f, b, t, true);
        }
    }

    /// CoflowSimulator.proceedFlowsInAllRacks, one step, over the positive-rate flows.
    fn proceed_flows(&mut self, t: i64) {
        let scale = QUANTA_MS as f64 / SECOND_MS as f64;
        for i in 0..self.num_ports {
            if self.live[i].is_empty() {
                continue;
            }
            let mut moved = 0.0;
            let mut any_removed = false;
            for k in 0..self.live[i].len() {
                if moved >= RACK_BYTES_PER_SEC {
                    break;
                }
                let f = self.live[i][k] as usize;
                let mut b = (self.f_bps[f] / 8.0) * scale;
                b = b.min(self.f_rem[f]);
                self.f_rem[f] -= b;
                if self.f_rem[f] <= ZERO {
                    self.remove_from_rt(f);
                    self.f_remove[f] = true;
                    any_removed = true;
                }
                moved += b;
                self.account(f, b, t, true);
            }
            if any_removed {
                let rem = &self.f_remove;
                self.live[i].retain(|&f| !rem[f as usize]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_random_matches_known_values() {
        // new java.util.Random(42).nextDouble() == 0.7275636800328681 (JDK documentation value).
        let mut r = JavaRandom::new(42);
        assert_eq!(r.next_double(), 0.7275636800328681);
    }

    #[test]
    fn two_flows_into_one_reducer_share_its_port() {
        // Two mappers send 2 MiB each to one reducer: 4 MiB through one port, 1 MiB per 8 ms
        // step, under every scheduler (FAIR and MADD give each flow half the port, PFP serves
        // one flow per step).
        let t = Trace::parse("4 1\n1 0 2 0 1 1 2:4\n").unwrap();
        for algo in Algo::ALL {
            assert_eq!(run(&t, algo)[0].duration_ms, 32.0, "{algo:?}");
        }
    }

    #[test]
    fn admission_is_per_ten_second_epoch() {
        // Arrival 10833 ms is admitted at the epoch starting at 10240 ms (arrival <= t + 10240),
        // and a 1 MiB flow then takes one step.
        let t = Trace::parse("4 2\n1 0 1 0 1 1:1\n2 10833 1 2 1 3:1\n").unwrap();
        let r = run(&t, Algo::Fifo);
        assert_eq!((r[1].start_ms, r[1].finish_ms), (10240.0, 10248.0));
    }

    #[test]
    fn same_input_same_output() {
        let t = Trace::parse("5 3\n1 0 2 0 1 2 2:4 3:2\n2 5 1 0 1 2:3\n3 20000 2 3 4 1 0:2\n").unwrap();
        for algo in Algo::ALL {
            assert_eq!(run(&t, algo), run(&t, algo), "{algo:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for algo in Algo::ALL {
            assert_eq!(Algo::from_name(&algo.name().to_lowercase()), Some(algo));
        }
        let t = Trace::parse("4 1\n1 0 1 2 1 3:1.0\n").unwrap();
        assert!(run_named(&t, "sebf").is_some() && run_named(&t, "varys").is_none());
    }

    #[test]
    fn reference_lines_parse() {
        let r = parse_reference("JOB-2 10240.0 10624.0 2 1 5.0331648E7 5.0331648E7 384.0 637 384.0\n3.7E7\n").unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].id, r[0].total_bytes, r[0].deadline_ms), (2, 50_331_648.0, 637));
        assert!(parse_reference("JOB-2 1 2\n").is_err());
    }

    #[test]
    fn single_one_mib_flow_takes_one_step() {
        let t = Trace::parse("4 1\n1 0 1 2 1 3:1.0\n").unwrap();
        for algo in Algo::ALL {
            let r = &run(&t, algo)[0];
            assert_eq!((r.start_ms, r.finish_ms, r.duration_ms), (0.0, 8.0, 8.0), "{algo:?}");
        }
    }
}
