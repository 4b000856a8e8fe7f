//! Broadcast behaviour: closed forms, bounds, conservation, determinism, and the published
//! shapes on a small configuration (seconds in a debug build).

use coflow::broadcast::figures::{self, check_4_10, check_4_11, check_4_7, check_4_8};
use coflow::broadcast::{
    infer_racks, lower_bound_s, run_broadcast, BroadcastConfig, Mechanism, Placement, MB,
};
use coflow::net::{ParamError, Topology};

const ALL: [Mechanism; 9] = [
    Mechanism::Hdfs { replicas: 3 },
    Mechanism::Hdfs { replicas: 10 },
    Mechanism::Chain,
    Mechanism::Tree { degree: 2 },
    Mechanism::Tree { degree: 3 },
    Mechanism::BitTorrent,
    Mechanism::Cornet,
    Mechanism::CornetTopology,
    Mechanism::CornetClustering,
];

fn racks() -> (Topology, Placement) {
    // 3 racks of 5 hosts, 1 Gbit/s hosts, 0.5 Gbit/s rack links; 14 receivers.
    (
        Topology::racks(3, 5, 1.0, 0.5).unwrap(),
        Placement::first_hosts(14),
    )
}

fn cfg(bytes: f64, seed: u64) -> BroadcastConfig {
    BroadcastConfig {
        bytes,
        bittorrent_block_bytes: MB,
        seed,
        ..Default::default()
    }
}

#[test]
fn chain_time_is_data_time_plus_one_block_per_hop() {
    // 10 blocks of 4 MiB down a chain of 5 at 1 Gbit/s: S/C + (N-1) b/C, pipelined.
    let topo = Topology::flat(6, 1.0).unwrap();
    let c = BroadcastConfig {
        bytes: 40.0 * MB,
        ..Default::default()
    };
    let r = run_broadcast(&topo, &Placement::first_hosts(5), Mechanism::Chain, &c).unwrap();
    let b = 4.0 * MB / 125e6;
    assert!(
        (r.completion_s - (10.0 * b + 4.0 * b)).abs() < 1e-9,
        "{}",
        r.completion_s
    );
    // Receiver k finishes k-1 block times after the first.
    for (k, t) in r.receiver_finish_s.iter().enumerate() {
        assert!((t - (10.0 + k as f64) * b).abs() < 1e-9);
    }
}

#[test]
fn binary_tree_root_splits_its_uplink() {
    // Two receivers under the root: both stream at half the sender's rate: 2 S / C.
    let topo = Topology::flat(3, 1.0).unwrap();
    let c = BroadcastConfig {
        bytes: 40.0 * MB,
        ..Default::default()
    };
    let r = run_broadcast(
        &topo,
        &Placement::first_hosts(2),
        Mechanism::Tree { degree: 2 },
        &c,
    )
    .unwrap();
    assert!((r.completion_s - 2.0 * 40.0 * MB / 125e6).abs() < 1e-9);
}

#[test]
fn hdfs_is_write_then_reads_from_the_replicas() {
    // One 64 MB HDFS block (S = 60 MB), 1 replica, 3 receivers on a flat 1 Gbit/s network:
    // the write takes S/C, then the other two read from the one replica in parallel: 2 S/C.
    let topo = Topology::flat(4, 1.0).unwrap();
    let c = BroadcastConfig {
        bytes: 60e6,
        ..Default::default()
    };
    let r = run_broadcast(
        &topo,
        &Placement::first_hosts(3),
        Mechanism::Hdfs { replicas: 1 },
        &c,
    )
    .unwrap();
    let t = 60e6 / 125e6;
    let mut f = r.receiver_finish_s.clone();
    f.sort_by(f64::total_cmp);
    assert!(
        (f[0] - t).abs() < 1e-9 && (f[1] - 3.0 * t).abs() < 1e-9 && (f[2] - 3.0 * t).abs() < 1e-9,
        "{f:?}"
    );
}

