"""Where is the shared buffer really contended? A measured map for Credence (issue 9).

Credence (NSDI'24) can only beat Complete Sharing when push-out matters: when LQD pushes packets
out, and Complete Sharing, which cannot, drops packets that LQD would have kept (incast bursts
arriving at a buffer that long flows have filled). This script measures, instead of guessing,
where that happens on the reduced Credence topology (experiments/credence/base_reduced.toml:
2 leaves x 16 servers, 10 Gb/s, web search + incast from the other leaf), for

    transport      DCTCP (K = 10 packets) and NewReno (loss-based, no ECN)
    load           web-search load of the leaf uplinks
    burst          incast response as a fraction of the leaf's buffer
    buffer         buffer per port per Gbps (bytes)
    qps            incast queries per second per server (how many incasts overlap)

and, at each point, the five admission policies DT, CS, LQD, Credence (the oracle given by
--model, default the built-in forest) and Credence with an always-accept oracle (the
prediction-free baseline of the paper's robustness bound).

The grid is not a full product (288 points x 5 policies would take most of an hour on one
core); it is two stages, both with a fixed seed:

    oat     one factor at a time around the reduced base (load 0.4, burst 0.5, 5.12 KB, 4/s),
            for each transport;
    corner  the product of the stressed values: load {0.8, 0.9} x burst {1.0, 2.0} x
            buffer {2.56 KB, 5.12 KB} x qps {16, 64}, for each transport.

A point is *contended* when both hold:

    * LQD pushes out at least 1 packet in 10,000 leaf arrivals (push-out happens), and
    * CS's mean incast slowdown is at least 1.25x LQD's (Complete Sharing loses bursts that
      push-out keeps). The mean, not the p95: with a 10 ms minimum RTO an incast p95 mostly
      says whether 5% of the flows had a timeout, and is the same for every policy once they do.

At a contended point, the value of the predictions is the gap between Credence(always accept)
and Credence: ``pred_gain`` = 1 - Credence / always-accept (mean incast slowdown; positive:
the predictions help).

    python bench/credence_regime.py                       # both stages (about 4.5 min on one core)
    python bench/credence_regime.py --stage oat           # 40 s
    python bench/credence_regime.py --model experiments/credence/credence_forest_contended.json

Every run's metrics go to --out (default results/credence_regime/grid.csv), rewritten whole after
each run; points already in that file with the same settings are not run again, so an
interrupted map (Ctrl-C: one line, ``interrupted``, and exit code 130) resumes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import slacknet
from slacknet.sweep import run_metrics

_BENCH = str(Path(__file__).resolve().parent)  # bench/: _cli (on the path when run as a script)
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
from _cli import interruptible  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "experiments" / "credence" / "base_reduced.toml"

CENTER = {"transport": "dctcp", "load": 0.4, "burst": 0.5, "buffer": 5120.0, "qps": 4.0}
OAT_VALUES = {
    "load": [0.4, 0.6, 0.8, 0.9],
    "burst": [0.5, 1.0, 1.5, 2.0],
    "buffer": [2560.0, 5120.0, 10240.0],
    "qps": [4.0, 16.0, 64.0],
}
CORNER_VALUES = {
    "load": [0.8, 0.9],
    "burst": [1.0, 2.0],
    "buffer": [2560.0, 5120.0],
    "qps": [16.0, 64.0],
}
TRANSPORTS = ["dctcp", "newreno"]
POLICIES = ["DT", "CS", "LQD", "Credence", "Cr(accept)"]

#: Thresholds of the definition of "contended" (module docs).
PUSHOUT_PER_1E4 = 1.0
CS_OVER_LQD = 1.25


def points(stage: str, transports: list[str]) -> list[dict[str, Any]]:
    """The grid points of a stage, in order, without repeats."""
    out: list[dict[str, Any]] = []
    if stage in ("oat", "all"):
        for tr in transports:
            for axis, values in OAT_VALUES.items():
                for v in values:
                    out.append({**CENTER, "transport": tr, axis: v})
    if stage in ("corner", "all"):
        for tr in transports:
            keys = list(CORNER_VALUES)
            for combo in itertools.product(*CORNER_VALUES.values()):
                out.append({**CENTER, "transport": tr, **dict(zip(keys, combo))})
    seen, unique = set(), []
    for p in out:
        k = tuple(sorted(p.items()))
        if k not in seen:
            seen.add(k)
            unique.append(p)
    return unique


def admission(policy: str, model: str | None) -> dict[str, Any]:
    if policy == "DT":
        return {"policy": "dynamic_thresholds"}
    if policy == "CS":
        return {"policy": "complete_sharing"}
    if policy == "LQD":
        return {"policy": "lqd"}
    if policy == "Credence":
        return {"policy": "credence"} if model is None else {
            "policy": "credence", "oracle": {"kind": "forest", "path": model}}
    if policy == "Cr(accept)":
        return {"policy": "credence", "oracle": {"kind": "always_accept"}}
    raise ValueError(policy)


def scenario(point: dict[str, Any], policy: str, ms: float, seed: int, model: str | None) -> slacknet.Scenario:
    """The reduced base with this point's settings and policy; the workloads last ``ms`` and the
    run stops 100 ms later (ten minimum RTOs), so that late flows are counted as unfinished."""
    tree = json.loads(slacknet.Scenario.from_toml(BASE).to_json())
    tree["seed"] = seed
    if point["transport"] != "dctcp":
        tcp = {k: v for k, v in tree["transport"].items() if k not in ("kind", "g", "init_alpha")}
        tree["transport"] = {"kind": point["transport"], **tcp}
    tree["switch"]["buffer_per_port_per_gbps"] = point["buffer"]
    tree["switch"]["admission"] = admission(policy, model)
    web, incast = tree["workload"]
    web["load"] = point["load"]
    incast["burst_buffer_fraction"] = point["burst"]
    incast["query_rate_per_host"] = point["qps"]
    for w in (web, incast):
        w["duration_ms"] = ms
    tree.setdefault("run", {})["stop_ms"] = ms + 100.0
    return slacknet.Scenario.from_json_text(json.dumps(tree), ROOT)


def measure(sc: slacknet.Scenario) -> dict[str, float]:
    res = slacknet.run(sc)
    m = run_metrics(res)
    sw = res.switches
    leaf = sw[sw["tier"] == "leaf"]
    r = res.records
    inc = r["incast"].to_numpy(dtype=bool)
    pkts = np.ceil(r["size_bytes"].to_numpy(dtype=np.float64)[inc] / 1460.0).sum()
    fin = r["finished"].to_numpy(dtype=bool)
    sd = r["slowdown"].to_numpy(dtype=np.float64)
    return {
        "incast_mean": float(sd[inc & fin].mean()) if (inc & fin).any() else math.nan,
        "incast_p95": m["incast_p95"],
        "long_p95": m["long_p95"],
        "short_p95": m["short_p95"],
        "incast_rto_frac": m["incast_rto_frac"],
        "unfinished": m["unfinished"],
        "drops": m["drops"],
        "leaf_arrivals": float(leaf["arrivals"].sum()),
        "drops_admission": float(sw["drops_admission"].sum()),
        "drops_pushout": float(sw["drops_pushout"].sum()),
        "incast_retx_frac": float(r["retx_segments"].to_numpy()[inc].sum() / pkts) if pkts else math.nan,
        "oracle_drops": float(sw["credence_oracle_drops"].sum()),
        "oracle_accepts": float(sw["credence_oracle_accepts"].sum()),
        "safeguard_accepts": float(sw["credence_safeguard_accepts"].sum()),
        "threshold_drops": float(sw["credence_threshold_drops"].sum()),
        "wall_s": m["wall_s"],
    }


def key_of(point: dict[str, Any], policy: str, ms: float, seed: int, model: str | None) -> str:
    return json.dumps({**point, "policy": policy, "ms": ms, "seed": seed, "model": model or "builtin"}, sort_keys=True)


def write_csv(df: pd.DataFrame, out: Path) -> None:
    """Write ``df`` to ``out`` whole: beside it under another name, then renamed over it, so that
    a write cut short (Ctrl-C, a full disk) leaves the last whole grid, never a truncated one
    that the next run would resume from."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        df.to_csv(tmp, index=False)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def run_grid(pts: list[dict[str, Any]], ms: float, seed: int, model: str | None, out: Path) -> pd.DataFrame:
    done = pd.read_csv(out) if out.exists() else pd.DataFrame()
    known = set(done["key"]) if len(done) else set()
    rows = done.to_dict("records") if len(done) else []
    total = len(pts) * len(POLICIES)
    n = 0
    for p in pts:
        for pol in POLICIES:
            n += 1
            k = key_of(p, pol, ms, seed, model)
            if k in known:
                continue
            t = time.perf_counter()
            m = measure(scenario(p, pol, ms, seed, model))
            rows.append({"key": k, **p, "policy": pol, "ms": ms, "seed": seed, **m})
            known.add(k)
            print(f"[{n}/{total}] {p} {pol}: incast mean {m['incast_mean']:.1f} "
                  f"({time.perf_counter() - t:.1f} s)", file=sys.stderr, flush=True)
            write_csv(pd.DataFrame(rows), out)
    df = pd.DataFrame(rows)
    keys = {key_of(p, pol, ms, seed, model) for p in pts for pol in POLICIES}
    return df[df["key"].isin(keys)]


