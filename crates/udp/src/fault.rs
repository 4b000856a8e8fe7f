//! The seeded fault injector: a layer between the protocol and the socket that drops,
//! duplicates, delays and reorders the datagrams a node sends (off by default).
//!
//! Kernels here lack `netem`, so tests and benchmarks inject loss in the driver instead. The
//! injector decides per datagram, in send order, from its own seeded RNG, so what it does to
//! the `i`-th datagram a node sends depends only on the seed and `i`: two runs that send the
//! same sequence lose the same datagrams. [`FaultConfig::drop_nth`] drops exact datagrams (by
//! send index, from 0), e.g. a message's tail.
//!
//! INVARIANT (bounded memory): at most [`MAX_HELD`] datagrams wait for a delayed release; a
//! datagram that would exceed it is dropped and counted.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// Datagrams a node holds back for delay or reordering at most.
pub const MAX_HELD: usize = 1 << 16;

/// What to do to the datagrams a node sends. The default does nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultConfig {
    /// Probability of dropping a datagram.
    pub loss: f64,
    /// Probability of sending a datagram twice.
    pub duplicate: f64,
    /// Probability of holding a datagram back by `reorder_delay`, so later ones overtake it.
    pub reorder: f64,
    /// How long a reordered datagram is held back.
    pub reorder_delay: Duration,
    /// Extra delay for every datagram.
    pub delay: Duration,
    /// Datagrams to drop by send index (from 0, every datagram counted, duplicates not).
    pub drop_nth: BTreeSet<u64>,
    /// Bounded-loss data packets to drop on their first transmission only, named by their first
    /// value index (`start`): a lost tail whose resends get through, whatever else the sender
    /// sends meanwhile (`drop_nth` counts every datagram, so under loss its indices can fall on
    /// a run of resends instead).
    pub drop_first_tx: BTreeSet<u32>,
    /// Seed of the injector's RNG.
    pub seed: u64,
}

impl FaultConfig {
    /// Whether it changes anything.
    pub fn is_active(&self) -> bool {
        self.loss > 0.0
            || self.duplicate > 0.0
            || self.reorder > 0.0
            || self.delay > Duration::ZERO
            || !self.drop_nth.is_empty()
            || !self.drop_first_tx.is_empty()
    }

    /// The probabilities must lie in [0, 1]: the first that does not, by name.
    pub fn check(&self) -> Result<(), (&'static str, f64)> {
        for (name, v) in [("loss", self.loss), ("duplicate", self.duplicate), ("reorder", self.reorder)] {
            if !(0.0..=1.0).contains(&v) {
                return Err((name, v));
            }
        }
        Ok(())
    }
}

/// Counters of what the injector did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Datagrams submitted.
    pub num_submitted: u64,
    /// Dropped (at random, by index, or because too many were held).
    pub num_dropped: u64,
    /// Sent twice.
    pub num_duplicated: u64,
    /// Held back for reordering.
    pub num_reordered: u64,
}

/// A datagram on its way out: where to, and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// Destination.
    pub dest: SocketAddr,
    /// The local address to send it from (a reply: the address its peer sent to), or `None`
    /// for the kernel's choice.
    pub src: Option<IpAddr>,
    /// DSCP to send it with.
    pub dscp: u8,
    /// The datagram.
    pub bytes: Vec<u8>,
}

/// The injector (module docs).
#[derive(Debug)]
pub struct FaultInjector {
    cfg: FaultConfig,
    rng: Pcg64,
    next_index: u64,
    /// Held datagrams by release time, then submission order.
    held: BinaryHeap<Reverse<(Instant, u64, HeldDatagram)>>,
    stats: FaultStats,
    /// Of `drop_first_tx`, the packets already dropped once (a subset: bounded by the config).
    dropped_first: BTreeSet<u32>,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct HeldDatagram {
    dest: SocketAddr,
    src: Option<IpAddr>,
    dscp: u8,
    bytes: Vec<u8>,
}

impl FaultInjector {
    /// An injector for `cfg`.
    pub fn new(cfg: FaultConfig) -> FaultInjector {
        let rng = Pcg64::seed_from_u64(cfg.seed);
        FaultInjector { cfg, rng, next_index: 0, held: BinaryHeap::new(), stats: FaultStats::default(), dropped_first: BTreeSet::new() }
    }

