//! Credence (Addanki, Pacut and Schmid, NSDI'24): drop-tail buffer sharing that follows LQD's
//! thresholds and asks a drop oracle (§3.2, Algorithm 1).

use units::{Dur, Time};

use super::virtual_lqd::VirtualLqd;
use super::{Arrival, BufferAdmission, BufferView, Verdict};
use crate::credence::features::Features;
use crate::credence::oracle::{AnyOracle, Oracle};

/// Which parts of Algorithm 1 are on. Credence proper has both; switching them off gives the
/// ablations of §2.3.2 (both off: the naive policy that trusts every prediction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CredenceOptions {
    /// Accept unconditionally while the longest queue is below `B/N` (Algorithm 1 lines
    /// 10-14, green).
    pub safeguard: bool,
    /// Drop when the queue would exceed its LQD threshold (Algorithm 1 lines 17 and 26,
    /// yellow).
    pub thresholds: bool,
}

impl Default for CredenceOptions {
    /// Credence as published: both on.
    fn default() -> Self {
        CredenceOptions { safeguard: true, thresholds: true }
    }
}

/// Why Credence decided what it did, counted over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CredenceStats {
    /// Accepted by the safeguard (longest queue below `B/N`).
    pub safeguard_accepts: u64,
    /// Dropped by the threshold check.
    pub threshold_drops: u64,
    /// Dropped because the buffer was full.
    pub buffer_drops: u64,
    /// Dropped on the oracle's word.
    pub oracle_drops: u64,
    /// Accepted on the oracle's word.
    pub oracle_accepts: u64,
}

/// Credence: a drop-tail policy that tracks LQD's queue lengths as thresholds and consults a
/// drop oracle only when the thresholds allow a packet (Credence §3.2, Algorithm 1).
///
/// On an arrival of `s` units for queue `i` with real length `q_i` and occupancy `Q`:
/// 1. `updateThreshold(i, arrival)` (blue, lines 8 and 35-46): the virtual LQD of
///    [`VirtualLqd`] takes the packet, pushing out of its longest queue if over `B`.
/// 2. Safeguard (green, lines 10-14): if every real queue is shorter than `B/N`, accept
///    (if the packet fits; with unit packets it always does). `N` is the number of queues of
///    the buffer (ports x classes): LQD pushes out per queue, and the safeguard's argument,
///    "LQD cannot push out of a queue shorter than `B/N` when the buffer is full", holds for
///    queues. The check is O(1): the policy counts the queues at or above `B/N` (§3.4).
/// 3. Threshold (yellow, lines 17 and 26): drop unless `q_i + s <= T_i`. With unit packets
///    this is the paper's `q_i < T_i`; with bytes it asks that the whole packet fit under the
///    threshold, which keeps `q_i <= T_i` whenever the thresholds decide.
/// 4. Buffer (line 18): drop unless `Q + s <= B` (the paper's `Q(t) < B`, per packet size).
/// 5. Prediction (lines 20-25): ask the oracle (features per
///    [`credence::features`](crate::credence::features), the arrival's index in this buffer's
///    arrival sequence); drop iff it predicts a drop.
///
/// The safeguard accepts whatever the oracle says, so with perfect predictions Credence can
/// keep a packet LQD pushes out later and lose a packet LQD sends: the paper's consistency
/// claim and Lemma 1 fail on such inputs (found when N does not divide B; the counterexample
/// is in [`dtmodel`](crate::credence::dtmodel)'s module docs). This implementation stays
/// literal to Algorithm 1.
///
/// Departures lower the thresholds as LQD's queues drain (lines 29-34 and 48-51, see
/// [`VirtualLqd`]). Credence is drop-tail: it never returns [`Verdict::PushOut`].
///
/// Units: thresholds move by the packet's `size`, so they are bytes in the packet simulator
/// and packets in the discrete-time model; the policy itself is unit-agnostic.
#[derive(Clone, Debug, PartialEq)]
pub struct Credence {
    vlqd: VirtualLqd,
    oracle: AnyOracle,
    features: Features,
    options: CredenceOptions,
    /// Index of the next arrival (what the oracle keys replays and flips on).
    arrivals: u64,
    /// Number of real queues with `len >= B / N`.
    num_at_fair_share: usize,
    /// `ceil(B / N)`: a queue is at the fair share iff `len >= fair_len` (iff `len·N >= B`).
    fair_len: u64,
    capacity: u64,
    /// Whether the oracle reads the averaged features.
    uses_averages: bool,
    stats: CredenceStats,
}

