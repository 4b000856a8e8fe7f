//! Shared-buffer admission: which arriving packets a switch's buffer accepts.
//!
//! Mechanism vs policy: the switch (in `world`) owns the occupancy counters and asks the
//! policy, through [`BufferAdmission::admit`], before every enqueue. Policies see a read-only
//! [`AdmitCtx`] and may keep state updated by the `on_*` callbacks. The hot path dispatches
//! through [`AnyAdmission`] (a `match`), not a vtable.
//!
//! Units: every threshold here is in bytes.

use crate::spec::AdmissionSpec;

/// What a policy sees when a packet arrives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdmitCtx {
    /// The switch's shared buffer, bytes.
    pub buffer: u64,
    /// Bytes currently held by the switch (all ports, all queues).
    pub occupancy: u64,
    /// Bytes in the destination queue.
    pub queue_bytes: u64,
    /// Bytes in all queues of the destination port.
    pub port_bytes: u64,
    /// Egress ports of the switch.
    pub num_ports: u32,
    /// Destination queue index (priority class).
    pub queue: u8,
    /// Dynamic Thresholds alpha of the destination queue.
    pub dt_alpha: f64,
    /// Size of the arriving packet, bytes.
    pub size: u64,
}

/// The contract of a buffer admission policy.
pub trait BufferAdmission {
    /// Whether to accept the packet described by `ctx`.
    ///
    /// POSTCONDITION (checked by the switch): an accepted packet fits in the buffer,
    /// `occupancy + size <= buffer`.
    fn admit(&mut self, ctx: &AdmitCtx) -> bool;
}

/// Complete Sharing: accept while the buffer has room.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompleteSharing;

impl BufferAdmission for CompleteSharing {
    #[inline]
    fn admit(&mut self, c: &AdmitCtx) -> bool {
        c.occupancy + c.size <= c.buffer
    }
}

/// Dynamic Thresholds (Choudhury and Hahne, ToN 1998): a queue may grow to
/// `T(t) = alpha * (B - Q(t))`, where `Q(t)` is the total occupancy. A packet is accepted if
/// the queue including it stays within `T(t)` and the buffer has room.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DynamicThresholds;

impl BufferAdmission for DynamicThresholds {
    #[inline]
    fn admit(&mut self, c: &AdmitCtx) -> bool {
        if c.occupancy + c.size > c.buffer {
            return false;
        }
        let threshold = c.dt_alpha * (c.buffer - c.occupancy) as f64;
        (c.queue_bytes + c.size) as f64 <= threshold
    }
}

/// Static partitioning: each egress port owns `port_bytes` (default `B / ports`) bytes,
/// shared by its queues.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StaticPartition {
    /// Bytes per port; `None` means an equal share of the buffer.
    pub port_bytes: Option<u64>,
}

impl BufferAdmission for StaticPartition {
    #[inline]
    fn admit(&mut self, c: &AdmitCtx) -> bool {
        let share = self.port_bytes.unwrap_or(c.buffer / c.num_ports.max(1) as u64);
        c.port_bytes + c.size <= share && c.occupancy + c.size <= c.buffer
    }
}

/// Every policy, for dispatch by `match`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnyAdmission {
    /// See [`CompleteSharing`].
    CompleteSharing(CompleteSharing),
    /// See [`DynamicThresholds`].
    DynamicThresholds(DynamicThresholds),
    /// See [`StaticPartition`].
    Static(StaticPartition),
}

impl AnyAdmission {
    /// The policy a spec asks for.
    pub fn from_spec(spec: &AdmissionSpec) -> AnyAdmission {
        match spec {
            AdmissionSpec::CompleteSharing => AnyAdmission::CompleteSharing(CompleteSharing),
            AdmissionSpec::DynamicThresholds => AnyAdmission::DynamicThresholds(DynamicThresholds),
            AdmissionSpec::Static { port_bytes } => AnyAdmission::Static(StaticPartition { port_bytes: *port_bytes }),
        }
    }
}

impl BufferAdmission for AnyAdmission {
    #[inline]
    fn admit(&mut self, c: &AdmitCtx) -> bool {
        match self {
            AnyAdmission::CompleteSharing(p) => p.admit(c),
            AnyAdmission::DynamicThresholds(p) => p.admit(c),
            AnyAdmission::Static(p) => p.admit(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(occupancy: u64, queue_bytes: u64, port_bytes: u64) -> AdmitCtx {
        AdmitCtx {
            buffer: 10_000,
            occupancy,
            queue_bytes,
            port_bytes,
            num_ports: 4,
            queue: 0,
            dt_alpha: 1.0,
            size: 1000,
        }
    }

    #[test]
    fn complete_sharing_fills_the_buffer_exactly() {
        let mut p = CompleteSharing;
        assert!(p.admit(&ctx(9_000, 9_000, 9_000)));
        assert!(!p.admit(&ctx(9_001, 9_001, 9_001)));
    }

    #[test]
    fn dynamic_thresholds_one_queue_gets_half_with_alpha_one() {
        // A single queue alone converges to alpha/(1+alpha) of B = 5000 B.
        let mut p = DynamicThresholds;
        let mut q = 0u64;
        while p.admit(&ctx(q, q, q)) {
            q += 1000;
        }
        assert_eq!(q, 5000);
        // alpha = 2: up to 2/3 of B; with 1000 B packets 7000 is admitted (7000 <= 2*(10000-6000))
        // and 8000 is not (8000 > 2*(10000-7000)).
        let mut q = 0u64;
        while p.admit(&AdmitCtx { dt_alpha: 2.0, ..ctx(q, q, q) }) {
            q += 1000;
        }
        assert_eq!(q, 7000);
    }

    #[test]
    fn dynamic_thresholds_shrink_as_the_buffer_fills() {
        let mut p = DynamicThresholds;
        // Another queue holds 6000 B: this queue may hold up to 1 * (10000 - 6000 - own).
        assert!(p.admit(&ctx(6_000, 0, 0)));
        assert!(p.admit(&ctx(7_000, 1_000, 1_000)));
        assert!(!p.admit(&ctx(8_000, 2_000, 2_000))); // 3000 > 2000
    }

    #[test]
    fn static_partition_gives_each_port_a_quarter() {
        let mut p = StaticPartition::default();
        assert!(p.admit(&ctx(1_500, 1_500, 1_500))); // 2500 <= 2500
        assert!(!p.admit(&ctx(1_600, 1_600, 1_600)));
        // Other ports' bytes do not matter below the buffer size.
        assert!(p.admit(&ctx(8_000, 0, 0)));
    }
}
