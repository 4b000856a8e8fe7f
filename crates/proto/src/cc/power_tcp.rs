//! PowerTCP (Addanki, Michel, Schmid, NSDI'22, Algorithm 1): a window controller driven by
//! in-band network telemetry (INT). Every ACK echoes the per-hop INT stack of the data
//! segment it acknowledges; from two consecutive stacks the sender computes, per hop, the
//! *normalized power* `Γ = λ·(q + b·τ) / (b²·τ)` (current × voltage over the base power),
//! takes the bottleneck (the largest), smooths it over one base RTT τ, sets
//! `cwnd = γ·(cwnd_old/Γ_smooth + β) + (1 − γ)·cwnd` and paces at `rate = cwnd/τ`.
//!
//! Pipeline position: a [`CongestionControl`] owned by a TCP sender, fed through
//! [`CongestionControl::on_int`]; the sender paces by [`CongestionControl::pacing_rate`].
//! Loss handling is NewReno's, delegated to [`NewReno`] as [`super::Dctcp`] does (the
//! paper's setting is lossless RDMA and specifies none): fast retransmit, fast recovery and
//! the RTO move the window exactly as NewReno does, telemetry does not move it while the
//! sender is in fast recovery, and after recovery or an RTO the window NewReno chose is the
//! new `cwnd_old`. PowerTCP has no slow start and no ACK-clocked growth:
//! [`CongestionControl::on_ack`] is a no-op, so without telemetry the window stays put.
//!
//! Equilibrium (from the update law, not stated as such in the paper): with N flows on a
//! full bottleneck, `cwnd_i = cwnd_i/Γ + β` for every flow gives `Γ = 1 + N·β/(b·τ)`, i.e.
//! a standing queue of `N·β` bytes; a lone flow whose NIC is the bottleneck is held at the
//! window bound instead and keeps no queue.
//!
//! Choices (the paper leaves them open; each follows the authors' code where it says more):
//! - `cwnd_old` is Algorithm 1's `GET_CWND(ack.seq)`: the window in force when the
//!   acknowledged segment was sent, as the authors' Linux module (`get_cwnd`/`update_old`)
//!   keeps it. Every telemetry ACK records `(SND.MAX, cwnd)`; an ACK whose `SND.UNA`
//!   passes a record's `SND.MAX` makes that record's window `cwnd_old`. The measured power
//!   describes the packets sent under exactly that window, so the ratio `cwnd_old/Γ` is not
//!   applied twice. (The ns-3 artifact instead refreshes `cwnd_old` once per RTT; with
//!   windows far below the NIC's BDP that snapshot runs ahead of the telemetry and the
//!   window oscillates: in the `Pair` harness, with pacing, 68% utilization for one flow on
//!   a bottleneck 4× slower than its NIC with β = BDP/400 (99% here), and a mean queue of
//!   1.4 BDP for eight flows (0.78 BDP here, the N·β equilibrium).)
//! - Pacing at `rate = cwnd/τ` (Algorithm 1's second output), capped at the NIC rate. Without
//!   it an ACK-clocked flow whose share is far below its NIC rate sends bursts separated by
//!   idle gaps, one INT sample spans a whole gap, and the window swings between the bounds.
//! - Initial window: the host BDP `host_rate·τ`, as the paper's evaluation and both of the
//!   authors' implementations (ns-3 `RdmaHw::AddQueuePair`, Linux `powertcp_init`) do;
//!   `TcpConfig::init_cwnd_pkts` is ignored. After a lost SYN the window starts at one
//!   segment (RFC 5681 §3.1) and the power law grows it back within two RTTs.
//! - Window bounds: `[1 SMSS, host_rate·τ]`. The upper bound is the host BDP with no
//!   headroom, as in the authors' ns-3 code (window = rate·τ, rate ≤ NIC rate).
//! - Hops: stacks are compared position by position (hop `i` with the previous stack's hop
//!   `i`); a hop whose timestamp did not advance or whose byte counter went backwards (a path
//!   change) is skipped. As in Algorithm 1 (and ns-3), `Γ_norm` starts at 0 with `Δt = 0`
//!   and takes a hop's `Γ'` only if strictly larger, so a sample in which nothing arrived at
//!   any hop leaves `Γ_smooth` unchanged. `Γ_smooth` starts at 1 (ns-3 `hp.u = 1`).
//! - The first telemetry ACK only stores its stack (there is nothing to difference against).
//!
//! INVARIANT: `mss <= cwnd <= max_cwnd` outside fast recovery (NewReno may inflate above
//! `max_cwnd` during recovery); `Γ_smooth >= 0`; `old` is sorted by strictly increasing
//! `SND.MAX` and holds at most one record per segment in flight.

