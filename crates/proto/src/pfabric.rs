//! pFabric's host side (Alizadeh et al., "pFabric: Minimal Near-optimal Datacenter Transport",
//! SIGCOMM'13) as a sans-I/O state machine: [`PfabricSender`] and [`PfabricReceiver`], one side
//! each of a one-way transfer, and their [`PfabricConfig`].
//!
//! pFabric decouples scheduling from rate control. Scheduling is the switches' (`sim`'s
//! `queue::pfabric`): every data packet carries its flow's priority, here the flow's remaining
//! size (§4.1: "the priority is set to the remaining flow size"), which we take as the bytes
//! the sender has not yet seen acknowledged, cumulatively or selectively, when the packet
//! leaves. Rate control is minimal (§4.2), and this module is exactly it:
//! - Flows start at line rate with a window of one bandwidth-delay product
//!   ([`PfabricConfig::init_cwnd_pkts`]; the simulator's default is the BDP of the scenario's
//!   host rate and base RTT), and send it at once.
//! - Every data packet is acknowledged by its own ACK, which carries the cumulative ACK and the
//!   offset of that packet (selective ACK), so only lost packets are resent. A probe's ACK
//!   carries the cumulative ACK as its offset too, which selects nothing.
//! - The window grows as TCP's does, per packet acknowledged: by one packet below `ssthresh`,
//!   by one packet per window above it (additive increase).
//! - Loss is detected only by a small fixed retransmission timeout ([`PfabricConfig::rto`],
//!   about 3 RTTs; §4.2 and §5.1's 45 µs), which fires if no new packet has been acknowledged
//!   for `rto`: every packet still outstanding is then presumed lost and will be resent, the
//!   window is reset to one packet, and `ssthresh` is half the old window (at least 2). There is
//!   no fast retransmit (with packets of one flow overtaken by more urgent ones, duplicate
//!   ACKs are not a loss signal in pFabric).
//! - After [`PfabricConfig::probe_after_timeouts`] consecutive timeouts (no packet acknowledged
//!   in between), the flow enters probe mode (§4.2): it sends only header-only probes, one per
//!   timeout, until one is acknowledged, then resumes with a window of one packet. This keeps
//!   a starved low-priority flow from flooding a fabric that is busy with more urgent ones.
//!
//! Model: packets are MSS-aligned: packet `i` carries bytes `[i·mss, min((i+1)·mss, size))`;
//! the last one carries `FIN`, which tells the receiver the size. A stream (size unknown until
//! `close`) sends only full packets until it is closed, so a partial packet waits for more data
//! or the close (an application that waits for it to be delivered before closing would wait
//! forever; the simulator's applications send transfers of known size). There is no handshake (§4.2: flows start
//! at line rate) and no RTT estimation (the RTO is fixed).
//!
//! ACKs carry rank 0: they are header-only, so serving them first costs data little, and losing
//! one would cost a timeout. The paper does not fix the ACKs' priority; this is our choice.
//!
//! INVARIANT (bounded memory): the sender's scoreboard holds at most
//! [`PfabricConfig::max_cwnd_pkts`] packets (new data waits while the first unacknowledged
//! packet is that far behind), and the receiver records out-of-order packets only that far
//! ahead of its cumulative ACK, and queues at most [`MAX_PENDING_ACKS`] ACKs.
//!
//! # Call order
//! As for every endpoint (crate docs): after construction and after every `handle_*` call,
//! drain `poll_transmit` until `None`, then read `poll_timeout`, then `poll_event` until `None`.
//! `handle_timeout` before the deadline is a no-op.

use std::collections::VecDeque;

use units::{Dur, Time};
use wire::{Ecn, Flags, PfabricRepr};

use crate::{Event, Outcome, Stats};

