//! The Credence-paper policies (Harmonic, ABM, FollowLQD, Credence) run in the packet
//! simulator: drop-tail (never push out), never overfill a buffer, conserve bytes, and are
//! deterministic.

use std::path::Path;

use sim::metrics::Output;
use sim::Spec;

const LEAF_SPINE: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 40
host_delay_ns = 1000
fabric_delay_ns = 2000
"#;

fn run(admission: &str) -> Output {
    let text = format!(
        "{LEAF_SPINE}\n[switch]\nbuffer_bytes = 60000\nadmission = {admission}\n[run]\nstop_ms = 3\n\
         [[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.8\nduration_ms = 5\n\
         [[workload]]\nkind = \"incast\"\nquery_rate_per_host = 2000\nfan_in = 6\nburst_bytes = 300000\nduration_ms = 5\n"
    );
    let spec = Spec::from_toml_str(&text).unwrap_or_else(|e| panic!("bad test spec: {e}"));
    let valid = spec.validate(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("valid test spec");
    sim::run(&valid).expect("run")
}

const POLICIES: [&str; 7] = [
    r#"{ policy = "harmonic" }"#,
    r#"{ policy = "abm" }"#,
    r#"{ policy = "follow_lqd" }"#,
    r#"{ policy = "credence", oracle = { kind = "always_accept" } }"#,
    r#"{ policy = "credence", oracle = { kind = "always_drop" } }"#,
    r#"{ policy = "credence", oracle = { kind = "flip", p = 0.1, inner = { kind = "always_accept" } } }"#,
    r#"{ policy = "credence", oracle = { kind = "forest", path = "src/credence/testdata/forest_4x4.json" } }"#,
];

#[test]
fn drop_tail_policies_conserve_bytes_and_never_push_out() {
    for policy in POLICIES {
        let out = run(policy);
        let s = &out.summary;
        assert!(s.switch_drops > 0, "{policy}: the scenario should drop");
        assert_eq!(s.bytes_sent, s.bytes_delivered + s.bytes_dropped + s.bytes_in_flight, "{policy}");
        for sw in &out.switches {
            assert_eq!(sw.drops_pushout, 0, "{policy}");
            assert!(sw.max_occupancy_bytes <= sw.buffer_bytes, "{policy}");
            assert_eq!(sw.enqueued_bytes, sw.dequeued_bytes + sw.final_occupancy_bytes, "{policy}");
        }
    }
}

#[test]
fn runs_are_deterministic() {
    for policy in [POLICIES[1], POLICIES[5]] {
        // Debug text, not `==`: unfinished flows have a NaN slowdown.
        assert_eq!(format!("{:?}", run(policy).records), format!("{:?}", run(policy).records), "{policy}");
    }
}
