//! Physical quantities and dense ids: the only place raw integers become time, size or rate.
//!
//! Everything in slacknet counts time in integer picoseconds ([`Time`], [`Dur`]), sizes in
//! bytes ([`Bytes`]) and rates in bits per second ([`Bps`]). Picoseconds are exact for
//! serialization at 400 and 800 Gb/s (1 B at 400 Gb/s = 20 ps) and a `u64` spans ~213 days.
//!
//! INVARIANT: time never wraps. Adding to a [`Time`] or [`Dur`], multiplying a [`Dur`] and
//! converting a count of ns/us/ms saturate at `u64::MAX` picoseconds (for a [`Time`],
//! [`Time::MAX`]: "never"), so a run that outlives the clock ends at its end instead of
//! wrapping to the past. The simulator's validation bounds every time, size and rate of a
//! scenario (`sim::spec::limits`) so that a valid run never comes near it. Subtraction that
//! would underflow is a logic error: it panics in debug builds.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

use core::fmt;
use core::ops::{Add, AddAssign, Mul, Sub, SubAssign};

/// Picoseconds per nanosecond.
pub const PS_PER_NS: u64 = 1_000;
/// Picoseconds per microsecond.
pub const PS_PER_US: u64 = 1_000_000;
/// Picoseconds per millisecond.
pub const PS_PER_MS: u64 = 1_000_000_000;
/// Picoseconds per second.
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// A point in simulated (or wall) time, in picoseconds since the run's epoch.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Time(pub u64);

/// A span of time, in picoseconds.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Dur(pub u64);

/// An amount of data, in bytes.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Bytes(pub u64);

/// A line rate, in bits per second.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Bps(pub u64);

impl Time {
    /// The epoch of a run.
    pub const ZERO: Time = Time(0);
    /// The largest representable time; used as "never".
    pub const MAX: Time = Time(u64::MAX);

    /// Raw picoseconds.
    pub const fn ps(self) -> u64 {
        self.0
    }
    /// Time from picoseconds.
    pub const fn from_ps(ps: u64) -> Time {
        Time(ps)
    }
    /// Time from nanoseconds (saturating at [`Time::MAX`], as the other conversions).
    pub const fn from_ns(ns: u64) -> Time {
        Time(ns.saturating_mul(PS_PER_NS))
    }
    /// Time from microseconds.
    pub const fn from_us(us: u64) -> Time {
        Time(us.saturating_mul(PS_PER_US))
    }
    /// Time from milliseconds.
    pub const fn from_ms(ms: u64) -> Time {
        Time(ms.saturating_mul(PS_PER_MS))
    }
    /// Time from (possibly fractional) seconds, rounded to the nearest picosecond (saturating:
    /// negative and NaN give zero, beyond the clock [`Time::MAX`]).
    pub fn from_secs_f64(s: f64) -> Time {
        Time((s * PS_PER_S as f64).round() as u64)
    }
    /// Seconds as `f64` (for reporting only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    /// Span since an earlier time. PRECONDITION: `earlier <= self`.
    pub fn since(self, earlier: Time) -> Dur {
        debug_assert!(earlier <= self, "time went backwards");
        Dur(self.0 - earlier.0)
    }
    /// Span since an earlier time, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
    /// `self + d`, saturating at [`Time::MAX`].
    pub fn saturating_add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}

impl Dur {
    /// Zero span.
    pub const ZERO: Dur = Dur(0);
    /// The longest span.
    pub const MAX: Dur = Dur(u64::MAX);
    /// Raw picoseconds.
    pub const fn ps(self) -> u64 {
        self.0
    }
    /// Span from picoseconds.
    pub const fn from_ps(ps: u64) -> Dur {
        Dur(ps)
    }
    /// Span from nanoseconds.
    pub const fn from_ns(ns: u64) -> Dur {
        Dur(ns.saturating_mul(PS_PER_NS))
    }
    /// Span from microseconds.
    pub const fn from_us(us: u64) -> Dur {
        Dur(us.saturating_mul(PS_PER_US))
    }
    /// Span from milliseconds.
    pub const fn from_ms(ms: u64) -> Dur {
        Dur(ms.saturating_mul(PS_PER_MS))
    }
    /// Span from (possibly fractional) seconds, rounded to the nearest picosecond (saturating,
    /// as [`Time::from_secs_f64`]).
    pub fn from_secs_f64(s: f64) -> Dur {
        Dur((s * PS_PER_S as f64).round() as u64)
    }
    /// Seconds as `f64` (for reporting only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    /// Nanoseconds as `f64` (for reporting only).
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / PS_PER_NS as f64
    }
    /// Doubling that saturates instead of overflowing (RTO backoff).
    pub fn saturating_double(self) -> Dur {
        Dur(self.0.saturating_mul(2))
    }
}