use std::collections::VecDeque;

use units::{Bps, Dur, Time, PS_PER_S};
use wire::IntStack;

use super::{AckInfo, CongestionControl, NewReno};

/// PowerTCP window state.
#[derive(Clone, Debug, PartialEq)]
pub struct PowerTcp {
    /// Holds `cwnd` and performs NewReno's loss response.
    reno: NewReno,
    /// EWMA weight γ of Algorithm 1 `UPDATE_WINDOW`.
    gamma: f64,
    /// Additive increase β in bytes.
    beta: f64,
    /// Base RTT τ.
    tau: Dur,
    /// The NIC rate: the pacing rate's bound.
    host_rate: Bps,
    /// Upper bound of the window: the host BDP `host_rate·τ`.
    max_cwnd: u64,
    /// Algorithm 1 `cwnd_old`: the window when the last acknowledged segment was sent.
    cwnd_old: u64,
    /// Algorithm 1 `UPDATE_OLD` records `(SND.MAX, cwnd)`: segments from `SND.MAX` on were
    /// sent under `cwnd` (until the next record).
    old: VecDeque<(u64, u64)>,
    /// Algorithm 1 `Γ_smooth`.
    power: f64,
    /// Algorithm 1 `prevInt`: the stack of the previous telemetry ACK.
    prev: Option<IntStack>,
}

impl PowerTcp {
    /// A controller with sender MSS `mss` (bytes), EWMA weight `gamma`, additive increase
    /// `beta_bytes`, base RTT `base_rtt` (τ) and NIC rate `host_rate`.
    /// PRECONDITION: `0 < gamma <= 1`, `base_rtt > 0`, `host_rate > 0`.
    pub fn new(mss: u64, gamma: f64, beta_bytes: u64, base_rtt: Dur, host_rate: Bps) -> PowerTcp {
        debug_assert!(gamma > 0.0 && gamma <= 1.0, "gamma = {gamma}");
        debug_assert!(base_rtt > Dur::ZERO && host_rate.get() > 0, "PowerTCP needs τ and b");
        let max_cwnd = host_rate.bytes_in(base_rtt).get().max(mss);
        PowerTcp {
            reno: NewReno::new(mss, max_cwnd),
            gamma,
            beta: beta_bytes as f64,
            tau: base_rtt,
            host_rate,
            max_cwnd,
            cwnd_old: max_cwnd,
            old: VecDeque::new(),
            power: 1.0,
            prev: None,
        }
    }

    /// Algorithm 1 `Γ_smooth`, the smoothed normalized power of the bottleneck (1 = the link
    /// exactly full with an empty queue).
    #[inline]
    pub fn smoothed_power(&self) -> f64 {
        self.power
    }

    /// Algorithm 1 `cwnd_old`, in bytes.
    #[inline]
    pub fn cwnd_old(&self) -> u64 {
        self.cwnd_old
    }

    /// The window bound `host_rate·τ`, in bytes.
    #[inline]
    pub fn max_window(&self) -> u64 {
        self.max_cwnd
    }

