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
//! Backpressure (`host.tsq_pkts`, Linux's TCP Small Queues): a sender is polled only while
//! its bytes waiting in its NIC's queue (`TransferRt::nic_bytes`) plus one full packet fit in
//! the limit (`tsq_pkts` full packets' bytes), so no more than that ever waits there. If the
//! limit stops a drain, the sender is *held* (`TransferRt::is_held`): it keeps what it may send
//! (legal in `proto`'s contract, which also keeps its window from growing meanwhile), and its
//! timer is not re-armed for a deadline already due (a paced UDP source's next slot), since
//! what wakes it is certain: one of its packets leaving the NIC queue (serialization starts)
//! and bringing the backlog back under the limit. The departure is seen where a NIC starts
//! one (`on_tx_done`, and `enqueue_tsq` when the NIC was idle); the sender is then queued in
//! `Tsq::wake` and drained at the same instant, after the handler that dequeued the packet
//! (`flush` and `on_tx_done` run the queue, so drains never nest). The next packet is thus
//! queued before the NIC idles, and a held sender loses no time at line rate. Receivers (ACKs)
//! are never held back. With TSQ off nothing is counted and every drain is complete.
//!
//! INVARIANT: transfer `f` is the `f`-th transfer started in the run; its record is row `f`.
//! Released transfers keep their counters and ignore late packets and timers; so do those
//! whose state was freed after their records were taken (`transfers`).
//! INVARIANT (TSQ on): `nic_bytes` of a transfer equals the bytes of its sender's packets
//! waiting in its source host's NIC queue; a held sender has at least one packet there
//! (the limit is at least one full packet), so its wake-up is certain.

use std::collections::VecDeque;

use proto::{Endpoint, Event as EpEvent, IntStack, Outcome};
use units::{AppId, Bps, FlowId, NodeId, Time};

use super::{FlowEvent, Simulation};
use crate::app::{JobCounts, Op, TransferDone, TransferReq};
use proto::atp::GroupSpec;
use crate::packet::{HeaderSlab, Packet};
use super::telemetry::{IntSlab, SackSlab};
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

/// TCP Small Queues (`host.tsq_pkts`, module docs): the limits and the senders to drain again.
#[derive(Debug, Default)]
pub(crate) struct Tsq {
    /// Whether TSQ is on (`host.tsq_pkts > 0`).
    pub(crate) is_on: bool,
    /// Per transport of the run: (the limit in bytes, its full packet `mss + header`). A
    /// sender is polled while its backlog plus one full packet fits in the limit.
    budgets: Vec<(u64, u64)>,
    /// Held senders whose NIC backlog fell under the limit, to drain in this order.
    pub(crate) wake: VecDeque<u32>,
}

impl Tsq {
    /// TSQ at `pkts` full packets (0: off) for the run's transports, whose full packets are
    /// `full_packets` bytes, in transport order.
    pub(crate) fn new(pkts: u32, full_packets: impl Iterator<Item = u64>) -> Tsq {
        let budgets = full_packets.map(|full| (u64::from(pkts) * full, full)).collect();
        Tsq { is_on: pkts > 0, budgets, wake: VecDeque::new() }
    }

    /// (limit, full packet) of transport `tr`.
    #[inline]
    fn budget(&self, tr: usize) -> (u64, u64) {
        self.budgets[tr]
    }
}

/// Runtime state of one transfer.
///
/// PERF/memory: the endpoints are boxed, so a finished transfer keeps about 100 bytes here
/// instead of two inline state machines (936 bytes per transfer ever started, which made a
/// 3 M-flow run peak at 3.7 GB), and the vector stays dense for the cache.
#[derive(Debug, Default)]
pub(crate) struct TransferRt {
    pub(crate) sender: Option<Box<Endpoint>>,
    pub(crate) receiver: Option<Box<Endpoint>>,
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
    /// Whether its record was taken (`Simulation::take_records`).
    pub(crate) taken: bool,
    /// Counters captured when the endpoints were freed (timeouts and tail-loss probes in four
    /// bytes each, sharing the word the flags leave: a transfer gives up long before either
    /// count nears `u32::MAX`, and they saturate there).
    pub(crate) final_rtos: u32,
    pub(crate) final_probes: u32,
    pub(crate) final_retx: u64,
    pub(crate) final_delivered: u64,
    /// TSQ: bytes of the sender's packets waiting in its NIC queue (module docs).
    pub(crate) nic_bytes: u64,
    /// TSQ: the sender's last drain stopped at the limit; a NIC departure drains it again.
    pub(crate) is_held: bool,
}

