//! What a run reports: one [`FctRecord`] per flow, switch counters, per-queue maxima, buffer
//! occupancy samples, the optional time series of queues and transfers ([`QueueSample`],
//! [`TransferSample`]) and a [`Summary`].
//!
//! Pipeline position: `world -> metrics -> (py | bin)`. The drivers turn these into Parquet
//! and JSON; nothing here does I/O.

use serde::Serialize;

/// One flow's outcome.
///
/// INVARIANT: `finished` implies `fct_ps >= ideal_fct_ps` (no flow beats the closed form).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FctRecord {
    /// Flow id: the id from the flow list, or the index in start order for generated flows.
    pub id: u64,
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Bytes to transfer.
    pub size_bytes: u64,
    /// Start time, picoseconds.
    pub start_ps: u64,
    /// Flow completion time, picoseconds: from start until the sender has the ACK of the last
    /// byte (TCP) or the receiver has the last byte (UDP). -1 if unfinished.
    pub fct_ps: i64,
    /// FCT of this flow alone in the network at line rate (see `ideal`), picoseconds.
    pub ideal_fct_ps: u64,
    /// `fct / ideal`; NaN if unfinished.
    pub slowdown: f64,
    /// Whether the flow completed before the run ended.
    pub finished: bool,
    /// Whether the flow belongs to an incast query.
    pub incast: bool,
    /// Priority class.
    pub prio: u8,
    /// Index of the application (workload entry) that started the flow.
    pub workload: u32,
    /// The flow's transport (`dctcp`, `newreno`, `power_tcp`, `udp`).
    pub transport: &'static str,
    /// Retransmission timeouts the sender suffered.
    pub num_rtos: u64,
    /// Segments the sender retransmitted.
    pub retx_segments: u64,
    /// Tail-loss probes the sender sent (TCP with `rack_tlp`; RFC 8985 §7; 0 otherwise). A
    /// probe that resends a segment counts in `retx_segments` too.
    pub tail_probes: u64,
    /// Distinct payload bytes the receiver got.
    pub bytes_delivered: u64,
    /// How the flow ended: `complete`, `enough` (a loss-tolerant transport stopped waiting),
    /// `given_up`, `cancelled`, or `unfinished` when the run ended first.
    pub outcome: &'static str,
}

/// One application-level unit (a job, an iteration, a round, a coflow, a relayed block): the
/// second results table, beside the per-flow records.
///
/// INVARIANT: `end_ps >= start_ps`; `ideal_ps`, where defined, is a lower bound the unit could
/// reach alone in the network, so `slowdown >= 1` up to the application's own definition.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AppRecord {
    /// Application index (its workload entry).
    pub app: u32,
    /// What the unit is (`round`, `iteration`, `block`, ...).
    pub kind: &'static str,
    /// Index of the unit within its application.
    pub unit: u64,
    /// Start, picoseconds.
    pub start_ps: u64,
    /// Completion, picoseconds.
    pub end_ps: u64,
    /// Completion time (`end - start`), picoseconds.
    pub duration_ps: u64,
    /// Contention-free completion time, picoseconds; -1 where the application defines none.
    pub ideal_ps: i64,
    /// `duration / ideal`; NaN without an ideal.
    pub slowdown: f64,
    /// Transfers the unit was made of.
    pub num_transfers: u32,
    /// Bytes they carried.
    pub bytes: u64,
    /// Sending host; -1 where the unit has none.
    pub src: i64,
    /// Receiving host; -1 where the unit has none.
    pub dst: i64,
    /// Payload bytes its transfers sent, retransmissions included; -1 where not known.
    pub bytes_sent: i64,
    /// Packets its transfers sent, retransmissions included; -1 where not known.
    pub packets_sent: i64,
    /// Of which retransmissions; -1 where not known.
    pub packets_retx: i64,
    /// A NetApprox job's messages (N); 0 for other units.
    pub messages: u64,
    /// Messages it needed (`ceil(MSR x N)` over its groups); 0 for other units.
    pub messages_required: u64,
    /// Messages delivered; 0 for other units.
    pub messages_delivered: u64,
    /// A NetApprox job: the measured message loss rate of its worst group, `1 - delivered /
    /// N`. A training iteration: the largest fraction of any of its transfers' bytes that did
    /// not arrive (a bounded-loss transport's shortfall, at most `1 - p`). NaN for other units.
    pub loss_rate: f64,
    /// That group's allowance `1 - MSR` (rounded to whole messages): `loss_rate` must not
    /// exceed it for a reliable scheme; NaN for other units.
    pub loss_allowance: f64,
    /// 1 if the job's transport gave up before it had what it needed, else 0 (and for other
    /// units).
    pub gave_up: u8,
}