/// Knobs of pFabric's rate control (§4.2). Every default is here.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PfabricConfig {
    /// Payload bytes per packet. Default 1460.
    pub mss: u32,
    /// Initial window in packets: one BDP (§4.2). Default 12, the paper's BDP (§5.1: 10 Gb/s
    /// edge links, 14.6 µs RTT, 18.25 KB ≈ 12 packets). The simulator replaces it by the
    /// scenario's own BDP unless the scenario gives one.
    pub init_cwnd_pkts: u32,
    /// Largest window in packets, which also bounds the sender's scoreboard and the receiver's
    /// reordering state. Default 1024.
    pub max_cwnd_pkts: u32,
    /// The fixed retransmission timeout, about 3 RTTs (§4.2). Default 45 µs (§5.1).
    pub rto: Dur,
    /// Consecutive timeouts after which the sender enters probe mode (§4.2). Default 5.
    pub probe_after_timeouts: u32,
}

impl Default for PfabricConfig {
    fn default() -> Self {
        PfabricConfig {
            mss: 1460,
            init_cwnd_pkts: 12,
            max_cwnd_pkts: 1024,
            rto: Dur::from_us(45),
            probe_after_timeouts: 5,
        }
    }
}

/// ACKs a receiver keeps queued for its driver at most; older ones are dropped first (the
/// driver drains after every input, so one is the usual count).
pub const MAX_PENDING_ACKS: usize = 64;

/// What the sender knows of one packet between its first unacknowledged and its next new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Sent, not acknowledged, not presumed lost.
    Out,
    /// Presumed lost at a timeout; waits to be resent.
    Lost,
    /// Acknowledged (selectively, ahead of the cumulative ACK).
    Acked,
}

/// The sending side of one pFabric transfer. See the module docs.
#[derive(Debug, Clone)]
pub struct PfabricSender {
    conn: u32,
    mss: u64,
    cfg_max: u32,
    rto: Dur,
    probe_after: u32,
    /// Bytes the application handed over.
    size: u64,
    closed: bool,
    /// Packet index of the first packet not acknowledged.
    una: u64,
    /// Packet index of the next new packet.
    nxt: u64,
    /// The state of packets `una..nxt`.
    // INVARIANT: `board.len() == nxt - una <= max_cwnd_pkts`; `pipe` and `lost` count its `Out`
    // and `Lost` entries; its front, if any, is not `Acked`.
    board: VecDeque<Slot>,
    pipe: u32,
    lost: u32,
    /// Payload bytes acknowledged (cumulatively or selectively).
    acked_bytes: u64,
    cwnd: u32,
    ssthresh: u32,
    ai_count: u32,
    rto_at: Option<Time>,
    timeouts_in_a_row: u32,
    probing: bool,
    probe_due: bool,
    done: bool,
    event: Option<Event>,
    stats: Stats,
}

impl PfabricSender {
    /// The sender of a transfer of `size` bytes on connection `conn`.
    pub fn new(cfg: &PfabricConfig, conn: u32, size: u64) -> PfabricSender {
        let mut s = PfabricSender::stream(cfg, conn);
        s.size = size;
        s.close();
        s
    }

    /// The sender of an open stream: data comes with [`PfabricSender::send`], the end with
    /// [`PfabricSender::close`].
    pub fn stream(cfg: &PfabricConfig, conn: u32) -> PfabricSender {
        let max = cfg.max_cwnd_pkts.max(1);
        let init = cfg.init_cwnd_pkts.clamp(1, max);
        PfabricSender {
            conn,
            mss: u64::from(cfg.mss.max(1)),
            cfg_max: max,
            rto: cfg.rto.max(Dur::from_ps(1)),
            probe_after: cfg.probe_after_timeouts.max(1),
            size: 0,
            closed: false,
            una: 0,
            nxt: 0,
            board: VecDeque::new(),
            pipe: 0,
            lost: 0,
            acked_bytes: 0,
            cwnd: init,
            ssthresh: u32::MAX,
            ai_count: 0,
            rto_at: None,
            timeouts_in_a_row: 0,
            probing: false,
            probe_due: false,
            done: false,
            event: None,
            stats: Stats::default(),
        }
    }

