//! The simulator's packet: a small `Copy` value with what the network reads of a packet (the
//! connection, offset, priority class, ECN codepoint, pFabric rank and ExpressPass kind, copied
//! out of its header when it is sent) plus the routing and accounting metadata the network needs,
//! and the slot of its full header (a `proto::Segment`, never serialized) in a [`HeaderSlab`].
//! No payload bytes.
//!
//! Why the header lives apart: every hop copies a packet into its link's wire and out of it (and
//! through a port FIFO when it waits), but only the host that sent it and the host that receives
//! it read the whole header. With the header inside, a packet was 72 bytes and a wire entry 80
//! (two cache lines); now they are 40 and 48.
//!
//! INVARIANT: a header slot is used by exactly one packet in the network (on a wire, in a port
//! or credit queue, or being handled) or free. Every packet that leaves the network frees it:
//! [`HeaderSlab::take`] at delivery, [`HeaderSlab::free`] at every drop (tested:
//! `world::tests::every_header_slot_belongs_to_one_packet_in_the_network`).
//! INVARIANT: the network's copies are the header's: the only field the network changes is the
//! ECN codepoint (a switch marking CE), which the receiving host writes back into the header.

use proto::Segment;
use units::NodeId;
use proto::Ecn;

/// One packet in the simulated network.
///
/// INVARIANT: `size == header.len() + header_bytes` of the run's transport, and `conn`, `seq`,
/// `prio`, `rank`, `is_credit` and `is_unscheduled` are the header's (see [`Packet::new`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Packet {
    /// The header's payload offset ([`Segment::seq`]: the spraying hash's entropy and ABM's
    /// first-window test).
    pub seq: u64,
    /// pFabric's priority ([`Segment::rank`]; 0 for other protocols).
    pub rank: u64,
    /// Connection (transfer) id.
    pub conn: u32,
    /// Destination host.
    pub dst: NodeId,
    /// Bytes on the wire.
    pub size: u32,
    /// Slot of the full header in the simulation's [`HeaderSlab`] (and of the in-band telemetry
    /// stack, if `has_int`).
    pub hdr: u32,
    /// Priority class (0 = highest).
    pub prio: u8,
    /// ECN codepoint, as switches mark it.
    pub ecn: Ecn,
    /// `true` for sender-to-receiver packets (data, SYN), `false` for the reverse (ACKs).
    pub to_receiver: bool,
    /// Links crossed so far.
    pub hops: u8,
    /// Whether this is an ExpressPass credit ([`Segment::is_credit`]).
    pub is_credit: bool,
    /// Whether this is an Aeolus unscheduled packet ([`Segment::is_unscheduled`]).
    pub is_unscheduled: bool,
    /// Whether the packet carries an in-band telemetry stack (PowerTCP), in the simulation's
    /// telemetry slab at slot `hdr`.
    pub has_int: bool,
}

impl Packet {
    /// A packet of `size` bytes to host `dst` carrying `seg`, whose full header is in slot `hdr`.
    #[inline]
    pub fn new(seg: &Segment, hdr: u32, dst: NodeId, size: u32, to_receiver: bool) -> Packet {
        Packet {
            seq: seg.seq(),
            rank: seg.rank(),
            conn: seg.conn(),
            dst,
            size,
            hdr,
            prio: seg.prio(),
            ecn: seg.ecn(),
            to_receiver,
            hops: 0,
            is_credit: seg.is_credit(),
            is_unscheduled: seg.is_unscheduled(),
            has_int: false,
        }
    }

    /// The flow this packet belongs to.
    #[inline]
    pub fn flow(&self) -> u32 {
        self.conn
    }
}

/// Values by slot; freed slots are reused last-in first-out, so that a new value goes where
/// one was just read (likely in cache). The packets' full headers ([`HeaderSlab`]) and the
/// event queue's pending timers (`sched`) live in one each.
#[derive(Debug)]
pub struct Slab<T> {
    slab: Vec<T>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { slab: Vec::new(), free: Vec::new() }
    }
}

/// The full headers of the packets in the network, by slot.
pub type HeaderSlab = Slab<Segment>;

impl<T: Copy> Slab<T> {
    /// Store a value (a packet's header as it is sent); returns its slot.
    #[inline]
    pub fn insert(&mut self, value: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = value;
                i
            }
            None => {
                self.slab.push(value);
                (self.slab.len() - 1) as u32
            }
        }
    }

    /// The value in `slot` (a packet's header at delivery); frees the slot.
    #[inline]
    pub fn take(&mut self, slot: u32) -> T {
        self.free.push(slot);
        self.slab[slot as usize]
    }

    /// Free `slot` without reading it (a dropped packet's header).
    #[inline]
    pub fn free(&mut self, slot: u32) {
        self.free.push(slot);
    }

    /// Slots in use.
    pub fn live(&self) -> usize {
        self.slab.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::SegmentRepr;
    use wire::{PfabricRepr, XpassKind, XpassRepr};

    #[test]
    fn a_packet_and_its_wire_entry_stay_small() {
        // PERF: packets are moved by value through every queue and wire; a field that grows
        // them past this belongs in the header (`HeaderSlab`) or a side table (as telemetry).
        assert!(std::mem::size_of::<Packet>() <= 40, "{} bytes", std::mem::size_of::<Packet>());
        assert!(std::mem::size_of::<(units::Time, Packet)>() <= 48);
    }

    #[test]
    fn a_packet_copies_what_the_network_reads_of_its_header() {
        let tcp = Segment::Tcp(SegmentRepr { conn: 7, seq: 3000, prio: 2, ecn: Ecn::Ect0, ..Default::default() });
        let p = Packet::new(&tcp, 5, NodeId(9), 1540, true);
        assert_eq!((p.conn, p.seq, p.prio, p.ecn, p.rank), (7, 3000, 2, Ecn::Ect0, 0));
        assert_eq!((p.hdr, p.dst, p.size, p.to_receiver, p.hops), (5, NodeId(9), 1540, true, 0));
        assert!(!p.is_credit && !p.is_unscheduled && !p.has_int);
        let pf = Segment::Pfabric(PfabricRepr { conn: 1, seq: 10, rank: 123, ..Default::default() });
        assert_eq!((Packet::new(&pf, 0, NodeId(0), 0, true).rank, Packet::new(&pf, 0, NodeId(0), 0, true).seq), (123, 10));
        let credit = Segment::Xpass(XpassRepr { kind: XpassKind::Credit, ..Default::default() });
        assert!(Packet::new(&credit, 0, NodeId(0), 84, false).is_credit);
        let unsched = Segment::Xpass(XpassRepr { kind: XpassKind::Data, unscheduled: true, ..Default::default() });
        assert!(Packet::new(&unsched, 0, NodeId(0), 84, true).is_unscheduled);
    }

    #[test]
    fn header_slots_are_reused_last_in_first_out() {
        let mut h = HeaderSlab::default();
        let seg = |conn| Segment::Tcp(SegmentRepr { conn, ..Default::default() });
        let (a, b, c) = (h.insert(seg(1)), h.insert(seg(2)), h.insert(seg(3)));
        assert_eq!((a, b, c, h.live()), (0, 1, 2, 3));
        assert_eq!(h.take(b).conn(), 2);
        h.free(a);
        assert_eq!(h.live(), 1);
        assert_eq!(h.insert(seg(4)), a);
        assert_eq!(h.insert(seg(5)), b);
        assert_eq!(h.take(b).conn(), 5);
        assert_eq!(h.take(c).conn(), 3);
        assert_eq!(h.live(), 1);
    }
}
