"""slacknet.results: save/load round trip and the results folder contract."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import slacknet
from slacknet.results import RESULT_FILES, SERIES_FILES

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
    with pytest.raises(slacknet.ResultsError, match="records.parquet"):
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
    # A folder without them (an older slacknet, or files removed) still loads.
    for f in SERIES_FILES:
        (d / f).unlink()
    back = slacknet.Results.load(d)
    assert back.queue_series.empty and back.transfer_series.empty
    assert _dtypes(back.transfer_series) == TRANSFER_SERIES_DTYPES


def test_time_series_keys_are_validated_by_rust() -> None:
    with pytest.raises(slacknet.SpecError) as ei:
        slacknet.Scenario.from_toml_text(SERIES_TOML.replace("interval_us = 5.0", "interval_us = 0"))
    assert ei.value.key == "run.timeseries.interval_us" and ei.value.value == "0"
    with pytest.raises(slacknet.SpecError) as ei:
        slacknet.Scenario.from_toml_text(SERIES_TOML + "switches = [3]\n")
    assert ei.value.key == "run.timeseries.switches[0]" and "no such switch" in ei.value.message
