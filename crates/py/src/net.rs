//! The real transport's Python surface (`slacknet.net` wraps it): a [`PyNode`] is a
//! `udp::Node` (one socket, one event-loop thread in Rust); sends return a [`PySendHandle`].
//! Every wait runs with the interpreter detached, in slices of [`SLICE`] so that Ctrl-C is
//! seen between them.
//!
//! Errors: a bad argument is a `ValueError` naming it; a transfer past its deadline a
//! `TimeoutError`; a socket failure or a closed node a [`TransportError`] (an `OSError`).

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Mutex;
use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

create_exception!(
    slacknet._native,
    TransportError,
    PyOSError,
    "The real transport failed: a socket call, or the node was closed."
);

/// How long a detached wait lasts before Ctrl-C is checked.
const SLICE: Duration = Duration::from_millis(50);

fn node_error(e: udp::NodeError) -> PyErr {
    match e {
        udp::NodeError::Invalid { .. } => PyValueError::new_err(e.to_string()),
        udp::NodeError::DeadlineExceeded { .. } => PyTimeoutError::new_err(e.to_string()),
        udp::NodeError::Closed => TransportError::new_err("the endpoint is closed (Endpoint.close() was called)"),
        udp::NodeError::Cancelled => TransportError::new_err("the transfer was cancelled"),
        udp::NodeError::Io(_) | udp::NodeError::LoopFailed(_) => TransportError::new_err(e.to_string()),
    }
}

/// `s` seconds as a duration: positive, finite, at least 1 ns (the clock's unit) and at most
/// what a `Duration` holds; else a `ValueError` naming `key` and ending with `fix`.
fn seconds(key: &str, s: f64, fix: &str) -> PyResult<Duration> {
    let why = if s.is_nan() || s <= 0.0 {
        "must be a positive number of seconds"
    } else if s.is_infinite() {
        "must be a finite number of seconds"
    } else {
        match Duration::try_from_secs_f64(s) {
            Ok(d) if d.is_zero() => "is below the clock's 1 ns: give at least 1e-09 seconds",
            Ok(d) => return Ok(d),
            Err(_) => "is beyond the clock: give at most 1.8e19 seconds",
        }
    };
    Err(PyValueError::new_err(format!("{key} = {s:?}: {why}{fix}")))
}

/// A span in `unit`s (`per_second` of them to a second) as a duration: non-negative and finite.
fn span(key: &str, v: f64, unit: &str, per_second: f64) -> PyResult<Duration> {
    (v.is_finite() && v >= 0.0)
        .then(|| Duration::try_from_secs_f64(v / per_second).ok())
        .flatten()
        .ok_or_else(|| {
            PyValueError::new_err(format!("{key} = {v:?}: must be a non-negative, finite number of {unit} (at most 1.8e19 s)"))
        })
}

/// What to do about a bad receive timeout.
const TIMEOUT_FIX: &str = "; 0 returns at once, None waits forever";
/// What to do about a bad deadline.
const DEADLINE_FIX: &str = ", e.g. 30";

/// The socket could not be bound to `text`: a `TransportError` (an `OSError` with the errno)
/// that names the address and says what to do.
fn bind_error(text: &str, e: udp::NodeError) -> PyErr {
    let udp::NodeError::Io(io) = &e else { return node_error(e) };
    let fix = match io.kind() {
        std::io::ErrorKind::AddrInUse => "another socket has this port: give another, or port 0 for any free one",
        std::io::ErrorKind::AddrNotAvailable => "not an address of this host: give one `ip addr` lists, or \"0.0.0.0:0\"",
        std::io::ErrorKind::PermissionDenied => "ports below 1024 need root (CAP_NET_BIND_SERVICE): give a higher one",
        _ => "",
    };
    let sep = if fix.is_empty() { "" } else { "; " };
    // OSError prints the errno itself: drop the " (os error N)" Rust's message ends with.
    let what = io.to_string();
    let what = what.split(" (os error").next().unwrap_or(&what);
    let msg = format!("bind = {text:?}: {what}{sep}{fix}");
    match io.raw_os_error() {
        Some(errno) => TransportError::new_err((errno, msg)),
        None => TransportError::new_err(msg),
    }
}

