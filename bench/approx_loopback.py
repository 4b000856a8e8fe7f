"""The approximate-analytics layer end to end on loopback (`make bench-approx`).

One synthetic trip table (lognormal fares, exponential tips, eight zones as strata; the same
table in every case) is sent with `slacknet.approx.send_table` reliably (MSR 1) and under
error bounds on the total fare, through the sender's fault injector dropping datagrams at
random. For each case, the median over the runs of: the MSR planned, the time to cut the table
into messages (`pack`) and the send's wall time (the job alone), the share of packets sent
again, the share of the records that arrived, and the receiver's estimate of the total fare
(its 95% interval's half-width and its true error; how many runs' intervals held the truth). NetApprox's point in one table: a bound on the error lets the
job end without waiting for every lost message, and the interval says what that cost.

With ``--testbed`` (root; `make bench-approx BENCH_APPROX_ARGS=--testbed`) the same runs cross
the namespace testbed instead of loopback: host 0 sends to host 1 through a switch port that
runs `slacknet net tc`'s queues at 200 Mbit/s while host 2 floods that port with UDP at
``--flood`` Mbit/s (as `make bench-udp-lossy` does), so what is lost is lost to congestion at a
real bottleneck, NetApprox's setting; ``--loss`` defaults to 0 there.

    python bench/approx_loopback.py [--records N] [--loss P] [--runs R] [--bounds 0.05,0.02,0.01]
                                    [--testbed [--flood MBIT]]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from slacknet import approx
from slacknet.net import Endpoint, Faults, TransportError

_BENCH = str(Path(__file__).resolve().parent)  # bench/: _cli and udp_lossy (on the path when run as a script)
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
from _cli import Parser, interruptible, stop  # noqa: E402


def _table(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(2026)
    return pd.DataFrame({
        "fare": rng.lognormal(2.5, 0.8, n),
        "tip": rng.exponential(2.0, n),
        "distance": rng.gamma(2.0, 1.5, n),
        "zone": rng.integers(0, 8, n),
    })


def _once(df: pd.DataFrame, loss: float, seed: int, **plan: float) -> dict[str, float]:
    rx = Endpoint("127.0.0.1:0")
    tx = Endpoint("127.0.0.1:0", faults=Faults(loss=loss, seed=seed))
    got: list[approx.Sample | None | Exception] = []

    def receive() -> None:
        try:
            got.append(approx.recv_table(rx, timeout=60))
        except Exception as e:  # reported below, in one line, not as the thread's traceback
            got.append(e)

    # A daemon: if the send fails, the error is reported at once, not after the receiver's 60 s.
    t = threading.Thread(target=receive, daemon=True)
    t.start()
    t0 = time.perf_counter()
    packed = approx.pack(df, by="zone", seed=seed, **plan)
    t1 = time.perf_counter()
    job = tx.send_job(rx.address, packed.messages, msr=packed.msr, deadline=120)
    wall = time.perf_counter() - t1
    t.join()
    s = got[0]
    if isinstance(s, Exception):
        raise TransportError(f"the receiver failed: {type(s).__name__}: {s}")
    if s is None:
        raise TransportError("the receiver heard nothing within 60 s")
    est = s.total("fare")
    truth = float(df["fare"].sum())
    slack = 1e-9 * abs(truth)  # an exact total differs from numpy's sum in its last digits
    return {"msr": min(packed.msr[1:]), "pack_s": t1 - t0, "arrived": len(s.frame) / len(df), "wall_s": wall,
            "half": est.relative_error, "error": abs(est.value / truth - 1.0),
            "covered": float(est.low - slack <= truth <= est.high + slack),
            "retx": job.packets_retx / max(1, job.packets_sent)}


# The testbed's programs: a receiver that reports each table's estimate, and a sender of one table.
_TB_RX = """
import json, sys
from slacknet import approx
from slacknet.net import Endpoint
rx = Endpoint(sys.argv[1] + ":7000"); print("ready", flush=True)
while True:
    s = approx.recv_table(rx)
    e = s.total("fare")
    print(json.dumps({"value": e.value, "low": e.low, "high": e.high, "half": e.relative_error,
                      "records": len(s.frame)}), flush=True)
