//! The host driver: transfers and the `proto` endpoints that carry them. It starts a transfer's
//! sender when an application asks, creates the receiver when the first packet arrives, drains
//! every endpoint after each input (transmit, re-arm its timer, handle its events) in the order
//! `proto` documents, and tells the application how the transfer ended.
//!
//! The driver does not know which transport it runs: a transfer's completion time ends where
//! the transport's properties say (at the sender once delivery is acknowledged, if the
//! transport confirms delivery and `run.fct_at = "sender"`; else when the receiver has what it
//! waits for), and its state is freed once the sender is done and delivery is confirmed or
//! seen at the receiver.
//!
//! INVARIANT: transfer `i` is the `i`-th transfer started in the run; its record is row `i`.
//! Released transfers keep their counters and ignore late packets and timers.

use proto::{Endpoint, Event as EpEvent, IntStack, Outcome};
use units::{AppId, Bps, FlowId, NodeId, Time};

use super::Simulation;
use crate::app::{TransferDone, TransferReq};
use crate::packet::Packet;
use crate::sched::Event;

/// What a transfer is: the application's request plus when and by whom it was started.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Transfer {
    /// Id reported in the records (a flow list's own id, or the transfer index).
    pub(crate) id: u64,
    pub(crate) src: u32,
    pub(crate) dst: u32,
    pub(crate) size: u64,
    pub(crate) start: Time,
    pub(crate) prio: u8,
    pub(crate) incast: bool,
    pub(crate) app: AppId,
    pub(crate) tag: u64,
    pub(crate) rate_cap: Option<Bps>,
    /// Index of its transport in the run's transports.
    pub(crate) transport: u16,
}

/// A lazily re-armed timer slot (generation-counter cancellation).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TimerSlot {
    pub(crate) scheduled: Option<Time>,
    pub(crate) generation: u32,
}

/// Runtime state of one transfer.
#[derive(Debug, Default)]
pub(crate) struct TransferRt {
    pub(crate) sender: Option<Endpoint>,
    pub(crate) receiver: Option<Endpoint>,
    pub(crate) timers: [TimerSlot; 2],
    /// When the completion time was measured.
    pub(crate) finished_at: Option<Time>,
    /// How it ended (set with `finished_at`).
    pub(crate) outcome: Option<Outcome>,
    /// The sender said it is done without knowing about delivery (an unreliable source).
    pub(crate) sender_done: bool,
    /// The receiver said it has what it waits for.
    pub(crate) delivered: bool,
    /// Whether the endpoints are done and freed (late packets and timers are ignored).
    pub(crate) released: bool,
    /// Counters captured when the endpoints were freed.
    pub(crate) final_rtos: u64,
    pub(crate) final_retx: u64,
    pub(crate) final_delivered: u64,
}

impl TransferRt {
    /// `(rtos, retransmitted segments, bytes delivered)` so far.
    pub(crate) fn counters(&self) -> (u64, u64, u64) {
        if self.released {
            return (self.final_rtos, self.final_retx, self.final_delivered);
        }
        let (a, b) = self.sender.as_ref().map_or((0, 0), |s| {
            let st = s.stats();
            (st.num_rtos, st.segments_retx)
        });
        (a, b, self.receiver.as_ref().map_or(0, |r| r.stats().bytes_received))
    }
}

impl Simulation {
    /// Start a transfer for application `app` now: create its sender and let it transmit.
    /// PRECONDITION: `req` passed `AppCtx::start_transfer`'s checks.
    pub(crate) fn start_transfer(&mut self, app: AppId, req: TransferReq) -> FlowId {
        let now = self.sched.now();
        let transport = req.transport.unwrap_or(self.app_transport.get(app.idx()).copied().unwrap_or(0));
        let f = self.transfers.len();
        let id = FlowId::from_idx(f);
        self.transfers.push(Transfer {
            id: req.label.unwrap_or(f as u64),
            src: req.src,
            dst: req.dst,
            size: req.size,
            start: now,
            prio: req.prio,
            incast: req.incast,
            app,
            tag: req.tag,
            rate_cap: req.rate_cap,
            transport,
        });
        let cfg = &self.transports[transport as usize].cfg;
        let mut sender = Endpoint::sender(cfg, f as u32, units::Bytes(req.size), now);
        if req.rate_cap.is_some() {
            sender.set_rate_cap(cfg, req.rate_cap);
        }
        self.rt.push(TransferRt { sender: Some(sender), ..TransferRt::default() });
        self.flush(f, 0);
        id
    }

    /// A packet reached its destination host: hand it to the transfer's endpoint.
    pub(crate) fn deliver(&mut self, pkt: Packet) {
        self.bytes_delivered += pkt.size as u64;
        let f = pkt.seg.conn() as usize;
        if self.rt.get(f).is_none_or(|rt| rt.released) {
            self.int.forget(&pkt);
            return; // a late duplicate for a finished transfer
        }
        let rt = &mut self.rt[f];
        let now = self.sched.now();
        let side = if pkt.to_receiver { 1 } else { 0 };
        let ep = if side == 1 {
            let t = &self.transports[self.transfers[f].transport as usize].cfg;
            rt.receiver.get_or_insert_with(|| Endpoint::receiver(t, f as u32))
        } else {
            match rt.sender.as_mut() {
                Some(s) => s,
                None => {
                    self.int.forget(&pkt);
                    return;
                }
            }
        };
        if pkt.int == Packet::NO_INT {
            ep.handle_segment(now, &pkt.seg);
        } else {
            let stack = self.int.take(pkt.int);
            ep.handle_segment_int(now, &pkt.seg, Some(&stack));
        }
        self.flush(f, side);
    }

