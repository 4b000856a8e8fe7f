//! The building blocks of ATP, NetApprox's approximate transport (Xia et al.,
//! `shared/papers/netapprox.txt` §3.3 and §4): a job's groups and their message accounting
//! (§3.3.2-3.3.3), the dynamic target loss rate of eq. (1), the slack-based rate control of
//! eqs. (2)-(3) with the starvation guard of §4.2, minimal-remaining-data-first scheduling
//! (§4.3), and the slack-based queue of §5.2.
//!
//! The endpoint that drives them from packets is [`AtpSender`] and [`AtpReceiver`] (files
//! `atp/sender.rs` and `atp/receiver.rs`), over the `wire::AtpRepr` header; [`AtpConfig`] holds
//! its knobs, including the switches of the paper's ablations (§7.1.2-7.1.3).
//!
//! Choices where the paper leaves one open (each also at its code):
//! - Integer accounting: a group of `n` messages with sampling rate `msr` must deliver
//!   `ceil(msr * n)` of them (to 1e-9 of an integer, so that 0.9 x 10 is 9) and may lose the rest.
//! - Eq. (1) is clamped to [0, 1]; with every message delivered it is 0 (nothing may be lost).
//! - Eqs. (2)-(3) apply only when the loss rate differs from the target: equal leaves the rate,
//!   except that an epoch without any loss always increases it (else a target of 0, MSR = 1,
//!   could never speed up again); an epoch that sent nothing measures nothing and leaves it. Eq. (3) never goes below
//!   R_min (one packet per RTT, §4.2); eq. (2) never above R_max.
//! - Priority (§5.2): class 0 for a group that may lose nothing (MSR = 1, or no slack left);
//!   otherwise class `k = floor(TLR x Q)` clamped to `1..Q-1` for `Q` classes, i.e. the
//!   thresholds `k/Q` spread evenly over [0, 1) (the paper's 0, 0.125, ..., 0.875 for Q = 8),
//!   with the lowest threshold shared by class 1 since class 0 is reserved.

use std::collections::BTreeSet;

use units::{Bps, Dur};

mod receiver;
mod sender;

pub use receiver::{AtpReceiver, MAX_PARTIAL_WORDS};
pub use sender::{AtpSender, EpochLog, GroupReport, JobError};

/// The most messages one job may have (message ids are below it): bounds what a receiver
/// keeps per job.
pub const MAX_JOB_MESSAGES: u64 = 1 << 24;
/// The most packets one message may have.
pub const MAX_MESSAGE_PKTS: u32 = 1 << 20;
/// The most groups one job may have.
pub const MAX_GROUPS: usize = 1 << 10;

/// ATP's knobs. The defaults are ATP_Full: every mechanism on.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct AtpConfig {
    /// Maximum payload bytes per packet. Default 1460.
    pub mss: u32,
    /// Header bytes per packet counted by the pacer (IPv4 20 + UDP 8 + ATP 48). Default 76.
    pub header_bytes: u32,
    /// R_max, the highest sending rate; `None`: the NIC's line rate, which the driver gives
    /// with [`crate::Endpoint::set_line_rate`] (10 Gb/s until it does). Default `None`.
    pub rate: Option<Bps>,
    /// Eq. (2)'s reaction speed `m` in (0, 1]. The paper gives no value; we use 1/8, the
    /// gain RFC 6298 uses for its smoothed RTT. Default 0.125.
    pub m: f64,
    /// Epoch length and loss timeout before the first RTT sample (then one smoothed RTT, §4.2
    /// footnote 2). Default 20 µs.
    pub init_rtt: Dur,
    /// Switch priority classes (§5.2; class 0 is reserved for non-approximate traffic).
    /// Default 8.
    pub classes: u8,
    /// Class of ACKs and the end-of-job notice. Default 0 (a lost ACK would make a delivered
    /// packet look lost to eq. (3) and cost a retransmission).
    pub ack_prio: u8,
    /// Slack-based rate control (§4.2). Off: always send at R_max (ATP_Base). Default on.
    pub rate_control: bool,
    /// Dynamic target loss rate, eq. (1). Off: TLR stays `1 - MSR` (ATP_FixTLR, ATP_RC,
    /// ATP_Base). Default on.
    pub dynamic_tlr: bool,
    /// Move the job between switch queues every epoch by its TLR (§5.2). Off: the class of
    /// TLR_0 throughout (ATP_FixPrio, ATP_FixTLR). Default on.
    pub dynamic_prio: bool,
    /// What a lost packet's message becomes: given up while the slack lasts (the paper), or
    /// resent always. Default give up.
    pub on_loss: OnLoss,
    /// Which message goes next: minimal remaining data first (§4.3), message order, or
    /// message order with resends after new packets (ATP_Base, ATP_RC). Default MRDF.
    pub sched: Sched,
    /// A plain transfer (one started with a size, not as a job): its messages' size in bytes.
    /// Default 1460 (one packet per message).
    pub message_bytes: u64,
    /// A plain transfer's MSR (one group). Default 1 (reliable).
    pub msr: f64,
    /// Give up after this many epochs in a row that sent packets and got no ACK at all
    /// (measured epochs, about one RTT each). Default 10,000: a job in a low class can be
    /// starved for long by strict priority (§5.2) and must not give up for that.
    pub max_silent_epochs: u32,
    /// Bytes the pacer lets out at once to catch up when it is polled late: a packet is due
    /// at `max(due, now - pacing_burst_bytes at the rate) + its time at the rate`. The
    /// simulator polls exactly when a packet is due, so 0 (the default) paces packet by
    /// packet; a driver on the wall clock, woken up to tens of microseconds late, sets a few
    /// packets' worth so that lateness does not lower the rate.
    pub pacing_burst_bytes: u64,
    /// The loss timeout's lower bound (RFC 6298's `min RTO`, which ATP's own timeout does
    /// without). The simulator's hosts answer every packet at once, so 0 (the default) keeps
    /// the paper's timeout; a driver on real hosts, whose receiver answers in batches and may
    /// be descheduled for milliseconds, sets one so that a late ACK is not taken for a loss
    /// (at most 1 s).
    pub min_loss_timeout: Dur,
}

