//! `[transport]`: a tagged choice (`kind`), each kind with its own keys only; the TCP kinds
//! share the reliable byte stream's keys and differ in congestion control.

#[allow(unused_imports)]
use super::*;

/// The transport every flow uses: a tagged choice (`kind`), each with its own keys only.
/// Defaults mirror `proto::TcpConfig::default` and `proto::UdpConfig::default`.
///
/// The three TCP kinds share the reliable byte stream's keys ([`TcpKeys`]) and differ in their
/// congestion control: DCTCP's window law (`g`, `init_alpha`), NewReno's, or PowerTCP's
/// (`gamma`, `beta_bytes`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TransportSpec {
    /// DCTCP (ECN-based, per-packet echo).
    Dctcp(DctcpSpec),
    /// TCP NewReno (loss-based, no ECN).
    Newreno(NewRenoSpec),
    /// PowerTCP (Addanki et al. NSDI'22): power-based window control on in-band telemetry
    /// that every switch egress writes into data packets.
    PowerTcp(PowerTcpSpec),
    /// Unreliable UDP at line rate or `rate_gbps`.
    Udp(UdpSpec),
    /// ATP, NetApprox's approximate transport (`proto::atp`): a plain flow is a job of
    /// `message_bytes` messages with sampling rate `msr`; the `netapprox` workload starts jobs
    /// of its own.
    Atp(AtpSpec),
    /// ExpressPass (Cho et al., SIGCOMM'17): credit-scheduled, receiver-driven
    /// (`proto::expresspass`). Needs `switch.credit_queue_pkts`.
    Expresspass(ExpressPassSpec),
    /// Aeolus (Hu et al., SIGCOMM'20) on ExpressPass: one BDP unscheduled in the first RTT,
    /// selectively dropped by switches, recovered by a probe. Needs `switch.credit_queue_pkts`
    /// and `switch.selective_drop_bytes`.
    Aeolus(ExpressPassSpec),
    /// pFabric's hosts (Alizadeh et al., SIGCOMM'13 §4.2, `proto::pfabric`): each data packet
    /// carries its flow's remaining size as its priority, for `switch.scheduler = "pfabric"`.
    Pfabric(PfabricSpec),
    /// The bounded-loss transport for distributed ML (Xia et al., APNet'19, `proto::mlt`): a
    /// flow of S bytes is a message of S / `value_bytes` values that completes once a fraction
    /// `complete_fraction` of them arrived; DCTCP's window law. Not reliable.
    Mlt(MltSpec),
}

impl Default for TransportSpec {
    fn default() -> Self {
        TransportSpec::Dctcp(DctcpSpec::default())
    }
}

/// The keys of the reliable byte stream that every TCP kind has.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpKeys {
    /// Payload bytes per packet.
    pub mss_bytes: u32,
    /// Header bytes added to every packet on the wire (and the size of a pure ACK).
    pub header_bytes: u32,
    /// Initial congestion window in packets.
    pub init_cwnd_pkts: u32,
    /// The initial window is at least the whole transfer (the Credence artifact's incast
    /// responses).
    pub init_cwnd_covers_transfer: bool,
    /// Priority class of segments without payload (ACKs); `None`: the flow's class.
    pub ack_prio: Option<u8>,
    /// Minimum retransmission timeout.
    pub min_rto_us: u64,
    /// Retransmission timeout before the first RTT sample.
    pub init_rto_us: u64,
    /// Maximum retransmission timeout after backoff.
    pub max_rto_us: u64,
    /// Timeouts in a row without progress after which a transfer gives up.
    pub max_retries: u32,
    /// Duplicate ACKs that trigger fast retransmit.
    pub dupack_threshold: u32,
    /// RFC 3042 limited transmit.
    pub limited_transmit: bool,
    /// SACK (RFC 2018) with RFC 6675 loss recovery.
    pub sack: bool,
    /// RACK-TLP (RFC 8985): losses found by time and a tail-loss probe; needs `sack`.
    pub rack_tlp: bool,
    /// Proportional rate reduction in fast recovery (RFC 9937); needs `sack`.
    pub prr: bool,
    /// Slow start below `ssthresh` (false: congestion avoidance only, as the Credence artifact).
    pub slow_start: bool,
    /// Delayed ACKs: ACK every this many segments (0 = every segment, no delayed ACK).
    pub delayed_ack_segments: u32,
    /// Delayed ACK timeout.
    pub delayed_ack_timeout_us: u64,
    /// Three-way handshake before data.
    pub handshake: bool,
}

