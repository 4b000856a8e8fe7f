//! Applications: the traffic that lives on the simulated hosts and reacts to the network.
//!
//! Pipeline position: `spec -> app (built from the scenario's workload entries) -> world`.
//! An application is sans-I/O, like a `proto` endpoint: the world hands it typed
//! notifications with the current time ([`Application::on_start`], [`Application::on_timer`],
//! [`Application::on_transfer_done`]) and a small context ([`AppCtx`]) into which it pushes
//! commands: start a transfer, sleep until a time (a compute phase, the next arrival), record a
//! completed application-level unit (an iteration, a job, a coflow). It never touches links,
//! queues or endpoints, so the same logic could drive the real transport.
//!
//! Built-in applications (one file each): the open-loop generators of today's workloads
//! (`open_loop`: Poisson arrivals, incast queries, flow lists and inline flows, each keeping
//! one pending arrival per source so that memory follows what is in flight), and three small
//! reactive ones that show the shapes the coming systems need: `closed_loop` (the next transfer
//! starts when the previous one is delivered), `barrier` (rounds of N transfers, the next
//! after the last one finishes plus a compute delay: a training iteration or a shuffle) and
//! `relay` (a host forwards a block once it has it: a chain broadcast).
//!
//! Call order (enforced by the world): `on_start` once at time zero, then `on_timer` whenever
//! the time set by the last [`AppCtx::sleep_until`] is reached, and `on_transfer_done` once per
//! transfer the application started, when the transfer ends. Transfers started within one
//! callback start in the order they were asked for, and ties between applications at the same
//! instant go in application order (the scenario's workload order).
//!
//! CORRECTNESS: every transfer an application starts has `src != dst`, both hosts exist,
//! `1 <= size <= MAX_TRANSFER_BYTES` and a rate cap, if any, within the rates a scenario may
//! give (`spec::limits`); [`AppCtx::start_transfer`] checks this and refuses anything else with an
//! [`AppError`], so no application can make the world panic.

use proto::atp::{GroupSpec, MAX_GROUPS, MAX_JOB_MESSAGES};
use units::{AppId, Bps, Dur, FlowId, Time};

use crate::spec::limits::{MAX_RATE_BPS, MAX_TRANSFER_BYTES, MIN_RATE_BPS};

pub mod approx_jobs;
pub mod barrier;
pub mod closed_loop;
pub mod open_loop;
pub mod relay;
pub mod training;

pub use approx_jobs::{ApproxJobs, ApproxJobsConf, ApproxScheme, Receivers};
pub use barrier::Barrier;
pub use closed_loop::ClosedLoop;
pub use open_loop::{IncastGen, ListGen, PoissonGen, PrioSchedule};
pub use proto::Outcome;
pub use relay::Relay;
pub use training::{SyncPattern, Training, TrainingConf};

/// A transfer an application asks for: `size` bytes from host `src` to host `dst`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransferReq {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Bytes to deliver (at least 1).
    pub size: u64,
    /// Priority class (switch queue index; 0 is the highest).
    pub prio: u8,
    /// Sending-rate cap enforced at the sender, if any.
    pub rate_cap: Option<Bps>,
    /// The application's own tag, handed back in [`TransferDone`].
    pub tag: u64,
    /// Id to report in the per-flow records instead of the transfer's index (flow-list ids).
    pub label: Option<u64>,
    /// Marks the transfer as part of an incast query in the records.
    pub incast: bool,
    /// The run's transport to use, by index (0: the scenario's `[transport]`, then each
    /// workload entry's own, in order). Absent: the application's own.
    pub transport: Option<u16>,
    /// Set by [`AppCtx::start_job`] (the job's groups, by index into the callback's jobs);
    /// [`AppCtx::start_transfer`] clears whatever else is given.
    pub job: Option<u32>,
}

impl TransferReq {
    /// A transfer of `size` bytes from `src` to `dst` in class 0 without a cap or tag.
    pub fn new(src: u32, dst: u32, size: u64) -> TransferReq {
        TransferReq {
            src,
            dst,
            size,
            prio: 0,
            rate_cap: None,
            tag: 0,
            label: None,
            incast: false,
            transport: None,
            job: None,
        }
    }
}

