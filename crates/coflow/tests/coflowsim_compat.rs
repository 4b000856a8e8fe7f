//! The coflowsim-compatible mode against coflowsim b61f209's own outputs on the FB2010 trace.
//!
//! The trace and the reference outputs are not in the repository (the trace has no license);
//! they are read from `/work/shared/data/coflow` (found relative to this crate), and the tests
//! skip with a message when it is absent.

use std::path::PathBuf;

use coflow::coflowsim::{self, Algo, Options};
use coflow::trace::Trace;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/coflow")
}

/// The trace and the reference outputs for `algo`, or `None` (with a message) if absent.
fn inputs(algo: Algo) -> Option<(Trace, Vec<coflowsim::Record>)> {
    let dir = data_dir();
    let trace = dir.join("FB2010-1Hr-150-0.txt");
    let reference = dir.join(format!("coflowsim_b61f209_results/{}.out", algo.name()));
    if !trace.exists() || !reference.exists() {
        eprintln!("SKIPPED: {} or {} is absent", trace.display(), reference.display());
        return None;
    }
    let trace = Trace::from_path(&trace).expect("trace parses");
    let text = std::fs::read_to_string(reference).expect("reference readable");
    Some((trace, coflowsim::parse_reference(&text).expect("reference parses")))
}

/// Runs `algo` until `end_ms` and checks that every coflow finished by then matches the
/// reference in every column. A coflow that finished before the cut cannot have been affected
/// by anything after it, so this is an exact check on a slice of the trace. Returns how many
/// coflows were compared.
fn matches_until(algo: Algo, end_ms: i64) -> Option<usize> {
    let (trace, reference) = inputs(algo)?;
    let ours = coflowsim::run_with(&trace, algo, &Options { end_ms });
    let c = coflowsim::compare(&ours, &reference, true);
    let by_id: std::collections::HashMap<u64, &coflowsim::Record> = reference.iter().map(|r| (r.id, r)).collect();
    for r in ours.iter().filter(|r| r.finish_ms >= 0.0) {
        assert_eq!(r, by_id[&r.id], "{}: JOB-{} differs", algo.name(), r.id);
    }
    assert_eq!(c.num_exact, c.num_compared);
    Some(c.num_compared)
}

/// One test per scheduler: runs until `end_ms` (a slice of the trace that keeps each test to a
/// second or two at the test profile's opt-level) and asserts that at least `min` coflows
/// finished, all of them exactly as coflowsim printed them.
macro_rules! slice_test {
    ($name:ident, $algo:expr, $end_ms:expr, $min:expr) => {
        #[test]
        fn $name() {
            if let Some(n) = matches_until($algo, $end_ms) {
                assert!(n >= $min, "{}: only {n} coflows finished", $algo.name());
            }
        }
    };
}

slice_test!(fair_matches_on_a_slice, Algo::Fair, 100_000, 15);
slice_test!(fair5_matches_on_a_slice, Algo::Fair5, 100_000, 15);
slice_test!(pfp_matches_on_a_slice, Algo::Pfp, 400_000, 40);
slice_test!(fifo_matches_on_a_slice, Algo::Fifo, 120_000, 20);
slice_test!(scf_matches_on_a_slice, Algo::Scf, 120_000, 20);
slice_test!(ncf_matches_on_a_slice, Algo::Ncf, 120_000, 20);
slice_test!(lcf_matches_on_a_slice, Algo::Lcf, 120_000, 20);
slice_test!(sebf_matches_on_a_slice, Algo::Sebf, 120_000, 20);
slice_test!(dark_matches_on_a_slice, Algo::Dark, 120_000, 20);

/// The whole trace, every scheduler: minutes in release. `cargo test --release -p
/// slacknet-coflow --test coflowsim_compat -- --ignored`.
#[test]
#[ignore]
fn every_scheduler_matches_on_the_whole_trace() {
    for algo in Algo::ALL {
        if let Some((trace, reference)) = inputs(algo) {
            let c = coflowsim::compare(&coflowsim::run(&trace, algo), &reference, false);
            eprintln!("{}: {}/{} exact, max rel diff {:.2e}", algo.name(), c.num_exact, reference.len(), c.max_rel_diff);
            assert_eq!(c.num_exact, reference.len(), "{}", algo.name());
        }
    }
}
