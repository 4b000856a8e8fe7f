"""slacknet.coflow: the coflow models through Python, at flow and packet level (issue 14)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from slacknet import coflow

# Two ports; coflow 1: one flow 0 -> 1 of 8 MB (2 mappers would split it); coflow 2 arrives
# later on the same ports.
SMALL = """2 2
1 0 1 0 1 1:8.0
2 100 1 0 1 1:2.0
"""


@pytest.fixture
def small_trace(tmp_path: Path) -> Path:
    p = tmp_path / "trace.txt"
    p.write_text(SMALL)
    return p


def test_a_coflow_alone_finishes_at_its_bottleneck_bound(small_trace: Path) -> None:
    df = coflow.run_trace(small_trace, "sebf", max_coflows=1)
    assert list(df.columns[:5]) == ["id", "arrival_s", "finish_s", "cct_s", "ideal_cct_s"]
    # 8 MiB at coflowsim's port speed, 1 MiB per 8 ms: 64 ms, exactly the bound.
    assert df["cct_s"].iloc[0] == pytest.approx(0.064, rel=1e-9)
    assert df["cct_s"].iloc[0] == pytest.approx(df["ideal_cct_s"].iloc[0], rel=1e-9)
    assert df["bin"].iloc[0] == "LN"


def test_every_scheduler_finishes_both_coflows_never_before_their_bound(small_trace: Path) -> None:
    table = coflow.compare_schedulers(small_trace)
    assert list(table["scheduler"]) == list(coflow.SCHEDULERS)
    assert (table["avg_slowdown"] >= 1.0 - 1e-9).all()
    assert table.loc[table["scheduler"] == "fair", "over_fair_avg"].iloc[0] == pytest.approx(1.0)
    # Coflow 2 (2 MB) arrives at 100 ms, after coflow 1 ended at 64 ms: no contention at all.
    assert (table["avg_cct_s"] - (0.064 + 0.016) / 2).abs().max() < 1e-9


def test_bad_inputs_name_the_key_and_the_fix(tmp_path: Path, small_trace: Path) -> None:
    with pytest.raises(coflow.CoflowError, match="scheduler"):
        coflow.run_trace(small_trace, "fastest")
    with pytest.raises(coflow.CoflowError, match="no such file"):
        coflow.run_trace(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("2 1\n1 0 1 7 1 1:8.0\n")
    with pytest.raises(coflow.CoflowError, match="line 2"):
        coflow.run_trace(bad)
    with pytest.raises(coflow.CoflowError, match="max_coflows"):
        coflow.run_trace(small_trace, max_coflows=0)
    # An absurd port count is refused before anything is allocated for it.
    huge = tmp_path / "huge.txt"
    huge.write_text("4000000000 1\n1 0 1 0 1 1:8.0\n")
    with pytest.raises(coflow.CoflowError, match="number of ports"):
        coflow.run_trace(huge)
    for bad_rate in (float("nan"), float("inf"), -1.0, 0.0, 1e300):
        with pytest.raises(coflow.CoflowError, match="port_mbps"):
            coflow.run_trace(small_trace, port_mbps=bad_rate)
    with pytest.raises(coflow.CoflowError, match="algo"):
        coflow.run_coflowsim(small_trace, "XX")


def test_the_intra_coflow_tables_and_their_shape_checks() -> None:
    parts = coflow.intra(quick=True)
    abc = parts["abc"]
    assert sorted(set(abc["topology"])) == ["A", "B", "C"] and sorted(set(abc["k"])) == [3, 5]
    # MADD is never slower than the standard shuffle, and never beats the theoretical bound.
    assert (abc["speedup"] >= -1e-9).all()
    assert (abc["speedup"] <= abc["theoretical_speedup"] + 1e-9).all()
    f47 = parts["fig_4_7"]
    assert (f47["completion_s"] >= f47["lower_bound_s"] * (1 - 1e-9)).all()
    checks = parts["checks"]
    assert set(checks["figure"]) == {"4.7", "4.8", "4.9", "4.10", "4.11", "4.14", "4.15"}
    lr = parts["fig_4_14"].set_index("variant")
    assert lr.loc["after", "total_s"] < lr.loc["before", "total_s"]
    # The calibration: communication is 42% of LR's iteration before Cornet and MADD.
    before = lr.loc["before"]
    assert (before["broadcast_s"] + before["shuffle_s"]) / before["total_s"] == pytest.approx(0.42)
    assert checks["holds"].dtype == bool


def test_per_flow_records_add_up_to_each_coflow(small_trace: Path) -> None:
    coflows, flows = coflow.run_trace(small_trace, "sebf", return_flows=True)
    assert list(flows.columns) == ["coflow_id", "src", "dst", "bytes", "finish_s"]
    per = flows.groupby("coflow_id").agg(bytes=("bytes", "sum"), last=("finish_s", "max"), width=("bytes", "size"))
    c = coflows.set_index("id")
    assert (per["bytes"] == c["bytes"]).all() and (per["width"] == c["width"]).all()
    # A coflow finishes with its last flow.
    assert (per["last"] - c["finish_s"]).abs().max() < 1e-12


def test_a_shuffle_at_both_fidelities() -> None:
    net = coflow.Topology(racks=1, hosts_per_rack=7, host_gbps=1.0)
    senders, receivers = [0, 1, 2, 4], [5, 6]
    d = [[1e6, 0], [1e6, 0], [2e6, 2e6], [0, 1e6]]
    flow = coflow.shuffle(net, senders, receivers, d, mechanism="madd")
    packet = coflow.shuffle(net, senders, receivers, d, mechanism="madd", fidelity="packet")
    # Host 2 sends 4 MB: Gamma = 32 ms at line rate; every flow ends then.
    assert flow.attrs["gamma_s"] == pytest.approx(0.032)
    assert (flow["finish_s"] - 0.032).abs().max() < 1e-9
    # In the simulator the senders' pacing enforces the caps: the payload Gamma, no drop.
    eff = packet.attrs["packet"]["payload_efficiency"]
    assert packet.attrs["gamma_s"] == pytest.approx(0.032 / eff)
    assert packet.attrs["completion_s"] == pytest.approx(packet.attrs["gamma_s"], rel=0.01)
    assert packet.attrs["packet"]["switch_drops"] == 0
    assert packet["bytes"].sum() == flow["bytes"].sum() == 7e6
    fair = coflow.shuffle(net, senders, receivers, d, mechanism="fair", fidelity="packet")
    assert fair.attrs["completion_s"] > packet.attrs["completion_s"]


def test_a_broadcast_at_both_fidelities() -> None:
    net = coflow.Topology(racks=2, hosts_per_rack=4, host_gbps=1.0, cross_rack_gbps=1.0)
    for fidelity in ("flow", "packet"):
        df = coflow.broadcast(net, 0, range(1, 8), 16e6, mechanism="cornettopology", fidelity=fidelity,
                              block_bytes=1 << 20)
        assert list(df["host"]) == list(range(1, 8))
        assert df.attrs["completion_s"] == df["finish_s"].max() >= df.attrs["lower_bound_s"]
        # 16 MB in 1 MiB blocks to 7 receivers: 16 x 7 block transfers, each block once.
        assert df.attrs["transfers"] == 16 * 7
    assert "packet" in df.attrs and df.attrs["packet"]["events"] > 0


def test_shuffle_and_broadcast_inputs_are_checked() -> None:
    flat = coflow.Topology(racks=1, hosts_per_rack=7)
    with pytest.raises(coflow.CoflowError, match="mechanism"):
        coflow.shuffle(flat, [0], [5], [[1e6]], mechanism="nope")
    with pytest.raises(coflow.CoflowError, match="fidelity"):
        coflow.shuffle(flat, [0], [5], [[1e6]], fidelity="fluid")
    with pytest.raises(coflow.CoflowError, match="host 50"):
        coflow.shuffle(flat, [0], [50], [[1e6]])
    with pytest.raises(coflow.CoflowError, match="columns"):
        coflow.shuffle(flat, [0], [5, 6], [[1e6]])
    with pytest.raises(coflow.CoflowError, match="transport.g"):
        coflow.shuffle(flat, [0], [5], [[1e6]], fidelity="packet", transport={"kind": "dctcp", "g": 7.0})
    with pytest.raises(coflow.CoflowError, match="kind"):
        coflow.shuffle(flat, [0], [5], [[1e6]], fidelity="packet", transport={"g": 0.1})
    # Sizes that would need unbounded tables are refused before anything is allocated.
    with pytest.raises(coflow.CoflowError, match="blocks"):
        coflow.broadcast(flat, 0, [1, 2], 1e12, block_bytes=1.0)
    with pytest.raises(coflow.CoflowError, match="at most 65536 hosts"):
        coflow.broadcast(coflow.Topology(racks=100_000, hosts_per_rack=100_000), 0, [1], 1e6)
    with pytest.raises(coflow.CoflowError, match="mechanism"):
        coflow.broadcast(flat, 0, [1], 1e6, mechanism="hdfs")
    # Unequal host rates have no leaf-spine equivalent; racks that do are accepted.
    with pytest.raises(coflow.CoflowError, match="cross-rack"):
        coflow.broadcast(coflow.Topology(racks=2, hosts_per_rack=2, cross_rack_gbps=0.0), 0, [1], 1e6)


def test_the_trace_is_found_from_the_environment(monkeypatch: pytest.MonkeyPatch, small_trace: Path) -> None:
    monkeypatch.setenv(coflow.TRACE_ENV, str(small_trace))
    assert coflow.find_trace() == small_trace
    monkeypatch.setenv(coflow.TRACE_ENV, str(small_trace) + ".nope")
    with pytest.raises(coflow.CoflowError, match=coflow.TRACE_ENV):
        coflow.find_trace()


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slacknet", *args], capture_output=True, text=True, cwd=cwd)


def test_reproduce_coflow_refuses_a_missing_trace_with_exit_2(tmp_path: Path) -> None:
    r = _cli("reproduce", "coflow", "--trace", str(tmp_path / "none.txt"), "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "trace" in r.stderr and "no such file" in r.stderr
    assert not (tmp_path / "o").exists()


def test_reproduce_coflow_on_a_small_trace_writes_every_table(tmp_path: Path, small_trace: Path) -> None:
    out = tmp_path / "out"
    r = _cli("reproduce", "coflow", "--trace", str(small_trace), "--out", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "claims hold" in r.stdout
    for name in ("inter", "shuffle_abc", "fig_4_7", "fig_4_11", "broadcast_checks", "shuffle_packet", "broadcast_packet"):
        assert (out / f"{name}.csv").is_file(), name
    # The packet level ran the same mechanisms: MADD's caps, enforced by the senders' pacing,
    # end every shuffle at its payload Γ.
    sp = pd.read_csv(out / "shuffle_packet.csv")
    madd = sp[sp["mechanism"] == "madd"]
    assert len(madd) == 3 and ((madd["packet_s"] / madd["packet_gamma_s"] - 1).abs() < 0.02).all(), madd
    assert "[holds] packet level: A: MADD enforced at the senders" in r.stdout
    assert (out / "report.txt").read_text().startswith("Coflows (reduced)")
    # Nothing half-written is left next to it.
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []
