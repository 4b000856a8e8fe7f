//! The bounded-loss transport for distributed ML (Xia et al., "Rethinking Transport Layer
//! Design for Distributed Machine Learning", APNet'19) as a sans-I/O state machine:
//! [`MltSender`] and [`MltReceiver`], one side each of one message, and their [`MltConfig`].
//!
//! What the paper asks of the protocol, and where it is implemented:
//! - §3.2 Idea #1 (range indexing): a message is a vector of `N` values of
//!   [`MltConfig::value_bytes`] bytes (4 for 32-bit floats, 2 for 16-bit). Packet `i` carries
//!   the whole values `[i·v, min((i+1)·v, N))`, `v = mss / value_bytes`, and their index range
//!   (`wire::MltRepr`), so a packet never splits a value and is interpreted on its own. No
//!   ordering requirement (§3.1: "no packet ordering requirements"): the receiver keeps a set of
//!   received ranges.
//! - §3 (bounded-loss tolerance) and Idea #2: the receiver completes the message once
//!   `need = ceil(p·N)` distinct values have arrived ([`MltConfig::complete_fraction`] = p,
//!   computed exactly in parts per million; the sender's p, carried in every data packet, so
//!   the receiver needs no configuration of its own), emits `Event::Delivered` (outcome `Enough`, or
//!   `Complete` if it has all `N`), and freezes the report the application reads with
//!   [`MltReceiver::report`]: how many values arrived and the exact list of missing index
//!   ranges. Later packets are still recorded and acknowledged (best effort).
//! - §3 loss handling: "packet losses that can be quickly detected (e.g., duplicated ACKs)
//!   will be retransmitted as original": every data packet is acknowledged selectively and
//!   cumulatively (the cumulative point counts places in the sender's order of first
//!   transmissions, which every data packet carries, so a lost ACK is covered by the next one
//!   in any [`MltSendOrder`]; a cumulative point over value indices would rarely move in a
//!   pseudorandom order, and every lost ACK would then cost a spurious retransmission and a
//!   window cut: 2% of ACKs lost took 2.2x as long, 10% 11x), and a
//!   packet still outstanding when [`MltConfig::dupack_threshold`] packets sent after it have
//!   been acknowledged is presumed lost and resent (SACK/RACK-style fast retransmit). "Bounded
//!   packet losses with long detection time (e.g., retransmission timer) can be directly
//!   discarded": when the retransmission timer fires, each packet still outstanding is
//!   *abandoned* (never resent) as long as the values not abandoned can still reach `need`;
//!   the first one whose abandonment would break the bound, and every one after it, is resent.
//!   CORRECTNESS: so `N - abandoned >= need` always holds, and since every packet not
//!   abandoned is eventually acknowledged (it is resent until it is), the receiver reaches
//!   `need`: the bound is never violated, whatever the loss pattern.
//! - Congestion control: DCTCP's window law ([`crate::cc::Dctcp`] over NewReno, SIGCOMM'10
//!   eq. 1-2) by default, or CUBIC's ([`crate::cc::Cubic`], RFC 9438; [`MltConfig::cc`]) where
//!   the competition is Linux's default TCP at ports that drop rather than mark (the real
//!   transport's hosts; the paper's DCTCP assumes a marking fabric), with the window in bytes and flight counted over outstanding packets, so that a
//!   comparison with DCTCP isolates the loss policy. A fast-detected loss is one congestion
//!   event per window (NewReno's halving, entered and left at once: SACK tells exactly what to
//!   resend); a timeout that resends anything collapses the window to one packet (RFC 5681
//!   §3.1) as TCP's does; a timeout that only abandons is one congestion event (the losses are
//!   a congestion signal, but nothing is resent, so there is no go-back). This last choice is
//!   ours; the paper does not say.
//! - The sender ends (`SenderDone`) once an ACK says the receiver has at least `need` values
//!   (`Enough`; `Complete` if all `N`).
//!
//! Not in the paper, our choices: the retransmission timeout is RFC 6298's, `max(rto, SRTT +
//! 4 RTTVAR)` ([`MltConfig::rto`] the minimum and the initial value, doubled after a timeout
//! that resends, up to [`MltConfig::max_rto`]), from exact RTT samples: an ACK echoes the
//! transmission number it answers, so a sample is taken only when that is the packet's latest
//! transmission (no Karn ambiguity); a timeout that only abandons resends nothing and does not
//! back off. A stream ([`MltSender::stream`]) sends nothing before `close` (the header carries the
//! message's size `N`, which the receiver needs to know `need`).
//!
//! INVARIANT (bounded memory): the sender's scoreboard has one slot per packet of the message
//! and the receiver a bit per packet (or a range set of at most one entry per packet) and a
//! range set of places of at most one entry per packet, so all are bounded by the message size
//! (which the simulator's validation caps); the receiver queues at most [`MAX_PENDING_ACKS`]
//! ACKs. The sender's transmission log holds one entry per transmission not yet judged: entries
//! leave as later transmissions are acknowledged (or go stale), and
//! all of them at a timeout or at the end; with the window it is bounded by what the sender
//! sent since the last timeout.
//!
//! # Call order
//! As for every endpoint (crate docs): after construction and after every `handle_*` call,
//! drain `poll_transmit` until `None`, then read `poll_timeout`, then `poll_event` until `None`.
//! `handle_timeout` before the deadline is a no-op.

use std::collections::{BTreeMap, VecDeque};

use units::{Dur, Time};
use wire::{Ecn, Flags, MltRepr};

use crate::bits::LazyBits;
use crate::cc::{AckInfo, AnyCc, CongestionControl, Cubic, Dctcp, NewReno};
use crate::rtt::RttEstimator;
use crate::{Event, Outcome, Stats};

