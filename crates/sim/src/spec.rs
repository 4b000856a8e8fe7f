//! The scenario schema: what a user writes (TOML or JSON), validated into a [`ValidSpec`].
//!
//! Pipeline position: `spec -> (topo, workload) -> world -> metrics`. Rust owns this schema;
//! `python/slacknet/config.py` mirrors it with pydantic and a round-trip test keeps the two
//! in sync. Every default lives in a `default_*` function or `Default` impl in this file.
//!
//! INVARIANT: unknown keys are rejected everywhere (`deny_unknown_fields`), and every value a
//! [`ValidSpec`] holds has passed [`Spec::validate`], whose errors name the offending key and
//! value ([`SpecError`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The most queues an egress port supports (8 priority classes, as in commodity switches).
pub const MAX_QUEUES: usize = 8;

/// A whole scenario. Deserialize with [`Spec::from_toml_str`] or [`Spec::from_json_str`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Free-form scenario name, used for the results folder.
    #[serde(default = "default_name")]
    pub name: String,
    /// Master seed: every random choice of the run derives from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Model profile: a named set of defaults applied beneath the keys the scenario sets
    /// (see [`profile_defaults`]).
    #[serde(default)]
    pub profile: Profile,
    /// The network.
    pub topology: TopologySpec,
    /// Path selection.
    #[serde(default)]
    pub routing: RoutingSpec,
    /// Switch buffers, queues, scheduling, ECN and admission.
    #[serde(default)]
    pub switch: SwitchSpec,
    /// Host NIC queue.
    #[serde(default)]
    pub host: HostSpec,
    /// The transport every flow uses.
    #[serde(default)]
    pub transport: TransportSpec,
    /// Traffic sources; their flows are merged and sorted by start time.
    #[serde(default)]
    pub workload: Vec<WorkloadSpec>,
    /// Run control.
    #[serde(default)]
    pub run: RunSpec,
}

/// A named set of defaults for keys a scenario leaves out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// slacknet's own defaults (as documented on each key).
    #[default]
    Default,
    /// Match vanilla ns-3.44's semantics (`data/profiles/ns3_compat.toml` lists and explains
    /// every value): handshake, IW 10, 1400 B segments, 54 B headers, 10 ms minimum RTO,
    /// no delayed ACK, ECN marking at NICs, static 350 KB per-port buffers.
    Ns3Compat,
}

impl Profile {
    /// All profile names, for error messages.
    pub const NAMES: &'static [&'static str] = &["default", "ns3_compat"];
}

/// The defaults a profile applies, as a partial scenario tree (JSON object).
pub fn profile_defaults(p: Profile) -> serde_json::Value {
    match p {
        Profile::Default => serde_json::Value::Object(Default::default()),
        Profile::Ns3Compat => {
            let t: toml::Value = toml::from_str(include_str!("../data/profiles/ns3_compat.toml"))
                .expect("the built-in profile parses");
            serde_json::to_value(t).expect("TOML converts to JSON")
        }
    }
}

/// Put `defaults` beneath `user`: tables merge recursively, anything else the user set wins. A
/// table naming another `policy` than the default's (an admission policy) replaces it whole:
/// one policy's keys mean nothing to another.
fn merge_beneath(user: &mut serde_json::Value, defaults: &serde_json::Value) {
    if let (Some(u), Some(d)) = (user.as_object_mut(), defaults.as_object()) {
        if u.get("policy").is_some_and(|p| Some(p) != d.get("policy")) {
            return;
        }
        for (k, dv) in d {
            match u.get_mut(k) {
                Some(uv) => merge_beneath(uv, dv),
                None => {
                    u.insert(k.clone(), dv.clone());
                }
            }
        }
    }
}

/// If the tree names a non-default profile, merge its defaults in. Errors name the key.
fn apply_profile(tree: &mut serde_json::Value) -> Result<bool, SpecError> {
    let Some(p) = tree.get("profile") else { return Ok(false) };
    let profile: Profile = serde_json::from_value(p.clone()).map_err(|_| {
        SpecError::invalid("profile", p, format!("unknown profile; expected one of {}", Profile::NAMES.join(", ")))
    })?;
    if profile == Profile::Default {
        return Ok(false);
    }
    merge_beneath(tree, &profile_defaults(profile));
    Ok(true)
}

fn default_name() -> String {
    "scenario".into()
}
fn default_seed() -> u64 {
    1
}

/// The network to build.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// Two-tier leaf-spine. Oversubscription follows from the numbers:
    /// `hosts_per_leaf * host_rate / (spines * links_per_spine * fabric_rate)`.
    LeafSpine(LeafSpine),
    /// Three-tier k-ary fat-tree (Al-Fares et al.): k pods of k/2 edge and k/2 aggregation
    /// switches, (k/2)^2 cores, k^3/4 hosts. All links at one rate and delay.
    FatTree(FatTree),
}

/// Keys of `kind = "leaf_spine"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeafSpine {
    /// Number of leaf (top-of-rack) switches.
    pub leaves: u32,
    /// Hosts under each leaf.
    pub hosts_per_leaf: u32,
    /// Number of spine switches (0 only with a single leaf).
    pub spines: u32,
    /// Parallel links between each leaf and each spine.
    #[serde(default = "one")]
    pub links_per_spine: u32,
    /// Host-to-leaf link rate.
    pub host_rate_gbps: f64,
    /// Leaf-to-spine link rate.
    pub fabric_rate_gbps: f64,
    /// Host-to-leaf propagation delay.
    #[serde(default = "default_delay_ns")]
    pub host_delay_ns: u64,
    /// Leaf-to-spine propagation delay.
    #[serde(default = "default_delay_ns")]
    pub fabric_delay_ns: u64,
}

/// Keys of `kind = "fat_tree"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FatTree {
    /// Switch radix; even, at least 2.
    pub k: u32,
    /// Rate of every link.
    pub rate_gbps: f64,
    /// Propagation delay of every link.
    #[serde(default = "default_delay_ns")]
    pub delay_ns: u64,
}

fn one() -> u32 {
    1
}
fn default_delay_ns() -> u64 {
    1000
}

/// Path selection among equal-cost paths.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingSpec {
    /// `ecmp` (per-flow hash), `spray` (per-packet) or `flow_index` (flow index mod paths).
    #[serde(default)]
    pub mode: RoutingMode,
    /// Seed of the ECMP and spraying hash (default 0). Change it to sample routing noise: which
    /// equal-cost path each flow takes, with everything else fixed.
    #[serde(default)]
    pub hash_seed: u64,
}

