//! The header of ExpressPass (Cho et al., SIGCOMM'17) and of Aeolus on top of it (Hu et al.,
//! SIGCOMM'20), `proto::expresspass`: credit requests, credits, data, ACKs, and Aeolus's probe
//! and its ACK, in one header ([`XpassKind`]). Fields a kind does not use are zero.
//! - `Request`: the sender asks the receiver for credits (ExpressPass §3.1); `size` is the
//!   transfer's size in bytes.
//! - `Credit`: number `credit` of the receiver's credits (numbers start at 1), sent at `ts_ps`;
//!   one credit lets the sender send one data packet (ExpressPass §3.1); `ack` is the
//!   receiver's cumulative count of in-order bytes.
//! - `Data`: `len` payload bytes at byte offset `seq` of a transfer of `size` bytes. A scheduled
//!   packet echoes the `credit` number and `ts_ps` of the credit that let it go (ExpressPass
//!   §3.2 counts credit loss from the gaps); an Aeolus unscheduled packet (sent in the first
//!   RTT without a credit, Aeolus §3.1) has `credit == 0` and the UNSCHEDULED flag.
//! - `Ack`: the receiver has the data packet at offset `seq`; `ack` is its cumulative count of
//!   in-order bytes, `ts_ps` the data packet's echoed.
//! - `Probe`: Aeolus §4.2: sent right after the unscheduled packets, `seq` is where they end;
//!   `size` as for `Request`. It is a scheduled packet, so selective dropping spares it.
//! - `ProbeAck`: the receiver's answer to a probe, `ack` as for `Ack`: every unscheduled packet
//!   not acknowledged before it arrives was lost (Aeolus §4.2).
//! - `CreditStop`: the sender has nothing left to send; the receiver pauses its credits until
//!   the next `Request` (ExpressPass §3.1's credit stop).
//!
//! Byte layout (network byte order), [`XPASS_HEADER_LEN`] = 52 bytes, then `len` payload bytes:
//!
//! ```text
//!  0     1     2     3     4     5          8          12         16         20               28               36               44               52
//!  +-----+-----+-----+-----+-----+----------+----------+----------+----------+----------------+----------------+----------------+----------------+
//!  | ver |kind |flags| ecn |prio | 0 0 0    | conn u32 |credit u32| len u32  |    seq u64     |    ack u64     |   size u64     |  ts_ps u64     |
//!  +-----+-----+-----+-----+-----+----------+----------+----------+----------+----------------+----------------+----------------+----------------+
//! ```
//!
//! `ver` is [`XPASS_VERSION`], distinct from the other headers' first byte. `flags` has one
//! defined bit, UNSCHEDULED (0x01), valid on `Data` only.
//!
//! INVARIANT: `parse(emit(r)) == r` (the emitted header followed by `r.len` payload bytes) for
//! every `r` that `emit` accepts, and `emit` refuses every `r` that `parse` could not return.
//! `parse` refuses: bytes 5..8 other than 0, an unknown kind, flag bits other than UNSCHEDULED
//! or UNSCHEDULED on a kind other than `Data`, payload on a kind other than `Data`, and a
//! payload `[seq, seq + len)` ending past `u64::MAX`. `parse` never panics on any input.

use crate::{check_end, Ecn, WireError};

/// Length of the ExpressPass/Aeolus header in bytes.
pub const XPASS_HEADER_LEN: usize = 52;
/// First byte of an ExpressPass/Aeolus header.
pub const XPASS_VERSION: u8 = 0x58;
/// The UNSCHEDULED flag bit (Aeolus §3.1).
const UNSCHEDULED: u8 = 0x01;

/// What an ExpressPass/Aeolus packet is (module docs for each kind's fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum XpassKind {
    /// Credit request (sender to receiver).
    #[default]
    Request = 0,
    /// A credit (receiver to sender).
    Credit = 1,
    /// A data packet.
    Data = 2,
    /// The acknowledgement of one data packet.
    Ack = 3,
    /// Aeolus's probe after the unscheduled packets.
    Probe = 4,
    /// The acknowledgement of a probe.
    ProbeAck = 5,
    /// The sender needs no more credits for now.
    CreditStop = 6,
}

