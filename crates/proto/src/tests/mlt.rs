//! Protocol traces of the bounded-loss transport (Xia et al., APNet'19 §3, §3.2) over the
//! `Pair` harness, plus direct receiver tests: completion exactly at `ceil(p·N)` values, an
//! exact missing-range report (Idea #2), fast-detected losses resent, timeout-only losses
//! abandoned within the bound, the bound never violated over many seeds of loss and
//! reordering, and p = 1 as a reliable transfer.

use std::collections::BTreeSet;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use units::{Dur, Time};
use wire::{Ecn, MltRepr};

use super::util::Pair;
use crate::mlt::{MltCc, MltConfig, MltReceiver, MltSendOrder, MltSender};
use crate::{Endpoint, Event, Outcome, Segment, TransportConfig};

fn cfg(p: f64) -> MltConfig {
    MltConfig { complete_fraction: p, ..MltConfig::default() }
}

/// `cfg(p)` sending packets in index order: for traces that name packets by their index.
fn in_order(p: f64) -> MltConfig {
    MltConfig { send_order: MltSendOrder::Index, ..cfg(p) }
}

fn m(e: &super::util::TraceEntry) -> MltRepr {
    match e.pkt {
        Segment::Mlt(m) => m,
        other => panic!("not mlt: {other:?}"),
    }
}

/// Values in packets that reached the receiver (at or before `until`, if given).
fn delivered_values(p: &Pair, until: Option<Time>) -> BTreeSet<u32> {
    let mut set = BTreeSet::new();
    for e in p.data() {
        if let Some(at) = e.arrive {
            if until.is_none_or(|u| at <= u) {
                let d = m(&e);
                set.extend(d.start..d.end);
            }
        }
    }
    set
}

/// The complement of `have` in `[0, total)` as sorted maximal ranges.
fn ranges_missing(have: &BTreeSet<u32>, total: u32) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for v in 0..total {
        if !have.contains(&v) {
            match out.last_mut() {
                Some(r) if r.1 == v => r.1 = v + 1,
                _ => out.push((v, v + 1)),
            }
        }
    }
    out
}

fn receiver(p: &Pair) -> &MltReceiver {
    p.server.as_mlt_receiver().expect("mlt receiver")
}

fn data(start: u32, end: u32, total: u32, seq: u64) -> MltRepr {
    MltRepr { conn: 1, seq, start, end, total, value_bytes: 4, len: (end - start) * 4, ecn: Ecn::Ect0, ..Default::default() }
}

#[test]
fn need_is_the_exact_ceiling_of_p_times_n() {
    // 0.9 · 100 is 90.00000000000001 in f64: the ceiling must still be 90.
    assert_eq!(cfg(0.9).need_values(100), 90);
    assert_eq!(cfg(0.9).need_values(101), 91);
    assert_eq!(cfg(1.0).need_values(u32::MAX), u32::MAX);
    assert_eq!(cfg(0.35).need_values(20), 7);
    assert_eq!(cfg(1e-9).need_values(5), 1, "at least one value");
}

#[test]
fn receiver_completes_exactly_at_p_not_one_value_earlier_and_reports_exact_gaps() {
    let mut r = MltReceiver::new(&cfg(0.5), 1);
    // Out of order, one value at a time, skipping every third value.
    let order: Vec<u32> = (0..100).rev().filter(|v| v % 3 != 1).collect();
    let mut have = BTreeSet::new();
    for (k, &v) in order.iter().enumerate() {
        r.handle_segment(Time::ZERO, &data(v, v + 1, 100, k as u64));
        have.insert(v);
        let ack = r.poll_transmit().expect("every packet is acknowledged");
        assert_eq!((ack.start, ack.end, ack.seq, ack.received), (v, v + 1, k as u64, have.len() as u32));
        if have.len() < 50 {
            assert_eq!(r.poll_event(), None, "{} values < ceil(0.5·100)", have.len());
            assert!(r.report().is_none() && !ack.flags.contains(wire::Flags::FIN));
        } else if have.len() == 50 {
            assert_eq!(r.poll_event(), Some(Event::Delivered { outcome: Outcome::Enough }));
            let rep = r.report().unwrap();
            assert_eq!(rep.delivered, 50);
            assert_eq!(rep.missing, ranges_missing(&have, 100));
            assert!(ack.flags.contains(wire::Flags::FIN));
        } else {
            assert_eq!(r.poll_event(), None, "completion is reported once");
        }
        assert_eq!(r.missing_ranges(), ranges_missing(&have, 100));
    }
    // Duplicates and overlapping ranges count once.
    r.handle_segment(Time::ZERO, &data(0, 10, 100, 999));
    have.extend(0..10);
    assert_eq!(r.received_values() as usize, have.len());
    assert_eq!(r.missing_ranges(), ranges_missing(&have, 100));
    // The frozen report did not change.
    assert_eq!(r.report().unwrap().delivered, 50);
}

