//! `[switch]` (shared buffer, queues, scheduling, admission policy and Credence's oracle) and
//! `[host]` (the NIC queue: cap, ECN marking, scheduling, and TSQ backpressure).
//!
//! `switch.queues` is a list of queue tables, or the name of a [`QueuePreset`]
//! (`queues = "netapprox_slack"`): a preset is expanded into its explicit list when the scenario
//! is read, like a profile, so a [`Spec`] (and the resolved JSON) only ever holds the list, and
//! validation checks it as if the scenario had written it out.

#[allow(unused_imports)]
use super::*;

/// Switch model: one shared buffer per switch, up to [`MAX_QUEUES`] queues per egress port.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchSpec {
    /// Shared buffer of every switch in bytes. Exclusive with `buffer_per_port_per_gbps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_bytes: Option<u64>,
    /// Shared buffer as bytes per port per Gbps of port rate (Broadcom Tomahawk-like chips
    /// have about 5120 B): a switch's buffer = this x the sum of its egress port rates in Gbps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_per_port_per_gbps: Option<f64>,
    /// Scheduling between the queues of one egress port.
    #[serde(default)]
    pub scheduler: SchedulerKind,
    /// Buffer admission policy.
    #[serde(default)]
    pub admission: AdmissionSpec,
    /// Queues per egress port, by priority class (index 0 = highest priority). Packets of a
    /// class `>= queues.len()` go to the last queue. A scenario may instead name a
    /// [`QueuePreset`] (`queues = "netapprox_slack"`), which reading it expands into this list.
    #[serde(default = "default_queues")]
    pub queues: Vec<QueueSpec>,
    /// ExpressPass's credit queue (§3.1): credits wait in a queue of this many credits per
    /// egress port, apart from data, and leave at most one per serialization of a credit and
    /// the run's largest data packet (~5% of the link with 84 + 1538 B); beyond it they are
    /// dropped. 8 is ExpressPass's choice. Absent: credits queue with data, unlimited (needed
    /// by `transport.kind = "expresspass"` and `"aeolus"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credit_queue_pkts: Option<u32>,
    /// Aeolus's selective dropping (§3.2): an unscheduled packet is dropped at enqueue while its
    /// egress queue holds more than this many bytes; scheduled packets are admitted as usual.
    /// A few packets in the paper (8000 suggested). Absent: off (needed by
    /// `transport.kind = "aeolus"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selective_drop_bytes: Option<u64>,
}

impl Default for SwitchSpec {
    fn default() -> Self {
        SwitchSpec {
            buffer_bytes: None,
            buffer_per_port_per_gbps: None,
            scheduler: SchedulerKind::default(),
            admission: AdmissionSpec::default(),
            queues: default_queues(),
            credit_queue_pkts: None,
            selective_drop_bytes: None,
        }
    }
}

/// Default buffer when neither size key is given: 5120 B per port per Gbps.
pub const DEFAULT_BUFFER_PER_PORT_PER_GBPS: f64 = 5120.0;

/// Without a `queues` key: one queue marking at K = 65 full-size packets, the DCTCP paper's
/// recommendation at 10 Gb/s (§3.4).
fn default_queues() -> Vec<QueueSpec> {
    vec![QueueSpec { ecn_threshold_bytes: Some(65 * 1500), ..QueueSpec::default() }]
}

