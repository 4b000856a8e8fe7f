//! A message's receive buffer, charged against the node's receive memory in proportion to what
//! arrived, not to what the first datagram claims.
//!
//! A data packet names its message's size (a bounded-loss message's `total` values, an ATP
//! message's packet count), and a receiver must hand the application the whole message. Had
//! the first datagram reserved that size, two 100-byte datagrams claiming 1 GiB messages would
//! hold a node's 2 GiB budget (until the receivers' idle timeout, renewed by each datagram)
//! and every real transfer would be refused. So a message's payloads are kept as they arrive,
//! each charged its bytes, until a sixteenth of the message has arrived ([`PROMOTE_DIVISOR`]);
//! only then is the contiguous buffer allocated and the whole size charged. A peer thus holds
//! at most sixteen times the bytes it actually sent (the way TCP's receive memory follows the
//! data received), and nothing is allocated for a claim alone. A write the budget cannot take
//! is refused: the caller drops the datagram unacknowledged, and the sender resends it.

use std::sync::atomic::{AtomicU64, Ordering};

/// The contiguous buffer is allocated once `PROMOTE_DIVISOR x received >= size`. PERF: at 4
/// (a quarter kept as parts: copied into a growing buffer of 4 KiB pages, then again into the
/// message) a reliable bounded-loss transfer on loopback took 1.66 CPU s per GB against 1.24
/// before (medians of 6 interleaved runs of `make bench-udp`); at 16, 1.14-1.26 against
/// 1.06-1.55 (3 pairs), no cost to see.
pub(crate) const PROMOTE_DIVISOR: u64 = 16;

/// What a kept payload's place in the index costs (its offset and length).
const INDEX_ENTRY: usize = std::mem::size_of::<(usize, usize)>();

/// The node's receive memory: what is charged now, and the limit.
pub(crate) struct Budget<'a> {
    pub(crate) reserved: &'a AtomicU64,
    pub(crate) limit: u64,
}

impl Budget<'_> {
    /// Charge `n` bytes if they fit. Only the node's loop charges; the application's threads
    /// only release (when they take a message), so the check can only be conservative.
    fn charge(&self, n: u64) -> bool {
        if self.reserved.load(Ordering::Relaxed).saturating_add(n) > self.limit {
            return false;
        }
        self.reserved.fetch_add(n, Ordering::Relaxed);
        true
    }

    fn release(&self, n: u64) {
        self.reserved.fetch_sub(n, Ordering::Relaxed);
    }
}

/// A message's bytes as they arrive (module docs).
#[derive(Debug)]
pub(crate) struct RxBuffer {
    /// The message's size in bytes (at most the node's `max_message_bytes`).
    len: usize,
    store: Store,
    /// Bytes charged to the node's budget for this buffer.
    charged: u64,
}

#[derive(Debug)]
enum Store {
    /// Payloads in arrival order, one after another (one allocation, not one per datagram:
    /// a malloc per packet cost the receiving thread a tenth more CPU per byte), and each one's
    /// (offset in the message, length). The charge is the two vectors' capacities, which grow
    /// by doubling from the first payload's size.
    Parts { bytes: Vec<u8>, index: Vec<(usize, usize)> },
    /// The message, zero where nothing arrived.
    Whole(Vec<u8>),
}

/// Room for one more payload of `n` bytes in the parts, charged: each vector doubles from
/// exactly what its first item needs (or, where the budget cannot take the doubling, grows by
/// exactly what is needed). False, with nothing changed, if the budget cannot take even that.
fn grow(bytes: &mut Vec<u8>, index: &mut Vec<(usize, usize)>, n: usize, charged: &mut u64, budget: &Budget<'_>) -> bool {
    let room = |len: usize, cap: usize, extra: usize, double: bool| {
        let need = len + extra;
        if need <= cap {
            cap
        } else if double {
            need.max(2 * cap)
        } else {
            need
        }
    };
    for double in [true, false] {
        let b = room(bytes.len(), bytes.capacity(), n, double);
        let i = room(index.len(), index.capacity(), 1, double);
        let cost = ((b - bytes.capacity()) + (i - index.capacity()) * INDEX_ENTRY) as u64;
        if budget.charge(cost) {
            *charged += cost;
            bytes.reserve_exact(b - bytes.len());
            index.reserve_exact(i - index.len());
            return true;
        }
    }
    false
}

