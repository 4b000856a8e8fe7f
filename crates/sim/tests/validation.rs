//! Never crash, never lie: every bound of `sim::spec::limits` is checked at validation (just
//! inside is accepted, just outside is refused with the key, the value and the range named),
//! every table refuses keys it does not have, scenarios that would not fit in memory are
//! refused with an estimate, and what validation cannot bound the engine saturates instead of
//! wrapping.

use std::path::{Path, PathBuf};

use sim::app::{AnyApp, AppCtx, Application, TransferReq};
use sim::spec::limits::*;
use sim::{Simulation, Spec, SpecError, ValidSpec};
use units::Time;

/// A 2-leaf x 2-host leaf-spine at 10 Gb/s with one spine, plus `extra`.
fn scenario(extra: &str) -> String {
    format!(
        r#"
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 2
spines = 1
host_rate_gbps = 10
fabric_rate_gbps = 10
{extra}
"#
    )
}

/// A one-flow workload from host 0 to host 3.
const ONE_FLOW: &str = "[[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 3, size_bytes = 100000 }]\n";

fn validate_in(text: &str, base: &Path) -> Result<ValidSpec, SpecError> {
    Spec::from_toml_str(text)?.validate(base)
}

fn validate(text: &str) -> Result<ValidSpec, SpecError> {
    validate_in(text, Path::new("."))
}

/// `text` is refused naming `key` (and, in the message, every `words`).
#[track_caller]
fn refused(text: &str, key: &str, words: &[&str]) -> SpecError {
    let e = validate(text).expect_err(&format!("accepted, expected an error naming {key}"));
    assert_eq!(e.key(), key, "{e}");
    let msg = e.to_string();
    for w in words {
        assert!(msg.contains(w), "{w:?} missing from: {msg}");
    }
    e
}

#[track_caller]
fn accepted(text: &str) -> ValidSpec {
    validate(text).unwrap_or_else(|e| panic!("refused: {e}"))
}

/// A scratch folder, removed when dropped (a failing test's too).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

/// A scratch folder for file inputs, unique to `tag`.
fn scratch(tag: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("slacknet-validation-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

// ---- the engine saturates what validation cannot bound ----

/// Starts one transfer a nanosecond before the end of the clock.
#[derive(Debug)]
struct AtTheEnd;

impl Application for AtTheEnd {
    fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
        ctx.sleep_until(Time::from_ps(u64::MAX - 1000));
    }
    fn on_timer(&mut self, ctx: &mut AppCtx<'_>) {
        ctx.start_transfer(TransferReq::new(0, 3, 100_000)).unwrap();
    }
}

#[test]
fn a_run_past_the_end_of_the_clock_stops_there_without_wrapping() {
    // Without occupancy sampling, which would sample the half year the application sleeps.
    let valid = accepted(&scenario("[run]\nsample_interval_us = 0\n"));
    let mut sim = Simulation::with_apps(&valid, vec![AnyApp::Custom(Box::new(AtTheEnd))]).unwrap();
    sim.run_to_end();
    let out = sim.output();
    assert!(out.summary.stopped_early, "{:?}", out.summary);
    assert_eq!(out.summary.sim_end_ps, sim::world::CLOCK_END.ps());
    let r = &out.records[0];
    assert_eq!(r.start_ps, u64::MAX - 1000);
    assert!(!r.finished && r.fct_ps == -1 && r.outcome == "unfinished", "{r:?}");
}

/// Asks for one transfer as given, and keeps the answer.
#[derive(Debug)]
struct Ask(TransferReq, std::sync::Arc<std::sync::Mutex<Option<bool>>>);

impl Application for Ask {
    fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
        *self.1.lock().unwrap() = Some(ctx.start_transfer(self.0).is_ok());
    }
}

#[test]
fn an_application_cannot_start_a_transfer_outside_the_limits() {
    let valid = accepted(&scenario(""));
    let asks = |req: TransferReq| {
        let answer = std::sync::Arc::new(std::sync::Mutex::new(None));
        let mut sim = Simulation::with_apps(&valid, vec![AnyApp::Custom(Box::new(Ask(req, answer.clone())))]).unwrap();
        sim.advance(1);
        let ok = answer.lock().unwrap().expect("asked");
        ok
    };
    assert!(asks(TransferReq::new(0, 3, MAX_TRANSFER_BYTES)));
    assert!(!asks(TransferReq::new(0, 3, MAX_TRANSFER_BYTES + 1)));
    let capped = |bps| TransferReq { rate_cap: Some(units::Bps(bps)), ..TransferReq::new(0, 3, 1000) };
    assert!(asks(capped(MIN_RATE_BPS)));
    assert!(!asks(capped(MIN_RATE_BPS - 1)), "a rate cap of 0.999999 Mb/s");
    assert!(!asks(capped(0)), "a zero rate would divide by zero");
    assert!(asks(capped(MAX_RATE_BPS)));
    assert!(!asks(capped(MAX_RATE_BPS + 1)));
}

// ---- every numeric key, at its bounds ----

/// For each case, `inside` is accepted and `outside` refused naming `key` and the value.
struct Bound {
    key: &'static str,
    inside: String,
    outside: String,
    value: &'static str,
}

fn bound(key: &'static str, inside: String, outside: String, value: &'static str) -> Bound {
    Bound { key, inside, outside, value }
}

#[track_caller]
fn check_bounds(cases: Vec<Bound>) {
    for b in cases {
        if let Err(e) = validate(&b.inside) {
            panic!("just inside {} was refused: {e}", b.key);
        }
        let e = validate(&b.outside).err().unwrap_or_else(|| panic!("just outside {} was accepted", b.key));
        assert_eq!(e.key(), b.key, "{e}");
        assert!(e.to_string().contains(b.value), "the value {} is not named: {e}", b.value);
    }
}

/// `scenario` with `from` replaced by `to` in its topology.
fn topo(from: &str, to: &str) -> String {
    let s = scenario(ONE_FLOW);
    assert!(s.contains(from), "{from}");
    s.replace(from, to)
}

