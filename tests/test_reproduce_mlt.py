"""The reduced reproduction of the bounded-loss ML paper's Figure 4 (training over DCTCP and over
the bounded-loss transport, by parameter server and ring, about 10 s with one seed) runs from
its description, and the verdicts on its claims are pinned."""

from __future__ import annotations

from slacknet.reproduce import load_paper, render, reproduce

from .conftest import REPO

SPEEDUP = "the bounded-loss transport speeds training up 1.1x-2.2x over DCTCP"
TAIL = "it cuts the training flows' tail (p99 FCT at least 10% lower than DCTCP's)"
MEAN = "while the training flows' mean FCT stays similar (within 20% of DCTCP's)"
OURS = "(ours) the gain comes from stopping at p: p = 0.85 trains faster than the same transport at p = 1"
GRAD = ("(ours) the bounded-loss transport leaves out part of some gradients, never more than 1 - p = 0.15 "
        "of one; DCTCP nothing")
PROBE = "(ours, beyond the paper) with a tail-loss probe (RFC 8985) p = 0.85 trains no slower"
LINUX = ("(ours, beyond the paper) against DCTCP with Linux's loss recovery (SACK, RACK-TLP), p = 0.85 with its "
         "tail probe still trains faster")
LINUX_SPEEDUP = "(ours, beyond the paper) and by the paper's 1.1x-2.2x"
VERDICTS = [
    ("Figure 4 (PS)", SPEEDUP, True), ("Figure 4 (PS)", TAIL, True), ("Figure 4 (PS)", MEAN, True),
    ("Figure 4 (PS)", OURS, True), ("Figure 4 (PS)", GRAD, True), ("Figure 4 (PS)", PROBE, True),
    # Against DCTCP with SACK and RACK-TLP, seed 1 reduced: 0.93x the time, short of 1.1x.
    ("Figure 4 (PS)", LINUX, True), ("Figure 4 (PS)", LINUX_SPEEDUP, False),
    # With a ring, seed 1 reduced gives 0.88x (73.2 against 64.5 ms), slower than p = 1 too
    # (64.8 ms), and no tail cut: a single seed's ratio moves by 20-40% with the background's
    # draw (over seeds 1-4 reduced the ring takes 0.95x DCTCP's time; at full scale the ring's
    # claims hold); see README. Seed 1 gave 1.24x with the packets in index order (before
    # 2026-11-28), 1.04x shuffled with the cumulative ACK over value indices, 0.88x since the
    # cumulative ACK counts places in the send order (the background drops some ACKs).
    ("Figure 4 (ring)", SPEEDUP, False), ("Figure 4 (ring)", TAIL, False), ("Figure 4 (ring)", MEAN, True),
    ("Figure 4 (ring)", OURS, False), ("Figure 4 (ring)", GRAD, True),
    # The ring's timeout at p = 0.85 is one a tail-loss probe finds: 0.85x the time.
    ("Figure 4 (ring)", PROBE, True),
    # With a ring, seed 1 reduced, DCTCP with RACK-TLP is faster (1.04x); over seeds 1-4 it
    # takes 1.06x the probe's time (README).
    ("Figure 4 (ring)", LINUX, False), ("Figure 4 (ring)", LINUX_SPEEDUP, False),
]
M_GRAD = ("(ours) for every model some gradient arrives incomplete, none short of more than the largest 1 - p "
          "(0.25, the RNN's)")
