//! Selective acknowledgments ([`TcpConfig::sack`](super::TcpConfig::sack)): the receiver's
//! report of the blocks it holds (RFC 2018 §4) and the sender's scoreboard with RFC 6675's
//! `IsLost`, `SetPipe` and `NextSeg` (§4).
//!
//! Sequence numbers here are byte offsets with exclusive ends, where RFC 6675 names inclusive
//! octets: its `HighRxt` (the highest octet retransmitted) is `high_rxt - 1`, its
//! `RecoveryPoint` (`HighData`) is the sender's `recover - 1`.
//!
//! INVARIANT (`Scoreboard::ranges`): sorted, disjoint and non-adjacent, every range inside
//! `(snd_una, snd_max)` as of the last `update`, at most [`MAX_RANGES`] of them.

use wire::SackBlocks;

/// The most SACKed ranges a scoreboard keeps. A block that would make one more is ignored:
/// its bytes count as not received (at worst retransmitted once more), so that a receiver
/// reporting every other byte cannot make the sender's state grow without bound.
pub(super) const MAX_RANGES: usize = 1024;

/// The receiver's side: the blocks most recently reported (RFC 2018 §4), and the blocks of
/// each ACK queued for `poll_transmit`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SackReport {
    /// The blocks the receiver reports now, most recent first; each is one of its
    /// out-of-order ranges.
    recent: SackBlocks,
    /// Blocks of the ACKs in the receiver's queue, in the same order (pushed and popped with
    /// them; the queue keeps two, the newer replacing the second when full).
    queued: [SackBlocks; 2],
    num_queued: u8,
    /// Blocks of the ACK the last `poll_transmit` returned, until `take`.
    out: Option<SackBlocks>,
}

impl SackReport {
    /// A segment `[start, end)` arrived and `ooo` (the receiver's out-of-order ranges, above
    /// `rcv_nxt`) now holds it where it lies above `rcv_nxt`. RFC 2018 §4: the first block
    /// is the one holding the segment that triggered the ACK (if it is out of order), the
    /// others repeat the most recently reported blocks, each at most once, as they stand now
    /// (a block that grew by a merge is reported whole; one now acknowledged is left out).
    pub(super) fn on_segment(&mut self, start: u64, end: u64, rcv_nxt: u64, ooo: &[(u64, u64)]) {
        let holding = |seq: u64| -> Option<(u64, u64)> {
            let i = ooo.partition_point(|r| r.1 <= seq);
            ooo.get(i).copied().filter(|r| r.0 <= seq)
        };
        let mut next = SackBlocks::default();
        if end > rcv_nxt {
            if let Some(r) = holding(start.max(rcv_nxt)) {
                next.push(r);
            }
        }
        for &(s, _) in self.recent.blocks() {
            if let Some(r) = holding(s) {
                if !next.blocks().contains(&r) {
                    next.push(r);
                }
            }
        }
        self.recent = next;
    }

    /// An ACK was queued: it carries the blocks as they stand (none for a SYN-ACK).
    pub(super) fn on_ack_queued(&mut self, is_syn_ack: bool) {
        let blocks = if is_syn_ack { SackBlocks::default() } else { self.recent };
        if (self.num_queued as usize) < self.queued.len() {
            self.queued[self.num_queued as usize] = blocks;
            self.num_queued += 1;
        } else {
            // Mirrors `AckQueue::push`: the newer ACK replaces the second one.
            self.queued[1] = blocks;
        }
    }

    /// The queued ACK at the head left (`poll_transmit`): its blocks are handed out next.
    pub(super) fn on_ack_sent(&mut self) {
        if self.num_queued == 0 {
            self.out = None;
            return;
        }
        let b = self.queued[0];
        self.queued[0] = self.queued[1];
        self.num_queued -= 1;
        self.out = (!b.is_empty()).then_some(b);
    }

    /// The blocks of the ACK the last `poll_transmit` returned, once.
    pub(super) fn take(&mut self) -> Option<SackBlocks> {
        self.out.take()
    }

    #[cfg(test)]
    pub(super) fn recent(&self) -> &[(u64, u64)] {
        self.recent.blocks()
    }
}

