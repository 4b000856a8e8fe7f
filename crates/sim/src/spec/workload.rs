//! `[[workload]]`: the scenario's applications, open-loop generators (Poisson, incast, flow
//! lists, inline flows) and reactive ones (closed loop, barrier, relay).

#[allow(unused_imports)]
use super::*;

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
    /// NetApprox's jobs (§7.1): every sender runs jobs of `messages` messages one after
    /// another, with message sizes and gaps from a trace, sent by `scheme` (`app::approx_jobs`).
    ApproxJobs(ApproxJobsSpec),
    /// Data-parallel training (the bounded-loss ML paper, §3.1): `iterations` of a compute
    /// phase and the synchronisation of `model_bytes` among `workers`, by a parameter server or
    /// a ring all-reduce, with a barrier (`app::training`).
    Training(TrainingSpec),
}

/// Keys of `kind = "training"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingSpec {
    /// `ps` (parameter server) or `ring` (ring all-reduce).
    pub pattern: crate::app::SyncPattern,
    /// The workers' hosts.
    pub workers: Vec<u32>,
    /// `ps`: the parameter server's host (not a worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<u32>,
    /// Gradient bytes each worker synchronises per iteration (the model's size).
    pub model_bytes: u64,
    /// Iterations.
    pub iterations: u32,
    /// Compute phase of every iteration.
    #[serde(default)]
    pub compute_us: f64,
    /// The compute time per iteration that the job time counts (`train_time_us`, the
    /// bounded-loss ML paper's eq. (1): iterations x (compute + network time)) when it is not
    /// the simulated `compute_us`: a model's compute can be many times its synchronisation,
    /// and simulating it only adds background traffic between iterations, so a study may
    /// simulate a short phase and count the model's own compute here. Absent: `compute_us`.
    /// The simulation does not read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_compute_us: Option<f64>,
    /// When the first iteration starts.
    #[serde(default)]
    pub start_us: f64,
    /// Priority class of the transfers.
    #[serde(default)]
    pub prio: u8,
    /// The fraction p of every gradient the model needs (`1 - x1`, the bounded-loss ML
    /// paper's §2.2), in (0, 1]: a bounded-loss transport (`kind = "mlt"`) carrying this
    /// entry's transfers completes each at p in place of its own `complete_fraction`; a
    /// reliable transport delivers everything, so it does not change it. Absent: the
    /// transport's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete_fraction: Option<f64>,
    /// The transport of this entry's transfers (a `[transport]` table of its own). Absent:
    /// the scenario's `[transport]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportSpec>,
}

/// Keys of `kind = "approx_jobs"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproxJobsSpec {
    /// Message sizes and gaps: `fbkv` (Facebook key-value) or `fbhd` (Facebook Hadoop).
    pub trace: crate::workload::approx::ApproxTrace,
    /// How messages travel: `atp`, `early_send`, `sample_send` or `udp`.
    pub scheme: crate::app::ApproxScheme,
    /// Minimal message sampling rate of every job, in [0, 1] (one group); or `groups`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msr: Option<f64>,
    /// Every job's groups (§3.3.2: each message carries a group id, each group has its own
    /// MSR), 1 to 8, each a `share` of the job's messages (the shares sum to 1; counts by
    /// largest remainder, messages interleaved in proportion) with its `msr`. In place of `msr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<ApproxGroupSpec>>,
    /// Messages per job (N).
    pub messages: u64,
    /// Jobs each sender runs, one after another.
    #[serde(default = "default_one")]
    pub jobs_per_host: u32,
    /// Each sender's offered load while a job runs, as a fraction of its host link: the
    /// trace's gaps are scaled (their shape kept) so that the mean message size over the mean
    /// gap is `load x` the line rate. Absent: the trace's own gaps (FBKV's are microseconds
    /// apart for messages of a few hundred bytes: about 0.15 Gb/s per job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<f64>,
    /// Sending hosts; absent: every host (but `receiver`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub senders: Option<Vec<u32>>,
    /// All-to-one: the host every job sends to. Absent: all-to-all, each job to a host drawn
    /// uniformly among the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<u32>,
    /// When the first jobs start.
    #[serde(default)]
    pub start_us: f64,
    /// Pause between a sender's jobs.
    #[serde(default)]
    pub think_us: f64,
    /// Priority class of the messages' transfers for the schemes other than ATP (which
    /// classes its packets itself).
    #[serde(default)]
    pub prio: u8,
    /// `udp`: how long after its last message a job waits for stragglers.
    #[serde(default = "default_udp_timeout_us")]
    pub udp_timeout_us: f64,
    /// The transport of this entry's transfers (a `[transport]` table of its own). Absent:
    /// the scenario's `[transport]`. `atp` needs an ATP transport, `udp` a UDP one, the
    /// others a TCP kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportSpec>,
}

