//! Print Credence's Figure 14 (discrete-time model): LQD/Credence and LQD/DT throughput
//! ratios as the probability of a false prediction grows.
//!
//! `cargo run --release -p slacknet-sim --example credence_figure14 [ports buffer slots
//! bursts_per_slot]` (defaults: `sim::credence::dtmodel::Figure14::default()`).

use sim::credence::dtmodel::{figure14, Figure14, Model};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut cfg = Figure14::default();
    let num = |i: usize| args.get(i).map(|s| s.parse::<f64>().expect("a number"));
    if let (Some(n), Some(b)) = (num(0), num(1)) {
        cfg.model = Model::new(n as usize, b as u64);
    }
    if let Some(s) = num(2) {
        cfg.slots = s as usize;
    }
    if let Some(r) = num(3) {
        cfg.bursts_per_slot = r;
    }
    println!(
        "N = {}, B = {}, {} slots, {} bursts of B per slot, DT alpha {}",
        cfg.model.ports, cfg.model.buffer, cfg.slots, cfg.bursts_per_slot, cfg.dt_alpha
    );
    println!("   p   LQD/Credence   LQD/DT");
    for (p, c, dt) in figure14(&cfg) {
        println!("{p:4.1}   {c:12.4}   {dt:6.4}");
    }
}
