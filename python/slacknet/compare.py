"""Side-by-side runs of one flow list in slacknet and in a reference simulator (ns-3.44).

``slacknet compare SCENARIO`` takes a leaf-spine scenario, writes its flows as a flow list
(or uses the scenario's own ``flow_list``), replays exactly that list in slacknet and in our
ns-3 program (``bench/peers/ns3/``, which installs ns-3 into a private environment on first
use), and reports per simulator: finished flows, p50/p95/p99 slowdown for short (< 100 KB),
long (>= 1 MB) and incast flows, drops, wall time and the ratio ns-3 / slacknet. It also
writes a CDF plot of both.

Both simulators' slowdowns are divided by the *same* ideal FCT: slacknet's closed form for the
scenario (``ideal_fct_ps``), so a ratio of slowdowns is a ratio of FCTs.

The ns-3 side needs a source checkout: nothing here is needed to install or test slacknet.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .analysis import class_masks
from .config import FlowListWorkload, LeafSpineTopology, Scenario, StaticPartitioning, load_scenario
from .results import Results

__all__ = ["CompareError", "Comparison", "compare", "ns3peer_path", "read_peer_fct", "render"]

#: Classes compared (``all`` is reported too).
CLASSES = ("short", "long", "incast", "all")


class CompareError(ValueError):
    """The comparison cannot run: unsupported scenario, no checkout, or the peer failed."""


def ns3peer_path() -> Path:
    """``bench/peers/ns3/ns3peer.py`` of the source checkout this package runs from."""
    root = Path(__file__).resolve().parents[2]
    p = root / "bench" / "peers" / "ns3" / "ns3peer.py"
    if not p.is_file():
        raise CompareError(
            f"the ns-3 peer harness is not here ({p}): `slacknet compare` needs a source "
            "checkout of slacknet installed with `make install` (pip install -e .)"
        )
    return p


def read_peer_fct(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a peer FCT file (``id src dst start_s size_bytes incast fct_ns ideal_ns slowdown``,
    ``fct_ns = -1`` for unfinished flows) as a DataFrame."""
    cols = ["id", "src", "dst", "start_s", "size_bytes", "incast", "fct_ns", "ideal_ns", "slowdown"]
    df = pd.read_csv(path, sep=r"\s+", comment="#", header=None, names=cols)
    df["incast"] = df["incast"].astype(bool)
    df["finished"] = df["fct_ns"] >= 0
    return df


@dataclass
class Comparison:
    """The outcome of :func:`compare`."""

    scenario: str
    table: pd.DataFrame
    """Rows: metric; columns ``slacknet``, ``ns-3``, ``ratio`` (ns-3 / slacknet)."""
    slacknet: pd.DataFrame
    """slacknet records of the flows (with ``slowdown``)."""
    ns3: pd.DataFrame
    """ns-3 records of the same flows, slowdown against slacknet's ideal FCT."""
    wall_s: dict[str, float] = field(default_factory=dict)
    peak_rss_mb: dict[str, float | None] = field(default_factory=dict)
    only_finished_in: dict[str, list[int]] = field(default_factory=dict)
    out_dir: Path | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "scenario": self.scenario,
            "table": json.loads(self.table.to_json(orient="index")),
            "wall_s": self.wall_s,
            "peak_rss_mb": self.peak_rss_mb,
            "only_finished_in": self.only_finished_in,
        }


def _stats(df: pd.DataFrame) -> dict[str, float]:
    out: dict[str, float] = {}
    finished = df["finished"].to_numpy(dtype=bool)
    sd = df["slowdown"].to_numpy(dtype=np.float64)
    for name, mask in class_masks(df).items():
        v = sd[mask & finished]
        out[f"{name}: flows"] = float(mask.sum())
        out[f"{name}: finished"] = float((mask & finished).sum())
        for q in (50, 95, 99):
            out[f"{name}: p{q} slowdown"] = float(np.percentile(v, q)) if v.size else math.nan
    return out


