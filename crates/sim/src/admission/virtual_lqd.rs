//! Virtual Longest Queue Drop: the queue lengths a push-out LQD buffer would have if it saw
//! the same arrivals, kept as thresholds by the drop-tail policies that follow LQD (FollowLQD,
//! Credence Appendix B Algorithm 2; Credence §3.2 Algorithm 1, `updateThreshold`).
//!
//! This is mechanism shared by [`FollowLqd`](super::FollowLqd) and
//! [`Credence`](super::Credence), not a policy. It keeps one threshold `T_q` per queue (the
//! virtual LQD queue length) and their sum `Γ`, and shadows the *real* queue lengths from the
//! owner's callbacks, because the real queues of a drop-tail buffer differ from LQD's: a
//! drop-tail buffer cannot push out, so a real queue can sit above its threshold after LQD
//! would have pushed packets out of it, and below it after the policy dropped packets that LQD
//! would have taken.
//!
//! Updates (Algorithm 1, `updateThreshold`; `s` is the arriving packet's size in the buffer's
//! unit, bytes in the packet simulator, 1 in the discrete-time model of Appendix A):
//! - arrival to `i`: `T_i += s`, `Γ += s`; then while `Γ > B`, the largest threshold `T_j`
//!   (ties: lowest index; `j` may be `i`) loses `min(s, T_j)`. With unit packets this is
//!   exactly "if `Γ = B`, decrement the highest threshold, then increment `T_i`" of the paper,
//!   evaluated in the order the owner carries out LQD's push-out (enqueue, then drop from the
//!   longest queue, which may be the arriving packet's own). With bytes it removes one packet
//!   of the arriving size from the longest virtual queue, as §3.2 words it ("decrements the
//!   longest queue threshold by packet size").
//! - departure: LQD's queue `i` transmits whenever it is non-empty, whether or not the real
//!   queue `i` has a packet. Two cases:
//!   - the real queue is busy: each real dequeue of `s` from `i` lowers `T_i` by `min(s, T_i)`
//!     (Algorithm 1 line 34 with `s = 1`);
//!   - the real queue is empty: `T_i` drains at the port's rate (given per port, in buffer
//!     units per second) from the end of the last real transmission, lazily, rounding *up* so
//!     that a virtual packet leaves whole at the start of its transmission, as real ones do in
//!     `on_dequeue`. In the discrete-time model (one unit per slot) this reproduces Algorithm
//!     1's per-slot departure exactly; in the packet simulator it is exact for one queue per
//!     port and an approximation with several (an empty class queue drains at the full port
//!     rate even while other classes hold the port).
//!
//!   Without a rate for a port (rate 0) the empty-queue drain is off for its queues.
//!
//! INVARIANT: `Γ = Σ T_q ≤ B` after every update (checked with `debug_assert!`).
//! INVARIANT: `real[q]` equals the owner's length of queue `q` (the policies check it at
//! `admit`).
//! Stored thresholds of empty queues are materialized lazily: a stored `T_q` (and so `Γ`) is
//! an upper bound of the current value. An arrival materializes its own queue; all queues are
//! materialized only when the stored `Γ` says the virtual buffer might overflow, which is
//! exactly when LQD's push-out needs the largest threshold anyway (§3.4). In the common
//! uncongested case an arrival costs O(1).

use units::{Time, PS_PER_S};

/// Per-queue LQD thresholds that evolve as LQD's queue lengths would on the same arrivals.
///
/// Call order (the owner's): [`on_arrival`](Self::on_arrival) once per arriving packet, from
/// the policy's `admit`, before deciding; then [`on_enqueue`](Self::on_enqueue) if the real
/// buffer took it; [`on_dequeue`](Self::on_dequeue) for every real departure. The first
/// `on_arrival` sizes the state from the buffer (`init`).
#[derive(Clone, Debug, PartialEq)]
pub struct VirtualLqd {
    /// Drain rate of each port, buffer units per second (0 = unknown).
    port_rates: Vec<u64>,
    capacity: u64,
    /// Per-queue state, one cache line per access (see [`VQueue`]).
    q: Vec<VQueue>,
    /// Stored `Γ = Σ t`.
    gamma: u64,
}

