//! Prints the intra-coflow results at both fidelities (`coflow::packet::fidelity`): the
//! shuffle scenarios A, B, C and the broadcasts, flow level next to packet level, and the
//! checks.
//!
//! `cargo run --release -p slacknet-coflow --example packet_fidelity [--full]`

fn main() {
    let full = std::env::args().any(|a| a == "--full");
    let t = std::time::Instant::now();
    let f = match coflow::packet::fidelity::fidelity(!full) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    println!("| shuffle | mechanism | flow s | packet s | Γ flow | Γ packet | packet spread ms | drops | retx |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in &f.shuffle {
        println!(
            "| {} | {} | {:.4} | {:.4} | {:.4} | {:.4} | {:.2} | {} | {} |",
            r.topology, r.mechanism, r.flow_s, r.packet_s, r.flow_gamma_s, r.packet_gamma_s,
            1e3 * r.packet_finish_spread_s, r.drops, r.retx
        );
    }
    println!();
    println!("| testbed | mechanism | flow s | packet s | packet/flow | bound flow | bound packet | transfers | events | drops | retx |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in &f.broadcast {
        println!(
            "| {} | {} | {:.3} | {:.3} | {:.2} | {:.3} | {:.3} | {} | {} | {} | {} |",
            r.testbed, r.mechanism, r.flow_s, r.packet_s, r.packet_s / r.flow_s, r.flow_lower_bound_s,
            r.packet_lower_bound_s, r.transfers, r.events, r.drops, r.retx
        );
    }
    println!();
    for c in &f.checks {
        println!("[{}] {} -- {}", if c.holds { "holds" } else { "DOES NOT HOLD" }, c.expectation, c.detail);
    }
    println!("{} of {} checks hold; {:.1} s", f.checks.iter().filter(|c| c.holds).count(), f.checks.len(), t.elapsed().as_secs_f64());
}