/// How a switch picks among equal-cost next hops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoutingMode {
    /// Per-flow: a stable hash of (flow, switch) picks the next hop; a flow keeps its path.
    #[default]
    Ecmp,
    /// Per-packet: a stable hash of (flow, sequence, switch) picks the next hop.
    Spray,
    /// Per-flow without hashing: member `flow index mod group size`, in both directions. A
    /// deterministic path choice that another simulator can reproduce exactly (the ns-3 peer's
    /// `--ecmp=flowid`), for A/B comparisons free of hash-collision noise.
    FlowIndex,
}

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
    /// class `>= queues.len()` go to the last queue.
    #[serde(default = "default_queues")]
    pub queues: Vec<QueueSpec>,
}

impl Default for SwitchSpec {
    fn default() -> Self {
        SwitchSpec {
            buffer_bytes: None,
            buffer_per_port_per_gbps: None,
            scheduler: SchedulerKind::default(),
            admission: AdmissionSpec::default(),
            queues: default_queues(),
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

/// Scheduling between the queues of one egress port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerKind {
    /// Always serve the lowest-index non-empty queue.
    #[default]
    StrictPriority,
    /// Deficit round robin with a quantum of one MTU: equal byte shares among busy queues.
    RoundRobin,
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
pub const BUILTIN_FOREST: &str = include_str!("../data/credence_forest.json");

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
        HostSpec { nic_buffer_bytes: None, ecn_threshold_bytes: None, ecn_marking: true }
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
}

fn yes() -> bool {
    true
}

/// The transport every flow uses, with its knobs. Defaults mirror `proto::TcpConfig::default`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransportSpec {
    /// `dctcp`, `newreno`, `power_tcp` or `udp`.
    #[serde(default)]
    pub kind: TransportKind,
    /// Payload bytes per packet.
    #[serde(default = "default_mss")]
    pub mss_bytes: u32,
    /// Header bytes added to every packet on the wire (and the size of a pure ACK).
    #[serde(default = "default_header")]
    pub header_bytes: u32,
    /// Initial congestion window in packets.
    #[serde(default = "default_iw")]
    pub init_cwnd_pkts: u32,
    /// Minimum retransmission timeout.
    #[serde(default = "default_min_rto_us")]
    pub min_rto_us: u64,
    /// Retransmission timeout before the first RTT sample.
    #[serde(default = "default_min_rto_us")]
    pub init_rto_us: u64,
    /// Maximum retransmission timeout after backoff.
    #[serde(default = "default_max_rto_us")]
    pub max_rto_us: u64,
    /// Duplicate ACKs that trigger fast retransmit.
    #[serde(default = "default_dupack")]
    pub dupack_threshold: u32,
    /// Delayed ACKs: ACK every this many segments (0 = every segment, no delayed ACK).
    #[serde(default)]
    pub delayed_ack_segments: u32,
    /// Delayed ACK timeout.
    #[serde(default = "default_delack_us")]
    pub delayed_ack_timeout_us: u64,
    /// Three-way handshake before data.
    #[serde(default)]
    pub handshake: bool,
    /// DCTCP EWMA gain g (DCTCP eq. 1).
    #[serde(default = "default_g")]
    pub dctcp_g: f64,
    /// DCTCP initial alpha.
    #[serde(default = "default_alpha")]
    pub dctcp_init_alpha: f64,
    /// UDP sending rate; absent = the host's line rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_rate_gbps: Option<f64>,
    /// PowerTCP's EWMA weight gamma (NSDI'22 Algorithm 1; the paper uses 0.9).
    #[serde(default = "default_powertcp_gamma")]
    pub powertcp_gamma: f64,
    /// PowerTCP's additive increase beta in bytes. Absent: the host BDP / 10, as the authors'
    /// Linux module. Base RTT and NIC rate come from the topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub powertcp_beta_bytes: Option<u64>,
}

fn default_powertcp_gamma() -> f64 {
    0.9
}

impl Default for TransportSpec {
    fn default() -> Self {
        TransportSpec {
            kind: TransportKind::default(),
            mss_bytes: default_mss(),
            header_bytes: default_header(),
            init_cwnd_pkts: default_iw(),
            min_rto_us: default_min_rto_us(),
            init_rto_us: default_min_rto_us(),
            max_rto_us: default_max_rto_us(),
            dupack_threshold: default_dupack(),
            delayed_ack_segments: 0,
            delayed_ack_timeout_us: default_delack_us(),
            handshake: false,
            dctcp_g: default_g(),
            dctcp_init_alpha: default_alpha(),
            udp_rate_gbps: None,
            powertcp_gamma: default_powertcp_gamma(),
            powertcp_beta_bytes: None,
        }
    }
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

/// Transport protocol of every flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    /// DCTCP (ECN-based, per-packet echo).
    #[default]
    Dctcp,
    /// TCP NewReno (loss-based, no ECN).
    Newreno,
    /// Unreliable UDP at line rate or `udp_rate_gbps`.
    Udp,
    /// PowerTCP (Addanki et al. NSDI'22): power-based window control on in-band telemetry
    /// that every switch egress writes into data packets.
    PowerTcp,
}

/// One traffic source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// Poisson flow arrivals at a target load with sizes from a CDF.
    Poisson(Poisson),
    /// Incast: queries arrive at every receiver as a Poisson process; each makes `fan_in`
    /// senders answer with `burst / fan_in` bytes at once.
    Incast(Incast),
    /// Replay a flow list (`id src dst start_s size_bytes incast` per line, `#` comments), as
    /// written for the peer simulators in `shared/data/peer-bench/`.
    FlowList(FlowList),
    /// Flows given inline.
    Flows(Flows),
    /// A closed loop per host pair: the next transfer starts when the previous one is
    /// delivered (after `think_us`), `count` transfers each.
    ClosedLoop(ClosedLoopSpec),
    /// Rounds of transfers separated by a barrier: compute for `compute_us`, start every
    /// transfer, wait for the last one; `rounds` times (a training iteration, a shuffle).
    Barrier(BarrierSpec),
    /// Blocks relayed along a chain of hosts: each host forwards a block once it has it.
    Relay(RelaySpec),
}

/// Keys of `kind = "closed_loop"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClosedLoopSpec {
    /// Host pairs `[src, dst]`.
    pub pairs: Vec<[u32; 2]>,
    /// Bytes per transfer.
    pub size_bytes: u64,
    /// Transfers per pair.
    pub count: u32,
    /// Pause between a delivery and the next transfer.
    #[serde(default)]
    pub think_us: f64,
    /// Priority class.
    #[serde(default)]
    pub prio: u8,
}

/// Keys of `kind = "barrier"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BarrierSpec {
    /// The transfers of every round (their `start_ns` and `incast` keys must be left out).
    pub transfers: Vec<FlowEntry>,
    /// Number of rounds.
    pub rounds: u32,
    /// Compute phase before each round's transfers.
    #[serde(default)]
    pub compute_us: f64,
}

