//! CUBIC (RFC 9438; Ha, Rhee and Xu, "CUBIC: A New TCP-Friendly High-Speed TCP Variant",
//! SIGOPS OSR 2008), the window law of Linux's default TCP: after a congestion event the window
//! follows a cubic function of the time since that event, concave up to the window at which
//! the loss happened (`W_max`) and convex beyond it, and is cut by `β = 0.7` rather than halved.
//! Loss recovery is NewReno's (the sender owns detection; [`NewReno`] keeps `cwnd` during fast
//! recovery), with CUBIC's threshold.
//!
//! What is implemented, by RFC 9438 section:
//! - §4.2 the window function, eq. (1) `W_cubic(t) = C·(t − K)³ + W_max` and eq. (2)
//!   `K = ∛((W_max − cwnd_epoch)/C)`, with `C = 0.4` and windows in segments, `t` in seconds
//!   since the congestion-avoidance epoch began;
//! - §4.3 the Reno-friendly region: `W_est` grows by eq. (4) `α_cubic · segments_acked / cwnd`
//!   with eq. (5) `α_cubic = 3(1 − β)/(1 + β)` (1 once `W_est` reaches `cwnd_prior`), and the
//!   window is `W_est` while `W_cubic(t) < W_est`;
//! - §4.4-4.5 the concave and convex regions: per ACK, `cwnd += (target − cwnd)/cwnd` per
//!   acknowledged segment, `target = W_cubic(t + RTT)` clamped to `[cwnd, 1.5·cwnd]`;
//! - §4.6 multiplicative decrease on loss or ECN-Echo: `ssthresh = β·cwnd`, `cwnd_prior = cwnd`
//!   (ECN: at most once per window, RFC 3168 §6.1.2);
//! - §4.7 fast convergence: `W_max = cwnd·(1 + β)/2` if the window is below the previous
//!   `W_max`, else `W_max = cwnd`;
//! - §4.8 timeout: the same decrease, then `cwnd` = one segment, and a new epoch.
//!
//! Not implemented: HyStart++ (RFC 9406; slow start here is RFC 5681's), the spurious
//! congestion event undo of §4.9, and §4.6's option of basing `ssthresh` on FlightSize.
//!
//! INVARIANT: `cwnd >= mss` (it lives in the inner [`NewReno`]); every float here is finite
//! (windows are bounded by `u64` bytes and `t` by the clock).

use units::{Dur, Time};

use super::{AckInfo, CongestionControl, NewReno};

/// RFC 9438 §4.2: the scaling constant C, in segments per second cubed.
pub const CUBIC_C: f64 = 0.4;
/// RFC 9438 §4.6: the multiplicative decrease factor β_cubic.
pub const CUBIC_BETA: f64 = 0.7;

/// CUBIC congestion window state.
#[derive(Clone, Debug, PartialEq)]
pub struct Cubic {
    reno: NewReno,
    /// `cwnd` in bytes with its fractional part (the per-ACK increments are fractions of a
    /// segment); set from `reno` whenever anything else moved the window.
    cwnd_f: f64,
    /// RFC 9438 `W_max` in segments: the window just before the last reduction (0: none yet).
    w_max: f64,
    /// RFC 9438 `cwnd_prior` in segments.
    cwnd_prior: f64,
    /// Start of the current congestion-avoidance epoch (`None`: starts at the next ACK in
    /// congestion avoidance).
    epoch: Option<Time>,
    /// RFC 9438 `K` in seconds, for the current epoch.
    k: f64,
    /// RFC 9438 `W_est` in segments.
    w_est: f64,
    /// The smoothed RTT (the sender's estimate), used for `W_cubic(t + RTT)`.
    srtt: Dur,
    /// `SND.NXT` at the last reduction; no ECN cut until `SND.UNA` passes it.
    cut_end: Option<u64>,
}

impl Cubic {
    /// CUBIC over the NewReno recovery window `reno` (its initial window and SMSS).
    pub fn new(reno: NewReno) -> Cubic {
        Cubic {
            cwnd_f: reno.window() as f64,
            reno,
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch: None,
            k: 0.0,
            w_est: 0.0,
            srtt: Dur::ZERO,
            cut_end: None,
        }
    }

    fn mss_f(&self) -> f64 {
        self.reno.mss() as f64
    }

    /// RFC 9438 eq. (1): the window `t` seconds into the epoch, in segments.
    fn w_cubic(&self, t: f64) -> f64 {
        let d = t - self.k;
        CUBIC_C * d * d * d + self.w_max
    }

    /// §4.6-4.7: remember the window of this congestion event and return the new `ssthresh`
    /// in bytes (`β·cwnd`). The epoch restarts at the next ACK in congestion avoidance.
    fn decrease(&mut self) -> u64 {
        let cwnd = self.reno.window() as f64 / self.mss_f();
        // §4.7 fast convergence: a window below the last W_max means the available bandwidth
        // shrank; release some of it.
        self.w_max = if cwnd < self.w_max { cwnd * (1.0 + CUBIC_BETA) / 2.0 } else { cwnd };
        self.cwnd_prior = cwnd;
        self.epoch = None;
        (self.reno.window() as f64 * CUBIC_BETA) as u64
    }
}

