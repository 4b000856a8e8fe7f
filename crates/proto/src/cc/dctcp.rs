//! DCTCP sender (Alizadeh et al., SIGCOMM'10 §3.1; RFC 8257 §3.3): an EWMA `alpha` of the
//! fraction of ECN-marked bytes per window of data, and a window cut by `alpha/2` at most
//! once per window. Loss handling is NewReno's (RFC 8257 §3.5: ssthresh = FlightSize/2, as
//! Linux since 5.1), delegated to [`NewReno`]; or, with `loss_by_alpha`, ns-3.44's
//! (`TcpDctcp::GetSsThresh` serves loss too: ssthresh = `cwnd·(1 − alpha/2)` at a fast
//! retransmit and at a timeout), so that a comparison with ns-3 under loss compares like with
//! like.
//!
//! Observation windows: a window ends on the first ACK whose `SND.UNA` passes the `SND.NXT`
//! recorded when it began (RFC 8257 §3.3 step 4, "greater than DCTCP.WindowEnd"). The first
//! window is the data outstanding when the first ACK arrives (RFC 8257 initializes
//! WindowEnd to SND.UNA, which would make the first window a single segment; ours is the
//! initial window, so every alpha update averages a full window).
//!
//! INVARIANT: `0 <= alpha <= 1` (given `0 <= g <= 1` and `0 <= init_alpha <= 1`).

use units::Time;

use super::{AckInfo, CongestionControl, NewReno};

/// DCTCP congestion window state.
#[derive(Clone, Debug, PartialEq)]
pub struct Dctcp {
    reno: NewReno,
    /// EWMA gain g (DCTCP eq. 1).
    g: f64,
    /// Estimate of the fraction of marked bytes (DCTCP eq. 1).
    alpha: f64,
    /// RFC 8257 DCTCP.WindowEnd; `None` until the first ACK.
    window_end: Option<u64>,
    /// RFC 8257 DCTCP.BytesAcked.
    bytes_acked: u64,
    /// RFC 8257 DCTCP.BytesMarked.
    bytes_marked: u64,
    /// `SND.NXT` at the last window reduction (ECN or loss); no ECN cut until `SND.UNA`
    /// passes it. `None`: no reduction yet.
    cut_end: Option<u64>,
    /// `SND.NXT` at the last ECN cut while no loss or timeout came after it: the window is
    /// being cut for marks until `SND.UNA` passes it (ns-3's `CA_CWR`, whose exit is an ACK
    /// beyond `m_recover`, the highest byte sent at `EnterCwr`).
    cwr_end: Option<u64>,
    /// Loss sets ssthresh to `cwnd·(1 − alpha/2)` (ns-3.44) instead of FlightSize/2.
    loss_by_alpha: bool,
}

impl Dctcp {
    /// DCTCP over the NewReno window `reno`, with gain `g` and initial `alpha`; loss handled as
    /// NewReno's, or with `loss_by_alpha` as ns-3.44's (module docs).
    pub fn new(reno: NewReno, g: f64, init_alpha: f64, loss_by_alpha: bool) -> Dctcp {
        debug_assert!((0.0..=1.0).contains(&g) && (0.0..=1.0).contains(&init_alpha));
        Dctcp {
            reno,
            g,
            alpha: init_alpha,
            window_end: None,
            bytes_acked: 0,
            bytes_marked: 0,
            cut_end: None,
            cwr_end: None,
            loss_by_alpha,
        }
    }

    /// ns-3.44's slow-start threshold at a loss: `cwnd·(1 − alpha/2)` of the current window
    /// (floored at 2·SMSS by the caller, as every ssthresh).
    #[inline]
    fn alpha_ssthresh(&self) -> u64 {
        Dctcp::cut_window(self.reno.window(), self.alpha, self.reno.mss())
    }

    /// An ECN cut of the window `from` (DCTCP eq. 2), the last of this window of data
    /// (`snd_max` the highest byte sent): `cut_end` and `cwr_end` there.
    fn cut_from(&mut self, from: u64, snd_max: u64) {
        let cwnd = Dctcp::cut_window(from, self.alpha, self.reno.mss());
        self.reno.reduce_to(cwnd);
        self.cut_end = Some(snd_max);
        self.cwr_end = Some(snd_max);
    }