/// What RFC 6675's `NextSeg()` chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Retransmit `[seq, seq + len)` (rules 1 and 3), or the rescue retransmission (rule 4).
    Retransmit { seq: u64, len: u64, rescue: bool },
    /// Rule (2): new data, if there is any and the window allows (rule 1 found nothing).
    NewData,
    /// Nothing to send.
    Nothing,
}

/// The sender's side: what the receiver reported holding above `snd_una`, and RFC 6675's
/// recovery state.
#[derive(Clone, Debug, Default)]
pub(super) struct Scoreboard {
    /// SACKed ranges `[start, end)` (module INVARIANT).
    ranges: Vec<(u64, u64)>,
    /// Bytes in `ranges`.
    sacked: u64,
    /// RFC 6675 `HighRxt`, exclusive: one past the highest byte retransmitted in this
    /// recovery (`snd_una` at its start).
    pub(super) high_rxt: u64,
    /// RFC 6675 `RescueRxt`, exclusive; `None` while undefined.
    pub(super) rescue_rxt: Option<u64>,
    /// RFC 6675 `pipe`: the sender's estimate of the bytes in the network.
    pub(super) pipe: u64,
    /// RACK's loss boundary ([`TcpConfig::rack_tlp`](super::TcpConfig::rack_tlp), RFC 8985
    /// §6.2 step 5): every byte not SACKed below it is lost, by the time RACK found; `0`
    /// without RACK or before it marked anything. `lost_below` takes the higher of it and
    /// RFC 6675's own boundary.
    pub(super) rack_lost: u64,
}

impl Scoreboard {
    /// RFC 6675 `Update()`: drop what `snd_una` now covers and record `blocks`, clipped to
    /// the data outstanding `[snd_una, snd_max)`. Returns whether a block reported a byte not
    /// SACKed before (RFC 6675 §2's duplicate acknowledgment "carries new SACK information").
    pub(super) fn update(&mut self, snd_una: u64, snd_max: u64, blocks: Option<&SackBlocks>) -> bool {
        self.update_with(snd_una, snd_max, blocks, |_, _| {})
    }

    /// [`Scoreboard::update`], calling `newly(start, end)` for each range of bytes SACKed
    /// for the first time (what RACK counts as delivered by this ACK).
    pub(super) fn update_with(
        &mut self,
        snd_una: u64,
        snd_max: u64,
        blocks: Option<&SackBlocks>,
        mut newly: impl FnMut(u64, u64),
    ) -> bool {
        let gone = self.ranges.partition_point(|r| r.1 <= snd_una);
        for r in self.ranges.drain(..gone) {
            self.sacked -= r.1 - r.0;
        }
        if let Some(first) = self.ranges.first_mut() {
            if first.0 < snd_una {
                self.sacked -= snd_una - first.0;
                first.0 = snd_una;
            }
        }
        let mut is_news = false;
        for &(s, e) in blocks.map_or(&[][..], |b| b.blocks()) {
            let (s, e) = (s.max(snd_una), e.min(snd_max));
            if s < e {
                is_news |= self.insert(s, e, &mut newly) > 0;
            }
        }
        debug_assert_eq!(self.sacked, self.ranges.iter().map(|r| r.1 - r.0).sum::<u64>());
        is_news
    }

    /// Record `[s, e)` as SACKed, calling `newly` for each part of it not SACKed before;
    /// returns the bytes not SACKed before.
    fn insert(&mut self, s: u64, e: u64, newly: &mut impl FnMut(u64, u64)) -> u64 {
        // First range that overlaps or touches [s, e).
        let i = self.ranges.partition_point(|r| r.1 < s);
        let mut j = i;
        let (mut lo, mut hi, mut covered) = (s, e, 0);
        while j < self.ranges.len() && self.ranges[j].0 <= e {
            let (rs, re) = self.ranges[j];
            covered += re - rs;
            lo = lo.min(rs);
            hi = hi.max(re);
            j += 1;
        }
        if j == i {
            if self.ranges.len() >= MAX_RANGES {
                return 0;
            }
            self.ranges.insert(i, (lo, hi));
            newly(s, e);
        } else {
            // The gaps of [s, e) between the ranges it merges are new.
            let mut at = s;
            for &(rs, re) in &self.ranges[i..j] {
                if rs > at {
                    newly(at, rs.min(e));
                }
                at = at.max(re);
            }
            if at < e {
                newly(at, e);
            }
            self.ranges[i] = (lo, hi);
            self.ranges.drain(i + 1..j);
        }
        let added = (hi - lo) - covered;
        self.sacked += added;
        added
    }

