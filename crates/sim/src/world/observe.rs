//! Opt-in time series (`[run.timeseries]`): every `interval_us`, the length of every
//! non-empty queue of the sampled ports ([`QueueSample`]) and the state of every transfer in
//! flight ([`TransferSample`]). An observer of the run, kept out of the hot-path rooms.
//!
//! Cost. Off (no table): the simulation's `observe` field is `None`, nothing is
//! allocated, no event is ever scheduled, and no packet handler looks at it; the only traces
//! are one arm in the event `match` that never runs and one test per occupancy sample. On: one pending `Observe` event for the
//! whole sampler (htsim-style, like the occupancy `Sample`), and per sample O(sampled ports x
//! queues per port) to find the non-empty queues plus O(transfers in flight). Rows: samples x
//! non-empty queues in the queue series, samples x transfers in flight in the transfer
//! series, 32 and 88 bytes each (and as much again per copy the results make); validation
//! refuses a scenario estimated above `limits::MAX_TIMESERIES_ROWS` (an upper bound: it counts
//! every queue), and at run time sampling stops at the first sample that would not fit in
//! either table ([`MAX_QUEUE_SAMPLE_ROWS`], [`MAX_TRANSFER_SAMPLE_ROWS`]: 512 MiB of rows
//! each; `Summary::timeseries_truncated`), so both end at the last whole sample. The tables
//! grow by doubling only up to their caps (`world::reserve_capped`), so neither holds more
//! than 512 MiB whatever the input (`limits::MAX_SERIES_BYTES`).
//!
//! The queue series is sparse: a queue appears at a sample only if it holds at least one
//! byte, so an idle port of a large fabric costs nothing; a missing row means an empty queue.
//!
//! CORRECTNESS: sampling never changes the run. The handler only reads the network and the
//! endpoints (`Endpoint::stats` and the controller's pacing rate take `&self`), and its events
//! take sequence numbers in between the others' without reordering them, so every record,
//! counter and occupancy sample equals the run without time series (tested). The summary's
//! event count grows; and a run that ends by running out of events (not by finishing every
//! transfer, nor at its stop time) ends at the sample after its last event, or counts as
//! stopped early if that sample falls past the stop time, as the occupancy sampler already
//! makes it. Both samplers stop once only samplers' events are pending, so neither keeps the
//! other alive.
//! INVARIANT: `armed` is true iff an `Observe` event is pending.

use proto::cc::{AnyCc, CongestionControl};
use proto::{Endpoint, Stats, TransportConfig};
use units::{Bps, Dur, LinkId, Time};

use super::switch::{Link, NO_SWITCH};
use super::Simulation;
use crate::metrics::{QueueSample, TransferSample, TRANSFER_EXTRA_COLUMNS};
use crate::sched::Event;
use crate::spec::limits::{MAX_QUEUE_SAMPLE_ROWS, MAX_TRANSFER_SAMPLE_ROWS};
use crate::spec::TimeseriesSpec;

/// The time-series sampler and what it recorded.
#[derive(Debug)]
pub(crate) struct Observer {
    every: Dur,
    /// Egress links whose queues are sampled, in link order (empty: no queue series).
    links: Vec<LinkId>,
    /// Whether transfers are sampled.
    transfers: bool,
    /// Transfers from this row on are not sampled.
    max_transfers: usize,
    /// Rows of the transfers that were in flight at the last sample or started since, in
    /// start order.
    live: Vec<u32>,
    /// Transfers already added to `live` (rows `0..seen`).
    seen: usize,
    pub(crate) queue_rows: Vec<QueueSample>,
    pub(crate) transfer_rows: Vec<TransferSample>,
    /// The most rows each table keeps ([`MAX_QUEUE_SAMPLE_ROWS`], [`MAX_TRANSFER_SAMPLE_ROWS`];
    /// lowered in tests).
    pub(crate) limits: (u64, u64),
    /// Sampling stopped at a table's limit.
    pub(crate) is_truncated: bool,
    /// Whether an `Observe` event is pending.
    armed: bool,
}

impl Observer {
    /// The sampler a validated `[run.timeseries]` table asks for over `links`, or `None`
    /// without one (the run then pays nothing).
    pub(crate) fn new(spec: Option<&TimeseriesSpec>, links: &[Link]) -> Option<Box<Observer>> {
        let ts = spec?;
        let sampled = |l: &Link| match l.switch {
            NO_SWITCH => ts.nics,
            s => ts.switches.as_ref().is_none_or(|ids| ids.contains(&s)),
        };
        let links = if ts.queues {
            links.iter().enumerate().filter(|(_, l)| sampled(l)).map(|(i, _)| LinkId::from_idx(i)).collect()
        } else {
            Vec::new()
        };
        Some(Box::new(Observer {
            every: Dur::from_secs_f64(ts.interval_us * 1e-6).max(Dur::from_ps(1)),
            links,
            transfers: ts.transfers,
            max_transfers: ts.max_transfers.map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX)),
            live: Vec::new(),
            seen: 0,
            queue_rows: Vec::new(),
            transfer_rows: Vec::new(),
            limits: (MAX_QUEUE_SAMPLE_ROWS, MAX_TRANSFER_SAMPLE_ROWS),
            is_truncated: false,
            armed: false,
        }))
    }
}

