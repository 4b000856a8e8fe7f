"""Reproductions of the reference papers' evaluations: ``slacknet reproduce <paper>``.

Nothing here knows a paper. Each paper's evaluation is an experiment description,
``<experiments>/<paper>/reproduce.toml`` (format and validation: :mod:`slacknet.reproduce_spec`
and ``experiments/README.md``), naming its figures (a sweep of that folder or a native source
each), the base scenario of the sweeps (reduced, or the paper's scale with ``full``), the labels
and the paper's claims. :func:`reproduce` makes every figure (a table, written as
``<out>/<id>.csv``, and a plot, ``<out>/<id>.png``; sweep runs under ``<out>/<id>/``) and checks
the claims on them; :func:`render` prints the tables, titled as the paper numbers the figures,
and each claim with whether it holds and the numbers that say so.

The experiments folder is never looked up next to the package: it is the caller's
(``--experiments DIR``), else ``experiments/`` in the working directory
(:func:`experiments_folder`), as in a source checkout.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .cluster import ClusterError, connect
from .config import Scenario, is_seed
from .reproduce_spec import (
    CDF_QUANTILES,
    FIGURE_FILE_SUFFIXES,
    NATIVE_SOURCES,
    TIMELINE_KEYS,
    TIMELINE_STATS,
    ClaimResult,
    FigureSpec,
    Paper,
    ReproduceError,
    evaluate_claims,
    list_papers,
    load_description,
    load_paper,
    with_set,
)
from .results import ResultsError, is_results_folder, replace_atomic, write_csv_atomic, write_text_atomic
from .sweep import check_sweep_target, run_sweep

__all__ = [
    "ClaimResult",
    "check_target",
    "Paper",
    "Report",
    "ReproduceError",
    "experiments_folder",
    "list_papers",
    "load_description",
    "load_paper",
    "render",
    "reproduce",
]


def experiments_folder(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``explicit`` if given, else ``experiments/`` in the working directory."""
    return Path(explicit) if explicit is not None else Path.cwd() / "experiments"


@dataclass
class Report:
    """Everything a reproduction produced (:func:`reproduce`): the ``paper``, the ``out_dir``,
    whether it ran ``full``, the figures' tables, the CDF figures' quantiles and the ``claims``
    checked (:class:`ClaimResult`)."""

    paper: Paper
    out_dir: Path
    full: bool = False
    figures: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Each figure's table, by figure id, in the description's order."""
    claims: list[ClaimResult] = field(default_factory=list)
    cdfs: dict[str, pd.DataFrame] = field(default_factory=dict)
    """A CDF figure's quantiles (:func:`_cdf_table`), by figure id."""


def _follow(fid: str, fig: FigureSpec, scenario: Scenario, seed: int) -> pd.DataFrame:
    """Run a timeline figure's scenario with ``seed`` and return the time series of the
    transfer it follows: ``time_us`` and each metric. Raises :class:`ReproduceError` if the
    workload entry started no transfer or the series has none of its samples."""
    from .sim import run

    res = run(scenario, seed=seed)
    mine = res.records[res.records["workload"] == fig.follow]
    if mine.empty:
        raise ReproduceError(f"figure.{fid}.follow", str(fig.follow), f"workload entry {fig.follow} "
                             f"started no transfer with seed {seed}: follow another entry")
    flow = int(mine["id"].min())
    ts = res.transfer_series
    ts = ts[ts["flow"] == flow]
    out = pd.DataFrame({"time_us": ts["time_ps"].to_numpy(dtype=float) / 1e6})
    derived = {"rate_gbps": ("rate_bps", 1e9), "srtt_us": ("srtt_ps", 1e6)}
    for m in fig.metrics:
        col, scale = derived.get(m, (m, 1.0))
        out[m] = ts[col].to_numpy(dtype=float) / scale
    if out.empty:
        raise ReproduceError(f"figure.{fid}.timeline", fig.timeline, f"transfer {flow} was never sampled "
                             f"with seed {seed}: its scenario's [run.timeseries] interval_us is longer than the "
                             "transfer, or max_transfers leaves it out")
    return out