impl Bytes {
    /// Zero bytes.
    pub const ZERO: Bytes = Bytes(0);
    /// Raw byte count.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl Bps {
    /// Rate from gigabits per second.
    pub const fn from_gbps(g: u64) -> Bps {
        Bps(g * 1_000_000_000)
    }
    /// Rate from (possibly fractional) gigabits per second, rounded to the nearest bit/s.
    pub fn from_gbps_f64(g: f64) -> Bps {
        Bps((g * 1e9).round() as u64)
    }
    /// Raw bits per second.
    pub const fn get(self) -> u64 {
        self.0
    }
    /// Gigabits per second as `f64` (for reporting only).
    pub fn as_gbps_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Serialization delay of `size` at this rate, rounded up so that back-to-back packets
    /// never overlap on the wire; saturating at [`Dur::MAX`]. PRECONDITION: the rate is
    /// non-zero (validation bounds every rate below by 1 Mb/s).
    #[inline]
    pub fn tx_time(self, size: Bytes) -> Dur {
        debug_assert!(self.0 > 0, "zero-rate link");
        let ps = (size.0 as u128 * 8 * PS_PER_S as u128).div_ceil(self.0 as u128);
        Dur(u64::try_from(ps).unwrap_or(u64::MAX))
    }
    /// Bytes this rate carries in `d`, rounded down; saturating at `u64::MAX` bytes.
    pub fn bytes_in(self, d: Dur) -> Bytes {
        Bytes(u64::try_from(self.0 as u128 * d.0 as u128 / (8 * PS_PER_S as u128)).unwrap_or(u64::MAX))
    }
}

// CORRECTNESS: the sums saturate (module docs): a timer armed past the end of the clock is
// due "never" (`Time::MAX`), never at a wrapped-around time in the past.
impl Add<Dur> for Time {
    type Output = Time;
    #[inline]
    fn add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Dur> for Time {
    #[inline]
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Dur> for Time {
    type Output = Time;
    #[inline]
    fn sub(self, d: Dur) -> Time {
        Time(self.0 - d.0)
    }
}
impl Add for Dur {
    type Output = Dur;
    #[inline]
    fn add(self, d: Dur) -> Dur {
        Dur(self.0.saturating_add(d.0))
    }
}
impl AddAssign for Dur {
    #[inline]
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub for Dur {
    type Output = Dur;
    #[inline]
    fn sub(self, d: Dur) -> Dur {
        Dur(self.0 - d.0)
    }
}
impl Dur {
    /// `self x k`, saturating at the longest duration instead of wrapping.
    #[inline]
    pub const fn saturating_mul(self, k: u64) -> Dur {
        Dur(self.0.saturating_mul(k))
    }

    /// `self + d`, saturating at the longest duration instead of wrapping.
    #[inline]
    pub const fn saturating_add(self, d: Dur) -> Dur {
        Dur(self.0.saturating_add(d.0))
    }
}

impl Mul<u64> for Dur {
    type Output = Dur;
    #[inline]
    fn mul(self, k: u64) -> Dur {
        Dur(self.0.saturating_mul(k))
    }
}
impl Add for Bytes {
    type Output = Bytes;
    #[inline]
    fn add(self, b: Bytes) -> Bytes {
        Bytes(self.0 + b.0)
    }
}
impl AddAssign for Bytes {
    #[inline]
    fn add_assign(&mut self, b: Bytes) {
        self.0 += b.0;
    }
}
impl Sub for Bytes {
    type Output = Bytes;
    #[inline]
    fn sub(self, b: Bytes) -> Bytes {
        Bytes(self.0 - b.0)
    }
}
impl SubAssign for Bytes {
    #[inline]
    fn sub_assign(&mut self, b: Bytes) {
        self.0 -= b.0;
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ps", self.0)
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}ms", self.0 as f64 / PS_PER_MS as f64)
    }
}
impl fmt::Debug for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ps", self.0)
    }
}
impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}us", self.0 as f64 / PS_PER_US as f64)
    }
}
impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}B", self.0)
    }
}
impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}B", self.0)
    }
}
impl fmt::Debug for Bps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}bps", self.0)
    }
}
impl fmt::Display for Bps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}Gbps", self.0 as f64 / 1e9)
    }
}

