//! Validation: every value range-checked with an error naming the key, the value and the fix,
//! and every file input (CDFs, flow lists, forests) read and parsed here, once, so that
//! building a simulation does no I/O.

#[allow(unused_imports)]
use super::*;

impl Spec {
    /// Check every value and resolve file paths against `base_dir` (the scenario file's
    /// folder). Errors name the key and the value.
    pub fn validate(mut self, base_dir: &Path) -> Result<ValidSpec, SpecError> {
        let num_hosts = self.check_topology()?;
        self.topology.check_buildable()?;
        self.check_switch()?;
        if let AdmissionSpec::Credence { oracle, .. } = &mut self.switch.admission {
            load_oracle("switch.admission.oracle", oracle, base_dir)?;
        }
        self.check_transport()?;
        self.host.check()?;
        for (i, w) in self.workload.iter_mut().enumerate() {
            check_workload(i, w, num_hosts, base_dir, &self.transport)?;
        }
        if let Some(s) = self.run.stop_ms {
            if !(s.is_finite() && s > 0.0) {
                return Err(SpecError::invalid("run.stop_ms", s, "must be a positive number"));
            }
        }
        let si = self.run.sample_interval_us;
        if !(si.is_finite() && si >= 0.0) {
            return Err(SpecError::invalid(
                "run.sample_interval_us",
                si,
                "must be >= 0 (0 disables sampling)",
            ));
        }
        if let Some(ts) = &self.run.timeseries {
            self.check_timeseries(ts)?;
        }
        Ok(ValidSpec { spec: self })
    }

