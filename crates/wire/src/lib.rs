//! slacknet's transport headers: the parsed [`SegmentRepr`] of the reliable byte stream (TCP
//! kinds), [`DatagramRepr`] of the unreliable datagram transport and [`AtpRepr`] of ATP,
//! NetApprox's approximate transport (data, per-packet ACKs and an end-of-job notice in one
//! header; its module docs give its layout and rules) and [`PfabricRepr`] of pFabric (a
//! remaining-size priority on every data packet), each with its byte format for the UDP
//! driver. Each protocol owns its header; `proto::Segment` is the tagged union the simulator
//! carries.
//!
//! Pipeline position: `units <- wire <- proto`. The simulator never serializes: it carries
//! `SegmentRepr` values by value. Only the UDP driver calls [`SegmentRepr::parse`] and
//! [`SegmentRepr::emit`].
//!
//! Byte layout (network byte order), [`HEADER_LEN`] = 44 bytes, then `len` payload bytes:
//!
//! ```text
//!  0      1      2      3      4            8                16               24        28               36               44
//!  +------+------+------+------+------------+----------------+----------------+---------+----------------+----------------+
//!  | ver  |flags | ecn  | prio |  conn u32  |    seq u64     |    ack u64     | len u32 |  ts_ps u64     | ts_echo_ps u64 |
//!  +------+------+------+------+------------+----------------+----------------+---------+----------------+----------------+
//! ```
//!
//! INVARIANT: `parse(emit(r)) == r` (the emitted header followed by `r.len` payload bytes) for
//! every `r` that `emit` accepts, and `emit` refuses every `r` that `parse` could not return:
//! undefined flag bits, or `seq + len` past `u64::MAX`. `parse` never panics on any input.
//! The other headers keep the same invariant with their own rules (ATP has no `seq + len`
//! rule: its `seq` numbers transmissions). Every header's `parse` and `emit` are fuzzed
//! (`fuzz/`: `wire_segment`, `wire_datagram`, `wire_atp`, and `wire_roundtrip` for all three),
//! and the round trip is checked over boundary values of every field
//! (`crates/fuzz-targets/tests`).

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

/// A payload `[seq, seq + len)` must end within `u64`: what every header's `parse` refuses.
fn check_end(seq: u64, len: u32) -> Result<(), WireError> {
    match seq.checked_add(u64::from(len)) {
        Some(_) => Ok(()),
        None => Err(WireError::Malformed("seq + len overflows")),
    }
}

/// What every header's `emit` refuses, writing nothing, because its `parse` would not read it
/// back: a buffer shorter than the header, flag bits outside `allowed`, a payload ending past
/// `u64::MAX`.
fn check_emit(have: usize, need: usize, flags: Flags, allowed: Flags, seq: u64, len: u32) -> Result<(), WireError> {
    if have < need {
        return Err(WireError::Truncated { have, need });
    }
    if flags.0 & !allowed.0 != 0 {
        return Err(WireError::Malformed("flags"));
    }
    check_end(seq, len)
}

mod atp;
mod datagram;
mod mlt;
mod pfabric;
mod view;
mod xpass;

pub use atp::{AtpKind, AtpRepr, ATP_HEADER_LEN, ATP_VERSION};
pub use datagram::{DatagramRepr, DATAGRAM_HEADER_LEN, DATAGRAM_VERSION};
pub use mlt::{MltRepr, MLT_HEADER_LEN, MLT_VERSION};
pub use pfabric::{PfabricRepr, PFABRIC_HEADER_LEN, PFABRIC_VERSION};
pub use view::{AtpPacket, MltPacket};
pub use xpass::{XpassKind, XpassRepr, XPASS_HEADER_LEN, XPASS_VERSION};

/// Length of the fixed header in bytes.
pub const HEADER_LEN: usize = 44;
/// Header format version.
pub const VERSION: u8 = 1;

/// Why a buffer is not a valid segment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than the header needs, or than the header's `len` says follow.
    #[error("truncated segment: {have} bytes, need {need}")]
    Truncated {
        /// Bytes available.
        have: usize,
        /// Bytes required.
        need: usize,
    },
    /// Unknown version byte.
    #[error("unknown header version {0}")]
    BadVersion(u8),
    /// Unknown ECN codepoint or flag bits.
    #[error("malformed header field {0}")]
    Malformed(&'static str),
}