/// Append `row` to a table capped at `limit` rows, growing it no further than that (see
/// `world::reserve_capped`); false, and nothing appended, if the table is full.
fn push_capped<T>(rows: &mut Vec<T>, row: T, limit: u64) -> bool {
    if rows.len() as u64 >= limit {
        return false;
    }
    super::reserve_capped(rows, 1, limit);
    rows.push(row);
    true
}

/// Fill the transport-specific columns ([`TRANSFER_EXTRA_COLUMNS`], by position) of a sender.
/// A new transport adds its column name there and its arm here; nothing else changes.
fn transport_extras(ep: &Endpoint, st: &Stats, out: &mut [f64; TRANSFER_EXTRA_COLUMNS.len()]) {
    if let Endpoint::Tcp(c) = ep {
        if let Some(AnyCc::Dctcp(_)) = c.cc() {
            out[0] = st.alpha; // "alpha"
        }
    }
    if let Some(a) = ep.as_atp_sender() {
        if let Some((tlr, class)) = a.group_state(0) {
            out[1] = tlr; // "tlr"
            out[3] = f64::from(class); // "class"
        }
        out[2] = a.last_loss().unwrap_or(f64::NAN); // "loss"
    }
}

/// The sender's rate and whether it enforces it (see [`TransferSample::rate_bps`]).
fn sending_rate(ep: &Endpoint, st: &Stats, transport: &TransportConfig, nic: Bps, cap: Option<Bps>) -> (f64, bool) {
    let (rate, is_paced) = match ep {
        Endpoint::Tcp(c) => match c.cc().and_then(|cc| cc.pacing_rate()) {
            Some(r) => (r.get() as f64, true),
            // A window transport sends about a window per round trip.
            None if st.srtt_ps > 0 => (st.cwnd as f64 * 8.0 * 1e12 / st.srtt_ps as f64, false),
            None => (f64::NAN, false),
        },
        Endpoint::UdpTx(_) => match transport {
            TransportConfig::Udp(u) if u.rate.is_some() => (u.rate.map_or(0, Bps::get) as f64, true),
            // An unpaced source hands everything to its NIC, which drains it at line rate.
            _ => (nic.get() as f64, false),
        },
        // ATP paces at its slack-based rate (§4.2).
        Endpoint::AtpTx(a) => (a.rate_bps(), true),
        // ExpressPass/Aeolus: the receiver's credits pace the sender (not known here).
        Endpoint::UdpRx(_) | Endpoint::AtpRx(_) | Endpoint::XpassTx(_) | Endpoint::XpassRx(_) => (f64::NAN, false),
        // pFabric is a window transport without an RTT estimate: a window per base RTT is
        // not known here, so its rate is not reported.
        Endpoint::PfabricTx(_) => (f64::NAN, false),
        Endpoint::PfabricRx(_) => (f64::NAN, false),
        // The bounded-loss transport keeps a fixed RTO and no RTT estimate: not known here.
        Endpoint::MltTx(_) | Endpoint::MltRx(_) => (f64::NAN, false),
    };
    match cap.map(|c| c.get() as f64) {
        // The cap spaces new data (both transports): it binds where it is below the rate.
        Some(c) if rate.is_nan() || c < rate => (c, true),
        _ => (rate, is_paced),
    }
}

impl Simulation {
    /// Schedule the first time-series sample now, if the table is present and anything will
    /// happen.
    pub(crate) fn start_observing(&mut self) {
        let has_work = !(self.apps_idle() && self.total_transfers() == 0);
        let now = self.sched.now();
        if let Some(obs) = self.observe.as_deref_mut() {
            if has_work && !obs.armed {
                obs.armed = true;
                self.sched.at(now, Event::Observe);
            }
        }
    }

    /// Whether a time-series sample is pending (so that the occupancy sampler does not take
    /// it for work left).
    pub(crate) fn is_observe_pending(&self) -> bool {
        self.observe.as_deref().is_some_and(|o| o.armed)
    }

    /// `Observe`: record one sample, and schedule the next while anything but the samplers
    /// is pending.
    pub(crate) fn on_observe(&mut self) {
        let Some(mut obs) = self.observe.take() else { return };
        debug_assert!(obs.armed, "an Observe event ran while none was pending");
        let now = self.sched.now();
        let before = (obs.queue_rows.len(), obs.transfer_rows.len());
        let fits = self.sample_queues(&mut obs, now) && (!obs.transfers || self.sample_transfers(&mut obs, now));
        if !fits {
            // A table is full: drop this sample's rows from both, so that both end at the same
            // whole sample, and stop sampling.
            obs.queue_rows.truncate(before.0);
            obs.transfer_rows.truncate(before.1);
            obs.is_truncated = true;
        }
        let others_pending = self.sched.len() > usize::from(self.sample_armed);
        obs.armed = others_pending && !obs.is_truncated;
        if obs.armed {
            self.sched.after(obs.every, Event::Observe);
        }
        self.observe = Some(obs);
    }

