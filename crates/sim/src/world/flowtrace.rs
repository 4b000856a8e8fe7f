//! One transfer's packet-level history, an optional observer: every segment its two endpoints
//! send and receive, every queue its packets (data and ACKs) enter or are dropped at, with the
//! queue they found, and every retransmission timeout, each with the sender's congestion
//! window. What ns-3 users get from a socket's `Tx`/`Rx`/`CongestionWindow` trace sources plus
//! the queues' `Drop` sources, for one flow, in one table; `--traceFlow` of the ns-3 peer
//! program (`bench/peers/ns3/dc_bench.cc`) writes the sender's side of it for the same flow.
//!
//! Off unless the simulation was made by [`Simulation::with_flow_trace`]. The traced transfer's
//! packets carry a bit (`Packet::is_traced`) set as its endpoints hand them to their NIC, so
//! the hot path pays one test of packet bits per switch hop, merged with the test for credits
//! it made before, and delivery none (a traced packet takes the path of packets with side
//! data); a drain compares its transfer with `Simulation::trace_conn` (`u32::MAX`: none).
//! Packets that reach a transfer already over (late duplicates) are not recorded.
//!
//! INVARIANT: `trace_conn` is the index of the traced transfer once it started (the first
//! transfer whose id is the one asked for), `u32::MAX` before and when tracing is off; rows are
//! in the order the simulation made them (time never decreases).

use units::{LinkId, Time};

use super::{reserve_capped, Simulation};
use crate::packet::Packet;
use crate::spec::limits::MAX_SERIES_BYTES;

/// The most rows a flow trace keeps: [`MAX_SERIES_BYTES`] of rows.
pub const MAX_FLOW_TRACE_ROWS: u64 = MAX_SERIES_BYTES / std::mem::size_of::<FlowTraceRow>() as u64;

/// What happened to the packet (or the endpoint) a row describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowEvent {
    /// An endpoint handed a segment to its host's NIC.
    Send,
    /// A segment reached its endpoint.
    Receive,
    /// A packet entered a queue (a host NIC's or a switch port's) or went straight to an idle
    /// link.
    Enqueue,
    /// A packet was dropped (`FlowTraceRow::cause` says where and why).
    Drop,
    /// The sender's retransmission timer fired.
    Timeout,
}

impl FlowEvent {
    /// The name in tables: `send`, `receive`, `enqueue`, `drop`, `timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowEvent::Send => "send",
            FlowEvent::Receive => "receive",
            FlowEvent::Enqueue => "enqueue",
            FlowEvent::Drop => "drop",
            FlowEvent::Timeout => "timeout",
        }
    }
}

/// Why a packet was dropped (the switch statistics' causes, and a host NIC's cap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// Not a drop.
    None,
    /// The switch's buffer-sharing policy refused it (`drops_admission`).
    Admission,
    /// Its queue's own cap (`drops_queue_cap`).
    QueueCap,
    /// Aeolus's selective dropping (`drops_selective`).
    Selective,
    /// Pushed out of its queue later by LQD or pFabric (`drops_pushout`).
    PushOut,
    /// A full credit queue (`drops_credit`).
    Credit,
    /// Its host NIC's queue was full (`nic_drops`).
    Nic,
}

impl DropCause {
    /// The name in tables (empty for [`DropCause::None`]).
    pub fn as_str(self) -> &'static str {
        match self {
            DropCause::None => "",
            DropCause::Admission => "admission",
            DropCause::QueueCap => "queue_cap",
            DropCause::Selective => "selective",
            DropCause::PushOut => "pushout",
            DropCause::Credit => "credit",
            DropCause::Nic => "nic",
        }
    }
}

