//! The bodies of slacknet's fuzz targets: one function per parser of untrusted bytes, taking
//! arbitrary bytes. Each must return for every input without panicking; the assertions inside
//! check properties of what the parser accepted (a parsed header re-emits to the same bytes, a
//! header that `emit` accepts parses back to itself, a validated scenario's resolved JSON
//! validates again to the same scenario), never the input itself.
//!
//! Two drivers call them: the libFuzzer harness in `fuzz/` (`cargo +nightly fuzz run
//! <target>`, one `fuzz_target!` per entry of [`TARGETS`]) and this crate's test
//! `tests/corpus.rs`, which on stable replays the committed corpus `fuzz/corpus/<target>/` and
//! a few thousand seeded mutations of it, so `cargo test` runs every target without nightly.
//!
//! Scenario targets validate against [`BASE_DIR`], a folder that does not exist: relative
//! file paths in a fuzzed scenario do not resolve, and the file inputs they would name (CDFs,
//! flow lists, forests) have targets of their own.

use std::path::Path;

use sim::credence::forest::{BoxCache, Forest};
use sim::spec::{Spec, SpecError};
use sim::workload::{parse_flow_list, Cdf};
use wire::{
    AtpKind, AtpRepr, DatagramRepr, Ecn, Flags, MltRepr, PfabricRepr, SegmentRepr, WireError, ATP_HEADER_LEN,
    DATAGRAM_HEADER_LEN, HEADER_LEN, MLT_HEADER_LEN, PFABRIC_HEADER_LEN,
};

/// A target's body: arbitrary bytes in, a panic only if a property fails.
pub type Body = fn(&[u8]);

/// Every target, by the name of its `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/`.
pub const TARGETS: &[(&str, Body)] = &[
    ("udp_datagram", udp_datagram),
    ("udp_node", udp_node),
    ("coflow_trace", coflow_trace),
    ("wire_segment", wire_segment),
    ("wire_datagram", wire_datagram),
    ("wire_atp", wire_atp),
    ("atp_endpoints", atp_endpoints),
    ("xpass_endpoints", xpass_endpoints),
    ("wire_pfabric", wire_pfabric),
    ("pfabric_endpoints", pfabric_endpoints),
    ("tcp_endpoints", tcp_endpoints),
    ("wire_mlt", wire_mlt),
    ("mlt_endpoints", mlt_endpoints),
    ("wire_roundtrip", wire_roundtrip),
    ("scenario_toml", scenario_toml),
    ("scenario_json", scenario_json),
    ("scenario_edit", scenario_edit),
    ("cdf", cdf),
    ("flow_list", flow_list),
    ("forest", forest),
];

/// The folder scenario targets validate against: relative paths name files that do not exist.
pub const BASE_DIR: &str = "/nonexistent/slacknet-fuzz";

/// The largest payload a round trip builds a buffer for. Above it, only the header is checked
/// (parse must ask for exactly `buffer_len` bytes): libFuzzer refuses gigabyte allocations.
const MAX_ROUNDTRIP_PAYLOAD: usize = 1 << 16;

/// `SegmentRepr::parse` on any bytes; what parses re-emits to the same header bytes.
pub fn wire_segment(data: &[u8]) {
    let Ok(r) = SegmentRepr::parse(data) else { return };
    let mut out = [0u8; HEADER_LEN];
    assert_eq!(r.emit(&mut out), Ok(HEADER_LEN), "{r:?} parsed but does not emit");
    assert_eq!(out[..], data[..HEADER_LEN], "{r:?} re-emits to other bytes");
    assert!(data.len() >= r.buffer_len());
}

/// `DatagramRepr::parse` on any bytes; what parses re-emits to the same header bytes.
pub fn wire_datagram(data: &[u8]) {
    let Ok(r) = DatagramRepr::parse(data) else { return };
    let mut out = [0u8; DATAGRAM_HEADER_LEN];
    assert_eq!(r.emit(&mut out), Ok(DATAGRAM_HEADER_LEN), "{r:?} parsed but does not emit");
    assert_eq!(out[..], data[..DATAGRAM_HEADER_LEN], "{r:?} re-emits to other bytes");
    assert!(data.len() >= r.buffer_len());
}

/// `AtpRepr::parse` on any bytes; what parses re-emits to the same header bytes.
pub fn wire_atp(data: &[u8]) {
    let Ok(r) = AtpRepr::parse(data) else { return };
    let mut out = [0u8; ATP_HEADER_LEN];
    assert_eq!(r.emit(&mut out), Ok(ATP_HEADER_LEN), "{r:?} parsed but does not emit");
    assert_eq!(out[..], data[..ATP_HEADER_LEN], "{r:?} re-emits to other bytes");
    assert!(data.len() >= r.buffer_len());
}

/// `PfabricRepr::parse` on any bytes; what parses re-emits to the same header bytes.
pub fn wire_pfabric(data: &[u8]) {
    let Ok(r) = PfabricRepr::parse(data) else { return };
    let mut out = [0u8; PFABRIC_HEADER_LEN];
    assert_eq!(r.emit(&mut out), Ok(PFABRIC_HEADER_LEN), "{r:?} parsed but does not emit");
    assert_eq!(out[..], data[..PFABRIC_HEADER_LEN], "{r:?} re-emits to other bytes");
    assert!(data.len() >= r.buffer_len());
}

/// `MltRepr::parse` on any bytes; what parses re-emits to the same header bytes. And the
/// other way: a header built from the input's bytes field by field either emits and parses
/// back to itself (and its payload one byte short is refused), or `emit` refuses it writing
/// nothing.
pub fn wire_mlt(data: &[u8]) {
    let mut f = Fields(data);
    let buf_len = f.u8() as usize;
    let m = MltRepr {
        conn: f.u32(),
        msg: f.u32(),
        seq: f.u64(),
        start: f.u32(),
        end: f.u32(),
        total: f.u32(),
        cum: f.u32(),
        received: f.u32(),
        need: f.u32(),
        value_bytes: f.u8() % 6,
        len: f.u32(),
        flags: Flags(f.u8()),
        ecn: f.ecn(),
        prio: f.u8(),
        // Last, so that the other fields read the bytes they read before it existed.
        pos: f.u32(),
    };
    let mut buf = vec![0x5au8; buf_len];
    match m.emit(&mut buf) {
        Ok(n) => {
            assert_eq!(n, MLT_HEADER_LEN);
            check_parse_back(&buf[..MLT_HEADER_LEN], m.buffer_len(), MltRepr::parse, &m);
        }
        Err(_) => assert!(buf.iter().all(|&b| b == 0x5a), "a refused emit wrote {m:?}"),
    }
    let Ok(r) = MltRepr::parse(data) else { return };
    let mut out = [0u8; MLT_HEADER_LEN];
    assert_eq!(r.emit(&mut out), Ok(MLT_HEADER_LEN), "{r:?} parsed but does not emit");
    assert_eq!(out[..], data[..MLT_HEADER_LEN], "{r:?} re-emits to other bytes");
    assert!(data.len() >= r.buffer_len());
}

