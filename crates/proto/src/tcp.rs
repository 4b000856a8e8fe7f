//! TCP-like reliable transport (DCTCP, NewReno or PowerTCP) as a sans-I/O state machine:
//! [`Conn`], one side (sender or receiver) of a one-way transfer, and its [`TcpConfig`].
//!
//! Pipeline position: wrapped by [`crate::Endpoint`]; driven by the simulator (virtual time)
//! or the UDP driver (wall clock). Speaks [`SegmentRepr`], never bytes.
//!
//! Model (what differs from a kernel TCP, on purpose):
//! - Sequence numbers are 64-bit byte offsets `0..size` that never wrap; the SYN takes no
//!   sequence space; the last data segment carries `FIN` and tells the receiver the size.
//! - The transfer is one-way: the sender's segments carry `ACK` with `ack = 0`, the
//!   receiver's ACKs carry no payload.
//! - No window scaling or receive window (the receiver buffers everything):
//!   NewReno (RFC 5681 + RFC 6582) with go-back-N after an RTO, or with
//!   [`TcpConfig::sack`] SACK (RFC 2018) and RFC 6675's loss recovery (its optional rescue
//!   retransmission included); RFC 3042 limited transmit on request
//!   ([`TcpConfig::limited_transmit`]); with SACK, RACK-TLP ([`TcpConfig::rack_tlp`]) and
//!   PRR in fast recovery (RFC 9937, [`TcpConfig::prr`]) on request.
//!   Nor spurious-retransmission undo (Eifel, DSACK): reordering by `dupack_threshold` or
//!   more segments triggers a fast retransmit, and NewReno then retransmits one segment per
//!   partial ACK up to `recover` (see `reorder_by_three_positions_triggers_fast_retransmit`).
//! - A [`DelayedAck`] with `count <= 1` means "ACK every segment" (same as `None`).
//! - RTT samples come only from timestamps (RFC 7323 RTTM): the sender stamps `ts_ps = now`
//!   on every segment and the receiver echoes per RFC 7323 §4.3 (see [`Conn`]).
//! - PowerTCP's in-band telemetry travels beside the segments, not in them: the driver
//!   collects it and hands it over (see "In-band telemetry" on [`Conn`]).
//!
//! Submodules: `sender` (windowed data, loss recovery, RTO), `receiver` (reassembly, ACK
//! policy, DCTCP and INT echo), `timer` (the timer table).

use units::{Bps, Bytes, Dur, Time};
use wire::{IntStack, SackBlocks, SegmentRepr};

use crate::cc::AnyCc;
use crate::rtt::RttEstimator;
use crate::{Event, Stats};

mod rack;
mod receiver;
mod sender;
mod sack;
mod timer;

use receiver::Receiver;
use sender::Sender;

/// Congestion control algorithm of a [`TcpConfig`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum CcKind {
    /// TCP NewReno (RFC 5681 + RFC 6582); data is sent Not-ECT, ECE is ignored.
    NewReno,
    /// DCTCP (Alizadeh et al. SIGCOMM'10): data is sent ECT(0), the receiver echoes CE per
    /// packet, and the window is cut by `alpha/2` at most once per window of data.
    Dctcp {
        /// EWMA gain g of DCTCP eq. (1); the paper uses 1/16.
        g: f64,
        /// Initial alpha (Linux uses 1.0: the first mark halves the window).
        init_alpha: f64,
        /// A loss sets ssthresh to `cwnd·(1 − alpha/2)`, as ns-3.44's `TcpDctcp` does, instead of
        /// FlightSize/2 (RFC 8257 §3.5, Linux since 5.1). `false` in every default.
        loss_by_alpha: bool,
        /// ns-3.44's `CA_CWR`: while the window is being cut for ECN marks (until `SND.UNA`
        /// passes what had been sent at the cut), duplicate ACKs start no fast recovery; the
        /// sender resends what the SACK scoreboard calls lost within `cwnd − pipe` (RFC 6675's
        /// `NextSeg()` rules 1-2), and a resend lost again waits for the timer; and an ECE on a
        /// new ACK during fast recovery ends the recovery with an ECN cut. `false` (Linux and
        /// RFC 6675: a loss starts fast recovery in any state) in every default.
        ns3_cwr: bool,
        /// An ECE counts only on an ACK that advances `SND.UNA`, as in ns-3.44's
        /// `TcpSocketBase::ReceivedAck` (which tests `ackNumber > oldHeadSequence` before
        /// `EnterCwr`): an ECE on a duplicate ACK neither cuts the window nor counts in
        /// [`EndpointStats::num_ecn`](crate::EndpointStats::num_ecn). `false` (RFC 3168 §6.1.2
        /// and Linux's `tcp_ack`, which take the echo from any ACK) in every default. It matters
        /// after a loss whose duplicate ACKs echo marks: the cut they cause leaves no room for
        /// the limited-transmit segments that would raise the third duplicate.
        ece_only_on_new_acks: bool,
    },
    /// PowerTCP (Addanki et al. NSDI'22, Algorithm 1): data is sent Not-ECT and collects
    /// in-band telemetry, the receiver echoes it, and the window follows the bottleneck's
    /// normalized power. Loss handling is NewReno's. See [`crate::cc::PowerTcp`] and
    /// [`CcKind::power_tcp_default`].
    PowerTcp {
        /// EWMA weight γ of the window update; the paper uses 0.9.
        gamma: f64,
        /// Additive increase β per update, in bytes.
        beta_bytes: u64,
        /// Base RTT τ: the smoothing horizon, and with `host_rate` the initial and maximum
        /// window `host_rate·τ`.
        base_rtt: Dur,
        /// The sender's NIC rate.
        host_rate: Bps,
    },
}

