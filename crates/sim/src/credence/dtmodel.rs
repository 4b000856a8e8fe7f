//! The discrete-time shared-buffer model of Credence Appendix A, driving the same
//! [`BufferAdmission`] policies as the packet simulator.
//!
//! Model: `N` output ports, one queue each, sharing a buffer of `B` packets (unit size). Time
//! is slotted; slot `t` has an arrival phase (at most `N` packets, each destined to a port,
//! offered one by one in the order given) and then a departure phase (every non-empty queue
//! sends its head packet). Throughput is the number of packets transmitted; a run continues
//! after the last arrival until the buffer is empty, so every packet a policy keeps counts.
//!
//! The owner's side of the [`BufferAdmission`] contract is carried out exactly as the packet
//! simulator does: `admit`, then on [`Verdict::Accept`] enqueue and `on_enqueue`; on
//! [`Verdict::PushOut`] enqueue, `on_enqueue`, and while the buffer is over `B` drop the tail
//! packet of the longest queue (ties: lowest index; possibly the arriving packet itself) with
//! `on_push_out`; every transmission calls `on_dequeue`. Virtual time: the arrival phase of
//! slot `t` is at `t` us and its departure phase at `t + 0.5` us, and a port sends one unit per
//! microsecond ([`UNITS_PER_SEC`]), so the LQD followers' virtual queues drain exactly one
//! packet per slot (see [`VirtualLqd`](crate::admission::VirtualLqd)).
//!
//! Packets are numbered in arrival order over the whole sequence (slot by slot, in the order
//! given within a slot); the record of which ones LQD drops ([`lqd_drops`]) is the ground
//! truth of the prediction model (§2.3.1) and the "perfect" oracle of Figure 14.
//!
//! INVARIANT: occupancy `<= B` after every arrival (checked: an `Accept` that does not fit
//! panics) and the queue lengths the policies see equal the FIFOs' lengths.
//!
//! # Finding: Lemma 1 and consistency fail on some inputs when N does not divide B
//!
//! Credence §3.1 says perfect predictions give LQD's throughput ("the drops by Credence and
//! LQD are equivalent for true predictions"), and Lemma 1 says `Credence(σ) >= LQD(σ) / η`.
//! With N = 4 ports, B = 5 and the arrivals `[[3, 0, 0, 3], [0, 2, 1, 1], [0, 0]]` (per slot,
//! the port of each packet in arrival order), LQD transmits 9 packets and Credence (Algorithm
//! 1 as written, [`Credence`]) with LQD's own drop record as predictions 8. LQD takes packet 4
//! (port 0) and pushes it out when packet 7 overflows the buffer (queues 0 and 1 tie at 2;
//! LQD pushes out of the lowest index, a tie the paper leaves open). Credence's safeguard
//! accepts packet 4 against the "drop" prediction because its longest queue, 1 packet, is
//! below B/N = 1.25; the buffer is then full for packet 7 and a threshold drops packet 9.
//! Here η of Definition 1 is exactly 1 (FollowLQD on σ without LQD's drops sends 9), so
//! Theorem 2 holds and Lemma 1 fails. Its proof argues that a packet the safeguard takes
//! drains before the buffer fills, since filling B packets takes B/N slots; here the buffer
//! already holds 2 packets and fills within the slot.
//!
//! On 20 000 random inputs of up to 5 slots with N = 2-4 and B = 1-9 (test
//! `the_papers_guarantees_on_random_small_inputs`, predictions flipped from LQD's record with
//! probability 0, 0.1, 0.3 or 1), perfect predictions lose to LQD on 2 of the 13 338 inputs
//! where N does not divide B and on none of the 6 662 where it does (nor on 300 000 more with
//! N dividing B, in a one-off search); Lemma 1 fails on 31 (8 and 23). Theorem 2 and Lemma 2
//! (against the optimum found by exhaustion) held on every input. The tests assert those two
//! and consistency when N divides B, and pin the counterexample.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use units::{Dur, Time, PS_PER_US};

use super::features::{FeatureVector, Features};
use super::oracle::{AnyOracle, Flip, Oracle, Perfect};
use crate::admission::{
    Arrival, BufferAdmission, BufferView, Credence, CredenceOptions, DtRule, DynamicThresholds, FollowLqd, Lqd,
    Verdict,
};

/// Port rate in packets per second: one packet per slot of one microsecond.
pub const UNITS_PER_SEC: u64 = 1_000_000;

/// An arrival sequence: for each slot, the destination port of each arriving packet.
pub type Arrivals = Vec<Vec<usize>>;

/// A switch of the model: `ports` single-queue ports sharing `buffer` packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Model {
    /// Number of ports N.
    pub ports: usize,
    /// Buffer size B in packets.
    pub buffer: u64,
}

/// What a run produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Packets offered.
    pub arrived: u64,
    /// Packets transmitted (the throughput).
    pub transmitted: u64,
    /// Packets pushed out after being accepted.
    pub pushed_out: u64,
    /// Per packet (in arrival order): dropped on arrival or pushed out later.
    pub dropped: Vec<bool>,
    /// Slots simulated (arrivals plus draining).
    pub slots: u64,
}

/// The buffer state, as policies see it.
#[derive(Debug)]
struct State {
    capacity: u64,
    occupancy: u64,
    fifo: Vec<VecDeque<u32>>,
}

impl BufferView for State {
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn occupancy(&self) -> u64 {
        self.occupancy
    }
    fn num_queues(&self) -> usize {
        self.fifo.len()
    }
    fn queues_per_port(&self) -> usize {
        1
    }
    fn queue_len(&self, q: usize) -> u64 {
        self.fifo[q].len() as u64
    }
}

fn arrival_time(t: u64) -> Time {
    Time::from_ps(t * PS_PER_US)
}