    /// Algorithm 1 `NORM_POWER` before smoothing: the largest normalized power over the hops
    /// of `cur` compared with `prev`, and the `dt` of that hop (the first on ties). `(0, 0)`
    /// if no hop has a positive power (then smoothing changes nothing).
    ///
    /// Per hop `i` (Algorithm 1, "for each egress port i on the path"):
    /// `dt = ts − ts_prev`, `q̇ = (qlen − qlen_prev)/dt`, `μ = (tx − tx_prev)/dt`,
    /// `λ = q̇ + μ`, `Γ' = λ·(qlen + b·τ)`, `e = b²·τ`, `Γ'_norm = Γ'/e`, with `b` the hop's
    /// rate in bytes per second.
    pub fn norm_power(prev: &IntStack, cur: &IntStack, tau: Dur) -> (f64, Dur) {
        let tau_s = tau.as_secs_f64();
        let mut best = 0.0;
        let mut best_dt = Dur::ZERO;
        for (p, c) in prev.hops().iter().zip(cur.hops()) {
            // A timestamp that did not advance gives no rate; a byte counter that went
            // backwards belongs to another port (the path changed): no sample from this hop.
            let Some(dt_ps) = c.ts_ps.checked_sub(p.ts_ps).filter(|&d| d > 0) else { continue };
            let Some(dtx) = c.tx_bytes.checked_sub(p.tx_bytes) else { continue };
            if c.rate_bps == 0 {
                continue;
            }
            let dt = Dur(dt_ps).as_secs_f64();
            let b = c.rate_bps as f64 / 8.0;
            let qlen = c.qlen_bytes as f64;
            // Algorithm 1: queue gradient q̇ = dq/dt and transmit rate μ, both bytes/s.
            let q_dot = (qlen - p.qlen_bytes as f64) / dt;
            let mu = dtx as f64 / dt;
            // Algorithm 1: current λ = q̇ + μ, voltage ν = qlen + b·τ, power Γ' = λ·ν.
            let lambda = q_dot + mu;
            let power = lambda * (qlen + b * tau_s);
            // Algorithm 1: base power e = b²·τ, normalized power Γ'_norm = Γ'/e.
            let norm = power / (b * b * tau_s);
            // Algorithm 1: the bottleneck is the hop with the largest normalized power
            // (`Γ_norm = 0; if Γ' > Γ_norm then Γ_norm = Γ', Δt = dt`).
            if norm > best {
                best = norm;
                best_dt = Dur(dt_ps);
            }
        }
        (best, best_dt)
    }

    /// Algorithm 1 smoothing: `Γ_smooth = (Γ_smooth·(τ − Δt) + Γ_norm·Δt)/τ`, `Δt <= τ`.
    fn smooth(&mut self, norm: f64, dt: Dur) {
        let tau = self.tau.ps() as f64;
        let dt = dt.min(self.tau).ps() as f64;
        self.power = (self.power * (tau - dt) + norm * dt) / tau;
        debug_assert!(self.power >= 0.0);
    }

    /// Algorithm 1 `GET_CWND(ack.seq)`: the window in force when the newest segment this ACK
    /// acknowledges was sent (the last record at or below `SND.UNA − 1`); records below it
    /// are no longer needed. Unchanged if no record is that old.
    fn get_cwnd(&mut self, snd_una: u64) -> u64 {
        while let Some(&(snd_max, cwnd)) = self.old.front() {
            if snd_max >= snd_una {
                break;
            }
            self.cwnd_old = cwnd;
            self.old.pop_front();
        }
        self.cwnd_old
    }

    /// Algorithm 1 `UPDATE_OLD(cwnd, ack.seq)`: segments from `snd_max` on are sent under the
    /// current window (a record for the same `snd_max` is overwritten: nothing was sent under
    /// it).
    fn update_old(&mut self, snd_max: u64) {
        let cwnd = self.reno.window();
        match self.old.back_mut() {
            Some(last) if last.0 >= snd_max => last.1 = cwnd,
            _ => self.old.push_back((snd_max, cwnd)),
        }
    }

    /// Algorithm 1 `UPDATE_WINDOW`: `cwnd = γ·(cwnd_old/Γ_smooth + β) + (1 − γ)·cwnd`,
    /// bounded to `[SMSS, host BDP]`. A zero `Γ_smooth` (no power for a whole τ) makes the
    /// quotient +∞, and the window goes to its bound.
    fn update_window(&mut self, cwnd_old: u64) {
        let cwnd = self.reno.window() as f64;
        let target = cwnd_old as f64 / self.power + self.beta;
        let w = self.gamma * target + (1.0 - self.gamma) * cwnd;
        debug_assert!(!w.is_nan());
        let w = w.clamp(self.reno.mss() as f64, self.max_cwnd as f64);
        self.reno.set_window(w as u64);
    }

