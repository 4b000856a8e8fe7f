//! The idealised inter-coflow model against closed forms and properties every schedule must
//! have: bottleneck bounds, MADD's common finish, max-min shares and work conservation. (Random
//! small traces, byte conservation and determinism: the unit tests of `inter`, which share the
//! crate's test generator.)

use coflow::inter::{self, Bin, Options, Scheduler};
use coflow::trace::{Trace, BYTES_PER_MB};

/// 1 MiB per second, so a flow of `k` MB alone takes `k` seconds.
fn opts() -> Options {
    Options { port_bytes_per_sec: BYTES_PER_MB, record_flows: true, ..Options::default() }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

const MADD_SCHEDULERS: [Scheduler; 5] =
    [Scheduler::Fifo, Scheduler::Scf, Scheduler::Ncf, Scheduler::Lcf, Scheduler::Sebf];

#[test]
fn a_coflow_alone_finishes_at_its_bottleneck_under_madd() {
    // Mappers 0, 1; reducers 2 (6 MB) and 3 (2 MB): ingress 2 carries 6 MB, the bottleneck.
    let t = Trace::parse("4 1\n7 1000 2 0 1 2 2:6 3:2\n").unwrap();
    for s in MADD_SCHEDULERS {
        let out = inter::run(&t, s, &opts());
        let c = &out.coflows[0];
        assert!(close(c.ideal_cct_s, 6.0), "{}", s.name());
        assert!(close(c.cct_s, c.ideal_cct_s), "{}: {} vs {}", s.name(), c.cct_s, c.ideal_cct_s);
        assert_eq!((c.id, c.arrival_s), (7, 1.0));
    }
}

#[test]
fn a_symmetric_coflow_alone_meets_its_bound_under_every_scheduler() {
    // Two mappers, two reducers, 2 MB each: every port carries 2 MB.
    let t = Trace::parse("4 1\n1 0 2 0 1 2 2:2 3:2\n").unwrap();
    for s in Scheduler::ALL {
        let c = &inter::run(&t, s, &opts()).coflows[0];
        assert!(close(c.cct_s, 2.0), "{}: {}", s.name(), c.cct_s);
    }
}

#[test]
fn madd_finishes_all_flows_of_a_coflow_together() {
    // Unequal reducers, so unequal flows; MADD slows the small ones down to the bottleneck
    // (without the backfill, which would hand them the idle capacity).
    let t = Trace::parse("5 1\n1 0 2 0 1 3 2:6 3:2 4:1\n").unwrap();
    let out = inter::run(&t, Scheduler::Sebf, &Options { backfill: false, ..opts() });
    assert_eq!(out.flows.len(), 6);
    let end = out.coflows[0].finish_s;
    for f in &out.flows {
        assert!(close(f.finish_s, end), "flow {f:?} ends before the coflow at {end}");
    }
    assert!(close(end, 6.0));
    // With the backfill, the coflow still ends at its bound, but its small flows earlier.
    let out = inter::run(&t, Scheduler::Sebf, &opts());
    assert!(close(out.coflows[0].cct_s, 6.0));
    assert!(out.flows.iter().any(|f| f.finish_s < 5.0));
}

#[test]
fn fair_splits_a_shared_port_equally() {
    // Coflow 1: 0 -> 2 (2 MB); coflow 2: 1 -> 2 (2 MB). Ingress 2 is shared: 0.5 MB/s each, so
    // both finish at 4 s. Coflow 3 (0 -> 3, 1 MB) arrives at 0 too: egress 0 is shared with
    // coflow 1 at 0.5 each... until coflow 1 is limited by ingress 2 anyway: max-min gives it
    // 0.5 and the new flow the other 0.5 of egress 0.
    let t = Trace::parse("4 3\n1 0 1 0 1 2:2\n2 0 1 1 1 2:2\n3 0 1 0 1 3:1\n").unwrap();
    let out = inter::run(&t, Scheduler::Fair, &opts());
    let cct: Vec<f64> = out.coflows.iter().map(|c| c.cct_s).collect();
    // Coflow 3 finishes at 2 s; then coflow 1 still shares ingress 2 at 0.5: 4 s for both.
    assert!(close(cct[0], 4.0) && close(cct[1], 4.0) && close(cct[2], 2.0), "{cct:?}");
}

#[test]
fn max_min_gives_leftover_to_the_unconstrained_flow() {
    // Three flows out of egress 0 (to 1, 2, 3) and one from 4 into 3: each gets 1/3 of egress
    // 0; the flow 4 -> 3 gets the 2/3 of ingress 3 left.
    let t = Trace::parse("5 2\n1 0 1 0 3 1:3 2:3 3:3\n2 0 1 4 1 3:2\n").unwrap();
    let out = inter::run(&t, Scheduler::Fair, &opts());
    assert!(close(out.coflows[1].cct_s, 3.0), "{}", out.coflows[1].cct_s);
    // Egress 0 stays shared three ways after that (its flows are equal): 9 s.
    assert!(close(out.coflows[0].cct_s, 9.0), "{}", out.coflows[0].cct_s);
}

#[test]
fn fetch_limit_serialises_a_reducers_fetches() {
    // One reducer, three mappers, 1 MB each; with K = 1 the fetches go one after another.
    let t = Trace::parse("4 1\n1 0 3 0 1 2 1 3:3\n").unwrap();
    let one = inter::run(&t, Scheduler::Fetch(1), &opts()).coflows[0].cct_s;
    let all = inter::run(&t, Scheduler::Fetch(3), &opts()).coflows[0].cct_s;
    assert!(close(one, 3.0) && close(all, 3.0), "{one} {all}");
    // Two reducers on the same mappers: with K = 1 both fetch from mapper 0 first... and the
    // idle mappers 1 and 2 show that the limit is not work-conserving.
    let t = Trace::parse("5 1\n1 0 3 0 1 2 2 3:3 4:3\n").unwrap();
    let one = inter::run(&t, Scheduler::Fetch(1), &opts()).coflows[0].cct_s;
    let fair = inter::run(&t, Scheduler::Fair, &opts()).coflows[0].cct_s;
    assert!(close(fair, 3.0), "{fair}");
    assert!(one > fair + 0.5, "{one} vs {fair}");
}

#[test]
fn pfp_serves_the_smallest_flow_first() {
    // Two flows into port 2: 1 MB and 3 MB. PFP: the small one alone first (1 s), then the
    // big one (4 s in total).
    let t = Trace::parse("4 2\n1 0 1 0 1 2:3\n2 0 1 1 1 2:1\n").unwrap();
    let out = inter::run(&t, Scheduler::Pfp, &opts());
    assert!(close(out.coflows[1].cct_s, 1.0) && close(out.coflows[0].cct_s, 4.0));
}

#[test]
fn dclas_lets_a_small_late_coflow_overtake_a_big_one_that_has_sent_a_lot() {
    // A 100 MB coflow on 0 -> 2 at 100 MB/s... here 1 MB/s, so it has sent 10 MB at 10 s and
    // drops to queue 1; a 1 MB coflow arriving at 20 s then gets the port at once.
    let t = Trace::parse("4 2\n1 0 1 0 1 2:100\n2 20000 1 1 1 2:1\n").unwrap();
    let dclas = inter::run(&t, Scheduler::Dclas, &opts());
    assert!(close(dclas.coflows[1].cct_s, 1.0), "{}", dclas.coflows[1].cct_s);
    let fifo = inter::run(&t, Scheduler::Fifo, &opts());
    assert!(fifo.coflows[1].cct_s > 80.0, "{}", fifo.coflows[1].cct_s);
}

#[test]
fn bins_follow_varys_thresholds() {
    assert_eq!(Bin::of(4.9 * BYTES_PER_MB, 50), Bin::SN);
    assert_eq!(Bin::of(5.0 * BYTES_PER_MB, 50), Bin::LN);
    assert_eq!(Bin::of(1.0, 51), Bin::SW);
    assert_eq!(Bin::of(5.0 * BYTES_PER_MB, 51), Bin::LW);
}

#[test]
fn work_conserving_schedulers_keep_a_shared_port_busy() {
    // Every flow goes 0 -> 1, coflows arrive while others run: a work-conserving schedule
    // keeps the pair busy, so the last coflow ends at (total bytes) / rate.
    let t = Trace::parse("2 4\n1 0 1 0 1 1:5\n2 1000 1 0 1 1:3\n3 1500 1 0 1 1:1\n4 2000 1 0 1 1:2\n").unwrap();
    for s in Scheduler::ALL.into_iter().filter(|s| s.is_work_conserving()) {
        let out = inter::run(&t, s, &opts());
        let end = out.coflows.iter().map(|c| c.finish_s).fold(0.0, f64::max);
        assert!(close(end, 11.0), "{}: {end}", s.name());
    }
}
