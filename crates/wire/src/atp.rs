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
//! defined bit, ECE (0x08, as in [`crate::Flags::ECE`]), valid on `Ack` only.
//!
//! INVARIANT: `parse(emit(r)) == r` (the emitted header followed by `r.len` payload bytes) for
//! every `r` that `emit` accepts, and `emit` refuses every `r` that `parse` could not return.
//! `parse` refuses: a byte 5 other than 0, an unknown kind, flag bits other than ECE or ECE on
//! a kind other than `Ack`, payload on a kind other than `Data`, `pkts == 0` or `pkt >= pkts`
//! on `Data` and `Ack`. `parse` never panics on any input (fuzzed: `fuzz/` target `wire_atp`).

use crate::{Ecn, WireError};

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

    /// Parse a header from `buf`; the payload is `buf[ATP_HEADER_LEN..][..len]`.
    pub fn parse(buf: &[u8]) -> Result<AtpRepr, WireError> {
        let _ = buf;
        Err(WireError::Malformed("ATP parse not written yet"))
    }

    /// Write the header into `buf[..ATP_HEADER_LEN]` and return its length; the caller copies
    /// the payload after it. Refuses, writing nothing, what [`AtpRepr::parse`] would not read
    /// back.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let _ = buf;
        Err(WireError::Malformed("ATP emit not written yet"))
    }
}