/// The bounded-loss transport's endpoints fed untrusted packets: the input is cut into 48-byte
/// headers (those that parse are used, each with its connection set to the transfer's); ACKs go
/// to the sender of a 40-packet message, data to a receiver, with time advancing by the header's
/// first byte (the sender's timeouts fire on the way; its tail-loss probe is on when the input's
/// first byte is odd). Properties: nothing panics; every drain
/// ends within a window's worth of packets; each side's completion comes at most once; the
/// sender only sends ranges of its message; the receiver's count never exceeds the message it
/// learned, its missing ranges account exactly for the rest, and a completion report holds at
/// least the values it waits for (the first data packet's `need`, or `ceil(p·N)`).
pub fn mlt_endpoints(data: &[u8]) {
    use proto::mlt::{MltConfig, MAX_PENDING_ACKS};
    use proto::{Endpoint, Event, Segment, TransportConfig};
    use units::{Bytes, Dur, Time};
    const CONN: u32 = 11;
    const SIZE: u64 = 40 * 1460 - 6;
    // The tail-loss probe on when the first byte is odd.
    let tail_probe = data.first().is_some_and(|b| b & 1 == 1);
    let c = MltConfig { complete_fraction: 0.75, rto: Dur::from_us(50), tail_probe, ..MltConfig::default() };
    let cfg = TransportConfig::Mlt(c.clone());
    let mut tx = Endpoint::sender(&cfg, CONN, Bytes(SIZE), Time::ZERO);
    let mut rx = Endpoint::receiver(&cfg, CONN);
    let mut now = Time::ZERO;
    let mut done = [0u32; 2];
    let total = c.values_in(SIZE);
    let drain = |ep: &mut Endpoint, now: Time, done: &mut [u32; 2], bound: usize| {
        let mut n = 0;
        while let Some(seg) = ep.poll_transmit(now) {
            n += 1;
            assert!(n <= bound, "a drain of more than {bound} packets");
            if let Segment::Mlt(p) = seg {
                if !p.is_ack() {
                    assert!(p.start < p.end && p.end <= total && p.total == total, "{p:?}");
                }
            }
        }
        while let Some(ev) = ep.poll_event() {
            let side = usize::from(matches!(ev, Event::Delivered { .. }));
            done[side] += 1;
            assert!(done[side] == 1, "{ev:?} twice");
        }
    };
    drain(&mut tx, now, &mut done, 64);
    for chunk in data.chunks(MLT_HEADER_LEN) {
        now += Dur::from_ns(u64::from(chunk[0]) * 100);
        let mut buf = vec![0u8; MLT_HEADER_LEN];
        buf[..chunk.len()].copy_from_slice(chunk);
        buf[0] = wire::MLT_VERSION;
        let len = u32::from_be_bytes([buf[44], buf[45], buf[46], buf[47]]) as usize;
        buf.resize(MLT_HEADER_LEN + len.min(1 << 16), 0);
        let Ok(mut r) = MltRepr::parse(&buf) else { continue };
        r.conn = CONN;
        let seg = Segment::Mlt(r);
        if r.is_ack() {
            tx.handle_timeout(now);
            tx.handle_segment(now, &seg);
            drain(&mut tx, now, &mut done, 64);
        } else {
            rx.handle_segment(now, &seg);
            drain(&mut rx, now, &mut done, MAX_PENDING_ACKS);
            if let Some(m) = rx.as_mlt_receiver() {
                let missing: u64 = m.missing_ranges().iter().map(|&(a, b)| u64::from(b - a)).sum();
                if let Some(rep) = m.report() {
                    // The need is the first data packet's (the sender's p) or the receiver's own.
                    assert!(rep.delivered >= m.need().unwrap_or(u32::MAX), "{rep:?}");
                    assert!(u64::from(m.received_values()) + missing == u64::from(rep.total));
                }
            }
        }
    }
}

/// A TCP transfer (NewReno, DCTCP with either loss response and either handling of a loss during
/// an ECN cut, or PowerTCP; limited transmit, SACK, RACK-TLP, delayed ACKs, the handshake and the
/// duplicate-ACK threshold chosen by the input) run through a channel the input drives: each step
/// delivers (marking an ECN-capable segment CE if the step says so), drops or duplicates the next
/// segment either way (an ACK with its SACK blocks), lets time pass (firing due timers), or injects a segment with
/// fuzzed fields (sequence and acknowledgement numbers near the transfer's or anywhere, any flags,
/// ECN and timestamps; with SACK, up to three blocks near the transfer or anywhere). Properties:
/// nothing panics (no overflow, no broken invariant); every drain ends within a bounded number of
/// segments; each side's event comes at most once; the sender sends no byte beyond the transfer nor
/// a FIN anywhere but at its end; and, where nothing was injected, the receiver counts no more
/// distinct bytes than the transfer has, and a sender that says its data is confirmed has had
/// every byte delivered.
pub fn tcp_endpoints(data: &[u8]) {
    tcp_endpoints_run(data);
}

/// What a [`tcp_endpoints`] run came to, for tests that its seeds reach the states they should.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpRun {
    /// The sender said every byte is acknowledged.
    pub confirmed: bool,
    /// Distinct bytes the receiver holds.
    pub received: u64,
    /// Retransmission timeouts of the sender.
    pub rtos: u64,
    /// Fast retransmits of the sender.
    pub fast_retx: u64,
    /// Tail-loss probes of the sender (RACK-TLP).
    pub tail_probes: u64,
    /// A segment was injected.
    pub injected: bool,
}