/// One group of one NetApprox job (a unit of the `apps` table with `messages > 0`): the
/// `groups` table. A job reports its first [`MAX_JOB_GROUPS`](crate::app::MAX_JOB_GROUPS)
/// groups.
///
/// INVARIANT: for every scheme but UDP, `delivered >= required`, and so
/// `loss_rate <= loss_allowance`, unless the job gave up.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GroupRecord {
    /// The application (workload entry).
    pub app: u32,
    /// The job's unit index (its row in `apps` has the same `app` and `unit`).
    pub unit: u64,
    /// The group id.
    pub group: u32,
    /// Its MSR.
    pub msr: f64,
    /// Its messages (N).
    pub messages: u64,
    /// Messages it needed, `ceil(MSR x N)`.
    pub messages_required: u64,
    /// Messages delivered.
    pub messages_delivered: u64,
    /// `1 - delivered / N`.
    pub loss_rate: f64,
    /// `1 - required / N`: the bound `loss_rate` stays within.
    pub loss_allowance: f64,
}

/// The role of a switch in its topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Leaf / top-of-rack / edge switch (hosts attach here).
    Leaf,
    /// Spine (leaf-spine) or aggregation (fat-tree) switch.
    Spine,
    /// Fat-tree core switch.
    Core,
}

impl Tier {
    /// Name used in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Leaf => "leaf",
            Tier::Spine => "spine",
            Tier::Core => "core",
        }
    }
}

/// Counters of one switch.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SwitchStats {
    /// Switch index (`0..num_switches`).
    pub switch: u32,
    /// Node id of the switch.
    pub node: u32,
    /// Tier name.
    pub tier: &'static str,
    /// Shared buffer size, bytes.
    pub buffer_bytes: u64,
    /// Packets that arrived at the switch (enqueue attempts).
    pub arrivals: u64,
    /// Packets dropped by the admission policy (shared buffer).
    pub drops_admission: u64,
    /// Packets dropped because their queue hit its static cap.
    pub drops_queue_cap: u64,
    /// Credits dropped because their port's credit queue was full (ExpressPass §3.1).
    pub drops_credit: u64,
    /// Unscheduled packets dropped above the selective-dropping threshold (Aeolus §3.2).
    pub drops_selective: u64,
    /// Packets pushed out of a queue after they were accepted (push-out policies).
    pub drops_pushout: u64,
    /// Bytes pushed out.
    pub pushed_out_bytes: u64,
    /// Bytes dropped (all causes).
    pub dropped_bytes: u64,
    /// Packets marked CE at enqueue (an ECN-capable packet above the threshold, counted again
    /// at each hop that marks it, as ns-3 and Linux count marks).
    pub ecn_marks: u64,
    /// Bytes that entered the buffer.
    ///
    /// CORRECTNESS: `enqueued = dequeued + pushed_out + final_occupancy`.
    pub enqueued_bytes: u64,
    /// Bytes that left the buffer onto a wire.
    pub dequeued_bytes: u64,
    /// Largest shared-buffer occupancy seen (exact, at every enqueue), bytes.
    pub max_occupancy_bytes: u64,
    /// Periodic occupancy samples taken of this switch: 0 with sampling off or a run that
    /// ended before its first sample, when the percentiles below are 0 for want of data.
    pub occ_samples: u64,
    /// Occupancy percentiles over the periodic samples, bytes (0 without samples: see
    /// `occ_samples`).
    pub occ_p50_bytes: u64,
    /// 90th percentile of sampled occupancy.
    pub occ_p90_bytes: u64,
    /// 99th percentile of sampled occupancy.
    pub occ_p99_bytes: u64,
    /// 99.99th percentile of sampled occupancy.
    pub occ_p9999_bytes: u64,
    /// Bytes in the buffer when the run ended.
    pub final_occupancy_bytes: u64,
    /// Credence: arrivals accepted by the safeguard (longest queue below B/N).
    pub credence_safeguard_accepts: u64,
    /// Credence: arrivals dropped on the oracle's word.
    pub credence_oracle_drops: u64,
    /// Credence: arrivals accepted on the oracle's word.
    pub credence_oracle_accepts: u64,
    /// Credence: arrivals dropped by the LQD-threshold check.
    pub credence_threshold_drops: u64,
}

