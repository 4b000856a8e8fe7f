//! Workload entries of a scenario, made into applications (`app::open_loop`): flow-size CDFs,
//! Poisson arrivals at a target load, incast queries, flow-list replay and inline flows, all
//! seeded from the named streams of `rng`. [`generate`] lists the flows of open-loop entries
//! without a network (for tests and flow-list export).
//!
//! INVARIANT: [`generate`]'s output is sorted by `(start, workload index, generation order)`
//! and is a pure function of (spec, seed). Every flow has `size >= 1` and `src != dst`.

pub mod approx;

use std::path::Path;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;
use rand_pcg::Pcg64;
use units::{Dur, Time};

use crate::app::{
    AnyApp, ApproxJobs, ApproxJobsConf, Barrier, Training, TrainingConf, ClosedLoop, IncastGen, ListGen, PoissonGen, PrioSchedule, Receivers, Relay,
    TransferReq,
};
use crate::rng::{Stream, Streams};
use crate::spec::{FlowList, Flows, Incast, LoadReference, Poisson, WorkloadSpec};
#[cfg(test)]
use crate::spec::{Destinations, IncastSenders};
use crate::spec::limits::{MAX_TIME_S, MAX_TRANSFER_BYTES};
use crate::topo::Topology;
use crate::SimError;

/// Names accepted as `cdf = "<name>"` without a file.
pub const BUILTIN_CDFS: &[&str] = &["websearch", "fb_hadoop", "google_rpc"];

fn builtin_text(name: &str) -> Option<&'static str> {
    match name {
        "websearch" => Some(include_str!("../data/websearch.csv")),
        "fb_hadoop" => Some(include_str!("../data/fb_hadoop.txt")),
        "google_rpc" => Some(include_str!("../data/google_rpc.txt")),
        _ => None,
    }
}

/// One flow to simulate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowSpec {
    /// Id reported in the records (flow-list id, or generation index).
    pub id: u64,
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Bytes.
    pub size: u64,
    /// Start time.
    pub start: Time,
    /// Priority class.
    pub prio: u8,
    /// Part of an incast query.
    pub incast: bool,
    /// Index of the generating workload entry.
    pub workload: u16,
}

/// A flow-size distribution: points `(size_bytes, cdf)` with cdf in [0, 1], non-decreasing.
#[derive(Clone, Debug, PartialEq)]
pub struct Cdf {
    points: Vec<(f64, f64)>,
}

impl Cdf {
    /// Parse `size cdf` lines where cdf is a fraction (0..1) or a percentage (0..100): the
    /// format is detected from the last point. Blank lines and `#` comments are skipped.
    pub fn parse(text: &str) -> Result<Cdf, String> {
        let mut points = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut it = line.split_whitespace();
            let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) else {
                return Err(format!("line {}: expected two numbers `size cdf`, got {line:?}", i + 1));
            };
            let size: f64 = a.parse().map_err(|_| format!("line {}: bad size {a:?}", i + 1))?;
            let cdf: f64 = b.parse().map_err(|_| format!("line {}: bad cdf value {b:?}", i + 1))?;
            if !(size.is_finite() && size >= 0.0 && cdf.is_finite() && cdf >= 0.0) {
                return Err(format!("line {}: values must be non-negative numbers", i + 1));
            }
            if let Some(&(ps, pc)) = points.last() {
                if size < ps || cdf < pc {
                    return Err(format!("line {}: sizes and cdf values must not decrease", i + 1));
                }
            }
            points.push((size, cdf));
        }
        let Some(&(_, last)) = points.last() else {
            return Err("no points".into());
        };
        let scale = if (last - 100.0).abs() < 1e-6 {
            100.0
        } else if (last - 1.0).abs() < 1e-9 {
            1.0
        } else {
            return Err(format!("the last cdf value must be 1 (or 100 for percentages), got {last}"));
        };
        for p in &mut points {
            p.1 /= scale;
        }
        Ok(Cdf { points })
    }

    /// A built-in distribution by name.
    pub fn builtin(name: &str) -> Option<Cdf> {
        builtin_text(name).map(|t| Cdf::parse(t).expect("built-in CDFs parse"))
    }

    /// Inverse-CDF sample for `u` in [0, 1): the first point with cdf >= u, interpolated
    /// linearly from the previous point (from (0, 0) below the first point), as ns3-datacenter
    /// `gen_random_cdf` and HPCC `custom_rand.py` do.
    pub fn sample(&self, u: f64) -> f64 {
        let i = self.points.partition_point(|&(_, c)| c < u);
        if i >= self.points.len() {
            return self.points[self.points.len() - 1].0;
        }
        let (x1, c1) = self.points[i];
        let (x0, c0) = if i == 0 { (0.0, 0.0) } else { self.points[i - 1] };
        if c1 <= c0 {
            return x1;
        }
        x0 + (u - c0) / (c1 - c0) * (x1 - x0)
    }

    /// The largest size the distribution yields (its last point), bytes.
    pub fn max_size(&self) -> f64 {
        self.points.last().map_or(0.0, |p| p.0)
    }

    /// Mean of the piecewise-linear distribution (trapezoid rule), bytes.
    pub fn mean(&self) -> f64 {
        let mut prev = (0.0, 0.0);
        let mut m = 0.0;
        for &(x, c) in &self.points {
            m += (c - prev.1) * (x + prev.0) / 2.0;
            prev = (x, c);
        }
        m
    }
}

