//! Egress port queues: up to [`MAX_QUEUES`](crate::spec::MAX_QUEUES) FIFO queues per port,
//! a scheduling policy between them ([`Scheduler`], dispatched through [`AnyScheduler`]; one
//! policy per file: `strict_priority`, `drr`), per-queue ECN marking at enqueue and an
//! optional per-queue byte cap.
//!
//! A switch port under `switch.scheduler = "pfabric"` has one queue, served in pFabric's order
//! (SIGCOMM'13 §4.1: the earliest packet of the most urgent packet's flow) and, when full,
//! pushing out its least urgent packet for a more urgent arrival ([`Pfabric`], `pfabric`; the
//! switch carries out the push-out, `world::switch`).
//!
//! A host NIC has one class. With `host.scheduler = "per_flow_rr"` its packets wait in one
//! FIFO per flow, and the policy ([`PerFlowRr`], `per_flow_rr`) both picks among them (deficit
//! round robin) and, at enqueue, assigns a packet its flow's FIFO, creating FIFOs on demand:
//! the port's storage is then indexed by flow slot, while its byte counts, cap and ECN marking
//! stay per class. So a NIC marks on its whole backlog under either scheduler, as a switch port
//! marks on its queue: the two NIC schedulers differ only in order, and a sender whose own NIC
//! is its bottleneck still sees its aggregate queue there (DCTCP §3.1 on a shared link).
//! Marking per flow instead (FQ-CoDel's way) would let N flows each hold K.
//!
//! The port does not decide buffer admission: the switch's shared-buffer policy
//! (`admission`) is asked first; a port only enforces its own static caps.
//!
//! INVARIANT: the bytes of class `c` (`Port::class(c)[BYTES]`) equal the sum
//! of `size` of the packets of class `c` (stored in `queues[c]`, or in any of `queues` under
//! per-flow round robin, which has one class), and `total` equals their sum.

use std::collections::VecDeque;

use proto::Ecn;

use crate::packet::Packet;
use crate::spec::{SchedulerKind, MAX_QUEUES};

mod credit_shaper;
mod drr;
mod per_flow_rr;
mod selective_drop;
mod pfabric;
mod strict_priority;

pub use credit_shaper::CreditShaper;
pub use drr::Drr;
pub use per_flow_rr::PerFlowRr;
pub use selective_drop::SelectiveDrop;
pub use pfabric::Pfabric;
pub use strict_priority::StrictPriority;

/// The contract of a scheduling policy between the queues of one port: which non-empty queue
/// sends next. It sees the queues (read-only) and keeps its own state.
pub trait Scheduler {
    /// The queue to dequeue from next. PRECONDITION: at least one queue is non-empty.
    /// POSTCONDITION: the returned queue is non-empty.
    fn pick(&mut self, queues: &[VecDeque<Packet>]) -> usize;
}

/// Every scheduling policy, dispatched with a `match` on the hot path.
#[derive(Clone, Debug)]
pub enum AnyScheduler {
    /// Always the lowest-index non-empty queue.
    StrictPriority(StrictPriority),
    /// Deficit round robin.
    // PERF: the policies with state are boxed so that the enum, which every `Link` embeds,
    // stays two words (see `world::switch::Link`).
    Drr(Box<Drr>),
    /// Per-flow deficit round robin (host NICs; see [`Port::per_flow`]).
    PerFlowRr(Box<PerFlowRr>),
    /// pFabric (one queue; the port picks a packet inside it, see [`Port::dequeue`]).
    Pfabric(Pfabric),
}

impl AnyScheduler {
    /// The policy a spec names, for `num_queues` queues and a DRR quantum of `quantum` bytes.
    pub fn new(kind: SchedulerKind, num_queues: usize, quantum: u64) -> AnyScheduler {
        match kind {
            SchedulerKind::StrictPriority => AnyScheduler::StrictPriority(StrictPriority),
            SchedulerKind::RoundRobin => AnyScheduler::Drr(Box::new(Drr::new(num_queues, quantum))),
            SchedulerKind::Pfabric => AnyScheduler::Pfabric(Pfabric),
        }
    }
}

