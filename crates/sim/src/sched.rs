//! The event queue: a calendar of fixed-width time buckets over the near future, and a heap
//! beyond it.
//!
//! INVARIANT: events pop in non-decreasing time; events scheduled for the same time pop in the
//! order they were scheduled, so a run is a pure function of its inputs. [`Sched`] hides the
//! structure; the tests check it against a `BinaryHeap` on `(time, seq)`, the queue it
//! replaced, with calendars of several widths.
//!
//! Why a calendar (Brown's calendar queue, CACM 1988, with a fixed year): almost every event of
//! a packet network is scheduled less than one hop's serialization and propagation ahead (on
//! the 256-host comparison run 55% exactly 1.1632 us ahead, 12% 43.2 ns), so a ring of buckets
//! a few hops long, each [`Sched`]'s `2^shift` picoseconds wide, files an event with one append
//! and pops it after one small sort of its bucket. The buckets' width follows how many events
//! they hold (`Sched::adapt`): a sparse run's buckets widen until each holds a few, so the
//! queue does not pay a bucket change per event. An event beyond the ring's reach (timers,
//! samples, long-idle senders) waits in a binary heap on `(time, seq)` and moves into the ring
//! when the ring's reach passes its time, before any later event can be filed behind it.
//! Every bucket keeps its events in scheduling order (appends, and moves from the heap in
//! `(time, seq)` order into buckets that no append can have reached yet), and a bucket is sorted
//! stably by time when it becomes current, so same-time events come out first-in first-out
//! without a sequence number in the ring. An entry is 16 bytes: the time and the event packed
//! into one word (`Packed`; a `Timer`'s endpoint and generation wait in a side table until it
//! pops).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::packet::Slab;
use units::{Dur, LinkId, Time};

/// Everything that can happen. Small and `Copy`: ids, never pointers or closures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `link` finished serializing a packet and has more waiting: start the next.
    TxDone {
        /// The link.
        link: LinkId,
    },
    /// The packet at the head of `link`'s wire reaches the far end.
    Arrive {
        /// The link.
        link: LinkId,
    },
    /// A transport timer of endpoint `ep` (transfer * 2 + side). Stale, and ignored, unless
    /// `generation` equals the endpoint's current one.
    Timer {
        /// Endpoint index.
        ep: u32,
        /// Generation at the time it was armed.
        generation: u32,
    },
    /// The earliest application alarm is due (one pending event for all applications).
    AppWake,
    /// Periodic buffer occupancy sample.
    Sample,
    /// Periodic time-series sample of queues and transfers (`[run.timeseries]`; one pending
    /// event for the whole sampler).
    Observe,
}

/// log2 of the ring's buckets: the reach is `2^(shift + RING_BITS)` picoseconds.
const RING_BITS: u32 = 12;
/// log2 of the narrowest bucket, in picoseconds (1.024 ns).
const MIN_SHIFT: u32 = 10;
/// log2 of the widest bucket, in picoseconds (1.1 s).
const MAX_SHIFT: u32 = 40;
/// log2 of the fewest buckets the ring uses when its buckets are wide (`Sched::reshift`).
const MIN_RING_BITS: u32 = 6;
/// Bucket changes between two looks at how full the buckets are (`Sched::adapt`).
const ADAPT_WINDOW: u32 = 1024;
/// Buckets that held fewer events than this on average over a window double their width...
const WIDEN_BELOW: u64 = 4;
/// ...and more than this halve it, down to the width the ring's reach asked for.
const NARROW_ABOVE: u64 = 24;
/// The most events a ring bucket keeps room for once it is emptied.
// PERF: on the 1,024-host fat-tree a 1 ns bucket holds about 60 events. Kept room costs at most
// 4,096 x 64 x 16 B = 4 MB (the whole 10 ms k = 16 run: 59 -> 65 MB peak, against 72 MB when
// keeping 128 and no faster); a bucket does not keep the largest burst it ever held.
const KEPT_CAPACITY: usize = 64;