/// What the generators need to know about the network.
#[derive(Clone, Copy, Debug)]
pub struct NetInfo<'a> {
    /// The topology.
    pub topo: &'a Topology,
    /// Shared buffer of a leaf switch (for `burst_buffer_fraction`).
    pub leaf_buffer: u64,
}

/// An exponential inter-arrival time, seconds.
pub(crate) fn exp_sample(r: &mut Pcg64, rate_per_s: f64) -> f64 {
    let u: f64 = r.gen();
    -(1.0 - u).ln() / rate_per_s
}

/// The applications of a scenario's workload entries, in order (application `i` is entry
/// `i`). File inputs come from validation when it loaded them, else are read here.
pub fn build_apps(workloads: &[WorkloadSpec], seed: u64, net: NetInfo<'_>) -> Result<Vec<AnyApp>, SimError> {
    let streams = Streams::new(seed);
    let keep_ids = workloads.len() == 1 && matches!(workloads[0], WorkloadSpec::FlowList(_));
    let mut apps = Vec::with_capacity(workloads.len());
    for (wi, w) in workloads.iter().enumerate() {
        let key = |k: &str| format!("workload[{wi}].{k}");
        apps.push(match w {
            WorkloadSpec::Poisson(Poisson {
                cdf,
                load,
                load_reference,
                destinations,
                start_ms,
                duration_ms,
                prio,
                prio_schedule,
                loaded,
                ..
            }) => {
                let dist = match &loaded.0 {
                    Some(c) => (**c).clone(),
                    None => load_cdf(cdf).map_err(|message| SimError::Workload { key: key("cdf"), message })?,
                };
                let per_host_bps = match load_reference {
                    LoadReference::HostLink => net.topo.host_rate.get() as f64,
                    LoadReference::LeafUplink => {
                        net.topo.leaf_uplink.get() as f64 / net.topo.hosts_per_leaf as f64
                    }
                };
                let mean_bits = dist.mean() * 8.0;
                let rate = load * per_host_bps / mean_bits; // flows per second per host
                let (t0, t1) = (start_ms / 1e3, (start_ms + duration_ms) / 1e3);
                let prio = PrioSchedule::new(*prio, prio_schedule.as_deref().unwrap_or_default());
                AnyApp::Poisson(PoissonGen::new(&streams, wi, net.topo, dist, rate, *destinations, t0, t1, prio))
            }
            WorkloadSpec::Incast(Incast {
                query_rate_per_host,
                fan_in,
                burst_bytes,
                burst_buffer_fraction,
                senders,
                start_ms,
                duration_ms,
                prio,
                prio_schedule,
                ..
            }) => {
                let burst = match (burst_bytes, burst_buffer_fraction) {
                    (Some(b), _) => *b,
                    (None, Some(f)) => (f * net.leaf_buffer as f64).round() as u64,
                    (None, None) => {
                        return Err(SimError::Workload {
                            key: key("burst_bytes"),
                            message: "give exactly one of burst_bytes and burst_buffer_fraction".into(),
                        })
                    }
                };
                let per_sender = (burst / (*fan_in).max(1) as u64).max(1);
                let (t0, t1) = (start_ms / 1e3, (start_ms + duration_ms) / 1e3);
                let prio = PrioSchedule::new(*prio, prio_schedule.as_deref().unwrap_or_default());
                AnyApp::Incast(
                    IncastGen::new(&streams, wi, net.topo, *query_rate_per_host, *fan_in, per_sender, *senders, t0, t1, prio)
                        .map_err(|message| SimError::Workload { key: key("fan_in"), message })?,
                )
            }
            WorkloadSpec::FlowList(FlowList { path, prio, loaded, .. }) => {
                let flows = match &loaded.0 {
                    Some(f) => (**f).clone(),
                    None => {
                        use crate::textfile::{describe, read_text_file, MAX_FLOW_LIST_BYTES};
                        let text = read_text_file(Path::new(path), MAX_FLOW_LIST_BYTES).map_err(|e| SimError::Workload {
                            key: key("path"),
                            message: format!("cannot read {path}: {}", describe(&e, MAX_FLOW_LIST_BYTES, "a flow list")),
                        })?;
                        let mut flows = Vec::new();
                        parse_flow_list(&text, wi as u16, *prio, net.topo.num_hosts, &mut flows).map_err(|message| {
                            SimError::Workload { key: key("path"), message: format!("{path}: {message}") }
                        })?;
                        flows
                    }
                };
                AnyApp::List(ListGen::new(flows, keep_ids))
            }
            WorkloadSpec::Flows(Flows { flows: list, .. }) => {
                let flows = list
                    .iter()
                    .map(|f| FlowSpec {
                        id: 0,
                        src: f.src,
                        dst: f.dst,
                        size: f.size_bytes,
                        start: Time::from_ns(f.start_ns),
                        prio: f.prio,
                        incast: f.incast,
                        workload: wi as u16,
                    })
                    .collect();
                AnyApp::List(ListGen::new(flows, false))
            }
            WorkloadSpec::ClosedLoop(c) => AnyApp::ClosedLoop(ClosedLoop::new(
                c.pairs.iter().map(|p| (p[0], p[1])).collect(),
                c.size_bytes,
                c.count,
                Dur::from_secs_f64(c.think_us * 1e-6),
                c.prio,
            )),
            WorkloadSpec::Barrier(b) => AnyApp::Barrier(Barrier::new(
                b.transfers
                    .iter()
                    .map(|f| TransferReq { prio: f.prio, incast: f.incast, ..TransferReq::new(f.src, f.dst, f.size_bytes) })
                    .collect(),
                b.rounds,
                Dur::from_secs_f64(b.compute_us * 1e-6),
            )),
            WorkloadSpec::Relay(r) => AnyApp::Relay(Relay::new(r.chain.clone(), r.block_bytes, r.blocks)),
            WorkloadSpec::Training(t) => AnyApp::Training(Training::new(TrainingConf {
                pattern: t.pattern,
                workers: t.workers.clone(),
                server: t.server.unwrap_or(0),
                model_bytes: t.model_bytes,
                iterations: t.iterations,
                compute: Dur::from_secs_f64(t.compute_us * 1e-6),
                start: Time::from_secs_f64(t.start_us * 1e-6),
                prio: t.prio,
            })),
            WorkloadSpec::ApproxJobs(a) => {
                let senders: Vec<u32> = match &a.senders {
                    Some(s) => s.clone(),
                    None => (0..net.topo.num_hosts).filter(|&h| Some(h) != a.receiver).collect(),
                };
                let rngs = senders.iter().map(|&host| streams.rng(Stream::ApproxJobHost { workload: wi, host })).collect();
                AnyApp::ApproxJobs(ApproxJobs::new(
                    ApproxJobsConf {
                        trace: a.trace,
                        scheme: a.scheme,
                        groups: a.group_list(),
                        messages: a.messages,
                        jobs_per_host: a.jobs_per_host,
                        gap_scale: a.load.map_or(1.0, |load| {
                            let want_s = a.trace.mean_message_bytes() * 8.0 / (load * net.topo.host_rate.get() as f64);
                            want_s / a.trace.mean_gap().as_secs_f64().max(1e-15)
                        }),
                        senders,
                        receivers: a.receiver.map_or(Receivers::Random, Receivers::One),
                        start: Time::from_secs_f64(a.start_us * 1e-6),
                        think: Dur::from_secs_f64(a.think_us * 1e-6),
                        prio: a.prio,
                        udp_timeout: Dur::from_secs_f64(a.udp_timeout_us * 1e-6),
                        num_hosts: net.topo.num_hosts,
                    },
                    rngs,
                ))
            }
        });
    }
    Ok(apps)
}

