"""slacknet.run and the native Simulation: columns, determinism, GIL release, errors."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import slacknet
from slacknet import _native

from .conftest import EXAMPLES, SMALL_NET, TINY_TOML

RECORD_COLUMNS = {
    "id", "src", "dst", "size_bytes", "start_ps", "fct_ps", "ideal_fct_ps", "slowdown",
    "finished", "incast", "prio", "workload", "num_rtos", "retx_segments", "tail_probes", "bytes_delivered",
    "outcome", "transport", "start_us", "fct_us", "ideal_fct_us",
}
SWITCH_COLUMNS = {
    "switch", "node", "tier", "buffer_bytes", "arrivals", "drops_admission", "drops_queue_cap",
    "drops_pushout", "pushed_out_bytes",
    "dropped_bytes", "ecn_marks", "enqueued_bytes", "dequeued_bytes", "max_occupancy_bytes",
    "occ_samples", "occ_p50_bytes", "occ_p90_bytes", "occ_p99_bytes", "occ_p9999_bytes", "final_occupancy_bytes",
    "credence_safeguard_accepts", "credence_oracle_drops", "credence_oracle_accepts",
    "credence_threshold_drops",
    "drops_credit", "drops_selective",
}


def test_run_returns_frames(tiny_results: slacknet.Results) -> None:
    r = tiny_results
    s = r.summary
    assert set(r.records.columns) == RECORD_COLUMNS
    assert set(r.records["outcome"]) <= {"complete", "unfinished"}
    assert (r.records["outcome"] == "complete").sum() == s["finished_flows"]
    assert set(r.switches.columns) == SWITCH_COLUMNS
    assert set(r.queues.columns) == {"switch", "link", "queue", "max_bytes"}
    assert set(r.occupancy.columns) == {"time_ps", "switch", "bytes"}
    assert len(r.records) == s["num_flows"] > 0
    assert r.num_flows == s["num_flows"]
    assert s["finished_flows"] == int(r.records["finished"].sum())
    assert len(r.switches) == 4  # 2 leaves + 2 spines
    assert set(r.switches["tier"]) == {"leaf", "spine"}
    assert r.records["incast"].any() and (~r.records["incast"]).any()
    assert r.records["size_bytes"].dtype == np.uint64
    assert r.records["fct_ps"].dtype == np.int64
    assert r.records["finished"].dtype == bool
    assert r.records["workload"].dtype == np.uint32
    fin = r.records[r.records["finished"]]
    assert (fin["slowdown"] >= 1.0 - 1e-9).all()
    np.testing.assert_allclose(fin["fct_us"], fin["fct_ps"] / 1e6)
    for key in ("wall_time_s", "events_per_s", "packet_hops_per_s", "events", "packet_hops", "seed"):
        assert key in s
    assert s["seed"] == 7 and s["scenario"] == "tiny"
    assert s["slacknet_version"] == slacknet.__version__
    assert r.scenario.name == "tiny"


def test_unfinished_flows_have_nan_fct() -> None:
    sc = slacknet.Scenario.from_toml_text(TINY_TOML)
    sc = sc.model_copy(update={"run": slacknet.RunSpec(stop_ms=0.5)})
    r = slacknet.run(sc)
    assert r.summary["stopped_early"]
    unf = r.records[~r.records["finished"]]
    assert len(unf) > 0
    assert unf["fct_us"].isna().all() and unf["slowdown"].isna().all()
    assert (unf["fct_ps"] == -1).all()


def test_same_seed_same_records_different_seed_different(tiny_scenario: slacknet.Scenario) -> None:
    a = slacknet.run(tiny_scenario)
    b = slacknet.run(tiny_scenario)
    pd.testing.assert_frame_equal(a.records, b.records)
    pd.testing.assert_frame_equal(a.switches, b.switches)
    c = slacknet.run(tiny_scenario, seed=8)
    assert c.scenario.seed == 8 and c.summary["seed"] == 8
    assert not (
        len(a.records) == len(c.records)
        and a.records[["size_bytes", "start_ps"]].equals(c.records[["size_bytes", "start_ps"]])
    )


def test_run_accepts_path_and_saves(tiny_toml: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = slacknet.run(tiny_toml, out_dir=out)
    assert r.scenario.name == "tiny"
    assert (out / "records.parquet").is_file() and (out / "summary.json").is_file()


def test_run_with_progress_bar(tiny_scenario: slacknet.Scenario, capsys: pytest.CaptureFixture[str]) -> None:
    r = slacknet.run(tiny_scenario, progress=True, chunk_events=5_000)
    assert r.summary["finished_flows"] == r.summary["num_flows"]


def test_chunking_does_not_change_results(tiny_scenario: slacknet.Scenario) -> None:
    a = slacknet.run(tiny_scenario, chunk_events=1_000)
    b = slacknet.run(tiny_scenario, chunk_events=10**12)
    pd.testing.assert_frame_equal(a.records, b.records)
    assert a.summary["events"] == b.summary["events"]


def test_native_simulation_protocol(tiny_scenario: slacknet.Scenario) -> None:
    sim = _native.Simulation(_native.validate_json(tiny_scenario.to_json(), "."))
    assert sim.events == 0 and not sim.is_done
    assert sim.num_flows == 0 and sim.horizon_ps > 0  # transfers start as the run goes
    assert sim.advance(2_000)
    partial = sim.results()  # allowed mid-run: the state so far
    assert partial["summary"]["events"] == sim.events
    last = 0
    while sim.advance(2_000):
        assert sim.now_ps >= last
        last = sim.now_ps
        assert sim.events > 0
    assert sim.is_done
    assert sim.finished_flows == sim.num_flows
    assert sim.packet_hops > 0
    assert not sim.advance(1000)
    raw = sim.results()
    assert set(raw) >= {"records", "switches", "queues", "occupancy", "summary"}
    dtype, data = raw["records"]["size_bytes"]
    assert dtype == "<u8" and len(data) == 8 * sim.num_flows
    assert isinstance(raw["switches"]["tier"], list)
    assert "Simulation" in repr(sim)


def test_records_taken_during_the_run_are_those_of_a_run_that_takes_none() -> None:
    """Issue 8: `run` takes the records of ended flows as it goes (so the simulator frees
    their state); the records, in order, and the summary are those of a run that takes none."""
    sc = slacknet.Scenario.from_toml_text(TINY_TOML.replace("duration_ms = 2.0", "duration_ms = 10.0"))
    streamed = slacknet.run(sc, chunk_events=700)
    sim = _native.Simulation(_native.validate_json(sc.to_json(), "."))
    taken_mid_run: list[int] = []
    probe = _native.Simulation(_native.validate_json(sc.to_json(), "."))
    while probe.advance(700):
        taken_mid_run.extend(np.frombuffer(probe.take_records()["row"][1], dtype="<u8").tolist())
    # The point: records were taken while flows were still going, and not in row order.
    assert 0 < len(taken_mid_run) < probe.num_flows
    assert taken_mid_run != sorted(taken_mid_run)
    last = probe.take_records()  # done: every record left
    rows = taken_mid_run + np.frombuffer(last["row"][1], dtype="<u8").tolist()
    assert sorted(rows) == list(range(probe.num_flows))
    assert len(probe.results()["records"]["id"][1]) == 0
    while sim.advance(10**9):
        pass
    plain = slacknet.Results.from_native(sim.results(), scenario=sc.to_json(), wall_time_s=1.0)
    pd.testing.assert_frame_equal(streamed.records, plain.records)
    for k in ("num_flows", "finished_flows", "num_rtos", "events", "bytes_delivered"):
        assert streamed.summary[k] == plain.summary[k], k


def test_advance_releases_the_gil() -> None:
    sc = slacknet.Scenario.from_toml_text(TINY_TOML.replace("duration_ms = 2.0", "duration_ms = 40.0"))
    sim = _native.Simulation(_native.validate_json(sc.to_json(), "."))
    t = threading.Thread(target=sim.advance, args=(10**12,))
    spins = 0
    t.start()
    while t.is_alive():
        spins += 1
    t.join()
    assert sim.is_done
    # With the GIL held for the whole call this loop could not run while the thread works.
    assert spins > 1000


def test_bad_json_is_spec_error() -> None:
    with pytest.raises(slacknet.SpecError) as ei:
        _native.validate_json('{"topology": {"kind": "fat_tree", "k": 3, "rate_gbps": 1}}', ".")
    assert ei.value.key == "topology.k" and ei.value.value == "3"
    with pytest.raises(slacknet.SpecError) as ei:
        _native.resolve_json("{not json", ".")
    assert ei.value.value is None
    with pytest.raises(TypeError):
        _native.Simulation('{"topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 1}}')  # type: ignore[arg-type]


def test_a_dicts_typo_is_named_with_the_keys_its_table_takes() -> None:
    # pydantic reported "topology: field required (and 1 more problem)" for a misspelt key.
    for tree, key, takes in (
        ({"topolgy": {"kind": "leaf_spine"}}, "topolgy", "`topology`"),
        ({"workload": [{"kind": "poisson", "lod": 0.3}]}, "workload[0].lod", "`load`"),
    ):
        with pytest.raises(slacknet.SpecError) as ei:
            slacknet.run(tree)
        assert ei.value.key == key and "unknown field" in ei.value.message and takes in ei.value.message, ei.value
        assert " at line " not in str(ei.value)


def test_a_run_validates_its_scenario_once_and_reads_files_then(tmp_path: Path) -> None:
    # The validated scenario carries the file's contents: removing the file afterwards does not
    # matter, because building and running the simulation reads nothing.
    flows = tmp_path / "flows.txt"
    flows.write_text("0 0 5 0.0 20000 0\n1 1 6 0.0001 30000 0\n")
    p = tmp_path / "s.toml"
    p.write_text(
        '[topology]\nkind = "leaf_spine"\nleaves = 2\nhosts_per_leaf = 4\nspines = 2\n'
        'host_rate_gbps = 10\nfabric_rate_gbps = 10\n[[workload]]\nkind = "flow_list"\npath = "flows.txt"\n'
    )
    valid = slacknet.sim.validate(p)
    flows.unlink()
    sim = _native.Simulation(valid)
    while sim.advance(100_000):
        pass
    assert sim.finished_flows == 2
    assert valid.with_seed(7).seed == 7 and valid.seed == 1


def test_malformed_cdf_is_a_spec_error_at_validation(tmp_path: Path) -> None:
    # File inputs are read while the scenario is validated, so a bad one is a SpecError
    # naming the key, before any simulation is built.
    (tmp_path / "bad.cdf").write_text("abc def\n")
    p = tmp_path / "s.toml"
    p.write_text(TINY_TOML.replace('cdf = "fb_hadoop"', 'cdf = "bad.cdf"'))
    with pytest.raises(slacknet.SpecError) as ei:
        slacknet.Scenario.from_toml(p)
    assert ei.value.key == "workload[0].cdf"
    assert "bad.cdf" in ei.value.message and "line 1" in ei.value.message


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_run(path: Path) -> None:
    r = slacknet.run(path)
    assert r.summary["num_flows"] > 0
    assert r.summary["wall_time_s"] < 5.0
    if path.name == "udp_line_rate.toml":
        assert r.records["finished"].all()
        np.testing.assert_allclose(r.records["slowdown"], 1.0, rtol=0.02)
    if path.name == "multi_queue_rr.toml":
        assert set(r.records["prio"]) == {0, 1}


def test_application_records_come_back_as_a_table(tmp_path: Path) -> None:
    r = slacknet.run(Path(__file__).resolve().parents[1] / "examples" / "apps_shapes.toml")
    kinds = r.apps["kind"].value_counts().to_dict()
    assert kinds == {"iteration": 5, "block": 4, "broadcast": 1, "loop": 2}
    assert (r.apps["duration_ps"] >= r.apps["ideal_ps"]).all()
    assert r.apps["slowdown"].min() >= 1.0
    assert {"start_us", "duration_us", "ideal_us"} <= set(r.apps.columns)
    # The closed loops' transfers are recorded per flow as well, all complete.
    assert set(r.records["outcome"]) == {"complete"}
    r.save(tmp_path / "res")
    back = slacknet.Results.load(tmp_path / "res")
    pd.testing.assert_frame_equal(back.apps, r.apps)


def test_ctrl_c_interrupts_a_long_validation(tmp_path: Path) -> None:
    # Validation reads every file a scenario names (here a flow list of 1 M flows) on a
    # worker thread and lets Python handle signals meanwhile: Ctrl-C must not wait for it.
    import os
    import signal
    import time

    lines = "".join(f"{i} {i % 8} {(i + 1) % 8} {i * 1e-6:.9f} 1000 0\n" for i in range(1_000_000))
    (tmp_path / "flows.txt").write_text(lines)
    text = (
        '[topology]\nkind = "leaf_spine"\nleaves = 2\nhosts_per_leaf = 4\nspines = 1\n'
        "host_rate_gbps = 10\nfabric_rate_gbps = 10\n"
        '[[workload]]\nkind = "flow_list"\npath = "flows.txt"\n'
    )
    t0 = time.perf_counter()
    _native.validate_toml(text, str(tmp_path))
    full = time.perf_counter() - t0
    timer = threading.Timer(full / 10, os.kill, (os.getpid(), signal.SIGINT))
    # A test run started as a background job of a shell (`make test &`, nohup) inherits SIGINT
    # ignored, and Python then installs no handler: give this test the terminal's behaviour.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        t0 = time.perf_counter()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            _native.validate_toml(text, str(tmp_path))
            time.sleep(full)  # the old code: the interrupt lands only after validation returned
        elapsed = time.perf_counter() - t0
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert elapsed < full / 2, (elapsed, full)


def test_mlt_flows_end_with_at_least_p_of_their_values() -> None:
    # The bounded-loss transport (Xia et al., APNet'19): a flow of S bytes is a message of
    # S / value_bytes values; it ends once a fraction p of them arrived.
    text = TINY_TOML + '\n[transport]\nkind = "mlt"\ncomplete_fraction = 0.8\nrto_us = 500\n'
    text += "\n[switch]\nqueues = [{ cap_bytes = 30000 }]\n"
    r = slacknet.run(slacknet.Scenario.from_toml_text(text))
    rec = r.records
    assert set(rec["transport"]) == {"mlt"}
    fin = rec[rec["finished"]]
    assert len(fin) > 0
    assert set(fin["outcome"]) <= {"enough", "complete"}
    need_bytes = np.ceil(np.ceil(fin["size_bytes"].astype(float) / 4) * 0.8) * 4
    assert (fin["bytes_delivered"].astype(float) >= np.minimum(need_bytes, fin["size_bytes"].astype(float))).all()
    # CUBIC's window law (RFC 9438) keeps the bound and runs the same flows to the end, with
    # a different congestion response (the runs are not the same).
    rc = slacknet.run(slacknet.Scenario.from_toml_text(text.replace('kind = "mlt"', 'kind = "mlt"\ncc = "cubic"')))
    fc = rc.records[rc.records["finished"]]
    assert len(fc) > 0 and set(fc["outcome"]) <= {"enough", "complete"}
    need_c = np.ceil(np.ceil(fc["size_bytes"].astype(float) / 4) * 0.8) * 4
    assert (fc["bytes_delivered"].astype(float) >= np.minimum(need_c, fc["size_bytes"].astype(float))).all()
    assert fc["fct_ps"].sum() != fin["fct_ps"].sum()


def test_cli_run_says_why_no_flow_finished(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from slacknet.cli import main

    # A Poisson load so low that its 1 us of arrivals holds none: the line says so, and the
    # switches' occupancy percentiles, with no sample taken, are "-", not "0 B".
    none = tmp_path / "none.toml"
    none.write_text(SMALL_NET + '[[workload]]\nkind = "poisson"\ncdf = "websearch"\nload = 0.001\nduration_ms = 0.001\n')
    assert main(["run", str(none), "--out", str(tmp_path / "a"), "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "0/0 flows finished (the workload started no flow);" in out
    leaf = next(line for line in out.splitlines() if "leaf" in line)
    assert [c.strip() for c in leaf.split("│")][5] == "-"
    # Stopped after 100 ns: the simulated time is not printed as 0.
    short = tmp_path / "short.toml"
    short.write_text(SMALL_NET + '[[workload]]\nkind = "flows"\nflows = [{ src = 0, dst = 3, size_bytes = 50000 }]\n'
                     "[run]\nstop_ms = 0.0001\n")
    assert main(["run", str(short), "--out", str(tmp_path / "b"), "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "0/1 flows finished (stopped early at run.stop_ms, 1 unfinished); simulated 0.0001 ms" in out
