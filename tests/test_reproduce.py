"""The reduced Credence reproduction runs end to end from its description and shows the
shapes that must hold (about a minute)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slacknet.cli import main
from slacknet.reproduce import Report, load_paper, render, reproduce
from slacknet.sweep import expand

from .conftest import REPO

#: Every claim of experiments/credence/reproduce.toml and its verdict on the reduced run, as
#: the Python checks it replaced gave them (deterministic; a change here must be deliberate).
#: With PowerTCP (the paper's Figure 8), DT only times out at bursts of 50%, so Credence is
#: not "far lower" on average.
PAY = ("the predictions pay: at bursts >= 50%, Credence's incast p95 is at least 5% lower than Complete "
       "Sharing's and the always-accept ablation's")
#: Issue 9: in none of the packet-level figures do the predictions pay (Credence equals the
#: prediction-free policies), in our settings or the artifact's.
VERDICTS = [
    ("Figure 14", "LQD/Credence is 1.0 with perfect predictions and rises smoothly toward ~3 (mean over seeds)", True),
    # On the mean over 30 seeds Credence is below DT up to 0.6, not the paper's 0.7, under
    # either DT rule.
    ("Figure 14", "Credence beats DT (artifact rule, q+size<=alpha*free) up to a flip probability of 0.7 "
     "(mean over seeds)", False),
    ("Figure 14", "Credence beats DT (classic rule, q<alpha*free) up to a flip probability of 0.7 (mean over seeds)",
     False),
    ("Figure 14", "Credence beats DT under either rule up to a flip probability of 0.6 (mean over seeds; the paper "
     "says 0.7)", True),
    ("Figure 7", "Credence stays close to LQD (incast p95 within 25%)", True),
    ("Figure 7", "at bursts >= 50% of the buffer, Credence's incast p95 is far lower than DT's and ABM's "
     "(the paper: about 95% lower)", True),
    ("Figure 7", "long flows no worse than under DT (p95 within 10%)", True),
    ("Figure 7", PAY, False),
    ("Figure 7 (artifact)", "Credence stays close to LQD (incast p95 within 25%)", True),
    ("Figure 7 (artifact)", "at bursts >= 50% of the buffer, Credence's incast p95 is far lower than DT's and ABM's "
     "(the paper: about 95% lower)", True),
    ("Figure 7 (artifact)", "long flows no worse than under DT (p95 within 10%)", True),
    ("Figure 7 (artifact)", PAY, False),
    # Ours: with SACK and RACK-TLP (Linux's loss recovery) a lost incast tail costs round trips,
    # not a 10 ms timeout: DT's incast p95 falls from 132-194 to 13-19 and Credence's lead over
    # DT and ABM from 61% to 13% (README, "Credence").
    ("Figure 7 (RACK-TLP)", "Credence stays close to LQD (incast p95 within 25%)", True),
    ("Figure 7 (RACK-TLP)", "at bursts >= 50% of the buffer, Credence's incast p95 is far lower than DT's and ABM's "
     "(the paper: about 95% lower)", False),
    ("Figure 7 (RACK-TLP)", "long flows no worse than under DT (p95 within 10%)", True),
    ("Figure 7 (RACK-TLP)", PAY, False),
    # ABM's first round trip is one round trip of bytes at the host rate (the artifact's
    # RTTBytes), so it shrinks with the RTT: the paper's "ABM is sensitive to RTT" holds.
    ("Figure 9", "ABM is sensitive to RTT: at a base RTT of about 8 us Credence's incast p95 is far lower than ABM's "
     "(the paper: 97.73%), at about 64 us ABM's is close to Credence's (within 25%)", True),
    ("Figure 10", "Credence stays close to LQD at a flip probability of 0.001 and gets worse as it grows to 0.1", True),
    ("Figure 8", "Credence stays close to LQD (incast p95 within 25%)", True),
    ("Figure 8", "at bursts >= 50% of the buffer, Credence's incast p95 is far lower than DT's and ABM's "
     "(the paper: about 95% lower)", False),
    ("Figure 8", "long flows no worse than under DT (p95 within 10%)", True),
    ("Figure 8", PAY, False),
]


#: The figures the suite reproduces: all but Figure C (the contended regime, ours: 63 NewReno
#: runs, about two minutes on one core), which is only checked to be well formed, below.
TESTED = ["fig14", "fig7", "fig7a", "fig7r", "fig6", "fig9", "fig10", "fig8"]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    paper = load_paper(REPO / "experiments", "credence")
    # One seed (the base's) keeps the suite's time; the description's three are for users.
    return reproduce(paper, tmp_path_factory.mktemp("repro"), jobs=2, only=TESTED, seeds=[21])


def test_figure_c_runs_newreno_with_the_model_trained_for_it() -> None:
    # Figure C's 63 runs: NewReno at 16 queries/s per server, the forest of train_newreno.toml
    # for "Credence", the built-in one for "Credence (DCTCP model)" (resolved from any working
    # directory: the path is relative to the sweep file).
    paper = load_paper(REPO / "experiments", "credence")
    assert list(paper.description.figure) == [*TESTED, "figC"]
    runs = expand(paper.sweeps["figC"])
    assert len(runs) == 7 * 3 * 3
    for r in runs:
        assert r.scenario.transport.kind == "newreno" and r.scenario.workload[1].query_rate_per_host == 16.0
    forests = {r.labels["admission"]: Path(r.scenario.switch.admission.oracle.path)
               for r in runs if r.labels["admission"] in ("Credence", "Credence (DCTCP model)")}
    assert forests["Credence"] == REPO / "experiments" / "credence" / "credence_forest_newreno.json"
    assert forests["Credence (DCTCP model)"].name != "credence_forest_newreno.json"


def test_every_figure_is_tabulated_and_plotted(report: Report) -> None:
    assert list(report.figures) == TESTED
    out = report.out_dir
    for name in report.figures:
        assert (out / f"{name}.csv").is_file() and (out / f"{name}.png").stat().st_size > 0
    f6 = report.figures["fig7"]
    # Complete Sharing and the always-accept ablation sit next to the paper's four policies
    # in every packet-level figure, so that the value of the predictions shows (issue 9).
    policies = {"DT", "ABM", "LQD", "Credence", "CS", "Credence (always accept)"}
    assert len(f6) == 6 * 5 and set(f6["admission"]) == policies
    for name in ("fig6", "fig7a", "fig8", "fig9", "fig10"):
        assert policies <= set(report.figures[name]["admission"]), name
    # Next to each percentile, how many incast flows timed out: DT's p95 of ~190 at bursts
    # of 50% is timeouts, LQD's ~9 is none (issue 9).
    half = f6[f6["burst_buffer_fraction"] == 0.5].set_index("admission")["incast_rto_frac"]
    assert half["DT"] >= 0.05 and half["LQD"] == 0.0, half
    assert (f6["unfinished"] == 0).all()
    # The artifact's settings (whole-response initial windows) make LQD drop several times more
    # at bursts of 100% than ours (30-packet windows): the setting is exercised.
    drops = {f: report.figures[f].set_index(["admission", "burst_buffer_fraction"])["drops"] for f in ("fig7", "fig7a")}
    assert drops["fig7a"]["LQD", 1.0] > 3 * drops["fig7"]["LQD", 1.0], drops
    f14 = report.figures["fig14"]
    # 30 seeds x 11 flip probabilities x (Credence, DT under two rules).
    assert len(f14) == 30 * 11 * 3 and f14["seed"].nunique() == 30
    assert set(f14["admission"]) == {"Credence", "DT q+size<=alpha*free", "DT q<alpha*free"}


def test_the_claims_and_their_verdicts(report: Report) -> None:
    assert [(c.title, c.text, c.holds) for c in report.claims] == VERDICTS, report.claims
    details = {(c.figure, c.text[:41]): c.detail for c in report.claims}
    # The numbers behind them (Figure 14's: means over 30 seeds, and crossings per seed).
    assert "1.000 at flip_probability = 0" in details["fig14", "LQD/Credence is 1.0 with perfect predicti"]
    assert "2.976 at flip_probability = 1" in details["fig14", "LQD/Credence is 1.0 with perfect predicti"]
    assert details["fig14", "Credence beats DT (artifact rule, q+size<"].endswith(
        "up to flip_probability = 0.6 (want >= 0.7); per seed (30 seeds): mean 0.61, std 0.03, 0.6-0.7; "
        "0.6 in 27, 0.7 in 3")
    assert details["fig14", "Credence beats DT (classic rule, q<alpha*"].endswith(
        "per seed (30 seeds): mean 0.60, std 0.00, 0.6-0.6; 0.6 in 30")
    assert "worst Credence/LQD incast_p95 ratio 1.02" in details["fig7", "Credence stays close to LQD (incast p95 w"]
    # (62% before ABM's first round trip was one round trip of bytes: ABM then took whole
    # responses at alpha = 64 and never dropped at bursts of 50%.)
    assert "93% lower than min(DT, ABM)'s" in details["fig7", "at bursts >= 50% of the buffer, Credence'"]
    assert "96% lower than ABM's" in details["fig9", "ABM is sensitive to RTT: at a base RTT of"]
    assert "43% lower than min(DT, ABM)'s" in details["fig8", "at bursts >= 50% of the buffer, Credence'"]  # (16%)


def test_render_titles_figures_as_the_paper_numbers_them(report: Report) -> None:
    text = render(report)
    assert "Shapes the paper reports" in text
    for title, claim, holds in VERDICTS:
        assert f"[{'holds   ' if holds else 'NOT MET '}] {title}: {claim}: " in text
    assert "mean ± std (min-max) over 30 seeds" in text
    for header in ("Figure 14 (discrete-time model, Appendix A, 30 seeds) [fig14]", "Figure 7 (burst sizes, DCTCP) [fig7]",
                   "Figure 6 (web-search loads, DCTCP) [fig6]", "Figure 8 (burst sizes, PowerTCP) [fig8]"):
        assert header in text
    assert set(report.figures["fig8"]["kind"]) == {"power_tcp"}


def test_push_out_beats_drop_tail_dt_on_incast_bursts(report: Report) -> None:
    # The regime the paper studies: with bursts of half the buffer and more, DT drops incast
    # packets into timeouts and LQD does not (the Credence artifact's S2 shows the same).
    f6 = report.figures["fig7"]
    big = f6[f6["burst_buffer_fraction"] >= 0.5].pivot_table(
        index="burst_buffer_fraction", columns="admission", values="incast_p95"
    )
    assert (big["LQD"] < 0.5 * big["DT"]).all(), big


def test_cli_reproduce_rejects_unknown_paper(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "no_such_paper", "--experiments", str(REPO / "experiments")]) == 2
    err = capsys.readouterr().err
    assert "no_such_paper" in err and "credence" in err and "netapprox" in err