/// A named queue configuration a scenario gives as `switch.queues = "<name>"` instead of a list
/// of queue tables. Reading the scenario expands it into the explicit list ([`Self::expand`]),
/// so the resolved JSON shows the queues it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueuePreset {
    /// NetApprox's slack-based queues (Xia et al., `shared/papers/netapprox.txt` §5.2, §7.1):
    /// [`NETAPPROX_CLASSES`] strict-priority queues per egress port. Queue 0 (highest) carries
    /// non-approximate traffic: it marks ECN above 65 MTU (§7.1: "a marking threshold of 65")
    /// and may hold the rest of the buffer, `switch.buffer_bytes` minus the approximate queues'
    /// caps. Queue `k` in 1..=7 carries approximate traffic and holds at most `8 - k` MTU (the
    /// lowest, queue 7, 1 MTU; queue 1, 7 MTU: [`proto::atp::slack_buffers`]); it never marks
    /// and drops what does not fit (§7.1: "the approximate queues start to drop packets if the
    /// queues are full").
    ///
    /// The MTU is the run's full packet, `mss_bytes + header_bytes` of `[transport]` (or of a
    /// workload entry's own transport, if larger: every queue must hold one packet of each). The
    /// buffer must be one size for every switch, `switch.buffer_bytes` (§7.1: 1.5 MB), and at
    /// least 29 MTU, so that queue 0 gets at least one. Admission is complete sharing (the
    /// per-queue caps are the whole policy in the paper) unless the scenario itself sets
    /// `switch.admission` (a profile's admission policy does not count: the preset, which the
    /// scenario names, is more specific than a profile's defaults). The scheduler is left as
    /// given (strict priority by default, as the paper has it).
    NetapproxSlack,
}

/// Queues of [`QueuePreset::NetapproxSlack`]: one for non-approximate traffic and seven slack
/// classes, the eight priority queues of commodity switches that §7.1 configures.
pub const NETAPPROX_CLASSES: u8 = 8;

impl QueuePreset {
    /// Every preset name, for error messages.
    pub const NAMES: &'static [&'static str] = &["netapprox_slack"];

    /// The preset called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<QueuePreset> {
        serde_json::from_value(serde_json::Value::String(name.to_owned())).ok()
    }

    /// The name a scenario gives.
    pub fn name(self) -> &'static str {
        match self {
            QueuePreset::NetapproxSlack => "netapprox_slack",
        }
    }

    /// The preset's queues for full packets of `mtu` bytes and a switch buffer of `buffer_bytes`;
    /// `None` if the buffer leaves queue 0 less than one MTU.
    pub fn queues(self, mtu: u64, buffer_bytes: u64) -> Option<Vec<QueueSpec>> {
        match self {
            QueuePreset::NetapproxSlack => {
                let mtu = mtu.max(1);
                // The approximate queues' caps in MTUs (§5.2); slack_buffers' class-0 entry
                // counts whole MTUs, but queue 0 gets the exact bytes left over.
                let mtus = proto::atp::slack_buffers(NETAPPROX_CLASSES, buffer_bytes / mtu)?;
                let approx_bytes: u64 = mtus[1..].iter().map(|m| m * mtu).sum();
                let rest = buffer_bytes - approx_bytes;
                // POSTCONDITION: slack_buffers refuses a rest below one MTU.
                debug_assert!(rest >= mtu);
                // §7.1: "a marking threshold of 65" packets on the non-approximate queue.
                let queue0 = QueueSpec { ecn_threshold_bytes: Some(65 * mtu), cap_bytes: Some(rest), dt_alpha: 1.0 };
                let approx =
                    mtus[1..].iter().map(|m| QueueSpec { cap_bytes: Some(m * mtu), ..QueueSpec::default() });
                Some(std::iter::once(queue0).chain(approx).collect())
            }
        }
    }

    /// Expand the preset into `spec.switch.queues` (and its admission policy, unless
    /// `admission_given`: the scenario set `switch.admission` itself). Called when a scenario
    /// is read, once every other key is in place; errors name `switch.queues`.
    pub(crate) fn expand(self, spec: &mut Spec, admission_given: bool) -> Result<(), SpecError> {
        let value = format!("{:?}", self.name());
        let fix = "set switch.buffer_bytes, e.g. 1500000 as in NetApprox §7.1";
        let s = &spec.switch;
        let Some(buffer) = s.buffer_bytes else {
            let why = match (s.buffer_per_port_per_gbps, &s.admission) {
                (Some(f), _) => format!("switch.buffer_per_port_per_gbps = {f} gives each switch its own size"),
                (None, AdmissionSpec::Static { port_bytes: Some(p) }) => {
                    format!("switch.admission.port_bytes = {p} gives each switch its own size (ports x port_bytes)")
                }
                (None, _) => format!(
                    "no switch.buffer_bytes is given, and the default ({DEFAULT_BUFFER_PER_PORT_PER_GBPS} B per port \
                     per Gbps) gives each switch its own size"
                ),
            };
            return Err(SpecError::invalid(
                "switch.queues",
                value,
                format!(
                    "queue 0 gets the switch buffer minus the approximate queues' caps, so the buffer must be one \
                     size for every switch, but {why}: {fix}"
                ),
            ));
        };
        let mtu = spec.largest_packet().max(1);
        let queues = self.queues(mtu, buffer).ok_or_else(|| {
            let approx: u64 = (1..u64::from(NETAPPROX_CLASSES)).sum();
            SpecError::invalid(
                "switch.queues",
                &value,
                format!(
                    "switch.buffer_bytes = {buffer} leaves queue 0 less than one MTU ({mtu} B: mss_bytes + header_bytes) \
                     after the approximate queues' {approx} MTU: set switch.buffer_bytes to at least {} (e.g. 1500000 \
                     as in NetApprox §7.1)",
                    (approx + 1) * mtu
                ),
            )
        })?;
        spec.switch.queues = queues;
        if !admission_given {
            spec.switch.admission = AdmissionSpec::CompleteSharing;
        }
        Ok(())
    }
}

