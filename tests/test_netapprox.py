"""NetApprox from Python: ATP jobs and the baselines run through ``slacknet.run``, one ``job`` row
per job in ``Results.apps`` with the loss rate next to its allowance, and the time series shows
an ATP job's target loss rate, measured loss and class."""

from __future__ import annotations

import numpy as np
import pytest

import slacknet

BASE = """
seed = 5
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 10

[switch]
buffer_bytes = 1500000
queues = "netapprox_slack"
"""


def _jobs(scheme: str, transport: str, msr: float = 0.6) -> str:
    return BASE + f"""
[transport]
kind = "{transport}"

[[workload]]
kind = "approx_jobs"
trace = "fbhd"
scheme = "{scheme}"
msr = {msr}
messages = 40
jobs_per_host = 2
"""


@pytest.mark.parametrize(
    ("scheme", "transport"), [("atp", "atp"), ("early_send", "dctcp"), ("sample_send", "dctcp"), ("udp", "udp")]
)
def test_every_scheme_records_one_row_per_job(scheme: str, transport: str) -> None:
    res = slacknet.run(slacknet.Scenario.from_toml_text(_jobs(scheme, transport)))
    jobs = res.apps[res.apps["kind"] == "job"]
    assert len(jobs) == 16
    for col in ("messages", "messages_required", "messages_delivered", "loss_rate", "loss_allowance",
                "bytes_sent", "packets_sent", "packets_retx", "src", "dst", "ideal_us", "duration_us"):
        assert col in jobs.columns, col
    assert (jobs["messages"] == 40).all() and (jobs["messages_required"] == 24).all()
    assert (jobs["duration_us"] >= jobs["ideal_us"]).all()
    if scheme != "udp":
        # A scheme with acknowledgements never loses more than its allowance.
        assert (jobs["loss_rate"] <= jobs["loss_allowance"] + 1e-12).all()
        assert (jobs["messages_delivered"] >= 24).all()


def test_atp_time_series_shows_target_loss_and_class() -> None:
    text = _jobs("atp", "atp", 0.5) + "\n[run.timeseries]\ninterval_us = 20\n"
    res = slacknet.run(slacknet.Scenario.from_toml_text(text))
    ts = res.transfer_series
    assert {"tlr", "loss", "class"} <= set(ts.columns)
    tlr = ts["tlr"].to_numpy()
    assert np.isfinite(tlr).all() and ((tlr >= 0) & (tlr <= 1)).all()
    # The first jobs start with TLR_0 = 1 - MSR = 0.5, in class floor(0.5 x 8) = 4.
    first = ts[ts["time_ps"] == 0]
    assert len(first) == 8 and (first["tlr"] == 0.5).all() and (first["class"] == 4).all()
    # Later, eq. (1) moves it.
    assert (ts["tlr"] != 0.5).any()


def test_a_scheme_on_the_wrong_transport_is_a_spec_error() -> None:
    with pytest.raises(slacknet.SpecError) as e:
        slacknet.run(slacknet.Scenario.from_toml_text(_jobs("atp", "dctcp")))
    assert "workload[0].scheme" in str(e.value)