    /// Append this sample's queue rows; false if the table filled up before the last.
    fn sample_queues(&self, obs: &mut Observer, now: Time) -> bool {
        for &l in &obs.links {
            let link = &self.links[l.idx()];
            if link.port.is_empty() {
                continue;
            }
            let node = self.topo.links[l.idx()].src.0;
            let switch = if link.switch == NO_SWITCH { -1 } else { link.switch as i32 };
            for q in 0..link.port.num_queues() {
                let bytes = link.port.queue_bytes(q);
                if bytes > 0 {
                    let row = QueueSample { time_ps: now.ps(), link: l.0, node, switch, queue: q as u8, bytes };
                    if !push_capped(&mut obs.queue_rows, row, obs.limits.0) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Append this sample's transfer rows; false if the table filled up before the last.
    fn sample_transfers(&self, obs: &mut Observer, now: Time) -> bool {
        let started = self.total_transfers().min(obs.max_transfers);
        obs.live.extend((obs.seen..started).map(|f| f as u32));
        obs.seen = obs.seen.max(started);
        // In flight: started, completion not yet measured, endpoints not yet freed (a
        // transfer whose record was taken is over).
        obs.live.retain(|&f| {
            self.transfers.get(f as usize).is_some_and(|(_, rt)| !rt.released && rt.finished_at.is_none())
        });
        for &f in &obs.live {
            let Some((spec, rt)) = self.transfers.get(f as usize) else { continue };
            let Some(sender) = rt.sender.as_ref() else { continue };
            let st = sender.stats();
            let nic = self.links[self.routes.nic(units::NodeId(spec.src)).idx()].rate;
            let cfg = &self.transports[spec.transport as usize].cfg;
            let (rate_bps, is_paced) = sending_rate(sender, &st, cfg, nic, spec.rate_cap);
            let mut extra = [f64::NAN; TRANSFER_EXTRA_COLUMNS.len()];
            transport_extras(sender, &st, &mut extra);
            let row = TransferSample {
                time_ps: now.ps(),
                flow: f,
                cwnd_bytes: st.cwnd,
                rate_bps,
                is_paced,
                srtt_ps: st.srtt_ps,
                sent_bytes: st.bytes_sent,
                delivered_bytes: rt.receiver.as_ref().map_or(0, |r| r.stats().bytes_received),
                extra,
            };
            if !push_capped(&mut obs.transfer_rows, row, obs.limits.1) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{CcKind, TcpConfig, UdpConfig};

    #[test]
    fn rows_are_as_small_as_documented() {
        assert_eq!(std::mem::size_of::<QueueSample>(), 32);
        assert_eq!(std::mem::size_of::<TransferSample>(), 56 + 8 * TRANSFER_EXTRA_COLUMNS.len());
    }

    #[test]
    fn rates_follow_pacing_the_window_or_the_cap() {
        let nic = Bps::from_gbps(10);
        let udp = TransportConfig::Udp(UdpConfig { rate: Some(Bps::from_gbps(2)), ..UdpConfig::default() });
        let ep = Endpoint::sender(&udp, 0, units::Bytes(10_000), Time::ZERO);
        let st = ep.stats();
        assert_eq!(sending_rate(&ep, &st, &udp, nic, None), (2e9, true));
        assert_eq!(sending_rate(&ep, &st, &udp, nic, Some(Bps::from_gbps(1))), (1e9, true));
        let unpaced = TransportConfig::Udp(UdpConfig::default());
        assert_eq!(sending_rate(&ep, &st, &unpaced, nic, None), (10e9, false));
        // DCTCP before any RTT sample: no estimate yet, and alpha is reported.
        let tcp = TransportConfig::Tcp(TcpConfig { cc: CcKind::Dctcp { g: 1.0 / 16.0, init_alpha: 1.0, loss_by_alpha: false, ns3_cwr: false, ece_only_on_new_acks: false }, ..TcpConfig::default() });
        let ep = Endpoint::sender(&tcp, 0, units::Bytes(10_000), Time::ZERO);
        let st = ep.stats();
        let (r, paced) = sending_rate(&ep, &st, &tcp, nic, None);
        assert!(r.is_nan() && !paced);
        let with_rtt = Stats { srtt_ps: 10_000_000, cwnd: 14_600, ..st };
        assert_eq!(sending_rate(&ep, &with_rtt, &tcp, nic, None), (14_600.0 * 8.0 * 1e12 / 1e7, false));
        let mut extra = [f64::NAN; TRANSFER_EXTRA_COLUMNS.len()];
        transport_extras(&ep, &st, &mut extra);
        assert_eq!(extra[0], 1.0);
        // NewReno has no alpha: the column stays NaN.
        let reno = TransportConfig::Tcp(TcpConfig { cc: CcKind::NewReno, ..TcpConfig::default() });
        let ep = Endpoint::sender(&reno, 0, units::Bytes(10_000), Time::ZERO);
        let mut extra = [f64::NAN; TRANSFER_EXTRA_COLUMNS.len()];
        transport_extras(&ep, &ep.stats(), &mut extra);
        assert!(extra[0].is_nan());
    }
}