/// Keys of `kind = "relay"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelaySpec {
    /// Hosts in relay order; the first holds every block.
    pub chain: Vec<u32>,
    /// Bytes per block.
    pub block_bytes: u64,
    /// Number of blocks.
    pub blocks: u32,
}

/// Keys of `kind = "poisson"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Poisson {
    /// Built-in distribution name (`websearch`, `fb_hadoop`, `google_rpc`) or a path to a
    /// CDF file (relative paths are relative to the scenario file).
    pub cdf: String,
    /// Offered load as a fraction of `load_reference` capacity, in (0, 1].
    pub load: f64,
    /// Which capacity `load` refers to.
    #[serde(default)]
    pub load_reference: LoadReference,
    /// Destination choice.
    #[serde(default)]
    pub destinations: Destinations,
    /// First arrival not before this time.
    #[serde(default)]
    pub start_ms: f64,
    /// Arrivals happen in `[start_ms, start_ms + duration_ms)`.
    pub duration_ms: f64,
    /// Priority class of these flows.
    #[serde(default)]
    pub prio: u8,
    /// The distribution, read and parsed by [`Spec::validate`].
    #[serde(skip)]
    pub loaded: Loaded<crate::workload::Cdf>,
}

/// Keys of `kind = "incast"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Incast {
    /// Queries per second per receiving host.
    pub query_rate_per_host: f64,
    /// Senders per query.
    pub fan_in: u32,
    /// Total response bytes per query. Exclusive with `burst_buffer_fraction`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_bytes: Option<u64>,
    /// Total response bytes per query as a fraction of the switch buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_buffer_fraction: Option<f64>,
    /// Which hosts answer a query.
    #[serde(default)]
    pub senders: IncastSenders,
    /// First query not before this time.
    #[serde(default)]
    pub start_ms: f64,
    /// Queries happen in `[start_ms, start_ms + duration_ms)`.
    pub duration_ms: f64,
    /// Priority class of these flows.
    #[serde(default)]
    pub prio: u8,
}

/// Keys of `kind = "flow_list"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowList {
    /// Path to the file (relative paths are relative to the scenario file).
    pub path: String,
    /// Priority class of these flows.
    #[serde(default)]
    pub prio: u8,
    /// The flows, read and parsed by [`Spec::validate`].
    #[serde(skip)]
    pub loaded: Loaded<Vec<crate::workload::FlowSpec>>,
}

/// Keys of `kind = "flows"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flows {
    /// The flows.
    pub flows: Vec<FlowEntry>,
}

/// One inline flow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowEntry {
    /// Source host index.
    pub src: u32,
    /// Destination host index.
    pub dst: u32,
    /// Bytes to transfer (at least 1).
    pub size_bytes: u64,
    /// Start time.
    #[serde(default)]
    pub start_ns: u64,
    /// Priority class.
    #[serde(default)]
    pub prio: u8,
    /// Tag the flow as incast in the records.
    #[serde(default)]
    pub incast: bool,
}

/// The capacity a Poisson load refers to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadReference {
    /// Each host's access link: per-host arrival rate = load x host rate / mean size.
    #[default]
    HostLink,
    /// Each leaf's (edge switch's) uplink capacity shared by its hosts: per-host arrival rate
    /// = load x (uplink capacity / hosts per leaf) / mean size.
    LeafUplink,
}

/// Destination choice of Poisson flows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Destinations {
    /// Any other host, uniformly.
    #[default]
    Uniform,
    /// Any host under another leaf, uniformly.
    OtherLeaf,
    /// A fixed random permutation without fixed points: host i always sends to p(i).
    Permutation,
}

/// Which hosts answer an incast query.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncastSenders {
    /// `fan_in` distinct hosts other than the receiver, uniformly.
    #[default]
    Random,
    /// `fan_in` distinct hosts under other leaves than the receiver's, uniformly.
    OtherLeaf,
}

/// Run control.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Stop the simulation at this time even if flows are unfinished. Absent: run until
    /// every flow has finished (or nothing is left to happen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_ms: Option<f64>,
    /// Period of switch buffer occupancy samples (0 = no sampling).
    #[serde(default = "default_sample_us")]
    pub sample_interval_us: f64,
    /// Where a TCP flow's completion time is measured (UDP flows always end at the receiver).
    #[serde(default)]
    pub fct_at: FctAt,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec { stop_ms: None, sample_interval_us: default_sample_us(), fct_at: FctAt::default() }
    }
}

/// Where a TCP flow's completion time is measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FctAt {
    /// When the sender holds the ACK of the last byte (a full round trip after the data).
    #[default]
    Sender,
    /// When the receiver has every byte (what ns-3 programs usually measure, via the sink
    /// application).
    Receiver,
}

fn default_sample_us() -> f64 {
    10.0
}

/// A scenario that is wrong, with the key and value at fault.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// The text does not parse or has a key of the wrong type or name.
    #[error("{key}: {message}")]
    Parse {
        /// Dotted path of the offending key (`workload[0].load`), or `<root>`.
        key: String,
        /// What the parser said.
        message: String,
    },
    /// A value is out of range or inconsistent with others.
    #[error("{key} = {value}: {message}")]
    Invalid {
        /// Dotted path of the offending key.
        key: String,
        /// The value as written.
        value: String,
        /// What is wrong and how to fix it.
        message: String,
    },
}

impl SpecError {
    /// The dotted path of the offending key.
    pub fn key(&self) -> &str {
        match self {
            SpecError::Parse { key, .. } | SpecError::Invalid { key, .. } => key,
        }
    }

    fn invalid(key: impl Into<String>, value: impl ToString, message: impl Into<String>) -> Self {
        SpecError::Invalid { key: key.into(), value: value.to_string(), message: message.into() }
    }
}

