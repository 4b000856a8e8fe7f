//! Protocol traces of ExpressPass (credits, one data packet per credit, Algorithm 1) and of
//! Aeolus on top of it (the unscheduled first RTT, the probe, recovery of dropped unscheduled
//! packets) over the `Pair` harness.

use std::collections::{BTreeMap, BTreeSet};

use units::{Dur, Time};
use wire::{XpassKind, XpassRepr};

use super::util::{Dir, Pair, TraceEntry, HEADER_BYTES};
use crate::expresspass::{ExpressPassConfig, Feedback};
use crate::{Segment, TransportConfig};

const MSS: u64 = 1460;

/// ExpressPass with the harness's header, so that credit pacing and the pipes agree on sizes.
fn xpass() -> ExpressPassConfig {
    ExpressPassConfig { mss: MSS as u32, header_bytes: HEADER_BYTES as u32, init_rtt: Dur::from_us(21), ..Default::default() }
}

/// Aeolus: `pkts` packets unscheduled.
fn aeolus(pkts: u64) -> ExpressPassConfig {
    ExpressPassConfig { unscheduled_bytes: pkts * MSS, ..xpass() }
}

fn x(e: &TraceEntry) -> XpassRepr {
    match e.pkt {
        Segment::Xpass(x) => x,
        other => panic!("not ExpressPass: {other:?}"),
    }
}

fn pair(cfg: &ExpressPassConfig, pkts: u64, seed: u64) -> Pair {
    Pair::new(&TransportConfig::ExpressPass(cfg.clone()), pkts * MSS, seed)
}

/// Every packet of kind `k` in direction `d`, in send order.
fn of_kind(p: &Pair, d: Dir, k: XpassKind) -> Vec<TraceEntry> {
    p.trace.iter().filter(|e| e.dir == d && x(e).kind == k).copied().collect()
}

#[test]
fn first_rtt_sends_one_bdp_at_line_rate_marked_unscheduled() {
    let mut p = pair(&aeolus(10), 100, 0);
    assert!(p.drive());
    assert!(p.is_complete());
    let data = p.data();
    // The request leaves first, then the ten unscheduled packets at once (the pipe serializes
    // them back to back: line rate), then the probe; nothing else before the first credit.
    assert_eq!(x(&p.trace[0]).kind, XpassKind::Request);
    for (i, d) in data[..10].iter().enumerate() {
        let h = x(d);
        assert!(h.unscheduled && h.credit == 0, "{h:?}");
        assert_eq!((d.sent, h.seq), (Time::ZERO, i as u64 * MSS));
        if i > 0 {
            assert_eq!(d.arrive.unwrap().since(data[i - 1].arrive.unwrap()), p.tx(MSS));
        }
    }
    let probe = of_kind(&p, Dir::ToServer, XpassKind::Probe);
    assert_eq!(probe.len(), 1);
    assert_eq!((probe[0].sent, x(&probe[0]).seq), (Time::ZERO, 10 * MSS));
    let first_credit = of_kind(&p, Dir::ToClient, XpassKind::Credit)[0].arrive.unwrap();
    assert!(data[10..].iter().all(|d| !x(d).unscheduled && d.sent >= first_credit));
    // Without Aeolus nothing leaves before the first credit.
    let mut q = pair(&xpass(), 100, 0);
    assert!(q.drive() && q.is_complete());
    let first_credit = of_kind(&q, Dir::ToClient, XpassKind::Credit)[0].arrive.unwrap();
    assert!(q.data().iter().all(|d| !x(d).unscheduled && d.sent >= first_credit));
    assert!(of_kind(&q, Dir::ToServer, XpassKind::Probe).is_empty());
}

