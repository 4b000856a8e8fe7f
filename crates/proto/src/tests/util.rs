//! The deterministic `Pair` harness (quinn's `Pair`, smoltcp's netsim): a client sender and
//! a server receiver joined by two one-way pipes, in virtual time, optionally with further
//! client/server flows ([`Pair::add_flow`]) that share both pipes.
//!
//! Each direction is a FIFO bottleneck that serializes `len + 40` bytes per segment at
//! `rate` (or takes no time if `rate` is `None`), followed by a fixed `latency`. Knobs, all
//! deterministic given the seed: per-direction random loss, per-index drop lists, random or
//! per-index extra delay (reordering), and ECN marking of ECT segments.
//!
//! In-band telemetry (the driver contract on [`Conn`]): when a flow's client
//! `wants_int()`, each of its data segments that crossed the client-to-server bottleneck
//! (with `rate` set) is delivered with a one-hop [`IntStack`] describing that bottleneck
//! as the segment was dequeued: the bytes queued behind it (segments enqueued strictly
//! before its serialization started), the cumulative bytes the bottleneck has sent
//! including it, the dequeue time and the rate. The stack is computed when the segment is
//! delivered, when every earlier enqueue is known. After every `poll_transmit` the harness
//! calls `take_echo_int` and carries the stack with the segment.
//!
//! Backpressure (`tsq_bytes`, Linux's TCP Small Queues): a flow's client is polled only while
//! the bytes of its segments waiting at the client-to-server bottleneck (enqueued, serialization
//! not started) plus one full packet fit in the limit; when one of them starts serialization
//! the client is polled again (an input of its own). Servers are never held back.
//!
//! One `drive` step handles exactly one input (the earliest packet arrival; at equal times
//! packets before the client's timer before the server's, then held-back clients' wake-ups,
//! and the main flow before the added ones), then drains every endpoint in the documented
//! order. INVARIANT: virtual time never goes backwards.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use units::{Bps, Bytes, Dur, Time};
use wire::{Ecn, IntHop, IntStack, SackBlocks, SegmentRepr};

use crate::Segment;

use crate::tcp::Conn;
use crate::{Endpoint, Event, Stats, TransportConfig};

/// Header bytes the pipes add to every segment's payload.
pub(crate) const HEADER_BYTES: u64 = 40;

/// Direction of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    /// Client (sender) to server (receiver): data and SYNs.
    ToServer = 0,
    /// Server to client: ACKs and SYN-ACKs.
    ToClient = 1,
}

/// One transmitted segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TraceEntry {
    /// When the endpoint handed it out.
    pub(crate) sent: Time,
    /// When it reached the peer, `None` if dropped.
    pub(crate) arrive: Option<Time>,
    pub(crate) dir: Dir,
    /// 0 for the main `client`/`server`, `k >= 1` for `extra[k - 1]`.
    pub(crate) flow: usize,
    /// The packet's header as delivered (with any CE mark applied).
    pub(crate) pkt: Segment,
    /// A TCP-shaped view of `pkt` for assertions: the segment itself for the TCP kinds; a
    /// datagram's fields (conn, seq, len, flags, ECN, prio, timestamp) mapped onto it.
    pub(crate) seg: SegmentRepr,
    /// Telemetry carried with it: the bottleneck hop of an INT flow's data segment (set when
    /// it is delivered), or the stack a receiver's ACK echoes.
    pub(crate) int: Option<IntStack>,
    /// SACK blocks an ACK carries (a TCP receiver with SACK on).
    pub(crate) sack: Option<SackBlocks>,
}

/// A further flow sharing both pipes with the main one.
pub(crate) struct Flow {
    pub(crate) client: Endpoint,
    pub(crate) server: Endpoint,
    /// The client is first polled at this time.
    pub(crate) start: Time,
    pub(crate) client_events: Vec<(Time, Event)>,
    pub(crate) server_events: Vec<(Time, Event)>,
}

/// What one `drive` step does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Input {
    Packet,
    /// `handle_timeout` of a flow's client (side 0) or server (side 1).
    Timer(usize, usize),
    /// An added flow's start time, or a held-back client's wake-up: nothing to handle, the
    /// drain polls it.
    Start,
}

/// The client's state right after one of its inputs (before it transmits in response).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Snap {
    pub(crate) at: Time,
    pub(crate) stats: Stats,
    /// `(snd_una, snd_nxt, snd_max)`.
    pub(crate) seq: (u64, u64, u64),
    /// Trace index of the segment handled, `None` for a timeout.
    pub(crate) input: Option<usize>,
}

