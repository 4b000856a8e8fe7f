//! pFabric end to end (SIGCOMM'13 §4): `[transport] kind = "pfabric"` hosts through
//! `switch.scheduler = "pfabric"` ports. A lone flow runs at line rate (its FCT is the ideal's),
//! concurrent flows into one receiver finish in order of size (shortest remaining first), the
//! smallest far sooner than under DCTCP's fair sharing, and bytes are conserved with nothing
//! stalled, though the small port buffers drop.

use sim::metrics::Output;

mod common;
use common::{run_toml, star};

const PFABRIC: &str = "[transport]\nkind = \"pfabric\"\n\
     [switch]\nscheduler = \"pfabric\"\nadmission = { policy = \"complete_sharing\" }\nqueues = [{}]\n";

fn check_conserved(out: &Output) {
    let s = &out.summary;
    assert_eq!(s.bytes_sent, s.bytes_delivered + s.bytes_dropped + s.bytes_in_flight, "{s:?}");
    for r in &out.records {
        assert!(r.finished, "flow {} stalled: {r:?}", r.id);
        assert_eq!(r.bytes_delivered, r.size_bytes, "flow {}", r.id);
        assert_eq!(r.transport, "pfabric");
    }
}

#[test]
fn a_lone_flow_runs_at_line_rate() {
    let out = run_toml(&star(
        2,
        &format!("{PFABRIC}[[workload]]\nkind = \"flows\"\nflows = [ {{ src = 0, dst = 1, size_bytes = 5000000 }} ]\n"),
    ));
    check_conserved(&out);
    let r = &out.records[0];
    assert_eq!((r.num_rtos, r.retx_segments), (0, 0), "{r:?}");
    // One BDP is enough to fill the pipe: the FCT is the contention-free ideal's.
    assert!(r.slowdown < 1.01, "slowdown {} (fct {} ps, ideal {} ps)", r.slowdown, r.fct_ps, r.ideal_fct_ps);
    assert_eq!(out.switches[0].drops_queue_cap + out.switches[0].drops_pushout, 0);
}

/// Eight senders, each one flow into host 8, all starting at once; sizes 30 KB, 60 KB, ...
fn incast(transport_and_switch: &str) -> Output {
    let flows: Vec<String> = (0..8u64)
        .map(|i| format!("{{ src = {i}, dst = 8, size_bytes = {} }}", 30_000 * (8 - i)))
        .collect();
    run_toml(&star(
        9,
        &format!("{transport_and_switch}[[workload]]\nkind = \"flows\"\nflows = [ {} ]\n", flows.join(",\n")),
    ))
}

#[test]
fn concurrent_flows_finish_shortest_first() {
    let out = incast(PFABRIC);
    check_conserved(&out);
    let mut by_size: Vec<_> = out.records.iter().collect();
    by_size.sort_by_key(|r| r.size_bytes);
    let ends: Vec<i64> = by_size.iter().map(|r| r.start_ps as i64 + r.fct_ps).collect();
    assert!(ends.windows(2).all(|w| w[0] < w[1]), "completion follows size (SRPT): {ends:?}");
    // The shortest flow barely notices the others; the port drops the least urgent packets.
    let shortest = by_size[0];
    assert!(shortest.slowdown < 2.0, "{shortest:?}");
    let sw = &out.switches[0];
    // A 2-BDP port overflows under an 8-to-1 incast: it pushes out queued packets for more
    // urgent arrivals, and drops arrivals that are the least urgent.
    assert!(sw.drops_pushout > 0 && sw.drops_queue_cap > 0, "{sw:?}");
    assert_eq!(sw.drops_admission, 0, "complete sharing never drops first");
    // The queue never exceeds the port's buffer (2 BDP, default).
    let port = out.links.iter().find(|l| l.dst == 8 && l.src != 8).unwrap().link;
    let max = out.queues.iter().filter(|q| q.link == port).map(|q| q.max_bytes).max().unwrap();
    assert!(max <= 40_000, "{max}");

    let dctcp = incast("[transport]\nkind = \"dctcp\"\n");
    let dctcp_shortest = dctcp.records.iter().min_by_key(|r| r.size_bytes).unwrap();
    assert!(
        shortest.slowdown * 2.0 < dctcp_shortest.slowdown,
        "pFabric's shortest flow {} vs DCTCP's {}",
        shortest.slowdown,
        dctcp_shortest.slowdown
    );
}

#[test]
fn the_same_scenario_gives_the_same_records() {
    let a = incast(PFABRIC);
    let b = incast(PFABRIC);
    let key = |o: &Output| o.records.iter().map(|r| (r.id, r.fct_ps, r.num_rtos)).collect::<Vec<_>>();
    assert_eq!(key(&a), key(&b));
}

/// Host 0 sends a 2 MB flow to host 1 and, 100 µs later, a 30 KB flow to host 2, its NIC
/// ordered by `nic`.
fn two_flows_from_one_host(nic: &str) -> Output {
    run_toml(&star(
        3,
        &format!(
            "{PFABRIC}[host]\nscheduler = \"{nic}\"\n[[workload]]\nkind = \"flows\"\nflows = [\n\
             {{ src = 0, dst = 1, size_bytes = 2000000 }},\n\
             {{ src = 0, dst = 2, size_bytes = 30000, start_ns = 100000 }} ]\n"
        ),
    ))
}

#[test]
fn a_pfabric_nic_sends_its_hosts_shortest_flow_first() {
    let pf = two_flows_from_one_host("pfabric");
    check_conserved(&pf);
    let short = |o: &Output| o.records.iter().find(|r| r.size_bytes == 30_000).unwrap().slowdown;
    // The short flow overtakes the long one at its own NIC: nothing but the packet already being
    // serialized (and the one TSQ let wait) delays it.
    assert!(short(&pf) < 1.1, "{}", short(&pf));
    // Round robin at the NIC shares the link with the long flow: about twice the ideal.
    let rr = two_flows_from_one_host("per_flow_rr");
    assert!(short(&rr) > 1.5, "{}", short(&rr));
}
