//! The sending side of a TCP transfer: optional SYN, windowed data, NewReno loss recovery
//! (RFC 5681, RFC 6582), the RFC 6298 retransmission timer with go-back-N, and the
//! congestion controller's callbacks (DCTCP, NewReno or PowerTCP, which also gets the
//! telemetry stack each ACK echoes).
//!
//! Pacing: if the controller has a [`CongestionControl::pacing_rate`] (PowerTCP), a new or
//! go-back-N data segment leaves no earlier than `next_send`, and each one pushes
//! `next_send` to `max(next_send, now) + len/rate`, so pacing never banks credit across idle
//! periods. Fast-retransmit and partial-ACK retransmissions are not paced (they replace a
//! segment that left the network). An application's rate cap (`set_rate_cap`) paces the same
//! way at the lower of the two rates. Without a pacing rate the `Pace` timer is never armed.
//!
//! Window validation (RFC 7661 §4.3, Linux `tcp_is_cwnd_limited`): an ACK grows the window
//! only if the window is what limits the sender. A driver that holds the sender back (stops
//! polling while the window still has room, see the crate docs) would otherwise inflate it
//! without bound at a rate the window never limited. `is_held` records whether the last
//! `poll_transmit` returned a segment with room left in the window for another one. A held
//! sender's window still grows in slow start while it is less than twice the flight (as
//! Linux's), so that slow start can double what it actually uses; otherwise it stays. A driver
//! that drains to `None` never sets `is_held`, so its behaviour is unchanged.
//!
//! Sequence space: payload bytes `0..written`; the SYN takes no sequence space. The application
//! hands data over with `send` and ends the stream with `close` (a fixed-size transfer is both
//! at creation). A segment is at most `mss` long and ends at the next multiple of `mss` or at
//! `written`; the segment that ends at `written` after `close` carries `FIN`. If the stream is
//! closed after its last byte already left without `FIN`, a zero-length `FIN` segment at
//! `written` follows, retransmitted on RTO until an ACK carrying `FIN` confirms that the
//! receiver has every byte. The sender completes once everything is acknowledged and the
//! receiver knows the end (the `FIN` rode on acknowledged data, or an ACK confirmed it).
//!
//! SACK ([`TcpConfig::sack`], `sack::Scoreboard`): every ACK's blocks update the scoreboard.
//! Outside recovery, a duplicate ACK enters recovery when `dupack_threshold` of them have
//! arrived or RFC 6675's `IsLost(HighACK + 1)` holds (§5 steps (1)-(2)); the first segment is
//! retransmitted at once (4.3) and the window becomes `ssthresh` (4.2, no inflation: what may
//! leave is `cwnd - pipe`, step (C)), each segment chosen by `NextSeg()` (lost holes, new
//! data, other holes, one rescue). A cumulative ACK at or beyond `recover` ends recovery
//! (RFC 6582's window on exit, as without SACK). A timeout clears the scoreboard (RFC 2018
//! §8) and goes back to `snd_una` as without SACK, but go-back-N skips what ACKs report held
//! since (RFC 6675 §5.1: use the SACK information that arrives after the timeout).
//!
//! RACK-TLP ([`TcpConfig::rack_tlp`](super::TcpConfig::rack_tlp), with SACK only; the `rack`
//! module): every ACK's delivered segments advance RACK, which calls lost what was sent before
//! the latest of them and has waited its RTT plus the reordering window; that boundary joins
//! RFC 6675's `IsLost()` (a loss outside recovery starts it, as `IsLost()` does), and a
//! retransmission RACK finds lost again is resent first in recovery. Outside recovery, with
//! nothing SACKed, a probe two smoothed RTTs after the last progress sends the next new segment
//! or the last one again, whatever the window. Every RACK step sits behind one test of the
//! `rack` box, out of line, so that a sender without it runs as before.
//!
//! PRR ([`TcpConfig::prr`](super::TcpConfig::prr), with SACK only; RFC 9937): from the ACK
//! that starts fast recovery to the one that ends it, the window is `pipe + sndcnt`, set by each
//! ACK from what it delivered (newly acknowledged plus newly SACKed bytes): in proportion,
//! `CEIL(prr_delivered · ssthresh / RecoverFS) − prr_out` rounded up to whole segments as
//! Linux counts, while `pipe` is above `ssthresh` (RecoverFS: the pipe as recovery started),
//! and below it PRR-CRB's catch-up, one segment more on a safe ACK (PRR-SSRB: `snd.una`
//! advanced and the ACK SACKed nothing new, so it indicates no further loss). The segments
//! that leave are `NextSeg()`'s as without it; the fast retransmission leaves regardless. Where
//! ours is an approximation: a safe ACK is judged by new SACK information alone (RACK's losses
//! by time do not make an ACK unsafe), and the window on exit is RFC 6582's, as without PRR.
//!
//! ns-3.44's `CA_CWR` (DCTCP's `ns3_cwr`, off in every default): an ECN cut leaves cwnd to PRR
//! (RFC 6937 as ns-3's `TcpPrrRecovery` runs it: `pipe + sndcnt` per new ACK, no growth) until
//! `snd_una` passes what had been sent at the cut; a loss found meanwhile starts no fast
//! recovery (ns-3's `DupAck` ignores `CA_CWR`), but with SACK the lost segments go out again by
//! `NextSeg()` rules 1-2 within `cwnd − pipe` (ns-3's `SendPendingData` in any state), and one
//! lost again waits for the timer; an ECE on a new ACK during fast recovery ends it with an ECN
//! cut (ns-3's `EnterCwr` from `CA_RECOVERY`). It exists to compare with ns-3 under loss.
//!
//! INVARIANT: `snd_una <= snd_nxt <= snd_max <= written`. `snd_nxt` is where new transmissions
//! continue (it falls back to `snd_una` on an RTO: go-back-N), `snd_max` is one past the
//! highest byte ever sent.

use units::{Bytes, Dur, Time};
use wire::{Ecn, Flags, IntStack, SackBlocks, SegmentRepr};

use super::rack::{Probe, Rack};
use super::sack::{Next, Scoreboard};
use super::timer::{Timer, TimerTable};
use super::{CcKind, TcpConfig};
use crate::cc::{AckInfo, AnyCc, CongestionControl};
use crate::rtt::RttEstimator;
use crate::{Event, Outcome, Stats};

/// Connection state of a sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// SYN sent (or due), waiting for SYN-ACK.
    SynSent,
    /// Sending data.
    Established,
    /// Every byte acknowledged; silent, no timers.
    Done,
}

