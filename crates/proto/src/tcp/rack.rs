//! RACK-TLP (RFC 8985) for the TCP sender ([`TcpConfig::rack_tlp`](super::TcpConfig::rack_tlp),
//! with SACK): loss detection by time, and the tail-loss probe.
//!
//! **RACK** (§6): each segment's last transmission time is kept; when an ACK delivers a
//! segment (cumulatively or by a SACK block that reports it for the first time), `RACK.xmit_ts`
//! becomes the latest transmission time of a delivered segment and `RACK.rtt` that segment's
//! RTT. A segment not delivered and sent before it is lost once `RACK.rtt + reo_wnd` has passed
//! since it was sent; one not yet that old arms the reordering timer. `reo_wnd` is
//! `min_RTT / 4` (bounded by SRTT), or 0 in loss recovery or with `DupThresh` segments SACKed
//! while no reordering was seen (§6.2 step 4; no DSACK, so the multiplier stays 1).
//!
//! **TLP** (§7): with data outstanding, outside loss recovery and with nothing SACKed, a probe
//! is due two smoothed RTTs after the last new data left or the last ACK of new data (plus
//! the receiver's delayed-ACK timeout when one segment is in flight). It sends one new
//! segment if there is one, else the last segment again, whatever the window, then the
//! retransmission timer restarts. Its ACK (a SACK of the probe) lets RACK find the rest of a
//! lost tail in round trips instead of a timeout. A probe that repaired a loss (its ACK
//! goes beyond it, no DSACK here) reduces the window once, as Linux's
//! `tcp_process_tlp_ack` does.
//!
//! Where this differs from RFC 8985, on purpose:
//! - There is no probe before the first RTT sample, nor one that the retransmission timer
//!   would precede (the RFC then sends the probe at the timer's time instead of the timeout,
//!   which delays the timeout's go-back-N by one RTO); MLT's `tail_probe` does the same.
//! - RACK's finding is one boundary in sequence space, as RFC 6675's `IsLost()` is kept here
//!   (`Scoreboard::rack_lost`): every byte not SACKed below the highest segment it finds lost
//!   is lost. Segments are sent in sequence order, so an original transmission below a lost
//!   one was sent earlier and is lost too. Retransmissions are watched apart, in the order
//!   they left: one RACK finds lost again is sent once more in fast recovery, ahead of
//!   `NextSeg()` (RFC 6675's `HighRxt` would not send it again); `pipe` keeps counting it
//!   until its ACK (RFC 6675's `SetPipe()`, an overestimate that slows the recovery a little).
//!   After a timeout, go-back-N's own retransmissions are left to the timer, as without RACK.
//!   RFC 6675's `DupThresh` rule stays beside RACK's.
//! - Transmission times are kept per MSS-sized slot of sequence space (the sender's segments
//!   end at MSS multiples): a stream's segment cut short at `written` shares its slot with the
//!   segment that continues it, and the slot keeps the later time.
//! - RFC 8985 §6.2 step 2's timestamp check of a retransmitted segment's ACK is replaced by
//!   its other test alone (a retransmission delivered sooner than `min_RTT` after it left is
//!   taken for the original's delivery and ignored; the receiver echoes the last in-order
//!   segment's timestamp for out-of-order data, as RFC 7323 §4.3 says, so the timestamp test
//!   would ignore every SACKed retransmission). And a probe that resent a segment is exempt
//!   from it: the probe is the last segment, often shorter than the MSS, whose round trip at
//!   datacenter rates is shorter than the minimum measured on full segments (by its
//!   serialization at every hop), so the test would ignore the probe's SACK and leave the
//!   lost tail to the timer; and its ambiguity is small (the probe leaves two smoothed RTTs
//!   after the last segment with no ACK since).
//!
//! INVARIANT: `sent` holds one entry per slot from `base` (the slot of `snd_una`) up to the
//! slot of the highest byte sent.

use std::collections::VecDeque;

use units::{Dur, Time};

