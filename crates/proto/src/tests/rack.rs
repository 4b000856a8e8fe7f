//! RACK-TLP (RFC 8985) traces of the TCP sender ([`TcpConfig::rack_tlp`]): a lost tail
//! repaired by a probe in round trips instead of a timeout, the probe's time and kind, RACK's
//! time-based detection and its reordering window, and the cases where no probe may leave.

use units::{Dur, Time};
use wire::Flags;

use super::util::Mark;
use super::{ack_arrivals, dctcp, lossy_sums, pair, sends_of, tcp, MSS};
use crate::{CcKind, TcpConfig};

fn rack(cc: CcKind) -> TcpConfig {
    TcpConfig { sack: true, rack_tlp: true, ..tcp(cc) }
}

/// The smoothed RTT the client had when it sent at `t` (the snapshot before).
fn srtt_before(p: &super::util::Pair, t: Time) -> Dur {
    let s = p.snaps.iter().rev().find(|s| s.at < t).expect("a snapshot before");
    Dur::from_ps(s.stats.srtt_ps)
}

/// The last three segments of a transfer are lost (an incast's classic tail loss): no
/// duplicate ACK reports them, so SACK alone waits out the 10 ms timeout. With RACK-TLP a probe
/// (the last segment again, there being no new data) leaves two smoothed RTTs after the last
/// ACK, its SACK lets RACK find the two segments below it lost, and fast recovery repairs them
/// within about two round trips more: no timeout, the window reduced once.
#[test]
fn a_lost_tail_is_repaired_by_a_probe_in_round_trips_not_a_timeout() {
    let size = 20 * MSS;
    let mut done = Vec::new();
    for on in [false, true] {
        let cfg = TcpConfig { rack_tlp: on, ..rack(CcKind::NewReno) };
        let mut p = pair(cfg, size, 0);
        p.drop_data.extend([17, 18, 19]);
        assert!(p.drive());
        assert!(p.is_complete());
        assert_eq!(p.server.stats().bytes_received, size);
        let s = p.client.stats();
        if !on {
            assert_eq!((s.num_rtos, s.num_tail_probes), (1, 0));
            done.push(p.completed_at().unwrap());
            continue;
        }
        assert_eq!((s.num_rtos, s.num_tail_probes, s.num_fast_retx), (0, 1, 1), "{s:?}");
        // The probe: the last segment again, 2·SRTT after the last ACK of new data.
        let probe = sends_of(&p, 19 * MSS)[1];
        assert!(probe.seg.flags.contains(Flags::FIN));
        let last_ack = ack_arrivals(&p, 17 * MSS)[0];
        assert_eq!(probe.sent, last_ack + srtt_before(&p, probe.sent).saturating_double());
        // Its SACK makes RACK call 17 and 18 lost at once (sent long before it): both resent
        // as soon as the probe's ACK arrives. (18 goes once more at the ACK of 17's
        // retransmission: RFC 6675's rescue retransmission, rule 4 of `NextSeg()`, which
        // SACK recovery has with or without RACK.)
        let probe_ack = p.acks().into_iter().find(|e| e.sent > probe.sent).unwrap().arrive.unwrap();
        for k in [17, 18] {
            assert_eq!(sends_of(&p, k * MSS)[1].sent, probe_ack, "segment {k}");
        }
        assert_eq!(sends_of(&p, 17 * MSS).len(), 2);
        let rescue = sends_of(&p, 18 * MSS);
        assert_eq!(rescue.len(), 3);
        assert_eq!(rescue[2].sent, ack_arrivals(&p, 18 * MSS)[0]);
        assert_eq!(s.segments_retx, 4);
        done.push(p.completed_at().unwrap());
    }
    let min_rto = TcpConfig::default().min_rto;
    assert!(done[0] > Time::ZERO + min_rto, "{done:?}");
    // Without: past the 10 ms timeout; with: about seven round trips of about 21 µs.
    assert!(done[1] < Time::ZERO + Dur::from_us(150), "{done:?}");
}