def _peer_args(sc: Scenario, ecmp_seed: int | None = None) -> list[str]:
    """dc_bench runner flags for ``sc``; ``ecmp_seed`` (mode ``ecmp`` only) seeds ns-3's hash."""
    t = sc.topology
    if not isinstance(t, LeafSpineTopology):
        raise CompareError("the ns-3 peer models leaf-spine topologies only (topology.kind = leaf_spine)")
    if t.links_per_spine != 1 or t.host_rate_gbps != t.fabric_rate_gbps or t.host_delay_ns != t.fabric_delay_ns:
        raise CompareError(
            "the ns-3 peer models one link per leaf-spine pair and one rate and delay everywhere"
        )
    adm = sc.switch.admission
    port_bytes = adm.port_bytes if isinstance(adm, StaticPartitioning) else None
    if port_bytes is None:
        raise CompareError(
            "the ns-3 peer has static per-port buffers: use profile = \"ns3_compat\" or "
            "switch.admission = { policy = \"static\", port_bytes = N }"
        )
    k_bytes = sc.switch.queues[0].ecn_threshold_bytes
    pkt = sc.transport.mss_bytes + sc.transport.header_bytes
    if k_bytes is None:
        raise CompareError("the ns-3 peer marks ECN: set switch.queues[0].ecn_threshold_bytes")
    args = [
        "--leaves", str(t.leaves),
        "--hosts-per-leaf", str(t.hosts_per_leaf),
        "--spines", str(t.spines),
        "--rate-gbps", repr(float(t.host_rate_gbps)),
        "--delay-ns", str(t.host_delay_ns),
        "--buffer-per-port-bytes", str(port_bytes),
        "--ecn-k-pkts", str(max(1, round(k_bytes / pkt))),
    ]
    if sc.run.stop_ms is not None:
        args += ["--stop-s", repr(sc.run.stop_ms / 1e3)]
    if sc.routing.mode == "flow_index":
        # The same path for every flow in both simulators: spine = flow id mod spines.
        args += ["--ecmp-seed", "0", "--", "--ecmp=flowid"]
    elif sc.routing.mode != "ecmp":
        raise CompareError("the ns-3 peer routes per flow: routing.mode must be ecmp or flow_index")
    elif ecmp_seed is not None:
        args += ["--ecmp-seed", str(ecmp_seed)]
    if sc.run.fct_at != "receiver":
        args += ([] if "--" in args else ["--"]) + ["--fctAt=sender"]
    return args


def compare(
    scenario: Scenario | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    python: str | None = None,
) -> Comparison:
    """Replay one flow list in slacknet and ns-3 and compare them (see the module docs)."""
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    peer_args = _peer_args(sc)
    peer = ns3peer_path()
    flows = _flow_list(sc, out)
    cmp = _compare_once(sc, flows, out, peer_args, peer, python)
    (out / "comparison.json").write_text(json.dumps(cmp.to_json(), indent=2) + "\n", encoding="utf-8")
    plot_comparison(cmp, out / "compare_cdf.png")
    return cmp


def _flow_list(sc: Scenario, out: Path) -> Path:
    """One flow list for both simulators: the scenario's own, or its generated flows."""
    if len(sc.workload) == 1 and isinstance(sc.workload[0], FlowListWorkload):
        return Path(sc.workload[0].path)
    from . import _native

    sim = _native.Simulation(_native.resolve_json(sc.to_json(), str(Path.cwd())))
    flows = out / "flows.txt"
    flows.write_text(sim.flow_list_text(), encoding="utf-8")
    return flows


