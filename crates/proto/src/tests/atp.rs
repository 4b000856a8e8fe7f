//! Protocol traces of ATP (NetApprox §4) over the `Pair` harness: each equation, the
//! starvation guard, MRDF order, group accounting, completion, classes, and the bound on the
//! measured loss rate under every loss pattern the harness makes.

use units::{Bps, Bytes, Dur, Time};
use wire::{AtpKind, AtpRepr};

use super::util::{Pair, HEADER_BYTES};
use crate::atp::{required_messages, AtpConfig, EpochLog, GroupSpec, OnLoss, Sched, MAX_JOB_MESSAGES};
use crate::{Endpoint, Event, Outcome, Segment, TransportConfig};

const MSS: u64 = 1460;
const RATE: Bps = Bps::from_gbps(10);

/// ATP with the harness's header size, so that pacing and the pipe agree on packet sizes.
fn cfg() -> AtpConfig {
    AtpConfig { header_bytes: HEADER_BYTES as u32, ..AtpConfig::default() }
}

/// A pair whose client is a job of `groups`, with `msgs` = (group, bytes) handed over at
/// once, then closed; R_max is the pipe's rate. Epoch logging is on.
fn job_pair(c: &AtpConfig, groups: &[GroupSpec], msgs: &[(u16, u64)], seed: u64) -> Pair {
    let t = TransportConfig::Atp(c.clone());
    let mut p = Pair::new(&t, 1, seed);
    let mut ep = Endpoint::job_sender(&t, 1, groups, Time::ZERO).expect("a valid job");
    ep.set_line_rate(RATE);
    for &(g, b) in msgs {
        ep.send_message(g, b).expect("a valid message");
    }
    ep.close();
    ep.as_atp_sender_mut().unwrap().record_epochs(true);
    p.client = ep;
    p
}

fn even_job(n: u64, msr: f64, pkts: u64) -> (Vec<GroupSpec>, Vec<(u16, u64)>) {
    (vec![GroupSpec { messages: n, msr }], (0..n).map(|_| (0, pkts * MSS)).collect())
}

fn outcome(p: &Pair) -> Option<Outcome> {
    p.client_events.iter().find_map(|(_, e)| match e {
        Event::SenderDone { outcome, .. } => Some(*outcome),
        _ => None,
    })
}

fn log(p: &mut Pair) -> Vec<EpochLog> {
    p.client.as_atp_sender_mut().unwrap().take_log()
}

fn atp(e: &super::util::TraceEntry) -> AtpRepr {
    match e.pkt {
        Segment::Atp(a) => a,
        other => panic!("not ATP: {other:?}"),
    }
}

/// Messages of each group the receiver has whole, with `group_of[msg]`.
fn received_per_group(p: &Pair, group_of: &[u16], groups: usize) -> Vec<u64> {
    let rx = p.server.as_atp_receiver().expect("an ATP receiver");
    let mut n = vec![0; groups];
    for (m, &g) in group_of.iter().enumerate() {
        if rx.has_message(m as u32) {
            n[g as usize] += 1;
        }
    }
    n
}