#[test]
fn a_full_ack_queue_drops_old_acks_but_never_a_congestion_echo() {
    // A driver that reads many datagrams before it sends (the UDP node) overflows the queue:
    // the one CE-marked packet among 200 must still be echoed.
    let mut r = MltReceiver::new(&cfg(1.0), 1);
    r.handle_segment(Time::ZERO, &MltRepr { ecn: Ecn::Ce, ..data(0, 1, 1000, 0) });
    for i in 1..200 {
        r.handle_segment(Time::ZERO, &MltRepr { pos: i, ..data(i, i + 1, 1000, u64::from(i)) });
    }
    let acks: Vec<MltRepr> = std::iter::from_fn(|| r.poll_transmit()).collect();
    assert_eq!(acks.len(), crate::mlt::MAX_PENDING_ACKS);
    let echoes = acks.iter().filter(|a| a.flags.contains(wire::Flags::ECE)).count();
    assert_eq!(echoes, 1, "the echo moved forward as older ACKs were dropped");
    assert_eq!(acks.last().unwrap().cum, 200, "the newest ACK covers what was dropped (places 0..200)");
    // Without the mark, no echo at all.
    let mut r = MltReceiver::new(&cfg(1.0), 1);
    for i in 0..200 {
        r.handle_segment(Time::ZERO, &data(i, i + 1, 1000, u64::from(i)));
    }
    assert!(std::iter::from_fn(|| r.poll_transmit()).all(|a| !a.flags.contains(wire::Flags::ECE)));
}

#[test]
fn receiver_ignores_packets_that_contradict_the_message() {
    let mut r = MltReceiver::new(&cfg(1.0), 1);
    r.handle_segment(Time::ZERO, &data(0, 5, 10, 0));
    r.handle_segment(Time::ZERO, &data(5, 10, 11, 1));
    r.handle_segment(Time::ZERO, &MltRepr { value_bytes: 2, ..data(5, 10, 10, 2) });
    r.handle_segment(Time::ZERO, &MltRepr { conn: 2, ..data(5, 10, 10, 3) });
    r.handle_segment(Time::ZERO, &MltRepr { msg: 9, ..data(5, 10, 10, 5) }); // another message's tag
    assert_eq!(r.received_values(), 5);
    r.handle_segment(Time::ZERO, &data(5, 10, 10, 4));
    assert_eq!(r.poll_event(), Some(Event::Delivered { outcome: Outcome::Complete }));
    assert_eq!(r.report().unwrap().missing, vec![]);
}

#[test]
fn the_senders_tag_travels_in_every_packet_and_the_receiver_reports_it() {
    let c = MltConfig { tag: 0xDEAD_BEEF, ..cfg(0.9) };
    let mut p = Pair::new(&TransportConfig::Mlt(c), 20 * 1460, 1);
    assert!(p.drive());
    assert!(p.data().iter().all(|e| m(e).msg == 0xDEAD_BEEF));
    assert_eq!(receiver(&p).report().unwrap().tag, 0xDEAD_BEEF);
    // The first packet fixes it: a packet with another tag is not this message's.
    let mut r = MltReceiver::new(&cfg(1.0), 1);
    r.handle_segment(Time::ZERO, &MltRepr { msg: 3, ..data(0, 5, 10, 0) });
    r.handle_segment(Time::ZERO, &MltRepr { msg: 4, ..data(5, 10, 10, 1) });
    assert_eq!(r.received_values(), 5);
    r.handle_segment(Time::ZERO, &MltRepr { msg: 3, ..data(5, 10, 10, 2) });
    assert_eq!(r.report().unwrap().tag, 3);
}

#[test]
fn the_senders_need_governs_the_receiver() {
    // A receiver configured for p = 0.5 completes at the sender's need (90 of 100 values),
    // fixed by the first data packet: one that names another need is ignored.
    let mut r = MltReceiver::new(&cfg(0.5), 1);
    r.handle_segment(Time::ZERO, &MltRepr { need: 90, ..data(0, 60, 100, 0) });
    assert_eq!(r.poll_event(), None, "60 of the 90 values needed");
    r.handle_segment(Time::ZERO, &MltRepr { need: 50, ..data(60, 80, 100, 1) });
    assert_eq!(r.received_values(), 60, "a packet naming another need is ignored");
    r.handle_segment(Time::ZERO, &MltRepr { need: 90, ..data(60, 90, 100, 2) });
    assert_eq!(r.poll_event(), Some(Event::Delivered { outcome: Outcome::Enough }));
    assert_eq!(r.report().unwrap().missing, vec![(90, 100)]);
    // need = 0: the receiver's own p.
    let mut own = MltReceiver::new(&cfg(0.5), 1);
    own.handle_segment(Time::ZERO, &data(0, 50, 100, 0));
    assert_eq!(own.poll_event(), Some(Event::Delivered { outcome: Outcome::Enough }));
    // And a sender stamps its need on every data packet.
    let mut p = Pair::new(&TransportConfig::Mlt(cfg(0.7)), 14_600, 1);
    assert!(p.drive());
    assert!(p.data().iter().all(|e| m(e).need == 2555), "ceil(0.7 x 3650)");
}

#[test]
fn packets_carry_whole_values_and_their_index_range() {
    for vb in [4u8, 2] {
        let c = MltConfig { value_bytes: vb, ..in_order(1.0) };
        let vpp = 1460 / u32::from(vb);
        let size = 10 * u64::from(vpp) * u64::from(vb) + 6;
        let mut p = Pair::new(&TransportConfig::Mlt(c), size, 1);
        assert!(p.drive());
        let d = p.data();
        let total = (size as u32).div_ceil(u32::from(vb));
        assert_eq!(d.len(), 11);
        for (i, e) in d.iter().enumerate() {
            let x = m(e);
            assert_eq!((x.start, x.end, x.total), (i as u32 * vpp, ((i as u32 + 1) * vpp).min(total), total));
            assert_eq!(x.len, (x.end - x.start) * u32::from(vb));
            assert!(x.len <= 1460);
        }
        assert_eq!(p.client_events, vec![(p.completed_at().unwrap(), Event::SenderDone { outcome: Outcome::Complete, confirmed: true })]);
    }
}