/// The state of one queue, kept together: the per-packet paths touch all of it.
// PERF: one array of structs rather than four parallel vectors halved Credence's admission
// cost on the 256-host leaf-spine (cache misses on the per-queue state dominated it).
#[derive(Clone, Copy, Debug, PartialEq)]
struct VQueue {
    /// Stored threshold `T_q` (an upper bound of the current value while draining).
    t: u64,
    /// Shadow of the real queue length.
    real: u64,
    /// For an empty real queue: the time from which its virtual queue drains.
    since: Time,
    /// Picoseconds per buffer unit at the queue's port rate (0: no empty-queue drain).
    // PERF: an f64 multiply/divide instead of u128 integer division (a library call) on
    // every arrival to, and departure from, an empty queue; exact for the discrete model's
    // 10^6 ps per unit and for every whole-Gb/s byte rate (10 Gb/s: 800 ps per byte).
    ps_per_unit: f64,
    /// `ps_per_unit` if it is a whole number, else 0: a departure's transmission time is then
    /// an integer product (see `on_dequeue`).
    ps_per_unit_int: u64,
}

/// Products up to `2^53` are exact in `f64`.
const EXACT_F64_INT: u64 = 1 << 53;

impl VirtualLqd {
    /// A virtual LQD whose port `p` transmits `port_rates[p]` buffer units per second (bytes
    /// per second in the packet simulator). Ports without an entry, or with 0, have no
    /// empty-queue drain (see the module docs).
    pub fn new(port_rates: Vec<u64>) -> VirtualLqd {
        VirtualLqd { port_rates, capacity: 0, q: Vec::new(), gamma: 0 }
    }

    /// Whether the state has been sized from a buffer yet.
    #[inline]
    pub fn is_ready(&self) -> bool {
        !self.q.is_empty()
    }

    /// Size the state for a buffer of `capacity` with `num_queues` queues, `queues_per_port`
    /// per port. Allocates; called once, from the first arrival.
    pub fn init(&mut self, capacity: u64, num_queues: usize, queues_per_port: usize) {
        let qpp = queues_per_port.max(1);
        self.capacity = capacity;
        self.gamma = 0;
        self.q = (0..num_queues)
            .map(|q| {
                let ps_per_unit = match self.port_rates.get(q / qpp).copied().unwrap_or(0) {
                    0 => 0.0,
                    r => PS_PER_S as f64 / r as f64,
                };
                let whole = ps_per_unit.fract() == 0.0 && ps_per_unit < EXACT_F64_INT as f64;
                let ps_per_unit_int = if whole { ps_per_unit as u64 } else { 0 };
                VQueue { t: 0, real: 0, since: Time::ZERO, ps_per_unit, ps_per_unit_int }
            })
            .collect();
    }

    /// The threshold `T_q` as last materialized (exact for the queue of the latest arrival).
    #[inline]
    pub fn threshold(&self, q: usize) -> u64 {
        self.q[q].t
    }

    /// Sum of the stored thresholds, `Γ` (an upper bound of the current value).
    #[inline]
    pub fn gamma(&self) -> u64 {
        self.gamma
    }

    /// The shadowed real length of queue `q`.
    #[inline]
    pub fn real_len(&self, q: usize) -> u64 {
        self.q[q].real
    }

