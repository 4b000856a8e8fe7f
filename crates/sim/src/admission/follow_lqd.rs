//! FollowLQD (Credence Appendix B, Algorithm 2): drop-tail that follows LQD's queue lengths
//! as thresholds, without predictions.

use units::Time;

use super::virtual_lqd::VirtualLqd;
use super::{Arrival, BufferAdmission, BufferView, Verdict};

/// FollowLQD: accept a packet for queue `i` iff, after the virtual LQD took it
/// (`updateThreshold(i, arrival)`, Algorithm 2 line 8), `q_i + s <= T_i` (line 9; the
/// paper's `q_i < T_i` for unit packets, see [`Credence`](super::Credence)) and `Q + s <= B`
/// (line 10). Thresholds fall with departures as LQD's queues drain ([`VirtualLqd`]).
///
/// It is the non-predictive building block of Credence and the yardstick of its error
/// function (Definition 1). It cannot push out, so its queues can sit above their thresholds
/// after LQD pushed out; Observation 1 builds on that to show it is no better than
/// `(N+1)/2`-competitive (`dtmodel` tests reproduce the sequence).
#[derive(Clone, Debug, PartialEq)]
pub struct FollowLqd {
    vlqd: VirtualLqd,
    capacity: u64,
}

impl FollowLqd {
    /// FollowLQD whose virtual LQD drains port `p` at `port_rates[p]` buffer units per second.
    pub fn new(port_rates: Vec<u64>) -> FollowLqd {
        FollowLqd { vlqd: VirtualLqd::new(port_rates), capacity: 0 }
    }

    /// The current LQD threshold of queue `q` (as of the latest arrival to it).
    pub fn threshold(&self, q: usize) -> u64 {
        self.vlqd.threshold(q)
    }
}

impl BufferAdmission for FollowLqd {
    #[inline]
    fn admit<V: BufferView>(&mut self, v: &V, a: &Arrival) -> Verdict {
        if !self.vlqd.is_ready() {
            self.capacity = v.capacity();
            self.vlqd.init(v.capacity(), v.num_queues(), v.queues_per_port());
        }
        let len = v.queue_len(a.queue);
        debug_assert_eq!(len, self.vlqd.real_len(a.queue), "FollowLqd missed a callback");
        self.vlqd.on_arrival(a.queue, a.size, a.now);
        if len + a.size <= self.vlqd.threshold(a.queue) && v.occupancy() + a.size <= self.capacity {
            Verdict::Accept
        } else {
            Verdict::Drop
        }
    }

    #[inline]
    fn on_enqueue(&mut self, q: usize, size: u64, now: Time) {
        self.vlqd.on_enqueue(q, size, now);
    }

    #[inline]
    fn on_dequeue(&mut self, q: usize, size: u64, now: Time) {
        self.vlqd.on_dequeue(q, size, now);
    }

    #[inline]
    fn on_push_out(&mut self, q: usize, size: u64, now: Time) {
        self.vlqd.on_push_out(q, size, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::tests::offer;
    use crate::admission::SimpleBuffer;

    #[test]
    fn fills_like_lqd_while_alone_then_stalls_above_a_lowered_threshold() {
        // B = 4, 3 queues, unit packets.
        let mut b = SimpleBuffer::new(4, 3);
        let mut p = FollowLqd::new(vec![]);
        for _ in 0..4 {
            assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Accept);
        }
        // LQD would push one out of queue 0 for queue 1 (T = [3, 1]); FollowLQD cannot, and
        // its buffer is full: drop.
        assert_eq!(offer(&mut p, &mut b, 1, 1).0, Verdict::Drop);
        assert_eq!((p.threshold(0), p.threshold(1)), (3, 1));
        // Queue 0 sends one: q_0 = 3 sits above T_0 = 2.
        b.len[0] -= 1;
        p.on_dequeue(0, 1, Time::ZERO);
        assert_eq!(p.threshold(0), 2);
        // Its next arrival raises T_0 to 3 (Γ = 4, no push-out), but 3 + 1 > 3: dropped,
        // although the buffer has room.
        assert_eq!(offer(&mut p, &mut b, 0, 1).0, Verdict::Drop);
        // Queue 2 is under its threshold (LQD pushes out of queue 0 for it) and fits.
        assert_eq!(offer(&mut p, &mut b, 2, 1).0, Verdict::Accept);
        assert_eq!(b.len, vec![3, 0, 1]);
    }
}