#[derive(Debug)]
pub(super) struct Sender {
    conn: u32,
    mss: u32,
    prio: u8,
    /// Codepoint of data segments (ECT(0) for DCTCP, Not-ECT for NewReno).
    data_ecn: Ecn,
    dupack_threshold: u32,
    /// RFC 3042 limited transmit ([`TcpConfig::limited_transmit`]).
    limited_transmit: bool,
    /// Limited transmit's allowance beyond the window, in segments: one per duplicate ACK so
    /// far, at most `dupack_threshold - 1` (and 255); 0 outside a run of duplicates, in
    /// recovery and in go-back-N. Kept as a number, not derived at every send (the send path
    /// is hot), and in one byte, so that the sender stays the size it was.
    lt_segs: u8,
    /// `Some` iff the connection uses SACK (boxed: senders without it stay the size they were).
    sack: Option<Box<Scoreboard>>,
    /// `Some` iff the connection uses RACK-TLP (with SACK; boxed likewise; `rack` module).
    rack: Option<Box<Rack>>,
    state: State,
    /// Bytes the application has handed over so far.
    written: u64,
    /// Whether the application has closed the stream (no more `send`).
    closed: bool,
    /// A data segment carrying `FIN` has been sent: acknowledging `written` confirms the end.
    fin_on_data: bool,
    /// A zero-length `FIN` segment is due (the stream was closed after its last byte left).
    fin_due: bool,
    /// Every segment starts at a multiple of `mss` (a fixed-size transfer): segment lengths
    /// need no division.
    is_aligned: bool,
    /// The receiver confirmed the end (an ACK carrying `FIN`).
    fin_acked: bool,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    /// A single segment (by start) to send ahead of new data, outside the window:
    /// fast retransmit or a NewReno partial-ACK retransmission.
    rtx: Option<u64>,
    /// The SYN must be (re)transmitted.
    is_syn_due: bool,
    dupacks: u32,
    in_recovery: bool,
    /// ns-3.44's `CA_CWR` handling ([`CcKind::Dctcp`]'s `ns3_cwr`; module docs).
    ns3_cwr: bool,
    /// ECE taken from new ACKs only ([`CcKind::Dctcp`]'s `ece_only_on_new_acks`, ns-3.44).
    ece_only_on_new_acks: bool,
    /// RFC 9937 PRR in fast recovery ([`TcpConfig::prr`], with SACK; module docs).
    prr_recovery: bool,
    /// With `ns3_cwr` and SACK: a loss found during an ECN cut is repaired outside fast
    /// recovery, each segment `NextSeg()`'s within `cwnd − pipe`, until the cut's round ends
    /// (`cc.in_ecn_cut`), a recovery begins or the timer fires.
    cwr_repair: bool,
    /// With `ns3_cwr`, during an ECN cut: ns-3's PRR (`TcpPrrRecovery`, RFC 6937), which takes
    /// the window down to the cut one ACK at a time; with `prr_recovery`, in fast recovery:
    /// RFC 9937's; `None` otherwise (boxed: senders without it stay the size they were).
    prr: Option<Box<Prr>>,
    /// RFC 6582 `recover`: one past the highest byte sent when recovery (or an RTO) began.
    recover: u64,
    /// A partial ACK has already restarted the RTO timer in this recovery.
    has_partial_acked: bool,
    /// `snd_una` at the last RTO: a second RTO at the same `snd_una` is a repeat.
    rto_una: Option<u64>,
    /// Retransmission timeouts since the last progress (a new byte acknowledged or the
    /// SYN-ACK); the sender gives up at the timeout after `max_retries` of them.
    retries: u32,
    max_retries: u32,
    /// Earliest time the next paced data segment may leave.
    next_send: Time,
    /// The application's cap on the sending rate (bits per second of payload plus headers
    /// counted as the segment's payload, i.e. `len / cap` between segments), if any.
    rate_cap: Option<units::Bps>,
    /// The driver stopped polling with room left in the window (see the module docs).
    is_held: bool,
    cc: AnyCc,
    rtt: RttEstimator,
    timers: TimerTable,
    event: Option<Event>,
    stats: Stats,
}

/// Proportional rate reduction: during an ECN cut as ns-3.44's `TcpPrrRecovery` runs it in
/// `CA_CWR` (RFC 6937 with PRR-CRB; ns-3's SSRB case needs an acknowledged retransmission,
/// which `CA_CWR` does not track here), or in fast recovery as RFC 9937 specifies
/// ([`TcpConfig::prr`](super::TcpConfig::prr)); the fields are the RFCs' state either way.
#[derive(Clone, Copy, Debug)]
struct Prr {
    /// RFC 6937 RecoverFS: the pipe when the cut began.
    recover_fs: u64,
    /// prr_delivered: bytes delivered (acknowledged or SACKed) since.
    delivered: u64,
    /// prr_out: bytes sent since.
    out: u64,
    /// The window until the next ACK: `pipe + sndcnt`.
    cwnd: u64,
}

/// The initial window in segments: `init_cwnd_pkts`, or with `init_cwnd_covers_transfer` at
/// least every segment of a transfer of known size (`closed`), up to
/// [`MAX_COVERING_WINDOW_PKTS`](super::MAX_COVERING_WINDOW_PKTS).
fn init_window_pkts(cfg: &TcpConfig, size: u64, closed: bool) -> u32 {
    if !(cfg.init_cwnd_covers_transfer && closed) {
        return cfg.init_cwnd_pkts;
    }
    let segments = size.div_ceil(u64::from(cfg.mss.max(1))).min(u64::from(super::MAX_COVERING_WINDOW_PKTS));
    cfg.init_cwnd_pkts.max(segments as u32)
}

impl Sender {
    /// A sender with `size` bytes handed over, closed if `closed`.
    pub(super) fn new(cfg: &TcpConfig, conn: u32, size: u64, closed: bool, _now: Time) -> Sender {
        debug_assert!(cfg.mss > 0 && cfg.dupack_threshold > 0);
        Sender {
            conn,
            mss: cfg.mss,
            prio: cfg.prio,
            data_ecn: if cfg.is_ecn_capable() { Ecn::Ect0 } else { Ecn::NotEct },
            dupack_threshold: cfg.dupack_threshold,
            limited_transmit: cfg.limited_transmit,
            lt_segs: 0,
            sack: cfg.sack.then(Box::default),
            rack: (cfg.sack && cfg.rack_tlp).then(|| {
                let delay = cfg.delayed_ack.filter(|d| d.count > 1).map_or(Dur::ZERO, |d| d.timeout);
                Box::new(Rack::new(cfg.mss, delay))
            }),
            state: if cfg.handshake { State::SynSent } else { State::Established },
            written: size,
            closed,
            fin_on_data: false,
            // An empty stream closed at creation announces its end with a bare FIN.
            fin_due: closed && size == 0,
            is_aligned: closed,
            fin_acked: false,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            rtx: None,
            is_syn_due: cfg.handshake,
            dupacks: 0,
            in_recovery: false,
            ns3_cwr: matches!(cfg.cc, CcKind::Dctcp { ns3_cwr: true, .. }),
            ece_only_on_new_acks: matches!(cfg.cc, CcKind::Dctcp { ece_only_on_new_acks: true, .. }),
            prr_recovery: cfg.sack && cfg.prr,
            cwr_repair: false,
            prr: None,
            // RFC 6582 §3.2 (1): recover starts at the initial send sequence number.
            recover: 0,
            has_partial_acked: false,
            rto_una: None,
            retries: 0,
            max_retries: cfg.max_retries,
            next_send: Time::ZERO,
            rate_cap: None,
            is_held: false,
            cc: AnyCc::new(cfg, init_window_pkts(cfg, size, closed)),
            rtt: RttEstimator::new(cfg.init_rto, cfg.min_rto, cfg.max_rto),
            timers: TimerTable::default(),
            event: None,
            stats: Stats::default(),
        }
    }

    pub(super) fn cc(&self) -> &AnyCc {
        &self.cc
    }

    pub(super) fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Whether the controller uses in-band telemetry (PowerTCP).
    #[inline]
    pub(super) fn wants_int(&self) -> bool {
        self.cc.wants_int()
    }

    #[cfg(test)]
    pub(super) fn seq_state(&self) -> (u64, u64, u64) {
        (self.snd_una, self.snd_nxt, self.snd_max)
    }

    #[cfg(test)]
    pub(super) fn rack_slots(&self) -> Option<usize> {
        self.rack.as_deref().map(Rack::slots)
    }

    pub(super) fn stats(&self) -> Stats {
        Stats {
            cwnd: self.cc.window(),
            alpha: self.cc.alpha(),
            srtt_ps: self.rtt.srtt().map_or(0, Dur::ps),
            ..self.stats
        }
    }

    #[inline]
    pub(super) fn poll_timeout(&self) -> Option<Time> {
        let t = self.timers.earliest();
        match self.rack.as_deref().and_then(Rack::earliest) {
            Some(r) => Some(t.map_or(r, |t| t.min(r))),
            None => t,
        }
    }

