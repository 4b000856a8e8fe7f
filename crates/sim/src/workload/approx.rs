//! Message sizes and gaps for NetApprox's two simulated workloads. NetApprox §7.1 "Simulation
//! workloads" builds jobs of N messages whose sizes and inter-arrival times come from the Facebook
//! key-value-store trace (FBKV, its ref. [11]: Atikoglu et al., "Workload Analysis of a
//! Large-Scale Key-Value Store", SIGMETRICS 2012) and the Facebook Hadoop trace (FBHD, its ref.
//! [53]: Roy et al., "Inside the Social Network's (Datacenter) Network", SIGCOMM 2015). This
//! module turns a uniform `u` into one message's size or one gap. The caller draws `u` from its
//! own stream (`crate::rng`), so `(spec, seed)` still fixes every message.
//!
//! | quantity | distribution | parameters | source |
//! |---|---|---|---|
//! | FBKV key size (B) | Generalized Extreme Value, `F(x) = exp(-(1 + k(x-μ)/σ)^(-1/k))` | μ = 30.7984, σ = 8.20449, k = 0.078688 | Atikoglu et al., "Statistical Modeling" section, ETC pool. Confirmed in leverich/mutilate `Generator.cc` (`createFacebookKey`, HEAD d65c6ef) and `README.md` (`fb_key = "gev:30.7984,8.20449,0.078688"`), and in scdblab/fbworkload `README.md` (047291e), which cites the paper |
//! | FBKV value size (B) | mixture: 0..=14 B with the 15 probabilities of [`FBKV_SMALL_VALUE_PROBS`] (total 0.44155), else 15 + Generalized Pareto, `F(y) = 1 - (1 + ky/σ)^(-1/k)` | σ = 214.476, k = 0.348238, location 15 | The paper fits GP(θ = 0, σ = 214.476, k = 0.348238) and gives the smallest sizes' probabilities separately (scdblab/fbworkload `README.md` says so). The mixture, location 15 included, is mutilate's `createFacebookValue` as of commit 46015b2 (2012-08-24: "Validated value-size distribution against Atikoglu's paper by comparing CDF and PDF"). PlatformLab/HomaSimulation `sizeDistributions/FacebookKeyValueMsgSizeDist.txt` (de26a1a) has the same cumulative table (0.00583 at 1 B … 0.44155 at 14 B, sizes 0 and 1 merged) and also starts its GP at 15, though with P(≤ 15 B) = 0.47 where mutilate has 0.44155 |
//! | FBKV gap (µs) | Generalized Pareto | θ = 0, σ = 16.0292 µs, k = 0.154971 | Atikoglu et al., same section (the gap between consecutive requests, in microseconds). Confirmed in mutilate `createFacebookIA` (HEAD) and `README.md` (`fb_ia = "pareto:0.0,16.0292,0.154971"`), and in scdblab/fbworkload `README.md` ("Inter-arrival time (microseconds)") |
//! | FBKV caps | clamps | key 1..=250 B; value 0..=1 MiB | memcached `doc/protocol.txt` ("the length limit of a key is set at 250 characters"); memcached `memcached.c` `settings.item_size_max = 1024 * 1024` ("The famous 1MB upper limit") |
//! | FBHD message size (B) | the built-in `fb_hadoop` CDF (20 points, 0..10 MB, mean 120,420.75 B), sampled as [`Cdf::sample`] | | Roy et al.'s Hadoop flow sizes as shipped by alibaba-edu/High-Precision-Congestion-Control `traffic_gen/FbHdp_distribution.txt` (9f4be2a), copied unchanged to `crates/sim/data/fb_hadoop.txt` (`shared/data/flowcdf/README.md`) |
//! | FBHD gap | exponential (Poisson arrivals), mean `8 · mean size / (load · rate)` = 80.2805 µs | load [`FBHD_REFERENCE_LOAD`] = 0.3, rate [`FBHD_REFERENCE_RATE`] = 40 Gb/s | ASSUMPTION, see below. The form and the 0.3 are HPCC `traffic_gen/traffic_gen.py` (0c590a2): `avg_inter_arrival = 1/(bandwidth*load/8./avg)`, exponential gaps, `-l` "by default 0.3". The 40 Gb/s is NetApprox §7.1 "Simulation details" (the line rate of the results it presents) |
//!
//! Decisions and assumptions:
//! - **An FBKV message is one key-value reply: key bytes + value bytes.** The ETC model has
//!   exactly these two sizes, drawn independently, plus the request gap. Protocol headers
//!   (memcached's `VALUE <key> <flags> <bytes>` line, TCP/IP) are left to the transport.
//! - **Two sizes from one uniform.** The value is the inverse CDF of `u` itself (monotone in
//!   `u`). The key uses a second uniform made by mixing `u`'s bits with `route::hash3`. For a
//!   uniform `u` this second uniform is uniform too and, in practice, independent of the first,
//!   even on a regular grid of `u` values (tested).
//! - **Whole bytes.** Continuous draws are rounded to the nearest byte, as
//!   `app::open_loop` rounds CDF samples and mutilate rounds keys (`KeyGenerator`); mutilate
//!   truncates values instead (under 0.5 B of difference). [`ApproxTrace::mean_message_bytes`] is
//!   the mean of the unrounded, unclamped model. Rounding and the clamps move it by well under
//!   0.1 % (tested): P(key > 250 B) ≈ 5.6e-7, P(value > 1 MiB) ≈ 2.9e-10.
//! - **FBHD gaps are an assumption, not a fit.** NetApprox says it takes FBHD's inter-arrival
//!   times from Roy et al.'s distributions but gives no parameters. Roy et al.'s flow
//!   inter-arrival measurements could not be checked against the paper's text from here, so no
//!   number is taken from them. We use what the public generator behind the shipped CDF (HPCC's)
//!   does: Poisson arrivals at a target load, at its default load (0.3) on NetApprox's 40 Gb/s
//!   hosts. A caller that wants another load can use [`exponential_gap`] with
//!   `8 · mean_message_bytes() / (load · rate)`.
//! - Why location 15 for the value tail. In mutilate's first check-in (386320d), `GPareto` took
//!   only `(scale, shape)`, and the tail after the table was GP(0, 214.476, 0.348238), the
//!   paper's fit taken literally. Commit 46015b2 added a location parameter, `GPareto(loc,
//!   scale, shape = 1.0)`, moved the tail to start at 15 after checking the CDF and PDF against
//!   the paper, and wrote the gap as `GPareto(0, 16.0292, 0.154971)`. A copy that pairs the old
//!   two-argument calls with the new constructor would get shape 1. Do not take such a copy.
//!
//! INVARIANT: for every `f64` input (NaN, ±∞, negative and ≥ 1 included) the functions
//! return `1 <= message_bytes(u) <= max_message_bytes()` and `message_gap(u) <= MAX_GAP`.
//! NaN and negatives are read as 0, and values at or above 1 as the largest `f64` below 1.
//! Each function is a pure function of `u`.