/// The body of [`tcp_endpoints`], saying what the run came to.
pub fn tcp_endpoints_run(data: &[u8]) -> TcpRun {
    use proto::tcp::DelayedAck;
    use proto::{CcKind, Endpoint, Event, Segment, TcpConfig, TransportConfig};
    use std::collections::VecDeque;
    use units::{Bps, Bytes, Dur, Time};
    use wire::{Ecn, Flags, SackBlocks, SegmentRepr};
    const CONN: u32 = 5;
    const SIZE: u64 = 30 * 1460 - 11;
    const MAX_QUEUE: usize = 4096;
    let mut r = Reader(data);
    let (a, b) = (r.u8(), r.u8());
    let cc = match a % 3 {
        0 => CcKind::NewReno,
        1 => CcKind::Dctcp {
            g: 1.0 / 16.0,
            init_alpha: 1.0,
            loss_by_alpha: b & 0x80 != 0,
            ns3_cwr: a & 0x80 != 0,
            ece_only_on_new_acks: b & 0x08 != 0,
        },
        _ => CcKind::power_tcp_default(Dur::from_us(10), Bps::from_gbps(10)),
    };
    let cfg = TcpConfig {
        cc,
        init_cwnd_pkts: 1 + u32::from(b % 12),
        limited_transmit: a & 0x08 != 0,
        sack: a & 0x40 != 0,
        rack_tlp: a & 0x04 != 0,
        prr: b & 0x40 != 0,
        handshake: a & 0x10 != 0,
        dupack_threshold: 1 + u32::from((b >> 4) % 4),
        delayed_ack: (a & 0x20 != 0).then(|| DelayedAck { count: 2, timeout: Dur::from_us(5) }),
        min_rto: Dur::from_us(50),
        init_rto: Dur::from_us(50),
        max_rto: Dur::from_ms(2),
        max_retries: 6,
        ..TcpConfig::default()
    };
    let cfg_sack = cfg.sack;
    let tc = TransportConfig::Tcp(cfg);
    let mut eps = [Endpoint::sender(&tc, CONN, Bytes(SIZE), Time::ZERO), Endpoint::receiver(&tc, CONN)];
    // Segments on their way: [0] towards the receiver, [1] towards the sender.
    // (With SACK, an ACK's blocks travel with it.)
    type Wire = VecDeque<(SegmentRepr, Option<SackBlocks>)>;
    let mut wires: [Wire; 2] = [VecDeque::new(), VecDeque::new()];
    let mut now = Time::ZERO;
    let mut events = [0u32; 2];
    let mut injected = false;
    let mut confirmed = false;
    let drain = |side: usize, ep: &mut Endpoint, now: Time, wires: &mut [Wire; 2], events: &mut [u32; 2], confirmed: &mut bool| {
        let mut n = 0;
        while let Some(seg) = ep.poll_transmit(now) {
            n += 1;
            // A window is at most 2^20 segments, but this transfer has 30: a drain of more than
            // a few hundred is a loop.
            assert!(n <= 512, "a drain of more than 512 segments");
            let Segment::Tcp(s) = seg else { panic!("a TCP endpoint sent {seg:?}") };
            if side == 0 {
                assert!(s.seq.checked_add(u64::from(s.len)).is_some_and(|e| e <= SIZE), "sent past the end: {s:?}");
                assert!(!s.flags.contains(Flags::FIN) || s.seq + u64::from(s.len) == SIZE, "a FIN before the end: {s:?}");
            }
            let sack = ep.take_sack();
            assert!(side == 1 || sack.is_none(), "a sender's segment with SACK blocks");
            if wires[side].len() < MAX_QUEUE {
                wires[side].push_back((s, sack));
            }
        }
        while let Some(ev) = ep.poll_event() {
            events[side] += 1;
            assert!(events[side] == 1, "{ev:?} a second time");
            if let Event::SenderDone { confirmed: c, .. } = ev {
                *confirmed = c;
            }
        }
    };
    for (side, ep) in eps.iter_mut().enumerate() {
        drain(side, ep, now, &mut wires, &mut events, &mut confirmed);
    }
    let mut steps = 0;
    while !r.0.is_empty() && steps < 4000 {
        steps += 1;
        let op = r.u8();
        let dir = usize::from(op & 1); // 0: towards the receiver, 1: towards the sender
        let to = 1 - dir; // the endpoint a segment on wire `dir` reaches: wire 0 -> receiver (1)
        match (op >> 1) % 8 {
            0..=2 => {
                if let Some((mut seg, sack)) = wires[dir].pop_front() {
                    // Bit 4: a switch marked it on the way (ECN-capable segments only), which
                    // drives DCTCP's cuts and, with `ns3_cwr`, its CA_CWR.
                    if op & 0x10 != 0 && seg.ecn.is_ect() {
                        seg.ecn = Ecn::Ce;
                    }
                    eps[to].handle_segment_ext(now, &Segment::Tcp(seg), None, sack.as_ref());
                }
            }
            3 => {
                wires[dir].pop_front(); // lost
            }
            4 => {
                if let Some(&(seg, sack)) = wires[dir].front() {
                    eps[to].handle_segment_ext(now, &Segment::Tcp(seg), None, sack.as_ref()); // duplicated
                }
            }
            5 | 6 => {
                now += Dur::from_ns(u64::from(r.u16()) * 50);
                for ep in &mut eps {
                    if ep.poll_timeout().is_some_and(|t| t <= now) {
                        ep.handle_timeout(now);
                    }
                }
            }
            _ => {
                injected = true;
                let near = |r: &mut Reader<'_>| match r.u8() % 4 {
                    0 => u64::from(r.u32()) << 32 | u64::from(r.u32()),
                    1 => SIZE.saturating_add(u64::from(r.u16())),
                    _ => u64::from(r.u16()) * 7 % (SIZE + 1),
                };
                let seq = near(&mut r);
                let len = r.field(1460).min(u32::MAX - 1);
                let seg = SegmentRepr {
                    conn: CONN,
                    seq,
                    ack: near(&mut r),
                    len: if seq.checked_add(u64::from(len)).is_some() { len } else { 0 },
                    flags: Flags(r.u8() & Flags::ALL.0),
                    ecn: Ecn::from_u8(r.u8() & 3).unwrap_or(Ecn::NotEct),
                    prio: 0,
                    ts_ps: u64::from(r.u32()),
                    ts_echo_ps: match r.u8() % 3 {
                        0 => u64::from(r.u32()) << 16,
                        _ => now.ps().saturating_sub(u64::from(r.u16()) * 1000),
                    },
                };
                // With SACK, up to three blocks anywhere near the transfer (or anywhere at all).
                let mut blocks = SackBlocks::default();
                if cfg_sack {
                    for _ in 0..r.u8() % 4 {
                        let start = near(&mut r);
                        blocks.push((start, start.saturating_add(u64::from(r.u16()))));
                    }
                }
                eps[to].handle_segment_ext(now, &Segment::Tcp(seg), None, Some(&blocks));
            }
        }
        for (side, ep) in eps.iter_mut().enumerate() {
            drain(side, ep, now, &mut wires, &mut events, &mut confirmed);
        }
        if !injected {
            // (An injected segment may carry bytes past the end before the receiver has seen the
            // FIN that tells it where the end is: TCP's receiver learns the size only so.)
            assert!(eps[1].stats().bytes_received <= SIZE, "{:?}", eps[1].stats());
            if confirmed {
                assert_eq!(eps[1].stats().bytes_received, SIZE, "confirmed without every byte delivered");
            }
        }
    }
    let st = eps[0].stats();
    TcpRun {
        confirmed,
        received: eps[1].stats().bytes_received,
        rtos: st.num_rtos,
        fast_retx: st.num_fast_retx,
        tail_probes: st.num_tail_probes,
        injected,
    }
}

