//! PFP's fast path (per-flow priority, smallest remaining flow first, each flow in that order
//! getting all its two ports have left): the reference model of [`super`] (`Engine::allocate`'s
//! PFP branch), with the allocation repaired where an event changed it instead of recomputed.
//!
//! - **Pair heads.** Of the live flows between two ports, only the one first in PFP's order
//!   (bytes left, then id), the pair's head, can get a rate: the reference visits it before
//!   the others, and it either gets a rate, which fills its egress or its ingress, or gets
//!   none because one of them is full; either way the others get nothing. So the others'
//!   bytes never change and they wait in a heap per pair, and the allocation is the greedy
//!   one over the heads alone.
//! - **Grants depend on little.** A head's grant is `min(free egress, free ingress)` at its
//!   turn, and a port's free capacity at a head's turn is its capacity less the grants of the
//!   heads before it on that port. So each port keeps its heads with a rate (`granted`, by
//!   key: few, one on a uniform fabric, where every grant fills both its ports) and, for each
//!   head without one, one port that was full at its turn (`watchers`: the head stays at zero
//!   as long as that port stays full there, whatever its other port does).
//! - **What an event changes.** Between events only the heads with a rate move (their bytes
//!   shrink), so they only move forward in the order. Moving a head with a rate ahead of one
//!   without changes no grant (the one without stays blocked: its port only gets fuller), so
//!   the allocation changes only where a head appears (an arrival, the next flow of a pair
//!   whose head finished), disappears (finished, or pushed back by a smaller arrival), or
//!   where two heads with a rate swap on a shared port (unequal rates; never on a uniform
//!   fabric). Each such change is a change of a port's grants from one key on.
//! - **The repair** is a sweep in PFP's order over only what can change (`sweep`): a task
//!   queue by key holds heads to recompute and per-port cursors. A change of port `p` at key
//!   `x` queues `p`'s heads with a rate after `x` and a cursor that wakes `p`'s watchers after
//!   `x` one by one, in order, while `p` has capacity left at their turn (once it has none, it
//!   has none for every later head: grants are never negative). A woken watcher takes the
//!   port, or its other port is full at its turn and it watches that one instead. A
//!   recomputed head whose grant changed changes its two ports at its key, and so on. The
//!   sweep takes tasks least key first and every task it queues is at a later key, so when it
//!   reaches a head, every grant before it is final: the grant it computes is the reference's.
//!
//! CORRECTNESS: exact, bit for bit. A grant is computed from the same capacities with the same
//! subtractions in the same order as the reference's (each port's earlier grants in PFP's
//! order), flows advance by `rem -= rate * dt` at every event as in the reference, and the
//! event's flow is chosen with the reference's tie-break (the first in PFP's order). The
//! tests compare outcomes for equality with the reference on uniform and unequal fabrics
//! (`tests`), and a debug build recomputes the whole greedy allocation at every event and
//! compares every head's rate bit for bit (`check`). On the whole FB2010 trace (the ignored
//! `fast::tests::fast_matches_reference_on_whole_fb2010`): the reference's 275,156 events and
//! every coflow's and flow's finish identical (the reference on the tripled trace moves coflow
//! finishes by up to 2.5e-2 of the clock).
//!
//! Cost: an event costs O(heads with a rate) to advance them and find the next event (at most
//! one per port on a uniform fabric), plus O(log n + n) per head recomputed (a search and an
//! insertion in a sorted list of at most `n` entries) and O(log) per task. On FB2010 (150
//! ports, 275,156 events), counted once: 124 heads with a rate per event on average, 34 heads
//! recomputed per event (29 of them watchers woken by a cursor, 30 moving to their other
//! port's list) and 6.6 grants changed. Memory: per flow a flag and a watched port, per pair a
//! head and a heap, per port two lists of at most `n` heads. `c_load`, `c_cnt`, `c_qsum` and
//! `r_live` are not kept up to date here: PFP does not read them.
//!
//! PERF: measured on FB2010 (`coflow_bench <trace> - pfp`, release, CPU seconds on a shared
//! 2-core machine, load 4 to 11, alternating runs of both binaries): 9.3-10.0 s before this
//! module (`fast`:
//! every head that ran refiled and every free egress port's heads walked at every event),
//! 1.6-1.75 s here, the same events and CCTs. Where it goes now (`perf`): recomputing heads
//! 24% (mostly finding a moved watcher's place in its other port's list), shifting list
//! entries (`memmove`) 10%, ports' free capacity at a turn 9%, the task heap 8%, the two
//! passes per event over the heads with a rate about 10%.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Engine, DONE_TOL};

