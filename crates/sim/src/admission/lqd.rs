//! Longest Queue Drop (push-out).

use super::{Arrival, BufferAdmission, BufferView, Verdict};

/// Longest Queue Drop (LQD): accept every packet; when the buffer is full, drop from the tail
/// of the longest queue until the arriving packet fits (Credence §2.2; Aiello et al. show it is
/// 2-competitive for throughput). If the arriving packet's own queue is the longest, the
/// arriving packet itself is the one dropped. Ties between longest queues go to the lowest
/// queue index (a choice the paper leaves open).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lqd;

impl BufferAdmission for Lqd {
    const WATCHES_QUEUES: bool = false;

    #[inline]
    fn admit<V: BufferView>(&mut self, v: &V, a: &Arrival) -> Verdict {
        if v.occupancy() + a.size <= v.capacity() {
            Verdict::Accept
        } else {
            Verdict::PushOut
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::tests::offer;
    use crate::admission::SimpleBuffer;

    #[test]
    fn pushes_out_from_the_longest_queue() {
        let mut b = SimpleBuffer::new(4, 3);
        let mut p = Lqd;
        for _ in 0..4 {
            assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Accept);
        }
        // Full: an arrival for queue 1 pushes a packet out of queue 0.
        assert_eq!(offer(&mut p, &mut b, 1, 1), (Verdict::PushOut, vec![0]));
        assert_eq!(b.len, vec![3, 1, 0]);
        // An arrival for the longest queue itself is the one dropped.
        assert_eq!(offer(&mut p, &mut b, 0, 1), (Verdict::PushOut, vec![0]));
        assert_eq!(b.len, vec![3, 1, 0]);
        // Queues even out: 2 + 2 after two arrivals for queue 1.
        offer(&mut p, &mut b, 1, 1);
        assert_eq!(b.len, vec![2, 2, 0]);
        // Tie between 0 and 1: the lowest index loses a packet.
        offer(&mut p, &mut b, 2, 1);
        assert_eq!(b.len, vec![1, 2, 1]);
    }
}