#[test]
fn topology_rates_and_delays_at_their_bounds() {
    let ft = |k: &str, rate: &str, delay: &str| {
        format!("[topology]\nkind = \"fat_tree\"\nk = {k}\nrate_gbps = {rate}\ndelay_ns = {delay}\n{ONE_FLOW}")
    };
    check_bounds(vec![
        bound("topology.host_rate_gbps", topo("host_rate_gbps = 10", "host_rate_gbps = 0.001"), topo("host_rate_gbps = 10", "host_rate_gbps = 0.000999"), "0.000999"),
        bound("topology.host_rate_gbps", topo("host_rate_gbps = 10", "host_rate_gbps = 100000"), topo("host_rate_gbps = 10", "host_rate_gbps = 100000.1"), "100000.1"),
        bound("topology.host_rate_gbps", topo("host_rate_gbps = 10", "host_rate_gbps = 0.001"), topo("host_rate_gbps = 10", "host_rate_gbps = 1e-10"), "0.0000000001"),
        bound("topology.fabric_rate_gbps", topo("fabric_rate_gbps = 10", "fabric_rate_gbps = 0.001"), topo("fabric_rate_gbps = 10", "fabric_rate_gbps = 0.000999"), "0.000999"),
        bound("topology.fabric_rate_gbps", topo("fabric_rate_gbps = 10", "fabric_rate_gbps = 100000"), topo("fabric_rate_gbps = 10", "fabric_rate_gbps = nan"), "NaN"),
        bound("topology.host_delay_ns", topo("spines = 1", "spines = 1\nhost_delay_ns = 1000000000"), topo("spines = 1", "spines = 1\nhost_delay_ns = 1000000001"), "1000000001"),
        bound("topology.fabric_delay_ns", topo("spines = 1", "spines = 1\nfabric_delay_ns = 1000000000"), topo("spines = 1", "spines = 1\nfabric_delay_ns = 18400000000000000"), "18400000000000000"),
        bound("topology.rate_gbps", ft("4", "0.001", "1"), ft("4", "0.0005", "1"), "0.0005"),
        bound("topology.rate_gbps", ft("4", "100000", "1"), ft("4", "200000", "1"), "200000"),
        bound("topology.delay_ns", ft("4", "10", "1000000000"), ft("4", "10", "1000000001"), "1000000001"),
        bound("topology.k", ft("64", "10", "1"), ft("130", "10", "1"), "130"),
        bound("topology.hosts_per_leaf", topo("hosts_per_leaf = 2", "hosts_per_leaf = 1024").replace("leaves = 2", "leaves = 1024"), topo("hosts_per_leaf = 2", "hosts_per_leaf = 1025").replace("leaves = 2", "leaves = 1024"), "1025"),
    ]
    .into_iter()
    // Slow links make small default buffers (5120 B per Gb/s of ports): give a buffer.
    .map(|b| Bound { inside: format!("{}\n[switch]\nbuffer_bytes = 1000000\n", b.inside), ..b })
    .collect());
    // Without one, a switch whose buffer (from the default 5120 B per port per Gb/s) cannot
    // hold a packet is refused: a spine with two 1 Mb/s ports would have 10 bytes.
    refused(&topo("fabric_rate_gbps = 10", "fabric_rate_gbps = 0.001"), "switch.buffer_per_port_per_gbps", &["5120 (the default)", "10 bytes"]);
}

#[test]
fn topologies_that_cannot_fit_are_refused_with_their_memory_estimate() {
    let ft = |k: u32| format!("[topology]\nkind = \"fat_tree\"\nk = {k}\nrate_gbps = 100\n{ONE_FLOW}");
    // k = 64: 65,536 hosts, about 1.6 GB, fits; k = 128 would take about 45 GB.
    accepted(&ft(64));
    let e = refused(&ft(128), "topology.k", &["128", "GB", "524288 hosts", "20480 switches", "routing tables", "8 GiB"]);
    assert!(e.to_string().contains("45") || e.to_string().contains("44"), "{e}");
    // A million spines under 16 leaves: 32 million links.
    let spines = topo("leaves = 2", "leaves = 16").replace("spines = 1", "spines = 1000000");
    refused(&spines, "topology.spines", &["1000000", "GB", "more than the limit"]);
}

/// `scenario(ONE_FLOW)` with a `[transport]` table.
fn with_transport(kind: &str, keys: &str) -> String {
    scenario(&format!("{ONE_FLOW}\n[transport]\nkind = \"{kind}\"\n{keys}\n"))
}

#[test]
fn transport_sizes_and_timeouts_at_their_bounds() {
    let mut cases = Vec::new();
    for kind in ["dctcp", "newreno", "power_tcp", "udp"] {
        let t = |keys: &str| with_transport(kind, keys);
        cases.extend([
            bound("transport.mss_bytes", t("mss_bytes = 65000\nheader_bytes = 535"), t("mss_bytes = 65001\nheader_bytes = 1"), "65001"),
            bound("transport.mss_bytes", t("mss_bytes = 1"), t("mss_bytes = 0"), "0"),
            bound("transport.header_bytes", t("mss_bytes = 1460\nheader_bytes = 64075"), t("mss_bytes = 1460\nheader_bytes = 64076"), "64076"),
            bound("transport.header_bytes", t("header_bytes = 1"), t("header_bytes = 4294967295"), "4294967295"),
            bound("transport.header_bytes", t("header_bytes = 1"), t("header_bytes = 0"), "0"),
        ]);
        if kind == "udp" {
            cases.extend([
                bound("transport.rate_gbps", t("rate_gbps = 0.001"), t("rate_gbps = 0.0009"), "0.0009"),
                bound("transport.rate_gbps", t("rate_gbps = 100000"), t("rate_gbps = 1e6"), "1000000"),
            ]);
            continue;
        }
        for key in ["min_rto_us", "init_rto_us", "max_rto_us", "delayed_ack_timeout_us"] {
            // max_rto_us must stay >= min_rto_us, so the RTO keys move together.
            let all = |v: u64| {
                let rtos = format!("min_rto_us = 1\ninit_rto_us = 1\nmax_rto_us = {}", if key == "max_rto_us" { v } else { 1_000_000_000_000 });
                let rtos = if key == "min_rto_us" || key == "init_rto_us" { rtos.replace(&format!("{key} = 1\n"), &format!("{key} = {v}\n")) } else { rtos };
                if key == "delayed_ack_timeout_us" {
                    t(&format!("delayed_ack_segments = 2\n{key} = {v}"))
                } else {
                    t(&rtos)
                }
            };
            let key_name: &'static str = match key {
                "min_rto_us" => "transport.min_rto_us",
                "init_rto_us" => "transport.init_rto_us",
                "max_rto_us" => "transport.max_rto_us",
                _ => "transport.delayed_ack_timeout_us",
            };
            cases.push(bound(key_name, all(1_000_000_000_000), all(1_000_000_000_001), "1000000000001"));
        }
        cases.push(bound("transport.min_rto_us", t("min_rto_us = 1"), t("min_rto_us = 18446744073709551"), "18446744073709551"));
        cases.push(bound("transport.init_cwnd_pkts", t("init_cwnd_pkts = 1"), t("init_cwnd_pkts = 0"), "0"));
        cases.push(bound("transport.init_cwnd_pkts", t("init_cwnd_pkts = 1048576"), t("init_cwnd_pkts = 1048577"), "1048577"));
        cases.push(bound("transport.dupack_threshold", t("dupack_threshold = 1"), t("dupack_threshold = 0"), "0"));
    }
    let t = with_transport;
    cases.extend([
        bound("transport.g", t("dctcp", "g = 1"), t("dctcp", "g = 0"), "0"),
        bound("transport.init_alpha", t("dctcp", "init_alpha = 0"), t("dctcp", "init_alpha = -0.1"), "-0.1"),
        bound("transport.gamma", t("power_tcp", "gamma = 1"), t("power_tcp", "gamma = 1.5"), "1.5"),
        bound("transport.beta_bytes", t("power_tcp", "beta_bytes = 1"), t("power_tcp", "beta_bytes = 0"), "0"),
    ]);
    // A workload entry's own transport is checked the same way, under its own key.
    let own = |keys: &str| {
        scenario(&format!(
            "[[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 3, size_bytes = 1000 }}]\ntransport = {{ kind = \"dctcp\", {keys} }}\n"
        ))
    };
    cases.push(bound("workload[0].transport.max_rto_us", own("max_rto_us = 1000000000000"), own("max_rto_us = 1000000000001"), "1000000000001"));
    check_bounds(cases);
}

