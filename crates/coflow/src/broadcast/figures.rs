//! The rows of the slides' broadcast figures (Chowdhury's thesis Figures 4.7-4.11, from
//! Orchestra) and checks of their published shapes.
//!
//! Each `figure_*` function runs the mechanisms on a model of the testbed the figure came
//! from and returns plain rows, for `examples/broadcast_figures.rs` and for the Python binding.
//! Each `check_*` function states the shape the slides report and whether our rows show it.
//!
//! # Testbeds
//!
//! * **EC2** (Figures 4.7-4.10): [`ec2`], a flat non-blocking network of 1 Gbit/s hosts, the
//!   sender on host 0 and the receivers on hosts 1..=N. EC2 gave no rack information and its
//!   instances of the time saw roughly gigabit, not rack-limited, throughput.
//! * **DETERlab** (Figure 4.11): [`deterlab`], 3 racks of 11 hosts at 1 Gbit/s whose rack
//!   links carry `cross_rack_gbps` (1 Gbit/s by default: 11:1 oversubscribed, "cross-rack
//!   bandwidth is scarce"); the sender on host 0 and 10 receivers in each rack (30 in all, as in
//!   the figure). The paper's exact cross-rack capacity was not retrievable, so the figure is
//!   computed for a sweep of it.
//!
//! BitTorrent's block size follows the usual client rule ([`bittorrent_block_bytes`]): 256 KB,
//! doubled until the data has at most 1024 blocks (1 MB for 1 GB), which also keeps the 1 GB
//! runs to about 10^5 transfers.

use super::{lower_bound_s, run_broadcast, BroadcastConfig, Mechanism, Placement, KB, MB};
use crate::net::{check_at_least, check_positive, ParamError, Pcg32, Topology};

/// The mechanisms of Figures 4.7-4.9, in the figures' order.
pub const FIGURE_MECHANISMS: [Mechanism; 6] = [
    Mechanism::Hdfs { replicas: 3 },
    Mechanism::Hdfs { replicas: 10 },
    Mechanism::Chain,
    Mechanism::Tree { degree: 2 },
    Mechanism::BitTorrent,
    Mechanism::Cornet,
];

/// The mechanisms of Figure 4.11.
pub const TOPOLOGY_MECHANISMS: [Mechanism; 3] = [
    Mechanism::Cornet,
    Mechanism::CornetTopology,
    Mechanism::CornetClustering,
];

/// The EC2 model: a flat network of `num_receivers + 1` hosts at 1 Gbit/s (module docs).
pub fn ec2(num_receivers: usize) -> Result<(Topology, Placement), ParamError> {
    check_at_least("number of receivers", num_receivers, 1)?;
    Ok((
        Topology::flat(num_receivers + 1, 1.0)?,
        Placement::first_hosts(num_receivers),
    ))
}

/// The EC2 model with stragglers: as [`ec2`], but `round(slow_fraction * num_receivers)`
/// receivers, picked with `seed`, send at only `slow_gbps` (their down links stay at 1 Gbit/s,
/// so the lower bound is unchanged). The slides blame stragglers for the chain's and tree's
/// segmented CDFs in Figure 4.8; EC2 instances of the time varied widely in throughput, and
/// a node that sends slowly is what hurts a structured overlay, where every interior node
/// must forward everything. A sensitivity variant: the slides do not quantify the stragglers.
pub fn ec2_with_slow_senders(
    num_receivers: usize,
    slow_fraction: f64,
    slow_gbps: f64,
    seed: u64,
) -> Result<(Topology, Placement), ParamError> {
    check_positive("slow senders' capacity (Gbit/s)", slow_gbps)?;
    if !(0.0..=1.0).contains(&slow_fraction) {
        return Err(ParamError::NotPositive {
            what: "fraction of slow senders (0..=1)",
            value: slow_fraction,
        });
    }
    let (mut topo, placement) = ec2(num_receivers)?;
    let mut hosts = placement.receivers.clone();
    Pcg32::new(seed).shuffle(&mut hosts);
    let num_slow = (slow_fraction * num_receivers as f64).round() as usize;
    for &h in &hosts[..num_slow] {
        topo.host_up_gbps[h] = slow_gbps;
    }
    Ok((topo, placement))
}

