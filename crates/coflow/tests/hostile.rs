//! Hostile inputs at the crate's surface: each ends in an error that names the field and the
//! value, or in a finished run, never in a hang, a panic or a silently absurd number.

use std::sync::mpsc;
use std::time::Duration;

use coflow::broadcast::{run_broadcast, BroadcastConfig, Mechanism, Placement};
use coflow::net::Topology;
use coflow::shuffle::{run_shuffle, Shuffle, ShuffleMechanism};
use coflow::trace::Trace;

/// Runs `f` on its own thread and fails the test if it has not returned within 20 s.
#[track_caller]
fn within_20s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20)).expect("the run did not end within 20 s (a hang)")
}

#[test]
fn a_tiny_flow_started_late_finishes_instead_of_stalling_the_clock() {
    // Hadoop with one fetch at a time: the 1e-12-byte flow starts at 8 s, where its duration
    // (8e-21 s) is below the clock's resolution; time cannot advance past it by adding.
    let topo = Topology::flat(4, 1.0).unwrap();
    let sh = Shuffle { senders: vec![0, 1], receivers: vec![2], bytes: vec![vec![1e9], vec![1e-12]] };
    for seed in 0..8 {
        let (topo, sh) = (topo.clone(), sh.clone());
        let r = within_20s(move || run_shuffle(&topo, &sh, ShuffleMechanism::Hadoop { max_fetches: 1 }, seed))
            .unwrap();
        assert_eq!(r.flows.len(), 2);
        assert!((r.completion_s - 8.0).abs() < 1e-9, "seed {seed}: {}", r.completion_s);
    }
}

#[test]
fn a_broadcast_whose_last_block_is_a_sliver_finishes() {
    // 4 MiB + 1e-7 B: the second block is 1e-7 B, sent after the 5 ms request overhead.
    for m in [Mechanism::Chain, Mechanism::Cornet, Mechanism::BitTorrent, Mechanism::CornetTopology] {
        let r = within_20s(move || {
            let topo = Topology::racks(2, 4, 1.0, 1.0).unwrap();
            let cfg = BroadcastConfig { bytes: 4_194_304.000_000_1, ..Default::default() };
            run_broadcast(&topo, &Placement { sender: 0, receivers: vec![1, 2, 5] }, m, &cfg)
        })
        .unwrap();
        assert!(r.completion_s.is_finite() && r.completion_s >= r.lower_bound_s, "{m:?}: {r:?}");
    }
}

#[test]
fn a_repeated_receiver_or_the_sender_among_receivers_is_named_as_such() {
    let topo = Topology::flat(8, 1.0).unwrap();
    let cfg = BroadcastConfig { bytes: 1e6, ..Default::default() };
    let e = run_broadcast(&topo, &Placement { sender: 0, receivers: vec![1, 1] }, Mechanism::Cornet, &cfg)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "receivers: host 1 is listed twice; list each receiver once");
    let e = run_broadcast(&topo, &Placement { sender: 0, receivers: vec![1, 0] }, Mechanism::Cornet, &cfg)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "receivers: host 0 is the sender; leave it out of the receivers");
}

fn err(text: &str) -> String {
    Trace::parse(text).unwrap_err().to_string()
}

#[test]
fn trace_sizes_and_times_beyond_the_models_range_are_refused() {
    // 1e300 MB overflowed coflowsim's Java longs (a negative total) and gave CCTs of 1e297 s.
    assert_eq!(
        err("2 1\n1 0 1 0 1 1:1e300\n"),
        "line 2: MB of reducer 0 is \"1e300\", expected a finite number from 0.000001 to 1000000 (1 TiB)"
    );
    assert!(err("2 1\n1 0 1 0 1 1:1e-300\n").contains("MB of reducer 0 is \"1e-300\""));
    // An arrival past 1e6 s (11.6 days) loses the clock's resolution (CCTs off by microseconds).
    assert_eq!(
        err("2 1\n1 18446744073709 1 0 1 1:8\n"),
        "line 2: arrival time (ms) is \"18446744073709\", expected an unsigned integer up to 1000000000 (1e6 s)"
    );
    let ok = Trace::parse("2 2\n1 1000000000 1 0 1 1:1000000\n2 0 1 1 1 0:0.000001\n").unwrap();
    assert_eq!(ok.coflows.len(), 2);
}

#[test]
fn a_trace_path_that_is_no_regular_file_is_refused_without_reading_it() {
    let dir = std::env::temp_dir().join(format!("coflow-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let e = Trace::from_path(&dir).unwrap_err().to_string();
    assert!(e.contains("is a folder, not a trace file"), "{e}");
    // /dev/zero never ends: reading it would allocate until memory runs out.
    let e = within_20s(|| Trace::from_path("/dev/zero").unwrap_err().to_string());
    assert!(e.contains("/dev/zero: not a regular file"), "{e}");
    // A FIFO with no writer would block the read for ever.
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
    if made {
        let f = fifo.clone();
        let e = within_20s(move || Trace::from_path(&f).unwrap_err().to_string());
        assert!(e.contains("not a regular file"), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