#[test]
fn switch_and_host_buffers_hold_a_packet_and_stay_in_range() {
    // Every packet is 1500 B (1460 + 40); a spine has two 10 Gb/s ports (20 Gb/s), a leaf
    // three (30 Gb/s).
    let sw = |keys: &str| scenario(&format!("{ONE_FLOW}\n[switch]\n{keys}\n"));
    let host = |keys: &str| scenario(&format!("{ONE_FLOW}\n[host]\n{keys}\n"));
    check_bounds(vec![
        bound("switch.buffer_bytes", sw("buffer_bytes = 1500"), sw("buffer_bytes = 1499"), "1499"),
        bound("switch.buffer_bytes", sw("buffer_bytes = 1000000000000000"), sw("buffer_bytes = 1000000000000001"), "1000000000000001"),
        bound("switch.buffer_per_port_per_gbps", sw("buffer_per_port_per_gbps = 75"), sw("buffer_per_port_per_gbps = 74.9"), "74.9"),
        bound("switch.buffer_per_port_per_gbps", sw("buffer_per_port_per_gbps = 3.3e13"), sw("buffer_per_port_per_gbps = 3.4e13"), "34000000000000"),
        bound("switch.admission.port_bytes", sw("admission = { policy = \"static\", port_bytes = 1500 }"), sw("admission = { policy = \"static\", port_bytes = 1499 }"), "1499"),
        bound("switch.admission", sw("buffer_bytes = 4500\nadmission = { policy = \"static\" }"), sw("buffer_bytes = 4499\nadmission = { policy = \"static\" }"), "static"),
        bound("switch.queues[0].cap_bytes", sw("queues = [{ cap_bytes = 1500 }]"), sw("queues = [{ cap_bytes = 1499 }]"), "1499"),
        bound("switch.queues[1].dt_alpha", sw("queues = [{}, { dt_alpha = 1e-9 }]"), sw("queues = [{}, { dt_alpha = 0 }]"), "0"),
        bound("switch.admission.base_rtt_us", sw("admission = { policy = \"abm\", base_rtt_us = 1e12 }"), sw("admission = { policy = \"abm\", base_rtt_us = 1.000001e12 }"), "1000001000000"),
        bound("switch.admission.base_rtt_us", sw("admission = { policy = \"credence\", base_rtt_us = 1e12 }"), sw("admission = { policy = \"credence\", base_rtt_us = -1 }"), "-1"),
        bound("switch.admission.alpha_first_rtt", sw("admission = { policy = \"abm\", alpha_first_rtt = 1e-9 }"), sw("admission = { policy = \"abm\", alpha_first_rtt = inf }"), "inf"),
        bound("switch.admission.congested_bytes", sw("admission = { policy = \"abm\", congested_bytes = 1 }"), sw("admission = { policy = \"abm\", congested_bytes = 0 }"), "0"),
        bound("host.nic_buffer_bytes", host("nic_buffer_bytes = 1500"), host("nic_buffer_bytes = 1499"), "1499"),
    ]);
    // The packet is the largest of the run's transports: a workload's own jumbo frames count.
    let jumbo = scenario(
        "[[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 3, size_bytes = 1000 }]\ntransport = { kind = \"udp\", mss_bytes = 9000 }\n[switch]\nbuffer_bytes = 5000\n",
    );
    refused(&jumbo, "switch.buffer_bytes", &["9040"]);
}

#[test]
fn the_netapprox_slack_preset_needs_one_buffer_size_and_names_switch_queues() {
    let sw = |keys: &str| scenario(&format!("{ONE_FLOW}\n[switch]\nqueues = \"netapprox_slack\"\n{keys}\n"));
    let fix = ["switch.buffer_bytes", "1500000", "NetApprox §7.1"];
    // No buffer size, or one that varies per switch: queue 0's rest is undefined.
    let e = refused(&sw(""), "switch.queues", &fix);
    assert!(e.to_string().starts_with("switch.queues = \"netapprox_slack\": "), "{e}");
    refused(&sw("buffer_per_port_per_gbps = 5120"), "switch.queues", &["buffer_per_port_per_gbps = 5120", fix[0], fix[1]]);
    refused(&sw("admission = { policy = \"static\", port_bytes = 100000 }"), "switch.queues", &["port_bytes = 100000", fix[0]]);
    // The buffer must leave queue 0 one MTU after the approximate queues' 28.
    accepted(&sw("buffer_bytes = 43500"));
    refused(&sw("buffer_bytes = 43499"), "switch.queues", &["43499", "43500", "28 MTU"]);
    // Unknown names list the presets; other types say what the key takes.
    refused(&sw("").replace("netapprox_slack", "netapprox"), "switch.queues", &["\"netapprox\"", "unknown queue preset", "\"netapprox_slack\""]);
    refused(&scenario(&format!("{ONE_FLOW}\n[switch]\nqueues = 8\n")), "switch.queues", &["list of queue tables", "\"netapprox_slack\""]);
    // The same from JSON (what Python sends).
    let json = |text: &str| {
        let tree: toml::Value = toml::from_str(text).unwrap();
        Spec::from_json_str(&serde_json::to_string(&tree).unwrap())
    };
    assert_eq!(json(&sw("")).unwrap_err().key(), "switch.queues");
    assert_eq!(json(&sw("").replace("netapprox_slack", "x")).unwrap_err().key(), "switch.queues");
    assert_eq!(json(&sw("buffer_bytes = 1500000")).unwrap().switch.queues.len(), 8);
    // The expanded queues are validated like written ones: a workload's 9000 B packets sizes
    // the MTU, so the same buffer is now too small.
    let jumbo = format!(
        "{}[[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 3, size_bytes = 1 }}]\ntransport = {{ kind = \"udp\", mss_bytes = 8960 }}\n",
        sw("buffer_bytes = 43500")
    );
    refused(&jumbo, "switch.queues", &["9000 B", "261000"]);
}

#[test]
fn prio_schedule_times_are_finite_non_negative_and_increasing() {
    let poisson = |s: &str| {
        scenario(&format!(
            "[[workload]]\nkind = \"poisson\"\ncdf = \"google_rpc\"\nload = 0.1\nduration_ms = 1\nprio = 4\nprio_schedule = {s}\n"
        ))
    };
    let incast = |s: &str| {
        scenario(&format!(
            "[[workload]]\nkind = \"incast\"\nquery_rate_per_host = 1\nfan_in = 1\nburst_bytes = 1000\nduration_ms = 1\nprio_schedule = {s}\n"
        ))
    };
    for w in [poisson, incast] {
        accepted(&w("[]"));
        let v = accepted(&w("[[0, 3], [590.5, 2], [1e12, 7]]"));
        let json = v.to_json();
        assert!(json.contains("\"prio_schedule\""), "{json}");
        assert_eq!(Spec::from_json_str(&json).unwrap(), *v.spec(), "the resolved JSON reads back");
        refused(&w("[[-1, 3]]"), "workload[0].prio_schedule[0]", &["[-1, 3]", "between 0 and"]);
        refused(&w("[[0, 3], [1.000001e12, 2]]"), "workload[0].prio_schedule[1]", &["1000001000000"]);
        refused(&w("[[0, 3], [nan, 2]]"), "workload[0].prio_schedule[1]", &["NaN"]);
        refused(&w("[[0, 3], [100, 2], [100, 1]]"), "workload[0].prio_schedule[2]", &["strictly increasing", "[100, 1]"]);
        refused(&w("[[200, 3], [100, 2]]"), "workload[0].prio_schedule[1]", &["strictly increasing"]);
        // Classes are 0..=7 (at most 8 queues); the entry's shape is [t_us, prio].
        refused(&w("[[0, 3], [1e12, 255]]"), "workload[0].prio_schedule[1]", &["[1000000000000, 255]", "between 0 and 7"]);
        let e = Spec::from_toml_str(&w("[[0, 256]]")).unwrap_err();
        assert!(e.key().starts_with("workload[0].prio_schedule"), "{e}");
        assert!(e.to_string().contains("256"), "{e}");
        let e = Spec::from_toml_str(&w("[[0, -1]]")).unwrap_err();
        assert!(e.key().starts_with("workload[0].prio_schedule"), "{e}");
        let e = Spec::from_toml_str(&w("[0, 3]")).unwrap_err();
        assert!(e.key().starts_with("workload[0].prio_schedule"), "{e}");
    }
    // Without the key the resolved JSON has none (it was absent before it existed).
    let plain = accepted(&poisson("[]").replace("prio_schedule = []\n", ""));
    assert!(!plain.to_json().contains("prio_schedule"));
}

