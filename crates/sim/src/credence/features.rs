//! The features a drop oracle sees for an arriving packet (Credence §3.4): the destination
//! queue's length, the shared buffer's occupancy, and their moving averages over one base
//! round-trip time.
//!
//! Averaging (§3.4 says "moving averages (exponentially weighted) over one round-trip time";
//! the sampling and the weight are our reading): an exponentially weighted moving average of
//! the value *sampled at packet arrivals* (queue length of the destination queue, occupancy of
//! the buffer, both before the packet is enqueued), with time constant `tau` = one base RTT.
//! A sample taken `dt` after the previous one gets weight `w = dt / (dt + tau)`, the first-order
//! rational approximation of `1 - exp(-dt / tau)`: no `exp` on the hot path, `w -> 0` for
//! back-to-back samples and `w -> 1` after a long quiet period, so an average never holds a
//! value older than a few RTTs. The per-queue average is updated only by arrivals to that
//! queue; the occupancy average by every arrival. The first sample initializes an average.
//!
//! Units are the buffer's (bytes in the packet simulator, packets in the discrete model).

use units::{Dur, Time};

/// Number of features.
pub const NUM_FEATURES: usize = 4;

/// Index of the destination queue's length in a feature vector.
pub const QUEUE_LEN: usize = 0;
/// Index of the destination queue's average length.
pub const AVG_QUEUE_LEN: usize = 1;
/// Index of the shared buffer's occupancy.
pub const OCCUPANCY: usize = 2;
/// Index of the shared buffer's average occupancy.
pub const AVG_OCCUPANCY: usize = 3;

/// Feature names as a forest file spells them, by index (the order of the LQD trace in §4.1:
/// queue length, average queue length, shared buffer occupancy, average occupancy).
pub const FEATURE_NAMES: [&str; NUM_FEATURES] = ["queue_len", "avg_queue_len", "occupancy", "avg_occupancy"];

/// What an oracle sees of one arrival, indexed by [`QUEUE_LEN`], [`AVG_QUEUE_LEN`],
/// [`OCCUPANCY`] and [`AVG_OCCUPANCY`].
pub type FeatureVector = [f64; NUM_FEATURES];

/// Tracks the averages of one buffer. Sized lazily by the first [`sample`](Self::sample).
#[derive(Clone, Debug, PartialEq)]
pub struct Features {
    tau_ps: f64,
    queues: Vec<Avg>,
    occupancy: Avg,
}

/// One moving average and the time of its last sample.
// PERF: average and time side by side (one cache line per queue), not parallel vectors.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Avg {
    value: f64,
    /// Time of the last sample in ps; `u64::MAX` before the first.
    last_ps: u64,
}

const UNSEEN: Avg = Avg { value: 0.0, last_ps: u64::MAX };

impl Features {
    /// Averages with time constant `tau` (one base RTT).
    pub fn new(tau: Dur) -> Features {
        Features { tau_ps: tau.ps().max(1) as f64, queues: Vec::new(), occupancy: UNSEEN }
    }

    /// Allocate per-queue state for `num_queues` queues (once).
    pub fn init(&mut self, num_queues: usize) {
        self.queues = vec![UNSEEN; num_queues];
    }

    /// Record an arrival for queue `q` (length `queue_len`, buffer occupancy `occupancy`, both
    /// before the packet) at `now` and return the feature vector, averages including this
    /// sample.
    #[inline]
    pub fn sample(&mut self, q: usize, queue_len: u64, occupancy: u64, now: Time) -> FeatureVector {
        let (ql, occ) = (queue_len as f64, occupancy as f64);
        let aq = self.queues[q].sample(ql, now, self.tau_ps);
        let ao = self.occupancy.sample(occ, now, self.tau_ps);
        [ql, aq, occ, ao]
    }
}

impl Avg {
    #[inline]
    fn sample(&mut self, x: f64, now: Time, tau_ps: f64) -> f64 {
        if self.last_ps == u64::MAX {
            self.value = x;
        } else {
            let dt = now.ps().saturating_sub(self.last_ps) as f64;
            let w = dt / (dt + tau_ps);
            self.value += w * (x - self.value);
        }
        self.last_ps = now.ps();
        self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_initializes_and_one_rtt_later_weighs_half() {
        let mut f = Features::new(Dur::from_us(10));
        f.init(2);
        assert_eq!(f.sample(0, 1000, 4000, Time::ZERO), [1000.0, 1000.0, 4000.0, 4000.0]);
        // dt = tau: w = 1/2 for both averages.
        let x = f.sample(0, 3000, 8000, Time::from_us(10));
        assert_eq!(x, [3000.0, 2000.0, 8000.0, 6000.0]);
        // Back-to-back samples barely move an average.
        let x = f.sample(0, 100_000, 8000, Time::from_us(10));
        assert_eq!(x[AVG_QUEUE_LEN], 2000.0);
    }

    #[test]
    fn each_queue_has_its_own_average_and_the_occupancy_one_is_shared() {
        let mut f = Features::new(Dur::from_us(10));
        f.init(2);
        f.sample(0, 1000, 1000, Time::ZERO);
        let x = f.sample(1, 0, 1000, Time::from_us(30));
        assert_eq!(x[AVG_QUEUE_LEN], 0.0); // queue 1's first sample
        assert_eq!(x[AVG_OCCUPANCY], 1000.0);
    }
}
