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

mod abm;
mod complete_sharing;
mod credence;
mod dynamic_thresholds;
mod follow_lqd;
mod harmonic;
mod lqd;
mod static_partition;
pub mod virtual_lqd;

pub use abm::Abm;
pub use complete_sharing::CompleteSharing;
pub use credence::{Credence, CredenceOptions, CredenceStats};
pub use dynamic_thresholds::{DtRule, DynamicThresholds};
pub use follow_lqd::FollowLqd;
pub use harmonic::Harmonic;
pub use lqd::Lqd;
pub use static_partition::StaticPartition;
pub use virtual_lqd::VirtualLqd;

use std::sync::Arc;

use units::{Bps, Dur, Time};

use crate::credence::forest::Forest;
use crate::credence::oracle::{AnyOracle, Flip};
use crate::rng::{Stream, Streams};
use crate::spec::{AdmissionSpec, OracleSpec, DEFAULT_BASE_RTT_US};

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
    #[inline]
    fn port_len(&self, p: usize) -> u64 {
        let k = self.queues_per_port();
        if k == 1 {
            return self.queue_len(p);
        }
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
    /// Whether the policy keeps state that the `on_*` callbacks update. A buffer whose policy
    /// says `false` may skip `on_enqueue` and `on_dequeue` (the packet simulator does: two
    /// dispatches per packet-hop); the default is the safe `true`.
    const WATCHES_QUEUES: bool = true;
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
// PERF: Credence's variant is a few hundred bytes; it stays inline (not boxed) so that the
// per-packet `admit` does not chase a pointer. There is one `AnyAdmission` per switch. An
// explicit tag byte (`repr(u8)`): the tag the compiler chose was a niche of a variant's field,
// which each dispatch decoded (the 256-host run: 7.705 -> 7.655 G instructions with the byte;
// the same for `proto::Segment` and `proto::Endpoint` cost more than it saved).
#[allow(clippy::large_enum_variant)]
#[repr(u8)]
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
    /// See [`Harmonic`].
    Harmonic(Harmonic),
    /// See [`Abm`].
    Abm(Abm),
    /// See [`FollowLqd`].
    FollowLqd(FollowLqd),
    /// See [`Credence`].
    Credence(Credence),
}

/// What a policy may need to know about the buffer it serves beyond its [`BufferView`]:
/// everything [`AnyAdmission::from_spec`] takes besides the spec.
#[derive(Clone, Copy, Debug)]
pub struct AdmissionCtx<'a> {
    /// DT alpha of each class (the last applies to higher classes); ABM's `alpha_p` too.
    pub dt_alpha: &'a [f64],
    /// Egress rate of each port of the buffer, by port index (the buffer's queue `q` belongs
    /// to port `q / queues_per_port`). Empty if unknown: ABM then takes every queue's dequeue
    /// factor as 1 and the LQD followers' virtual queues drain only by real departures (see
    /// [`VirtualLqd`]).
    pub port_rates: &'a [Bps],
    /// The network's base round-trip time, if the owner knows it: ABM's refresh period and
    /// Credence's averaging time unless the spec sets `base_rtt_us`.
    pub base_rtt: Option<Dur>,
    /// The run's master seed (random oracles derive their streams from it).
    pub seed: u64,
    /// Which buffer of the run this is (a switch index), so that each draws its own stream.
    pub buffer_index: u64,
}

impl<'a> AdmissionCtx<'a> {
    /// A context that knows only the DT alphas: no port rates, no base RTT, seed 0, buffer 0.
    pub fn new(dt_alpha: &'a [f64]) -> AdmissionCtx<'a> {
        AdmissionCtx { dt_alpha, port_rates: &[], base_rtt: None, seed: 0, buffer_index: 0 }
    }

    /// Port rates in buffer units (bytes) per second.
    fn port_units_per_sec(&self) -> Vec<u64> {
        self.port_rates.iter().map(|r| r.get() / 8).collect()
    }

    /// The spec's base RTT, else the owner's, else [`DEFAULT_BASE_RTT_US`].
    fn base_rtt(&self, spec_us: Option<f64>) -> Dur {
        spec_us
            .map(|us| Dur::from_secs_f64(us * 1e-6))
            .or(self.base_rtt)
            .unwrap_or_else(|| Dur::from_secs_f64(DEFAULT_BASE_RTT_US * 1e-6))
    }
}

impl<'a> From<&'a [f64]> for AdmissionCtx<'a> {
    /// [`AdmissionCtx::new`].
    fn from(dt_alpha: &'a [f64]) -> Self {
        AdmissionCtx::new(dt_alpha)
    }
}

