"""slacknet.results: save/load round trip and the results folder contract."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import slacknet
from slacknet.results import RESULT_FILES


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
    with pytest.raises(slacknet.ResultsError, match="records.parquet"):
        slacknet.Results.load(tmp_path)


def test_repr(tiny_results: slacknet.Results) -> None:
    assert "tiny" in repr(tiny_results)
