//! The application layer: the three reactive example applications (closed loop, barrier,
//! relay) do what their shapes promise, to the picosecond where the network is idle, and a
//! user's own application can be plugged in.

use std::path::Path;

use sim::app::{AnyApp, AppCtx, Application, TransferDone, TransferReq, UnitRecord};
use sim::metrics::FctRecord;
use sim::{Simulation, Spec};
use units::{Dur, Time};

mod common;
use common::run_toml as run;

/// A 3-leaf x 4-host leaf-spine at 10 Gb/s everywhere with 1 us links, plus `workload`.
fn scenario(workload: &str) -> String {
    format!(
        r#"
[topology]
kind = "leaf_spine"
leaves = 3
hosts_per_leaf = 4
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 10
{workload}
"#
    )
}


fn end(r: &FctRecord) -> u64 {
    r.start_ps + r.fct_ps as u64
}

#[test]
fn closed_loop_sends_the_next_transfer_when_the_previous_is_delivered() {
    let out = run(&scenario(
        "[[workload]]\nkind = \"closed_loop\"\npairs = [[0, 1], [8, 9]]\nsize_bytes = 14000\ncount = 4\n",
    ));
    assert_eq!(out.records.len(), 8);
    for pair in [(0, 1), (8, 9)] {
        let mine: Vec<&FctRecord> = out.records.iter().filter(|r| (r.src, r.dst) == pair).collect();
        assert_eq!(mine.len(), 4);
        assert_eq!(mine[0].start_ps, 0);
        for w in mine.windows(2) {
            // The next transfer starts the instant the previous one completes.
            assert_eq!(w[1].start_ps, end(w[0]), "{pair:?}");
        }
        // Disjoint paths, nothing else in the network, one initial window: every transfer
        // meets its ideal.
        assert!(mine.iter().all(|r| r.fct_ps as u64 == r.ideal_fct_ps && r.outcome == "complete"));
    }
    let loops: Vec<_> = out.apps.iter().filter(|a| a.kind == "loop").collect();
    assert_eq!(loops.len(), 2);
    for l in loops {
        // An uncontended loop takes exactly count x the ideal FCT.
        assert_eq!(l.duration_ps as i64, l.ideal_ps);
        assert_eq!(l.num_transfers, 4);
        assert_eq!(l.bytes, 56_000);
    }
}

#[test]
fn closed_loop_think_time_separates_transfers() {
    let out = run(&scenario(
        "[[workload]]\nkind = \"closed_loop\"\npairs = [[2, 3]]\nsize_bytes = 1000\ncount = 3\nthink_us = 50\n",
    ));
    let r = &out.records;
    assert_eq!(r.len(), 3);
    for w in r.windows(2) {
        assert_eq!(w[1].start_ps, end(&w[0]) + 50_000_000);
    }
    assert_eq!(out.apps[0].duration_ps as i64, out.apps[0].ideal_ps);
}

#[test]
fn barrier_starts_each_round_after_the_last_transfer_and_the_compute_phase() {
    // Four workers send 200 KB to host 0 each round (an incast: they share host 0's link).
    let out = run(&scenario(
        "[[workload]]\nkind = \"barrier\"\nrounds = 3\ncompute_us = 100\ntransfers = [\
         { src = 4, dst = 0, size_bytes = 200000 }, { src = 5, dst = 0, size_bytes = 200000 },\
         { src = 8, dst = 0, size_bytes = 200000 }, { src = 9, dst = 0, size_bytes = 200000 }]\n",
    ));
    assert_eq!(out.records.len(), 12);
    let rounds: Vec<&[FctRecord]> = out.records.chunks(4).collect();
    let mut prev_end = 0u64;
    for (i, round) in rounds.iter().enumerate() {
        let start = round[0].start_ps;
        assert!(round.iter().all(|r| r.start_ps == start), "round {i} starts together");
        assert_eq!(start, prev_end + 100_000_000, "round {i} waits for the barrier and the compute phase");
        prev_end = round.iter().map(end).max().unwrap();
    }
    assert_eq!(out.apps.len(), 3);
    for (i, it) in out.apps.iter().enumerate() {
        assert_eq!(it.kind, "iteration");
        assert_eq!(it.unit, i as u64);
        assert_eq!(it.end_ps, rounds[i].iter().map(end).max().unwrap());
        assert_eq!(it.start_ps + 100_000_000, rounds[i][0].start_ps);
        // The ideal is the compute phase plus the busiest host link: 4 x 200 KB into host 0 at
        // 10 Gb/s is 640 us (more than any one transfer alone), and DCTCP comes within 20% of it.
        assert_eq!(it.ideal_ps, 100_000_000 + 640_000_000);
        assert!((1.0..1.2).contains(&it.slowdown), "iteration slowdown {}", it.slowdown);
        assert_eq!(it.bytes, 800_000);
    }
}