    #[inline]
    pub(super) fn poll_event(&mut self) -> Option<Event> {
        self.event.take()
    }

    /// Payload length of the segment starting at `seq`: up to the next multiple of `mss`, or
    /// to `written`.
    #[inline]
    fn seg_len(&self, seq: u64) -> u64 {
        let mss = u64::from(self.mss);
        // PERF: a fixed-size transfer's segments all start at multiples of the MSS, so the
        // boundary is a full MSS away; only a stream pays for the division.
        let to_boundary = if self.is_aligned { mss } else { mss - seq % mss };
        (self.written - seq).min(to_boundary)
    }

    /// The application hands over `bytes` more. Ignored after `close`.
    pub(super) fn send(&mut self, bytes: u64) {
        if !self.closed && self.state != State::Done {
            self.written = self.written.saturating_add(bytes);
        }
    }

    /// The application ends the stream: no more data. Idempotent.
    pub(super) fn close(&mut self) {
        if self.closed || self.state == State::Done {
            return;
        }
        self.closed = true;
        // Everything written has left at least once without FIN: announce the end alone.
        if self.snd_max == self.written {
            self.fin_due = true;
        }
    }

    /// Everything is acknowledged and the receiver knows the end.
    #[inline]
    fn is_complete(&self) -> bool {
        self.closed && self.snd_una >= self.written && (self.fin_on_data || self.fin_acked)
    }

    /// RFC 6298 (5.1): start the timer on a transmission if it is not running.
    #[inline]
    fn arm_rto_if_idle(&mut self, now: Time) {
        if !self.timers.is_armed(Timer::Rto) {
            self.timers.set(Timer::Rto, now + self.rtt.rto());
        }
    }

    pub(super) fn poll_transmit(&mut self, now: Time) -> Option<SegmentRepr> {
        let seg = self.next_segment(now);
        // A driver that stops here leaves sendable data behind iff the window has room for
        // the next new segment (pacing aside: a paced sender is rate-limited by itself).
        self.is_held = seg.is_some() && self.state == State::Established && self.has_window_room();
        seg
    }

    /// Whether there is new data and the window has room for its next segment.
    #[inline]
    fn has_window_room(&self) -> bool {
        self.snd_nxt < self.written && self.snd_nxt - self.snd_una + self.seg_len(self.snd_nxt) <= self.send_window()
    }

    /// The bytes that may be outstanding: the congestion window plus limited transmit's
    /// allowance (`lt_segs` segments, set by `on_dup_ack`).
    #[inline]
    fn send_window(&self) -> u64 {
        if let Some(p) = self.prr.as_deref() {
            return p.cwnd;
        }
        let window = self.cc.window();
        if self.lt_segs == 0 {
            return window;
        }
        window.saturating_add(u64::from(self.lt_segs) * u64::from(self.mss))
    }

    // PERF: inlined into `poll_transmit` (the simulator's hottest transport call), as it was
    // before the RACK-TLP probe's test made the compiler leave it out of line.
    #[inline(always)]
    fn next_segment(&mut self, now: Time) -> Option<SegmentRepr> {
        match self.state {
            State::Done => None,
            State::SynSent => {
                if !self.is_syn_due {
                    return None;
                }
                self.is_syn_due = false;
                self.arm_rto_if_idle(now);
                Some(SegmentRepr {
                    conn: self.conn,
                    flags: Flags::SYN,
                    prio: self.prio,
                    ts_ps: now.ps(),
                    ..SegmentRepr::default()
                })
            }
            State::Established => {
                if self.rack.as_deref().is_some_and(|r| r.probe.is_some()) {
                    return self.send_probe(now);
                }
                if let Some(seq) = self.rtx.take() {
                    // RFC 5681 §3.2 (2) / RFC 6582 §3.2 (5): the retransmission is sent
                    // regardless of the window.
                    debug_assert!(seq < self.snd_nxt);
                    return Some(self.emit_data(now, seq, true));
                }
                if self.sack.is_some() {
                    if self.in_recovery {
                        return self.next_in_sack_recovery(now);
                    }
                    if self.cwr_repair {
                        return self.next_in_cwr_repair(now);
                    }
                    if self.snd_nxt < self.snd_max {
                        self.skip_sacked();
                    }
                }
                self.next_new_data(now, false)
            }
        }
    }

    /// The next segment from `snd_nxt` on (new data, or go-back-N after a timeout), or the
    /// bare FIN; `None` if there is none, the window is full (unless `is_window_checked`:
    /// SACK recovery checked `pipe` instead) or pacing holds it back.
    #[inline]
    fn next_new_data(&mut self, now: Time, is_window_checked: bool) -> Option<SegmentRepr> {
        if self.snd_nxt >= self.written {
            if self.fin_due && self.snd_nxt == self.snd_max {
                self.fin_due = false;
                self.arm_rto_if_idle(now);
                return Some(SegmentRepr {
                    conn: self.conn,
                    seq: self.written,
                    flags: Flags::ACK.with(Flags::FIN),
                    ecn: self.data_ecn,
                    prio: self.prio,
                    ts_ps: now.ps(),
                    ..SegmentRepr::default()
                });
            }
            return None;
        }
        let len = self.seg_len(self.snd_nxt);
        // RFC 5681 §3: FlightSize + the new segment must fit in cwnd (which includes
        // the RFC 6582 recovery inflation; and RFC 3042's allowance, `send_window`).
        if !is_window_checked && self.snd_nxt - self.snd_una + len > self.send_window() {
            return None;
        }
        let pace = match (self.cc.pacing_rate(), self.rate_cap) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(rate) = pace {
            // PowerTCP Algorithm 1: the sender transmits at rate = cwnd/τ; an
            // application's rate cap (a coflow scheduler's allocation) bounds it.
            if now < self.next_send {
                self.timers.set(Timer::Pace, self.next_send);
                return None;
            }
            self.timers.stop(Timer::Pace);
            self.next_send = self.next_send.max(now) + rate.tx_time(Bytes(len));
        }
        let seq = self.snd_nxt;
        // Below the highest byte ever sent means go-back-N after an RTO.
        let is_retx = seq < self.snd_max;
        self.snd_nxt += len;
        self.snd_max = self.snd_max.max(self.snd_nxt);
        Some(self.emit_data(now, seq, is_retx))
    }

    /// RFC 6675 §5 step (C): in recovery with SACK, a segment may leave while `cwnd - pipe`
    /// is at least one SMSS (cwnd being `ssthresh` there, step (4.2)), the one `NextSeg()`
    /// chooses; `pipe` grows by what leaves (C.4), `HighRxt` by a retransmission (C.2), the
    /// rescue sets `RescueRxt` to `RecoveryPoint` (rule 4).
    fn next_in_sack_recovery(&mut self, now: Time) -> Option<SegmentRepr> {
        // With PRR (RFC 9937), the window its last ACK set: `pipe + sndcnt`.
        let window = self.prr.as_deref().map_or_else(|| self.cc.ssthresh(), |p| p.cwnd);
        let mss = u64::from(self.mss);
        let sb = self.sack.as_deref()?;
        if sb.pipe.saturating_add(mss) > window {
            return None;
        }
        let (una, max, thr) = (self.snd_una, self.snd_max, self.dupack_threshold);
        if let Some((seq, end)) = self.rack.as_deref_mut().and_then(|r| r.next_resend(una, self.written)) {
            // RACK found a retransmission lost again (module docs of `rack`).
            return self.resend_in_pipe(now, seq, end.min(max) - seq);
        }
        let sb = self.sack.as_deref()?;
        let mut next = sb.next_seg(una, max, thr, self.mss, |q| self.seg_len(q));
        if next == Next::NewData {
            if self.snd_nxt < self.written || self.fin_due {
                let seg = self.new_data_in_pipe(now);
                // Pacing may hold new data back: then wait for it rather than retransmit.
                if seg.is_some() || self.snd_nxt < self.written {
                    return seg;
                }
            }
            let sb = self.sack.as_deref()?;
            next = sb.next_seg_after_new_data(una, max, self.mss, |q| self.seg_len(q));
        }
        let Next::Retransmit { seq, len, rescue } = next else { return None };
        if rescue {
            let recover = self.recover;
            let sb = self.sack.as_deref_mut()?;
            sb.rescue_rxt = Some(recover);
            sb.pipe += len;
            return Some(self.emit_data_len(now, seq, len, true));
        }
        self.resend_in_pipe(now, seq, len)
    }

