"""What a run produced, as pandas DataFrames, and its on-disk layout.

A results folder holds ``scenario.json`` (the resolved scenario), ``records.parquet`` (one row
per flow), ``apps.parquet`` (one row per completed application-level unit: job, iteration,
round, coflow, relayed block; with its ideal completion time where one is defined),
``switches.parquet``, ``queues.parquet``, ``occupancy.parquet``, ``links.parquet`` (bytes
and packets per link) and ``summary.json``
(totals, wall time, rates, seed, slacknet version and git hash). :meth:`Results.load` reads it
back.

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

__all__ = ["Results", "ResultsError", "RESULT_FILES"]

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

_TABLES = ("records", "apps", "switches", "queues", "occupancy", "links")
#: Tables a folder written by an older slacknet may lack (read as empty).
_OPTIONAL = ("apps.parquet",)


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


class Results:
    """The outcome of one run: flow records, application-unit records, switch counters, queue
    maxima, occupancy samples, per-link counters, a summary dict and the resolved scenario."""

    records: pd.DataFrame
    apps: pd.DataFrame
    switches: pd.DataFrame
    queues: pd.DataFrame
    occupancy: pd.DataFrame
    links: pd.DataFrame
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
    ) -> None:
        self.records = records
        self.apps = apps if apps is not None else pd.DataFrame()
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
                t: pd.read_parquet(d / f"{t}.parquet", engine="pyarrow") if (d / f"{t}.parquet").is_file() else pd.DataFrame()
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
