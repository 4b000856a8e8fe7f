//! The wire round trip over boundary values, deterministically: `parse(emit(r)) == r` for
//! every header `emit` accepts, and `emit` refuses the rest (the property the `wire_roundtrip`
//! fuzz target checks on random values, through the same functions). The fields that decide
//! acceptance (flags, `seq`, `len`, the buffer's length; for ATP the kind, `ece`, `len`, `pkt`,
//! `pkts` and the buffer's length) are crossed with each other; the others take their extremes
//! one at a time.

use fuzz_targets::{check_atp_roundtrip, check_datagram_roundtrip, check_segment_roundtrip};
use wire::{AtpKind, AtpRepr, DatagramRepr, Ecn, Flags, SegmentRepr, ATP_HEADER_LEN, DATAGRAM_HEADER_LEN, HEADER_LEN};

const U32S: [u32; 7] = [0, 1, 0xffff, 0x1_0000, 0x1_0001, u32::MAX - 1, u32::MAX];
const U64S: [u64; 8] = [
    0,
    1,
    1 << 32,
    u64::MAX - u32::MAX as u64 - 1,
    u64::MAX - u32::MAX as u64,
    u64::MAX - 0x1_0000,
    u64::MAX - 1,
    u64::MAX,
];
const ECNS: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];

/// Flag bytes worth crossing: none, each bit alone, all defined bits, and undefined ones.
fn flag_values() -> Vec<Flags> {
    let mut f: Vec<Flags> = (0..8).map(|b| Flags(1 << b)).collect();
    f.extend([Flags::NONE, Flags::ALL, Flags(0xff), Flags::FIN.with(Flags::ACK)]);
    f
}

#[test]
fn segment_round_trips_or_is_refused_at_every_boundary() {
    let base = SegmentRepr { conn: 7, seq: 1500, ack: 3000, len: 2, prio: 3, ts_ps: 9, ts_echo_ps: 4, ..Default::default() };
    for flags in flag_values() {
        for seq in U64S {
            for len in U32S {
                for buf_len in [0, HEADER_LEN - 1, HEADER_LEN, HEADER_LEN + 1] {
                    check_segment_roundtrip(&SegmentRepr { flags, seq, len, ..base }, buf_len);
                }
            }
        }
    }
    for flags in (0..=u8::MAX).map(Flags) {
        check_segment_roundtrip(&SegmentRepr { flags, ..base }, HEADER_LEN);
    }
    for ecn in ECNS {
        for prio in [0, 1, u8::MAX] {
            check_segment_roundtrip(&SegmentRepr { ecn, prio, ..base }, HEADER_LEN);
        }
    }
    for v in U64S {
        check_segment_roundtrip(&SegmentRepr { ack: v, ts_ps: v, ts_echo_ps: !v, ..base }, HEADER_LEN);
        check_segment_roundtrip(&SegmentRepr { conn: v as u32, ..base }, HEADER_LEN);
    }
}

#[test]
fn datagram_round_trips_or_is_refused_at_every_boundary() {
    let base = DatagramRepr { conn: 7, seq: 1 << 40, len: 3, prio: 2, ts_ps: 123_456, ..Default::default() };
    for flags in flag_values() {
        for seq in U64S {
            for len in U32S {
                for buf_len in [0, DATAGRAM_HEADER_LEN - 1, DATAGRAM_HEADER_LEN, DATAGRAM_HEADER_LEN + 1] {
                    check_datagram_roundtrip(&DatagramRepr { flags, seq, len, ..base }, buf_len);
                }
            }
        }
    }
    for flags in (0..=u8::MAX).map(Flags) {
        check_datagram_roundtrip(&DatagramRepr { flags, ..base }, DATAGRAM_HEADER_LEN);
    }
    for ecn in ECNS {
        for prio in [0, 1, u8::MAX] {
            check_datagram_roundtrip(&DatagramRepr { ecn, prio, ..base }, DATAGRAM_HEADER_LEN);
        }
    }
    for v in U64S {
        check_datagram_roundtrip(&DatagramRepr { conn: v as u32, ts_ps: v, ..base }, DATAGRAM_HEADER_LEN);
    }
}

#[test]
fn atp_round_trips_or_is_refused_at_every_boundary() {
    let base = AtpRepr {
        conn: 7,
        seq: 1 << 40,
        msg: 12,
        pkt: 3,
        pkts: 5,
        group: 2,
        epoch: 9,
        len: 3,
        prio: 2,
        ts_ps: 123_456,
        ..Default::default()
    };
    let kinds = [AtpKind::Data, AtpKind::Ack, AtpKind::Fin];
    for kind in kinds {
        for ece in [false, true] {
            for len in U32S {
                for pkt in U32S {
                    for pkts in U32S {
                        for buf_len in [0, ATP_HEADER_LEN - 1, ATP_HEADER_LEN, ATP_HEADER_LEN + 1] {
                            check_atp_roundtrip(&AtpRepr { kind, ece, len, pkt, pkts, ..base }, buf_len);
                        }
                    }
                }
            }
        }
    }
    // No `seq + len` rule: `seq` numbers transmissions.
    for seq in U64S {
        for len in U32S {
            check_atp_roundtrip(&AtpRepr { seq, len, ..base }, ATP_HEADER_LEN);
        }
    }
    for kind in kinds {
        let base = AtpRepr { kind, len: 0, ..base };
        for ecn in ECNS {
            for prio in [0, 1, u8::MAX] {
                check_atp_roundtrip(&AtpRepr { ecn, prio, ..base }, ATP_HEADER_LEN);
            }
        }
        for v in U64S {
            check_atp_roundtrip(&AtpRepr { seq: v, ts_ps: !v, ..base }, ATP_HEADER_LEN);
            let v32 = v as u32;
            check_atp_roundtrip(&AtpRepr { conn: v32, msg: !v32, epoch: v32, group: v as u16, ..base }, ATP_HEADER_LEN);
        }
    }
}