/// pFabric's endpoints fed untrusted packets: the input is cut into 36-byte headers (those that
/// parse are used, each with its connection set to the transfer's); ACKs go to the sender of a
/// 50-packet transfer with a small window, everything else to a receiver, with time advancing
/// by the header's first byte (the sender's timeouts fire on the way). Properties: nothing
/// panics; every drain ends within a window's worth of packets; `SenderDone` comes at most
/// once; the sender never sends more than it was given, nor a rank above its size.
pub fn pfabric_endpoints(data: &[u8]) {
    use proto::pfabric::{PfabricConfig, MAX_PENDING_ACKS};
    use proto::{Endpoint, Event, Segment, TransportConfig};
    use units::{Bytes, Dur, Time};
    const CONN: u32 = 9;
    const SIZE: u64 = 50 * 1460 - 3;
    let c = PfabricConfig { max_cwnd_pkts: 16, ..PfabricConfig::default() };
    let cfg = TransportConfig::Pfabric(c);
    let mut tx = Endpoint::sender(&cfg, CONN, Bytes(SIZE), Time::ZERO);
    let mut rx = Endpoint::receiver(&cfg, CONN);
    let mut now = Time::ZERO;
    let mut done = 0;
    let drain = |ep: &mut Endpoint, now: Time, done: &mut u32, bound: usize| {
        let mut n = 0;
        while let Some(seg) = ep.poll_transmit(now) {
            n += 1;
            assert!(n <= bound, "a drain of more than {bound} packets");
            // The sender's data (a receiver's ACK echoes whatever offset it was sent).
            if let Segment::Pfabric(p) = seg {
                if p.flags.contains(Flags::ACK) {
                    continue;
                }
                assert!(p.rank <= SIZE && p.seq + u64::from(p.len) <= SIZE, "{p:?}");
            }
        }
        while let Some(ev) = ep.poll_event() {
            if let Event::SenderDone { .. } = ev {
                *done += 1;
                assert!(*done == 1, "SenderDone twice");
            }
        }
    };
    drain(&mut tx, now, &mut done, 16);
    for chunk in data.chunks(PFABRIC_HEADER_LEN) {
        now += Dur::from_ns(u64::from(chunk[0]) * 100);
        let mut buf = vec![0u8; PFABRIC_HEADER_LEN];
        buf[..chunk.len()].copy_from_slice(chunk);
        buf[0] = wire::PFABRIC_VERSION;
        let len = u32::from_be_bytes([buf[24], buf[25], buf[26], buf[27]]) as usize;
        buf.resize(PFABRIC_HEADER_LEN + len.min(1 << 16), 0);
        let Ok(mut r) = PfabricRepr::parse(&buf) else { continue };
        r.conn = CONN;
        let seg = Segment::Pfabric(r);
        if r.flags.contains(Flags::ACK) {
            tx.handle_timeout(now);
            tx.handle_segment(now, &seg);
            drain(&mut tx, now, &mut done, 16);
        } else {
            rx.handle_segment(now, &seg);
            drain(&mut rx, now, &mut done, MAX_PENDING_ACKS);
        }
    }
}

/// ATP's endpoints fed untrusted packets: the input is cut into 48-byte headers (those that
/// parse are used, each with its connection set to the job's); data and end-of-job notices go to
/// a receiver, ACKs to the sender of a job of two groups, with time advancing by the header's
/// first byte. Properties: nothing panics; every drain ends; the receiver keeps within its
/// limits; a sender that reports the job done has `ceil(MSR x N)` messages of every group
/// delivered as far as it knows, and never more delivered than handed over.
pub fn atp_endpoints(data: &[u8]) {
    use proto::atp::{AtpConfig, GroupSpec, MAX_JOB_MESSAGES};
    use proto::{Endpoint, Event, Outcome, Segment, TransportConfig};
    use units::{Bps, Dur, Time};
    const CONN: u32 = 7;
    let cfg = TransportConfig::Atp(AtpConfig::default());
    let groups = [GroupSpec { messages: 5, msr: 0.6 }, GroupSpec { messages: 3, msr: 1.0 }];
    let mut tx = Endpoint::job_sender(&cfg, CONN, &groups, Time::ZERO).expect("a valid job");
    tx.set_line_rate(Bps::from_gbps(10));
    for (g, bytes) in [(0u16, 3000u64), (1, 100), (0, 1460), (1, 5000), (0, 1), (0, 20_000), (1, 2920), (0, 7)] {
        assert!(tx.send_message(g, bytes).is_ok());
    }
    tx.close();
    let mut rx = Endpoint::receiver(&cfg, CONN);
    let mut now = Time::ZERO;
    let mut done: Option<Outcome> = None;
    let drain = |ep: &mut Endpoint, now: Time, done: &mut Option<Outcome>| {
        // A sender hands out at most one packet per pacing slot, a receiver one ACK per packet
        // it accepted: either way the drain ends well within the bound.
        let mut n = 0;
        while ep.poll_transmit(now).is_some() {
            n += 1;
            assert!(n < 100_000, "a drain that does not end");
        }
        while let Some(ev) = ep.poll_event() {
            if let Event::SenderDone { outcome, .. } = ev {
                assert!(done.replace(outcome).is_none(), "SenderDone twice");
            }
        }
    };
    drain(&mut tx, now, &mut done);
    for chunk in data.chunks(ATP_HEADER_LEN) {
        now += Dur::from_ns(u64::from(chunk[0]) * 100);
        // The header alone: payload is abstract, so `len` zero bytes are appended (at most 64 KB).
        let mut buf = vec![0u8; ATP_HEADER_LEN];
        buf[..chunk.len()].copy_from_slice(chunk);
        buf[0] = wire::ATP_VERSION;
        let len = u32::from_be_bytes([buf[36], buf[37], buf[38], buf[39]]) as usize;
        buf.resize(ATP_HEADER_LEN + len.min(1 << 16), 0);
        let Ok(mut r) = AtpRepr::parse(&buf) else { continue };
        r.conn = CONN;
        let seg = Segment::Atp(r);
        if r.kind == AtpKind::Ack {
            tx.handle_timeout(now);
            tx.handle_segment(now, &seg);
            drain(&mut tx, now, &mut done);
        } else {
            rx.handle_segment(now, &seg);
            drain(&mut rx, now, &mut done);
        }
    }
    let r = rx.as_atp_receiver().expect("a receiver");
    assert!(r.messages_received() <= MAX_JOB_MESSAGES);
    if let Some(lost) = r.lost_messages() {
        assert!(lost.len() as u64 <= MAX_JOB_MESSAGES);
    }
    let s = tx.as_atp_sender().expect("a sender");
    for (g, rep) in s.report().iter().enumerate() {
        assert!(rep.delivered <= rep.pushed && rep.pushed <= rep.messages, "group {g}: {rep:?}");
        if matches!(done, Some(Outcome::Complete | Outcome::Enough)) {
            assert!(rep.delivered >= rep.required, "done without its share: group {g}: {rep:?}");
        }
    }
}