#[test]
fn exactly_one_data_packet_per_credit_after_the_first_rtt() {
    let mut p = pair(&aeolus(10), 300, 1);
    assert!(p.drive());
    assert!(p.is_complete());
    // When each credit reached the client.
    let credits: BTreeMap<u32, Time> =
        of_kind(&p, Dir::ToClient, XpassKind::Credit).iter().filter_map(|e| Some((x(e).credit, e.arrive?))).collect();
    let mut used = BTreeSet::new();
    let scheduled: Vec<TraceEntry> = p.data().into_iter().filter(|d| !x(d).unscheduled).collect();
    assert_eq!(scheduled.len(), 290, "no loss: each byte once");
    for d in &scheduled {
        let c = x(d).credit;
        assert!(used.insert(c), "credit {c} answered twice");
        let at = credits.get(&c).copied().expect("echoes a credit the client received");
        assert_eq!(at, d.sent, "sent when its credit arrived");
    }
    // Credits arriving once all data left are not answered.
    assert!(credits.len() > scheduled.len());
    assert_eq!(p.client.stats().segments_retx, 0);
}

#[test]
fn dropped_unscheduled_packets_are_resent_with_credits_after_the_probe() {
    let mut p = pair(&aeolus(10), 40, 2);
    p.drop_data = [2, 5].into();
    assert!(p.drive());
    assert!(p.is_complete());
    let st = p.client.stats();
    assert_eq!((st.segments_retx, st.num_rtos), (2, 0), "recovered by the probe, not a timeout");
    let probe_ack = of_kind(&p, Dir::ToClient, XpassKind::ProbeAck)[0].arrive.unwrap();
    let resent: Vec<TraceEntry> = p.data().into_iter().skip(10).filter(|d| [2 * MSS, 5 * MSS].contains(&x(d).seq)).collect();
    assert_eq!(resent.len(), 2);
    for d in &resent {
        // Scheduled (a credit's), right after the probe's ACK: the first credits go to them.
        assert!(!x(d).unscheduled && x(d).credit > 0 && d.sent >= probe_ack);
        // Within an RTT plus a credit gap at the initial rate (about 21 us each here).
        assert!(d.sent.since(probe_ack) < Dur::from_us(45), "{:?}", d.sent.since(probe_ack));
    }
    assert_eq!(p.server.stats().bytes_received, 40 * MSS);
}

#[test]
fn lost_scheduled_packets_and_acks_are_recovered_by_the_timeout() {
    for seed in 0..4 {
        let mut p = pair(&aeolus(5), 60, seed);
        p.loss_to_server = 0.05;
        p.loss_to_client = 0.05;
        assert!(p.drive(), "seed {seed}: no livelock");
        assert!(p.is_complete(), "seed {seed}");
        assert_eq!(p.server.stats().bytes_received, 60 * MSS);
    }
}

#[test]
fn feedback_follows_algorithm_1() {
    let cfg = ExpressPassConfig::default();
    let mut fb = Feedback::new(&cfg);
    assert_eq!((fb.rate, fb.w), (1.0 / 16.0, 1.0 / 16.0));
    // No loss: rate = (1 - w) rate + w (1 + target); w unchanged the first time.
    fb.update(&cfg, 0.0, 0.0);
    let want = (1.0 - 1.0 / 16.0) / 16.0 + (1.0 / 16.0) * 1.125;
    assert!((fb.rate - want).abs() < 1e-12 && fb.w == 1.0 / 16.0 && fb.increasing);
    // Increasing again: w = (w + w_max) / 2 first.
    fb.update(&cfg, 0.1, 0.0);
    let w = (1.0 / 16.0 + 0.5) / 2.0;
    assert!((fb.w - w).abs() < 1e-12);
    assert!((fb.rate - ((1.0 - w) * want + w * 1.125)).abs() < 1e-12);
    // Loss above target: rate x (1 - loss)(1 + target), w halved.
    let before = fb.rate;
    fb.update(&cfg, 0.5, 0.0);
    assert!((fb.rate - before * 0.5 * 1.125).abs() < 1e-12 && (fb.w - w / 2.0).abs() < 1e-12 && !fb.increasing);
    // w never below w_min; the rate stays within [floor, 1 + target].
    for _ in 0..20 {
        fb.update(&cfg, 1.0, 0.01);
    }
    assert_eq!((fb.w, fb.rate), (cfg.w_min, 0.01));
    for _ in 0..100 {
        fb.update(&cfg, 0.0, 0.01);
    }
    assert!((fb.rate - 1.125).abs() < 1e-6, "{}", fb.rate);
    fb.update(&cfg, f64::NAN, 0.01);
    assert!(fb.rate.is_finite());
}

