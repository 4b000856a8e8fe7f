//! `cargo run --release -p slacknet-sim --example nic_sweep -- SCENARIO.toml VARIANT...`: run one
//! scenario under several host NIC models and print per-class FCT slowdowns (the classes of
//! `python/slacknet/analysis.py`: short < 100 KB, long >= 1 MB, incast; median and p99 as numpy
//! computes them, linear interpolation) as a Markdown table.
//!
//! A variant is `SCHEDULER` or `SCHEDULER:TSQ`, with `SCHEDULER` a `host.scheduler` value
//! (`fifo`, `per_flow_rr`) and `TSQ` a `host.tsq_pkts` limit in full packets or `off` (0).
//! Without a `:TSQ`, the scenario's own `tsq_pkts` (or its default) stays. Example: `nic_sweep experiments/scale/fat_tree_k8.toml fifo:off per_flow_rr:off
//! fifo:2 fifo:10 per_flow_rr:2 per_flow_rr:10`. Used to measure issue 7 (README, "Host NICs").

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

fn variant_toml(base: &toml::Value, variant: &str) -> Result<String, String> {
    let mut v = base.clone();
    let root = v.as_table_mut().ok_or("the scenario is not a table")?;
    let host = root
        .entry("host")
        .or_insert_with(|| toml::Value::Table(Default::default()))
        .as_table_mut()
        .ok_or("[host] is not a table")?;
    let (sched, tsq) = match variant.split_once(':') {
        Some((s, t)) => (s, Some(t)),
        None => (variant, None),
    };
    host.insert("scheduler".into(), toml::Value::String(sched.into()));
    match tsq {
        None => {}
        Some("off") => {
            host.insert("tsq_pkts".into(), toml::Value::Integer(0));
        }
        Some(n) => {
            let pkts: u32 = n.parse().map_err(|_| format!("{variant}: TSQ must be a number of packets or `off`"))?;
            host.insert("tsq_pkts".into(), toml::Value::Integer(i64::from(pkts)));
        }
    }
    toml::to_string(&v).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: nic_sweep SCENARIO.toml VARIANT...   (VARIANT: fifo | per_flow_rr [:TSQ_PACKETS | :off])");
        return ExitCode::from(2);
    }
    let path = Path::new(&args[0]);
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let base: toml::Value = match toml::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    println!("{}", path.display());
    println!();
    println!("| NIC | short flows | short p50 | short p99 | long flows | long p50 | long p99 | incast p50 | incast p99 | all p50 | all p99 | NIC drops | switch drops | RTOs | max NIC backlog (KB) | events (M) | wall (s) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for variant in &args[1..] {
        let valid = match variant_toml(&base, variant)
            .map_err(|e| e.to_string())
            .and_then(|t| sim::Spec::from_toml_str(&t).and_then(|s| s.validate(dir)).map_err(|e| e.to_string()))
        {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {variant}: {e}");
                return ExitCode::from(2);
            }
        };
        let t0 = Instant::now();
        let mut simulation = match sim::Simulation::new(&valid) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        simulation.run_to_end();
        let wall = t0.elapsed().as_secs_f64();
        let out = simulation.output();
        // short, long, incast (flows between 100 KB and 1 MB count in `all` only).
        let mut class: [Vec<f64>; 3] = Default::default();
        let mut all = Vec::new();
        for r in out.records.iter().filter(|r| r.finished) {
            if r.incast {
                class[2].push(r.slowdown);
            } else if r.size_bytes < 100_000 {
                class[0].push(r.slowdown);
            } else if r.size_bytes >= 1_000_000 {
                class[1].push(r.slowdown);
            }
            all.push(r.slowdown);
        }
        for v in &mut class {
            v.sort_by(f64::total_cmp);
        }
        all.sort_by(f64::total_cmp);
        let unfinished = out.records.iter().filter(|r| !r.finished).count();
        let num_hosts = out.records.iter().map(|r| r.src.max(r.dst)).max().map_or(0, |h| h + 1);
        let max_nic = (0..num_hosts).map(|h| simulation.nic_max_backlog_bytes(h)).max().unwrap_or(0);
        let s = &out.summary;
        let short_n = out.records.iter().filter(|r| !r.incast && r.size_bytes < 100_000).count();
        let long_n = out.records.iter().filter(|r| !r.incast && r.size_bytes >= 1_000_000).count();
        println!(
            "| {variant}{} | {short_n} | {:.3} | {:.2} | {long_n} | {:.3} | {:.2} | {:.3} | {:.2} | {:.3} | {:.2} | {} | {} | {} | {:.1} | {:.1} | {wall:.1} |",
            if unfinished > 0 { format!(" ({unfinished} unfinished)") } else { String::new() },
            percentile(&class[0], 0.5),
            percentile(&class[0], 0.99),
            percentile(&class[1], 0.5),
            percentile(&class[1], 0.99),
            percentile(&class[2], 0.5),
            percentile(&class[2], 0.99),
            percentile(&all, 0.5),
            percentile(&all, 0.99),
            s.nic_drops,
            s.switch_drops,
            s.num_rtos,
            max_nic as f64 / 1e3,
            s.events as f64 / 1e6,
        );
    }
    ExitCode::SUCCESS
}
