//! Open-loop traffic generators: Poisson flow arrivals, incast queries and fixed lists of
//! transfers (flow-list files, inline flows). They never react to completions.
//!
//! Each generator keeps one pending arrival per source (per host for Poisson, per receiver for
//! incast) in a small min-heap on `(time, source)` and sleeps until the earliest, so memory
//! follows the sources, not the flows ever generated. Draws happen in exactly the order of the
//! eager generator they replaced (per source: inter-arrival time, then size and destination),
//! from the same seeded streams, so a scenario yields the same flows, in the same order, as
//! before the application layer (pinned by `tests/golden.rs`).
//!
//! INVARIANT: within a generator, transfers start in `(start, source, draw order)` order;
//! every transfer has `src != dst` and `size >= 1`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;
use rand_pcg::Pcg64;
use units::{Time, PS_PER_US};

use super::{AppCtx, Application, TransferReq};
use crate::spec::{Destinations, IncastSenders};
use crate::topo::Topology;
use crate::workload::{derangement, exp_sample, pick_other, pick_other_leaf, Cdf, FlowSpec};
use crate::rng::{Stream, Streams};

/// A generator's priority class over time (a workload entry's `prio` and `prio_schedule`):
/// a transfer takes the class in force at its start time, and keeps it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrioSchedule {
    /// The class before the first change.
    base: u8,
    /// `(from, class)`, sorted by `from`.
    changes: Vec<(Time, u8)>,
}

impl PrioSchedule {
    /// `base` until the first of `changes` (`(t_us, class)`, validated: finite, non-negative,
    /// strictly increasing), then each change's class from its time on.
    pub fn new(base: u8, changes: &[(f64, u8)]) -> PrioSchedule {
        let changes: Vec<(Time, u8)> =
            changes.iter().map(|&(us, p)| (Time::from_ps((us * PS_PER_US as f64).round() as u64), p)).collect();
        // PRECONDITION: validated times are strictly increasing (rounding to ps keeps the order).
        debug_assert!(changes.windows(2).all(|w| w[0].0 <= w[1].0));
        PrioSchedule { base, changes }
    }

    /// The class of a transfer starting at `t`.
    pub fn at(&self, t: Time) -> u8 {
        match self.changes.partition_point(|&(from, _)| from <= t) {
            0 => self.base,
            i => self.changes[i - 1].1,
        }
    }
}

/// Where a Poisson source sends.
#[derive(Clone, Debug)]
enum DestPick {
    Uniform,
    OtherLeaf { leaf_of_host: Vec<u32>, hosts_per_leaf: u32, num_leaves: u32 },
    Permutation(Vec<u32>),
}

/// Poisson flow arrivals at every host with sizes from a CDF.
#[derive(Clone, Debug)]
pub struct PoissonGen {
    dist: Cdf,
    rate_per_s: f64,
    t1: f64,
    prio: PrioSchedule,
    num_hosts: u32,
    dests: DestPick,
    rngs: Vec<Pcg64>,
    /// Next arrival time of each host, seconds (already drawn).
    next_t: Vec<f64>,
    heap: BinaryHeap<Reverse<(Time, u32)>>,
}

