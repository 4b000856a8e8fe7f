//! Drop oracles: "will LQD (eventually) drop this packet?" (Credence §2.3.1, prediction
//! model; Appendix C).
//!
//! The ground truth an oracle predicts is LQD serving the same arrival sequence: a packet is
//! *positive* if LQD drops it on arrival or pushes it out later. Credence consults its oracle
//! only for packets that satisfy its thresholds (Algorithm 1 line 20), so an oracle may see a
//! subsequence of the arrivals; every query carries the packet's index in the buffer's arrival
//! sequence (0, 1, ... per buffer, counting every arrival, consulted or not), which is what
//! replayed and randomized oracles key on.
//!
//! The hot path dispatches through [`AnyOracle`] (a `match`), not a vtable.

use std::sync::Arc;

use rand::Rng;
use rand_pcg::Pcg64;

use super::features::FeatureVector;
use super::forest::{BoxCache, Forest};

/// The contract of a drop oracle.
pub trait Oracle {
    /// Whether LQD drops (or later pushes out) the arriving packet with features `x`, the
    /// `index`-th arrival of its buffer. PRECONDITION: `index` increases from call to call.
    fn predict_drop(&mut self, x: &FeatureVector, index: u64) -> bool;
}

/// Replays a record of LQD's decisions: exact ("perfect predictions") when the record comes
/// from LQD on the same arrival sequence, as in the discrete-time model
/// ([`dtmodel::lqd_drops`](super::dtmodel::lqd_drops)). Indices past the record answer
/// "accept".
#[derive(Clone, Debug, PartialEq)]
pub struct Perfect {
    drops: Arc<[bool]>,
}

impl Perfect {
    /// `drops[k]`: whether LQD drops the `k`-th arrival.
    pub fn new(drops: impl Into<Arc<[bool]>>) -> Perfect {
        Perfect { drops: drops.into() }
    }
}

impl Oracle for Perfect {
    #[inline]
    fn predict_drop(&mut self, _x: &FeatureVector, index: u64) -> bool {
        self.drops.get(index as usize).copied().unwrap_or(false)
    }
}

/// Flips the inner oracle's answer with probability `p` (Credence §4.2 and Figure 14: "flip
/// each packet drop (or accept) ... with a certain probability").
///
/// The flip of the `k`-th arrival is the `k`-th draw of a seeded PCG-64 stream (jumping over
/// arrivals the oracle is not asked about with `advance`), so the flipped prediction of every
/// packet is a fixed function of `(seed, k)`, whichever packets the policy consults; this is
/// what makes the predicted sequence `ϕ'` of Definition 1 well defined.
#[derive(Clone, Debug, PartialEq)]
pub struct Flip {
    inner: Box<AnyOracle>,
    p: f64,
    rng: Pcg64,
    /// Index of the arrival the stream's next draw belongs to.
    next: u64,
}

impl Flip {
    /// Flip `inner`'s answers with probability `p` (in `[0, 1]`), stream seeded by `seed`.
    pub fn new(inner: AnyOracle, p: f64, seed: u64) -> Flip {
        debug_assert!((0.0..=1.0).contains(&p), "flip probability {p}");
        Flip { inner: Box::new(inner), p, rng: rand::SeedableRng::seed_from_u64(seed), next: 0 }
    }

    /// Whether the `index`-th arrival's prediction is flipped (advances the stream).
    #[inline]
    fn flips(&mut self, index: u64) -> bool {
        if index > self.next {
            self.rng.advance((index - self.next) as u128);
        }
        // PRECONDITION (trait): indices increase; a repeated index draws afresh.
        debug_assert!(index >= self.next, "oracle queried out of order");
        self.next = index + 1;
        self.rng.gen::<f64>() < self.p
    }
}

impl Oracle for Flip {
    // Not inlined: it recurses into `AnyOracle`, which is thereby free to inline into the
    // policy (see there).
    #[inline(never)]
    fn predict_drop(&mut self, x: &FeatureVector, index: u64) -> bool {
        let inner = self.inner.predict_drop(x, index);
        inner ^ self.flips(index)
    }
}

/// Every oracle, for dispatch by `match`.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyOracle {
    /// A random forest (see [`Forest`]), shared between the buffers of a run, with this
    /// buffer's [`BoxCache`].
    Forest(Arc<Forest>, BoxCache),
    /// Replays LQD's decisions ([`Perfect`]).
    Perfect(Perfect),
    /// Flips another oracle's answers at random ([`Flip`]).
    Flip(Flip),
    /// Always "LQD transmits it" (never drops): Credence reduces to FollowLQD plus the
    /// safeguard.
    AlwaysAccept,
    /// Always "LQD drops it": all false positives, the first pitfall of §2.3.2.
    AlwaysDrop,
}

