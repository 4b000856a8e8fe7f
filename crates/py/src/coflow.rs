//! The coflow layer's Python surface (`slacknet.coflow` wraps it): the flow-level models of
//! `crates/coflow` run off the interpreter (Ctrl-C is seen), and their tables come back as
//! columns, as a simulation's records do.
//!
//! Errors: a scheduler name that does not exist, a trace that does not read or parse (the
//! message names the line, the field, the value and what was expected) or a bad parameter is a
//! `ValueError`; a bug in a model is a `RuntimeError` with its message.

use std::time::Instant;

use coflow::coflowsim;
use coflow::inter::{self, Scheduler};
use coflow::trace::Trace;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{interruptible, panic_message, table_to_py, Table};

fn load(path: &str, max_coflows: Option<usize>) -> Result<Trace, String> {
    let t = Trace::from_path(path).map_err(|e| format!("trace = {path}: {e}"))?;
    Ok(match max_coflows {
        Some(n) => t.prefix(n),
        None => t,
    })
}

fn bin_name(b: inter::Bin) -> &'static str {
    match b {
        inter::Bin::SN => "SN",
        inter::Bin::LN => "LN",
        inter::Bin::SW => "SW",
        inter::Bin::LW => "LW",
    }
}

/// Runs a model off the interpreter; its `Err(String)` is a `ValueError`, a panic a
/// `RuntimeError`.
fn run_model<T: Send + 'static>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> PyResult<T> {
    match interruptible(py, f)? {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(msg)) => Err(PyValueError::new_err(msg)),
        Err(p) => Err(PyRuntimeError::new_err(format!("the coflow model failed: {}", panic_message(&*p)))),
    }
}

/// Plays the coflow trace at `trace` (its first `max_coflows` coflows, or all) on a
/// non-blocking fabric under `scheduler` (`fair`, `fifo`, `scf`, `ncf`, `lcf`, `sebf`,
/// `dclas`, `sincronia`, `pfp`, `fetch:K`) in the idealised event-driven model, ports of
/// `port_mbps` MB/s (default: coflowsim's 1 MiB per 8 ms). Returns `{"coflows": columns,
/// "summary": {avg_cct_s, p95_cct_s, avg_slowdown, and per bin (coflows, mean CCT)},
/// "events": int, "seconds": wall time}`, and with `record_flows` also `"flows"`: one row per
/// flow (coflow_id, src, dst, bytes, finish_s).
#[pyfunction]
#[pyo3(signature = (trace, scheduler, max_coflows=None, port_mbps=None, record_flows=false))]
pub(crate) fn coflow_inter<'py>(
    py: Python<'py>,
    trace: &str,
    scheduler: &str,
    max_coflows: Option<usize>,
    port_mbps: Option<f64>,
    record_flows: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let Some(s) = Scheduler::from_name(scheduler) else {
        return Err(PyValueError::new_err(format!(
            "scheduler = {scheduler:?}: unknown; choose one of fair, fifo, scf, ncf, lcf, sebf, dclas, sincronia, pfp, \
             fetch:K (K mappers per reducer at a time, e.g. fetch:5)"
        )));
    };
    let mut opts = inter::Options { record_flows, ..Default::default() };
    if let Some(m) = port_mbps {
        // Within 1 byte/s and 1 PB/s: beyond, event times underflow or overflow the seconds.
        if !(1e-6..=1e9).contains(&m) {
            return Err(PyValueError::new_err(format!(
                "port_mbps = {m}: must be a number of MB/s between 1e-6 and 1e9, e.g. 125"
            )));
        }
        opts.port_bytes_per_sec = m * 1_048_576.0;
    }
    let path = trace.to_string();
    let (out, secs) = run_model(py, move || {
        let t = load(&path, max_coflows)?;
        let t0 = Instant::now();
        let out = inter::run(&t, s, &opts);
        Ok((out, t0.elapsed().as_secs_f64()))
    })?;
    let cols = Table::new(&out.coflows)
        .num("id", |c| c.id)
        .num("arrival_s", |c| c.arrival_s)
        .num("finish_s", |c| c.finish_s)
        .num("cct_s", |c| c.cct_s)
        .num("ideal_cct_s", |c| c.ideal_cct_s)
        .num("bytes", |c| c.bytes)
        .num("width", |c| c.width)
        .num("longest_flow_bytes", |c| c.longest_flow_bytes)
        .text("bin", |c| bin_name(c.bin))
        .done();
    let sum = out.summary();
    let summary = PyDict::new(py);
    summary.set_item("avg_cct_s", sum.avg_cct_s)?;
    summary.set_item("p95_cct_s", sum.p95_cct_s)?;
    summary.set_item("avg_slowdown", sum.avg_slowdown)?;
    for (b, count, avg) in &sum.per_bin {
        summary.set_item(bin_name(*b), (*count, *avg))?;
    }
    let d = PyDict::new(py);
    d.set_item("coflows", table_to_py(py, cols)?)?;
    if record_flows {
        let flows = Table::new(&out.flows)
            .num("coflow_id", |f| f.coflow_id)
            .num("src", |f| u64::from(f.src))
            .num("dst", |f| u64::from(f.dst))
            .num("bytes", |f| f.bytes)
            .num("finish_s", |f| f.finish_s)
            .done();
        d.set_item("flows", table_to_py(py, flows)?)?;
    }
    d.set_item("summary", summary)?;
    d.set_item("events", out.num_events)?;
    d.set_item("seconds", secs)?;
    Ok(d)
}