impl Spec {
    /// Parse TOML. Errors name the key path (and the line, when the TOML parser knows it).
    pub fn from_toml_str(text: &str) -> Result<Spec, SpecError> {
        if let Ok(mut tree) = toml::from_str::<toml::Value>(text)
            .map_err(|_| ())
            .and_then(|v| serde_json::to_value(v).map_err(|_| ()))
        {
            if apply_profile(&mut tree)? {
                return Spec::from_json_str(&tree.to_string());
            }
        }
        let de = toml::Deserializer::new(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let key = path_string(e.path());
            let refined = toml::from_str::<toml::Value>(text)
                .ok()
                .and_then(|v| serde_json::to_value(v).ok())
                .and_then(|root| refine_tagged_error(&root, &key));
            if let Some(r) = refined {
                return r;
            }
            let message = e.inner().message().to_string();
            let message = match e.inner().span() {
                Some(span) if !key.starts_with("topology") && !key.starts_with("workload") => {
                    let line = text[..span.start.min(text.len())].lines().count().max(1);
                    format!("{message} (line {line})")
                }
                _ => message,
            };
            SpecError::Parse { key, message }
        })
    }

    /// Parse JSON (what the Python front end sends).
    pub fn from_json_str(text: &str) -> Result<Spec, SpecError> {
        if let Ok(mut tree) = serde_json::from_str::<serde_json::Value>(text) {
            if apply_profile(&mut tree)? {
                let merged = tree.to_string();
                return Spec::from_json_plain(&merged);
            }
        }
        Spec::from_json_plain(text)
    }

    fn from_json_plain(text: &str) -> Result<Spec, SpecError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let key = path_string(e.path());
            serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .and_then(|root| refine_tagged_error(&root, &key))
                .unwrap_or_else(|| SpecError::Parse { key, message: e.inner().to_string() })
        })
    }

    /// Serialize to JSON, with every default filled in.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Spec always serializes")
    }

    /// Check every value and resolve file paths against `base_dir` (the scenario file's
    /// folder). Errors name the key and the value.
    pub fn validate(mut self, base_dir: &Path) -> Result<ValidSpec, SpecError> {
        let num_hosts = self.check_topology()?;
        self.check_switch()?;
        if let AdmissionSpec::Credence { oracle, .. } = &mut self.switch.admission {
            load_oracle("switch.admission.oracle", oracle, base_dir)?;
        }
        self.check_transport()?;
        if let Some(h) = &self.host.nic_buffer_bytes {
            if *h == 0 {
                return Err(SpecError::invalid("host.nic_buffer_bytes", h, "must be positive"));
            }
        }
        for (i, w) in self.workload.iter_mut().enumerate() {
            check_workload(i, w, num_hosts, base_dir, &self.transport)?;
        }
        if let Some(s) = self.run.stop_ms {
            if !(s.is_finite() && s > 0.0) {
                return Err(SpecError::invalid("run.stop_ms", s, "must be a positive number"));
            }
        }
        let si = self.run.sample_interval_us;
        if !(si.is_finite() && si >= 0.0) {
            return Err(SpecError::invalid(
                "run.sample_interval_us",
                si,
                "must be >= 0 (0 disables sampling)",
            ));
        }
        Ok(ValidSpec { spec: self })
    }

    fn check_topology(&self) -> Result<u32, SpecError> {
        match &self.topology {
            TopologySpec::LeafSpine(LeafSpine {
                leaves,
                hosts_per_leaf,
                spines,
                links_per_spine,
                host_rate_gbps,
                fabric_rate_gbps,
                ..
            }) => {
                positive("topology.leaves", *leaves)?;
                positive("topology.hosts_per_leaf", *hosts_per_leaf)?;
                positive("topology.links_per_spine", *links_per_spine)?;
                if *spines == 0 && *leaves > 1 {
                    return Err(SpecError::invalid(
                        "topology.spines",
                        spines,
                        "must be at least 1 when there is more than one leaf",
                    ));
                }
                rate("topology.host_rate_gbps", *host_rate_gbps)?;
                rate("topology.fabric_rate_gbps", *fabric_rate_gbps)?;
                let hosts = *leaves as u64 * *hosts_per_leaf as u64;
                if hosts > 1 << 20 {
                    return Err(SpecError::invalid(
                        "topology.hosts_per_leaf",
                        hosts_per_leaf,
                        "more than 2^20 hosts in total",
                    ));
                }
                Ok(hosts as u32)
            }
            TopologySpec::FatTree(FatTree { k, rate_gbps, .. }) => {
                if *k < 2 || k % 2 != 0 || *k > 128 {
                    return Err(SpecError::invalid(
                        "topology.k",
                        k,
                        "must be an even number between 2 and 128",
                    ));
                }
                rate("topology.rate_gbps", *rate_gbps)?;
                Ok(k * k * k / 4)
            }
        }
    }

    fn check_switch(&self) -> Result<(), SpecError> {
        let s = &self.switch;
        match (s.buffer_bytes, s.buffer_per_port_per_gbps) {
            (Some(_), Some(_)) => {
                return Err(SpecError::invalid(
                    "switch.buffer_per_port_per_gbps",
                    s.buffer_per_port_per_gbps.unwrap_or_default(),
                    "give either switch.buffer_bytes or switch.buffer_per_port_per_gbps, not both",
                ))
            }
            (Some(b), None) if b == 0 => {
                return Err(SpecError::invalid("switch.buffer_bytes", b, "must be positive"))
            }
            (None, Some(f)) if !(f.is_finite() && f > 0.0) => {
                return Err(SpecError::invalid(
                    "switch.buffer_per_port_per_gbps",
                    f,
                    "must be a positive number",
                ))
            }
            _ => {}
        }
        if let AdmissionSpec::Static { port_bytes: Some(0) } = s.admission {
            return Err(SpecError::invalid("switch.admission.port_bytes", 0, "must be positive"));
        }
        check_admission(&s.admission)?;
        if s.queues.is_empty() || s.queues.len() > MAX_QUEUES {
            return Err(SpecError::invalid(
                "switch.queues",
                format!("[{} entries]", s.queues.len()),
                format!("between 1 and {MAX_QUEUES} queues per port are supported"),
            ));
        }
        for (i, q) in s.queues.iter().enumerate() {
            if let Some(c) = q.cap_bytes {
                if c == 0 {
                    return Err(SpecError::invalid(
                        format!("switch.queues[{i}].cap_bytes"),
                        c,
                        "must be positive (omit the key for no cap)",
                    ));
                }
            }
            if !(q.dt_alpha.is_finite() && q.dt_alpha > 0.0) {
                return Err(SpecError::invalid(
                    format!("switch.queues[{i}].dt_alpha"),
                    q.dt_alpha,
                    "must be a positive number",
                ));
            }
        }
        Ok(())
    }

    fn check_transport(&self) -> Result<(), SpecError> {
        let t = &self.transport;
        if t.mss_bytes == 0 || t.mss_bytes > 65_000 {
            return Err(SpecError::invalid(
                "transport.mss_bytes",
                t.mss_bytes,
                "must be between 1 and 65000",
            ));
        }
        if t.header_bytes == 0 {
            return Err(SpecError::invalid("transport.header_bytes", 0, "must be positive"));
        }
        positive("transport.init_cwnd_pkts", t.init_cwnd_pkts)?;
        positive("transport.dupack_threshold", t.dupack_threshold)?;
        if t.min_rto_us == 0 {
            return Err(SpecError::invalid("transport.min_rto_us", 0, "must be positive"));
        }
        if t.init_rto_us == 0 {
            return Err(SpecError::invalid("transport.init_rto_us", 0, "must be positive"));
        }
        if t.max_rto_us < t.min_rto_us {
            return Err(SpecError::invalid(
                "transport.max_rto_us",
                t.max_rto_us,
                format!("must be >= transport.min_rto_us ({})", t.min_rto_us),
            ));
        }
        if !(t.dctcp_g > 0.0 && t.dctcp_g <= 1.0) {
            return Err(SpecError::invalid("transport.dctcp_g", t.dctcp_g, "must be in (0, 1]"));
        }
        if !(0.0..=1.0).contains(&t.dctcp_init_alpha) {
            return Err(SpecError::invalid(
                "transport.dctcp_init_alpha",
                t.dctcp_init_alpha,
                "must be in [0, 1]",
            ));
        }
        if let Some(r) = t.udp_rate_gbps {
            rate("transport.udp_rate_gbps", r)?;
        }
        if !(t.powertcp_gamma > 0.0 && t.powertcp_gamma <= 1.0) {
            return Err(SpecError::invalid("transport.powertcp_gamma", t.powertcp_gamma, "must be in (0, 1]"));
        }
        if t.powertcp_beta_bytes == Some(0) {
            return Err(SpecError::invalid("transport.powertcp_beta_bytes", 0, "must be positive"));
        }
        Ok(())
    }
}