impl CcKind {
    /// The number of flows PowerTCP's default β expects to share a link
    /// (`expected_flows` of the authors' Linux module).
    pub const POWER_TCP_EXPECTED_FLOWS: u64 = 10;

    /// PowerTCP with the paper's defaults for base RTT τ and NIC rate `host_rate`:
    /// γ = 0.9 and β = `host_rate·τ / N` with N = [`CcKind::POWER_TCP_EXPECTED_FLOWS`] = 10
    /// (the authors' Linux module; a link shared by N flows settles with a standing queue
    /// of about N·β, i.e. one host BDP for the expected N).
    pub fn power_tcp_default(base_rtt: Dur, host_rate: Bps) -> CcKind {
        CcKind::PowerTcp {
            gamma: 0.9,
            beta_bytes: host_rate.bytes_in(base_rtt).get() / CcKind::POWER_TCP_EXPECTED_FLOWS,
            base_rtt,
            host_rate,
        }
    }
}

/// Delayed-ACK policy of a TCP receiver (RFC 1122 4.2.3.2 / RFC 5681 4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DelayedAck {
    /// ACK at least every this many full segments (2 in RFC 5681).
    pub count: u32,
    /// ACK at the latest this long after the first unacknowledged segment.
    pub timeout: Dur,
}

/// The largest initial window [`TcpConfig::init_cwnd_covers_transfer`] gives: 2^20 segments
/// (1.5 GB of 1460-byte segments), far above any response it is meant for.
pub const MAX_COVERING_WINDOW_PKTS: u32 = 1 << 20;

