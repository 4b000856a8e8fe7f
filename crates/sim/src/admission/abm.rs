//! Active Buffer Management (Addanki, Apostolaki, Ghobadi, Schmid and Vanbever, SIGCOMM'22),
//! a Credence baseline (§4.1: `alpha = 0.5`, `alpha = 64` for first-RTT packets).

use units::{Dur, Time, PS_PER_S};

use super::{Arrival, BufferAdmission, BufferView, Verdict};

/// ABM: queue `i` of priority (class) `p` may grow to
///
/// `T_i(t) = alpha_p · (1 / n_p) · (B − Q(t)) · mu_i / b`
///
/// and a packet is accepted iff its queue including it stays within `T_i(t)` and the buffer
/// has room. Choices (the paper's symbols, our reading, and where they come from):
/// - `alpha_p`: the class's DT alpha (`switch.queues[p].dt_alpha`, shared with DT as in the
///   authors' ns-3 artifact, where ABM and DT read the same per-priority `alphas`); packets of
///   a flow's first RTT ([`Arrival::first_rtt`]) use `alpha_first_rtt` instead (Credence §4.1:
///   64).
/// - `n_p`: the number of congested queues of class `p` in the whole buffer, at least 1. A
///   queue is congested if it holds more than `congested` units (default 20 x 1400 B =
///   28000 B, the artifact's saturation level `sat`). The artifact counts a fractional
///   saturation `min(q / sat, 1)` per queue; we count whole queues above the threshold, a
///   small deviation that makes `n_p` an integer.
/// - `mu_i / b`: queue `i`'s dequeue rate over the last interval normalized by its port's
///   rate: bytes dequeued from `i` / (port rate x interval). As in the artifact, a value
///   above 1 or below `1/k` (`k` queues per port) is replaced by 1, so an idle or starved
///   queue is not throttled for it, and with one queue per port the factor is always 1.
///   Without the port's rate the factor is 1.
/// - Refresh: `n_p` and `mu_i / b` are recomputed once per `interval` (one base RTT; the
///   artifact's `updateInterval`), lazily at the first arrival after the interval ends, over
///   the time actually elapsed. Until the first refresh, `n_p = 1` and `mu_i / b = 1`.
///
/// Thresholds are in the buffer's unit (bytes in the packet simulator).
#[derive(Clone, Debug, PartialEq)]
pub struct Abm {
    alpha: Vec<f64>,
    alpha_first_rtt: f64,
    interval: Dur,
    congested: u64,
    port_rates: Vec<u64>,
    // State, sized at the first arrival.
    qpp: usize,
    /// `1 / n_p` per class.
    inv_n: Vec<f64>,
    /// `mu_i / b` per queue.
    mu: Vec<f64>,
    /// Units dequeued per queue since the last refresh.
    deq: Vec<u64>,
    last_refresh: Time,
    next_refresh: Time,
}

impl Abm {
    /// ABM with per-class `alpha` (the last applies to higher classes), `alpha_first_rtt`,
    /// refresh `interval`, congestion threshold `congested` (buffer units) and the rate of
    /// each port in buffer units per second (empty: unknown, `mu/b = 1`).
    pub fn new(alpha: Vec<f64>, alpha_first_rtt: f64, interval: Dur, congested: u64, port_rates: Vec<u64>) -> Abm {
        debug_assert!(!alpha.is_empty());
        Abm {
            alpha,
            alpha_first_rtt,
            interval,
            congested,
            port_rates,
            qpp: 1,
            inv_n: Vec::new(),
            mu: Vec::new(),
            deq: Vec::new(),
            last_refresh: Time::ZERO,
            next_refresh: Time::ZERO,
        }
    }

    /// The current `1/n_p` of class `c`.
    pub fn inv_congested(&self, c: usize) -> f64 {
        self.inv_n[c]
    }

    /// The current `mu_i / b` of queue `q`.
    pub fn dequeue_factor(&self, q: usize) -> f64 {
        self.mu[q]
    }

    #[cold]
    fn init<V: BufferView>(&mut self, v: &V, now: Time) {
        self.qpp = v.queues_per_port().max(1);
        self.inv_n = vec![1.0; self.qpp];
        self.mu = vec![1.0; v.num_queues()];
        self.deq = vec![0; v.num_queues()];
        self.last_refresh = now;
        self.next_refresh = now + self.interval;
    }

    fn refresh<V: BufferView>(&mut self, v: &V, now: Time) {
        let mut count = [0u32; crate::spec::MAX_QUEUES];
        for q in 0..v.num_queues() {
            if v.queue_len(q) > self.congested {
                count[(q % self.qpp).min(count.len() - 1)] += 1;
            }
        }
        for (c, inv) in self.inv_n.iter_mut().enumerate() {
            *inv = 1.0 / count.get(c).copied().unwrap_or(0).max(1) as f64;
        }
        let elapsed_ps = now.ps() - self.last_refresh.ps();
        let floor = 1.0 / self.qpp as f64;
        for q in 0..self.mu.len() {
            let rate = self.port_rates.get(q / self.qpp).copied().unwrap_or(0);
            let capacity = rate as f64 * elapsed_ps as f64 / PS_PER_S as f64;
            let mu = if capacity > 0.0 { self.deq[q] as f64 / capacity } else { 1.0 };
            // The artifact's sanity clamp: out of [1/k, 1] means "not measurably shared".
            self.mu[q] = if (floor..=1.0).contains(&mu) { mu } else { 1.0 };
            self.deq[q] = 0;
        }
        self.last_refresh = now;
        self.next_refresh = now + self.interval;
    }
}