impl CongestionControl for Cubic {
    #[inline]
    fn window(&self) -> u64 {
        self.reno.window()
    }

    #[inline]
    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn on_ecn(&mut self, _now: Time, ack: &AckInfo, may_cut: bool) -> bool {
        // §4.6: an ECN-Echo is a congestion event, at most one reduction per window of data.
        let may_cut = may_cut && !matches!(self.cut_end, Some(end) if ack.snd_una <= end);
        if ack.ece && may_cut {
            let ssthresh = self.decrease();
            self.reno.reduce_to(ssthresh.max(2 * self.reno.mss()));
            self.cwnd_f = self.reno.window() as f64;
            self.cut_end = Some(ack.snd_max);
            return true;
        }
        false
    }

    fn on_rtt(&mut self, srtt: Dur) {
        self.srtt = srtt;
    }

    fn on_ack(&mut self, now: Time, bytes_acked: u64) {
        if self.reno.window() < self.reno.ssthresh() {
            // Slow start: RFC 5681's, as NewReno (no HyStart++).
            self.reno.on_ack(now, bytes_acked);
            self.cwnd_f = self.reno.window() as f64;
            return;
        }
        // INVARIANT: `cwnd_f` truncates to the window: every callback that moves `reno` sets it.
        let mss = self.mss_f();
        let cwnd = self.cwnd_f / mss;
        let epoch = match self.epoch {
            Some(e) => e,
            None => {
                // §4.2: a new epoch; eq. (2) with cwnd_epoch = cwnd. Without a congestion
                // event yet (W_max unset) the curve starts at the current window.
                if self.w_max > cwnd {
                    self.k = ((self.w_max - cwnd) / CUBIC_C).cbrt();
                } else {
                    self.k = 0.0;
                    self.w_max = cwnd;
                }
                self.w_est = cwnd;
                self.epoch = Some(now);
                now
            }
        };
        let t = now.saturating_since(epoch).as_secs_f64();
        let segs = bytes_acked as f64 / mss;
        // §4.3 eq. (4)-(5): the window standard TCP would have, with CUBIC's decrease.
        let alpha = if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)
        };
        self.w_est += alpha * segs / cwnd;
        let next = if self.w_cubic(t) < self.w_est {
            // §4.3: the Reno-friendly region.
            self.w_est.max(cwnd)
        } else {
            // §4.4-4.5: toward W_cubic one RTT ahead, at most half a segment per segment.
            let target = self.w_cubic(t + self.srtt.as_secs_f64()).clamp(cwnd, 1.5 * cwnd);
            cwnd + (target - cwnd) / cwnd * segs
        };
        // CORRECTNESS: `next` is finite and >= cwnd >= 1 segment; the cast saturates.
        self.cwnd_f = (next * mss).min(u64::MAX as f64 / 2.0);
        self.reno.set_window(self.cwnd_f as u64);
    }

    fn on_congestion_event(&mut self, _now: Time, _flight: u64, snd_max: u64) {
        // RFC 3168 §6.1.2: a loss reduction also counts as this window's reduction.
        self.cut_end = Some(snd_max);
        let ssthresh = self.decrease();
        self.reno.enter_recovery_with(ssthresh);
        self.cwnd_f = self.reno.window() as f64;
    }

    fn on_recovery_dup_ack(&mut self) {
        self.reno.on_recovery_dup_ack();
        self.cwnd_f = self.reno.window() as f64;
    }

    fn on_partial_ack(&mut self, bytes_acked: u64) {
        self.reno.on_partial_ack(bytes_acked);
        self.cwnd_f = self.reno.window() as f64;
    }

    fn on_recovery_exit(&mut self, flight: u64) {
        self.reno.on_recovery_exit(flight);
        self.cwnd_f = self.reno.window() as f64;
    }

    fn on_rto(&mut self, _now: Time, _flight: u64, snd_max: u64, is_repeat: bool) {
        // §4.8: the first timeout of a segment is a congestion event; cwnd = 1 segment.
        self.cut_end = Some(snd_max);
        let ssthresh = if is_repeat { None } else { Some(self.decrease()) };
        self.reno.timeout_with(ssthresh);
        self.epoch = None;
        self.cwnd_f = self.reno.window() as f64;
    }

    fn on_syn_timeout(&mut self) {
        self.reno.on_syn_timeout();
        self.cwnd_f = self.reno.window() as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ack(c: &mut Cubic, now: Time, segs: u64) {
        for _ in 0..segs {
            c.on_ack(now, MSS);
        }
    }

    fn at_ms(ms: u64) -> Time {
        Time::ZERO.saturating_add(Dur::from_ms(ms))
    }

    #[test]
    fn loss_cuts_by_beta_and_remembers_w_max() {
        let mut c = Cubic::new(NewReno::new(MSS, 100 * MSS));
        c.on_congestion_event(Time::ZERO, 100 * MSS, 0);
        // §4.6: ssthresh = 0.7 cwnd; NewReno's recovery adds the three segments that left.
        assert_eq!(c.ssthresh(), 70 * MSS);
        assert_eq!(c.window(), 73 * MSS);
        c.on_recovery_exit(80 * MSS);
        assert_eq!(c.window(), 70 * MSS);
        assert_eq!(c.w_max, 100.0);
        // §4.7: the next event below W_max = 100 lowers W_max to cwnd (1 + β)/2.
        c.on_congestion_event(Time::ZERO, 70 * MSS, 0);
        assert!((c.w_max - 70.0 * 0.85).abs() < 1e-9, "{}", c.w_max);
        assert_eq!(c.ssthresh(), 49 * MSS);
    }

    #[test]
    fn window_follows_the_cubic_curve_and_plateaus_at_w_max() {
        // After a loss at W_max = 100 the window returns to W_max at t = K = ∛(30/0.4) ≈ 4.22 s
        // (eq. 2) and stays near it around K (the plateau), then grows convexly. A 200 ms RTT
        // keeps the Reno-friendly estimate (0.53 segments per RTT) below the curve throughout.
        let mut c = Cubic::new(NewReno::new(MSS, 100 * MSS));
        c.on_rtt(Dur::from_ms(200));
        c.on_congestion_event(Time::ZERO, 100 * MSS, 0);
        c.on_recovery_exit(100 * MSS);
        let k = (30.0f64 / CUBIC_C).cbrt();
        // One window of ACKs per RTT.
        let mut t = 0u64;
        let mut at = |c: &mut Cubic, until_ms: u64| {
            while t < until_ms {
                let w = c.window() / MSS;
                ack(c, at_ms(t), w);
                t += 200;
            }
            c.window() as f64 / MSS as f64
        };
        let w_half = at(&mut c, (k * 500.0) as u64);
        let w_k = at(&mut c, (k * 1000.0) as u64);
        let w_after = at(&mut c, (k * 1000.0) as u64 + 2000);
        assert!(c.w_est < 100.0, "{}", c.w_est);
        // eq. (1) at t = K/2: 100 - 0.4 (K/2)^3 = 100 - 30/8 = 96.25 (concave: most of the way
        // back already); the window tracks W_cubic(t + RTT) within a segment.
        assert!((w_half - 96.25).abs() < 1.0, "{w_half}");
        assert!((w_k - 100.0).abs() < 1.0, "{w_k}");
        // eq. (1) two seconds past K: 100 + 0.4·8 = 103.2.
        assert!((w_after - 103.2).abs() < 1.0, "{w_after}");
    }

    #[test]
    fn reno_friendly_region_at_small_windows_and_long_rtts() {
        // A small W_max makes the cubic curve flat: W_est (eq. 4) dominates, growing by
        // α_cubic ≈ 0.53 segments per window of ACKs until cwnd_prior, then by 1.
        let mut c = Cubic::new(NewReno::new(MSS, 10 * MSS));
        c.on_rtt(Dur::from_ms(100));
        c.on_congestion_event(Time::ZERO, 10 * MSS, 0);
        c.on_recovery_exit(10 * MSS);
        assert_eq!(c.window(), 7 * MSS);
        // Ten RTTs of 100 ms, each acknowledging one window.
        for r in 0..10 {
            let w = c.window() / MSS;
            ack(&mut c, at_ms(100 * r), w);
        }
        let w = c.window() as f64 / MSS as f64;
        // W_est: 7 -> 10 at 0.53/RTT takes ~5.7 RTTs, then +1 per RTT for the rest: ~14.
        // (W_cubic(1 s) = 10 + 0.4 (1 - 1.88)^3 ≈ 9.7 is below it.)
        assert!((13.0..=15.0).contains(&w), "{w}");
    }

    #[test]
    fn timeout_collapses_to_one_segment_and_ecn_cuts_once_per_window() {
        let mut c = Cubic::new(NewReno::new(MSS, 50 * MSS));
        c.on_rto(Time::ZERO, 50 * MSS, 100, false);
        assert_eq!(c.window(), MSS);
        assert_eq!(c.ssthresh(), 35 * MSS);
        let mut c = Cubic::new(NewReno::new(MSS, 50 * MSS));
        let e = AckInfo { bytes_acked: MSS, ece: true, snd_una: 10, snd_max: 100 };
        assert!(c.on_ecn(Time::ZERO, &e, true));
        assert_eq!(c.window(), 35 * MSS);
        // Same window of data: no second cut.
        assert!(!c.on_ecn(Time::ZERO, &AckInfo { snd_una: 50, ..e }, true));
        assert!(c.on_ecn(Time::ZERO, &AckInfo { snd_una: 101, snd_max: 200, ..e }, true));
        assert_eq!(c.window(), 24_500);
    }
}