/// `text` resolved: the first address of the family of `like` if it has one (a name such as
/// "localhost" may resolve to IPv6 and IPv4, and a socket reaches only its own family), else the
/// first.
fn address(key: &str, text: &str, like: Option<SocketAddr>) -> PyResult<SocketAddr> {
    let all: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| {
            PyValueError::new_err(format!("{key} = {text:?}: not an address ({e}); give \"host:port\", e.g. \"10.0.0.2:7000\""))
        })?
        .collect();
    like.and_then(|l| all.iter().find(|a| a.is_ipv4() == l.is_ipv4()))
        .or(all.first())
        .copied()
        .ok_or_else(|| PyValueError::new_err(format!("{key} = {text:?}: resolves to no address")))
}

/// Wait for `poll` to give something, at most `timeout_s` seconds (None: forever), with the
/// interpreter detached, in slices of [`SLICE`] so that Ctrl-C is seen between them. `poll`
/// waits at most the slice it is given.
fn wait_sliced<R: Send>(
    py: Python<'_>,
    timeout_s: Option<f64>,
    poll: impl Fn(Duration) -> Option<R> + Sync,
) -> PyResult<Option<R>> {
    // A timeout beyond what the clock can add waits as None does (`Instant + Duration` would
    // panic).
    let now = std::time::Instant::now();
    let until = match timeout_s {
        Some(0.0) => Some(now),
        Some(s) => now.checked_add(seconds("timeout", s, TIMEOUT_FIX)?),
        None => None,
    };
    loop {
        let slice = until.map_or(SLICE, |u| u.saturating_duration_since(std::time::Instant::now()).min(SLICE));
        if let Some(r) = py.detach(|| poll(slice)) {
            return Ok(Some(r));
        }
        py.check_signals()?;
        if until.is_some_and(|u| std::time::Instant::now() >= u) {
            return Ok(None);
        }
    }
}

/// Wait for a transfer handle's end ([`wait_sliced`]); the handle is put back if the wait ends
/// without its result (time up, or Ctrl-C).
///
/// The handle is taken out of its slot for the wait (the slot's lock is not held while
/// waiting), so that [`PySendHandle::cancel`] works from another thread meanwhile.
fn wait_handle<T: Send, R>(
    py: Python<'_>,
    slot: &Mutex<Option<udp::Handle<T>>>,
    timeout_s: Option<f64>,
    what: &str,
    to_py: impl FnOnce(T) -> PyResult<R>,
) -> PyResult<Option<R>> {
    let taken = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    let Some(h) = taken else {
        return Err(PyValueError::new_err(format!(
            "this {what}'s result was already taken, or another thread is waiting for it"
        )));
    };
    match wait_sliced(py, timeout_s, |slice| h.wait_timeout(slice)) {
        Ok(Some(Ok(r))) => to_py(r).map(Some),
        Ok(Some(Err(e))) => Err(node_error(e)),
        other => {
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
            other.map(|_| None)
        }
    }
}

/// A node of the real transport: one UDP socket and its event loop.
#[pyclass(name = "Node", module = "slacknet._native")]
#[derive(Debug)]
pub(crate) struct PyNode {
    inner: udp::Node,
}