/// ExpressPass/Aeolus endpoints fed untrusted packets: the input is cut into 52-byte headers
/// (those that parse are used, with the connection set to the transfer's); credits and ACKs go to
/// an Aeolus sender of 50 KB, requests, data and probes to a receiver, with time advancing by the
/// header's first byte. Properties: nothing panics; every drain ends; the sender never hands out
/// more data packets than its unscheduled ones plus the credits it was given; it reports done at
/// most once; the receiver reports delivery at most once.
pub fn xpass_endpoints(data: &[u8]) {
    use proto::expresspass::ExpressPassConfig;
    use proto::{Endpoint, Event, Segment, TransportConfig};
    use units::{Bytes, Dur, Time};
    use wire::{XpassKind, XpassRepr, XPASS_HEADER_LEN};
    const CONN: u32 = 7;
    let cfg = ExpressPassConfig { unscheduled_bytes: 10 * 1454, ..ExpressPassConfig::default() };
    let cfg = TransportConfig::ExpressPass(cfg);
    let mut tx = Endpoint::sender(&cfg, CONN, Bytes(50_000), Time::ZERO);
    let mut rx = Endpoint::receiver(&cfg, CONN);
    let mut now = Time::ZERO;
    let (mut credits, mut data_out, mut tx_done, mut rx_done) = (0u64, 0u64, 0, 0);
    let mut drain = |ep: &mut Endpoint, now: Time, data_out: &mut u64| {
        let mut n = 0;
        while let Some(seg) = ep.poll_transmit(now) {
            if let Segment::Xpass(x) = seg {
                if x.kind == XpassKind::Data {
                    *data_out += 1;
                }
            }
            n += 1;
            assert!(n < 100_000, "a drain that does not end");
        }
        while let Some(ev) = ep.poll_event() {
            match ev {
                Event::SenderDone { .. } => tx_done += 1,
                Event::Delivered { .. } => rx_done += 1,
            }
        }
    };
    drain(&mut tx, now, &mut data_out);
    for chunk in data.chunks(XPASS_HEADER_LEN) {
        now += Dur::from_ns(u64::from(chunk[0]) * 100);
        let mut buf = vec![0u8; XPASS_HEADER_LEN];
        buf[..chunk.len()].copy_from_slice(chunk);
        buf[0] = wire::XPASS_VERSION;
        let len = u32::from_be_bytes([buf[16], buf[17], buf[18], buf[19]]) as usize;
        buf.resize(XPASS_HEADER_LEN + len.min(1 << 16), 0);
        let Ok(mut r) = XpassRepr::parse(&buf) else { continue };
        r.conn = CONN;
        let seg = Segment::Xpass(r);
        if matches!(r.kind, XpassKind::Credit | XpassKind::Ack | XpassKind::ProbeAck) {
            credits += u64::from(r.kind == XpassKind::Credit);
            tx.handle_timeout(now);
            tx.handle_segment(now, &seg);
            drain(&mut tx, now, &mut data_out);
        } else {
            rx.handle_timeout(now);
            rx.handle_segment(now, &seg);
            let mut ignored = 0;
            drain(&mut rx, now, &mut ignored);
        }
        assert!(data_out <= 10 + credits, "{data_out} data packets for {credits} credits");
    }
    assert!(tx_done <= 1 && rx_done <= 1, "an event twice");
}

/// Reads fields from fuzz bytes; missing bytes read as zero.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0u8; N];
        let n = self.0.len().min(N);
        b[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        b
    }
    fn u8(&mut self) -> u8 {
        self.bytes::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.bytes())
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.bytes())
    }
    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.bytes())
    }
    fn ecn(&mut self) -> Ecn {
        [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce][self.u8() as usize % 4]
    }
    fn atp_kind(&mut self) -> AtpKind {
        [AtpKind::Data, AtpKind::Ack, AtpKind::Fin][self.u8() as usize % 3]
    }
}

/// A segment, a datagram and an ATP header built from any field values (flags, and ATP fields
/// its kind forbids, included: emit must refuse what parse would not read back) and a buffer
/// length: `parse(emit(r)) == r` whenever emit accepts `r`.
pub fn wire_roundtrip(data: &[u8]) {
    let mut f = Fields(data);
    let buf_len = f.u8() as usize;
    let s = SegmentRepr {
        conn: f.u32(),
        seq: f.u64(),
        ack: f.u64(),
        len: f.u32(),
        flags: Flags(f.u8()),
        ecn: f.ecn(),
        prio: f.u8(),
        ts_ps: f.u64(),
        ts_echo_ps: f.u64(),
    };
    let d = DatagramRepr {
        conn: f.u32(),
        seq: f.u64(),
        len: f.u32(),
        flags: Flags(f.u8()),
        ecn: f.ecn(),
        prio: f.u8(),
        ts_ps: f.u64(),
    };
    let a = AtpRepr {
        kind: f.atp_kind(),
        ece: f.u8() & 1 != 0,
        conn: f.u32(),
        seq: f.u64(),
        msg: f.u32(),
        pkt: f.u32(),
        pkts: f.u32(),
        group: f.u16(),
        epoch: f.u32(),
        len: f.u32(),
        ecn: f.ecn(),
        prio: f.u8(),
        ts_ps: f.u64(),
    };
    check_segment_roundtrip(&s, buf_len);
    check_datagram_roundtrip(&d, buf_len);
    check_atp_roundtrip(&a, buf_len);
}

/// `emit` into a `buf_len`-byte buffer, then parse the header and `s.len` payload bytes; or
/// `emit` refuses `s`, for the first reason that applies.
pub fn check_segment_roundtrip(s: &SegmentRepr, buf_len: usize) {
    let mut buf = vec![0u8; buf_len];
    let emitted = s.emit(&mut buf);
    let refusal = if buf_len < HEADER_LEN {
        Some(WireError::Truncated { have: buf_len, need: HEADER_LEN })
    } else if s.flags.0 & !Flags::ALL.0 != 0 {
        Some(WireError::Malformed("flags"))
    } else if s.seq.checked_add(s.len.into()).is_none() {
        Some(WireError::Malformed("seq + len overflows"))
    } else {
        None
    };
    match refusal {
        Some(e) => assert_eq!(emitted, Err(e), "{s:?}"),
        None => {
            assert_eq!(emitted, Ok(HEADER_LEN), "{s:?}");
            check_parse_back(&buf[..HEADER_LEN], s.buffer_len(), SegmentRepr::parse, s);
        }
    }
}

/// `emit` into a `buf_len`-byte buffer, then parse the header and `d.len` payload bytes; or
/// `emit` refuses `d`, for the first reason that applies.
pub fn check_datagram_roundtrip(d: &DatagramRepr, buf_len: usize) {
    let mut buf = vec![0u8; buf_len];
    let emitted = d.emit(&mut buf);
    let refusal = if buf_len < DATAGRAM_HEADER_LEN {
        Some(WireError::Truncated { have: buf_len, need: DATAGRAM_HEADER_LEN })
    } else if d.flags.0 & !Flags::FIN.0 != 0 {
        Some(WireError::Malformed("flags"))
    } else if d.seq.checked_add(d.len.into()).is_none() {
        Some(WireError::Malformed("seq + len overflows"))
    } else {
        None
    };
    match refusal {
        Some(e) => assert_eq!(emitted, Err(e), "{d:?}"),
        None => {
            assert_eq!(emitted, Ok(DATAGRAM_HEADER_LEN), "{d:?}");
            check_parse_back(&buf[..DATAGRAM_HEADER_LEN], d.buffer_len(), DatagramRepr::parse, d);
        }
    }
}

