//! Data-parallel training (`app::training`): parameter-server and ring all-reduce iterations
//! against their closed forms, the barrier between iterations, determinism and validation.

use sim::metrics::AppRecord;
use sim::{Output, Spec};

mod common;
use common::{run_toml as run, star};

/// 5 hosts on one 10 Gb/s switch, DCTCP with a large buffer, and one training entry.
fn training(pattern: &str, extra: &str) -> String {
    star(
        5,
        &format!(
            "[switch]\nbuffer_bytes = 4000000\n\n[[workload]]\nkind = \"training\"\npattern = \"{pattern}\"\nworkers = [1, 2, 3, 4]\nmodel_bytes = 2000000\niterations = 3\ncompute_us = 100\n{extra}\n"
        ),
    )
}

fn iterations(out: &Output) -> Vec<&AppRecord> {
    out.apps.iter().filter(|a| a.kind == "iteration").collect()
}

/// Line-rate time of `bytes` on a 10 Gb/s link, in us.
fn wire_us(bytes: f64) -> f64 {
    bytes * 8.0 / 10e9 * 1e6
}

#[test]
fn a_parameter_server_iteration_is_compute_plus_push_and_pull_through_its_link() {
    let out = run(&training("ps", "server = 0"));
    let its = iterations(&out);
    assert_eq!(its.len(), 3);
    // Push: 4 x 2 MB into the server's link; pull: 4 x 2 MB out of it. Closed form (payload
    // only; headers add ~3%): 100 us + 2 x 6400 us.
    let closed = 100.0 + 2.0 * wire_us(4.0 * 2e6);
    for it in &its {
        let d = it.duration_ps as f64 / 1e6;
        assert!(d > closed && d < 1.08 * closed, "iteration {} took {d} us, closed form {closed}", it.unit);
        assert!(it.ideal_ps > 0 && it.duration_ps as i64 >= it.ideal_ps);
        assert_eq!(it.num_transfers, 8);
        assert_eq!(it.bytes, 16_000_000);
    }
    // The barrier: each iteration starts when the previous one ended.
    for w in its.windows(2) {
        assert_eq!(w[1].start_ps, w[0].end_ps);
    }
    assert_eq!(out.records.len(), 24);
    assert!(out.records.iter().all(|r| r.finished));
}

#[test]
fn a_ring_iteration_is_compute_plus_2_n_minus_1_chunk_steps() {
    let out = run(&training("ring", ""));
    let its = iterations(&out);
    assert_eq!(its.len(), 3);
    // 4 workers: 6 steps of a 500 KB chunk, every worker sending to its successor at once on
    // its own link: 100 us + 6 x 400 us plus a few RTTs of slow start per step.
    let closed = 100.0 + 6.0 * wire_us(5e5);
    for it in &its {
        let d = it.duration_ps as f64 / 1e6;
        assert!(d > closed && d < 1.25 * closed, "iteration {} took {d} us, closed form {closed}", it.unit);
        assert_eq!(it.num_transfers, 24);
    }
    // Every worker sent 6 chunks to its successor per iteration (4 -> 1 closes the ring).
    assert_eq!(out.records.len(), 3 * 24);
    for (src, dst) in [(1, 2), (2, 3), (3, 4), (4, 1)] {
        assert_eq!(out.records.iter().filter(|r| r.src == src && r.dst == dst).count(), 18);
    }
    // The ring moves as much per worker as the parameter server's push + pull, in less time.
    let ps = run(&training("ps", "server = 0"));
    assert!(its[0].duration_ps < iterations(&ps)[0].duration_ps / 2);
}

#[test]
fn training_is_deterministic() {
    let a = run(&training("ring", ""));
    let b = run(&training("ring", ""));
    // (Debug text: the rows' NaN loss columns are not equal to themselves.)
    assert_eq!(format!("{:?}", a.apps), format!("{:?}", b.apps));
    assert_eq!(format!("{:?}", a.records), format!("{:?}", b.records));
}

