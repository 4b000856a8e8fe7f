//! The network's mechanism: links (an egress port and its wire), output-queued switches with
//! one shared buffer each, and the handlers that move packets: arrival, routing, admission,
//! enqueue with ECN marking, push-out (LQD's, and pFabric's at a full port, §4.1), and the start
//! of serialization.
//!
//! Model: a packet leaves its queue (and its switch's shared buffer) when its serialization
//! starts, and arrives at the far end `tx_time + delay` later. Forwarding is a direct call
//! inside the arrival handler: arrive -> route -> enqueue.
//!
//! INVARIANT (htsim): at most one `TxDone` and one `Arrive` event are pending per link, however
//! many packets are queued or in flight. A `TxDone` exists only while packets wait behind the
//! one being serialized.
//! INVARIANT: a switch's `SwitchBuf::qlen[p * qpp + c]` equals the bytes queued in class `c`
//! of port `p`, and `occupancy` their sum, which never exceeds `capacity` after an arrival.

use std::collections::VecDeque;

use proto::IntHop;
use units::{Bps, Bytes, Dur, LinkId, Time};

use super::{DropCause, Simulation};
use crate::admission::{AnyAdmission, Arrival, BufferAdmission, BufferView, Verdict};
use crate::metrics::SwitchStats;
use crate::packet::Packet;
use crate::queue::{CreditShaper, Port, SelectiveDrop};
use crate::sched::Event;
use units::NodeId;

/// `Link::switch` of a host NIC.
pub(crate) const NO_SWITCH: u32 = u32::MAX;

/// An egress port and the wire behind it.
// PERF: a packet-hop touches two links, so a link is laid out by what a hop reads, aligned to
// cache lines (`repr(C)` keeps this order): a packet that passes an idle port (the common case:
// about two thirds of the hops of the 256-host run) reads and writes only the first two lines:
// the scalars and statistics, the wire, and the port's first 40 bytes (`queue::Port`); the
// port's FIFOs, scheduler and ECN threshold and ExpressPass's credit queue, needed only when a
// packet waits, are in the third. It was 328 bytes (six lines or seven) before the port's
// per-class counters moved inline and its stateful schedulers into boxes, then three lines
// that every hop touched.
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct Link {
    /// The end of the current (or last) serialization: the link is idle from then on.
    pub(crate) busy_until: Time,
    pub(crate) rate: Bps,
    pub(crate) delay: Dur,
    /// Owning switch index, or `NO_SWITCH` for a host NIC.
    pub(crate) switch: u32,
    /// Index of this port's first queue in its switch's queue lengths (`SwitchBuf::qlen`): its
    /// index among the switch's ports times the queues per port.
    // PERF: not the port index, which every enqueue and dequeue multiplied by the switch's
    // queues per port (read from the switch).
    pub(crate) queue_base: u32,
    pub(crate) dst: NodeId,
    /// Whether a `TxDone` for this link is pending.
    pub(crate) tx_done_pending: bool,
    /// Whether `credit` is `Some` (read on every hop; `credit` itself only when set).
    pub(crate) has_credit: bool,
    /// Whether `port` may pass a packet straight to the wire when idle (`Port::is_idle_fifo`
    /// less its emptiness, which never changes for a port).
    pub(crate) passable: bool,
    pub(crate) tx_packets: u64,
    pub(crate) tx_bytes: u64,
    /// Packets being serialized or propagating, with their arrival times at the far end.
    /// FIFO: arrival times never decrease.
    pub(crate) wire: VecDeque<(Time, Packet)>,
    pub(crate) port: Port,
    /// ExpressPass's credit queue and rate limiter (`switch.credit_queue_pkts`), switch ports
    /// only; `None`: credits queue with data.
    pub(crate) credit: Option<Box<CreditShaper>>,
}

