//! Prints the data of the slides' intra-coflow results as CSV-like tables, each followed by
//! the published shapes and whether ours show them: the shuffle table (standard vs MADD on
//! scenarios A, B, C) and Figures 4.7-4.11 (broadcast).
//!
//! `cargo run --release -p slacknet-coflow --example broadcast_figures [--quick]`
//! (`--quick`: fewer receivers and smaller data, seconds in debug builds).

use coflow::broadcast::figures::{self, CdfRow, FigureRow, ShapeCheck};
use coflow::broadcast::MB;
use coflow::shuffle::abc_table;

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
    let (n, sizes, big, seeds) = if quick {
        (20, vec![10e6, 100e6], 100e6, 1)
    } else {
        (100, vec![10e6, 100e6, 1e9], 1e9, 1)
    };
    let mut failed = 0;

    println!("# Shuffle: standard (each reducer fetches from at most K mappers at once) vs MADD, scenarios A/B/C");
    println!("topology,k,standard_s,standard_std_s,madd_s,speedup,theoretical_speedup,published_standard_s,published_madd_s,published_speedup,published_theoretical_speedup");
    for k in [3, 5] {
        for r in abc_table(k, 20, 1)? {
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
    }

    let rows = figures::figure_4_7(&sizes, n, seeds, 1)?;
    print_rows(
        &format!("Figure 4.7 [EC2]: completion time vs data size, {n} receivers"),
        &rows,
    );
    failed += print_checks(&figures::check_4_7(&rows));

    let cdf = figures::figure_4_8(big, n, 1)?;
    let title = format!(
        "Figure 4.8 [EC2]: per-receiver completion times, {:.0} MB to {n} receivers",
        big / 1e6
    );
    print_cdf(&title, &cdf, if quick { 1 } else { 10 });
    failed += print_checks(&figures::check_4_8(&cdf));
    let slow = figures::figure_4_8_slow_senders(big, n, 0.1, 0.5, 1)?;
    print_cdf(
        "Figure 4.8 variant: 10% of the receivers send at only 0.5 Gbit/s (stragglers)",
        &slow,
        if quick { 1 } else { 10 },
    );
    println!("(sensitivity variant: its checks are informative, not counted)");
    print_checks(&figures::check_4_8(&slow));

    let counts: Vec<usize> = if quick {
        vec![1, 5, 10, 20]
    } else {
        vec![1, 5, 10, 25, 50, 100]
    };
    let rows = figures::figure_4_9(10e6, &counts, seeds, 1)?;
    print_rows(
        "Figure 4.9 [EC2]: completion time for 10 MB vs number of receivers",
        &rows,
    );
    failed += print_checks(&figures::check_4_9(&rows));

    let blocks: Vec<f64> = [0.25, 1.0, 4.0, 16.0, 64.0, 256.0]
        .iter()
        .map(|b| b * MB)
        .collect();
    let rows = figures::figure_4_10(big, n, &blocks, seeds, 1)?;
    print_rows(
        &format!(
            "Figure 4.10 [EC2]: Cornet completion time vs block size, {:.0} MB to {n} receivers",
            big / 1e6
        ),
        &rows,
    );
    failed += print_checks(&figures::check_4_10(&rows));

    let cross: &[f64] = if quick { &[1.0] } else { &[0.5, 1.0, 2.0, 5.0] };
    let rows = figures::figure_4_11(&[100e6, 200e6], cross, if quick { 3 } else { 10 }, 1)?;
    print_rows("Figure 4.11 [DETERlab]: Cornet vs CornetTopology vs CornetClustering, 30 receivers in 3 racks", &rows);
    failed += print_checks(&figures::check_4_11(&rows));

    println!("\n{failed} published shape(s) not reproduced");
    Ok(())
}
