//! TCP NewReno window arithmetic: RFC 5681 slow start and congestion avoidance, RFC 6582
//! fast recovery. Loss detection itself lives in the sender; this file only moves `cwnd`.
//!
//! INVARIANT: `cwnd >= mss` and `ssthresh >= 2·mss` after any congestion event.

use units::Time;

use super::{AckInfo, CongestionControl};

/// NewReno congestion window state, in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewReno {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acknowledged in congestion avoidance since `cwnd` last grew (RFC 3465 §2.1).
    ca_acked: u64,
    /// Whether a window below `ssthresh` grows by slow start (RFC 5681 §3.1); `false`: by
    /// congestion avoidance always, as the Credence artifact's ns-3.39 DCTCP
    /// (`TcpSocketState::m_useSS = false`, tested in `TcpLinuxReno::IncreaseWindow`).
    slow_start: bool,
}

impl NewReno {
    /// A controller with sender MSS `mss` and initial window `init_cwnd` (both bytes).
    /// `ssthresh` starts "arbitrarily high" (RFC 5681 §3.1).
    pub fn new(mss: u64, init_cwnd: u64) -> NewReno {
        debug_assert!(mss > 0);
        NewReno { mss, cwnd: init_cwnd.max(mss), ssthresh: u64::MAX, ca_acked: 0, slow_start: true }
    }

    /// The same controller growing its window by congestion avoidance only (`slow_start =
    /// false`: no slow start, from the first window nor after a timeout).
    pub fn with_slow_start(mut self, slow_start: bool) -> NewReno {
        self.slow_start = slow_start;
        self
    }

    /// Sender MSS (SMSS) in bytes.
    #[inline]
    pub fn mss(&self) -> u64 {
        self.mss
    }

    /// Set both `cwnd` and `ssthresh` to `cwnd` (an ECN reduction), at least one SMSS.
    pub(crate) fn reduce_to(&mut self, cwnd: u64) {
        self.cwnd = cwnd.max(self.mss);
        self.ssthresh = self.cwnd;
        self.ca_acked = 0;
    }

    /// Set `cwnd` (at least one SMSS) and leave `ssthresh` alone: a controller that computes
    /// its window from feedback (PowerTCP) rather than growing it per ACK.
    pub(crate) fn set_window(&mut self, cwnd: u64) {
        self.cwnd = cwnd.max(self.mss);
        self.ca_acked = 0;
    }

    /// Fast retransmit with a slow-start threshold the caller computed (CUBIC's `β·cwnd`,
    /// RFC 9438 §4.6, instead of eq. (4)): `ssthresh = max(ssthresh, 2·SMSS)` and RFC 6582
    /// §3.2 (2)'s `cwnd = ssthresh + 3·SMSS`.
    pub(crate) fn enter_recovery_with(&mut self, ssthresh: u64) {
        self.ssthresh = ssthresh.max(2 * self.mss);
        self.cwnd = self.ssthresh.saturating_add(3 * self.mss);
        self.ca_acked = 0;
    }

    /// A retransmission timeout with a slow-start threshold the caller computed (`None`:
    /// keep it): `cwnd` = one SMSS (RFC 5681 §3.1's loss window).
    pub(crate) fn timeout_with(&mut self, ssthresh: Option<u64>) {
        if let Some(t) = ssthresh {
            self.ssthresh = t.max(2 * self.mss);
        }
        self.cwnd = self.mss;
        self.ca_acked = 0;
    }

    /// RFC 5681 eq. (4): ssthresh = max(FlightSize / 2, 2·SMSS).
    fn half_flight(&self, flight: u64) -> u64 {
        (flight / 2).max(2 * self.mss)
    }
}

impl CongestionControl for NewReno {
    #[inline]
    fn window(&self) -> u64 {
        self.cwnd
    }

    #[inline]
    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// NewReno does not negotiate ECN: data is sent Not-ECT and ECE is ignored.
    #[inline]
    fn on_ecn(&mut self, _now: Time, _ack: &AckInfo, _may_cut: bool) -> bool {
        false
    }

    fn on_ack(&mut self, _now: Time, bytes_acked: u64) {
        if self.cwnd < self.ssthresh && self.slow_start {
            // RFC 5681 §3.1 slow start, byte counting: cwnd grows by the bytes acknowledged
            // (at most SMSS per acknowledged segment, as every segment is <= SMSS), and the
            // growth stops at ssthresh, where congestion avoidance takes over.
            self.cwnd = self.cwnd.saturating_add(bytes_acked).min(self.ssthresh);
        } else {
            // RFC 5681 §3.1 congestion avoidance, "appropriate byte counting" (RFC 3465 §2.1):
            // cwnd += SMSS once a full cwnd of bytes has been acknowledged, i.e. one SMSS per
            // RTT regardless of delayed ACKs.
            self.ca_acked += bytes_acked;
            while self.ca_acked >= self.cwnd {
                self.ca_acked -= self.cwnd;
                self.cwnd += self.mss;
            }
        }
    }

    fn on_congestion_event(&mut self, _now: Time, flight: u64, _snd_max: u64) {
        // RFC 6582 §3.2 (2) / RFC 5681 §3.2 (2)-(3): ssthresh = max(FlightSize/2, 2·SMSS),
        // cwnd = ssthresh + 3·SMSS (the three segments that left the network).
        self.ssthresh = self.half_flight(flight);
        self.cwnd = self.ssthresh + 3 * self.mss;
        self.ca_acked = 0;
    }