    /// Algorithm 1 `updateThreshold(i, arrival)`: a packet of `size` arrives for queue `q`.
    /// Afterwards [`threshold`](Self::threshold)`(q)` is LQD's length of queue `q` including
    /// this packet, unless LQD dropped it.
    // PERF: the common case (the virtual buffer does not overflow) is inlined into the
    // policy's `admit` and the push-out is a cold call of its own: on the Credence benchmark
    // (`make bench-credence`, 7.0 M switch arrivals) the arrivals' share fell from 297 M
    // instructions (43 each, a third of them the call's register saves) to about 164 M.
    #[inline]
    pub fn on_arrival(&mut self, q: usize, size: u64, now: Time) {
        let v = &mut self.q[q];
        self.gamma -= v.drain_to(now);
        v.t += size;
        self.gamma += size;
        if self.gamma > self.capacity {
            self.push_out(size, now);
        }
        debug_assert!(self.gamma <= self.capacity);
        debug_assert_eq!(self.gamma, self.q.iter().map(|v| v.t).sum::<u64>());
    }

    /// LQD's push-out on the virtual buffer after an arrival of `size` took `Γ` over `B`.
    #[cold]
    #[inline(never)]
    fn push_out(&mut self, size: u64, now: Time) {
        // Only now do the other queues' pending drains matter: Γ is an upper bound, and
        // the exact value decides whether LQD pushes out (§3.4: the largest-threshold
        // search is only needed when the buffer is full).
        for j in 0..self.q.len() {
            self.materialize(j, now);
        }
        while self.gamma > self.capacity {
            let j = self.largest();
            let d = size.min(self.q[j].t);
            // INVARIANT: Γ > B > 0 implies some threshold is positive.
            debug_assert!(d > 0, "virtual LQD over capacity with all thresholds zero");
            self.q[j].t -= d;
            self.gamma -= d;
        }
    }

    /// The real buffer took a packet of `size` into queue `q`.
    #[inline]
    pub fn on_enqueue(&mut self, q: usize, size: u64, now: Time) {
        let v = &mut self.q[q];
        if v.real == 0 {
            self.gamma -= v.drain_to(now);
        }
        v.real += size;
    }

    /// A packet of `size` left the real queue `q` (its transmission starts at `now`):
    /// Algorithm 1 `departure(i)` for a busy queue.
    #[inline]
    pub fn on_dequeue(&mut self, q: usize, size: u64, now: Time) {
        let v = &mut self.q[q];
        debug_assert!(v.real >= size, "dequeue from an empty shadow queue");
        v.real -= size.min(v.real);
        let d = size.min(v.t);
        v.t -= d;
        self.gamma -= d;
        if v.real == 0 {
            // The port is busy with this packet until its transmission ends; LQD's queue q
            // drains at the port rate from then on.
            // PERF: an integer product when it is exact, which it is for every whole-Gb/s
            // rate in bytes (10 Gb/s: 800 ps per byte) and for the discrete model: 100 M ->
            // 30 M instructions for the Credence benchmark's 5.0 M departures that empty a
            // queue.
            // CORRECTNESS: `size * k` with `k == ps_per_unit` and a product `<= 2^53`: the f64
            // product is that integer, and rounding it up changes nothing.
            let k = v.ps_per_unit_int;
            let tx = match size.checked_mul(k) {
                Some(p) if k != 0 && p <= EXACT_F64_INT => p,
                _ => ceil_u64(size as f64 * v.ps_per_unit),
            };
            v.since = now + units::Dur::from_ps(tx);
        }
    }

    /// A packet of `size` was pushed out of the real queue `q` (only push-out owners call it;
    /// the drop-tail followers of LQD never push out).
    #[inline]
    pub fn on_push_out(&mut self, q: usize, size: u64, now: Time) {
        self.q[q].real -= size.min(self.q[q].real);
        if self.q[q].real == 0 {
            self.q[q].since = now;
        }
    }

    /// The largest stored threshold; ties go to the lowest index, as the owner's push-out
    /// picks its victim (`BufferView::longest_queue`).
    #[inline]
    fn largest(&self) -> usize {
        let mut best = (0, 0);
        for (q, v) in self.q.iter().enumerate() {
            if v.t > best.1 {
                best = (q, v.t);
            }
        }
        best.0
    }

