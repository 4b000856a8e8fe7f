//! The non-blocking fabric: the datacenter as one big switch with per-port capacities.
//!
//! This is the network model Varys (SIGCOMM'14 §2.2), Aalo (SIGCOMM'15 §2) and Sincronia
//! (SIGCOMM'18 §2) share: every machine (here, rack) is a port with an egress (sending) and an
//! ingress (receiving) capacity, and the core never congests. A flow from `s` to `d` at rate
//! `r` uses `r` of `s`'s egress and `r` of `d`'s ingress; an allocation is feasible when no port
//! carries more than its capacity. [`crate::inter`] computes allocations with the helpers here.
//!
//! Units: bytes and seconds as `f64`. The model is a fluid one: completion times are real
//! numbers (`remaining / rate`), not multiples of a tick, so the integer picoseconds of
//! `units` would only add rounding. INVARIANT: every capacity is finite and positive.

/// Port capacities of a non-blocking fabric, in bytes per second.
#[derive(Clone, Debug, PartialEq)]
pub struct Fabric {
    /// Sending capacity of each port.
    pub egress: Vec<f64>,
    /// Receiving capacity of each port.
    pub ingress: Vec<f64>,
}

/// coflowsim's port speed: 1 MiB per 8 ms (`2^30` bits per 1.024 s, in real seconds here).
pub const DEFAULT_PORT_BYTES_PER_SEC: f64 = 1_048_576.0 / 0.008;

impl Fabric {
    /// `num_ports` ports, each with `bytes_per_sec` both ways.
    pub fn uniform(num_ports: usize, bytes_per_sec: f64) -> Fabric {
        assert!(bytes_per_sec.is_finite() && bytes_per_sec > 0.0, "port rate must be positive");
        Fabric { egress: vec![bytes_per_sec; num_ports], ingress: vec![bytes_per_sec; num_ports] }
    }

    /// Number of ports.
    pub fn num_ports(&self) -> usize {
        self.egress.len()
    }

    /// The time `flows` (src, dst, bytes) take alone on the fabric: the most loaded port's
    /// bytes over its capacity (Varys §5.1, the effective bottleneck Gamma). No schedule can
    /// finish them sooner, and MADD meets it exactly.
    pub fn bottleneck_time(&self, flows: impl IntoIterator<Item = (u32, u32, f64)>) -> f64 {
        let n = self.num_ports();
        let (mut out, mut inn) = (vec![0.0; n], vec![0.0; n]);
        for (s, d, b) in flows {
            out[s as usize] += b;
            inn[d as usize] += b;
        }
        let e = out.iter().zip(&self.egress).map(|(b, c)| b / c);
        let i = inn.iter().zip(&self.ingress).map(|(b, c)| b / c);
        e.chain(i).fold(0.0, f64::max)
    }
}

/// What is left of the fabric's capacity while an allocation is being built.
#[derive(Clone, Debug)]
pub struct Residual {
    /// Free egress per port (bytes/s).
    pub egress: Vec<f64>,
    /// Free ingress per port (bytes/s).
    pub ingress: Vec<f64>,
    /// Capacity below this counts as none (absorbs rounding in the subtractions).
    pub eps: f64,
    /// Ports whose free egress is above `eps`.
    num_open_egress: usize,
    /// Ports whose free ingress is above `eps`.
    num_open_ingress: usize,
}

impl Residual {
    /// The whole fabric free.
    pub fn new(fabric: &Fabric) -> Residual {
        let max = fabric.egress.iter().chain(&fabric.ingress).fold(0.0f64, |a, &b| a.max(b));
        let n = fabric.num_ports();
        Residual {
            egress: fabric.egress.clone(),
            ingress: fabric.ingress.clone(),
            eps: max * 1e-12,
            num_open_egress: n,
            num_open_ingress: n,
        }
    }

    /// Frees everything again (reuses the buffers).
    pub fn reset(&mut self, fabric: &Fabric) {
        self.egress.copy_from_slice(&fabric.egress);
        self.ingress.copy_from_slice(&fabric.ingress);
        self.num_open_egress = self.egress.len();
        self.num_open_ingress = self.ingress.len();
    }