/// Range checks of the admission knobs (files are loaded by [`load_oracle`]).
fn check_admission(a: &AdmissionSpec) -> Result<(), SpecError> {
    let rtt = |key: &str, v: Option<f64>| match v {
        Some(us) if !(us.is_finite() && us > 0.0) => {
            Err(SpecError::invalid(key, us, "must be a positive number of microseconds"))
        }
        _ => Ok(()),
    };
    match a {
        AdmissionSpec::Abm { alpha_first_rtt, base_rtt_us, congested_bytes } => {
            if !(alpha_first_rtt.is_finite() && *alpha_first_rtt > 0.0) {
                return Err(SpecError::invalid(
                    "switch.admission.alpha_first_rtt",
                    alpha_first_rtt,
                    "must be a positive number",
                ));
            }
            rtt("switch.admission.base_rtt_us", *base_rtt_us)?;
            if *congested_bytes == 0 {
                return Err(SpecError::invalid("switch.admission.congested_bytes", 0, "must be positive"));
            }
        }
        AdmissionSpec::Credence { oracle, base_rtt_us } => {
            rtt("switch.admission.base_rtt_us", *base_rtt_us)?;
            check_oracle("switch.admission.oracle", oracle)?;
        }
        _ => {}
    }
    Ok(())
}

fn check_oracle(key: &str, o: &OracleSpec) -> Result<(), SpecError> {
    if let OracleSpec::Flip { inner, p, .. } = o {
        if !(p.is_finite() && (0.0..=1.0).contains(p)) {
            return Err(SpecError::invalid(format!("{key}.p"), p, "must be a probability in [0, 1]"));
        }
        check_oracle(&format!("{key}.inner"), inner)?;
    }
    Ok(())
}

/// Resolve and parse the forest files of an oracle (the parsed forest is cached in the spec).
fn load_oracle(key: &str, o: &mut OracleSpec, base_dir: &Path) -> Result<(), SpecError> {
    match o {
        OracleSpec::Forest { path, model } => {
            let key = format!("{key}.path");
            *path = resolve_file(&key, path, base_dir, &["default"])?;
            let forest = if path == "default" {
                crate::credence::forest::Forest::from_json_str(BUILTIN_FOREST)
            } else {
                crate::credence::forest::Forest::from_file(Path::new(path.as_str()))
            }
            .map_err(|e| SpecError::invalid(&key, format!("{path:?}"), e.0))?;
            *model = LoadedForest(Some(std::sync::Arc::new(forest)));
        }
        OracleSpec::Flip { inner, .. } => load_oracle(&format!("{key}.inner"), inner, base_dir)?,
        OracleSpec::AlwaysAccept | OracleSpec::AlwaysDrop => {}
    }
    Ok(())
}

fn check_pair(key: &str, src: u32, dst: u32, num_hosts: u32) -> Result<(), SpecError> {
    for (k, h) in [("src", src), ("dst", dst)] {
        if h >= num_hosts {
            return Err(SpecError::invalid(
                format!("{key}.{k}"),
                h,
                format!("no such host (the topology has hosts 0..{num_hosts})"),
            ));
        }
    }
    if src == dst {
        return Err(SpecError::invalid(format!("{key}.dst"), dst, "must differ from src"));
    }
    Ok(())
}

fn non_negative_us(key: &str, us: f64) -> Result<(), SpecError> {
    if us.is_finite() && (0.0..=1e12).contains(&us) {
        Ok(())
    } else {
        Err(SpecError::invalid(key, us, "must be a number of microseconds >= 0"))
    }
}

fn positive(key: &str, v: u32) -> Result<(), SpecError> {
    if v == 0 {
        Err(SpecError::invalid(key, v, "must be at least 1"))
    } else {
        Ok(())
    }
}

fn rate(key: &str, gbps: f64) -> Result<(), SpecError> {
    if !(gbps.is_finite() && gbps > 0.0) {
        Err(SpecError::invalid(key, gbps, "a link rate must be a positive number of Gb/s"))
    } else if gbps > 100_000.0 {
        Err(SpecError::invalid(key, gbps, "rates above 100 Tb/s are not supported"))
    } else {
        Ok(())
    }
}

fn window(prefix: &str, start_ms: f64, duration_ms: f64) -> Result<(), SpecError> {
    if !(start_ms.is_finite() && start_ms >= 0.0) {
        return Err(SpecError::invalid(format!("{prefix}.start_ms"), start_ms, "must be >= 0"));
    }
    if !(duration_ms.is_finite() && duration_ms > 0.0) {
        return Err(SpecError::invalid(
            format!("{prefix}.duration_ms"),
            duration_ms,
            "must be a positive number of milliseconds",
        ));
    }
    Ok(())
}

/// Resolve `name` to a built-in CDF or an existing file; returns the canonical form stored in
/// the resolved spec (the built-in name, or an absolute path).
fn resolve_file(key: &str, name: &str, base_dir: &Path, builtins: &[&str]) -> Result<String, SpecError> {
    if builtins.contains(&name) {
        return Ok(name.to_string());
    }
    let p = PathBuf::from(name);
    let p = if p.is_absolute() { p } else { base_dir.join(p) };
    if !p.is_file() {
        let hint = if builtins.is_empty() {
            String::new()
        } else {
            format!(" (built-in names: {})", builtins.join(", "))
        };
        return Err(SpecError::invalid(
            key,
            format!("{name:?}"),
            format!("no such file: {}{hint}", p.display()),
        ));
    }
    Ok(p.canonicalize().unwrap_or(p).to_string_lossy().into_owned())
}

