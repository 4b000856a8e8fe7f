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
//! - **A coflow is a grid.** Every coflow has one flow from each of its mappers to each of
//!   its reducers, on distinct racks (`trace` checks it), so the flows the reference fills
//!   (`push_open`: live, both ports open) are its open mappers times its open reducers less
//!   the finished ones. [`GridMaxMin`] fills them as a dense matrix, with the list-based
//!   fill's arithmetic in the same order (bit-identical rates and capacity left), and the
//!   coflow's running flows are that rectangle (`run_m` x `run_r`), walked in `push_open`'s
//!   order, rather than a list of flows.
//!
//! PERF: on FB2010 an event recomputes ~4 coflows (281,926 fills for 71,334 events), each
//! with ~9,100 live flows of which ~2,300 are open; an open rectangle is only ~14% larger
//! than its open flows, and a recomputed coflow's capacity left almost never equals its
//! previous one (21 of the 281,926), so the coflows behind it could not replay. The
//! list-based fill (two linked lists over the open flows, chased per freeze) and the
//! per-flow `run` lists took ~70% of 19.6 CPU s; the grid halves it (`coflow_bench`).
//! A fill's grid is ~130 open mappers by ~20 open reducers (averages over the first 200,000
//! fills), and ~17 reducers but only ~6 mappers freeze in it: most flows get their reducer's
//! level. So a column's rates are read as runs at the column's level between the few flows
//! whose mapper froze first: a run's earliest finish and due come from its least bytes left
//! (two divisions per run, not a bounded one per flow) and its part of the rate sum is added
//! per binade ([`repeat_add`]), in the pass that also brings the flows forward at their old
//! rates (when the rectangle is unchanged, which is most refills). The grid's rows are in
//! port order, so its lowest level's first row is the lowest port (ties are common: every
//! FB2010 port has the same capacity). Issue 14, each step bit-identical on the whole trace:
//! 8.6 -> 4.8-5.2 CPU s (alternating `coflow_bench` runs against the build before, on the
//! shared machine at load 5 to 8; the README's 9.5 s was an idle-machine run), then
//! 4.83-4.95 -> 4.65-4.69 (three alternating runs each at load ~3): the fill's update of
//! every open mapper at each reducer freeze (a division each, ~19%) four ports a step so the
//! compiler packs it into `divpd`, with the side's lowest level found in the same pass
//! (`GridSide::take_across`). What is left, per open flow and fill: that update, the pass
//! setting rates (~12%; two lanes of minima there cost ~5% more, reverted), finding where
//! the lowest level is, the frozen ports' chains of subtractions (~4%). 77% of a
//! recomputed coflow's flows get the rate they had; touching only the others (per-flow
//! epochs, a heap of finishes) would change the rounding of the bytes left, which the
//! bit-identical steps above do not.
//!
//! CORRECTNESS: the rates are the reference's (the same fills on the same inputs, in the same
//! order). A flow's bytes are `rem - rate * (now - epoch)` once per recomputation instead of
//! `rem -= rate * dt` at every event, and a coflow's bytes sent grow by its total rate rather
//! than flow by flow, so values differ from the reference in the last bits and event times by
//! as much relative to the clock, as for the MADD fast path (`super::fast`); the tests hold
//! every finish to 1e-9 of the clock (`fast::tests`). On the whole FB2010 trace: the same
//! 71,334 events, every coflow's finish within 2.4e-12 of the clock and every flow's within
//! 4.8e-11 (the ignored `fast_matches_reference_on_whole_fb2010`); the grid fill left every
//! finish time of the fast path on the whole trace bit for bit as it was. `c_load` and
//! `r_live` are not kept up to date here: D-CLAS' fast path reads neither (a reducer's live
//! flows are counted by `c_cnt` at its port, and finished flows are told by `f_finish`).

use super::{Engine, DONE_TOL};
use crate::fabric::lowest;

