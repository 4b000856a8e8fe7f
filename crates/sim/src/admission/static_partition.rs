//! Static partitioning of a shared buffer among ports.

use super::{Arrival, BufferAdmission, BufferView, Verdict};

/// Static partitioning: each port owns `port_bytes` (default `B / ports`), shared by its
/// queues; no port can use another's share.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StaticPartition {
    /// Share of each port; `None` means an equal share of the buffer.
    pub port_bytes: Option<u64>,
}

impl BufferAdmission for StaticPartition {
    #[inline]
    fn admit<V: BufferView>(&mut self, v: &V, a: &Arrival) -> Verdict {
        let share = self.port_bytes.unwrap_or(v.capacity() / v.num_ports().max(1) as u64);
        let port = a.queue / v.queues_per_port();
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
    fn each_port_gets_its_share_and_no_more() {
        let mut b = SimpleBuffer::new(8, 4);
        let mut p = StaticPartition::default();
        assert_eq!(offer(&mut p, &mut b, 0, 2).0, Verdict::Accept);
        assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Drop);
        assert_eq!(offer(&mut p, &mut b, 1, 2).0, Verdict::Accept);
        let mut p = StaticPartition { port_bytes: Some(3) };
        let mut b = SimpleBuffer::new(100, 4);
        assert_eq!(offer(&mut p, &mut b, 2, 3).0, Verdict::Accept);
        assert_eq!(offer(&mut p, &mut b, 2, 1).0, Verdict::Drop);
    }
}