/// `emit` into a `buf_len`-byte buffer, then parse the header and `a.len` payload bytes; or
/// `emit` refuses `a`, for the first reason that applies. No `seq + len` rule: an ATP `seq`
/// numbers transmissions, it is not a byte offset.
pub fn check_atp_roundtrip(a: &AtpRepr, buf_len: usize) {
    let mut buf = vec![0u8; buf_len];
    let emitted = a.emit(&mut buf);
    let numbered = matches!(a.kind, AtpKind::Data | AtpKind::Ack);
    let refusal = if buf_len < ATP_HEADER_LEN {
        Some(WireError::Truncated { have: buf_len, need: ATP_HEADER_LEN })
    } else if a.ece && a.kind != AtpKind::Ack {
        Some(WireError::Malformed("ece"))
    } else if a.len != 0 && a.kind != AtpKind::Data {
        Some(WireError::Malformed("len"))
    } else if numbered && a.pkts == 0 {
        Some(WireError::Malformed("pkts"))
    } else if numbered && a.pkt >= a.pkts {
        Some(WireError::Malformed("pkt"))
    } else {
        None
    };
    match refusal {
        Some(e) => assert_eq!(emitted, Err(e), "{a:?}"),
        None => {
            assert_eq!(emitted, Ok(ATP_HEADER_LEN), "{a:?}");
            check_parse_back(&buf[..ATP_HEADER_LEN], a.buffer_len(), AtpRepr::parse, a);
        }
    }
}

/// `header` followed by payload up to `total` bytes parses back to `want`; without its last
/// payload byte it is truncated.
fn check_parse_back<R: PartialEq + std::fmt::Debug>(
    header: &[u8],
    total: usize,
    parse: fn(&[u8]) -> Result<R, WireError>,
    want: &R,
) {
    let short = WireError::Truncated { have: total - 1, need: total };
    if total - header.len() > MAX_ROUNDTRIP_PAYLOAD {
        assert_eq!(parse(header), Err(WireError::Truncated { have: header.len(), need: total }), "{want:?}");
        return;
    }
    let mut whole = header.to_vec();
    whole.resize(total, 0xa5);
    assert_eq!(parse(&whole).as_ref(), Ok(want), "emitted {want:?}, parsed back something else");
    assert_eq!(parse(&whole[..total - 1]).map(|_| ()), Err(short), "{want:?}");
}

/// A TOML scenario, parsed and validated: errors are values, never panics.
pub fn scenario_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    scenario(Spec::from_toml_str(text));
}

/// A JSON scenario (what the Python front end sends), parsed and validated.
pub fn scenario_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    scenario(Spec::from_json_str(text));
}

/// Valid scenarios to edit: the default and every example.
const BASES: &[&str] = &[
    include_str!("../../sim/data/default.toml"),
    include_str!("../../../examples/apps_shapes.toml"),
    include_str!("../../../examples/dctcp_timeseries.toml"),
    include_str!("../../../examples/fat_tree_k4.toml"),
    include_str!("../../../examples/incast_small_buffer.toml"),
    include_str!("../../../examples/leaf_spine_websearch.toml"),
    include_str!("../../../examples/multi_queue_rr.toml"),
    include_str!("../../../examples/udp_line_rate.toml"),
];

/// Keys an edit may add although no base scenario sets them.
const EXTRA_KEYS: &[&str] = &[
    "run.timeseries.interval_us",
    "run.timeseries.max_transfers",
    "run.stop_ms",
    "run.sample_interval_us",
    "topology.links_per_spine",
    "topology.host_delay_ns",
    "topology.fabric_delay_ns",
    "topology.delay_ns",
    "routing.hash_seed",
    "switch.buffer_bytes",
    "host.nic_buffer_bytes",
    "host.ecn_threshold_bytes",
    "host.tsq_pkts",
    "transport.mss_bytes",
    "transport.header_bytes",
    "transport.init_cwnd_pkts",
    "transport.min_rto_us",
    "transport.max_rto_us",
    "transport.init_rto_us",
    "transport.delayed_ack_timeout_us",
    "transport.rate_gbps",
    "profile",
];

/// Values an edit may write: the boundaries of every integer and float type, and a few of
/// each other type.
fn edit_value(i: u8) -> toml::Value {
    use toml::Value::{Array, Boolean, Float, Integer, String as Str, Table};
    const INTS: &[i64] = &[
        0, 1, 2, 3, 4, -1, 7, 8, 9, 16, 127, 128, 255, 256, 1000, 65_535, 65_536, 1 << 20, (1 << 20) + 1,
        i32::MAX as i64, 1 << 32, (1 << 32) + 1, 1 << 53, 18_446_744_073_709, 18_446_744_073_710, i64::MAX, i64::MIN,
    ];
    const FLOATS: &[f64] = &[
        0.0, -0.0, 0.5, 1.0, 1.5, 2.0, -1.0, 1e-300, 5e-324, 1e-6, 1e6, 1e9, 1e12, 1.8e12, 1e13, 1e15, 1e18, 1e19,
        1e300, f64::MAX, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 100_000.0, 100_000.1,
    ];
    let i = i as usize;
    match i {
        _ if i < INTS.len() => Integer(INTS[i]),
        _ if i < INTS.len() + FLOATS.len() => Float(FLOATS[i - INTS.len()]),
        _ => match i % 8 {
            0 => Str(String::new()),
            1 => Str("ns3_compat".into()),
            2 => Str("default".into()),
            3 => Boolean(true),
            4 => Boolean(false),
            5 => Array(Vec::new()),
            6 => Table(Default::default()),
            _ => Array(vec![Integer(0), Integer(1)]),
        },
    }
}

/// Every leaf of `v` by its path of table keys and array indices.
fn leaf_paths(v: &toml::Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        toml::Value::Table(t) => t.iter().for_each(|(k, v)| {
            path.push(k.clone());
            leaf_paths(v, path, out);
            path.pop();
        }),
        toml::Value::Array(a) if !a.is_empty() => a.iter().enumerate().for_each(|(i, v)| {
            path.push(i.to_string());
            leaf_paths(v, path, out);
            path.pop();
        }),
        _ => out.push(path.clone()),
    }
}

/// Set (or, with `None`, remove) the value at `path`, making tables on the way.
fn set_path(root: &mut toml::Value, path: &[String], value: Option<toml::Value>) {
    let Some((last, inner)) = path.split_last() else { return };
    let mut v = root;
    for k in inner {
        v = match v {
            toml::Value::Table(t) => t.entry(k.clone()).or_insert_with(|| toml::Value::Table(Default::default())),
            toml::Value::Array(a) => match k.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
    }
    match (v, value) {
        (toml::Value::Table(t), Some(x)) => {
            t.insert(last.clone(), x);
        }
        (toml::Value::Table(t), None) => {
            t.remove(last);
        }
        (toml::Value::Array(a), Some(x)) => {
            if let Some(slot) = last.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                *slot = x;
            }
        }
        _ => {}
    }
}

/// A valid scenario (the first byte picks it) changed by edits of three bytes each: a key (of
/// the scenario's leaves and [`EXTRA_KEYS`]) and a value from [`edit_value`], or a removal.
/// Reaches the range checks far faster than byte mutations of the text, which rarely keep a
/// scenario valid up to the key they change.
pub fn scenario_edit(data: &[u8]) {
    let Some((&pick, edits)) = data.split_first() else { return };
    let Ok(mut root) = BASES[pick as usize % BASES.len()].parse::<toml::Value>() else { return };
    for e in edits.chunks_exact(3) {
        let mut paths = Vec::new();
        leaf_paths(&root, &mut Vec::new(), &mut paths);
        paths.extend(EXTRA_KEYS.iter().map(|k| k.split('.').map(str::to_string).collect()));
        let path = &paths[u16::from_be_bytes([e[0], e[1]]) as usize % paths.len()];
        let value = (e[2] != u8::MAX).then(|| edit_value(e[2]));
        set_path(&mut root, path, value);
    }
    scenario(Spec::from_toml_str(&root.to_string()));
}