/// Knobs of the TCP transport. Every default is here and documented in one place.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TcpConfig {
    /// Congestion control. Default: DCTCP with g = 1/16, initial alpha 1.
    pub cc: CcKind,
    /// Maximum payload bytes per segment. Default 1460 (a 1500 B MTU with 40 B of headers).
    pub mss: u32,
    /// Initial congestion window in segments. Default 10 (RFC 6928).
    pub init_cwnd_pkts: u32,
    /// The initial window of a transfer of known size is at least the whole transfer (all its
    /// segments leave in the first window), as the Credence artifact starts its incast
    /// responses, up to [`MAX_COVERING_WINDOW_PKTS`] segments (a driver whose NIC queue is
    /// unbounded takes the whole first window at once). Streams and PowerTCP are unaffected.
    /// Default `false`.
    pub init_cwnd_covers_transfer: bool,
    /// Lower bound of the retransmission timeout (RFC 6298 (2.4) says 1 s; datacenters use
    /// far less). Default 10 ms.
    pub min_rto: Dur,
    /// RTO before the first RTT sample (RFC 6298 (2.1)). Default 10 ms.
    pub init_rto: Dur,
    /// Upper bound of the RTO after exponential backoff. Default 1 s.
    pub max_rto: Dur,
    /// Retransmission timeouts in a row without progress (no new byte acknowledged, no
    /// SYN-ACK) after which the sender gives up: the next timeout ends the transfer with
    /// [`Outcome::GivenUp`](crate::Outcome::GivenUp). Like Linux's `tcp_retries2`, whose
    /// default this is. Default 15 (about 10 s with the default RTOs).
    pub max_retries: u32,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681). Default 3.
    pub dupack_threshold: u32,
    /// RFC 3042 limited transmit: each of the first `dupack_threshold - 1` duplicate ACKs
    /// outside recovery lets one more new segment leave beyond the congestion window (which
    /// stays as it is), so that a window too small to raise `dupack_threshold` duplicates
    /// after a loss still gets its fast retransmit instead of a timeout. Linux and ns-3 have
    /// it on; default `false` here (the results published before it stay as they were).
    pub limited_transmit: bool,
    /// Selective acknowledgments: the receiver's ACKs carry SACK blocks (RFC 2018, at most
    /// three) and the sender keeps a scoreboard of them and recovers by RFC 6675 (several
    /// losses in one window in about one round trip, where NewReno needs one per loss; after
    /// a timeout, go-back-N skips what the receiver reports it holds). Linux and ns-3 have
    /// it on; default `false` here (the results published before it stay as they were). The
    /// driver carries the blocks beside the ACK (see "Selective acknowledgments" on [`Conn`]).
    pub sack: bool,
    /// RACK-TLP (RFC 8985; needs [`TcpConfig::sack`], ignored without it): losses are found by
    /// time (a segment not delivered and sent before one that was, once that one's RTT and a
    /// reordering window of a quarter of the minimum RTT have passed since it left), and a
    /// tail-loss probe two smoothed RTTs after the last progress sends a new segment or the last
    /// one again, so that a lost tail, which no duplicate ACK reports, is repaired in round
    /// trips instead of a retransmission timeout. Linux has it on (with SACK); ns-3.44 has
    /// neither; default `false` here. The docs of the `rack` module say where it differs from
    /// the RFC.
    pub rack_tlp: bool,
    /// Proportional rate reduction in fast recovery (RFC 9937, which obsoletes RFC 6937; needs
    /// [`TcpConfig::sack`], ignored without it): on each ACK in recovery the window becomes
    /// `pipe + sndcnt`, `sndcnt` sending in proportion to what the ACK delivered while `pipe`
    /// is above `ssthresh` and catching up to `ssthresh` below it, so that the window comes down
    /// to `ssthresh` over the recovery's round trip instead of at once (RFC 6675's `cwnd -
    /// pipe`, which sends nothing until `pipe` falls below `ssthresh` and then a burst). Linux
    /// and ns-3.44 (its default `TcpPrrRecovery`) recover by it; default `false` here.
    pub prr: bool,
    /// Slow start (RFC 5681 §3.1) while the window is below `ssthresh`; `false`: the window
    /// grows by congestion avoidance only (one MSS per window acknowledged), from the initial
    /// window and after a timeout, as in the Credence artifact's ns-3.39 DCTCP, whose
    /// `TcpSocketState::m_useSS = false` turns slow start off for every flow. NewReno and
    /// DCTCP; PowerTCP computes its window from telemetry and ignores it. Default `true`.
    pub slow_start: bool,
    /// Delayed ACKs at the receiver, or `None` to ACK every segment. Default `None`.
    pub delayed_ack: Option<DelayedAck>,
    /// Open with a three-way handshake (SYN, SYN-ACK) before data. Default `false` (like htsim);
    /// `true` makes FCTs comparable with ns-3.
    pub handshake: bool,
    /// Priority class stamped on every segment (0 = highest). Default 0.
    pub prio: u8,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: CcKind::Dctcp { g: 1.0 / 16.0, init_alpha: 1.0, loss_by_alpha: false, ns3_cwr: false, ece_only_on_new_acks: false },
            mss: 1460,
            init_cwnd_pkts: 10,
            init_cwnd_covers_transfer: false,
            min_rto: Dur::from_ms(10),
            init_rto: Dur::from_ms(10),
            max_rto: Dur::from_ms(1000),
            max_retries: 15,
            dupack_threshold: 3,
            limited_transmit: false,
            sack: false,
            rack_tlp: false,
            prr: false,
            slow_start: true,
            delayed_ack: None,
            handshake: false,
            prio: 0,
        }
    }
}

