"""`slacknet compare --repeat N` (``compare(..., repeat=N)``): every simulator N times,
alternated, median wall times, every run kept, slacknet's determinism checked. slacknet runs
for real (a handful of flows); ns-3 and htsim are fakes (tests/fake_peers.py) whose wall times
the tests choose."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import slacknet.compare as compare_mod
from slacknet.cli import main
from slacknet.compare import CompareError, Comparison, check_repeat, compare, compare_seeds, render

from .conftest import flow_list_scenario
from .fake_peers import fake_python, runs

FLOWS = """# id src dst start_s size_bytes incast
0 0 20 0.000000 2000 0
1 1 21 0.000010 30000 0
2 2 22 0.000020 500000 0
3 17 4 0.000100 1500000 0
"""


@pytest.fixture(autouse=True)
def _without_htsim(monkeypatch: pytest.MonkeyPatch) -> None:
    """htsim runs only where a test gives it a (fake) checkout."""
    monkeypatch.delenv("HTSIM_DIR", raising=False)


def test_repeat_alternates_the_simulators_and_reports_medians(tmp_path: Path) -> None:
    py, log = fake_python(tmp_path, {"ns-3": [30.0, 10.0, 20.0], "htsim": [3.0, 1.0, 2.5]})
    sc = flow_list_scenario(tmp_path, FLOWS, "repeat")
    cmp = compare(sc, tmp_path / "out", python=str(py), htsim_dir=tmp_path, repeat=3)

    assert runs(log) == ["slacknet", "ns-3", "htsim"] * 3
    assert cmp.repeat == 3
    assert cmp.wall_runs_s["ns-3"] == [30.0, 10.0, 20.0] and cmp.wall_runs_s["htsim"] == [3.0, 1.0, 2.5]
    me = cmp.wall_runs_s["slacknet"]
    assert len(me) == 3 and all(w > 0 for w in me)
    t = cmp.table
    assert t.loc["wall time (s)", "ns-3"] == 20.0 and t.loc["wall time (s)", "htsim"] == 2.5
    assert t.loc["wall time (s)", "slacknet"] == statistics.median(me) == cmp.wall_s["slacknet"]
    assert t.loc["wall time (s)", "ratio"] == pytest.approx(20.0 / statistics.median(me))
    assert t.loc["wall time (s)", "htsim ratio"] == pytest.approx(2.5 / statistics.median(me))
    assert t.loc["events/s", "slacknet"] == pytest.approx(t.loc["events", "slacknet"] / statistics.median(me))
    assert t.loc["events/s", "ns-3"] == pytest.approx(1e6 / 20.0)
    # Peak memory: the largest run (the fake's k-th run reports 20 + k MB).
    assert t.loc["peak memory (MB)", "ns-3"] == 22.0 and cmp.peak_rss_mb["htsim"] == 22.0
    # slacknet's peak less what its interpreter held with every library imported: the peers'
    # whole processes beside it (they have no interpreter), and a ratio between runs alone.
    alone = t.loc["peak memory less the interpreter (MB)"]
    assert 0 < alone["slacknet"] < t.loc["peak memory (MB)", "slacknet"] - 50  # the interpreter is 100+ MB
    assert alone["ns-3"] == 22.0 and alone["htsim"] == 22.0
    assert alone["ratio"] == pytest.approx(22.0 / alone["slacknet"])
    assert cmp.varied == []

    out = tmp_path / "out"
    saved = json.loads((out / "comparison.json").read_text())
    assert saved["repeat"] == 3 and saved["wall_runs_s"] == cmp.wall_runs_s
    assert saved["wall_s"]["ns-3"] == 20.0 and saved["peak_rss_runs_mb"]["ns-3"] == [20.0, 21.0, 22.0]
    # Run 1 where a single run writes; runs 2 and 3 beside it, each whole.
    for d in (out, out / "run2", out / "run3"):
        assert (d / "slacknet" / "records.parquet").exists() and (d / "ns3_fct.txt").exists()
        assert (d / "htsim_fct.txt").exists()

    text = render(cmp).splitlines()
    wall = next(ln for ln in text if ln.startswith("wall time (s)"))
    assert wall.startswith("wall time (s), median of 3") and "20.000" in wall
    each = next(ln for ln in text if ln.startswith("wall time of each run (s):"))
    assert "ns-3 30 10 20" in each and "htsim 3 1 2.5" in each
    joined = " ".join(text)
    assert "median of 3 runs of each simulator, alternated (slacknet, ns-3, htsim," in joined
    assert "identical per-flow records" in joined


def test_repeat_1_is_one_run_each_as_before(tmp_path: Path) -> None:
    py, log = fake_python(tmp_path, {"ns-3": [30.0], "htsim": [3.0]})
    sc = flow_list_scenario(tmp_path, FLOWS, "once")
    cmp = compare(sc, tmp_path / "out", python=str(py))
    assert runs(log) == ["slacknet", "ns-3"]
    assert cmp.repeat == 1 and cmp.wall_s["ns-3"] == 30.0 and cmp.wall_runs_s["ns-3"] == [30.0]
    saved = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert set(saved) == {"scenario", "table", "wall_s", "peak_rss_mb", "only_finished_in", "skipped", "ns3_build",
                          "ns3_recovery", "same_paths"}
    assert saved["same_paths"] is False
    assert not (tmp_path / "out" / "run2").exists()
    text = render(cmp)
    assert "median" not in text and "each run" not in text
    assert any(ln.startswith("wall time (s)    ") for ln in text.splitlines())
    # The rows as before: events/s is one run's events over its wall time, as Results has it.
    res = json.loads((tmp_path / "out" / "slacknet" / "summary.json").read_text())
    assert cmp.table.loc["events/s", "slacknet"] == res["events_per_s"]
    assert cmp.table.loc["wall time (s)", "slacknet"] == res["wall_time_s"]


def test_slacknet_records_that_differ_between_runs_are_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = compare_mod._run_slacknet
    calls: list[int] = []

    def unsteady(*args: Any, **kwargs: Any) -> Any:
        run = real(*args, **kwargs)
        calls.append(1)
        if len(calls) == 2:
            run.records.loc[run.records["id"] == 2, "fct_ps"] += 1
        return run

    monkeypatch.setattr(compare_mod, "_run_slacknet", unsteady)
    py, log = fake_python(tmp_path, {"ns-3": [30.0]})
    sc = flow_list_scenario(tmp_path, FLOWS, "unsteady")
    with pytest.raises(CompareError, match=r"slacknet's run 2 of 3 gave other per-flow records than its run 1 "
                       r"\(flow 2, fct_ps: \d+ against \d+;.*this is a bug"):
        compare(sc, tmp_path / "out", python=str(py), repeat=3)
    assert runs(log) == ["slacknet", "ns-3", "slacknet"]  # stopped at once
    assert not (tmp_path / "out" / "comparison.json").exists()


def test_a_peer_whose_fcts_vary_is_named(tmp_path: Path) -> None:
    py, _ = fake_python(tmp_path, {"ns-3": [30.0]}, vary=("ns-3",))
    cmp = compare(flow_list_scenario(tmp_path, FLOWS, "vary"), tmp_path / "out", python=str(py), repeat=2)
    assert cmp.varied == ["ns-3"]
    assert "ns-3: its per-flow FCTs differed between its runs (the table shows run 1's)" in render(cmp)
    # The table's slowdowns are run 1's: the fake's run 1 adds nothing to its FCTs.
    assert cmp.ns3.set_index("id").loc[0, "fct_ns"] == round(1.5 * (24000 + 2000 * 8 / 10) + 20000)
    assert json.loads((tmp_path / "out" / "comparison.json").read_text())["fct_varied_between_runs"] == ["ns-3"]


def test_check_repeat() -> None:
    assert check_repeat(1) == 1 and check_repeat(5) == 5
    for bad in (0, -1, 1.5, True, "3", None):
        with pytest.raises(CompareError, match="whole number of runs"):
            check_repeat(bad)


def test_compare_refuses_a_bad_repeat_before_running(tmp_path: Path) -> None:
    py, log = fake_python(tmp_path, {"ns-3": [1.0]})
    sc = flow_list_scenario(tmp_path, FLOWS, "bad")
    with pytest.raises(CompareError, match="repeat = 0"):
        compare(sc, tmp_path / "out", python=str(py), repeat=0)
    with pytest.raises(CompareError, match="repeat = 2.5"):
        compare_seeds(sc, tmp_path / "out", [1, 2], python=str(py), repeat=2.5)  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists() and runs(log) == []


def test_seeds_with_repeat_take_each_seeds_median(tmp_path: Path) -> None:
    py, log = fake_python(tmp_path, {"ns-3": [30.0, 10.0, 20.0, 40.0]})
    sc = flow_list_scenario(tmp_path, FLOWS, "seeds")
    messages: list[str] = []
    scmp = compare_seeds(sc, tmp_path / "out", [1, 2], python=str(py), repeat=2, progress=messages.append)
    assert runs(log) == ["slacknet", "ns-3"] * 4
    per_seed = scmp.per_seed.set_index(["seed", "simulator"])
    assert per_seed.loc[(1, "ns-3"), "wall_s"] == 20.0 and per_seed.loc[(2, "ns-3"), "wall_s"] == 30.0
    assert per_seed.loc[(2, "ns-3"), "peak_rss_mb"] == 23.0  # the fake's fourth run: the larger of seed 2's
    assert scmp.means.loc["wall time (s)", "ns-3"] == 25.0
    saved = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert saved["repeat"] == 2 and saved["wall_runs_s"]["2"]["ns-3"] == [20.0, 40.0]
    assert (tmp_path / "out" / "seed2" / "run2" / "ns3_fct.txt").exists()
    assert messages[0].startswith("seed 1: run 1/2: slacknet ") and messages[0].endswith("ns-3 30 s")
    assert messages[2].startswith("seed 1: slacknet") and messages[2].endswith("(medians of 2 runs)")
    assert "per seed, the median of 2 runs of each simulator, alternated" in " ".join(render(scmp).splitlines())


# --------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-2", "x", "1.5", ""])
def test_cli_refuses_a_bad_repeat_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    toml = tmp_path / "s.toml"
    toml.write_text('[topology]\nkind = "leaf_spine"\n')
    assert main(["compare", str(toml), "--repeat", value, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --repeat = {value}: give a whole number of runs per simulator, at least 1 "
                   "(e.g. --repeat 3), or leave it out for one run each"]
    assert not (tmp_path / "o").exists()


def test_cli_passes_repeat_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    seen: dict[str, Any] = {}

    def fake_compare(sc: Any, out: Path, **kwargs: Any) -> Comparison:
        seen.update(kwargs)
        table = pd.DataFrame({"slacknet": [1.0], "ns-3": [50.0], "ratio": [50.0]}, index=["wall time (s)"])
        return Comparison(scenario=sc.name, table=table, slacknet=pd.DataFrame(), ns3=pd.DataFrame(),
                          repeat=kwargs["repeat"], wall_runs_s={"slacknet": [1.0, 1.1], "ns-3": [50.0, 49.0]})

    monkeypatch.setattr(compare_mod, "compare", fake_compare)
    toml = Path(__file__).resolve().parents[1] / "experiments" / "compare" / "s1.toml"
    assert main(["compare", str(toml), "--repeat", "2", "--out", str(tmp_path / "o")]) == 0
    assert seen["repeat"] == 2 and seen["progress"] is not None
    captured = capsys.readouterr()
    assert "each 2 times alternated" in captured.err
    assert "wall time (s), median of 2" in captured.out


def test_the_child_s_memory_lines_give_the_run_s_own_peak() -> None:
    mark = compare_mod._MARK
    mem = compare_mod._child_memory
    # Resident 128 MiB before the run, 150 MiB peak so far (imports), 160 MiB peak during it.
    text = f"noise\n{mark} before 131072 153600\nmore\n{mark} run_peak 163840\n"
    assert mem(text, 140.0) == (150.0, 32.0)  # whole: the larger of exit's report and imports'
    # The reset refused: the whole peak less what was resident before (0 if imports peaked higher).
    assert mem(f"{mark} before 131072 153600\n", 160.0) == (160.0, 32.0)
    assert mem(f"{mark} before 131072 153600\n", 100.0) == (150.0, 22.0)
    for bad in ("", f"{mark} before x y\n", f"{mark} before 1\n", f"{mark} before -1 -1\n"):
        assert mem(bad, 140.0) == (140.0, None)