impl Default for AtpConfig {
    fn default() -> Self {
        AtpConfig {
            mss: 1460,
            header_bytes: 76,
            rate: None,
            m: 0.125,
            init_rtt: Dur::from_us(20),
            classes: 8,
            ack_prio: 0,
            rate_control: true,
            dynamic_tlr: true,
            dynamic_prio: true,
            sched: Sched::Mrdf,
            on_loss: OnLoss::GiveUp,
            message_bytes: 1460,
            msr: 1.0,
            max_silent_epochs: 10_000,
            pacing_burst_bytes: 0,
            min_loss_timeout: Dur::ZERO,
        }
    }
}

impl AtpConfig {
    /// The configuration of one of the paper's variants (§7.1.2-7.1.3) by name: `full`,
    /// `base` (no rate control, message order, fixed TLR and class), `rc` (+ rate control),
    /// `mrdf` (+ MRDF), `fix_tlr` (rate control and MRDF, fixed TLR and class), `fix_prio`
    /// (dynamic TLR, fixed class). `None` for another name.
    pub fn variant(name: &str) -> Option<AtpConfig> {
        let full = AtpConfig::default();
        let fixed = AtpConfig { dynamic_tlr: false, dynamic_prio: false, ..full.clone() };
        Some(match name {
            "full" => full,
            "base" => AtpConfig { rate_control: false, sched: Sched::NewFirst, ..fixed },
            "rc" => AtpConfig { sched: Sched::NewFirst, ..fixed },
            "mrdf" | "fix_tlr" => fixed,
            "fix_prio" => AtpConfig { dynamic_prio: false, ..full },
            _ => return None,
        })
    }

    /// Variant names accepted by [`AtpConfig::variant`].
    pub const VARIANTS: &'static [&'static str] = &["full", "base", "rc", "mrdf", "fix_tlr", "fix_prio"];
}

/// A message's group and what the job asks of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupSpec {
    /// Messages of the group in the job (N of eq. (1)).
    pub messages: u64,
    /// Its minimal message sampling rate, in [0, 1]; 1 means every message, reliably.
    pub msr: f64,
}

/// `ceil(msr * n)`, treating products within 1e-9 (relative) of an integer as that integer.
pub fn required_messages(msr: f64, n: u64) -> u64 {
    let x = msr.clamp(0.0, 1.0) * n as f64;
    let r = x.round();
    let need = if (x - r).abs() <= 1e-9 * x.max(1.0) { r } else { x.ceil() };
    (need as u64).min(n)
}

/// One group's progress: what was delivered and what was given up as lost.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    spec: GroupSpec,
    required: u64,
    delivered: u64,
    lost: u64,
}

impl Group {
    /// A group with nothing delivered or lost yet.
    pub fn new(spec: GroupSpec) -> Group {
        Group { required: required_messages(spec.msr, spec.messages), spec, delivered: 0, lost: 0 }
    }