impl Link {
    /// Bytes on the wire (being serialized or propagating).
    pub(crate) fn wire_bytes(&self) -> u64 {
        self.wire.iter().map(|(_, p)| u64::from(p.size)).sum()
    }

    /// Whether a packet handed to this link now would go on the wire at once, ahead of nothing
    /// (its port empty, the link idle, no `TxDone` pending, no credit queue) and so can skip the
    /// port's FIFO (`Port::pass`).
    // PERF: on the 256-host comparison run about two thirds of the packet-hops find their link
    // idle; pushing such a packet into the FIFO only to pop it again copied it twice more.
    #[inline(always)]
    pub(crate) fn passes_through(&self, now: Time) -> bool {
        // PERF: `&`, not `&&`: one branch on the whole rather than one per test (12% of the
        // 256-host run's mispredicted branches were these tests; cachegrind).
        let pass = !self.tx_done_pending & (self.busy_until <= now) & !self.has_credit & self.passable & self.port.is_empty();
        debug_assert_eq!(pass, !self.tx_done_pending && self.busy_until <= now && self.credit.is_none() && self.port.is_idle_fifo());
        pass
    }
}

/// Per-switch shared buffer and counters.
#[derive(Debug)]
pub(crate) struct Switch {
    pub(crate) stats: SwitchStats,
    pub(crate) buf: SwitchBuf,
    pub(crate) ports: Vec<LinkId>,
    pub(crate) admission: AnyAdmission,
    /// `admission.watches_queues()`: whether to tell it of enqueues and dequeues.
    pub(crate) watches: bool,
    /// Aeolus's selective dropping (`switch.selective_drop_bytes`).
    pub(crate) selective: Option<SelectiveDrop>,
}

/// What an admission policy sees of a switch: its buffer and every queue's length in bytes.
#[derive(Debug)]
pub(crate) struct SwitchBuf {
    pub(crate) capacity: u64,
    pub(crate) occupancy: u64,
    pub(crate) qpp: usize,
    pub(crate) qlen: Vec<u64>,
}

impl BufferView for SwitchBuf {
    #[inline]
    fn capacity(&self) -> u64 {
        self.capacity
    }
    #[inline]
    fn occupancy(&self) -> u64 {
        self.occupancy
    }
    #[inline]
    fn num_queues(&self) -> usize {
        self.qlen.len()
    }
    #[inline]
    fn queues_per_port(&self) -> usize {
        self.qpp
    }
    #[inline]
    fn queue_len(&self, q: usize) -> u64 {
        self.qlen[q]
    }
}

impl Simulation {
    pub(crate) fn on_tx_done(&mut self, l: LinkId) {
        self.links[l.idx()].tx_done_pending = false;
        if self.tsq.is_on {
            self.start_tx_tsq(l);
        } else {
            self.start_tx(l);
        }
    }

    /// `start_tx` from `on_tx_done` under TSQ (`host`): if link `l` is a NIC and put a
    /// sender's packet on the wire, count it out of the NIC queue, and drain the sender if that
    /// woke it.
    #[inline(never)]
    fn start_tx_tsq(&mut self, l: LinkId) {
        let sent = self.links[l.idx()].tx_packets;
        self.start_tx(l);
        let link = &self.links[l.idx()];
        if link.switch != NO_SWITCH || link.tx_packets == sent {
            return;
        }
        if let Some((_, pkt)) = link.wire.back().filter(|(_, p)| p.to_receiver()) {
            let (conn, size) = (pkt.conn, pkt.size as u64);
            self.on_nic_dequeue(conn, size);
            self.run_tsq_wakes();
        }
    }

