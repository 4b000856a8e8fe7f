//! Unreliable UDP source and sink: no ACKs, no retransmission, no congestion control.
//!
//! Pipeline position: wrapped by [`crate::Endpoint`]. The source cuts `size` bytes into
//! datagrams of `mss` (the last shorter, carrying `FIN`) and hands them out either all at
//! once (`rate: None`, the driver's NIC paces them) or one per `rate.tx_time(len +
//! header_bytes)` (a pacing timer through `poll_timeout`/`handle_timeout`).
//!
//! INVARIANT: the source emits each byte exactly once, in order; the sink never reports
//! [`Event::Delivered`] unless every byte up to the `FIN` datagram's end has arrived.

use units::{Bps, Bytes, Time};
use wire::{DatagramRepr, Ecn, Flags};

use crate::{Event, Outcome, Stats};

/// Knobs of the UDP source.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct UdpConfig {
    /// Maximum payload bytes per datagram. Default 1460.
    pub mss: u32,
    /// Sending rate in payload-plus-header bits per second, counting `header_bytes` per
    /// datagram; `None` means "as fast as the driver takes them" (the simulator then paces at
    /// the NIC's line rate). Default `None`.
    pub rate: Option<Bps>,
    /// Header bytes per datagram counted against `rate`. Default 40.
    pub header_bytes: u32,
    /// Priority class stamped on every datagram. Default 0.
    pub prio: u8,
}

impl Default for UdpConfig {
    fn default() -> Self {
        UdpConfig { mss: 1460, rate: None, header_bytes: 40, prio: 0 }
    }
}

/// UDP source of one transfer. Call order as for [`crate::tcp::Conn`]: after creation and
/// after every `handle_*` call, drain `poll_transmit`, then `poll_timeout`, then `poll_event`.
///
/// Paced (`rate: Some(r)`): the first datagram is due at creation, each next one
/// `r.tx_time(len + header_bytes)` of the previous datagram after the previous one was handed
/// out (from the `now` of that `poll_transmit`, so a late driver never bursts).
/// [`Event::SenderDone`] is emitted once, when the last datagram has been handed out.
#[derive(Debug)]
pub struct UdpSender {
    conn: u32,
    mss: u32,
    rate: Option<Bps>,
    header_bytes: u32,
    prio: u8,
    /// Bytes handed over by the application so far.
    size: u64,
    /// Whether the application closed the stream.
    closed: bool,
    /// A zero-length FIN datagram is due (closed after the last byte left).
    fin_due: bool,
    /// Next byte to send.
    next_seq: u64,
    /// When the next datagram may leave (paced only).
    next_at: Time,
    event: Option<Event>,
    stats: Stats,
}

impl UdpSender {
    /// A source of `size` bytes on connection `conn`, starting at `now`.
    /// PRECONDITION: `size >= 1`, `mss >= 1`.
    pub fn new(cfg: &UdpConfig, conn: u32, size: Bytes, now: Time) -> UdpSender {
        debug_assert!(cfg.mss > 0, "zero MSS");
        UdpSender {
            conn,
            mss: cfg.mss,
            rate: cfg.rate,
            header_bytes: cfg.header_bytes,
            prio: cfg.prio,
            size: size.get(),
            closed: true,
            fin_due: false,
            next_seq: 0,
            next_at: now,
            event: None,
            stats: Stats::default(),
        }
    }

