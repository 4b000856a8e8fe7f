//! Per-flow round robin at a host NIC (`host.scheduler = "per_flow_rr"`): one FIFO per flow
//! with packets waiting, deficit round robin (Shreedhar and Varghese, SIGCOMM'95) among them,
//! as Linux's `fq` qdisc and htsim's hosts schedule a host's flows. A flow whose queue is empty
//! leaves the round and forfeits its deficit; a flow that gets a packet joins at the end of the
//! round.
//!
//! Why this is not a [`Scheduler`](super::Scheduler): a scheduler picks among a port's fixed
//! set of class queues, which it scans. A NIC's flows come and go (thousands over a run, a
//! handful at a time), so the flow queues are created on demand and kept in an active list, and
//! the structure owns its packets. It is a storage variant of [`Port`](super::Port): the port
//! still keeps the class's byte count, cap and ECN marking (on the NIC's total backlog; see
//! `queue`).
//!
//! Not modelled: `fq`'s preference for new flows (a separate list served first) and its
//! per-flow packet limit; a flow is keyed by its connection id (a host is never both ends of
//! one transfer, so a transfer's data and its ACKs meet at different NICs).
//!
//! INVARIANT: `active` lists exactly the slots whose queue is non-empty, each once, in service
//! order (the front is the flow whose turn it is); `idle` lists the other slots.
//! CORRECTNESS: the quantum is at least one MTU, so the front flow's turn always sends a packet
//! and `pop` ends within two turns.

use std::collections::VecDeque;

use crate::packet::Packet;

/// One flow's queue.
#[derive(Clone, Debug, Default)]
struct FlowQueue {
    conn: u32,
    pkts: VecDeque<Packet>,
    bytes: u64,
    deficit: u64,
}

/// The per-flow queues of one NIC and the round robin among them.
#[derive(Clone, Debug)]
pub struct PerFlowRr {
    /// Slots, reused: a slot's `VecDeque` keeps its capacity across flows.
    flows: Vec<FlowQueue>,
    active: VecDeque<u32>,
    idle: Vec<u32>,
    /// The front flow's turn has not been credited its quantum yet.
    turn_fresh: bool,
    quantum: u64,
}

impl PerFlowRr {
    /// Empty queues with a DRR quantum of `quantum` bytes (at least one MTU).
    pub fn new(quantum: u64) -> PerFlowRr {
        PerFlowRr { flows: Vec::new(), active: VecDeque::new(), idle: Vec::new(), turn_fresh: true, quantum: quantum.max(1) }
    }

    /// Number of flows with packets waiting.
    #[inline]
    pub fn num_active(&self) -> usize {
        self.active.len()
    }

    /// Append `pkt` to its flow's queue, starting one at the end of the round if the flow has
    /// none.
    pub fn push(&mut self, pkt: Packet) {
        let conn = pkt.seg.conn();
        // PERF: a linear search of the active flows: a NIC holds packets of a few flows at a
        // time, and the most recent one (a window's burst) is usually at the end.
        let slot = match self.active.iter().rev().find(|&&s| self.flows[s as usize].conn == conn) {
            Some(&s) => s,
            None => {
                let s = self.idle.pop().unwrap_or_else(|| {
                    self.flows.push(FlowQueue::default());
                    (self.flows.len() - 1) as u32
                });
                let f = &mut self.flows[s as usize];
                f.conn = conn;
                f.deficit = 0;
                if self.active.is_empty() {
                    self.turn_fresh = true;
                }
                self.active.push_back(s);
                s
            }
        };
        let f = &mut self.flows[slot as usize];
        f.bytes += pkt.size as u64;
        f.pkts.push_back(pkt);
    }

    /// Remove the next packet in round-robin order.
    pub fn pop(&mut self) -> Option<Packet> {
        // A bound instead of `loop` so that a broken invariant cannot hang the run.
        for _ in 0..=self.active.len() + 1 {
            let s = *self.active.front()?;
            let f = &mut self.flows[s as usize];
            if self.turn_fresh {
                f.deficit += self.quantum;
                self.turn_fresh = false;
            }
            let size = f.pkts.front().map_or(0, |p| p.size as u64);
            if f.deficit >= size {
                f.deficit -= size;
                let pkt = f.pkts.pop_front();
                f.bytes -= size;
                if f.pkts.is_empty() {
                    self.retire_front();
                }
                return pkt;
            }
            // The turn is over: to the end of the round.
            self.active.rotate_left(1);
            self.turn_fresh = true;
        }
        debug_assert!(false, "per-flow DRR found nothing to send");
        None
    }