/// Every flow the open-loop applications `apps` would start, in start order, found without a
/// network (a dry run of their generators); `None` if any application reacts to the network.
/// Ids are as in the run's records: the index in start order, or a lone flow list's own ids.
pub fn dry_run(mut apps: Vec<AnyApp>) -> Option<Vec<FlowSpec>> {
    if !apps.iter().all(AnyApp::is_open_loop) {
        return None;
    }
    let mut heap: BinaryHeap<Reverse<(Time, usize)>> = BinaryHeap::new();
    for (i, a) in apps.iter().enumerate() {
        if let Some(t) = next_time(a) {
            heap.push(Reverse((t, i)));
        }
    }
    let mut out = Vec::new();
    while let Some(Reverse((t, i))) = heap.pop() {
        while let Some((start, req)) = next_due(&mut apps[i], t) {
            out.push(FlowSpec {
                id: req.label.unwrap_or(out.len() as u64),
                src: req.src,
                dst: req.dst,
                size: req.size,
                start,
                prio: req.prio,
                incast: req.incast,
                workload: i as u16,
            });
        }
        if let Some(t) = next_time(&apps[i]) {
            heap.push(Reverse((t, i)));
        }
    }
    Some(out)
}

fn next_time(a: &AnyApp) -> Option<Time> {
    match a {
        AnyApp::Poisson(g) => g.next_time(),
        AnyApp::Incast(g) => g.next_time(),
        AnyApp::List(g) => g.next_time(),
        _ => None,
    }
}

