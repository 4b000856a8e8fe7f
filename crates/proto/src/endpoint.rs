//! The one type drivers hold: [`Endpoint`], an enum over every transport's state machine,
//! dispatched with a `match` (no vtable on the hot path).

use units::{Bytes, Time};
use wire::{IntStack, SackBlocks};

use crate::Segment;

use crate::atp::{AtpConfig, AtpReceiver, AtpSender, GroupSpec, JobError};
use crate::expresspass::{ExpressPassConfig, XpassReceiver, XpassSender};
use crate::mlt::{MltConfig, MltReceiver, MltSender};
use crate::pfabric::{PfabricConfig, PfabricReceiver, PfabricSender};
use crate::tcp::{Conn, TcpConfig};
use crate::udp::{UdpConfig, UdpReceiver, UdpSender};

/// Which transport a flow uses, with its knobs. Defaults live in each config's `Default`.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum TransportConfig {
    /// Reliable byte stream: DCTCP, NewReno or PowerTCP (see [`TcpConfig::cc`]).
    Tcp(TcpConfig),
    /// Unreliable source at a fixed rate.
    Udp(UdpConfig),
    /// NetApprox's approximate transport (jobs of messages in groups with an MSR each).
    Atp(AtpConfig),
    /// ExpressPass's credit-scheduled transport; Aeolus when `unscheduled_bytes > 0`.
    ExpressPass(ExpressPassConfig),
    /// pFabric's hosts (SIGCOMM'13 §4.2): remaining-size priorities and minimal rate control.
    Pfabric(PfabricConfig),
    /// The bounded-loss transport for distributed ML (Xia et al., APNet'19, [`crate::mlt`]).
    Mlt(MltConfig),
}

/// How a transfer ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Every byte was delivered.
    Complete,
    /// Enough was delivered for the application (a loss-tolerant transport stopped waiting
    /// for the rest).
    Enough,
    /// The transport gave up before enough was delivered.
    GivenUp,
    /// The application stopped the transfer before it ended.
    Cancelled,
}

impl Outcome {
    /// Name used in result tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Complete => "complete",
            Outcome::Enough => "enough",
            Outcome::GivenUp => "given_up",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// Something an endpoint wants its driver (and the application) to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Sender: the transfer is over on the sending side; the endpoint sends nothing more and
    /// has no timer. `confirmed` says whether the sender knows the receiver has what it needed
    /// (TCP: every byte acknowledged) or merely handed everything to the network (UDP).
    /// Emitted exactly once.
    SenderDone {
        /// How the transfer ended, as far as the sender knows.
        outcome: Outcome,
        /// Whether delivery is acknowledged.
        confirmed: bool,
    },
    /// Receiver: it has everything it waits for (every byte, in order, for TCP). Emitted
    /// exactly once; the receiver learns the total from the `FIN` flag on the last segment.
    Delivered {
        /// All of it, or enough.
        outcome: Outcome,
    },
}

/// Counters every endpoint keeps (fields that do not apply stay zero).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// Data segments transmitted, including retransmissions.
    pub segments_sent: u64,
    /// Payload bytes transmitted, including retransmissions.
    pub bytes_sent: u64,
    /// Data segments retransmitted (fast retransmit, recovery and after RTO).
    pub segments_retx: u64,
    /// Retransmission timeouts that fired.
    pub num_rtos: u64,
    /// Fast retransmits (entries into loss recovery on duplicate ACKs).
    pub num_fast_retx: u64,
    /// Tail-loss probes sent (TCP with [`TcpConfig::rack_tlp`](crate::tcp::TcpConfig::rack_tlp)).
    pub num_tail_probes: u64,
    /// ACKs received with ECE set (sender), or CE-marked data segments received (receiver).
    pub num_ecn: u64,
    /// Window reductions caused by ECN.
    pub num_ecn_cuts: u64,
    /// Distinct payload bytes received (receiver; in-order or buffered).
    pub bytes_received: u64,
    /// Current congestion window in bytes (TCP sender).
    pub cwnd: u64,
    /// Current DCTCP alpha (DCTCP sender), else 0.
    pub alpha: f64,
    /// Smoothed RTT in picoseconds (TCP sender), 0 before the first sample.
    pub srtt_ps: u64,
}