def _compare_once(
    sc: Scenario, flows: Path, out: Path, peer_args: list[str], peer: Path, python: str | None
) -> Comparison:
    """Run ``flows`` under ``sc`` in slacknet and under ``peer_args`` in ns-3, into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    replay = sc.model_copy(update={"workload": [FlowListWorkload(path=str(flows.resolve()))]})

    # slacknet runs in a child process like ns-3 does, so both peak memories are measured the
    # same way (the child's maximum resident set, interpreter included).
    replay_json = out / "slacknet_scenario.json"
    replay_json.write_text(replay.to_json(indent=2) + "\n", encoding="utf-8")
    me_cmd = [python or sys.executable, "-m", "slacknet.cli", "run", str(replay_json),
              "--out", str(out / "slacknet"), "--no-plot", "--no-progress"]
    rc, me_out, me_rss = _run_measured(me_cmd)
    if rc != 0:
        raise CompareError("the slacknet run failed:\n  " + "\n  ".join(me_out.strip().splitlines()[-5:]))
    res = Results.load(out / "slacknet")
    mine = res.records.copy()

    ns3_out = out / "ns3_fct.txt"
    cmd = [python or sys.executable, str(peer), "run", "--flows", str(flows.resolve()), "--out", str(ns3_out), *peer_args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise CompareError("the ns-3 run failed:\n  " + "\n  ".join(tail))
    info = _last_json_line(proc.stdout)
    theirs = read_peer_fct(ns3_out)

    # Same ideal for both: slacknet's closed form, joined by flow id.
    ideal = mine.set_index("id")["ideal_fct_ps"]
    theirs = theirs.set_index("id").join(ideal, how="left").reset_index()
    theirs["slowdown"] = np.where(
        theirs["finished"], theirs["fct_ns"] * 1e3 / theirs["ideal_fct_ps"], np.nan
    )

    a, b = _stats(mine), _stats(theirs)
    rows = {k: {"slacknet": a[k], "ns-3": b[k]} for k in a}
    drops = float(res.summary.get("switch_drops", 0) + res.summary.get("nic_drops", 0))
    rows["drops (packets)"] = {"slacknet": drops, "ns-3": float(info.get("drops", math.nan))}
    wall_me = float(res.summary["wall_time_s"])
    wall_ns3 = float(info["wall_s"])
    rows["wall time (s)"] = {"slacknet": wall_me, "ns-3": wall_ns3}
    rows["events"] = {"slacknet": float(res.summary["events"]), "ns-3": float(info.get("events", math.nan))}
    rows["events/s"] = {"slacknet": float(res.summary["events_per_s"]),
                        "ns-3": float(info.get("events", math.nan)) / wall_ns3}
    rows["packet-hops/s"] = {"slacknet": float(res.summary["packet_hops_per_s"]), "ns-3": math.nan}
    # Whole processes: slacknet's includes the Python interpreter with pandas and pyarrow
    # (about 130 MB before the simulation allocates anything; `make bench` shows the
    # simulator's own peak).
    rows["peak memory (MB)"] = {"slacknet": me_rss, "ns-3": float(info.get("peak_rss_mb") or math.nan)}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table["ratio"] = table["ns-3"] / table["slacknet"]

    fin_me = set(mine.loc[mine["finished"], "id"])
    fin_ns3 = set(theirs.loc[theirs["finished"], "id"])
    return Comparison(
        scenario=sc.name,
        table=table,
        slacknet=mine,
        ns3=theirs,
        wall_s={"slacknet": wall_me, "ns-3": wall_ns3},
        peak_rss_mb={"slacknet": me_rss, "ns-3": info.get("peak_rss_mb")},
        only_finished_in={
            "slacknet": sorted(int(i) for i in fin_me - fin_ns3),
            "ns-3": sorted(int(i) for i in fin_ns3 - fin_me),
        },
        out_dir=out,
    )


def _run_measured(cmd: list[str]) -> tuple[int, str, float]:
    """Run ``cmd``; return its exit status, combined output and peak RSS in MB."""
    import tempfile

    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        text = log.read()
    return proc.returncode, text, usage.ru_maxrss / 1024.0


def _last_json_line(text: str) -> dict[str, Any]:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                v = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(v, dict):
                return v
    raise CompareError(f"the ns-3 runner printed no result line:\n{text[-500:]}")


def plot_comparison(cmp: Comparison, path: str | os.PathLike[str]) -> Path:
    """Slowdown CDFs per class, slacknet (solid) and ns-3 (dashed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    colors = {"short": "tab:blue", "long": "tab:orange", "incast": "tab:green", "all": "black"}
    for who, df, style in (("slacknet", cmp.slacknet, "-"), ("ns-3", cmp.ns3, "--")):
        fin = df["finished"].to_numpy(dtype=bool)
        sd = df["slowdown"].to_numpy(dtype=np.float64)
        for name, mask in class_masks(df).items():
            v = np.sort(sd[mask & fin])
            if v.size == 0:
                continue
            y = np.arange(1, v.size + 1) / v.size
            ax.step(v, y, where="post", linestyle=style, color=colors[name], label=f"{who} {name}")
    ax.set_xscale("log")
    ax.set_xlabel("FCT slowdown (FCT / slacknet ideal FCT)")
    ax.set_ylabel("CDF")
    ax.set_title(f"{cmp.scenario}: slacknet (solid) vs ns-3.44 (dashed)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    p = Path(path)
    fig.savefig(p, dpi=120)
    return p


def render(cmp: Comparison) -> str:
    """The comparison table as aligned text."""
    lines = [f"{'metric':<28}{'slacknet':>12}{'ns-3':>12}{'ns-3/slacknet':>15}"]
    for metric, row in cmp.table.iterrows():
        def fmt(x: float, is_ratio: bool = False) -> str:
            if isinstance(x, float) and math.isnan(x):
                return "n/a"
            if not is_ratio and str(metric).endswith(("flows", "finished", "(packets)", "(MB)")):
                return f"{x:.0f}"
            if abs(x) >= 1e5:
                return f"{x:.3g}"
            return f"{x:.3f}"

        lines.append(f"{str(metric):<28}{fmt(row['slacknet']):>12}{fmt(row['ns-3']):>12}{fmt(row['ratio'], True):>15}")
    diff = cmp.only_finished_in
    lines.append(
        f"flows finished only in slacknet: {len(diff.get('slacknet', []))}, only in ns-3: {len(diff.get('ns-3', []))}"
    )
    return "\n".join(lines)
