"""Summaries of a run: FCT slowdown percentiles per flow class and switch counters per tier.

Flow classes (by size in bytes, 1 KB = 1000 B):

- ``short``: < 100 KB and not incast;
- ``long``: >= 1 MB and not incast;
- ``incast``: flows of incast queries, whatever their size;
- ``all``: every flow.

Slowdown percentiles are over finished flows only; the ``unfinished`` column counts the rest.

Every function takes a run's tables (:class:`~slacknet.Results` attributes) and raises
``ValueError`` naming the table and column, for a table that lacks a column it reads or holds
values no run gives there (a flag that is not a boolean, a count that is not a number or is
NaN, a finished flow whose slowdown is not a positive number).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = [
    "SHORT_MAX_BYTES",
    "LONG_MIN_BYTES",
    "FLOW_CLASSES",
    "class_masks",
    "fct_table",
    "switch_table",
    "summary_table",
    "render_summary",
    "app_table",
]

#: Flows below this size (and not incast) are ``short``.
SHORT_MAX_BYTES = 100_000
#: Flows at least this size (and not incast) are ``long``.
LONG_MIN_BYTES = 1_000_000
#: Class names in display order.
FLOW_CLASSES = ("short", "long", "incast", "all")

_TIER_ORDER = {"leaf": 0, "spine": 1, "core": 2}


def _require(frame: pd.DataFrame, table: str, columns: tuple[str, ...]) -> None:
    """ValueError unless ``frame`` (the run's table ``table``) is a DataFrame with ``columns``."""
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{table} is a {type(frame).__name__}, not a DataFrame: pass Results.{table}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{table} has no column {missing[0]!r}: pass Results.{table} (a run's {table} table)")


def _flags(frame: pd.DataFrame, table: str, column: str) -> np.ndarray:
    """Column ``column`` of ``frame`` as booleans; ValueError if it holds anything else (NaN,
    text: ``to_numpy(dtype=bool)`` reads both as True)."""
    col = frame[column]
    if len(col) and not (pd.api.types.is_bool_dtype(col.dtype) and not col.isna().any()):
        what = "NaN" if col.isna().any() else col.dtype
        raise ValueError(f"{table}.{column} holds {what}, not booleans: pass Results.{table}")
    flags: np.ndarray = col.to_numpy(dtype=bool)
    return flags


def _numbers(frame: pd.DataFrame, table: str, column: str) -> np.ndarray:
    """Column ``column`` of ``frame`` as float64; ValueError if it is not numeric or holds NaN."""
    col = frame[column]
    if len(col) and (not pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype)
                     or col.isna().any()):
        what = "NaN" if pd.api.types.is_numeric_dtype(col.dtype) else col.dtype
        raise ValueError(f"{table}.{column} holds {what}, not numbers: pass Results.{table}")
    values: np.ndarray = col.to_numpy(dtype=np.float64)
    return values


def _finished_slowdowns(records: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``(finished, slowdown)`` of ``records``: the boolean mask of finished flows and every
    flow's slowdown (NaN for the unfinished). Raises ``ValueError`` if a finished flow's
    slowdown is not a positive number, which no run gives."""
    _require(records, "records", ("finished", "slowdown"))
    finished = _flags(records, "records", "finished")
    col = records["slowdown"]
    if len(col) and (not pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype)):
        raise ValueError(f"records.slowdown holds {col.dtype}, not numbers: pass Results.records")
    slowdown = col.to_numpy(dtype=np.float64)
    bad = finished & ~(np.isfinite(slowdown) & (slowdown > 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"records: flow at row {i} finished with slowdown {slowdown[i]}, not a positive number "
                         "(FCT / ideal FCT): pass Results.records")
    return finished, slowdown


def class_masks(records: pd.DataFrame) -> dict[str, np.ndarray]:
    """Boolean row masks of ``records`` for each class of :data:`FLOW_CLASSES`."""
    _require(records, "records", ("size_bytes", "incast"))
    size = _numbers(records, "records", "size_bytes")
    incast = _flags(records, "records", "incast")
    return {
        "short": (size < SHORT_MAX_BYTES) & ~incast,
        "long": (size >= LONG_MIN_BYTES) & ~incast,
        "incast": incast,
        "all": np.ones(len(records), dtype=bool),
    }


def fct_table(records: pd.DataFrame) -> pd.DataFrame:
    """Per flow class of ``records`` (:data:`FLOW_CLASSES`): ``flows``, ``finished``,
    ``unfinished`` and the slowdown of finished flows ``p50_slowdown``, ``p95_slowdown`` and
    ``p99_slowdown`` (NaN when a class has no finished flow). Indexed by class name."""
    finished, slowdown = _finished_slowdowns(records)
    rows = []
    for name, mask in class_masks(records).items():
        sd = slowdown[mask & finished]
        pct = np.percentile(sd, [50, 95, 99]) if sd.size else [math.nan] * 3
        rows.append(
            {
                "class": name,
                "flows": int(mask.sum()),
                "finished": int((mask & finished).sum()),
                "unfinished": int((mask & ~finished).sum()),
                "p50_slowdown": float(pct[0]),
                "p95_slowdown": float(pct[1]),
                "p99_slowdown": float(pct[2]),
            }
        )
    return pd.DataFrame(rows).set_index("class")


def switch_table(switches: pd.DataFrame, occupancy: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per switch tier, from a run's ``switches`` table: ``switches``, total ``drops``
    (admission + queue cap + push-out; not credit or selective drops), ``ecn_marks``,
    the largest per-switch p99 of sampled occupancy (``occ_p99_bytes``), the largest occupancy
    seen (``max_occupancy_bytes``) and the buffer size (``buffer_bytes``, the largest in the
    tier). Indexed by tier, leaf first.

    ``occ_p99_bytes`` is NaN for a tier none of whose switches was sampled (sampling off, or a
    run that ended before its first sample), where the simulator's percentile says 0 for want
    of data: told by the ``occ_samples`` column, or for a results folder saved before it
    existed by the run's ``occupancy`` samples if given."""
    cols = ["switches", "drops", "ecn_marks", "occ_p99_bytes", "max_occupancy_bytes", "buffer_bytes"]
    counts = ("drops_admission", "drops_queue_cap", "drops_pushout", "ecn_marks", "occ_p99_bytes",
              "max_occupancy_bytes", "buffer_bytes")
    _require(switches, "switches", ("switch", "tier") + counts)
    if switches.empty:
        return pd.DataFrame(columns=cols, index=pd.Index([], name="tier"))
    for c in counts + (("occ_samples",) if "occ_samples" in switches.columns else ()):
        _numbers(switches, "switches", c)
    if occupancy is not None and "occ_samples" not in switches.columns:
        _require(occupancy, "occupancy", ("switch",))
    s = switches.assign(
        drops=switches["drops_admission"].astype(np.int64)
        + switches["drops_queue_cap"].astype(np.int64)
        + switches["drops_pushout"].astype(np.int64),
        tier=switches["tier"].astype(str),
    )
    sampled = (s["occ_samples"] > 0 if "occ_samples" in s.columns
               else s["switch"].isin(occupancy["switch"].unique()) if occupancy is not None else None)
    if sampled is not None:
        s["occ_p99_bytes"] = s["occ_p99_bytes"].astype(np.float64).where(sampled)
    g = s.groupby("tier", sort=False)
    out = pd.DataFrame(
        {
            "switches": g.size(),
            "drops": g["drops"].sum(),
            "ecn_marks": g["ecn_marks"].sum(),
            "occ_p99_bytes": g["occ_p99_bytes"].max(),
            "max_occupancy_bytes": g["max_occupancy_bytes"].max(),
            "buffer_bytes": g["buffer_bytes"].max(),
        }
    )
    # Integers, but for a percentile without samples (NaN).
    out = out.astype({c: np.int64 for c in cols if not out[c].isna().any()})
    out = out.loc[sorted(out.index, key=lambda t: (_TIER_ORDER.get(t, 99), t))]
    out.index.name = "tier"
    return out


def summary_table(
    records: pd.DataFrame, switches: pd.DataFrame, occupancy: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Both tables stacked, of ``records`` and ``switches``: a two-level index ``(section,
    group)`` with section ``fct`` (rows of :func:`fct_table`) and ``switch`` (rows of
    :func:`switch_table`, with ``occupancy`` if given); every column float, and NaN in columns
    that do not apply to a section."""
    f = fct_table(records)
    s = switch_table(switches, occupancy)
    parts = {"fct": f, "switch": s}
    frames = []
    for section, t in parts.items():
        t = t.copy()
        t.index = pd.MultiIndex.from_arrays(
            [[section] * len(t), list(t.index)], names=["section", "group"]
        )
        frames.append(t.astype(np.float64))
    return pd.concat(frames, axis=0, sort=False)


def _fmt_num(x: float, fmt: Callable[[float], str]) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return fmt(x)


def _fmt_bytes(b: float) -> str:
    b = float(b)
    for unit, scale in (("MB", 1e6), ("KB", 1e3)):
        if abs(b) >= scale:
            return f"{b / scale:.1f} {unit}"
    return f"{b:.0f} B"


def app_table(apps: pd.DataFrame) -> pd.DataFrame:
    """Application-level units of ``apps`` by (application, kind), the index: ``units`` (their
    count), ``p50_us`` and ``p95_us`` (completion time, microseconds) and ``p50_slowdown``
    (median slowdown against the ideal; NaN where none is defined). Empty for an empty
    ``apps``."""
    cols = ["units", "p50_us", "p95_us", "p50_slowdown"]
    if isinstance(apps, pd.DataFrame) and (apps.empty or "duration_ps" not in apps.columns):
        return pd.DataFrame(columns=cols)
    _require(apps, "apps", ("app", "kind", "duration_ps", "slowdown"))
    for c in ("app", "duration_ps", "slowdown"):
        if c != "slowdown":  # NaN where the application defines no ideal
            _numbers(apps, "apps", c)
        elif not pd.api.types.is_numeric_dtype(apps[c].dtype):
            raise ValueError(f"apps.slowdown holds {apps[c].dtype}, not numbers: pass Results.apps")
    rows = {}
    for (app, kind), g in apps.groupby(["app", "kind"], sort=True):
        d = g["duration_ps"].to_numpy(dtype=np.float64) / 1e6
        sd = g["slowdown"].to_numpy(dtype=np.float64)
        sd = sd[~np.isnan(sd)]
        rows[(int(app), str(kind))] = {
            "units": float(len(g)),
            "p50_us": float(np.percentile(d, 50)),
            "p95_us": float(np.percentile(d, 95)),
            "p50_slowdown": float(np.median(sd)) if sd.size else math.nan,
        }
    out = pd.DataFrame.from_dict(rows, orient="index", columns=cols)
    out.index = pd.MultiIndex.from_tuples(list(rows), names=["app", "kind"])
    return out


def render_summary(
    records: pd.DataFrame,
    switches: pd.DataFrame,
    apps: pd.DataFrame | None = None,
    occupancy: pd.DataFrame | None = None,
) -> list[RenderableType]:
    """Rich tables of :func:`fct_table`, :func:`app_table` (when the run has application
    units) and :func:`switch_table` (with ``occupancy``, if given: "-" for a percentile
    without samples), for the CLI, of the run's ``records``, ``switches`` and ``apps``."""
    from rich.table import Table

    f = fct_table(records)
    t1 = Table(title="FCT slowdown (finished flows)", title_justify="left")
    t1.add_column("class")
    for c in ("flows", "unfinished", "p50", "p95", "p99"):
        t1.add_column(c, justify="right")
    for name, row in f.iterrows():
        t1.add_row(
            str(name),
            f"{int(row['flows'])}",
            f"{int(row['unfinished'])}",
            *(_fmt_num(row[f"p{q}_slowdown"], lambda x: f"{x:.2f}") for q in (50, 95, 99)),
        )

    s = switch_table(switches, occupancy)
    t2 = Table(title="Switches by tier", title_justify="left")
    t2.add_column("tier")
    for c in ("switches", "drops", "ECN marks", "occ p99", "occ max", "buffer"):
        t2.add_column(c, justify="right")
    for tier, row in s.iterrows():
        t2.add_row(
            str(tier),
            f"{int(row['switches'])}",
            f"{int(row['drops'])}",
            f"{int(row['ecn_marks'])}",
            _fmt_num(row["occ_p99_bytes"], _fmt_bytes),
            _fmt_bytes(row["max_occupancy_bytes"]),
            _fmt_bytes(row["buffer_bytes"]),
        )
    out: list[RenderableType] = [t1]
    a = app_table(apps if apps is not None else pd.DataFrame())
    if len(a):
        t3 = Table(title="Application units", title_justify="left")
        for c in ("app", "kind"):
            t3.add_column(c)
        for c in ("units", "p50 (us)", "p95 (us)", "p50 slowdown"):
            t3.add_column(c, justify="right")
        for (app, kind), row in a.iterrows():
            t3.add_row(
                str(app),
                str(kind),
                f"{int(row['units'])}",
                f"{row['p50_us']:.1f}",
                f"{row['p95_us']:.1f}",
                _fmt_num(row["p50_slowdown"], lambda x: f"{x:.2f}"),
            )
        out.append(t3)
    out.append(t2)
    return out
