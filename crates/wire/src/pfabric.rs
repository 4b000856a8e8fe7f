//! The header of pFabric (Alizadeh et al., SIGCOMM'13): a data packet carries its flow's
//! priority as a single number, `rank` (the flow's remaining size in bytes, §4.1: lower is more
//! urgent), which every switch reads to schedule and drop; an ACK acknowledges both cumulatively
//! (`ack`) and selectively (`seq`: the offset of the one data packet that triggered it, §4.2's
//! SACK-like per-packet acknowledgement).
//!
//! Byte layout (network byte order), [`PFABRIC_HEADER_LEN`] = 36 bytes, then `len` payload
//! bytes:
//!
//! ```text
//!  0      1      2      3      4            8                16               24        28               36
//!  +------+------+------+------+------------+----------------+----------------+---------+----------------+
//!  | ver  |flags | ecn  | prio |  conn u32  |    seq u64     |    ack u64     | len u32 |   rank u64     |
//!  +------+------+------+------+------------+----------------+----------------+---------+----------------+
//! ```
//!
//! `ver` is [`PFABRIC_VERSION`], distinct from the other headers', so a driver can tell them
//! apart from the first byte. Valid flags: [`Flags::ACK`] (an acknowledgement) and
//! [`Flags::FIN`] (the last data packet of a transfer).
//!
//! INVARIANT: `parse(emit(r)) == r` (the emitted header followed by `r.len` payload bytes) for
//! every `r` that `emit` accepts, and `emit` refuses every `r` that `parse` could not return:
//! a flag other than `ACK` and `FIN`, or `seq + len` past `u64::MAX`. `parse` never panics on
//! any input.

use crate::{check_emit, check_end, Ecn, Flags, WireError};

/// Length of the pFabric header in bytes.
pub const PFABRIC_HEADER_LEN: usize = 36;
/// First byte of a pFabric header.
pub const PFABRIC_VERSION: u8 = 0x41;
/// The flags a pFabric header may carry.
const PFABRIC_FLAGS: Flags = Flags(Flags::ACK.0 | Flags::FIN.0);

/// A parsed pFabric header. Payload is abstract: `len` bytes at byte offset `seq`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PfabricRepr {
    /// Connection id (the transfer id in the simulator).
    pub conn: u32,
    /// Data: byte offset of the first payload byte (a header-only probe: the first byte not
    /// yet acknowledged). ACK: the offset of the data packet acknowledged (selective ACK).
    pub seq: u64,
    /// ACK: the next byte expected in order (cumulative ACK). Data: 0.
    pub ack: u64,
    /// Payload length in bytes (0 for ACKs and probes).
    pub len: u32,
    /// [`Flags::ACK`] on acknowledgements, [`Flags::FIN`] on a transfer's last data packet.
    pub flags: Flags,
    /// ECN codepoint (pFabric does not use it; carried for the network's sake).
    pub ecn: Ecn,
    /// Priority class (0 = highest), stamped by the driver like every header's; pFabric's own
    /// priority is `rank`.
    pub prio: u8,
    /// pFabric's packet priority (§4.1): the sender's remaining flow size in bytes; lower is
    /// served first and dropped last.
    pub rank: u64,
}

