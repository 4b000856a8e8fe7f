//! The header of the bounded-loss transport for distributed ML (Xia et al., "Rethinking
//! Transport Layer Design for Distributed Machine Learning", APNet'19; `proto::mlt`).
//!
//! A message is a vector of `total` values of `value_bytes` bytes each (4 for 32-bit floats,
//! 2 for 16-bit ones, §3.2). A data packet carries the whole values `[start, end)` of message
//! `msg` (§3.2 Idea #1, "range indexing of packets", Figure 5): a packet never splits a value,
//! so every packet can be interpreted on its own. The sender sends a message's packets in an
//! order of its choosing (a pseudorandom one by default, `proto::MltSendOrder`); each data
//! packet carries its place in that order (`pos`, kept by its retransmissions). An ACK
//! acknowledges cumulatively (`cum`: the receiver holds the packets at every place before `cum`
//! in the sender's order, so one lost ACK is covered by the next, whatever the order) and
//! selectively (`[start, end)` and `seq`: the range and transmission number of the one data
//! packet that triggered it), and reports how many
//! distinct values the receiver holds (`received`), so the sender knows when the receiver has
//! the fraction p it needs (§3: "guarantee the delivery of a predefined fraction of data").
//!
//! Byte layout (network byte order), [`MLT_HEADER_LEN`] = 48 bytes, then `len` payload bytes:
//!
//! ```text
//!  0     1     2     3     4      5..8   8          12         16         24         28
//!  +-----+-----+-----+-----+------+------+----------+----------+----------+----------+
//!  | ver |flags| ecn |prio | vbytes| 0 0 0| conn u32 | msg u32  | seq u64  | start u32|
//!  +-----+-----+-----+-----+------+------+----------+----------+----------+----------+
//!  28         32         36         40           44         48
//!  +----------+----------+----------+------------+----------+
//!  | end u32  | total u32| cum u32  |received u32| len u32  |
//!  +----------+----------+----------+------------+----------+
//! ```
//!
//! On data, bytes 40..44 carry `need` instead of `received`: the values the receiver must wait
//! for, `ceil(p · total)` by the sender's p (0: the receiver uses its own p). The sender's p
//! governs, because the sender abandons packets only while `need` can still be reached.
//!
//! `ver` is [`MLT_VERSION`], distinct from the other headers'. Valid flags: [`Flags::ACK`] (an
//! acknowledgement), [`Flags::ECE`] (on an ACK: the data it answers was CE-marked, DCTCP's echo)
//! and [`Flags::FIN`] (on an ACK: the receiver has at least the fraction it waits for and has
//! handed the message up; on data: unused, refused).
//!
//! INVARIANT: `parse(emit(r)) == r` (the emitted header followed by `r.len` payload bytes) for
//! every `r` that `emit` accepts, and `emit` refuses every `r` that `parse` could not return:
//! `value_bytes` not 2 or 4; data with `start >= end`, `end > total`, `pos >= total`, `len !=
//! (end - start) · value_bytes` or flags other than none; an ACK with `len != 0`, `start >
//! end`, `end > total`, `cum > total`, `received > total` or `pos != 0`. `parse` never panics on
//! any input.

use crate::{Ecn, Flags, WireError};

/// Length of the header in bytes.
pub const MLT_HEADER_LEN: usize = 48;
/// First byte of a bounded-loss transport header.
pub const MLT_VERSION: u8 = 0x4e;
/// The flags a header may carry (ECE and FIN only on ACKs).
const MLT_FLAGS: Flags = Flags(Flags::ACK.0 | Flags::ECE.0 | Flags::FIN.0);

/// A parsed header. Payload is abstract: `len` bytes, the values `[start, end)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MltRepr {
    /// Connection id (the transfer id in the simulator).
    pub conn: u32,
    /// Message id within the connection: the sender's tag (`proto::MltConfig::tag`, an
    /// application's label such as a round number; 0 by default), echoed in ACKs.
    pub msg: u32,
    /// Data: the transmission number (one per packet sent, retransmissions included). ACK: the
    /// transmission number of the data packet acknowledged.
    pub seq: u64,
    /// First value index carried (data) or acknowledged (ACK).
    pub start: u32,
    /// One past the last value index carried (data) or acknowledged (ACK).
    pub end: u32,
    /// Values in the message.
    pub total: u32,
    /// ACK: the cumulative ACK, in places of the sender's order of first transmissions: the
    /// receiver holds the packets the sender sent at places `0..cum`. Data: 0.
    pub cum: u32,
    /// Data: this packet's place in the sender's order of first transmissions (0 for the first
    /// packet it sent; a retransmission keeps its packet's place). ACK: 0. Shares its bytes
    /// with `cum` (module docs).
    pub pos: u32,
    /// ACK: distinct values the receiver holds. Data: 0.
    pub received: u32,
    /// Data: the values the receiver waits for (`ceil(p · total)`, the sender's p; 0: the
    /// receiver's own p). ACK: 0. Shares its bytes with `received` (module docs).
    pub need: u32,
    /// Bytes per value: 4 (32-bit) or 2 (16-bit).
    pub value_bytes: u8,
    /// Payload length in bytes: `(end - start) · value_bytes` for data, 0 for ACKs.
    pub len: u32,
    /// [`Flags::ACK`], [`Flags::ECE`], [`Flags::FIN`] (see the module docs).
    pub flags: Flags,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Priority class (0 = highest), stamped by the driver.
    pub prio: u8,
}

