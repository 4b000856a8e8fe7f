"""`make bench-udp-lossy`: completion time of a bounded-loss transfer against kernel TCP through a
congested bottleneck (issue 13's lossy-path comparison), on the namespace testbed (root only).

Three hosts behind a switch whose ports run `slacknet net tc`'s queues at 200 Mbit/s. Host 2
floods host 1's port with UDP (class 0, the port's FIFO share with everything else) at
``--flood`` Mbit/s while host 0 sends ``--mb`` MB to host 1, alternately by kernel TCP (a
socket, completion when the receiver has every byte and says so) and by the bounded-loss
transport at p = 0.9 (completion when the receiver has 90% of the values), each ``--runs``
times, each with two window laws set per socket: kernel TCP with CUBIC (Linux's default as
shipped) and Reno, the bounded-loss transport with CUBIC's (RFC 9438, ``Endpoint(cc="cubic")``)
and the paper's DCTCP over NewReno (which at a port that drops without marking behaves as Reno);
kernel TCP also with this host's default congestion control if that is neither (BBR on our
machines; read from the namespace's sysctl). Then kernel TCP (CUBIC) again with its last 20
segments dropped, and the bounded-loss transport again with its last 20 datagrams dropped by its
fault injector: a lost tail, which TCP recovers only by a tail-loss probe or a timeout. Prints
the median and range per case, its ratio to kernel TCP with CUBIC, each window law of the
bounded-loss transport against kernel TCP with the same law, and whether it wins.

How TCP's tail is dropped (netem, iptables and tc's ``gact`` are absent on these kernels; nft is
not, see ``testbed.TcpTailDrop``): the sender writes its last 20 x MSS bytes as ``y`` (the rest
``x``), so each of its last 20 segments starts with ``y``; an nft rule on host 0's output hook
drops a segment to port 7001 that starts with ``y`` the first time its sequence number is seen
(a dynamic set remembers it) and lets it pass when it is seen again (a retransmission). Host 0's
interface sends one segment per packet (``gso_max_segs 1``) during that case only, so the rule
sees segments, not GSO super-packets; the case "kernel TCP, CUBIC, one segment per packet" is the same
setting without a drop, its control. The setting alone matters much: with GSO, TCP's 64 KB
super-packets cross the veths and the bridge whole and the port's bfifo drops them whole (TCP
then sends about 1.5x the transfer, against 1.1x one segment per packet). The bounded-loss
transport's GSO runs reach the port whole too: ``--one-segment-per-packet`` sends one segment
per packet from host 0 in every case, for a comparison in which neither transport's bursts are
dropped whole. nft's counters are checked after each run: exactly 20 first transmissions
dropped, their retransmissions passed, and the sequence numbers dropped one MSS apart
(consecutive segments). (The conntrack byte counter, ``ct original bytes`` in [total - 20
segments, total), would not do: it counts the hundreds of retransmissions the congested port
causes earlier in the transfer, so its window falls before the tail.) Where nft is missing, the
case is skipped with the reason.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from slacknet import testbed

_BENCH = str(Path(__file__).resolve().parent)  # bench/: _cli (on the path when run as a script)
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
from _cli import interruptible, stop  # noqa: E402

# Segments (TCP) or datagrams (the bounded-loss transport) of the lost tail.
TAIL = 20
TCP_CUBIC = "kernel TCP, CUBIC"
TCP_RENO = "kernel TCP, Reno"
MLT = "bounded-loss p = 0.9"
MLT_TAIL = f"{MLT}, tail of {TAIL} lost"
MLT_CUBIC = "bounded-loss p = 0.9, CUBIC law"
MLT_CUBIC_TAIL = f"{MLT_CUBIC}, tail of {TAIL} lost"

TCP_RX = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 7001)); s.listen(1); print("ready", flush=True)
n = int(sys.argv[2])
while True:
    c, _ = s.accept()
    got = 0
    while got < n:
        b = c.recv(1 << 20)
        if not b:
            break
        got += len(b)
    c.sendall(b"k"); c.close()
"""

TCP_TX = """
import socket, sys, time
n = int(sys.argv[2]); tail = int(sys.argv[3]) if len(sys.argv) > 3 else 0
buf, mark = b"x" * (1 << 20), b"y" * (1 << 20)
t0 = time.monotonic()
c = socket.socket()
if len(sys.argv) > 4:
    # The congestion control of this connection (the kernel's default is CUBIC).
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[4].encode())
c.connect((sys.argv[1], 7001))
# The last `tail` segments' bytes are b"y", the marker the tail drop's nft rule looks for.
mss = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
plain = n - min(n, tail * mss)
sent = 0
while sent < n:
    k = min(len(buf), (plain if sent < plain else n) - sent)
    c.sendall((buf if sent < plain else mark)[:k]); sent += k
assert c.recv(1) == b"k"
print("mss", mss)
print(time.monotonic() - t0)
"""

MLT_RX = """
import sys
from slacknet.net import Endpoint
rx = Endpoint(sys.argv[1] + ":7000"); print("ready", flush=True)
while True:
    rx.recv_array()
"""

