//! Credence's decision trace, an optional observer of switch admission: for every switch
//! arrival, the features Credence's oracle sees (§3.4) and whether the packet was eventually
//! dropped (refused, or pushed out later) or transmitted. Off unless
//! [`Simulation::enable_decision_trace`] is called; the hot path then pays one `Option` test.
//!
//! INVARIANT: `pending[s][q]` holds the row of every packet queued in queue `q` of switch `s`,
//! front = next to leave, back = first to be pushed out.

use std::collections::VecDeque;

use units::Time;

use super::switch::SwitchBuf;
use super::Simulation;
use crate::credence::features::{FeatureVector, Features};

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
}

impl DecisionTrace {
    /// A packet arrived at queue `qi` of switch `s` and was admitted or not.
    #[inline]
    pub(crate) fn on_arrival(&mut self, s: usize, qi: usize, buf: &SwitchBuf, now: Time, dropped: bool) {
        let features = self.features[s].sample(qi, buf.qlen[qi], buf.occupancy, now);
        let row = self.rows.len() as u32;
        self.rows.push(TraceRow { switch: s as u32, time_ps: now.ps(), queue: qi as u32, features, dropped });
        if !dropped {
            self.pending[s][qi].push_back(row);
        }
    }

    /// The last packet of queue `qi` of switch `s` was pushed out.
    #[inline]
    pub(crate) fn on_push_out(&mut self, s: usize, qi: usize) {
        if let Some(row) = self.pending[s][qi].pop_back() {
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
    /// Record every switch arrival from now on: its features and whether it is eventually
    /// dropped ([`TraceRow`]). Run a scenario under LQD with this on to collect the training
    /// data of Credence's drop oracle (Credence §3.4: "packet-level traces from each switch ...
    /// when using LQD").
    pub fn enable_decision_trace(&mut self) {
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
        self.trace = Some(Box::new(DecisionTrace { features, pending, rows: Vec::new() }));
    }

    /// The decision trace so far (empty unless enabled). A packet still queued when the run
    /// stops counts as transmitted.
    pub fn decision_trace(&self) -> &[TraceRow] {
        self.trace.as_ref().map_or(&[], |t| &t.rows)
    }
}
