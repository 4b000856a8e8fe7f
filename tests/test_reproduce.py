"""The reduced Credence reproduction runs end to end and shows the shapes that must hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from slacknet.cli import main
from slacknet.reproduce import CREDENCE_FIGURES, reproduce_credence, render_credence


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return reproduce_credence(tmp_path_factory.mktemp("repro"), jobs=2)


def test_every_figure_is_tabulated_and_plotted(report) -> None:  # type: ignore[no-untyped-def]
    assert set(report.figures) == {name for name, *_ in CREDENCE_FIGURES}
    out = report.out_dir
    for name in ("fig14", *report.figures):
        assert (out / f"{name}.csv").is_file() and (out / f"{name}.png").stat().st_size > 0
    f6 = report.figures["fig6"]
    assert len(f6) == 4 * 5 and set(f6["admission"]) == {"DT", "ABM", "LQD", "Credence"}
    assert (f6["unfinished"] == 0).all()


def test_figure14_holds_and_every_shape_is_reported(report) -> None:  # type: ignore[no-untyped-def]
    fig14 = [c for c in report.checks if c.claim.startswith("Fig. 14")]
    assert len(fig14) == 2 and all(c.holds for c in fig14), fig14
    assert len(report.checks) == 9
    assert set(report.figures["fig6-powertcp"]["kind"]) == {"power_tcp"}
    text = render_credence(report)
    assert "Shapes the paper reports" in text
    assert all(c.claim in text for c in report.checks)


def test_push_out_beats_drop_tail_dt_on_incast_bursts(report) -> None:  # type: ignore[no-untyped-def]
    # The regime the paper studies: with bursts of half the buffer and more, DT drops incast
    # packets into timeouts and LQD does not (the Credence artifact's S2 shows the same).
    f6 = report.figures["fig6"]
    big = f6[f6["burst_buffer_fraction"] >= 0.5].pivot_table(
        index="burst_buffer_fraction", columns="admission", values="incast_p95"
    )
    assert (big["LQD"] < 0.5 * big["DT"]).all(), big


def test_cli_reproduce_rejects_unknown_paper(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "netapprox"]) == 2
