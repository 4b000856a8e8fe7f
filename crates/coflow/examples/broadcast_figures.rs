//! Prints the data of the slides' intra-coflow results as CSV-like tables, each followed by
//! the published shapes and whether ours show them: the shuffle table (standard vs MADD on
//! scenarios A, B, C) and Figures 4.7-4.11 (broadcast).
//!
//! `cargo run --release -p slacknet-coflow --example broadcast_figures [--quick]`
//! (`--quick`: fewer receivers and smaller data, seconds in debug builds).

use coflow::broadcast::figures::{self, CdfRow, FigureRow, ShapeCheck};

fn print_rows(title: &str, rows: &[FigureRow]) {
    println!("\n# {title}");
    println!("mechanism,bytes,num_receivers,block_bytes,cross_rack_gbps,completion_s,completion_std_s,lower_bound_s");
    for r in rows {
        println!(
            "{},{:.0},{},{:.0},{},{:.4},{:.4},{:.4}",
            r.mechanism,
            r.bytes,
            r.num_receivers,
            r.block_bytes,
            r.cross_rack_gbps,
            r.completion_s,
            r.completion_std_s,
            r.lower_bound_s
        );
    }
}

fn print_cdf(title: &str, rows: &[CdfRow], every: usize) {
    println!("\n# {title} (every {every}th receiver and the last)");
    println!("mechanism,rank,fraction,finish_s");
    for r in rows {
        let n = (r.rank as f64 / r.fraction).round() as usize;
        if r.rank % every == 1 || every == 1 || r.rank == n {
            println!(
                "{},{},{:.2},{:.4}",
                r.mechanism, r.rank, r.fraction, r.finish_s
            );
        }
    }
}

fn print_checks(checks: &[ShapeCheck]) -> usize {
    for c in checks {
        println!(
            "shape {} [{}] {}: {}",
            c.figure,
            if c.holds { "holds" } else { "DOES NOT HOLD" },
            c.expectation,
            c.detail
        );
    }
    checks.iter().filter(|c| !c.holds).count()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let quick = std::env::args().any(|a| a == "--quick");
    let f = figures::all(quick)?;
    let n = f.fig_4_8.iter().map(|r| (r.rank as f64 / r.fraction).round() as usize).max().unwrap_or(0);
    let big = f.fig_4_10.first().map_or(0.0, |r| r.bytes);

    println!("# Shuffle: standard (each reducer fetches from at most K mappers at once) vs MADD, scenarios A/B/C");
    println!("topology,k,standard_s,standard_std_s,madd_s,speedup,theoretical_speedup,published_standard_s,published_madd_s,published_speedup,published_theoretical_speedup");
    for (k, r) in &f.abc {
        println!(
            "{},{k},{:.1},{:.1},{:.1},{:.0}%,{:.0}%,{},{},{:.0}%,{:.0}%",
            r.topology,
            r.standard_s,
            r.standard_std_s,
            r.madd_s,
            100.0 * r.speedup,
            100.0 * r.theoretical_speedup,
            r.published_standard_s,
            r.published_madd_s,
            100.0 * r.published_speedup,
            100.0 * r.published_theoretical_speedup
        );
    }
    let shown = |fig: &str| f.checks.iter().filter(|c| c.figure == fig).cloned().collect::<Vec<_>>();
    let mut failed = 0;
    print_rows(&format!("Figure 4.7 [EC2]: completion time vs data size, {n} receivers"), &f.fig_4_7);
    failed += print_checks(&shown("4.7"));
    let title = format!("Figure 4.8 [EC2]: per-receiver completion times, {:.0} MB to {n} receivers", big / 1e6);
    print_cdf(&title, &f.fig_4_8, if quick { 1 } else { 10 });
    failed += print_checks(&shown("4.8"));
    print_cdf(
        "Figure 4.8 variant: 10% of the receivers send at only 0.5 Gbit/s (stragglers)",
        &f.fig_4_8_slow,
        if quick { 1 } else { 10 },
    );
    println!("(sensitivity variant: its checks are informative, not counted)");
    print_checks(&f.variant_checks);
    print_rows("Figure 4.9 [EC2]: completion time for 10 MB vs number of receivers", &f.fig_4_9);
    failed += print_checks(&shown("4.9"));
    print_rows(
        &format!("Figure 4.10 [EC2]: Cornet completion time vs block size, {:.0} MB to {n} receivers", big / 1e6),
        &f.fig_4_10,
    );
    failed += print_checks(&shown("4.10"));
    print_rows("Figure 4.11 [DETERlab]: Cornet vs CornetTopology vs CornetClustering, 30 receivers in 3 racks", &f.fig_4_11);
    failed += print_checks(&shown("4.11"));
    for (title, rows) in [("Figure 4.14 [EC2]: logistic regression, 30 machines", &f.fig_4_14), ("Figure 4.15 [EC2]: collaborative filtering", &f.fig_4_15)] {
        println!("\n# {title}");
        println!("machines,variant,compute_s,broadcast_s,shuffle_s,total_s");
        for r in rows {
            println!("{},{},{:.2},{:.2},{:.2},{:.2}", r.machines, r.variant, r.compute_s, r.broadcast_s, r.shuffle_s, r.total_s);
        }
    }
    failed += print_checks(&shown("4.14"));
    failed += print_checks(&shown("4.15"));
    println!("\n{failed} published shape(s) not reproduced");
    Ok(())
}
