//! ExpressPass (Cho et al., SIGCOMM'17): receiver-driven, credit-scheduled transport, and Aeolus
//! (Hu et al., SIGCOMM'20) on top of it: unscheduled packets in the first RTT, made safe by the
//! switches' selective dropping and recovered by a probe.
//!
//! Pipeline position: wrapped by [`crate::Endpoint`]; speaks [`wire::XpassRepr`]. The switch
//! halves of both papers (credit rate limiting per port, ExpressPass §3.1; selective dropping of
//! unscheduled packets, Aeolus §3.2) live in the simulator (`sim::queue::credit_shaper`,
//! `sim::queue::selective_drop`).
//!
//! # The exchange
//! - The sender asks for credits with a `Request` carrying the transfer's size (ExpressPass
//!   §3.1). With Aeolus (`unscheduled_bytes > 0`) it then sends, without waiting, the first
//!   `unscheduled_bytes` of the transfer (at least one packet, at most the transfer) at line
//!   rate, each marked unscheduled (Aeolus §3.1), followed by a `Probe` (Aeolus §4.2).
//! - The receiver, from the first packet it gets, sends credits paced at its current credit
//!   rate, starting at `init_rate` x the maximum: one credit per serialization of a credit and
//!   a full data packet at line rate (84 B per 84 + 1538 B with the defaults, ~5.2% of the
//!   link, ExpressPass §3.1). It stops once it has every byte.
//! - The sender answers each credit with exactly one data packet (a pending retransmission
//!   first, else new data), echoing the credit's number and send time; a credit that finds
//!   nothing to send is not answered (ExpressPass §3.1).
//! - Credit feedback control (ExpressPass §3.2, Algorithm 1): the receiver counts a credit lost
//!   when the echoes skip its number; once per update period (the smoothed RTT of the credit
//!   echoes, the configured `init_rtt` before a sample) it applies Algorithm 1 to the loss
//!   since the last update ([`Feedback::update`]).
//! - Every credit carries the receiver's cumulative in-order bytes: the scheduled data's ACK
//!   (no per-packet ACK competes with credits and data on the links the credit limiter sizes).
//!   The receiver acknowledges each unscheduled packet (its offset) and the probe, and sends one
//!   ACK when it has everything. The probe follows the unscheduled packets on the same path, so
//!   an unscheduled packet not acknowledged when the probe's ACK arrives was lost (selectively
//!   dropped), and is queued for retransmission with the next credits (Aeolus §4.2). Scheduled
//!   packets are not selectively dropped; if one is lost anyway (a full buffer), the
//!   retransmission timeout re-sends every unacknowledged packet with credits and repeats the
//!   request (a receiver that has everything answers a request with its final ACK again).
//! - Once every byte is out and no loss is known (with Aeolus: after the probe's ACK), the
//!   sender sends a credit stop (ExpressPass §3.1) and the receiver pauses; a loss found later,
//!   new stream data or the timeout sends a request that resumes the credits.
//! - Completion is measured at the sender, as for TCP: [`Event::SenderDone`] once every byte is
//!   acknowledged. The receiver emits [`Event::Delivered`] once it has every byte.
//!
//! Limitation: loss detection by probe assumes the unscheduled packets and the probe take one
//! path (per-flow ECMP, as in Aeolus §4.2); with packet spraying a reordered unscheduled packet
//! may be retransmitted needlessly (harmless: duplicates are discarded).
//!
//! INVARIANT: the sender hands out at most one data packet per credit it received, besides the
//! unscheduled packets of the first RTT; the receiver never reports `Delivered` before it has
//! every byte of the transfer; memory per endpoint is bounded by the packets in flight
//! (out-of-order state is capped at [`MAX_OOO_PKTS`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use units::{Bps, Bytes, Dur, Time};
use wire::{Ecn, XpassKind, XpassRepr};

use crate::{Event, Outcome, Stats};

/// The most out-of-order packets a receiver keeps (beyond them it drops what arrives and lets
/// the sender's timeout resend it): bounds memory on untrusted input.
pub const MAX_OOO_PKTS: usize = 1 << 16;