/// A transfer's loss counters and delivered bytes so far ([`TransferRt::counters`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) rtos: u64,
    pub(crate) retx: u64,
    pub(crate) delivered: u64,
    pub(crate) probes: u64,
}

impl TransferRt {
    /// Its counters so far (the sender's and receiver's, or those kept when they were freed).
    pub(crate) fn counters(&self) -> Counters {
        if self.released {
            return Counters {
                rtos: u64::from(self.final_rtos),
                retx: self.final_retx,
                delivered: self.final_delivered,
                probes: u64::from(self.final_probes),
            };
        }
        let (rtos, retx, probes) = self.sender.as_ref().map_or((0, 0, 0), |s| {
            let st = s.stats();
            (st.num_rtos, st.segments_retx, st.num_tail_probes)
        });
        Counters { rtos, retx, probes, delivered: self.receiver.as_ref().map_or(0, |r| r.stats().bytes_received) }
    }
}

/// What `drain` needs to poll an endpoint and make packets of what it sends.
#[derive(Clone, Copy)]
struct Outbox {
    now: Time,
    side: usize,
    header: u32,
    uses_int: bool,
    /// Its ACKs carry SACK blocks.
    uses_sack: bool,
    /// The transport classes its own packets (ATP, §5.2): keep their priorities.
    stamps_prio: bool,
    /// The transfer's class, and its ACKs' if the transport gives them their own.
    prio: u8,
    ack_prio: Option<u8>,
    /// The host the packets go to.
    dst: NodeId,
}

/// Where `Outbox::poll` puts what it makes: the headers, their telemetry, the packets, and
/// the run's counters of what was sent.
struct Sink<'a> {
    hdrs: &'a mut HeaderSlab,
    int: &'a mut IntSlab,
    sack: &'a mut SackSlab,
    pkts: &'a mut Vec<Packet>,
    bytes_sent: &'a mut u64,
    credits_answered: &'a mut u64,
}

impl Outbox {
    /// Poll `ep` into packets (headers stored, telemetry attached) until it has nothing more
    /// or, with a TSQ budget `(room, full_packet)`, until a full packet would no longer fit in
    /// the room left. Returns whether the budget stopped it (the sender is held).
    // PERF: inlined into both calls of `drain`, so that without a budget the loop is the plain
    // drain it was before TSQ (see the measurement at `queue::Port`). A segment goes straight
    // into its header slot: buffering segments to make their packets after the poll copied
    // each twice more.
    #[inline(always)]
    fn poll(self, ep: &mut Endpoint, budget: Option<(u64, u64)>, sink: Sink<'_>) -> bool {
        let (mut room, full) = budget.unwrap_or((u64::MAX, 0));
        loop {
            if budget.is_some() && room < full {
                return true;
            }
            let Some(mut seg) = ep.poll_transmit(self.now) else { return false };
            if budget.is_some() {
                room = room.saturating_sub(u64::from(seg.len() + self.header));
            }
            // Segments without payload (ACKs) go in their own class if the transport says so;
            // a transport that classes its own packets (ATP, §5.2) keeps its classes.
            if !self.stamps_prio {
                seg.set_prio(match self.ack_prio {
                    Some(a) if seg.is_empty() => a,
                    _ => self.prio,
                });
            }
            let hdr = sink.hdrs.insert(seg);
            let mut pkt = Packet::new(&seg, hdr, self.dst, seg.len() + self.header, self.side == 0);
            if self.uses_int {
                // A receiver echoes the stack of the data it acknowledges; a sender's data
                // segments start an empty stack that every switch egress appends to.
                let echo = ep.take_echo_int();
                let fresh = (self.side == 0 && !seg.is_empty()).then(IntStack::default);
                if let Some(stack) = echo.or(fresh) {
                    sink.int.put(hdr, stack);
                    pkt.set_has_int();
                }
            }
            if self.uses_sack {
                if let Some(blocks) = ep.take_sack() {
                    sink.sack.put(hdr, blocks);
                    pkt.set_has_sack();
                    // On the wire the option takes 2 + 8 bytes per block, padded to a multiple
                    // of four (two NOPs, as Linux sends it): 12, 20 or 28 bytes.
                    pkt.size = pkt.size.saturating_add(4 + 8 * u16::from(blocks.len));
                }
            }
            *sink.bytes_sent += pkt.size as u64;
            *sink.credits_answered += u64::from(self.side == 0 && seg.answers_credit());
            sink.pkts.push(pkt);
        }
    }
}