#[test]
fn no_loss_completes_once_msr_x_n_messages_are_acknowledged_at_the_closed_form() {
    // 20 messages of 3 packets, MSR 0.5: the job needs messages 0..9 (MRDF ties go to the
    // lowest id). At R_max = the pipe's rate, packets leave back to back; message 9's last
    // packet is the 30th, and the job completes when its ACK returns.
    let (groups, msgs) = even_job(20, 0.5, 3);
    let mut p = job_pair(&cfg(), &groups, &msgs, 0);
    assert!(p.drive());
    let gap = p.tx(MSS);
    let done = Time::ZERO + gap * 30 + p.latency + p.tx(0) + p.latency;
    assert_eq!(p.completed_at(), Some(done));
    assert_eq!(outcome(&p), Some(Outcome::Enough));
    let data = p.data();
    for (i, e) in data.iter().enumerate() {
        assert_eq!(e.sent, Time::ZERO + gap * i as u64, "paced at R_max");
        let a = atp(e);
        assert_eq!((a.seq, a.msg, a.pkt, a.pkts), (i as u64, i as u32 / 3, i as u32 % 3, 3));
    }
    // The sender stops at completion: nothing is retransmitted, and it sends one Fin.
    let s = p.client.stats();
    assert_eq!(s.segments_retx, 0);
    assert!(s.segments_sent < 60, "stopped sending once done: {}", s.segments_sent);
    let fins: Vec<_> = p.trace.iter().filter(|e| matches!(e.pkt, Segment::Atp(a) if a.kind == AtpKind::Fin)).collect();
    assert_eq!(fins.len(), 1);
    assert_eq!(fins[0].sent, done);
    assert_eq!(atp(fins[0]).seq, 20, "the Fin carries the job's message count");
    // The receiver reports every message it does not have, once the Fin arrived.
    let rx = p.server.as_atp_receiver().unwrap();
    let lost = rx.lost_messages().expect("the Fin arrived");
    assert_eq!(lost.len() as u64, 20 - rx.messages_received());
    assert!(lost.iter().all(|&m| !rx.has_message(m)) && (0..10).all(|m| rx.has_message(m)));
    assert_eq!(p.received_all_at(), fins[0].arrive);
}

#[test]
fn every_data_packet_gets_its_own_ack_echoing_it() {
    let (groups, msgs) = even_job(4, 1.0, 2);
    let mut p = job_pair(&cfg(), &groups, &msgs, 0);
    assert!(p.drive());
    assert_eq!(outcome(&p), Some(Outcome::Complete));
    let data = p.data();
    let acks: Vec<AtpRepr> = p.acks().iter().map(atp).filter(|a| a.kind == AtpKind::Ack).collect();
    assert_eq!(acks.len(), data.len());
    for (d, a) in data.iter().map(atp).zip(&acks) {
        assert_eq!((a.seq, a.msg, a.pkt, a.pkts, a.group, a.epoch, a.ts_ps), (d.seq, d.msg, d.pkt, d.pkts, d.group, d.epoch, d.ts_ps));
        assert_eq!((a.len, a.prio), (0, 0), "ACKs carry no payload and go in ack_prio");
    }
}

/// The measured loss rate of a completed job never exceeds 1 - MSR in any group: random loss
/// both ways, reordering, several groups (one reliable), with and without MRDF, many seeds.
#[test]
fn the_measured_loss_rate_never_exceeds_one_minus_msr_under_any_loss() {
    let mut completed = 0;
    for seed in 0..60u64 {
        let loss = [0.0, 0.05, 0.2, 0.4, 0.7][seed as usize % 5];
        let msrs = [[0.3, 1.0], [0.5, 0.9], [0.9, 0.0], [1.0, 0.75]][seed as usize / 5 % 4];
        let groups = vec![GroupSpec { messages: 17, msr: msrs[0] }, GroupSpec { messages: 11, msr: msrs[1] }];
        let mut msgs = Vec::new();
        let mut group_of = Vec::new();
        for k in 0..28u64 {
            // 17 is prime to 28: exactly 17 of the 28 land in group 0, interleaved.
            let g = u16::from((k * 17) % 28 >= 17);
            msgs.push((g, 1 + (k * 977 + seed * 131) % (4 * MSS)));
            group_of.push(g);
        }
        assert_eq!(group_of.iter().filter(|&&g| g == 0).count(), 17);
        let c = AtpConfig {
            sched: [Sched::Mrdf, Sched::InOrder, Sched::NewFirst][seed as usize % 3],
            on_loss: if seed % 4 < 2 { OnLoss::GiveUp } else { OnLoss::Resend },
            ..cfg()
        };
        let mut p = job_pair(&c, &groups, &msgs, seed);
        p.loss_to_server = loss;
        p.loss_to_client = loss / 2.0;
        p.reorder = 0.1;
        p.reorder_delay = Dur::from_us(15);
        assert!(p.drive(), "seed {seed}: livelock");
        let out = outcome(&p).unwrap_or_else(|| panic!("seed {seed}: no outcome"));
        assert_ne!(out, Outcome::GivenUp, "seed {seed}: loss {loss} made it give up");
        completed += 1;
        let got = received_per_group(&p, &group_of, 2);
        let report = p.client.as_atp_sender().unwrap().report();
        for g in 0..2 {
            let need = required_messages(groups[g].msr, groups[g].messages);
            assert!(got[g] >= need, "seed {seed} group {g}: {} of {} arrived, MSR {} needs {need}", got[g], groups[g].messages, groups[g].msr);
            let measured = 1.0 - got[g] as f64 / groups[g].messages as f64;
            assert!(measured <= 1.0 - groups[g].msr + 1e-9, "seed {seed} group {g}: loss {measured}");
            // The sender never believes more delivered than arrived, and gives up within the slack.
            assert!(report[g].delivered <= got[g], "seed {seed} group {g}");
            assert!(report[g].lost <= groups[g].messages - need, "seed {seed} group {g}");
        }
    }
    assert_eq!(completed, 60);
}

