//! `make bench-udp`: loopback goodput and CPU time per GB of the real transport, with kernel
//! TCP measured in the same run on the same machine (a `std::net` TCP socket pair, the same
//! bytes through the kernel's stack), and the issue-13 target (11 Gbit/s) next to it.
//!
//! Each case moves `MB` megabytes (argument 1, default 512) from one thread to another over
//! 127.0.0.1, `REPS` times (argument 2, default 3), in messages of 64 MB (made before the timing
//! starts, as an application's data exists before it sends it), and reports the median goodput
//! and the process's CPU time (user + system, both sides together) per GB, and how busy the
//! busiest thread was (100%: bound by one core; less: the run waited on something).
//! Cases: the bounded-loss transport reliable (p = 1), the bounded-loss transport at p = 0.9,
//! an ATP job with one group at MSR 1 (messages of 64 KB), and kernel TCP. Argument 3, when
//! given, keeps only the cases whose name contains it (kernel TCP always runs).
//!
//! Last, without sockets: the bounded-loss receiver's protocol work per packet of a 64 MB
//! message (`proto::MltReceiver`, the packets made beforehand, median of 5), with the packets
//! in index order and in the sender's pseudorandom order, so that the order's cost to the
//! protocol itself is measured apart from the copies and the kernel.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

const MESSAGE_MB: usize = 64;
const TARGET_GBPS: f64 = 11.0;

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// CPU seconds (user + system) of each of this process's threads, by thread id.
fn thread_cpu() -> Vec<(u64, f64)> {
    let tick = 100.0; // USER_HZ
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // Fields after the parenthesised name: state is field 3, utime 14, stime 15.
        let Some(rest) = stat.rsplit_once(')').map(|r| r.1) else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let (Some(u), Some(s)) = (f.get(11).and_then(|x| x.parse::<f64>().ok()), f.get(12).and_then(|x| x.parse::<f64>().ok())) else { continue };
        let tid = e.file_name().to_string_lossy().parse().unwrap_or(0);
        out.push((tid, (u + s) / tick));
    }
    out
}

/// The busiest thread's share of one core over an interval (1.0: that thread never waited):
/// whether a run was bound by one core or by waiting.
fn busiest(before: &[(u64, f64)], after: &[(u64, f64)], secs: f64) -> f64 {
    after
        .iter()
        .map(|(tid, c)| c - before.iter().find(|b| b.0 == *tid).map_or(0.0, |b| b.1))
        .fold(0.0, f64::max)
        / secs
}

/// (goodput Gbit/s, CPU s per GB, busiest thread's share of a core) of moving `bytes` with `f`.
fn measure(bytes: usize, f: impl FnOnce()) -> (f64, f64, f64) {
    let (c0, t0, th0) = (cpu_seconds(), Instant::now(), thread_cpu());
    f();
    let (dt, dc, th1) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0, thread_cpu());
    (bytes as f64 * 8.0 / dt / 1e9, dc / (bytes as f64 / 1e9), busiest(&th0, &th1, dt))
}

fn nodes() -> (udp::Node, udp::Node) {
    let cfg = udp::NodeConfig { line_rate_gbps: 40.0, ..udp::NodeConfig::default() };
    let a = udp::Node::bind("127.0.0.1:0".parse().unwrap(), cfg.clone()).unwrap();
    let b = udp::Node::bind("127.0.0.1:0".parse().unwrap(), cfg).unwrap();
    (a, b)
}

fn mlt(total: usize, p: f64) -> (f64, f64, f64) {
    let (a, b) = nodes();
    let n = total.div_ceil(MESSAGE_MB << 20);
    // The application's data exists before it is sent: made outside the timing.
    let msgs: Vec<Vec<u8>> = (0..n).map(|_| vec![7u8; MESSAGE_MB << 20]).collect();
    measure(n * (MESSAGE_MB << 20), || {
        for msg in msgs {
            let h = a.send_values(b.local_addr(), msg, 4, p, Duration::from_secs(600)).unwrap();
            b.recv(Duration::from_secs(600)).expect("delivered");
            h.wait().unwrap();
        }
    })
}