    /// Remove the packet at the tail of the longest flow queue (push-out; a NIC never pushes
    /// out, this keeps the port's contract whole).
    pub fn pop_back(&mut self) -> Option<Packet> {
        let (pos, &s) = self.active.iter().enumerate().max_by_key(|(i, &s)| (self.flows[s as usize].bytes, usize::MAX - i))?;
        let f = &mut self.flows[s as usize];
        let pkt = f.pkts.pop_back()?;
        f.bytes -= pkt.size as u64;
        if f.pkts.is_empty() {
            f.deficit = 0;
            self.active.remove(pos);
            self.idle.push(s);
            if pos == 0 {
                self.turn_fresh = true;
            }
        }
        Some(pkt)
    }

    /// The front flow emptied: it leaves the round and forfeits its deficit.
    fn retire_front(&mut self) {
        if let Some(s) = self.active.pop_front() {
            self.flows[s as usize].deficit = 0;
            self.idle.push(s);
        }
        self.turn_fresh = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{Segment, SegmentRepr};
    use units::NodeId;

    fn pkt(conn: u32, size: u32) -> Packet {
        Packet {
            seg: Segment::Tcp(SegmentRepr { conn, ..Default::default() }),
            dst: NodeId(0),
            size,
            to_receiver: true,
            hops: 0,
            int: Packet::NO_INT,
        }
    }

    fn order(q: &mut PerFlowRr) -> Vec<u32> {
        std::iter::from_fn(|| q.pop()).map(|p| p.seg.conn()).collect()
    }

    #[test]
    fn a_flow_arriving_behind_a_window_waits_one_packet_not_the_window() {
        let mut q = PerFlowRr::new(1500);
        for _ in 0..10 {
            q.push(pkt(7, 1500));
        }
        q.push(pkt(3, 1500));
        q.push(pkt(3, 1500));
        assert_eq!(q.num_active(), 2);
        assert_eq!(order(&mut q), [7, 3, 7, 3, 7, 7, 7, 7, 7, 7, 7, 7]);
        assert_eq!(q.num_active(), 0);
    }

    #[test]
    fn shares_bytes_not_packets() {
        // One MTU per turn: three 500 B packets of flow 2 for each 1500 B packet of flow 1.
        let mut q = PerFlowRr::new(1500);
        for _ in 0..4 {
            q.push(pkt(1, 1500));
            for _ in 0..3 {
                q.push(pkt(2, 500));
            }
        }
        let got = order(&mut q);
        assert_eq!(&got[..8], [1, 2, 2, 2, 1, 2, 2, 2]);
    }

    #[test]
    fn an_emptied_flow_leaves_and_a_returning_one_joins_the_end() {
        let mut q = PerFlowRr::new(1500);
        q.push(pkt(1, 1500));
        q.push(pkt(2, 1500));
        q.push(pkt(2, 1500));
        assert_eq!(q.pop().unwrap().seg.conn(), 1);
        q.push(pkt(1, 100)); // flow 1 returns behind flow 2's turn
        assert_eq!(order(&mut q), [2, 1, 2]);
        // Slots are reused, not grown.
        assert!(q.flows.len() <= 2);
    }

    #[test]
    fn pop_back_takes_the_tail_of_the_longest_flow() {
        let mut q = PerFlowRr::new(1500);
        q.push(pkt(1, 1500));
        q.push(pkt(2, 100));
        q.push(pkt(2, 1500));
        q.push(pkt(2, 200));
        assert_eq!(q.pop_back().map(|p| (p.seg.conn(), p.size)), Some((2, 200)));
        assert_eq!(order(&mut q), [1, 2, 2]);
        assert_eq!(q.pop_back(), None);
    }
}
