//! A node: one UDP socket and one event-loop thread that drives every connection through it
//! with the wall clock, the way the simulator drives the same `proto` endpoints with virtual
//! time.
//!
//! The application talks to the loop through channels: [`Node::send_values`] starts a
//! bounded-loss transfer of a vector of values and returns a [`SendHandle`] to wait on;
//! messages peers send arrive as [`Delivered`] from [`Node::recv`], with the exact list of
//! missing value ranges (the bounded-loss paper's §3.2 Idea #2; missing values are zero).
//!
//! The loop, per turn: take the application's commands; receive a batch of datagrams and hand
//! each to its connection (a data packet from an unknown `(peer, connection)` opens a receiver
//! if the limits allow); fire due timers; drain every connection touched (transmit, re-arm,
//! events); release datagrams the fault injector held; reap connections past their deadline or
//! their linger; then `poll(2)` until the next timer (at most [`MAX_IDLE_WAIT`]).
//!
//! Robustness (untrusted peers):
//! - a datagram that does not parse, or names no connection of this node, is dropped and
//!   counted ([`NodeStats`]); nothing a peer sends can panic the loop;
//! - a peer opens at most [`NodeConfig::max_connections`] receivers in all, each message at most
//!   [`NodeConfig::max_message_bytes`], all of them together at most
//!   [`NodeConfig::max_receive_memory_bytes`] (counted until the application takes the
//!   message), so a peer cannot make a receiver allocate without bound;
//! - a connection is keyed by the peer's address and its connection id, so one peer cannot
//!   complete or disturb another's message (an off-path attacker who spoofs source addresses is
//!   out of scope, as for plain UDP);
//! - every transfer has a deadline, every receiver an idle timeout, so nothing wedges.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use proto::mlt::MltConfig;
use proto::{Endpoint, Event, Outcome, Segment, Stats, TransportConfig};
use units::{Bytes, Time};
use wire::{Ecn, MLT_HEADER_LEN};

use crate::datagram;
use crate::fault::{FaultConfig, FaultInjector, FaultStats, Outgoing};
use crate::socket::{Capabilities, Socket};

/// The longest the loop sleeps without looking at the application's commands.
pub const MAX_IDLE_WAIT: Duration = Duration::from_millis(2);
/// How long a send waits for room in a full socket buffer before the datagram is counted as
/// dropped (the transport recovers it like a loss).
const SEND_BLOCK_WAIT: Duration = Duration::from_millis(20);

/// Knobs of a node. Every default is here.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// The largest UDP payload sent, header included. Default 1452 (a 1500-byte MTU less the
    /// IPv6 and UDP headers, so it fits IPv4 too).
    pub max_datagram_bytes: usize,
    /// The bounded-loss transport's knobs (`mss` is set from `max_datagram_bytes`;
    /// `complete_fraction` is each send's own).
    pub mlt: MltConfig,
    /// Connections (senders and receivers) at once. Default 4096.
    pub max_connections: usize,
    /// The largest message a peer may send. Default 1 GiB.
    pub max_message_bytes: u64,
    /// Receive buffers of all messages not yet taken by the application, together. Default
    /// 2 GiB.
    pub max_receive_memory_bytes: u64,
    /// A receiver that hears nothing for this long is dropped. Default 30 s.
    pub receiver_idle_timeout: Duration,
    /// How long a receiver keeps acknowledging after it handed its message up (its last ACKs
    /// may be lost; the sender needs one). Default 200 ms after the last packet heard.
    pub linger: Duration,
    /// Faults injected into what this node sends (off by default).
    pub fault: FaultConfig,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            max_datagram_bytes: 1452,
            mlt: MltConfig::default(),
            max_connections: 4096,
            max_message_bytes: 1 << 30,
            max_receive_memory_bytes: 2 << 30,
            receiver_idle_timeout: Duration::from_secs(30),
            linger: Duration::from_millis(200),
            fault: FaultConfig::default(),
        }
    }
}

