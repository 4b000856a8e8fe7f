"""`make bench-sim-vs-testbed`: the same transfer in the simulator and on the namespace testbed
(root only), side by side: one protocol core, two drivers (issue 13).

8 MB from host 0 to host 1 through a 200 Mbit/s switch port (experiments/testbed/star_200m.toml
is the testbed in the simulator), by the bounded-loss transport at p = 1 and at p = 0.9,
without competing traffic. Prints the completion time of each in both, the ratio, and the
line-rate bound (8 MB at 200 Mbit/s, headers included).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import slacknet
from slacknet import testbed

_BENCH = str(Path(__file__).resolve().parent)  # bench/: _cli (on the path when run as a script)
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
from _cli import interruptible, stop  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SIZE = 8 << 20

TX = """
import sys, time
import numpy as np
from slacknet.net import Endpoint
tx = Endpoint(sys.argv[1] + ":0")
x = np.ones(int(sys.argv[3]) // 4, dtype=np.float32)
t0 = time.monotonic()
tx.send_array(sys.argv[2] + ":7000", x, p=float(sys.argv[4]), deadline=120)
print(time.monotonic() - t0)
"""

RX = """
import sys
from slacknet.net import Endpoint
rx = Endpoint(sys.argv[1] + ":7000"); print("ready", flush=True)
while True:
    rx.recv_array()
"""


def simulated(p: float) -> float:
    sc = slacknet.Scenario.from_toml(REPO / "experiments" / "testbed" / "star_200m.toml")
    d = sc.model_dump()
    d["transport"]["complete_fraction"] = p
    res = slacknet.run(slacknet.Scenario.model_validate(d))
    return float(res.records["fct_us"].iloc[0]) / 1e6


@interruptible
def main() -> int:
    why = testbed.available()
    if why is not None:
        print(f"bench-sim-vs-testbed: skipped: {why}", file=sys.stderr)
        return 0
    # Every packet: 1452-byte datagrams (48-byte header, 1404 bytes = 351 values) + UDP/IP 28
    # + Ethernet 14 on the wire, as the testbed's qdisc counts it.
    pkts = -(-SIZE // 1404)
    bound = pkts * (1452 + 28 + 14) * 8 / 200e6
    rows = []
    with tempfile.TemporaryDirectory() as d, testbed.Testbed(hosts=3, rate="200mbit") as tb:
        (Path(d) / "tx.py").write_text(textwrap.dedent(TX))
        (Path(d) / "rx.py").write_text(textwrap.dedent(RX))
        rx = tb.python(1, Path(d) / "rx.py", tb.address(1), stdout=subprocess.PIPE)
        try:  # the receiver and a sender are stopped however this ends (Ctrl-C included)
            said = rx.stdout.readline().strip() if rx.stdout else ""
            if said != "ready":
                print(f"bench-sim-vs-testbed: the receiver did not start (it said {said!r:.80}; its error, if "
                      "any, is above)", file=sys.stderr)
                return 1
            for p in (1.0, 0.9):
                real = []
                for _ in range(3):
                    r = tb.python(0, Path(d) / "tx.py", tb.address(0), tb.address(1), str(SIZE), str(p),
                                  stdout=subprocess.PIPE)
                    try:
                        out, _ = r.communicate(timeout=120)
                    finally:
                        stop(r)
                    lines = (out or "").strip().splitlines()
                    try:
                        real.append(float(lines[-1]))
                    except (IndexError, ValueError):  # it failed: no time printed
                        print(f"bench-sim-vs-testbed: the sender at p = {p:g} failed (exit code {r.returncode}, "
                              f"last line {lines[-1] if lines else 'none'!r:.80}; its error, if any, is above)",
                              file=sys.stderr)
                        return 1
                rows.append((p, simulated(p), statistics.median(real)))
        finally:
            stop(rx)
    print(f"8 MB from host 0 to host 1 through a 200 Mbit/s port; line-rate bound {bound * 1e3:.1f} ms (all of it)")
    print(f"{'transport':<24} {'simulator':>12} {'testbed':>12} {'testbed/sim':>12}")
    for p, sim, real in rows:
        print(f"{'bounded-loss p = ' + format(p, 'g'):<24} {sim * 1e3:>9.1f} ms {real * 1e3:>9.1f} ms {real / sim:>12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