fn departure_time(t: u64) -> Time {
    Time::from_ps(t * PS_PER_US + PS_PER_US / 2)
}

impl Model {
    /// `ports` ports sharing `buffer` packets.
    pub fn new(ports: usize, buffer: u64) -> Model {
        assert!(ports > 0 && buffer > 0);
        Model { ports, buffer }
    }

    /// Every port's rate for the LQD followers ([`UNITS_PER_SEC`] each).
    pub fn port_rates(&self) -> Vec<u64> {
        vec![UNITS_PER_SEC; self.ports]
    }

    /// Credence asking `oracle` (feature averages over one slot).
    pub fn credence(&self, oracle: AnyOracle) -> Credence {
        self.credence_with(oracle, CredenceOptions::default())
    }

    /// Credence with parts of Algorithm 1 off (both off: the naive policy of §2.3.2).
    pub fn credence_with(&self, oracle: AnyOracle, options: CredenceOptions) -> Credence {
        Credence::with_options(oracle, self.port_rates(), Dur::from_us(1), options)
    }

    /// FollowLQD (Algorithm 2).
    pub fn follow_lqd(&self) -> FollowLqd {
        FollowLqd::new(self.port_rates())
    }

    /// Run `policy` on `arrivals` until the buffer is empty.
    ///
    /// Panics if a slot has more than `N` arrivals or a port out of range, or if the policy
    /// accepts a packet that does not fit.
    pub fn run<P: BufferAdmission>(&self, arrivals: &[Vec<usize>], policy: &mut P) -> Outcome {
        let mut s = State { capacity: self.buffer, occupancy: 0, fifo: vec![VecDeque::new(); self.ports] };
        let total: usize = arrivals.iter().map(Vec::len).sum();
        let mut out = Outcome { arrived: 0, transmitted: 0, pushed_out: 0, dropped: vec![false; total], slots: 0 };
        let mut t = 0u64;
        while (t as usize) < arrivals.len() || s.occupancy > 0 {
            if let Some(slot) = arrivals.get(t as usize) {
                assert!(slot.len() <= self.ports, "slot {t}: {} arrivals for {} ports", slot.len(), self.ports);
                let now = arrival_time(t);
                for &port in slot {
                    assert!(port < self.ports, "slot {t}: no port {port}");
                    let id = out.arrived as u32;
                    out.arrived += 1;
                    self.offer(&mut s, policy, &mut out, port, id, now);
                }
            }
            let now = departure_time(t);
            for q in 0..self.ports {
                if s.fifo[q].pop_front().is_some() {
                    s.occupancy -= 1;
                    out.transmitted += 1;
                    policy.on_dequeue(q, 1, now);
                }
            }
            t += 1;
        }
        out.slots = t;
        out
    }

    fn offer<P: BufferAdmission>(&self, s: &mut State, p: &mut P, out: &mut Outcome, q: usize, id: u32, now: Time) {
        let verdict = p.admit(s, &Arrival { queue: q, size: 1, now, first_rtt: false });
        match verdict {
            Verdict::Drop => out.dropped[id as usize] = true,
            Verdict::Accept | Verdict::PushOut => {
                // INVARIANT: an accepted packet fits.
                assert!(verdict == Verdict::PushOut || s.occupancy < s.capacity, "accepted beyond the buffer");
                s.fifo[q].push_back(id);
                s.occupancy += 1;
                p.on_enqueue(q, 1, now);
                while s.occupancy > s.capacity {
                    let (victim, _) = s.longest_queue();
                    let gone = s.fifo[victim].pop_back().expect("the longest queue of a full buffer has packets");
                    s.occupancy -= 1;
                    out.dropped[gone as usize] = true;
                    out.pushed_out += 1;
                    p.on_push_out(victim, 1, now);
                }
            }
        }
    }
}

/// LQD's drops on `arrivals` (dropped on arrival or pushed out later), by packet index: the
/// ground truth of the prediction model, and the record a [`Perfect`] oracle replays.
pub fn lqd_drops(model: &Model, arrivals: &[Vec<usize>]) -> Vec<bool> {
    model.run(arrivals, &mut Lqd).dropped
}

/// LQD's trace on `arrivals`, the training data of a drop oracle (§4.1): per packet, the
/// features LQD's buffer showed at its arrival (averages over one slot, as
/// [`Model::credence`] computes them) and whether LQD dropped it.
pub fn lqd_trace(model: &Model, arrivals: &[Vec<usize>]) -> Vec<(FeatureVector, bool)> {
    /// LQD that records the features of every arrival.
    #[derive(Debug)]
    struct Tracing {
        features: Features,
        rows: Vec<FeatureVector>,
    }
    impl BufferAdmission for Tracing {
        fn admit<V: BufferView>(&mut self, v: &V, a: &Arrival) -> Verdict {
            if self.rows.is_empty() {
                self.features.init(v.num_queues());
            }
            let x = self.features.sample(a.queue, v.queue_len(a.queue), v.occupancy(), a.now);
            self.rows.push(x);
            Lqd.admit(v, a)
        }
    }
    let mut t = Tracing { features: Features::new(Dur::from_us(1)), rows: Vec::new() };
    let out = model.run(arrivals, &mut t);
    t.rows.into_iter().zip(out.dropped).collect()
}

/// The predictions `oracle` makes for packets `0..n` (features all zero: for oracles that
/// key on the packet index, such as [`Perfect`] and [`Flip`]).
pub fn predictions(oracle: &mut AnyOracle, n: usize) -> Vec<bool> {
    (0..n as u64).map(|k| oracle.predict_drop(&[0.0; 4], k)).collect()
}

