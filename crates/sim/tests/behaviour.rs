//! End-to-end behaviour of the simulator against closed forms and invariants: ideal FCT,
//! line rate, DCTCP queue/utilisation/fairness, conservation, determinism, incast, ECMP.

use std::path::Path;

use sim::metrics::Output;
use sim::Spec;

mod common;
use common::{run_toml, star};


fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    s * s / (xs.len() as f64 * s2)
}

/// For flows that all end at host 0 behind one switch port: the port's busy fraction until the
/// last flow ends, the Jain index of the flows' throughputs, and the sorted switch occupancy
/// samples between 1 ms and the first flow's end (the steady state).
fn bottleneck_stats(out: &Output) -> (f64, f64, Vec<u64>) {
    let ends = out.records.iter().map(|r| r.start_ps + r.fct_ps as u64);
    let (end, first_end) = (ends.clone().max().unwrap(), ends.min().unwrap());
    let bottleneck = out.links.iter().find(|l| l.dst == 0).unwrap();
    let busy = bottleneck.tx_bytes as f64 * 8.0 / 10e9 / (end as f64 * 1e-12);
    let tput: Vec<f64> = out.records.iter().map(|r| r.size_bytes as f64 / r.fct_ps as f64).collect();
    let mut occ: Vec<u64> = out
        .occupancy
        .iter()
        .filter(|s| s.time_ps > 1_000_000_000 && s.time_ps < first_end)
        .map(|s| s.bytes)
        .collect();
    occ.sort_unstable();
    (busy, jain(&tput), occ)
}


const LEAF_SPINE: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 40
host_delay_ns = 1000
fabric_delay_ns = 2000
"#;

#[test]
fn uncontended_fct_equals_ideal_exactly() {
    // Flows that fit in the initial window, alone in the network: FCT == closed form, in ps.
    for (handshake, kind) in [(false, "dctcp"), (true, "dctcp"), (false, "newreno"), (false, "udp")] {
        // UDP has neither a handshake nor a window: it takes only its own keys.
        let keys = if kind == "udp" { String::new() } else { format!("handshake = {handshake}\ninit_cwnd_pkts = 100\n") };
        let text = format!(
            "{LEAF_SPINE}\n[transport]\nkind = \"{kind}\"\n{keys}\
             [[workload]]\nkind = \"flows\"\nflows = [\n\
             {{ src = 0, dst = 5, size_bytes = 1 }},\n\
             {{ src = 1, dst = 6, size_bytes = 1460, start_ns = 1000000 }},\n\
             {{ src = 2, dst = 7, size_bytes = 100000, start_ns = 2000000 }},\n\
             {{ src = 3, dst = 0, size_bytes = 14601, start_ns = 3000000 }},\n]\n"
        );
        let out = run_toml(&text);
        assert_eq!(out.records.len(), 4);
        for r in &out.records {
            assert!(r.finished, "{kind}: {r:?}");
            assert_eq!(r.fct_ps as u64, r.ideal_fct_ps, "{kind} handshake={handshake}: {r:?}");
            assert_eq!(r.slowdown, 1.0);
        }
    }
}

#[test]
fn fct_at_receiver_is_exact_and_one_ack_earlier() {
    let flows = "[[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 5, size_bytes = 5000 }]\n";
    for handshake in [false, true] {
        let base = format!("{LEAF_SPINE}\n[transport]\nkind = \"dctcp\"\nhandshake = {handshake}\n{flows}");
        let at_sender = run_toml(&base);
        let at_receiver = run_toml(&format!("{base}\n[run]\nfct_at = \"receiver\"\n"));
        let (s, r) = (&at_sender.records[0], &at_receiver.records[0]);
        assert_eq!(r.fct_ps as u64, r.ideal_fct_ps, "receiver-side FCT meets its closed form");
        // The difference is exactly the ACK's trip back: 40 B over 10G, 40G, 40G, 10G + 6 us.
        assert_eq!(s.fct_ps - r.fct_ps, (32 + 8 + 8 + 32 + 6000) * 1000);
        assert_eq!(at_receiver.summary.finished_flows, 1);
    }
}