/// Declares a TCP kind's key table: the [`TcpKeys`] plus the kind's own congestion-control
/// keys, so that each kind accepts exactly its keys (`deny_unknown_fields` does not work with
/// `serde(flatten)`).
macro_rules! tcp_kind {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $f:ident : $t:ty = $d:expr),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Payload bytes per packet.
            #[serde(default = "default_mss")]
            pub mss_bytes: u32,
            /// Header bytes added to every packet on the wire (and the size of a pure ACK).
            #[serde(default = "default_header")]
            pub header_bytes: u32,
            /// Initial congestion window in packets.
            #[serde(default = "default_iw")]
            pub init_cwnd_pkts: u32,
            /// The initial window of a transfer is at least all its packets (the Credence
            /// artifact starts incast responses so).
            #[serde(default)]
            pub init_cwnd_covers_transfer: bool,
            /// Priority class of segments without payload (ACKs, SYN-ACKs); absent: the
            /// flow's class (the Credence artifact sends ACKs in class 0).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub ack_prio: Option<u8>,
            /// Minimum retransmission timeout.
            #[serde(default = "default_min_rto_us")]
            pub min_rto_us: u64,
            /// Retransmission timeout before the first RTT sample.
            #[serde(default = "default_min_rto_us")]
            pub init_rto_us: u64,
            /// Maximum retransmission timeout after backoff.
            #[serde(default = "default_max_rto_us")]
            pub max_rto_us: u64,
            /// Retransmission timeouts in a row without progress after which a transfer
            /// gives up (outcome `given_up`); Linux's `tcp_retries2`.
            #[serde(default = "default_max_retries")]
            pub max_retries: u32,
            /// Duplicate ACKs that trigger fast retransmit.
            #[serde(default = "default_dupack")]
            pub dupack_threshold: u32,
            /// RFC 3042 limited transmit: each of the first `dupack_threshold - 1` duplicate
            /// ACKs lets one new segment leave beyond the window (Linux and ns-3 have it on).
            #[serde(default)]
            pub limited_transmit: bool,
            /// Selective acknowledgments: ACKs carry up to three SACK blocks (RFC 2018) and
            /// the sender recovers by RFC 6675 (Linux and ns-3 have it on).
            #[serde(default)]
            pub sack: bool,
            /// RACK-TLP (RFC 8985; needs `sack`): losses found by time, and a tail-loss
            /// probe two smoothed RTTs after the last progress, so that a lost tail is
            /// repaired in round trips instead of a timeout (Linux has it on).
            #[serde(default)]
            pub rack_tlp: bool,
            /// Proportional rate reduction in fast recovery (RFC 9937; needs `sack`): the
            /// window comes down to `ssthresh` in proportion to what each ACK delivers
            /// (Linux and ns-3.44 recover by it).
            #[serde(default)]
            pub prr: bool,
            /// Slow start while the window is below `ssthresh` (RFC 5681 §3.1); `false`: the
            /// window grows by congestion avoidance only, as in the Credence artifact's DCTCP
            /// (ns-3.39 `TcpSocketState::m_useSS = false`). PowerTCP ignores it.
            #[serde(default = "yes")]
            pub slow_start: bool,
            /// Delayed ACKs: ACK every this many segments (0 = every segment, no delayed ACK).
            #[serde(default)]
            pub delayed_ack_segments: u32,
            /// Delayed ACK timeout.
            #[serde(default = "default_delack_us")]
            pub delayed_ack_timeout_us: u64,
            /// Three-way handshake before data.
            #[serde(default)]
            pub handshake: bool,
            $($(#[$fm])* pub $f: $t,)*
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    mss_bytes: default_mss(),
                    header_bytes: default_header(),
                    init_cwnd_pkts: default_iw(),
                    init_cwnd_covers_transfer: false,
                    ack_prio: None,
                    min_rto_us: default_min_rto_us(),
                    init_rto_us: default_min_rto_us(),
                    max_rto_us: default_max_rto_us(),
                    max_retries: default_max_retries(),
                    dupack_threshold: default_dupack(),
                    limited_transmit: false,
                    sack: false,
                    rack_tlp: false,
                    prr: false,
                    slow_start: true,
                    delayed_ack_segments: 0,
                    delayed_ack_timeout_us: default_delack_us(),
                    handshake: false,
                    $($f: $d,)*
                }
            }
        }

        impl $name {
            /// The reliable byte stream's keys.
            pub fn tcp(&self) -> TcpKeys {
                TcpKeys {
                    mss_bytes: self.mss_bytes,
                    header_bytes: self.header_bytes,
                    init_cwnd_pkts: self.init_cwnd_pkts,
                    init_cwnd_covers_transfer: self.init_cwnd_covers_transfer,
                    ack_prio: self.ack_prio,
                    min_rto_us: self.min_rto_us,
                    init_rto_us: self.init_rto_us,
                    max_rto_us: self.max_rto_us,
                    max_retries: self.max_retries,
                    dupack_threshold: self.dupack_threshold,
                    limited_transmit: self.limited_transmit,
                    sack: self.sack,
                    rack_tlp: self.rack_tlp,
                    prr: self.prr,
                    slow_start: self.slow_start,
                    delayed_ack_segments: self.delayed_ack_segments,
                    delayed_ack_timeout_us: self.delayed_ack_timeout_us,
                    handshake: self.handshake,
                }
            }
        }
    };
}

