//! Dynamic Thresholds (Choudhury and Hahne, ToN 1998).

use super::{Arrival, BufferAdmission, BufferView, Verdict};
use crate::spec::MAX_QUEUES;

/// How DT compares a queue with its threshold `T(t) = alpha * (B - Q(t))`. The two readings
/// differ by one packet at the threshold: with unit packets, [`DtRule::FitsUnder`] stops a
/// queue one packet earlier than [`DtRule::Below`] (a lone queue with alpha = 0.5 and B = 64
/// stops at 21 packets instead of 22).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DtRule {
    /// Accept iff `q + size <= alpha * free`: the arriving packet must fit under the
    /// threshold. The Credence artifact's ns-3 DT (and our packet simulator's) decides so.
    #[default]
    FitsUnder,
    /// Accept iff `q < alpha * free`: the queue before the arrival is below the threshold,
    /// as Choudhury and Hahne define DT (a queue is blocked once it reaches its threshold).
    Below,
}

impl DtRule {
    /// Both rules, [`DtRule::FitsUnder`] first.
    pub const ALL: [DtRule; 2] = [DtRule::FitsUnder, DtRule::Below];

    /// The rule as a formula: `"q+size<=alpha*free"` or `"q<alpha*free"`.
    pub fn formula(self) -> &'static str {
        match self {
            DtRule::FitsUnder => "q+size<=alpha*free",
            DtRule::Below => "q<alpha*free",
        }
    }
}

/// Dynamic Thresholds (DT): queue `q` may grow to `T(t) = alpha_c * (B - Q(t))`, where `Q(t)`
/// is the total occupancy and `c` the queue's class. A packet is accepted if the buffer has
/// room and, by the [`DtRule`], the queue including it stays within `T(t)` (the default) or
/// the queue is below `T(t)`.
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicThresholds {
    alpha: Vec<f64>,
    /// `alpha_of` class `c` for the classes a port can have (`c < MAX_QUEUES`), inline.
    // PERF: an arrival at a switch read its class's alpha through the `Vec`'s pointer: on the
    // 1,024-host fat-tree a cache miss per hop (one allocation per switch).
    first: [f64; MAX_QUEUES],
    rule: DtRule,
}

impl DynamicThresholds {
    /// DT with `alpha[c]` for class `c` (the last alpha applies to higher classes), deciding
    /// by [`DtRule::FitsUnder`].
    pub fn new(alpha: Vec<f64>) -> DynamicThresholds {
        DynamicThresholds::with_rule(alpha, DtRule::default())
    }

    /// DT deciding by `rule`.
    pub fn with_rule(alpha: Vec<f64>, rule: DtRule) -> DynamicThresholds {
        debug_assert!(!alpha.is_empty());
        let last = alpha.len().saturating_sub(1);
        let first = std::array::from_fn(|c| alpha.get(c.min(last)).copied().unwrap_or(f64::NAN));
        DynamicThresholds { alpha, first, rule }
    }

    /// The rule this DT decides by.
    pub fn rule(&self) -> DtRule {
        self.rule
    }

    /// The alpha of queue `q`.
    #[inline]
    pub fn alpha_of(&self, q: usize, queues_per_port: usize) -> f64 {
        let c = if queues_per_port == 1 { 0 } else { q % queues_per_port };
        match self.first.get(c) {
            Some(&a) => a,
            None => self.alpha[c.min(self.alpha.len() - 1)],
        }
    }
}

impl BufferAdmission for DynamicThresholds {
    const WATCHES_QUEUES: bool = false;

