"""The real transport through a real bottleneck: three hosts in network namespaces behind a
switch namespace whose ports run NetApprox's slack-based queues (`slacknet net tc`, htb), with
competing traffic, so that congestion drops happen in the kernel's queues. Checks the
guarantees end to end: every ATP group gets at least MSR x N messages, its measured loss is at
most 1 - MSR, the lost list is exact; a bounded-loss array completes at p with an exact mask;
everything ends within its deadline. Skipped (with the reason) where namespaces cannot be built.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from slacknet import testbed

# Real packets through real sockets, timed: `make test` runs these tests after the others, one at a time.
pytestmark = pytest.mark.realtime

REASON = testbed.available()
needs_netns = pytest.mark.skipif(REASON is not None, reason=f"namespace testbed: {REASON}")

RECEIVER = """
import json, sys
import numpy as np
from slacknet.net import Endpoint
rx = Endpoint(sys.argv[1] + ":7000")
print("ready", flush=True)
got = rx.recv_array(timeout=60)
job = rx.recv_job(timeout=60)
out = {
    "array": None if got is None else {
        "n": len(got.array), "received": got.received_values, "ranges": got.ranges,
        "ok_values": bool((got.array[~got.missing] == (np.arange(len(got.array)) % 1000 + 1)[~got.missing]).all()),
        "zero_missing": bool((got.array[got.missing] == 0).all()),
    },
    "job": None if job is None else {
        "total": job.total, "lost": job.lost,
        "messages": {str(i): [g, len(d), d[:1].hex()] for i, (g, d) in job.messages.items()},
    },
    "stats": rx.stats(),
}
json.dump(out, open(sys.argv[2], "w"))
"""

SENDER = """
import json, sys, time
import numpy as np
from slacknet.net import Endpoint
tx = Endpoint(sys.argv[1] + ":0", line_rate_gbps=0.3)
peer = sys.argv[2] + ":7000"
x = (np.arange(500_000) % 1000 + 1).astype(np.float32)
t0 = time.monotonic()
a = tx.send_array(peer, x, p=0.9, deadline=60)
msgs = [(i % 2, bytes([i % 250 + 1]) * 4000) for i in range(300)]
j = tx.send_job(peer, msgs, msr=[1.0, 0.6], deadline=60)
json.dump({"array": a.__dict__, "job": {"outcome": j.outcome, "groups": [g.__dict__ for g in j.groups]},
           "elapsed_s": time.monotonic() - t0, "stats": tx.stats()}, open(sys.argv[3], "w"))
"""

# Competing traffic: UDP at about 400 Mbit/s into the receiver's 200 Mbit/s port, class 0.
BLASTER = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
end = time.monotonic() + float(sys.argv[2])
payload = b"x" * 1400
gap, next_t = 1400 * 8 / 400e6, time.monotonic()
while time.monotonic() < end:
    for _ in range(32):
        try:
            s.sendto(payload, (sys.argv[1], 9))
        except OSError:
            pass
    next_t += 32 * gap
    d = next_t - time.monotonic()
    if d > 0:
        time.sleep(d)
"""


@needs_netns
def test_guarantees_hold_through_a_congested_bottleneck(tmp_path: Path) -> None:
    for name, text in (("rx.py", RECEIVER), ("tx.py", SENDER), ("blast.py", BLASTER)):
        (tmp_path / name).write_text(textwrap.dedent(text))
    with testbed.Testbed(hosts=3, rate="200mbit") as tb:
        rx = tb.python(1, tmp_path / "rx.py", tb.address(1), str(tmp_path / "rx.json"), stdout=subprocess.PIPE)
        assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
        blast = tb.python(2, tmp_path / "blast.py", tb.address(1), "30")
        try:
            tx = tb.python(0, tmp_path / "tx.py", tb.address(0), tb.address(1), str(tmp_path / "tx.json"))
            assert tx.wait(timeout=120) == 0
            assert rx.wait(timeout=120) == 0
            drops = tb.egress_drops(1)
        finally:
            blast.kill()
            blast.wait()
            for p in (rx,):
                if p.poll() is None:
                    p.kill()
    sent = json.loads((tmp_path / "tx.json").read_text())
    got = json.loads((tmp_path / "rx.json").read_text())
    # Real congestion: the competing traffic overflowed the bottleneck's class-0 queue.
    assert drops.get(0, 0) > 0, drops
    # The bounded-loss array: complete at p = 0.9 with an exact mask.
    arr = got["array"]
    assert arr is not None and arr["n"] == 500_000
    assert arr["received"] >= 450_000 and arr["ok_values"] and arr["zero_missing"]
    assert arr["received"] + sum(b - a for a, b in arr["ranges"]) == 500_000
    assert sent["array"]["outcome"] in ("enough", "complete")
    # The ATP job: every group at least MSR x N messages, loss within 1 - MSR, lost list exact.
    job = got["job"]
    assert job is not None and job["total"] == 300 and job["lost"] is not None
    assert sorted([int(i) for i in job["messages"]] + job["lost"]) == list(range(300))
    for g, msr in enumerate([1.0, 0.6]):
        arrived = [m for m in job["messages"].values() if m[0] == g]
        assert len(arrived) >= int(150 * msr + 0.999), (g, len(arrived))
        assert 1 - len(arrived) / 150 <= 1 - msr + 1e-9
        rep = sent["job"]["groups"][g]
        assert rep["delivered"] >= rep["required"]
    for i, (g, size, first) in job["messages"].items():
        assert (g, size, first) == (int(i) % 2, 4000, bytes([int(i) % 250 + 1]).hex())
    assert sent["job"]["outcome"] in ("enough", "complete")
    # The loss policies ran: the array's sender abandoned or resent losses, and ATP gave up
    # messages of the loss-tolerant group only (group 0, MSR 1, lost none).
    assert sent["array"]["packets_retx"] > 0 or arr["ranges"]
    assert sent["job"]["groups"][0]["lost"] == 0