    fn on_recovery_dup_ack(&mut self) {
        // RFC 6582 §3.2 (4): inflate by SMSS per additional duplicate ACK.
        self.cwnd += self.mss;
    }

    fn on_partial_ack(&mut self, bytes_acked: u64) {
        // RFC 6582 §3.2 (5): deflate by the newly acknowledged amount; add back SMSS if at
        // least one SMSS was acknowledged. Floor at one SMSS (the RFC leaves it unbounded).
        self.cwnd = self.cwnd.saturating_sub(bytes_acked);
        if bytes_acked >= self.mss {
            self.cwnd += self.mss;
        }
        self.cwnd = self.cwnd.max(self.mss);
    }

    fn on_recovery_exit(&mut self, flight: u64) {
        // RFC 6582 §3.2 (3) full ACK, option (1): cwnd = min(ssthresh, max(FlightSize, SMSS)
        // + SMSS), which avoids a burst when little data is outstanding.
        self.cwnd = self.ssthresh.min(flight.max(self.mss) + self.mss);
        self.ca_acked = 0;
    }

    fn on_rto(&mut self, _now: Time, flight: u64, _snd_max: u64, is_repeat: bool) {
        // RFC 5681 §3.1: on the first timeout of a segment, ssthresh = eq. (4); if the segment
        // was already retransmitted by the timer, ssthresh is held constant.
        if !is_repeat {
            self.ssthresh = self.half_flight(flight);
        }
        // RFC 5681 §3.1: cwnd = LW = 1 full-sized segment.
        self.cwnd = self.mss;
        self.ca_acked = 0;
    }

    fn on_syn_timeout(&mut self) {
        // RFC 5681 §3.1: if the SYN or SYN/ACK was lost, the initial window is one segment.
        self.cwnd = self.mss;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn slow_start_adds_bytes_acked_up_to_ssthresh() {
        let mut c = NewReno::new(MSS, 10 * MSS);
        c.on_ack(Time::ZERO, MSS);
        assert_eq!(c.window(), 11 * MSS);
        c.ssthresh = 12 * MSS;
        c.on_ack(Time::ZERO, 2 * MSS);
        assert_eq!(c.window(), 12 * MSS);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window_of_bytes() {
        let mut c = NewReno::new(MSS, 4 * MSS);
        c.ssthresh = 4 * MSS;
        for _ in 0..3 {
            c.on_ack(Time::ZERO, MSS);
        }
        assert_eq!(c.window(), 4 * MSS);
        c.on_ack(Time::ZERO, MSS);
        assert_eq!(c.window(), 5 * MSS);
    }

    #[test]
    fn without_slow_start_the_window_grows_one_mss_per_window_from_the_start_and_after_a_timeout() {
        // The Credence artifact's DCTCP (ns-3.39, m_useSS = false): below ssthresh too.
        let mut c = NewReno::new(MSS, 4 * MSS).with_slow_start(false);
        assert_eq!(c.ssthresh(), u64::MAX);
        for _ in 0..3 {
            c.on_ack(Time::ZERO, MSS);
        }
        assert_eq!(c.window(), 4 * MSS, "slow start would have added 3 MSS");
        c.on_ack(Time::ZERO, MSS);
        assert_eq!(c.window(), 5 * MSS);
        c.on_rto(Time::ZERO, 10 * MSS, 10 * MSS, false);
        assert_eq!((c.window(), c.ssthresh()), (MSS, 5 * MSS));
        c.on_ack(Time::ZERO, MSS);
        assert_eq!(c.window(), 2 * MSS, "one window of one MSS acknowledged");
        c.on_ack(Time::ZERO, MSS);
        assert_eq!(c.window(), 2 * MSS, "slow start would be at 3 MSS");
        c.on_ack(Time::ZERO, MSS);
        assert_eq!(c.window(), 3 * MSS);
    }

    #[test]
    fn fast_recovery_inflates_deflates_and_exits_at_ssthresh() {
        let mut c = NewReno::new(MSS, 10 * MSS);
        c.on_congestion_event(Time::ZERO, 20 * MSS, 20 * MSS);
        assert_eq!(c.ssthresh(), 10 * MSS);
        assert_eq!(c.window(), 13 * MSS);
        c.on_recovery_dup_ack();
        assert_eq!(c.window(), 14 * MSS);
        c.on_partial_ack(3 * MSS);
        assert_eq!(c.window(), 12 * MSS);
        c.on_recovery_exit(15 * MSS);
        assert_eq!(c.window(), 10 * MSS);
        c.on_congestion_event(Time::ZERO, MSS, MSS);
        assert_eq!(c.ssthresh(), 2 * MSS, "floor of 2·SMSS");
    }

    #[test]
    fn rto_sets_one_mss_and_holds_ssthresh_on_repeat() {
        let mut c = NewReno::new(MSS, 10 * MSS);
        c.on_rto(Time::ZERO, 10 * MSS, 10 * MSS, false);
        assert_eq!((c.window(), c.ssthresh()), (MSS, 5 * MSS));
        c.on_rto(Time::ZERO, MSS, 10 * MSS, true);
        assert_eq!((c.window(), c.ssthresh()), (MSS, 5 * MSS));
    }
}
