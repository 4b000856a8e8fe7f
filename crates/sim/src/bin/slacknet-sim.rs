//! `slacknet-sim [SCENARIO.toml]`: run one scenario natively (no Python) and print its
//! summary with wall time, events/s, packet-hops/s and peak memory. Used by `make bench` and
//! for profiling; the user-facing CLI is the Python `slacknet` command.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") || args.len() > 1 {
        eprintln!("usage: slacknet-sim [SCENARIO.toml]   (built-in default scenario without an argument)");
        return ExitCode::from(2);
    }
    let (text, base) = match args.first() {
        Some(p) => match std::fs::read_to_string(p) {
            Ok(t) => (t, Path::new(p).parent().unwrap_or(Path::new(".")).to_path_buf()),
            Err(e) => {
                eprintln!("error: cannot read scenario {p}: {e}");
                return ExitCode::from(2);
            }
        },
        None => (sim::spec::default_scenario_toml().to_string(), std::env::current_dir().unwrap_or_default()),
    };
    let valid = match sim::Spec::from_toml_str(&text).and_then(|s| s.validate(&base)) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
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
    let setup = t0.elapsed().as_secs_f64();
    simulation.run_to_end();
    let wall = t0.elapsed().as_secs_f64();
    let out = simulation.output();
    let s = &out.summary;
    let finished: Vec<f64> = out.records.iter().filter(|r| r.finished).map(|r| r.slowdown).collect();
    let mean_sd = finished.iter().sum::<f64>() / finished.len().max(1) as f64;
    println!("scenario          {}", valid.spec().name);
    println!("flows             {} ({} finished)", s.num_flows, s.finished_flows);
    println!("simulated time    {:.3} ms", s.sim_end_ps as f64 / 1e9);
    println!("mean slowdown     {mean_sd:.3}");
    println!("switch drops      {}", s.switch_drops);
    println!("ecn marks         {}", s.ecn_marks);
    println!("events            {}", s.events);
    println!("packet-hops       {}", s.packet_hops);
    println!("wall time         {wall:.3} s (setup {setup:.3} s)");
    println!("events/s          {:.3e}", s.events as f64 / wall);
    println!("packet-hops/s     {:.3e}", s.packet_hops as f64 / wall);
    match peak_rss_kib() {
        Some(k) => println!("peak memory       {:.1} MB", k as f64 / 1024.0),
        None => println!("peak memory       n/a"),
    }
    ExitCode::SUCCESS
}