#[test]
fn relay_forwards_a_block_only_once_it_has_arrived() {
    let out = run(&scenario(
        "[[workload]]\nkind = \"relay\"\nchain = [0, 4, 8, 1]\nblock_bytes = 100000\nblocks = 3\n",
    ));
    // 3 hops x 3 blocks.
    assert_eq!(out.records.len(), 9);
    let chain = [0u32, 4, 8, 1];
    let hop_of = |r: &FctRecord| chain.iter().position(|&h| h == r.src).unwrap();
    for r in &out.records {
        let hop = hop_of(r);
        assert_eq!(r.dst, chain[hop + 1]);
        if hop > 0 {
            // The same block on the previous hop ended before this one began.
            let nth = out.records.iter().filter(|x| hop_of(x) == hop && x.start_ps < r.start_ps).count();
            let feeder: Vec<&FctRecord> = out.records.iter().filter(|x| hop_of(x) == hop - 1).collect();
            assert!(end(feeder[nth]) <= r.start_ps);
        }
    }
    let blocks: Vec<_> = out.apps.iter().filter(|a| a.kind == "block").collect();
    let bcast: Vec<_> = out.apps.iter().filter(|a| a.kind == "broadcast").collect();
    assert_eq!((blocks.len(), bcast.len()), (3, 1));
    assert_eq!(bcast[0].end_ps, out.records.iter().map(end).max().unwrap());
    assert!(blocks.iter().all(|b| b.duration_ps as i64 >= b.ideal_ps));
}

#[test]
fn a_single_block_relay_meets_its_ideal_exactly() {
    let out = run(&scenario("[[workload]]\nkind = \"relay\"\nchain = [0, 4, 8]\nblock_bytes = 14000\nblocks = 1\n"));
    let b = out.apps.iter().find(|a| a.kind == "broadcast").unwrap();
    assert_eq!(b.duration_ps as i64, b.ideal_ps);
}

/// A user's own application: ping-pong between two hosts, `n` times, through the public API.
#[derive(Debug)]
struct PingPong {
    left: u32,
    n: u32,
}

impl Application for PingPong {
    fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
        ctx.start_transfer(TransferReq { tag: 0, ..TransferReq::new(0, 1, 500) }).unwrap();
        // Refused, not a panic: a host that does not exist, and a transfer to oneself.
        assert!(ctx.start_transfer(TransferReq::new(0, 99, 1)).is_err());
        assert!(ctx.start_transfer(TransferReq::new(3, 3, 1)).is_err());
    }
    fn on_transfer_done(&mut self, done: &TransferDone, ctx: &mut AppCtx<'_>) {
        self.left -= 1;
        if self.left > 0 {
            let back = TransferReq { tag: done.tag + 1, ..TransferReq::new(done.dst, done.src, 500) };
            ctx.start_transfer(back).unwrap();
        } else {
            ctx.record_unit(UnitRecord {
                app: 0,
                kind: "game",
                unit: 0,
                start: Time::ZERO,
                end: ctx.now(),
                ideal: Some(ctx.ideal_fct(0, 1, 500) * self.n as u64),
                num_transfers: self.n,
                bytes: 500 * self.n as u64,
                job: None,
                sent: None,
                src: Some(0),
                dst: Some(1),
                lost_fraction: None,
            });
        }
    }
}

#[test]
fn a_custom_application_plugs_in() {
    let valid = Spec::from_toml_str(&scenario("")).unwrap().validate(Path::new(".")).unwrap();
    let mut s = Simulation::with_apps(&valid, vec![AnyApp::Custom(Box::new(PingPong { left: 6, n: 6 }))]).unwrap();
    s.run_to_end();
    let out = s.output();
    assert_eq!(out.records.len(), 6);
    assert!(out.records.windows(2).all(|w| w[0].src == w[1].dst && w[1].start_ps == end(&w[0])));
    assert_eq!(out.apps.len(), 1);
    assert_eq!(out.apps[0].duration_ps as i64, out.apps[0].ideal_ps);
    assert!(s.flow_list_text().is_none(), "a reactive application's flows cannot be listed up front");
}

#[test]
fn open_loop_flows_can_be_listed_before_the_run_and_match_it() {
    let text = scenario(
        "[[workload]]\nkind = \"poisson\"\ncdf = \"google_rpc\"\nload = 0.3\nduration_ms = 2\n\
         [[workload]]\nkind = \"incast\"\nquery_rate_per_host = 2000\nfan_in = 4\nburst_bytes = 40000\nduration_ms = 2\n",
    );
    let valid = Spec::from_toml_str(&text).unwrap().validate(Path::new(".")).unwrap();
    let mut s = Simulation::new(&valid).unwrap();
    let listed = s.open_loop_flows().expect("open loop");
    s.run_to_end();
    let out = s.output();
    assert_eq!(listed.len(), out.records.len());
    for (f, r) in listed.iter().zip(&out.records) {
        assert_eq!((f.id, f.src, f.dst, f.size, f.start.ps(), f.incast), (r.id, r.src, r.dst, r.size_bytes, r.start_ps, r.incast));
    }
    let _ = Dur::ZERO;
}

