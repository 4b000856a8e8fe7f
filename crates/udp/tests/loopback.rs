//! The bounded-loss transport over real UDP sockets on loopback: reliable and bounded-loss
//! transfers with the fault injector, the exact missing-range mask, deadlines, and what a node
//! does with hostile datagrams.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use proto::Outcome;
use udp::{Delivered, FaultConfig, MltSendOrder, Node, NodeConfig, NodeError};

const LOCAL: &str = "127.0.0.1:0";
const WAIT: Duration = Duration::from_secs(20);

fn node(fault: FaultConfig) -> Node {
    Node::bind(LOCAL.parse().unwrap(), NodeConfig { fault, ..NodeConfig::default() }).unwrap()
}

/// `n` float32 values 1.0, 2.0, ... as bytes (never 0, so a zero marks a missing value).
fn values(n: usize) -> Vec<u8> {
    (1..=n).flat_map(|i| (i as f32).to_le_bytes()).collect()
}

/// The message's values are the sent ones outside the missing ranges and 0 inside them, and the
/// ranges account exactly for the values that did not arrive.
fn check_mask(sent: &[u8], got: &Delivered) {
    assert_eq!(got.data.len(), sent.len());
    let n = got.total_values as usize;
    let mut missing = vec![false; n];
    for &(a, b) in &got.missing {
        assert!(a < b && (b as usize) <= n, "{:?}", got.missing);
        missing[a as usize..b as usize].iter_mut().for_each(|m| *m = true);
    }
    for w in got.missing.windows(2) {
        assert!(w[0].1 < w[1].0, "sorted, disjoint, maximal: {:?}", got.missing);
    }
    let num_missing = missing.iter().filter(|m| **m).count();
    assert_eq!(num_missing + got.received_values as usize, n);
    for (i, m) in missing.iter().enumerate() {
        let (s, g) = (&sent[4 * i..4 * i + 4], &got.data[4 * i..4 * i + 4]);
        if *m {
            assert_eq!(g, &[0; 4], "value {i} is missing, so zero");
        } else {
            assert_eq!(g, s, "value {i} arrived");
        }
    }
}

#[test]
fn a_reliable_transfer_delivers_every_value() {
    let (a, b) = (node(FaultConfig::default()), node(FaultConfig::default()));
    let data = values(250_000); // 1 MB
    let h = a.send_values(b.local_addr(), data.clone(), 4, 1.0, WAIT).unwrap();
    let got = b.recv(WAIT).expect("delivered");
    let report = h.wait().unwrap();
    assert_eq!(report.outcome, Outcome::Complete);
    assert_eq!(got.peer, a.local_addr());
    assert!(got.missing.is_empty());
    assert_eq!(got.data, data);
    assert_eq!((got.total_values, got.received_values), (250_000, 250_000));
}

#[test]
fn with_loss_it_ends_at_p_with_an_exact_mask() {
    // 20% of what the sender sends is lost (ACKs are not: the receiver injects nothing); p = 0.8.
    let a = node(FaultConfig { loss: 0.2, seed: 5, ..FaultConfig::default() });
    let b = node(FaultConfig::default());
    let data = values(100_000);
    let h = a.send_values(b.local_addr(), data.clone(), 4, 0.8, WAIT).unwrap();
    let got = b.recv(WAIT).expect("delivered");
    let report = h.wait().unwrap();
    assert!(matches!(report.outcome, Outcome::Enough | Outcome::Complete), "{report:?}");
    assert!(got.received_values >= 80_000, "the bound: {} of 100000", got.received_values);
    check_mask(&data, &got);
    assert!(a.stats().fault.num_dropped > 0, "{:?}", a.stats());
}

