"""slacknet.results: save/load round trip and the results folder contract."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import slacknet
from slacknet.results import MANIFEST, RESULT_FILES, SERIES_FILES, scenario_sha256, verify_results

from .conftest import SERIES_TOML

QUEUE_SERIES_DTYPES = {
    "time_ps": "uint64",
    "link": "uint32",
    "node": "uint32",
    "switch": "int32",
    "queue": "uint8",
    "bytes": "uint64",
}
TRANSFER_SERIES_DTYPES = {
    "time_ps": "uint64",
    "flow": "uint32",
    "cwnd_bytes": "uint64",
    "rate_bps": "float64",
    "is_paced": "bool",
    "srtt_ps": "uint64",
    "sent_bytes": "uint64",
    "delivered_bytes": "uint64",
    "alpha": "float64",
    "tlr": "float64",
    "loss": "float64",
    "class": "float64",
}


def test_save_load_round_trip(tiny_results: slacknet.Results, tmp_path: Path) -> None:
    d = tiny_results.save(tmp_path / "run")
    for f in RESULT_FILES:
        assert (d / f).is_file(), f
    back = slacknet.Results.load(d)
    for t in ("records", "switches", "queues", "occupancy"):
        pd.testing.assert_frame_equal(getattr(back, t), getattr(tiny_results, t), check_dtype=True)
    assert back.scenario == tiny_results.scenario
    assert back.summary == json.loads(json.dumps(tiny_results.summary))


def test_summary_json_records_provenance(tiny_results: slacknet.Results, tmp_path: Path) -> None:
    d = tiny_results.save(tmp_path)
    s = json.loads((d / "summary.json").read_text())
    assert s["seed"] == 7
    assert s["slacknet_version"] == slacknet.__version__
    assert "git_hash" in s
    assert s["wall_time_s"] > 0 and s["events_per_s"] > 0
    sc = json.loads((d / "scenario.json").read_text())
    assert sc["name"] == "tiny" and sc["seed"] == 7
    # scenario.json is a valid, resolved scenario that runs again to the same records.
    again = slacknet.run(slacknet.Scenario.from_json(d / "scenario.json"))
    pd.testing.assert_frame_equal(again.records, tiny_results.records)


def test_load_rejects_non_results_folders(tmp_path: Path) -> None:
    with pytest.raises(slacknet.ResultsError, match="no such results folder"):
        slacknet.Results.load(tmp_path / "missing")
    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(slacknet.ResultsError, match="not a slacknet results folder .no manifest.json."):
        slacknet.Results.load(tmp_path)


def test_repr(tiny_results: slacknet.Results) -> None:
    assert "tiny" in repr(tiny_results)


def _dtypes(frame: pd.DataFrame) -> dict[str, str]:
    return {c: str(t) for c, t in frame.dtypes.items()}


def test_time_series_have_the_documented_columns(series_results: slacknet.Results) -> None:
    q, t = series_results.queue_series, series_results.transfer_series
    assert _dtypes(q) == QUEUE_SERIES_DTYPES
    assert _dtypes(t) == TRANSFER_SERIES_DTYPES
    assert len(q) > 0 and len(t) > 0
    assert (q["bytes"] > 0).all()  # sparse: only non-empty queues
    assert (q["switch"] == -1).any() and (q["switch"] == 0).any()  # NICs and the switch
    assert set(t["flow"]) == set(range(len(series_results.records)))
    assert t["alpha"].between(0, 1).all() and (t["cwnd_bytes"] > 0).all()
    # None after its completion.
    r = series_results.records
    end = (r["start_ps"] + r["fct_ps"]).to_numpy()[t["flow"].to_numpy()]
    assert (t["time_ps"].to_numpy() <= end).all()
    assert series_results.has_timeseries and not series_results.summary["timeseries_truncated"]


def test_time_series_are_empty_with_their_columns_when_off(tiny_results: slacknet.Results, tmp_path: Path) -> None:
    assert not tiny_results.has_timeseries
    for frame, dtypes in ((tiny_results.queue_series, QUEUE_SERIES_DTYPES), (tiny_results.transfer_series, TRANSFER_SERIES_DTYPES)):
        assert frame.empty and _dtypes(frame) == dtypes
    d = tiny_results.save(tmp_path / "run")
    for f in SERIES_FILES:
        assert not (d / f).exists(), f
    back = slacknet.Results.load(d)
    assert _dtypes(back.queue_series) == QUEUE_SERIES_DTYPES and back.queue_series.empty
    assert _dtypes(back.transfer_series) == TRANSFER_SERIES_DTYPES and back.transfer_series.empty


def test_time_series_save_load_round_trip(series_results: slacknet.Results, tmp_path: Path) -> None:
    d = series_results.save(tmp_path / "run")
    for f in RESULT_FILES + SERIES_FILES:
        assert (d / f).is_file(), f
    back = slacknet.Results.load(d)
    for t in ("queue_series", "transfer_series", "records"):
        pd.testing.assert_frame_equal(getattr(back, t), getattr(series_results, t), check_dtype=True)
    # They are in the manifest: a folder that lost them is incomplete.
    (d / "queue_series.parquet").unlink()
    with pytest.raises(slacknet.ResultsError, match="queue_series.parquet is missing"):
        slacknet.Results.load(d)


def test_time_series_keys_are_validated_by_rust() -> None:
    with pytest.raises(slacknet.SpecError) as ei:
        slacknet.Scenario.from_toml_text(SERIES_TOML.replace("interval_us = 5.0", "interval_us = 0"))
    assert ei.value.key == "run.timeseries.interval_us" and ei.value.value == "0"
    with pytest.raises(slacknet.SpecError) as ei:
        slacknet.Scenario.from_toml_text(SERIES_TOML + "switches = [3]\n")
    assert ei.value.key == "run.timeseries.switches[0]" and "no such switch" in ei.value.message


# -- atomic folders and the manifest ---------------------------------------------------------


def _scratch(parent: Path) -> list[str]:
    """The scratch folders of saves (temporary or set aside) under ``parent``."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_manifest_lists_every_file_with_its_size_and_hash(tiny_results: slacknet.Results, tmp_path: Path) -> None:
    d = tiny_results.save(tmp_path / "run")
    m = json.loads((d / MANIFEST).read_text())
    assert m["format"] == "slacknet-results" and m["format_version"] == 1
    assert m["slacknet_version"] == slacknet.__version__ and m["seed"] == 7
    assert m["scenario_sha256"] == scenario_sha256((d / "scenario.json").read_text())
    assert sorted(m["files"]) == sorted(RESULT_FILES)
    for name, entry in m["files"].items():
        data = (d / name).read_bytes()
        assert entry == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert verify_results(d).seed == 7
    assert _scratch(tmp_path) == []


