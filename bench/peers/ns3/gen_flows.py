#!/usr/bin/env python3
"""Quick flow-list generator for scaling runs of the ns-3 peer (stdlib only).

Poisson arrivals per server, destination uniform over the servers of the
other leaves, sizes drawn from the empirical (non-incast) sizes of an
existing flow list (e.g. the websearch lists in shared/data/peer-bench).
The per-server arrival rate is set so that the offered load, relative to a
leaf's uplink capacity (spines x rate), equals --load, as in the
peer-bench README (load 0.4 -> 73.05 flows/s per server for the websearch mix
at 16 servers, 4 spines, 10 Gb/s).

    python bench/peers/ns3/gen_flows.py --sizes-from FLOWS.txt --leaves 16 \
        --hosts-per-leaf 16 --spines 4 --window-s 0.05 --out flows_L16.txt
"""

from __future__ import annotations

import errno
import math
import os
import random
import sys
from pathlib import Path
from typing import NoReturn

_BENCH = str(Path(__file__).resolve().parents[2])  # bench/, for _cli
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
import _cli  # noqa: E402


def die(msg: str) -> NoReturn:
    _cli.die("gen_flows", msg)


def read_sizes(path: str) -> list[int]:
    """The non-incast sizes of flow list `path`; exits 2 naming the file and line if it cannot."""
    sizes = []
    try:
        with open(path) as fh:
            for n, line in enumerate(fh, 1):
                if line.startswith("#") or not line.strip():
                    continue
                f = line.split()
                try:
                    size, incast = int(f[4]), int(f[5])
                except (IndexError, ValueError):
                    die(f"--sizes-from {path}: line {n}: {line.strip()!r} is not `id src dst start_s size_bytes "
                        "incast`; give a flow list such as shared/data/peer-bench's")
                if size <= 0:
                    die(f"--sizes-from {path}: line {n}: size {size} B; flow sizes must be at least 1 B")
                if incast == 0:
                    sizes.append(size)
    except (OSError, UnicodeDecodeError) as e:
        die(f"--sizes-from {path}: cannot read it ({getattr(e, 'strerror', None) or e}); give a flow list file")
    return sizes


@_cli.interruptible
def main(argv: list[str] | None = None) -> None:
    ap = _cli.Parser(prog="gen_flows.py", description=__doc__.split("\n\n")[0], error_prefix="gen_flows")
    ap.add_argument("--sizes-from", required=True, help="flow list whose non-incast sizes are resampled")
    ap.add_argument("--leaves", type=int, default=16)
    ap.add_argument("--hosts-per-leaf", type=int, default=16)
    ap.add_argument("--spines", type=int, default=4)
    ap.add_argument("--rate-gbps", type=float, default=10.0)
    ap.add_argument("--load", type=float, default=0.4)
    ap.add_argument("--window-s", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    # Every destination is on another leaf, so one leaf would never find one; a load or rate of
    # 0 (or NaN) has no arrival rate, and a negative one would step time backwards for ever.
    if a.leaves < 2:
        die(f"--leaves {a.leaves}: give at least 2 (destinations are on the other leaves)")
    for name, v in (("--hosts-per-leaf", a.hosts_per_leaf), ("--spines", a.spines)):
        if v < 1:
            die(f"{name} {v}: give at least 1")
    for name, x in (("--rate-gbps", a.rate_gbps), ("--load", a.load), ("--window-s", a.window_s)):
        if not (math.isfinite(x) and x > 0):
            die(f"{name} {x}: give a positive number")
    sizes = read_sizes(a.sizes_from)
    if not sizes:
        die(f"--sizes-from {a.sizes_from}: no non-incast flows to take sizes from; give a flow list with some")
    mean = sum(sizes) / len(sizes)
    uplink_bps = a.spines * a.rate_gbps * 1e9
    lam = a.load * uplink_bps / (a.hosts_per_leaf * mean * 8)  # flows/s per server
    rng = random.Random(a.seed)
    n = a.leaves * a.hosts_per_leaf
    flows = []
    for src in range(n):
        t = rng.expovariate(lam)
        while t < a.window_s:
            while True:
                dst = rng.randrange(n)
                if dst // a.hosts_per_leaf != src // a.hosts_per_leaf:
                    break
            flows.append((t, src, dst, rng.choice(sizes)))
            t += rng.expovariate(lam)
    flows.sort()
    # Written beside --out under another name, then renamed: a run cut short (Ctrl-C, a full
    # disk) leaves no flow list that looks whole.
    cannot = f"--out {a.out}: cannot write it ({{}}); give a file in an existing folder"
    if a.out.endswith(os.sep) or os.path.isdir(a.out):  # what opening it would say
        die(cannot.format(os.strerror(errno.EISDIR)))
    tmp = Path(f"{a.out}.{os.getpid()}.tmp")
    try:
        fh = open(tmp, "w")
    except OSError as e:
        die(cannot.format(e.strerror))
    try:
        with fh:
            fh.write(
                f"# id src dst start_s size_bytes incast | gen_flows.py sizes-from={a.sizes_from} "
                f"L={a.leaves} S={a.hosts_per_leaf} spines={a.spines} rate={a.rate_gbps}G "
                f"load={a.load} rate_per_server={lam:.3f}/s window={a.window_s}s seed={a.seed}\n"
            )
            for i, (t, s, d, sz) in enumerate(flows):
                fh.write(f"{i} {s} {d} {t:.9f} {sz} 0\n")
        os.replace(tmp, a.out)
    except OSError as e:  # a full disk, say
        tmp.unlink(missing_ok=True)
        die(cannot.format(e.strerror))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    print(f"{len(flows)} flows, {lam:.2f} flows/s per server, mean size {mean:.0f} B -> {a.out}")


if __name__ == "__main__":
    sys.exit(main())