/// Declares a dense id: values run `0..n`, so an id can index a `Vec` directly.
macro_rules! dense_id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub struct $name(pub u32);
        impl $name {
            /// The id as a `Vec` index.
            #[inline]
            pub const fn idx(self) -> usize {
                self.0 as usize
            }
            /// The id for a `Vec` index. PRECONDITION: `i < 2^32`.
            #[inline]
            pub fn from_idx(i: usize) -> Self {
                debug_assert!(i <= u32::MAX as usize);
                $name(i as u32)
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}
dense_id!(
    /// A node (host or switch). Hosts are numbered first, `0..num_hosts`.
    NodeId
);
dense_id!(
    /// A unidirectional link: an egress port and the wire behind it.
    LinkId
);
dense_id!(
    /// A flow (one transfer from one host to another).
    FlowId
);
dense_id!(
    /// A switch, numbered `0..num_switches` independently of its node id.
    SwitchId
);
dense_id!(
    /// An application of a simulation (a traffic source that may react to the network),
    /// numbered in scenario order.
    AppId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_is_exact_and_rounds_up() {
        // 1500 B at 10 Gb/s = 1.2 us exactly.
        assert_eq!(Bps::from_gbps(10).tx_time(Bytes(1500)), Dur::from_ns(1200));
        // 1 B at 400 Gb/s = 20 ps.
        assert_eq!(Bps::from_gbps(400).tx_time(Bytes(1)), Dur(20));
        // 1 B at 3 b/s: 8/3 s rounds up.
        assert_eq!(Bps(3).tx_time(Bytes(1)), Dur(2_666_666_666_667));
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = Bps::from_gbps(25);
        assert_eq!(r.bytes_in(r.tx_time(Bytes(9000))), Bytes(9000));
    }

    #[test]
    fn time_arithmetic_saturates_at_the_end_of_the_clock() {
        assert_eq!(Time(u64::MAX - 5) + Dur(10), Time::MAX);
        let mut t = Time(u64::MAX - 1);
        t += Dur::from_ms(1);
        assert_eq!(t, Time::MAX);
        assert_eq!(Dur(u64::MAX - 1) + Dur(2), Dur::MAX);
        let mut d = Dur::MAX;
        d += Dur(1);
        assert_eq!(d, Dur::MAX);
        assert_eq!(Dur::from_ms(1) * u64::MAX, Dur::MAX);
        assert_eq!(Time::from_ns(u64::MAX / 10), Time::MAX);
        assert_eq!(Dur::from_us(u64::MAX / 10), Dur::MAX);
        assert_eq!(Time::from_ms(u64::MAX / 10), Time::MAX);
        assert_eq!(Time::from_secs_f64(1e30), Time::MAX);
        assert_eq!(Dur::from_secs_f64(f64::NAN), Dur::ZERO);
        // 2^64 - 1 bytes at 1 b/s is far beyond the clock.
        assert_eq!(Bps(1).tx_time(Bytes(u64::MAX)), Dur::MAX);
        assert_eq!(Bps(u64::MAX).bytes_in(Dur::MAX), Bytes(u64::MAX));
        // Just inside: the largest exact values are unchanged.
        assert_eq!(Time(u64::MAX - 10) + Dur(10), Time::MAX);
        assert_eq!(Time(u64::MAX - 11) + Dur(10), Time(u64::MAX - 1));
        assert_eq!(Time::from_ns(u64::MAX / 1000), Time(u64::MAX / 1000 * 1000));
    }

    #[test]
    fn time_arithmetic() {
        let t = Time::from_us(3) + Dur::from_ns(500);
        assert_eq!(t.ps(), 3_500_000);
        assert_eq!(t.since(Time::from_us(1)), Dur::from_ns(2500));
        assert_eq!(Time::from_secs_f64(0.000323008), Time(323_008_000));
    }
}
