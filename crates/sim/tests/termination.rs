//! A run always ends (issue 8). Scenarios without `stop_ms` whose flows can never complete
//! (every packet dropped by a 1-byte buffer, queue cap or NIC buffer) end once each sender
//! has given up after `max_retries` retransmission timeouts without progress, with records
//! that say so; reactive applications are told and carry on.

mod common;

use common::{run_toml, star};
use sim::metrics::Output;

const ONE_FLOW: &str = "[[workload]]\nkind = \"flows\"\nflows = [ { src = 0, dst = 1, size_bytes = 100000, start_ns = 0 } ]\n";

fn assert_gave_up(out: &Output, n: usize) {
    assert_eq!(out.records.len(), n);
    for r in &out.records {
        assert!(!r.finished, "{r:?}");
        assert_eq!(r.outcome, "given_up");
        assert_eq!(r.fct_ps, -1);
        assert!(r.slowdown.is_nan());
    }
    assert_eq!(out.summary.given_up_flows, n as u64);
    assert_eq!(out.summary.finished_flows, 0);
    assert!(!out.summary.stopped_early);
}

/// The default RTOs (10 ms, doubling, at most 1 s) and 15 retries: the sender gives up at
/// the 16th timeout, 10 + 20 + ... + 640 + 9 x 1000 ms after its first packet.
const GIVE_UP_PS: u64 = (10 + 20 + 40 + 80 + 160 + 320 + 640 + 9 * 1000) * 1_000_000_000;

#[test]
fn a_one_byte_switch_buffer_ends_with_the_flow_given_up() {
    let out = run_toml(&star(2, &format!("[switch]\nbuffer_bytes = 1\n{ONE_FLOW}")));
    assert_gave_up(&out, 1);
    assert_eq!(out.summary.sim_end_ps, GIVE_UP_PS);
    assert_eq!(out.records[0].num_rtos, 16);
    assert_eq!(out.records[0].bytes_delivered, 0);
}

#[test]
fn a_one_byte_queue_cap_ends_with_the_flow_given_up() {
    let out = run_toml(&star(2, &format!("[switch]\nqueues = [ {{ cap_bytes = 1 }} ]\n{ONE_FLOW}")));
    assert_gave_up(&out, 1);
}

#[test]
fn a_one_byte_nic_buffer_ends_with_the_flow_given_up() {
    let out = run_toml(&star(2, &format!("[host]\nnic_buffer_bytes = 1\n{ONE_FLOW}")));
    assert_gave_up(&out, 1);
    assert_eq!(out.summary.sim_end_ps, GIVE_UP_PS);
}

#[test]
fn max_retries_sets_when_a_sender_gives_up() {
    let out = run_toml(&star(
        2,
        &format!("[switch]\nbuffer_bytes = 1\n[transport]\nkind = \"newreno\"\nmax_retries = 2\n{ONE_FLOW}"),
    ));
    assert_gave_up(&out, 1);
    // Timeouts at 10 and 30 ms retransmit; the one at 70 ms gives up.
    assert_eq!(out.summary.sim_end_ps, 70 * 1_000_000_000);
}

#[test]
fn a_closed_loop_is_told_and_carries_on_after_a_transfer_gives_up() {
    let out = run_toml(&star(
        2,
        "[switch]\nbuffer_bytes = 1\n[transport]\nkind = \"dctcp\"\nmax_retries = 1\n\
         [[workload]]\nkind = \"closed_loop\"\npairs = [[0, 1]]\nsize_bytes = 3000\ncount = 3\n",
    ));
    assert_gave_up(&out, 3);
    // Each transfer gives up 10 + 20 ms after it starts, and the next starts right then.
    let starts: Vec<u64> = out.records.iter().map(|r| r.start_ps).collect();
    assert_eq!(starts, [0, 30_000_000_000, 60_000_000_000]);
    assert_eq!(out.summary.sim_end_ps, 90_000_000_000);
}

#[test]
fn a_slow_but_moving_flow_is_never_given_up() {
    // Four senders into one port with a buffer of one packet and max_retries = 1: the flows
    // time out again and again, but a retransmission gets through before the next timeout
    // often enough, so the count restarts and every flow finishes.
    let out = run_toml(&star(
        5,
        "[switch]\nbuffer_bytes = 1600\n[transport]\nkind = \"newreno\"\nmax_retries = 1\n\
         [[workload]]\nkind = \"flows\"\nflows = [\n\
         { src = 0, dst = 4, size_bytes = 100000, start_ns = 0 },\n\
         { src = 1, dst = 4, size_bytes = 100000, start_ns = 0 },\n\
         { src = 2, dst = 4, size_bytes = 100000, start_ns = 0 },\n\
         { src = 3, dst = 4, size_bytes = 100000, start_ns = 0 } ]\n",
    ));
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