    /// The most a flow from `s` to `d` can get now.
    pub fn headroom(&self, s: u32, d: u32) -> f64 {
        let h = self.egress[s as usize].min(self.ingress[d as usize]);
        if h <= self.eps {
            0.0
        } else {
            h
        }
    }

    /// Uses `rate` on `s`'s egress and `d`'s ingress.
    pub fn take(&mut self, s: u32, d: u32, rate: f64) {
        let (e, i) = (&mut self.egress[s as usize], &mut self.ingress[d as usize]);
        let (was_e, was_i) = (*e > self.eps, *i > self.eps);
        *e -= rate;
        *i -= rate;
        if was_e && *e <= self.eps {
            self.num_open_egress -= 1;
        }
        if was_i && *i <= self.eps {
            self.num_open_ingress -= 1;
        }
    }

    /// Uses `rate` of port `p` alone (egress `0..n`, ingress `n..2n`): for allocations made per
    /// port rather than per flow (the MADD rates of a whole coflow in [`crate::inter`]).
    pub fn take_port(&mut self, p: usize, rate: f64) {
        let n = self.egress.len();
        let (free, open) = if p < n {
            (&mut self.egress[p], &mut self.num_open_egress)
        } else {
            (&mut self.ingress[p - n], &mut self.num_open_ingress)
        };
        let was = *free > self.eps;
        *free -= rate;
        if was && *free <= self.eps {
            *open -= 1;
        }
    }

    /// Sets port `p`'s free capacity (egress `0..n`, ingress `n..2n`) to `free`: to replay a
    /// part of an allocation whose result on its ports is known (D-CLAS' cached coflows in
    /// [`crate::inter`]).
    pub fn set_port(&mut self, p: usize, free: f64) {
        let n = self.egress.len();
        let (cur, open) = if p < n {
            (&mut self.egress[p], &mut self.num_open_egress)
        } else {
            (&mut self.ingress[p - n], &mut self.num_open_ingress)
        };
        let (was, is) = (*cur > self.eps, free > self.eps);
        *cur = free;
        if was && !is {
            *open -= 1;
        } else if is && !was {
            *open += 1;
        }
    }

    /// Whether every egress or every ingress port is full (nothing more can be allocated).
    /// O(1): `take` keeps count of the open ports.
    pub fn is_saturated(&self) -> bool {
        self.num_open_egress == 0 || self.num_open_ingress == 0
    }
}

/// Scratch space for [`MaxMin::fill`], kept between calls so an event allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct MaxMin {
    count: Vec<u32>,
    head: Vec<u32>,
    next: Vec<u32>,
    level: Vec<f64>,
    open: Vec<u32>,
    touched: Vec<u32>,
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
}

const NIL: u32 = u32::MAX;

impl MaxMin {
    /// Max-min fair rates for `flows` (indices into `src`/`dst`) on what `res` has left, by
    /// progressive filling (Bertsekas & Gallager, Data Networks §6.5.2): raise all rates
    /// together; when a port fills, freeze its flows. Writes `rate[f]` and takes the capacity
    /// from `res`. Ports are numbered `0..n` for egress and `n..2n` for ingress.
    ///
    /// CORRECTNESS: when the port with the lowest level `L` freezes, every other port's level
    /// `(free - L) / (count - 1)` can only rise, so the next port to freeze is the lowest of
    /// the updated levels. O(F + P^2).
    pub fn fill(&mut self, flows: &[u32], src: &[u32], dst: &[u32], res: &mut Residual, rate: &mut [f64]) {
        self.fill_weighted(flows, src, dst, None, res, rate);
    }

