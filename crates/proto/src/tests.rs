//! Protocol-trace tests over the deterministic [`util::Pair`] harness, plus a few direct
//! state-machine tests of [`Conn`]. Tests are named after the transition they pin.

use std::collections::{BTreeMap, BTreeSet};

use units::{Bps, Bytes, Dur, Time};
use wire::{Ecn, Flags, IntHop, IntStack, SegmentRepr};

use crate::cc::{AnyCc, CongestionControl, Dctcp, PowerTcp};
use crate::tcp::{Conn, DelayedAck};
use crate::{CcKind, Endpoint, Event, TcpConfig, TransportConfig, UdpConfig};

mod atp;
mod expresspass;
mod mlt;
mod pfabric;
mod prr;
mod rack;
mod util;

use util::{Dir, Mark, Pair, TraceEntry, HEADER_BYTES};

const MSS: u64 = 1460;
const G: f64 = 1.0 / 16.0;

fn dctcp(init_alpha: f64) -> CcKind {
    CcKind::Dctcp { g: G, init_alpha, loss_by_alpha: false, ns3_cwr: false, ece_only_on_new_acks: false }
}

fn tcp(cc: CcKind) -> TcpConfig {
    TcpConfig { cc, ..TcpConfig::default() }
}

fn pair(cfg: TcpConfig, size: u64, seed: u64) -> Pair {
    Pair::new(&TransportConfig::Tcp(cfg), size, seed)
}

/// Transmissions of the data segment starting at `seq`.
fn sends_of(p: &Pair, seq: u64) -> Vec<TraceEntry> {
    p.data().into_iter().filter(|e| e.seg.seq == seq).collect()
}

/// Arrival times at the client of ACKs with `ack` field `ack`.
fn ack_arrivals(p: &Pair, ack: u64) -> Vec<Time> {
    p.acks().iter().filter(|e| e.seg.ack == ack).filter_map(|e| e.arrive).collect()
}

/// Closed-form completion of a flow whose whole size fits in the first window: the segments
/// leave back to back at t0, serialize at the bottleneck, and each is ACKed at once.
/// Returns (receiver done, sender done).
fn closed_form(p: &Pair, t0: Time, size: u64) -> (Time, Time) {
    let n = size.div_ceil(MSS);
    let last = size - (n - 1) * MSS;
    let data_done = t0 + p.tx(MSS) * (n - 1) + p.tx(last);
    let rx_done = data_done + p.latency;
    (rx_done, rx_done + p.tx(0) + p.latency)
}

// ------------------------------------------------------------------------------------------
// Established, no loss
// ------------------------------------------------------------------------------------------

#[test]
fn established_no_loss_sends_ceil_segments_and_completes_at_closed_form() {
    let size = 10 * MSS - 100;
    for cc in [CcKind::NewReno, dctcp(1.0)] {
        let mut p = pair(tcp(cc), size, 0);
        assert!(p.drive());
        let data = p.data();
        assert_eq!(data.len() as u64, size.div_ceil(MSS));
        for (i, e) in data.iter().enumerate() {
            assert_eq!(e.seg.seq, i as u64 * MSS);
            assert_eq!(e.seg.flags.contains(Flags::FIN), i == data.len() - 1);
            assert!(e.seg.flags.contains(Flags::ACK));
            assert_eq!(e.sent, Time::ZERO, "the initial window covers the flow");
        }
        assert_eq!(data.last().unwrap().seg.end(), size);
        let (rx_done, tx_done) = closed_form(&p, Time::ZERO, size);
        assert_eq!(p.received_all_at(), Some(rx_done));
        assert_eq!(p.completed_at(), Some(tx_done));
        let s = p.client.stats();
        assert_eq!((s.segments_sent, s.bytes_sent, s.segments_retx), (10, size, 0));
        assert_eq!(p.server.stats().bytes_received, size);
        // Every ACK is an immediate per-segment ACK.
        let acks: Vec<u64> = p.acks().iter().map(|e| e.seg.ack).collect();
        let expect: Vec<u64> = (1..=10).map(|k| (k * MSS).min(size)).collect();
        assert_eq!(acks, expect);
    }
}

#[test]
fn established_completed_sender_is_silent_and_has_no_timers() {
    let mut p = pair(tcp(dctcp(1.0)), 30 * MSS, 0);
    assert!(p.drive());
    assert!(p.is_complete());
    let now = p.now;
    let Endpoint::Tcp(c) = &mut p.client else { unreachable!() };
    assert_eq!(c.poll_timeout(), None);
    assert_eq!(c.poll_transmit(now), None);
    // A stale duplicate ACK changes nothing and produces nothing.
    let stale = SegmentRepr { conn: 1, ack: 5 * MSS, flags: Flags::ACK, ..Default::default() };
    c.handle_segment(now, &stale);
    c.handle_timeout(now + Dur::from_ms(100));
    assert_eq!(c.poll_transmit(now), None);
    assert_eq!(c.poll_timeout(), None);
    assert_eq!(c.poll_event(), None);
    assert_eq!(p.server.poll_timeout(), None);
}

/// One transfer of `size` bytes over a 100 us link, complete, and its data segments counted
/// by round (split at idle gaps longer than a quarter RTT).
fn rounds_of(cfg: TcpConfig, size: u64) -> (Pair, Vec<usize>) {
    let mut p = pair(cfg, size, 0);
    p.latency = Dur::from_us(100);
    assert!(p.drive());
    assert!(p.is_complete());
    let mut rounds: Vec<usize> = vec![];
    let mut last: Option<Time> = None;
    for e in p.data() {
        if !matches!(last, Some(t) if e.sent.since(t) <= Dur::from_us(50)) {
            rounds.push(0);
        }
        *rounds.last_mut().unwrap() += 1;
        last = Some(e.sent);
    }
    (p, rounds)
}

#[test]
fn slow_start_doubles_cwnd_each_round() {
    let (p, rounds) = rounds_of(tcp(CcKind::NewReno), 300 * MSS);
    assert_eq!(rounds[..4], [10, 20, 40, 80], "rounds: {rounds:?}");
    // After the first round is acknowledged, cwnd = 2·IW.
    let after_round1 = p.snaps.iter().find(|s| s.seq.0 == 10 * MSS).unwrap();
    assert_eq!(after_round1.stats.cwnd, 20 * MSS);
    assert_eq!(p.client.stats().segments_retx, 0);
}

#[test]
fn without_slow_start_each_round_is_one_segment_larger() {
    // The Credence artifact's DCTCP (ns-3.39 with TcpSocketState::m_useSS = false): from the
    // initial window the window grows by congestion avoidance only, one MSS per round.
    for cc in [CcKind::NewReno, dctcp(1.0)] {
        let (p, rounds) = rounds_of(TcpConfig { slow_start: false, ..tcp(cc) }, 300 * MSS);
        // 10 + 11 + ... + 25 = 280 segments in 16 rounds, the last 20 in the 17th.
        let want: Vec<usize> = (10..=25).chain([20]).collect();
        assert_eq!(rounds, want, "{cc:?}");
        assert_eq!(p.client.stats().segments_retx, 0);
    }
}

#[test]
fn an_initial_window_covering_the_transfer_sends_it_all_at_once_then_grows_as_usual() {
    let size = 73 * MSS - 5;
    for cc in [CcKind::NewReno, dctcp(1.0)] {
        let cfg = TcpConfig { init_cwnd_covers_transfer: true, ..tcp(cc) };
        let mut p = pair(cfg, size, 0);
        assert!(p.drive());
        let data = p.data();
        assert_eq!(data.len(), 73);
        assert!(data.iter().all(|e| e.sent == Time::ZERO), "every segment leaves in the first window");
        let (rx_done, tx_done) = closed_form(&p, Time::ZERO, size);
        assert_eq!((p.received_all_at(), p.completed_at()), (Some(rx_done), Some(tx_done)));
    }
    // Without it: the first window is init_cwnd_pkts (10) segments.
    let mut p = pair(tcp(CcKind::NewReno), size, 0);
    p.latency = Dur::from_us(100);
    assert!(p.drive());
    assert_eq!(p.data().iter().filter(|e| e.sent == Time::ZERO).count(), 10);
    // A transfer smaller than init_cwnd_pkts keeps the configured window (what the cwnd reads).
    let cfg = TcpConfig { init_cwnd_covers_transfer: true, ..tcp(CcKind::NewReno) };
    let p = pair(cfg.clone(), 3 * MSS, 0);
    assert_eq!(p.client.stats().cwnd, 10 * MSS);
    // A huge transfer's first window stops at the cap (a driver queues it all at once).
    let p = pair(cfg, 1 << 40, 0);
    assert_eq!(p.client.stats().cwnd, u64::from(crate::tcp::MAX_COVERING_WINDOW_PKTS) * MSS);
}

#[test]
fn handshake_syn_synack_then_data_costs_one_extra_rtt() {
    let size = 10 * MSS - 100;
    let mut plain = pair(tcp(dctcp(1.0)), size, 0);
    assert!(plain.drive());
    let mut p = pair(TcpConfig { handshake: true, ..tcp(dctcp(1.0)) }, size, 0);
    assert!(p.drive());
    let first = p.trace[0];
    assert_eq!((first.dir, first.seg.flags, first.seg.len), (Dir::ToServer, Flags::SYN, 0));
    assert_eq!(first.seg.ecn, Ecn::NotEct);
    let synack = p.trace[1];
    assert_eq!(synack.dir, Dir::ToClient);
    assert_eq!(synack.seg.flags, Flags::SYN.with(Flags::ACK));
    assert_eq!(synack.seg.ts_echo_ps, first.seg.ts_ps);
    assert!(p.trace[2..].iter().all(|e| !e.seg.flags.contains(Flags::SYN)));
    // Data starts when the SYN-ACK arrives: one handshake RTT of two 40 B segments.
    let rtt = (p.latency + p.tx(0)) * 2;
    assert_eq!(p.data()[0].sent, Time::ZERO + rtt);
    let (rx_done, tx_done) = closed_form(&p, Time::ZERO + rtt, size);
    assert_eq!(p.received_all_at(), Some(rx_done));
    assert_eq!(p.completed_at(), Some(tx_done));
    assert_eq!(tx_done.since(plain.completed_at().unwrap()), rtt);
    // The SYN-ACK gave the first RTT sample.
    assert!(p.client.stats().srtt_ps > 0);
}

// ------------------------------------------------------------------------------------------
// Loss recovery
// ------------------------------------------------------------------------------------------

#[test]
fn established_three_dupacks_fast_retransmit_once_halves_cwnd_without_rto() {
    let mut p = pair(tcp(CcKind::NewReno), 100 * MSS, 0);
    p.drop_data.insert(30);
    assert!(p.drive());
    assert!(p.is_complete());
    let s = p.client.stats();
    assert_eq!((s.num_fast_retx, s.num_rtos, s.segments_retx), (1, 0, 1));
    let lost = 30 * MSS;
    let sends = sends_of(&p, lost);
    assert_eq!(sends.len(), 2, "exactly the lost segment is retransmitted");
    for e in p.data() {
        if e.seg.seq != lost {
            assert_eq!(sends_of(&p, e.seg.seq).len(), 1);
        }
    }
    // The retransmission leaves when the third duplicate ACK arrives (the fourth ACK
    // acknowledging up to the hole: the first one is the regular ACK of segment 29).
    let arrivals = ack_arrivals(&p, lost);
    assert!(arrivals.len() >= 4);
    assert_eq!(sends[1].sent, arrivals[3]);
    // Entering recovery: ssthresh = FlightSize/2, cwnd = ssthresh + 3 SMSS.
    let i = p.snaps.iter().position(|s| s.stats.num_fast_retx == 1).unwrap();
    let (entry, before) = (p.snaps[i], p.snaps[i - 1]);
    let flight = entry.seq.1 - entry.seq.0;
    let ssthresh = (flight / 2).max(2 * MSS);
    assert_eq!(entry.stats.cwnd, ssthresh + 3 * MSS);
    assert!(flight <= before.stats.cwnd && before.stats.cwnd < flight + MSS);
    // No later loss: ssthresh stays, and recovery exit leaves cwnd <= ssthresh.
    assert_eq!(p.client_conn().cc().unwrap().ssthresh(), ssthresh);
    let exit = p.snaps.iter().find(|s| s.seq.0 > lost).unwrap();
    assert!(exit.stats.cwnd <= ssthresh);
}

