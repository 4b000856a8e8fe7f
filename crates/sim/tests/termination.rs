//! A run always ends (issue 8). Buffers that cannot hold a packet are refused at validation
//! (`validation.rs`); what is left is loss the network causes. A sender that makes no progress
//! through `max_retries` retransmission timeouts gives up (the exact timing is traced in
//! `proto`'s tests), with records that say so; reactive applications are told and carry on.

mod common;

use common::{run_toml, star};
use sim::metrics::Output;

/// Four senders into one port of a switch whose whole buffer holds one full packet: heavy
/// loss, and retransmission timeouts.
fn incast(transport: &str, workload: &str) -> String {
    star(5, &format!("[switch]\nbuffer_bytes = 1600\n[transport]\n{transport}\n{workload}"))
}

const FOUR_FLOWS: &str = "[[workload]]\nkind = \"flows\"\nflows = [\n\
    { src = 0, dst = 4, size_bytes = 100000, start_ns = 0 },\n\
    { src = 1, dst = 4, size_bytes = 100000, start_ns = 0 },\n\
    { src = 2, dst = 4, size_bytes = 100000, start_ns = 0 },\n\
    { src = 3, dst = 4, size_bytes = 100000, start_ns = 0 } ]\n";

/// Every flow either finished or gave up, and the summary counts agree.
fn assert_all_ended(out: &Output) -> usize {
    let given_up = out.records.iter().filter(|r| r.outcome == "given_up").count();
    for r in &out.records {
        assert!(r.finished != (r.outcome == "given_up"), "{r:?}");
        if r.outcome == "given_up" {
            assert_eq!(r.fct_ps, -1);
            assert!(r.slowdown.is_nan());
            assert!(r.bytes_delivered < r.size_bytes);
        }
    }
    assert_eq!(out.summary.given_up_flows, given_up as u64);
    assert_eq!(out.summary.finished_flows + given_up as u64, out.records.len() as u64);
    assert!(!out.summary.stopped_early);
    given_up
}

#[test]
fn with_max_retries_0_a_sender_gives_up_at_its_first_timeout() {
    let out = run_toml(&incast("kind = \"newreno\"\nmax_retries = 0", FOUR_FLOWS));
    let given_up = assert_all_ended(&out);
    assert!(given_up > 0, "no flow timed out: the test lost its point");
    for r in &out.records {
        // A finished flow never timed out; one that gave up did so at its first timeout.
        assert_eq!(r.num_rtos, u64::from(r.outcome == "given_up"), "{r:?}");
    }
}

#[test]
fn a_closed_loop_is_told_and_carries_on_after_a_transfer_gives_up() {
    let out = run_toml(&incast(
        "kind = \"newreno\"\nmax_retries = 0",
        "[[workload]]\nkind = \"closed_loop\"\npairs = [[0, 4], [1, 4], [2, 4], [3, 4]]\n\
         size_bytes = 100000\ncount = 3\n",
    ));
    let given_up = assert_all_ended(&out);
    assert!(given_up > 0, "no transfer gave up: the test lost its point");
    // Every loop ran all three of its transfers, whatever became of the earlier ones.
    assert_eq!(out.records.len(), 12);
    for src in 0..4 {
        assert_eq!(out.records.iter().filter(|r| r.src == src).count(), 3);
    }
}

#[test]
fn a_slow_but_moving_flow_is_never_given_up() {
    // Four senders into one port with a buffer of one packet and max_retries = 1: the flows
    // time out again and again, but a retransmission gets through before the next timeout
    // often enough, so the count restarts and every flow finishes.
    let out = run_toml(&incast("kind = \"newreno\"\nmax_retries = 1", FOUR_FLOWS));
    let rtos: u64 = out.records.iter().map(|r| r.num_rtos).sum();
    assert!(rtos > 4, "{rtos}");
    assert!(out.records.iter().all(|r| r.outcome == "complete"), "{:?}", out.records);
    assert_eq!(out.summary.given_up_flows, 0);
}

#[test]
fn arrivals_beyond_stop_ms_are_never_generated() {
    // A generator that would run for 1,000 s, cut at 1 ms: only the first millisecond's
    // arrivals exist (arrivals are generated one at a time, as they happen).
    let out = run_toml(&star(
        4,
        "[run]\nstop_ms = 1.0\n[[workload]]\nkind = \"poisson\"\ncdf = \"google_rpc\"\nload = 0.5\nduration_ms = 1000000.0\n",
    ));
    assert!(out.summary.stopped_early);
    assert!(!out.records.is_empty());
    assert!(out.records.iter().all(|r| r.start_ps <= 1_000_000_000), "an arrival after the stop time");
    // About load x 4 hosts x 10 Gb/s x 1 ms / mean size: hundreds, not a thousand seconds' worth.
    assert!(out.records.len() < 10_000, "{}", out.records.len());
}