    /// New data (or the bare FIN) by `NextSeg()` rule 2, its window checked by `pipe`, which
    /// grows by it (RFC 6675 (C.4)).
    fn new_data_in_pipe(&mut self, now: Time) -> Option<SegmentRepr> {
        let seg = self.next_new_data(now, true);
        if let (Some(seg), Some(sb)) = (&seg, self.sack.as_deref_mut()) {
            sb.pipe += u64::from(seg.len);
        }
        seg
    }

    /// A hole resent by `NextSeg()` rule 1 or 3: `HighRxt` (C.2) and `pipe` (C.4) grow.
    fn resend_in_pipe(&mut self, now: Time, seq: u64, len: u64) -> Option<SegmentRepr> {
        let sb = self.sack.as_deref_mut()?;
        sb.high_rxt = sb.high_rxt.max(seq + len);
        sb.pipe += len;
        Some(self.emit_data_len(now, seq, len, true))
    }

    /// ns-3.44 in `CA_CWR` after a loss (`cwr_repair`): its `SendPendingData` outside
    /// recovery, while `cwnd − pipe` is at least one SMSS, each segment `NextSeg()`'s by
    /// rules 1-2 (a lost hole above `HighRxt`, else new data; rules 3 and 4 are recovery's).
    /// A lost hole already resent is not resent again: that waits for the timer.
    fn next_in_cwr_repair(&mut self, now: Time) -> Option<SegmentRepr> {
        let window = self.prr.as_deref().map_or_else(|| self.cc.window(), |p| p.cwnd);
        let mss = u64::from(self.mss);
        let sb = self.sack.as_deref()?;
        if sb.pipe.saturating_add(mss) > window {
            return None;
        }
        let (una, max, thr) = (self.snd_una, self.snd_max, self.dupack_threshold);
        if let Next::Retransmit { seq, len, .. } = sb.next_seg(una, max, thr, self.mss, |q| self.seg_len(q)) {
            return self.resend_in_pipe(now, seq, len);
        }
        self.new_data_in_pipe(now)
    }

    /// ns-3.44's `TcpPrrRecovery::DoRecovery` (RFC 6937) for an ACK that delivered `delivered`
    /// bytes during an ECN cut: the window becomes `pipe + sndcnt`, proportional while pipe
    /// is above ssthresh, PRR-CRB below it; at the cut (`is_entry`, ns-3's `EnterRecovery`
    /// with a duplicate ACK's extra segment) at least one segment may leave.
    fn prr_on_ack(&mut self, delivered: u64, is_entry: bool) {
        let ssthresh = self.cc.ssthresh();
        let mss = u64::from(self.mss);
        let pipe = self.pipe();
        let Some(p) = self.prr.as_deref_mut() else { return };
        let mut d = delivered;
        if is_entry && p.delivered < p.recover_fs {
            d += mss;
        }
        if d == 0 {
            return;
        }
        p.delivered = p.delivered.saturating_add(d);
        // In i128: every term is below 2^64, and sndcnt may be negative.
        let (delivered_all, out, ssthresh_i, pipe_i) = (i128::from(p.delivered), i128::from(p.out), i128::from(ssthresh), i128::from(pipe));
        let send = if pipe > ssthresh {
            // RFC 6937: sndcnt = CEIL(prr_delivered · ssthresh / RecoverFS) − prr_out.
            let fs = i128::from(p.recover_fs.max(1));
            (delivered_all * ssthresh_i + fs - 1) / fs - out
        } else {
            // PRR-CRB: catch up to ssthresh, at most what was delivered and not yet sent.
            (delivered_all - out).max(i128::from(d)).min(ssthresh_i - pipe_i)
        };
        let send = send.max(if p.out > 0 { 0 } else { i128::from(mss) }).max(0);
        p.cwnd = pipe.saturating_add(u64::try_from(send).unwrap_or(u64::MAX));
    }

    /// RFC 9937's per-ACK step (its algorithm section) in fast recovery with [`TcpConfig::prr`],
    /// for an ACK that delivered `delivered` bytes, `safe` if it advanced `snd.una` and
    /// indicated no further loss: the window becomes `pipe + sndcnt`, where `sndcnt` is the
    /// proportional share of what was delivered (`CEIL(prr_delivered · ssthresh / RecoverFS) −
    /// prr_out`) while `pipe` is above `ssthresh`, and below it PRR-CRB's catch-up
    /// (`MAX(prr_delivered − prr_out, DeliveredData)`, one SMSS more on a safe ACK: PRR-SSRB)
    /// up to `ssthresh − pipe`; an ACK that delivered nothing changes nothing, and before
    /// anything was sent in recovery at least one segment may leave. `pipe` is RFC 6675's,
    /// updated for this ACK.
    fn prr_on_recovery_ack(&mut self, delivered: u64, safe: bool) {
        let ssthresh = self.cc.ssthresh();
        let mss = u64::from(self.mss);
        let pipe = self.sack.as_deref().map_or(0, |sb| sb.pipe);
        let Some(p) = self.prr.as_deref_mut() else { return };
        if delivered == 0 {
            return;
        }
        p.delivered = p.delivered.saturating_add(delivered);
        let sndcnt = if pipe > ssthresh {
            // In whole segments, as Linux counts (`tcp_cwnd_reduction`): the sender sends
            // only full segments, and a share of a fraction of one, carried over in bytes,
            // would hold each segment back by ACKs the proportion does not ask for.
            // CORRECTNESS: in u128 the product cannot overflow; the quotient is at most
            // prr_delivered · ssthresh, so it is clamped back into u64.
            let fs_segs = u128::from(p.recover_fs.max(1)) * u128::from(mss);
            let share = (u128::from(p.delivered) * u128::from(ssthresh)).div_ceil(fs_segs) * u128::from(mss);
            u64::try_from(share).unwrap_or(u64::MAX).saturating_sub(p.out)
        } else {
            let limit = p.delivered.saturating_sub(p.out).max(delivered);
            let limit = if safe { limit.saturating_add(mss) } else { limit };
            limit.min(ssthresh - pipe)
        };
        let sndcnt = if p.out == 0 && sndcnt == 0 { mss } else { sndcnt };
        p.cwnd = pipe.saturating_add(sndcnt);
    }

    /// What is in the network as ns-3's `BytesInFlight` counts it: RFC 6675's `pipe` where the
    /// scoreboard keeps one (in recovery, or repairing in `CA_CWR`), else the flight.
    #[inline]
    fn pipe(&self) -> u64 {
        match self.sack.as_deref() {
            Some(sb) if self.in_recovery || self.cwr_repair => sb.pipe,
            _ => self.snd_nxt - self.snd_una,
        }
    }

    /// RFC 6675's `SetPipe()` from the scoreboard as it stands (no-op without SACK).
    fn set_pipe(&mut self) {
        let (una, max, thr, mss) = (self.snd_una, self.snd_max, self.dupack_threshold, self.mss);
        if let Some(sb) = self.sack.as_deref_mut() {
            sb.set_pipe(una, max, thr, mss);
        }
    }