#[test]
fn a_reliable_group_delivers_every_message_under_heavy_loss() {
    let (groups, msgs) = even_job(30, 1.0, 2);
    let mut p = job_pair(&cfg(), &groups, &msgs, 3);
    p.loss_to_server = 0.5;
    assert!(p.drive());
    assert_eq!(outcome(&p), Some(Outcome::Complete));
    assert_eq!(p.server.as_atp_receiver().unwrap().messages_received(), 30);
    assert!(p.client.stats().segments_retx > 0);
    assert_eq!(p.client.as_atp_sender().unwrap().report()[0].lost, 0);
}

#[test]
fn a_job_that_has_its_share_before_a_loss_is_found_resends_nothing() {
    // 10 one-packet messages, MSR 0.7: the first three packets are lost, and the other seven
    // are acknowledged before the loss timeout: the job completes without a resend.
    let (groups, msgs) = even_job(10, 0.7, 1);
    let mut p = job_pair(&cfg(), &groups, &msgs, 0);
    p.drop_data = [0, 1, 2].into();
    assert!(p.drive());
    assert_eq!(outcome(&p), Some(Outcome::Enough));
    assert_eq!(p.data().len(), 10);
    assert_eq!(p.client.stats().segments_retx, 0);
    let r = p.client.as_atp_sender().unwrap().report()[0];
    assert_eq!((r.delivered, r.required), (7, 7));
    assert_eq!(p.server.as_atp_receiver().unwrap().lost_messages(), Some(vec![0, 1, 2]));
}

#[test]
fn losses_within_the_slack_are_given_up_and_only_those_beyond_it_resent() {
    // 10 one-packet messages, MSR 0.8: 2 may be lost. Four packets are lost: the first two
    // losses found are given up (eq. (1)'s slack), the other two resent (§4.1).
    let (groups, msgs) = even_job(10, 0.8, 1);
    let mut p = job_pair(&cfg(), &groups, &msgs, 0);
    p.drop_data = [0, 1, 2, 3].into();
    assert!(p.drive());
    assert_eq!(outcome(&p), Some(Outcome::Enough));
    let data = p.data();
    let resent: Vec<u32> = data[10..].iter().map(|e| atp(e).msg).collect();
    assert_eq!(resent, vec![2, 3]);
    assert_eq!(p.client.stats().segments_retx, 2);
    let r = p.client.as_atp_sender().unwrap().report()[0];
    assert_eq!((r.delivered, r.lost), (8, 2));
    assert_eq!(p.server.as_atp_receiver().unwrap().lost_messages(), Some(vec![0, 1]));
}

#[test]
fn with_on_loss_resend_every_lost_packet_goes_back_to_the_scheduler() {
    // Our variant: all four are resent at the epoch end that finds them (a lost one-packet
    // message ties with a new one, and none is left); the job completes with the first two
    // resends, and eq. (1) counted the four as lost meanwhile: no slack left.
    let (groups, msgs) = even_job(10, 0.8, 1);
    let mut p = job_pair(&AtpConfig { on_loss: OnLoss::Resend, ..cfg() }, &groups, &msgs, 0);
    p.drop_data = [0, 1, 2, 3].into();
    assert!(p.drive());
    assert_eq!(outcome(&p), Some(Outcome::Enough));
    let data = p.data();
    let resent: Vec<u32> = data[10..].iter().map(|e| atp(e).msg).collect();
    assert_eq!(resent, vec![0, 1, 2, 3]);
    assert_eq!(p.client.stats().segments_retx, 4);
    let r = p.client.as_atp_sender().unwrap().report()[0];
    assert!(r.delivered >= 8 && r.delivered + r.lost == 10, "{r:?}");
    let logs = log(&mut p);
    assert!(logs.iter().any(|l| l.lost == 4 && l.next_tlr == 0.0), "{logs:?}");
}