tcp_kind!(
    /// Keys of `kind = "dctcp"`.
    DctcpSpec {
        /// DCTCP EWMA gain g (DCTCP eq. 1).
        #[serde(default = "default_g")]
        g: f64 = default_g(),
        /// DCTCP initial alpha.
        #[serde(default = "default_alpha")]
        init_alpha: f64 = default_alpha(),
        /// How a loss sets ssthresh: `halve` (FlightSize/2, RFC 8257 §3.5, Linux) or `alpha`
        /// (`cwnd·(1 − alpha/2)`, ns-3.44's `TcpDctcp`).
        #[serde(default)]
        loss_response: DctcpLossResponse = DctcpLossResponse::Halve,
        /// A loss found while the window is being cut for ECN marks: `recovery` (fast recovery
        /// as at any other time: RFC 6675, Linux) or `ns3` (ns-3.44's `CA_CWR`: no fast
        /// recovery, the SACK scoreboard's lost segments resent within `cwnd − pipe`, and an
        /// ECE during fast recovery ends it with an ECN cut).
        #[serde(default)]
        loss_in_cwr: DctcpLossInCwr = DctcpLossInCwr::Recovery,
        /// ECE counts only on ACKs that advance `SND.UNA` (ns-3.44's `TcpSocketBase`; the
        /// `ns3_compat` profile's), not also on duplicate ACKs (RFC 3168 §6.1.2, Linux).
        #[serde(default)]
        ece_only_on_new_acks: bool = false,
    }
);

/// What DCTCP does with a loss found during an ECN window reduction
/// (`proto::CcKind::Dctcp::ns3_cwr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DctcpLossInCwr {
    /// Fast recovery, as at any other time (RFC 6675 §5; Linux enters Recovery from CWR).
    #[default]
    Recovery,
    /// ns-3.44's `TcpSocketBase`: `DupAck` starts no recovery in `CA_CWR`, `SendPendingData`
    /// resends what `NextSeg()` calls lost, and `EnterCwr` also leaves `CA_RECOVERY`.
    Ns3,
}

/// How DCTCP reacts to a loss (`proto::CcKind::Dctcp::loss_by_alpha`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DctcpLossResponse {
    /// ssthresh = FlightSize/2, as conventional TCP (RFC 8257 §3.5; Linux since 5.1).
    #[default]
    Halve,
    /// ssthresh = `cwnd·(1 − alpha/2)`, the ECN cut (ns-3.44's `TcpDctcp::GetSsThresh`).
    Alpha,
}

tcp_kind!(
    /// Keys of `kind = "newreno"`.
    NewRenoSpec {}
);

tcp_kind!(
    /// Keys of `kind = "power_tcp"`. Base RTT and NIC rate come from the topology.
    PowerTcpSpec {
        /// PowerTCP's EWMA weight gamma (NSDI'22 Algorithm 1; the paper uses 0.9).
        #[serde(default = "default_powertcp_gamma")]
        gamma: f64 = default_powertcp_gamma(),
        /// PowerTCP's additive increase beta in bytes. Absent: the host BDP / 10, as the
        /// authors' Linux module.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        beta_bytes: Option<u64> = None,
    }
);

