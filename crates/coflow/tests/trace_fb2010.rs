//! The parser on the real FB2010 trace: the counts its README states. The trace is not in the
//! repository (no license); it is read from `/work/shared/data/coflow` (relative to this crate)
//! and the test skips with a message if it is absent.

use std::path::PathBuf;

use coflow::inter::Bin;
use coflow::trace::{Trace, BYTES_PER_MB};

#[test]
fn fb2010_has_the_documented_shape() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/coflow/FB2010-1Hr-150-0.txt");
    if !path.exists() {
        eprintln!("SKIPPED: {} is absent", path.display());
        return;
    }
    let t = Trace::from_path(&path).unwrap();
    assert_eq!((t.num_ports, t.coflows.len(), t.num_flows()), (150, 526, 706_397));
    let mb: f64 = t.coflows.iter().map(|c| c.total_bytes()).sum::<f64>() / BYTES_PER_MB;
    assert_eq!(mb, 35_533_534.0);
    let widest = t.coflows.iter().map(|c| c.num_flows()).max().unwrap();
    assert_eq!(widest, 21_170);
    let mut bins = [0usize; 4];
    for c in &t.coflows {
        let longest = c.flows().map(|f| f.bytes).fold(0.0, f64::max);
        bins[Bin::of(longest, c.num_flows()) as usize] += 1;
    }
    assert_eq!(bins, [309, 90, 59, 68]);
    assert!(t.coflows.windows(2).all(|w| w[0].arrival_ms <= w[1].arrival_ms));
    assert_eq!(t.coflows.last().unwrap().arrival_ms, 3_629_235);
}