/// RFC 3042 limited transmit: a window of three segments whose first is lost raises only two
/// duplicate ACKs. Without limited transmit nothing more may leave and the loss waits for the
/// RTO; with it each duplicate lets one new segment go (the window itself unchanged), whose ACK
/// is the third duplicate: fast retransmit, no timeout.
#[test]
fn limited_transmit_turns_a_small_window_loss_into_a_fast_retransmit() {
    let size = 10 * MSS;
    for lt in [false, true] {
        let cfg = TcpConfig { init_cwnd_pkts: 3, limited_transmit: lt, ..tcp(CcKind::NewReno) };
        let min_rto = cfg.min_rto;
        let mut p = pair(cfg, size, 0);
        p.drop_data.insert(0);
        assert!(p.drive());
        assert!(p.is_complete());
        assert_eq!(p.server.stats().bytes_received, size);
        let s = p.client.stats();
        let dups = ack_arrivals(&p, 0);
        if !lt {
            assert_eq!((s.num_rtos, s.num_fast_retx, s.segments_retx), (1, 0, 1), "limited transmit off");
            assert_eq!(dups.len(), 2, "two duplicates only");
            // Nothing left between the loss and the timeout: the window was full.
            let first_rtx = sends_of(&p, 0)[1].sent;
            assert_eq!(first_rtx, Time::ZERO + min_rto, "the RTO armed with the first segment");
            assert!(p.data().iter().filter(|e| e.sent < first_rtx).all(|e| e.seg.seq < 3 * MSS));
            continue;
        }
        assert_eq!((s.num_rtos, s.num_fast_retx, s.segments_retx), (0, 1, 1), "limited transmit on");
        // Segments 3 and 4 leave on the first and second duplicate ACK, the retransmission of
        // segment 0 on the third (the ACK of segment 3); segment 5 waits for recovery.
        assert_eq!(sends_of(&p, 3 * MSS)[0].sent, dups[0]);
        assert_eq!(sends_of(&p, 4 * MSS)[0].sent, dups[1]);
        let rtx = sends_of(&p, 0);
        assert_eq!(rtx.len(), 2);
        assert_eq!(rtx[1].sent, dups[2]);
        assert!(sends_of(&p, 5 * MSS)[0].sent > dups[1]);
        assert!(p.data().iter().filter(|e| e.sent <= dups[1]).all(|e| e.seg.seq <= 4 * MSS));
        // The congestion window itself did not grow on the duplicates.
        for snap in p.snaps.iter().filter(|x| x.stats.num_fast_retx == 0 && x.seq.0 == 0) {
            assert_eq!(snap.stats.cwnd, 3 * MSS);
        }
    }
}

/// Limited transmit adds exactly `dupack_threshold - 1` segments, one per duplicate ACK short
/// of fast retransmit (none with a threshold of one).
#[test]
fn limited_transmit_is_bounded_by_the_threshold() {
    for threshold in [1u32, 2, 3, 5] {
        let cfg = TcpConfig { init_cwnd_pkts: 4, limited_transmit: true, dupack_threshold: threshold, ..tcp(CcKind::NewReno) };
        let mut p = pair(cfg, 40 * MSS, 0);
        p.drop_data.insert(0);
        assert!(p.drive());
        assert!(p.is_complete());
        let dups = ack_arrivals(&p, 0);
        let rtx = sends_of(&p, 0)[1].sent;
        // The fast retransmit leaves on duplicate number `threshold`; before it, one new segment
        // on each of the duplicates before that, and nothing else beyond the window of 4.
        assert_eq!(rtx, dups[threshold as usize - 1], "threshold {threshold}");
        let early: Vec<Time> = p.data().iter().filter(|e| e.sent < rtx && e.seg.seq >= 4 * MSS).map(|e| e.sent).collect();
        assert_eq!(early, dups[..threshold as usize - 1], "threshold {threshold}");
        assert_eq!(p.client.stats().num_rtos, 0, "threshold {threshold}");
    }
}

#[test]
fn fast_recovery_partial_ack_retransmits_second_loss_without_rto() {
    let mut p = pair(tcp(CcKind::NewReno), 100 * MSS, 0);
    p.drop_data.extend([30, 35]);
    assert!(p.drive());
    assert!(p.is_complete());
    let s = p.client.stats();
    assert_eq!((s.num_fast_retx, s.num_rtos, s.segments_retx), (1, 0, 2));
    assert_eq!(sends_of(&p, 30 * MSS).len(), 2);
    let second = sends_of(&p, 35 * MSS);
    assert_eq!(second.len(), 2);
    // RFC 6582 (5): the partial ACK (up to the second hole) triggers its retransmission.
    let partial = ack_arrivals(&p, 35 * MSS);
    assert_eq!(second[1].sent, partial[0]);
    assert_eq!(p.server.stats().bytes_received, 100 * MSS);
}

#[test]
fn established_tail_loss_rto_fires_after_min_rto_and_resets_cwnd_to_one_mss() {
    let cfg = tcp(CcKind::NewReno);
    let min_rto = cfg.min_rto;
    let mut p = pair(cfg, 20 * MSS, 0);
    p.drop_data.insert(19);
    assert!(p.drive());
    assert!(p.is_complete());
    let s = p.client.stats();
    assert_eq!((s.num_rtos, s.num_fast_retx, s.segments_retx), (1, 0, 1));
    let sends = sends_of(&p, 19 * MSS);
    assert_eq!(sends.len(), 2);
    assert!(sends[1].seg.flags.contains(Flags::FIN));
    // RFC 6298 (5.3): the timer was restarted by the last ACK of new data.
    let last_new_ack = *ack_arrivals(&p, 19 * MSS).last().unwrap();
    assert_eq!(sends[1].sent, last_new_ack + min_rto);
    // RFC 5681 (4): cwnd = 1 SMSS, ssthresh = max(FlightSize/2, 2 SMSS).
    let rto = p.snaps.iter().find(|s| s.stats.num_rtos == 1).unwrap();
    assert_eq!(rto.stats.cwnd, MSS);
    assert_eq!(p.client_conn().cc().unwrap().ssthresh(), 2 * MSS);
}

#[test]
fn established_repeated_rto_backs_off_exponentially_up_to_max_rto() {
    let cfg = TcpConfig { max_rto: Dur::from_ms(50), ..tcp(CcKind::NewReno) };
    let mut p = pair(cfg, 20 * MSS, 0);
    // The original and four retransmissions of the last segment are lost.
    p.drop_data.extend(19..=23);
    assert!(p.drive());
    assert!(p.is_complete());
    let sends = sends_of(&p, 19 * MSS);
    assert_eq!(sends.len(), 6);
    let last_new_ack = *ack_arrivals(&p, 19 * MSS).last().unwrap();
    let mut times = vec![last_new_ack];
    times.extend(sends[1..].iter().map(|e| e.sent));
    let gaps: Vec<Dur> = times.windows(2).map(|w| w[1].since(w[0])).collect();
    let ms = Dur::from_ms;
    assert_eq!(gaps, [ms(10), ms(20), ms(40), ms(50), ms(50)]);
    assert_eq!(p.client.stats().num_rtos, 5);
    // The ACK of the retransmission is a fresh sample: the backoff is gone.
    assert_eq!(p.client_conn().rtt().unwrap().rto(), ms(10));
}

#[test]
fn a_sender_without_progress_gives_up_at_the_timeout_after_max_retries() {
    // A run always ends (issue 8): every copy of the last segment is lost, so after the
    // original and `max_retries` timeout retransmissions the next timeout gives up.
    let cfg = TcpConfig { max_rto: Dur::from_ms(40), max_retries: 3, ..tcp(CcKind::NewReno) };
    let mut p = pair(cfg, 20 * MSS, 0);
    p.loss_to_server = 0.0;
    p.drop_data.extend(19..1000);
    assert!(p.drive(), "the sender must stop by itself");
    assert!(!p.is_complete());
    let sends = sends_of(&p, 19 * MSS);
    assert_eq!(sends.len(), 4, "the original and 3 retransmissions");
    let last_new_ack = *ack_arrivals(&p, 19 * MSS).last().unwrap();
    let ms = Dur::from_ms;
    // Timeouts at +10, +30, +70 (retransmissions), then +110 ms: the give-up.
    let (at, ev) = p.client_events[0];
    assert_eq!(ev, Event::SenderDone { outcome: crate::Outcome::GivenUp, confirmed: false });
    assert_eq!(at, last_new_ack + ms(10) + ms(20) + ms(40) + ms(40));
    assert_eq!(p.client.stats().num_rtos, 4);
    assert_eq!(p.client.poll_timeout(), None, "a sender that gave up has no timer");
    assert!(p.server_events.is_empty(), "the receiver never had it all");
}

#[test]
fn progress_resets_the_retry_count() {
    // One segment in flight at a time: segment 0 is lost three times (3 timeouts, the
    // budget of max_retries = 3), then delivered; segment 1 is lost three times too. The
    // transfer completes after 6 timeouts because the new acknowledgment restarted the count.
    let cfg = TcpConfig {
        max_rto: Dur::from_ms(40),
        max_retries: 3,
        init_cwnd_pkts: 1,
        ..tcp(CcKind::NewReno)
    };
    let mut p = pair(cfg, 2 * MSS, 0);
    p.drop_data.extend([0, 1, 2, 4, 5, 6]);
    assert!(p.drive());
    assert!(p.is_complete(), "{:?}", p.client_events);
    assert_eq!(p.client.stats().num_rtos, 6);
    assert_eq!(sends_of(&p, 0).len(), 4);
    assert_eq!(sends_of(&p, MSS).len(), 4);
}

#[test]
fn a_lost_syn_gives_up_too() {
    let cfg = TcpConfig { handshake: true, max_retries: 2, ..tcp(dctcp(1.0)) };
    let mut p = pair(cfg, 5 * MSS, 0);
    p.drop_to_server.extend(0..100);
    assert!(p.drive());
    let syns = p.trace.iter().filter(|e| e.seg.flags == Flags::SYN).count();
    assert_eq!(syns, 3, "the SYN and 2 retransmissions");
    assert!(matches!(p.client_events[..], [(_, Event::SenderDone { outcome: crate::Outcome::GivenUp, .. })]));
}

#[test]
fn syn_sent_lost_syn_retransmitted_on_rto_then_initial_window_is_one_segment() {
    let cfg = TcpConfig { handshake: true, ..tcp(dctcp(1.0)) };
    let init_rto = cfg.init_rto;
    let mut p = pair(cfg, 20 * MSS, 0);
    p.drop_to_server.insert(0);
    assert!(p.drive());
    assert!(p.is_complete());
    let syns: Vec<TraceEntry> =
        p.trace.iter().filter(|e| e.seg.flags == Flags::SYN).copied().collect();
    assert_eq!(syns.len(), 2);
    assert_eq!(syns[0].sent, Time::ZERO);
    assert_eq!(syns[1].sent, Time::ZERO + init_rto);
    assert_eq!(syns[0].arrive, None);
    assert_eq!(p.client.stats().num_rtos, 1);
    // RFC 5681 §3.1: after a lost SYN the initial window is one segment.
    let data = p.data();
    let first_ack = p.acks().iter().find(|e| !e.seg.flags.contains(Flags::SYN)).unwrap().arrive;
    let before_first_ack = data.iter().filter(|e| Some(e.sent) < first_ack).count();
    assert_eq!(before_first_ack, 1);
    assert_eq!(data[0].sent, syns[1].arrive.unwrap() + p.tx(0) + p.latency);
}

#[test]
fn syn_received_duplicate_syn_gets_a_new_syn_ack() {
    let cfg = TcpConfig { handshake: true, ..tcp(CcKind::NewReno) };
    let mut p = pair(cfg, 5 * MSS, 0);
    p.drop_to_client.insert(0); // the first SYN-ACK
    assert!(p.drive());
    assert!(p.is_complete());
    let synacks = p.acks().iter().filter(|e| e.seg.flags.contains(Flags::SYN)).count();
    assert_eq!(synacks, 2);
    assert_eq!(p.client.stats().num_rtos, 1);
}