impl Scheduler for AnyScheduler {
    #[inline]
    fn pick(&mut self, queues: &[VecDeque<Packet>]) -> usize {
        match self {
            AnyScheduler::StrictPriority(s) => s.pick(queues),
            AnyScheduler::Drr(s) => s.pick(queues),
            AnyScheduler::PerFlowRr(s) => s.pick(queues),
            // Its one queue; the packet within it is the port's choice (`Port::dequeue`).
            AnyScheduler::Pfabric(_) => 0,
        }
    }
}

/// Per-queue configuration, resolved from the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueConf {
    /// Mark CE when the queue holds more than this many bytes at enqueue.
    pub ecn_threshold: Option<u64>,
    /// Static byte cap.
    pub cap: Option<u64>,
}

/// A drained FIFO with room for more packets than this shrinks to [`KEEP_PKTS`].
const SHRINK_ABOVE_PKTS: usize = 64;
/// The room a drained FIFO keeps.
const KEEP_PKTS: usize = 16;

/// Word of a class's words (`port_meta`): bytes queued.
const BYTES: usize = 0;
/// Word of a class's words: its static byte cap, `u64::MAX` for none.
const CAP: usize = 1;
/// Word of a class's words: the largest backlog it reached.
const MAX_BYTES: usize = 2;
/// Word of a class's words: its ECN threshold, `u64::MAX` for none (last: only a packet that
/// waits reads it, see `Port`).
const ECN_K: usize = 3;
/// Words per class.
const META_ROWS: usize = 4;

/// A class's words: [`BYTES`], [`CAP`], [`MAX_BYTES`], [`ECN_K`].
type ClassWords = [u64; META_ROWS];

/// The per-class words of a port of two classes or more, by class.
type ManyWords = [ClassWords; MAX_QUEUES];

/// The queues of one egress port.
// PERF: `repr(C)` keeps the fields in this order: what a packet that passes an idle port reads
// and writes (`total`, whether it has one class, its bytes, cap and largest backlog) comes
// first, 40 bytes that share the second cache line of its `Link` with the wire (see
// `world::switch::Link`); the ECN threshold, the FIFOs and the scheduler, read only when a
// packet waits, follow.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct Port {
    total: u64,
    /// The per-class words of a port of two classes or more; `None` for one class.
    // PERF: a thin pointer (one word), so that the test of the port's width stays in the same
    // cache line as the one-class words.
    many: Option<Box<ManyWords>>,
    /// The per-class words of a one-class port (see `port_meta`); unused with more classes.
    // PERF: inline, so that a packet at a one-class port (every port of most runs) reads and
    // writes its counters in the `Link`'s own cache lines. In an allocation of their own they
    // were a cache miss per packet-hop on the 1,024-host fat-tree (`check_cap`, about 7% of a
    // run waited there), one that no prefetch of the link can start early.
    one: ClassWords,
    /// One FIFO per class, or per flow slot under [`AnyScheduler::PerFlowRr`].
    // PERF: per-flow FIFOs live here too, not inside the policy, so that `dequeue` has one
    // place to pop from (two made it copy every packet once more, on every port). With the TSQ
    // paths kept out of line (`world::switch`, `world::host`), the NIC features cost 0.6% of
    // the instructions of a run that uses neither (callgrind on compare/s2.toml: 2.739 G
    // against 2.723 G without them), down from 7.9% in their first, inline form.
    queues: Vec<VecDeque<Packet>>,
    scheduler: AnyScheduler,
}

/// Per class: bytes queued ([`BYTES`]), the cap ([`CAP`]), the largest backlog ([`MAX_BYTES`])
/// and the ECN threshold ([`ECN_K`]); as `(one, many)` for [`Port`]: one class's four words, or
/// four words per class for more classes.
// PERF: one place for everything an enqueue reads and writes per class (it was three `Vec`s,
// three cache lines to miss per packet at a port of the 1,024-host fat-tree). A threshold or
// cap of `u64::MAX` acts as none: no backlog exceeds it.
fn port_meta(conf: &[QueueConf]) -> (ClassWords, Option<Box<ManyWords>>) {
    debug_assert!((1..=MAX_QUEUES).contains(&conf.len()));
    let mut words = Box::new([[0; META_ROWS]; MAX_QUEUES]);
    for (w, qc) in words.iter_mut().zip(conf) {
        w[ECN_K] = qc.ecn_threshold.unwrap_or(u64::MAX);
        w[CAP] = qc.cap.unwrap_or(u64::MAX);
    }
    if conf.len() == 1 {
        (words[0], None)
    } else {
        ([0; META_ROWS], Some(words))
    }
}

