//! In-band network telemetry carried beside packets (HPCC/PowerTCP INT): a slab of stacks
//! indexed by `Packet::int`, so that packets stay small and `Copy` and transports that do not
//! use telemetry pay nothing but a sentinel check.
//!
//! INVARIANT: a slot is in use by exactly one packet in the network or free; every packet that
//! leaves the network (delivered or dropped) frees its slot through [`IntSlab::forget`] or
//! [`IntSlab::take`].

use proto::{IntHop, IntStack};

use crate::packet::Packet;

/// Telemetry stacks of the packets in flight that carry one.
#[derive(Debug, Default)]
pub(crate) struct IntSlab {
    slab: Vec<IntStack>,
    free: Vec<u32>,
}

impl IntSlab {
    /// Store a stack for a packet about to be sent; returns its slot.
    pub(crate) fn alloc(&mut self, stack: IntStack) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = stack;
                i
            }
            None => {
                self.slab.push(stack);
                (self.slab.len() - 1) as u32
            }
        }
    }

    /// Append a hop to the stack in `slot`.
    #[inline]
    pub(crate) fn push_hop(&mut self, slot: u32, hop: IntHop) {
        self.slab[slot as usize].push(hop);
    }

    /// The stack of a delivered packet, freeing its slot.
    #[inline]
    pub(crate) fn take(&mut self, slot: u32) -> IntStack {
        self.free.push(slot);
        self.slab[slot as usize]
    }

    /// A packet left the network without being delivered: free its slot, if it has one.
    #[inline]
    pub(crate) fn forget(&mut self, pkt: &Packet) {
        if pkt.int != Packet::NO_INT {
            self.free.push(pkt.int);
        }
    }
}