// ------------------------------------------------------------------------------------------
// DCTCP
// ------------------------------------------------------------------------------------------

/// Checks that every ECN cut (a) happened only after SND.UNA passed SND.NXT at the previous
/// cut and (b) set cwnd to max(cwnd·(1 − alpha/2), SMSS) with the alpha of that ACK.
/// Returns the number of cuts.
fn check_cuts(p: &Pair) -> u64 {
    let mut prev_cut_snd_max: Option<u64> = None;
    let mut cuts = 0;
    // The state before the first ACK: the initial window, no cut.
    let mut first = p.snaps[0];
    first.stats.num_ecn_cuts = 0;
    first.stats.cwnd = 10 * MSS;
    let snaps: Vec<_> = std::iter::once(first).chain(p.snaps.iter().copied()).collect();
    for w in snaps.windows(2) {
        let (before, s) = (w[0], w[1]);
        if s.stats.num_ecn_cuts == before.stats.num_ecn_cuts {
            continue;
        }
        cuts += 1;
        assert_eq!(s.stats.num_ecn_cuts, before.stats.num_ecn_cuts + 1);
        if let Some(m) = prev_cut_snd_max {
            assert!(s.seq.0 > m, "second cut within one window: una {} <= {}", s.seq.0, m);
        }
        prev_cut_snd_max = Some(s.seq.2);
        assert_eq!(s.stats.cwnd, Dctcp::cut_window(before.stats.cwnd, s.stats.alpha, MSS));
    }
    cuts
}

/// The distinct alpha values the sender went through, in order.
fn alphas(p: &Pair) -> Vec<f64> {
    let mut v: Vec<f64> = vec![];
    for s in &p.snaps {
        if v.last() != Some(&s.stats.alpha) {
            v.push(s.stats.alpha);
        }
    }
    v
}

#[test]
fn dctcp_all_marked_alpha_converges_to_one_and_cuts_once_per_window() {
    let mut p = pair(tcp(dctcp(0.0)), 2000 * MSS, 0);
    p.mark = Mark::EveryNth(1);
    assert!(p.drive());
    assert!(p.is_complete());
    let a = alphas(&p);
    // Each window, F = 1: alpha <- (1 - g)·alpha + g.
    for w in a.windows(2) {
        assert_eq!(w[1], (1.0 - G) * w[0] + G);
    }
    assert!(a.len() > 100, "{} windows", a.len());
    assert!(*a.last().unwrap() > 0.99);
    let cuts = check_cuts(&p);
    assert!(cuts > 100);
    assert_eq!(cuts, p.client.stats().num_ecn_cuts);
    assert_eq!(p.client.stats().segments_retx, 0);
    assert_eq!(p.server.stats().num_ecn, 2000);
}

#[test]
fn dctcp_no_marks_alpha_decays_by_one_minus_g_per_window() {
    let mut p = pair(tcp(dctcp(1.0)), 300 * MSS, 0);
    assert!(p.drive());
    let a = alphas(&p);
    assert_eq!(a[0], 1.0);
    for w in a.windows(2) {
        assert_eq!(w[1], (1.0 - G) * w[0]);
    }
    assert!(a.len() >= 4, "{a:?}");
    assert_eq!(p.client.stats().num_ecn_cuts, 0);
}

#[test]
fn dctcp_marked_fraction_f_gives_alpha_near_f() {
    let mut p = pair(tcp(dctcp(1.0)), 20_000 * MSS, 0);
    p.mark = Mark::EveryNth(4);
    assert!(p.drive());
    assert!(p.is_complete());
    let alpha = p.client.stats().alpha;
    assert!((alpha - 0.25).abs() < 0.05, "alpha = {alpha}");
    // Steady state: the alpha values of the last half of the run stay near F.
    let a = alphas(&p);
    for x in &a[a.len() / 2..] {
        assert!((x - 0.25).abs() < 0.08, "alpha = {x}");
    }
    assert!(check_cuts(&p) > 100);
}

#[test]
fn dctcp_queue_threshold_marking_reaches_line_rate_without_loss() {
    let mut p = pair(tcp(dctcp(1.0)), 5_000 * MSS, 0);
    p.mark = Mark::QueueAbove(20 * 1500);
    p.latency = Dur::from_us(5);
    assert!(p.drive());
    assert!(p.is_complete());
    let s = p.client.stats();
    assert!(s.num_ecn_cuts > 10, "{s:?}");
    // A single long flow keeps the bottleneck busy: within 1% of back-to-back serialization.
    let ideal = Time::ZERO + p.tx(MSS) * 5_000 + p.latency * 2 + p.tx(0);
    assert!(p.completed_at().unwrap() < ideal + Dur(ideal.ps() / 100), "{:?}", p.completed_at());
    assert_eq!(s.segments_retx, 0);
    check_cuts(&p);
}

#[test]
fn dctcp_acks_are_ect_and_a_marked_ack_changes_nothing() {
    // A queue may mark DCTCP's ACKs (they are ECT, as in Linux and ns-3): the sender must not
    // read that as congestion, so a transfer whose every ACK arrives CE runs as one whose none do.
    let run = |mark: Mark| {
        let mut p = pair(tcp(dctcp(1.0)), 40 * MSS, 0);
        p.mark = mark;
        assert!(p.drive());
        p
    };
    let (plain, marked) = (run(Mark::Never), run(Mark::Acks));
    assert!(marked.acks().iter().all(|e| e.seg.ecn == Ecn::Ce));
    assert!(plain.acks().iter().all(|e| e.seg.ecn == Ecn::Ect0), "SYN-ACK and ACKs are ECT(0)");
    let timeline = |p: &Pair| p.data().iter().map(|e| (e.sent, e.seg.seq, e.seg.ecn)).collect::<Vec<_>>();
    assert_eq!(timeline(&plain), timeline(&marked));
    assert_eq!(plain.client.stats(), marked.client.stats());
    // Classic TCP keeps its ACKs not-ECT (RFC 3168 §6.1.4), so a queue never marks them.
    let mut p = pair(tcp(CcKind::NewReno), 10 * MSS, 0);
    p.mark = Mark::Acks;
    assert!(p.drive());
    assert!(p.acks().iter().all(|e| e.seg.ecn == Ecn::NotEct));
}

#[test]
fn dctcp_receiver_echoes_ece_exactly_on_acks_of_marked_segments() {
    let marked = BTreeSet::from([3, 7, 8]);
    let mut p = pair(tcp(dctcp(1.0)), 10 * MSS, 0);
    p.mark = Mark::DataIndices(marked.clone());
    assert!(p.drive());
    let data = p.data();
    for (i, e) in data.iter().enumerate() {
        assert_eq!(e.seg.ecn, if marked.contains(&i) { Ecn::Ce } else { Ecn::Ect0 });
    }
    let acks = p.acks();
    assert_eq!(acks.len(), 10);
    for (k, e) in acks.iter().enumerate() {
        assert_eq!(e.seg.ack, (k as u64 + 1) * MSS);
        assert_eq!(e.seg.flags.contains(Flags::ECE), marked.contains(&k), "ACK {k}");
        // ECT, as Linux and ns-3 send DCTCP's ACKs (receiver.rs).
        assert_eq!(e.seg.ecn, Ecn::Ect0);
        assert_eq!(e.seg.len, 0);
        // No delayed ACK: each ACK echoes the timestamp of its own segment.
        assert_eq!(e.seg.ts_echo_ps, data[k].seg.ts_ps);
    }
    assert_eq!(p.server.stats().num_ecn, 3);
    let s = p.client.stats();
    assert_eq!(s.num_ecn, 3);
    // The first ECE halves cwnd (alpha = 1); 7 and 8 are in the same window.
    assert_eq!(s.num_ecn_cuts, 1);
}

#[test]
fn dctcp_delayed_ack_ce_state_change_sends_immediate_ack_with_old_state() {
    let cfg = TcpConfig {
        delayed_ack: Some(DelayedAck { count: 2, timeout: Dur::from_ms(1) }),
        ..tcp(dctcp(1.0))
    };
    let mut p = pair(cfg, 10 * MSS, 0);
    p.mark = Mark::DataIndices(BTreeSet::from([3, 4, 5]));
    assert!(p.drive());
    assert!(p.is_complete());
    let got: Vec<(u64, bool)> =
        p.acks().iter().map(|e| (e.seg.ack / MSS, e.seg.flags.contains(Flags::ECE))).collect();
    // 0,1 -> ACK(2); 2 pending; 3 is CE: ACK(3) with the old state 0, then 3,4 -> ACK(5)
    // with ECE; 5 pending; 6 unmarked: ACK(6) with ECE; 6,7 -> ACK(8); 8 pending, 9 (FIN).
    let want = [(2, false), (3, false), (5, true), (6, true), (8, false), (10, false)];
    assert_eq!(got, want);
}

#[test]
fn delayed_ack_timer_acks_a_lone_segment_after_timeout() {
    let timeout = Dur::from_ms(1);
    let cfg = TcpConfig {
        delayed_ack: Some(DelayedAck { count: 2, timeout }),
        init_cwnd_pkts: 1,
        ..tcp(CcKind::NewReno)
    };
    let mut p = pair(cfg, 3 * MSS, 0);
    assert!(p.drive());
    assert!(p.is_complete());
    let acks = p.acks();
    assert_eq!(acks.iter().map(|e| e.seg.ack).collect::<Vec<_>>(), [MSS, 3 * MSS]);
    assert_eq!(acks[0].sent, p.data()[0].arrive.unwrap() + timeout);
}

#[test]
fn new_reno_sends_not_ect_and_ignores_ece() {
    // On the wire: Not-ECT, so a marking switch never marks it.
    let mut p = pair(tcp(CcKind::NewReno), 50 * MSS, 0);
    p.mark = Mark::EveryNth(1);
    assert!(p.drive());
    assert!(p.data().iter().all(|e| e.seg.ecn == Ecn::NotEct));
    assert_eq!(p.server.stats().num_ecn, 0);
    assert!(p.acks().iter().all(|e| !e.seg.flags.contains(Flags::ECE)));

    // Directly: ACKs with ECE move cwnd exactly like ACKs without.
    let cfg = tcp(CcKind::NewReno);
    let mut plain = Conn::sender(&cfg, 1, Bytes(100 * MSS), Time::ZERO);
    let mut echoed = Conn::sender(&cfg, 1, Bytes(100 * MSS), Time::ZERO);
    for k in 1..=30u64 {
        let now = Time::from_us(k);
        while plain.poll_transmit(now).is_some() {}
        while echoed.poll_transmit(now).is_some() {}
        let ack = SegmentRepr { conn: 1, ack: k * MSS, flags: Flags::ACK, ..Default::default() };
        let ece = SegmentRepr { flags: Flags::ACK.with(Flags::ECE), ..ack };
        plain.handle_segment(now, &ack);
        echoed.handle_segment(now, &ece);
        assert_eq!(plain.stats().cwnd, echoed.stats().cwnd);
    }
    assert_eq!(echoed.stats().num_ecn, 30);
    assert_eq!(echoed.stats().num_ecn_cuts, 0);
}

// ------------------------------------------------------------------------------------------
// Receiver, reordering, random loss, determinism
// ------------------------------------------------------------------------------------------

#[test]
fn receiver_out_of_order_sends_immediate_dup_ack_and_echoes_per_rfc7323() {
    let cfg = tcp(dctcp(1.0));
    let mut r = Conn::receiver(&cfg, 1);
    let seg = |k: u64, ts: u64| SegmentRepr {
        conn: 1,
        seq: k * MSS,
        len: MSS as u32,
        flags: Flags::ACK,
        ecn: Ecn::Ect0,
        ts_ps: ts,
        ..Default::default()
    };
    let mut out = vec![];
    for (k, ts) in [(0, 100), (2, 300), (2, 350), (1, 400)] {
        r.handle_segment(Time(ts), &seg(k, ts));
        while let Some(a) = r.poll_transmit(Time(ts)) {
            out.push((a.ack / MSS, a.ts_echo_ps));
        }
    }
    // Out-of-order data and its duplicate are ACKed at once with the last in-order echo;
    // the hole-filling segment's ACK echoes its own timestamp.
    assert_eq!(out, [(1, 100), (1, 100), (1, 100), (3, 400)]);
    assert_eq!(r.stats().bytes_received, 3 * MSS);
    assert_eq!(r.poll_event(), None, "no FIN seen yet");
}