    /// [`MaxMin::fill`] where item `f` stands for `weight[f]` identical flows (all flows
    /// between one pair of ports get the same max-min rate, so FAIR can fill per pair):
    /// `rate[f]` is the rate of each, and `weight[f]` times it is taken from the ports.
    pub fn fill_weighted(
        &mut self,
        flows: &[u32],
        src: &[u32],
        dst: &[u32],
        weight: Option<&[u32]>,
        res: &mut Residual,
        rate: &mut [f64],
    ) {
        let w = |f: usize| weight.map_or(1, |w| w[f]);
        let n = res.egress.len();
        self.count.resize(2 * n, 0);
        self.head.resize(2 * n, NIL);
        self.is_dirty.resize(2 * n, false);
        self.next.resize(2 * flows.len(), NIL);
        self.touched.clear();
        // Two intrusive lists: entry 2k links flow k in its egress list, 2k+1 in its ingress one.
        for (k, &f) in flows.iter().enumerate() {
            let ports = [src[f as usize] as usize, n + dst[f as usize] as usize];
            for (side, &p) in ports.iter().enumerate() {
                if self.count[p] == 0 {
                    self.touched.push(p as u32);
                    self.head[p] = NIL;
                }
                self.count[p] += w(f as usize);
                self.next[2 * k + side] = self.head[p];
                self.head[p] = (2 * k + side) as u32;
            }
            rate[f as usize] = f64::NAN;
        }
        let free = |res: &Residual, p: usize| if p < n { res.egress[p] } else { res.ingress[p - n] };
        self.level.resize(2 * n, f64::INFINITY);
        self.open.clear();
        for &p in &self.touched {
            let p = p as usize;
            self.level[p] = free(res, p).max(0.0) / self.count[p] as f64;
            self.open.push(p as u32);
        }
        // PERF: a linear scan of the open ports for the lowest level (ties: lowest port), not a
        // heap: with one heap entry per (freeze, touched port) FAIR spent most of its time in
        // heap pops on the full trace; the scan is O(P) per freeze, O(P^2) per fill at worst.
        while !self.open.is_empty() {
            let mut at = 0;
            for i in 1..self.open.len() {
                let (p, q) = (self.open[i] as usize, self.open[at] as usize);
                if self.level[p] < self.level[q] || (self.level[p] == self.level[q] && p < q) {
                    at = i;
                }
            }
            let p = self.open.swap_remove(at) as usize;
            if self.count[p] == 0 {
                continue;
            }
            let level = self.level[p];
            let level = if level <= res.eps { 0.0 } else { level };
            let mut e = self.head[p];
            while e != NIL {
                let k = (e / 2) as usize;
                let f = flows[k] as usize;
                if rate[f].is_nan() {
                    rate[f] = level;
                    let (s, d) = (src[f], dst[f]);
                    res.take(s, d, level * w(f) as f64);
                    let other = if e & 1 == 0 { n + d as usize } else { s as usize };
                    self.count[other] -= w(f);
                    if !std::mem::replace(&mut self.is_dirty[other], true) {
                        self.dirty.push(other as u32);
                    }
                }
                e = self.next[e as usize];
            }
            self.count[p] = 0;
            for &o in &self.dirty {
                let o = o as usize;
                self.is_dirty[o] = false;
                self.level[o] = if self.count[o] > 0 { free(res, o).max(0.0) / self.count[o] as f64 } else { f64::INFINITY };
            }
            self.dirty.clear();
            // Ports whose flows all froze elsewhere drop out.
            let count = &self.count;
            self.open.retain(|&o| count[o as usize] > 0);
        }
        for &p in &self.touched {
            self.count[p as usize] = 0;
        }
    }
}