impl MltRepr {
    /// Whether this is an acknowledgement.
    #[inline]
    pub const fn is_ack(&self) -> bool {
        self.flags.contains(Flags::ACK)
    }

    /// Bytes needed to emit this packet with its payload.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        MLT_HEADER_LEN + self.len as usize
    }

    /// The field rules of the module docs (everything but the buffer length).
    fn check(&self) -> Result<(), WireError> {
        if self.flags.0 & !MLT_FLAGS.0 != 0 {
            return Err(WireError::Malformed("flags"));
        }
        if self.value_bytes != 2 && self.value_bytes != 4 {
            return Err(WireError::Malformed("value_bytes"));
        }
        if self.end > self.total {
            return Err(WireError::Malformed("end > total"));
        }
        if self.is_ack() {
            if self.len != 0
                || self.start > self.end
                || self.cum > self.total
                || self.received > self.total
                || self.need != 0
                || self.pos != 0
            {
                return Err(WireError::Malformed("ack fields"));
            }
        } else {
            if self.flags != Flags::NONE {
                return Err(WireError::Malformed("flags"));
            }
            if self.start >= self.end {
                return Err(WireError::Malformed("empty range"));
            }
            // CORRECTNESS: computed in u64, so no overflow for any u32 range.
            let want = u64::from(self.end - self.start) * u64::from(self.value_bytes);
            if u64::from(self.len) != want || self.cum != 0 || self.received != 0 {
                return Err(WireError::Malformed("len"));
            }
            if self.need > self.total {
                return Err(WireError::Malformed("need > total"));
            }
            // A place in the order of the message's packets, each of at least one value.
            if self.pos >= self.total {
                return Err(WireError::Malformed("pos >= total"));
            }
        }
        Ok(())
    }

    /// Parse a header from `buf`; the payload is `buf[MLT_HEADER_LEN..][..len]`.
    pub fn parse(buf: &[u8]) -> Result<MltRepr, WireError> {
        if buf.len() < MLT_HEADER_LEN {
            return Err(WireError::Truncated { have: buf.len(), need: MLT_HEADER_LEN });
        }
        if buf[0] != MLT_VERSION {
            return Err(WireError::BadVersion(buf[0]));
        }
        if buf[5..8] != [0, 0, 0] {
            return Err(WireError::Malformed("reserved"));
        }
        let ecn = Ecn::from_u8(buf[2])?;
        let u32_at = |i: usize| u32::from_be_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        let mut w8 = [0u8; 8];
        w8.copy_from_slice(&buf[16..24]);
        let flags = Flags(buf[1]);
        // Bytes 36..40: `cum` on an ACK, `pos` on data; 40..44: `received` on an ACK, `need` on
        // data (module docs).
        let ((cum, received), (pos, need)) = if flags.contains(Flags::ACK) {
            ((u32_at(36), u32_at(40)), (0, 0))
        } else {
            ((0, 0), (u32_at(36), u32_at(40)))
        };
        let repr = MltRepr {
            conn: u32_at(8),
            msg: u32_at(12),
            seq: u64::from_be_bytes(w8),
            start: u32_at(24),
            end: u32_at(28),
            total: u32_at(32),
            cum,
            pos,
            received,
            need,
            value_bytes: buf[4],
            len: u32_at(44),
            flags,
            ecn,
            prio: buf[3],
        };
        repr.check()?;
        let need = MLT_HEADER_LEN.saturating_add(repr.len as usize);
        if buf.len() < need {
            return Err(WireError::Truncated { have: buf.len(), need });
        }
        Ok(repr)
    }

    /// Write the header into `buf[..MLT_HEADER_LEN]` and return its length; the caller copies
    /// the payload after it. Refuses, writing nothing, what [`MltRepr::parse`] would not read
    /// back (module docs), and a `buf` shorter than the header.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if buf.len() < MLT_HEADER_LEN {
            return Err(WireError::Truncated { have: buf.len(), need: MLT_HEADER_LEN });
        }
        self.check()?;
        buf[0] = MLT_VERSION;
        buf[1] = self.flags.0;
        buf[2] = self.ecn as u8;
        buf[3] = self.prio;
        buf[4] = self.value_bytes;
        buf[5..8].copy_from_slice(&[0, 0, 0]);
        buf[8..12].copy_from_slice(&self.conn.to_be_bytes());
        buf[12..16].copy_from_slice(&self.msg.to_be_bytes());
        buf[16..24].copy_from_slice(&self.seq.to_be_bytes());
        buf[24..28].copy_from_slice(&self.start.to_be_bytes());
        buf[28..32].copy_from_slice(&self.end.to_be_bytes());
        buf[32..36].copy_from_slice(&self.total.to_be_bytes());
        let at36 = if self.is_ack() { self.cum } else { self.pos };
        buf[36..40].copy_from_slice(&at36.to_be_bytes());
        let at40 = if self.is_ack() { self.received } else { self.need };
        buf[40..44].copy_from_slice(&at40.to_be_bytes());
        buf[44..48].copy_from_slice(&self.len.to_be_bytes());
        Ok(MLT_HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> MltRepr {
        MltRepr {
            conn: 7,
            msg: 2,
            seq: 0x0102_0304_0506_0708,
            start: 10,
            end: 13,
            total: 100,
            value_bytes: 4,
            len: 12,
            ecn: Ecn::Ect0,
            prio: 1,
            ..Default::default()
        }
    }

    fn ack() -> MltRepr {
        MltRepr { flags: Flags::ACK.with(Flags::FIN), len: 0, cum: 3, received: 90, ..data() }
    }

    #[test]
    fn round_trip_with_literal_bytes() {
        let p = data();
        let mut buf = vec![0u8; p.buffer_len()];
        assert_eq!(p.emit(&mut buf), Ok(MLT_HEADER_LEN));
        assert_eq!(&buf[..8], &[MLT_VERSION, 0, Ecn::Ect0 as u8, 1, 4, 0, 0, 0]);
        assert_eq!(&buf[16..24], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&buf[24..36], &[0, 0, 0, 10, 0, 0, 0, 13, 0, 0, 0, 100]);
        assert_eq!(&buf[44..48], &[0, 0, 0, 12]);
        assert_eq!(MltRepr::parse(&buf), Ok(p));
        let a = ack();
        let mut buf = vec![0u8; a.buffer_len()];
        assert_eq!(a.emit(&mut buf), Ok(MLT_HEADER_LEN));
        assert_eq!(MltRepr::parse(&buf), Ok(a));
        let half = MltRepr { value_bytes: 2, len: 6, ..data() };
        let mut buf = vec![0u8; half.buffer_len()];
        half.emit(&mut buf).unwrap();
        assert_eq!(MltRepr::parse(&buf), Ok(half));
        // Data carry their place and the sender's `need` where an ACK carries `cum` and
        // `received`.
        let d = MltRepr { need: 85, pos: 99, ..data() };
        let mut buf = vec![0u8; d.buffer_len()];
        d.emit(&mut buf).unwrap();
        assert_eq!(&buf[36..44], &[0, 0, 0, 99, 0, 0, 0, 85]);
        assert_eq!(MltRepr::parse(&buf), Ok(d));
        let mut buf = vec![0u8; a.buffer_len()];
        a.emit(&mut buf).unwrap();
        assert_eq!(&buf[36..44], &[0, 0, 0, 3, 0, 0, 0, 90]);
    }

    #[test]
    fn parse_refuses_bad_input_and_emit_refuses_what_parse_would_not_read_back() {
        let p = data();
        let mut buf = vec![0u8; p.buffer_len()];
        p.emit(&mut buf).unwrap();
        assert_eq!(MltRepr::parse(&buf[..MLT_HEADER_LEN + 11]), Err(WireError::Truncated { have: 59, need: 60 }));
        assert_eq!(MltRepr::parse(&buf[..10]), Err(WireError::Truncated { have: 10, need: MLT_HEADER_LEN }));
        let mut bad = buf.clone();
        bad[0] = 1;
        assert_eq!(MltRepr::parse(&bad), Err(WireError::BadVersion(1)));
        for (i, v) in [(1, Flags::SYN.0), (4, 3), (5, 1), (47, 13)] {
            let mut bad = buf.clone();
            bad[i] = v;
            assert!(MltRepr::parse(&bad).is_err(), "byte {i} = {v}");
        }
        let untouched = [0x77u8; MLT_HEADER_LEN];
        let mut out = untouched;
        for r in [
            MltRepr { flags: Flags::FIN, ..p },
            MltRepr { value_bytes: 8, len: 24, ..p },
            MltRepr { end: 101, ..p },
            MltRepr { start: 13, len: 0, ..p },
            MltRepr { len: 13, ..p },
            MltRepr { start: 0, end: u32::MAX, total: u32::MAX, len: u32::MAX, ..p },
            MltRepr { len: 1, ..ack() },
            MltRepr { received: 101, ..ack() },
            MltRepr { cum: 101, ..ack() },
            MltRepr { start: 14, ..ack() },
            MltRepr { need: 101, ..p },
            MltRepr { received: 1, ..p },
            MltRepr { need: 1, ..ack() },
            MltRepr { pos: 100, ..p },
            MltRepr { cum: 1, ..p },
            MltRepr { pos: 1, ..ack() },
        ] {
            assert!(r.emit(&mut out).is_err(), "{r:?}");
        }
        assert_eq!(out, untouched, "a refused emit writes nothing");
        assert!(MltRepr::parse(&[]).is_err());
    }
}