/// One MSS-sized slot of sequence space that was sent.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// Its last transmission.
    at: Time,
    /// It was sent more than once.
    retx: bool,
    /// Its last transmission was a tail-loss probe.
    probe: bool,
    /// An ACK reported it delivered (SACKed; cumulatively acknowledged slots are dropped).
    delivered: bool,
}

/// The probe a PTO asked for, sent by the next `poll_transmit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Probe {
    /// The next new segment.
    New,
    /// The segment `[seq, seq + len)` again (the last one sent).
    Again { seq: u64, len: u64 },
}

/// RACK-TLP state of one sender (module docs).
#[derive(Clone, Debug)]
pub(super) struct Rack {
    mss: u64,
    /// The receiver's delayed-ACK timeout, if it delays ACKs (TLP's `max_ack_delay`).
    max_ack_delay: Dur,
    /// Slots from `base` on (module INVARIANT).
    sent: VecDeque<Slot>,
    base: u64,
    /// Retransmissions not yet known delivered or lost, in the order they left: `(slot, its
    /// transmission time)`; an entry whose slot was delivered, acknowledged or sent again since
    /// is stale and skipped.
    watch: VecDeque<(u64, Time)>,
    /// Retransmitted slots RACK found lost again, to be sent once more in fast recovery.
    resend: VecDeque<u64>,
    /// `RACK.xmit_ts` and `RACK.end_seq`: the latest transmission delivered so far.
    xmit: Option<(Time, u64)>,
    /// `RACK.rtt`: the RTT of that transmission.
    rtt: Dur,
    /// `RACK.min_RTT`, from the RTTs of delivered segments.
    min_rtt: Option<Dur>,
    /// `RACK.fack`: the highest end of a delivered segment.
    fack: u64,
    /// `RACK.reordering_seen`: a segment was delivered below `fack` without a retransmission.
    reordering_seen: bool,
    /// Loss recovery after a retransmission timeout, until `snd_una` reaches `recover`.
    pub(super) in_rto_recovery: bool,
    /// The reordering timer (§6.3): detection runs again at this time.
    pub(super) reorder_at: Option<Time>,
    /// The probe timeout (§7.2).
    pub(super) pto_at: Option<Time>,
    /// A probe due at the next `poll_transmit`.
    pub(super) probe: Option<Probe>,
    /// `TLP.end_seq`: `snd_max` after the outstanding probe; `None` if there is none.
    pub(super) tlp_end: Option<u64>,
    /// `TLP.is_retrans`: the outstanding probe resent a segment.
    pub(super) tlp_is_retx: bool,
}