    pub(crate) fn on_arrive(&mut self, l: LinkId) {
        let link = &mut self.links[l.idx()];
        let Some((_, pkt)) = link.wire.pop_front() else {
            debug_assert!(false, "Arrive implies a packet on the wire");
            return;
        };
        if let Some(&(next, _)) = link.wire.front() {
            self.sched.at(next, Event::Arrive { link: l });
        }
        let node = link.dst;
        match self.topo.switch_of(node) {
            None => self.deliver(pkt),
            Some(s) => {
                let out = match self.route_cur.out(l, pkt.hdr) {
                    Some(out) => {
                        #[cfg(debug_assertions)]
                        {
                            self.route_hint_hops += 1;
                        }
                        out
                    }
                    None => self.routes.next_hop(s.0, pkt.dst, pkt.conn, pkt.seq),
                };
                debug_assert_eq!(out, self.routes.next_hop(s.0, pkt.dst, pkt.conn, pkt.seq));
                self.enqueue_at_switch(out, pkt);
            }
        }
    }

    /// Hand a packet from its host to the host's NIC link `l`: the NIC's static cap and ECN
    /// marking, then start serialization if the link is idle.
    // PERF: the NIC's and a switch's enqueue are two functions (a packet's caller knows which
    // it needs): one function with a branch on the link's kind cost every packet-hop the
    // branch and the other side's register pressure. Inlined into both of `drain`'s loops.
    #[inline(always)]
    pub(crate) fn enqueue_nic(&mut self, l: LinkId, pkt: Packet) {
        let link = &mut self.links[l.idx()];
        debug_assert!(link.switch == NO_SWITCH);
        if link.has_credit && pkt.is_credit() {
            self.enqueue_credit(l, pkt);
            return;
        }
        let q = link.port.queue_of(pkt.prio());
        if self.pass_idle_nic(l, q, pkt).is_some() {
            return;
        }
        if !self.nic_accept(l, q, pkt) {
            return;
        }
        self.kick(l);
    }

    /// If NIC `l` would send `pkt` at once (`Link::passes_through`), do so without its FIFO:
    /// the NIC's static cap, then straight to the wire. `Some(true)` if it was sent,
    /// `Some(false)` if the cap dropped it, `None` if the NIC is busy or holds packets (nothing
    /// done).
    #[inline(always)]
    fn pass_idle_nic(&mut self, l: LinkId, q: usize, pkt: Packet) -> Option<bool> {
        let link = &mut self.links[l.idx()];
        if !link.passes_through(self.sched.now()) {
            return None;
        }
        let size = pkt.size as u64;
        if link.port.check_cap(q, size).is_err() {
            self.drop_at_nic(pkt);
            return Some(false);
        }
        link.port.pass(q, size);
        self.transmit(l, q, pkt, false, false);
        Some(true)
    }