/// Scheduling between the queues of one egress port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerKind {
    /// Always serve the lowest-index non-empty queue.
    #[default]
    StrictPriority,
    /// Deficit round robin with a quantum of one MTU: equal byte shares among busy queues.
    RoundRobin,
    /// pFabric (Alizadeh et al., SIGCOMM'13 §4.1; `queue::Pfabric`): one queue per port, which
    /// sends the earliest packet of the flow of its most urgent packet (least remaining size,
    /// `[transport] kind = "pfabric"`) and, when full, drops its least urgent packet, which may
    /// be the arriving one. Its buffer is `queues[0].cap_bytes` (absent: twice the hosts'
    /// bandwidth-delay product, as §5.1's 36 KB at 10 Gb/s). Needs exactly one queue and
    /// `admission = { policy = "complete_sharing" }` (the port's buffer is the whole policy).
    /// Host NICs keep the order `host.scheduler` gives them (`fifo` stays a FIFO).
    Pfabric,
}

/// One queue of an egress port.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// DCTCP marking threshold K: an ECN-capable packet is marked CE if this queue holds more
    /// than K bytes when it arrives. Absent: this queue never marks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_threshold_bytes: Option<u64>,
    /// Static cap on this queue's bytes (on top of the admission policy). Absent: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap_bytes: Option<u64>,
    /// Dynamic Thresholds alpha of this queue (Choudhury and Hahne): admit while
    /// `queue < alpha * (buffer - occupancy)`.
    #[serde(default = "default_dt_alpha")]
    pub dt_alpha: f64,
}

impl Default for QueueSpec {
    /// A queue without marking or cap, with DT alpha 1.
    fn default() -> Self {
        QueueSpec { ecn_threshold_bytes: None, cap_bytes: None, dt_alpha: 1.0 }
    }
}
fn default_dt_alpha() -> f64 {
    1.0
}

