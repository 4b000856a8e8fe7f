//! Protocol traces of pFabric's hosts (SIGCOMM'13 §4.1-§4.2) over the `Pair` harness, plus
//! direct state-machine tests of the timeout and probe rules: the first window is one BDP sent
//! at once, every data packet carries the flow's remaining size, only lost packets are resent,
//! the window restarts from one packet after a timeout, and consecutive timeouts lead to probe
//! mode, which one acknowledged probe ends.

use units::{Dur, Time};
use wire::{Flags, PfabricRepr};

use super::util::{Dir, Pair};
use crate::pfabric::{PfabricConfig, PfabricReceiver, PfabricSender};
use crate::{Endpoint, Event, Outcome, Segment, TransportConfig};

const MSS: u64 = 1460;

fn cfg() -> PfabricConfig {
    PfabricConfig::default()
}

fn pf(e: &super::util::TraceEntry) -> PfabricRepr {
    match e.pkt {
        Segment::Pfabric(p) => p,
        other => panic!("not pFabric: {other:?}"),
    }
}

fn completed(p: &Pair) -> bool {
    let sender = p.client_events.iter().any(|(_, e)| *e == Event::SenderDone { outcome: Outcome::Complete, confirmed: true });
    let receiver = p.server_events.iter().any(|(_, e)| *e == Event::Delivered { outcome: Outcome::Complete });
    sender && receiver
}

#[test]
fn first_window_is_one_bdp_sent_at_once() {
    let c = cfg();
    let mut p = Pair::new(&TransportConfig::Pfabric(c.clone()), 100 * MSS, 1);
    assert!(p.drive());
    assert!(completed(&p));
    let data = p.data();
    let at_zero = data.iter().take_while(|e| e.sent == Time::ZERO).count();
    assert_eq!(at_zero, c.init_cwnd_pkts as usize, "the whole initial window leaves at once, and no more");
    // The rest is clocked by ACKs, which take at least a round trip.
    assert!(data[at_zero].sent >= Time::ZERO + p.latency * 2);
    assert_eq!(data.len(), 100, "no loss, no retransmission");
}

#[test]
fn rank_is_the_remaining_size_and_never_grows() {
    let size = 50 * MSS + 7;
    let mut p = Pair::new(&TransportConfig::Pfabric(cfg()), size, 1);
    assert!(p.drive());
    let ranks: Vec<u64> = p.data().iter().map(|e| pf(e).rank).collect();
    // Nothing is acknowledged before the first window leaves: it carries the whole size.
    assert!(ranks[..12].iter().all(|&r| r == size), "{ranks:?}");
    assert!(ranks.windows(2).all(|w| w[1] <= w[0]), "the remaining size never grows: {ranks:?}");
    // Each later packet's rank is the size minus what was acknowledged when it left: by the
    // time the last packet leaves, at least the first window was acknowledged.
    let last = *ranks.last().unwrap();
    assert!(last <= size - 12 * MSS && last > 0, "{last}");
    assert!(ranks.iter().all(|r| (size - r).is_multiple_of(MSS)), "whole packets are acknowledged before the last one");
    // ACKs carry rank 0 (most urgent).
    assert!(p.acks().iter().all(|e| pf(e).rank == 0 && pf(e).flags.contains(Flags::ACK)));
    let fin = p.data().last().map(pf).unwrap();
    assert!(fin.flags.contains(Flags::FIN) && fin.len == 7);
}

#[test]
fn a_lost_packet_alone_is_resent_after_the_fixed_rto() {
    let c = cfg();
    let mut p = Pair::new(&TransportConfig::Pfabric(c.clone()), 40 * MSS, 1);
    p.drop_data.insert(3);
    assert!(p.drive());
    assert!(completed(&p));
    let data = p.data();
    assert_eq!(data.len(), 41, "one retransmission: SACKs tell the sender what arrived");
    let retx = data.last().unwrap();
    assert_eq!(pf(retx).seq, 3 * MSS);
    assert_eq!(p.client.stats().segments_retx, 1);
    assert_eq!(p.client.stats().num_rtos, 1);
    // The timeout is `rto` after the last progress, the ACK of the last new packet.
    let last_ack = p.acks().iter().filter(|e| e.arrive.is_some()).nth(38).unwrap().arrive.unwrap();
    assert_eq!(retx.sent, last_ack + c.rto);
}