/// Max-min fair rates for flows grouped by port pair, with the pairs kept as a dense `n x n`
/// matrix of flow counts (FAIR's and FETCH's per-pair path in [`crate::inter`]).
///
/// Progressive filling freezes ports, not flows: every pair freezes with the first of its two
/// ports to freeze, at that port's level, so the allocation is two numbers per port (its
/// freeze level and its place in the freeze order), and a pair's rate is read off its ports.
/// A freeze updates the opposite ports of the pairs it freezes: the whole row (or, via a
/// transposed copy, column) of the matrix when the port pairs with many, else the list of the
/// ports it pairs with (kept by `add` and `remove`).
///
/// CORRECTNESS: this is [`MaxMin::fill_weighted`] with the same arithmetic in the same order:
/// each open port's capacity loses `level * weight` once per freeze of an opposite port, in
/// freeze order, its level is recomputed as `free / count` after that freeze, and the port
/// that freezes next is the lowest level (ties: lowest port). So the rates are bit-identical
/// (`tests::pair_maxmin_is_bit_identical_to_fill_weighted`, and with flows removed as well as
/// added, `tests::pair_maxmin_with_removals_is_bit_identical_to_fill_weighted`).
///
/// PERF: the pair-by-pair fill built intrusive lists over up to 22,500 pairs and scanned every
/// open port for the lowest level at each freeze; FAIR spent 80% of its 14.6 s there on FB2010.
/// On FB2010 a fill has ~110 freezes (FAIR, ~14,700 pairs with flows; FETCH:5, ~3,200), so a
/// freeze's update is the inner loop: branch-free (whole row, or list when the port pairs with
/// under a third of the others), it does not wait on a mispredicted branch before each
/// division as the loop over the open ports with a pair did (~30% of the fill's samples sat
/// on the division's result).
#[derive(Clone, Debug, Default)]
pub struct PairMaxMin {
    n: usize,
    /// Flows between `s` and `d`: `weight[s * n + d]`, and transposed, `weight_t[d * n + s]`.
    /// PERF: `f64` (exact: counts are far below 2^53), so a freeze's row update converts
    /// nothing and vectorizes.
    weight: Vec<f64>,
    weight_t: Vec<f64>,
    /// Per port, the opposite ports it has a pair with: egress `s`'s ingress ports are
    /// `adj[s * n..][..deg[s]]`, ingress `d`'s egress ports `adj_t[d * n..][..deg[n + d]]`
    /// (in no particular order); `at[s * n + d]` and `at_t[d * n + s]` are the places of a
    /// pair in them. PERF: under FETCH a port has pairs with a fifth of the others, and a
    /// freeze then updates those only.
    adj: Vec<u32>,
    adj_t: Vec<u32>,
    at: Vec<u32>,
    at_t: Vec<u32>,
    deg: Vec<u32>,
    /// Per port (egress `0..n`, ingress `n..2n`), during [`PairMaxMin::fill`]: its free
    /// capacity, its flows not yet frozen (as `f64`, exact), and their level.
    free: Vec<f64>,
    count: Vec<f64>,
    level: Vec<f64>,
    /// Per port, all its flows (the row and column sums of `weight`).
    total: Vec<u32>,
    /// Per port, after [`PairMaxMin::fill`]: the level it froze at (0 if at or below `eps`),
    /// and its place in the freeze order (`u32::MAX` if it never froze: all its pairs froze
    /// at their other port).
    frozen_at: Vec<f64>,
    seq: Vec<u32>,
    /// Per port, `1 / frozen_at` (infinite for 0), for [`PairMaxMin::rates_of`].
    inv_at: Vec<f64>,
}

impl PairMaxMin {
    /// No flows between `n` ports.
    pub fn new(n: usize) -> PairMaxMin {
        PairMaxMin {
            n,
            weight: vec![0.0; n * n],
            weight_t: vec![0.0; n * n],
            adj: vec![0; n * n],
            adj_t: vec![0; n * n],
            at: vec![0; n * n],
            at_t: vec![0; n * n],
            deg: vec![0; 2 * n],
            free: vec![0.0; 2 * n],
            count: vec![0.0; 2 * n],
            total: vec![0; 2 * n],
            level: vec![f64::INFINITY; 2 * n],
            frozen_at: vec![f64::INFINITY; 2 * n],
            inv_at: vec![0.0; 2 * n],
            seq: vec![u32::MAX; 2 * n],
        }
    }

    /// Flows between `s` and `d`.
    pub fn weight(&self, s: u32, d: u32) -> u32 {
        self.weight[s as usize * self.n + d as usize] as u32
    }