"""

_TB_TX = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from approx_loopback import _table
from slacknet import approx
from slacknet.net import Endpoint, Faults
records, seed, loss, plan = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), json.loads(sys.argv[7])
df = _table(records)
tx = Endpoint(sys.argv[3] + ":0", faults=Faults(loss=loss, seed=seed) if loss else None)
t0 = time.perf_counter()
packed = approx.pack(df, by="zone", seed=seed, **plan)
t1 = time.perf_counter()
job = tx.send_job(sys.argv[2] + ":7000", packed.messages, msr=packed.msr, deadline=300)
print(json.dumps({"msr": min(packed.msr[1:]), "pack_s": t1 - t0, "wall_s": time.perf_counter() - t1,
                  "retx": job.packets_retx / max(1, job.packets_sent)}), flush=True)
"""


class _Testbed:
    """Runs on the namespace testbed: the receiver on host 1, a UDP flood from host 2 into host
    1's port, one sender process on host 0 per run."""

    def __init__(self, flood: float) -> None:
        from slacknet import testbed

        from udp_lossy import FLOOD  # the same competing traffic as bench-udp-lossy (bench/ is on the path)

        self._dir = tempfile.TemporaryDirectory()
        self._tb = testbed.Testbed(hosts=3, rate="200mbit")
        try:
            self._tb.__enter__()  # builds it; close() takes it down
        except BaseException:
            self._dir.cleanup()
            raise
        d = Path(self._dir.name)
        self._d = d
        tb = self._tb
        try:  # Ctrl-C included: the receiver and the flood must not outlive the testbed
            for name, text in (("rx", _TB_RX), ("tx", _TB_TX), ("flood", FLOOD)):
                (d / f"{name}.py").write_text(textwrap.dedent(text))
            self._rx = tb.python(1, d / "rx.py", tb.address(1), stdout=subprocess.PIPE)
            if not self._rx.stdout or self._rx.stdout.readline().strip() != "ready":
                raise TransportError("the testbed's receiver did not start")
            self._flood = tb.python(2, d / "flood.py", tb.address(1), str(flood)) if flood > 0 else None
            time.sleep(0.5)
        except BaseException:
            self.close()
            raise

    def once(self, df: pd.DataFrame, loss: float, seed: int, **plan: float) -> dict[str, float]:
        tb = self._tb
        tx = tb.python(0, self._d / "tx.py", str(Path(__file__).resolve().parent), tb.address(1), tb.address(0),
                       str(len(df)), str(seed), str(loss), json.dumps(plan), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
        try:
            out, err = tx.communicate(timeout=330)
        except subprocess.TimeoutExpired:
            raise TransportError("the sender did not finish within 330 s") from None
        finally:  # the sender ended, or is stopped (a timeout, Ctrl-C)
            stop(tx)
        if tx.returncode != 0:
            raise TransportError(f"the sender failed: {(err.strip().splitlines() or ['?'])[-1]}")
        sent = json.loads(out.strip().splitlines()[-1])
        assert self._rx.stdout is not None
        line = self._rx.stdout.readline()
        if not line:
            raise TransportError("the testbed's receiver ended")
        got = json.loads(line)
        truth = float(df["fare"].sum())
        slack = 1e-9 * abs(truth)
        return {"msr": sent["msr"], "pack_s": sent["pack_s"], "arrived": got["records"] / len(df),
                "wall_s": sent["wall_s"], "half": got["half"], "error": abs(got["value"] / truth - 1.0),
                "covered": float(got["low"] - slack <= truth <= got["high"] + slack), "retx": sent["retx"]}

    def close(self) -> None:
        stop(getattr(self, "_flood", None), getattr(self, "_rx", None))
        self._tb.close()
        self._dir.cleanup()


@interruptible
def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="bench/approx_loopback.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000, help="rows of the table (default 1,000,000)")
    ap.add_argument("--loss", type=float, default=None, help="datagram loss probability injected at the sender "
                    "(default 0.05 on loopback, 0 on the testbed)")
    ap.add_argument("--runs", type=int, default=3, help="runs per case, median reported (default 3)")
    ap.add_argument("--bounds", default="0.05,0.02,0.01", help="error bounds on the total fare, comma-separated")
    ap.add_argument("--testbed", action="store_true", help="through the namespace testbed's congested 200 Mbit/s "
                    "port instead of loopback (root)")
    ap.add_argument("--flood", type=float, default=150.0, help="with --testbed: competing UDP in Mbit/s (default 150)")
    a = ap.parse_args(argv)
    if a.loss is None:
        a.loss = 0.0 if a.testbed else 0.05
    try:
        bounds = [float(b) for b in a.bounds.split(",")]
    except ValueError:
        ap.error(f"--bounds {a.bounds!r}: give numbers in (0, 1) separated by commas, e.g. 0.05,0.02")
    if not 1000 <= a.records <= 50_000_000:
        ap.error(f"--records {a.records}: give 1,000 to 50,000,000")
    if not 0.0 <= a.loss < 0.5:
        ap.error(f"--loss {a.loss}: give a probability in [0, 0.5)")
    if not 1 <= a.runs <= 50:
        ap.error(f"--runs {a.runs}: give 1 to 50")
    if not all(0.0 < b < 1.0 for b in bounds):
        ap.error(f"--bounds {a.bounds!r}: each bound must be in (0, 1)")
    if not 0.0 <= a.flood <= 10_000.0:
        ap.error(f"--flood {a.flood}: give the competing UDP in Mbit/s, 0 to 10000")
    bed: _Testbed | None = None
    if a.testbed:
        from slacknet import testbed

        why = testbed.available()
        if why is not None:
            print(f"bench-approx --testbed: skipped: {why}", file=sys.stderr)
            return 0
    df = _table(a.records)
    mb = df.drop(columns="zone").to_numpy().nbytes / 1e6
    where = (f"the testbed's 200 Mbit/s port with {a.flood:g} Mbit/s of competing UDP" if a.testbed else "loopback")
    print(f"table: {a.records:,} records, {mb:.1f} MB of values, 8 zones; over {where}; injected datagram loss "
          f"{a.loss:g}; median of {a.runs} runs")
    if a.testbed:
        try:
            bed = _Testbed(a.flood)
        except (OSError, RuntimeError, TransportError) as e:
            print(f"error: the testbed did not start: {e}", file=sys.stderr)
            return 1
    try:
        return _cases(a, df, bounds, bed)
    finally:
        if bed is not None:
            bed.close()


def _cases(a: argparse.Namespace, df: pd.DataFrame, bounds: list[float], bed: _Testbed | None) -> int:
    once = bed.once if bed is not None else _once
    cases: list[tuple[str, dict[str, float]]] = [("reliable (msr 1)", {"msr": 1.0})]
    cases += [(f"e_max {b:g}", {"e_max": b, "column": "fare"}) for b in bounds]  # type: ignore[dict-item]
    print(f"{'case':<18} {'msr':>6} {'pack s':>7} {'send s':>7} {'send range':>13} {'vs reliable':>11} {'resent':>7} "
          f"{'arrived':>8} {'95% half-width':>15} {'true error':>11} {'covered':>8}")
    base = None
    for name, plan in cases:
        try:
            runs = [once(df, a.loss, seed, **plan) for seed in range(a.runs)]
        except (TimeoutError, TransportError) as e:
            print(f"error: {name}: the transfer failed: {e}", file=sys.stderr)
            return 1
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        cov = sum(r["covered"] for r in runs)
        base = base or med["wall_s"]
        lo, hi = min(r["wall_s"] for r in runs), max(r["wall_s"] for r in runs)
        print(f"{name:<18} {med['msr']:>6.3f} {med['pack_s']:>7.3f} {med['wall_s']:>7.3f} {f'{lo:.3f}-{hi:.3f}':>13} "
              f"{med['wall_s'] / base:>10.2f}x {med['retx']:>7.1%} {med['arrived']:>8.1%} {med['half']:>15.2%} "
              f"{med['error']:>11.3%} {cov:>5.0f}/{a.runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
