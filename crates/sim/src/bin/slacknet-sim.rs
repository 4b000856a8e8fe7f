//! `slacknet-sim [SCENARIO.toml]`: run one scenario natively (no Python) and print its
//! summary with wall time, events/s, packet-hops/s and peak memory. Used by `make bench` and
//! for profiling; the user-facing CLI is the Python `slacknet` command.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// mimalloc, not the system's malloc (the `mimalloc` feature; why: the workspace's Cargo.toml).
/// Results are the same byte for byte either way: nothing in a run depends on an address.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// This process's CPU time (user + system) in seconds, from `/proc/self/stat`: fields 14 and
/// 15 count clock ticks of `USER_HZ`, which Linux fixes at 100 on every architecture this
/// builds for. The rates below are per CPU second because wall time swings with whatever
/// else the machine runs (a 2-core machine shared with a build doubles it).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime.saturating_add(stime) as f64 / 100.0)
}

/// The largest scenario file read (the Python front end's bound, `config.MAX_SCENARIO_BYTES`).
const MAX_SCENARIO_BYTES: u64 = 16 << 20;

/// A scenario file's text: a regular file of at most [`MAX_SCENARIO_BYTES`]
/// ([`sim::textfile::read_text_file`]).
fn read_scenario(p: &str) -> Result<String, String> {
    use sim::textfile::{read_text_file, TextFileError};
    read_text_file(Path::new(p), MAX_SCENARIO_BYTES).map_err(|e| match e {
        TextFileError::Folder => "a folder, not a scenario file".into(),
        TextFileError::NotRegular => "not a regular file (a FIFO, device or socket); give a scenario TOML file".into(),
        TextFileError::TooLarge => format!("larger than {MAX_SCENARIO_BYTES} bytes, too large for a scenario file"),
        TextFileError::NotUtf8 { .. } => "stream did not contain valid UTF-8".into(),
        TextFileError::Io(e) => e.to_string(),
    })
}

fn main() -> ExitCode {
    #[cfg(feature = "mimalloc")]
    sim::heap::keep_freed_memory();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") || args.len() > 1 {
        eprintln!("usage: slacknet-sim [SCENARIO.toml]   (built-in default scenario without an argument)");
        return ExitCode::from(2);
    }
    let (text, base) = match args.first() {
        Some(p) => match read_scenario(p) {
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
    let cpu0 = cpu_seconds();
    let mut simulation = match sim::Simulation::new(&valid) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let setup = t0.elapsed().as_secs_f64();
    // The records are folded into the mean slowdown as the run goes and dropped, so that
    // peak memory follows the flows in flight (what `make bench` reports).
    let mut slowdowns = Slowdowns::default();
    let mut most_held = 0;
    while simulation.advance(1 << 20) {
        slowdowns.add(&simulation.take_records().records);
        most_held = most_held.max(simulation.held_transfers());
    }
    most_held = most_held.max(simulation.held_transfers());
    // The run is done: this takes every record left.
    slowdowns.add(&simulation.take_records().records);
    let wall = t0.elapsed().as_secs_f64();
    let cpu = match (cpu0, cpu_seconds()) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let out = simulation.output();
    slowdowns.most_held = most_held;
    match print_summary(&valid, &out, &slowdowns, Times { wall, cpu, setup }) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`slacknet-sim | head`) is the reader's choice, not a crash.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write the summary: {e}");
            ExitCode::from(1)
        }
    }
}

/// The sum and count of the finished flows' slowdowns, and the most transfers whose state
/// the run held at once (after taking the records of those that ended).
#[derive(Default)]
struct Slowdowns {
    sum: f64,
    count: u64,
    most_held: usize,
}

impl Slowdowns {
    fn add(&mut self, records: &[sim::FctRecord]) {
        for r in records.iter().filter(|r| r.finished) {
            self.sum += r.slowdown;
            self.count += 1;
        }
    }
}

/// Wall and CPU seconds of the run (setup included) and of its setup alone.
struct Times {
    wall: f64,
    cpu: Option<f64>,
    setup: f64,
}

fn print_summary(
    valid: &sim::ValidSpec,
    out: &sim::Output,
    slowdowns: &Slowdowns,
    t: Times,
) -> std::io::Result<()> {
    let s = &out.summary;
    let mut w = std::io::stdout().lock();
    writeln!(w, "scenario          {}", valid.spec().name)?;
    write!(w, "flows             {} ({} finished", s.num_flows, s.finished_flows)?;
    if s.given_up_flows > 0 {
        write!(w, ", {} gave up", s.given_up_flows)?;
    }
    if s.cancelled_flows > 0 {
        write!(w, ", {} cancelled", s.cancelled_flows)?;
    }
    writeln!(w, ")")?;
    writeln!(w, "flows held        {} at most (state and records not yet written out)", slowdowns.most_held)?;
    writeln!(w, "simulated time    {:.3} ms", s.sim_end_ps as f64 / 1e9)?;
    if slowdowns.count == 0 {
        writeln!(w, "mean slowdown     n/a (no flow finished)")?;
    } else {
        writeln!(w, "mean slowdown     {:.3}", slowdowns.sum / slowdowns.count as f64)?;
    }
    writeln!(w, "switch drops      {}", s.switch_drops)?;
    writeln!(w, "ecn marks         {}", s.ecn_marks)?;
    writeln!(w, "events            {}", s.events)?;
    writeln!(w, "packet-hops       {}", s.packet_hops)?;
    writeln!(w, "wall time         {:.3} s (setup {:.3} s)", t.wall, t.setup)?;
    // Rates per CPU second where the CPU time is known (10 ms ticks: a run shorter than a
    // second falls back to wall time), per wall second otherwise; the line says which.
    let (per, what) = match t.cpu {
        Some(c) if c >= 1.0 => (c, "per CPU s"),
        _ => (t.wall, "per wall s"),
    };
    match t.cpu {
        Some(c) => writeln!(w, "cpu time          {c:.2} s (user + system)")?,
        None => writeln!(w, "cpu time          n/a")?,
    }
    writeln!(w, "events/s          {:.3e} ({what})", s.events as f64 / per)?;
    writeln!(w, "packet-hops/s     {:.3e} ({what})", s.packet_hops as f64 / per)?;
    match peak_rss_kib() {
        Some(k) => writeln!(w, "peak memory       {:.1} MB", k as f64 / 1024.0),
        None => writeln!(w, "peak memory       n/a"),
    }
}
