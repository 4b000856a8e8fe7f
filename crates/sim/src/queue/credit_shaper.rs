//! ExpressPass's credit rate limiting at a switch egress port (Cho et al., SIGCOMM'17, §3.1):
//! credits wait in a small queue of their own, apart from the port's data queues, and leave at
//! most one per `gap`, the serialization time of a credit plus the largest data packet it can
//! trigger, so that the data the credits let through fits the reverse link (84 B of credit per
//! 84 + 1538 B: about 5% of the link). A credit that finds the queue full is dropped: the
//! receivers' feedback control reads those drops as congestion (§3.2).
//!
//! The limiter is a token bucket of depth two credits: a port that was idle may send two credits
//! back to back, never more, so a credit delayed behind a data packet is made up for once.
//!
//! INVARIANT: `bytes` is the sum of the sizes of the queued credits; the queue never holds more
//! than `cap` credits.

use std::collections::VecDeque;

use units::{Dur, Time};

use crate::packet::Packet;

/// The credit queue and token bucket of one egress port.
#[derive(Clone, Debug)]
pub struct CreditShaper {
    queue: VecDeque<Packet>,
    cap: usize,
    gap: Dur,
    /// When the next credit may start.
    next_at: Time,
    bytes: u64,
}

impl CreditShaper {
    /// A shaper holding at most `cap` credits (at least one), sending one per `gap`.
    pub fn new(cap: usize, gap: Dur) -> CreditShaper {
        CreditShaper { queue: VecDeque::with_capacity(cap.clamp(1, 64)), cap: cap.max(1), gap, next_at: Time::ZERO, bytes: 0 }
    }

    /// Queue a credit; `Err` gives it back if the queue is full (the caller drops it).
    #[inline]
    pub fn enqueue(&mut self, pkt: Packet) -> Result<(), Packet> {
        if self.queue.len() >= self.cap {
            return Err(pkt);
        }
        self.bytes += u64::from(pkt.size);
        self.queue.push_back(pkt);
        Ok(())
    }

    /// Whether a credit waits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Credits waiting.
    pub fn num_packets(&self) -> usize {
        self.queue.len()
    }

    /// Bytes of the credits waiting.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// When the head credit may leave, if one waits.
    #[inline]
    pub fn ready_at(&self) -> Option<Time> {
        (!self.queue.is_empty()).then_some(self.next_at)
    }

    /// The head credit, if one waits and the bucket holds a token at `now`.
    #[inline]
    pub fn dequeue(&mut self, now: Time) -> Option<Packet> {
        if now < self.next_at {
            return None;
        }
        let pkt = self.queue.pop_front()?;
        self.bytes -= u64::from(pkt.size);
        // Depth two: the next token comes `gap` after the later of this one's due time and
        // `now - gap` (a bucket that was full has one more token ready at once).
        let floor = Time::from_ps(now.ps().saturating_sub(self.gap.ps()));
        self.next_at = self.next_at.max(floor) + self.gap;
        Some(pkt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{Segment, XpassKind, XpassRepr};
    use units::NodeId;

    fn credit() -> Packet {
        let seg = Segment::Xpass(XpassRepr { kind: XpassKind::Credit, ..Default::default() });
        Packet::new(&seg, 0, NodeId(0), 84, false)
    }

    #[test]
    fn paces_one_credit_per_gap_and_drops_beyond_the_queue() {
        let gap = Dur::from_ns(1297); // 84 + 1538 B at 10 Gb/s
        let mut s = CreditShaper::new(8, gap);
        for _ in 0..8 {
            assert!(s.enqueue(credit()).is_ok());
        }
        assert!(s.enqueue(credit()).is_err(), "the ninth is dropped");
        assert_eq!(s.bytes(), 8 * 84);
        let t0 = Time::from_us(100);
        // An idle bucket holds two tokens: two at once, then one per gap.
        assert!(s.dequeue(t0).is_some());
        assert!(s.dequeue(t0).is_some());
        assert!(s.dequeue(t0).is_none());
        assert_eq!(s.ready_at(), Some(t0 + gap));
        let mut t = t0 + gap;
        for _ in 0..6 {
            assert!(s.dequeue(t).is_some());
            assert!(s.dequeue(t).is_none());
            t += gap;
        }
        assert!(s.is_empty() && s.bytes() == 0 && s.ready_at().is_none());
    }
}
