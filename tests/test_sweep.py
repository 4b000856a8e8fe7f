"""Sweeps: expansion, key setting, parallel runs and their metrics table."""

from __future__ import annotations

import datetime
import json
import math
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import slacknet
import slacknet.sweep
from slacknet.cli import main
from slacknet.sweep import (
    METRIC_COLUMNS, STATUS_COLUMNS, WORKER_DIED, SweepRun, expand, load_sweep, run_sweep, set_key,
)

from .conftest import REPO, SMALL_NET

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
    assert list(a.columns) == ["variant", "admission", "load", "seed", *METRIC_COLUMNS, *STATUS_COLUMNS]
    assert (a["status"] == "ok").all() and not a["reused"].any() and (a["error"] == "").all()


def test_cli_sweep_prints_a_table(sweep_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", str(sweep_file), "--out", str(tmp_path / "o"), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "LQD" in out and "incast_p95" in out


def test_cli_sweep_table_shows_small_values(sweep_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Three decimals printed an axis value of 0.0005 as 0.000.
    sweep_file.write_text(SWEEP.replace("seeds = [1, 2]", "seeds = [1]").replace("values = [0.2, 0.6]", "values = [0.0005]"))
    assert main(["sweep", str(sweep_file), "--out", str(tmp_path / "o"), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert " 0.0005 " in out, out


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
    # An axis on the seed (or the name) ran every value with the sweep's own seed (found
    # 2026-11-28: four "seeds" that were seed 1 four times); now refused, pointing at `seeds`.
    "axis_on_seed": (SWEEP + '[[axis]]\nkey = "seed"\nname = "s"\nvalues = [3, 4]\n', "axis[2].key", "seeds = ["),
    "axis_on_seed_in_a_list": (SWEEP + '[[axis]]\nkey = ["seed", "workload[0].load"]\nname = "s"\nvalues = [3, 4]\n',
                               "axis[2].key", "seeds = ["),
    "joint_axis_on_seed": (SWEEP + '[[axis]]\nkey = "*"\nname = "s"\nlabels = ["a"]\nvalues = [{ seed = 3 }]\n',
                           "axis[2].key", "seeds = ["),
    "axis_on_name": (SWEEP + '[[axis]]\nkey = "name"\nname = "n"\nvalues = ["a", "b"]\n', "axis[2].key",
                     "names each run"),
}


@pytest.mark.parametrize("case", list(COLLISIONS))
def test_runs_that_would_share_a_folder_are_refused(case: str, sweep_file: Path, tmp_path: Path) -> None:
    text, key, words = COLLISIONS[case]
    sweep_file.write_text(text)
    with pytest.raises(slacknet.SpecError) as ei:
        run_sweep(load_sweep(sweep_file), tmp_path / "out")
    assert ei.value.key == key and words in str(ei.value), str(ei.value)
    assert not (tmp_path / "out").exists()


def test_relative_paths_in_axis_values_are_relative_to_the_sweep_file(
    sweep_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A figure with a model of its own names it next to its sweep (experiments/credence/
    # figC_contended.toml), and must find it from any working directory.
    from slacknet.config import Credence, ForestOracle

    (tmp_path / "model.json").write_text((REPO / "crates/sim/data/credence_forest.json").read_text())
    sweep_file.write_text(SWEEP.replace('{ policy = "lqd" }', '{ policy = "credence", oracle = { kind = "forest", '
                                        'path = "model.json" } }'))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    adm = expand(load_sweep(sweep_file))[-1].scenario.switch.admission
    assert isinstance(adm, Credence) and isinstance(adm.oracle, ForestOracle)
    assert Path(adm.oracle.path) == tmp_path / "model.json"


def test_an_axis_name_sets_its_column(sweep_file: Path) -> None:
    sweep_file.write_text(SWEEP + '[[axis]]\nkey = "workload[1].load"\nvalues = [0.1]\nname = "incast_load"\n'
                          .replace("workload[1].load", "workload[1].duration_ms"))
    runs = expand(load_sweep(sweep_file))
    assert runs[0].variant == "DT__load=0.2__incast_load=0.1__seed=1"
    assert runs[0].columns == {"admission": "DT", "load": 0.2, "incast_load": 0.1}


def test_two_sweeps_started_in_the_same_second_get_their_own_folders(
    sweep_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep_file.write_text(SWEEP.replace("seeds = [1, 2]", "seeds = [1]").replace("values = [0.2, 0.6]", "values = [0.2]"))
    monkeypatch.chdir(tmp_path)
    frozen = datetime.datetime(2025, 1, 1, 12, 0, 0)
    monkeypatch.setattr("slacknet.cli._now", lambda: frozen)
    for _ in range(2):
        assert main(["sweep", str(sweep_file), "--jobs", "1"]) == 0
    folders = sorted(p.name for p in (tmp_path / "results" / "tiny_sweep").iterdir())
    assert folders == ["20250101-120000", "20250101-120000-2"]
    assert "reused" not in capsys.readouterr().out


# -- failures, resumption, interruption ------------------------------------------------------

#: Where the workers note each run they start (set per test; forked workers inherit it).
RUN_LOG: Path | None = None
REAL_RUN_ONE = slacknet.sweep._run_one

forked = pytest.mark.skipif(multiprocessing.get_start_method() != "fork",
                            reason="workers see a monkeypatched worker function only when forked")


def _logged_run_one(scenario_json: str, out: str) -> dict[str, float]:
    """The worker function, noting the run, and failing the runs whose variant says so."""
    variant = Path(out).name
    assert RUN_LOG is not None
    with open(RUN_LOG, "a") as f:
        f.write(variant + "\n")
    if variant.startswith("LQD__load=0.2"):
        raise RuntimeError("boom\nsecond line")
    if variant.startswith("LQD__load=0.6__seed=1"):
        os._exit(3)  # the worker dies, as if killed or out of memory
    return REAL_RUN_ONE(scenario_json, out)


@pytest.fixture()
def run_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "runs.log"
    log.touch()
    monkeypatch.setattr(sys.modules[__name__], "RUN_LOG", log)
    monkeypatch.setattr(slacknet.sweep, "_run_one", _logged_run_one)
    return log


@forked
def test_failing_runs_are_recorded_and_the_others_complete(sweep_file: Path, tmp_path: Path, run_log: Path) -> None:
    out = tmp_path / "out"
    t = run_sweep(load_sweep(sweep_file), out, jobs=2).set_index("variant")
    failed = t[t["status"] == "failed"]
    assert sorted(failed.index) == ["LQD__load=0.2__seed=1", "LQD__load=0.2__seed=2", "LQD__load=0.6__seed=1"]
    assert (failed["error"].iloc[:2] == "RuntimeError: boom").all()
    assert failed.loc["LQD__load=0.6__seed=1", "error"] == WORKER_DIED
    assert failed[list(METRIC_COLUMNS)].isna().all().all()
    ok = t[t["status"] == "ok"]
    assert len(ok) == 5 and (ok["flows"] > 0).all() and (ok["error"] == "").all()
    for v in ok.index:
        assert slacknet.Results.load(out / v).num_flows > 0
    for v in failed.index:
        assert not (out / v).exists()
    assert pd.read_csv(out / "sweep.csv")["status"].tolist() == t["status"].tolist()


@forked
def test_an_interrupted_sweep_keeps_its_finished_runs_and_resumes(sweep_file: Path, tmp_path: Path,
                                                                  run_log: Path) -> None:
    sweep_file.write_text(SWEEP.replace('labels = ["DT", "LQD"]', 'labels = ["DT", "LQD_"]'))  # none fails
    sweep, out = load_sweep(sweep_file), tmp_path / "out"

    def interrupt_after_three(run: SweepRun, row: dict[str, object]) -> None:
        if len(run_log.read_text().split()) >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep, out, jobs=1, on_done=interrupt_after_three)
    table_then = pd.read_csv(out / "sweep.csv")
    # Every run is listed: the 5 not run say so (a table read later never passes for a whole
    # sweep), with NaN metrics.
    assert len(table_then) == 8 and table_then["status"].tolist() == ["ok"] * 3 + ["pending"] * 5
    assert table_then[table_then["status"] == "pending"][list(METRIC_COLUMNS)].isna().all().all()
    kept = table_then[table_then["status"] == "ok"].reset_index(drop=True)
    assert all(slacknet.Results.load(out / v).num_flows > 0 for v in kept["variant"])
    # One finished run is damaged, so it is not results any more: it runs again.
    (out / kept["variant"][0] / "summary.json").write_text("{}")
    done: list[str] = []
    table = run_sweep(sweep, out, jobs=2, on_done=lambda run, row: done.append(run.variant))
    assert len(table) == 8 and (table["status"] == "ok").all()
    assert table["reused"].tolist() == [False, True, True] + [False] * 5
    runs = run_log.read_text().split()
    assert len(runs) == 3 + 6 and sorted(runs[3:]) == sorted([kept["variant"][0], *table["variant"][3:]])
    assert done[:2] == list(kept["variant"][1:])  # the reused are reported first
    # Everything reused the next time: nothing runs; a changed scenario runs again.
    again = run_sweep(sweep, out, jobs=2)
    assert again["reused"].all() and len(run_log.read_text().split()) == 9
    assert again[list(METRIC_COLUMNS)].equals(table[list(METRIC_COLUMNS)])  # read back from the folders
    (tmp_path / "base.toml").write_text(BASE.replace("duration_ms = 2\n[[workload]]", "duration_ms = 1\n[[workload]]"))
    assert not run_sweep(load_sweep(sweep_file), out, jobs=2)["reused"].any()


@forked
def test_a_run_made_by_another_build_of_the_engine_runs_again(sweep_file: Path, tmp_path: Path,
                                                             run_log: Path) -> None:
    # The version alone did not guard reuse: a change to a default that leaves the scenario's
    # text as it was (Credence's ABM first-RTT bytes, 0.2.0) would have been mixed with runs
    # from before it. A folder is reused only if the engine that ran it was built from the
    # same sources.
    sweep_file.write_text(SWEEP.replace('labels = ["DT", "LQD"]', 'labels = ["DT", "LQD_"]').replace(
        "seeds = [1, 2]", "seeds = [1]"))
    sweep, out = load_sweep(sweep_file), tmp_path / "out"
    first = run_sweep(sweep, out, jobs=1)
    assert (first["status"] == "ok").all() and len(first) == 4
    for v in first["variant"]:
        assert slacknet.results.read_manifest(out / v).engine_sha256 == slacknet._native.engine_sha256()
    other, older = first["variant"][0], first["variant"][1]
    m = json.loads((out / other / "manifest.json").read_text())
    (out / other / "manifest.json").write_text(json.dumps({**m, "engine_sha256": "0" * 64}))
    m = json.loads((out / older / "manifest.json").read_text())
    del m["engine_sha256"]  # a folder written before the engine was recorded
    (out / older / "manifest.json").write_text(json.dumps(m))
    assert slacknet.Results.load(out / older).num_flows > 0  # still results, only not reused
    again = run_sweep(sweep, out, jobs=1)
    assert again["reused"].tolist() == [False, False, True, True]
    assert run_log.read_text().split()[4:] == [other, older]
    same = [c for c in METRIC_COLUMNS if c != "wall_s"]
    assert again[same].equals(first[same])  # the same engine, the same runs


@forked
def test_cli_sweep_reports_failures_and_exits_1(sweep_file: Path, tmp_path: Path, run_log: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert main(["sweep", str(sweep_file), "--out", str(out), "--jobs", "2"]) == 1
    captured = capsys.readouterr()
    assert "FAILED LQD__load=0.2__seed=1: RuntimeError: boom" in captured.err
    assert f"FAILED LQD__load=0.6__seed=1: {WORKER_DIED}" in captured.err
    last = captured.err.splitlines()[-1]
    assert last.startswith("error: 3 of 8 runs failed") and f"--out {out}" in last
    assert "Traceback" not in captured.err and "failed" in captured.out
    # Run again: the five finished runs are reused, the three failed ones run (and fail) again.
    assert main(["sweep", str(sweep_file), "--out", str(out), "--jobs", "2"]) == 1
    captured = capsys.readouterr()
    assert f"reused 5 of 8 runs finished before in {out}" in captured.out
    assert captured.err.count("  reused ") == 5 and len(run_log.read_text().split()) >= 8 + 3


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state, ppid, ...), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def _workers(pid: int) -> set[int]:
    """The processes ``pid`` forked that run its own command line (its pool's workers)."""
    me = Path(f"/proc/{pid}/cmdline").read_bytes()
    kids = set()
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and (_stat(int(p.name)) or ["", "0"])[1] == str(pid):
            try:
                if (p / "cmdline").read_bytes() == me:
                    kids.add(int(p.name))
            except OSError:
                continue
    return kids


def _running(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to find the worker processes")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_killing_a_sweep_stops_its_workers(sig: signal.Signals, tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(BASE.replace("duration_ms = 2", "duration_ms = 20000"))  # minutes each
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('name = "long"\nbase = "base.toml"\n[[axis]]\nkey = "workload[0].load"\nvalues = [0.3, 0.4]\n')
    # The sweep gets default signal handling even if this test run inherited SIGINT ignored
    # (started as a background job of a shell: `make test &`, nohup), as from a terminal.
    proc = subprocess.Popen([sys.executable, "-m", "slacknet.cli", "sweep", str(sweep), "--out", str(tmp_path / "o"),
                             "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            workers = _workers(proc.pid)
        assert len(workers) == 2, proc.stderr.read() if proc.poll() is not None else "no workers started"
        time.sleep(1)  # into their simulations
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == (143 if sig == signal.SIGTERM else 130), err
        assert "stopped: the finished runs are kept" in err and "Traceback" not in err, err
        deadline = time.monotonic() + 10
        while any(_running(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _running(w)], "workers outlived the sweep"
    finally:
        for pid in [proc.pid, *workers]:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def test_run_metrics_mean_slowdowns_by_size_class(tiny_results) -> None:  # type: ignore[no-untyped-def]
    from slacknet.sweep import run_metrics

    m = run_metrics(tiny_results)
    r = tiny_results.records
    done = r[r["finished"].astype(bool)]
    short = done[(done["size_bytes"] < 100_000) & ~done["incast"].astype(bool)]
    long = done[(done["size_bytes"] >= 1_000_000) & ~done["incast"].astype(bool)]
    assert len(short) > 10 and len(long) > 0
    assert m["short_mean"] == pytest.approx(short["slowdown"].mean())
    assert m["long_mean"] == pytest.approx(long["slowdown"].mean())
    assert m["all_mean"] == pytest.approx(done["slowdown"].mean())
    assert m["incast_p95"] == pytest.approx(done[done["incast"].astype(bool)]["slowdown"].quantile(0.95))


# -- the output folder, the sweep file's values, its size ------------------------------------


def test_cli_sweep_out_must_be_new_empty_or_an_earlier_sweeps(
    sweep_file: Path, tmp_path: Path, tiny_results: slacknet.Results, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--out /` wrote sweep.csv and run folders into /; `--out <a run's folder>` broke that run.
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work")
    run = tiny_results.save(tmp_path / "run")
    afile = tmp_path / "afile"
    afile.write_text("x")
    table = tmp_path / "not_ours"
    table.mkdir()
    (table / "sweep.csv").write_text("a,b\n1,2\n")
    for out, words in ((home, "it holds 'thesis.tex' and no sweep.csv"), (run, "results folder"),
                       (afile, "it is a file, not a folder"), (table, "not a sweep's table")):
        before = sorted(p.name for p in out.iterdir()) if out.is_dir() else None
        assert main(["sweep", str(sweep_file), "--out", str(out), "--jobs", "1"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --out = {out}: ") and words in err and err.count("\n") == 1, err
        assert (sorted(p.name for p in out.iterdir()) if out.is_dir() else None) == before
    assert slacknet.Results.load(run).num_flows > 0
    with pytest.raises(slacknet.ResultsError, match="no sweep.csv"):  # the library refuses it too
        run_sweep(load_sweep(sweep_file), home)
    # A new folder, an empty one and an earlier sweep's (which resumes) are written.
    sweep_file.write_text(SWEEP.replace("seeds = [1, 2]", "seeds = [1]").replace("values = [0.2, 0.6]", "values = [0.2]"))
    empty = tmp_path / "empty"
    empty.mkdir()
    for out in (tmp_path / "new", empty, empty):
        assert main(["sweep", str(sweep_file), "--out", str(out), "--jobs", "1"]) == 0
    assert "reused 2 of 2 runs" in capsys.readouterr().out


def test_a_sweep_does_not_resume_another_sweeps_folder(
    sweep_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Resuming rewrites sweep.csv with the resuming sweep's runs alone: into another sweep's
    # folder it replaced that sweep's table (its run folders stayed, its table was gone).
    sweep_file.write_text(SWEEP.replace("seeds = [1, 2]", "seeds = [1]").replace("values = [0.2, 0.6]", "values = [0.2]"))
    out = tmp_path / "study"
    assert main(["sweep", str(sweep_file), "--out", str(out), "--jobs", "1"]) == 0
    assert json.loads((out / "sweep.json").read_text()) == {"name": load_sweep(sweep_file).name}
    table = (out / "sweep.csv").read_text()
    other = tmp_path / "other.toml"
    other.write_text(sweep_file.read_text().replace('name = "tiny_sweep"', 'name = "other"'))  # same runs, another name
    capsys.readouterr()
    assert main(["sweep", str(other), "--out", str(out), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --out = {out}: it holds the sweep ") and "'other'" in err, err
    assert err.count("\n") == 1 and (out / "sweep.csv").read_text() == table
    with pytest.raises(slacknet.ResultsError, match="it holds the sweep"):  # the library refuses it too
        run_sweep(load_sweep(other), out)
    # Its own name resumes it; a folder from before the name was kept resumes as before.
    assert main(["sweep", str(sweep_file), "--out", str(out), "--jobs", "1"]) == 0
    (out / "sweep.json").unlink()
    assert main(["sweep", str(other), "--out", str(out), "--jobs", "1"]) == 0
    assert "reused 2 of 2 runs" in capsys.readouterr().out
    assert json.loads((out / "sweep.json").read_text()) == {"name": "other"}
    # A sweep.json nested too deeply for json is no name (it raised RecursionError).
    (out / "sweep.json").write_text("[" * 32_000 + "]" * 32_000)  # under its 64 kB bound
    assert main(["sweep", str(other), "--out", str(out), "--jobs", "1"]) == 0


#: Sweep files that raised a Python exception or were silently misread: (text, words of the
#: one-line message, which names the key).
BAD_SWEEPS = {
    "seeds_string": (SWEEP.replace("seeds = [1, 2]", 'seeds = "1,2"'), 'seeds = "1,2": must be a non-empty list'),
    "seeds_int": (SWEEP.replace("seeds = [1, 2]", "seeds = 5"), "seeds = 5: must be a non-empty list"),
    "seeds_table": (SWEEP.replace("seeds = [1, 2]", "seeds = [{a=1}]"), 'seeds[0] = {"a": 1}: must be a whole number'),
    "seeds_float": (SWEEP.replace("seeds = [1, 2]", "seeds = [1.9, 2.2]"), "seeds[0] = 1.9: must be a whole number"),
    "seeds_bool": (SWEEP.replace("seeds = [1, 2]", "seeds = [true]"), "seeds[0] = true: must be a whole number"),
    "seeds_negative": (SWEEP.replace("seeds = [1, 2]", "seeds = [1, -2]"), "seeds[1] = -2: must be a whole number"),
    "seeds_empty": (SWEEP.replace("seeds = [1, 2]", "seeds = []"), "seeds = []: must be a non-empty list"),
    "axis_int": ('name = "s"\nbase = "base.toml"\naxis = 5\n', "axis = 5: must be [[axis]] tables"),
    "axis_item_int": ('name = "s"\nbase = "base.toml"\naxis = [5]\n', "axis[0] = 5: must be a table"),
    "key_empty_list": (SWEEP.replace('key = "workload[0].load"', "key = []"), "axis[1].key = []: must be a scenario key"),
    "key_table": (SWEEP.replace('key = "workload[0].load"', "key = {a = 1}"), 'axis[1].key = {"a": 1}: must be'),
    "misspelt_key": (SWEEP.replace("labels =", "lable ="), "axis[0].lable: unknown axis key (expected key, values, "
                     "labels, name); did you mean labels?"),
    "values_missing": (SWEEP.replace("values = [0.2, 0.6]", ""), "axis[1].values: missing"),
    "labels_int": (SWEEP.replace('labels = ["DT", "LQD"]', "labels = 5"), "axis[0].labels = 5: must be a list of names"),
    "name_table": (SWEEP.replace('name = "tiny_sweep"', "name = {a = 1}"), 'name = {"a": 1}: must be a non-empty string'),
    "base_list": (SWEEP.replace('base = "base.toml"', 'base = ["base.toml"]'), 'base = ["base.toml"]: must be the path'),
}


@pytest.mark.parametrize("case", list(BAD_SWEEPS))
def test_bad_sweep_files_exit_2_with_one_line(case: str, sweep_file: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    text, words = BAD_SWEEPS[case]
    sweep_file.write_text(text)
    assert main(["sweep", str(sweep_file), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.splitlines()[0].startswith(f"error: {words}"), err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("jobs", ["0", "-1"])
def test_jobs_below_one_are_refused(jobs: str, sweep_file: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", str(sweep_file), "--out", str(tmp_path / "out"), "--jobs", jobs]) == 2
    assert capsys.readouterr().err == f"error: --jobs = {jobs}: must be at least 1; leave --jobs out for one run per core\n"
    with pytest.raises(ValueError, match="jobs"):
        run_sweep(load_sweep(sweep_file), tmp_path / "out", jobs=int(jobs))
    assert not (tmp_path / "out").exists()


def test_a_sweep_says_how_many_runs_and_refuses_too_many_before_listing_them(
    sweep_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Six axes of ten values: a million runs, listed for minutes at 40 MB/s before this check.
    axes = "".join(f'[[axis]]\nkey = "workload[1].duration_ms"\nname = "a{i}"\nvalues = {list(range(1, 11))}\n'
                   for i in range(6))
    sweep_file.write_text(f'name = "huge"\nbase = "base.toml"\n{axes}')
    monkeypatch.setattr(slacknet.sweep, "set_key", lambda *a: pytest.fail("a run was built"))
    assert main(["sweep", str(sweep_file), "--out", str(tmp_path / "out")]) == 2
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("error: axis: the sweep has 1000000 runs (10 x 10 x 10 x 10 x 10 x 10 values x 1 seed), "
                            f"more than {slacknet.sweep.MAX_RUNS}: "), first
    assert not (tmp_path / "out").exists()


def test_a_sweep_prints_its_number_of_runs_first(sweep_file: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", str(sweep_file), "--out", str(tmp_path / "o"), "--jobs", "1"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"sweep tiny_sweep: 8 runs (2 x 2 values x 2 seeds) into {tmp_path / 'o'}"


def test_expand_refuses_too_many_runs_before_building_them(sweep_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    sweep = load_sweep(sweep_file)
    wide = [slacknet.sweep.Axis("workload[1].duration_ms", list(range(1, 1001)), name=f"a{i}") for i in range(2)]
    monkeypatch.setattr(slacknet.sweep, "set_key", lambda *a: pytest.fail("a run was built"))
    with pytest.raises(slacknet.SpecError, match="2000000 runs"):
        expand(dataclasses.replace(sweep, axes=wide))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_or_a_device_is_refused_not_read(tmp_path: Path) -> None:
    # In a process of its own: before the fix the FIFO blocked forever and /dev/zero was read
    # without end.
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    paths = [(str(fifo), "FIFO")] + ([("/dev/zero", "device")] if Path("/dev/zero").exists() else [])
    for path, kind in paths:
        proc = subprocess.run([sys.executable, "-m", "slacknet.cli", "sweep", path], capture_output=True, text=True,
                              timeout=60, cwd=tmp_path)
        assert proc.returncode == 2
        assert proc.stderr == f"error: not a sweep file but a {kind}: {path}; give the sweep file\n"
    assert not (tmp_path / "results").exists()


def test_a_sweep_file_too_large_is_refused(sweep_file: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(slacknet.sweep, "MAX_SWEEP_FILE_BYTES", 100)
    assert main(["sweep", str(sweep_file)]) == 2
    assert "too large" in capsys.readouterr().err


def test_run_metrics_count_zero_units_of_an_application_that_finished_none() -> None:
    # A training job (and NetApprox jobs) stopped before its first unit ended: the counts are
    # 0, a measurement, and only the times NaN; a run without such an entry has NaN counts.
    from slacknet.sweep import run_metrics

    net = SMALL_NET + "[run]\nstop_ms = 0.05\n"
    training = ('[[workload]]\nkind = "training"\npattern = "ps"\nworkers = [1, 2, 3]\nserver = 0\n'
                "model_bytes = 100000\niterations = 2\n")
    jobs = ('[[workload]]\nkind = "approx_jobs"\ntrace = "fbhd"\nscheme = "atp"\nmsr = 0.9\nmessages = 200\n'
            'senders = [1]\nreceiver = 0\ntransport = { kind = "atp" }\n')
    m = run_metrics(slacknet.run(slacknet.Scenario.from_toml_text(net + training + jobs)))
    assert m["iterations"] == 0.0 and math.isnan(m["iter_mean_us"]) and math.isnan(m["train_time_us"])
    assert m["jobs"] == 0.0 and m["jobs_gave_up"] == 0.0 and math.isnan(m["jct_mean_us"])
    plain = net + '[[workload]]\nkind = "flows"\nflows = [{ src = 0, dst = 3, size_bytes = 1000 }]\n'
    m = run_metrics(slacknet.run(slacknet.Scenario.from_toml_text(plain)))
    assert math.isnan(m["iterations"]) and math.isnan(m["jobs"])
