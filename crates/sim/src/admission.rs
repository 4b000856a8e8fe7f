//! Shared-buffer admission: which arriving packets a switch's buffer accepts, and, for push-out
//! policies, which queued packets make room for them.
//!
//! Mechanism vs policy: the owner of the buffer (a switch in `world`, or the discrete-time
//! model of Credence's Appendix A) keeps the occupancy counters and exposes them through
//! [`BufferView`]; before every enqueue it asks the policy through [`BufferAdmission::admit`]
//! and then carries out the [`Verdict`]. Policies keep their own state, updated by the `on_*`
//! callbacks. Because policies see only a [`BufferView`], the same decision code runs in the
//! packet-level simulator (lengths in bytes) and in the discrete-time model (lengths in
//! packets). The hot path dispatches through [`AnyAdmission`] (a `match`), not a vtable.
//!
//! Queues are numbered densely per buffer: queue `q` is class `q % queues_per_port` of port
//! `q / queues_per_port`.

mod complete_sharing;
mod dynamic_thresholds;
mod lqd;
mod static_partition;

pub use complete_sharing::CompleteSharing;
pub use dynamic_thresholds::DynamicThresholds;
pub use lqd::Lqd;
pub use static_partition::StaticPartition;

use units::Time;

use crate::spec::AdmissionSpec;

/// Read-only state of one shared buffer.
pub trait BufferView {
    /// Buffer size B.
    fn capacity(&self) -> u64;
    /// Total occupancy (all queues).
    fn occupancy(&self) -> u64;
    /// Number of queues N (ports x queues per port).
    fn num_queues(&self) -> usize;
    /// Queues per port.
    fn queues_per_port(&self) -> usize;
    /// Length of queue `q`.
    fn queue_len(&self, q: usize) -> u64;
    /// Number of ports.
    fn num_ports(&self) -> usize {
        self.num_queues() / self.queues_per_port()
    }
    /// Total length of the queues of port `p`.
    fn port_len(&self, p: usize) -> u64 {
        let k = self.queues_per_port();
        (p * k..(p + 1) * k).map(|q| self.queue_len(q)).sum()
    }
    /// The longest queue and its length; ties go to the lowest index. `(0, 0)` if all empty.
    fn longest_queue(&self) -> (usize, u64) {
        let mut best = (0, 0);
        for q in 0..self.num_queues() {
            let l = self.queue_len(q);
            if l > best.1 {
                best = (q, l);
            }
        }
        best
    }
}

/// A packet asking to enter the buffer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arrival {
    /// Destination queue.
    pub queue: usize,
    /// Size in the buffer's unit.
    pub size: u64,
    /// Arrival time.
    pub now: Time,
    /// Whether the packet belongs to its flow's first round trip (its initial window); ABM
    /// gives such packets a larger share.
    pub first_rtt: bool,
}

/// What the buffer does with an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Enqueue it. POSTCONDITION (checked by the owner): it fits, `occupancy + size <= B`.
    Accept,
    /// Drop it.
    Drop,
    /// Enqueue it, then while the buffer is over capacity drop from the tail of the longest
    /// queue (which may be the arriving packet itself): push-out, as LQD does.
    PushOut,
}

/// The contract of a buffer admission policy.
pub trait BufferAdmission {
    /// Decide on an arrival.
    fn admit<V: BufferView>(&mut self, view: &V, a: &Arrival) -> Verdict;
    /// A packet of `size` entered queue `q` (after `admit`, before any push-out).
    #[inline]
    fn on_enqueue(&mut self, _q: usize, _size: u64, _now: Time) {}
    /// A packet of `size` left queue `q` for the wire.
    #[inline]
    fn on_dequeue(&mut self, _q: usize, _size: u64, _now: Time) {}
    /// A packet of `size` was pushed out of the tail of queue `q`.
    #[inline]
    fn on_push_out(&mut self, _q: usize, _size: u64, _now: Time) {}
}

