//! The ATP sender: one job's messages in groups, sent at the slack-based rate.
//!
//! Pipeline position: wrapped by [`crate::Endpoint`]; call order as for every endpoint (after
//! creation and after every input, drain `poll_transmit`, then `poll_timeout`, then
//! `poll_event`). The application gives the job's groups at creation (§3.3.2: the framework
//! tells ApproxLib the job size N and the MSR before the job starts), then hands over messages
//! as they become ready with [`AtpSender::send_message`] and ends with [`AtpSender::close`].
//!
//! How it runs (each choice where the paper leaves one open is marked CHOICE):
//! - Epochs of one smoothed RTT (§4.2 footnote 2; `init_rtt` before the first sample). Every
//!   data packet carries the epoch it left in; its ACK echoes it.
//! - Per-packet ACKs. A packet not acknowledged one loss timeout after it left (RFC 6298's
//!   `SRTT + 4 RTTVAR`, no lower bound) is lost; losses are detected at epoch ends. CHOICE: the
//!   paper names no loss detector; ATP has no duplicate ACKs or RTO (§4).
//! - A lost packet's message is given up while its group may still lose one (eq. (1)'s
//!   numerator is positive): within the slack a loss is a loss, and ATP resends "if
//!   necessary" (§4.1: it retransmits when the loss is too high for the target; §7.1.1: it
//!   "can retransmit unacknowledged packets if necessary"). Once the group can lose no more,
//!   lost packets go back to the scheduler and MRDF weighs them against new packets (§4.3). A
//!   message given up and then acknowledged whole after all counts as delivered, and its loss
//!   is taken back. `on_loss = Resend` is our variant (not the paper's): every lost packet
//!   goes back to MRDF and a message counts as lost only until it arrives whole; when messages
//!   arrive over time it saves waiting for new ones, but eq. (1)'s target then rises as
//!   messages are delivered instead of falling as they are lost.
//! - At each epoch end, the newest earlier epoch whose packets are all acknowledged or lost
//!   by then is measured (footnote 3: `1 - acked / sent` over its packets) against the TLR it
//!   ran with: eq. (3) if above, eq. (2) if below or if nothing was lost. CHOICE: an epoch is
//!   judged once each of its packets had its loss timeout to be acknowledged (about one
//!   epoch later), rather than by the ACKs that happen to arrive within it, which would count
//!   every packet still in flight as lost. With several groups, eq. (3) applies if any
//!   group's loss is above its target (with the largest such loss), eq. (2) if none is above
//!   and some is below.
//! - R_min is one packet (`mss + header_bytes`) per smoothed RTT (§4.2); packets are paced at
//!   the rate, each `tx_time(len + header_bytes)` after the previous one left.
//! - Every epoch, each group's TLR is recomputed by eq. (1) and its class by §5.2 (switchable
//!   off for the ablations). Data packets carry their group's class; ACKs `ack_prio`.
//! - The job completes once every group has `ceil(MSR x N)` messages delivered
//!   ([`Event::SenderDone`] with [`Outcome::Enough`], or [`Outcome::Complete`] if every message
//!   was); the sender then sends one `Fin` (the receiver's cue to report the messages it does
//!   not have as lost) and nothing more. It gives up ([`Outcome::GivenUp`]) after
//!   `max_silent_epochs` epochs in a row without any ACK, or once closed with a group that can
//!   no longer complete (fewer messages handed over than its N).
//!
//! INVARIANT: a job completes only with `ceil(MSR x N)` messages of every group delivered, so
//! its measured message loss rate is at most `1 - MSR` per group; a group never gives up more
//! than `N - ceil(MSR x N)` messages, so a closed job never gets stuck short of them.
//! INVARIANT: `outstanding` holds the transmissions `front_tx .. next_tx` in order.

use std::collections::VecDeque;

use units::{Bps, Bytes, Dur, Time};
use wire::{AtpKind, AtpRepr, Ecn};

use super::{
    slack_class, AtpConfig, OnLoss, Group, GroupSpec, Mrdf, RateControl, MAX_GROUPS, MAX_JOB_MESSAGES, MAX_MESSAGE_PKTS,
};
use crate::rtt::RttEstimator;
use crate::{Event, Outcome, Stats};

