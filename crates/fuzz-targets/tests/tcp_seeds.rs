//! The `tcp_endpoints` corpus seeds reach the states they are named for, so that the fuzzer
//! starts from whole transfers (clean, lossy, with injected segments), not from the first step.

use std::path::Path;

fn seed(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/tcp_endpoints").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_clean_seed_completes_the_transfer_without_a_retransmission() {
    let r = fuzz_targets::tcp_endpoints_run(&seed("clean_transfer"));
    assert!(r.confirmed && !r.injected, "{r:?}");
    assert_eq!((r.received, r.rtos, r.fast_retx), (30 * 1460 - 11, 0, 0), "{r:?}");
}

#[test]
fn the_lossy_seed_completes_through_loss_recovery() {
    let r = fuzz_targets::tcp_endpoints_run(&seed("lossy_transfer"));
    assert!(r.confirmed && !r.injected, "{r:?}");
    assert_eq!(r.received, 30 * 1460 - 11);
    assert!(r.rtos + r.fast_retx > 0, "{r:?}");
}

#[test]
fn the_injected_seed_injects() {
    assert!(fuzz_targets::tcp_endpoints_run(&seed("injected")).injected);
}

#[test]
fn the_sack_seeds_complete_through_loss_recovery_and_inject_blocks() {
    let r = fuzz_targets::tcp_endpoints_run(&seed("sack_lossy_transfer"));
    assert!(r.confirmed && !r.injected, "{r:?}");
    assert_eq!(r.received, 30 * 1460 - 11);
    assert!(r.rtos + r.fast_retx > 0, "{r:?}");
    assert!(fuzz_targets::tcp_endpoints_run(&seed("sack_injected")).injected);
}

#[test]
fn the_ns3_cwr_seed_completes_with_marks_and_a_loss() {
    // DCTCP with SACK and ns-3's CA_CWR (first byte 0xC1), data marked CE on delivery, one lost.
    let r = fuzz_targets::tcp_endpoints_run(&seed("ns3_cwr_marked_lossy"));
    assert!(r.confirmed && !r.injected, "{r:?}");
    assert_eq!(r.received, 30 * 1460 - 11);
}

#[test]
fn the_rack_tlp_seed_repairs_a_lost_tail_with_a_probe() {
    // DCTCP with SACK and RACK-TLP (bytes 0x46 0x6B: a window of 12, DupThresh 3), 20 µs round
    // trips, the last three segments lost, then 45 µs of silence: the probe (2 SRTT = 40 µs)
    // comes before the 50 µs timeout, its SACK makes RACK find the other two lost.
    let r = fuzz_targets::tcp_endpoints_run(&seed("rack_tail_loss"));
    assert!(r.confirmed && !r.injected, "{r:?}");
    assert_eq!(r.received, 30 * 1460 - 11);
    assert_eq!((r.rtos, r.tail_probes, r.fast_retx), (0, 1, 1), "{r:?}");
}

#[test]
fn the_sack_lossy_seeds_run_with_and_without_prr() {
    // `sack_lossy_transfer`'s second byte (0xF8) draws PRR (bit 0x40); `sack_lossy_no_prr` is
    // the same seed with that bit clear (0xB8: a window of 5 instead of 9). Both complete. (The
    // seed ends in six rounds of delivering both ways and 3.3 ms of time, so that a run whose
    // recovery takes more steps, as PRR's did when the draw came in, still completes.)
    for (name, prr) in [("sack_lossy_transfer", true), ("sack_lossy_no_prr", false)] {
        let data = seed(name);
        assert_eq!(data[1] & 0x40 != 0, prr, "{name}");
        let r = fuzz_targets::tcp_endpoints_run(&data);
        assert!(r.confirmed && !r.injected, "{name}: {r:?}");
        assert_eq!(r.received, 30 * 1460 - 11);
        // With PRR, through a fast recovery (the state PRR paces); without, by any recovery.
        assert!(if prr { r.fast_retx > 0 } else { r.rtos + r.fast_retx > 0 }, "{name}: {r:?}");
    }
}

