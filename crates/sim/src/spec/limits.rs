//! The bounds every time, size, rate and count of a scenario keeps, so that no run computes a
//! sum that overflows its 64-bit picosecond clock or an integer size, and no run allocates more
//! than a machine holds. [`Spec::validate`] checks each of them, with an error naming the key,
//! the value and the allowed range; README "Validation and arithmetic" lists them.
//!
//! The rule for time. The clock counts `u64` picoseconds: 2^64 ps is about 1.8e7 s (213
//! days). Every time point and every duration a scenario gives (start times, window ends, stop
//! time, timeouts, pauses, sampling periods) is at most [`MAX_TIME_PS`] = 1e6 s (about 11.6
//! days), one eighteenth of the clock, and every propagation delay at most [`MAX_DELAY_NS`] (1
//! s). A transfer's size is bounded so that its packets serialize within [`MAX_TIME_PS`] on the
//! slowest link ([`MAX_TRANSFER_BYTES`] and [`MIN_RATE_GBPS`]), so its ideal FCT, and its start
//! plus its ideal FCT, stay far inside the clock. What no bound on the inputs can cover (a run
//! that queues transfers behind each other for months, or retransmits into a black hole) is
//! caught by the engine: time arithmetic saturates (`units`) and a run ends at the end of the
//! clock (`world::CLOCK_END`), counted as stopped early, instead of wrapping.
//!
//! The rule for memory. A run's size is estimated from the scenario before anything is built:
//! the network (hosts, switches, ports, routing tables) against [`MAX_NETWORK_BYTES`], the
//! transfers every workload entry would start against [`MAX_FLOWS`], and the occupancy samples
//! against [`MAX_OCCUPANCY_ROWS`] and the time series against [`MAX_TIMESERIES_ROWS`]. The
//! samples are also capped at run time, where an estimate falls short (a run that drains long
//! past its arrivals) or is only an upper bound (the sparse queue table): no series holds more
//! than [`MAX_SERIES_BYTES`].

use units::PS_PER_S;

/// The latest time point and the longest duration a scenario may give: 1e6 s (about 11.6 days
/// of simulated time, 1e18 ps), one eighteenth of the `u64` picosecond clock.
pub const MAX_TIME_PS: u64 = 1_000_000 * PS_PER_S;

/// [`MAX_TIME_PS`] in seconds.
pub const MAX_TIME_S: f64 = 1e6;

/// The longest propagation delay of one link: 1 s (200,000 km of fibre), so that a path of
/// any length and its round trip stay far inside [`MAX_TIME_PS`].
pub const MAX_DELAY_NS: u64 = 1_000_000_000;

/// The slowest link or sending rate: 1 Mb/s. Slower rates serialize so slowly that the
/// transfer-size rule leaves little to send, and rates that round to 0 b/s cannot serialize
/// at all.
pub const MIN_RATE_GBPS: f64 = 1e-3;

/// The fastest link or sending rate: 100 Tb/s (1 B then takes 0.08 ps, rounded up to 1 ps).
pub const MAX_RATE_GBPS: f64 = 100_000.0;

/// [`MIN_RATE_GBPS`] in bits per second (an application's rate cap, `app::TransferReq`).
pub const MIN_RATE_BPS: u64 = 1_000_000;

/// [`MAX_RATE_GBPS`] in bits per second.
pub const MAX_RATE_BPS: u64 = 100_000_000_000_000;

/// The largest initial window (`init_cwnd_pkts`): proto's cap on a window that covers the
/// transfer. A sender puts its whole first window into its NIC queue at once, which is
/// unbounded without TSQ or `host.nic_buffer_bytes`: 4e9 packets would not fit in memory.
pub const MAX_INIT_CWND_PKTS: u32 = proto::tcp::MAX_COVERING_WINDOW_PKTS;

/// The largest `[transport] max_cwnd_pkts` of pFabric: 2^16 packets (about 96 MB of 1460-byte
/// packets in flight per flow), so that a flow's scoreboard stays small.
pub const MAX_PFABRIC_WINDOW_PKTS: u32 = 1 << 16;

/// The largest pFabric port buffer (`switch.queues[0].cap_bytes`, and the cap of its default):
/// 4 MB, about 2,800 full packets, so that a port's O(n) scans stay cheap (`queue::Pfabric`;
/// the paper's ports hold 36 KB).
pub const MAX_PFABRIC_BUFFER_BYTES: u64 = 4 << 20;

/// The largest segment payload (`mss_bytes`).
pub const MAX_MSS_BYTES: u32 = 65_000;

/// The largest packet on the wire, payload plus header (`mss_bytes + header_bytes`): an IP
/// packet's limit. Packet sizes are `u32` in the engine; this keeps every sum of a few of them
/// far from overflowing.
pub const MAX_PACKET_BYTES: u32 = 65_535;