/// R_max until the driver gives the line rate.
const DEFAULT_LINE_RATE: Bps = Bps::from_gbps(10);

/// Why a job or a message was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobError {
    /// No groups, too many, or too many messages in all.
    BadJob(&'static str),
    /// The message names a group the job does not have.
    NoSuchGroup(u16),
    /// The group already has its N messages.
    GroupFull(u16),
    /// Zero bytes, or more than [`MAX_MESSAGE_PKTS`] packets.
    BadSize(u64),
    /// The job is over or closed.
    Closed,
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobError::BadJob(why) => write!(f, "bad job: {why}"),
            JobError::NoSuchGroup(g) => write!(f, "the job has no group {g}"),
            JobError::GroupFull(g) => write!(f, "group {g} already has all its messages"),
            JobError::BadSize(b) => write!(f, "a message of {b} bytes (at least 1, at most {MAX_MESSAGE_PKTS} packets)"),
            JobError::Closed => write!(f, "the job is closed"),
        }
    }
}

impl std::error::Error for JobError {}

/// A message's fate at the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MsgState {
    /// Not whole yet, no packet lost.
    Pending,
    /// Not whole yet, a packet lost and to be resent (counted lost in its group until it
    /// arrives whole).
    Lossy,
    /// Given up: lost within the group's slack, never resent (counted lost unless a late ACK
    /// makes it whole).
    Abandoned,
    Delivered,
}

/// One transmission awaiting its ACK.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    msg: u32,
    pkt: u32,
    sent_at: Time,
    epoch: u32,
    acked: bool,
}

/// One group's packets sent in one epoch, and how many of them were acknowledged or lost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct EpochCount {
    sent: u64,
    acked: u64,
    lost: u64,
}

/// An epoch whose packets are not all resolved yet.
#[derive(Clone, Debug)]
struct EpochRec {
    epoch: u32,
    /// Whether the epoch is over (it sends nothing more).
    ended: bool,
    /// Per group: the target it ran with, and its packets.
    tlr: Vec<f64>,
    count: Vec<EpochCount>,
}

impl EpochRec {
    fn is_resolved(&self) -> bool {
        self.ended && self.count.iter().all(|c| c.acked + c.lost == c.sent)
    }
}

/// One group's state at the end of an epoch (the time series of §7.1.2, Figure 10).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpochLog {
    /// When the epoch ended.
    pub at: Time,
    /// The epoch that ended.
    pub epoch: u32,
    /// The group.
    pub group: u16,
    /// Loss rate measured over the previous epoch's packets (footnote 3), if it sent any.
    pub loss: Option<f64>,
    /// The target it was compared with.
    pub tlr: f64,
    /// The rate after the epoch's decision, bits per second.
    pub rate_bps: f64,
    /// The group's class for the next epoch.
    pub class: u8,
    /// The group's messages delivered by then.
    pub delivered: u64,
    /// The group's messages given up by then.
    pub lost: u64,
    /// The group's TLR for the next epoch (eq. (1) from `delivered` and `lost`, or TLR_0).
    pub next_tlr: f64,
}

/// One group's outcome so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GroupReport {
    /// N.
    pub messages: u64,
    /// `ceil(MSR x N)`.
    pub required: u64,
    /// Messages handed over by the application.
    pub pushed: u64,
    /// Messages delivered (all packets acknowledged).
    pub delivered: u64,
    /// Messages given up.
    pub lost: u64,
}