/// The scheduler: current time plus pending events.
///
/// INVARIANT: with `width = 2^shift` picoseconds and `n = 2^ring_bits` buckets, an event at time
/// `t` is in bucket `b = t >> shift` (`shift <= MAX_SHIFT`; `adapt` keeps it `>= min_shift`).
/// The events of bucket `cur` are in `current`, sorted by time descending, equal times in
/// reverse scheduling order (the next to pop is the last). The events
/// of buckets `cur + 1 .. cur + n` are in `ring[b % n]`, in scheduling order, and bit `b % n` of
/// `occupied` is set iff that bucket is non-empty; `in_ring` counts them. Every other pending
/// event is in `far`, and its bucket is at least `cur + n`; `far_first` is the earliest one's
/// bucket. `cur <= now >> shift`, and `len` counts every pending event.
// PERF: in place of a radix heap (6-bit digits, each event refiled about three times on its way
// down its levels), this replayed the 256-host comparison run's 26 million queue operations in
// 0.23 s instead of 0.32-0.36 s, and 0.3 ms of the k = 16 fat-tree's 8.4 million in 0.067 s
// instead of 0.109 s (1.024 ns buckets, 4,096 of them). A reach shorter than one hop sends
// most events through the heap (1.05 us on the 256-host run: 0.85 s), hence
// `Sched::with_reach`; buckets too narrow for a sparse run cost a bucket change per event,
// hence `Sched::adapt`.
#[derive(Debug)]
pub struct Sched {
    current: Vec<(Time, Packed)>,
    cur: u64,
    shift: u32,
    /// The narrowest buckets `adapt` may go back to (what the reach asked for).
    min_shift: u32,
    ring_bits: u32,
    /// The buckets allocated (`ring.len() = 2^max_ring_bits`); `ring_bits` is fewer when the
    /// buckets are wider than `min_shift`, so that the reach stays what it was asked to be.
    max_ring_bits: u32,
    /// `2^ring_bits - 1`.
    mask: u64,
    ring: Vec<Vec<(Time, Packed)>>,
    occupied: Vec<u64>,
    in_ring: usize,
    far: BinaryHeap<Reverse<(Time, u64, u64)>>,
    /// The bucket of the earliest event in `far`, `u64::MAX` if none.
    far_first: u64,
    far_seq: u64,
    len: usize,
    now: Time,
    /// Bucket changes, and the events they made current, since `adapt` last looked.
    window_changes: u32,
    window_events: u64,
    /// Bucket changes per look (`ADAPT_WINDOW`; a test makes it small).
    window: u32,
    /// The `(ep, generation)` of each pending `Timer` by the index its packed event holds.
    timers: Slab<(u32, u32)>,
    /// Room for sorting a bucket (`sort_bucket`).
    scratch: Vec<(Time, Packed)>,
}

impl Default for Sched {
    fn default() -> Sched {
        Sched::with_buckets(MIN_SHIFT, RING_BITS)
    }
}

/// An [`Event`] in one word, as the queue stores it: the kind in the top [`KIND_BITS`] bits, a
/// link id (or a `Timer`'s index in `Sched::timers`) below.
// PERF: a queue entry `(Time, Packed)` is 16 bytes where `(Time, Event)` was 24 (`Event` is 12
// bytes with its `Timer { ep, generation }`), so a bucket moves a third fewer bytes: on S2
// (experiments/peer_bench/s2.toml, cachegrind) 1.9% fewer instructions and 4.3% fewer L1 data
// misses for the whole run. Timers, the only events with two words of payload, are 0.01% of the
// events of the 256-host run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Packed(u64);

const KIND_BITS: u32 = 3;
const KIND_SHIFT: u32 = 64 - KIND_BITS;
const TX_DONE: u64 = 0;
const ARRIVE: u64 = 1;
const TIMER: u64 = 2;
const APP_WAKE: u64 = 3;
const SAMPLE: u64 = 4;
const OBSERVE: u64 = 5;

impl Sched {
    /// An empty scheduler at time zero, for a network of any reach.
    pub fn new() -> Sched {
        Sched::default()
    }

    /// An empty scheduler whose ring reaches at least twice `hop` ahead (with buckets of at
    /// least 1.024 ns): `hop` is the longest a packet takes over one link (serialization of the
    /// largest packet plus propagation), the distance at which most events are scheduled.
    pub fn with_reach(hop: Dur) -> Sched {
        let want = hop.0.saturating_mul(2).max(1);
        let bits = 64 - (want - 1).leading_zeros();
        Sched::with_buckets(bits.saturating_sub(RING_BITS).clamp(MIN_SHIFT, MAX_SHIFT), RING_BITS)
    }

    /// An empty scheduler with `2^ring_bits` buckets of `2^shift` picoseconds.
    fn with_buckets(shift: u32, ring_bits: u32) -> Sched {
        let n = 1usize << ring_bits;
        Sched {
            current: Vec::new(),
            cur: 0,
            shift,
            min_shift: shift,
            ring_bits,
            max_ring_bits: ring_bits,
            mask: n as u64 - 1,
            ring: (0..n).map(|_| Vec::new()).collect(),
            occupied: vec![0; n.div_ceil(64)],
            in_ring: 0,
            far: BinaryHeap::new(),
            far_first: u64::MAX,
            far_seq: 0,
            len: 0,
            now: Time::ZERO,
            window_changes: 0,
            window_events: 0,
            window: ADAPT_WINDOW,
            timers: Slab::default(),
            scratch: Vec::new(),
        }
    }

    /// The current simulated time (the time of the last popped event).
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedule `ev` at absolute time `at`. PRECONDITION: `at >= now`.
    #[inline]
    pub fn at(&mut self, at: Time, ev: Event) {
        debug_assert!(at >= self.now, "scheduling into the past");
        self.len += 1;
        let packed = self.pack(ev);
        self.file(at, packed);
    }

