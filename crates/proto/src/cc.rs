//! Congestion control: the [`CongestionControl`] contract and its implementations, one per
//! file ([`NewReno`], [`Dctcp`], [`PowerTcp`], and [`Cubic`], which only the bounded-loss
//! transport uses so far), dispatched through [`AnyCc`] (a `match`, no
//! vtable).
//!
//! Pipeline position: owned by a TCP sender ([`crate::tcp::Conn`]). The sender owns loss
//! *detection* and retransmission (duplicate-ACK counting, RFC 6582's `recover`, the RTO
//! timer, go-back-N); the controller owns the *window*: it is told what happened through the
//! `on_*` callbacks and answers [`CongestionControl::window`].
//!
//! Windows and thresholds are in bytes. A window is never below one SMSS.
//!
//! # Call order per ACK (enforced by the sender)
//! For every ACK that acknowledges new data or is a duplicate ACK:
//! 1. [`CongestionControl::on_ecn`] (always; it returns whether the window was cut),
//! 2. [`CongestionControl::on_int`] if the ACK carried an echoed telemetry stack (only
//!    controllers whose [`CongestionControl::wants_int`] is true ever get one),
//! 3. then at most one of: [`CongestionControl::on_ack`] (new data outside recovery, and not
//!    cut in step 1), [`CongestionControl::on_congestion_event`] (the duplicate ACK that
//!    triggers fast retransmit), [`CongestionControl::on_recovery_dup_ack`],
//!    [`CongestionControl::on_partial_ack`] or [`CongestionControl::on_recovery_exit`].
//!
//! Timer events call [`CongestionControl::on_rto`] or [`CongestionControl::on_syn_timeout`].

use units::{Bps, Dur, Time};
use wire::IntStack;

use crate::tcp::{CcKind, TcpConfig};

mod cubic;
mod dctcp;
mod new_reno;
mod power_tcp;

pub use cubic::{Cubic, CUBIC_BETA, CUBIC_C};
pub use dctcp::Dctcp;
pub use new_reno::NewReno;
pub use power_tcp::PowerTcp;

/// What one ACK told the sender, as seen by [`CongestionControl::on_ecn`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckInfo {
    /// Bytes newly acknowledged by the cumulative ACK (0 for a duplicate ACK).
    pub bytes_acked: u64,
    /// Whether the ACK carried ECN-Echo.
    pub ece: bool,
    /// `SND.UNA` after processing the ACK.
    pub snd_una: u64,
    /// The highest sequence number sent so far (one past the last byte), i.e. `SND.NXT`
    /// in the absence of go-back-N.
    pub snd_max: u64,
}

/// The contract every congestion controller meets. See the module docs for the call order.
pub trait CongestionControl {
    /// Congestion window in bytes, including NewReno's fast-recovery inflation (RFC 6582
    /// inflates `cwnd` itself). The sender keeps `SND.NXT - SND.UNA + next_len <= window()`.
    fn window(&self) -> u64;

    /// Slow-start threshold in bytes (`u64::MAX` until the first congestion event).
    fn ssthresh(&self) -> u64;

    /// DCTCP's congestion estimate alpha; 0 for controllers without one.
    fn alpha(&self) -> f64 {
        0.0
    }

    /// ECN feedback, called on every new or duplicate ACK before any other callback.
    /// `may_cut` is false while the sender is in loss recovery (RFC 3168 §6.1.2: respond
    /// at most once per window to loss and ECN together). Returns whether it cut the window.
    fn on_ecn(&mut self, now: Time, ack: &AckInfo, may_cut: bool) -> bool;

    /// Whether the window is being cut for ECN marks: an ECN cut happened and `snd_una` has
    /// not passed what had been sent then (ns-3's `CA_CWR`; no loss or timeout since). Only
    /// DCTCP cuts for marks. Default: no.
    fn in_ecn_cut(&self, snd_una: u64) -> bool {
        let _ = snd_una;
        false
    }

    /// Cut the window for ECN now, as a mark would, whatever cut came before in this window
    /// (ns-3.44's `EnterCwr` on an ECE during fast recovery); `snd_max` is the highest byte
    /// sent. Returns whether it cut. Default: no cut.
    fn ecn_cut_now(&mut self, snd_max: u64) -> bool {
        let _ = snd_max;
        false
    }

    /// Whether the connection's data segments should collect in-band telemetry (INT) and
    /// its ACKs echo it (PowerTCP). Default: no.
    fn wants_int(&self) -> bool {
        false
    }

    /// The ACK described by `ack` echoed the telemetry stack `int` of the data segment it
    /// acknowledges; called right after [`CongestionControl::on_ecn`] for every new or
    /// duplicate ACK that carries one. `may_update` is false while the sender is in loss
    /// recovery (the window is then the loss response's). Default: ignore.
    fn on_int(&mut self, now: Time, ack: &AckInfo, int: &IntStack, may_update: bool) {
        let _ = (now, ack, int, may_update);
    }

    /// The rate at which the sender spaces new data segments, or `None` to send as fast as
    /// the window allows (NewReno, DCTCP). Default: `None`.
    fn pacing_rate(&self) -> Option<Bps> {
        None
    }

    /// The sender's smoothed RTT after a new sample (CUBIC aims one RTT ahead). Default:
    /// ignore.
    fn on_rtt(&mut self, srtt: Dur) {
        let _ = srtt;
    }

    /// `bytes_acked` new bytes were cumulatively acknowledged outside loss recovery: grow.
    fn on_ack(&mut self, now: Time, bytes_acked: u64);

