//! Runs every scheduler over a coflow trace and prints wall time, average and p95 CCT; in the
//! coflowsim-compatible mode, also how many coflows match the reference outputs exactly.
//!
//! `cargo run --release -p slacknet-coflow --example coflow_bench -- <trace> [reference dir]`
//! (the reference dir defaults to `coflowsim_b61f209_results` next to the trace).

use std::path::PathBuf;
use std::time::Instant;

use coflow::coflowsim;
use coflow::trace::Trace;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1).map(PathBuf::from) else {
        eprintln!("usage: coflow_bench <trace> [reference dir] [compat names...]");
        std::process::exit(2);
    };
    let trace = Trace::from_path(&path).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1);
    });
    let refs = args
        .get(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| path.parent().unwrap_or(&PathBuf::from(".")).join("coflowsim_b61f209_results"));
    let only: Vec<String> = args.iter().skip(3).map(|s| s.to_uppercase()).collect();
    println!("trace: {} coflows, {} flows, {} ports", trace.coflows.len(), trace.num_flows(), trace.num_ports);
    println!("coflowsim-compatible mode:");
    for algo in coflowsim::Algo::ALL {
        if !only.is_empty() && !only.iter().any(|n| n == algo.name()) {
            continue;
        }
        let t0 = Instant::now();
        let recs = coflowsim::run(&trace, algo);
        let wall = t0.elapsed().as_secs_f64();
        let mut d: Vec<f64> = recs.iter().map(|r| r.duration_ms / 1024.0).collect();
        let (avg, p95) = avg_p95(&mut d);
        let matched = match std::fs::read_to_string(refs.join(format!("{}.out", algo.name()))) {
            Ok(text) => {
                let reference = coflowsim::parse_reference(&text).expect("reference file");
                let c = coflowsim::compare(&recs, &reference, false);
                format!("{}/{} exact, max rel diff of CCT {:.2e}", c.num_exact, reference.len(), c.max_rel_diff)
            }
            Err(_) => "no reference".to_string(),
        };
        println!("  {:<6} {:>8.3} s   avg CCT {:>9.3} s  p95 {:>9.3} s   {}", algo.name(), wall, avg, p95, matched);
    }
}

/// Mean and 95th percentile (nearest rank) of `v`, which it sorts.
fn avg_p95(v: &mut [f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let avg = v.iter().sum::<f64>() / v.len() as f64;
    let rank = ((0.95 * v.len() as f64).ceil() as usize).clamp(1, v.len());
    (avg, v[rank - 1])
}