/// How a transfer ended, as told to the application that started it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransferDone {
    /// The transfer.
    pub transfer: FlowId,
    /// The tag it was started with.
    pub tag: u64,
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Bytes asked for.
    pub size: u64,
    /// When it started.
    pub start: Time,
    /// Distinct payload bytes the receiver got.
    pub delivered: u64,
    /// All delivered, enough delivered (a loss-tolerant transport), or given up.
    pub outcome: Outcome,
    /// Payload bytes the sender put on the wire, retransmissions included.
    pub bytes_sent: u64,
    /// Packets the sender put on the wire, retransmissions included.
    pub packets_sent: u64,
    /// Of which retransmissions.
    pub packets_retx: u64,
    /// An ATP job's messages, totalled over its groups (`None` for other transfers).
    pub job: Option<JobCounts>,
}

/// The most groups a NetApprox job of the simulator reports one by one ([`JobCounts::per_group`]).
pub const MAX_JOB_GROUPS: usize = 8;

/// One group of a NetApprox job when it ended.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GroupCount {
    /// The group's MSR (set by the application; NaN where it did not).
    pub msr: f64,
    /// Its messages (N).
    pub messages: u64,
    /// Messages it needed (`ceil(MSR x N)`).
    pub required: u64,
    /// Messages delivered.
    pub delivered: u64,
}

impl GroupCount {
    /// The group's measured loss rate `1 - delivered / N` and its allowance `1 - required / N`
    /// (`(0, 1)` for a group without messages).
    pub fn loss_and_allowance(&self) -> (f64, f64) {
        if self.messages == 0 {
            return (0.0, 1.0);
        }
        let of = |x: u64| x.min(self.messages) as f64 / self.messages as f64;
        (1.0 - of(self.delivered), 1.0 - of(self.required))
    }
}

/// The worst of `groups`, the one whose loss rate exceeds its allowance the most, as
/// `(loss, allowance)`; `(0, 1)` without groups.
pub fn worst_group(groups: impl IntoIterator<Item = GroupCount>) -> (f64, f64) {
    let (mut loss, mut allowance) = (0.0, 1.0);
    for g in groups {
        let (l, a) = g.loss_and_allowance();
        if l - a > loss - allowance {
            (loss, allowance) = (l, a);
        }
    }
    (loss, allowance)
}

/// An ATP job's messages when it ended, totalled over its groups.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JobCounts {
    /// Groups.
    pub groups: u32,
    /// The first `min(groups, MAX_JOB_GROUPS)` groups one by one, in group-id order.
    pub per_group: [GroupCount; MAX_JOB_GROUPS],
    /// Messages (N summed over groups).
    pub messages: u64,
    /// Messages that had to be delivered (`ceil(MSR x N)` summed over groups).
    pub required: u64,
    /// Messages delivered (acknowledged whole).
    pub delivered: u64,
    /// Messages given up.
    pub lost: u64,
    /// The largest message loss rate of any group, `1 - delivered / N`.
    pub worst_group_loss: f64,
    /// That group's allowance, `1 - MSR` (the bound its loss rate must stay within).
    pub worst_group_allowance: f64,
    /// The job ended without what it needed: its transport gave up (ATP after
    /// `max_silent_epochs` without an ACK; a reliable transfer after `max_retries`).
    pub gave_up: bool,
}

/// A command about a transfer already started (see [`AppCtx`]), carried out after the
/// callback's starts, in the order given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Op {
    /// An ATP job's message is ready.
    Message { flow: FlowId, group: u16, bytes: u64 },
    /// No more messages (or stream data) for this transfer.
    Close(FlowId),
    /// Stop the transfer now; it ends with outcome `cancelled` and no notification.
    Cancel(FlowId),
}

/// The most transfers one run may start: transfer ids are `u32`, and a transport timer's
/// event names `2 x transfer + side` in a `u32`.
pub const MAX_TRANSFERS: u64 = (1 << 31) - 1;

/// A refused command.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AppError {
    /// A transfer names a host that does not exist, the same host at both ends, or no bytes.
    #[error("application {app}: bad transfer {src} -> {dst} of {size} bytes: {why}")]
    BadTransfer {
        /// The application.
        app: u32,
        /// Source host.
        src: u32,
        /// Destination host.
        dst: u32,
        /// Size asked for.
        size: u64,
        /// What is wrong.
        why: &'static str,
    },
    /// A job its transport or ATP cannot carry.
    #[error("application {app}: bad job: {why}")]
    BadJob {
        /// The application.
        app: u32,
        /// What is wrong.
        why: &'static str,
    },
    /// A command names a transfer this callback cannot know.
    #[error("application {app}: no transfer {flow} to {what}")]
    NoSuchTransfer {
        /// The application.
        app: u32,
        /// The transfer.
        flow: u32,
        /// What was asked.
        what: &'static str,
    },
    /// The run has started [`MAX_TRANSFERS`] transfers already.
    #[error("application {app}: the run already has {MAX_TRANSFERS} transfers, the most one run can hold")]
    TooManyTransfers {
        /// The application.
        app: u32,
    },
}