/// Knobs of the bounded-loss transport. Every default is here.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MltConfig {
    /// Payload bytes per packet, rounded down to whole values. Default 1460.
    pub mss: u32,
    /// Bytes per value: 4 (32-bit floats) or 2 (16-bit), §3.2. Default 4.
    pub value_bytes: u8,
    /// The fraction p of the message's values the receiver waits for (§2.2's `1 - x1`),
    /// in (0, 1]. Default 0.9. Used exactly to one part per million.
    pub complete_fraction: f64,
    /// Initial window in packets (the paper's DCTCP has 10, §3.1). Default 10.
    pub init_cwnd_pkts: u32,
    /// The window law. Default [`MltCc::Dctcp`] (the paper's, §3.1).
    #[cfg_attr(feature = "serde", serde(default))]
    pub cc: MltCc,
    /// DCTCP EWMA gain g (DCTCP eq. 1). Default 1/16.
    pub g: f64,
    /// DCTCP initial alpha. Default 1.
    pub init_alpha: f64,
    /// The minimum (and initial) retransmission timeout; above it the timeout follows the
    /// measured RTT (RFC 6298). Default 10 ms (DCTCP's `min_rto` default here).
    pub rto: Dur,
    /// The largest retransmission timeout (after backoff). Default 1 s.
    pub max_rto: Dur,
    /// Packets sent after one and acknowledged before it that presume it lost (the duplicate
    /// ACK threshold of fast retransmit). Default 3.
    pub dupack_threshold: u32,
    /// The order in which packets are first sent. Default [`MltSendOrder::Shuffled`].
    #[cfg_attr(feature = "serde", serde(default))]
    pub send_order: MltSendOrder,
    /// The application's label for the message (a round number, say): every data packet
    /// carries it in its `msg` field, and the receiver takes it from the first one, accepts
    /// only packets that agree, and reports it ([`MltReport::tag`]). Default 0.
    #[cfg_attr(feature = "serde", serde(default))]
    pub tag: u32,
    /// A tail-loss probe (RFC 8985 §7; not in the paper): with data outstanding, two smoothed
    /// RTTs without progress send one probe (a packet queued for retransmission, the next new
    /// one, or the last one sent again) whose ACK lets fast loss detection find what the tail
    /// lost, instead of waiting out the retransmission timeout; unlike the RFC, in loss
    /// recovery too (`MltSender::arm_probe`). Default false (the paper's protocol).
    #[cfg_attr(feature = "serde", serde(default))]
    pub tail_probe: bool,
}

impl Default for MltConfig {
    fn default() -> Self {
        MltConfig {
            mss: 1460,
            value_bytes: 4,
            complete_fraction: 0.9,
            init_cwnd_pkts: 10,
            cc: MltCc::Dctcp,
            g: 1.0 / 16.0,
            init_alpha: 1.0,
            rto: Dur::from_ms(10),
            max_rto: Dur::from_ms(1000),
            dupack_threshold: 3,
            send_order: MltSendOrder::Shuffled,
            tag: 0,
            tail_probe: false,
        }
    }
}

/// The order in which the sender first sends a message's packets. The receiver completes at
/// `ceil(p·N)` values, so the values missing at completion are those not yet arrived: sent in
/// index order, that is always the message's tail (with no loss at all, the last `1 - p` of
/// every message; measured on the real transport at p = 0.7: the last 30% of the values
/// missing in 90-100% of messages, the first 70% never), which starves whatever lies there
/// (a model's last layer) every round. The ML paper's tolerance is for *random* loss (§2.2:
/// "a fraction of the gradients ... is randomly marked as lost"), so by default the packets
/// go in a pseudorandom order, a new one per message, and what is missing at completion is a
/// uniformly random set of packets. Retransmissions are unaffected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum MltSendOrder {
    /// A permutation of the packets drawn per message (Fisher-Yates over SplitMix64 seeded
    /// by the connection id and the message's size: deterministic for a given message).
    #[default]
    Shuffled,
    /// Packet 0, 1, 2, ...: the values missing at completion are the tail.
    Index,
}

/// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): the next state and its output.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniformly random permutation of `0..n` (Fisher-Yates), from `seed`.
fn permutation(n: usize, seed: u64) -> Vec<u32> {
    // CORRECTNESS: n = ceil(total / vpp) <= u32::MAX, so every index fits a u32.
    let mut order: Vec<u32> = (0..n).map(|i| i as u32).collect();
    let mut state = seed;
    for i in (1..n).rev() {
        // Lemire's multiply-shift: a draw in [0, i] from the high 32 bits (bias < 2^-32 · n).
        let j = ((splitmix64(&mut state) >> 32) * (i as u64 + 1)) >> 32;
        order.swap(i, j as usize);
    }
    order
}

/// The bounded-loss transport's window law. Loss recovery (fast retransmit, abandonment at a
/// timeout) is the same under both; only how the window grows and is cut differs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum MltCc {
    /// DCTCP (SIGCOMM'10) over NewReno: the paper's choice, for ECN-marking fabrics.
    #[default]
    Dctcp,
    /// CUBIC (RFC 9438) over NewReno's recovery: Linux's default TCP law, for competing
    /// with it at ports that drop. ECN-Echo counts as a congestion event (§4.6).
    Cubic,
}

impl MltConfig {
    /// Bytes per value actually used (4 unless the config says 2).
    fn vb(&self) -> u32 {
        if self.value_bytes == 2 {
            2
        } else {
            4
        }
    }

    /// Values per full packet (at least one).
    pub fn values_per_pkt(&self) -> u32 {
        (self.mss / self.vb()).max(1)
    }

    /// Payload bytes of a full packet: `values_per_pkt · value_bytes`.
    pub fn pkt_bytes(&self) -> u32 {
        self.values_per_pkt().saturating_mul(self.vb())
    }

    /// `complete_fraction` in parts per million, in `1..=1_000_000` (a NaN counts as 1).
    fn ppm(&self) -> u64 {
        let f = self.complete_fraction;
        if f.is_nan() {
            return 1_000_000;
        }
        ((f * 1e6).round() as u64).clamp(1, 1_000_000)
    }

    /// The values the receiver waits for out of `total`: `ceil(p · total)`, exactly (p to one
    /// part per million), at most `total`.
    pub fn need_values(&self, total: u32) -> u32 {
        let n = (u128::from(total) * u128::from(self.ppm())).div_ceil(1_000_000);
        // CORRECTNESS: ppm <= 10^6, so n <= total.
        n.min(u128::from(total)) as u32
    }

