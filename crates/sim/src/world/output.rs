//! What a run produced so far, assembled on demand: per-flow records with their ideal FCT,
//! per-application unit records, switch and queue counters, occupancy samples, link counters,
//! the optional time series and totals.

use proto::Outcome;

use super::apps::NetIdeal;
use super::host::{Transfer, TransferRt};
use super::{RunTransport, Simulation};
use crate::route::Routes;
use crate::topo::Topology;
use crate::app::IdealFct;
use crate::metrics::{percentile_sorted, AppRecord, FctRecord, GroupRecord, LinkStats, Output, QueueMax, Summary};

/// Records taken out of a run ([`Simulation::take_records`]): `records[k]` is row `rows[k]`
/// of the run's records.
#[derive(Clone, Debug, Default)]
pub struct TakenRecords {
    /// Each record's row (its transfer's index in the run).
    pub rows: Vec<u64>,
    /// The records.
    pub records: Vec<FctRecord>,
}

/// What a transfer's record needs of the run besides the transfer.
struct RecordMaker<'a> {
    transports: &'a [RunTransport],
    topo: &'a Topology,
    routes: &'a Routes,
}

impl RecordMaker<'_> {
    /// A transfer's record (its row in the records).
    fn record(&self, spec: &Transfer, rt: &TransferRt) -> FctRecord {
        let tr = &self.transports[spec.transport as usize];
        let ideal = NetIdeal { topo: self.topo, routes: self.routes, model: &tr.ideal };
        let ideal = ideal.ideal_fct(spec.src, spec.dst, spec.size).ps();
        let c = rt.counters();
        let fct = rt.finished_at.map(|t| t.since(spec.start).ps());
        FctRecord {
            id: spec.id,
            src: spec.src,
            dst: spec.dst,
            size_bytes: spec.size,
            start_ps: spec.start.ps(),
            fct_ps: fct.map_or(-1, |x| i64::try_from(x).unwrap_or(i64::MAX)),
            ideal_fct_ps: ideal,
            slowdown: fct.map_or(f64::NAN, |x| x as f64 / ideal as f64),
            finished: fct.is_some(),
            incast: spec.incast,
            prio: spec.prio,
            workload: spec.app.0,
            transport: tr.cfg.kind_name(),
            num_rtos: c.rtos,
            retx_segments: c.retx,
            tail_probes: c.probes,
            bytes_delivered: c.delivered,
            outcome: match (fct, rt.outcome) {
                (Some(_), Some(o)) => o.as_str(),
                (Some(_), None) => Outcome::Complete.as_str(),
                (None, Some(o @ (Outcome::GivenUp | Outcome::Cancelled))) => o.as_str(),
                (None, _) => "unfinished",
            },
        }
    }
}

impl Simulation {
    /// Take the records of the transfers that are over (their state is freed once the
    /// records of all transfers sharing its page were taken), or, once the run is done
    /// ([`Simulation::is_done`]), of every transfer left. Rows come in the order the
    /// transfers ended (then index order), each with its row in the records of a run that
    /// takes nothing (its transfer index): sort by it to restore that order.
    /// [`Simulation::output`] reports only the records not taken. A caller that writes these
    /// out as the run goes (the Python front end, `slacknet-sim`) keeps memory following the
    /// transfers in flight rather than every transfer ever started.
    pub fn take_records(&mut self) -> TakenRecords {
        let all = self.is_done();
        let make = RecordMaker { transports: &self.transports, topo: &self.topo, routes: &self.routes };
        let pairs = self.transfers.take(all, |f, spec, rt| (f as u64, make.record(spec, rt)));
        let (rows, records): (Vec<u64>, Vec<FctRecord>) = pairs.into_iter().unzip();
        self.taken_rtos += records.iter().map(|r| r.num_rtos).sum::<u64>();
        TakenRecords { rows, records }
    }