/// One row of a flow trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowTraceRow {
    /// When, picoseconds.
    pub time_ps: u64,
    /// What happened.
    pub event: FlowEvent,
    /// Whether the packet goes to the receiver (data, a SYN) or to the sender (an ACK); for a
    /// `send` or `receive` row, which endpoint acted follows from it.
    pub to_receiver: bool,
    /// The payload's offset in the transfer (the protocol's sequence; for ATP the transmission
    /// number), as `Segment::seq`.
    pub seq: u64,
    /// The acknowledgment number of a TCP segment with ACK set, else 0 (`send` and `receive`).
    pub ack: u64,
    /// TCP flags (`wire::Flags` bits: SYN 1, ACK 2, FIN 4, ECE 8, CWR 16), else 0 (`send` and
    /// `receive`).
    pub flags: u8,
    /// Payload bytes (0 for a bare ACK).
    pub len: u32,
    /// Bytes on the wire.
    pub size: u32,
    /// The packet carries a CE mark: at `receive`, as delivered; elsewhere as it arrived.
    pub ce: bool,
    /// `enqueue` and `drop`: the link whose queue it is (a `links` row); else `u32::MAX`.
    pub link: u32,
    /// `enqueue` and `drop`: the switch owning the link, or `u32::MAX` for a host NIC.
    pub switch: u32,
    /// `enqueue` and `drop`: the bytes waiting in the packet's queue when it arrived.
    pub queue_bytes: u64,
    /// `drop`: why.
    pub cause: DropCause,
    /// The sender's congestion window after the event, bytes (rows the sender made or
    /// received, of a window-based sender; else 0).
    pub cwnd: u64,
}

/// Flow-trace state: which transfer, its rows.
#[derive(Debug)]
pub(crate) struct FlowTrace {
    /// The transfer id asked for (`FlowRecord::id`: a flow list's own id, else the index).
    want: u64,
    rows: Vec<FlowTraceRow>,
    /// The most rows kept: [`MAX_FLOW_TRACE_ROWS`] (lowered by tests).
    limit: u64,
    truncated: bool,
    /// The sender's timeouts already recorded.
    rtos: u64,
}

impl FlowTrace {
    pub(crate) fn new(want: u64) -> FlowTrace {
        FlowTrace { want, rows: Vec::new(), limit: MAX_FLOW_TRACE_ROWS, truncated: false, rtos: 0 }
    }

    fn push(&mut self, row: FlowTraceRow) {
        if (self.rows.len() as u64) < self.limit {
            reserve_capped(&mut self.rows, 1, self.limit);
            self.rows.push(row);
        } else {
            self.truncated = true;
        }
    }
}

/// A row of `event` at `now` with nothing else known.
fn bare_row(now: Time, event: FlowEvent) -> FlowTraceRow {
    FlowTraceRow {
        time_ps: now.ps(),
        event,
        to_receiver: true,
        seq: 0,
        ack: 0,
        flags: 0,
        len: 0,
        size: 0,
        ce: false,
        link: u32::MAX,
        switch: u32::MAX,
        queue_bytes: 0,
        cause: DropCause::None,
        cwnd: 0,
    }
}

/// A row with the packet's own fields filled in.
fn packet_row(now: Time, event: FlowEvent, pkt: &Packet) -> FlowTraceRow {
    FlowTraceRow {
        to_receiver: pkt.to_receiver(),
        seq: pkt.seq,
        size: u32::from(pkt.size),
        ce: pkt.ecn() == wire::Ecn::Ce,
        ..bare_row(now, event)
    }
}

impl Simulation {
    /// The flow trace so far (empty unless enabled, and until the transfer starts).
    pub fn flow_trace(&self) -> &[FlowTraceRow] {
        self.flow_trace.as_ref().map_or(&[], |t| &t.rows)
    }

    /// Whether the flow trace reached [`MAX_FLOW_TRACE_ROWS`] and stopped recording.
    pub fn flow_trace_truncated(&self) -> bool {
        self.flow_trace.as_ref().is_some_and(|t| t.truncated)
    }

    /// Whether the traced transfer has started (its rows are being recorded).
    pub fn flow_trace_started(&self) -> bool {
        self.trace_conn != u32::MAX
    }

    /// Transfer `f` with id `id` started: trace it if it is the one asked for.
    #[inline]
    pub(crate) fn flow_trace_on_start(&mut self, f: usize, id: u64) {
        if self.trace_conn == u32::MAX && self.flow_trace.as_ref().is_some_and(|t| t.want == id) {
            // CORRECTNESS: transfer indices are u32 (`Packet::conn`), and u32::MAX is never
            // reached (validation bounds the flows far below it).
            self.trace_conn = f as u32;
        }
    }

    /// The sender's congestion window now (0 without a window-based sender).
    fn traced_cwnd(&self) -> u64 {
        let f = self.trace_conn as usize;
        self.transfers.get(f).and_then(|(_, rt)| rt.sender.as_deref()).map_or(0, |s| s.stats().cwnd)
    }