    /// One more flow between `s` and `d`.
    pub fn add(&mut self, s: u32, d: u32) {
        let n = self.n;
        let (s, d) = (s as usize, d as usize);
        if self.weight[s * n + d] == 0.0 {
            let (k, l) = (self.deg[s] as usize, self.deg[n + d] as usize);
            self.adj[s * n + k] = d as u32;
            self.at[s * n + d] = k as u32;
            self.adj_t[d * n + l] = s as u32;
            self.at_t[d * n + s] = l as u32;
            self.deg[s] += 1;
            self.deg[n + d] += 1;
        }
        let (s, d) = (s as u32, d as u32);
        self.weight[s as usize * self.n + d as usize] += 1.0;
        self.weight_t[d as usize * self.n + s as usize] += 1.0;
        self.total[s as usize] += 1;
        self.total[self.n + d as usize] += 1;
    }

    /// One flow fewer between `s` and `d`. PRECONDITION: there is one.
    pub fn remove(&mut self, s: u32, d: u32) {
        debug_assert!(self.weight(s, d) > 0, "no flow between {s} and {d}");
        self.weight[s as usize * self.n + d as usize] -= 1.0;
        self.weight_t[d as usize * self.n + s as usize] -= 1.0;
        self.total[s as usize] -= 1;
        self.total[self.n + d as usize] -= 1;
        let n = self.n;
        let (s, d) = (s as usize, d as usize);
        if self.weight[s * n + d] == 0.0 {
            // Swap-remove the pair from both lists.
            self.deg[s] -= 1;
            let (k, last) = (self.at[s * n + d] as usize, self.deg[s] as usize);
            let moved = self.adj[s * n + last] as usize;
            self.adj[s * n + k] = moved as u32;
            self.at[s * n + moved] = k as u32;
            self.deg[n + d] -= 1;
            let (l, last) = (self.at_t[d * n + s] as usize, self.deg[n + d] as usize);
            let moved = self.adj_t[d * n + last] as usize;
            self.adj_t[d * n + l] = moved as u32;
            self.at_t[d * n + moved] = l as u32;
        }
    }

    /// The rate of each flow between `s` and `d` after the last [`PairMaxMin::fill`], for a
    /// pair that had flows then.
    pub fn rate(&self, s: u32, d: u32) -> f64 {
        let (e, i) = (s as usize, self.n + d as usize);
        if self.seq[e] < self.seq[i] {
            self.frozen_at[e]
        } else {
            self.frozen_at[i]
        }
    }

    /// [`PairMaxMin::rate`] of the pairs `(src[i], dst[i])` into `rate[i]`, and its inverse
    /// (`1 / rate`, rounded; infinite for 0) into `inv[i]`, for pairs that had flows at the last
    /// [`PairMaxMin::fill`].
    pub fn rates_of(&self, src: &[u32], dst: &[u32], rate: &mut [f64], inv: &mut [f64]) {
        let n = self.n;
        let (seq, at, inv_at) = (&self.seq[..2 * n], &self.frozen_at[..2 * n], &self.inv_at[..2 * n]);
        for (((r, v), &s), &d) in rate.iter_mut().zip(inv.iter_mut()).zip(src).zip(dst) {
            let (s, i) = (s as usize, n + d as usize);
            // PERF: pick the port first (a conditional move), then load from it: selecting
            // between the two ports' values compiled to a branch, which port froze first is
            // unpredictable, and the mispredictions were most of this pass.
            let b = if seq[s] < seq[i] { s } else { i };
            *r = at[b];
            *v = inv_at[b];
        }
    }