/// What went wrong with a node or a transfer.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// A socket call failed.
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
    /// A knob or an argument is out of range.
    #[error("{key} = {value}: {message}")]
    Invalid {
        /// Which knob or argument.
        key: &'static str,
        /// Its value, as given.
        value: String,
        /// What is wrong and the fix.
        message: String,
    },
    /// The transfer did not end by its deadline (the receiver may have part of it).
    #[error("deadline exceeded after {0:?}")]
    DeadlineExceeded(Duration),
    /// The node shut down before the transfer ended.
    #[error("the node is closed")]
    Closed,
}

fn invalid(key: &'static str, value: impl std::fmt::Display, message: impl Into<String>) -> NodeError {
    NodeError::Invalid { key, value: value.to_string(), message: message.into() }
}

/// How a send ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SendReport {
    /// `Complete` (every value acknowledged) or `Enough` (at least the fraction p).
    pub outcome: Outcome,
    /// From the send call to the receiver's confirmation.
    pub elapsed: Duration,
    /// The sender's counters.
    pub stats: Stats,
}

/// A message a peer sent, handed up once the fraction its sender asked for arrived.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivered {
    /// The sender.
    pub peer: SocketAddr,
    /// Its connection id.
    pub conn: u32,
    /// Bytes per value (4 or 2).
    pub value_bytes: u8,
    /// The values, `total_values x value_bytes` bytes, zero where missing.
    pub data: Vec<u8>,
    /// Values in the message.
    pub total_values: u32,
    /// Values that arrived.
    pub received_values: u32,
    /// The missing value index ranges `[start, end)`, sorted, maximal.
    pub missing: Vec<(u32, u32)>,
    /// From the first packet heard to delivery.
    pub elapsed: Duration,
}

/// Counters of a node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Datagrams handed to the socket.
    pub num_sent: u64,
    /// Datagrams received.
    pub num_received: u64,
    /// Received datagrams that did not parse (or carried a payload not of their header's length).
    pub num_malformed: u64,
    /// Received datagrams for no connection of this node (e.g. late ACKs).
    pub num_unknown: u64,
    /// Data packets that would have opened a receiver beyond the limits.
    pub num_refused: u64,
    /// Datagrams dropped because the socket buffer stayed full.
    pub num_send_dropped: u64,
    /// Receivers dropped after their idle timeout without delivering.
    pub num_receivers_timed_out: u64,
    /// Socket calls that failed (the loop goes on).
    pub num_socket_errors: u64,
    /// What the fault injector did.
    pub fault: FaultStats,
}

/// A send in progress: wait for its end. Its result is handed out once; later waits report
/// [`NodeError::Closed`].
#[derive(Debug)]
pub struct SendHandle {
    // A Mutex so that a handle can be shared between threads (and held by Python objects).
    rx: Mutex<mpsc::Receiver<Result<SendReport, NodeError>>>,
}

impl SendHandle {
    /// Block until the transfer ends (or `timeout` passes: `None`).
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<SendReport, NodeError>> {
        let rx = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        match rx.recv_timeout(timeout) {
            Ok(r) => Some(r),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => Some(Err(NodeError::Closed)),
        }
    }

    /// Block until the transfer ends (its deadline bounds the wait).
    pub fn wait(&self) -> Result<SendReport, NodeError> {
        let rx = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        rx.recv().unwrap_or(Err(NodeError::Closed))
    }
}

enum Cmd {
    SendValues {
        peer: SocketAddr,
        data: Vec<u8>,
        value_bytes: u8,
        p: f64,
        deadline: Duration,
        done: mpsc::Sender<Result<SendReport, NodeError>>,
    },
}

struct Shared {
    stop: AtomicBool,
    /// Receive memory reserved (buffers of receivers and of messages not yet taken).
    reserved: AtomicU64,
    stats: Mutex<NodeStats>,
}