/// Keys of `kind = "udp"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpSpec {
    /// Payload bytes per datagram.
    #[serde(default = "default_mss")]
    pub mss_bytes: u32,
    /// Header bytes added to every datagram on the wire.
    #[serde(default = "default_header")]
    pub header_bytes: u32,
    /// Sending rate; absent = the host's line rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_gbps: Option<f64>,
}

impl Default for UdpSpec {
    fn default() -> Self {
        UdpSpec { mss_bytes: default_mss(), header_bytes: default_header(), rate_gbps: None }
    }
}

/// What an ATP sender does with a lost packet (`proto::atp::OnLoss`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtpOnLoss {
    /// Give the message up while the group may lose one, else resend (the paper).
    #[default]
    GiveUp,
    /// Always resend.
    Resend,
}

/// Which message an ATP sender serves next (`proto::atp::Sched`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtpSched {
    /// Minimal remaining data first (§4.3).
    #[default]
    Mrdf,
    /// Message order, a resend before later messages.
    InOrder,
    /// Message order, resends after new packets (ATP_Base).
    NewFirst,
}

/// Which of NetApprox's ATP variants (§7.1.2-7.1.3) a scenario runs; each mechanism can also
/// be switched on its own with the keys of the same name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtpVariant {
    /// Every mechanism (ATP_Full).
    #[default]
    Full,
    /// No rate control (R_max throughout), message order with resends after new packets, TLR
    /// and class fixed (ATP_Base).
    Base,
    /// Rate control against a fixed TLR, scheduled as ATP_Base (ATP_RC).
    Rc,
    /// ATP_RC plus MRDF (ATP_MRDF).
    Mrdf,
    /// Rate control and MRDF, TLR and class fixed at `1 - MSR` (ATP_FixTLR: same mechanisms
    /// as ATP_MRDF).
    FixTlr,
    /// Dynamic TLR, class fixed (ATP_FixPrio).
    FixPrio,
}

impl AtpVariant {
    /// The name in `proto::AtpConfig::variant`.
    pub fn name(self) -> &'static str {
        match self {
            AtpVariant::Full => "full",
            AtpVariant::Base => "base",
            AtpVariant::Rc => "rc",
            AtpVariant::Mrdf => "mrdf",
            AtpVariant::FixTlr => "fix_tlr",
            AtpVariant::FixPrio => "fix_prio",
        }
    }
}

/// Keys of `kind = "atp"`. Defaults mirror `proto::AtpConfig::default` except the packet size
/// (1424 + 76 header bytes: a 1500-byte IP packet) and the first epoch (the network's base
/// RTT).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtpSpec {
    /// Payload bytes per packet.
    #[serde(default = "default_atp_mss")]
    pub mss_bytes: u32,
    /// Header bytes per packet on the wire: IPv4 20 + UDP 8 + ATP 48.
    #[serde(default = "default_atp_header")]
    pub header_bytes: u32,
    /// The paper's variant (ablation) to run.
    #[serde(default)]
    pub variant: AtpVariant,
    /// Slack-based rate control (§4.2); absent: as the variant says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_control: Option<bool>,
    /// Dynamic target loss rate, eq. (1); absent: as the variant says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_tlr: Option<bool>,
    /// Move jobs between switch classes by their TLR (§5.2); absent: as the variant says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_prio: Option<bool>,
    /// Which message goes next: `mrdf` (minimal remaining data first, §4.3), `in_order`
    /// (message order, a resend first) or `new_first` (message order, resends after new
    /// packets: ATP_Base); absent: as the variant says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched: Option<AtpSched>,
    /// A lost packet's message: `give_up` while the group's slack lasts, resent beyond it (the
    /// paper, §4.1), or `resend` always (our variant, `proto::atp::AtpSender`).
    #[serde(default)]
    pub on_loss: AtpOnLoss,
    /// Eq. (2)'s reaction speed m in (0, 1] (the paper gives none; 1/8 is ours).
    #[serde(default = "default_atp_m")]
    pub m: f64,
    /// Epoch and loss timeout before the first RTT sample; absent: the network's base RTT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_rtt_us: Option<f64>,
    /// Switch priority classes the slack maps onto (§5.2; class 0 reserved).
    #[serde(default = "default_atp_classes")]
    pub classes: u8,
    /// Class of ACKs and end-of-job notices.
    #[serde(default)]
    pub ack_prio: u8,
    /// A plain flow's message size; absent: one packet (`mss_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_bytes: Option<u64>,
    /// A plain flow's minimal message sampling rate, in [0, 1] (1: reliable).
    #[serde(default = "default_atp_msr")]
    pub msr: f64,
    /// Epochs in a row without any ACK after which a job gives up.
    #[serde(default = "default_atp_silent")]
    pub max_silent_epochs: u32,
    /// R_max; absent: the host's line rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_gbps: Option<f64>,
}

