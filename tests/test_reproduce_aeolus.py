"""The reduced Aeolus reproduction (Aeolus, ExpressPass and DCTCP on web search over load, a few
seconds with one seed) runs from its description, and the verdicts on its claims are pinned."""

from __future__ import annotations

from slacknet.reproduce import load_paper, render, reproduce

from .conftest import REPO

VERDICTS = [
    ("Figure (ours, after §5: web search)", "scheduled traffic is never dropped: no switch drops data under Aeolus or ExpressPass at any load",
     True),
    ("Figure (ours, after §5: web search)", "Aeolus's unscheduled first RTT makes short flows faster than under ExpressPass at every load "
     "(mean slowdown)", True),
    ("Figure (ours, after §5: web search)", "credit-scheduled queues stay small: Aeolus's leaf occupancy p99 is under half of DCTCP's at "
     "every load", True),
    # A short flow starved of credits at a busy host waits at one credit per RTT (README there).
    ("Figure (ours, after §5: web search)", "(ours) Aeolus's short-flow tail is no worse than DCTCP's (p99 slowdown) at every load", False),
]


def test_aeolus_against_expresspass_and_dctcp(tmp_path) -> None:  # type: ignore[no-untyped-def]
    report = reproduce(load_paper(REPO / "experiments", "aeolus"), tmp_path, jobs=2, seeds=[31])
    assert [(c.title, c.text, c.holds) for c in report.claims] == VERDICTS, render(report)
    t = report.figures["fct"]
    assert (t["status"] == "ok").all() and (t["unfinished"] == 0).all()
    # The mechanisms are exercised: credits and unscheduled packets are dropped (not data), and
    # some credits are wasted; DCTCP sends no credits.
    credit = t[t["transport"] != "DCTCP"]
    assert (credit["drops"] > 1000).all() and (credit["credit_waste"] > 0).all()
    assert t[t["transport"] == "DCTCP"]["credit_waste"].isna().all()
