//! NetApprox in the simulator: ATP as a transport, the `approx_jobs` workload with each
//! scheme (ATP, EarlySend, SampleSend, UDP), the job rows, and what each scheme promises.

use sim::metrics::AppRecord;
use sim::{Output, Spec};

mod common;
use common::run_toml as run;

/// A 2-leaf x 4-host leaf-spine at 10 Gb/s with 1 us links and NetApprox's switch (the
/// `netapprox_slack` queues: class 0 marks at 65 packets, approximate class k holds 8 - k
/// MTUs), with `rest` appended.
fn scenario(rest: &str) -> String {
    format!(
        r#"
seed = 3
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 10
host_delay_ns = 1000
fabric_delay_ns = 1000

[switch]
buffer_bytes = 1500000
queues = "netapprox_slack"
{rest}
"#
    )
}

fn jobs(trace: &str, scheme: &str, msr: f64, transport: &str, extra: &str) -> String {
    scenario(&format!(
        "[transport]\n{transport}\n\n[[workload]]\nkind = \"approx_jobs\"\ntrace = \"{trace}\"\nscheme = \"{scheme}\"\nmsr = {msr}\nmessages = 60\njobs_per_host = 2\n{extra}\n"
    ))
}

fn job_rows(out: &Output) -> Vec<&AppRecord> {
    out.apps.iter().filter(|a| a.kind == "job").collect()
}

const ATP: &str = "kind = \"atp\"";
const DCTCP: &str = "kind = \"dctcp\"";
const UDP: &str = "kind = \"udp\"";

#[test]
fn every_atp_job_completes_within_its_loss_allowance() {
    for trace in ["fbkv", "fbhd"] {
        for msr in [0.3, 0.75, 1.0] {
            let out = run(&jobs(trace, "atp", msr, ATP, ""));
            let rows = job_rows(&out);
            assert_eq!(rows.len(), 16, "{trace} {msr}: 8 senders x 2 jobs");
            for r in &rows {
                assert_eq!(r.messages, 60);
                let need = (msr * 60.0_f64 - 1e-9).ceil() as u64;
                assert_eq!(r.messages_required, need);
                assert!(r.messages_delivered >= need, "{trace} {msr}: {r:?}");
                assert!(r.loss_rate <= r.loss_allowance + 1e-12, "{trace} {msr}: {r:?}");
                assert!(r.ideal_ps > 0 && r.duration_ps as i64 >= r.ideal_ps, "{trace} {msr}: {r:?}");
                assert!(r.src >= 0 && r.dst >= 0 && r.src != r.dst);
                assert_eq!(r.num_transfers, 1, "one ATP transfer per job");
            }
            // The per-flow records show one ATP transfer per job, ended with enough/complete.
            assert_eq!(out.records.len(), 16);
            assert!(out.records.iter().all(|f| f.transport == "atp" && (f.outcome == "enough" || f.outcome == "complete")));
        }
    }
}

#[test]
fn atp_jobs_use_the_approximate_classes_by_their_slack() {
    // MSR 0.5: TLR 0.5, class 4 at first. Class 0 carries only ACKs (and jobs out of slack).
    let out = run(&jobs("fbhd", "atp", 0.5, ATP, ""));
    let used: std::collections::BTreeSet<u8> = out.queues.iter().filter(|q| q.max_bytes > 0).map(|q| q.queue).collect();
    assert!(used.contains(&4), "class 4 queues held packets: {used:?}");
    // A reliable job stays in class 0.
    let out = run(&jobs("fbhd", "atp", 1.0, ATP, ""));
    assert!(out.queues.iter().all(|q| q.queue == 0 || q.max_bytes == 0), "{:?}", out.queues);
}