/// The DETERlab model: 3 racks of 11 hosts at 1 Gbit/s, rack links at `cross_rack_gbps`,
/// sender on host 0, receivers on every other host but the first of racks 1 and 2 (module
/// docs).
pub fn deterlab(cross_rack_gbps: f64) -> Result<(Topology, Placement), ParamError> {
    let topo = Topology::racks(3, 11, 1.0, cross_rack_gbps)?;
    let receivers = (1..33).filter(|&h| h != 11 && h != 22).collect();
    Ok((
        topo,
        Placement {
            sender: 0,
            receivers,
        },
    ))
}

/// BitTorrent's block size for `bytes` of data: 256 KB doubled until at most 1024 blocks.
pub fn bittorrent_block_bytes(bytes: f64) -> f64 {
    let mut b = 256.0 * KB;
    while bytes / b > 1024.0 {
        b *= 2.0;
    }
    b
}

/// The configuration the figures use: the defaults, `bytes`, BitTorrent's block rule, `seed`.
pub fn figure_config(bytes: f64, seed: u64) -> BroadcastConfig {
    BroadcastConfig {
        bytes,
        bittorrent_block_bytes: bittorrent_block_bytes(bytes),
        seed,
        ..Default::default()
    }
}

/// One point of a completion-time figure: a mechanism's mean completion over seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct FigureRow {
    /// Mechanism name ([`Mechanism::name`]).
    pub mechanism: String,
    /// Data size, bytes.
    pub bytes: f64,
    /// Receivers.
    pub num_receivers: usize,
    /// The mechanism's block size, bytes.
    pub block_bytes: f64,
    /// Rack link capacity, Gbit/s (`f64::INFINITY` on the flat EC2 model).
    pub cross_rack_gbps: f64,
    /// Mean completion time over the seeds, seconds.
    pub completion_s: f64,
    /// Its standard deviation over the seeds, seconds.
    pub completion_std_s: f64,
    /// The lower bound, seconds.
    pub lower_bound_s: f64,
}

/// One point of Figure 4.8's CDF: the `rank`-th receiver to finish.
#[derive(Clone, Debug, PartialEq)]
pub struct CdfRow {
    /// Mechanism name.
    pub mechanism: String,
    /// 1-based rank in finishing order.
    pub rank: usize,
    /// `rank / num_receivers`.
    pub fraction: f64,
    /// Its finish time, seconds.
    pub finish_s: f64,
}

/// A published shape and whether our rows show it.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeCheck {
    /// "4.7", "4.8", ...
    pub figure: &'static str,
    /// The shape, as the slides state it.
    pub expectation: &'static str,
    /// Whether it holds in our rows.
    pub holds: bool,
    /// The numbers behind the verdict.
    pub detail: String,
}

fn block_of(m: Mechanism, cfg: &BroadcastConfig) -> f64 {
    match m {
        Mechanism::BitTorrent => cfg.bittorrent_block_bytes,
        Mechanism::Hdfs { .. } => cfg.hdfs_block_bytes,
        _ => cfg.block_bytes,
    }
}