impl RxBuffer {
    /// An empty buffer for a message of `len` bytes; nothing is allocated or charged.
    pub(crate) fn new(len: usize) -> RxBuffer {
        RxBuffer { len, store: Store::Parts { bytes: Vec::new(), index: Vec::new() }, charged: 0 }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes charged to the node for this buffer.
    pub(crate) fn charged(&self) -> u64 {
        self.charged
    }

    /// Put `payload` at byte `at`. False (and nothing kept) if it does not lie inside the
    /// message or the budget cannot take it.
    pub(crate) fn write(&mut self, at: usize, payload: &[u8], budget: &Budget<'_>) -> bool {
        let Some(end) = at.checked_add(payload.len()).filter(|&e| e <= self.len) else { return false };
        let (bytes, index) = match &mut self.store {
            Store::Whole(buf) => {
                buf[at..end].copy_from_slice(payload);
                return true;
            }
            Store::Parts { bytes, index } => (bytes, index),
        };
        let len = self.len as u64;
        let got = (bytes.len() + payload.len()) as u64;
        if got.saturating_mul(PROMOTE_DIVISOR) >= len && budget.charge(len.saturating_sub(self.charged)) {
            // A sixteenth (or more) of the message arrived: the whole of it is charged now, and
            // what the parts were charged beyond it is given back as they are freed.
            let mut buf = zeroed_buffer(self.len);
            lay_out(&mut buf, bytes, index);
            buf[at..end].copy_from_slice(payload);
            budget.release(self.charged.saturating_sub(len));
            self.charged = len;
            self.store = Store::Whole(buf);
            return true;
        }
        if !grow(bytes, index, payload.len(), &mut self.charged, budget) {
            return false;
        }
        index.push((at, payload.len()));
        bytes.extend_from_slice(payload);
        true
    }

    /// The message's bytes, zero where nothing arrived (the parts, if it never reached a
    /// sixteenth, are laid out now: the caller's allocation, not the node's).
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        match self.store {
            Store::Whole(buf) => buf,
            Store::Parts { bytes, index } => {
                let mut buf = zeroed_buffer(self.len);
                lay_out(&mut buf, &bytes, &index);
                buf
            }
        }
    }
}

/// Copy the kept payloads to their places, in arrival order (a later copy of a place wins).
fn lay_out(buf: &mut [u8], bytes: &[u8], index: &[(usize, usize)]) {
    let mut from = 0;
    for &(at, n) in index {
        // CORRECTNESS: write() kept only payloads inside the message.
        buf[at..at + n].copy_from_slice(&bytes[from..from + n]);
        from += n;
    }
}

