//! The receiving side of a TCP transfer: SYN-ACK, in- and out-of-order reassembly (as byte
//! ranges; payload is abstract), cumulative ACKs with RFC 7323 timestamp echo, optional
//! delayed ACKs, DCTCP's per-packet ECN echo (SIGCOMM'10 §3.1 point 2) and PowerTCP's
//! telemetry echo.
//!
//! ACK policy:
//! - Without delayed ACK, every data segment is acknowledged at once, with ECE equal to that
//!   segment's CE mark (DCTCP).
//! - With delayed ACK, an ACK is sent after `count` in-order segments or `timeout` after the
//!   first unacknowledged one; immediately (RFC 5681 §4.2) for out-of-order, duplicate or
//!   gap-filling segments and for the `FIN` segment. DCTCP's two-state machine: when the CE
//!   state of arriving segments changes, the data received so far is acknowledged at once
//!   with ECE = the old state, and later ACKs carry the new state.
//! - Timestamp echo (RFC 7323 §4.3): `TS.Recent` takes the segment's `ts` if the segment
//!   starts at or below the last ACK sent (`Last.ACK.sent`) and its `ts` is not older. So a
//!   cumulative ACK echoes the earliest unacknowledged in-order segment (the one that
//!   advanced `rcv_nxt`, or the first of a delayed pair), an ACK after a hole is filled
//!   echoes the retransmission, and a duplicate ACK for out-of-order data echoes the last
//!   in-order segment.
//! - Telemetry echo (PowerTCP): the stack of the last data segment received is *fresh* until
//!   an ACK takes it. The ACK `poll_transmit` returns takes the fresh stack if there is one
//!   (SYN-ACKs take none), and `take_echo_int` hands it out once. As the driver drains
//!   after every input, that is the stack of the segment that triggered the ACK, or of the
//!   last segment a delayed ACK covers. (A driver that lets two ACKs queue up gets the newest
//!   stack on the first of them and none on the second.)
//! - SACK ([`TcpConfig::sack`]): each ACK carries the blocks the receiver reported most
//!   recently as they stood when the ACK was queued (`sack::SackReport`, RFC 2018 §4), and
//!   `take_sack` hands them out once after the `poll_transmit` that returned the ACK.
//!
//! INVARIANT: `ooo` is sorted, disjoint, non-adjacent and every range starts above
//! `rcv_nxt`; `bytes_received` = `rcv_nxt` + the total length of `ooo`.

use units::Time;
use wire::{Ecn, Flags, IntStack, SackBlocks, SegmentRepr};

use super::sack::SackReport;
use super::timer::{Timer, TimerTable};
use super::{DelayedAck, TcpConfig};
use crate::{Event, Outcome, Stats};

/// An ACK waiting for `poll_transmit`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PendingAck {
    ack: u64,
    ts_echo_ps: u64,
    flags: Flags,
}

/// A two-slot FIFO of pending ACKs: one input can produce at most two (a DCTCP CE-change
/// ACK followed by an immediate ACK), and the driver drains after every input.
#[derive(Clone, Copy, Debug, Default)]
struct AckQueue {
    buf: [PendingAck; 2],
    len: u8,
}

impl AckQueue {
    fn push(&mut self, mut a: PendingAck) {
        if (self.len as usize) < self.buf.len() {
            self.buf[self.len as usize] = a;
            self.len += 1;
        } else {
            // The driver did not drain: the newer cumulative ACK supersedes the last queued
            // one and inherits its ECE, so the mark is not lost (only its count is).
            let last = &mut self.buf[1];
            if last.flags.contains(Flags::ECE) {
                a.flags = a.flags.with(Flags::ECE);
            }
            *last = a;
        }
    }

    fn pop(&mut self) -> Option<PendingAck> {
        if self.len == 0 {
            return None;
        }
        let a = self.buf[0];
        self.buf[0] = self.buf[1];
        self.len -= 1;
        Some(a)
    }
}

/// PowerTCP's telemetry echo state. Boxed in the receiver, so that receivers of other
/// controllers do not carry two stacks.
#[derive(Clone, Copy, Debug, Default)]
struct IntEcho {
    /// Stack of the last data segment received, until an ACK takes it.
    fresh: Option<IntStack>,
    /// Stack of the ACK the last `poll_transmit` returned, until `take_echo_int`.
    out: Option<IntStack>,
}

