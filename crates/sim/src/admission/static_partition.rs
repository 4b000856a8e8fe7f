//! Static partitioning of a shared buffer among ports.

use super::{Arrival, BufferAdmission, BufferView, Verdict};

/// Static partitioning: each port owns `port_bytes` (default `B / ports`), shared by its
/// queues; no port can use another's share.
#[derive(Clone, Copy, Debug, Default)]
pub struct StaticPartition {
    /// Share of each port; `None` means an equal share of the buffer.
    pub port_bytes: Option<u64>,
    /// The equal share last computed, with the `(capacity, queues, queues per port)` of the
    /// buffer it was computed for.
    // PERF: the share took two integer divisions per arrival (B / (N / queues per port)).
    equal: ((u64, usize, usize), u64),
}

/// Equal when they give every buffer the same shares (the cached share is not compared).
impl PartialEq for StaticPartition {
    fn eq(&self, other: &StaticPartition) -> bool {
        self.port_bytes == other.port_bytes
    }
}

impl Eq for StaticPartition {}

impl StaticPartition {
    /// Each port owns `port_bytes`, or an equal share of the buffer if `None`.
    pub fn new(port_bytes: Option<u64>) -> StaticPartition {
        StaticPartition { port_bytes, equal: ((0, 0, 0), 0) }
    }

    /// The equal share of a port of `v` (computed again only for a buffer of another shape).
    #[inline]
    fn equal_share<V: BufferView>(&mut self, v: &V) -> u64 {
        let shape = (v.capacity(), v.num_queues(), v.queues_per_port());
        if self.equal.0 != shape {
            self.equal = (shape, v.capacity() / v.num_ports().max(1) as u64);
        }
        self.equal.1
    }
}

impl BufferAdmission for StaticPartition {
    const WATCHES_QUEUES: bool = false;

    #[inline]
    fn admit<V: BufferView>(&mut self, v: &V, a: &Arrival) -> Verdict {
        let share = match self.port_bytes {
            Some(b) => b,
            None => self.equal_share(v),
        };
        let k = v.queues_per_port();
        let port = if k == 1 { a.queue } else { a.queue / k };
        if v.port_len(port) + a.size <= share && v.occupancy() + a.size <= v.capacity() {
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
    fn the_equal_share_follows_the_buffer_it_is_asked_about() {
        // One policy asked about two buffers of other shapes in turn: each gets its own share.
        let mut p = StaticPartition::new(None);
        let mut small = SimpleBuffer::new(8, 4);
        let mut large = SimpleBuffer::new(80, 4);
        assert_eq!(offer(&mut p, &mut small, 0, 2).0, Verdict::Accept);
        assert_eq!(offer(&mut p, &mut large, 0, 20).0, Verdict::Accept);
        assert_eq!(offer(&mut p, &mut small, 1, 3).0, Verdict::Drop);
        assert_eq!(offer(&mut p, &mut large, 1, 20).0, Verdict::Accept);
        assert_eq!(offer(&mut p, &mut large, 1, 1).0, Verdict::Drop);
        // Two queues per port: ports 0 and 1 own 40 each, shared by their two queues.
        let mut two = SimpleBuffer { capacity: 80, queues_per_port: 2, len: vec![0; 4] };
        assert_eq!(offer(&mut p, &mut two, 1, 30).0, Verdict::Accept);
        assert_eq!(offer(&mut p, &mut two, 0, 11).0, Verdict::Drop);
        assert_eq!(offer(&mut p, &mut two, 2, 40).0, Verdict::Accept);
        assert_eq!(StaticPartition::new(None), p, "the cache is not part of the policy");
    }

    #[test]
    fn each_port_gets_its_share_and_no_more() {
        let mut b = SimpleBuffer::new(8, 4);
        let mut p = StaticPartition::new(None);
        assert_eq!(offer(&mut p, &mut b, 0, 2).0, Verdict::Accept);
        assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Drop);
        assert_eq!(offer(&mut p, &mut b, 1, 2).0, Verdict::Accept);
        let mut p = StaticPartition::new(Some(3));
        let mut b = SimpleBuffer::new(100, 4);
        assert_eq!(offer(&mut p, &mut b, 2, 3).0, Verdict::Accept);
        assert_eq!(offer(&mut p, &mut b, 2, 1).0, Verdict::Drop);
    }
}