#[test]
fn timeout_resets_the_window_to_one_packet() {
    let c = PfabricConfig { init_cwnd_pkts: 8, ..cfg() };
    let mut s = PfabricSender::new(&c, 1, 20 * MSS);
    let sent: Vec<_> = std::iter::from_fn(|| s.poll_transmit(Time::ZERO)).collect();
    assert_eq!(sent.len(), 8);
    let deadline = s.poll_timeout().expect("armed");
    assert_eq!(deadline, Time::ZERO + c.rto);
    s.handle_timeout(deadline - Dur::from_ps(1));
    assert_eq!(s.cwnd_pkts(), 8, "a spurious timeout is a no-op");
    s.handle_timeout(deadline);
    assert_eq!(s.cwnd_pkts(), 1);
    let again: Vec<_> = std::iter::from_fn(|| s.poll_transmit(deadline)).collect();
    assert_eq!(again.len(), 1, "one packet after a timeout");
    assert_eq!((again[0].seq, again[0].len), (0, MSS as u32), "the earliest lost packet first");
    // Its ACK (with a SACK of packet 5 that arrived earlier) opens the window: slow start up to
    // half the old window.
    let ack = |seq: u64, cum: u64| PfabricRepr { conn: 1, seq, ack: cum, flags: Flags::ACK, ..Default::default() };
    s.handle_segment(deadline, &ack(5 * MSS, 0));
    s.handle_segment(deadline, &ack(0, MSS));
    assert_eq!(s.cwnd_pkts(), 3);
    assert_eq!(s.remaining(), 18 * MSS);
    let next: Vec<u64> = std::iter::from_fn(|| s.poll_transmit(deadline)).map(|p| p.seq / MSS).collect();
    assert_eq!(next, vec![1, 2, 3], "lost packets again, skipping the SACKed packet 5");
}

#[test]
fn consecutive_timeouts_enter_probe_mode_until_a_probe_is_acknowledged() {
    let c = PfabricConfig { probe_after_timeouts: 3, ..cfg() };
    let mut s = PfabricSender::new(&c, 1, 30 * MSS);
    let mut now = Time::ZERO;
    assert_eq!(std::iter::from_fn(|| s.poll_transmit(now)).count(), 12);
    for k in 1..=2 {
        now = s.poll_timeout().unwrap();
        s.handle_timeout(now);
        assert!(!s.is_probing(), "timeout {k}");
        let out: Vec<_> = std::iter::from_fn(|| s.poll_transmit(now)).collect();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].len, MSS as u32);
    }
    for _ in 0..2 {
        now = s.poll_timeout().unwrap();
        s.handle_timeout(now);
        assert!(s.is_probing());
        let out: Vec<_> = std::iter::from_fn(|| s.poll_transmit(now)).collect();
        assert_eq!(out.len(), 1, "one probe per timeout");
        assert_eq!((out[0].len, out[0].seq, out[0].rank), (0, 0, 30 * MSS), "header-only, at the first unacknowledged byte");
        assert_eq!(s.poll_timeout(), Some(now + c.rto));
    }
    // The receiver answers the probe with a plain cumulative ACK.
    let mut r = PfabricReceiver::new(&c, 1);
    r.handle_segment(now, &PfabricRepr { conn: 1, rank: 30 * MSS, ..Default::default() });
    let ack = r.poll_transmit().expect("a probe is acknowledged");
    assert_eq!((ack.ack, ack.seq, ack.flags), (0, 0, Flags::ACK));
    assert_eq!(r.poll_event(), None);
    s.handle_segment(now, &ack);
    assert!(!s.is_probing());
    let out: Vec<_> = std::iter::from_fn(|| s.poll_transmit(now)).collect();
    assert_eq!(out.len(), 1, "resumes with a window of one packet");
    assert_eq!((out[0].seq, out[0].len), (0, MSS as u32));
}

#[test]
fn an_outage_ends_in_probe_mode_and_the_flow_still_completes() {
    let c = cfg();
    let mut p = Pair::new(&TransportConfig::Pfabric(c.clone()), 20 * MSS, 1);
    // The first window and the retransmissions of the next four timeouts are lost.
    p.drop_to_server.extend(0..12 + 4);
    assert!(p.drive());
    assert!(completed(&p));
    assert_eq!(p.client.stats().num_rtos, 5);
    let probes: Vec<_> = p.trace.iter().filter(|e| e.dir == Dir::ToServer && e.seg.len == 0).collect();
    assert_eq!(probes.len(), 1, "the fifth timeout sends one probe, whose ACK ends probe mode");
    assert!(probes[0].arrive.is_some());
}