#[test]
fn reorder_by_two_positions_causes_no_retransmission() {
    let mut p = pair(tcp(CcKind::NewReno), 50 * MSS, 0);
    let t = p.tx(MSS);
    p.delay_data = BTreeMap::from([(5, Dur(t.ps() * 5 / 2))]);
    assert!(p.drive());
    assert!(p.is_complete());
    let d = p.data();
    assert!(d[5].arrive > d[7].arrive && d[5].arrive < d[8].arrive, "5 overtaken by 6, 7");
    assert_eq!(ack_arrivals(&p, 5 * MSS).len(), 3, "one ACK and two duplicates");
    assert_eq!(p.client.stats().segments_retx, 0);
}

#[test]
fn reorder_by_three_positions_triggers_fast_retransmit() {
    let mut p = pair(tcp(CcKind::NewReno), 50 * MSS, 0);
    let t = p.tx(MSS);
    p.delay_data = BTreeMap::from([(5, Dur(t.ps() * 7 / 2))]);
    assert!(p.drive());
    assert!(p.is_complete());
    // The third duplicate ACK (fourth ACK up to segment 5) retransmits segment 5.
    let first_retx = p.data()[10..].iter().find(|e| e.seg.seq < 10 * MSS).copied().unwrap();
    assert_eq!(first_retx.seg.seq, 5 * MSS);
    assert_eq!(first_retx.sent, ack_arrivals(&p, 5 * MSS)[3]);
    // Without SACK or a spurious-retransmission undo, NewReno then walks the window with
    // partial-ACK retransmissions (RFC 6582 §3.2 (5)); the transfer is not harmed.
    assert!(p.client.stats().num_fast_retx >= 1);
    assert_eq!(p.client.stats().num_rtos, 0);
}

fn lossy(cc: CcKind, seed: u64, loss: f64) -> Pair {
    let size = 300 * MSS + 77;
    // Limited transmit on every third seed and SACK on two others of each three, so that
    // they meet loss, reordering and marks too.
    let cfg = TcpConfig {
        handshake: seed & 1 == 0,
        limited_transmit: seed.is_multiple_of(3),
        sack: seed % 3 != 1,
        ..tcp(cc)
    };
    let mut p = pair(cfg, size, seed);
    p.loss_to_server = loss;
    p.loss_to_client = loss;
    p.reorder = 0.05;
    p.reorder_delay = Dur::from_us(3);
    p.mark = Mark::Prob(0.1);
    p
}

#[test]
fn random_loss_always_completes_with_every_byte() {
    for cc in [CcKind::NewReno, dctcp(1.0)] {
        for seed in 1..=6 {
            for loss in [0.01, 0.03, 0.05] {
                let mut p = lossy(cc, seed, loss);
                assert!(p.drive_bounded(200_000), "livelock: {cc:?} seed {seed} loss {loss}");
                assert!(p.is_complete(), "{cc:?} seed {seed} loss {loss}");
                assert_eq!(p.server.stats().bytes_received, 300 * MSS + 77);
                let lost = p.trace.iter().filter(|e| e.arrive.is_none()).count();
                assert!(lost > 0 || loss < 0.02);
            }
        }
    }
}

/// Runs a transfer of `300 * MSS + 77` bytes over 12 seeds x 1%, 3% and 5% loss both ways
/// with 5% reordering, once with `cfg(false)` and once with `cfg(true)` (and `mark`), asserting
/// that each completes with every byte and passes `check`; returns the timeouts and the
/// completion times summed, without and with.
fn lossy_sums(cfg: impl Fn(u64, bool) -> TcpConfig, mark: Mark, check: impl Fn(&Pair)) -> ([u64; 2], [u64; 2]) {
    let (mut rtos, mut done) = ([0u64; 2], [0u64; 2]);
    for seed in 1..=12 {
        for loss in [0.01, 0.03, 0.05] {
            for (i, on) in [false, true].into_iter().enumerate() {
                let size = 300 * MSS + 77;
                let mut p = pair(cfg(seed, on), size, seed);
                p.loss_to_server = loss;
                p.loss_to_client = loss;
                p.reorder = 0.05;
                p.reorder_delay = Dur::from_us(3);
                p.mark = mark.clone();
                assert!(p.drive_bounded(200_000), "livelock: seed {seed} loss {loss} on {on}");
                assert!(p.is_complete(), "seed {seed} loss {loss} on {on}");
                assert_eq!(p.server.stats().bytes_received, size);
                check(&p);
                rtos[i] += p.client.stats().num_rtos;
                done[i] += p.completed_at().expect("complete").ps();
            }
        }
    }
    (rtos, done)
}

/// SACK against NewReno on the same lossy paths (1% to 5% loss both ways, reordering, marks):
/// every transfer completes with every byte either way, and SACK, which repairs several
/// losses of one window in one round trip, times out less and finishes sooner overall.
#[test]
fn random_loss_with_sack_completes_and_recovers_sooner() {
    for cc in [CcKind::NewReno, dctcp(1.0)] {
        let (rtos, done) = lossy_sums(|_, sack| TcpConfig { sack, ..tcp(cc) }, Mark::Never, |_| {});
        assert!(rtos[1] < rtos[0], "{cc:?}: timeouts without / with SACK {rtos:?}");
        assert!(done[1] < done[0], "{cc:?}: completion sums without / with SACK {done:?}");
    }
}

/// RFC 2018 §4: a duplicate ACK's first block holds the segment that triggered it, the
/// others repeat the blocks reported before; blocks stop once the holes are filled.
#[test]
fn sack_blocks_report_the_triggering_segment_first() {
    let cfg = TcpConfig { sack: true, ..tcp(CcKind::NewReno) };
    let mut p = pair(cfg, 20 * MSS, 0);
    p.drop_data.extend([2, 5]);
    assert!(p.drive());
    assert!(p.is_complete());
    let acks = p.acks();
    // The ACKs of segments 3 and 4 report (3, 5); those of 6 and 7 lead with the block
    // holding 6, then (3, 5).
    let blocks = |e: &TraceEntry| e.sack.map(|b| b.blocks().to_vec()).unwrap_or_default();
    let dups: Vec<_> = acks.iter().filter(|e| e.seg.ack == 2 * MSS).map(blocks).collect();
    assert_eq!(dups[0], vec![]);
    assert_eq!(dups[1], vec![(3 * MSS, 4 * MSS)]);
    assert_eq!(dups[2], vec![(3 * MSS, 5 * MSS)]);
    assert_eq!(dups[3], vec![(6 * MSS, 7 * MSS), (3 * MSS, 5 * MSS)]);
    assert_eq!(dups[4], vec![(6 * MSS, 8 * MSS), (3 * MSS, 5 * MSS)]);
    // In-order ACKs before the loss carry none, nor does the last one.
    assert!(acks.iter().filter(|e| e.seg.ack < 2 * MSS).all(|e| e.sack.is_none()));
    assert!(acks.last().is_some_and(|e| e.seg.ack == 20 * MSS && e.sack.is_none()));
    // Without SACK no ACK carries blocks.
    let mut p = pair(tcp(CcKind::NewReno), 20 * MSS, 0);
    p.drop_data.extend([2, 5]);
    assert!(p.drive());
    assert!(p.acks().iter().all(|e| e.sack.is_none()));
}

/// Three losses in one window: NewReno repairs one per round trip (a partial ACK names the
/// next), RFC 6675 repairs all three within the first round trip of recovery, each as
/// soon as enough is SACKed above it, and finishes sooner; neither times out.
#[test]
fn sack_repairs_several_losses_of_a_window_in_one_round_trip() {
    let size = 100 * MSS;
    let mut finish = Vec::new();
    for sack in [false, true] {
        let cfg = TcpConfig { sack, ..tcp(CcKind::NewReno) };
        let mut p = pair(cfg, size, 0);
        p.drop_data.extend([30, 33, 36]);
        assert!(p.drive());
        assert!(p.is_complete());
        assert_eq!(p.server.stats().bytes_received, size);
        let s = p.client.stats();
        assert_eq!((s.num_fast_retx, s.num_rtos, s.segments_retx), (1, 0, 3), "sack {sack}");
        let rtx: Vec<Time> = [30, 33, 36].iter().map(|&k| sends_of(&p, k * MSS)[1].sent).collect();
        // The first partial ACK: the ACK of the first retransmission.
        let partial = ack_arrivals(&p, 33 * MSS)[0];
        if sack {
            assert!(rtx[1] < partial && rtx[2] < partial, "all repaired before the first partial ACK: {rtx:?} {partial:?}");
        } else {
            assert_eq!(rtx[1], partial, "NewReno waits for the partial ACK");
            assert!(rtx[2] > partial);
        }
        finish.push(p.completed_at().expect("complete"));
    }
    assert!(finish[1] < finish[0], "{finish:?}");
}

/// After a timeout the scoreboard is cleared (RFC 2018 §8), but go-back-N skips what ACKs
/// report held since (RFC 6675 §5.1): a segment the receiver already has is not sent again.
#[test]
fn sack_go_back_n_skips_what_the_receiver_holds() {
    for sack in [false, true] {
        let cfg = TcpConfig { sack, init_cwnd_pkts: 4, ..tcp(CcKind::NewReno) };
        let mut p = pair(cfg, 12 * MSS, 0);
        // Segments 0 and 2 of a window of four: two duplicates, too few SACKed bytes to call
        // anything lost: the timer fires.
        p.drop_data.extend([0, 2]);
        assert!(p.drive());
        assert!(p.is_complete());
        assert_eq!(p.client.stats().num_rtos, 1, "sack {sack}");
        let resent = sends_of(&p, 3 * MSS).len();
        assert_eq!(resent, if sack { 1 } else { 2 }, "segment 3 sent {resent} times, sack {sack}");
        assert_eq!(sends_of(&p, 2 * MSS).len(), 2);
    }
}

/// The sender takes only what lies in its outstanding data from a block: blocks below
/// `snd_una`, beyond `snd_max`, inverted or empty change nothing, and a flood of one-byte
/// blocks is bounded.
#[test]
fn sack_sender_ignores_blocks_outside_its_data() {
    let cfg = TcpConfig { sack: true, init_cwnd_pkts: 10, ..tcp(CcKind::NewReno) };
    let mut c = Conn::sender(&cfg, 1, Bytes(100 * MSS), Time::ZERO);
    while c.poll_transmit(Time::ZERO).is_some() {}
    let ack = |ack: u64| SegmentRepr { conn: 1, ack, flags: Flags::ACK, ..SegmentRepr::default() };
    let mut t = Time::ZERO;
    for b in [(0, 0), (5 * MSS, 2 * MSS), (20 * MSS, 30 * MSS), (0, MSS), (u64::MAX - 1, u64::MAX)] {
        let mut blocks = wire::SackBlocks::default();
        blocks.push(b);
        t += Dur::from_us(1);
        c.handle_segment_ext(t, &ack(MSS), None, Some(&blocks));
        while c.poll_transmit(t).is_some() {}
    }
    // None of them counted as news, so these were not duplicate ACKs that call a loss.
    assert_eq!(c.stats().num_fast_retx, 0);
    for i in 0..5000u64 {
        let mut blocks = wire::SackBlocks::default();
        blocks.push((2 * MSS + 2 * i + 1, 2 * MSS + 2 * i + 2));
        t += Dur::from_us(1);
        c.handle_segment_ext(t, &ack(2 * MSS), None, Some(&blocks));
        while c.poll_transmit(t).is_some() {}
    }
    assert!(c.stats().num_fast_retx <= 1);
}

