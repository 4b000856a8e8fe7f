"""Side-by-side runs of one flow list in slacknet and in reference simulators (ns-3.44, UEC htsim).

``slacknet compare SCENARIO`` takes a leaf-spine scenario, writes its flows as a flow list
(or uses the scenario's own ``flow_list``), replays exactly that list in slacknet and in our
ns-3 program (``bench/peers/ns3/``, which installs ns-3 into a private environment on first
use), and reports per simulator: finished flows, p50/p95/p99 slowdown for short (< 100 KB),
long (>= 1 MB) and incast flows, drops, ECN marks, wall time and the ratio ns-3 / slacknet. It also
writes a CDF plot of both.

Both simulators' slowdowns are divided by the *same* ideal FCT: slacknet's closed form for the
scenario (``ideal_fct_ps``), so a ratio of slowdowns is a ratio of FCTs.

With ``--hash-seeds`` (:func:`compare_seeds`) each simulator replays the list once per ECMP
hash seed (slacknet ``routing.mode = "ecmp"``, ``routing.hash_seed = s``; ns-3 ``--ecmp-seed s``),
and every class's percentiles are reported as mean, standard deviation and min-max over the
seeds, with a verdict per row (:func:`verdict`): a scenario that routes by ``flow_index`` is
switched to hashed ECMP in both simulators for this, and the output says so. Runs are
sequential (no two of them overlap, so no wall time is shared with another of our runs); the
machine's load average before each run is recorded, since other processes do inflate them.

With ``--repeat N`` (``compare(..., repeat=N)``; default 1, one run each) every simulator
runs N times, alternated (slacknet, ns-3, htsim, slacknet, ns-3, htsim, ...) so that all of them
see the machine's same load, and the table's wall time, the events/s and packet-hops/s derived
from it and the ratios use each simulator's *median* wall time; peak memory is the largest run.
This machine's speed drifts by 10-20% within minutes, so one run decides nothing near a
threshold (``bench/targets.py`` uses it for issue 15's targets). Every run's wall time and peak
memory are kept (:attr:`Comparison.wall_runs_s`, ``wall_runs_s`` in ``comparison.json``); run 1
writes where a single run would, run ``i`` into ``run<i>/``. The slowdowns are run 1's.
CORRECTNESS: slacknet is deterministic, so its N runs must give identical per-flow records;
if they do not, :class:`CompareError` says so (a bug, never averaged away). A peer whose FCTs
change between its runs is named under the table. ``--repeat`` combines with ``--hash-seeds``:
each seed is then repeated N times (its median wall time), and the means over seeds are means
of those medians.

The ns-3 side needs a source checkout: nothing here is needed to install or test slacknet.

UEC htsim (``bench/peers/htsim/``, ``htsim_uec -sender_cc_algo dctcp``) is the second peer. It
runs when the user points to a checkout of it (``htsim_dir``, ``slacknet compare --htsim DIR``
or ``$HTSIM_DIR``); without one its columns are left out and :attr:`Comparison.skipped` (and the
rendered table) says why in one line. htsim replays the same flow list on the same leaf-spine,
buffers and ECN threshold, but routes by its own per-flow ECMP hash (``-paths 1 -seed 1``: it
has no ``flow_index`` routing), starts flows at the truncated microsecond, opens no connection
and measures FCTs at the sender (last byte acknowledged). A lone short flow therefore takes
about half an RTT less in htsim than slacknet's ideal FCT (handshake RTT + one-way delivery
under ``ns3_compat``): its short-flow slowdowns can be below 1. :data:`HTSIM_NOTE` says so
under the table. With ``--hash-seeds``, htsim's seed ``s`` is ``-seed s`` (its hash), and its
percentiles get their own block, ratio and verdict against slacknet.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from .analysis import class_masks
from .config import FlowListWorkload, LeafSpineTopology, Scenario, StaticPartitioning, load_scenario
from .results import Results, is_results_folder, replace_atomic, write_csv_atomic, write_text_atomic

__all__ = [
    "CompareError",
    "check_compare_target",
    "Comparison",
    "SeedComparison",
    "aggregate_seeds",
    "check_repeat",
    "compare",
    "compare_seeds",
    "htsim_args",
    "htsimpeer_path",
    "ns3peer_path",
    "parse_hash_seeds",
    "per_seed_table",
    "read_peer_fct",
    "render",
    "verdict",
]

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


def htsimpeer_path() -> Path:
    """``bench/peers/htsim/htsimpeer.py`` of the source checkout this package runs from."""
    p = ns3peer_path().parents[1] / "htsim" / "htsimpeer.py"
    if not p.is_file():
        raise CompareError(f"the htsim peer harness is not here ({p})")
    return p


#: How the htsim runs differ from the other two (printed under a table with htsim in it).
HTSIM_NOTE = (
    "htsim: htsim_uec -sender_cc_algo dctcp on the same flows, buffers and ECN threshold; "
    "routed by its per-flow ECMP hash (-paths 1 -seed 1; it has no flow_index routing), starts "
    "truncated to whole us, no connection handshake and FCT at the sender (last byte "
    "acknowledged): a lone short flow takes about half an RTT less than slacknet's ideal, which "
    "counts the handshake and ends at the receiver; it counts no drops and no events; built "
    "without its per-ACK DCTCP debugging print (a flushed write per ACK, a fifth of its run time; "
    "bench/peers/htsim/README.md)"
)


def read_peer_fct(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a peer FCT file (``id src dst start_s size_bytes incast fct_ns ideal_ns slowdown``,
    ``fct_ns = -1`` for unfinished flows) as a DataFrame with those columns and a boolean
    ``finished``."""
    cols = ["id", "src", "dst", "start_s", "size_bytes", "incast", "fct_ns", "ideal_ns", "slowdown"]
    try:
        df = pd.read_csv(path, sep=r"\s+", comment="#", header=None, names=cols)
    except pd.errors.EmptyDataError:
        raise CompareError(f"{path}: the peer wrote no records; run it again") from None
    except (OSError, ValueError) as e:
        raise CompareError(f"{path}: cannot read the peer's records ({e}); run it again") from None
    if df.empty:
        raise CompareError(f"{path}: the peer wrote no records; run it again")
    # A record file cut short (a peer killed while writing) has a short last line, which
    # read_csv fills with NaN: a flow counted as unfinished and, NaN being true, as incast.
    numeric = df.apply(pd.to_numeric, errors="coerce")
    bad = numeric.isna().any(axis=1)
    if bad.any():
        row = df[bad].iloc[0]
        raise CompareError(f"{path}: record {int(bad.to_numpy().argmax()) + 1} ({' '.join(f'{v:g}' if isinstance(v, float) else str(v) for v in row.tolist())}) "
                           "is not a whole record (`id src dst start_s size_bytes incast fct_ns ideal_ns slowdown`); "
                           "was the peer's run cut short? Run it again")
    df = numeric
    df["incast"] = df["incast"].astype(bool)
    df["finished"] = df["fct_ns"] >= 0
    return df


@dataclass
class Comparison:
    """The outcome of :func:`compare`."""

    scenario: str
    table: pd.DataFrame
    """Rows: metric; columns ``slacknet``, ``ns-3``, ``ratio`` (ns-3 / slacknet), and with
    htsim ``htsim`` and ``htsim ratio`` (htsim / slacknet; NaN for what htsim does not count:
    drops, events)."""
    slacknet: pd.DataFrame
    """slacknet records of the flows (with ``slowdown``)."""
    ns3: pd.DataFrame
    """ns-3 records of the same flows, slowdown against slacknet's ideal FCT."""
    wall_s: dict[str, float] = field(default_factory=dict)
    peak_rss_mb: dict[str, float | None] = field(default_factory=dict)
    only_finished_in: dict[str, list[int]] = field(default_factory=dict)
    out_dir: Path | None = None
    load_before: dict[str, float] = field(default_factory=dict)
    """The machine's 1-minute load average just before each simulator's run (others' work
    inflates wall times on a small machine)."""
    htsim: pd.DataFrame | None = None
    """htsim records of the same flows (slowdown against slacknet's ideal FCT), when it ran;
    the table then has the columns ``htsim`` and ``htsim ratio`` (htsim / slacknet)."""
    htsim_info: dict[str, Any] = field(default_factory=dict)
    """What the htsim runner reported (its command line, retransmitted packets, ...)."""
    ns3_build: str = ""
    """Which ns-3 ran, as its runner says (the PyPI wheel, or a user's build and its profile)."""
    ns3_recovery: str = "prr"
    """ns-3's TCP recovery ops (a key of :data:`NS3_RECOVERY`)."""
    same_paths: bool = False
    """``same_paths`` was asked for: ns-3 routed every flow over slacknet's path (a
    ``flow_index`` scenario always does, recorded here only when asked)."""
    only_finished_vs_htsim: dict[str, list[int]] = field(default_factory=dict)
    """Flows finished in slacknet but not in htsim (``slacknet``) and the other way round."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Peers that did not run, with the one-line reason (e.g. ``{"htsim": "HTSIM_DIR is not
    set: ..."}``)."""
    repeat: int = 1
    """Runs per simulator (``compare(..., repeat=N)``): :attr:`wall_s` and the table's wall
    time and events/s are then medians over the runs, peak memory the largest run."""
    wall_runs_s: dict[str, list[float]] = field(default_factory=dict)
    """Every run's wall time per simulator, in the order they ran."""
    peak_rss_runs_mb: dict[str, list[float | None]] = field(default_factory=dict)
    """Every run's peak memory per simulator, in the order they ran."""
    varied: list[str] = field(default_factory=list)
    """Peers whose per-flow FCTs changed between their runs (the table shows their run 1)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary (with ``repeat`` above 1 also ``repeat``, ``wall_runs_s``,
        ``peak_rss_runs_mb`` and ``fct_varied_between_runs``)."""
        out = {
            "scenario": self.scenario,
            "table": json.loads(self.table.to_json(orient="index")),
            "wall_s": self.wall_s,
            "peak_rss_mb": self.peak_rss_mb,
            "only_finished_in": self.only_finished_in,
        }
        if self.ns3_build:
            out["ns3_build"] = self.ns3_build
        out["ns3_recovery"] = self.ns3_recovery
        out["same_paths"] = self.same_paths
        if self.htsim is not None:
            out["only_finished_vs_htsim"] = self.only_finished_vs_htsim
            out["htsim"] = {k: v for k, v in self.htsim_info.items() if k != "log"}
        if self.skipped:
            out["skipped"] = self.skipped
        if self.repeat > 1:
            out["repeat"] = self.repeat
            out["wall_statistic"] = f"median of {self.repeat} runs per simulator, alternated"
            out["wall_runs_s"] = self.wall_runs_s
            out["peak_rss_runs_mb"] = self.peak_rss_runs_mb
            out["fct_varied_between_runs"] = self.varied
        return out