#[derive(Debug)]
pub(super) struct Receiver {
    conn: u32,
    prio: u8,
    is_ecn_capable: bool,
    delayed_ack: Option<DelayedAck>,
    /// Next byte expected in order (the cumulative ACK).
    rcv_nxt: u64,
    /// Out-of-order byte ranges `[start, end)` above `rcv_nxt`.
    ooo: Vec<(u64, u64)>,
    /// Transfer size, known from the `FIN` segment's end.
    total: Option<u64>,
    is_done: bool,
    /// RFC 7323 TS.Recent.
    ts_recent: u64,
    /// RFC 7323 Last.ACK.sent.
    last_ack_sent: u64,
    /// DCTCP's CE state (SIGCOMM'10 Fig. 10): the CE mark of the last data segment.
    ce_state: bool,
    /// In-order segments received since the last ACK (delayed ACK).
    num_unacked: u32,
    acks: AckQueue,
    /// `Some` iff the connection uses telemetry (PowerTCP).
    echo: Option<Box<IntEcho>>,
    /// `Some` iff the connection uses SACK (boxed for the same reason).
    sack: Option<Box<SackReport>>,
    timers: TimerTable,
    event: Option<Event>,
    stats: Stats,
}

impl Receiver {
    pub(super) fn new(cfg: &TcpConfig, conn: u32) -> Receiver {
        Receiver {
            conn,
            prio: cfg.prio,
            is_ecn_capable: cfg.is_ecn_capable(),
            delayed_ack: cfg.delayed_ack.filter(|d| d.count > 1),
            rcv_nxt: 0,
            ooo: Vec::new(),
            total: None,
            is_done: false,
            ts_recent: 0,
            last_ack_sent: 0,
            ce_state: false,
            num_unacked: 0,
            acks: AckQueue::default(),
            echo: cfg.uses_int().then(Box::default),
            sack: cfg.sack.then(Box::default),
            timers: TimerTable::default(),
            event: None,
            stats: Stats::default(),
        }
    }

    #[inline]
    pub(super) fn stats(&self) -> Stats {
        self.stats
    }

    #[inline]
    pub(super) fn poll_timeout(&self) -> Option<Time> {
        self.timers.earliest()
    }

    #[inline]
    pub(super) fn poll_event(&mut self) -> Option<Event> {
        self.event.take()
    }

    #[inline]
    pub(super) fn wants_int(&self) -> bool {
        self.echo.is_some()
    }

    #[inline]
    pub(super) fn take_echo_int(&mut self) -> Option<IntStack> {
        self.echo.as_deref_mut()?.out.take()
    }

    #[inline]
    pub(super) fn take_sack(&mut self) -> Option<SackBlocks> {
        self.sack.as_deref_mut()?.take()
    }

    /// Queue an ACK (with the SACK blocks as they stand, if the connection uses SACK).
    fn push_ack(&mut self, a: PendingAck) {
        self.acks.push(a);
        if let Some(s) = self.sack.as_deref_mut() {
            s.on_ack_queued(a.flags.contains(Flags::SYN));
        }
    }

    pub(super) fn poll_transmit(&mut self, now: Time) -> Option<SegmentRepr> {
        let a = self.acks.pop()?;
        if let Some(s) = self.sack.as_deref_mut() {
            s.on_ack_sent();
        }
        if let Some(e) = self.echo.as_deref_mut() {
            // An ACK of data carries the fresh stack (the driver drains after every input,
            // so it is the stack of the segment that triggered this ACK); a SYN-ACK none.
            let is_data_ack = !a.flags.contains(Flags::SYN);
            e.out = if is_data_ack { e.fresh.take() } else { None };
        }
        Some(SegmentRepr {
            conn: self.conn,
            seq: 0,
            ack: a.ack,
            len: 0,
            flags: a.flags,
            // DCTCP's ACKs (and SYN-ACK) are ECN-capable, as in Linux (`tcp_ecn_send` keeps ECT
            // on ACKs and retransmissions when the congestion control `tcp_ca_needs_ecn`) and
            // ns-3.44 (`ECN_RESTRICTION_MAP`: every packet type ECT under `DctcpEcn`): a step
            // marker then marks an ACK above K instead of treating it as not ECN-capable. No
            // sender reads an ACK's codepoint, so this changes only what a queue counts as a mark
            // (ns-3 counted 1.46x our marks on S2 before, 1.01x after).
            ecn: if self.is_ecn_capable { Ecn::Ect0 } else { Ecn::NotEct },
            prio: self.prio,
            ts_ps: now.ps(),
            ts_echo_ps: a.ts_echo_ps,
        })
    }