impl PoissonGen {
    /// Arrivals at `rate_per_s` per host in `[start_s, end_s)`, sizes from `dist`, each in the
    /// class `prio` gives at its start.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        streams: &Streams,
        workload: usize,
        topo: &Topology,
        dist: Cdf,
        rate_per_s: f64,
        dests: Destinations,
        start_s: f64,
        end_s: f64,
        prio: PrioSchedule,
    ) -> PoissonGen {
        let n = topo.num_hosts;
        let mut perm_rng = streams.rng(Stream::PoissonDestinations { workload });
        let dests = match dests {
            Destinations::Uniform => DestPick::Uniform,
            Destinations::OtherLeaf => DestPick::OtherLeaf {
                leaf_of_host: topo.leaf_of_host.clone(),
                hosts_per_leaf: topo.hosts_per_leaf,
                num_leaves: topo.num_leaves,
            },
            Destinations::Permutation => DestPick::Permutation(derangement(n, &mut perm_rng)),
        };
        let mut rngs = Vec::with_capacity(n as usize);
        let mut next_t = Vec::with_capacity(n as usize);
        let mut heap = BinaryHeap::with_capacity(n as usize);
        for src in 0..n {
            // One stream per source host: adding hosts does not reshuffle the others' flows.
            let mut r = streams.rng(Stream::PoissonHost { workload, host: src });
            let t = start_s + exp_sample(&mut r, rate_per_s);
            if t < end_s {
                heap.push(Reverse((Time::from_secs_f64(t), src)));
            }
            rngs.push(r);
            next_t.push(t);
        }
        PoissonGen { dist, rate_per_s, t1: end_s, prio, num_hosts: n, dests, rngs, next_t, heap }
    }

    /// The end of the arrival window.
    fn end(&self) -> Option<Time> {
        Some(Time::from_secs_f64(self.t1))
    }

    fn pick_dst(&mut self, src: u32) -> u32 {
        let r = &mut self.rngs[src as usize];
        match &self.dests {
            DestPick::Permutation(p) => p[src as usize],
            DestPick::OtherLeaf { leaf_of_host, hosts_per_leaf, num_leaves } => {
                pick_other_leaf(r, leaf_of_host, *hosts_per_leaf, *num_leaves, self.num_hosts, src)
            }
            DestPick::Uniform => pick_other(r, self.num_hosts, src),
        }
    }

    /// The next transfer due at or before `now`, if any (advances the generator).
    pub(crate) fn next_due(&mut self, now: Time) -> Option<(Time, TransferReq)> {
        let &Reverse((t, src)) = self.heap.peek()?;
        if t > now {
            return None;
        }
        self.heap.pop();
        let s = src as usize;
        let u: f64 = self.rngs[s].gen();
        let size = self.dist.sample(u).round().max(1.0) as u64;
        let dst = self.pick_dst(src);
        let next = self.next_t[s] + exp_sample(&mut self.rngs[s], self.rate_per_s);
        self.next_t[s] = next;
        if next < self.t1 {
            self.heap.push(Reverse((Time::from_secs_f64(next), src)));
        }
        Some((t, TransferReq { prio: self.prio.at(t), ..TransferReq::new(src, dst, size) }))
    }

    /// When the next transfer is due, if ever.
    pub(crate) fn next_time(&self) -> Option<Time> {
        self.heap.peek().map(|r| r.0 .0)
    }
}

/// The `Application` of an open-loop generator: at the start and at every alarm, start every
/// transfer that is due (in the generator's order) and sleep until the next one. Generators
/// only make valid transfers (validated scenario), so a refusal would be a bug: it is dropped
/// rather than panicking.
macro_rules! open_loop_app {
    ($($gen:ty),*) => {$(
        impl Application for $gen {
            fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
                self.on_timer(ctx);
            }
            fn on_timer(&mut self, ctx: &mut AppCtx<'_>) {
                while let Some((_, req)) = self.next_due(ctx.now()) {
                    let started = ctx.start_transfer(req);
                    debug_assert!(started.is_ok(), "{started:?}");
                }
                match self.next_time() {
                    Some(t) => ctx.sleep_until(t),
                    None => ctx.cancel_sleep(),
                }
            }
            fn horizon(&self) -> Option<Time> {
                self.end()
            }
            fn is_open_loop(&self) -> bool {
                true
            }
        }
    )*};
}

open_loop_app!(PoissonGen, IncastGen, ListGen);


/// Incast queries: at every receiver a Poisson process of queries, each answered at once by
/// `fan_in` distinct senders with `per_sender` bytes.
#[derive(Clone, Debug)]
pub struct IncastGen {
    rate_per_s: f64,
    t1: f64,
    fan_in: u32,
    per_sender: u64,
    prio: PrioSchedule,
    rngs: Vec<Pcg64>,
    pools: Vec<Vec<u32>>,
    next_t: Vec<f64>,
    heap: BinaryHeap<Reverse<(Time, u32)>>,
    /// Senders of the query being emitted: `(dst, next index into its pool)`.
    emitting: Option<(u32, u32)>,
}

