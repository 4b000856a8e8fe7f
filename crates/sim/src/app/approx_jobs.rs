//! NetApprox's jobs (Xia et al., `shared/papers/netapprox.txt` §7.1): every sender host runs
//! jobs one after another, each of `N` messages to one receiver whose sizes and readiness gaps
//! follow a trace (FBKV or FBHD, `workload::approx`), with a minimal message sampling rate
//! (MSR). The scheme decides how messages travel:
//! - `atp`: one ATP job per job (`proto::atp`): each message is handed to it when ready; the
//!   job ends when ATP has `ceil(MSR x N)` messages delivered.
//! - `early_send` (ES, §7.1): each message is its own transfer over the entry's reliable
//!   transport, started when ready; once `ceil(MSR x N)` messages are delivered the job ends,
//!   its other transfers are cancelled and no more start.
//! - `sample_send` (SS, §7.1): a uniform sample of exactly `ceil(MSR x N)` messages, drawn when
//!   the job starts, is sent (each its own transfer, when ready); the job ends when all of the
//!   sample is delivered. CHOICE: the paper samples "with a sampling rate of MSR"; a Bernoulli
//!   sample could fall short of MSR x N, so we draw the exact count.
//! - `udp`: each message is a UDP transfer at line rate, started when ready, never resent.
//!   Its job ends when its last message arrives: known when every message arrived, or
//!   `udp_timeout_us` after the last was handed over (the record is written then, with the
//!   time of the last arrival as its end); the messages that did not arrive by then are its
//!   loss (no bound holds). The sender starts its next job after that wait.
//!
//! Records one `job` unit per job: start, end, the ideal JCT, the messages (N, required,
//! delivered), the measured loss rate `1 - delivered / N`, bytes and packets sent and resent.
//! The ideal JCT is one lower bound for every scheme, so slowdowns compare across schemes: a
//! job needs `ceil(MSR x N)` messages, so at least the bytes of the smallest that many sent
//! back to back alone (`ideal_fct`), and no earlier than the `ceil(MSR x N)`-th message is ready
//! plus the ideal FCT of the smallest message. (MRDF exploits exactly this: with sizes as
//! skewed as FBHD's, ATP completes a job with its smallest messages, which biases the sample
//! toward small messages; an application that needs an unbiased sample sets `mrdf = false` or
//! uses SampleSend.)
//!
//! Transfer tags: `job << 24 | message` (a job has at most 2^24 messages).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use proto::atp::{required_messages, GroupSpec};
use rand::seq::index::sample;
use rand::Rng;
use rand_pcg::Pcg64;
use units::{Dur, FlowId, Time};

use super::{AppCtx, Application, GroupCount, JobCounts, Outcome, TransferDone, TransferReq, UnitRecord, MAX_JOB_GROUPS};
use crate::workload::approx::ApproxTrace;

/// How a job's messages travel (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApproxScheme {
    /// ATP jobs.
    Atp,
    /// EarlySend over a reliable transport.
    EarlySend,
    /// SampleSend over a reliable transport.
    SampleSend,
    /// Plain UDP.
    Udp,
}

/// Who receives each job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Receivers {
    /// A host drawn uniformly among the others, per job (all-to-all).
    Random,
    /// One host for every job (all-to-one).
    One(u32),
}

/// The knobs of one entry (validated by `spec`).
#[derive(Clone, Debug)]
pub struct ApproxJobsConf {
    /// Trace of message sizes and gaps.
    pub trace: ApproxTrace,
    /// Transport scheme.
    pub scheme: ApproxScheme,
    /// Every job's groups, by group id: (share of the messages, MSR). One group: `[(1, msr)]`.
    pub groups: Vec<(f64, f64)>,
    /// Messages per job.
    pub messages: u64,
    /// Jobs each sender runs, one after another.
    pub jobs_per_host: u32,
    /// Factor on every gap the trace gives (1: the trace's own).
    pub gap_scale: f64,
    /// Sending hosts.
    pub senders: Vec<u32>,
    /// Who receives.
    pub receivers: Receivers,
    /// When the first jobs start.
    pub start: Time,
    /// Pause between the end of a host's job and the start of its next.
    pub think: Dur,
    /// Class of non-ATP transfers.
    pub prio: u8,
    /// UDP: how long after its last message a job waits for stragglers.
    pub udp_timeout: Dur,
    /// Hosts in the network.
    pub num_hosts: u32,
}