/// Per-coflow caches of the D-CLAS fast path, indexed by coflow.
#[derive(Debug, Default)]
pub(super) struct State {
    /// Whether the cached allocation is the coflow's allocation for the cached `input`: set
    /// when it is allocated, cleared when one of its flows finishes or it is stopped.
    is_valid: Vec<bool>,
    /// Free capacity of the coflow's ports (`c_ports`) before and after its turn.
    input: Vec<Vec<f64>>,
    output: Vec<Vec<f64>>,
    /// Its running rectangle: the mappers and the reducers (indices within the coflow,
    /// ascending) that were open at its last allocation. INVARIANT: every flow of the coflow
    /// with a positive rate goes from one of these mappers to one of these reducers (the
    /// others in the rectangle have rate 0: finished, or frozen at a level of 0).
    run_m: Vec<Vec<u32>>,
    run_r: Vec<Vec<u32>>,
    /// When its flows' `f_rem` and its `c_sent` were last brought up to date.
    epoch: Vec<f64>,
    /// The earliest finish of one of its running flows (absolute time) and that flow, and the
    /// earliest time at which one of them is within `DONE_TOL` of its end.
    next_finish: Vec<f64>,
    next_flow: Vec<u32>,
    next_due: Vec<f64>,
    /// Scratch: the coflow's ports' free capacity now.
    free_now: Vec<f64>,
    /// Scratch: the max-min fill over one coflow's open mappers and reducers.
    grid: GridMaxMin,
    /// Scratch: the rows of `grid` that froze.
    early: Vec<u32>,
    /// Scratch: a refilled coflow's new running rectangle (swapped with its old one).
    new_m: Vec<u32>,
    new_r: Vec<u32>,
    /// Each coflow's mappers (indices within it) in port order.
    m_by_port: Vec<Vec<u32>>,
    /// Scratch: the open mappers in port order (`grid`'s rows), the grid row of each mapper,
    /// and of each of `run_m`'s; which flows of the rectangle are live, column by column in
    /// `run_m`'s order.
    grid_m: Vec<u32>,
    row_of_mapper: Vec<u32>,
    row_of: Vec<u32>,
    live: Vec<u8>,
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
            run_m: vec![Vec::new(); num_c],
            run_r: vec![Vec::new(); num_c],
            epoch: vec![0.0; num_c],
            next_finish: vec![f64::INFINITY; num_c],
            next_flow: vec![0; num_c],
            next_due: vec![f64::INFINITY; num_c],
            free_now: Vec::new(),
            grid: GridMaxMin::default(),
            early: Vec::new(),
            new_m: Vec::new(),
            new_r: Vec::new(),
            m_by_port: self
                .c_mappers
                .iter()
                .map(|ports| {
                    let mut by_port: Vec<u32> = (0..ports.len() as u32).collect();
                    by_port.sort_by_key(|&i| ports[i as usize]);
                    by_port
                })
                .collect(),
            grid_m: Vec::new(),
            row_of_mapper: Vec::new(),
            row_of: Vec::new(),
            live: Vec::new(),
        };
        let mut next = 0;
        while self.begin_event(&mut next, |e, c| e.dclas.epoch[c] = e.now) {
            self.allocate_dclas();
            // The next event: a completion, an arrival or a queue threshold (the reference's
            // scans, coflow by coflow).
            let mut dt = if next < num_c { self.c_arrival[next] - self.now } else { f64::INFINITY };
            let mut first: Option<u32> = None;
            for &c in &self.active {
                let c = c as usize;
                if !self.dclas.run_r[c].is_empty() {
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

    /// Calls `visit(flow)` for every flow in coflow `c`'s running rectangle, reducer by
    /// reducer and mapper by mapper (the order `push_open` collects them in).
    fn for_run_dclas(&self, c: usize, mut visit: impl FnMut(usize)) {
        let m = self.c_mappers[c].len();
        for &j in &self.dclas.run_r[c] {
            let row = self.c_first[c] as usize + j as usize * m;
            for &i in &self.dclas.run_m[c] {
                visit(row + i as usize);
            }
        }
    }

    /// Brings coflow `c`'s flows' bytes and its bytes sent up to now.
    fn advance_dclas(&mut self, c: usize) {
        let dt = self.now - self.dclas.epoch[c];
        if dt > 0.0 {
            // The flows of the rectangle with rate 0 lose exactly nothing.
            let (rem, rate) = (&mut self.f_rem, &self.f_rate);
            let m = self.c_mappers[c].len();
            for &j in &self.dclas.run_r[c] {
                let row = self.c_first[c] as usize + j as usize * m;
                for &i in &self.dclas.run_m[c] {
                    let f = row + i as usize;
                    rem[f] -= rate[f] * dt;
                }
            }
            self.c_sent[c] += self.c_rate[c] * dt;
        }
        self.dclas.epoch[c] = self.now;
    }

    /// Takes coflow `c`'s rates away (after bringing it up to now).
    fn stop_dclas(&mut self, c: usize) {
        let dt = self.begin_refill_dclas(c);
        self.stop_flows_dclas(c, dt);
        self.dclas.run_m[c].clear();
        self.dclas.run_r[c].clear();
    }

    /// Brings coflow `c`'s bytes sent up to now and takes its total rate away, leaving its flows
    /// to the caller; returns the time since its flows were last brought up to date.
    fn begin_refill_dclas(&mut self, c: usize) -> f64 {
        let dt = self.now - self.dclas.epoch[c];
        if dt > 0.0 {
            self.c_sent[c] += self.c_rate[c] * dt;
        }
        self.dclas.epoch[c] = self.now;
        self.c_rate[c] = 0.0;
        self.dclas.is_valid[c] = false;
        dt
    }

    /// Brings the flows of coflow `c`'s running rectangle `dt` forward at their rates and takes
    /// the rates away.
    fn stop_flows_dclas(&mut self, c: usize, dt: f64) {
        let (rem, rate) = (&mut self.f_rem, &mut self.f_rate);
        let m = self.c_mappers[c].len();
        for &j in &self.dclas.run_r[c] {
            let row = self.c_first[c] as usize + j as usize * m;
            for &i in &self.dclas.run_m[c] {
                let f = row + i as usize;
                if dt > 0.0 {
                    rem[f] -= rate[f] * dt;
                }
                rate[f] = 0.0;
            }
        }
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
                if !self.dclas.run_r[ci].is_empty() || self.dclas.is_valid[ci] {
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
            self.fill_dclas(ci);
            std::mem::swap(&mut self.dclas.input[ci], &mut free_now);
            let mut output = std::mem::take(&mut self.dclas.output[ci]);
            output.clear();
            output.extend(self.c_ports[ci].iter().map(|&p| self.free(p as usize)));
            self.dclas.output[ci] = output;
            self.dclas.is_valid[ci] = true;
        }
        self.dclas.free_now = free_now;
        self.order = order;
    }

    /// Max-min fair rates for stopped coflow `c`'s live flows whose two ports have capacity
    /// left (the reference's `push_open` and `MaxMin::fill`), taken from the residual; sets
    /// its running rectangle, its total rate and its next finish and due times.
    ///
    /// PERF: a coflow is a complete bipartite graph (one flow from each of its mappers to each
    /// of its reducers, all distinct racks), so its open flows are its open mappers times its
    /// open reducers less the finished ones, and [`GridMaxMin`] fills them as a dense matrix;
    /// the list-based fill built two linked lists over ~2,300 open flows per fill and chased
    /// them, ~70% of D-CLAS' time on FB2010.
    fn fill_dclas(&mut self, c: usize) {
        let (n, eps) = (self.n, self.res.eps);
        let base = c * 2 * n;
        let mut dt = self.begin_refill_dclas(c);
        let mut run_m = std::mem::take(&mut self.dclas.new_m);
        let mut run_r = std::mem::take(&mut self.dclas.new_r);
        run_m.clear();
        run_r.clear();
        for (i, &p) in self.c_mappers[c].iter().enumerate() {
            if self.c_cnt[base + p as usize] > 0 && self.res.egress[p as usize] > eps {
                run_m.push(i as u32);
            }
        }
        let reducers = self.c_rfirst[c] as usize..self.c_rfirst[c + 1] as usize;
        for (j, &d) in self.r_dst[reducers].iter().enumerate() {
            if self.c_cnt[base + n + d as usize] > 0 && self.res.ingress[d as usize] > eps {
                run_r.push(j as u32);
            }
        }
        if run_m.is_empty() || run_r.is_empty() {
            run_m.clear();
            run_r.clear();
        }
        // PERF: with the same running rectangle (most refills), the pass that sets the new rates
        // also brings the flows forward at their old ones (what `stop_dclas` does); else the old
        // rectangle is stopped first and the new one starts from rates of 0.
        if run_m != self.dclas.run_m[c] || run_r != self.dclas.run_r[c] {
            self.stop_flows_dclas(c, dt);
            dt = 0.0;
        }
        let (mut finish, mut flow, mut due) = (f64::INFINITY, 0, f64::INFINITY);
        if !run_m.is_empty() {
            let m = self.c_mappers[c].len();
            let nr = run_m.len();
            // PERF: the grid's rows in port order, so that its lowest level's first row is the
            // lowest port holding it (`GridSide::lowest` skips its scan for ties, which are
            // common: on FB2010 every port has the same capacity); the rates are read in
            // `run_m`'s order through `row_of`.
            let (mut grid_m, mut row_of_mapper, mut row_of, mut live) = (
                std::mem::take(&mut self.dclas.grid_m),
                std::mem::take(&mut self.dclas.row_of_mapper),
                std::mem::take(&mut self.dclas.row_of),
                std::mem::take(&mut self.dclas.live),
            );
            grid_m.clear();
            for &i in &self.dclas.m_by_port[c] {
                let p = self.c_mappers[c][i as usize] as usize;
                if self.c_cnt[base + p] > 0 && self.res.egress[p] > eps {
                    grid_m.push(i);
                }
            }
            row_of_mapper.resize(m, 0);
            for (g, &i) in grid_m.iter().enumerate() {
                row_of_mapper[i as usize] = g as u32;
            }
            row_of.clear();
            row_of.extend(run_m.iter().map(|&i| row_of_mapper[i as usize]));
            live.clear();
            live.resize(nr * run_r.len(), 1);
            let grid = &mut self.dclas.grid;
            let reducers = &self.r_dst[self.c_rfirst[c] as usize..];
            grid.reset(
                grid_m.iter().map(|&i| {
                    let p = self.c_mappers[c][i as usize];
                    (p, self.res.egress[p as usize])
                }),
                run_r.iter().map(|&j| {
                    let d = reducers[j as usize];
                    (d, self.res.ingress[d as usize])
                }),
            );
            for (b, &j) in run_r.iter().enumerate() {
                if self.c_cnt[base + n + reducers[j as usize] as usize] as usize == m {
                    // PERF: none of the reducer's flows has finished (most reducers): no
                    // need to look at them one by one.
                    grid.set_column_live(b);
                    continue;
                }
                let row = self.c_first[c] as usize + j as usize * m;
                for (a, &i) in run_m.iter().enumerate() {
                    let is_live = self.f_finish[row + i as usize].is_nan();
                    if is_live {
                        grid.set_live(row_of[a] as usize, b);
                    }
                    live[b * nr + a] = u8::from(is_live);
                }
            }
            grid.fill(eps);
            for (g, &i) in grid_m.iter().enumerate() {
                self.res.set_port(self.c_mappers[c][i as usize] as usize, grid.rows.free[g]);
            }
            for (b, &j) in run_r.iter().enumerate() {
                self.res.set_port(n + reducers[j as usize] as usize, grid.cols.free[b]);
            }
            // Rows that froze, in row order: a flow takes its row's level if its row froze before
            // its column, else its column's (`GridMaxMin::rate`). PERF: few rows freeze (~6 of
            // ~130 per fill on FB2010: most flows freeze at their reducer), so a column is runs of
            // flows at the column's level between a few flows at their row's.
            let mut early = std::mem::take(&mut self.dclas.early);
            early.clear();
            early.extend((0..nr).filter(|&a| grid.rows.seq[row_of[a] as usize] != u32::MAX).map(|a| a as u32));
            let mut total = 0.0;
            for (b, &j) in run_r.iter().enumerate() {
                let row = self.c_first[c] as usize + j as usize * m;
                let (seq_b, level) = (grid.cols.seq[b], grid.cols.at[b]);
                let live = &live[b * nr..(b + 1) * nr];
                let mut from = 0;
                for a in early.iter().map(|&a| a as usize).filter(|&a| grid.rows.seq[row_of[a] as usize] < seq_b).chain([nr]) {
                    let run = RunScan::scan(&mut self.f_rate, &mut self.f_rem, &self.f_size, row, &run_m[from..a], &live[from..a], level, dt);
                    if level > 0.0 && run.num > 0 {
                        // The flows at the column's level, in one pass: the rate sum as
                        // `total += level` flow by flow, and the earliest finish and due from
                        // the least bytes left (`x / level` is monotone in `x`).
                        total = repeat_add(total, level, run.num);
                        let t = run.least_rem / level;
                        if t < finish {
                            // The first flow of the run that finishes then (ties: scan order).
                            let k = (from..a).find(|&k| live[k] != 0 && self.f_rem[row + run_m[k] as usize] / level == t);
                            finish = t;
                            flow = (row + run_m[k.expect("the least is in the run")] as usize) as u32;
                        }
                        due = due.min(run.least_to_due / level);
                    }
                    if a == nr {
                        break;
                    }
                    from = a + 1;
                    let r = grid.rows.at[row_of[a] as usize];
                    let f = row + run_m[a] as usize;
                    self.f_rem[f] -= self.f_rate[f] * dt;
                    self.f_rate[f] = 0.0;
                    if live[a] != 0 && r > 0.0 {
                        self.f_rate[f] = r;
                        total += r;
                        // PERF: divide only where the quotient can be below the least so far
                        // (a bound by multiplication with room for its rounding).
                        let rem = self.f_rem[f];
                        if could_be_below(rem, finish, r) {
                            let t = rem / r;
                            if t < finish {
                                finish = t;
                                flow = f as u32;
                            }
                        }
                        let to_due = rem - self.f_size[f] * DONE_TOL;
                        if could_be_below(to_due, due, r) {
                            due = due.min(to_due / r);
                        }
                    }
                }
            }
            self.dclas.early = early;
            self.dclas.grid_m = grid_m;
            self.dclas.row_of_mapper = row_of_mapper;
            self.dclas.row_of = row_of;
            self.dclas.live = live;
            self.c_rate[c] = total;
        }
        self.dclas.new_m = std::mem::replace(&mut self.dclas.run_m[c], run_m);
        self.dclas.new_r = std::mem::replace(&mut self.dclas.run_r[c], run_r);
        self.dclas.next_finish[c] = self.now + finish;
        self.dclas.next_flow[c] = flow;
        self.dclas.next_due[c] = self.now + due;
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

    /// Finishes the flows within `DONE_TOL` of their end (and `first`, the one that set the
    /// event, whatever the rounding), looking only at coflows with one due.
    fn complete_dclas(&mut self, first: Option<u32>) {
        let n2 = 2 * self.n;
        let mut any = false;
        let mut done = std::mem::take(&mut self.scratch);
        for k in 0..self.active.len() {
            let c = self.active[k] as usize;
            let is_first = first.is_some_and(|f| self.f_coflow[f as usize] as usize == c);
            // Slack for the rounding of `next_due` (the flows themselves are checked exactly).
            let slack = 1e-12 * self.now.abs().max(1.0);
            if self.dclas.run_r[c].is_empty() || !(is_first || self.dclas.next_due[c] <= self.now + slack) {
                continue;
            }
            self.advance_dclas(c);
            if let Some(f) = first.filter(|_| is_first) {
                self.f_rem[f as usize] = 0.0;
            }
            done.clear();
            self.for_run_dclas(c, |f| {
                if self.f_rate[f] > 0.0 && self.f_rem[f] <= self.f_size[f] * DONE_TOL {
                    done.push(f as u32);
                }
            });
            for &f in &done {
                let f = f as usize;
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
            }
            if !done.is_empty() {
                // Its rates change at the next allocation; until then it moves no bytes.
                self.dclas.is_valid[c] = false;
                any = true;
            }
        }
        done.clear();
        self.scratch = done;
        if any {
            let left = &self.c_num_left;
            self.active.retain(|&c| left[c as usize] > 0);
        }
    }
}

/// Whether `x / r` (`r > 0`) can round below `bound`: `x < bound * r` with room for the
/// rounding of the product (1e-15 relative, ~4.5 ulp), so a `false` is exact and saves a
/// division.
fn could_be_below(x: f64, bound: f64, r: f64) -> bool {
    let br = bound * r;
    x <= br + br.abs() * 1e-15
}

/// One pass over a run of a column's flows that all get the column's level: sets their rates
/// and finds what the earliest finish and due need.
struct RunScan {
    /// Live flows in the run.
    num: u32,
    /// The least bytes left of one of them, and the least bytes left short of `DONE_TOL`.
    least_rem: f64,
    least_to_due: f64,
}

impl RunScan {
    /// Flows `row + rows[k]` go `dt` forward at their old rates, then those with
    /// `live[k] != 0` get `level` and the others 0 (`rem -= rate * dt` is exact for a rate of 0
    /// and for `dt` 0, as `stop_dclas`'s skipped subtraction).
    #[allow(clippy::too_many_arguments)]
    fn scan(
        rate: &mut [f64],
        rem: &mut [f64],
        size: &[f64],
        row: usize,
        rows: &[u32],
        live: &[u8],
        level: f64,
        dt: f64,
    ) -> RunScan {
        let (mut num, mut least_rem, mut least_to_due) = (0u32, f64::INFINITY, f64::INFINITY);
        for (&i, &is_live) in rows.iter().zip(live) {
            let f = row + i as usize;
            let is_live = is_live != 0;
            let left = rem[f] - rate[f] * dt;
            rem[f] = left;
            rate[f] = if is_live { level } else { 0.0 };
            let (x, to_due) = if is_live { (left, left - size[f] * DONE_TOL) } else { (f64::INFINITY, f64::INFINITY) };
            least_rem = if x < least_rem { x } else { least_rem };
            least_to_due = if to_due < least_to_due { to_due } else { least_to_due };
            num += u32::from(is_live);
        }
        RunScan { num, least_rem, least_to_due }
    }
}

/// `acc + x + x + ...` with `k` additions, each rounded as `acc += x` rounds it, for `acc >= 0`
/// and `x > 0`.
///
/// PERF: in O(binades `acc` crosses) rather than O(k): within a binade of width `2^e` the
/// representable numbers are the multiples of `u = ulp(acc)`, so while the sum stays in it each
/// addition adds `x` rounded to a multiple of `u`, exactly (unless `x / u` is half an odd
/// integer: ties round to even and alternate, so those take the slow path), and the steps up
/// to the binade's end go in one multiplication. CORRECTNESS: bit-identical to the loop
/// (`tests::repeat_add_is_bit_identical_to_a_loop`).
fn repeat_add(mut acc: f64, x: f64, mut k: u32) -> f64 {
    const TOP: u64 = 1 << 53;
    while k > 0 {
        if let Some((a, u, xi)) = binade_units(acc, x) {
            if xi == 0 {
                // Every addition rounds back to `acc`.
                return acc;
            }
            // Steps while `a + steps * xi <= 2^53 - 1`: the exact sum stays below `2^53 u`.
            // PERF: all `k` usually fit, and a multiplication tells (no integer division).
            let room = TOP - 1 - a;
            let steps = if u64::from(k).checked_mul(xi).is_some_and(|p| p <= room) { u64::from(k) } else { room / xi };
            if steps > 0 {
                acc = (a + steps * xi) as f64 * u;
                k -= steps as u32;
                continue;
            }
        }
        acc += x;
        k -= 1;
    }
    acc
}

/// For a positive normal `acc` (not tiny) and a positive normal `x`: `acc` in units of its ulp
/// `u` (an integer in `[2^52, 2^53)`), `u`, and `x` rounded to a whole number of `u` (`None`
/// if that rounding is a tie or `x` is far larger than `acc`).
fn binade_units(acc: f64, x: f64) -> Option<(u64, f64, u64)> {
    let exp = (acc.to_bits() >> 52) & 0x7ff;
    // Exponent fields 53..2046: `u = 2^(exp - 1075)` and `1 / u` are normal and `acc` is finite
    // and positive.
    if acc <= 0.0 || !(53..0x7ff).contains(&exp) || !x.is_normal() || x < 0.0 {
        return None;
    }
    let (u, inv_u) = (f64::from_bits((exp - 52) << 52), f64::from_bits((2098 - exp) << 52));
    // Both exact: scaling by a power of two (`x * inv_u` may underflow only when `x` is far
    // below `u / 2`, and then it rounds to 0 units, which is right).
    let (a, xu) = (acc * inv_u, x * inv_u);
    if xu >= (1u64 << 53) as f64 {
        return None;
    }
    // PERF: the conversions truncate (`floor` is a libm call on baseline x86-64).
    let whole = xu as u64;
    let frac = xu - whole as f64;
    if frac == 0.5 {
        return None;
    }
    Some((a as u64, u, whole + u64::from(frac > 0.5)))
}

/// Max-min fair rates by progressive filling over a dense matrix of flows: rows are egress
/// ports, columns ingress ports, and each cell holds at most one flow (one coflow's open
/// mappers and reducers in [`Engine::fill_dclas`]).
///
/// CORRECTNESS: this is [`crate::fabric::MaxMin::fill`] on the same flows with the same
/// arithmetic in the same order, so the rates and the capacity left are bit-identical
/// (`tests::grid_maxmin_is_bit_identical_to_maxmin`): the port with the lowest level freezes
/// next (ties: lowest port, egress before ingress), its capacity loses its level once per flow
/// not yet frozen, each open port across one of its flows loses the level once and gets the
/// level `free / count` again, and a level at most `eps` freezes at 0.
///
/// PERF: with rows (columns) given in port order, the lowest port at the lowest level is the
/// first one holding it, so no scan for ties is needed; [`Engine::fill_dclas`] gives its rows
/// so (the test with rows shuffled takes the scan).
#[derive(Debug, Default)]
struct GridMaxMin {
    rows: GridSide,
    cols: GridSide,
    /// `live_t[b * rows + a]`: a flow from row `a` to column `b`.
    live_t: Vec<u8>,
    /// Columns set whole by `set_column_live`, not yet counted in `rows.count`.
    /// PERF: counted once per row at the fill, not per cell (no row-major copy of `live_t`
    /// either: a row freeze, ~6 per fill, gathers its row into `row_live`).
    num_full: u32,
    row_live: Vec<u8>,
}

/// One side of a [`GridMaxMin`], per port.
#[derive(Debug, Default)]
struct GridSide {
    /// The port's number on its side (for ties), and its free capacity.
    port: Vec<u32>,
    /// Whether `port` ascends (then the first port at the lowest level is the lowest port).
    is_sorted: bool,
    free: Vec<f64>,
    /// Flows not yet frozen, and the level they would freeze at now (infinite without any).
    /// PERF: the count as `f64` (exact: far below 2^53), so `take_across` converts nothing.
    count: Vec<f64>,
    level: Vec<f64>,
    /// After the fill: the level the port froze at and its place in the freeze order
    /// (`u32::MAX` if all its flows froze at their other end).
    at: Vec<f64>,
    seq: Vec<u32>,
    /// The flows it froze (its flows not yet frozen when it froze).
    num_frozen: Vec<u32>,
}

impl GridSide {
    fn reset(&mut self, ports: impl Iterator<Item = (u32, f64)>) {
        self.port.clear();
        self.free.clear();
        for (p, free) in ports {
            self.port.push(p);
            self.free.push(free);
        }
        let k = self.port.len();
        self.is_sorted = self.port.is_sorted();
        self.count.clear();
        self.count.resize(k, 0.0);
        self.level.clear();
        self.level.resize(k, f64::INFINITY);
        self.at.clear();
        self.at.resize(k, 0.0);
        self.seq.clear();
        self.seq.resize(k, u32::MAX);
        self.num_frozen.clear();
        self.num_frozen.resize(k, 0);
    }

    /// The lowest level and the lowest port holding it (`INFINITY` if none is open).
    fn lowest(&self) -> (f64, usize) {
        let (low, mut at) = lowest(&self.level);
        if low < f64::INFINITY && !self.is_sorted {
            for k in at + 1..self.level.len() {
                if self.level[k] == low && self.port[k] < self.port[at] {
                    at = k;
                }
            }
        }
        (low, at)
    }

    /// [`Self::lowest`] when the lowest level `low` is known (from `take_across`).
    fn lowest_at(&self, low: f64) -> (f64, usize) {
        // The first chunk holding it by a branch-free test of eight at a time, as `lowest`.
        let mut at = 0;
        let mut base = 0;
        for c in self.level.chunks(8) {
            if c.iter().fold(false, |any, &x| any | (x == low)) {
                at = base + c.iter().position(|&x| x == low).unwrap_or(0);
                break;
            }
            base += c.len();
        }
        if low < f64::INFINITY && !self.is_sorted {
            for k in at + 1..self.level.len() {
                if self.level[k] == low && self.port[k] < self.port[at] {
                    at = k;
                }
            }
        }
        (low, at)
    }

    /// Freezes port `k` at its level (0 if at most `eps`); returns that level.
    fn freeze(&mut self, k: usize, seq: u32, eps: f64) -> f64 {
        let level = if self.level[k] <= eps { 0.0 } else { self.level[k] };
        self.at[k] = level;
        self.seq[k] = seq;
        // Its capacity loses `level` once per flow, in `take_frozen`.
        self.num_frozen[k] = self.count[k] as u32;
        self.count[k] = 0.0;
        self.level[k] = f64::INFINITY;
        level
    }

    /// Freezes at `level` the flows across `live` (a row or column of the other side's
    /// frozen port) whose port here is still open.
    ///
    /// PERF: `f64` counts (no conversion) and no branch but the one the compiler puts around
    /// the division; with `u32` counts and the level kept when not hit, the compiler branched
    /// on each, and the loop was ~17% of D-CLAS' time on FB2010 (now ~5% less time in all).
    /// Written as a plain loop the compiler kept it scalar on baseline x86-64 (~19% of the
    /// time, a `divsd` per port); four ports per step in local arrays it packs into two
    /// `divpd` (SSE2, always there on x86-64; no `unsafe`). Three alternating `coflow_bench`
    /// runs each: 4.90-5.42 -> 4.77-5.23 CPU s with two ports a step, 4.76-5.10 -> 4.71-4.91
    /// with four (`chunks_exact` zipped over the four slices was not packed).
    ///
    /// CORRECTNESS: a port not hit loses `level * 0.0`, exactly nothing, and its level is
    /// recomputed from the same two numbers (INVARIANT: `level` is `free.max(0) / count` for a
    /// port with flows not yet frozen, infinite for the others), so this is the update port by
    /// port, bit for bit.
    ///
    /// Returns the side's lowest level after it. PRECONDITION: `live` spans the side.
    /// PERF: the minimum comes with the update (`minpd` beside the `divpd`), so the next
    /// `lowest_at` only looks for where it is, not for what it is.
    fn take_across(&mut self, live: &[u8], level: f64) -> f64 {
        let k = live.len();
        debug_assert_eq!(k, self.level.len());
        let mut low = [f64::INFINITY; LANES];
        let (free, count, lv) = (&mut self.free[..k], &mut self.count[..k], &mut self.level[..k]);
        // PERF: four ports per step, loaded into local arrays, so the compiler packs them (a
        // `divpd` for two quotients). CORRECTNESS: each lane is the scalar body below (the
        // same operations in the same order, and Rust contracts no `a - b * c`), so the same
        // bits; then the last ports one by one.
        const LANES: usize = 4;
        let groups = k / LANES;
        for j in 0..groups {
            let i = LANES * j;
            let (mut f2, mut c2, mut q2, mut l2) = ([0.0; LANES], [0.0; LANES], [0.0; LANES], [0.0; LANES]);
            for n in 0..LANES {
                (f2[n], c2[n], l2[n]) = (free[i + n], count[i + n], f64::from(live[i + n]));
            }
            for n in 0..LANES {
                let w = if c2[n] > 0.0 { l2[n] } else { 0.0 };
                f2[n] -= level * w;
                c2[n] -= w;
                let q = f2[n].max(0.0) / c2[n];
                q2[n] = if c2[n] > 0.0 { q } else { f64::INFINITY };
            }
            for n in 0..LANES {
                (free[i + n], count[i + n], lv[i + n]) = (f2[n], c2[n], q2[n]);
                low[n] = if q2[n] < low[n] { q2[n] } else { low[n] };
            }
        }
        let done = LANES * groups;
        for k in done..k {
            // `live` is 0 or 1. The division is done whatever the count (a quotient by 0 is
            // thrown away), so that it needs no branch.
            let c = count[k];
            let w = if c > 0.0 { f64::from(live[k]) } else { 0.0 };
            let f = free[k] - level * w;
            let c = c - w;
            let q = f.max(0.0) / c;
            free[k] = f;
            count[k] = c;
            lv[k] = if c > 0.0 { q } else { f64::INFINITY };
            low[0] = if lv[k] < low[0] { lv[k] } else { low[0] };
        }
        low.into_iter().fold(f64::INFINITY, |m, x| if x < m { x } else { m })
    }

    /// Takes each frozen port's level from its capacity once per flow it froze, as
    /// `MaxMin::fill` does (not `level * flows` in one go, which rounds differently).
    ///
    /// CORRECTNESS: a frozen port's capacity is read no more during the fill (`take_across`
    /// takes `0.0` from it), so deferring its subtractions to the end changes no bit.
    /// PERF: one dependent chain of subtractions per port cost a few cycles a flow; four
    /// ports' chains stepped together are independent and overlap.
    fn take_frozen(&mut self) {
        const LANES: usize = 4;
        let mut frozen = (0..self.free.len()).filter(|&k| self.num_frozen[k] > 0 && self.at[k] != 0.0);
        loop {
            let mut ks = [usize::MAX; LANES];
            let (mut free, mut num, mut at) = ([0.0; LANES], [0u32; LANES], [0.0; LANES]);
            for lane in 0..LANES {
                if let Some(k) = frozen.next() {
                    (ks[lane], free[lane], num[lane], at[lane]) = (k, self.free[k], self.num_frozen[k], self.at[k]);
                }
            }
            if ks[0] == usize::MAX {
                break;
            }
            for step in 0..num.iter().copied().max().unwrap_or(0) {
                for lane in 0..LANES {
                    free[lane] -= if step < num[lane] { at[lane] } else { 0.0 };
                }
            }
            for lane in 0..LANES {
                if ks[lane] != usize::MAX {
                    self.free[ks[lane]] = free[lane];
                }
            }
        }
    }
}

impl GridMaxMin {
    /// No flows between these rows and columns ((port, free capacity) each).
    fn reset(&mut self, rows: impl Iterator<Item = (u32, f64)>, cols: impl Iterator<Item = (u32, f64)>) {
        self.rows.reset(rows);
        self.cols.reset(cols);
        let k = self.rows.port.len() * self.cols.port.len();
        self.num_full = 0;
        self.live_t.clear();
        self.live_t.resize(k, 0);
    }

    /// A flow from row `a` to column `b`. PRECONDITION: not there yet.
    fn set_live(&mut self, a: usize, b: usize) {
        let nr = self.rows.port.len();
        self.live_t[b * nr + a] = 1;
        self.rows.count[a] += 1.0;
        self.cols.count[b] += 1.0;
    }

    /// A flow from every row to column `b`. PRECONDITION: none there yet.
    fn set_column_live(&mut self, b: usize) {
        let nr = self.rows.port.len();
        self.live_t[b * nr..(b + 1) * nr].fill(1);
        self.num_full += 1;
        self.cols.count[b] += nr as f64;
    }

    /// Max-min fair rates for the flows set, on the free capacity given; leaves the capacity
    /// left in `rows.free` and `cols.free`.
    fn fill(&mut self, eps: f64) {
        let (nr, nc) = (self.rows.port.len(), self.cols.port.len());
        for count in &mut self.rows.count {
            *count += f64::from(self.num_full);
        }
        self.num_full = 0;
        for side in [&mut self.rows, &mut self.cols] {
            for k in 0..side.port.len() {
                if side.count[k] > 0.0 {
                    side.level[k] = side.free[k].max(0.0) / side.count[k];
                }
            }
        }
        let mut seq = 0;
        // The lowest level of the side that was last taken across (the other side lost the
        // port that froze, its lowest, and is scanned again).
        let (mut row_low, mut col_low) = (None, None);
        loop {
            let (row_level, a) = row_low.take().map_or_else(|| self.rows.lowest(), |low| self.rows.lowest_at(low));
            let (col_level, b) = col_low.take().map_or_else(|| self.cols.lowest(), |low| self.cols.lowest_at(low));
            if row_level == f64::INFINITY && col_level == f64::INFINITY {
                break;
            }
            // Egress before ingress on a tie, as `MaxMin::fill` numbers them.
            if row_level <= col_level {
                let level = self.rows.freeze(a, seq, eps);
                self.row_live.clear();
                self.row_live.extend((0..nc).map(|b| self.live_t[b * nr + a]));
                col_low = Some(self.cols.take_across(&self.row_live, level));
            } else {
                let level = self.cols.freeze(b, seq, eps);
                row_low = Some(self.rows.take_across(&self.live_t[b * nr..(b + 1) * nr], level));
            }
            seq += 1;
        }
        self.rows.take_frozen();
        self.cols.take_frozen();
    }

    /// The rate of the flow from row `a` to column `b` after the fill: the level of the first
    /// of its two ports to freeze. (The engine reads the rates column by column instead.)
    #[cfg(test)]
    fn rate(&self, a: usize, b: usize) -> f64 {
        if self.rows.seq[a] < self.cols.seq[b] {
            self.rows.at[a]
        } else {
            self.cols.at[b]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::{MaxMin, Residual};
    use crate::testrng::{random_fabric, splitmix};

    #[test]
    fn repeat_add_is_bit_identical_to_a_loop() {
        let mut next = splitmix(5);
        let unit = |next: &mut dyn FnMut() -> u64| (next() % 1_000_000) as f64 / 1e6;
        for round in 0..20_000 {
            let k = (next() % if round % 3 == 0 { 5000 } else { 40 }) as u32;
            // Starts at 0 (the rate sum), small or large against `x`, across scales.
            let scale = [1.0, 1e-300, 1e8, 3.0e300, 1e-12][(next() % 5) as usize];
            let acc = match next() % 4 {
                0 => 0.0,
                1 => unit(&mut next) * scale,
                _ => (1.0 + unit(&mut next) * 1e4) * scale,
            };
            let mut x = (0.01 + unit(&mut next)) * scale * [1.0, 1e-17, 1e20, 1.0 / 1024.0][(next() % 4) as usize];
            if round % 7 == 0 && acc > 0.0 && acc.is_normal() {
                // Half an odd number of ulps of `acc`: ties, which round to even.
                let u = f64::from_bits(((acc.to_bits() >> 52) & 0x7ff).saturating_sub(52) << 52);
                x = u * (0.5 + (next() % 8) as f64);
            }
            if !x.is_finite() || x <= 0.0 {
                continue;
            }
            let mut sum = acc;
            for _ in 0..k {
                sum += x;
            }
            let got = repeat_add(acc, x, k);
            assert_eq!(got.to_bits(), sum.to_bits(), "round {round}: {acc} + {k} x {x}: {got} vs {sum}");
        }
    }

    /// The engine's case: rows in port order (so `GridSide::lowest` takes the first row at the
    /// lowest level without its scan for ties), many rows, few columns, most columns whole,
    /// on uniform fabrics (where levels tie) and others.
    #[test]
    fn grid_maxmin_with_rows_in_port_order_is_bit_identical_to_maxmin() {
        let mut next = splitmix(13);
        let mut grid = GridMaxMin::default();
        for round in 0..1500 {
            let n = 2 + (next() % 40) as usize;
            let fab = random_fabric(&mut next, n, round % 2 == 0);
            let mut res = Residual::new(&fab);
            for p in 0..n {
                if next().is_multiple_of(4) {
                    let d = (next() % n as u64) as u32;
                    let h = res.headroom(p as u32, d);
                    res.take(p as u32, d, h * (next() % 5) as f64 / 4.0);
                }
            }
            // Rows ascending, columns in any order; a row and a column may share a port number
            // (egress and ingress are different ports).
            let rows: Vec<u32> = (0..n as u32).filter(|_| !next().is_multiple_of(5)).collect();
            let mut cols: Vec<u32> = (0..n as u32).filter(|_| next().is_multiple_of(3)).collect();
            for i in (1..cols.len()).rev() {
                cols.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            let (egress, ingress) = (&res.egress, &res.ingress);
            grid.reset(rows.iter().map(|&p| (p, egress[p as usize])), cols.iter().map(|&p| (p, ingress[p as usize])));
            assert!(grid.rows.is_sorted);
            // Three columns in four full, set at once; a third of the others' cells left out.
            fill_matches_maxmin(&mut grid, &res, &rows, &cols, &mut next, |r| !r.is_multiple_of(4), |r| !r.is_multiple_of(3), round);
        }
    }

    #[test]
    fn grid_maxmin_is_bit_identical_to_maxmin() {
        let mut next = splitmix(11);
        let mut grid = GridMaxMin::default();
        for round in 0..3000 {
            let n = 1 + (next() % 12) as usize;
            let fab = random_fabric(&mut next, n, round % 2 == 0);
            let mut res = Residual::new(&fab);
            // Some capacity already taken, some ports (nearly) full, as after the coflows ahead.
            for p in 0..n {
                if next().is_multiple_of(3) {
                    let d = (next() % n as u64) as u32;
                    let h = res.headroom(p as u32, d);
                    let k = next() % 6;
                    let take = if k == 5 { h * (1.0 - 1e-13) } else { h * k as f64 / 4.0 };
                    res.take(p as u32, d, take);
                }
            }
            // Rows and columns in a random order (a coflow's mappers and reducers in trace order).
            let shuffled = |next: &mut dyn FnMut() -> u64| {
                let mut v: Vec<u32> = (0..n as u32).filter(|_| !next().is_multiple_of(4)).collect();
                for i in (1..v.len()).rev() {
                    v.swap(i, (next() % (i as u64 + 1)) as usize);
                }
                v
            };
            let (rows, cols) = (shuffled(&mut next), shuffled(&mut next));
            let (egress, ingress) = (&res.egress, &res.ingress);
            grid.reset(rows.iter().map(|&p| (p, egress[p as usize])), cols.iter().map(|&p| (p, ingress[p as usize])));
            // A third of the columns full, set at once; a fifth of the others' cells left out.
            fill_matches_maxmin(&mut grid, &res, &rows, &cols, &mut next, |r| r.is_multiple_of(3), |r| !r.is_multiple_of(5), round);
        }
    }

    /// Mark the grid's live cells (a column full when `is_full` of a draw, else each of its
    /// cells live when `keep` of a draw), fill it, and check every rate and every port's
    /// capacity left against `MaxMin::fill` on the same flows as a list, bit for bit.
    #[allow(clippy::too_many_arguments)]
    fn fill_matches_maxmin(
        grid: &mut GridMaxMin,
        res: &Residual,
        rows: &[u32],
        cols: &[u32],
        next: &mut impl FnMut() -> u64,
        is_full: fn(u64) -> bool,
        keep: fn(u64) -> bool,
        round: usize,
    ) {
        let (mut src, mut dst, mut cells) = (Vec::new(), Vec::new(), Vec::new());
        for (b, &d) in cols.iter().enumerate() {
            let full = is_full(next());
            if full {
                grid.set_column_live(b);
            }
            for (a, &s) in rows.iter().enumerate() {
                if full || keep(next()) {
                    if !full {
                        grid.set_live(a, b);
                    }
                    src.push(s);
                    dst.push(d);
                    cells.push((a, b));
                }
            }
        }
        let flows: Vec<u32> = (0..src.len() as u32).collect();
        let mut rate = vec![0.0; flows.len()];
        let mut res1 = res.clone();
        MaxMin::default().fill(&flows, &src, &dst, &mut res1, &mut rate);
        grid.fill(res.eps);
        for (k, &(a, b)) in cells.iter().enumerate() {
            let got = grid.rate(a, b);
            assert_eq!(got.to_bits(), rate[k].to_bits(), "round {round}: flow {k}: {got} vs {}", rate[k]);
        }
        for (a, &p) in rows.iter().enumerate() {
            assert_eq!(grid.rows.free[a].to_bits(), res1.egress[p as usize].to_bits(), "round {round}: egress {p}");
        }
        for (b, &p) in cols.iter().enumerate() {
            assert_eq!(grid.cols.free[b].to_bits(), res1.ingress[p as usize].to_bits(), "round {round}: ingress {p}");
        }
    }
}