/// A node (module docs). Dropping it stops its thread; transfers still running end with
/// [`NodeError::Closed`].
pub struct Node {
    local: SocketAddr,
    caps: Capabilities,
    cmds: mpsc::Sender<Cmd>,
    delivered: Mutex<mpsc::Receiver<Delivered>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node").field("local", &self.local).field("caps", &self.caps).finish()
    }
}

impl Node {
    /// Bind a node to `addr` (port 0: any free port) and start its loop.
    pub fn bind(addr: SocketAddr, cfg: NodeConfig) -> Result<Node, NodeError> {
        if let Err((name, v)) = cfg.fault.check() {
            return Err(invalid("fault", format!("{name} = {v}"), "probabilities must lie in [0, 1]"));
        }
        let min = MLT_HEADER_LEN + 4;
        if !(min..=65_507).contains(&cfg.max_datagram_bytes) {
            return Err(invalid(
                "max_datagram_bytes",
                cfg.max_datagram_bytes,
                format!("must be between {min} (a header and one value) and 65507 (the largest UDP payload)"),
            ));
        }
        let sock = Socket::bind(addr)?;
        let local = sock.local_addr()?;
        let caps = sock.capabilities();
        let (cmd_tx, cmd_rx) = mpsc::channel();
        let (del_tx, del_rx) = mpsc::channel();
        let shared =
            Arc::new(Shared { stop: AtomicBool::new(false), reserved: AtomicU64::new(0), stats: Mutex::default() });
        let mut mlt = cfg.mlt.clone();
        mlt.mss = (cfg.max_datagram_bytes - MLT_HEADER_LEN) as u32;
        let lp = Loop {
            fault: FaultInjector::new(cfg.fault.clone()),
            cfg,
            mlt,
            sock,
            epoch: Instant::now(),
            conns: HashMap::new(),
            cmds: cmd_rx,
            delivered: del_tx,
            shared: Arc::clone(&shared),
            stats: NodeStats::default(),
            out: Vec::new(),
            scratch: Vec::new(),
            txq: TxQueue::default(),
            next_conn: conn_id_start(),
        };
        let thread = std::thread::Builder::new().name(format!("slacknet-udp {local}")).spawn(move || lp.run())?;
        Ok(Node { local, caps, cmds: cmd_tx, delivered: Mutex::new(del_rx), shared, thread: Some(thread) })
    }

    /// The address peers send to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// What the kernel offers this node's socket (GSO/GRO segments, TOS, buffer sizes).
    pub fn capabilities(&self) -> Capabilities {
        self.caps
    }

    /// Send `data`, a vector of values of `value_bytes` bytes each (4: 32-bit floats, 2:
    /// 16-bit), to `peer` with the bounded-loss transport: it ends once the receiver holds at
    /// least the fraction `p` of the values (`p = 1`: all of them, a reliable transfer), or
    /// fails with [`NodeError::DeadlineExceeded`] after `deadline`.
    pub fn send_values(
        &self,
        peer: SocketAddr,
        data: Vec<u8>,
        value_bytes: u8,
        p: f64,
        deadline: Duration,
    ) -> Result<SendHandle, NodeError> {
        if value_bytes != 2 && value_bytes != 4 {
            return Err(invalid("value_bytes", value_bytes, "must be 4 (32-bit values) or 2 (16-bit)"));
        }
        if data.is_empty() || !data.len().is_multiple_of(usize::from(value_bytes)) {
            return Err(invalid(
                "data",
                format!("{} bytes", data.len()),
                format!("must be a non-empty whole number of {value_bytes}-byte values"),
            ));
        }
        if data.len() as u64 / u64::from(value_bytes) > u64::from(u32::MAX) {
            return Err(invalid("data", format!("{} bytes", data.len()), "at most 2^32 - 1 values per message"));
        }
        if !(p > 0.0 && p <= 1.0) {
            return Err(invalid("p", p, "the fraction of values that must arrive, in (0, 1], e.g. 0.9"));
        }
        if deadline.is_zero() {
            return Err(invalid("deadline", format!("{deadline:?}"), "must be positive, e.g. 10 s"));
        }
        let (done, rx) = mpsc::channel();
        self.cmds
            .send(Cmd::SendValues { peer, data, value_bytes, p, deadline, done })
            .map_err(|_| NodeError::Closed)?;
        Ok(SendHandle { rx: Mutex::new(rx) })
    }