#[test]
fn new_first_resends_only_after_every_new_packet() {
    // ATP_Base's order: a lost packet waits until every message has been sent once.
    let (groups, msgs) = even_job(60, 1.0, 1);
    let c = AtpConfig { sched: Sched::NewFirst, ..cfg() };
    let mut p = job_pair(&c, &groups, &msgs, 0);
    p.client.set_line_rate(Bps::from_gbps(1));
    p.rate = Some(Bps::from_gbps(1));
    p.drop_data = [0].into();
    assert!(p.drive());
    let msgs_sent: Vec<u32> = p.data().iter().map(|e| atp(e).msg).collect();
    assert_eq!(msgs_sent, (0..60).chain([0]).collect::<Vec<u32>>());
    // MRDF resends it as soon as the loss is found (a tie with the new ones, lowest id first).
    let mut q = job_pair(&cfg(), &groups, &msgs, 0);
    q.client.set_line_rate(Bps::from_gbps(1));
    q.rate = Some(Bps::from_gbps(1));
    q.drop_data = [0].into();
    assert!(q.drive());
    let at = q.data().iter().skip(1).position(|e| atp(e).msg == 0).unwrap() + 1;
    assert!(at < 20, "resent as packet {at}");
}

#[test]
fn a_late_ack_of_a_given_up_message_counts_it_delivered_and_takes_the_loss_back() {
    // Packet 0 is delayed past its loss timeout: message 0 is given up, then arrives.
    let (groups, msgs) = even_job(100, 0.5, 1);
    let mut p = job_pair(&cfg(), &groups, &msgs, 0);
    p.delay_data = [(0, Dur::from_us(200))].into();
    // Slow the sender so the job is still running when the late ACK comes back.
    p.client.as_atp_sender_mut().unwrap().set_line_rate(Bps::from_gbps(1));
    p.rate = Some(Bps::from_gbps(1));
    assert!(p.drive());
    let logs = log(&mut p);
    assert!(logs.iter().any(|l| l.lost == 1), "message 0 was given up at some epoch");
    let r = p.client.as_atp_sender().unwrap().report()[0];
    assert_eq!(r.lost, 0, "and its loss taken back");
    assert!(p.server.as_atp_receiver().unwrap().has_message(0));
}

/// Eq. (1): each epoch's next TLR is `((1 - MSR) N - lost) / (N - delivered)` at its end.
#[test]
fn eq1_sets_each_epochs_target_from_the_slack_left() {
    let (groups, msgs) = even_job(200, 0.6, 1);
    let mut p = job_pair(&cfg(), &groups, &msgs, 11);
    p.loss_to_server = 0.3;
    assert!(p.drive());
    let logs = log(&mut p);
    assert!(logs.len() > 5);
    let allowed = 200 - required_messages(0.6, 200);
    for l in &logs {
        let expect = ((allowed - l.lost) as f64 / (200 - l.delivered) as f64).clamp(0.0, 1.0);
        assert!((l.next_tlr - expect).abs() < 1e-12, "{l:?}: expected {expect}");
    }
    // TLR_0 = 1 - MSR; each measured epoch is judged against a target set at an earlier end.
    let first = logs.iter().find(|l| !l.tlr.is_nan()).unwrap();
    assert!((first.tlr - 0.4).abs() < 1e-12);
    for (i, l) in logs.iter().enumerate().filter(|(_, l)| !l.tlr.is_nan()) {
        assert!(l.tlr == 0.4 || logs[..i].iter().any(|e| e.next_tlr == l.tlr), "{l:?}");
    }
    // Losses made it move.
    assert!(logs.iter().any(|l| (l.next_tlr - 0.4).abs() > 1e-3));
    // Without dynamic TLR it stays at TLR_0.
    let mut q = job_pair(&AtpConfig { dynamic_tlr: false, ..cfg() }, &groups, &msgs, 11);
    q.loss_to_server = 0.3;
    assert!(q.drive());
    assert!(log(&mut q).iter().all(|l| (l.next_tlr - 0.4).abs() < 1e-12));
}