/// A leaf-spine at `gbps` with one flow of `size` bytes.
fn one_flow_of(size: u64, gbps: &str) -> String {
    topo("host_rate_gbps = 10", &format!("host_rate_gbps = {gbps}"))
        .replace("size_bytes = 100000", &format!("size_bytes = {size}"))
}

#[test]
fn transfer_sizes_fit_the_clock_at_the_slowest_link() {
    check_bounds(vec![
        bound("workload[0].flows[0].size_bytes", one_flow_of(MAX_TRANSFER_BYTES, "10"), one_flow_of(MAX_TRANSFER_BYTES + 1, "10"), "1000000000001"),
        bound("workload[0].flows[0].size_bytes", one_flow_of(1, "10"), one_flow_of(0, "10"), "= 0"),
    ]);
    // At 1 Mb/s, 1500 B packets of 1460 B payload: 83,333,333 packets in 1e6 s.
    let max = 83_333_333 * 1460;
    let e = validate(&one_flow_of(max + 1, "0.001")).unwrap_err();
    assert_eq!(e.key(), "workload[0].flows[0].size_bytes", "{e}");
    assert!(e.to_string().contains(&max.to_string()) && e.to_string().contains("serialize"), "{e}");
    accepted(&one_flow_of(max, "0.001"));
    // A paced UDP source counts at its own rate.
    let udp = |size: u64| {
        format!("{}\n[transport]\nkind = \"udp\"\nrate_gbps = 0.001\n", one_flow_of(size, "10"))
    };
    accepted(&udp(max));
    refused(&udp(max + 1), "workload[0].flows[0].size_bytes", &["0.001 Gb/s"]);
}

#[test]
fn workload_times_and_sizes_at_their_bounds() {
    // Occupancy sampling off: over such long schedules it would not fit (tested below).
    let w = |body: &str| scenario(&format!("[[workload]]\n{body}\n[run]\nsample_interval_us = 0\n"));
    let flows = |f: &str| w(&format!("kind = \"flows\"\nflows = [{{ src = 0, dst = 3, {f} }}]"));
    let poisson = |t: &str| {
        w(&format!("kind = \"poisson\"\ncdf = \"google_rpc\"\nload = 0.1\n{t}"))
            .replace("sample_interval_us = 0", "sample_interval_us = 0\nstop_ms = 1")
    };
    // An entry must start before the stop time: the latest start needs the latest stop.
    let late = |t: &str| poisson(t).replace("stop_ms = 1\n", "stop_ms = 1e9\n");
    let incast = |k: &str| w(&format!("kind = \"incast\"\nquery_rate_per_host = 1\nfan_in = 1\nduration_ms = 1\n{k}"));
    let loop_ = |k: &str| w(&format!("kind = \"closed_loop\"\npairs = [[0, 3]]\n{k}"));
    let barrier = |k: &str| w(&format!("kind = \"barrier\"\n{k}"));
    let relay = |k: &str| w(&format!("kind = \"relay\"\nchain = [0, 3]\nblocks = 1\n{k}"));
    check_bounds(vec![
        bound("workload[0].flows[0].start_ns", flows("size_bytes = 1, start_ns = 1000000000000000"), flows("size_bytes = 1, start_ns = 1000000000000001"), "1000000000000001"),
        bound("workload[0].flows[0].start_ns", flows("size_bytes = 1, start_ns = 0"), flows("size_bytes = 1, start_ns = 9223372036854775807"), "9223372036854775807"),
        bound("workload[0].duration_ms", poisson("duration_ms = 1e9"), poisson("duration_ms = 1.0000000001e9"), "1000000000.1"),
        bound("workload[0].start_ms", late("start_ms = 999999999\nduration_ms = 1"), late("start_ms = 1e9\nduration_ms = 1"), "1000000000"),
        bound("workload[0].duration_ms", poisson("duration_ms = 1e-9"), poisson("duration_ms = 0"), "0"),
        bound("workload[0].burst_bytes", incast("burst_bytes = 1000000000000"), incast("burst_bytes = 1000000000001"), "1000000000001"),
        bound("workload[0].burst_buffer_fraction", incast("burst_buffer_fraction = 1e6"), incast("burst_buffer_fraction = 1.1e6"), "1100000"),
        bound("workload[0].size_bytes", loop_("size_bytes = 1000000000000\ncount = 1"), loop_("size_bytes = 1000000000001\ncount = 1"), "1000000000001"),
        bound("workload[0].think_us", loop_("size_bytes = 1\ncount = 2\nthink_us = 5e11"), loop_("size_bytes = 1\ncount = 2\nthink_us = 5.000001e11"), "500000100000"),
        bound("workload[0].think_us", loop_("size_bytes = 1\ncount = 1\nthink_us = 1e12"), loop_("size_bytes = 1\ncount = 1\nthink_us = 1.000001e12"), "1000001000000"),
        bound("workload[0].compute_us", barrier("rounds = 10\ncompute_us = 1e11\ntransfers = [{ src = 0, dst = 3, size_bytes = 1 }]"), barrier("rounds = 11\ncompute_us = 1e11\ntransfers = [{ src = 0, dst = 3, size_bytes = 1 }]"), "100000000000"),
        bound("workload[0].transfers[0].size_bytes", barrier("rounds = 1\ntransfers = [{ src = 0, dst = 3, size_bytes = 1000000000000 }]"), barrier("rounds = 1\ntransfers = [{ src = 0, dst = 3, size_bytes = 1000000000001 }]"), "1000000000001"),
        bound("workload[0].block_bytes", relay("block_bytes = 1000000000000"), relay("block_bytes = 1000000000001"), "1000000000001"),
        bound("run.stop_ms", scenario(&format!("{ONE_FLOW}[run]\nstop_ms = 1e9\nsample_interval_us = 0\n")), scenario(&format!("{ONE_FLOW}[run]\nstop_ms = 1.0000000001e9\n")), "1000000000.1"),
        bound("run.stop_ms", scenario(&format!("{ONE_FLOW}[run]\nstop_ms = 1e-9\n")), scenario(&format!("{ONE_FLOW}[run]\nstop_ms = 0\n")), "0"),
    ]);
}

