//! The unit tests' deterministic generator (SplitMix64): random traces, fabrics and fills
//! that are the same on every run.

use crate::fabric::Fabric;
use crate::trace::Trace;

/// SplitMix64 with state `.0`.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `k` distinct ports out of `n`.
    pub(crate) fn ports(&mut self, n: u64, k: u64) -> Vec<u64> {
        let mut all: Vec<u64> = (0..n).collect();
        for i in 0..k as usize {
            let j = i + self.below(n - i as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(k as usize);
        all
    }
}

/// The generator seeded with `seed` as a closure.
pub(crate) fn splitmix(seed: u64) -> impl FnMut() -> u64 {
    let mut r = Rng(seed);
    move || r.next()
}

/// A fabric of `n` ports: all of 12 bytes/s if `is_uniform` (levels tie and the tie-break
/// decides), else each egress and ingress of 1 to about 144 drawn from `next`.
pub(crate) fn random_fabric(next: &mut impl FnMut() -> u64, n: usize, is_uniform: bool) -> Fabric {
    if is_uniform {
        Fabric::uniform(n, 12.0)
    } else {
        Fabric {
            egress: (0..n).map(|_| 1.0 + (next() % 1000) as f64 / 7.0).collect(),
            ingress: (0..n).map(|_| 1.0 + (next() % 1000) as f64 / 7.0).collect(),
        }
    }
}

/// The bounds of [`random_trace`]'s draws.
pub(crate) struct TraceShape {
    /// Ports: 3 to `3 + ports - 1`.
    pub(crate) ports: u64,
    /// Coflows: 1 to `coflows`.
    pub(crate) coflows: u64,
    /// Milliseconds between arrivals: 0 to `gap - 1`.
    pub(crate) gap: u64,
    /// Mappers and reducers each: 1 to `width` (at most the ports).
    pub(crate) width: u64,
    /// A reducer's MB from each mapper: 1 to `mb`.
    pub(crate) mb: u64,
}

/// A random trace of `shape` drawn from `seed`, the same on every run.
pub(crate) fn random_trace(seed: u64, shape: &TraceShape) -> Trace {
    let mut r = Rng(seed);
    let ports = 3 + r.below(shape.ports);
    let num = 1 + r.below(shape.coflows);
    let mut text = format!("{ports} {num}\n");
    let mut t = 0;
    for id in 0..num {
        t += r.below(shape.gap);
        let m = 1 + r.below(ports.min(shape.width));
        let k = 1 + r.below(ports.min(shape.width));
        text += &format!("{id} {t} {m}");
        for p in r.ports(ports, m) {
            text += &format!(" {p}");
        }
        text += &format!(" {k}");
        for p in r.ports(ports, k) {
            text += &format!(" {p}:{}", m * (1 + r.below(shape.mb)));
        }
        text += "\n";
    }
    Trace::parse(&text).unwrap()
}
