//! The bounded-loss transport end to end (Xia et al., APNet'19; `[transport] kind = "mlt"`): a
//! flow of S bytes is a message of S / value_bytes values. Through a congested, lossy incast
//! every flow ends with at least the fraction p of its values delivered (the bound holds), and
//! with p = 1 it delivers every byte, as DCTCP does; stopping at p cuts the incast's tail FCT.

use sim::metrics::Output;

mod common;
use common::{run_toml, star};

/// Eight senders into host 8 at once through a small switch buffer, so packets drop.
fn incast(transport: &str) -> Output {
    let flows: Vec<String> =
        (0..8u64).map(|i| format!("{{ src = {i}, dst = 8, size_bytes = {} }}", 200_000 + 40_000 * i)).collect();
    run_toml(&star(
        9,
        &format!(
            "{transport}[switch]\nqueues = [{{ cap_bytes = 30000, ecn_threshold_bytes = 20000 }}]\n\
             [[workload]]\nkind = \"flows\"\nflows = [ {} ]\n",
            flows.join(",\n")
        ),
    ))
}

#[test]
fn every_flow_ends_with_at_least_p_of_its_values_through_a_lossy_incast() {
    let out = incast("[transport]\nkind = \"mlt\"\ncomplete_fraction = 0.8\nrto_us = 200\n");
    let sw = &out.switches[0];
    assert!(sw.drops_queue_cap + sw.drops_admission > 0, "the scenario must drop: {sw:?}");
    let mut num_enough = 0;
    for r in &out.records {
        assert_eq!(r.transport, "mlt");
        assert!(r.finished, "flow {} stalled: {r:?}", r.id);
        let values = r.size_bytes.div_ceil(4);
        let need = (values * 8).div_ceil(10);
        assert!(r.bytes_delivered >= need * 4, "flow {}: {} < {} bytes (p = 0.8)", r.id, r.bytes_delivered, need * 4);
        assert!(r.outcome == "enough" || r.outcome == "complete", "{r:?}");
        num_enough += usize::from(r.outcome == "enough");
    }
    assert!(num_enough > 0, "some flow stopped waiting at p: {:?}", out.records);
}

#[test]
fn with_p_one_it_delivers_every_byte_as_dctcp_does() {
    let mlt = incast("[transport]\nkind = \"mlt\"\ncomplete_fraction = 1.0\nrto_us = 200\n");
    let dctcp = incast("[transport]\nkind = \"dctcp\"\nmin_rto_us = 200\ninit_rto_us = 200\n");
    for (m, d) in mlt.records.iter().zip(&dctcp.records) {
        assert!(m.finished && d.finished, "{m:?} {d:?}");
        assert_eq!(m.outcome, "complete");
        assert_eq!((m.bytes_delivered, m.size_bytes), (d.bytes_delivered, d.size_bytes));
    }
}

#[test]
fn stopping_at_p_cuts_the_tail_of_the_incast() {
    // APNet'19 Figure 4c's shape: the bounded-loss transport cuts the tail FCT. Here the
    // slowest of eight flows at p = 0.8 against the same transport at p = 1 and DCTCP, all with
    // the same window law and timeout.
    let tail = |o: &Output| o.records.iter().map(|r| r.fct_ps).max().unwrap();
    let mlt = incast("[transport]\nkind = \"mlt\"\ncomplete_fraction = 0.8\nrto_us = 200\n");
    let one = incast("[transport]\nkind = \"mlt\"\ncomplete_fraction = 1.0\nrto_us = 200\n");
    let dctcp = incast("[transport]\nkind = \"dctcp\"\nmin_rto_us = 200\ninit_rto_us = 200\n");
    assert!(tail(&mlt) * 10 < tail(&one) * 9, "{} vs {}", tail(&mlt), tail(&one));
    assert!(tail(&mlt) * 10 < tail(&dctcp) * 9, "{} vs {}", tail(&mlt), tail(&dctcp));
}