impl Default for AtpSpec {
    fn default() -> Self {
        AtpSpec {
            mss_bytes: default_atp_mss(),
            header_bytes: default_atp_header(),
            variant: AtpVariant::Full,
            rate_control: None,
            dynamic_tlr: None,
            dynamic_prio: None,
            sched: None,
            on_loss: AtpOnLoss::GiveUp,
            m: default_atp_m(),
            init_rtt_us: None,
            classes: default_atp_classes(),
            ack_prio: 0,
            message_bytes: None,
            msr: default_atp_msr(),
            max_silent_epochs: default_atp_silent(),
            rate_gbps: None,
        }
    }
}

/// Keys of `kind = "expresspass"` and `kind = "aeolus"`. Defaults mirror
/// `proto::ExpressPassConfig::default`; the initial update period is the network's base RTT and
/// Aeolus's unscheduled bytes one BDP (host line rate x base RTT, Aeolus §3.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpressPassSpec {
    /// Payload bytes per data packet (1454: a 1538-byte frame on the wire with the header).
    #[serde(default = "default_xpass_mss")]
    pub mss_bytes: u32,
    /// Bytes besides the payload on the wire, and the size of a credit (ExpressPass §3.1: 84,
    /// the minimum Ethernet frame with preamble and inter-frame gap).
    #[serde(default = "default_xpass_header")]
    pub header_bytes: u32,
    /// Algorithm 1's target credit loss, in (0, 1).
    #[serde(default = "default_xpass_target_loss")]
    pub target_loss: f64,
    /// Algorithm 1's initial w, in (0, 1].
    #[serde(default = "default_xpass_w_init")]
    pub w_init: f64,
    /// Algorithm 1's smallest w, in (0, w_max].
    #[serde(default = "default_xpass_w_min")]
    pub w_min: f64,
    /// Algorithm 1's largest w, in (0, 1].
    #[serde(default = "default_xpass_w_max")]
    pub w_max: f64,
    /// Initial credit rate as a fraction of the maximum (ExpressPass's alpha), in (0, 1].
    #[serde(default = "default_xpass_init_rate")]
    pub init_rate: f64,
    /// Aeolus only: bytes sent unscheduled in the first RTT; absent: one BDP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unscheduled_bytes: Option<u64>,
    /// Feedback period before the first RTT sample; absent: the network's base RTT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_rtt_us: Option<f64>,
    /// Sender's retransmission (and credit re-request) timeout.
    #[serde(default = "default_xpass_rto_us")]
    pub rto_us: u64,
    /// Timeouts in a row without progress after which a transfer gives up.
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
}

impl Default for ExpressPassSpec {
    fn default() -> Self {
        ExpressPassSpec {
            mss_bytes: default_xpass_mss(),
            header_bytes: default_xpass_header(),
            target_loss: default_xpass_target_loss(),
            w_init: default_xpass_w_init(),
            w_min: default_xpass_w_min(),
            w_max: default_xpass_w_max(),
            init_rate: default_xpass_init_rate(),
            unscheduled_bytes: None,
            init_rtt_us: None,
            rto_us: default_xpass_rto_us(),
            max_retries: default_max_retries(),
        }
    }
}

fn default_xpass_mss() -> u32 {
    1454
}
fn default_xpass_header() -> u32 {
    84
}
fn default_xpass_target_loss() -> f64 {
    0.125
}
fn default_xpass_w_init() -> f64 {
    1.0 / 16.0
}
fn default_xpass_w_min() -> f64 {
    0.01
}
fn default_xpass_w_max() -> f64 {
    0.5
}
fn default_xpass_init_rate() -> f64 {
    1.0 / 16.0
}
fn default_xpass_rto_us() -> u64 {
    1000
}