    /// `[run.timeseries]`: ranges, the switch filter, and an estimate of the rows it would
    /// produce (refused above [`MAX_TIMESERIES_ROWS`]). Call after the workloads are checked
    /// (flow lists must be loaded).
    fn check_timeseries(&self, ts: &TimeseriesSpec) -> Result<(), SpecError> {
        let us = ts.interval_us;
        if !(us.is_finite() && us * 1e6 >= 1.0 && us <= 1e12) {
            return Err(SpecError::invalid(
                "run.timeseries.interval_us",
                us,
                "must be a positive number of microseconds, at least 1e-6 (one picosecond); \
                 remove the [run.timeseries] table to turn time series off",
            ));
        }
        if !ts.queues && !ts.transfers {
            return Err(SpecError::invalid(
                "run.timeseries",
                "{ queues = false, transfers = false }",
                "nothing to sample: remove the [run.timeseries] table to turn time series off",
            ));
        }
        let topo = crate::topo::Topology::build(&self.topology);
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
                        format!("no such switch (the topology has switches 0..{num_switches})"),
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
        // The estimate: samples over the stop time, or else over the open-loop applications'
        // arrivals (the run drains past them, so this errs low); reactive applications have no
        // known horizon, and without one nothing is refused.
        let arrivals_end_ps = self
            .workload
            .iter()
            .filter_map(|w| match w {
                WorkloadSpec::Poisson(Poisson { start_ms, duration_ms, .. })
                | WorkloadSpec::Incast(Incast { start_ms, duration_ms, .. }) => Some((start_ms + duration_ms) * 1e9),
                WorkloadSpec::FlowList(FlowList { loaded, .. }) => {
                    loaded.0.as_ref().and_then(|f| f.iter().map(|f| f.start.ps() as f64).reduce(f64::max))
                }
                WorkloadSpec::Flows(Flows { flows, .. }) => {
                    flows.iter().map(|f| f.start_ns as f64 * 1e3).reduce(f64::max)
                }
                WorkloadSpec::ClosedLoop(_) | WorkloadSpec::Barrier(_) | WorkloadSpec::Relay(_) => None,
            })
            .reduce(f64::max);
        let Some(horizon_ps) = self.run.stop_ms.map(|ms| ms * 1e9).or(arrivals_end_ps) else {
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

    fn check_topology(&self) -> Result<u32, SpecError> {
        match &self.topology {
            TopologySpec::LeafSpine(LeafSpine {
                leaves,
                hosts_per_leaf,
                spines,
                links_per_spine,
                host_rate_gbps,
                fabric_rate_gbps,
                ..
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
                let hosts = *leaves as u64 * *hosts_per_leaf as u64;
                if hosts > 1 << 20 {
                    return Err(SpecError::invalid(
                        "topology.hosts_per_leaf",
                        hosts_per_leaf,
                        "more than 2^20 hosts in total",
                    ));
                }
                Ok(hosts as u32)
            }
            TopologySpec::FatTree(FatTree { k, rate_gbps, .. }) => {
                if *k < 2 || k % 2 != 0 || *k > 128 {
                    return Err(SpecError::invalid(
                        "topology.k",
                        k,
                        "must be an even number between 2 and 128",
                    ));
                }
                rate("topology.rate_gbps", *rate_gbps)?;
                Ok(k * k * k / 4)
            }
        }
    }

    fn check_switch(&self) -> Result<(), SpecError> {
        let s = &self.switch;
        match (s.buffer_bytes, s.buffer_per_port_per_gbps) {
            (Some(_), Some(_)) => {
                return Err(SpecError::invalid(
                    "switch.buffer_per_port_per_gbps",
                    s.buffer_per_port_per_gbps.unwrap_or_default(),
                    "give either switch.buffer_bytes or switch.buffer_per_port_per_gbps, not both",
                ))
            }
            (Some(b), None) if b == 0 => {
                return Err(SpecError::invalid("switch.buffer_bytes", b, "must be positive"))
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
        if let AdmissionSpec::Static { port_bytes: Some(0) } = s.admission {
            return Err(SpecError::invalid("switch.admission.port_bytes", 0, "must be positive"));
        }
        check_admission(&s.admission)?;
        if s.queues.is_empty() || s.queues.len() > MAX_QUEUES {
            return Err(SpecError::invalid(
                "switch.queues",
                format!("[{} entries]", s.queues.len()),
                format!("between 1 and {MAX_QUEUES} queues per port are supported"),
            ));
        }
        for (i, q) in s.queues.iter().enumerate() {
            if let Some(c) = q.cap_bytes {
                if c == 0 {
                    return Err(SpecError::invalid(
                        format!("switch.queues[{i}].cap_bytes"),
                        c,
                        "must be positive (omit the key for no cap)",
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
        Ok(())
    }

    fn check_transport(&self) -> Result<(), SpecError> {
        check_transport("transport", &self.transport)?;
        for (i, w) in self.workload.iter().enumerate() {
            if let Some(t) = w.transport() {
                check_transport(&format!("workload[{i}].transport"), t)?;
            }
        }
        Ok(())
    }
}

/// Range checks of one transport table; `at` is its key (`transport`, `workload[2].transport`).
fn check_transport(at: &str, t: &TransportSpec) -> Result<(), SpecError> {
    let key = |k: &str| format!("{at}.{k}");
    {
        let mss = t.mss_bytes();
        if mss == 0 || mss > 65_000 {
            return Err(SpecError::invalid(key("mss_bytes"), mss, "must be between 1 and 65000"));
        }
        if t.header_bytes() == 0 {
            return Err(SpecError::invalid(key("header_bytes"), 0, "must be positive"));
        }
        if let Some(k) = t.tcp() {
            positive(&key("init_cwnd_pkts"), k.init_cwnd_pkts)?;
            positive(&key("dupack_threshold"), k.dupack_threshold)?;
            if k.min_rto_us == 0 {
                return Err(SpecError::invalid(key("min_rto_us"), 0, "must be positive"));
            }
            if k.init_rto_us == 0 {
                return Err(SpecError::invalid(key("init_rto_us"), 0, "must be positive"));
            }
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
            TransportSpec::Newreno(_) => {}
        }
        Ok(())
    }
}

/// Range checks of the admission knobs (files are loaded by [`load_oracle`]).
fn check_admission(a: &AdmissionSpec) -> Result<(), SpecError> {
    let rtt = |key: &str, v: Option<f64>| match v {
        Some(us) if !(us.is_finite() && us > 0.0) => {
            Err(SpecError::invalid(key, us, "must be a positive number of microseconds"))
        }
        _ => Ok(()),
    };
    match a {
        AdmissionSpec::Abm { alpha_first_rtt, base_rtt_us, congested_bytes } => {
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
                format!("no such host (the topology has hosts 0..{num_hosts})"),
            ));
        }
    }
    if src == dst {
        return Err(SpecError::invalid(format!("{key}.dst"), dst, "must differ from src"));
    }
    Ok(())
}

fn non_negative_us(key: &str, us: f64) -> Result<(), SpecError> {
    if us.is_finite() && (0.0..=1e12).contains(&us) {
        Ok(())
    } else {
        Err(SpecError::invalid(key, us, "must be a number of microseconds >= 0"))
    }
}

/// The longest total pause an application may ask for: a tenth of the simulated clock's span
/// (2^64 ps, about 213 days), so that pauses alone never run the clock out.
const MAX_TOTAL_PAUSE_US: f64 = 1.8e12;

/// `times` pauses of `us` each must fit in [`MAX_TOTAL_PAUSE_US`].
fn within_clock(key: &str, us: f64, times: u32, times_key: &str) -> Result<(), SpecError> {
    if us * times as f64 <= MAX_TOTAL_PAUSE_US {
        Ok(())
    } else {
        Err(SpecError::invalid(
            key,
            us,
            format!(
                "{times_key} x {} must stay below {MAX_TOTAL_PAUSE_US:e} us (about 21 days of simulated time): \
                 the simulated clock spans about 213 days",
                key.rsplit('.').next().unwrap_or(key)
            ),
        ))
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
    if !(gbps.is_finite() && gbps > 0.0) {
        Err(SpecError::invalid(key, gbps, "a link rate must be a positive number of Gb/s"))
    } else if gbps > 100_000.0 {
        Err(SpecError::invalid(key, gbps, "rates above 100 Tb/s are not supported"))
    } else {
        Ok(())
    }
}

fn window(prefix: &str, start_ms: f64, duration_ms: f64) -> Result<(), SpecError> {
    if !(start_ms.is_finite() && start_ms >= 0.0) {
        return Err(SpecError::invalid(format!("{prefix}.start_ms"), start_ms, "must be >= 0"));
    }
    if !(duration_ms.is_finite() && duration_ms > 0.0) {
        return Err(SpecError::invalid(
            format!("{prefix}.duration_ms"),
            duration_ms,
            "must be a positive number of milliseconds",
        ));
    }
    Ok(())
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

fn check_workload(
    i: usize,
    w: &mut WorkloadSpec,
    num_hosts: u32,
    base_dir: &Path,
    transport: &TransportSpec,
) -> Result<(), SpecError> {
    let prefix = format!("workload[{i}]");
    let _ = transport;
    match w {
        WorkloadSpec::Poisson(Poisson { cdf, load, start_ms, duration_ms, destinations, loaded, .. }) => {
            let key = format!("{prefix}.cdf");
            *cdf = resolve_file(&key, cdf, base_dir, crate::workload::BUILTIN_CDFS)?;
            let dist = crate::workload::load_cdf(cdf).map_err(|m| SpecError::invalid(&key, format!("{cdf:?}"), m))?;
            if !(dist.mean().is_finite() && dist.mean() >= 1.0) {
                return Err(SpecError::invalid(
                    &key,
                    format!("{cdf:?}"),
                    "the distribution's mean flow size is below one byte: give sizes in bytes",
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
            if num_hosts < 2 {
                return Err(SpecError::invalid(
                    format!("{prefix}.kind"),
                    "poisson",
                    "needs at least 2 hosts",
                ));
            }
            let _ = destinations;
        }
        WorkloadSpec::Incast(Incast {
            query_rate_per_host,
            fan_in,
            burst_bytes,
            burst_buffer_fraction,
            start_ms,
            duration_ms,
            ..
        }) => {
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
            match (*burst_bytes, *burst_buffer_fraction) {
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
                (None, Some(f)) if !(f.is_finite() && f > 0.0) => {
                    return Err(SpecError::invalid(
                        format!("{prefix}.burst_buffer_fraction"),
                        f,
                        "must be a positive fraction of the switch buffer",
                    ))
                }
                _ => {}
            }
            window(&prefix, *start_ms, *duration_ms)?;
        }
        WorkloadSpec::FlowList(FlowList { path, prio, loaded, .. }) => {
            let key = format!("{prefix}.path");
            *path = resolve_file(&key, path, base_dir, &[])?;
            let text = std::fs::read_to_string(path.as_str())
                .map_err(|e| SpecError::invalid(&key, format!("{path:?}"), format!("cannot read: {e}")))?;
            let mut flows = Vec::new();
            crate::workload::parse_flow_list(&text, i as u16, *prio, num_hosts, &mut flows)
                .map_err(|m| SpecError::invalid(&key, format!("{path:?}"), m))?;
            *loaded = Loaded(Some(std::sync::Arc::new(flows)));
        }
        WorkloadSpec::ClosedLoop(c) => {
            for (j, [a, b]) in c.pairs.iter().enumerate() {
                check_pair(&format!("{prefix}.pairs[{j}]"), *a, *b, num_hosts)?;
            }
            if c.pairs.is_empty() {
                return Err(SpecError::invalid(format!("{prefix}.pairs"), "[]", "give at least one [src, dst] pair"));
            }
            if c.size_bytes == 0 {
                return Err(SpecError::invalid(format!("{prefix}.size_bytes"), 0, "must be at least 1"));
            }
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
                if f.size_bytes == 0 {
                    return Err(SpecError::invalid(key("size_bytes"), 0, "must be at least 1"));
                }
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
                        format!("no such host (the topology has hosts 0..{num_hosts})"),
                    ));
                }
                if r.chain[..j].contains(h) {
                    return Err(SpecError::invalid(format!("{prefix}.chain[{j}]"), h, "a host appears twice in the chain"));
                }
            }
            if r.block_bytes == 0 {
                return Err(SpecError::invalid(format!("{prefix}.block_bytes"), 0, "must be at least 1"));
            }
            positive(&format!("{prefix}.blocks"), r.blocks)?;
        }
        WorkloadSpec::Flows(Flows { flows, .. }) => {
            for (j, f) in flows.iter().enumerate() {
                let key = |k: &str| format!("{prefix}.flows[{j}].{k}");
                if f.src >= num_hosts {
                    return Err(SpecError::invalid(
                        key("src"),
                        f.src,
                        format!("no such host (the topology has hosts 0..{})", num_hosts),
                    ));
                }
                if f.dst >= num_hosts {
                    return Err(SpecError::invalid(
                        key("dst"),
                        f.dst,
                        format!("no such host (the topology has hosts 0..{})", num_hosts),
                    ));
                }
                if f.src == f.dst {
                    return Err(SpecError::invalid(key("dst"), f.dst, "must differ from src"));
                }
                if f.size_bytes == 0 {
                    return Err(SpecError::invalid(key("size_bytes"), 0, "must be at least 1"));
                }
            }
        }
    }
    Ok(())
}