/// One side of one transfer. See the crate docs for the call order.
// PERF: `Conn` (~360 B) is stored inline, not boxed: the simulator holds endpoints in a `Vec`
// and touches one per packet, so a pointer chase per call costs more than the padding of the
// rarer UDP variants.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Endpoint {
    /// TCP (DCTCP, NewReno or PowerTCP), either side.
    Tcp(Conn),
    /// UDP source.
    UdpTx(UdpSender),
    /// UDP sink.
    UdpRx(UdpReceiver),
    /// ATP sender (boxed: a job's state is larger than the other variants').
    AtpTx(Box<AtpSender>),
    /// ATP receiver.
    AtpRx(Box<AtpReceiver>),
    /// ExpressPass/Aeolus sender.
    XpassTx(Box<XpassSender>),
    /// ExpressPass/Aeolus receiver.
    XpassRx(Box<XpassReceiver>),
    /// pFabric sender.
    PfabricTx(PfabricSender),
    /// pFabric receiver.
    PfabricRx(PfabricReceiver),
    /// Bounded-loss transport sender (boxed: its scoreboard and controller).
    MltTx(Box<MltSender>),
    /// Bounded-loss transport receiver.
    MltRx(Box<MltReceiver>),
}

impl TransportConfig {
    /// Whether the sender learns that its data was delivered (acknowledgements), so that a
    /// transfer's completion can be measured at the sender.
    pub fn confirms_delivery(&self) -> bool {
        match self {
            TransportConfig::Tcp(_)
            | TransportConfig::Atp(_)
            | TransportConfig::ExpressPass(_)
            | TransportConfig::Pfabric(_)
            | TransportConfig::Mlt(_) => {
                true
            }
            TransportConfig::Udp(_) => false,
        }
    }

    /// Whether the receiver learns by itself that it has what it needs (TCP: every byte; UDP:
    /// the last datagram). An ATP job's completion is known at the sender, from its ACKs; its
    /// receiver learns it from the end-of-job notice, after the fact.
    pub fn receiver_knows_completion(&self) -> bool {
        !matches!(self, TransportConfig::Atp(_))
    }

    /// Whether the transport sets each packet's priority class itself (ATP: the class of its
    /// group's slack, §5.2), so a driver must not overwrite it.
    pub fn stamps_prio(&self) -> bool {
        matches!(self, TransportConfig::Atp(_))
    }

    /// Whether a handshake round trip precedes the first data.
    pub fn has_handshake(&self) -> bool {
        match self {
            TransportConfig::Tcp(c) => c.handshake,
            TransportConfig::Udp(_) | TransportConfig::Atp(_) | TransportConfig::ExpressPass(_) => false,
            TransportConfig::Pfabric(_) | TransportConfig::Mlt(_) => false,
        }
    }

    /// The transport's name in result tables: `dctcp`, `newreno`, `power_tcp`, `udp`, `atp`,
    /// `pfabric` or `mlt`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            TransportConfig::Tcp(c) => match c.cc {
                crate::CcKind::Dctcp { .. } => "dctcp",
                crate::CcKind::NewReno => "newreno",
                crate::CcKind::PowerTcp { .. } => "power_tcp",
            },
            TransportConfig::Udp(_) => "udp",
            TransportConfig::Atp(_) => "atp",
            TransportConfig::ExpressPass(c) if c.unscheduled_bytes > 0 => "aeolus",
            TransportConfig::ExpressPass(_) => "expresspass",
            TransportConfig::Pfabric(_) => "pfabric",
            TransportConfig::Mlt(_) => "mlt",
        }
    }

    /// Payload bytes per full packet.
    pub fn mss(&self) -> u32 {
        match self {
            TransportConfig::Tcp(c) => c.mss,
            TransportConfig::Udp(c) => c.mss,
            TransportConfig::Atp(c) => c.mss,
            TransportConfig::ExpressPass(c) => c.mss,
            TransportConfig::Pfabric(c) => c.mss,
            // Whole values only (§3.2).
            TransportConfig::Mlt(c) => c.pkt_bytes(),
        }
    }
}