    /// Values in a message of `bytes` bytes (a trailing partial value counts as one), capped
    /// at `u32::MAX`.
    pub fn values_in(&self, bytes: u64) -> u32 {
        bytes.div_ceil(u64::from(self.vb())).min(u64::from(u32::MAX)) as u32
    }
}

/// ACKs a receiver keeps queued for its driver at most; older ones are dropped first.
pub const MAX_PENDING_ACKS: usize = 64;

/// The sender's view of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Not sent yet.
    Unsent,
    /// In flight with this transmission number.
    Out(u64),
    /// Presumed lost; queued for retransmission.
    Lost,
    /// Acknowledged.
    Acked,
    /// Abandoned at a timeout (§3: discarded while the bound allows).
    Abandoned,
}

/// The sending side of one message. See the module docs.
#[derive(Debug, Clone)]
pub struct MltSender {
    conn: u32,
    vpp: u32,
    vb: u8,
    rtt: RttEstimator,
    dupthresh: u64,
    /// Message size in bytes (grows with `send` until `close`).
    size: u64,
    closed: bool,
    /// Values in the message and the values the receiver waits for (set at `close`).
    total: u32,
    need: u32,
    cfg: MltConfig,
    // INVARIANT: `board.len()` is the number of packets of the message once closed, else 0.
    board: Vec<Slot>,
    /// When each packet was last sent (one per slot of `board`).
    sent_at: Vec<Time>,
    /// Next packet never sent: `order[next_new]` (or `next_new` itself when `order` is empty,
    /// the index order).
    next_new: usize,
    /// The first-transmission order ([`MltSendOrder::Shuffled`]): the packet sent at each
    /// place; empty for the index order.
    // INVARIANT: empty, or a permutation of `0..board.len()`.
    order: Vec<u32>,
    /// Its inverse: each packet's place in `order` (empty with it).
    place: Vec<u32>,
    /// Packets queued for retransmission (each `Lost` slot once).
    lost: VecDeque<u32>,
    /// Transmissions in order `(tx, packet)`, for fast loss detection. An entry whose slot no
    /// longer is `Out(tx)` is stale and skipped. Cleared at every timeout.
    log: VecDeque<(u64, u32)>,
    next_tx: u64,
    /// Places of `order` below the highest cumulative ACK (their packets all `Acked`).
    cum_pkts: usize,
    /// Highest transmission number acknowledged.
    high_acked_tx: Option<u64>,
    /// Payload bytes in flight (slots `Out`).
    // INVARIANT: the sum of `bytes_of` over `Out` slots.
    flight: u64,
    /// Values acknowledged, and values abandoned.
    acked_values: u32,
    abandoned_values: u32,
    /// The largest `received` an ACK reported.
    peer_received: u32,
    /// Bytes of new data sent, and bytes resolved (acknowledged or abandoned): DCTCP's
    /// `SND.NXT` and `SND.UNA` (monotone).
    sent_new_bytes: u64,
    resolved_bytes: u64,
    /// Loss recovery (one congestion response per window) lasts until `resolved_bytes`
    /// passes this.
    recover: Option<u64>,
    cc: AnyCc,
    rto_at: Option<Time>,
    /// The tail-loss probe's deadline ([`MltConfig::tail_probe`]), earlier than `rto_at`.
    pto_at: Option<Time>,
    /// The probe's timer fired: the next `poll_transmit` sends the probe.
    probe_due: bool,
    /// A probe was sent and no ACK has made progress since: no other probe until one does
    /// (RFC 8985 §7.2: at most one probe outstanding).
    probe_out: bool,
    tail_probes: u64,
    done: bool,
    event: Option<Event>,
    stats: Stats,
}

impl MltSender {
    /// The sender of a message of `size` bytes (`ceil(size / value_bytes)` values) on
    /// connection `conn`.
    pub fn new(cfg: &MltConfig, conn: u32, size: u64) -> MltSender {
        let mut s = MltSender::stream(cfg, conn);
        s.size = size;
        s.close();
        s
    }

    /// The sender of a message handed over in pieces with [`MltSender::send`]; nothing leaves
    /// before [`MltSender::close`] (the header carries the message's size).
    pub fn stream(cfg: &MltConfig, conn: u32) -> MltSender {
        let pkt = u64::from(cfg.pkt_bytes());
        let g = if (0.0..=1.0).contains(&cfg.g) { cfg.g } else { 1.0 / 16.0 };
        let a = if (0.0..=1.0).contains(&cfg.init_alpha) { cfg.init_alpha } else { 1.0 };
        MltSender {
            conn,
            vpp: cfg.values_per_pkt(),
            vb: cfg.vb() as u8,
            rtt: {
                let min = cfg.rto.max(Dur::from_ps(1));
                RttEstimator::new(min, min, cfg.max_rto.max(min))
            },
            dupthresh: u64::from(cfg.dupack_threshold.max(1)),
            size: 0,
            closed: false,
            total: 0,
            need: 0,
            cfg: cfg.clone(),
            board: Vec::new(),
            sent_at: Vec::new(),
            next_new: 0,
            order: Vec::new(),
            place: Vec::new(),
            lost: VecDeque::new(),
            log: VecDeque::new(),
            next_tx: 0,
            cum_pkts: 0,
            high_acked_tx: None,
            flight: 0,
            acked_values: 0,
            abandoned_values: 0,
            peer_received: 0,
            sent_new_bytes: 0,
            resolved_bytes: 0,
            recover: None,
            cc: {
                let reno = NewReno::new(pkt, pkt * u64::from(cfg.init_cwnd_pkts.max(1)));
                match cfg.cc {
                    MltCc::Dctcp => AnyCc::Dctcp(Dctcp::new(reno, g, a, false)),
                    MltCc::Cubic => AnyCc::Cubic(Box::new(Cubic::new(reno))),
                }
            },
            rto_at: None,
            pto_at: None,
            probe_due: false,
            probe_out: false,
            tail_probes: 0,
            done: false,
            event: None,
            stats: Stats::default(),
        }
    }

    /// Input from the application: `bytes` more of the message. Ignored after `close`.
    pub fn send(&mut self, bytes: u64) {
        if !self.closed {
            self.size = self.size.saturating_add(bytes);
        }
    }