/// Runs `m` over `num_seeds` seeds from `seed` and summarises it as a row.
fn row(
    topo: &Topology,
    placement: &Placement,
    m: Mechanism,
    cfg: &BroadcastConfig,
    num_seeds: usize,
    cross_rack_gbps: f64,
) -> Result<FigureRow, ParamError> {
    check_at_least("number of seeds", num_seeds, 1)?;
    let mut times = Vec::with_capacity(num_seeds);
    for k in 0..num_seeds as u64 {
        let c = BroadcastConfig {
            seed: cfg.seed.wrapping_add(k),
            ..cfg.clone()
        };
        times.push(run_broadcast(topo, placement, m, &c)?.completion_s);
    }
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let var = times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / times.len() as f64;
    Ok(FigureRow {
        mechanism: m.name(),
        bytes: cfg.bytes,
        num_receivers: placement.receivers.len(),
        block_bytes: block_of(m, cfg),
        cross_rack_gbps,
        completion_s: mean,
        completion_std_s: var.sqrt(),
        lower_bound_s: lower_bound_s(topo, placement, cfg.bytes),
    })
}

/// Figure 4.7 (EC2): completion time vs data size, `num_receivers` receivers, every mechanism.
pub fn figure_4_7(
    sizes: &[f64],
    num_receivers: usize,
    num_seeds: usize,
    seed: u64,
) -> Result<Vec<FigureRow>, ParamError> {
    let (topo, placement) = ec2(num_receivers)?;
    let mut rows = Vec::new();
    for &bytes in sizes {
        for m in FIGURE_MECHANISMS {
            rows.push(row(
                &topo,
                &placement,
                m,
                &figure_config(bytes, seed),
                num_seeds,
                f64::INFINITY,
            )?);
        }
    }
    Ok(rows)
}

/// Figure 4.8 (EC2): per-receiver completion times (CDF), `bytes` to `num_receivers`.
pub fn figure_4_8(bytes: f64, num_receivers: usize, seed: u64) -> Result<Vec<CdfRow>, ParamError> {
    let (topo, placement) = ec2(num_receivers)?;
    cdf_rows(&topo, &placement, bytes, seed)
}

/// Figure 4.8 on [`ec2_with_slow_senders`]: the same CDF with stragglers.
pub fn figure_4_8_slow_senders(
    bytes: f64,
    num_receivers: usize,
    slow_fraction: f64,
    slow_gbps: f64,
    seed: u64,
) -> Result<Vec<CdfRow>, ParamError> {
    let (topo, placement) = ec2_with_slow_senders(num_receivers, slow_fraction, slow_gbps, seed)?;
    cdf_rows(&topo, &placement, bytes, seed)
}

fn cdf_rows(
    topo: &Topology,
    placement: &Placement,
    bytes: f64,
    seed: u64,
) -> Result<Vec<CdfRow>, ParamError> {
    let mut rows = Vec::new();
    for m in FIGURE_MECHANISMS {
        let r = run_broadcast(topo, placement, m, &figure_config(bytes, seed))?;
        let mut t = r.receiver_finish_s;
        t.sort_by(f64::total_cmp);
        let n = t.len();
        rows.extend(t.into_iter().enumerate().map(|(i, finish_s)| CdfRow {
            mechanism: m.name(),
            rank: i + 1,
            fraction: (i + 1) as f64 / n as f64,
            finish_s,
        }));
    }
    Ok(rows)
}

/// Figure 4.9 (EC2): completion time vs number of receivers for `bytes` (10 MB in the slides).
pub fn figure_4_9(
    bytes: f64,
    receiver_counts: &[usize],
    num_seeds: usize,
    seed: u64,
) -> Result<Vec<FigureRow>, ParamError> {
    let mut rows = Vec::new();
    for &n in receiver_counts {
        let (topo, placement) = ec2(n)?;
        for m in FIGURE_MECHANISMS {
            rows.push(row(
                &topo,
                &placement,
                m,
                &figure_config(bytes, seed),
                num_seeds,
                f64::INFINITY,
            )?);
        }
    }
    Ok(rows)
}