impl Endpoint {
    /// The sending side of a transfer of `size` bytes on connection `conn`, starting at `now`
    /// (with a SYN if the config asks for a handshake, else with data).
    pub fn sender(cfg: &TransportConfig, conn: u32, size: Bytes, now: Time) -> Endpoint {
        match cfg {
            TransportConfig::Tcp(c) => Endpoint::Tcp(Conn::sender(c, conn, size, now)),
            TransportConfig::Udp(c) => Endpoint::UdpTx(UdpSender::new(c, conn, size, now)),
            TransportConfig::Atp(c) => Endpoint::AtpTx(Box::new(AtpSender::transfer(c, conn, size, now))),
            TransportConfig::ExpressPass(c) => Endpoint::XpassTx(Box::new(XpassSender::new(c, conn, size, now))),
            TransportConfig::Pfabric(c) => Endpoint::PfabricTx(PfabricSender::new(c, conn, size.get())),
            TransportConfig::Mlt(c) => Endpoint::MltTx(Box::new(MltSender::new(c, conn, size.get()))),
        }
    }

    /// The sending side of an ATP job of these groups on connection `conn`, starting at `now`
    /// with no message yet: the application hands messages over with
    /// [`Endpoint::send_message`] and ends with [`Endpoint::close`]. `Err` for a config of
    /// another transport (`JobError::BadJob`) or a job ATP refuses.
    pub fn job_sender(cfg: &TransportConfig, conn: u32, groups: &[GroupSpec], now: Time) -> Result<Endpoint, JobError> {
        match cfg {
            TransportConfig::Atp(c) => Ok(Endpoint::AtpTx(Box::new(AtpSender::job(c, conn, groups, now)?))),
            _ => Err(JobError::BadJob("only ATP carries jobs of messages")),
        }
    }

    /// Input from the application: an ATP job's message of `bytes` in group `group` is ready;
    /// returns its id. `Err(JobError::Closed)` for other endpoints.
    pub fn send_message(&mut self, group: u16, bytes: u64) -> Result<u32, JobError> {
        match self {
            Endpoint::AtpTx(s) => s.send_message(group, bytes),
            _ => Err(JobError::Closed),
        }
    }

    /// The ATP sender inside, if this is one (reports, state).
    pub fn as_atp_sender(&self) -> Option<&AtpSender> {
        match self {
            Endpoint::AtpTx(s) => Some(s),
            _ => None,
        }
    }

    /// The ATP sender inside, if this is one (epoch logs).
    pub fn as_atp_sender_mut(&mut self) -> Option<&mut AtpSender> {
        match self {
            Endpoint::AtpTx(s) => Some(s),
            _ => None,
        }
    }

    /// The ATP receiver inside, if this is one (lost messages).
    pub fn as_atp_receiver(&self) -> Option<&AtpReceiver> {
        match self {
            Endpoint::AtpRx(r) => Some(r),
            _ => None,
        }
    }

    /// The bounded-loss transport's sender inside, if this is one (abandoned values).
    pub fn as_mlt_sender(&self) -> Option<&MltSender> {
        match self {
            Endpoint::MltTx(s) => Some(s),
            _ => None,
        }
    }

    /// The bounded-loss transport's receiver inside, if this is one: its completion report
    /// (values delivered and the exact missing index ranges, APNet'19 §3.2 Idea #2).
    pub fn as_mlt_receiver(&self) -> Option<&MltReceiver> {
        match self {
            Endpoint::MltRx(r) => Some(r),
            _ => None,
        }
    }

    /// The ExpressPass/Aeolus receiver inside, if this is one (its credit feedback state).
    pub fn as_xpass_receiver(&self) -> Option<&XpassReceiver> {
        match self {
            Endpoint::XpassRx(r) => Some(r),
            _ => None,
        }
    }

    /// Input from the driver: the line rate of the sender's NIC (ATP's R_max unless its
    /// config fixes a rate). Others ignore it.
    pub fn set_line_rate(&mut self, rate: units::Bps) {
        if let Endpoint::AtpTx(s) = self {
            s.set_line_rate(rate);
        }
    }

