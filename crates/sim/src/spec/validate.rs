//! Validation: every value range-checked with an error naming the key, the value and the fix,
//! and every file input (CDFs, flow lists, forests) read and parsed here, once, so that
//! building a simulation does no I/O.
//!
//! The ranges are those of [`limits`](super::limits) (why each exists is documented there):
//! every time a scenario gives fits the clock with room for the sums a run makes of them, every
//! size and rate keeps the engine's integer arithmetic exact, and a scenario whose network,
//! transfers or samples would not fit in memory is refused here, with an estimate, before
//! anything is allocated.
//!
//! CORRECTNESS: a [`ValidSpec`] can be built and run: everything `Simulation::new` could
//! refuse (an unreadable file, an incast that cannot find its senders) is refused here first,
//! so `slacknet validate` accepts exactly what `slacknet run` runs.

#[allow(unused_imports)]
use super::*;

use super::limits::*;
use crate::topo::{Counts, Topology};
use units::{Bps, PS_PER_S};

/// What the checks of a workload entry need to know about the rest of the scenario.
struct Context<'a> {
    topo: &'a Topology,
    /// The slowest link rate of the topology.
    min_link_rate: Bps,
    /// The shared buffer of a leaf (edge) switch (incast's `burst_buffer_fraction`).
    leaf_buffer: u64,
    /// `run.stop_ms`: no entry may start at or after it.
    stop_ms: Option<f64>,
}

impl Spec {
    /// Check every value and resolve file paths against `base_dir` (the scenario file's
    /// folder). Errors name the key and the value.
    pub fn validate(mut self, base_dir: &Path) -> Result<ValidSpec, SpecError> {
        // The network's size first: nothing below may build a network that does not fit.
        self.check_topology()?;
        let topo = Topology::build(&self.topology);
        self.check_transport()?;
        let full_packet = self.largest_packet();
        let buffers = self.check_switch(&topo, full_packet)?;
        if let AdmissionSpec::Credence { oracle, .. } = &mut self.switch.admission {
            load_oracle("switch.admission.oracle", oracle, base_dir)?;
        }
        self.host.check(full_packet)?;
        self.check_stop()?;
        if self.workload.len() > MAX_WORKLOADS {
            return Err(SpecError::invalid(
                "workload",
                format!("[{} entries]", self.workload.len()),
                format!("at most {MAX_WORKLOADS} entries are supported"),
            ));
        }
        let leaf_buffer = topo
            .tiers
            .iter()
            .position(|t| *t == crate::metrics::Tier::Leaf)
            .map_or(0, |s| buffers[s]);
        let min_link_rate = topo.links.iter().map(|l| l.rate).min().unwrap_or(topo.host_rate);
        let ctx = Context { topo: &topo, min_link_rate, leaf_buffer, stop_ms: self.run.stop_ms };
        for (i, w) in self.workload.iter_mut().enumerate() {
            let transport = w.transport().unwrap_or(&self.transport).clone();
            check_workload(i, w, &ctx, base_dir, &transport)?;
        }
        self.check_flow_count(&topo)?;
        self.check_sampling(&topo)?;
        if let Some(ts) = &self.run.timeseries {
            self.check_timeseries(ts, &topo)?;
        }
        Ok(ValidSpec { spec: self })
    }

    /// The largest packet of any of the run's transports, `mss_bytes + header_bytes`.
    pub(crate) fn largest_packet(&self) -> u64 {
        std::iter::once(&self.transport)
            .chain(self.workload.iter().filter_map(|w| w.transport()))
            .map(|t| u64::from(t.mss_bytes()) + u64::from(t.header_bytes()))
            .max()
            .unwrap_or(1)
    }

    fn check_stop(&self) -> Result<(), SpecError> {
        if let Some(s) = self.run.stop_ms {
            if !(s.is_finite() && s > 0.0 && s <= MAX_TIME_S * 1e3) {
                return Err(SpecError::invalid(
                    "run.stop_ms",
                    s,
                    format!("must be a positive number of milliseconds, at most {:e} ({MAX_TIME_NOTE})", MAX_TIME_S * 1e3),
                ));
            }
        }
        Ok(())
    }

    /// How long the run is known to last at least, in picoseconds: the stop time, or else the
    /// latest end of an application's own schedule (the open-loop arrivals, a closed loop's or
    /// barrier's pauses). The run drains past it, so estimates from it err low; a scenario of
    /// relays only (or of applications given in code) has none.
    fn horizon_ps(&self) -> Option<f64> {
        if let Some(ms) = self.run.stop_ms {
            return Some(ms * 1e9);
        }
        self.workload
            .iter()
            .filter_map(|w| match w {
                WorkloadSpec::Poisson(Poisson { start_ms, duration_ms, .. })
                | WorkloadSpec::Incast(Incast { start_ms, duration_ms, .. }) => Some((start_ms + duration_ms) * 1e9),
                WorkloadSpec::FlowList(FlowList { loaded, .. }) => {
                    loaded.0.as_ref().and_then(|f| f.iter().map(|f| f.start.ps() as f64).reduce(f64::max))
                }
                WorkloadSpec::Flows(Flows { flows, .. }) => flows.iter().map(|f| f.start_ns as f64 * 1e3).reduce(f64::max),
                WorkloadSpec::ClosedLoop(c) => Some(c.think_us * c.count as f64 * 1e6),
                WorkloadSpec::Barrier(b) => Some(b.compute_us * b.rounds as f64 * 1e6),
                WorkloadSpec::Relay(_) => None,
                WorkloadSpec::ApproxJobs(a) => Some(a.start_us * 1e6),
                WorkloadSpec::Training(t) => Some((t.start_us + t.compute_us * t.iterations as f64) * 1e6),
            })
            .reduce(f64::max)
    }

    /// The transfers the workload entries would start, estimated from their rates, sizes and
    /// windows (cut at `run.stop_ms`), refused above [`MAX_FLOWS`] before anything is
    /// generated. Call after the workloads are checked (CDFs and flow lists loaded).
    fn check_flow_count(&self, topo: &Topology) -> Result<(), SpecError> {
        let stop_s = self.run.stop_ms.map(|ms| ms / 1e3);
        let window_s = |start_ms: f64, duration_ms: f64| {
            let (t0, t1) = (start_ms / 1e3, (start_ms + duration_ms) / 1e3);
            (stop_s.map_or(t1, |s| t1.min(s)) - t0).max(0.0)
        };
        let hosts = topo.num_hosts as f64;
        let mut total = 0.0;
        for (i, w) in self.workload.iter().enumerate() {
            let (flows, key, hint): (f64, &str, &str) = match w {
                WorkloadSpec::Poisson(p) => {
                    let mean = p.loaded.0.as_ref().map_or(1.0, |c| c.mean());
                    let per_host_bps = match p.load_reference {
                        LoadReference::HostLink => topo.host_rate.get() as f64,
                        LoadReference::LeafUplink => topo.leaf_uplink.get() as f64 / topo.hosts_per_leaf as f64,
                    };
                    let rate = p.load * per_host_bps / (mean * 8.0);
                    (rate * hosts * window_s(p.start_ms, p.duration_ms), "duration_ms", "duration_ms, load or the number of hosts, or use a CDF of larger flows")
                }
                WorkloadSpec::Incast(c) => (
                    c.query_rate_per_host * hosts * c.fan_in as f64 * window_s(c.start_ms, c.duration_ms),
                    "query_rate_per_host",
                    "query_rate_per_host, fan_in or duration_ms",
                ),
                WorkloadSpec::FlowList(f) => {
                    let n = f.loaded.0.as_ref().map_or(0, |l| {
                        l.iter().filter(|f| stop_s.is_none_or(|s| f.start.as_secs_f64() <= s)).count()
                    });
                    (n as f64, "path", "the flow list")
                }
                WorkloadSpec::Flows(f) => (f.flows.len() as f64, "flows", "the flows"),
                WorkloadSpec::ClosedLoop(c) => (c.pairs.len() as f64 * c.count as f64, "count", "count or the pairs"),
                WorkloadSpec::Barrier(b) => (b.transfers.len() as f64 * b.rounds as f64, "rounds", "rounds or the transfers"),
                WorkloadSpec::Relay(r) => {
                    (r.chain.len().saturating_sub(1) as f64 * r.blocks as f64, "blocks", "blocks or the chain")
                }
                WorkloadSpec::ApproxJobs(a) => {
                    let senders = a.senders.as_ref().map_or(hosts, |s| s.len() as f64);
                    let per_job = if a.scheme == crate::app::ApproxScheme::Atp { 1.0 } else { a.messages as f64 };
                    (senders * a.jobs_per_host as f64 * per_job, "jobs_per_host", "jobs_per_host, messages or the senders")
                }
                WorkloadSpec::Training(t) => {
                    let n = t.workers.len() as f64;
                    let per_iteration = match t.pattern {
                        crate::app::SyncPattern::Ps => 2.0 * n,
                        crate::app::SyncPattern::Ring => 2.0 * (n - 1.0).max(0.0) * n,
                    };
                    (per_iteration * t.iterations as f64, "iterations", "iterations or the workers")
                }
            };
            if flows > MAX_FLOWS as f64 {
                let value = match w {
                    WorkloadSpec::Poisson(p) => p.duration_ms.to_string(),
                    WorkloadSpec::Incast(c) => c.query_rate_per_host.to_string(),
                    WorkloadSpec::FlowList(f) => format!("{:?}", f.path),
                    WorkloadSpec::Flows(f) => format!("[{} flows]", f.flows.len()),
                    WorkloadSpec::ClosedLoop(c) => c.count.to_string(),
                    WorkloadSpec::Barrier(b) => b.rounds.to_string(),
                    WorkloadSpec::Relay(r) => r.blocks.to_string(),
                    WorkloadSpec::ApproxJobs(a) => a.jobs_per_host.to_string(),
                    WorkloadSpec::Training(t) => t.iterations.to_string(),
                };
                return Err(SpecError::invalid(
                    format!("workload[{i}].{key}"),
                    value,
                    format!("{}; reduce {hint}{}", too_many_flows(flows), stop_hint(self.run.stop_ms)),
                ));
            }
            total += flows;
        }
        if total > MAX_FLOWS as f64 {
            return Err(SpecError::invalid(
                "workload",
                format!("[{} entries]", self.workload.len()),
                format!(
                    "{} in all; reduce the entries' rates, durations or counts{}",
                    too_many_flows(total),
                    stop_hint(self.run.stop_ms)
                ),
            ));
        }
        Ok(())
    }

