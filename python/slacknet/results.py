"""What a run produced, as pandas DataFrames, and its on-disk layout.

A results folder holds ``scenario.json`` (the resolved scenario), ``records.parquet`` (one row
per flow), ``apps.parquet`` (one row per completed application-level unit: job, iteration,
round, coflow, relayed block; with its ideal completion time where one is defined),
``switches.parquet``, ``queues.parquet``, ``occupancy.parquet``, ``links.parquet`` (bytes
and packets per link) and ``summary.json``
(totals, wall time, rates, seed, slacknet version and git hash); with ``[run.timeseries]``
also ``queue_series.parquet`` and ``transfer_series.parquet`` (:attr:`Results.queue_series`,
:attr:`Results.transfer_series`). :meth:`Results.load` reads it back; a folder without the
time series (or written by an older slacknet) reads them as empty tables with their columns.

Times in the native columns are integer picoseconds (``*_ps``); :attr:`Results.records` adds
float microsecond columns ``start_us``, ``fct_us`` and ``ideal_fct_us`` (``fct_us`` is NaN for
unfinished flows); :attr:`Results.apps` adds ``start_us``, ``duration_us`` and ``ideal_us``
(NaN where the application defines no ideal).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .config import Scenario

__all__ = ["Results", "ResultsError", "RESULT_FILES", "SERIES_FILES"]

#: The files :meth:`Results.save` writes (and :meth:`Results.load` needs).
RESULT_FILES = (
    "scenario.json",
    "records.parquet",
    "apps.parquet",
    "switches.parquet",
    "queues.parquet",
    "occupancy.parquet",
    "links.parquet",
    "summary.json",
)

#: The time-series files :meth:`Results.save` writes when the run had ``[run.timeseries]``.
SERIES_FILES = ("queue_series.parquet", "transfer_series.parquet")

_SERIES = ("queue_series", "transfer_series")
_TABLES = ("records", "apps", "switches", "queues", "occupancy", "links") + _SERIES
#: Tables a folder written by an older slacknet may lack (read as empty).
_OPTIONAL = ("apps.parquet",) + SERIES_FILES


class ResultsError(ValueError):
    """A results folder is missing or incomplete."""


def _columns_to_frame(cols: Mapping[str, Any]) -> pd.DataFrame:
    data: dict[str, Any] = {}
    for name, col in cols.items():
        if isinstance(col, tuple):
            dtype, raw = col
            data[name] = np.frombuffer(raw, dtype=np.dtype(dtype))
        else:
            data[name] = pd.Series(list(col), dtype=object if not len(col) else None)
    return pd.DataFrame(data)


def _add_derived(records: pd.DataFrame) -> pd.DataFrame:
    if records.empty and "fct_ps" not in records.columns:
        return records
    r = records
    r["start_us"] = r["start_ps"].to_numpy(dtype=np.float64) / 1e6
    fct = r["fct_ps"].to_numpy(dtype=np.float64)
    r["fct_us"] = np.where(r["finished"].to_numpy(dtype=bool), fct / 1e6, np.nan)
    r["ideal_fct_us"] = r["ideal_fct_ps"].to_numpy(dtype=np.float64) / 1e6
    return r


def _add_app_derived(apps: pd.DataFrame) -> pd.DataFrame:
    if "start_ps" not in apps.columns:
        return apps
    apps["start_us"] = apps["start_ps"].to_numpy(dtype=np.float64) / 1e6
    apps["duration_us"] = apps["duration_ps"].to_numpy(dtype=np.float64) / 1e6
    ideal = apps["ideal_ps"].to_numpy(dtype=np.float64)
    apps["ideal_us"] = np.where(ideal >= 0, ideal / 1e6, np.nan)
    return apps


def _git_hash() -> str | None:
    """The commit of the slacknet source tree this package runs from, if it is a checkout."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{out}-dirty" if dirty else out or None


def _version() -> str:
    from . import __version__

    return __version__


def _empty_table(name: str) -> pd.DataFrame:
    """Table ``name`` with its columns and dtypes and no rows, as the simulator defines it."""
    from . import _native

    return _columns_to_frame(_native.empty_results()[name])