TCP_RX = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 7001)); s.listen(1); print("ready", flush=True)
for _ in range(2):
    c, _ = s.accept()
    data = bytearray()
    while True:
        b = c.recv(1 << 20)
        if not b:
            break
        data += b
    c.sendall(f"{len(data)} {data.count(b'y')}".encode())
    c.close()
"""

TCP_TX = """
import socket, sys
n, tail = int(sys.argv[2]), int(sys.argv[3])
c = socket.create_connection((sys.argv[1], 7001))
mss = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
c.sendall(b"x" * (n - tail * mss) + b"y" * (tail * mss))
# Done once the receiver has every byte and says how many (the tail must not be in flight when
# the drop is disarmed).
c.shutdown(socket.SHUT_WR)
print(c.recv(100).decode(), mss)
"""


@needs_netns
@pytest.mark.skipif(testbed.tail_drop_available() is not None, reason=f"{testbed.tail_drop_available()}")
def test_tcp_tail_drop_drops_the_first_transmission_of_exactly_the_last_segments(tmp_path: Path) -> None:
    (tmp_path / "rx.py").write_text(textwrap.dedent(TCP_RX))
    (tmp_path / "tx.py").write_text(textwrap.dedent(TCP_TX))
    n = 2 << 20
    with testbed.Testbed(hosts=2, rate="200mbit") as tb:
        drop = tb.tcp_tail_drop(0, 7001)
        rx = tb.python(1, tmp_path / "rx.py", tb.address(1), stdout=subprocess.PIPE)
        assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
        counts: list[tuple[int, int]] = []
        got: list[tuple[int, int]] = []
        mss: list[int] = []
        try:
            for tail in (0, 20):
                drop.arm()
                tx = tb.python(0, tmp_path / "tx.py", tb.address(1), str(n), str(tail), stdout=subprocess.PIPE)
                out, _ = tx.communicate(timeout=60)
                counts.append(drop.disarm())
                seqs = drop.dropped_sequences()
                words = [int(w) for w in out.split()]
                got.append((words[0], words[1]))
                mss.append(words[2])
        finally:
            rx.kill()
            rx.wait()
    # Without the marker nothing is dropped; with it, exactly the last 20 segments' first
    # transmissions, and TCP still delivers every byte (their retransmissions pass).
    assert counts[0] == (0, 0)
    assert counts[1][0] == 20 and counts[1][1] >= 20, counts
    assert got == [(n, 0), (n, 20 * mss[1])]
    # The dropped segments are consecutive, one MSS apart (no wrap of the 32-bit sequence
    # within 20 segments is likely enough to ignore: 2 MB from a random start).
    gaps = {b - a for a, b in zip(seqs, seqs[1:])}
    assert len(seqs) == 20 and (gaps == {mss[1]} or max(seqs) - min(seqs) > 1 << 31), seqs


# ---------------------------------------------------------------------------------------------
# Bad arguments: refused in the constructor, before any namespace exists, naming the argument
# (these need no root).


@pytest.mark.parametrize("kw, exc, match", [
    ({"hosts": 2.5}, TypeError, "hosts = 2.5: "),  # was range()'s "'float' object cannot be ..."
    ({"hosts": "3"}, TypeError, "hosts = '3': "),
    ({"hosts": 1}, ValueError, "hosts = 1: "),
    # Each was refused only after the namespaces were built, by `ip` or with the CLI's option name.
    ({"mtu": 100_000}, ValueError, "mtu = 100000: "),
    ({"mtu": 50}, ValueError, "mtu = 50: "),
    ({"rate": "fast"}, ValueError, "rate = fast: "),
    ({"buffer_bytes": 0}, ValueError, "buffer_bytes = 0: "),
])
def test_bad_testbed_settings_are_refused_before_building(kw: dict[str, object], exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        testbed.Testbed(**kw)  # type: ignore[arg-type]


def test_hosts_are_numbered_within_the_testbed() -> None:
    tb = testbed.Testbed(3)
    assert tb.address(2) == "10.77.0.3"
    for i in (3, -1, 255):  # were "10.77.0.4" (nobody), "10.77.0.0", "10.77.0.256"
        with pytest.raises(IndexError, match=f"host {i}: "):
            tb.address(i)
        with pytest.raises(IndexError, match=f"host {i}: "):
            tb.host_interface(i)


@pytest.mark.parametrize("dport, marker, exc, match", [
    # A dport string went into the nft script as written: "80 counter accept }" was rules.
    ("80 counter accept }", 121, TypeError, "dport = '80 counter accept }': "),
    (0, 121, ValueError, "dport = 0: "),
    (70_000, 121, ValueError, "dport = 70000: "),
    (80, 1.5, TypeError, "marker = 1.5: "),
    (80, 256, ValueError, "marker = 256: "),
])
def test_tail_drop_arguments_are_checked(dport: object, marker: object, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        testbed.TcpTailDrop(testbed.Testbed(2), 0, dport, marker)  # type: ignore[arg-type]
    with pytest.raises(IndexError, match="host 2: "):
        testbed.TcpTailDrop(testbed.Testbed(2), 2, 80, 121)