/// Figure 4.10 (EC2): Cornet's completion time vs its block size.
pub fn figure_4_10(
    bytes: f64,
    num_receivers: usize,
    block_sizes: &[f64],
    num_seeds: usize,
    seed: u64,
) -> Result<Vec<FigureRow>, ParamError> {
    let (topo, placement) = ec2(num_receivers)?;
    block_sizes
        .iter()
        .map(|&b| {
            let cfg = BroadcastConfig {
                block_bytes: b,
                ..figure_config(bytes, seed)
            };
            row(
                &topo,
                &placement,
                Mechanism::Cornet,
                &cfg,
                num_seeds,
                f64::INFINITY,
            )
        })
        .collect()
}

/// Figure 4.11 (DETERlab): Cornet, CornetTopology and CornetClustering to 30 receivers in 3
/// racks, for each data size and rack link capacity, averaged over `num_seeds` runs (10 in
/// the slides).
pub fn figure_4_11(
    sizes: &[f64],
    cross_rack_gbps: &[f64],
    num_seeds: usize,
    seed: u64,
) -> Result<Vec<FigureRow>, ParamError> {
    let mut rows = Vec::new();
    for &cross in cross_rack_gbps {
        let (topo, placement) = deterlab(cross)?;
        for &bytes in sizes {
            for m in TOPOLOGY_MECHANISMS {
                rows.push(row(
                    &topo,
                    &placement,
                    m,
                    &figure_config(bytes, seed),
                    num_seeds,
                    cross,
                )?);
            }
        }
    }
    Ok(rows)
}

fn find<'a>(
    rows: &'a [FigureRow],
    m: &str,
    pred: impl Fn(&FigureRow) -> bool,
) -> Option<&'a FigureRow> {
    rows.iter().find(|r| r.mechanism == m && pred(r))
}

fn check(
    figure: &'static str,
    expectation: &'static str,
    verdict: Option<(bool, String)>,
) -> ShapeCheck {
    let (holds, detail) = verdict.unwrap_or((false, "rows missing".into()));
    ShapeCheck {
        figure,
        expectation,
        holds,
        detail,
    }
}

/// Figure 4.7's shapes, checked at the largest and smallest sizes in `rows`.
pub fn check_4_7(rows: &[FigureRow]) -> Vec<ShapeCheck> {
    let max = rows.iter().map(|r| r.bytes).fold(0.0, f64::max);
    let min = rows.iter().map(|r| r.bytes).fold(f64::INFINITY, f64::min);
    let at = |m: &str, b: f64| find(rows, m, |r| r.bytes == b).map(|r| r.completion_s);
    let mut out = vec![check(
        "4.7",
        "Cornet stays within 33% of the theoretical lower bound (largest size)",
        find(rows, "Cornet", |r| r.bytes == max).map(|r| {
            (
                r.completion_s <= r.lower_bound_s * 4.0 / 3.0,
                format!(
                    "Cornet {:.2} s, bound {:.2} s, ratio {:.2}",
                    r.completion_s,
                    r.lower_bound_s,
                    r.completion_s / r.lower_bound_s
                ),
            )
        }),
    )];
    out.push(check(
        "4.7",
        "Cornet beats HDFS-3, HDFS-10, chain and tree at scale (largest size)",
        (|| {
            let c = at("Cornet", max)?;
            let others = [
                at("HDFS-3", max)?,
                at("HDFS-10", max)?,
                at("Chain", max)?,
                at("Tree-2", max)?,
            ];
            Some((
                others.iter().all(|&o| c < o),
                format!("Cornet {c:.2} s vs HDFS-3/HDFS-10/Chain/Tree-2 {others:.2?} s"),
            ))
        })(),
    ));
    out.push(check(
        "4.7",
        "HDFS does well only for small data: its gap to Cornet grows with the size",
        (|| {
            let small = at("HDFS-10", min)? / at("Cornet", min)?;
            let large = at("HDFS-10", max)? / at("Cornet", max)?;
            Some((
                large > small,
                format!(
                    "HDFS-10 / Cornet: {small:.2} at the smallest size, {large:.2} at the largest"
                ),
            ))
        })(),
    ));
    out.push(check(
        "4.7",
        "no mechanism beats the lower bound",
        Some((
            rows.iter()
                .all(|r| r.completion_s >= r.lower_bound_s * (1.0 - 1e-9)),
            format!("{} rows", rows.len()),
        )),
    ));
    out
}