/// The sending side of an ATP job. See the module docs.
#[derive(Debug)]
pub struct AtpSender {
    conn: u32,
    mss: u32,
    header_bytes: u32,
    pacing_burst_bytes: u64,
    classes: u8,
    ack_prio: u8,
    rate_control: bool,
    dynamic_tlr: bool,
    dynamic_prio: bool,
    max_silent_epochs: u32,
    init_rtt: Dur,
    /// Eq. (2)'s `m`.
    m: f64,
    /// Give lost messages up while the slack lasts (the paper), else resend them all.
    give_up: bool,
    fixed_rate: bool,
    /// A stream: the one group's N grows with every message handed over, and the job may
    /// complete only once closed.
    stream: bool,
    groups: Vec<Group>,
    /// Per group: the TLR of the current epoch (TLR_0 throughout without `dynamic_tlr`), and
    /// the class.
    tlr: Vec<f64>,
    class: Vec<u8>,
    pushed: Vec<u64>,
    msg_group: Vec<u16>,
    msg_state: Vec<MsgState>,
    sched: Mrdf,
    outstanding: VecDeque<InFlight>,
    front_tx: u64,
    next_tx: u64,
    epoch: u32,
    /// End of the current epoch; `None` while idle (nothing to send or in flight).
    epoch_end: Option<Time>,
    /// Epochs whose packets are not all acknowledged or lost yet, oldest first; the last is
    /// the current one while epochs run.
    epochs: VecDeque<EpochRec>,
    rc: RateControl,
    rtt: RttEstimator,
    next_send_at: Time,
    closed: bool,
    finished: bool,
    fin_due: bool,
    silent_epochs: u32,
    /// Group 0's loss rate measured at the last epoch end.
    last_loss: Option<f64>,
    event: Option<Event>,
    stats: Stats,
    log: Option<Vec<EpochLog>>,
}

impl AtpSender {
    /// A job of the given groups (group `g` is `groups[g]`) on connection `conn`, starting at
    /// `now`, with no message yet.
    pub fn job(cfg: &AtpConfig, conn: u32, groups: &[GroupSpec], now: Time) -> Result<AtpSender, JobError> {
        if groups.is_empty() || groups.len() > MAX_GROUPS {
            return Err(JobError::BadJob("a job has 1 to 1024 groups"));
        }
        let total = groups.iter().try_fold(0u64, |acc, g| acc.checked_add(g.messages));
        if !total.is_some_and(|t| (1..=MAX_JOB_MESSAGES).contains(&t)) {
            return Err(JobError::BadJob("a job has 1 to 2^24 messages"));
        }
        if groups.iter().any(|g| !(0.0..=1.0).contains(&g.msr)) {
            return Err(JobError::BadJob("an MSR is in [0, 1]"));
        }
        let groups: Vec<Group> = groups.iter().map(|&g| Group::new(g)).collect();
        let classes = cfg.classes.max(1);
        let tlr0: Vec<f64> = groups.iter().map(Group::tlr).collect();
        let class = groups.iter().map(|g| g.priority(classes)).collect();
        let r_max = cfg.rate.unwrap_or(DEFAULT_LINE_RATE).get() as f64;
        let n = groups.len();
        let init_rtt = cfg.init_rtt.max(Dur::from_ns(1));
        let mut s = AtpSender {
            conn,
            mss: cfg.mss.max(1),
            header_bytes: cfg.header_bytes,
            pacing_burst_bytes: cfg.pacing_burst_bytes,
            classes,
            ack_prio: cfg.ack_prio,
            rate_control: cfg.rate_control,
            dynamic_tlr: cfg.dynamic_tlr,
            dynamic_prio: cfg.dynamic_prio,
            max_silent_epochs: cfg.max_silent_epochs.max(1),
            init_rtt,
            m: cfg.m,
            give_up: cfg.on_loss == OnLoss::GiveUp,
            fixed_rate: cfg.rate.is_some(),
            stream: false,
            tlr: tlr0,
            class,
            pushed: vec![0; n],
            groups,
            msg_group: Vec::new(),
            msg_state: Vec::new(),
            sched: Mrdf::with_mode(cfg.sched),
            outstanding: VecDeque::new(),
            front_tx: 0,
            next_tx: 0,
            epoch: 0,
            epoch_end: None,
            epochs: VecDeque::new(),
            rc: RateControl::new(r_max, 0.0, cfg.m),
            rtt: {
                let max = Dur::from_ms(1000);
                let min = cfg.min_loss_timeout.min(max);
                RttEstimator::new(Dur(init_rtt.ps().saturating_mul(2)).max(min), min, max)
            },
            next_send_at: now,
            closed: false,
            finished: false,
            fin_due: false,
            silent_epochs: 0,
            last_loss: None,
            event: None,
            stats: Stats::default(),
            log: None,
        };
        s.rc.set_r_min(s.r_min_bps());
        // A job whose groups need nothing is complete at once.
        s.check_complete();
        Ok(s)
    }