#[test]
fn fast_detected_loss_is_resent_even_when_not_needed() {
    let mut p = Pair::new(&TransportConfig::Mlt(cfg(0.5)), 100 * 1460, 1);
    p.drop_data.insert(3);
    assert!(p.drive());
    let d = p.data();
    let resent: Vec<_> = d.iter().skip(4).filter(|e| m(e).start == 3 * 365).collect();
    assert_eq!(resent.len(), 1, "§3: quickly detected losses are retransmitted");
    let st = p.client.stats();
    assert_eq!((st.num_fast_retx, st.num_rtos, st.segments_retx), (1, 0, 1));
    assert!(resent[0].arrive.is_some());
    assert!(p.server.as_mlt_receiver().unwrap().received_values() >= 50 * 365);
}

#[test]
fn timeout_only_losses_are_abandoned_within_the_bound_and_the_rest_resent() {
    // 20 packets; p = 0.9 needs 18 packets' values. The last four are lost and nothing after
    // them is acknowledged, so only the timer finds them: two may be abandoned, two must be
    // resent.
    let c = MltConfig { init_cwnd_pkts: 40, ..in_order(0.9) };
    let mut p = Pair::new(&TransportConfig::Mlt(c.clone()), 20 * 1460, 1);
    p.drop_data.extend([16, 17, 18, 19]);
    assert!(p.drive());
    let st = p.client.stats();
    assert_eq!((st.num_rtos, st.num_fast_retx, st.segments_retx), (1, 0, 2));
    let retx: Vec<u32> = p.data().iter().skip(20).map(|e| m(e).start / 365).collect();
    assert_eq!(retx, vec![18, 19]);
    let s = p.client.as_mlt_sender().unwrap();
    assert_eq!(s.abandoned_values(), 2 * 365);
    assert_eq!(p.client_events[0].1, Event::SenderDone { outcome: Outcome::Enough, confirmed: true });
    let rep = receiver(&p).report().unwrap();
    assert_eq!(rep.missing, vec![(16 * 365, 18 * 365)]);
    assert_eq!(rep.delivered, 18 * 365);
    // The sender ended at the ACK that first reported enough, one RTO after the last progress.
    assert!(p.completed_at().unwrap() > Time::ZERO + c.rto);
}

#[test]
fn p_one_is_a_reliable_transfer() {
    for seed in 0..8 {
        let mut p = Pair::new(&TransportConfig::Mlt(cfg(1.0)), 200 * 1460 + 100, seed);
        p.loss_to_server = 0.05;
        p.loss_to_client = 0.05;
        assert!(p.drive());
        assert!(p.is_complete());
        assert_eq!(p.client_events[0].1, Event::SenderDone { outcome: Outcome::Complete, confirmed: true });
        assert_eq!(p.server_events[0].1, Event::Delivered { outcome: Outcome::Complete });
        let r = receiver(&p);
        assert_eq!(r.report().unwrap().missing, vec![]);
        assert_eq!(p.client.as_mlt_sender().unwrap().abandoned_values(), 0);
        assert_eq!(r.received_values(), (200 * 1460 + 100) / 4);
    }
}

#[test]
fn bound_holds_and_report_is_exact_under_random_loss_and_reordering() {
    let mut rng = Pcg64::seed_from_u64(12);
    let mut num_enough = 0;
    for seed in 0..120u64 {
        let p_frac = [0.5, 0.65, 0.8, 0.85, 0.9, 0.95, 1.0][rng.gen_range(0..7)];
        let c = MltConfig {
            complete_fraction: p_frac,
            value_bytes: if rng.gen_bool(0.3) { 2 } else { 4 },
            rto: Dur::from_us(rng.gen_range(50..2000)),
            // Both window laws (from the seed, so the other draws stay as they were).
            cc: if seed % 2 == 0 { MltCc::Dctcp } else { MltCc::Cubic },
            // And with the tail-loss probe in a third of the runs.
            tail_probe: seed % 3 == 1,
            ..MltConfig::default()
        };
        let size = rng.gen_range(1..300_000u64);
        let mut p = Pair::new(&TransportConfig::Mlt(c.clone()), size, seed);
        p.loss_to_server = rng.gen_range(0.0..0.4);
        p.loss_to_client = rng.gen_range(0.0..0.3);
        p.reorder = rng.gen_range(0.0..0.3);
        p.reorder_delay = Dur::from_us(rng.gen_range(1..60));
        // Some runs also lose to a drop-tail bottleneck and see ECN marks (congestion, not
        // only random loss).
        if rng.gen_bool(0.3) {
            p.queue_cap_bytes = Some(rng.gen_range(3_000..30_000));
            p.mark = super::util::Mark::Prob(rng.gen_range(0.0..0.5));
        }
        assert!(p.drive_bounded(2_000_000), "seed {seed} livelocked");
        let total = c.values_in(size);
        let need = c.need_values(total);
        let done = p.completed_at().expect("the sender ends");
        let got = p.received_all_at().expect("the receiver completes");
        assert!(got <= done, "the sender learns after the receiver has it");
        let r = receiver(&p);
        let rep = r.report().unwrap();
        // The bound: at completion at least ceil(p·N) values, and exactly then.
        assert!(rep.delivered >= need && rep.total == total, "seed {seed}");
        let before: BTreeSet<u32> = delivered_values(&p, None).into_iter().collect();
        assert_eq!(r.missing_ranges(), ranges_missing(&before, total), "seed {seed}: live report exact");
        assert_eq!(r.received_values() as usize, before.len());
        let at_completion = delivered_values(&p, Some(got));
        let missing: u32 = rep.missing.iter().map(|(a, b)| b - a).sum();
        assert_eq!(missing, total - rep.delivered);
        assert!(rep.delivered as usize <= at_completion.len(), "seed {seed}");
        // Every value reported present arrived by then.
        let present: BTreeSet<u32> = ranges_missing(&BTreeSet::new(), total)
            .iter()
            .flat_map(|&(a, b)| a..b)
            .filter(|v| !rep.missing.iter().any(|&(s, e)| (s..e).contains(v)))
            .collect();
        assert!(present.is_subset(&at_completion), "seed {seed}");
        let outcome = match p.client_events[0].1 {
            Event::SenderDone { outcome, confirmed: true } => outcome,
            other => panic!("{other:?}"),
        };
        if p_frac == 1.0 {
            assert_eq!(outcome, Outcome::Complete, "seed {seed}");
        }
        if outcome == Outcome::Enough {
            num_enough += 1;
        }
        let s = p.client.as_mlt_sender().unwrap();
        assert!(total - s.abandoned_values() >= need, "seed {seed}: abandonment within the bound");
        assert!(matches!(&p.client, Endpoint::MltTx(_)));
    }
    assert!(num_enough > 20, "most lossy runs end with enough, not all: {num_enough}");
}