#[test]
fn flow_lists_and_cdf_files_are_bounded_too() {
    let dir = scratch("files");
    let file = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    file("ok.txt", "0 0 3 1000000 1000000000000 0\n");
    file("late.txt", "# header\n0 0 3 1000000.5 10 0\n");
    file("huge.txt", "0 0 3 0 1000000000001 0\n");
    file("big.txt", "7 0 3 0 1000000000 0\n");
    file("ok.cdf", "1000 0.5\n1000000000000 1\n");
    file("huge.cdf", "1000 0.5\n1000000000001 1\n");
    file("zero.cdf", "0 0\n0 1\n");
    let list = |path: &str, gbps: &str| {
        topo("host_rate_gbps = 10", &format!("host_rate_gbps = {gbps}"))
            .replace(ONE_FLOW, &format!("[[workload]]\nkind = \"flow_list\"\npath = \"{path}\"\n"))
    };
    let poisson = |cdf: &str| {
        scenario(&format!("[[workload]]\nkind = \"poisson\"\ncdf = \"{cdf}\"\nload = 0.1\nduration_ms = 1\n"))
    };
    // (Sampling occupancy every 10 us until flows start at 1e6 s would take 7 TB.)
    let list = |path: &str, gbps: &str| format!("{}[run]\nsample_interval_us = 0\n", list(path, gbps));
    validate_in(&list("ok.txt", "10"), &dir).unwrap();
    for (path, words) in [("late.txt", ["line 2", "start_s"]), ("huge.txt", ["line 1", "size_bytes"])] {
        let e = validate_in(&list(path, "10"), &dir).unwrap_err();
        assert_eq!(e.key(), "workload[0].path", "{e}");
        assert!(words.iter().all(|w| e.to_string().contains(w)), "{e}");
    }
    // 1 GB cannot serialize in 1e6 s at 1 Mb/s... it can (8000 s); 1 TB cannot.
    validate_in(&list("big.txt", "0.001"), &dir).unwrap();
    let e = validate_in(&list("ok.txt", "0.001"), &dir).unwrap_err();
    assert!(e.key() == "workload[0].path" && e.to_string().contains("flow 0") && e.to_string().contains("serialize"), "{e}");
    validate_in(&poisson("ok.cdf"), &dir).unwrap();
    let e = validate_in(&poisson("huge.cdf"), &dir).unwrap_err();
    assert!(e.key() == "workload[0].cdf" && e.to_string().contains("1000000000001"), "{e}");
    // A distribution whose mean is zero would make the arrival rate infinite.
    let e = validate_in(&poisson("zero.cdf"), &dir).unwrap_err();
    assert!(e.key() == "workload[0].cdf" && e.to_string().contains("mean flow size is 0"), "{e}");
}

#[test]
fn absurd_rates_are_refused_with_a_flow_estimate_before_anything_is_generated() {
    let w = |body: &str| scenario(&format!("[[workload]]\n{body}\n"));
    let loop_ = |count: u64| w(&format!("kind = \"closed_loop\"\npairs = [[0, 3]]\nsize_bytes = 1\ncount = {count}"));
    check_bounds(vec![bound("workload[0].count", loop_(MAX_FLOWS), loop_(MAX_FLOWS + 1), "50000001")]);
    refused(&loop_(MAX_FLOWS + 1), "workload[0].count", &["about 5.000e7 flows", "GB", "limit of 50000000", "reduce count"]);
    // Poisson: 4 hosts at 10 Gb/s and load 1 with google_rpc's 2.9 KB mean make about 1.7 M
    // flows a second; a year of it is far too many, one second is fine.
    let poisson = |duration_ms: &str| {
        w(&format!("kind = \"poisson\"\ncdf = \"google_rpc\"\nload = 1\nduration_ms = {duration_ms}"))
    };
    accepted(&poisson("1000"));
    refused(&poisson("1e8"), "workload[0].duration_ms", &["flows", "GB", "reduce duration_ms"]);
    // ... unless the run stops long before.
    accepted(&format!("{}\n[run]\nstop_ms = 1000\n", poisson("1e8")));
    let incast = |qps: &str| {
        w(&format!("kind = \"incast\"\nquery_rate_per_host = {qps}\nfan_in = 3\nburst_bytes = 3000\nduration_ms = 1000"))
    };
    accepted(&incast("1e6"));
    refused(&incast("1e9"), "workload[0].query_rate_per_host", &["1000000000", "flows"]);
    let barrier = |rounds: u64| {
        w(&format!("kind = \"barrier\"\nrounds = {rounds}\ntransfers = [{{ src = 0, dst = 3, size_bytes = 1 }}, {{ src = 1, dst = 2, size_bytes = 1 }}]"))
    };
    check_bounds(vec![bound("workload[0].rounds", barrier(MAX_FLOWS / 2), barrier(MAX_FLOWS / 2 + 1), "25000001")]);
    let relay = |blocks: u64| w(&format!("kind = \"relay\"\nchain = [0, 1, 2]\nblock_bytes = 1\nblocks = {blocks}"));
    check_bounds(vec![bound("workload[0].blocks", relay(MAX_FLOWS / 2), relay(MAX_FLOWS / 2 + 1), "25000001")]);
    // Each entry within the limit, all of them together not.
    let two = format!(
        "{}[[workload]]\nkind = \"closed_loop\"\npairs = [[1, 2]]\nsize_bytes = 1\ncount = {}\n",
        loop_(MAX_FLOWS / 2),
        MAX_FLOWS / 2 + 1
    );
    refused(&two, "workload", &["2 entries", "in all"]);
}

#[test]
fn too_many_workload_entries_are_refused() {
    let entries = |n: usize| {
        let mut s = scenario("");
        for _ in 0..n {
            s.push_str("[[workload]]\nkind = \"flows\"\nflows = []\n");
        }
        s
    };
    accepted(&entries(MAX_WORKLOADS));
    refused(&entries(MAX_WORKLOADS + 1), "workload", &["65536 entries", "65535"]);
}