fn default_atp_mss() -> u32 {
    1424
}
fn default_atp_header() -> u32 {
    76
}
fn default_atp_m() -> f64 {
    0.125
}
fn default_atp_classes() -> u8 {
    8
}
fn default_atp_msr() -> f64 {
    1.0
}
fn default_atp_silent() -> u32 {
    10_000
}

/// Keys of `kind = "pfabric"`. Defaults mirror `proto::PfabricConfig::default` except the
/// initial window and the RTO, which follow the network (§4.2: one BDP; about three RTTs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfabricSpec {
    /// Payload bytes per packet.
    #[serde(default = "default_mss")]
    pub mss_bytes: u32,
    /// Header bytes added to every packet on the wire (and the size of an ACK or probe).
    #[serde(default = "default_header")]
    pub header_bytes: u32,
    /// Initial window in packets; absent: one bandwidth-delay product of the hosts' links over
    /// the network's base RTT, in full packets (§4.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_cwnd_pkts: Option<u32>,
    /// Largest window in packets (also bounds each flow's scoreboard).
    #[serde(default = "default_pfabric_max_cwnd")]
    pub max_cwnd_pkts: u32,
    /// The fixed retransmission timeout; absent: three times the network's base RTT (§4.2,
    /// §5.1's 45 µs at a 14.6 µs RTT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_us: Option<f64>,
    /// Consecutive timeouts after which a flow sends only header-only probes until one is
    /// acknowledged (§4.2's probe mode).
    #[serde(default = "default_pfabric_probe_after")]
    pub probe_after_timeouts: u32,
}

impl Default for PfabricSpec {
    fn default() -> Self {
        PfabricSpec {
            mss_bytes: default_mss(),
            header_bytes: default_header(),
            init_cwnd_pkts: None,
            max_cwnd_pkts: default_pfabric_max_cwnd(),
            rto_us: None,
            probe_after_timeouts: default_pfabric_probe_after(),
        }
    }
}

/// Keys of `kind = "mlt"` (the bounded-loss transport, `proto::mlt`). Defaults mirror
/// `proto::MltConfig::default`; the DCTCP keys have the `dctcp` kind's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MltSpec {
    /// Payload bytes per packet (rounded down to whole values).
    #[serde(default = "default_mss")]
    pub mss_bytes: u32,
    /// Header bytes added to every packet on the wire (and the size of an ACK).
    #[serde(default = "default_header")]
    pub header_bytes: u32,
    /// Bytes per value: 4 (32-bit floats) or 2 (16-bit), APNet'19 §3.2.
    #[serde(default = "default_mlt_value_bytes")]
    pub value_bytes: u8,
    /// The fraction p of a message's values the receiver waits for, in (0, 1].
    #[serde(default = "default_mlt_fraction")]
    pub complete_fraction: f64,
    /// Initial congestion window in packets.
    #[serde(default = "default_iw")]
    pub init_cwnd_pkts: u32,
    /// The window law: "dctcp" (the paper's) or "cubic" (RFC 9438, Linux's default TCP law).
    #[serde(default)]
    pub cc: MltCcSpec,
    /// DCTCP EWMA gain g (DCTCP eq. 1).
    #[serde(default = "default_g")]
    pub g: f64,
    /// DCTCP initial alpha.
    #[serde(default = "default_alpha")]
    pub init_alpha: f64,
    /// The minimum (and initial) retransmission timeout; above it the timeout follows the
    /// measured RTT (RFC 6298). Losses it finds are abandoned while the bound allows.
    #[serde(default = "default_min_rto_us")]
    pub rto_us: u64,
    /// The largest retransmission timeout, after backoff.
    #[serde(default = "default_max_rto_us")]
    pub max_rto_us: u64,
    /// Later packets acknowledged before one that presume it lost (fast retransmit).
    #[serde(default = "default_dupack")]
    pub dupack_threshold: u32,
    /// The order of first transmissions: "shuffled" (a random order per message, so what is
    /// missing at completion is random packets) or "index" (the tail).
    #[serde(default)]
    pub send_order: MltSendOrderSpec,
    /// A tail-loss probe (RFC 8985 §7; not in the paper): two smoothed RTTs without progress
    /// send one probe whose ACK lets fast detection find a lost tail before the timeout.
    #[serde(default)]
    pub tail_probe: bool,
}

