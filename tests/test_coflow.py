"""slacknet.coflow: the coflow models through Python, at flow and packet level (issue 14)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
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
    # Shuffle mechanisms are case-insensitive, as broadcast mechanisms and schedulers are.
    upper = coflow.shuffle(net, senders, receivers, d, mechanism="MADD")
    assert upper.equals(flow) and upper.attrs["gamma_s"] == flow.attrs["gamma_s"]
    hadoop = coflow.shuffle(net, senders, receivers, d, mechanism="hadoop:1")
    assert hadoop.equals(coflow.shuffle(net, senders, receivers, d, mechanism="Hadoop:1"))


def test_a_hosts_share_for_itself_is_read_locally_and_counted() -> None:
    # It was left out with nothing said: 3 of 4 flows came back and the bytes did not add up.
    net = coflow.Topology(racks=1, hosts_per_rack=4, host_gbps=10.0)
    df = coflow.shuffle(net, [0, 1], [1, 2], [[1e6, 1e6], [3e6, 1e6]])
    assert len(df) == 3 and not ((df["src"] == 1) & (df["dst"] == 1)).any()
    assert df.attrs["local_flows"] == 1 and df.attrs["local_bytes"] == 3e6
    assert df["bytes"].sum() + df.attrs["local_bytes"] == 6e6
    assert coflow.shuffle(net, [0], [1], [[1e6]]).attrs["local_flows"] == 0


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
    # A degree or replica count of 0 names the argument and an example, not just the model's bound.
    with pytest.raises(coflow.CoflowError, match=r'mechanism = "tree-0": a tree needs degree D >= 1 .*tree-2'):
        coflow.broadcast(flat, 0, [1], 1e6, mechanism="tree-0")
    with pytest.raises(coflow.CoflowError, match=r'mechanism = "HDFS-0": HDFS needs R >= 1 replicas, e.g. hdfs-3'):
        coflow.broadcast(flat, 0, [1], 1e6, mechanism="HDFS-0")
    with pytest.raises(coflow.CoflowError, match="hadoop:K"):
        coflow.shuffle(flat, [0], [5], [[1e6]], mechanism="hadoop:0")
    # Unequal host rates have no leaf-spine equivalent; racks that do are accepted.
    with pytest.raises(coflow.CoflowError, match="cross.rack"):
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


# ---- hostile inputs: one clear error naming the argument, the value and the fix -------------


def test_topology_arguments_are_checked_where_they_are_given() -> None:
    # Before: OverflowError "can't convert negative int to unsigned", a bare TypeError, or True
    # taken as 1 rack.
    for bad in (dict(racks=-1), dict(hosts_per_rack=-3), dict(racks=0)):
        with pytest.raises(coflow.CoflowError, match=f"{next(iter(bad))} = -?[0-9]+: must be at least 1"):
            coflow.Topology(**bad)
    with pytest.raises(TypeError, match="racks = True: a whole number"):
        coflow.Topology(racks=True)
    with pytest.raises(TypeError, match=r"racks = 1\.5: a whole number"):
        coflow.Topology(racks=1.5)
    with pytest.raises(TypeError, match="host_gbps = '1': a number"):
        coflow.Topology(host_gbps="1")  # type: ignore[arg-type]
    # Before: 1e300 Gbit/s hung the broadcast; 1e-300 gave a CCT of 8e297 s.
    for rate in (1e300, 1e-300, 0.0, float("nan")):
        with pytest.raises(coflow.CoflowError, match=r"host_gbps = .*: must be between 0\.001 .* and 100000"):
            coflow.Topology(host_gbps=rate)
        with pytest.raises(coflow.CoflowError, match="cross_rack_gbps = "):
            coflow.Topology(racks=2, hosts_per_rack=2, cross_rack_gbps=rate)
    net = coflow.Topology(racks=np.int64(2), hosts_per_rack=np.int32(4), host_gbps=np.float32(1.0))
    assert coflow.broadcast(net, 0, [1], 1e6).attrs["completion_s"] > 0
    with pytest.raises(TypeError, match="topology = None: a coflow.Topology"):
        coflow.shuffle(None, [0], [1], [[1e6]])  # type: ignore[arg-type]


def test_hosts_sizes_and_seeds_name_the_argument() -> None:
    flat = coflow.Topology(racks=1, hosts_per_rack=8)
    with pytest.raises(coflow.CoflowError, match=r"senders\[0\] = -1: host -1 does not exist; give a host index from 0 to 7"):
        coflow.shuffle(flat, [-1], [1], [[1e6]])
    with pytest.raises(coflow.CoflowError, match=r"sender = -1: host -1 does not exist"):
        coflow.broadcast(flat, -1, [1], 1e6)
    # Before: 1.7 was truncated to host 1 without a word.
    with pytest.raises(TypeError, match=r"sender = 1\.7: a whole number"):
        coflow.broadcast(flat, 1.7, [2], 1e6)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"receivers\[0\] = 1\.7: a whole number"):
        coflow.broadcast(flat, 0, [1.7], 1e6)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="receivers = None: a list of host indices"):
        coflow.broadcast(flat, 0, None, 1e6)  # type: ignore[arg-type]
    # Before: the string '5' was read as 5 bytes; 1e30 bytes ran to 8e21 s; 1e-12 hung.
    for b in ("5", True, 1e30, 1e-12):
        with pytest.raises((TypeError, coflow.CoflowError), match=r"bytes = "):
            coflow.broadcast(flat, 0, [1, 2], b)  # type: ignore[arg-type]
        with pytest.raises((TypeError, coflow.CoflowError), match=r"bytes\[0\]\[0\] = "):
            coflow.shuffle(flat, [0], [1], [[b]])
    with pytest.raises(coflow.CoflowError, match=r"block_bytes = 0\.5: .*from 1 to"):
        coflow.broadcast(flat, 0, [1], 1e6, block_bytes=0.5)
    with pytest.raises(TypeError, match=r"bytes = 1000000\.0: a senders x receivers matrix"):
        coflow.shuffle(flat, [0], [1], 1e6)
    with pytest.raises(coflow.CoflowError, match=r"seed = -1: must be from 0 to 2\^64 - 1"):
        coflow.shuffle(flat, [0], [1], [[1e6]], seed=-1)
    # Zero bytes (no flow) and numpy inputs stay accepted.
    df = coflow.shuffle(flat, np.array([0, 1]), np.array([2]), np.array([[1e6], [0.0]]))
    assert len(df) == 1


def test_a_broadcast_receiver_listed_twice_or_the_sender_is_named_as_such() -> None:
    flat = coflow.Topology(racks=1, hosts_per_rack=8)
    # Before: "flow from host 1 to itself".
    with pytest.raises(coflow.CoflowError, match="receivers: host 1 is listed twice"):
        coflow.broadcast(flat, 0, [1, 1], 1e6)
    with pytest.raises(coflow.CoflowError, match="receivers: host 0 is the sender"):
        coflow.broadcast(flat, 0, [0, 1], 1e6)


def test_transport_keys_cannot_inject_toml_and_are_refused_at_flow_level() -> None:
    flat = coflow.Topology(racks=1, hosts_per_rack=8)
    with pytest.raises(coflow.CoflowError, match=r"transport key 'a = 1\\n\[run\]\\nstop_ms': a key name"):
        coflow.shuffle(flat, [0], [1], [[1e6]], fidelity="packet", transport={"kind": "dctcp", "a = 1\n[run]\nstop_ms": 1})
    with pytest.raises(coflow.CoflowError, match="transport.g = nan: a finite number"):
        coflow.shuffle(flat, [0], [1], [[1e6]], fidelity="packet", transport={"kind": "dctcp", "g": float("nan")})
    # Before: silently ignored.
    with pytest.raises(coflow.CoflowError, match="transport: .*only at fidelity='packet'"):
        coflow.shuffle(flat, [0], [1], [[1e6]], transport={"kind": "dctcp"})


def test_trace_runs_check_their_arguments(tmp_path: Path, small_trace: Path) -> None:
    # Before: max_coflows=0 gave an empty table and -1 an OverflowError in run_coflowsim.
    for m in (0, -1):
        with pytest.raises(coflow.CoflowError, match=f"max_coflows = {m}: must be at least 1"):
            coflow.run_coflowsim(small_trace, "FAIR", max_coflows=m)
    for f in (coflow.run_trace, coflow.run_coflowsim):
        with pytest.raises(TypeError, match=r"max_coflows = 1\.5: a whole number"):
            f(small_trace, max_coflows=1.5)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="max_coflows = True: a whole number"):
            f(small_trace, max_coflows=True)
    with pytest.raises(TypeError, match="scheduler = None: a scheduler name"):
        coflow.run_trace(small_trace, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="port_mbps = True: a number"):
        coflow.run_trace(small_trace, port_mbps=True)
    with pytest.raises(TypeError, match="return_flows = 'yes': True or False"):
        coflow.run_trace(small_trace, return_flows="yes")  # type: ignore[call-overload]
    # Before: a string was split into one-letter scheduler names; an empty list gave an empty table.
    with pytest.raises(TypeError, match="schedulers = 'sebf': a list of scheduler names"):
        coflow.compare_schedulers(small_trace, "sebf")
    with pytest.raises(coflow.CoflowError, match=r"schedulers = \[\]: empty"):
        coflow.compare_schedulers(small_trace, [])
    with pytest.raises(TypeError, match="algos = 'PFP': a list of algorithm names"):
        coflow.coflowsim_match(small_trace, "PFP")
    # Before: "reference: no file .../nope.out".
    with pytest.raises(coflow.CoflowError, match="algo = 'nope': unknown; choose one of FAIR, FAIR5"):
        coflow.coflowsim_match(small_trace, ["nope"])
    with pytest.raises(TypeError, match="quick = 'no': True or False"):
        coflow.intra("no")  # type: ignore[arg-type]


def test_a_trace_or_reference_that_is_no_regular_file_is_refused_without_reading_it(
        tmp_path: Path, small_trace: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # Before: "no such file" for a folder, a FIFO and /dev/zero; as a reference, the FIFO and
    # /dev/zero hung.
    with pytest.raises(coflow.CoflowError, match="is a folder, not a file"):
        coflow.find_trace(tmp_path)
    for p in (fifo, Path("/dev/zero")):
        with pytest.raises(coflow.CoflowError, match="not a regular file"):
            coflow.find_trace(p)
        with pytest.raises(coflow.CoflowError, match=r"reference = .*not a regular file"):
            coflow.run_coflowsim(small_trace, "FAIR", reference=p)
    with pytest.raises(coflow.CoflowError, match="trace = '': an empty path"):
        coflow.find_trace("")
    big = tmp_path / "big.txt"
    big.write_text("2 1\n1 0 1 0 1 1:1e300\n")
    with pytest.raises(coflow.CoflowError, match=r"MB of reducer 0 is \"1e300\""):
        coflow.run_coflowsim(big, "FAIR")


def test_reproduce_never_deletes_a_folder_it_did_not_write(tmp_path: Path, small_trace: Path) -> None:
    # Before: --out naming an existing folder (a home folder, the checkout) deleted it whole.
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("precious")
    with pytest.raises(coflow.CoflowError, match=r"out_dir = .*mine: a folder that is not a coflow reproduction's"):
        coflow.reproduce(keep, trace=small_trace)
    assert (keep / "notes.txt").read_text() == "precious"
    r = _cli("reproduce", "coflow", "--trace", str(small_trace), "--out", str(keep), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: --out = "), r.stderr
    assert (keep / "notes.txt").read_text() == "precious"


def test_reproduce_coflow_refuses_flags_it_would_ignore(tmp_path: Path, small_trace: Path) -> None:
    # Before: --list started the whole reproduction; --experiments was ignored.
    # --jobs is refused as unused whatever its value (--jobs 0 was first told "at least 1").
    for flags in (["--list"], ["--experiments", str(tmp_path)], ["--jobs", "0"], ["--jobs", "2"]):
        r = _cli("reproduce", "coflow", *flags, "--trace", str(small_trace), "--out", str(tmp_path / "o"), cwd=tmp_path)
        assert r.returncode == 2 and f"error: {flags[0]}: not used by the coflow reproduction" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()
    for bad in ("fifo", "folder"):
        p = tmp_path / bad
        os.mkfifo(p) if bad == "fifo" else p.mkdir()
        r = _cli("reproduce", "coflow", "--trace", str(p), "--out", str(tmp_path / "o"), cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--trace = " in r.stderr, r.stderr