fn check_workload(
    i: usize,
    w: &mut WorkloadSpec,
    num_hosts: u32,
    base_dir: &Path,
    transport: &TransportSpec,
) -> Result<(), SpecError> {
    let prefix = format!("workload[{i}]");
    let _ = transport;
    match w {
        WorkloadSpec::Poisson(Poisson { cdf, load, start_ms, duration_ms, destinations, loaded, .. }) => {
            let key = format!("{prefix}.cdf");
            *cdf = resolve_file(&key, cdf, base_dir, crate::workload::BUILTIN_CDFS)?;
            let dist = crate::workload::load_cdf(cdf).map_err(|m| SpecError::invalid(&key, format!("{cdf:?}"), m))?;
            if !(dist.mean().is_finite() && dist.mean() >= 1.0) {
                return Err(SpecError::invalid(
                    &key,
                    format!("{cdf:?}"),
                    "the distribution's mean flow size is below one byte: give sizes in bytes",
                ));
            }
            *loaded = Loaded(Some(std::sync::Arc::new(dist)));
            if !(load.is_finite() && *load > 0.0 && *load <= 1.0) {
                return Err(SpecError::invalid(
                    format!("{prefix}.load"),
                    *load,
                    "must be in (0, 1]: it is a fraction of link capacity",
                ));
            }
            window(&prefix, *start_ms, *duration_ms)?;
            if num_hosts < 2 {
                return Err(SpecError::invalid(
                    format!("{prefix}.kind"),
                    "poisson",
                    "needs at least 2 hosts",
                ));
            }
            let _ = destinations;
        }
        WorkloadSpec::Incast(Incast {
            query_rate_per_host,
            fan_in,
            burst_bytes,
            burst_buffer_fraction,
            start_ms,
            duration_ms,
            ..
        }) => {
            if !(query_rate_per_host.is_finite() && *query_rate_per_host > 0.0) {
                return Err(SpecError::invalid(
                    format!("{prefix}.query_rate_per_host"),
                    *query_rate_per_host,
                    "must be a positive number of queries per second",
                ));
            }
            if *fan_in == 0 || *fan_in >= num_hosts {
                return Err(SpecError::invalid(
                    format!("{prefix}.fan_in"),
                    *fan_in,
                    format!("must be between 1 and the number of hosts - 1 ({})", num_hosts.saturating_sub(1)),
                ));
            }
            match (*burst_bytes, *burst_buffer_fraction) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(SpecError::invalid(
                        format!("{prefix}.burst_bytes"),
                        burst_bytes.map(|b| b.to_string()).unwrap_or_else(|| "<absent>".into()),
                        "give exactly one of burst_bytes and burst_buffer_fraction",
                    ))
                }
                (Some(b), None) if b < *fan_in as u64 => {
                    return Err(SpecError::invalid(
                        format!("{prefix}.burst_bytes"),
                        b,
                        "must be at least fan_in bytes (each sender sends burst / fan_in)",
                    ))
                }
                (None, Some(f)) if !(f.is_finite() && f > 0.0) => {
                    return Err(SpecError::invalid(
                        format!("{prefix}.burst_buffer_fraction"),
                        f,
                        "must be a positive fraction of the switch buffer",
                    ))
                }
                _ => {}
            }
            window(&prefix, *start_ms, *duration_ms)?;
        }
        WorkloadSpec::FlowList(FlowList { path, prio, loaded }) => {
            let key = format!("{prefix}.path");
            *path = resolve_file(&key, path, base_dir, &[])?;
            let text = std::fs::read_to_string(path.as_str())
                .map_err(|e| SpecError::invalid(&key, format!("{path:?}"), format!("cannot read: {e}")))?;
            let mut flows = Vec::new();
            crate::workload::parse_flow_list(&text, i as u16, *prio, num_hosts, &mut flows)
                .map_err(|m| SpecError::invalid(&key, format!("{path:?}"), m))?;
            *loaded = Loaded(Some(std::sync::Arc::new(flows)));
        }
        WorkloadSpec::ClosedLoop(c) => {
            for (j, [a, b]) in c.pairs.iter().enumerate() {
                check_pair(&format!("{prefix}.pairs[{j}]"), *a, *b, num_hosts)?;
            }
            if c.pairs.is_empty() {
                return Err(SpecError::invalid(format!("{prefix}.pairs"), "[]", "give at least one [src, dst] pair"));
            }
            if c.size_bytes == 0 {
                return Err(SpecError::invalid(format!("{prefix}.size_bytes"), 0, "must be at least 1"));
            }
            positive(&format!("{prefix}.count"), c.count)?;
            non_negative_us(&format!("{prefix}.think_us"), c.think_us)?;
        }
        WorkloadSpec::Barrier(b) => {
            if b.transfers.is_empty() {
                return Err(SpecError::invalid(format!("{prefix}.transfers"), "[]", "give at least one transfer"));
            }
            for (j, f) in b.transfers.iter().enumerate() {
                let key = |k: &str| format!("{prefix}.transfers[{j}].{k}");
                check_pair(&format!("{prefix}.transfers[{j}]"), f.src, f.dst, num_hosts)?;
                if f.size_bytes == 0 {
                    return Err(SpecError::invalid(key("size_bytes"), 0, "must be at least 1"));
                }
                if f.start_ns != 0 {
                    return Err(SpecError::invalid(
                        key("start_ns"),
                        f.start_ns,
                        "a barrier starts its transfers itself: leave start_ns out (use compute_us)",
                    ));
                }
            }
            positive(&format!("{prefix}.rounds"), b.rounds)?;
            non_negative_us(&format!("{prefix}.compute_us"), b.compute_us)?;
        }
        WorkloadSpec::Relay(r) => {
            if r.chain.len() < 2 {
                return Err(SpecError::invalid(
                    format!("{prefix}.chain"),
                    format!("{:?}", r.chain),
                    "a chain needs at least two hosts",
                ));
            }
            for (j, h) in r.chain.iter().enumerate() {
                if *h >= num_hosts {
                    return Err(SpecError::invalid(
                        format!("{prefix}.chain[{j}]"),
                        h,
                        format!("no such host (the topology has hosts 0..{num_hosts})"),
                    ));
                }
                if r.chain[..j].contains(h) {
                    return Err(SpecError::invalid(format!("{prefix}.chain[{j}]"), h, "a host appears twice in the chain"));
                }
            }
            if r.block_bytes == 0 {
                return Err(SpecError::invalid(format!("{prefix}.block_bytes"), 0, "must be at least 1"));
            }
            positive(&format!("{prefix}.blocks"), r.blocks)?;
        }
        WorkloadSpec::Flows(Flows { flows }) => {
            for (j, f) in flows.iter().enumerate() {
                let key = |k: &str| format!("{prefix}.flows[{j}].{k}");
                if f.src >= num_hosts {
                    return Err(SpecError::invalid(
                        key("src"),
                        f.src,
                        format!("no such host (the topology has hosts 0..{})", num_hosts),
                    ));
                }
                if f.dst >= num_hosts {
                    return Err(SpecError::invalid(
                        key("dst"),
                        f.dst,
                        format!("no such host (the topology has hosts 0..{})", num_hosts),
                    ));
                }
                if f.src == f.dst {
                    return Err(SpecError::invalid(key("dst"), f.dst, "must differ from src"));
                }
                if f.size_bytes == 0 {
                    return Err(SpecError::invalid(key("size_bytes"), 0, "must be at least 1"));
                }
            }
        }
    }
    Ok(())
}