/// A flow's place in PFP's order, (bytes left, id), as one integer: the bytes' bits mapped so
/// that integers compare as `f64::total_cmp` (the reference's sort), then the id.
/// PERF: comparing keys is most of the work of the sorted lists and the task heap; as
/// `(OrdF64, u32)` pairs, `total_cmp` alone took 18% of the time on FB2010.
type Key = u128;

/// The key of flow `f` with `rem` bytes left.
fn key_of(rem: f64, f: u32) -> Key {
    let b = rem.to_bits();
    // As `f64::total_cmp`: negative values' bits reversed, positive ones' above them.
    let b = b ^ (((b as i64 >> 63) as u64) | 1 << 63);
    ((b as u128) << 32) | f as u128
}

/// The flow of key `k`.
fn flow_of(k: Key) -> u32 {
    k as u32
}

const NIL: u32 = u32::MAX;

/// The state of PFP's fast path. Ports are numbered as in `c_ports`: egress `p`, ingress
/// `n + p`.
#[derive(Debug, Default)]
pub(super) struct State {
    /// Per port pair `src * n + dst`: its head (`NIL` if it has no live flow) and its other
    /// live flows by key (their bytes do not change: only heads run).
    head: Vec<u32>,
    rest: Vec<BinaryHeap<Reverse<Key>>>,
    /// Per port: the heads with a rate that use it, by key.
    /// INVARIANT: between sweeps, each head's `f_rate` is the port's capacity less the
    /// grants before it on the port (in this order), min'd with the same at its other port.
    granted: Vec<Vec<u32>>,
    /// Per port: the heads without a rate whose turn finds this port full, by key.
    /// INVARIANT: between sweeps, every head without a rate is in exactly one of these, of a
    /// port that is full at its turn.
    watchers: Vec<Vec<Key>>,
    /// Per flow: the port whose `watchers` holds it (`NIL` if none).
    watch: Vec<u32>,
    /// Per flow: whether a recomputation of it is in `tasks`.
    is_queued: Vec<bool>,
    /// Per port: the watcher its cursor will look at next, if it has a cursor.
    cursor: Vec<Option<Key>>,
    /// The sweep's tasks, least key first: (key, `NIL`) recomputes the key's flow, (key, port)
    /// is the port's cursor at the watcher with that key.
    tasks: BinaryHeap<Reverse<(Key, u32)>>,
    /// How many ports have more than one head in `granted`.
    num_shared: usize,
    /// Scratch: the heads finishing at this event.
    done: Vec<u32>,
}

