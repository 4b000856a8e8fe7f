"""slacknet.analysis: flow classes, percentiles and per-tier switch counters."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

import slacknet
from slacknet.analysis import (
    FLOW_CLASSES,
    class_masks,
    fct_table,
    render_summary,
    summary_table,
    switch_table,
)

from .conftest import SMALL_NET


def _records(sizes: list[int], incast: list[bool], slowdown: list[float]) -> pd.DataFrame:
    sd = np.array(slowdown, dtype=float)
    return pd.DataFrame(
        {"size_bytes": np.array(sizes, dtype=np.uint64), "incast": incast,
         "finished": ~np.isnan(sd), "slowdown": sd}
    )


def test_classes_and_percentiles() -> None:
    r = _records(
        [1_000, 50_000, 99_999, 100_000, 2_000_000, 1_000_000, 10_000],
        [False, False, False, False, False, False, True],
        [1.0, 2.0, math.nan, 5.0, 3.0, 4.0, 10.0],
    )
    m = class_masks(r)
    assert list(m) == list(FLOW_CLASSES)
    assert m["short"].tolist() == [True, True, True, False, False, False, False]
    assert m["long"].tolist() == [False, False, False, False, True, True, False]
    t = fct_table(r)
    assert t.loc["short", "flows"] == 3 and t.loc["short", "unfinished"] == 1
    assert t.loc["short", "p50_slowdown"] == 1.5
    assert t.loc["long", "p50_slowdown"] == 3.5
    assert t.loc["incast", "p99_slowdown"] == 10.0
    assert t.loc["all", "flows"] == 7 and t.loc["all", "finished"] == 6


def test_empty_class_is_nan() -> None:
    t = fct_table(_records([1_000], [False], [1.0]))
    assert t.loc["long", "flows"] == 0 and math.isnan(t.loc["long", "p99_slowdown"])


def test_switch_table(tiny_results: slacknet.Results) -> None:
    s = switch_table(tiny_results.switches)
    assert list(s.index) == ["leaf", "spine"]
    assert s["switches"].sum() == len(tiny_results.switches)
    sw = tiny_results.switches
    assert s["drops"].sum() == int(
        sw["drops_admission"].sum() + sw["drops_queue_cap"].sum() + sw["drops_pushout"].sum()
    )
    assert s.loc["leaf", "max_occupancy_bytes"] == sw[sw["tier"] == "leaf"]["max_occupancy_bytes"].max()


def test_summary_table_stacks_both(tiny_results: slacknet.Results) -> None:
    t = summary_table(tiny_results.records, tiny_results.switches)
    assert t.index.names == ["section", "group"]
    assert [g for s, g in t.index if s == "fct"] == list(FLOW_CLASSES)
    assert ("switch", "leaf") in t.index
    assert t.loc[("fct", "all"), "flows"] == len(tiny_results.records)


def test_render_summary(tiny_results: slacknet.Results) -> None:
    from rich.console import Console

    console = Console(record=True, width=120)
    for table in render_summary(tiny_results.records, tiny_results.switches):
        console.print(table)
    text = console.export_text()
    assert "short" in text and "incast" in text and "leaf" in text and "p99" in text


def test_app_table_summarises_units_per_application_and_kind() -> None:
    from slacknet.analysis import app_table

    apps = pd.DataFrame(
        {
            "app": [1, 1, 1, 2],
            "kind": ["iteration"] * 3 + ["block"],
            "duration_ps": [1_000_000, 2_000_000, 3_000_000, 5_000_000],
            "slowdown": [1.0, 2.0, 3.0, float("nan")],
        }
    )
    t = app_table(apps)
    assert list(t.index) == [(1, "iteration"), (2, "block")]
    row = t.loc[(1, "iteration")]
    assert row["units"] == 3 and row["p50_us"] == 2.0 and row["p50_slowdown"] == 2.0
    assert np.isnan(t.loc[(2, "block"), "p50_slowdown"])
    assert app_table(pd.DataFrame()).empty


#: One 50 KB flow across a 2-leaf, 4-host leaf-spine: a run of a few hundred events.
ONE_FLOW_TOML = SMALL_NET + """
[[workload]]
kind = "flows"
flows = [{ src = 0, dst = 3, size_bytes = 50000 }]
"""


def test_occupancy_percentile_without_samples_is_nan_not_zero() -> None:
    # With occupancy sampling off there is no sample to take a percentile of: the switch
    # table says NaN and the printed summary "-", not "0 B" (the maximum is still measured).
    r = slacknet.run(slacknet.Scenario.from_toml_text(ONE_FLOW_TOML + "[run]\nsample_interval_us = 0\n"))
    assert r.occupancy.empty
    s = switch_table(r.switches, r.occupancy)
    assert s["occ_p99_bytes"].isna().all()
    assert (s["max_occupancy_bytes"] > 0).all() and s["drops"].dtype == np.int64
    assert summary_table(r.records, r.switches, r.occupancy).loc[("switch", "leaf"), "occ_p99_bytes"] != 0

    from rich.console import Console

    console = Console(record=True, width=120)
    for table in render_summary(r.records, r.switches, r.apps, r.occupancy):
        console.print(table)
    text = console.export_text()
    assert "0 B" not in text
    leaf = next(line for line in text.splitlines() if "leaf" in line)
    assert [c.strip() for c in leaf.split("│")][5] == "-"
    # The switches table says it by itself (occ_samples), without the occupancy table; a folder
    # saved before that column existed is told by its occupancy table.
    assert (r.switches["occ_samples"] == 0).all() and switch_table(r.switches)["occ_p99_bytes"].isna().all()
    old = r.switches.drop(columns="occ_samples")
    assert switch_table(old, r.occupancy)["occ_p99_bytes"].isna().all()
    # Sampled, an idle switch's percentile is a measured 0.
    sampled = slacknet.run(slacknet.Scenario.from_toml_text(ONE_FLOW_TOML))
    assert (sampled.switches["occ_samples"] > 0).all()
    assert sampled.switches["occ_samples"].sum() == len(sampled.occupancy)
    assert (switch_table(sampled.switches, sampled.occupancy)["occ_p99_bytes"] == 0).all()
