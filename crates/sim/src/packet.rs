//! The simulator's packet: a small `Copy` value with what the network reads of a packet (the
//! connection, offset, priority class, ECN codepoint, pFabric rank and ExpressPass kind, copied
//! out of its header when it is sent) plus the routing and accounting metadata the network needs,
//! and the slot of its full header (a `proto::Segment`, never serialized) in a [`HeaderSlab`].
//! No payload bytes.
//!
//! Why the header lives apart: every hop copies a packet into its link's wire and out of it (and
//! through a port FIFO when it waits), but only the host that sent it and the host that receives
//! it read the whole header. With the header inside, a packet was 72 bytes and a wire entry 80
//! (two cache lines); now they are 32 and 40 (see [`Packet`]).
//!
//! INVARIANT: a header slot is used by exactly one packet in the network (on a wire, in a port
//! or credit queue, or being handled) or free. Every packet that leaves the network frees it:
//! [`HeaderSlab::free`] at delivery (after the endpoint read the header in its slot,
//! [`HeaderSlab::slot_mut`]) and at every drop (tested:
//! `world::tests::every_header_slot_belongs_to_one_packet_in_the_network`).
//! INVARIANT: the network's copies are the header's: the only field the network changes is the
//! ECN codepoint (a switch marking CE), which the receiving host writes back into the header.

use proto::Segment;
use units::NodeId;
use proto::Ecn;

/// One packet in the simulated network.
///
/// INVARIANT: `size == header.len() + header_bytes` of the run's transport, and `conn`, `seq`,
/// `rank` and the flags (priority class, ECN codepoint, credit, unscheduled) are the header's
/// (see [`Packet::new`]), but for the ECN codepoint a switch marks.
// PERF: 32 bytes, two to a cache line in a port FIFO (a wire entry with its arrival time is
// 40): the flags share one word and the size is 16 bits (validation caps a packet at
// `spec::limits::MAX_PACKET_BYTES`, 65,535). It was 40 (and 48 on a wire).
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
    /// Slot of the full header in the simulation's [`HeaderSlab`] (and of the in-band telemetry
    /// stack, if [`Packet::has_int`]).
    pub hdr: u32,
    /// Bytes on the wire.
    pub size: u16,
    /// The flags: the priority class (`PRIO_MASK`), the ECN codepoint (at `ECN_SHIFT`) and one
    /// bit each for `TO_RECEIVER`, `CREDIT`, `UNSCHEDULED`, `HAS_INT` and `HAS_SACK`.
    bits: u16,
}

/// The priority class in the low bits of `Packet::bits`; classes past the last a port can have
/// are stored as the last (a port serves them all in its last queue, `queue::Port::queue_of`).
const PRIO_MASK: u16 = 0b111;
const _: () = assert!(crate::spec::MAX_QUEUES <= PRIO_MASK as usize + 1);
const ECN_SHIFT: u32 = 3;
const TO_RECEIVER: u16 = 1 << 5;
const CREDIT: u16 = 1 << 6;
const UNSCHEDULED: u16 = 1 << 7;
const HAS_INT: u16 = 1 << 8;
const HAS_SACK: u16 = 1 << 9;
const TRACED: u16 = 1 << 10;

impl Packet {
    /// A packet of `size` bytes to host `dst` carrying `seg`, whose full header is in slot `hdr`.
    /// PRECONDITION: `size <= MAX_PACKET_BYTES` (validation; a larger one is stored as 65,535).
    #[inline]
    pub fn new(seg: &Segment, hdr: u32, dst: NodeId, size: u32, to_receiver: bool) -> Packet {
        debug_assert!(size <= u32::from(u16::MAX), "a packet of {size} bytes");
        let flag = |on: bool, bit: u16| if on { bit } else { 0 };
        Packet {
            seq: seg.seq(),
            rank: seg.rank(),
            conn: seg.conn(),
            dst,
            hdr,
            size: u16::try_from(size).unwrap_or(u16::MAX),
            bits: u16::from(seg.prio()).min(PRIO_MASK)
                | (seg.ecn() as u16) << ECN_SHIFT
                | flag(to_receiver, TO_RECEIVER)
                | flag(seg.is_credit(), CREDIT)
                | flag(seg.is_unscheduled(), UNSCHEDULED),
        }
    }

    /// The flow this packet belongs to.
    #[inline]
    pub fn flow(&self) -> u32 {
        self.conn
    }

    /// Priority class (0 = highest), at most `MAX_QUEUES - 1`.
    #[inline]
    pub fn prio(&self) -> u8 {
        (self.bits & PRIO_MASK) as u8
    }

    /// ECN codepoint, as switches mark it.
    #[inline]
    pub fn ecn(&self) -> Ecn {
        // Two bits are always a codepoint: the fallback is never taken.
        Ecn::from_u8(((self.bits >> ECN_SHIFT) & 0b11) as u8).unwrap_or(Ecn::Ce)
    }

    /// Set the ECN codepoint (a switch marking CE).
    #[inline]
    pub fn set_ecn(&mut self, ecn: Ecn) {
        self.bits = (self.bits & !(0b11 << ECN_SHIFT)) | (ecn as u16) << ECN_SHIFT;
    }

    /// `true` for sender-to-receiver packets (data, SYN), `false` for the reverse (ACKs).
    #[inline]
    pub fn to_receiver(&self) -> bool {
        self.bits & TO_RECEIVER != 0
    }

    /// Whether this is an ExpressPass credit ([`Segment::is_credit`]).
    #[inline]
    pub fn is_credit(&self) -> bool {
        self.bits & CREDIT != 0
    }