    /// Hand a packet to switch port `l`: static cap, shared-buffer admission, ECN marking, then
    /// start serialization if the link is idle.
    pub(crate) fn enqueue_at_switch(&mut self, l: LinkId, pkt: Packet) {
        if pkt.is_credit_or_traced() {
            if pkt.is_traced() {
                self.flow_trace_arrival(l, &pkt);
            }
            if self.links[l.idx()].has_credit && pkt.is_credit() {
                self.enqueue_credit(l, pkt);
                return;
            }
        }
        let link = &mut self.links[l.idx()];
        debug_assert!(link.switch != NO_SWITCH);
        let q = link.port.queue_of(pkt.prio());
        let size = pkt.size as u64;
        let s = link.switch as usize;
        let sw = &mut self.switches[s];
        sw.stats.arrivals += 1;
        if sw.selective.is_some_and(|d| d.drops(&pkt, link.port.queue_bytes(q))) {
            // Aeolus §3.2: an unscheduled packet finds its queue above the threshold.
            sw.stats.drops_selective += 1;
            sw.stats.dropped_bytes += size;
            self.bytes_dropped += size;
            self.hdrs.free(pkt.hdr);
            if pkt.is_traced() {
                self.flow_trace_drop(DropCause::Selective);
            }
            return;
        }
        if link.port.check_cap(q, size).is_err() && !self.pfabric_make_room(l, q, &pkt) {
            let sw = &mut self.switches[s];
            sw.stats.drops_queue_cap += 1;
            sw.stats.dropped_bytes += size;
            self.bytes_dropped += size;
            self.hdrs.free(pkt.hdr);
            if pkt.is_traced() {
                self.flow_trace_drop(DropCause::QueueCap);
            }
            return;
        }
        let link = &mut self.links[l.idx()];
        let sw = &mut self.switches[s];
        let now = self.sched.now();
        let qi = link.queue_base as usize + q;
        let first_rtt = pkt.to_receiver() && pkt.seq < self.first_rtt_bytes;
        let verdict = sw.admission.admit(&sw.buf, &Arrival { queue: qi, size, now, first_rtt });
        if let Some(t) = self.trace.as_deref_mut() {
            t.on_arrival(s, qi, &sw.buf, now, verdict == Verdict::Drop);
        }
        if verdict == Verdict::Drop {
            sw.stats.drops_admission += 1;
            sw.stats.dropped_bytes += size;
            self.bytes_dropped += size;
            self.hdrs.free(pkt.hdr);
            if pkt.is_traced() {
                self.flow_trace_drop(DropCause::Admission);
            }
            return;
        }
        // INVARIANT: the shared buffer never holds more than its size (after push-out).
        debug_assert!(
            verdict == Verdict::PushOut || sw.buf.occupancy + size <= sw.buf.capacity,
            "admission overfilled the buffer"
        );
        sw.buf.occupancy += size;
        sw.buf.qlen[qi] += size;
        sw.stats.enqueued_bytes += size;
        if sw.watches {
            sw.admission.on_enqueue(qi, size, now);
        }
        if verdict == Verdict::Accept && link.passes_through(now) {
            // The packet goes on the wire at once: enqueue and dequeue in one step (see
            // `Link::passes_through`), with the same accounting in the same order.
            link.port.pass(q, size);
            if sw.buf.occupancy > sw.stats.max_occupancy_bytes {
                sw.stats.max_occupancy_bytes = sw.buf.occupancy;
            }
            self.transmit(l, q, pkt, false, true);
            return;
        }
        if link.port.enqueue(q, pkt) {
            sw.stats.ecn_marks += 1;
        }
        if verdict == Verdict::PushOut {
            self.push_out(s);
        }
        let sw = &mut self.switches[s];
        if sw.buf.occupancy > sw.stats.max_occupancy_bytes {
            sw.stats.max_occupancy_bytes = sw.buf.occupancy;
        }
        self.kick(l);
    }

    /// ExpressPass §3.1: a credit at a port with a credit queue (every switch port and host NIC
    /// under `switch.credit_queue_pkts`: a receiver's NIC limits the credits of all its flows
    /// together) waits there, outside the shared buffer (a few 84-byte credits per port), or is
    /// dropped if the queue is full (a switch's `drops_credit`, or a NIC drop).
    #[inline(never)]
    fn enqueue_credit(&mut self, l: LinkId, pkt: Packet) {
        let link = &mut self.links[l.idx()];
        let Some(shaper) = link.credit.as_deref_mut() else { return };
        let sw = (link.switch != NO_SWITCH).then_some(link.switch as usize);
        if let Some(s) = sw {
            self.switches[s].stats.arrivals += 1;
        }
        if let Err(pkt) = shaper.enqueue(pkt) {
            let size = u64::from(pkt.size);
            self.hdrs.free(pkt.hdr);
            match sw {
                Some(s) => {
                    let st = &mut self.switches[s].stats;
                    st.drops_credit += 1;
                    st.dropped_bytes += size;
                }
                None => self.nic_drops += 1,
            }
            self.bytes_dropped += size;
            if pkt.is_traced() {
                self.flow_trace_drop(if sw.is_some() { DropCause::Credit } else { DropCause::Nic });
            }
            return;
        }
        self.kick(l);
    }