#[test]
fn ideal_fct_matches_hand_computation() {
    // 1 packet of 1460 B over host(10G,1us) -> leaf -> spine(40G,2us) -> leaf -> host(10G,1us):
    // data 1500 B: 1.2 us + 0.3 us + 0.3 us + 1.2 us + 6 us of delay; ACK 40 B back:
    // 32 ns + 8 ns + 8 ns + 32 ns + 6 us.
    let text = format!(
        "{LEAF_SPINE}\n[[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 5, size_bytes = 1460 }}]\n"
    );
    let out = run_toml(&text);
    let expect_ns = 1200 + 300 + 300 + 1200 + 6000 + (32 + 8 + 8 + 32 + 6000);
    assert_eq!(out.records[0].ideal_fct_ps, expect_ns * 1000);
    assert_eq!(out.records[0].fct_ps, (expect_ns * 1000) as i64);
}

#[test]
fn one_long_flow_reaches_line_rate() {
    let text = star(
        2,
        "[[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 1, size_bytes = 50000000 }]\n",
    );
    let out = run_toml(&text);
    let r = &out.records[0];
    assert!(r.finished);
    // Goodput over the whole FCT (including slow start) counting payload only.
    let goodput = r.size_bytes as f64 * 8.0 / (r.fct_ps as f64 * 1e-12);
    let payload_rate = 10e9 * 1460.0 / 1500.0;
    assert!(goodput / payload_rate >= 0.99, "goodput {goodput:.3e} of {payload_rate:.3e}");
}

#[test]
fn dctcp_flows_share_a_bottleneck_with_queue_near_k() {
    // 8 senders -> 1 receiver through one switch port with K = 30 KB.
    let k = 30_000u64;
    let flows: Vec<String> =
        (1..=8).map(|s| format!("{{ src = {s}, dst = 0, size_bytes = 5000000 }}")).collect();
    let text = star(
        9,
        &format!(
            "[switch]\nbuffer_bytes = 2000000\nqueues = [{{ ecn_threshold_bytes = {k} }}]\n\
             [run]\nsample_interval_us = 5\n\
             [[workload]]\nkind = \"flows\"\nflows = [{}]\n",
            flows.join(", ")
        ),
    );
    let out = run_toml(&text);
    assert!(out.records.iter().all(|r| r.finished));
    assert_eq!(out.summary.switch_drops, 0, "DCTCP should not overflow a 2 MB buffer");
    // Utilisation of the bottleneck (leaf -> host 0), fairness of equal-size flows that started
    // together, and the queue in steady state.
    let (busy, j, occ) = bottleneck_stats(&out);
    assert!(busy > 0.95, "bottleneck busy {busy:.3}");
    assert!(j > 0.95, "Jain index {j:.3}");
    let median = occ[occ.len() / 2];
    let p99 = occ[occ.len() * 99 / 100];
    assert!(median as f64 > 0.5 * k as f64 && (median as f64) < 2.0 * k as f64, "median queue {median}");
    assert!((p99 as f64) < 4.0 * k as f64, "p99 queue {p99}");
    eprintln!("busy {busy:.4} jain {j:.4} median queue {median} p99 {p99} samples {}", occ.len());
}

#[test]
fn bytes_are_conserved_everywhere() {
    for policy in ["dynamic_thresholds", "lqd", "complete_sharing", "static"] {
        conservation_under(policy);
    }
}