impl BufferAdmission for Abm {
    #[inline]
    fn admit<V: BufferView>(&mut self, v: &V, a: &Arrival) -> Verdict {
        if self.mu.is_empty() {
            self.init(v, a.now);
        } else if a.now >= self.next_refresh {
            self.refresh(v, a.now);
        }
        let occ = v.occupancy();
        if occ + a.size > v.capacity() {
            return Verdict::Drop;
        }
        let c = a.queue % self.qpp;
        let alpha = if a.first_rtt { self.alpha_first_rtt } else { self.alpha[c.min(self.alpha.len() - 1)] };
        let threshold = alpha * self.inv_n[c] * (v.capacity() - occ) as f64 * self.mu[a.queue];
        if (v.queue_len(a.queue) + a.size) as f64 <= threshold {
            Verdict::Accept
        } else {
            Verdict::Drop
        }
    }

    #[inline]
    fn on_dequeue(&mut self, q: usize, size: u64, _now: Time) {
        if let Some(d) = self.deq.get_mut(q) {
            *d += size;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::SimpleBuffer;

    fn arrive(p: &mut Abm, b: &mut SimpleBuffer, q: usize, size: u64, now_us: u64, first_rtt: bool) -> Verdict {
        let a = Arrival { queue: q, size, now: Time::from_us(now_us), first_rtt };
        let v = p.admit(b, &a);
        if v == Verdict::Accept {
            b.len[q] += size;
            p.on_enqueue(q, size, a.now);
        }
        v
    }

    #[test]
    fn alone_it_is_dt_then_congested_queues_split_the_free_buffer() {
        // B = 10000, 4 queues, alpha 1, congested above 1000, refresh every 10 us.
        let mut b = SimpleBuffer::new(10_000, 4);
        let mut p = Abm::new(vec![1.0], 64.0, Dur::from_us(10), 1000, vec![]);
        // n = 1, mu = 1: DT with alpha 1, a lone queue stops at B/2.
        while arrive(&mut p, &mut b, 0, 500, 0, false) == Verdict::Accept {}
        assert_eq!(b.len[0], 5000);
        // Queue 1 grows while len + 500 <= 10000 - 5000 - len, i.e. to 2500.
        for _ in 0..5 {
            assert_eq!(arrive(&mut p, &mut b, 1, 500, 1, false), Verdict::Accept);
        }
        assert_eq!(arrive(&mut p, &mut b, 1, 500, 1, false), Verdict::Drop); // 3000 > 2500
        // At 10 us the refresh sees queues 0 and 1 congested: n = 2, T = (B - Q) / 2.
        assert_eq!(arrive(&mut p, &mut b, 2, 500, 10, false), Verdict::Accept); // 500 <= 1250
        assert_eq!(p.inv_congested(0), 0.5);
        assert_eq!(arrive(&mut p, &mut b, 2, 500, 10, false), Verdict::Accept); // 1000 <= 1000
        assert_eq!(arrive(&mut p, &mut b, 2, 500, 10, false), Verdict::Drop); // 1500 > 750
        assert_eq!(b.len, vec![5000, 2500, 1000, 0]);
    }

    #[test]
    fn first_rtt_packets_get_the_large_alpha() {
        let mut b = SimpleBuffer { capacity: 10_000, queues_per_port: 1, len: vec![5000, 0, 0, 0] };
        let mut p = Abm::new(vec![1.0], 64.0, Dur::from_us(10), 1000, vec![]);
        assert_eq!(arrive(&mut p, &mut b, 0, 500, 0, false), Verdict::Drop); // 5500 > 4500
        assert_eq!(arrive(&mut p, &mut b, 0, 500, 0, true), Verdict::Accept); // 5500 <= 64 x 5000
    }

    #[test]
    fn dequeue_factor_is_the_normalized_rate_clamped_like_the_artifact() {
        // Two classes per port, one port at 1e9 units/s: 10 us = 10000 units of capacity.
        let mut b = SimpleBuffer { capacity: 100_000, queues_per_port: 2, len: vec![0, 0] };
        let mut p = Abm::new(vec![1.0, 1.0], 64.0, Dur::from_us(10), 1000, vec![1_000_000_000]);
        arrive(&mut p, &mut b, 0, 1, 0, false);
        p.on_dequeue(0, 2000, Time::from_us(5)); // 0.2 < 1/2: clamped to 1
        p.on_dequeue(1, 6000, Time::from_us(5)); // 0.6
        arrive(&mut p, &mut b, 1, 1, 10, false);
        assert_eq!(p.dequeue_factor(0), 1.0);
        assert!((p.dequeue_factor(1) - 0.6).abs() < 1e-12);
        // Class 1's threshold is scaled: 0.6 x (100000 - 2) = 59998.8 (DT: 99998).
        assert_eq!(arrive(&mut p, &mut b, 1, 59_998, 11, false), Verdict::Drop); // 59999
        assert_eq!(arrive(&mut p, &mut b, 1, 59_997, 11, false), Verdict::Accept); // 59998
    }
}