    /// Apply queue `q`'s pending empty-queue drain up to `now`.
    #[inline]
    fn materialize(&mut self, q: usize, now: Time) {
        self.gamma -= self.q[q].drain_to(now);
    }
}

impl VQueue {
    /// Apply this queue's pending empty-queue drain up to `now`; returns how much `t` fell
    /// (the owner lowers `Γ` by as much).
    #[inline]
    fn drain_to(&mut self, now: Time) -> u64 {
        if self.real != 0 || now <= self.since {
            return 0;
        }
        let mut d = 0;
        if self.t > 0 && self.ps_per_unit > 0.0 {
            let elapsed = (now.ps() - self.since.ps()) as f64;
            // Rounded up: a unit whose transmission has started has left (module docs).
            d = ceil_u64(elapsed / self.ps_per_unit).min(self.t);
            self.t -= d;
        }
        // Idle time with a zero threshold drains nothing later: restart the clock.
        self.since = now;
        d
    }
}

/// `x.ceil() as u64`, for every `x` (negative and NaN give 0, huge values saturate).
// PERF: `f64::ceil` is a libm call without SSE4.1 (the default x86-64 target); truncating
// and comparing does the same inline. On the Credence benchmark (5.0 M departures that empty
// a queue) it saved 55 M instructions.
#[inline]
fn ceil_u64(x: f64) -> u64 {
    // 2^63: below it, `as i64` truncates exactly and `t + 1` cannot overflow.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if (0.0..TWO_63).contains(&x) {
        let t = x as i64;
        (t + i64::from((t as f64) < x)) as u64
    } else {
        x.ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One unit per microsecond, as the discrete-time model's ports.
    const RATE: u64 = 1_000_000;

    fn us(n: u64) -> Time {
        Time::from_us(n)
    }

    /// The stored thresholds.
    fn ts(v: &VirtualLqd) -> Vec<u64> {
        v.q.iter().map(|q| q.t).collect()
    }

    #[test]
    fn thresholds_follow_lqd_push_out_with_unit_packets() {
        // B = 4, 3 queues, no departures: the LQD of `admission::lqd` tests, on thresholds.
        let mut v = VirtualLqd::new(vec![]);
        v.init(4, 3, 1);
        for _ in 0..4 {
            v.on_arrival(0, 1, Time::ZERO);
        }
        assert_eq!(ts(&v), vec![4, 0, 0]);
        v.on_arrival(1, 1, Time::ZERO); // pushes one out of queue 0
        assert_eq!(ts(&v), vec![3, 1, 0]);
        v.on_arrival(0, 1, Time::ZERO); // queue 0 is longest: its own arrival goes
        assert_eq!(ts(&v), vec![3, 1, 0]);
        v.on_arrival(1, 1, Time::ZERO);
        assert_eq!(ts(&v), vec![2, 2, 0]);
        v.on_arrival(2, 1, Time::ZERO); // tie 0/1: the lowest index loses
        assert_eq!(ts(&v), vec![1, 2, 1]);
        assert_eq!(v.gamma(), 4);
    }

    #[test]
    fn bytes_push_out_one_arriving_size_from_the_longest() {
        // B = 4000 bytes; 1500-byte packets. Γ = 3000 + 1500 > 4000: 1500 leave queue 0.
        let mut v = VirtualLqd::new(vec![]);
        v.init(4000, 2, 1);
        v.on_arrival(0, 1500, Time::ZERO);
        v.on_arrival(0, 1500, Time::ZERO);
        v.on_arrival(1, 1500, Time::ZERO);
        assert_eq!(ts(&v), vec![1500, 1500]);
        assert_eq!(v.gamma(), 3000);
    }

    #[test]
    fn busy_queue_drains_by_real_departures() {
        let mut v = VirtualLqd::new(vec![RATE]);
        v.init(10, 1, 1);
        for _ in 0..3 {
            v.on_arrival(0, 1, us(0));
            v.on_enqueue(0, 1, us(0));
        }
        v.on_dequeue(0, 1, us(0));
        assert_eq!((v.threshold(0), v.real_len(0)), (2, 2));
    }

    #[test]
    fn empty_queue_drains_at_the_port_rate_from_the_end_of_the_last_transmission() {
        // Queue 0 has one real packet and a threshold of 3 (two arrivals were dropped by the
        // real buffer). Its last packet departs at 0.5 us and is on the wire until 1.5 us.
        let mut v = VirtualLqd::new(vec![RATE, RATE]);
        v.init(10, 2, 1);
        v.on_arrival(0, 1, us(0));
        v.on_enqueue(0, 1, us(0));
        v.on_arrival(0, 1, us(0));
        v.on_arrival(0, 1, us(0));
        v.on_dequeue(0, 1, Time::from_ns(500));
        assert_eq!(v.threshold(0), 2);
        // At 1 us nothing more has left (the port is still busy): an arrival elsewhere
        // materializes nothing for queue 0.
        v.on_arrival(0, 1, us(1));
        assert_eq!(v.threshold(0), 3);
        // A virtual packet leaves at 1.5 us and at 2.5 us: at 3 us two have gone.
        v.on_arrival(0, 1, us(3));
        assert_eq!(v.threshold(0), 3 - 2 + 1);
    }

    #[test]
    fn pending_drains_are_applied_before_a_virtual_push_out() {
        // Queue 1's virtual queue (5, real empty) drains 1 per us; at 3 us it is 2, so an
        // arrival to queue 0 with Γ = 9 + 1 <= 10 needs no push-out once drains are known.
        let mut v = VirtualLqd::new(vec![RATE, RATE]);
        v.init(10, 2, 1);
        for _ in 0..5 {
            v.on_arrival(1, 1, us(0));
        }
        for _ in 0..4 {
            v.on_arrival(0, 1, us(0));
            v.on_enqueue(0, 1, us(0));
        }
        assert_eq!(v.gamma(), 9);
        v.on_arrival(0, 1, us(3)); // stored Γ would be 10: no materialization needed yet
        assert_eq!(ts(&v), vec![5, 5]);
        v.on_arrival(0, 1, us(3)); // stored Γ 11 > 10: queue 1 drained 3 -> [6, 2]
        assert_eq!(ts(&v), vec![6, 2]);
        assert_eq!(v.gamma(), 8);
    }

    #[test]
    fn ceil_u64_is_ceil_as_u64() {
        let two_63 = 9_223_372_036_854_775_808.0;
        for x in [
            0.0, -0.0, 0.5, 1.0, 1.5, 799.999, 800.0, 1.0e15 + 0.5, 4_503_599_627_370_495.5, 2.0f64.powi(53),
            two_63 - 1024.0, two_63, 1.9e19, 2.0f64.powi(64), 1e30, -0.5, -1.0, -1e30, f64::NAN,
            f64::INFINITY, f64::NEG_INFINITY, f64::MIN_POSITIVE, f64::EPSILON,
        ] {
            assert_eq!(ceil_u64(x), x.ceil() as u64, "{x}");
        }
        let mut r: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..100_000 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            let x = f64::from_bits(r);
            assert_eq!(ceil_u64(x), x.ceil() as u64, "{x}");
            let y = (r >> 11) as f64 / 4096.0;
            assert_eq!(ceil_u64(y), y.ceil() as u64, "{y}");
        }
    }

    #[test]
    fn without_a_rate_an_empty_queue_keeps_its_threshold() {
        let mut v = VirtualLqd::new(vec![]);
        v.init(10, 2, 1);
        v.on_arrival(1, 1, us(0));
        v.on_arrival(0, 1, us(1000));
        assert_eq!(ts(&v), vec![1, 1]);
    }
}