/// Plays the trace in the coflowsim-compatible mode (its time step, epochs and rules) under
/// `algo` (`FAIR`, `FAIR5`, `PFP`, `FIFO`, `SCF`, `NCF`, `LCF`, `SEBF`, `DARK`). Returns
/// `{"coflows": columns as coflowsim prints them, "seconds": wall time}`, and with
/// `reference` (a coflowsim output file) also `"compared"`, `"exact"` (coflows whose every
/// column equals the reference's) and `"max_rel_diff"` (of the duration).
#[pyfunction]
#[pyo3(signature = (trace, algo, max_coflows=None, reference=None))]
pub(crate) fn coflowsim_run<'py>(
    py: Python<'py>,
    trace: &str,
    algo: &str,
    max_coflows: Option<usize>,
    reference: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let Some(a) = coflowsim::Algo::from_name(algo) else {
        let names: Vec<&str> = coflowsim::Algo::ALL.iter().map(|a| a.name()).collect();
        return Err(PyValueError::new_err(format!("algo = {algo:?}: unknown; choose one of {}", names.join(", "))));
    };
    let path = trace.to_string();
    let reference = reference.map(str::to_string);
    let (recs, secs, cmp) = run_model(py, move || {
        let t = load(&path, max_coflows)?;
        let reference = match &reference {
            Some(p) => {
                let text = coflow::trace::read_text(std::path::Path::new(p)).map_err(|e| format!("reference = {p}: {e}"))?;
                Some(coflowsim::parse_reference(&text).map_err(|e| format!("reference = {p}: {e}"))?)
            }
            None => None,
        };
        let t0 = Instant::now();
        let recs = coflowsim::run(&t, a);
        let secs = t0.elapsed().as_secs_f64();
        let cmp = reference.map(|r| coflowsim::compare(&recs, &r, false));
        Ok((recs, secs, cmp))
    })?;
    let cols = Table::new(&recs)
        .num("id", |r| r.id)
        .num("start_ms", |r| r.start_ms)
        .num("finish_ms", |r| r.finish_ms)
        .num("num_mappers", |r| r.num_mappers)
        .num("num_reducers", |r| r.num_reducers)
        .num("total_bytes", |r| r.total_bytes)
        .num("max_reducer_bytes", |r| r.max_reducer_bytes)
        .num("duration_ms", |r| r.duration_ms)
        .num("deadline_ms", |r| r.deadline_ms)
        .num("reducer_duration_sum_ms", |r| r.reducer_duration_sum_ms)
        .done();
    let d = PyDict::new(py);
    d.set_item("coflows", table_to_py(py, cols)?)?;
    d.set_item("seconds", secs)?;
    if let Some(c) = cmp {
        d.set_item("compared", c.num_compared)?;
        d.set_item("exact", c.num_exact)?;
        d.set_item("max_rel_diff", c.max_rel_diff)?;
    }
    Ok(d)
}

