//! Host NICs (issue 7): TSQ backpressure (`host.tsq_pkts`) and per-flow round robin
//! (`host.scheduler = "per_flow_rr"`, both on by default) against closed forms and bounds, byte
//! conservation under both, and the spec checks of the two keys. Tests that compare with a NIC
//! without them say `scheduler = "fifo"` and `tsq_pkts = 0` (the `ns3_compat` profile's NIC,
//! whose runs the golden `compare_s2` scenario pins).

use std::path::Path;

use sim::metrics::{FctRecord, Output};
use sim::{Simulation, Spec};

/// A full packet of the default transport: 1460 B of payload and 40 B of headers.
const FULL: u64 = 1500;

fn sim_of(text: &str) -> Simulation {
    let spec = Spec::from_toml_str(text).unwrap_or_else(|e| panic!("bad test spec: {e}"));
    let valid = spec.validate(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("valid test spec");
    let mut sim = Simulation::new(&valid).expect("build");
    sim.run_to_end();
    sim
}

/// Two leaves of four hosts at `host` Gb/s under two spines at `fabric` Gb/s, 1 us links.
fn leaf_spine(host: u32, fabric: u32) -> String {
    format!(
        "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 4\nspines = 2\n\
         host_rate_gbps = {host}\nfabric_rate_gbps = {fabric}\nhost_delay_ns = 1000\nfabric_delay_ns = 1000\n"
    )
}

fn flows(list: &[(u32, u32, u64, u64)]) -> String {
    let rows: Vec<String> = list
        .iter()
        .map(|(s, d, size, at)| format!("{{ src = {s}, dst = {d}, size_bytes = {size}, start_ns = {at} }}"))
        .collect();
    format!("[[workload]]\nkind = \"flows\"\nflows = [{}]\n", rows.join(", "))
}

fn conserved(out: &Output) {
    let s = &out.summary;
    assert_eq!(s.bytes_sent, s.bytes_delivered + s.bytes_dropped + s.bytes_in_flight, "{s:?}");
}

#[test]
fn tsq_holds_a_line_rate_udp_source_to_the_limit_behind_a_slower_bottleneck() {
    // An unpaced UDP source hands out its whole flow at once; its NIC (25 Gb/s) is faster than
    // the fabric (10 Gb/s) behind it, so the leaf's uplink drops what it cannot hold. Without
    // TSQ the NIC queues the whole 3 MB; with it, exactly the limit (the limit is a whole number
    // of packets, and a packet leaving the queue lets one more in).
    let text = format!("{}\n[transport]\nkind = \"udp\"\n{}", leaf_spine(25, 10), flows(&[(0, 4, 3_000_000, 0)]));
    let off = sim_of(&format!("{text}\n[host]\ntsq_pkts = 0\n"));
    assert_eq!(off.nic_max_backlog_bytes(0), 3_000_000 / 1460 * FULL + (3_000_000 % 1460 + 40) - FULL);
    for pkts in [1, 2, 10] {
        let limit = pkts * FULL;
        let on = sim_of(&format!("{text}\n[host]\ntsq_pkts = {pkts}\n"));
        assert_eq!(on.nic_max_backlog_bytes(0), limit, "{pkts} packets");
        let out = on.output();
        assert!(out.summary.switch_drops > 0, "the slower fabric drops the excess");
        conserved(&out);
    }
}

#[test]
fn tsq_udp_source_meets_the_closed_form_when_uncontended() {
    // Alone in the network the NIC is never idle for want of a packet (a held source is polled
    // when one of its packets starts serializing): the FCT equals the ideal to the picosecond,
    // unpaced or paced at line rate, whatever the limit.
    let list = flows(&[(0, 5, 1, 0), (1, 6, 1460, 1_000_000), (2, 7, 2_000_000, 2_000_000), (3, 0, 14_601, 3_000_000)]);
    for rate in ["", "rate_gbps = 10\n"] {
        for pkts in [1, 2, 10] {
            let limit = pkts * FULL;
            let text = format!(
                "{}\n[transport]\nkind = \"udp\"\n{rate}[host]\ntsq_pkts = {pkts}\n{list}",
                leaf_spine(10, 40)
            );
            let sim = sim_of(&text);
            let out = sim.output();
            for r in &out.records {
                assert!(r.finished, "{r:?}");
                assert_eq!(r.fct_ps as u64, r.ideal_fct_ps, "limit {limit} {rate}: {r:?}");
            }
            assert!(sim.nic_max_backlog_bytes(2) <= limit);
        }
    }
}

#[test]
fn tsq_tcp_flows_meet_the_closed_form_when_uncontended() {
    // The same for TCP flows that fit in their first window: held-back segments leave as soon
    // as the NIC takes them, so nothing is late.
    let list = flows(&[(0, 5, 1, 0), (1, 6, 1460, 1_000_000), (2, 7, 100_000, 2_000_000), (3, 0, 14_601, 3_000_000)]);
    for kind in ["dctcp", "newreno"] {
        for scheduler in ["fifo", "per_flow_rr"] {
            let text = format!(
                "{}\n[transport]\nkind = \"{kind}\"\ninit_cwnd_pkts = 100\n\
                 [host]\ntsq_pkts = 2\nscheduler = \"{scheduler}\"\n{list}",
                leaf_spine(10, 40),
            );
            for r in &sim_of(&text).output().records {
                assert_eq!(r.fct_ps as u64, r.ideal_fct_ps, "{kind} {scheduler}: {r:?}");
            }
        }
    }
}

/// Host 0 sends a 3 MB NewReno flow to host 1 and, 500 us later, `SHORT` bytes to host 2, all
/// on one 10 Gb/s switch. NewReno ignores ECN and nothing drops, so in slow start its window
/// grows by one MSS per ACK, i.e. at about the line rate: without TSQ its NIC queue grows by
/// about 10 Gb/s x 500 us (more than 500 KB) before the short flow starts.
const SHORT: u64 = 10_000;

/// Serialization time at 10 Gb/s, in picoseconds.
fn tx(bytes: u64) -> u64 {
    bytes * 8 * 1000 / 10
}

fn newreno_and_short(host: &str) -> (FctRecord, FctRecord) {
    let text = format!(
        "[topology]\nkind = \"leaf_spine\"\nleaves = 1\nhosts_per_leaf = 3\nspines = 0\n\
         host_rate_gbps = 10\nfabric_rate_gbps = 10\nhost_delay_ns = 1000\n\
         [transport]\nkind = \"newreno\"\n[host]\n{host}\n{}",
        flows(&[(0, 1, 3_000_000, 0), (0, 2, SHORT, 500_000)])
    );
    let out = sim_of(&text).output();
    assert!(out.records.iter().all(|r| r.finished));
    assert_eq!(out.summary.switch_drops, 0);
    conserved(&out);
    (out.records[0], out.records[1])
}

#[test]
fn per_flow_rr_lets_a_short_flow_past_a_newreno_window() {
    // The short flow's k = 7 packets fit in its first window and leave together. Round robin
    // with a one-MTU quantum serves them alternately with the long flow's: each waits for at
    // most one long packet, plus the one on the wire when the first arrives, so
    //   FCT <= ideal + (k + 1) x tx(1500 B) + tx(40 B)
    // (the last term: its ACK may meet one of the long flow's ACKs at the switch port to host
    // 0; nothing else is shared). A FIFO makes it wait for the long flow's whole backlog.
    let k = SHORT.div_ceil(1460);
    let (fifo_long, fifo) = newreno_and_short("scheduler = \"fifo\"\ntsq_pkts = 0");
    let (rr_long, rr) = newreno_and_short("scheduler = \"per_flow_rr\"\ntsq_pkts = 0");
    let bound = rr.ideal_fct_ps + (k + 1) * tx(FULL) + tx(40);
    assert!((rr.fct_ps as u64) <= bound, "rr {} > bound {bound}", rr.fct_ps);
    assert!(fifo.fct_ps as u64 > fifo.ideal_fct_ps + tx(500_000), "fifo {}", fifo.fct_ps);
    assert!(fifo.slowdown > 20.0 * rr.slowdown, "fifo {} rr {}", fifo.slowdown, rr.slowdown);
    // The NIC is work-conserving and the long flow's last packet leaves after every byte of
    // both flows either way: the order changes the short flow's FCT, not the long one's.
    assert_eq!(rr_long.fct_ps, fifo_long.fct_ps);
}

#[test]
fn tsq_bounds_the_short_flows_wait_in_a_fifo_too() {
    // With TSQ at two packets both flows have at most two packets queued: the FIFO then serves
    // two of the long flow's packets, two of the short flow's, and so on, so at most
    // 2 x ceil(k / 2) = k + 1 long packets precede the short flow's last one, plus the one on
    // the wire when it starts:
    //   FCT <= ideal + (k + 2) x tx(1500 B) + tx(40 B),
    // and per-flow round robin keeps its own bound. The long flow is not slowed down (a held
    // sender loses no time): its FCT is the same as without TSQ.
    let k = SHORT.div_ceil(1460);
    let (free_long, _) = newreno_and_short("scheduler = \"fifo\"\ntsq_pkts = 0");
    for scheduler in ["fifo", "per_flow_rr"] {
        let (long, r) = newreno_and_short(&format!("scheduler = \"{scheduler}\"\ntsq_pkts = 2"));
        assert!((r.fct_ps as u64) <= r.ideal_fct_ps + (k + 2) * tx(FULL) + tx(40), "{scheduler}: {r:?}");
        assert_eq!(long.fct_ps, free_long.fct_ps, "{scheduler}");
    }
}

#[test]
fn bytes_are_conserved_with_tsq_and_per_flow_rr() {
    // A loaded leaf-spine with drops, stopped mid-run so that bytes are still in flight, under
    // every combination, for a window transport and an unreliable one.
    for kind in ["dctcp", "newreno", "udp"] {
        for host in ["scheduler = \"per_flow_rr\"", "tsq_pkts = 2", "scheduler = \"per_flow_rr\"\ntsq_pkts = 10"] {
            let text = format!(
                "{}\n[transport]\nkind = \"{kind}\"\n[host]\n{host}\n\
                 [switch]\nbuffer_bytes = 60000\n[run]\nstop_ms = 3\n\
                 [[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.8\nduration_ms = 5\n\
                 [[workload]]\nkind = \"incast\"\nquery_rate_per_host = 2000\nfan_in = 6\nburst_bytes = 300000\n\
                 duration_ms = 5\n",
                leaf_spine(10, 40)
            );
            let out = sim_of(&text).output();
            assert!(out.summary.stopped_early && out.summary.bytes_in_flight > 0, "{kind} {host}");
            conserved(&out);
            for sw in &out.switches {
                assert_eq!(sw.enqueued_bytes, sw.dequeued_bytes + sw.pushed_out_bytes + sw.final_occupancy_bytes);
            }
        }
    }
}

#[test]
fn host_keys_are_checked() {
    let base = format!("{}\n{}", leaf_spine(10, 40), flows(&[(0, 5, 1000, 0)]));
    let check = |host: &str| {
        Spec::from_toml_str(&format!("{base}\n[host]\n{host}\n"))
            .and_then(|s| s.validate(Path::new(".")))
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert!(check("tsq_pkts = 0").is_ok());
    assert!(check("tsq_pkts = 1").is_ok());
    assert!(check("tsq_pkts = -1").unwrap_err().contains("tsq_pkts"));
    assert!(check("scheduler = \"per_flow_rr\"").is_ok());
    assert!(check("scheduler = \"fq\"").unwrap_err().contains("scheduler"));
}