#[test]
fn same_seed_same_trace_different_seed_different_trace() {
    let run = |seed| {
        let mut p = lossy(dctcp(1.0), seed, 0.03);
        assert!(p.drive());
        (p.trace, p.client_events, p.server_events)
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7).0, run(9).0);
}

#[test]
fn spurious_early_handle_timeout_changes_nothing() {
    for (cc, seed) in [(dctcp(1.0), 3), (CcKind::NewReno, 4)] {
        let mut calm = lossy(cc, seed, 0.03);
        let mut poked = lossy(cc, seed, 0.03);
        poked.spurious_timeouts = true;
        assert!(calm.drive() && poked.drive());
        assert!(calm.is_complete());
        assert_eq!(calm.trace, poked.trace);
        assert_eq!(calm.client_events, poked.client_events);
        assert_eq!(calm.server_events, poked.server_events);
    }
}

// ------------------------------------------------------------------------------------------
// PowerTCP
// ------------------------------------------------------------------------------------------

/// The harness's default pipes (10 Gb/s, 10 µs each way).
const LINE: Bps = Bps::from_gbps(10);

/// Base RTT of the harness's path: a full segment one way, an ACK back, no queueing.
fn harness_base_rtt() -> Dur {
    let wire = |len: u64| LINE.tx_time(Bytes(len + HEADER_BYTES));
    Dur::from_us(20) + wire(MSS) + wire(0)
}

/// The bottleneck BDP (wire bytes) of the harness's path.
fn harness_bdp() -> u64 {
    LINE.bytes_in(harness_base_rtt()).get()
}

/// PowerTCP for the harness's path with NIC rate `host` and additive increase `beta_bytes`
/// (`None`: the paper's default for `host`).
fn power_tcp(host: Bps, beta_bytes: Option<u64>) -> CcKind {
    let cc = CcKind::power_tcp_default(harness_base_rtt(), host);
    match (cc, beta_bytes) {
        (CcKind::PowerTcp { gamma, base_rtt, host_rate, .. }, Some(beta_bytes)) => {
            CcKind::PowerTcp { gamma, beta_bytes, base_rtt, host_rate }
        }
        (cc, _) => cc,
    }
}

fn beta_of(cc: CcKind) -> u64 {
    match cc {
        CcKind::PowerTcp { beta_bytes, .. } => beta_bytes,
        _ => unreachable!(),
    }
}

/// What the bottleneck did in `[t1, t2)`: wire bytes delivered per flow, and the queue each
/// data segment left behind at the bottleneck (its INT `qlen`).
struct Interval {
    wire_bytes: Vec<u64>,
    queue: Vec<u64>,
    dur: Dur,
}

impl Interval {
    fn of(p: &Pair, num_flows: usize, t1: Time, t2: Time) -> Interval {
        let mut wire_bytes = vec![0; num_flows];
        let mut queue = vec![];
        for (f, bytes) in wire_bytes.iter_mut().enumerate() {
            for e in p.data_of(f) {
                if e.arrive.is_some_and(|a| a >= t1 && a < t2) {
                    *bytes += u64::from(e.seg.len) + HEADER_BYTES;
                    queue.push(e.int.expect("INT flow").hops()[0].qlen_bytes);
                }
            }
        }
        Interval { wire_bytes, queue, dur: t2.since(t1) }
    }

    /// Fraction of the line rate the bottleneck carried.
    fn utilization(&self) -> f64 {
        let bits = self.wire_bytes.iter().sum::<u64>() as f64 * 8.0;
        bits / (LINE.get() as f64 * self.dur.as_secs_f64())
    }

    fn mean_queue(&self) -> f64 {
        self.queue.iter().sum::<u64>() as f64 / self.queue.len() as f64
    }

    fn max_queue(&self) -> u64 {
        *self.queue.iter().max().unwrap()
    }

    /// Jain's fairness index of the per-flow throughputs.
    fn jain(&self) -> f64 {
        let x: Vec<f64> = self.wire_bytes.iter().map(|&b| b as f64).collect();
        let sum: f64 = x.iter().sum();
        sum * sum / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>())
    }
}

/// The main client's PowerTCP state.
fn power_state(p: &Pair) -> &PowerTcp {
    match p.client_conn().cc() {
        Some(AnyCc::PowerTcp(c)) => c,
        cc => panic!("not PowerTCP: {cc:?}"),
    }
}

#[test]
fn power_tcp_defaults_are_the_papers() {
    let tau = Dur::from_us(20);
    let cc = CcKind::power_tcp_default(tau, LINE);
    // γ = 0.9, β = host BDP / 10 (25_000 B / 10).
    let want = CcKind::PowerTcp { gamma: 0.9, beta_bytes: 2_500, base_rtt: tau, host_rate: LINE };
    assert_eq!(cc, want);
    let cfg = tcp(cc);
    assert!(cfg.uses_int() && !cfg.is_ecn_capable());
    assert!(!tcp(CcKind::NewReno).uses_int() && !tcp(dctcp(1.0)).uses_int());
}

#[test]
fn power_tcp_both_sides_want_int_and_data_is_not_ect() {
    let mut p = pair(tcp(power_tcp(LINE, None)), 50 * MSS, 0);
    assert!(p.client.wants_int() && p.server.wants_int());
    assert!(p.drive());
    assert!(p.is_complete());
    assert!(p.data().iter().all(|e| e.seg.ecn == Ecn::NotEct && e.int.is_some()));
    assert!(p.acks().iter().all(|e| e.int.is_some()));
    for cc in [CcKind::NewReno, dctcp(1.0)] {
        let cfg = TransportConfig::Tcp(tcp(cc));
        let tx = Endpoint::sender(&cfg, 1, Bytes(1), Time::ZERO);
        assert!(!tx.wants_int() && !Endpoint::receiver(&cfg, 1).wants_int());
    }
}

#[test]
fn power_tcp_first_window_is_paced_at_cwnd_over_tau() {
    // cwnd = host BDP, so cwnd/τ is the host rate: one payload per `len / rate` apart.
    let mut p = pair(tcp(power_tcp(LINE, None)), 30 * MSS, 0);
    assert!(p.drive());
    let data = p.data();
    let gap = LINE.tx_time(Bytes(MSS));
    let first_ack = p.acks()[0].arrive.unwrap();
    let first: Vec<Time> = data.iter().map(|e| e.sent).take_while(|&t| t < first_ack).collect();
    // Paced, yet window-limited: as many full segments as fit in one BDP leave before the
    // first ACK returns.
    assert_eq!(first.len() as u64, harness_bdp() / MSS);
    for (k, t) in first.iter().enumerate() {
        assert_eq!(*t, Time::ZERO + gap * k as u64, "segment {k}");
    }
    // The first segment met an empty queue; the window is exactly one host BDP.
    assert_eq!(data[0].int.unwrap().hops()[0].qlen_bytes, 0);
    assert_eq!(power_state(&p).max_window(), harness_bdp());
}

#[test]
fn power_tcp_single_flow_holds_one_bdp_with_empty_queue_at_line_rate() {
    // (a) One flow, NIC rate = bottleneck rate: cwnd converges to the BDP, the queue stays
    // empty, the link stays full.
    let bdp = harness_bdp();
    let n = 5_000;
    let mut p = pair(tcp(power_tcp(LINE, None)), n * MSS, 0);
    assert!(p.drive());
    assert!(p.is_complete());
    assert_eq!(p.client.stats().segments_retx, 0);
    let done = p.completed_at().unwrap();
    // Steady state: from 20 RTTs in to the end of the transfer.
    let t1 = Time::ZERO + harness_base_rtt() * 20;
    let i = Interval::of(&p, 1, t1, done - harness_base_rtt());
    assert!(i.utilization() > 0.99, "utilization {}", i.utilization());
    assert!(i.max_queue() <= 2 * (MSS + HEADER_BYTES), "queue {}", i.max_queue());
    assert!(i.mean_queue() < 0.01 * bdp as f64, "mean queue {}", i.mean_queue());
    for s in p.snaps.iter().filter(|s| s.at >= t1) {
        assert!(s.stats.cwnd.abs_diff(bdp) <= MSS, "cwnd {} at {:?}", s.stats.cwnd, s.at);
    }
    // And the whole flow finishes within 2% of back-to-back serialization plus one RTT.
    let ideal = Time::ZERO + p.tx(MSS) * n + harness_base_rtt();
    assert!(done.ps() as f64 <= ideal.ps() as f64 * 1.02, "{done:?} vs {ideal:?}");
}

#[test]
fn power_tcp_single_flow_from_a_faster_nic_converges_to_bdp_plus_beta() {
    // (a) A 40 Gb/s NIC behind the 10 Gb/s bottleneck: the first window (4 BDPs) floods the
    // queue; PowerTCP brings the window to the equilibrium BDP + β, with a standing queue
    // of about β, at line rate.
    let bdp = harness_bdp();
    let cc = power_tcp(Bps::from_gbps(40), Some(bdp / 10));
    let beta = beta_of(cc);
    let mut p = pair(tcp(cc), 5_000 * MSS, 0);
    assert!(p.drive());
    assert!(p.is_complete());
    assert!(p.data().iter().any(|e| e.int.unwrap().hops()[0].qlen_bytes > 2 * bdp), "no flood");
    let done = p.completed_at().unwrap();
    let t1 = Time::ZERO + harness_base_rtt() * 25;
    let i = Interval::of(&p, 1, t1, done - harness_base_rtt());
    assert!(i.utilization() > 0.99, "utilization {}", i.utilization());
    assert!(i.mean_queue() <= (beta + MSS) as f64, "mean queue {} vs β {beta}", i.mean_queue());
    assert!(i.max_queue() <= beta + 2 * (MSS + HEADER_BYTES), "queue {}", i.max_queue());
    let late: Vec<u64> = p.snaps.iter().filter(|s| s.at >= t1).map(|s| s.stats.cwnd).collect();
    let mean = late.iter().sum::<u64>() as f64 / late.len() as f64;
    assert!((mean - (bdp + beta) as f64).abs() < 2.0 * MSS as f64, "mean cwnd {mean}");
    // The power estimate settled near its equilibrium 1 + β/BDP.
    let power = power_state(&p).smoothed_power();
    assert!((power - (1.0 + beta as f64 / bdp as f64)).abs() < 0.1, "Γ_smooth {power}");
}

#[test]
fn power_tcp_two_flows_converge_to_fair_shares_with_small_standing_queue() {
    // (c) Flow 1 runs alone at one BDP; flow 2 joins at 1 ms with one BDP of its own. Within
    // 0.5 ms they share the link fairly with a standing queue of about 2·β.
    let bdp = harness_bdp();
    let cc = power_tcp(LINE, None);
    let beta = beta_of(cc);
    let cfg = tcp(cc);
    let size = 20_000 * MSS;
    let mut p = pair(cfg.clone(), size, 0);
    let join = Time::from_ms(1);
    let f2 = p.add_flow(&TransportConfig::Tcp(cfg), size, join);
    assert!(p.drive());
    assert!(p.is_complete());
    assert_eq!(p.extra[0].client_events.len(), 1);
    assert_eq!(p.extra[0].server.stats().bytes_received, size);
    let first_done = p.completed_at().unwrap().min(p.extra[0].client_events[0].0);
    let i = Interval::of(&p, 2, join + Dur::from_us(500), first_done);
    assert!(i.jain() > 0.99, "Jain {} ({:?})", i.jain(), i.wire_bytes);
    assert!(i.utilization() > 0.99, "utilization {}", i.utilization());
    let want = 2.0 * beta as f64;
    let q = i.mean_queue();
    assert!((q - want).abs() < 0.25 * want, "mean queue {q} vs 2β {want}");
    assert!(i.max_queue() < bdp / 3, "queue {} (BDP {bdp})", i.max_queue());
    // Before flow 2 joined, flow 1 had the link to itself with no queue.
    let alone = Interval::of(&p, 2, Time::from_us(500), join);
    assert!(alone.wire_bytes[f2] == 0 && alone.max_queue() <= 2 * (MSS + HEADER_BYTES));
    assert_eq!(p.client.stats().segments_retx + p.extra[0].client.stats().segments_retx, 0);
}