    /// The next message a peer sent, waiting at most `timeout`.
    pub fn recv(&self, timeout: Duration) -> Option<Delivered> {
        let rx = self.delivered.lock().unwrap_or_else(|e| e.into_inner());
        let d = rx.recv_timeout(timeout).ok()?;
        self.shared.reserved.fetch_sub(d.data.len() as u64, Ordering::Relaxed);
        Some(d)
    }

    /// Counters (published by the loop every turn).
    pub fn stats(&self) -> NodeStats {
        *self.shared.stats.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A connection id to start from that differs between processes, so that a restarted sender
/// does not reuse the ids of a receiver still lingering on its previous messages.
fn conn_id_start() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish() as u32
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    peer: SocketAddr,
    conn: u32,
    is_sender: bool,
}

enum Side {
    Tx {
        data: Vec<u8>,
        vb: usize,
        done: mpsc::Sender<Result<SendReport, NodeError>>,
        deadline: Instant,
        started: Instant,
    },
    Rx {
        /// The message's bytes, until handed up.
        buf: Option<Vec<u8>>,
        vb: usize,
        total: u32,
        started: Instant,
        last_heard: Instant,
        delivered: bool,
        /// Bytes reserved for `buf` while the receiver holds it.
        reserved: u64,
    },
}

struct Conn {
    ep: Endpoint,
    side: Side,
}

struct Loop {
    cfg: NodeConfig,
    mlt: MltConfig,
    sock: Socket,
    epoch: Instant,
    fault: FaultInjector,
    conns: HashMap<Key, Conn>,
    cmds: mpsc::Receiver<Cmd>,
    delivered: mpsc::Sender<Delivered>,
    shared: Arc<Shared>,
    stats: NodeStats,
    /// Datagrams through the fault injector (when it is on).
    out: Vec<Outgoing>,
    scratch: Vec<u8>,
    /// Datagrams waiting for the socket, back to back, sent in GSO runs at the end of a turn.
    txq: TxQueue,
    next_conn: u32,
}

/// Datagrams to send, contiguous in one buffer so that a run of equal-sized ones to one
/// destination is one GSO `sendmsg` without copying.
#[derive(Debug, Default)]
struct TxQueue {
    buf: Vec<u8>,
    /// `(dest, dscp, start, len)` per datagram, in order.
    items: Vec<(SocketAddr, u8, usize, usize)>,
}

impl Loop {
    fn time(&self, at: Instant) -> Time {
        let ns = at.saturating_duration_since(self.epoch).as_nanos();
        Time::from_ps(u64::try_from(ns).unwrap_or(u64::MAX / 1000).saturating_mul(1000))
    }

    fn instant(&self, t: Time) -> Instant {
        self.epoch + Duration::from_nanos(t.ps() / 1000)
    }

    fn run(mut self) {
        let mut touched: Vec<Key> = Vec::new();
        while !self.shared.stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            touched.clear();
            self.take_commands(now, &mut touched);
            if self.receive(now, &mut touched).is_err() {
                // A socket error (e.g. an ICMP port unreachable reported on a later call) ends
                // nothing: count it and go on.
                self.stats.num_socket_errors += 1;
            }
            self.fire_timers(now, &mut touched);
            touched.sort_unstable_by_key(|k| (k.conn, k.is_sender));
            touched.dedup();
            for k in &touched {
                self.drain(*k, now);
            }
            self.release_held(now);
            self.flush();
            self.reap(now);
            self.publish();
            let wait = self.next_wakeup().map_or(MAX_IDLE_WAIT, |at| at.saturating_duration_since(Instant::now()));
            let _ = self.sock.wait(wait.min(MAX_IDLE_WAIT), false);
        }
        // Closing: every transfer still running learns it.
        for (_, c) in self.conns.drain() {
            if let Side::Tx { done, .. } = c.side {
                let _ = done.send(Err(NodeError::Closed));
            }
        }
    }