fn atp(total: usize) -> (f64, f64, f64) {
    let (a, b) = nodes();
    let per = 64 << 10;
    let n = total.div_ceil(MESSAGE_MB << 20);
    let jobs: Vec<Vec<(u16, Vec<u8>)>> =
        (0..n).map(|_| (0..(MESSAGE_MB << 20) / per).map(|_| (0, vec![7u8; per])).collect()).collect();
    measure(n * (MESSAGE_MB << 20), || {
        for msgs in jobs {
            let h = a.send_job(b.local_addr(), &[1.0], msgs, Duration::from_secs(600)).unwrap();
            while !matches!(b.recv_job(Duration::from_secs(600)).expect("the job ends"), udp::JobEvent::End { .. }) {}
            h.wait().unwrap();
        }
    })
}

fn tcp(total: usize) -> (f64, f64, f64) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let rx = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut got = 0;
        while got < total {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0);
            got += n;
        }
    });
    let mut s = TcpStream::connect(addr).unwrap();
    let buf = vec![7u8; 1 << 20];
    measure(total, || {
        let mut sent = 0;
        while sent < total {
            let k = (total - sent).min(buf.len());
            s.write_all(&buf[..k]).unwrap();
            sent += k;
        }
        s.flush().unwrap();
        drop(s);
        rx.join().unwrap();
    })
}

fn median(mut v: Vec<(f64, f64, f64)>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v[v.len() / 2]
}

type Case = (&'static str, Box<dyn Fn() -> (f64, f64, f64)>);

fn main() {
    let mut args = std::env::args().skip(1);
    let mb: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(512);
    let reps: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(3).max(1);
    // Argument 3 (optional): run only the cases whose name contains it (kernel TCP always runs,
    // as the reference), e.g. `reliable` for a profile of one case.
    let only = args.next().unwrap_or_default();
    let total = mb << 20;
    println!("loopback, {mb} MB per run, median of {reps} runs, messages of {MESSAGE_MB} MB");
    let (a, _) = nodes();
    println!("socket: {:?}", a.capabilities());
    drop(a);
    let cases: Vec<Case> = vec![
        ("kernel TCP (socket pair)", Box::new(move || tcp(total))),
        ("bounded-loss, reliable (p = 1)", Box::new(move || mlt(total, 1.0))),
        ("bounded-loss, p = 0.9", Box::new(move || mlt(total, 0.9))),
        ("ATP job, MSR 1, 64 KB messages", Box::new(move || atp(total))),
    ];
    let mut tcp_gbps = 0.0;
    println!(
        "{:<34} {:>8} {:>13} {:>13} {:>13} {:>8}",
        "case", "Gbit/s", "CPU s per GB", "busiest core", "x kernel TCP", "target"
    );
    for (name, f) in cases.iter().filter(|(n, _)| n.starts_with("kernel") || n.contains(only.as_str())) {
        let (g, c, b) = median((0..reps).map(|_| f()).collect());
        if tcp_gbps == 0.0 {
            tcp_gbps = g;
        }
        let target = if name.starts_with("kernel") {
            "-".to_string()
        } else if g >= TARGET_GBPS {
            "met".into()
        } else {
            format!("< {TARGET_GBPS}")
        };
        println!("{name:<34} {g:>8.2} {c:>13.3} {:>12.0}% {:>13.2} {target:>8}", b * 100.0, g / tcp_gbps);
    }
    for order in [proto::MltSendOrder::Index, proto::MltSendOrder::Shuffled] {
        let (n, ns) = receiver_ns_per_packet(order);
        println!("bounded-loss receiver alone, {order:?} order: {ns:.0} ns per packet ({n} packets, no sockets)");
    }
}

/// The receiver's protocol work per data packet of one 64 MB message, ACKs drained as the node
/// does (median of 5 runs).
fn receiver_ns_per_packet(order: proto::MltSendOrder) -> (usize, f64) {
    use proto::mlt::{MltReceiver, MltSender};
    use proto::MltConfig;
    let cfg = MltConfig { init_cwnd_pkts: u32::MAX, send_order: order, ..MltConfig::default() };
    let mut tx = MltSender::new(&cfg, 7, (MESSAGE_MB as u64) << 20);
    let pkts: Vec<_> = std::iter::from_fn(|| tx.poll_transmit(units::Time::ZERO)).collect();
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let t0 = Instant::now();
            let mut rx = MltReceiver::new(&cfg, 7);
            for p in &pkts {
                rx.handle_segment(units::Time::ZERO, p);
                while rx.poll_transmit().is_some() {}
            }
            assert!(rx.report().is_some(), "the message completes");
            t0.elapsed().as_nanos() as f64 / pkts.len() as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    (pkts.len(), runs[2])
}
