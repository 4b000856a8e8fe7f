//! Print Credence's Figure 14 (discrete-time model) over seeds: LQD/Credence and LQD/DT
//! throughput ratios as the probability of a false prediction grows, as mean ± std (min-max)
//! over the seeds, and per DT rule the crossing point (the largest flip probability at which
//! Credence is still better than DT) per seed.
//!
//! `cargo run --release -p slacknet-sim --example credence_figure14 [seeds ports buffer slots
//! bursts_per_slot]` (defaults: seeds 1-30 as `FIGURE14_SEEDS`, the rest
//! `sim::credence::dtmodel::Figure14::default()`).

use std::collections::BTreeMap;
use std::time::Instant;

use sim::admission::DtRule;
use sim::credence::dtmodel::{figure14_seeds, Figure14, Model, Spread, FIGURE14_SEEDS};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut cfg = Figure14::default();
    let num = |i: usize| args.get(i).map(|s| s.parse::<f64>().expect("a number"));
    let seeds: Vec<u64> = match num(0) {
        Some(n) => (1..=n as u64).collect(),
        None => FIGURE14_SEEDS.collect(),
    };
    if let (Some(n), Some(b)) = (num(1), num(2)) {
        cfg.model = Model::new(n as usize, b as u64);
    }
    if let Some(s) = num(3) {
        cfg.slots = s as usize;
    }
    if let Some(r) = num(4) {
        cfg.bursts_per_slot = r;
    }
    println!(
        "N = {}, B = {}, {} slots, {} bursts of B per slot, DT alpha {}, seeds {}-{}",
        cfg.model.ports,
        cfg.model.buffer,
        cfg.slots,
        cfg.bursts_per_slot,
        cfg.dt_alpha,
        seeds[0],
        seeds[seeds.len() - 1]
    );
    let start = Instant::now();
    let runs = figure14_seeds(&cfg, &seeds);
    let elapsed = start.elapsed();
    println!("   p   LQD/Credence, mean ± std (min-max) over {} seeds", runs.len());
    for (i, p) in cfg.flip_probabilities.iter().enumerate() {
        println!("{p:4.1}   {}", Spread::of(&runs.iter().map(|r| r.credence[i].1).collect::<Vec<_>>()));
    }
    for rule in DtRule::ALL {
        let dt = Spread::of(&runs.iter().map(|r| r.dt_ratio(rule).unwrap()).collect::<Vec<_>>());
        let mut crossings = Vec::new();
        let mut counts = BTreeMap::new();
        for r in &runs {
            match r.crossing(rule) {
                Some(p) => {
                    crossings.push(p);
                    *counts.entry(format!("{p:.1}")).or_insert(0) += 1;
                }
                None => *counts.entry("never".to_string()).or_insert(0) += 1,
            }
        }
        let dist: Vec<String> = counts.iter().map(|(p, n)| format!("{p} in {n}")).collect();
        println!("DT {}: LQD/DT {dt}", rule.formula());
        if !crossings.is_empty() {
            println!("  crossing per seed {:.2}: {}", Spread::of(&crossings), dist.join(", "));
        }
    }
    println!("{} runs in {:.3} s", runs.len(), elapsed.as_secs_f64());
}