/// `arrivals` without the packets `predicted` to be dropped (indexed in arrival order), slots
/// kept: the sequence `σ - φ'_TP - φ'_FP` on which Definition 1 runs FollowLQD.
pub fn without_predicted_drops(arrivals: &[Vec<usize>], predicted: &[bool]) -> Arrivals {
    let mut k = 0;
    arrivals
        .iter()
        .map(|slot| {
            let kept = slot.iter().zip(&predicted[k..]).filter(|(_, &drop)| !drop).map(|(&port, _)| port).collect();
            k += slot.len();
            kept
        })
        .collect()
}

/// The error `η` of Definition 1, computed as defined: `LQD(σ) / FollowLQD(σ - φ'_TP -
/// φ'_FP)`, infinite if FollowLQD transmits nothing.
pub fn eta(model: &Model, arrivals: &[Vec<usize>], predicted: &[bool]) -> f64 {
    let lqd = model.run(arrivals, &mut Lqd).transmitted;
    let follow = model.run(&without_predicted_drops(arrivals, predicted), &mut model.follow_lqd()).transmitted;
    if follow == 0 {
        f64::INFINITY
    } else {
        lqd as f64 / follow as f64
    }
}

/// Counts of true/false positive/negative predictions against LQD's drops (Figure 5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Confusion {
    /// Predicted drop, LQD drops.
    pub tp: u64,
    /// Predicted drop, LQD transmits.
    pub fp: u64,
    /// Predicted transmit, LQD transmits.
    pub tn: u64,
    /// Predicted transmit, LQD drops.
    pub fn_: u64,
}

impl Confusion {
    /// Compare predictions with LQD's drops, packet by packet.
    pub fn new(truth: &[bool], predicted: &[bool]) -> Confusion {
        assert_eq!(truth.len(), predicted.len());
        let mut c = Confusion::default();
        for (&t, &p) in truth.iter().zip(predicted) {
            match (p, t) {
                (true, true) => c.tp += 1,
                (true, false) => c.fp += 1,
                (false, false) => c.tn += 1,
                (false, true) => c.fn_ += 1,
            }
        }
        c
    }

    /// Theorem 2's upper bound of the error `η`:
    /// `(TN + FP) / (TN - min((N - 1)·FN, TN))`, infinite when the denominator is 0.
    pub fn eta_bound(&self, ports: usize) -> f64 {
        let den = self.tn - ((ports as u64 - 1) * self.fn_).min(self.tn);
        if den == 0 {
            f64::INFINITY
        } else {
            (self.tn + self.fp) as f64 / den as f64
        }
    }
}

/// Observation 1's sequence: fill port 0 to `B` (N packets a slot until LQD's queue is full),
/// then `rounds` times: one packet to every port, then `N` packets to port 0. LQD transmits
/// `N + 1` packets per round, FollowLQD 2.
pub fn observation1(model: &Model, rounds: usize) -> Arrivals {
    let mut seq = fill_queue_zero(model);
    for _ in 0..rounds {
        seq.push((0..model.ports).collect());
        seq.push(vec![0; model.ports]);
    }
    seq
}

/// §2.3.2's "single false negative" sequence: fill port 0 to `B` without an LQD drop, then
/// `rounds` slots with one packet to port 0 and then one to another port (rotating). LQD
/// pushes out only the first round's packet to port 0 (a single positive) and then transmits
/// two packets a slot.
pub fn one_false_negative(model: &Model, rounds: usize) -> Arrivals {
    assert!(model.ports >= 2);
    let mut seq = fill_queue_zero(model);
    for r in 0..rounds {
        seq.push(vec![0, 1 + r % (model.ports - 1)]);
    }
    seq
}

/// Slots that bring port 0's queue to exactly `B` at an arrival phase without a drop (at
/// most N arrivals a slot, one departure a slot).
fn fill_queue_zero(model: &Model) -> Arrivals {
    assert!(model.ports >= 2, "port 0 cannot outgrow its drain alone");
    let mut seq = Vec::new();
    let mut len = 0u64;
    loop {
        let a = (model.ports as u64).min(model.buffer - len);
        seq.push(vec![0; a as usize]);
        len += a;
        if len == model.buffer {
            return seq;
        }
        len -= 1;
    }
}

/// Bursts of `burst` packets whose starts form a Poisson process of `rate` bursts per slot
/// over `slots` slots; each burst goes to a uniformly random port. The input side delivers at
/// most `N` packets a slot (Appendix A), shared round-robin, packet by packet, among the
/// bursts in progress, so a lone burst arrives at `N` packets a slot (all inputs sending to
/// one output, as in an incast). Slots continue past `slots` until every burst is delivered.
pub fn poisson_bursts(model: &Model, burst: u64, slots: usize, rate: f64, seed: u64) -> Arrivals {
    let mut rng = Pcg64::seed_from_u64(seed);
    let exp = |r: &mut Pcg64| -(1.0 - r.gen::<f64>()).ln() / rate;
    let mut next_start = exp(&mut rng);
    let mut active: Vec<(usize, u64)> = Vec::new();
    let mut seq = Vec::new();
    let mut t = 0usize;
    while t < slots || !active.is_empty() {
        while t < slots && next_start < (t + 1) as f64 {
            active.push((rng.gen_range(0..model.ports), burst));
            next_start += exp(&mut rng);
        }
        let mut slot = Vec::with_capacity(model.ports);
        let mut i = 0;
        while slot.len() < model.ports && active.iter().any(|b| b.1 > 0) {
            if active[i].1 > 0 {
                slot.push(active[i].0);
                active[i].1 -= 1;
            }
            i = (i + 1) % active.len();
        }
        active.retain(|b| b.1 > 0);
        seq.push(slot);
        t += 1;
    }
    seq
}