def table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per point: mean incast slowdown per policy (``inc:``; it counts timeouts in
    proportion, where a p95 only says whether 5% of the flows had one), the fraction of incast
    flows with a timeout (``rto:``), p95 of long flows, LQD's push-outs per 10,000 leaf
    arrivals, drops, Credence's oracle drops and the share of its decisions made by the
    safeguard, and the verdicts."""
    rows = []
    for (tr, load, burst, buf, qps), g in df.groupby(["transport", "load", "burst", "buffer", "qps"], sort=False):
        by = {r["policy"]: r for r in g.to_dict("records")}
        lqd, cs, cr, acc = by["LQD"], by["CS"], by["Credence"], by["Cr(accept)"]
        push = 1e4 * lqd["drops_pushout"] / max(lqd["leaf_arrivals"], 1.0)
        contended = push >= PUSHOUT_PER_1E4 and cs["incast_mean"] >= CS_OVER_LQD * lqd["incast_mean"]
        decided = cr["oracle_drops"] + cr["oracle_accepts"] + cr["threshold_drops"] + cr["safeguard_accepts"]
        rows.append({
            "tr": "dctcp" if tr == "dctcp" else "reno",
            "load": load, "burst": burst, "KB/p/G": buf / 1000, "qps": qps,
            **{f"inc:{p}": by[p]["incast_mean"] for p in POLICIES},
            **{f"rto:{p}": by[p]["incast_rto_frac"] for p in POLICIES},
            "long95:CS": cs["long_p95"], "long95:LQD": lqd["long_p95"], "long95:Cr": cr["long_p95"],
            "push/1e4": push,
            "drops:CS": cs["drops"], "drops:LQD": lqd["drops"], "drops:Cr": cr["drops"],
            "orc_drops": cr["oracle_drops"],
            "safeg%": 100 * cr["safeguard_accepts"] / decided if decided else math.nan,
            "contended": contended,
            "pred_gain": 1 - cr["incast_mean"] / acc["incast_mean"],
        })
    return pd.DataFrame(rows)


@interruptible
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stage", choices=["oat", "corner", "all"], default="all")
    ap.add_argument("--ms", type=float, default=100.0, help="workload duration (ms); default 100")
    ap.add_argument("--seed", type=int, default=21, help="the evaluation seed (default 21, the base's)")
    ap.add_argument("--transport", choices=TRANSPORTS, action="append",
                    help="only this transport (repeatable; default: all)")
    ap.add_argument("--model", default=None, help="Credence's forest JSON (default: the built-in model)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "credence_regime" / "grid.csv")
    a = ap.parse_args(argv)
    model = None if a.model is None else str(Path(a.model).resolve())
    df = run_grid(points(a.stage, a.transport or TRANSPORTS), a.ms, a.seed, model, a.out)
    t = table(df)
    with pd.option_context("display.max_rows", None, "display.width", 250, "display.max_columns", None,
                           "display.float_format", lambda v: f"{v:.3g}"):
        print(t.to_string(index=False))
    c = t[t["contended"]]
    print(f"\n{len(c)} of {len(t)} points contended (LQD push-outs >= {PUSHOUT_PER_1E4:g} per 10^4 leaf "
          f"arrivals and CS mean incast slowdown >= {CS_OVER_LQD:g} x LQD's)")
    for tr, g in c.groupby("tr"):
        print(f"  {tr}: {len(g)} contended; predictions help (pred_gain > 0.1) at {(g['pred_gain'] > 0.1).sum()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