/// Header flags (a byte of bits, TCP-like).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u8);

impl Flags {
    /// No flags.
    pub const NONE: Flags = Flags(0);
    /// Connection open request.
    pub const SYN: Flags = Flags(0x01);
    /// The `ack` field is valid.
    pub const ACK: Flags = Flags(0x02);
    /// Last segment of the transfer (no extra sequence space).
    pub const FIN: Flags = Flags(0x04);
    /// ECN-Echo: the receiver saw a CE mark (per-packet echo in DCTCP).
    pub const ECE: Flags = Flags(0x08);
    /// Congestion window reduced.
    pub const CWR: Flags = Flags(0x10);
    /// Mask of all defined bits.
    pub const ALL: Flags = Flags(0x1f);

    /// Whether every bit of `other` is set.
    #[inline]
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Union.
    #[inline]
    pub const fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
    /// Difference.
    #[inline]
    pub const fn without(self, other: Flags) -> Flags {
        Flags(self.0 & !other.0)
    }
}

/// The IP ECN codepoint (RFC 3168) carried by a segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-capable transport.
    #[default]
    NotEct = 0,
    /// ECN-capable, codepoint ECT(1).
    Ect1 = 1,
    /// ECN-capable, codepoint ECT(0).
    Ect0 = 2,
    /// Congestion experienced (set by a switch).
    Ce = 3,
}

impl Ecn {
    /// Whether a switch may mark this packet instead of dropping it.
    #[inline]
    pub const fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
    /// The codepoint of the two ECN bits `b` (0 to 3), as IP carries them.
    #[inline]
    pub fn from_u8(b: u8) -> Result<Ecn, WireError> {
        Ok(match b {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            3 => Ecn::Ce,
            _ => return Err(WireError::Malformed("ecn")),
        })
    }
}

/// A parsed segment header. Payload is abstract: `len` bytes starting at byte offset `seq`.
///
/// Sequence numbers are 64-bit byte offsets from the start of the transfer and never wrap.
/// `ts_ps`/`ts_echo_ps` implement RFC 7323-style timestamps in picoseconds of the sender's
/// clock, used for RTT samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SegmentRepr {
    /// Connection id (the flow id in the simulator).
    pub conn: u32,
    /// Byte offset of the first payload byte.
    pub seq: u64,
    /// Cumulative acknowledgement: the next byte expected (valid with [`Flags::ACK`]).
    pub ack: u64,
    /// Payload length in bytes.
    pub len: u32,
    /// Header flags.
    pub flags: Flags,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Priority class (0 = highest); maps to a switch queue.
    pub prio: u8,
    /// Sender timestamp, picoseconds.
    pub ts_ps: u64,
    /// Echo of the peer's latest timestamp, picoseconds.
    pub ts_echo_ps: u64,
}

impl SegmentRepr {
    /// Bytes needed to emit this segment with its payload.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.len as usize
    }

    /// Parse a header from `buf`. The payload is `buf[HEADER_LEN..HEADER_LEN + len]`.
    pub fn parse(buf: &[u8]) -> Result<SegmentRepr, WireError> {
        if buf.len() < HEADER_LEN {
            return Err(WireError::Truncated { have: buf.len(), need: HEADER_LEN });
        }
        if buf[0] != VERSION {
            return Err(WireError::BadVersion(buf[0]));
        }
        let flags = Flags(buf[1]);
        if flags.0 & !Flags::ALL.0 != 0 {
            return Err(WireError::Malformed("flags"));
        }
        let ecn = Ecn::from_u8(buf[2])?;
        let u32_at = |i: usize| u32::from_be_bytes(buf[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_be_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
        let repr = SegmentRepr {
            conn: u32_at(4),
            seq: u64_at(8),
            ack: u64_at(16),
            len: u32_at(24),
            flags,
            ecn,
            prio: buf[3],
            ts_ps: u64_at(28),
            ts_echo_ps: u64_at(36),
        };
        let need = HEADER_LEN.saturating_add(repr.len as usize);
        if buf.len() < need {
            return Err(WireError::Truncated { have: buf.len(), need });
        }
        check_end(repr.seq, repr.len)?;
        Ok(repr)
    }

    /// Write the header into `buf[..HEADER_LEN]` and return [`HEADER_LEN`]; the caller copies
    /// the payload after it. Refuses, writing nothing, what [`SegmentRepr::parse`] would not
    /// read back: [`WireError::Truncated`] if `buf` is shorter than the header,
    /// [`WireError::Malformed`] for flag bits outside [`Flags::ALL`] or a payload that ends
    /// past `u64::MAX`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        check_emit(buf.len(), HEADER_LEN, self.flags, Flags::ALL, self.seq, self.len)?;
        buf[0] = VERSION;
        buf[1] = self.flags.0;
        buf[2] = self.ecn as u8;
        buf[3] = self.prio;
        buf[4..8].copy_from_slice(&self.conn.to_be_bytes());
        buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        buf[16..24].copy_from_slice(&self.ack.to_be_bytes());
        buf[24..28].copy_from_slice(&self.len.to_be_bytes());
        buf[28..36].copy_from_slice(&self.ts_ps.to_be_bytes());
        buf[36..44].copy_from_slice(&self.ts_echo_ps.to_be_bytes());
        Ok(HEADER_LEN)
    }

    /// One past the last payload byte.
    #[inline]
    pub const fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
}

