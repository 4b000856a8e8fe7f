//! The ATP receiver: acknowledges every data packet, assembles messages, and at the sender's
//! end-of-job notice reports the messages it does not have as lost (§3.2: "ApproxLib reports
//! lost messages to the framework").
//!
//! Robustness (the real transport feeds it untrusted packets): message ids at or above
//! [`MAX_JOB_MESSAGES`], packet counts above [`MAX_MESSAGE_PKTS`], a packet count that
//! disagrees with the message's first packet, or payload beyond what the receiver keeps track
//! of ([`MAX_PARTIAL_WORDS`]) are dropped and counted, never trusted; memory is bounded by those
//! limits. The bitmaps are allocated as packets arrive ([`LazyBits`]), so a packet's claim
//! alone (a message of 2^20 packets, a message id near 2^24) costs a table of 8 bytes per
//! 4,096 bits, not the whole bitmap (128 KB and 2 MB).

use std::collections::BTreeMap;

use units::Time;
use wire::{AtpKind, AtpRepr, Ecn};

use super::{MAX_JOB_MESSAGES, MAX_MESSAGE_PKTS};
use crate::bits::LazyBits;
use crate::{Event, Outcome, Stats};

/// The most 64-bit words of packet bitmaps held for partly received messages at once (16 MB).
pub const MAX_PARTIAL_WORDS: usize = 1 << 21;

/// A message with some but not all of its packets.
#[derive(Debug)]
struct Partial {
    pkts: u32,
    got: u32,
    bits: LazyBits,
}

/// The receiving side of an ATP job.
#[derive(Debug)]
pub struct AtpReceiver {
    conn: u32,
    ack_prio: u8,
    partial: BTreeMap<u32, Partial>,
    partial_words: usize,
    /// Bitmap of whole messages by id.
    whole: LazyBits,
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
            whole: LazyBits::default(),
            whole_count: 0,
            acks: Default::default(),
            total: None,
            event: None,
            stats: Stats::default(),
            refused: 0,
        }
    }

    fn is_whole(&self, msg: u32) -> bool {
        self.whole.get(msg as usize)
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
        if !self.partial.contains_key(&d.msg) {
            let bits = LazyBits::new(d.pkts as usize);
            let words = bits.cost_words();
            if self.partial_words + words > MAX_PARTIAL_WORDS {
                return false;
            }
            self.partial_words += words;
            self.partial.insert(d.msg, Partial { pkts: d.pkts, got: 0, bits });
        }
        let Some(p) = self.partial.get_mut(&d.msg) else { return false };
        if p.pkts != d.pkts {
            return false;
        }
        let i = d.pkt as usize;
        if p.bits.needs_leaf(i) {
            // A leaf of the bitmap is allocated for this packet: within the bound, or refused.
            if self.partial_words + crate::bits::LEAF_WORDS > MAX_PARTIAL_WORDS {
                return false;
            }
            self.partial_words += crate::bits::LEAF_WORDS;
        }
        if p.bits.set(i) {
            p.got += 1;
            self.stats.bytes_received += u64::from(d.len);
        }
        if p.got == p.pkts {
            self.partial_words -= p.bits.cost_words();
            self.partial.remove(&d.msg);
            self.whole.set(d.msg as usize);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn data(msg: u32, pkt: u32, pkts: u32) -> AtpRepr {
        AtpRepr { kind: AtpKind::Data, conn: 1, msg, pkt, pkts, len: 100, ..AtpRepr::default() }
    }

    #[test]
    fn a_packets_claim_alone_allocates_no_whole_bitmap() {
        // A one-packet message with an id near 2^24 made `whole` 2 MB; a packet of a message of
        // 2^20 packets made a 128 KB bitmap. Now the tables, and one leaf per bit set.
        let mut r = AtpReceiver::new(1, 0);
        r.handle_segment(Time::ZERO, &data((1 << 24) - 1, 0, 1));
        assert!(r.has_message((1 << 24) - 1) && !r.has_message(0));
        assert_eq!(r.whole.cost_words(), 4096 + 64);
        r.handle_segment(Time::ZERO, &data(7, (1 << 20) - 1, 1 << 20));
        assert_eq!(r.partial_words, 256 + 64);
        // Completing a message gives its words back.
        for pkt in 0..3 {
            r.handle_segment(Time::ZERO, &data(9, pkt, 3));
        }
        assert!(r.has_message(9));
        assert_eq!(r.partial_words, 256 + 64);
        assert_eq!(r.messages_received(), 2);
    }

    #[test]
    fn the_partial_bound_counts_the_leaves_allocated() {
        // Packets spread over leaves of many partial messages: refused once their words would
        // pass MAX_PARTIAL_WORDS, and never more allocated.
        let mut r = AtpReceiver::new(1, 0);
        let mut msg = 0;
        while r.refused_packets() == 0 {
            r.handle_segment(Time::ZERO, &data(msg, 0, 1 << 20));
            msg += 1;
        }
        assert!(r.partial_words <= MAX_PARTIAL_WORDS);
        assert_eq!(r.partial_words, r.partial.values().map(|p| p.bits.cost_words()).sum::<usize>());
        assert_eq!(r.partial.len() as u32, msg - 1);
    }
}