impl PfabricRepr {
    /// Bytes needed to emit this packet with its payload.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        PFABRIC_HEADER_LEN + self.len as usize
    }

    /// Parse a header from `buf`; the payload is `buf[PFABRIC_HEADER_LEN..][..len]`.
    pub fn parse(buf: &[u8]) -> Result<PfabricRepr, WireError> {
        if buf.len() < PFABRIC_HEADER_LEN {
            return Err(WireError::Truncated { have: buf.len(), need: PFABRIC_HEADER_LEN });
        }
        if buf[0] != PFABRIC_VERSION {
            return Err(WireError::BadVersion(buf[0]));
        }
        let flags = Flags(buf[1]);
        if flags.0 & !PFABRIC_FLAGS.0 != 0 {
            return Err(WireError::Malformed("flags"));
        }
        let ecn = Ecn::from_u8(buf[2])?;
        let mut w4 = [0u8; 4];
        let mut w8 = [0u8; 8];
        w4.copy_from_slice(&buf[4..8]);
        let conn = u32::from_be_bytes(w4);
        w4.copy_from_slice(&buf[24..28]);
        let len = u32::from_be_bytes(w4);
        let mut u64_at = |i: usize| {
            w8.copy_from_slice(&buf[i..i + 8]);
            u64::from_be_bytes(w8)
        };
        let repr = PfabricRepr { conn, seq: u64_at(8), ack: u64_at(16), len, flags, ecn, prio: buf[3], rank: u64_at(28) };
        let need = PFABRIC_HEADER_LEN.saturating_add(repr.len as usize);
        if buf.len() < need {
            return Err(WireError::Truncated { have: buf.len(), need });
        }
        check_end(repr.seq, repr.len)?;
        Ok(repr)
    }

    /// Write the header into `buf[..PFABRIC_HEADER_LEN]` and return its length; the caller
    /// copies the payload after it. Refuses, writing nothing, what [`PfabricRepr::parse`] would
    /// not read back: [`WireError::Truncated`] if `buf` is shorter than the header,
    /// [`WireError::Malformed`] for a flag other than `ACK` and `FIN` or a payload that ends
    /// past `u64::MAX`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        check_emit(buf.len(), PFABRIC_HEADER_LEN, self.flags, PFABRIC_FLAGS, self.seq, self.len)?;
        buf[0] = PFABRIC_VERSION;
        buf[1] = self.flags.0;
        buf[2] = self.ecn as u8;
        buf[3] = self.prio;
        buf[4..8].copy_from_slice(&self.conn.to_be_bytes());
        buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        buf[16..24].copy_from_slice(&self.ack.to_be_bytes());
        buf[24..28].copy_from_slice(&self.len.to_be_bytes());
        buf[28..36].copy_from_slice(&self.rank.to_be_bytes());
        Ok(PFABRIC_HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> PfabricRepr {
        PfabricRepr {
            conn: 7,
            seq: 1 << 40,
            ack: 3 << 20,
            len: 3,
            flags: Flags::FIN,
            ecn: Ecn::NotEct,
            prio: 2,
            rank: 0x0102_0304_0506_0708,
        }
    }

    #[test]
    fn round_trip_with_literal_bytes() {
        let p = sample();
        let mut buf = vec![0u8; p.buffer_len()];
        assert_eq!(p.emit(&mut buf), Ok(PFABRIC_HEADER_LEN));
        assert_eq!(&buf[..4], &[PFABRIC_VERSION, 0x04, 0, 2]);
        assert_eq!(&buf[28..36], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(PfabricRepr::parse(&buf), Ok(p));
        let ack = PfabricRepr { flags: Flags::ACK, len: 0, ..p };
        let mut buf = vec![0u8; ack.buffer_len()];
        assert_eq!(ack.emit(&mut buf), Ok(PFABRIC_HEADER_LEN));
        assert_eq!(PfabricRepr::parse(&buf), Ok(ack));
    }

    #[test]
    fn parse_refuses_bad_input_and_emit_refuses_what_parse_would_not_read_back() {
        let p = sample();
        let mut buf = vec![0u8; p.buffer_len()];
        p.emit(&mut buf).unwrap();
        assert_eq!(PfabricRepr::parse(&buf[..PFABRIC_HEADER_LEN + 2]), Err(WireError::Truncated { have: 38, need: 39 }));
        let mut bad = buf.clone();
        bad[0] = 1;
        assert_eq!(PfabricRepr::parse(&bad), Err(WireError::BadVersion(1)));
        bad = buf.clone();
        bad[1] = Flags::SYN.0;
        assert_eq!(PfabricRepr::parse(&bad), Err(WireError::Malformed("flags")));
        let untouched = [0x77u8; PFABRIC_HEADER_LEN];
        let mut out = untouched;
        assert!(PfabricRepr { flags: Flags::SYN, ..p }.emit(&mut out).is_err());
        assert!(PfabricRepr { seq: u64::MAX - 2, ..p }.emit(&mut out).is_err());
        assert_eq!(out, untouched, "a refused emit writes nothing");
    }
}
