//! Write LQD's trace in the discrete-time model as CSV (features of every arrival and whether
//! LQD dropped it), the training data of a Credence drop oracle (Credence §4.1).
//!
//! `cargo run --release -p slacknet-sim --example credence_lqd_trace [seed] > trace.csv`
//! (the arrival sequence of `Figure14::default()` with the given seed).

use sim::credence::dtmodel::{lqd_trace, poisson_bursts, Figure14};
use sim::credence::features::FEATURE_NAMES;

fn main() {
    let seed = std::env::args().nth(1).map_or(14, |s| s.parse().expect("a seed"));
    let f = Figure14::default();
    let m = f.model;
    let seq = poisson_bursts(&m, m.buffer, f.slots, f.bursts_per_slot, seed);
    println!("{},drop", FEATURE_NAMES.join(","));
    for (x, drop) in lqd_trace(&m, &seq) {
        println!("{},{},{},{},{}", x[0], x[1], x[2], x[3], drop as u8);
    }
}
