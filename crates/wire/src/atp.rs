//! The header of ATP, NetApprox's approximate transport (`proto::atp`): data packets of a
//! job's messages, per-packet acknowledgements, and the sender's end-of-job notice.
//!
//! One header serves the three kinds ([`AtpKind`]); fields a kind does not use are zero.
//! - `Data`: packet `pkt` of `pkts` of message `msg` (group `group`) of job `conn`, `len`
//!   payload bytes; `seq` numbers the transmission (every packet handed out, retransmissions
//!   included, gets the next `seq`), `epoch` is the sender's epoch when it left, `ts_ps` its
//!   send time.
//! - `Ack`: acknowledges the data packet with the same `seq`, echoing its `msg`, `pkt`,
//!   `pkts`, `group`, `epoch` and `ts_ps`; [`AtpRepr::ece`] says the data arrived CE-marked.
//! - `Fin`: the job is over at the sender; `seq` is the number of messages of the job (the
//!   receiver reports every message below it that it does not have as lost).
//!
//! Byte layout (network byte order), [`ATP_HEADER_LEN`] = 48 bytes, then `len` payload bytes:
//!
//! ```text
//!  0     1     2     3     4     5     6          8          12               20         24         28         32         36         40               48
//!  +-----+-----+-----+-----+-----+-----+----------+----------+----------------+----------+----------+----------+----------+----------+----------------+
//!  | ver |kind |flags| ecn |prio | 0   |group u16 | conn u32 |    seq u64     | msg u32  | pkt u32  | pkts u32 |epoch u32 | len u32  |  ts_ps u64     |
//!  +-----+-----+-----+-----+-----+-----+----------+----------+----------------+----------+----------+----------+----------+----------+----------------+
//! ```
//!
//! `ver` is [`ATP_VERSION`], distinct from the other headers' first byte. `flags` has one
//! defined bit, ECE (0x08, as in [`Flags::ECE`]), valid on `Ack` only.
//!
//! INVARIANT: `parse(emit(r)) == r` (the emitted header followed by `r.len` payload bytes) for
//! every `r` that `emit` accepts, and `emit` refuses every `r` that `parse` could not return.
//! `parse` refuses: a byte 5 other than 0, an unknown kind, flag bits other than ECE or ECE on
//! a kind other than `Ack`, payload on a kind other than `Data`, `pkts == 0` or `pkt >= pkts`
//! on `Data` and `Ack`. `parse` never panics on any input (fuzzed: `fuzz/` target `wire_atp`).

use crate::{Ecn, Flags, WireError};

/// Length of the ATP header in bytes.
pub const ATP_HEADER_LEN: usize = 48;
/// First byte of an ATP header.
pub const ATP_VERSION: u8 = 0x41;

/// What an ATP packet is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AtpKind {
    /// A packet of a message.
    #[default]
    Data = 0,
    /// The acknowledgement of one data packet.
    Ack = 1,
    /// The sender's end-of-job notice.
    Fin = 2,
}

/// A parsed ATP header (module docs for what each field means per kind). Payload is
/// abstract: `len` bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AtpRepr {
    /// Data, Ack or Fin.
    pub kind: AtpKind,
    /// Job (connection) id: the transfer id in the simulator.
    pub conn: u32,
    /// Data: transmission number; Ack: the one acknowledged; Fin: messages in the job.
    pub seq: u64,
    /// Message id within the job (ids count from 0).
    pub msg: u32,
    /// Packet index within the message.
    pub pkt: u32,
    /// Packets in the message (at least 1 on Data and Ack).
    pub pkts: u32,
    /// The message's group.
    pub group: u16,
    /// The sender's epoch when the data packet left.
    pub epoch: u32,
    /// Payload bytes (Data only; 0 otherwise).
    pub len: u32,
    /// Ack: the data packet arrived CE-marked.
    pub ece: bool,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Priority class (0 = highest).
    pub prio: u8,
    /// Data: send time in picoseconds; Ack: the data packet's, echoed.
    pub ts_ps: u64,
}