    /// Input from the application: the message is whole. Idempotent.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.total = self.cfg.values_in(self.size);
        self.need = self.cfg.need_values(self.total);
        let num_pkts = self.total.div_ceil(self.vpp) as usize;
        self.board = vec![Slot::Unsent; num_pkts];
        self.sent_at = vec![Time::ZERO; num_pkts];
        if self.cfg.send_order == MltSendOrder::Shuffled && num_pkts > 1 {
            let seed = (u64::from(self.conn) << 32) ^ u64::from(self.total);
            self.order = permutation(num_pkts, seed);
            self.place = vec![0; num_pkts];
            for (k, &i) in self.order.iter().enumerate() {
                // CORRECTNESS: k < num_pkts <= u32::MAX.
                self.place[i as usize] = k as u32;
            }
        }
        if self.total == 0 {
            self.finish(Outcome::Complete);
        }
    }

    /// Values in the message (0 before `close`).
    pub fn total_values(&self) -> u32 {
        self.total
    }

    /// Values the receiver waits for: `ceil(p · N)`.
    pub fn need_values(&self) -> u32 {
        self.need
    }

    /// Values abandoned at timeouts so far (never resent unless acknowledged late).
    pub fn abandoned_values(&self) -> u32 {
        self.abandoned_values
    }

    /// Values the receiver is known to hold.
    pub fn acked_values(&self) -> u32 {
        self.acked_values.max(self.peer_received)
    }

    /// Current window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.cc.window()
    }

    fn range(&self, idx: usize) -> (u32, u32) {
        // CORRECTNESS: idx < board.len() = ceil(total / vpp), so idx · vpp < total <= u32::MAX.
        let start = (idx as u32).saturating_mul(self.vpp);
        (start, start.saturating_add(self.vpp).min(self.total))
    }

    fn bytes_of(&self, idx: usize) -> u64 {
        let (s, e) = self.range(idx);
        u64::from(e - s) * u64::from(self.vb)
    }

    fn finish(&mut self, outcome: Outcome) {
        if !self.done {
            self.done = true;
            self.rto_at = None;
            self.pto_at = None;
            self.probe_due = false;
            self.lost.clear();
            self.log.clear();
            self.event = Some(Event::SenderDone { outcome, confirmed: true });
        }
    }

    /// Output: the next packet to send at `now`, if any.
    pub fn poll_transmit(&mut self, now: Time) -> Option<MltRepr> {
        if self.done || !self.closed {
            return None;
        }
        let window = self.cc.window();
        // PERF: `lost` may hold entries whose packet was acknowledged since (a late ACK);
        // they are skipped here instead of searched for at every ACK (that search was O(n)
        // per ACK, the top of the real driver's profile after a timeout marked many lost).
        while self.lost.front().is_some_and(|&i| self.board[i as usize] != Slot::Lost) {
            self.lost.pop_front();
        }
        if self.probe_due {
            self.probe_due = false;
            if let Some(probe) = self.send_probe(now) {
                return Some(probe);
            }
        }
        let (idx, is_retx) = if let Some(&i) = self.lost.front() {
            (i as usize, true)
        } else if self.next_new < self.board.len() {
            (self.order.get(self.next_new).map_or(self.next_new, |&i| i as usize), false)
        } else {
            return None;
        };
        let bytes = self.bytes_of(idx);
        // The window counts bytes in flight; one packet may always be in flight.
        if self.flight > 0 && self.flight.saturating_add(bytes) > window {
            return None;
        }
        if is_retx {
            self.lost.pop_front();
        }
        Some(self.emit(now, idx, !is_retx))
    }

    /// RFC 8985 §7.3, the probe, whatever the window: the first packet queued for
    /// retransmission if any (ours: a probe in loss recovery, below), else the next new packet,
    /// else the last packet sent that is still outstanding, sent again. `None` if nothing is
    /// outstanding or left to send.
    fn send_probe(&mut self, now: Time) -> Option<MltRepr> {
        // CORRECTNESS: poll_transmit dropped the stale entries at the front of `lost`.
        let (idx, is_new) = if let Some(i) = self.lost.pop_front() {
            (i as usize, false)
        } else if self.next_new < self.board.len() {
            (self.order.get(self.next_new).map_or(self.next_new, |&i| i as usize), true)
        } else {
            let &(_, i) = self.log.iter().rev().find(|&&(tx, i)| self.board[i as usize] == Slot::Out(tx))?;
            (i as usize, false)
        };
        self.probe_out = true;
        self.pto_at = None;
        self.tail_probes += 1;
        Some(self.emit(now, idx, is_new))
    }

    /// Send packet `idx` at `now`: first sent (`is_new`) or sent again.
    fn emit(&mut self, now: Time, idx: usize, is_new: bool) -> MltRepr {
        let bytes = self.bytes_of(idx);
        if is_new {
            self.next_new += 1;
            self.sent_new_bytes = self.sent_new_bytes.saturating_add(bytes);
        } else {
            self.stats.segments_retx += 1;
        }
        // A probe may send again a packet still in flight: counted once.
        if !matches!(self.board[idx], Slot::Out(_)) {
            self.flight += bytes;
        }
        let tx = self.next_tx;
        self.next_tx += 1;
        self.board[idx] = Slot::Out(tx);
        self.sent_at[idx] = now;
        // CORRECTNESS: idx < board.len() <= u32::MAX.
        self.log.push_back((tx, idx as u32));
        if self.rto_at.is_none() {
            self.rto_at = Some(now.saturating_add(self.rtt.rto()));
        }
        if is_new {
            // RFC 8985 §7.2: the probe's timer restarts with every new transmission.
            self.arm_probe(now);
        }
        let (start, end) = self.range(idx);
        // CORRECTNESS: idx < board.len() <= u32::MAX.
        let pos = self.place.get(idx).copied().unwrap_or(idx as u32);
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += bytes;
        MltRepr {
            conn: self.conn,
            msg: self.cfg.tag,
            seq: tx,
            start,
            end,
            total: self.total,
            need: self.need,
            pos,
            value_bytes: self.vb,
            // CORRECTNESS: bytes <= pkt_bytes <= mss, a u32.
            len: bytes as u32,
            ecn: Ecn::Ect0,
            ..Default::default()
        }
    }

    /// RFC 8985 §7.2: with [`MltConfig::tail_probe`], data outstanding and no probe
    /// outstanding, the probe is due two smoothed RTTs from `now` (every packet is
    /// acknowledged at once, so no delayed-ACK allowance), unless the retransmission timeout
    /// comes first. Without an RTT sample there is no probe. Unlike RFC 8985, also in loss
    /// recovery: this sender has no RACK reordering timer, so when a retransmission and every
    /// packet in flight after it are lost, with the window full, nothing else would act before
    /// the timeout (measured: 2 of the 3 training flows of the full-scale ring reproduction
    /// that still waited one with the RFC's rule; the third had lost its first window, before
    /// any RTT sample).
    fn arm_probe(&mut self, now: Time) {
        self.pto_at = None;
        if !self.cfg.tail_probe || self.done || self.probe_out || self.flight == 0 {
            return;
        }
        let Some(srtt) = self.rtt.srtt() else { return };
        let at = now.saturating_add(srtt.saturating_double());
        if self.rto_at.is_none_or(|r| at < r) {
            self.pto_at = Some(at);
        }
    }

    /// Mark packet `idx` acknowledged; returns the bytes newly acknowledged.
    fn ack_pkt(&mut self, idx: usize) -> u64 {
        let bytes = self.bytes_of(idx);
        let (s, e) = self.range(idx);
        match self.board[idx] {
            Slot::Acked | Slot::Unsent => return 0,
            Slot::Out(_) => self.flight -= bytes,
            // Its entry in `lost` goes stale and is skipped by poll_transmit.
            Slot::Lost => {}
            // A late arrival of an abandoned packet: it counts after all.
            Slot::Abandoned => {
                self.abandoned_values -= e - s;
                self.resolved_bytes = self.resolved_bytes.saturating_sub(bytes);
            }
        }
        self.board[idx] = Slot::Acked;
        self.acked_values += e - s;
        self.resolved_bytes = self.resolved_bytes.saturating_add(bytes);
        bytes
    }

    /// Input: an ACK from the receiver arrived at `now`. Data and others' packets are ignored.
    pub fn handle_segment(&mut self, now: Time, ack: &MltRepr) {
        if self.done || !self.closed || ack.conn != self.conn || !ack.is_ack() || ack.total != self.total {
            return;
        }
        let mut newly = 0u64;
        // Selective: the packet this ACK answers, if its range is one of ours.
        let idx = (ack.start / self.vpp) as usize;
        if idx < self.board.len() && self.range(idx) == (ack.start, ack.end) {
            // An exact RTT sample: this ACK answers the packet's latest transmission.
            if self.board[idx] == Slot::Out(ack.seq) {
                self.rtt.on_sample(now.since(self.sent_at[idx]));
                if let Some(srtt) = self.rtt.srtt() {
                    self.cc.on_rtt(srtt);
                }
            }
            newly += self.ack_pkt(idx);
            self.high_acked_tx = Some(self.high_acked_tx.map_or(ack.seq, |h| h.max(ack.seq)));
        }
        // Cumulative: the packets sent at every place below `cum`. Places are resolved front
        // to back mostly, so this walks few of them; still bounded by the board.
        let upto = (ack.cum as usize).min(self.board.len());
        for k in self.cum_pkts..upto {
            let i = self.order.get(k).map_or(k, |&i| i as usize);
            newly += self.ack_pkt(i);
        }
        self.cum_pkts = self.cum_pkts.max(upto);
        self.peer_received = self.peer_received.max(ack.received);
        let ece = ack.flags.contains(Flags::ECE);
        if ece {
            self.stats.num_ecn += 1;
        }
        if self.recover.is_some_and(|r| self.resolved_bytes >= r) {
            self.recover = None;
            self.cc.on_recovery_exit(self.flight);
        }
        let info = AckInfo { bytes_acked: newly, ece, snd_una: self.resolved_bytes, snd_max: self.sent_new_bytes };
        let cut = self.cc.on_ecn(now, &info, self.recover.is_none());
        if cut {
            self.stats.num_ecn_cuts += 1;
        } else if newly > 0 && self.recover.is_none() {
            self.cc.on_ack(now, newly);
        }
        self.detect_fast_losses(now);
        if newly > 0 {
            // Progress restarts the timer; nothing outstanding stops it.
            self.rto_at = (self.flight > 0).then(|| now.saturating_add(self.rtt.rto()));
            self.probe_out = false;
            self.arm_probe(now);
        }
        self.check_done(ack.flags.contains(Flags::FIN));
    }

    /// §3: "packet losses that can be quickly detected (e.g., duplicated ACKs) will be
    /// retransmitted": a packet outstanding when `dupack_threshold` later transmissions were
    /// acknowledged is lost.
    fn detect_fast_losses(&mut self, now: Time) {
        let Some(high) = self.high_acked_tx else { return };
        let mut any = false;
        while let Some(&(tx, idx)) = self.log.front() {
            if tx.saturating_add(self.dupthresh) > high {
                break;
            }
            self.log.pop_front();
            if self.board[idx as usize] == Slot::Out(tx) {
                self.board[idx as usize] = Slot::Lost;
                self.flight -= self.bytes_of(idx as usize);
                self.lost.push_back(idx);
                any = true;
            }
        }
        // Stale entries at the front are dropped as they come; the log stays bounded.
        while let Some(&(tx, idx)) = self.log.front() {
            if self.board[idx as usize] == Slot::Out(tx) {
                break;
            }
            self.log.pop_front();
        }
        if any {
            self.stats.num_fast_retx += 1;
            if self.recover.is_none() {
                self.recover = Some(self.sent_new_bytes);
                self.cc.on_congestion_event(now, self.flight, self.sent_new_bytes);
            }
        }
    }

    fn check_done(&mut self, peer_done: bool) {
        let have = self.acked_values();
        if peer_done || (self.closed && have >= self.need) {
            self.finish(if have >= self.total { Outcome::Complete } else { Outcome::Enough });
        }
    }

    /// Input: time passed. Fires the retransmission timeout if it is due; otherwise a no-op.
    /// §3: the packets still outstanding are abandoned while `N - abandoned >= need` allows,
    /// and resent from the first one that would break it.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.done {
            return;
        }
        if self.rto_at.is_none_or(|at| at > now) {
            if self.pto_at.is_some_and(|at| at <= now) {
                self.pto_at = None;
                self.probe_due = true;
            }
            return;
        }
        self.rto_at = None;
        self.pto_at = None;
        self.probe_due = false;
        self.probe_out = false;
        self.stats.num_rtos += 1;
        let flight_before = self.flight;
        let mut resent = false;
        let mut abandoned = false;
        let log = std::mem::take(&mut self.log);
        for (tx, idx) in log {
            let i = idx as usize;
            if self.board[i] != Slot::Out(tx) {
                continue;
            }
            let bytes = self.bytes_of(i);
            let (s, e) = self.range(i);
            self.flight -= bytes;
            // CORRECTNESS: abandoned_values <= total - need, so no underflow below.
            let keepable = self.total - self.abandoned_values;
            if !resent && keepable.checked_sub(e - s).is_some_and(|k| k >= self.need) {
                self.board[i] = Slot::Abandoned;
                self.abandoned_values += e - s;
                self.resolved_bytes = self.resolved_bytes.saturating_add(bytes);
                abandoned = true;
            } else {
                self.board[i] = Slot::Lost;
                self.lost.push_back(idx);
                resent = true;
            }
        }
        debug_assert!(self.total - self.abandoned_values >= self.need);
        if resent {
            // RFC 5681 §3.1: the window restarts from one packet; RFC 6298 (5.5): back off.
            self.rtt.on_timeout();
            self.cc.on_rto(now, flight_before, self.sent_new_bytes, false);
            self.recover = None;
        } else if abandoned && self.recover.is_none() {
            self.recover = Some(self.sent_new_bytes);
            self.cc.on_congestion_event(now, flight_before, self.sent_new_bytes);
        }
        // Everything resolved by abandonment: the receiver may already have enough.
        self.check_done(false);
    }

    /// Output: when `handle_timeout` must next be called, if ever.
    pub fn poll_timeout(&self) -> Option<Time> {
        match (self.rto_at, self.pto_at) {
            (Some(r), Some(p)) => Some(r.min(p)),
            (r, p) => r.or(p),
        }
    }

    /// Tail-loss probes sent ([`MltConfig::tail_probe`]).
    pub fn tail_probes(&self) -> u64 {
        self.tail_probes
    }

    /// Output: the next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.event.take()
    }

    /// Counters, with the current `cwnd`, `alpha` and `srtt_ps` (0 before the first sample).
    pub fn stats(&self) -> Stats {
        let srtt_ps = self.rtt.srtt().map_or(0, Dur::ps);
        Stats { cwnd: self.cc.window(), alpha: self.cc.alpha(), srtt_ps, ..self.stats }
    }

    /// The current retransmission timeout (RFC 6298 over the measured RTT, at least
    /// [`MltConfig::rto`], backed off after a timeout that resent).
    pub fn rto(&self) -> Dur {
        self.rtt.rto()
    }
}