MLT_TX = """
import sys, time
import numpy as np
from slacknet.net import Endpoint, Faults
n = int(sys.argv[2]) // 4
tail = int(sys.argv[3])
x = np.ones(n, dtype=np.float32)
# The first transmissions of the last `tail` data packets are dropped (packet i starts at
# value i * 351); their resends, if the sender makes any, pass. Sent in index order, so that
# they are the transfer's last packets in time as well, like TCP's dropped tail (shuffled, the
# default, they would go out at random times, where later packets' ACKs reveal them).
pkts = -(-n // 351)
faults = Faults(drop_first_tx=tuple(351 * i for i in range(pkts - tail, pkts))) if tail else None
tx = Endpoint(sys.argv[4] + ":0", faults=faults, cc=sys.argv[5], send_order="index" if tail else "shuffled")
t0 = time.monotonic()
tx.send_array(sys.argv[1] + ":7000", x, p=0.9, deadline=120)
print(time.monotonic() - t0)
"""

FLOOD = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rate = float(sys.argv[2]) * 1e6
payload = b"x" * 1400
gap, t = 32 * 1400 * 8 / rate, time.monotonic()
while True:
    for _ in range(32):
        try:
            s.sendto(payload, (sys.argv[1], 9))
        except OSError:
            pass
    t += gap
    d = t - time.monotonic()
    if d > 0:
        time.sleep(d)