def test_manifest_and_summary_name_the_engine_that_ran(tiny_results: slacknet.Results, tmp_path: Path) -> None:
    engine = slacknet._native.engine_sha256()
    assert re.fullmatch(r"[0-9a-f]{64}", engine)
    d = tiny_results.save(tmp_path / "run")
    assert json.loads((d / MANIFEST).read_text())["engine_sha256"] == engine
    assert verify_results(d).engine_sha256 == engine and slacknet.Results.load(d).summary["engine_sha256"] == engine
    # The manifest records the engine that ran (the summary's, made where the run ran), not the
    # one that saves; results without one (a summary from before it was recorded) record none.
    summary = dict(tiny_results.summary)
    del summary["engine_sha256"]
    older = copy.copy(tiny_results)
    older.summary = summary
    older.save(tmp_path / "older")
    assert json.loads((tmp_path / "older" / MANIFEST).read_text())["engine_sha256"] is None
    assert verify_results(tmp_path / "older").engine_sha256 is None
    # A folder written before the key existed reads as such.
    m = json.loads((d / MANIFEST).read_text())
    del m["engine_sha256"]
    (d / MANIFEST).write_text(json.dumps(m))
    assert verify_results(d).engine_sha256 is None and slacknet.Results.load(d).num_flows > 0
    # A value that is not a digest is a damaged manifest or summary.
    (d / MANIFEST).write_text(json.dumps({**m, "engine_sha256": "abc"}))
    with pytest.raises(slacknet.ResultsError, match=r"is damaged \(ValueError: engine_sha256 = 'abc' is not a SHA-256"):
        verify_results(d)
    summary["engine_sha256"] = 7
    with pytest.raises(slacknet.ResultsError, match="engine_sha256 = 7 is not a SHA-256 in hex"):
        older.save(tmp_path / "bad")