/// What the application's alarm is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// A sender starts its next job.
    Start { host: usize },
    /// A job's next message is ready.
    Message { job: usize },
    /// A UDP job stops waiting.
    UdpDeadline { job: usize },
}

/// One job in progress.
#[derive(Clone, Debug)]
struct Job {
    host: usize,
    dst: u32,
    start: Time,
    /// (ready time, bytes) per message, in ready order.
    msgs: Vec<(Time, u64)>,
    next: usize,
    /// SS: which messages are in the sample.
    sampled: Option<Vec<bool>>,
    required: u64,
    /// ATP: the job's transfer.
    flow: Option<FlowId>,
    /// ES/SS/UDP: message transfers not yet ended.
    open: Vec<FlowId>,
    delivered: u64,
    bytes_sent: u64,
    packets_sent: u64,
    packets_retx: u64,
    transfers: u32,
    /// When the last message arrived whole (UDP's end).
    last_arrival: Option<Time>,
    /// A message's reliable transfer gave up (ES, SS).
    gave_up: bool,
    done: bool,
    /// ES/SS/UDP: messages delivered and needed per group.
    g_delivered: [u64; MAX_JOB_GROUPS],
    g_required: [u64; MAX_JOB_GROUPS],
}

/// NetApprox's job generator (module docs).
#[derive(Debug)]
pub struct ApproxJobs {
    conf: ApproxJobsConf,
    /// Every job's messages per group (N_g, by group id) and the group of each message (the
    /// same for every job: [`assign_groups`]).
    group_messages: Vec<u64>,
    group_of: Vec<u8>,
    /// The messages of each group, in order (SampleSend samples within each).
    members: Vec<Vec<u32>>,
    /// One random stream per sender (job shapes, receivers, samples).
    rngs: Vec<Pcg64>,
    /// Per sender: jobs started so far.
    started: Vec<u32>,
    jobs: Vec<Job>,
    due: BinaryHeap<Reverse<(Time, Due)>>,
}

/// The most messages a job may have (transfer tags keep 24 bits for the message).
pub const MAX_APPROX_MESSAGES: u64 = 1 << 24;

impl ApproxJobs {
    /// The generator for `conf`, with sender `i` drawing from `rngs[i]`.
    pub fn new(conf: ApproxJobsConf, rngs: Vec<Pcg64>) -> ApproxJobs {
        let n = conf.senders.len();
        debug_assert_eq!(rngs.len(), n);
        let shares: Vec<f64> = conf.groups.iter().map(|g| g.0).collect();
        let group_messages = group_sizes(&shares, conf.messages);
        let group_of = assign_groups(&group_messages);
        let mut members = vec![Vec::new(); group_messages.len()];
        for (k, &g) in group_of.iter().enumerate() {
            members[g as usize].push(k as u32);
        }
        ApproxJobs {
            conf,
            group_messages,
            group_of,
            members,
            rngs,
            started: vec![0; n],
            jobs: Vec::new(),
            due: BinaryHeap::new(),
        }
    }

    fn rearm(&self, ctx: &mut AppCtx<'_>) {
        match self.due.peek() {
            Some(Reverse((t, _))) => ctx.sleep_until(*t),
            None => ctx.cancel_sleep(),
        }
    }