    /// Messages that must be delivered: `ceil(MSR x N)`.
    pub fn required(&self) -> u64 {
        self.required
    }

    /// Messages that may be lost: `N - ceil(MSR x N)` (the `(1 - MSR) x N` of eq. (1)).
    pub fn allowed_losses(&self) -> u64 {
        self.spec.messages - self.required
    }

    /// Messages delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Messages given up as lost so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// A message of the group has a lost packet (it will be sent again): it counts as lost in
    /// eq. (1) until it arrives whole ([`Group::on_recovered`]).
    pub fn mark_lost(&mut self) {
        self.lost += 1;
    }

    /// Whether one more message may be given up without breaking the group's MSR.
    pub fn may_lose_another(&self) -> bool {
        self.lost < self.allowed_losses()
    }

    /// A message of the group was delivered (all its packets).
    pub fn on_delivered(&mut self) {
        self.delivered = (self.delivered + 1).min(self.spec.messages);
    }

    /// A message given up earlier arrived whole after all (a late ACK): it counts as
    /// delivered, and its loss is taken back.
    pub fn on_recovered(&mut self) {
        self.lost = self.lost.saturating_sub(1);
        self.on_delivered();
    }

    /// One more message in the group (a stream whose N is known only at its end).
    pub fn grow(&mut self) {
        self.spec.messages += 1;
        self.required = required_messages(self.spec.msr, self.spec.messages);
    }

    /// The group's sizes: messages and MSR.
    pub fn spec(&self) -> GroupSpec {
        self.spec
    }

    /// A message of the group is given up. Returns false, changing nothing, if the group may
    /// not lose another (the caller must retransmit it instead).
    pub fn give_up(&mut self) -> bool {
        if !self.may_lose_another() {
            return false;
        }
        self.lost += 1;
        true
    }

    /// Whether the group has what it needs: `ceil(MSR x N)` messages delivered.
    pub fn is_complete(&self) -> bool {
        self.delivered >= self.required
    }

    /// The target loss rate for the next epoch, eq. (1): the losses the group can still
    /// afford over the messages not yet delivered, clamped to [0, 1]. `TLR_0 = 1 - MSR` (up to
    /// the integer rounding of [`required_messages`]).
    pub fn tlr(&self) -> f64 {
        let left = self.spec.messages.saturating_sub(self.delivered);
        if left == 0 {
            return 0.0;
        }
        let can_lose = self.allowed_losses().saturating_sub(self.lost);
        (can_lose as f64 / left as f64).clamp(0.0, 1.0)
    }

    /// The priority class for this group's traffic with `classes` classes (§5.2; module docs).
    pub fn priority(&self, classes: u8) -> u8 {
        slack_class(self.tlr(), self.may_lose_another(), classes)
    }
}

/// The class of a job with target loss rate `tlr` among `classes` (§5.2): 0 if it may lose
/// nothing, else `floor(tlr x classes)` within `1..classes-1` (module docs).
pub fn slack_class(tlr: f64, may_lose: bool, classes: u8) -> u8 {
    if !may_lose || classes <= 1 || tlr.is_nan() || tlr <= 0.0 {
        return 0;
    }
    let k = (tlr.min(1.0) * f64::from(classes)).floor() as u8;
    k.clamp(1, classes - 1)
}

/// The buffer of each class in MTUs (§5.2): the lowest class 1 MTU, one more per class up, up
/// to class 1; class 0 (non-approximate) gets the rest of `total_mtus`. `None` if the rest
/// would be less than one MTU.
pub fn slack_buffers(classes: u8, total_mtus: u64) -> Option<Vec<u64>> {
    let q = u64::from(classes.max(1));
    // Class k (1..q-1) gets q - k MTUs: the lowest, q-1, gets 1.
    let approx: u64 = (1..q).map(|k| q - k).sum();
    let rest = total_mtus.checked_sub(approx).filter(|&r| r >= 1)?;
    Some((0..q).map(|k| if k == 0 { rest } else { q - k }).collect())
}

/// Slack-based rate control (§4.2): per epoch, compare the measured loss rate with the target
/// and move the rate by eq. (2) or (3), within `[r_min, r_max]`.
#[derive(Clone, Debug, PartialEq)]
pub struct RateControl {
    rate_bps: f64,
    r_min_bps: f64,
    r_max_bps: f64,
    m: f64,
}

impl RateControl {
    /// Start at `r_max` (the NIC rate), with reaction speed `m` in (0, 1] and the floor
    /// `r_min` (one packet per RTT: `packet_bits / rtt`).
    pub fn new(r_max_bps: f64, r_min_bps: f64, m: f64) -> RateControl {
        let r_min_bps = r_min_bps.min(r_max_bps);
        RateControl { rate_bps: r_max_bps, r_min_bps, r_max_bps, m: m.clamp(f64::MIN_POSITIVE, 1.0) }
    }

