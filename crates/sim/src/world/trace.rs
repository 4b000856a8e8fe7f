//! Credence's decision trace, an optional observer of switch admission: for every switch
//! arrival, the features Credence's oracle sees (§3.4) and whether the packet was eventually
//! dropped (refused, or pushed out later) or transmitted. Off unless
//! [`Simulation::enable_decision_trace`] is called; the hot path then pays one `Option` test.
//!
//! INVARIANT: `pending[s][q]` holds the row of every packet queued in queue `q` of switch `s`,
//! front = next to leave, back = first to be pushed out; [`UNTRACED`] for a packet that
//! arrived after the trace reached its cap ([`MAX_TRACE_ROWS`]), so that a push-out or a
//! departure still finds its own packet's entry.
//!
//! The trace keeps at most [`MAX_TRACE_ROWS`] rows (512 MiB): a long run's arrivals beyond it
//! are not recorded ([`Simulation::decision_trace_truncated`]); every recorded row keeps its
//! true fate, since its packet stays tracked until it leaves or is pushed out.

use std::collections::VecDeque;

use units::Time;

use super::switch::SwitchBuf;
use super::{reserve_capped, Simulation};
use crate::credence::features::{FeatureVector, Features};
use crate::spec::limits::MAX_SERIES_BYTES;

/// The most rows a decision trace keeps: [`MAX_SERIES_BYTES`] of rows (9,586,980 today), about
/// three times the training trace of `experiments/credence/train.toml`.
pub const MAX_TRACE_ROWS: u64 = MAX_SERIES_BYTES / std::mem::size_of::<TraceRow>() as u64;

/// [`Simulation::enable_decision_trace`] after the first event: `events` had run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceTooLate {
    /// Events the simulation had run.
    pub events: u64,
}

impl std::fmt::Display for TraceTooLate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "call it before the first advance (this simulation has run {} events, and the packets already \
             queued would give later rows other packets' fates): build a new Simulation and enable the trace first",
            self.events
        )
    }
}

impl std::error::Error for TraceTooLate {}

/// The `pending` entry of a packet that arrived after the trace was full.
const UNTRACED: u32 = u32::MAX;

/// One switch arrival of a decision trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceRow {
    /// Switch index.
    pub switch: u32,
    /// Arrival time, picoseconds.
    pub time_ps: u64,
    /// Destination queue (port x queues per port + class).
    pub queue: u32,
    /// `[queue_len, avg_queue_len, occupancy, avg_occupancy]` in bytes, averaged over one base
    /// RTT exactly as the Credence policy computes them.
    pub features: FeatureVector,
    /// Whether the packet was dropped on arrival or pushed out later.
    pub dropped: bool,
}

/// Decision-trace state: a feature tracker per switch and, per queue, the rows of the packets
/// it holds.
#[derive(Debug)]
pub(crate) struct DecisionTrace {
    features: Vec<Features>,
    pending: Vec<Vec<VecDeque<u32>>>,
    rows: Vec<TraceRow>,
    /// The most rows kept: [`MAX_TRACE_ROWS`] (lowered by tests).
    limit: u64,
    /// An arrival found the trace full.
    truncated: bool,
}

impl DecisionTrace {
    /// A packet arrived at queue `qi` of switch `s` and was admitted or not.
    #[inline]
    pub(crate) fn on_arrival(&mut self, s: usize, qi: usize, buf: &SwitchBuf, now: Time, dropped: bool) {
        let features = self.features[s].sample(qi, buf.qlen[qi], buf.occupancy, now);
        let row = if (self.rows.len() as u64) < self.limit {
            reserve_capped(&mut self.rows, 1, self.limit);
            // CORRECTNESS: rows.len() < limit <= MAX_TRACE_ROWS < u32::MAX (UNTRACED): no wrap.
            let row = self.rows.len() as u32;
            self.rows.push(TraceRow { switch: s as u32, time_ps: now.ps(), queue: qi as u32, features, dropped });
            row
        } else {
            self.truncated = true;
            UNTRACED
        };
        if !dropped {
            self.pending[s][qi].push_back(row);
        }
    }