/// One completed application-level unit (a job, an iteration, a round, a coflow, a block
/// relayed along a chain): the second results table beside the per-flow records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitRecord {
    /// The application.
    pub app: u32,
    /// What the unit is (`"round"`, `"iteration"`, `"block"`, ...).
    pub kind: &'static str,
    /// The unit's index within its application.
    pub unit: u64,
    /// When it started.
    pub start: Time,
    /// When it completed.
    pub end: Time,
    /// Its completion time alone in the network, where one is defined (see each application).
    pub ideal: Option<Dur>,
    /// Transfers it was made of.
    pub num_transfers: u32,
    /// Bytes those transfers carried.
    pub bytes: u64,
    /// A NetApprox job's messages (N, required, delivered, lost, worst group), if it is one.
    pub job: Option<JobCounts>,
    /// Payload bytes, packets and retransmitted packets its transfers sent, where known.
    pub sent: Option<(u64, u64, u64)>,
    /// Its sending host, where it has one.
    pub src: Option<u32>,
    /// Its receiving host, where it has one.
    pub dst: Option<u32>,
    /// The largest fraction of any one of its transfers' bytes that did not arrive (what a
    /// loss-tolerant transport left out), where the application tracks it; reported as the
    /// unit's `loss_rate` when it is not a NetApprox job.
    pub lost_fraction: Option<f64>,
}

/// The contention-free completion time of a transfer (the closed form of `ideal`), for
/// applications that report the ideal of their units.
pub trait IdealFct {
    /// FCT of `size` bytes from `src` to `dst` alone in the network.
    fn ideal_fct(&self, src: u32, dst: u32, size: u64) -> Dur;
    /// Line rate of host `h`'s link into the network (and out of it: links are symmetric in
    /// the topologies built here).
    fn host_rate(&self, h: u32) -> Bps;
}

/// What an application may do during a callback. Commands take effect when the callback
/// returns, in the order they were given.
pub struct AppCtx<'a> {
    pub(crate) app: AppId,
    pub(crate) now: Time,
    pub(crate) num_hosts: u32,
    pub(crate) num_transports: u16,
    /// The application's own transport index.
    pub(crate) own_transport: u16,
    pub(crate) next_transfer: u32,
    pub(crate) starts: &'a mut Vec<TransferReq>,
    pub(crate) jobs: &'a mut Vec<Vec<GroupSpec>>,
    pub(crate) ops: &'a mut Vec<Op>,
    /// Per transport of the run: whether it is ATP (carries jobs).
    pub(crate) is_atp: &'a [bool],
    pub(crate) wake: &'a mut Option<Time>,
    pub(crate) units: &'a mut Vec<UnitRecord>,
    pub(crate) ideal: &'a dyn IdealFct,
}

impl std::fmt::Debug for AppCtx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppCtx").field("app", &self.app).field("now", &self.now).finish_non_exhaustive()
    }
}

