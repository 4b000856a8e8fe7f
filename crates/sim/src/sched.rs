//! The event queue: a radix heap on event time.
//!
//! INVARIANT: events pop in non-decreasing time; events scheduled for the same time pop in the
//! order they were scheduled, so a run is a pure function of its inputs. [`Sched`] hides the
//! structure; the tests check it against a `BinaryHeap` on `(time, seq)`, the queue it
//! replaced.
//!
//! Why a radix heap: time never goes backwards (every event is scheduled at or after `now`),
//! so the queue can be bucketed by the highest digit (of 6 bits) in which an event's time
//! differs from the time of the last pop, and by that digit's value (Ahuja, Mehlhorn, Orlin
//! and Tarjan's radix heap, in the multi-level form of a hierarchical timing wheel anchored at
//! the last pop). A push is an append; a pop takes the event due now, or else empties the
//! first non-empty bucket into lower ones.
//! Every bucket keeps its events in scheduling order (appends, and redistributions into empty
//! buckets, in order), so same-time events come out first-in first-out without a sequence
//! number. An entry is 16 bytes: the time and the event packed into one word (`Packed`; a
//! `Timer`'s endpoint and generation wait in a side table until it pops).

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

/// Bits of time per level of [`Sched`]'s buckets: a bucket holds the events whose time first
/// differs from `last` in one digit of this many bits, and has one given value there.
const DIGIT_BITS: u32 = 6;
const DIGITS: usize = 1 << DIGIT_BITS;
const LEVELS: usize = 64usize.div_ceil(DIGIT_BITS as usize);
/// The most events a bucket keeps room for once it is emptied (see `Sched::refill_from`).
const KEPT_CAPACITY: usize = 64;
// A level's bitmap of non-empty buckets is one word.
const _: () = assert!(DIGITS <= 64);

/// The scheduler: current time plus pending events.
///
/// INVARIANT: `due[head..]` holds the events at time `last`, in scheduling order (and `head`
/// is 0 when it is empty). Every other event at time `t` is in
/// `buckets[level * DIGITS + digit]`, where `level` is the highest digit of
/// [`DIGIT_BITS`] in which `t` differs from `last` (so `t > last`) and `digit` is that digit
/// of `t`; so every event of a bucket is earlier than every event of a later bucket. Each
/// bucket is in scheduling order. Bit `digit` of `digits[level]` is set iff that bucket is
/// non-empty, and bit `level` of `levels` iff `digits[level]` is non-zero. `last <= now`
/// (`last` moves only to the time of an event about to pop), and `len` counts every pending
/// event.
// PERF: in place of a BinaryHeap on a packed (time, seq) key, this took the 256-host comparison
// run (experiments/compare/ls256.toml) from 1.79 to 1.44 CPU s, and a replay of its 26 million
// queue operations from 0.69 to 0.30 s; 6-bit digits replayed faster than 1, 2, 4, 7, 8 or 10.
#[derive(Debug)]
pub struct Sched {
    due: Vec<Packed>,
    head: usize,
    buckets: Vec<Vec<(Time, Packed)>>,
    digits: [u64; LEVELS],
    levels: u64,
    last: Time,
    len: usize,
    now: Time,
    /// The `(ep, generation)` of each pending `Timer` by the index its packed event holds.
    timers: Slab<(u32, u32)>,
}