    /// Start host `h`'s next job now.
    fn start_job(&mut self, h: usize, ctx: &mut AppCtx<'_>) {
        let c = &self.conf;
        let src = c.senders[h];
        let rng = &mut self.rngs[h];
        let dst = match c.receivers {
            Receivers::One(r) => r,
            Receivers::Random => {
                // Uniform over the other hosts.
                let d = rng.gen_range(0..c.num_hosts - 1);
                if d >= src {
                    d + 1
                } else {
                    d
                }
            }
        };
        let now = ctx.now();
        let mut t = now;
        let mut msgs = Vec::with_capacity(c.messages as usize);
        for k in 0..c.messages {
            if k > 0 {
                let gap = c.trace.message_gap(rng.gen::<f64>());
                t = t.saturating_add(if c.gap_scale == 1.0 { gap } else { Dur::from_secs_f64(gap.as_secs_f64() * c.gap_scale) });
            }
            msgs.push((t, c.trace.message_bytes(rng.gen::<f64>())));
        }
        let mut g_required = [0; MAX_JOB_GROUPS];
        for (g, &(_, msr)) in c.groups.iter().enumerate().take(MAX_JOB_GROUPS) {
            g_required[g] = required_messages(msr, self.group_messages[g]);
        }
        let required = g_required.iter().sum();
        // SS: a uniform sample of exactly ceil(MSR_g x N_g) messages of each group.
        let sampled = (c.scheme == ApproxScheme::SampleSend).then(|| {
            let mut s = vec![false; c.messages as usize];
            for (g, members) in self.members.iter().enumerate() {
                for i in sample(rng, members.len(), g_required[g] as usize) {
                    s[members[i] as usize] = true;
                }
            }
            s
        });
        let id = self.jobs.len();
        self.started[h] += 1;
        let mut job = Job {
            host: h,
            dst,
            start: now,
            msgs,
            next: 0,
            sampled,
            required,
            flow: None,
            open: Vec::new(),
            delivered: 0,
            bytes_sent: 0,
            packets_sent: 0,
            packets_retx: 0,
            transfers: 0,
            last_arrival: None,
            gave_up: false,
            done: false,
            g_delivered: [0; MAX_JOB_GROUPS],
            g_required,
        };
        if c.scheme == ApproxScheme::Atp {
            let total: u64 = job.msgs.iter().map(|m| m.1).sum();
            let req = TransferReq { tag: (id as u64) << 24, ..TransferReq::new(src, dst, total.max(1)) };
            let groups: Vec<GroupSpec> = c
                .groups
                .iter()
                .zip(&self.group_messages)
                .map(|(&(_, msr), &messages)| GroupSpec { messages, msr })
                .collect();
            match ctx.start_job(req, &groups) {
                Ok(f) => {
                    job.flow = Some(f);
                    job.transfers = 1;
                }
                // Validation makes this unreachable (an ATP transport, 1..2^24 messages); a
                // refused job is recorded as lost whole rather than retried.
                Err(_) => job.done = true,
            }
        }
        if required == 0 && c.scheme != ApproxScheme::Atp {
            job.done = true;
        }
        self.jobs.push(job);
        if self.jobs[id].done {
            self.finish(id, ctx);
        } else {
            self.release_messages(id, ctx);
        }
    }

    /// Hand over every message of job `j` that is ready by now; schedule the next.
    fn release_messages(&mut self, j: usize, ctx: &mut AppCtx<'_>) {
        let now = ctx.now();
        let scheme = self.conf.scheme;
        let src = self.conf.senders[self.jobs[j].host];
        loop {
            let job = &mut self.jobs[j];
            if job.done || job.next >= job.msgs.len() {
                break;
            }
            let (ready, bytes) = job.msgs[job.next];
            if ready > now {
                self.due.push(Reverse((ready, Due::Message { job: j })));
                return;
            }
            let k = job.next;
            job.next += 1;
            let tag = (j as u64) << 24 | k as u64;
            match scheme {
                ApproxScheme::Atp => {
                    if let Some(f) = job.flow {
                        let _ = ctx.send_message(f, u16::from(self.group_of[k]), bytes);
                    }
                }
                ApproxScheme::EarlySend | ApproxScheme::SampleSend | ApproxScheme::Udp => {
                    let send = job.sampled.as_ref().is_none_or(|s| s[k]);
                    if send {
                        let req = TransferReq { tag, prio: self.conf.prio, ..TransferReq::new(src, job.dst, bytes) };
                        if let Ok(f) = ctx.start_transfer(req) {
                            job.open.push(f);
                            job.transfers += 1;
                        }
                    }
                }
            }
        }
        // Every message handed over.
        let job = &mut self.jobs[j];
        if job.done {
            return;
        }
        match scheme {
            ApproxScheme::Atp => {
                if let Some(f) = job.flow {
                    let _ = ctx.close(f);
                }
            }
            ApproxScheme::Udp => {
                let deadline = now.saturating_add(self.conf.udp_timeout);
                self.due.push(Reverse((deadline, Due::UdpDeadline { job: j })));
            }
            _ => {}
        }
    }