class Results:
    """The outcome of one run: flow records, application-unit records, switch counters, queue
    maxima, occupancy samples, per-link counters, the optional time series, a summary dict and
    the resolved scenario.

    The time series (``[run.timeseries]``; empty tables with the same columns when off), one
    row per sample and item, times in integer picoseconds:

    - :attr:`queue_series`: one row per *non-empty* queue at each sample (sparse: a queue
      missing at a sample time was empty): ``time_ps``, ``link`` (egress link id), ``node``
      (the transmitting node), ``switch`` (switch index, ``-1`` for a host NIC), ``queue``
      (class), ``bytes`` (waiting; the packet being serialized is not counted).
    - :attr:`transfer_series`: one row per transfer in flight at each sample (from its start
      until its completion time is measured): ``time_ps``, ``flow`` (its row in
      :attr:`records`), ``cwnd_bytes`` (0 without a window), ``rate_bps`` (the pacing rate or
      rate cap where the sender enforces one, ``is_paced``; else an estimate: ``cwnd / srtt``,
      NaN before the first RTT sample, or the NIC rate of an unpaced UDP source), ``is_paced``,
      ``srtt_ps``, ``sent_bytes`` (payload sent, retransmissions included),
      ``delivered_bytes`` (distinct payload at the receiver), then one float column per
      transport-specific value the simulator declares (``alpha``: DCTCP's alpha in [0, 1];
      NaN for transports without it).
    """

    records: pd.DataFrame
    apps: pd.DataFrame
    switches: pd.DataFrame
    queues: pd.DataFrame
    occupancy: pd.DataFrame
    links: pd.DataFrame
    queue_series: pd.DataFrame
    transfer_series: pd.DataFrame
    summary: dict[str, Any]

    def __init__(
        self,
        *,
        records: pd.DataFrame,
        switches: pd.DataFrame,
        queues: pd.DataFrame,
        occupancy: pd.DataFrame,
        links: pd.DataFrame,
        summary: dict[str, Any],
        scenario: Scenario | str,
        apps: pd.DataFrame | None = None,
        queue_series: pd.DataFrame | None = None,
        transfer_series: pd.DataFrame | None = None,
    ) -> None:
        self.records = records
        self.apps = apps if apps is not None else pd.DataFrame()
        self.queue_series = queue_series if queue_series is not None else _empty_table("queue_series")
        self.transfer_series = transfer_series if transfer_series is not None else _empty_table("transfer_series")
        self.switches = switches
        self.queues = queues
        self.occupancy = occupancy
        self.links = links
        self.summary = summary
        # The resolved scenario as Rust wrote it; typed (a pydantic Scenario) on first access.
        self._scenario: Scenario | None = scenario if isinstance(scenario, Scenario) else None
        self._scenario_json = scenario.to_json(indent=2) if isinstance(scenario, Scenario) else scenario

    @property
    def scenario(self) -> Scenario:
        """The resolved scenario the run came from (every default filled in)."""
        if self._scenario is None:
            self._scenario = Scenario.model_validate_json(self._scenario_json)
        return self._scenario

    @classmethod
    def from_native(
        cls, raw: Mapping[str, Any], *, scenario: Scenario | str, wall_time_s: float
    ) -> Results:
        """Wrap what ``_native.Simulation.results()`` returned; ``scenario`` is the resolved
        scenario (a :class:`Scenario` or the JSON text of ``ValidScenario.to_json()``)."""
        meta = json.loads(scenario) if isinstance(scenario, str) else {"seed": scenario.seed, "name": scenario.name}
        tables = {t: _columns_to_frame(raw[t]) for t in _TABLES}
        tables["records"] = _add_derived(tables["records"])
        tables["apps"] = _add_app_derived(tables["apps"])
        summary = dict(raw["summary"])
        wall = max(float(wall_time_s), 1e-9)
        summary["wall_time_s"] = float(wall_time_s)
        summary["events_per_s"] = summary.get("events", 0) / wall
        summary["packet_hops_per_s"] = summary.get("packet_hops", 0) / wall
        summary["sim_time_ms"] = summary.get("sim_end_ps", 0) / 1e9
        summary["seed"] = meta["seed"]
        summary["scenario"] = meta["name"]
        summary["slacknet_version"] = _version()
        summary["git_hash"] = _git_hash()
        return cls(scenario=scenario, summary=summary, **tables)

    # -- persistence --

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the results folder (created if needed); returns its path."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        text = self._scenario_json if self._scenario is None else self._scenario.to_json(indent=2)
        (d / "scenario.json").write_text(text.rstrip() + "\n", encoding="utf-8")
        for t in _TABLES:
            frame: pd.DataFrame = getattr(self, t)
            if t in _SERIES and frame.empty and not self.has_timeseries:
                continue
            frame.to_parquet(d / f"{t}.parquet", engine="pyarrow", index=False)
        (d / "summary.json").write_text(
            json.dumps(self.summary, indent=2, sort_keys=True, default=_json_default) + "\n",
            encoding="utf-8",
        )
        return d

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Results:
        """Read a folder written by :meth:`save`. Raises :class:`ResultsError` if it is not one."""
        d = Path(directory)
        if not d.is_dir():
            raise ResultsError(f"no such results folder: {d}")
        missing = [f for f in RESULT_FILES if f not in _OPTIONAL and not (d / f).is_file()]
        if missing:
            raise ResultsError(f"{d} is not a slacknet results folder (missing {', '.join(missing)})")
        try:
            scenario = (d / "scenario.json").read_text(encoding="utf-8")
            json.loads(scenario)
            summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
            tables = {
                t: pd.read_parquet(d / f"{t}.parquet", engine="pyarrow") if (d / f"{t}.parquet").is_file() else None
                for t in _TABLES
            }
        except (ValueError, OSError) as e:
            raise ResultsError(f"{d}: cannot read results: {e}") from None
        return cls(scenario=scenario, summary=summary, **tables)

    # -- conveniences --

    @property
    def num_flows(self) -> int:
        """Flows in the run."""
        return len(self.records)

    @property
    def has_timeseries(self) -> bool:
        """Whether the run sampled time series (its scenario has ``[run.timeseries]``)."""
        return self.scenario.run.timeseries is not None

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<Results {s.get('scenario', '?')!r}: {s.get('finished_flows', '?')}/"
            f"{s.get('num_flows', '?')} flows finished, {s.get('events', '?')} events, "
            f"{s.get('wall_time_s', float('nan')):.3g} s wall>"
        )


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")
