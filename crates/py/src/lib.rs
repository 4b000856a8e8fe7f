//! `slacknet._native`: the PyO3 boundary between the Rust simulator and the Python package.
//!
//! Pipeline position: `python/slacknet -> (this crate) -> sim`. This crate is deliberately thin
//! (STYLE.md §6): it converts Python values into owned Rust values while attached to the
//! interpreter, lets `sim` validate them (Rust owns the schema and its error messages), runs the
//! simulation with the interpreter detached (`Python::detach`, so other Python threads keep
//! running), and converts the results back as columns of little-endian bytes that Python wraps
//! with `numpy.frombuffer`. There is no simulation logic here.
//!
//! Errors are typed: [`SpecError`] (a `ValueError`: the scenario is wrong) carries `key`,
//! `value` and `message` attributes; [`SimError`] (a `RuntimeError`: the run could not be set
//! up or failed) carries `key` and `message`. `python/slacknet/_native.pyi` documents the
//! Python-visible surface and is checked against this module by `mypy.stubtest`.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

mod coflow;
mod net;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

/// mimalloc for the extension's Rust allocations (the simulation's whole state), as in the
/// `slacknet-sim` binary (the `mimalloc` feature; why: the workspace's Cargo.toml). Python's
/// own objects keep Python's allocator; nothing allocated on one side is freed on the other,
/// since every result leaves as bytes that Python copies.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

create_exception!(
    slacknet._native,
    SpecError,
    PyValueError,
    "The scenario is wrong: a key is unknown, has the wrong type, or its value is out of range.\n\n\
     Attributes: ``key`` (dotted path such as ``workload[0].load``), ``value`` (the value as \
     written, or None when the text did not parse) and ``message`` (what is wrong)."
);
create_exception!(
    slacknet._native,
    SimError,
    PyRuntimeError,
    "A valid scenario could not be run (for example a CDF file is malformed).\n\n\
     Attributes: ``key`` (the scenario key at fault) and ``message``."
);

/// Build a Python `SpecError` with structured attributes from the Rust error.
fn spec_error(py: Python<'_>, e: sim::SpecError) -> PyErr {
    let (key, value, message) = match &e {
        sim::SpecError::Parse { key, .. } => (key.clone(), None, e.message()),
        sim::SpecError::Invalid { key, value, .. } => (key.clone(), Some(value.clone()), e.message()),
    };
    let err = SpecError::new_err(e.to_string());
    let exc = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail short of memory exhaustion;
    // if it does, the error still carries its message.
    let _ = exc.setattr("key", key);
    let _ = exc.setattr("value", value);
    let _ = exc.setattr("message", message);
    err
}

/// Build a Python `SimError` with `key` and `message` attributes.
fn sim_error(py: Python<'_>, key: &str, message: &str) -> PyErr {
    let err = SimError::new_err(format!("{key}: {message}"));
    let exc = err.value(py);
    let _ = exc.setattr("key", key);
    let _ = exc.setattr("message", message);
    err
}

fn from_sim_error(py: Python<'_>, e: sim::SimError) -> PyErr {
    match &e {
        sim::SimError::Workload { key, message } | sim::SimError::Setup { key, message } => {
            sim_error(py, key, message)
        }
    }
}

/// Run `f` on a worker thread with the interpreter released, waking every 50 ms to let
/// Python handle signals, so that Ctrl-C raises `KeyboardInterrupt` at once instead of after
/// a long validation (reading a large flow list) or network build. An interrupted worker
/// finishes in the background and its result is dropped. A panic in `f` comes back as `Err`.
fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    f: impl FnOnce() -> T + Send + 'static,
) -> PyResult<std::thread::Result<T>> {
    use std::sync::mpsc::{sync_channel, RecvTimeoutError};
    let (tx, rx) = sync_channel(1);
    std::thread::Builder::new()
        .name("slacknet-worker".into())
        .spawn(move || {
            // The receiver is gone only if Python was interrupted: nothing to report to.
            let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
        })
        .map_err(|e| sim_error(py, "<internal>", &format!("cannot start a worker thread: {e}")))?;
    let mut rx = rx;
    loop {
        // The receiver is not `Sync`: move it into the detached closure and back.
        let (got, back) = py.detach(move || (rx.recv_timeout(std::time::Duration::from_millis(50)), rx));
        rx = back;
        match got {
            Ok(r) => return Ok(r),
            Err(RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(sim_error(py, "<internal>", "the worker thread vanished"))
            }
        }
    }
}

fn resolve(
    py: Python<'_>,
    spec: Result<sim::Spec, sim::SpecError>,
    base_dir: &str,
) -> PyResult<String> {
    Ok(validate(py, spec, base_dir)?.inner.to_json())
}