/// Why a port refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortDrop {
    /// The queue's static cap would be exceeded.
    QueueCap,
}

impl Port {
    /// The bytes at the start of a port that a packet passing it idle reads or writes (`total`,
    /// `many` and the one-class words up to its largest backlog; see `Port`).
    #[cfg(test)]
    pub(crate) const HOT_BYTES: usize = std::mem::offset_of!(Port, one) + (MAX_BYTES + 1) * 8;

    /// A port with one queue per `conf` entry. `quantum` is the DRR quantum (at least one MTU).
    pub fn new(conf: Vec<QueueConf>, scheduler: SchedulerKind, quantum: u64) -> Port {
        let n = conf.len();
        debug_assert!(n >= 1);
        let (one, many) = port_meta(&conf);
        Port {
            total: 0,
            many,
            one,
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            scheduler: AnyScheduler::new(scheduler, n, quantum),
        }
    }

    /// A port with one queue configured by `conf`, stored per flow with deficit round robin
    /// among the flows (quantum `quantum` bytes, at least one MTU): a NIC under
    /// `host.scheduler = "per_flow_rr"`.
    pub fn per_flow(conf: QueueConf, quantum: u64) -> Port {
        let (one, many) = port_meta(&[conf]);
        Port {
            total: 0,
            many,
            one,
            queues: (0..PerFlowRr::INITIAL_SLOTS).map(|_| VecDeque::new()).collect(),
            scheduler: AnyScheduler::PerFlowRr(Box::new(PerFlowRr::new(quantum))),
        }
    }

    /// The words of class `q` (see `port_meta`).
    // PERF: one test of the port's width per call, then every word at a constant index (no
    // addition, no bounds check): a class's words are together. With one test per word (rows
    // of classes) the tests were 2.1% of the 256-host run's instructions; through `meta()` and
    // `at()`, which re-read the width twice per word, 2.3% more.
    #[inline(always)]
    fn class(&self, q: usize) -> &ClassWords {
        match &self.many {
            // A port of one class has only class 0 (`queue_of`, `dequeue`).
            None => {
                debug_assert_eq!(q, 0, "a one-class port's class");
                &self.one
            }
            Some(many) => &many[q],
        }
    }

    /// The words of class `q`, to change.
    #[inline(always)]
    fn class_mut(&mut self, q: usize) -> &mut ClassWords {
        match &mut self.many {
            None => {
                debug_assert_eq!(q, 0, "a one-class port's class");
                &mut self.one
            }
            Some(many) => &mut many[q],
        }
    }

    /// Number of queues.
    #[inline(always)]
    pub fn num_queues(&self) -> usize {
        // A port of several classes has one FIFO per class (per-flow FIFOs are one class's).
        if self.many.is_none() {
            1
        } else {
            self.queues.len()
        }
    }

    /// The queue a packet of priority class `prio` uses.
    #[inline(always)]
    pub fn queue_of(&self, prio: u8) -> usize {
        (prio as usize).min(self.num_queues() - 1)
    }

    /// Bytes queued in queue `q`.
    #[inline]
    pub fn queue_bytes(&self, q: usize) -> u64 {
        self.class(q)[BYTES]
    }

    /// Bytes queued in all queues.
    #[inline]
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// Largest backlog each queue reached.
    pub fn max_bytes(&self) -> Vec<u64> {
        (0..self.num_queues()).map(|q| self.class(q)[MAX_BYTES]).collect()
    }