    /// The sending side of an open stream on connection `conn`: the application hands data
    /// over with [`Endpoint::send`] as it produces it and ends with [`Endpoint::close`].
    pub fn sender_stream(cfg: &TransportConfig, conn: u32, now: Time) -> Endpoint {
        match cfg {
            TransportConfig::Tcp(c) => Endpoint::Tcp(Conn::sender_stream(c, conn, now)),
            TransportConfig::Udp(c) => Endpoint::UdpTx(UdpSender::stream(c, conn, now)),
            TransportConfig::Atp(c) => Endpoint::AtpTx(Box::new(AtpSender::stream(c, conn, now))),
            TransportConfig::ExpressPass(c) => Endpoint::XpassTx(Box::new(XpassSender::stream(c, conn, now))),
            TransportConfig::Pfabric(c) => Endpoint::PfabricTx(PfabricSender::stream(c, conn)),
            TransportConfig::Mlt(c) => Endpoint::MltTx(Box::new(MltSender::stream(c, conn))),
        }
    }

    /// Input from the application: `bytes` more to send. Ignored after `close` and by
    /// receivers. Drain afterwards as after any input.
    pub fn send(&mut self, bytes: u64) {
        match self {
            Endpoint::Tcp(c) => c.send(bytes),
            Endpoint::UdpTx(s) => s.send(bytes),
            Endpoint::AtpTx(s) => {
                let _ = s.send_message(0, bytes);
            }
            Endpoint::XpassTx(s) => s.send(bytes),
            Endpoint::UdpRx(_) | Endpoint::AtpRx(_) | Endpoint::XpassRx(_) => {}
            Endpoint::PfabricTx(s) => s.send(bytes),
            Endpoint::PfabricRx(_) => {}
            Endpoint::MltTx(s) => s.send(bytes),
            Endpoint::MltRx(_) => {}
        }
    }

    /// Input from the application: no more data after what was sent. Idempotent. Drain
    /// afterwards.
    pub fn close(&mut self) {
        match self {
            Endpoint::Tcp(c) => c.close(),
            Endpoint::UdpTx(s) => s.close(),
            Endpoint::AtpTx(s) => s.close(),
            Endpoint::XpassTx(s) => s.close(),
            Endpoint::UdpRx(_) | Endpoint::AtpRx(_) | Endpoint::XpassRx(_) => {}
            Endpoint::PfabricTx(s) => s.close(),
            Endpoint::PfabricRx(_) => {}
            Endpoint::MltTx(s) => s.close(),
            Endpoint::MltRx(_) => {}
        }
    }

    /// The receiving side of connection `conn`. Created by the driver when the first segment
    /// of the connection arrives (or beforehand); it then expects `handle_segment`.
    pub fn receiver(cfg: &TransportConfig, conn: u32) -> Endpoint {
        match cfg {
            TransportConfig::Tcp(c) => Endpoint::Tcp(Conn::receiver(c, conn)),
            TransportConfig::Udp(c) => Endpoint::UdpRx(UdpReceiver::new(c, conn)),
            TransportConfig::Atp(c) => Endpoint::AtpRx(Box::new(AtpReceiver::new(conn, c.ack_prio))),
            TransportConfig::ExpressPass(c) => Endpoint::XpassRx(Box::new(XpassReceiver::new(c, conn))),
            TransportConfig::Pfabric(c) => Endpoint::PfabricRx(PfabricReceiver::new(c, conn)),
            TransportConfig::Mlt(c) => Endpoint::MltRx(Box::new(MltReceiver::new(c, conn))),
        }
    }

    /// Input from the application: cap the sender's rate of new data (`None` lifts the cap;
    /// UDP then returns to its configured rate). Receivers ignore it. Drain afterwards.
    pub fn set_rate_cap(&mut self, cfg: &TransportConfig, cap: Option<units::Bps>) {
        match (self, cfg) {
            (Endpoint::Tcp(c), _) => c.set_rate_cap(cap),
            (Endpoint::UdpTx(s), TransportConfig::Udp(u)) => s.set_rate_cap(cap, u.rate),
            _ => {}
        }
    }

