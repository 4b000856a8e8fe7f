//! Data-parallel training (Xia et al., APNet'19, `shared/papers/bounded-loss-transport-for-ml.txt`
//! §2.1, §3.1): every iteration is a compute phase on every worker, then the synchronisation of
//! the model (`model_bytes` of gradients per worker) among the `N` workers, then a barrier; the
//! next iteration starts when the last transfer of this one ends. Two synchronisation patterns:
//! - `ps` (parameter server): every worker pushes `model_bytes` to the server; once every push
//!   has ended, the server sends `model_bytes` back to every worker (the pull); the iteration
//!   ends with the last pull. Pushes and pulls are each an N-to-1 / 1-to-N burst (§2.1: "multiple
//!   flows are generated almost simultaneously").
//! - `ring` (ring all-reduce): `2 (N - 1)` steps (reduce-scatter, then all-gather); at step `s`
//!   worker `i` sends a chunk of `ceil(model_bytes / N)` bytes to worker `i + 1 mod N`. A worker
//!   sends its step-`s` chunk once it has received its predecessor's step-`s - 1` chunk (the data
//!   it reduces into it); the iteration ends when every worker has received all `2 (N - 1)`.
//!
//! A transfer that ends with only enough of its data (a loss-tolerant transport,
//! `Outcome::Enough`) counts as done, as does one given up (`Outcome::GivenUp`: the iteration
//! goes on with what arrived; it is counted in the unit's `num_transfers` like the others).
//!
//! Records one `iteration` unit per iteration, from the start of its compute phase to its
//! barrier, with the ideal `compute + ` the contention-free synchronisation: for `ps`, twice
//! the larger of one push alone and the server link carrying `N x model_bytes`; for `ring`,
//! `2 (N - 1)` chunk transfers alone. The paper's job time, eq. (1), `epochs x (compute + 2 x
//! network)`, is the sum of the iterations' durations here (our network time is measured, push
//! and pull, or all ring steps, included). The row also carries what the iteration's transfers
//! sent (bytes, packets, retransmissions) and, as its `loss_rate`, the largest fraction of any
//! one transfer's bytes that did not arrive: 0 over a reliable transport, at most `1 - p` over
//! the bounded-loss transport (what each worker's or the server's aggregate went without).
//!
//! Transfer tags: `iteration << 32 | phase << 24 | step`, phase 0 for a push or a ring step,
//! 1 for a pull.

use units::{Dur, Time};

use super::{AppCtx, Application, Outcome, TransferDone, TransferReq, UnitRecord};

/// How the workers synchronise (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncPattern {
    /// A parameter server: push to it, then pull from it.
    Ps,
    /// Ring all-reduce.
    Ring,
}

/// The knobs of one entry (validated by `spec`).
#[derive(Clone, Debug)]
pub struct TrainingConf {
    /// Synchronisation pattern.
    pub pattern: SyncPattern,
    /// The workers' hosts (at least two, distinct).
    pub workers: Vec<u32>,
    /// `ps`: the server's host (not a worker).
    pub server: u32,
    /// Gradient bytes per worker per iteration.
    pub model_bytes: u64,
    /// Iterations.
    pub iterations: u32,
    /// Compute phase of every iteration.
    pub compute: Dur,
    /// When the first iteration starts.
    pub start: Time,
    /// Priority class of the transfers.
    pub prio: u8,
}

/// Data-parallel training iterations (module docs).
#[derive(Clone, Debug)]
pub struct Training {
    conf: TrainingConf,
    iteration: u32,
    iter_start: Time,
    /// Transfers of this iteration's current phase still running (`ps`), or chunks not yet
    /// received by all workers (`ring`).
    outstanding: u64,
    /// `ps`: in the pull phase.
    pulling: bool,
    /// `ring`: per worker, steps received and steps sent this iteration.
    received: Vec<u32>,
    sent: Vec<u32>,
    transfers: u32,
    /// This iteration's largest fraction of a transfer's bytes not delivered.
    worst_lost: f64,
    /// This iteration's payload bytes, packets and retransmitted packets sent.
    iter_sent: (u64, u64, u64),
    started: bool,
}