impl AppCtx<'_> {
    /// The current simulated time.
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// This application's id.
    #[inline]
    pub fn app(&self) -> AppId {
        self.app
    }

    /// Hosts in the network (`0..num_hosts`).
    #[inline]
    pub fn num_hosts(&self) -> u32 {
        self.num_hosts
    }

    /// Start a transfer now; returns its id (also the row of its per-flow record).
    pub fn start_transfer(&mut self, req: TransferReq) -> Result<FlowId, AppError> {
        let bad = |why| AppError::BadTransfer { app: self.app.0, src: req.src, dst: req.dst, size: req.size, why };
        if req.src >= self.num_hosts || req.dst >= self.num_hosts {
            return Err(bad("no such host"));
        }
        if req.src == req.dst {
            return Err(bad("source and destination are the same host"));
        }
        if req.size == 0 {
            return Err(bad("a transfer carries at least one byte"));
        }
        if req.size > MAX_TRANSFER_BYTES {
            return Err(bad("a transfer carries at most spec::limits::MAX_TRANSFER_BYTES (1 TB)"));
        }
        if req.rate_cap.is_some_and(|r| !(MIN_RATE_BPS..=MAX_RATE_BPS).contains(&r.get())) {
            return Err(bad("a rate cap must be between 1 Mb/s and 100 Tb/s (spec::limits)"));
        }
        if req.transport.is_some_and(|t| t >= self.num_transports) {
            return Err(bad("no such transport in this run"));
        }
        let next = u64::from(self.next_transfer) + self.starts.len() as u64;
        if next >= MAX_TRANSFERS {
            return Err(AppError::TooManyTransfers { app: self.app.0 });
        }
        self.starts.push(TransferReq { job: None, ..req });
        // CORRECTNESS: next < 2^31, so the id fits.
        Ok(FlowId(next as u32))
    }

    /// Start an ATP job now, from `req.src` to `req.dst`, of these groups (`groups[g]` is
    /// group `g`), with no message yet: hand messages over with [`AppCtx::send_message`] as
    /// they become ready and end with [`AppCtx::close`]. `req.size` is what the records show
    /// as the transfer's size (the job's bytes, if known). The request's transport (or the
    /// application's) must be ATP. The transfer ends when every group has `ceil(MSR x N)`
    /// messages delivered (outcome `enough`, or `complete` if all were).
    pub fn start_job(&mut self, req: TransferReq, groups: &[GroupSpec]) -> Result<FlowId, AppError> {
        let bad = |why| AppError::BadJob { app: self.app.0, why };
        let tr = req.transport.unwrap_or(self.own_transport);
        if !self.is_atp.get(tr as usize).copied().unwrap_or(false) {
            return Err(bad("a job needs an ATP transport (kind = \"atp\")"));
        }
        if groups.is_empty() || groups.len() > MAX_GROUPS {
            return Err(bad("a job has 1 to 1024 groups"));
        }
        let total = groups.iter().try_fold(0u64, |a, g| a.checked_add(g.messages));
        if !total.is_some_and(|t| (1..=MAX_JOB_MESSAGES).contains(&t)) {
            return Err(bad("a job has 1 to 2^24 messages"));
        }
        if groups.iter().any(|g| !(0.0..=1.0).contains(&g.msr)) {
            return Err(bad("an MSR is in [0, 1]"));
        }
        let id = self.start_transfer(req)?;
        if let Some(r) = self.starts.last_mut() {
            r.job = Some(self.jobs.len() as u32);
        }
        self.jobs.push(groups.to_vec());
        Ok(id)
    }

    fn known(&self, flow: FlowId, what: &'static str) -> Result<(), AppError> {
        let next = u64::from(self.next_transfer) + self.starts.len() as u64;
        if u64::from(flow.0) >= next {
            return Err(AppError::NoSuchTransfer { app: self.app.0, flow: flow.0, what });
        }
        Ok(())
    }

    /// An ATP job's message of `bytes` in group `group` is ready (ATP refuses more than 2^20
    /// packets).
    /// Ignored if the job is over, closed or refuses it (an unknown group, one that has all
    /// its messages): the job's records show what was sent.
    pub fn send_message(&mut self, flow: FlowId, group: u16, bytes: u64) -> Result<(), AppError> {
        self.known(flow, "send a message on")?;
        if bytes == 0 || bytes > MAX_TRANSFER_BYTES {
            return Err(AppError::BadJob { app: self.app.0, why: "a message has 1 byte to spec::limits::MAX_TRANSFER_BYTES" });
        }
        self.ops.push(Op::Message { flow, group, bytes });
        Ok(())
    }

    /// No more messages for an ATP job (or data for a stream). Idempotent.
    pub fn close(&mut self, flow: FlowId) -> Result<(), AppError> {
        self.known(flow, "close")?;
        self.ops.push(Op::Close(flow));
        Ok(())
    }

    /// Stop a transfer this application started, now: it sends nothing more, its packets in
    /// flight are dropped on arrival, its record says `cancelled`, and no
    /// [`Application::on_transfer_done`] follows. A transfer that already ended is left alone.
    pub fn cancel(&mut self, flow: FlowId) -> Result<(), AppError> {
        self.known(flow, "cancel")?;
        self.ops.push(Op::Cancel(flow));
        Ok(())
    }

    /// Be called back with [`Application::on_timer`] at `t` (now, if `t` is in the past).
    /// Replaces any earlier request: an application has one alarm.
    pub fn sleep_until(&mut self, t: Time) {
        *self.wake = Some(t.max(self.now));
    }

    /// Be called back after `d`.
    pub fn sleep_for(&mut self, d: Dur) {
        *self.wake = Some(self.now.saturating_add(d));
    }

    /// Cancel the alarm.
    pub fn cancel_sleep(&mut self) {
        *self.wake = None;
    }

    /// Record a completed unit in the application table.
    pub fn record_unit(&mut self, mut rec: UnitRecord) {
        rec.app = self.app.0;
        self.units.push(rec);
    }

    /// The contention-free FCT of `size` bytes from `src` to `dst` (see `ideal`).
    pub fn ideal_fct(&self, src: u32, dst: u32, size: u64) -> Dur {
        self.ideal.ideal_fct(src, dst, size)
    }

    /// Line rate of host `h`'s network link.
    pub fn host_rate(&self, h: u32) -> Bps {
        self.ideal.host_rate(h)
    }
}

