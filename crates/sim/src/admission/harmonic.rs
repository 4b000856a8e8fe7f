//! Harmonic (Kesselman and Mansour, TCS 2004; Credence Table 1: `ln(N) + 2`-competitive).

use super::{Arrival, BufferAdmission, BufferView, Verdict};

/// Harmonic: with the queues sorted by length, `q_(1) >= q_(2) >= ... >= q_(N)`, accept a
/// packet iff after accepting it, for every `i` in `1..=N`, the `i` longest queues together
/// hold at most `B · H_i / H_N` (`H_i = 1 + 1/2 + ... + 1/i`, the harmonic numbers).
///
/// Reading of the paper. Credence cites Harmonic (its reference 30) only by its competitive
/// ratio; Kesselman and Mansour define their general non-preemptive scheme as "a system of
/// inequalities and thresholds" over the queues ordered by size, accepting a packet if it
/// violates none, and Harmonic allots the `i`-th longest queue `B/(i·H_N)`. We implement the
/// allotments as the prefix-sum system above: the longest queue alone is capped at `B/H_N`,
/// the two longest together at `B·(1 + 1/2)/H_N`, and so on; `i = N` is the buffer limit.
/// This is weaker than capping the `i`-th longest queue itself at `B/(i·H_N)`: a second queue
/// may use allotment the longest one leaves unused (unit test
/// `a_short_longest_queue_leaves_room_for_the_second`). `N` is the number of queues of the
/// buffer (ports x classes). Ties in the sort do not matter: prefix sums of a sorted multiset
/// are the same whatever the order among equals.
///
/// Cost: O(N log N) per arrival (a sort of the queue lengths into a reused scratch vector;
/// no allocation after the first arrival).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Harmonic {
    /// `B · H_i / H_N` for `i = 1..=N` (sized on the first arrival).
    limits: Vec<f64>,
    scratch: Vec<u64>,
}

impl Harmonic {
    /// Harmonic for any buffer (the limits are sized from the first arrival's buffer).
    pub fn new() -> Harmonic {
        Harmonic::default()
    }

    #[cold]
    fn init<V: BufferView>(&mut self, v: &V) {
        let n = v.num_queues();
        let h: Vec<f64> = (1..=n)
            .scan(0.0, |acc, i| {
                *acc += 1.0 / i as f64;
                Some(*acc)
            })
            .collect();
        let hn = h[n - 1];
        self.limits = h.iter().map(|hi| v.capacity() as f64 * hi / hn).collect();
        self.scratch = Vec::with_capacity(n);
    }
}

impl BufferAdmission for Harmonic {
    const WATCHES_QUEUES: bool = false;

    fn admit<V: BufferView>(&mut self, v: &V, a: &Arrival) -> Verdict {
        if self.limits.is_empty() {
            self.init(v);
        }
        if v.occupancy() + a.size > v.capacity() {
            return Verdict::Drop;
        }
        self.scratch.clear();
        self.scratch.extend((0..v.num_queues()).map(|q| v.queue_len(q)));
        self.scratch[a.queue] += a.size;
        self.scratch.sort_unstable_by(|x, y| y.cmp(x));
        let mut prefix = 0u64;
        for (i, &len) in self.scratch.iter().enumerate() {
            if len == 0 {
                break; // the remaining prefix sums only grow toward B, already checked
            }
            prefix += len;
            // The limits are rationals computed in floating point (11 / (11/6) may come out
            // as 6.000000000000001 or 5.999999999999999): a prefix within 1e-9 relative of
            // its limit meets it.
            if prefix as f64 > self.limits[i] * (1.0 + 1e-9) {
                return Verdict::Drop;
            }
        }
        Verdict::Accept
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::tests::offer;
    use crate::admission::SimpleBuffer;

    // N = 3, B = 11: H_3 = 11/6, so the limits are 6, 9 and 11.

    #[test]
    fn limits_are_harmonic_prefix_sums() {
        let mut b = SimpleBuffer::new(11, 3);
        let mut p = Harmonic::new();
        offer(&mut p, &mut b, 0, 1);
        for (got, want) in p.limits.iter().zip([6.0, 9.0, 11.0]) {
            assert!((got - want).abs() < 1e-9, "{:?}", p.limits);
        }
    }

    #[test]
    fn longest_queue_gets_b_over_h_n_and_the_rest_share_by_rank() {
        let mut b = SimpleBuffer::new(11, 3);
        let mut p = Harmonic::new();
        let fill = |p: &mut Harmonic, b: &mut SimpleBuffer, q| {
            let mut n = 0;
            while offer(p, b, q, 1).0 == Verdict::Accept {
                n += 1;
            }
            n
        };
        assert_eq!(fill(&mut p, &mut b, 0), 6); // q_(1) <= 6
        assert_eq!(fill(&mut p, &mut b, 1), 3); // q_(1) + q_(2) <= 9
        assert_eq!(fill(&mut p, &mut b, 2), 2); // all three <= 11 = B
        assert_eq!(b.len, vec![6, 3, 2]);
    }

    #[test]
    fn a_short_longest_queue_leaves_room_for_the_second() {
        // q_0 = 5 (one under its cap): queue 1 may grow to 4, more than B/(2 H_N) = 3.
        let mut b = SimpleBuffer { capacity: 11, queues_per_port: 1, len: vec![5, 0, 0] };
        let mut p = Harmonic::new();
        for _ in 0..4 {
            assert_eq!(offer(&mut p, &mut b, 1, 1).0, Verdict::Accept);
        }
        assert_eq!(offer(&mut p, &mut b, 1, 1).0, Verdict::Drop); // 5 + 5 > 9
        // Queue 0 may not take one more either: 6 alone is fine, but 6 + 4 > 9.
        assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Drop);
        assert_eq!(offer(&mut p, &mut b, 2, 1).0, Verdict::Accept); // 5 + 4 + 1 <= 11
    }
}