fn conservation_under(policy: &str) {
    // A loaded leaf-spine with drops, stopped mid-run so that bytes are still in flight.
    let text = format!(
        "{LEAF_SPINE}\n[switch]\nbuffer_bytes = 60000\nadmission = {{ policy = \"{policy}\" }}\n[run]\nstop_ms = 3\n\
         [[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.8\nduration_ms = 5\n\
         [[workload]]\nkind = \"incast\"\nquery_rate_per_host = 2000\nfan_in = 6\nburst_bytes = 300000\nduration_ms = 5\n"
    );
    let out = run_toml(&text);
    let s = &out.summary;
    assert!(s.stopped_early);
    assert!(s.switch_drops > 0, "the scenario should drop");
    assert!(s.bytes_in_flight > 0);
    assert_eq!(s.bytes_sent, s.bytes_delivered + s.bytes_dropped + s.bytes_in_flight);
    if policy == "lqd" {
        assert!(out.switches.iter().any(|s| s.drops_pushout > 0), "LQD should push out");
    } else {
        assert!(out.switches.iter().all(|s| s.drops_pushout == 0));
    }
    for sw in &out.switches {
        assert_eq!(
            sw.enqueued_bytes,
            sw.dequeued_bytes + sw.pushed_out_bytes + sw.final_occupancy_bytes,
            "{policy}: switch {}",
            sw.switch
        );
        assert!(sw.max_occupancy_bytes <= sw.buffer_bytes);
    }
    // Every byte a switch forwarded crossed one of its links.
    let mut tx_by_node = std::collections::HashMap::new();
    for l in &out.links {
        *tx_by_node.entry(l.src).or_insert(0u64) += l.tx_bytes;
    }
    for sw in &out.switches {
        let in_tx: u64 = sw.dequeued_bytes - tx_by_node[&sw.node];
        assert!(in_tx <= 1500 * 16, "switch {} has {in_tx} B in serialization", sw.switch);
    }
}

#[test]
fn same_seed_same_records_other_seed_other_records() {
    let base = format!(
        "{LEAF_SPINE}\n[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nduration_ms = 3\n\
         [[workload]]\nkind = \"incast\"\nquery_rate_per_host = 500\nfan_in = 4\nburst_bytes = 100000\nduration_ms = 3\n"
    );
    let a = run_toml(&format!("seed = 11\n{base}"));
    let b = run_toml(&format!("seed = 11\n{base}"));
    let c = run_toml(&format!("seed = 12\n{base}"));
    assert!(!a.records.is_empty());
    assert_eq!(format!("{:?}", a.records), format!("{:?}", b.records));
    assert_eq!(a.summary, b.summary);
    assert_ne!(format!("{:?}", a.records), format!("{:?}", c.records));
}

#[test]
fn incast_small_buffer_drops_and_times_out_large_buffer_does_not() {
    let incast = "[[workload]]\nkind = \"incast\"\nquery_rate_per_host = 200\nfan_in = 16\n\
                  burst_bytes = 1600000\nduration_ms = 10\n";
    let small = run_toml(&star(17, &format!("[switch]\nbuffer_bytes = 100000\n{incast}")));
    let large = run_toml(&star(17, &format!("[switch]\nbuffer_bytes = 20000000\nadmission = {{ policy = \"complete_sharing\" }}\n{incast}")));
    assert!(small.records.iter().any(|r| r.incast));
    assert!(small.summary.switch_drops > 0);
    assert!(small.summary.num_rtos > 0, "small buffer: expected RTOs");
    assert_eq!(large.summary.switch_drops, 0);
    assert_eq!(large.summary.num_rtos, 0);
    assert!(small.records.iter().chain(&large.records).all(|r| r.finished));
    let p = |o: &Output| {
        let mut v: Vec<f64> = o.records.iter().map(|r| r.slowdown).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() * 99 / 100]
    };
    eprintln!(
        "small: drops {} rtos {} p99 {:.2}; large: p99 {:.2}",
        small.summary.switch_drops,
        small.summary.num_rtos,
        p(&small),
        p(&large)
    );
    assert!(p(&small) > p(&large), "small buffer tail {} vs large {}", p(&small), p(&large));
}