#[test]
fn sampling_that_would_not_fit_is_refused_with_an_estimate() {
    let run = |keys: &str| scenario(&format!("{ONE_FLOW}[run]\n{keys}\n"));
    check_bounds(vec![
        // Below a nanosecond (no queue changes faster), sampling only fills memory.
        bound("run.sample_interval_us", run("sample_interval_us = 0.001"), run("sample_interval_us = 0.000999"), "0.000999"),
        bound("run.sample_interval_us", run("sample_interval_us = 0.001"), run("sample_interval_us = 1e-6"), "0.000001"),
        bound("run.sample_interval_us", run("sample_interval_us = 1e12"), run("sample_interval_us = 1.000001e12"), "1000001000000"),
        bound("run.sample_interval_us", run("sample_interval_us = 0"), run("sample_interval_us = -1"), "-1"),
        // Three switches: 7,456,539 samples of 1 us are 22,369,617 rows (512 MiB of 24-byte rows
        // is 22,369,621), 7,456,541 too many.
        bound("run.sample_interval_us", run("stop_ms = 7456.5385\nsample_interval_us = 1"), run("stop_ms = 7456.5405\nsample_interval_us = 1"), "= 1:"),
        bound("run.timeseries.interval_us", run("[run.timeseries]\ninterval_us = 1e12"), run("[run.timeseries]\ninterval_us = 1.1e12"), "1100000000000"),
        bound("run.timeseries.interval_us", run("[run.timeseries]\ninterval_us = 0.001"), run("[run.timeseries]\ninterval_us = 1e-6"), "0.000001"),
    ]);
    assert_eq!(MAX_OCCUPANCY_ROWS, 22_369_621);
    let e = refused(&run("sample_interval_us = 1e-6"), "run.sample_interval_us", &["0.001 (1 ns", "set it to 0"]);
    assert_eq!(
        e.to_string(),
        "run.sample_interval_us = 0.000001: must be 0 (no occupancy sampling) or between 0.001 (1 ns; no queue changes \
         faster) and 1e12 microseconds (1e6 s, about 11.6 days: the longest time a scenario may give): raise it, or set it to 0"
    );
    refused(&run("[run.timeseries]\ninterval_us = 0.0005"), "run.timeseries.interval_us", &["0.0005", "0.001 (1 ns", "remove the [run.timeseries]"]);
    // Without a stop time the horizon is the applications' own: here a closed loop's pauses.
    let paused = scenario(
        "[[workload]]\nkind = \"closed_loop\"\npairs = [[0, 3]]\nsize_bytes = 1\ncount = 1000\nthink_us = 1e6\n",
    );
    refused(&paused, "run.sample_interval_us", &["samples"]);
    accepted(&format!("{paused}[run]\nsample_interval_us = 0\n"));
}

// ---- unknown keys, in every table ----

/// Every table of the schema with `bogus = 1` added is refused naming `bogus` under the
/// table's key; the tagged ones say which keys their variant takes.
#[test]
fn every_table_refuses_unknown_keys() {
    let base = scenario(ONE_FLOW);
    let add = |after: &str, line: &str| {
        assert!(base.contains(after), "{after}");
        base.replacen(after, &format!("{after}{line}"), 1)
    };
    let mut cases: Vec<(String, &str)> = vec![
        (format!("bogus = 1\n{base}"), "bogus"),
        (add("kind = \"leaf_spine\"\n", "bogus = 1\n"), "topology"),
        ("[topology]\nkind = \"fat_tree\"\nk = 4\nrate_gbps = 10\nbogus = 1\n".into(), "topology"),
        (format!("{base}[routing]\nbogus = 1\n"), "routing"),
        (format!("{base}[switch]\nbogus = 1\n"), "switch"),
        (format!("{base}[switch]\nqueues = [{{ bogus = 1 }}]\n"), "switch.queues[0]"),
        (format!("{base}[host]\nbogus = 1\n"), "host"),
        (format!("{base}[run]\nbogus = 1\n"), "run"),
        (format!("{base}[run.timeseries]\ninterval_us = 1\nbogus = 1\n"), "run.timeseries"),
        (add("size_bytes = 100000", ", bogus = 1"), "workload[0].flows[0]"),
    ];
    // Every kind the schema has (a kind missing from the parser's table was reported as unknown).
    for &kind in sim::spec::TransportSpec::KINDS {
        cases.push((format!("{base}[transport]\nkind = \"{kind}\"\nbogus = 1\n"), "transport"));
        let own = format!("{ONE_FLOW}transport = {{ kind = \"{kind}\", bogus = 1 }}\n");
        cases.push((scenario(&own), "workload[0].transport"));
    }
    for body in [
        "kind = \"poisson\"\ncdf = \"google_rpc\"\nload = 0.1\nduration_ms = 1",
        "kind = \"incast\"\nquery_rate_per_host = 1\nfan_in = 1\nburst_bytes = 1\nduration_ms = 1",
        "kind = \"flow_list\"\npath = \"x.txt\"",
        "kind = \"flows\"\nflows = []",
        "kind = \"closed_loop\"\npairs = [[0, 1]]\nsize_bytes = 1\ncount = 1",
        "kind = \"barrier\"\nrounds = 1\ntransfers = [{ src = 0, dst = 1, size_bytes = 1, bogus = 1 }]",
        "kind = \"relay\"\nchain = [0, 1]\nblock_bytes = 1\nblocks = 1",
        "kind = \"approx_jobs\"\ntrace = \"fbkv\"\nscheme = \"atp\"\nmsr = 0.5\nmessages = 10",
    ] {
        let key = if body.contains("barrier") { "workload[0].transfers[0]" } else { "workload[0]" };
        let body = if body.contains("barrier") { body.to_string() } else { format!("{body}\nbogus = 1") };
        cases.push((scenario(&format!("[[workload]]\n{body}\n")), key));
    }
    for (text, at) in &cases {
        let e = Spec::from_toml_str(text).err().unwrap_or_else(|| panic!("accepted bogus in {at}: {text}"));
        assert!(e.key().starts_with(at) && e.to_string().contains("bogus"), "{at}: {e}");
    }
}