    /// pFabric (§4.1) at a full switch port of link `l`: if queue `q` holds enough packets of
    /// lower priority than `pkt`, drop them, least urgent first, until `pkt` fits, and return
    /// true; else return false (the arrival is the least urgent: the caller drops it). Victims
    /// leave the switch's shared buffer and count as push-outs. A port of another policy never
    /// makes room.
    #[inline(never)]
    fn pfabric_make_room(&mut self, l: LinkId, q: usize, pkt: &Packet) -> bool {
        let size = pkt.size as u64;
        let link = &mut self.links[l.idx()];
        if !link.port.is_pfabric() || !link.port.pfabric_can_make_room(q, pkt.rank, size) {
            return false;
        }
        let now = self.sched.now();
        let s = link.switch as usize;
        let sw = &mut self.switches[s];
        let qi = link.queue_base as usize + q;
        // The traced transfer's victims (`flowtrace`), recorded once the loop lets go of the port.
        let mut pushed = Vec::new();
        // CORRECTNESS: enough bytes of lower priority are queued, and the least urgent go first,
        // so every victim is less urgent than `pkt` and the loop ends with room for it.
        while link.port.check_cap(q, size).is_err() {
            let Some(victim) = link.port.pfabric_pop_worst(q) else {
                debug_assert!(false, "a pFabric port that can make room ran out of packets");
                return false;
            };
            let vsize = victim.size as u64;
            sw.buf.occupancy -= vsize;
            sw.buf.qlen[qi] -= vsize;
            if let Some(t) = self.trace.as_deref_mut() {
                t.on_push_out(s, qi);
            }
            self.hdrs.free(victim.hdr);
            sw.stats.drops_pushout += 1;
            sw.stats.pushed_out_bytes += vsize;
            sw.stats.dropped_bytes += vsize;
            self.bytes_dropped += vsize;
            sw.admission.on_push_out(qi, vsize, now);
            if victim.is_traced() {
                pushed.push(victim);
            }
        }
        for victim in pushed {
            self.flow_trace_push_out(l, &victim);
        }
        true
    }

    /// A NIC refused `pkt` (its static cap): count it and free its header.
    #[inline(always)]
    fn drop_at_nic(&mut self, pkt: Packet) {
        self.nic_drops += 1;
        self.bytes_dropped += pkt.size as u64;
        self.hdrs.free(pkt.hdr);
        if pkt.is_traced() {
            self.flow_trace_drop(DropCause::Nic);
        }
    }

    /// A NIC's static cap, then its queue (with ECN marking). Returns whether the packet was
    /// accepted (a refused one is counted as a NIC drop).
    #[inline(always)]
    fn nic_accept(&mut self, l: LinkId, q: usize, pkt: Packet) -> bool {
        let link = &mut self.links[l.idx()];
        let size = pkt.size as u64;
        if link.port.check_cap(q, size).is_err() {
            self.drop_at_nic(pkt);
            return false;
        }
        if link.port.enqueue(q, pkt) {
            self.nic_marks += 1;
        }
        true
    }

    /// A packet now waits at link `l`: start it at once if the link is idle (returns true),
    /// else make sure a `TxDone` is pending.
    // PERF: an idle link starts at once; a busy one gets a TxDone only now that a packet
    // waits, so uncongested links never schedule one (about a third fewer events on the
    // 256-host comparison scenario).
    #[inline(always)]
    fn kick(&mut self, l: LinkId) -> bool {
        let link = &mut self.links[l.idx()];
        if link.tx_done_pending {
            return false;
        }
        let now = self.sched.now();
        if link.busy_until <= now {
            self.start_tx(l);
            true
        } else {
            link.tx_done_pending = true;
            self.sched.at(link.busy_until, Event::TxDone { link: l });
            false
        }
    }

