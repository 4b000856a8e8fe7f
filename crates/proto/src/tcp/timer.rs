//! The per-connection timer table (quinn's `TimerTable`): one optional deadline per
//! [`Timer`], `poll_timeout` is their minimum.
//!
//! INVARIANT: a timer fires only when `now >= deadline`, so spurious `handle_timeout` calls
//! are no-ops.

use units::Time;

/// The timers a TCP endpoint can arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Retransmission timeout (sender; also retransmits the SYN).
    Rto = 0,
    /// Delayed-ACK deadline (receiver).
    DelayedAck = 1,
    /// Pacing (sender of a paced controller, PowerTCP): the next segment may leave.
    Pace = 2,
}

const NUM_TIMERS: usize = 3;

/// Deadlines indexed by [`Timer`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TimerTable {
    at: [Option<Time>; NUM_TIMERS],
}

impl TimerTable {
    /// Arm (or re-arm) `t` to fire at `at`.
    #[inline]
    pub(crate) fn set(&mut self, t: Timer, at: Time) {
        self.at[t as usize] = Some(at);
    }

    /// Disarm `t`.
    #[inline]
    pub(crate) fn stop(&mut self, t: Timer) {
        self.at[t as usize] = None;
    }

    /// Disarm every timer.
    #[inline]
    pub(crate) fn stop_all(&mut self) {
        self.at = [None; NUM_TIMERS];
    }

    /// When `t` fires, if armed.
    #[inline]
    pub(crate) fn at(&self, t: Timer) -> Option<Time> {
        self.at[t as usize]
    }

    /// Whether `t` is armed.
    #[inline]
    pub(crate) fn is_armed(&self, t: Timer) -> bool {
        self.at[t as usize].is_some()
    }

    /// If `t` is armed and due at `now`, disarm it and return true.
    #[inline]
    pub(crate) fn take_expired(&mut self, t: Timer, now: Time) -> bool {
        match self.at[t as usize] {
            Some(at) if at <= now => {
                self.at[t as usize] = None;
                true
            }
            _ => false,
        }
    }

    /// The earliest armed deadline.
    #[inline]
    pub(crate) fn earliest(&self) -> Option<Time> {
        self.at.iter().flatten().copied().min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_is_min_and_expiry_needs_the_deadline() {
        let mut t = TimerTable::default();
        assert_eq!(t.earliest(), None);
        t.set(Timer::DelayedAck, Time(50));
        t.set(Timer::Rto, Time(20));
        assert_eq!(t.earliest(), Some(Time(20)));
        assert!(!t.take_expired(Timer::Rto, Time(19)));
        assert!(t.take_expired(Timer::Rto, Time(20)));
        assert!(!t.is_armed(Timer::Rto));
        assert_eq!(t.earliest(), Some(Time(50)));
        assert!(t.is_armed(Timer::DelayedAck));
        t.stop_all();
        assert_eq!(t.earliest(), None);
    }
}