    /// Input from the application: `bytes` more to send. Ignored after `close`.
    pub fn send(&mut self, bytes: u64) {
        if !self.closed {
            self.size = self.size.saturating_add(bytes);
        }
    }

    /// Input from the application: no more data. Idempotent.
    pub fn close(&mut self) {
        self.closed = true;
        self.check_done();
    }

    /// Whether the sender is in probe mode (§4.2).
    pub fn is_probing(&self) -> bool {
        self.probing
    }

    /// Current window in packets.
    pub fn cwnd_pkts(&self) -> u32 {
        self.cwnd
    }

    /// The flow's remaining size: the priority its next packet carries (§4.1).
    pub fn remaining(&self) -> u64 {
        self.size.saturating_sub(self.acked_bytes)
    }

    /// Number of packets in the transfer so far (the last may be partial once closed).
    fn num_pkts(&self) -> u64 {
        if self.closed {
            self.size.div_ceil(self.mss)
        } else {
            self.size / self.mss
        }
    }

    fn pkt_len(&self, idx: u64) -> u64 {
        let start = idx.saturating_mul(self.mss);
        self.size.saturating_sub(start).min(self.mss)
    }

    fn data(&self, idx: u64) -> PfabricRepr {
        let seq = idx.saturating_mul(self.mss);
        let len = self.pkt_len(idx);
        let is_last = self.closed && seq.saturating_add(len) >= self.size;
        PfabricRepr {
            conn: self.conn,
            seq,
            ack: 0,
            // CORRECTNESS: len <= mss, which is a u32.
            len: len as u32,
            flags: if is_last { Flags::FIN } else { Flags::NONE },
            ecn: Ecn::NotEct,
            prio: 0,
            rank: self.remaining(),
        }
    }

    /// The scoreboard's invariant (see the field), checked in debug builds.
    fn check_board(&self) {
        debug_assert_eq!(self.board.len() as u64, self.nxt - self.una);
        debug_assert!(self.board.len() <= self.cfg_max as usize);
        debug_assert_eq!(self.pipe as usize, self.board.iter().filter(|s| **s == Slot::Out).count());
        debug_assert_eq!(self.lost as usize, self.board.iter().filter(|s| **s == Slot::Lost).count());
        debug_assert!(self.board.front() != Some(&Slot::Acked));
    }

    fn arm(&mut self, now: Time) {
        if self.rto_at.is_none() {
            self.rto_at = Some(now.saturating_add(self.rto));
        }
    }

    /// Output: the next packet to send at `now`, if any.
    pub fn poll_transmit(&mut self, now: Time) -> Option<PfabricRepr> {
        if self.done {
            return None;
        }
        if self.probing {
            // §4.2 probe mode: header-only packets, one per timeout, until one is acknowledged.
            if !self.probe_due {
                return None;
            }
            self.probe_due = false;
            self.arm(now);
            return Some(PfabricRepr { len: 0, flags: Flags::NONE, ..self.data(self.una) });
        }
        if self.pipe >= self.cwnd {
            return None;
        }
        let idx = if self.lost > 0 {
            // Selective retransmission: the earliest packet presumed lost.
            let i = self.board.iter().position(|s| *s == Slot::Lost)?;
            self.board[i] = Slot::Out;
            self.lost -= 1;
            self.stats.segments_retx += 1;
            self.una + i as u64
        } else if self.nxt < self.num_pkts() && self.board.len() < self.cfg_max as usize {
            self.board.push_back(Slot::Out);
            self.nxt += 1;
            self.nxt - 1
        } else {
            return None;
        };
        self.pipe += 1;
        self.arm(now);
        self.check_board();
        let p = self.data(idx);
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += u64::from(p.len);
        Some(p)
    }

    /// Mark packet `idx` acknowledged; returns whether it was news.
    fn ack_pkt(&mut self, idx: u64) -> bool {
        let Some(i) = idx.checked_sub(self.una).filter(|&i| i < self.board.len() as u64) else { return false };
        let slot = &mut self.board[i as usize];
        match *slot {
            Slot::Acked => return false,
            Slot::Out => self.pipe -= 1,
            Slot::Lost => self.lost -= 1,
        }
        *slot = Slot::Acked;
        self.acked_bytes = self.acked_bytes.saturating_add(self.pkt_len(idx));
        true
    }