    /// `enqueue` of a sender's packet on its NIC under TSQ (`host`): as `enqueue` does for a
    /// NIC, and counted into the sender's NIC backlog, and out again at once if the NIC is idle
    /// and sends it straight away.
    // PERF: a function of its own rather than a branch in `enqueue`, which every hop runs (see
    // the measurement at `queue::Port`). A packet that finds its NIC idle passes the port's
    // FIFO, as at `enqueue_nic`; with per-flow round robin (the hosts' default) that also spares
    // the flow's slot search and the round's turn (`Port::is_idle_fifo`): 0.3 ms of the k = 16
    // fat-tree 3.168 -> 3.079 G instructions, 1 ms seven alternated pairs 0.934 (faster in 7),
    // 3 ms four pairs 0.955 (3 of 4), identical results; the 256-host run (one FIFO, no TSQ)
    // unchanged.
    #[inline(always)]
    pub(crate) fn enqueue_tsq(&mut self, l: LinkId, pkt: Packet) {
        debug_assert!(self.links[l.idx()].switch == NO_SWITCH && pkt.to_receiver());
        let q = self.links[l.idx()].port.queue_of(pkt.prio());
        let (conn, size) = (pkt.conn, pkt.size as u64);
        // The packet goes on the wire at once: the same cap, counts and start as below, without
        // the FIFO.
        match self.pass_idle_nic(l, q, pkt) {
            Some(true) => {
                // Counted into the sender's NIC backlog and out again at once: the backlog is
                // as it was, and a held sender under its limit wakes as that pair would wake it.
                self.on_nic_dequeue(conn, 0);
                return;
            }
            Some(false) => return,
            None => {}
        }
        if !self.nic_accept(l, q, pkt) {
            return;
        }
        self.on_nic_enqueue(conn, size);
        // CORRECTNESS: an idle link's queue was empty (a TxDone is pending whenever packets
        // wait), so the packet that starts now is this one.
        if self.kick(l) {
            self.on_nic_dequeue(conn, size);
        }
    }

    /// Drop from the tail of the longest queue of switch `s` until its buffer fits (LQD's
    /// push-out; the arriving packet itself goes if its queue is the longest).
    pub(crate) fn push_out(&mut self, s: usize) {
        let now = self.sched.now();
        loop {
            let sw = &mut self.switches[s];
            if sw.buf.occupancy <= sw.buf.capacity {
                break;
            }
            let (victim, _) = sw.buf.longest_queue();
            let (port, class) = (victim / sw.buf.qpp, victim % sw.buf.qpp);
            let l = sw.ports[port];
            let link = &mut self.links[l.idx()];
            let Some(pkt) = link.port.pop_back(class) else {
                // CORRECTNESS: the longest queue of an over-full buffer holds packets.
                debug_assert!(false, "the longest queue of a full buffer is empty");
                break;
            };
            let size = pkt.size as u64;
            sw.buf.occupancy -= size;
            sw.buf.qlen[victim] -= size;
            if let Some(t) = self.trace.as_deref_mut() {
                t.on_push_out(s, victim);
            }
            self.hdrs.free(pkt.hdr);
            sw.stats.drops_pushout += 1;
            sw.stats.pushed_out_bytes += size;
            sw.stats.dropped_bytes += size;
            self.bytes_dropped += size;
            sw.admission.on_push_out(victim, size, now);
            if pkt.is_traced() {
                self.flow_trace_push_out(l, &pkt);
            }
        }
    }