#[pymethods]
impl PyNode {
    #[new]
    #[pyo3(signature = (bind = "0.0.0.0:0", *, loss = 0.0, duplicate = 0.0, reorder = 0.0, reorder_delay_us = 0.0, delay_us = 0.0, drop_nth = Vec::new(), drop_first_tx = Vec::new(), seed = 0, max_message_bytes = None, max_receive_memory_bytes = None, linger_ms = None, rto_us = None, line_rate_gbps = None, cc = "dctcp", send_order = "shuffled", tail_probe = false, min_receive_fraction = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        bind: &str,
        loss: f64,
        duplicate: f64,
        reorder: f64,
        reorder_delay_us: f64,
        delay_us: f64,
        drop_nth: Vec<u64>,
        drop_first_tx: Vec<u32>,
        seed: u64,
        max_message_bytes: Option<u64>,
        max_receive_memory_bytes: Option<u64>,
        linger_ms: Option<f64>,
        rto_us: Option<u64>,
        line_rate_gbps: Option<f64>,
        cc: &str,
        send_order: &str,
        tail_probe: bool,
        min_receive_fraction: Option<f64>,
    ) -> PyResult<PyNode> {
        let addr = address("bind", bind, None)?;
        let us = |key: &str, v: f64| span(key, v, "microseconds", 1e6);
        let fault = udp::FaultConfig {
            loss,
            duplicate,
            reorder,
            reorder_delay: us("reorder_delay_us", reorder_delay_us)?,
            delay: us("delay_us", delay_us)?,
            drop_nth: drop_nth.into_iter().collect(),
            drop_first_tx: drop_first_tx.into_iter().collect(),
            seed,
        };
        let mut cfg = udp::NodeConfig { fault, ..udp::NodeConfig::default() };
        if let Some(b) = max_message_bytes {
            cfg.max_message_bytes = b;
        }
        if let Some(b) = max_receive_memory_bytes {
            cfg.max_receive_memory_bytes = b;
        }
        if let Some(ms) = linger_ms {
            cfg.linger = span("linger_ms", ms, "milliseconds", 1e3)?;
        }
        if let Some(r) = rto_us {
            if r == 0 {
                return Err(PyValueError::new_err("rto_us = 0: must be at least 1 microsecond, e.g. 10000"));
            }
            cfg.mlt.rto = units::Dur::from_us(r);
            cfg.mlt.max_rto = cfg.mlt.max_rto.max(cfg.mlt.rto);
        }
        if let Some(g) = line_rate_gbps {
            cfg.line_rate_gbps = g;
        }
        cfg.mlt.cc = match cc {
            "dctcp" => udp::MltCc::Dctcp,
            "cubic" => udp::MltCc::Cubic,
            other => {
                return Err(PyValueError::new_err(format!(
                    "cc = {other:?}: the bounded-loss transport's window law is \"dctcp\" (the paper's, for ECN-marking switches) or \"cubic\" (RFC 9438, to share drop-tail ports with Linux's default TCP)"
                )))
            }
        };
        cfg.mlt.send_order = match send_order {
            "shuffled" => udp::MltSendOrder::Shuffled,
            "index" => udp::MltSendOrder::Index,
            other => {
                return Err(PyValueError::new_err(format!(
                    "send_order = {other:?}: the order of an array's packets is \"shuffled\" (a random order per array, so what p < 1 leaves missing is random packets) or \"index\" (in order: what is missing is the array's tail)"
                )))
            }
        };
        cfg.mlt.tail_probe = tail_probe;
        if let Some(f) = min_receive_fraction {
            cfg.min_receive_fraction = f;
        }
        let inner = py.detach(|| udp::Node::bind(addr, cfg)).map_err(|e| bind_error(bind, e))?;
        Ok(PyNode { inner })
    }

    /// The address peers send to, "ip:port".
    #[getter]
    fn address(&self) -> String {
        self.inner.local_addr().to_string()
    }

    /// What the kernel offers the socket: a dict of gso_segments, gro_segments, has_tos,
    /// send_buffer_bytes, recv_buffer_bytes.
    fn capabilities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.inner.capabilities();
        let d = PyDict::new(py);
        d.set_item("gso_segments", c.gso_segments)?;
        d.set_item("gro_segments", c.gro_segments)?;
        d.set_item("has_tos", c.has_tos)?;
        d.set_item("send_buffer_bytes", c.send_buffer_bytes)?;
        d.set_item("recv_buffer_bytes", c.recv_buffer_bytes)?;
        Ok(d)
    }

    /// Start sending `data` (whole values of `value_bytes` bytes) to `peer` so that it ends once
    /// the fraction `p` of the values arrived, labelled `tag`; returns a handle to wait on.
    #[pyo3(signature = (peer, data, value_bytes, p, deadline_s, tag = 0))]
    fn send_values(
        &self,
        peer: &str,
        data: &Bound<'_, PyBytes>,
        value_bytes: u8,
        p: f64,
        deadline_s: f64,
        tag: u32,
    ) -> PyResult<PySendHandle> {
        let to = address("peer", peer, Some(self.inner.local_addr()))?;
        let deadline = seconds("deadline", deadline_s, DEADLINE_FIX)?;
        let h = self
            .inner
            .send_values_tagged(to, data.as_bytes().to_vec(), value_bytes, p, deadline, tag)
            .map_err(node_error)?;
        Ok(PySendHandle::new(h))
    }

    /// The next message a peer sent, waiting at most `timeout_s` seconds (None: forever), as a
    /// dict (peer, conn, value_bytes, data, total_values, received_values, missing, elapsed_s, tag),
    /// or None when the time is up.
    #[pyo3(signature = (timeout_s = None))]
    fn recv<'py>(&self, py: Python<'py>, timeout_s: Option<f64>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let node = &self.inner;
        // A closed node's receive returns None at once: that is an error, not a time-out.
        let polled = wait_sliced(py, timeout_s, |slice| node.recv(slice).map(Some).or_else(|| node.is_closed().then_some(None)))?;
        let Some(polled) = polled else { return Ok(None) };
        let d = polled.ok_or_else(|| node_error(udp::NodeError::Closed))?;
        let out = PyDict::new(py);
        out.set_item("peer", d.peer.to_string())?;
        out.set_item("conn", d.conn)?;
        out.set_item("value_bytes", d.value_bytes)?;
        out.set_item("data", PyBytes::new(py, &d.data))?;
        out.set_item("total_values", d.total_values)?;
        out.set_item("received_values", d.received_values)?;
        out.set_item("missing", d.missing)?;
        out.set_item("elapsed_s", d.elapsed.as_secs_f64())?;
        out.set_item("tag", d.tag)?;
        Ok(Some(out))
    }

    /// Start an ATP job to `peer`: `messages` as (group, bytes) pairs, group `g` needing at
    /// least the fraction `msrs[g]` of its messages; returns a handle to wait on.
    fn send_job(
        &self,
        peer: &str,
        msrs: Vec<f64>,
        messages: Vec<(u16, Vec<u8>)>,
        deadline_s: f64,
    ) -> PyResult<PyJobHandle> {
        let to = address("peer", peer, Some(self.inner.local_addr()))?;
        let deadline = seconds("deadline", deadline_s, DEADLINE_FIX)?;
        let h = self.inner.send_job(to, &msrs, messages, deadline).map_err(|e| match e {
            // Python's parameter is `msr` (Endpoint.send_job).
            udp::NodeError::Invalid { key: "msrs", value, message } => node_error(udp::NodeError::Invalid { key: "msr", value, message }),
            e => node_error(e),
        })?;
        Ok(PyJobHandle::new(h))
    }

    /// The next event of an ATP job a peer sends, waiting at most `timeout_s` seconds (None:
    /// forever): a dict with kind "message" (peer, conn, msg, group, data) or "end" (peer,
    /// conn, total, lost; both None if the sender's end-of-job notice never came), or None.
    #[pyo3(signature = (timeout_s = None))]
    fn recv_job<'py>(&self, py: Python<'py>, timeout_s: Option<f64>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let node = &self.inner;
        let polled = wait_sliced(py, timeout_s, |slice| node.recv_job(slice).map(Some).or_else(|| node.is_closed().then_some(None)))?;
        let Some(polled) = polled else { return Ok(None) };
        let e = polled.ok_or_else(|| node_error(udp::NodeError::Closed))?;
        let out = PyDict::new(py);
        match e {
            udp::JobEvent::Message { peer, conn, msg, group, data } => {
                out.set_item("kind", "message")?;
                out.set_item("peer", peer.to_string())?;
                out.set_item("conn", conn)?;
                out.set_item("msg", msg)?;
                out.set_item("group", group)?;
                out.set_item("data", PyBytes::new(py, &data))?;
            }
            udp::JobEvent::End { peer, conn, total, lost } => {
                out.set_item("kind", "end")?;
                out.set_item("peer", peer.to_string())?;
                out.set_item("conn", conn)?;
                out.set_item("total", total)?;
                out.set_item("lost", lost)?;
            }
        }
        Ok(Some(out))
    }

    /// Counters of the node, as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_dict(py, self.inner.stats())
    }

    /// Stop the node: transfers still running end with an error, messages not yet taken are
    /// dropped, the socket is closed; returns the final counters. Later calls return them again.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let node = &self.inner;
        let s = py.detach(|| node.shutdown()).map_err(node_error)?;
        stats_dict(py, s)
    }

    /// Whether the node was closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }
}