    fn publish(&mut self) {
        self.stats.fault = self.fault.stats();
        if let Ok(mut s) = self.shared.stats.lock() {
            *s = self.stats;
        }
    }

    fn take_commands(&mut self, now: Instant, touched: &mut Vec<Key>) {
        while let Ok(cmd) = self.cmds.try_recv() {
            match cmd {
                Cmd::SendValues { peer, data, value_bytes, p, deadline, done } => {
                    if self.conns.len() >= self.cfg.max_connections {
                        let _ = done.send(Err(invalid(
                            "max_connections",
                            self.cfg.max_connections,
                            "this node has that many transfers running: wait for some to end, or raise it",
                        )));
                        continue;
                    }
                    let conn = self.next_conn;
                    self.next_conn = self.next_conn.wrapping_add(1);
                    let cfg = TransportConfig::Mlt(MltConfig {
                        value_bytes,
                        complete_fraction: p,
                        ..self.mlt.clone()
                    });
                    let ep = Endpoint::sender(&cfg, conn, Bytes(data.len() as u64), self.time(now));
                    let key = Key { peer, conn, is_sender: true };
                    let side = Side::Tx {
                        data,
                        vb: usize::from(value_bytes),
                        done,
                        deadline: now + deadline,
                        started: now,
                    };
                    self.conns.insert(key, Conn { ep, side });
                    touched.push(key);
                }
            }
        }
    }

    fn receive(&mut self, now: Instant, touched: &mut Vec<Key>) -> std::io::Result<()> {
        let t = self.time(now);
        // Bounded work per turn: a few batches, then timers and transmissions get their turn.
        for _ in 0..8 {
            let received = self.sock.recv()?.to_vec();
            if received.is_empty() {
                break;
            }
            for r in &received {
                self.stats.num_received += 1;
                let Ok((mut seg, payload)) = datagram::parse(self.sock.datagram(r)) else {
                    self.stats.num_malformed += 1;
                    continue;
                };
                // The payload follows the header; it is read again below, once the receiver
                // (which may have to be opened) is known.
                let payload_len = payload.len();
                let Segment::Mlt(ref mut h) = seg else {
                    self.stats.num_unknown += 1;
                    continue;
                };
                // The network's ECN marks are in the IP header, not in ours.
                if let Some(ecn) = r.ecn.and_then(|e| Ecn::from_u8(e).ok()) {
                    h.ecn = ecn;
                }
                let h = *h;
                let key = Key { peer: r.peer, conn: h.conn, is_sender: h.is_ack() };
                if !self.conns.contains_key(&key) && (h.is_ack() || !self.open_receiver(key, &h, now)) {
                    self.stats.num_unknown += u64::from(h.is_ack());
                    continue;
                }
                let Some(c) = self.conns.get_mut(&key) else { continue };
                if let Side::Rx { buf, vb, last_heard, .. } = &mut c.side {
                    *last_heard = now;
                    // Values count until the message is handed up (the report is frozen then,
                    // within this batch already; later values are acknowledged, not kept).
                    let takes = c.ep.as_mlt_receiver().is_some_and(|rx| rx.report().is_none() && rx.accepts(&h));
                    if let (true, Some(buf)) = (takes, buf.as_mut()) {
                        // CORRECTNESS: accepts() checked end <= total and the value width, and
                        // the buffer holds total values; parse() checked the payload is the
                        // (end - start) values that follow the header.
                        let bytes = self.sock.datagram(r);
                        let payload = &bytes[MLT_HEADER_LEN..MLT_HEADER_LEN + payload_len];
                        let at = h.start as usize * *vb;
                        if let Some(dst) = buf.get_mut(at..at + payload_len) {
                            dst.copy_from_slice(payload);
                        }
                    }
                }
                c.ep.handle_segment(t, &Segment::Mlt(h));
                touched.push(key);
            }
        }
        Ok(())
    }

