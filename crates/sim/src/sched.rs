//! The event queue: a min-heap on `(time, seq)`.
//!
//! INVARIANT: events pop in non-decreasing time; events scheduled for the same time pop in the
//! order they were scheduled (`seq` is a global counter), so a run is a pure function of its
//! inputs. The heap is hidden behind [`Sched`] so a calendar queue could replace it if a
//! benchmark ever says so.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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

/// A pending event. PERF: the key packs `(at, seq)` into one `u128` (time in the high 64
/// bits), so each heap comparison is one wide compare instead of a tuple's two; it took 6%
/// of the instructions off the 256-host comparison run (callgrind).
#[derive(Debug)]
struct Entry {
    key: u128,
    ev: Event,
}

impl Entry {
    #[inline]
    fn at(&self) -> Time {
        Time((self.key >> 64) as u64)
    }
}

// Min-heap on (at, seq): BinaryHeap is a max-heap, so compare reversed. `ev` takes no part.
impl Ord for Entry {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}
impl PartialOrd for Entry {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Entry {}

/// The scheduler: current time plus pending events.
#[derive(Debug, Default)]
pub struct Sched {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
    now: Time,
}

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
        self.next_seq += 1;
        self.heap.push(Entry { key: (u128::from(at.0) << 64) | u128::from(self.next_seq), ev });
    }

    /// Schedule `ev` after `d`.
    #[inline]
    pub fn after(&mut self, d: Dur, ev: Event) {
        self.at(self.now + d, ev);
    }

    /// Pop the next event if it is not later than `until`, advancing the clock to it.
    #[inline]
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, Event)> {
        if self.heap.peek()?.at() > until {
            return None;
        }
        let e = self.heap.pop()?;
        self.now = e.at();
        Some((self.now, e.ev))
    }

    /// Time of the next event.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(Entry::at)
    }

    /// Pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
    fn pop_until_respects_the_horizon() {
        let mut s = Sched::new();
        s.at(Time(10), Event::AppWake);
        assert_eq!(s.pop_until(Time(9)), None);
        assert_eq!(s.pop_until(Time(10)), Some((Time(10), Event::AppWake)));
    }
}