/// A node's counters as a dict.
fn stats_dict(py: Python<'_>, s: udp::NodeStats) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in [
        ("num_sent", s.num_sent),
        ("num_received", s.num_received),
        ("num_malformed", s.num_malformed),
        ("num_unknown", s.num_unknown),
        ("num_refused", s.num_refused),
        ("num_refused_below_floor", s.num_refused_below_floor),
        ("num_send_dropped", s.num_send_dropped),
        ("num_receivers_timed_out", s.num_receivers_timed_out),
        ("num_socket_errors", s.num_socket_errors),
        ("num_gso_fallbacks", s.num_gso_fallbacks),
        ("fault_dropped", s.fault.num_dropped),
        ("fault_duplicated", s.fault.num_duplicated),
        ("fault_reordered", s.fault.num_reordered),
        ("receive_memory_bytes", s.receive_memory_bytes),
    ] {
        d.set_item(k, v)?;
    }
    Ok(d)
}

/// A send in progress.
#[pyclass(name = "SendHandle", module = "slacknet._native", frozen)]
#[derive(Debug)]
pub(crate) struct PySendHandle {
    inner: Mutex<Option<udp::SendHandle>>,
    canceller: udp::Canceller,
}

impl PySendHandle {
    fn new(h: udp::SendHandle) -> PySendHandle {
        PySendHandle { canceller: h.canceller(), inner: Mutex::new(Some(h)) }
    }
}