    /// A data packet from an unknown `(peer, conn)`: open a receiver if the limits allow.
    fn open_receiver(&mut self, key: Key, h: &wire::MltRepr, now: Instant) -> bool {
        let bytes = u64::from(h.total) * u64::from(h.value_bytes);
        let reserved = self.shared.reserved.load(Ordering::Relaxed);
        if self.conns.len() >= self.cfg.max_connections
            || bytes > self.cfg.max_message_bytes
            || reserved.saturating_add(bytes) > self.cfg.max_receive_memory_bytes
            || (h.value_bytes != 2 && h.value_bytes != 4)
        {
            self.stats.num_refused += 1;
            return false;
        }
        self.shared.reserved.fetch_add(bytes, Ordering::Relaxed);
        let cfg = TransportConfig::Mlt(MltConfig { value_bytes: h.value_bytes, ..self.mlt.clone() });
        let side = Side::Rx {
            // CORRECTNESS: bytes <= max_message_bytes, checked above.
            buf: Some(vec![0u8; bytes as usize]),
            vb: usize::from(h.value_bytes),
            total: h.total,
            started: now,
            last_heard: now,
            delivered: false,
            reserved: bytes,
        };
        self.conns.insert(key, Conn { ep: Endpoint::receiver(&cfg, key.conn), side });
        true
    }

    fn fire_timers(&mut self, now: Instant, touched: &mut Vec<Key>) {
        let t = self.time(now);
        for (k, c) in self.conns.iter_mut() {
            if c.ep.poll_timeout().is_some_and(|at| at <= t) {
                c.ep.handle_timeout(t);
                touched.push(*k);
            }
        }
    }

    /// Transmit what the connection has to send, then handle its events.
    fn drain(&mut self, key: Key, now: Instant) {
        let t = self.time(now);
        let fault_active = self.cfg.fault.is_active();
        let Loop { conns, fault, out, scratch, stats, txq, .. } = self;
        let Some(c) = conns.get_mut(&key) else { return };
        while let Some(seg) = c.ep.poll_transmit(t) {
            let payload: &[u8] = match (&seg, &c.side) {
                (Segment::Mlt(h), Side::Tx { data, vb, .. }) if !h.is_ack() => {
                    let (a, b) = (h.start as usize * vb, h.end as usize * vb);
                    data.get(a..b).unwrap_or(&[])
                }
                _ => &[],
            };
            if !fault_active {
                let start = txq.buf.len();
                match datagram::emit_append(&seg, payload, &mut txq.buf) {
                    Ok(len) => txq.items.push((key.peer, 0, start, len)),
                    // The protocol produced what the wire refuses: a bug, counted, never a panic.
                    Err(_) => stats.num_malformed += 1,
                }
                continue;
            }
            if datagram::emit(&seg, payload, scratch).is_err() {
                stats.num_malformed += 1;
                continue;
            }
            fault.submit(now, Outgoing { dest: key.peer, dscp: 0, bytes: scratch.clone() }, out);
        }
        self.queue_out();
        let Some(c) = self.conns.get_mut(&key) else { return };
        let mut sender_done = false;
        while let Some(ev) = c.ep.poll_event() {
            match (ev, &mut c.side) {
                (Event::SenderDone { outcome, .. }, Side::Tx { done, started, .. }) => {
                    let report = SendReport { outcome, elapsed: now - *started, stats: c.ep.stats() };
                    let _ = done.send(Ok(report));
                    sender_done = true;
                }
                (Event::Delivered { .. }, Side::Rx { buf, vb, total, started, delivered, reserved, .. }) => {
                    let (received, missing) = match c.ep.as_mlt_receiver().and_then(|r| r.report()) {
                        Some(r) => (r.delivered, r.missing.clone()),
                        None => (0, Vec::new()),
                    };
                    *delivered = true;
                    // The message's memory now counts against the node until the application
                    // takes it (Node::recv), no longer against this receiver.
                    *reserved = 0;
                    let data = buf.take().unwrap_or_default();
                    let _ = self.delivered.send(Delivered {
                        peer: key.peer,
                        conn: key.conn,
                        value_bytes: *vb as u8,
                        data,
                        total_values: *total,
                        received_values: received,
                        missing,
                        elapsed: now - *started,
                    });
                }
                _ => {}
            }
        }
        if sender_done {
            // The sender sends nothing more: late ACKs are counted as unknown.
            self.conns.remove(&key);
        }
    }