    /// `ev` in one word (a `Timer` takes a slot of `timers` until it pops).
    #[inline(always)]
    fn pack(&mut self, ev: Event) -> Packed {
        let (kind, low) = match ev {
            Event::TxDone { link } => (TX_DONE, link.0),
            Event::Arrive { link } => (ARRIVE, link.0),
            Event::Timer { ep, generation } => (TIMER, self.new_timer(ep, generation)),
            Event::AppWake => (APP_WAKE, 0),
            Event::Sample => (SAMPLE, 0),
            Event::Observe => (OBSERVE, 0),
        };
        Packed(kind << KIND_SHIFT | u64::from(low))
    }

    #[inline(never)]
    fn new_timer(&mut self, ep: u32, generation: u32) -> u32 {
        self.timers.insert((ep, generation))
    }

    /// The event `p` stands for (freeing a `Timer`'s slot: `p` is popping).
    #[inline(always)]
    fn unpack(&mut self, p: Packed) -> Event {
        let low = p.0 as u32;
        match p.0 >> KIND_SHIFT {
            TX_DONE => Event::TxDone { link: LinkId(low) },
            ARRIVE => Event::Arrive { link: LinkId(low) },
            TIMER => {
                let (ep, generation) = self.timers.take(low);
                Event::Timer { ep, generation }
            }
            APP_WAKE => Event::AppWake,
            SAMPLE => Event::Sample,
            kind => {
                debug_assert_eq!(kind, OBSERVE);
                Event::Observe
            }
        }
    }

    /// Put `ev` at `at` (in bucket `cur` or later) where the INVARIANT says.
    #[inline(always)]
    fn file(&mut self, at: Time, ev: Packed) {
        let ahead = (at.0 >> self.shift) - self.cur;
        if ahead == 0 {
            // After every event of its time already here (the current bucket is sorted).
            let i = self.current.partition_point(|&(t, _)| t > at);
            self.current.insert(i, (at, ev));
        } else if ahead >> self.ring_bits == 0 {
            self.put(at, ev);
        } else {
            self.far_seq += 1;
            self.far.push(Reverse((at, self.far_seq, ev.0)));
            self.far_first = self.far_first.min(at.0 >> self.shift);
        }
    }

    /// Append to the ring bucket of `at`. PRECONDITION: within the ring's reach, after `cur`
    /// (or at `cur` from `take_far`, before the bucket becomes the current one).
    #[inline(always)]
    fn put(&mut self, at: Time, ev: Packed) {
        let i = self.slot(at.0 >> self.shift);
        self.ring[i].push((at, ev));
        self.occupied[i / 64] |= 1 << (i % 64);
        self.in_ring += 1;
    }

    /// The ring slot of bucket `b`.
    #[inline(always)]
    fn slot(&self, b: u64) -> usize {
        (b & self.mask) as usize
    }

    /// Schedule `ev` after `d`.
    #[inline]
    pub fn after(&mut self, d: Dur, ev: Event) {
        self.at(self.now + d, ev);
    }

