//! Zero-copy views of the headers the real transport carries (smoltcp's `Packet<T>`
//! pattern): a view wraps a datagram's bytes, reads each field in place and hands out the
//! payload as a slice of the same buffer, so the driver copies a packet's values once, from the
//! socket's buffer to the application's. [`MltPacket`] (the bounded-loss transport) and
//! [`AtpPacket`] (ATP).
//!
//! INVARIANT: `new_checked` accepts exactly what the header's `*Repr::parse` accepts (it calls
//! it) with the payload wholly inside the buffer, so every accessor reads in bounds and agrees
//! with the parsed struct; `new_unchecked` makes no promise (accessors may then panic on a
//! short buffer), for buffers the caller has checked.

use crate::{AtpKind, AtpRepr, Ecn, Flags, MltRepr, WireError, ATP_HEADER_LEN, MLT_HEADER_LEN};

fn be_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(w)
}

/// A bounded-loss transport packet in place (module docs; layout in `wire::mlt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MltPacket<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> MltPacket<T> {
    /// A view without checks (module docs).
    pub const fn new_unchecked(buffer: T) -> MltPacket<T> {
        MltPacket { buffer }
    }

    /// A view of a valid packet: what [`MltRepr::parse`] accepts.
    pub fn new_checked(buffer: T) -> Result<MltPacket<T>, WireError> {
        MltRepr::parse(buffer.as_ref())?;
        Ok(MltPacket { buffer })
    }

    /// The bytes.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Flags (ACK, ECE, FIN).
    pub fn flags(&self) -> Flags {
        Flags(self.b()[1])
    }

    /// Whether it is an acknowledgement.
    pub fn is_ack(&self) -> bool {
        self.flags().contains(Flags::ACK)
    }

    /// ECN codepoint of the header (the network's mark is in the IP header).
    pub fn ecn(&self) -> Ecn {
        Ecn::from_u8(self.b()[2]).unwrap_or(Ecn::NotEct)
    }

    /// Priority class.
    pub fn prio(&self) -> u8 {
        self.b()[3]
    }

    /// Bytes per value.
    pub fn value_bytes(&self) -> u8 {
        self.b()[4]
    }

    /// Connection id.
    pub fn conn(&self) -> u32 {
        be_u32(self.b(), 8)
    }

    /// Message id.
    pub fn msg(&self) -> u32 {
        be_u32(self.b(), 12)
    }

    /// Transmission number.
    pub fn seq(&self) -> u64 {
        be_u64(self.b(), 16)
    }

    /// First value index carried or acknowledged.
    pub fn start(&self) -> u32 {
        be_u32(self.b(), 24)
    }

    /// One past the last value index.
    pub fn end(&self) -> u32 {
        be_u32(self.b(), 28)
    }

    /// Values in the message.
    pub fn total(&self) -> u32 {
        be_u32(self.b(), 32)
    }

    /// ACK: the cumulative point, in places of the sender's order (0 on data).
    pub fn cum(&self) -> u32 {
        if self.is_ack() {
            be_u32(self.b(), 36)
        } else {
            0
        }
    }

    /// Data: the packet's place in the sender's order of first transmissions (0 on an ACK).
    pub fn pos(&self) -> u32 {
        if self.is_ack() {
            0
        } else {
            be_u32(self.b(), 36)
        }
    }

    /// ACK: values the receiver holds (0 on data).
    pub fn received(&self) -> u32 {
        if self.is_ack() {
            be_u32(self.b(), 40)
        } else {
            0
        }
    }

    /// Data: the values the receiver waits for (0 on an ACK).
    pub fn need(&self) -> u32 {
        if self.is_ack() {
            0
        } else {
            be_u32(self.b(), 40)
        }
    }

    /// Payload length.
    pub fn len(&self) -> u32 {
        be_u32(self.b(), 44)
    }

    /// Whether it carries no payload.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The payload: the values `[start, end)`.
    pub fn payload(&self) -> &[u8] {
        &self.b()[MLT_HEADER_LEN..MLT_HEADER_LEN + self.len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> MltPacket<T> {
    /// The payload, to write in place.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = self.len() as usize;
        &mut self.buffer.as_mut()[MLT_HEADER_LEN..MLT_HEADER_LEN + len]
    }
}

/// An ATP packet in place (module docs; layout in `wire::atp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtpPacket<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> AtpPacket<T> {
    /// A view without checks (module docs).
    pub const fn new_unchecked(buffer: T) -> AtpPacket<T> {
        AtpPacket { buffer }
    }

    /// A view of a valid packet: what [`AtpRepr::parse`] accepts.
    pub fn new_checked(buffer: T) -> Result<AtpPacket<T>, WireError> {
        AtpRepr::parse(buffer.as_ref())?;
        Ok(AtpPacket { buffer })
    }

    /// The bytes.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Data, Ack or Fin.
    pub fn kind(&self) -> AtpKind {
        match self.b()[1] {
            1 => AtpKind::Ack,
            2 => AtpKind::Fin,
            _ => AtpKind::Data,
        }
    }

    /// An ACK of CE-marked data.
    pub fn ece(&self) -> bool {
        self.b()[2] & Flags::ECE.0 != 0
    }

    /// ECN codepoint of the header.
    pub fn ecn(&self) -> Ecn {
        Ecn::from_u8(self.b()[3]).unwrap_or(Ecn::NotEct)
    }

    /// Priority class.
    pub fn prio(&self) -> u8 {
        self.b()[4]
    }

    /// Group.
    pub fn group(&self) -> u16 {
        be_u16(self.b(), 6)
    }

    /// Job (connection) id.
    pub fn conn(&self) -> u32 {
        be_u32(self.b(), 8)
    }

    /// Transmission number (Fin: messages in the job).
    pub fn seq(&self) -> u64 {
        be_u64(self.b(), 12)
    }

    /// Message id.
    pub fn msg(&self) -> u32 {
        be_u32(self.b(), 20)
    }

    /// Packet index within the message.
    pub fn pkt(&self) -> u32 {
        be_u32(self.b(), 24)
    }

    /// Packets in the message.
    pub fn pkts(&self) -> u32 {
        be_u32(self.b(), 28)
    }

    /// The sender's epoch.
    pub fn epoch(&self) -> u32 {
        be_u32(self.b(), 32)
    }

    /// Payload length.
    pub fn len(&self) -> u32 {
        be_u32(self.b(), 36)
    }

    /// Whether it carries no payload.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Send time, picoseconds.
    pub fn ts_ps(&self) -> u64 {
        be_u64(self.b(), 40)
    }

    /// The payload.
    pub fn payload(&self) -> &[u8] {
        &self.b()[ATP_HEADER_LEN..ATP_HEADER_LEN + self.len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AtpPacket<T> {
    /// The payload, to write in place.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = self.len() as usize;
        &mut self.buffer.as_mut()[ATP_HEADER_LEN..ATP_HEADER_LEN + len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mlt_view_reads_what_parse_reads() {
        for r in [
            MltRepr { conn: 7, msg: 2, seq: 99, start: 10, end: 13, total: 100, need: 90, pos: 4, value_bytes: 4, len: 12, ecn: Ecn::Ect0, prio: 1, ..Default::default() },
            MltRepr { conn: 7, seq: 99, start: 10, end: 13, total: 100, cum: 13, received: 50, value_bytes: 4, flags: Flags::ACK.with(Flags::FIN), ..Default::default() },
        ] {
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut buf).unwrap();
            buf[MLT_HEADER_LEN..].iter_mut().enumerate().for_each(|(i, b)| *b = i as u8 + 1);
            let mut v = MltPacket::new_checked(&mut buf[..]).unwrap();
            let got = MltRepr {
                conn: v.conn(), msg: v.msg(), seq: v.seq(), start: v.start(), end: v.end(), total: v.total(),
                cum: v.cum(), pos: v.pos(), received: v.received(), need: v.need(), value_bytes: v.value_bytes(), len: v.len(),
                flags: v.flags(), ecn: v.ecn(), prio: v.prio(),
            };
            assert_eq!(got, r);
            assert_eq!(v.payload().len(), r.len as usize);
            if !v.is_empty() {
                v.payload_mut()[0] = 0xee;
                assert_eq!(v.payload()[0], 0xee);
            }
        }
        assert!(MltPacket::new_checked(&[0u8; 10][..]).is_err());
    }

    #[test]
    fn an_atp_view_reads_what_parse_reads() {
        let r = AtpRepr { kind: AtpKind::Data, conn: 3, seq: 77, msg: 5, pkt: 1, pkts: 4, group: 2, epoch: 9, len: 6, ecn: Ecn::Ect0, prio: 3, ts_ps: 12345, ..Default::default() };
        let mut buf = vec![0u8; r.buffer_len()];
        r.emit(&mut buf).unwrap();
        let v = AtpPacket::new_checked(&buf[..]).unwrap();
        let got = AtpRepr {
            kind: v.kind(), conn: v.conn(), seq: v.seq(), msg: v.msg(), pkt: v.pkt(), pkts: v.pkts(), group: v.group(),
            epoch: v.epoch(), len: v.len(), ece: v.ece(), ecn: v.ecn(), prio: v.prio(), ts_ps: v.ts_ps(),
        };
        assert_eq!(got, r);
        assert_eq!(v.payload().len(), 6);
        assert!(AtpPacket::new_checked(&buf[..buf.len() - 1]).is_err());
    }
}