/// serde buffers internally tagged enums, so an error inside `topology` or `workload[i]`
/// loses its key path. Re-deserialize that table into the variant named by its `kind` to
/// name the exact key.
fn refine_tagged_error(root: &serde_json::Value, key: &str) -> Option<SpecError> {
    fn try_de<T: serde::de::DeserializeOwned>(
        v: serde_json::Value,
        prefix: &str,
    ) -> Option<SpecError> {
        serde_path_to_error::deserialize::<_, T>(v).err().map(|e| {
            let inner = e.path().to_string();
            let key = if inner == "." { prefix.to_string() } else { format!("{prefix}.{inner}") };
            SpecError::Parse { key, message: e.inner().to_string() }
        })
    }
    let (section, sub) = if key == "topology" {
        ("topology", root.get("topology")?)
    } else {
        let i: usize = key.strip_prefix("workload[")?.strip_suffix(']')?.parse().ok()?;
        ("workload", root.get("workload")?.get(i)?)
    };
    let mut table = sub.as_object()?.clone();
    let kind = table.remove("kind")?;
    let kind = kind.as_str()?.to_string();
    let v = serde_json::Value::Object(table);
    match (section, kind.as_str()) {
        ("topology", "leaf_spine") => try_de::<LeafSpine>(v, key),
        ("topology", "fat_tree") => try_de::<FatTree>(v, key),
        ("workload", "poisson") => try_de::<Poisson>(v, key),
        ("workload", "incast") => try_de::<Incast>(v, key),
        ("workload", "flow_list") => try_de::<FlowList>(v, key),
        ("workload", "flows") => try_de::<Flows>(v, key),
        ("workload", "closed_loop") => try_de::<ClosedLoopSpec>(v, key),
        ("workload", "barrier") => try_de::<BarrierSpec>(v, key),
        ("workload", "relay") => try_de::<RelaySpec>(v, key),
        ("topology", other) => Some(SpecError::invalid(
            format!("{key}.kind"),
            format!("{other:?}"),
            "unknown topology kind; expected \"leaf_spine\" or \"fat_tree\"",
        )),
        (_, other) => Some(SpecError::invalid(
            format!("{key}.kind"),
            format!("{other:?}"),
            "unknown workload kind; expected \"poisson\", \"incast\", \"flow_list\", \"flows\", \"closed_loop\", \"barrier\" or \"relay\"",
        )),
    }
}

fn path_string(p: &serde_path_to_error::Path) -> String {
    let s = p.to_string();
    if s == "." || s.is_empty() {
        "<root>".into()
    } else {
        s
    }
}

/// A scenario that passed [`Spec::validate`]: every value is in range, every file exists.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidSpec {
    spec: Spec,
}

impl ValidSpec {
    /// Wrap a spec that passed validation before (a copy of a valid spec changed in ways
    /// that keep it valid, such as clearing its workload).
    pub(crate) fn from_validated(spec: Spec) -> ValidSpec {
        ValidSpec { spec }
    }

    /// The validated scenario.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }
    /// The resolved scenario as JSON (defaults filled, paths absolute).
    pub fn to_json(&self) -> String {
        self.spec.to_json()
    }
}

/// The built-in default scenario (what `slacknet run` uses without an argument): a 2-leaf,
/// 32-host leaf-spine at 10 Gb/s with DCTCP, web-search traffic at 40% load and incast.
pub fn default_scenario_toml() -> &'static str {
    include_str!("../data/default.toml")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> &'static Path {
        Path::new(".")
    }

    const MINIMAL: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 10