#[test]
fn ecn_marks_cut_the_window_by_dctcp_law_and_nothing_is_lost() {
    use super::util::Mark;
    let run = |mark: Mark| {
        let mut p = Pair::new(&TransportConfig::Mlt(cfg(1.0)), 400 * 1460, 3);
        p.mark = mark;
        assert!(p.drive());
        assert!(p.is_complete());
        p
    };
    let clean = run(Mark::Never);
    let marked = run(Mark::EveryNth(2));
    let (c, m) = (clean.client.stats(), marked.client.stats());
    assert_eq!((c.num_ecn, c.num_ecn_cuts), (0, 0));
    assert!(m.num_ecn > 0 && m.num_ecn_cuts > 0, "{m:?}");
    // DCTCP eq. 1: alpha tracks the marked fraction (1/2 here) from its initial 1.
    assert!(m.alpha > 0.3 && m.alpha < 0.9, "alpha {}", m.alpha);
    assert!(m.cwnd < c.cwnd, "{} vs {}", m.cwnd, c.cwnd);
    assert_eq!((m.segments_retx, m.num_rtos), (0, 0), "marks are not losses");
}

#[test]
fn a_fast_detected_loss_cuts_by_the_configured_law() {
    // 40 packets in the first window; packets 1-3 are acknowledged and 0 is not, so 0 is lost
    // (three later transmissions acknowledged). Slow start grew the window to 43 packets.
    let pkt = 1460u64;
    for (cc, ssthresh) in [
        // NewReno under DCTCP: max(FlightSize/2, 2 SMSS); FlightSize = 40 - 3 acked - 1 lost.
        (MltCc::Dctcp, 18 * pkt),
        // CUBIC, RFC 9438 §4.6: β·cwnd = 0.7 · 43 packets.
        (MltCc::Cubic, (43.0 * pkt as f64 * 0.7) as u64),
    ] {
        let cfg = MltConfig { init_cwnd_pkts: 40, cc, ..cfg(1.0) };
        let mut tx = MltSender::new(&cfg, 1, 100 * pkt);
        let sent: Vec<MltRepr> = std::iter::from_fn(|| tx.poll_transmit(Time::ZERO)).collect();
        assert_eq!(sent.len(), 40);
        for (k, d) in sent.iter().enumerate().skip(1).take(3) {
            let ack = MltRepr {
                conn: 1, seq: d.seq, start: d.start, end: d.end, total: d.total,
                cum: 0, received: k as u32 * 365, value_bytes: 4,
                flags: wire::Flags::ACK, ..Default::default()
            };
            tx.handle_segment(Time::ZERO + Dur::from_us(30), &ack);
        }
        let st = tx.stats();
        assert_eq!(st.num_fast_retx, 1, "{cc:?}");
        // Fast recovery: ssthresh + 3 segments (RFC 6582 §3.2 (2)).
        assert_eq!(st.cwnd, ssthresh + 3 * pkt, "{cc:?}");
    }
}

#[test]
fn sender_ends_at_the_first_ack_that_reports_enough() {
    for seed in 0..6 {
        let c = cfg(0.8);
        let size = 150 * 1460;
        let mut p = Pair::new(&TransportConfig::Mlt(c.clone()), size, seed);
        p.loss_to_server = 0.1;
        p.loss_to_client = 0.05;
        assert!(p.drive());
        let need = c.need_values(c.values_in(size));
        let first = p
            .acks()
            .iter()
            .filter(|e| e.arrive.is_some() && m(e).received >= need)
            .map(|e| e.arrive.unwrap())
            .min()
            .expect("an ACK reported enough");
        assert_eq!(p.completed_at(), Some(first), "seed {seed}");
        // No ACK that arrived earlier reported enough: not one value earlier.
        assert!(p.acks().iter().filter(|e| e.arrive.is_some_and(|a| a < first)).all(|e| m(e).received < need));
        assert!(matches!(p.client_events[0].1, Event::SenderDone { outcome: Outcome::Enough, confirmed: true }));
    }
}