    /// `run.sample_interval_us`: 0 (off) or a period of at least [`MIN_SAMPLE_INTERVAL_US`], and an estimate
    /// of the occupancy samples it would take (one row per switch per sample), refused above
    /// [`MAX_OCCUPANCY_ROWS`].
    fn check_sampling(&self, topo: &Topology) -> Result<(), SpecError> {
        let si = self.run.sample_interval_us;
        if si == 0.0 {
            return Ok(());
        }
        if !(MIN_SAMPLE_INTERVAL_US..=MAX_TIME_US).contains(&si) {
            return Err(SpecError::invalid(
                "run.sample_interval_us",
                si,
                format!(
                    "must be 0 (no occupancy sampling) or between {MIN_SAMPLE_INTERVAL_US} (1 ns; no queue changes \
                     faster) and {MAX_TIME_US:e} microseconds ({MAX_TIME_NOTE}): raise it, or set it to 0"
                ),
            ));
        }
        let Some(horizon_ps) = self.horizon_ps() else { return Ok(()) };
        let samples = (horizon_ps / (si * 1e6)).floor() + 1.0;
        let switches = topo.tiers.len() as f64;
        let rows = samples * switches;
        if rows > MAX_OCCUPANCY_ROWS as f64 {
            let bytes = rows * std::mem::size_of::<crate::metrics::OccupancySample>() as f64;
            return Err(SpecError::invalid(
                "run.sample_interval_us",
                si,
                format!(
                    "about {rows:.3e} occupancy samples ({samples:.3e} samples over {:.3} ms x {switches} switches, \
                     ~{}) is more than the limit of {MAX_OCCUPANCY_ROWS} (512 MiB): raise sample_interval_us, set it to 0 to \
                     turn occupancy sampling off, or shorten the run (run.stop_ms)",
                    horizon_ps / 1e9,
                    gigabytes(bytes),
                ),
            ));
        }
        Ok(())
    }

    /// `[run.timeseries]`: ranges, the switch filter, and an estimate of the rows it would
    /// produce (refused above [`MAX_TIMESERIES_ROWS`]). Call after the workloads are checked
    /// (flow lists must be loaded).
    fn check_timeseries(&self, ts: &TimeseriesSpec, topo: &Topology) -> Result<(), SpecError> {
        let us = ts.interval_us;
        if !(MIN_SAMPLE_INTERVAL_US..=MAX_TIME_US).contains(&us) {
            return Err(SpecError::invalid(
                "run.timeseries.interval_us",
                us,
                format!(
                    "must be a number of microseconds between {MIN_SAMPLE_INTERVAL_US} (1 ns; no queue changes \
                     faster) and {MAX_TIME_US:e} ({MAX_TIME_NOTE}): raise it, or remove the [run.timeseries] table to \
                     turn time series off"
                ),
            ));
        }
        if !ts.queues && !ts.transfers {
            return Err(SpecError::invalid(
                "run.timeseries",
                "{ queues = false, transfers = false }",
                "nothing to sample: remove the [run.timeseries] table to turn time series off",
            ));
        }
        let num_switches = topo.tiers.len() as u32;
        if let Some(ids) = &ts.switches {
            if !ts.queues {
                return Err(SpecError::invalid(
                    "run.timeseries.switches",
                    format!("{ids:?}"),
                    "filters the queue series, which queues = false turns off: remove one of the two",
                ));
            }
            for (j, &s) in ids.iter().enumerate() {
                if s >= num_switches {
                    return Err(SpecError::invalid(
                        format!("run.timeseries.switches[{j}]"),
                        s,
                        no_such("switch", "switches", u64::from(num_switches)),
                    ));
                }
                if ids[..j].contains(&s) {
                    return Err(SpecError::invalid(
                        format!("run.timeseries.switches[{j}]"),
                        s,
                        "a switch appears twice in the list",
                    ));
                }
            }
        }
        if let Some(m) = ts.max_transfers {
            if m == 0 {
                return Err(SpecError::invalid(
                    "run.timeseries.max_transfers",
                    m,
                    "must be at least 1 (set transfers = false to sample no transfer)",
                ));
            }
            if !ts.transfers {
                return Err(SpecError::invalid(
                    "run.timeseries.max_transfers",
                    m,
                    "filters the transfer series, which transfers = false turns off: remove one of the two",
                ));
            }
        }
        // The estimate: samples over the run's known horizon (see `horizon_ps`); without one
        // nothing is refused, and sampling stops at the row limit at run time.
        let Some(horizon_ps) = self.horizon_ps() else {
            return Ok(());
        };
        let samples = (horizon_ps / (us * 1e6)).floor() + 1.0;
        let qpp = self.switch.queues.len() as f64;
        let mut queues = 0.0;
        if ts.queues {
            for l in &topo.links {
                queues += match topo.switch_of(l.src) {
                    None if ts.nics => 1.0,
                    None => 0.0,
                    Some(s) if ts.switches.as_ref().is_none_or(|ids| ids.contains(&s.0)) => qpp,
                    Some(_) => 0.0,
                };
            }
        }
        // Transfers in flight at once are unknown before the run: count one per host unless
        // max_transfers bounds them.
        let transfers = match (ts.transfers, ts.max_transfers) {
            (false, _) => 0.0,
            (true, Some(m)) => m as f64,
            (true, None) => topo.num_hosts as f64,
        };
        // The queue rows counted are every sampled queue at every sample, while the run keeps
        // only the non-empty ones: an upper bound, refused only far above what a run keeps (each
        // table stops at its cap, 512 MiB of rows: `MAX_QUEUE_SAMPLE_ROWS`, `MAX_TRANSFER_SAMPLE_ROWS`).
        let rows = samples * (queues + transfers);
        if rows > MAX_TIMESERIES_ROWS as f64 {
            return Err(SpecError::invalid(
                "run.timeseries.interval_us",
                us,
                format!(
                    "about {rows:.3e} rows ({samples:.0} samples over {:.3} ms x ({queues:.0} queues + {transfers:.0} \
                     transfers)) is more than the limit of {MAX_TIMESERIES_ROWS} rows (gigabytes): raise interval_us, \
                     sample fewer queues (switches = [...], nics = false, queues = false) or transfers \
                     (max_transfers), or shorten run.stop_ms",
                    horizon_ps / 1e9
                ),
            ));
        }
        Ok(())
    }

    /// Ranges of the topology's keys, then its size: a network estimated to take more than
    /// [`MAX_NETWORK_BYTES`] is refused before anything is built.
    fn check_topology(&self) -> Result<(), SpecError> {
        match &self.topology {
            TopologySpec::LeafSpine(LeafSpine {
                leaves,
                hosts_per_leaf,
                spines,
                links_per_spine,
                host_rate_gbps,
                fabric_rate_gbps,
                host_delay_ns,
                fabric_delay_ns,
            }) => {
                positive("topology.leaves", *leaves)?;
                positive("topology.hosts_per_leaf", *hosts_per_leaf)?;
                positive("topology.links_per_spine", *links_per_spine)?;
                if *spines == 0 && *leaves > 1 {
                    return Err(SpecError::invalid(
                        "topology.spines",
                        spines,
                        "must be at least 1 when there is more than one leaf",
                    ));
                }
                rate("topology.host_rate_gbps", *host_rate_gbps)?;
                rate("topology.fabric_rate_gbps", *fabric_rate_gbps)?;
                delay("topology.host_delay_ns", *host_delay_ns)?;
                delay("topology.fabric_delay_ns", *fabric_delay_ns)?;
                let hosts = *leaves as u64 * *hosts_per_leaf as u64;
                if hosts > 1 << 20 {
                    return Err(SpecError::invalid(
                        "topology.hosts_per_leaf",
                        hosts_per_leaf,
                        format!("leaves x hosts_per_leaf = {hosts} hosts, more than the 2^20 supported"),
                    ));
                }
                // Name the largest count: it is what makes the network large.
                let (key, value) = [
                    ("topology.leaves", *leaves),
                    ("topology.hosts_per_leaf", *hosts_per_leaf),
                    ("topology.spines", *spines),
                    ("topology.links_per_spine", *links_per_spine),
                ]
                .into_iter()
                .max_by_key(|(_, v)| *v)
                .unwrap_or(("topology.spines", *spines));
                self.check_network_size(key, value)?;
                // What building the fabric needs besides memory: uplink capacities that fit a
                // u64 and a link id for every fabric link.
                let uplinks = *spines as u64 * *links_per_spine as u64;
                if uplinks > MAX_LEAF_UPLINKS {
                    return Err(SpecError::invalid(
                        "topology.spines",
                        spines,
                        format!("spines x links_per_spine = {uplinks} uplinks per leaf; at most {MAX_LEAF_UPLINKS} are supported"),
                    ));
                }
                let links = *leaves as u64 * uplinks;
                if links > MAX_FABRIC_LINKS {
                    return Err(SpecError::invalid(
                        "topology.leaves",
                        leaves,
                        format!(
                            "leaves x spines x links_per_spine = {links} fabric links; at most {MAX_FABRIC_LINKS} are supported"
                        ),
                    ));
                }
                Ok(())
            }
            TopologySpec::FatTree(FatTree { k, rate_gbps, delay_ns }) => {
                if *k < 2 || k % 2 != 0 || *k > 128 {
                    return Err(SpecError::invalid(
                        "topology.k",
                        k,
                        "must be an even number between 2 and 128",
                    ));
                }
                rate("topology.rate_gbps", *rate_gbps)?;
                delay("topology.delay_ns", *delay_ns)?;
                self.check_network_size("topology.k", *k)
            }
        }
    }