def _phases(fig: FigureSpec, series: pd.DataFrame, seed: int) -> pd.DataFrame:
    """One row per phase: its bounds, number of samples, and each metric's mean, min, max,
    first and last sample in the phase (NaN in a phase without samples)."""
    assert fig.phases_us is not None
    bounds = list(fig.phases_us) + [float("inf")]
    rows = []
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        part = series[(series["time_us"] >= a) & (series["time_us"] < b)]
        end = b if np.isfinite(b) else (float(series["time_us"].max()) if len(series) else a)
        row: dict[str, float | int] = {"seed": seed, "phase": i + 1, "start_us": a, "end_us": end,
                                       "samples": len(part)}
        for m in fig.metrics:
            v = part[m].dropna()
            row[m] = float(v.mean()) if len(v) else float("nan")
            row[f"{m}_min"] = float(v.min()) if len(v) else float("nan")
            row[f"{m}_max"] = float(v.max()) if len(v) else float("nan")
            row[f"{m}_first"] = float(v.iloc[0]) if len(v) else float("nan")
            row[f"{m}_last"] = float(v.iloc[-1]) if len(v) else float("nan")
        rows.append(row)
    cols = list(TIMELINE_KEYS) + [c for m in fig.metrics for c in (m, *(f"{m}_{s}" for s in TIMELINE_STATS))]
    return pd.DataFrame(rows, columns=cols)


#: The file naming the paper an output folder reproduces: figure ids repeat across papers
#: (pfabric's and credence's fig8), so file names alone cannot tell whose a folder is.
MARKER = "reproduction.json"


def _paper_of(out: Path) -> str | None:
    """The paper named by ``out``'s marker; ``None`` without one (a folder of an older slacknet),
    ``""`` for a marker that does not read as one."""
    p = out / MARKER
    if not os.path.lexists(p):
        return None
    try:
        if p.is_symlink() or not p.is_file() or p.stat().st_size > 4096:
            return ""
        paper = json.loads(p.read_text(encoding="utf-8")).get("paper")
        return paper if isinstance(paper, str) else ""
    except (OSError, ValueError, AttributeError, RecursionError):
        return ""


def _outputs(paper: Paper) -> set[str]:
    """Every name a reproduction of ``paper`` writes in its output folder."""
    names = {MARKER}
    for fid in paper.description.figure:
        names |= {fid, f"{fid}.csv", f"{fid}.png", *(fid + s for s in FIGURE_FILE_SUFFIXES)}
    return names


def check_target(paper: Paper, out_dir: str | os.PathLike[str]) -> None:
    """Raise :class:`ReproduceError` (naming ``--out``) unless a reproduction of ``paper`` may
    write into ``out_dir``: it does not exist, or it is an empty folder, or one holding only what
    such a reproduction writes (an earlier one's, whose tables and plots it replaces and whose
    finished runs it reuses). Anything else (a home folder, another paper's figures, one run's
    results) would have figure files written over what it holds."""
    out = Path(out_dir)
    if not os.path.lexists(out):
        return
    if out.is_symlink() or not out.is_dir():
        raise ReproduceError("--out", str(out), "exists and is not a folder; choose a new output folder")
    if is_results_folder(out):
        raise ReproduceError("--out", str(out), "it is one run's results folder, which figure files would break: "
                             "choose a new output folder")
    whose = _paper_of(out)
    if whose is not None and whose != paper.name:
        said = f"a reproduction of {whose}'s" if whose else f"a {MARKER} that is not a reproduction's"
        raise ReproduceError("--out", str(out), f"it holds {said}, whose figure files a reproduction of {paper.name} "
                             "would be written over: choose a new output folder")
    ours = _outputs(paper)
    # An interrupted atomic write leaves `.<name>.tmp-<pid>` beside <name>.
    foreign = sorted(n for n in os.listdir(out)
                     if n not in ours and not ((m := re.fullmatch(r"\.(.+)\.tmp-\d+", n)) and m[1] in ours))
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise ReproduceError("--out", str(out), f"it holds {foreign[0]!r}{more}, which a reproduction of {paper.name} "
                             "does not write, and its figure files would be written over what it holds: choose a new "
                             f"output folder (or an earlier reproduction's of {paper.name})")


def _savefig_atomic(plot: Any, path: Path) -> Path:
    """``plot.savefig(path)`` through a temporary name (:func:`~slacknet.results.replace_atomic`),
    so an interrupted write leaves no partial PNG at ``path``."""
    return replace_atomic(path, lambda tmp: plot.savefig(tmp, dpi=110, format="png"))