impl Simulation {
    /// Transfers started so far (every index ever handed out).
    #[inline]
    pub(crate) fn total_transfers(&self) -> usize {
        self.transfers.len()
    }

    /// Carry out an application's command on a transfer it started (others are ignored: an
    /// application cannot touch another's transfers). The sender is drained afterwards.
    pub(crate) fn apply_op(&mut self, app: AppId, op: Op) {
        let f = match op {
            Op::Message { flow, .. } | Op::Close(flow) | Op::Cancel(flow) => flow.idx(),
        };
        let Some((spec, rt)) = self.transfers.get_mut(f) else { return };
        if spec.app != app || rt.released {
            return;
        }
        match op {
            Op::Message { group, bytes, .. } => {
                if let Some(s) = rt.sender.as_mut() {
                    // A refused message (job over, full group) is the application's to see in
                    // the job's counts; nothing else changes.
                    let _ = s.send_message(group, bytes);
                }
            }
            Op::Close(_) => {
                if let Some(s) = rt.sender.as_mut() {
                    s.close();
                }
            }
            Op::Cancel(_) => {
                rt.outcome = Some(Outcome::Cancelled);
                self.cancelled += 1;
                self.ended += 1;
                self.release_transfer(f);
                return;
            }
        }
        self.flush(f, 0);
    }

    /// Start a transfer for application `app` now (an ATP job of `groups` if given): create
    /// its sender and let it transmit. PRECONDITION: `req` passed `AppCtx::start_transfer`'s
    /// (and for a job `AppCtx::start_job`'s) checks.
    pub(crate) fn start_transfer_with(&mut self, app: AppId, req: TransferReq, groups: Option<&[GroupSpec]>) -> FlowId {
        let now = self.sched.now();
        let transport = req.transport.unwrap_or(self.app_transport.get(app.idx()).copied().unwrap_or(0));
        let f = self.total_transfers();
        let id = FlowId::from_idx(f);
        let spec = Transfer {
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
        };
        let cfg = &self.transports[transport as usize].cfg;
        let mut sender = match groups {
            // CORRECTNESS: `AppCtx::start_job` checked the transport and the groups as
            // `Endpoint::job_sender` does; a refusal would be a bug there, so fall back to a
            // plain transfer rather than panic.
            Some(g) => Endpoint::job_sender(cfg, f as u32, g, now)
                .unwrap_or_else(|_| Endpoint::sender(cfg, f as u32, units::Bytes(req.size), now)),
            None => Endpoint::sender(cfg, f as u32, units::Bytes(req.size), now),
        };
        sender.set_line_rate(self.links[self.routes.nic(NodeId(req.src)).idx()].rate);
        if req.rate_cap.is_some() {
            sender.set_rate_cap(cfg, req.rate_cap);
        }
        self.transfers.push(spec, TransferRt { sender: Some(Box::new(sender)), ..TransferRt::default() });
        self.flow_trace_on_start(f, spec.id);
        self.flush(f, 0);
        id
    }

