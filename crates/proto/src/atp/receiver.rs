//! The ATP receiver: acknowledges every data packet, assembles messages, and at the sender's
//! end-of-job notice reports the messages it does not have as lost (§3.2: "ApproxLib reports
//! lost messages to the framework").
//!
//! Robustness (the real transport feeds it untrusted packets): message ids at or above
//! [`MAX_JOB_MESSAGES`], packet counts above [`MAX_MESSAGE_PKTS`], a packet count that
//! disagrees with the message's first packet, or payload beyond what the receiver keeps track
//! of ([`MAX_PARTIAL_WORDS`]) are dropped and counted, never trusted; memory is bounded by those
//! limits.

use std::collections::BTreeMap;

use units::Time;
use wire::{AtpKind, AtpRepr, Ecn};

use super::{MAX_JOB_MESSAGES, MAX_MESSAGE_PKTS};
use crate::{Event, Outcome, Stats};

/// The most 64-bit words of packet bitmaps held for partly received messages at once (16 MB).
pub const MAX_PARTIAL_WORDS: usize = 1 << 21;

/// A message with some but not all of its packets.
#[derive(Debug)]
struct Partial {
    pkts: u32,
    got: u32,
    bits: Vec<u64>,
}

/// The receiving side of an ATP job.
#[derive(Debug)]
pub struct AtpReceiver {
    conn: u32,
    ack_prio: u8,
    partial: BTreeMap<u32, Partial>,
    partial_words: usize,
    /// Bitmap of whole messages by id.
    whole: Vec<u64>,
    whole_count: u64,
    acks: std::collections::VecDeque<AtpRepr>,
    /// Messages in the job, once the sender said so.
    total: Option<u64>,
    event: Option<Event>,
    stats: Stats,
    /// Packets refused by the limits in the module docs.
    refused: u64,
}

impl AtpReceiver {
    /// The receiver of job `conn`; ACKs go out in class `ack_prio`.
    pub fn new(conn: u32, ack_prio: u8) -> AtpReceiver {
        AtpReceiver {
            conn,
            ack_prio,
            partial: BTreeMap::new(),
            partial_words: 0,
            whole: Vec::new(),
            whole_count: 0,
            acks: Default::default(),
            total: None,
            event: None,
            stats: Stats::default(),
            refused: 0,
        }
    }

    fn is_whole(&self, msg: u32) -> bool {
        self.whole.get(msg as usize / 64).is_some_and(|w| w >> (msg % 64) & 1 == 1)
    }

    /// Input: a packet from the sender arrived at `now`.
    pub fn handle_segment(&mut self, now: Time, d: &AtpRepr) {
        let _ = now;
        if d.conn != self.conn {
            return;
        }
        match d.kind {
            AtpKind::Data => self.on_data(d),
            AtpKind::Fin => self.on_fin(d.seq),
            AtpKind::Ack => {}
        }
    }

    fn on_data(&mut self, d: &AtpRepr) {
        if u64::from(d.msg) >= MAX_JOB_MESSAGES || d.pkts == 0 || d.pkts > MAX_MESSAGE_PKTS || d.pkt >= d.pkts {
            self.refused += 1;
            return;
        }
        let ce = d.ecn == Ecn::Ce;
        if ce {
            self.stats.num_ecn += 1;
        }
        if !self.is_whole(d.msg) && !self.record(d) {
            self.refused += 1;
            return;
        }
        // Every accepted packet is acknowledged, duplicates too (the sender counts each once).
        self.acks.push_back(AtpRepr {
            kind: AtpKind::Ack,
            conn: self.conn,
            seq: d.seq,
            msg: d.msg,
            pkt: d.pkt,
            pkts: d.pkts,
            group: d.group,
            epoch: d.epoch,
            len: 0,
            ece: ce,
            ecn: Ecn::NotEct,
            prio: self.ack_prio,
            ts_ps: d.ts_ps,
        });
    }

    /// Note packet `d.pkt` of a message not yet whole; false if refused.
    fn record(&mut self, d: &AtpRepr) -> bool {
        let words = (d.pkts as usize).div_ceil(64);
        if !self.partial.contains_key(&d.msg) {
            if self.partial_words + words > MAX_PARTIAL_WORDS {
                return false;
            }
            self.partial_words += words;
            self.partial.insert(d.msg, Partial { pkts: d.pkts, got: 0, bits: vec![0; words] });
        }
        let Some(p) = self.partial.get_mut(&d.msg) else { return false };
        if p.pkts != d.pkts {
            return false;
        }
        let (w, b) = (d.pkt as usize / 64, d.pkt % 64);
        if p.bits[w] >> b & 1 == 0 {
            p.bits[w] |= 1 << b;
            p.got += 1;
            self.stats.bytes_received += u64::from(d.len);
        }
        if p.got == p.pkts {
            self.partial_words -= p.bits.len();
            self.partial.remove(&d.msg);
            let w = d.msg as usize / 64;
            if self.whole.len() <= w {
                self.whole.resize(w + 1, 0);
            }
            self.whole[w] |= 1 << (d.msg % 64);
            self.whole_count += 1;
        }
        true
    }

    fn on_fin(&mut self, total: u64) {
        if self.total.is_some() || total > MAX_JOB_MESSAGES {
            return;
        }
        self.total = Some(total);
        let outcome = if self.whole_count >= total { Outcome::Complete } else { Outcome::Enough };
        self.event = Some(Event::Delivered { outcome });
    }

    /// Messages received whole so far.
    pub fn messages_received(&self) -> u64 {
        self.whole_count
    }

    /// Whether message `msg` arrived whole.
    pub fn has_message(&self, msg: u32) -> bool {
        self.is_whole(msg)
    }

    /// The messages of the job that did not arrive whole, once the sender's end-of-job notice
    /// arrived (`None` before).
    pub fn lost_messages(&self) -> Option<Vec<u32>> {
        let total = self.total?;
        Some((0..total as u32).filter(|&m| !self.is_whole(m)).collect())
    }

    /// Packets refused by the limits in the module docs.
    pub fn refused_packets(&self) -> u64 {
        self.refused
    }

    /// Output: the next ACK to send, if any.
    pub fn poll_transmit(&mut self) -> Option<AtpRepr> {
        self.acks.pop_front()
    }

    /// Output: the next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.event.take()
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }
}