impl Credence {
    /// Credence asking `oracle`, whose virtual LQD drains port `p` at `port_rates[p]` buffer
    /// units per second (see [`VirtualLqd`]), with feature averages over `base_rtt`.
    pub fn new(oracle: AnyOracle, port_rates: Vec<u64>, base_rtt: Dur) -> Credence {
        Credence::with_options(oracle, port_rates, base_rtt, CredenceOptions::default())
    }

    /// [`Credence::new`] with parts of Algorithm 1 switched off.
    pub fn with_options(
        oracle: AnyOracle,
        port_rates: Vec<u64>,
        base_rtt: Dur,
        options: CredenceOptions,
    ) -> Credence {
        Credence {
            vlqd: VirtualLqd::new(port_rates),
            uses_averages: oracle.uses_averages(),
            oracle,
            features: Features::new(base_rtt),
            options,
            arrivals: 0,
            num_at_fair_share: 0,
            fair_len: 0,
            capacity: 0,
            stats: CredenceStats::default(),
        }
    }

    /// The decision counters so far.
    pub fn stats(&self) -> CredenceStats {
        self.stats
    }

    /// The current LQD threshold of queue `q` (as of the latest arrival to it).
    pub fn threshold(&self, q: usize) -> u64 {
        self.vlqd.threshold(q)
    }

    #[cold]
    fn init<V: BufferView>(&mut self, v: &V) {
        self.capacity = v.capacity();
        self.fair_len = v.capacity().div_ceil(v.num_queues().max(1) as u64);
        self.vlqd.init(v.capacity(), v.num_queues(), v.queues_per_port());
        self.features.init(v.num_queues());
    }

    /// Whether a real queue of `len` is at or above the fair share `B/N`.
    #[inline]
    fn at_fair_share(&self, len: u64) -> bool {
        len >= self.fair_len
    }

    #[inline]
    fn track_fair_share(&mut self, before: u64, after: u64) {
        match (self.at_fair_share(before), self.at_fair_share(after)) {
            (false, true) => self.num_at_fair_share += 1,
            (true, false) => self.num_at_fair_share -= 1,
            _ => {}
        }
    }
}

