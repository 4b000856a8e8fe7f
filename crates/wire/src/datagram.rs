//! The header of slacknet's unreliable datagram transport (UDP kind): a connection id, the
//! byte offset and length of the payload, `FIN` on the last datagram, ECN, priority and a send
//! timestamp. No acknowledgement fields: the protocol has none.
//!
//! Byte layout (network byte order), [`DATAGRAM_HEADER_LEN`] = 28 bytes, then `len` payload
//! bytes:
//!
//! ```text
//!  0      1      2      3      4            8                16        20               28
//!  +------+------+------+------+------------+----------------+---------+----------------+
//!  | ver  |flags | ecn  | prio |  conn u32  |    seq u64     | len u32 |  ts_ps u64     |
//!  +------+------+------+------+------------+----------------+---------+----------------+
//! ```
//!
//! `ver` is [`DATAGRAM_VERSION`], distinct from a TCP segment's, so a driver can tell the two
//! apart from the first byte.
//!
//! INVARIANT: `parse(emit(r)) == r` (the emitted header followed by `r.len` payload bytes) for
//! every `r` that `emit` accepts, and `emit` refuses every `r` that `parse` could not return:
//! a flag other than `FIN`, or `seq + len` past `u64::MAX`. `parse` never panics on any input
//! (fuzzed, as the crate docs say).

use crate::{check_emit, check_end, Ecn, Flags, WireError};

/// Length of the datagram header in bytes.
pub const DATAGRAM_HEADER_LEN: usize = 28;
/// First byte of a datagram header.
pub const DATAGRAM_VERSION: u8 = 0x21;

/// A parsed datagram header. Payload is abstract: `len` bytes at byte offset `seq`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DatagramRepr {
    /// Connection id (the transfer id in the simulator).
    pub conn: u32,
    /// Byte offset of the first payload byte.
    pub seq: u64,
    /// Payload length in bytes.
    pub len: u32,
    /// [`Flags::FIN`] on the last datagram of a transfer; no other flag is valid.
    pub flags: Flags,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Priority class (0 = highest).
    pub prio: u8,
    /// Sender timestamp, picoseconds.
    pub ts_ps: u64,
}