    /// The current sending rate.
    pub fn rate_bps(&self) -> f64 {
        self.rate_bps
    }

    /// The loss rate measured in an epoch (footnote 3): `1 - acked / sent`; `None` if nothing
    /// was sent.
    pub fn loss_rate(sent: u64, acked: u64) -> Option<f64> {
        (sent > 0).then(|| 1.0 - acked.min(sent) as f64 / sent as f64)
    }

    /// End of an epoch that sent `sent` packets of which `acked` were acknowledged, against
    /// target `tlr`: eq. (2) if the loss rate is below it, eq. (3) if above.
    pub fn on_epoch(&mut self, sent: u64, acked: u64, tlr: f64) {
        let Some(rho) = Self::loss_rate(sent, acked) else { return };
        // An epoch without loss increases even against a target of 0 (see `AtpSender`).
        if rho < tlr || rho == 0.0 {
            self.increase();
        } else if rho > tlr {
            self.decrease(rho);
        }
    }

    /// Eq. (2): `R = (1 - m) R + m R_max`.
    pub fn increase(&mut self) {
        self.rate_bps = ((1.0 - self.m) * self.rate_bps + self.m * self.r_max_bps).clamp(self.r_min_bps, self.r_max_bps);
    }

    /// Eq. (3) for a measured loss rate `rho`: `R = R (1 - rho / 2)`, never below R_min (§4.2,
    /// starvation).
    pub fn decrease(&mut self, rho: f64) {
        let rho = if rho.is_nan() { 1.0 } else { rho.clamp(0.0, 1.0) };
        self.rate_bps = (self.rate_bps * (1.0 - rho / 2.0)).clamp(self.r_min_bps, self.r_max_bps);
    }

    /// Move the floor R_min (one packet per RTT, as the RTT estimate changes), never above
    /// R_max; the rate is lifted to it if below.
    pub fn set_r_min(&mut self, r_min_bps: f64) {
        self.r_min_bps = r_min_bps.clamp(0.0, self.r_max_bps);
        self.rate_bps = self.rate_bps.max(self.r_min_bps);
    }

    /// Move R_max (the NIC rate); the rate and floor are kept within it.
    pub fn set_r_max(&mut self, r_max_bps: f64) {
        self.r_max_bps = r_max_bps.max(1.0);
        self.r_min_bps = self.r_min_bps.min(self.r_max_bps);
        self.rate_bps = self.rate_bps.clamp(self.r_min_bps, self.r_max_bps);
    }

    /// R_max.
    pub fn r_max_bps(&self) -> f64 {
        self.r_max_bps
    }
}

/// What the sender knows of one message's packets.
///
/// The packets that may be sent now are those never sent (from `next_new` on, less any
/// acknowledged before they were sent) and the lost ones in `resend`. PERF: packets are first
/// sent in order, so a cursor holds what was a set of every packet (a `BTreeSet` insert per
/// packet at `push`, a `pop_first` per send); only resends need the set.
///
/// INVARIANT: every packet in `resend` is below `next_new`, was sent and is not acknowledged;
/// the packets from `next_new` on were never sent; `num_sendable` counts `resend` and the
/// packets from `next_new` on not acknowledged.
#[derive(Clone, Debug, PartialEq)]
struct Message {
    bytes_per_packet: Vec<u32>,
    /// The first packet never handed out (those below were sent, or acknowledged unsent).
    next_new: u32,
    /// Packets sent, lost and to be sent again (a send of one is a retransmission).
    resend: BTreeSet<u32>,
    /// Packets that may be sent now (type docs).
    num_sendable: u32,
    /// Which packets were acknowledged (a duplicate ACK counts once).
    acked: Vec<bool>,
    acked_bytes: u64,
    total_bytes: u64,
    abandoned: bool,
}

/// What a sender does with a lost packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum OnLoss {
    /// Give its message up while the group may lose one, else resend it (the paper, §4.1).
    #[default]
    GiveUp,
    /// Always resend, in the scheduler's order (our variant; `AtpSender` docs).
    Resend,
}

/// Which message a sender serves next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Sched {
    /// Minimal remaining data first (§4.3), new and lost packets alike.
    #[default]
    Mrdf,
    /// Message order, a lost packet before later messages (for applications that need
    /// order, §4.3 footnote 4).
    InOrder,
    /// Message order, new packets before any lost one is resent (ATP_Base, §7.1.3: "after
    /// sending out all packets, retransmit lost packets").
    NewFirst,
}

