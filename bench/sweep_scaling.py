"""`make bench-sweep`: how many runs an hour a sweep gets from this machine's cores, and what a
Dask cluster adds per run (issue 15's "a sweep uses every core"; DESIGN.md's scaling out).

One sweep of ``--runs`` runs (a 64-host leaf-spine, web search at load 0.5 plus incast, for
``--ms`` milliseconds, one run per seed) is run three ways, each into a new folder, one after
the other: by one local worker process (``jobs = 1``), by one per core (``jobs = cores``), and
on a Dask cluster of one single-threaded worker process per core on this machine, reached by
its scheduler's address as a cluster of other machines would be (``--cluster``; each run's
results travel back and are saved by the sweep's process). Per way: wall seconds, runs per
hour, the speed-up over one worker and its efficiency (speed-up / workers); for the cluster,
its wall time over the local pool's and the seconds that adds per run, the scheduler's start
not counted (printed apart), and the size of one run's results as sent (pickled). The three
tables must agree on every metric but ``wall_s`` (else exit 1: a bug).
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The cluster's processes log each connection closed at shutdown as an error with its traceback;
# the benchmark's output is its table (set before distributed is imported; workers inherit it).
os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")

_BENCH = str(Path(__file__).resolve().parent)  # bench/: _cli (on the path when run as a script)
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
from _cli import Parser, interruptible, positive_int  # noqa: E402

BASE = """\
name = "bench_sweep_base"
seed = 1

[topology]
kind = "leaf_spine"
leaves = 4
hosts_per_leaf = 16
spines = 4
host_rate_gbps = 10.0
fabric_rate_gbps = 40.0

[switch]
buffer_bytes = 1000000
queues = [{{ ecn_threshold_bytes = 65000 }}]

[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.5
duration_ms = {ms}

[[workload]]
kind = "incast"
query_rate_per_host = 50
fan_in = 8
burst_bytes = 200000
duration_ms = {ms}
"""

SWEEP = """\
name = "bench_sweep"
base = "base.toml"
seeds = {seeds}
"""


def _sweep(folder: Path, runs: int, ms: float) -> Path:
    (folder / "base.toml").write_text(BASE.format(ms=ms))
    path = folder / "sweep.toml"
    path.write_text(SWEEP.format(seeds=list(range(1, runs + 1))))
    return path


def _timed(sweep_path: Path, out: Path, **kw: Any) -> tuple[float, Any]:
    from slacknet.sweep import load_sweep, run_sweep

    t0 = time.perf_counter()
    table = run_sweep(load_sweep(sweep_path), out, **kw)
    wall = time.perf_counter() - t0
    failed = table[table["status"] != "ok"]
    if len(failed):
        raise RuntimeError(f"{len(failed)} runs failed: {failed.iloc[0]['error']}")
    return wall, table


@interruptible
def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="bench/sweep_scaling.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                error_prefix="bench-sweep")
    ap.add_argument("--runs", type=str, default=None, help="runs in the sweep (default: 4 per core)")
    ap.add_argument("--ms", type=float, default=40.0, help="simulated milliseconds of arrivals per run (default 40)")
    ap.add_argument("--no-dask", action="store_true", help="leave the Dask cluster out")
    args = ap.parse_args(argv)
    cores = os.cpu_count() or 1
    runs = 4 * cores if args.runs is None else positive_int(args.runs)
    if runs is None or runs > 10_000:
        ap.error(f"--runs {args.runs}: a whole number of runs from 1 to 10000, e.g. --runs 8")
    if not 0 < args.ms <= 1000:
        ap.error(f"--ms {args.ms}: simulated milliseconds in (0, 1000], e.g. --ms 40")
    import pandas as pd

    from slacknet import Results

    rows: list[tuple[str, int, float]] = []
    with tempfile.TemporaryDirectory() as d:
        sweep_path = _sweep(Path(d), runs, args.ms)
        print(f"sweep: {runs} runs (64-host leaf-spine, web search at load 0.5 plus incast, {args.ms:g} ms each), "
              f"{cores} cores here")
        one, t1 = _timed(sweep_path, Path(d) / "one", jobs=1)
        rows.append(("local, 1 worker", 1, one))
        many, tn = _timed(sweep_path, Path(d) / "all", jobs=cores)
        rows.append((f"local, {cores} workers", cores, many))
        tables = [t1, tn]
        cluster_line = ""
        if not args.no_dask:
            try:
                from distributed import LocalCluster
            except ImportError:
                print("bench-sweep: dask.distributed is not installed (pip install 'slacknet[cluster]'): the cluster "
                      "is left out", file=sys.stderr)
            else:
                t0 = time.perf_counter()
                with LocalCluster(n_workers=cores, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as lc:
                    start = time.perf_counter() - t0
                    dask, td = _timed(sweep_path, Path(d) / "dask", cluster=lc.scheduler_address)
                rows.append((f"Dask cluster, {cores} workers", cores, dask))
                tables.append(td)
                sent = len(pickle.dumps(Results.load(Path(d) / "dask" / str(td["variant"].iloc[0]))))
                cluster_line = (f"Dask: {dask / many:.2f}x the local pool's wall time, {(dask - many) / runs * 1000:+.0f} ms "
                                f"per run; its scheduler and workers started in {start:.1f} s (not counted); one run's "
                                f"results sent back: {sent / 1e6:.2f} MB")
        cols = [c for c in t1.columns if c != "wall_s"]
        for t in tables[1:]:
            try:
                pd.testing.assert_frame_equal(t[cols], t1[cols])
            except AssertionError as e:
                print(f"bench-sweep: the sweeps' tables differ beyond wall_s (a bug): {str(e).splitlines()[0]}",
                      file=sys.stderr)
                return 1
        cpu = float(t1["wall_s"].sum())
        print(f"one run: {cpu / runs:.2f} s of simulation on average (the runs' own wall_s, one worker)")
        print(f"{'how':<28} {'workers':>7} {'wall s':>8} {'runs/hour':>10} {'speed-up':>9} {'efficiency':>10}")
        for name, workers, wall in rows:
            print(f"{name:<28} {workers:>7} {wall:>8.2f} {runs / wall * 3600:>10.0f} {one / wall:>8.2f}x "
                  f"{one / wall / workers:>9.0%}")
        if cluster_line:
            print(cluster_line)
        print("every table identical but wall_s: yes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
