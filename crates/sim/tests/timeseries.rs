//! The opt-in time series (`[run.timeseries]`): what the queue and transfer series show on a
//! DCTCP bottleneck, their filters, their validation, and that sampling never changes a run.

use std::path::{Path, PathBuf};

use sim::metrics::{Output, TRANSFER_EXTRA_COLUMNS};
use sim::Spec;

mod common;
use common::{run_in, run_toml, star};



fn spec_error(text: &str) -> sim::SpecError {
    match Spec::from_toml_str(text) {
        Err(e) => e,
        Ok(s) => s.validate(Path::new(".")).expect_err("the spec should be refused"),
    }
}


const K: u64 = 30_000;
const INTERVAL_PS: u64 = 5_000_000;

/// 8 DCTCP senders of 5 MB -> host 0 through one switch port marking at K = 30 KB.
fn incast_star(timeseries: &str) -> String {
    let flows: Vec<String> = (1..=8).map(|s| format!("{{ src = {s}, dst = 0, size_bytes = 5000000 }}")).collect();
    star(
        9,
        &format!(
            "[switch]\nbuffer_bytes = 2000000\nqueues = [{{ ecn_threshold_bytes = {K} }}]\n\
             [[workload]]\nkind = \"flows\"\nflows = [{}]\n{timeseries}",
            flows.join(", ")
        ),
    )
}

#[test]
fn dctcp_bottleneck_queue_hovers_near_k_and_every_transfer_is_seen_while_in_flight() {
    let out = run_toml(&incast_star("[run.timeseries]\ninterval_us = 5\n"));
    assert!(out.records.iter().all(|r| r.finished));
    let ends: Vec<u64> = out.records.iter().map(|r| r.start_ps + r.fct_ps as u64).collect();
    let first_end = *ends.iter().min().unwrap();

    // Queue series: the bottleneck is the leaf's port towards host 0. The series is sparse, so
    // a sample time without a row for it means an empty queue.
    let bottleneck = out.links.iter().find(|l| l.dst == 0).unwrap();
    let q = &out.queue_series;
    assert!(q.iter().all(|s| s.bytes > 0 && s.time_ps % INTERVAL_PS == 0), "sparse rows on the grid");
    let at_port: std::collections::HashMap<u64, u64> =
        q.iter().filter(|s| s.link == bottleneck.link).map(|s| (s.time_ps, s.bytes)).collect();
    let steady: Vec<u64> = (0..)
        .map(|k| k * INTERVAL_PS)
        .skip_while(|&t| t <= 1_000_000_000)
        .take_while(|&t| t < first_end)
        .collect();
    let mut lens: Vec<u64> = steady.iter().map(|t| at_port.get(t).copied().unwrap_or(0)).collect();
    lens.sort_unstable();
    let median = lens[lens.len() / 2];
    let p99 = lens[lens.len() * 99 / 100];
    eprintln!("bottleneck queue: median {median} B, p99 {p99} B over {} samples", lens.len());
    assert!(median as f64 > 0.5 * K as f64 && (median as f64) < 2.0 * K as f64, "median queue {median}");
    assert!((p99 as f64) < 4.0 * K as f64, "p99 queue {p99}");
    let row = q.iter().find(|s| s.link == bottleneck.link).unwrap();
    assert_eq!((row.node, row.queue), (bottleneck.src, 0));
    assert!(row.switch >= 0);
    // The senders' NIC queues appear too (the initial window waits there at time zero).
    let nics: std::collections::BTreeSet<u32> = q.iter().filter(|s| s.switch == -1).map(|s| s.node).collect();
    assert_eq!(nics, (1..=8).collect(), "every sender's NIC queue");

    // Transfer series: every transfer at every sample while in flight, and none after.
    let t = &out.transfer_series;
    for (f, r) in out.records.iter().enumerate() {
        let rows: Vec<_> = t.iter().filter(|s| s.flow as usize == f).collect();
        let end = ends[f];
        // Sample times k * interval in [start, end].
        let expected = (end / INTERVAL_PS + 1 - r.start_ps.div_ceil(INTERVAL_PS)) as usize;
        assert!(rows.iter().all(|s| s.time_ps >= r.start_ps && s.time_ps <= end), "flow {f} sampled outside its life");
        assert!(rows.len() + 1 >= expected && rows.len() <= expected, "flow {f}: {} rows, {expected} samples", rows.len());
        for s in &rows {
            assert!(s.cwnd_bytes > 0, "{s:?}");
            let alpha = s.extra[0];
            assert!((0.0..=1.0).contains(&alpha), "alpha {alpha}");
            assert!(s.delivered_bytes <= s.sent_bytes && s.sent_bytes <= r.size_bytes + 1_000_000, "{s:?}");
            assert!(!s.is_paced);
        }
        // After the first round trip the window estimate is a rate near the fair share.
        let late = rows.iter().rfind(|s| s.srtt_ps > 0).unwrap();
        assert!(late.rate_bps > 0.1e9 && late.rate_bps < 20e9, "{late:?}");
        assert!(rows.windows(2).all(|w| w[0].delivered_bytes <= w[1].delivered_bytes));
    }
    assert_eq!(TRANSFER_EXTRA_COLUMNS[0], "alpha");
    assert!(!out.summary.timeseries_truncated);
}