/// A zeroed receive buffer of `len` bytes. A large one (the allocator maps fresh, untouched
/// pages for it) is advised to the kernel as huge-page memory before its first touch: writing
/// a 64 MiB message then takes 32 page faults instead of 16,384, which was a fifth of the
/// receiving thread's time (`make bench-udp`'s profile). Where transparent huge pages are off,
/// the advice is refused and nothing changes.
pub(crate) fn zeroed_buffer(len: usize) -> Vec<u8> {
    const HUGE: usize = 2 << 20;
    let mut v = vec![0u8; len];
    #[cfg(target_os = "linux")]
    if len >= 2 * HUGE {
        let p = v.as_mut_ptr() as usize;
        let start = p.next_multiple_of(HUGE);
        let end = (p + len) / HUGE * HUGE;
        if end > start {
            // SAFETY: [start, end) lies inside the vector's allocation; MADV_HUGEPAGE changes
            // how the kernel backs the pages, never their contents (still zero).
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(r: &AtomicU64, limit: u64) -> Budget<'_> {
        Budget { reserved: r, limit }
    }

    /// The divisor, as a size.
    const D: usize = PROMOTE_DIVISOR as usize;

    #[test]
    fn a_claim_alone_costs_nothing_and_a_sixteenth_promotes() {
        let r = AtomicU64::new(0);
        let b = budget(&r, 1 << 30);
        let mut buf = RxBuffer::new(1 << 30);
        assert_eq!(r.load(Ordering::Relaxed), 0);
        assert!(buf.write(100, &[7; 10], &b));
        assert_eq!(r.load(Ordering::Relaxed), 10 + INDEX_ENTRY as u64);
        // A message of 1000 x D bytes: parts until 1000 bytes arrived, then the whole charged.
        let len = 1000 * D;
        let r = AtomicU64::new(0);
        let b = budget(&r, 1 << 30);
        let mut m = RxBuffer::new(len);
        assert!(m.write(3000, &[3; 500], &b));
        assert_eq!(m.charged(), 500 + INDEX_ENTRY as u64);
        assert!(m.write(0, &[1; 500], &b));
        assert_eq!((m.charged(), r.load(Ordering::Relaxed)), (len as u64, len as u64));
        assert!(m.write(1000, &[2; 100], &b));
        assert_eq!(r.load(Ordering::Relaxed), len as u64);
        let bytes = m.into_bytes();
        assert_eq!(&bytes[0..500], &[1; 500][..]);
        assert_eq!(&bytes[1000..1100], &[2; 100][..]);
        assert_eq!(&bytes[3000..3500], &[3; 500][..]);
        assert!(bytes[500..1000].iter().chain(&bytes[1100..3000]).chain(&bytes[3500..]).all(|&x| x == 0));
    }

    #[test]
    fn parts_lay_out_in_arrival_order_and_refusals_keep_nothing() {
        let r = AtomicU64::new(0);
        let b = budget(&r, 200);
        let mut m = RxBuffer::new(10_000);
        assert!(m.write(10, &[1; 20], &b));
        assert!(m.write(20, &[2; 20], &b), "a later copy of the same place wins");
        // Past the end, or beyond the budget: refused, nothing charged or kept.
        assert!(!m.write(9_990, &[9; 20], &b));
        assert!(!m.write(usize::MAX - 5, &[9; 20], &b));
        let before = r.load(Ordering::Relaxed);
        assert!(!m.write(5_000, &[9; 200], &b));
        assert_eq!(r.load(Ordering::Relaxed), before);
        let bytes = m.into_bytes();
        assert_eq!((&bytes[10..20], &bytes[20..40]), (&[1; 10][..], &[2; 20][..]));
        assert!(bytes[40..].iter().all(|&x| x == 0));
    }

    #[test]
    fn promotion_waits_for_room_and_never_overcharges() {
        // Room for the parts but not the whole: the parts go on, promotion when room appears.
        // A message of 250 x D bytes promotes once 250 arrived.
        let len = 250 * D;
        let r = AtomicU64::new(0);
        let b = budget(&r, 900);
        let mut m = RxBuffer::new(len);
        assert!(m.write(0, &[1; 200], &b));
        assert!(m.write(200, &[1; 100], &b), "kept as a part: the whole does not fit");
        // Capacities: 2 index entries, 400 bytes (doubled from the first payload's 200).
        assert_eq!(m.charged(), 400 + 2 * INDEX_ENTRY as u64);
        let b = budget(&r, len as u64);
        assert!(m.write(300, &[1; 100], &b));
        assert_eq!((m.charged(), r.load(Ordering::Relaxed)), (len as u64, len as u64));
        // Parts charged beyond the whole (many tiny datagrams) are given back at promotion.
        let len = 100 * D;
        let r = AtomicU64::new(0);
        let b = budget(&r, 1 << 20);
        let mut m = RxBuffer::new(len);
        for i in 0..99 {
            assert!(m.write(i, &[1], &b));
        }
        assert!(m.charged() > len as u64);
        assert!(m.write(99, &[1], &b));
        assert_eq!((m.charged(), r.load(Ordering::Relaxed)), (len as u64, len as u64));
    }
}
