//! Segments as datagrams: a protocol header (`wire`) followed by its payload bytes. The first
//! byte names the header (each header's version byte is distinct), so one socket carries every
//! protocol and a datagram is parsed by the header it names.
//!
//! INVARIANT: [`parse`] never panics and returns a payload of exactly the header's `len` bytes
//! (extra trailing bytes are refused: a datagram is one packet).

use proto::Segment;
use wire::{AtpRepr, MltRepr, WireError, ATP_HEADER_LEN, ATP_VERSION, MLT_HEADER_LEN, MLT_VERSION};

/// Write `seg` followed by `payload` into `buf` (cleared first). Refuses headers the wire
/// format refuses, a payload whose length is not the header's, and kinds the driver does not
/// carry yet.
pub fn emit(seg: &Segment, payload: &[u8], buf: &mut Vec<u8>) -> Result<(), WireError> {
    buf.clear();
    emit_append(seg, payload, buf).map(|_| ())
}

/// Append `seg` followed by `payload` to `buf`; returns the datagram's length. On a refusal
/// (as [`emit`]) `buf` is left as it was.
pub fn emit_append(seg: &Segment, payload: &[u8], buf: &mut Vec<u8>) -> Result<usize, WireError> {
    let at = buf.len();
    emit_header_append(seg, payload.len(), buf)?;
    buf.extend_from_slice(payload);
    Ok(buf.len() - at)
}

/// As [`emit_append`], the header only: its payload of `payload_len` bytes must follow it on
/// the wire (the caller sends it from where it is, without copying it here). Returns the
/// header's length.
pub fn emit_header_append(seg: &Segment, payload_len: usize, buf: &mut Vec<u8>) -> Result<usize, WireError> {
    let at = buf.len();
    let (header, len) = match seg {
        Segment::Mlt(h) => (MLT_HEADER_LEN, h.len),
        Segment::Atp(h) => (ATP_HEADER_LEN, h.len),
        _ => return Err(WireError::Malformed("a kind the UDP driver does not carry")),
    };
    if payload_len != len as usize {
        return Err(WireError::Malformed("payload length"));
    }
    buf.resize(at + header, 0);
    let r = match seg {
        Segment::Mlt(h) => h.emit(&mut buf[at..]),
        Segment::Atp(h) => h.emit(&mut buf[at..]),
        _ => unreachable!("refused above"),
    };
    if let Err(e) = r {
        buf.truncate(at);
        return Err(e);
    }
    Ok(header)
}

/// Parse a datagram into its segment and payload.
pub fn parse(bytes: &[u8]) -> Result<(Segment, &[u8]), WireError> {
    match bytes.first() {
        Some(&MLT_VERSION) => {
            let h = MltRepr::parse(bytes)?;
            let end = MLT_HEADER_LEN + h.len as usize;
            if bytes.len() != end {
                return Err(WireError::Malformed("trailing bytes"));
            }
            Ok((Segment::Mlt(h), &bytes[MLT_HEADER_LEN..end]))
        }
        Some(&ATP_VERSION) => {
            let h = AtpRepr::parse(bytes)?;
            let end = ATP_HEADER_LEN + h.len as usize;
            if bytes.len() != end {
                return Err(WireError::Malformed("trailing bytes"));
            }
            Ok((Segment::Atp(h), &bytes[ATP_HEADER_LEN..end]))
        }
        Some(&v) => Err(WireError::BadVersion(v)),
        None => Err(WireError::Truncated { have: 0, need: 1 }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let h = MltRepr { conn: 3, start: 2, end: 4, total: 10, value_bytes: 4, len: 8, need: 9, ..Default::default() };
        let mut buf = Vec::new();
        emit(&Segment::Mlt(h), &[1, 2, 3, 4, 5, 6, 7, 8], &mut buf).unwrap();
        assert_eq!(buf.len(), MLT_HEADER_LEN + 8);
        let (seg, payload) = parse(&buf).unwrap();
        assert_eq!(seg, Segment::Mlt(h));
        assert_eq!(payload, &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(emit(&Segment::Mlt(h), &[1, 2], &mut Vec::new()).is_err());
        let mut long = buf.clone();
        long.push(0);
        assert!(parse(&long).is_err());
        let short = &buf[..buf.len() - 1];
        assert!(parse(short).is_err());
        assert!(parse(&[]).is_err());
        assert!(parse(&[0x99, 1, 2]).is_err());
        // Appending: two datagrams back to back, a refusal leaves the buffer alone.
        let mut two = vec![7u8];
        assert_eq!(emit_append(&Segment::Mlt(h), &[0; 8], &mut two), Ok(MLT_HEADER_LEN + 8));
        assert_eq!(emit_append(&Segment::Mlt(h), &[1; 8], &mut two), Ok(MLT_HEADER_LEN + 8));
        assert_eq!(two.len(), 1 + 2 * (MLT_HEADER_LEN + 8));
        assert!(emit_append(&Segment::Mlt(h), &[1; 3], &mut two).is_err());
        assert_eq!(two.len(), 1 + 2 * (MLT_HEADER_LEN + 8));
        assert_eq!(parse(&two[1 + MLT_HEADER_LEN + 8..]).unwrap().1, &[1; 8]);
        // ATP too.
        let a = AtpRepr { conn: 2, msg: 5, pkt: 1, pkts: 3, len: 4, ..Default::default() };
        emit(&Segment::Atp(a), &[9, 8, 7, 6], &mut buf).unwrap();
        assert_eq!(parse(&buf).unwrap(), (Segment::Atp(a), &[9u8, 8, 7, 6][..]));
    }

    #[test]
    fn the_fuzz_seeds_are_datagrams() {
        // fuzz/corpus/udp_datagram/ starts the fuzzer from packets that parse (each kind).
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/udp_datagram");
        for name in ["mlt_data", "mlt_ack", "atp_data", "atp_fin"] {
            let bytes = std::fs::read(dir.join(name)).unwrap();
            assert!(parse(&bytes).is_ok(), "{name}: {:?}", parse(&bytes));
        }
    }
}
