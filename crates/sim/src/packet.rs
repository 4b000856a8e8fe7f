//! The simulator's packet: a small `Copy` value carrying the header of the protocol that sent
//! it by value (a `proto::Segment`, never serialized) plus the routing and accounting metadata
//! the network needs. No payload bytes. The network reads only the fields every protocol's
//! header has (connection, offset, priority, ECN) through `Segment`'s accessors.

use proto::Segment;
use units::NodeId;

/// One packet in the simulated network.
///
/// INVARIANT: `size == seg.len() + header_bytes` of the run's transport.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Packet {
    /// The sending protocol's header.
    pub seg: Segment,
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
        self.seg.conn()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_stays_small() {
        // PERF: packets are moved by value through every queue and wire; a header variant that
        // grows them past this should move its bulk into a side table (as telemetry does).
        assert!(std::mem::size_of::<Packet>() <= 80, "{} bytes", std::mem::size_of::<Packet>());
    }
}