/// Most hops an in-band telemetry stack records (a 3-tier fat-tree path has 6 links).
pub const MAX_INT_HOPS: usize = 8;

/// In-band network telemetry written by one switch egress port into a data packet, as HPCC
/// and PowerTCP use it: the port's queue, its cumulative transmitted bytes, the time and the
/// line rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IntHop {
    /// Bytes queued at the egress port when the packet left it.
    pub qlen_bytes: u64,
    /// Bytes the port has transmitted since the start of the run (cumulative).
    pub tx_bytes: u64,
    /// When the packet left the port, picoseconds.
    pub ts_ps: u64,
    /// The port's line rate, bits per second.
    pub rate_bps: u64,
}

/// The telemetry of every hop a data packet crossed, in path order. The receiver echoes the
/// stack of a data packet in the ACK it sends for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IntStack {
    /// Hops `0..len` are valid.
    pub hops: [IntHop; MAX_INT_HOPS],
    /// Number of valid hops.
    pub len: u8,
}

impl IntStack {
    /// Append a hop; a full stack keeps its first [`MAX_INT_HOPS`] hops.
    #[inline]
    pub fn push(&mut self, hop: IntHop) {
        if (self.len as usize) < MAX_INT_HOPS {
            self.hops[self.len as usize] = hop;
            self.len += 1;
        }
    }

    /// The valid hops.
    #[inline]
    pub fn hops(&self) -> &[IntHop] {
        &self.hops[..self.len as usize]
    }
}

/// Blocks a SACK option carries (RFC 2018 §3: at most three beside the timestamp option).
pub const MAX_SACK_BLOCKS: usize = 3;

/// The selective acknowledgment blocks of one ACK (RFC 2018): byte ranges `[start, end)` the
/// receiver holds above its cumulative acknowledgment, the block holding the segment that
/// triggered the ACK first, then the most recently reported others (RFC 2018 §4). Like
/// [`IntStack`], it travels beside the segment in the simulator (a SACK-less ACK carries none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SackBlocks {
    /// Blocks `0..len` are valid.
    pub blocks: [(u64, u64); MAX_SACK_BLOCKS],
    /// Number of valid blocks.
    pub len: u8,
}

impl SackBlocks {
    /// The valid blocks, most recent first.
    #[inline]
    pub fn blocks(&self) -> &[(u64, u64)] {
        &self.blocks[..(self.len as usize).min(MAX_SACK_BLOCKS)]
    }