impl<'a> From<&'a Vec<f64>> for AdmissionCtx<'a> {
    /// [`AdmissionCtx::new`].
    fn from(dt_alpha: &'a Vec<f64>) -> Self {
        AdmissionCtx::new(dt_alpha)
    }
}

impl<'a> From<&AdmissionCtx<'a>> for AdmissionCtx<'a> {
    fn from(ctx: &AdmissionCtx<'a>) -> Self {
        *ctx
    }
}

impl AnyAdmission {
    /// The policy a spec asks for, for the buffer `ctx` describes. `ctx` is an
    /// [`AdmissionCtx`] (or `&AdmissionCtx`), or just the per-class DT alphas (`&[f64]` or
    /// `&Vec<f64>`, meaning [`AdmissionCtx::new`]).
    ///
    /// PRECONDITION: `spec` passed [`Spec::validate`](crate::spec::Spec::validate), which
    /// range-checks the knobs and loads forest files. A forest oracle that validation did not
    /// load is read here; a file that cannot be read or parsed is an error naming it, never a
    /// panic.
    pub fn from_spec<'a>(spec: &AdmissionSpec, ctx: impl Into<AdmissionCtx<'a>>) -> Result<AnyAdmission, String> {
        let ctx = ctx.into();
        Ok(match spec {
            AdmissionSpec::CompleteSharing => AnyAdmission::CompleteSharing(CompleteSharing),
            AdmissionSpec::DynamicThresholds => {
                AnyAdmission::DynamicThresholds(DynamicThresholds::new(ctx.dt_alpha.to_vec()))
            }
            AdmissionSpec::Static { port_bytes } => {
                AnyAdmission::Static(StaticPartition::new(*port_bytes))
            }
            AdmissionSpec::Lqd => AnyAdmission::Lqd(Lqd),
            AdmissionSpec::Harmonic => AnyAdmission::Harmonic(Harmonic::new()),
            AdmissionSpec::Abm { alpha_first_rtt, base_rtt_us, congested_bytes, .. } => AnyAdmission::Abm(Abm::new(
                ctx.dt_alpha.to_vec(),
                *alpha_first_rtt,
                ctx.base_rtt(*base_rtt_us),
                *congested_bytes,
                ctx.port_units_per_sec(),
            )),
            AdmissionSpec::FollowLqd => AnyAdmission::FollowLqd(FollowLqd::new(ctx.port_units_per_sec())),
            AdmissionSpec::Credence { oracle, base_rtt_us } => AnyAdmission::Credence(Credence::new(
                oracle_from_spec(oracle, &ctx, 0)?,
                ctx.port_units_per_sec(),
                ctx.base_rtt(*base_rtt_us),
            )),
        })
    }
}

impl AnyAdmission {
    /// Credence's decision counters, if this is Credence (for per-switch statistics).
    pub fn credence_stats(&self) -> Option<CredenceStats> {
        match self {
            AnyAdmission::Credence(c) => Some(c.stats()),
            _ => None,
        }
    }
}

/// The oracle a spec asks for; `depth` counts enclosing flips (each gets its own stream).
fn oracle_from_spec(spec: &OracleSpec, ctx: &AdmissionCtx<'_>, depth: u64) -> Result<AnyOracle, String> {
    Ok(match spec {
        OracleSpec::Forest { path, model } => {
            let forest = match &model.0 {
                Some(f) => f.clone(),
                None => {
                    let forest = if path == "default" {
                        Forest::from_json_str(crate::spec::BUILTIN_FOREST)
                    } else {
                        Forest::from_file(std::path::Path::new(path))
                    };
                    Arc::new(forest.map_err(|e| format!("oracle forest {path:?}: {}", e.0))?)
                }
            };
            AnyOracle::Forest(forest, Default::default())
        }
        OracleSpec::AlwaysAccept => AnyOracle::AlwaysAccept,
        OracleSpec::AlwaysDrop => AnyOracle::AlwaysDrop,
        OracleSpec::Flip { inner, p, seed } => {
            let stream = Streams::new(ctx.seed).seed_of(Stream::OracleFlip { seed: *seed, switch: ctx.buffer_index, depth });
            AnyOracle::Flip(Flip::new(oracle_from_spec(inner, ctx, depth + 1)?, *p, stream))
        }
    })
}