#[test]
fn a_lost_tail_is_abandoned_within_the_bound() {
    // 20 packets of 351 values (1452-byte datagrams): lose the last two sent; p = 0.9 needs 18
    // packets' worth, so the sender stops without resending them. In index order they are
    // the message's last two packets; shuffled (the default), two packets from anywhere.
    for order in [MltSendOrder::Index, MltSendOrder::Shuffled] {
        let fault = FaultConfig { drop_nth: [18, 19].into_iter().collect(), ..FaultConfig::default() };
        let mut cfg = NodeConfig { fault, ..NodeConfig::default() };
        cfg.mlt.send_order = order;
        let a = Node::bind(LOCAL.parse().unwrap(), cfg).unwrap();
        let b = node(FaultConfig::default());
        let data = values(20 * 351);
        let h = a.send_values(b.local_addr(), data.clone(), 4, 0.9, WAIT).unwrap();
        let got = b.recv(WAIT).expect("delivered");
        let report = h.wait().unwrap();
        assert_eq!(report.outcome, Outcome::Enough);
        if order == MltSendOrder::Index {
            assert_eq!(got.missing, vec![(18 * 351, 20 * 351)]);
        } else {
            assert_eq!(got.missing.iter().map(|&(s, e)| e - s).sum::<u32>(), 2 * 351, "{:?}", got.missing);
            assert!(got.missing.iter().all(|&(s, e)| s % 351 == 0 && e % 351 == 0), "{:?}", got.missing);
        }
        check_mask(&data, &got);
        assert_eq!(report.stats.segments_retx, 0, "{report:?}");
    }
}

#[test]
fn a_tag_reaches_the_receiver() {
    let (a, b) = (node(FaultConfig::default()), node(FaultConfig::default()));
    let data = values(5_000);
    let h = a.send_values_tagged(b.local_addr(), data.clone(), 4, 1.0, WAIT, 41).unwrap();
    let got = b.recv(WAIT).expect("delivered");
    h.wait().unwrap();
    assert_eq!((got.tag, got.data), (41, data.clone()));
    let h = a.send_values(b.local_addr(), data, 4, 1.0, WAIT).unwrap();
    assert_eq!(b.recv(WAIT).expect("delivered").tag, 0);
    h.wait().unwrap();
}

#[test]
fn sixteen_bit_values_and_two_senders_at_once() {
    let b = node(FaultConfig::default());
    let (a1, a2) = (node(FaultConfig::default()), node(FaultConfig::default()));
    let d1: Vec<u8> = (0..40_000u32).flat_map(|i| ((i % 60_000) as u16 + 1).to_le_bytes()).collect();
    let d2 = values(30_000);
    let h1 = a1.send_values(b.local_addr(), d1.clone(), 2, 1.0, WAIT).unwrap();
    let h2 = a2.send_values(b.local_addr(), d2.clone(), 4, 1.0, WAIT).unwrap();
    let mut got = [b.recv(WAIT).unwrap(), b.recv(WAIT).unwrap()];
    got.sort_by_key(|d| d.peer != a1.local_addr());
    assert_eq!((got[0].value_bytes, &got[0].data), (2, &d1));
    assert_eq!((got[1].value_bytes, &got[1].data), (4, &d2));
    assert!(h1.wait().is_ok() && h2.wait().is_ok());
}

