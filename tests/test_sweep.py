"""Sweeps: expansion, key setting, parallel runs and their metrics table."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

import slacknet
from slacknet.cli import main
from slacknet.sweep import METRIC_COLUMNS, expand, load_sweep, run_sweep, set_key

BASE = """
name = "tiny"
seed = 3
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 10
[switch]
buffer_bytes = 200000
[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.3
duration_ms = 2
[[workload]]
kind = "incast"
query_rate_per_host = 500
fan_in = 4
burst_bytes = 150000
duration_ms = 2
"""

SWEEP = """
name = "tiny_sweep"
base = "base.toml"
seeds = [1, 2]
[[axis]]
key = "switch.admission"
values = [{ policy = "dynamic_thresholds" }, { policy = "lqd" }]
labels = ["DT", "LQD"]
[[axis]]
key = "workload[0].load"
values = [0.2, 0.6]
"""


@pytest.fixture()
def sweep_file(tmp_path: Path) -> Path:
    (tmp_path / "base.toml").write_text(BASE)
    p = tmp_path / "sweep.toml"
    p.write_text(SWEEP)
    return p


def test_expand_is_the_cartesian_product_in_order(sweep_file: Path) -> None:
    runs = expand(load_sweep(sweep_file))
    assert [r.variant for r in runs][:3] == [
        "DT__load=0.2__seed=1",
        "DT__load=0.2__seed=2",
        "DT__load=0.6__seed=1",
    ]
    assert len(runs) == 8
    r = runs[-1]
    assert isinstance(r.scenario.switch.admission, slacknet.LongestQueueDrop)
    assert r.scenario.workload[0].load == 0.6 and r.scenario.seed == 2


def test_set_key_names_bad_keys() -> None:
    tree: dict = {"workload": [{"load": 0.1}]}
    set_key(tree, "workload[0].load", 0.5)
    set_key(tree, "run.stop_ms", 3)
    assert tree == {"workload": [{"load": 0.5}], "run": {"stop_ms": 3}}
    with pytest.raises(slacknet.SpecError) as ei:
        set_key(tree, "workload[3].load", 1)
    assert ei.value.key == "workload[3].load"


def test_a_bad_axis_value_is_a_spec_error_naming_the_key(sweep_file: Path) -> None:
    sweep_file.write_text(SWEEP.replace("values = [0.2, 0.6]", "values = [0.2, 1.6]"))
    with pytest.raises(slacknet.SpecError) as ei:
        expand(load_sweep(sweep_file))
    assert ei.value.key == "workload[0].load"


def test_run_sweep_tabulates_every_run_deterministically(sweep_file: Path, tmp_path: Path) -> None:
    sweep = load_sweep(sweep_file)
    a = run_sweep(sweep, tmp_path / "a", jobs=2)
    b = run_sweep(sweep, tmp_path / "b", jobs=1)
    assert len(a) == 8 and (tmp_path / "a" / "sweep.csv").is_file()
    assert set(a["admission"]) == {"DT", "LQD"}
    metrics = [c for c in a.columns if c not in ("wall_s",)]
    assert a[metrics].equals(b[metrics])
    assert (a["incast_p95"] >= 1).all()
    assert ((a["leaf_occ_p9999_pct"] >= 0) & (a["leaf_occ_p9999_pct"] <= 100)).all()
    assert slacknet.Results.load(tmp_path / "a" / "LQD__load=0.6__seed=2").num_flows > 0
    # METRIC_COLUMNS is what reproduction descriptions are validated against.
    assert list(a.columns) == ["variant", "admission", "load", "seed", *METRIC_COLUMNS]


def test_cli_sweep_prints_a_table(sweep_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", str(sweep_file), "--out", str(tmp_path / "o"), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "LQD" in out and "incast_p95" in out


def test_cli_sweep_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", str(tmp_path / "nope.toml")]) == 2
    assert "no such sweep file" in capsys.readouterr().err


@pytest.mark.parametrize("path", __import__("tests.conftest", fromlist=["SWEEP_FILES"]).SWEEP_FILES, ids=lambda p: p.name)
def test_committed_sweeps_expand_into_valid_scenarios(path: Path) -> None:
    runs = expand(load_sweep(path))
    assert runs and all(r.scenario.topology is not None for r in runs)


# -- every run its own folder ----------------------------------------------------------------

#: Sweeps two of whose runs would share a folder: (the sweep file, key named, words in the message).
COLLISIONS = {
    "seed_twice": (SWEEP.replace("seeds = [1, 2]", "seeds = [1, 2, 1]"), "seeds[2]", "listed twice"),
    "label_twice": (SWEEP.replace('"LQD"]', '"DT"]'), "axis[0].labels[1]", "same run folder"),
    "labels_same_once_sanitised": (SWEEP.replace('["DT", "LQD"]', '["a b", "a/b"]'), "axis[0].labels[1]", "'a_b'"),
    "labels_differ_in_case": (SWEEP.replace('["DT", "LQD"]', '["lqd", "LQD"]'), "axis[0].labels[1]", "ignore case"),
    "value_twice": (SWEEP.replace("[0.2, 0.6]", "[0.2, 0.2]"), "axis[1].values[1]", "'load=0.2'"),
    "same_column": (SWEEP + '[[axis]]\nkey = "workload[1].duration_ms"\nvalues = [1]\n'
                    '[[axis]]\nkey = "workload[0].duration_ms"\nvalues = [1]\n', "axis[3].key", "axis[2]'s"),
    "column_named_seed": (SWEEP + 'name = "seed"\n', "axis[1].key", "sweep table's own"),
}


@pytest.mark.parametrize("case", list(COLLISIONS))
def test_runs_that_would_share_a_folder_are_refused(case: str, sweep_file: Path, tmp_path: Path) -> None:
    text, key, words = COLLISIONS[case]
    sweep_file.write_text(text)
    with pytest.raises(slacknet.SpecError) as ei:
        run_sweep(load_sweep(sweep_file), tmp_path / "out")
    assert ei.value.key == key and words in str(ei.value), str(ei.value)
    assert not (tmp_path / "out").exists()


def test_an_axis_name_sets_its_column(sweep_file: Path) -> None:
    sweep_file.write_text(SWEEP + '[[axis]]\nkey = "workload[1].load"\nvalues = [0.1]\nname = "incast_load"\n'
                          .replace("workload[1].load", "workload[1].duration_ms"))
    runs = expand(load_sweep(sweep_file))
    assert runs[0].variant == "DT__load=0.2__incast_load=0.1__seed=1"
    assert runs[0].columns == {"admission": "DT", "load": 0.2, "incast_load": 0.1}


def test_two_sweeps_started_in_the_same_second_get_their_own_folders(
    sweep_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep_file.write_text(SWEEP.replace("seeds = [1, 2]", "seeds = [1]").replace("values = [0.2, 0.6]", "values = [0.2]"))
    monkeypatch.chdir(tmp_path)
    frozen = datetime.datetime(2025, 1, 1, 12, 0, 0)
    monkeypatch.setattr("slacknet.cli._dt.datetime", type("Frozen", (), {"now": staticmethod(lambda: frozen)}))
    for _ in range(2):
        assert main(["sweep", str(sweep_file), "--jobs", "1"]) == 0
    folders = sorted(p.name for p in (tmp_path / "results" / "tiny_sweep").iterdir())
    assert folders == ["20250101-120000", "20250101-120000-2"]