impl DatagramRepr {
    /// Bytes needed to emit this datagram with its payload.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        DATAGRAM_HEADER_LEN + self.len as usize
    }

    /// One past the last payload byte.
    #[inline]
    pub const fn end(&self) -> u64 {
        self.seq + self.len as u64
    }

    /// Parse a header from `buf`; the payload is `buf[DATAGRAM_HEADER_LEN..][..len]`.
    pub fn parse(buf: &[u8]) -> Result<DatagramRepr, WireError> {
        if buf.len() < DATAGRAM_HEADER_LEN {
            return Err(WireError::Truncated { have: buf.len(), need: DATAGRAM_HEADER_LEN });
        }
        if buf[0] != DATAGRAM_VERSION {
            return Err(WireError::BadVersion(buf[0]));
        }
        let flags = Flags(buf[1]);
        if flags.0 & !Flags::FIN.0 != 0 {
            return Err(WireError::Malformed("flags"));
        }
        let ecn = Ecn::from_u8(buf[2])?;
        let mut w4 = [0u8; 4];
        let mut w8 = [0u8; 8];
        let mut u32_at = |i: usize| {
            w4.copy_from_slice(&buf[i..i + 4]);
            u32::from_be_bytes(w4)
        };
        let (conn, len) = (u32_at(4), u32_at(16));
        let mut u64_at = |i: usize| {
            w8.copy_from_slice(&buf[i..i + 8]);
            u64::from_be_bytes(w8)
        };
        let repr = DatagramRepr { conn, seq: u64_at(8), len, flags, ecn, prio: buf[3], ts_ps: u64_at(20) };
        let need = DATAGRAM_HEADER_LEN.saturating_add(repr.len as usize);
        if buf.len() < need {
            return Err(WireError::Truncated { have: buf.len(), need });
        }
        check_end(repr.seq, repr.len)?;
        Ok(repr)
    }

    /// Write the header into `buf[..DATAGRAM_HEADER_LEN]` and return its length; the caller
    /// copies the payload after it. Refuses, writing nothing, what [`DatagramRepr::parse`]
    /// would not read back: [`WireError::Truncated`] if `buf` is shorter than the header,
    /// [`WireError::Malformed`] for a flag other than [`Flags::FIN`] or a payload that ends past
    /// `u64::MAX`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        check_emit(buf.len(), DATAGRAM_HEADER_LEN, self.flags, Flags::FIN, self.seq, self.len)?;
        buf[0] = DATAGRAM_VERSION;
        buf[1] = self.flags.0;
        buf[2] = self.ecn as u8;
        buf[3] = self.prio;
        buf[4..8].copy_from_slice(&self.conn.to_be_bytes());
        buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        buf[16..20].copy_from_slice(&self.len.to_be_bytes());
        buf[20..28].copy_from_slice(&self.ts_ps.to_be_bytes());
        Ok(DATAGRAM_HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> DatagramRepr {
        DatagramRepr { conn: 7, seq: 1 << 40, len: 3, flags: Flags::FIN, ecn: Ecn::Ect0, prio: 2, ts_ps: 123_456 }
    }

    #[test]
    fn round_trip() {
        let d = sample();
        let mut buf = vec![0u8; d.buffer_len()];
        assert_eq!(d.emit(&mut buf), Ok(DATAGRAM_HEADER_LEN));
        assert_eq!(DatagramRepr::parse(&buf), Ok(d));
    }

    // Found by the `wire_roundtrip` fuzz target: emit wrote these, and parse refused them.
    #[test]
    fn emit_refuses_what_parse_would_not_read_back() {
        let untouched = [0x77u8; DATAGRAM_HEADER_LEN];
        let refused = |d: DatagramRepr| {
            let mut buf = untouched;
            let e = d.emit(&mut buf).unwrap_err();
            assert_eq!(buf, untouched, "a refused emit writes nothing");
            e
        };
        for flags in [Flags::SYN, Flags::ACK.with(Flags::FIN), Flags(0x80)] {
            assert_eq!(refused(DatagramRepr { flags, ..sample() }), WireError::Malformed("flags"));
        }
        let past_the_end = DatagramRepr { seq: u64::MAX - 2, ..sample() };
        assert_eq!(refused(past_the_end), WireError::Malformed("seq + len overflows"));
        let at_the_end = DatagramRepr { seq: u64::MAX - 3, ..sample() };
        let mut buf = vec![0u8; at_the_end.buffer_len()];
        assert_eq!(at_the_end.emit(&mut buf), Ok(DATAGRAM_HEADER_LEN));
        assert_eq!(DatagramRepr::parse(&buf), Ok(at_the_end));
    }

    #[test]
    fn rejects_bad_input_without_panicking() {
        let d = sample();
        let mut buf = vec![0u8; d.buffer_len()];
        d.emit(&mut buf).unwrap();
        assert!(matches!(DatagramRepr::parse(&buf[..buf.len() - 1]), Err(WireError::Truncated { .. })));
        assert!(matches!(d.emit(&mut [0u8; 10]), Err(WireError::Truncated { .. })));
        let mut tcp = buf.clone();
        tcp[0] = crate::VERSION;
        assert_eq!(DatagramRepr::parse(&tcp), Err(WireError::BadVersion(crate::VERSION)));
        let mut syn = buf.clone();
        syn[1] = Flags::SYN.0;
        assert_eq!(DatagramRepr::parse(&syn), Err(WireError::Malformed("flags")));
        // Every prefix and every single-byte corruption parses or fails cleanly.
        for n in 0..buf.len() {
            let _ = DatagramRepr::parse(&buf[..n]);
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut b = buf.clone();
                b[n] = v;
                let _ = DatagramRepr::parse(&b);
            }
        }
    }
}