@dataclass
class SeedComparison:
    """The outcome of :func:`compare_seeds`: one :class:`Comparison` per ECMP hash seed."""

    scenario: str
    seeds: list[int]
    runs: list[Comparison]
    """One comparison per seed, in the order of ``seeds``."""
    per_seed: pd.DataFrame
    """One row per (seed, simulator): ``seed``, ``simulator`` and every number of that run
    (``short_p50``, ``short_flows``, ``wall_s``, ... see :func:`per_seed_table`)."""
    slowdown: pd.DataFrame
    """Per class and percentile: mean, sd, min, max over seeds in both simulators, the
    ratio of means (ns-3 / slacknet) and the :func:`verdict` (see :func:`aggregate_seeds`)."""
    means: pd.DataFrame
    """Rows: run metric (flows, finished, drops, wall time, events, memory); columns
    ``slacknet``, ``ns-3`` (means over seeds) and ``ratio`` (ns-3 / slacknet)."""
    routing_note: str | None = None
    """Set when the scenario's own routing was replaced by hashed ECMP."""
    out_dir: Path | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    """Peers that did not run, with the one-line reason (as :attr:`Comparison.skipped`)."""
    repeat: int = 1
    """Runs per simulator and seed; above 1, each seed's wall time is its median."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        out = {
            "scenario": self.scenario,
            "hash_seeds": self.seeds,
            "ns3_recovery": self.runs[0].ns3_recovery if self.runs else "prr",
            "same_paths": bool(self.runs) and self.runs[0].same_paths,
            "routing_note": self.routing_note,
            "verdict_rule": VERDICT_RULE,
            "slowdown": json.loads(self.slowdown.to_json(orient="records")),
            "means": json.loads(self.means.to_json(orient="index")),
            "per_seed": json.loads(self.per_seed.to_json(orient="records")),
            "only_finished_in": {
                str(s): r.only_finished_in for s, r in zip(self.seeds, self.runs)
            },
        }
        if any(r.htsim is not None for r in self.runs):
            out["only_finished_vs_htsim"] = {
                str(s): r.only_finished_vs_htsim for s, r in zip(self.seeds, self.runs)
            }
        if self.skipped:
            out["skipped"] = self.skipped
        if self.repeat > 1:
            out["repeat"] = self.repeat
            out["wall_statistic"] = (f"per seed, the median of {self.repeat} runs per simulator, "
                                     "alternated; means over seeds of those medians")
            out["wall_runs_s"] = {str(s): r.wall_runs_s for s, r in zip(self.seeds, self.runs)}
            out["fct_varied_between_runs"] = {str(s): r.varied for s, r in zip(self.seeds, self.runs)}
        return out


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


#: ns-3's TCP recovery ops, by ``compare(..., ns3_recovery=...)`` (``--ns3-recovery``): ns-3.44's
#: default ``TcpPrrRecovery`` paces fast recovery and DCTCP's ECN cut (``CA_CWR``) by PRR;
#: ``TcpClassicRecovery`` sets cwnd to ssthresh at once in both, as slacknet's TCP does unless
#: ``transport.prr`` (and DCTCP's ``loss_in_cwr = "ns3"``) ask for PRR.
NS3_RECOVERY = {"prr": "TcpPrrRecovery (ns-3's default)", "classic": "TcpClassicRecovery (--ns3-recovery classic)"}


#: Under a comparison where packets were dropped and ns-3 ran its default PRR.
PRR_NOTE = (
    "note: packets were dropped, and ns-3 paced its loss recovery and DCTCP's ECN cuts by PRR (its default); "
    "slacknet's TCP cuts at once unless transport.prr is set. To compare loss recovery like for like, add "
    "--ns3-recovery classic (README, \"PRR in fast recovery\": the lossy S2's drops and long flows agree then)"
)


#: Said under a comparison whose ns-3 routed by slacknet's hash (``same_paths``).
SAME_PATHS_NOTE = "ns-3 paths: slacknet's ECMP hash (--same-paths): every flow on the same spine in both"


def _prr_note(drops: Sequence[float], ns3_recovery: str) -> list[str]:
    """:data:`PRR_NOTE`, wrapped, if any of ``drops`` is above 0 and ns-3 ran PRR; else nothing."""
    if ns3_recovery != "prr" or not any(d > 0 for d in drops if not math.isnan(d)):
        return []
    return textwrap.wrap(PRR_NOTE, 100)


def check_ns3_recovery(value: object) -> str:
    """``value`` if it names one of :data:`NS3_RECOVERY`, else CompareError naming it."""
    if not isinstance(value, str) or value not in NS3_RECOVERY:
        raise CompareError(
            f"ns3_recovery = {value!r}: give \"prr\" (ns-3's default TcpPrrRecovery, which paces fast recovery "
            "and the ECN cut by PRR) or \"classic\" (TcpClassicRecovery: cwnd = ssthresh at once, as slacknet's "
            "TCP without transport.prr)"
        )
    return value


def _peer_args(
    sc: Scenario, ecmp_seed: int | None = None, ns3_recovery: str = "prr", same_paths: bool = False
) -> list[str]:
    """dc_bench runner flags for ``sc``; ``ecmp_seed`` (mode ``ecmp`` only) seeds ns-3's hash;
    ``ns3_recovery`` picks ns-3's TCP recovery ops (:data:`NS3_RECOVERY`); ``same_paths`` (mode
    ``ecmp`` only) makes ns-3 hash as slacknet does (dc_bench ``--ecmp=slacknet``), with
    ``ecmp_seed`` or else the scenario's ``routing.hash_seed``, so every flow takes the same
    spine in both."""
    check_ns3_recovery(ns3_recovery)
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
    k_bytes = sc.switch.queue_list()[0].ecn_threshold_bytes
    pkt = sc.transport.mss_bytes + sc.transport.header_bytes
    if k_bytes is None:
        raise CompareError("the ns-3 peer marks ECN: set switch.queues[0].ecn_threshold_bytes")
    # dc_bench puts a RED queue disc on every host NIC as on every switch port (one FIFO, a
    # byte cap, the ports' marking threshold, no TCP Small Queues): a scenario whose hosts differ
    # would be compared with a different network.
    h = sc.host
    if h.nic_buffer_bytes is None:
        raise CompareError(
            "the ns-3 peer's host NICs hold a bounded queue: set host.nic_buffer_bytes (profile = "
            f"\"ns3_compat\" sets 350000; the switch ports have {port_bytes})"
        )
    if h.scheduler != "fifo" or h.tsq_pkts != 0:
        raise CompareError(
            "the ns-3 peer's host NIC is one FIFO without TCP Small Queues: set host.scheduler = \"fifo\" "
            f"and host.tsq_pkts = 0 (they are {h.scheduler!r} and {h.tsq_pkts}; profile = \"ns3_compat\" sets both)"
        )
    if not h.ecn_marking or h.ecn_threshold_bytes not in (None, k_bytes):
        raise CompareError(
            f"the ns-3 peer marks at host NICs as at switch ports: set host.ecn_threshold_bytes = {k_bytes} "
            f"and host.ecn_marking = true (they are {h.ecn_threshold_bytes} and {str(h.ecn_marking).lower()})"
        )
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
    extra: list[str] = []
    if h.nic_buffer_bytes != port_bytes:
        extra.append(f"--hostBufferBytes={h.nic_buffer_bytes}")
    if sc.routing.mode == "flow_index":
        # The same path for every flow in both simulators: spine = flow id mod spines.
        args += ["--ecmp-seed", "0", "--", "--ecmp=flowid"]
    elif sc.routing.mode != "ecmp":
        raise CompareError("the ns-3 peer routes per flow: routing.mode must be ecmp or flow_index")
    elif same_paths:
        # dc_bench computes slacknet's own ECMP hash (route.rs hash3) at each packet's leaf.
        args += ["--ecmp-seed", str(ecmp_seed if ecmp_seed is not None else sc.routing.hash_seed)]
        extra.append("--ecmp=slacknet")
    elif ecmp_seed is not None:
        args += ["--ecmp-seed", str(ecmp_seed)]
    if sc.run.fct_at != "receiver":
        args += ([] if "--" in args else ["--"]) + ["--fctAt=sender"]
    if getattr(sc.transport, "rack_tlp", False):
        raise CompareError(
            "ns-3.44 has no RACK-TLP (its TCP finds losses by duplicate ACKs and the timer only): set "
            "transport.rack_tlp = false to compare with it"
        )
    # ns-3's TcpSocketBase::Sack is on by default, as under ns3_compat; a scenario without SACK
    # turns it off in ns-3 too, so that both recover from loss alike.
    if not getattr(sc.transport, "sack", True):
        extra.append("--sack=false")
    if ns3_recovery != "prr":
        extra.append(f"--recovery={ns3_recovery}")
    if extra:
        args += ([] if "--" in args else ["--"]) + extra
    return args


def htsim_args(sc: Scenario) -> list[str]:
    """htsimpeer.py ``run`` flags for ``sc`` (after :func:`_peer_args` accepted it); raises
    CompareError for what htsim's topology file cannot express."""
    _peer_args(sc)
    t = sc.topology
    assert isinstance(t, LeafSpineTopology)  # _peer_args checked it
    if float(t.host_rate_gbps) != int(t.host_rate_gbps):
        raise CompareError(f"htsim takes whole Gb/s link rates, not {t.host_rate_gbps}")
    if t.hosts_per_leaf % t.spines:
        raise CompareError("htsim needs hosts_per_leaf to be a multiple of spines (an integer oversubscription)")
    adm = sc.switch.admission
    assert isinstance(adm, StaticPartitioning) and adm.port_bytes is not None
    k_bytes = sc.switch.queue_list()[0].ecn_threshold_bytes
    assert k_bytes is not None
    pkt = sc.transport.mss_bytes + sc.transport.header_bytes
    args = [
        "--leaves", str(t.leaves),
        "--hosts-per-leaf", str(t.hosts_per_leaf),
        "--spines", str(t.spines),
        "--rate-gbps", repr(float(t.host_rate_gbps)),
        "--delay-ns", str(t.host_delay_ns),
        "--buffer-per-port-bytes", str(adm.port_bytes),
        "--ecn-k-pkts", str(max(1, round(k_bytes / pkt))),
    ]  # fmt: skip
    if sc.run.stop_ms is not None:
        args += ["--stop-s", repr(sc.run.stop_ms / 1e3)]
    return args