    /// Everything the run produced so far (the records not taken by
    /// [`Simulation::take_records`], in record order; the summary counts every transfer).
    pub fn output(&self) -> Output {
        let make = RecordMaker { transports: &self.transports, topo: &self.topo, routes: &self.routes };
        let records: Vec<FctRecord> = self.transfers.untaken().map(|(_, spec, rt)| make.record(spec, rt)).collect();
        let num_rtos = self.taken_rtos + records.iter().map(|r| r.num_rtos).sum::<u64>();
        let apps = self
            .units
            .iter()
            .map(|u| {
                let duration = u.end.since(u.start).ps();
                let ideal = u.ideal.map(|d| d.ps());
                AppRecord {
                    app: u.app,
                    kind: u.kind,
                    unit: u.unit,
                    start_ps: u.start.ps(),
                    end_ps: u.end.ps(),
                    duration_ps: duration,
                    ideal_ps: ideal.map_or(-1, |x| i64::try_from(x).unwrap_or(i64::MAX)),
                    slowdown: ideal.filter(|&x| x > 0).map_or(f64::NAN, |x| duration as f64 / x as f64),
                    num_transfers: u.num_transfers,
                    bytes: u.bytes,
                    src: u.src.map_or(-1, i64::from),
                    dst: u.dst.map_or(-1, i64::from),
                    bytes_sent: u.sent.map_or(-1, |s| i64::try_from(s.0).unwrap_or(i64::MAX)),
                    packets_sent: u.sent.map_or(-1, |s| i64::try_from(s.1).unwrap_or(i64::MAX)),
                    packets_retx: u.sent.map_or(-1, |s| i64::try_from(s.2).unwrap_or(i64::MAX)),
                    messages: u.job.map_or(0, |j| j.messages),
                    messages_required: u.job.map_or(0, |j| j.required),
                    messages_delivered: u.job.map_or(0, |j| j.delivered),
                    loss_rate: u.job.map_or(u.lost_fraction.unwrap_or(f64::NAN), |j| j.worst_group_loss),
                    loss_allowance: u.job.map_or(f64::NAN, |j| j.worst_group_allowance),
                    gave_up: u8::from(u.job.is_some_and(|j| j.gave_up)),
                }
            })
            .collect();
        let groups = self
            .units
            .iter()
            .filter_map(|u| u.job.map(|j| (u, j)))
            .flat_map(|(u, j)| {
                let n = (j.groups as usize).min(crate::app::MAX_JOB_GROUPS);
                (0..n).map(move |g| {
                    let c = j.per_group[g];
                    let (loss_rate, loss_allowance) = c.loss_and_allowance();
                    GroupRecord {
                        app: u.app,
                        unit: u.unit,
                        group: g as u32,
                        msr: c.msr,
                        messages: c.messages,
                        messages_required: c.required,
                        messages_delivered: c.delivered,
                        loss_rate,
                        loss_allowance,
                    }
                })
            })
            .collect();
        let mut per_switch: Vec<Vec<u64>> = vec![Vec::new(); self.switches.len()];
        for s in &self.samples {
            per_switch[s.switch as usize].push(s.bytes);
        }
        let mut switches = Vec::with_capacity(self.switches.len());
        let mut queues = Vec::new();
        let mut switch_drops = 0;
        let mut ecn_marks = self.nic_marks;
        for (s, sw) in self.switches.iter().enumerate() {
            let mut st = sw.stats.clone();
            let v = &mut per_switch[s];
            v.sort_unstable();
            st.occ_samples = v.len() as u64;
            st.occ_p50_bytes = percentile_sorted(v, 0.5);
            st.occ_p90_bytes = percentile_sorted(v, 0.9);
            st.occ_p99_bytes = percentile_sorted(v, 0.99);
            st.occ_p9999_bytes = percentile_sorted(v, 0.9999);
            st.final_occupancy_bytes = sw.buf.occupancy;
            if let Some(c) = sw.admission.credence_stats() {
                st.credence_safeguard_accepts = c.safeguard_accepts;
                st.credence_oracle_drops = c.oracle_drops;
                st.credence_oracle_accepts = c.oracle_accepts;
                st.credence_threshold_drops = c.threshold_drops;
            }
            switch_drops += st.drops_admission + st.drops_queue_cap + st.drops_pushout + st.drops_credit + st.drops_selective;
            ecn_marks += st.ecn_marks;
            switches.push(st);
            for &l in &sw.ports {
                for (q, &m) in self.links[l.idx()].port.max_bytes().iter().enumerate() {
                    if m > 0 {
                        queues.push(QueueMax { switch: s as u32, link: l.0, queue: q as u8, max_bytes: m });
                    }
                }
            }
        }
        let in_flight: u64 = self
            .links
            .iter()
            .map(|l| l.port.total_bytes() + l.wire_bytes() + l.credit.as_deref().map_or(0, |c| c.bytes()))
            .sum();
        let summary = Summary {
            num_flows: self.total_transfers() as u64,
            finished_flows: self.finished,
            given_up_flows: self.given_up,
            cancelled_flows: self.cancelled,
            events: self.events,
            packet_hops: self.hops,
            sim_end_ps: self.sched.now().ps(),
            bytes_sent: self.bytes_sent,
            bytes_delivered: self.bytes_delivered,
            credits_delivered: self.credits_delivered,
            credits_answered: self.credits_answered,
            bytes_dropped: self.bytes_dropped,
            bytes_in_flight: in_flight,
            switch_drops,
            nic_drops: self.nic_drops,
            ecn_marks,
            num_rtos,
            stopped_early: self.stopped_early,
            timeseries_truncated: self.observe.as_ref().is_some_and(|o| o.is_truncated),
            occupancy_truncated: self.occupancy_truncated,
        };
        let links = self
            .links
            .iter()
            .zip(&self.topo.links)
            .enumerate()
            .map(|(i, (l, spec))| LinkStats {
                link: i as u32,
                src: spec.src.0,
                dst: spec.dst.0,
                rate_bps: l.rate.get(),
                tx_packets: l.tx_packets,
                tx_bytes: l.tx_bytes,
            })
            .collect();
        let (queue_series, transfer_series) = match self.observe.as_deref() {
            Some(o) => (o.queue_rows.clone(), o.transfer_rows.clone()),
            None => (Vec::new(), Vec::new()),
        };
        Output {
            records,
            apps,
            groups,
            switches,
            queues,
            occupancy: self.samples.clone(),
            links,
            queue_series,
            transfer_series,
            summary,
        }
    }
}