fn next_due(a: &mut AnyApp, now: Time) -> Option<(Time, crate::app::TransferReq)> {
    match a {
        AnyApp::Poisson(g) => g.next_due(now),
        AnyApp::Incast(g) => g.next_due(now),
        AnyApp::List(g) => g.next_due(now),
        _ => None,
    }
}

/// Generate every flow of every workload entry, sorted by start time (a dry run of the
/// open-loop applications they make; see [`dry_run`]).
pub fn generate(workloads: &[WorkloadSpec], seed: u64, net: NetInfo<'_>) -> Result<Vec<FlowSpec>, SimError> {
    let apps = build_apps(workloads, seed, net)?;
    Ok(dry_run(apps).unwrap_or_default())
}

pub(crate) fn load_cdf(name: &str) -> Result<Cdf, String> {
    if let Some(c) = Cdf::builtin(name) {
        return Ok(c);
    }
    use crate::textfile::{describe, read_text_file, MAX_CDF_BYTES};
    let text = read_text_file(Path::new(name), MAX_CDF_BYTES)
        .map_err(|e| format!("cannot read {name}: {}", describe(&e, MAX_CDF_BYTES, "a CDF file")))?;
    Cdf::parse(&text).map_err(|e| format!("{name}: {e}"))
}

pub(crate) fn pick_other(r: &mut Pcg64, n: u32, not: u32) -> u32 {
    let d = r.gen_range(0..n - 1);
    if d >= not {
        d + 1
    } else {
        d
    }
}

pub(crate) fn pick_other_leaf(
    r: &mut Pcg64,
    leaf_of_host: &[u32],
    per: u32,
    num_leaves: u32,
    num_hosts: u32,
    src: u32,
) -> u32 {
    if num_leaves < 2 {
        return pick_other(r, num_hosts, src);
    }
    let leaf = leaf_of_host[src as usize];
    let outside = num_hosts - per;
    let d = r.gen_range(0..outside);
    // Hosts of one leaf are contiguous: skip over the source's leaf.
    if d >= leaf * per {
        d + per
    } else {
        d
    }
}

/// Sattolo's algorithm: a uniformly random cyclic permutation, so no host maps to itself.
pub(crate) fn derangement(n: u32, r: &mut Pcg64) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n).collect();
    for i in (1..n as usize).rev() {
        let j = r.gen_range(0..i);
        p.swap(i, j);
    }
    p
}

