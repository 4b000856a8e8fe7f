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
//! if the limits allow); fire due timers; drain every connection touched (queue what it
//! transmits, re-arm, events); release datagrams the fault injector held; send the queue (GSO
//! runs, payloads straight from the senders' buffers); remove the senders that ended; reap
//! connections past their deadline or their linger; then `poll(2)` until a datagram arrives,
//! the application hands it a command (an eventfd wakes it), or the next timer, deadline or
//! idle timeout is due.
//!
//! Robustness (untrusted peers):
//! - a datagram that does not parse, or names no connection of this node, is dropped and
//!   counted ([`NodeStats`]); nothing a peer sends can panic the loop;
//! - peers open at most [`NodeConfig::max_connections`] receivers in all (one peer host at most
//!   [`NodeConfig::max_receivers_per_peer`]), each message at most
//!   [`NodeConfig::max_message_bytes`], all of them together at most
//!   [`NodeConfig::max_receive_memory_bytes`] (counted until the application takes the
//!   message), so a peer cannot make a receiver allocate without bound; and a message is
//!   charged in proportion to what arrived of it (at most sixteen times that; `rxbuf`), never
//!   for the size its first datagram claims, so datagrams that only claim huge messages cannot
//!   hold the memory real transfers need;
//! - a connection is keyed by the peer's address and its connection id, so one peer cannot
//!   complete or disturb another's message (an off-path attacker who spoofs source addresses is
//!   out of scope, as for plain UDP);
//! - a receiver may set a floor on a message's delivered fraction
//!   ([`NodeConfig::min_receive_fraction`]): the sender's p alone decides when a message is
//!   complete, so without one a sender with a tiny p hands the application a message of zeros;
//! - every transfer has a deadline, every receiver an idle timeout, so nothing wedges.

use std::collections::hash_map::Entry;
use std::io::IoSlice;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use proto::atp::{AtpConfig, GroupReport, GroupSpec};
use proto::mlt::MltConfig;
use proto::{Endpoint, Event, Outcome, Segment, Stats, TransportConfig};
use units::{Bps, Bytes, Time};
use wire::{AtpKind, Ecn, ATP_HEADER_LEN, MLT_HEADER_LEN};

use crate::datagram;
use crate::fault::{FaultConfig, FaultInjector, FaultStats, Outgoing};
use crate::hash::{fast_map, FastMap};
use crate::rxbuf::{Budget, RxBuffer};
use crate::socket::{Capabilities, Socket, Waker};

/// The longest the loop sleeps with nothing to do (the application's commands wake it at once;
/// this only bounds how late it notices its node was dropped if a wake were lost).
pub const MAX_IDLE_WAIT: Duration = Duration::from_millis(100);
/// The gap between copies of ATP's end-of-job notice.
const FIN_COPY_GAP: Duration = Duration::from_millis(1);
/// How long a send waits for room in a full socket buffer before the datagram is counted as
/// dropped (the transport recovers it like a loss).
const SEND_BLOCK_WAIT: Duration = Duration::from_millis(20);
const ATP_MIN_LOSS_TIMEOUT_MS: u64 = 5;

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
    /// Receivers one peer host (one IP address, any port) may hold at once, so that one host
    /// (a sender restarting in a loop, say, each time with new connection ids, whose receivers
    /// wait out their idle timeout) cannot take every receiver of the node. Default 1024.
    pub max_receivers_per_peer: usize,
    /// The largest message a peer may send. Default 1 GiB.
    pub max_message_bytes: u64,
    /// The receiver's floor on a message's delivered fraction (not in the paper, where the
    /// sender's p governs alone): a message whose sender asks for fewer than
    /// `ceil(min_receive_fraction · N)` of its `N` values (its data packets' `need`, or this
    /// node's own [`MltConfig::complete_fraction`] where they name none) is refused, counted in
    /// [`NodeStats::num_refused_below_floor`], so that a sender with a small p (by mistake or
    /// on purpose) cannot hand this node's application a message that is mostly zeros. In
    /// [0, 1]; 0 (default): no floor.
    pub min_receive_fraction: f64,
    /// Receive buffers of all messages in progress or not yet taken by the application,
    /// together. Default 2 GiB. A message is charged what arrived of it until a sixteenth of it
    /// did, then its whole size, so a size a peer only claims costs nothing.
    pub max_receive_memory_bytes: u64,
    /// A receiver that hears nothing for this long is dropped. Default 30 s.
    pub receiver_idle_timeout: Duration,
    /// How long a receiver keeps acknowledging after it handed its message up (its last ACKs
    /// may be lost; the sender needs one). Default 200 ms after the last packet heard.
    pub linger: Duration,
    /// Faults injected into what this node sends (off by default).
    pub fault: FaultConfig,
    /// ATP's knobs (`mss` is set from `max_datagram_bytes`, `rate` from `line_rate_gbps`).
    pub atp: AtpConfig,
    /// The line rate ATP sends at most (its R_max), in Gbit/s. Default 10.
    pub line_rate_gbps: f64,
    /// An ATP job receiver that hears nothing for this long ends the job without the sender's
    /// end-of-job notice (its lost messages then unknown). Default 2 s.
    pub job_idle_end: Duration,
    /// Extra copies of ATP's end-of-job notice, 1 ms apart (the protocol sends it once; a
    /// receiver takes the first). Default 2.
    pub fin_copies: u8,
    /// The receiving host's socket queue is a queue like a switch port's, and on a fast path
    /// (loopback, a 100G NIC) it is the bottleneck: when more than this many bytes wait in it
    /// (as the kernel counts them), what the node reads is marked congestion-experienced, as
    /// DCTCP's switch marks above K, so that senders slow down before the queue overflows and
    /// drops. 0: off. Default 1 MiB (of an 8 MiB buffer).
    pub receive_mark_bytes: u64,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            max_datagram_bytes: 1452,
            mlt: MltConfig::default(),
            max_connections: 4096,
            max_receivers_per_peer: 1024,
            max_message_bytes: 1 << 30,
            min_receive_fraction: 0.0,
            max_receive_memory_bytes: 2 << 30,
            receiver_idle_timeout: Duration::from_secs(30),
            linger: Duration::from_millis(200),
            fault: FaultConfig::default(),
            // A late poll may catch up 64 full packets, one GSO run (ATP paces packet by packet
            // otherwise): 16 cost a sendmsg and a wakeup per 16 packets, 1.6-2.4 CPU s per GB on
            // loopback against 1.25-1.45 with 64 (`make bench-udp`).
            // The first epoch and loss timeout last 1 ms until an RTT is measured (the
            // simulator's 20 us default is a datacenter fabric's RTT, not a host loop's).
            atp: AtpConfig {
                pacing_burst_bytes: 64 * 1500,
                init_rtt: units::Dur::from_ms(1),
                min_loss_timeout: units::Dur::from_ms(ATP_MIN_LOSS_TIMEOUT_MS),
                ..AtpConfig::default()
            },
            line_rate_gbps: 10.0,
            job_idle_end: Duration::from_secs(2),
            fin_copies: 2,
            receive_mark_bytes: 1 << 20,
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
    /// The transfer did not end by its deadline (the receiver may have part of it); `heard`:
    /// whether the peer acknowledged anything (if not, nothing answered at its address).
    #[error("deadline exceeded after {after:?}: {}", if *heard {
        "the peer acknowledged part of the transfer (a lossy or slow path: a longer deadline may do)"
    } else {
        "the peer acknowledged nothing: is a receiver bound at that address, reachable, and with a \
         max_message_bytes and max_receive_memory_bytes that admit the message, a \
         min_receive_fraction at most the send's p, and room for another receiver of this \
         host's (max_connections, max_receivers_per_peer)?"
    })]
    DeadlineExceeded {
        /// How long the transfer ran.
        after: Duration,
        /// Whether the peer acknowledged any packet.
        heard: bool,
    },
    /// The node shut down before the transfer ended.
    #[error("the node is closed")]
    Closed,
    /// The transfer was cancelled ([`Handle::cancel`]).
    #[error("the transfer was cancelled")]
    Cancelled,
    /// The node's loop died (a bug: nothing a peer sends should do this), with its message.
    #[error("the node's loop failed: {0}")]
    LoopFailed(String),
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
    /// The sender's tag ([`Node::send_values_tagged`]; 0 from [`Node::send_values`]).
    pub tag: u32,
}