#[test]
fn the_timeout_follows_the_measured_rtt_above_its_minimum() {
    // RFC 6298 over exact samples, on a 40 ms path (one-way 20 ms) with a 1 ms minimum: before
    // the first ACK the initial 1 ms timer fires and backs off (1, 2, 4, ... ms) until the
    // first sample; after it the timeout sits above the RTT, so a transfer ten times longer
    // (many more round trips) times out no more often. A fixed 1 ms timer would fire every
    // round trip.
    let c = MltConfig { complete_fraction: 1.0, rto: Dur::from_ms(1), ..MltConfig::default() };
    let rtos = |size: u64| {
        let mut p = Pair::new(&TransportConfig::Mlt(c.clone()), size, 1);
        p.latency = Dur::from_ms(20);
        assert!(p.drive());
        let tx = p.client.as_mlt_sender().expect("mlt sender");
        let st = tx.stats();
        assert!(st.srtt_ps >= Dur::from_ms(40).ps(), "srtt {} ps", st.srtt_ps);
        assert!(tx.rto() > Dur::from_ms(40) && tx.rto() <= c.max_rto, "rto {:?}", tx.rto());
        st.num_rtos
    };
    let (short, long) = (rtos(200_000), rtos(2_000_000));
    assert!(short <= 6 && long == short, "timeouts: {short} for 200 KB, {long} for 2 MB");
    // On a short path the minimum holds: srtt + 4 rttvar is far below 1 ms.
    let mut q = Pair::new(&TransportConfig::Mlt(c.clone()), 200_000, 1);
    assert!(q.drive());
    assert_eq!(q.client.as_mlt_sender().expect("mlt sender").rto(), Dur::from_ms(1));
}

#[test]
fn a_timeout_that_resends_backs_off_and_one_that_only_abandons_does_not() {
    let c = |p: f64| TransportConfig::Mlt(MltConfig { rto: Dur::from_ms(1), ..in_order(p) });
    // p = 1: the last packet (9 of a 10-packet window) and its first resend are lost; the
    // second resend leaves a backed-off timeout (2 ms) after the first (RFC 6298 5.5).
    let mut p = Pair::new(&c(1.0), 14_600, 3);
    p.drop_data = [9, 10].into_iter().collect();
    assert!(p.drive() && p.is_complete());
    let d = p.data();
    let (first, second) = (d[10].sent, d[11].sent);
    let gap = second.since(first);
    assert!(gap >= Dur::from_ms(2) && gap < Dur::from_us(2100), "resends at {first:?} and {second:?}");
    // A timeout that only abandons resends nothing and keeps the timeout. Twenty packets,
    // p = 0.85 (three may go): the first window's last three are lost with no later packet
    // acknowledged, so only the timer finds them; all three are abandoned.
    for (p_frac, resent) in [(0.85, false), (1.0, true)] {
        let cfg = MltConfig { rto: Dur::from_ms(1), ..in_order(p_frac) };
        let mut tx = crate::mlt::MltSender::new(&cfg, 1, 20 * 1460);
        let sent: Vec<MltRepr> = std::iter::from_fn(|| tx.poll_transmit(Time::ZERO)).collect();
        assert_eq!(sent.len(), 10);
        let at = Time::ZERO + Dur::from_us(30);
        for (k, d) in sent.iter().take(7).enumerate() {
            let ack = MltRepr {
                conn: 1, seq: d.seq, start: d.start, end: d.end, total: d.total,
                cum: k as u32 + 1, received: (k as u32 + 1) * 365, value_bytes: 4,
                flags: wire::Flags::ACK, ..Default::default()
            };
            tx.handle_segment(at, &ack);
        }
        // (Nothing more is sent: only packets 7-9 are outstanding when the timer fires.)
        let before = tx.rto();
        let due = tx.poll_timeout().expect("armed");
        tx.handle_timeout(due);
        let st = tx.stats();
        assert_eq!(st.num_rtos, 1);
        assert_eq!(tx.rto() == before.saturating_double().min(cfg.max_rto), resent, "p = {p_frac}");
        assert_eq!(tx.rto() == before, !resent, "p = {p_frac}: {:?} -> {:?}", before, tx.rto());
        let next = tx.poll_transmit(due);
        assert_eq!(next.is_some_and(|d| d.start < 3650), resent, "p = {p_frac}: {next:?} {st:?}");
    }
}

/// The first transmissions of a message of `pkts` full packets on connection `conn`: each
/// packet's index, in the order sent (the window opened wide, nothing acknowledged).
fn first_order(c: &MltConfig, conn: u32, pkts: u64) -> Vec<u32> {
    let c = MltConfig { init_cwnd_pkts: 10_000, ..c.clone() };
    let mut tx = MltSender::new(&c, conn, pkts * 1460);
    std::iter::from_fn(|| tx.poll_transmit(Time::ZERO)).map(|d| d.start / 365).collect()
}

#[test]
fn first_transmissions_are_a_permutation_drawn_per_message() {
    let c = cfg(0.9);
    let a = first_order(&c, 7, 200);
    let mut sorted = a.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..200).collect::<Vec<u32>>(), "every packet once");
    assert_ne!(a, sorted, "not the index order");
    assert_eq!(a, first_order(&c, 7, 200), "deterministic for one message");
    assert_ne!(a, first_order(&c, 8, 200), "another connection, another order");
    assert_ne!(a[..100].to_vec(), first_order(&c, 7, 201)[..100].to_vec(), "another size, another order");
    // Not a stride or a rotation: each half of the order holds packets from all over the
    // message (a uniform permutation puts 50 +- 7 of the first half's 100 in the first half).
    let early = a[..100].iter().filter(|&&i| i < 100).count();
    assert!((30..=70).contains(&early), "{early} of the first 100 sent are from the first half");
    assert_eq!(first_order(&in_order(0.9), 7, 200), sorted);
    assert_eq!(first_order(&c, 7, 1), vec![0], "one packet");
}