/// Parse a flow list: `id src dst start_s size_bytes incast` per line, `#` comments.
pub fn parse_flow_list(
    text: &str,
    workload: u16,
    prio: u8,
    num_hosts: u32,
    out: &mut Vec<FlowSpec>,
) -> Result<(), String> {
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() < 5 {
            return Err(format!(
                "line {}: expected `id src dst start_s size_bytes [incast]`, got {line:?}",
                i + 1
            ));
        }
        let bad = |what: &str, v: &str| format!("line {}: bad {what} {v:?}", i + 1);
        let id: u64 = cols[0].parse().map_err(|_| bad("id", cols[0]))?;
        let src: u32 = cols[1].parse().map_err(|_| bad("src", cols[1]))?;
        let dst: u32 = cols[2].parse().map_err(|_| bad("dst", cols[2]))?;
        let start: f64 = cols[3].parse().map_err(|_| bad("start_s", cols[3]))?;
        let size: f64 = cols[4].parse().map_err(|_| bad("size_bytes", cols[4]))?;
        let incast = match cols.get(5) {
            None => false,
            Some(&"0") => false,
            Some(&"1") => true,
            Some(v) => return Err(bad("incast flag (0 or 1)", v)),
        };
        if src >= num_hosts || dst >= num_hosts {
            return Err(format!(
                "line {}: host {} does not exist (the topology has hosts 0 to {})",
                i + 1,
                src.max(dst),
                num_hosts.saturating_sub(1)
            ));
        }
        if src == dst {
            return Err(format!("line {}: src and dst are both {src}", i + 1));
        }
        if !(start.is_finite() && (0.0..=MAX_TIME_S).contains(&start)) {
            return Err(bad(&format!("start_s (must be between 0 and {MAX_TIME_S:e} s)"), cols[3]));
        }
        if !(size.is_finite() && size >= 1.0 && size.round() <= MAX_TRANSFER_BYTES as f64) {
            return Err(bad(&format!("size_bytes (must be between 1 and {MAX_TRANSFER_BYTES:e})"), cols[4]));
        }
        out.push(FlowSpec {
            id,
            src,
            dst,
            size: size.round() as u64,
            start: Time::from_secs_f64(start),
            prio,
            incast,
            workload,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::leaf_spine;
    use units::{Bps, Dur};

    #[test]
    fn websearch_mean_matches_published() {
        let c = Cdf::builtin("websearch").unwrap();
        // shared/data/flowcdf/README.md: mean 1.71 MB (trapezoid).
        assert!((c.mean() / 1e6 - 1.71).abs() < 0.01, "{}", c.mean());
        let h = Cdf::builtin("fb_hadoop").unwrap();
        assert!((h.mean() / 1e3 - 120.0).abs() < 2.0, "{}", h.mean());
        let g = Cdf::builtin("google_rpc").unwrap();
        assert!((g.mean() / 1e3 - 2.9).abs() < 0.1, "{}", g.mean());
    }

    #[test]
    fn sampling_interpolates_linearly() {
        let c = Cdf::parse("0 0\n100 50\n300 100\n").unwrap();
        assert_eq!(c.sample(0.25), 50.0);
        assert_eq!(c.sample(0.5), 100.0);
        assert_eq!(c.sample(0.75), 200.0);
        let f = Cdf::parse("100 0.5\n300 1\n").unwrap();
        assert_eq!(f.sample(0.25), 50.0); // below the first point: from (0, 0)
    }

    #[test]
    fn cdf_errors_name_the_line() {
        assert!(Cdf::parse("1 0\n2 x\n").unwrap_err().contains("line 2"));
        assert!(Cdf::parse("1 0.5\n0 1\n").unwrap_err().contains("decrease"));
        assert!(Cdf::parse("1 0.5\n2 0.9\n").unwrap_err().contains("last cdf"));
    }

    fn topo() -> Topology {
        leaf_spine(2, 16, 4, 1, Bps::from_gbps(10), Bps::from_gbps(10), Dur::from_us(3), Dur::from_us(3))
    }

    #[test]
    fn poisson_hits_the_target_load() {
        let t = topo();
        let w = vec![WorkloadSpec::Poisson(Poisson {
            cdf: "websearch".into(),
            load: 0.5,
            load_reference: LoadReference::HostLink,
            destinations: Destinations::Uniform,
            start_ms: 0.0,
            duration_ms: 2000.0,
            prio: 0,
            prio_schedule: None,
            loaded: Default::default(),
            transport: None,
        })];
        let flows = generate(&w, 7, NetInfo { topo: &t, leaf_buffer: 1 }).unwrap();
        let bytes: u64 = flows.iter().map(|f| f.size).sum();
        let offered = bytes as f64 * 8.0 / 2.0 / 32.0; // bits per second per host
        let target = 0.5 * 10e9;
        assert!((offered / target - 1.0).abs() < 0.1, "offered {offered} vs {target}");
        assert!(flows.windows(2).all(|w| w[0].start <= w[1].start));
        assert!(flows.iter().all(|f| f.src != f.dst && f.size >= 1));
    }

    #[test]
    fn destinations_respect_their_rule() {
        let t = topo();
        for (d, check) in [
            (Destinations::OtherLeaf, 0),
            (Destinations::Permutation, 1),
        ] {
            let w = vec![WorkloadSpec::Poisson(Poisson {
                cdf: "google_rpc".into(),
                load: 0.1,
                load_reference: LoadReference::HostLink,
                destinations: d,
                start_ms: 0.0,
                duration_ms: 1.0,
                prio: 0,
                prio_schedule: None,
                loaded: Default::default(),
                transport: None,
            })];
            let flows = generate(&w, 3, NetInfo { topo: &t, leaf_buffer: 1 }).unwrap();
            assert!(!flows.is_empty());
            let mut partner = vec![None; 32];
            for f in &flows {
                assert_ne!(f.src, f.dst);
                if check == 0 {
                    assert_ne!(f.src / 16, f.dst / 16);
                } else {
                    let p = partner[f.src as usize].get_or_insert(f.dst);
                    assert_eq!(*p, f.dst);
                }
            }
        }
    }

    #[test]
    fn incast_queries_have_fan_in_distinct_senders() {
        let t = topo();
        let w = vec![WorkloadSpec::Incast(Incast {
            query_rate_per_host: 100.0,
            fan_in: 8,
            burst_bytes: None,
            burst_buffer_fraction: Some(0.5),
            senders: IncastSenders::OtherLeaf,
            start_ms: 0.0,
            duration_ms: 100.0,
            prio: 0,
            prio_schedule: None,
            transport: None,
        })];
        let flows = generate(&w, 1, NetInfo { topo: &t, leaf_buffer: 1_000_000 }).unwrap();
        assert!(!flows.is_empty());
        assert_eq!(flows.len() % 8, 0);
        for f in &flows {
            assert!(f.incast);
            assert_eq!(f.size, 62_500);
            assert_ne!(f.src / 16, f.dst / 16);
        }
        let mut by_query = std::collections::BTreeMap::new();
        for f in &flows {
            by_query.entry((f.start, f.dst)).or_insert_with(Vec::new).push(f.src);
        }
        for srcs in by_query.values() {
            let mut s = srcs.clone();
            s.sort();
            s.dedup();
            assert_eq!(s.len(), 8);
        }
    }

    #[test]
    fn flow_list_parses_and_rejects_with_line_numbers() {
        let mut out = Vec::new();
        parse_flow_list("# c\n0 6 19 0.000323008 13026 0\n5 1 2 0.5 100 1\n", 0, 0, 32, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].start, Time(323_008_000));
        assert!(out[1].incast);
        assert!(parse_flow_list("0 40 1 0 10 0\n", 0, 0, 32, &mut out).unwrap_err().contains("line 1"));
        assert!(parse_flow_list("\n0 1 1 0 10 0\n", 0, 0, 32, &mut out).unwrap_err().contains("line 2"));
        // The limits: start times up to 1e6 s, sizes up to 1 TB; just past them, refused.
        parse_flow_list("0 1 2 1000000 1000000000000 0\n", 0, 0, 32, &mut out).unwrap();
        let e = parse_flow_list("0 1 2 1000000.001 10 0\n", 0, 0, 32, &mut out).unwrap_err();
        assert!(e.contains("line 1") && e.contains("start_s"), "{e}");
        let e = parse_flow_list("0 1 2 0 1000000000001 0\n", 0, 0, 32, &mut out).unwrap_err();
        assert!(e.contains("line 1") && e.contains("size_bytes"), "{e}");
    }

    #[test]
    fn same_seed_same_flows_other_seed_other_flows() {
        let t = topo();
        let w = vec![WorkloadSpec::Poisson(Poisson {
            cdf: "websearch".into(),
            load: 0.3,
            load_reference: LoadReference::LeafUplink,
            destinations: Destinations::Uniform,
            start_ms: 0.0,
            duration_ms: 20.0,
            prio: 0,
            prio_schedule: None,
            loaded: Default::default(),
            transport: None,
        })];
        let net = NetInfo { topo: &t, leaf_buffer: 1 };
        assert_eq!(generate(&w, 1, net).unwrap(), generate(&w, 1, net).unwrap());
        assert_ne!(generate(&w, 1, net).unwrap(), generate(&w, 2, net).unwrap());
    }
}