/// With new data left to send (the window full), the probe is the next new segment, sent
/// beyond the window: here every ACK of the first window is lost, so the sender hears nothing
/// until the probe's ACK, which acknowledges everything at once. No timeout, nothing resent,
/// no window reduction (the probe was new data); without RACK-TLP the timer fires and
/// go-back-N resends the window.
#[test]
fn a_probe_sends_new_data_when_there_is_some() {
    for on in [false, true] {
        let cfg = TcpConfig { init_cwnd_pkts: 4, handshake: true, rack_tlp: on, ..rack(CcKind::NewReno) };
        let mut p = pair(cfg, 12 * MSS, 0);
        // The server's segments: 0 is the SYN-ACK (the first RTT sample), 1-4 the ACKs of
        // the first window.
        p.drop_to_client.extend(1..=4);
        assert!(p.drive());
        assert!(p.is_complete());
        let s = p.client.stats();
        if !on {
            assert_eq!((s.num_rtos, s.num_tail_probes), (1, 0), "{s:?}");
            continue;
        }
        assert_eq!((s.num_rtos, s.num_tail_probes, s.segments_retx), (0, 1, 0), "{s:?}");
        let probe = sends_of(&p, 4 * MSS)[0];
        let window_sent = sends_of(&p, 3 * MSS)[0].sent;
        assert_eq!(probe.sent, window_sent + srtt_before(&p, probe.sent).saturating_double());
        let cwnd_before = p.snaps.iter().rev().find(|x| x.at < probe.sent).unwrap().stats.cwnd;
        let after = p.snaps.iter().find(|x| x.seq.0 == 5 * MSS).unwrap().stats.cwnd;
        assert!(after >= cwnd_before, "no reduction: {cwnd_before} -> {after}");
    }
}

/// Without an RTT sample there is no probe (a lost first window waits for the timer, as the
/// module docs say), and a probe never leaves in loss recovery or with anything SACKed.
#[test]
fn no_probe_before_an_rtt_sample() {
    let cfg = TcpConfig { init_cwnd_pkts: 4, ..rack(CcKind::NewReno) };
    let mut p = pair(cfg, 4 * MSS, 0);
    p.drop_data.extend([0, 1, 2, 3]);
    assert!(p.drive());
    assert!(p.is_complete());
    let s = p.client.stats();
    assert_eq!((s.num_rtos, s.num_tail_probes), (1, 0));
}

/// RACK by time: a hole with SACKed segments above it is lost once RACK.rtt plus the
/// reordering window (a quarter of the minimum RTT) has passed since it left, even with fewer
/// than `DupThresh` segments SACKed above it (RFC 6675 alone would wait for the timer).
#[test]
fn rack_finds_a_loss_with_one_segment_sacked_above_it() {
    for on in [false, true] {
        let cfg = TcpConfig { init_cwnd_pkts: 2, rack_tlp: on, ..rack(CcKind::NewReno) };
        let mut p = pair(cfg, 2 * MSS, 0);
        // Of two segments the first is lost: one SACK of the second, no third duplicate.
        p.drop_data.insert(0);
        assert!(p.drive());
        assert!(p.is_complete());
        let s = p.client.stats();
        if on {
            // The first RTT sample comes with that SACK: RACK.rtt is the second segment's.
            // The reordering timer fires a quarter min-RTT after (RACK.rtt + reo_wnd from
            // the first segment's send), then fast recovery resends it.
            assert_eq!((s.num_rtos, s.num_fast_retx, s.num_tail_probes), (0, 1, 0), "{s:?}");
            let sack_at = p.acks()[0].arrive.unwrap();
            let resent = sends_of(&p, 0)[1].sent;
            let first = sends_of(&p, 0)[0].sent;
            let second = sends_of(&p, MSS)[0].sent;
            let rack_rtt = sack_at.saturating_since(second);
            let reo = Dur::from_ps(rack_rtt.ps() / 4);
            assert_eq!(resent, first + rack_rtt + reo, "sack {sack_at:?}");
        } else {
            assert_eq!(s.num_rtos, 1, "{s:?}");
        }
    }
}

