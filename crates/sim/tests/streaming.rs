//! Records taken out as the run goes (issue 8: memory follows the flows in flight, not the
//! flows ever started). Taking records never changes the run: the records taken in chunks,
//! followed by what `output()` reports at the end, are exactly the records of a run that
//! took nothing, in the same order, with the same summary; and the state held for transfers
//! stays bounded by those in flight.

mod common;

use std::path::Path;

use common::star;
use sim::metrics::Output;
use sim::{FctRecord, Simulation, Spec, ValidSpec};

fn valid(text: &str) -> ValidSpec {
    let spec = Spec::from_toml_str(text).unwrap_or_else(|e| panic!("bad test spec: {e}"));
    spec.validate(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap_or_else(|e| panic!("invalid test spec: {e}"))
}

/// Run taking the records every `chunk` events; returns every record in row order (checking
/// that each row was taken exactly once), the final output and the most transfers whose state
/// was held after a take.
fn run_streamed(v: &ValidSpec, chunk: u64) -> (Vec<FctRecord>, Output, usize) {
    let mut sim = Simulation::new(v).unwrap();
    let mut taken: Vec<(u64, FctRecord)> = Vec::new();
    let mut most_held = 0;
    let mut take = |sim: &mut Simulation| {
        let t = sim.take_records();
        assert_eq!(t.rows.len(), t.records.len());
        taken.extend(t.rows.into_iter().zip(t.records));
    };
    while sim.advance(chunk) {
        take(&mut sim);
        most_held = most_held.max(sim.held_transfers());
    }
    // Done: the last take takes every record left, and the output has none.
    take(&mut sim);
    let out = sim.output();
    assert!(out.records.is_empty());
    taken.sort_by_key(|(row, _)| *row);
    assert!(taken.iter().enumerate().all(|(i, (row, _))| *row == i as u64), "rows taken twice or never");
    (taken.into_iter().map(|(_, r)| r).collect(), out, most_held)
}

/// Taking records in chunks of several sizes gives the records and summary of a plain run.
fn assert_streaming_changes_nothing(text: &str) -> Output {
    let v = valid(text);
    let plain = sim::run(&v).unwrap();
    assert!(!plain.records.is_empty());
    for chunk in [1, 97, 5_000] {
        let (records, out, _) = run_streamed(&v, chunk);
        assert_eq!(records.len(), plain.records.len(), "chunk {chunk}");
        // Debug text, so that NaN (the slowdown of an unfinished flow) equals NaN.
        if let Some(i) = (0..records.len()).find(|&i| format!("{:?}", records[i]) != format!("{:?}", plain.records[i])) {
            panic!("chunk {chunk}: record {i} differs:\n taken {:?}\n plain {:?}", records[i], plain.records[i]);
        }
        assert_eq!(out.summary, plain.summary, "chunk {chunk}");
        assert_eq!(out.switches, plain.switches, "chunk {chunk}");
        assert_eq!(format!("{:?}", out.apps), format!("{:?}", plain.apps), "chunk {chunk}");
        assert_eq!(format!("{:?}", out.transfer_series), format!("{:?}", plain.transfer_series), "chunk {chunk}");
    }
    plain
}

const POISSON: &str = "[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.6\nduration_ms = 2.0\n";

#[test]
fn poisson_and_incast_records_are_the_same_taken_or_not() {
    let out = assert_streaming_changes_nothing(&star(
        8,
        &format!(
            "[switch]\nbuffer_bytes = 60000\n[run]\ntimeseries = {{ interval_us = 50 }}\n{POISSON}\
             [[workload]]\nkind = \"incast\"\nquery_rate_per_host = 2000\nfan_in = 6\nburst_bytes = 120000\nduration_ms = 2.0\n"
        ),
    ));
    // The point of the scenario: flows overlap and some lose packets, so they end out of order.
    assert!(out.summary.num_rtos > 0 || out.summary.switch_drops > 0, "no loss: the test lost its point");
}

#[test]
fn unfinished_and_given_up_flows_are_reported_the_same_taken_or_not() {
    // A stop time that leaves flows unfinished, and a buffer of one packet that makes senders give up.
    let out = assert_streaming_changes_nothing(&star(5, &format!("[run]\nstop_ms = 1.0\n{POISSON}")));
    assert!(out.records.iter().any(|r| !r.finished), "every flow finished: the test lost its point");
    let out = assert_streaming_changes_nothing(&star(
        5,
        "[switch]\nbuffer_bytes = 1600\n[transport]\nkind = \"newreno\"\nmax_retries = 0\n\
         [[workload]]\nkind = \"closed_loop\"\npairs = [[0, 4], [1, 4], [2, 4], [3, 4]]\n\
         size_bytes = 100000\ncount = 3\n",
    ));
    assert!(out.summary.given_up_flows > 0, "no flow gave up: the test lost its point");
}

#[test]
fn udp_sources_are_the_same_taken_or_not() {
    assert_streaming_changes_nothing(&star(
        4,
        "[transport]\nkind = \"udp\"\n[[workload]]\nkind = \"poisson\"\ncdf = \"google_rpc\"\nload = 0.5\n\
         duration_ms = 1.0\n",
    ));
}

#[test]
fn held_state_follows_the_flows_in_flight() {
    // About 20,000 flows over 20 ms, mostly short: a few pages of 1,024 transfers are held.
    let v = valid(&star(
        8,
        "[[workload]]\nkind = \"poisson\"\ncdf = \"google_rpc\"\nload = 0.3\nduration_ms = 20.0\n",
    ));
    let (records, out, most_held) = run_streamed(&v, 20_000);
    assert_eq!(records.len() as u64, out.summary.num_flows);
    assert!(out.summary.num_flows > 10_000, "{} flows", out.summary.num_flows);
    // Held: the taken prefix not dropped yet (at most as many as the rest) plus the transfers
    // started since the oldest one in flight.
    assert!(most_held <= 8 * 1024, "{most_held} transfers held of {}", records.len());
    // Nothing taken: every transfer stays.
    let mut sim = Simulation::new(&v).unwrap();
    sim.run_to_end();
    assert_eq!(sim.held_transfers() as u64, out.summary.num_flows);
}