    /// A packet reached its destination host: hand it to the transfer's endpoint.
    pub(crate) fn deliver(&mut self, pkt: Packet) {
        self.bytes_delivered += pkt.size as u64;
        // A credit that reaches a finished sender is wasted too: count it before the look-up.
        self.credits_delivered += u64::from(!pkt.to_receiver() && pkt.is_credit());
        let f = pkt.conn as usize;
        let Some((spec, rt)) = self.transfers.get_mut(f).filter(|(_, rt)| !rt.released) else {
            self.hdrs.free(pkt.hdr);
            return; // a late duplicate for a finished transfer
        };
        let now = self.sched.now();
        let side = if pkt.to_receiver() { 1 } else { 0 };
        let ep = if side == 1 {
            let t = &self.transports[spec.transport as usize].cfg;
            rt.receiver.get_or_insert_with(|| Box::new(Endpoint::receiver(t, f as u32)))
        } else {
            match rt.sender.as_mut() {
                Some(s) => s,
                None => {
                    self.hdrs.free(pkt.hdr);
                    return;
                }
            }
        };
        let seg = self.hdrs.slot_mut(pkt.hdr);
        // The network's marks (the only header field it changes, `packet`) reach the endpoint.
        seg.set_ecn(pkt.ecn());
        if !pkt.has_side_data() {
            ep.handle_segment(now, seg);
        } else {
            let stack = pkt.has_int().then(|| self.int.take(pkt.hdr));
            let blocks = pkt.has_sack().then(|| self.sack.take(pkt.hdr));
            ep.handle_segment_ext(now, seg, stack.as_ref(), blocks.as_ref());
            if pkt.is_traced() {
                self.flow_trace_receive(&pkt);
            }
        }
        self.hdrs.free(pkt.hdr);
        self.flush(f, side);
    }