impl TcpConfig {
    /// Whether data segments are sent ECN-capable (DCTCP only).
    pub fn is_ecn_capable(&self) -> bool {
        matches!(self.cc, CcKind::Dctcp { .. })
    }

    /// Whether both sides use in-band telemetry (PowerTCP only).
    pub fn uses_int(&self) -> bool {
        matches!(self.cc, CcKind::PowerTcp { .. })
    }
}

/// One side of one TCP transfer (a sender or a receiver). Owns no socket and reads no clock:
/// every input carries `now`, every output is pulled.
///
/// # Call order
/// After construction and after every `handle_*` call, drain in this order:
/// 1. [`Conn::poll_transmit`] until `None` (segments to put on the wire now),
/// 2. [`Conn::poll_timeout`] (when to call [`Conn::handle_timeout`] next; it may move
///    earlier or later, or become `None`),
/// 3. [`Conn::poll_event`] until `None`.
///
/// `handle_timeout` before the deadline is a no-op. Segments of another `conn` are ignored.
/// If the driver does not drain a receiver after every input, consecutive ACKs are
/// coalesced (at most two are queued), never lost.
///
/// # Sender
/// - With [`TcpConfig::handshake`]: a SYN (len 0, `Not-ECT`) at the first `poll_transmit`,
///   retransmitted on RTO with backoff; data starts when the SYN-ACK arrives, with
///   `init_cwnd_pkts` segments, or one segment if the SYN had to be retransmitted
///   (RFC 5681 §3.1). Without: data starts at the first `poll_transmit`.
/// - Data segments carry `ACK`, `ecn = Ect0` (DCTCP) or `NotEct` (NewReno, PowerTCP), `prio`
///   from the config, `ts_ps = now`. Retransmissions are marked the same way.
/// - PowerTCP starts with the host BDP instead of `init_cwnd_pkts` segments and paces new
///   data at `cwnd/τ`: while a segment waits for its pacing slot, [`Conn::poll_timeout`]
///   returns that slot, and `poll_transmit` returns `None` until it is reached.
/// - [`Event::SenderDone`] is emitted once, from the `handle_segment` whose ACK reaches
///   `size`; afterwards the sender transmits nothing and has no timer.
///
/// # Receiver
/// - Replies SYN-ACK (`SYN|ACK`, echoing the SYN's `ts_ps`) to every SYN.
/// - ACKs: flags `ACK` (+ `ECE`), `len 0`, `Not-ECT`, `ack` = next byte expected,
///   `ts_echo_ps` per RFC 7323 §4.3: the `ts_ps` of the earliest in-order segment not yet
///   acknowledged when the ACK was generated (without delayed ACK: the segment that
///   triggered it, if in order); duplicate ACKs for out-of-order data echo the last in-order
///   segment; the ACK that fills a hole echoes the retransmission.
/// - [`Event::Delivered`] is emitted once, from the `handle_segment` after which every byte
///   up to the `FIN` segment's end has arrived. The receiver keeps acknowledging afterwards
///   (its last ACK may be lost) and never arms a timer except the delayed-ACK one.
///
/// # In-band telemetry (PowerTCP)
/// [`Conn::wants_int`] is true for both sides of a PowerTCP connection and false otherwise.
/// For such a connection the driver must:
/// 1. make every *data* segment (payload > 0, the sender's, retransmissions included)
///    collect an [`IntStack`] with one [`wire::IntHop`] per switch egress port it leaves, in
///    path order: `qlen_bytes` = bytes left in that port's queue after the segment was
///    dequeued, `tx_bytes` = the port's cumulative transmitted bytes including the segment,
///    `ts_ps` = the dequeue time, `rate_bps` = the port's line rate (HPCC/PowerTCP INT);
/// 2. hand the stack to the receiver with [`Conn::handle_segment_int`]
///    (`Some(&stack)`, even if it has no hops);
/// 3. after *every* [`Conn::poll_transmit`] that returned a segment, call
///    [`Conn::take_echo_int`] and, if it returns a stack, carry it with that segment
///    unchanged (the receiver's ACK echoes the stack of the data segment that triggered it);
/// 4. deliver an ACK and its echoed stack to the sender with
///    `handle_segment_int(now, ack, Some(&stack))`.
///
/// A receiver returns each data segment's stack from at most one ACK: the first ACK sent
/// after the segment arrived (immediately, or the delayed ACK covering it). ACKs without a
/// fresh stack (SYN-ACKs, a data segment that arrived without telemetry, or an ACK the
/// driver failed to `take_echo_int` before the next `poll_transmit`) carry none. Segments
/// handed over with plain [`Conn::handle_segment`] carry no telemetry. For NewReno and DCTCP
/// the telemetry inputs are ignored and `take_echo_int` always returns `None`.
///
/// # Selective acknowledgments
/// With [`TcpConfig::sack`] the driver must, after *every* [`Conn::poll_transmit`] of a
/// receiver that returned a segment, call [`Conn::take_sack`] and, if it returns blocks,
/// carry them with that ACK unchanged and hand them to the sender with
/// [`Conn::handle_segment_ext`]. Blocks lost on the way cost the sender information, never
/// correctness (a sender that gets none recovers as NewReno's timer would).
#[derive(Debug)]
pub struct Conn {
    side: Side,
}