#[pymethods]
impl PySendHandle {
    /// Stop the transfer (from any thread, also while another waits on it): nothing more is
    /// sent, and a wait ends with TransportError. A transfer already over keeps its result.
    fn cancel(&self) {
        self.canceller.cancel();
    }

    /// Wait for the end of the transfer (at most `timeout_s` seconds; None: until its
    /// deadline). Returns a dict (outcome, elapsed_s, packets_sent, packets_retx, bytes_sent,
    /// timeouts), or None if `timeout_s` passed first; raises TimeoutError past the deadline.
    #[pyo3(signature = (timeout_s = None))]
    fn wait<'py>(&self, py: Python<'py>, timeout_s: Option<f64>) -> PyResult<Option<Bound<'py, PyDict>>> {
        wait_handle(py, &self.inner, timeout_s, "transfer", |r| {
            let d = PyDict::new(py);
            d.set_item("outcome", r.outcome.as_str())?;
            d.set_item("elapsed_s", r.elapsed.as_secs_f64())?;
            d.set_item("packets_sent", r.stats.segments_sent)?;
            d.set_item("packets_retx", r.stats.segments_retx)?;
            d.set_item("bytes_sent", r.stats.bytes_sent)?;
            d.set_item("timeouts", r.stats.num_rtos)?;
            Ok(d)
        })
    }
}

/// An ATP job in progress.
#[pyclass(name = "JobHandle", module = "slacknet._native", frozen)]
#[derive(Debug)]
pub(crate) struct PyJobHandle {
    inner: Mutex<Option<udp::JobHandle>>,
    canceller: udp::Canceller,
}

impl PyJobHandle {
    fn new(h: udp::JobHandle) -> PyJobHandle {
        PyJobHandle { canceller: h.canceller(), inner: Mutex::new(Some(h)) }
    }
}

#[pymethods]
impl PyJobHandle {
    /// Stop the job (as `SendHandle.cancel`).
    fn cancel(&self) {
        self.canceller.cancel();
    }

    /// Wait for the end of the job (at most `timeout_s` seconds; None: until its deadline).
    /// Returns a dict (outcome, elapsed_s, groups: a list of dicts with messages, required,
    /// delivered, lost; packets_sent, packets_retx), or None if `timeout_s` passed first.
    #[pyo3(signature = (timeout_s = None))]
    fn wait<'py>(&self, py: Python<'py>, timeout_s: Option<f64>) -> PyResult<Option<Bound<'py, PyDict>>> {
        wait_handle(py, &self.inner, timeout_s, "job", |r| {
            let d = PyDict::new(py);
            d.set_item("outcome", r.outcome.as_str())?;
            d.set_item("elapsed_s", r.elapsed.as_secs_f64())?;
            let groups = pyo3::types::PyList::empty(py);
            for g in &r.groups {
                let gd = PyDict::new(py);
                gd.set_item("messages", g.messages)?;
                gd.set_item("required", g.required)?;
                gd.set_item("delivered", g.delivered)?;
                gd.set_item("lost", g.lost)?;
                groups.append(gd)?;
            }
            d.set_item("groups", groups)?;
            d.set_item("packets_sent", r.stats.segments_sent)?;
            d.set_item("packets_retx", r.stats.segments_retx)?;
            Ok(d)
        })
    }
}

/// Register the classes and the exception on the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TransportError", m.py().get_type::<TransportError>())?;
    m.add_class::<PyNode>()?;
    m.add_class::<PySendHandle>()?;
    m.add_class::<PyJobHandle>()?;
    Ok(())
}
