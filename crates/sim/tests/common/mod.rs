//! Helpers shared by the integration tests: run a TOML scenario, and the one-switch "star"
//! topology several tests use.

#![allow(dead_code)] // each test file uses its own subset

use std::path::Path;

use sim::metrics::Output;
use sim::Spec;

/// Parse, validate (relative paths against `base`) and run a scenario; panics on any error.
pub(crate) fn run_in(text: &str, base: &Path) -> Output {
    let spec = Spec::from_toml_str(text).unwrap_or_else(|e| panic!("bad test spec: {e}"));
    let valid = spec.validate(base).unwrap_or_else(|e| panic!("invalid test spec: {e}"));
    sim::run(&valid).expect("run")
}

/// [`run_in`] with paths relative to the crate.
pub(crate) fn run_toml(text: &str) -> Output {
    run_in(text, Path::new(env!("CARGO_MANIFEST_DIR")))
}

/// One leaf with `hosts` hosts at 10 Gb/s and 1 us links, plus `extra`.
pub(crate) fn star(hosts: u32, extra: &str) -> String {
    format!(
        r#"
[topology]
kind = "leaf_spine"
leaves = 1
hosts_per_leaf = {hosts}
spines = 0
host_rate_gbps = 10
fabric_rate_gbps = 10
host_delay_ns = 1000
{extra}
"#
    )
}
