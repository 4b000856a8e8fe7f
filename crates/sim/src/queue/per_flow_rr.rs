//! Per-flow round robin at a host NIC (`host.scheduler = "per_flow_rr"`): one FIFO per flow
//! with packets waiting, deficit round robin (Shreedhar and Varghese, SIGCOMM'95) among them,
//! as Linux's `fq` qdisc and htsim's hosts schedule a host's flows. A flow whose FIFO empties
//! leaves the round and forfeits its deficit; a flow that gets a packet joins at the end of
//! the round. The quantum is one MTU, so flows share bytes, not packets.
//!
//! How it fits the [`Scheduler`] pattern: the FIFOs are the port's own queues, so `pick` is an
//! ordinary scheduling decision. What a class scheduler does not need is the other half: a NIC's
//! flows come and go (thousands over a run, a handful at a time), so the policy also assigns an
//! arriving packet its FIFO ([`PerFlowRr::slot_for`], which the port calls at enqueue) from a
//! pool of reused slots, and keeps the flows with packets in an active list, so that neither
//! decision scans idle flows. All of a NIC's FIFOs are one class of the port: its byte count,
//! cap and ECN marking are on the NIC's whole backlog (see `queue`).
//!
//! Not modelled: `fq`'s preference for new flows (a separate list served first) and its
//! per-flow packet limit. A flow is its connection id: a host is never both ends of one
//! transfer, so a transfer's data and its ACKs meet at different NICs.
//!
//! INVARIANT: `active` lists exactly the slots whose FIFO is non-empty, each once, in service
//! order (the front is the flow whose turn it is); `idle` lists the other slots.
//! CORRECTNESS: the quantum is at least one MTU, so the front flow's turn always sends a packet
//! and `pick` ends within two turns.

use std::collections::VecDeque;

use super::Scheduler;
use crate::packet::Packet;

/// Per-flow round robin state of one NIC.
#[derive(Clone, Debug)]
pub struct PerFlowRr {
    /// The flow each slot (the port queue of the same index) holds.
    conn: Vec<u32>,
    deficit: Vec<u64>,
    active: VecDeque<u32>,
    idle: Vec<u32>,
    /// The front flow's turn has not been credited its quantum yet.
    turn_fresh: bool,
    quantum: u64,
}

impl PerFlowRr {
    /// The slots (port queues) a NIC starts with. At least two, so that a port never mistakes
    /// its per-flow FIFOs for a single class FIFO that needs no scheduling decision.
    pub const INITIAL_SLOTS: usize = 2;

    /// No flows yet, [`PerFlowRr::INITIAL_SLOTS`] free slots; a DRR quantum of `quantum` bytes
    /// (at least one MTU).
    pub fn new(quantum: u64) -> PerFlowRr {
        let n = PerFlowRr::INITIAL_SLOTS;
        PerFlowRr {
            conn: vec![0; n],
            deficit: vec![0; n],
            active: VecDeque::new(),
            idle: (0..n as u32).rev().collect(),
            turn_fresh: true,
            quantum: quantum.max(1),
        }
    }

    /// Number of flows with packets waiting.
    #[inline]
    pub fn num_active(&self) -> usize {
        self.active.len()
    }

    /// The queue for a packet of connection `conn` about to be enqueued: its flow's, or a free
    /// slot that joins the round at its end. A result equal to `num_queues` asks the port for a
    /// new queue (slots are reused, so this happens only when more flows wait at once than
    /// ever before).
    pub fn slot_for(&mut self, conn: u32, num_queues: usize) -> usize {
        // PERF: a linear search of the active flows: a NIC holds packets of a few flows at a
        // time, and the most recent one (a window's burst) is usually at the end.
        if let Some(&s) = self.active.iter().rev().find(|&&s| self.conn[s as usize] == conn) {
            return s as usize;
        }
        let s = match self.idle.pop() {
            Some(s) => s,
            None => {
                debug_assert_eq!(self.conn.len(), num_queues);
                self.conn.push(0);
                self.deficit.push(0);
                (self.conn.len() - 1) as u32
            }
        };
        self.conn[s as usize] = conn;
        self.deficit[s as usize] = 0;
        if self.active.is_empty() {
            self.turn_fresh = true;
        }
        self.active.push_back(s);
        s as usize
    }

    /// The slot whose tail to drop for push-out (the longest FIFO), to be followed by
    /// [`PerFlowRr::on_pop_back`]. A NIC never pushes out; this keeps the port's contract whole.
    pub fn victim(&self, queues: &[VecDeque<Packet>]) -> Option<usize> {
        let bytes = |s: u32| queues[s as usize].iter().map(|p| p.size as u64).sum::<u64>();
        self.active.iter().copied().max_by_key(|&s| (bytes(s), u32::MAX - s)).map(|s| s as usize)
    }

    /// The port removed the tail of slot `s` (push-out); `is_empty` says whether it emptied.
    pub fn on_pop_back(&mut self, s: usize, is_empty: bool) {
        if !is_empty {
            return;
        }
        if let Some(pos) = self.active.iter().position(|&x| x as usize == s) {
            self.active.remove(pos);
            self.deficit[s] = 0;
            self.idle.push(s as u32);
            if pos == 0 {
                self.turn_fresh = true;
            }
        }
    }
}

