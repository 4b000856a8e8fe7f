"""Sweeps: a base scenario plus axes of values, expanded into concrete runs and run in parallel.

A sweep is data (a TOML file), not code::

    name = "credence_load"
    base = "base.toml"          # a scenario file, relative to this file
    seeds = [1, 2]              # optional: every variant runs once per seed (default: the base's)

    [[axis]]
    key = "switch.admission"    # a dotted key of the scenario; list items as workload[0]
                                # (or a list of keys that all take each value)
    values = [{ policy = "dynamic_thresholds" }, { policy = "lqd" }]
    labels = ["DT", "LQD"]      # optional names for the values

    [[axis]]
    key = "workload[0].load"
    values = [0.2, 0.4, 0.6, 0.8]
    name = "load0"              # optional column name (default: the key's last part, "load")

    [[axis]]
    key = "*"                   # a joint axis: each value sets several keys together
    name = "scheme"             # (needs a name and labels)
    values = [{ "workload[0].scheme" = "atp", "transport" = { kind = "atp" } },
              { "workload[0].scheme" = "early_send", "transport" = { kind = "dctcp" } }]
    labels = ["ATP", "DCTCP-ES"]

Relative paths are relative to the sweep file, in the base's name and in axis values alike (a
Credence forest ``{ kind = "forest", path = "model.json" }`` next to the sweep), whatever the
working directory.

The runs are the cartesian product of the axes (first axis outermost) times the seeds, in that
order; at most :data:`MAX_RUNS` of them, counted from the axes before any is built. Each run is
an ordinary scenario validated by Rust, so a bad value fails with the key that names it. :func:`run_sweep` runs them in worker processes (one simulation per core) and
writes ``<out>/<variant>/`` (a normal results folder) per run plus ``<out>/sweep.csv`` with
one row per run (and ``<out>/sweep.json``, the sweep's name): the axis values, the metrics of :func:`run_metrics`, ``status`` (``ok``,
``failed``, or ``pending``: not run yet, in the table of a sweep under way or interrupted),
``reused`` and ``error``.

Every run has a folder of its own, named after its axis labels and seed. A sweep whose runs
would share one is refused before anything runs, naming the key: a seed listed twice, two
values of an axis with the same label (or labels that differ only in case or in characters a
folder name cannot hold, which become ``_``), two axes with the same column. Such a sweep is
ambiguous, so it is not disambiguated: give the values distinct ``labels``, or an axis a
``name``.

A run that fails (an error, a panic in the simulator, its worker process killed or out of
memory) is a ``failed`` row with the reason in ``error`` and NaN metrics; the others go on. When
a worker dies, the runs it shared the pool with run again one at a time in a new pool, so only
the one that kills its worker alone is failed. ``sweep.csv`` is rewritten (atomically) as each
run ends, so an interrupted sweep keeps its table and every finished run's folder; the runs it
did not finish stay in the table as ``pending`` rows (NaN metrics), so that a table read later
never passes for a whole sweep. A sweep
writes into a new folder, an empty one or an earlier sweep's (one holding its ``sweep.csv``),
and refuses any other (:func:`check_sweep_target`), including another sweep's (its
``sweep.json`` names it). Running the
same sweep into the same folder again resumes it: a run whose folder holds complete results
(its manifest checks) of the same resolved scenario (:func:`~slacknet.results.scenario_sha256`),
seed and slacknet version is reused (``reused`` true), not run again; failed runs run again.
SIGTERM and SIGINT (Ctrl-C) stop the worker processes before the sweep's process ends.

``run_sweep(..., cluster=...)`` (``slacknet sweep --cluster``) runs the runs on a Dask or Ray
cluster instead, with the same table, folders, resuming and failed rows; the workers send each
run's results back and this process saves them (:mod:`slacknet.cluster`).
"""

from __future__ import annotations

import copy
import difflib
import itertools
import json
import math
import os
import re
import signal
import threading
import tomllib
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from . import _native
from .analysis import class_masks
from .cluster import RunFailed, _first_line, connect, run_remote
from .config import Scenario, is_seed, read_text_file, spec_error, variant_fields
from .results import (
    MANIFEST, Results, ResultsError, check_save_target, is_results_folder, read_manifest, scenario_sha256,
    write_csv_atomic, write_text_atomic,
)

__all__ = [
    "MAX_RUNS", "MAX_SWEEP_FILE_BYTES", "METRIC_COLUMNS", "STATUS_COLUMNS", "Axis", "Sweep", "SweepRun", "load_sweep",
    "expand", "num_runs", "describe_size", "check_size", "check_sweep_target", "run_sweep", "run_metrics", "set_key",
]

#: The metric columns of a sweep table, in the order :func:`run_metrics` returns them.
METRIC_COLUMNS = (
    "flows", "unfinished",
    "short_p50", "short_p95", "short_p99", "short_mean",
    "long_p50", "long_p95", "long_p99", "long_mean", "all_mean",
    "incast_p50", "incast_p95", "incast_p99", "incast_rto_frac",
    "drops", "data_drops", "credit_waste", "leaf_occ_p99_pct", "leaf_occ_p9999_pct",
    "jobs", "jobs_gave_up", "jct_mean_us", "jct_p95_us", "job_slowdown", "loss_mean", "loss_max", "loss_over", "retx_frac",
    "occ_mean_kb", "occ_p99_kb", "bg_jobs", "bg_jct_mean_us",
    "iterations", "iter_mean_us", "iter_p99_us", "train_time_us", "net_time_us", "grad_loss_max",
    "train_fct_mean_us", "train_fct_p99_us", "train_rto_flows",
    "wall_s",
)
#: The columns after the metrics: how each run ended.
STATUS_COLUMNS = ("status", "reused", "error")
#: The status of a run not run yet in ``sweep.csv`` (a sweep under way, or interrupted).
PENDING = "pending"
#: Why a run failed when its worker process died.
WORKER_DIED = "its worker process died (killed, or out of memory)"
#: The most runs a sweep may have. Each run is a resolved scenario in memory and a folder on
#: disk: a million (six axes of ten values) took minutes and gigabytes just to list, before the
#: first run. Larger studies are several sweeps.
MAX_RUNS = 100_000
#: The largest sweep file read (a sweep file is a few kilobytes; this bounds a wrong path).
MAX_SWEEP_FILE_BYTES = 16 * 2**20
#: The keys of an ``[[axis]]`` table.
_AXIS_KEYS = ("key", "values", "labels", "name")
#: What an earlier sweep's folder holds: its table, whose first column is ``variant``.
SWEEP_TABLE = "sweep.csv"
#: Which sweep a folder holds (``{"name": ...}``), written before its first run: a sweep
#: resumes only its own folder, since resuming rewrites the table with its own runs alone.
SWEEP_INFO = "sweep.json"