    /// The window after an ECN cut of `cwnd`: `max(cwnd·(1 − alpha/2), SMSS)` (DCTCP eq. 2),
    /// truncated to whole bytes.
    #[inline]
    pub fn cut_window(cwnd: u64, alpha: f64, mss: u64) -> u64 {
        ((cwnd as f64 * (1.0 - alpha / 2.0)) as u64).max(mss)
    }
}

impl CongestionControl for Dctcp {
    #[inline]
    fn window(&self) -> u64 {
        self.reno.window()
    }

    #[inline]
    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    #[inline]
    fn alpha(&self) -> f64 {
        self.alpha
    }

    fn on_ecn(&mut self, _now: Time, ack: &AckInfo, may_cut: bool) -> bool {
        let window_end = *self.window_end.get_or_insert(ack.snd_max);
        // RFC 8257 §3.3 steps 1-3: count acknowledged and marked bytes.
        self.bytes_acked += ack.bytes_acked;
        if ack.ece {
            self.bytes_marked += ack.bytes_acked;
        }
        // RFC 8257 §3.3 step 4: the observation window ends once SND.UNA passes WindowEnd.
        if ack.snd_una > window_end {
            // Steps 5-6, DCTCP eq. (1): alpha <- (1 - g)·alpha + g·F.
            let f = if self.bytes_acked == 0 {
                0.0
            } else {
                self.bytes_marked as f64 / self.bytes_acked as f64
            };
            self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
            // Steps 7-8: next window, reset counters.
            self.window_end = Some(ack.snd_max);
            self.bytes_acked = 0;
            self.bytes_marked = 0;
        }
        // DCTCP §3.1 / RFC 8257 §3.3 step 9: on ECE, cut by alpha/2, at most once per window
        // of data (RFC 3168 §6.1.2).
        let may_cut = may_cut && !matches!(self.cut_end, Some(end) if ack.snd_una <= end);
        if ack.ece && may_cut {
            self.cut_from(self.reno.window(), ack.snd_max);
            return true;
        }
        false
    }

    #[inline]
    fn in_ecn_cut(&self, snd_una: u64) -> bool {
        matches!(self.cwr_end, Some(end) if snd_una <= end)
    }

    fn ecn_cut_now(&mut self, snd_max: u64) -> bool {
        // Called in fast recovery, whose window is ssthresh (the inflation aside).
        self.cut_from(self.reno.window().min(self.reno.ssthresh()), snd_max);
        true
    }

    #[inline]
    fn on_ack(&mut self, now: Time, bytes_acked: u64) {
        self.reno.on_ack(now, bytes_acked);
    }

    fn on_congestion_event(&mut self, now: Time, flight: u64, snd_max: u64) {
        // RFC 3168 §6.1.2: a loss reduction also counts as this window's reduction.
        self.cut_end = Some(snd_max);
        self.cwr_end = None;
        if self.loss_by_alpha {
            // ns-3.44 TcpSocketBase::EnterRecovery: ssthresh = GetSsThresh(), cwnd = ssthresh
            // plus the segments that left (its classic recovery; with SACK it paces by PRR).
            let t = self.alpha_ssthresh();
            self.reno.enter_recovery_with(t);
            return;
        }
        self.reno.on_congestion_event(now, flight, snd_max);
    }

    #[inline]
    fn on_recovery_dup_ack(&mut self) {
        self.reno.on_recovery_dup_ack();
    }

    #[inline]
    fn on_partial_ack(&mut self, bytes_acked: u64) {
        self.reno.on_partial_ack(bytes_acked);
    }

    #[inline]
    fn on_recovery_exit(&mut self, flight: u64) {
        self.reno.on_recovery_exit(flight);
    }

    fn on_rto(&mut self, now: Time, flight: u64, snd_max: u64, is_repeat: bool) {
        self.cut_end = Some(snd_max);
        self.cwr_end = None;
        if self.loss_by_alpha {
            // ns-3.44 TcpSocketBase::ReTxTimeout: ssthresh = GetSsThresh() unless the head was
            // already retransmitted by the timer; cwnd one segment.
            let t = (!is_repeat).then(|| self.alpha_ssthresh());
            self.reno.timeout_with(t);
            return;
        }
        self.reno.on_rto(now, flight, snd_max, is_repeat);
    }

