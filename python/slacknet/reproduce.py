"""Reproductions of the reference papers' evaluations: ``slacknet reproduce credence``.

Credence (NSDI'24): Figure 14 in the discrete-time model of Appendix A (LQD/ALG throughput
against the probability of false predictions), and the packet-level Figures 6, 7, 9 and 10
(95th-percentile slowdown of incast, short and long flows and 99.99th-percentile buffer
occupancy for DT, ABM, LQD and Credence against burst size, load, base RTT and flip
probability), from the sweeps in ``experiments/credence/``. The reduced version (the default)
runs the evaluation's leaf-spine cut to 2 leaves in about a second a point; ``--full`` runs
the paper's 256 servers. The output prints every table, writes a CSV and a PNG per figure, and
checks the shapes the paper reports, saying which hold.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from . import _native
from .config import Scenario
from .sweep import load_sweep, run_sweep

__all__ = ["CREDENCE_FIGURES", "Check", "CredenceReport", "reproduce_credence", "experiments_dir"]

#: Packet-level figures: (name, sweep file, x column, x label).
CREDENCE_FIGURES = (
    ("fig6", "fig6_burst.toml", "burst_buffer_fraction", "incast burst (fraction of the buffer)"),
    ("fig7", "fig7_load.toml", "load", "web-search load"),
    ("fig9", "fig9_rtt.toml", "host_delay_ns", "link delay (ns); base RTT = 8 x delay"),
    ("fig10", "fig10_flip.toml", None, "oracle"),
    ("fig6-powertcp", "fig6_powertcp.toml", "burst_buffer_fraction", "incast burst with PowerTCP"),
)

METRICS = (
    ("incast_p95", "incast p95 slowdown"),
    ("short_p95", "short p95 slowdown"),
    ("long_p95", "long p95 slowdown"),
    ("leaf_occ_p9999_pct", "p99.99 buffer occupancy (%)"),
)


def experiments_dir() -> Path:
    """``experiments/`` of the source checkout this package runs from."""
    return Path(__file__).resolve().parents[2] / "experiments"


@dataclass
class Check:
    """One expected shape from the paper and whether this run shows it."""

    claim: str
    holds: bool
    detail: str


@dataclass
class CredenceReport:
    """Everything ``reproduce credence`` produced."""

    figure14: pd.DataFrame
    figures: dict[str, pd.DataFrame] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    out_dir: Path | None = None


def _figure14() -> pd.DataFrame:
    rows = _native.credence_figure14()
    return pd.DataFrame(rows, columns=["flip_probability", "lqd_over_credence", "lqd_over_dt"])


def _checks(fig14: pd.DataFrame, figs: dict[str, pd.DataFrame]) -> list[Check]:
    out = []
    r = fig14["lqd_over_credence"].to_numpy()
    out.append(Check(
        "Fig. 14: LQD/Credence is 1.0 with perfect predictions and rises smoothly toward ~3",
        abs(r[0] - 1) < 1e-9 and bool((r[1:] >= r[:-1] - 0.02).all()) and 2.5 <= r[-1] <= 3.5,
        f"{r[0]:.3f} at p=0, {r[-1]:.3f} at p=1",
    ))
    dt = fig14["lqd_over_dt"].iloc[0]
    better = fig14.loc[fig14["lqd_over_credence"] < dt, "flip_probability"]
    out.append(Check(
        "Fig. 14: Credence beats DT until the flip probability is high",
        len(better) > 0 and better.max() >= 0.6,
        f"better than DT ({dt:.3f}) up to p = {better.max() if len(better) else float('nan'):.1f}",
    ))
    for fig, tag in (("fig6", "Fig. 6 (DCTCP)"), ("fig6-powertcp", "Fig. 6 (PowerTCP)")):
        f6 = figs.get(fig)
        if f6 is None:
            continue
        big = f6[f6["burst_buffer_fraction"] >= 0.5]
        piv = big.pivot_table(index="burst_buffer_fraction", columns="admission", values="incast_p95")
        cred_vs_lqd = (piv["Credence"] / piv["LQD"]).max()
        out.append(Check(
            f"{tag}: Credence stays close to LQD (incast p95 within 25%)",
            cred_vs_lqd <= 1.25,
            f"worst Credence/LQD incast p95 ratio {cred_vs_lqd:.2f}",
        ))
        gain = 1 - (piv["Credence"] / piv[["DT", "ABM"]].min(axis=1)).mean()
        out.append(Check(
            f"{tag}: at bursts >= 50% of the buffer, Credence's incast p95 is far lower than DT's "
            "and ABM's (the paper: about 95% lower)",
            gain >= 0.5,
            f"{gain * 100:.0f}% lower on average",
        ))
        lp = big.pivot_table(index="burst_buffer_fraction", columns="admission", values="long_p95")
        worst = (lp["Credence"] / lp["DT"]).max()
        out.append(Check(
            f"{tag}: long flows no worse than under DT (p95 within 10%)",
            worst <= 1.10,
            f"worst Credence/DT long p95 ratio {worst:.2f}",
        ))
    f10 = figs.get("fig10")
    if f10 is not None:
        cred = f10[f10["admission"].str.startswith("Credence")].copy()
        cred["p"] = [0.0 if a == "Credence" else float(a.split("=")[1]) for a in cred["admission"]]
        cred = cred.sort_values("p")
        v = dict(zip(cred["p"], cred["incast_p95"]))
        base = v.get(0.0, math.nan)
        # The paper (§4.2, Figure 10): "close to LQD up to 0.005 flipping probability", diverging
        # from 0.01 and "significantly worse at 0.1".
        close = v.get(0.001, math.inf) <= 1.25 * base
        worse = v.get(0.1, 0.0) >= v.get(0.01, math.inf) >= 0.95 * base
        out.append(Check(
            "Fig. 10: Credence stays close to LQD at a flip probability of 0.001 and gets worse "
            "as it grows to 0.1",
            bool(close and worse),
            "incast p95 by p: " + ", ".join(f"{p:g}: {x:.1f}" for p, x in sorted(v.items())),
        ))
    return out


def _plot(name: str, table: pd.DataFrame, x: str | None, xlabel: str, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 3.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(METRICS))
    for ax, (col, label) in zip(axes, METRICS):
        if x is None:
            ax.bar(table["admission"], table[col])
            ax.tick_params(axis="x", rotation=60, labelsize=7)
        else:
            for alg, g in table.groupby("admission", sort=False):
                g = g.sort_values(x)
                ax.plot(g[x].astype(float), g[col], marker="o", label=alg)
            ax.set_xlabel(xlabel, fontsize=8)
        ax.set_title(label, fontsize=9)
        ax.grid(True, alpha=0.3)
    if x is not None:
        axes[0].legend(fontsize=7)
    fig.suptitle(f"Credence {name}")
    fig.savefig(path, dpi=110)
    return path


def _plot_fig14(t: pd.DataFrame, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(t["flip_probability"], t["lqd_over_credence"], marker="o", label="Credence")
    ax.plot(t["flip_probability"], t["lqd_over_dt"], linestyle="--", label="DT")
    ax.set_xlabel("probability of false predictions")
    ax.set_ylabel("LQD / ALG throughput")
    ax.set_title("Credence Figure 14 (discrete-time model)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.savefig(path, dpi=110)
    return path


def reproduce_credence(
    out_dir: str | os.PathLike[str],
    *,
    full: bool = False,
    jobs: int | None = None,
    only: list[str] | None = None,
    on_done: Callable[[str], None] | None = None,
) -> CredenceReport:
    """Run Credence's Figure 14 and the packet-level figures (see the module docs)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    exp = experiments_dir() / "credence"
    if not exp.is_dir():
        raise FileNotFoundError(f"the Credence experiments are not here ({exp}): run from a source checkout")
    base = Scenario.from_toml(exp / ("base_full.toml" if full else "base_reduced.toml"))
    report = CredenceReport(figure14=_figure14(), out_dir=out)
    report.figure14.to_csv(out / "fig14.csv", index=False)
    _plot_fig14(report.figure14, out / "fig14.png")
    for name, sweep_file, x, xlabel in CREDENCE_FIGURES:
        if only and name not in only:
            continue
        sweep = load_sweep(exp / sweep_file)
        sweep.base = base
        table = run_sweep(sweep, out / name, jobs=jobs)
        report.figures[name] = table
        table.to_csv(out / f"{name}.csv", index=False)
        _plot(name, table, x, xlabel, out / f"{name}.png")
        if on_done is not None:
            on_done(name)
    report.checks = _checks(report.figure14, report.figures)
    return report


def render_credence(report: CredenceReport) -> str:
    """Tables and shape checks as text."""
    lines = ["Figure 14 (discrete-time model, Appendix A): LQD/ALG throughput", report.figure14.to_string(
        index=False, float_format=lambda v: f"{v:.3f}")]
    for name, _, x, xlabel in CREDENCE_FIGURES:
        t = report.figures.get(name)
        if t is None:
            continue
        cols = ["admission"] + ([x] if x else []) + [c for c, _ in METRICS] + ["drops"]
        lines.append(f"\n{name}: metrics against {xlabel}")
        lines.append(t[cols].to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    lines.append("\nShapes the paper reports:")
    for c in report.checks:
        mark = "holds   " if c.holds else "NOT MET "
        lines.append(f"  [{mark}] {c.claim}: {c.detail}")
    return "\n".join(lines)