/// How an ATP job ended at the sender.
#[derive(Clone, Debug, PartialEq)]
pub struct JobReport {
    /// `Complete` (every message delivered), `Enough` (every group its MSR) or `GivenUp`.
    pub outcome: Outcome,
    /// Per group: messages, required (`ceil(MSR x N)`), delivered, lost.
    pub groups: Vec<GroupReport>,
    /// From the send call to the end.
    pub elapsed: Duration,
    /// The sender's counters.
    pub stats: Stats,
}

/// What an ATP job receiver hands up (NetApprox §3.3, ApproxLib's interface): each message as
/// it arrives whole, then the end of the job with the messages that did not.
#[derive(Clone, Debug, PartialEq)]
pub enum JobEvent {
    /// A message arrived whole.
    Message {
        /// The sender.
        peer: SocketAddr,
        /// The job (connection) id.
        conn: u32,
        /// The message id (in the order the sender handed messages over, from 0).
        msg: u32,
        /// Its group.
        group: u16,
        /// Its bytes.
        data: Vec<u8>,
    },
    /// The job is over.
    End {
        /// The sender.
        peer: SocketAddr,
        /// The job id.
        conn: u32,
        /// Messages in the job, if the sender's end-of-job notice arrived.
        total: Option<u64>,
        /// The messages that did not arrive whole (`None`: the notice never arrived, the
        /// receiver ended the job after [`NodeConfig::job_idle_end`] of silence).
        lost: Option<Vec<u32>>,
    },
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
    /// Data packets refused: beyond the limits (connections, message size), or kept by no
    /// receiver because the receive memory was full (their senders resend them).
    pub num_refused: u64,
    /// Datagrams dropped because the socket buffer stayed full.
    pub num_send_dropped: u64,
    /// Data packets refused because their message's sender asks for less than
    /// [`NodeConfig::min_receive_fraction`] (counted in `num_refused` too).
    pub num_refused_below_floor: u64,
    /// Receivers dropped after their idle timeout without delivering.
    pub num_receivers_timed_out: u64,
    /// Socket calls that failed (the loop goes on).
    pub num_socket_errors: u64,
    /// The kernel refused a GSO send (1: it happened, and datagrams go one by one since; the
    /// one report of a missing kernel feature found after bind).
    pub num_gso_fallbacks: u64,
    /// Received datagrams marked congestion-experienced because the socket's receive queue
    /// held more than [`NodeConfig::receive_mark_bytes`].
    pub num_marked: u64,
    /// What the fault injector did.
    pub fault: FaultStats,
    /// Receive memory in use now, at most [`NodeConfig::max_receive_memory_bytes`]: what
    /// arrived for messages in progress (a message's whole size once a sixteenth of it arrived)
    /// and the messages not yet taken.
    pub receive_memory_bytes: u64,
}

/// A transfer in progress (a send or an ATP job): wait for its end, a `T`. Its result is handed
/// out once; later waits report [`NodeError::Closed`].
pub struct Handle<T> {
    // A Mutex so that a handle can be shared between threads (and held by Python objects).
    rx: Mutex<mpsc::Receiver<Result<T, NodeError>>>,
    canceller: Canceller,
}

/// What cancels a transfer ([`Handle::canceller`]): usable from any thread, also while
/// another waits on the handle.
#[derive(Clone)]
pub struct Canceller {
    /// Set by [`Canceller::cancel`]; the loop reads it every turn.
    flag: Arc<AtomicBool>,
    /// The node's, to wake its loop.
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Canceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Canceller").field("cancelled", &self.flag.load(Ordering::Relaxed)).finish()
    }
}

impl Canceller {
    /// As [`Handle::cancel`].
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
        self.shared.waker.wake();
    }
}

/// A bounded-loss send in progress.
pub type SendHandle = Handle<SendReport>;
/// An ATP job in progress.
pub type JobHandle = Handle<JobReport>;

impl<T> std::fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle").field("canceller", &self.canceller).finish()
    }
}

impl<T> Handle<T> {
    fn new(rx: mpsc::Receiver<Result<T, NodeError>>, flag: Arc<AtomicBool>, shared: Arc<Shared>) -> Handle<T> {
        Handle { rx: Mutex::new(rx), canceller: Canceller { flag, shared } }
    }

    /// Stop the transfer: the node sends nothing more for it and its wait ends with
    /// [`NodeError::Cancelled`] within a turn of the loop (unless it had ended already: then
    /// its result stands). What the receiver holds stays there.
    pub fn cancel(&self) {
        self.canceller.cancel();
    }

    /// A canceller of this transfer, to keep where the handle itself is not at hand.
    pub fn canceller(&self) -> Canceller {
        self.canceller.clone()
    }

    /// Block until the transfer ends (or `timeout` passes: `None`).
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<T, NodeError>> {
        let rx = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        match rx.recv_timeout(timeout) {
            Ok(r) => Some(r),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => Some(Err(NodeError::Closed)),
        }
    }

    /// Block until the transfer ends (its deadline bounds the wait).
    pub fn wait(&self) -> Result<T, NodeError> {
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
        tag: u32,
        done: mpsc::Sender<Result<SendReport, NodeError>>,
        cancel: Arc<AtomicBool>,
    },
    SendJob {
        peer: SocketAddr,
        groups: Vec<GroupSpec>,
        messages: Vec<(u16, Vec<u8>)>,
        deadline: Duration,
        done: mpsc::Sender<Result<JobReport, NodeError>>,
        cancel: Arc<AtomicBool>,
    },
}

