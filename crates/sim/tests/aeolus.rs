//! ExpressPass and Aeolus end to end: credits are the only packets switches drop under an
//! N-to-1 incast (scheduled data never), Aeolus's first BDP leaves at line rate, a long flow
//! runs near line rate minus the credits' ~5%, and bytes are conserved with nothing stalled.

use sim::metrics::Output;

mod common;
use common::{run_toml, star};

/// The switch halves: ExpressPass's credit queue of 8, Aeolus's 8 KB selective dropping.
const SWITCH: &str = "[switch]\ncredit_queue_pkts = 8\nselective_drop_bytes = 8000\n";

/// `kind` flows of `size` bytes from hosts `0..n` to host `n` on a star of `n + 1` hosts.
fn incast(kind: &str, n: u32, size: u64) -> Output {
    let flows: Vec<String> =
        (0..n).map(|s| format!("{{ src = {s}, dst = {n}, size_bytes = {size} }}")).collect();
    run_toml(&star(
        n + 1,
        &format!(
            "{SWITCH}[transport]\nkind = \"{kind}\"\n[[workload]]\nkind = \"flows\"\nflows = [\n{} ]\n",
            flows.join(",\n")
        ),
    ))
}

fn one_flow(kind: &str, size: u64) -> Output {
    one_flow_with(kind, "", size)
}

fn one_flow_with(kind: &str, keys: &str, size: u64) -> Output {
    run_toml(&star(
        2,
        &format!("{SWITCH}[transport]\nkind = \"{kind}\"\n{keys}[[workload]]\nkind = \"flows\"\nflows = [ {{ src = 0, dst = 1, size_bytes = {size} }} ]\n"),
    ))
}

fn check_conserved(out: &Output) {
    let s = &out.summary;
    assert_eq!(s.bytes_sent, s.bytes_delivered + s.bytes_dropped + s.bytes_in_flight, "{s:?}");
    assert_eq!(s.finished_flows, s.num_flows, "no flow stalls: {s:?}");
    assert!(!s.stopped_early);
    for r in &out.records {
        assert!(r.finished && r.bytes_delivered == r.size_bytes, "{r:?}");
    }
}

#[test]
fn incast_drops_only_credits_never_scheduled_data() {
    for kind in ["expresspass", "aeolus"] {
        let out = incast(kind, 16, 200_000);
        check_conserved(&out);
        let sw = &out.switches[0];
        assert_eq!(sw.drops_admission + sw.drops_queue_cap + sw.drops_pushout, 0, "{kind}: data is never dropped: {sw:?}");
        // The receiver's NIC limits its credits for all 16 flows together (ExpressPass §3.1).
        assert!(sw.drops_credit + out.summary.nic_drops > 0, "{kind}: 16 flows' credits from one receiver: {sw:?}");
        // Every retransmission is of an unscheduled packet (Aeolus's), none after a timeout.
        let retx: u64 = out.records.iter().map(|r| r.retx_segments).sum();
        assert_eq!(out.summary.num_rtos, 0, "{kind}");
        if kind == "expresspass" {
            assert_eq!((sw.drops_selective, retx), (0, 0), "{kind}: {sw:?}");
        } else {
            assert_eq!(retx, sw.drops_selective, "{kind}: each selectively dropped packet is resent once: {sw:?}");
        }
        // The switch queue toward the receiver stays short: credits schedule the data.
        let to_rx = out.links.iter().find(|l| l.dst == 16 && l.src != 16).unwrap().link;
        let max_q = out.queues.iter().filter(|q| q.link == to_rx).map(|q| q.max_bytes).max().unwrap_or(0);
        eprintln!("{kind}: max queue {max_q} B, {sw:?}");
        assert!(max_q < 200_000, "{kind}: {max_q}");
    }
}

#[test]
fn aeolus_sends_the_first_bdp_at_line_rate() {
    // Eight packets unscheduled (about two BDPs here): Aeolus sends them all at once and
    // completes in about the ideal time; ExpressPass waits for credits at 1/16 of the maximum
    // rate first.
    let aeolus = one_flow_with("aeolus", "unscheduled_bytes = 11632\n", 8 * 1454);
    check_conserved(&aeolus);
    let xpass = one_flow("expresspass", 8 * 1454);
    check_conserved(&xpass);
    let (a, x) = (&aeolus.records[0], &xpass.records[0]);
    eprintln!("aeolus {a:?}\nexpresspass {x:?}");
    assert!(a.slowdown < 1.3, "aeolus: {a:?}");
    assert!(x.slowdown > 2.0 * a.slowdown, "expresspass waits for credits: {x:?}");
    assert_eq!((a.retx_segments, a.num_rtos), (0, 0));
}