/// Eqs. (2)-(3) and R_min: each epoch's rate follows from the previous one by the logged loss
/// and target.
#[test]
fn eq2_and_eq3_move_the_rate_by_the_measured_loss_against_the_target() {
    // R_max is 4x the bottleneck and its buffer is small: ATP must slow down.
    let (groups, msgs) = even_job(400, 0.9, 2);
    let mut p = job_pair(&cfg(), &groups, &msgs, 0);
    p.client.set_line_rate(Bps::from_gbps(40));
    p.queue_cap_bytes = Some(8 * (MSS + HEADER_BYTES));
    assert!(p.drive());
    assert_ne!(outcome(&p), Some(Outcome::GivenUp));
    let logs = log(&mut p);
    let (r_max, m) = (40e9, 0.125);
    let mut rate = r_max;
    let (mut ups, mut downs) = (0, 0);
    for l in &logs {
        let r_min = l.rate_bps.min(rate); // the floor moves with the RTT; checked below
        match l.loss {
            Some(rho) if rho > l.tlr => {
                rate = (rate * (1.0 - rho / 2.0)).max(r_min);
                downs += 1;
            }
            Some(rho) if rho < l.tlr || rho == 0.0 => {
                rate = ((1.0 - m) * rate + m * r_max).min(r_max);
                ups += 1;
            }
            _ => {}
        }
        assert!((l.rate_bps - rate).abs() <= 1e-6 * rate.max(1.0), "{l:?}: expected {rate}");
        rate = l.rate_bps;
    }
    assert!(ups > 0 && downs > 0, "both equations ran: {ups} up, {downs} down");
    // The rate settles well below R_max, around the bottleneck.
    let tail: Vec<f64> = logs[logs.len() / 2..].iter().map(|l| l.rate_bps).collect();
    let mean = tail.iter().sum::<f64>() / tail.len() as f64;
    assert!(mean < 25e9, "mean rate {mean}");
}

#[test]
fn without_acks_the_rate_falls_to_one_packet_per_rtt_and_keeps_probing_then_gives_up() {
    let c = AtpConfig { max_silent_epochs: 30, ..cfg() };
    let (groups, msgs) = even_job(100, 0.5, 1);
    let mut p = job_pair(&c, &groups, &msgs, 0);
    p.loss_to_server = 1.0;
    assert!(p.drive());
    assert_eq!(outcome(&p), Some(Outcome::GivenUp));
    let logs = log(&mut p);
    // Thirty epochs were judged without any ACK (the first ends judge nothing yet).
    assert!(logs.len() > 30 && logs.iter().filter(|l| l.loss == Some(1.0)).count() == 30, "{logs:?}");
    // R_min = one full packet per RTT estimate (init_rtt: no sample ever arrives).
    let r_min = (MSS + HEADER_BYTES) as f64 * 8.0 / 20e-6;
    assert!((logs.last().unwrap().rate_bps - r_min).abs() < 1.0, "{:?}", logs.last());
    // Every epoch kept sending: the starvation guard (§4.2).
    let data = p.data();
    let epochs: std::collections::BTreeSet<u32> = data.iter().map(|e| atp(e).epoch).collect();
    assert_eq!(epochs.len(), logs.len(), "at least one packet in every epoch");
    assert!(logs.iter().all(|l| l.loss == Some(1.0) || l.loss.is_none()));
}