    /// Job `j` is over: cancel what is left of it, record it, start the host's next.
    fn finish(&mut self, j: usize, ctx: &mut AppCtx<'_>) {
        self.finish_with(j, None, ctx);
    }

    fn finish_with(&mut self, j: usize, atp: Option<JobCounts>, ctx: &mut AppCtx<'_>) {
        let c = &self.conf;
        let job = &mut self.jobs[j];
        job.done = true;
        for f in job.open.drain(..) {
            let _ = ctx.cancel(f);
        }
        let src = c.senders[job.host];
        let n = c.messages;
        let num_groups = c.groups.len().min(MAX_JOB_GROUPS);
        let mut per_group = [GroupCount::default(); MAX_JOB_GROUPS];
        for (g, slot) in per_group.iter_mut().enumerate().take(num_groups) {
            *slot = match atp {
                Some(a) => a.per_group[g],
                None => GroupCount {
                    msr: 0.0,
                    messages: self.group_messages[g],
                    required: job.g_required[g],
                    delivered: job.g_delivered[g],
                },
            };
            slot.msr = c.groups[g].1;
        }
        let (delivered, required) = match atp {
            Some(a) => (a.delivered, a.required),
            None => (job.delivered, job.required),
        };
        // The ideal: a lower bound for any scheme (module docs), the same for every scheme.
        let ideal = (required > 0).then(|| {
            let mut sizes: Vec<u64> = job.msgs.iter().map(|m| m.1).collect();
            sizes.sort_unstable();
            let k = required as usize;
            let smallest: u64 = sizes[..k].iter().sum();
            let whole = ctx.ideal_fct(src, job.dst, smallest.max(1));
            let kth_ready = job.msgs[k - 1].0;
            let last = kth_ready.since(job.start).saturating_add(ctx.ideal_fct(src, job.dst, sizes[0].max(1)));
            whole.max(last)
        });
        let (loss, allowance) = super::worst_group(per_group[..num_groups].iter().copied());
        // UDP's job ends with its last arrival (found once the stragglers' wait is over);
        // every other scheme's when it has what it needs, now.
        let end = match c.scheme {
            ApproxScheme::Udp => job.last_arrival.unwrap_or(job.start).max(job.start),
            _ => ctx.now(),
        };
        ctx.record_unit(UnitRecord {
            app: 0,
            kind: "job",
            unit: j as u64,
            start: job.start,
            end,
            ideal,
            num_transfers: job.transfers,
            bytes: job.msgs.iter().map(|m| m.1).sum(),
            job: Some(JobCounts {
                groups: c.groups.len() as u32,
                per_group,
                messages: n,
                required,
                delivered,
                lost: n - delivered.min(n),
                worst_group_loss: loss,
                worst_group_allowance: allowance,
                gave_up: atp.map_or(job.gave_up, |a| a.gave_up),
            }),
            sent: Some((job.bytes_sent, job.packets_sent, job.packets_retx)),
            dst: Some(job.dst),
            lost_fraction: None,
            src: Some(src),
        });
        // The host's next job.
        let h = job.host;
        if self.started[h] < c.jobs_per_host {
            let at = ctx.now().saturating_add(c.think);
            self.due.push(Reverse((at, Due::Start { host: h })));
        }
        // Free the job's message list (its record is written).
        self.jobs[j].msgs = Vec::new();
        self.jobs[j].sampled = None;
    }
}

