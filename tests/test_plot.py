"""slacknet.plot: the standard PNGs are written for in-memory results and results folders."""

from __future__ import annotations

from pathlib import Path

import pytest

import slacknet
from slacknet.plot import plot_results, size_bins

from .conftest import TINY_TOML

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