#[test]
fn no_mechanism_beats_the_lower_bound() {
    let (topo, pl) = racks();
    for m in ALL {
        for seed in 0..3 {
            let r = run_broadcast(&topo, &pl, m, &cfg(30e6, seed)).unwrap();
            assert!(
                r.completion_s >= r.lower_bound_s * (1.0 - 1e-9),
                "{} seed {seed}: {} < {}",
                m.name(),
                r.completion_s,
                r.lower_bound_s
            );
            // Per receiver: no faster than the sender's up link or its own down link.
            for (t, &h) in r.receiver_finish_s.iter().zip(&pl.receivers) {
                let c = topo.host_up_gbps[pl.sender].min(topo.host_down_gbps[h]);
                assert!(*t >= 30e6 / (c * 125e6) * (1.0 - 1e-9));
            }
        }
    }
    let flat = Topology::flat(21, 1.0).unwrap();
    for seed in 0..5 {
        let r = run_broadcast(
            &flat,
            &Placement::first_hosts(20),
            Mechanism::Cornet,
            &cfg(50e6, seed),
        )
        .unwrap();
        assert!(r.completion_s >= r.lower_bound_s);
    }
}

#[test]
fn lower_bound_counts_the_rack_downlink() {
    let (topo, pl) = racks();
    // Rack links (0.5) are slower than hosts (1.0) and receivers sit outside the sender's rack.
    assert!((lower_bound_s(&topo, &pl, 1e8) - 1e8 / 62.5e6).abs() < 1e-9);
    let flat = Topology::flat(3, 1.0).unwrap();
    assert!((lower_bound_s(&flat, &Placement::first_hosts(2), 1e8) - 0.8).abs() < 1e-12);
}

#[test]
fn every_receiver_gets_every_block_exactly_once() {
    let (topo, pl) = racks();
    for m in ALL {
        let r = run_broadcast(&topo, &pl, m, &cfg(30e6 + 12345.0, 7)).unwrap();
        assert_eq!(r.block_receipts.len(), pl.receivers.len());
        for (i, blocks) in r.block_receipts.iter().enumerate() {
            assert!(!blocks.is_empty());
            assert!(
                blocks.iter().all(|&k| k == 1),
                "{}: receiver {i} got {blocks:?}",
                m.name()
            );
        }
        assert!(r.receiver_finish_s.iter().all(|t| t.is_finite()));
    }
}

#[test]
fn same_seed_same_run_and_seeds_matter() {
    let (topo, pl) = racks();
    for m in [
        Mechanism::Cornet,
        Mechanism::BitTorrent,
        Mechanism::CornetClustering,
        Mechanism::Hdfs { replicas: 3 },
    ] {
        let a = run_broadcast(&topo, &pl, m, &cfg(30e6, 42)).unwrap();
        let b = run_broadcast(&topo, &pl, m, &cfg(30e6, 42)).unwrap();
        assert_eq!(a, b, "{}", m.name());
    }
    let a = run_broadcast(&topo, &pl, Mechanism::Cornet, &cfg(30e6, 1)).unwrap();
    let b = run_broadcast(&topo, &pl, Mechanism::Cornet, &cfg(30e6, 2)).unwrap();
    assert_ne!(a.receiver_finish_s, b.receiver_finish_s);
}

#[test]
fn invalid_parameters_are_errors() {
    let topo = Topology::flat(4, 1.0).unwrap();
    let pl = Placement::first_hosts(3);
    let ok = BroadcastConfig::default();
    let none = Placement {
        sender: 0,
        receivers: vec![],
    };
    assert!(matches!(
        run_broadcast(&topo, &none, Mechanism::Cornet, &ok),
        Err(ParamError::TooFew { .. })
    ));
    let zero_block = BroadcastConfig {
        block_bytes: 0.0,
        ..ok.clone()
    };
    assert!(matches!(
        run_broadcast(&topo, &pl, Mechanism::Cornet, &zero_block),
        Err(ParamError::NotPositive { .. })
    ));
    let zero_size = BroadcastConfig {
        bytes: 0.0,
        ..ok.clone()
    };
    assert!(run_broadcast(&topo, &pl, Mechanism::Chain, &zero_size).is_err());
    assert!(run_broadcast(&topo, &pl, Mechanism::Tree { degree: 0 }, &ok).is_err());
    assert!(run_broadcast(&topo, &pl, Mechanism::Hdfs { replicas: 0 }, &ok).is_err());
    let dup = Placement {
        sender: 0,
        receivers: vec![1, 1],
    };
    assert!(run_broadcast(&topo, &dup, Mechanism::Cornet, &ok).is_err());
    let outside = Placement {
        sender: 0,
        receivers: vec![9],
    };
    assert!(matches!(
        run_broadcast(&topo, &outside, Mechanism::Cornet, &ok),
        Err(ParamError::UnknownHost { .. })
    ));
    let mut zero_cap = topo.clone();
    zero_cap.host_down_gbps[2] = 0.0;
    assert!(run_broadcast(&zero_cap, &pl, Mechanism::Cornet, &ok).is_err());
}