    /// Dequeue the next packet and put it on the wire: it arrives at the far end after its
    /// serialization and the propagation delay. If more packets wait, the link's next start
    /// is scheduled at the end of this serialization.
    ///
    /// TSQ (`host`) learns of a sender's packet leaving its NIC queue from the two callers, not
    /// in here: `on_tx_done` looks at what went on the wire, and `enqueue` knows that an idle
    /// NIC sends the packet it was just given.
    // PERF: carrying the sender's id through this function changed how the compiler moves the
    // packet and cost about 3% of a run's instructions (see the measurement at `queue::Port`).
    pub(crate) fn start_tx(&mut self, l: LinkId) {
        let now = self.sched.now();
        let link = &mut self.links[l.idx()];
        debug_assert!(link.busy_until <= now && !link.tx_done_pending);
        // ExpressPass §3.1: a waiting credit goes first whenever its rate limiter allows.
        let credit = match link.credit.as_deref_mut() {
            Some(c) => c.dequeue(now),
            None => None,
        };
        let is_credit = credit.is_some();
        let Some((q, pkt)) = credit.map(|p| (0, p)).or_else(|| link.port.dequeue()) else {
            // Only credits wait, none allowed yet: come back when the next one is.
            if let Some(at) = link.credit.as_deref().and_then(CreditShaper::ready_at) {
                link.tx_done_pending = true;
                self.sched.at(at.max(now), Event::TxDone { link: l });
            }
            return;
        };
        let at_switch = link.switch != NO_SWITCH;
        self.transmit(l, q, pkt, is_credit, at_switch);
    }

    /// Put `pkt`, just taken from queue `q` of link `l`'s port (or its credit queue if
    /// `is_credit`), on the wire: the dequeue's switch accounting, then serialization and
    /// propagation. If more packets wait, the link's next start is scheduled at the end of
    /// this serialization.
    // PERF: `at_switch` is `link.switch != NO_SWITCH`, a constant where the caller knows it.
    #[inline(always)]
    fn transmit(&mut self, l: LinkId, q: usize, pkt: Packet, is_credit: bool, at_switch: bool) {
        let now = self.sched.now();
        let link = &mut self.links[l.idx()];
        debug_assert_eq!(at_switch, link.switch != NO_SWITCH);
        let size = pkt.size as u64;
        if at_switch && !is_credit {
            let sw = &mut self.switches[link.switch as usize];
            let qi = link.queue_base as usize + q;
            sw.buf.occupancy -= size;
            sw.buf.qlen[qi] -= size;
            sw.stats.dequeued_bytes += size;
            if sw.watches {
                sw.admission.on_dequeue(qi, size, now);
            }
            if let Some(t) = self.trace.as_deref_mut() {
                t.on_dequeue(link.switch as usize, qi);
            }
        }
        let end = now + link.rate.tx_time(Bytes(size));
        link.busy_until = end;
        self.hops += 1;
        link.tx_packets += 1;
        link.tx_bytes += size;
        if at_switch && pkt.has_int() && pkt.to_receiver() {
            // HPCC/PowerTCP INT: written as the packet leaves the egress port.
            self.int.push_hop(pkt.hdr, IntHop {
                qlen_bytes: link.port.total_bytes(),
                tx_bytes: link.tx_bytes,
                ts_ps: now.ps(),
                rate_bps: link.rate.get(),
            });
        }
        let at = end + link.delay;
        link.wire.push_back((at, pkt));
        if link.wire.len() == 1 {
            self.sched.at(at, Event::Arrive { link: l });
        }
        if !link.port.is_empty() || (link.has_credit && link.credit.as_deref().is_some_and(|c| !c.is_empty())) {
            link.tx_done_pending = true;
            self.sched.at(end, Event::TxDone { link: l });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_stays_three_cache_lines_and_a_passing_hop_two() {
        // PERF: every packet-hop touches two links (see `Link`); a field that grows one past
        // this should live in a side table or a box.
        assert!(std::mem::size_of::<Link>() <= 192, "{} bytes", std::mem::size_of::<Link>());
        assert_eq!(std::mem::align_of::<Link>(), 64);
        // What a packet passing an idle port touches ends within the first two lines.
        let hot = std::mem::offset_of!(Link, port) + Port::HOT_BYTES;
        assert!(hot <= 128, "{hot} bytes");
        assert!(std::mem::offset_of!(Link, wire) + std::mem::size_of::<VecDeque<(Time, Packet)>>() <= 128);
        assert!(std::mem::offset_of!(Link, tx_bytes) < 128);
    }
}