#[test]
fn ecmp_spreads_flows_over_all_paths_and_spray_over_packets() {
    // 2 leaves x 16 hosts, 4 spines with 2 parallel links: 8 uplinks per leaf.
    let topo = r#"
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 16
spines = 4
links_per_spine = 2
host_rate_gbps = 10
fabric_rate_gbps = 10
"#;
    let flows: Vec<String> = (0..16)
        .flat_map(|s| (16..32).map(move |d| format!("{{ src = {s}, dst = {d}, size_bytes = 3000 }}")))
        .collect();
    let text = format!("{topo}\n[[workload]]\nkind = \"flows\"\nflows = [{}]\n", flows.join(", "));
    let out = run_toml(&text);
    // Leaf 0 is node 32; spines are nodes 34..38.
    let up: Vec<u64> = out.links.iter().filter(|l| l.src == 32 && l.dst >= 34).map(|l| l.tx_packets).collect();
    assert_eq!(up.len(), 8);
    assert!(up.iter().all(|&p| p > 0), "every uplink carries traffic: {up:?}");
    // 256 flows of 3 packets over 8 paths: each path within 50% of the mean.
    let mean = up.iter().sum::<u64>() as f64 / 8.0;
    assert!(up.iter().all(|&p| (p as f64 - mean).abs() < 0.5 * mean), "{up:?}");
    // Per-flow ECMP: every data packet of a flow takes one uplink, so no reordering and no
    // retransmission.
    assert!(out.records.iter().all(|r| r.retx_segments == 0));
    let spray = run_toml(&format!("{text}\n[routing]\nmode = \"spray\"\n"));
    let up: Vec<u64> = spray.links.iter().filter(|l| l.src == 32 && l.dst >= 34).map(|l| l.tx_packets).collect();
    let mean = up.iter().sum::<u64>() as f64 / 8.0;
    assert!(up.iter().all(|&p| (p as f64 - mean).abs() < 0.3 * mean), "{up:?}");
}

#[test]
fn fat_tree_runs_and_every_flow_finishes() {
    let text = r#"
[topology]
kind = "fat_tree"
k = 4
rate_gbps = 10

[[workload]]
kind = "poisson"
cdf = "fb_hadoop"
load = 0.3
destinations = "permutation"
duration_ms = 5
"#;
    let out = run_toml(text);
    assert!(out.records.len() > 10);
    assert!(out.records.iter().all(|r| r.finished && r.fct_ps as u64 >= r.ideal_fct_ps));
}

#[test]
fn replay_of_the_peer_flow_list_runs() {
    let text = r#"
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 16
spines = 4
host_rate_gbps = 10
fabric_rate_gbps = 10
host_delay_ns = 3000
fabric_delay_ns = 3000

[[workload]]
kind = "flow_list"
path = "../../experiments/peer_bench/flows_L2_ws_l04_50ms_noincast.txt"
"#;
    let out = run_toml(text);
    assert_eq!(out.records.len(), 105);
    assert_eq!(out.records[0].id, 0);
    assert_eq!(out.records[0].src, 15);
    assert!(out.records.iter().all(|r| r.finished));
}