    /// With `ns3_cwr`, a loss found during an ECN cut: repair it by `NextSeg()` from here on
    /// (`cwr_repair`), `HighRxt` no lower than `snd_una`, `pipe` as RFC 6675's `SetPipe()`.
    /// Without SACK nothing is resent before the timer (ns-3's `IsLost` needs SACK).
    fn start_cwr_repair(&mut self) {
        let una = self.snd_una;
        let Some(sb) = self.sack.as_deref_mut() else { return };
        if !self.cwr_repair {
            sb.high_rxt = sb.high_rxt.max(una);
        }
        self.cwr_repair = true;
        self.set_pipe();
    }

    /// Go-back-N with SACK: step `snd_nxt` over what the receiver reported holding.
    fn skip_sacked(&mut self) {
        if let Some(sb) = self.sack.as_deref() {
            let next = sb.skip(self.snd_nxt).min(self.snd_max);
            self.snd_nxt = self.snd_nxt.max(next);
        }
    }

    /// Cap the rate of new data at `cap` (or lift the cap with `None`), paced as above.
    pub(super) fn set_rate_cap(&mut self, cap: Option<units::Bps>) {
        self.rate_cap = cap.filter(|r| r.get() > 0);
        if self.rate_cap.is_none() && self.cc.pacing_rate().is_none() {
            self.timers.stop(Timer::Pace);
        }
    }

    #[inline]
    fn emit_data(&mut self, now: Time, seq: u64, is_retx: bool) -> SegmentRepr {
        self.emit_data_len(now, seq, self.seg_len(seq), is_retx)
    }

    /// A data segment `[seq, seq + len)`. PRECONDITION: `0 < len <= seg_len(seq)`.
    #[inline]
    fn emit_data_len(&mut self, now: Time, seq: u64, len: u64, is_retx: bool) -> SegmentRepr {
        debug_assert!(len > 0 && len <= self.seg_len(seq));
        let end = seq + len;
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len;
        if let Some(p) = self.prr.as_deref_mut() {
            p.out += len;
        }
        if is_retx {
            self.stats.segments_retx += 1;
        }
        self.arm_rto_if_idle(now);
        if self.rack.is_some() {
            self.rack_on_send(now, seq, len, is_retx);
        }
        let mut flags = Flags::ACK;
        if end == self.written && self.closed {
            flags = flags.with(Flags::FIN);
            self.fin_on_data = true;
            self.fin_due = false;
        }
        SegmentRepr {
            conn: self.conn,
            seq,
            ack: 0,
            len: len as u32,
            flags,
            ecn: self.data_ecn,
            prio: self.prio,
            ts_ps: now.ps(),
            ts_echo_ps: 0,
        }
    }

    /// An ACK (or SYN-ACK) arrived, with the telemetry stack it echoes and the SACK blocks it
    /// carries, if any.
    pub(super) fn handle_segment(
        &mut self,
        now: Time,
        seg: &SegmentRepr,
        int: Option<&IntStack>,
        sack: Option<&SackBlocks>,
    ) {
        if seg.conn != self.conn || !seg.flags.contains(Flags::ACK) {
            return;
        }
        match self.state {
            // A late ACK after completion changes nothing.
            State::Done => {}
            State::SynSent => {
                if seg.flags.contains(Flags::SYN) {
                    self.on_syn_ack(now, seg);
                }
            }
            State::Established => {
                // A duplicate SYN-ACK (our SYN was retransmitted) carries no news.
                if !seg.flags.contains(Flags::SYN) {
                    if seg.flags.contains(Flags::FIN) && self.closed && seg.ack >= self.written {
                        // The receiver has every byte and knows the end.
                        self.fin_acked = true;
                    }
                    self.on_ack(now, seg, int, sack);
                    if self.state != State::Done && self.is_complete() {
                        self.finish();
                    }
                }
            }
        }
        self.debug_check();
    }

    /// INVARIANT (module docs): `snd_una <= snd_nxt <= snd_max <= size`; a retransmission
    /// is only pending inside the outstanding range.
    #[inline]
    fn debug_check(&self) {
        debug_assert!(self.snd_una <= self.snd_nxt, "{self:?}");
        debug_assert!(self.snd_nxt <= self.snd_max && self.snd_max <= self.written, "{self:?}");
        debug_assert!(!matches!(self.rtx, Some(s) if s < self.snd_una || s >= self.snd_nxt));
    }

    fn on_syn_ack(&mut self, now: Time, seg: &SegmentRepr) {
        self.state = State::Established;
        self.is_syn_due = false;
        self.timers.stop(Timer::Rto);
        self.retries = 0;
        // RFC 7323 §4: the SYN-ACK echoes the SYN's timestamp, so even after a SYN
        // retransmission the sample is unambiguous.
        self.rtt.on_sample(now.saturating_since(Time(seg.ts_echo_ps)));
    }

    fn on_ack(&mut self, now: Time, seg: &SegmentRepr, int: Option<&IntStack>, sack: Option<&SackBlocks>) {
        let ack = seg.ack;
        // RFC 5681 / RFC 793: an ACK for data never sent is ignored.
        if ack > self.snd_max {
            return;
        }
        let ece = seg.flags.contains(Flags::ECE);
        if ack > self.snd_una {
            self.on_new_ack(now, ack, ece, seg.ts_echo_ps, int, sack);
        } else if ack == self.snd_una && self.snd_una < self.snd_max && seg.len == 0 {
            // RFC 5681 §2 "duplicate acknowledgment": no new data acknowledged, data
            // outstanding, no payload (and no SYN, filtered by the caller).
            self.on_dup_ack(now, ece, int, sack);
        }
        // Otherwise an old, reordered ACK: ignore.
    }

    /// The per-ACK feedback callbacks (cc module docs, call order steps 1-2): ECN, then the
    /// echoed telemetry if the ACK carries any. Returns whether ECN cut the window.
    fn on_feedback(
        &mut self,
        now: Time,
        bytes_acked: u64,
        ece: bool,
        int: Option<&IntStack>,
    ) -> bool {
        if ece {
            self.stats.num_ecn += 1;
        }
        let info = AckInfo { bytes_acked, ece, snd_una: self.snd_una, snd_max: self.snd_max };
        let cut = self.cc.on_ecn(now, &info, !self.in_recovery);
        if cut {
            self.stats.num_ecn_cuts += 1;
        }
        if let Some(int) = int {
            self.cc.on_int(now, &info, int, !self.in_recovery);
        }
        cut
    }

