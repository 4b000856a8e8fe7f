//! D-CLAS' fast path (Aalo §4.2 and Pseudocode 1, discretized coflow-level attained service):
//! the reference model of [`super`] (strict priority across queues, FIFO within one, each
//! coflow max-min fair on what the coflows before it left), with the allocation recomputed
//! only where it can have changed and flows advanced only when their rates change.
//!
//! - **Cached allocations.** A coflow's max-min rates are a function of two things only: its
//!   live flows and the free capacity of its ports when its turn comes (`push_open` and
//!   `MaxMin::fill` read nothing else). So each coflow keeps the free capacity of its ports
//!   before its turn (`input`) and after it (`output`) from the last time it was allocated.
//!   At its next turn, if no flow of it has finished and its ports' free capacity is the same,
//!   its rates are the same, bit for bit: the allocation replays `output` onto the residual in
//!   O(ports) instead of filling its flows again. The coflows ahead of the one an event
//!   touched (a flow's completion, an arrival, a queue crossing that moves a coflow back) keep
//!   their rates; with many coflows queued behind the fabric's full ports, most events change
//!   one coflow's allocation and those after it.
//! - **Lazy progress.** Rates are constant between two recomputations of a coflow, so each
//!   coflow keeps the time (`epoch`) its flows' bytes and its bytes sent were last brought up
//!   to date, and the earliest finish of one of its flows as an absolute time. An event looks
//!   at each coflow once (its next finish, its next queue threshold: the time its bytes sent
//!   reach the threshold at its current rate, Aalo §4.2's queue crossing in closed form), and
//!   touches the flows of a coflow only when one of them is due or its rates change.
//!
//! CORRECTNESS: the rates are the reference's (the same fills on the same inputs, in the same
//! order). A flow's bytes are `rem - rate * (now - epoch)` once per recomputation instead of
//! `rem -= rate * dt` at every event, and a coflow's bytes sent grow by its total rate rather
//! than flow by flow, so values differ from the reference in the last bits and event times by
//! as much relative to the clock, as for the MADD fast path (`super::fast`); the tests hold
//! every finish to 1e-9 of the clock (`fast::tests`). On the whole FB2010 trace: the same
//! 71,334 events, every coflow's finish within 2.4e-12 of the clock and every flow's within
//! 4.8e-11 (the ignored `fast_matches_reference_on_whole_fb2010`). `c_load` is not kept up to date here:
//! D-CLAS does not read it.

use super::{Engine, DONE_TOL};

/// Per-coflow caches of the D-CLAS fast path, indexed by coflow.
#[derive(Debug, Default)]
pub(super) struct State {
    /// Whether the cached allocation is the coflow's allocation for the cached `input`: set
    /// when it is allocated, cleared when one of its flows finishes or it is stopped.
    is_valid: Vec<bool>,
    /// Free capacity of the coflow's ports (`c_ports`) before and after its turn.
    input: Vec<Vec<f64>>,
    output: Vec<Vec<f64>>,
    /// Its flows with a positive rate.
    run: Vec<Vec<u32>>,
    /// When its flows' `f_rem` and its `c_sent` were last brought up to date.
    epoch: Vec<f64>,
    /// The earliest finish of a flow in `run` (absolute time) and that flow, and the earliest
    /// time at which one of them is within `DONE_TOL` of its end.
    next_finish: Vec<f64>,
    next_flow: Vec<u32>,
    next_due: Vec<f64>,
    /// Scratch: the coflow's ports' free capacity now.
    free_now: Vec<f64>,
}

