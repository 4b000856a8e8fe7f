"""Experiment descriptions: what ``slacknet reproduce <paper>`` runs, plots and checks.

A paper's evaluation is data, ``experiments/<paper>/reproduce.toml`` (the format, with an
example, is in ``experiments/README.md``): the base scenarios, the figures (each made by a
sweep file of that folder, by a named native source, :data:`NATIVE_SOURCES`, or by following
one transfer of a scenario's run through time, a timeline), the labels of
their columns, and the paper's claims, each a list of checks on one figure's table.
:func:`load_paper` reads a description and validates it strictly: an unknown key, a figure,
column or series that does not exist, or a missing file is one :class:`ReproduceError` that
names the key, the value and the fix. :func:`evaluate_claims` checks the claims on the
tables a run produced; :mod:`slacknet.reproduce` runs the figures.

Checks read one ``metric`` column of a figure's table as curves: one per ``series`` (a value of
the figure's series column), each a function of its ``x`` column, averaged over seeds. Ranges
(``x_min``, ``x_max``) are inclusive. The vocabulary:

``ratio``
    ``series`` / ``over`` (one series, or the pointwise minimum of several) at every x in
    range: the largest ratio is at most ``at_most`` and/or the smallest at least ``at_least``.
``gain``
    1 - mean over x of ``series`` / ``over``, the average relative reduction, is at least
    ``at_least``.
``value``
    ``series`` at x = ``at`` lies within ``min`` and/or ``max``.
``non_decreasing``
    ``series`` never falls by more than ``slack`` from one x to the next.
``below_until``
    the largest x at which ``series`` < ``than`` is at least ``x_at_least`` (with several
    seeds, the detail adds that x per seed: mean, spread and distribution).

A figure without an x column has one point per series, where ``ratio``, ``gain`` and
``value`` (without ``at``) apply. A claim holds when all its checks hold; its detail joins
theirs. A missing point (a series without data in range) fails the check and says so.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, ClassVar, Literal, Mapping, NamedTuple, NoReturn, Union

import numpy as np
import pandas as pd
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from . import _native
from ._native import SpecError
from .config import Scenario, is_seed, not_a_number, read_text_file
from .sweep import METRIC_COLUMNS, Sweep, load_sweep, set_key

__all__ = [
    "DESCRIPTION_FILE",
    "FIGURE14_ADMISSIONS",
    "NATIVE_SOURCES",
    "TIMELINE_METRICS",
    "BelowUntilCheck",
    "Check",
    "ClaimResult",
    "ClaimSpec",
    "Description",
    "FigureBaseSpec",
    "FigureSpec",
    "GainCheck",
    "NativeSource",
    "NonDecreasingCheck",
    "BoundCheck",
    "Outcome",
    "Paper",
    "RatioCheck",
    "ReproduceError",
    "ValueCheck",
    "evaluate_claim",
    "evaluate_claims",
    "list_papers",
    "load_description",
    "load_paper",
]

#: The description's file name inside ``experiments/<paper>/``.
DESCRIPTION_FILE = "reproduce.toml"
#: The largest description file read (the committed ones are a few kB; a FIFO or a device is
#: never opened: :func:`~slacknet.config.read_text_file`).
MAX_DESCRIPTION_BYTES = 16 * 2**20
#: A figure id: it names the figure's files in the output folder (``<id>.csv``, ``<id>.png``,
#: ``<id>/``), so letters, digits, ``_`` and ``-`` only (``../x`` wrote outside the folder).
FIGURE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
#: What a figure ``<id>`` writes beside ``<id>.csv`` and ``<id>.png``.
FIGURE_FILE_SUFFIXES = ("_cdf.csv", "_cdf.png", "_series.csv")


class ReproduceError(ValueError):
    """A reproduction cannot run as asked: its description is missing or invalid, or an option
    names something it does not have. The message names the key, the value and the fix."""

    def __init__(self, key: str, value: str | None, message: str, path: Path | None = None) -> None:
        self.key = key
        """The offending key (``claim[2].check[0].series``), or option (``--only``)."""
        self.value = value
        """The offending value as written (JSON), or ``None``."""
        self.message = message
        """What is wrong and how to fix it."""
        self.path = path
        """The description file, when the error is in one."""
        head = key if value is None else f"{key} = {value}"
        super().__init__(f"{head}: {message}" + (f" (in {path})" if path is not None else ""))


def _show(value: Any) -> str:
    """A value as the user wrote it (JSON), cut to one short line."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ---- native sources ----------------------------------------------------------------------


@dataclass(frozen=True)
class NativeSource:
    """A figure's table computed by the native module rather than by a sweep."""

    doc: str
    columns: tuple[str, ...]
    """The table's columns, in order (a figure using the source lists them as ``columns``)."""
    categories: Mapping[str, tuple[str, ...]]
    """The categorical columns (possible series) and their values; the others are numbers."""
    load: Callable[[bool], pd.DataFrame]
    """The table; its argument is whether the paper's full scale was asked for (``--full``)."""


#: The ``admission`` values of :func:`_credence_figure14`: Credence, then DT under the Credence
#: artifact's rule (``q + size <= alpha * free``) and under Choudhury and Hahne's (``q < alpha * free``).
FIGURE14_ADMISSIONS = ("Credence", "DT q+size<=alpha*free", "DT q<alpha*free")


def _credence_figure14(seeds: typing.Sequence[int] | None = None) -> pd.DataFrame:
    """Figure 14 per seed (default: the native default, seeds 1 to 30), one row per seed,
    flip probability and policy."""
    from . import _native

    cols = _native.credence_figure14(None if seeds is None else list(seeds))
    data: dict[str, Any] = {}
    for name, col in cols.items():
        data[name] = np.frombuffer(col[1], dtype=np.dtype(col[0])) if isinstance(col, tuple) else list(col)
    return pd.DataFrame(data)