macro_rules! dispatch {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            AnyAdmission::CompleteSharing($p) => $e,
            AnyAdmission::DynamicThresholds($p) => $e,
            AnyAdmission::Static($p) => $e,
            AnyAdmission::Lqd($p) => $e,
            AnyAdmission::Harmonic($p) => $e,
            AnyAdmission::Abm($p) => $e,
            AnyAdmission::FollowLqd($p) => $e,
            AnyAdmission::Credence($p) => $e,
        }
    };
}

impl AnyAdmission {
    /// Whether this policy's `on_enqueue` and `on_dequeue` do anything
    /// ([`BufferAdmission::WATCHES_QUEUES`]).
    pub fn watches_queues(&self) -> bool {
        fn watches<P: BufferAdmission>(_: &P) -> bool {
            P::WATCHES_QUEUES
        }
        dispatch!(self, p => watches(p))
    }
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

    /// A policy that says it does not watch its queues gives the same verdicts whether or not
    /// it is told of enqueues and dequeues (the packet simulator does not tell it), and the
    /// policies that keep state say they watch.
    #[test]
    fn policies_that_are_not_told_of_enqueues_and_dequeues_decide_the_same() {
        use crate::spec::{AdmissionSpec, OracleSpec};
        use rand::{Rng, SeedableRng};
        let specs = [
            (AdmissionSpec::CompleteSharing, false),
            (AdmissionSpec::DynamicThresholds, false),
            (AdmissionSpec::Static { port_bytes: None }, false),
            (AdmissionSpec::Static { port_bytes: Some(2_500) }, false),
            (AdmissionSpec::Lqd, false),
            (AdmissionSpec::Harmonic, false),
            (AdmissionSpec::Abm { alpha_first_rtt: 64.0, base_rtt_us: None, congested_bytes: 1_000, first_rtt_bytes: None }, true),
            (AdmissionSpec::FollowLqd, true),
            (AdmissionSpec::Credence { oracle: OracleSpec::AlwaysAccept, base_rtt_us: None }, true),
        ];
        let rates = [Bps::from_gbps(10); 4];
        let ctx = AdmissionCtx { dt_alpha: &[1.0, 0.5], port_rates: &rates, base_rtt: Some(Dur::from_us(10)), seed: 1, buffer_index: 0 };
        for (spec, watches) in specs {
            let mut told = AnyAdmission::from_spec(&spec, ctx).expect("a valid spec");
            let mut not_told = AnyAdmission::from_spec(&spec, ctx).expect("a valid spec");
            assert_eq!(told.watches_queues(), watches, "{spec:?}");
            if watches {
                continue;
            }
            let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
            // Four ports of two classes sharing 12 kB: full often, so every verdict occurs.
            let mut b = SimpleBuffer { capacity: 12_000, queues_per_port: 2, len: vec![0; 8] };
            let mut verdicts = [0u32; 3];
            for step in 0..20_000u64 {
                let now = Time::from_ns(step * 100);
                let (q, size) = (rng.gen_range(0..8), rng.gen_range(64..1_500u64));
                if rng.gen_bool(0.6) {
                    let a = Arrival { queue: q, size, now, first_rtt: rng.gen_bool(0.2) };
                    let v = told.admit(&b, &a);
                    assert_eq!(not_told.admit(&b, &a), v, "{spec:?} at step {step}");
                    verdicts[v as usize] += 1;
                    if v != Verdict::Drop {
                        b.len[q] += size;
                        told.on_enqueue(q, size, now);
                    }
                    while b.occupancy() > b.capacity {
                        let (victim, len) = b.longest_queue();
                        let cut = size.min(len);
                        b.len[victim] -= cut;
                        told.on_push_out(victim, cut, now);
                        not_told.on_push_out(victim, cut, now);
                    }
                } else if b.len[q] > 0 {
                    let d = size.min(b.len[q]);
                    b.len[q] -= d;
                    told.on_dequeue(q, d, now);
                }
            }
            assert!(verdicts[0] > 1_000 && verdicts[1] + verdicts[2] > 1_000, "{spec:?}: {verdicts:?}");
        }
    }
}