struct Shared {
    stop: AtomicBool,
    /// Wakes the loop when a command is queued or the node is dropped.
    waker: Waker,
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
    delivered: Mutex<mpsc::Receiver<(Option<RxBuffer>, Delivered)>>,
    jobs: Mutex<mpsc::Receiver<JobEvent>>,
    shared: Arc<Shared>,
    /// The loop's thread until the node is stopped (a Mutex: [`Node::shutdown`] takes `&self`,
    /// so that a node shared between threads, as Python's is, can be closed while another
    /// thread waits in [`Node::recv`]).
    thread: Mutex<Option<JoinHandle<()>>>,
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
            return Err(invalid(name, format!("{v:?}"), "a fault probability, in [0, 1], e.g. 0.01"));
        }
        if cfg.max_receivers_per_peer == 0 {
            return Err(invalid(
                "max_receivers_per_peer",
                0,
                "must be at least 1 (receivers one peer host may hold at once; default 1024)",
            ));
        }
        if cfg.max_message_bytes == 0 {
            return Err(invalid("max_message_bytes", 0, "must be at least 1 (the largest message a peer may send; default 1 GiB)"));
        }
        if !(0.0..=1.0).contains(&cfg.min_receive_fraction) {
            return Err(invalid(
                "min_receive_fraction",
                format!("{:?}", cfg.min_receive_fraction),
                "the least fraction of a message's values a sender may ask for, in [0, 1] (0: no floor), e.g. 0.9",
            ));
        }
        if cfg.max_receive_memory_bytes == 0 {
            return Err(invalid(
                "max_receive_memory_bytes",
                0,
                "must be at least 1 (receive buffers of all messages not yet taken; default 2 GiB)",
            ));
        }
        // Below 1 Mbit/s (the simulator's slowest rate) a rate rounds towards 0 bit/s, at which
        // ATP's pacer would send one packet and then nothing until the deadline.
        if !(cfg.line_rate_gbps >= 0.001 && cfg.line_rate_gbps <= 10_000.0) {
            return Err(invalid(
                "line_rate_gbps",
                format!("{:?}", cfg.line_rate_gbps),
                "must be between 0.001 (1 Mbit/s) and 10000 (10 Tbit/s), e.g. 10",
            ));
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
        let (job_tx, job_rx) = mpsc::channel();
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            waker: Waker::new()?,
            reserved: AtomicU64::new(0),
            stats: Mutex::default(),
        });
        let mut mlt = cfg.mlt.clone();
        mlt.mss = (cfg.max_datagram_bytes - MLT_HEADER_LEN) as u32;
        let mut atp = cfg.atp.clone();
        atp.mss = (cfg.max_datagram_bytes - ATP_HEADER_LEN) as u32;
        // The pacer counts IP and UDP headers too (IPv4 20 + UDP 8).
        atp.header_bytes = (ATP_HEADER_LEN + 28) as u32;
        atp.rate = Some(Bps::from_gbps_f64(cfg.line_rate_gbps));
        let lp = Loop {
            fault: FaultInjector::new(cfg.fault.clone()),
            cfg,
            mlt,
            atp,
            sock,
            epoch: Instant::now(),
            conns: fast_map(),
            receivers_by_ip: fast_map(),
            cmds: cmd_rx,
            delivered: del_tx,
            jobs: job_tx,
            fin_copies: Vec::new(),
            shared: Arc::clone(&shared),
            stats: NodeStats::default(),
            out: Vec::new(),
            scratch: Vec::new(),
            txq: TxQueue::default(),
            ended: Vec::new(),
            next_conn: conn_id_start(),
        };
        let thread = std::thread::Builder::new().name(format!("slacknet-udp {local}")).spawn(move || lp.run())?;
        Ok(Node {
            local,
            caps,
            cmds: cmd_tx,
            delivered: Mutex::new(del_rx),
            jobs: Mutex::new(job_rx),
            shared,
            thread: Mutex::new(Some(thread)),
        })
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
        self.send_values_tagged(peer, data, value_bytes, p, deadline, 0)
    }

    /// [`Node::send_values`] with the application's `tag` for the message (a round number,
    /// say): every data packet carries it, and the receiver's [`Delivered::tag`] is it.
    pub fn send_values_tagged(
        &self,
        peer: SocketAddr,
        data: Vec<u8>,
        value_bytes: u8,
        p: f64,
        deadline: Duration,
        tag: u32,
    ) -> Result<SendHandle, NodeError> {
        self.check_peer(peer)?;
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
            return Err(invalid("p", format!("{p:?}"), "the fraction of values that must arrive, in (0, 1], e.g. 0.9"));
        }
        if deadline.is_zero() {
            return Err(invalid("deadline", format!("{deadline:?}"), "must be positive, e.g. 10 s"));
        }
        let (done, rx) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        self.cmds
            .send(Cmd::SendValues { peer, data, value_bytes, p, deadline, tag, done, cancel: Arc::clone(&cancel) })
            .map_err(|_| NodeError::Closed)?;
        self.shared.waker.wake();
        Ok(Handle::new(rx, cancel, Arc::clone(&self.shared)))
    }

    /// Send an ATP job to `peer` (NetApprox §3.3): `messages` as `(group, bytes)`, where group
    /// `g` must deliver at least the fraction `msrs[g]` of its messages (MSR = 1: every one,
    /// reliably) and may lose the rest; the sender sends as fast as the groups' remaining
    /// slack allows (§4). Ends when every group has what it needs, or at `deadline`.
    pub fn send_job(
        &self,
        peer: SocketAddr,
        msrs: &[f64],
        messages: Vec<(u16, Vec<u8>)>,
        deadline: Duration,
    ) -> Result<JobHandle, NodeError> {
        self.check_peer(peer)?;
        if msrs.is_empty() || msrs.len() > proto::atp::MAX_GROUPS {
            return Err(invalid("msrs", format!("[{} groups]", msrs.len()), format!("give 1 to {} groups", proto::atp::MAX_GROUPS)));
        }
        if let Some(m) = msrs.iter().find(|m| !(0.0..=1.0).contains(*m)) {
            return Err(invalid("msrs", format!("{m:?}"), "every MSR is a fraction of its group's messages, in [0, 1]"));
        }
        if messages.is_empty() || messages.len() as u64 >= proto::atp::MAX_JOB_MESSAGES {
            return Err(invalid(
                "messages",
                format!("[{} messages]", messages.len()),
                format!("give 1 to {} messages", proto::atp::MAX_JOB_MESSAGES - 1),
            ));
        }
        let mut counts = vec![0u64; msrs.len()];
        for (i, (g, data)) in messages.iter().enumerate() {
            let Some(c) = counts.get_mut(usize::from(*g)) else {
                return Err(invalid("messages", format!("[{i}] group {g}"), format!("no such group: the job has {}", msrs.len())));
            };
            *c += 1;
            if data.is_empty() || data.len() as u64 > self.shared_max_message() {
                return Err(invalid(
                    "messages",
                    format!("[{i}] {} bytes", data.len()),
                    format!("a message has 1 to {} bytes", self.shared_max_message()),
                ));
            }
        }
        // A job whose groups need none of their messages would be over before it began (the
        // ATP sender ends as soon as every group has its MSR), and refuse the messages.
        if !msrs.iter().zip(&counts).any(|(&m, &n)| proto::atp::required_messages(m, n) > 0) {
            return Err(invalid(
                "msrs",
                format!("{msrs:?}"),
                "no group needs any of its messages (ceil(MSR x messages) = 0 for each), so the job \
                 would end before it sent one; give a group with messages an MSR above 0",
            ));
        }
        if deadline.is_zero() {
            return Err(invalid("deadline", format!("{deadline:?}"), "must be positive, e.g. 10 s"));
        }
        let groups = msrs.iter().zip(&counts).map(|(&msr, &n)| GroupSpec { messages: n, msr }).collect();
        let (done, rx) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        self.cmds
            .send(Cmd::SendJob { peer, groups, messages, deadline, done, cancel: Arc::clone(&cancel) })
            .map_err(|_| NodeError::Closed)?;
        self.shared.waker.wake();
        Ok(Handle::new(rx, cancel, Arc::clone(&self.shared)))
    }

    /// Refuse a peer no transfer from this node can reach: port 0, a multicast or broadcast
    /// address, or the other IP family than the socket's (the kernel refuses every send); each
    /// would only time out.
    fn check_peer(&self, peer: SocketAddr) -> Result<(), NodeError> {
        if peer.port() == 0 {
            return Err(invalid("peer", format!("{:?}", peer.to_string()), "port 0 names no socket; give the receiver's port"));
        }
        let is_broadcast = matches!(peer.ip(), std::net::IpAddr::V4(ip) if ip.is_broadcast());
        if peer.ip().is_multicast() || is_broadcast {
            // The receiver would answer from its own unicast address, which names no connection
            // of this node: the transfer could only time out.
            return Err(invalid(
                "peer",
                format!("{:?}", peer.to_string()),
                "a multicast or broadcast address; the transport is unicast: give the receiver's own address",
            ));
        }
        if peer.is_ipv4() != self.local.is_ipv4() {
            let (theirs, ours, example) =
                if peer.is_ipv4() { ("IPv4", "IPv6", "\"0.0.0.0:0\"") } else { ("IPv6", "IPv4", "\"[::]:0\"") };
            return Err(invalid(
                "peer",
                format!("{:?}", peer.to_string()),
                format!(
                    "an {theirs} address, but this endpoint is bound to {ours} ({}); bind the sending endpoint to an {theirs} address, e.g. {example}",
                    self.local
                ),
            ));
        }
        Ok(())
    }

    fn shared_max_message(&self) -> u64 {
        u64::from(proto::atp::MAX_MESSAGE_PKTS) * 1024
    }

    /// The next event of an ATP job a peer sends (a message, or a job's end), waiting at most
    /// `timeout`.
    pub fn recv_job(&self, timeout: Duration) -> Option<JobEvent> {
        let rx = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        let e = rx.recv_timeout(timeout).ok()?;
        if let JobEvent::Message { data, .. } = &e {
            self.shared.reserved.fetch_sub(data.len() as u64, Ordering::Relaxed);
        }
        Some(e)
    }

    /// The next message a peer sent, waiting at most `timeout`.
    pub fn recv(&self, timeout: Duration) -> Option<Delivered> {
        let rx = self.delivered.lock().unwrap_or_else(|e| e.into_inner());
        let (buf, mut d) = rx.recv_timeout(timeout).ok()?;
        if let Some(buf) = buf {
            self.shared.reserved.fetch_sub(buf.charged(), Ordering::Relaxed);
            d.data = buf.into_bytes();
        }
        Some(d)
    }

    /// Counters (published by the loop every turn).
    pub fn stats(&self) -> NodeStats {
        let mut s = *self.shared.stats.lock().unwrap_or_else(|e| e.into_inner());
        s.receive_memory_bytes = self.shared.reserved.load(Ordering::Relaxed);
        s
    }
}

