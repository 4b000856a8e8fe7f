"""The reduced pFabric reproduction (pFabric against DCTCP on web search, about 15 s with one
seed) runs from its description, and the verdicts on its claims are pinned."""

from __future__ import annotations

from slacknet.reproduce import load_paper, render, reproduce

from .conftest import REPO

VERDICTS = [
    ("Figure 8", "pFabric is near-optimal for short flows at every load: mean slowdown at most 1.2", True),
    ("Figure 8", "pFabric's short flows' p99 slowdown is at least 3x lower than DCTCP's at every load", True),
    ("Figure 8", "long flows do no worse under pFabric than under DCTCP at every load (mean slowdown)", True),
    ("Figure 8", "(ours) with round-robin NICs instead of pFabric's order, short flows' p99 is at least 2x worse",
     True),
]


def test_pfabric_against_dctcp(tmp_path) -> None:  # type: ignore[no-untyped-def]
    report = reproduce(load_paper(REPO / "experiments", "pfabric"), tmp_path, jobs=2, seeds=[11])
    assert [(c.title, c.text, c.holds) for c in report.claims] == VERDICTS, render(report)
    t = report.figures["fig8"]
    assert (t["status"] == "ok").all() and (t["unfinished"] == 0).all()
    # The mechanism: pFabric's small ports drop (least urgent first) where DCTCP's do not, and
    # every flow still finishes.
    assert (t[t["scheme"] == "pFabric"]["drops"] > 1000).all()
    assert (t[t["scheme"] == "DCTCP"]["drops"] < 100).all()