/// The largest backlog one switch queue reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct QueueMax {
    /// Switch index.
    pub switch: u32,
    /// Egress link id of the port.
    pub link: u32,
    /// Queue index within the port (priority class).
    pub queue: u8,
    /// Largest backlog, bytes.
    pub max_bytes: u64,
}

/// Counters of one link (an egress port and its wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LinkStats {
    /// Link id.
    pub link: u32,
    /// Transmitting node.
    pub src: u32,
    /// Receiving node.
    pub dst: u32,
    /// Line rate, bits per second.
    pub rate_bps: u64,
    /// Packets fully serialized onto the wire.
    pub tx_packets: u64,
    /// Bytes fully serialized onto the wire.
    pub tx_bytes: u64,
}

/// One buffer occupancy sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OccupancySample {
    /// Sample time, picoseconds.
    pub time_ps: u64,
    /// Switch index.
    pub switch: u32,
    /// Shared-buffer occupancy, bytes.
    pub bytes: u64,
}

/// One queue of one egress port at one sample of the time series (`[run.timeseries]`): only
/// queues holding at least one byte get a row (sparse; see `world::observe`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct QueueSample {
    /// Sample time, picoseconds.
    pub time_ps: u64,
    /// Egress link id of the port.
    pub link: u32,
    /// The transmitting node (a switch's node id, or the host of a NIC).
    pub node: u32,
    /// Switch index, or -1 for a host NIC.
    pub switch: i32,
    /// Queue index within the port (priority class).
    pub queue: u8,
    /// Bytes waiting in the queue (the packet being serialized has left it).
    pub bytes: u64,
}

/// Names of the transport-specific columns of the transfer series, in the order of
/// [`TransferSample::extra`]. A transport with state worth watching appends its column here and
/// fills it in `world::observe` (`transport_extras`); the drivers, the Python encoding and the
/// files pick it up unchanged. A transport that does not report a column leaves it NaN.
pub const TRANSFER_EXTRA_COLUMNS: [&str; 4] = [
    // DCTCP's congestion estimate alpha in [0, 1] (DCTCP eq. 1).
    "alpha",
    // ATP (group 0 of the job): the target loss rate of eq. (1) for the current epoch, ...
    "tlr",
    // ... the loss rate measured at the last epoch end (footnote 3), ...
    "loss",
    // ... and the switch class its data is sent in (§5.2).
    "class",
];

/// One transfer in flight at one sample of the time series (`[run.timeseries]`): from its
/// start until its completion time is measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TransferSample {
    /// Sample time, picoseconds.
    pub time_ps: u64,
    /// The transfer's row in the records (its index in start order).
    pub flow: u32,
    /// Congestion window, bytes (0 for a transport without one, such as UDP).
    pub cwnd_bytes: u64,
    /// Sending rate, bits per second: the rate the sender spaces packets at where it paces
    /// (`is_paced`), else an estimate: `cwnd / srtt` for a window transport (NaN before the
    /// first RTT sample), the NIC's line rate for an unpaced UDP source. Never above the
    /// transfer's rate cap, if it has one.
    pub rate_bps: f64,
    /// Whether `rate_bps` is a rate the sender enforces (pacing, a rate cap) rather than an
    /// estimate.
    pub is_paced: bool,
    /// Smoothed RTT, picoseconds (0 before the first sample, and for UDP).
    pub srtt_ps: u64,
    /// Payload bytes the sender has transmitted, retransmissions included.
    pub sent_bytes: u64,
    /// Distinct payload bytes the receiver holds.
    pub delivered_bytes: u64,
    /// Transport-specific values named by [`TRANSFER_EXTRA_COLUMNS`] (NaN where not reported).
    pub extra: [f64; TRANSFER_EXTRA_COLUMNS.len()],
}