/// The receiver's report of one message sent without loss, delivered a window at a time (the
/// sender's whole burst, then the receiver's ACKs for it), until the sender ends.
fn lossless_report(c: &MltConfig, conn: u32, size: u64) -> crate::mlt::MltReport {
    let mut tx = MltSender::new(c, conn, size);
    let mut rx = MltReceiver::new(c, conn);
    let mut now = Time::ZERO;
    for _ in 0..10_000 {
        let burst: Vec<MltRepr> = std::iter::from_fn(|| tx.poll_transmit(now)).collect();
        now += Dur::from_us(10);
        for d in &burst {
            rx.handle_segment(now, d);
        }
        while let Some(ack) = rx.poll_transmit() {
            tx.handle_segment(now, &ack);
        }
        if matches!(tx.poll_event(), Some(Event::SenderDone { .. })) {
            return rx.report().expect("the receiver completed").clone();
        }
    }
    panic!("the sender never ended");
}

#[test]
fn without_loss_what_is_missing_at_completion_is_random_packets_not_the_tail() {
    // The sender stops at the first ACK that reports enough, so with a window smaller than the
    // message some packets are never sent, even with no loss. In index order they are always
    // the tail; shuffled, a different random set per message, so over many messages every part
    // of the vector misses about as often (1 - p of it here, give or take the window).
    let (pkts, total) = (100u32, 100 * 365);
    let mut missed_tail = [0u32; 2]; // index order, shuffled: messages missing the last packet
    let mut by_decile = [[0u32; 10]; 2];
    for (k, c) in [in_order(0.7), cfg(0.7)].into_iter().enumerate() {
        for conn in 1..=40u32 {
            let rep = lossless_report(&c, conn, u64::from(pkts) * 1460);
            assert!(rep.delivered >= 25_550 && rep.delivered < total, "{rep:?}");
            missed_tail[k] += u32::from(rep.missing.iter().any(|&(_, e)| e == total));
            for &(s, e) in &rep.missing {
                for v in (s..e).step_by(365) {
                    by_decile[k][(v / 3650) as usize] += 1;
                }
            }
        }
    }
    assert_eq!(missed_tail[0], 40, "index order: the tail is lost every time");
    assert_eq!(by_decile[0][..6].iter().sum::<u32>(), 0, "index order: the head never");
    assert!(missed_tail[1] < 30, "shuffled: the last packet missing in {} of 40", missed_tail[1]);
    assert!(by_decile[1].iter().all(|&n| n > 0), "shuffled: every decile misses sometimes: {:?}", by_decile[1]);
}


#[test]
fn every_packet_carries_its_place_and_the_cumulative_ack_counts_places() {
    // The sender stamps each packet with its place in its order of first transmissions; a
    // retransmission keeps it. The receiver's cumulative ACK is the first place it misses.
    let c = MltConfig { init_cwnd_pkts: 10_000, ..cfg(1.0) };
    let mut tx = MltSender::new(&c, 7, 50 * 1460);
    let first: Vec<MltRepr> = std::iter::from_fn(|| tx.poll_transmit(Time::ZERO)).collect();
    assert_eq!(first.iter().map(|d| d.pos).collect::<Vec<u32>>(), (0..50).collect::<Vec<u32>>());
    assert_ne!(first.iter().map(|d| d.start / 365).collect::<Vec<u32>>(), (0..50).collect::<Vec<u32>>(), "shuffled");
    let mut rx = MltReceiver::new(&c, 7);
    let mut ack_of = |d: &MltRepr| {
        rx.handle_segment(Time::ZERO, d);
        std::iter::from_fn(|| rx.poll_transmit()).last().unwrap()
    };
    // Places 0, 1, 3 arrive: the cumulative point stops at the missing place 2, whichever
    // value indices those packets carry.
    assert_eq!(ack_of(&first[0]).cum, 1);
    assert_eq!(ack_of(&first[1]).cum, 2);
    assert_eq!(ack_of(&first[3]).cum, 2);
    let a = ack_of(&first[2]);
    assert_eq!((a.cum, a.start, a.end), (4, first[2].start, first[2].end));
    // One ACK covering four places acknowledges exactly those four packets at the sender.
    tx.handle_segment(Time::from_us(10), &a);
    assert_eq!(tx.acked_values(), first[..4].iter().map(|d| d.end - d.start).sum::<u32>());
    // A timeout resends what is outstanding, each packet at its own place.
    tx.handle_timeout(Time::from_ms(100));
    let again = tx.poll_transmit(Time::from_ms(100)).unwrap();
    let orig = first.iter().find(|d| d.start == again.start).unwrap();
    assert!(again.seq > orig.seq);
    assert_eq!(again.pos, orig.pos, "a retransmission keeps its place");
    // A place outside the message is refused (the wire refuses it too).
    let mut r = MltReceiver::new(&c, 7);
    let bad = MltRepr { pos: first[0].total, ..first[0] };
    assert!(!r.accepts(&bad));
    r.handle_segment(Time::ZERO, &bad);
    assert_eq!((r.received_values(), r.poll_transmit()), (0, None));
}