@dataclass
class _HtsimPlan:
    runner: Path
    checkout: str
    args: list[str]


def _htsim_plan(
    sc: Scenario, htsim_dir: str | os.PathLike[str] | None, python: str | None
) -> tuple[_HtsimPlan | None, str | None]:
    """Whether htsim runs: ``(plan, None)``, or ``(None, reason)`` when no checkout is given or
    htsim cannot model the scenario. A checkout that is given but does not build is an error.
    Builds htsim_uec (once per commit) before anything else runs."""
    given = _peer_dir("--htsim", "HTSIM_DIR", htsim_dir, "a checkout of UEC htsim (github.com/ultraethernet/uet-htsim)")
    if not given:
        return None, (
            "HTSIM_DIR is not set: point it (or slacknet compare --htsim DIR) to a checkout of "
            "UEC htsim (github.com/ultraethernet/uet-htsim) to add it"
        )
    try:
        args = htsim_args(sc)
    except CompareError as e:
        return None, str(e)
    runner = htsimpeer_path()
    _ensure_peer("htsim", [python or sys.executable, str(runner), "ensure", "--htsim", given])
    return _HtsimPlan(runner=runner, checkout=given, args=args), None


def _peer_dir(option: str, env: str, value: str | os.PathLike[str] | None, what: str) -> str:
    """A peer's folder (``--htsim``, ``--ns3-dir``) as given, else ``$env``; ``""`` for neither.
    CompareError for an empty path given (it silently meant "none") or one that is not a folder."""
    if value is not None:
        if not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"{option} = {value!r}: a path to {what}, or None")
        given = os.fspath(value)
        if not given:
            raise CompareError(f"{option} = '': an empty path; give {what}, or leave it out")
    else:
        given = os.environ.get(env, "")
    if given and not Path(given).expanduser().is_dir():
        why = "no such folder" if not os.path.lexists(Path(given).expanduser()) else "not a folder"
        raise CompareError(f"{env} / {option} {given}: {why}; give {what}")
    return given


def _ensure_peer(name: str, cmd: list[str]) -> None:
    """Run a peer runner's ``ensure`` (build or install the peer once) before anything else
    runs; its progress lines (``[<runner>]``) go to our stderr as they come, since a first
    build takes minutes. CompareError with the runner's reason if it fails."""
    tag = "[" + Path(cmd[1]).stem + "]"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    err: list[str] = []
    for line in proc.stderr:
        err.append(line.rstrip("\n"))
        if line.startswith(tag):
            print(line, end="", file=sys.stderr, flush=True)
    if proc.wait() != 0:
        tail = [ln for ln in err if ln.strip() and not ln.startswith(tag)][-8:]
        if len(tail) == 1:  # the runner's one-line reason
            raise CompareError(f"the {name} peer could not be built: {tail[0].split(': error: ', 1)[-1]}")
        raise CompareError(f"the {name} peer could not be built:\n  " + "\n  ".join(tail))


#: What a comparison writes in its output folder (and in ``run<i>/`` and ``seed<s>/``), beside
#: the peers' own files next to their FCT files.
_COMPARE_MARKS = ("comparison.json", "slacknet_scenario.json")


def check_compare_target(out_dir: str | os.PathLike[str]) -> Path:
    """``out_dir`` as a Path if a comparison may write into it: it does not exist, or it is an
    empty folder, or an earlier comparison's (it holds ``comparison.json`` or
    ``slacknet_scenario.json``, or ``seed<s>/`` with one), whose files it replaces. Anything
    else (a home folder, one run's results) would get its ``flows.txt``, ``comparison.json``
    and the rest written over what it holds: CompareError naming it."""
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir = {out_dir!r}: a path to the output folder")
    if os.fspath(out_dir) == "":
        raise CompareError("--out = '': an empty path (it would mean the working folder itself); name the output folder")
    out = Path(out_dir)
    if not os.path.lexists(out):
        return out
    if out.is_symlink() or not out.is_dir():
        raise CompareError(f"--out = {out}: exists and is not a folder; choose a new output folder")
    if is_results_folder(out):
        raise CompareError(f"--out = {out}: it is one run's results folder, which a comparison's files would break; "
                           "choose a new output folder")
    names = os.listdir(out)
    if not names or any((out / m).is_file() for m in _COMPARE_MARKS) or any(
        n.startswith("seed") and n[4:].isdigit() and (out / n / "slacknet_scenario.json").is_file() for n in names
    ):
        return out
    more = f" and {len(names) - 1} more" if len(names) > 1 else ""
    raise CompareError(f"--out = {out}: it holds {sorted(names)[0]!r}{more} and is not an earlier comparison's folder "
                       "(no comparison.json or slacknet_scenario.json), so the comparison's files would be written "
                       "over what it holds: choose a new output folder")


def _start_over(out: Path, names: Sequence[str]) -> None:
    """Remove an earlier comparison's summaries from ``out`` before its runs are replaced, so
    that an interrupted comparison never leaves a folder whose summary is of other runs."""
    for name in names:
        p = out / name
        if p.is_file() and not p.is_symlink():
            p.unlink()