/// Buffer admission policy (which arriving packets a switch's shared buffer accepts).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "snake_case", deny_unknown_fields)]
pub enum AdmissionSpec {
    /// Accept while the shared buffer has room.
    CompleteSharing,
    /// Dynamic Thresholds with per-queue alpha (`queues[i].dt_alpha`).
    #[default]
    DynamicThresholds,
    /// Static partitioning: each egress port owns `port_bytes`, or buffer / ports bytes.
    Static {
        /// Bytes each egress port owns. Absent: the switch buffer divided by its ports. With
        /// this key and no `switch.buffer_*` key, a switch's buffer is ports x port_bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        port_bytes: Option<u64>,
    },
    /// Longest Queue Drop: push-out from the tail of the longest queue when full.
    Lqd,
    /// Harmonic (Kesselman and Mansour): the `i` longest queues together hold at most
    /// `B · H_i / H_N` (see `admission::Harmonic`).
    Harmonic,
    /// Active Buffer Management (Addanki et al., SIGCOMM'22): `alpha_p / n_p · (B − Q) ·
    /// mu_i / b` with `alpha_p = queues[p].dt_alpha` (see `admission::Abm`).
    Abm {
        /// Alpha of packets in their flow's first round trip (Credence §4.1: 64).
        #[serde(default = "default_abm_alpha_first_rtt")]
        alpha_first_rtt: f64,
        /// Period of the `n_p` and dequeue-rate refresh (one base RTT). Absent: the
        /// network's base RTT as the simulator computes it, else [`DEFAULT_BASE_RTT_US`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base_rtt_us: Option<f64>,
        /// A queue longer than this is congested (counts toward `n_p`).
        #[serde(default = "default_abm_congested_bytes")]
        congested_bytes: u64,
        /// The bytes at the start of each flow whose packets are its first round trip's
        /// (`alpha_first_rtt`), by their offset in the flow. Absent: one round trip of
        /// propagation at the host link rate (the hosts' rate times the longest propagation
        /// round trip between two hosts), as the Credence artifact's `RTTBytes` (Credence
        /// §4.1: "packets which arrive during the first round-trip-time"), so that fewer bytes
        /// are prioritized as the RTT falls (the paper's "ABM is sensitive to RTT").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_rtt_bytes: Option<u64>,
    },
    /// FollowLQD (Credence Algorithm 2): drop-tail following LQD's queue lengths as
    /// thresholds, without predictions.
    FollowLqd,
    /// Credence (NSDI'24, Algorithm 1): FollowLQD's thresholds, a safeguard below `B/N`, and
    /// a drop oracle consulted when the thresholds allow a packet.
    Credence {
        /// The drop oracle. Default: the built-in random forest.
        #[serde(default = "default_oracle")]
        oracle: OracleSpec,
        /// Time constant of the oracle features' moving averages (one base RTT, §3.4).
        /// Absent: as for `abm.base_rtt_us`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base_rtt_us: Option<f64>,
    },
}

impl AdmissionSpec {
    /// The keys a scenario may give with `policy` (without `policy`), or `None` for an
    /// unknown policy. Read from what each variant serializes, so it cannot drift from the
    /// schema.
    pub fn keys_of(policy: &str) -> Option<Vec<String>> {
        let every = [
            AdmissionSpec::CompleteSharing,
            AdmissionSpec::DynamicThresholds,
            AdmissionSpec::Static { port_bytes: Some(1) },
            AdmissionSpec::Lqd,
            AdmissionSpec::Harmonic,
            AdmissionSpec::Abm { alpha_first_rtt: 1.0, base_rtt_us: Some(1.0), congested_bytes: 1, first_rtt_bytes: Some(1) },
            AdmissionSpec::FollowLqd,
            AdmissionSpec::Credence { oracle: OracleSpec::AlwaysAccept, base_rtt_us: Some(1.0) },
        ];
        keys_of_variant(every.iter().map(serde_json::to_value), "policy", policy)
    }
}

impl OracleSpec {
    /// The keys a scenario may give with `kind` (without `kind`), or `None` for an unknown
    /// kind (see [`AdmissionSpec::keys_of`]).
    pub fn keys_of(kind: &str) -> Option<Vec<String>> {
        let every = [
            OracleSpec::Forest { path: default_forest(), model: LoadedForest::default() },
            OracleSpec::AlwaysAccept,
            OracleSpec::AlwaysDrop,
            OracleSpec::Flip { inner: Box::new(OracleSpec::AlwaysAccept), p: 0.0, seed: Some(1) },
        ];
        keys_of_variant(every.iter().map(serde_json::to_value), "kind", kind)
    }
}