    /// TCP's window growth per packet acknowledged (§4.2: "additive increase").
    fn grow(&mut self) {
        if self.cwnd < self.ssthresh {
            self.cwnd = self.cwnd.saturating_add(1);
        } else {
            self.ai_count += 1;
            if self.ai_count >= self.cwnd {
                self.ai_count = 0;
                self.cwnd = self.cwnd.saturating_add(1);
            }
        }
        self.cwnd = self.cwnd.min(self.cfg_max);
    }

    /// Input: an ACK from the receiver arrived at `now`. Others' packets and data are ignored.
    pub fn handle_segment(&mut self, now: Time, ack: &PfabricRepr) {
        if self.done || ack.conn != self.conn || !ack.flags.contains(Flags::ACK) {
            return;
        }
        let mut newly = 0u32;
        // Selective: the one packet this ACK answers (an MSS-aligned offset, else not ours).
        // CORRECTNESS: the packet at the cumulative ACK is by definition missing, so an ACK
        // whose `seq` equals its `ack` selects nothing: it answers a header-only probe.
        if ack.seq != ack.ack && ack.seq.is_multiple_of(self.mss) && self.ack_pkt(ack.seq / self.mss) {
            newly += 1;
        }
        // Cumulative: every packet wholly below `ack` (the last one once the stream is closed).
        let upto = if self.closed && ack.ack >= self.size { self.nxt } else { (ack.ack / self.mss).min(self.nxt) };
        for idx in self.una..upto {
            if self.ack_pkt(idx) {
                newly += 1;
            }
        }
        while self.board.front() == Some(&Slot::Acked) {
            self.board.pop_front();
            self.una += 1;
        }
        if self.probing {
            // §4.2: a probe was acknowledged (or a late ACK came): leave probe mode with a window
            // of one packet; everything outstanding was presumed lost at the timeouts.
            self.probing = false;
            self.probe_due = false;
            self.timeouts_in_a_row = 0;
            self.rto_at = None;
        }
        if newly > 0 {
            self.timeouts_in_a_row = 0;
            for _ in 0..newly {
                self.grow();
            }
            // Progress restarts the timer; nothing outstanding stops it.
            self.rto_at = (self.pipe > 0).then(|| now.saturating_add(self.rto));
        }
        self.check_board();
        self.check_done();
    }

    fn check_done(&mut self) {
        if !self.done && self.closed && self.una >= self.num_pkts() {
            self.done = true;
            self.rto_at = None;
            self.event = Some(Event::SenderDone { outcome: Outcome::Complete, confirmed: true });
        }
    }

    /// Input: time passed. Fires the retransmission timeout if it is due; otherwise a no-op.
    pub fn handle_timeout(&mut self, now: Time) {
        match self.rto_at {
            Some(at) if at <= now && !self.done => {}
            _ => return,
        }
        self.rto_at = None;
        self.stats.num_rtos += 1;
        self.timeouts_in_a_row = self.timeouts_in_a_row.saturating_add(1);
        // §4.2: what is still outstanding after a whole RTO without progress is presumed lost
        // (SACKs told us what arrived) and will be resent; the window restarts from one packet.
        for s in self.board.iter_mut() {
            if *s == Slot::Out {
                *s = Slot::Lost;
            }
        }
        self.lost += self.pipe;
        self.pipe = 0;
        self.ssthresh = (self.cwnd / 2).max(2);
        self.cwnd = 1;
        self.ai_count = 0;
        if self.timeouts_in_a_row >= self.probe_after {
            self.probing = true;
        }
        self.probe_due = self.probing;
        self.check_board();
    }