    /// Max-min fair rates for all the flows added (and not removed) on what `res` has left;
    /// takes the capacity from `res`. Read them with [`PairMaxMin::rate`].
    pub fn fill(&mut self, res: &mut Residual) {
        let n = self.n;
        debug_assert_eq!(res.egress.len(), n, "PairMaxMin built for another fabric");
        self.free[..n].copy_from_slice(&res.egress);
        self.free[n..].copy_from_slice(&res.ingress);
        // PERF: port totals kept by `add` and `remove`, not summed over the pairs per fill.
        // INVARIANT: `level[p]` is `free[p].max(0) / count[p]` for the open ports (flows not
        // yet frozen) and infinite for the others (no flows, frozen, or all their flows frozen
        // at the other end).
        for p in 0..2 * n {
            self.count[p] = self.total[p] as f64;
            self.seq[p] = u32::MAX;
            self.level[p] = if self.count[p] > 0.0 { self.free[p].max(0.0) / self.count[p] } else { f64::INFINITY };
        }
        let mut num_frozen = 0u32;
        // PERF: each side's lowest level by a branch-free pass over its levels (a freeze
        // changes the other side's levels, and removes one from its own), not by scanning
        // lists of open ports with a compare-and-branch per port.
        let mut best = [lowest(&self.level[..n]), lowest(&self.level[n..])];
        loop {
            // The lowest level (ties: lowest port, egress before ingress), as
            // `MaxMin::fill_weighted` picks it.
            let side = usize::from(best[1].0 < best[0].0);
            let (best_level, at) = best[side];
            if best_level == f64::INFINITY {
                break;
            }
            let p = side * n + at;
            let level = if best_level <= res.eps { 0.0 } else { best_level };
            self.frozen_at[p] = level;
            self.inv_at[p] = 1.0 / level;
            self.seq[p] = num_frozen;
            num_frozen += 1;
            // PERF: p's own capacity goes in one subtraction (its level times its flows not
            // yet frozen), not pair by pair as in `MaxMin::fill_weighted`: that was a chain of
            // dependent subtractions per freeze, and p's capacity is read no more (its rates
            // are fixed), so the rates stay bit-identical.
            self.free[p] -= level * self.count[p];
            self.count[p] = 0.0;
            self.level[p] = f64::INFINITY;
            // Freeze p's pairs whose other port is still open, and update those ports.
            let (row, adj) = if side == 0 { (&self.weight, &self.adj) } else { (&self.weight_t, &self.adj_t) };
            let row = &row[at * n..(at + 1) * n];
            let adj = &adj[at * n..at * n + self.deg[p] as usize];
            let o = (1 - side) * n..(2 - side) * n;
            let (free, count, lv) = (&mut self.free[o.clone()], &mut self.count[o.clone()], &mut self.level[o]);
            let update = |q: usize, free: &mut [f64], count: &mut [f64], lv: &mut [f64]| {
                let c = count[q];
                let w = if c > 0.0 { row[q] } else { 0.0 };
                let f = free[q] - level * w;
                let c = c - w;
                free[q] = f;
                count[q] = c;
                lv[q] = if c > 0.0 { f.max(0.0) / c } else { f64::INFINITY };
            };
            // PERF: branch-free over the whole row (and so vectorized), not only over the open
            // ports with a pair to p: the branch on a pair's weight mispredicted, and each
            // division waited on it. CORRECTNESS: a port without a pair to p (`w` 0) loses
            // `level * 0`, so keeps its capacity exactly, and its level is recomputed from the
            // same two numbers, so it is the same; a port no longer open keeps count 0 and an
            // infinite level. So this is `MaxMin::fill_weighted`'s arithmetic, bit for bit.
            if 3 * adj.len() > n {
                for q in 0..n {
                    update(q, free, count, lv);
                }
            } else {
                for &q in adj {
                    update(q as usize, free, count, lv);
                }
            }
            best = [lowest(&self.level[..n]), lowest(&self.level[n..])];
        }
        for p in 0..2 * n {
            res.set_port(p, self.free[p]);
        }
    }
}