impl Node {
    /// Stop the node (transfers still running end with [`NodeError::Closed`]) and return its
    /// final counters, or [`NodeError::LoopFailed`] if its loop had died (dropping a node
    /// stops it the same way, silently).
    pub fn close(self) -> Result<NodeStats, NodeError> {
        self.shutdown()
    }

    /// As [`Node::close`], through a shared reference: the loop stops, transfers still running
    /// end with [`NodeError::Closed`], [`Node::recv`] and [`Node::recv_job`] return `None` at
    /// once (see [`Node::is_closed`]) and new transfers are refused with `Closed`. Later calls
    /// return the final counters again.
    pub fn shutdown(&self) -> Result<NodeStats, NodeError> {
        if let Err(p) = self.stop() {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            return Err(NodeError::LoopFailed(msg));
        }
        Ok(self.stats())
    }

    /// Whether the node was stopped ([`Node::shutdown`], [`Node::close`]).
    pub fn is_closed(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    /// Stop the loop and wait for its thread (once; later calls return `Ok`).
    fn stop(&self) -> std::thread::Result<()> {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.waker.wake();
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        thread.map_or(Ok(()), JoinHandle::join)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// `now + d`, or a time some centuries away where that cannot be represented (a deadline of
/// `Duration::MAX` means none).
fn far_instant(now: Instant, d: Duration) -> Instant {
    now.checked_add(d).or_else(|| now.checked_add(Duration::from_secs(1 << 34))).unwrap_or(now)
}

/// Note that a datagram touched `key`. PERF: a receive batch is mostly one connection's
/// datagrams in a row (an ATP sender gets one ACK per data packet, thousands per turn): pushing
/// a key only when it differs from the last keeps `touched` a few entries long, where it was
/// one per datagram, sorted and deduplicated every turn.
fn touch(touched: &mut Vec<Key>, key: Key) {
    if touched.last() != Some(&key) {
        touched.push(key);
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
        /// Set when the application cancels ([`Handle::cancel`]).
        cancel: Arc<AtomicBool>,
    },
    Rx {
        /// The message's bytes, until handed up (charged to the node as they arrive).
        buf: Option<RxBuffer>,
        vb: usize,
        total: u32,
        started: Instant,
        last_heard: Instant,
        delivered: bool,
    },
    /// An ATP job's sender: its messages by id.
    JobTx {
        msgs: Vec<Vec<u8>>,
        mss: usize,
        done: mpsc::Sender<Result<JobReport, NodeError>>,
        deadline: Instant,
        started: Instant,
        cancel: Arc<AtomicBool>,
    },
    /// An ATP job's receiver: the messages not yet whole, by id.
    JobRx {
        partial: FastMap<u32, RxMessage>,
        mss: usize,
        last_heard: Instant,
        ended: bool,
    },
}

impl Side {
    /// Bytes `start..end` of a sender's data (a bounded-loss send's, `msg` ignored) or of its
    /// message `msg` (an ATP job's); `None` for a receiver or a range it does not have.
    fn payload(&self, msg: u32, start: usize, end: usize) -> Option<&[u8]> {
        match self {
            Side::Tx { data, .. } => data.get(start..end),
            Side::JobTx { msgs, .. } => msgs.get(msg as usize)?.get(start..end),
            _ => None,
        }
    }

    /// When the connection ends unless heard from: a sender at its deadline, a receiver after
    /// its idle timeout (or, once it delivered, its linger), a job receiver after
    /// `job_idle` (or, once ended, its linger); `None` if that is too far off to represent.
    fn ends_at(&self, linger: Duration, idle: Duration, job_idle: Duration) -> Option<Instant> {
        match self {
            Side::Tx { deadline, .. } | Side::JobTx { deadline, .. } => Some(*deadline),
            Side::Rx { last_heard, delivered, .. } => last_heard.checked_add(if *delivered { linger } else { idle }),
            Side::JobRx { last_heard, ended, .. } => last_heard.checked_add(if *ended { linger } else { job_idle }),
        }
    }
}

/// A message of an ATP job being assembled.
struct RxMessage {
    group: u16,
    buf: RxBuffer,
    /// Length of its last packet, once it arrived.
    last_len: Option<usize>,
}

struct Conn {
    ep: Endpoint,
    side: Side,
    /// Whether the peer sent this connection anything (a sender: an acknowledgement), so that
    /// a sender at its deadline can say whether anyone answered at all.
    heard: bool,
    /// A receiver's local address, the one its peer sent to, when the node is bound to the
    /// unspecified address: its replies go out from it (the kernel would pick the route's
    /// source, an address the peer may not know, and the peer would count every ACK as
    /// unknown). `None`: the kernel's choice (a sender; a node bound to one address).
    local: Option<IpAddr>,
}

struct Loop {
    cfg: NodeConfig,
    mlt: MltConfig,
    atp: AtpConfig,
    sock: Socket,
    epoch: Instant,
    fault: FaultInjector,
    conns: FastMap<Key, Conn>,
    /// Receivers (bounded-loss and ATP) held per peer host (`max_receivers_per_peer`).
    receivers_by_ip: FastMap<IpAddr, usize>,
    cmds: mpsc::Receiver<Cmd>,
    delivered: mpsc::Sender<(Option<RxBuffer>, Delivered)>,
    jobs: mpsc::Sender<JobEvent>,
    /// Extra copies of ATP end-of-job notices still to send: (when, to, bytes, copies left).
    fin_copies: Vec<(Instant, SocketAddr, u8, Vec<u8>, u8)>,
    shared: Arc<Shared>,
    stats: NodeStats,
    /// Datagrams through the fault injector (when it is on).
    out: Vec<Outgoing>,
    scratch: Vec<u8>,
    /// Datagrams waiting for the socket, back to back, sent in GSO runs at the end of a turn.
    txq: TxQueue,
    /// Senders done this turn, removed after the flush (TxItem: their payloads until then).
    ended: Vec<Key>,
    next_conn: u32,
}

/// Datagrams to send at the end of the turn: headers (and datagrams made whole, e.g. through
/// the fault injector) back to back in one buffer, payloads where the application left them,
/// so that a run of equal-sized datagrams to one destination is one GSO `sendmsg` of slices.
#[derive(Debug, Default)]
struct TxQueue {
    buf: Vec<u8>,
    /// One per datagram, in order.
    items: Vec<TxItem>,
}

/// A datagram to send: `head` bytes at `start` in `TxQueue::buf`, then its payload, if any,
/// from its connection's data; `len` bytes in all.
#[derive(Clone, Copy, Debug)]
struct TxItem {
    dest: SocketAddr,
    src: Option<IpAddr>,
    dscp: u8,
    start: usize,
    head: usize,
    len: usize,
    payload: Option<PayloadAt>,
}

impl TxItem {
    /// A datagram whole in the buffer.
    fn in_buf(dest: SocketAddr, src: Option<IpAddr>, dscp: u8, start: usize, len: usize) -> TxItem {
        TxItem { dest, src, dscp, start, head: len, len, payload: None }
    }
}

/// Where a payload is: bytes `start..end` of message `msg` (an ATP job's) or of the data (a
/// bounded-loss send's) of connection `key` ([`Side::payload`]).
#[derive(Clone, Copy, Debug)]
struct PayloadAt {
    key: Key,
    msg: u32,
    start: usize,
    end: usize,
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
        // A paced sender waits microseconds: ask the kernel for 1 us timer slack on this
        // thread (the default, 50 us, would make every wait that much late).
        #[cfg(target_os = "linux")]
        // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no memory.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong);
        }
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
            touched.sort_unstable();
            touched.dedup();
            for k in &touched {
                self.drain(*k, now);
            }
            self.release_held(now);
            self.send_fin_copies(now);
            self.flush();
            for k in self.ended.drain(..) {
                self.conns.remove(&k);
            }
            // Published before `reap` tells the waiters of cancelled or timed-out transfers, so
            // that a waiter reading the counters then sees what this turn sent before it (read
            // a turn late, a cancelled send looked as if it had sent two datagrams after its
            // cancellation: a flaky test), and again after it for what reaping counted.
            self.publish();
            self.reap(now);
            self.publish();
            let wait = self.next_wakeup().map_or(MAX_IDLE_WAIT, |at| at.saturating_duration_since(Instant::now()));
            let _ = self.sock.wait(wait.min(MAX_IDLE_WAIT), false, Some(&self.shared.waker));
        }
        // Closing: every transfer still running learns it.
        for (_, c) in self.conns.drain() {
            match c.side {
                Side::Tx { done, .. } => {
                    let _ = done.send(Err(NodeError::Closed));
                }
                Side::JobTx { done, .. } => {
                    let _ = done.send(Err(NodeError::Closed));
                }
                _ => {}
            }
        }
    }