    pub(super) fn handle_timeout(&mut self, now: Time) {
        if self.timers.take_expired(Timer::DelayedAck, now) && self.num_unacked > 0 {
            self.send_ack(self.ce_state);
        }
    }

    /// Queue a cumulative ACK for everything received so far.
    fn send_ack(&mut self, ece: bool) {
        let mut flags = Flags::ACK;
        if ece && self.is_ecn_capable {
            flags = flags.with(Flags::ECE);
        }
        // Once every byte up to the end is here, ACKs carry FIN: the sender of a stream that
        // ended with a bare FIN learns that the end arrived.
        if self.total.is_some_and(|t| self.rcv_nxt >= t) {
            flags = flags.with(Flags::FIN);
        }
        self.push_ack(PendingAck { ack: self.rcv_nxt, ts_echo_ps: self.ts_recent, flags });
        self.last_ack_sent = self.rcv_nxt;
        self.num_unacked = 0;
        self.timers.stop(Timer::DelayedAck);
    }

    /// A segment arrived with the telemetry `int` it collected: a data segment's stack is
    /// the fresh one the next ACK echoes.
    pub(super) fn handle_segment_int(
        &mut self,
        now: Time,
        seg: &SegmentRepr,
        int: Option<&IntStack>,
    ) {
        if let Some(e) = self.echo.as_deref_mut() {
            // The same segments `handle_segment` acknowledges as data.
            if seg.conn == self.conn && seg.len > 0 && !seg.flags.contains(Flags::SYN) {
                e.fresh = int.copied();
            }
        }
        self.handle_segment(now, seg);
    }

    /// A segment arrived.
    pub(super) fn handle_segment(&mut self, now: Time, seg: &SegmentRepr) {
        if seg.conn != self.conn {
            return;
        }
        if seg.flags.contains(Flags::SYN) {
            // Reply SYN-ACK to every SYN: a duplicate SYN means our SYN-ACK was lost.
            self.ts_recent = self.ts_recent.max(seg.ts_ps);
            self.push_ack(PendingAck {
                ack: self.rcv_nxt,
                ts_echo_ps: seg.ts_ps,
                flags: Flags::SYN.with(Flags::ACK),
            });
            return;
        }
        let Some(end) = seg.seq.checked_add(u64::from(seg.len)) else { return };
        if seg.len == 0 {
            // A bare FIN ends a stream whose last byte left before it was closed: it tells the
            // total and is acknowledged at once. Other empty segments need no acknowledgment.
            if seg.flags.contains(Flags::FIN) {
                self.total.get_or_insert(seg.seq);
                self.send_ack(self.ce_state);
                if !self.is_done && self.total.is_some_and(|t| self.rcv_nxt >= t) {
                    self.is_done = true;
                    self.event = Some(Event::Delivered { outcome: Outcome::Complete });
                }
            }
            return;
        }
        let is_ce = seg.ecn == Ecn::Ce;
        if is_ce {
            self.stats.num_ecn += 1;
        }
        let is_fin = seg.flags.contains(Flags::FIN);
        if is_fin && self.total.is_none() {
            self.total = Some(end);
        }

        // DCTCP §3.1 point 2 (delayed-ACK state machine): on a CE-state change, ACK the
        // data so far with the old state before this segment is accounted for.
        let is_ce = is_ce && self.is_ecn_capable;
        if is_ce != self.ce_state {
            if self.num_unacked > 0 {
                self.send_ack(self.ce_state);
            }
            self.ce_state = is_ce;
        }

        // RFC 7323 §4.3 (2): update TS.Recent.
        if seg.seq <= self.last_ack_sent && seg.ts_ps >= self.ts_recent {
            self.ts_recent = seg.ts_ps;
        }

        let before = self.rcv_nxt;
        let had_gap = !self.ooo.is_empty();
        self.stats.bytes_received += self.insert(seg.seq, end);
        if let Some(s) = self.sack.as_deref_mut() {
            s.on_segment(seg.seq, end, self.rcv_nxt, &self.ooo);
        }
        let is_in_order = seg.seq <= before && end > before;

        let must_ack_now = match self.delayed_ack {
            None => true,
            Some(d) => {
                if is_in_order {
                    self.num_unacked += 1;
                }
                // RFC 5681 §4.2: ACK at once for out-of-order or duplicate data (!in-order)
                // and for a segment that fills (part of) a gap; we also ACK the FIN at once
                // so completion is not delayed by the timer.
                !is_in_order || had_gap || is_fin || self.num_unacked >= d.count
            }
        };
        if must_ack_now {
            self.send_ack(self.ce_state);
        } else if !self.timers.is_armed(Timer::DelayedAck) {
            let d = self.delayed_ack.expect("delayed ACK configured");
            self.timers.set(Timer::DelayedAck, now + d.timeout);
        }

        if !self.is_done && self.total.is_some_and(|t| self.rcv_nxt >= t) {
            self.is_done = true;
            self.event = Some(Event::Delivered { outcome: Outcome::Complete });
        }
    }