fn spread(rows: &[CdfRow], m: &str) -> Option<(f64, f64)> {
    let t: Vec<f64> = rows
        .iter()
        .filter(|r| r.mechanism == m)
        .map(|r| r.finish_s)
        .collect();
    let (lo, hi) = t
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    (!t.is_empty()).then_some((lo, hi))
}

/// Figure 4.8's shapes.
pub fn check_4_8(rows: &[CdfRow]) -> Vec<ShapeCheck> {
    let rel = |m: &str| spread(rows, m).map(|(lo, hi)| (hi - lo) / hi);
    vec![
        check(
            "4.8",
            "all Cornet receivers finish nearly simultaneously (spread <= 10% of the completion)",
            rel("Cornet").map(|s| (s <= 0.10, format!("Cornet spread {:.1}%", 100.0 * s))),
        ),
        check(
            "4.8",
            "BitTorrent is similar except that its receivers' completion times vary more",
            (|| {
                let (b, c) = (rel("BitTorrent")?, rel("Cornet")?);
                let (_, bt_hi) = spread(rows, "BitTorrent")?;
                let (_, c_hi) = spread(rows, "Cornet")?;
                Some((
                    b > c,
                    format!(
                        "spreads BitTorrent {:.1}% vs Cornet {:.1}%; last receivers at {bt_hi:.2} vs {c_hi:.2} s",
                        100.0 * b,
                        100.0 * c
                    ),
                ))
            })(),
        ),
        check(
            "4.8",
            "chain and tree receivers finish spread out (segmented), unlike Cornet's",
            (|| {
                let (ch, tr, c) = (rel("Chain")?, rel("Tree-2")?, rel("Cornet")?);
                Some((
                    ch > c && tr > c,
                    format!(
                        "spreads Chain {:.1}%, Tree-2 {:.1}%, Cornet {:.1}%",
                        100.0 * ch,
                        100.0 * tr,
                        100.0 * c
                    ),
                ))
            })(),
        ),
        check(
            "4.8",
            "HDFS-10 finishes before HDFS-3 (more replicas to read from)",
            (|| {
                let (_, h10) = spread(rows, "HDFS-10")?;
                let (_, h3) = spread(rows, "HDFS-3")?;
                Some((h10 < h3, format!("HDFS-10 {h10:.2} s, HDFS-3 {h3:.2} s")))
            })(),
        ),
        check(
            "4.8",
            "HDFS-10 starts later than HDFS-3 (its first receivers finish later)",
            (|| {
                let (l10, _) = spread(rows, "HDFS-10")?;
                let (l3, _) = spread(rows, "HDFS-3")?;
                Some((
                    l10 > l3,
                    format!("first finish HDFS-10 {l10:.2} s, HDFS-3 {l3:.2} s"),
                ))
            })(),
        ),
    ]
}