const PULL: u64 = 1;

impl Training {
    /// The application for `conf`.
    pub fn new(conf: TrainingConf) -> Training {
        let n = conf.workers.len();
        Training {
            conf,
            iteration: 0,
            iter_start: Time::ZERO,
            outstanding: 0,
            pulling: false,
            received: vec![0; n],
            sent: vec![0; n],
            transfers: 0,
            worst_lost: 0.0,
            iter_sent: (0, 0, 0),
            started: false,
        }
    }

    fn steps(&self) -> u32 {
        2 * (self.conf.workers.len() as u32 - 1)
    }

    fn chunk(&self) -> u64 {
        self.conf.model_bytes.div_ceil(self.conf.workers.len() as u64).max(1)
    }

    fn tag(&self, phase: u64, step: u32) -> u64 {
        (self.iteration as u64) << 32 | phase << 24 | u64::from(step)
    }

    fn start(&mut self, src: u32, dst: u32, size: u64, tag: u64, ctx: &mut AppCtx<'_>) -> bool {
        let req = TransferReq { tag, prio: self.conf.prio, ..TransferReq::new(src, dst, size) };
        let ok = ctx.start_transfer(req).is_ok();
        self.transfers += u32::from(ok);
        ok
    }

    fn begin_iteration(&mut self, ctx: &mut AppCtx<'_>) {
        self.iter_start = ctx.now();
        self.transfers = 0;
        self.worst_lost = 0.0;
        self.iter_sent = (0, 0, 0);
        if self.conf.compute == Dur::ZERO {
            self.synchronise(ctx);
        } else {
            ctx.sleep_for(self.conf.compute);
        }
    }

    /// The compute phase is over: start the synchronisation.
    fn synchronise(&mut self, ctx: &mut AppCtx<'_>) {
        match self.conf.pattern {
            SyncPattern::Ps => {
                self.pulling = false;
                self.outstanding = 0;
                for i in 0..self.conf.workers.len() {
                    let (w, s) = (self.conf.workers[i], self.conf.server);
                    if self.start(w, s, self.conf.model_bytes, self.tag(0, 0), ctx) {
                        self.outstanding += 1;
                    }
                }
            }
            SyncPattern::Ring => {
                let n = self.conf.workers.len();
                self.received.iter_mut().for_each(|r| *r = 0);
                self.sent.iter_mut().for_each(|s| *s = 0);
                self.outstanding = n as u64 * u64::from(self.steps());
                for i in 0..n {
                    self.ring_send(i, ctx);
                }
            }
        }
        if self.outstanding == 0 {
            // Nothing could start (validation makes this unreachable): end the iteration
            // rather than wait forever.
            self.end_iteration(ctx);
        }
    }

    /// `ring`: worker `i` sends its next chunk if it may (module docs).
    fn ring_send(&mut self, i: usize, ctx: &mut AppCtx<'_>) {
        let s = self.sent[i];
        if s >= self.steps() || s > self.received[i] {
            return;
        }
        self.sent[i] += 1;
        let n = self.conf.workers.len();
        let (src, dst) = (self.conf.workers[i], self.conf.workers[(i + 1) % n]);
        if !self.start(src, dst, self.chunk(), self.tag(0, s), ctx) {
            // Refused (unreachable after validation): count it received so the ring moves on.
            self.on_ring_chunk((i + 1) % n, ctx);
        }
    }

    /// `ring`: worker `j` received a chunk.
    fn on_ring_chunk(&mut self, j: usize, ctx: &mut AppCtx<'_>) {
        self.received[j] += 1;
        self.outstanding = self.outstanding.saturating_sub(1);
        self.ring_send(j, ctx);
    }