    #[inline]
    fn on_syn_timeout(&mut self) {
        self.reno.on_syn_timeout();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ack(bytes_acked: u64, ece: bool, snd_una: u64, snd_max: u64) -> AckInfo {
        AckInfo { bytes_acked, ece, snd_una, snd_max }
    }

    #[test]
    fn alpha_updates_once_per_window_with_marked_fraction() {
        let mut d = Dctcp::new(NewReno::new(MSS, 4 * MSS), 0.5, 0.0, false);
        // First window: 4 segments outstanding, 1 of them marked (no cut allowed here).
        assert!(!d.on_ecn(Time::ZERO, &ack(MSS, true, MSS, 4 * MSS), false));
        assert_eq!(d.alpha(), 0.0);
        d.on_ecn(Time::ZERO, &ack(MSS, false, 2 * MSS, 5 * MSS), false);
        d.on_ecn(Time::ZERO, &ack(MSS, false, 3 * MSS, 6 * MSS), false);
        d.on_ecn(Time::ZERO, &ack(MSS, false, 4 * MSS, 7 * MSS), false);
        assert_eq!(d.alpha(), 0.0, "SND.UNA == WindowEnd does not end the window");
        d.on_ecn(Time::ZERO, &ack(MSS, false, 5 * MSS, 8 * MSS), false);
        // F = 1/5 over the window that ended: alpha = 0.5·0 + 0.5·0.2.
        assert!((d.alpha() - 0.1).abs() < 1e-12);
    }

    #[test]
    fn ece_cuts_by_half_alpha_once_per_window() {
        let mut d = Dctcp::new(NewReno::new(MSS, 10 * MSS), 1.0 / 16.0, 1.0, false);
        assert!(d.on_ecn(Time::ZERO, &ack(MSS, true, MSS, 10 * MSS), true));
        assert_eq!(d.window(), 5 * MSS);
        assert_eq!(d.ssthresh(), 5 * MSS);
        // Still inside the window of the cut.
        assert!(!d.on_ecn(Time::ZERO, &ack(MSS, true, 10 * MSS, 12 * MSS), true));
        assert!(d.on_ecn(Time::ZERO, &ack(MSS, true, 11 * MSS, 12 * MSS), true));
        assert_eq!(d.window(), Dctcp::cut_window(5 * MSS, d.alpha(), MSS));
    }

    /// A loss halves the flight (RFC 8257 §3.5) by default; with `loss_by_alpha` it cuts the
    /// window as a mark would, `cwnd·(1 − alpha/2)` (ns-3.44), at a fast retransmit (plus the
    /// three segments that left) and at a first timeout, and a repeated timeout keeps it.
    #[test]
    fn loss_halves_or_cuts_by_alpha() {
        let alpha_after = || {
            // One observation window of five ACKed segments, two marked, g = 0.5, alpha from 0:
            // alpha = 0.5 · 2/5 = 0.2 (as in the first test).
            let mut d = Dctcp::new(NewReno::new(MSS, 20 * MSS), 0.5, 0.0, true);
            for i in 0..5 {
                d.on_ecn(Time::ZERO, &ack(MSS, i == 0 || i == 2, (i + 1) * MSS, (4 + i) * MSS), false);
            }
            assert!((d.alpha() - 0.2).abs() < 1e-12, "{}", d.alpha());
            d
        };
        let mut halve = Dctcp::new(NewReno::new(MSS, 20 * MSS), 0.5, 0.0, false);
        halve.on_congestion_event(Time::ZERO, 20 * MSS, 20 * MSS);
        assert_eq!((halve.ssthresh(), halve.window()), (10 * MSS, 13 * MSS));
        let mut d = alpha_after();
        let a = d.alpha();
        d.on_congestion_event(Time::ZERO, 20 * MSS, 20 * MSS);
        let t = Dctcp::cut_window(20 * MSS, a, MSS);
        assert!(t > 10 * MSS, "a small alpha cuts less than half: {t}");
        assert_eq!((d.ssthresh(), d.window()), (t, t + 3 * MSS));
        let mut d = alpha_after();
        d.on_rto(Time::ZERO, 20 * MSS, 20 * MSS, false);
        assert_eq!((d.ssthresh(), d.window()), (t, MSS));
        d.on_rto(Time::ZERO, MSS, 20 * MSS, true);
        assert_eq!((d.ssthresh(), d.window()), (t, MSS), "a repeated timeout keeps ssthresh");
    }
}