def compare(
    scenario: Scenario | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    python: str | None = None,
    htsim_dir: str | os.PathLike[str] | None = None,
    repeat: int = 1,
    progress: Callable[[str], None] | None = None,
    ns3_dir: str | os.PathLike[str] | None = None,
    ns3_recovery: str = "prr",
    same_paths: bool = False,
) -> Comparison:
    """Replay one flow list in slacknet and ns-3, and in UEC htsim when a checkout is given
    (``htsim_dir``, else ``$HTSIM_DIR``), and compare them (see the module docs). ns-3 is the
    PyPI wheel, or the ns-3.44 build at ``ns3_dir`` (else ``$NS3_DIR``): the wheel has logging
    and asserts compiled in (``bench/peers/ns3/README.md``). ``ns3_recovery`` picks ns-3's TCP
    recovery ops: ``"prr"`` (its default ``TcpPrrRecovery``) or ``"classic"``
    (``TcpClassicRecovery``, the recovery slacknet's TCP models without ``transport.prr``).
    ``same_paths`` makes ns-3 route a hashed-ECMP scenario (``routing.mode = "ecmp"``) by
    slacknet's own hash and ``routing.hash_seed``, so that each flow takes the same spine in both
    (a ``flow_index`` scenario always does; htsim keeps its own hash).

    ``repeat`` runs each simulator that many times, alternated (slacknet, ns-3, htsim,
    slacknet, ...), and reports each one's median wall time; run ``i`` > 1 writes into
    ``out_dir/run<i>``. CompareError if slacknet's runs give different records (a bug).
    ``progress``, if given, is called with one line after each round of runs.

    ``scenario`` is a :class:`~slacknet.Scenario` or a scenario file; ``python`` is the
    interpreter that runs slacknet and the peers (default: this one). Writes each run's files,
    ``comparison.json`` and ``compare_cdf.png`` into ``out_dir`` and returns the
    :class:`Comparison`. Raises :class:`CompareError` for a scenario the peers cannot model,
    a missing ``ns3_dir`` or a peer that fails."""
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    repeat = check_repeat(repeat)
    build = _ns3_build_args(ns3_dir)
    peer_args = build + _peer_args(sc, ns3_recovery=ns3_recovery, same_paths=same_paths)
    out = check_compare_target(out_dir)
    peer = ns3peer_path()
    htsim, reason = _htsim_plan(sc, htsim_dir, python)
    if build:  # a user's ns-3 build is checked (and dc_bench built against it) before anything runs
        _ensure_peer("ns-3", [python or sys.executable, str(peer), "ensure", *build])
    out.mkdir(parents=True, exist_ok=True)
    _start_over(out, ["comparison.json"])
    flows = _flow_list(sc, out)
    cmp = _compare_once(sc, flows, out, peer_args, peer, python, htsim=htsim, repeat=repeat, progress=progress)
    cmp.ns3_recovery = ns3_recovery
    cmp.same_paths = same_paths  # _peer_args refused every other routing mode
    if reason is not None:
        cmp.skipped["htsim"] = reason
    write_text_atomic(json.dumps(cmp.to_json(), indent=2) + "\n", out / "comparison.json")
    plot_comparison(cmp, out / "compare_cdf.png")
    return cmp


def _ns3_build_args(ns3_dir: str | os.PathLike[str] | None) -> list[str]:
    """``ns3peer.py run`` flags for the ns-3 to run: ``--ns3-dir DIR`` for a user's build
    (``ns3_dir``, else ``$NS3_DIR``), none for the wheel. CompareError for a folder that does
    not exist (the runner checks the rest)."""
    given = _peer_dir("--ns3-dir", "NS3_DIR", ns3_dir, "a built ns-3.44 source tree (bench/peers/ns3/README.md), "
                      "or leave it unset to run the PyPI wheel")
    if not given:
        return []
    return ["--ns3-dir", str(Path(given).expanduser().resolve())]


def _flow_list(sc: Scenario, out: Path) -> Path:
    """One flow list for both simulators: the scenario's own, or its generated flows."""
    if len(sc.workload) == 1 and isinstance(sc.workload[0], FlowListWorkload):
        return Path(sc.workload[0].path)
    from . import _native

    sim = _native.Simulation(_native.validate_json(sc.to_json(), str(Path.cwd())))
    return write_text_atomic(sim.flow_list_text(), out / "flows.txt")


def check_repeat(repeat: object) -> int:
    """``repeat`` as a number of runs per simulator: a whole number, at least 1 (CompareError
    otherwise)."""
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise CompareError(f"repeat = {repeat!r}: give a whole number of runs per simulator, at least 1 (e.g. 3)")
    return repeat


@dataclass
class _SlacknetRun:
    """One slacknet run of the flow list, as :func:`_run_slacknet` returns it."""

    records: pd.DataFrame
    summary: dict[str, Any]
    peak_rss_mb: float
    #: The run's own peak: its peak resident set during the run less what was resident before
    #: it, with the interpreter and every library imported (None if the child did not say).
    run_rss_mb: float | None = None


#: The row of a comparison's table with slacknet's peak memory less its interpreter's (the
#: peers' whole processes beside it).
RUN_MEMORY = "peak memory less the interpreter (MB)"

# The slacknet child: `slacknet run` after importing what the run imports. It prints what it
# held then (the interpreter, numpy, pandas, pyarrow and the extension: about 125 MB) and its
# peak so far, resets the kernel's high-water mark of its resident set (Linux: "5" into
# /proc/self/clear_refs) and, after the run, prints the peak since: the run's own peak is that
# less what was resident before it. Where the reset is refused, it prints only the first
# line, and the run's share is the whole peak less it (0 when imports peaked higher).
_MARK = "slacknet-compare-memory-kib:"
_SLACKNET_CHILD = f"""
import sys
import numpy, pandas, pyarrow, pyarrow.parquet
import slacknet, slacknet.cli, slacknet.results

def status():
    try:
        with open("/proc/self/status") as f:
            return {{k: int(v.split()[0]) for k, v in (l.split(":", 1) for l in f) if k in ("VmRSS", "VmHWM")}}
    except (OSError, ValueError):
        return {{}}

before = status()
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    reset = True
except OSError:
    reset = False
print({_MARK!r}, "before", before.get("VmRSS", -1), before.get("VmHWM", -1), flush=True)
try:
    rc = slacknet.cli.main(sys.argv[1:])
finally:
    if reset:
        print({_MARK!r}, "run_peak", status().get("VmHWM", -1), flush=True)
sys.exit(rc)
"""


def _child_memory(text: str, whole_mb: float) -> tuple[float, float | None]:
    """From the child's lines: its whole peak (the larger of what the kernel reported at exit
    and its peak before the reset) and the run's own (its peak during the run less what was
    resident before it), in MB; None for the latter if the child did not say."""
    got: dict[str, list[int]] = {}
    for line in text.splitlines():
        if line.startswith(_MARK):
            what, *nums = line[len(_MARK):].split()
            try:
                got[what] = [int(n) for n in nums]
            except ValueError:
                return whole_mb, None
    before = got.get("before")
    if before is None or len(before) != 2 or min(before) < 0:
        return whole_mb, None
    rss_before, peak_before = before[0] / 1024.0, before[1] / 1024.0
    whole = max(whole_mb, peak_before)
    run = got.get("run_peak")
    if run is None or len(run) != 1 or run[0] < 0:
        return whole, max(0.0, whole - rss_before)
    return whole, max(0.0, run[0] / 1024.0 - rss_before)


def _run_slacknet(replay_json: Path, out: Path, python: str | None) -> _SlacknetRun:
    """slacknet on the replay scenario, in a child process like the peers (so that every peak
    memory is measured the same way: the child's maximum resident set, interpreter included),
    and that peak less the interpreter's with every library the run uses imported."""
    cmd = [python or sys.executable, "-c", _SLACKNET_CHILD, "run", str(replay_json),
           "--out", str(out), "--no-plot", "--no-progress"]  # fmt: skip
    rc, text, rss = _run_measured(cmd)
    if rc != 0:
        raise CompareError("the slacknet run failed:\n  " + "\n  ".join(text.strip().splitlines()[-5:]))
    res = Results.load(out)
    whole, run_rss = _child_memory(text, rss)
    return _SlacknetRun(records=res.records.copy(), summary=dict(res.summary), peak_rss_mb=whole, run_rss_mb=run_rss)