impl Default for MltSpec {
    fn default() -> Self {
        MltSpec {
            mss_bytes: default_mss(),
            header_bytes: default_header(),
            value_bytes: default_mlt_value_bytes(),
            complete_fraction: default_mlt_fraction(),
            init_cwnd_pkts: default_iw(),
            cc: MltCcSpec::default(),
            g: default_g(),
            init_alpha: default_alpha(),
            rto_us: default_min_rto_us(),
            max_rto_us: default_max_rto_us(),
            dupack_threshold: default_dupack(),
            send_order: MltSendOrderSpec::default(),
            tail_probe: false,
        }
    }
}

/// `send_order` of `kind = "mlt"` (`proto::MltSendOrder`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MltSendOrderSpec {
    /// A random order per message (the default).
    #[default]
    Shuffled,
    /// Index order: the values missing at completion are the message's tail.
    Index,
}

impl From<MltSendOrderSpec> for proto::MltSendOrder {
    fn from(o: MltSendOrderSpec) -> proto::MltSendOrder {
        match o {
            MltSendOrderSpec::Shuffled => proto::MltSendOrder::Shuffled,
            MltSendOrderSpec::Index => proto::MltSendOrder::Index,
        }
    }
}

/// `cc` of `kind = "mlt"`: the window law (`proto::MltCc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MltCcSpec {
    /// DCTCP over NewReno (the paper's).
    #[default]
    Dctcp,
    /// CUBIC, RFC 9438.
    Cubic,
}

impl From<MltCcSpec> for proto::MltCc {
    fn from(c: MltCcSpec) -> proto::MltCc {
        match c {
            MltCcSpec::Dctcp => proto::MltCc::Dctcp,
            MltCcSpec::Cubic => proto::MltCc::Cubic,
        }
    }
}

fn default_mlt_value_bytes() -> u8 {
    proto::MltConfig::default().value_bytes
}
fn default_mlt_fraction() -> f64 {
    proto::MltConfig::default().complete_fraction
}

fn default_pfabric_max_cwnd() -> u32 {
    proto::PfabricConfig::default().max_cwnd_pkts
}
fn default_pfabric_probe_after() -> u32 {
    proto::PfabricConfig::default().probe_after_timeouts
}