#[test]
fn decision_trace_labels_every_switch_arrival_with_its_fate() {
    let text = format!(
        "{LEAF_SPINE}\n[switch]\nbuffer_bytes = 60000\nadmission = {{ policy = \"lqd\" }}\n\
         [[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.6\nduration_ms = 2\n\
         [[workload]]\nkind = \"incast\"\nquery_rate_per_host = 2000\nfan_in = 6\nburst_bytes = 300000\nduration_ms = 2\n"
    );
    let valid = Spec::from_toml_str(&text).unwrap().validate(Path::new(".")).unwrap();
    let mut sim = sim::Simulation::new(&valid).unwrap();
    sim.enable_decision_trace().unwrap();
    sim.run_to_end();
    let out = sim.output();
    let rows = sim.decision_trace();
    let arrivals: u64 = out.switches.iter().map(|s| s.arrivals).sum();
    let drops: u64 = out.switches.iter().map(|s| s.drops_admission + s.drops_pushout + s.drops_queue_cap).sum();
    assert_eq!(rows.len() as u64, arrivals);
    assert_eq!(rows.iter().filter(|r| r.dropped).count() as u64, drops);
    assert!(drops > 0, "the scenario should make LQD push out");
    for r in rows {
        assert!(r.features[0] <= 60_000.0 && r.features[2] <= 60_000.0, "{r:?}");
        assert!(r.features[0] <= r.features[2], "a queue is part of the buffer: {r:?}");
    }
    // Time runs forward within each switch.
    assert!(rows.windows(2).all(|w| w[0].time_ps <= w[1].time_ps));
}

#[test]
fn nic_marking_keeps_a_hosts_short_flows_out_of_its_long_flows_queue() {
    // Host 0 sends one long flow at line rate (its NIC is the bottleneck) and, 2 ms in, a short
    // one. With NIC marking the long flow's window stays near K at the NIC; without it the
    // window grows without bound and the short flow waits behind it in the NIC's FIFO (a FIFO
    // NIC without TSQ, as under ns3_compat; the default NIC bounds the wait either way, see
    // tests/nic.rs).
    let flows = "[[workload]]\nkind = \"flows\"\nflows = [\n\
                 { src = 0, dst = 5, size_bytes = 20000000 },\n\
                 { src = 0, dst = 6, size_bytes = 10000, start_ns = 2000000 },\n]\n";
    let fifo = "[host]\nscheduler = \"fifo\"\ntsq_pkts = 0\n";
    let on = run_toml(&format!("{LEAF_SPINE}\n{fifo}{flows}"));
    let off = run_toml(&format!("{LEAF_SPINE}\n{fifo}ecn_marking = false\n{flows}"));
    let short = |o: &Output| o.records.iter().find(|r| r.size_bytes == 10_000).unwrap().slowdown;
    assert!(short(&on) < 10.0, "with NIC marking: {}", short(&on));
    assert!(short(&off) > 3.0 * short(&on), "without: {} vs {}", short(&off), short(&on));
    // The long flow still runs at line rate either way.
    let long = |o: &Output| o.records.iter().find(|r| r.size_bytes == 20_000_000).unwrap().slowdown;
    assert!(long(&on) < 1.05, "{}", long(&on));
}

#[test]
fn power_tcp_flows_share_a_bottleneck_with_a_near_empty_queue() {
    // 4 PowerTCP senders -> 1 receiver through one switch port: line rate, fair shares, and a
    // standing queue near N * beta (beta = BDP / 10), far below DCTCP's K-sized queue.
    let flows: Vec<String> =
        (1..=4).map(|s| format!("{{ src = {s}, dst = 0, size_bytes = 5000000 }}")).collect();
    let text = star(
        5,
        &format!(
            "[transport]\nkind = \"power_tcp\"\n[switch]\nbuffer_bytes = 2000000\n\
             [run]\nsample_interval_us = 5\n[[workload]]\nkind = \"flows\"\nflows = [{}]\n",
            flows.join(", ")
        ),
    );
    let out = run_toml(&text);
    assert!(out.records.iter().all(|r| r.finished));
    assert_eq!(out.summary.switch_drops, 0);
    let (busy, j, occ) = bottleneck_stats(&out);
    let median = occ[occ.len() / 2];
    eprintln!("PowerTCP busy {busy:.4} jain {j:.4} median queue {median}");
    assert!(busy > 0.95, "bottleneck busy {busy:.3}");
    assert!(j > 0.95);
    // BDP here is about 10 Gb/s x 4.2 us = 5.3 KB, so N * beta is about 2 KB: allow a few packets.
    assert!(median < 15_000, "median queue {median} B");
}