#[test]
fn clustering_survives_a_fast_cross_rack_outlier() {
    // Two racks {0,1,2} and {3,4,5}: 1 Gbit/s inside, 0.05 across, one cross pair measured fast.
    let n = 6;
    let mut rates: Vec<Vec<f64>> = (0..n)
        .map(|a| {
            (0..n)
                .map(|b| {
                    if a == b {
                        0.0
                    } else if a / 3 == b / 3 {
                        1.0
                    } else {
                        0.05
                    }
                })
                .collect()
        })
        .collect();
    rates[2][3] = 0.9;
    rates[3][2] = 0.9;
    assert_eq!(infer_racks(&rates), vec![0, 0, 0, 1, 1, 1]);
    // No structure: one rack.
    let flat = vec![vec![0.5; 4]; 4];
    assert_eq!(infer_racks(&flat), vec![0; 4]);
}

#[test]
fn published_shapes_hold_on_a_small_configuration() {
    // Figure 4.7: at scale Cornet beats HDFS, chain and tree; HDFS's gap grows with the size.
    let rows = figures::figure_4_7(&[10e6, 100e6], 20, 1, 1).unwrap();
    let checks = check_4_7(&rows);
    for c in &checks[1..] {
        assert!(c.holds, "{c:?}");
    }
    // Figure 4.8: Cornet's receivers finish together; chain and tree's do not; HDFS-10 first.
    let cdf = figures::figure_4_8(100e6, 20, 1).unwrap();
    let checks = check_4_8(&cdf);
    for i in [0, 2, 3] {
        assert!(checks[i].holds, "{:?}", checks[i]);
    }
    // Figure 4.10: U-shaped in the block size.
    let blocks: Vec<f64> = [0.25, 1.0, 4.0, 64.0].iter().map(|b| b * MB).collect();
    let rows = figures::figure_4_10(100e6, 20, &blocks, 1, 1).unwrap();
    assert!(check_4_10(&rows)[0].holds, "{:?}", check_4_10(&rows));
    // Figure 4.11: topology awareness about halves the time when cross-rack bandwidth is scarce.
    let rows = figures::figure_4_11(&[100e6], &[1.0], 2, 1).unwrap();
    for c in check_4_11(&rows) {
        assert!(c.holds, "{c:?}");
    }
}

#[test]
fn a_slow_sender_throttles_the_chain_below_it_but_not_cornet() {
    // 10 receivers; 3 of them send at 0.2 Gbit/s. Receivers downstream of a slow node in the
    // chain get at most 0.2 Gbit/s; Cornet routes around slow senders.
    let (topo, pl) = figures::ec2_with_slow_senders(10, 0.3, 0.2, 5).unwrap();
    let slow = pl
        .receivers
        .iter()
        .filter(|&&h| topo.host_up_gbps[h] < 1.0)
        .count();
    assert_eq!(slow, 3);
    let c = cfg(40e6, 3);
    let chain = run_broadcast(&topo, &pl, Mechanism::Chain, &c).unwrap();
    let cornet = run_broadcast(&topo, &pl, Mechanism::Cornet, &c).unwrap();
    assert!(chain.completion_s >= 40e6 / 25e6, "{}", chain.completion_s);
    assert!(
        cornet.completion_s < chain.completion_s,
        "{} vs {}",
        cornet.completion_s,
        chain.completion_s
    );
    assert!(figures::ec2_with_slow_senders(10, 1.5, 0.2, 5).is_err());
}

#[test]
fn mechanism_names_parse_back() {
    for m in ALL {
        assert_eq!(m.name().parse::<Mechanism>(), Ok(m));
    }
    assert_eq!(
        "hdfs-3".parse::<Mechanism>(),
        Ok(Mechanism::Hdfs { replicas: 3 })
    );
    assert!("Tree-x".parse::<Mechanism>().is_err());
    assert!("multicast".parse::<Mechanism>().is_err());
}