/// Run totals. Byte counters are wire bytes (payload + headers).
///
/// CORRECTNESS: `bytes_sent == bytes_delivered + bytes_dropped + bytes_in_flight` (checked by
/// the conservation tests).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Flows in the run.
    pub num_flows: u64,
    /// Flows that completed.
    pub finished_flows: u64,
    /// Flows whose sender gave up after `max_retries` timeouts without progress (outcome
    /// `given_up`); the others that did not finish were cut off by `stop_ms` or lost
    /// unreliable data (outcome `unfinished`).
    pub given_up_flows: u64,
    /// Flows their application cancelled (outcome `cancelled`: an early-send job that had
    /// what it needed).
    pub cancelled_flows: u64,
    /// Events processed.
    pub events: u64,
    /// Packet transmissions over links (one packet crossing one link = one hop).
    pub packet_hops: u64,
    /// Simulated time at the end of the run, picoseconds.
    pub sim_end_ps: u64,
    /// Bytes hosts put on their NICs.
    pub bytes_sent: u64,
    /// Bytes that reached their destination host.
    pub bytes_delivered: u64,
    /// ExpressPass/Aeolus credits that reached their sender's host (0 for other transports).
    pub credits_delivered: u64,
    /// Data packets senders sent for a credit; `credits_delivered - credits_answered` credits
    /// were wasted (found nothing to send, or a finished sender).
    pub credits_answered: u64,
    /// Bytes dropped anywhere (switches and NICs).
    pub bytes_dropped: u64,
    /// Bytes still queued or on a wire when the run ended.
    pub bytes_in_flight: u64,
    /// Packets dropped at switches.
    pub switch_drops: u64,
    /// Packets dropped at host NICs.
    pub nic_drops: u64,
    /// CE marks at switches and NICs (a packet marked at two hops counts twice).
    pub ecn_marks: u64,
    /// Retransmission timeouts over all flows.
    pub num_rtos: u64,
    /// Whether the run stopped at `run.stop_ms` (or at the end of the simulated clock,
    /// `world::CLOCK_END`) with work left.
    pub stopped_early: bool,
    /// Whether the time series stopped early because a table was full:
    /// [`MAX_QUEUE_SAMPLE_ROWS`](crate::spec::limits::MAX_QUEUE_SAMPLE_ROWS) queue rows or
    /// [`MAX_TRANSFER_SAMPLE_ROWS`](crate::spec::limits::MAX_TRANSFER_SAMPLE_ROWS) transfer rows
    /// (always false without `[run.timeseries]`). Both tables end at the last whole sample.
    pub timeseries_truncated: bool,
    /// Whether occupancy sampling (`run.sample_interval_us`) stopped early because it reached
    /// [`MAX_OCCUPANCY_ROWS`](crate::spec::limits::MAX_OCCUPANCY_ROWS) samples, which a run
    /// that outlasts validation's estimate (no horizon, or a long drain after the arrivals)
    /// can.
    pub occupancy_truncated: bool,
}

/// Everything a run produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Output {
    /// One record per flow, in flow-id order of the run (start order), except those taken
    /// out during the run (`Simulation::take_records`).
    pub records: Vec<FctRecord>,
    /// One record per completed application-level unit, in completion order.
    pub apps: Vec<AppRecord>,
    /// One record per group of every NetApprox job in `apps`, in the same order.
    pub groups: Vec<GroupRecord>,
    /// One entry per switch.
    pub switches: Vec<SwitchStats>,
    /// Per-queue maxima of every queue that held at least one packet.
    pub queues: Vec<QueueMax>,
    /// Periodic buffer occupancy samples.
    pub occupancy: Vec<OccupancySample>,
    /// One entry per link.
    pub links: Vec<LinkStats>,
    /// Queue lengths over time, in sample order and link order within a sample (empty
    /// without `[run.timeseries]`).
    pub queue_series: Vec<QueueSample>,
    /// Transfers in flight over time, in sample order and start order within a sample
    /// (empty without `[run.timeseries]`).
    pub transfer_series: Vec<TransferSample>,
    /// Totals.
    pub summary: Summary,
}

/// Nearest-rank percentile of a sorted slice (`q` in [0, 1]); 0 for an empty slice.
pub fn percentile_sorted(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile_sorted(&v, 0.5), 50);
        assert_eq!(percentile_sorted(&v, 0.99), 99);
        assert_eq!(percentile_sorted(&v, 1.0), 100);
        assert_eq!(percentile_sorted(&v, 0.0), 1);
        assert_eq!(percentile_sorted(&[], 0.5), 0);
    }
}