/// Every policy, for dispatch by `match`.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyAdmission {
    /// See [`CompleteSharing`].
    CompleteSharing(CompleteSharing),
    /// See [`DynamicThresholds`].
    DynamicThresholds(DynamicThresholds),
    /// See [`StaticPartition`].
    Static(StaticPartition),
    /// See [`Lqd`].
    Lqd(Lqd),
}

impl AnyAdmission {
    /// The policy a spec asks for; `dt_alpha[c]` is the DT alpha of class `c`.
    pub fn from_spec(spec: &AdmissionSpec, dt_alpha: &[f64]) -> AnyAdmission {
        match spec {
            AdmissionSpec::CompleteSharing => AnyAdmission::CompleteSharing(CompleteSharing),
            AdmissionSpec::DynamicThresholds => {
                AnyAdmission::DynamicThresholds(DynamicThresholds::new(dt_alpha.to_vec()))
            }
            AdmissionSpec::Static { port_bytes } => {
                AnyAdmission::Static(StaticPartition { port_bytes: *port_bytes })
            }
            AdmissionSpec::Lqd => AnyAdmission::Lqd(Lqd),
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            AnyAdmission::CompleteSharing($p) => $e,
            AnyAdmission::DynamicThresholds($p) => $e,
            AnyAdmission::Static($p) => $e,
            AnyAdmission::Lqd($p) => $e,
        }
    };
}

impl BufferAdmission for AnyAdmission {
    #[inline]
    fn admit<V: BufferView>(&mut self, view: &V, a: &Arrival) -> Verdict {
        dispatch!(self, p => p.admit(view, a))
    }
    #[inline]
    fn on_enqueue(&mut self, q: usize, size: u64, now: Time) {
        dispatch!(self, p => p.on_enqueue(q, size, now))
    }
    #[inline]
    fn on_dequeue(&mut self, q: usize, size: u64, now: Time) {
        dispatch!(self, p => p.on_dequeue(q, size, now))
    }
    #[inline]
    fn on_push_out(&mut self, q: usize, size: u64, now: Time) {
        dispatch!(self, p => p.on_push_out(q, size, now))
    }
}

/// A plain buffer state for tests and the discrete-time model: queue lengths in a `Vec`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimpleBuffer {
    /// Capacity B.
    pub capacity: u64,
    /// Queues per port.
    pub queues_per_port: usize,
    /// Length of every queue.
    pub len: Vec<u64>,
}

impl SimpleBuffer {
    /// `n` empty single-queue ports sharing `capacity`.
    pub fn new(capacity: u64, n: usize) -> SimpleBuffer {
        SimpleBuffer { capacity, queues_per_port: 1, len: vec![0; n] }
    }
}

impl BufferView for SimpleBuffer {
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn occupancy(&self) -> u64 {
        self.len.iter().sum()
    }
    fn num_queues(&self) -> usize {
        self.len.len()
    }
    fn queues_per_port(&self) -> usize {
        self.queues_per_port
    }
    fn queue_len(&self, q: usize) -> u64 {
        self.len[q]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Offer `size` to queue `q` of `b` under `p` and carry out the verdict like a switch does.
    /// Returns the verdict and the queues pushed out from.
    pub(crate) fn offer<P: BufferAdmission>(
        p: &mut P,
        b: &mut SimpleBuffer,
        q: usize,
        size: u64,
    ) -> (Verdict, Vec<usize>) {
        let a = Arrival { queue: q, size, now: Time::ZERO, first_rtt: false };
        let v = p.admit(b, &a);
        let mut pushed = Vec::new();
        match v {
            Verdict::Drop => {}
            Verdict::Accept => {
                assert!(b.occupancy() + size <= b.capacity, "accepted beyond the buffer");
                b.len[q] += size;
                p.on_enqueue(q, size, Time::ZERO);
            }
            Verdict::PushOut => {
                b.len[q] += size;
                p.on_enqueue(q, size, Time::ZERO);
                while b.occupancy() > b.capacity {
                    let (victim, _) = b.longest_queue();
                    b.len[victim] -= size.min(b.len[victim]);
                    p.on_push_out(victim, size, Time::ZERO);
                    pushed.push(victim);
                }
            }
        }
        (v, pushed)
    }
}
