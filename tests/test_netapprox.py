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


def test_jobs_with_groups_report_each_group_and_save_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = _jobs("atp", "atp").replace(
        "msr = 0.6\n", "groups = [{ share = 0.25, msr = 1.0 }, { share = 0.75, msr = 0.4 }]\n")
    res = slacknet.run(slacknet.Scenario.from_toml_text(text))
    jobs = res.apps[res.apps["kind"] == "job"]
    g = res.groups
    assert list(g.columns) == ["app", "unit", "group", "msr", "messages", "messages_required",
                               "messages_delivered", "loss_rate", "loss_allowance"]
    assert len(g) == 2 * len(jobs) == 32
    # 40 messages: 10 reliable, 30 with MSR 0.4 (12 needed).
    reliable, approx = g[g["group"] == 0], g[g["group"] == 1]
    assert (reliable["messages"] == 10).all() and (reliable["messages_delivered"] == 10).all()
    assert (approx["messages"] == 30).all() and (approx["messages_required"] == 12).all()
    assert (g["loss_rate"] <= g["loss_allowance"] + 1e-12).all()
    # The job rows total the groups.
    per_job = g.groupby(["app", "unit"])["messages_delivered"].sum()
    assert (per_job.to_numpy() == jobs.set_index(["app", "unit"]).loc[per_job.index, "messages_delivered"].to_numpy()).all()
    # Saved and read back; a run without jobs has an empty table with the same columns.
    back = slacknet.Results.load(res.save(tmp_path / "r"))
    assert back.groups.equals(g)
    other = slacknet.run(slacknet.Scenario.from_toml_text(BASE + """
[[workload]]
kind = "flows"
flows = [{ src = 0, dst = 1, size_bytes = 10000 }]
"""))
    assert other.groups.empty and list(other.groups.columns) == list(g.columns)
    assert not (other.save(tmp_path / "o") / "groups.parquet").exists()
    assert slacknet.Results.load(tmp_path / "o").groups.empty


def test_groups_mirror_validates() -> None:
    w = slacknet.ApproxJobsWorkload(trace="fbkv", scheme="atp", messages=10,
                                    groups=[slacknet.ApproxGroup(share=1.0, msr=0.5)])
    assert w.msr is None and w.groups is not None
    with pytest.raises(Exception, match="shar"):
        slacknet.ApproxGroup(msr=0.5)  # type: ignore[call-arg]