    fn fault_active(&self) -> bool {
        self.cfg.fault.is_active()
    }

    fn release_held(&mut self, now: Instant) {
        if self.fault_active() {
            self.fault.release(now, &mut self.out);
            self.queue_out();
        }
    }

    /// Move what the fault injector let through into the send queue.
    fn queue_out(&mut self) {
        for d in self.out.drain(..) {
            let start = self.txq.buf.len();
            self.txq.buf.extend_from_slice(&d.bytes);
            self.txq.items.push((d.dest, d.dscp, start, d.bytes.len()));
        }
    }

    /// Hand the send queue to the socket in runs (one GSO `sendmsg` each where possible),
    /// waiting briefly for room when its buffer is full.
    fn flush(&mut self) {
        let TxQueue { buf, items } = &mut self.txq;
        let mut i = 0;
        while i < items.len() {
            let (dest, dscp, start, seg) = items[i];
            let max = self.sock.max_run(seg);
            // A run: consecutive datagrams to one destination with one DSCP, all `seg` bytes
            // but the last, which may be shorter (GSO's rule).
            let mut j = i + 1;
            let mut end = start + seg;
            while j < items.len() && j - i < max {
                let (d, c, st, len) = items[j];
                if d != dest || c != dscp || st != end || len > seg {
                    break;
                }
                end = st + len;
                j += 1;
                if len < seg {
                    break;
                }
            }
            let give_up = Instant::now() + SEND_BLOCK_WAIT;
            let sent = loop {
                match self.sock.send_run(dest, &buf[start..end], seg, dscp) {
                    Ok(true) => break true,
                    Ok(false) if Instant::now() < give_up => {
                        let _ = self.sock.wait(Duration::from_millis(1), true);
                    }
                    // A full buffer past the wait, or an error (e.g. an unreachable peer): the
                    // datagrams are lost; the protocol recovers them as losses.
                    _ => break false,
                }
            };
            let n = (j - i) as u64;
            if sent {
                self.stats.num_sent += n;
            } else {
                self.stats.num_send_dropped += n;
            }
            i = j;
        }
        buf.clear();
        items.clear();
    }

    /// Drop what is past its deadline, idle timeout or linger.
    fn reap(&mut self, now: Instant) {
        let (linger, idle) = (self.cfg.linger, self.cfg.receiver_idle_timeout);
        let mut freed = 0u64;
        let mut timed_out = 0u64;
        self.conns.retain(|_, c| match &c.side {
            Side::Tx { deadline, done, started, .. } => {
                if now >= *deadline {
                    let _ = done.send(Err(NodeError::DeadlineExceeded(now - *started)));
                    return false;
                }
                true
            }
            Side::Rx { last_heard, delivered, reserved, .. } => {
                let quiet = now.saturating_duration_since(*last_heard);
                let keep = if *delivered { quiet < linger } else { quiet < idle };
                if !keep {
                    freed += *reserved;
                    timed_out += u64::from(!*delivered);
                }
                keep
            }
        });
        if freed > 0 {
            self.shared.reserved.fetch_sub(freed, Ordering::Relaxed);
        }
        self.stats.num_receivers_timed_out += timed_out;
    }

    /// The earliest timer or held datagram.
    fn next_wakeup(&self) -> Option<Instant> {
        let timers = self.conns.values().filter_map(|c| c.ep.poll_timeout()).min().map(|t| self.instant(t));
        [timers, self.fault.next_release()].into_iter().flatten().min()
    }
}
