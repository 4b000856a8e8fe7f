//! Round-trip time estimation and the retransmission timeout, per RFC 6298.
//!
//! Pipeline position: owned by a TCP sender ([`crate::tcp::Conn`]); fed one sample per ACK
//! of new data, taken from the echoed timestamp (RFC 7323 §4 "RTTM"). Because every sample
//! comes from a timestamp, retransmitted segments yield valid samples: Karn's ambiguity
//! (RFC 6298 §3) cannot arise, so no sample is ever discarded.
//!
//! All arithmetic is integer picoseconds. RFC 6298's gains alpha = 1/8 and beta = 1/4 are
//! applied as exact integer fractions (rounding down).
//!
//! INVARIANT: `min_rto <= rto() <= max_rto` once a sample has been taken; before that,
//! `rto()` is the configured initial RTO (clamped to `max_rto`) times the backoff.

use units::Dur;

/// Clock granularity G of RFC 6298 (2.2)/(2.3): the floor of the variance term.
/// A host timer wheel of 1 µs; irrelevant whenever `min_rto` dominates.
pub const CLOCK_GRANULARITY: Dur = Dur::from_us(1);

/// RFC 6298 estimator: smoothed RTT, RTT variation and the (backed-off) RTO.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RttEstimator {
    /// SRTT, `None` before the first measurement.
    srtt: Option<Dur>,
    /// RTTVAR.
    rttvar: Dur,
    /// Current RTO, including any exponential backoff.
    rto: Dur,
    min_rto: Dur,
    max_rto: Dur,
}

impl RttEstimator {
    /// An estimator with no sample yet. PRECONDITION: `min_rto <= max_rto`.
    pub fn new(init_rto: Dur, min_rto: Dur, max_rto: Dur) -> RttEstimator {
        debug_assert!(min_rto <= max_rto, "min_rto > max_rto");
        // RFC 6298 (2.1): until a measurement is made, RTO = the initial RTO.
        RttEstimator { srtt: None, rttvar: Dur::ZERO, rto: init_rto.min(max_rto), min_rto, max_rto }
    }

    /// Feed one RTT measurement `r`. Recomputes the RTO, which also discards any backoff
    /// (RFC 6298 §5: the backed-off RTO is kept only until a new sample arrives).
    pub fn on_sample(&mut self, r: Dur) {
        match self.srtt {
            None => {
                // RFC 6298 (2.2): SRTT <- R, RTTVAR <- R/2.
                self.srtt = Some(r);
                self.rttvar = Dur(r.ps() / 2);
            }
            Some(srtt) => {
                // RFC 6298 (2.3): RTTVAR <- (1 - beta)·RTTVAR + beta·|SRTT - R'|, beta = 1/4,
                // using the old SRTT; then SRTT <- (1 - alpha)·SRTT + alpha·R', alpha = 1/8.
                let diff = srtt.ps().abs_diff(r.ps());
                self.rttvar = Dur((3 * self.rttvar.ps() + diff) / 4);
                self.srtt = Some(Dur((7 * srtt.ps() + r.ps()) / 8));
            }
        }
        self.rto = self.computed_rto();
    }

    /// The retransmission timer expired: RFC 6298 (5.5), RTO <- 2·RTO, clamped at the
    /// maximum (RFC 6298 (2.5)).
    pub fn on_timeout(&mut self) {
        self.rto = self.rto.saturating_double().min(self.max_rto);
    }

    /// The current retransmission timeout.
    #[inline]
    pub fn rto(&self) -> Dur {
        self.rto
    }

    /// The smoothed RTT, `None` before the first sample.
    #[inline]
    pub fn srtt(&self) -> Option<Dur> {
        self.srtt
    }

    /// The RTT variation estimate (zero before the first sample).
    #[inline]
    pub fn rttvar(&self) -> Dur {
        self.rttvar
    }

    fn computed_rto(&self) -> Dur {
        let srtt = self.srtt.unwrap_or(Dur::ZERO);
        // RFC 6298 (2.2)/(2.3): RTO <- SRTT + max(G, K·RTTVAR), K = 4.
        let rto = srtt + CLOCK_GRANULARITY.max(Dur(4 * self.rttvar.ps()));
        // RFC 6298 (2.4) lower bound (configurable: datacenters use far less than 1 s) and
        // (2.5) upper bound.
        rto.max(self.min_rto).min(self.max_rto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        // No lower bound, so the formula itself is visible.
        RttEstimator::new(Dur::from_ms(10), Dur::ZERO, Dur::from_ms(1000))
    }

    #[test]
    fn before_first_sample_rto_is_init_rto() {
        let e = est();
        assert_eq!(e.rto(), Dur::from_ms(10));
        assert_eq!(e.srtt(), None);
    }

    #[test]
    fn first_sample_sets_srtt_r_and_rttvar_half_r() {
        let mut e = est();
        e.on_sample(Dur::from_us(100));
        assert_eq!(e.srtt(), Some(Dur::from_us(100)));
        assert_eq!(e.rttvar(), Dur::from_us(50));
        // RTO = SRTT + 4·RTTVAR = 100 + 200 us.
        assert_eq!(e.rto(), Dur::from_us(300));
    }

    #[test]
    fn subsequent_samples_use_beta_quarter_alpha_eighth() {
        let mut e = est();
        e.on_sample(Dur::from_us(100));
        e.on_sample(Dur::from_us(180));
        // RTTVAR = 3/4·50 + 1/4·|100 - 180| = 37.5 + 20 = 57.5 us.
        assert_eq!(e.rttvar(), Dur::from_ns(57_500));
        // SRTT = 7/8·100 + 1/8·180 = 87.5 + 22.5 = 110 us.
        assert_eq!(e.srtt(), Some(Dur::from_us(110)));
        assert_eq!(e.rto(), Dur::from_us(110 + 230));
        // A constant RTT drives RTTVAR toward 0, where G takes over.
        for _ in 0..200 {
            e.on_sample(Dur::from_us(110));
        }
        assert_eq!(e.srtt(), Some(Dur::from_us(110)));
        assert_eq!(e.rttvar(), Dur::ZERO);
        assert_eq!(e.rto(), Dur::from_us(110) + CLOCK_GRANULARITY);
    }

    #[test]
    fn rto_is_clamped_to_min_rto() {
        let mut e = RttEstimator::new(Dur::from_ms(10), Dur::from_ms(5), Dur::from_ms(1000));
        e.on_sample(Dur::from_us(100));
        assert_eq!(e.rto(), Dur::from_ms(5));
    }

    #[test]
    fn timeout_doubles_rto_clamped_at_max_and_sample_resets_backoff() {
        let mut e = RttEstimator::new(Dur::from_ms(10), Dur::from_ms(10), Dur::from_ms(50));
        e.on_timeout();
        assert_eq!(e.rto(), Dur::from_ms(20));
        e.on_timeout();
        assert_eq!(e.rto(), Dur::from_ms(40));
        e.on_timeout();
        assert_eq!(e.rto(), Dur::from_ms(50));
        e.on_timeout();
        assert_eq!(e.rto(), Dur::from_ms(50));
        e.on_sample(Dur::from_us(20));
        assert_eq!(e.rto(), Dur::from_ms(10));
    }
}