/// The setup of [`figure14`]. [`Default`] is our reading of Appendix D (see
/// [`Figure14::default`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Figure14 {
    /// The switch.
    pub model: Model,
    /// Slots over which bursts start.
    pub slots: usize,
    /// Burst starts per slot (Poisson rate).
    pub bursts_per_slot: f64,
    /// Seed of the arrival sequence ("fixed in subsequent runs").
    pub seed: u64,
    /// Seed of the flips: the flips at the `i`-th flip probability of the run with arrival
    /// seed `s` draw from the stream `hash3(flip_seed, i, s)`, so every seed and every
    /// probability has its own stream.
    pub flip_seed: u64,
    /// DT's alpha, for the reference curve.
    pub dt_alpha: f64,
    /// The DT rules of the reference curves, one curve each.
    pub dt_rules: Vec<DtRule>,
    /// Flip probabilities to evaluate.
    pub flip_probabilities: Vec<f64>,
}

impl Default for Figure14 {
    /// Appendix D states bursts "of the size of the total buffer" arriving as a Poisson
    /// process, a fixed sequence, LQD's drop trace as perfect predictions and random flips of
    /// it; it leaves the rest open. Ours: N = 8 ports, B = 64 packets, bursts of B packets to
    /// a uniformly random port, 0.006 burst starts per slot for 50 000 slots (about 300
    /// bursts; a mean gap of 167 slots against the 8 slots a burst takes to arrive and the up
    /// to 64 it takes to drain, so bursts overlap now and then: congestion is rare, as the
    /// paper's footnote 4 says of its traces), DT with alpha = 0.5 (the value of §4.1) under
    /// both [`DtRule`]s, and p = 0, 0.1, ..., 1. The burst rate was chosen among 0.005-0.1
    /// (on seed 14) as the one whose curve ends nearest the paper's 2.9 at p = 1; denser
    /// bursts flatten both curves (at 0.05, LQD/Credence reaches only 1.5 at p = 1, LQD/DT is
    /// 1.47).
    fn default() -> Self {
        Figure14 {
            model: Model::new(8, 64),
            slots: 50_000,
            bursts_per_slot: 0.006,
            seed: 14,
            flip_seed: 1414,
            dt_alpha: 0.5,
            dt_rules: DtRule::ALL.to_vec(),
            flip_probabilities: (0..=10).map(|i| i as f64 / 10.0).collect(),
        }
    }
}

/// The seeds the reproduction runs Figure 14 on: 1 to 30.
pub const FIGURE14_SEEDS: std::ops::RangeInclusive<u64> = 1..=30;

/// One arrival sequence's Figure 14: the throughput ratios LQD/ALG.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure14Run {
    /// The seed of the arrival sequence.
    pub seed: u64,
    /// `(p, LQD/Credence)` per flip probability `p`, in the configuration's order.
    pub credence: Vec<(f64, f64)>,
    /// `(rule, LQD/DT)` per DT rule, in the configuration's order.
    pub dt: Vec<(DtRule, f64)>,
}

impl Figure14Run {
    /// LQD/DT under `rule`, if the run has it.
    pub fn dt_ratio(&self, rule: DtRule) -> Option<f64> {
        self.dt.iter().find(|(r, _)| *r == rule).map(|(_, x)| *x)
    }

    /// The crossing point with DT under `rule`: the largest flip probability at which
    /// LQD/Credence is still below LQD/DT (Credence transmits more than DT). `None` if there
    /// is none, or the run has no such rule.
    pub fn crossing(&self, rule: DtRule) -> Option<f64> {
        let dt = self.dt_ratio(rule)?;
        self.credence.iter().filter(|(_, c)| *c < dt).map(|(p, _)| *p).reduce(f64::max)
    }
}

/// Credence Figure 14 on the arrival sequence of `cfg.seed`: LQD's throughput over
/// Credence's as the probability of a false prediction grows, with DT under each rule of
/// `cfg.dt_rules` for reference.
///
/// Credence's oracle is LQD's drop record on the same sequence ([`Perfect`]) wrapped in a
/// [`Flip`] with probability `p`, as Appendix D describes.
pub fn figure14(cfg: &Figure14) -> Figure14Run {
    let m = &cfg.model;
    let arrivals = poisson_bursts(m, m.buffer, cfg.slots, cfg.bursts_per_slot, cfg.seed);
    let lqd = m.run(&arrivals, &mut Lqd);
    let record: std::sync::Arc<[bool]> = lqd.dropped.into();
    let lqd = lqd.transmitted as f64;
    let dt = cfg
        .dt_rules
        .iter()
        .map(|&rule| {
            let dt = m.run(&arrivals, &mut DynamicThresholds::with_rule(vec![cfg.dt_alpha], rule));
            (rule, lqd / dt.transmitted as f64)
        })
        .collect();
    let credence = cfg
        .flip_probabilities
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let oracle = flip_oracle(&record, p, crate::route::hash3(cfg.flip_seed, i as u64, cfg.seed));
            let c = m.run(&arrivals, &mut m.credence(oracle));
            (p, lqd / c.transmitted as f64)
        })
        .collect();
    Figure14Run { seed: cfg.seed, credence, dt }
}

/// [`figure14`] on the arrival sequence of each of `seeds` (the rest of `cfg` as given), in
/// that order.
pub fn figure14_seeds(cfg: &Figure14, seeds: &[u64]) -> Vec<Figure14Run> {
    seeds.iter().map(|&seed| figure14(&Figure14 { seed, ..cfg.clone() })).collect()
}

/// Mean, standard deviation (population) and range of a sample: how Figure 14's numbers
/// spread over seeds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Arithmetic mean.
    pub mean: f64,
    /// Population standard deviation (divided by the count, not count - 1).
    pub std: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `xs`. Panics if `xs` is empty.
    pub fn of(xs: &[f64]) -> Spread {
        assert!(!xs.is_empty(), "the spread of nothing");
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let std = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Spread { mean, std, min, max }
    }
}