    /// Pop the next event if it is not later than `until`, advancing the clock to it.
    #[inline]
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, Event)> {
        if self.current.is_empty() && !self.next_bucket(until) {
            return None;
        }
        let &(t, ev) = self.current.last()?;
        if t > until {
            return None;
        }
        self.current.pop();
        self.len -= 1;
        self.now = t;
        Some((t, self.unpack(ev)))
    }

    /// Nothing is left in the current bucket: if the earliest pending event is not later than
    /// `until`, make its bucket the current one (moving the events the ring now reaches in from
    /// `far`) and return true; else change nothing and return false.
    #[inline(never)]
    fn next_bucket(&mut self, until: Time) -> bool {
        if self.window_changes >= self.window {
            self.adapt();
        }
        let next = if self.in_ring > 0 {
            let b = self.next_occupied();
            let bucket = &self.ring[self.slot(b)];
            // Only a bucket that `until` cuts needs its earliest time.
            let last_ps = b << self.shift | ((1 << self.shift) - 1);
            if last_ps > until.0 && bucket.iter().all(|&(t, _)| t > until) {
                return false;
            }
            b
        } else {
            match self.far.peek() {
                Some(&Reverse((t, _, _))) if t <= until => t.0 >> self.shift,
                _ => return false,
            }
        };
        self.cur = next;
        if (self.far_first - next) >> self.ring_bits == 0 {
            self.take_far();
        }
        let i = self.slot(next);
        std::mem::swap(&mut self.current, &mut self.ring[i]);
        self.occupied[i / 64] &= !(1 << (i % 64));
        self.in_ring -= self.current.len();
        self.window_changes += 1;
        self.window_events += self.current.len() as u64;
        give_back_room(&mut self.ring[i]);
        if self.current.len() > 1 {
            sort_bucket(&mut self.current, &mut self.scratch, self.shift);
        }
        true
    }

    /// Look at how many events the last window's buckets held, and double or halve the
    /// buckets' width if they held too few or too many (`WIDEN_BELOW`, `NARROW_ABOVE`).
    // PERF: a bucket change costs about 100 instructions (find the next bucket, swap it in,
    // sort it), a small sort little per event: on the 256-host comparison run 1 ns buckets held
    // 1.16 events each, 8 ns 1.5, 16 ns 3.4, 32 ns 6.0 and 64 ns 11.2, and the whole run took
    // 9.27, 8.97, 8.57, 8.46 and 8.55 G instructions (cachegrind). The 1,024-host fat-tree's
    // 1 ns buckets hold 13-60 events and it would like narrower ones (7 events: 2.6% fewer
    // instructions, 2.6% more cache misses), but those would also shorten the ring's reach;
    // the width never goes below what the reach asked for (`Sched::with_reach`).
    #[cold]
    #[inline(never)]
    fn adapt(&mut self) {
        let (changes, events) = (u64::from(self.window_changes), self.window_events);
        (self.window_changes, self.window_events) = (0, 0);
        if events < WIDEN_BELOW * changes && self.shift < MAX_SHIFT {
            self.reshift(self.shift + 1);
        } else if events > NARROW_ABOVE * changes && self.shift > self.min_shift {
            self.reshift(self.shift - 1);
        }
    }

    /// Re-file every pending event for buckets of `2^shift` picoseconds (one more or one fewer
    /// than now). PRECONDITION: the current bucket is empty.
    // CORRECTNESS: the ring's events are re-filed bucket after bucket, each bucket in its
    // scheduling order, and equal times share a bucket at every width, so every bucket still
    // holds its equal times in scheduling order. All of them come after the current (empty)
    // bucket, which becomes the one at or before `now` that precedes them all: for wider
    // buckets the one before the old next bucket's (`cur + 1` -> `(cur + 1) / 2`, so
    // `(cur + 1) / 2 - 1 <= cur / 2 <= now >> shift`), for narrower ones the first half of the
    // old current one (`2 cur`; the old next starts at `2 cur + 2`). An event the narrower
    // ring no longer reaches goes to `far` (its time is before every event already there,
    // which were beyond the wider reach), one the wider ring now reaches comes in from `far`
    // after the ring's own (later times).
    #[cold]
    #[inline(never)]
    fn reshift(&mut self, shift: u32) {
        debug_assert!(self.current.is_empty() && shift.abs_diff(self.shift) == 1);
        if shift > self.shift && self.cur == 0 {
            return; // no bucket before the next one's half yet
        }
        let mut pending = Vec::with_capacity(self.in_ring);
        if self.in_ring > 0 {
            for k in 1..=self.mask + 1 {
                let i = self.slot(self.cur + k);
                if self.occupied[i / 64] & 1 << (i % 64) != 0 {
                    pending.append(&mut self.ring[i]);
                    give_back_room(&mut self.ring[i]);
                }
            }
        }
        debug_assert_eq!(pending.len(), self.in_ring);
        self.occupied.fill(0);
        self.in_ring = 0;
        // `(cur + 1) / 2 - 1` without overflowing at `u64::MAX` (buckets of 1 ps).
        self.cur = if shift > self.shift { (self.cur >> 1) + (self.cur & 1) - 1 } else { self.cur << 1 };
        self.shift = shift;
        // PERF: as many buckets as keep the reach (one fewer bit per doubling of the width, at
        // least 2^MIN_RING_BITS): a ring of 4,096 wide buckets reached far beyond the next hops
        // and, as the run went round it, left every bucket holding room for its events (2 MB of
        // cold buffers on the 256-host run). Unused buckets give their room back.
        let wider = shift.saturating_sub(self.min_shift);
        self.ring_bits = self.max_ring_bits.saturating_sub(wider).max(MIN_RING_BITS.min(self.max_ring_bits));
        self.mask = (1 << self.ring_bits) - 1;
        for unused in &mut self.ring[1 << self.ring_bits..] {
            if unused.capacity() > 0 {
                *unused = Vec::new();
            }
        }
        for (t, ev) in pending {
            let ahead = (t.0 >> shift) - self.cur;
            debug_assert!(ahead >= 1);
            if ahead >> self.ring_bits == 0 {
                self.put(t, ev);
            } else {
                self.far_seq += 1;
                self.far.push(Reverse((t, self.far_seq, ev.0)));
            }
        }
        self.far_first = self.far.peek().map_or(u64::MAX, |r| r.0 .0 .0 >> shift);
        if (self.far_first - self.cur) >> self.ring_bits == 0 {
            self.take_far();
        }
    }

    /// The first non-empty ring bucket after `cur`. PRECONDITION: `in_ring > 0`.
    #[inline]
    fn next_occupied(&self) -> u64 {
        let start = self.slot(self.cur + 1);
        let words = (self.mask >> 6) as usize + 1;
        let (mut w, mut word) = (start / 64, self.occupied[start / 64] & (!0u64 << (start % 64)));
        for _ in 0..=words {
            if word != 0 {
                let i = w * 64 + word.trailing_zeros() as usize;
                let ahead = (i as u64).wrapping_sub(start as u64) & self.mask;
                return self.cur + 1 + ahead;
            }
            w = if w + 1 == words { 0 } else { w + 1 };
            word = self.occupied[w];
        }
        debug_assert!(false, "in_ring > 0 with no occupied bucket");
        self.cur + 1
    }

    /// Move into the ring every event of `far` that it now reaches (the ring moved on to `cur`).
    // CORRECTNESS: `far` pops in `(time, seq)` order into buckets that no `file` could reach
    // before now (they were `cur + n` or later), so they are empty and keep that order; a later
    // `file` appends behind them. Bucket `cur`'s own events (only when the ring was empty and
    // `cur` jumped to the earliest of `far`) go to its slot, which becomes `current` next.
    #[inline]
    fn take_far(&mut self) {
        while let Some(&Reverse((t, _, ev))) = self.far.peek() {
            if ((t.0 >> self.shift) - self.cur) >> self.ring_bits != 0 {
                break;
            }
            self.far.pop();
            self.put(t, Packed(ev));
        }
        self.far_first = self.far.peek().map_or(u64::MAX, |r| r.0 .0 .0 >> self.shift);
    }

    /// The links of the next four events of the current bucket, each if it is a `TxDone` or
    /// an `Arrive` (with whether it is an `Arrive`): a hint for prefetching only (an event
    /// scheduled meanwhile can come before them in any case).
    #[inline]
    pub fn peek_links(&self) -> [Option<(LinkId, bool)>; 4] {
        let link = |i: usize| {
            let (_, p) = self.current[i];
            let kind = p.0 >> KIND_SHIFT;
            (kind <= ARRIVE).then_some((LinkId(p.0 as u32), kind == ARRIVE))
        };
        let n = self.current.len();
        [n.checked_sub(1).and_then(link), n.checked_sub(2).and_then(link), n.checked_sub(3).and_then(link), n.checked_sub(4).and_then(link)]
    }

    /// Time of the next event.
    pub fn peek_time(&self) -> Option<Time> {
        if let Some(&(t, _)) = self.current.last() {
            return Some(t);
        }
        if self.in_ring > 0 {
            return self.ring[self.slot(self.next_occupied())].iter().map(|&(t, _)| t).min();
        }
        self.far.peek().map(|r| r.0 .0)
    }

    /// Pending events.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Move the clock to `t` without an event (end of a run at its stop time).
    pub fn advance_clock(&mut self, t: Time) {
        if t > self.now {
            self.now = t;
        }
    }
}

