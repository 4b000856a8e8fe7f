//! The deterministic `Pair` harness (quinn's `Pair`, smoltcp's netsim): a client sender and
//! a server receiver joined by two one-way pipes, in virtual time.
//!
//! Each direction is a FIFO bottleneck that serializes `len + 40` bytes per segment at
//! `rate` (or takes no time if `rate` is `None`), followed by a fixed `latency`. Knobs, all
//! deterministic given the seed: per-direction random loss, per-index drop lists, random or
//! per-index extra delay (reordering), and ECN marking of ECT segments.
//!
//! One `drive` step handles exactly one input (the earliest packet arrival; at equal times
//! packets before the client's timer before the server's), then drains both endpoints in
//! the documented order. INVARIANT: virtual time never goes backwards.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use units::{Bps, Bytes, Dur, Time};
use wire::{Ecn, SegmentRepr};

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
    /// The segment as delivered (with any CE mark applied).
    pub(crate) seg: SegmentRepr,
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

/// Which ECT segments (client to server) get CE-marked.
#[derive(Clone, Debug)]
pub(crate) enum Mark {
    Never,
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
    pub(crate) now: Time,
    pub(crate) latency: Dur,
    /// Bottleneck rate in each direction; `None`: no serialization delay.
    pub(crate) rate: Option<Bps>,
    pub(crate) loss_to_server: f64,
    pub(crate) loss_to_client: f64,
    /// Probability of adding `reorder_delay` to a segment.
    pub(crate) reorder: f64,
    pub(crate) reorder_delay: Dur,
    /// Drop the client's data segments with these indices (send order, retx included).
    pub(crate) drop_data: BTreeSet<usize>,
    /// Drop the client's segments (SYNs included) with these indices.
    pub(crate) drop_to_server: BTreeSet<usize>,
    /// Drop the server's segments with these indices.
    pub(crate) drop_to_client: BTreeSet<usize>,
    /// Extra delay for the client's data segments with these indices.
    pub(crate) delay_data: BTreeMap<usize, Dur>,
    pub(crate) mark: Mark,
    /// Call `handle_timeout` before every deadline too (must change nothing).
    pub(crate) spurious_timeouts: bool,
    rng: Pcg64,
    busy_until: [Time; 2],
    backlog: [VecDeque<(Time, u64)>; 2],
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
            spurious_timeouts: false,
            rng: Pcg64::seed_from_u64(seed),
            busy_until: [Time::ZERO; 2],
            backlog: [VecDeque::new(), VecDeque::new()],
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

    /// Run until both sides are idle: nothing in flight and no timer armed. Returns true if
    /// that happened within `max_steps` inputs (false means a livelock or a too-small bound).
    pub(crate) fn drive_bounded(&mut self, max_steps: usize) -> bool {
        loop {
            self.flush();
            let t_pkt = self.in_flight.peek().map(|Reverse((t, _, _))| *t);
            let t_client = self.client.poll_timeout();
            let t_server = self.server.poll_timeout();
            let Some(next) = [t_pkt, t_client, t_server].into_iter().flatten().min() else {
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
            if t_pkt == Some(next) {
                let Reverse((_, _, idx)) = self.in_flight.pop().expect("peeked");
                let e = self.trace[idx];
                match e.dir {
                    Dir::ToServer => self.server.handle_segment(next, &e.seg),
                    Dir::ToClient => {
                        self.client.handle_segment(next, &e.seg);
                        self.snap(Some(idx));
                    }
                }
            } else if t_client == Some(next) {
                self.client.handle_timeout(next);
                self.snap(None);
            } else {
                self.server.handle_timeout(next);
            }
        }
    }

    /// Spurious wakeups strictly before each endpoint's deadline: now and half-way to `next`.
    fn poke(&mut self, next: Time) {
        let mid = Time(self.now.ps() + (next.ps() - self.now.ps()) / 2);
        for t in [self.now, mid] {
            for ep in [&mut self.client, &mut self.server] {
                if !matches!(ep.poll_timeout(), Some(d) if d <= t) {
                    ep.handle_timeout(t);
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

    /// Drain both endpoints: transmit, (timeouts are re-read by the loop), events.
    fn flush(&mut self) {
        while let Some(seg) = self.client.poll_transmit(self.now) {
            self.transmit(Dir::ToServer, seg);
        }
        while let Some(ev) = self.client.poll_event() {
            self.client_events.push((self.now, ev));
        }
        while let Some(seg) = self.server.poll_transmit(self.now) {
            self.transmit(Dir::ToClient, seg);
        }
        while let Some(ev) = self.server.poll_event() {
            self.server_events.push((self.now, ev));
        }
    }

    fn transmit(&mut self, dir: Dir, mut seg: SegmentRepr) {
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
                    Mark::DataIndices(s) => data_idx.is_some_and(|i| s.contains(&i)),
                    Mark::EveryNth(n) => data_idx.is_some_and(|i| i.checked_rem(*n) == Some(0)),
                    Mark::Prob(p) => self.rng.gen::<f64>() < *p,
                    Mark::QueueAbove(k) => backlog > *k,
                };
                if is_marked {
                    seg.ecn = Ecn::Ce;
                }
            }
            let fin = match self.rate {
                Some(r) => {
                    let start = self.now.max(self.busy_until[d]);
                    let fin = start + r.tx_time(Bytes(size));
                    self.busy_until[d] = fin;
                    q.push_back((fin, size));
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
        self.trace.push(TraceEntry { sent: self.now, arrive, dir, seg });
        if let Some(at) = arrive {
            self.in_flight.push(Reverse((at, self.next_id, trace_idx)));
            self.next_id += 1;
        }
    }

    // ----- queries for assertions -----

    /// The client's data segments (payload > 0), in send order.
    pub(crate) fn data(&self) -> Vec<TraceEntry> {
        self.trace.iter().filter(|e| e.dir == Dir::ToServer && e.seg.len > 0).copied().collect()
    }

    /// Everything the server sent (ACKs, SYN-ACKs), in send order.
    pub(crate) fn acks(&self) -> Vec<TraceEntry> {
        self.trace.iter().filter(|e| e.dir == Dir::ToClient).copied().collect()
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
        self.client_events.iter().find(|e| e.1 == Event::Completed).map(|e| e.0)
    }

    /// When the server reported ReceivedAll (asserting it did so at most once).
    pub(crate) fn received_all_at(&self) -> Option<Time> {
        assert!(self.server_events.len() <= 1, "{:?}", self.server_events);
        self.server_events.iter().find(|e| e.1 == Event::ReceivedAll).map(|e| e.0)
    }

    /// Both sides finished.
    pub(crate) fn is_complete(&self) -> bool {
        self.completed_at().is_some() && self.received_all_at().is_some()
    }

    /// Serialization time of a segment with `len` payload bytes at the bottleneck.
    pub(crate) fn tx(&self, len: u64) -> Dur {
        self.rate.map_or(Dur::ZERO, |r| r.tx_time(Bytes(len + HEADER_BYTES)))
    }
}