/// "Size unknown yet" in a header: an open stream whose end is not decided.
const SIZE_UNKNOWN: u64 = u64::MAX;

/// Knobs of ExpressPass and Aeolus. Defaults: ExpressPass's packet sizes (84-byte credits and
/// 1538-byte data frames on the wire, §3.1), Algorithm 1's parameters, and no unscheduled
/// packets (plain ExpressPass; the simulator sets `unscheduled_bytes` to the BDP for Aeolus).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ExpressPassConfig {
    /// Payload bytes per data packet. Default 1454 (1538 B on the wire with the header).
    pub mss: u32,
    /// Bytes of every packet besides its payload, on the wire: a credit's size. Default 84,
    /// ExpressPass's minimum Ethernet frame with preamble and gap (§3.1).
    pub header_bytes: u32,
    /// The receiver's line rate: its maximum credit rate is one credit per serialization of
    /// `2 x header_bytes + mss` at this rate (§3.1). Default 10 Gb/s.
    pub line_rate: Bps,
    /// Aeolus: bytes sent unscheduled in the first RTT (one BDP in the paper, §3.1); 0 turns
    /// Aeolus off (plain ExpressPass). Default 0.
    pub unscheduled_bytes: u64,
    /// Algorithm 1's target credit loss. Default 0.125.
    pub target_loss: f64,
    /// Algorithm 1's initial aggressiveness w. Default 1/16.
    pub w_init: f64,
    /// Algorithm 1's smallest w. Default 0.01.
    pub w_min: f64,
    /// Algorithm 1's largest w. Default 0.5.
    pub w_max: f64,
    /// Initial credit rate as a fraction of the maximum (ExpressPass's alpha). Default 1/16.
    pub init_rate: f64,
    /// Update period before the first RTT sample (the network's base RTT in the simulator).
    /// Default 10 us.
    pub init_rtt: Dur,
    /// Retransmission (and re-request) timeout of the sender. Default 1 ms.
    pub rto: Dur,
    /// Timeouts in a row without progress after which the sender gives up. Default 15.
    pub max_retries: u32,
}

impl Default for ExpressPassConfig {
    fn default() -> Self {
        ExpressPassConfig {
            mss: 1454,
            header_bytes: 84,
            line_rate: Bps::from_gbps(10),
            unscheduled_bytes: 0,
            target_loss: 0.125,
            w_init: 1.0 / 16.0,
            w_min: 0.01,
            w_max: 0.5,
            init_rate: 1.0 / 16.0,
            init_rtt: Dur::from_us(10),
            rto: Dur::from_ms(1),
            max_retries: 15,
        }
    }
}

impl ExpressPassConfig {
    /// The gap between two credits at the maximum credit rate (ExpressPass §3.1: a credit per
    /// credit-plus-full-data-packet serialization).
    pub fn max_rate_gap(&self) -> Dur {
        let bytes = u64::from(self.header_bytes).saturating_mul(2).saturating_add(u64::from(self.mss));
        self.line_rate.tx_time(Bytes(bytes)).max(Dur::from_ps(1))
    }
}

/// ExpressPass's credit feedback control (§3.2, Algorithm 1), as a value: the credit rate as a
/// fraction of the maximum, and the aggressiveness `w`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Feedback {
    /// Current credit rate / maximum credit rate.
    pub rate: f64,
    /// Aggressiveness factor.
    pub w: f64,
    /// Whether the last update was an increase.
    pub increasing: bool,
}

impl Feedback {
    /// The state a flow starts in.
    pub fn new(cfg: &ExpressPassConfig) -> Feedback {
        Feedback { rate: cfg.init_rate, w: cfg.w_init, increasing: false }
    }

