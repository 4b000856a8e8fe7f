//! Shuffle behaviour: MADD against its closed form and the slides' A/B/C table.

use coflow::net::Topology;
use coflow::shuffle::{
    abc_table, madd_gamma_s, orchestra_scenario, run_shuffle, Shuffle, ShuffleMechanism,
};

#[test]
fn madd_finishes_every_flow_at_gamma_across_racks() {
    // 2 racks of 3 hosts, 1 Gbit/s hosts, 1 Gbit/s rack links. Hosts 0,1,2 send 1 GB each to
    // 3 and 4 (rack 1): the rack-0 uplink carries 6 GB, the bottleneck: Γ = 48 s.
    let topo = Topology::racks(2, 3, 1.0, 1.0).unwrap();
    let sh = Shuffle {
        senders: vec![0, 1, 2],
        receivers: vec![3, 4],
        bytes: vec![vec![1e9; 2]; 3],
    };
    let gamma = madd_gamma_s(&topo, &sh).unwrap();
    assert!((gamma - 48.0).abs() < 1e-9);
    let r = run_shuffle(&topo, &sh, ShuffleMechanism::Madd, 0).unwrap();
    assert_eq!(r.flows.len(), 6);
    for f in &r.flows {
        assert!((f.finish_s - gamma).abs() < 1e-6);
    }
}

#[test]
fn local_pairs_cross_no_link() {
    // A host that is both mapper and reducer reads its own output locally.
    let topo = Topology::flat(2, 1.0).unwrap();
    let sh = Shuffle {
        senders: vec![0, 1],
        receivers: vec![0, 1],
        bytes: vec![vec![5e9, 1e9], vec![1e9, 5e9]],
    };
    let r = run_shuffle(&topo, &sh, ShuffleMechanism::FairShare, 0).unwrap();
    assert_eq!(r.flows.len(), 2);
    assert!((r.completion_s - 8.0).abs() < 1e-9);
}

#[test]
fn hadoop_with_enough_fetches_is_fair_sharing() {
    let (topo, sh) = orchestra_scenario(3, 1e9, 1.0).unwrap();
    let fair = run_shuffle(&topo, &sh, ShuffleMechanism::FairShare, 0).unwrap();
    let k5 = run_shuffle(&topo, &sh, ShuffleMechanism::Hadoop { max_fetches: 5 }, 3).unwrap();
    assert!((fair.completion_s - k5.completion_s).abs() < 1e-9);
}

#[test]
fn abc_table_matches_the_slides() {
    let rows = abc_table(3, 10, 1).unwrap();
    for r in &rows {
        // Theoretical speedups are exact: (3n-1)/2n - 1.
        let n = r.n as f64;
        assert!((r.theoretical_speedup - ((3.0 * n - 1.0) / (2.0 * n) - 1.0)).abs() < 1e-9);
        assert!((r.theoretical_speedup - r.published_theoretical_speedup).abs() < 0.01);
        // MADD never loses, and the K=3 speedup is within 8 points of the published one.
        assert!(r.speedup > 0.0 && r.speedup <= r.theoretical_speedup + 1e-9);
        assert!((r.speedup - r.published_speedup).abs() < 0.08, "{r:?}");
    }
    // Speedups grow from A to C, as published.
    assert!(rows[0].theoretical_speedup < rows[1].theoretical_speedup);
    assert!(rows[1].theoretical_speedup < rows[2].theoretical_speedup);
}
