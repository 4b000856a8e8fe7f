"""`make bench-collective`: rounds of `slacknet.collective`'s parameter-server all-reduce through a
congested bottleneck of the namespace testbed (root only): the bounded-loss ML paper's claim,
that waiting for a fraction p of each gradient instead of all of it cuts the rounds' tail.

Three hosts behind a switch whose ports run `slacknet net tc`'s queues at 200 Mbit/s. The
parameter server runs on host 1; ``--workers`` workers on host 0 each send a gradient of
``--values`` float32 values per round (a fixed random vector: the time, not the model, is
measured here) and wait for the aggregate; host 2 floods host 1's port with UDP at ``--flood``
Mbit/s (as `make bench-udp-lossy` does), so the gradients cross a port where the competing
traffic drops packets. For p = 1 (every value, a reliable transfer both ways) and each p of
``--p``, ``--rounds`` rounds: per round, the slowest worker's ``allreduce`` time (the round's
time as training sees it); prints the median, the 90th percentile and the largest, each
p's ratio to p = 1, and the share of the aggregates' values that did not arrive. With
``--tail-probe`` each p runs again with the transport's tail-loss probe on every endpoint
(``Endpoint(tail_probe=True)``; RFC 8985's, beyond the paper), its rows marked ``+probe``.

    python bench/collective_testbed.py [--workers 2] [--values 1000000] [--rounds 10]
                                       [--p 0.9,0.8] [--flood 150] [--tail-probe]
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from slacknet import testbed

_BENCH = str(Path(__file__).resolve().parent)  # bench/: _cli and udp_lossy (on the path when run as a script)
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
from _cli import Parser, interruptible, positive_int, stop  # noqa: E402

SERVER = """
import json, sys
from slacknet.collective import ParameterServer
from slacknet.net import Endpoint
addr, workers, p, rounds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
probe = sys.argv[5] == "1"
server = ParameterServer(Endpoint(addr + ":7100", tail_probe=probe), workers, p=p, deadline=300)
print("ready", flush=True)
for _ in range(rounds):
    server.serve_round(timeout=300)
print("done", flush=True)
"""

WORKER = """
import json, sys, time
import numpy as np
from slacknet.collective import Worker
from slacknet.net import Endpoint
me, server, p, rounds, n = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
probe = sys.argv[6] == "1"
w = Worker(Endpoint(me + ":0", tail_probe=probe), server + ":7100", p=p, deadline=300)
g = np.random.default_rng(int(time.time() * 1e6) % 2**32).standard_normal(n).astype(np.float32)
times, missing = [], []
for _ in range(rounds):
    t0 = time.monotonic()
    got = w.allreduce(g, timeout=300)
    times.append(time.monotonic() - t0)
    missing.append(float(got.missing.mean()))