    /// The traced transfer's endpoint handled `seg` (`to_receiver`: the receiver did).
    #[cold]
    #[inline(never)]
    pub(crate) fn flow_trace_segment(&mut self, event: FlowEvent, pkt: &Packet, seg: &proto::Segment) {
        let now = self.sched.now();
        let mut row = packet_row(now, event, pkt);
        row.len = seg.len();
        row.ce = seg.ecn() == wire::Ecn::Ce;
        if let proto::Segment::Tcp(s) = seg {
            row.flags = s.flags.0;
            row.ack = if s.flags.contains(wire::Flags::ACK) { s.ack } else { 0 };
        }
        row.cwnd = self.traced_cwnd();
        self.record(row);
    }

    /// A packet of the traced transfer arrived at link `l`'s queue.
    #[cold]
    #[inline(never)]
    pub(crate) fn flow_trace_arrival(&mut self, l: LinkId, pkt: &Packet) {
        let row = self.queue_row(FlowEvent::Enqueue, l, pkt);
        self.record(row);
    }

    /// A row of `pkt` at link `l`'s queue, with the bytes waiting there.
    fn queue_row(&self, event: FlowEvent, l: LinkId, pkt: &Packet) -> FlowTraceRow {
        let link = &self.links[l.idx()];
        let mut row = packet_row(self.sched.now(), event, pkt);
        row.link = l.0;
        row.switch = link.switch;
        row.queue_bytes = link.port.queue_bytes(link.port.queue_of(pkt.prio()));
        row
    }

    /// The traced transfer's packet that just arrived (its last row) was dropped for `cause`.
    #[cold]
    #[inline(never)]
    pub(crate) fn flow_trace_drop(&mut self, cause: DropCause) {
        // A full trace did not record the arrival: its last row is another packet's.
        if let Some(row) = self.flow_trace.as_deref_mut().filter(|t| !t.truncated).and_then(|t| t.rows.last_mut()) {
            if row.event == FlowEvent::Enqueue {
                row.event = FlowEvent::Drop;
                row.cause = cause;
            }
        }
    }

    /// A queued packet of the traced transfer was pushed out of link `l`'s queue.
    #[cold]
    #[inline(never)]
    pub(crate) fn flow_trace_push_out(&mut self, l: LinkId, pkt: &Packet) {
        let mut row = self.queue_row(FlowEvent::Drop, l, pkt);
        row.cause = DropCause::PushOut;
        self.record(row);
    }

    /// Before the traced transfer's sender's packets of a drain: a `timeout` row for each
    /// retransmission timeout since its last drain (the driver drains a sender right after its
    /// timer fires, so the row has the timeout's time).
    #[cold]
    #[inline(never)]
    pub(crate) fn flow_trace_timeouts(&mut self) {
        let f = self.trace_conn as usize;
        let Some(rtos) = self.transfers.get(f).and_then(|(_, rt)| rt.sender.as_deref()).map(|s| s.stats().num_rtos) else {
            return;
        };
        let seen = self.flow_trace.as_deref().map_or(rtos, |t| t.rtos);
        for _ in seen..rtos {
            self.flow_trace_timeout();
        }
        if let Some(t) = self.flow_trace.as_deref_mut() {
            t.rtos = rtos;
        }
    }

    /// The traced transfer's sender timed out.
    fn flow_trace_timeout(&mut self) {
        let row = FlowTraceRow { cwnd: self.traced_cwnd(), ..bare_row(self.sched.now(), FlowEvent::Timeout) };
        self.record(row);
    }

