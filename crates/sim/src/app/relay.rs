//! A relay chain: the first host of `chain` holds `num_blocks` blocks; every host forwards a
//! block to the next host as soon as it has received it and its previous forward has ended
//! (one transfer at a time per hop, in block order). The shape of a chain broadcast, and of
//! the block exchange of a BitTorrent-like one.
//!
//! Records one `block` unit per block when the last host has it (from the moment the first
//! host started sending it; ideal: `hops x ideal_fct(block)`), and one `broadcast` unit when
//! the last host has every block (from time zero; ideal: the pipelined chain,
//! `(num_blocks + hops - 1) x` the slowest hop's `ideal_fct(block)`).

use units::{Dur, Time};

use super::{AppCtx, Application, TransferDone, TransferReq, UnitRecord};

/// Blocks forwarded hop by hop along a chain of hosts.
#[derive(Clone, Debug)]
pub struct Relay {
    chain: Vec<u32>,
    block_bytes: u64,
    num_blocks: u32,
    /// Per host of the chain: blocks received so far (the first host has them all).
    have: Vec<u32>,
    /// Per hop: blocks forwarded (started) so far, and whether a forward is in flight.
    sent: Vec<u32>,
    busy: Vec<bool>,
    /// When the first host started sending each block.
    block_start: Vec<Time>,
}

impl Relay {
    /// A chain of at least two hosts relaying `num_blocks` blocks of `block_bytes`.
    pub fn new(chain: Vec<u32>, block_bytes: u64, num_blocks: u32) -> Relay {
        let hops = chain.len().saturating_sub(1);
        let mut have = vec![0; chain.len()];
        if let Some(h) = have.first_mut() {
            *h = num_blocks;
        }
        Relay {
            chain,
            block_bytes,
            num_blocks,
            have,
            sent: vec![0; hops],
            busy: vec![false; hops],
            block_start: vec![Time::ZERO; num_blocks as usize],
        }
    }

    /// Start the next forward on `hop` if its sender has the block and the hop is free.
    fn try_forward(&mut self, hop: usize, ctx: &mut AppCtx<'_>) {
        if self.busy[hop] || self.sent[hop] >= self.have[hop] {
            return;
        }
        let block = self.sent[hop];
        let tag = ((hop as u64) << 32) | block as u64;
        let req = TransferReq { tag, ..TransferReq::new(self.chain[hop], self.chain[hop + 1], self.block_bytes) };
        if ctx.start_transfer(req).is_ok() {
            if hop == 0 {
                self.block_start[block as usize] = ctx.now();
            }
            self.sent[hop] += 1;
            self.busy[hop] = true;
        }
    }

    fn hop_ideal(&self, ctx: &AppCtx<'_>) -> Vec<Dur> {
        self.chain.windows(2).map(|w| ctx.ideal_fct(w[0], w[1], self.block_bytes)).collect()
    }
}

impl Application for Relay {
    fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
        if !self.sent.is_empty() && self.num_blocks > 0 {
            self.try_forward(0, ctx);
        }
    }

    fn on_transfer_done(&mut self, done: &TransferDone, ctx: &mut AppCtx<'_>) {
        let hop = (done.tag >> 32) as usize;
        let block = (done.tag & 0xFFFF_FFFF) as u32;
        if hop >= self.busy.len() {
            return;
        }
        self.busy[hop] = false;
        self.have[hop + 1] = self.have[hop + 1].max(block + 1);
        let last_hop = hop + 1 == self.busy.len();
        if last_hop {
            let per_hop = self.hop_ideal(ctx);
            let sum: Dur = per_hop.iter().fold(Dur::ZERO, |a, &b| a.saturating_add(b));
            ctx.record_unit(UnitRecord {
                app: 0,
                kind: "block",
                unit: block as u64,
                start: self.block_start[block as usize],
                end: ctx.now(),
                ideal: Some(sum),
                num_transfers: u32::try_from(per_hop.len()).unwrap_or(u32::MAX),
                bytes: self.block_bytes.saturating_mul(per_hop.len() as u64),
                job: None,
                sent: None,
                src: None,
                dst: None,
                lost_fraction: None,
            });
            if block + 1 == self.num_blocks {
                let slowest = per_hop.iter().copied().max().unwrap_or(Dur::ZERO);
                let stages = (self.num_blocks as u64 + per_hop.len() as u64).saturating_sub(1);
                ctx.record_unit(UnitRecord {
                    app: 0,
                    kind: "broadcast",
                    unit: 0,
                    start: Time::ZERO,
                    end: ctx.now(),
                    ideal: Some(slowest.saturating_mul(stages)),
                    num_transfers: self.num_blocks.saturating_mul(u32::try_from(per_hop.len()).unwrap_or(u32::MAX)),
                    bytes: self.block_bytes.saturating_mul(self.num_blocks as u64).saturating_mul(per_hop.len() as u64),
                    job: None,
                    sent: None,
                    src: None,
                    dst: None,
                    lost_fraction: None,
                });
            }
        } else {
            self.try_forward(hop + 1, ctx);
        }
        self.try_forward(hop, ctx);
    }
}
