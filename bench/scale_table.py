"""`make bench-scale-table`: what a run costs against its size, so a user can predict the cost of
theirs (issue 15).

Fat-trees of k = 4, 6, 8, 10, 12 and 16 (16, 54, 128, 250, 432 and 1,024 hosts) at 100 Gbit/s,
the k = 16 scale scenario's settings (`experiments/scale/fat_tree_k16.toml`: 1 us links, DCTCP,
ECN at 97.5 KB, web search at load 0.5 of the host links), each for ``--ms`` milliseconds of
simulated time (default 1 and 2: doubling the simulated time should double the cost). One run
at a time, natively (`slacknet-sim`), one core each. Per run: wall and CPU seconds, peak
memory, events, packet-hops, events/s and packet-hops/s, and CPU nanoseconds per packet-hop
(the figure to predict with: a run's cost is about its packet-hops times it). Then the same
per-hop cost's spread across sizes, which says how far "linear in work" holds (a cache that
no longer holds the run's state shows up as a higher cost per hop at the larger sizes).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_BENCH = str(Path(__file__).resolve().parent)  # bench/: _cli (on the path when run as a script)
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
from _cli import Parser, interruptible  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release" / "slacknet-sim"

SCENARIO = """\
name = "scale_table_k{k}_{ms}ms"
seed = 1

[topology]
kind = "fat_tree"
k = {k}
rate_gbps = 100.0
delay_ns = 1000

[switch]
buffer_per_port_per_gbps = 5120.0
queues = [{{ ecn_threshold_bytes = 97500 }}]

[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.5
load_reference = "host_link"
destinations = "uniform"
duration_ms = {ms}

[run]
stop_ms = {ms}
sample_interval_us = 100
"""


def field(out: str, name: str) -> str:
    m = re.search(rf"^{re.escape(name)}\s+(.+)$", out, re.M)
    if m is None:
        raise RuntimeError(f"slacknet-sim printed no '{name}' line:\n{out}")
    return m.group(1)


def run_binary(binary: Path, path: Path, cwd: Path | None = None) -> tuple[float, float, str]:
    """Run `binary` (a `slacknet-sim`) on scenario `path`: wall seconds, CPU seconds (user +
    system of the child, from ``getrusage``) and its printout. RuntimeError if it fails, with the
    last lines it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([str(binary), str(path)], capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{binary} failed on {path} (exit {r.returncode}):\n  " + "\n  ".join(tail))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r.stdout


def run(path: Path, binary: Path = BIN) -> dict[str, float]:
    wall, cpu, out = run_binary(binary, path)
    return {
        "wall": wall,
        "cpu": cpu,
        "events": float(field(out, "events")),
        "hops": float(field(out, "packet-hops")),
        "flows": float(field(out, "flows").split()[0]),
        "mem": float(field(out, "peak memory").split()[0]),
    }


@interruptible
def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="bench/scale_table.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                error_prefix="bench-scale-table")
    ap.add_argument("--k", type=int, nargs="+", default=[4, 6, 8, 10, 12, 16],
                    help="fat-tree k values (even, 4-16; default 4 6 8 10 12 16)")
    ap.add_argument("--ms", type=float, nargs="+", default=[1.0, 2.0],
                    help="simulated milliseconds per run (default 1 2)")
    ap.add_argument("--binary", type=Path, default=BIN,
                    help="the slacknet-sim to time (default target/release/slacknet-sim; make PGO=1: target/pgo/slacknet-sim)")
    args = ap.parse_args(argv)
    for k in args.k:
        if k < 4 or k > 16 or k % 2:
            print(f"bench-scale-table: --k {k}: fat-tree k must be even and in 4-16, e.g. --k 4 8 16", file=sys.stderr)
            return 2
    for ms in args.ms:
        if not 0 < ms <= 100:
            print(f"bench-scale-table: --ms {ms}: simulated milliseconds must be in (0, 100], e.g. --ms 1 2", file=sys.stderr)
            return 2
    if not (args.binary.is_file() and os.access(args.binary, os.X_OK)):
        print(f"bench-scale-table: --binary {args.binary}: not an executable file; run `cargo build --release -p slacknet-sim` "
              "(or `make pgo` for target/pgo/slacknet-sim) first", file=sys.stderr)
        return 2
    print(f"binary: {args.binary}")
    print(f"one run at a time, one core each ({os.cpu_count()} cores here); fat-tree at 100 Gbit/s, web search at load 0.5")
    head = (f"{'k':>3} {'hosts':>6} {'sim ms':>7} {'flows':>7} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} "
            f"{'events':>11} {'pkt-hops':>11} {'events/s':>9} {'hops/s':>9} {'CPU ns/hop':>10}")
    print(head)
    per_hop: dict[int, list[float]] = {}
    with tempfile.TemporaryDirectory() as d:
        for k in args.k:
            for ms in args.ms:
                path = Path(d) / f"k{k}_{ms}.toml"
                path.write_text(SCENARIO.format(k=k, ms=ms))
                try:
                    r = run(path, args.binary)
                except RuntimeError as e:  # the run failed, or the binary is not a slacknet-sim
                    print(f"bench-scale-table: --binary {args.binary}: {str(e).rstrip()}", file=sys.stderr)
                    return 1
                ns = r["cpu"] / r["hops"] * 1e9 if r["hops"] else float("nan")
                per_hop.setdefault(k, []).append(ns)
                print(f"{k:>3} {k ** 3 // 4:>6} {ms:>7g} {r['flows']:>7.0f} {r['wall']:>8.2f} {r['cpu']:>8.2f} "
                      f"{r['mem']:>8.1f} {r['events']:>11.3e} {r['hops']:>11.3e} {r['events'] / r['cpu']:>9.2e} "
                      f"{r['hops'] / r['cpu']:>9.2e} {ns:>10.0f}", flush=True)
    allns = [x for xs in per_hop.values() for x in xs]
    lo, hi = min(allns), max(allns)
    print(f"CPU per packet-hop: {lo:.0f}-{hi:.0f} ns across sizes ({hi / lo:.2f}x spread); "
          f"predict a run's CPU seconds as packet-hops x that (events/s and hops/s above are per CPU second)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