    fn on_new_ack(
        &mut self,
        now: Time,
        ack: u64,
        ece: bool,
        ts_echo_ps: u64,
        int: Option<&IntStack>,
        sack: Option<&SackBlocks>,
    ) {
        let bytes_acked = ack - self.snd_una;
        let flight = self.snd_nxt - self.snd_una;
        // ns3_cwr only: ns-3's `m_bytesInFlight` before this ACK (RFC 6675's pipe where it
        // keeps one), and the bytes SACKed before it.
        // With PRR in recovery, the bytes SACKed before it too (RFC 9937's DeliveredData).
        let (pipe_before, sacked_before) = if self.ns3_cwr || self.prr_recovery {
            (self.pipe(), self.sack.as_deref().map_or(0, |sb| sb.sacked()))
        } else {
            (0, 0)
        };
        let cwr_from_recovery = self.ns3_cwr && ece && self.in_recovery;
        if cwr_from_recovery {
            // ns-3.44 `ReceivedAck`: an ECE on a new ACK calls `EnterCwr` in any state but
            // `CA_CWR`, also in `CA_RECOVERY`, which ends there with an ECN cut; the holes
            // left are repaired as in `CA_CWR`.
            self.in_recovery = false;
            self.has_partial_acked = false;
            if self.cc.ecn_cut_now(self.snd_max) {
                self.stats.num_ecn_cuts += 1;
            }
            self.cwr_repair = self.sack.is_some();
        }
        self.snd_una = ack;
        self.retries = 0;
        // A retransmission not yet handed out may have just been acknowledged.
        if self.rtx.is_some_and(|s| s < ack) {
            self.rtx = None;
        }
        // After go-back-N the receiver may acknowledge data it had buffered beyond snd_nxt.
        self.snd_nxt = self.snd_nxt.max(ack);
        // PERF: without RACK-TLP the scoreboard's update alone, inline as before it.
        let is_news = if self.rack.is_none() {
            self.sack.as_deref_mut().is_some_and(|sb| sb.update(ack, self.snd_max, sack))
        } else {
            self.rack_on_ack(now, sack, flight, false)
        };
        self.dupacks = 0;
        self.lt_segs = 0;
        // RFC 7323 §4 RTTM + RFC 6298 (2.3): one sample per ACK of new data.
        self.rtt.on_sample(now.saturating_since(Time(ts_echo_ps)));
        let is_cut = self.on_feedback(now, bytes_acked, ece, int);

        if self.is_complete() {
            self.finish();
            return;
        }
        // Bytes this ACK delivered (RFC 9937's DeliveredData): newly acknowledged plus newly
        // SACKed (a SACKed range now acknowledged counts once, when it was SACKed). Only the
        // two PRRs read it.
        let delivered = if self.ns3_cwr || self.prr_recovery {
            (bytes_acked + self.sack.as_deref().map_or(0, |sb| sb.sacked())).saturating_sub(sacked_before)
        } else {
            0
        };
        let mut restart_rto = true;
        if self.in_recovery {
            if ack >= self.recover {
                // RFC 6582 §3.2 (3): a full ACK (everything up to `recover`) ends recovery
                // (and PRR's episode: RFC 9937 leaves the window to the exit's rule).
                self.in_recovery = false;
                if self.prr_recovery {
                    self.prr = None;
                }
                self.cc.on_recovery_exit(self.snd_nxt - self.snd_una);
            } else if self.sack.is_some() {
                // RFC 6675 §5 (B): the scoreboard is updated (above), pipe recomputed; what
                // leaves next is `NextSeg()`'s. The timer restarts as on any new ACK
                // (RFC 6298 (5.3)).
                self.set_pipe();
                if self.prr_recovery {
                    // RFC 9937: `snd.una` advanced; no further loss is indicated when the ACK
                    // SACKs nothing new (a SACK could make RFC 6675's `IsLost()` call more
                    // lost), so the ACK is safe and PRR-SSRB may send one segment more.
                    self.prr_on_recovery_ack(delivered, !is_news);
                }
            } else {
                // RFC 6582 §3.2 (5): a partial ACK retransmits the first unacknowledged
                // segment, and restarts the timer only for the first partial ACK.
                self.rtx = Some(self.snd_una);
                self.cc.on_partial_ack(bytes_acked);
                restart_rto = !self.has_partial_acked;
                self.has_partial_acked = true;
            }
        } else if !is_cut && self.prr.is_none() && self.is_window_limited(flight) {
            // (ns-3 grows no window in `CA_CWR`: its PRR sets it.)
            self.cc.on_ack(now, bytes_acked);
        }
        if self.cwr_repair {
            if self.cc.in_ecn_cut(self.snd_una) {
                self.set_pipe();
            } else {
                // ns-3's `CA_CWR` ends with an ACK beyond `m_recover`: back to Open.
                self.cwr_repair = false;
            }
        }
        if self.ns3_cwr {
            if is_cut || cwr_from_recovery {
                // ns-3.44 `EnterCwr`: ssthresh cut (above), cwnd left to `TcpPrrRecovery`,
                // whose `EnterRecovery` counts this ACK's delivery (with a duplicate ACK's
                // extra segment), and `ProcessAck` in `CA_CWR` counts it again.
                self.prr = Some(Box::new(Prr { recover_fs: pipe_before, delivered: 0, out: 0, cwnd: 0 }));
                self.prr_on_ack(delivered, true);
                self.prr_on_ack(delivered, false);
            } else if self.prr.is_some() && !self.in_recovery {
                if self.cc.in_ecn_cut(self.snd_una) {
                    self.prr_on_ack(delivered, false);
                } else {
                    // `CA_CWR` over: cwnd = ssthresh (ns-3's `ProcessAck`), the cut's window.
                    self.prr = None;
                }
            }
        }
        if is_news {
            // RFC 6675 §2: with SACK, a cumulative ACK that SACKs new bytes is a duplicate too.
            self.on_sack_news(now, true, delivered);
        }
        if self.rack.is_some() {
            self.on_rack_loss(now, delivered);
        }
        if self.snd_nxt == self.snd_una {
            // RFC 6298 (5.2): all outstanding data acknowledged, stop the timer (the next
            // transmission restarts it).
            self.timers.stop(Timer::Rto);
        } else if restart_rto {
            // RFC 6298 (5.3): restart the timer on an ACK of new data.
            self.timers.set(Timer::Rto, now + self.rtt.rto());
        }
        if self.rack.is_some() {
            // RFC 8985 §7.2: (re)start the probe timer on an ACK of new data.
            self.arm_pto(now);
        }
    }

    /// RFC 7661 §4.3 and Linux's `tcp_is_cwnd_limited` (module docs): whether an ACK that
    /// arrived with `flight` bytes outstanding may grow the window.
    #[inline]
    fn is_window_limited(&self, flight: u64) -> bool {
        let cwnd = self.cc.window();
        !self.is_held || (cwnd < self.cc.ssthresh() && cwnd < 2 * flight)
    }

    fn on_dup_ack(&mut self, now: Time, ece: bool, int: Option<&IntStack>, sack: Option<&SackBlocks>) {
        // ns-3.44 (`ece_only_on_new_acks`): the echo of a duplicate ACK is not read.
        let ece = ece && !self.ece_only_on_new_acks;
        self.on_feedback(now, 0, ece, int);
        if let Some(sb) = self.sack.as_deref_mut() {
            let sacked_before = sb.sacked();
            // RFC 6675 §5: every ACK updates the scoreboard; in recovery, step (B).
            let is_news = if self.rack.is_none() {
                sb.update(self.snd_una, self.snd_max, sack)
            } else {
                let flight = self.snd_nxt - self.snd_una;
                self.rack_on_ack(now, sack, flight, true)
            };
            if self.in_recovery || self.cwr_repair {
                self.set_pipe();
            }
            // RFC 9937 DeliveredData of a duplicate ACK: the bytes it newly SACKed.
            let delivered = self.sack.as_deref().map_or(0, |sb| sb.sacked()).saturating_sub(sacked_before);
            if self.in_recovery && self.prr_recovery {
                // `snd.una` did not advance: not a safe ACK (PRR-CRB).
                self.prr_on_recovery_ack(delivered, false);
            }
            self.on_sack_news(now, is_news, delivered);
            if self.rack.is_some() {
                self.on_rack_loss(now, delivered);
            }
            return;
        }
        if self.in_recovery {
            // RFC 6582 §3.2 (4).
            self.cc.on_recovery_dup_ack();
            return;
        }
        self.dupacks += 1;
        self.allow_limited_transmit();
        // RFC 6582 §3.2 (2): enter fast retransmit only if the ACK covers more than
        // `recover` (ours is exclusive, so `>=`), i.e. at most one recovery per window and
        // none for the duplicates that go-back-N provokes after an RTO.
        // ns-3.44 (`ns3_cwr`): `DupAck` counts in `CA_CWR` but starts no recovery there.
        let is_cwr = self.ns3_cwr && self.cc.in_ecn_cut(self.snd_una);
        if self.dupacks == self.dupack_threshold && self.snd_una >= self.recover && !is_cwr {
            self.enter_recovery(now, 0);
        }
    }

