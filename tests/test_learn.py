"""Credence's learning pipeline: LQD traces, forest training and export, native evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import slacknet
from slacknet.cli import main
from slacknet.learn import RarePositivesWarning, eta_bound, export_forest, trace, train

HEAVY = """
name = "learn"
seed = 5
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 10
[switch]
buffer_bytes = 80000
[transport]
kind = "dctcp"
init_cwnd_pkts = 40
[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.6
duration_ms = 5
[[workload]]
kind = "incast"
query_rate_per_host = 1000
fan_in = 6
burst_bytes = 120000
duration_ms = 5
"""


@pytest.fixture(scope="module")
def heavy_trace(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    d = tmp_path_factory.mktemp("learn")
    return trace(slacknet.Scenario.from_toml_text(HEAVY, d))


def test_trace_labels_lqd_drops(heavy_trace: pd.DataFrame) -> None:
    t = heavy_trace
    assert list(t.columns) == [
        "switch", "time_ps", "queue", "queue_len", "avg_queue_len", "occupancy", "avg_occupancy", "dropped",
    ]
    assert 0 < t["dropped"].mean() < 0.5
    assert (t["queue_len"] <= t["occupancy"]).all() and (t["occupancy"] <= 80_000).all()
    # Dropped packets arrive at fuller buffers than transmitted ones.
    assert t.loc[t["dropped"], "occupancy"].mean() > t.loc[~t["dropped"], "occupancy"].mean()


def test_train_scores_and_exports_a_forest_the_simulator_runs(heavy_trace: pd.DataFrame, tmp_path: Path) -> None:
    report = train(heavy_trace, trees=4, depth=4, seed=3)
    m = report.metrics
    assert len(report.model.estimators_) == 4
    assert all(e.tree_.max_depth <= 4 for e in report.model.estimators_)
    assert m["accuracy"] > 0.9 and 0 < m["recall"] <= 1 and m["eta_bound"] >= 1
    assert m["tp"] + m["fp"] + m["tn"] + m["fn"] == m["test_rows"]
    path = export_forest(report, tmp_path / "forest.json")
    doc = json.loads(path.read_text())
    assert doc["format"] == "slacknet-forest/1" and doc["features"] == ["queue_len", "occupancy"]
    # The simulator loads it and Credence runs with it.
    sc = slacknet.Scenario.from_toml_text(
        HEAVY + '\n', tmp_path
    ).model_copy()
    sc = sc.model_copy(update={"switch": sc.switch.model_copy(update={"admission": slacknet.Credence(oracle=slacknet.ForestOracle(path=str(path)))})})
    res = slacknet.run(sc)
    assert res.summary["finished_flows"] == res.summary["num_flows"]
    assert res.switches["credence_oracle_accepts"].sum() + res.switches["credence_oracle_drops"].sum() > 0


def test_rare_positives_warn() -> None:
    quiet = pd.DataFrame(
        {"switch": 0, "queue": 0, "queue_len": range(1000), "occupancy": range(1000), "dropped": False}
    )
    quiet.loc[0, "dropped"] = True
    with pytest.warns(RarePositivesWarning, match="too few"):
        train(quiet)


def test_eta_bound_matches_theorem_2() -> None:
    assert eta_bound(tp=0, fp=0, tn=100, fn=0, num_queues=8) == 1.0
    assert eta_bound(tp=5, fp=10, tn=100, fn=0, num_queues=8) == pytest.approx(110 / 100)
    assert eta_bound(tp=5, fp=0, tn=100, fn=2, num_queues=8) == pytest.approx(100 / 86)
    assert eta_bound(tp=0, fp=0, tn=10, fn=5, num_queues=8) == float("inf")


def test_cli_trace_and_train(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scen = tmp_path / "heavy.toml"
    scen.write_text(HEAVY)
    assert main(["credence", "trace", str(scen), "--out", str(tmp_path / "t.parquet")]) == 0
    assert main(["credence", "train", str(tmp_path / "t.parquet"), "--out", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out
    assert "precision" in out and "eta bound" in out and (tmp_path / "m.json").is_file()
    assert main(["credence", "train", str(tmp_path / "missing.parquet"), "--out", str(tmp_path / "x.json")]) == 2


@pytest.mark.parametrize("argv, message", [
    # scikit-learn's messages named n_estimators, max_depth and random_state.
    (["--trees", "0"], "--trees = 0: must be at least 1, e.g. 4 (the paper's)"),
    (["--depth", "0"], "--depth = 0: must be at least 1, e.g. 4 (the paper's)"),
    (["--seed", "-1"], "--seed = -1: must be between 0 and 2^32 - 1, e.g. 1"),
])
def test_cli_train_checks_its_options_first(argv: list[str], message: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["credence", "train", str(tmp_path / "t.parquet"), "--out", str(tmp_path / "m.json"), *argv]) == 2
    assert capsys.readouterr().err == f"error: {message}\n"


def test_cli_train_says_what_is_not_a_trace(tmp_path: Path, tiny_results: slacknet.Results,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    # Both said `a trace of 0 (1) rows is too small`.
    run = tiny_results.save(tmp_path / "run")
    for path, what in ((run, "a folder, not a decision trace"),
                       (run / "records.parquet", "not a decision trace (no column switch, queue, dropped, queue_len, "
                                                 "occupancy)")):
        assert main(["credence", "train", str(path), "--out", str(tmp_path / "m.json")]) == 2
        assert capsys.readouterr().err == (f"error: TRACE = {path}: {what}; give a Parquet file that "
                                           "`slacknet credence trace` wrote\n")
    assert not (tmp_path / "m.json").exists()


def test_a_trace_at_its_cap_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # The simulator keeps at most 512 MiB of rows (crates/sim/src/world/trace.rs tests the cap
    # itself); a trace that reached it is marked and says how far it goes, as a warning from
    # the API and one note line from the CLI. Here the simulator is made to report it.
    from slacknet import _native
    import slacknet.learn

    real = _native.Simulation

    class Full:
        def __init__(self, *args: object) -> None:
            self.sim = real(*args)

        def __getattr__(self, name: str) -> object:
            return getattr(self.sim, name)

        def decision_trace_truncated(self) -> bool:
            return True

    monkeypatch.setattr(slacknet.learn._native, "Simulation", Full)
    scen = slacknet.Scenario.from_toml_text(HEAVY.replace("duration_ms = 5", "duration_ms = 0.5"), tmp_path)
    with pytest.warns(slacknet.learn.TraceTruncatedWarning, match=r"full at \d+ rows \(512 MiB\): it holds the switch "
                      r"arrivals up to \d+\.\d{3} ms of the run"):
        df = trace(scen)
    assert df.attrs["truncated"] is True
    monkeypatch.undo()
    assert trace(scen).attrs["truncated"] is False
    monkeypatch.setattr(slacknet.learn._native, "Simulation", Full)
    path = tmp_path / "heavy.toml"
    path.write_text(HEAVY.replace("duration_ms = 5", "duration_ms = 0.5"))
    assert main(["credence", "trace", str(path), "--out", str(tmp_path / "t.parquet")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("note: the decision trace is full at ") and err.count("\n") == 1, err