impl Scheduler for PerFlowRr {
    fn pick(&mut self, queues: &[VecDeque<Packet>]) -> usize {
        // A bound instead of `loop` so that a broken invariant cannot hang the run.
        for _ in 0..=self.active.len() + 1 {
            let Some(&s) = self.active.front() else { break };
            let s = s as usize;
            let Some(head) = queues[s].front() else {
                debug_assert!(false, "an active flow has no packet");
                break;
            };
            if self.turn_fresh {
                self.deficit[s] += self.quantum;
                self.turn_fresh = false;
            }
            let size = head.size as u64;
            if self.deficit[s] >= size {
                self.deficit[s] -= size;
                if queues[s].len() == 1 {
                    // This packet empties the flow's FIFO: it leaves the round.
                    self.active.pop_front();
                    self.deficit[s] = 0;
                    self.idle.push(s as u32);
                    self.turn_fresh = true;
                }
                return s;
            }
            // The turn is over: to the end of the round.
            self.active.rotate_left(1);
            self.turn_fresh = true;
        }
        // PRECONDITION (trait) broken: fall back to any non-empty queue.
        queues.iter().position(|q| !q.is_empty()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{Segment, SegmentRepr};
    use units::NodeId;

    fn pkt(conn: u32, size: u32) -> Packet {
        Packet::new(&Segment::Tcp(SegmentRepr { conn, ..Default::default() }), 0, NodeId(0), size, true)
    }

    /// A port's side of the contract: queues the policy assigns, popped where it picks.
    #[derive(Default)]
    struct Nic {
        rr: Option<PerFlowRr>,
        queues: Vec<VecDeque<Packet>>,
    }

    impl Nic {
        fn new() -> Nic {
            Nic { rr: Some(PerFlowRr::new(1500)), queues: vec![VecDeque::new(); PerFlowRr::INITIAL_SLOTS] }
        }
        fn push(&mut self, p: Packet) {
            let rr = self.rr.as_mut().unwrap();
            let s = rr.slot_for(p.conn, self.queues.len());
            if s == self.queues.len() {
                self.queues.push(VecDeque::new());
            }
            self.queues[s].push_back(p);
        }
        fn pop(&mut self) -> Option<Packet> {
            if self.queues.iter().all(VecDeque::is_empty) {
                return None;
            }
            let s = self.rr.as_mut().unwrap().pick(&self.queues);
            self.queues[s].pop_front()
        }
        fn order(&mut self) -> Vec<u32> {
            std::iter::from_fn(|| self.pop()).map(|p| p.conn).collect()
        }
    }

    #[test]
    fn a_flow_arriving_behind_a_window_waits_one_packet_not_the_window() {
        let mut q = Nic::new();
        for _ in 0..10 {
            q.push(pkt(7, 1500));
        }
        q.push(pkt(3, 1500));
        q.push(pkt(3, 1500));
        assert_eq!(q.rr.as_ref().unwrap().num_active(), 2);
        assert_eq!(q.order(), [7, 3, 7, 3, 7, 7, 7, 7, 7, 7, 7, 7]);
        assert_eq!(q.rr.as_ref().unwrap().num_active(), 0);
    }

    #[test]
    fn shares_bytes_not_packets() {
        // One MTU per turn: three 500 B packets of flow 2 for each 1500 B packet of flow 1.
        let mut q = Nic::new();
        for _ in 0..4 {
            q.push(pkt(1, 1500));
            for _ in 0..3 {
                q.push(pkt(2, 500));
            }
        }
        assert_eq!(&q.order()[..8], [1, 2, 2, 2, 1, 2, 2, 2]);
    }

    #[test]
    fn an_emptied_flow_leaves_and_a_returning_one_joins_the_end() {
        let mut q = Nic::new();
        q.push(pkt(1, 1500));
        q.push(pkt(2, 1500));
        q.push(pkt(2, 1500));
        assert_eq!(q.pop().unwrap().conn, 1);
        q.push(pkt(1, 100)); // flow 1 returns behind flow 2's turn
        assert_eq!(q.order(), [2, 1, 2]);
        // Slots are reused, and grown only when more flows wait at once than ever before.
        assert_eq!(q.queues.len(), 2);
        q.push(pkt(5, 100));
        q.push(pkt(6, 100));
        assert_eq!(q.queues.len(), 2);
        q.push(pkt(7, 100));
        assert_eq!(q.queues.len(), 3);
        assert_eq!(q.order(), [5, 6, 7]);
    }

    #[test]
    fn push_out_victim_is_the_longest_flow() {
        let mut q = Nic::new();
        q.push(pkt(1, 1500));
        q.push(pkt(2, 100));
        q.push(pkt(2, 1500));
        q.push(pkt(2, 200));
        let rr = q.rr.as_mut().unwrap();
        let v = rr.victim(&q.queues).unwrap();
        let tail = q.queues[v].pop_back().unwrap();
        rr.on_pop_back(v, q.queues[v].is_empty());
        assert_eq!((tail.conn, tail.size), (2, 200));
        assert_eq!(q.order(), [1, 2, 2]);
    }
}