    /// Output: when `handle_timeout` must next be called, if ever.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.rto_at
    }

    /// Output: the next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.event.take()
    }

    /// Counters, with the current window in bytes.
    pub fn stats(&self) -> Stats {
        Stats { cwnd: u64::from(self.cwnd).saturating_mul(self.mss), ..self.stats }
    }
}

/// The receiving side of one pFabric transfer: acknowledges every data packet and probe with
/// its own ACK (cumulative and selective). See the module docs.
#[derive(Debug, Clone)]
pub struct PfabricReceiver {
    conn: u32,
    mss: u64,
    /// Packets received in order.
    nxt: u64,
    /// Whether packet `nxt + 1 + i` arrived (at most `max_cwnd_pkts` entries).
    ahead: VecDeque<bool>,
    max_ahead: usize,
    /// The transfer's size, once the `FIN` packet arrived.
    total: Option<u64>,
    acks: VecDeque<PfabricRepr>,
    delivered: bool,
    event: Option<Event>,
    stats: Stats,
}

impl PfabricReceiver {
    /// The receiver of connection `conn`.
    pub fn new(cfg: &PfabricConfig, conn: u32) -> PfabricReceiver {
        PfabricReceiver {
            conn,
            mss: u64::from(cfg.mss.max(1)),
            nxt: 0,
            ahead: VecDeque::new(),
            max_ahead: cfg.max_cwnd_pkts.max(1) as usize,
            total: None,
            acks: VecDeque::new(),
            delivered: false,
            event: None,
            stats: Stats::default(),
        }
    }

    /// The next byte expected in order.
    fn cum_bytes(&self) -> u64 {
        let b = self.nxt.saturating_mul(self.mss);
        self.total.map_or(b, |t| b.min(t))
    }

    /// Input: a data packet or probe arrived. ACKs and others' packets are ignored.
    pub fn handle_segment(&mut self, _now: Time, p: &PfabricRepr) {
        if p.conn != self.conn || p.flags.contains(Flags::ACK) {
            return;
        }
        // The offset the ACK selects: the packet's, unless it was too far ahead to record (then
        // the cumulative ACK's, which selects nothing: the sender must not take it as arrived).
        let mut select = p.seq;
        if p.len > 0 && p.seq.is_multiple_of(self.mss) {
            let idx = p.seq / self.mss;
            if p.flags.contains(Flags::FIN) && self.total.is_none() {
                self.total = Some(p.seq.saturating_add(u64::from(p.len)));
            }
            let fresh = if idx == self.nxt {
                self.nxt += 1;
                // `ahead[0]` now describes packet `nxt`: advance over what arrived early.
                while let Some(arrived) = self.ahead.pop_front() {
                    if !arrived {
                        break;
                    }
                    self.nxt += 1;
                }
                true
            } else if let Some(i) = idx.checked_sub(self.nxt + 1).filter(|&i| i < self.max_ahead as u64) {
                let i = i as usize;
                if self.ahead.len() <= i {
                    self.ahead.resize(i + 1, false);
                }
                !std::mem::replace(&mut self.ahead[i], true)
            } else if idx < self.nxt {
                // A duplicate: acknowledged again (its first ACK may have been lost).
                false
            } else {
                select = u64::MAX;
                false
            };
            if fresh {
                self.stats.bytes_received = self.stats.bytes_received.saturating_add(u64::from(p.len));
            }
        }
        if self.acks.len() >= MAX_PENDING_ACKS {
            self.acks.pop_front();
        }
        let cum = self.cum_bytes();
        self.acks.push_back(PfabricRepr {
            conn: self.conn,
            seq: if select == u64::MAX { cum } else { select },
            ack: cum,
            len: 0,
            flags: Flags::ACK,
            ecn: Ecn::NotEct,
            prio: 0,
            rank: 0,
        });
        if !self.delivered && self.total.is_some_and(|t| self.cum_bytes() >= t) {
            self.delivered = true;
            self.event = Some(Event::Delivered { outcome: Outcome::Complete });
        }
    }

    /// Output: the next ACK to send, if any.
    pub fn poll_transmit(&mut self) -> Option<PfabricRepr> {
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