fn validate(
    py: Python<'_>,
    spec: Result<sim::Spec, sim::SpecError>,
    base_dir: &str,
) -> PyResult<ValidScenario> {
    let spec = spec.map_err(|e| spec_error(py, e))?;
    let base = base_dir.to_owned();
    // Validation reads the scenario's files (CDFs, flow lists, models): interruptible.
    match interruptible(py, move || spec.validate(Path::new(&base)))? {
        Ok(valid) => Ok(ValidScenario { inner: valid.map_err(|e| spec_error(py, e))? }),
        Err(p) => Err(sim_error(py, "<internal>", &format!("validation panicked: {}", panic_message(&*p)))),
    }
}

/// A scenario that Rust has parsed and validated once, with every file input read: what
/// `Simulation` runs. Opaque: read it back with `to_json()`.
#[pyclass(name = "ValidScenario", module = "slacknet._native", frozen)]
struct ValidScenario {
    inner: sim::ValidSpec,
}

#[pymethods]
impl ValidScenario {
    /// The resolved scenario as JSON (every default filled in, paths absolute).
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// The same scenario with another master seed.
    fn with_seed(&self, seed: u64) -> ValidScenario {
        ValidScenario { inner: self.inner.with_seed(seed) }
    }

    /// The scenario's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.spec().name.clone()
    }

    /// The scenario's master seed.
    #[getter]
    fn seed(&self) -> u64 {
        self.inner.spec().seed
    }

    fn __repr__(&self) -> String {
        format!("<ValidScenario {:?} seed={}>", self.inner.spec().name, self.inner.spec().seed)
    }
}

/// Parse and validate a TOML scenario once; relative paths are relative to `base_dir`.
/// Raises `SpecError` naming the offending key and value.
#[pyfunction]
fn validate_toml(py: Python<'_>, text: &str, base_dir: &str) -> PyResult<ValidScenario> {
    validate(py, sim::Spec::from_toml_str(text), base_dir)
}

/// Parse and validate a JSON scenario once (the format of `Scenario.to_json()`). Raises
/// `SpecError`.
#[pyfunction]
fn validate_json(py: Python<'_>, text: &str, base_dir: &str) -> PyResult<ValidScenario> {
    validate(py, sim::Spec::from_json_str(text), base_dir)
}

/// Parse and validate a TOML scenario; return the resolved scenario as JSON (every default
/// filled in, relative paths made absolute against `base_dir`).
///
/// Raises `SpecError` naming the offending key and value.
#[pyfunction]
fn resolve_toml(py: Python<'_>, text: &str, base_dir: &str) -> PyResult<String> {
    resolve(py, sim::Spec::from_toml_str(text), base_dir)
}

/// Parse and validate a JSON scenario (what `Scenario.to_json()` writes); return the resolved
/// scenario as JSON. Raises `SpecError`.
#[pyfunction]
fn resolve_json(py: Python<'_>, text: &str, base_dir: &str) -> PyResult<String> {
    resolve(py, sim::Spec::from_json_str(text), base_dir)
}

/// The built-in default scenario as TOML text (what `slacknet run` runs without an argument).
#[pyfunction]
fn default_scenario_toml() -> &'static str {
    sim::spec::default_scenario_toml()
}

/// The defaults a model profile applies beneath a scenario's own keys, as JSON (a partial
/// scenario). Raises `SpecError` for an unknown profile name.
#[pyfunction]
fn profile_defaults(py: Python<'_>, name: &str) -> PyResult<String> {
    let profile: sim::spec::Profile = serde_json::from_value(serde_json::Value::String(name.into()))
        .map_err(|_| {
            spec_error(
                py,
                sim::SpecError::Invalid {
                    key: "profile".into(),
                    value: format!("{name:?}"),
                    message: format!(
                        "unknown profile; expected one of {}",
                        sim::spec::Profile::NAMES.join(", ")
                    ),
                },
            )
        })?;
    Ok(sim::spec::profile_defaults(profile).to_string())
}

/// One row of [`credence_figure14`]'s table.
struct Figure14Row {
    seed: u64,
    flip_probability: f64,
    admission: &'static str,
    lqd_over_alg: f64,
}

/// The `admission` label of DT under `rule`: "DT " and the rule's formula.
fn dt_label(rule: sim::admission::DtRule) -> &'static str {
    match rule {
        sim::admission::DtRule::FitsUnder => "DT q+size<=alpha*free",
        sim::admission::DtRule::Below => "DT q<alpha*free",
    }
}