use std::sync::OnceLock;

use units::{Bps, Dur};

use crate::route::hash3;
use crate::workload::Cdf;

/// Which trace a NetApprox job's messages follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApproxTrace {
    /// Facebook memcached ETC pool (Atikoglu et al. 2012): a message is one key-value reply.
    Fbkv,
    /// Facebook Hadoop (Roy et al. 2015): a message is one flow of the `fb_hadoop` CDF.
    Fbhd,
}

/// FBKV key size, GEV location μ (bytes). Atikoglu et al., "Statistical Modeling" (ETC).
pub const FBKV_KEY_MU: f64 = 30.7984;
/// FBKV key size, GEV scale σ (bytes).
pub const FBKV_KEY_SIGMA: f64 = 8.20449;
/// FBKV key size, GEV shape k.
pub const FBKV_KEY_K: f64 = 0.078688;
/// The longest FBKV key: memcached's key length limit (`doc/protocol.txt`).
pub const FBKV_MAX_KEY_BYTES: u64 = 250;

/// Probabilities of FBKV value sizes 0, 1, …, 14 bytes (mutilate `createFacebookValue`, the
/// paper's separately listed smallest sizes). They sum to 0.44155.
pub const FBKV_SMALL_VALUE_PROBS: [f64; 15] = [
    0.00536, 0.00047, 0.17820, 0.09239, 0.00018, 0.02740, 0.00065, 0.00606, 0.00023, 0.00837, 0.00837,
    0.08989, 0.00092, 0.00326, 0.01980,
];
/// Where the Generalized Pareto part of FBKV value sizes starts (bytes): just after the table.
pub const FBKV_VALUE_TAIL_START: f64 = 15.0;
/// FBKV value size, GP scale σ (bytes). Atikoglu et al., "Statistical Modeling" (ETC).
pub const FBKV_VALUE_SIGMA: f64 = 214.476;
/// FBKV value size, GP shape k.
pub const FBKV_VALUE_K: f64 = 0.348238;
/// The largest FBKV value: memcached's default item size limit, 1 MiB (`memcached.c`).
pub const FBKV_MAX_VALUE_BYTES: u64 = 1 << 20;