/// The contract of an application (see the module docs for the call order). Every method has
/// a do-nothing default.
pub trait Application: std::fmt::Debug {
    /// The run begins (time zero).
    fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
        let _ = ctx;
    }
    /// The alarm set with [`AppCtx::sleep_until`] went off.
    fn on_timer(&mut self, ctx: &mut AppCtx<'_>) {
        let _ = ctx;
    }
    /// A transfer this application started has ended.
    fn on_transfer_done(&mut self, done: &TransferDone, ctx: &mut AppCtx<'_>) {
        let _ = (done, ctx);
    }
    /// The last time at which this application will start anything on its own (for progress
    /// displays), if known.
    fn horizon(&self) -> Option<Time> {
        None
    }
    /// Whether the application is open-loop: it never reacts to completions, so its
    /// transfers can be listed without a network (flow-list export for peer simulators).
    fn is_open_loop(&self) -> bool {
        false
    }
}

/// Every application, dispatched with a `match` (no vtable for the built-in ones);
/// [`AnyApp::Custom`] takes a user's own.
#[derive(Debug)]
pub enum AnyApp {
    /// Poisson flow arrivals.
    Poisson(PoissonGen),
    /// Incast queries.
    Incast(IncastGen),
    /// A fixed list of transfers (flow list, inline flows).
    List(ListGen),
    /// Back-to-back transfers per host pair.
    ClosedLoop(ClosedLoop),
    /// Rounds of transfers separated by a barrier and a compute delay.
    Barrier(Barrier),
    /// Blocks forwarded along a chain of hosts.
    Relay(Relay),
    /// NetApprox's jobs of messages.
    ApproxJobs(ApproxJobs),
    /// Data-parallel training iterations (parameter server or ring all-reduce).
    Training(Training),
    /// Anything else.
    Custom(Box<dyn Application + Send + Sync>),
}

macro_rules! dispatch {
    ($self:ident, $a:ident => $e:expr) => {
        match $self {
            AnyApp::Poisson($a) => $e,
            AnyApp::Incast($a) => $e,
            AnyApp::List($a) => $e,
            AnyApp::ClosedLoop($a) => $e,
            AnyApp::Barrier($a) => $e,
            AnyApp::Relay($a) => $e,
            AnyApp::ApproxJobs($a) => $e,
            AnyApp::Training($a) => $e,
            AnyApp::Custom($a) => $e,
        }
    };
}

impl AnyApp {
    /// See [`Application::on_start`].
    pub fn on_start(&mut self, ctx: &mut AppCtx<'_>) {
        dispatch!(self, a => a.on_start(ctx))
    }
    /// See [`Application::on_timer`].
    pub fn on_timer(&mut self, ctx: &mut AppCtx<'_>) {
        dispatch!(self, a => a.on_timer(ctx))
    }
    /// See [`Application::on_transfer_done`].
    pub fn on_transfer_done(&mut self, done: &TransferDone, ctx: &mut AppCtx<'_>) {
        dispatch!(self, a => a.on_transfer_done(done, ctx))
    }
    /// See [`Application::horizon`].
    pub fn horizon(&self) -> Option<Time> {
        dispatch!(self, a => a.horizon())
    }
    /// A copy of this application if it is a built-in open-loop generator (Poisson, incast,
    /// list), whose transfers can be listed without a network; `None` otherwise.
    pub fn clone_generator(&self) -> Option<AnyApp> {
        match self {
            AnyApp::Poisson(g) => Some(AnyApp::Poisson(g.clone())),
            AnyApp::Incast(g) => Some(AnyApp::Incast(g.clone())),
            AnyApp::List(g) => Some(AnyApp::List(g.clone())),
            AnyApp::ClosedLoop(_)
            | AnyApp::Barrier(_)
            | AnyApp::Relay(_)
            | AnyApp::ApproxJobs(_)
            | AnyApp::Training(_)
            | AnyApp::Custom(_) => None,
        }
    }

    /// See [`Application::is_open_loop`].
    pub fn is_open_loop(&self) -> bool {
        dispatch!(self, a => a.is_open_loop())
    }
}