/// Credence Figure 14 in the discrete-time model of Appendix A (see
/// `sim::credence::dtmodel::Figure14` for the setup) on the arrival sequence of each of
/// `seeds` (default: `FIGURE14_SEEDS`, 1-30), as columns `seed`, `flip_probability`,
/// `admission` (`"Credence"` or DT under each rule, see [`dt_label`]) and `lqd_over_alg`. DT
/// makes no predictions: its ratio is repeated at every flip probability.
#[pyfunction]
#[pyo3(signature = (seeds=None))]
fn credence_figure14(py: Python<'_>, seeds: Option<Vec<u64>>) -> PyResult<Bound<'_, PyDict>> {
    use sim::credence::dtmodel::{figure14_seeds, Figure14, FIGURE14_SEEDS};
    let seeds = seeds.unwrap_or_else(|| FIGURE14_SEEDS.collect());
    let rows = py.detach(move || {
        let mut rows = Vec::new();
        for run in figure14_seeds(&Figure14::default(), &seeds) {
            for &(p, c) in &run.credence {
                rows.push(Figure14Row { seed: run.seed, flip_probability: p, admission: "Credence", lqd_over_alg: c });
                for &(rule, dt) in &run.dt {
                    rows.push(Figure14Row { seed: run.seed, flip_probability: p, admission: dt_label(rule), lqd_over_alg: dt });
                }
            }
        }
        rows
    });
    let cols = Table::new(&rows)
        .num("seed", |r| r.seed)
        .num("flip_probability", |r| r.flip_probability)
        .text("admission", |r| r.admission)
        .num("lqd_over_alg", |r| r.lqd_over_alg)
        .done();
    table_to_py(py, cols)
}

/// Version of the native extension (the Cargo package version).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// SHA-256 (hex) of the sources this extension's engine was built from (`build.rs` says which):
/// two builds that may give different results for one scenario have different digests.
#[pyfunction]
fn engine_sha256() -> &'static str {
    env!("SLACKNET_ENGINE_SHA256")
}