impl BufferAdmission for Credence {
    // PERF: a call of its own rather than inlined into the switch's `enqueue`, which every
    // policy shares. Inlined, it made `enqueue` big enough that the compiler no longer inlined
    // the scheduler's `BinaryHeap::pop` into the event loop, which cost DT 411 M instructions
    // on the Credence benchmark (12,139 M against 11,728 M) and Credence 191 M (12,692 M
    // against 12,501 M). This depends on the compiler's inlining heuristics: recheck it
    // with callgrind when `enqueue` or the event loop changes.
    #[inline(never)]
    fn admit<V: BufferView>(&mut self, v: &V, a: &Arrival) -> Verdict {
        if !self.vlqd.is_ready() {
            self.init(v);
        }
        let (q, s) = (a.queue, a.size);
        let index = self.arrivals;
        self.arrivals += 1;
        let (len, occ) = (v.queue_len(q), v.occupancy());
        debug_assert_eq!(len, self.vlqd.real_len(q), "Credence missed a callback");
        // PERF: the averages cost two divisions per arrival (5% of a 256-host run); models
        // that split on queue length and occupancy only (the paper's, and the built-in one)
        // skip them. The averages must see every arrival; the rest of the feature vector is
        // built only if the oracle is asked (below).
        let averaged = if self.uses_averages { Some(self.features.sample(q, len, occ, a.now)) } else { None };
        // Algorithm 1 line 8: thresholds first, whatever happens to the packet.
        self.vlqd.on_arrival(q, s, a.now);
        let fits = occ + s <= self.capacity;
        // Algorithm 1 lines 10-14: longest queue < B/N <=> no queue at or above B/N.
        if self.options.safeguard && self.num_at_fair_share == 0 {
            if fits {
                self.stats.safeguard_accepts += 1;
                return Verdict::Accept;
            }
            self.stats.buffer_drops += 1;
            return Verdict::Drop;
        }
        // Lines 17 and 26.
        if self.options.thresholds && len + s > self.vlqd.threshold(q) {
            self.stats.threshold_drops += 1;
            return Verdict::Drop;
        }
        // Line 18.
        if !fits {
            self.stats.buffer_drops += 1;
            return Verdict::Drop;
        }
        // Lines 20-25: the oracle is consulted only here.
        let drop = match averaged {
            Some(x) => self.oracle.predict_drop(&x, index),
            // PERF: the features stay integers until the oracle needs them, and the forest's
            // box test compares integers (`Forest::predict_drop_counts`): 224 M fewer
            // instructions on the Credence benchmark (4.1 M queries).
            None => self.oracle.predict_drop_counts(len, occ, index),
        };
        if drop {
            self.stats.oracle_drops += 1;
            Verdict::Drop
        } else {
            self.stats.oracle_accepts += 1;
            Verdict::Accept
        }
    }

    #[inline]
    fn on_enqueue(&mut self, q: usize, size: u64, now: Time) {
        let before = self.vlqd.real_len(q);
        self.vlqd.on_enqueue(q, size, now);
        self.track_fair_share(before, before + size);
    }

    #[inline]
    fn on_dequeue(&mut self, q: usize, size: u64, now: Time) {
        let before = self.vlqd.real_len(q);
        self.vlqd.on_dequeue(q, size, now);
        self.track_fair_share(before, self.vlqd.real_len(q));
    }