    /// Whether `bytes` is a bounded-loss data packet named in `drop_first_tx` and not dropped
    /// before (then it is now).
    fn is_first_tx_to_drop(&mut self, bytes: &[u8]) -> bool {
        if self.cfg.drop_first_tx.is_empty() {
            return false;
        }
        match crate::datagram::parse(bytes) {
            Ok((proto::Segment::Mlt(h), _)) if !h.flags.contains(wire::Flags::ACK) => {
                self.cfg.drop_first_tx.contains(&h.start) && self.dropped_first.insert(h.start)
            }
            _ => false,
        }
    }

    /// Submit a datagram at `now`: it is dropped, or pushed to `out` now (once or twice), or
    /// held until [`FaultInjector::release`] hands it out.
    pub fn submit(&mut self, now: Instant, d: Outgoing, out: &mut Vec<Outgoing>) {
        let i = self.next_index;
        self.next_index += 1;
        self.stats.num_submitted += 1;
        // Draw every decision for every datagram, so datagram i's fate depends on i alone.
        let (lose, dup, reorder) = (self.rng.gen::<f64>(), self.rng.gen::<f64>(), self.rng.gen::<f64>());
        if self.cfg.drop_nth.contains(&i) || lose < self.cfg.loss || self.is_first_tx_to_drop(&d.bytes) {
            self.stats.num_dropped += 1;
            return;
        }
        let copies = if dup < self.cfg.duplicate { 2 } else { 1 };
        self.stats.num_duplicated += u64::from(copies == 2);
        let mut delay = self.cfg.delay;
        if reorder < self.cfg.reorder {
            delay += self.cfg.reorder_delay;
            self.stats.num_reordered += 1;
        }
        for _ in 0..copies {
            if delay.is_zero() {
                out.push(d.clone());
            } else if self.held.len() >= MAX_HELD {
                self.stats.num_dropped += 1;
            } else {
                let h = HeldDatagram { dest: d.dest, src: d.src, dscp: d.dscp, bytes: d.bytes.clone() };
                self.held.push(Reverse((now + delay, i, h)));
            }
        }
    }

    /// Push the held datagrams due at `now` to `out`, in release order.
    pub fn release(&mut self, now: Instant, out: &mut Vec<Outgoing>) {
        while let Some(Reverse((at, _, _))) = self.held.peek() {
            if *at > now {
                break;
            }
            let Some(Reverse((_, _, h))) = self.held.pop() else { break };
            out.push(Outgoing { dest: h.dest, src: h.src, dscp: h.dscp, bytes: h.bytes });
        }
    }

    /// When the next held datagram is due, if any.
    pub fn next_release(&self) -> Option<Instant> {
        self.held.peek().map(|Reverse((at, _, _))| *at)
    }

    /// Counters.
    pub fn stats(&self) -> FaultStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dg(i: u8) -> Outgoing {
        Outgoing { dest: "127.0.0.1:9".parse().unwrap(), src: None, dscp: 0, bytes: vec![i] }
    }

    fn run(cfg: &FaultConfig, n: u8) -> Vec<u8> {
        let mut f = FaultInjector::new(cfg.clone());
        let t0 = Instant::now();
        let mut out = Vec::new();
        for i in 0..n {
            f.submit(t0, dg(i), &mut out);
        }
        f.release(t0 + Duration::from_secs(3600), &mut out);
        out.iter().map(|d| d.bytes[0]).collect()
    }