impl AnyOracle {
    /// Whether the oracle reads the averaged features (`avg_queue_len`, `avg_occupancy`), so
    /// that a policy may skip maintaining the averages (two divisions per arrival).
    pub fn uses_averages(&self) -> bool {
        use super::features::{AVG_OCCUPANCY, AVG_QUEUE_LEN};
        match self {
            AnyOracle::Forest(f, _) => f.uses_feature(AVG_QUEUE_LEN) || f.uses_feature(AVG_OCCUPANCY),
            AnyOracle::Flip(f) => f.inner.uses_averages(),
            AnyOracle::Perfect(_) | AnyOracle::AlwaysAccept | AnyOracle::AlwaysDrop => false,
        }
    }

    /// [`Oracle::predict_drop`] of the features `[queue_len, 0, occupancy, 0]`, what a policy
    /// that does not keep the averages (see [`uses_averages`](Self::uses_averages)) passes.
    #[inline]
    pub fn predict_drop_counts(&mut self, queue_len: u64, occupancy: u64, index: u64) -> bool {
        match self {
            AnyOracle::Forest(f, cache) => f.predict_drop_counts(queue_len, occupancy, cache),
            o => o.predict_drop(&[queue_len as f64, 0.0, occupancy as f64, 0.0], index),
        }
    }
}

impl Oracle for AnyOracle {
    // PERF: inlined into Credence's `admit` (the recursion through `Flip` is a call). With
    // the box test inlined too (`Forest::predict_drop_cached`), this saved 131 M of the
    // 4.1 M queries' 274 M instructions on the Credence benchmark.
    #[inline]
    fn predict_drop(&mut self, x: &FeatureVector, index: u64) -> bool {
        match self {
            AnyOracle::Forest(f, cache) => f.predict_drop_cached(x, cache),
            AnyOracle::Perfect(o) => o.predict_drop(x, index),
            AnyOracle::Flip(o) => o.predict_drop(x, index),
            AnyOracle::AlwaysAccept => false,
            AnyOracle::AlwaysDrop => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const X: FeatureVector = [0.0; 4];

    #[test]
    fn perfect_replays_the_record_by_arrival_index() {
        let mut o = Perfect::new(vec![false, true, false]);
        assert_eq!([0, 1, 2, 3].map(|k| o.predict_drop(&X, k)), [false, true, false, false]);
    }

    #[test]
    fn flip_extremes_are_identity_and_negation() {
        let truth = vec![false, true, true, false, true];
        let mut keep = Flip::new(AnyOracle::Perfect(Perfect::new(truth.clone())), 0.0, 1);
        let mut negate = Flip::new(AnyOracle::Perfect(Perfect::new(truth.clone())), 1.0, 1);
        for (k, &t) in truth.iter().enumerate() {
            assert_eq!(keep.predict_drop(&X, k as u64), t);
            assert_eq!(negate.predict_drop(&X, k as u64), !t);
        }
    }

    #[test]
    fn flip_of_a_packet_does_not_depend_on_which_packets_were_asked() {
        let mut all = Flip::new(AnyOracle::AlwaysAccept, 0.5, 9);
        let every: Vec<bool> = (0..64).map(|k| all.predict_drop(&X, k)).collect();
        let mut some = Flip::new(AnyOracle::AlwaysAccept, 0.5, 9);
        for k in (0..64).filter(|k| k % 3 == 1) {
            assert_eq!(some.predict_drop(&X, k), every[k as usize], "arrival {k}");
        }
        // About half flip (a loose sanity bound; the stream is fixed by the seed).
        let n = every.iter().filter(|&&b| b).count();
        assert!((16..=48).contains(&n), "{n} of 64 flipped");
    }

    #[test]
    fn forest_oracle_asks_the_forest() {
        let f = Forest::from_json_str(super::super::forest::tests::TWO_TREES).unwrap();
        let mut o = AnyOracle::Forest(Arc::new(f), BoxCache::default());
        assert!(o.predict_drop(&[2500.0, 0.0, 6000.0, 0.0], 0));
        assert!(!o.predict_drop(&[1000.0, 0.0, 5000.0, 0.0], 1));
        assert!(AnyOracle::AlwaysDrop.predict_drop(&X, 0));
        assert!(!AnyOracle::AlwaysAccept.predict_drop(&X, 0));
    }
}