_KEY_PART = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)$")
#: What a folder name may not hold (each run of such characters becomes one ``_``).
_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


@dataclass(frozen=True)
class Axis:
    """One dimension of a sweep: a scenario key and the values it takes."""

    key: str | tuple[str, ...]
    """A dotted key, or several that all take each value (e.g. every link delay)."""
    values: list[Any]
    labels: list[str] | None = None
    """Display names of the values, one per value (default: the values themselves)."""
    name: str | None = None
    """Column name in the sweep table (default: the first key's last part)."""

    def label(self, i: int) -> str:
        """Display name of value ``i``."""
        if self.labels is not None:
            return self.labels[i]
        v = self.values[i]
        return json.dumps(v, separators=(",", ":")) if isinstance(v, (dict, list)) else str(v)

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key this axis sets."""
        return (self.key,) if isinstance(self.key, str) else self.key

    @property
    def column(self) -> str:
        """Column name of this axis in the sweep table: its ``name``, or the first key's last
        part."""
        if self.name is not None:
            return self.name
        return re.sub(r"\[(\d+)\]", r"\1", self.keys[0].split(".")[-1])

    def folder_part(self, i: int) -> str:
        """What value ``i`` adds to a run's folder name."""
        label = self.label(i)
        return label if self.column == "admission" else f"{self.column}={label}"


@dataclass
class Sweep:
    """A base scenario, axes and seeds (what :func:`load_sweep` reads from a sweep file)."""

    name: str
    """The sweep's name (``sweep.json`` records it)."""
    base: Scenario
    axes: list[Axis]
    seeds: list[int] = field(default_factory=list)
    """Every variant runs once per seed (at least one is needed: :func:`check_size`)."""
    folder: Path | None = None
    """What relative paths in axis values are relative to: the sweep file's folder (``None``:
    the working directory)."""


@dataclass(frozen=True)
class SweepRun:
    """One concrete run of a sweep (:func:`expand`)."""

    variant: str
    """Folder name: axis labels and seed, e.g. ``DT__load=0.4__seed=1``."""
    labels: dict[str, str]
    """Each axis's label of its value, by axis column."""
    values: dict[str, Any]
    """Each axis's value, by axis column."""
    seed: int
    scenario: Scenario
    scenario_json: str
    """The resolved scenario as Rust wrote it: what the run runs, and (hashed) the key that
    finds it finished in an earlier run of the sweep."""

    @property
    def columns(self) -> dict[str, Any]:
        """Axis columns of the sweep table: the value itself for plain numbers and strings
        without labels, else the label."""
        return {
            k: v if isinstance(v, (int, float, str)) and not isinstance(v, bool) and self.labels[k] == str(v) else self.labels[k]
            for k, v in self.values.items()
        }