#[test]
fn mrdf_sends_the_message_with_least_remaining_data_first_and_ordered_mode_does_not() {
    let groups = vec![GroupSpec { messages: 2, msr: 1.0 }];
    let msgs = [(0, 10 * MSS), (0, 2 * MSS)];
    let mut p = job_pair(&cfg(), &groups, &msgs, 0);
    assert!(p.drive());
    let order: Vec<u32> = p.data().iter().map(|e| atp(e).msg).collect();
    assert_eq!(order, [vec![1, 1], vec![0; 10]].concat());
    let mut q = job_pair(&AtpConfig { sched: Sched::InOrder, ..cfg() }, &groups, &msgs, 0);
    assert!(q.drive());
    let order: Vec<u32> = q.data().iter().map(|e| atp(e).msg).collect();
    assert_eq!(order, [vec![0; 10], vec![1, 1]].concat());
}

#[test]
fn a_retransmission_of_an_almost_delivered_message_goes_before_new_messages() {
    // Reliable: message 0 (2 packets) loses its second packet. When the loss is found,
    // message 0 has one packet left, less than any new message (3 packets each): MRDF sends
    // it at once, ahead of the new messages still waiting.
    let groups = vec![GroupSpec { messages: 40, msr: 1.0 }];
    let msgs: Vec<(u16, u64)> = std::iter::once((0, 2 * MSS)).chain((0..39).map(|_| (0, 3 * MSS))).collect();
    let mut p = job_pair(&cfg(), &groups, &msgs, 0);
    p.client.set_line_rate(Bps::from_gbps(1));
    p.rate = Some(Bps::from_gbps(1));
    p.drop_data = [1].into();
    assert!(p.drive());
    let data = p.data();
    let retx = data.iter().skip(2).position(|e| atp(e).msg == 0).expect("resent") + 2;
    assert_eq!(atp(&data[retx]).pkt, 1);
    assert!(data.len() - retx > 30, "most new messages were still waiting: sent {retx} before it");
    // It went out within a few round trips of the loss (about 32 µs each here), not after
    // the new messages (1.4 ms of them).
    let rtt = p.tx(MSS) + p.latency + p.tx(0) + p.latency;
    assert!(data[retx].sent.since(data[1].sent) < rtt * 4, "resent {:?} after", data[retx].sent.since(data[1].sent));
}

#[test]
fn packets_carry_the_class_of_their_groups_slack_and_acks_class_0() {
    // Group 0: MSR 0.5 (TLR 0.5, class 4); group 1: reliable (class 0).
    let groups = vec![GroupSpec { messages: 4, msr: 0.5 }, GroupSpec { messages: 2, msr: 1.0 }];
    let msgs = [(0, MSS), (1, MSS), (0, MSS), (1, MSS), (0, MSS), (0, MSS)];
    let mut p = job_pair(&cfg(), &groups, &msgs, 0);
    assert!(p.drive());
    for e in p.data() {
        let a = atp(&e);
        assert_eq!(a.prio, if a.group == 0 { 4 } else { 0 }, "{a:?}");
    }
    assert!(p.acks().iter().all(|e| e.seg.prio == 0));
}

#[test]
fn losing_slack_moves_the_job_to_higher_priority_unless_priority_is_fixed() {
    let (groups, msgs) = even_job(300, 0.5, 1);
    for dynamic_prio in [true, false] {
        let c = AtpConfig { dynamic_prio, ..cfg() };
        let mut p = job_pair(&c, &groups, &msgs, 5);
        p.loss_to_server = 0.45;
        assert!(p.drive());
        let logs = log(&mut p);
        let classes: Vec<u8> = p.data().iter().map(|e| atp(e).prio).collect();
        assert_eq!(classes[0], 4, "TLR_0 = 0.5: class 4");
        if dynamic_prio {
            // Each epoch's class is §5.2's for its TLR.
            for l in &logs {
                let may_lose = l.lost < 150;
                assert_eq!(l.class, crate::atp::slack_class(l.next_tlr, may_lose, 8), "{l:?}");
            }
            assert!(classes.iter().any(|&c| c < 4), "slack ran low: moved up");
        } else {
            assert!(classes.iter().all(|&c| c == 4));
        }
    }
}

