"""The approximate-analytics layer end to end on loopback (`make bench-approx`).

One synthetic trip table (lognormal fares, exponential tips, eight zones as strata; the same
table in every case) is sent with `slacknet.approx.send_table` reliably (MSR 1) and under
error bounds on the total fare, through the sender's fault injector dropping datagrams at
random. For each case, the median over the runs of: the MSR planned, the time to cut the table
into messages (`pack`) and the send's wall time (the job alone), the share of packets sent
again, the share of the records that arrived, and the receiver's estimate of the total fare
(its 95% interval's half-width and its true error; how many runs' intervals held the truth). NetApprox's point in one table: a bound on the error lets the
job end without waiting for every lost message, and the interval says what that cost.

    python bench/approx_loopback.py [--records N] [--loss P] [--runs R] [--bounds 0.05,0.02,0.01]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from typing import NoReturn

import numpy as np
import pandas as pd

from slacknet import approx
from slacknet.net import Endpoint, Faults, TransportError


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors in one line and exit code 2 like ours."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


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


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog="bench/approx_loopback.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000, help="rows of the table (default 1,000,000)")
    ap.add_argument("--loss", type=float, default=0.05, help="datagram loss probability (default 0.05)")
    ap.add_argument("--runs", type=int, default=3, help="runs per case, median reported (default 3)")
    ap.add_argument("--bounds", default="0.05,0.02,0.01", help="error bounds on the total fare, comma-separated")
    a = ap.parse_args(argv)
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
    df = _table(a.records)
    mb = df.drop(columns="zone").to_numpy().nbytes / 1e6
    print(f"table: {a.records:,} records, {mb:.1f} MB of values, 8 zones; datagram loss {a.loss:g}; "
          f"median of {a.runs} runs")
    cases: list[tuple[str, dict[str, float]]] = [("reliable (msr 1)", {"msr": 1.0})]
    cases += [(f"e_max {b:g}", {"e_max": b, "column": "fare"}) for b in bounds]  # type: ignore[dict-item]
    print(f"{'case':<18} {'msr':>6} {'pack s':>7} {'send s':>7} {'vs reliable':>11} {'resent':>7} {'arrived':>8} "
          f"{'95% half-width':>15} {'true error':>11} {'covered':>8}")
    base = None
    for name, plan in cases:
        try:
            runs = [_once(df, a.loss, seed, **plan) for seed in range(a.runs)]
        except (TimeoutError, TransportError) as e:
            print(f"error: {name}: the transfer failed: {e}", file=sys.stderr)
            return 1
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        cov = sum(r["covered"] for r in runs)
        base = base or med["wall_s"]
        print(f"{name:<18} {med['msr']:>6.3f} {med['pack_s']:>7.3f} {med['wall_s']:>7.3f} "
              f"{med['wall_s'] / base:>10.2f}x {med['retx']:>7.1%} {med['arrived']:>8.1%} {med['half']:>15.2%} "
              f"{med['error']:>11.3%} {cov:>5.0f}/{a.runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