def set_key(tree: dict[str, Any], key: str, value: Any) -> None:
    """Set a dotted ``key`` (``a.b[0].c``) in the scenario dict ``tree`` to ``value``, creating tables as needed (and a
    list item just past the end, when the key names that item as a whole: ``workload[1]``).
    Raises :class:`SpecError` naming the key if it does not fit the tree."""
    parts = key.split(".")
    node: Any = tree
    for n, part in enumerate(parts):
        m = _KEY_PART.match(part)
        if not m:
            raise spec_error(key, None, f"not a scenario key (bad part {part!r})")
        name, idx = m.group(1), [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
        last = n == len(parts) - 1
        if not isinstance(node, dict):
            raise spec_error(key, None, f"{'.'.join(parts[:n])} is not a table")
        if last and not idx:
            if name in ("kind", "policy") and node.get(name) != value:
                # Another variant of a tagged table keeps only the keys that variant has (a
                # sweep from DCTCP to PowerTCP keeps the window keys, drops DCTCP's g).
                keep = variant_fields(name, value)
                if keep is not None:
                    for k in [k for k in node if k not in keep]:
                        del node[k]
            node[name] = copy.deepcopy(value)
            return
        node = node.setdefault(name, {} if idx == [] else [])
        for j, i in enumerate(idx):
            at_end = last and j == len(idx) - 1
            # The item just past the end may be set as a whole: a sweep adds a workload entry.
            if not isinstance(node, list) or i > len(node) or (i == len(node) and not at_end):
                raise spec_error(key, None, f"{name} has no item {i}")
            if at_end:
                if i == len(node):
                    node.append(copy.deepcopy(value))
                else:
                    node[i] = copy.deepcopy(value)
                return
            node = node[i]


def load_sweep(path: str | os.PathLike[str]) -> Sweep:
    """Read a sweep file (see the module docs). Raises :class:`SpecError` naming the key for a
    value of the wrong type, an unknown key, no seeds and a sweep of more than :data:`MAX_RUNS`
    runs; :class:`OSError` for a path that is missing or not a regular file, or a file larger
    than :data:`MAX_SWEEP_FILE_BYTES`."""
    p = Path(path)
    try:
        raw = tomllib.loads(_read_sweep_file(p))
    except tomllib.TOMLDecodeError as e:
        raise spec_error(str(p), None, f"invalid TOML: {e}") from None
    unknown = set(raw) - {"name", "base", "seeds", "axis"}
    if unknown:
        raise spec_error(sorted(unknown)[0], None, "unknown sweep key (expected name, base, seeds, axis)")
    if "base" not in raw:
        raise spec_error("base", None, "a sweep needs `base = \"scenario.toml\"`")
    if not isinstance(raw["base"], str) or not raw["base"]:
        raise spec_error("base", _show(raw["base"]), 'must be the path of a scenario file, e.g. base = "scenario.toml"')
    name = raw.get("name", p.stem)
    if not isinstance(name, str) or not name:
        raise spec_error("name", _show(name), 'must be a non-empty string, e.g. name = "load_sweep" (default: the file\'s name)')
    axes_raw = raw.get("axis", [])
    if not isinstance(axes_raw, list):
        raise spec_error("axis", _show(axes_raw), 'must be [[axis]] tables, each with `key` and `values`')
    axes = [_axis(i, a) for i, a in enumerate(axes_raw)]
    seeds = _seeds(raw["seeds"]) if "seeds" in raw else None
    base = Scenario.load(p.parent / raw["base"])
    sweep = Sweep(name=name, base=base, axes=axes, seeds=[base.seed] if seeds is None else seeds,
                  folder=p.resolve().parent)
    check_size(sweep)
    return sweep


def _read_sweep_file(p: Path) -> str:
    """The text of the sweep file ``p`` (:func:`~slacknet.config.read_text_file`: a regular
    file of at most :data:`MAX_SWEEP_FILE_BYTES`)."""
    return read_text_file(p, "sweep file", MAX_SWEEP_FILE_BYTES)


def _show(value: Any) -> str:
    """A value of the sweep file as TOML-ish text for a message (strings quoted)."""
    return json.dumps(value, default=str)


def _seeds(value: Any) -> list[int]:
    """``seeds``: a non-empty list of whole numbers that are valid seeds. A float or a
    boolean is refused, not truncated (``1.9`` would run seed 1, ``true`` seed 1)."""
    if not isinstance(value, list) or not value:
        raise spec_error("seeds", _show(value), "must be a non-empty list of whole numbers, e.g. seeds = [1, 2, 3] "
                         "(or leave seeds out to run the base's seed)")
    for n, s in enumerate(value):
        if not is_seed(s):
            raise spec_error(f"seeds[{n}]", _show(s), "must be a whole number from 0 to 2^64 - 1, e.g. seeds = [1, 2, 3]")
    return list(value)


def _axis(i: int, a: Any) -> Axis:
    """``axis[i]``, checked key by key (see the module docs for what each holds)."""
    where = f"axis[{i}]"
    if not isinstance(a, dict):
        raise spec_error(where, _show(a), "must be a table with `key` and `values`: write it as [[axis]]")
    unknown = sorted(set(a) - set(_AXIS_KEYS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], _AXIS_KEYS, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise spec_error(f"{where}.{unknown[0]}", None, f"unknown axis key (expected {', '.join(_AXIS_KEYS)}){hint}")
    for k in ("key", "values"):
        if k not in a:
            raise spec_error(f"{where}.{k}", None, "missing: an axis needs `key` (the scenario key it sets) and a "
                             'non-empty `values` list, e.g. key = "workload[0].load" and values = [0.2, 0.4]')
    raw_key = a["key"]
    key: str | tuple[str, ...]
    if isinstance(raw_key, str) and raw_key:
        key = raw_key
    elif isinstance(raw_key, list) and raw_key and all(isinstance(k, str) and k for k in raw_key):
        key = tuple(raw_key)
    else:
        raise spec_error(f"{where}.key", _show(raw_key), 'must be a scenario key such as "workload[0].load", a '
                         'non-empty list of keys that all take each value, or "*" (a joint axis)')
    values = a["values"]
    if not isinstance(values, list) or not values:
        raise spec_error(f"{where}.values", _show(values), "must be a non-empty list, e.g. values = [0.2, 0.4]")
    labels = a.get("labels")
    if labels is not None:
        if not isinstance(labels, list) or not all(isinstance(x, (str, int, float)) and not isinstance(x, bool)
                                                   for x in labels):
            raise spec_error(f"{where}.labels", _show(labels), 'must be a list of names, one per value, e.g. '
                             'labels = ["DT", "LQD"]')
        if len(labels) != len(values):
            raise spec_error(f"{where}.labels", str(len(labels)), f"must have one label per value ({len(values)})")
    name = a.get("name")
    if name is not None and (not isinstance(name, str) or not name):
        raise spec_error(f"{where}.name", _show(name), 'must be a non-empty string, e.g. name = "load"')
    if key == "*":
        # A joint axis: each value is a table of dotted keys set together (a scheme and the
        # transport it runs over).
        if name is None or labels is None:
            raise spec_error(where, None, 'an axis with key = "*" needs a `name` and `labels`')
        for j, v in enumerate(values):
            if not isinstance(v, dict) or not v:
                raise spec_error(f"{where}.values[{j}]", json.dumps(v, default=str),
                                 'with key = "*" each value is a table of dotted keys, e.g. '
                                 '{ "workload[0].scheme" = "atp", "transport.kind" = "atp" }')
    return Axis(key, list(values), None if labels is None else [str(x) for x in labels], name)


def num_runs(sweep: Sweep) -> int:
    """How many runs :func:`expand` makes of ``sweep``: the product of the axes' lengths times
    the seeds, computed without expanding."""
    return math.prod(len(a.values) for a in sweep.axes) * len(sweep.seeds)


def describe_size(sweep: Sweep) -> str:
    """The shape of the sweep's run count, e.g. ``2 x 4 values x 3 seeds``."""
    seeds = f"{len(sweep.seeds)} seed{'s' if len(sweep.seeds) != 1 else ''}"
    return " x ".join(str(len(a.values)) for a in sweep.axes) + (" values x " if sweep.axes else "") + seeds


def check_size(sweep: Sweep) -> None:
    """Refuse (:class:`SpecError`) a sweep with no runs or more than :data:`MAX_RUNS`, from the
    axes' lengths alone, before any run is built."""
    n = num_runs(sweep)
    if n == 0:
        raise spec_error("seeds", "[]", "a sweep needs at least one seed")
    if n > MAX_RUNS:
        raise spec_error("axis", None, f"the sweep has {n} runs ({describe_size(sweep)}), more than {MAX_RUNS}: "
                         "split it into several sweeps, or give its axes fewer values or fewer seeds")


def expand(sweep: Sweep) -> list[SweepRun]:
    """The concrete runs: the cartesian product of the axes, times the seeds. Raises
    :class:`SpecError` for a bad value, naming its key, for a sweep two of whose runs would
    share a folder (see the module docs), and for one of more than :data:`MAX_RUNS` runs."""
    check_size(sweep)  # before the list is built: a million runs would fill memory for minutes
    _check_distinct(sweep)
    runs: list[SweepRun] = []
    folders: dict[str, SweepRun] = {}
    base = json.loads(sweep.base.to_json())
    folder = str(sweep.folder if sweep.folder is not None else Path.cwd())
    for combo in itertools.product(*[range(len(a.values)) for a in sweep.axes]):
        for seed in sweep.seeds:
            tree = copy.deepcopy(base)
            labels, values = {}, {}
            for a, i in zip(sweep.axes, combo):
                if a.key == "*":
                    for k, v in a.values[i].items():
                        set_key(tree, k, v)
                else:
                    for k in a.keys:
                        set_key(tree, k, a.values[i])
                labels[a.column] = a.label(i)
                values[a.column] = a.values[i]
            tree["seed"] = seed
            parts = [_UNSAFE.sub("_", a.folder_part(i)) for a, i in zip(sweep.axes, combo)]
            variant = "__".join(parts + [f"seed={seed}"])
            other = folders.get(variant.casefold())
            if other is not None:
                raise spec_error("axis", None, f"the runs {other.labels} and {labels} would share the folder "
                                 f"{variant!r}: give the values distinct labels")
            tree["name"] = f"{sweep.name}__{variant}"
            resolved = _native.resolve_json(json.dumps(tree), folder)
            run = SweepRun(variant, labels, values, seed, Scenario.model_validate_json(resolved), resolved)
            folders[variant.casefold()] = run
            runs.append(run)
    return runs


def _check_distinct(sweep: Sweep) -> None:
    """Refuse, naming the key, a seed listed twice, an axis whose values would name the same
    folder, and an axis whose column is another's or one of the table's own."""
    for n, s in enumerate(sweep.seeds):
        if s in sweep.seeds[:n]:
            raise spec_error(f"seeds[{n}]", str(s), "is listed twice: each seed runs once per variant")
    reserved = ("variant", "seed", *METRIC_COLUMNS, *STATUS_COLUMNS)
    columns: dict[str, int] = {}
    for n, a in enumerate(sweep.axes):
        # The sweep sets every run's `seed` (from `seeds`) and `name` (from the sweep's and the
        # run's labels) after the axes: an axis on either would run with its values overwritten.
        keys = [k for v in a.values for k in v] if a.key == "*" else list(a.keys)
        for k in keys:
            if k in ("seed", "name"):
                fix = ("list the seeds in the sweep's own `seeds = [1, 2, 3]` (every variant runs once per seed)"
                       if k == "seed" else "the sweep names each run after its labels and seed")
                raise spec_error(f"axis[{n}].key", json.dumps(k), f"an axis cannot set the run's {k}: {fix}")
        if a.column in columns or a.column in reserved:
            whose = f"axis[{columns[a.column]}]'s" if a.column in columns else "one of the sweep table's own"
            raise spec_error(f"axis[{n}].key", json.dumps(a.key), f"its column {a.column!r} is {whose}: "
                             "give the axis a `name`")
        columns[a.column] = n
        folders: dict[str, int] = {}
        for i in range(len(a.values)):
            part = _UNSAFE.sub("_", a.folder_part(i))
            j = folders.setdefault(part.casefold(), i)
            if j != i:
                which = "labels" if a.labels is not None else "values"
                raise spec_error(f"axis[{n}].{which}[{i}]", json.dumps(a.label(i)),
                                 f"names the same run folder ({part!r}) as {which}[{j}] = {json.dumps(a.label(j))}: "
                                 "give the values distinct `labels` (folder names keep letters, digits and ._=-, "
                                 "and ignore case)")


def run_metrics(res: Results) -> dict[str, float]:
    """Per-run metrics of the run ``res``, one float per name of :data:`METRIC_COLUMNS` (the
    same keys, not in that order): ``flows`` and ``unfinished`` flows; p50/p95/p99 slowdown of
    short, long and incast flows (finished flows), the mean slowdown of short, long and all
    finished flows, drops (all, and ``data_drops``: switch drops of data, not of credits or of
    Aeolus's unscheduled packets), ``credit_waste`` (ExpressPass and Aeolus: the fraction of
    credits that reached their sender and sent nothing; NaN without credits), and leaf buffer
    occupancy percentiles (p99, p99.99) as a percentage of the buffer, from the periodic
    samples; the fraction of incast flows that had at least one retransmission timeout
    (``incast_rto_frac``), because with a 10 ms minimum RTO a percentile of incast slowdowns
    often only says whether a few timeouts happened; NetApprox's job metrics (``jobs`` to
    ``bg_jct_mean_us``, with ``occ_mean_kb`` and ``occ_p99_kb``) and training's (``iterations``
    to ``train_fct_p99_us``), NaN where the run has none; and ``wall_s``, the run's wall time."""
    r = res.records
    out: dict[str, float] = {"flows": float(len(r)), "unfinished": float((~r["finished"].astype(bool)).sum())}
    fin = r["finished"].to_numpy(dtype=bool)
    sd = r["slowdown"].to_numpy(dtype=np.float64)
    for name, mask in class_masks(r).items():
        v = sd[mask & fin]
        if name in ("short", "long", "incast"):
            for q in (50, 95, 99):
                out[f"{name}_p{q}"] = float(np.percentile(v, q)) if v.size else math.nan
        if name in ("short", "long", "all"):
            # The mean slowdown (pFabric's "normalized FCT", its figures' average).
            out[f"{name}_mean"] = float(v.mean()) if v.size else math.nan
    incast = r["incast"].to_numpy(dtype=bool)
    rtos = r["num_rtos"].to_numpy(dtype=np.float64)
    out["incast_rto_frac"] = float((rtos[incast] > 0).mean()) if incast.any() else math.nan
    s = res.summary
    out["drops"] = float(s.get("switch_drops", 0) + s.get("nic_drops", 0))
    sw = res.switches
    # Switch drops of data: what admission, queue caps and push-out dropped (not credits, not
    # Aeolus's unscheduled packets dropped selectively).
    out["data_drops"] = float(sum(sw[c].sum() for c in ("drops_admission", "drops_queue_cap", "drops_pushout")
                                  if c in sw.columns))
    # ExpressPass/Aeolus: the fraction of credits that reached their sender and sent nothing.
    delivered = float(s.get("credits_delivered", 0))
    out["credit_waste"] = 1.0 - float(s.get("credits_answered", 0)) / delivered if delivered > 0 else math.nan
    leaves = sw.loc[sw["tier"] == "leaf", ["switch", "buffer_bytes"]]
    occ = res.occupancy
    if len(occ) and len(leaves):
        buf = dict(zip(leaves["switch"], leaves["buffer_bytes"]))
        o = occ[occ["switch"].isin(buf)]
        pct = o["bytes"].to_numpy(dtype=np.float64) / o["switch"].map(buf).to_numpy(dtype=np.float64) * 100
        out["leaf_occ_p99_pct"] = float(np.percentile(pct, 99))
        out["leaf_occ_p9999_pct"] = float(np.percentile(pct, 99.99))
    else:
        out["leaf_occ_p99_pct"] = out["leaf_occ_p9999_pct"] = math.nan
    out.update(_job_metrics(res))
    out.update(_training_metrics(res))
    out["wall_s"] = float(s.get("wall_time_s", math.nan))
    return out


def _job_metrics(res: Results) -> dict[str, float]:
    """NetApprox's job metrics (``job`` rows of ``apps``): of the first workload entry with jobs,
    the number of jobs, how many gave up (their transport ended without what they needed), mean
    and p95 JCT, mean slowdown (JCT over the ideal), the mean and
    largest measured loss rate, ``loss_over`` (the largest loss rate minus its allowance
    ``1 - MSR``: positive means a job lost more than it may), ``retx_frac`` (resent packets
    over packets sent); of the other entries with jobs (``bg_``), the number and mean JCT; and
    the mean and p99 of every switch's sampled buffer occupancy (``occ_mean_kb``,
    ``occ_p99_kb``, the paper's queue lengths). NaN where a run has no jobs; ``jobs`` and
    ``jobs_gave_up`` are 0 where its scenario has ``approx_jobs`` but no job ended (stopped
    early)."""
    nan = math.nan
    out = {k: nan for k in ("jobs", "jobs_gave_up", "jct_mean_us", "jct_p95_us", "job_slowdown", "loss_mean", "loss_max",
                            "loss_over", "retx_frac", "bg_jobs", "bg_jct_mean_us")}
    occ = res.occupancy
    if len(occ):
        b = occ["bytes"].to_numpy(dtype=np.float64) / 1e3
        out["occ_mean_kb"], out["occ_p99_kb"] = float(b.mean()), float(np.percentile(b, 99))
    else:
        out["occ_mean_kb"] = out["occ_p99_kb"] = nan
    apps = res.apps
    jobs = apps[apps["kind"] == "job"] if "kind" in apps.columns else apps.iloc[:0]
    if jobs.empty:
        if any(w.kind == "approx_jobs" for w in res.scenario.workload):
            out["jobs"] = out["jobs_gave_up"] = 0.0  # counted: none ended
        return out
    first = int(jobs["app"].min())
    main, bg = jobs[jobs["app"] == first], jobs[jobs["app"] != first]
    jct = main["duration_us"].to_numpy(dtype=np.float64)
    loss = main["loss_rate"].to_numpy(dtype=np.float64)
    sent = main["packets_sent"].to_numpy(dtype=np.float64)
    retx = main["packets_retx"].to_numpy(dtype=np.float64)
    out.update(
        jobs=float(len(main)),
        jobs_gave_up=float(main["gave_up"].sum()) if "gave_up" in main.columns else nan,
        jct_mean_us=float(jct.mean()),
        jct_p95_us=float(np.percentile(jct, 95)),
        job_slowdown=float((jct / main["ideal_us"].to_numpy(dtype=np.float64)).mean()),
        loss_mean=float(loss.mean()),
        loss_max=float(loss.max()),
        loss_over=float((loss - main["loss_allowance"].to_numpy(dtype=np.float64)).max()),
        retx_frac=float(retx[sent >= 0].sum() / max(sent[sent >= 0].sum(), 1.0)),
    )
    if len(bg):
        out["bg_jobs"] = float(len(bg))
        out["bg_jct_mean_us"] = float(bg["duration_us"].mean())
    return out


def _training_metrics(res: Results) -> dict[str, float]:
    """Training's metrics (``iteration`` rows of ``apps``, of every entry): how many
    iterations, their mean and p99 duration, and ``train_time_us``, the sum of their durations
    (the job time of the bounded-loss ML paper's eq. (1), its network time measured; an entry
    with ``job_compute_us`` counts that compute per iteration in place of its simulated
    ``compute_us``), ``net_time_us``, the network time alone (the sum of the durations less
    the simulated compute phases), ``grad_loss_max``, the largest fraction of a gradient
    transfer's bytes that did not arrive (the iterations' ``loss_rate``: 0 over a reliable
    transport, at most 1 - p over the bounded-loss one), and the
    mean and p99 completion time of the training entries' transfers (its Figure 4c), and
    ``train_rto_flows``, how many of those transfers waited out a retransmission timeout. NaN
    without iterations, but ``iterations``: 0 where the scenario has a training entry (a run
    stopped before its first iteration ended)."""
    nan = math.nan
    out = dict.fromkeys(("iterations", "iter_mean_us", "iter_p99_us", "train_time_us", "net_time_us",
                         "grad_loss_max", "train_fct_mean_us", "train_fct_p99_us", "train_rto_flows"), nan)
    if any(w.kind == "training" for w in res.scenario.workload):
        out["iterations"] = 0.0  # counted: none may have ended
    apps = res.apps
    if apps.empty or "kind" not in apps.columns:
        return out
    its = apps[apps["kind"] == "iteration"]
    d = its["duration_us"].to_numpy(dtype=np.float64)
    if d.size:
        # Eq. (1) counts each entry's job_compute_us in place of its simulated compute_us.
        work = res.scenario.workload
        simulated = counted = 0.0
        for app, n in its["app"].value_counts().items():
            w = work[int(app)] if 0 <= int(app) < len(work) else None
            c = float(getattr(w, "compute_us", 0.0) or 0.0)
            j = getattr(w, "job_compute_us", None)
            simulated += float(n) * c
            counted += float(n) * (c if j is None else float(j))
        net = float(d.sum()) - simulated
        lost = its["loss_rate"].to_numpy(dtype=np.float64) if "loss_rate" in its.columns else np.array([np.nan])
        out.update(iterations=float(d.size), iter_mean_us=float(d.mean()), iter_p99_us=float(np.percentile(d, 99)),
                   train_time_us=net + counted, net_time_us=net,
                   grad_loss_max=float(np.nanmax(lost)) if np.isfinite(lost).any() else nan)
        r = res.records
        train = r["workload"].isin(set(its["app"]))
        out["train_rto_flows"] = float((r.loc[train, "num_rtos"] > 0).sum())
        fct = r.loc[train, "fct_us"].to_numpy(dtype=np.float64)
        fct = fct[np.isfinite(fct)]
        if fct.size:
            out.update(train_fct_mean_us=float(fct.mean()), train_fct_p99_us=float(np.percentile(fct, 99)))
    return out


def _run_one(scenario_json: str, out: str) -> dict[str, float]:
    """One run, in a worker process: run the resolved scenario, save it to ``out``."""
    from .sim import run

    # The worker validates its run once (the expansion checked the sweep's values up front).
    res = run(_native.validate_json(scenario_json, str(Path.cwd())))
    res.save(out)
    return run_metrics(res)


def _init_worker() -> None:
    """Workers leave interrupts to the sweep's process, which stops them: Ctrl-C in a terminal
    reaches every process of its group, and the sweep's SIGTERM handler, inherited through
    fork, would keep a worker alive."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_sweep(
    sweep: Sweep,
    out_dir: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    on_done: Callable[[SweepRun, dict[str, Any]], None] | None = None,
    cluster: Any = None,
) -> pd.DataFrame:
    """Run every run of ``sweep`` (``jobs`` worker processes, default one per core), save each
    run's results under ``out_dir/<variant>/`` and return (and write to ``sweep.csv`` as runs
    end) one row per run: the axis labels, the seed, the metrics, ``status``, ``reused`` and
    ``error``. Runs finished in ``out_dir`` before are reused, failed runs are recorded (see
    the module docs). ``on_done(run, row)`` is called as each run ends, the reused ones first.

    ``cluster`` runs them on a cluster instead (:mod:`slacknet.cluster`): a Dask scheduler's
    address (``"tcp://host:8786"``), ``"ray"`` or ``"ray://host:10001"``, a
    ``distributed.Client`` or any :class:`concurrent.futures.Executor`; ``jobs`` then caps the
    runs at once (default: the cluster's cores) and each run's results come back to this
    process, which saves them.

    Raises, before anything runs, :class:`~slacknet.ResultsError` if ``out_dir`` is not a
    folder a sweep may write (:func:`check_sweep_target`) or a run's folder exists but is not a
    results folder, :class:`SpecError` (see :func:`expand`), :class:`ValueError` for ``jobs``
    below 1 and :class:`~slacknet.cluster.ClusterError` for a cluster that cannot run it."""
    out = Path(out_dir)
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs = {jobs}: must be at least 1 (None: one per core)")
    check_sweep_target(out, sweep_name=sweep.name)
    runs = expand(sweep)
    for r in runs:
        check_save_target(out / r.variant)
    # Runs finished here before (read only: nothing is written before the cluster answers).
    before = {i: m for i, r in enumerate(runs) if (m := _finished_before(out / r.variant, r)) is not None}
    with ExitStack() as stack:
        # The cluster is asked before the folder is made (a wrong address leaves nothing
        # behind), and only if a run is left to run.
        c = None
        if cluster is not None and len(before) < len(runs):
            c = stack.enter_context(connect(cluster))
        out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(json.dumps({"name": sweep.name}) + "\n", out / SWEEP_INFO)
        table = out / SWEEP_TABLE
        columns = ["variant", *(a.column for a in sweep.axes), "seed", *METRIC_COLUMNS, *STATUS_COLUMNS]
        # Every run is listed from the start: an interrupted sweep's table must not read as a
        # whole one (it listed only the runs that ended, each "ok").
        rows: dict[int, dict[str, Any]] = {
            i: {"variant": r.variant, **r.columns, "seed": r.seed, **dict.fromkeys(METRIC_COLUMNS, math.nan),
                "status": PENDING, "reused": False, "error": ""}
            for i, r in enumerate(runs)
        }

        def record(i: int, metrics: dict[str, float] | None, error: str, reused: bool) -> None:
            r = runs[i]
            rows[i] = {
                "variant": r.variant, **r.columns, "seed": r.seed,
                **(metrics if metrics is not None else dict.fromkeys(METRIC_COLUMNS, math.nan)),
                "status": "ok" if metrics is not None else "failed", "reused": reused, "error": error,
            }
            if not reused:  # the table first: it holds the run even if on_done raises
                _write_table(table, columns, rows)
            if on_done is not None:
                on_done(r, rows[i])

        def ran(i: int, metrics: dict[str, float] | None, error: str) -> None:
            record(i, metrics, error, reused=False)

        todo = []
        for i in range(len(runs)):
            if i in before:
                record(i, before[i], "", reused=True)
            else:
                todo.append(i)
        _write_table(table, columns, rows)
        if todo and c is not None:
            with _sigterm_exits():
                _run_on_cluster(c, runs, todo, out, max(1, min(jobs or c.cores, len(todo))), ran)
        elif todo:
            with _sigterm_exits():
                _run_all(runs, todo, out, max(1, min(jobs or os.cpu_count() or 1, len(todo))), ran)
        return _write_table(table, columns, rows)


def check_sweep_target(directory: str | os.PathLike[str], *, name: str | None = None,
                       sweep_name: str | None = None) -> None:
    """Raise :class:`~slacknet.ResultsError` unless a sweep may write into ``directory``: it
    does not exist, or it is an empty folder, or an earlier sweep's (it holds a ``sweep.csv``
    whose first column is ``variant``), which the sweep resumes. Anything else (``/``, a home
    folder, one run's results folder) would get run folders and a table added to what it holds.
    With ``sweep_name``, an earlier sweep's folder must also be that sweep's (its ``sweep.json``
    names it; a folder written before slacknet kept the name is taken as it is): resuming
    another sweep would replace that sweep's table with this one's runs.
    ``name`` is what the message calls the folder (default: its path; the CLI names ``--out``)."""
    d = Path(directory)
    what = name if name is not None else str(d)
    if not os.path.lexists(d):
        return
    if not d.is_dir():
        raise ResultsError(f"{what}: it is a file, not a folder; choose a new output folder")
    if is_results_folder(d):
        raise ResultsError(f"{what}: it is one run's results folder (it holds {MANIFEST}), not a sweep's; adding runs "
                           "to it would break it: choose a new output folder")
    table = d / SWEEP_TABLE
    if table.is_file() and not table.is_symlink():
        with open(table, encoding="utf-8", errors="replace") as f:
            if f.readline().startswith("variant,"):
                earlier = _sweep_name_in(d)
                if sweep_name is not None and earlier is not None and earlier != sweep_name:
                    raise ResultsError(f"{what}: it holds the sweep {earlier!r}, not {sweep_name!r}; resuming into it "
                                       f"would replace that sweep's {SWEEP_TABLE} with this one's runs: choose a new "
                                       f"output folder (or give this sweep name = {earlier!r} if it is the same study)")
                return
        raise ResultsError(f"{what}: its {SWEEP_TABLE} is not a sweep's table (its first column is not `variant`), so "
                           "it is not an earlier sweep's folder: choose a new output folder")
    entries = sorted(p.name for p in d.iterdir())
    if entries:
        more = f" and {len(entries) - 1} more" if len(entries) > 1 else ""
        raise ResultsError(f"{what}: it holds {entries[0]!r}{more} and no {SWEEP_TABLE}, so it is not an earlier "
                           "sweep's folder: choose a new output folder (or an earlier sweep's, to resume it)")


def _sweep_name_in(folder: Path) -> str | None:
    """The sweep name ``folder``'s ``sweep.json`` records, or ``None`` if it records none (a
    folder from before the name was kept, or a file that is not ours)."""
    info = folder / SWEEP_INFO
    if not info.is_file() or info.is_symlink() or info.stat().st_size > 2**16:
        return None
    try:
        name = json.loads(info.read_text(encoding="utf-8")).get("name")
    except (OSError, ValueError, AttributeError, RecursionError):  # RecursionError: nested too deep
        return None
    return name if isinstance(name, str) else None


def _finished_before(folder: Path, run: SweepRun) -> dict[str, float] | None:
    """The metrics of ``run`` if ``folder`` holds its complete results from before: same
    resolved scenario, seed, slacknet version and engine (built from the same sources:
    ``_native.engine_sha256()``), and every file as its manifest says."""
    from . import __version__

    if not folder.is_dir():
        return None
    try:
        m = read_manifest(folder)
        if (m.scenario_sha256, m.seed, m.slacknet_version, m.engine_sha256) != (
                scenario_sha256(run.scenario_json), run.seed, __version__, _native.engine_sha256()):
            return None
        return run_metrics(Results.load(folder))
    except (ResultsError, OSError):
        return None


def _run_all(
    runs: list[SweepRun], todo: list[int], out: Path, jobs: int,
    ran: Callable[[int, dict[str, float] | None, str], None],
) -> None:
    """Run ``runs[i]`` for each ``i`` in ``todo`` in worker processes, ``jobs`` at a time, and
    report each with ``ran(i, metrics or None, error)``. When a worker dies the pool breaks and
    fails every run in it: those run again one at a time, each in a pool of its own (so the one
    that kills its worker alone is the one failed), and the rest in a new pool."""
    queue, suspects = deque(todo), deque[int]()
    while queue or suspects:
        if suspects:
            i = suspects.popleft()
            if _run_pool(runs, deque([i]), out, 1, ran):
                ran(i, None, WORKER_DIED)
        else:
            suspects.extend(_run_pool(runs, queue, out, jobs, ran))


def _run_pool(
    runs: list[SweepRun], queue: deque[int], out: Path, jobs: int,
    ran: Callable[[int, dict[str, float] | None, str], None],
) -> list[int]:
    """Run from ``queue`` in one pool of ``jobs`` workers until it is empty or the pool
    breaks; return the runs the broken pool failed (none if it did not break)."""
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker)
    running: dict[Future[dict[str, float]], int] = {}
    try:
        while True:
            while queue and len(running) < jobs:
                i = queue.popleft()
                try:
                    running[pool.submit(_run_one, runs[i].scenario_json, str(out / runs[i].variant))] = i
                except BrokenProcessPool:  # an idle worker died: a new pool takes the rest
                    queue.appendleft(i)
                    break
            if not running:
                return []
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            if any(isinstance(f.exception(), BrokenProcessPool) for f in done):
                wait(running)  # the broken pool fails every run still in it
                broken = []
                for f, i in running.items():
                    if isinstance(f.exception(), BrokenProcessPool):
                        broken.append(i)
                    else:
                        _report(f, i, ran)
                return broken
            for f in done:
                _report(f, running.pop(f), ran)
    except BaseException:
        _stop_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_on_cluster(
    c: Any, runs: list[SweepRun], todo: list[int], out: Path, jobs: int,
    ran: Callable[[int, dict[str, float] | None, str], None],
) -> None:
    """Run ``runs[i]`` for each ``i`` in ``todo`` on the cluster ``c`` (a
    :class:`slacknet.cluster.Cluster`), ``jobs`` at a time; save each run's results as they
    come back and report it with ``ran``. On an interrupt the runs submitted are cancelled."""
    from . import __version__

    engine = _native.engine_sha256()
    queue = deque(todo)
    running: dict[Future[Any], int] = {}
    try:
        while True:
            while queue and len(running) < jobs:
                i = queue.popleft()
                running[c.executor.submit(run_remote, runs[i].scenario_json, __version__, engine)] = i
            if not running:
                return
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for f in done:
                i = running.pop(f)
                e = f.exception()
                if e is not None:
                    ran(i, None, str(e) if isinstance(e, RunFailed) else f"{type(e).__name__}: {_first_line(e)}")
                    continue
                res, metrics = f.result()
                try:
                    res.save(out / runs[i].variant)
                except (ResultsError, OSError) as e2:
                    ran(i, None, f"saving its results: {type(e2).__name__}: {_first_line(e2)}")
                    continue
                ran(i, metrics, "")
    except BaseException:
        c.cancel(list(running))
        raise


def _report(f: Future[dict[str, float]], i: int, ran: Callable[[int, dict[str, float] | None, str], None]) -> None:
    e = f.exception()
    if e is None:
        ran(i, f.result(), "")
    else:
        ran(i, None, f"{type(e).__name__}: {_first_line(e)}")


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's worker processes, running or idle. Before Python 3.14
    (``terminate_workers``) the pool's process table is the only handle on them."""
    procs = list((pool._processes or {}).values())
    for p in procs:
        p.terminate()
    for p in procs:
        p.join(5)
        if p.is_alive():
            p.kill()
    # Release the pool's manager thread too: interpreter exit joins it, and a pool whose
    # workers were killed under it must not keep the process alive.
    # (typeshed types this private attribute wrongly, as the wakeup object: read it untyped)
    manager: threading.Thread | None = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    # CORRECTNESS: let the manager thread finish now, closing its wakeup pipe on the way out.
    # Left running, it races with interpreter exit (concurrent.futures' `_python_exit` writes
    # to that pipe while the thread closes it: "Exception ignored ... Bad file descriptor" and
    # a traceback on a sweep stopped by SIGTERM; CPython before 3.12 checks and writes without
    # a lock). Bounded: its workers are gone, so it has nothing left to wait for.
    if manager is not None:
        manager.join(10)


@contextmanager
def _sigterm_exits() -> Iterator[None]:
    """While the sweep runs, SIGTERM raises ``SystemExit(143)`` in the main thread instead of
    ending the process at once, so that the workers are stopped first. Left alone when called
    from another thread or when the program handles SIGTERM itself."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return

    def exit_(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, exit_)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _write_table(path: Path, columns: list[str], rows: dict[int, dict[str, Any]]) -> pd.DataFrame:
    """The table of the runs ended so far, in run order, written atomically to ``path``."""
    table = pd.DataFrame([rows[i] for i in sorted(rows)], columns=columns)
    write_csv_atomic(table, path)
    return table