/// Minimal-remaining-data-first scheduling (§4.3): the next packet comes from the message with
/// the least data not yet delivered (total minus acknowledged bytes), among never-sent and
/// lost-to-resend packets alike; ties go to the lowest message id, packets in order. The other
/// [`Sched`] modes order messages by id instead.
#[derive(Clone, Debug, Default)]
pub struct Mrdf {
    messages: Vec<Message>,
    /// (key, message) of every message with a sendable packet: the remaining bytes (MRDF), 0
    /// (in order), or whether it has a packet to resend (new first).
    ready: BTreeSet<(u64, u32)>,
    mode: Sched,
}

impl Mrdf {
    /// A scheduler over no messages; `ordered` turns MRDF off (message order, §4.3 footnote 4).
    pub fn new(ordered: bool) -> Mrdf {
        Mrdf::with_mode(if ordered { Sched::InOrder } else { Sched::Mrdf })
    }

    /// A scheduler over no messages in `mode`.
    pub fn with_mode(mode: Sched) -> Mrdf {
        Mrdf { mode, ..Mrdf::default() }
    }

    /// Add a message of packets of these sizes; returns its id (ids count from 0).
    pub fn push(&mut self, packet_bytes: Vec<u32>) -> u32 {
        let id = self.messages.len() as u32;
        let total = packet_bytes.iter().map(|&b| u64::from(b)).sum();
        let n = packet_bytes.len() as u32;
        self.messages.push(Message {
            acked: vec![false; packet_bytes.len()],
            bytes_per_packet: packet_bytes,
            next_new: 0,
            resend: BTreeSet::new(),
            num_sendable: n,
            acked_bytes: 0,
            total_bytes: total,
            abandoned: false,
        });
        self.refresh(id, None);
        id
    }

    /// Message `id`'s key in `ready`, if it is filed there (it has a sendable packet and was
    /// not abandoned).
    fn filed_key(&self, id: u32) -> Option<(u64, u32)> {
        let m = &self.messages[id as usize];
        if m.num_sendable == 0 || m.abandoned {
            return None;
        }
        let k = match self.mode {
            Sched::Mrdf => m.total_bytes - m.acked_bytes,
            Sched::InOrder => 0,
            Sched::NewFirst => u64::from(!m.resend.is_empty()),
        };
        Some((k, id))
    }

    /// Re-file message `id` after a change; `old` is its filed key before the change.
    /// PERF: a key that did not change stays where it is (most sends, and every ACK of a
    /// message with nothing left to send, which is not filed at all).
    fn refresh(&mut self, id: u32, old: Option<(u64, u32)>) {
        let new = self.filed_key(id);
        if old == new {
            return;
        }
        if let Some(k) = old {
            self.ready.remove(&k);
        }
        if let Some(k) = new {
            self.ready.insert(k);
        }
    }

    /// The next packet to send, `(message, packet)`, marked as sent; `None` if nothing is
    /// sendable.
    pub fn next_packet(&mut self) -> Option<(u32, u32)> {
        self.next_packet_retx().map(|(id, p, _)| (id, p))
    }

    /// As [`Mrdf::next_packet`], also saying whether the packet was sent before (a
    /// retransmission).
    pub fn next_packet_retx(&mut self) -> Option<(u32, u32, bool)> {
        let &old @ (_, id) = self.ready.first()?;
        let m = &mut self.messages[id as usize];
        let (p, was_sent) = match m.resend.pop_first() {
            // INVARIANT (Message): resends are below `next_new`, so they come first, as the
            // lowest sendable packets.
            Some(p) => (p, true),
            None => {
                // Skip what was acknowledged before it was ever sent.
                while m.acked.get(m.next_new as usize) == Some(&true) {
                    m.next_new += 1;
                }
                let p = m.next_new;
                if p as usize >= m.bytes_per_packet.len() {
                    debug_assert!(false, "a filed message has a sendable packet");
                    return None;
                }
                m.next_new += 1;
                (p, false)
            }
        };
        m.num_sendable -= 1;
        self.refresh(id, Some(old));
        Some((id, p, was_sent))
    }

    /// Change message `id` with `change` and re-file it; `None` for an unknown id.
    fn update<R>(&mut self, id: u32, change: impl FnOnce(&mut Message) -> R) -> Option<R> {
        if id as usize >= self.messages.len() {
            return None;
        }
        let old = self.filed_key(id);
        let r = change(&mut self.messages[id as usize]);
        self.refresh(id, old);
        Some(r)
    }

