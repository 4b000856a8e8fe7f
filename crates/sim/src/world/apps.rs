//! The application layer's driver: each application's one alarm, the notifications of ended
//! transfers, and the commands applications give (start a transfer, sleep, record a unit).
//!
//! Alarms live in their own small min-heap on `(time, application, generation)`, with one
//! `AppWake` event in the scheduler for its earliest entry, so equal-time alarms run in
//! application order and the main heap holds one entry for all applications (htsim-style).
//! Notifications of ended transfers are queued while packets are being handled and delivered
//! after the event that produced them, so an application never runs inside the network's
//! handlers.
//!
//! INVARIANT: an alarm entry is live iff its generation equals its application's current one;
//! stale entries are skipped when popped. `app_wake_at` is the time of the earliest pending
//! `AppWake` event, if any.

use std::cmp::Reverse;

use units::{AppId, Dur, Time};

use super::Simulation;
use crate::app::{AppCtx, IdealFct, Op, TransferDone, TransferReq, UnitRecord};
use crate::ideal::{ideal_fct, IdealModel};
use crate::route::Routes;
use crate::sched::Event;
use crate::topo::Topology;

/// The closed-form ideal FCT on this run's network (what applications and records use).
pub(crate) struct NetIdeal<'a> {
    pub(crate) topo: &'a Topology,
    pub(crate) routes: &'a Routes,
    pub(crate) model: &'a IdealModel,
}

impl IdealFct for NetIdeal<'_> {
    fn ideal_fct(&self, src: u32, dst: u32, size: u64) -> Dur {
        let fwd = super::build::first_path(self.topo, self.routes, src, dst);
        let rev = super::build::first_path(self.topo, self.routes, dst, src);
        ideal_fct(&fwd, &rev, size.max(1), self.model)
    }

    fn host_rate(&self, h: u32) -> units::Bps {
        let l = self.routes.nic(units::NodeId(h.min(self.topo.num_hosts.saturating_sub(1))));
        self.topo.links[l.idx()].rate
    }
}

/// What one application callback asked for.
#[derive(Debug, Default)]
pub(crate) struct Commands {
    pub(crate) starts: Vec<TransferReq>,
    pub(crate) jobs: Vec<Vec<proto::atp::GroupSpec>>,
    pub(crate) ops: Vec<Op>,
    pub(crate) units: Vec<UnitRecord>,
}

/// Which callback to make.
// PERF: `Done` carries a NetApprox job's per-group counts inline (about 400 bytes); a call is
// made once per transfer and application event, never per packet, so the copy costs less than
// a heap allocation per completion would.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
enum Call {
    Start,
    Timer,
    Done(TransferDone),
}

impl Simulation {
    /// Call every application's `on_start` (at time zero, during construction).
    pub(crate) fn start_apps(&mut self) {
        for a in 0..self.apps.len() {
            self.call_app(AppId::from_idx(a), Call::Start);
        }
        self.arm_app_wake();
    }

    /// `AppWake`: run every alarm that is due, in `(time, application)` order.
    pub(crate) fn on_app_wake(&mut self) {
        let now = self.sched.now();
        if self.app_wake_at == Some(now) {
            self.app_wake_at = None;
        }
        while let Some(&Reverse((t, a, generation))) = self.app_heap.peek() {
            if t > now {
                break;
            }
            self.app_heap.pop();
            let slot = &mut self.app_slots[a as usize];
            if slot.generation != generation || slot.scheduled != Some(t) {
                continue; // re-armed or cancelled since
            }
            slot.scheduled = None;
            self.call_app(AppId(a), Call::Timer);
        }
        self.arm_app_wake();
    }

    /// Deliver queued notifications of ended transfers (after each event).
    pub(crate) fn drain_app_notes(&mut self) {
        while let Some((app, done)) = self.notes.pop_front() {
            self.call_app(app, Call::Done(done));
        }
        self.arm_app_wake();
    }

    /// Make one callback and carry out what it asked for.
    fn call_app(&mut self, app: AppId, call: Call) {
        let now = self.sched.now();
        let mut cmds = std::mem::take(&mut self.cmds);
        let mut wake = self.app_slots[app.idx()].scheduled;
        {
            let model = &self.transports[self.app_transport.get(app.idx()).copied().unwrap_or(0) as usize].ideal;
            let ideal = NetIdeal { topo: &self.topo, routes: &self.routes, model };
            let mut ctx = AppCtx {
                app,
                now,
                num_hosts: self.topo.num_hosts,
                num_transports: self.transports.len() as u16,
                own_transport: self.app_transport.get(app.idx()).copied().unwrap_or(0),
                next_transfer: self.total_transfers() as u32,
                starts: &mut cmds.starts,
                jobs: &mut cmds.jobs,
                ops: &mut cmds.ops,
                is_atp: &self.is_atp,
                wake: &mut wake,
                units: &mut cmds.units,
                ideal: &ideal,
            };
            let a = &mut self.apps[app.idx()];
            match call {
                Call::Start => a.on_start(&mut ctx),
                Call::Timer => a.on_timer(&mut ctx),
                Call::Done(d) => a.on_transfer_done(&d, &mut ctx),
            }
        }
        for req in cmds.starts.drain(..) {
            let groups = req.job.and_then(|j| cmds.jobs.get(j as usize)).map(Vec::as_slice);
            self.start_transfer_with(app, req, groups);
        }
        cmds.jobs.clear();
        for op in cmds.ops.drain(..) {
            self.apply_op(app, op);
        }
        self.units.append(&mut cmds.units);
        self.cmds = cmds;
        let slot = &mut self.app_slots[app.idx()];
        if wake != slot.scheduled {
            slot.generation = slot.generation.wrapping_add(1);
            slot.scheduled = wake;
            if let Some(t) = wake {
                self.app_heap.push(Reverse((t, app.0, slot.generation)));
            }
        }
    }

    /// Keep one `AppWake` event pending at the earliest live alarm.
    fn arm_app_wake(&mut self) {
        // Drop stale entries from the top so the earliest entry is a live alarm.
        while let Some(&Reverse((t, a, g))) = self.app_heap.peek() {
            let slot = &self.app_slots[a as usize];
            if slot.generation == g && slot.scheduled == Some(t) {
                break;
            }
            self.app_heap.pop();
        }
        if let Some(&Reverse((t, _, _))) = self.app_heap.peek() {
            if self.app_wake_at.is_none_or(|w| t < w) {
                self.app_wake_at = Some(t);
                self.sched.at(t.max(self.sched.now()), Event::AppWake);
            }
        }
    }

    /// Whether no application will start anything more on its own (no alarm, no pending
    /// notification).
    pub(crate) fn apps_idle(&self) -> bool {
        self.notes.is_empty() && self.app_slots.iter().all(|s| s.scheduled.is_none())
    }

    /// The ideal FCT of `size` bytes from `src` to `dst` on this network with the scenario's
    /// transport.
    pub fn ideal_fct(&self, src: u32, dst: u32, size: u64) -> Dur {
        NetIdeal { topo: &self.topo, routes: &self.routes, model: &self.transports[0].ideal }.ideal_fct(src, dst, size)
    }

    /// Earliest alarm of any application, if any.
    pub fn next_app_alarm(&self) -> Option<Time> {
        self.app_slots.iter().filter_map(|s| s.scheduled).min()
    }
}
