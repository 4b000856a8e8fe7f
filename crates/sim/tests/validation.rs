//! Never crash, never lie: every bound of `sim::spec::limits` is checked at validation (just
//! inside is accepted, just outside is refused with the key, the value and the range named),
//! every table refuses keys it does not have, scenarios that would not fit in memory are
//! refused with an estimate, and what validation cannot bound the engine saturates instead of
//! wrapping.

use std::path::Path;

use sim::app::{AnyApp, AppCtx, Application, TransferReq};
use sim::{Simulation, Spec, ValidSpec};
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

#[track_caller]
fn accepted(text: &str) -> ValidSpec {
    Spec::from_toml_str(text).and_then(|s| s.validate(Path::new("."))).unwrap_or_else(|e| panic!("refused: {e}"))
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