/// Validate a parsed scenario; a valid one's resolved JSON (what `slacknet validate` prints
/// and the Python front end sends back) must parse and validate again to the same scenario.
fn scenario(parsed: Result<Spec, SpecError>) {
    let Ok(spec) = parsed else { return };
    let _ = spec.to_json();
    let Ok(valid) = spec.validate(Path::new(BASE_DIR)) else { return };
    let json = valid.to_json();
    let again = match Spec::from_json_str(&json) {
        Ok(s) => s,
        Err(e) => panic!("a validated scenario's JSON does not parse: {e}\n{json}"),
    };
    assert_eq!(&again, valid.spec(), "a validated scenario's JSON reads back different\n{json}");
    if let Err(e) = again.validate(Path::new(BASE_DIR)) {
        panic!("a validated scenario's JSON does not validate: {e}\n{json}");
    }
}

/// A flow-size CDF file (`size cdf` lines); what parses can be sampled over all of [0, 1].
pub fn cdf(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(c) = Cdf::parse(text) else { return };
    let _ = c.mean();
    for u in [0.0, 1e-9, 0.25, 0.5, 0.999_999, 1.0] {
        let _ = c.sample(u);
    }
}

/// A flow list (`id src dst start_s size_bytes [incast]` lines) for a 16-host network.
pub fn flow_list(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut flows = Vec::new();
    if parse_flow_list(text, 0, 0, 16, &mut flows).is_ok() {
        assert!(flows.iter().all(|f| f.src < 16 && f.dst < 16 && f.src != f.dst && f.size >= 1));
    }
}

/// A Credence forest file (JSON); a loaded forest evaluates any feature vector.
pub fn forest(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(f) = Forest::from_json_str(text) else { return };
    let mut cache = BoxCache::default();
    for x in [[0.0; 4], [1e3, 2e3, 3e3, 4e3], [1e3, 2e3, 3e3, 4e3], [f64::MAX, -1.0, f64::NAN, 5e5]] {
        assert_eq!(f.predict_drop_cached(&x, &mut cache), f.predict_drop(&x));
    }
    let mut cache = BoxCache::default();
    for (q, o) in [(0, 0), (1000, 3000), (1001, 3000), (1 << 24, 1 << 24), ((1 << 24) + 1, 5), (u64::MAX, 7)] {
        let x = [q as f64, 0.0, o as f64, 0.0];
        assert_eq!(f.predict_drop_counts(q, o, &mut cache), f.predict_drop(&x), "at {x:?}");
    }
}

/// `coflow::trace::Trace::parse` on any text (the coflow-benchmark format, read from a user's
/// path): never a panic or an allocation beyond the input's size and the port bound; a small
/// trace that parses plays to the end under FAIR and SEBF with every CCT at least its bound.
pub fn coflow_trace(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(t) = coflow::trace::Trace::parse(&text) else { return };
    assert!(t.num_ports >= 1 && t.num_ports <= coflow::trace::MAX_PORTS);
    if t.coflows.len() > 16 || t.num_ports > 64 || t.num_flows() > 256 {
        return;
    }
    for s in [coflow::inter::Scheduler::Fair, coflow::inter::Scheduler::Sebf] {
        let out = coflow::inter::run(&t, s, &coflow::inter::Options::default());
        assert_eq!(out.coflows.len(), t.coflows.len());
        for c in &out.coflows {
            // Times are absolute seconds in f64: a CCT is exact to a few ulps of the clock
            // (an arrival at 4.3e6 s leaves about 1e-9 s), not of the CCT itself.
            let clock = 64.0 * f64::EPSILON * c.finish_s.abs();
            assert!(c.cct_s >= c.ideal_cct_s * (1.0 - 1e-9) - clock, "{s:?}: {c:?}");
        }
    }
}

/// Bytes read off the front of a fuzz input, zeros once it runs out.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u8(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    /// A small number most of the time, any `u32` sometimes (fields near a limit or not).
    fn field(&mut self, small: u32) -> u32 {
        match self.u8() % 4 {
            0 => self.u32(),
            1 => small.saturating_add(u32::from(self.u8())),
            _ => u32::from(self.u8()) % small.max(1),
        }
    }
    fn take(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
}

/// One datagram built from the input: raw bytes, or an MLT or ATP packet with fuzzed fields
/// that the wire format accepts (so that most inputs pass the parser and reach the node's
/// connections), some of them naming the connections the node opened towards the fuzzer
/// (`mlt_conn`, `atp_conn`).
fn fuzz_datagram(r: &mut Reader<'_>, mlt_conn: u32, atp_conn: u32) -> Vec<u8> {
    let kind = r.u8() % 6;
    if kind == 0 {
        let n = usize::from(r.u8());
        return r.take(n).to_vec();
    }
    let conn = match r.u8() % 3 {
        0 => mlt_conn,
        1 => atp_conn,
        _ => r.u32(),
    };
    let seg = if kind <= 2 {
        let vb = if r.u8().is_multiple_of(2) { 4 } else { 2 };
        let total = r.field(64).max(1);
        let start = r.field(total) % total;
        let end = start.saturating_add(1 + r.field(8) % 9).min(total);
        let is_ack = kind == 2;
        let mut flags = if is_ack { Flags::ACK } else { Flags::NONE };
        if is_ack && r.u8().is_multiple_of(2) {
            flags = flags.with(Flags::ECE);
        }
        if is_ack && r.u8().is_multiple_of(2) {
            flags = flags.with(Flags::FIN);
        }
        proto::Segment::Mlt(MltRepr {
            conn,
            msg: r.field(4),
            seq: u64::from(r.u32()),
            start,
            end,
            total,
            cum: if is_ack { r.field(total).min(total) } else { 0 },
            received: if is_ack { r.field(total).min(total) } else { 0 },
            need: if is_ack { 0 } else { r.field(total).min(total) },
            value_bytes: vb,
            len: if is_ack { 0 } else { (end - start) * u32::from(vb) },
            flags,
            ecn: Ecn::Ect0,
            prio: 0,
            pos: if is_ack { 0 } else { r.field(total) % total },
        })
    } else {
        let kind = match kind {
            3 => AtpKind::Data,
            4 => AtpKind::Ack,
            _ => AtpKind::Fin,
        };
        let pkts = r.field(8).max(1);
        proto::Segment::Atp(AtpRepr {
            kind,
            conn,
            seq: u64::from(r.field(64)),
            msg: r.field(16),
            pkt: r.field(pkts) % pkts,
            pkts,
            group: r.u16() % 4,
            epoch: r.field(8),
            len: if kind == AtpKind::Data { 1 + r.field(1400) % 1400 } else { 0 },
            ece: kind == AtpKind::Ack && r.u8().is_multiple_of(2),
            ecn: Ecn::Ect0,
            prio: r.u8() % 8,
            ts_ps: u64::from(r.u32()),
        })
    };
    let len = match &seg {
        proto::Segment::Mlt(h) => h.len,
        proto::Segment::Atp(h) => h.len,
        _ => 0,
    } as usize;
    let payload = vec![0x5a; len];
    let mut out = Vec::new();
    if udp::datagram::emit(&seg, &payload, &mut out).is_err() {
        // A combination the wire refuses after all: its next bytes go raw instead.
        out = r.take(32).to_vec();
    }
    out
}

