//! Dynamic Thresholds (Choudhury and Hahne, ToN 1998).

use super::{Arrival, BufferAdmission, BufferView, Verdict};

/// Dynamic Thresholds (DT): queue `q` may grow to `T(t) = alpha_c * (B - Q(t))`, where `Q(t)`
/// is the total occupancy and `c` the queue's class. A packet is accepted if its queue
/// including it stays within `T(t)` and the buffer has room.
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicThresholds {
    alpha: Vec<f64>,
}

impl DynamicThresholds {
    /// DT with `alpha[c]` for class `c` (the last alpha applies to higher classes).
    pub fn new(alpha: Vec<f64>) -> DynamicThresholds {
        debug_assert!(!alpha.is_empty());
        DynamicThresholds { alpha }
    }

    /// The alpha of queue `q`.
    #[inline]
    pub fn alpha_of(&self, q: usize, queues_per_port: usize) -> f64 {
        let c = q % queues_per_port;
        self.alpha[c.min(self.alpha.len() - 1)]
    }
}

impl BufferAdmission for DynamicThresholds {
    #[inline]
    fn admit<V: BufferView>(&mut self, v: &V, a: &Arrival) -> Verdict {
        let occ = v.occupancy();
        if occ + a.size > v.capacity() {
            return Verdict::Drop;
        }
        let threshold = self.alpha_of(a.queue, v.queues_per_port()) * (v.capacity() - occ) as f64;
        if (v.queue_len(a.queue) + a.size) as f64 <= threshold {
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
    fn thresholds_shrink_as_the_buffer_fills() {
        let mut p = DynamicThresholds::new(vec![1.0]);
        let mut b = SimpleBuffer { capacity: 10_000, queues_per_port: 1, len: vec![6000, 0, 0, 0] };
        assert_eq!(offer(&mut p, &mut b, 1, 1000).0, Verdict::Accept); // 1000 <= 4000
        assert_eq!(offer(&mut p, &mut b, 1, 1000).0, Verdict::Accept); // 2000 <= 3000
        assert_eq!(offer(&mut p, &mut b, 1, 1000).0, Verdict::Drop); // 3000 > 2000
    }

    #[test]
    fn alpha_per_class() {
        // Two classes per port: class 0 alpha 1, class 1 alpha 0.25.
        let p = DynamicThresholds::new(vec![1.0, 0.25]);
        assert_eq!(p.alpha_of(0, 2), 1.0);
        assert_eq!(p.alpha_of(3, 2), 0.25);
    }
}