#[test]
fn a_lost_ack_is_covered_by_the_next_one_in_either_send_order() {
    // Only ACKs are lost. The cumulative point counts places in the send order, so in both
    // orders the next ACK acknowledges what a lost one would have: no packet is resent for a
    // lost ACK and the runs are the same run relabelled (the same times and counters). Over
    // value indices, the shuffled order's cumulative point would rarely move: every lost ACK
    // was then a spurious fast retransmission and a window cut (measured before places: 2%
    // of ACKs lost took 2.2x as long, 10% 11x, 30% 100x).
    for p_frac in [1.0, 0.9] {
        for ack_loss in [0.02, 0.1, 0.3] {
            let mut runs = Vec::new();
            for order in [MltSendOrder::Index, MltSendOrder::Shuffled] {
                let c = MltConfig { send_order: order, ..cfg(p_frac) };
                for seed in 0..6 {
                    let mut p = Pair::new(&TransportConfig::Mlt(c.clone()), 400 * 1460, seed);
                    p.loss_to_client = ack_loss;
                    assert!(p.drive_bounded(2_000_000));
                    let s = p.client.as_mlt_sender().unwrap().stats();
                    if ack_loss <= 0.02 {
                        assert_eq!(s.segments_retx, 0, "{order:?} p {p_frac} ACK loss {ack_loss} seed {seed}");
                    }
                    runs.push((order, seed, p.completed_at().unwrap(), s.segments_sent, s.segments_retx, s.num_rtos));
                }
            }
            let (index, shuffled) = runs.split_at(runs.len() / 2);
            for (a, b) in index.iter().zip(shuffled) {
                assert_eq!((a.2, a.3, a.4, a.5), (b.2, b.3, b.4, b.5), "p {p_frac} ACK loss {ack_loss}: {a:?} vs {b:?}");
            }
        }
    }
}

#[test]
fn the_receivers_count_and_report_are_exact_whatever_the_packets_layout() {
    // The receiver keeps a bit per packet while packets have its own layout (values_per_pkt
    // values each) and a range set once one does not; either way its count and its list of
    // missing ranges are exactly those of the values that arrived, duplicates included.
    let c = cfg(1.0);
    let w = c.values_per_pkt();
    let mut rng = Pcg64::seed_from_u64(5);
    for case in 0..60u32 {
        let total = rng.gen_range(1..40 * w);
        let mut r = MltReceiver::new(&c, 1);
        let mut have = BTreeSet::new();
        // From the 20th packet on, some cases send packets of another layout too.
        let other_from = if case % 3 == 0 { 20 } else { usize::MAX };
        for k in 0..120usize {
            let (start, end) = if k >= other_from && rng.gen_bool(0.3) {
                let s = rng.gen_range(0..total);
                (s, (s + rng.gen_range(1..2 * w)).min(total))
            } else {
                let i = rng.gen_range(0..total.div_ceil(w));
                (i * w, (i * w + w).min(total))
            };
            let pos = rng.gen_range(0..total);
            r.handle_segment(Time::ZERO, &MltRepr { pos, ..data(start, end, total, k as u64) });
            have.extend(start..end);
            assert_eq!(r.received_values() as usize, have.len(), "case {case} packet {k}");
            if k % 8 == 0 || k == 119 {
                assert_eq!(r.missing_ranges(), ranges_missing(&have, total), "case {case} packet {k}");
            }
        }
        while r.poll_transmit().is_some() {}
    }
}

/// A 20-packet message in index order (10 µs each way, 10 Gb/s, a 10 ms timeout): the
/// run with `setup` applied, driven to its end.
fn tail_run(p_frac: f64, probe: bool, setup: impl Fn(&mut Pair)) -> Pair {
    let c = MltConfig { tail_probe: probe, ..in_order(p_frac) };
    let mut p = Pair::new(&TransportConfig::Mlt(c), 20 * 1460, 1);
    setup(&mut p);
    assert!(p.drive_bounded(100_000));
    p
}

#[test]
fn a_tail_loss_probe_ends_a_lost_tail_in_round_trips_not_a_timeout() {
    // The message's last two packets are lost (nothing sent after them is acknowledged, so
    // fast detection cannot see it). Without the probe the sender waits out the 10 ms
    // timeout; with it, two smoothed RTTs after the last ACK that made progress it sends the
    // last packet again (RFC 8985 §7.3); its ACK restarts the probe's timer, and a second
    // probe finds the other lost packet: both within a few RTTs, and no timeout fires.
    for p_frac in [1.0, 0.95] {
        let lost_tail = |p: &mut Pair| p.drop_data = [18, 19].into_iter().collect();
        let slow = tail_run(p_frac, false, lost_tail);
        let fast = tail_run(p_frac, true, lost_tail);
        let (s, f) = (slow.client.as_mlt_sender().unwrap(), fast.client.as_mlt_sender().unwrap());
        assert_eq!((s.stats().num_rtos, s.tail_probes()), (1, 0), "p {p_frac}");
        assert_eq!(f.stats().num_rtos, 0, "p {p_frac}");
        assert!(f.tail_probes() >= 1, "p {p_frac}");
        let (ts, tf) = (slow.completed_at().unwrap(), fast.completed_at().unwrap());
        assert!(ts >= Time::from_ms(10), "p {p_frac}: {ts:?}");
        assert!(tf < Time::from_us(300), "p {p_frac}: {tf:?}");
        // The probe: the last packet sent again, two smoothed RTTs after the last ACK that
        // made progress (the timer restarts at each, RFC 8985 §7.2). Every RTT sample here is
        // 20 us of propagation plus two serializations (1.2 us and 0.05 us).
        let d = fast.data();
        let probe = &d[20];
        assert_eq!((m(probe).start, m(probe).seq), (m(&d[19]).start, 20), "p {p_frac}");
        let last_ack = fast.acks().iter().filter_map(|e| e.arrive).filter(|&a| a <= probe.sent).max().unwrap();
        // The sender's SRTT then, replayed from the trace (RFC 6298 over each ACK's sample).
        let mut est = crate::rtt::RttEstimator::new(Dur::from_ms(10), Dur::from_ms(10), Dur::from_ms(1000));
        for a in fast.acks().iter().filter(|e| e.arrive.is_some_and(|t| t <= last_ack)) {
            let sent = d.iter().find(|e| m(e).seq == m(a).seq).unwrap().sent;
            est.on_sample(a.arrive.unwrap().since(sent));
        }
        let srtt = est.srtt().unwrap();
        assert_eq!(probe.sent.since(last_ack), srtt.saturating_double(), "p {p_frac}");
        assert!(srtt > Dur::from_us(20) && srtt < Dur::from_us(35), "p {p_frac}: {srtt:?}");
        // Everything the receiver has arrived; with p = 1 all of it.
        if p_frac == 1.0 {
            assert!(fast.is_complete());
        }
    }
}

