//! A closed loop: each host pair sends its next transfer when the previous one is delivered
//! (optionally after a think time), `count` transfers per pair. The shape of a request-response
//! client, or of an ATP job that sends message after message.
//!
//! Records one `loop` unit per pair when its last transfer ends: from the first start to the
//! last completion, with the ideal `count x ideal_fct(size) + (count - 1) x think`.

use units::{Dur, Time};

use super::{AppCtx, Application, TransferDone, TransferReq, UnitRecord};

/// Back-to-back transfers per `(src, dst)` pair.
#[derive(Clone, Debug)]
pub struct ClosedLoop {
    pairs: Vec<(u32, u32)>,
    size: u64,
    count: u32,
    think: Dur,
    prio: u8,
    /// Per pair: transfers started so far and when the first one started.
    started: Vec<(u32, Time)>,
    /// Pairs waiting for their think time to end, with when.
    waiting: Vec<(usize, Time)>,
}

impl ClosedLoop {
    /// `count` transfers of `size` bytes on each pair, `think` apart.
    pub fn new(pairs: Vec<(u32, u32)>, size: u64, count: u32, think: Dur, prio: u8) -> ClosedLoop {
        let n = pairs.len();
        ClosedLoop { pairs, size, count, think, prio, started: vec![(0, Time::ZERO); n], waiting: Vec::new() }
    }

    fn send(&mut self, pair: usize, ctx: &mut AppCtx<'_>) {
        let (src, dst) = self.pairs[pair];
        let req = TransferReq { prio: self.prio, tag: pair as u64, ..TransferReq::new(src, dst, self.size) };
        if ctx.start_transfer(req).is_ok() {
            let st = &mut self.started[pair];
            if st.0 == 0 {
                st.1 = ctx.now();
            }
            st.0 += 1;
        }
    }

    fn rearm(&self, ctx: &mut AppCtx<'_>) {
        match self.waiting.iter().map(|w| w.1).min() {
            Some(t) => ctx.sleep_until(t),
            None => ctx.cancel_sleep(),
        }
    }
}

impl Application for ClosedLoop {
    fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
        for p in 0..self.pairs.len() {
            if self.count > 0 {
                self.send(p, ctx);
            }
        }
    }

    fn on_timer(&mut self, ctx: &mut AppCtx<'_>) {
        let now = ctx.now();
        let due: Vec<usize> = self.waiting.iter().filter(|w| w.1 <= now).map(|w| w.0).collect();
        self.waiting.retain(|w| w.1 > now);
        for p in due {
            self.send(p, ctx);
        }
        self.rearm(ctx);
    }

    fn on_transfer_done(&mut self, done: &TransferDone, ctx: &mut AppCtx<'_>) {
        let pair = done.tag as usize;
        let Some(&(n, first)) = self.started.get(pair) else { return };
        if n < self.count {
            if self.think == Dur::ZERO {
                self.send(pair, ctx);
            } else {
                self.waiting.push((pair, ctx.now().saturating_add(self.think)));
                self.rearm(ctx);
            }
            return;
        }
        let (src, dst) = self.pairs[pair];
        let ideal = ctx
            .ideal_fct(src, dst, self.size)
            .saturating_mul(self.count as u64)
            .saturating_add(self.think.saturating_mul((self.count as u64).saturating_sub(1)));
        ctx.record_unit(UnitRecord {
            app: 0,
            kind: "loop",
            unit: pair as u64,
            start: first,
            end: ctx.now(),
            ideal: Some(ideal),
            num_transfers: self.count,
            bytes: self.size.saturating_mul(self.count as u64),
            job: None,
            sent: None,
            src: None,
            dst: None,
            lost_fraction: None,
        });
    }
}