    fn publish(&mut self) {
        self.stats.fault = self.fault.stats();
        self.stats.num_gso_fallbacks = self.sock.gso_fallbacks();
        if let Ok(mut s) = self.shared.stats.lock() {
            *s = self.stats;
        }
    }

    /// The refusal of a new transfer when the node has `max_connections` already.
    fn full(&self) -> Option<NodeError> {
        (self.conns.len() >= self.cfg.max_connections).then(|| {
            invalid(
                "max_connections",
                self.cfg.max_connections,
                "this node has that many transfers running: wait for some to end, or raise it",
            )
        })
    }

    fn take_commands(&mut self, now: Instant, touched: &mut Vec<Key>) {
        while let Ok(cmd) = self.cmds.try_recv() {
            match cmd {
                Cmd::SendValues { peer, data, value_bytes, p, deadline, tag, done, cancel } => {
                    if let Some(e) = self.full() {
                        let _ = done.send(Err(e));
                        continue;
                    }
                    let conn = self.next_conn;
                    self.next_conn = self.next_conn.wrapping_add(1);
                    let cfg = TransportConfig::Mlt(MltConfig {
                        value_bytes,
                        complete_fraction: p,
                        tag,
                        ..self.mlt.clone()
                    });
                    let ep = Endpoint::sender(&cfg, conn, Bytes(data.len() as u64), self.time(now));
                    let key = Key { peer, conn, is_sender: true };
                    let side = Side::Tx {
                        data,
                        vb: usize::from(value_bytes),
                        done,
                        deadline: far_instant(now, deadline),
                        started: now,
                        cancel,
                    };
                    self.conns.insert(key, Conn { ep, side, heard: false, local: None });
                    touched.push(key);
                }
                Cmd::SendJob { peer, groups, messages, deadline, done, cancel } => {
                    if let Some(e) = self.full() {
                        let _ = done.send(Err(e));
                        continue;
                    }
                    let conn = self.next_conn;
                    self.next_conn = self.next_conn.wrapping_add(1);
                    let cfg = TransportConfig::Atp(self.atp.clone());
                    let mut ep = match Endpoint::job_sender(&cfg, conn, &groups, self.time(now)) {
                        Ok(ep) => ep,
                        Err(e) => {
                            let _ = done.send(Err(invalid("groups", format!("{groups:?}"), e.to_string())));
                            continue;
                        }
                    };
                    ep.set_line_rate(Bps::from_gbps_f64(self.cfg.line_rate_gbps));
                    let mut msgs = Vec::with_capacity(messages.len());
                    let mut refused = None;
                    for (g, data) in messages {
                        if let Err(e) = ep.send_message(g, data.len() as u64) {
                            refused = Some(e);
                            break;
                        }
                        msgs.push(data);
                    }
                    if let Some(e) = refused {
                        let _ = done.send(Err(invalid("messages", msgs.len(), e.to_string())));
                        continue;
                    }
                    ep.close();
                    let key = Key { peer, conn, is_sender: true };
                    let side = Side::JobTx {
                        msgs,
                        mss: self.atp.mss as usize,
                        done,
                        deadline: far_instant(now, deadline),
                        started: now,
                        cancel,
                    };
                    self.conns.insert(key, Conn { ep, side, heard: false, local: None });
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
            // What still waits behind this batch: above the threshold, the batch is marked.
            let mark = self.cfg.receive_mark_bytes > 0
                && self.sock.backlog_bytes().is_some_and(|b| b > self.cfg.receive_mark_bytes);
            self.stats.num_marked += if mark { received.len() as u64 } else { 0 };
            for r in &received {
                self.stats.num_received += 1;
                let Ok((mut seg, payload)) = datagram::parse(self.sock.datagram(r)) else {
                    self.stats.num_malformed += 1;
                    continue;
                };
                // The payload follows the header; it is read again below, once the receiver
                // (which may have to be opened) is known.
                let payload_len = payload.len();
                // The node's own receive queue above its threshold marks the datagram CE
                // whatever the IP header said (the senders are ours and all react to ECE;
                // and this kernel reports no ECN codepoint for GRO-coalesced batches).
                let ecn = if mark { Some(Ecn::Ce) } else { r.ecn.and_then(|e| Ecn::from_u8(e).ok()) };
                if let Segment::Atp(mut a) = seg {
                    if let Some(ecn) = ecn {
                        a.ecn = ecn;
                    }
                    self.receive_atp(r, a, payload_len, now, touched);
                    continue;
                }
                let Segment::Mlt(ref mut h) = seg else {
                    self.stats.num_unknown += 1;
                    continue;
                };
                // The network's ECN marks are in the IP header, not in ours.
                if let Some(ecn) = ecn {
                    h.ecn = ecn;
                }
                let h = *h;
                let key = Key { peer: r.peer, conn: h.conn, is_sender: h.is_ack() };
                if !self.conns.contains_key(&key) && (h.is_ack() || !self.open_receiver(key, &h, r.dst, now)) {
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
                        let budget = Budget { reserved: &self.shared.reserved, limit: self.cfg.max_receive_memory_bytes };
                        if !buf.write(at, payload, &budget) {
                            // Not kept, so not counted (nor acknowledged): the sender resends
                            // it, or abandons it within its bound.
                            self.stats.num_refused += 1;
                            continue;
                        }
                    }
                }
                c.heard = true;
                c.ep.handle_segment(t, &Segment::Mlt(h));
                touch(touched, key);
            }
        }
        Ok(())
    }

    /// An ATP packet: an ACK to its job's sender; data or an end-of-job notice to the job's
    /// receiver (data from an unknown job opens one if the limits allow), with the payload
    /// copied into its message only where the receiver will count the packet.
    fn receive_atp(&mut self, r: &crate::socket::Received, a: wire::AtpRepr, payload_len: usize, now: Instant, touched: &mut Vec<Key>) {
        let t = self.time(now);
        let is_ack = a.kind == AtpKind::Ack;
        let key = Key { peer: r.peer, conn: a.conn, is_sender: is_ack };
        let (max_msg, budget) = (self.cfg.max_message_bytes, self.cfg.max_receive_memory_bytes);
        let full = self.conns.len() >= self.cfg.max_connections || self.peer_full(r.peer.ip());
        // One lookup per datagram (this runs once per ACK at a job's sender).
        let c = match self.conns.entry(key) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                if a.kind != AtpKind::Data || full {
                    self.stats.num_unknown += 1;
                    return;
                }
                *self.receivers_by_ip.entry(r.peer.ip()).or_insert(0) += 1;
                let cfg = TransportConfig::Atp(self.atp.clone());
                let side = Side::JobRx { partial: fast_map(), mss: self.atp.mss as usize, last_heard: now, ended: false };
                v.insert(Conn { ep: Endpoint::receiver(&cfg, a.conn), side, heard: false, local: r.dst })
            }
        };
        if let Side::JobRx { partial, mss, last_heard, ended } = &mut c.side {
            *last_heard = now;
            if a.kind == AtpKind::Data && !*ended {
                let Some(rx) = c.ep.as_atp_receiver() else { return };
                if !rx.has_message(a.msg) {
                    // Only packets the receiver will count, that fit the message's packet
                    // layout (every packet but the last is `mss` bytes), within the limits.
                    let last = a.pkt + 1 == a.pkts;
                    let fits = a.pkts > 0
                        && a.pkt < a.pkts
                        && a.pkts <= proto::atp::MAX_MESSAGE_PKTS
                        && u64::from(a.msg) < proto::atp::MAX_JOB_MESSAGES
                        && (if last { payload_len <= *mss } else { payload_len == *mss });
                    let bytes = u64::from(a.pkts) * *mss as u64;
                    if !fits || bytes > max_msg {
                        self.stats.num_refused += 1;
                        return;
                    }
                    let at = a.pkt as usize * *mss;
                    let src = &self.sock.datagram(r)[ATP_HEADER_LEN..ATP_HEADER_LEN + payload_len];
                    let budget = Budget { reserved: &self.shared.reserved, limit: budget };
                    // Kept only if the budget takes it; otherwise the packet is not counted
                    // (nor acknowledged) and its sender resends it.
                    let kept = match partial.get_mut(&a.msg) {
                        Some(m) => m.buf.len() != bytes as usize || m.buf.write(at, src, &budget),
                        None => {
                            // CORRECTNESS: bytes <= max_message_bytes, checked above.
                            let mut buf = RxBuffer::new(bytes as usize);
                            let kept = buf.write(at, src, &budget);
                            if kept {
                                partial.insert(a.msg, RxMessage { group: a.group, buf, last_len: None });
                            }
                            kept
                        }
                    };
                    if !kept {
                        self.stats.num_refused += 1;
                        return;
                    }
                    if let (true, Some(m)) = (last, partial.get_mut(&a.msg)) {
                        m.last_len = Some(payload_len);
                    }
                }
            }
            c.heard = true;
            c.ep.handle_segment(t, &Segment::Atp(a));
            if a.kind == AtpKind::Data && c.ep.as_atp_receiver().is_some_and(|rx| rx.has_message(a.msg)) {
                if let Some(m) = partial.remove(&a.msg) {
                    let charged = m.buf.charged();
                    // Whole: every packet but the last is `mss` bytes.
                    let size = (a.pkts as usize - 1) * *mss + m.last_len.unwrap_or(*mss);
                    let mut data = m.buf.into_bytes();
                    data.truncate(size);
                    // The message's bytes count against the node until the application takes
                    // it (Node::recv_job); the rest of what its buffer was charged is free now.
                    let size = size as u64;
                    if charged >= size {
                        self.shared.reserved.fetch_sub(charged - size, Ordering::Relaxed);
                    } else {
                        self.shared.reserved.fetch_add(size - charged, Ordering::Relaxed);
                    }
                    let _ = self.jobs.send(JobEvent::Message {
                        peer: key.peer,
                        conn: key.conn,
                        msg: a.msg,
                        group: m.group,
                        data,
                    });
                }
            }
        } else {
            c.heard = true;
            c.ep.handle_segment(t, &Segment::Atp(a));
        }
        touch(touched, key);
    }

    /// A data packet from an unknown `(peer, conn)`: open a receiver if the limits allow.
    /// Nothing is allocated or charged for the size it claims: its values are, as they arrive
    /// (`RxBuffer`).
    fn open_receiver(&mut self, key: Key, h: &wire::MltRepr, local: Option<IpAddr>, now: Instant) -> bool {
        let bytes = u64::from(h.total) * u64::from(h.value_bytes);
        if self.conns.len() >= self.cfg.max_connections
            || self.peer_full(key.peer.ip())
            || bytes > self.cfg.max_message_bytes
            || (h.value_bytes != 2 && h.value_bytes != 4)
        {
            self.stats.num_refused += 1;
            return false;
        }
        if self.below_floor(h) {
            self.stats.num_refused += 1;
            self.stats.num_refused_below_floor += 1;
            return false;
        }
        *self.receivers_by_ip.entry(key.peer.ip()).or_insert(0) += 1;
        let cfg = TransportConfig::Mlt(MltConfig { value_bytes: h.value_bytes, ..self.mlt.clone() });
        let side = Side::Rx {
            // CORRECTNESS: bytes <= max_message_bytes, checked above.
            buf: Some(RxBuffer::new(bytes as usize)),
            vb: usize::from(h.value_bytes),
            total: h.total,
            started: now,
            last_heard: now,
            delivered: false,
        };
        self.conns.insert(key, Conn { ep: Endpoint::receiver(&cfg, key.conn), side, heard: false, local });
        true
    }

    /// Whether the message `h` opens asks for fewer values than [`NodeConfig::min_receive_fraction`]
    /// requires: the need it names (0: this node's own p, as `MltReceiver` takes it), against
    /// `ceil(floor · N)` computed as the transport computes its own (exact to 10^-6).
    fn below_floor(&self, h: &wire::MltRepr) -> bool {
        let floor = self.cfg.min_receive_fraction;
        if floor <= 0.0 {
            return false;
        }
        let need = if h.need > 0 { h.need.min(h.total) } else { self.mlt.need_values(h.total) };
        need < MltConfig { complete_fraction: floor, ..MltConfig::default() }.need_values(h.total)
    }

    /// Whether the peer host `ip` holds `max_receivers_per_peer` receivers already.
    fn peer_full(&self, ip: IpAddr) -> bool {
        self.receivers_by_ip.get(&ip).is_some_and(|&n| n >= self.cfg.max_receivers_per_peer)
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
        let fin_copies_n = self.cfg.fin_copies;
        let Loop { conns, fault, out, scratch, stats, txq, fin_copies, .. } = self;
        let Some(c) = conns.get_mut(&key) else { return };
        while let Some(seg) = c.ep.poll_transmit(t) {
            // The payload's place in the connection's data: (message, start, end).
            let place = match (&seg, &c.side) {
                (Segment::Mlt(h), Side::Tx { vb, .. }) if !h.is_ack() => Some((0, h.start as usize * vb, h.end as usize * vb)),
                (Segment::Atp(h), Side::JobTx { mss, .. }) if h.kind == AtpKind::Data => {
                    let at = h.pkt as usize * mss;
                    Some((h.msg, at, at + h.len as usize))
                }
                _ => None,
            };
            let payload = place.and_then(|(m, a, b)| c.side.payload(m, a, b)).unwrap_or(&[]);
            // The priority class rides in the DSCP (class k: CS k, DSCP 8k; `slacknet net tc`).
            let dscp = match &seg {
                Segment::Atp(h) => h.prio.min(7) * 8,
                _ => 0,
            };
            let is_fin = matches!(&seg, Segment::Atp(h) if h.kind == AtpKind::Fin);
            if !fault_active {
                let start = txq.buf.len();
                // The header only: the payload stays where it is until the flush (TxItem).
                match datagram::emit_header_append(&seg, payload.len(), &mut txq.buf) {
                    Ok(head) => {
                        let payload_at = place
                            .filter(|_| !payload.is_empty())
                            .map(|(msg, start, end)| PayloadAt { key, msg, start, end });
                        txq.items.push(TxItem { dest: key.peer, src: c.local, dscp, start, head, len: head + payload.len(), payload: payload_at });
                        if is_fin && fin_copies_n > 0 {
                            let mut bytes = txq.buf[start..start + head].to_vec();
                            bytes.extend_from_slice(payload);
                            fin_copies.push((now + FIN_COPY_GAP, key.peer, dscp, bytes, fin_copies_n));
                        }
                    }
                    // The protocol produced what the wire refuses: a bug, counted, never a panic.
                    Err(_) => stats.num_malformed += 1,
                }
                continue;
            }
            if datagram::emit(&seg, payload, scratch).is_err() {
                stats.num_malformed += 1;
                continue;
            }
            if is_fin && fin_copies_n > 0 {
                fin_copies.push((now + FIN_COPY_GAP, key.peer, dscp, scratch.clone(), fin_copies_n));
            }
            fault.submit(now, Outgoing { dest: key.peer, src: c.local, dscp, bytes: scratch.clone() }, out);
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
                (Event::SenderDone { outcome, .. }, Side::JobTx { done, started, .. }) => {
                    let groups = c.ep.as_atp_sender().map(|s| s.report()).unwrap_or_default();
                    let report = JobReport { outcome, groups, elapsed: now - *started, stats: c.ep.stats() };
                    let _ = done.send(Ok(report));
                    sender_done = true;
                }
                (Event::Delivered { .. }, Side::JobRx { partial, ended, .. }) => {
                    // The end-of-job notice: the job is over; what is still partial is lost.
                    *ended = true;
                    let freed: u64 = partial.drain().map(|(_, m)| m.buf.charged()).sum();
                    self.shared.reserved.fetch_sub(freed, Ordering::Relaxed);
                    let rx = c.ep.as_atp_receiver();
                    let _ = self.jobs.send(JobEvent::End {
                        peer: key.peer,
                        conn: key.conn,
                        total: rx.and_then(|r| r.lost_messages().map(|l| l.len() as u64 + r.messages_received())),
                        lost: rx.and_then(|r| r.lost_messages()),
                    });
                }
                (Event::Delivered { .. }, Side::Rx { buf, vb, total, started, delivered, .. }) => {
                    let (received, missing, tag) = match c.ep.as_mlt_receiver().and_then(|r| r.report()) {
                        Some(r) => (r.delivered, r.missing.clone(), r.tag),
                        None => (0, Vec::new(), 0),
                    };
                    *delivered = true;
                    // What the message's buffer was charged counts against the node until the
                    // application takes it (Node::recv, which lays it out), no longer against
                    // this receiver.
                    let data = buf.take();
                    let _ = self.delivered.send((data, Delivered {
                        peer: key.peer,
                        conn: key.conn,
                        value_bytes: *vb as u8,
                        data: Vec::new(),
                        total_values: *total,
                        received_values: received,
                        missing,
                        elapsed: now - *started,
                        tag,
                    }));
                }
                _ => {}
            }
        }
        if sender_done {
            // The sender sends nothing more: late ACKs are counted as unknown. It is removed
            // after the flush (its queued datagrams' payloads are still in its data).
            self.ended.push(key);
        }
    }

    /// Send the extra copies of end-of-job notices that are due.
    fn send_fin_copies(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.fin_copies.len() {
            if self.fin_copies[i].0 > now {
                i += 1;
                continue;
            }
            let (_, dest, dscp, bytes, left) = &mut self.fin_copies[i];
            let start = self.txq.buf.len();
            self.txq.buf.extend_from_slice(bytes);
            self.txq.items.push(TxItem::in_buf(*dest, None, *dscp, start, bytes.len()));
            *left -= 1;
            if *left == 0 {
                self.fin_copies.swap_remove(i);
            } else {
                self.fin_copies[i].0 = now + FIN_COPY_GAP;
                i += 1;
            }
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
            self.txq.items.push(TxItem::in_buf(d.dest, d.src, d.dscp, start, d.bytes.len()));
        }
    }

    /// Hand the send queue to the socket in runs (one GSO `sendmsg` each where possible),
    /// waiting briefly for room when its buffer is full. Payloads go from their connections'
    /// data (`TxItem`), without a copy.
    ///
    /// PERF: with the keyed hasher (`hash.rs`), one lookup per ATP datagram, the touched list
    /// kept short and MRDF's cursor (`proto::atp`), this took an ATP job on loopback (`make
    /// bench-udp`) from 1.20 to 1.03 CPU s per GB (medians of 30 and 26 runs on a loaded
    /// 2-core machine; 0.87x in 26 back-to-back pairs, lower in 23) and, in three pairs while
    /// the machine was quiet, from 11.3-11.7 to 13.5-14.7 Gbit/s; the bounded-loss transport
    /// from 0.81 to 0.64 CPU s per GB (4 runs each).
    fn flush(&mut self) {
        let Loop { txq, conns, sock, stats, .. } = self;
        let TxQueue { buf, items } = txq;
        let mut iov: Vec<IoSlice<'_>> = Vec::new();
        let mut i = 0;
        while i < items.len() {
            let first = items[i];
            let seg = first.len;
            let max = sock.max_run(seg);
            // A run: consecutive datagrams to one destination, from one source, with one DSCP,
            // all `seg` bytes but the last, which may be shorter (GSO's rule).
            iov.clear();
            // A range of `buf` not yet in `iov` (consecutive headers and datagrams are one slice).
            let mut pending: Option<(usize, usize)> = None;
            let mut total = 0;
            let mut j = i;
            while j < items.len() && j - i < max {
                let it = items[j];
                if j > i && (it.dest != first.dest || it.src != first.src || it.dscp != first.dscp || it.len > seg) {
                    break;
                }
                let payload = match it.payload {
                    None => Some(&[][..]),
                    Some(p) => conns.get(&p.key).and_then(|c| c.side.payload(p.msg, p.start, p.end)),
                };
                // CORRECTNESS: a connection's queued payloads stay in its data until the flush
                // (ended connections are removed after it), so this finds them; were one
                // missing, its datagram would be dropped (counted), never sent garbled.
                let Some(payload) = payload.filter(|p| p.len() == it.len - it.head) else {
                    debug_assert!(false, "a queued payload is gone");
                    if j == i {
                        stats.num_send_dropped += 1;
                        i += 1;
                    }
                    break;
                };
                let (a, b) = (it.start, it.start + it.head);
                pending = match pending {
                    Some((s0, e0)) if e0 == a => Some((s0, b)),
                    Some((s0, e0)) => {
                        iov.push(IoSlice::new(&buf[s0..e0]));
                        Some((a, b))
                    }
                    None => Some((a, b)),
                };
                if !payload.is_empty() {
                    if let Some((s0, e0)) = pending.take() {
                        iov.push(IoSlice::new(&buf[s0..e0]));
                    }
                    iov.push(IoSlice::new(payload));
                }
                total += it.len;
                j += 1;
                if it.len < seg {
                    break;
                }
            }
            if j == i {
                continue; // the first datagram was dropped above
            }
            if let Some((s0, e0)) = pending {
                iov.push(IoSlice::new(&buf[s0..e0]));
            }
            let give_up = Instant::now() + SEND_BLOCK_WAIT;
            let sent = loop {
                match sock.send_run_gather(first.dest, first.src, &iov, total, seg, first.dscp) {
                    Ok(true) => break true,
                    Ok(false) if Instant::now() < give_up => {
                        let _ = sock.wait(Duration::from_millis(1), true, None);
                    }
                    // A full buffer past the wait, or an error (e.g. an unreachable peer): the
                    // datagrams are lost; the protocol recovers them as losses.
                    _ => break false,
                }
            };
            let n = (j - i) as u64;
            if sent {
                stats.num_sent += n;
            } else {
                stats.num_send_dropped += n;
            }
            i = j;
        }
        drop(iov);
        buf.clear();
        items.clear();
    }

    /// Drop what is past its deadline, idle timeout or linger, and the transfers cancelled.
    fn reap(&mut self, now: Instant) {
        let (linger, idle, job_idle) = (self.cfg.linger, self.cfg.receiver_idle_timeout, self.cfg.job_idle_end);
        let mut ended_jobs: Vec<Key> = Vec::new();
        let mut freed = 0u64;
        let mut timed_out = 0u64;
        let Loop { conns, receivers_by_ip, .. } = self;
        let mut left = |ip: IpAddr| {
            if let Entry::Occupied(mut o) = receivers_by_ip.entry(ip) {
                *o.get_mut() -= 1;
                if *o.get() == 0 {
                    o.remove();
                }
            }
        };
        conns.retain(|key, c| {
            let cancelled = match &c.side {
                Side::Tx { cancel, .. } | Side::JobTx { cancel, .. } => cancel.load(Ordering::Relaxed),
                _ => false,
            };
            match c.side.ends_at(linger, idle, job_idle) {
                _ if cancelled => {}
                Some(end) if now >= end => {}
                _ => return true,
            }
            let ended = |started: &Instant| {
                if cancelled {
                    NodeError::Cancelled
                } else {
                    NodeError::DeadlineExceeded { after: now - *started, heard: c.heard }
                }
            };
            match &c.side {
                Side::Tx { done, started, .. } => {
                    let _ = done.send(Err(ended(started)));
                }
                Side::JobTx { done, started, .. } => {
                    let _ = done.send(Err(ended(started)));
                }
                Side::Rx { delivered, buf, .. } => {
                    freed += buf.as_ref().map_or(0, RxBuffer::charged);
                    timed_out += u64::from(!*delivered);
                    left(key.peer.ip());
                }
                Side::JobRx { ended, partial, .. } => {
                    left(key.peer.ip());
                    if !*ended {
                        // No end-of-job notice: the job ends with its lost messages unknown.
                        freed += partial.values().map(|m| m.buf.charged()).sum::<u64>();
                        ended_jobs.push(*key);
                    }
                }
            }
            false
        });
        for key in ended_jobs {
            let _ = self.jobs.send(JobEvent::End { peer: key.peer, conn: key.conn, total: None, lost: None });
        }
        if freed > 0 {
            self.shared.reserved.fetch_sub(freed, Ordering::Relaxed);
        }
        self.stats.num_receivers_timed_out += timed_out;
    }

    /// The earliest timer, held datagram, deadline, idle timeout or linger's end.
    fn next_wakeup(&self) -> Option<Instant> {
        let (linger, idle, job_idle) = (self.cfg.linger, self.cfg.receiver_idle_timeout, self.cfg.job_idle_end);
        let conns = self
            .conns
            .values()
            .flat_map(|c| [c.ep.poll_timeout().map(|t| self.instant(t)), c.side.ends_at(linger, idle, job_idle)])
            .flatten()
            .min();
        let fins = self.fin_copies.iter().map(|f| f.0).min();
        [conns, self.fault.next_release(), fins].into_iter().flatten().min()
    }
}