/// The lowest value in `v` and the first index holding it (`INFINITY` if none is lower).
pub(crate) fn lowest(v: &[f64]) -> (f64, usize) {
    // Four independent minima, so the pass pipelines (and vectorizes).
    let mut m = [f64::INFINITY; 4];
    let mut chunks = v.chunks_exact(4);
    for c in &mut chunks {
        for i in 0..4 {
            m[i] = if c[i] < m[i] { c[i] } else { m[i] };
        }
    }
    let mut low = chunks.remainder().iter().fold(f64::INFINITY, |a, &x| if x < a { x } else { a });
    for x in m {
        low = if x < low { x } else { low };
    }
    // PERF: the first chunk holding it by a branch-free test of eight at a time, then the
    // place in that chunk: a plain `position` was a fifth of `PairMaxMin::fill`'s time.
    let mut base = 0;
    for c in v.chunks(8) {
        if c.iter().fold(false, |any, &x| any | (x == low)) {
            return (low, base + c.iter().position(|&x| x == low).unwrap_or(0));
        }
        base += c.len();
    }
    (low, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testrng::{random_fabric, splitmix};

    #[test]
    fn lowest_finds_the_first_least() {
        assert_eq!(lowest(&[]), (f64::INFINITY, 0));
        assert_eq!(lowest(&[f64::INFINITY; 3]), (f64::INFINITY, 0));
        let mut next = splitmix(3);
        for len in 1..40 {
            for _ in 0..50 {
                // Few distinct values, so the least repeats.
                let v: Vec<f64> = (0..len).map(|_| (next() % 4) as f64).collect();
                let low = v.iter().fold(f64::INFINITY, |a, &x| a.min(x));
                assert_eq!(lowest(&v), (low, v.iter().position(|&x| x == low).unwrap()), "{v:?}");
            }
        }
    }

    /// Flows added and removed at random (so pairs come and go, and the adjacency lists are
    /// swap-removed from), on fabrics large enough that freezes take both the per-row and the
    /// per-list update: every fill bit-identical to `MaxMin::fill_weighted`'s.
    #[test]
    fn pair_maxmin_with_removals_is_bit_identical_to_fill_weighted() {
        let mut next = splitmix(11);
        for round in 0..300 {
            let n = 1 + (next() % 40) as usize;
            let fab = Fabric {
                egress: (0..n).map(|_| 1.0 + (next() % 1000) as f64 / 7.0).collect(),
                ingress: (0..n).map(|_| if round % 2 == 0 { 12.0 } else { 1.0 + (next() % 1000) as f64 / 7.0 }).collect(),
            };
            let src: Vec<u32> = (0..n * n).map(|p| (p / n) as u32).collect();
            let dst: Vec<u32> = (0..n * n).map(|p| (p % n) as u32).collect();
            let mut pm = PairMaxMin::new(n);
            let mut weight = vec![0u32; n * n];
            // Sparse rounds (a port pairs with few others) and dense ones.
            let span = if round % 3 == 0 { n * n } else { 3 * n };
            for step in 0..30 {
                for _ in 0..1 + next() % (2 * n as u64) {
                    let pair = (next() % span as u64) as usize % (n * n);
                    let (s, d) = (src[pair], dst[pair]);
                    if weight[pair] > 0 && next() & 1 == 0 {
                        weight[pair] -= 1;
                        pm.remove(s, d);
                    } else {
                        weight[pair] += 1;
                        pm.add(s, d);
                    }
                }
                for (pair, &w) in weight.iter().enumerate() {
                    assert_eq!(pm.weight(src[pair], dst[pair]), w);
                }
                let pairs: Vec<u32> = (0..n * n).filter(|&p| weight[p] > 0).map(|p| p as u32).collect();
                let mut rate = vec![0.0; n * n];
                let mut res1 = Residual::new(&fab);
                MaxMin::default().fill_weighted(&pairs, &src, &dst, Some(&weight), &mut res1, &mut rate);
                let mut res2 = Residual::new(&fab);
                pm.fill(&mut res2);
                for &p in &pairs {
                    let got = pm.rate(src[p as usize], dst[p as usize]);
                    assert_eq!(got.to_bits(), rate[p as usize].to_bits(), "round {round} step {step}: pair {p}");
                }
                // What is left: the same up to rounding (a frozen port's capacity goes in one
                // subtraction here, pair by pair there).
                let left = |r: &Residual| r.egress.iter().chain(&r.ingress).copied().collect::<Vec<f64>>();
                for (a, b) in left(&res1).into_iter().zip(left(&res2)) {
                    assert!((a - b).abs() <= res1.eps, "round {round} step {step}: {a} vs {b} left");
                }
            }
        }
    }

    #[test]
    fn bottleneck_is_most_loaded_port() {
        let f = Fabric::uniform(3, 10.0);
        // Port 2 receives 30 bytes: 3 s.
        assert_eq!(f.bottleneck_time([(0, 2, 10.0), (1, 2, 20.0)]), 3.0);
    }

    #[test]
    fn maxmin_two_flows_share_a_port_and_a_third_gets_the_rest() {
        let fab = Fabric::uniform(3, 12.0);
        let mut res = Residual::new(&fab);
        // Flows 0 and 1 into port 2; flow 2 from port 0 to port 1.
        let (src, dst) = ([0, 1, 0], [2, 2, 1]);
        let mut rate = [0.0; 3];
        MaxMin::default().fill(&[0, 1, 2], &src, &dst, &mut res, &mut rate);
        assert_eq!(rate, [6.0, 6.0, 6.0]);
        let mut res = Residual::new(&fab);
        MaxMin::default().fill(&[0, 1], &src, &dst, &mut res, &mut rate);
        assert_eq!(&rate[..2], &[6.0, 6.0]);
        assert_eq!(res.egress, vec![6.0, 6.0, 12.0]);
    }

    #[test]
    fn maxmin_redistributes_what_a_bottlenecked_flow_cannot_use() {
        let fab = Fabric::uniform(4, 12.0);
        let mut res = Residual::new(&fab);
        // Three flows out of port 0 (4 each), one of them also shares ingress 3 with a flow
        // from port 1, which then gets 12 - 4 = 8.
        let (src, dst) = ([0, 0, 0, 1], [1, 2, 3, 3]);
        let mut rate = [0.0; 4];
        MaxMin::default().fill(&[0, 1, 2, 3], &src, &dst, &mut res, &mut rate);
        assert_eq!(rate, [4.0, 4.0, 4.0, 8.0]);
    }

    #[test]
    fn pair_maxmin_is_bit_identical_to_fill_weighted() {
        let mut next = splitmix(7);
        for round in 0..2000 {
            let n = 1 + (next() % 12) as usize;
            let fab = random_fabric(&mut next, n, round % 2 == 0);
            let mut res = Residual::new(&fab);
            // Some capacity already taken, some ports full (as after higher-priority work).
            for p in 0..n {
                if next().is_multiple_of(3) {
                    let d = (next() % n as u64) as u32;
                    let h = res.headroom(p as u32, d);
                    res.take(p as u32, d, h * (next() % 5) as f64 / 4.0);
                }
            }
            let mut pm = PairMaxMin::new(n);
            let mut weight = vec![0u32; n * n];
            let mut pairs = Vec::new();
            for (pair, w) in weight.iter_mut().enumerate() {
                if next().is_multiple_of(3) {
                    *w = 1 + (next() % 4) as u32;
                    pairs.push(pair as u32);
                    for _ in 0..*w {
                        pm.add((pair / n) as u32, (pair % n) as u32);
                    }
                }
            }
            let src: Vec<u32> = (0..n * n).map(|p| (p / n) as u32).collect();
            let dst: Vec<u32> = (0..n * n).map(|p| (p % n) as u32).collect();
            let mut rate = vec![0.0; n * n];
            let mut res1 = res.clone();
            MaxMin::default().fill_weighted(&pairs, &src, &dst, Some(&weight), &mut res1, &mut rate);
            let mut res2 = res.clone();
            pm.fill(&mut res2);
            for &p in &pairs {
                let got = pm.rate(src[p as usize], dst[p as usize]);
                assert_eq!(got.to_bits(), rate[p as usize].to_bits(), "round {round}: pair {p}: {got} vs {}", rate[p as usize]);
            }
        }
    }
}