#[test]
fn two_groups_complete_only_when_both_have_their_share() {
    // Group 1 is tiny and reliable; its one message is the last handed over.
    let groups = vec![GroupSpec { messages: 10, msr: 0.1 }, GroupSpec { messages: 1, msr: 1.0 }];
    let mut msgs: Vec<(u16, u64)> = (0..10).map(|_| (0, MSS)).collect();
    msgs.push((1, 5 * MSS));
    let mut p = job_pair(&AtpConfig { sched: Sched::InOrder, ..cfg() }, &groups, &msgs, 0);
    assert!(p.drive());
    assert_eq!(outcome(&p), Some(Outcome::Complete), "everything had arrived by then");
    let rx = p.server.as_atp_receiver().unwrap();
    assert!(rx.has_message(10), "the reliable group's message arrived");
    // Completion waited for message 10's last packet, sent after all of group 0's.
    let last = p.data().iter().filter(|e| atp(e).msg == 10).map(|e| e.arrive.unwrap()).max().unwrap();
    assert_eq!(p.completed_at(), Some(last + p.tx(0) + p.latency));
}

#[test]
fn a_plain_transfer_is_a_job_of_message_sized_pieces() {
    let c = AtpConfig { message_bytes: 3000, msr: 1.0, header_bytes: HEADER_BYTES as u32, ..AtpConfig::default() };
    let mut p = Pair::new(&TransportConfig::Atp(c), 10_000, 0);
    p.client.set_line_rate(RATE);
    assert!(p.drive());
    assert_eq!(outcome(&p), Some(Outcome::Complete));
    assert_eq!(p.server.stats().bytes_received, 10_000);
    let msgs: Vec<u32> = p.data().iter().map(|e| atp(e).msg).collect();
    // 3000-B messages in 3 packets, then 1000 B, which MRDF sends first (least data).
    assert_eq!(msgs, vec![3, 0, 0, 0, 1, 1, 1, 2, 2, 2]);
}

#[test]
fn a_stream_completes_when_closed_with_what_it_was_given() {
    let t = TransportConfig::Atp(AtpConfig { msr: 0.5, ..cfg() });
    let mut p = Pair::new(&t, 1, 0);
    let mut ep = Endpoint::sender_stream(&t, 1, Time::ZERO);
    ep.set_line_rate(RATE);
    for _ in 0..6 {
        ep.send(MSS);
    }
    p.client = ep;
    // Not closed: it sends, but cannot complete.
    assert!(p.drive());
    assert_eq!(outcome(&p), None);
    p.client.close();
    assert!(p.drive());
    assert_eq!(outcome(&p), Some(Outcome::Complete), "all six had arrived by then");
}

#[test]
fn same_seed_same_trace_and_spurious_timeouts_change_nothing() {
    let (groups, msgs) = even_job(80, 0.7, 2);
    let run = |seed: u64, spurious: bool| {
        let mut p = job_pair(&cfg(), &groups, &msgs, seed);
        p.loss_to_server = 0.2;
        p.spurious_timeouts = spurious;
        assert!(p.drive());
        p.trace.iter().map(|e| (e.sent, e.arrive, e.pkt)).collect::<Vec<_>>()
    };
    assert_eq!(run(1, false), run(1, false));
    assert_eq!(run(1, false), run(1, true));
    assert_ne!(run(1, false), run(2, false));
}

#[test]
fn jobs_and_messages_out_of_bounds_are_refused() {
    let t = TransportConfig::Atp(cfg());
    let job = |g: &[GroupSpec]| Endpoint::job_sender(&t, 1, g, Time::ZERO).map(|_| ());
    assert!(job(&[]).is_err());
    assert!(job(&[GroupSpec { messages: MAX_JOB_MESSAGES + 1, msr: 0.5 }]).is_err());
    assert!(job(&[GroupSpec { messages: 0, msr: 0.5 }]).is_err());
    assert!(job(&[GroupSpec { messages: 3, msr: 1.5 }]).is_err());
    assert!(job(&[GroupSpec { messages: 3, msr: f64::NAN }]).is_err());
    let tcp = TransportConfig::Tcp(crate::TcpConfig::default());
    assert!(Endpoint::job_sender(&tcp, 1, &[GroupSpec { messages: 1, msr: 1.0 }], Time::ZERO).is_err());
    let mut ep = Endpoint::job_sender(&t, 1, &[GroupSpec { messages: 1, msr: 1.0 }], Time::ZERO).unwrap();
    assert!(ep.send_message(1, 10).is_err(), "no group 1");
    assert!(ep.send_message(0, 0).is_err(), "empty message");
    assert!(ep.send_message(0, u64::MAX).is_err(), "too many packets");
    assert_eq!(ep.send_message(0, 10), Ok(0));
    assert!(ep.send_message(0, 10).is_err(), "the group has its one message");
}