#: Native sources by name (``source = "<name>"`` in a figure).
NATIVE_SOURCES: dict[str, NativeSource] = {
    "credence_figure14": NativeSource(
        doc="Credence's Figure 14 in the discrete-time model of its Appendix A (N = 8 ports, B = 64 "
        "packets), on the arrival sequences of seeds 1 to 30: LQD/ALG throughput of Credence with "
        "predictions flipped with probability 0, 0.1, ..., 1, and of DT (which makes no predictions) "
        "under the Credence artifact's rule q+size<=alpha*free and the classic q<alpha*free",
        columns=("seed", "flip_probability", "admission", "lqd_over_alg"),
        categories={"admission": FIGURE14_ADMISSIONS},
        load=lambda full: _credence_figure14(),
    ),
}


# ---- checks --------------------------------------------------------------------------------


class Outcome(NamedTuple):
    """Whether a check holds on a table, and the numbers that say so."""

    holds: bool
    detail: str


class _NoData(Exception):
    """A curve or point a check needs is not in the table (the check fails)."""


def _as_list(v: Any) -> Any:
    return [v] if isinstance(v, str) else v


#: One name or a list of them (a string is a list of one).
Names = Annotated[list[str], BeforeValidator(_as_list), Field(min_length=1)]

_POINT = "__point"
_SERIES = "__series"


def _num(v: float) -> str:
    return f"{v:.10g}"