#[test]
fn early_send_stops_at_msr_x_n_and_cancels_the_rest() {
    let out = run(&jobs("fbkv", "early_send", 0.5, DCTCP, ""));
    let rows = job_rows(&out);
    assert_eq!(rows.len(), 16);
    for r in &rows {
        assert_eq!(r.messages_delivered, 30, "{r:?}");
        assert_eq!(r.loss_rate, 0.5);
        assert!(r.num_transfers >= 30 && r.num_transfers <= 60);
    }
    // Each message is its own DCTCP transfer; those still running at the end were cancelled.
    assert!(out.records.iter().all(|f| f.transport == "dctcp"));
    let cancelled = out.records.iter().filter(|f| f.outcome == "cancelled").count() as u64;
    assert_eq!(out.summary.cancelled_flows, cancelled);
    let complete = out.records.iter().filter(|f| f.outcome == "complete").count();
    assert!(complete >= 16 * 30, "{complete}");
}

#[test]
fn sample_send_sends_exactly_its_sample_and_needs_all_of_it() {
    let out = run(&jobs("fbkv", "sample_send", 0.4, DCTCP, ""));
    let rows = job_rows(&out);
    for r in &rows {
        assert_eq!((r.num_transfers, r.messages_delivered, r.messages_required), (24, 24, 24), "{r:?}");
    }
    assert_eq!(out.records.len(), 16 * 24);
    assert!(out.records.iter().all(|f| f.outcome == "complete"));
}

#[test]
fn udp_sends_every_message_once_and_reports_its_loss() {
    let out = run(&jobs("fbhd", "udp", 0.5, UDP, "receiver = 0\nsenders = [1, 2, 3, 4, 5, 6, 7]\n"));
    let rows = job_rows(&out);
    assert_eq!(rows.len(), 14);
    // All-to-one at line rate from seven senders: the receiver's link drops, and UDP never
    // resends.
    let lost: u64 = rows.iter().map(|r| r.messages - r.messages_delivered).sum();
    assert!(lost > 0, "the incast lost messages");
    assert!(rows.iter().all(|r| r.packets_retx == 0 && r.num_transfers == 60 && r.dst == 0));
}

#[test]
fn the_same_seed_gives_the_same_jobs() {
    let a = run(&jobs("fbkv", "atp", 0.6, ATP, ""));
    let b = run(&jobs("fbkv", "atp", 0.6, ATP, ""));
    assert_eq!(a.apps, b.apps);
    assert_eq!(a.records, b.records);
}

#[test]
fn a_scheme_needs_a_transport_of_its_kind() {
    for (scheme, transport) in [("atp", DCTCP), ("early_send", ATP), ("udp", ATP), ("sample_send", UDP)] {
        let err = Spec::from_toml_str(&jobs("fbkv", scheme, 0.5, transport, "")).and_then(|s| s.validate(std::path::Path::new(".")));
        let msg = format!("{}", err.expect_err(scheme));
        assert!(msg.contains("workload[0].scheme"), "{msg}");
    }
    for (key, extra) in [
        ("workload[0].msr", "msr = 1.5"),
        ("workload[0].receiver", "receiver = 99"),
        ("workload[0].senders[1]", "receiver = 0\nsenders = [1, 0]"),
    ] {
        let toml = jobs("fbkv", "atp", 0.5, ATP, extra).replace("msr = 0.5\n", if key.ends_with("msr") { "" } else { "msr = 0.5\n" });
        let err = Spec::from_toml_str(&toml).and_then(|s| s.validate(std::path::Path::new(".")));
        let msg = format!("{}", err.expect_err(key));
        assert!(msg.contains(key), "{key}: {msg}");
    }
}

/// A job with a reliable group (MSR 1, 20% of its messages) and an approximate one (MSR 0.5).
const TWO_GROUPS: &str = "groups = [{ share = 0.2, msr = 1.0 }, { share = 0.8, msr = 0.5 }]";

