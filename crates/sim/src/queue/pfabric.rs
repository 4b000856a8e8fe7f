//! pFabric's switch port (Alizadeh et al., SIGCOMM'13 §4.1), selected by
//! `switch.scheduler = "pfabric"`: one small queue per egress port whose packets each carry a
//! priority, [`proto::Segment::rank`] (the sending flow's remaining size; lower is more urgent).
//!
//! - Dequeue (§4.1, "Dequeue"): find the highest-priority packet (least rank; the earliest of
//!   equals), then send the *earliest* queued packet of that packet's flow. Sending a flow's
//!   packets in order means a flow whose priority rose while it had packets queued is not
//!   reordered, and none of its packets starves behind its own later ones (§4.1's starvation
//!   prevention).
//! - Enqueue into a full port (§4.1, "Enqueue"): drop the lowest-priority packet (greatest rank;
//!   the latest of equals), which may be the arriving one. The port's buffer is its queue's
//!   `cap_bytes` (default about two BDP, as §5.1's 36 KB at 10 Gb/s; see `world::build`).
//!
//! Complexity: both decisions scan the port's queue, O(n) in the packets queued. §4.1 argues
//! that a hardware pFabric port needs nothing better, as its buffer is tiny (about two BDP: 24
//! full packets at 10 Gb/s with the paper's 14.6 µs RTT); in the simulator the scan touches
//! `n` small packets in one `VecDeque`, and removal from its middle moves at most `n / 2`. The
//! port is only as slow as its buffer is large, so validation of `queues[0].cap_bytes` is the
//! bound.
//!
//! Packets of other protocols have rank 0 (most urgent): under a pFabric port they are served
//! in arrival order before any pFabric packet, and pushed out only by each other.

use std::collections::VecDeque;

use crate::packet::Packet;

/// pFabric's choice at one port. Stateless: every decision is a scan of the queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pfabric;

impl Pfabric {
    /// The index of the packet to send next: the earliest packet of the flow of the
    /// highest-priority packet (§4.1). `None` for an empty queue.
    pub fn pick(queue: &VecDeque<Packet>) -> Option<usize> {
        let mut best: Option<(usize, u64)> = None;
        for (i, p) in queue.iter().enumerate() {
            let r = p.rank;
            // Strictly less: of equal ranks, the earliest wins.
            if best.is_none_or(|(_, b)| r < b) {
                best = Some((i, r));
            }
        }
        let (b, _) = best?;
        let flow = queue[b].flow();
        // The earliest packet of that flow is at or before `b`.
        queue.iter().take(b + 1).position(|p| p.flow() == flow)
    }

    /// The index of the lowest-priority packet (greatest rank; the latest of equals): the one a
    /// full port drops. `None` for an empty queue.
    pub fn victim(queue: &VecDeque<Packet>) -> Option<usize> {
        let mut worst: Option<(usize, u64)> = None;
        for (i, p) in queue.iter().enumerate() {
            let r = p.rank;
            if worst.is_none_or(|(_, w)| r >= w) {
                worst = Some((i, r));
            }
        }
        worst.map(|(i, _)| i)
    }

    /// Bytes of the queued packets of strictly lower priority than `rank` (greater rank): what
    /// a full port may drop to make room for an arrival of rank `rank`; the arrival itself goes
    /// if they are not enough.
    pub fn bytes_below(queue: &VecDeque<Packet>, rank: u64) -> u64 {
        queue.iter().filter(|p| p.rank > rank).map(|p| u64::from(p.size)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{PfabricRepr, Segment};
    use units::NodeId;

    fn pkt(conn: u32, seq: u64, rank: u64) -> Packet {
        let seg = Segment::Pfabric(PfabricRepr { conn, seq, rank, len: 1460, ..Default::default() });
        Packet::new(&seg, 0, NodeId(0), 1500, true)
    }

    fn drain(mut q: VecDeque<Packet>) -> Vec<(u32, u64)> {
        std::iter::from_fn(|| Pfabric::pick(&q).and_then(|i| q.remove(i))).map(|p| (p.flow(), p.seq)).collect()
    }

    #[test]
    fn dequeues_by_priority_then_flow_order() {
        // Flow 1 (rank 9000) arrived first; flow 2 is shorter; flow 3 shortest, arriving last.
        let q: VecDeque<Packet> =
            [pkt(1, 0, 9000), pkt(2, 0, 5000), pkt(1, 1, 9000), pkt(3, 0, 100), pkt(2, 1, 5000)].into();
        assert_eq!(drain(q), vec![(3, 0), (2, 0), (2, 1), (1, 0), (1, 1)]);
    }

    #[test]
    fn a_flow_whose_priority_rose_still_sends_its_earliest_packet_first() {
        // Flow 1's later packet carries a smaller remaining size (acknowledgements arrived in
        // between): it makes flow 1 the most urgent, but flow 1's earliest packet goes first.
        let q: VecDeque<Packet> = [pkt(1, 0, 9000), pkt(2, 0, 5000), pkt(1, 1, 1000)].into();
        assert_eq!(Pfabric::pick(&q), Some(0));
        assert_eq!(drain(q), vec![(1, 0), (1, 1), (2, 0)]);
    }

    #[test]
    fn ties_go_to_the_earliest_and_the_victim_is_the_latest_lowest() {
        let q: VecDeque<Packet> = [pkt(2, 0, 700), pkt(1, 0, 700), pkt(3, 0, 800), pkt(4, 0, 800)].into();
        assert_eq!(Pfabric::pick(&q), Some(0));
        assert_eq!(Pfabric::victim(&q), Some(3));
        assert_eq!(Pfabric::bytes_below(&q, 700), 3000);
        assert_eq!(Pfabric::bytes_below(&q, 800), 0);
        assert_eq!(Pfabric::pick(&VecDeque::new()), None);
        assert_eq!(Pfabric::victim(&VecDeque::new()), None);
    }
}