/// A table of figure rows; the mechanism column (free-form names such as `Tree-4`) is a list.
fn figure_table<'py>(py: Python<'py>, rows: &[coflow::broadcast::figures::FigureRow]) -> PyResult<Bound<'py, PyDict>> {
    let cols = Table::new(rows)
        .num("bytes", |r| r.bytes)
        .num("num_receivers", |r| r.num_receivers as u64)
        .num("block_bytes", |r| r.block_bytes)
        .num("cross_rack_gbps", |r| r.cross_rack_gbps)
        .num("completion_s", |r| r.completion_s)
        .num("completion_std_s", |r| r.completion_std_s)
        .num("lower_bound_s", |r| r.lower_bound_s)
        .done();
    let d = table_to_py(py, cols)?;
    d.set_item("mechanism", rows.iter().map(|r| r.mechanism.as_str()).collect::<Vec<_>>())?;
    Ok(d)
}

fn cdf_table<'py>(py: Python<'py>, rows: &[coflow::broadcast::figures::CdfRow]) -> PyResult<Bound<'py, PyDict>> {
    let cols = Table::new(rows)
        .num("rank", |r| r.rank as u64)
        .num("fraction", |r| r.fraction)
        .num("finish_s", |r| r.finish_s)
        .done();
    let d = table_to_py(py, cols)?;
    d.set_item("mechanism", rows.iter().map(|r| r.mechanism.as_str()).collect::<Vec<_>>())?;
    Ok(d)
}