    /// Forget every report (RFC 2018 §8 at a retransmission timeout: the sender "MUST
    /// ignore prior SACK information in determining which data to retransmit").
    /// Bytes SACKed above `snd_una`.
    #[inline]
    pub(super) fn sacked(&self) -> u64 {
        self.sacked
    }

    pub(super) fn clear(&mut self) {
        self.ranges.clear();
        self.sacked = 0;
        self.high_rxt = 0;
        self.rescue_rxt = None;
        self.pipe = 0;
        self.rack_lost = 0;
    }

    /// RFC 6675 `IsLost()` as one boundary: every byte not SACKed below the returned offset is
    /// lost (`DupThresh` discontiguous SACKed ranges, or more than `(DupThresh - 1)·SMSS`
    /// SACKed bytes, above it), none at or above it. `IsLost` is monotone (a lower byte has at
    /// least as much SACKed above it), and constant between two SACKed ranges, so the boundary
    /// is the start of the highest range at which the count first suffices; `0` if none does.
    /// With RACK, the higher of that and RACK's boundary (`rack_lost`).
    pub(super) fn lost_below(&self, dupthresh: u32, mss: u32) -> u64 {
        self.dupthresh_lost_below(dupthresh, mss).max(self.rack_lost)
    }

    /// RFC 6675's `IsLost()` boundary alone (see [`Scoreboard::lost_below`]).
    fn dupthresh_lost_below(&self, dupthresh: u32, mss: u32) -> u64 {
        let bytes_needed = u64::from(dupthresh.saturating_sub(1)).saturating_mul(u64::from(mss));
        let (mut bytes, mut count) = (0u64, 0u64);
        for &(s, e) in self.ranges.iter().rev() {
            bytes += e - s;
            count += 1;
            if count >= u64::from(dupthresh) || bytes > bytes_needed {
                return s;
            }
        }
        0
    }

    /// Bytes in `[a, b)` that were SACKed.
    fn sacked_in(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        let i = self.ranges.partition_point(|r| r.1 <= a);
        self.ranges[i..].iter().take_while(|r| r.0 < b).map(|r| r.1.min(b) - r.0.max(a)).sum()
    }

    /// RFC 6675 `SetPipe()`: every byte in `[snd_una, snd_max)` not SACKed counts once if it
    /// is not lost and once more if it was retransmitted in this recovery (below `high_rxt`).
    pub(super) fn set_pipe(&mut self, snd_una: u64, snd_max: u64, dupthresh: u32, mss: u32) {
        let lost = self.lost_below(dupthresh, mss).clamp(snd_una, snd_max);
        let not_lost = (snd_max - lost) - self.sacked_in(lost, snd_max);
        let rxt_end = self.high_rxt.clamp(snd_una, snd_max);
        let retransmitted = (rxt_end - snd_una) - self.sacked_in(snd_una, rxt_end);
        self.pipe = not_lost + retransmitted;
    }

    /// The first byte at or above `seq` that was not SACKed, and where the SACKed range after
    /// it starts (`u64::MAX` if none).
    fn first_hole(&self, seq: u64) -> (u64, u64) {
        let i = self.ranges.partition_point(|r| r.1 <= seq);
        match self.ranges.get(i) {
            Some(r) if r.0 <= seq => (r.1, self.ranges.get(i + 1).map_or(u64::MAX, |n| n.0)),
            Some(r) => (seq, r.0),
            None => (seq, u64::MAX),
        }
    }

    /// Where go-back-N continues from `seq`: past the SACKed range holding it, if any.
    pub(super) fn skip(&self, seq: u64) -> u64 {
        self.first_hole(seq).0
    }