#[test]
fn the_receiver_refuses_packets_it_cannot_keep_and_acks_only_what_it_accepts() {
    let t = TransportConfig::Atp(cfg());
    let mut rx = Endpoint::receiver(&t, 9);
    let data = AtpRepr { kind: AtpKind::Data, conn: 9, pkts: 2, len: 100, ..AtpRepr::default() };
    let bad = [
        AtpRepr { msg: MAX_JOB_MESSAGES as u32, ..data },
        AtpRepr { pkt: 2, ..data },
        AtpRepr { pkts: 0, ..data },
        AtpRepr { pkts: u32::MAX, pkt: 5, ..data },
        AtpRepr { conn: 8, ..data },
    ];
    for b in bad {
        rx.handle_segment(Time::ZERO, &Segment::Atp(b));
        assert_eq!(rx.poll_transmit(Time::ZERO), None, "{b:?}");
    }
    rx.handle_segment(Time::ZERO, &Segment::Atp(data));
    assert!(rx.poll_transmit(Time::ZERO).is_some());
    // Another packet count for the same message is refused.
    rx.handle_segment(Time::ZERO, &Segment::Atp(AtpRepr { pkt: 1, pkts: 3, ..data }));
    assert_eq!(rx.poll_transmit(Time::ZERO), None);
    // A duplicate is acknowledged again but counted once.
    rx.handle_segment(Time::ZERO, &Segment::Atp(data));
    assert!(rx.poll_transmit(Time::ZERO).is_some());
    assert_eq!(rx.stats().bytes_received, 100);
    let r = rx.as_atp_receiver().unwrap();
    assert_eq!((r.messages_received(), r.refused_packets(), r.lost_messages()), (0, 5, None));
    rx.handle_segment(Time::ZERO, &Segment::Atp(AtpRepr { pkt: 1, ..data }));
    rx.handle_segment(Time::ZERO, &Segment::Atp(AtpRepr { kind: AtpKind::Fin, conn: 9, seq: 3, ..AtpRepr::default() }));
    let r = rx.as_atp_receiver().unwrap();
    assert_eq!(r.lost_messages(), Some(vec![1, 2]));
    assert_eq!(rx.poll_event(), Some(Event::Delivered { outcome: Outcome::Enough }));
    let _ = Bytes(0);
}

#[test]
fn a_late_poll_catches_up_only_the_pacing_burst() {
    // Polled 10 packet times late: with no burst (the simulator's pacing) one packet goes out,
    // then the next is due a packet time later; with a 3-packet burst, the due one and three
    // more go out at once.
    let pkt_time = RATE.tx_time(Bytes(MSS + HEADER_BYTES));
    for (burst_pkts, expect) in [(0u64, 1usize), (3, 4)] {
        let c = AtpConfig { pacing_burst_bytes: burst_pkts * (MSS + HEADER_BYTES), rate_control: false, ..cfg() };
        let t = TransportConfig::Atp(c);
        let mut ep = Endpoint::job_sender(&t, 1, &[GroupSpec { messages: 20, msr: 1.0 }], Time::ZERO).unwrap();
        ep.set_line_rate(RATE);
        for _ in 0..20 {
            ep.send_message(0, MSS).unwrap();
        }
        ep.close();
        assert!(ep.poll_transmit(Time::ZERO).is_some());
        let late = Time::ZERO + pkt_time.saturating_mul(10);
        let n = std::iter::from_fn(|| ep.poll_transmit(late)).count();
        assert_eq!(n, expect, "burst of {burst_pkts} packets");
    }
}