    /// RFC 3042 §2: one new segment beyond the window for each of the duplicate ACKs short of
    /// fast retransmit (at most `dupack_threshold - 1`: RFC 3042's "cwnd plus 2*SMSS" with the
    /// default of three; ns-3's `TcpSocketBase` sends one per such ACK alike); only new data,
    /// never in go-back-N after a timeout; the congestion window itself is unchanged.
    /// Entering recovery takes it back.
    #[inline]
    fn allow_limited_transmit(&mut self) {
        if self.limited_transmit && self.snd_nxt >= self.snd_max {
            self.lt_segs = self.dupacks.min(self.dupack_threshold.saturating_sub(1)).min(255) as u8;
        }
    }

    /// RFC 6675 §5 outside recovery, for any ACK with SACK (cumulative or not): a duplicate
    /// acknowledgment is one that SACKs bytes not SACKed before (§2, `is_news`); it counts
    /// towards `DupThresh` (step (1)), and `IsLost(HighACK + 1)` (step (2): enough SACKed
    /// above the first unacknowledged byte) enters recovery before the count is reached.
    /// RFC 6582's rule holds as without SACK: no recovery before `snd_una` reaches `recover`.
    /// `delivered`: the ACK's RFC 9937 DeliveredData, for PRR if it starts recovery.
    fn on_sack_news(&mut self, now: Time, is_news: bool, delivered: u64) {
        if self.in_recovery || !is_news || self.snd_una >= self.snd_max {
            return;
        }
        self.dupacks += 1;
        self.allow_limited_transmit();
        let is_lost = self.sack.as_deref().is_some_and(|sb| sb.lost_below(self.dupack_threshold, self.mss) > self.snd_una);
        if self.dupacks >= self.dupack_threshold || is_lost {
            if self.ns3_cwr && self.cc.in_ecn_cut(self.snd_una) {
                // ns-3.44: no recovery in `CA_CWR`; `NextSeg()` resends what is lost.
                self.start_cwr_repair();
            } else if self.snd_una >= self.recover {
                self.enter_recovery(now, delivered);
            }
        }
    }

    /// Fast retransmit (RFC 5681 §3.2, RFC 6582 §3.2 (2); with SACK RFC 6675 §5 step (4)).
    /// `delivered`: what the ACK that starts it delivered (RFC 9937's first step runs on it).
    fn enter_recovery(&mut self, now: Time, delivered: u64) {
        self.in_recovery = true;
        if let Some(r) = self.rack.as_deref_mut() {
            r.on_fast_recovery();
        }
        self.cwr_repair = false;
        self.prr = None;
        self.lt_segs = 0;
        self.has_partial_acked = false;
        self.recover = self.snd_max;
        self.cc.on_congestion_event(now, self.snd_nxt - self.snd_una, self.snd_max);
        // RFC 5681 §3.2 (3): retransmit the lost segment.
        let una = self.snd_una;
        self.rtx = Some(una);
        self.stats.num_fast_retx += 1;
        let first_end = una + self.seg_len(una);
        if self.prr_recovery {
            // RFC 9937: RecoverFS is the pipe as recovery starts (before the retransmission),
            // and the starting ACK's step runs on that pipe.
            self.set_pipe();
            let pipe = self.sack.as_deref().map_or(0, |sb| sb.pipe);
            self.prr = Some(Box::new(Prr { recover_fs: pipe, delivered: 0, out: 0, cwnd: pipe }));
            self.prr_on_recovery_ack(delivered, false);
        }
        if let Some(sb) = self.sack.as_deref_mut() {
            // RFC 6675 (4.3)-(4.4): HighRxt and RescueRxt at the retransmission's end, then
            // SetPipe (which counts the retransmission, due at the next poll).
            sb.high_rxt = first_end;
            sb.rescue_rxt = Some(first_end);
            self.set_pipe();
        }
    }

    pub(super) fn handle_timeout(&mut self, now: Time) {
        // A pacing deadline only re-opens `poll_transmit`.
        self.timers.take_expired(Timer::Pace, now);
        if self.rack.is_some() {
            self.rack_timers(now);
        }
        if !self.timers.take_expired(Timer::Rto, now) {
            return;
        }
        self.stats.num_rtos += 1;
        // A run always ends: a transfer that makes no progress through `max_retries`
        // backed-off retransmissions gives up (Linux's `tcp_retries2` rule) instead of
        // retransmitting every `max_rto` forever.
        if self.retries >= self.max_retries {
            self.give_up();
            return;
        }
        self.retries += 1;
        match self.state {
            State::SynSent => {
                // Retransmit the SYN with a backed-off timer. RFC 6298 (5.7) would also reset
                // the RTO to 3 s once data starts; here the SYN-ACK's RTT sample re-initializes
                // it instead (datacenter RTOs are far below 3 s).
                self.is_syn_due = true;
                self.cc.on_syn_timeout();
            }
            State::Established => {
                let is_repeat = self.rto_una == Some(self.snd_una);
                self.rto_una = Some(self.snd_una);
                self.cc.on_rto(now, self.snd_nxt - self.snd_una, self.snd_max, is_repeat);
                // RFC 6582 §3.2: after a timeout, `recover` = highest sequence number sent.
                self.recover = self.snd_max;
                self.in_recovery = false;
                self.cwr_repair = false;
                self.prr = None;
                self.dupacks = 0;
                self.lt_segs = 0;
                self.rtx = None;
                if let Some(sb) = self.sack.as_deref_mut() {
                    sb.clear();
                }
                if let Some(r) = self.rack.as_deref_mut() {
                    r.on_rto();
                }
                // Go-back-N: resend everything from SND.UNA as the window allows.
                self.snd_nxt = self.snd_una;
                // A bare FIN still unconfirmed goes again once the data is out.
                if self.closed && !self.fin_on_data && !self.fin_acked {
                    self.fin_due = true;
                }
            }
            State::Done => unreachable!("a finished sender has no timers"),
        }
        // RFC 6298 (5.5)-(5.6): back off and restart the timer for the retransmission.
        self.rtt.on_timeout();
        self.timers.set(Timer::Rto, now + self.rtt.rto());
        self.debug_check();
    }

    /// With RACK-TLP, an ACK (`snd_una` already moved to it; `flight` before it): RFC 6675
    /// `Update()` with the segments it delivers (cumulatively, or SACKed for the first time),
    /// RACK's detection, and the probe's episode (`is_dup`: a duplicate ACK). Returns whether
    /// the ACK carried new SACK information.
    #[inline(never)]
    fn rack_on_ack(&mut self, now: Time, sack: Option<&SackBlocks>, flight: u64, is_dup: bool) -> bool {
        let (una, max, written) = (self.snd_una, self.snd_max, self.written);
        let (Some(sb), Some(r)) = (self.sack.as_deref_mut(), self.rack.as_deref_mut()) else { return false };
        r.on_cumulative_ack(una, written, now);
        let is_news = sb.update_with(una, max, sack, |a, b| r.on_sacked(a, b, written, now));
        if r.in_rto_recovery && una >= self.recover {
            r.in_rto_recovery = false;
        }
        self.rack_detect(now);
        self.tlp_on_ack(now, una, flight, is_dup && !is_news);
        is_news
    }