/// Which ECT segments get CE-marked (data and ACKs: DCTCP's ACKs are ECT too).
#[derive(Clone, Debug)]
pub(crate) enum Mark {
    Never,
    /// Every ECT segment the server sends (its ACKs and SYN-ACK).
    Acks,
    /// Data segments with these indices (0-based in send order, retransmissions included).
    DataIndices(BTreeSet<usize>),
    /// Data segments whose index is a multiple of n.
    EveryNth(usize),
    /// Each ECT segment with this probability.
    Prob(f64),
    /// When the bottleneck backlog (bytes not yet serialized, excluding this one) exceeds K.
    QueueAbove(u64),
}

pub(crate) struct Pair {
    pub(crate) client: Endpoint,
    pub(crate) server: Endpoint,
    /// Flows 1.. (see [`Pair::add_flow`]).
    pub(crate) extra: Vec<Flow>,
    pub(crate) now: Time,
    pub(crate) latency: Dur,
    /// Bottleneck rate in each direction; `None`: no serialization delay.
    pub(crate) rate: Option<Bps>,
    pub(crate) loss_to_server: f64,
    pub(crate) loss_to_client: f64,
    /// Probability of adding `reorder_delay` to a segment.
    pub(crate) reorder: f64,
    pub(crate) reorder_delay: Dur,
    /// Drop the client's data segments with these indices (send order, retx included; all
    /// flows count, as for the other index lists).
    pub(crate) drop_data: BTreeSet<usize>,
    /// Drop the client's segments (SYNs included) with these indices.
    pub(crate) drop_to_server: BTreeSet<usize>,
    /// Drop the server's segments with these indices.
    pub(crate) drop_to_client: BTreeSet<usize>,
    /// Extra delay for the client's data segments with these indices.
    pub(crate) delay_data: BTreeMap<usize, Dur>,
    pub(crate) mark: Mark,
    /// Drop-tail: the client-to-server bottleneck holds at most this many bytes (the segment
    /// in serialization included). `None`: unbounded.
    pub(crate) queue_cap_bytes: Option<u64>,
    /// Call `handle_timeout` before every deadline too (must change nothing).
    pub(crate) spurious_timeouts: bool,
    /// Hold clients back at this many bytes waiting at the bottleneck (module docs).
    pub(crate) tsq_bytes: Option<u64>,
    /// The largest packet a client sends (payload + header): the unit of `tsq_bytes`.
    max_pkt: u64,
    /// Per flow: serialization start and size of its client's segments that were waiting at
    /// the bottleneck when last looked at (start times non-decreasing: a FIFO).
    tsq_waiting: Vec<VecDeque<(Time, u64)>>,
    /// Per flow: its client was held back at its last drain.
    tsq_held: Vec<bool>,
    rng: Pcg64,
    busy_until: [Time; 2],
    backlog: [VecDeque<(Time, u64)>; 2],
    /// Per direction, every segment that entered the bottleneck, in FIFO order: when it was
    /// enqueued and the cumulative bytes enqueued including it.
    fifo: [Vec<(Time, u64)>; 2],
    /// Per trace entry: its index in `fifo` and when its serialization started, if it
    /// entered a bottleneck.
    queued: Vec<Option<(usize, Time)>>,
    in_flight: BinaryHeap<Reverse<(Time, u64, usize)>>,
    next_id: u64,
    num_sent: [usize; 2],
    num_data: usize,
    pub(crate) steps: usize,
    pub(crate) trace: Vec<TraceEntry>,
    pub(crate) client_events: Vec<(Time, Event)>,
    pub(crate) server_events: Vec<(Time, Event)>,
    pub(crate) snaps: Vec<Snap>,
}