#[test]
fn a_long_flow_runs_near_line_rate_minus_the_credits() {
    for kind in ["expresspass", "aeolus"] {
        let size = 20_000_000u64;
        let out = one_flow(kind, size);
        check_conserved(&out);
        let r = &out.records[0];
        let goodput_gbps = size as f64 * 8.0 / (r.fct_ps as f64 * 1e-12) / 1e9;
        // The wire carries at most 1538 B of data per 84 + 1538 B: 94.8% of 10 Gb/s in frames,
        // 1454 B of payload each (8.96 Gb/s of goodput).
        let max = 10.0 * 1454.0 / (84.0 + 1538.0);
        eprintln!("{kind}: {goodput_gbps:.3} Gb/s goodput (max {max:.3})");
        assert!(goodput_gbps <= max * 1.001, "{kind}: {goodput_gbps}");
        assert!(goodput_gbps > 0.95 * max, "{kind}: {goodput_gbps}");
        assert_eq!(out.switches[0].drops_admission + out.switches[0].drops_selective, 0);
    }
}

/// Leaf 0's eight hosts send 300 KB each to four hosts of leaf 1 (two-to-one) through four
/// spines (2:1 oversubscribed), with `routing` paths.
fn cross_leaf(kind: &str, routing: &str) -> Output {
    let flows: Vec<String> =
        (0..8).map(|s| format!("{{ src = {s}, dst = {}, size_bytes = 300000 }}", 8 + s % 4)).collect();
    run_toml(&format!(
        "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 8\nspines = 4\nhost_rate_gbps = 10\n\
         fabric_rate_gbps = 10\nhost_delay_ns = 1000\nfabric_delay_ns = 1000\n[routing]\nmode = \"{routing}\"\n\
         {SWITCH}[transport]\nkind = \"{kind}\"\n[[workload]]\nkind = \"flows\"\nflows = [\n{} ]\n",
        flows.join(",\n")
    ))
}

#[test]
fn symmetric_paths_keep_scheduled_data_lossless_across_spines() {
    for (kind, routing) in [("expresspass", "symmetric_ecmp"), ("aeolus", "symmetric_ecmp"), ("aeolus", "flow_index")] {
        let out = cross_leaf(kind, routing);
        check_conserved(&out);
        let data_drops: u64 = out.switches.iter().map(|s| s.drops_admission + s.drops_queue_cap + s.drops_pushout).sum();
        assert_eq!(data_drops, 0, "{kind} over {routing}: {:?}", out.switches);
        assert_eq!(out.summary.num_rtos, 0, "{kind} over {routing}");
    }
}

#[test]
fn per_switch_ecmp_is_refused_for_credit_scheduling() {
    let text = "[topology]\nkind = \"fat_tree\"\nk = 4\nrate_gbps = 10\n[switch]\ncredit_queue_pkts = 8\n\
                [transport]\nkind = \"expresspass\"\n";
    let err = sim::Spec::from_toml_str(text).unwrap().validate(std::path::Path::new(".")).unwrap_err().to_string();
    assert!(err.contains("routing.mode") && err.contains("symmetric_ecmp") && err.contains("§3.1"), "{err}");
}

/// A k = 4 fat-tree with 200 KB switch buffers under web search at 80% and 12-to-1 incasts.
fn fat_tree_mix(kind: &str, seed: u64) -> Output {
    run_toml(&format!(
        "seed = {seed}\n[topology]\nkind = \"fat_tree\"\nk = 4\nrate_gbps = 10\n[routing]\nmode = \"symmetric_ecmp\"\n\
         [switch]\ncredit_queue_pkts = 8\nselective_drop_bytes = 8000\nbuffer_bytes = 200000\n\
         [transport]\nkind = \"{kind}\"\n\
         [[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.8\nduration_ms = 5.0\n\
         [[workload]]\nkind = \"incast\"\nquery_rate_per_host = 200.0\nfan_in = 12\nburst_bytes = 600000\nduration_ms = 5.0\n"
    ))
}

#[test]
fn small_buffers_under_load_and_incast_lose_no_scheduled_data_and_nothing_hangs() {
    for kind in ["expresspass", "aeolus"] {
        let out = fat_tree_mix(kind, 5);
        check_conserved(&out);
        assert!(out.records.iter().any(|r| r.incast), "{kind}: incasts ran");
        let data_drops: u64 = out.switches.iter().map(|s| s.drops_admission + s.drops_queue_cap + s.drops_pushout).sum();
        assert_eq!(data_drops, 0, "{kind}");
        let credit_drops: u64 = out.switches.iter().map(|s| s.drops_credit).sum::<u64>() + out.summary.nic_drops;
        assert!(credit_drops > 0, "{kind}: credits absorb the congestion");
    }
    // Deterministic: the same seed gives the same records.
    let (a, b) = (fat_tree_mix("aeolus", 9), fat_tree_mix("aeolus", 9));
    assert_eq!(a.records, b.records);
    assert_eq!(a.summary.events, b.summary.events);
}