    /// One update with the credit loss `loss` (in [0, 1]) measured over the last period;
    /// `min_rate` is the floor (one credit per RTT). Algorithm 1:
    /// - loss <= target: if the previous update also increased, `w = (w + w_max) / 2`; then
    ///   `rate = (1 - w) rate + w (1 + target)` (toward the maximum plus the target loss);
    /// - else `rate = rate (1 - loss)(1 + target)` and `w = max(w / 2, w_min)`.
    ///
    /// The rate stays within `[min_rate, 1 + target]`.
    pub fn update(&mut self, cfg: &ExpressPassConfig, loss: f64, min_rate: f64) {
        let target = cfg.target_loss;
        let loss = if loss.is_finite() { loss.clamp(0.0, 1.0) } else { 1.0 };
        if loss <= target {
            if self.increasing {
                self.w = (self.w + cfg.w_max) / 2.0;
            }
            self.rate = (1.0 - self.w) * self.rate + self.w * (1.0 + target);
            self.increasing = true;
        } else {
            self.rate *= (1.0 - loss) * (1.0 + target);
            self.w = (self.w / 2.0).max(cfg.w_min);
            self.increasing = false;
        }
        self.rate = self.rate.clamp(min_rate.min(1.0 + target), 1.0 + target);
    }
}

/// The sending side of one transfer. Call order as for [`crate::tcp::Conn`].
#[derive(Debug)]
pub struct XpassSender {
    conn: u32,
    mss: u32,
    rto: Dur,
    max_retries: u32,
    /// Bytes handed over by the application so far.
    size: u64,
    closed: bool,
    /// Next byte never sent.
    next_new: u64,
    /// End of the unscheduled bytes (0 without Aeolus).
    unsched_end: u64,
    /// Next unscheduled packet to hand out (`< unsched_end` while the burst lasts).
    burst_next: u64,
    request_due: bool,
    probe_due: bool,
    /// The probe's ACK arrived (Aeolus: the unscheduled losses are known).
    probe_acked: bool,
    /// A credit stop is out: the receiver sends no credits until the next request.
    stop_sent: bool,
    /// In-order bytes the receiver acknowledged.
    cum: u64,
    /// Offsets above `cum` acknowledged.
    sacked: BTreeSet<u64>,
    /// Offsets to send again, with the next credits.
    retx: VecDeque<u64>,
    /// Credits received and not yet answered: (number, send time).
    credits: VecDeque<(u32, u64)>,
    rto_at: Option<Time>,
    retries: u32,
    is_done: bool,
    event: Option<Event>,
    stats: Stats,
}

impl XpassSender {
    /// A sender of `size` bytes on connection `conn`, starting at `now`: a request, then (Aeolus)
    /// the unscheduled packets and the probe.
    pub fn new(cfg: &ExpressPassConfig, conn: u32, size: Bytes, now: Time) -> XpassSender {
        let mut s = XpassSender::stream(cfg, conn, now);
        s.size = size.get();
        s.closed = true;
        if cfg.unscheduled_bytes > 0 && s.size > 0 {
            // Aeolus §3.1: up to one BDP in whole packets, at least one packet.
            let mss = u64::from(s.mss);
            let pkts = (cfg.unscheduled_bytes / mss).max(1);
            s.unsched_end = s.size.min(pkts.saturating_mul(mss));
            s.next_new = s.unsched_end;
            s.probe_due = true;
        }
        s
    }

    /// An open stream on connection `conn`: data as the application hands it over with
    /// [`XpassSender::send`], all of it scheduled.
    pub fn stream(cfg: &ExpressPassConfig, conn: u32, now: Time) -> XpassSender {
        XpassSender {
            conn,
            mss: cfg.mss.max(1),
            rto: cfg.rto.max(Dur::from_ps(1)),
            max_retries: cfg.max_retries,
            size: 0,
            closed: false,
            next_new: 0,
            unsched_end: 0,
            burst_next: 0,
            request_due: true,
            probe_due: false,
            probe_acked: false,
            stop_sent: false,
            cum: 0,
            sacked: BTreeSet::new(),
            retx: VecDeque::new(),
            credits: VecDeque::new(),
            rto_at: Some(now + cfg.rto.max(Dur::from_ps(1))),
            retries: 0,
            is_done: false,
            event: None,
            stats: Stats::default(),
        }
    }