#[test]
fn power_tcp_eight_flows_share_fairly_with_queue_near_n_beta() {
    // (c) Eight flows start together (8 BDPs of initial windows): the equilibrium of the
    // update law has a standing queue of N·β.
    let cc = power_tcp(LINE, None);
    let beta = beta_of(cc);
    let cfg = tcp(cc);
    let size = 5_000 * MSS;
    let mut p = pair(cfg.clone(), size, 0);
    for _ in 1..8 {
        p.add_flow(&TransportConfig::Tcp(cfg.clone()), size, Time::ZERO);
    }
    assert!(p.drive());
    assert!(p.is_complete() && p.extra.iter().all(|f| f.client_events.len() == 1));
    let first_done =
        p.extra.iter().map(|f| f.client_events[0].0).fold(p.completed_at().unwrap(), Time::min);
    let i = Interval::of(&p, 8, Time::from_us(500), first_done);
    assert!(i.jain() > 0.99, "Jain {} ({:?})", i.jain(), i.wire_bytes);
    assert!(i.utilization() > 0.99, "utilization {}", i.utilization());
    let want = 8.0 * beta as f64;
    let q = i.mean_queue();
    assert!((q - want).abs() < 0.1 * want, "mean queue {q} vs 8β {want}");
}

fn power_lossy(seed: u64, loss: f64) -> Pair {
    lossy(power_tcp(LINE, None), seed, loss)
}

#[test]
fn power_tcp_random_loss_always_completes_with_every_byte() {
    // (d) NewReno's loss recovery under PowerTCP's window.
    let mut num_rtos = 0;
    let mut num_fast_retx = 0;
    for seed in 1..=6 {
        for loss in [0.01, 0.03, 0.05] {
            let mut p = power_lossy(seed, loss);
            assert!(p.drive_bounded(200_000), "livelock: seed {seed} loss {loss}");
            assert!(p.is_complete(), "seed {seed} loss {loss}");
            assert_eq!(p.server.stats().bytes_received, 300 * MSS + 77);
            let s = p.client.stats();
            num_rtos += s.num_rtos;
            num_fast_retx += s.num_fast_retx;
        }
    }
    assert!(num_rtos > 0 && num_fast_retx > 0, "rtos {num_rtos} fast retx {num_fast_retx}");
}

#[test]
fn power_tcp_same_seed_same_trace_and_spurious_timeouts_change_nothing() {
    let run = |seed, spurious| {
        let mut p = power_lossy(seed, 0.03);
        p.spurious_timeouts = spurious;
        assert!(p.drive());
        assert!(p.is_complete());
        (p.trace, p.client_events, p.server_events)
    };
    assert_eq!(run(3, false), run(3, false));
    assert_eq!(run(3, false), run(3, true));
    assert_ne!(run(3, false).0, run(4, false).0);
}

#[test]
fn power_tcp_receiver_echoes_the_stack_of_the_segment_it_acknowledges() {
    // (f) Through the harness: without delayed ACKs, each ACK is sent the instant its data
    // segment arrives and carries that segment's stack, even around losses.
    let mut p = pair(tcp(power_tcp(LINE, None)), 200 * MSS, 0);
    p.drop_data.extend([40, 41, 90]);
    assert!(p.drive());
    assert!(p.is_complete());
    let data = p.data();
    let acks = p.acks();
    assert_eq!(acks.len(), data.iter().filter(|e| e.arrive.is_some()).count());
    for a in &acks {
        let trigger: Vec<&TraceEntry> = data.iter().filter(|d| d.arrive == Some(a.sent)).collect();
        assert_eq!(trigger.len(), 1, "ACK at {:?}", a.sent);
        assert_eq!(a.int, trigger[0].int, "ACK {} echoes {}", a.seg.ack, trigger[0].seg.seq);
        assert_eq!(a.int.unwrap().hops().len(), 1);
    }
    // Distinct segments, distinct stacks (the timestamps differ).
    assert!(acks.windows(2).all(|w| w[0].int != w[1].int));
}

#[test]
fn power_tcp_receiver_echoes_each_stack_once_and_only_on_data_acks() {
    // (f) Directly, with delayed ACKs: the ACK covering two segments echoes the second one's
    // stack; the timer's ACK echoes the lone segment's; take_echo_int hands a stack out once.
    let cfg = TcpConfig {
        delayed_ack: Some(DelayedAck { count: 2, timeout: Dur::from_us(5) }),
        handshake: true,
        ..tcp(power_tcp(LINE, None))
    };
    let mut r = Conn::receiver(&cfg, 1);
    assert!(r.wants_int());
    let stack = |k: u64| {
        let mut s = IntStack::default();
        s.push(IntHop { qlen_bytes: k, tx_bytes: 1_000 * k, ts_ps: 10 * k, rate_bps: LINE.get() });
        s
    };
    let seg = |k: u64| SegmentRepr {
        conn: 1,
        seq: k * MSS,
        len: MSS as u32,
        flags: Flags::ACK,
        ts_ps: k,
        ..Default::default()
    };
    let syn = SegmentRepr { conn: 1, flags: Flags::SYN, ..Default::default() };
    let now = Time::from_us(1);
    // A SYN-ACK echoes nothing.
    r.handle_segment_int(now, &syn, Some(&stack(99)));
    assert!(r.poll_transmit(now).unwrap().flags.contains(Flags::SYN));
    assert_eq!(r.take_echo_int(), None);
    // Segments 0 and 1: one ACK, with segment 1's stack, exactly once.
    r.handle_segment_int(now, &seg(0), Some(&stack(0)));
    assert_eq!(r.poll_transmit(now), None);
    assert_eq!(r.take_echo_int(), None, "no ACK yet");
    r.handle_segment_int(now, &seg(1), Some(&stack(1)));
    assert_eq!(r.poll_transmit(now).unwrap().ack, 2 * MSS);
    assert_eq!(r.take_echo_int(), Some(stack(1)));
    assert_eq!(r.take_echo_int(), None, "handed out once");
    // Segment 2 alone: the delayed-ACK timer's ACK echoes it.
    r.handle_segment_int(now, &seg(2), Some(&stack(2)));
    assert_eq!(r.poll_transmit(now), None);
    let later = r.poll_timeout().unwrap();
    r.handle_timeout(later);
    assert_eq!(r.poll_transmit(later).unwrap().ack, 3 * MSS);
    assert_eq!(r.take_echo_int(), Some(stack(2)));
    // Out-of-order segment 5: an immediate duplicate ACK with its own stack.
    r.handle_segment_int(later, &seg(5), Some(&stack(5)));
    assert_eq!(r.poll_transmit(later).unwrap().ack, 3 * MSS);
    assert_eq!(r.take_echo_int(), Some(stack(5)));
    // A data segment without telemetry: its (immediate, out-of-order) ACK carries none.
    r.handle_segment(later, &seg(7));
    assert_eq!(r.poll_transmit(later).unwrap().ack, 3 * MSS);
    assert_eq!(r.take_echo_int(), None);
    // An echo the driver did not take is gone with the next poll_transmit.
    r.handle_segment_int(later, &seg(3), Some(&stack(3)));
    assert_eq!(r.poll_transmit(later).unwrap().ack, 4 * MSS);
    assert_eq!(r.poll_transmit(later), None);
    assert_eq!(r.take_echo_int(), Some(stack(3)));
    r.handle_segment_int(later, &seg(4), Some(&stack(4)));
    assert_eq!(r.poll_transmit(later).unwrap().ack, 6 * MSS);
    r.handle_segment(later, &seg(6));
    assert_eq!(r.poll_transmit(later).unwrap().ack, 8 * MSS);
    assert_eq!(r.take_echo_int(), None, "the ACK of segment 4 was polled over");
    // A driver that lets two ACKs queue up (against the call order) gets the newest stack
    // on the first of them.
    r.handle_segment_int(later, &seg(10), Some(&stack(10)));
    r.handle_segment_int(later, &seg(9), Some(&stack(9)));
    assert_eq!(r.poll_transmit(later).unwrap().ack, 8 * MSS);
    assert_eq!(r.take_echo_int(), Some(stack(9)));
    assert_eq!(r.poll_transmit(later).unwrap().ack, 8 * MSS);
    assert_eq!(r.take_echo_int(), None);
    // A sender never has an echo of its own.
    let mut s = Conn::sender(&cfg, 1, Bytes(10 * MSS), Time::ZERO);
    assert!(s.wants_int());
    assert!(s.poll_transmit(Time::ZERO).is_some());
    assert_eq!(s.take_echo_int(), None);
}

#[test]
fn new_reno_and_dctcp_ignore_telemetry() {
    // (e) Feeding stacks to NewReno/DCTCP endpoints changes nothing, and they echo none.
    let st = {
        let mut s = IntStack::default();
        s.push(IntHop { qlen_bytes: 1_000_000, tx_bytes: 7, ts_ps: 3, rate_bps: 1 });
        s
    };
    for cc in [CcKind::NewReno, dctcp(1.0)] {
        let cfg = tcp(cc);
        let mut plain = Conn::sender(&cfg, 1, Bytes(100 * MSS), Time::ZERO);
        let mut fed = Conn::sender(&cfg, 1, Bytes(100 * MSS), Time::ZERO);
        for k in 1..=30u64 {
            let now = Time::from_us(k);
            while plain.poll_transmit(now).is_some() {}
            while fed.poll_transmit(now).is_some() {}
            let ack =
                SegmentRepr { conn: 1, ack: k * MSS, flags: Flags::ACK, ..Default::default() };
            plain.handle_segment(now, &ack);
            fed.handle_segment_int(now, &ack, Some(&st));
            assert_eq!(plain.stats(), fed.stats());
        }
        let mut r = Conn::receiver(&cfg, 1);
        let data =
            SegmentRepr { conn: 1, len: MSS as u32, flags: Flags::ACK, ..Default::default() };
        r.handle_segment_int(Time::ZERO, &data, Some(&st));
        assert!(r.poll_transmit(Time::ZERO).is_some());
        assert_eq!(r.take_echo_int(), None);
    }
}

// ------------------------------------------------------------------------------------------
// UDP
// ------------------------------------------------------------------------------------------

fn udp(rate: Option<Bps>, size: u64) -> Pair {
    Pair::new(&TransportConfig::Udp(UdpConfig { rate, ..UdpConfig::default() }), size, 0)
}

#[test]
fn udp_unpaced_emits_all_datagrams_at_once() {
    let size = 10 * MSS - 100;
    let mut p = udp(None, size);
    assert!(p.drive());
    let d = p.data();
    assert_eq!(d.len(), 10);
    assert!(d.iter().all(|e| e.sent == Time::ZERO && e.seg.ecn == Ecn::NotEct));
    for (i, e) in d.iter().enumerate() {
        assert_eq!(e.seg.seq, i as u64 * MSS);
        assert_eq!(e.seg.flags, if i == 9 { Flags::FIN } else { Flags::NONE });
    }
    assert_eq!(p.client_events, [(Time::ZERO, Event::SenderDone { outcome: crate::Outcome::Complete, confirmed: false })]);
    assert_eq!(p.received_all_at(), Some(d[9].arrive.unwrap()));
    assert_eq!(p.server.stats().bytes_received, size);
    assert!(p.acks().is_empty());
}

#[test]
fn udp_paced_spaces_datagrams_exactly_tx_time_apart() {
    let rate = Bps::from_gbps(1);
    let size = 10 * MSS - 100;
    let mut p = udp(Some(rate), size);
    assert!(p.drive());
    let d = p.data();
    assert_eq!(d.len(), 10);
    assert_eq!(d[0].sent, Time::ZERO);
    for w in d.windows(2) {
        let gap = rate.tx_time(Bytes(u64::from(w[0].seg.len) + 40));
        assert_eq!(w[1].sent.since(w[0].sent), gap);
    }
    assert_eq!(p.completed_at(), Some(d[9].sent));
    assert_eq!(p.received_all_at(), Some(d[9].arrive.unwrap()));
}