#[test]
fn a_transfer_nobody_answers_ends_at_its_deadline() {
    // A bound socket that never answers: the sender keeps timing out, then gives up.
    let silent = UdpSocket::bind(LOCAL).unwrap();
    let a = node(FaultConfig::default());
    let h = a.send_values(silent.local_addr().unwrap(), values(1000), 4, 1.0, Duration::from_millis(300)).unwrap();
    match h.wait() {
        Err(e @ NodeError::DeadlineExceeded { after, heard }) => {
            assert!(after >= Duration::from_millis(300) && !heard);
            // The message says what to check: nothing answered at that address.
            assert!(e.to_string().contains("the peer acknowledged nothing: is a receiver bound at that address"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_deadline_says_whether_the_peer_answered() {
    // A receiver that refuses the message (too large for its max_message_bytes) sends nothing
    // back: the sender's error says nobody acknowledged anything and what to check.
    let small = Node::bind(LOCAL.parse().unwrap(), NodeConfig { max_message_bytes: 100, ..NodeConfig::default() }).unwrap();
    let a = node(FaultConfig::default());
    let h = a.send_values(small.local_addr(), values(1000), 4, 1.0, Duration::from_millis(300)).unwrap();
    match h.wait() {
        Err(e @ NodeError::DeadlineExceeded { heard: false, .. }) => assert!(e.to_string().contains("max_message_bytes"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(small.stats().num_refused > 0);
    // A receiver that answers, but an ATP job paced at 10 Mbit/s that needs 1 s for its
    // 400 messages of 3 kB: part of it is acknowledged by the deadline, and the error says so.
    let slow = Node::bind(LOCAL.parse().unwrap(), NodeConfig { line_rate_gbps: 0.01, ..NodeConfig::default() }).unwrap();
    let b = node(FaultConfig::default());
    let h = slow.send_job(b.local_addr(), &[1.0], job_messages(400, 1), Duration::from_millis(300)).unwrap();
    match h.wait() {
        Err(e @ NodeError::DeadlineExceeded { heard: true, .. }) => {
            assert!(e.to_string().contains("the peer acknowledged part of the transfer"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_arguments_are_refused_up_front() {
    let a = node(FaultConfig::default());
    let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
    for (data, vb, p, key) in [
        (vec![0u8; 6], 4, 0.9, "data"),
        (vec![], 4, 0.9, "data"),
        (vec![0u8; 8], 3, 0.9, "value_bytes"),
        (vec![0u8; 8], 4, 0.0, "p"),
        (vec![0u8; 8], 4, 1.5, "p"),
        (vec![0u8; 8], 4, f64::NAN, "p"),
    ] {
        match a.send_values(to, data, vb, p, WAIT) {
            Err(NodeError::Invalid { key: k, .. }) => assert_eq!(k, key),
            other => panic!("{key}: {other:?}"),
        }
    }
    let bad = NodeConfig { fault: FaultConfig { loss: 2.0, ..FaultConfig::default() }, ..NodeConfig::default() };
    assert!(matches!(Node::bind(LOCAL.parse().unwrap(), bad), Err(NodeError::Invalid { key: "loss", .. })));
    let bad = NodeConfig { max_datagram_bytes: 10, ..NodeConfig::default() };
    assert!(matches!(Node::bind(LOCAL.parse().unwrap(), bad), Err(NodeError::Invalid { .. })));
}

#[test]
fn hostile_datagrams_are_counted_and_dropped() {
    let cfg = NodeConfig { max_message_bytes: 1 << 20, ..NodeConfig::default() };
    let b = Node::bind(LOCAL.parse().unwrap(), cfg).unwrap();
    let s = UdpSocket::bind(LOCAL).unwrap();
    // Garbage, a truncated header, and a data packet claiming a 16 GB message.
    s.send_to(b"not a packet", b.local_addr()).unwrap();
    s.send_to(&[wire::MLT_VERSION; 20], b.local_addr()).unwrap();
    let huge = wire::MltRepr { conn: 1, start: 0, end: 1, total: u32::MAX, value_bytes: 4, len: 4, ..Default::default() };
    let mut buf = vec![0u8; huge.buffer_len()];
    huge.emit(&mut buf).unwrap();
    s.send_to(&buf, b.local_addr()).unwrap();
    // An ACK for no transfer of this node.
    let ack = wire::MltRepr { conn: 9, total: 10, value_bytes: 4, flags: wire::Flags::ACK, ..Default::default() };
    let mut abuf = vec![0u8; ack.buffer_len()];
    ack.emit(&mut abuf).unwrap();
    s.send_to(&abuf, b.local_addr()).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while b.stats().num_received < 4 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let st = b.stats();
    assert_eq!((st.num_received, st.num_malformed, st.num_refused, st.num_unknown), (4, 2, 1, 1), "{st:?}");
    assert!(b.recv(Duration::from_millis(50)).is_none());
    // And the node still works.
    let a = node(FaultConfig::default());
    let h = a.send_values(b.local_addr(), values(1000), 4, 1.0, WAIT).unwrap();
    assert_eq!(b.recv(WAIT).unwrap().data, values(1000));
    assert!(h.wait().is_ok());
}

// ---- ATP jobs ------------------------------------------------------------------------------

use udp::JobEvent;

/// Message `i`: 3000 bytes (three packets, the last short), byte `k` of it `(i + k) % 251 + 1`
/// (a packet in the wrong place, or another message's, shows).
fn job_messages(n: u32, groups: u16) -> Vec<(u16, Vec<u8>)> {
    (0..n).map(|i| ((i % u32::from(groups)) as u16, (0..3000u32).map(|k| ((i + k) % 251) as u8 + 1).collect())).collect()
}

/// Messages of a job by id: (group, bytes).
type Messages = std::collections::BTreeMap<u32, (u16, Vec<u8>)>;

/// Every event of one job until its end: the messages by id, and the end's lost list.
fn collect_job(b: &Node) -> (Messages, Option<Vec<u32>>, Option<u64>) {
    let mut got = std::collections::BTreeMap::new();
    loop {
        match b.recv_job(WAIT).expect("the job ends") {
            JobEvent::Message { msg, group, data, .. } => {
                assert!(got.insert(msg, (group, data)).is_none(), "message {msg} twice");
            }
            JobEvent::End { lost, total, .. } => return (got, lost, total),
        }
    }
}

#[test]
fn an_atp_job_without_loss_delivers_every_message() {
    let (a, b) = (node(FaultConfig::default()), node(FaultConfig::default()));
    let msgs = job_messages(120, 2);
    let h = a.send_job(b.local_addr(), &[1.0, 0.5], msgs.clone(), WAIT).unwrap();
    let report = h.wait().unwrap();
    let (got, lost, total) = collect_job(&b);
    // The sender may end as soon as every group has what it needs (`Enough`), before the
    // last ACKs; without loss every message still arrives.
    assert_ne!(report.outcome, Outcome::GivenUp, "{report:?}");
    assert_eq!((lost, total), (Some(vec![]), Some(120)));
    assert_eq!(got.len(), 120);
    for (i, (g, data)) in msgs.iter().enumerate() {
        assert_eq!(got[&(i as u32)], (*g, data.clone()));
    }
}

#[test]
fn under_loss_every_group_meets_its_msr_and_the_lost_list_is_exact() {
    // A quarter of what the sender sends is lost. Group 0 must deliver every message, group 1
    // at least 60% of its messages; ATP gives up on the rest when their packets are lost.
    let a = node(FaultConfig { loss: 0.25, seed: 11, ..FaultConfig::default() });
    let b = node(FaultConfig::default());
    let msgs = job_messages(200, 2);
    let h = a.send_job(b.local_addr(), &[1.0, 0.6], msgs.clone(), WAIT).unwrap();
    let report = h.wait().unwrap();
    let (got, lost, total) = collect_job(&b);
    assert_ne!(report.outcome, Outcome::GivenUp, "{report:?}");
    for (g, (rep, msr)) in report.groups.iter().zip([1.0, 0.6]).enumerate() {
        assert_eq!(rep.messages, 100);
        assert!(rep.delivered >= rep.required, "group {g}: {rep:?}");
        let arrived = got.values().filter(|(gg, _)| usize::from(*gg) == g).count() as f64;
        assert!(arrived >= (msr * 100.0_f64).ceil(), "group {g}: {arrived} arrived");
        assert!(1.0 - arrived / 100.0 <= 1.0 - msr + 1e-9, "group {g}: loss within 1 - MSR");
    }
    assert_eq!(total, Some(200));
    let lost = lost.expect("the end-of-job notice arrived");
    // Exactly the complement, and every message that arrived is whole and right.
    let mut all: Vec<u32> = got.keys().copied().chain(lost.iter().copied()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..200).collect::<Vec<_>>());
    for (&i, (g, data)) in &got {
        assert_eq!((*g, data), (msgs[i as usize].0, &msgs[i as usize].1));
    }
    assert!(!lost.is_empty(), "with 25% loss and 40% slack in group 1 something is given up");
}

/// Settings and peers that used to be accepted and then end only at the deadline (or never):
/// a rate that rounds to 0 bit/s, limits of 0 bytes, port 0, the other IP family, a job whose
/// groups need nothing (which the ATP sender refused as "the job is closed").
#[test]
fn settings_and_peers_that_cannot_work_are_refused_up_front() {
    for (cfg, key) in [
        (NodeConfig { line_rate_gbps: 1e-12, ..NodeConfig::default() }, "line_rate_gbps"),
        (NodeConfig { max_message_bytes: 0, ..NodeConfig::default() }, "max_message_bytes"),
        (NodeConfig { max_receive_memory_bytes: 0, ..NodeConfig::default() }, "max_receive_memory_bytes"),
    ] {
        match Node::bind(LOCAL.parse().unwrap(), cfg) {
            Err(NodeError::Invalid { key: k, .. }) => assert_eq!(k, key),
            other => panic!("{key}: {other:?}"),
        }
    }
    let a = node(FaultConfig::default());
    for to in ["127.0.0.1:0", "[::1]:7000", "255.255.255.255:7000", "224.0.0.1:7000"] {
        let to: SocketAddr = to.parse().unwrap();
        let r = a.send_values(to, values(4), 4, 1.0, WAIT);
        assert!(matches!(r, Err(NodeError::Invalid { key: "peer", .. })), "{to}: {r:?}");
        let r = a.send_job(to, &[1.0], job_messages(1, 1), WAIT);
        assert!(matches!(r, Err(NodeError::Invalid { key: "peer", .. })), "{to}: {r:?}");
    }
    let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
    for msrs in [vec![0.0], vec![1e-12], vec![0.0, 1.0]] {
        let r = a.send_job(to, &msrs, vec![(0, vec![1]), (0, vec![2])], WAIT);
        assert!(matches!(r, Err(NodeError::Invalid { key: "msrs", .. })), "{msrs:?}: {r:?}");
    }
}

#[test]
fn bad_jobs_are_refused_up_front() {
    let a = node(FaultConfig::default());
    let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
    for (msrs, msgs, key) in [
        (vec![], job_messages(2, 1), "msrs"),
        (vec![1.5], job_messages(2, 1), "msrs"),
        (vec![1.0], vec![], "messages"),
        (vec![1.0], vec![(1, vec![1])], "messages"),
        (vec![1.0], vec![(0, vec![])], "messages"),
    ] {
        match a.send_job(to, &msrs, msgs, WAIT) {
            Err(NodeError::Invalid { key: k, .. }) => assert_eq!(k, key),
            other => panic!("{key}: {other:?}"),
        }
    }
}

// ---- Receive memory ------------------------------------------------------------------------

/// Wait until `n` datagrams reached `b`.
fn wait_received(b: &Node, n: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while b.stats().num_received < n && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(b.stats().num_received, n, "{:?}", b.stats());
}

#[test]
fn claimed_sizes_hold_no_memory_so_real_transfers_go_on() {
    // An audit's attack: two 100-byte datagrams, each one value of a message claiming 1 GiB
    // (the default max_message_bytes), reserved the default 2 GiB of receive memory until the
    // receivers' 30 s idle timeout, and every real transfer was refused meanwhile. Now each
    // costs what it carried; so does an ATP packet of a message claiming about 1 GiB.
    let b = Node::bind(LOCAL.parse().unwrap(), NodeConfig::default()).unwrap();
    let s = UdpSocket::bind(LOCAL).unwrap();
    let mut buf = Vec::new();
    for conn in [1, 2] {
        let claim = wire::MltRepr { conn, start: 0, end: 1, total: 1 << 28, value_bytes: 4, len: 4, ..Default::default() };
        udp::datagram::emit(&proto::Segment::Mlt(claim), &[1, 2, 3, 4], &mut buf).unwrap();
        s.send_to(&buf, b.local_addr()).unwrap();
    }
    let mss = 1452 - wire::ATP_HEADER_LEN as u32;
    let pkts = (1 << 30) / mss;
    let claim = wire::AtpRepr { kind: wire::AtpKind::Data, conn: 3, pkt: pkts - 1, pkts, len: 8, ..Default::default() };
    udp::datagram::emit(&proto::Segment::Atp(claim), &[9; 8], &mut buf).unwrap();
    s.send_to(&buf, b.local_addr()).unwrap();
    wait_received(&b, 3);
    let st = b.stats();
    assert_eq!((st.num_refused, st.num_malformed, st.num_unknown), (0, 0, 0), "{st:?}");
    let held = st.receive_memory_bytes;
    assert!(held > 0 && held <= 3 * 128, "the three claims hold {held} bytes");
    // A real 4 MB transfer: its message is charged (then 4 MB), handed up whole, and freed.
    let a = node(FaultConfig::default());
    let h = a.send_values(b.local_addr(), values(1_000_000), 4, 1.0, WAIT).unwrap();
    let got = b.recv(WAIT).expect("delivered");
    assert_eq!(got.data, values(1_000_000));
    assert!(h.wait().is_ok());
    assert_eq!(b.stats().receive_memory_bytes, held, "taking the message frees its memory");
}

#[test]
fn the_receive_memory_bound_holds_and_a_message_that_fits_completes() {
    // 1 MiB of receive memory: a 4 MB message never fits (its packets are refused once the
    // parts fill the memory; the sender gives up at its deadline), and the node's charge never
    // passes the bound. A 600 kB one fits: kept as parts until 37.5 kB arrived, then whole.
    let cfg = NodeConfig { max_receive_memory_bytes: 1 << 20, ..NodeConfig::default() };
    let b = Node::bind(LOCAL.parse().unwrap(), cfg).unwrap();
    let a = node(FaultConfig::default());
    let h = a.send_values(b.local_addr(), values(1_000_000), 4, 1.0, Duration::from_secs(2)).unwrap();
    let mut peak = 0;
    while h.wait_timeout(Duration::from_millis(10)).is_none() {
        peak = peak.max(b.stats().receive_memory_bytes);
    }
    assert!(b.recv(Duration::from_millis(100)).is_none());
    let st = b.stats();
    assert!(st.num_refused > 0, "{st:?}");
    assert!(peak.max(st.receive_memory_bytes) <= 1 << 20, "peak {peak}");
    assert!(peak > 3 << 18, "the parts filled the memory: {peak}");

    let c = Node::bind(LOCAL.parse().unwrap(), NodeConfig { max_receive_memory_bytes: 1 << 20, ..NodeConfig::default() }).unwrap();
    let h = a.send_values(c.local_addr(), values(150_000), 4, 1.0, WAIT).unwrap();
    assert_eq!(c.recv(WAIT).expect("delivered").data, values(150_000));
    assert!(h.wait().is_ok());
    assert_eq!(c.stats().receive_memory_bytes, 0);
}

#[test]
fn a_message_handed_up_before_a_sixteenth_arrived_is_laid_out_exactly() {
    // p = 0.05 without loss: the receiver hands the message up once 5% arrived, while its
    // values are still kept as parts; the application's array has them in place, zero elsewhere.
    let a = node(FaultConfig::default());
    let b = node(FaultConfig::default());
    let data = values(200_000);
    let h = a.send_values(b.local_addr(), data.clone(), 4, 0.05, WAIT).unwrap();
    let got = b.recv(WAIT).expect("delivered");
    assert!(h.wait().is_ok());
    assert!(got.received_values >= 10_000 && got.received_values < 12_500, "{}", got.received_values);
    check_mask(&data, &got);
    assert_eq!(b.stats().receive_memory_bytes, 0);
}

// ---- Addresses -----------------------------------------------------------------------------

#[test]
fn a_node_on_the_wildcard_address_answers_from_the_address_it_was_reached_at() {
    // b is bound to 0.0.0.0 and reached at 127.0.0.2. Its replies went out from the kernel's
    // choice for the route back (127.0.0.1), which a knows nothing of: a counted every ACK as
    // unknown and ended at its deadline with a message blaming b. Both transports.
    let b = Node::bind("0.0.0.0:0".parse().unwrap(), NodeConfig::default()).unwrap();
    let there: SocketAddr = format!("127.0.0.2:{}", b.local_addr().port()).parse().unwrap();
    let a = node(FaultConfig::default());
    let h = a.send_values(there, values(50_000), 4, 1.0, WAIT).unwrap();
    let got = b.recv(WAIT).expect("delivered");
    assert_eq!(got.data, values(50_000));
    assert!(h.wait().is_ok());
    let job = a.send_job(there, &[1.0], job_messages(20, 1), WAIT).unwrap();
    let (msgs, lost, _) = collect_job(&b);
    assert_eq!((msgs.len(), lost), (20, Some(vec![])));
    assert!(job.wait().is_ok());
    assert_eq!(a.stats().num_unknown, 0, "{:?}", a.stats());
}

#[test]
fn shutdown_through_a_shared_reference_ends_waits_at_once() {
    let b = std::sync::Arc::new(node(FaultConfig::default()));
    let b2 = std::sync::Arc::clone(&b);
    let waiting = std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        (b2.recv(Duration::from_secs(30)).is_none(), t0.elapsed())
    });
    std::thread::sleep(Duration::from_millis(100));
    let stats = b.shutdown().unwrap();
    let (none, waited) = waiting.join().unwrap();
    assert!(none && waited < Duration::from_secs(5), "{waited:?}");
    assert!(b.is_closed());
    assert_eq!(b.shutdown().unwrap(), stats, "a second shutdown returns the final counters");
    assert!(matches!(b.send_values(b.local_addr(), values(10), 4, 1.0, WAIT), Err(NodeError::Closed)));
}

#[test]
fn a_cancelled_transfer_stops_sending_at_once() {
    // A send and a job to a silent peer, each with 30 s to go, cancelled: their waits end
    // with Cancelled and the node sends nothing more for them.
    let silent = UdpSocket::bind(LOCAL).unwrap();
    let to = silent.local_addr().unwrap();
    let a = node(FaultConfig::default());
    let send = a.send_values(to, values(1000), 4, 1.0, Duration::from_secs(30)).unwrap();
    let job = a.send_job(to, &[1.0], job_messages(5, 1), Duration::from_secs(30)).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let t0 = std::time::Instant::now();
    send.cancel();
    job.cancel();
    assert!(matches!(send.wait(), Err(NodeError::Cancelled)));
    assert!(matches!(job.wait(), Err(NodeError::Cancelled)));
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let sent = a.stats().num_sent;
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(a.stats().num_sent, sent, "nothing sent after the cancellation");
}

#[test]
fn one_peer_host_cannot_take_every_receiver() {
    // Receivers one host may hold at once: 2 here. A third claim from 127.0.0.1 is refused, a
    // claim from 127.0.0.2 is not, and once the first host's receivers time out it may open
    // more again.
    let cfg = NodeConfig { max_receivers_per_peer: 2, receiver_idle_timeout: Duration::from_millis(300), ..NodeConfig::default() };
    let b = Node::bind(LOCAL.parse().unwrap(), cfg).unwrap();
    let (one, two) = (UdpSocket::bind(LOCAL).unwrap(), UdpSocket::bind("127.0.0.2:0").unwrap());
    let mut buf = Vec::new();
    let mut claim = |s: &UdpSocket, conn: u32| {
        let h = wire::MltRepr { conn, start: 0, end: 1, total: 1000, value_bytes: 4, len: 4, ..Default::default() };
        udp::datagram::emit(&proto::Segment::Mlt(h), &[1, 2, 3, 4], &mut buf).unwrap();
        s.send_to(&buf, b.local_addr()).unwrap();
    };
    for conn in 1..=3 {
        claim(&one, conn);
    }
    claim(&two, 1);
    wait_received(&b, 4);
    assert_eq!(b.stats().num_refused, 1, "{:?}", b.stats());
    std::thread::sleep(Duration::from_millis(800));
    claim(&one, 4);
    wait_received(&b, 5);
    assert_eq!(b.stats().num_refused, 1, "{:?}", b.stats());
    assert!(matches!(
        Node::bind(LOCAL.parse().unwrap(), NodeConfig { max_receivers_per_peer: 0, ..NodeConfig::default() }),
        Err(NodeError::Invalid { key: "max_receivers_per_peer", .. })
    ));
}

#[test]
fn a_receiver_floor_refuses_what_asks_for_less() {
    // A receiver whose application accepts at most a tenth of an array missing
    // (`min_receive_fraction` 0.9): a send with p = 0.5 is refused, whole (the receiver hands
    // nothing up, counts it, and the sender's error names the knob), p = 0.9 and p = 1 are not.
    let floor = NodeConfig { min_receive_fraction: 0.9, ..NodeConfig::default() };
    let b = Node::bind(LOCAL.parse().unwrap(), floor).unwrap();
    let a = node(FaultConfig::default());
    let h = a.send_values(b.local_addr(), values(10_000), 4, 0.5, Duration::from_millis(300)).unwrap();
    match h.wait() {
        Err(e @ NodeError::DeadlineExceeded { heard: false, .. }) => assert!(e.to_string().contains("min_receive_fraction"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(b.recv(Duration::from_millis(50)).is_none());
    let st = b.stats();
    assert!(st.num_refused_below_floor > 0 && st.num_refused == st.num_refused_below_floor, "{st:?}");
    for p in [0.9, 1.0] {
        let h = a.send_values(b.local_addr(), values(10_000), 4, p, WAIT).unwrap();
        let got = b.recv(WAIT).expect("delivered");
        assert!(got.received_values >= 9_000, "p = {p}: {}", got.received_values);
        assert!(h.wait().is_ok());
    }
    assert_eq!(b.stats().num_refused, st.num_refused, "{:?}", b.stats());
}

#[test]
fn the_floor_compares_values_not_fractions() {
    // The floor is ceil(f · N) values, computed as the sender computes its need: on 10 values
    // a p of 0.89 asks for ceil(8.9) = 9 = ceil(0.9 · 10), so it passes a floor of 0.9; on
    // 1,000 values it asks for 890 < 900 and is refused. A data packet that names no need
    // (0: the receiver's own p, 0.9 by default) is judged by that p: refused under a floor of
    // 0.95, taken under 0.9.
    let b = Node::bind(LOCAL.parse().unwrap(), NodeConfig { min_receive_fraction: 0.9, ..NodeConfig::default() }).unwrap();
    let a = node(FaultConfig::default());
    let h = a.send_values(b.local_addr(), values(10), 4, 0.89, WAIT).unwrap();
    assert_eq!(b.recv(WAIT).expect("9 of 10 values pass a floor of 0.9").total_values, 10);
    assert!(h.wait().is_ok());
    let h = a.send_values(b.local_addr(), values(1000), 4, 0.89, Duration::from_millis(200)).unwrap();
    assert!(matches!(h.wait(), Err(NodeError::DeadlineExceeded { heard: false, .. })));
    assert!(b.stats().num_refused_below_floor > 0, "{:?}", b.stats());
    let s = UdpSocket::bind(LOCAL).unwrap();
    let mut buf = Vec::new();
    for (f, refused) in [(0.95, 1), (0.9, 0)] {
        let c = Node::bind(LOCAL.parse().unwrap(), NodeConfig { min_receive_fraction: f, ..NodeConfig::default() }).unwrap();
        let own_p = wire::MltRepr { conn: 1, start: 0, end: 1, total: 1000, value_bytes: 4, len: 4, ..Default::default() };
        udp::datagram::emit(&proto::Segment::Mlt(own_p), &[1, 2, 3, 4], &mut buf).unwrap();
        s.send_to(&buf, c.local_addr()).unwrap();
        wait_received(&c, 1);
        let st = c.stats();
        assert_eq!((st.num_refused, st.num_refused_below_floor), (refused, refused), "floor {f}: {st:?}");
    }
    for f in [-0.1, 1.5, f64::NAN] {
        let bad = NodeConfig { min_receive_fraction: f, ..NodeConfig::default() };
        match Node::bind(LOCAL.parse().unwrap(), bad) {
            Err(e @ NodeError::Invalid { key: "min_receive_fraction", .. }) => assert!(e.to_string().contains("[0, 1]"), "{e}"),
            other => panic!("{f}: {other:?}"),
        }
    }
}