    /// The first hole above `HighRxt` and below the highest SACKed byte, as `(seq, len)`: one
    /// segment from there (`seg_len(seq)`), stopping short of the next SACKed range. Rules (1)
    /// and (3) of `NextSeg()` both retransmit it; rule (1) only if it is lost.
    fn hole_above_high_rxt(&self, snd_una: u64, snd_max: u64, seg_len: impl Fn(u64) -> u64) -> Option<(u64, u64)> {
        let &(_, top) = self.ranges.last()?;
        let (hole, next_sacked) = self.first_hole(self.high_rxt.max(snd_una));
        (hole < top).then(|| (hole, seg_len(hole).min(next_sacked - hole).min(snd_max - hole)))
    }

    /// RFC 6675 `NextSeg()` rule (1): the first hole above HighRxt if it is lost; otherwise
    /// `NewData`: rule (2) is the caller's (new data if there is any and the window allows; if
    /// not, `next_seg_after_new_data`).
    pub(super) fn next_seg(&self, snd_una: u64, snd_max: u64, dupthresh: u32, mss: u32, seg_len: impl Fn(u64) -> u64) -> Next {
        match self.hole_above_high_rxt(snd_una, snd_max, seg_len) {
            Some((seq, len)) if seq < self.lost_below(dupthresh, mss) => Next::Retransmit { seq, len, rescue: false },
            _ => Next::NewData,
        }
    }

    /// Rules (3) and (4) of `NextSeg()`, for when rule (2) found no new data to send: the
    /// first hole above HighRxt, lost or not, else the rescue.
    pub(super) fn next_seg_after_new_data(
        &self,
        snd_una: u64,
        snd_max: u64,
        mss: u32,
        seg_len: impl Fn(u64) -> u64,
    ) -> Next {
        if let Some((seq, len)) = self.hole_above_high_rxt(snd_una, snd_max, &seg_len) {
            return Next::Retransmit { seq, len, rescue: false };
        }
        self.rescue(snd_una, snd_max, mss, &seg_len).unwrap_or(Next::Nothing)
    }

    /// Rule (4): once per recovery, after `snd_una` passed `RescueRxt`, one segment holding
    /// the highest byte outstanding and not SACKed.
    fn rescue(&self, snd_una: u64, snd_max: u64, mss: u32, seg_len: impl Fn(u64) -> u64) -> Option<Next> {
        if self.rescue_rxt.is_some_and(|r| snd_una < r) {
            return None;
        }
        // The highest byte not SACKed: below the top range if it reaches `snd_max`.
        let last = match self.ranges.last() {
            Some(&(s, e)) if e >= snd_max => s,
            _ => snd_max,
        };
        if last <= snd_una {
            return None;
        }
        let high = last - 1;
        let mss = u64::from(mss.max(1));
        let seq = (high - high % mss).max(snd_una);
        let len = seg_len(seq).min(last - seq);
        Some(Next::Retransmit { seq, len, rescue: true })
    }

    #[cfg(test)]
    pub(super) fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 100;

    fn blocks(b: &[(u64, u64)]) -> SackBlocks {
        let mut s = SackBlocks::default();
        for &x in b {
            s.push(x);
        }
        s
    }

    fn seg_len(seq: u64) -> u64 {
        u64::from(MSS) - seq % u64::from(MSS)
    }