/// Sender and receiver state are disjoint; one `Conn` is one of them.
#[derive(Debug)]
enum Side {
    Tx(Sender),
    Rx(Receiver),
}

impl Conn {
    /// The sending side of a transfer of `size` bytes on connection `conn`, created at
    /// `now`. PRECONDITION: `size >= 1` (an empty flow has no segment to carry `FIN`).
    pub fn sender(cfg: &TcpConfig, conn: u32, size: Bytes, now: Time) -> Conn {
        Conn { side: Side::Tx(Sender::new(cfg, conn, size.get(), true, now)) }
    }

    /// The receiving side of connection `conn`.
    pub fn receiver(cfg: &TcpConfig, conn: u32) -> Conn {
        Conn { side: Side::Rx(Receiver::new(cfg, conn)) }
    }

    /// Whether this is the sending side.
    pub fn is_sender(&self) -> bool {
        matches!(self.side, Side::Tx(_))
    }

    /// Input: a segment from the peer arrived at `now`.
    #[inline]
    pub fn handle_segment(&mut self, now: Time, seg: &SegmentRepr) {
        match &mut self.side {
            Side::Tx(s) => s.handle_segment(now, seg, None, None),
            Side::Rx(r) => r.handle_segment(now, seg),
        }
    }

    /// Input: a segment from the peer arrived at `now` with in-band telemetry `int`: the
    /// hops a data segment crossed (receiver) or the stack an ACK echoes (sender). See
    /// "In-band telemetry" above; `None` is the same as [`Conn::handle_segment`].
    #[inline]
    pub fn handle_segment_int(&mut self, now: Time, seg: &SegmentRepr, int: Option<&IntStack>) {
        self.handle_segment_ext(now, seg, int, None);
    }

    /// Input: a segment from the peer arrived at `now` with what travels beside it: in-band
    /// telemetry `int` (see "In-band telemetry" above) and the SACK blocks `sack` of an ACK
    /// (see "Selective acknowledgments"). `None`s are the same as [`Conn::handle_segment`].
    #[inline]
    pub fn handle_segment_ext(&mut self, now: Time, seg: &SegmentRepr, int: Option<&IntStack>, sack: Option<&SackBlocks>) {
        match &mut self.side {
            Side::Tx(s) => s.handle_segment(now, seg, int, sack),
            Side::Rx(r) => r.handle_segment_int(now, seg, int),
        }
    }

    /// Output: the SACK blocks to carry with the ACK the last [`Conn::poll_transmit`]
    /// returned, if it has any (a receiver with [`TcpConfig::sack`] holding data above its
    /// cumulative acknowledgment). Returns them at most once.
    #[inline]
    pub fn take_sack(&mut self) -> Option<SackBlocks> {
        match &mut self.side {
            Side::Tx(_) => None,
            Side::Rx(r) => r.take_sack(),
        }
    }

    /// Output: the telemetry stack to carry with the segment the last
    /// [`Conn::poll_transmit`] returned, if any (a receiver's echo; a sender never has one).
    /// Returns a stack at most once.
    #[inline]
    pub fn take_echo_int(&mut self) -> Option<IntStack> {
        match &mut self.side {
            Side::Tx(_) => None,
            Side::Rx(r) => r.take_echo_int(),
        }
    }

