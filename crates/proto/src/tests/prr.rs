//! PRR (RFC 9937) traces of the TCP sender in fast recovery ([`TcpConfig::prr`], with SACK):
//! the closed-form proportional sending of one loss's recovery against RFC 6675's silence and
//! catch-up, and PRR on lossy paths.

use units::Time;

use super::util::Mark;
use super::{ack_arrivals, dctcp, lossy_sums, pair, sends_of, tcp, MSS};
use crate::{CcKind, TcpConfig};

fn sack(cc: CcKind, prr: bool) -> TcpConfig {
    TcpConfig { sack: true, prr, ..tcp(cc) }
}

/// One loss in a window of 22 segments (the initial 20 and two ACKs' slow-start growth; segment
/// 2 lost): recovery starts at the third duplicate ACK with FlightSize 22 segments, so NewReno's
/// ssthresh is 11, and RFC 9937's RecoverFS is the pipe then, 22 - 3 SACKed - 1 lost = 18. Each
/// duplicate ACK delivers one segment, so after the k-th ACK of recovery (the one that starts
/// it is the first) PRR has sent exactly CEIL(k · 11 / 18) segments, the fast retransmit
/// first, while pipe is above ssthresh: new data leaves from the second ACK on, about 11 for
/// every 18 delivered. RFC 6675 alone sends nothing more until pipe falls below ssthresh
/// (the ninth ACK after the one that started it) and then one per ACK. Both end the window's
/// ACKs with 11 sent, pipe at ssthresh, and leave recovery with the same window.
#[test]
fn prr_sends_in_proportion_to_what_each_ack_delivers() {
    let mut after = Vec::new();
    for on in [false, true] {
        let mut p = pair(TcpConfig { init_cwnd_pkts: 20, ..sack(CcKind::NewReno, on) }, 60 * MSS, 0);
        p.drop_data.insert(2);
        assert!(p.drive());
        assert!(p.is_complete());
        let s = p.client.stats();
        assert_eq!((s.num_fast_retx, s.num_rtos, s.segments_retx), (1, 0, 1), "prr {on}");
        let entry = sends_of(&p, 2 * MSS)[1].sent;
        let dups: Vec<Time> = ack_arrivals(&p, 2 * MSS).into_iter().filter(|&t| t >= entry).collect();
        assert_eq!((dups[0], dups.len()), (entry, 19), "prr {on}");
        let sent: Vec<Time> = p.data().into_iter().filter(|e| e.sent >= entry).map(|e| e.sent).collect();
        let by_ack: Vec<usize> = dups.iter().map(|&d| sent.iter().filter(|&&t| t <= d).count()).collect();
        let want: Vec<usize> = (1..=19usize)
            .map(|k| if on { (k * 11).div_ceil(18).min(11) } else { k.saturating_sub(8).max(1) })
            .collect();
        assert_eq!(by_ack, want, "prr {on}");
        // The window after recovery: the same (RFC 6582's exit rule).
        let full = ack_arrivals(&p, 24 * MSS)[0];
        after.push(p.snaps.iter().find(|x| x.at > full).expect("a step after recovery").stats.cwnd);
    }
    assert_eq!(after[0], after[1]);
}

/// PRR against RFC 6675 alone on the same lossy paths (1% to 5% loss both ways, reordering, no
/// marks; NewReno and DCTCP): every transfer completes with every byte either way. PRR is
/// not faster here: these paths keep windows of a few segments, where a recovery often starts
/// with pipe at or below ssthresh, and PRR then sends only what each ACK delivers (RFC 6675
/// fills `ssthresh - pipe` at once), so less is in flight when recovery ends and a loss after
/// it more often waits for the timer (12 seeds x 3 losses: 27 timeouts against 22; 200 seeds:
/// 584 against 498).
#[test]
fn random_loss_with_prr_completes() {
    for cc in [CcKind::NewReno, dctcp(1.0)] {
        let (rtos, done) = lossy_sums(|_, prr| sack(cc, prr), Mark::Never, |_| {});
        assert!(rtos[1] > 0 && done[1] > 0, "{cc:?}: timeouts without / with PRR {rtos:?}, completion sums {done:?}");
    }
}

/// Without SACK the key changes nothing (PRR reads the scoreboard's pipe; the simulator's
/// validation refuses the combination).
#[test]
fn prr_without_sack_changes_nothing() {
    let run = |prr: bool| {
        let mut p = pair(TcpConfig { prr, init_cwnd_pkts: 20, ..tcp(CcKind::NewReno) }, 60 * MSS, 0);
        p.drop_data.extend([2, 9]);
        assert!(p.drive());
        p.data().into_iter().map(|e| (e.sent, e.seg.seq)).collect::<Vec<_>>()
    };
    assert_eq!(run(false), run(true));
}