/// Figure 4.9's shapes: structured mechanisms win with few receivers, Cornet with many.
pub fn check_4_9(rows: &[FigureRow]) -> Vec<ShapeCheck> {
    let min_n = rows
        .iter()
        .map(|r| r.num_receivers)
        .filter(|&n| n > 1)
        .min()
        .unwrap_or(0);
    let max_n = rows.iter().map(|r| r.num_receivers).max().unwrap_or(0);
    let at = |m: &str, n: usize| find(rows, m, |r| r.num_receivers == n).map(|r| r.completion_s);
    vec![
        check(
            "4.9",
            "with few receivers and small data, chain or tree is faster than Cornet",
            (|| {
                let (ch, tr, c) = (
                    at("Chain", min_n)?,
                    at("Tree-2", min_n)?,
                    at("Cornet", min_n)?,
                );
                Some((
                    ch.min(tr) < c,
                    format!(
                        "{min_n} receivers: Chain {ch:.3} s, Tree-2 {tr:.3} s, Cornet {c:.3} s"
                    ),
                ))
            })(),
        ),
        check(
            "4.9",
            "with many receivers, Cornet is faster than chain and HDFS",
            (|| {
                let (ch, h3, c) = (
                    at("Chain", max_n)?,
                    at("HDFS-3", max_n)?,
                    at("Cornet", max_n)?,
                );
                Some((
                    c < ch && c < h3,
                    format!(
                        "{max_n} receivers: Chain {ch:.3} s, HDFS-3 {h3:.3} s, Cornet {c:.3} s"
                    ),
                ))
            })(),
        ),
    ]
}

/// Figure 4.10's shape: too-large blocks limit sharing, too-small ones add overhead.
pub fn check_4_10(rows: &[FigureRow]) -> Vec<ShapeCheck> {
    let mut v: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.block_bytes, r.completion_s))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let best = v
        .iter()
        .enumerate()
        .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
        .map(|(i, _)| i);
    let verdict = best.map(|i| {
        let (first, last) = (v[0].1, v[v.len() - 1].1);
        let best_t = v[i].1;
        (
            i > 0 && i + 1 < v.len() && first > best_t * 1.05 && last > best_t * 1.05,
            format!(
                "best block {:.2} MB at {best_t:.2} s; smallest block {:.3} MB: {first:.2} s; largest {:.0} MB: {last:.2} s",
                v[i].0 / MB,
                v[0].0 / MB,
                v[v.len() - 1].0 / MB
            ),
        )
    });
    vec![check("4.10", "completion time is U-shaped in the block size (best in the middle, >5% worse at both ends)", verdict)]
}

/// Figure 4.11's shapes, at the scarcest cross-rack capacity in `rows`.
pub fn check_4_11(rows: &[FigureRow]) -> Vec<ShapeCheck> {
    let scarce = rows
        .iter()
        .map(|r| r.cross_rack_gbps)
        .fold(f64::INFINITY, f64::min);
    let max = rows.iter().map(|r| r.bytes).fold(0.0, f64::max);
    let at = |m: &str| {
        find(rows, m, |r| r.cross_rack_gbps == scarce && r.bytes == max).map(|r| r.completion_s)
    };
    vec![
        check(
            "4.11",
            "CornetTopology roughly halves Cornet's time when cross-rack bandwidth is scarce (>= 40% less)",
            (|| {
                let (c, t) = (at("Cornet")?, at("CornetTopology")?);
                Some((t <= 0.6 * c, format!("{:.0} MB, {scarce} Gbit/s rack links: Cornet {c:.2} s, CornetTopology {t:.2} s ({:.0}% less)", max / 1e6, 100.0 * (1.0 - t / c))))
            })(),
        ),
        check(
            "4.11",
            "CornetClustering gets most of that gain by inferring the racks (>= 30% less than Cornet, and no faster than CornetTopology by more than 5%)",
            (|| {
                let (c, t, k) = (at("Cornet")?, at("CornetTopology")?, at("CornetClustering")?);
                Some((k <= 0.7 * c && k >= 0.95 * t, format!("Cornet {c:.2} s, CornetClustering {k:.2} s ({:.0}% less), CornetTopology {t:.2} s", 100.0 * (1.0 - k / c))))
            })(),
        ),
    ]
}