/// The intra-coflow results of the slides (the shuffle table and Figures 4.7-4.11) from the
/// flow-level models, with the reduced settings (`quick`) or the slides' scale. Returns a dict
/// of tables: `abc`, `fig_4_7`, `fig_4_8`, `fig_4_8_slow`, `fig_4_9`, `fig_4_10`, `fig_4_11`,
/// `fig_4_14`, `fig_4_15` (application iterations), `checks` and `variant_checks` (figure,
/// expectation, holds, detail).
#[pyfunction]
#[pyo3(signature = (quick=true))]
pub(crate) fn coflow_intra(py: Python<'_>, quick: bool) -> PyResult<Bound<'_, PyDict>> {
    let f = run_model(py, move || coflow::broadcast::figures::all(quick).map_err(|e| e.to_string()))?;
    let d = PyDict::new(py);
    let abc = Table::new(&f.abc)
        .text("topology", |(_, r)| r.topology)
        .num("k", |(k, _)| *k as u64)
        .num("standard_s", |(_, r)| r.standard_s)
        .num("standard_std_s", |(_, r)| r.standard_std_s)
        .num("madd_s", |(_, r)| r.madd_s)
        .num("speedup", |(_, r)| r.speedup)
        .num("theoretical_speedup", |(_, r)| r.theoretical_speedup)
        .num("published_standard_s", |(_, r)| r.published_standard_s)
        .num("published_madd_s", |(_, r)| r.published_madd_s)
        .num("published_speedup", |(_, r)| r.published_speedup)
        .num("published_theoretical_speedup", |(_, r)| r.published_theoretical_speedup)
        .done();
    d.set_item("abc", table_to_py(py, abc)?)?;
    d.set_item("fig_4_7", figure_table(py, &f.fig_4_7)?)?;
    d.set_item("fig_4_8", cdf_table(py, &f.fig_4_8)?)?;
    d.set_item("fig_4_8_slow", cdf_table(py, &f.fig_4_8_slow)?)?;
    d.set_item("fig_4_9", figure_table(py, &f.fig_4_9)?)?;
    d.set_item("fig_4_10", figure_table(py, &f.fig_4_10)?)?;
    d.set_item("fig_4_11", figure_table(py, &f.fig_4_11)?)?;
    for (key, rows) in [("fig_4_14", &f.fig_4_14), ("fig_4_15", &f.fig_4_15)] {
        let cols = Table::new(rows)
            .text("app", |r| r.app)
            .num("machines", |r| r.machines as u64)
            .text("variant", |r| r.variant)
            .num("compute_s", |r| r.compute_s)
            .num("broadcast_s", |r| r.broadcast_s)
            .num("shuffle_s", |r| r.shuffle_s)
            .num("total_s", |r| r.total_s)
            .done();
        d.set_item(key, table_to_py(py, cols)?)?;
    }
    for (key, checks) in [("checks", &f.checks), ("variant_checks", &f.variant_checks)] {
        let cols = Table::new(checks).text("figure", |c| c.figure).text("expectation", |c| c.expectation).num("holds", |c| c.holds).done();
        let t = table_to_py(py, cols)?;
        t.set_item("detail", checks.iter().map(|c| c.detail.as_str()).collect::<Vec<_>>())?;
        d.set_item(key, t)?;
    }
    Ok(d)
}

/// The intra-coflow results at both fidelities (`coflow::packet::fidelity`): the shuffle
/// scenarios A, B, C and the EC2/DETERlab broadcasts, flow level next to packet level (the
/// same mechanism code in the packet simulator, DCTCP). Returns a dict of tables: `shuffle`,
/// `broadcast` and `checks` (expectation, holds, detail). `quick`: the reduced settings.
#[pyfunction]
#[pyo3(signature = (quick=true))]
pub(crate) fn coflow_packet(py: Python<'_>, quick: bool) -> PyResult<Bound<'_, PyDict>> {
    let f = run_model(py, move || coflow::packet::fidelity::fidelity(quick).map_err(|e| e.to_string()))?;
    let d = PyDict::new(py);
    let shuffle = Table::new(&f.shuffle)
        .text("topology", |r| r.topology)
        .text("mechanism", |r| r.mechanism)
        .num("flow_s", |r| r.flow_s)
        .num("packet_s", |r| r.packet_s)
        .num("flow_gamma_s", |r| r.flow_gamma_s)
        .num("packet_gamma_s", |r| r.packet_gamma_s)
        .num("packet_finish_spread_s", |r| r.packet_finish_spread_s)
        .num("drops", |r| r.drops)
        .num("retx", |r| r.retx)
        .done();
    d.set_item("shuffle", table_to_py(py, shuffle)?)?;
    let broadcast = Table::new(&f.broadcast)
        .text("testbed", |r| r.testbed)
        .num("flow_s", |r| r.flow_s)
        .num("packet_s", |r| r.packet_s)
        .num("flow_lower_bound_s", |r| r.flow_lower_bound_s)
        .num("packet_lower_bound_s", |r| r.packet_lower_bound_s)
        .num("transfers", |r| r.transfers as u64)
        .num("events", |r| r.events)
        .num("drops", |r| r.drops)
        .num("retx", |r| r.retx)
        .done();
    let t = table_to_py(py, broadcast)?;
    t.set_item("mechanism", f.broadcast.iter().map(|r| r.mechanism.as_str()).collect::<Vec<_>>())?;
    d.set_item("broadcast", t)?;
    let checks = Table::new(&f.checks).num("holds", |c| c.holds).done();
    let t = table_to_py(py, checks)?;
    t.set_item("expectation", f.checks.iter().map(|c| c.expectation.as_str()).collect::<Vec<_>>())?;
    t.set_item("detail", f.checks.iter().map(|c| c.detail.as_str()).collect::<Vec<_>>())?;
    d.set_item("checks", t)?;
    Ok(d)
}

/// The most hosts a topology built here may have.
const MAX_HOSTS: usize = 1 << 16;

/// The topology of `coflow_shuffle` and `coflow_broadcast`: `racks` racks of `hosts_per_rack`
/// hosts at `host_gbps`, rack links at `cross_rack_gbps` (`None`: one non-blocking switch).
fn topology(racks: usize, hosts_per_rack: usize, host_gbps: f64, cross_rack_gbps: Option<f64>) -> Result<coflow::net::Topology, String> {
    let n = racks.checked_mul(hosts_per_rack).filter(|&n| n <= MAX_HOSTS);
    let Some(n) = n else {
        return Err(format!("racks x hosts_per_rack = {racks} x {hosts_per_rack}: at most {MAX_HOSTS} hosts"));
    };
    let t = match cross_rack_gbps {
        None => coflow::net::Topology::flat(n, host_gbps),
        Some(c) => coflow::net::Topology::racks(racks, hosts_per_rack, host_gbps, c),
    };
    t.map_err(|e| format!("topology: {e}"))
}

fn packet_options(transport_toml: Option<String>, seed: u64) -> coflow::packet::PacketOptions {
    coflow::packet::PacketOptions { transport_toml, seed, ..Default::default() }
}

fn stats_dict<'py>(py: Python<'py>, d: &Bound<'py, PyDict>, st: Option<coflow::packet::PacketStats>) -> PyResult<()> {
    if let Some(st) = st {
        let s = PyDict::new(py);
        s.set_item("events", st.events)?;
        s.set_item("packet_hops", st.packet_hops)?;
        s.set_item("switch_drops", st.switch_drops)?;
        s.set_item("retx_segments", st.retx_segments)?;
        s.set_item("rtos", st.rtos)?;
        s.set_item("ecn_marks", st.ecn_marks)?;
        s.set_item("payload_efficiency", st.payload_efficiency)?;
        d.set_item("packet", s)?;
    }
    Ok(())
}

/// One shuffle: `bytes[i][j]` from host `senders[i]` to host `receivers[j]` under `mechanism`
/// (`fair`, `madd` or `hadoop:K`), on the fluid network or (`packet`) in the packet simulator
/// with the transport `transport_toml` (DCTCP by default). Returns `{"flows": columns (src,
/// dst, bytes, start_s, finish_s), "completion_s", "gamma_s", "packet": stats (packet
/// level only)}`.
#[pyfunction]
#[pyo3(signature = (senders, receivers, bytes, mechanism, racks, hosts_per_rack, host_gbps, cross_rack_gbps=None, seed=1, packet=false, transport_toml=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn coflow_shuffle<'py>(
    py: Python<'py>,
    senders: Vec<usize>,
    receivers: Vec<usize>,
    bytes: Vec<Vec<f64>>,
    mechanism: &str,
    racks: usize,
    hosts_per_rack: usize,
    host_gbps: f64,
    cross_rack_gbps: Option<f64>,
    seed: u64,
    packet: bool,
    transport_toml: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    use coflow::shuffle::{Shuffle, ShuffleMechanism};
    // Case-insensitive, as the broadcast mechanisms and the coflow schedulers are.
    let lower = mechanism.to_ascii_lowercase();
    let fetches = lower.strip_prefix("hadoop:").and_then(|k| k.parse::<usize>().ok()).filter(|&k| k >= 1);
    let m = match (lower.as_str(), fetches) {
        ("fair", _) => ShuffleMechanism::FairShare,
        ("madd", _) => ShuffleMechanism::Madd,
        (_, Some(max_fetches)) => ShuffleMechanism::Hadoop { max_fetches },
        _ => {
            return Err(PyValueError::new_err(format!(
                "mechanism = {mechanism:?}: unknown; choose fair, madd or hadoop:K (K >= 1 fetches per reducer, e.g. hadoop:5)"
            )))
        }
    };
    let (r, st) = run_model(py, move || {
        let topo = topology(racks, hosts_per_rack, host_gbps, cross_rack_gbps)?;
        let sh = Shuffle { senders, receivers, bytes };
        if packet {
            coflow::packet::run_shuffle_packet(&topo, &sh, m, seed, &packet_options(transport_toml, seed))
                .map(|(r, st)| (r, Some(st)))
                .map_err(|e| e.to_string())
        } else {
            coflow::shuffle::run_shuffle(&topo, &sh, m, seed).map(|r| (r, None)).map_err(|e| e.to_string())
        }
    })?;
    let flows = Table::new(&r.flows)
        .num("src", |c| c.src as u64)
        .num("dst", |c| c.dst as u64)
        .num("bytes", |c| c.bytes)
        .num("start_s", |c| c.start_s)
        .num("finish_s", |c| c.finish_s)
        .done();
    let d = PyDict::new(py);
    d.set_item("flows", table_to_py(py, flows)?)?;
    d.set_item("completion_s", r.completion_s)?;
    d.set_item("gamma_s", r.gamma_s)?;
    stats_dict(py, &d, st)?;
    Ok(d)
}