    /// Input from the application: `bytes` more. Ignored after `close`.
    pub fn send(&mut self, bytes: u64) {
        if !self.closed {
            self.size = self.size.saturating_add(bytes);
            self.resume_if_needed();
        }
    }

    /// Input from the application: the stream ends here. The receiver learns the size from
    /// the next packet (a request is sent at once).
    pub fn close(&mut self) {
        if !self.closed {
            self.closed = true;
            self.request_due = true;
            self.check_done();
        }
    }

    fn header_size(&self) -> u64 {
        if self.closed {
            self.size
        } else {
            SIZE_UNKNOWN
        }
    }

    /// Input: a packet from the receiver.
    pub fn handle_segment(&mut self, now: Time, seg: &XpassRepr) {
        if seg.conn != self.conn || self.is_done {
            return;
        }
        match seg.kind {
            // Bounded: a credit is answered at the next poll; a driver that holds the sender
            // back for long keeps at most this many (the rest are lost credits).
            XpassKind::Credit => {
                if self.credits.len() < MAX_OOO_PKTS {
                    self.credits.push_back((seg.credit, seg.ts_ps));
                }
                // A credit carries the receiver's in-order bytes: scheduled data's ACK.
                self.on_ack(now, seg);
            }
            XpassKind::Ack | XpassKind::ProbeAck => self.on_ack(now, seg),
            _ => {}
        }
    }

    /// The cumulative `ack` of a credit, ACK or probe ACK; the offset of an ACK; and, for a
    /// probe ACK, the unscheduled packets it shows lost.
    fn on_ack(&mut self, now: Time, seg: &XpassRepr) {
        let mut progress = false;
        if seg.ack > self.cum {
            self.cum = seg.ack.min(self.next_new.max(self.unsched_end));
            self.sacked = self.sacked.split_off(&self.cum);
            progress = true;
        }
        if seg.kind == XpassKind::Ack
            && seg.seq >= self.cum
            && seg.seq < self.next_new.max(self.unsched_end)
            && self.sacked.len() < MAX_OOO_PKTS
        {
            progress |= self.sacked.insert(seg.seq);
        }
        while self.sacked.first() == Some(&self.cum) {
            self.sacked.pop_first();
            self.cum = self.cum.saturating_add(u64::from(self.mss)).min(self.size);
        }
        if seg.kind == XpassKind::ProbeAck {
            // Aeolus §4.2: the probe left after every unscheduled packet; those not
            // acknowledged by now were dropped.
            self.probe_acked = true;
            self.queue_unacked(self.cum, self.burst_next.min(self.unsched_end));
        }
        self.resume_if_needed();
        if progress {
            self.retries = 0;
            self.rto_at = Some(now + self.rto);
        }
        self.check_done();
    }

    /// Queue every sent, unacknowledged packet in `[from, to)` for retransmission (once).
    fn queue_unacked(&mut self, from: u64, to: u64) {
        let mss = u64::from(self.mss);
        // Packets start at multiples of the MSS.
        let mut off = from - from % mss;
        while off < to {
            if off >= self.cum && !self.sacked.contains(&off) && !self.retx.contains(&off) && self.retx.len() < MAX_OOO_PKTS {
                self.retx.push_back(off);
            }
            off = off.saturating_add(mss);
        }
    }

    /// Whether the sender has data it could send with a credit.
    fn has_work(&self) -> bool {
        self.next_new < self.size || self.retx.iter().any(|&o| o >= self.cum && !self.sacked.contains(&o))
    }

    /// After a credit stop, ask for credits again once there is something to send.
    fn resume_if_needed(&mut self) {
        if self.stop_sent && !self.is_done && self.has_work() {
            self.stop_sent = false;
            self.request_due = true;
        }
    }

    fn check_done(&mut self) {
        if !self.is_done && self.closed && self.cum >= self.size {
            self.is_done = true;
            self.rto_at = None;
            self.credits.clear();
            self.retx.clear();
            self.event = Some(Event::SenderDone { outcome: Outcome::Complete, confirmed: true });
        }
    }