impl Application for ApproxJobs {
    fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
        for h in 0..self.conf.senders.len() {
            if self.conf.jobs_per_host > 0 {
                self.due.push(Reverse((self.conf.start, Due::Start { host: h })));
            }
        }
        self.rearm(ctx);
    }

    fn on_timer(&mut self, ctx: &mut AppCtx<'_>) {
        let now = ctx.now();
        while let Some(&Reverse((t, due))) = self.due.peek() {
            if t > now {
                break;
            }
            self.due.pop();
            match due {
                Due::Start { host } => self.start_job(host, ctx),
                Due::Message { job } => self.release_messages(job, ctx),
                Due::UdpDeadline { job } => {
                    if !self.jobs[job].done {
                        self.finish(job, ctx);
                    }
                }
            }
        }
        self.rearm(ctx);
    }

    fn on_transfer_done(&mut self, done: &TransferDone, ctx: &mut AppCtx<'_>) {
        let j = (done.tag >> 24) as usize;
        let Some(job) = self.jobs.get_mut(j) else { return };
        job.bytes_sent += done.bytes_sent;
        job.packets_sent += done.packets_sent;
        job.packets_retx += done.packets_retx;
        if job.done {
            return;
        }
        if Some(done.transfer) == job.flow {
            // The ATP job ended.
            self.finish_with(j, done.job, ctx);
            self.rearm(ctx);
            return;
        }
        job.open.retain(|&f| f != done.transfer);
        match done.outcome {
            Outcome::Complete | Outcome::Enough => {
                job.delivered += 1;
                let k = (done.tag & 0xff_ffff) as usize;
                if let Some(&g) = self.group_of.get(k) {
                    job.g_delivered[g as usize] += 1;
                }
                job.last_arrival = Some(ctx.now());
            }
            Outcome::GivenUp => job.gave_up = true,
            Outcome::Cancelled => {}
        }
        let finished = match self.conf.scheme {
            // Every group has what it needs.
            ApproxScheme::EarlySend | ApproxScheme::SampleSend => {
                job.g_delivered.iter().zip(&job.g_required).all(|(d, r)| d >= r)
            }
            // Every message arrived.
            ApproxScheme::Udp => job.delivered >= self.conf.messages,
            ApproxScheme::Atp => false,
        };
        // A reliable transfer that gave up leaves an ES/SS job short: it ends when nothing
        // more can arrive.
        let stuck = job.open.is_empty() && job.next >= job.msgs.len() && self.conf.scheme != ApproxScheme::Udp;
        if finished || stuck {
            self.finish(j, ctx);
        }
        self.rearm(ctx);
    }

    fn horizon(&self) -> Option<Time> {
        Some(self.conf.start)
    }
}

/// Messages per group of a job of `n` messages with these `shares` (summing to 1): the
/// largest-remainder rounding of `share x n`, so the counts sum to `n` (ties to the lower id).
pub fn group_sizes(shares: &[f64], n: u64) -> Vec<u64> {
    let exact: Vec<f64> = shares.iter().map(|s| s * n as f64).collect();
    let mut sizes: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
    // Each floor drops less than one message, so at most one per group is left to hand out.
    let left = n.saturating_sub(sizes.iter().sum());
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())).then(a.cmp(&b)));
    for &g in order.iter().take(usize::try_from(left).unwrap_or(usize::MAX)) {
        sizes[g] += 1;
    }
    // Shares summing short of 1 (validation refuses them) would leave more: keep the total N.
    if let Some(&g) = order.first() {
        sizes[g] += left.saturating_sub(shares.len() as u64);
    }
    sizes
}

/// The group of each message, interleaved by smooth weighted round robin over the group
/// sizes (every prefix of the job holds each group in proportion; deterministic): one group
/// id per message, `sizes[g]` messages of group `g`.
pub fn assign_groups(sizes: &[u64]) -> Vec<u8> {
    let n: u64 = sizes.iter().sum();
    let mut current = vec![0i128; sizes.len()];
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let mut best = 0;
        for g in 0..sizes.len() {
            current[g] += i128::from(sizes[g]);
            if current[g] > current[best] {
                best = g;
            }
        }
        current[best] -= i128::from(n);
        out.push(best as u8);
    }
    out
}