impl Default for Sched {
    fn default() -> Sched {
        Sched {
            due: Vec::new(),
            head: 0,
            buckets: (0..LEVELS * DIGITS).map(|_| Vec::new()).collect(),
            digits: [0; LEVELS],
            levels: 0,
            last: Time::ZERO,
            len: 0,
            now: Time::ZERO,
            timers: Slab::default(),
        }
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
    /// An empty scheduler at time zero.
    pub fn new() -> Sched {
        Sched::default()
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

    /// Put `ev` at `at >= last` where the INVARIANT says.
    #[inline(always)]
    fn file(&mut self, at: Time, ev: Packed) {
        let x = at.0 ^ self.last.0;
        if x == 0 {
            self.due.push(ev);
        } else {
            let level = (63 - x.leading_zeros()) / DIGIT_BITS;
            let digit = (at.0 >> (level * DIGIT_BITS)) as usize & (DIGITS - 1);
            self.buckets[level as usize * DIGITS + digit].push((at, ev));
            self.digits[level as usize] |= 1 << digit;
            self.levels |= 1 << level;
        }
    }

    /// Schedule `ev` after `d`.
    #[inline]
    pub fn after(&mut self, d: Dur, ev: Event) {
        self.at(self.now + d, ev);
    }

    /// Pop the next event if it is not later than `until`, advancing the clock to it.
    #[inline]
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, Event)> {
        let ev = match self.due.get(self.head) {
            Some(&ev) if self.last <= until => ev,
            Some(_) => return None,
            None => return self.pop_bucket(until),
        };
        self.head += 1;
        if self.head == self.due.len() {
            self.due.clear();
            self.head = 0;
        }
        self.len -= 1;
        self.now = self.last;
        Some((self.now, self.unpack(ev)))
    }

    /// `pop_until` with nothing `due`: the earliest event is in the first non-empty bucket.
    /// Alone there, it pops straight away; else the bucket moves down first (`refill_from`).
    #[inline]
    fn pop_bucket(&mut self, until: Time) -> Option<(Time, Event)> {
        let b = self.first_bucket()?;
        let [(t, ev)] = self.buckets[b][..] else {
            return if self.refill_from(b, until) { self.pop_until(until) } else { None };
        };
        if t > until {
            return None;
        }
        self.buckets[b].clear();
        self.clear_bucket(b);
        self.last = t;
        self.len -= 1;
        self.now = t;
        Some((t, self.unpack(ev)))
    }

    /// Nothing is `due` and bucket `b` is the first non-empty one: if its earliest time is not
    /// later than `until`, make that `last`, move the bucket down (its earliest events into
    /// `due`) and return true; else change nothing and return false.
    #[inline(never)]
    fn refill_from(&mut self, b: usize, until: Time) -> bool {
        let mut events = std::mem::take(&mut self.buckets[b]);
        let earliest = events.iter().map(|&(t, _)| t).min().unwrap_or(Time::MAX);
        if earliest > until {
            self.buckets[b] = events;
            return false;
        }
        self.clear_bucket(b);
        self.last = earliest;
        // CORRECTNESS: bucket `b` was the first non-empty one and `due` is empty, so every
        // event lands in an empty bucket below `b` (or in `due`), behind none of a later seq.
        for (t, ev) in events.drain(..) {
            self.file(t, ev);
        }
        // PERF: a bucket keeps a small allocation for next time, but not a large one: the
        // buckets far ahead each fill up in turn as time advances, and kept every allocation
        // they ever needed (1.6 MB on the 256-host comparison run, whose queue never holds
        // more than 2,100 events; 15 MB more peak memory on the 1,024-host fat-tree).
        if events.capacity() <= KEPT_CAPACITY {
            self.buckets[b] = events;
        }
        true
    }

    /// The first non-empty bucket (holding the earliest events but those `due`).
    #[inline]
    fn first_bucket(&self) -> Option<usize> {
        if self.levels == 0 {
            return None;
        }
        let level = self.levels.trailing_zeros() as usize;
        Some(level * DIGITS + self.digits[level].trailing_zeros() as usize)
    }

    /// Bucket `b` was emptied: clear its bits.
    #[inline]
    fn clear_bucket(&mut self, b: usize) {
        let (level, digit) = (b / DIGITS, b % DIGITS);
        self.digits[level] &= !(1 << digit);
        if self.digits[level] == 0 {
            self.levels &= !(1 << level);
        }
    }

    /// The links of the next two events (each if it is a `TxDone` or an `Arrive`), found
    /// without moving buckets: a hint for prefetching only. They are the first two `due`, or
    /// the first two of the first bucket (due soon all the same when it is a low level's); an
    /// event scheduled meanwhile can come before them in any case.
    #[inline]
    pub fn peek_links(&self) -> [Option<LinkId>; 2] {
        let link = |p: Packed| (p.0 >> KIND_SHIFT <= ARRIVE).then_some(LinkId(p.0 as u32));
        let (first, second) = match self.due.get(self.head) {
            Some(&p) => (p, self.due.get(self.head + 1).copied()),
            None => {
                let Some(b) = self.first_bucket() else { return [None, None] };
                let bucket = &self.buckets[b];
                (bucket[0].1, bucket.get(1).map(|&(_, q)| q))
            }
        };
        [link(first), second.and_then(link)]
    }

    /// Time of the next event.
    pub fn peek_time(&self) -> Option<Time> {
        if self.head < self.due.len() {
            return Some(self.last);
        }
        self.buckets[self.first_bucket()?].iter().map(|&(t, _)| t).min()
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
    /// moving horizon, clock advances) pop exactly as from the reference heap.
    #[test]
    fn pops_exactly_as_a_binary_heap_on_time_and_seq() {
        use rand::{Rng, SeedableRng};
        for seed in 0..200u64 {
            let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
            let (mut s, mut r) = (Sched::new(), Reference::default());
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
    }
}