    /// Whether there is no block.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append a block; a full set keeps its first [`MAX_SACK_BLOCKS`].
    #[inline]
    pub fn push(&mut self, block: (u64, u64)) {
        if (self.len as usize) < MAX_SACK_BLOCKS {
            self.blocks[self.len as usize] = block;
            self.len += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: [u8; 46] = [
        1, 0x0a, 2, 3, // ver, ACK|ECE, ECT(0), prio 3
        0, 0, 0, 7, // conn 7
        0, 0, 0, 0, 0, 0, 0x05, 0xdc, // seq 1500
        0, 0, 0, 0, 0, 0, 0x0b, 0xb8, // ack 3000
        0, 0, 0, 2, // len 2
        0, 0, 0, 0, 0, 0, 0, 9, // ts 9
        0, 0, 0, 0, 0, 0, 0, 4, // ts_echo 4
        0xaa, 0xbb, // payload
    ];

    fn repr() -> SegmentRepr {
        SegmentRepr {
            conn: 7,
            seq: 1500,
            ack: 3000,
            len: 2,
            flags: Flags::ACK.with(Flags::ECE),
            ecn: Ecn::Ect0,
            prio: 3,
            ts_ps: 9,
            ts_echo_ps: 4,
        }
    }

    #[test]
    fn int_stack_keeps_the_first_hops() {
        let mut s = IntStack::default();
        for i in 0..(MAX_INT_HOPS as u64 + 2) {
            s.push(IntHop { qlen_bytes: i, ..IntHop::default() });
        }
        assert_eq!(s.hops().len(), MAX_INT_HOPS);
        assert_eq!(s.hops()[0].qlen_bytes, 0);
        assert_eq!(s.hops()[MAX_INT_HOPS - 1].qlen_bytes, MAX_INT_HOPS as u64 - 1);
    }

    #[test]
    fn parse_literal_bytes() {
        assert_eq!(SegmentRepr::parse(&BYTES), Ok(repr()));
    }

    #[test]
    fn emit_matches_literal_bytes() {
        let mut buf = [0u8; 46];
        let n = repr().emit(&mut buf).unwrap();
        buf[n..].copy_from_slice(&[0xaa, 0xbb]);
        assert_eq!(buf, BYTES);
        assert_eq!(repr().buffer_len(), 46);
    }

    #[test]
    fn rejects_truncated_payload_and_header() {
        assert_eq!(
            SegmentRepr::parse(&BYTES[..45]),
            Err(WireError::Truncated { have: 45, need: 46 })
        );
        assert_eq!(
            SegmentRepr::parse(&BYTES[..10]),
            Err(WireError::Truncated { have: 10, need: HEADER_LEN })
        );
    }

    #[test]
    fn rejects_bad_fields() {
        let mut b = BYTES;
        b[0] = 9;
        assert_eq!(SegmentRepr::parse(&b), Err(WireError::BadVersion(9)));
        let mut b = BYTES;
        b[2] = 4;
        assert_eq!(SegmentRepr::parse(&b), Err(WireError::Malformed("ecn")));
        let mut b = BYTES;
        b[1] = 0x80;
        assert_eq!(SegmentRepr::parse(&b), Err(WireError::Malformed("flags")));
    }

    // Found by the `wire_roundtrip` fuzz target: emit wrote these, and parse refused them.
    #[test]
    fn emit_refuses_what_parse_would_not_read_back() {
        let untouched = [0x77u8; 46];
        let refused = |r: SegmentRepr, n: usize| {
            let mut buf = untouched;
            let e = r.emit(&mut buf[..n]).unwrap_err();
            assert_eq!(buf, untouched, "a refused emit writes nothing");
            e
        };
        let undefined = SegmentRepr { flags: Flags(0x20).with(Flags::ACK), ..repr() };
        assert_eq!(refused(undefined, 46), WireError::Malformed("flags"));
        let past_the_end = SegmentRepr { seq: u64::MAX - 1, ..repr() };
        assert_eq!(refused(past_the_end, 46), WireError::Malformed("seq + len overflows"));
        assert_eq!(refused(repr(), HEADER_LEN - 1), WireError::Truncated { have: 43, need: HEADER_LEN });
        // The last sequence number a payload can end at is still emitted and read back.
        let at_the_end = SegmentRepr { seq: u64::MAX - 2, ..repr() };
        let mut buf = [0u8; 46];
        assert_eq!(at_the_end.emit(&mut buf), Ok(HEADER_LEN));
        assert_eq!(SegmentRepr::parse(&buf), Ok(at_the_end));
    }

    #[test]
    fn parse_never_panics_on_prefixes_and_mutations() {
        // A cheap in-test fuzz: every prefix and every single-byte mutation.
        for n in 0..=BYTES.len() {
            let _ = SegmentRepr::parse(&BYTES[..n]);
        }
        for i in 0..BYTES.len() {
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut b = BYTES;
                b[i] = v;
                if let Ok(r) = SegmentRepr::parse(&b) {
                    let mut out = vec![0u8; r.buffer_len()];
                    r.emit(&mut out).unwrap();
                    assert_eq!(SegmentRepr::parse(&out).map(|p| p.len), Ok(r.len));
                }
            }
        }
    }
}