    /// Whether this connection uses in-band telemetry (both sides of a PowerTCP
    /// connection): its data segments must collect it and its ACKs carry the echo.
    #[inline]
    pub fn wants_int(&self) -> bool {
        match &self.side {
            Side::Tx(s) => s.wants_int(),
            Side::Rx(r) => r.wants_int(),
        }
    }

    /// The sending side of an open stream on connection `conn`, created at `now`: nothing
    /// to send until the application calls [`Conn::send`]; [`Conn::close`] ends it.
    pub fn sender_stream(cfg: &TcpConfig, conn: u32, now: Time) -> Conn {
        Conn { side: Side::Tx(Sender::new(cfg, conn, 0, false, now)) }
    }

    /// Input from the application: `bytes` more to send (payload is abstract; the UDP driver
    /// copies the bytes at emit time). Ignored after `close` and by a receiver. Drain
    /// afterwards as after any input.
    pub fn send(&mut self, bytes: u64) {
        if let Side::Tx(s) = &mut self.side {
            s.send(bytes);
        }
    }

    /// Input from the application: the stream ends after the bytes sent so far. Idempotent;
    /// ignored by a receiver. Drain afterwards.
    pub fn close(&mut self) {
        if let Side::Tx(s) = &mut self.side {
            s.close();
        }
    }

    /// Input from the application: cap the rate of new data (payload bytes per second, as
    /// `len / cap` between segments; `None` lifts the cap). A receiver ignores it. Drain
    /// afterwards as after any input.
    pub fn set_rate_cap(&mut self, cap: Option<Bps>) {
        if let Side::Tx(s) = &mut self.side {
            s.set_rate_cap(cap);
        }
    }

    /// Input: time passed. Fires the timers whose deadline is `<= now`; otherwise a no-op.
    #[inline]
    pub fn handle_timeout(&mut self, now: Time) {
        match &mut self.side {
            Side::Tx(s) => s.handle_timeout(now),
            Side::Rx(r) => r.handle_timeout(now),
        }
    }

    /// Output: the next segment to send at `now`, if any. Cheap when there is nothing to send.
    #[inline]
    pub fn poll_transmit(&mut self, now: Time) -> Option<SegmentRepr> {
        match &mut self.side {
            Side::Tx(s) => s.poll_transmit(now),
            Side::Rx(r) => r.poll_transmit(now),
        }
    }

    /// Output: the earliest time `handle_timeout` must be called, if any.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Time> {
        match &self.side {
            Side::Tx(s) => s.poll_timeout(),
            Side::Rx(r) => r.poll_timeout(),
        }
    }

    /// Output: the next event, if any.
    #[inline]
    pub fn poll_event(&mut self) -> Option<Event> {
        match &mut self.side {
            Side::Tx(s) => s.poll_event(),
            Side::Rx(r) => r.poll_event(),
        }
    }

    /// Counters; for a sender also the current `cwnd`, `alpha` and `srtt_ps`.
    pub fn stats(&self) -> Stats {
        match &self.side {
            Side::Tx(s) => s.stats(),
            Side::Rx(r) => r.stats(),
        }
    }

    /// The sender's congestion controller (`None` for a receiver).
    pub fn cc(&self) -> Option<&AnyCc> {
        match &self.side {
            Side::Tx(s) => Some(s.cc()),
            Side::Rx(_) => None,
        }
    }

    /// `(snd_una, snd_nxt, snd_max)` of a sender, for tests.
    #[cfg(test)]
    pub(crate) fn seq_state(&self) -> Option<(u64, u64, u64)> {
        match &self.side {
            Side::Tx(s) => Some(s.seq_state()),
            Side::Rx(_) => None,
        }
    }

    /// The RACK slots a sender still holds (`None` without RACK-TLP or for a receiver).
    #[cfg(test)]
    pub(crate) fn rack_slots(&self) -> Option<usize> {
        match &self.side {
            Side::Tx(s) => s.rack_slots(),
            Side::Rx(_) => None,
        }
    }

    /// The sender's RTT estimator (`None` for a receiver).
    pub fn rtt(&self) -> Option<&RttEstimator> {
        match &self.side {
            Side::Tx(s) => Some(s.rtt()),
            Side::Rx(_) => None,
        }
    }
}