/// What the receiver hands the application when the message completes (§3.2 Idea #2): how
/// many values arrived and exactly which index ranges did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MltReport {
    /// Values in the message.
    pub total: u32,
    /// Distinct values received.
    pub delivered: u32,
    /// The missing index ranges `[start, end)`, sorted, disjoint and not adjacent.
    pub missing: Vec<(u32, u32)>,
    /// The sender's tag ([`MltConfig::tag`]).
    pub tag: u32,
}

/// The receiving side of one message. See the module docs.
#[derive(Debug, Clone)]
pub struct MltReceiver {
    conn: u32,
    cfg: MltConfig,
    /// Values in the message, learned from the first data packet, with its need and tag.
    total: Option<u32>,
    need: u32,
    tag: u32,
    /// The values received; `received` is how many.
    held: Held,
    /// The places in the sender's order of the packets received, as a range set (start ->
    /// end, disjoint, not adjacent): the cumulative ACK is the end of the one starting at 0.
    // INVARIANT: at most one entry per packet of the message.
    places: BTreeMap<u32, u32>,
    received: u32,
    report: Option<MltReport>,
    acks: VecDeque<MltRepr>,
    event: Option<Event>,
    stats: Stats,
}

impl MltReceiver {
    /// The receiver of connection `conn`.
    pub fn new(cfg: &MltConfig, conn: u32) -> MltReceiver {
        MltReceiver {
            conn,
            cfg: cfg.clone(),
            total: None,
            need: 0,
            tag: 0,
            held: Held::Ranges(BTreeMap::new()),
            places: BTreeMap::new(),
            received: 0,
            report: None,
            acks: VecDeque::new(),
            event: None,
            stats: Stats::default(),
        }
    }