def _names(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else f"min({', '.join(labels)})"


def _pivot(
    table: pd.DataFrame, metric: str, x: str | None, series: str | None,
    x_min: float | None = None, x_max: float | None = None,
) -> pd.DataFrame:
    """``metric`` with one row per x (a single row without x) and one column per series
    (the single column ``""`` without a series column), averaged over seeds."""
    t = table
    if x is not None and x_min is not None:
        t = t[t[x] >= x_min]
    if x is not None and x_max is not None:
        t = t[t[x] <= x_max]
    if t.empty:
        raise _NoData(f"no {metric} data" + (f" at {x} in range" if x is not None else ""))
    t = t.assign(**{_SERIES: t[series].astype(str) if series is not None else ""})
    if x is None:
        t = t.assign(**{_POINT: 0})
    return t.pivot_table(index=x if x is not None else _POINT, columns=_SERIES, values=metric)


def _curve(piv: pd.DataFrame, label: str | None, metric: str) -> pd.Series:
    key = "" if label is None else label
    if key not in piv.columns:
        raise _NoData(f"no {metric} data for {label}")
    s: pd.Series = piv[key]
    return s


def _lowest(piv: pd.DataFrame, labels: list[str], metric: str) -> pd.Series:
    if len(labels) == 1:
        return _curve(piv, labels[0], metric)
    for label in labels:
        _curve(piv, label, metric)
    s: pd.Series = piv[labels].min(axis=1)
    return s


def _not_bool(v: Any) -> Any:
    return not_a_number(v, "number", "one, e.g. 0.5 (or 1 for a whole number)")


#: Every number of a description: TOML's ``true`` is not 1 (NaN and infinity are refused by
#: :class:`_Model`: a bound of ``nan`` made every check fail, ``inf`` every bound hold).
Num = Annotated[float, BeforeValidator(_not_bool)]
Whole = Annotated[int, BeforeValidator(_not_bool)]


def _seed(v: Any) -> Any:
    if not is_seed(v):
        raise ValueError("a seed is a whole number from 0 to 2^64 - 1, e.g. 1")
    return v


#: A seed: a whole number from 0 to 2^64 - 1 (``Scenario.seed``'s rule: no boolean, no float).
Seed = Annotated[int, BeforeValidator(_seed)]


class _Model(BaseModel):
    # CORRECTNESS: no NaN or infinity in any number (a `want <= nan` never holds).
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    what: ClassVar[str] = "this table"
    """How error messages name a table of this type."""


class _CheckBase(_Model):
    kind: str
    metric: str
    """The metric column the check reads."""
    series: str | None = None
    """The curve: a value of the figure's series column (omitted when the figure has none)."""

    def evaluate(self, table: pd.DataFrame, x: str | None, series: str | None) -> Outcome:
        """Check ``table`` (a figure's table with x column ``x`` and series column
        ``series``, either may be ``None``)."""
        try:
            return self._evaluate(table, x, series)
        except _NoData as e:
            return Outcome(False, str(e))

    def _evaluate(self, table: pd.DataFrame, x: str | None, series: str | None) -> Outcome:
        raise NotImplementedError


class _Ranged(_CheckBase):
    x_min: Num | None = None
    """Only x >= x_min (inclusive)."""
    x_max: Num | None = None
    """Only x <= x_max (inclusive)."""

    def _pivot(self, table: pd.DataFrame, x: str | None, series: str | None) -> pd.DataFrame:
        return _pivot(table, self.metric, x, series, self.x_min, self.x_max)


class RatioCheck(_Ranged):
    """``series`` / ``over`` at every x in range: the largest ratio is at most ``at_most``
    and/or the smallest at least ``at_least``."""

    what: ClassVar[str] = "a `ratio` check"
    kind: Literal["ratio"]
    over: Names
    """The denominator: a series, or several (their pointwise minimum)."""
    at_most: Num | None = None
    at_least: Num | None = None

    def _evaluate(self, table: pd.DataFrame, x: str | None, series: str | None) -> Outcome:
        piv = self._pivot(table, x, series)
        r = _curve(piv, self.series, self.metric) / _lowest(piv, self.over, self.metric)
        name = f"{self.series}/{_names(self.over)} {self.metric} ratio"
        holds, parts = True, []
        def where(i: object) -> str:  # the x of the extreme point, when there are several
            if x is None or len(r) < 2:
                return ""
            return f" at {x} = {_num(float(i)) if isinstance(i, (int, float, np.number)) else i}"

        if self.at_most is not None:
            worst = float(r.max())
            holds = holds and worst <= self.at_most
            parts.append(f"worst {name} {worst:.2f}{where(r.idxmax())} (want <= {_num(self.at_most)})")
        if self.at_least is not None:
            low = float(r.min())
            holds = holds and low >= self.at_least
            parts.append(f"lowest {name} {low:.2f}{where(r.idxmin())} (want >= {_num(self.at_least)})")
        return Outcome(holds, ", ".join(parts))


class GainCheck(_Ranged):
    """1 - mean over x in range of ``series`` / ``over`` (the average relative reduction)
    is at least ``at_least``."""

    what: ClassVar[str] = "a `gain` check"
    kind: Literal["gain"]
    over: Names
    """The reference: a series, or several (their pointwise minimum)."""
    at_least: Num

    def _evaluate(self, table: pd.DataFrame, x: str | None, series: str | None) -> Outcome:
        piv = self._pivot(table, x, series)
        gain = 1 - float((_curve(piv, self.series, self.metric) / _lowest(piv, self.over, self.metric)).mean())
        return Outcome(
            gain >= self.at_least,
            f"{self.series}'s {self.metric} {gain * 100:.0f}% lower than {_names(self.over)}'s on average "
            f"(want >= {_num(self.at_least * 100)}%)",
        )


class ValueCheck(_CheckBase):
    """``series`` at x = ``at`` lies within ``min`` and/or ``max`` (inclusive)."""

    what: ClassVar[str] = "a `value` check"
    kind: Literal["value"]
    at: Num | None = None
    """The x of the point (omitted when the figure has no x column)."""
    min: Num | None = None
    max: Num | None = None

    def _evaluate(self, table: pd.DataFrame, x: str | None, series: str | None) -> Outcome:
        curve = _curve(_pivot(table, self.metric, x, series), self.series, self.metric)
        where = ""
        if x is not None and self.at is not None:
            hit = curve[np.isclose(curve.index.to_numpy(dtype=np.float64), self.at, rtol=1e-9, atol=0.0)]
            if hit.empty:
                raise _NoData(f"no {self.metric} data for {self.series} at {x} = {_num(self.at)}")
            curve, where = hit, f" at {x} = {_num(self.at)}"
        v = float(curve.iloc[0])
        holds = (self.min is None or v >= self.min) and (self.max is None or v <= self.max)
        if self.min is not None and self.max is not None:
            want = f"[{_num(self.min)}, {_num(self.max)}]"
        elif self.min is not None:
            want = f">= {_num(self.min)}"
        else:
            want = "any" if self.max is None else f"<= {_num(self.max)}"
        who = f"{self.series} " if self.series is not None else ""
        return Outcome(holds, f"{who}{self.metric} {v:.3f}{where} (want {want})")


class BoundCheck(_Ranged):
    """``series`` lies within ``min`` and/or ``max`` (inclusive) at every x in range."""

    what: ClassVar[str] = "a `bound` check"
    kind: Literal["bound"]
    min: Num | None = None
    max: Num | None = None

    def _evaluate(self, table: pd.DataFrame, x: str | None, series: str | None) -> Outcome:
        r = _curve(self._pivot(table, x, series), self.series, self.metric).to_numpy(dtype=np.float64)
        lo, hi = float(np.nanmin(r)), float(np.nanmax(r))
        holds = bool(np.isfinite(r).all()) and (self.min is None or lo >= self.min) and (self.max is None or hi <= self.max)
        want = " and ".join(w for w in (None if self.min is None else f">= {_num(self.min)}",
                                        None if self.max is None else f"<= {_num(self.max)}") if w) or "any"
        who = f"{self.series} " if self.series is not None else ""
        return Outcome(holds, f"{who}{self.metric} from {lo:.3f} to {hi:.3f} (want every point {want})")


class NonDecreasingCheck(_Ranged):
    """``series`` never falls by more than ``slack`` from one x to the next (in range)."""

    what: ClassVar[str] = "a `non_decreasing` check"
    kind: Literal["non_decreasing"]
    slack: Num = Field(default=0.0, ge=0.0)

    def _evaluate(self, table: pd.DataFrame, x: str | None, series: str | None) -> Outcome:
        r = _curve(self._pivot(table, x, series), self.series, self.metric).to_numpy(dtype=np.float64)
        holds = bool((r[1:] >= r[:-1] - self.slack).all())
        fall = max(0.0, float(np.nanmax(r[:-1] - r[1:]))) if len(r) > 1 else 0.0
        who = f"{self.series} " if self.series is not None else ""
        return Outcome(holds, f"largest fall of {who}{self.metric} as {x} grows {fall:.3f} "
                       f"(want <= {_num(self.slack)})")


class BelowUntilCheck(_Ranged):
    """The largest x (in range) at which ``series`` < ``than`` is at least ``x_at_least``,
    on the curves averaged over seeds. With several seeds the detail also gives that largest
    x per seed: its mean, standard deviation, range and how many seeds gave each value."""

    what: ClassVar[str] = "a `below_until` check"
    kind: Literal["below_until"]
    than: str
    """The series to be below."""
    x_at_least: Num

    def _last_below(self, piv: pd.DataFrame) -> float | None:
        below = _curve(piv, self.series, self.metric) < _curve(piv, self.than, self.metric)
        xs = below.index[below.to_numpy(dtype=bool)]
        return float(xs.max()) if len(xs) else None

    def _per_seed(self, table: pd.DataFrame, x: str | None, series: str | None) -> str:
        if "seed" not in table.columns or table["seed"].nunique() < 2:
            return ""
        lasts = [self._last_below(self._pivot(t, x, series)) for _, t in table.groupby("seed", sort=True)]
        found = np.array([v for v in lasts if v is not None], dtype=np.float64)
        values, counts = np.unique(found, return_counts=True)
        dist = [f"{_num(v)} in {c}" for v, c in zip(values, counts)]
        if len(found) < len(lasts):
            dist.append(f"never in {len(lasts) - len(found)}")
        stats = (f"mean {found.mean():.2f}, std {found.std():.2f}, {_num(found.min())}-{_num(found.max())}; "
                 if len(found) else "")
        return f"; per seed ({len(lasts)} seeds): {stats}{', '.join(dist)}"

    def _evaluate(self, table: pd.DataFrame, x: str | None, series: str | None) -> Outcome:
        last = self._last_below(self._pivot(table, x, series))
        per_seed = self._per_seed(table, x, series)
        if last is None:
            return Outcome(False, f"{self.series}'s {self.metric} is never below {self.than}'s{per_seed}")
        return Outcome(last >= self.x_at_least, f"{self.series}'s {self.metric} below {self.than}'s up to "
                       f"{x} = {_num(last)} (want >= {_num(self.x_at_least)}){per_seed}")


#: One check of a claim, chosen by its ``kind``.
Check = Annotated[
    Union[RatioCheck, GainCheck, ValueCheck, NonDecreasingCheck, BelowUntilCheck, BoundCheck],
    Field(discriminator="kind"),
]
_CHECK_KINDS = ("ratio", "gain", "value", "non_decreasing", "below_until", "bound")


# ---- the description -----------------------------------------------------------------------


class BaseSpec(_Model):
    """The scenario every sweep's runs start from (in place of the sweep file's own base)."""

    what: ClassVar[str] = "[base]"
    reduced: str
    """The default: a scenario file of the paper's folder."""
    full: str | None = None
    """With ``--full`` (the paper's scale), if the paper has one."""
    seeds: list[Seed] = []
    """Every sweep run once per seed (tables show the mean and range, claims use the mean);
    empty: the base scenario's seed."""


class FigureBaseSpec(_Model):
    """A sweep figure's own base scenarios, in place of the description's ``[base]``: the same
    evaluation in another topology or setting."""

    what: ClassVar[str] = "a figure's base"
    reduced: str
    """A scenario file of the paper's folder, for the reduced run."""
    full: str | None = None
    """For ``--full``; absent: the figure's reduced base at both scales."""


#: Per-flow columns of a run's records a CDF figure can follow (``cdf.column``).
CDF_COLUMNS = ("fct_us", "slowdown", "size_bytes", "bytes_delivered")
#: The quantiles a CDF figure prints, one column each.
CDF_QUANTILES = (0.5, 0.9, 0.99, 0.999, 1.0)


class CdfSpec(_Model):
    """A sweep figure's distribution of one per-flow column, pooled over each series' runs
    (the paper's CDF plots, e.g. the bounded-loss ML paper's Figure 4c)."""

    what: ClassVar[str] = "a figure's cdf"
    column: str
    """A per-flow column of the runs' records (:data:`CDF_COLUMNS`)."""
    workload: Whole | None = Field(default=None, ge=0)
    """Only the transfers of this workload entry (absent: every transfer)."""


class FigureSpec(_Model):
    """One figure: where its table comes from and what of it to print and plot."""

    what: ClassVar[str] = "a figure"
    title: str
    """As the paper numbers it: ``"Figure 7"``."""
    caption: str = ""
    sweep: str | None = None
    """A sweep file of the paper's folder; or:"""
    source: str | None = None
    """A native source (:data:`NATIVE_SOURCES`), whose ``columns`` the figure then lists; or:"""
    timeline: str | None = None
    """A scenario file of the paper's folder with ``[run.timeseries]``, run once per seed at
    either scale: the figure follows one transfer of it through time (:data:`TIMELINE_METRICS`)."""
    follow: Whole = Field(default=0, ge=0)
    """A timeline's transfer: the first one that workload entry ``follow`` starts."""
    phases_us: list[Num] | None = None
    """A timeline's phases: the simulated times (us, increasing, the first at least 0) where
    they start; the table has one row per phase and seed (the last phase runs to the end)."""
    columns: list[str] | None = None
    x: str | None = None
    """The x-axis column (a sweep axis); none for a bar chart of the series."""
    series: str | None = None
    """The column whose values are the curves (a sweep axis)."""
    metrics: list[str] = Field(min_length=1)
    """The metric columns, one plot panel each, in order."""
    extra_columns: list[str] = Field(default_factory=list)
    """Columns printed after the metrics but not plotted."""
    digits: Whole = Field(default=2, ge=0, le=9)
    """Decimals of the printed table."""
    base: FigureBaseSpec | None = None
    """A sweep figure's own base scenarios (``{ reduced = "...", full = "..." }``), in place of
    the description's ``[base]``."""
    set: dict[str, Any] = Field(default_factory=dict)
    """Scenario keys (dotted, as a sweep axis names them) set in the base before a sweep
    figure's runs, at either scale, or in a timeline's scenario: a figure in another setting
    of the same evaluation."""
    cdf: CdfSpec | None = None
    """A sweep figure without an x axis may also plot the distribution of a per-flow column,
    one curve per series (``<id>_cdf.png``, quantiles in ``<id>_cdf.csv``)."""

    @property
    def name(self) -> str:
        """Title and caption."""
        return f"{self.title} ({self.caption})" if self.caption else self.title


class ClaimSpec(_Model):
    """One of the paper's claims: its wording and the checks that must all hold."""

    what: ClassVar[str] = "a claim"
    text: str
    figure: Names
    """The figure id, or several ids (the claim is then checked on each)."""
    check: list[Check] = Field(min_length=1)


class Description(_Model):
    """A whole ``reproduce.toml``."""

    what: ClassVar[str] = "the top level"
    paper: str
    """The paper's name, used in plot titles: ``"Credence (NSDI'24)"``."""
    base: BaseSpec | None = None
    """Needed by sweep figures without a base of their own; a paper made of native sources
    only has none."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Display names of columns (axis labels, panel titles); a column's own name otherwise."""
    figure: dict[str, FigureSpec] = Field(min_length=1)
    """Figures by id (the stem of their CSV and PNG files), run in this order."""
    claim: list[ClaimSpec] = Field(default_factory=list)

    def label(self, column: str) -> str:
        """The display name of ``column``."""
        return self.labels.get(column, column)


@dataclass(frozen=True)
class Paper:
    """A validated description and what it refers to."""

    name: str
    """The folder's name: ``credence``."""
    path: Path
    """The description file."""
    description: Description
    sweeps: dict[str, Sweep]
    """The sweep of every sweep figure, by figure id (with the sweep file's own base)."""

    @property
    def folder(self) -> Path:
        """The paper's folder, where its scenario and sweep files are."""
        return self.path.parent


#: What a timeline figure can follow: the columns of :attr:`slacknet.Results.transfer_series`
#: it reads (``rate_gbps`` is ``rate_bps`` / 1e9, ``srtt_us`` is ``srtt_ps`` / 1e6).
TIMELINE_METRICS = ("rate_gbps", "tlr", "loss", "class", "cwnd_bytes", "srtt_us", "sent_bytes",
                    "delivered_bytes", "alpha")
#: The statistics of each followed metric in a phase: the mean is the metric's own column, the
#: others are ``<metric>_<stat>`` (first and last: the phase's first and last samples).
TIMELINE_STATS = ("min", "max", "first", "last")
#: The columns a timeline's table starts with (then each metric and its statistics).
TIMELINE_KEYS = ("seed", "phase", "start_us", "end_us", "samples")


@dataclass(frozen=True)
class _Columns:
    """What a figure's table holds."""

    all: tuple[str, ...]
    dimensions: tuple[str, ...]
    """Columns that may be the x axis."""
    categories: Mapping[str, tuple[str, ...]]
    """Columns that may be the series, and their values."""
    metrics: tuple[str, ...]


def _sweep_columns(sweep: Sweep) -> _Columns:
    axes = {a.column: tuple(a.label(i) for i in range(len(a.values))) for a in sweep.axes}
    return _Columns(("variant", *axes, "seed", *METRIC_COLUMNS), tuple(axes), axes, METRIC_COLUMNS)


def _source_columns(src: NativeSource) -> _Columns:
    numbers = tuple(c for c in src.columns if c not in src.categories)
    return _Columns(src.columns, numbers, src.categories, numbers)


def _timeline_columns(fig: FigureSpec) -> _Columns:
    stats = tuple(c for m in fig.metrics for c in (m, *(f"{m}_{st}" for st in TIMELINE_STATS)))
    return _Columns((*TIMELINE_KEYS, *stats), ("phase",), {}, stats)


def _or_list(names: typing.Iterable[str]) -> str:
    return ", ".join(names) or "none"


def list_papers(experiments: str | os.PathLike[str]) -> list[str]:
    """The papers of an experiments folder: its subfolders holding a ``reproduce.toml`` (a
    file: not a folder, a FIFO or a device of that name)."""
    return sorted(p.parent.name for p in Path(experiments).glob(f"*/{DESCRIPTION_FILE}") if p.is_file())


def load_paper(experiments: str | os.PathLike[str], paper: str) -> Paper:
    """Read and validate ``experiments/<paper>/reproduce.toml``. Raises
    :class:`ReproduceError` if the folder or the description is missing or invalid."""
    experiments = Path(experiments)
    fix = "run from a source checkout (its top folder) or pass --experiments DIR"
    if not experiments.is_dir():
        raise ReproduceError(str(experiments), None, f"no experiments folder here: {fix}")
    path = experiments / paper / DESCRIPTION_FILE
    if os.path.lexists(path) and not path.is_file():
        return load_description(path)  # says what it is instead
    if not path.is_file():
        raise ReproduceError(
            "paper", _show(paper),
            f"no experiment description {path}; the papers in {experiments} are: "
            f"{_or_list(list_papers(experiments))} ({fix})",
        )
    return load_description(path)


def load_description(path: str | Path) -> Paper:
    """Read and validate one description file ``path`` (see the module docs). Raises
    :class:`ReproduceError` if it is missing, not TOML or invalid."""
    p = Path(path)
    try:
        raw = tomllib.loads(read_text_file(p, "description file", MAX_DESCRIPTION_BYTES))
    except FileNotFoundError:
        raise ReproduceError("paper", None, f"no such experiment description: {p}") from None
    except tomllib.TOMLDecodeError as e:
        raise ReproduceError(p.name, None, f"invalid TOML: {e}", p) from None
    except SpecError as e:  # not UTF-8
        raise ReproduceError(p.name, None, str(e).removeprefix(f"{p}: "), p) from None
    except OSError as e:  # a folder, FIFO or device, or too large: names the path and the fix
        raise ReproduceError("paper", None, str(e)) from None
    except RecursionError:
        raise ReproduceError(p.name, None, "invalid TOML: arrays or tables nested too deeply", p) from None
    try:
        desc = Description.model_validate(raw)
    except ValidationError as e:
        raise _from_pydantic(e, p) from None
    return Paper(name=p.parent.name, path=p, description=desc, sweeps=_check_references(desc, p))


def _strip(t: Any) -> Any:
    while typing.get_origin(t) is Annotated:
        t = typing.get_args(t)[0]
    return t


def _locate(loc: tuple[int | str, ...]) -> tuple[str, type[_Model] | None]:
    """The dotted key of a pydantic error location, and the model whose key it is."""
    t: Any = Description
    key = ""
    owner: type[_Model] | None = None
    for item in loc:
        t = _strip(t)
        if isinstance(t, type) and issubclass(t, _Model):
            owner = t
            key = f"{key}.{item}" if key else str(item)
            f = t.model_fields.get(str(item))
            t = f.annotation if f is not None else None
        elif typing.get_origin(t) is dict:
            owner, key, t = None, f"{key}.{item}", typing.get_args(t)[1]
        elif typing.get_origin(t) is list:
            owner, key, t = None, f"{key}[{item}]", typing.get_args(t)[0]
        elif typing.get_origin(t) in (Union, types.UnionType) and type(None) in typing.get_args(t):
            # An optional model: its keys are the model's.
            members = [m for m in typing.get_args(t) if m is not type(None)]
            t = members[0] if len(members) == 1 else None
            if isinstance(t, type) and issubclass(t, _Model):
                owner = t
                f = t.model_fields.get(str(item))
                key = f"{key}.{item}"
                t = f.annotation if f is not None else None
        elif typing.get_origin(t) is Union:
            # A tagged union: pydantic's location names the tag, the key does not.
            tagged = [m for m in typing.get_args(t) if typing.get_args(m.model_fields["kind"].annotation) == (item,)]
            t = tagged[0] if tagged else None
        else:
            owner, key, t = None, f"{key}.{item}", None
    return key, owner


def _from_pydantic(e: ValidationError, path: Path) -> ReproduceError:
    err = e.errors(include_url=False)[0]
    key, owner = _locate(tuple(err["loc"]))
    kind, value = err["type"], err.get("input")
    what = owner.what if owner is not None else "this table"
    if kind == "extra_forbidden":
        keys = [k for k in owner.model_fields if k != "kind"] if owner is not None else []
        return ReproduceError(
            key, _show(value), f"unknown key; {what} takes {_or_list(keys)}: remove it or fix its spelling", path
        )
    if kind == "missing":
        return ReproduceError(key, None, f"missing: {what} needs `{key.rsplit('.', 1)[-1]}`", path)
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tag = err.get("ctx", {}).get("tag")
        return ReproduceError(
            f"{key}.kind", None if tag is None else _show(tag),
            f"{'missing' if tag is None else 'unknown'} check kind; the kinds are {_or_list(_CHECK_KINDS)} "
            "(experiments/README.md describes each)", path,
        )
    return ReproduceError(key, _show(value), str(err["msg"]).removeprefix("Value error, "), path)


def with_set(base: Scenario, keys: dict[str, Any]) -> Scenario:
    """``base`` with dotted ``keys`` set (a figure's ``set``), resolved by Rust. Raises
    :class:`SpecError` naming the key."""
    if not keys:
        return base
    tree = json.loads(base.to_json())
    for key, value in keys.items():
        set_key(tree, key, value)
    return Scenario.model_validate_json(_native.resolve_json(json.dumps(tree), str(Path.cwd())))


def _check_references(desc: Description, path: Path) -> dict[str, Sweep]:
    """Cross-checks pydantic cannot make: files, sources, columns, series, figure ids and
    which check fields fit which figure. Returns the loaded sweeps."""
    folder = path.parent

    def fail(key: str, value: Any, message: str) -> NoReturn:
        raise ReproduceError(key, None if value is None else _show(value), message, path)

    for fid in desc.figure:
        if not FIGURE_ID.fullmatch(fid):
            fail(f"figure.{_show(fid)}", None, "a figure id names the figure's files in the output folder: use letters, "
                 "digits, `_` and `-` (at most 64, the first a letter or digit), e.g. [figure.fig7]")
        for suffix in ("_cdf", "_series"):
            if fid.endswith(suffix) and fid[: -len(suffix)] in desc.figure:
                fail(f"figure.{fid}", None, f"its files would be figure {fid[: -len(suffix)]}'s {fid}.csv: "
                     "choose another id")
    if desc.base is not None:
        for i, seed in enumerate(desc.base.seeds):
            if seed in desc.base.seeds[:i]:
                fail(f"base.seeds[{i}]", seed, "is listed twice: each seed runs once per point")
    for which in ("reduced", "full"):
        name = getattr(desc.base, which) if desc.base is not None else None
        if name is not None and not (folder / name).is_file():
            fail(f"base.{which}", name, f"no such scenario file {folder / name}: name a scenario TOML of {folder}")
    if desc.base is None:
        for fid, fig in desc.figure.items():
            if fig.sweep is not None and fig.base is None:
                fail("base", None, f"figure {fid} is a sweep without a base of its own: add `[base]` with "
                     "`reduced = \"<scenario>.toml\"`, or give the figure `[figure.<id>.base]`")

    sweeps: dict[str, Sweep] = {}
    tables: dict[str, _Columns] = {}
    for fid, fig in desc.figure.items():
        k = f"figure.{fid}"
        made_by = [n for n in ("sweep", "source", "timeline") if getattr(fig, n) is not None]
        if len(made_by) != 1:
            fail(k, None, "needs exactly one of `sweep = \"<file>.toml\"` (a sweep file of this folder), "
                 f"`source = \"<name>\"` (a native source: {_or_list(NATIVE_SOURCES)}) or `timeline = "
                 "\"<file>.toml\"` (a scenario of this folder whose run the figure follows through time)"
                 + (f"; it has {' and '.join(made_by)}" if made_by else ""))
        if fig.base is not None:
            if fig.sweep is None:
                fail(f"{k}.base", fig.base.model_dump(exclude_none=True), "only a sweep figure has a base: remove it")
            for which in ("reduced", "full"):
                name = getattr(fig.base, which)
                if name is not None and not (folder / name).is_file():
                    fail(f"{k}.base.{which}", name, f"no such scenario file {folder / name}: name a scenario TOML of "
                         f"{folder}")
        if fig.cdf is not None and fig.sweep is None:
            fail(f"{k}.cdf", fig.cdf.model_dump(exclude_none=True), "only a sweep figure's runs have flows to "
                 "follow: remove it")
        if fig.timeline is None:
            for name in ("phases_us", "follow"):
                if name in fig.model_fields_set:
                    fail(f"{k}.{name}", getattr(fig, name), "only a timeline figure has it: remove it")
        if fig.sweep is not None or fig.timeline is not None:
            if fig.columns is not None:
                fail(f"{k}.columns", fig.columns, "only a native source's figure lists its columns (a sweep's "
                     "are its axes and the metrics, a timeline's its phases and metrics): remove it")
        if fig.sweep is not None:
            sp = folder / fig.sweep
            if not sp.is_file():
                fail(f"{k}.sweep", fig.sweep, f"no such sweep file {sp}: name a sweep TOML of {folder}")
            try:
                sweeps[fid] = load_sweep(sp)
            except SpecError as e:
                fail(f"{k}.sweep", fig.sweep, f"invalid sweep file: {e}")
            cols = _sweep_columns(sweeps[fid])
            if fig.set:
                # All keys at once: they are applied together, and may only be valid together.
                try:
                    base = fig.base.reduced if fig.base is not None else desc.base.reduced  # type: ignore[union-attr]
                    with_set(Scenario.from_toml(folder / base), fig.set)
                except SpecError as e:
                    fail(f"{k}.set", fig.set, f"does not apply to the base: {e}")
            if fig.cdf is not None:
                if fig.x is not None:
                    fail(f"{k}.cdf", fig.cdf.model_dump(exclude_none=True), "pools each series' runs, so its "
                         "figure has no x axis: remove x, or the cdf")
                if fig.cdf.column not in CDF_COLUMNS:
                    fail(f"{k}.cdf.column", fig.cdf.column, f"not a per-flow column a CDF can follow; choose one of "
                         f"{_or_list(CDF_COLUMNS)}")
        elif fig.timeline is not None:
            _check_timeline(fig, k, folder, fail)
            if fig.set:
                try:
                    with_set(Scenario.from_toml(folder / fig.timeline), fig.set)
                except SpecError as e:
                    fail(f"{k}.set", fig.set, f"does not apply to the timeline's scenario: {e}")
            cols = _timeline_columns(fig)
        else:
            if fig.set:
                fail(f"{k}.set", fig.set, "only a sweep figure's runs have a base to set keys in: remove it")
            assert fig.source is not None
            src = NATIVE_SOURCES.get(fig.source)
            if src is None:
                fail(f"{k}.source", fig.source, f"no such native source; the sources are {_or_list(NATIVE_SOURCES)}")
            if fig.columns is None or tuple(fig.columns) != src.columns:
                fail(f"{k}.columns", fig.columns, f"the source {fig.source} gives the columns "
                     f"{_show(list(src.columns))}: list exactly those")
            cols = _source_columns(src)
        if fig.x is not None and fig.x not in cols.dimensions:
            fail(f"{k}.x", fig.x, f"not a possible x axis of {fid}; choose one of {_or_list(cols.dimensions)}")
        if fig.series is not None and (fig.series not in cols.categories or fig.series == fig.x):
            fail(f"{k}.series", fig.series, f"not a possible series column of {fid}; choose one of "
                 f"{_or_list(c for c in cols.categories if c != fig.x)}")
        for i, m in enumerate(fig.metrics):
            if m not in cols.metrics or m == fig.x:
                fail(f"{k}.metrics[{i}]", m, f"not a metric of {fid}; the metrics are {_or_list(cols.metrics)}")
        for i, c in enumerate(fig.extra_columns):
            if c not in cols.all:
                fail(f"{k}.extra_columns[{i}]", c, f"not a column of {fid}; its columns are {_or_list(cols.all)}")
        tables[fid] = cols

    known = {c for cols in tables.values() for c in cols.all} | {f.cdf.column for f in desc.figure.values() if f.cdf}
    for column in desc.labels:
        if column not in known:
            fail(f"labels.{column}", desc.labels[column],
                 "not a column of any figure: remove it or fix the column's name")

    for i, claim in enumerate(desc.claim):
        for j, fid in enumerate(claim.figure):
            if fid not in desc.figure:
                at = f"claim[{i}].figure" + (f"[{j}]" if len(claim.figure) > 1 else "")
                fail(at, fid, f"no such figure; the figures are {_or_list(desc.figure)}: fix the id or define "
                     f"[figure.{fid}]")
            for n, check in enumerate(claim.check):
                _check_fits(check, f"claim[{i}].check[{n}]", fid, desc.figure[fid], tables[fid], fail)
    return sweeps


def _check_timeline(fig: FigureSpec, k: str, folder: Path, fail: Callable[[str, Any, str], NoReturn]) -> None:
    """A timeline figure's scenario, transfer, phases and metrics; ``fail`` otherwise."""
    assert fig.timeline is not None
    sp = folder / fig.timeline
    if not sp.is_file():
        fail(f"{k}.timeline", fig.timeline, f"no such scenario file {sp}: name a scenario TOML of {folder}")
    try:
        scenario = Scenario.from_toml(sp)
    except SpecError as e:
        fail(f"{k}.timeline", fig.timeline, f"invalid scenario: {e}")
    ts = scenario.run.timeseries
    if ts is None or not ts.transfers:
        fail(f"{k}.timeline", fig.timeline, "the scenario samples no transfers: give it `[run.timeseries]` "
             "with an `interval_us` (and `transfers = true`, the default)")
    if fig.follow >= len(scenario.workload):
        fail(f"{k}.follow", fig.follow, f"the scenario has {len(scenario.workload)} workload entries "
             f"(0 to {len(scenario.workload) - 1}): name the one whose first transfer to follow")
    phases = fig.phases_us
    if not phases:
        fail(f"{k}.phases_us", phases, "missing: list the simulated times (us) where the phases start, e.g. [0]")
    if not all(math.isfinite(p) for p in phases) or phases[0] < 0 or any(b <= a for a, b in zip(phases, phases[1:])):
        fail(f"{k}.phases_us", phases, "must be finite, strictly increasing times in us, the first at least 0")
    for i, m in enumerate(fig.metrics):
        if m not in TIMELINE_METRICS:
            fail(f"{k}.metrics[{i}]", m, f"not a time series a timeline follows; they are {_or_list(TIMELINE_METRICS)}")
    if fig.x != "phase":
        fail(f"{k}.x", fig.x, "a timeline's x axis is `phase` (its table has one row per phase): set `x = \"phase\"`")
    if fig.series is not None:
        fail(f"{k}.series", fig.series, "a timeline follows one transfer and has no series: remove it")


def _check_fits(check: _CheckBase, k: str, fid: str, fig: FigureSpec, cols: _Columns,
                fail: Callable[[str, Any, str], NoReturn]) -> None:
    """Does ``check`` fit figure ``fid``? ``fail`` otherwise."""
    if check.metric not in cols.metrics or check.metric == fig.x:
        fail(f"{k}.metric", check.metric, f"not a metric of figure {fid}; the metrics are {_or_list(cols.metrics)}")
    if fig.series is None:
        if check.series is not None:
            fail(f"{k}.series", check.series, f"figure {fid} has no series column: remove it")
        if isinstance(check, (RatioCheck, GainCheck, BelowUntilCheck)):
            fail(f"{k}.kind", check.kind, f"compares series, and figure {fid} has no series column")
    else:
        values = cols.categories[fig.series]
        refs: list[tuple[str, str | None]] = [("series", check.series)]
        if isinstance(check, (RatioCheck, GainCheck)):
            refs += [(f"over[{i}]" if len(check.over) > 1 else "over", s) for i, s in enumerate(check.over)]
        if isinstance(check, BelowUntilCheck):
            refs.append(("than", check.than))
        for name, label in refs:
            if label is None:
                fail(f"{k}.{name}", None, f"missing: name a value of {fig.series} in figure {fid} ({_or_list(values)})")
            if label not in values:
                fail(f"{k}.{name}", label, f"not a value of {fig.series} in figure {fid}; they are {_or_list(values)}")
    if fig.x is None:
        for name in ("x_min", "x_max", "at"):
            if getattr(check, name, None) is not None:
                fail(f"{k}.{name}", getattr(check, name), f"figure {fid} has no x axis: remove it")
        if isinstance(check, (NonDecreasingCheck, BelowUntilCheck)):
            fail(f"{k}.kind", check.kind, f"follows the x axis, and figure {fid} has none")
    if isinstance(check, ValueCheck):
        if fig.x is not None and check.at is None:
            fail(f"{k}.at", None, f"missing: the {fig.x} of the point to check")
        if check.min is None and check.max is None:
            fail(k, None, "a `value` check needs `min`, `max` or both")
        if check.min is not None and check.max is not None and check.min > check.max:
            fail(f"{k}.min", check.min, f"is above max = {_num(check.max)}")
    if isinstance(check, RatioCheck) and check.at_most is None and check.at_least is None:
        fail(k, None, "a `ratio` check needs `at_most`, `at_least` or both")


# ---- claims --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimResult:
    """One claim checked on one figure."""

    figure: str
    """The figure id."""
    title: str
    """The figure as the paper numbers it: ``"Figure 7"``."""
    text: str
    """The claim, in the paper's words."""
    holds: bool
    detail: str
    """The numbers behind the verdict."""


def evaluate_claim(claim: ClaimSpec, figure_id: str, figure: FigureSpec, table: pd.DataFrame) -> ClaimResult:
    """Check ``claim`` on the table of one of its figures."""
    outcomes = [c.evaluate(table, figure.x, figure.series) for c in claim.check]
    return ClaimResult(
        figure=figure_id, title=figure.title, text=claim.text,
        holds=all(o.holds for o in outcomes), detail="; ".join(o.detail for o in outcomes),
    )


def evaluate_claims(desc: Description, tables: Mapping[str, pd.DataFrame]) -> list[ClaimResult]:
    """Every claim on every one of its figures that has a table, in figure order, then in
    the order of the claims."""
    return [
        evaluate_claim(claim, fid, fig, tables[fid])
        for fid, fig in desc.figure.items() if fid in tables
        for claim in desc.claim if fid in claim.figure
    ]