def _plot_timeline(paper: Paper, fid: str, series: pd.DataFrame, path: Path) -> Path:
    """One panel per metric against simulated time, a line per seed, the phases marked."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    desc = paper.description
    fig = desc.figure[fid]
    plot = Figure(figsize=(max(6.0, 2.75 * len(fig.metrics)), 3.3), layout="constrained")
    FigureCanvasAgg(plot)
    axes = plot.subplots(1, len(fig.metrics), squeeze=False)[0]
    for ax, col in zip(axes, fig.metrics):
        for seed, g in series.groupby("seed", sort=True):
            ax.plot(g["time_us"], g[col], drawstyle="steps-post", linewidth=1, label=f"seed {seed}")
        for t in (fig.phases_us or [])[1:]:
            ax.axvline(t, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xlabel("time (us)", fontsize=8)
        ax.set_title(desc.label(col), fontsize=9)
        ax.grid(True, alpha=0.3)
    if series["seed"].nunique() > 1:
        axes[0].legend(fontsize=7)
    plot.suptitle(f"{desc.paper} {fig.name}", fontsize=10)
    return _savefig_atomic(plot, path)


def _plot(paper: Paper, fid: str, table: pd.DataFrame, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    desc = paper.description
    fig = desc.figure[fid]
    x, series = fig.x, fig.series
    plot = Figure(figsize=(max(6.0, 2.75 * len(fig.metrics)), 3.3), layout="constrained")
    FigureCanvasAgg(plot)
    axes = plot.subplots(1, len(fig.metrics), squeeze=False)[0]
    for ax, col in zip(axes, fig.metrics):
        # Several seeds: the mean, with the range over seeds as error bars or a band.
        keys = [c for c in (series, x) if c is not None]
        stats = table.groupby(keys, sort=False)[col].agg(["mean", "min", "max"]).reset_index() if keys else None
        if x is None:
            if stats is None:
                ax.bar([""] * len(table), table[col])
            else:
                err = [stats["mean"] - stats["min"], stats["max"] - stats["mean"]]
                ax.bar(stats[series].astype(str), stats["mean"], yerr=err, capsize=2)
            ax.tick_params(axis="x", rotation=60, labelsize=7)
        else:
            assert stats is not None
            groups = stats.groupby(series, sort=False) if series is not None else [("", stats)]
            # A categorical x (e.g. a model's name): the categories in sweep order, evenly spaced.
            numeric = pd.api.types.is_numeric_dtype(table[x])
            cats = {} if numeric else {c: i for i, c in enumerate(dict.fromkeys(table[x].astype(str)))}
            for name, g in groups:
                g = g.sort_values(x) if numeric else g.assign(_pos=g[x].astype(str).map(cats)).sort_values("_pos")
                xs = g[x].astype(float) if numeric else g["_pos"].astype(float)
                (line,) = ax.plot(xs, g["mean"], marker="o", label=str(name))
                if (g["max"] > g["min"]).any():
                    ax.fill_between(xs, g["min"], g["max"], color=line.get_color(), alpha=0.15, linewidth=0)
            if cats:
                ax.set_xticks(range(len(cats)), list(cats), fontsize=7)
            ax.set_xlabel(desc.label(x), fontsize=8)
        ax.set_title(desc.label(col), fontsize=9)
        ax.grid(True, alpha=0.3)
    if x is not None and series is not None:
        axes[0].legend(fontsize=7)
    plot.suptitle(f"{desc.paper} {fig.name}", fontsize=10)
    return _savefig_atomic(plot, path)


def reproduce(
    paper: Paper,
    out_dir: str | os.PathLike[str],
    *,
    full: bool = False,
    jobs: int | None = None,
    only: list[str] | None = None,
    seeds: list[int] | None = None,
    on_done: Callable[[str], None] | None = None,
    cluster: Any = None,
) -> Report:
    """Make the figures of ``paper`` (all, or the ids in ``only``) under ``out_dir``, sweeps
    from the description's full-scale base if ``full`` (``jobs`` runs at a time), each point
    once per seed of ``seeds`` (default: the description's ``[base] seeds``, else the base
    scenario's seed), and check the claims of the figures made (on the means over seeds). ``on_done(id)`` is called after each figure. Raises
    :class:`ReproduceError` for an id ``only`` names that the paper has not, ``full`` for a
    paper without a full-scale base, or a figure some of whose runs failed (after running the
    rest; reproducing again into the same folder reuses the finished runs), and, before anything
    runs, for an ``out_dir`` that is neither new, empty nor an earlier reproduction's of ``paper``
    (:func:`check_target`); :class:`TypeError` for an argument of the wrong type. Returns the
    :class:`Report`, whose tables and plots are also written under ``out_dir``.

    ``cluster`` runs the figures' sweeps on a Dask or Ray cluster (what
    :func:`~slacknet.sweep.run_sweep` takes; connected once, before anything is written: a
    cluster that cannot run them is a :class:`ReproduceError` naming ``--cluster``)."""
    if not isinstance(paper, Paper):
        raise TypeError(f"paper = {paper!r}: a Paper, e.g. load_paper('experiments', 'credence')")
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir = {out_dir!r}: a path to the output folder")
    if os.fspath(out_dir) in ("", b""):
        raise ReproduceError("--out", "''", "an empty path (it would mean the working folder itself); name the "
                             "output folder")
    if not isinstance(full, bool):
        raise TypeError(f"full = {full!r}: True (the paper's scale) or False")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int)):
        raise TypeError(f"jobs = {jobs!r}: a whole number of parallel runs, at least 1, or None (one per core)")
    if jobs is not None and jobs < 1:
        raise ReproduceError("--jobs", str(jobs), "must be at least 1; leave it out for one run per core")
    if only is not None and (isinstance(only, str) or not all(isinstance(f, str) for f in only)):
        raise TypeError(f"only = {only!r}: a list of figure ids, e.g. [{only!r}]" if isinstance(only, str)
                        else f"only = {only!r}: a list of figure ids (strings)")
    if seeds is not None:
        if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
            raise TypeError(f"seeds = {seeds!r}: a list of seeds, e.g. [1, 2]")
        seeds = list(seeds)
        for i, s in enumerate(seeds):
            if not is_seed(s):
                raise ReproduceError(f"--seeds[{i}]", repr(s), "a seed is a whole number from 0 to 2^64 - 1, e.g. 1")
            if s in seeds[:i]:
                raise ReproduceError(f"--seeds[{i}]", str(s), "is listed twice: each seed runs once per point")
        if not seeds:
            raise ReproduceError("--seeds", "[]", "empty: give at least one seed, or None for the description's")
    desc = paper.description
    ids = list(desc.figure)
    for fid in only or []:
        if fid not in desc.figure:
            known = ", ".join(f"{i} ({f.title})" for i, f in desc.figure.items())
            raise ReproduceError("--only", fid, f"no such figure id in {paper.path}; its figures are {known}")
    base_file = None if desc.base is None else desc.base.full if full else desc.base.reduced
    wanted = [desc.figure[fid] for fid in ids if not only or fid in only]
    if base_file is None and any(f.sweep is not None and f.base is None for f in wanted):
        raise ReproduceError("--full", None, f"{paper.name} has no full-scale base scenario: add `full = \"<file>\"` "
                             f"under [base] in {paper.path}, or run without --full")
    base_seeds = list(desc.base.seeds) if desc.base is not None else []
    out = Path(out_dir)
    check_target(paper, out)
    for fid, fig in desc.figure.items():  # each sweep's folder, before any figure is made
        if fig.sweep is not None and (not only or fid in only):
            try:
                check_sweep_target(out / fid, name=f"{out / fid} (figure {fid}'s runs)", sweep_name=paper.sweeps[fid].name)
            except ResultsError as e:
                raise ReproduceError("--out", None, str(e)) from None
    with ExitStack() as stack:
        c = None
        if cluster is not None and any(f.sweep is not None for f in wanted):
            try:
                c = stack.enter_context(connect(cluster))
            except ClusterError as e:
                raise ReproduceError("--cluster", e.value, e.message) from None
        return _reproduce_into(paper, out, full, jobs, only, seeds, on_done, c, ids, base_file, base_seeds)


def _reproduce_into(
    paper: Paper, out: Path, full: bool, jobs: int | None, only: list[str] | None, seeds: list[int] | None,
    on_done: Callable[[str], None] | None, c: Any, ids: list[str], base_file: str | None, base_seeds: list[int],
) -> Report:
    """The body of :func:`reproduce` once its arguments are checked (and its cluster ``c``, if
    any, is open)."""
    desc = paper.description
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(json.dumps({"paper": paper.name}) + "\n", out / MARKER)
    report = Report(paper=paper, out_dir=out, full=full)
    base: Scenario | None = None
    for fid in ids:
        if only and fid not in only:
            continue
        fig = desc.figure[fid]
        if fig.source is not None:
            table = NATIVE_SOURCES[fig.source].load(full)
        elif fig.timeline is not None:
            scenario = with_set(Scenario.from_toml(paper.folder / fig.timeline), fig.set)
            parts, tables = [], []
            for seed in list(seeds or base_seeds or [scenario.seed]):
                series = _follow(fid, fig, scenario, seed)
                tables.append(_phases(fig, series, seed))
                parts.append(series.assign(seed=seed))
            table = pd.concat(tables, ignore_index=True)
            series = pd.concat(parts, ignore_index=True)[["seed", "time_us", *fig.metrics]]
            write_csv_atomic(series, out / f"{fid}_series.csv")
        else:
            if fig.base is not None:
                own = fig.base.full if full and fig.base.full is not None else fig.base.reduced
                fig_base = Scenario.from_toml(paper.folder / own)
            else:
                if base is None:
                    assert base_file is not None  # checked above
                    base = Scenario.from_toml(paper.folder / base_file)
                fig_base = base
            run_seeds = list(seeds or base_seeds or [fig_base.seed])
            sweep = dataclasses.replace(paper.sweeps[fid], base=with_set(fig_base, fig.set), seeds=run_seeds)
            table = run_sweep(sweep, out / fid, jobs=jobs, cluster=c)
            failed = table[table["status"] == "failed"]
            if len(failed):
                first = failed.iloc[0]
                raise ReproduceError(fid, None, f"{len(failed)} of {len(table)} runs failed ({first['variant']}: "
                                     f"{first['error']}; all in {out / fid / 'sweep.csv'}): fix the cause and "
                                     "reproduce again, which runs only those")
        report.figures[fid] = table
        write_csv_atomic(table, out / f"{fid}.csv")
        if fig.cdf is not None:
            samples = _cdf_samples(fig, table, out / fid)
            report.cdfs[fid] = _cdf_table(samples, fig.series)
            write_csv_atomic(report.cdfs[fid], out / f"{fid}_cdf.csv")
            _plot_cdf(paper, fid, samples, out / f"{fid}_cdf.png")
        if fig.timeline is not None:
            _plot_timeline(paper, fid, series, out / f"{fid}.png")
        else:
            _plot(paper, fid, table, out / f"{fid}.png")
        if on_done is not None:
            on_done(fid)
    report.claims = evaluate_claims(desc, report.figures)
    return report


def _cdf_samples(fig: FigureSpec, table: pd.DataFrame, runs_dir: Path) -> dict[str, np.ndarray]:
    """Per series (``""`` without one), the CDF column's values over all its runs' records
    (finite values of the chosen workload entry's transfers)."""
    from .results import Results

    assert fig.cdf is not None
    out: dict[str, list[np.ndarray]] = {}
    for _, row in table.iterrows():
        rec = Results.load(runs_dir / str(row["variant"])).records
        if fig.cdf.workload is not None:
            rec = rec[rec["workload"] == fig.cdf.workload]
        v = rec[fig.cdf.column].to_numpy(dtype=np.float64)
        key = str(row[fig.series]) if fig.series is not None else ""
        out.setdefault(key, []).append(v[np.isfinite(v)])
    return {k: np.concatenate(v) if v else np.array([]) for k, v in out.items()}


def _cdf_table(samples: dict[str, np.ndarray], series: str | None) -> pd.DataFrame:
    """One row per series: flows, mean and the quantiles of :data:`CDF_QUANTILES`."""
    rows = []
    for k, v in samples.items():
        row: dict[str, object] = {series or "series": k, "flows": len(v), "mean": float(v.mean()) if len(v) else np.nan}
        for q in CDF_QUANTILES:
            row["max" if q == 1.0 else f"p{q * 100:g}"] = float(np.quantile(v, q)) if len(v) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _plot_cdf(paper: Paper, fid: str, samples: dict[str, np.ndarray], path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    desc = paper.description
    fig = desc.figure[fid]
    assert fig.cdf is not None
    plot = Figure(figsize=(6.0, 3.6), layout="constrained")
    FigureCanvasAgg(plot)
    ax = plot.subplots()
    for name, v in samples.items():
        if len(v):
            xs = np.sort(v)
            ax.plot(xs, np.arange(1, len(xs) + 1) / len(xs), label=name or None, drawstyle="steps-post")
    ax.set_xscale("log")
    ax.set_xlabel(desc.label(fig.cdf.column), fontsize=8)
    ax.set_ylabel("CDF", fontsize=8)
    ax.grid(True, alpha=0.3)
    if fig.series is not None:
        ax.legend(fontsize=7)
    what = f" (workload {fig.cdf.workload})" if fig.cdf.workload is not None else ""
    plot.suptitle(f"{desc.paper} {fig.title}: CDF of {desc.label(fig.cdf.column)}{what}", fontsize=10)
    return _savefig_atomic(plot, path)


def _columns(fig: FigureSpec) -> list[str]:
    return [c for c in (fig.series, fig.x) if c is not None] + fig.metrics + fig.extra_columns


def _num_seeds(table: pd.DataFrame) -> int:
    return int(table["seed"].nunique()) if "seed" in table.columns else 1


def _over_seeds(table: pd.DataFrame, fig: FigureSpec, digits: int) -> pd.DataFrame:
    """One row per (series, x): each metric as ``mean [min-max]`` over the seeds."""
    keys = [c for c in (fig.series, fig.x) if c is not None]
    values = fig.metrics + fig.extra_columns
    g = table.groupby(keys, sort=False)[values]
    mean, lo, hi = g.mean(), g.min(), g.max()
    out = mean.copy().astype(object)
    for c in values:
        out[c] = [f"{m:.{digits}f} [{a:.{digits}f}-{b:.{digits}f}]" for m, a, b in zip(mean[c], lo[c], hi[c])]
    return out.reset_index()


def _spread_grid(t: pd.DataFrame, x: str, series: str, metric: str, digits: int) -> pd.DataFrame:
    """x by series, each cell ``mean ± std (min-max)`` of ``metric`` over the seeds (the
    population standard deviation, as the checks' per-seed summaries give it)."""
    g = t.groupby([x, series], sort=False)[metric]
    stats = pd.DataFrame({"mean": g.mean(), "std": g.std(ddof=0), "min": g.min(), "max": g.max()})
    cells = stats.apply(
        lambda r: f"{r['mean']:.{digits}f} ± {r['std']:.{digits}f} ({r['min']:.{digits}f}-{r['max']:.{digits}f})", axis=1
    )
    return cells.unstack(series)


def render(report: Report) -> str:
    """Every figure's table under its paper title, then every claim and whether it holds."""
    desc = report.paper.description
    scale = "full scale" if report.full else "reduced"
    n, m = len(report.figures), len(report.claims)
    lines = [f"{desc.paper}: {n} figure{'s' * (n != 1)} ({scale}), {m} claim{'s' * (m != 1)}"]
    for fid, t in report.figures.items():
        fig = desc.figure[fid]
        lines.append(f"\n{fig.name} [{fid}]")
        digits = fig.digits
        seeds = _num_seeds(t)
        if fig.x is not None and fig.series is not None and len(fig.metrics) == 1 and not fig.extra_columns:
            # One metric: a grid of x by series reads best (values averaged over seeds).
            metric = fig.metrics[0]
            if seeds > 1:
                grid = _spread_grid(t, fig.x, fig.series, metric, digits)
                what = f"mean ± std (min-max) over {seeds} seeds"
            else:
                grid = t.pivot_table(index=fig.x, columns=fig.series, values=metric, sort=False)
                what = ""
            grid.columns.name = None
            text = grid.reset_index().to_string(index=False, float_format=lambda v: f"{v:.{digits}f}")
            lines.append(f"{desc.label(metric)} by {fig.series}{', ' + what if what else ''}:\n{text}")
        elif seeds > 1:
            lines.append(f"mean [min-max] over {seeds} seeds:")
            lines.append(_over_seeds(t, fig, digits).to_string(index=False))
        else:
            lines.append(t[_columns(fig)].to_string(index=False, float_format=lambda v: f"{v:.{digits}f}"))
        if fid in report.cdfs and fig.cdf is not None:
            where = f" of workload {fig.cdf.workload}'s transfers" if fig.cdf.workload is not None else ""
            lines.append(f"CDF of {desc.label(fig.cdf.column)}{where}, over every seed's runs ({fid}_cdf.png):")
            lines.append(report.cdfs[fid].to_string(index=False, float_format=lambda v: f"{v:.{digits}f}"))
    lines.append("\nShapes the paper reports:")
    for c in report.claims:
        mark = "holds   " if c.holds else "NOT MET "
        lines.append(f"  [{mark}] {c.title}: {c.text}: {c.detail}")
    return "\n".join(lines)