    #[test]
    fn off_by_default_and_everything_passes_in_order() {
        let cfg = FaultConfig::default();
        assert!(!cfg.is_active());
        assert_eq!(run(&cfg, 50), (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn the_same_seed_drops_the_same_datagrams() {
        let cfg = FaultConfig { loss: 0.3, seed: 7, ..FaultConfig::default() };
        let (a, b) = (run(&cfg, 200), run(&cfg, 200));
        assert_eq!(a, b);
        let lost = 200 - a.len();
        assert!((35..85).contains(&lost), "{lost} of 200 lost at p = 0.3");
        let other = run(&FaultConfig { seed: 8, ..cfg.clone() }, 200);
        assert_ne!(a, other);
        // Datagram i's fate depends on i alone: a longer run agrees on the common prefix.
        let longer = run(&cfg, 250);
        assert_eq!(&longer[..a.len()], &a[..]);
    }

    #[test]
    fn first_transmissions_are_dropped_once_and_acks_never() {
        use proto::Segment;
        use wire::MltRepr;
        let data = |start: u32, seq: u64| {
            let h = MltRepr { conn: 1, seq, start, end: start + 2, total: 100, value_bytes: 4, len: 8, ..Default::default() };
            let mut buf = Vec::new();
            crate::datagram::emit(&Segment::Mlt(h), &[7; 8], &mut buf).unwrap();
            buf
        };
        let ack = {
            let h = MltRepr { conn: 1, start: 4, end: 6, total: 100, value_bytes: 4, flags: wire::Flags::ACK, ..Default::default() };
            let mut buf = Vec::new();
            crate::datagram::emit(&Segment::Mlt(h), &[], &mut buf).unwrap();
            buf
        };
        let cfg = FaultConfig { drop_first_tx: [4, 8].into_iter().collect(), ..FaultConfig::default() };
        assert!(cfg.is_active());
        let mut f = FaultInjector::new(cfg);
        let t0 = Instant::now();
        let dest: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let mut out = Vec::new();
        // Packets starting at 0, 4, 8 sent; 4 and 8 dropped; their resends (and an ACK naming
        // value 4, and anything that does not parse) pass.
        for (i, bytes) in [data(0, 1), data(4, 2), data(8, 3), ack, data(4, 4), data(8, 5), vec![0xff; 3]].into_iter().enumerate() {
            f.submit(t0, Outgoing { dest, src: None, dscp: 0, bytes: bytes.clone() }, &mut out);
            let passed = out.last().is_some_and(|o| o.bytes == bytes);
            assert_eq!(passed, !matches!(i, 1 | 2), "datagram {i}");
        }
        assert_eq!(f.stats().num_dropped, 2);
    }

    #[test]
    fn exact_drops_duplicates_and_reordering() {
        let cfg = FaultConfig { drop_nth: [3, 4].into_iter().collect(), ..FaultConfig::default() };
        assert_eq!(run(&cfg, 6), vec![0, 1, 2, 5]);
        let cfg = FaultConfig { duplicate: 1.0, ..FaultConfig::default() };
        assert_eq!(run(&cfg, 3), vec![0, 0, 1, 1, 2, 2]);
        // Every datagram held back the same: released in submission order.
        let cfg = FaultConfig { reorder: 1.0, reorder_delay: Duration::from_millis(1), ..FaultConfig::default() };
        assert_eq!(run(&cfg, 4), vec![0, 1, 2, 3]);
        // Some held back: the others overtake them.
        let cfg = FaultConfig { reorder: 0.5, reorder_delay: Duration::from_millis(1), seed: 3, ..FaultConfig::default() };
        let got = run(&cfg, 40);
        let mut sorted = got.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..40).collect::<Vec<_>>());
        assert_ne!(got, sorted);
    }

    #[test]
    fn held_datagrams_leave_when_due() {
        let cfg = FaultConfig { delay: Duration::from_millis(5), ..FaultConfig::default() };
        let mut f = FaultInjector::new(cfg);
        let t0 = Instant::now();
        let mut out = Vec::new();
        f.submit(t0, dg(1), &mut out);
        assert!(out.is_empty());
        assert_eq!(f.next_release(), Some(t0 + Duration::from_millis(5)));
        f.release(t0 + Duration::from_millis(4), &mut out);
        assert!(out.is_empty());
        f.release(t0 + Duration::from_millis(5), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(f.next_release(), None);
    }

    #[test]
    fn probabilities_outside_zero_one_are_refused() {
        assert_eq!(FaultConfig { loss: 1.5, ..FaultConfig::default() }.check(), Err(("loss", 1.5)));
        assert!(FaultConfig { reorder: -0.1, ..FaultConfig::default() }.check().is_err());
        assert!(FaultConfig { loss: f64::NAN, ..FaultConfig::default() }.check().is_err());
    }
}