    /// With RACK-TLP, a data segment left: its transmission time is kept, and after new data
    /// the probe timer (re)starts (RFC 8985 §7.2).
    #[inline(never)]
    fn rack_on_send(&mut self, now: Time, seq: u64, len: u64, is_retx: bool) {
        if let Some(r) = self.rack.as_deref_mut() {
            r.on_send(seq, len, now, is_retx);
        }
        if !is_retx {
            self.arm_pto(now);
        }
    }

    /// RFC 8985 §6.2 step 5: RACK's loss boundary moves up to what has waited long enough, and
    /// the reordering timer covers what has not yet.
    fn rack_detect(&mut self, now: Time) {
        let (Some(r), Some(sb)) = (self.rack.as_deref_mut(), self.sack.as_deref_mut()) else { return };
        let dupthresh_sacked =
            sb.sacked() > u64::from(self.dupack_threshold.saturating_sub(1)).saturating_mul(u64::from(self.mss));
        let reo_wnd = r.reo_wnd(self.in_recovery, dupthresh_sacked, self.rtt.srtt());
        // The boundary only rises: `detect` starts from it.
        sb.rack_lost = r.detect(now, sb.rack_lost.max(self.snd_una), self.written, reo_wnd);
    }

    /// A loss RACK found outside recovery starts it, as a loss RFC 6675's `IsLost()` finds
    /// does (`on_sack_news`; ns-3's `CA_CWR` aside, and RFC 6582's one recovery per window).
    #[inline(never)]
    fn on_rack_loss(&mut self, now: Time, delivered: u64) {
        let Some(sb) = self.sack.as_deref() else { return };
        if self.rack.is_none() || self.in_recovery || sb.rack_lost <= self.snd_una || self.snd_una >= self.snd_max {
            return;
        }
        if self.ns3_cwr && self.cc.in_ecn_cut(self.snd_una) {
            if !self.cwr_repair {
                self.start_cwr_repair();
            }
        } else if self.snd_una >= self.recover {
            self.enter_recovery(now, delivered);
        }
    }

    /// RFC 8985 §7.2: with RACK-TLP, arm the probe timer if a probe may be sent (data
    /// outstanding, no probe outstanding, no loss recovery, nothing SACKed) and it comes
    /// before the retransmission timer; disarm it otherwise.
    #[inline(never)]
    fn arm_pto(&mut self, now: Time) {
        let Some(r) = self.rack.as_deref() else { return };
        let sacked = self.sack.as_deref().map_or(0, |sb| sb.sacked());
        let flight = self.snd_max - self.snd_una;
        let at = if self.state != State::Established
            || flight == 0
            || self.in_recovery
            || self.cwr_repair
            || r.in_rto_recovery
            || r.tlp_end.is_some()
            || sacked > 0
        {
            None
        } else {
            let rto_at = self.timers.at(Timer::Rto);
            r.pto(now, self.rtt.srtt(), flight <= u64::from(self.mss), rto_at)
        };
        if let Some(r) = self.rack.as_deref_mut() {
            r.pto_at = at;
        }
    }

    /// The reordering timer and the probe timer, if due (RFC 8985 §6.3, §7.3).
    #[inline(never)]
    fn rack_timers(&mut self, now: Time) {
        let Some(r) = self.rack.as_deref_mut() else { return };
        if r.reorder_at.is_some_and(|t| t <= now) {
            r.reorder_at = None;
            self.rack_detect(now);
            if self.in_recovery || self.cwr_repair {
                self.set_pipe();
            }
            self.on_rack_loss(now, 0);
        }
        let Some(r) = self.rack.as_deref_mut() else { return };
        if r.pto_at.is_none_or(|t| t > now) {
            return;
        }
        r.pto_at = None;
        if self.state != State::Established || self.in_recovery || r.tlp_end.is_some() || self.snd_max == self.snd_una {
            return;
        }
        // §7.3: a new segment if there is one, else the last one sent again.
        let probe = if self.snd_nxt < self.written && self.snd_nxt == self.snd_max {
            Probe::New
        } else {
            let last = self.snd_max - 1;
            let seq = (last - last % u64::from(self.mss)).max(self.snd_una);
            Probe::Again { seq, len: self.seg_len(seq).min(self.snd_max - seq) }
        };
        let Some(r) = self.rack.as_deref_mut() else { return };
        r.probe = Some(probe);
        // Outstanding from now: no other probe is armed until its ACK (set again when sent).
        r.tlp_end = Some(self.snd_max);
        r.tlp_is_retx = probe != Probe::New;
    }

    /// RFC 8985 §7.3: the probe leaves whatever the window, pacing and limited transmit
    /// allow; `TLP.end_seq` is `snd_max` after it, and the retransmission timer restarts.
    #[cold]
    #[inline(never)]
    fn send_probe(&mut self, now: Time) -> Option<SegmentRepr> {
        let probe = self.rack.as_deref_mut().and_then(|r| r.probe.take())?;
        let seg = match probe {
            Probe::New if self.snd_nxt < self.written => {
                let seq = self.snd_nxt;
                let is_retx = seq < self.snd_max;
                self.snd_nxt += self.seg_len(seq);
                self.snd_max = self.snd_max.max(self.snd_nxt);
                self.emit_data(now, seq, is_retx)
            }
            Probe::Again { seq, len } if seq >= self.snd_una && len > 0 && seq + len <= self.snd_max => {
                let seg = self.emit_data_len(now, seq, len, true);
                if let Some(r) = self.rack.as_deref_mut() {
                    r.mark_probe(seq);
                }
                seg
            }
            // What the probe was for was acknowledged meanwhile: no probe is sent (nor counted).
            _ => {
                if let Some(r) = self.rack.as_deref_mut() {
                    r.tlp_end = None;
                }
                return self.next_segment(now);
            }
        };
        self.stats.num_tail_probes += 1;
        if let Some(r) = self.rack.as_deref_mut() {
            r.tlp_end = Some(self.snd_max);
        }
        self.timers.set(Timer::Rto, now.saturating_add(self.rtt.rto()));
        Some(seg)
    }

    /// RFC 8985 §7.4 as Linux's `tcp_process_tlp_ack`: an ACK at or beyond the probe ends its
    /// episode; one beyond a probe that resent a segment means the probe repaired a loss (no
    /// DSACK here to say both copies arrived), and the window is reduced once (`flight`: before
    /// this ACK). A duplicate ACK with nothing new at the probe says both copies arrived.
    fn tlp_on_ack(&mut self, now: Time, ack: u64, flight: u64, is_pure_dup: bool) {
        let Some(r) = self.rack.as_deref_mut() else { return };
        let Some(end) = r.tlp_end else { return };
        if ack < end || r.probe.is_some() {
            return;
        }
        if !r.tlp_is_retx {
            r.tlp_end = None;
        } else if ack > end {
            r.tlp_end = None;
            if !self.in_recovery {
                self.cc.on_congestion_event(now, flight, self.snd_max);
                self.cc.on_recovery_exit(self.snd_nxt - self.snd_una);
            }
        } else if is_pure_dup {
            r.tlp_end = None;
        }
    }

    fn give_up(&mut self) {
        // POSTCONDITION: nothing more to send, no timers, SenderDone emitted once.
        self.state = State::Done;
        self.rtx = None;
        self.is_syn_due = false;
        self.fin_due = false;
        self.timers.stop_all();
        if let Some(r) = self.rack.as_deref_mut() {
            r.stop();
        }
        self.event = Some(Event::SenderDone { outcome: Outcome::GivenUp, confirmed: false });
    }

    fn finish(&mut self) {
        // POSTCONDITION: nothing more to send, no timers, Completed emitted once.
        self.state = State::Done;
        self.rtx = None;
        self.timers.stop_all();
        if let Some(r) = self.rack.as_deref_mut() {
            r.stop();
        }
        self.event = Some(Event::SenderDone { outcome: Outcome::Complete, confirmed: true });
    }
}