    /// After NewReno set the window for a loss (recovery exit, RTO, SYN timeout): data sent
    /// from now on is sent under that window, whatever was recorded before.
    fn restart(&mut self) {
        self.cwnd_old = self.reno.window();
        self.old.clear();
    }
}

impl CongestionControl for PowerTcp {
    #[inline]
    fn window(&self) -> u64 {
        self.reno.window()
    }

    #[inline]
    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    /// PowerTCP does not use ECN: data is sent Not-ECT and ECE is ignored.
    #[inline]
    fn on_ecn(&mut self, _now: Time, _ack: &AckInfo, _may_cut: bool) -> bool {
        false
    }

    #[inline]
    fn wants_int(&self) -> bool {
        true
    }

    fn on_int(&mut self, _now: Time, ack: &AckInfo, int: &IntStack, may_update: bool) {
        // Algorithm 1 NEW_ACK: cwnd_old = GET_CWND(ack.seq).
        let cwnd_old = self.get_cwnd(ack.snd_una);
        // Algorithm 1 NEW_ACK: normPower = NORM_POWER(ack); prevInt = ack.H.
        let Some(prev) = self.prev.replace(*int) else {
            // First sample: nothing to difference against (ns-3 `m_lastUpdateSeq == 0`).
            self.update_old(ack.snd_max);
            return;
        };
        let (norm, dt) = PowerTcp::norm_power(&prev, int, self.tau);
        self.smooth(norm, dt);
        if !may_update {
            // In fast recovery the window is NewReno's; the power estimate stays current.
            return;
        }
        // Algorithm 1 NEW_ACK: UPDATE_WINDOW(normPower, cwnd_old); UPDATE_OLD(cwnd, ack.seq).
        self.update_window(cwnd_old);
        self.update_old(ack.snd_max);
    }

    /// Algorithm 1 NEW_ACK: `rate = cwnd/τ`, at most the NIC rate.
    #[inline]
    fn pacing_rate(&self) -> Option<Bps> {
        let bits = u128::from(self.reno.window()) * 8 * u128::from(PS_PER_S);
        let rate = (bits / u128::from(self.tau.ps())).min(u128::from(self.host_rate.get()));
        Some(Bps(rate.max(1) as u64))
    }

    /// PowerTCP grows only through telemetry (no slow start, no congestion avoidance).
    #[inline]
    fn on_ack(&mut self, _now: Time, _bytes_acked: u64) {}

    #[inline]
    fn on_congestion_event(&mut self, now: Time, flight: u64, snd_max: u64) {
        self.reno.on_congestion_event(now, flight, snd_max);
    }

    #[inline]
    fn on_recovery_dup_ack(&mut self) {
        self.reno.on_recovery_dup_ack();
    }

    #[inline]
    fn on_partial_ack(&mut self, bytes_acked: u64) {
        self.reno.on_partial_ack(bytes_acked);
    }

    fn on_recovery_exit(&mut self, flight: u64) {
        self.reno.on_recovery_exit(flight);
        self.restart();
    }

    fn on_rto(&mut self, now: Time, flight: u64, snd_max: u64, is_repeat: bool) {
        self.reno.on_rto(now, flight, snd_max, is_repeat);
        self.restart();
    }

    fn on_syn_timeout(&mut self) {
        self.reno.on_syn_timeout();
        self.restart();
    }
}

#[cfg(test)]
mod tests {
    use wire::IntHop;

    use super::*;

    const MSS: u64 = 1000;
    const GBPS_10: u64 = 10_000_000_000;

    fn stack(hops: &[(u64, u64, u64)]) -> IntStack {
        let mut s = IntStack::default();
        for &(qlen_bytes, tx_bytes, ts_ps) in hops {
            s.push(IntHop { qlen_bytes, tx_bytes, ts_ps, rate_bps: GBPS_10 });
        }
        s
    }