impl IncastGen {
    /// Queries at `rate_per_s` per receiver in `[start_s, end_s)`, each query's responses in
    /// the class `prio` gives at its time. Errors if a receiver has fewer than `fan_in`
    /// possible senders.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        streams: &Streams,
        workload: usize,
        topo: &Topology,
        rate_per_s: f64,
        fan_in: u32,
        per_sender: u64,
        senders: IncastSenders,
        start_s: f64,
        end_s: f64,
        prio: PrioSchedule,
    ) -> Result<IncastGen, String> {
        let n = topo.num_hosts;
        let mut g = IncastGen {
            rate_per_s,
            t1: end_s,
            fan_in,
            per_sender,
            prio,
            rngs: Vec::with_capacity(n as usize),
            pools: Vec::with_capacity(n as usize),
            next_t: Vec::with_capacity(n as usize),
            heap: BinaryHeap::new(),
            emitting: None,
        };
        for dst in 0..n {
            let candidates: Vec<u32> = match senders {
                IncastSenders::Random => (0..n).filter(|&h| h != dst).collect(),
                IncastSenders::OtherLeaf => {
                    let leaf = topo.leaf_of_host[dst as usize];
                    (0..n).filter(|&h| topo.leaf_of_host[h as usize] != leaf).collect()
                }
            };
            if (candidates.len() as u64) < fan_in as u64 {
                return Err(format!(
                    "fan_in = {fan_in} but only {} hosts can answer a query to host {dst}",
                    candidates.len()
                ));
            }
            let mut r = streams.rng(Stream::IncastReceiver { workload, host: dst });
            let t = start_s + exp_sample(&mut r, rate_per_s);
            if t < end_s {
                g.heap.push(Reverse((Time::from_secs_f64(t), dst)));
            }
            g.rngs.push(r);
            g.pools.push(candidates);
            g.next_t.push(t);
        }
        Ok(g)
    }

    /// The end of the query window.
    fn end(&self) -> Option<Time> {
        Some(Time::from_secs_f64(self.t1))
    }

    /// The next transfer due at or before `now`, if any.
    pub(crate) fn next_due(&mut self, now: Time) -> Option<(Time, TransferReq)> {
        if self.emitting.is_none() {
            let &Reverse((t, dst)) = self.heap.peek()?;
            if t > now {
                return None;
            }
            let d = dst as usize;
            // Partial Fisher-Yates: the first fan_in entries become a uniform sample.
            let (r, pool) = (&mut self.rngs[d], &mut self.pools[d]);
            for i in 0..self.fan_in as usize {
                let j = r.gen_range(i..pool.len());
                pool.swap(i, j);
            }
            self.emitting = Some((dst, 0));
        }
        let (dst, i) = self.emitting?;
        let Reverse((t, _)) = *self.heap.peek()?;
        let src = self.pools[dst as usize][i as usize];
        if i + 1 < self.fan_in {
            self.emitting = Some((dst, i + 1));
        } else {
            // The query is out: draw the receiver's next one.
            self.emitting = None;
            self.heap.pop();
            let d = dst as usize;
            let next = self.next_t[d] + exp_sample(&mut self.rngs[d], self.rate_per_s);
            self.next_t[d] = next;
            if next < self.t1 {
                self.heap.push(Reverse((Time::from_secs_f64(next), dst)));
            }
        }
        Some((t, TransferReq { prio: self.prio.at(t), incast: true, ..TransferReq::new(src, dst, self.per_sender) }))
    }

    /// When the next transfer is due, if ever.
    pub(crate) fn next_time(&self) -> Option<Time> {
        self.heap.peek().map(|r| r.0 .0)
    }
}


/// A fixed list of transfers (a flow-list file or inline flows), started at their times.
#[derive(Clone, Debug)]
pub struct ListGen {
    /// Sorted by start (stable: equal starts keep list order).
    flows: Vec<FlowSpec>,
    next: usize,
    keep_labels: bool,
}

impl ListGen {
    /// Start `flows` at their start times. With `keep_labels`, records carry each flow's own
    /// id (a flow list replayed alone keeps the file's ids).
    pub fn new(mut flows: Vec<FlowSpec>, keep_labels: bool) -> ListGen {
        flows.sort_by_key(|f| f.start);
        ListGen { flows, next: 0, keep_labels }
    }

    /// The next transfer due at or before `now`, if any.
    pub(crate) fn next_due(&mut self, now: Time) -> Option<(Time, TransferReq)> {
        let f = self.flows.get(self.next).filter(|f| f.start <= now)?;
        self.next += 1;
        let req = TransferReq {
            prio: f.prio,
            incast: f.incast,
            label: self.keep_labels.then_some(f.id),
            ..TransferReq::new(f.src, f.dst, f.size)
        };
        Some((f.start, req))
    }

    /// When the next transfer is due, if ever.
    pub(crate) fn next_time(&self) -> Option<Time> {
        self.flows.get(self.next).map(|f| f.start)
    }

    /// The last start time.
    fn end(&self) -> Option<Time> {
        self.flows.last().map(|f| f.start)
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prio_schedule_changes_class_at_each_time_inclusive() {
        let s = PrioSchedule::new(4, &[(100.0, 3), (590.5, 2)]);
        let at_ps = |ps: u64| s.at(Time::from_ps(ps));
        assert_eq!(at_ps(0), 4);
        assert_eq!(at_ps(99_999_999), 4, "before the first change: prio");
        assert_eq!(at_ps(100_000_000), 3, "a change applies from its time on");
        assert_eq!(at_ps(590_499_999), 3);
        assert_eq!(at_ps(590_500_000), 2);
        assert_eq!(at_ps(u64::MAX), 2);
        assert_eq!(PrioSchedule::new(7, &[]).at(Time::from_ps(1)), 7);
        assert_eq!(PrioSchedule::new(7, &[(0.0, 1)]).at(Time::ZERO), 1);
    }
}