print(json.dumps({"times": times, "missing": missing}), flush=True)
"""


def _p_list(text: str) -> list[float] | None:
    try:
        ps = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        return None
    return ps if ps and all(0 < p < 1 for p in ps) else None


def _case(tb: testbed.Testbed, d: Path, workers: int, values: int, rounds: int, p: float,
          probe: bool) -> dict[str, float]:
    """One p (with the tail-loss probe or not): ``rounds`` rounds; the slowest worker's time per
    round, and the missing share."""
    procs: list[subprocess.Popen[str]] = []
    flag = "1" if probe else "0"
    try:
        server = tb.python(1, d / "server.py", tb.address(1), str(workers), str(p), str(rounds), flag,
                           stdout=subprocess.PIPE)
        procs.append(server)
        said = server.stdout.readline().strip() if server.stdout else ""
        if said != "ready":
            raise RuntimeError(f"the server did not start (it said {said!r:.80}; its error, if any, is above)")
        ws = [tb.python(0, d / "worker.py", tb.address(0), tb.address(1), str(p), str(rounds), str(values), flag,
                        stdout=subprocess.PIPE) for _ in range(workers)]
        procs += ws
        outs = []
        for w in ws:
            out, _ = w.communicate(timeout=600)
            lines = (out or "").strip().splitlines()
            try:
                outs.append(json.loads(lines[-1]))
            except (IndexError, ValueError):
                raise RuntimeError(f"a worker at p = {p:g} failed (exit code {w.returncode}; its error, if any, "
                                   "is above)") from None
        server.communicate(timeout=60)
    finally:
        stop(*procs)
    per_round = [max(o["times"][r] for o in outs) for r in range(rounds)]
    missing = statistics.mean(m for o in outs for m in o["missing"])
    ranked = sorted(per_round)
    return {"median": statistics.median(per_round), "p90": ranked[min(len(ranked) - 1, math.ceil(0.9 * len(ranked)) - 1)],
            "max": ranked[-1], "missing": missing}


@interruptible
def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="bench/collective_testbed.py", description=__doc__.split("\n\n")[0],
                error_prefix="bench-collective")
    ap.add_argument("--workers", default="2", help="workers on host 0 (default 2)")
    ap.add_argument("--values", default="1000000", help="float32 values per gradient (default 1000000: 4 MB)")
    ap.add_argument("--rounds", default="10", help="rounds per case (default 10)")
    ap.add_argument("--p", default="0.9,0.8", help="completion fractions besides 1, comma-separated (default 0.9,0.8)")
    ap.add_argument("--flood", default="150", help="competing UDP in Mbit/s (default 150)")
    ap.add_argument("--tail-probe", action="store_true",
                    help="run each p again with the transport's tail-loss probe (rows marked +probe)")
    args = ap.parse_args(argv)
    # Checked before the testbed is built: a bad value would otherwise end in a traceback later.
    nums = {}
    for name, v in (("--workers", args.workers), ("--values", args.values), ("--rounds", args.rounds)):
        n = positive_int(v)
        if n is None:
            ap.error(f"{name} {v}: give a whole number, at least 1")
        nums[name] = n
    ps = _p_list(args.p)
    if ps is None:
        ap.error(f"--p {args.p}: give fractions in (0, 1), comma-separated, e.g. 0.9,0.8 (p = 1 always runs)")
    try:
        flood = float(args.flood)
    except ValueError:
        flood = math.nan
    if not (math.isfinite(flood) and flood >= 0):
        ap.error(f"--flood {args.flood}: give the competing UDP in Mbit/s, 0 or more")
    why = testbed.available()
    if why is not None:
        print(f"bench-collective: skipped: {why}", file=sys.stderr)
        return 0
    from udp_lossy import FLOOD  # the same competing traffic as bench-udp-lossy (bench/ is on the path)

    workers, values, rounds = nums["--workers"], nums["--values"], nums["--rounds"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, testbed.Testbed(hosts=3, rate="200mbit") as tb:
        d = Path(tmp)
        for name, text in (("server", SERVER), ("worker", WORKER), ("flood", FLOOD)):
            (d / f"{name}.py").write_text(textwrap.dedent(text))
        flooder = tb.python(2, d / "flood.py", tb.address(1), str(flood)) if flood > 0 else None
        try:
            for p in [1.0, *ps]:
                for probe in (False, True) if args.tail_probe else (False,):
                    try:
                        rows.append((f"{p:g}" + ("+probe" if probe else ""),
                                     _case(tb, d, workers, values, rounds, p, probe)))
                    except RuntimeError as e:
                        print(f"bench-collective: {e}", file=sys.stderr)
                        return 1
        finally:
            stop(flooder)
    print(f"{workers} workers on host 0, the server on host 1, {values * 4 / 1e6:g} MB gradients, through a "
          f"200 Mbit/s port flooded with {flood:g} Mbit/s of UDP; {rounds} rounds per case, each round the "
          "slowest worker's allreduce")
    print(f"{'p':<10} {'median':>10} {'p90':>10} {'max':>10} {'vs p = 1 (median, max)':>24} {'missing':>9}")
    base = rows[0][1]
    for p, r in rows:
        vs = f"{r['median'] / base['median']:.2f}x, {r['max'] / base['max']:.2f}x"
        print(f"{p:<10} {r['median'] * 1e3:>7.0f} ms {r['p90'] * 1e3:>7.0f} ms {r['max'] * 1e3:>7.0f} ms "
              f"{vs:>24} {r['missing']:>8.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
