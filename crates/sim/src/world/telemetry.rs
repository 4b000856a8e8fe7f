//! What travels beside packets: in-band network telemetry (HPCC/PowerTCP INT) and TCP's SACK
//! blocks, each in a slab indexed by the packet's header slot (`Packet::hdr`), so that packets
//! stay small and `Copy` and transports that use neither pay nothing but a flag check
//! (`Packet::has_side_data`).
//!
//! INVARIANT: slot `i` of a slab holds the value of the packet whose header is in slot `i` of
//! the header slab, if that packet has the slab's flag (`has_int`, `has_sack`); a packet that
//! leaves the network frees its header slot, and with it these (the next packet with a value
//! in the slot overwrites it).

use proto::{IntHop, IntStack, SackBlocks};

/// Values of the packets in flight that carry one, by header slot.
#[derive(Debug)]
pub(crate) struct SideSlab<T> {
    slab: Vec<T>,
}

impl<T> Default for SideSlab<T> {
    fn default() -> Self {
        SideSlab { slab: Vec::new() }
    }
}

/// Telemetry stacks (PowerTCP).
pub(crate) type IntSlab = SideSlab<IntStack>;

/// SACK blocks of ACKs (TCP with SACK on).
pub(crate) type SackSlab = SideSlab<SackBlocks>;

impl<T: Copy + Default> SideSlab<T> {
    /// Store the value of the packet about to be sent with its header in slot `hdr`.
    pub(crate) fn put(&mut self, hdr: u32, value: T) {
        let i = hdr as usize;
        if i >= self.slab.len() {
            self.slab.resize(i + 1, T::default());
        }
        self.slab[i] = value;
    }

    /// The value of a delivered packet.
    #[inline]
    pub(crate) fn take(&mut self, hdr: u32) -> T {
        self.slab[hdr as usize]
    }
}

impl IntSlab {
    /// Append a hop to the stack of the packet in header slot `hdr`.
    #[inline]
    pub(crate) fn push_hop(&mut self, hdr: u32, hop: IntHop) {
        self.slab[hdr as usize].push(hop);
    }
}