    /// A transport timer fired (or a stale one: then nothing happens).
    pub(crate) fn on_timer(&mut self, ep: u32, generation: u32) {
        let (f, side) = ((ep / 2) as usize, (ep % 2) as usize);
        // Stale: the transfer's state is gone (its record was taken).
        let Some(rt) = self.transfers.rt_mut(f) else { return };
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

    /// Drain an endpoint after an input (transmit, re-arm its timer, handle its events), then
    /// every sender this woke (TSQ).
    pub(crate) fn flush(&mut self, f: usize, side: usize) {
        self.drain(f, side);
        self.run_tsq_wakes();
    }

    /// Drain the held senders whose NIC backlog fell under the TSQ limit (module docs).
    pub(crate) fn run_tsq_wakes(&mut self) {
        while let Some(f) = self.tsq.wake.pop_front() {
            self.drain(f as usize, 0);
        }
    }

    /// TSQ on: a sender's packet of `size` bytes entered its NIC queue.
    #[inline]
    pub(crate) fn on_nic_enqueue(&mut self, conn: u32, size: u64) {
        if let Some(rt) = self.transfers.rt_mut(conn as usize) {
            rt.nic_bytes += size;
        }
    }

    /// TSQ on: a sender's packet of `size` bytes left its NIC queue (its serialization starts).
    /// Wakes the sender if it is held and now under the limit.
    // PERF: out of line, so that `start_tx` (hot on every link) carries only its caller's check.
    #[inline(never)]
    pub(crate) fn on_nic_dequeue(&mut self, conn: u32, size: u64) {
        if !self.tsq.is_on {
            return;
        }
        // A transfer whose record was taken has no sender left to wake.
        let Some((spec, rt)) = self.transfers.get_mut(conn as usize) else { return };
        let (limit, full) = self.tsq.budget(spec.transport as usize);
        rt.nic_bytes -= size;
        if rt.is_held && rt.nic_bytes + full <= limit {
            rt.is_held = false;
            self.tsq.wake.push_back(conn);
        }
    }

    /// The largest backlog host `host`'s NIC queue reached, in bytes.
    pub fn nic_max_backlog_bytes(&self, host: u32) -> u64 {
        self.links[self.routes.nic(NodeId(host)).idx()].port.max_bytes()[0]
    }

    /// Drain one endpoint: transmit (a sender only as far as TSQ allows), re-arm its timer,
    /// handle its events.
    fn drain(&mut self, f: usize, side: usize) {
        let now = self.sched.now();
        let Some((t, rt)) = self.transfers.get_mut(f) else { return };
        // PERF: only what the packets need; the whole record is read when the transfer ends.
        let (src, dst, prio, tr) = (t.src, t.dst, t.prio, t.transport as usize);
        let (header, uses_int, uses_sack, acked, ack_prio, stamps_prio) = {
            let t = &self.transports[tr];
            (t.header, t.uses_int, t.uses_sack, t.ideal.acked, t.ack_prio, t.stamps_prio)
        };
        let Some(ep) = (if side == 0 { rt.sender.as_mut() } else { rt.receiver.as_mut() }) else { return };
        let mut pkts = std::mem::take(&mut self.txpkts);
        let (host, dst) = if side == 0 { (src, dst) } else { (dst, src) };
        let out = Outbox { now, side, header, uses_int, uses_sack, stamps_prio, prio, ack_prio, dst: NodeId(dst) };
        let sink = Sink {
            hdrs: &mut self.hdrs,
            int: &mut self.int,
            sack: &mut self.sack,
            pkts: &mut pkts,
            bytes_sent: &mut self.bytes_sent,
            credits_answered: &mut self.credits_answered,
        };
        // TSQ: a sender may put in its NIC queue what its backlog leaves of the limit.
        let tsq = side == 0 && self.tsq.is_on;
        let is_held = if tsq {
            let (limit, full) = self.tsq.budget(tr);
            let room = limit.saturating_sub(rt.nic_bytes);
            rt.is_held = out.poll(ep, Some((room, full)), sink);
            rt.is_held
        } else {
            out.poll(ep, None, sink)
        };
        let deadline = ep.poll_timeout();
        let (mut measure, mut release, mut gave_up) = (false, false, false);
        while let Some(ev) = ep.poll_event() {
            match ev {
                // The sender gave up (no progress through its retries): the transfer is over
                // without a completion time, unless the receiver already had it all.
                EpEvent::SenderDone { outcome: Outcome::GivenUp, .. } => {
                    gave_up = rt.finished_at.is_none();
                    release = true;
                }
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
        // Timer: arm only if earlier than what is already pending (lazy re-arm on fire). A held
        // sender's deadline that is already due waits for its wake-up (module docs).
        if let Some(d) = deadline.filter(|&d| !(is_held && d <= now)) {
            let slot = &mut rt.timers[side];
            if slot.scheduled.is_none_or(|s| d < s) {
                slot.generation = slot.generation.wrapping_add(1);
                slot.scheduled = Some(d);
                let ep_idx = (f * 2 + side) as u32;
                self.sched.at(d.max(now), Event::Timer { ep: ep_idx, generation: slot.generation });
            }
        }
        let nic = self.routes.nic(NodeId(host));
        if f as u32 == self.trace_conn {
            self.flow_trace_sends(nic, tsq, &pkts);
        } else {
            for &pkt in &pkts {
                if tsq {
                    self.enqueue_tsq(nic, pkt);
                } else {
                    self.enqueue_nic(nic, pkt);
                }
            }
        }
        pkts.clear();
        self.txpkts = pkts;
        if measure {
            let Some(rt) = self.transfers.rt_mut(f) else { return };
            debug_assert!(rt.finished_at.is_none());
            if rt.finished_at.is_none() {
                rt.finished_at = Some(now);
                let outcome = rt.outcome.unwrap_or(Outcome::Complete);
                self.finished += 1;
                self.ended += 1;
                self.notify_done(f, outcome);
            }
        }
        if gave_up {
            if let Some(rt) = self.transfers.rt_mut(f) {
                rt.outcome = Some(Outcome::GivenUp);
            }
            self.given_up += 1;
            self.ended += 1;
            self.notify_done(f, Outcome::GivenUp);
        }
        if release {
            self.release_transfer(f);
        }
    }

    /// `drain`'s hand-over to NIC `nic` for the traced transfer (`flowtrace`): a `timeout` row
    /// if its sender's timer fired since the last drain, then for each packet its `send` and NIC
    /// rows, and the packet (marked traced, so that the network and delivery record it) to the
    /// NIC as `drain` hands it.
    // PERF: a loop of its own, so that `drain`'s plain loop stays as it was: a test inside it,
    // or a traced flag set at each packet's making, cost 0.7% of the 256-host run's
    // instructions, and a check in the timer's handler (inlined into the event loop) 1.6%, by
    // the compiler's changed register use (callgrind; `enqueue_nic` and `enqueue_tsq` are
    // inlined into both loops, as into the one before).
    #[cold]
    #[inline(never)]
    fn flow_trace_sends(&mut self, nic: units::LinkId, tsq: bool, pkts: &[Packet]) {
        self.flow_trace_timeouts();
        for &pkt in pkts {
            let mut pkt = pkt;
            pkt.set_traced();
            let seg = *self.hdrs.slot_mut(pkt.hdr);
            self.flow_trace_segment(FlowEvent::Send, &pkt, &seg);
            self.flow_trace_arrival(nic, &pkt);
            if tsq {
                self.enqueue_tsq(nic, pkt);
            } else {
                self.enqueue_nic(nic, pkt);
            }
        }
    }

    /// The traced transfer's `pkt` reached its endpoint, which handled it (`flowtrace`).
    #[cold]
    #[inline(never)]
    fn flow_trace_receive(&mut self, pkt: &Packet) {
        let seg = *self.hdrs.slot_mut(pkt.hdr);
        self.flow_trace_segment(FlowEvent::Receive, pkt, &seg);
    }

    /// Tell transfer `f`'s application that it ended with `outcome`.
    fn notify_done(&mut self, f: usize, outcome: Outcome) {
        let Some((spec, rt)) = self.transfers.get(f) else { return };
        let delivered = rt.counters().delivered;
        let st = rt.sender.as_ref().map(|s| s.stats()).unwrap_or_default();
        let job = rt
            .sender
            .as_ref()
            .and_then(|s| s.as_atp_sender())
            .map(|a| JobCounts { gave_up: outcome == Outcome::GivenUp, ..job_counts(&a.report()) });
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
                outcome,
                bytes_sent: st.bytes_sent,
                packets_sent: st.segments_sent,
                packets_retx: st.segments_retx,
                job,
            },
        ));
    }