    fn check_network_size(&self, key: &str, value: u32) -> Result<(), SpecError> {
        let c: Counts = Topology::counts(&self.topology);
        let qpp = self.switch.queues.len().clamp(1, MAX_QUEUES);
        let bytes = crate::world::network_bytes(&c, qpp);
        if bytes > MAX_NETWORK_BYTES as f64 {
            let table = c.switches * c.hosts * 4.0;
            return Err(SpecError::invalid(
                key,
                value,
                format!(
                    "this network would take about {} to build ({:.0} hosts, {:.0} switches, {:.0} links; routing \
                     tables {}), more than the limit of {} GiB: make it smaller",
                    gigabytes(bytes),
                    c.hosts,
                    c.switches,
                    c.links,
                    gigabytes(table),
                    MAX_NETWORK_BYTES >> 30,
                ),
            ));
        }
        Ok(())
    }

    /// Ranges of `[switch]`, and every switch's buffer as the run will size it (it must hold
    /// one full packet of the run's largest, `full_packet`). Returns the buffers.
    fn check_switch(&self, topo: &Topology, full_packet: u64) -> Result<Vec<u64>, SpecError> {
        let s = &self.switch;
        let packet_note = |what: &str| {
            format!("must hold at least one full packet ({full_packet} B: mss_bytes + header_bytes of the run's largest), else {what}")
        };
        match (s.buffer_bytes, s.buffer_per_port_per_gbps) {
            (Some(_), Some(_)) => {
                return Err(SpecError::invalid(
                    "switch.buffer_per_port_per_gbps",
                    s.buffer_per_port_per_gbps.unwrap_or_default(),
                    "give either switch.buffer_bytes or switch.buffer_per_port_per_gbps, not both",
                ))
            }
            (Some(b), None) if !(full_packet..=MAX_BUFFER_BYTES).contains(&b) => {
                return Err(SpecError::invalid(
                    "switch.buffer_bytes",
                    b,
                    format!(
                        "must be between {full_packet} (one full packet: mss_bytes + header_bytes of the run's largest) \
                         and {MAX_BUFFER_BYTES:e} bytes"
                    ),
                ))
            }
            (None, Some(f)) if !(f.is_finite() && f > 0.0) => {
                return Err(SpecError::invalid(
                    "switch.buffer_per_port_per_gbps",
                    f,
                    "must be a positive number",
                ))
            }
            _ => {}
        }
        if let AdmissionSpec::Static { port_bytes: Some(p) } = s.admission {
            if !(full_packet..=MAX_BUFFER_BYTES).contains(&p) {
                return Err(SpecError::invalid(
                    "switch.admission.port_bytes",
                    p,
                    format!(
                        "must be between {full_packet} (one full packet: mss_bytes + header_bytes of the run's largest) \
                         and {MAX_BUFFER_BYTES:e} bytes"
                    ),
                ));
            }
        }
        check_admission(&s.admission)?;
        if s.queues.is_empty() || s.queues.len() > MAX_QUEUES {
            return Err(SpecError::invalid(
                "switch.queues",
                format!("[{} entries]", s.queues.len()),
                format!("between 1 and {MAX_QUEUES} queues per port are supported"),
            ));
        }
        if s.scheduler == SchedulerKind::Pfabric {
            check_pfabric_switch(s)?;
            self.check_pfabric_ranks()?;
        }
        for (i, q) in s.queues.iter().enumerate() {
            if let Some(c) = q.cap_bytes {
                if c < full_packet {
                    return Err(SpecError::invalid(
                        format!("switch.queues[{i}].cap_bytes"),
                        c,
                        format!("{} (omit the key for no cap)", packet_note("this queue drops every full packet")),
                    ));
                }
            }
            if !(q.dt_alpha.is_finite() && q.dt_alpha > 0.0) {
                return Err(SpecError::invalid(
                    format!("switch.queues[{i}].dt_alpha"),
                    q.dt_alpha,
                    "must be a positive number",
                ));
            }
        }
        // Every switch's buffer as the run sizes it, from the rates of its ports unless given.
        let buffers = crate::world::switch_buffers(self, topo);
        let mut ports = vec![0u64; buffers.len()];
        for l in &topo.links {
            if let Some(sw) = topo.switch_of(l.src) {
                ports[sw.idx()] += 1;
            }
        }
        let (key, value) = match (s.buffer_bytes, s.buffer_per_port_per_gbps, &s.admission) {
            (Some(b), _, _) => ("switch.buffer_bytes", b.to_string()),
            (None, Some(f), _) => ("switch.buffer_per_port_per_gbps", f.to_string()),
            (None, None, AdmissionSpec::Static { port_bytes: Some(p) }) => ("switch.admission.port_bytes", p.to_string()),
            (None, None, _) => ("switch.buffer_per_port_per_gbps", format!("{DEFAULT_BUFFER_PER_PORT_PER_GBPS} (the default)")),
        };
        for (sw, &b) in buffers.iter().enumerate() {
            if !(full_packet..=MAX_BUFFER_BYTES).contains(&b) {
                return Err(SpecError::invalid(
                    key,
                    value,
                    format!(
                        "switch {sw}'s buffer would be {b} bytes; a buffer must be between {full_packet} (one full \
                         packet: mss_bytes + header_bytes of the run's largest) and {MAX_BUFFER_BYTES:e} bytes: \
                         give switch.buffer_bytes or change this key"
                    ),
                ));
            }
            // Static partitioning without port_bytes gives each port buffer / ports.
            if let AdmissionSpec::Static { port_bytes: None } = s.admission {
                let ports = ports[sw];
                let share = b / ports.max(1);
                if share < full_packet {
                    return Err(SpecError::invalid(
                        "switch.admission",
                        "{ policy = \"static\" }",
                        format!(
                            "switch {sw} has {ports} ports sharing {b} bytes, {share} bytes each: {} (give port_bytes \
                             or a larger buffer)",
                            packet_note("its ports drop every full packet")
                        ),
                    ));
                }
            }
        }
        Ok(buffers)
    }

    fn check_transport(&self) -> Result<(), SpecError> {
        check_transport("transport", &self.transport)?;
        for (i, w) in self.workload.iter().enumerate() {
            if let Some(t) = w.transport() {
                check_transport(&format!("workload[{i}].transport"), t)?;
            }
        }
        self.check_credit_switches()
    }

    /// `switch.scheduler = "pfabric"` orders packets by the priority (rank) only pFabric's hosts
    /// give them; every other transport's packets have rank 0 (`queue::pfabric`). With no
    /// `kind = "pfabric"` transfer in the run every rank is 0, and the port is one drop-tail FIFO
    /// queue under pFabric's name, so the scenario is refused. A mix is valid: the other
    /// transports' packets go first, as documented there.
    fn check_pfabric_ranks(&self) -> Result<(), SpecError> {
        let used: Vec<&TransportSpec> = if self.workload.is_empty() {
            vec![&self.transport]
        } else {
            self.workload.iter().map(|w| w.transport().unwrap_or(&self.transport)).collect()
        };
        if used.iter().any(|t| matches!(t, TransportSpec::Pfabric(_))) {
            return Ok(());
        }
        let mut kinds: Vec<String> = used.iter().map(|t| format!("{:?}", t.kind())).collect();
        kinds.sort();
        kinds.dedup();
        Err(SpecError::invalid(
            "switch.scheduler",
            "\"pfabric\"",
            format!(
                "orders packets by the priority only kind = \"pfabric\" hosts give them, but this run's transport is \
                 {} (transport.kind, and the workload entries' own), whose packets all have priority 0, so each port \
                 would be a plain drop-tail FIFO: set transport.kind = \"pfabric\", or use another scheduler (e.g. \
                 switch.scheduler = \"strict_priority\")",
                kinds.join(", ")
            ),
        ))
    }

    /// ExpressPass and Aeolus need their switch halves (`switch.credit_queue_pkts`, and for
    /// Aeolus `switch.selective_drop_bytes`); both keys are range-checked.
    fn check_credit_switches(&self) -> Result<(), SpecError> {
        let s = &self.switch;
        if let Some(n) = s.credit_queue_pkts {
            if n == 0 || n > MAX_CREDIT_QUEUE_PKTS {
                return Err(SpecError::invalid(
                    "switch.credit_queue_pkts",
                    n,
                    format!("must be between 1 and {MAX_CREDIT_QUEUE_PKTS} credits (ExpressPass §3.1 uses 8)"),
                ));
            }
        }
        if s.selective_drop_bytes.is_some_and(|b| b > MAX_SELECTIVE_DROP_BYTES) {
            return Err(SpecError::invalid(
                "switch.selective_drop_bytes",
                s.selective_drop_bytes.unwrap_or(0),
                format!("must be at most {MAX_SELECTIVE_DROP_BYTES} bytes (Aeolus §3.2 uses a few packets, e.g. 8000)"),
            ));
        }
        let transports = std::iter::once(("transport".to_owned(), &self.transport)).chain(
            self.workload.iter().enumerate().filter_map(|(i, w)| Some((format!("workload[{i}].transport"), w.transport()?))),
        );
        let is_multipath = match &self.topology {
            TopologySpec::LeafSpine(l) => l.leaves > 1 && l.spines.saturating_mul(l.links_per_spine.max(1)) > 1,
            _ => true,
        };
        let is_symmetric = matches!(self.routing.mode, RoutingMode::SymmetricEcmp | RoutingMode::FlowIndex);
        for (at, t) in transports {
            let kind = t.kind();
            let is_xpass = matches!(t, TransportSpec::Expresspass(_) | TransportSpec::Aeolus(_));
            if is_xpass && is_multipath && !is_symmetric {
                return Err(SpecError::invalid(
                    "routing.mode",
                    // As written in TOML ("ecmp"), not the debug name (Ecmp).
                    serde_json::to_string(&self.routing.mode).unwrap_or_else(|_| format!("{:?}", self.routing.mode)),
                    format!(
                        "{at}.kind = {kind:?} needs each flow's credits to cross its data's links in reverse \
                         (ExpressPass §3.1), which per-switch hashing does not give: set routing.mode = \
                         \"symmetric_ecmp\" (or \"flow_index\")"
                    ),
                ));
            }
            if is_xpass && s.credit_queue_pkts.is_none() {
                return Err(SpecError::invalid(
                    format!("{at}.kind"),
                    format!("{kind:?}"),
                    "needs switches that queue and rate-limit credits apart from data (ExpressPass §3.1): set \
                     switch.credit_queue_pkts, e.g. 8",
                ));
            }
            if matches!(t, TransportSpec::Aeolus(_)) && s.selective_drop_bytes.is_none() {
                return Err(SpecError::invalid(
                    format!("{at}.kind"),
                    format!("{kind:?}"),
                    "needs switches that drop unscheduled packets above a small queue (Aeolus §3.2): set \
                     switch.selective_drop_bytes, e.g. 8000",
                ));
            }
        }
        Ok(())
    }
}