    /// Record `[start, end)` as received; returns the number of bytes not seen before.
    fn insert(&mut self, start: u64, end: u64) -> u64 {
        let start = start.max(self.rcv_nxt);
        if start >= end {
            return 0;
        }
        // PERF: the common in-order case touches no Vec (and never allocates).
        if start == self.rcv_nxt && !matches!(self.ooo.first(), Some(r) if r.0 <= end) {
            self.rcv_nxt = end;
            return end - start;
        }
        // First range that overlaps or touches [start, end).
        let i = self.ooo.partition_point(|r| r.1 < start);
        let (mut lo, mut hi) = (start, end);
        let mut covered = 0;
        let mut j = i;
        while j < self.ooo.len() && self.ooo[j].0 <= end {
            let (s, e) = self.ooo[j];
            covered += e.min(end).saturating_sub(s.max(start));
            lo = lo.min(s);
            hi = hi.max(e);
            j += 1;
        }
        if j == i {
            self.ooo.insert(i, (lo, hi));
        } else {
            self.ooo[i] = (lo, hi);
            self.ooo.drain(i + 1..j);
        }
        // Advance the cumulative point over a now-contiguous prefix.
        if self.ooo[0].0 <= self.rcv_nxt {
            self.rcv_nxt = self.ooo[0].1;
            self.ooo.remove(0);
        }
        // INVARIANT: every buffered range lies strictly above the cumulative point.
        debug_assert!(!matches!(self.ooo.first(), Some(r) if r.0 <= self.rcv_nxt));
        (end - start) - covered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_ranges_and_counts_distinct_bytes() {
        let mut r = Receiver::new(&TcpConfig::default(), 0);
        assert_eq!(r.insert(10, 20), 10);
        assert_eq!(r.insert(30, 40), 10);
        assert_eq!(r.insert(15, 35), 10);
        assert_eq!(r.ooo, vec![(10, 40)]);
        assert_eq!(r.insert(40, 50), 10, "adjacent ranges merge");
        assert_eq!(r.ooo, vec![(10, 50)]);
        assert_eq!(r.insert(0, 12), 10);
        assert_eq!((r.rcv_nxt, r.ooo.len()), (50, 0));
        assert_eq!(r.insert(0, 50), 0);
        assert_eq!(r.insert(60, 70), 10);
        assert_eq!(r.insert(55, 56), 1);
        assert_eq!(r.ooo, vec![(55, 56), (60, 70)]);
    }

    #[test]
    fn ack_queue_keeps_two_and_merges_ece_on_overflow() {
        let mut q = AckQueue::default();
        let a = |ack, flags| PendingAck { ack, ts_echo_ps: 0, flags };
        q.push(a(1, Flags::ACK));
        q.push(a(2, Flags::ACK.with(Flags::ECE)));
        q.push(a(3, Flags::ACK));
        assert_eq!(q.pop(), Some(a(1, Flags::ACK)));
        assert_eq!(q.pop(), Some(a(3, Flags::ACK.with(Flags::ECE))));
        assert_eq!(q.pop(), None);
    }
}