/// A parsed ExpressPass/Aeolus header (module docs for what each field means per kind).
/// Payload is abstract: `len` bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct XpassRepr {
    /// What the packet is.
    pub kind: XpassKind,
    /// Aeolus: a data packet sent without a credit in the first RTT.
    pub unscheduled: bool,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Priority class (0 = highest).
    pub prio: u8,
    /// Connection (transfer) id.
    pub conn: u32,
    /// Credit: its number; Data: the number of the credit it answers (0: unscheduled).
    pub credit: u32,
    /// Payload bytes (Data only).
    pub len: u32,
    /// Data: byte offset; Ack: the offset acknowledged; Probe: end of the unscheduled bytes.
    pub seq: u64,
    /// Credit, Ack, ProbeAck: in-order bytes the receiver has.
    pub ack: u64,
    /// Request, Data, Probe: the transfer's size in bytes.
    pub size: u64,
    /// Credit: send time; Data: the credit's, echoed; Ack: the data packet's, echoed (ps).
    pub ts_ps: u64,
}

impl XpassRepr {
    /// Bytes needed to emit this packet with its payload.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        XPASS_HEADER_LEN + self.len as usize
    }

    /// Whether this packet is a credit (switches queue and rate-limit credits apart,
    /// ExpressPass §3.1).
    #[inline]
    pub const fn is_credit(&self) -> bool {
        matches!(self.kind, XpassKind::Credit)
    }

    /// The rules on fields that `parse` and `emit` share, in this order: UNSCHEDULED on a kind
    /// other than `Data` (`"unscheduled"`), payload on a kind other than `Data` (`"len"`), a
    /// payload ending past `u64::MAX` (`"seq + len overflows"`).
    fn check_fields(&self) -> Result<(), WireError> {
        if self.unscheduled && self.kind != XpassKind::Data {
            return Err(WireError::Malformed("unscheduled"));
        }
        if self.len != 0 && self.kind != XpassKind::Data {
            return Err(WireError::Malformed("len"));
        }
        check_end(self.seq, self.len)
    }

    /// Parse a header from `buf`; the payload is `buf[XPASS_HEADER_LEN..][..len]`. Refuses, in
    /// this order: a `buf` shorter than the header ([`WireError::Truncated`]), a first byte other
    /// than [`XPASS_VERSION`] ([`WireError::BadVersion`]), a header breaking a rule of the module
    /// docs ([`WireError::Malformed`]: `"reserved"`, `"kind"`, `"flags"`, `"ecn"`, then the
    /// rules of `check_fields`), and a payload `buf` does not hold in full.
    pub fn parse(buf: &[u8]) -> Result<XpassRepr, WireError> {
        if buf.len() < XPASS_HEADER_LEN {
            return Err(WireError::Truncated { have: buf.len(), need: XPASS_HEADER_LEN });
        }
        if buf[0] != XPASS_VERSION {
            return Err(WireError::BadVersion(buf[0]));
        }
        if buf[5..8] != [0, 0, 0] {
            return Err(WireError::Malformed("reserved"));
        }
        let kind = match buf[1] {
            0 => XpassKind::Request,
            1 => XpassKind::Credit,
            2 => XpassKind::Data,
            3 => XpassKind::Ack,
            4 => XpassKind::Probe,
            5 => XpassKind::ProbeAck,
            6 => XpassKind::CreditStop,
            _ => return Err(WireError::Malformed("kind")),
        };
        if buf[2] & !UNSCHEDULED != 0 {
            return Err(WireError::Malformed("flags"));
        }
        let ecn = Ecn::from_u8(buf[3])?;
        let mut w4 = [0u8; 4];
        let mut w8 = [0u8; 8];
        let mut u32_at = |i: usize| {
            w4.copy_from_slice(&buf[i..i + 4]);
            u32::from_be_bytes(w4)
        };
        let (conn, credit, len) = (u32_at(8), u32_at(12), u32_at(16));
        let mut u64_at = |i: usize| {
            w8.copy_from_slice(&buf[i..i + 8]);
            u64::from_be_bytes(w8)
        };
        let repr = XpassRepr {
            kind,
            unscheduled: buf[2] == UNSCHEDULED,
            ecn,
            prio: buf[4],
            conn,
            credit,
            len,
            seq: u64_at(20),
            ack: u64_at(28),
            size: u64_at(36),
            ts_ps: u64_at(44),
        };
        repr.check_fields()?;
        let need = XPASS_HEADER_LEN.saturating_add(repr.len as usize);
        if buf.len() < need {
            return Err(WireError::Truncated { have: buf.len(), need });
        }
        Ok(repr)
    }

    /// Write the header into `buf[..XPASS_HEADER_LEN]` and return its length; the caller copies
    /// the payload after it. Refuses, writing nothing, what [`XpassRepr::parse`] would not read
    /// back: [`WireError::Truncated`] if `buf` is shorter than the header, then
    /// [`WireError::Malformed`] for the first rule of the module docs it breaks.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if buf.len() < XPASS_HEADER_LEN {
            return Err(WireError::Truncated { have: buf.len(), need: XPASS_HEADER_LEN });
        }
        self.check_fields()?;
        buf[0] = XPASS_VERSION;
        buf[1] = self.kind as u8;
        buf[2] = if self.unscheduled { UNSCHEDULED } else { 0 };
        buf[3] = self.ecn as u8;
        buf[4] = self.prio;
        buf[5..8].copy_from_slice(&[0, 0, 0]);
        buf[8..12].copy_from_slice(&self.conn.to_be_bytes());
        buf[12..16].copy_from_slice(&self.credit.to_be_bytes());
        buf[16..20].copy_from_slice(&self.len.to_be_bytes());
        buf[20..28].copy_from_slice(&self.seq.to_be_bytes());
        buf[28..36].copy_from_slice(&self.ack.to_be_bytes());
        buf[36..44].copy_from_slice(&self.size.to_be_bytes());
        buf[44..52].copy_from_slice(&self.ts_ps.to_be_bytes());
        Ok(XPASS_HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> XpassRepr {
        XpassRepr {
            kind: XpassKind::Data,
            unscheduled: true,
            ecn: Ecn::Ect0,
            prio: 1,
            conn: 7,
            credit: 0,
            len: 3,
            seq: 1 << 40,
            ack: 0,
            size: 1 << 41,
            ts_ps: 123_456,
        }
    }

    fn every_kind() -> [XpassRepr; 7] {
        let header = |kind| XpassRepr { kind, unscheduled: false, len: 0, ..data() };
        [
            header(XpassKind::Request),
            XpassRepr { credit: u32::MAX, ..header(XpassKind::Credit) },
            data(),
            XpassRepr { ack: 99, ..header(XpassKind::Ack) },
            header(XpassKind::Probe),
            XpassRepr { ack: 5, ..header(XpassKind::ProbeAck) },
            header(XpassKind::CreditStop),
        ]
    }

    fn round_trip(r: XpassRepr) -> Vec<u8> {
        let mut buf = vec![0x5au8; r.buffer_len()];
        assert_eq!(r.emit(&mut buf), Ok(XPASS_HEADER_LEN), "{r:?}");
        assert_eq!(XpassRepr::parse(&buf), Ok(r));
        buf
    }

    #[test]
    fn round_trip_of_each_kind_and_boundary_values() {
        for r in every_kind() {
            round_trip(r);
            for v in [0u64, 1, 1 << 32, u64::MAX - 1, u64::MAX] {
                round_trip(XpassRepr { ack: v, size: !v, ts_ps: v, ..r });
            }
            for v in [0u32, 1, u32::MAX] {
                round_trip(XpassRepr { conn: v, credit: !v, ..r });
            }
            for ecn in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
                round_trip(XpassRepr { ecn, prio: u8::MAX, ..r });
            }
        }
        round_trip(XpassRepr { seq: u64::MAX - 3, len: 3, ..data() });
        round_trip(XpassRepr { unscheduled: false, credit: 9, ..data() });
    }

    #[test]
    fn emit_matches_the_documented_layout() {
        #[rustfmt::skip]
        let want: [u8; XPASS_HEADER_LEN] = [
            0x58, 2, 0x01, 2, 1, 0, 0, 0, // ver, Data, UNSCHEDULED, ECT(0), prio 1, zero
            0, 0, 0, 7, // conn 7
            0, 0, 0, 0, // credit 0
            0, 0, 0, 3, // len 3
            0, 0, 1, 0, 0, 0, 0, 0, // seq 2^40
            0, 0, 0, 0, 0, 0, 0, 0, // ack 0
            0, 0, 2, 0, 0, 0, 0, 0, // size 2^41
            0, 0, 0, 0, 0, 0x01, 0xe2, 0x40, // ts 123456
        ];
        assert_eq!(round_trip(data())[..XPASS_HEADER_LEN], want);
    }

    #[test]
    fn refuses_what_it_could_not_read_back_without_panicking() {
        let untouched = [0x77u8; XPASS_HEADER_LEN + 8];
        let refused = |r: XpassRepr| {
            let mut buf = untouched;
            let e = r.emit(&mut buf).unwrap_err();
            assert_eq!(buf, untouched, "a refused emit writes nothing");
            e
        };
        for r in every_kind() {
            if r.kind != XpassKind::Data {
                assert_eq!(refused(XpassRepr { unscheduled: true, ..r }), WireError::Malformed("unscheduled"));
                assert_eq!(refused(XpassRepr { len: 1, ..r }), WireError::Malformed("len"));
            }
        }
        assert_eq!(refused(XpassRepr { seq: u64::MAX, len: 1, ..data() }), WireError::Malformed("seq + len overflows"));
        let mut short = [0u8; XPASS_HEADER_LEN - 1];
        assert_eq!(data().emit(&mut short), Err(WireError::Truncated { have: 51, need: XPASS_HEADER_LEN }));
        let buf = round_trip(data());
        assert_eq!(XpassRepr::parse(&buf[..buf.len() - 1]), Err(WireError::Truncated { have: 54, need: 55 }));
        let corrupt = |i: usize, v: u8| {
            let mut b = buf.clone();
            b[i] = v;
            XpassRepr::parse(&b)
        };
        assert_eq!(corrupt(0, crate::VERSION), Err(WireError::BadVersion(crate::VERSION)));
        assert_eq!(corrupt(0, crate::ATP_VERSION), Err(WireError::BadVersion(crate::ATP_VERSION)));
        assert_eq!(corrupt(6, 1), Err(WireError::Malformed("reserved")));
        assert_eq!(corrupt(1, 7), Err(WireError::Malformed("kind")));
        assert_eq!(corrupt(2, 0x02), Err(WireError::Malformed("flags")));
        assert_eq!(corrupt(3, 4), Err(WireError::Malformed("ecn")));
        assert_eq!(corrupt(1, XpassKind::Ack as u8), Err(WireError::Malformed("unscheduled")));
        // Every prefix and single-byte corruption of each kind parses or fails cleanly, and what
        // parses re-emits to the same header bytes.
        for r in every_kind() {
            let buf = round_trip(r);
            for n in 0..buf.len() {
                assert!(XpassRepr::parse(&buf[..n]).is_err());
                for v in [0u8, 1, 2, 5, 0x7f, 0x80, 0xff] {
                    let mut b = buf.clone();
                    b[n] = v;
                    if let Ok(p) = XpassRepr::parse(&b) {
                        let mut out = [0u8; XPASS_HEADER_LEN];
                        assert_eq!(p.emit(&mut out), Ok(XPASS_HEADER_LEN));
                        assert_eq!(out[..], b[..XPASS_HEADER_LEN]);
                    }
                }
            }
        }
    }
}