    fn ack(snd_una: u64, snd_max: u64) -> AckInfo {
        AckInfo { bytes_acked: MSS, ece: false, snd_una, snd_max }
    }

    /// τ = 10 µs at 10 Gb/s: the host BDP is 12_500 B.
    fn power_tcp(gamma: f64, beta: u64) -> PowerTcp {
        PowerTcp::new(MSS, gamma, beta, Dur::from_us(10), Bps(GBPS_10))
    }

    #[test]
    fn norm_power_matches_hand_computation() {
        // One 10 Gb/s hop (b = 1.25e9 B/s), τ = 10 µs: b·τ = 12_500 B, e = b²·τ = 1.5625e13.
        // In dt = 1 µs the port sent 1_250 B (μ = 1.25e9 B/s) and its queue grew from 5_000
        // to 6_000 B (q̇ = 1e9 B/s): λ = 2.25e9 B/s, Γ' = λ·(6_000 + 12_500) = 4.1625e13,
        // Γ'_norm = 4.1625e13 / 1.5625e13 = 2.664.
        let tau = Dur::from_us(10);
        let prev = stack(&[(5_000, 100_000, 1_000_000)]);
        let cur = stack(&[(6_000, 101_250, 2_000_000)]);
        let (norm, dt) = PowerTcp::norm_power(&prev, &cur, tau);
        assert_eq!(dt, Dur::from_us(1));
        assert!((norm - 2.664).abs() < 1e-12, "{norm}");

        // A full link with an empty queue has power exactly 1 (the base power).
        let prev = stack(&[(0, 0, 0)]);
        let cur = stack(&[(0, 1_250, 1_000_000)]);
        assert!((PowerTcp::norm_power(&prev, &cur, tau).0 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn norm_power_takes_the_bottleneck_hop_and_its_dt() {
        let tau = Dur::from_us(10);
        // Hop 0 half utilized over 2 µs (Γ = 0.5); hop 1 full with a 12_500 B queue over 1 µs
        // (Γ = 1·(12_500 + 12_500)/12_500 = 2).
        let prev = stack(&[(0, 0, 0), (12_500, 0, 1_000_000)]);
        let cur = stack(&[(0, 1_250, 2_000_000), (12_500, 1_250, 2_000_000)]);
        let (norm, dt) = PowerTcp::norm_power(&prev, &cur, tau);
        assert!((norm - 2.0).abs() < 1e-12, "{norm}");
        assert_eq!(dt, Dur::from_us(1));
        // A stale or reset hop is skipped; no positive power leaves (0, 0).
        let stale = stack(&[(0, 1_250, 2_000_000)]);
        assert_eq!(PowerTcp::norm_power(&stale, &stale, tau), (0.0, Dur::ZERO));
        let reset = stack(&[(0, 0, 3_000_000)]);
        assert_eq!(PowerTcp::norm_power(&stale, &reset, tau), (0.0, Dur::ZERO));
        // A draining queue with nothing arriving (λ = 0) is no positive power either.
        let drain = stack(&[(1_250, 1_250, 3_000_000)]);
        let drained = stack(&[(0, 2_500, 4_000_000)]);
        assert_eq!(PowerTcp::norm_power(&drain, &drained, tau), (0.0, Dur::ZERO));
    }

    #[test]
    fn starts_at_host_bdp_and_updates_per_algorithm_1() {
        let mut c = power_tcp(0.9, 1_000);
        assert_eq!((c.window(), c.max_window(), c.cwnd_old()), (12_500, 12_500, 12_500));
        // 12_500 B per τ = 10 µs: the pacing rate cwnd/τ is the NIC rate.
        assert_eq!(c.pacing_rate(), Some(Bps(GBPS_10)));
        // First telemetry ACK: stored, no update.
        c.on_int(Time::ZERO, &ack(MSS, 12 * MSS), &stack(&[(12_500, 0, 0)]), true);
        assert_eq!((c.window(), c.smoothed_power()), (12_500, 1.0));
        // Queue 12_500 B, full link over 1 µs: Γ'_norm = 2, smoothed over τ = 10 µs:
        // Γ_smooth = (1·9 + 2·1)/10 = 1.1; cwnd = 0.9·(12_500/1.1 + 1_000) + 0.1·12_500.
        c.on_int(Time::ZERO, &ack(2 * MSS, 12 * MSS), &stack(&[(12_500, 1_250, 1_000_000)]), true);
        assert!((c.smoothed_power() - 1.1).abs() < 1e-12);
        let w1 = (0.9 * (12_500.0 / 1.1 + 1_000.0) + 0.1 * 12_500.0) as u64;
        assert_eq!(c.window(), w1);
        assert_eq!(c.pacing_rate(), Some(Bps(w1 * 8 * 100_000)));
        // Segments below 12 MSS went out under the initial window: cwnd_old stays 12_500.
        c.on_int(Time::ZERO, &ack(12 * MSS, 14 * MSS), &stack(&[(12_500, 2_500, 2_000_000)]), true);
        assert_eq!(c.cwnd_old(), 12_500);
        assert!((c.smoothed_power() - 1.19).abs() < 1e-12);
        let w2 = c.window();
        // The segment [12, 13) MSS went out under w1 (recorded at SND.MAX = 12 MSS), so its
        // ACK updates from cwnd_old = w1, with Γ_smooth = (1.19·9 + 2·1)/10 = 1.271.
        c.on_int(Time::ZERO, &ack(13 * MSS, 15 * MSS), &stack(&[(12_500, 3_750, 3_000_000)]), true);
        assert_eq!(c.cwnd_old(), w1);
        let power = c.smoothed_power();
        assert!((power - 1.271).abs() < 1e-12);
        assert_eq!(c.window(), (0.9 * (w1 as f64 / power + 1_000.0) + 0.1 * w2 as f64) as u64);
    }

    #[test]
    fn window_is_bounded_by_mss_and_host_bdp() {
        let mut c = power_tcp(1.0, 0);
        c.on_int(Time::ZERO, &ack(MSS, 12_500), &stack(&[(0, 0, 0)]), true);
        // A 10 MB queue built within τ: Γ'_norm ≈ 6.4e5, so cwnd_old/Γ_smooth < SMSS.
        c.on_int(Time::ZERO, &ack(MSS, 12_500), &stack(&[(10_000_000, 12_500, 10_000_000)]), true);
        assert_eq!(c.window(), MSS);
        // A nearly idle link for a whole τ (1 B sent): Γ_smooth = 8e-5, and the window goes
        // back to the host BDP and no further.
        c.on_int(Time::ZERO, &ack(MSS, 12_500), &stack(&[(0, 10_012_501, 20_000_000)]), true);
        assert!((c.smoothed_power() - 8e-5).abs() < 1e-12, "{}", c.smoothed_power());
        assert_eq!(c.window(), 12_500);
    }

    #[test]
    fn loss_is_newreno_and_recovery_freezes_the_power_window() {
        let mut c = power_tcp(0.9, 1_000);
        c.on_congestion_event(Time::ZERO, 12 * MSS, 12 * MSS);
        assert_eq!(c.window(), 6 * MSS + 3 * MSS);
        c.on_int(Time::ZERO, &ack(0, 12_000), &stack(&[(0, 0, 0)]), false);
        c.on_int(Time::ZERO, &ack(0, 12_000), &stack(&[(0, 1_250, 1_000_000)]), false);
        assert_eq!(c.window(), 9 * MSS, "no power update inside recovery");
        c.on_recovery_exit(4 * MSS);
        assert_eq!((c.window(), c.cwnd_old()), (5 * MSS, 5 * MSS));
        c.on_rto(Time::ZERO, 5 * MSS, 12 * MSS, false);
        assert_eq!((c.window(), c.cwnd_old()), (MSS, MSS));
        c.on_ack(Time::ZERO, 10 * MSS);
        assert_eq!(c.window(), MSS, "no ACK-clocked growth");
        assert!(!c.on_ecn(Time::ZERO, &AckInfo { ece: true, ..ack(MSS, 2 * MSS) }, true));
    }
}