#[test]
fn random_loss_and_reordering_complete_every_byte_exactly_once() {
    for seed in 0..8 {
        let size = 300 * MSS + 99;
        let mut p = Pair::new(&TransportConfig::Pfabric(cfg()), size, seed);
        p.loss_to_server = 0.05;
        p.loss_to_client = 0.05;
        p.reorder = 0.2;
        p.reorder_delay = Dur::from_us(7);
        assert!(p.drive_bounded(200_000), "seed {seed}: no livelock");
        assert!(completed(&p), "seed {seed}");
        assert_eq!(p.server.stats().bytes_received, size, "seed {seed}");
        let delivered = p.server_events.iter().filter(|(_, e)| matches!(e, Event::Delivered { .. })).count();
        assert_eq!(delivered, 1);
        assert_eq!(p.client.poll_timeout(), None, "no timer after completion");
    }
}

#[test]
fn a_stream_sends_full_packets_until_closed() {
    let t = TransportConfig::Pfabric(cfg());
    let mut s = Endpoint::sender_stream(&t, 1, Time::ZERO);
    s.send(2 * MSS + 10);
    let out: Vec<_> = std::iter::from_fn(|| s.poll_transmit(Time::ZERO)).collect();
    assert_eq!(out.len(), 2, "the partial third packet waits for more data or the close");
    s.close();
    let out: Vec<_> = std::iter::from_fn(|| s.poll_transmit(Time::ZERO)).collect();
    assert_eq!(out.len(), 1);
    let Segment::Pfabric(last) = out[0] else { panic!() };
    assert!(last.flags.contains(Flags::FIN) && last.len == 10);
}

#[test]
fn foreign_and_malformed_acks_change_nothing() {
    let mut s = PfabricSender::new(&cfg(), 1, 5 * MSS);
    let _ = std::iter::from_fn(|| s.poll_transmit(Time::ZERO)).count();
    let before = format!("{s:?}");
    for bad in [
        PfabricRepr { conn: 2, ack: 5 * MSS, flags: Flags::ACK, ..Default::default() },
        PfabricRepr { conn: 1, ack: 5 * MSS, flags: Flags::NONE, ..Default::default() },
        PfabricRepr { conn: 1, seq: 7, ack: 0, flags: Flags::ACK, ..Default::default() },
        PfabricRepr { conn: 1, seq: u64::MAX, ack: 0, flags: Flags::ACK, ..Default::default() },
    ] {
        s.handle_segment(Time::ZERO, &bad);
    }
    assert_eq!(format!("{s:?}"), before);
    // An ACK beyond what was sent acknowledges only what was sent.
    s.handle_segment(Time::ZERO, &PfabricRepr { conn: 1, ack: u64::MAX, flags: Flags::ACK, ..Default::default() });
    assert_eq!(s.poll_event(), Some(Event::SenderDone { outcome: Outcome::Complete, confirmed: true }));
}

#[test]
fn a_packet_too_far_ahead_to_record_is_not_selectively_acknowledged() {
    let c = PfabricConfig { max_cwnd_pkts: 4, ..cfg() };
    let mut r = PfabricReceiver::new(&c, 1);
    let data = |idx: u64| PfabricRepr { conn: 1, seq: idx * MSS, len: MSS as u32, ..Default::default() };
    r.handle_segment(Time::ZERO, &data(3));
    assert_eq!(r.poll_transmit().map(|a| (a.seq, a.ack)), Some((3 * MSS, 0)), "recorded: selected");
    r.handle_segment(Time::ZERO, &data(9));
    assert_eq!(r.poll_transmit().map(|a| (a.seq, a.ack)), Some((0, 0)), "not recorded: selects nothing");
    for i in [0, 1, 2] {
        r.handle_segment(Time::ZERO, &data(i));
    }
    let acks: Vec<u64> = std::iter::from_fn(|| r.poll_transmit()).map(|a| a.ack).collect();
    assert_eq!(acks, vec![MSS, 2 * MSS, 4 * MSS], "packet 3 was kept");
    assert_eq!(r.stats().bytes_received, 4 * MSS);
}