/// Every table of two runs but the summary's event count (sampling adds its own events).
fn assert_same_run(a: &Output, b: &Output, what: &str) {
    // Debug text compares NaN slowdowns of unfinished flows as equal.
    assert_eq!(format!("{:?}", a.records), format!("{:?}", b.records), "{what}: records");
    assert_eq!(format!("{:?}", a.apps), format!("{:?}", b.apps), "{what}: apps");
    assert_eq!(a.switches, b.switches, "{what}: switches");
    assert_eq!(a.queues, b.queues, "{what}: queues");
    assert_eq!(a.occupancy, b.occupancy, "{what}: occupancy samples");
    assert_eq!(a.links, b.links, "{what}: links");
    let (mut sa, mut sb) = (a.summary.clone(), b.summary.clone());
    (sa.events, sb.events) = (0, 0);
    assert_eq!(sa, sb, "{what}: summary");
}

#[test]
fn sampling_does_not_perturb_the_run_and_off_records_nothing() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    // Drops and RTOs, PowerTCP's telemetry, UDP, several queues with DRR, push-out.
    for name in ["incast_small_buffer", "abm_powertcp", "udp_line_rate", "multi_queue_rr", "credence_lqd"] {
        let path: PathBuf = golden.join(format!("{name}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let off = run_in(&text, &golden);
        assert!(off.queue_series.is_empty() && off.transfer_series.is_empty(), "{name}: off records nothing");
        let on = run_in(&format!("{text}\n[run.timeseries]\ninterval_us = 3\n"), &golden);
        assert!(!on.queue_series.is_empty() && !on.transfer_series.is_empty(), "{name}");
        assert!(on.summary.events > off.summary.events);
        assert_same_run(&off, &on, name);
        if name == "abm_powertcp" {
            // PowerTCP paces: its rate is the pacing rate, and it has no alpha.
            assert!(on.transfer_series.iter().all(|s| s.is_paced && s.rate_bps > 0.0 && s.extra[0].is_nan()));
        }
        if name == "udp_line_rate" {
            assert!(on.transfer_series.iter().all(|s| s.cwnd_bytes == 0 && s.srtt_ps == 0));
        }
        if name == "multi_queue_rr" {
            assert!(on.queue_series.iter().any(|s| s.queue > 0), "classes other than 0 appear");
        }
    }
    // The same with the occupancy sampler off, and with a sampler interval that divides theirs.
    let base = incast_star("");
    let no_occ = format!("{base}\n[run]\nsample_interval_us = 0\n");
    let on = run_toml(&format!("{no_occ}\n[run.timeseries]\ninterval_us = 7\n"));
    assert_same_run(&run_toml(&no_occ), &on, "star without occupancy samples");
    assert!(on.occupancy.is_empty());
    let on = run_toml(&incast_star("[run.timeseries]\ninterval_us = 10\n"));
    assert_same_run(&run_toml(&base), &on, "star, 10 us both");
}

#[test]
fn filters_select_switches_nics_and_transfers() {
    let out = run_toml(&incast_star("[run.timeseries]\ninterval_us = 20\nnics = false\nmax_transfers = 3\n"));
    assert!(!out.queue_series.is_empty() && out.queue_series.iter().all(|s| s.switch == 0));
    let flows: std::collections::BTreeSet<u32> = out.transfer_series.iter().map(|s| s.flow).collect();
    assert_eq!(flows, (0..3).collect());
    let out = run_toml(&incast_star("[run.timeseries]\ninterval_us = 20\nqueues = false\n"));
    assert!(out.queue_series.is_empty() && !out.transfer_series.is_empty());
    let out = run_toml(&incast_star("[run.timeseries]\ninterval_us = 20\ntransfers = false\nswitches = [0]\n"));
    assert!(!out.queue_series.is_empty() && out.transfer_series.is_empty());
    assert!(out.queue_series.iter().any(|s| s.switch == -1));
}

#[test]
fn each_transfer_reports_its_own_transport() {
    // A DCTCP entry and a NewReno entry in one run: alpha only where the transport has one.
    let text = star(
        3,
        "[[workload]]\nkind = \"flows\"\nflows = [{ src = 1, dst = 0, size_bytes = 1000000 }]\n\
         [[workload]]\nkind = \"flows\"\ntransport = { kind = \"newreno\" }\n\
         flows = [{ src = 2, dst = 0, size_bytes = 1000000 }]\n\
         [run.timeseries]\ninterval_us = 10\n",
    );
    let out = run_toml(&text);
    let rows = |f: u32| out.transfer_series.iter().filter(move |s| s.flow == f);
    assert!(rows(0).count() > 10 && rows(0).all(|s| (0.0..=1.0).contains(&s.extra[0])));
    assert!(rows(1).count() > 10 && rows(1).all(|s| s.extra[0].is_nan() && s.cwnd_bytes > 0));
}

#[test]
fn bad_timeseries_keys_are_named() {
    let cases = [
        ("interval_us = 0", "run.timeseries.interval_us"),
        ("interval_us = -5", "run.timeseries.interval_us"),
        ("interval_us = nan", "run.timeseries.interval_us"),
        ("interval_us = 1\nqueues = false\ntransfers = false", "run.timeseries"),
        ("interval_us = 1\nswitches = [1]", "run.timeseries.switches[0]"),
        ("interval_us = 1\nswitches = [0, 0]", "run.timeseries.switches[1]"),
        ("interval_us = 1\nqueues = false\nswitches = [0]", "run.timeseries.switches"),
        ("interval_us = 1\nmax_transfers = 0", "run.timeseries.max_transfers"),
        ("interval_us = 1\ntransfers = false\nmax_transfers = 2", "run.timeseries.max_transfers"),
        ("interval_us = \"fast\"", "run.timeseries.interval_us"),
    ];
    for (keys, key) in cases {
        let e = spec_error(&incast_star(&format!("[run.timeseries]\n{keys}\n")));
        assert_eq!(e.key(), key, "{keys}: {e}");
    }
    let e = spec_error(&incast_star("[run.timeseries]\ninterval_us = 1\nevery_us = 2\n"));
    assert!(e.key().starts_with("run.timeseries") && e.to_string().contains("every_us"), "{e}");
    let e = spec_error(&incast_star("[run.timeseries]\nqueues = true\n"));
    assert!(e.key().starts_with("run.timeseries") && e.to_string().contains("interval_us"), "{e}");
}

#[test]
fn absurd_row_counts_are_refused_before_the_run() {
    // A 1024-host fat-tree sampled every 10 ns for 100 ms: about 10^7 samples x (6,144 queues
    // + 1,024 transfers).
    let fat = "[topology]\nkind = \"fat_tree\"\nk = 16\nrate_gbps = 100\n[run]\nstop_ms = 100\n";
    let e = spec_error(&format!("{fat}[run.timeseries]\ninterval_us = 0.01\n"));
    assert_eq!(e.key(), "run.timeseries.interval_us", "{e}");
    assert!(e.to_string().contains("rows"), "{e}");
    // Every 10 us is fine (about 7.2e7 rows at worst), and so is every 10 ns of one
    // switch's ports and three transfers.
    let ok = |keys: &str| Spec::from_toml_str(&format!("{fat}[run.timeseries]\n{keys}\n")).unwrap().validate(Path::new("."));
    ok("interval_us = 10").unwrap();
    ok("interval_us = 0.01\nswitches = [0]\nnics = false\nmax_transfers = 3").unwrap();
    // Without a stop time the open-loop arrivals give the horizon; without either, no estimate.
    let poisson = "[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nduration_ms = 100\n";
    let fat_open = fat.replace("[run]\nstop_ms = 100\n", poisson);
    let e = spec_error(&format!("{fat_open}[run.timeseries]\ninterval_us = 0.01\n"));
    assert_eq!(e.key(), "run.timeseries.interval_us", "{e}");
    let closed = "[[workload]]\nkind = \"closed_loop\"\npairs = [[0, 1]]\nsize_bytes = 1000\ncount = 1\n";
    let fat_closed = fat.replace("[run]\nstop_ms = 100\n", closed);
    Spec::from_toml_str(&format!("{fat_closed}[run.timeseries]\ninterval_us = 0.01\n"))
        .unwrap()
        .validate(Path::new("."))
        .unwrap();
}

#[test]
fn timeseries_table_round_trips_through_json() {
    let text = incast_star("[run.timeseries]\ninterval_us = 2.5\nnics = false\nswitches = [0]\nmax_transfers = 4\n");
    let s = Spec::from_toml_str(&text).unwrap();
    let ts = s.run.timeseries.clone().unwrap();
    assert_eq!((ts.interval_us, ts.queues, ts.transfers, ts.nics), (2.5, true, true, false));
    assert_eq!(Spec::from_json_str(&s.to_json()).unwrap(), s);
    // Absent table: absent from the JSON too.
    let off = Spec::from_toml_str(&incast_star("")).unwrap();
    assert!(off.run.timeseries.is_none() && !off.to_json().contains("timeseries"));
}