    /// Input: a segment from the peer arrived at `now`. A header of another protocol than
    /// this endpoint's is ignored.
    #[inline]
    pub fn handle_segment(&mut self, now: Time, seg: &Segment) {
        match (self, seg) {
            (Endpoint::Tcp(c), Segment::Tcp(s)) => c.handle_segment(now, s),
            (Endpoint::UdpRx(r), Segment::Udp(d)) => r.handle_segment(now, d),
            (Endpoint::AtpTx(s), Segment::Atp(a)) => s.handle_segment(now, a),
            (Endpoint::AtpRx(r), Segment::Atp(a)) => r.handle_segment(now, a),
            (Endpoint::XpassTx(s), Segment::Xpass(x)) => s.handle_segment(now, x),
            (Endpoint::XpassRx(r), Segment::Xpass(x)) => r.handle_segment(now, x),
            (Endpoint::PfabricTx(s), Segment::Pfabric(p)) => s.handle_segment(now, p),
            (Endpoint::PfabricRx(r), Segment::Pfabric(p)) => r.handle_segment(now, p),
            (Endpoint::MltTx(s), Segment::Mlt(m)) => s.handle_segment(now, m),
            (Endpoint::MltRx(r), Segment::Mlt(m)) => r.handle_segment(now, m),
            // A pure source ignores anything it is sent; mismatched protocols are dropped.
            _ => {}
        }
    }

    /// Input: a segment arrived at `now` carrying in-band telemetry (`int`): the hops of a
    /// data segment (receiver side) or the stack the receiver echoed in an ACK (sender side).
    /// Transports that do not use telemetry ignore it.
    #[inline]
    pub fn handle_segment_int(&mut self, now: Time, seg: &Segment, int: Option<&IntStack>) {
        self.handle_segment_ext(now, seg, int, None);
    }

    /// Input: a segment arrived at `now` with the telemetry and SACK blocks that travelled
    /// beside it (TCP only; the driver contract is on [`Conn`]). Other transports take the
    /// segment alone.
    #[inline]
    pub fn handle_segment_ext(&mut self, now: Time, seg: &Segment, int: Option<&IntStack>, sack: Option<&SackBlocks>) {
        match (self, seg) {
            (Endpoint::Tcp(c), Segment::Tcp(s)) => c.handle_segment_ext(now, s, int, sack),
            // Only TCP reads telemetry (PowerTCP) and SACK: the others take the segment alone.
            (ep, _) => ep.handle_segment(now, seg),
        }
    }

    /// Output: the SACK blocks to attach to the ACK just returned by `poll_transmit` (a TCP
    /// receiver with SACK on holding data out of order), once. Call after each
    /// `poll_transmit` that returned a segment, if the transport uses SACK.
    #[inline]
    pub fn take_sack(&mut self) -> Option<SackBlocks> {
        match self {
            Endpoint::Tcp(c) => c.take_sack(),
            _ => None,
        }
    }

    /// Output: the telemetry stack to attach to the segment just returned by `poll_transmit`
    /// (a receiver echoes the stack of the data segment it acknowledges), if the transport
    /// uses telemetry. Call once after each `poll_transmit` that returned a segment.
    #[inline]
    pub fn take_echo_int(&mut self) -> Option<IntStack> {
        match self {
            Endpoint::Tcp(c) => c.take_echo_int(),
            Endpoint::UdpTx(_) | Endpoint::UdpRx(_) | Endpoint::AtpTx(_) | Endpoint::AtpRx(_) => None,
            Endpoint::XpassTx(_) | Endpoint::XpassRx(_) => None,
            Endpoint::PfabricTx(_) | Endpoint::PfabricRx(_) => None,
            Endpoint::MltTx(_) | Endpoint::MltRx(_) => None,
        }
    }

    /// Whether data segments of this transport should collect in-band telemetry (both sides
    /// of a PowerTCP connection). The driver contract is on [`Conn`].
    #[inline]
    pub fn wants_int(&self) -> bool {
        match self {
            Endpoint::Tcp(c) => c.wants_int(),
            Endpoint::UdpTx(_) | Endpoint::UdpRx(_) | Endpoint::AtpTx(_) | Endpoint::AtpRx(_) => false,
            Endpoint::XpassTx(_) | Endpoint::XpassRx(_) => false,
            Endpoint::PfabricTx(_) | Endpoint::PfabricRx(_) => false,
            Endpoint::MltTx(_) | Endpoint::MltRx(_) => false,
        }
    }