/// One group of an `approx_jobs` job.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproxGroupSpec {
    /// Its fraction of the job's messages, in (0, 1].
    pub share: f64,
    /// Its minimal message sampling rate, in [0, 1] (1: every message of the group).
    pub msr: f64,
}

impl ApproxJobsSpec {
    /// The groups as (share, MSR): `groups`, or one group of `msr` (validated: exactly one is
    /// given).
    pub fn group_list(&self) -> Vec<(f64, f64)> {
        match &self.groups {
            Some(g) => g.iter().map(|g| (g.share, g.msr)).collect(),
            None => vec![(1.0, self.msr.unwrap_or(1.0))],
        }
    }
}

fn default_one() -> u32 {
    1
}
fn default_udp_timeout_us() -> f64 {
    1000.0
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
    /// The transport of this entry's transfers (a `[transport]` table of its own, without the
    /// profile's defaults). Absent: the scenario's `[transport]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportSpec>,
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
    /// The transport of this entry's transfers (a `[transport]` table of its own, without the
    /// profile's defaults). Absent: the scenario's `[transport]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportSpec>,
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
    /// The transport of this entry's transfers (a `[transport]` table of its own, without the
    /// profile's defaults). Absent: the scenario's `[transport]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportSpec>,
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
    /// Priority class of these flows (before the first change of `prio_schedule`, if any).
    #[serde(default)]
    pub prio: u8,
    /// Priority class changes over time, `[[t_us, prio], ...]` (NetApprox Figure 10 moves
    /// background traffic between queues this way): a transfer this entry starts at or after
    /// `t_us` (simulated time since the run's start, not since `start_ms`) gets the class of the
    /// latest such entry; before the first entry, `prio`. Times are finite, non-negative and
    /// strictly increasing. A transfer keeps the class it started with: a change moves only the
    /// transfers started after it, never those in flight. Absent: `prio` throughout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio_schedule: Option<Vec<(f64, u8)>>,
    /// The distribution, read and parsed by [`Spec::validate`].
    #[serde(skip)]
    pub loaded: Loaded<crate::workload::Cdf>,
    /// The transport of this entry's transfers (a `[transport]` table of its own, without the
    /// profile's defaults). Absent: the scenario's `[transport]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportSpec>,
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
    /// Priority class of these flows (before the first change of `prio_schedule`, if any).
    #[serde(default)]
    pub prio: u8,
    /// Priority class changes over time, `[[t_us, prio], ...]` (NetApprox Figure 10 moves
    /// background traffic between queues this way): a response this entry starts at or after
    /// `t_us` (simulated time since the run's start, not since `start_ms`) gets the class of the
    /// latest such entry; before the first entry, `prio`. Times are finite, non-negative and
    /// strictly increasing. A transfer keeps the class it started with: a change moves only the
    /// transfers started after it, never those in flight. Absent: `prio` throughout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio_schedule: Option<Vec<(f64, u8)>>,
    /// The transport of this entry's transfers (a `[transport]` table of its own, without the
    /// profile's defaults). Absent: the scenario's `[transport]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportSpec>,
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
    /// The transport of this entry's transfers (a `[transport]` table of its own, without the
    /// profile's defaults). Absent: the scenario's `[transport]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportSpec>,
}