/// The kernel's UDP counters (`/proc/net/snmp`: InDatagrams, NoPorts, InErrors, RcvbufErrors),
/// for a failure message to tell a datagram the kernel dropped from one the node never read.
fn udp_counters() -> Option<Vec<(String, u64)>> {
    let text = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let mut rows = text.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (rows.next()?, rows.next()?);
    let wanted = ["InDatagrams", "NoPorts", "InErrors", "RcvbufErrors"];
    Some(
        names
            .split_whitespace()
            .zip(values.split_whitespace())
            .filter(|(n, _)| wanted.contains(n))
            .filter_map(|(n, v)| Some((n.to_owned(), v.parse().ok()?)))
            .collect(),
    )
}

/// The real transport's whole receive path: a node on loopback, with a bounded-loss transfer and
/// an ATP job of its own running towards the fuzzer's socket, is sent up to 64 datagrams built
/// from the input (raw bytes, or packets with fuzzed fields, some naming the node's own
/// connections as learnt from its first packets). Every datagram must be counted, the node must
/// stay within its limits and keep serving, and its loop must never die.
pub fn udp_node(data: &[u8]) {
    use std::net::UdpSocket;
    use std::time::{Duration, Instant};
    let cfg = udp::NodeConfig {
        max_connections: 8,
        max_message_bytes: 1 << 20,
        max_receive_memory_bytes: 2 << 20,
        receiver_idle_timeout: Duration::from_millis(200),
        job_idle_end: Duration::from_millis(200),
        ..udp::NodeConfig::default()
    };
    let node = udp::Node::bind("127.0.0.1:0".parse().expect("an address"), cfg).expect("a loopback node binds");
    let sock = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket binds");
    let me = sock.local_addr().expect("bound");
    // The node's own connections towards us, so that fuzzed ACKs can name them.
    let tx = node.send_values(me, vec![0u8; 4000], 4, 0.5, Duration::from_secs(5)).expect("a valid send");
    let job = node.send_job(me, &[0.5], vec![(0, vec![1u8; 3000]); 4], Duration::from_secs(5)).expect("a valid job");
    sock.set_read_timeout(Some(Duration::from_millis(200))).expect("a timeout");
    let (mut mlt_conn, mut atp_conn) = (0, 0);
    let mut buf = [0u8; 2048];
    for _ in 0..8 {
        let Ok(n) = sock.recv(&mut buf) else { break };
        match udp::datagram::parse(&buf[..n]) {
            Ok((proto::Segment::Mlt(h), _)) => mlt_conn = h.conn,
            Ok((proto::Segment::Atp(h), _)) => atp_conn = h.conn,
            _ => {}
        }
    }
    let before = node.stats().num_received;
    let udp_before = udp_counters();
    let mut r = Reader(data);
    let mut sent = 0u64;
    while !r.0.is_empty() && sent < 64 {
        let d = fuzz_datagram(&mut r, mlt_conn, atp_conn);
        if sock.send_to(&d, node.local_addr()).is_ok() {
            sent += 1;
        }
    }
    // Every datagram is counted (received, then parsed or counted as malformed or unknown).
    let until = Instant::now() + Duration::from_secs(10);
    while node.stats().num_received < before + sent {
        if Instant::now() >= until {
            // One more look after a pause: a machine that stalled this process for the whole
            // wait (a descheduled VM) may wake this thread before the node's loop has run.
            std::thread::sleep(Duration::from_secs(1));
            let stats = node.stats();
            assert!(
                stats.num_received >= before + sent,
                "the node stopped reading: {stats:?} after {sent} datagrams (kernel UDP counters, \
                 whole machine, before -> now: {udp_before:?} -> {:?})",
                udp_counters()
            );
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    // What was delivered is within the limits the node was given, and so is the memory the
    // node holds for messages in progress and not yet taken.
    let held = node.stats().receive_memory_bytes;
    assert!(held <= 2 << 20, "{held} bytes of receive memory, beyond the 2 MiB bound");
    let (mut delivered, mut messages) = (0, 0);
    while let Some(d) = node.recv(Duration::ZERO) {
        assert!(d.data.len() as u64 <= 1 << 20);
        assert!(d.received_values <= d.total_values);
        delivered += 1;
    }
    while let Some(e) = node.recv_job(Duration::ZERO) {
        if let udp::JobEvent::Message { data, .. } = e {
            assert!(data.len() as u64 <= 1 << 20);
            messages += 1;
        }
    }
    drop((tx, job));
    if std::env::var_os("UDP_NODE_DEBUG").is_some() {
        eprintln!("udp_node: {sent} datagrams, {delivered} delivered, {messages} job messages, {:?}", node.stats());
    }
    if let Err(e) = node.close() {
        panic!("{e}");
    }
}

/// `udp::datagram::parse` on any bytes, as the real transport's receive path parses every
/// datagram from the network: never a panic; what parses is one packet exactly (its payload the
/// header's length, no trailing bytes), emits back to the same bytes, and reads the same through
/// the zero-copy views (`wire::MltPacket`, `wire::AtpPacket`).
pub fn udp_datagram(data: &[u8]) {
    if let Ok((seg, payload)) = udp::datagram::parse(data) {
        let mut buf = Vec::new();
        udp::datagram::emit(&seg, payload, &mut buf).expect("a parsed datagram emits");
        assert_eq!(buf, data, "{seg:?}");
        // The zero-copy views read the same fields and payload in place.
        match seg {
            proto::Segment::Mlt(h) => {
                let v = wire::MltPacket::new_checked(data).expect("what parses has a view");
                assert_eq!((v.conn(), v.seq(), v.start(), v.end(), v.total()), (h.conn, h.seq, h.start, h.end, h.total));
                assert_eq!((v.cum(), v.pos(), v.received(), v.need(), v.flags()), (h.cum, h.pos, h.received, h.need, h.flags));
                assert_eq!(v.payload(), payload);
            }
            proto::Segment::Atp(h) => {
                let v = wire::AtpPacket::new_checked(data).expect("what parses has a view");
                assert_eq!((v.kind(), v.conn(), v.seq(), v.msg(), v.pkt(), v.pkts()), (h.kind, h.conn, h.seq, h.msg, h.pkt, h.pkts));
                assert_eq!((v.group(), v.epoch(), v.ts_ps(), v.ece()), (h.group, h.epoch, h.ts_ps, h.ece));
                assert_eq!(v.payload(), payload);
            }
            _ => {}
        }
    }
}