/// FBKV gap between requests, GP scale σ (µs). Atikoglu et al., "Statistical Modeling" (ETC).
pub const FBKV_GAP_SIGMA_US: f64 = 16.0292;
/// FBKV gap between requests, GP shape k (location θ = 0).
pub const FBKV_GAP_K: f64 = 0.154971;

/// Offered load of an FBHD job's Poisson arrivals: the default of HPCC's `traffic_gen.py`
/// (`-l`, "by default 0.3"). An assumption (module doc): NetApprox gives no value.
pub const FBHD_REFERENCE_LOAD: f64 = 0.3;
/// Link rate that [`FBHD_REFERENCE_LOAD`] is a fraction of: NetApprox §7.1 (40 Gb/s hosts).
pub const FBHD_REFERENCE_RATE: Bps = Bps::from_gbps(40);

/// The longest gap any input yields. It is a backstop: the largest `u` below 1 gives about
/// 30.6 ms for FBKV and about 2.95 ms (36.7 mean gaps) for FBHD. At 1 s, a sum of gaps stays
/// far from the end of the picosecond clock.
pub const MAX_GAP: Dur = Dur::from_ms(1_000);

/// The largest `f64` below 1 (1 - 2^-53), where every input at or above 1 is clamped.
const U_MAX: f64 = 1.0 - f64::EPSILON / 2.0;

/// Domain-separation word for the key's uniform (an arbitrary fixed label, not a parameter).
const KEY_DRAW_WORD: u64 = u64::from_le_bytes(*b"fbkv-key");

impl ApproxTrace {
    /// Bytes of one message (>= 1), from `u` uniform in [0,1) (inverse-CDF or closed-form inverse).
    ///
    /// FBKV: key + value of one reply (the value is the inverse CDF of `u`, the key comes from a
    /// hash of `u`'s bits). FBHD: the `fb_hadoop` CDF's inverse at `u`, rounded.
    pub fn message_bytes(self, u: f64) -> u64 {
        let u = unit(u);
        match self {
            ApproxTrace::Fbkv => {
                let key = round_clamp(fbkv_key_bytes(key_uniform(u)), 1, FBKV_MAX_KEY_BYTES);
                let value = round_clamp(fbkv_value_bytes(u), 0, FBKV_MAX_VALUE_BYTES);
                key + value
            }
            ApproxTrace::Fbhd => {
                let cdf = fb_hadoop();
                round_clamp(cdf.sample(u), 1, cdf.max_size() as u64)
            }
        }
    }

    /// Gap between consecutive messages of a job becoming ready, from `u` uniform in [0,1).
    /// May be zero (at `u = 0`); never above [`MAX_GAP`].
    pub fn message_gap(self, u: f64) -> Dur {
        let u = unit(u);
        match self {
            ApproxTrace::Fbkv => {
                let us = gp_quantile(u, FBKV_GAP_SIGMA_US, FBKV_GAP_K);
                Dur::from_secs_f64(us * 1e-6).min(MAX_GAP)
            }
            ApproxTrace::Fbhd => exponential_gap(self.mean_gap(), u),
        }
    }

    /// Mean message size in bytes and mean gap (closed form or from the CDF), for load calculations.
    ///
    /// FBKV: E[key] + E[value] = μ + σ(Γ(1-k) - 1)/k + Σ v·p_v + (1 - Σ p_v)(15 + σ_v/(1-k_v))
    /// ≈ 36.2231 + 194.4448 = 230.668 B. FBHD: the CDF's trapezoid mean, 120,420.75 B.
    pub fn mean_message_bytes(self) -> f64 {
        match self {
            ApproxTrace::Fbkv => fbkv_mean_key_bytes() + fbkv_mean_value_bytes(),
            ApproxTrace::Fbhd => fb_hadoop().mean(),
        }
    }

