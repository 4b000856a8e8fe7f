"""Hostile and careless calls on the stepping API (`_native.Simulation`, `slacknet.run`'s
chunking): one clear exception naming the argument, never a loop that does not end, a bare
pyo3 error, a Ctrl-C that waits for the whole run, or a trace whose rows lie."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import slacknet
from slacknet import SimError, _native

from .conftest import TINY_TOML

#: LQD under incast, so that packets queue, leave and are pushed out (the trace's cases).
LQD_TOML = """
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 8
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 40

[switch]
buffer_bytes = 60000
admission = { policy = "lqd" }

[[workload]]
kind = "incast"
query_rate_per_host = 2000
fan_in = 6
burst_bytes = 300000
duration_ms = 1
"""


def simulation(text: str = TINY_TOML) -> _native.Simulation:
    return _native.Simulation(_native.validate_toml(text, "."))


def long_tiny(duration_ms: float) -> str:
    return TINY_TOML.replace("duration_ms = 2.0", f"duration_ms = {duration_ms}")


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (0, ValueError),  # did nothing and returned True: `while sim.advance(0)` never ended
        (-1, ValueError),  # pyo3's bare OverflowError
        (2**64, ValueError),
        pytest.param(10**5000, ValueError, id="10**5000"),  # an int too long for repr()
        (1.5, TypeError),
        (True, TypeError),  # ran one event
        (None, TypeError),
        ("10", TypeError),
    ],
)
def test_advance_refuses_a_max_events_that_is_not_a_count(bad: object, error: type[Exception]) -> None:
    sim = simulation()
    with pytest.raises(error, match=r"^max_events = .{1,80}: (must be between 1 and 2\^64 - 1|give an integer), e\.g\. "):
        sim.advance(bad)  # type: ignore[arg-type]
    assert sim.events == 0
    # The bounds themselves, and numpy's integers, are counts.
    assert sim.advance(np.uint64(1))  # type: ignore[arg-type]
    assert sim.events == 1
    assert not sim.advance(2**64 - 1) and sim.is_done


@pytest.mark.parametrize("bad", [1.5, True, "7", float("inf"), float("nan"), None])
def test_run_refuses_a_chunk_events_that_is_not_an_integer(bad: object) -> None:
    # 1.5 ran as 1, "7" as 7 and True as 1; infinity and NaN got int()'s messages. Checked
    # before the scenario is read (this one does not exist).
    with pytest.raises(TypeError, match=r"^chunk_events = .*: give an integer, e\.g\. 200000"):
        slacknet.run("no-such-scenario.toml", chunk_events=bad)  # type: ignore[arg-type]


def test_run_refuses_a_chunk_events_too_large_for_the_native_call() -> None:
    # It failed after the network was built, with the native call's bare OverflowError.
    with pytest.raises(ValueError, match=r"^chunk_events = 18446744073709551616: must be at most 2\^64 - 1"):
        slacknet.run("no-such-scenario.toml", chunk_events=2**64)
    for small in (0, -5):  # they ran as 1 event per call, without a word
        with pytest.raises(ValueError, match=rf"^chunk_events = {small}: must be at least 1"):
            slacknet.run("no-such-scenario.toml", chunk_events=small)
    r = slacknet.run(slacknet.Scenario.from_toml_text(TINY_TOML), chunk_events=np.int64(2**62))  # type: ignore[arg-type]
    assert r.summary["finished_flows"] == r.summary["num_flows"] > 0


def test_enable_decision_trace_after_the_first_event_is_refused() -> None:
    # Enabled mid-run, the trace paired departures with the rows of packets queued before it
    # (which have none): rows got other packets' fates (5 of 25,667 here after 20,000 events).
    def trace(sim: _native.Simulation) -> pd.DataFrame:
        return pd.DataFrame({k: np.frombuffer(b, dtype=d) for k, (d, b) in sim.decision_trace().items()})

    sim = simulation(LQD_TOML)
    sim.advance(20_000)
    with pytest.raises(SimError, match=r"^enable_decision_trace: call it before the first advance \(this simulation has run 20000 events") as ei:
        sim.enable_decision_trace()
    assert ei.value.key == "enable_decision_trace"
    assert len(trace(sim)) == 0 and not sim.decision_trace_truncated()
    # Before the first event it may be called again, and the trace is the same as once.
    once, twice = simulation(LQD_TOML), simulation(LQD_TOML)
    once.enable_decision_trace()
    twice.enable_decision_trace()
    twice.enable_decision_trace()
    for s in (once, twice):
        while s.advance(100_000):
            pass
    pd.testing.assert_frame_equal(trace(once), trace(twice))
    assert trace(once)["dropped"].any()


def test_a_call_while_another_thread_advances_is_a_sim_error() -> None:
    # It was pyo3's bare RuntimeError("Already mutably borrowed"), naming neither the object
    # nor the fix; repr() raised it too.
    sim = simulation(long_tiny(200.0))
    worker = threading.Thread(target=sim.advance, args=(2**64 - 1,))
    worker.start()
    refused: list[SimError] = []
    calls: list[Callable[[], object]] = [
        lambda: sim.now_ps, lambda: sim.events, lambda: sim.is_done, sim.results,
        sim.take_records, lambda: sim.advance(10), sim.decision_trace,
    ]
    while worker.is_alive():
        for call in calls:
            try:
                call()
            except SimError as e:
                refused.append(e)
        assert isinstance(repr(sim), str)
    worker.join()
    assert refused, "no call overlapped the advancing thread"
    assert {e.key for e in refused} == {"Simulation"}
    assert "give each thread its own Simulation" in str(refused[0])
    # Once the other thread's call returned, the object is whole.
    assert sim.is_done and sim.finished_flows == sim.num_flows
    assert "is_done=true" in repr(sim)


def test_ctrl_c_interrupts_a_long_advance_and_the_run_goes_on() -> None:
    # advance(2^64 - 1) ran the whole simulation with the interpreter released: Ctrl-C landed
    # only when it returned. Now Python's signals are handled between chunks of events, and the
    # interrupted simulation continues to the records an uninterrupted one gives.
    text = long_tiny(400.0)
    sim = simulation(text)
    timer = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
    # A test run started as a background job of a shell inherits SIGINT ignored (see
    # test_sim.test_ctrl_c_interrupts_a_long_validation).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            sim.advance(2**64 - 1)
            threading.Event().wait(30)  # the old code: the interrupt lands after the whole run
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert 0 < sim.events and not sim.is_done
    while sim.advance(2**64 - 1):
        pass
    plain = simulation(text)
    assert not plain.advance(2**64 - 1)
    sc = slacknet.Scenario.from_toml_text(text)
    got, want = (slacknet.Results.from_native(s.results(), scenario=sc, wall_time_s=1.0) for s in (sim, plain))
    pd.testing.assert_frame_equal(got.records, want.records)
    assert got.summary["events"] == want.summary["events"]


def test_flow_list_text_of_a_reactive_scenario_names_the_reason(tmp_path: Path) -> None:
    # Asked before and after the run, and after the records were taken: the same error, not a
    # partial list.
    apps = Path(__file__).resolve().parents[1] / "examples" / "apps_shapes.toml"
    sim = _native.Simulation(slacknet.sim.validate(apps))
    for _ in range(2):
        with pytest.raises(SimError, match="reacts to the network") as ei:
            sim.flow_list_text()
        assert ei.value.key == "workload"
        while sim.advance(100_000):
            sim.take_records()
    # An open-loop scenario's list is the same mid-run as before it.
    open_loop = simulation()
    before = open_loop.flow_list_text()
    open_loop.advance(5_000)
    assert open_loop.flow_list_text() == before