#[test]
fn udp_receiver_counts_bytes_under_loss_and_never_reports_received_all() {
    let size = 10 * MSS - 100;
    for lost in [3, 9] {
        let mut p = udp(Some(Bps::from_gbps(1)), size);
        p.drop_data.insert(lost);
        p.spurious_timeouts = true;
        assert!(p.drive());
        let lost_len = u64::from(p.data()[lost].seg.len);
        assert_eq!(p.server.stats().bytes_received, size - lost_len);
        assert_eq!(p.received_all_at(), None);
        assert!(p.completed_at().is_some());
    }
}


// ------------------------------------------------------------------------------------------
// Backpressure: a driver that holds the client back (TCP Small Queues, crate docs)
// ------------------------------------------------------------------------------------------

/// Two full packets: the limit the backpressure tests hold clients to.
const TSQ: u64 = 2 * (MSS + HEADER_BYTES);

/// Closed form of a sender whose own pipe is busy from `t0` on: its `size` bytes serialize
/// back to back and the last one arrives `latency` later.
fn line_rate_arrival(p: &Pair, t0: Time, size: u64) -> Time {
    let n = size.div_ceil(MSS);
    t0 + p.tx(MSS) * (n - 1) + p.tx(size - (n - 1) * MSS) + p.latency
}

#[test]
fn held_back_sender_never_queues_beyond_the_limit_and_loses_no_time() {
    let size = 2_000 * MSS;
    for cc in [CcKind::NewReno, dctcp(1.0)] {
        let mut free = pair(tcp(cc), size, 0);
        let mut held = pair(tcp(cc), size, 0);
        held.tsq_bytes = Some(TSQ);
        assert!(free.drive() && held.drive());
        assert!(held.is_complete(), "{cc:?}");
        assert!(free.max_waiting_bytes(0) > 100 * TSQ, "{cc:?}: the free sender queues its window");
        assert!(held.max_waiting_bytes(0) <= TSQ, "{cc:?}: {}", held.max_waiting_bytes(0));
        // The pipe never idles for want of a segment: a held-back sender is polled when one
        // of its segments starts serializing, so the next is there when that one ends.
        assert_eq!(held.received_all_at(), free.received_all_at(), "{cc:?}");
        assert_eq!(held.data().len(), free.data().len());
        assert_eq!(held.client.stats().segments_retx, 0);
    }
}

#[test]
fn held_back_sender_window_stops_growing_once_it_no_longer_limits() {
    // RFC 7661 §4.3: without marks or loss the free sender stays in slow start and its window
    // grows by every ACK to about the whole flow. Held back, the flight is the pipe (the bytes
    // one RTT carries) plus what waits at the bottleneck, and the window grows in slow start
    // only while it is less than twice the flight: it stops within one segment of twice the
    // largest flight, while data remains (afterwards, like any sender that has nothing left
    // to send, it grows on).
    let size = 5_000 * MSS;
    let mut free = pair(tcp(dctcp(1.0)), size, 0);
    let mut held = pair(tcp(dctcp(1.0)), size, 0);
    held.tsq_bytes = Some(TSQ);
    assert!(free.drive() && held.drive());
    let max_cwnd = |p: &Pair| p.snaps.iter().filter(|s| s.seq.2 < size).map(|s| s.stats.cwnd).max().unwrap();
    let pipe = p_rtt(&held).ps().div_ceil(held.tx(MSS).ps()) * MSS;
    let max_flight = pipe + TSQ / (MSS + HEADER_BYTES) * MSS;
    assert!(max_cwnd(&free) > size / 2, "{}", max_cwnd(&free));
    assert!(max_cwnd(&held) <= 2 * max_flight + MSS, "cwnd {} flight {max_flight}", max_cwnd(&held));
    assert!(max_cwnd(&held) >= pipe, "cwnd {} pipe {pipe}", max_cwnd(&held));
    assert_eq!(held.received_all_at(), free.received_all_at());
}

/// The harness's unloaded RTT for a full segment and its ACK.
fn p_rtt(p: &Pair) -> Dur {
    p.latency * 2 + p.tx(MSS) + p.tx(0)
}

#[test]
fn held_back_udp_source_never_bursts_and_meets_the_pipe_closed_form() {
    // A source faster than its pipe (unpaced, or paced at twice the pipe's rate) held to two
    // packets: the pipe is busy from 0 on, so the last datagram arrives at the closed form;
    // a paced source never sends two datagrams closer than its pacing interval.
    let size = 300 * MSS - 100;
    for rate in [None, Some(Bps::from_gbps(20))] {
        let mut p = udp(rate, size);
        p.tsq_bytes = Some(TSQ);
        p.spurious_timeouts = true;
        assert!(p.drive_bounded(100_000), "{rate:?}");
        assert!(p.max_waiting_bytes(0) <= TSQ);
        assert_eq!(p.server.stats().bytes_received, size);
        assert_eq!(p.received_all_at(), Some(line_rate_arrival(&p, Time::ZERO, size)), "{rate:?}");
        if let Some(r) = rate {
            for w in p.data().windows(2) {
                let gap = r.tx_time(Bytes(u64::from(w[0].seg.len) + HEADER_BYTES));
                assert!(w[1].sent.since(w[0].sent) >= gap, "{rate:?}: burst at {:?}", w[1].sent);
            }
        }
    }
}

#[test]
fn held_back_rate_capped_sender_never_bursts() {
    // An application's rate cap above the pipe's rate: the sender is held back, and a late
    // poll hands out one segment, the next one no earlier than `len / cap` after it.
    let cap = Bps::from_gbps(20);
    let cfg = TransportConfig::Tcp(tcp(CcKind::NewReno));
    let mut p = Pair::new(&cfg, 500 * MSS, 0);
    p.client.set_rate_cap(&cfg, Some(cap));
    p.tsq_bytes = Some(TSQ);
    assert!(p.drive());
    assert!(p.is_complete());
    assert!(p.max_waiting_bytes(0) <= TSQ);
    let d = p.data();
    for w in d.windows(2) {
        assert!(w[1].sent.since(w[0].sent) >= cap.tx_time(Bytes(u64::from(w[0].seg.len))), "burst at {:?}", w[1].sent);
    }
}

#[test]
fn held_back_random_loss_always_completes_with_every_byte() {
    // Held-back data is neither in flight nor timed: RTOs, go-back-N and fast recovery work
    // as when the driver drains.
    for cc in [CcKind::NewReno, dctcp(1.0)] {
        for seed in 1..=6 {
            let mut p = lossy(cc, seed, 0.03);
            p.tsq_bytes = Some(TSQ);
            p.spurious_timeouts = seed % 2 == 0;
            assert!(p.drive_bounded(200_000), "livelock: {cc:?} seed {seed}");
            assert!(p.is_complete(), "{cc:?} seed {seed}");
            assert_eq!(p.server.stats().bytes_received, 300 * MSS + 77);
            assert!(p.max_waiting_bytes(0) <= TSQ);
        }
    }
}

#[test]
fn handle_segment_never_panics_on_arbitrary_segments() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_pcg::Pcg64::seed_from_u64(42);
    let pick = |rng: &mut rand_pcg::Pcg64| match rng.gen_range(0..4) {
        0 => rng.gen::<u64>(),
        1 => u64::MAX - rng.gen_range(0..3000),
        _ => rng.gen_range(0..40 * MSS),
    };
    for handshake in [false, true] {
        let cfg = TcpConfig {
            handshake,
            delayed_ack: Some(DelayedAck { count: 2, timeout: Dur::from_us(5) }),
            ..tcp(dctcp(1.0))
        };
        let mut tx = Conn::sender(&cfg, 1, Bytes(30 * MSS), Time::ZERO);
        let mut rx = Conn::receiver(&cfg, 1);
        for k in 0..20_000u64 {
            let now = Time::from_ns(k);
            let seg = SegmentRepr {
                conn: rng.gen_range(0..3),
                seq: pick(&mut rng),
                ack: pick(&mut rng),
                len: if rng.gen_bool(0.5) { rng.gen_range(0..2000) } else { rng.gen() },
                flags: Flags(rng.gen::<u8>() & Flags::ALL.0),
                ecn: [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce][rng.gen_range(0..4)],
                prio: 0,
                ts_ps: pick(&mut rng),
                ts_echo_ps: pick(&mut rng),
            };
            for c in [&mut tx, &mut rx] {
                c.handle_segment(now, &seg);
                c.handle_timeout(now);
                while c.poll_transmit(now).is_some() {}
                let _ = (c.poll_timeout(), c.poll_event(), c.stats());
            }
        }
    }
}

/// Streams: the application hands data over with `send` and ends with `close`.
mod streams {
    use super::*;
    use crate::Segment;

    /// A zero-latency loopback between a stream sender and a receiver, with an optional loss of
    /// the first bare FIN.
    struct Loop {
        tx: Endpoint,
        rx: Endpoint,
        now: Time,
        drop_bare_fin: bool,
        sent: Vec<Segment>,
        acks: Vec<Segment>,
        tx_events: Vec<Event>,
        rx_events: Vec<Event>,
    }

    impl Loop {
        fn new(cfg: &TransportConfig) -> Loop {
            Loop {
                tx: Endpoint::sender_stream(cfg, 1, Time::ZERO),
                rx: Endpoint::receiver(cfg, 1),
                now: Time::ZERO,
                drop_bare_fin: false,
                sent: Vec::new(),
                acks: Vec::new(),
                tx_events: Vec::new(),
                rx_events: Vec::new(),
            }
        }

        /// Exchange segments until nothing moves.
        fn settle(&mut self) {
            loop {
                let mut moved = false;
                while let Some(s) = self.tx.poll_transmit(self.now) {
                    self.sent.push(s);
                    let is_bare_fin = s.is_empty() && matches!(s, Segment::Tcp(t) if t.flags.contains(Flags::FIN));
                    if is_bare_fin && self.drop_bare_fin {
                        self.drop_bare_fin = false;
                        continue;
                    }
                    self.rx.handle_segment(self.now, &s);
                    moved = true;
                }
                while let Some(a) = self.rx.poll_transmit(self.now) {
                    self.acks.push(a);
                    self.tx.handle_segment(self.now, &a);
                    moved = true;
                }
                self.tx_events.extend(std::iter::from_fn(|| self.tx.poll_event()));
                self.rx_events.extend(std::iter::from_fn(|| self.rx.poll_event()));
                if !moved {
                    return;
                }
            }
        }

        /// Advance to the sender's next deadline and fire it.
        fn fire(&mut self) -> bool {
            let Some(t) = self.tx.poll_timeout() else { return false };
            self.now = self.now.max(t);
            self.tx.handle_timeout(self.now);
            self.settle();
            true
        }

        fn received(&self) -> u64 {
            self.rx.stats().bytes_received
        }
    }

    fn tcp() -> TransportConfig {
        TransportConfig::Tcp(TcpConfig::default())
    }

    #[test]
    fn data_handed_over_later_is_sent_and_fin_rides_on_the_last_segment() {
        let mut l = Loop::new(&tcp());
        l.settle();
        assert!(l.sent.is_empty(), "nothing to send before the application writes");
        l.tx.send(3000);
        l.settle();
        assert_eq!(l.received(), 3000);
        assert!(l.rx_events.is_empty() && l.tx_events.is_empty(), "an open stream is not complete");
        l.tx.send(1000);
        l.tx.close();
        l.settle();
        assert_eq!(l.received(), 4000);
        let last = l.sent.last().copied().unwrap();
        let Segment::Tcp(last) = last else { unreachable!() };
        assert!(last.flags.contains(Flags::FIN) && last.end() == 4000 && last.len > 0);
        assert_eq!(l.rx_events, [Event::Delivered { outcome: crate::Outcome::Complete }]);
        assert_eq!(l.tx_events, [Event::SenderDone { outcome: crate::Outcome::Complete, confirmed: true }]);
        // Segments end at multiples of the MSS or at what was written: 1460, 1460, 80 (the
        // rest of the first write), then 1000 realigned to the next boundary.
        let lens: Vec<u32> = l.sent.iter().map(Segment::len).collect();
        assert_eq!(lens, [1460, 1460, 80, 1000]);
        assert_eq!(l.tx.poll_timeout(), None, "a finished sender has no timer");
    }