/// RFC 8985 `RACK_sent_after(t1, seq1, t2, seq2)`: `(t1, seq1)` left after `(t2, seq2)`.
#[inline]
fn sent_after(t1: Time, seq1: u64, t2: Time, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Rack {
    /// State for a sender of `mss`-byte segments whose receiver delays its ACKs by up to
    /// `max_ack_delay` (zero if it does not).
    pub(super) fn new(mss: u32, max_ack_delay: Dur) -> Rack {
        Rack {
            mss: u64::from(mss.max(1)),
            max_ack_delay,
            sent: VecDeque::new(),
            base: 0,
            watch: VecDeque::new(),
            resend: VecDeque::new(),
            xmit: None,
            rtt: Dur::ZERO,
            min_rtt: None,
            fack: 0,
            reordering_seen: false,
            in_rto_recovery: false,
            reorder_at: None,
            pto_at: None,
            probe: None,
            tlp_end: None,
            tlp_is_retx: false,
        }
    }

    /// The earliest of the two timers.
    #[inline]
    pub(super) fn earliest(&self) -> Option<Time> {
        match (self.reorder_at, self.pto_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Disarm both timers and forget a pending probe (the transfer ended).
    pub(super) fn stop(&mut self) {
        self.reorder_at = None;
        self.pto_at = None;
        self.probe = None;
    }

    /// Where slot `k` ends, the transfer having `written` bytes.
    #[inline]
    fn slot_end(&self, k: u64, written: u64) -> u64 {
        k.saturating_add(1).saturating_mul(self.mss).min(written)
    }

    /// A segment `[seq, seq + len)` left at `now` (`is_retx`: not for the first time).
    pub(super) fn on_send(&mut self, seq: u64, len: u64, now: Time, is_retx: bool) {
        if len == 0 {
            return;
        }
        let k = seq / self.mss;
        if self.sent.is_empty() {
            self.base = k;
        }
        let Some(i) = k.checked_sub(self.base) else { return };
        // Slots are sent in order the first time: at most one new slot per segment.
        while self.sent.len() as u64 <= i {
            self.sent.push_back(Slot { at: now, retx: false, probe: false, delivered: false });
        }
        let slot = &mut self.sent[i as usize];
        slot.at = now;
        slot.retx |= is_retx;
        slot.probe = false;
        if is_retx {
            self.watch.push_back((k, now));
        }
    }

    /// The segment just sent at `seq` (by `on_send`) was a tail-loss probe.
    pub(super) fn mark_probe(&mut self, seq: u64) {
        let i = (seq / self.mss).checked_sub(self.base);
        if let Some(slot) = i.and_then(|i| self.sent.get_mut(i as usize)) {
            slot.probe = true;
        }
    }

    /// Every byte below `ack` is acknowledged: the slots it covers are delivered (those not
    /// SACKed before count for RACK) and dropped.
    pub(super) fn on_cumulative_ack(&mut self, ack: u64, written: u64, now: Time) {
        while let Some(&slot) = self.sent.front() {
            let end = self.slot_end(self.base, written);
            if end > ack {
                break;
            }
            if !slot.delivered {
                self.deliver(slot, end, now);
            }
            self.sent.pop_front();
            self.base += 1;
        }
    }

    /// `[s, e)` was SACKed for the first time: each slot whose last byte it holds is
    /// delivered.
    pub(super) fn on_sacked(&mut self, s: u64, e: u64, written: u64, now: Time) {
        if s >= e {
            return;
        }
        let first = (s / self.mss).max(self.base);
        let last = (e - 1) / self.mss;
        for k in first..=last {
            let end = self.slot_end(k, written);
            if end <= s || end > e {
                continue;
            }
            let Some(slot) = self.sent.get_mut((k - self.base) as usize) else { break };
            if slot.delivered {
                continue;
            }
            slot.delivered = true;
            let slot = *slot;
            self.deliver(slot, end, now);
        }
    }

    /// RFC 8985 §6.2 steps 2-3 for one delivered segment ending at `end`.
    fn deliver(&mut self, slot: Slot, end: u64, now: Time) {
        let rtt = now.saturating_since(slot.at);
        // Step 2: a retransmission delivered sooner than min_RTT after it left was most
        // likely the original's delivery; not a probe (module docs).
        if slot.retx && !slot.probe && self.min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        // Step 3: reordering is a segment delivered below the highest one delivered, never
        // retransmitted.
        if end > self.fack {
            self.fack = end;
        } else if end < self.fack && !slot.retx {
            self.reordering_seen = true;
        }
        // Step 2 (in ascending order of transmission, as Linux's `tcp_rack_advance`): RACK
        // follows the most recently sent segment delivered.
        if self.xmit.is_none_or(|(t, e)| sent_after(slot.at, end, t, e)) {
            self.xmit = Some((slot.at, end));
            self.rtt = rtt;
        }
    }

    /// RFC 8985 §6.2 step 4: the reordering window.
    pub(super) fn reo_wnd(&self, in_recovery: bool, dupthresh_sacked: bool, srtt: Option<Dur>) -> Dur {
        if !self.reordering_seen && (in_recovery || self.in_rto_recovery || dupthresh_sacked) {
            return Dur::ZERO;
        }
        let quarter = Dur(self.min_rtt.map_or(0, Dur::ps) / 4);
        srtt.map_or(quarter, |s| quarter.min(s))
    }

    /// RFC 8985 §6.2 step 5 and §6.3 (`RACK_detect_loss_and_arm_timer`): from `from` (the
    /// higher of `snd_una` and the boundary found before), the segments sent before RACK's
    /// that have waited `RACK.rtt + reo_wnd` are lost. Returns the new boundary (module
    /// docs; `from` if nothing more is lost) and arms or disarms the reordering timer.
    pub(super) fn detect(&mut self, now: Time, from: u64, written: u64, reo_wnd: Dur) -> u64 {
        self.reorder_at = None;
        let Some((rack_at, rack_end)) = self.xmit else { return from };
        let wait = Dur(self.rtt.ps().saturating_add(reo_wnd.ps()));
        let mut boundary = from;
        let mut timeout: Option<Time> = None;
        let first = (from / self.mss).max(self.base);
        for k in first..self.base + self.sent.len() as u64 {
            let slot = self.sent[(k - self.base) as usize];
            if slot.delivered {
                continue;
            }
            let end = self.slot_end(k, written);
            if !sent_after(rack_at, rack_end, slot.at, end) {
                // Sent once and after RACK's segment: so was every slot above it, unless
                // retransmitted since.
                if !slot.retx {
                    break;
                }
                continue;
            }
            let deadline = slot.at.saturating_add(wait);
            if deadline <= now {
                boundary = boundary.max(end);
            } else {
                // The RFC's `timeout = max(timeout, remaining)`.
                timeout = Some(timeout.map_or(deadline, |t| t.max(deadline)));
            }
        }
        // Retransmissions (RFC 8985's "each segment", sent again): in the order they left, so
        // the lost ones come first; each lost one is sent once more in fast recovery.
        while let Some(&(k, at)) = self.watch.front() {
            let live = k.checked_sub(self.base).and_then(|i| self.sent.get(i as usize)).is_some_and(|s| !s.delivered && s.at == at);
            if !live {
                self.watch.pop_front();
                continue;
            }
            let end = self.slot_end(k, written);
            if !sent_after(rack_at, rack_end, at, end) || at.saturating_add(wait) > now {
                break;
            }
            self.watch.pop_front();
            self.resend.push_back(k);
        }
        for &(k, at) in &self.watch {
            let end = self.slot_end(k, written);
            if !sent_after(rack_at, rack_end, at, end) {
                break;
            }
            let deadline = at.saturating_add(wait);
            timeout = Some(timeout.map_or(deadline, |t| t.max(deadline)));
        }
        self.reorder_at = timeout;
        boundary
    }

    /// The next retransmission RACK found lost again and still outstanding, as
    /// `(seq, slot end)`: for the sender to send once more.
    pub(super) fn next_resend(&mut self, snd_una: u64, written: u64) -> Option<(u64, u64)> {
        while let Some(k) = self.resend.pop_front() {
            let seq = k.saturating_mul(self.mss);
            let live = k.checked_sub(self.base).and_then(|i| self.sent.get(i as usize)).is_some_and(|s| !s.delivered);
            if live && seq >= snd_una {
                return Some((seq, self.slot_end(k, written)));
            }
        }
        None
    }

    /// RFC 8985 §7.2 `TLP_calc_PTO` from `now`: `None` if there is no RTT sample yet or the
    /// retransmission timer (`rto_at`) comes first (module docs).
    pub(super) fn pto(&self, now: Time, srtt: Option<Dur>, one_segment: bool, rto_at: Option<Time>) -> Option<Time> {
        let mut pto = srtt?.saturating_double();
        if one_segment {
            pto = Dur(pto.ps().saturating_add(self.max_ack_delay.ps()));
        }
        let at = now.saturating_add(pto);
        rto_at.is_none_or(|r| at < r).then_some(at)
    }

    /// A retransmission timeout: RFC 8985 §7.1's `TLP_init`, and loss recovery by the timer
    /// begins.
    pub(super) fn on_rto(&mut self) {
        self.on_fast_recovery();
        self.reorder_at = None;
        self.in_rto_recovery = true;
        self.watch.clear();
        self.resend.clear();
    }

    /// Fast recovery begins: RFC 8985 §7.1's `TLP_init`.
    pub(super) fn on_fast_recovery(&mut self) {
        self.tlp_end = None;
        self.tlp_is_retx = false;
        self.probe = None;
        self.pto_at = None;
    }

    #[cfg(test)]
    pub(super) fn slots(&self) -> usize {
        self.sent.len()
    }
}