    #[test]
    fn report_puts_the_triggering_block_first_and_repeats_recent_ones() {
        let mut r = SackReport::default();
        // rcv_nxt 0; segments 200, 400, 600 arrive out of order (each its own range).
        r.on_segment(200, 300, 0, &[(200, 300)]);
        assert_eq!(r.recent(), &[(200, 300)]);
        r.on_segment(400, 500, 0, &[(200, 300), (400, 500)]);
        assert_eq!(r.recent(), &[(400, 500), (200, 300)]);
        r.on_segment(600, 700, 0, &[(200, 300), (400, 500), (600, 700)]);
        assert_eq!(r.recent(), &[(600, 700), (400, 500), (200, 300)]);
        r.on_segment(800, 900, 0, &[(200, 300), (400, 500), (600, 700), (800, 900)]);
        assert_eq!(r.recent(), &[(800, 900), (600, 700), (400, 500)], "three blocks at most");
        // 300 bridges (200, 300) and (400, 500): the merged block comes first, once.
        r.on_segment(300, 400, 0, &[(200, 500), (600, 700), (800, 900)]);
        assert_eq!(r.recent(), &[(200, 500), (800, 900), (600, 700)]);
        // The hole at 0 is filled: rcv_nxt jumps to 500, the acknowledged block goes.
        r.on_segment(0, 200, 500, &[(600, 700), (800, 900)]);
        assert_eq!(r.recent(), &[(800, 900), (600, 700)]);
    }

    #[test]
    fn report_queue_follows_the_ack_queue() {
        let mut r = SackReport::default();
        r.on_segment(200, 300, 0, &[(200, 300)]);
        r.on_ack_queued(false);
        r.on_ack_queued(true);
        r.on_ack_sent();
        assert_eq!(r.take(), Some(blocks(&[(200, 300)])));
        assert_eq!(r.take(), None, "once");
        r.on_ack_sent();
        assert_eq!(r.take(), None, "a SYN-ACK carries none");
        r.on_ack_sent();
        assert_eq!(r.take(), None, "nothing queued");
    }

    #[test]
    fn update_clips_merges_and_counts_news() {
        let mut sb = Scoreboard::default();
        assert!(sb.update(0, 1000, Some(&blocks(&[(200, 300), (500, 600)]))));
        assert!(!sb.update(0, 1000, Some(&blocks(&[(200, 300)]))), "nothing new");
        assert!(sb.update(0, 1000, Some(&blocks(&[(300, 500)]))));
        assert_eq!(sb.ranges(), &[(200, 600)]);
        assert!(sb.update(0, 1000, Some(&blocks(&[(900, 5000)]))), "clipped to snd_max");
        assert_eq!(sb.ranges(), &[(200, 600), (900, 1000)]);
        assert!(!sb.update(250, 1000, None));
        assert_eq!(sb.ranges(), &[(250, 600), (900, 1000)], "clipped to snd_una");
        assert!(!sb.update(700, 1000, Some(&blocks(&[(0, 650)]))), "below snd_una: ignored");
        assert_eq!(sb.ranges(), &[(900, 1000)]);
        assert_eq!(sb.sacked, 100);
    }

    /// `update_with` reports exactly the bytes SACKed for the first time (what RACK counts
    /// as delivered): a new range whole, the gaps of a block that merges ranges, nothing for
    /// a repeat; their sum is the growth of `sacked`.
    #[test]
    fn update_with_reports_exactly_the_newly_sacked_parts() {
        let mut sb = Scoreboard::default();
        let run = |sb: &mut Scoreboard, b: &[(u64, u64)]| {
            let mut new = Vec::new();
            let before = sb.sacked();
            sb.update_with(0, 1000, Some(&blocks(b)), |s, e| new.push((s, e)));
            assert_eq!(new.iter().map(|r| r.1 - r.0).sum::<u64>(), sb.sacked() - before, "{b:?}");
            new
        };
        assert_eq!(run(&mut sb, &[(200, 300), (500, 600)]), vec![(200, 300), (500, 600)]);
        assert_eq!(run(&mut sb, &[(200, 300)]), vec![]);
        assert_eq!(run(&mut sb, &[(150, 700)]), vec![(150, 200), (300, 500), (600, 700)]);
        assert_eq!(run(&mut sb, &[(100, 150), (700, 750)]), vec![(100, 150), (700, 750)]);
        assert_eq!(sb.ranges(), &[(100, 750)]);
    }

    #[test]
    fn update_is_bounded() {
        let mut sb = Scoreboard::default();
        for i in 0..(MAX_RANGES as u64 + 10) {
            sb.update(0, u64::MAX, Some(&blocks(&[(2 * i + 1, 2 * i + 2)])));
        }
        assert_eq!(sb.ranges().len(), MAX_RANGES);
        // A block that merges with kept ranges is still recorded.
        assert!(sb.update(0, u64::MAX, Some(&blocks(&[(1, 4)]))));
    }