M_SPEEDUP = "every model trains 1.1x-2.2x faster over the bounded-loss transport (eq. (1) job time)"
M_NET = "(ours) for every model the network time alone is cut at least 10%"
M_TAIL = "for every model it cuts the training flows' tail (p99 FCT at least 10% lower)"
M_MEAN = "for every model the training flows' mean FCT stays similar (within 20% of DCTCP's)"
# Per model, with each model's measured x1 and compute ratio: the network time is cut 17-45%,
# but our models' compute (numpy on a CPU) is 22-300x their gradient's time at line rate, so
# eq. (1)'s job time gains 1-14% (MF alone reaches 1.1x); the mean FCT falls too (by up to 31%).
# Seed 1's per-model tail (PS: MF's p99 1.55x DCTCP's) and ring network time (CNN 0.94x) are
# single draws: over seeds 1-4 the network time ratio of the CNN over a ring spans 0.57-1.33.
VERDICTS += [
    (f"Figure 4 per model ({pat})", text, holds)
    for pat, net, tail in (("PS", True, False), ("ring", False, True))
    for text, holds in ((M_GRAD, True), (M_SPEEDUP, False), (M_NET, net), (M_TAIL, tail), (M_MEAN, False))
]


def test_training_over_the_bounded_loss_transport(tmp_path) -> None:  # type: ignore[no-untyped-def]
    report = reproduce(load_paper(REPO / "experiments", "mlt"), tmp_path, jobs=2, seeds=[1])
    assert [(c.title, c.text, c.holds) for c in report.claims] == VERDICTS, render(report)
    for fid in ("fig4a", "fig4b"):
        t = report.figures[fid].set_index("transport")
        assert (t["status"] == "ok").all() and (t["iterations"] == 10).all()
        # The network drops packets (the background shares the core), so there are losses to
        # abandon: the mechanism is exercised.
        assert (t["drops"] > 100).all()
    # Figure 4c: the training flows' FCT distribution; with a PS the longest flow (a timeout
    # under DCTCP) is the one cut. With a ring, seed 1 reduced has one flow that waits out a
    # timeout under either transport (10.7 and 11.5 ms; over four seeds at full scale 37 ring
    # flows wait one under DCTCP, 7 at p = 0.85), so its maximum is not compared.
    for fid in ("fig4a", "fig4b"):
        c = report.cdfs[fid].set_index("transport")
        assert c.loc["DCTCP", "flows"] == c.loc["bounded-loss p=0.85", "flows"] > 0
    c = report.cdfs["fig4a"].set_index("transport")
    assert c.loc["bounded-loss p=0.85", "max"] < 0.7 * c.loc["DCTCP", "max"], c
    # The timeouts counted: with a ring, one training flow waits one out under DCTCP and at
    # p = 0.85, fewer with the tail-loss probe (it finds a lost tail in round trips).
    rto = report.figures["fig4b"].set_index("transport")["train_rto_flows"]
    assert rto["DCTCP"] >= 1 and rto["bounded-loss p=0.85"] >= 1, rto
    assert rto["p=0.85 + tail probe"] < rto["bounded-loss p=0.85"], rto
    # DCTCP with RACK-TLP waits out no timeout either: its probe finds the lost tail.
    assert rto["DCTCP + RACK-TLP"] == 0, rto
    for fid in ("fig4m_ps", "fig4m_ring"):
        t = report.figures[fid]
        assert (t["status"] == "ok").all() and len(t) == 8 and (t["iterations"] == 10).all()
        # The speedup follows each model's share of compute: MF's (the smallest ratio) is the
        # largest, the CNN's and RNN's (ratios near 300) the smallest.
        v = t.pivot_table(index="model", columns="transport", values="train_time_us")
        gain = v["DCTCP"] / v["bounded-loss p=1-x1"]
        assert gain.idxmax() == "MF" and set(gain.nsmallest(2).index) == {"CNN", "RNN"}, gain
        # Each model's own p reached its transfers: the largest shortfall is its 1 - x1.
        lost = t[t["transport"] == "bounded-loss p=1-x1"].set_index("model")["grad_loss_max"]
        for model, allowance in (("MLP", 0.10), ("CNN", 0.15), ("RNN", 0.25), ("MF", 0.20)):
            assert allowance - 0.005 <= lost[model] <= allowance + 1e-9, (model, lost[model])