impl Engine<'_> {
    /// The event loop of PFP's fast path: the reference loop, with the allocation repaired
    /// where the event changed it.
    pub(super) fn simulate_pfp(&mut self) {
        let (n, num_f) = (self.n, self.f_src.len());
        self.pfp = State {
            head: vec![NIL; n * n],
            rest: vec![BinaryHeap::new(); n * n],
            granted: vec![Vec::new(); 2 * n],
            watchers: vec![Vec::new(); 2 * n],
            watch: vec![NIL; num_f],
            is_queued: vec![false; num_f],
            cursor: vec![None; 2 * n],
            ..State::default()
        };
        let num_c = self.c_id.len();
        let mut next = 0;
        while self.begin_event(&mut next, |e, c| e.pfp_admit(c as u32)) {
            self.sweep();
            // The next event: an arrival or a head's finish. CORRECTNESS: on a tie, the
            // reference takes the first in its running list, which is in PFP's order.
            // PERF: one pass drops the heads that lost their rate and finds the next event.
            let mut dt = if next < num_c { self.c_arrival[next] - self.now } else { f64::INFINITY };
            let mut first: Option<u32> = None;
            let mut running = std::mem::take(&mut self.running);
            let mut kept = 0;
            for k in 0..running.len() {
                let f = running[k];
                let rate = self.f_rate[f as usize];
                if rate > 0.0 {
                    running[kept] = f;
                    kept += 1;
                    let t = self.f_rem[f as usize] / rate;
                    if t < dt || (t == dt && first.is_some_and(|g| self.key(f) < self.key(g))) {
                        dt = t;
                        first = Some(f);
                    }
                }
            }
            running.truncate(kept);
            self.running = running;
            #[cfg(debug_assertions)]
            self.check();
            assert!(dt.is_finite(), "pfp: coflows are active but nothing progresses at t = {} s", self.now);
            // Advance, and collect the heads with (almost) nothing left, as the reference's
            // `complete_flows`.
            self.now += dt;
            let mut done = std::mem::take(&mut self.pfp.done);
            done.clear();
            for &f in &self.running {
                let f = f as usize;
                self.f_rem[f] -= self.f_rate[f] * dt;
                if Some(f as u32) == first {
                    self.f_rem[f] = 0.0;
                }
                if self.f_rem[f] <= self.f_size[f] * DONE_TOL {
                    done.push(f as u32);
                }
            }
            self.pfp.done = done;
            self.pfp_complete();
        }
    }

    /// Flow `f`'s place in PFP's order now.
    fn key(&self, f: u32) -> Key {
        key_of(self.f_rem[f as usize], f)
    }

    /// The pair of flow `f`, and its two ports.
    fn pair_ports(&self, f: u32) -> (usize, usize, usize) {
        let (s, d) = (self.f_src[f as usize] as usize, self.f_dst[f as usize] as usize);
        (s * self.n + d, s, self.n + d)
    }

    /// Files coflow `c`'s flows under their pairs; a flow that becomes its pair's head is
    /// queued for its grant, and the head it replaces is unfiled.
    fn pfp_admit(&mut self, c: u32) {
        for f in self.c_first[c as usize]..self.c_first[c as usize + 1] {
            let (p, _, _) = self.pair_ports(f);
            let key = self.key(f);
            let h = self.pfp.head[p];
            if h != NIL && key > self.key(h) {
                self.pfp.rest[p].push(Reverse(key));
                continue;
            }
            if h != NIL {
                self.unfile(h);
                let old = self.key(h);
                self.pfp.rest[p].push(Reverse(old));
            }
            self.pfp.head[p] = f;
            self.queue_recompute(f);
        }
    }

    /// Takes head `h` out of `granted` (its ports change from its key on) or `watchers`.
    fn unfile(&mut self, h: u32) {
        let (_, s, d) = self.pair_ports(h);
        if self.f_rate[h as usize] > 0.0 {
            // Linear search: the lists are short, and may be out of order until `pfp_complete`
            // has sorted them. CORRECTNESS: `cursor_from`'s look at such a port is then exact
            // up to the first place that changed (the lists agree before it, and every later
            // head's key is above it), and `pfp_complete` wakes the watchers from there on.
            for q in [s, d] {
                let at = self.pfp.granted[q].iter().position(|&g| g == h).expect("a head with a rate is granted");
                self.ungrant(q, at);
            }
            self.f_rate[h as usize] = 0.0;
            let key = self.key(h);
            self.port_changed(s, key);
            self.port_changed(d, key);
        } else {
            self.unwatch(h);
        }
    }

    /// Takes head `h` out of the `watchers` list it is in, if any.
    fn unwatch(&mut self, h: u32) {
        let w = std::mem::replace(&mut self.pfp.watch[h as usize], NIL);
        if w != NIL {
            let key = self.key(h);
            let ws = &mut self.pfp.watchers[w as usize];
            let at = ws.binary_search(&key).expect("a watcher is in its port's list");
            ws.remove(at);
        }
    }

    /// Queues head `h`'s grant for recomputation.
    fn queue_recompute(&mut self, h: u32) {
        if !std::mem::replace(&mut self.pfp.is_queued[h as usize], true) {
            let key = self.key(h);
            self.pfp.tasks.push(Reverse((key, NIL)));
        }
    }

    /// Port `q`'s grants changed at key `x`: what comes after it there may change. Its heads
    /// with a rate after `x` are queued, and its cursor set to its first watcher after `x`
    /// (unless it already is at an earlier one, which will get there).
    fn port_changed(&mut self, q: usize, x: Key) {
        for k in 0..self.pfp.granted[q].len() {
            let g = self.pfp.granted[q][k];
            if self.key(g) > x {
                self.queue_recompute(g);
            }
        }
        self.cursor_from(q, x);
    }

    /// Points port `q`'s cursor at its first watcher after `x`, if that is earlier than
    /// where it points and `q` has room at its turn.
    ///
    /// PERF: most changes leave the port full at its next watcher's turn, and a cursor that
    /// would stop at once is not queued. CORRECTNESS: the grants before that watcher that are
    /// not final yet are queued, and one that changes changes `q` again, before the watcher.
    fn cursor_from(&mut self, q: usize, x: Key) {
        let ws = &self.pfp.watchers[q];
        let at = ws.partition_point(|&k| k <= x);
        if let Some(&w) = ws.get(at) {
            if self.pfp.cursor[q].is_none_or(|c| w < c) && self.free_at(q, w) > self.res.eps {
                self.pfp.cursor[q] = Some(w);
                self.pfp.tasks.push(Reverse((w, q as u32)));
            }
        }
    }

    /// Port `q`'s free capacity at the turn of the head with key `x`: its capacity less the
    /// grants before it, subtracted in order as the reference's `Residual::take` does.
    fn free_at(&self, q: usize, x: Key) -> f64 {
        let mut free = self.cap(q);
        for &g in &self.pfp.granted[q] {
            if self.key(g) >= x {
                break;
            }
            free -= self.f_rate[g as usize];
        }
        free
    }

    /// Runs the queued tasks in PFP's order. POSTCONDITION: the grants are the reference's
    /// (`granted`'s and `watchers`' invariants hold), and `running` holds every head with a
    /// rate (and possibly heads that lost theirs, for the caller to drop).
    fn sweep(&mut self) {
        while let Some(Reverse((key, tag))) = self.pfp.tasks.pop() {
            let f = flow_of(key);
            if tag == NIL {
                self.pfp.is_queued[f as usize] = false;
                let (p, _, _) = self.pair_ports(f);
                // Queued, then finished or pushed back by an arrival: no longer a head.
                if self.pfp.head[p] == f {
                    self.recompute(f);
                }
                continue;
            }
            let q = tag as usize;
            if self.pfp.cursor[q] != Some(key) {
                continue; // superseded by an earlier cursor, which has passed here
            }
            self.pfp.cursor[q] = None;
            self.walk(q, key);
        }
    }

    /// Port `q`'s cursor, at its watcher with key `x`: wakes its watchers from there in order
    /// while `q` has room at their turn.
    ///
    /// PERF: walks on without going through `tasks` while no task comes first, and takes the
    /// watchers it passes out of the list at once at the end (each leaves `q`: it gets a
    /// rate, or its other port is full and it watches that).
    fn walk(&mut self, q: usize, x: Key) {
        let eps = self.res.eps;
        let start = self.pfp.watchers[q].partition_point(|&k| k < x);
        let mut at = start;
        while let Some(&w) = self.pfp.watchers[q].get(at) {
            // CORRECTNESS: later grants on `q` only take more, so a port full here is full for
            // every later watcher: the cursor stops. (A grant before `w` that is not final yet
            // is queued; if it changes, `q` changes again, before `w`.)
            if self.free_at(q, w) <= eps {
                break;
            }
            if self.pfp.tasks.peek().is_some_and(|Reverse((k, _))| *k < w) {
                // Keep the sweep in order: the cursor waits for the earlier task.
                self.pfp.cursor[q] = Some(w);
                self.pfp.tasks.push(Reverse((w, q as u32)));
                break;
            }
            debug_assert_eq!(self.pfp.watch[flow_of(w) as usize], q as u32);
            self.pfp.watch[flow_of(w) as usize] = NIL; // taken out of the list below
            self.recompute(flow_of(w));
            debug_assert_ne!(self.pfp.watch[flow_of(w) as usize], q as u32, "q has room at its turn");
            at += 1;
            if self.pfp.cursor[q].is_some() {
                break; // `w` took `q` and set the cursor on past it
            }
        }
        self.pfp.watchers[q].drain(start..at);
    }

    /// Recomputes head `h`'s grant as the reference's `greedy` at its turn; if it changed,
    /// its ports change at its key. A head left without a rate watches a port full at its turn.
    fn recompute(&mut self, h: u32) {
        let eps = self.res.eps;
        let (_, s, d) = self.pair_ports(h);
        let key = self.key(h);
        let (fs, fd) = (self.free_at(s, key), self.free_at(d, key));
        // As `Residual::headroom`.
        let room = fs.min(fd);
        let new = if room <= eps { 0.0 } else { room };
        let old = self.f_rate[h as usize];
        if new != old {
            if old == 0.0 {
                self.unwatch(h);
                for q in [s, d] {
                    let at = self.granted_position(q, key);
                    self.pfp.granted[q].insert(at, h);
                    self.pfp.num_shared += usize::from(self.pfp.granted[q].len() == 2);
                }
                self.running.push(h);
            } else if new == 0.0 {
                for q in [s, d] {
                    let at = self.granted_position(q, key);
                    debug_assert_eq!(self.pfp.granted[q][at], h);
                    self.ungrant(q, at);
                }
            }
            self.f_rate[h as usize] = new;
            self.port_changed(s, key);
            self.port_changed(d, key);
        }
        if new == 0.0 {
            let w = self.pfp.watch[h as usize] as usize;
            let still_full = (w == s && fs <= eps) || (w == d && fd <= eps);
            if !still_full {
                self.unwatch(h);
                let q = if fs <= eps { s } else { d };
                let ws = &mut self.pfp.watchers[q];
                let at = ws.partition_point(|&k| k < key);
                ws.insert(at, key);
                self.pfp.watch[h as usize] = q as u32;
            }
        }
    }

    /// Takes the head at index `at` out of port `q`'s `granted`.
    fn ungrant(&mut self, q: usize, at: usize) {
        self.pfp.granted[q].remove(at);
        self.pfp.num_shared -= usize::from(self.pfp.granted[q].len() == 1);
    }

    /// Where the head with key `x` is (or goes) in port `q`'s `granted`.
    fn granted_position(&self, q: usize, x: Key) -> usize {
        self.pfp.granted[q].partition_point(|&g| self.key(g) < x)
    }

    /// Finishes the heads in `done`, and queues what that changes: their ports from their keys
    /// on, their pairs' next flows. Then puts each port's `granted` back in order (heads with
    /// unequal rates may have swapped).
    fn pfp_complete(&mut self) {
        let done = std::mem::take(&mut self.pfp.done);
        let mut any_coflow = false;
        for &f in &done {
            let (p, _, _) = self.pair_ports(f);
            self.unfile(f);
            let f = f as usize;
            self.f_rem[f] = 0.0;
            self.f_finish[f] = self.now;
            let c = self.f_coflow[f] as usize;
            self.c_num_left[c] -= 1;
            if self.c_num_left[c] == 0 {
                self.c_finish[c] = self.now;
                any_coflow = true;
            }
            let h = self.pfp.rest[p].pop().map_or(NIL, |Reverse(k)| flow_of(k));
            self.pfp.head[p] = h;
            if h != NIL {
                self.queue_recompute(h);
            }
        }
        self.pfp.done = done;
        if any_coflow {
            let left = &self.c_num_left;
            self.active.retain(|&c| left[c as usize] > 0);
        }
        // Ports shared by heads with a rate: still in order? PERF: on a uniform fabric every
        // grant fills both its ports, no port is shared, and this is skipped.
        if self.pfp.num_shared == 0 {
            return;
        }
        for q in 0..2 * self.n {
            if self.pfp.granted[q].len() < 2 {
                continue;
            }
            let mut list = std::mem::take(&mut self.pfp.granted[q]);
            let is_sorted = list.windows(2).all(|w| self.key(w[0]) < self.key(w[1]));
            if !is_sorted {
                let old = list.clone();
                list.sort_unstable_by_key(|&g| self.key(g));
                // From the first head whose place changed, the grants on `q` may change.
                let at = old.iter().zip(&list).position(|(a, b)| a != b).expect("unsorted, so a place changed");
                let x = self.key(list[at]);
                self.pfp.granted[q] = list;
                for k in at..self.pfp.granted[q].len() {
                    let g = self.pfp.granted[q][k];
                    self.queue_recompute(g);
                }
                self.cursor_from(q, x);
            } else {
                self.pfp.granted[q] = list;
            }
        }
    }

    /// Debug builds: the allocation recomputed from scratch (the reference's greedy over every
    /// head in PFP's order) is the one the sweep left, bit for bit, and the lists are
    /// consistent with it.
    #[cfg(debug_assertions)]
    fn check(&mut self) {
        let n = self.n;
        let mut heads: Vec<u32> = self.pfp.head.iter().copied().filter(|&h| h != NIL).collect();
        heads.sort_unstable_by_key(|&h| self.key(h));
        self.res.reset(self.fabric);
        let mut num_zero = 0;
        for &h in &heads {
            let (s, d) = (self.f_src[h as usize], self.f_dst[h as usize]);
            let room = self.res.headroom(s, d);
            assert_eq!(self.f_rate[h as usize].to_bits(), room.to_bits(), "pfp: head {h} at t = {}", self.now);
            if room > 0.0 {
                self.res.take(s, d, room);
            } else {
                num_zero += 1;
                let w = self.pfp.watch[h as usize] as usize;
                let free = if w < n { self.res.egress[w] } else { self.res.ingress[w - n] };
                assert!(w == s as usize || w == n + d as usize, "pfp: head {h} watches a port it does not use");
                assert!(free <= self.res.eps, "pfp: head {h} watches a port with room");
            }
        }
        assert_eq!(self.pfp.watchers.iter().map(Vec::len).sum::<usize>(), num_zero);
        assert_eq!(self.running.len(), heads.len() - num_zero);
        assert_eq!(self.pfp.num_shared, self.pfp.granted.iter().filter(|g| g.len() > 1).count());
        for q in 0..2 * n {
            assert!(self.pfp.granted[q].windows(2).all(|w| self.key(w[0]) < self.key(w[1])));
            assert!(self.pfp.watchers[q].windows(2).all(|w| w[0] < w[1]));
        }
        assert!(self.pfp.tasks.is_empty() && self.pfp.cursor.iter().all(Option::is_none));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{run_on, run_reference, OrdF64, Options, Scheduler};
    use super::{flow_of, key_of};
    use crate::fabric::Fabric;
    use crate::testrng::Rng;
    use crate::trace::{Trace, BYTES_PER_MB};

    /// Up to 16 coflows on 2 to 7 ports, with mappers and reducers drawn with repeats across
    /// coflows (so pairs hold several flows and heads get pushed back by arrivals), sizes of
    /// 1 to 4 MB per mapper (many equal keys: the id tie-break decides), arrivals close
    /// enough to overlap and sometimes at the same instant.
    fn random_trace(r: &mut Rng) -> Trace {
        let ports = 2 + r.below(6);
        let num = 1 + r.below(16);
        let mut text = format!("{ports} {num}\n");
        let mut t = 0;
        for id in 0..num {
            t += r.below(3) * r.below(3000);
            let mut pick = |k: u64| {
                let mut all: Vec<u64> = (0..ports).collect();
                for i in 0..k as usize {
                    all.swap(i, i + r.below(ports - i as u64) as usize);
                }
                all.truncate(k as usize);
                all
            };
            let (m, k) = (1 + ports / 2, 1 + ports / 3);
            let (mappers, reducers) = (pick(m), pick(k));
            text += &format!("{id} {t} {m}");
            for p in mappers {
                text += &format!(" {p}");
            }
            text += &format!(" {k}");
            for p in reducers {
                text += &format!(" {p}:{}", m * (1 + r.below(4)));
            }
            text += "\n";
        }
        Trace::parse(&text).unwrap()
    }

    /// Keys order as the reference's sort: bytes left by `total_cmp` (a flow may be an ulp
    /// below zero when it finishes), then id.
    #[test]
    fn keys_order_as_total_cmp_then_id() {
        let mut r = Rng(3);
        let mut rems = vec![0.0, -0.0, 1e-300, -1e-300, 1.0, -1.0, f64::MIN_POSITIVE, 5e-324, 1e300, f64::INFINITY];
        rems.extend((0..200).map(|_| (r.below(1 << 40) as f64 - (1u64 << 30) as f64) * 1e-3));
        let mut items: Vec<(f64, u32)> = rems.iter().flat_map(|&x| [(x, 3), (x, 1 << 31), (x, 0)]).collect();
        items.sort_by_key(|&(x, f)| key_of(x, f));
        assert!(items.windows(2).all(|w| (OrdF64(w[0].0), w[0].1) < (OrdF64(w[1].0), w[1].1)));
        assert!(items.iter().all(|&(x, f)| flow_of(key_of(x, f)) == f));
    }

    /// The fast path's outcome is the reference's, bit for bit, on a uniform fabric and on
    /// fabrics whose ports differ both ways (grants then fill one port and leave room at the
    /// other, several heads with a rate share a port, and heads with unequal rates swap).
    #[test]
    fn pfp_is_the_reference_bit_for_bit() {
        let opts = Options { port_bytes_per_sec: BYTES_PER_MB, record_flows: true, ..Options::default() };
        let mut r = Rng(7);
        for seed in 0..400 {
            let trace = random_trace(&mut r);
            let n = trace.num_ports as usize;
            let fabric = if seed % 2 == 0 {
                Fabric::uniform(n, BYTES_PER_MB)
            } else {
                let mut cap = || BYTES_PER_MB * [0.5, 1.0, 1.5, 2.5][r.below(4) as usize];
                Fabric { egress: (0..n).map(|_| cap()).collect(), ingress: (0..n).map(|_| cap()).collect() }
            };
            let fast = run_on(&trace, &fabric, Scheduler::Pfp, &opts);
            let reference = run_reference(&trace, &fabric, Scheduler::Pfp, &opts);
            assert_eq!(fast, reference, "seed {seed}");
        }
    }
}
