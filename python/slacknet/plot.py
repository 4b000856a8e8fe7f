"""Standard plots of a run, written as PNG files.

- ``slowdown_cdf.png``: CDF of FCT slowdown per flow class (finished flows, log x);
- ``slowdown_by_size.png``: median and p99 slowdown per log-spaced flow-size bin (log x);
- with time series (``[run.timeseries]``) only: ``queue_series.png``, the queue length of
  the busiest few ports over time, and ``transfer_cwnd.png``, the congestion window of the
  largest few transfers over time.

Figures are drawn with matplotlib's Agg canvas directly, so importing or calling this module
never changes the user's pyplot backend. Each PNG is written to a temporary name and renamed
into place (:func:`~slacknet.results.write_text_atomic`'s step): an interrupted plot leaves the
earlier PNG or none, and a link at a PNG's name is replaced, never written through. Memory is
proportional to the rows of the tables drawn, whatever their times.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .analysis import _finished_slowdowns, _numbers, _require, class_masks
from .results import Results, ResultsError, is_results_folder, replace_atomic

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "plot_results",
    "plot_slowdown_cdf",
    "plot_slowdown_by_size",
    "plot_queue_series",
    "plot_transfer_cwnd",
    "busiest_ports",
    "size_bins",
]

#: Ports drawn by :func:`plot_queue_series` and transfers by :func:`plot_transfer_cwnd`.
NUM_SERIES_DRAWN = 5


def _figure() -> tuple[Figure, Axes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


#: The PNG text key and value that mark a plot as slacknet's (so that plotting again may
#: replace it, and never a picture of the user's of the same name).
_MARK = ("Software", "slacknet plot")


def _save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` as a PNG to ``path``, atomically (the module docs)."""
    return replace_atomic(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png", metadata=dict([_MARK])))


def _is_our_plot(path: Path) -> bool:
    """Whether ``path`` is a PNG slacknet's plotting wrote (its text chunk says so)."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        from PIL import Image

        with Image.open(path) as im:
            return bool(im.format == "PNG" and im.info.get(_MARK[0]) == _MARK[1])
    except (OSError, ValueError, ImportError, SyntaxError):  # PIL raises SyntaxError on broken PNGs
        return False


#: The plots :func:`plot_results` may write.
PLOT_NAMES = ("slowdown_cdf.png", "slowdown_by_size.png", "queue_series.png", "transfer_cwnd.png")


def check_plot_target(target: str | os.PathLike[str], source: str | os.PathLike[str] | None) -> None:
    """Raise :class:`~slacknet.ResultsError` unless :func:`plot_results` may write into
    ``target``: not another run's results folder than the folder ``source`` (its plots would
    show this run's numbers), and, outside ``source`` itself, no file of a plot's name but one
    slacknet wrote (a picture of the user's is never replaced)."""
    t = Path(target)
    if not t.is_dir():
        return
    try:
        same = source is not None and os.path.samefile(t, source)
    except OSError:
        same = False
    if same:
        return
    # An in-memory run (source None) is plotted by its own code, often into the folder it
    # was just saved to: only a folder given as the source can be told apart from another's.
    if source is not None and is_results_folder(t):
        raise ResultsError(f"cannot plot into {t}: it is another run's results folder, whose plots would then show "
                           "this run's numbers; plot into the run's own folder or a new one")
    for name in PLOT_NAMES:
        p = t / name
        if os.path.lexists(p) and not _is_our_plot(p):
            raise ResultsError(f"cannot plot into {t}: it holds a {name} that slacknet did not write, which the plot "
                               "would replace; choose a new folder")


def plot_slowdown_cdf(records: pd.DataFrame, path: str | os.PathLike[str], title: str = "") -> Path:
    """CDF of slowdown per flow class of ``records``; classes without finished flows are left
    out. Writes the plot (titled ``title``) as a PNG to ``path`` and returns ``path``."""
    finished, slowdown = _finished_slowdowns(records)
    fig, ax = _figure()
    drawn = 0
    for name, mask in class_masks(records).items():
        sd = np.sort(slowdown[mask & finished])
        if sd.size == 0:
            continue
        y = np.arange(1, sd.size + 1) / sd.size
        if name == "all":
            ax.step(sd, y, where="post", label=f"all (n={sd.size})", color="black", linestyle="--")
        else:
            ax.step(sd, y, where="post", label=f"{name} (n={sd.size})")
        drawn += 1
    if drawn:
        ax.set_xscale("log")
        ax.legend(loc="lower right")
    else:
        ax.text(0.5, 0.5, "no finished flows", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("FCT slowdown (FCT / ideal FCT)")
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title or "FCT slowdown by flow class")
    return _save(fig, path)


def size_bins(records: pd.DataFrame, num_bins: int = 12) -> pd.DataFrame:
    """Median and p99 slowdown of finished flows per log-spaced size bin: columns ``lo``,
    ``hi`` (bytes), ``center`` (geometric), ``flows``, ``p50``, ``p99``; ``num_bins`` bins
    spanning the sizes of ``records``' finished flows, empty bins dropped."""
    _require(records, "records", ("size_bytes",))
    finished, slowdown = _finished_slowdowns(records)
    cols = ["lo", "hi", "center", "flows", "p50", "p99"]
    if not finished.any():
        return pd.DataFrame(columns=cols)
    size = _numbers(records, "records", "size_bytes")[finished]
    sd = slowdown[finished]
    lo, hi = max(size.min(), 1.0), size.max()
    if hi <= lo:
        hi = lo * 1.0001
    edges = np.logspace(np.log10(lo), np.log10(hi), num_bins + 1)
    edges[-1] = np.nextafter(edges[-1], np.inf)
    idx = np.clip(np.searchsorted(edges, size, side="right") - 1, 0, num_bins - 1)
    rows = []
    for b in range(num_bins):
        v = sd[idx == b]
        if v.size == 0:
            continue
        rows.append(
            {
                "lo": edges[b],
                "hi": edges[b + 1],
                "center": float(np.sqrt(edges[b] * edges[b + 1])),
                "flows": int(v.size),
                "p50": float(np.percentile(v, 50)),
                "p99": float(np.percentile(v, 99)),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def plot_slowdown_by_size(
    records: pd.DataFrame, path: str | os.PathLike[str], title: str = "", num_bins: int = 12
) -> Path:
    """Median and p99 slowdown of ``records`` per log-spaced flow-size bin
    (:func:`size_bins`, ``num_bins`` bins). Writes the plot (titled ``title``) as a PNG to
    ``path`` and returns ``path``."""
    fig, ax = _figure()
    bins = size_bins(records, num_bins)
    if bins.empty:
        ax.text(0.5, 0.5, "no finished flows", ha="center", va="center", transform=ax.transAxes)
    else:
        ax.plot(bins["center"], bins["p50"], marker="o", label="median")
        ax.plot(bins["center"], bins["p99"], marker="s", label="p99")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend()
    ax.set_xlabel("flow size (bytes)")
    ax.set_ylabel("FCT slowdown")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title or "FCT slowdown by flow size")
    return _save(fig, path)


def _time_axis(max_ps: float) -> tuple[float, str]:
    """Divisor and label turning picoseconds into microseconds (short runs) or milliseconds."""
    return (1e6, "time (us)") if max_ps < 2e9 else (1e9, "time (ms)")


def busiest_ports(queue_series: pd.DataFrame, n: int = NUM_SERIES_DRAWN) -> list[int]:
    """The links of the ``n`` ports of ``queue_series`` whose queues held the most bytes summed
    over the samples (the largest time-averaged backlog), busiest first; ties go to the lower
    link id."""
    _require(queue_series, "queue_series", ("link", "bytes"))
    if queue_series.empty:
        return []
    total = queue_series.groupby("link")["bytes"].sum()
    order = sorted(total.items(), key=lambda kv: (-int(kv[1]), int(kv[0])))
    return [int(link) for link, _ in order[:n]]


def _sparse_steps(idx: np.ndarray, y: np.ndarray, last: int) -> tuple[np.ndarray, np.ndarray]:
    """The corners of the step curve (``where="post"``) over samples ``0..last`` that is ``y``
    at the sorted sample indices ``idx`` and 0 at every other: each value, then a 0 at the next
    sample where that one is absent, and the ends. The same curve as a dense array of
    ``last + 1`` values, in memory proportional to ``idx`` (``last`` may be 10^12 in a hand-made
    table)."""
    keep = np.append(idx[1:] != idx[:-1], True)  # one value per sample: the last, as before
    idx, y = idx[keep], y[keep]
    gap = np.append(idx[1:] > idx[:-1] + 1, idx[-1] < last)  # the next sample is empty
    xs = np.concatenate([idx, idx[gap] + 1])
    ys = np.concatenate([y, np.zeros(int(gap.sum()))])
    if idx[0] > 0:
        xs, ys = np.append(xs, 0), np.append(ys, 0.0)
    if xs.max() < last:
        xs, ys = np.append(xs, last), np.append(ys, 0.0)
    order = np.argsort(xs, kind="stable")
    return xs[order].astype(np.float64), ys[order]


def plot_queue_series(
    results: Results, path: str | os.PathLike[str], title: str = "", n: int = NUM_SERIES_DRAWN
) -> Path:
    """Queue length (all classes of a port together) over time of the ``n`` busiest ports. The
    series is sparse, so a sample without a row for a port counts as an empty queue. Writes the
    plot of ``results`` (titled ``title``) as a PNG to ``path`` and returns ``path``."""
    fig, ax = _figure()
    qs = results.queue_series
    links = busiest_ports(qs, n)
    if not links:
        ax.text(0.5, 0.5, "no queue ever held a packet at a sample", ha="center", va="center", transform=ax.transAxes)
    else:
        ts = results.scenario.run.timeseries
        times = np.sort(qs["time_ps"].unique()).astype(np.float64)
        step = ts.interval_us * 1e6 if ts is not None else float(np.min(np.diff(times), initial=1.0))
        last = int(round(times[-1] / step))  # samples are 0..last; the series lists the non-empty
        scale, label = _time_axis(times[-1])
        dst = dict(zip(results.links["link"], results.links["dst"])) if "dst" in results.links else {}
        for link in links:
            port = qs[qs["link"] == link]
            per_sample = port.groupby("time_ps")["bytes"].sum()
            idx = np.clip(np.rint(per_sample.index.to_numpy(dtype=np.float64) / step).astype(np.int64), 0, last)
            x, y = _sparse_steps(idx, per_sample.to_numpy(dtype=np.float64) / 1e3, last)
            first = port.iloc[0]
            to = dst.get(link)
            if int(first["switch"]) < 0:
                name = f"host {int(first['node'])} NIC"
            else:
                name = f"switch {int(first['switch'])}" + (f" -> node {int(to)}" if to is not None else "")
            # A step through a single point draws nothing: mark it (one sample: a short run).
            ax.step(x * (step / scale), y, where="post", label=f"link {link}: {name}", linewidth=0.9,
                    marker="o" if last == 0 else None)
        k = results.scenario.switch.queue_list()[0].ecn_threshold_bytes
        if k is not None:
            ax.axhline(k / 1e3, color="grey", linestyle="--", linewidth=0.8, label="switch ECN threshold")
        ax.set_xlabel(label)
        ax.legend(loc="upper right", fontsize="small")
    ax.set_ylabel("queue length (KB)")
    ax.grid(True, alpha=0.3)
    ax.set_title(title or "Queue length of the busiest ports")
    return _save(fig, path)


def plot_transfer_cwnd(
    results: Results, path: str | os.PathLike[str], title: str = "", n: int = NUM_SERIES_DRAWN
) -> Path:
    """Congestion window over time of the ``n`` largest transfers in the transfer series (ties
    go to the earlier transfer). Writes the plot of ``results`` (titled ``title``) as a PNG to
    ``path`` and returns ``path``."""
    fig, ax = _figure()
    ts = results.transfer_series
    flows = np.unique(ts["flow"].to_numpy()) if not ts.empty else np.array([], dtype=np.uint32)
    if flows.size == 0:
        ax.text(0.5, 0.5, "no transfer in flight at a sample", ha="center", va="center", transform=ax.transAxes)
    elif not (ts["cwnd_bytes"].to_numpy() > 0).any():
        ax.text(0.5, 0.5, "the transport has no congestion window", ha="center", va="center", transform=ax.transAxes)
    else:
        if flows.max() >= len(results.records):
            raise ValueError(f"transfer_series samples flow {flows.max()}, but records has {len(results.records)} "
                             "flows: pass the tables of one run")
        sizes = results.records["size_bytes"].to_numpy()[flows]
        chosen = [int(f) for _, f in sorted(zip(-sizes.astype(np.int64), flows))[:n]]
        scale, label = _time_axis(float(ts["time_ps"].max()))
        for f in chosen:
            rows = ts[ts["flow"] == f]
            size = int(results.records["size_bytes"].iloc[f])
            ax.step(
                rows["time_ps"].to_numpy(dtype=np.float64) / scale,
                rows["cwnd_bytes"].to_numpy(dtype=np.float64) / 1e3,
                where="post",
                label=f"flow {f} ({size / 1e6:.3g} MB)",
                linewidth=0.9,
                marker="o" if len(rows) == 1 else None,  # a step through one point draws nothing
            )
        ax.set_xlabel(label)
        ax.legend(loc="best", fontsize="small")
    ax.set_ylabel("congestion window (KB)")
    ax.grid(True, alpha=0.3)
    ax.set_title(title or "Congestion window of the largest transfers")
    return _save(fig, path)


def plot_results(
    results: Results | str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None
) -> list[Path]:
    """Write the standard plots of a run (a :class:`Results` or a results folder) into
    ``out_dir`` (default: the results folder itself; required for an in-memory result), and
    the time-series plots where the run has them. Returns the paths written. Raises
    ``ValueError`` for in-memory results without ``out_dir`` and
    :class:`~slacknet.ResultsError` for a folder that is not a complete results folder."""
    if isinstance(results, Results):
        res = results
        if out_dir is None:
            raise ValueError("out_dir is required when plotting in-memory results")
        target = Path(out_dir)
    else:
        res = Results.load(results)
        target = Path(out_dir) if out_dir is not None else Path(results)
    check_plot_target(target, None if isinstance(results, Results) else results)
    target.mkdir(parents=True, exist_ok=True)
    name = res.scenario.name
    paths = [
        plot_slowdown_cdf(res.records, target / "slowdown_cdf.png", f"{name}: FCT slowdown CDF"),
        plot_slowdown_by_size(res.records, target / "slowdown_by_size.png", f"{name}: slowdown by size"),
    ]
    if not res.queue_series.empty:
        paths.append(plot_queue_series(res, target / "queue_series.png", f"{name}: queue length, busiest ports"))
    if not res.transfer_series.empty:
        paths.append(plot_transfer_cwnd(res, target / "transfer_cwnd.png", f"{name}: cwnd, largest transfers"))
    return paths