"""


@interruptible
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=8, help="megabytes per transfer (default 8)")
    ap.add_argument("--runs", type=int, default=3, help="runs per case (default 3)")
    ap.add_argument("--flood", type=float, default=150.0, help="competing UDP in Mbit/s (default 150)")
    ap.add_argument("--one-segment-per-packet", action="store_true",
                    help="host 0 sends one segment per packet in every case (gso_max_segs 1): no GSO "
                         "super-packet of either transport reaches the port whole")
    args = ap.parse_args(argv)
    # Checked before the testbed: a bad value would otherwise end in a traceback after minutes.
    for name, v in (("--mb", args.mb), ("--runs", args.runs)):
        if v < 1:
            print(f"bench-udp-lossy: {name} {v}: give a whole number, at least 1", file=sys.stderr)
            return 2
    if not (math.isfinite(args.flood) and args.flood >= 0):
        print(f"bench-udp-lossy: --flood {args.flood}: give the competing UDP in Mbit/s, 0 or more", file=sys.stderr)
        return 2
    why = testbed.available()
    if why is not None:
        print(f"bench-udp-lossy: skipped: {why}", file=sys.stderr)
        return 0
    n = args.mb << 20
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as d, testbed.Testbed(hosts=3, rate="200mbit") as tb:
        p = Path(d)
        for name, text in (("tcp_rx", TCP_RX), ("tcp_tx", TCP_TX), ("mlt_rx", MLT_RX), ("mlt_tx", MLT_TX),
                           ("flood", FLOOD)):
            (p / f"{name}.py").write_text(textwrap.dedent(text))
        import subprocess

        procs: list[subprocess.Popen[str]] = []
        try:  # every child is stopped however this ends (Ctrl-C included)
            if args.one_segment_per_packet:
                subprocess.run(["ip", "-n", tb.names[0], "link", "set", "dev", tb.host_interface(0),
                                "gso_max_segs", "1"], check=True)
            rx1 = tb.python(1, p / "tcp_rx.py", tb.address(1), str(n), stdout=subprocess.PIPE)
            procs.append(rx1)
            rx2 = tb.python(1, p / "mlt_rx.py", tb.address(1), stdout=subprocess.PIPE)
            procs.append(rx2)
            assert rx1.stdout and rx1.stdout.readline().strip() == "ready"
            assert rx2.stdout and rx2.stdout.readline().strip() == "ready"
            procs.append(tb.python(2, p / "flood.py", tb.address(1), str(args.flood)))
            time.sleep(0.5)
            tail_drop = None
            tail_skip = testbed.tail_drop_available()
            if tail_skip is None:
                try:
                    tail_drop = tb.tcp_tail_drop(0, 7001)
                except RuntimeError as e:
                    tail_skip = f"nft refused the tail-drop rules: {e}"
            # The kernel's default congestion control is a per-host setting (and per namespace): it
            # is CUBIC as Linux ships, but may be BBR or another (it is BBR on our machines).
            default_cc = subprocess.run(["ip", "netns", "exec", tb.names[0], "sysctl", "-n",
                                         "net.ipv4.tcp_congestion_control"],
                                        capture_output=True, text=True).stdout.strip() or "unknown"
            tcp_default = f"kernel TCP, {default_cc} (this host's default)"
            tcp_seg = "kernel TCP, CUBIC, one segment per packet"
            tcp_tail = f"kernel TCP, CUBIC, last {TAIL} segments dropped"
            tail_counts: dict[str, list[tuple[int, int]]] = {}
            tail_gaps: list[bool] = []
            cases = [(TCP_CUBIC, "tcp_tx.py", ["0", "cubic"]), (TCP_RENO, "tcp_tx.py", ["0", "reno"]),
                     (MLT, "mlt_tx.py", ["0"]), (MLT_TAIL, "mlt_tx.py", [str(TAIL)]),
                     (MLT_CUBIC, "mlt_tx.py", ["0"]), (MLT_CUBIC_TAIL, "mlt_tx.py", [str(TAIL)])]
            if tail_drop is not None:
                # The tail drop runs TCP one segment per packet (see the module docs): the same
                # setting without a drop is its control.
                cases[1:1] = [(tcp_seg, "tcp_tx.py", ["0", "cubic"]), (tcp_tail, "tcp_tx.py", [str(TAIL), "cubic"])]
            if default_cc not in ("cubic", "reno"):
                cases.append((tcp_default, "tcp_tx.py", []))
            for _ in range(args.runs):
                for name, script, extra in cases:
                    child_argv = [tb.address(1), str(n), *extra]
                    if script == "mlt_tx.py":
                        child_argv += [tb.address(0), "cubic" if name.startswith(MLT_CUBIC) else "dctcp"]
                    armed = tail_drop if name in (tcp_seg, tcp_tail) else None
                    if armed is not None:
                        armed.arm()
                    try:
                        r = tb.python(0, p / script, *child_argv, stdout=subprocess.PIPE)
                        try:
                            out, _ = r.communicate(timeout=300)
                        finally:
                            stop(r)
                    finally:
                        if armed is not None:
                            dropped, passed = armed.disarm()
                            seqs = armed.dropped_sequences()
                            # Consecutive segments, one MSS apart (or the sequence wrapped).
                            gaps = {b - a for a, b in zip(seqs, seqs[1:])}
                            tail_gaps.append(len(gaps) <= 1 or max(seqs) - min(seqs) > 1 << 31)
                            tail_counts.setdefault(name, []).append((dropped, passed))
                    times.setdefault(name, []).append(float(out.strip().splitlines()[-1]))
            drops = tb.egress_drops(1)
        finally:
            stop(*procs)
    print(f"{args.mb} MB from host 0 to host 1 through a 200 Mbit/s port flooded with {args.flood:g} Mbit/s of UDP; "
          f"median [min-max] of {args.runs} runs; drops at the port by class: {json.dumps(drops)}"
          + ("; host 0 one segment per packet throughout" if args.one_segment_per_packet else ""))
    tcp = statistics.median(times[TCP_CUBIC])
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"  {name:<40} {m * 1e3:9.1f} ms [{min(ts) * 1e3:.1f}-{max(ts) * 1e3:.1f}]   x TCP CUBIC {m / tcp:5.2f}")
    if tail_skip is not None:
        print(f"  {tcp_tail}: skipped: {tail_skip}")
    else:
        runs = tail_counts.get(tcp_tail, [])
        exact = (all(d == TAIL and a >= d for d, a in runs) and all(c == (0, 0) for c in tail_counts.get(tcp_seg, []))
                 and all(tail_gaps))
        ratio = statistics.median(times[tcp_tail]) / statistics.median(times[tcp_seg])
        print(f"  TCP's tail drop, nft counters per run (first transmissions dropped, retransmissions passed): "
              f"{runs}, control {tail_counts.get(tcp_seg)}: "
              f"{'as intended' if exact else f'NOT exactly the last {TAIL} segments'}; "
              f"a lost tail costs TCP x {ratio:.2f} against its control")
    # Like for like: each window law of the bounded-loss transport against kernel TCP with the
    # same law (CUBIC, Linux's default as shipped; Reno stands for DCTCP's law over NewReno at a
    # port that never marks), so the ratio isolates the loss policy (p = 0.9, late losses
    # abandoned); then against this host's default if it is neither.
    med = {k: statistics.median(ts) for k, ts in times.items()}
    # TCP's tail drop runs one segment per packet; without --one-segment-per-packet the
    # bounded-loss transport's runs use GSO, so its lost tail is held against plain TCP then.
    same_mode = args.one_segment_per_packet and tcp_tail in med
    tcp_tail_ref = med[tcp_tail] if same_mode else tcp
    tail_name = "kernel TCP, CUBIC, tail lost" if same_mode else TCP_CUBIC
    pairs = [(MLT_CUBIC, TCP_CUBIC, tcp), (MLT_CUBIC_TAIL, tail_name, tcp_tail_ref),
             (MLT, TCP_RENO, med[TCP_RENO]), (MLT, TCP_CUBIC, tcp)]
    if tcp_default in med:
        pairs += [(MLT, tcp_default, med[tcp_default]), (MLT_CUBIC, tcp_default, med[tcp_default])]
    for mine, theirs, ref in pairs:
        print(f"  {mine:<36} against {theirs:<40} x {med[mine] / ref:.2f} ({'wins' if med[mine] < ref else 'does NOT win'})")
    like = med[MLT_CUBIC] < tcp and med[MLT_CUBIC_TAIL] < tcp_tail_ref and med[MLT] < med[TCP_RENO]
    print(f"the bounded-loss transport {'wins' if like else 'does NOT win'} against kernel TCP with the same "
          f"window law, with and without a lost tail")
    return 0


if __name__ == "__main__":
    sys.exit(main())