    #[inline]
    fn admit<V: BufferView>(&mut self, v: &V, a: &Arrival) -> Verdict {
        let occ = v.occupancy();
        if occ + a.size > v.capacity() {
            return Verdict::Drop;
        }
        let threshold = self.alpha_of(a.queue, v.queues_per_port()) * (v.capacity() - occ) as f64;
        let len = v.queue_len(a.queue);
        let admits = match self.rule {
            DtRule::FitsUnder => (len + a.size) as f64 <= threshold,
            DtRule::Below => (len as f64) < threshold,
        };
        if admits {
            Verdict::Accept
        } else {
            Verdict::Drop
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::tests::offer;
    use crate::admission::SimpleBuffer;

    #[test]
    fn one_queue_alone_gets_alpha_over_one_plus_alpha() {
        // alpha = 1: a lone queue stops at B/2. 1000-unit packets in a 10000 buffer.
        let mut b = SimpleBuffer::new(10_000, 4);
        let mut p = DynamicThresholds::new(vec![1.0]);
        while offer(&mut p, &mut b, 0, 1000).0 == Verdict::Accept {}
        assert_eq!(b.len[0], 5000);
        // alpha = 2: 7000 is admitted (7000 <= 2 * (10000 - 6000)), 8000 is not.
        let mut b = SimpleBuffer::new(10_000, 4);
        let mut p = DynamicThresholds::new(vec![2.0]);
        while offer(&mut p, &mut b, 0, 1000).0 == Verdict::Accept {}
        assert_eq!(b.len[0], 7000);
    }

    #[test]
    fn each_class_gets_its_alpha_and_later_classes_the_last() {
        let alphas: Vec<f64> = (1..=10).map(f64::from).collect();
        let p = DynamicThresholds::new(alphas.clone());
        for qpp in [1, 3, 8, 12] {
            for q in 0..40 {
                let c = q % qpp;
                assert_eq!(p.alpha_of(q, qpp), alphas[c.min(9)], "queue {q} of {qpp} per port");
            }
        }
        let two = DynamicThresholds::new(vec![0.5, 4.0]);
        assert_eq!((0..8).map(|q| two.alpha_of(q, 8)).collect::<Vec<_>>(), [0.5, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0]);
    }

    #[test]
    fn thresholds_shrink_as_the_buffer_fills() {
        let mut p = DynamicThresholds::new(vec![1.0]);
        let mut b = SimpleBuffer { capacity: 10_000, queues_per_port: 1, len: vec![6000, 0, 0, 0] };
        assert_eq!(offer(&mut p, &mut b, 1, 1000).0, Verdict::Accept); // 1000 <= 4000
        assert_eq!(offer(&mut p, &mut b, 1, 1000).0, Verdict::Accept); // 2000 <= 3000
        assert_eq!(offer(&mut p, &mut b, 1, 1000).0, Verdict::Drop); // 3000 > 2000
    }

    #[test]
    fn the_two_rules_differ_by_one_packet_at_the_threshold() {
        // B = 64 unit packets, alpha = 0.5, one queue alone: it stops where q (+1) meets
        // 0.5 * (64 - q). q + 1 <= 0.5 * (64 - q) holds up to q = 21 (22 <= 21.5 fails
        // at q = 21): 21 packets. q < 0.5 * (64 - q) holds up to q = 21 (21 < 21.5): 22.
        for (rule, stop) in [(DtRule::FitsUnder, 21), (DtRule::Below, 22)] {
            let mut b = SimpleBuffer::new(64, 4);
            let mut p = DynamicThresholds::with_rule(vec![0.5], rule);
            while offer(&mut p, &mut b, 0, 1).0 == Verdict::Accept {}
            assert_eq!(b.len[0], stop, "{rule:?}");
        }
        assert_eq!(DynamicThresholds::new(vec![1.0]).rule(), DtRule::FitsUnder);
    }

    #[test]
    fn below_still_needs_room_in_the_buffer() {
        // alpha = 8: T = 8 * free is never the limit; the buffer is.
        let mut b = SimpleBuffer::new(4, 2);
        let mut p = DynamicThresholds::with_rule(vec![8.0], DtRule::Below);
        while offer(&mut p, &mut b, 0, 1).0 == Verdict::Accept {}
        assert_eq!(b.len[0], 4);
    }

    #[test]
    fn alpha_per_class() {
        // Two classes per port: class 0 alpha 1, class 1 alpha 0.25.
        let p = DynamicThresholds::new(vec![1.0, 0.25]);
        assert_eq!(p.alpha_of(0, 2), 1.0);
        assert_eq!(p.alpha_of(3, 2), 0.25);
    }
}