/// The keys, besides `tag`, of the serialized variant whose `tag` is `name`.
fn keys_of_variant(
    every: impl Iterator<Item = serde_json::Result<serde_json::Value>>,
    tag: &str,
    name: &str,
) -> Option<Vec<String>> {
    every.filter_map(Result::ok).find(|v| v.get(tag).and_then(|t| t.as_str()) == Some(name)).and_then(|v| {
        Some(v.as_object()?.keys().filter(|k| *k != tag).cloned().collect())
    })
}

/// Base RTT used by ABM's refresh and Credence's feature averages when neither the scenario
/// nor the simulator gives one: the 25.2 us of Credence's evaluation topology (§4.1).
pub const DEFAULT_BASE_RTT_US: f64 = 25.2;

fn default_abm_alpha_first_rtt() -> f64 {
    64.0
}

/// ABM's saturation level in the authors' ns-3 artifact: 20 packets of 1400 B.
fn default_abm_congested_bytes() -> u64 {
    20 * 1400
}

/// Credence's drop oracle: predicts whether LQD would drop a packet (Credence §2.3.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum OracleSpec {
    /// A scikit-learn random forest exported to JSON (format: `credence::forest`).
    Forest {
        /// The forest file, relative to the scenario's folder, or `"default"` (the default):
        /// the built-in model trained by `slacknet credence train` on
        /// `experiments/credence/train.toml` (`data/credence_forest.json`).
        #[serde(default = "default_forest")]
        path: String,
        /// The parsed file, filled in by [`Spec::validate`].
        #[serde(skip)]
        model: LoadedForest,
    },
    /// Never predicts a drop.
    AlwaysAccept,
    /// Always predicts a drop.
    AlwaysDrop,
    /// Flips the inner oracle's answer with probability `p` (Credence §4.2, Figure 10).
    Flip {
        /// The oracle whose answers are flipped.
        inner: Box<OracleSpec>,
        /// Flip probability, in [0, 1].
        p: f64,
        /// Seed of the flips. Absent: derived from the scenario seed. Each switch draws its
        /// own stream from it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seed: Option<u64>,
    },
}

fn default_oracle() -> OracleSpec {
    OracleSpec::Forest { path: default_forest(), model: LoadedForest::default() }
}

fn default_forest() -> String {
    "default".into()
}

/// The built-in Credence model (see [`OracleSpec::Forest`]).
pub const BUILTIN_FOREST: &str = include_str!("../../data/credence_forest.json");

/// A file input's parsed contents, cached by [`Spec::validate`] so that building a simulation
/// does no I/O. A cache of what the key names: equality ignores it, and it is not serialized.
#[derive(Clone, Debug)]
pub struct Loaded<T>(pub Option<std::sync::Arc<T>>);

impl<T> Default for Loaded<T> {
    fn default() -> Self {
        Loaded(None)
    }
}