/// An emptied ring bucket that grew large gives its room back (see `KEPT_CAPACITY`).
#[inline(always)]
fn give_back_room(bucket: &mut Vec<(Time, Packed)>) {
    if bucket.capacity() > KEPT_CAPACITY {
        *bucket = Vec::new();
    }
}

/// Bits per digit of `sort_bucket`'s radix sort.
const RADIX_BITS: u32 = 5;
/// The fewest events `sort_bucket` radix-sorts (fewer: the standard library's stable sort,
/// an insertion sort at these sizes), in buckets too wide for `rank_sort` (it takes buckets of
/// up to `RANK_MAX_LEN` events first).
const RADIX_MIN_LEN: usize = 32;

/// The most events `sort_bucket` ranks by counting (more: insertion or radix sort).
// PERF: 32 rather than 64: the k = 16 fat-tree's dense 1 ns buckets (13-60 events) are faster
// radix-sorted from 32 on (3 ms: 11.94 -> 11.48 s profile-guided, 12.95 -> 12.63 s plain,
// alternated pairs; the 256-host run and k = 8 within 1%).
const RANK_MAX_LEN: usize = 32;
/// Bits of an event's index in a rank key (`RANK_MAX_LEN` is `2^RANK_INDEX_BITS`).
const RANK_INDEX_BITS: u32 = 5;
/// The widest buckets whose times' low bits leave room for an event's index below them in a
/// positive 32-bit rank key (`rank_sort`).
const RANK_MAX_SHIFT: u32 = 31 - RANK_INDEX_BITS;
/// `rank_sort` compares this many keys at once (`RANK_MAX_LEN` is a multiple).
const RANK_LANES: usize = 4;
const _: () = assert!(RANK_MAX_LEN == 1 << RANK_INDEX_BITS && RANK_MAX_LEN.is_multiple_of(RANK_LANES));