    /// Mean gap between messages. FBKV: σ/(1-k) = 18.9688 µs. FBHD: 8 · mean size /
    /// ([`FBHD_REFERENCE_LOAD`] · [`FBHD_REFERENCE_RATE`]) = 80.2805 µs.
    pub fn mean_gap(self) -> Dur {
        match self {
            ApproxTrace::Fbkv => Dur::from_secs_f64(FBKV_GAP_SIGMA_US / (1.0 - FBKV_GAP_K) * 1e-6),
            ApproxTrace::Fbhd => {
                let rate_bps = FBHD_REFERENCE_RATE.get() as f64;
                Dur::from_secs_f64(8.0 * self.mean_message_bytes() / (FBHD_REFERENCE_LOAD * rate_bps))
            }
        }
    }

    /// The largest message [`message_bytes`](Self::message_bytes) can return: FBKV 250 B + 1 MiB,
    /// FBHD the CDF's last point (10 MB).
    pub fn max_message_bytes(self) -> u64 {
        match self {
            ApproxTrace::Fbkv => FBKV_MAX_KEY_BYTES + FBKV_MAX_VALUE_BYTES,
            ApproxTrace::Fbhd => fb_hadoop().max_size() as u64,
        }
    }
}

/// An exponential gap with mean `mean` (Poisson arrivals), from `u` uniform in [0,1):
/// `-ln(1 - u) · mean`, at most [`MAX_GAP`]. Inputs outside [0,1) are clamped as in the module
/// INVARIANT. Gives FBHD's gaps. A caller that wants another offered load can pass
/// `8 · mean_message_bytes() / (load · rate)`.
pub fn exponential_gap(mean: Dur, u: f64) -> Dur {
    let u = unit(u);
    // -ln(1 - u) via ln_1p: exact near u = 0, and at most 53 ln 2 ≈ 36.7 at U_MAX.
    let scale = -(-u).ln_1p();
    Dur::from_secs_f64(scale * mean.as_secs_f64()).min(MAX_GAP)
}

/// The built-in `fb_hadoop` CDF, parsed once.
fn fb_hadoop() -> &'static Cdf {
    static CDF: OnceLock<Cdf> = OnceLock::new();
    CDF.get_or_init(|| Cdf::builtin("fb_hadoop").expect("fb_hadoop is a built-in CDF"))
}

/// `u` clamped into [0, U_MAX]. NaN, negatives and -0.0 become +0.0 (one key hash for all).
fn unit(u: f64) -> f64 {
    if u > 0.0 {
        u.min(U_MAX)
    } else {
        0.0
    }
}

/// `x` rounded to whole bytes and clamped into [lo, hi] (NaN gives `lo`).
fn round_clamp(x: f64, lo: u64, hi: u64) -> u64 {
    // `as` saturates (NaN to 0, +inf to u64::MAX), then the clamp applies the bounds.
    (x.round() as u64).clamp(lo, hi)
}