impl HostSpec {
    /// Range checks; `full_packet` is the largest packet of the run's transports.
    pub(crate) fn check(&self, full_packet: u64) -> Result<(), SpecError> {
        if let Some(b) = self.nic_buffer_bytes {
            if b < full_packet {
                return Err(SpecError::invalid(
                    "host.nic_buffer_bytes",
                    b,
                    format!(
                        "must hold at least one full packet ({full_packet} B: mss_bytes + header_bytes of the run's \
                         largest), else the NIC drops every full packet (omit the key for an unbounded NIC queue)"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The note every time bound's message carries.
const MAX_TIME_NOTE: &str = "1e6 s, about 11.6 days: the longest time a scenario may give";

/// [`MAX_TIME_S`] in microseconds.
const MAX_TIME_US: f64 = MAX_TIME_S * 1e6;

/// "about N flows (~X GB of transfer state and records), more than the limit of M".
fn too_many_flows(flows: f64) -> String {
    let bytes = flows * crate::world::BYTES_PER_TRANSFER as f64;
    format!(
        "this would generate about {flows:.3e} flows (~{} of transfer state and records), more than the limit of \
         {MAX_FLOWS}",
        gigabytes(bytes)
    )
}

fn stop_hint(stop_ms: Option<f64>) -> &'static str {
    if stop_ms.is_some() {
        " (or shorten run.stop_ms)"
    } else {
        " (or set run.stop_ms)"
    }
}

fn gigabytes(bytes: f64) -> String {
    if bytes >= 1e9 {
        format!("{:.1} GB", bytes / 1e9)
    } else {
        format!("{:.1} MB", bytes / 1e6)
    }
}

/// Range checks of one transport table; `at` is its key (`transport`, `workload[2].transport`).
fn check_transport(at: &str, t: &TransportSpec) -> Result<(), SpecError> {
    let key = |k: &str| format!("{at}.{k}");
    let mss = t.mss_bytes();
    if mss == 0 || mss > MAX_MSS_BYTES {
        return Err(SpecError::invalid(key("mss_bytes"), mss, format!("must be between 1 and {MAX_MSS_BYTES}")));
    }
    let header = t.header_bytes();
    let max_header = MAX_PACKET_BYTES - mss;
    if header == 0 || header > max_header {
        return Err(SpecError::invalid(
            key("header_bytes"),
            header,
            format!(
                "must be between 1 and {max_header}: a packet (mss_bytes = {mss} plus its header) is at most \
                 {MAX_PACKET_BYTES} bytes"
            ),
        ));
    }
    if let Some(k) = t.tcp() {
        positive(&key("init_cwnd_pkts"), k.init_cwnd_pkts)?;
        if k.init_cwnd_pkts > MAX_INIT_CWND_PKTS {
            return Err(SpecError::invalid(
                key("init_cwnd_pkts"),
                k.init_cwnd_pkts,
                format!("must be at most {MAX_INIT_CWND_PKTS} packets: a sender queues its whole first window at its NIC at once"),
            ));
        }
        if let Some(p) = k.ack_prio {
            class(&key("ack_prio"), p)?;
        }
        positive(&key("dupack_threshold"), k.dupack_threshold)?;
        if k.rack_tlp && !k.sack {
            return Err(SpecError::invalid(
                key("rack_tlp"),
                true,
                format!("needs selective acknowledgments: set {at}.sack = true as well (RACK-TLP, RFC 8985, reads the SACK scoreboard)"),
            ));
        }
        if !k.slow_start && matches!(t, TransportSpec::PowerTcp(_)) {
            return Err(SpecError::invalid(
                key("slow_start"),
                false,
                "PowerTCP sets its window from in-band telemetry and has no slow start to turn off: remove the key (it applies to dctcp and newreno)",
            ));
        }
        if k.prr && !k.sack {
            return Err(SpecError::invalid(
                key("prr"),
                true,
                format!("needs selective acknowledgments: set {at}.sack = true as well (PRR, RFC 9937, counts what each ACK delivers by the SACK scoreboard's pipe)"),
            ));
        }
        timeout_us(&key("min_rto_us"), k.min_rto_us, 1)?;
        timeout_us(&key("init_rto_us"), k.init_rto_us, 1)?;
        timeout_us(&key("max_rto_us"), k.max_rto_us, 1)?;
        timeout_us(&key("delayed_ack_timeout_us"), k.delayed_ack_timeout_us, 0)?;
        if k.max_rto_us < k.min_rto_us {
            return Err(SpecError::invalid(
                key("max_rto_us"),
                k.max_rto_us,
                format!("must be >= {at}.min_rto_us ({})", k.min_rto_us),
            ));
        }
    }
    match t {
        TransportSpec::Dctcp(d) => {
            if !(d.g > 0.0 && d.g <= 1.0) {
                return Err(SpecError::invalid(key("g"), d.g, "must be in (0, 1]"));
            }
            if !(0.0..=1.0).contains(&d.init_alpha) {
                return Err(SpecError::invalid(key("init_alpha"), d.init_alpha, "must be in [0, 1]"));
            }
        }
        TransportSpec::PowerTcp(p) => {
            if !(p.gamma > 0.0 && p.gamma <= 1.0) {
                return Err(SpecError::invalid(key("gamma"), p.gamma, "must be in (0, 1]"));
            }
            if p.beta_bytes == Some(0) {
                return Err(SpecError::invalid(key("beta_bytes"), 0, "must be positive"));
            }
        }
        TransportSpec::Udp(u) => {
            if let Some(r) = u.rate_gbps {
                rate(&key("rate_gbps"), r)?;
            }
        }
        TransportSpec::Atp(a) => {
            if let Some(r) = a.rate_gbps {
                rate(&key("rate_gbps"), r)?;
            }
            if !(a.m > 0.0 && a.m <= 1.0) {
                return Err(SpecError::invalid(key("m"), a.m, "must be in (0, 1] (eq. (2)'s reaction speed)"));
            }
            if !(0.0..=1.0).contains(&a.msr) {
                return Err(SpecError::invalid(key("msr"), a.msr, "must be in [0, 1] (1 = every message, reliably)"));
            }
            if let Some(us) = a.init_rtt_us {
                if !(us.is_finite() && us > 0.0 && us <= MAX_TIME_US) {
                    return Err(SpecError::invalid(
                        key("init_rtt_us"),
                        us,
                        format!("must be a positive number of microseconds, at most {MAX_TIME_US:e} ({MAX_TIME_NOTE})"),
                    ));
                }
            }
            if !(2..=MAX_QUEUES as u8).contains(&a.classes) {
                return Err(SpecError::invalid(
                    key("classes"),
                    a.classes,
                    format!("must be between 2 and {MAX_QUEUES} (class 0 is reserved for non-approximate traffic)"),
                ));
            }
            class(&key("ack_prio"), a.ack_prio)?;
            if a.message_bytes == Some(0) {
                return Err(SpecError::invalid(key("message_bytes"), 0, "must be at least 1 byte; leave it out for one packet per message"));
            }
            positive(&key("max_silent_epochs"), a.max_silent_epochs)?;
        }
        TransportSpec::Expresspass(x) | TransportSpec::Aeolus(x) => {
            let unit = |k: &str, v: f64, lo_open: bool, what: &str| {
                let ok = v.is_finite() && v <= 1.0 && if lo_open { v > 0.0 } else { v >= 0.0 };
                if ok {
                    Ok(())
                } else {
                    Err(SpecError::invalid(key(k), v, format!("must be in (0, 1] ({what})")))
                }
            };
            if !(x.target_loss.is_finite() && x.target_loss > 0.0 && x.target_loss < 1.0) {
                return Err(SpecError::invalid(
                    key("target_loss"),
                    x.target_loss,
                    "must be in (0, 1) (Algorithm 1's target credit loss; ExpressPass uses 0.125)",
                ));
            }
            unit("w_init", x.w_init, true, "Algorithm 1's initial w")?;
            unit("w_max", x.w_max, true, "Algorithm 1's largest w")?;
            unit("w_min", x.w_min, true, "Algorithm 1's smallest w")?;
            unit("init_rate", x.init_rate, true, "the initial credit rate as a fraction of the maximum")?;
            if x.w_min > x.w_max {
                return Err(SpecError::invalid(key("w_min"), x.w_min, format!("must be <= {at}.w_max ({})", x.w_max)));
            }
            if let Some(us) = x.init_rtt_us {
                if !(us.is_finite() && us > 0.0 && us <= MAX_TIME_US) {
                    return Err(SpecError::invalid(
                        key("init_rtt_us"),
                        us,
                        format!("must be a positive number of microseconds, at most {MAX_TIME_US:e} ({MAX_TIME_NOTE})"),
                    ));
                }
            }
            timeout_us(&key("rto_us"), x.rto_us, 1)?;
            match (t, x.unscheduled_bytes) {
                (TransportSpec::Expresspass(_), Some(b)) => {
                    return Err(SpecError::invalid(
                        key("unscheduled_bytes"),
                        b,
                        "ExpressPass sends nothing without a credit: use kind = \"aeolus\" for an unscheduled first RTT",
                    ));
                }
                (_, Some(b)) if b == 0 || b > MAX_UNSCHEDULED_BYTES => {
                    return Err(SpecError::invalid(
                        key("unscheduled_bytes"),
                        b,
                        format!(
                            "must be between 1 and {MAX_UNSCHEDULED_BYTES} bytes (leave it out for one BDP, as in Aeolus \
                             §3.1; kind = \"expresspass\" sends none)"
                        ),
                    ));
                }
                _ => {}
            }
        }
        TransportSpec::Pfabric(p) => {
            if let Some(iw) = p.init_cwnd_pkts {
                positive(&key("init_cwnd_pkts"), iw)?;
                if iw > p.max_cwnd_pkts {
                    return Err(SpecError::invalid(
                        key("init_cwnd_pkts"),
                        iw,
                        format!("must be at most {at}.max_cwnd_pkts ({}); leave it out for one BDP", p.max_cwnd_pkts),
                    ));
                }
            }
            if !(1..=MAX_PFABRIC_WINDOW_PKTS).contains(&p.max_cwnd_pkts) {
                return Err(SpecError::invalid(
                    key("max_cwnd_pkts"),
                    p.max_cwnd_pkts,
                    format!(
                        "must be between 1 and {MAX_PFABRIC_WINDOW_PKTS} packets: it bounds each flow's scoreboard and \
                         its receiver's reordering state"
                    ),
                ));
            }
            if let Some(us) = p.rto_us {
                // At least 1 µs, as TCP's `min_rto_us`: a shorter timeout fires (and probes)
                // millions of times per simulated second without telling anything.
                if !(us.is_finite() && (1.0..=MAX_TIME_US).contains(&us)) {
                    return Err(SpecError::invalid(
                        key("rto_us"),
                        us,
                        format!(
                            "must be between 1 and {MAX_TIME_US:e} microseconds ({MAX_TIME_NOTE}); leave it out for \
                             three base RTTs (pFabric §4.2)"
                        ),
                    ));
                }
            }
            positive(&key("probe_after_timeouts"), p.probe_after_timeouts)?;
        }
        TransportSpec::Mlt(m) => {
            if m.value_bytes != 2 && m.value_bytes != 4 {
                return Err(SpecError::invalid(
                    key("value_bytes"),
                    m.value_bytes,
                    "must be 4 (32-bit floats) or 2 (16-bit floats), APNet'19 §3.2",
                ));
            }
            if m.mss_bytes < u32::from(m.value_bytes) {
                return Err(SpecError::invalid(
                    key("mss_bytes"),
                    m.mss_bytes,
                    format!("must hold at least one value ({at}.value_bytes = {}): a packet never splits a value", m.value_bytes),
                ));
            }
            if !(m.complete_fraction > 0.0 && m.complete_fraction <= 1.0) {
                return Err(SpecError::invalid(
                    key("complete_fraction"),
                    m.complete_fraction,
                    "must be in (0, 1]: the fraction of a message's values the receiver waits for (1 = every value, reliably)",
                ));
            }
            positive(&key("init_cwnd_pkts"), m.init_cwnd_pkts)?;
            if m.init_cwnd_pkts > MAX_INIT_CWND_PKTS {
                return Err(SpecError::invalid(
                    key("init_cwnd_pkts"),
                    m.init_cwnd_pkts,
                    format!("must be at most {MAX_INIT_CWND_PKTS} packets: a sender queues its whole first window at its NIC at once"),
                ));
            }
            if !(m.g > 0.0 && m.g <= 1.0) {
                return Err(SpecError::invalid(key("g"), m.g, "must be in (0, 1]"));
            }
            if !(0.0..=1.0).contains(&m.init_alpha) {
                return Err(SpecError::invalid(key("init_alpha"), m.init_alpha, "must be in [0, 1]"));
            }
            positive(&key("dupack_threshold"), m.dupack_threshold)?;
            timeout_us(&key("rto_us"), m.rto_us, 1)?;
            timeout_us(&key("max_rto_us"), m.max_rto_us, 1)?;
            if m.max_rto_us < m.rto_us {
                return Err(SpecError::invalid(
                    key("max_rto_us"),
                    m.max_rto_us,
                    format!("must be >= {at}.rto_us ({}), the smallest timeout", m.rto_us),
                ));
            }
        }
        TransportSpec::Newreno(_) => {}
    }
    Ok(())
}

/// Most credits a port's credit queue may hold (`switch.credit_queue_pkts`).
const MAX_CREDIT_QUEUE_PKTS: u32 = 1 << 16;
/// Largest selective-dropping threshold (`switch.selective_drop_bytes`): 1 GB.
const MAX_SELECTIVE_DROP_BYTES: u64 = 1 << 30;
/// Largest Aeolus first-RTT budget (`unscheduled_bytes`): 1 GB.
const MAX_UNSCHEDULED_BYTES: u64 = 1 << 30;

/// `switch.scheduler = "pfabric"`: one queue, whose cap is the port's whole buffer, and no
/// shared-buffer policy that would drop before pFabric's own rule (§4.1) does.
fn check_pfabric_switch(s: &SwitchSpec) -> Result<(), SpecError> {
    let why = "pFabric has one queue per port, ordered by each packet's remaining-flow-size priority (SIGCOMM'13 §4.1)";
    if s.queues.len() != 1 {
        return Err(SpecError::invalid(
            "switch.queues",
            format!("[{} entries]", s.queues.len()),
            format!("switch.scheduler = \"pfabric\" needs exactly one queue: {why}; give one table, e.g. queues = [{{ cap_bytes = 36000 }}]"),
        ));
    }
    if s.admission != AdmissionSpec::CompleteSharing {
        // As the user writes it (the debug name, `DynamicThresholds`, is not a TOML spelling).
        let written = toml::Value::try_from(&s.admission).map_or_else(|_| format!("{:?}", s.admission), |v| v.to_string());
        let default = if s.admission == AdmissionSpec::default() { " (the default)" } else { "" };
        return Err(SpecError::invalid(
            "switch.admission",
            format!("{written}{default}"),
            "switch.scheduler = \"pfabric\" drops by priority when a port's buffer (switch.queues[0].cap_bytes) is full, \
             so no shared-buffer policy may drop first: set switch.admission = { policy = \"complete_sharing\" }",
        ));
    }
    if let Some(c) = s.queues[0].cap_bytes.filter(|&c| c > MAX_PFABRIC_BUFFER_BYTES) {
        return Err(SpecError::invalid(
            "switch.queues[0].cap_bytes",
            c,
            format!(
                "a pFabric port scans its queue on every packet, so its buffer is at most {MAX_PFABRIC_BUFFER_BYTES} bytes \
                 (the paper's is 36 KB); omit the key for twice the hosts' BDP"
            ),
        ));
    }
    Ok(())
}

/// A timeout key in microseconds: between `min` and [`MAX_TIME_US`].
fn timeout_us(key: &str, us: u64, min: u64) -> Result<(), SpecError> {
    if us < min || us as f64 > MAX_TIME_US {
        return Err(SpecError::invalid(
            key,
            us,
            format!("must be between {min} and {MAX_TIME_US:e} microseconds ({MAX_TIME_NOTE})"),
        ));
    }
    Ok(())
}

/// Range checks of the admission knobs (files are loaded by [`load_oracle`]).
fn check_admission(a: &AdmissionSpec) -> Result<(), SpecError> {
    let rtt = |key: &str, v: Option<f64>| match v {
        Some(us) if !(us.is_finite() && us > 0.0 && us <= MAX_TIME_US) => Err(SpecError::invalid(
            key,
            us,
            format!("must be a positive number of microseconds, at most {MAX_TIME_US:e} ({MAX_TIME_NOTE})"),
        )),
        _ => Ok(()),
    };
    match a {
        AdmissionSpec::Abm { alpha_first_rtt, base_rtt_us, congested_bytes, .. } => {
            if !(alpha_first_rtt.is_finite() && *alpha_first_rtt > 0.0) {
                return Err(SpecError::invalid(
                    "switch.admission.alpha_first_rtt",
                    alpha_first_rtt,
                    "must be a positive number",
                ));
            }
            rtt("switch.admission.base_rtt_us", *base_rtt_us)?;
            if *congested_bytes == 0 {
                return Err(SpecError::invalid("switch.admission.congested_bytes", 0, "must be positive"));
            }
        }
        AdmissionSpec::Credence { oracle, base_rtt_us } => {
            rtt("switch.admission.base_rtt_us", *base_rtt_us)?;
            check_oracle("switch.admission.oracle", oracle)?;
        }
        _ => {}
    }
    Ok(())
}

fn check_oracle(key: &str, o: &OracleSpec) -> Result<(), SpecError> {
    if let OracleSpec::Flip { inner, p, .. } = o {
        if !(p.is_finite() && (0.0..=1.0).contains(p)) {
            return Err(SpecError::invalid(format!("{key}.p"), p, "must be a probability in [0, 1]"));
        }
        check_oracle(&format!("{key}.inner"), inner)?;
    }
    Ok(())
}

/// Resolve and parse the forest files of an oracle (the parsed forest is cached in the spec).
fn load_oracle(key: &str, o: &mut OracleSpec, base_dir: &Path) -> Result<(), SpecError> {
    match o {
        OracleSpec::Forest { path, model } => {
            let key = format!("{key}.path");
            *path = resolve_file(&key, path, base_dir, &["default"])?;
            let forest = if path == "default" {
                crate::credence::forest::Forest::from_json_str(BUILTIN_FOREST)
            } else {
                crate::credence::forest::Forest::from_file(Path::new(path.as_str()))
            }
            .map_err(|e| SpecError::invalid(&key, format!("{path:?}"), e.0))?;
            *model = LoadedForest(Some(std::sync::Arc::new(forest)));
        }
        OracleSpec::Flip { inner, .. } => load_oracle(&format!("{key}.inner"), inner, base_dir)?,
        OracleSpec::AlwaysAccept | OracleSpec::AlwaysDrop => {}
    }
    Ok(())
}

fn check_pair(key: &str, src: u32, dst: u32, num_hosts: u32) -> Result<(), SpecError> {
    for (k, h) in [("src", src), ("dst", dst)] {
        if h >= num_hosts {
            return Err(SpecError::invalid(
                format!("{key}.{k}"),
                h,
                no_such("host", "hosts", u64::from(num_hosts)),
            ));
        }
    }
    if src == dst {
        return Err(SpecError::invalid(format!("{key}.dst"), dst, "must differ from src"));
    }
    Ok(())
}

/// `prio_schedule` of a workload entry: times finite, in [0, [`MAX_TIME_US`]] and strictly
/// increasing (classes are `u8`, so below 256, by type).
fn check_prio_schedule(prefix: &str, schedule: Option<&[(f64, u8)]>) -> Result<(), SpecError> {
    let mut last: Option<f64> = None;
    for (j, &(t, prio)) in schedule.unwrap_or_default().iter().enumerate() {
        let key = format!("{prefix}.prio_schedule[{j}]");
        let value = format!("[{t}, {prio}]");
        if !(t.is_finite() && (0.0..=MAX_TIME_US).contains(&t)) {
            return Err(SpecError::invalid(
                key,
                value,
                format!(
                    "the time must be a number of microseconds between 0 and {MAX_TIME_US:e} ({MAX_TIME_NOTE}); each \
                     entry is [t_us, prio]"
                ),
            ));
        }
        if let Some(prev) = last.filter(|&p| t <= p) {
            return Err(SpecError::invalid(
                key,
                value,
                format!(
                    "times must be strictly increasing: this entry's {t} us is not after the previous entry's {prev} us \
                     (sort the entries, and merge entries at the same time)"
                ),
            ));
        }
        if usize::from(prio) >= MAX_QUEUES {
            return Err(SpecError::invalid(key, value, class_problem()));
        }
        last = Some(t);
    }
    Ok(())
}

fn non_negative_us(key: &str, us: f64) -> Result<(), SpecError> {
    if us.is_finite() && (0.0..=MAX_TIME_US).contains(&us) {
        Ok(())
    } else {
        Err(SpecError::invalid(
            key,
            us,
            format!("must be a number of microseconds between 0 and {MAX_TIME_US:e} ({MAX_TIME_NOTE})"),
        ))
    }
}

/// `times` pauses of `us` each must add up to at most [`MAX_TIME_US`], so that pauses alone
/// never run the clock out.
fn within_clock(key: &str, us: f64, times: u32, times_key: &str) -> Result<(), SpecError> {
    if us * times as f64 <= MAX_TIME_US {
        Ok(())
    } else {
        Err(SpecError::invalid(
            key,
            us,
            format!(
                "{times_key} x {} = {:e} us, more than {MAX_TIME_US:e} us ({MAX_TIME_NOTE})",
                key.rsplit('.').next().unwrap_or(key),
                us * times as f64
            ),
        ))
    }
}

/// What is wrong with a priority class of [`MAX_QUEUES`] or more.
fn class_problem() -> String {
    format!(
        "a priority class must be between 0 and {} (switches have at most {MAX_QUEUES} queues; a class at or \
         beyond switch.queues' length goes to the last queue)",
        MAX_QUEUES - 1
    )
}

/// A priority class key (`prio`, `ack_prio`): below [`MAX_QUEUES`]. Classes at or beyond
/// `switch.queues`' length are valid and go to the last queue (`SwitchSpec::queues`).
fn class(key: &str, prio: u8) -> Result<(), SpecError> {
    if usize::from(prio) >= MAX_QUEUES {
        return Err(SpecError::invalid(key, prio, class_problem()));
    }
    Ok(())
}

/// An entry's first start, `start_ms` (`start_us` / 1000 for some kinds), must come before
/// `run.stop_ms`, or the entry would start nothing.
fn starts_before_stop(key: &str, start_ms: f64, value: f64, stop_ms: Option<f64>) -> Result<(), SpecError> {
    match stop_ms {
        Some(stop) if start_ms >= stop => Err(SpecError::invalid(
            key,
            value,
            format!(
                "is at or after run.stop_ms = {stop}, so this entry would start nothing: start it earlier, raise \
                 run.stop_ms, or remove the entry"
            ),
        )),
        _ => Ok(()),
    }
}

fn positive(key: &str, v: u32) -> Result<(), SpecError> {
    if v == 0 {
        Err(SpecError::invalid(key, v, "must be at least 1"))
    } else {
        Ok(())
    }
}

fn rate(key: &str, gbps: f64) -> Result<(), SpecError> {
    if !(gbps.is_finite() && (MIN_RATE_GBPS..=MAX_RATE_GBPS).contains(&gbps)) {
        Err(SpecError::invalid(
            key,
            gbps,
            format!("a rate must be between {MIN_RATE_GBPS} Gb/s (1 Mb/s) and {MAX_RATE_GBPS} Gb/s (100 Tb/s)"),
        ))
    } else {
        Ok(())
    }
}

fn delay(key: &str, ns: u64) -> Result<(), SpecError> {
    if ns > MAX_DELAY_NS {
        Err(SpecError::invalid(
            key,
            ns,
            format!("a propagation delay must be between 0 and {MAX_DELAY_NS} ns (1 s)"),
        ))
    } else {
        Ok(())
    }
}

/// An arrival window `[start_ms, start_ms + duration_ms)` that ends within [`MAX_TIME_S`].
fn window(prefix: &str, start_ms: f64, duration_ms: f64) -> Result<(), SpecError> {
    let max_ms = MAX_TIME_S * 1e3;
    if !(start_ms.is_finite() && (0.0..max_ms).contains(&start_ms)) {
        return Err(SpecError::invalid(
            format!("{prefix}.start_ms"),
            start_ms,
            format!("must be >= 0 and below {max_ms:e} ms ({MAX_TIME_NOTE})"),
        ));
    }
    if !(duration_ms.is_finite() && duration_ms > 0.0 && start_ms + duration_ms <= max_ms) {
        return Err(SpecError::invalid(
            format!("{prefix}.duration_ms"),
            duration_ms,
            format!(
                "must be a positive number of milliseconds with start_ms + duration_ms at most {max_ms:e} \
                 ({MAX_TIME_NOTE})"
            ),
        ));
    }
    Ok(())
}

/// The largest transfer a transport may carry in this network: [`MAX_TRANSFER_BYTES`], and no
/// more than its packets (`mss_bytes` of payload, `header_bytes` more on the wire) serialize
/// in [`MAX_TIME_PS`] at `rate` (the slowest link, or the transport's own pacing rate if lower).
struct SizeRule {
    mss: u64,
    header: u64,
    rate: Bps,
    /// `kind = "mlt"`: the largest message in bytes ([`MAX_MLT_VALUES`] values).
    mlt_max: Option<u64>,
}

/// Most values in one message of `kind = "mlt"`: its sender keeps a slot per packet and its
/// receiver a range per packet, so this bounds both (2^28 values: 1 GiB of 32-bit floats).
pub(crate) const MAX_MLT_VALUES: u64 = 1 << 28;

impl SizeRule {
    fn new(t: &TransportSpec, ctx: &Context<'_>) -> SizeRule {
        let paced = match t {
            TransportSpec::Udp(UdpSpec { rate_gbps: Some(g), .. }) => Bps::from_gbps_f64(*g),
            _ => ctx.min_link_rate,
        };
        let mlt_max = match t {
            TransportSpec::Mlt(m) => Some(MAX_MLT_VALUES * u64::from(m.value_bytes)),
            _ => None,
        };
        SizeRule { mss: t.mss_bytes().into(), header: t.header_bytes().into(), rate: paced.min(ctx.min_link_rate), mlt_max }
    }

    fn max_bytes(&self) -> u64 {
        // Whole packets that serialize in MAX_TIME_PS: 1e18 x 1e14 < 2^128.
        let packets = MAX_TIME_PS as u128 * self.rate.get() as u128
            / (8 * PS_PER_S as u128 * u128::from(self.mss + self.header));
        let by_time = u64::try_from(packets.saturating_mul(u128::from(self.mss))).unwrap_or(u64::MAX);
        by_time.min(MAX_TRANSFER_BYTES)
    }

    /// What is wrong with a transfer of `size` bytes, if anything ("must be between ...").
    fn problem(&self, size: u64) -> Option<String> {
        let max = self.max_bytes();
        if let Some(m) = self.mlt_max.filter(|&m| m < max && size > m) {
            return Some(format!(
                "must be between 1 and {m} bytes: a message of kind = \"mlt\" holds at most {MAX_MLT_VALUES} values \
                 (transport.value_bytes each); split it into several flows"
            ));
        }
        if size >= 1 && size <= max {
            return None;
        }
        let why = if max < MAX_TRANSFER_BYTES {
            format!(
                ": larger transfers would take more than {MAX_TIME_S:e} s to serialize at {} Gb/s (the slowest link \
                 or sending rate) with {} B segments and {} B headers",
                self.rate.as_gbps_f64(),
                self.mss,
                self.header
            )
        } else {
            " (1 TB)".into()
        };
        Some(format!("must be between 1 and {max} bytes{why}"))
    }

    fn check(&self, key: &str, size: u64) -> Result<(), SpecError> {
        match self.problem(size) {
            Some(m) => Err(SpecError::invalid(key, size, m)),
            None => Ok(()),
        }
    }
}

/// Resolve `name` to a built-in CDF or an existing file; returns the canonical form stored in
/// the resolved spec (the built-in name, or an absolute path).
fn resolve_file(key: &str, name: &str, base_dir: &Path, builtins: &[&str]) -> Result<String, SpecError> {
    if builtins.contains(&name) {
        return Ok(name.to_string());
    }
    let p = PathBuf::from(name);
    let p = if p.is_absolute() { p } else { base_dir.join(p) };
    if !p.is_file() {
        let hint = if builtins.is_empty() {
            String::new()
        } else {
            format!(" (built-in names: {})", builtins.join(", "))
        };
        return Err(SpecError::invalid(
            key,
            format!("{name:?}"),
            format!("no such file: {}{hint}", p.display()),
        ));
    }
    Ok(p.canonicalize().unwrap_or(p).to_string_lossy().into_owned())
}

/// The most workers a `training` entry may have.
const MAX_TRAINING_WORKERS: usize = 4096;

/// `kind = "training"`: distinct existing hosts, a server for `ps` only, sizes and times.
fn check_training(prefix: &str, t: &TrainingSpec, num_hosts: u32, sizes: &SizeRule) -> Result<(), SpecError> {
    use crate::app::SyncPattern;
    let key = |k: &str| format!("{prefix}.{k}");
    if t.workers.len() < 2 || t.workers.len() > MAX_TRAINING_WORKERS {
        return Err(SpecError::invalid(
            key("workers"),
            format!("[{} hosts]", t.workers.len()),
            format!("give between 2 and {MAX_TRAINING_WORKERS} distinct worker hosts"),
        ));
    }
    for (j, &h) in t.workers.iter().enumerate() {
        let k = format!("{prefix}.workers[{j}]");
        if h >= num_hosts {
            return Err(SpecError::invalid(k, h, no_such("host", "hosts", u64::from(num_hosts))));
        }
        if t.workers[..j].contains(&h) {
            return Err(SpecError::invalid(k, h, "a host appears twice among the workers"));
        }
    }
    match (t.pattern, t.server) {
        (SyncPattern::Ps, None) => {
            return Err(SpecError::invalid(key("server"), "missing", "a parameter server (pattern = \"ps\") needs `server`, a host that is not a worker"));
        }
        (SyncPattern::Ps, Some(s)) => {
            if s >= num_hosts {
                return Err(SpecError::invalid(key("server"), s, no_such("host", "hosts", u64::from(num_hosts))));
            }
            if t.workers.contains(&s) {
                return Err(SpecError::invalid(key("server"), s, "the server is also a worker: choose another host"));
            }
        }
        (SyncPattern::Ring, Some(s)) => {
            return Err(SpecError::invalid(key("server"), s, "a ring all-reduce has no server: remove it, or use pattern = \"ps\""));
        }
        (SyncPattern::Ring, None) => {}
    }
    sizes.check(&key("model_bytes"), t.model_bytes)?;
    positive(&key("iterations"), t.iterations)?;
    non_negative_us(&key("compute_us"), t.compute_us)?;
    within_clock(&key("compute_us"), t.compute_us, t.iterations, "iterations")?;
    non_negative_us(&key("start_us"), t.start_us)?;
    class(&key("prio"), t.prio)?;
    if let Some(c) = t.job_compute_us {
        non_negative_us(&key("job_compute_us"), c)?;
    }
    if let Some(p) = t.complete_fraction {
        if !(p > 0.0 && p <= 1.0) {
            return Err(SpecError::invalid(
                key("complete_fraction"),
                p,
                "must be in (0, 1]: the fraction of every gradient the model needs, 1 - its loss tolerance x1 (e.g. 0.85)",
            ));
        }
    }
    Ok(())
}

/// `kind = "approx_jobs"`: hosts, ranges, and a transport that fits the scheme.
fn check_approx_jobs(prefix: &str, a: &ApproxJobsSpec, num_hosts: u32, transport: &TransportSpec) -> Result<(), SpecError> {
    use crate::app::ApproxScheme;
    let key = |k: &str| format!("{prefix}.{k}");
    let max = crate::app::approx_jobs::MAX_APPROX_MESSAGES;
    if !(1..=max).contains(&a.messages) {
        return Err(SpecError::invalid(key("messages"), a.messages, format!("must be between 1 and {max}")));
    }
    match (a.msr, &a.groups) {
        (Some(msr), None) => {
            if !(0.0..=1.0).contains(&msr) {
                return Err(SpecError::invalid(key("msr"), msr, "must be in [0, 1] (the fraction of messages a job needs)"));
            }
        }
        (None, None) => {
            return Err(SpecError::invalid(key("msr"), "missing", "give every job's msr (in [0, 1]), or its groups"));
        }
        (Some(msr), Some(_)) => {
            return Err(SpecError::invalid(key("msr"), msr, "give either msr (one group) or groups, not both: remove one"));
        }
        (None, Some(groups)) => {
            let most = crate::app::MAX_JOB_GROUPS;
            if groups.is_empty() || groups.len() > most {
                return Err(SpecError::invalid(key("groups"), groups.len(), format!("a job has 1 to {most} groups")));
            }
            for (g, gs) in groups.iter().enumerate() {
                if !(gs.share > 0.0 && gs.share <= 1.0) {
                    return Err(SpecError::invalid(format!("{prefix}.groups[{g}].share"), gs.share, "must be in (0, 1] (its fraction of the job's messages)"));
                }
                if !(0.0..=1.0).contains(&gs.msr) {
                    return Err(SpecError::invalid(format!("{prefix}.groups[{g}].msr"), gs.msr, "must be in [0, 1] (the fraction of the group's messages a job needs)"));
                }
            }
            let total: f64 = groups.iter().map(|g| g.share).sum();
            if (total - 1.0).abs() > 1e-9 {
                return Err(SpecError::invalid(key("groups"), format!("shares summing to {total}"), "the shares must sum to 1"));
            }
            let shares: Vec<f64> = groups.iter().map(|g| g.share).collect();
            let sizes = crate::app::approx_jobs::group_sizes(&shares, a.messages);
            if let Some(g) = sizes.iter().position(|&n| n == 0) {
                return Err(SpecError::invalid(format!("{prefix}.groups[{g}].share"), groups[g].share, format!("gives the group none of a job's {} messages: raise its share or `messages`", a.messages)));
            }
        }
    }
    positive(&key("jobs_per_host"), a.jobs_per_host)?;
    if let Some(l) = a.load {
        if !(l > 0.0 && l <= 1.0) {
            return Err(SpecError::invalid(key("load"), l, "must be in (0, 1] (a fraction of the host link); leave it out for the trace's own gaps"));
        }
    }
    let host = |k: String, h: u32| {
        if h >= num_hosts {
            return Err(SpecError::invalid(k, h, no_such("host", "hosts", u64::from(num_hosts))));
        }
        Ok(())
    };
    if let Some(r) = a.receiver {
        host(key("receiver"), r)?;
    }
    match &a.senders {
        Some(s) => {
            if s.is_empty() {
                return Err(SpecError::invalid(key("senders"), "[]", "give at least one host, or leave senders out for every host"));
            }
            for (j, &h) in s.iter().enumerate() {
                host(format!("{prefix}.senders[{j}]"), h)?;
                if s[..j].contains(&h) {
                    return Err(SpecError::invalid(format!("{prefix}.senders[{j}]"), h, "a host appears twice"));
                }
                if a.receiver == Some(h) {
                    return Err(SpecError::invalid(format!("{prefix}.senders[{j}]"), h, "the receiver cannot send to itself"));
                }
            }
        }
        None if num_hosts < 2 => {
            return Err(SpecError::invalid(key("senders"), "every host", "jobs need at least two hosts"));
        }
        None => {}
    }
    class(&key("prio"), a.prio)?;
    non_negative_us(&key("start_us"), a.start_us)?;
    non_negative_us(&key("think_us"), a.think_us)?;
    within_clock(&key("think_us"), a.think_us, a.jobs_per_host, "jobs_per_host")?;
    non_negative_us(&key("udp_timeout_us"), a.udp_timeout_us)?;
    let fits = match a.scheme {
        ApproxScheme::Atp => matches!(transport, TransportSpec::Atp(_)),
        ApproxScheme::Udp => matches!(transport, TransportSpec::Udp(_)),
        ApproxScheme::EarlySend | ApproxScheme::SampleSend => transport.is_reliable(),
    };
    if !fits {
        let (name, want) = match a.scheme {
            ApproxScheme::Atp => ("atp", "kind = \"atp\""),
            ApproxScheme::Udp => ("udp", "kind = \"udp\""),
            ApproxScheme::EarlySend => ("early_send", "a reliable kind (dctcp, newreno, power_tcp, pfabric, expresspass, aeolus)"),
            ApproxScheme::SampleSend => ("sample_send", "a reliable kind (dctcp, newreno, power_tcp, pfabric, expresspass, aeolus)"),
        };
        return Err(SpecError::invalid(
            key("scheme"),
            name,
            format!("runs over {want}, but this entry's transport is {:?}; give the entry a transport table of that kind", transport.kind()),
        ));
    }
    Ok(())
}

fn check_workload(
    i: usize,
    w: &mut WorkloadSpec,
    ctx: &Context<'_>,
    base_dir: &Path,
    transport: &TransportSpec,
) -> Result<(), SpecError> {
    let prefix = format!("workload[{i}]");
    let num_hosts = ctx.topo.num_hosts;
    let sizes = SizeRule::new(transport, ctx);
    match w {
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
            class(&format!("{prefix}.prio"), *prio)?;
            check_prio_schedule(&prefix, prio_schedule.as_deref())?;
            let key = format!("{prefix}.cdf");
            *cdf = resolve_file(&key, cdf, base_dir, crate::workload::BUILTIN_CDFS)?;
            let dist = crate::workload::load_cdf(cdf).map_err(|m| SpecError::invalid(&key, format!("{cdf:?}"), m))?;
            // A mean of zero (every size 0) would make the arrival rate infinite.
            if !(dist.mean().is_finite() && dist.mean() >= 1.0) {
                return Err(SpecError::invalid(
                    &key,
                    format!("{cdf:?}"),
                    format!(
                        "the distribution's mean flow size is {} bytes, below one byte: give sizes in bytes",
                        dist.mean()
                    ),
                ));
            }
            let largest = dist.max_size().round();
            if largest > sizes.max_bytes() as f64 {
                let why = sizes.problem(largest as u64).unwrap_or_default();
                return Err(SpecError::invalid(
                    &key,
                    format!("{cdf:?}"),
                    format!("its largest flow size is {largest} bytes; a flow size {why}"),
                ));
            }
            *loaded = Loaded(Some(std::sync::Arc::new(dist)));
            if !(load.is_finite() && *load > 0.0 && *load <= 1.0) {
                return Err(SpecError::invalid(
                    format!("{prefix}.load"),
                    *load,
                    "must be in (0, 1]: it is a fraction of link capacity",
                ));
            }
            window(&prefix, *start_ms, *duration_ms)?;
            starts_before_stop(&format!("{prefix}.start_ms"), *start_ms, *start_ms, ctx.stop_ms)?;
            if num_hosts < 2 {
                return Err(SpecError::invalid(
                    format!("{prefix}.kind"),
                    "poisson",
                    "needs at least 2 hosts",
                ));
            }
            // With one leaf no flow crosses a leaf uplink (with spines = 0 there is none): a load
            // of that capacity means nothing (it gave 0 flows), and no host is under another leaf
            // (it fell back to uniform). As `senders = "other_leaf"` of incast, both are refused.
            let one_leaf = ctx.topo.num_leaves < 2;
            if one_leaf && *load_reference == LoadReference::LeafUplink {
                return Err(SpecError::invalid(
                    format!("{prefix}.load_reference"),
                    "\"leaf_uplink\"",
                    "the topology has one leaf, so no flow crosses a leaf uplink and the load has no capacity to \
                     refer to: use load_reference = \"host_link\", or more leaves",
                ));
            }
            if one_leaf && *destinations == Destinations::OtherLeaf {
                return Err(SpecError::invalid(
                    format!("{prefix}.destinations"),
                    "\"other_leaf\"",
                    "the topology has one leaf, so no host is under another leaf: use destinations = \"uniform\" \
                     (or \"permutation\"), or more leaves",
                ));
            }
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
            class(&format!("{prefix}.prio"), *prio)?;
            check_prio_schedule(&prefix, prio_schedule.as_deref())?;
            if !(query_rate_per_host.is_finite() && *query_rate_per_host > 0.0) {
                return Err(SpecError::invalid(
                    format!("{prefix}.query_rate_per_host"),
                    *query_rate_per_host,
                    "must be a positive number of queries per second",
                ));
            }
            if *fan_in == 0 || *fan_in >= num_hosts {
                return Err(SpecError::invalid(
                    format!("{prefix}.fan_in"),
                    *fan_in,
                    format!("must be between 1 and the number of hosts - 1 ({})", num_hosts.saturating_sub(1)),
                ));
            }
            if *senders == IncastSenders::OtherLeaf {
                // Every leaf has hosts_per_leaf hosts, so every receiver has as many candidates.
                let outside = num_hosts - ctx.topo.hosts_per_leaf;
                if *fan_in > outside {
                    return Err(SpecError::invalid(
                        format!("{prefix}.fan_in"),
                        *fan_in,
                        format!(
                            "senders = \"other_leaf\" leaves {outside} hosts outside a receiver's leaf: fan_in must be \
                             at most that (or use senders = \"random\")"
                        ),
                    ));
                }
            }
            let per_sender = match (*burst_bytes, *burst_buffer_fraction) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(SpecError::invalid(
                        format!("{prefix}.burst_bytes"),
                        burst_bytes.map(|b| b.to_string()).unwrap_or_else(|| "<absent>".into()),
                        "give exactly one of burst_bytes and burst_buffer_fraction",
                    ))
                }
                (Some(b), None) if b < *fan_in as u64 => {
                    return Err(SpecError::invalid(
                        format!("{prefix}.burst_bytes"),
                        b,
                        "must be at least fan_in bytes (each sender sends burst / fan_in)",
                    ))
                }
                (None, Some(f)) if !(f.is_finite() && f > 0.0 && f <= 1e6) => {
                    return Err(SpecError::invalid(
                        format!("{prefix}.burst_buffer_fraction"),
                        f,
                        "must be a positive fraction of the switch buffer, at most 1e6",
                    ))
                }
                (Some(b), None) => (format!("{prefix}.burst_bytes"), b.to_string(), b / *fan_in as u64),
                (None, Some(f)) => (
                    format!("{prefix}.burst_buffer_fraction"),
                    f.to_string(),
                    // As the generator computes it.
                    ((f * ctx.leaf_buffer as f64).round() as u64 / *fan_in as u64).max(1),
                ),
            };
            let (key, value, bytes) = per_sender;
            if let Some(why) = sizes.problem(bytes) {
                return Err(SpecError::invalid(
                    key,
                    value,
                    format!("each sender's share (burst / fan_in) is {bytes} bytes; a transfer {why}"),
                ));
            }
            window(&prefix, *start_ms, *duration_ms)?;
            starts_before_stop(&format!("{prefix}.start_ms"), *start_ms, *start_ms, ctx.stop_ms)?;
        }
        WorkloadSpec::FlowList(FlowList { path, prio, loaded, .. }) => {
            class(&format!("{prefix}.prio"), *prio)?;
            let key = format!("{prefix}.path");
            *path = resolve_file(&key, path, base_dir, &[])?;
            use crate::textfile::{describe, read_text_file, MAX_FLOW_LIST_BYTES};
            let text = read_text_file(Path::new(path.as_str()), MAX_FLOW_LIST_BYTES).map_err(|e| {
                SpecError::invalid(&key, format!("{path:?}"), format!("cannot read: {}", describe(&e, MAX_FLOW_LIST_BYTES, "a flow list")))
            })?;
            let mut flows = Vec::new();
            crate::workload::parse_flow_list(&text, i as u16, *prio, num_hosts, &mut flows)
                .map_err(|m| SpecError::invalid(&key, format!("{path:?}"), m))?;
            if let Some((f, why)) = flows.iter().find_map(|f| sizes.problem(f.size).map(|why| (f, why))) {
                return Err(SpecError::invalid(
                    &key,
                    format!("{path:?}"),
                    format!("flow {} has {} bytes; a transfer {why}", f.id, f.size),
                ));
            }
            *loaded = Loaded(Some(std::sync::Arc::new(flows)));
        }
        WorkloadSpec::ClosedLoop(c) => {
            for (j, [a, b]) in c.pairs.iter().enumerate() {
                check_pair(&format!("{prefix}.pairs[{j}]"), *a, *b, num_hosts)?;
            }
            if c.pairs.is_empty() {
                return Err(SpecError::invalid(format!("{prefix}.pairs"), "[]", "give at least one [src, dst] pair"));
            }
            sizes.check(&format!("{prefix}.size_bytes"), c.size_bytes)?;
            class(&format!("{prefix}.prio"), c.prio)?;
            positive(&format!("{prefix}.count"), c.count)?;
            non_negative_us(&format!("{prefix}.think_us"), c.think_us)?;
            within_clock(&format!("{prefix}.think_us"), c.think_us, c.count, "count")?;
        }
        WorkloadSpec::Barrier(b) => {
            if b.transfers.is_empty() {
                return Err(SpecError::invalid(format!("{prefix}.transfers"), "[]", "give at least one transfer"));
            }
            for (j, f) in b.transfers.iter().enumerate() {
                let key = |k: &str| format!("{prefix}.transfers[{j}].{k}");
                check_pair(&format!("{prefix}.transfers[{j}]"), f.src, f.dst, num_hosts)?;
                sizes.check(&key("size_bytes"), f.size_bytes)?;
                class(&key("prio"), f.prio)?;
                if f.start_ns != 0 {
                    return Err(SpecError::invalid(
                        key("start_ns"),
                        f.start_ns,
                        "a barrier starts its transfers itself: leave start_ns out (use compute_us)",
                    ));
                }
            }
            positive(&format!("{prefix}.rounds"), b.rounds)?;
            non_negative_us(&format!("{prefix}.compute_us"), b.compute_us)?;
            within_clock(&format!("{prefix}.compute_us"), b.compute_us, b.rounds, "rounds")?;
        }
        WorkloadSpec::Relay(r) => {
            if r.chain.len() < 2 {
                return Err(SpecError::invalid(
                    format!("{prefix}.chain"),
                    format!("{:?}", r.chain),
                    "a chain needs at least two hosts",
                ));
            }
            for (j, h) in r.chain.iter().enumerate() {
                if *h >= num_hosts {
                    return Err(SpecError::invalid(
                        format!("{prefix}.chain[{j}]"),
                        h,
                        no_such("host", "hosts", u64::from(num_hosts)),
                    ));
                }
                if r.chain[..j].contains(h) {
                    return Err(SpecError::invalid(format!("{prefix}.chain[{j}]"), h, "a host appears twice in the chain"));
                }
            }
            sizes.check(&format!("{prefix}.block_bytes"), r.block_bytes)?;
            positive(&format!("{prefix}.blocks"), r.blocks)?;
        }
        WorkloadSpec::ApproxJobs(a) => {
            check_approx_jobs(&prefix, a, num_hosts, transport)?;
            starts_before_stop(&format!("{prefix}.start_us"), a.start_us / 1e3, a.start_us, ctx.stop_ms)?;
        }
        WorkloadSpec::Training(t) => {
            check_training(&prefix, t, num_hosts, &sizes)?;
            starts_before_stop(&format!("{prefix}.start_us"), t.start_us / 1e3, t.start_us, ctx.stop_ms)?;
        }
        WorkloadSpec::Flows(Flows { flows, .. }) => {
            let max_start_ns = MAX_TIME_PS / units::PS_PER_NS;
            for (j, f) in flows.iter().enumerate() {
                let key = |k: &str| format!("{prefix}.flows[{j}].{k}");
                check_pair(&format!("{prefix}.flows[{j}]"), f.src, f.dst, num_hosts)?;
                sizes.check(&key("size_bytes"), f.size_bytes)?;
                class(&key("prio"), f.prio)?;
                if f.start_ns > max_start_ns {
                    return Err(SpecError::invalid(
                        key("start_ns"),
                        f.start_ns,
                        format!("must be between 0 and {max_start_ns} ns ({MAX_TIME_NOTE})"),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// "no such host (the topology has hosts 0 to 8)": the ids that exist, both ends included.
pub(crate) fn no_such(what: &str, plural: &str, n: u64) -> String {
    match n {
        0 => format!("no such {what} (the topology has no {plural})"),
        1 => format!("no such {what} (the topology has one, {what} 0)"),
        _ => format!("no such {what} (the topology has {plural} 0 to {})", n - 1),
    }
}