    fn ideal_network(&self, ctx: &AppCtx<'_>) -> Dur {
        let c = &self.conf;
        match c.pattern {
            SyncPattern::Ps => {
                let one = c.workers.iter().map(|&w| ctx.ideal_fct(w, c.server, c.model_bytes)).max().unwrap_or(Dur::ZERO);
                let bytes = c.model_bytes.saturating_mul(c.workers.len() as u64);
                let server = ctx.host_rate(c.server).tx_time(units::Bytes(bytes));
                let phase = one.max(server);
                phase.saturating_add(phase)
            }
            SyncPattern::Ring => {
                let n = c.workers.len();
                let step = (0..n)
                    .map(|i| ctx.ideal_fct(c.workers[i], c.workers[(i + 1) % n], self.chunk()))
                    .max()
                    .unwrap_or(Dur::ZERO);
                Dur::from_ps(step.ps().saturating_mul(u64::from(self.steps())))
            }
        }
    }

    fn end_iteration(&mut self, ctx: &mut AppCtx<'_>) {
        let c = &self.conf;
        let bytes = match c.pattern {
            SyncPattern::Ps => c.model_bytes.saturating_mul(2 * c.workers.len() as u64),
            SyncPattern::Ring => self.chunk().saturating_mul(c.workers.len() as u64 * u64::from(self.steps())),
        };
        let ideal = c.compute.saturating_add(self.ideal_network(ctx));
        ctx.record_unit(UnitRecord {
            app: 0,
            kind: "iteration",
            unit: u64::from(self.iteration),
            start: self.iter_start,
            end: ctx.now(),
            ideal: Some(ideal),
            num_transfers: self.transfers,
            bytes,
            job: None,
            sent: Some(self.iter_sent),
            src: None,
            dst: None,
            lost_fraction: Some(self.worst_lost),
        });
        self.iteration += 1;
        if self.iteration < self.conf.iterations {
            self.begin_iteration(ctx);
        }
    }
}

impl Application for Training {
    fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
        if self.conf.iterations == 0 || self.conf.workers.len() < 2 {
            return;
        }
        if self.conf.start > ctx.now() {
            ctx.sleep_until(self.conf.start);
        } else {
            self.started = true;
            self.begin_iteration(ctx);
        }
    }

    fn on_timer(&mut self, ctx: &mut AppCtx<'_>) {
        if !self.started {
            self.started = true;
            self.begin_iteration(ctx);
        } else {
            self.synchronise(ctx);
        }
    }

    fn on_transfer_done(&mut self, done: &TransferDone, ctx: &mut AppCtx<'_>) {
        if done.tag >> 32 != u64::from(self.iteration) || self.outstanding == 0 {
            return;
        }
        // Complete, enough (a loss-tolerant transport) or given up: the data that will arrive
        // has arrived (module docs). A cancelled transfer is not ours to cancel.
        if done.outcome == Outcome::Cancelled {
            return;
        }
        let lost = 1.0 - done.delivered.min(done.size) as f64 / done.size.max(1) as f64;
        self.worst_lost = self.worst_lost.max(lost);
        let s = &mut self.iter_sent;
        *s = (s.0.saturating_add(done.bytes_sent), s.1.saturating_add(done.packets_sent), s.2.saturating_add(done.packets_retx));
        match self.conf.pattern {
            SyncPattern::Ps => {
                self.outstanding -= 1;
                if self.outstanding > 0 {
                    return;
                }
                if !self.pulling {
                    self.pulling = true;
                    for i in 0..self.conf.workers.len() {
                        let (w, s) = (self.conf.workers[i], self.conf.server);
                        if self.start(s, w, self.conf.model_bytes, self.tag(PULL, 0), ctx) {
                            self.outstanding += 1;
                        }
                    }
                    if self.outstanding > 0 {
                        return;
                    }
                }
                self.end_iteration(ctx);
            }
            SyncPattern::Ring => {
                let Some(j) = self.conf.workers.iter().position(|&w| w == done.dst) else { return };
                self.on_ring_chunk(j, ctx);
                if self.outstanding == 0 {
                    self.end_iteration(ctx);
                }
            }
        }
    }

    fn horizon(&self) -> Option<Time> {
        Some(self.conf.start)
    }
}