/// One broadcast of `bytes` from host `sender` to `receivers` under `mechanism` (`cornet`,
/// `cornettopology`, `cornetclustering`, `bittorrent`, `chain`, `tree-D`, `hdfs-R`), on the
/// fluid network or (`packet`) in the packet simulator. Returns `{"receivers": columns (host,
/// finish_s), "completion_s", "lower_bound_s", "transfers", "packet": stats (packet level
/// only)}`.
#[pyfunction]
#[pyo3(signature = (sender, receivers, bytes, mechanism, racks, hosts_per_rack, host_gbps, cross_rack_gbps=None, block_bytes=None, seed=1, packet=false, transport_toml=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn coflow_broadcast<'py>(
    py: Python<'py>,
    sender: usize,
    receivers: Vec<usize>,
    bytes: f64,
    mechanism: &str,
    racks: usize,
    hosts_per_rack: usize,
    host_gbps: f64,
    cross_rack_gbps: Option<f64>,
    block_bytes: Option<f64>,
    seed: u64,
    packet: bool,
    transport_toml: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    use coflow::broadcast::{BroadcastConfig, Mechanism, Placement};
    let m: Mechanism = mechanism.parse().map_err(|_| {
        PyValueError::new_err(format!(
            "mechanism = {mechanism:?}: unknown; choose cornet, cornettopology, cornetclustering, bittorrent, chain, \
             tree-D (a D-ary tree, e.g. tree-2) or hdfs-R (R replicas, e.g. hdfs-3)"
        ))
    })?;
    // The model's own check says "tree degree must be at least 1"; say which argument and the fix.
    match m {
        Mechanism::Tree { degree: 0 } => {
            return Err(PyValueError::new_err(format!(
                "mechanism = {mechanism:?}: a tree needs degree D >= 1 (tree-1 is a chain), e.g. tree-2"
            )))
        }
        Mechanism::Hdfs { replicas: 0 } => {
            return Err(PyValueError::new_err(format!(
                "mechanism = {mechanism:?}: HDFS needs R >= 1 replicas, e.g. hdfs-3"
            )))
        }
        _ => {}
    }
    let mut cfg = BroadcastConfig { bytes, seed, ..Default::default() };
    if let Some(b) = block_bytes {
        cfg.block_bytes = b;
    }
    let hosts = receivers.clone();
    let (r, st) = run_model(py, move || {
        let topo = topology(racks, hosts_per_rack, host_gbps, cross_rack_gbps)?;
        let place = Placement { sender, receivers };
        if packet {
            coflow::packet::run_broadcast_packet(&topo, &place, m, &cfg, &packet_options(transport_toml, seed))
                .map(|(r, st)| (r, Some(st)))
                .map_err(|e| e.to_string())
        } else {
            coflow::broadcast::run_broadcast(&topo, &place, m, &cfg).map(|r| (r, None)).map_err(|e| e.to_string())
        }
    })?;
    let rows: Vec<(u64, f64)> = hosts.iter().zip(&r.receiver_finish_s).map(|(&h, &t)| (h as u64, t)).collect();
    let cols = Table::new(&rows).num("host", |r| r.0).num("finish_s", |r| r.1).done();
    let d = PyDict::new(py);
    d.set_item("receivers", table_to_py(py, cols)?)?;
    d.set_item("completion_s", r.completion_s)?;
    d.set_item("lower_bound_s", r.lower_bound_s)?;
    d.set_item("transfers", r.num_transfers)?;
    stats_dict(py, &d, st)?;
    Ok(d)
}