    #[test]
    fn closing_after_the_last_byte_left_sends_a_bare_fin_that_the_receiver_confirms() {
        let mut l = Loop::new(&tcp());
        l.tx.send(2920);
        l.settle();
        assert_eq!(l.received(), 2920);
        assert!(l.tx_events.is_empty());
        l.tx.close();
        l.settle();
        let Some(Segment::Tcp(fin)) = l.sent.last().copied() else { unreachable!() };
        assert_eq!((fin.len, fin.seq), (0, 2920));
        assert!(fin.flags.contains(Flags::FIN));
        let Some(Segment::Tcp(ack)) = l.acks.last().copied() else { unreachable!() };
        assert!(ack.flags.contains(Flags::FIN) && ack.ack == 2920, "the ACK confirms the end");
        assert_eq!(l.rx_events.len(), 1);
        assert_eq!(l.tx_events.len(), 1);
    }

    #[test]
    fn a_lost_bare_fin_is_retransmitted_on_timeout() {
        let mut l = Loop::new(&tcp());
        l.tx.send(1000);
        l.settle();
        l.drop_bare_fin = true;
        l.tx.close();
        l.settle();
        assert!(l.rx_events.is_empty() && l.tx_events.is_empty(), "the FIN was lost");
        let t0 = l.now;
        assert!(l.fire(), "the RTO is armed for the bare FIN");
        assert!(l.now > t0);
        assert_eq!(l.tx.stats().num_rtos, 1);
        assert_eq!(l.rx_events.len(), 1);
        assert_eq!(l.tx_events.len(), 1);
        let bare = l.sent.iter().filter(|s| s.is_empty()).count();
        assert_eq!(bare, 2);
    }

    #[test]
    fn an_empty_closed_stream_completes_with_a_bare_fin() {
        let mut l = Loop::new(&tcp());
        l.tx.close();
        l.settle();
        assert_eq!(l.sent.len(), 1);
        assert_eq!(l.rx_events.len(), 1);
        assert_eq!(l.tx_events.len(), 1);
        assert_eq!(l.received(), 0);
    }

    #[test]
    fn udp_streams_end_with_fin_on_the_last_datagram_or_alone() {
        for close_late in [false, true] {
            let mut l = Loop::new(&TransportConfig::Udp(UdpConfig::default()));
            l.tx.send(5000);
            if !close_late {
                l.tx.close();
            }
            l.settle();
            if close_late {
                assert!(l.rx_events.is_empty());
                l.tx.close();
                l.settle();
            }
            assert_eq!(l.received(), 5000);
            assert_eq!(l.rx_events, [Event::Delivered { outcome: crate::Outcome::Complete }], "close_late={close_late}");
            assert_eq!(l.tx_events.len(), 1);
            let bare = l.sent.iter().filter(|s| s.is_empty()).count();
            assert_eq!(bare, usize::from(close_late));
        }
    }

    #[test]
    fn writes_after_close_are_ignored() {
        let mut l = Loop::new(&tcp());
        l.tx.send(100);
        l.tx.close();
        l.tx.send(100);
        l.settle();
        assert_eq!(l.received(), 100);
        assert_eq!(l.tx_events.len(), 1);
    }
}

/// A drop-tail bottleneck (10 Gb/s, a queue of 20 to 80 segments) that slow start overflows:
/// whole runs of a window are lost at once. SACK repairs them within the recovery and one
/// flow finishes within 2% of the line-rate transfer time; NewReno repairs one loss per round
/// trip (or times out) and finishes later. Two flows sharing the queue: SACK sooner too, and
/// with fewer retransmissions (NewReno's partial ACKs resend segments that had arrived).
#[test]
fn sack_beats_newreno_through_a_droptail_queue_slow_start_overflows() {
    let size = 2000 * MSS;
    let line_rate_time = Bps::from_gbps(10).tx_time(Bytes(2000 * (MSS + HEADER_BYTES)));
    for (flows, cap) in [(1usize, 20u64), (1, 40), (1, 80), (2, 40), (2, 80)] {
        let mut done = Vec::new();
        let mut retx = Vec::new();
        for sack in [false, true] {
            let cfg = TcpConfig { sack, ..tcp(CcKind::NewReno) };
            let mut p = pair(cfg.clone(), size, 0);
            p.rate = Some(Bps::from_gbps(10));
            p.queue_cap_bytes = Some(cap * (MSS + HEADER_BYTES));
            for k in 1..flows {
                p.add_flow(&TransportConfig::Tcp(cfg.clone()), size, Time::ZERO + Dur::from_us(k as u64));
            }
            assert!(p.drive_bounded(2_000_000));
            assert!(p.trace.iter().filter(|e| e.arrive.is_none()).count() >= 20, "flows {flows} cap {cap}: few drops");
            assert_eq!(p.server.stats().bytes_received, size);
            done.push(p.completed_at().expect("complete").saturating_since(Time::ZERO));
            retx.push(p.client.stats().segments_retx);
        }
        assert!(done[1] < done[0], "flows {flows} cap {cap}: finished at {done:?} (NewReno, SACK)");
        if flows == 1 {
            assert!(done[1].ps() <= line_rate_time.ps() * 102 / 100, "{:?} against {line_rate_time:?}", done[1]);
        } else if cap >= 40 {
            assert!(retx[1] < retx[0], "flows {flows} cap {cap}: retransmitted {retx:?}");
        }
    }
}

/// DCTCP with SACK and ns-3.44's `CA_CWR` (`ns3_cwr`) or RFC 6675's recovery in any state.
fn dctcp_sack(ns3_cwr: bool) -> TcpConfig {
    TcpConfig { sack: true, ..tcp(CcKind::Dctcp { g: G, init_alpha: 1.0, loss_by_alpha: false, ns3_cwr, ece_only_on_new_acks: false }) }
}

/// A loss found while the window is being cut for a mark: RFC 6675 (and Linux) enter fast
/// recovery; ns-3.44 does not (`DupAck` ignores `CA_CWR`) but resends the lost segment by
/// `NextSeg()` within `cwnd − pipe`, so the segment still goes out again before any timeout.
#[test]
fn ns3_cwr_repairs_a_loss_during_an_ecn_cut_without_fast_recovery() {
    for ns3 in [false, true] {
        let mut p = pair(dctcp_sack(ns3), 100 * MSS, 0);
        p.mark = Mark::DataIndices(BTreeSet::from([25]));
        p.drop_data.insert(28);
        assert!(p.drive());
        assert!(p.is_complete());
        assert_eq!(p.server.stats().bytes_received, 100 * MSS);
        let s = p.client.stats();
        assert_eq!(s.num_ecn_cuts, 1, "ns3 {ns3}");
        assert_eq!((s.num_fast_retx, s.num_rtos, s.segments_retx), (u64::from(!ns3), 0, 1), "ns3 {ns3}");
        // Either way the resend leaves at the third duplicate ACK: fast retransmit, or ns-3's
        // `NextSeg()` once `IsLost` holds, PRR having kept the window above the pipe.
        let sends = sends_of(&p, 28 * MSS);
        assert_eq!(sends.len(), 2);
        assert_eq!(sends[1].sent, ack_arrivals(&p, 28 * MSS)[3], "ns3 {ns3}");
    }
}

/// ns-3.44's `EnterCwr` also ends fast recovery: an ECE on a new ACK during recovery cuts the
/// window for ECN (RFC 3168 and Linux cut once: no cut while recovering). Both transfers
/// complete without a timeout.
#[test]
fn ns3_cwr_an_ece_ends_fast_recovery_with_an_ecn_cut() {
    // Find when segment 30's retransmission leaves (its index among the data sent), then mark
    // it, so that its ACK, a new ACK in recovery (33 is lost too), carries ECE.
    let mut p = pair(dctcp_sack(false), 100 * MSS, 0);
    p.drop_data.extend([30, 33]);
    assert!(p.drive());
    let rtx_index = p.data().iter().enumerate().filter(|(_, e)| e.seg.seq == 30 * MSS).nth(1).expect("resent").0;
    for ns3 in [false, true] {
        let mut p = pair(dctcp_sack(ns3), 100 * MSS, 0);
        p.drop_data.extend([30, 33]);
        p.mark = Mark::DataIndices(BTreeSet::from([rtx_index]));
        assert!(p.drive());
        assert!(p.is_complete());
        let s = p.client.stats();
        assert_eq!((s.num_fast_retx, s.num_rtos, s.segments_retx), (1, 0, 2), "ns3 {ns3}");
        assert_eq!(s.num_ecn_cuts, u64::from(ns3), "ns3 {ns3}");
    }
}

/// An ECE on a duplicate ACK: RFC 3168 and Linux cut the window for it, ns-3.44 reads the echo
/// only from ACKs that advance `SND.UNA` (`ece_only_on_new_acks`). A window of three whose first
/// segment is lost and whose other two arrive marked: cut on the first duplicate, the window has
/// no room for limited transmit, two duplicates are all there will be and the timer resends;
/// not cut, limited transmit sends segments 3 and 4 on the two duplicates, their arrivals raise
/// the third and fast retransmit repairs the loss. With and without SACK (both read duplicates).
#[test]
fn ece_on_duplicate_acks_cuts_unless_only_new_acks_count() {
    for sack in [false, true] {
        for only_new in [false, true] {
            let cc = CcKind::Dctcp { g: G, init_alpha: 1.0, loss_by_alpha: false, ns3_cwr: false, ece_only_on_new_acks: only_new };
            let cfg = TcpConfig { init_cwnd_pkts: 3, limited_transmit: true, sack, ..tcp(cc) };
            let mut p = pair(cfg, 5 * MSS, 0);
            p.drop_data.insert(0);
            p.mark = Mark::DataIndices(BTreeSet::from([1, 2]));
            assert!(p.drive());
            assert!(p.is_complete());
            let s = p.client.stats();
            let what = format!("sack {sack}, only new ACKs {only_new}");
            let dups = ack_arrivals(&p, 0);
            if only_new {
                assert_eq!((s.num_ecn_cuts, s.num_ecn, s.num_fast_retx, s.num_rtos), (0, 0, 1, 0), "{what}");
                // RFC 3042: segments 3 and 4 leave on the first two duplicates (the marked ones).
                assert_eq!(sends_of(&p, 3 * MSS)[0].sent, dups[0], "{what}");
                assert_eq!(sends_of(&p, 4 * MSS)[0].sent, dups[1], "{what}");
                assert_eq!(sends_of(&p, 0)[1].sent, dups[2], "{what}: fast retransmit on the third");
            } else {
                assert_eq!((s.num_ecn_cuts, s.num_ecn, s.num_fast_retx, s.num_rtos), (1, 2, 0, 1), "{what}");
                assert_eq!(dups.len(), 2, "{what}: nothing new left before the timeout");
                assert!(sends_of(&p, 3 * MSS)[0].sent > dups[1], "{what}");
            }
        }
    }
}

/// ns-3.44 takes the window down to an ECN cut by PRR (RFC 6937) in `CA_CWR`: about one
/// segment for every two delivered while alpha is 1, from the cut on; RFC 8257 (and Linux
/// without PRR) cut at once and send nothing until the flight has fallen under the new window.
#[test]
fn ns3_cwr_takes_the_window_down_by_prr() {
    for ns3 in [false, true] {
        let mut p = pair(dctcp_sack(ns3), 200 * MSS, 0);
        p.mark = Mark::DataIndices(BTreeSet::from([40]));
        assert!(p.drive());
        assert!(p.is_complete());
        let acks = p.acks();
        let ece = acks.iter().position(|e| e.seg.flags.contains(Flags::ECE)).expect("an ECE");
        let next: Vec<Time> = acks[ece + 1..ece + 7].iter().filter_map(|e| e.arrive).collect();
        let sent = p.data().iter().filter(|e| next.contains(&e.sent)).count();
        if ns3 {
            assert!((2..=4).contains(&sent), "PRR: {sent} segments for 6 ACKs");
        } else {
            assert_eq!(sent, 0, "a cut at once waits for the flight to fall");
        }
        assert_eq!(p.client.stats().num_ecn_cuts, 1);
    }
}