    /// The values it waits for (the first data packet's `need`, or its own p's), `None`
    /// before the first data packet.
    pub fn need(&self) -> Option<u32> {
        self.total.map(|_| self.need)
    }

    /// Distinct values received so far.
    pub fn received_values(&self) -> u32 {
        self.received
    }

    /// The report frozen when the message completed (§3.2 Idea #2), `None` before.
    pub fn report(&self) -> Option<&MltReport> {
        self.report.as_ref()
    }

    /// The index ranges missing now (`[]` before the first packet: the size is unknown).
    pub fn missing_ranges(&self) -> Vec<(u32, u32)> {
        match self.total {
            Some(total) => self.held.missing(total),
            None => Vec::new(),
        }
    }

    /// Whether [`MltReceiver::handle_segment`] would take `p`'s values: a data packet of this
    /// connection, of its value width, with a non-empty range and a place inside the message,
    /// agreeing with the message's size, need and tag once the first packet fixed them. A driver
    /// copies a packet's payload only if this holds, so the values it hands up are exactly the
    /// ones counted.
    pub fn accepts(&self, p: &MltRepr) -> bool {
        if p.is_ack()
            || p.conn != self.conn
            || p.value_bytes != self.cfg.vb() as u8
            || p.start >= p.end
            || p.end > p.total
            || p.pos >= p.total
        {
            return false;
        }
        match self.total {
            None => true,
            Some(t) => t == p.total && self.need_of(p) == self.need && p.msg == self.tag,
        }
    }