    /// Packets queued, in all queues.
    pub fn num_packets(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// Whether nothing is queued.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Check the static cap of queue `q` for a packet of `size` bytes.
    #[inline(always)]
    pub fn check_cap(&self, q: usize, size: u64) -> Result<(), PortDrop> {
        // No cap is u64::MAX, which no backlog plus a packet exceeds.
        let w = self.class(q);
        if w[BYTES] + size > w[CAP] {
            Err(PortDrop::QueueCap)
        } else {
            Ok(())
        }
    }

    /// Append `pkt` to queue `q`, marking it CE if the queue is above its ECN threshold
    /// (DCTCP §3.1: "mark arriving packets if the queue occupancy is greater than K upon
    /// arrival", instantaneous length, before this packet). Returns whether it was marked: an
    /// ECN-capable packet above the threshold, including one marked CE at an earlier hop (as
    /// ns-3's `Ipv4QueueDiscItem::Mark` and Linux's `INET_ECN_set_ce` count it), so that mark
    /// counts compare with theirs; a not-ECT packet is never marked.
    #[inline]
    pub fn enqueue(&mut self, q: usize, mut pkt: Packet) -> bool {
        let size = pkt.size as u64;
        let w = self.class_mut(q);
        // No threshold is u64::MAX, which no backlog exceeds.
        let marked = w[BYTES] > w[ECN_K] && pkt.ecn() != Ecn::NotEct;
        w[BYTES] += size;
        if w[BYTES] > w[MAX_BYTES] {
            w[MAX_BYTES] = w[BYTES];
        }
        if marked {
            pkt.set_ecn(Ecn::Ce);
        }
        let slot = if let AnyScheduler::PerFlowRr(_) = self.scheduler { self.flow_slot(pkt.conn) } else { q };
        self.queues[slot].push_back(pkt);
        self.total += size;
        marked
    }

    /// Whether nothing is queued and a packet enqueued now would be the next dequeued without
    /// changing the scheduler's state: one FIFO (no scheduling decision), strict priority (a
    /// stateless one) or per-flow round robin, and not pFabric. Then [`Port::pass`] may stand
    /// for the pair.
    // CORRECTNESS (per-flow round robin, `queue::per_flow_rr`): with nothing queued no flow is
    // active and its next turn is fresh; the pair would take the top idle slot, make it the
    // only active flow, give it a quantum (two if the packet is larger), send the packet, and
    // put the slot back on top of the idle ones with no deficit and the next turn fresh: the
    // same state, but for the idle slot's stale connection id, which nothing reads (tested:
    // `an_empty_per_flow_port_passing_a_packet_is_the_enqueue_and_dequeue`).
    #[inline]
    pub fn is_idle_fifo(&self) -> bool {
        self.total == 0
            && !self.is_pfabric()
            && (self.queues.len() == 1
                || matches!(self.scheduler, AnyScheduler::StrictPriority(_) | AnyScheduler::PerFlowRr(_)))
    }

    /// The accounting of [`Port::enqueue`] of a packet of `size` bytes into queue `q` followed
    /// at once by [`Port::dequeue`] of the same packet. PRECONDITION: [`Port::is_idle_fifo`].
    /// CORRECTNESS: the queue was empty, so the packet is not ECN-marked (`bytes[q] = 0` is not
    /// above any threshold), and its queue's maximum becomes at least its size.
    #[inline(always)]
    pub fn pass(&mut self, q: usize, size: u64) {
        debug_assert!(self.is_idle_fifo());
        let w = self.class_mut(q);
        if size > w[MAX_BYTES] {
            w[MAX_BYTES] = size;
        }
    }

    /// The FIFO of connection `conn`'s packets under per-flow round robin (a new one if needed).
    #[inline(never)]
    fn flow_slot(&mut self, conn: u32) -> usize {
        let AnyScheduler::PerFlowRr(f) = &mut self.scheduler else { return 0 };
        let s = f.slot_for(conn, self.queues.len());
        if s == self.queues.len() {
            self.queues.push(VecDeque::new());
        }
        s
    }

    /// Remove the next packet to transmit, with its queue index.
    #[inline]
    pub fn dequeue(&mut self) -> Option<(usize, Packet)> {
        if self.total == 0 {
            return None;
        }
        // One class with one FIFO needs no decision (a per-flow port always has two FIFOs or
        // more, so its policy always decides).
        let s = if self.queues.len() == 1 { 0 } else { self.scheduler.pick(&self.queues) };
        // pFabric sends from inside its queue (§4.1), every other policy from a queue's head.
        let pkt = if let AnyScheduler::Pfabric(_) = self.scheduler {
            let i = Pfabric::pick(&self.queues[s])?;
            self.queues[s].remove(i)?
        } else {
            self.queues[s].pop_front()?
        };
        // PERF (memory): a FIFO that drains gives back what a burst made it grow, so that the
        // run's memory follows the packets queued at once, not the sum over ports of each one's
        // largest burst (49 of 72 MB at the peak of 4 ms of the k = 16 fat-tree, heaptrack).
        // A port that fills again regrows in a few doublings, each a copy of what it holds.
        if self.queues[s].is_empty() && self.queues[s].capacity() > SHRINK_ABOVE_PKTS {
            self.queues[s].shrink_to(KEEP_PKTS);
        }
        // Per-flow FIFOs are all of class 0, the only class.
        let q = s.min(self.num_queues() - 1);
        let size = pkt.size as u64;
        self.class_mut(q)[BYTES] -= size;
        self.total -= size;
        Some((q, pkt))
    }

    /// The bookkeeping of the port's first FIFO (a prefetch hint's address: the FIFO a
    /// one-class port sends from).
    #[inline]
    pub fn fifo_hint(&self) -> Option<&VecDeque<Packet>> {
        self.queues.first()
    }

    /// The packet at the head of the port's first FIFO (a prefetch hint's address).
    #[inline]
    pub fn head_hint(&self) -> Option<&Packet> {
        self.queues.first()?.front()
    }

    /// Whether this is a pFabric port (`switch.scheduler = "pfabric"`).
    #[inline]
    pub fn is_pfabric(&self) -> bool {
        matches!(self.scheduler, AnyScheduler::Pfabric(_))
    }

    /// pFabric (§4.1): whether dropping queued packets of lower priority than an arrival of
    /// `rank` and `size` bytes makes room for it under queue `q`'s cap. `false` means the
    /// arrival is the one to drop.
    pub fn pfabric_can_make_room(&self, q: usize, rank: u64, size: u64) -> bool {
        // No cap is u64::MAX, which no sum below reaches past.
        let cap = self.class(q)[CAP];
        let below = Pfabric::bytes_below(&self.queues[q], rank);
        self.queue_bytes(q).saturating_sub(below).saturating_add(size) <= cap
    }

    /// pFabric (§4.1): remove queue `q`'s lowest-priority packet (the latest of equals).
    pub fn pfabric_pop_worst(&mut self, q: usize) -> Option<Packet> {
        let i = Pfabric::victim(&self.queues[q])?;
        let pkt = self.queues[q].remove(i)?;
        let size = pkt.size as u64;
        self.class_mut(q)[BYTES] -= size;
        self.total -= size;
        Some(pkt)
    }

    /// Remove the packet at the tail of queue `q` (push-out), if any.
    pub fn pop_back(&mut self, q: usize) -> Option<Packet> {
        let pkt = match &mut self.scheduler {
            AnyScheduler::PerFlowRr(f) => {
                let s = f.victim(&self.queues)?;
                let pkt = self.queues[s].pop_back()?;
                f.on_pop_back(s, self.queues[s].is_empty());
                pkt
            }
            _ => self.queues[q].pop_back()?,
        };
        let size = pkt.size as u64;
        self.class_mut(q)[BYTES] -= size;
        self.total -= size;
        Some(pkt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{Segment, SegmentRepr};
    use units::NodeId;

    fn pkt(prio: u8, size: u32, ecn: Ecn) -> Packet {
        Packet::new(&Segment::Tcp(SegmentRepr { prio, ecn, ..Default::default() }), 0, NodeId(0), size, true)
    }

    fn conf(k: Option<u64>) -> QueueConf {
        QueueConf { ecn_threshold: k, cap: None }
    }

    #[test]
    fn marks_only_above_k_and_only_ecn_capable_packets() {
        let mut p = Port::new(vec![conf(Some(1500))], SchedulerKind::StrictPriority, 1500);
        assert!(!p.enqueue(0, pkt(0, 1500, Ecn::Ect0))); // queue 0 B
        assert!(!p.enqueue(0, pkt(0, 1500, Ecn::Ect0))); // queue 1500 B: not greater than K
        assert!(p.enqueue(0, pkt(0, 1500, Ecn::Ect0))); // queue 3000 B > K
        assert!(!p.enqueue(0, pkt(0, 1500, Ecn::NotEct)));
        // Marked at an earlier hop: marked (and counted) again, as ns-3 and Linux count it.
        assert!(p.enqueue(0, pkt(0, 1500, Ecn::Ce)));
        let seen: Vec<Ecn> = std::iter::from_fn(|| p.dequeue()).map(|(_, p)| p.ecn()).collect();
        assert_eq!(seen, vec![Ecn::Ect0, Ecn::Ect0, Ecn::Ce, Ecn::NotEct, Ecn::Ce]);
        assert_eq!(p.total_bytes(), 0);
        assert_eq!(p.max_bytes(), [7500]);
    }

    #[test]
    fn strict_priority_serves_lowest_index_first() {
        let mut p = Port::new(vec![conf(None); 3], SchedulerKind::StrictPriority, 1500);
        p.enqueue(2, pkt(2, 100, Ecn::NotEct));
        p.enqueue(1, pkt(1, 100, Ecn::NotEct));
        p.enqueue(2, pkt(2, 100, Ecn::NotEct));
        p.enqueue(0, pkt(0, 100, Ecn::NotEct));
        let order: Vec<usize> = std::iter::from_fn(|| p.dequeue()).map(|(q, _)| q).collect();
        assert_eq!(order, vec![0, 1, 2, 2]);
    }

    #[test]
    fn round_robin_shares_bytes_equally() {
        let mut p = Port::new(vec![conf(None); 2], SchedulerKind::RoundRobin, 1500);
        for _ in 0..100 {
            p.enqueue(0, pkt(0, 1500, Ecn::NotEct));
            p.enqueue(1, pkt(1, 500, Ecn::NotEct));
            p.enqueue(1, pkt(1, 500, Ecn::NotEct));
            p.enqueue(1, pkt(1, 500, Ecn::NotEct));
        }
        let mut sent = [0u64; 2];
        for _ in 0..120 {
            let (q, pk) = p.dequeue().unwrap();
            sent[q] += pk.size as u64;
        }
        // Each round: 1500 B from each queue.
        assert_eq!(sent[0], sent[1]);
    }

    #[test]
    fn per_flow_port_marks_and_caps_on_its_total_backlog() {
        let mut p = Port::per_flow(QueueConf { ecn_threshold: Some(1500), cap: Some(6000) }, 1500);
        let of = |conn: u32| {
            let mut x = pkt(0, 1500, Ecn::Ect0);
            x.conn = conn;
            x
        };
        assert!(!p.enqueue(0, of(1))); // total 0 B
        assert!(!p.enqueue(0, of(1))); // total 1500 B: not greater than K
        assert!(p.enqueue(0, of(2))); // flow 2's own queue is empty, the NIC's is 3000 B > K
        assert!(p.enqueue(0, of(3)));
        assert_eq!(p.check_cap(0, 1), Err(PortDrop::QueueCap));
        // Round robin: flows 1, 2, 3, then flow 1's second packet.
        let order: Vec<u32> = std::iter::from_fn(|| p.dequeue()).map(|(q, x)| {
            assert_eq!(q, 0);
            x.conn
        }).collect();
        assert_eq!(order, [1, 2, 3, 1]);
        assert_eq!((p.total_bytes(), p.max_bytes()), (0, vec![6000]));
    }

    fn pf(conn: u32, rank: u64, size: u32) -> Packet {
        let seg = Segment::Pfabric(proto::PfabricRepr { conn, rank, len: size - 40, ..Default::default() });
        Packet::new(&seg, 0, NodeId(0), size, true)
    }

    #[test]
    fn pfabric_port_pushes_out_only_for_a_more_urgent_arrival() {
        let conf = QueueConf { ecn_threshold: None, cap: Some(4500) };
        let mut p = Port::new(vec![conf], SchedulerKind::Pfabric, 1500);
        assert!(p.is_pfabric());
        p.enqueue(0, pf(1, 5000, 1500));
        p.enqueue(0, pf(2, 9000, 1500));
        p.enqueue(0, pf(3, 7000, 1500));
        assert_eq!(p.check_cap(0, 1500), Err(PortDrop::QueueCap));
        // The least urgent packet queued has rank 9000: an arrival as urgent or less is the one
        // dropped.
        assert!(!p.pfabric_can_make_room(0, 9000, 1500));
        assert!(!p.pfabric_can_make_room(0, u64::MAX, 1500));
        // A 3000-byte arrival of rank 6000 would need both 9000 and 7000 gone: 7000 is less
        // urgent than it, so it may go too.
        assert!(p.pfabric_can_make_room(0, 6000, 3000));
        // Of rank 8000 it could evict only 9000, which is not enough.
        assert!(!p.pfabric_can_make_room(0, 8000, 3000));
        assert_eq!(p.pfabric_pop_worst(0).map(|x| x.flow()), Some(2));
        assert_eq!(p.total_bytes(), 3000);
        p.enqueue(0, pf(4, 100, 1500));
        let order: Vec<u32> = std::iter::from_fn(|| p.dequeue()).map(|(_, x)| x.flow()).collect();
        assert_eq!(order, [4, 1, 3], "least remaining first");
        assert_eq!((p.total_bytes(), p.queue_bytes(0)), (0, 0));
    }

    #[test]
    fn an_empty_per_flow_port_passing_a_packet_is_the_enqueue_and_dequeue() {
        // CORRECTNESS of `is_idle_fifo` for per-flow round robin: after any history that leaves
        // the port empty, `pass` of a packet leaves a port that sends every later packet in the
        // same order, with the same marks and counters, as one that enqueued and dequeued it.
        let flow = |conn: u32, size: u32| {
            let seg = Segment::Tcp(SegmentRepr { conn, ecn: Ecn::Ect0, ..Default::default() });
            Packet::new(&seg, 0, NodeId(0), size, true)
        };
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let mut next = |n: u64| rng.gen_range(0..n);
        let (mut compared, mut shared) = (0, 0);
        for _ in 0..300 {
            // Quantum 1,500: packets of up to 1,540 bytes take two turns' credit.
            let mut a = Port::per_flow(conf(Some(3_000)), 1_500);
            for _ in 0..next(16) {
                if next(3) == 0 {
                    a.dequeue();
                } else {
                    a.enqueue(0, flow(next(6) as u32, 64 + next(1_477) as u32));
                }
            }
            while a.dequeue().is_some() {}
            assert!(a.is_idle_fifo());
            let mut b = a.clone();
            let p = flow(next(6) as u32, 64 + next(1_477) as u32);
            assert!(!a.enqueue(0, p));
            assert_eq!(a.dequeue(), Some((0, p)));
            b.pass(0, p.size as u64);
            let mut out = Vec::new();
            for _ in 0..40 {
                if next(3) == 0 {
                    let (da, db) = (a.dequeue(), b.dequeue());
                    assert_eq!(da, db);
                    out.extend(da.map(|(_, p)| p.conn));
                } else {
                    let p = flow(next(6) as u32, 64 + next(1_477) as u32);
                    assert_eq!(a.enqueue(0, p), b.enqueue(0, p));
                }
                assert_eq!((a.total_bytes(), a.max_bytes()), (b.total_bytes(), b.max_bytes()));
                compared += 1;
            }
            // Round robin decides: in most runs several flows' packets leave in turn.
            shared += usize::from(out.windows(2).any(|w| w[0] != w[1]));
        }
        assert!(compared == 300 * 40 && shared > 100, "{shared} runs with several flows");
    }

    #[test]
    fn cap_refuses_beyond_limit() {
        let mut p = Port::new(
            vec![QueueConf { ecn_threshold: None, cap: Some(3000) }],
            SchedulerKind::StrictPriority,
            1500,
        );
        assert_eq!(p.check_cap(0, 1500), Ok(()));
        p.enqueue(0, pkt(0, 1500, Ecn::NotEct));
        p.enqueue(0, pkt(0, 1500, Ecn::NotEct));
        assert_eq!(p.check_cap(0, 1), Err(PortDrop::QueueCap));
    }
}