    /// Input: time passed. On the retransmission timeout: request again and queue every sent,
    /// unacknowledged packet for retransmission; give up after `max_retries` in a row.
    pub fn handle_timeout(&mut self, now: Time) {
        let Some(at) = self.rto_at else { return };
        if now < at || self.is_done {
            return;
        }
        self.stats.num_rtos += 1;
        self.retries = self.retries.saturating_add(1);
        if self.retries > self.max_retries {
            self.is_done = true;
            self.rto_at = None;
            self.event = Some(Event::SenderDone { outcome: Outcome::GivenUp, confirmed: false });
            return;
        }
        self.request_due = true;
        self.stop_sent = false;
        let sent_end = self.next_new.max(self.burst_next.min(self.unsched_end));
        self.queue_unacked(self.cum, sent_end);
        self.rto_at = Some(now + self.rto.saturating_mul(1u64 << self.retries.min(6)));
    }

    fn packet(&self, kind: XpassKind, now: Time) -> XpassRepr {
        XpassRepr { kind, conn: self.conn, size: self.header_size(), ts_ps: now.ps(), ecn: Ecn::NotEct, ..XpassRepr::default() }
    }

    fn data(&mut self, off: u64, credit: Option<(u32, u64)>, now: Time) -> XpassRepr {
        let len = self.size.saturating_sub(off).min(u64::from(self.mss)) as u32;
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += u64::from(len);
        let (credit, ts_ps) = credit.unwrap_or((0, now.ps()));
        XpassRepr { seq: off, len, credit, ts_ps, unscheduled: credit == 0, ..self.packet(XpassKind::Data, now) }
    }

    /// Output: the next packet, if one may leave now: the request, the unscheduled burst and
    /// its probe (Aeolus), then one data packet per credit received.
    pub fn poll_transmit(&mut self, now: Time) -> Option<XpassRepr> {
        if self.is_done {
            return None;
        }
        if self.request_due {
            self.request_due = false;
            return Some(self.packet(XpassKind::Request, now));
        }
        if self.burst_next < self.unsched_end {
            let off = self.burst_next;
            self.burst_next = off.saturating_add(u64::from(self.mss));
            return Some(self.data(off, None, now));
        }
        if self.probe_due {
            self.probe_due = false;
            return Some(XpassRepr { seq: self.unsched_end, ..self.packet(XpassKind::Probe, now) });
        }
        while let Some(credit) = self.credits.pop_front() {
            // A pending retransmission first, else new data; a credit that finds nothing is
            // not answered (its loss tells the receiver, ExpressPass §3.2).
            while let Some(off) = self.retx.pop_front() {
                if off >= self.cum && !self.sacked.contains(&off) {
                    self.stats.segments_retx += 1;
                    return Some(self.data(off, Some(credit), now));
                }
            }
            if self.next_new < self.size {
                let off = self.next_new;
                self.next_new = off.saturating_add(u64::from(self.mss)).min(self.size);
                return Some(self.data(off, Some(credit), now));
            }
        }
        // ExpressPass §3.1's credit stop: every byte is out and nothing is known lost (with
        // Aeolus, once the probe's ACK told), so further credits would only be wasted. A timeout
        // or a loss found later asks again.
        let losses_known = self.unsched_end == 0 || self.probe_acked;
        if !self.stop_sent && losses_known && !self.has_work() {
            self.stop_sent = true;
            return Some(self.packet(XpassKind::CreditStop, now));
        }
        None
    }

