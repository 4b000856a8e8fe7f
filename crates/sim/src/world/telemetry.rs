//! In-band network telemetry carried beside packets (HPCC/PowerTCP INT): a slab of stacks
//! indexed by the packet's header slot (`Packet::hdr`), so that packets stay small and `Copy`
//! and transports that do not use telemetry pay nothing but a flag check (`Packet::has_int`).
//!
//! INVARIANT: slot `i` holds the stack of the packet whose header is in slot `i` of the header
//! slab, if that packet `has_int`; a packet that leaves the network frees its header slot, and
//! with it this one (the next packet with telemetry in the slot overwrites it).

use proto::{IntHop, IntStack};

/// Telemetry stacks of the packets in flight that carry one, by header slot.
#[derive(Debug, Default)]
pub(crate) struct IntSlab {
    slab: Vec<IntStack>,
}

impl IntSlab {
    /// Store a stack for the packet about to be sent with its header in slot `hdr`.
    pub(crate) fn put(&mut self, hdr: u32, stack: IntStack) {
        let i = hdr as usize;
        if i >= self.slab.len() {
            self.slab.resize(i + 1, IntStack::default());
        }
        self.slab[i] = stack;
    }

    /// Append a hop to the stack of the packet in header slot `hdr`.
    #[inline]
    pub(crate) fn push_hop(&mut self, hdr: u32, hop: IntHop) {
        self.slab[hdr as usize].push(hop);
    }

    /// The stack of a delivered packet.
    #[inline]
    pub(crate) fn take(&mut self, hdr: u32) -> IntStack {
        self.slab[hdr as usize]
    }
}