impl Engine<'_> {
    /// The event loop of D-CLAS' fast path: the reference loop, with each coflow's allocation
    /// reused while its input is unchanged and flows advanced lazily.
    pub(super) fn simulate_dclas(&mut self) {
        let num_c = self.c_id.len();
        self.dclas = State {
            is_valid: vec![false; num_c],
            input: vec![Vec::new(); num_c],
            output: vec![Vec::new(); num_c],
            run: vec![Vec::new(); num_c],
            epoch: vec![0.0; num_c],
            next_finish: vec![f64::INFINITY; num_c],
            next_flow: vec![0; num_c],
            next_due: vec![f64::INFINITY; num_c],
            free_now: Vec::new(),
        };
        let mut next = 0;
        loop {
            while next < num_c && self.c_arrival[next] <= self.now {
                self.active.push(next as u32);
                self.dclas.epoch[next] = self.now;
                next += 1;
            }
            if self.active.is_empty() {
                if next == num_c {
                    break;
                }
                self.now = self.c_arrival[next];
                continue;
            }
            self.num_events += 1;
            self.allocate_dclas();
            // The next event: a completion, an arrival or a queue threshold (the reference's
            // scans, coflow by coflow).
            let mut dt = if next < num_c { self.c_arrival[next] - self.now } else { f64::INFINITY };
            let mut first: Option<u32> = None;
            for &c in &self.active {
                let c = c as usize;
                if !self.dclas.run[c].is_empty() {
                    let t = self.dclas.next_finish[c] - self.now;
                    if t < dt {
                        dt = t;
                        first = Some(self.dclas.next_flow[c]);
                    }
                }
            }
            for &c in &self.active {
                let c = c as usize;
                if self.c_rate[c] > 0.0 {
                    let t = self.to_next_threshold_of(self.sent_now(c)) / self.c_rate[c];
                    if t < dt {
                        dt = t.max(0.0);
                        first = None;
                    }
                }
            }
            assert!(dt.is_finite(), "dclas: coflows are active but nothing progresses at t = {} s", self.now);
            self.now += dt;
            self.complete_dclas(first);
        }
    }

    /// Coflow `c`'s bytes sent now.
    fn sent_now(&self, c: usize) -> f64 {
        self.c_sent[c] + self.c_rate[c] * (self.now - self.dclas.epoch[c])
    }

    /// Brings coflow `c`'s flows' bytes and its bytes sent up to now.
    fn advance_dclas(&mut self, c: usize) {
        let dt = self.now - self.dclas.epoch[c];
        if dt > 0.0 {
            for &f in &self.dclas.run[c] {
                self.f_rem[f as usize] -= self.f_rate[f as usize] * dt;
            }
            self.c_sent[c] += self.c_rate[c] * dt;
        }
        self.dclas.epoch[c] = self.now;
    }

    /// Takes coflow `c`'s rates away (after bringing it up to now).
    fn stop_dclas(&mut self, c: usize) {
        self.advance_dclas(c);
        for &f in &self.dclas.run[c] {
            self.f_rate[f as usize] = 0.0;
        }
        self.dclas.run[c].clear();
        self.c_rate[c] = 0.0;
        self.dclas.is_valid[c] = false;
    }

    /// The reference's D-CLAS allocation, replaying each coflow whose input is unchanged.
    fn allocate_dclas(&mut self) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend_from_slice(&self.active);
        // Strict priority across queues, FIFO (arrival) within one.
        order.sort_by_cached_key(|&c| (self.queue_of(self.sent_now(c as usize)), c));
        self.res.reset(self.fabric);
        let mut free_now = std::mem::take(&mut self.dclas.free_now);
        for &c in &order {
            let ci = c as usize;
            if self.res.is_saturated() {
                // The reference stops here: nothing is left for the coflows after.
                if !self.dclas.run[ci].is_empty() || self.dclas.is_valid[ci] {
                    self.stop_dclas(ci);
                }
                continue;
            }
            if self.dclas.is_valid[ci] && self.has_same_input(ci) {
                // CORRECTNESS: the same live flows on the same free capacity: the same rates
                // (still in `f_rate`) and the same capacity left on the ports it uses.
                let base = ci * 2 * self.n;
                for (k, &p) in self.c_ports[ci].iter().enumerate() {
                    let p = p as usize;
                    if self.c_cnt[base + p] > 0 && self.free(p) > self.res.eps {
                        self.res.set_port(p, self.dclas.output[ci][k]);
                    }
                }
                continue;
            }
            free_now.clear();
            free_now.extend(self.c_ports[ci].iter().map(|&p| self.free(p as usize)));
            self.stop_dclas(ci);
            if self.has_open_pair(c) {
                self.scratch.clear();
                self.push_open(c);
                self.maxmin.fill(&self.scratch, &self.f_src, &self.f_dst, &mut self.res, &mut self.f_rate);
                for &f in &self.scratch {
                    let r = self.f_rate[f as usize];
                    if r > 0.0 {
                        self.dclas.run[ci].push(f);
                        self.c_rate[ci] += r;
                    }
                }
            }
            std::mem::swap(&mut self.dclas.input[ci], &mut free_now);
            let mut output = std::mem::take(&mut self.dclas.output[ci]);
            output.clear();
            output.extend(self.c_ports[ci].iter().map(|&p| self.free(p as usize)));
            self.dclas.output[ci] = output;
            self.dclas.is_valid[ci] = true;
            self.plan_dclas(ci);
        }
        self.dclas.free_now = free_now;
        self.order = order;
    }

    /// Whether coflow `c`'s allocation reads the same free capacity now as when it was
    /// computed: the same value at every port where it has live flows and capacity is free,
    /// and full (at most `eps`) where it was full. `push_open` and `has_open_pair` only ask
    /// whether a port is full, `MaxMin::fill` reads the ports of the flows it fills, which
    /// have live flows and free capacity at both ends, and ports without live flows of the
    /// coflow take no part (`c_cnt` only changes when a flow finishes, which invalidates it).
    fn has_same_input(&self, c: usize) -> bool {
        let base = c * 2 * self.n;
        let eps = self.res.eps;
        let input = &self.dclas.input[c];
        self.c_ports[c].iter().enumerate().all(|(k, &p)| {
            let p = p as usize;
            let (now, then) = (self.free(p), input[k]);
            self.c_cnt[base + p] == 0 || if now <= eps { then <= eps } else { now.to_bits() == then.to_bits() }
        })
    }

    /// Coflow `c`'s next finish and next due time at its current rates (its flows up to now).
    fn plan_dclas(&mut self, c: usize) {
        let (mut finish, mut flow, mut due) = (f64::INFINITY, 0, f64::INFINITY);
        for &f in &self.dclas.run[c] {
            let (rem, rate) = (self.f_rem[f as usize], self.f_rate[f as usize]);
            let t = rem / rate;
            if t < finish {
                finish = t;
                flow = f;
            }
            due = due.min((rem - self.f_size[f as usize] * DONE_TOL) / rate);
        }
        self.dclas.next_finish[c] = self.now + finish;
        self.dclas.next_flow[c] = flow;
        self.dclas.next_due[c] = self.now + due;
    }

    /// Finishes the flows within `DONE_TOL` of their end (and `first`, the one that set the
    /// event, whatever the rounding), looking only at coflows with one due.
    fn complete_dclas(&mut self, first: Option<u32>) {
        let n2 = 2 * self.n;
        let mut any = false;
        self.scratch.clear();
        for k in 0..self.active.len() {
            let c = self.active[k] as usize;
            let is_first = first.is_some_and(|f| self.f_coflow[f as usize] as usize == c);
            // Slack for the rounding of `next_due` (the flows themselves are checked exactly).
            let slack = 1e-12 * self.now.abs().max(1.0);
            if self.dclas.run[c].is_empty() || !(is_first || self.dclas.next_due[c] <= self.now + slack) {
                continue;
            }
            self.advance_dclas(c);
            if let Some(f) = first.filter(|_| is_first) {
                self.f_rem[f as usize] = 0.0;
            }
            let mut run = std::mem::take(&mut self.dclas.run[c]);
            let mut finished = false;
            for &f in &run {
                let f = f as usize;
                if self.f_rem[f] > self.f_size[f] * DONE_TOL {
                    continue;
                }
                for p in [self.f_src[f] as usize, self.n + self.f_dst[f] as usize] {
                    self.c_cnt[c * n2 + p] -= 1;
                }
                self.f_rem[f] = 0.0;
                self.f_rate[f] = 0.0;
                self.f_finish[f] = self.now;
                self.c_num_left[c] -= 1;
                if self.c_num_left[c] == 0 {
                    self.c_finish[c] = self.now;
                }
                self.scratch.push(self.f_reducer[f]);
                finished = true;
            }
            if finished {
                // Its rates change at the next allocation; until then it moves no bytes.
                let rate = &self.f_rate;
                run.retain(|&f| rate[f as usize] > 0.0);
                self.dclas.is_valid[c] = false;
                any = true;
            }
            self.dclas.run[c] = run;
        }
        if !any {
            return;
        }
        let mut reducers = std::mem::take(&mut self.scratch);
        reducers.sort_unstable();
        reducers.dedup();
        for &r in &reducers {
            let finish = &self.f_finish;
            self.r_live[r as usize].retain(|&f| finish[f as usize].is_nan());
        }
        self.scratch = reducers;
        let left = &self.c_num_left;
        self.active.retain(|&c| left[c as usize] > 0);
    }
}
