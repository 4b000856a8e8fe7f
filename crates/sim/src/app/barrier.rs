//! Rounds separated by a barrier: each round is a compute phase, then a set of transfers
//! started together; the next round begins when the last of them ends. The shape of a
//! training iteration (compute, then synchronise gradients, then wait for everyone) or of a
//! shuffle stage.
//!
//! Records one `iteration` unit per round: from the start of its compute phase to the end of
//! its last transfer, with the ideal `compute + max(slowest, busiest host)`: `slowest` is the
//! largest `ideal_fct` of its transfers, each alone in the network, and `busiest host` the
//! longest time any host's link needs to carry the payload the round sends from it or to it
//! (the coflow bottleneck bound, Varys §4). Both are lower bounds, so the ideal is one too; it
//! is reached when the transfers share no link.

use units::{Dur, Time};

use super::{AppCtx, Application, TransferDone, TransferReq, UnitRecord};

/// `rounds` rounds of the same transfers, each after `compute`.
#[derive(Clone, Debug)]
pub struct Barrier {
    transfers: Vec<TransferReq>,
    rounds: u32,
    compute: Dur,
    round: u32,
    round_start: Time,
    outstanding: u32,
}

impl Barrier {
    /// Rounds of `transfers` (their `tag`s are replaced by the round number).
    pub fn new(transfers: Vec<TransferReq>, rounds: u32, compute: Dur) -> Barrier {
        Barrier { transfers, rounds, compute, round: 0, round_start: Time::ZERO, outstanding: 0 }
    }

    fn begin_round(&mut self, ctx: &mut AppCtx<'_>) {
        self.round_start = ctx.now();
        if self.compute == Dur::ZERO {
            self.communicate(ctx);
        } else {
            ctx.sleep_for(self.compute);
        }
    }

    /// The longest time any host's link needs for the payload the round sends from or to it.
    fn busiest_host(&self, ctx: &AppCtx<'_>) -> Dur {
        let mut load: std::collections::BTreeMap<(u32, bool), u64> = std::collections::BTreeMap::new();
        for t in &self.transfers {
            *load.entry((t.src, true)).or_default() += t.size;
            *load.entry((t.dst, false)).or_default() += t.size;
        }
        load.iter()
            .map(|(&(h, _), &bytes)| ctx.host_rate(h).tx_time(units::Bytes(bytes)))
            .max()
            .unwrap_or(Dur::ZERO)
    }

    fn communicate(&mut self, ctx: &mut AppCtx<'_>) {
        self.outstanding = 0;
        for t in &self.transfers {
            if ctx.start_transfer(TransferReq { tag: self.round as u64, ..*t }).is_ok() {
                self.outstanding += 1;
            }
        }
    }
}

impl Application for Barrier {
    fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
        if self.rounds > 0 && !self.transfers.is_empty() {
            self.begin_round(ctx);
        }
    }

    fn on_timer(&mut self, ctx: &mut AppCtx<'_>) {
        self.communicate(ctx);
    }

    fn on_transfer_done(&mut self, done: &TransferDone, ctx: &mut AppCtx<'_>) {
        if done.tag != self.round as u64 || self.outstanding == 0 {
            return;
        }
        self.outstanding -= 1;
        if self.outstanding > 0 {
            return;
        }
        let slowest = self.transfers.iter().map(|t| ctx.ideal_fct(t.src, t.dst, t.size)).max().unwrap_or(Dur::ZERO);
        let busiest = self.busiest_host(ctx);
        ctx.record_unit(UnitRecord {
            app: 0,
            kind: "iteration",
            unit: self.round as u64,
            start: self.round_start,
            end: ctx.now(),
            ideal: Some(self.compute.saturating_add(slowest.max(busiest))),
            num_transfers: u32::try_from(self.transfers.len()).unwrap_or(u32::MAX),
            bytes: self.transfers.iter().fold(0u64, |a, t| a.saturating_add(t.size)),
            job: None,
            sent: None,
            src: None,
            dst: None,
            lost_fraction: None,
        });
        self.round += 1;
        if self.round < self.rounds {
            self.begin_round(ctx);
        }
    }
}
