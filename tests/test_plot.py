"""slacknet.plot: the standard PNGs are written for in-memory results and results folders."""

from __future__ import annotations

from pathlib import Path

import pytest

import slacknet
from slacknet.plot import busiest_ports, plot_results, size_bins

from .conftest import SERIES_TOML, TINY_TOML

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _check_pngs(paths: list[Path]) -> None:
    assert [p.name for p in paths] == ["slowdown_cdf.png", "slowdown_by_size.png"]
    for p in paths:
        data = p.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5_000


def test_plot_in_memory(tiny_results: slacknet.Results, tmp_path: Path) -> None:
    _check_pngs(plot_results(tiny_results, tmp_path / "plots"))


def test_plot_results_folder(tiny_results: slacknet.Results, tmp_path: Path) -> None:
    d = tiny_results.save(tmp_path / "run")
    _check_pngs(plot_results(d))
    assert (d / "slowdown_cdf.png").is_file()


def test_plot_never_writes_into_another_runs_folder_or_over_a_users_picture(
    tiny_results: slacknet.Results, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `slacknet plot A --out B` drew A's numbers into B's results folder, and a PNG of the
    # user's named slowdown_cdf.png was replaced silently.
    from slacknet.cli import main

    a, b = tiny_results.save(tmp_path / "a"), tiny_results.save(tmp_path / "b")
    assert main(["plot", str(a), "--out", str(b)]) == 2
    assert "it is another run's results folder" in capsys.readouterr().err
    assert not (b / "slowdown_cdf.png").exists()
    mine = tmp_path / "pictures"
    mine.mkdir()
    (mine / "slowdown_cdf.png").write_bytes(PNG_MAGIC + b"mine")
    with pytest.raises(slacknet.ResultsError, match="holds a slowdown_cdf.png that slacknet did not write"):
        plot_results(a, mine)
    assert (mine / "slowdown_cdf.png").read_bytes() == PNG_MAGIC + b"mine"
    # Its own folder, a new one, and the same one again (its own plots) are fine.
    _check_pngs(plot_results(a, a))
    _check_pngs(plot_results(a, tmp_path / "plots"))
    _check_pngs(plot_results(b, tmp_path / "plots"))


def test_plot_in_memory_needs_out_dir(tiny_results: slacknet.Results) -> None:
    with pytest.raises(ValueError):
        plot_results(tiny_results)


def test_plot_without_finished_flows(tmp_path: Path) -> None:
    sc = slacknet.Scenario.from_toml_text(TINY_TOML)
    r = slacknet.run(sc.model_copy(update={"run": slacknet.RunSpec(stop_ms=0.001)}))
    assert not r.records["finished"].any()
    _check_pngs(plot_results(r, tmp_path))


def test_size_bins(tiny_results: slacknet.Results) -> None:
    b = size_bins(tiny_results.records, num_bins=6)
    assert 0 < len(b) <= 6
    assert b["flows"].sum() == int(tiny_results.records["finished"].sum())
    assert (b["p99"] >= b["p50"]).all()


def test_plot_does_not_touch_pyplot_backend(tiny_results: slacknet.Results, tmp_path: Path) -> None:
    import matplotlib

    before = matplotlib.get_backend()
    plot_results(tiny_results, tmp_path)
    assert matplotlib.get_backend() == before


def test_plot_time_series(series_results: slacknet.Results, tmp_path: Path) -> None:
    paths = plot_results(series_results, tmp_path)
    names = [p.name for p in paths]
    assert names == ["slowdown_cdf.png", "slowdown_by_size.png", "queue_series.png", "transfer_cwnd.png"]
    for p in paths:
        data = p.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5_000
    # The bottleneck (the switch port towards host 0) is the busiest port.
    links = series_results.links
    bottleneck = int(links[links["dst"] == 0]["link"].iloc[0])
    assert busiest_ports(series_results.queue_series)[0] == bottleneck


def test_plot_time_series_without_a_window(tmp_path: Path) -> None:
    # UDP has no congestion window: the cwnd plot says so instead of drawing zeros.
    text = SERIES_TOML.replace("[[workload]]", '[transport]\nkind = "udp"\nrate_gbps = 4.0\n\n[[workload]]')
    r = slacknet.run(slacknet.Scenario.from_toml_text(text))
    assert (r.transfer_series["cwnd_bytes"] == 0).all() and r.transfer_series["is_paced"].all()
    assert [p.name for p in plot_results(r, tmp_path)][2:] == ["queue_series.png", "transfer_cwnd.png"]


def test_time_series_of_one_sample_are_drawn_as_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A run shorter than one sampling period has one sample (at 0): a step line through one
    # point draws nothing, so each series of one point is drawn as a marker.
    from matplotlib.figure import Figure

    drawn: dict[str, Figure] = {}
    save = Figure.savefig

    def keep(fig: Figure, path: Path, **kw: object) -> None:
        drawn[Path(path).name.split(".tmp-")[0].lstrip(".")] = fig  # written to a temporary name first
        save(fig, path, **kw)

    monkeypatch.setattr(Figure, "savefig", keep)
    text = SERIES_TOML.replace("interval_us = 5.0", "interval_us = 100000.0")
    r = slacknet.run(slacknet.Scenario.from_toml_text(text))
    assert r.queue_series["time_ps"].nunique() == 1 and r.transfer_series["time_ps"].nunique() == 1
    assert [p.name for p in plot_results(r, tmp_path)][2:] == ["queue_series.png", "transfer_cwnd.png"]
    for name, prefix in (("queue_series.png", "link "), ("transfer_cwnd.png", "flow ")):
        lines = [ln for ln in drawn[name].axes[0].get_lines() if ln.get_label().startswith(prefix)]
        assert lines and all(ln.get_marker() not in (None, "None", "") for ln in lines), name