    /// Packet `p` of message `id` was acknowledged. Returns whether the message is now whole.
    pub fn on_ack(&mut self, id: u32, p: u32) -> bool {
        self.update(id, |m| {
            let Some(&b) = m.bytes_per_packet.get(p as usize) else { return false };
            if !std::mem::replace(&mut m.acked[p as usize], true) {
                // It was sendable if lost and waiting, or never sent.
                if m.resend.remove(&p) || p >= m.next_new {
                    m.num_sendable -= 1;
                }
                m.acked_bytes += u64::from(b);
            }
            m.acked_bytes == m.total_bytes
        })
        .unwrap_or(false)
    }

    /// Packet `p` of message `id` was lost: it may be sent again (unless the message was
    /// abandoned, or the packet was acknowledged after all).
    pub fn on_lost(&mut self, id: u32, p: u32) {
        self.update(id, |m| {
            // A packet from `next_new` on was never sent and is sendable already.
            if m.acked.get(p as usize) == Some(&false) && p < m.next_new && m.resend.insert(p) {
                m.num_sendable += 1;
            }
        });
    }

    /// Stop sending message `id` (its group may lose it).
    pub fn abandon(&mut self, id: u32) {
        self.update(id, |m| m.abandoned = true);
    }

    /// Payload bytes of packet `p` of message `id`, if both exist.
    pub fn packet_bytes(&self, id: u32, p: u32) -> Option<u32> {
        self.messages.get(id as usize)?.bytes_per_packet.get(p as usize).copied()
    }

    /// Packets of message `id` (0 for an unknown id).
    pub fn num_packets(&self, id: u32) -> u32 {
        self.messages.get(id as usize).map_or(0, |m| m.bytes_per_packet.len() as u32)
    }

    /// Messages pushed so far.
    pub fn num_messages(&self) -> u32 {
        self.messages.len() as u32
    }