impl AtpRepr {
    /// Bytes needed to emit this packet with its payload.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        ATP_HEADER_LEN + self.len as usize
    }

    /// The rules on fields that `parse` and `emit` share, checked in this order: ECE on a kind
    /// other than `Ack` (`"ece"`), payload on a kind other than `Data` (`"len"`), and on `Data`
    /// and `Ack` `pkts == 0` (`"pkts"`) or `pkt >= pkts` (`"pkt"`).
    fn check_fields(&self) -> Result<(), WireError> {
        if self.ece && self.kind != AtpKind::Ack {
            return Err(WireError::Malformed("ece"));
        }
        if self.len != 0 && self.kind != AtpKind::Data {
            return Err(WireError::Malformed("len"));
        }
        if self.kind != AtpKind::Fin {
            if self.pkts == 0 {
                return Err(WireError::Malformed("pkts"));
            }
            if self.pkt >= self.pkts {
                return Err(WireError::Malformed("pkt"));
            }
        }
        Ok(())
    }

    /// Parse a header from `buf`; the payload is `buf[ATP_HEADER_LEN..][..len]`. Refuses, in this
    /// order: a `buf` shorter than the header ([`WireError::Truncated`]), a first byte other than
    /// [`ATP_VERSION`] ([`WireError::BadVersion`]), a header breaking a rule of the module docs
    /// ([`WireError::Malformed`] naming the field: `"reserved"` for byte 5, `"kind"`, `"flags"`,
    /// `"ecn"`, `"ece"`, `"len"`, `"pkts"`, `"pkt"`), and a valid header whose payload `buf` does
    /// not hold in full ([`WireError::Truncated`]).
    pub fn parse(buf: &[u8]) -> Result<AtpRepr, WireError> {
        if buf.len() < ATP_HEADER_LEN {
            return Err(WireError::Truncated { have: buf.len(), need: ATP_HEADER_LEN });
        }
        if buf[0] != ATP_VERSION {
            return Err(WireError::BadVersion(buf[0]));
        }
        if buf[5] != 0 {
            return Err(WireError::Malformed("reserved"));
        }
        let kind = match buf[1] {
            0 => AtpKind::Data,
            1 => AtpKind::Ack,
            2 => AtpKind::Fin,
            _ => return Err(WireError::Malformed("kind")),
        };
        if buf[2] & !Flags::ECE.0 != 0 {
            return Err(WireError::Malformed("flags"));
        }
        let ecn = Ecn::from_u8(buf[3])?;
        let mut w4 = [0u8; 4];
        let mut w8 = [0u8; 8];
        let mut u32_at = |i: usize| {
            w4.copy_from_slice(&buf[i..i + 4]);
            u32::from_be_bytes(w4)
        };
        let (conn, msg, pkt, pkts) = (u32_at(8), u32_at(20), u32_at(24), u32_at(28));
        let (epoch, len) = (u32_at(32), u32_at(36));
        let mut u64_at = |i: usize| {
            w8.copy_from_slice(&buf[i..i + 8]);
            u64::from_be_bytes(w8)
        };
        let repr = AtpRepr {
            kind,
            conn,
            seq: u64_at(12),
            msg,
            pkt,
            pkts,
            group: u16::from_be_bytes([buf[6], buf[7]]),
            epoch,
            len,
            ece: buf[2] == Flags::ECE.0,
            ecn,
            prio: buf[4],
            ts_ps: u64_at(40),
        };
        repr.check_fields()?;
        let need = ATP_HEADER_LEN.saturating_add(repr.len as usize);
        if buf.len() < need {
            return Err(WireError::Truncated { have: buf.len(), need });
        }
        Ok(repr)
    }

    /// Write the header into `buf[..ATP_HEADER_LEN]` and return its length; the caller copies
    /// the payload after it. Refuses, writing nothing, what [`AtpRepr::parse`] would not read
    /// back: [`WireError::Truncated`] if `buf` is shorter than the header, then
    /// [`WireError::Malformed`] naming the first field that breaks a rule of the module docs
    /// (`"ece"`, `"len"`, `"pkts"`, `"pkt"`, in that order).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if buf.len() < ATP_HEADER_LEN {
            return Err(WireError::Truncated { have: buf.len(), need: ATP_HEADER_LEN });
        }
        self.check_fields()?;
        buf[0] = ATP_VERSION;
        buf[1] = self.kind as u8;
        buf[2] = if self.ece { Flags::ECE.0 } else { 0 };
        buf[3] = self.ecn as u8;
        buf[4] = self.prio;
        buf[5] = 0;
        buf[6..8].copy_from_slice(&self.group.to_be_bytes());
        buf[8..12].copy_from_slice(&self.conn.to_be_bytes());
        buf[12..20].copy_from_slice(&self.seq.to_be_bytes());
        buf[20..24].copy_from_slice(&self.msg.to_be_bytes());
        buf[24..28].copy_from_slice(&self.pkt.to_be_bytes());
        buf[28..32].copy_from_slice(&self.pkts.to_be_bytes());
        buf[32..36].copy_from_slice(&self.epoch.to_be_bytes());
        buf[36..40].copy_from_slice(&self.len.to_be_bytes());
        buf[40..48].copy_from_slice(&self.ts_ps.to_be_bytes());
        Ok(ATP_HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> AtpRepr {
        AtpRepr {
            kind: AtpKind::Data,
            conn: 7,
            seq: 1 << 40,
            msg: 12,
            pkt: 3,
            pkts: 5,
            group: 2,
            epoch: 9,
            len: 3,
            ece: false,
            ecn: Ecn::Ect0,
            prio: 2,
            ts_ps: 123_456,
        }
    }

    fn ack() -> AtpRepr {
        AtpRepr { kind: AtpKind::Ack, len: 0, ece: true, ecn: Ecn::NotEct, ..data() }
    }

    fn fin() -> AtpRepr {
        AtpRepr { kind: AtpKind::Fin, seq: 40, msg: 0, pkt: 0, pkts: 0, group: 0, epoch: 0, len: 0, ..data() }
    }

    /// `r` emitted with a payload of 0x5a bytes, then parsed back.
    fn round_trip(r: AtpRepr) -> Vec<u8> {
        let mut buf = vec![0x5au8; r.buffer_len()];
        assert_eq!(r.emit(&mut buf), Ok(ATP_HEADER_LEN), "{r:?}");
        assert_eq!(AtpRepr::parse(&buf), Ok(r));
        buf
    }

    #[test]
    fn round_trip_of_each_kind() {
        for r in [data(), ack(), AtpRepr { ece: false, ..ack() }, fin()] {
            round_trip(r);
        }
    }

    // The byte layout of the module docs, field by field.
    #[test]
    fn emit_matches_the_documented_layout() {
        #[rustfmt::skip]
        let want: [u8; ATP_HEADER_LEN] = [
            0x41, 1, 0x08, 2, 2, 0, // ver, Ack, ECE, ECT(0), prio 2, zero
            0, 2, // group 2
            0, 0, 0, 7, // conn 7
            0, 0, 1, 0, 0, 0, 0, 0, // seq 2^40
            0, 0, 0, 12, // msg 12
            0, 0, 0, 3, // pkt 3
            0, 0, 0, 5, // pkts 5
            0, 0, 0, 9, // epoch 9
            0, 0, 0, 0, // len 0
            0, 0, 0, 0, 0, 0x01, 0xe2, 0x40, // ts 123456
        ];
        let r = AtpRepr { ecn: Ecn::Ect0, ..ack() };
        assert_eq!(round_trip(r), want);
    }

    #[test]
    fn emit_refuses_what_parse_would_not_read_back() {
        let untouched = [0x77u8; ATP_HEADER_LEN + 8];
        let refused = |r: AtpRepr, n: usize| {
            let mut buf = untouched;
            let e = r.emit(&mut buf[..n]).unwrap_err();
            assert_eq!(buf, untouched, "a refused emit writes nothing");
            e
        };
        let full = untouched.len();
        let short = ATP_HEADER_LEN - 1;
        assert_eq!(refused(data(), short), WireError::Truncated { have: short, need: ATP_HEADER_LEN });
        assert_eq!(refused(fin(), 0), WireError::Truncated { have: 0, need: ATP_HEADER_LEN });
        for kind in [AtpKind::Data, AtpKind::Fin] {
            assert_eq!(refused(AtpRepr { kind, ece: true, ..ack() }, full), WireError::Malformed("ece"));
        }
        assert_eq!(refused(AtpRepr { len: 1, ..ack() }, full), WireError::Malformed("len"));
        assert_eq!(refused(AtpRepr { len: u32::MAX, ..fin() }, full), WireError::Malformed("len"));
        for r in [data(), ack()] {
            assert_eq!(refused(AtpRepr { pkt: 0, pkts: 0, ..r }, full), WireError::Malformed("pkts"));
            assert_eq!(refused(AtpRepr { pkt: 5, pkts: 5, ..r }, full), WireError::Malformed("pkt"));
            assert_eq!(refused(AtpRepr { pkt: u32::MAX, pkts: 1, ..r }, full), WireError::Malformed("pkt"));
        }
        // The first rule broken is the one named.
        let everything = AtpRepr { kind: AtpKind::Fin, ece: true, len: 1, ..data() };
        assert_eq!(refused(everything, full), WireError::Malformed("ece"));
        assert_eq!(refused(everything, short), WireError::Truncated { have: short, need: ATP_HEADER_LEN });
        // Just inside every rule is emitted and read back. `seq + len` may pass `u64::MAX`:
        // `seq` counts transmissions, it is not a byte offset.
        round_trip(AtpRepr { pkt: 4, pkts: 5, ..data() });
        round_trip(AtpRepr { pkt: u32::MAX - 1, pkts: u32::MAX, ..ack() });
        round_trip(AtpRepr { pkt: u32::MAX, pkts: 0, ..fin() });
        let last = AtpRepr { seq: u64::MAX, len: 8, ..data() };
        let mut buf = untouched;
        assert_eq!(last.emit(&mut buf), Ok(ATP_HEADER_LEN));
        assert_eq!(AtpRepr::parse(&buf), Ok(last));
    }

    #[test]
    fn rejects_bad_input_without_panicking() {
        let buf = round_trip(data());
        assert_eq!(AtpRepr::parse(&buf[..buf.len() - 1]), Err(WireError::Truncated { have: 50, need: 51 }));
        assert_eq!(AtpRepr::parse(&buf[..10]), Err(WireError::Truncated { have: 10, need: ATP_HEADER_LEN }));
        let corrupt = |i: usize, v: u8| {
            let mut b = buf.clone();
            b[i] = v;
            AtpRepr::parse(&b)
        };
        assert_eq!(corrupt(0, crate::DATAGRAM_VERSION), Err(WireError::BadVersion(crate::DATAGRAM_VERSION)));
        assert_eq!(corrupt(0, crate::VERSION), Err(WireError::BadVersion(crate::VERSION)));
        assert_eq!(corrupt(5, 1), Err(WireError::Malformed("reserved")));
        assert_eq!(corrupt(1, 3), Err(WireError::Malformed("kind")));
        assert_eq!(corrupt(2, Flags::FIN.0), Err(WireError::Malformed("flags")));
        assert_eq!(corrupt(2, 0x80 | Flags::ECE.0), Err(WireError::Malformed("flags")));
        assert_eq!(corrupt(2, Flags::ECE.0), Err(WireError::Malformed("ece")));
        assert_eq!(corrupt(3, 4), Err(WireError::Malformed("ecn")));
        assert_eq!(corrupt(1, AtpKind::Ack as u8), Err(WireError::Malformed("len")));
        assert_eq!(corrupt(31, 0), Err(WireError::Malformed("pkts")));
        assert_eq!(corrupt(27, 5), Err(WireError::Malformed("pkt")));
        // A huge `len` asks for the whole payload, without overflow.
        let mut huge = buf.clone();
        huge[36..40].copy_from_slice(&u32::MAX.to_be_bytes());
        let need = ATP_HEADER_LEN + u32::MAX as usize;
        assert_eq!(AtpRepr::parse(&huge), Err(WireError::Truncated { have: buf.len(), need }));
        // Every prefix and every single-byte corruption of each kind parses or fails cleanly,
        // and what parses re-emits to the same header bytes.
        for r in [data(), ack(), fin()] {
            let buf = round_trip(r);
            for n in 0..buf.len() {
                assert!(AtpRepr::parse(&buf[..n]).is_err());
                for v in [0u8, 1, 2, 3, 0x08, 0x7f, 0x80, 0xff] {
                    let mut b = buf.clone();
                    b[n] = v;
                    if let Ok(p) = AtpRepr::parse(&b) {
                        let mut out = [0u8; ATP_HEADER_LEN];
                        assert_eq!(p.emit(&mut out), Ok(ATP_HEADER_LEN));
                        assert_eq!(out[..], b[..ATP_HEADER_LEN]);
                        assert!(b.len() >= p.buffer_len());
                    }
                }
            }
        }
    }

    #[test]
    fn boundary_values_of_every_field_round_trip() {
        const U32S: [u32; 5] = [0, 1, 0xffff, u32::MAX - 1, u32::MAX];
        const U64S: [u64; 5] = [0, 1, 1 << 32, u64::MAX - 1, u64::MAX];
        for r in [data(), ack(), fin()] {
            for v in U64S {
                round_trip(AtpRepr { seq: v, ts_ps: !v, ..r });
            }
            for v in U32S {
                round_trip(AtpRepr { conn: v, msg: !v, epoch: v, ..r });
            }
            for group in [0, 1, u16::MAX] {
                round_trip(AtpRepr { group, ..r });
            }
            for prio in [0, 1, u8::MAX] {
                for ecn in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
                    round_trip(AtpRepr { prio, ecn, ..r });
                }
            }
            for pkts in [1, 2, u32::MAX] {
                for pkt in [0, pkts / 2, pkts - 1] {
                    round_trip(AtpRepr { pkt, pkts, ..r });
                }
            }
        }
        for (pkt, pkts) in [(0, 0), (u32::MAX, 0), (u32::MAX, u32::MAX), (7, 3)] {
            round_trip(AtpRepr { pkt, pkts, ..fin() });
        }
        for len in [0, 1, 1 << 16] {
            round_trip(AtpRepr { len, ..data() });
        }
        // The header alone of the largest payload: parse asks for all of it.
        let max = AtpRepr { len: u32::MAX, ..data() };
        let mut header = [0u8; ATP_HEADER_LEN];
        assert_eq!(max.emit(&mut header), Ok(ATP_HEADER_LEN));
        assert_eq!(AtpRepr::parse(&header), Err(WireError::Truncated { have: ATP_HEADER_LEN, need: max.buffer_len() }));
    }
}
