//! slacknet's transports as sans-I/O state machines.
//!
//! Pipeline position: `units <- wire <- proto <- {sim, udp}`. Nothing here owns a socket,
//! reads a clock or touches a global RNG: every input carries `now`, every output is pulled.
//! The simulator and the UDP driver are two drivers of this same code.
//!
//! # Driving an endpoint
//!
//! An [`Endpoint`] is one side of one transfer (sender or receiver). After creating it and after
//! every `handle_*` call, the driver drains, in this order:
//! 1. [`Endpoint::poll_transmit`] until `None` (segments to put on the wire now),
//! 2. [`Endpoint::poll_timeout`] (the earliest time `handle_timeout` must be called; re-read
//!    after every drain, since it may move earlier or later),
//! 3. [`Endpoint::poll_event`] until `None` (completion notices).
//!
//! `handle_timeout` is safe to call spuriously (before any deadline): it is then a no-op.
//!
//! # Holding a sender back (backpressure)
//!
//! A driver may stop calling `poll_transmit` before it returns `None`, for as long as it
//! likes (the simulator does so when a flow has enough bytes queued at its NIC, as Linux's TCP
//! Small Queues does). The endpoint keeps what it may send and hands it out at the next
//! `poll_transmit`; nothing is lost and no timer depends on being polled:
//! - TCP stamps a segment (`ts_ps`) and arms its RTO when it is handed out, so held-back data is
//!   neither timed nor counted in flight. A paced sender (PowerTCP, a rate cap) schedules the
//!   next segment from the later of its slot and `now`, so a late poll never bursts. The
//!   window grows on an ACK only if the sender was window-limited, not held back, when the
//!   driver last stopped polling it (RFC 7661 §4.3, Linux `tcp_is_cwnd_limited`).
//! - A paced UDP source schedules its next datagram from the `now` of the poll that handed out
//!   the previous one, so it never bursts either. Its `poll_timeout` may then lie in the past:
//!   a driver that holds it back need not wake it before it polls again.
//!
//! A driver that always drains (as the call order above says) never holds a sender back.
//!
//! # Transports
//! - [`TransportConfig::Tcp`] with [`CcKind::Dctcp`]: DCTCP (Alizadeh et al., SIGCOMM'10).
//! - [`TransportConfig::Tcp`] with [`CcKind::NewReno`]: TCP NewReno (RFC 6582), no ECN.
//! - [`TransportConfig::Tcp`] with [`CcKind::PowerTcp`]: PowerTCP (Addanki et al., NSDI'22),
//!   driven by in-band network telemetry that the driver collects (see
//!   [`Endpoint::wants_int`] and [`tcp::Conn`]).
//! - [`TransportConfig::Udp`]: an unreliable source at line rate or a paced rate.
//! - [`TransportConfig::Atp`]: ATP, NetApprox's approximate transport (Xia et al.): jobs of
//!   messages in groups, each with a minimal message sampling rate ([`atp`]).
//! - [`TransportConfig::ExpressPass`]: ExpressPass (Cho et al., SIGCOMM'17), credit-scheduled,
//!   and with `unscheduled_bytes > 0` Aeolus on top of it (Hu et al., SIGCOMM'20)
//!   ([`expresspass`]).
//! - [`TransportConfig::Pfabric`]: pFabric's hosts (Alizadeh et al., SIGCOMM'13): every data
//!   packet carries its flow's remaining size as its priority, with minimal rate control
//!   ([`pfabric`]).
//! - [`TransportConfig::Mlt`]: the bounded-loss transport for distributed ML (Xia et al.,
//!   APNet'19): a message of values completes once a fraction p of them arrived; losses found
//!   by timeout are abandoned while the bound allows; DCTCP's window ([`mlt`]).

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub mod atp;
mod bits;
pub mod cc;
pub mod mlt;
pub mod pfabric;
mod endpoint;
pub mod expresspass;
mod segment;
pub mod rtt;
pub mod tcp;
pub mod udp;

#[cfg(test)]
mod tests;

pub use endpoint::{Endpoint, Event, Outcome, Stats, TransportConfig};
pub use segment::Segment;
pub use tcp::{CcKind, TcpConfig};
pub use udp::UdpConfig;
pub use atp::AtpConfig;
pub use expresspass::ExpressPassConfig;
pub use pfabric::PfabricConfig;
pub use mlt::{MltCc, MltConfig, MltSendOrder};
pub use wire::{
    AtpKind, AtpRepr, DatagramRepr, Ecn, Flags, IntHop, IntStack, MltRepr, PfabricRepr, SackBlocks, SegmentRepr, XpassKind, XpassRepr,
    MAX_INT_HOPS, MAX_SACK_BLOCKS,
};