    /// Add `row` to the flow trace.
    fn record(&mut self, row: FlowTraceRow) {
        if let Some(t) = self.flow_trace.as_deref_mut() {
            t.push(row);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn valid(text: &str) -> crate::spec::ValidSpec {
        crate::Spec::from_toml_str(text).unwrap().validate(std::path::Path::new(".")).unwrap()
    }

    fn sim(text: &str) -> Simulation {
        Simulation::new(&valid(text)).unwrap()
    }

    /// Incast into 30 KB static ports: responses lose packets and time out.
    const LOSSY: &str = "seed = 3\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 8\nspines = 2\n\
                         host_rate_gbps = 10\nfabric_rate_gbps = 10\n\
                         [switch]\nadmission = { policy = \"static\", port_bytes = 30000 }\n\
                         [transport]\nkind = \"dctcp\"\nsack = true\nmin_rto_us = 1000\n\
                         [[workload]]\nkind = \"incast\"\nquery_rate_per_host = 2000\nfan_in = 7\nburst_bytes = 300000\nduration_ms = 1\n";

    #[test]
    fn a_traced_flow_shows_each_packet_from_its_send_to_its_drop_or_arrival() {
        let mut plain = sim(LOSSY);
        plain.run_to_end();
        let records = plain.output().records;
        // A flow that lost packets and timed out.
        let rec = records.iter().find(|r| r.num_rtos > 0 && r.finished).expect("a flow with a timeout");
        let mut traced = Simulation::with_flow_trace(&valid(LOSSY), rec.id).unwrap();
        traced.run_to_end();
        // Tracing never changes the run.
        assert_eq!(traced.output().records, records);
        assert!(traced.flow_trace_started() && !traced.flow_trace_truncated());
        let rows = traced.flow_trace();
        assert!(rows.windows(2).all(|w| w[0].time_ps <= w[1].time_ps), "rows in time order");
        let count = |f: &dyn Fn(&FlowTraceRow) -> bool| rows.iter().filter(|r| f(r)).count();
        let data_sends: Vec<&FlowTraceRow> =
            rows.iter().filter(|r| r.event == FlowEvent::Send && r.to_receiver && r.len > 0).collect();
        // Every retransmission is a send of a payload offset sent before, and only those.
        let distinct: HashSet<u64> = data_sends.iter().map(|r| r.seq).collect();
        assert_eq!((data_sends.len() - distinct.len()) as u64, rec.retx_segments);
        // The whole transfer was sent, and every offset sent arrived at least once.
        assert_eq!(data_sends.iter().map(|r| r.seq + u64::from(r.len)).max(), Some(rec.size_bytes));
        let arrived: HashSet<u64> = rows
            .iter()
            .filter(|r| r.event == FlowEvent::Receive && r.to_receiver && r.len > 0)
            .map(|r| r.seq)
            .collect();
        assert_eq!(arrived, distinct);
        assert_eq!(count(&|r| r.event == FlowEvent::Timeout) as u64, rec.num_rtos);
        // Each packet a host sends enters its NIC's queue (or is dropped there), in each
        // direction; none arrives without having been sent.
        for dir in [true, false] {
            let sends = count(&|r| r.event == FlowEvent::Send && r.to_receiver == dir);
            let at_nic = count(&|r| {
                matches!(r.event, FlowEvent::Enqueue | FlowEvent::Drop) && r.switch == u32::MAX && r.to_receiver == dir
            });
            let ends = count(&|r| (r.event == FlowEvent::Receive || r.event == FlowEvent::Drop) && r.to_receiver == dir);
            assert_eq!(sends, at_nic, "direction to_receiver = {dir}");
            assert!(ends <= sends && sends > 0);
        }
        // It lost packets, each with a cause, at a switch whose statistics count them.
        let drops: Vec<&FlowTraceRow> = rows.iter().filter(|r| r.event == FlowEvent::Drop).collect();
        assert!(!drops.is_empty());
        assert!(drops.iter().all(|r| r.cause != DropCause::None && r.link != u32::MAX));
        assert!(rows.iter().filter(|r| r.event != FlowEvent::Drop).all(|r| r.cause == DropCause::None));
        let switch_drops: u64 = traced.output().switches.iter().map(|s| s.drops_admission).sum();
        assert!(drops.iter().filter(|r| r.cause == DropCause::Admission).count() as u64 <= switch_drops);
        // A static port refuses what does not fit: the queue found plus the packet exceed it.
        assert!(drops
            .iter()
            .filter(|r| r.cause == DropCause::Admission)
            .all(|r| r.queue_bytes + u64::from(r.size) > 30_000));
        // The sender's rows carry its window.
        assert!(data_sends.iter().all(|r| r.cwnd > 0));
    }

    #[test]
    fn a_lone_flow_crosses_each_queue_of_its_path_once_per_packet() {
        // Host 0 to host 2 (the other leaf): NIC, leaf uplink, spine downlink, leaf downlink.
        let text = "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 2\nspines = 1\n\
                    host_rate_gbps = 10\nfabric_rate_gbps = 10\n\
                    [[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 2, size_bytes = 100000, start_ns = 0 }]\n";
        let mut s = Simulation::with_flow_trace(&valid(text), 0).unwrap();
        s.run_to_end();
        let rows = s.flow_trace();
        let rec = &s.output().records[0];
        assert!(rec.finished && rec.retx_segments == 0);
        let sends = rows.iter().filter(|r| r.event == FlowEvent::Send).count();
        let receives = rows.iter().filter(|r| r.event == FlowEvent::Receive).count();
        let enqueues = rows.iter().filter(|r| r.event == FlowEvent::Enqueue).count();
        assert_eq!(rows.iter().filter(|r| r.event == FlowEvent::Drop || r.event == FlowEvent::Timeout).count(), 0);
        // Every packet either way arrives (the last ACKs too: the flow ends at its receiver
        // and its sender is released only once its last ACK is in).
        assert_eq!(sends, receives);
        assert_eq!(enqueues, 4 * sends);
        let payload: u64 = rows.iter().filter(|r| r.event == FlowEvent::Receive && r.to_receiver).map(|r| u64::from(r.len)).sum();
        assert_eq!(payload, 100_000);
        // A packet enters each queue after it was sent and before it arrives.
        let first = rows.iter().position(|r| r.event == FlowEvent::Send && r.len > 0).unwrap();
        let seq = rows[first].seq;
        let path: Vec<u32> = rows[first..]
            .iter()
            .take_while(|r| !(r.event == FlowEvent::Receive && r.seq == seq && r.to_receiver))
            .filter(|r| r.event == FlowEvent::Enqueue && r.seq == seq && r.to_receiver)
            .map(|r| r.switch)
            .collect();
        assert_eq!(path.len(), 4);
        assert_eq!(path[0], u32::MAX, "the sender's NIC first");
    }

    #[test]
    fn an_id_no_transfer_has_records_nothing() {
        let text = "[topology]\nkind = \"leaf_spine\"\nleaves = 1\nhosts_per_leaf = 2\nspines = 1\nhost_rate_gbps = 10\nfabric_rate_gbps = 10\n\
                    [[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 1, size_bytes = 10000, start_ns = 0 }]\n";
        // An id no transfer has: nothing recorded, and the run is unchanged.
        let mut s = Simulation::with_flow_trace(&valid(text), 7).unwrap();
        s.run_to_end();
        assert!(s.flow_trace().is_empty() && !s.flow_trace_started());
        let mut plain = sim(text);
        plain.run_to_end();
        assert_eq!(s.output().records, plain.output().records);
    }

    #[test]
    fn a_full_trace_keeps_its_first_rows_and_says_so() {
        let mut plain = sim(LOSSY);
        plain.run_to_end();
        let id = plain.output().records.iter().find(|r| r.num_rtos > 0).expect("a flow with a timeout").id;
        let mut full = Simulation::with_flow_trace(&valid(LOSSY), id).unwrap();
        full.run_to_end();
        let all = full.flow_trace().to_vec();
        // Cut just after a drop: the drop is still its own packet's, and nothing after the cut
        // is recorded or changed.
        let cut = all.iter().position(|r| r.event == FlowEvent::Drop).unwrap() + 1;
        let mut sim = Simulation::with_flow_trace(&valid(LOSSY), id).unwrap();
        sim.flow_trace.as_deref_mut().unwrap().limit = cut as u64;
        sim.run_to_end();
        assert!(sim.flow_trace_truncated() && !full.flow_trace_truncated());
        assert_eq!(sim.flow_trace(), &all[..cut]);
    }

    #[test]
    fn packets_pushed_out_of_their_queue_are_drops_with_that_cause() {
        // LQD pushes queued packets out of the longest queue: some flow's rows say so, each at a
        // switch, and the transfer's rows still account for every packet sent.
        let text = LOSSY.replace("admission = { policy = \"static\", port_bytes = 30000 }", "buffer_bytes = 60000\nadmission = { policy = \"lqd\" }");
        let mut plain = sim(&text);
        plain.run_to_end();
        let ids: Vec<u64> = plain.output().records.iter().filter(|r| r.retx_segments > 0).map(|r| r.id).take(12).collect();
        let mut seen = 0;
        for id in ids {
            let mut s = Simulation::with_flow_trace(&valid(&text), id).unwrap();
            s.run_to_end();
            let pushed: Vec<&FlowTraceRow> = s.flow_trace().iter().filter(|r| r.cause == DropCause::PushOut).collect();
            assert!(pushed.iter().all(|r| r.event == FlowEvent::Drop && r.switch != u32::MAX));
            seen += pushed.len();
        }
        assert!(seen > 0, "no traced flow had a packet pushed out");
    }
}
