//! Loopback goodput of one bounded-loss transfer (a first measurement; the benchmark proper
//! comes with `make bench-udp`). Usage: loopback_goodput [MB] [p]
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let mb: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(256);
    let p: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let a = udp::Node::bind("127.0.0.1:0".parse().unwrap(), udp::NodeConfig::default()).unwrap();
    let b = udp::Node::bind("127.0.0.1:0".parse().unwrap(), udp::NodeConfig::default()).unwrap();
    println!("capabilities: {:?}", a.capabilities());
    let data = vec![1u8; mb << 20];
    let t0 = Instant::now();
    let h = a.send_values(b.local_addr(), data, 4, p, Duration::from_secs(600)).unwrap();
    let got = b.recv(Duration::from_secs(600)).unwrap();
    let r = h.wait().unwrap();
    let dt = t0.elapsed().as_secs_f64();
    println!(
        "{} MB p={p}: {:.3} s, {:.2} Gbit/s goodput; received {} of {} values; sender {:?}; node stats {:?}",
        mb,
        dt,
        (mb << 20) as f64 * 8.0 / dt / 1e9,
        got.received_values,
        got.total_values,
        r.stats,
        a.stats()
    );
}