impl Pair {
    /// Latency 10 µs and 10 Gb/s each way, no loss, no marking.
    pub(crate) fn new(cfg: &TransportConfig, size: u64, seed: u64) -> Pair {
        Pair {
            client: Endpoint::sender(cfg, 1, Bytes(size), Time::ZERO),
            server: Endpoint::receiver(cfg, 1),
            extra: Vec::new(),
            now: Time::ZERO,
            latency: Dur::from_us(10),
            rate: Some(Bps::from_gbps(10)),
            loss_to_server: 0.0,
            loss_to_client: 0.0,
            reorder: 0.0,
            reorder_delay: Dur::ZERO,
            drop_data: BTreeSet::new(),
            drop_to_server: BTreeSet::new(),
            drop_to_client: BTreeSet::new(),
            delay_data: BTreeMap::new(),
            mark: Mark::Never,
            queue_cap_bytes: None,
            spurious_timeouts: false,
            tsq_bytes: None,
            max_pkt: u64::from(cfg.mss()) + HEADER_BYTES,
            tsq_waiting: vec![VecDeque::new()],
            tsq_held: vec![false],
            rng: Pcg64::seed_from_u64(seed),
            busy_until: [Time::ZERO; 2],
            backlog: [VecDeque::new(), VecDeque::new()],
            fifo: [Vec::new(), Vec::new()],
            queued: Vec::new(),
            in_flight: BinaryHeap::new(),
            next_id: 0,
            num_sent: [0; 2],
            num_data: 0,
            steps: 0,
            trace: Vec::new(),
            client_events: Vec::new(),
            server_events: Vec::new(),
            snaps: Vec::new(),
        }
    }

    /// Run until idle (no packet in flight, no timer) or 5M steps; true if idle.
    pub(crate) fn drive(&mut self) -> bool {
        self.drive_bounded(5_000_000)
    }

    /// Add a flow of `size` bytes (connection id `k + 1` for flow `k`) whose client starts at
    /// `start`; returns its flow index `k >= 1`.
    pub(crate) fn add_flow(&mut self, cfg: &TransportConfig, size: u64, start: Time) -> usize {
        let k = self.extra.len() + 1;
        let conn = k as u32 + 1;
        self.extra.push(Flow {
            client: Endpoint::sender(cfg, conn, Bytes(size), start),
            server: Endpoint::receiver(cfg, conn),
            start,
            client_events: Vec::new(),
            server_events: Vec::new(),
        });
        self.tsq_waiting.push(VecDeque::new());
        self.tsq_held.push(false);
        k
    }

    /// The client (`side` 0) or server (1) of flow `f`.
    fn endpoint(&mut self, f: usize, side: usize) -> &mut Endpoint {
        match (f, side) {
            (0, 0) => &mut self.client,
            (0, _) => &mut self.server,
            (f, 0) => &mut self.extra[f - 1].client,
            (f, _) => &mut self.extra[f - 1].server,
        }
    }

    /// Whether flow `f`'s client may be polled yet.
    fn is_started(&self, f: usize) -> bool {
        f == 0 || self.now >= self.extra[f - 1].start
    }