impl std::fmt::Display for Spread {
    /// `mean ± std (min-max)`, with the formatter's precision (default 3).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = f.precision().unwrap_or(3);
        write!(f, "{:.d$} ± {:.d$} ({:.d$}-{:.d$})", self.mean, self.std, self.min, self.max)
    }
}

/// LQD's record, flipped with probability `p` by a stream seeded with `seed`.
pub fn flip_oracle(record: &std::sync::Arc<[bool]>, p: f64, seed: u64) -> AnyOracle {
    AnyOracle::Flip(Flip::new(AnyOracle::Perfect(Perfect::new(record.clone())), p, seed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{CompleteSharing, Harmonic};

    fn ratio(a: &Outcome, b: &Outcome) -> f64 {
        a.transmitted as f64 / b.transmitted as f64
    }

    /// Drop-tail that accepts packet `k` iff `accept[k]` and it fits.
    #[derive(Debug)]
    struct Masked {
        accept: Vec<bool>,
        next: usize,
    }

    impl BufferAdmission for Masked {
        fn admit<V: BufferView>(&mut self, v: &V, _: &Arrival) -> Verdict {
            self.next += 1;
            if self.accept[self.next - 1] && v.occupancy() < v.capacity() {
                Verdict::Accept
            } else {
                Verdict::Drop
            }
        }
    }

    /// The offline optimum by exhaustion over accept sets (at most 16 packets). Exact: a
    /// push-out schedule transmits what the drop-tail one that never takes its pushed-out
    /// packets does, and every drop-tail schedule is some accept set.
    fn opt(m: &Model, seq: &[Vec<usize>]) -> u64 {
        let n: usize = seq.iter().map(Vec::len).sum();
        assert!(n <= 16);
        (0u32..1 << n)
            .map(|mask| {
                let accept = (0..n).map(|k| mask >> k & 1 == 1).collect();
                m.run(seq, &mut Masked { accept, next: 0 }).transmitted
            })
            .max()
            .unwrap_or(0)
    }

    /// 1 to `max_slots` slots of N/2 to N packets each, to uniformly random ports.
    fn random_small(rng: &mut Pcg64, ports: usize, max_slots: usize) -> Arrivals {
        (0..rng.gen_range(1..=max_slots))
            .map(|_| (0..rng.gen_range(ports / 2..=ports)).map(|_| rng.gen_range(0..ports)).collect())
            .collect()
    }

    #[test]
    fn opt_by_exhaustion_by_hand() {
        // N = 2, B = 2: slot 0 brings 2 packets to port 0, slot 1 one to each port. Taking
        // all of slot 0 leaves room for one of slot 1 (3 sent); dropping one packet of slot
        // 0 makes room for both (also 3). LQD pushes out and sends 3 too.
        let m = Model::new(2, 2);
        let seq = vec![vec![0, 0], vec![0, 1]];
        assert_eq!(opt(&m, &seq), 3);
        // One busy port, bursts of 3 into B = 2: 2 fit in slot 0 and one leaves; 1 more fits
        // in slot 1. Nothing does better: 3 of 6.
        let m = Model::new(3, 2);
        assert_eq!(opt(&m, &[vec![0, 0, 0], vec![0, 0, 0]]), 3);
    }

    #[test]
    fn perfect_predictions_lose_to_lqd_when_n_does_not_divide_b() {
        // The counterexample to Lemma 1 and to consistency (module docs, "Finding"). N = 4,
        // B = 5 (B/N = 1.25); per slot, the destination port of each packet in arrival order.
        let m = Model::new(4, 5);
        let seq = vec![vec![3, 0, 0, 3], vec![0, 2, 1, 1], vec![0, 0]];
        let lqd = m.run(&seq, &mut Lqd);
        // Slot 1: LQD takes packet 4 (port 0) and, when packet 7 (port 1) overflows the
        // buffer with queues 0 and 1 tied at 2, pushes packet 4 out again.
        assert_eq!(lqd.dropped, [false, false, false, false, true, false, false, false, false, false]);
        let mut credence = m.credence(AnyOracle::Perfect(Perfect::new(lqd.dropped.clone())));
        let c = m.run(&seq, &mut credence);
        assert_eq!((lqd.transmitted, c.transmitted), (9, 8));
        // Credence's safeguard takes packet 4 (the longest queue has 1 < 1.25 packets) against
        // the oracle's "drop"; the full buffer then drops packet 7 and a threshold packet 9.
        assert_eq!(c.dropped, [false, false, false, false, false, false, false, true, false, true]);
        let s = credence.stats();
        assert_eq!((s.safeguard_accepts, s.buffer_drops, s.threshold_drops, s.oracle_drops), (5, 1, 1, 0));
        // Perfect predictions: FP = FN = 0, Theorem 2 bounds η by 1, and η as Definition 1
        // defines it is 1 (FollowLQD on σ without LQD's drops transmits 9). Lemma 1 promises
        // Credence >= LQD / η = 9: it is Lemma 1 that fails, not Theorem 2.
        assert_eq!(Confusion::new(&lqd.dropped, &lqd.dropped).eta_bound(m.ports), 1.0);
        assert_eq!(eta(&m, &seq, &lqd.dropped), 1.0);
    }

    #[test]
    fn the_papers_guarantees_on_random_small_inputs() {
        // What Credence §3.3 and Appendix C state, on random small inputs (N = 2-4, B = 1-9,
        // up to 5 slots), with predictions flipped from LQD's record with probability 0, 0.1,
        // 0.3 or 1. Asserted: Lemma 2 (against the optimum, found by exhaustion, for up to 10
        // packets), Theorem 2 (η as Definition 1 defines it, against its closed-form bound) and
        // consistency when N divides B. Counted and printed, not asserted: Lemma 1 (which fails,
        // see `perfect_predictions_lose_to_lqd_when_n_does_not_divide_b`) and consistency when
        // N does not divide B.
        let mut rng = Pcg64::seed_from_u64(9);
        // Per [N divides B, N does not]: inputs, consistency failures, Lemma 1 failures.
        let mut counts = [[0u64; 3]; 2];
        for case in 0..20_000u64 {
            let ports = rng.gen_range(2..=4);
            let buffer = rng.gen_range(1..=9u64);
            let m = Model::new(ports, buffer);
            let seq = random_small(&mut rng, ports, 5);
            let divides = usize::from(buffer % ports as u64 != 0);
            counts[divides][0] += 1;
            let lqd = m.run(&seq, &mut Lqd);
            let perfect = m.run(&seq, &mut m.credence(AnyOracle::Perfect(Perfect::new(lqd.dropped.clone()))));
            if perfect.transmitted != lqd.transmitted {
                counts[divides][1] += 1;
                assert!(divides == 1, "consistency fails with N = {ports} | B = {buffer}: {seq:?}");
            }
            let p = [0.0, 0.1, 0.3, 1.0][case as usize % 4];
            let record: std::sync::Arc<[bool]> = lqd.dropped.clone().into();
            let predicted = predictions(&mut flip_oracle(&record, p, case), record.len());
            let c = m.run(&seq, &mut m.credence(flip_oracle(&record, p, case))).transmitted;
            // Theorem 2: η <= (TN + FP) / (TN - min((N - 1) FN, TN)).
            let bound = Confusion::new(&lqd.dropped, &predicted).eta_bound(ports);
            let eta = eta(&m, &seq, &predicted);
            assert!(eta <= bound + 1e-9, "Theorem 2: η {eta} > {bound}: N = {ports}, B = {buffer}, {seq:?}");
            // Lemma 1: Credence(σ) >= LQD(σ) / η = FollowLQD(σ - φ'_TP - φ'_FP).
            let follow = m.run(&without_predicted_drops(&seq, &predicted), &mut m.follow_lqd()).transmitted;
            if c < follow {
                counts[divides][2] += 1;
            }
            // Lemma 2: Credence(σ) >= OPT(σ) / N.
            if seq.iter().map(Vec::len).sum::<usize>() <= 10 {
                let o = opt(&m, &seq);
                assert!(o >= lqd.transmitted);
                assert!(o <= ports as u64 * c, "Lemma 2: OPT {o} > N x {c}: N = {ports}, B = {buffer}, {seq:?}");
            }
            assert!(lqd.transmitted <= ports as u64 * c);
        }
        for (what, [n, consistency, lemma1]) in ["N divides B", "N does not divide B"].iter().zip(counts) {
            println!("{what}: {n} inputs; Credence with perfect predictions below LQD in {consistency}; Lemma 1 fails in {lemma1}");
        }
    }

    #[test]
    fn lqd_run_by_hand() {
        // N = 2, B = 2. Slot 0: two packets to port 0; slot 1: one each.
        let m = Model::new(2, 2);
        let seq = vec![vec![0, 0], vec![0, 1]];
        let o = m.run(&seq, &mut Lqd);
        // Slot 0: both fit, port 0 sends one. Slot 1: packet 2 fits (2/2); packet 3 pushes
        // out the tail of port 0 (packet 2). Departures: 1 + 1. Slot 2: empty.
        assert_eq!(o.dropped, vec![false, false, true, false]);
        assert_eq!((o.transmitted, o.pushed_out, o.slots), (3, 1, 2));
    }

    #[test]
    fn drop_tail_never_transmits_more_than_it_accepts_and_drains_fully() {
        let m = Model::new(4, 16);
        let seq = poisson_bursts(&m, 16, 300, 0.2, 3);
        for o in [
            m.run(&seq, &mut CompleteSharing),
            m.run(&seq, &mut DynamicThresholds::new(vec![1.0])),
            m.run(&seq, &mut Harmonic::new()),
            m.run(&seq, &mut m.follow_lqd()),
            m.run(&seq, &mut m.credence(AnyOracle::AlwaysAccept)),
        ] {
            let accepted = o.dropped.iter().filter(|d| !**d).count() as u64;
            assert_eq!(o.pushed_out, 0);
            assert_eq!(o.transmitted, accepted);
            assert_eq!(o.arrived, seq.iter().map(|s| s.len() as u64).sum::<u64>());
        }
    }

    #[test]
    fn bursts_respect_the_per_slot_limit_and_are_whole() {
        let m = Model::new(8, 64);
        let seq = poisson_bursts(&m, 64, 2000, 0.05, 1);
        assert!(seq.iter().all(|s| s.len() <= 8));
        let total: usize = seq.iter().map(Vec::len).sum();
        assert_eq!(total % 64, 0);
        // About 0.05 x 2000 = 100 bursts.
        assert!((60..=140).contains(&(total / 64)), "{} bursts", total / 64);
    }

    #[test]
    fn credence_with_perfect_predictions_transmits_exactly_as_lqd() {
        // N = 8 divides B = 64 (when it does not, this can fail: the module docs' finding).
        let m = Model::new(8, 64);
        let seq = poisson_bursts(&m, 64, 5000, 0.05, 7);
        let lqd = m.run(&seq, &mut Lqd);
        let c = m.run(&seq, &mut m.credence(AnyOracle::Perfect(Perfect::new(lqd.dropped.clone()))));
        assert_eq!(c.transmitted, lqd.transmitted);
        assert_eq!(c.dropped, lqd.dropped, "the same packets are transmitted");
    }

    #[test]
    fn follow_lqd_lower_bound_of_observation_1() {
        for ports in [4, 8, 16] {
            let m = Model::new(ports, 8 * ports as u64);
            let seq = observation1(&m, 20_000);
            let r = ratio(&m.run(&seq, &mut Lqd), &m.run(&seq, &mut m.follow_lqd()));
            let bound = (ports as f64 + 1.0) / 2.0;
            println!("N = {ports:2}: LQD/FollowLQD = {r:.4}, (N+1)/2 = {bound}");
            assert!(r <= bound + 1e-9 && r >= 0.99 * bound, "N = {ports}: {r} vs {bound}");
        }
    }

    #[test]
    fn all_false_positives_starve_the_naive_policy_but_not_credence() {
        // §2.3.2, first pitfall: every prediction says "drop".
        let f = Figure14 { slots: 5000, ..Figure14::default() };
        let m = f.model;
        let seq = poisson_bursts(&m, m.buffer, f.slots, f.bursts_per_slot, f.seed);
        let lqd = m.run(&seq, &mut Lqd);
        let naive = CredenceOptions { safeguard: false, thresholds: false };
        assert_eq!(m.run(&seq, &mut m.credence_with(AnyOracle::AlwaysDrop, naive)).transmitted, 0);
        let mut credence = m.credence(AnyOracle::AlwaysDrop);
        let c = m.run(&seq, &mut credence);
        let r = ratio(&lqd, &c);
        // Every prediction is positive: TN = FN = 0, so Theorem 2's bound of η is infinite
        // and Theorem 1's ratio is N (Lemma 2, from the safeguard). LQD <= OPT, so
        // LQD/Credence <= N as well.
        let conf = Confusion::new(&lqd.dropped, &vec![true; lqd.dropped.len()]);
        assert!(conf.eta_bound(m.ports).is_infinite());
        println!("all false positives: LQD/Credence = {r:.3} (bound N = {})", m.ports);
        assert!(r <= m.ports as f64, "{r}");
        assert!(credence.stats().safeguard_accepts > 0);
    }

    #[test]
    fn one_false_negative_hurts_the_naive_policy_forever_but_not_credence() {
        // §2.3.2, second pitfall: perfect predictions except the one packet LQD pushes out.
        let m = Model::new(8, 64);
        let seq = one_false_negative(&m, 10_000);
        let lqd = m.run(&seq, &mut Lqd);
        assert_eq!(lqd.dropped.iter().filter(|d| **d).count(), 1, "LQD drops exactly one packet");
        let predicted = vec![false; lqd.dropped.len()];
        let conf = Confusion::new(&lqd.dropped, &predicted);
        assert_eq!((conf.fn_, conf.tp, conf.fp), (1, 0, 0));
        let oracle = || AnyOracle::Perfect(Perfect::new(predicted.clone()));
        let naive = CredenceOptions { safeguard: false, thresholds: false };
        let r_naive = ratio(&lqd, &m.run(&seq, &mut m.credence_with(oracle(), naive)));
        let r_credence = ratio(&lqd, &m.run(&seq, &mut m.credence(oracle())));
        let eta = conf.eta_bound(m.ports);
        println!("one false negative: naive {r_naive:.4}, Credence {r_credence:.6}, eta <= {eta:.6}");
        // The naive policy keeps a full buffer and sends one packet a slot instead of two.
        assert!(r_naive > 1.9, "{r_naive}");
        // Credence's thresholds drop the packets that would keep the buffer full, so it loses
        // next to nothing: within Theorem 2's bound of η here (Lemma 1's promise, which does not
        // hold on every input).
        assert!(r_credence < 1.001 && r_credence <= eta, "{r_credence} vs {eta}");
    }

    #[test]
    fn figure14_shape() {
        let run = figure14(&Figure14::default());
        let (fits, below) = (run.dt_ratio(DtRule::FitsUnder).unwrap(), run.dt_ratio(DtRule::Below).unwrap());
        println!("seed {}: LQD/DT = {fits:.4} (q+size<=alpha*free), {below:.4} (q<alpha*free)", run.seed);
        println!("   p   LQD/Credence");
        for (p, c) in &run.credence {
            println!("{p:4.1}   {c:12.4}");
        }
        let credence: Vec<f64> = run.credence.iter().map(|r| r.1).collect();
        assert!((credence[0] - 1.0).abs() < 1e-9, "perfect predictions: {}", credence[0]);
        for w in credence.windows(2) {
            assert!(w[1] >= w[0] - 0.02, "not non-decreasing: {credence:?}");
        }
        assert!(credence[10] > 2.0, "{credence:?}");
        // The classic rule lets each queue hold one packet more: DT loses less to LQD.
        assert!(below < fits, "{below} vs {fits}");
        for rule in DtRule::ALL {
            let dt = run.dt_ratio(rule).unwrap();
            for (p, c) in &run.credence {
                if *p <= 0.5 + 1e-9 {
                    assert!(*c < dt, "p = {p}: Credence {c} vs DT {dt} ({rule:?})");
                }
            }
            assert!(run.crossing(rule).unwrap() >= 0.5);
        }
    }

    #[test]
    fn spread_of_a_sample() {
        let s = Spread::of(&[1.0, 2.0, 3.0, 6.0]);
        assert_eq!((s.mean, s.min, s.max), (3.0, 1.0, 6.0));
        assert!((s.std - 3.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(format!("{s:.2}"), "3.00 ± 1.87 (1.00-6.00)");
    }

    #[test]
    fn figure14_over_seeds() {
        // The reproduction's seeds (`cargo run --release -p slacknet-sim --example
        // credence_figure14` prints the table the README quotes).
        let seeds: Vec<u64> = FIGURE14_SEEDS.collect();
        let runs = figure14_seeds(&Figure14::default(), &seeds);
        let mean_at = |i: usize| runs.iter().map(|r| r.credence[i].1).sum::<f64>() / runs.len() as f64;
        for rule in DtRule::ALL {
            let dt = Spread::of(&runs.iter().map(|r| r.dt_ratio(rule).unwrap()).collect::<Vec<_>>());
            let crossings: Vec<f64> = runs.iter().map(|r| r.crossing(rule).unwrap_or(-1.0)).collect();
            println!("DT {}: LQD/DT {dt}; crossing {:.2}", rule.formula(), Spread::of(&crossings));
            // Every seed: Credence beats DT at p = 0.5 and loses to it from p = 0.8.
            assert!(crossings.iter().all(|c| (0.5..0.75).contains(c)), "{rule:?}: {crossings:?}");
            // The paper's "better than DT up to 0.7" does not hold on the mean curves: at
            // p = 0.7 LQD/Credence averages 2.12, above LQD/DT under either rule (the README's
            // finding; if this starts to fail, the README must change with it).
            assert!(mean_at(6) < dt.mean && mean_at(7) > dt.mean, "{rule:?}: {} {} vs {dt}", mean_at(6), mean_at(7));
        }
        for r in &runs {
            assert_eq!(r.credence[0].1, 1.0, "seed {}: perfect predictions", r.seed);
            let (fits, below) = (r.dt_ratio(DtRule::FitsUnder).unwrap(), r.dt_ratio(DtRule::Below).unwrap());
            assert!(below <= fits, "seed {}: {below} > {fits}", r.seed);
        }
    }

    #[test]
    fn figure14_is_deterministic_per_seed_and_seeds_differ() {
        let cfg = Figure14 { slots: 5000, flip_probabilities: vec![0.0, 0.5], ..Figure14::default() };
        let a = figure14_seeds(&cfg, &[1, 2]);
        assert_eq!(a, figure14_seeds(&cfg, &[1, 2]));
        assert_eq!(a[1], figure14(&Figure14 { seed: 2, ..cfg.clone() }));
        assert_eq!((a[0].seed, a[1].seed), (1, 2));
        assert_ne!(a[0].credence[1], a[1].credence[1]);
        assert_eq!(a[0].dt.iter().map(|d| d.0).collect::<Vec<_>>(), DtRule::ALL);
    }

    #[test]
    fn crossing_is_the_largest_probability_still_below_dt() {
        let run = Figure14Run {
            seed: 0,
            credence: vec![(0.0, 1.0), (0.5, 1.9), (0.6, 2.1), (0.7, 1.95), (0.8, 2.5)],
            dt: vec![(DtRule::FitsUnder, 2.0), (DtRule::Below, 0.9)],
        };
        // Not where the curve first reaches DT: the largest p below it (0.7).
        assert_eq!(run.crossing(DtRule::FitsUnder), Some(0.7));
        assert_eq!(run.crossing(DtRule::Below), None);
        let no_below = Figure14Run { dt: vec![(DtRule::FitsUnder, 2.0)], ..run };
        assert_eq!(no_below.crossing(DtRule::Below), None);
    }

    #[test]
    fn a_learned_forest_is_a_useful_oracle() {
        // The forest scikit-learn trained on LQD's trace of another sequence (seed 14; the
        // `forest` unit tests check it evaluates as in Python), here on seed 16.
        let f = crate::credence::forest::Forest::from_json_str(crate::credence::forest::tests::SKLEARN_FOREST).unwrap();
        let cfg = Figure14::default();
        let m = cfg.model;
        let seq = poisson_bursts(&m, m.buffer, cfg.slots, cfg.bursts_per_slot, 16);
        let lqd = m.run(&seq, &mut Lqd);
        let dt = m.run(&seq, &mut DynamicThresholds::with_rule(vec![cfg.dt_alpha], DtRule::Below));
        let follow = m.run(&seq, &mut m.follow_lqd());
        let mut credence = m.credence(AnyOracle::Forest(std::sync::Arc::new(f), Default::default()));
        let c = m.run(&seq, &mut credence);
        let (r_c, r_dt, r_f) = (ratio(&lqd, &c), ratio(&lqd, &dt), ratio(&lqd, &follow));
        println!("learned forest: LQD/Credence {r_c:.4}, LQD/FollowLQD {r_f:.4}, LQD/DT {r_dt:.4}; {:?}", credence.stats());
        assert!(r_c < r_dt, "Credence {r_c} vs DT {r_dt}");
        assert!(r_c <= m.ports as f64);
    }

    #[test]
    fn figure14_runs_respect_theorem_2_and_lemma_2() {
        // On Figure 14's sequence (10 000 slots): η as Definition 1 defines it stays within
        // Theorem 2's bound, and LQD/Credence within N (Lemma 2, as LQD <= OPT). Lemma 1
        // (LQD/Credence <= η) is printed, not asserted: it does not hold on every input
        // (`perfect_predictions_lose_to_lqd_when_n_does_not_divide_b`).
        let cfg = Figure14 { slots: 10_000, ..Figure14::default() };
        let m = cfg.model;
        let seq = poisson_bursts(&m, m.buffer, cfg.slots, cfg.bursts_per_slot, cfg.seed);
        let lqd = m.run(&seq, &mut Lqd);
        let record: std::sync::Arc<[bool]> = lqd.dropped.clone().into();
        for (i, p) in [0.0, 0.001, 0.01, 0.1, 0.5, 1.0].into_iter().enumerate() {
            let predicted = predictions(&mut flip_oracle(&record, p, i as u64), record.len());
            let c = m.run(&seq, &mut m.credence(flip_oracle(&record, p, i as u64)));
            let r = ratio(&lqd, &c);
            let eta = eta(&m, &seq, &predicted);
            let bound = Confusion::new(&lqd.dropped, &predicted).eta_bound(m.ports);
            println!("p = {p:5}: LQD/Credence = {r:.6}, η = {eta:.6} <= {bound:.6}");
            assert!(eta <= bound + 1e-9, "p = {p}: Theorem 2: η {eta} > {bound}");
            assert!(r <= m.ports as f64, "p = {p}: Lemma 2: {r} > N");
        }
    }
}