def test_save_replaces_an_earlier_run_without_mixing(
    tiny_results: slacknet.Results, series_results: slacknet.Results, tmp_path: Path
) -> None:
    d = tmp_path / "run"
    series_results.save(d)
    (d / "slowdown_cdf.png").write_bytes(b"a plot")
    tiny_results.save(d)
    # The earlier run's time series (and plots) went with it: one run per folder.
    assert sorted(p.name for p in d.iterdir()) == sorted(RESULT_FILES + (MANIFEST,))
    assert slacknet.Results.load(d).summary["scenario"] == "tiny"
    assert _scratch(tmp_path) == []


def _interrupt_call(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, n: int) -> None:
    """Make call ``n`` (from 0) of ``owner.name`` raise KeyboardInterrupt instead."""
    real = getattr(owner, name)
    calls = iter(range(1000))

    def patched(*args: object, **kwargs: object) -> object:
        if next(calls) == n:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, patched)


@pytest.mark.parametrize("fail_at", ["writing", "renaming in"])
def test_an_interrupted_save_leaves_the_earlier_results_and_no_folder(
    fail_at: str, tiny_results: slacknet.Results, series_results: slacknet.Results, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    series_results.save(old)
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    for target in (old, new):
        with monkeypatch.context() as m:
            if fail_at == "writing":  # the third table
                _interrupt_call(m, pd.DataFrame, "to_parquet", 2)
            else:  # the new folder's rename into place (after the old one's aside, if any)
                _interrupt_call(m, os, "rename", 1 if target.exists() else 0)
            with pytest.raises(KeyboardInterrupt):
                tiny_results.save(target)
    # The earlier results are whole and still load; the new folder does not exist; no scratch.
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before
    assert slacknet.Results.load(old).summary["scenario"] == "series"
    assert not new.exists()
    assert _scratch(tmp_path) == []


CRASH_BETWEEN_RENAMES = """
import os, sys
import slacknet
res = slacknet.Results.load(sys.argv[1])
real = os.rename
calls = []
def rename(a, b):
    real(a, b)
    calls.append(b)
    if len(calls) == 1:  # the old folder is aside, the new one not yet in: die here
        os._exit(9)
os.rename = rename
res.save(sys.argv[2])
"""


def test_a_crash_between_the_renames_leaves_no_folder_and_the_next_save_cleans_up(
    tiny_results: slacknet.Results, tmp_path: Path
) -> None:
    src, target = tiny_results.save(tmp_path / "src"), tmp_path / "out" / "run"
    tiny_results.save(target)
    proc = subprocess.run([sys.executable, "-c", CRASH_BETWEEN_RENAMES, str(src), str(target)], timeout=120)
    assert proc.returncode == 9
    # Visibly absent, not half-written: the old and the new folder are hidden scratch.
    assert not target.exists()
    left = _scratch(target.parent)
    assert [n.split("-")[0] for n in left] == [".run.old", ".run.tmp"]
    with pytest.raises(slacknet.ResultsError, match="no such results folder"):
        slacknet.Results.load(target)
    for name in left:  # complete or not, scratch is not results
        with pytest.raises(slacknet.ResultsError, match="temporary folder of an interrupted save"):
            slacknet.Results.load(target.parent / name)
    tiny_results.save(target)
    assert _scratch(target.parent) == [] and slacknet.Results.load(target).num_flows > 0


def test_save_refuses_a_folder_that_is_not_results(tiny_results: slacknet.Results, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("mine")
    (home / "summary.json").write_text("{}")
    with pytest.raises(slacknet.ResultsError, match="refusing to replace .*'notes.txt'"):
        tiny_results.save(home)
    assert sorted(p.name for p in home.iterdir()) == ["notes.txt", "summary.json"]
    assert _scratch(tmp_path) == []
    # A folder of an older slacknet (results files without a manifest) or an empty one is replaced.
    for name in ("older", "empty"):
        (tmp_path / name).mkdir()
    for f in ("scenario.json", "records.parquet", "summary.json"):  # what every older folder held
        (tmp_path / "older" / f).write_text("{}")
    for name in ("older", "empty"):
        assert slacknet.Results.load(tiny_results.save(tmp_path / name)).num_flows > 0


def _foreign_table(d: Path) -> None:
    """A consistent folder with a parquet file that is not a slacknet table."""
    pd.DataFrame({"x": [1, 2]}).to_parquet(d / "links.parquet")
    m = json.loads((d / MANIFEST).read_text())
    data = (d / "links.parquet").read_bytes()
    m["files"]["links.parquet"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (d / MANIFEST).write_text(json.dumps(m))


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))


#: Damage done to a results folder, and what the one-line refusal must say.
DAMAGE = {
    "truncated": (lambda d: (d / "records.parquet").write_bytes((d / "records.parquet").read_bytes()[:100]),
                  "records.parquet has 100 bytes, manifest.json says"),
    "changed": (lambda d: _flip_a_byte(d / "summary.json"), "summary.json does not match its SHA-256"),
    "missing": (lambda d: (d / "apps.parquet").unlink(), "apps.parquet is missing"),
    "added": (lambda d: (d / "extra.parquet").write_bytes(b"x"), "extra.parquet is not in manifest.json"),
    "older_slacknet": (lambda d: (d / MANIFEST).unlink(), "older than results manifests .* re-run"),
    "manifest_garbage": (lambda d: (d / MANIFEST).write_text("{not json"), "manifest.json cannot be read"),
    "manifest_foreign": (lambda d: (d / MANIFEST).write_text('{"files": {}}'), "not a slacknet results manifest"),
    "newer_slacknet": (lambda d: (d / MANIFEST).write_text(
        (d / MANIFEST).read_text().replace('"format_version": 1', '"format_version": 2')), "upgrade slacknet"),
    "foreign_table": (_foreign_table, "links.parquet cannot be read as slacknet wrote it .no column 'link'."),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_load_refuses_a_damaged_folder_with_one_line(damage: str, tiny_results: slacknet.Results, tmp_path: Path) -> None:
    d = tiny_results.save(tmp_path / "run")
    do, message = DAMAGE[damage]
    do(d)
    with pytest.raises(slacknet.ResultsError, match=message) as ei:
        slacknet.Results.load(d)
    assert "\n" not in str(ei.value)


def test_cli_summary_says_how_many_flows_finished_and_why_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from slacknet.cli import main

    # A run stopped before any flow finished: the tables are all "-", and the summary
    # says why, as `slacknet run` does.
    text = SERIES_TOML.split("[run.timeseries]")[0] + "\n[run]\nstop_ms = 0.0001\nsample_interval_us = 0\n"
    r = slacknet.run(slacknet.Scenario.from_toml_text(text))
    d = r.save(tmp_path / "run")
    assert main(["summary", str(d)]) == 0
    out = capsys.readouterr().out
    assert "0/2 flows finished (stopped early at run.stop_ms, 2 unfinished)" in out  # the third starts later
    leaf = next(line for line in out.splitlines() if "leaf" in line)
    assert [c.strip() for c in leaf.split("│")][5] == "-"  # occ p99: no occupancy sample


def test_a_results_built_without_apps_has_the_apps_columns(tiny_results: slacknet.Results) -> None:
    # Left out, apps was a table without columns, where groups and the series had theirs.
    r = slacknet.Results(records=tiny_results.records, switches=tiny_results.switches, queues=tiny_results.queues,
                         occupancy=tiny_results.occupancy, links=tiny_results.links, summary=tiny_results.summary,
                         scenario=tiny_results.scenario)
    assert r.apps.empty and list(r.apps.columns) == list(tiny_results.apps.columns)