    #[inline]
    fn on_push_out(&mut self, q: usize, size: u64, now: Time) {
        // Never asked for (drop-tail), but an owner may still push out for its own reasons.
        let before = self.vlqd.real_len(q);
        self.vlqd.on_push_out(q, size, now);
        self.track_fair_share(before, self.vlqd.real_len(q));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::tests::offer;
    use crate::admission::SimpleBuffer;
    use crate::credence::oracle::Perfect;

    fn credence(oracle: AnyOracle) -> Credence {
        Credence::new(oracle, vec![], Dur::from_us(10))
    }

    #[test]
    fn safeguard_accepts_below_the_fair_share_even_if_the_oracle_says_drop() {
        // B = 8, N = 4: B/N = 2. Every queue may reach 2 whatever the oracle says.
        let mut b = SimpleBuffer::new(8, 4);
        let mut p = credence(AnyOracle::AlwaysDrop);
        assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Accept);
        assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Accept);
        // Queue 0 is at B/N: the safeguard is off, the threshold (3 <= 3) passes, the oracle
        // says drop.
        assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Drop);
        // Another queue is not protected by its own shortness: the longest queue decides.
        assert_eq!(offer(&mut p, &mut b, 1, 1).0, Verdict::Drop);
        assert_eq!(b.len, vec![2, 0, 0, 0]);
        assert_eq!(p.stats().safeguard_accepts, 2);
        assert_eq!(p.stats().oracle_drops, 2);
    }

    #[test]
    fn oracle_is_asked_only_when_the_threshold_allows() {
        // LQD-drop record says "drop" for arrival 3 only. B = 4, N = 4: B/N = 1.
        let mut b = SimpleBuffer::new(4, 4);
        let record = vec![false, false, false, true, false, false];
        let mut p = credence(AnyOracle::Perfect(Perfect::new(record)));
        // Arrival 0: safeguard. Arrivals 1, 2: thresholds 2, 3 allow, oracle says accept.
        for _ in 0..3 {
            assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Accept);
        }
        // Arrival 3: threshold 4 allows, oracle says drop: the real queue stays at 3.
        assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Drop);
        assert_eq!(p.threshold(0), 4);
        // Arrival 4 to queue 1: LQD pushes one out of queue 0: T = [3, 1]; 0 + 1 <= 1 and
        // the buffer has room: the oracle (accept) decides.
        assert_eq!(offer(&mut p, &mut b, 1, 1).0, Verdict::Accept);
        assert_eq!((p.threshold(0), p.threshold(1)), (3, 1));
        // Arrival 5 to queue 0: T_0 = 4 but LQD pushes its own arrival (queue 0 longest):
        // T_0 back to 3 = q_0; 3 + 1 > 3: a threshold drop, the oracle is not asked.
        assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Drop);
        assert_eq!(p.stats().threshold_drops, 1);
        assert_eq!(p.stats().oracle_accepts, 3);
        assert_eq!(b.len, vec![3, 1, 0, 0]);
    }

    #[test]
    fn full_buffer_drops_without_asking() {
        // Thresholds allow (T_1 = 1 after LQD pushes out of queue 0) but Q = B.
        let mut b = SimpleBuffer { capacity: 4, queues_per_port: 1, len: vec![0; 4] };
        let mut p = credence(AnyOracle::AlwaysAccept);
        for _ in 0..4 {
            offer(&mut p, &mut b, 0, 1);
        }
        assert_eq!(b.len, vec![4, 0, 0, 0]);
        assert_eq!(offer(&mut p, &mut b, 1, 1).0, Verdict::Drop);
        assert_eq!(p.stats().buffer_drops, 1);
    }

    #[test]
    fn bytes_need_the_whole_packet_under_the_threshold() {
        // B = 26000 bytes, 4 queues (B/N = 6500). The oracle drops arrival 1 only.
        let mut b = SimpleBuffer::new(26_000, 4);
        let record = vec![false, true, false, false];
        let mut p = credence(AnyOracle::Perfect(Perfect::new(record)));
        assert_eq!(offer(&mut p, &mut b, 0, 25_000).0, Verdict::Accept); // safeguard
        assert_eq!(offer(&mut p, &mut b, 0, 500).0, Verdict::Drop); // oracle: T_0 = 25500
        // LQD takes 1000 for queue 1 by pushing 1000 out of queue 0: T_0 = 24500 < q_0.
        assert_eq!(offer(&mut p, &mut b, 1, 1000).0, Verdict::Accept);
        assert_eq!((p.threshold(0), p.threshold(1)), (24_500, 1000));
        b.len[1] -= 1000;
        p.on_dequeue(1, 1000, Time::ZERO);
        // 1000 bytes for queue 0: T_0 = 25500 > q_0 = 25000 (the paper's `q < T` would
        // accept) but 25000 + 1000 > 25500, and the buffer has room: a threshold drop.
        assert_eq!(offer(&mut p, &mut b, 0, 1000).0, Verdict::Drop);
        assert_eq!(p.threshold(0), 25_500);
        assert_eq!(p.stats().threshold_drops, 1);
    }

    #[test]
    fn never_pushes_out() {
        let mut b = SimpleBuffer::new(4, 2);
        let mut p = credence(AnyOracle::AlwaysAccept);
        for q in [0, 0, 0, 0, 1, 1, 1, 0, 1] {
            assert_ne!(offer(&mut p, &mut b, q, 1).0, Verdict::PushOut);
        }
    }

    #[test]
    fn naive_trusts_every_prediction() {
        let mut b = SimpleBuffer::new(8, 4);
        let none = CredenceOptions { safeguard: false, thresholds: false };
        let mut p = Credence::with_options(AnyOracle::AlwaysDrop, vec![], Dur::from_us(10), none);
        assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Drop);
        let mut p = Credence::with_options(AnyOracle::AlwaysAccept, vec![], Dur::from_us(10), none);
        for _ in 0..8 {
            assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Accept);
        }
        assert_eq!(offer(&mut p, &mut b, 1, 1).0, Verdict::Drop);
    }
}
