//! The simulator's packet: a small `Copy` value carrying a transport header by value (never
//! serialized) plus the routing and accounting metadata the network needs. No payload bytes.

use proto::SegmentRepr;
use units::NodeId;

/// One packet in the simulated network.
///
/// INVARIANT: `size == seg.len + header_bytes` of the run's transport; `flow == seg.conn`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Packet {
    /// The transport header (sequence range, flags, ECN, priority, timestamps).
    pub seg: SegmentRepr,
    /// Destination host.
    pub dst: NodeId,
    /// Bytes on the wire.
    pub size: u32,
    /// `true` for sender-to-receiver packets (data, SYN), `false` for the reverse (ACKs).
    pub to_receiver: bool,
    /// Links crossed so far.
    pub hops: u8,
    /// Slot of this packet's in-band telemetry stack in the simulation's slab, or
    /// [`Packet::NO_INT`] (every transport but PowerTCP).
    pub int: u32,
}

impl Packet {
    /// No telemetry stack.
    pub const NO_INT: u32 = u32::MAX;

    /// The flow this packet belongs to.
    #[inline]
    pub fn flow(&self) -> u32 {
        self.seg.conn
    }
}