def _run_peer(name: str, cmd: list[str], fct_out: Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """A peer runner (``ns3peer.py run`` or ``htsimpeer.py run``): its result line and records."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise CompareError(f"the {name} run failed:\n  " + "\n  ".join(tail))
    return _last_json_line(proc.stdout), read_peer_fct(fct_out)


def _first_difference(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """Where two runs' records first differ, in words (for :func:`_compare_once`'s error)."""
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return f"{len(a)} records with columns {list(a.columns)} against {len(b)} with {list(b.columns)}"
    for col in a.columns:
        x, y = a[col].reset_index(drop=True), b[col].reset_index(drop=True)
        differs = ~((x == y) | (x.isna() & y.isna()))
        if differs.any():
            i = int(np.flatnonzero(differs.to_numpy())[0])
            return f"flow {a['id'].iloc[i]}, {col}: {x.iloc[i]} against {y.iloc[i]}"
    return "the column types"


def _compare_once(
    sc: Scenario,
    flows: Path,
    out: Path,
    peer_args: list[str],
    peer: Path,
    python: str | None,
    htsim: _HtsimPlan | None = None,
    repeat: int = 1,
    progress: Callable[[str], None] | None = None,
) -> Comparison:
    """Run ``flows`` under ``sc`` in slacknet, under ``peer_args`` in ns-3 and, with a plan,
    in htsim, into ``out``; ``repeat`` times each, alternated (slacknet, ns-3, htsim, slacknet,
    ...) so that every simulator sees the machine's same load. Run 1 writes into ``out``, run
    ``i`` > 1 into ``out/run<i>``.

    The slowdowns are run 1's. Wall time is each simulator's median over its runs (events/s
    follow from it), peak memory its largest run. CORRECTNESS: slacknet is deterministic, so
    all its runs must give the same records; if not, CompareError (a bug, never averaged).
    A peer whose FCTs change between runs is listed in :attr:`Comparison.varied`."""
    out.mkdir(parents=True, exist_ok=True)
    replay = sc.model_copy(update={"workload": [FlowListWorkload(path=str(flows.resolve()))]})
    replay_json = out / "slacknet_scenario.json"
    write_text_atomic(replay.to_json(indent=2) + "\n", replay_json)
    interp = python or sys.executable
    sims = ["slacknet", "ns-3"] + (["htsim"] if htsim is not None else [])
    walls: dict[str, list[float]] = {s: [] for s in sims}
    peaks: dict[str, list[float | None]] = {s: [] for s in sims}
    run_peaks: list[float | None] = []  # slacknet's, without the interpreter
    loads: dict[str, list[float]] = {s: [] for s in sims}
    first: _SlacknetRun | None = None
    peer_runs: dict[str, list[tuple[dict[str, Any], pd.DataFrame]]] = {s: [] for s in sims[1:]}
    for i in range(repeat):
        run_dir = out if i == 0 else out / f"run{i + 1}"
        run_dir.mkdir(parents=True, exist_ok=True)
        loads["slacknet"].append(os.getloadavg()[0])
        me = _run_slacknet(replay_json, run_dir / "slacknet", python)
        if first is None:
            first = me
        elif not me.records.equals(first.records):
            raise CompareError(
                f"slacknet's run {i + 1} of {repeat} gave other per-flow records than its run 1 "
                f"({_first_difference(first.records, me.records)}; records in {out / 'slacknet'} and "
                f"{run_dir / 'slacknet'}): slacknet is deterministic, so this is a bug; please report it "
                "with the scenario"
            )
        walls["slacknet"].append(float(me.summary["wall_time_s"]))
        peaks["slacknet"].append(me.peak_rss_mb)
        run_peaks.append(me.run_rss_mb)

        loads["ns-3"].append(os.getloadavg()[0])
        ns3_out = run_dir / "ns3_fct.txt"
        cmd = [interp, str(peer), "run", "--flows", str(flows.resolve()), "--out", str(ns3_out), *peer_args]
        ns3_run = _run_peer("ns-3", cmd, ns3_out)
        peer_runs["ns-3"].append(ns3_run)
        walls["ns-3"].append(float(ns3_run[0]["wall_s"]))
        peaks["ns-3"].append(ns3_run[0].get("peak_rss_mb"))

        if htsim is not None:
            loads["htsim"].append(os.getloadavg()[0])
            h_out = run_dir / "htsim_fct.txt"
            cmd = [interp, str(htsim.runner), "run", "--htsim", htsim.checkout,
                   "--flows", str(flows.resolve()), "--out", str(h_out), *htsim.args]  # fmt: skip
            h_run = _run_peer("htsim", cmd, h_out)
            peer_runs["htsim"].append(h_run)
            walls["htsim"].append(float(h_run[0]["wall_s"]))
            peaks["htsim"].append(h_run[0].get("peak_rss_mb"))
        if progress is not None:
            progress(f"run {i + 1}/{repeat}: " + ", ".join(f"{s} {walls[s][-1]:.3g} s" for s in sims))
    assert first is not None  # repeat >= 1
    mine = first.records
    summary = first.summary
    wall = {s: _median(v) for s, v in walls.items()}
    varied = [s for s, rs in peer_runs.items()
              if any(not np.array_equal(r[1]["fct_ns"].to_numpy(), rs[0][1]["fct_ns"].to_numpy()) for r in rs[1:])]
    info, theirs = peer_runs["ns-3"][0]

    # Same ideal for both: slacknet's closed form, joined by flow id.
    ideal = mine.set_index("id")["ideal_fct_ps"]
    theirs = theirs.set_index("id").join(ideal, how="left").reset_index()
    theirs["slowdown"] = np.where(
        theirs["finished"], theirs["fct_ns"] * 1e3 / theirs["ideal_fct_ps"], np.nan
    )

    a, b = _stats(mine), _stats(theirs)
    rows = {k: {"slacknet": a[k], "ns-3": b[k]} for k in a}
    drops = float(summary.get("switch_drops", 0) + summary.get("nic_drops", 0))
    rows["drops (packets)"] = {"slacknet": drops, "ns-3": float(info.get("drops", math.nan))}
    # Counted alike: every ECN-capable packet a queue marks, switch ports and host NICs, DCTCP's
    # ACKs too, a packet marked at two hops twice (ns-3's nTotalMarkedPackets over its queue discs).
    rows["ECN marks (packets)"] = {"slacknet": float(summary.get("ecn_marks", math.nan)),
                         "ns-3": float(info.get("ecn_marks", math.nan))}
    rows["wall time (s)"] = {"slacknet": wall["slacknet"], "ns-3": wall["ns-3"]}
    rows["events"] = {"slacknet": float(summary["events"]), "ns-3": float(info.get("events", math.nan))}
    # As Results computes them from one run's wall time (so that one run gives what it gave).
    rows["events/s"] = {"slacknet": summary.get("events", 0) / max(wall["slacknet"], 1e-9),
                        "ns-3": float(info.get("events", math.nan)) / wall["ns-3"]}
    rows["packet-hops/s"] = {"slacknet": summary.get("packet_hops", 0) / max(wall["slacknet"], 1e-9),
                             "ns-3": math.nan}
    # Whole processes: slacknet's includes the Python interpreter with pandas and pyarrow
    # (about 130-150 MB before the simulation allocates anything; `make bench` shows the
    # simulator's own peak). The next row takes that out, so that the ratio compares the runs;
    # the peers are C++ programs, whose whole process is their run.
    peak = {s: _max_or_none(v) for s, v in peaks.items()}
    me_rss = peak["slacknet"]
    assert me_rss is not None  # measured by _run_measured on every run
    rows["peak memory (MB)"] = {"slacknet": me_rss, "ns-3": float(peak["ns-3"] or math.nan)}
    me_run = _max_or_none(run_peaks)
    rows[RUN_MEMORY] = {"slacknet": math.nan if me_run is None else me_run, "ns-3": float(peak["ns-3"] or math.nan)}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table["ratio"] = table["ns-3"] / table["slacknet"]

    fin_me = set(mine.loc[mine["finished"], "id"])
    fin_ns3 = set(theirs.loc[theirs["finished"], "id"])
    h_df: pd.DataFrame | None = None
    h_info: dict[str, Any] = {}
    vs_htsim: dict[str, list[int]] = {}
    if htsim is not None:
        h_info, h_raw = peer_runs["htsim"][0]
        h_df = h_raw.set_index("id").join(ideal, how="left").reset_index()
        h_df["slowdown"] = np.where(h_df["finished"], h_df["fct_ns"] * 1e3 / h_df["ideal_fct_ps"], np.nan)
        c = _stats(h_df)
        run_rows = {
            "drops (packets)": math.nan,  # htsim_uec prints no drop count
            "ECN marks (packets)": math.nan,  # nor a mark count
            "wall time (s)": wall["htsim"],
            "events": math.nan,
            "events/s": math.nan,
            "packet-hops/s": math.nan,
            "peak memory (MB)": float(peak["htsim"] or math.nan),
            RUN_MEMORY: float(peak["htsim"] or math.nan),
        }
        table["htsim"] = [c[k] if k in c else run_rows[str(k)] for k in table.index]
        table["htsim ratio"] = table["htsim"] / table["slacknet"]
        fin_h = set(h_df.loc[h_df["finished"], "id"])
        vs_htsim = {
            "slacknet": sorted(int(i) for i in fin_me - fin_h),
            "htsim": sorted(int(i) for i in fin_h - fin_me),
        }
    return Comparison(
        scenario=sc.name,
        table=table,
        slacknet=mine,
        ns3=theirs,
        wall_s=wall,
        peak_rss_mb=peak,
        only_finished_in={
            "slacknet": sorted(int(i) for i in fin_me - fin_ns3),
            "ns-3": sorted(int(i) for i in fin_ns3 - fin_me),
        },
        out_dir=out,
        load_before={s: max(v) for s, v in loads.items()},
        htsim=h_df,
        htsim_info=h_info,
        ns3_build=str(info.get("ns3", "")),
        only_finished_vs_htsim=vs_htsim,
        repeat=repeat,
        wall_runs_s=walls,
        peak_rss_runs_mb=peaks,
        varied=varied,
    )


def _median(values: Sequence[float]) -> float:
    """The median (the mean of the middle two for an even count)."""
    return float(np.median(np.asarray(values, dtype=np.float64)))


def _max_or_none(values: Sequence[float | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return max(known) if known else None


# --------------------------------------------------------------------------
# Several ECMP hash seeds
# --------------------------------------------------------------------------

#: Percentiles reported per class.
PERCENTILES = (50, 95, 99)

#: How :func:`verdict` decides, in words (printed under the table and stored in the JSON).
VERDICT_RULE = (
    "overlap: the min-max ranges over seeds of the two simulators overlap; "
    "within sd: they do not, but |mean(ns-3) - mean(slacknet)| <= the larger of the two "
    "standard deviations over seeds; DIFFER: neither (the simulators disagree by more than "
    "the routing noise); n/a: a simulator has no value"
)


def parse_hash_seeds(text: str) -> list[int]:
    """``"N"`` -> seeds ``1..N``; ``"a,b,c"`` -> exactly those seeds (distinct, >= 0).

    At least two seeds, since one cannot measure a spread, and at most
    :data:`MAX_HASH_SEEDS`; raises ``ValueError`` otherwise (or for ``text`` that is neither)."""
    parts = [x.strip() for x in text.split(",")]
    if len(parts) > 1:
        parts = [x for x in parts if x]  # a trailing comma is harmless
    try:
        nums = [int(x) for x in parts]
    except ValueError:
        raise ValueError(
            f"{text!r}: expected a count N (seeds 1..N) or a comma-separated list of seeds"
        ) from None
    if "," not in text:
        if nums[0] < 2:
            raise ValueError(f"{text!r}: give at least 2 seeds (a count N >= 2 or a list a,b,...)")
        # Checked before the list is built: every seed is a whole comparison (an ns-3 run of
        # about a minute on the 256-host scenario), and a count of 10^9 is a typo.
        if nums[0] > MAX_HASH_SEEDS:
            raise ValueError(f"{text!r}: at most {MAX_HASH_SEEDS} seeds (each is a full comparison); e.g. 5")
        nums = list(range(1, nums[0] + 1))
    return _check_seeds(nums)


#: The most ECMP hash seeds one ``compare --hash-seeds`` takes.
MAX_HASH_SEEDS = 1000


def _check_seeds(seeds: Sequence[int]) -> list[int]:
    out = [int(s) for s in seeds]
    if len(out) > MAX_HASH_SEEDS:
        raise ValueError(f"{len(out)} seeds: at most {MAX_HASH_SEEDS} (each is a full comparison)")
    if len(out) < 2:
        raise ValueError(f"seeds {out}: give at least 2 (one seed has no spread)")
    if len(set(out)) != len(out):
        raise ValueError(f"seeds {out}: must be distinct")
    if any(s < 0 or s >= 2**64 for s in out):
        raise ValueError(f"seeds {out}: must be in 0..2^64-1")
    return out


def _finite(values: Sequence[float] | np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return v[np.isfinite(v)]


def _sd(v: np.ndarray) -> float:
    """Sample standard deviation (ddof 1) over seeds; 0 for a single value."""
    return float(np.std(v, ddof=1)) if v.size >= 2 else 0.0


def verdict(slacknet: Sequence[float] | np.ndarray, ns3: Sequence[float] | np.ndarray) -> str:
    """Do two sets of per-seed values agree within routing noise? (:data:`VERDICT_RULE`)

    ``"overlap"`` when ``[min, max]`` of the two overlap (ends included); otherwise
    ``"within sd"`` when the difference of the means is at most the larger of the two sample
    standard deviations; otherwise ``"DIFFER"``. NaNs are ignored; ``"n/a"`` when either side
    has no value. The first two count as agreement."""
    a, b = _finite(slacknet), _finite(ns3)
    if a.size == 0 or b.size == 0:
        return "n/a"
    if max(a.min(), b.min()) <= min(a.max(), b.max()):
        return "overlap"
    if abs(float(a.mean()) - float(b.mean())) <= max(_sd(a), _sd(b)):
        return "within sd"
    return "DIFFER"


#: Columns of :func:`per_seed_table` taken from a :class:`Comparison`'s table.
_RUN_METRICS = {
    "drops (packets)": "drops",
    "ECN marks (packets)": "ecn_marks",
    "wall time (s)": "wall_s",
    "events": "events",
    "events/s": "events_per_s",
    "peak memory (MB)": "peak_rss_mb",
}


def per_seed_table(runs: Sequence[Comparison], seeds: Sequence[int]) -> pd.DataFrame:
    """One row per (seed, simulator) with every number of that run: ``{class}_flows``,
    ``{class}_finished``, ``{class}_p50/p95/p99`` (slowdown), ``drops``, ``ecn_marks``,
    ``wall_s``, ``events``, ``events_per_s``, ``peak_rss_mb``, the ``only_finished_here`` count and
    ``load_before`` (the machine's 1-minute load average just before the run)."""
    rows: list[dict[str, Any]] = []
    for seed, cmp in zip(seeds, runs):
        for sim in ("slacknet", "ns-3", "htsim"):
            if sim not in cmp.table.columns:
                continue  # htsim did not run
            row: dict[str, Any] = {"seed": int(seed), "simulator": sim}
            for cls in CLASSES:
                row[f"{cls}_flows"] = cmp.table.loc[f"{cls}: flows", sim]
                row[f"{cls}_finished"] = cmp.table.loc[f"{cls}: finished", sim]
                for q in PERCENTILES:
                    row[f"{cls}_p{q}"] = cmp.table.loc[f"{cls}: p{q} slowdown", sim]
            for metric, col in _RUN_METRICS.items():
                row[col] = cmp.table.loc[metric, sim]
            finished_here = cmp.only_finished_vs_htsim if sim == "htsim" else cmp.only_finished_in
            row["only_finished_here"] = len(finished_here.get(sim, []))
            row["load_before"] = cmp.load_before.get(sim, math.nan)
            rows.append(row)
    return pd.DataFrame(rows)


def aggregate_seeds(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Per class and percentile, over the seeds of a :func:`per_seed_table`: for each simulator
    ``{sim}_mean``, ``{sim}_sd`` (sample sd), ``{sim}_min``, ``{sim}_max``, ``{sim}_n`` (seeds
    with a value), with ``sim`` = ``slacknet`` or ``ns3``; ``ratio`` = ns-3 mean / slacknet
    mean; ``verdict`` (:func:`verdict`). When the table has htsim rows, the same for
    ``sim`` = ``htsim``, with ``htsim_ratio`` (htsim mean / slacknet mean) and ``htsim_verdict``
    (slacknet against htsim). Classes without a value in any simulator (e.g. ``incast`` in a
    scenario without incast) are left out."""
    sims = {"slacknet": "slacknet", "ns-3": "ns3"}
    missing = set(sims) - set(per_seed["simulator"])
    if "htsim" in set(per_seed["simulator"]):
        sims["htsim"] = "htsim"
    if missing:
        raise ValueError(f"per-seed table has no rows for {sorted(missing)}")
    rows: list[dict[str, Any]] = []
    for cls in CLASSES:
        for q in PERCENTILES:
            col = f"{cls}_p{q}"
            if col not in per_seed.columns:
                continue
            vals = {sim: _finite(per_seed.loc[per_seed["simulator"] == sim, col].to_numpy(dtype=np.float64))
                    for sim in sims}
            if all(v.size == 0 for v in vals.values()):
                continue
            row: dict[str, Any] = {"class": cls, "percentile": f"p{q}"}
            for sim, key in sims.items():
                v = vals[sim]
                row[f"{key}_mean"] = float(v.mean()) if v.size else math.nan
                row[f"{key}_sd"] = _sd(v) if v.size else math.nan
                row[f"{key}_min"] = float(v.min()) if v.size else math.nan
                row[f"{key}_max"] = float(v.max()) if v.size else math.nan
                row[f"{key}_n"] = int(v.size)
            row["ratio"] = row["ns3_mean"] / row["slacknet_mean"] if row["slacknet_mean"] else math.nan
            row["verdict"] = verdict(vals["slacknet"], vals["ns-3"])
            if "htsim" in sims:
                row["htsim_ratio"] = row["htsim_mean"] / row["slacknet_mean"] if row["slacknet_mean"] else math.nan
                row["htsim_verdict"] = verdict(vals["slacknet"], vals["htsim"])
            rows.append(row)
    return pd.DataFrame(rows)


def _seed_means(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Means over seeds of the run metrics (flows, finished, drops, wall time, ...)."""
    cols = [f"{c}_{k}" for c in CLASSES for k in ("flows", "finished")] + list(_RUN_METRICS.values())
    names = [f"{c}: {k}" for c in CLASSES for k in ("flows", "finished")] + list(_RUN_METRICS)
    g = per_seed.groupby("simulator")[cols].mean()
    table = pd.DataFrame({"slacknet": g.loc["slacknet"].to_numpy(), "ns-3": g.loc["ns-3"].to_numpy()}, index=names)
    table["ratio"] = table["ns-3"] / table["slacknet"]
    if "htsim" in g.index:
        table["htsim"] = g.loc["htsim"].to_numpy()
        table["htsim ratio"] = table["htsim"] / table["slacknet"]
    return table


def compare_seeds(
    scenario: Scenario | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    seeds: Sequence[int],
    *,
    python: str | None = None,
    progress: Callable[[str], None] | None = None,
    htsim_dir: str | os.PathLike[str] | None = None,
    repeat: int = 1,
    ns3_dir: str | os.PathLike[str] | None = None,
    ns3_recovery: str = "prr",
    same_paths: bool = False,
) -> SeedComparison:
    """Replay one flow list in slacknet and ns-3 (and htsim, when a checkout is given as in
    :func:`compare`; its seed ``s`` is ``-seed s``, its per-flow ECMP hash) once per ECMP hash
    seed and compare the per-class slowdown percentiles as mean and spread over the seeds.

    Seed ``s`` runs slacknet with ``routing.mode = "ecmp"``, ``routing.hash_seed = s`` and ns-3
    with ``--ecmp-seed s`` (its 5-tuple hash); the two hashes are unrelated, so only the
    distributions over seeds are compared, never one seed against the same seed, unless
    ``same_paths`` makes ns-3 hash as slacknet does (dc_bench ``--ecmp=slacknet``): then each
    seed runs every flow over the same spine in both, and seed ``s`` compares with seed ``s``. A
    ``flow_index`` scenario is switched to ``ecmp`` (``routing_note`` says so). Runs go one at a
    time (seed 1 slacknet, seed 1 ns-3, seed 2 slacknet, ...) so no wall time is shared.
    With ``repeat`` above 1 each seed is compared as :func:`compare` does with it (every
    simulator ``repeat`` times, alternated; its median wall time, its largest peak memory), and
    the means over seeds are means of those medians.
    Writes ``seed<s>/`` (each run's files), ``per_seed.csv``, ``seeds_summary.csv``,
    ``comparison.json`` and ``compare_cdf.png`` (every seed, faded) into ``out_dir``, and
    returns the :class:`SeedComparison`. ``python`` and ``progress`` are as for
    :func:`compare`, as are ``ns3_dir`` and ``ns3_recovery``. Raises :class:`CompareError` as :func:`compare` does, and for ``seeds``
    that are not 2 to :data:`MAX_HASH_SEEDS` distinct seeds in [0, 2^64 - 1]."""
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    try:
        seed_list = _check_seeds(seeds)
    except ValueError as e:
        raise CompareError(str(e)) from None
    repeat = check_repeat(repeat)
    _peer_args(sc, ns3_recovery=ns3_recovery)  # rejects what the peer cannot model before anything runs
    ns3_build = _ns3_build_args(ns3_dir)
    out = check_compare_target(out_dir)
    htsim, reason = _htsim_plan(sc, htsim_dir, python)
    if ns3_build:
        _ensure_peer("ns-3", [python or sys.executable, str(ns3peer_path()), "ensure", *ns3_build])
    out.mkdir(parents=True, exist_ok=True)
    _start_over(out, ["comparison.json", "per_seed.csv", "seeds_summary.csv"])
    note = None
    if sc.routing.mode == "flow_index":
        note = (
            'the scenario routes by flow_index (flow i on spine i mod spines); for --hash-seeds '
            'every simulator hashes instead: slacknet routing.mode = "ecmp", routing.hash_seed = s; '
            + ("ns-3 slacknet's hash with seed s (--same-paths)" if same_paths else "ns-3 its 5-tuple hash with --ecmp-seed s")
        )
    if note is not None and htsim is not None:
        note += "; htsim its per-flow ECMP hash with -seed s"
    peer = ns3peer_path()
    flows = _flow_list(sc, out)
    runs: list[Comparison] = []
    for s in seed_list:
        routing = sc.routing.model_copy(update={"mode": "ecmp", "hash_seed": s})
        sc_s = sc.model_copy(update={"routing": routing})
        htsim_s = None
        if htsim is not None:
            htsim_s = _HtsimPlan(htsim.runner, htsim.checkout, [*htsim.args, "--ecmp-seed", str(s)])
        each = _prefixed(progress, f"seed {s}: ") if progress is not None and repeat > 1 else None
        cmp = _compare_once(sc_s, flows, out / f"seed{s}",
                            ns3_build + _peer_args(sc_s, ecmp_seed=s, ns3_recovery=ns3_recovery, same_paths=same_paths),
                            peer, python,
                            htsim=htsim_s, repeat=repeat, progress=each)
        cmp.ns3_recovery = ns3_recovery
        cmp.same_paths = same_paths
        runs.append(cmp)
        if progress is not None:
            progress(
                f"seed {s}: slacknet {cmp.wall_s['slacknet']:.2f} s, ns-3 {cmp.wall_s['ns-3']:.1f} s"
                + (f", htsim {cmp.wall_s['htsim']:.2f} s" if "htsim" in cmp.wall_s else "")
                + (f" (medians of {repeat} runs)" if repeat > 1 else "")
            )
    per_seed = per_seed_table(runs, seed_list)
    result = SeedComparison(
        scenario=sc.name,
        seeds=seed_list,
        runs=runs,
        per_seed=per_seed,
        slowdown=aggregate_seeds(per_seed),
        means=_seed_means(per_seed),
        routing_note=note,
        out_dir=out,
        skipped={"htsim": reason} if reason is not None else {},
        repeat=repeat,
    )
    write_csv_atomic(per_seed, out / "per_seed.csv")
    write_csv_atomic(result.slowdown, out / "seeds_summary.csv")
    write_text_atomic(json.dumps(result.to_json(), indent=2) + "\n", out / "comparison.json")
    plot_seeds(result, out / "compare_cdf.png")
    return result


def _prefixed(progress: Callable[[str], None], prefix: str) -> Callable[[str], None]:
    return lambda msg: progress(prefix + msg)


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
    raise CompareError(f"the peer runner printed no result line:\n{text[-500:]}")


def plot_comparison(cmp: Comparison, path: str | os.PathLike[str]) -> Path:
    """Slowdown CDFs per class, slacknet (solid), ns-3 (dashed) and htsim (dotted) if it ran."""
    title = f"{cmp.scenario}: slacknet (solid) vs ns-3.44 (dashed)"
    if cmp.htsim is not None:
        title += " vs htsim (dotted)"
    return _plot_cdfs([cmp], title, path)


def plot_seeds(cmp: SeedComparison, path: str | os.PathLike[str]) -> Path:
    """Slowdown CDFs per class of every seed (faded), slacknet (solid) and ns-3 (dashed)."""
    title = f"{cmp.scenario}, {len(cmp.seeds)} ECMP hash seeds: slacknet (solid) vs ns-3.44 (dashed)"
    return _plot_cdfs(cmp.runs, title, path, alpha=max(0.25, 1.0 / len(cmp.seeds) ** 0.5))


def _plot_cdfs(runs: Sequence[Comparison], title: str, path: str | os.PathLike[str], alpha: float = 1.0) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    colors = {"short": "tab:blue", "long": "tab:orange", "incast": "tab:green", "all": "black"}
    for i, cmp in enumerate(runs):
        sims = [("slacknet", cmp.slacknet, "-"), ("ns-3", cmp.ns3, "--")]
        if cmp.htsim is not None:
            sims.append(("htsim", cmp.htsim, ":"))
        for who, df, style in sims:
            fin = df["finished"].to_numpy(dtype=bool)
            sd = df["slowdown"].to_numpy(dtype=np.float64)
            for name, mask in class_masks(df).items():
                v = np.sort(sd[mask & fin])
                if v.size == 0:
                    continue
                y = np.arange(1, v.size + 1) / v.size
                ax.step(v, y, where="post", linestyle=style, color=colors[name], alpha=alpha,
                        label=f"{who} {name}" if i == 0 else None)
    ax.set_xscale("log")
    ax.set_xlabel("FCT slowdown (FCT / slacknet ideal FCT)")
    ax.set_ylabel("CDF")
    ax.set_title(title, fontsize=10 if len(title) > 60 else None)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    # No partial PNG if interrupted.
    return replace_atomic(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))


def render(cmp: Comparison | SeedComparison) -> str:
    """The comparison table as aligned text."""
    if isinstance(cmp, SeedComparison):
        return _render_seeds(cmp)
    has_htsim = "htsim" in cmp.table.columns
    lines = [f"{'metric':<28}{'slacknet':>12}{'ns-3':>12}{'ns-3/slacknet':>15}"
             + (f"{'htsim':>12}{'htsim/slacknet':>16}" if has_htsim else "")]
    for metric, row in cmp.table.iterrows():
        def fmt(x: float, is_ratio: bool = False) -> str:
            if isinstance(x, float) and math.isnan(x):
                return "n/a"
            if not is_ratio and str(metric).endswith(("flows", "finished", "(packets)", "(MB)")):
                return f"{x:.0f}"
            if abs(x) >= 1e5:
                return f"{x:.3g}"
            return f"{x:.3f}"

        label = str(metric)
        if label == "wall time (s)" and cmp.repeat > 1:
            label = f"wall time (s), median of {cmp.repeat}"
        line = f"{label:<28}{fmt(row['slacknet']):>12}{fmt(row['ns-3']):>12}{fmt(row['ratio'], True):>15}"
        if has_htsim:
            line += f"{fmt(row['htsim']):>12}{fmt(row['htsim ratio'], True):>16}"
        lines.append(line)
    diff = cmp.only_finished_in
    lines.append(
        f"flows finished only in slacknet: {len(diff.get('slacknet', []))}, only in ns-3: {len(diff.get('ns-3', []))}"
    )
    if has_htsim:
        vs = cmp.only_finished_vs_htsim
        lines.append(
            f"flows finished only in slacknet: {len(vs.get('slacknet', []))}, only in htsim: {len(vs.get('htsim', []))}"
        )
        rtx = cmp.htsim_info.get("rtx_pkts")
        lines += textwrap.wrap(HTSIM_NOTE + (f"; it retransmitted {rtx} packets" if rtx is not None else ""), 100)
    if cmp.ns3_build:
        lines += textwrap.wrap(f"ns-3: {cmp.ns3_build}; recovery: {NS3_RECOVERY[cmp.ns3_recovery]}", 100)
    if cmp.same_paths:
        lines.append(SAME_PATHS_NOTE)
    drops = cmp.table.loc["drops (packets)"] if "drops (packets)" in cmp.table.index else None
    if drops is not None:
        lines += _prr_note([float(drops.get("slacknet", math.nan)), float(drops.get("ns-3", math.nan))],
                           cmp.ns3_recovery)
    for who, why in cmp.skipped.items():
        lines.append(f"{who}: skipped: {why}")
    if cmp.repeat > 1:
        lines += _repeat_lines(cmp)
    return "\n".join(lines)


def _repeat_lines(cmp: Comparison) -> list[str]:
    """What a repeated comparison adds under its table: how wall time was taken, every run's."""
    sims = ", ".join(cmp.wall_runs_s)
    lines = textwrap.wrap(
        f"wall time: the median of {cmp.repeat} runs of each simulator, alternated ({sims}, "
        f"{sims}, ...); events/s and packet-hops/s from that median; peak memory: the largest run; "
        f"slowdowns: run 1 (slacknet's {cmp.repeat} runs gave identical per-flow records)",
        100,
    )
    lines.append("wall time of each run (s): " + "; ".join(
        f"{sim} " + " ".join(f"{w:.3g}" for w in walls) for sim, walls in cmp.wall_runs_s.items()))
    for sim in cmp.varied:
        lines.append(f"{sim}: its per-flow FCTs differed between its runs (the table shows run 1's)")
    return lines


def _fmt_value(metric: str, x: float, is_ratio: bool = False) -> str:
    if math.isnan(x):
        return "n/a"
    if not is_ratio and metric.endswith(("flows", "finished", "(packets)", "(MB)")):
        return f"{x:.0f}" if float(x).is_integer() or metric.endswith("(MB)") else f"{x:.1f}"
    if abs(x) >= 1e5:
        return f"{x:.3g}"
    return f"{x:.3f}"


def _render_seeds(cmp: SeedComparison) -> str:
    seeds = ", ".join(str(s) for s in cmp.seeds)
    sims = "every simulator" if "htsim_mean" in cmp.slowdown.columns else "both simulators"
    lines = [f"{cmp.scenario}: {len(cmp.seeds)} ECMP hash seeds ({seeds}), each a separate run of "
             f"the same flows in {sims}"]
    if cmp.routing_note:
        lines.append(f"note: {cmp.routing_note}")
    if cmp.runs and cmp.runs[0].ns3_recovery != "prr":
        lines.append(f"ns-3 recovery: {NS3_RECOVERY[cmp.runs[0].ns3_recovery]}")
    if cmp.runs and cmp.runs[0].same_paths:
        lines.append(SAME_PATHS_NOTE + "; so per_seed.csv compares each seed's runs flow path for flow path")
    lines.append("")
    w = 28
    lines.append(f"{'slowdown':<14}{'slacknet mean':>14}{'sd':>7}{'min-max':>15}"
                 f"{'ns-3 mean':>12}{'sd':>7}{'min-max':>15}{'ns-3/slacknet':>15}  verdict")
    t = cmp.slowdown
    for _, r in t.iterrows():
        def rng(key: str) -> str:
            lo, hi = r[f"{key}_min"], r[f"{key}_max"]
            return "n/a" if math.isnan(lo) else f"{lo:.3f}-{hi:.3f}"

        def num(x: float) -> str:
            return "n/a" if math.isnan(x) else f"{x:.3f}"

        lines.append(
            f"{r['class'] + ' ' + r['percentile']:<14}{num(r['slacknet_mean']):>14}{num(r['slacknet_sd']):>7}"
            f"{rng('slacknet'):>15}{num(r['ns3_mean']):>12}{num(r['ns3_sd']):>7}{rng('ns3'):>15}"
            f"{num(r['ratio']):>15}  {r['verdict']}"
        )
    agree = int(t["verdict"].isin(["overlap", "within sd"]).sum()) if len(t) else 0
    lines += textwrap.wrap(f"{agree} of {len(t)} rows agree within routing noise. Rule: {VERDICT_RULE}.", 100)
    has_htsim = "htsim_mean" in t.columns
    if has_htsim:
        lines.append("")
        lines.append(f"{'slowdown':<14}{'slacknet mean':>14}{'htsim mean':>12}{'sd':>7}{'min-max':>15}"
                     f"{'htsim/slacknet':>16}  verdict")
        for _, r in t.iterrows():
            lo, hi = r["htsim_min"], r["htsim_max"]
            span = "n/a" if math.isnan(lo) else f"{lo:.3f}-{hi:.3f}"

            def num(x: float) -> str:
                return "n/a" if math.isnan(x) else f"{x:.3f}"

            lines.append(
                f"{r['class'] + ' ' + r['percentile']:<14}{num(r['slacknet_mean']):>14}{num(r['htsim_mean']):>12}"
                f"{num(r['htsim_sd']):>7}{span:>15}{num(r['htsim_ratio']):>16}  {r['htsim_verdict']}"
            )
        agree_h = int(t["htsim_verdict"].isin(["overlap", "within sd"]).sum()) if len(t) else 0
        lines.append(f"{agree_h} of {len(t)} rows agree with htsim within routing noise (same rule).")
    lines.append("")
    lines.append(f"{'mean over seeds':<{w}}{'slacknet':>12}{'ns-3':>12}{'ns-3/slacknet':>15}"
                 + (f"{'htsim':>12}{'htsim/slacknet':>16}" if has_htsim else ""))
    for metric, row in cmp.means.iterrows():
        m = str(metric)
        line = (f"{m:<{w}}{_fmt_value(m, row['slacknet']):>12}{_fmt_value(m, row['ns-3']):>12}"
                f"{_fmt_value(m, row['ratio'], True):>15}")
        if has_htsim:
            line += f"{_fmt_value(m, row['htsim']):>12}{_fmt_value(m, row['htsim ratio'], True):>16}"
        lines.append(line)
    only = {sim: [len(r.only_finished_in.get(sim, [])) for r in cmp.runs] for sim in ("slacknet", "ns-3")}
    lines.append(
        "flows finished only in slacknet, per seed: " + ", ".join(map(str, only["slacknet"]))
        + "; only in ns-3: " + ", ".join(map(str, only["ns-3"]))
    )
    if has_htsim:
        vs = {sim: [len(r.only_finished_vs_htsim.get(sim, [])) for r in cmp.runs] for sim in ("slacknet", "htsim")}
        lines.append(
            "flows finished only in slacknet (vs htsim), per seed: " + ", ".join(map(str, vs["slacknet"]))
            + "; only in htsim: " + ", ".join(map(str, vs["htsim"]))
        )
        lines += textwrap.wrap(HTSIM_NOTE.replace("-seed 1", "-seed s"), 100)
    if cmp.runs and "drops (packets)" in cmp.means.index:
        d = cmp.means.loc["drops (packets)"]
        lines += _prr_note([float(d.get("slacknet", math.nan)), float(d.get("ns-3", math.nan))],
                           cmp.runs[0].ns3_recovery)
    for who, why in cmp.skipped.items():
        lines.append(f"{who}: skipped: {why}")
    if cmp.repeat > 1:
        lines += textwrap.wrap(
            f"wall time: per seed, the median of {cmp.repeat} runs of each simulator, alternated; "
            "peak memory: per seed, the largest run; then the mean over seeds of each",
            100,
        )
        for s, r in zip(cmp.seeds, cmp.runs):
            lines += [f"seed {s}: {sim}: its per-flow FCTs differed between its runs (run 1's are used)"
                      for sim in r.varied]
    load = cmp.per_seed["load_before"].to_numpy(dtype=np.float64)
    lines.append(
        "runs were sequential (none of ours overlapped); 1-minute load average before each run: "
        f"{np.nanmin(load):.2f}-{np.nanmax(load):.2f}"
        + (" (other processes were running: wall times are inflated)" if np.nanmax(load) >= 1.0 else "")
    )
    return "\n".join(lines)