    /// Input from the application: cap the sending rate (`None` restores the configured
    /// rate). The source is paced at the lower of the configured rate and the cap.
    pub fn set_rate_cap(&mut self, cap: Option<Bps>, configured: Option<Bps>) {
        self.rate = match (configured, cap.filter(|c| c.get() > 0)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// An open stream on connection `conn`: nothing to send until [`UdpSender::send`].
    pub fn stream(cfg: &UdpConfig, conn: u32, now: Time) -> UdpSender {
        let mut s = UdpSender::new(cfg, conn, Bytes(0), now);
        s.closed = false;
        s
    }

    /// Input from the application: `bytes` more to send. Ignored after `close`.
    pub fn send(&mut self, bytes: u64) {
        if !self.closed {
            self.size = self.size.saturating_add(bytes);
        }
    }

    /// Input from the application: the stream ends here. If every byte already left, a
    /// zero-length datagram carrying FIN announces the end.
    pub fn close(&mut self) {
        if !self.closed {
            self.closed = true;
            self.fin_due = self.next_seq == self.size;
        }
    }

    /// Input: time passed. Pacing is evaluated in `poll_transmit`, so this is always a no-op;
    /// it exists for the uniform driver contract.
    #[inline]
    pub fn handle_timeout(&mut self, _now: Time) {}

    /// Output: the next datagram, if one is due at `now`.
    pub fn poll_transmit(&mut self, now: Time) -> Option<DatagramRepr> {
        if self.next_seq >= self.size {
            if !self.fin_due {
                return None;
            }
            self.fin_due = false;
            self.event = Some(Event::SenderDone { outcome: Outcome::Complete, confirmed: false });
            let (conn, seq, prio) = (self.conn, self.size, self.prio);
            return Some(DatagramRepr { conn, seq, len: 0, flags: Flags::FIN, ecn: Ecn::NotEct, prio, ts_ps: now.ps() });
        }
        if self.rate.is_some() && now < self.next_at {
            return None;
        }
        let seq = self.next_seq;
        let len = (self.size - seq).min(u64::from(self.mss));
        self.next_seq += len;
        if let Some(r) = self.rate {
            self.next_at = now + r.tx_time(Bytes(len + u64::from(self.header_bytes)));
        }
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len;
        let mut flags = Flags::NONE;
        if self.next_seq == self.size && self.closed {
            flags = Flags::FIN;
            self.event = Some(Event::SenderDone { outcome: Outcome::Complete, confirmed: false });
        }
        Some(DatagramRepr { conn: self.conn, seq, len: len as u32, flags, ecn: Ecn::NotEct, prio: self.prio, ts_ps: now.ps() })
    }

    /// Output: when the next paced datagram is due (`None` when unpaced or finished).
    #[inline]
    pub fn poll_timeout(&self) -> Option<Time> {
        match self.rate {
            Some(_) if self.next_seq < self.size => Some(self.next_at),
            _ => None,
        }
    }

    /// Output: the next event, if any.
    #[inline]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.event.take()
    }

    /// Counters (`segments_sent`, `bytes_sent`).
    pub fn stats(&self) -> Stats {
        self.stats
    }
}

/// UDP sink of one transfer: counts payload bytes and CE marks, and emits
/// [`Event::Delivered`] once, from the `handle_segment` after which the payload bytes
/// received reach the total announced by the `FIN` datagram's end. If anything was lost
/// (including the `FIN` datagram), it never fires.
#[derive(Debug)]
pub struct UdpReceiver {
    conn: u32,
    total: Option<u64>,
    is_done: bool,
    event: Option<Event>,
    stats: Stats,
}

impl UdpReceiver {
    /// A sink for connection `conn`.
    pub fn new(_cfg: &UdpConfig, conn: u32) -> UdpReceiver {
        UdpReceiver { conn, total: None, is_done: false, event: None, stats: Stats::default() }
    }

    /// Input: a datagram arrived.
    pub fn handle_segment(&mut self, _now: Time, seg: &DatagramRepr) {
        if seg.conn != self.conn {
            return;
        }
        // The source never duplicates a byte, so the payload count is the distinct count.
        self.stats.bytes_received += u64::from(seg.len);
        if seg.ecn == Ecn::Ce {
            self.stats.num_ecn += 1;
        }
        if seg.flags.contains(Flags::FIN) && self.total.is_none() {
            self.total = Some(seg.seq.saturating_add(u64::from(seg.len)));
        }
        if !self.is_done && self.total.is_some_and(|t| self.stats.bytes_received >= t) {
            self.is_done = true;
            self.event = Some(Event::Delivered { outcome: Outcome::Complete });
        }
    }

    /// Output: the next event, if any.
    #[inline]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.event.take()
    }

    /// Counters (`bytes_received`, `num_ecn`).
    pub fn stats(&self) -> Stats {
        self.stats
    }
}