/// Keys of `kind = "flows"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flows {
    /// The flows.
    pub flows: Vec<FlowEntry>,
    /// The transport of this entry's transfers (a `[transport]` table of its own, without the
    /// profile's defaults). Absent: the scenario's `[transport]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportSpec>,
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
    /// Period of switch buffer occupancy samples (0 = no sampling; else at least 1 ns,
    /// `limits::MIN_SAMPLE_INTERVAL_US`).
    #[serde(default = "default_sample_us")]
    pub sample_interval_us: f64,
    /// Where a TCP flow's completion time is measured (UDP flows always end at the receiver).
    #[serde(default)]
    pub fct_at: FctAt,
    /// `[run.timeseries]`: opt-in time series of queue lengths and transfer state. Absent:
    /// off, and the run pays nothing for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeseries: Option<TimeseriesSpec>,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            stop_ms: None,
            sample_interval_us: default_sample_us(),
            fct_at: FctAt::default(),
            timeseries: None,
        }
    }
}

/// Keys of `[run.timeseries]`: sample every `interval_us` the length of every non-empty queue
/// (switch ports and host NICs) and the state of every transfer in flight (see
/// `world::observe` for the tables and their cost).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeseriesSpec {
    /// Sampling period in microseconds (required; at least 1 ns, `limits::MIN_SAMPLE_INTERVAL_US`).
    pub interval_us: f64,
    /// Sample queue lengths (the queue series).
    #[serde(default = "yes")]
    pub queues: bool,
    /// Sample the transfers in flight (the transfer series).
    #[serde(default = "yes")]
    pub transfers: bool,
    /// Include the host NICs' queues in the queue series.
    #[serde(default = "yes")]
    pub nics: bool,
    /// Only these switches' ports in the queue series (switch indices, as in the switches
    /// table). Absent: every switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switches: Option<Vec<u32>>,
    /// Only the first this many transfers of the run (record rows `0..max_transfers`) in the
    /// transfer series. Absent: every transfer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_transfers: Option<u64>,
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

impl WorkloadSpec {
    /// The transport this entry's transfers run on when it is not the scenario's `run`
    /// transport unchanged: its own, or (a training entry with `complete_fraction` over a
    /// bounded-loss transport) the transport it names with the entry's p. `None`: `run`.
    pub fn run_transport(&self, run: &TransportSpec) -> Option<TransportSpec> {
        if let WorkloadSpec::Training(TrainingSpec { complete_fraction: Some(p), .. }) = self {
            if let TransportSpec::Mlt(m) = self.transport().unwrap_or(run) {
                return Some(TransportSpec::Mlt(crate::spec::MltSpec { complete_fraction: *p, ..m.clone() }));
            }
        }
        self.transport().cloned()
    }

    /// This entry's own transport, if it has one.
    pub fn transport(&self) -> Option<&TransportSpec> {
        match self {
            WorkloadSpec::Poisson(w) => w.transport.as_ref(),
            WorkloadSpec::Incast(w) => w.transport.as_ref(),
            WorkloadSpec::FlowList(w) => w.transport.as_ref(),
            WorkloadSpec::Flows(w) => w.transport.as_ref(),
            WorkloadSpec::ClosedLoop(w) => w.transport.as_ref(),
            WorkloadSpec::Barrier(w) => w.transport.as_ref(),
            WorkloadSpec::Relay(w) => w.transport.as_ref(),
            WorkloadSpec::ApproxJobs(w) => w.transport.as_ref(),
            WorkloadSpec::Training(w) => w.transport.as_ref(),
        }
    }
}