#[test]
fn credit_rate_rises_without_loss_and_falls_with_it() {
    // No credit loss: the rate climbs to the maximum (plus the target loss), so that the data
    // fill the pipe: the middle of a long flow arrives at line rate.
    let mut p = pair(&xpass(), 2000, 3);
    assert!(p.drive() && p.is_complete());
    let d = p.data();
    let took = d[1500].arrive.unwrap().since(d[500].arrive.unwrap());
    assert_eq!(took, p.tx(MSS) * 1000, "back to back");
    let fb = p.server.as_xpass_receiver().unwrap().feedback();
    assert!(fb.rate > 1.1, "{fb:?}");
    // Credits (and ACKs) lost at 40%, above the target: the rate keeps being cut (down to the
    // floor of one credit per RTT), so credits go out at a fraction of the lossless pace.
    let credit_rate = |p: &Pair| {
        let c = of_kind(p, Dir::ToClient, XpassKind::Credit);
        (c.len() - 1) as f64 / c.last().unwrap().sent.since(c[0].sent).as_secs_f64()
    };
    let mut lossless = pair(&xpass(), 300, 3);
    assert!(lossless.drive() && lossless.is_complete());
    let mut q = pair(&xpass(), 300, 3);
    q.loss_to_client = 0.4;
    assert!(q.drive() && q.is_complete());
    let (fast, slow) = (credit_rate(&lossless), credit_rate(&q));
    assert!(slow < 0.5 * fast, "{slow} vs {fast} credits/s");
    // The credit gap follows the rate: at the start, one credit per 16 maximum gaps, 1% to 8%
    // longer (ExpressPass's jitter against synchronized credits).
    let mut r = pair(&xpass(), 50, 4);
    assert!(r.drive());
    let c = of_kind(&r, Dir::ToClient, XpassKind::Credit);
    let gap = (xpass().max_rate_gap().ps() * 16) as f64;
    let first = c[1].sent.since(c[0].sent).ps() as f64 / gap;
    assert!((1.01..1.08).contains(&first), "{first}");
    let j: Vec<f64> = (1..200).map(|k| crate::expresspass::jitter(1, k)).collect();
    assert!(j.iter().all(|x| (0.01..0.08).contains(x)));
    let mean = j.iter().sum::<f64>() / j.len() as f64;
    assert!((mean - 0.045).abs() < 0.01, "spread over the range: mean {mean}");
}


#[test]
fn a_credit_stop_ends_the_credits_once_everything_is_out() {
    for cfg in [xpass(), aeolus(10)] {
        let mut p = pair(&cfg, 60, 5);
        assert!(p.drive() && p.is_complete());
        let stops = of_kind(&p, Dir::ToServer, XpassKind::CreditStop);
        assert_eq!(stops.len(), 1, "one stop, no loss");
        let last_data = p.data().last().unwrap().sent;
        assert!(stops[0].sent >= last_data, "after the last data packet");
        let at = stops[0].arrive.unwrap();
        assert!(of_kind(&p, Dir::ToClient, XpassKind::Credit).iter().all(|c| c.sent <= at), "no credit after it");
    }
    // A lost unscheduled packet: no stop before the probe's ACK told the sender, and the loss is
    // still resent with a credit (not after a timeout).
    let mut p = pair(&aeolus(10), 10, 6);
    p.drop_data = [3].into();
    assert!(p.drive() && p.is_complete());
    let probe_ack = of_kind(&p, Dir::ToClient, XpassKind::ProbeAck)[0].arrive.unwrap();
    assert!(of_kind(&p, Dir::ToServer, XpassKind::CreditStop).iter().all(|s| s.sent >= probe_ack));
    assert_eq!((p.client.stats().segments_retx, p.client.stats().num_rtos), (1, 0));
}