#[test]
fn a_tail_loss_probe_recovers_lost_acks_that_said_enough() {
    // Every data packet arrives, but the ACKs of the last five are lost: the sender cannot
    // know the receiver is done. The probe's ACK says so (its cumulative point covers every
    // place) without resending anything else.
    for p_frac in [1.0, 0.85] {
        let lost_acks = |p: &mut Pair| p.drop_to_client = (15..20).collect();
        let slow = tail_run(p_frac, false, lost_acks);
        let fast = tail_run(p_frac, true, lost_acks);
        assert!(slow.completed_at().unwrap() >= Time::from_ms(10), "p {p_frac}");
        let f = fast.client.as_mlt_sender().unwrap();
        assert_eq!((f.stats().num_rtos, f.tail_probes(), f.stats().segments_retx), (0, 1, 1), "p {p_frac}");
        assert!(fast.completed_at().unwrap() < Time::from_us(200), "p {p_frac}: {:?}", fast.completed_at());
    }
}

#[test]
fn a_tail_loss_probe_waits_for_an_rtt_sample() {
    // No RTT sample yet: the first window's packets all lost, so only the timeout acts.
    let p = tail_run(1.0, true, |p| p.drop_data = (0..10).collect());
    let s = p.client.as_mlt_sender().unwrap();
    assert!(s.stats().num_rtos >= 1 && p.is_complete());
    let d = p.data();
    assert!(d[10].sent >= Time::from_ms(10), "the first resend waits for the timeout: {:?}", d[10].sent);
    // Early calls of handle_timeout change nothing (the driver may wake before deadlines).
    for probe in [false, true] {
        let setup = |p: &mut Pair| p.drop_data = [3, 18, 19].into_iter().collect();
        let a = tail_run(1.0, probe, setup);
        let b = tail_run(1.0, probe, |p| {
            setup(p);
            p.spurious_timeouts = true;
        });
        let times = |p: &Pair| p.data().iter().map(|e| (e.sent, m(e).start)).collect::<Vec<_>>();
        assert_eq!(times(&a), times(&b), "probe {probe}");
    }
}

#[test]
fn a_tail_loss_probe_in_loss_recovery_finds_a_lost_retransmission() {
    // 40 packets, p = 1. Packet 5's first transmission is lost and found fast; its
    // retransmission and the nine new packets sent after it are lost too, so once the packets
    // in flight before it are acknowledged no ACK comes back, with the sender in loss recovery
    // (packet 5 never acknowledged). RFC 8985 arms no probe in recovery (RACK's reordering
    // timer acts there, which this sender lacks): without ours the sender waits out the 10 ms
    // timeout; with it, the probe (the next new packet) arrives and its ACK shows the rest
    // lost.
    let c = |probe: bool| TransportConfig::Mlt(MltConfig { tail_probe: probe, ..in_order(1.0) });
    let run = |probe: bool, drops: &BTreeSet<usize>| {
        let mut p = Pair::new(&c(probe), 40 * 1460, 1);
        p.drop_data = drops.clone();
        assert!(p.drive_bounded(100_000) && p.is_complete());
        p
    };
    // Where the retransmission of packet 5 goes in the send order (the same with or without
    // the probe up to there: nothing stalls before it).
    let first = run(false, &[5].into_iter().collect());
    let d = first.data();
    let x = d.iter().position(|e| m(e).start == m(&d[5]).start && m(e).seq > m(&d[5]).seq).unwrap();
    let drops: BTreeSet<usize> = std::iter::once(5).chain(x..x + 10).collect();
    let slow = run(false, &drops);
    let fast = run(true, &drops);
    let (s, f) = (slow.client.as_mlt_sender().unwrap(), fast.client.as_mlt_sender().unwrap());
    assert!(s.stats().num_rtos >= 1 && slow.completed_at().unwrap() >= Time::from_ms(10));
    assert_eq!((f.stats().num_rtos, f.tail_probes()), (0, 1), "{:?}", f.stats());
    assert!(f.stats().num_fast_retx >= 2, "the probe's ACK found losses fast: {:?}", f.stats());
    assert!(fast.completed_at().unwrap() < Time::from_us(300), "{:?}", fast.completed_at());
    // The probe: sent after the lost ones with nothing acknowledged in between, and arrived.
    let fd = fast.data();
    let last_ack = fast.acks().iter().filter_map(|e| e.arrive).filter(|&a| a <= fd[x + 10].sent).max().unwrap();
    assert!(fd[x + 10].sent.since(last_ack) >= Dur::from_us(40) && fd[x + 10].arrive.is_some());
}

#[test]
fn without_the_option_no_probe_is_sent() {
    let p = tail_run(1.0, false, |p| p.drop_data = [19].into_iter().collect());
    let s = p.client.as_mlt_sender().unwrap();
    assert_eq!((s.tail_probes(), s.stats().num_rtos), (0, 1));
    assert!(!MltConfig::default().tail_probe);
}