impl<T> PartialEq for Loaded<T> {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

/// A forest file's parsed contents, cached by [`Spec::validate`] so that the simulation
/// neither re-reads nor re-parses it. A cache of what `path` names: equality ignores it.
#[derive(Clone, Debug, Default)]
pub struct LoadedForest(pub Option<std::sync::Arc<crate::credence::forest::Forest>>);

impl PartialEq for LoadedForest {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Default for HostSpec {
    fn default() -> Self {
        HostSpec {
            nic_buffer_bytes: None,
            ecn_threshold_bytes: None,
            ecn_marking: true,
            scheduler: NicSchedulerKind::default(),
            tsq_pkts: DEFAULT_TSQ_PKTS,
        }
    }
}

/// Host NIC model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// Byte cap of the NIC queue. Absent: unbounded (transports are window-limited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_buffer_bytes: Option<u64>,
    /// ECN marking threshold at the NIC queue. Absent: the threshold of the switches' first
    /// queue (`switch.queues[0].ecn_threshold_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_threshold_bytes: Option<u64>,
    /// Whether NICs mark ECN at all. Default `true`: a sender whose own NIC is its bottleneck
    /// (one long flow at line rate) sees its queue there, as DCTCP hosts do with a marking qdisc;
    /// without it, the window of such a flow grows without bound and every other flow of the
    /// host waits behind it in the NIC's FIFO.
    #[serde(default = "yes")]
    pub ecn_marking: bool,
    /// How the NIC orders the packets of its host's flows: one FIFO per flow served round
    /// robin (`"per_flow_rr"`, the default, as Linux's `fq` qdisc and htsim's hosts do; see
    /// `queue::per_flow_rr`), one FIFO for all (`"fifo"`, ns-3's NIC and the `ns3_compat`
    /// profile), or pFabric's priority order (`"pfabric"`). Why the default: see
    /// [`NicSchedulerKind`].
    #[serde(default)]
    pub scheduler: NicSchedulerKind,
    /// TCP Small Queues (Linux's `tcp_limit_output_bytes`), in full packets (`mss_bytes +
    /// header_bytes` of the transfer's transport): a sender is not asked for another packet while its bytes waiting in
    /// its host's NIC queue plus one full packet would exceed this many full packets' bytes; it
    /// is asked again when one of them starts serialization. Receivers (ACKs) are never held
    /// back. `0` turns it off (the NIC takes everything a transport may send). Counted in
    /// packets so that one value means the same with any segment size. Default
    /// [`DEFAULT_TSQ_PKTS`].
    #[serde(default = "default_tsq_pkts")]
    pub tsq_pkts: u32,
}

/// Default of `host.tsq_pkts`: two full packets. Without a limit a transport that ignores ECN
/// (NewReno, UDP) piles its whole window into its NIC: on `experiments/scale/fat_tree_k8.toml`
/// with NewReno a NIC held 17 MB and short flows' median slowdown was 13.0 (seed 1; 11.2 with
/// seed 2); with two packets the NIC holds 34 KB at most and the median is 6.0 (5.2), with about
/// 40% fewer RTOs; ten packets gave 6.3 (5.2). Under DCTCP, whose NIC marking already bounds the
/// queue, it changes medians by less than 5% (README, "Host NICs"). Any limit keeps a lone sender
/// at line rate (a held sender is polled when its packet starts serializing, so the next one is
/// queued before the NIC idles); two is the floor of Linux's own limit (`tcp_small_queue_check`:
/// at least two packets, else about 1 ms at the pacing rate, at most `tcp_limit_output_bytes`),
/// whose larger values serve TSO segments this simulator does not model. One packet was not
/// measured.
pub const DEFAULT_TSQ_PKTS: u32 = 2;

fn default_tsq_pkts() -> u32 {
    DEFAULT_TSQ_PKTS
}

/// How a host NIC orders the packets of its flows.
///
/// The default is per-flow round robin: a short flow then waits for at most one packet of each
/// other flow of its host, not for their backlog, as under Linux's `fq` (and `fq_codel`, the
/// default qdisc of most distributions) and in htsim, whose hosts pull from their flows in turn.
/// Measured (README, "Host NICs"): on the k = 8 fat-tree at 100 Gb/s with DCTCP it lowers short
/// flows' median slowdown by about 5% over three seeds; with NewReno and no TSQ it halves it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NicSchedulerKind {
    /// One FIFO for every flow of the host (a NIC without a qdisc, or `pfifo_fast`; ns-3's
    /// NIC with its queue disc).
    Fifo,
    /// One FIFO per flow, deficit round robin among the flows with packets, one MTU quantum
    /// (Linux `fq`, htsim's hosts).
    #[default]
    PerFlowRr,
    /// One queue in pFabric's order (SIGCOMM'13 §4.1, `queue::Pfabric`): the earliest packet of
    /// the flow of the most urgent packet (least remaining size) goes first, so a host serves
    /// its own flows shortest-remaining-first as pFabric's switches do. The NIC queue's cap,
    /// if any, drops arrivals as under the other orders.
    Pfabric,
}