    /// Fast retransmit: `dupack_threshold` duplicate ACKs arrived and the sender enters
    /// NewReno fast recovery. `flight` is FlightSize; `snd_max` the highest byte sent.
    fn on_congestion_event(&mut self, now: Time, flight: u64, snd_max: u64);

    /// A further duplicate ACK during fast recovery.
    fn on_recovery_dup_ack(&mut self);

    /// A partial ACK during fast recovery acknowledged `bytes_acked` new bytes.
    fn on_partial_ack(&mut self, bytes_acked: u64);

    /// A full ACK ended fast recovery; `flight` is FlightSize after the ACK.
    fn on_recovery_exit(&mut self, flight: u64);

    /// The retransmission timer fired for data. `flight` is FlightSize before go-back-N,
    /// `snd_max` the highest byte sent, and `is_repeat` is true if the segment at `SND.UNA`
    /// had already been retransmitted by the timer.
    fn on_rto(&mut self, now: Time, flight: u64, snd_max: u64, is_repeat: bool);

    /// The retransmission timer fired for the SYN: data will start with one segment.
    fn on_syn_timeout(&mut self);
}

/// The controller of one connection, dispatched by `match` on the hot path.
#[derive(Clone, Debug)]
pub enum AnyCc {
    /// TCP NewReno.
    NewReno(NewReno),
    /// DCTCP.
    Dctcp(Dctcp),
    /// PowerTCP.
    // PERF: boxed so that its telemetry state (a whole `IntStack`) does not grow the
    // NewReno and DCTCP connections, which the simulator stores inline by the million.
    PowerTcp(Box<PowerTcp>),
    /// CUBIC (the bounded-loss transport's option; no `CcKind` builds it for TCP yet). Boxed
    /// for the same reason as PowerTCP.
    Cubic(Box<Cubic>),
}

impl AnyCc {
    /// The controller `cfg` asks for, with an initial window of `init_pkts · mss` (normally
    /// `cfg.init_cwnd_pkts`; PowerTCP: the host BDP, see [`PowerTcp`]).
    pub fn new(cfg: &TcpConfig, init_pkts: u32) -> AnyCc {
        let mss = u64::from(cfg.mss);
        let init_cwnd = mss * u64::from(init_pkts.max(1));
        let reno = NewReno::new(mss, init_cwnd).with_slow_start(cfg.slow_start);
        match cfg.cc {
            CcKind::NewReno => AnyCc::NewReno(reno),
            CcKind::Dctcp { g, init_alpha, loss_by_alpha, .. } => {
                AnyCc::Dctcp(Dctcp::new(reno, g, init_alpha, loss_by_alpha))
            }
            CcKind::PowerTcp { gamma, beta_bytes, base_rtt, host_rate } => AnyCc::PowerTcp(
                Box::new(PowerTcp::new(mss, gamma, beta_bytes, base_rtt, host_rate)),
            ),
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            AnyCc::NewReno($c) => $e,
            AnyCc::Dctcp($c) => $e,
            AnyCc::PowerTcp($c) => $e,
            AnyCc::Cubic($c) => $e,
        }
    };
}

impl CongestionControl for AnyCc {
    #[inline]
    fn window(&self) -> u64 {
        dispatch!(self, c => c.window())
    }
    #[inline]
    fn ssthresh(&self) -> u64 {
        dispatch!(self, c => c.ssthresh())
    }
    #[inline]
    fn alpha(&self) -> f64 {
        dispatch!(self, c => c.alpha())
    }
    #[inline]
    fn on_ecn(&mut self, now: Time, ack: &AckInfo, may_cut: bool) -> bool {
        dispatch!(self, c => c.on_ecn(now, ack, may_cut))
    }
    #[inline]
    fn in_ecn_cut(&self, snd_una: u64) -> bool {
        dispatch!(self, c => c.in_ecn_cut(snd_una))
    }
    #[inline]
    fn ecn_cut_now(&mut self, snd_max: u64) -> bool {
        dispatch!(self, c => c.ecn_cut_now(snd_max))
    }
    #[inline]
    fn wants_int(&self) -> bool {
        dispatch!(self, c => c.wants_int())
    }
    #[inline]
    fn on_int(&mut self, now: Time, ack: &AckInfo, int: &IntStack, may_update: bool) {
        dispatch!(self, c => c.on_int(now, ack, int, may_update))
    }
    #[inline]
    fn pacing_rate(&self) -> Option<Bps> {
        dispatch!(self, c => c.pacing_rate())
    }
    #[inline]
    fn on_rtt(&mut self, srtt: Dur) {
        dispatch!(self, c => c.on_rtt(srtt))
    }
    #[inline]
    fn on_ack(&mut self, now: Time, bytes_acked: u64) {
        dispatch!(self, c => c.on_ack(now, bytes_acked))
    }
    #[inline]
    fn on_congestion_event(&mut self, now: Time, flight: u64, snd_max: u64) {
        dispatch!(self, c => c.on_congestion_event(now, flight, snd_max))
    }
    #[inline]
    fn on_recovery_dup_ack(&mut self) {
        dispatch!(self, c => c.on_recovery_dup_ack())
    }
    #[inline]
    fn on_partial_ack(&mut self, bytes_acked: u64) {
        dispatch!(self, c => c.on_partial_ack(bytes_acked))
    }
    #[inline]
    fn on_recovery_exit(&mut self, flight: u64) {
        dispatch!(self, c => c.on_recovery_exit(flight))
    }
    #[inline]
    fn on_rto(&mut self, now: Time, flight: u64, snd_max: u64, is_repeat: bool) {
        dispatch!(self, c => c.on_rto(now, flight, snd_max, is_repeat))
    }
    #[inline]
    fn on_syn_timeout(&mut self) {
        dispatch!(self, c => c.on_syn_timeout())
    }
}
