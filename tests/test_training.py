"""Data-parallel training from Python: the ``training`` workload (parameter server and ring
all-reduce) gives one ``iteration`` row per iteration, and the committed §3.1 scenario runs."""

from __future__ import annotations

import pytest

import slacknet
import slacknet.sim

from .conftest import REPO

STAR = """
[topology]
kind = "leaf_spine"
leaves = 1
hosts_per_leaf = 5
spines = 0
host_rate_gbps = 10
fabric_rate_gbps = 10

[switch]
buffer_bytes = 4000000

[[workload]]
kind = "training"
pattern = "{pattern}"
workers = [1, 2, 3, 4]
{server}
model_bytes = 1000000
iterations = 4
compute_us = 50
"""


@pytest.mark.parametrize(("pattern", "server", "transfers"), [("ps", "server = 0", 8), ("ring", "", 24)])
def test_iterations_are_rows_with_a_barrier(pattern: str, server: str, transfers: int) -> None:
    res = slacknet.run(slacknet.Scenario.from_toml_text(STAR.format(pattern=pattern, server=server)))
    it = res.apps[res.apps["kind"] == "iteration"]
    assert list(it["unit"]) == [0, 1, 2, 3]
    assert (it["num_transfers"] == transfers).all()
    assert (it["duration_us"] >= it["ideal_us"]).all() and (it["duration_us"] < 1.3 * it["ideal_us"]).all()
    assert (it["start_ps"].to_numpy()[1:] == it["end_ps"].to_numpy()[:-1]).all()


def test_the_mirror_refuses_what_rust_refuses() -> None:
    w = slacknet.TrainingWorkload(pattern="ring", workers=[0, 1], model_bytes=10, iterations=1)
    assert w.server is None and w.compute_us == 0.0
    with pytest.raises(slacknet.SpecError, match=r"workload\[0\]\.server.*needs `server`"):
        slacknet.sim.validate(slacknet.Scenario.from_toml_text(STAR.format(pattern="ps", server="")))


def test_the_papers_spine_leaf_scenario_is_valid() -> None:
    v = slacknet.sim.validate(REPO / "experiments" / "mlt" / "spine_leaf.toml")
    assert v.name == "mlt_spine_leaf"


def test_sweep_metrics_sum_the_iterations() -> None:
    from slacknet.sweep import run_metrics

    res = slacknet.run(slacknet.Scenario.from_toml_text(STAR.format(pattern="ring", server="")))
    m = run_metrics(res)
    it = res.apps[res.apps["kind"] == "iteration"]
    assert m["iterations"] == 4
    assert m["train_time_us"] == pytest.approx(it["duration_us"].sum())
    assert m["net_time_us"] == pytest.approx(it["duration_us"].sum() - 4 * 50)
    assert m["iter_mean_us"] == pytest.approx(it["duration_us"].mean())


def test_eq1_counts_job_compute_in_place_of_the_simulated_phase() -> None:
    # Eq. (1): iterations x (compute + network time). The simulated phase (50 us) only spaces
    # the iterations; the job time counts the model's compute (5000 us) with the network time
    # measured, and the simulation itself does not change.
    from slacknet.sweep import run_metrics

    text = STAR.format(pattern="ring", server="")
    plain = run_metrics(slacknet.run(slacknet.Scenario.from_toml_text(text)))
    eq1 = run_metrics(slacknet.run(slacknet.Scenario.from_toml_text(text + "job_compute_us = 5000\n")))
    assert eq1["net_time_us"] == pytest.approx(plain["net_time_us"])
    assert eq1["iter_mean_us"] == pytest.approx(plain["iter_mean_us"])
    assert eq1["train_time_us"] == pytest.approx(4 * 5000 + plain["net_time_us"])


def test_sweep_metrics_give_the_training_flows_completion_times() -> None:
    from slacknet.sweep import run_metrics

    res = slacknet.run(slacknet.Scenario.from_toml_text(STAR.format(pattern="ps", server="server = 0")))
    m = run_metrics(res)
    fct = res.records[res.records["workload"] == 0]["fct_us"]
    assert len(fct) == 32
    assert m["train_fct_mean_us"] == pytest.approx(fct.mean())
    assert m["train_fct_p99_us"] == pytest.approx(fct.quantile(0.99))
    # The training transfers that waited out a timeout: none on this lossless star.
    assert m["train_rto_flows"] == 0.0