    /// The last packet of queue `qi` of switch `s` was pushed out.
    #[inline]
    pub(crate) fn on_push_out(&mut self, s: usize, qi: usize) {
        if let Some(row) = self.pending[s][qi].pop_back().filter(|&r| r != UNTRACED) {
            self.rows[row as usize].dropped = true;
        }
    }

    /// The first packet of queue `qi` of switch `s` left on the wire.
    #[inline]
    pub(crate) fn on_dequeue(&mut self, s: usize, qi: usize) {
        self.pending[s][qi].pop_front();
    }
}

impl Simulation {
    /// Record every switch arrival: its features and whether it is eventually dropped
    /// ([`TraceRow`]). Run a scenario under LQD with this on to collect the training data of
    /// Credence's drop oracle (Credence §3.4: "packet-level traces from each switch ... when
    /// using LQD").
    ///
    /// Only before the first event: the trace pairs each departure and push-out with the row of
    /// the packet at that end of its queue, and packets queued before it have no row, so later
    /// departures would take other packets' rows and rows would get wrong fates (5 of 25,667 in
    /// a short LQD run). Later, it records nothing and returns [`TraceTooLate`].
    pub fn enable_decision_trace(&mut self) -> Result<(), TraceTooLate> {
        if self.events() > 0 {
            return Err(TraceTooLate { events: self.events() });
        }
        let features = self
            .switches
            .iter()
            .map(|sw| {
                let mut f = Features::new(self.base_rtt);
                f.init(sw.buf.qlen.len());
                f
            })
            .collect();
        let pending = self.switches.iter().map(|sw| vec![VecDeque::new(); sw.buf.qlen.len()]).collect();
        self.trace = Some(Box::new(DecisionTrace { features, pending, rows: Vec::new(), limit: MAX_TRACE_ROWS, truncated: false }));
        Ok(())
    }

    /// The decision trace so far (empty unless enabled). A packet still queued when the run
    /// stops counts as transmitted.
    pub fn decision_trace(&self) -> &[TraceRow] {
        self.trace.as_ref().map_or(&[], |t| &t.rows)
    }

    /// Whether the decision trace reached [`MAX_TRACE_ROWS`] and stopped recording arrivals
    /// (the rows it has are the run's first arrivals, each with its true fate).
    pub fn decision_trace_truncated(&self) -> bool {
        self.trace.as_ref().is_some_and(|t| t.truncated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_trace_stops_recording_and_keeps_every_recorded_rows_fate() {
        const _: () = assert!(MAX_TRACE_ROWS < UNTRACED as u64);
        // LQD pushing out under incast: a truncated trace is the full trace's first rows, each
        // with the same fate (a recorded packet pushed out after the cap is still marked).
        let text = "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 8\nspines = 2\n\
                    host_rate_gbps = 10\nfabric_rate_gbps = 40\n\
                    [switch]\nbuffer_bytes = 60000\nadmission = { policy = \"lqd\" }\n\
                    [[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.6\nduration_ms = 1\n\
                    [[workload]]\nkind = \"incast\"\nquery_rate_per_host = 2000\nfan_in = 6\nburst_bytes = 300000\nduration_ms = 1\n";
        let valid = crate::Spec::from_toml_str(text).unwrap().validate(std::path::Path::new(".")).unwrap();
        let mut full = Simulation::new(&valid).unwrap();
        full.enable_decision_trace().unwrap();
        full.run_to_end();
        assert!(!full.decision_trace_truncated());
        let all = full.decision_trace().to_vec();
        let cut = all.len() / 2;
        assert!(all[..cut].iter().any(|r| r.dropped), "drops among the first half");
        let mut sim = Simulation::new(&valid).unwrap();
        sim.enable_decision_trace().unwrap();
        sim.trace.as_deref_mut().unwrap().limit = cut as u64;
        sim.run_to_end();
        assert!(sim.decision_trace_truncated());
        assert_eq!(sim.decision_trace(), &all[..cut]);
        assert!(sim.trace.as_deref().unwrap().rows.capacity() <= cut);
        // Tracing never changes the run.
        assert_eq!(sim.output().records, full.output().records);
    }
}