    /// The need a data packet names: its `need` (the sender's p), or 0 for the receiver's own.
    fn need_of(&self, p: &MltRepr) -> u32 {
        if p.need > 0 {
            p.need.min(p.total)
        } else {
            self.cfg.need_values(p.total)
        }
    }

    /// Input: a data packet arrived at `now`. ACKs, others' packets and packets that
    /// contradict the message's size, need or value width are ignored
    /// ([`MltReceiver::accepts`]).
    pub fn handle_segment(&mut self, _now: Time, p: &MltRepr) {
        if !self.accepts(p) {
            return;
        }
        // The sender's `need` governs (it abandons only while `need` stays reachable); 0
        // leaves the receiver's own p. Fixed by the first data packet.
        if self.total.is_none() {
            self.total = Some(p.total);
            self.need = self.need_of(p);
            self.tag = p.msg;
            self.held = Held::new(self.cfg.values_per_pkt(), p.total);
        }
        let fresh = self.held.insert(p.start, p.end, p.total);
        // CORRECTNESS: pos < total (accepts), so pos + 1 does not overflow.
        insert(&mut self.places, p.pos, p.pos + 1);
        self.received += fresh;
        self.stats.bytes_received = u64::from(self.received) * u64::from(p.value_bytes);
        let ce = p.ecn == Ecn::Ce;
        if ce {
            self.stats.num_ecn += 1;
        }
        let total = p.total;
        if self.report.is_none() && self.received >= self.need {
            // §3.2 Idea #2: hand the message up with the exact list of missing ranges.
            self.report =
                Some(MltReport { total, delivered: self.received, missing: self.missing_ranges(), tag: self.tag });
            let outcome = if self.received >= total { Outcome::Complete } else { Outcome::Enough };
            self.event = Some(Event::Delivered { outcome });
        }
        // A full queue drops its oldest ACK (the cumulative point and `received` of the newer
        // ones cover it), but never a congestion echo: it moves to the newest ACK, so that a
        // driver that drains seldom (the UDP node reads thousands of datagrams per turn) still
        // tells the sender its packets were marked. The simulator drains after every packet,
        // so its queue never fills.
        let dropped_ece = self.acks.len() >= MAX_PENDING_ACKS
            && self.acks.pop_front().is_some_and(|a| a.flags.contains(Flags::ECE));
        let cum = match self.places.first_key_value() {
            Some((&0, &e)) => e,
            _ => 0,
        };
        let mut flags = Flags::ACK;
        if ce || dropped_ece {
            flags = flags.with(Flags::ECE);
        }
        if self.report.is_some() {
            flags = flags.with(Flags::FIN);
        }
        self.acks.push_back(MltRepr {
            conn: self.conn,
            msg: p.msg,
            seq: p.seq,
            start: p.start,
            end: p.end,
            total,
            cum,
            received: self.received,
            need: 0,
            pos: 0,
            value_bytes: p.value_bytes,
            len: 0,
            flags,
            ecn: Ecn::NotEct,
            prio: 0,
        });
    }

    /// Output: the next ACK to send, if any.
    pub fn poll_transmit(&mut self) -> Option<MltRepr> {
        self.acks.pop_front()
    }

    /// Output: the next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.event.take()
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }
}

/// Insert `[start, end)` (`start < end`) into a set of disjoint, non-adjacent ranges; returns
/// how many of its units were not covered before.
fn insert(ranges: &mut BTreeMap<u32, u32>, start: u32, end: u32) -> u32 {
    let (mut s, mut e) = (start, end);
    let mut covered = 0u32;
    // Every range overlapping or adjacent to [s, e) starts at or before e.
    let touching: Vec<(u32, u32)> =
        ranges.range(..=end).rev().take_while(|(_, &re)| re >= start).map(|(&a, &b)| (a, b)).collect();
    for (a, b) in touching {
        ranges.remove(&a);
        covered += b.min(end).saturating_sub(a.max(start));
        s = s.min(a);
        e = e.max(b);
    }
    ranges.insert(s, e);
    (end - start) - covered
}

/// The gaps of sorted, disjoint, non-adjacent ranges inside `0..total`: the ranges of
/// `0..total` they leave out, in order (themselves disjoint and non-adjacent).
fn complement(ranges: impl IntoIterator<Item = (u32, u32)>, total: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut at = 0u32;
    for (s, e) in ranges {
        if s > at {
            out.push((at, s));
        }
        at = e;
    }
    if at < total {
        out.push((at, total));
    }
    out
}

/// A message's packets at most that [`Held::Packets`] keeps a bit for (2 MB of bits); a larger
/// message keeps the range set.
const MAX_BITMAP_PKTS: u32 = 1 << 24;

/// The values a receiver holds. While every packet has the layout of the receiver's own
/// [`MltConfig::values_per_pkt`] `w` (packet `i` carries `[i·w, min((i+1)·w, N))`, as every
/// sender of the same `mss` sends), one bit per packet: constant time per packet in any send
/// order. The range set it replaced took 275 ns per packet of a 64 MB message sent in a
/// pseudorandom order against 83 in index order (its fragments run into the thousands), a
/// fifth of the real transport's receiving budget per packet. A packet of another layout (a
/// sender with another `mss`) turns it into the range set for good; both give the same
/// answers.
#[derive(Debug, Clone)]
enum Held {
    /// Bit `i`: packet `i` (of `width` values) arrived. Allocated as packets arrive
    /// ([`LazyBits`]): a message's size alone costs the leaf table only.
    // INVARIANT: `bits` covers ceil(N / width) bits, and no bit at or past it is set.
    Packets { width: u32, bits: LazyBits },
    /// Received ranges: start -> end, disjoint and not adjacent.
    // INVARIANT: at most one entry per packet of the message.
    Ranges(BTreeMap<u32, u32>),
}