#[test]
fn ack_prio_puts_acks_in_a_class_of_their_own() {
    // Data in class 1 both ways between hosts 0 and 2 (and from 1 to 2): the switch port
    // towards host 0 carries the data of 2 -> 0 and the ACKs of 0 -> 2, which wait behind it.
    let run = |transport: &str| {
        run_toml(&star(
            3,
            &format!(
                "[switch]\nqueues = [{{ ecn_threshold_bytes = 30000 }}, {{ ecn_threshold_bytes = 30000 }}]\n\
                 [transport]\nkind = \"dctcp\"\n{transport}\n[[workload]]\nkind = \"flows\"\nflows = [\n\
                 {{ src = 0, dst = 2, size_bytes = 2000000, start_ns = 0, prio = 1 }},\n\
                 {{ src = 1, dst = 2, size_bytes = 2000000, start_ns = 0, prio = 1 }},\n\
                 {{ src = 2, dst = 0, size_bytes = 2000000, start_ns = 0, prio = 1 }} ]\n"
            ),
        ))
    };
    // The classes that queued at the switch port towards host `h`.
    let classes = |out: &Output, h: u32| -> Vec<u8> {
        let mut q: Vec<u8> =
            out.queues.iter().filter(|q| out.links[q.link as usize].dst == h).map(|q| q.queue).collect();
        q.sort_unstable();
        q.dedup();
        q
    };
    let own = run("ack_prio = 0");
    let same = run("");
    assert_eq!(classes(&own, 0), vec![0, 1], "ACKs in class 0, data in class 1");
    assert_eq!(classes(&same, 0), vec![1], "ACKs in their flow's class");
    assert!(own.records.iter().chain(&same.records).all(|r| r.finished && r.prio == 1));
}

/// SACK in the network: eight long NewReno flows into one port whose buffer holds a fraction
/// of their slow-start windows drop runs of packets at a time. With SACK every byte still
/// arrives and is counted once (conservation, every flow finished), and the drops are repaired
/// with fewer retransmissions and sooner overall. (Timeouts are not fewer here: a tail lost
/// whole is a timeout with or without SACK, and which flow loses its tail moves with the
/// dynamics; 5 with SACK and none without in this run.)
#[test]
fn sack_repairs_a_congested_ports_drops_sooner() {
    let run = |sack: bool| {
        let flows: Vec<String> =
            (1..=8).map(|s| format!("{{ src = {s}, dst = 0, size_bytes = 3000000, start_ns = {} }}", s * 1000)).collect();
        let text = star(
            9,
            &format!(
                "[switch]\nbuffer_bytes = 150000\nadmission = {{ policy = \"static\", port_bytes = 100000 }}\n\
                 [transport]\nkind = \"newreno\"\nsack = {sack}\n\
                 [[workload]]\nkind = \"flows\"\nflows = [{}]\n",
                flows.join(", ")
            ),
        );
        run_toml(&text)
    };
    let (off, on) = (run(false), run(true));
    for o in [&off, &on] {
        let s = &o.summary;
        assert!(s.switch_drops > 100, "the port must drop runs of packets");
        assert!(o.records.iter().all(|r| r.finished && r.bytes_delivered == 3_000_000));
        assert_eq!(s.bytes_sent, s.bytes_delivered + s.bytes_dropped + s.bytes_in_flight);
    }
    let fct = |o: &Output| o.records.iter().map(|r| r.fct_ps).sum::<i64>();
    let retx = |o: &Output| o.records.iter().map(|r| r.retx_segments).sum::<u64>();
    assert!(retx(&on) < retx(&off), "retransmitted {} with SACK, {} without", retx(&on), retx(&off));
    assert!(fct(&on) < fct(&off) * 9 / 10, "FCT sums {} with SACK, {} without", fct(&on), fct(&off));
}
