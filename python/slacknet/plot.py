"""Standard plots of a run, written as PNG files.

- ``slowdown_cdf.png``: CDF of FCT slowdown per flow class (finished flows, log x);
- ``slowdown_by_size.png``: median and p99 slowdown per log-spaced flow-size bin (log x).

Figures are drawn with matplotlib's Agg canvas directly, so importing or calling this module
never changes the user's pyplot backend.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .analysis import class_masks
from .results import Results

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_results", "plot_slowdown_cdf", "plot_slowdown_by_size", "size_bins"]


def _figure() -> tuple[Figure, Axes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def plot_slowdown_cdf(records: pd.DataFrame, path: str | os.PathLike[str], title: str = "") -> Path:
    """CDF of slowdown per flow class; classes without finished flows are left out."""
    fig, ax = _figure()
    finished = records["finished"].to_numpy(dtype=bool)
    slowdown = records["slowdown"].to_numpy(dtype=np.float64)
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
    out = Path(path)
    fig.savefig(out, dpi=120)
    return out


def size_bins(records: pd.DataFrame, num_bins: int = 12) -> pd.DataFrame:
    """Median and p99 slowdown of finished flows per log-spaced size bin: columns ``lo``,
    ``hi`` (bytes), ``center`` (geometric), ``flows``, ``p50``, ``p99``; empty bins dropped."""
    r = records[records["finished"].to_numpy(dtype=bool)]
    cols = ["lo", "hi", "center", "flows", "p50", "p99"]
    if r.empty:
        return pd.DataFrame(columns=cols)
    size = r["size_bytes"].to_numpy(dtype=np.float64)
    sd = r["slowdown"].to_numpy(dtype=np.float64)
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
    """Median and p99 slowdown per log-spaced flow-size bin."""
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
    out = Path(path)
    fig.savefig(out, dpi=120)
    return out


def plot_results(
    results: Results | str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None
) -> list[Path]:
    """Write the standard plots of a run (a :class:`Results` or a results folder) into
    ``out_dir`` (default: the results folder itself; required for an in-memory result).
    Returns the paths written."""
    if isinstance(results, Results):
        res = results
        if out_dir is None:
            raise ValueError("out_dir is required when plotting in-memory results")
        target = Path(out_dir)
    else:
        res = Results.load(results)
        target = Path(out_dir) if out_dir is not None else Path(results)
    target.mkdir(parents=True, exist_ok=True)
    name = res.scenario.name
    return [
        plot_slowdown_cdf(res.records, target / "slowdown_cdf.png", f"{name}: FCT slowdown CDF"),
        plot_slowdown_by_size(res.records, target / "slowdown_by_size.png", f"{name}: slowdown by size"),
    ]