/// Reordering short of the window: a segment delayed by less than RACK.rtt + reo_wnd is not
/// resent; RACK notes the reordering (the window then stays a quarter min-RTT in recovery).
#[test]
fn a_segment_delayed_less_than_the_reordering_window_is_not_resent() {
    let cfg = rack(dctcp(1.0));
    let mut p = pair(cfg, 40 * MSS, 0);
    // Segment 10 arrives 2 µs late (the RTT is about 22 µs: a quarter is 5 µs).
    p.delay_data.insert(10, Dur::from_us(2));
    assert!(p.drive());
    assert!(p.is_complete());
    let s = p.client.stats();
    assert_eq!((s.segments_retx, s.num_fast_retx, s.num_rtos, s.num_tail_probes), (0, 0, 0, 0), "{s:?}");
}

/// Under random loss, reordering and marks both ways, every transfer completes with every
/// byte, RACK-TLP keeps no more than one slot per segment outstanding, and over many seeds it
/// times out less and finishes sooner than SACK alone.
#[test]
fn random_loss_with_rack_tlp_completes_and_times_out_less() {
    for cc in [CcKind::NewReno, dctcp(1.0)] {
        let cfg = |seed: u64, on: bool| TcpConfig { rack_tlp: on, handshake: seed & 1 == 0, ..rack(cc) };
        let every_slot_dropped = |p: &super::util::Pair| {
            if let Some(slots) = p.client_conn().rack_slots() {
                assert_eq!(slots, 0, "every slot dropped once acknowledged");
            }
        };
        let (rtos, done) = lossy_sums(cfg, Mark::Prob(0.1), every_slot_dropped);
        assert!(rtos[1] < rtos[0], "{cc:?}: timeouts without / with RACK-TLP {rtos:?}");
        assert!(done[1] < done[0], "{cc:?}: completion sums without / with RACK-TLP {done:?}");
    }
}

/// Without SACK the key changes nothing (RACK-TLP needs SACK): the same trace.
#[test]
fn without_sack_rack_tlp_changes_nothing() {
    let run = |on: bool| {
        let cfg = TcpConfig { rack_tlp: on, ..tcp(CcKind::NewReno) };
        let mut p = pair(cfg, 20 * MSS, 3);
        p.drop_data.extend([5, 17, 18, 19]);
        assert!(p.drive());
        p.trace.iter().map(|e| (e.sent, e.seg.seq, e.seg.ack, e.arrive)).collect::<Vec<_>>()
    };
    assert_eq!(run(false), run(true));
}

/// A retransmission lost again: RFC 6675 alone never resends a hole below `HighRxt` and
/// waits for the timer; RACK sees segments sent after the retransmission delivered, calls it
/// lost once RACK.rtt has passed (no reordering window in recovery) and sends it a third time.
#[test]
fn a_lost_retransmission_is_found_and_sent_again() {
    let size = 100 * MSS;
    // Where the retransmission of segment 5 falls in the order of data transmissions.
    let mut p = pair(rack(CcKind::NewReno), size, 0);
    p.drop_data.insert(5);
    assert!(p.drive());
    let idx = p.data().iter().enumerate().filter(|(_, e)| e.seg.seq == 5 * MSS).nth(1).map(|(i, _)| i).unwrap();
    for on in [false, true] {
        let cfg = TcpConfig { rack_tlp: on, ..rack(CcKind::NewReno) };
        let mut p = pair(cfg, size, 0);
        p.drop_data.extend([5, idx]);
        assert!(p.drive());
        assert!(p.is_complete());
        assert_eq!(p.server.stats().bytes_received, size);
        let s = p.client.stats();
        let sends = sends_of(&p, 5 * MSS);
        assert_eq!(sends.len(), 3);
        if !on {
            assert_eq!(s.num_rtos, 1, "{s:?}");
            continue;
        }
        assert_eq!((s.num_rtos, s.num_fast_retx), (0, 1), "{s:?}");
        // The third send: RACK.rtt after the second, once an ACK of later data arrived.
        assert!(sends[2].sent > sends[1].sent && sends[2].sent < sends[1].sent + Dur::from_us(100), "{sends:?}");
        // Nothing else was sent more than once.
        let data = p.data();
        let resent = data.iter().filter(|e| data.iter().filter(|x| x.seg.seq == e.seg.seq).count() > 1 && e.seg.seq != 5 * MSS).count();
        assert_eq!(resent, 0);
    }
}