    /// A transport timer fired (or a stale one: then nothing happens).
    pub(crate) fn on_timer(&mut self, ep: u32, generation: u32) {
        let (f, side) = ((ep / 2) as usize, (ep % 2) as usize);
        let Some(rt) = self.rt.get_mut(f) else { return };
        let slot = &mut rt.timers[side];
        if slot.generation != generation {
            return; // cancelled (re-armed earlier) since
        }
        slot.scheduled = None;
        let now = self.sched.now();
        let ep = if side == 0 { rt.sender.as_mut() } else { rt.receiver.as_mut() };
        if let Some(ep) = ep {
            ep.handle_timeout(now);
            self.flush(f, side);
        }
    }

    /// Drain an endpoint after an input: transmit, re-arm its timer, handle its events.
    pub(crate) fn flush(&mut self, f: usize, side: usize) {
        let now = self.sched.now();
        // PERF: only what the packets need; the whole record is read when the transfer ends.
        let (src, dst, prio, tr) = {
            let t = &self.transfers[f];
            (t.src, t.dst, t.prio, t.transport as usize)
        };
        let (header, uses_int, acked) = {
            let t = &self.transports[tr];
            (t.header, t.uses_int, t.ideal.acked)
        };
        let mut txbuf = std::mem::take(&mut self.txbuf);
        let rt = &mut self.rt[f];
        let Some(ep) = (if side == 0 { rt.sender.as_mut() } else { rt.receiver.as_mut() }) else {
            self.txbuf = txbuf;
            return;
        };
        let mut int_txbuf = std::mem::take(&mut self.int_txbuf);
        while let Some(seg) = ep.poll_transmit(now) {
            txbuf.push(seg);
            if uses_int {
                // A receiver echoes the stack of the data it acknowledges; a sender's data
                // segments start an empty stack that every switch egress appends to.
                let echo = ep.take_echo_int();
                let fresh = (side == 0 && !seg.is_empty()).then(IntStack::default);
                int_txbuf.push(echo.or(fresh));
            }
        }
        let deadline = ep.poll_timeout();
        let (mut measure, mut release) = (false, false);
        while let Some(ev) = ep.poll_event() {
            match ev {
                // The sender knows the receiver has it all (acknowledged): the completion time
                // ends here with fct_at = "sender", and the transfer is over either way.
                EpEvent::SenderDone { outcome, confirmed: true } => {
                    measure |= acked;
                    release = true;
                    rt.outcome = Some(outcome);
                }
                // An unreliable source handed out its last packet: the receiver decides.
                EpEvent::SenderDone { confirmed: false, .. } => {
                    rt.sender_done = true;
                    release |= rt.delivered;
                }
                // The receiver has what it waits for: the completion time ends here with
                // fct_at = "receiver", or whenever the sender cannot confirm delivery.
                EpEvent::Delivered { outcome } => {
                    measure |= !acked;
                    rt.delivered = true;
                    rt.outcome.get_or_insert(outcome);
                    release |= rt.sender_done;
                }
            }
        }
        // Timer: arm only if earlier than what is already pending (lazy re-arm on fire).
        if let Some(d) = deadline {
            let slot = &mut rt.timers[side];
            if slot.scheduled.is_none_or(|s| d < s) {
                slot.generation = slot.generation.wrapping_add(1);
                slot.scheduled = Some(d);
                let ep_idx = (f * 2 + side) as u32;
                self.sched.at(d.max(now), Event::Timer { ep: ep_idx, generation: slot.generation });
            }
        }
        let (host, dst) = if side == 0 { (src, dst) } else { (dst, src) };
        let nic = self.routes.nic(NodeId(host));
        for (i, mut seg) in txbuf.drain(..).enumerate() {
            seg.set_prio(prio);
            let int = match int_txbuf.get_mut(i).and_then(Option::take) {
                Some(stack) => self.int.alloc(stack),
                None => Packet::NO_INT,
            };
            let pkt = Packet { size: seg.len() + header, seg, dst: NodeId(dst), to_receiver: side == 0, hops: 0, int };
            self.bytes_sent += pkt.size as u64;
            self.enqueue(nic, pkt);
        }
        int_txbuf.clear();
        self.int_txbuf = int_txbuf;
        self.txbuf = txbuf;
        if measure {
            let rt = &mut self.rt[f];
            debug_assert!(rt.finished_at.is_none());
            if rt.finished_at.is_none() {
                rt.finished_at = Some(now);
                self.finished += 1;
                let (_, _, delivered) = rt.counters();
                let spec = &self.transfers[f];
                self.notes.push_back((
                    spec.app,
                    TransferDone {
                        transfer: FlowId::from_idx(f),
                        tag: spec.tag,
                        src: spec.src,
                        dst: spec.dst,
                        size: spec.size,
                        start: spec.start,
                        delivered,
                        outcome: rt.outcome.unwrap_or(Outcome::Complete),
                    },
                ));
            }
        }
        if release {
            self.release_transfer(f);
        }
    }

    /// Free a transfer's state machines once it is over, keeping their counters.
    fn release_transfer(&mut self, f: usize) {
        let rt = &mut self.rt[f];
        debug_assert!(!rt.released);
        let (rtos, retx, delivered) = rt.counters();
        rt.released = true;
        rt.final_rtos = rtos;
        rt.final_retx = retx;
        rt.final_delivered = delivered;
        rt.sender = None;
        rt.receiver = None;
    }
}