    #[test]
    fn is_lost_by_bytes_or_by_discontiguous_ranges() {
        let mut sb = Scoreboard::default();
        // Segments of 100 bytes; 0 lost, 100 and 200 SACKed: 200 bytes is not more than
        // (3 - 1)·100, and two ranges are fewer than three: nothing is lost yet.
        sb.update(0, 1000, Some(&blocks(&[(100, 300)])));
        assert_eq!(sb.lost_below(3, MSS), 0);
        sb.update(0, 1000, Some(&blocks(&[(300, 400)])));
        assert_eq!(sb.lost_below(3, MSS), 100, "300 bytes SACKed above 0..100");
        // Three discontiguous small ranges above a byte make it lost too.
        let mut sb = Scoreboard::default();
        sb.update(0, 1000, Some(&blocks(&[(100, 110), (200, 210), (300, 310)])));
        assert_eq!(sb.lost_below(3, MSS), 100);
        assert_eq!(sb.lost_below(4, MSS), 0);
    }

    #[test]
    fn pipe_counts_unsacked_not_lost_plus_retransmitted() {
        let mut sb = Scoreboard::default();
        // 10 segments out (0..1000); 0 and 500 lost, the rest SACKed.
        sb.update(0, 1000, Some(&blocks(&[(100, 500), (600, 1000)])));
        assert_eq!(sb.lost_below(3, MSS), 600);
        sb.high_rxt = 0;
        sb.set_pipe(0, 1000, 3, MSS);
        assert_eq!(sb.pipe, 0, "both holes are lost, nothing retransmitted");
        sb.high_rxt = 100; // retransmitted 0..100
        sb.set_pipe(0, 1000, 3, MSS);
        assert_eq!(sb.pipe, 100);
        // Only 0 SACKed above a hole at 900..1000, which is not lost: it is in the pipe.
        let mut sb = Scoreboard::default();
        sb.update(0, 1000, Some(&blocks(&[(100, 900)])));
        sb.set_pipe(0, 1000, 3, MSS);
        assert_eq!(sb.pipe, 100, "0..100 lost, 900..1000 in flight");
    }

    #[test]
    fn next_seg_rules_in_order() {
        let mut sb = Scoreboard::default();
        sb.update(0, 1000, Some(&blocks(&[(100, 500), (600, 800)])));
        // Rule 1: 0 is lost (600 bytes SACKed above), 500 too (200 bytes and two ranges: no).
        assert_eq!(sb.lost_below(3, MSS), 100);
        assert_eq!(sb.next_seg(0, 1000, 3, MSS, seg_len), Next::Retransmit { seq: 0, len: 100, rescue: false });
        sb.high_rxt = 100;
        // 500 is not lost: rule 2 (new data) comes first, then rule 3 retransmits it.
        assert_eq!(sb.next_seg(0, 1000, 3, MSS, seg_len), Next::NewData);
        assert_eq!(
            sb.next_seg_after_new_data(0, 1000, MSS, seg_len),
            Next::Retransmit { seq: 500, len: 100, rescue: false }
        );
        sb.high_rxt = 600;
        // Above the highest SACKed byte only the rescue is left: the last segment out.
        assert_eq!(
            sb.next_seg_after_new_data(0, 1000, MSS, seg_len),
            Next::Retransmit { seq: 900, len: 100, rescue: true }
        );
        sb.rescue_rxt = Some(1000);
        assert_eq!(sb.next_seg_after_new_data(0, 1000, MSS, seg_len), Next::Nothing, "one rescue per recovery");
    }

    #[test]
    fn retransmission_stops_short_of_a_sacked_range() {
        let mut sb = Scoreboard::default();
        // A hostile report SACKs a range starting mid-segment.
        sb.update(0, 1000, Some(&blocks(&[(50, 400)])));
        assert_eq!(sb.next_seg(0, 1000, 3, MSS, seg_len), Next::Retransmit { seq: 0, len: 50, rescue: false });
    }
}