impl Held {
    /// The empty set of a message of `total` values, expecting packets of `width` values.
    fn new(width: u32, total: u32) -> Held {
        let pkts = if width == 0 { u32::MAX } else { total.div_ceil(width) };
        if pkts <= MAX_BITMAP_PKTS {
            Held::Packets { width, bits: LazyBits::new(pkts as usize) }
        } else {
            Held::Ranges(BTreeMap::new())
        }
    }

    /// Insert the values `[start, end)` (`start < end <= total`); returns how many were not
    /// held before.
    fn insert(&mut self, start: u32, end: u32, total: u32) -> u32 {
        match self {
            Held::Packets { width, bits }
                if start.is_multiple_of(*width) && end == start.saturating_add(*width).min(total) =>
            {
                // CORRECTNESS: start < total, so the packet index < ceil(total / width), inside
                // the bitmap's table.
                if bits.set((start / *width) as usize) {
                    end - start
                } else {
                    0
                }
            }
            Held::Packets { .. } => {
                // Another layout: the held packets become the range set, kept from now on.
                let mut held: BTreeMap<u32, u32> = complement(self.missing(total), total).into_iter().collect();
                let fresh = insert(&mut held, start, end);
                *self = Held::Ranges(held);
                fresh
            }
            Held::Ranges(r) => insert(r, start, end),
        }
    }

    /// The missing values as sorted, disjoint, non-adjacent ranges `[start, end)` of `0..total`.
    fn missing(&self, total: u32) -> Vec<(u32, u32)> {
        let (w, bits) = match self {
            Held::Ranges(r) => return complement(r.iter().map(|(&s, &e)| (s, e)), total),
            Held::Packets { width, bits } => (*width, bits),
        };
        let mut out: Vec<(u32, u32)> = Vec::new();
        let pkts = total.div_ceil(w);
        // PERF: a run of missing packets at a time (the zeros between two ones of a word), not
        // one packet at a time: a message that lost most of its 2^24 packets took 2^24 turns of
        // the loop per call (the mlt_endpoints fuzz target, which asks after every packet, met
        // an input taking 13 s); now at most a few turns per word.
        for (k, word) in bits.words().enumerate() {
            if word == u64::MAX {
                continue;
            }
            // CORRECTNESS: k < ceil(pkts / 64) <= 2^18, so k · 64 + 64 fits a u32.
            let base = k as u32 * 64;
            let mut gaps = !word;
            while gaps != 0 {
                let lo = gaps.trailing_zeros();
                let run = (gaps >> lo).trailing_ones(); // lo + run <= 64
                gaps = if lo + run >= 64 { 0 } else { gaps & (u64::MAX << (lo + run)) };
                let first = base + lo;
                if first >= pkts {
                    break;
                }
                let last = (base + lo + run).min(pkts); // one past the run's last packet
                // CORRECTNESS: first < pkts = ceil(total / w), so first · w < total; the end is
                // computed in 64 bits and capped at total.
                let s = first * w;
                let e = (u64::from(last) * u64::from(w)).min(u64::from(total)) as u32;
                match out.last_mut() {
                    Some(prev) if prev.1 == s => prev.1 = e,
                    _ => out.push((s, e)),
                }
            }
        }
        out
    }
}

#[cfg(test)]
impl Held {
    /// The bitmap of these words (tests).
    fn from_words(width: u32, words: &[u64]) -> Held {
        Held::Packets { width, bits: LazyBits::from_words(words) }
    }
}

#[cfg(test)]
mod held_tests {
    use super::Held;

    /// The missing ranges of a bitmap the slow way: packet by packet.
    fn naive(width: u32, total: u32, bits: &[u64]) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for i in 0..total.div_ceil(width) {
            if bits[(i / 64) as usize] & (1 << (i % 64)) == 0 {
                let (s, e) = (i * width, (i * width).saturating_add(width).min(total));
                match out.last_mut() {
                    Some(prev) if prev.1 == s => prev.1 = e,
                    _ => out.push((s, e)),
                }
            }
        }
        out
    }

    #[test]
    fn a_claimed_size_allocates_only_the_leaf_table() {
        // 2^28 values (a 1 GiB message of floats) in packets of 350: 766,959 packets, 188 leaves.
        let total = 1 << 28;
        let mut h = Held::new(350, total);
        let count = |h: &Held| match h {
            Held::Packets { bits, .. } => (bits.table_len(), bits.leaves_allocated()),
            Held::Ranges(_) => panic!("a bitmap"),
        };
        assert_eq!(count(&h), (188, 0));
        // One packet at the end allocates its leaf alone; what is missing is everything else.
        let last = total.div_ceil(350) - 1;
        assert_eq!(h.insert(last * 350, total, total), total - last * 350);
        assert_eq!(count(&h), (188, 1));
        assert_eq!(h.missing(total), vec![(0, last * 350)]);
        assert_eq!(h.insert(0, 350, total), 350);
        assert_eq!(count(&h), (188, 2));
        assert_eq!(h.missing(total), vec![(350, last * 350)]);
    }

    #[test]
    fn the_bitmaps_missing_ranges_are_its_zero_runs() {
        // Runs inside a word, across words, whole empty and full words, a last partial packet,
        // and widths that make the last packet short; pseudorandom words in between.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for (width, total) in [(1u32, 64u32), (1, 200), (3, 1000), (365, 365 * 130 + 7), (7, 7 * 64 * 3), (1, 1)] {
            let words = total.div_ceil(width).div_ceil(64) as usize;
            for pattern in 0..40 {
                let mut bits: Vec<u64> = (0..words)
                    .map(|k| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        match (pattern + k) % 5 {
                            0 => 0,
                            1 => u64::MAX,
                            2 => x & (x >> 3), // sparse ones: long zero runs
                            _ => x,
                        }
                    })
                    .collect();
                // The invariant: no bit at or past the last packet.
                let pkts = total.div_ceil(width) as usize;
                if !pkts.is_multiple_of(64) {
                    bits[words - 1] &= (1u64 << (pkts % 64)) - 1;
                }
                let held = Held::from_words(width, &bits);
                assert_eq!(held.missing(total), naive(width, total, &bits), "width {width}, total {total}, pattern {pattern}");
            }
        }
    }
}