    /// The next input and its time; ties go to the first candidate in the module-doc order.
    fn next_input(&self) -> Option<(Time, Input)> {
        let mut best: Option<(Time, Input)> = None;
        let mut offer = |t: Option<Time>, input: Input| {
            if let Some(t) = t {
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, input));
                }
            }
        };
        offer(self.in_flight.peek().map(|Reverse((t, _, _))| *t), Input::Packet);
        // A held-back client's deadline may lie in the past (a paced UDP source): its wake-up
        // polls it instead.
        let due = |f: usize, t: Option<Time>| t.filter(|&t| !(self.tsq_held[f] && t <= self.now));
        offer(due(0, self.client.poll_timeout()), Input::Timer(0, 0));
        offer(self.server.poll_timeout(), Input::Timer(0, 1));
        for (f, held) in self.tsq_held.iter().enumerate() {
            // A held-back client is woken when its next waiting segment starts serializing.
            if *held {
                offer(self.tsq_waiting[f].iter().map(|&(t, _)| t).find(|&t| t > self.now), Input::Start);
            }
        }
        for (i, fl) in self.extra.iter().enumerate() {
            if self.now < fl.start {
                offer(Some(fl.start), Input::Start);
            } else {
                offer(due(i + 1, fl.client.poll_timeout()), Input::Timer(i + 1, 0));
            }
            offer(fl.server.poll_timeout(), Input::Timer(i + 1, 1));
        }
        best
    }

    /// Run until both sides are idle: nothing in flight and no timer armed. Returns true if
    /// that happened within `max_steps` inputs (false means a livelock or a too-small bound).
    pub(crate) fn drive_bounded(&mut self, max_steps: usize) -> bool {
        loop {
            self.flush();
            let Some((next, input)) = self.next_input() else {
                return true;
            };
            if self.steps >= max_steps {
                return false;
            }
            self.steps += 1;
            if self.spurious_timeouts {
                self.poke(next);
            }
            assert!(next >= self.now, "time went backwards");
            self.now = next;
            match input {
                Input::Packet => {
                    let Reverse((_, _, idx)) = self.in_flight.pop().expect("peeked");
                    self.deliver(idx);
                }
                Input::Timer(f, side) => {
                    self.endpoint(f, side).handle_timeout(next);
                    if (f, side) == (0, 0) {
                        self.snap(None);
                    }
                }
                Input::Start => {}
            }
        }
    }

    /// Hand trace entry `idx` to its destination, with telemetry as the module docs say.
    fn deliver(&mut self, idx: usize) {
        let now = self.now;
        let e = self.trace[idx];
        match e.dir {
            Dir::ToServer => {
                let is_int_data = e.seg.len > 0 && self.endpoint(e.flow, 0).wants_int();
                if is_int_data {
                    let stack = self.int_stamp(idx);
                    self.trace[idx].int = Some(stack);
                    self.endpoint(e.flow, 1).handle_segment_int(now, &e.pkt, Some(&stack));
                } else {
                    self.endpoint(e.flow, 1).handle_segment(now, &e.pkt);
                }
            }
            Dir::ToClient => {
                self.endpoint(e.flow, 0).handle_segment_ext(now, &e.pkt, e.int.as_ref(), e.sack.as_ref());
                if e.flow == 0 {
                    self.snap(Some(idx));
                }
            }
        }
    }

    /// The bottleneck's INT hop for trace entry `idx` (see the module docs); an empty stack
    /// if it crossed no bottleneck (`rate` is `None`).
    fn int_stamp(&self, idx: usize) -> IntStack {
        let mut stack = IntStack::default();
        if let (Some(rate), Some((i, start))) = (self.rate, self.queued[idx]) {
            let fifo = &self.fifo[self.trace[idx].dir as usize];
            // Enqueue times are non-decreasing: the segments enqueued before `start` are a
            // prefix, and those after `i` in it were queued behind this one when it left.
            let end = fifo.partition_point(|&(t, _)| t < start).max(i + 1);
            stack.push(IntHop {
                qlen_bytes: fifo[end - 1].1 - fifo[i].1,
                tx_bytes: fifo[i].1,
                ts_ps: start.ps(),
                rate_bps: rate.get(),
            });
        }
        stack
    }

    /// Spurious wakeups strictly before each endpoint's deadline: now and half-way to `next`.
    fn poke(&mut self, next: Time) {
        let mid = Time(self.now.ps() + (next.ps() - self.now.ps()) / 2);
        for t in [self.now, mid] {
            for f in 0..=self.extra.len() {
                for side in 0..2 {
                    let ep = self.endpoint(f, side);
                    if !matches!(ep.poll_timeout(), Some(d) if d <= t) {
                        ep.handle_timeout(t);
                    }
                }
            }
        }
    }

    fn snap(&mut self, input: Option<usize>) {
        if let Endpoint::Tcp(c) = &self.client {
            self.snaps.push(Snap {
                at: self.now,
                stats: c.stats(),
                seq: c.seq_state().expect("client is a sender"),
                input,
            });
        }
    }

    /// Drain every endpoint: transmit, (timeouts are re-read by the loop), events.
    fn flush(&mut self) {
        for f in 0..=self.extra.len() {
            if self.is_started(f) {
                self.flush_side(f, 0);
            }
            self.flush_side(f, 1);
        }
    }

    /// Drain one endpoint: every segment (with its echoed telemetry; a client only as far as
    /// `tsq_bytes` allows), then its events.
    fn flush_side(&mut self, f: usize, side: usize) {
        let now = self.now;
        loop {
            if let (Some(limit), 0) = (self.tsq_bytes, side) {
                let waiting = &mut self.tsq_waiting[f];
                while waiting.front().is_some_and(|&(start, _)| start <= now) {
                    waiting.pop_front();
                }
                let bytes: u64 = waiting.iter().map(|&(_, b)| b).sum();
                self.tsq_held[f] = bytes + self.max_pkt > limit;
                if self.tsq_held[f] {
                    break;
                }
            }
            let ep = self.endpoint(f, side);
            let Some(seg) = ep.poll_transmit(now) else { break };
            let int = ep.take_echo_int();
            let sack = ep.take_sack();
            let dir = if side == 0 { Dir::ToServer } else { Dir::ToClient };
            self.transmit(f, dir, seg, int, sack);
        }
        while let Some(ev) = self.endpoint(f, side).poll_event() {
            let events = match (f, side) {
                (0, 0) => &mut self.client_events,
                (0, _) => &mut self.server_events,
                (f, 0) => &mut self.extra[f - 1].client_events,
                (f, _) => &mut self.extra[f - 1].server_events,
            };
            events.push((now, ev));
        }
    }

    fn transmit(&mut self, flow: usize, dir: Dir, mut pkt: Segment, int: Option<IntStack>, sack: Option<SackBlocks>) {
        let mut seg = match pkt {
            Segment::Tcp(s) => s,
            Segment::Udp(d) => SegmentRepr {
                conn: d.conn,
                seq: d.seq,
                len: d.len,
                flags: d.flags,
                ecn: d.ecn,
                prio: d.prio,
                ts_ps: d.ts_ps,
                ..SegmentRepr::default()
            },
            // ExpressPass/Aeolus: the header's own fields (credits: `seq` 0, no payload).
            Segment::Xpass(x) => SegmentRepr {
                conn: x.conn,
                seq: x.seq,
                ack: x.ack,
                len: x.len,
                ecn: x.ecn,
                prio: x.prio,
                ts_ps: x.ts_ps,
                ..SegmentRepr::default()
            },
            // pFabric: the header maps field for field; `ts_ps` shows the rank.
            Segment::Pfabric(p) => SegmentRepr {
                conn: p.conn,
                seq: p.seq,
                ack: p.ack,
                len: p.len,
                flags: p.flags,
                ecn: p.ecn,
                prio: p.prio,
                ts_ps: p.rank,
                ..SegmentRepr::default()
            },
            // Bounded-loss transport: `seq` is the first value's byte offset, `ack` the
            // transmission number; `ts_ps` the ACK's count of values received.
            Segment::Mlt(m) => SegmentRepr {
                conn: m.conn,
                seq: u64::from(m.start) * u64::from(m.value_bytes),
                ack: m.seq,
                len: m.len,
                flags: m.flags,
                ecn: m.ecn,
                prio: m.prio,
                ts_ps: u64::from(m.received),
                ..SegmentRepr::default()
            },
            // ATP: `seq` is the transmission number, `ack` the message id.
            Segment::Atp(a) => SegmentRepr {
                conn: a.conn,
                seq: a.seq,
                ack: u64::from(a.msg),
                len: a.len,
                ecn: a.ecn,
                prio: a.prio,
                ts_ps: a.ts_ps,
                ..SegmentRepr::default()
            },
        };
        let d = dir as usize;
        let idx = self.num_sent[d];
        self.num_sent[d] += 1;
        let data_idx = (dir == Dir::ToServer && seg.len > 0).then(|| {
            self.num_data += 1;
            self.num_data - 1
        });
        let (drops, loss) = match dir {
            Dir::ToServer => (&self.drop_to_server, self.loss_to_server),
            Dir::ToClient => (&self.drop_to_client, self.loss_to_client),
        };
        let mut is_dropped =
            drops.contains(&idx) || data_idx.is_some_and(|i| self.drop_data.contains(&i));
        if loss > 0.0 && self.rng.gen::<f64>() < loss {
            is_dropped = true;
        }
        // A drop-tail buffer at the client-to-server bottleneck.
        if let (false, Dir::ToServer, Some(cap)) = (is_dropped, dir, self.queue_cap_bytes) {
            let q = &mut self.backlog[d];
            while q.front().is_some_and(|&(fin, _)| fin <= self.now) {
                q.pop_front();
            }
            let backlog: u64 = q.iter().map(|&(_, b)| b).sum();
            is_dropped = backlog + u64::from(seg.len) + HEADER_BYTES > cap;
        }
        let mut queued = None;
        let arrive = if is_dropped {
            None
        } else {
            let size = u64::from(seg.len) + HEADER_BYTES;
            let q = &mut self.backlog[d];
            while q.front().is_some_and(|&(fin, _)| fin <= self.now) {
                q.pop_front();
            }
            let backlog: u64 = q.iter().map(|&(_, b)| b).sum();
            if seg.ecn.is_ect() {
                let is_marked = match &self.mark {
                    Mark::Never => false,
                    Mark::Acks => dir == Dir::ToClient,
                    Mark::DataIndices(s) => data_idx.is_some_and(|i| s.contains(&i)),
                    Mark::EveryNth(n) => data_idx.is_some_and(|i| i.checked_rem(*n) == Some(0)),
                    Mark::Prob(p) => self.rng.gen::<f64>() < *p,
                    Mark::QueueAbove(k) => backlog > *k,
                };
                if is_marked {
                    seg.ecn = Ecn::Ce;
                    pkt.set_ecn(Ecn::Ce);
                }
            }
            let fin = match self.rate {
                Some(r) => {
                    let start = self.now.max(self.busy_until[d]);
                    let fin = start + r.tx_time(Bytes(size));
                    self.busy_until[d] = fin;
                    q.push_back((fin, size));
                    let fifo = &mut self.fifo[d];
                    let total = fifo.last().map_or(0, |&(_, b)| b) + size;
                    fifo.push((self.now, total));
                    queued = Some((fifo.len() - 1, start));
                    if dir == Dir::ToServer && start > self.now {
                        self.tsq_waiting[flow].push_back((start, size));
                    }
                    fin
                }
                None => self.now,
            };
            let mut at = fin + self.latency;
            if self.reorder > 0.0 && self.rng.gen::<f64>() < self.reorder {
                at += self.reorder_delay;
            }
            if let Some(extra) = data_idx.and_then(|i| self.delay_data.get(&i)) {
                at += *extra;
            }
            Some(at)
        };
        let trace_idx = self.trace.len();
        self.trace.push(TraceEntry { sent: self.now, arrive, dir, flow, pkt, seg, int, sack });
        self.queued.push(queued);
        if let Some(at) = arrive {
            self.in_flight.push(Reverse((at, self.next_id, trace_idx)));
            self.next_id += 1;
        }
    }

    // ----- queries for assertions -----

    /// The main client's data segments (payload > 0), in send order.
    pub(crate) fn data(&self) -> Vec<TraceEntry> {
        self.data_of(0)
    }

    /// Everything the main server sent (ACKs, SYN-ACKs), in send order.
    pub(crate) fn acks(&self) -> Vec<TraceEntry> {
        self.acks_of(0)
    }

    /// Flow `f`'s data segments (payload > 0), in send order.
    pub(crate) fn data_of(&self, f: usize) -> Vec<TraceEntry> {
        let is_data = |e: &&TraceEntry| e.dir == Dir::ToServer && e.seg.len > 0;
        self.trace.iter().filter(|e| e.flow == f).filter(is_data).copied().collect()
    }

    /// Everything flow `f`'s server sent, in send order.
    pub(crate) fn acks_of(&self, f: usize) -> Vec<TraceEntry> {
        self.trace.iter().filter(|e| e.flow == f && e.dir == Dir::ToClient).copied().collect()
    }

    pub(crate) fn client_conn(&self) -> &Conn {
        match &self.client {
            Endpoint::Tcp(c) => c,
            _ => panic!("client is not TCP"),
        }
    }

    /// When the client reported Completed (asserting it did so exactly once).
    pub(crate) fn completed_at(&self) -> Option<Time> {
        assert!(self.client_events.len() <= 1, "{:?}", self.client_events);
        self.client_events.iter().find(|e| matches!(e.1, Event::SenderDone { .. })).map(|e| e.0)
    }

    /// When the server reported ReceivedAll (asserting it did so at most once).
    pub(crate) fn received_all_at(&self) -> Option<Time> {
        assert!(self.server_events.len() <= 1, "{:?}", self.server_events);
        self.server_events.iter().find(|e| matches!(e.1, Event::Delivered { .. })).map(|e| e.0)
    }

    /// Both sides finished.
    pub(crate) fn is_complete(&self) -> bool {
        self.completed_at().is_some() && self.received_all_at().is_some()
    }

    /// The most bytes of flow `f`'s client segments ever waiting at the client-to-server
    /// bottleneck (enqueued, serialization not started), looked at right after each send.
    pub(crate) fn max_waiting_bytes(&self, f: usize) -> u64 {
        let mut waiting: VecDeque<(Time, u64)> = VecDeque::new();
        let mut max = 0;
        for (e, q) in self.trace.iter().zip(&self.queued) {
            let (true, Some((_, start))) = (e.flow == f && e.dir == Dir::ToServer, *q) else { continue };
            while waiting.front().is_some_and(|&(s, _)| s <= e.sent) {
                waiting.pop_front();
            }
            if start > e.sent {
                waiting.push_back((start, u64::from(e.seg.len) + HEADER_BYTES));
            }
            max = max.max(waiting.iter().map(|&(_, b)| b).sum());
        }
        max
    }

    /// Serialization time of a segment with `len` payload bytes at the bottleneck.
    pub(crate) fn tx(&self, len: u64) -> Dur {
        self.rate.map_or(Dur::ZERO, |r| r.tx_time(Bytes(len + HEADER_BYTES)))
    }
}