    /// Free a transfer's state machines once it is over, keeping their counters.
    fn release_transfer(&mut self, f: usize) {
        let Some(rt) = self.transfers.rt_mut(f) else { return };
        debug_assert!(!rt.released);
        let c = rt.counters();
        rt.released = true;
        rt.final_rtos = u32::try_from(c.rtos).unwrap_or(u32::MAX);
        rt.final_probes = u32::try_from(c.probes).unwrap_or(u32::MAX);
        rt.final_retx = c.retx;
        rt.final_delivered = c.delivered;
        rt.sender = None;
        rt.receiver = None;
        self.transfers.ended(f);
    }
}

/// An ATP job's groups, totalled (the worst group's loss next to its allowance).
fn job_counts(groups: &[proto::atp::GroupReport]) -> JobCounts {
    let count = |g: &proto::atp::GroupReport| crate::app::GroupCount {
        msr: f64::NAN,
        messages: g.messages,
        required: g.required,
        delivered: g.delivered,
    };
    let mut c = JobCounts { groups: groups.len() as u32, ..JobCounts::default() };
    for (slot, g) in c.per_group.iter_mut().zip(groups) {
        *slot = count(g);
    }
    for g in groups {
        c.messages += g.messages;
        c.required += g.required;
        c.delivered += g.delivered;
        c.lost += g.lost;
    }
    (c.worst_group_loss, c.worst_group_allowance) = crate::app::worst_group(groups.iter().map(count));
    c
}
