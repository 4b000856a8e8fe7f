//! The committed ATP seeds are what `emit` writes: `fuzz/corpus/wire_atp/<name>` is a valid
//! packet (header and 0x5a payload bytes, as the `wire_datagram` seeds), and
//! `fuzz/corpus/wire_roundtrip/atp_<name>` the `wire_roundtrip` input building the same header
//! (after the segment and datagram fields of the seed `plain`). Regenerate them, on purpose,
//! with `SLACKNET_UPDATE_CORPUS=1 cargo test -p slacknet-fuzz-targets --test atp_seeds`.

use std::path::{Path, PathBuf};

use wire::{AtpKind, AtpRepr, Ecn, ATP_HEADER_LEN};

/// The seed `plain` of `wire_roundtrip`: a buffer length of 64 and a valid segment and datagram.
const ROUNDTRIP_PREFIX: &[u8; 71] = include_bytes!("../../../fuzz/corpus/wire_roundtrip/plain");

fn seeds() -> Vec<(&'static str, AtpRepr)> {
    let data = AtpRepr {
        kind: AtpKind::Data,
        conn: 7,
        seq: 40,
        msg: 3,
        pkt: 1,
        pkts: 4,
        group: 2,
        epoch: 1,
        len: 16,
        ece: false,
        ecn: Ecn::Ect0,
        prio: 1,
        ts_ps: 1_000_000,
    };
    let ack_ece = AtpRepr { kind: AtpKind::Ack, len: 0, ece: true, ecn: Ecn::NotEct, ..data };
    let fin = AtpRepr { kind: AtpKind::Fin, seq: 12, msg: 0, pkt: 0, pkts: 0, group: 0, epoch: 3, len: 0, ..data };
    let max_fields = AtpRepr {
        kind: AtpKind::Data,
        conn: u32::MAX,
        seq: u64::MAX,
        msg: u32::MAX,
        pkt: u32::MAX - 1,
        pkts: u32::MAX,
        group: u16::MAX,
        epoch: u32::MAX,
        len: 8,
        ece: false,
        ecn: Ecn::Ce,
        prio: u8::MAX,
        ts_ps: u64::MAX,
    };
    vec![("data", data), ("ack_ece", ack_ece), ("fin", fin), ("max_fields", max_fields)]
}

/// The packet: header, then `len` bytes of 0x5a.
fn packet(r: &AtpRepr) -> Vec<u8> {
    let mut buf = vec![0x5a; r.buffer_len()];
    assert_eq!(r.emit(&mut buf), Ok(ATP_HEADER_LEN), "{r:?}");
    assert_eq!(AtpRepr::parse(&buf), Ok(*r));
    buf
}

/// The `wire_roundtrip` input: `plain`'s bytes, then the ATP fields in the order it reads them.
fn roundtrip_input(r: &AtpRepr) -> Vec<u8> {
    let mut v = ROUNDTRIP_PREFIX.to_vec();
    v.extend([r.kind as u8, r.ece as u8]);
    v.extend(r.conn.to_be_bytes());
    v.extend(r.seq.to_be_bytes());
    for x in [r.msg, r.pkt, r.pkts] {
        v.extend(x.to_be_bytes());
    }
    v.extend(r.group.to_be_bytes());
    v.extend(r.epoch.to_be_bytes());
    v.extend(r.len.to_be_bytes());
    v.extend([r.ecn as u8, r.prio]);
    v.extend(r.ts_ps.to_be_bytes());
    v
}

fn corpus(target: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target).join(name)
}

#[test]
fn atp_seeds_are_emitted_packets() {
    let update = std::env::var_os("SLACKNET_UPDATE_CORPUS").is_some();
    let mut files = Vec::new();
    for (name, r) in seeds() {
        files.push((corpus("wire_atp", name), packet(&r)));
        files.push((corpus("wire_roundtrip", &format!("atp_{name}")), roundtrip_input(&r)));
    }
    for (path, want) in files {
        if update {
            std::fs::write(&path, &want).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            continue;
        }
        let got = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (generate with SLACKNET_UPDATE_CORPUS=1)", path.display()));
        assert_eq!(got, want, "{} is not what emit writes", path.display());
    }
}
