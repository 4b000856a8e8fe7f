//! The closed-form ideal FCT: what a flow would take alone in the network, sent at line rate
//! with no window limit, with store-and-forward at every hop and this run's packetization.
//!
//! A flow of `n` packets crosses hops `1..=H` (rates `r_g`, delays `d_g`). Packet `i` starts on
//! hop `g` when it has fully arrived and packet `i-1` has left, so the last packet's finish time
//! is the heaviest monotone lattice path through the (packet, hop) grid of transmission times
//! (a (max,+) tandem-queue identity). With packets `1..n-1` of full size `S` and the last of
//! size `s <= S`, the heaviest path goes down hops `< a` with packet 1, across packets
//! `1..n-1` on hop `a`, down hops `a+1..=b` with packet `n-1`, across to packet `n` on hop `b`,
//! and down the remaining hops with packet `n`; the ideal maximises over `a <= b`. Delays add
//! once per hop on every path. The FCT then adds the transport's own round trips: the
//! handshake (SYN and SYN-ACK, header-only) if enabled, and the ACK of the last byte for a
//! reliable transport.
//!
//! CORRECTNESS: the simulator computes serialization with the same `Bps::tx_time` (rounded up
//! per packet), so an uncontended flow's FCT equals this value exactly, in picoseconds.

use units::{Bps, Bytes, Dur};

/// One hop of a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    /// Line rate of the link.
    pub rate: Bps,
    /// Propagation delay of the link.
    pub delay: Dur,
}

/// Packetization and transport semantics that shape the ideal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdealModel {
    /// Payload bytes per packet.
    pub mss: u64,
    /// Header bytes per packet (and the size of an ACK or SYN).
    pub header: u64,
    /// Whether a three-way handshake precedes data.
    pub handshake: bool,
    /// Whether completion waits for the ACK of the last byte (TCP) or not (UDP).
    pub acked: bool,
}

/// Time for one packet of `size` to cross `path`, store-and-forward.
pub fn one_way(path: &[Hop], size: Bytes) -> Dur {
    path.iter().fold(Dur::ZERO, |acc, h| acc + h.rate.tx_time(size) + h.delay)
}

/// Time from the first bit of the first packet leaving until the last packet has fully arrived
/// at the end of `fwd`, for `size` payload bytes.
pub fn data_pipeline(fwd: &[Hop], size: u64, m: &IdealModel) -> Dur {
    debug_assert!(size >= 1 && !fwd.is_empty());
    let n = size.div_ceil(m.mss);
    let full = Bytes(m.mss + m.header);
    let last = Bytes(size - (n - 1) * m.mss + m.header);
    let delays = fwd.iter().fold(Dur::ZERO, |acc, h| acc + h.delay);
    if n == 1 {
        return delays + fwd.iter().fold(Dur::ZERO, |acc, h| acc + h.rate.tx_time(last));
    }
    let h = fwd.len();
    let tf: Vec<Dur> = fwd.iter().map(|x| x.rate.tx_time(full)).collect();
    let tl: Vec<Dur> = fwd.iter().map(|x| x.rate.tx_time(last)).collect();
    // prefix_full[g] = sum of tf[..g]; suffix_last[g] = sum of tl[g+1..].
    let mut best = Dur::ZERO;
    for a in 0..h {
        let down_first: Dur = tf[..a].iter().fold(Dur::ZERO, |x, &y| x + y);
        let across = tf[a] * (n - 1);
        let mut mid = Dur::ZERO; // full packet n-1 going down hops a+1..=b
        for b in a..h {
            if b > a {
                mid += tf[b];
            }
            let tail: Dur = tl[b + 1..].iter().fold(Dur::ZERO, |x, &y| x + y);
            let total = down_first + across + mid + tl[b] + tail;
            if total > best {
                best = total;
            }
        }
    }
    delays + best
}

/// The ideal FCT of a flow of `size` bytes over `fwd` with ACKs returning over `rev`.
pub fn ideal_fct(fwd: &[Hop], rev: &[Hop], size: u64, m: &IdealModel) -> Dur {
    let hdr = Bytes(m.header);
    let mut t = data_pipeline(fwd, size, m);
    if m.handshake {
        t += one_way(fwd, hdr) + one_way(rev, hdr);
    }
    if m.acked {
        t += one_way(rev, hdr);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hops(n: usize, gbps: u64, delay_ns: u64) -> Vec<Hop> {
        vec![Hop { rate: Bps::from_gbps(gbps), delay: Dur::from_ns(delay_ns) }; n]
    }

    /// Brute force: simulate the tandem of store-and-forward queues packet by packet.
    fn brute(fwd: &[Hop], size: u64, m: &IdealModel) -> Dur {
        let n = size.div_ceil(m.mss);
        let mut arrive: Vec<Dur> = vec![Dur::ZERO; n as usize]; // arrival times at the next hop
        for h in fwd {
            let mut free = Dur::ZERO;
            for (i, a) in arrive.iter_mut().enumerate() {
                let payload = if i as u64 == n - 1 { size - (n - 1) * m.mss } else { m.mss };
                let start = if *a > free { *a } else { free };
                free = start + h.rate.tx_time(Bytes(payload + m.header));
                *a = free + h.delay;
            }
        }
        arrive[n as usize - 1]
    }

    #[test]
    fn matches_brute_force_on_uniform_and_mixed_paths() {
        let m = IdealModel { mss: 1460, header: 40, handshake: false, acked: false };
        let mut mixed = hops(1, 10, 3000);
        mixed.extend(hops(2, 40, 1000));
        mixed.extend(hops(1, 25, 500));
        let slow_middle = vec![
            Hop { rate: Bps::from_gbps(100), delay: Dur::from_ns(100) },
            Hop { rate: Bps::from_gbps(10), delay: Dur::from_ns(100) },
            Hop { rate: Bps::from_gbps(100), delay: Dur::from_ns(100) },
        ];
        for path in [hops(4, 10, 3000), mixed, slow_middle] {
            for size in [1, 100, 1460, 1461, 2920, 5000, 14_600, 100_000, 1_234_567] {
                assert_eq!(data_pipeline(&path, size, &m), brute(&path, size, &m), "size {size}");
            }
        }
    }

    #[test]
    fn single_packet_single_hop() {
        let m = IdealModel { mss: 1460, header: 40, handshake: false, acked: true };
        let p = hops(1, 10, 1000);
        // data 1500 B = 1.2 us + 1 us; ACK 40 B = 32 ns + 1 us.
        assert_eq!(ideal_fct(&p, &p, 1460, &m), Dur::from_ns(1200 + 1000 + 32 + 1000));
        let hs = IdealModel { handshake: true, ..m };
        assert_eq!(ideal_fct(&p, &p, 1460, &hs), Dur::from_ns(1200 + 1000 + 32 + 1000 + 2 * 1032));
    }
}