#[test]
fn bad_training_entries_are_one_clear_error() {
    for (pattern, extra, key, needle) in [
        ("ps", "", "workload[0].server", "needs `server`"),
        ("ps", "server = 1", "workload[0].server", "also a worker"),
        ("ring", "server = 0", "workload[0].server", "no server"),
        ("ps", "server = 9", "workload[0].server", "no such host"),
    ] {
        let toml = training(pattern, extra);
        let err = Spec::from_toml_str(&toml).and_then(|s| s.validate(std::path::Path::new(".")));
        let msg = format!("{}", err.expect_err(extra));
        assert!(msg.contains(key) && msg.contains(needle), "{extra}: {msg}");
    }
    for (from, to, key) in [
        ("workers = [1, 2, 3, 4]", "workers = [1]", "workload[0].workers"),
        ("workers = [1, 2, 3, 4]", "workers = [1, 2, 2]", "workload[0].workers[2]"),
        ("iterations = 3", "iterations = 0", "workload[0].iterations"),
        ("model_bytes = 2000000", "model_bytes = 0", "workload[0].model_bytes"),
        ("compute_us = 100", "compute_us = -1", "workload[0].compute_us"),
        ("compute_us = 100", "compute_us = 100\nbogus = 1", "workload[0]"),
        ("compute_us = 100", "compute_us = 100\ncomplete_fraction = 0", "workload[0].complete_fraction"),
        ("compute_us = 100", "compute_us = 100\njob_compute_us = -5", "workload[0].job_compute_us"),
        ("compute_us = 100", "compute_us = 100\ncomplete_fraction = 1.5", "workload[0].complete_fraction"),
    ] {
        let toml = training("ring", "").replace(from, to);
        let err = Spec::from_toml_str(&toml).and_then(|s| s.validate(std::path::Path::new(".")));
        let msg = format!("{}", err.expect_err(to));
        assert!(msg.contains(key), "{to}: {msg}");
    }
}

/// The parameter server with a small shared buffer, so that the push's incast loses packets.
fn lossy_ps(transport: &str, extra: &str) -> Output {
    let toml = training("ps", &format!("server = 0\n{extra}\n{transport}"))
        .replace("buffer_bytes = 4000000", "buffer_bytes = 60000\nqueues = [{ ecn_threshold_bytes = 1000000 }]");
    run(&toml)
}

#[test]
fn the_entrys_complete_fraction_is_what_a_bounded_loss_transport_waits_for() {
    // The model's p travels with the training entry (the application knows its tolerance):
    // over `mlt` every chunk ends once that fraction of its values arrived, whatever the
    // transport's own `complete_fraction` says.
    let mlt = "transport = { kind = \"mlt\", complete_fraction = 1.0, rto_us = 300 }";
    let out = lossy_ps(mlt, "complete_fraction = 0.7");
    assert!(out.switches[0].drops_queue_cap + out.switches[0].drops_admission > 0, "the push must drop");
    let mut enough = 0;
    for r in &out.records {
        assert!(r.finished && r.transport == "mlt", "{r:?}");
        let need = (r.size_bytes.div_ceil(4) * 7).div_ceil(10) * 4;
        assert!(r.bytes_delivered >= need, "{r:?}");
        enough += usize::from(r.outcome == "enough");
    }
    assert!(enough > 0, "some gradient stopped at p = 0.7");
    // Each iteration row reports its worst transfer's shortfall: within 1 - p, and not zero
    // everywhere (the mechanism ran); and what its transfers sent.
    let its = iterations(&out);
    assert!(its.iter().all(|i| i.loss_rate >= 0.0 && i.loss_rate <= 0.3 + 1e-9), "{its:?}");
    assert!(its.iter().any(|i| i.loss_rate > 0.0), "{its:?}");
    assert!(its.iter().all(|i| i.bytes_sent > 0 && i.packets_sent > 0 && i.packets_retx >= 0));
    // Without the entry's p the transport's own (1.0) holds: every gradient complete.
    let own = lossy_ps(mlt, "");
    assert!(own.records.iter().all(|r| r.outcome == "complete" && r.bytes_delivered == r.size_bytes));
    // A reliable transport ignores it: the same run with or without p.
    let dctcp = "transport = { kind = \"dctcp\" }";
    let (a, b) = (lossy_ps(dctcp, "complete_fraction = 0.7"), lossy_ps(dctcp, ""));
    assert_eq!(format!("{:?}", a.records), format!("{:?}", b.records));
    assert!(a.records.iter().all(|r| r.bytes_delivered == r.size_bytes));
    assert!(iterations(&a).iter().all(|i| i.loss_rate == 0.0 && i.packets_retx > 0), "DCTCP resends what drops");
}