/// One column of a result table, encoded off the interpreter.
enum Col {
    /// numpy dtype string and little-endian bytes.
    Num(&'static str, Vec<u8>),
    /// A string column.
    Str(Vec<&'static str>),
}

/// A primitive that has a numpy dtype and a little-endian encoding.
trait Le: Copy {
    const DTYPE: &'static str;
    fn put(self, out: &mut Vec<u8>);
}

macro_rules! le_int {
    ($($t:ty => $d:literal),* $(,)?) => {$(
        impl Le for $t {
            const DTYPE: &'static str = $d;
            fn put(self, out: &mut Vec<u8>) { out.extend_from_slice(&self.to_le_bytes()) }
        }
    )*};
}
le_int!(u64 => "<u8", i64 => "<i8", f64 => "<f8", u32 => "<u4", i32 => "<i4", u16 => "<u2", u8 => "|u1");

impl Le for bool {
    const DTYPE: &'static str = "|b1";
    fn put(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
}

/// Columns of one table, in a fixed order.
struct Table<'a, R> {
    rows: &'a [R],
    cols: Vec<(&'static str, Col)>,
}

impl<'a, R> Table<'a, R> {
    fn new(rows: &'a [R]) -> Self {
        Table {
            rows,
            cols: Vec::new(),
        }
    }
    fn num<T: Le>(mut self, name: &'static str, f: impl Fn(&R) -> T) -> Self {
        let mut buf = Vec::with_capacity(self.rows.len() * std::mem::size_of::<T>());
        for r in self.rows {
            f(r).put(&mut buf);
        }
        self.cols.push((name, Col::Num(T::DTYPE, buf)));
        self
    }
    fn text(mut self, name: &'static str, f: impl Fn(&R) -> &'static str) -> Self {
        self.cols
            .push((name, Col::Str(self.rows.iter().map(f).collect())));
        self
    }
    fn done(self) -> Vec<(&'static str, Col)> {
        self.cols
    }
}

/// Every table of an `Output`, encoded; built without the interpreter.
struct Encoded {
    records: Vec<(&'static str, Col)>,
    apps: Vec<(&'static str, Col)>,
    groups: Vec<(&'static str, Col)>,
    switches: Vec<(&'static str, Col)>,
    queues: Vec<(&'static str, Col)>,
    occupancy: Vec<(&'static str, Col)>,
    links: Vec<(&'static str, Col)>,
    queue_series: Vec<(&'static str, Col)>,
    transfer_series: Vec<(&'static str, Col)>,
    summary: serde_json::Value,
}

/// The columns of flow records.
fn encode_records(records: &[sim::FctRecord]) -> Vec<(&'static str, Col)> {
    Table::new(records)
        .num("id", |r| r.id)
        .num("src", |r| r.src)
        .num("dst", |r| r.dst)
        .num("size_bytes", |r| r.size_bytes)
        .num("start_ps", |r| r.start_ps)
        .num("fct_ps", |r| r.fct_ps)
        .num("ideal_fct_ps", |r| r.ideal_fct_ps)
        .num("slowdown", |r| r.slowdown)
        .num("finished", |r| r.finished)
        .num("incast", |r| r.incast)
        .num("prio", |r| r.prio)
        .num("workload", |r| r.workload)
        .text("transport", |r| r.transport)
        .num("num_rtos", |r| r.num_rtos)
        .num("retx_segments", |r| r.retx_segments)
        .num("tail_probes", |r| r.tail_probes)
        .num("bytes_delivered", |r| r.bytes_delivered)
        .text("outcome", |r| r.outcome)
        .done()
}

fn encode(out: &sim::Output) -> Encoded {
    let records = encode_records(&out.records);
    let apps = Table::new(&out.apps)
        .num("app", |a| a.app)
        .text("kind", |a| a.kind)
        .num("unit", |a| a.unit)
        .num("start_ps", |a| a.start_ps)
        .num("end_ps", |a| a.end_ps)
        .num("duration_ps", |a| a.duration_ps)
        .num("ideal_ps", |a| a.ideal_ps)
        .num("slowdown", |a| a.slowdown)
        .num("num_transfers", |a| a.num_transfers)
        .num("bytes", |a| a.bytes)
        .num("src", |a| a.src)
        .num("dst", |a| a.dst)
        .num("bytes_sent", |a| a.bytes_sent)
        .num("packets_sent", |a| a.packets_sent)
        .num("packets_retx", |a| a.packets_retx)
        .num("messages", |a| a.messages)
        .num("messages_required", |a| a.messages_required)
        .num("messages_delivered", |a| a.messages_delivered)
        .num("loss_rate", |a| a.loss_rate)
        .num("loss_allowance", |a| a.loss_allowance)
        .num("gave_up", |a| a.gave_up)
        .done();
    let groups = Table::new(&out.groups)
        .num("app", |g| g.app)
        .num("unit", |g| g.unit)
        .num("group", |g| g.group)
        .num("msr", |g| g.msr)
        .num("messages", |g| g.messages)
        .num("messages_required", |g| g.messages_required)
        .num("messages_delivered", |g| g.messages_delivered)
        .num("loss_rate", |g| g.loss_rate)
        .num("loss_allowance", |g| g.loss_allowance)
        .done();
    let switches = Table::new(&out.switches)
        .num("switch", |s| s.switch)
        .num("node", |s| s.node)
        .text("tier", |s| s.tier)
        .num("buffer_bytes", |s| s.buffer_bytes)
        .num("arrivals", |s| s.arrivals)
        .num("drops_admission", |s| s.drops_admission)
        .num("drops_queue_cap", |s| s.drops_queue_cap)
        .num("drops_credit", |s| s.drops_credit)
        .num("drops_selective", |s| s.drops_selective)
        .num("drops_pushout", |s| s.drops_pushout)
        .num("pushed_out_bytes", |s| s.pushed_out_bytes)
        .num("dropped_bytes", |s| s.dropped_bytes)
        .num("ecn_marks", |s| s.ecn_marks)
        .num("enqueued_bytes", |s| s.enqueued_bytes)
        .num("dequeued_bytes", |s| s.dequeued_bytes)
        .num("max_occupancy_bytes", |s| s.max_occupancy_bytes)
        .num("occ_samples", |s| s.occ_samples)
        .num("occ_p50_bytes", |s| s.occ_p50_bytes)
        .num("occ_p90_bytes", |s| s.occ_p90_bytes)
        .num("occ_p99_bytes", |s| s.occ_p99_bytes)
        .num("occ_p9999_bytes", |s| s.occ_p9999_bytes)
        .num("final_occupancy_bytes", |s| s.final_occupancy_bytes)
        .num("credence_safeguard_accepts", |s| s.credence_safeguard_accepts)
        .num("credence_oracle_drops", |s| s.credence_oracle_drops)
        .num("credence_oracle_accepts", |s| s.credence_oracle_accepts)
        .num("credence_threshold_drops", |s| s.credence_threshold_drops)
        .done();
    let queues = Table::new(&out.queues)
        .num("switch", |q| q.switch)
        .num("link", |q| q.link)
        .num("queue", |q| q.queue)
        .num("max_bytes", |q| q.max_bytes)
        .done();
    let occupancy = Table::new(&out.occupancy)
        .num("time_ps", |o| o.time_ps)
        .num("switch", |o| o.switch)
        .num("bytes", |o| o.bytes)
        .done();
    let links = Table::new(&out.links)
        .num("link", |l| l.link)
        .num("src", |l| l.src)
        .num("dst", |l| l.dst)
        .num("rate_bps", |l| l.rate_bps)
        .num("tx_packets", |l| l.tx_packets)
        .num("tx_bytes", |l| l.tx_bytes)
        .done();
    let queue_series = Table::new(&out.queue_series)
        .num("time_ps", |q| q.time_ps)
        .num("link", |q| q.link)
        .num("node", |q| q.node)
        .num("switch", |q| q.switch)
        .num("queue", |q| q.queue)
        .num("bytes", |q| q.bytes)
        .done();
    let mut transfers = Table::new(&out.transfer_series)
        .num("time_ps", |t| t.time_ps)
        .num("flow", |t| t.flow)
        .num("cwnd_bytes", |t| t.cwnd_bytes)
        .num("rate_bps", |t| t.rate_bps)
        .num("is_paced", |t| t.is_paced)
        .num("srtt_ps", |t| t.srtt_ps)
        .num("sent_bytes", |t| t.sent_bytes)
        .num("delivered_bytes", |t| t.delivered_bytes);
    // Transport-specific columns, whatever the simulator declares.
    for (i, name) in sim::metrics::TRANSFER_EXTRA_COLUMNS.iter().enumerate() {
        transfers = transfers.num(name, move |t| t.extra[i]);
    }
    let transfer_series = transfers.done();
    let summary = serde_json::to_value(&out.summary).expect("Summary serializes to JSON");
    Encoded {
        records,
        apps,
        groups,
        switches,
        queues,
        occupancy,
        links,
        queue_series,
        transfer_series,
        summary,
    }
}

/// The results dict of `Simulation.results()` for `out`, encoded with the interpreter
/// detached.
fn output_to_py(py: Python<'_>, out: sim::Output) -> PyResult<Bound<'_, PyDict>> {
    let enc = py.detach(move || encode(&out));
    let d = PyDict::new(py);
    d.set_item("records", table_to_py(py, enc.records)?)?;
    d.set_item("apps", table_to_py(py, enc.apps)?)?;
    d.set_item("groups", table_to_py(py, enc.groups)?)?;
    d.set_item("switches", table_to_py(py, enc.switches)?)?;
    d.set_item("queues", table_to_py(py, enc.queues)?)?;
    d.set_item("occupancy", table_to_py(py, enc.occupancy)?)?;
    d.set_item("links", table_to_py(py, enc.links)?)?;
    d.set_item("queue_series", table_to_py(py, enc.queue_series)?)?;
    d.set_item("transfer_series", table_to_py(py, enc.transfer_series)?)?;
    d.set_item("summary", json_to_py(py, &enc.summary)?)?;
    Ok(d)
}

/// The results of a run that produced nothing, in the format of `Simulation.results()`:
/// every table with its columns and dtypes and no rows (for reading results folders that
/// lack an optional table).
#[pyfunction]
fn empty_results(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    output_to_py(py, sim::Output::default())
}

fn table_to_py<'py>(
    py: Python<'py>,
    cols: Vec<(&'static str, Col)>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, col) in cols {
        match col {
            Col::Num(dtype, bytes) => d.set_item(name, (dtype, PyBytes::new(py, &bytes)))?,
            Col::Str(v) => {
                // One Python string per distinct value (a column holds a handful: transport
                // kinds, outcomes), shared by every row, instead of one object per row.
                let mut made: Vec<(&'static str, Bound<'py, PyString>)> = Vec::new();
                let mut items = Vec::with_capacity(v.len());
                for s in v {
                    let obj = match made.iter().find(|(k, _)| std::ptr::eq(*k, s) || *k == s) {
                        Some((_, o)) => o.clone(),
                        None => {
                            let o = PyString::new(py, s);
                            made.push((s, o.clone()));
                            o
                        }
                    };
                    items.push(obj);
                }
                d.set_item(name, PyList::new(py, items)?)?
            }
        }
    }
    Ok(d)
}

fn json_to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value;
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.into_pyobject(py)?.into_any(),
            (None, Some(i)) => i.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| json_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(o) => {
            let d = PyDict::new(py);
            for (k, x) in o {
                d.set_item(k, json_to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// A running simulation of one resolved scenario.
///
/// Call-order contract: construct, call `advance` until it returns `False` (or until you have
/// seen enough), then `results()`. `results()` may be called at any time; it reports the state
/// so far. `enable_decision_trace` only before the first event. After an internal error (a
/// panic in the simulator, reported as `SimError` with key `<internal>`) the object refuses
/// further calls.
///
/// Threads: the methods that run long (`advance`, `results`, `take_records`,
/// `decision_trace`) release the interpreter while they work; a call from another thread
/// meanwhile is refused with a `SimError` (key `Simulation`) instead of pyo3's bare "Already
/// borrowed".
#[pyclass(name = "Simulation", module = "slacknet._native")]
struct PySimulation {
    inner: sim::Simulation,
    is_poisoned: bool,
}

/// Events `advance` runs between two looks at Python's signals: about 20 ms on a small network,
/// well under a second on the largest, and nothing measurable to re-attach for.
const ADVANCE_SIGNAL_EVENTS: u64 = 1 << 18;

impl PySimulation {
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        if self.is_poisoned {
            Err(sim_error(
                py,
                "<internal>",
                "the simulation failed earlier and cannot continue",
            ))
        } else {
            Ok(())
        }
    }
}

/// The error of a call made while another thread's call holds the simulation.
fn busy_error(py: Python<'_>) -> PyErr {
    sim_error(
        py,
        "Simulation",
        "another thread is in a call on this Simulation (advance, results, take_records and \
         decision_trace let other threads run while they work): make one call at a time (one \
         thread, or a lock around every call), or give each thread its own Simulation",
    )
}

/// `slf` to read, or [`busy_error`] if another thread's call holds it.
fn read<'py>(slf: &Bound<'py, PySimulation>) -> PyResult<PyRef<'py, PySimulation>> {
    slf.try_borrow().map_err(|_| busy_error(slf.py()))
}

/// `slf` to change, or [`busy_error`] if another thread's call holds it.
fn write<'py>(slf: &Bound<'py, PySimulation>) -> PyResult<PyRefMut<'py, PySimulation>> {
    slf.try_borrow_mut().map_err(|_| busy_error(slf.py()))
}

/// `v`'s `repr()`, at most 80 characters (an integer of thousands of digits has no `repr`).
fn short_repr(v: &Bound<'_, PyAny>) -> String {
    let r = match v.repr() {
        Ok(r) => r.to_string(),
        Err(_) => format!("<{}>", v.get_type().name().map_or_else(|_| "?".into(), |n| n.to_string())),
    };
    if r.chars().count() > 80 {
        r.chars().take(77).chain("...".chars()).collect()
    } else {
        r
    }
}

/// `advance`'s `max_events`: an integer from 1 to 2^64 - 1 (a numpy integer too). Anything
/// else, a boolean or a float included, is a `TypeError`, an integer out of range a
/// `ValueError` (0 did nothing and returned True, so that `while sim.advance(0)` never ended;
/// -1 and 2^64 were pyo3's bare `OverflowError`).
fn max_events_arg(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    use pyo3::exceptions::{PyOverflowError, PyTypeError};
    use pyo3::types::PyBool;
    let py = v.py();
    let type_error =
        || PyTypeError::new_err(format!("max_events = {}: give an integer, e.g. 200000", short_repr(v)));
    if v.is_instance_of::<PyBool>() {
        return Err(type_error());
    }
    let range_error =
        || PyValueError::new_err(format!("max_events = {}: must be between 1 and 2^64 - 1, e.g. 200000", short_repr(v)));
    match v.extract::<u64>() {
        Ok(0) => Err(range_error()),
        Ok(n) => Ok(n),
        Err(e) if e.is_instance_of::<PyOverflowError>(py) => Err(range_error()),
        Err(_) => Err(type_error()),
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

#[pymethods]
impl PySimulation {
    /// Build the network and the applications of a validated scenario (`validate_toml` /
    /// `validate_json`); nothing is validated or read again. Raises `SimError`. `trace_flow`:
    /// the id of a transfer (its records' `id`) whose packets to trace from its start
    /// (`flow_trace`).
    #[new]
    #[pyo3(signature = (scenario, *, trace_flow = None))]
    fn new(py: Python<'_>, scenario: &ValidScenario, trace_flow: Option<u64>) -> PyResult<Self> {
        let spec = scenario.inner.clone();
        // Building a large network takes seconds: interruptible.
        match interruptible(py, move || match trace_flow {
            Some(id) => sim::Simulation::with_flow_trace(&spec, id),
            None => sim::Simulation::new(&spec),
        })? {
            Ok(Ok(inner)) => Ok(PySimulation {
                inner,
                is_poisoned: false,
            }),
            Ok(Err(e)) => Err(from_sim_error(py, e)),
            Err(p) => Err(sim_error(
                py,
                "<internal>",
                &format!("simulator panicked: {}", panic_message(&*p)),
            )),
        }
    }

    /// Process up to `max_events` events (an integer from 1 to 2^64 - 1) with the interpreter
    /// released. Returns True while work remains. Python's signals are handled every 2^18
    /// events (`ADVANCE_SIGNAL_EVENTS`): Ctrl-C raises `KeyboardInterrupt` within a fraction
    /// of a second and leaves the simulation whole (advance again to go on).
    fn advance(slf: &Bound<'_, Self>, max_events: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = slf.py();
        let max_events = max_events_arg(max_events)?;
        let mut this = write(slf)?;
        this.check(py)?;
        let mut left = max_events;
        loop {
            // CORRECTNESS: `sim::Simulation::advance(a)` then `advance(b)`, the second only
            // if the first returned true, runs exactly the events of `advance(a + b)`.
            let chunk = left.min(ADVANCE_SIGNAL_EVENTS);
            let inner = &mut this.inner;
            match py.detach(move || catch_unwind(AssertUnwindSafe(|| inner.advance(chunk)))) {
                Ok(more) if !more || chunk == left => return Ok(more),
                Ok(_) => left -= chunk,
                Err(p) => {
                    this.is_poisoned = true;
                    return Err(sim_error(
                        py,
                        "<internal>",
                        &format!("simulator panicked: {}", panic_message(&*p)),
                    ));
                }
            }
            py.check_signals()?;
        }
    }

    /// Results so far as columns: a dict with keys `records`, `apps`, `groups`, `switches`, `queues`,
    /// `occupancy`, `links`, `queue_series`, `transfer_series` (each `{column: (numpy dtype
    /// string, little-endian bytes) | list[str]}`; the two series have no rows without
    /// `[run.timeseries]`) and `summary` (a dict of totals).
    fn results<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let this = read(slf)?;
        this.check(py)?;
        let inner = &this.inner;
        let out = py.detach(|| inner.output());
        output_to_py(py, out)
    }

    /// Take the records of the flows that are over (all that are left once the run is done),
    /// so that the simulator frees their state: the columns of `results()["records"]` plus
    /// `row` (each record's row in the records of a run that takes nothing; rows come in
    /// the order the flows ended). `results()` then reports only the records not taken.
    fn take_records<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let mut this = write(slf)?;
        this.check(py)?;
        let inner = &mut this.inner;
        let cols = py.detach(move || {
            let taken = inner.take_records();
            let mut cols = encode_records(&taken.records);
            let mut rows = Vec::with_capacity(taken.rows.len() * 8);
            for r in &taken.rows {
                r.put(&mut rows);
            }
            cols.push(("row", Col::Num(u64::DTYPE, rows)));
            cols
        });
        table_to_py(py, cols)
    }

    /// The run's flows as a flow list (`id src dst start_s size_bytes incast` per line,
    /// start times to the picosecond): the format of a `flow_list` workload and of the peer
    /// simulators' inputs. Raises `SimError` if an application reacts to the network (its
    /// flows are only known by running it).
    fn flow_list_text(slf: &Bound<'_, Self>) -> PyResult<String> {
        let py = slf.py();
        let this = read(slf)?;
        this.check(py)?;
        // Up to `sim::spec::limits::MAX_FLOWS` (50 M) flows made and written: detached, as `results`.
        let inner = &this.inner;
        py.detach(|| inner.flow_list_text()).ok_or_else(|| {
            sim_error(
                py,
                "workload",
                "an application of this scenario reacts to the network, so its flows cannot be listed before the run",
            )
        })
    }

    /// Record every switch arrival (features and eventual fate), for training Credence's drop
    /// oracle. Only before the first event: raises `SimError` after `advance` ran any.
    fn enable_decision_trace(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let mut this = write(slf)?;
        this.check(py)?;
        // Refused after the first event (`sim::world::TraceTooLate`): rows would get other
        // packets' fates.
        this.inner.enable_decision_trace().map_err(|e| sim_error(py, "enable_decision_trace", &e.to_string()))
    }

    /// Whether the decision trace reached its cap (512 MiB of rows) and stopped recording:
    /// its rows are the run's first arrivals, each with its true fate.
    fn decision_trace_truncated(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let this = read(slf)?;
        this.check(slf.py())?;
        Ok(this.inner.decision_trace_truncated())
    }

    /// The decision trace as columns `switch`, `time_ps`, `queue`, `queue_len`,
    /// `avg_queue_len`, `occupancy`, `avg_occupancy` (bytes) and `dropped`.
    fn decision_trace<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let this = read(slf)?;
        this.check(py)?;
        let rows = this.inner.decision_trace();
        let cols = py.detach(|| {
            Table::new(rows)
                .num("switch", |r| r.switch)
                .num("time_ps", |r| r.time_ps)
                .num("queue", |r| r.queue)
                .num("queue_len", |r| r.features[0])
                .num("avg_queue_len", |r| r.features[1])
                .num("occupancy", |r| r.features[2])
                .num("avg_occupancy", |r| r.features[3])
                .num("dropped", |r| r.dropped)
                .done()
        });
        table_to_py(py, cols)
    }

    /// The traced transfer's rows so far (`trace_flow`), as columns `time_ps`, `event`
    /// (`send`, `receive`, `enqueue`, `drop`, `timeout`), `to_receiver`, `seq`, `ack`,
    /// `flags`, `len`, `size`, `ce`, `link`, `switch`, `queue_bytes`, `cause` and
    /// `cwnd_bytes`.
    fn flow_trace<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let this = read(slf)?;
        this.check(py)?;
        let rows = this.inner.flow_trace();
        let cols = py.detach(|| {
            Table::new(rows)
                .num("time_ps", |r| r.time_ps)
                .text("event", |r| r.event.as_str())
                .num("to_receiver", |r| r.to_receiver)
                .num("seq", |r| r.seq)
                .num("ack", |r| r.ack)
                .num("flags", |r| r.flags)
                .num("len", |r| r.len)
                .num("size", |r| r.size)
                .num("ce", |r| r.ce)
                // u32::MAX (none) as -1.
                .num("link", |r| if r.link == u32::MAX { -1 } else { i64::from(r.link) })
                .num("switch", |r| if r.switch == u32::MAX { -1 } else { i64::from(r.switch) })
                .num("queue_bytes", |r| r.queue_bytes)
                .text("cause", |r| r.cause.as_str())
                .num("cwnd_bytes", |r| r.cwnd)
                .done()
        });
        table_to_py(py, cols)
    }

    /// Whether the traced transfer has started.
    fn flow_trace_started(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let this = read(slf)?;
        this.check(slf.py())?;
        Ok(this.inner.flow_trace_started())
    }

    /// Whether the flow trace reached its cap (512 MiB of rows) and stopped recording.
    fn flow_trace_truncated(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let this = read(slf)?;
        this.check(slf.py())?;
        Ok(this.inner.flow_trace_truncated())
    }

    /// Simulated time now, picoseconds.
    #[getter]
    fn now_ps(slf: &Bound<'_, Self>) -> PyResult<u64> {
        Ok(read(slf)?.inner.now().ps())
    }

    /// Events processed so far.
    #[getter]
    fn events(slf: &Bound<'_, Self>) -> PyResult<u64> {
        Ok(read(slf)?.inner.events())
    }

    /// Packet transmissions over links so far.
    #[getter]
    fn packet_hops(slf: &Bound<'_, Self>) -> PyResult<u64> {
        Ok(read(slf)?.inner.packet_hops())
    }

    /// Flows started so far (applications start them as the run goes: 0 before `advance`).
    #[getter]
    fn num_flows(slf: &Bound<'_, Self>) -> PyResult<u64> {
        Ok(read(slf)?.inner.num_flows())
    }

    /// Flows completed so far.
    #[getter]
    fn finished_flows(slf: &Bound<'_, Self>) -> PyResult<u64> {
        Ok(read(slf)?.inner.finished_flows())
    }

    /// Estimated end time for progress display, picoseconds (the stop time or the end of
    /// arrivals; the run may go on past it while flows drain).
    #[getter]
    fn horizon_ps(slf: &Bound<'_, Self>) -> PyResult<u64> {
        Ok(read(slf)?.inner.horizon().ps())
    }

    /// Whether the run is over.
    #[getter]
    fn is_done(slf: &Bound<'_, Self>) -> PyResult<bool> {
        Ok(read(slf)?.inner.is_done())
    }

    fn __repr__(slf: &Bound<'_, Self>) -> String {
        // A repr never raises (debuggers and logs call it): while another thread's call holds
        // the simulation, say so.
        let Ok(this) = slf.try_borrow() else {
            return "<Simulation (in a call on another thread)>".to_string();
        };
        let inner = &this.inner;
        format!(
            "<Simulation now_ps={} events={} finished_flows={}/{} is_done={}>",
            inner.now().ps(),
            inner.events(),
            inner.finished_flows(),
            inner.num_flows(),
            inner.is_done()
        )
    }
}

/// The native core of slacknet. Private: use the `slacknet` package.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    #[cfg(feature = "mimalloc")]
    sim::heap::keep_freed_memory();
    let py = m.py();
    m.add("SpecError", py.get_type::<SpecError>())?;
    m.add("SimError", py.get_type::<SimError>())?;
    m.add_class::<PySimulation>()?;
    net::register(m)?;
    m.add_class::<ValidScenario>()?;
    m.add_function(wrap_pyfunction!(validate_toml, m)?)?;
    m.add_function(wrap_pyfunction!(validate_json, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_toml, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_json, m)?)?;
    m.add_function(wrap_pyfunction!(default_scenario_toml, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(engine_sha256, m)?)?;
    m.add_function(wrap_pyfunction!(profile_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(credence_figure14, m)?)?;
    m.add_function(wrap_pyfunction!(empty_results, m)?)?;
    m.add_function(wrap_pyfunction!(coflow::coflow_inter, m)?)?;
    m.add_function(wrap_pyfunction!(coflow::coflowsim_run, m)?)?;
    m.add_function(wrap_pyfunction!(coflow::coflow_intra, m)?)?;
    m.add_function(wrap_pyfunction!(coflow::coflow_packet, m)?)?;
    m.add_function(wrap_pyfunction!(coflow::coflow_shuffle, m)?)?;
    m.add_function(wrap_pyfunction!(coflow::coflow_broadcast, m)?)?;
    Ok(())
}