    /// Output: the retransmission deadline, if armed.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.rto_at
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

/// The extra fraction of a credit gap, in [0.01, 0.08), for credit `credit` of connection `conn`:
/// a stable hash (SplitMix64's finalizer), so runs stay deterministic.
pub(crate) fn jitter(conn: u32, credit: u32) -> f64 {
    let mut z = (u64::from(conn) << 32 | u64::from(credit)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    0.01 + 0.07 * (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The receiving side of one transfer: credits, feedback control, ACKs.
#[derive(Debug)]
pub struct XpassReceiver {
    conn: u32,
    cfg: ExpressPassConfig,
    max_gap: Dur,
    size: Option<u64>,
    /// In-order bytes received.
    cum: u64,
    /// Packets above `cum`: offset -> length.
    ooo: BTreeMap<u64, u32>,
    is_crediting: bool,
    next_credit_at: Time,
    /// Number of the next credit (from 1).
    next_credit: u32,
    /// The next credit number an echo should carry.
    echo_next: u32,
    /// Credits accounted (echoed or skipped) and skipped since the last update.
    num_total: u64,
    num_lost: u64,
    last_update: Time,
    srtt: Option<Dur>,
    fb: Feedback,
    out: VecDeque<XpassRepr>,
    is_done: bool,
    event: Option<Event>,
    stats: Stats,
}

impl XpassReceiver {
    /// A receiver for connection `conn`.
    pub fn new(cfg: &ExpressPassConfig, conn: u32) -> XpassReceiver {
        XpassReceiver {
            conn,
            cfg: cfg.clone(),
            max_gap: cfg.max_rate_gap(),
            size: None,
            cum: 0,
            ooo: BTreeMap::new(),
            is_crediting: false,
            next_credit_at: Time::ZERO,
            next_credit: 1,
            echo_next: 1,
            num_total: 0,
            num_lost: 0,
            last_update: Time::ZERO,
            srtt: None,
            fb: Feedback::new(cfg),
            out: VecDeque::new(),
            is_done: false,
            event: None,
            stats: Stats::default(),
        }
    }

    /// The credit feedback state (rate fraction and w).
    pub fn feedback(&self) -> Feedback {
        self.fb
    }

    /// Whether the receiver is sending credits.
    pub fn is_crediting(&self) -> bool {
        self.is_crediting
    }

    fn reply(&mut self, kind: XpassKind, seq: u64, ts_ps: u64) {
        // Bounded: the driver drains after every input; an undrained receiver keeps a few.
        if self.out.len() < 64 {
            self.out.push_back(XpassRepr { kind, conn: self.conn, seq, ack: self.cum, ts_ps, ..XpassRepr::default() });
        }
    }

    fn start(&mut self, now: Time) {
        if !self.is_crediting && !self.is_done {
            self.is_crediting = true;
            self.next_credit_at = now;
            self.last_update = now;
        }
    }

    /// Input: a packet from the sender.
    pub fn handle_segment(&mut self, now: Time, seg: &XpassRepr) {
        if seg.conn != self.conn {
            return;
        }
        if matches!(seg.kind, XpassKind::Request | XpassKind::Data | XpassKind::Probe) && seg.size != SIZE_UNKNOWN {
            self.size = Some(seg.size);
        }
        match seg.kind {
            XpassKind::Request => {
                self.start(now);
                if self.is_done {
                    self.reply(XpassKind::Ack, self.cum, seg.ts_ps);
                }
            }
            XpassKind::Probe => {
                self.start(now);
                self.reply(XpassKind::ProbeAck, seg.seq, seg.ts_ps);
            }
            // Paused until the next request (or data: a lost request is not waited for).
            XpassKind::CreditStop => self.is_crediting = false,
            XpassKind::Data => {
                self.start(now);
                if !seg.unscheduled && seg.credit != 0 {
                    self.on_echo(now, seg.credit, seg.ts_ps);
                }
                let kept = self.on_data(seg.seq, seg.len);
                self.check_done();
                // Unscheduled packets are acknowledged one by one (the probe's ACK then tells
                // the lost ones, Aeolus §4.2); scheduled data only through the credits'
                // cumulative count (ExpressPass carries reliability on credits, no per-packet
                // ACK competes with them on the reverse link), and once at the end.
                if kept && (seg.unscheduled || self.is_done) {
                    self.reply(XpassKind::Ack, seg.seq, seg.ts_ps);
                }
            }
            _ => {}
        }
        self.check_done();
    }

    /// ExpressPass §3.2: the echoes' gaps are lost credits; the credit's send time gives an RTT.
    fn on_echo(&mut self, now: Time, credit: u32, ts_ps: u64) {
        if credit >= self.echo_next && credit < self.next_credit {
            let skipped = u64::from(credit - self.echo_next);
            self.num_lost = self.num_lost.saturating_add(skipped);
            self.num_total = self.num_total.saturating_add(skipped + 1);
            self.echo_next = credit.saturating_add(1);
            if let Some(rtt) = now.ps().checked_sub(ts_ps).map(Dur::from_ps) {
                // RFC 6298-style smoothing with gain 1/8 (ExpressPass's code uses 0.2).
                self.srtt = Some(match self.srtt {
                    None => rtt,
                    Some(s) => Dur::from_ps(s.ps() - s.ps() / 8 + rtt.ps() / 8),
                });
            }
        }
    }

    /// Record `len` bytes at `off`; returns whether to acknowledge (false: refused for memory).
    fn on_data(&mut self, off: u64, len: u32) -> bool {
        let end = off.saturating_add(u64::from(len));
        if end <= self.cum || self.ooo.contains_key(&off) {
            return true; // a duplicate: acknowledge again
        }
        if off > self.cum {
            if self.ooo.len() >= MAX_OOO_PKTS {
                return false;
            }
            self.ooo.insert(off, len);
            self.stats.bytes_received += u64::from(len);
            return true;
        }
        // off <= cum < end: new in-order bytes.
        self.stats.bytes_received += end - self.cum;
        self.cum = end;
        while let Some((&o, &l)) = self.ooo.first_key_value() {
            if o > self.cum {
                break;
            }
            self.ooo.pop_first();
            self.cum = self.cum.max(o.saturating_add(u64::from(l)));
        }
        true
    }

    fn check_done(&mut self) {
        if !self.is_done && self.size.is_some_and(|s| self.cum >= s) {
            self.is_done = true;
            self.is_crediting = false;
            self.event = Some(Event::Delivered { outcome: Outcome::Complete });
        }
    }

    /// The update period: the smoothed credit RTT, else the configured initial RTT.
    fn period(&self) -> Dur {
        self.srtt.unwrap_or(self.cfg.init_rtt).max(Dur::from_ps(1))
    }

    /// Algorithm 1 once per period, with the loss counted since the last update.
    fn maybe_update(&mut self, now: Time) {
        let period = self.period();
        if now.saturating_since(self.last_update) < period || self.num_total == 0 {
            return;
        }
        let loss = self.num_lost as f64 / self.num_total as f64;
        // The floor: one credit per RTT (ExpressPass's code).
        let min_rate = self.max_gap.ps() as f64 / period.ps() as f64;
        self.fb.update(&self.cfg, loss, min_rate);
        self.num_total = 0;
        self.num_lost = 0;
        self.last_update = now;
    }

    /// Input: time passed. Credits are paced in `poll_transmit`, so this is a no-op.
    pub fn handle_timeout(&mut self, _now: Time) {}

    /// Output: an ACK, or the next credit if it is due.
    pub fn poll_transmit(&mut self, now: Time) -> Option<XpassRepr> {
        if let Some(a) = self.out.pop_front() {
            return Some(a);
        }
        if !self.is_crediting || now < self.next_credit_at {
            return None;
        }
        self.maybe_update(now);
        let credit = self.next_credit;
        self.next_credit = self.next_credit.saturating_add(1);
        // ExpressPass paces credits with a random jitter so that flows sharing a credit queue do
        // not synchronize (the authors' code: 1% to 8% longer gaps); sans-I/O, the jitter is a
        // hash of the connection and the credit number, deterministic.
        let gap = self.max_gap.ps() as f64 / self.fb.rate.max(1e-9) * (1.0 + jitter(self.conn, credit));
        self.next_credit_at = now + Dur::from_ps(gap.min(u64::MAX as f64 / 2.0) as u64);
        Some(XpassRepr { kind: XpassKind::Credit, conn: self.conn, credit, ack: self.cum, ts_ps: now.ps(), ..XpassRepr::default() })
    }

    /// Output: when the next credit is due, while crediting.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.is_crediting.then_some(self.next_credit_at)
    }

    /// Output: the next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.event.take()
    }

    /// Counters (`bytes_received`).
    pub fn stats(&self) -> Stats {
        self.stats
    }
}