    /// A plain transfer of `size` bytes: one group of `ceil(size / message_bytes)` messages
    /// with the config's MSR, all handed over at once, then closed.
    pub fn transfer(cfg: &AtpConfig, conn: u32, size: Bytes, now: Time) -> AtpSender {
        let mb = cfg.message_bytes.max(1);
        let size = size.get().max(1);
        let n = size.div_ceil(mb);
        // A transfer too large for 2^24 messages gets bigger messages.
        let (n, mb) = if n > MAX_JOB_MESSAGES { (MAX_JOB_MESSAGES, size.div_ceil(MAX_JOB_MESSAGES)) } else { (n, mb) };
        let spec = GroupSpec { messages: n, msr: cfg.msr.clamp(0.0, 1.0) };
        let mut s = AtpSender::job(cfg, conn, &[spec], now).expect("one group of 1..2^24 messages");
        let mut left = size;
        while left > 0 {
            let b = left.min(mb);
            if s.send_message(0, b).is_err() {
                break;
            }
            left -= b;
        }
        s.close();
        s
    }

    /// An open stream: each [`AtpSender::send_message`] into group 0 adds a message to a job
    /// of one group with the config's MSR, whose N is the number of messages handed over when
    /// it is closed (its targets meanwhile count only those handed over so far).
    pub fn stream(cfg: &AtpConfig, conn: u32, now: Time) -> AtpSender {
        let spec = GroupSpec { messages: 0, msr: cfg.msr.clamp(0.0, 1.0) };
        let mut s = AtpSender::job(cfg, conn, &[GroupSpec { messages: 1, ..spec }], now).expect("one group");
        s.groups[0] = Group::new(spec);
        s.stream = true;
        s.finished = false;
        s.event = None;
        s.fin_due = false;
        s
    }

    /// R_max: the NIC's line rate, unless the config fixes the rate.
    pub fn set_line_rate(&mut self, rate: Bps) {
        if !self.fixed_rate && rate.get() > 0 {
            self.rc.set_r_max(rate.get() as f64);
            self.rc.set_r_min(self.r_min_bps());
            if self.next_tx == 0 {
                // Not started yet: start at R_max (§4.2).
                self.rc = RateControl::new(rate.get() as f64, self.r_min_bps(), self.m);
            }
        }
    }

    /// Keep a log of every epoch's decision per group ([`AtpSender::take_log`]).
    pub fn record_epochs(&mut self, on: bool) {
        self.log = on.then(Vec::new);
    }

    /// The epochs logged since the last call.
    pub fn take_log(&mut self) -> Vec<EpochLog> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Input from the application: a message of `bytes` in group `group` is ready. Returns its
    /// id (ids count from 0 in the order messages are handed over).
    pub fn send_message(&mut self, group: u16, bytes: u64) -> Result<u32, JobError> {
        if self.closed || self.finished {
            return Err(JobError::Closed);
        }
        let g = group as usize;
        let Some(spec) = self.groups.get(g).map(Group::spec) else { return Err(JobError::NoSuchGroup(group)) };
        if self.stream && spec.messages < MAX_JOB_MESSAGES {
            self.groups[g].grow();
        } else if self.pushed[g] >= spec.messages {
            return Err(JobError::GroupFull(group));
        }
        let pkts = bytes.div_ceil(u64::from(self.mss));
        if bytes == 0 || pkts > u64::from(MAX_MESSAGE_PKTS) {
            return Err(JobError::BadSize(bytes));
        }
        let mss = u64::from(self.mss);
        let sizes: Vec<u32> = (0..pkts).map(|k| (bytes - k * mss).min(mss) as u32).collect();
        let id = self.sched.push(sizes);
        self.pushed[g] += 1;
        self.msg_group.push(group);
        self.msg_state.push(MsgState::Pending);
        Ok(id)
    }

    /// Input from the application: no more messages. Idempotent.
    pub fn close(&mut self) {
        self.closed = true;
        self.check_complete();
        self.check_stuck();
    }