/// Every intra-coflow result of the slides at once, as [`all`] computes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    /// Whether the reduced settings were used.
    pub quick: bool,
    /// The shuffle table with `K` = 3 (the slides') then `K` = 5 (Hadoop's default): `(K, row)`.
    pub abc: Vec<(usize, crate::shuffle::AbcRow)>,
    /// Figure 4.7: completion time against data size.
    pub fig_4_7: Vec<FigureRow>,
    /// Figure 4.8: per-receiver completion times.
    pub fig_4_8: Vec<CdfRow>,
    /// Figure 4.8 with 10% of the receivers sending at 0.5 Gbit/s (a sensitivity variant;
    /// its checks are informative).
    pub fig_4_8_slow: Vec<CdfRow>,
    /// Figure 4.9: completion time against the number of receivers.
    pub fig_4_9: Vec<FigureRow>,
    /// Figure 4.10: Cornet against block size.
    pub fig_4_10: Vec<FigureRow>,
    /// Figure 4.11: topology knowledge on DETERlab.
    pub fig_4_11: Vec<FigureRow>,
    /// Figure 4.14: logistic regression's iteration before and after Cornet and MADD.
    pub fig_4_14: Vec<crate::apps::IterationRow>,
    /// Figure 4.15: collaborative filtering's iteration against the number of machines.
    pub fig_4_15: Vec<crate::apps::IterationRow>,
    /// The published shapes of 4.7-4.11 (not the variant's) and whether ours show them.
    pub checks: Vec<ShapeCheck>,
    /// The variant's checks.
    pub variant_checks: Vec<ShapeCheck>,
}

/// The shuffle table, Figures 4.7-4.11 and the applications' Figures 4.14-4.15 with the settings of the slides' experiments
/// (100 receivers, up to 1 GB; `quick`: 20 receivers, up to 100 MB, a fraction of a second).
pub fn all(quick: bool) -> Result<Figures, ParamError> {
    let (n, sizes, big, seeds) = if quick { (20, vec![10e6, 100e6], 100e6, 1) } else { (100, vec![10e6, 100e6, 1e9], 1e9, 1) };
    let mut abc = Vec::new();
    for k in [3, 5] {
        abc.extend(crate::shuffle::abc_table(k, 20, 1)?.into_iter().map(|r| (k, r)));
    }
    let fig_4_7 = figure_4_7(&sizes, n, seeds, 1)?;
    let fig_4_8 = figure_4_8(big, n, 1)?;
    let fig_4_8_slow = figure_4_8_slow_senders(big, n, 0.1, 0.5, 1)?;
    let counts: Vec<usize> = if quick { vec![1, 5, 10, 20] } else { vec![1, 5, 10, 25, 50, 100] };
    let fig_4_9 = figure_4_9(10e6, &counts, seeds, 1)?;
    let blocks: Vec<f64> = [0.25, 1.0, 4.0, 16.0, 64.0, 256.0].iter().map(|b| b * MB).collect();
    let fig_4_10 = figure_4_10(big, n, &blocks, seeds, 1)?;
    let cross: &[f64] = if quick { &[1.0] } else { &[0.5, 1.0, 2.0, 5.0] };
    let fig_4_11 = figure_4_11(&[100e6, 200e6], cross, if quick { 3 } else { 10 }, 1)?;
    let mut checks = check_4_7(&fig_4_7);
    checks.extend(check_4_8(&fig_4_8));
    checks.extend(check_4_9(&fig_4_9));
    checks.extend(check_4_10(&fig_4_10));
    checks.extend(check_4_11(&fig_4_11));
    let fig_4_14 = crate::apps::figure_4_14(1)?;
    let fig_4_15 = crate::apps::figure_4_15(&[10, 20, 30, 60, 90], 1)?;
    checks.extend(crate::apps::check_4_14(&fig_4_14));
    checks.extend(crate::apps::check_4_15(&fig_4_15));
    let variant_checks = check_4_8(&fig_4_8_slow);
    Ok(Figures {
        quick,
        abc,
        fig_4_7,
        fig_4_8,
        fig_4_8_slow,
        fig_4_9,
        fig_4_10,
        fig_4_11,
        fig_4_14,
        fig_4_15,
        checks,
        variant_checks,
    })
}