#[test]
fn every_admission_policy_and_oracle_refuses_unknown_keys_and_lists_its_own() {
    let with = |admission: &str| scenario(&format!("{ONE_FLOW}[switch]\nadmission = {admission}\n"));
    for (policy, takes) in [
        ("complete_sharing", "takes no other keys"),
        ("dynamic_thresholds", "takes no other keys"),
        ("static", "takes only `port_bytes`"),
        ("lqd", "takes no other keys"),
        ("harmonic", "takes no other keys"),
        ("abm", "`alpha_first_rtt`"),
        ("follow_lqd", "takes no other keys"),
        ("credence", "`oracle`"),
    ] {
        let e = Spec::from_toml_str(&with(&format!("{{ policy = \"{policy}\", bogus = 0.5 }}"))).unwrap_err();
        assert_eq!(e.key(), "switch.admission.bogus", "{policy}: {e}");
        assert!(e.to_string().contains(takes) && e.to_string().contains("0.5"), "{policy}: {e}");
        // And without the unknown key it parses (each policy's own keys are accepted).
        Spec::from_toml_str(&with(&format!("{{ policy = \"{policy}\" }}"))).unwrap();
    }
    // The reported case: DT's alpha belongs to the queues.
    let e = Spec::from_toml_str(&with("{ policy = \"dynamic_thresholds\", alpha = 0.5 }")).unwrap_err();
    assert_eq!(e.key(), "switch.admission.alpha", "{e}");
    assert!(e.to_string().contains("switch.queues[i].dt_alpha"), "{e}");
    for (oracle, takes) in [
        ("{ kind = \"always_accept\", bogus = 1 }", "takes no other keys"),
        ("{ kind = \"always_drop\", bogus = 1 }", "takes no other keys"),
        ("{ kind = \"forest\", bogus = 1 }", "takes only `path`"),
        ("{ kind = \"flip\", p = 0.1, inner = { kind = \"always_drop\" }, bogus = 1 }", "`inner`"),
    ] {
        let e = Spec::from_toml_str(&with(&format!("{{ policy = \"credence\", oracle = {oracle} }}"))).unwrap_err();
        assert_eq!(e.key(), "switch.admission.oracle.bogus", "{e}");
        assert!(e.to_string().contains(takes), "{e}");
    }
    let nested = with("{ policy = \"credence\", oracle = { kind = \"flip\", p = 0.1, inner = { kind = \"always_drop\", p = 1 } } }");
    let e = Spec::from_toml_str(&nested).unwrap_err();
    assert_eq!(e.key(), "switch.admission.oracle.inner.p", "{e}");
    // What is wrong inside an oracle is named there (serde named only switch.admission).
    for (oracle, key, says) in [
        ("{ kind = \"bogus\" }", "switch.admission.oracle.kind", "unknown oracle kind; expected \"forest\""),
        ("{ p = 0.1 }", "switch.admission.oracle.kind", "an oracle needs a kind"),
        ("{ kind = \"flip\", p = 0.1 }", "switch.admission.oracle.inner", "kind = \"flip\" needs inner"),
        ("{ kind = \"flip\", inner = { kind = \"forest\" } }", "switch.admission.oracle.p", "kind = \"flip\" needs p"),
        ("{ kind = \"flip\", p = 0.1, inner = { kind = \"nope\" } }", "switch.admission.oracle.inner.kind", "unknown oracle kind"),
    ] {
        let e = Spec::from_toml_str(&with(&format!("{{ policy = \"credence\", oracle = {oracle} }}"))).unwrap_err();
        assert_eq!(e.key(), key, "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
    // JSON (what Python sends) is checked the same way.
    let json = serde_json::to_string(&toml::from_str::<toml::Value>(&with("{ policy = \"lqd\", alpha = 1 }")).unwrap()).unwrap();
    assert_eq!(Spec::from_json_str(&json).unwrap_err().key(), "switch.admission.alpha");
}

// ---- anything validate accepts, run can run ----

#[test]
fn an_incast_that_cannot_find_its_senders_is_refused_at_validation_not_at_run_time() {
    // Two leaves of two hosts: a receiver has two hosts outside its leaf.
    let incast = |fan_in: u32| {
        scenario(&format!(
            "[[workload]]\nkind = \"incast\"\nquery_rate_per_host = 1000\nfan_in = {fan_in}\nburst_bytes = 3000\nsenders = \"other_leaf\"\nduration_ms = 1\n"
        ))
    };
    let valid = accepted(&incast(2));
    Simulation::new(&valid).expect("what validation accepts, a run builds");
    refused(&incast(3), "workload[0].fan_in", &["3", "other_leaf", "2 hosts outside"]);
}

#[test]
fn one_leaf_has_no_uplink_to_load_and_no_other_leaf() {
    let one_leaf = |spines: u32, keys: &str| {
        scenario(&format!(
            "[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nduration_ms = 1\n{keys}\n"
        ))
        .replace("leaves = 2\nhosts_per_leaf = 2\nspines = 1", &format!("leaves = 1\nhosts_per_leaf = 4\nspines = {spines}"))
    };
    for spines in [0, 1] {
        // It gave 0 flows without a word (no uplink, or one that no flow crosses).
        let e = refused(&one_leaf(spines, "load_reference = \"leaf_uplink\""), "workload[0].load_reference", &["one leaf", "host_link"]);
        assert_eq!(
            e.to_string(),
            "workload[0].load_reference = \"leaf_uplink\": the topology has one leaf, so no flow crosses a leaf uplink \
             and the load has no capacity to refer to: use load_reference = \"host_link\", or more leaves"
        );
        // It fell back to uniform destinations.
        refused(&one_leaf(spines, "destinations = \"other_leaf\""), "workload[0].destinations", &["\"other_leaf\"", "one leaf", "uniform"]);
        let valid = accepted(&one_leaf(spines, "load_reference = \"host_link\""));
        assert!(sim::run(&valid).unwrap().summary.finished_flows > 0);
    }
    // Two leaves have both.
    accepted(&scenario(
        "[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nduration_ms = 1\n\
         load_reference = \"leaf_uplink\"\ndestinations = \"other_leaf\"\n",
    ));
}

#[test]
fn an_entry_that_starts_at_or_after_the_stop_time_is_refused() {
    let poisson = |start: &str, stop: &str| {
        scenario(&format!(
            "[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nstart_ms = {start}\nduration_ms = 1\n\
             [run]\nstop_ms = {stop}\n"
        ))
    };
    accepted(&poisson("4.9", "5"));
    let e = refused(&poisson("5", "5"), "workload[0].start_ms", &["run.stop_ms = 5", "would start nothing"]);
    assert_eq!(
        e.to_string(),
        "workload[0].start_ms = 5: is at or after run.stop_ms = 5, so this entry would start nothing: start it \
         earlier, raise run.stop_ms, or remove the entry"
    );
    refused(&poisson("7", "5"), "workload[0].start_ms", &["run.stop_ms = 5"]);
    let incast = scenario(
        "[[workload]]\nkind = \"incast\"\nquery_rate_per_host = 1000\nfan_in = 2\nburst_bytes = 3000\nstart_ms = 2\n\
         duration_ms = 1\n[run]\nstop_ms = 1\n",
    );
    refused(&incast, "workload[0].start_ms", &["run.stop_ms = 1"]);
    let training = |start_us: &str| {
        scenario(&format!(
            "[[workload]]\nkind = \"training\"\npattern = \"ring\"\nworkers = [0, 1, 2]\nmodel_bytes = 30000\n\
             iterations = 2\nstart_us = {start_us}\n[run]\nstop_ms = 1\n"
        ))
    };
    accepted(&training("999"));
    refused(&training("1000"), "workload[0].start_us", &["1000", "run.stop_ms = 1"]);
    // Without a stop time any start is fine.
    accepted(&scenario("[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nstart_ms = 5\nduration_ms = 1\n"));
}

#[test]
fn priority_classes_beyond_eight_are_refused_and_beyond_the_queues_go_to_the_last() {
    // Documented (`switch.queues`): a class at or beyond the queues goes to the last queue.
    let flow = |prio: u32| scenario(&format!("[[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 3, size_bytes = 1000, prio = {prio} }}]\n"));
    accepted(&flow(7));
    let e = refused(&flow(8), "workload[0].flows[0].prio", &["between 0 and 7", "last queue"]);
    assert_eq!(
        e.to_string(),
        "workload[0].flows[0].prio = 8: a priority class must be between 0 and 7 (switches have at most 8 queues; a \
         class at or beyond switch.queues' length goes to the last queue)"
    );
    refused(&flow(200), "workload[0].flows[0].prio", &["200"]);
    let tcp = |ack: u32| scenario(&format!("[transport]\nkind = \"dctcp\"\nack_prio = {ack}\n{ONE_FLOW}"));
    accepted(&tcp(7));
    refused(&tcp(9), "transport.ack_prio", &["9", "between 0 and 7"]);
    let atp = scenario(&format!("[transport]\nkind = \"atp\"\nack_prio = 8\n{ONE_FLOW}"));
    refused(&atp, "transport.ack_prio", &["8"]);
    let poisson = |keys: &str| {
        scenario(&format!("[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nduration_ms = 1\n{keys}\n"))
    };
    refused(&poisson("prio = 8"), "workload[0].prio", &[]);
    refused(&poisson("prio_schedule = [[0.0, 1], [10.0, 8]]"), "workload[0].prio_schedule[1]", &["[10, 8]", "between 0 and 7"]);
    accepted(&poisson("prio = 3\nprio_schedule = [[10.0, 7]]"));
    refused(
        &scenario("[[workload]]\nkind = \"closed_loop\"\npairs = [[0, 3]]\nsize_bytes = 1000\ncount = 1\nprio = 8\n"),
        "workload[0].prio",
        &[],
    );
}

#[test]
fn a_pfabric_switch_needs_a_pfabric_transport() {
    let sw = "[switch]\nscheduler = \"pfabric\"\nadmission = { policy = \"complete_sharing\" }\nqueues = [{}]\n";
    for kind in ["dctcp", "udp", "newreno"] {
        let text = scenario(&format!("[transport]\nkind = \"{kind}\"\n{sw}{ONE_FLOW}"));
        let e = refused(&text, "switch.scheduler", &[&format!("{kind:?}"), "priority 0", "transport.kind = \"pfabric\""]);
        assert!(e.to_string().starts_with("switch.scheduler = \"pfabric\": "), "{e}");
    }
    // A mix is valid (the others' packets go first, `queue::pfabric`).
    let entry = "[[workload]]\nkind = \"flows\"\nflows = [{ src = 1, dst = 2, size_bytes = 1000 }]\ntransport = { kind = \"pfabric\" }\n";
    accepted(&scenario(&format!("{sw}{ONE_FLOW}{entry}")));
    // An entry's own transport counts, not the unused scenario's.
    let dctcp_entry = format!("{ONE_FLOW}transport = {{ kind = \"dctcp\" }}\n");
    refused(&scenario(&format!("[transport]\nkind = \"pfabric\"\n{sw}{dctcp_entry}")), "switch.scheduler", &["\"dctcp\""]);
}

#[test]
fn pfabric_keys_are_bounded_and_its_switch_needs_one_queue_and_complete_sharing() {
    let sw = "[switch]\nscheduler = \"pfabric\"\nadmission = { policy = \"complete_sharing\" }\nqueues = [{}]\n";
    let with = |transport: &str, switch: &str| scenario(&format!("[transport]\nkind = \"pfabric\"\n{transport}{switch}{ONE_FLOW}"));
    accepted(&with("", sw));
    accepted(&with(&format!("max_cwnd_pkts = {MAX_PFABRIC_WINDOW_PKTS}\ninit_cwnd_pkts = 1\nrto_us = 1.0\n"), sw));
    refused(&with(&format!("max_cwnd_pkts = {}\n", MAX_PFABRIC_WINDOW_PKTS + 1), sw), "transport.max_cwnd_pkts", &["65536"]);
    refused(&with("max_cwnd_pkts = 0\n", sw), "transport.max_cwnd_pkts", &["between 1"]);
    refused(&with("init_cwnd_pkts = 0\n", sw), "transport.init_cwnd_pkts", &[]);
    refused(&with("init_cwnd_pkts = 20\nmax_cwnd_pkts = 10\n", sw), "transport.init_cwnd_pkts", &["max_cwnd_pkts (10)"]);
    refused(&with("rto_us = 0.5\n", sw), "transport.rto_us", &["three base RTTs"]);
    refused(&with("rto_us = nan\n", sw), "transport.rto_us", &[]);
    refused(&with("probe_after_timeouts = 0\n", sw), "transport.probe_after_timeouts", &[]);
    refused(&with("rto = 45\n", sw), "transport.rto", &["unknown field"]);
    let two = sw.replace("queues = [{}]", "queues = [{}, {}]");
    refused(&with("", &two), "switch.queues", &["exactly one queue"]);
    let dt = sw.replace("admission = { policy = \"complete_sharing\" }\n", "");
    refused(&with("", &dt), "switch.admission", &["complete_sharing"]);
    let huge = sw.replace("queues = [{}]", &format!("queues = [{{ cap_bytes = {} }}]", MAX_PFABRIC_BUFFER_BYTES + 1));
    refused(&with("", &huge), "switch.queues[0].cap_bytes", &["36 KB"]);
    let max = sw.replace("queues = [{}]", &format!("queues = [{{ cap_bytes = {MAX_PFABRIC_BUFFER_BYTES} }}]"));
    accepted(&with("", &max));
}

#[test]
fn mlt_keys_are_bounded_and_a_message_holds_at_most_2_28_values() {
    let with = |transport: &str, flows: &str| scenario(&format!("[transport]\nkind = \"mlt\"\n{transport}{flows}"));
    accepted(&with("", ONE_FLOW));
    accepted(&with("value_bytes = 2\ncomplete_fraction = 1.0\nmss_bytes = 2\n", ONE_FLOW));
    refused(&with("value_bytes = 3\n", ONE_FLOW), "transport.value_bytes", &["4 (32-bit floats) or 2"]);
    refused(&with("value_bytes = 4\nmss_bytes = 3\n", ONE_FLOW), "transport.mss_bytes", &["at least one value"]);
    refused(&with("complete_fraction = 0.0\n", ONE_FLOW), "transport.complete_fraction", &["(0, 1]"]);
    refused(&with("complete_fraction = 1.01\n", ONE_FLOW), "transport.complete_fraction", &["(0, 1]"]);
    refused(&with("complete_fraction = nan\n", ONE_FLOW), "transport.complete_fraction", &["(0, 1]"]);
    refused(&with("init_cwnd_pkts = 0\n", ONE_FLOW), "transport.init_cwnd_pkts", &[]);
    refused(&with("g = 0.0\n", ONE_FLOW), "transport.g", &["(0, 1]"]);
    refused(&with("init_alpha = 2.0\n", ONE_FLOW), "transport.init_alpha", &["[0, 1]"]);
    refused(&with("rto_us = 0\n", ONE_FLOW), "transport.rto_us", &[]);
    refused(&with("dupack_threshold = 0\n", ONE_FLOW), "transport.dupack_threshold", &[]);
    refused(&with("min_rto_us = 100\n", ONE_FLOW), "transport.min_rto_us", &["unknown field"]);
    let big = |size: u64| format!("[[workload]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 3, size_bytes = {size} }}]\n");
    accepted(&with("", &big(4 << 28)));
    refused(&with("", &big((4 << 28) + 1)), "workload[0].flows[0].size_bytes", &["268435456 values", "split it"]);
    accepted(&with("value_bytes = 2\n", &big(2 << 28)));
    refused(&with("value_bytes = 2\n", &big((2 << 28) + 1)), "workload[0].flows[0].size_bytes", &["268435456 values"]);
}

#[test]
fn a_host_that_does_not_exist_names_the_ids_that_do() {
    // It said "hosts 0..4" (Rust's exclusive range) for hosts 0 to 3.
    let text = scenario("[[workload]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 4, size_bytes = 1 }]\n");
    let e = refused(&text, "workload[0].flows[0].dst", &["no such host (the topology has hosts 0 to 3)"]);
    assert!(!e.to_string().contains(".."), "{e}");
}

#[test]
fn a_negative_integer_is_told_its_range_not_its_rust_type() {
    // It said "invalid value: integer `-1`, expected u32".
    let text = scenario("[[workload]]\nkind = \"flows\"\nflows = [{ src = -1, dst = 3, size_bytes = 1 }]\n");
    let e = validate(&text).expect_err("a negative host");
    assert_eq!(e.key(), "workload[0].flows[0].src", "{e}");
    assert!(e.to_string().ends_with("invalid value: integer `-1`, expected an integer from 0 to 4294967295"), "{e}");
    assert_eq!(e.message(), "invalid value: integer `-1`, expected an integer from 0 to 4294967295");
}