/// The largest transfer: 1 TB. A transfer must also serialize, with its headers, within
/// [`MAX_TIME_PS`] on the slowest link of the topology (at 1 Mb/s that is about 122 GB of
/// payload with 1460 B segments and 40 B headers).
pub const MAX_TRANSFER_BYTES: u64 = 1_000_000_000_000;

/// The largest shared buffer of a switch (given or computed): 1 PB, more than any switch has
/// and far below 2^53 B, where the floating-point thresholds of DT and ABM would lose byte
/// precision.
pub const MAX_BUFFER_BYTES: u64 = 1_000_000_000_000_000;

/// The most workload entries (applications) a scenario may have: each may bring its own
/// transport, and a transfer names its transport by a `u16` index.
pub const MAX_WORKLOADS: usize = 65_535;

/// The most transfers the workload entries of a scenario may be estimated to start: 50
/// million. Each costs the run its state and its record (`world::BYTES_PER_TRANSFER`,
/// about 300 bytes today, all kept until the run ends), so this is a generous cap on the records a
/// run produces; the estimate in the error message says how much memory they would take now.
pub const MAX_FLOWS: u64 = 50_000_000;

/// The most memory the network of a scenario may be estimated to take once built (hosts,
/// switches, ports, routing tables): 8 GiB.
pub const MAX_NETWORK_BYTES: u64 = 8 << 30;

/// The most memory one series of samples may hold in the simulator: 512 MiB each for the
/// occupancy samples (`run.sample_interval_us`) and for each of the time series' two tables
/// (`[run.timeseries]`, queues and transfers), and as much again in the run's `Output`
/// (`Simulation::output` copies them): about 1 GiB per series, whatever the sampling period.
/// The caps below are this many bytes of rows, and the series grow by doubling only up to their
/// cap (`world::reserve_capped`): plain `Vec` doubling would reserve up to twice the rows kept.
pub const MAX_SERIES_BYTES: u64 = 512 << 20;

/// The most switch-occupancy samples (`run.sample_interval_us`: one 24-byte row per switch
/// per sample) a scenario may be estimated to take, and where sampling stops at run time
/// (`Summary::occupancy_truncated`): [`MAX_SERIES_BYTES`] of rows, 22,369,621.
pub const MAX_OCCUPANCY_ROWS: u64 = MAX_SERIES_BYTES / std::mem::size_of::<crate::metrics::OccupancySample>() as u64;

/// The most rows of the time series' queue table (one 32-byte row per non-empty queue per
/// sample) a run keeps: [`MAX_SERIES_BYTES`] of rows, 16,777,216. Sampling stops at run time
/// when either table is full (`Summary::timeseries_truncated`).
pub const MAX_QUEUE_SAMPLE_ROWS: u64 = MAX_SERIES_BYTES / std::mem::size_of::<crate::metrics::QueueSample>() as u64;

/// The most rows of the time series' transfer table (one row per transfer in flight per
/// sample, 88 bytes today) a run keeps: [`MAX_SERIES_BYTES`] of rows (6,100,805 today).
pub const MAX_TRANSFER_SAMPLE_ROWS: u64 =
    MAX_SERIES_BYTES / std::mem::size_of::<crate::metrics::TransferSample>() as u64;

/// The most rows (queue plus transfer samples) a scenario's time series may be estimated to
/// produce: validation refuses more (`run.timeseries.interval_us`). The estimate counts every
/// sampled queue at every sample, but the queue table keeps only the non-empty ones, so the
/// estimate is an upper bound and this limit is set well above what a run keeps: at run time
/// each table stops at its own cap ([`MAX_QUEUE_SAMPLE_ROWS`], [`MAX_TRANSFER_SAMPLE_ROWS`]).
pub const MAX_TIMESERIES_ROWS: u64 = 200_000_000;

/// The shortest sampling period, of `run.sample_interval_us` and `run.timeseries.interval_us`:
/// 1 ns (0.001 us). No queue changes faster (a 1500-byte packet takes 12 ns to serialize at
/// 1 Tb/s); shorter periods only sample the same state again and fill the caps above sooner.
pub const MIN_SAMPLE_INTERVAL_US: f64 = 1e-3;

/// The most leaf-to-spine links a leaf-spine fabric may have (`leaves * spines *
/// links_per_spine`): four times a k = 128 fat-tree's, while every link still gets an id.
pub const MAX_FABRIC_LINKS: u64 = 1 << 22;

/// The most uplinks one leaf may have (`spines * links_per_spine`), so that a leaf's uplink
/// capacity in bit/s fits a `u64` at the highest rate validation accepts (100 Tb/s).
pub const MAX_LEAF_UPLINKS: u64 = 1 << 16;