    /// Each group's outcome so far.
    pub fn report(&self) -> Vec<GroupReport> {
        self.groups
            .iter()
            .zip(&self.pushed)
            .map(|(g, &pushed)| GroupReport {
                messages: g.spec().messages,
                required: g.required(),
                pushed,
                delivered: g.delivered(),
                lost: g.lost(),
            })
            .collect()
    }

    /// The current sending rate in bits per second.
    pub fn rate_bps(&self) -> f64 {
        if self.rate_control {
            self.rc.rate_bps()
        } else {
            self.rc.r_max_bps()
        }
    }

    /// Group `g`'s current target loss rate and class.
    pub fn group_state(&self, g: u16) -> Option<(f64, u8)> {
        Some((*self.tlr.get(g as usize)?, self.class[g as usize]))
    }

    /// Group 0's loss rate as measured at the last epoch end that had packets to measure.
    pub fn last_loss(&self) -> Option<f64> {
        self.last_loss
    }

    /// The current epoch number.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    fn epoch_len(&self) -> Dur {
        self.rtt.srtt().unwrap_or(self.init_rtt).max(Dur::from_ns(1))
    }

    /// One full packet per smoothed RTT (§4.2).
    fn r_min_bps(&self) -> f64 {
        let bits = f64::from(self.mss + self.header_bytes) * 8.0;
        bits / (self.epoch_len().ps() as f64 * 1e-12)
    }

    /// Input: a packet from the receiver arrived at `now`.
    pub fn handle_segment(&mut self, now: Time, a: &AtpRepr) {
        if self.finished || a.kind != AtpKind::Ack || a.conn != self.conn {
            return;
        }
        let in_window = a.seq >= self.front_tx && a.seq < self.next_tx;
        let (msg, pkt, epoch) = if in_window {
            let e = &mut self.outstanding[(a.seq - self.front_tx) as usize];
            if e.acked {
                return; // a duplicate
            }
            e.acked = true;
            self.rtt.on_sample(now.since(e.sent_at));
            (e.msg, e.pkt, e.epoch)
        } else if a.seq < self.front_tx && self.sched.packet_bytes(a.msg, a.pkt).is_some() {
            // A late ACK of a packet already counted lost: it still proves delivery.
            (a.msg, a.pkt, a.epoch)
        } else {
            return;
        };
        if a.ece {
            self.stats.num_ecn += 1;
        }
        self.silent_epochs = 0;
        let g = self.msg_group[msg as usize] as usize;
        if in_window {
            if let Some(c) = self.epoch_count(epoch, g) {
                c.acked += 1;
            }
        }
        if self.sched.on_ack(msg, pkt) {
            match self.msg_state[msg as usize] {
                MsgState::Pending => self.groups[g].on_delivered(),
                MsgState::Lossy | MsgState::Abandoned => self.groups[g].on_recovered(),
                MsgState::Delivered => return,
            }
            self.msg_state[msg as usize] = MsgState::Delivered;
            self.check_complete();
        }
    }

    /// Input: time passed. Ends the epoch if it is due; a no-op otherwise.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.finished {
            return;
        }
        if self.epoch_end.is_some_and(|t| now >= t) {
            self.end_epoch(now);
        }
    }

    fn end_epoch(&mut self, now: Time) {
        if let Some(r) = self.epochs.back_mut().filter(|r| r.epoch == self.epoch) {
            r.ended = true;
        }
        // Loss detection: what has had one loss timeout to be acknowledged and was not.
        let timeout = self.rtt.rto();
        while let Some(&e) = self.outstanding.front() {
            if !e.acked && e.sent_at + timeout > now {
                break;
            }
            self.outstanding.pop_front();
            self.front_tx += 1;
            if !e.acked {
                let g = self.msg_group[e.msg as usize] as usize;
                if let Some(c) = self.epoch_count(e.epoch, g) {
                    c.lost += 1;
                }
                self.on_packet_lost(e.msg, e.pkt);
            }
        }
        // The newest epoch whose packets are now all acknowledged or lost is the measurement
        // (footnote 3); older ones resolved at the same time are superseded by it.
        let mut measured: Option<EpochRec> = None;
        while self.epochs.front().is_some_and(EpochRec::is_resolved) {
            let r = self.epochs.pop_front().expect("checked");
            if r.count.iter().any(|c| c.sent > 0) {
                let (sent, acked) = r.count.iter().fold((0, 0), |(s, a), c| (s + c.sent, a + c.acked));
                self.silent_epochs = if sent > 0 && acked == 0 { self.silent_epochs + 1 } else { 0 };
                measured = Some(r);
            }
        }
        // Eqs. (2)-(3) against that epoch's targets (module docs for several groups).
        // CHOICE: an epoch without any loss also increases the rate (eq. (2)), even with a
        // target of 0: else a reliable group (MSR = 1), or one whose slack is spent, could
        // never speed up again after eq. (3).
        if let Some(r) = &measured {
            let mut worst_above: Option<f64> = None;
            let mut any_below = false;
            for (c, &tlr) in r.count.iter().zip(&r.tlr) {
                let Some(rho) = RateControl::loss_rate(c.sent, c.acked) else { continue };
                if rho > tlr {
                    worst_above = Some(worst_above.map_or(rho, |w: f64| w.max(rho)));
                } else if rho < tlr || rho == 0.0 {
                    any_below = true;
                }
            }
            if let Some(rho) = worst_above {
                self.rc.decrease(rho);
            } else if any_below {
                self.rc.increase();
            }
            self.last_loss = RateControl::loss_rate(r.count[0].sent, r.count[0].acked).or(self.last_loss);
        }
        // Eq. (1) and §5.2 for the next epoch.
        for (g, group) in self.groups.iter().enumerate() {
            if self.dynamic_tlr {
                self.tlr[g] = group.tlr();
            }
            if self.dynamic_prio {
                self.class[g] = slack_class(self.tlr[g], group.may_lose_another(), self.classes);
            }
        }
        if let Some(log) = self.log.as_mut() {
            for g in 0..self.groups.len() {
                let m = measured.as_ref().map(|r| (r.count[g], r.tlr[g]));
                log.push(EpochLog {
                    at: now,
                    epoch: self.epoch,
                    group: g as u16,
                    loss: m.and_then(|(c, _)| RateControl::loss_rate(c.sent, c.acked)),
                    tlr: m.map_or(f64::NAN, |(_, t)| t),
                    rate_bps: if self.rate_control { self.rc.rate_bps() } else { self.rc.r_max_bps() },
                    class: self.class[g],
                    delivered: self.groups[g].delivered(),
                    lost: self.groups[g].lost(),
                    next_tlr: self.tlr[g],
                });
            }
        }
        self.epoch = self.epoch.wrapping_add(1);
        self.rc.set_r_min(self.r_min_bps());
        if self.silent_epochs >= self.max_silent_epochs {
            self.finish(Outcome::GivenUp);
            return;
        }
        if !self.outstanding.is_empty() || self.sched.has_sendable() {
            self.open_epoch(now);
        } else {
            self.epoch_end = None;
        }
        self.check_stuck();
    }

    /// Start epoch `self.epoch` now, with the current targets.
    fn open_epoch(&mut self, now: Time) {
        self.epoch_end = Some(now + self.epoch_len());
        let n = self.groups.len();
        self.epochs.push_back(EpochRec { epoch: self.epoch, ended: false, tlr: self.tlr.clone(), count: vec![EpochCount::default(); n] });
    }

    /// Group `g`'s counts in epoch `epoch`, if that epoch is not resolved yet.
    fn epoch_count(&mut self, epoch: u32, g: usize) -> Option<&mut EpochCount> {
        let first = self.epochs.front()?.epoch;
        let r = self.epochs.get_mut(epoch.wrapping_sub(first) as usize)?;
        debug_assert_eq!(r.epoch, epoch);
        r.count.get_mut(g)
    }

    /// Packet `pkt` of message `msg` is lost: the message counts as lost in eq. (1) until it
    /// arrives whole, and the packet may be sent again, when the scheduler picks it.
    fn on_packet_lost(&mut self, msg: u32, pkt: u32) {
        let g = self.msg_group[msg as usize] as usize;
        match self.msg_state[msg as usize] {
            MsgState::Delivered | MsgState::Abandoned => return,
            MsgState::Pending if self.give_up && self.groups[g].give_up() => {
                // §4.1: within the slack a lost message is lost; ATP resends only when the
                // group can lose no more (eq. (1)'s numerator is 0).
                self.msg_state[msg as usize] = MsgState::Abandoned;
                self.sched.abandon(msg);
                return;
            }
            MsgState::Pending => {
                self.msg_state[msg as usize] = MsgState::Lossy;
                self.groups[g].mark_lost();
            }
            MsgState::Lossy => {}
        }
        self.sched.on_lost(msg, pkt);
    }

    fn check_complete(&mut self) {
        if !self.finished && (!self.stream || self.closed) && self.groups.iter().all(Group::is_complete) {
            let all = self.groups.iter().all(|g| g.delivered() == g.spec().messages);
            self.fin_due = true;
            self.finish(if all { Outcome::Complete } else { Outcome::Enough });
        }
    }

    /// Closed, nothing left to send or wait for, and still incomplete: give up.
    fn check_stuck(&mut self) {
        if self.closed && !self.finished && self.outstanding.is_empty() && !self.sched.has_sendable() {
            self.finish(Outcome::GivenUp);
        }
    }

    fn finish(&mut self, outcome: Outcome) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.epoch_end = None;
        self.outstanding.clear();
        self.epochs.clear();
        self.event = Some(Event::SenderDone { outcome, confirmed: outcome != Outcome::GivenUp });
    }

    /// Output: the next packet to send now, if any (paced at the current rate).
    pub fn poll_transmit(&mut self, now: Time) -> Option<AtpRepr> {
        if self.finished {
            if !std::mem::take(&mut self.fin_due) {
                return None;
            }
            let total: u64 = self.groups.iter().map(|g| g.spec().messages).sum();
            return Some(AtpRepr {
                kind: AtpKind::Fin,
                conn: self.conn,
                seq: total,
                prio: self.ack_prio,
                ts_ps: now.ps(),
                ..AtpRepr::default()
            });
        }
        if now < self.next_send_at {
            return None;
        }
        let (msg, pkt, retx) = self.sched.next_packet_retx()?;
        let len = self.sched.packet_bytes(msg, pkt).unwrap_or(0);
        let g = self.msg_group[msg as usize];
        let tx = self.next_tx;
        self.next_tx += 1;
        if self.epoch_end.is_none() {
            self.open_epoch(now);
        }
        if let Some(c) = self.epoch_count(self.epoch, g as usize) {
            c.sent += 1;
        }
        self.outstanding.push_back(InFlight { msg, pkt, sent_at: now, epoch: self.epoch, acked: false });
        let rate = Bps((self.rate_bps().max(1.0)) as u64);
        // Paced from when this packet was due, or from now less the burst a late poll may
        // catch up (0 by default: from now, packet by packet).
        let behind = rate.tx_time(Bytes(self.pacing_burst_bytes));
        let base = self.next_send_at.max(Time::from_ps(now.ps().saturating_sub(behind.ps())));
        self.next_send_at = base + rate.tx_time(Bytes(u64::from(len + self.header_bytes)));
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += u64::from(len);
        if retx {
            self.stats.segments_retx += 1;
        }
        Some(AtpRepr {
            kind: AtpKind::Data,
            conn: self.conn,
            seq: tx,
            msg,
            pkt,
            pkts: self.sched.num_packets(msg),
            group: g,
            epoch: self.epoch,
            len,
            ece: false,
            ecn: Ecn::NotEct,
            prio: self.class[g as usize],
            ts_ps: now.ps(),
        })
    }

    /// Output: when `handle_timeout` must next be called, if ever: the epoch's end, or the
    /// next paced send.
    pub fn poll_timeout(&self) -> Option<Time> {
        if self.finished {
            return None;
        }
        let pace = self.sched.has_sendable().then_some(self.next_send_at);
        match (self.epoch_end, pace) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Output: the next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.event.take()
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        Stats { srtt_ps: self.rtt.srtt().map_or(0, Dur::ps), ..self.stats }
    }
}