    /// Whether this is an Aeolus unscheduled packet ([`Segment::is_unscheduled`]).
    #[inline]
    pub fn is_unscheduled(&self) -> bool {
        self.bits & UNSCHEDULED != 0
    }

    /// Whether the packet carries an in-band telemetry stack (PowerTCP), in the simulation's
    /// telemetry slab at slot `hdr`.
    #[inline]
    pub fn has_int(&self) -> bool {
        self.bits & HAS_INT != 0
    }

    /// Mark the packet as carrying a telemetry stack.
    #[inline]
    pub fn set_has_int(&mut self) {
        self.bits |= HAS_INT;
    }

    /// Whether the packet carries SACK blocks (a TCP ACK with SACK on), in the simulation's
    /// SACK slab at slot `hdr`.
    #[inline]
    pub fn has_sack(&self) -> bool {
        self.bits & HAS_SACK != 0
    }

    /// Mark the packet as carrying SACK blocks.
    #[inline]
    pub fn set_has_sack(&mut self) {
        self.bits |= HAS_SACK;
    }

    /// Whether anything travels beside the header (telemetry or SACK blocks) or the packet is
    /// traced: one test for the common case of none, where delivery takes its plain path.
    #[inline]
    pub fn has_side_data(&self) -> bool {
        self.bits & (HAS_INT | HAS_SACK | TRACED) != 0
    }

    /// Mark the packet as the traced transfer's (`world::flowtrace`).
    #[inline]
    pub fn set_traced(&mut self) {
        self.bits |= TRACED;
    }

    /// Whether the packet is the traced transfer's (`world::flowtrace`).
    #[inline]
    pub fn is_traced(&self) -> bool {
        self.bits & TRACED != 0
    }

    /// Whether a switch port handles the packet outside its plain path: a credit (when the port
    /// has a credit queue) or a traced packet.
    // PERF: one test of bits already in a register where a hop first tested its link's
    // `has_credit`; a flow trace then costs the hot path nothing.
    #[inline]
    pub fn is_credit_or_traced(&self) -> bool {
        self.bits & (CREDIT | TRACED) != 0
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

    /// The value in `slot` to read or change in place (a packet's header at delivery, which
    /// the endpoint reads where it is rather than from a copy); [`Slab::free`] the slot after.
    #[inline]
    pub fn slot_mut(&mut self, slot: u32) -> &mut T {
        &mut self.slab[slot as usize]
    }

    /// The value in `slot`, if there is one (a prefetch hint's address).
    #[inline]
    pub fn get(&self, slot: u32) -> Option<&T> {
        self.slab.get(slot as usize)
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
        assert!(std::mem::size_of::<Packet>() <= 32, "{} bytes", std::mem::size_of::<Packet>());
        assert!(std::mem::size_of::<(units::Time, Packet)>() <= 40);
    }

    #[test]
    fn a_packet_copies_what_the_network_reads_of_its_header() {
        let tcp = Segment::Tcp(SegmentRepr { conn: 7, seq: 3000, prio: 2, ecn: Ecn::Ect0, ..Default::default() });
        let p = Packet::new(&tcp, 5, NodeId(9), 1540, true);
        assert_eq!((p.conn, p.seq, p.prio(), p.ecn(), p.rank), (7, 3000, 2, Ecn::Ect0, 0));
        assert_eq!((p.hdr, p.dst, p.size, p.to_receiver()), (5, NodeId(9), 1540, true));
        assert!(!p.is_credit() && !p.is_unscheduled() && !p.has_int());
        let pf = Segment::Pfabric(PfabricRepr { conn: 1, seq: 10, rank: 123, ..Default::default() });
        assert_eq!((Packet::new(&pf, 0, NodeId(0), 0, true).rank, Packet::new(&pf, 0, NodeId(0), 0, true).seq), (123, 10));
        let credit = Segment::Xpass(XpassRepr { kind: XpassKind::Credit, ..Default::default() });
        assert!(Packet::new(&credit, 0, NodeId(0), 84, false).is_credit());
        let unsched = Segment::Xpass(XpassRepr { kind: XpassKind::Data, unscheduled: true, ..Default::default() });
        assert!(Packet::new(&unsched, 0, NodeId(0), 84, true).is_unscheduled());
    }

    #[test]
    fn the_flags_keep_their_values_apart() {
        for ecn in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            for prio in [0u8, 3, 7] {
                for to_receiver in [false, true] {
                    let seg = Segment::Tcp(SegmentRepr { prio, ecn, ..Default::default() });
                    let mut p = Packet::new(&seg, 0, NodeId(0), 65_535, to_receiver);
                    assert_eq!((p.prio(), p.ecn(), p.to_receiver(), p.size), (prio, ecn, to_receiver, 65_535));
                    p.set_ecn(Ecn::Ce);
                    p.set_has_int();
                    assert_eq!((p.prio(), p.ecn(), p.to_receiver(), p.has_int()), (prio, Ecn::Ce, to_receiver, true));
                    p.set_ecn(ecn);
                    assert_eq!((p.prio(), p.ecn(), p.is_credit(), p.is_unscheduled()), (prio, ecn, false, false));
                }
            }
        }
        // A class past the last a port can have is served in the last queue either way.
        let low = Segment::Tcp(SegmentRepr { prio: 200, ..Default::default() });
        assert_eq!(Packet::new(&low, 0, NodeId(0), 100, true).prio(), 7);
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
        // A delivery reads the header in its slot, then frees it: the slot is the next one used.
        let d = h.insert(seg(6));
        assert_eq!(h.slot_mut(d).conn(), 6);
        h.free(d);
        assert_eq!((h.live(), h.insert(seg(7))), (1, d));
    }
}