    /// Input: time passed. A no-op unless a deadline from `poll_timeout` has been reached.
    #[inline]
    pub fn handle_timeout(&mut self, now: Time) {
        match self {
            Endpoint::Tcp(c) => c.handle_timeout(now),
            Endpoint::UdpTx(s) => s.handle_timeout(now),
            Endpoint::AtpTx(s) => s.handle_timeout(now),
            Endpoint::XpassTx(s) => s.handle_timeout(now),
            Endpoint::XpassRx(r) => r.handle_timeout(now),
            Endpoint::UdpRx(_) | Endpoint::AtpRx(_) => {}
            Endpoint::PfabricTx(s) => s.handle_timeout(now),
            Endpoint::PfabricRx(_) => {}
            Endpoint::MltTx(s) => s.handle_timeout(now),
            Endpoint::MltRx(_) => {}
        }
    }

    /// Output: the next segment to send now, if any.
    #[inline]
    pub fn poll_transmit(&mut self, now: Time) -> Option<Segment> {
        match self {
            Endpoint::Tcp(c) => c.poll_transmit(now).map(Segment::Tcp),
            Endpoint::UdpTx(s) => s.poll_transmit(now).map(Segment::Udp),
            Endpoint::AtpTx(s) => s.poll_transmit(now).map(Segment::Atp),
            Endpoint::AtpRx(r) => r.poll_transmit().map(Segment::Atp),
            Endpoint::XpassTx(s) => s.poll_transmit(now).map(Segment::Xpass),
            Endpoint::XpassRx(r) => r.poll_transmit(now).map(Segment::Xpass),
            Endpoint::PfabricTx(s) => s.poll_transmit(now).map(Segment::Pfabric),
            Endpoint::PfabricRx(r) => r.poll_transmit().map(Segment::Pfabric),
            Endpoint::MltTx(s) => s.poll_transmit(now).map(Segment::Mlt),
            Endpoint::MltRx(r) => r.poll_transmit().map(Segment::Mlt),
            Endpoint::UdpRx(_) => None,
        }
    }

    /// Output: when `handle_timeout` must next be called, if ever.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Time> {
        match self {
            Endpoint::Tcp(c) => c.poll_timeout(),
            Endpoint::UdpTx(s) => s.poll_timeout(),
            Endpoint::AtpTx(s) => s.poll_timeout(),
            Endpoint::XpassTx(s) => s.poll_timeout(),
            Endpoint::XpassRx(r) => r.poll_timeout(),
            Endpoint::UdpRx(_) | Endpoint::AtpRx(_) => None,
            Endpoint::PfabricTx(s) => s.poll_timeout(),
            Endpoint::PfabricRx(_) => None,
            Endpoint::MltTx(s) => s.poll_timeout(),
            Endpoint::MltRx(_) => None,
        }
    }

    /// Output: the next event, if any.
    #[inline]
    pub fn poll_event(&mut self) -> Option<Event> {
        match self {
            Endpoint::Tcp(c) => c.poll_event(),
            Endpoint::UdpTx(s) => s.poll_event(),
            Endpoint::UdpRx(r) => r.poll_event(),
            Endpoint::AtpTx(s) => s.poll_event(),
            Endpoint::AtpRx(r) => r.poll_event(),
            Endpoint::XpassTx(s) => s.poll_event(),
            Endpoint::XpassRx(r) => r.poll_event(),
            Endpoint::PfabricTx(s) => s.poll_event(),
            Endpoint::PfabricRx(r) => r.poll_event(),
            Endpoint::MltTx(s) => s.poll_event(),
            Endpoint::MltRx(r) => r.poll_event(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        match self {
            Endpoint::Tcp(c) => c.stats(),
            Endpoint::UdpTx(s) => s.stats(),
            Endpoint::UdpRx(r) => r.stats(),
            Endpoint::AtpTx(s) => s.stats(),
            Endpoint::AtpRx(r) => r.stats(),
            Endpoint::XpassTx(s) => s.stats(),
            Endpoint::XpassRx(r) => r.stats(),
            Endpoint::PfabricTx(s) => s.stats(),
            Endpoint::PfabricRx(r) => r.stats(),
            Endpoint::MltTx(s) => s.stats(),
            Endpoint::MltRx(r) => r.stats(),
        }
    }
}