#[test]
fn every_scheme_meets_each_groups_msr_and_reports_it() {
    for (scheme, transport) in [("atp", ATP), ("early_send", DCTCP), ("sample_send", DCTCP)] {
        let toml = jobs("fbkv", scheme, 0.0, transport, TWO_GROUPS).replace("msr = 0\n", "");
        let out = run(&toml);
        let rows = job_rows(&out);
        assert_eq!(rows.len(), 16, "{scheme}");
        // Two group rows per job, in the apps table's order; 60 messages split 12 / 48.
        assert_eq!(out.groups.len(), 32, "{scheme}");
        for (r, g) in rows.iter().zip(out.groups.chunks(2)) {
            assert_eq!((g[0].app, g[0].unit, g[1].unit), (r.app, r.unit, r.unit));
            assert_eq!((g[0].group, g[0].msr, g[0].messages, g[0].messages_required), (0, 1.0, 12, 12), "{scheme}");
            assert_eq!((g[1].group, g[1].msr, g[1].messages, g[1].messages_required), (1, 0.5, 48, 24), "{scheme}");
            // Each group has what it needs, and the job row totals them.
            assert_eq!(g[0].messages_delivered, 12, "{scheme}: the reliable group is whole: {g:?}");
            assert!(g[1].messages_delivered >= 24 && g[1].loss_rate <= g[1].loss_allowance + 1e-12, "{scheme}: {g:?}");
            assert_eq!(r.messages_required, 36);
            assert_eq!(r.messages_delivered, g[0].messages_delivered + g[1].messages_delivered, "{scheme}");
            assert!(r.loss_rate <= r.loss_allowance + 1e-12);
        }
        // SampleSend sends exactly its per-group sample: 12 + 24 messages a job.
        if scheme == "sample_send" {
            assert_eq!(out.records.len(), 16 * 36);
        }
    }
    // One group: one row per job, the same as the job's.
    let out = run(&jobs("fbkv", "atp", 0.75, ATP, ""));
    assert_eq!(out.groups.len(), 16);
    assert!(out.groups.iter().zip(job_rows(&out)).all(|(g, r)| g.loss_rate == r.loss_rate && g.msr == 0.75));
}

#[test]
fn groups_are_interleaved_in_proportion() {
    use sim::app::approx_jobs::{assign_groups, group_sizes};
    assert_eq!(group_sizes(&[0.2, 0.8], 60), vec![12, 48]);
    assert_eq!(group_sizes(&[1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0], 10), vec![4, 3, 3]);
    assert_eq!(group_sizes(&[0.5, 0.5], 1), vec![1, 0]);
    let g = assign_groups(&[12, 48]);
    assert_eq!(g.len(), 60);
    assert_eq!(g.iter().filter(|&&x| x == 0).count(), 12);
    // Every window of five messages holds one of group 0.
    assert!(g.chunks(5).all(|w| w.iter().filter(|&&x| x == 0).count() == 1), "{g:?}");
}

#[test]
fn bad_groups_are_one_clear_error() {
    for (extra, key, needle) in [
        ("msr = 0.5\ngroups = [{ share = 1.0, msr = 0.5 }]", "workload[0].msr", "not both"),
        ("groups = [{ share = 0.5, msr = 0.5 }, { share = 0.4, msr = 1.0 }]", "workload[0].groups", "sum to 1"),
        ("groups = [{ share = 0.0, msr = 0.5 }, { share = 1.0, msr = 1.0 }]", "workload[0].groups[0].share", "(0, 1]"),
        ("groups = [{ share = 1.0, msr = 1.5 }]", "workload[0].groups[0].msr", "[0, 1]"),
        ("groups = []", "workload[0].groups", "1 to 8 groups"),
        ("groups = [{ share = 0.001, msr = 0.5 }, { share = 0.999, msr = 1.0 }]", "workload[0].groups[0].share", "none of a job's 60"),
        ("", "workload[0].msr", "give every job's msr"),
    ] {
        let toml = jobs("fbkv", "atp", 0.0, ATP, extra).replace("msr = 0\n", "");
        let err = Spec::from_toml_str(&toml).and_then(|s| s.validate(std::path::Path::new(".")));
        let msg = format!("{}", err.expect_err(extra));
        assert!(msg.contains(key) && msg.contains(needle), "{extra}: {msg}");
    }
}