/// `sort_bucket` for a small bucket (at most `RANK_MAX_LEN` events of a bucket of `2^shift`
/// picoseconds, `shift <= RANK_MAX_SHIFT`): each event's place is the number of keys above its
/// own, its key being its time's low `shift` bits (the rest is the bucket's) above its index
/// in scheduling order, so that equal times put the later-scheduled first (next to pop last).
/// The events are placed in `scratch`, which then trades places with `v`.
// PERF: an insertion sort of a bucket in reversed scheduling order shifts about one event in
// three past its neighbours (packets scheduled a hop's propagation ahead interleave with ACKs
// and serialization ends scheduled less far ahead), and where each shift stops is a branch the
// processor cannot predict: on the 256-host comparison run the bucket change with its sort took
// 14% of the time (`perf record`) for 6.5% of the instructions. Counting is branch-free, n^2
// comparisons of 32-bit keys, four at a time: the 256-host run 0.742 -> 0.704 s, 1 ms of the
// k = 8 fat-tree 0.216 -> 0.200 s (seven alternated pairs, plain build).
#[inline]
fn rank_sort(v: &mut Vec<(Time, Packed)>, scratch: &mut Vec<(Time, Packed)>, shift: u32) {
    let n = v.len();
    debug_assert!(n <= RANK_MAX_LEN && shift <= RANK_MAX_SHIFT);
    let low = (1u64 << shift) - 1;
    // Keys are non-negative; the padding up to a whole number of lanes is below them all.
    let mut keys = [i32::MIN; RANK_MAX_LEN];
    for (i, (k, &(t, _))) in keys.iter_mut().zip(v.iter()).enumerate() {
        *k = ((t.0 & low) << RANK_INDEX_BITS | i as u64) as i32;
    }
    let keys = &keys[..n.div_ceil(RANK_LANES) * RANK_LANES];
    // PERF: into `scratch`, which then trades places with the bucket, where a local array was
    // zeroed and copied back at every sort (libc's memset and memcpy, 1.7% of the 256-host
    // run's samples): 7.697 -> 7.635 G instructions; profile-guided, nine alternated pairs 0.989
    // (faster in 7); 1 ms of k = 16 within the noise (0.989, and 1.041 with 6 of 11 faster on a
    // busier hour).
    if scratch.len() < n {
        scratch.resize(n, (Time::ZERO, Packed(0)));
    }
    let out = &mut scratch[..n];
    for (&k, &e) in keys.iter().zip(v.iter()) {
        // PERF: lanes of a fixed width, so that the comparisons are vectorized whatever the
        // compiler guesses of `n`: the profile-guided build left a loop over `n` scalar (the
        // 256-host run 0.652 -> 0.617 s with 4 lanes, 0.627 with 8; plain build 2% faster too).
        let mut above = [0i32; RANK_LANES];
        for lanes in keys.chunks_exact(RANK_LANES) {
            for (a, &o) in above.iter_mut().zip(lanes) {
                *a += i32::from(o > k);
            }
        }
        // At most `n - 1` keys are above any one of the bucket's own.
        out[above.iter().sum::<i32>() as usize] = e;
    }
    std::mem::swap(v, scratch);
    v.truncate(n);
}