impl TransportSpec {
    /// The kind's name as written in scenarios.
    pub fn kind(&self) -> &'static str {
        match self {
            TransportSpec::Dctcp(_) => "dctcp",
            TransportSpec::Newreno(_) => "newreno",
            TransportSpec::PowerTcp(_) => "power_tcp",
            TransportSpec::Udp(_) => "udp",
            TransportSpec::Atp(_) => "atp",
            TransportSpec::Expresspass(_) => "expresspass",
            TransportSpec::Aeolus(_) => "aeolus",
            TransportSpec::Pfabric(_) => "pfabric",
            TransportSpec::Mlt(_) => "mlt",
        }
    }

    /// Whether transfers of this kind deliver every byte (the TCP kinds, pFabric, ExpressPass
    /// and Aeolus): what a sender-side approximation scheme (EarlySend, SampleSend) runs over.
    pub fn is_reliable(&self) -> bool {
        self.tcp().is_some()
            || matches!(self, TransportSpec::Pfabric(_) | TransportSpec::Expresspass(_) | TransportSpec::Aeolus(_))
    }

    /// The reliable byte stream's keys, for the TCP kinds.
    pub fn tcp(&self) -> Option<TcpKeys> {
        match self {
            TransportSpec::Dctcp(t) => Some(t.tcp()),
            TransportSpec::Newreno(t) => Some(t.tcp()),
            TransportSpec::PowerTcp(t) => Some(t.tcp()),
            TransportSpec::Udp(_)
            | TransportSpec::Atp(_)
            | TransportSpec::Expresspass(_)
            | TransportSpec::Aeolus(_)
            | TransportSpec::Pfabric(_)
            | TransportSpec::Mlt(_) => None,
        }
    }

    /// Payload bytes per full packet.
    pub fn mss_bytes(&self) -> u32 {
        match self {
            TransportSpec::Dctcp(t) => t.mss_bytes,
            TransportSpec::Newreno(t) => t.mss_bytes,
            TransportSpec::PowerTcp(t) => t.mss_bytes,
            TransportSpec::Udp(u) => u.mss_bytes,
            TransportSpec::Atp(a) => a.mss_bytes,
            TransportSpec::Expresspass(x) | TransportSpec::Aeolus(x) => x.mss_bytes,
            TransportSpec::Pfabric(p) => p.mss_bytes,
            TransportSpec::Mlt(m) => m.mss_bytes,
        }
    }

    /// Header bytes per packet (and the size of an ACK).
    pub fn header_bytes(&self) -> u32 {
        match self {
            TransportSpec::Dctcp(t) => t.header_bytes,
            TransportSpec::Newreno(t) => t.header_bytes,
            TransportSpec::PowerTcp(t) => t.header_bytes,
            TransportSpec::Udp(u) => u.header_bytes,
            TransportSpec::Atp(a) => a.header_bytes,
            TransportSpec::Expresspass(x) | TransportSpec::Aeolus(x) => x.header_bytes,
            TransportSpec::Pfabric(p) => p.header_bytes,
            TransportSpec::Mlt(m) => m.header_bytes,
        }
    }

    /// Packets a flow sends before its first feedback: the initial window of the TCP kinds,
    /// and the default window for UDP (which has none; ABM's first-RTT rule needs a size);
    /// pFabric's when given, else its default (the network's BDP, not known here).
    pub fn init_window_pkts(&self) -> u32 {
        match self {
            TransportSpec::Pfabric(p) => p.init_cwnd_pkts.unwrap_or(proto::PfabricConfig::default().init_cwnd_pkts),
            TransportSpec::Mlt(m) => m.init_cwnd_pkts,
            t => t.tcp().map_or(default_iw(), |t| t.init_cwnd_pkts),
        }
    }

    /// The keys a scenario may give for `kind` (with `kind`), or `None` for an unknown kind.
    pub fn keys_of(kind: &str) -> Option<Vec<String>> {
        let v = match kind {
            "dctcp" => serde_json::to_value(TransportSpec::Dctcp(DctcpSpec::default())),
            "newreno" => serde_json::to_value(TransportSpec::Newreno(NewRenoSpec::default())),
            "power_tcp" => serde_json::to_value(TransportSpec::PowerTcp(PowerTcpSpec { beta_bytes: Some(1), ..Default::default() })),
            "udp" => serde_json::to_value(TransportSpec::Udp(UdpSpec { rate_gbps: Some(1.0), ..Default::default() })),
            "atp" => serde_json::to_value(TransportSpec::Atp(AtpSpec {
                rate_control: Some(true),
                dynamic_tlr: Some(true),
                dynamic_prio: Some(true),
                sched: Some(AtpSched::Mrdf),
                init_rtt_us: Some(1.0),
                message_bytes: Some(1),
                rate_gbps: Some(1.0),
                ..Default::default()
            })),
            "expresspass" => serde_json::to_value(TransportSpec::Expresspass(ExpressPassSpec {
                init_rtt_us: Some(1.0),
                ..Default::default()
            })),
            "aeolus" => serde_json::to_value(TransportSpec::Aeolus(ExpressPassSpec {
                unscheduled_bytes: Some(1),
                init_rtt_us: Some(1.0),
                ..Default::default()
            })),
            "pfabric" => serde_json::to_value(TransportSpec::Pfabric(PfabricSpec {
                init_cwnd_pkts: Some(1),
                rto_us: Some(1.0),
                ..Default::default()
            })),
            "mlt" => serde_json::to_value(TransportSpec::Mlt(MltSpec::default())),
            _ => return None,
        }
        .ok()?;
        Some(v.as_object()?.keys().cloned().collect())
    }

    /// All kind names, for error messages.
    pub const KINDS: &'static [&'static str] =
        &["dctcp", "newreno", "power_tcp", "udp", "atp", "pfabric", "expresspass", "aeolus", "mlt"];
}

fn default_powertcp_gamma() -> f64 {
    0.9
}

fn default_mss() -> u32 {
    1460
}
fn default_header() -> u32 {
    40
}
fn default_iw() -> u32 {
    10
}
fn default_min_rto_us() -> u64 {
    10_000
}
fn default_max_rto_us() -> u64 {
    1_000_000
}
fn default_max_retries() -> u32 {
    15
}
fn default_dupack() -> u32 {
    3
}
fn default_delack_us() -> u64 {
    40
}
fn default_g() -> f64 {
    1.0 / 16.0
}
fn default_alpha() -> f64 {
    1.0
}