#[test]
fn app_scenario_errors_name_the_key() {
    for (w, key) in [
        ("kind = \"closed_loop\"\npairs = [[0, 0]]\nsize_bytes = 1\ncount = 1", "workload[0].pairs[0].dst"),
        ("kind = \"closed_loop\"\npairs = [[0, 1]]\nsize_bytes = 1\ncount = 0", "workload[0].count"),
        ("kind = \"barrier\"\nrounds = 1\ntransfers = [{ src = 0, dst = 50, size_bytes = 1 }]", "workload[0].transfers[0].dst"),
        ("kind = \"relay\"\nchain = [0, 1, 0]\nblock_bytes = 1\nblocks = 1", "workload[0].chain[2]"),
        ("kind = \"relay\"\nchain = [0]\nblock_bytes = 1\nblocks = 1", "workload[0].chain"),
        ("kind = \"relay\"\nchain = [0, 1]\nblock_bytes = 1\nblocks = 1\nfoo = 2", "workload[0].foo"),
        // Pauses that would run the simulated clock out.
        ("kind = \"closed_loop\"\npairs = [[0, 1]]\nsize_bytes = 1\ncount = 100\nthink_us = 1e12", "workload[0].think_us"),
        ("kind = \"barrier\"\nrounds = 4000000\ncompute_us = 1e9\ntransfers = [{ src = 0, dst = 1, size_bytes = 1 }]", "workload[0].compute_us"),
    ] {
        let text = scenario(&format!("[[workload]]\n{w}\n"));
        let err = Spec::from_toml_str(&text).and_then(|s| s.validate(Path::new("."))).unwrap_err();
        assert_eq!(err.key(), key, "{err}");
    }
}

/// Starts one transfer with an optional rate cap.
#[derive(Debug)]
struct Capped(Option<units::Bps>);

impl Application for Capped {
    fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
        ctx.start_transfer(TransferReq { rate_cap: self.0, ..TransferReq::new(0, 1, 1_000_000) }).unwrap();
    }
}

#[test]
fn a_rate_cap_paces_the_sender() {
    let valid = Spec::from_toml_str(&scenario("")).unwrap().validate(Path::new(".")).unwrap();
    let fct = |cap| {
        let mut s = Simulation::with_apps(&valid, vec![AnyApp::Custom(Box::new(Capped(cap)))]).unwrap();
        s.run_to_end();
        s.output().records[0].fct_ps as f64 * 1e-12
    };
    let free = fct(None);
    let capped = fct(Some(units::Bps::from_gbps(1)));
    // 1 MB of payload at 1 Gb/s is 8 ms; uncapped on 10 Gb/s it is about a tenth of that.
    assert!((capped / 8e-3 - 1.0).abs() < 0.01, "capped FCT {capped}");
    assert!(free < 1.2e-3, "uncapped FCT {free}");
}

#[test]
fn workload_entries_may_bring_their_own_transport() {
    // UDP background next to DCTCP transfers: each flow uses its entry's transport, its
    // packets carry that transport's header size, and its ideal follows its own model.
    let out = run(&scenario(
        "[[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 1, size_bytes = 14000 }]\n\
         [[workload]]\nkind = \"flows\"\ntransport = { kind = \"udp\", header_bytes = 28 }\n\
         flows = [{ src = 2, dst = 3, size_bytes = 14000 }]\n",
    ));
    let by_src = |s: u32| out.records.iter().find(|r| r.src == s).unwrap();
    let (tcp, udp) = (by_src(0), by_src(2));
    assert_eq!((tcp.transport, udp.transport), ("dctcp", "udp"));
    // Alone on disjoint ports: both meet their own closed form, and UDP's (no ACK, smaller
    // headers) is shorter.
    assert_eq!(tcp.fct_ps as u64, tcp.ideal_fct_ps);
    assert_eq!(udp.fct_ps as u64, udp.ideal_fct_ps);
    assert!(udp.ideal_fct_ps < tcp.ideal_fct_ps);
    // A bad key inside an entry's transport is named with its full path.
    let bad = scenario("[[workload]]\nkind = \"flows\"\ntransport = { kind = \"dctcp\", g = 2.0 }\nflows = []\n");
    let err = Spec::from_toml_str(&bad).and_then(|s| s.validate(Path::new("."))).unwrap_err();
    assert_eq!(err.key(), "workload[0].transport.g", "{err}");
}

#[test]
fn generators_passed_directly_can_still_be_listed() {
    use sim::app::ListGen;
    use sim::workload::FlowSpec;
    let valid = Spec::from_toml_str(&scenario("")).unwrap().validate(Path::new(".")).unwrap();
    let flow = |src, start_ns| FlowSpec { id: 0, src, dst: 5, size: 1000, start: Time::from_ns(start_ns), prio: 0, incast: false, workload: 0 };
    let gen = ListGen::new(vec![flow(1, 2_000), flow(0, 1_000)], false);
    let s = Simulation::with_apps(&valid, vec![AnyApp::List(gen)]).unwrap();
    let listed = s.open_loop_flows().expect("a generator");
    assert_eq!(listed.iter().map(|f| (f.src, f.start.ps())).collect::<Vec<_>>(), [(0, 1_000_000), (1, 2_000_000)]);
}