/// A second uniform in (0,1) from the bits of `u`, for the FBKV key (module doc).
fn key_uniform(u: f64) -> f64 {
    let bits = hash3(u.to_bits(), KEY_DRAW_WORD, 0);
    ((bits >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

/// FBKV key size before rounding: the GEV inverse CDF, `μ + σ((-ln u)^(-k) - 1)/k`.
/// PRECONDITION: `u` in [0, U_MAX]. At `u = 0` it is the lower end of the support, μ - σ/k.
fn fbkv_key_bytes(u: f64) -> f64 {
    let t = -u.ln(); // in [2^-53, +inf]: finite powers below
    FBKV_KEY_MU + FBKV_KEY_SIGMA * (t.powf(-FBKV_KEY_K) - 1.0) / FBKV_KEY_K
}

/// FBKV value size before rounding: the table's size for `u` below 0.44155, else
/// 15 + the GP inverse CDF at `u` rescaled to the tail's share.
/// PRECONDITION: `u` in [0, U_MAX].
fn fbkv_value_bytes(u: f64) -> f64 {
    let mut cum = 0.0;
    for (size, p) in FBKV_SMALL_VALUE_PROBS.iter().enumerate() {
        cum += p;
        if u < cum {
            return size as f64;
        }
    }
    let tail = ((u - cum) / (1.0 - cum)).clamp(0.0, U_MAX);
    FBKV_VALUE_TAIL_START + gp_quantile(tail, FBKV_VALUE_SIGMA, FBKV_VALUE_K)
}

/// Generalized Pareto inverse CDF with location 0: `σ((1 - u)^(-k) - 1)/k`.
/// PRECONDITION: `u` in [0, U_MAX] and k > 0, so the result is finite and non-negative.
fn gp_quantile(u: f64, sigma: f64, k: f64) -> f64 {
    sigma * ((1.0 - u).powf(-k) - 1.0) / k
}

/// E[key] of the GEV: μ + σ(Γ(1-k) - 1)/k (finite for k < 1).
fn fbkv_mean_key_bytes() -> f64 {
    FBKV_KEY_MU + FBKV_KEY_SIGMA * (gamma(1.0 - FBKV_KEY_K) - 1.0) / FBKV_KEY_K
}

/// E[value] of the mixture: the table's part plus the tail's share times 15 + σ/(1-k).
fn fbkv_mean_value_bytes() -> f64 {
    let small: f64 = FBKV_SMALL_VALUE_PROBS.iter().enumerate().map(|(v, p)| v as f64 * p).sum();
    let mass: f64 = FBKV_SMALL_VALUE_PROBS.iter().sum();
    small + (1.0 - mass) * (FBKV_VALUE_TAIL_START + FBKV_VALUE_SIGMA / (1.0 - FBKV_VALUE_K))
}

/// Γ(x) for x >= 0.5 by the Lanczos approximation (g = 7, 9 terms; relative error ~1e-15).
fn gamma(x: f64) -> f64 {
    debug_assert!(x >= 0.5, "gamma: only x >= 0.5 is needed here");
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut a = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    (2.0 * std::f64::consts::PI).sqrt() * t.powf(x + 0.5) * (-t).exp() * a
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;
    use rand::SeedableRng;
    use rand_pcg::Pcg64;

    /// Midpoints (i + 0.5)/n of a regular grid on [0, 1).
    fn grid(n: usize) -> impl Iterator<Item = f64> {
        (0..n).map(move |i| (i as f64 + 0.5) / n as f64)
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn gamma_matches_known_values() {
        let pi = std::f64::consts::PI;
        assert!(close(gamma(0.5), pi.sqrt(), 1e-13), "{}", gamma(0.5));
        assert!(close(gamma(1.0), 1.0, 1e-13));
        assert!(close(gamma(1.5), pi.sqrt() / 2.0, 1e-13));
        assert!(close(gamma(5.0), 24.0, 1e-13));
    }

    #[test]
    fn fbkv_key_quantiles_match_the_gev_closed_form() {
        // At u = e^-1, (-ln u)^-k = 1: the key is μ.
        assert!((fbkv_key_bytes((-1.0f64).exp()) - FBKV_KEY_MU).abs() < 1e-9);
        // Hand-computed (awk, double precision) from μ + σ((-ln u)^-k - 1)/k.
        for (u, want) in [(0.1, 24.175298), (0.5, 33.849233), (0.9, 50.997128)] {
            let got = fbkv_key_bytes(u);
            assert!((got - want).abs() < 1e-5, "u {u}: {got} vs {want}");
            // And the GEV CDF maps it back to u.
            let z = 1.0 + FBKV_KEY_K * (got - FBKV_KEY_MU) / FBKV_KEY_SIGMA;
            assert!((((-z.powf(-1.0 / FBKV_KEY_K)).exp()) - u).abs() < 1e-12);
        }
    }

    #[test]
    fn fbkv_values_follow_the_table_then_the_gp_tail() {
        let mass: f64 = FBKV_SMALL_VALUE_PROBS.iter().sum();
        assert!((mass - 0.44155).abs() < 1e-12, "{mass}");
        assert_eq!(fbkv_value_bytes(0.0), 0.0);
        assert_eq!(fbkv_value_bytes(0.00535), 0.0);
        assert_eq!(fbkv_value_bytes(0.00540), 1.0); // past 0.00536
        assert_eq!(fbkv_value_bytes(0.1), 2.0); // (0.00583, 0.18403]
        assert_eq!(fbkv_value_bytes(0.2), 3.0); // (0.18403, 0.27642]
        assert_eq!(fbkv_value_bytes(0.44), 14.0); // (0.42175, 0.44155]
        // The tail starts at 15 B; its median is 15 + σ(2^k - 1)/k = 183.140766 (awk).
        assert!((fbkv_value_bytes(0.44155 + 1e-12) - 15.0).abs() < 1e-6);
        let tail_median = fbkv_value_bytes(0.44155 + 0.5 * (1.0 - 0.44155));
        assert!((tail_median - 183.140766).abs() < 1e-4, "{tail_median}");
    }

    #[test]
    fn fbkv_gap_quantiles_match_the_gp_closed_form() {
        let t = ApproxTrace::Fbkv;
        assert_eq!(t.message_gap(0.0), Dur::ZERO);
        // Median σ(2^k - 1)/k = 11.729285 µs (awk).
        let median_us = t.message_gap(0.5).as_secs_f64() * 1e6;
        assert!((median_us - 11.729285).abs() < 1e-5, "{median_us}");
        // The GP CDF maps gp_quantile(u) back to u.
        for u in [0.01, 0.3, 0.9, 0.999] {
            let x = gp_quantile(u, FBKV_GAP_SIGMA_US, FBKV_GAP_K);
            let f = 1.0 - (1.0 + FBKV_GAP_K * x / FBKV_GAP_SIGMA_US).powf(-1.0 / FBKV_GAP_K);
            assert!((f - u).abs() < 1e-12, "u {u}: {f}");
        }
    }

    /// Grid means against the closed forms. Tolerances: a midpoint grid of 10^6 points leaves
    /// out the last 5e-7 of the heavy tails (worth ~0.06 B of the value mean); the rest of
    /// the error comes from rounding to whole bytes and the key's hashed uniform (standard
    /// error ~0.01 B at this n).
    #[test]
    fn fbkv_means_match_the_closed_forms() {
        let t = ApproxTrace::Fbkv;
        // Pinned from the awk computation in the module doc.
        assert!((fbkv_mean_key_bytes() - 36.223050).abs() < 1e-5, "{}", fbkv_mean_key_bytes());
        assert!((fbkv_mean_value_bytes() - 194.444833).abs() < 1e-5, "{}", fbkv_mean_value_bytes());
        assert!((t.mean_message_bytes() - 230.667883).abs() < 1e-5);
        assert!((t.mean_gap().as_secs_f64() * 1e6 - 18.968816).abs() < 1e-5);

        let n = 1_000_000;
        let key = grid(n).map(fbkv_key_bytes).sum::<f64>() / n as f64;
        assert!(close(key, fbkv_mean_key_bytes(), 1e-4), "key {key}");
        let value = grid(n).map(fbkv_value_bytes).sum::<f64>() / n as f64;
        assert!(close(value, fbkv_mean_value_bytes(), 1e-3), "value {value}");
        let gap = grid(n).map(|u| t.message_gap(u).as_secs_f64()).sum::<f64>() / n as f64;
        assert!(close(gap, t.mean_gap().as_secs_f64(), 1e-3), "gap {gap}");
        // Whole messages: rounded, clamped, key from the hashed uniform.
        let bytes = grid(n).map(|u| t.message_bytes(u) as f64).sum::<f64>() / n as f64;
        assert!(close(bytes, t.mean_message_bytes(), 1e-3), "message {bytes}");
    }

    #[test]
    fn fbkv_key_is_uniform_and_uncorrelated_with_the_value() {
        // Sizes from the RNG callers use, and from a regular grid: either way the key's uniform
        // has mean 1/2 and no correlation with u (hence none with the value, which rises with u).
        let mut r = Pcg64::seed_from_u64(7);
        let draws: Vec<f64> = (0..200_000).map(|_| r.gen::<f64>()).collect();
        for us in [draws, grid(200_000).collect()] {
            let n = us.len() as f64;
            let k: Vec<f64> = us.iter().map(|&u| key_uniform(u)).collect();
            let mean_k = k.iter().sum::<f64>() / n;
            let mean_u = us.iter().sum::<f64>() / n;
            assert!((mean_k - 0.5).abs() < 0.005, "{mean_k}");
            let cov = us.iter().zip(&k).map(|(u, k)| (u - mean_u) * (k - mean_k)).sum::<f64>() / n;
            let corr = cov / (1.0 / 12.0);
            assert!(corr.abs() < 0.01, "corr {corr}");
        }
    }

    #[test]
    fn fbhd_sizes_reproduce_the_cdf() {
        let t = ApproxTrace::Fbhd;
        let text = include_str!("../../data/fb_hadoop.txt");
        let mut prev = (0.0, 0.0);
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let x: f64 = it.next().unwrap().parse().unwrap();
            let c: f64 = it.next().unwrap().parse::<f64>().unwrap() / 100.0;
            if c > 0.0 && c < 1.0 {
                // Each point's quantile is its size, and halfway to it is halfway in size.
                assert_eq!(t.message_bytes(c), x as u64, "quantile {c}");
                let mid = t.message_bytes((prev.1 + c) / 2.0) as f64;
                assert!((mid - (prev.0 + x) / 2.0).abs() <= 0.5, "between {prev:?} and {x}");
            }
            prev = (x, c);
        }
        assert_eq!(t.max_message_bytes(), 10_000_000);
        assert!((t.mean_message_bytes() - 120_420.75).abs() < 1e-6);
        let n = 1_000_000;
        let mean = grid(n).map(|u| t.message_bytes(u) as f64).sum::<f64>() / n as f64;
        assert!(close(mean, t.mean_message_bytes(), 1e-4), "{mean}");
    }

    #[test]
    fn fbhd_gaps_are_exponential_at_the_reference_load() {
        let t = ApproxTrace::Fbhd;
        // 8 · 120,420.75 B / (0.3 · 40 Gb/s) = 80.2805 µs.
        assert_eq!(t.mean_gap(), Dur::from_ps(80_280_500));
        let mean = t.mean_gap().as_secs_f64();
        let at = |u: f64| t.message_gap(u).as_secs_f64();
        assert_eq!(t.message_gap(0.0), Dur::ZERO);
        // Gaps are whole picoseconds: within 0.5 ps of the exact value (1e-8 relative here).
        assert!(close(at(1.0 - (-1.0f64).exp()), mean, 1e-7)); // -ln(1-u) = 1
        assert!(close(at(0.5), mean * std::f64::consts::LN_2, 1e-7));
        let n = 1_000_000;
        let grid_mean = grid(n).map(at).sum::<f64>() / n as f64;
        assert!(close(grid_mean, mean, 1e-4), "{grid_mean}");
    }

    #[test]
    fn extreme_uniforms_stay_in_bounds() {
        let inputs = [
            f64::NAN,
            f64::NEG_INFINITY,
            -1.0,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            1e-300,
            0.5,
            U_MAX,
            1.0,
            1.5,
            f64::MAX,
            f64::INFINITY,
        ];
        for t in [ApproxTrace::Fbkv, ApproxTrace::Fbhd] {
            for &u in &inputs {
                let b = t.message_bytes(u);
                assert!((1..=t.max_message_bytes()).contains(&b), "{t:?} u {u}: {b} B");
                assert!(t.message_gap(u) <= MAX_GAP, "{t:?} u {u}");
            }
            // The largest u stays far below the cap, and the gap grows with u up to there.
            assert!(t.message_gap(U_MAX) < Dur::from_ms(31), "{:?}", t.message_gap(U_MAX));
            assert!(t.message_gap(0.99) < t.message_gap(U_MAX));
            assert!(t.mean_message_bytes().is_finite() && t.mean_message_bytes() > 0.0);
            assert!(t.mean_gap() > Dur::ZERO);
        }
        // The heavy tails do reach their caps near u = 1 (FBKV: the value's 1 MiB).
        assert_eq!(fbkv_value_bytes(U_MAX).round().min(FBKV_MAX_VALUE_BYTES as f64), (1u64 << 20) as f64);
        assert_eq!(ApproxTrace::Fbhd.message_bytes(U_MAX), 10_000_000);
        assert_eq!(exponential_gap(Dur::from_secs_f64(100.0), U_MAX), MAX_GAP);
    }

    #[test]
    fn trace_names_are_snake_case() {
        assert_eq!(serde_json::to_string(&ApproxTrace::Fbkv).unwrap(), "\"fbkv\"");
        let t: ApproxTrace = serde_json::from_str("\"fbhd\"").unwrap();
        assert_eq!(t, ApproxTrace::Fbhd);
    }
}