/// Sort the events of one bucket of `2^shift` picoseconds, now in scheduling order, by time
/// descending, equal times in reverse scheduling order (the next to pop last). `scratch` is
/// room to sort in.
// PERF: a comparison sort of a dense bucket mispredicts about every other comparison: on the
// k = 16 fat-tree, whose 1 ns buckets hold 13-60 events, the stable sort's quicksort was a tenth
// of the run's time (`perf record`, 3 ms). The times of a bucket differ only in their low
// `shift` bits, so a least-significant-digit radix sort (stable, hence same-time FIFO order
// kept) orders a dense one in two branch-free passes of 5 bits for 1 ns buckets.
#[inline]
fn sort_bucket(v: &mut Vec<(Time, Packed)>, scratch: &mut Vec<(Time, Packed)>, shift: u32) {
    let n = v.len();
    if n <= RANK_MAX_LEN && shift <= RANK_MAX_SHIFT {
        rank_sort(v, scratch, shift);
        return;
    }
    if n < RADIX_MIN_LEN || shift > 3 * RADIX_BITS {
        // Stable: equal times keep (reversed) scheduling order.
        v.reverse();
        v.sort_by_key(|&(t, _)| Reverse(t));
        return;
    }
    if scratch.len() < n {
        scratch.resize(n, (Time::ZERO, Packed(0)));
    }
    let mut flipped = false;
    let mut low = 0;
    while low < shift {
        let bits = RADIX_BITS.min(shift - low);
        let (at_bit, mask) = (low, (1u64 << bits) - 1);
        // The second mask changes nothing (`bits <= RADIX_BITS`) but shows the compiler that a
        // digit indexes `at` in bounds.
        let digit = move |t: Time| ((t.0 >> at_bit) & mask & ((1 << RADIX_BITS) - 1)) as usize;
        let (src, dst) = if flipped { (&scratch[..n], &mut v[..]) } else { (&v[..], &mut scratch[..n]) };
        let mut at = [0usize; 1 << RADIX_BITS];
        for &(t, _) in src {
            at[digit(t)] += 1;
        }
        low += bits;
        if at.contains(&n) {
            continue; // one digit for all: already in order
        }
        let mut sum = 0;
        for c in at.iter_mut() {
            (*c, sum) = (sum, sum + *c);
        }
        for &e in src {
            let d = digit(e.0);
            dst[at[d]] = e;
            at[d] += 1;
        }
        flipped = !flipped;
    }
    if flipped {
        std::mem::swap(v, scratch);
        v.truncate(n);
    }
    v.reverse();
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    use super::*;

    #[test]
    fn equal_times_pop_fifo_and_times_are_ordered() {
        let mut s = Sched::new();
        s.at(Time(5), Event::Sample);
        s.at(Time(3), Event::TxDone { link: LinkId(1) });
        s.at(Time(3), Event::TxDone { link: LinkId(2) });
        s.at(Time(3), Event::TxDone { link: LinkId(0) });
        let order: Vec<_> = std::iter::from_fn(|| s.pop_until(Time::MAX)).collect();
        assert_eq!(
            order,
            vec![
                (Time(3), Event::TxDone { link: LinkId(1) }),
                (Time(3), Event::TxDone { link: LinkId(2) }),
                (Time(3), Event::TxDone { link: LinkId(0) }),
                (Time(5), Event::Sample),
            ]
        );
        assert_eq!(s.now(), Time(5));
    }

    #[test]
    fn a_queue_entry_is_two_words() {
        // PERF: see `Packed`.
        assert_eq!(std::mem::size_of::<(Time, Packed)>(), 16);
    }

    #[test]
    fn the_ring_reaches_two_hops() {
        // 1 us links at 100 Gb/s: 1.12 us per hop, 2.24 us for two, within 4.2 us of 1 ns buckets.
        let s = Sched::with_reach(Dur(1_120_000));
        assert_eq!((s.shift, s.ring_bits), (MIN_SHIFT, RING_BITS));
        // 10 us links: 20 us for two hops, 2^25 ps with 8 ns buckets.
        let s = Sched::with_reach(Dur(10_000_000));
        assert_eq!(s.shift, 13);
        assert!(1u64 << (s.shift + s.ring_bits) >= 20_000_000);
        // Degenerate reaches stay within bounds.
        assert_eq!(Sched::with_reach(Dur(0)).shift, MIN_SHIFT);
        assert_eq!(Sched::with_reach(Dur(u64::MAX)).shift, 40);
    }

    /// The bucket sort orders a bucket exactly as the stable sort by time does, at every
    /// width and size (radix passes that skip a digit all events share, and both sorts).
    #[test]
    fn bucket_sort_is_the_stable_sort() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
        let mut scratch = Vec::new();
        for round in 0..4_000 {
            // Every sort: ranking (up to 32 events, shift up to 26), radix and insertion.
            let shift = [0, 1, 4, 5, 9, 10, 11, 15, 16, 26, 27, 40][round % 12];
            let bucket = rng.gen_range(0..=u64::MAX >> shift);
            let distinct = rng.gen_range(1..40u64);
            let lows: Vec<u64> = (0..distinct).map(|_| if shift == 0 { 0 } else { rng.gen_range(0..=u64::MAX >> (64 - shift)) }).collect();
            let len = if round % 3 == 0 { rng.gen_range(2..200) } else { rng.gen_range(2..=RANK_MAX_LEN as u64 + 1) };
            let v: Vec<(Time, Packed)> = (0..len)
                .map(|i| (Time(bucket << shift | lows[rng.gen_range(0..lows.len())]), Packed(i)))
                .collect();
            let mut want = v.clone();
            want.reverse();
            want.sort_by_key(|&(t, _)| Reverse(t));
            let mut got = v;
            sort_bucket(&mut got, &mut scratch, shift);
            assert_eq!(got, want, "shift {shift}");
        }
    }

    #[test]
    fn pop_until_respects_the_horizon() {
        let mut s = Sched::new();
        s.at(Time(10), Event::AppWake);
        assert_eq!(s.pop_until(Time(9)), None);
        assert_eq!(s.pop_until(Time(10)), Some((Time(10), Event::AppWake)));
    }

    /// The queue this one replaced: a min-heap on `(time, seq)`.
    #[derive(Default)]
    struct Reference {
        heap: BinaryHeap<Reverse<(Time, u64, u32)>>,
        seq: u64,
        now: Time,
    }

    impl Reference {
        fn at(&mut self, at: Time, tag: u32) {
            self.seq += 1;
            self.heap.push(Reverse((at, self.seq, tag)));
        }
        fn pop_until(&mut self, until: Time) -> Option<(Time, u32)> {
            if self.heap.peek()?.0 .0 > until {
                return None;
            }
            let Reverse((at, _, tag)) = self.heap.pop()?;
            self.now = at;
            Some((at, tag))
        }
    }

    /// The event a test schedules as number `tag`: every kind, and ids and generations that
    /// tell apart events of one kind (a `Timer`'s two words live outside its queue entry).
    fn event_of(tag: u32) -> Event {
        match tag % 8 {
            0..=2 => Event::Arrive { link: LinkId(tag) },
            3..=4 => Event::TxDone { link: LinkId(u32::MAX - tag) },
            5 => Event::Timer { ep: tag, generation: tag.wrapping_mul(0x9e37_79b9) },
            6 => [Event::AppWake, Event::Sample, Event::Observe][(tag / 8 % 3) as usize],
            _ => Event::Timer { ep: u32::MAX - tag, generation: u32::MAX },
        }
    }

    /// Random schedules (many equal times, delays from zero to far beyond the others, a
    /// moving horizon, clock advances) pop exactly as from the reference heap, with the
    /// default ring and with rings so short and narrow that most events go through `far` and
    /// the ring wraps around often, with buckets that change width as often as every bucket
    /// change (`adapt`) and at random moments in either direction (`reshift`).
    #[test]
    fn pops_exactly_as_a_binary_heap_on_time_and_seq() {
        use rand::{Rng, SeedableRng};
        let mut reshifts = [0u32; 2];
        for seed in 0..360u64 {
            let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
            let (shift, bits) = [(MIN_SHIFT, RING_BITS), (0, 1), (3, 4), (8, 2), (12, 6), (MIN_SHIFT, RING_BITS)][seed as usize % 6];
            let (mut s, mut r) = (Sched::with_buckets(shift, bits), Reference::default());
            s.window = [ADAPT_WINDOW, 1, 3, 16][seed as usize / 6 % 4];
            let mut tag = 0u32;
            // A few delays recur (links of one rate and length), so times collide often.
            let fixed: Vec<u64> = (0..rng.gen_range(1..5)).map(|_| rng.gen_range(0..5_000)).collect();
            for _ in 0..rng.gen_range(1..3_000) {
                match rng.gen_range(0..100) {
                    0..=54 => {
                        let d = match rng.gen_range(0..10) {
                            0 => 0,
                            1..=5 => fixed[rng.gen_range(0..fixed.len())],
                            6..=7 => rng.gen_range(0..100_000),
                            8 => rng.gen_range(0..u64::from(u32::MAX)),
                            _ => u64::MAX, // saturates at Time::MAX ("never")
                        };
                        let at = Time(s.now().0.saturating_add(d));
                        tag += 1;
                        s.at(at, event_of(tag));
                        r.at(at, tag);
                    }
                    55..=97 => {
                        let until = match rng.gen_range(0..4) {
                            0 => Time(s.now().0.saturating_add(rng.gen_range(0..10_000))),
                            _ => Time::MAX,
                        };
                        let want = r.pop_until(until).map(|(t, tag)| (t, event_of(tag)));
                        assert_eq!(s.pop_until(until), want, "seed {seed}");
                        assert_eq!(s.now(), r.now.max(s.now()));
                    }
                    98 if s.current.is_empty() => {
                        // A width change at any moment the current bucket is empty.
                        let wider = rng.gen_bool(0.5);
                        let shift = if wider { s.shift + 1 } else { s.shift.wrapping_sub(1) };
                        if shift <= MAX_SHIFT {
                            let before = s.shift;
                            s.reshift(shift);
                            reshifts[usize::from(s.shift != before)] += 1;
                        }
                    }
                    _ => {
                        // The end of a run at its stop time: only when nothing is due before it.
                        let t = Time(s.now().0.saturating_add(rng.gen_range(0..1_000)));
                        if s.peek_time().is_none_or(|p| p >= t) {
                            s.advance_clock(t);
                            r.now = r.now.max(t);
                        }
                    }
                }
                assert_eq!(s.len(), r.heap.len());
                assert_eq!(s.peek_time(), r.heap.peek().map(|e| e.0 .0), "seed {seed}");
            }
            while let Some(want) = r.pop_until(Time::MAX) {
                let (t, ev) = s.pop_until(Time::MAX).expect("as many events");
                assert_eq!((t, ev), (want.0, event_of(want.1)), "seed {seed}");
            }
            assert!(s.is_empty() && s.pop_until(Time::MAX).is_none());
        }
        assert!(reshifts[1] > 300, "the random width changes happened: {reshifts:?}");
    }

    /// Sparse events widen the buckets until they hold several each; dense ones narrow them
    /// again, but never below the width the ring's reach asked for.
    #[test]
    fn buckets_widen_when_sparse_and_narrow_when_dense() {
        let mut s = Sched::with_buckets(MIN_SHIFT, RING_BITS);
        // One event every 20 ns, each scheduled 1 us ahead: one per 1 ns bucket.
        let mut t = 0u64;
        for _ in 0..50 {
            s.at(Time(t + 1_000_000), Event::AppWake);
            t += 20_000;
        }
        for _ in 0..200_000 {
            let (at, _) = s.pop_until(Time::MAX).expect("an event");
            s.at(Time(at.0 + 1_000_000), Event::AppWake);
        }
        // 20 ns apart: buckets of 2^17 ps (131 ns) hold 6.5, 2^16 3.3.
        assert_eq!(s.shift, 17, "widened to hold at least WIDEN_BELOW events");
        // The reach stays about what it was (4.2 us; at least 64 buckets), and the buckets the
        // ring no longer uses hold no room.
        assert_eq!(s.ring_bits, MIN_RING_BITS);
        assert!(s.ring[1 << s.ring_bits..].iter().all(|b| b.capacity() == 0));
        // Now 1,000 events per 20 ns: narrow back to the floor and no further (looking every
        // 16 bucket changes, not to need millions of events).
        s.window = 16;
        let now = s.now().0;
        for i in 0..1_000u64 {
            for k in 0..1_000 {
                s.at(Time(now + 1_000_000 + i * 20_000 + k), Event::Sample);
            }
        }
        while s.pop_until(Time::MAX).is_some() {}
        assert_eq!(s.shift, MIN_SHIFT, "narrowed to the reach's width");
        assert_eq!(s.ring_bits, RING_BITS);
    }
}