"#;

    #[test]
    fn minimal_spec_gets_defaults() {
        let s = Spec::from_toml_str(MINIMAL).unwrap();
        assert_eq!(s.seed, 1);
        assert_eq!(s.switch.queues.len(), 1);
        assert_eq!(s.transport.kind, TransportKind::Dctcp);
        s.validate(base()).unwrap();
    }

    #[test]
    fn unknown_key_is_named() {
        let text = format!("{MINIMAL}\n[transport]\nmss = 1000\n");
        let e = Spec::from_toml_str(&text).unwrap_err();
        assert_eq!(e.key(), "transport.mss", "{e}");
        assert!(e.to_string().contains("unknown field"), "{e}");
        let text = MINIMAL.replace("spines = 2", "spines = 2\nspine = 3");
        let e = Spec::from_toml_str(&text).unwrap_err();
        assert!(e.to_string().contains("spine"), "{e}");
    }

    #[test]
    fn errors_inside_tagged_tables_name_the_exact_key() {
        let e = Spec::from_toml_str(&MINIMAL.replace("leaves = 2", "leaves = \"x\"")).unwrap_err();
        assert_eq!(e.key(), "topology.leaves", "{e}");
        let e = Spec::from_toml_str(&MINIMAL.replace("leaves = 2", "leaves = 2\nleafs = 3")).unwrap_err();
        assert!(e.key().starts_with("topology"), "{e}");
        assert!(e.to_string().contains("leafs"), "{e}");
        let e = Spec::from_toml_str(&MINIMAL.replace("leaf_spine", "leaf_spin")).unwrap_err();
        assert_eq!(e.key(), "topology.kind", "{e}");
        let text = format!("{MINIMAL}\n[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = \"high\"\nduration_ms = 1\n");
        let e = Spec::from_toml_str(&text).unwrap_err();
        assert_eq!(e.key(), "workload[0].load", "{e}");
        let json = serde_json::to_string(&toml::from_str::<toml::Value>(&text).unwrap()).unwrap();
        let e = Spec::from_json_str(&json).unwrap_err();
        assert_eq!(e.key(), "workload[0].load", "{e}");
    }

    #[test]
    fn impossible_values_are_named() {
        let cases = [
            (MINIMAL.replace("host_rate_gbps = 10", "host_rate_gbps = 0"), "topology.host_rate_gbps"),
            (
                format!("{MINIMAL}\n[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 1.5\nduration_ms = 1\n"),
                "workload[0].load",
            ),
            (
                format!("{MINIMAL}\n[[workload]]\nkind = \"poisson\"\ncdf = \"nope.csv\"\nload = 0.5\nduration_ms = 1\n"),
                "workload[0].cdf",
            ),
            (format!("{MINIMAL}\n[switch]\nqueues = [{{}},{{}},{{}},{{}},{{}},{{}},{{}},{{}},{{}}]\n"), "switch.queues"),
        ];
        for (text, key) in cases {
            let e = Spec::from_toml_str(&text).unwrap().validate(base()).unwrap_err();
            assert_eq!(e.key(), key, "{e}");
        }
    }

    #[test]
    fn ns3_compat_profile_fills_defaults_beneath_the_user() {
        let text = format!("profile = \"ns3_compat\"\n{MINIMAL}\n[transport]\nmss_bytes = 1000\n");
        let s = Spec::from_toml_str(&text).unwrap();
        assert_eq!(s.profile, Profile::Ns3Compat);
        assert_eq!(s.transport.mss_bytes, 1000, "the user's key wins");
        assert!(s.transport.handshake);
        assert_eq!(s.transport.header_bytes, 54);
        assert_eq!(s.switch.admission, AdmissionSpec::Static { port_bytes: Some(350_000) });
        assert_eq!(s.host.ecn_threshold_bytes, Some(14_000));
        // The resolved JSON reproduces the same scenario.
        assert_eq!(Spec::from_json_str(&s.to_json()).unwrap(), s);
        // Another admission policy replaces the profile's static one whole.
        let lqd = format!("{text}\n[switch]\nadmission = {{ policy = \"lqd\" }}\n");
        assert_eq!(Spec::from_toml_str(&lqd).unwrap().switch.admission, AdmissionSpec::Lqd);
        let e = Spec::from_toml_str(&format!("profile = \"ns4\"\n{MINIMAL}")).unwrap_err();
        assert_eq!(e.key(), "profile", "{e}");
    }

    #[test]
    fn json_round_trip_is_identity() {
        let s = Spec::from_toml_str(default_scenario_toml()).unwrap();
        let j = s.to_json();
        assert_eq!(Spec::from_json_str(&j).unwrap(), s);
    }

    /// A scratch folder with a valid forest file `f.json` and a broken one `bad.json`.
    fn forest_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("slacknet-spec-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f.json"), crate::credence::forest::tests::TWO_TREES).unwrap();
        std::fs::write(dir.join("bad.json"), "{\"format\": \"slacknet-forest/1\"}").unwrap();
        dir
    }

    #[test]
    fn credence_and_baselines_parse_with_defaults_and_round_trip() {
        let with = |admission: &str| format!("{MINIMAL}\n[switch]\nadmission = {admission}\n");
        let s = Spec::from_toml_str(&with(r#"{ policy = "abm" }"#)).unwrap();
        assert_eq!(
            s.switch.admission,
            AdmissionSpec::Abm { alpha_first_rtt: 64.0, base_rtt_us: None, congested_bytes: 28_000 }
        );
        for policy in ["harmonic", "follow_lqd"] {
            Spec::from_toml_str(&with(&format!("{{ policy = \"{policy}\" }}"))).unwrap().validate(base()).unwrap();
        }
        let text = with(
            r#"{ policy = "credence", base_rtt_us = 8.0, oracle = { kind = "flip", p = 0.01, inner = { kind = "always_accept" } } }"#,
        );
        let s = Spec::from_toml_str(&text).unwrap();
        assert_eq!(Spec::from_json_str(&s.to_json()).unwrap(), s);
        s.validate(base()).unwrap();
    }

    #[test]
    fn credence_forest_is_resolved_and_loaded_by_validation() {
        let dir = forest_dir("load");
        let text = format!(
            "{MINIMAL}\n[switch]\nadmission = {{ policy = \"credence\", oracle = {{ kind = \"forest\", path = \"f.json\" }} }}\n"
        );
        let v = Spec::from_toml_str(&text).unwrap().validate(&dir).unwrap();
        let AdmissionSpec::Credence { oracle: OracleSpec::Forest { path, model }, .. } = &v.spec().switch.admission
        else {
            panic!("{:?}", v.spec().switch.admission)
        };
        assert!(Path::new(path).is_absolute() && path.ends_with("f.json"), "{path}");
        assert_eq!(model.0.as_ref().map(|f| f.num_trees()), Some(2));
        // The resolved JSON names the file, not its contents, and reads back equal.
        let j = v.spec().to_json();
        assert!(!j.contains("model"), "{j}");
        assert_eq!(&Spec::from_json_str(&j).unwrap(), v.spec());
    }

    #[test]
    fn admission_errors_name_the_key() {
        let dir = forest_dir("errors");
        let with = |admission: &str| format!("{MINIMAL}\n[switch]\nadmission = {admission}\n");
        let cases = [
            (with(r#"{ policy = "abm", congested_bytes = 0 }"#), "switch.admission.congested_bytes"),
            (with(r#"{ policy = "abm", alpha_first_rtt = -1.0 }"#), "switch.admission.alpha_first_rtt"),
            (with(r#"{ policy = "abm", base_rtt_us = 0.0 }"#), "switch.admission.base_rtt_us"),
            (
                with(r#"{ policy = "credence", base_rtt_us = -3.0, oracle = { kind = "always_drop" } }"#),
                "switch.admission.base_rtt_us",
            ),
            (
                with(r#"{ policy = "credence", oracle = { kind = "flip", p = 1.5, inner = { kind = "always_drop" } } }"#),
                "switch.admission.oracle.p",
            ),
            (
                with(
                    r#"{ policy = "credence", oracle = { kind = "flip", p = 0.5, inner = { kind = "flip", p = -0.1, inner = { kind = "always_drop" } } } }"#,
                ),
                "switch.admission.oracle.inner.p",
            ),
            (
                with(r#"{ policy = "credence", oracle = { kind = "forest", path = "missing.json" } }"#),
                "switch.admission.oracle.path",
            ),
            (
                with(
                    r#"{ policy = "credence", oracle = { kind = "flip", p = 0.5, inner = { kind = "forest", path = "bad.json" } } }"#,
                ),
                "switch.admission.oracle.inner.path",
            ),
        ];
        for (text, key) in cases {
            let e = Spec::from_toml_str(&text).unwrap().validate(&dir).unwrap_err();
            assert_eq!(e.key(), key, "{e}");
        }
        let e = Spec::from_toml_str(&with(r#"{ policy = "credence", oracle = { kind = "forest", path = "bad.json" } }"#))
            .unwrap()
            .validate(&dir)
            .unwrap_err();
        assert!(e.to_string().contains("not a forest file"), "{e}");
    }
}