    /// Whether some packet may be sent now.
    pub fn has_sendable(&self) -> bool {
        !self.ready.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_messages_are_the_ceiling_without_float_noise() {
        assert_eq!(required_messages(0.9, 10), 9); // 0.9 * 10 = 9.000000000000002
        assert_eq!(required_messages(0.95, 10), 10);
        assert_eq!(required_messages(0.7, 3), 3); // 2.1 -> 3
        assert_eq!(required_messages(1.0, 7), 7);
        assert_eq!(required_messages(0.0, 7), 0);
        assert_eq!(required_messages(0.333, 1000), 333);
    }

    #[test]
    fn eq1_starts_at_one_minus_msr_and_tracks_the_slack_left() {
        let mut g = Group::new(GroupSpec { messages: 100, msr: 0.8 });
        assert_eq!((g.required(), g.allowed_losses()), (80, 20));
        assert!((g.tlr() - 0.2).abs() < 1e-12, "TLR_0 = 1 - MSR");
        // 10 delivered, 5 lost: (20 - 5) / (100 - 10).
        for _ in 0..10 {
            g.on_delivered();
        }
        for _ in 0..5 {
            assert!(g.give_up());
        }
        assert!((g.tlr() - 15.0 / 90.0).abs() < 1e-12);
        // Losing the rest of the slack makes the target 0, and no more may be lost.
        for _ in 0..15 {
            assert!(g.give_up());
        }
        assert_eq!(g.tlr(), 0.0);
        assert!(!g.may_lose_another() && !g.give_up());
        assert_eq!(g.lost(), 20);
        // Completion: exactly ceil(MSR x N) delivered.
        for _ in 0..69 {
            g.on_delivered();
        }
        assert!(!g.is_complete());
        g.on_delivered();
        assert!(g.is_complete());
    }

    #[test]
    fn a_reliable_group_may_lose_nothing_and_gets_class_0() {
        let mut g = Group::new(GroupSpec { messages: 5, msr: 1.0 });
        assert_eq!(g.tlr(), 0.0);
        assert!(!g.give_up());
        assert_eq!(g.priority(8), 0);
    }

    #[test]
    fn slack_classes_spread_evenly_and_reserve_class_0() {
        // Q = 8: thresholds k/8; class 0 reserved for non-approximate traffic.
        assert_eq!(slack_class(0.01, true, 8), 1);
        assert_eq!(slack_class(0.125, true, 8), 1);
        assert_eq!(slack_class(0.25, true, 8), 2);
        assert_eq!(slack_class(0.5, true, 8), 4);
        assert_eq!(slack_class(0.874, true, 8), 6);
        assert_eq!(slack_class(0.875, true, 8), 7);
        assert_eq!(slack_class(1.0, true, 8), 7);
        assert_eq!(slack_class(0.5, false, 8), 0);
        assert_eq!(slack_class(0.0, true, 8), 0);
        assert_eq!(slack_class(f64::NAN, true, 8), 0);
        assert_eq!(slack_class(0.9, true, 1), 0);
    }

    #[test]
    fn slack_buffers_grow_one_mtu_per_class_up_and_leave_the_rest_to_class_0() {
        // 8 classes: 7, 6, ..., 1 MTU for classes 1..7, the rest (100 - 28) to class 0.
        assert_eq!(slack_buffers(8, 100), Some(vec![72, 7, 6, 5, 4, 3, 2, 1]));
        assert_eq!(slack_buffers(2, 5), Some(vec![4, 1]));
        assert_eq!(slack_buffers(8, 28), None, "nothing left for class 0");
    }

    #[test]
    fn eq2_and_eq3_move_the_rate_toward_r_max_or_down_by_half_the_loss() {
        let (r_max, r_min) = (10e9, 1e7);
        let mut rc = RateControl::new(r_max, r_min, 0.125);
        // Loss 0.5 above a target of 0.1: eq. (3), R (1 - 0.25).
        rc.on_epoch(100, 50, 0.1);
        assert!((rc.rate_bps() - 7.5e9).abs() < 1.0);
        // Loss 0.05 below 0.1: eq. (2), (1 - m) R + m R_max.
        rc.on_epoch(100, 95, 0.1);
        assert!((rc.rate_bps() - (0.875 * 7.5e9 + 0.125 * 10e9)).abs() < 1.0);
        // Loss equal to the target, or nothing sent: unchanged.
        let r = rc.rate_bps();
        rc.on_epoch(4, 3, 0.25);
        rc.on_epoch(0, 0, 0.1);
        assert_eq!(rc.rate_bps(), r);
        // No ACK at all for many epochs: the rate halves each time but stops at R_min (§4.2).
        for _ in 0..100 {
            rc.on_epoch(10, 0, 0.0);
        }
        assert_eq!(rc.rate_bps(), r_min);
        // And eq. (2) converges to R_max without passing it.
        for _ in 0..1000 {
            rc.on_epoch(10, 10, 0.1);
        }
        assert!(rc.rate_bps() <= r_max && rc.rate_bps() > 0.999 * r_max);
    }

    #[test]
    fn mrdf_sends_from_the_message_with_least_remaining_data() {
        let mut s = Mrdf::new(false);
        let big = s.push(vec![1000; 4]);
        let small = s.push(vec![1000; 2]);
        // The small message first, whole, then the big one.
        assert_eq!(s.next_packet(), Some((small, 0)));
        assert_eq!(s.next_packet(), Some((small, 1)));
        assert_eq!(s.next_packet(), Some((big, 0)));
        // The big message's first packets are acknowledged: it now has 2000 B left, the small
        // one (whose packet 1 was lost) 1000 B: the retransmission goes first.
        assert!(!s.on_ack(small, 0));
        s.on_lost(small, 1);
        assert!(!s.on_ack(big, 0));
        assert_eq!(s.next_packet(), Some((small, 1)));
        assert!(s.on_ack(small, 1), "the small message is whole");
        assert_eq!(s.next_packet(), Some((big, 1)));
        assert_eq!(s.next_packet(), Some((big, 2)));
        assert_eq!(s.next_packet(), Some((big, 3)));
        assert_eq!(s.next_packet(), None);
    }

    #[test]
    fn mrdf_prefers_an_almost_delivered_message_over_a_new_short_one() {
        let mut s = Mrdf::new(false);
        let a = s.push(vec![1000; 10]);
        for _ in 0..10 {
            s.next_packet();
        }
        for p in 0..9 {
            s.on_ack(a, p);
        }
        s.on_lost(a, 9); // 1000 B left
        let b = s.push(vec![1000, 1000]); // 2000 B left, never sent
        assert_eq!(s.next_packet(), Some((a, 9)));
        assert_eq!(s.next_packet(), Some((b, 0)));
    }

    #[test]
    fn ordered_mode_and_abandoned_messages() {
        let mut s = Mrdf::new(true);
        let big = s.push(vec![1000; 3]);
        let small = s.push(vec![1000]);
        assert_eq!(s.next_packet(), Some((big, 0)), "in order: the first message first");
        s.abandon(big);
        assert_eq!(s.next_packet(), Some((small, 0)), "an abandoned message sends nothing more");
        s.on_lost(big, 0);
        assert_eq!(s.next_packet(), None);
        // A duplicate ACK counts once, and a packet acknowledged is never sent again.
        let two = s.push(vec![1000, 1000]);
        assert_eq!(s.next_packet(), Some((two, 0)));
        assert!(!s.on_ack(two, 0) && !s.on_ack(two, 0), "one of two packets is not the whole message");
        s.on_lost(two, 0);
        assert_eq!(s.next_packet(), Some((two, 1)));
        assert_eq!(s.next_packet(), None);
        // Unknown ids and packets change nothing.
        assert!(!s.on_ack(7, 0) && !s.on_ack(small, 5));
        s.on_lost(9, 0);
        assert_eq!(s.next_packet(), None);
    }

    /// Random sends, ACKs, losses and abandonments against a plain model: every packet handed
    /// out was sendable, none of an abandoned or whole message, and each pick has the least
    /// remaining data of all messages with something to send.
    #[test]
    fn mrdf_agrees_with_a_plain_model_under_random_operations() {
        use rand::{Rng, SeedableRng};
        for seed in 0..50 {
            let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
            let mut s = Mrdf::new(false);
            // Model: per message, its packet sizes, sendable set, acked set, abandoned, and the
            // packets handed out at least once.
            type Model = (Vec<u32>, BTreeSet<u32>, BTreeSet<u32>, bool, BTreeSet<u32>);
            let mut model: Vec<Model> = Vec::new();
            let mut in_flight: Vec<(u32, u32)> = Vec::new();
            for _ in 0..400 {
                match rng.gen_range(0..6) {
                    0 => {
                        let sizes: Vec<u32> = (0..rng.gen_range(1..6)).map(|_| rng.gen_range(1..1500)).collect();
                        let id = s.push(sizes.clone());
                        assert_eq!(id as usize, model.len());
                        model.push((sizes.clone(), (0..sizes.len() as u32).collect(), BTreeSet::new(), false, BTreeSet::new()));
                    }
                    1 | 2 => {
                        let remaining = |m: &Model| {
                            m.0.iter().map(|&b| u64::from(b)).sum::<u64>()
                                - m.2.iter().map(|&p| u64::from(m.0[p as usize])).sum::<u64>()
                        };
                        let best = model.iter().enumerate().filter(|(_, m)| !m.1.is_empty() && !m.3)
                            .map(|(i, m)| (remaining(m), i as u32)).min();
                        match (s.next_packet_retx(), best) {
                            (None, None) => {}
                            (Some((id, p, retx)), Some((_, want))) => {
                                assert_eq!(id, want, "seed {seed}");
                                let m = &mut model[id as usize];
                                assert_eq!(m.1.first(), Some(&p), "seed {seed}: packets go lowest first");
                                assert!(m.1.remove(&p) && !m.3, "seed {seed}");
                                assert_eq!(retx, !m.4.insert(p), "seed {seed}: a second send is a retransmission");
                                in_flight.push((id, p));
                            }
                            (got, want) => panic!("seed {seed}: got {got:?}, model {want:?}"),
                        }
                    }
                    3 if !in_flight.is_empty() => {
                        let (id, p) = in_flight.swap_remove(rng.gen_range(0..in_flight.len()));
                        if rng.gen_bool(0.5) {
                            let m = &mut model[id as usize];
                            m.2.insert(p);
                            let whole = s.on_ack(id, p);
                            assert_eq!(whole, m.2.len() == m.0.len(), "seed {seed}");
                        } else {
                            s.on_lost(id, p);
                            let m = &mut model[id as usize];
                            if !m.2.contains(&p) {
                                m.1.insert(p);
                            }
                        }
                    }
                    5 if !model.is_empty() => {
                        // An ACK of any packet, sent or not (a peer's ACK names the packet).
                        let id = rng.gen_range(0..model.len());
                        let m = &mut model[id];
                        let p = rng.gen_range(0..m.0.len() as u32 + 1);
                        let whole = s.on_ack(id as u32, p);
                        if (p as usize) < m.0.len() {
                            m.2.insert(p);
                            m.1.remove(&p);
                        }
                        // No such packet: not whole, whatever the message.
                        assert_eq!(whole, (p as usize) < m.0.len() && m.2.len() == m.0.len(), "seed {seed}");
                    }
                    4 if !model.is_empty() && rng.gen_bool(0.2) => {
                        let id = rng.gen_range(0..model.len()) as u32;
                        s.abandon(id);
                        model[id as usize].3 = true;
                    }
                    _ => {}
                }
            }
        }
    }
}
