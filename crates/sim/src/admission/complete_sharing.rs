//! Complete Sharing: accept while the buffer has room.

use super::{Arrival, BufferAdmission, BufferView, Verdict};

/// Complete Sharing (CS): any queue may use the whole buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompleteSharing;

impl BufferAdmission for CompleteSharing {
    const WATCHES_QUEUES: bool = false;

    #[inline]
    fn admit<V: BufferView>(&mut self, v: &V, a: &Arrival) -> Verdict {
        if v.occupancy() + a.size <= v.capacity() {
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
    fn fills_the_buffer_exactly() {
        let mut b = SimpleBuffer::new(10, 2);
        let mut p = CompleteSharing;
        for _ in 0..10 {
            assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Accept);
        }
        assert_eq!(offer(&mut p, &mut b, 1, 1).0, Verdict::Drop);
        assert_eq!(b.len, vec![10, 0]);
    }
}
