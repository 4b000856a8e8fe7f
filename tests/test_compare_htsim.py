"""The UEC htsim peer: conversions (no htsim needed), skipping without a checkout, and an
end-to-end run where a built htsim is available ($HTSIM_DIR)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from slacknet.compare import (
    CLASSES,
    CompareError,
    Comparison,
    SeedComparison,
    _htsim_plan,
    _seed_means,
    aggregate_seeds,
    compare,
    htsim_args,
    htsimpeer_path,
    read_peer_fct,
    render,
)
from slacknet.config import Scenario, load_scenario

from .conftest import flow_list_scenario, load_script

REPO = Path(__file__).resolve().parents[1]
PEER_BENCH = Path("/work/shared/data/peer-bench")


def _htsimpeer() -> ModuleType:
    return load_script("htsimpeer", htsimpeer_path())


hp = _htsimpeer()

needs_htsim = pytest.mark.skipif(
    not hp.is_installed(),
    reason="UEC htsim not built: set HTSIM_DIR to a uet-htsim checkout and run "
    "`python bench/peers/htsim/htsimpeer.py ensure` once to enable the end-to-end htsim test",
)

# The S1/S2 topology in htsim's format, as committed in data/peer-bench (ls_2x16_4sp_10g_3us.topo).
LS_2x16_4SP = """Nodes 32
Tiers 2
Podsize 32

Tier 0
Downlink_speed_Gbps 10
Radix_Down 16
Radix_Up 4
Downlink_Latency_ns 3000
Switch_Latency_ns 0
Oversubscribed 4

Tier 1
Downlink_speed_Gbps 10
Radix_Down 2
Downlink_Latency_ns 3000
Switch_Latency_ns 0
"""

FLOWS = """# id src dst start_s size_bytes incast
0 0 20 0.000000 2000 0
1 1 21 0.0000104 30000 0
2 2 22 0.0000206 500000 1
3 17 4 0.1234565 1500000 0
"""


def test_topology_file_matches_the_committed_one() -> None:
    assert hp.topology_file(2, 16, 4, 10.0, 3000) == LS_2x16_4SP
    ref = PEER_BENCH / "ls_2x16_4sp_10g_3us.topo"
    if ref.exists():
        assert hp.topology_file(2, 16, 4, 10, 3000) == ref.read_text()
    # The 256-host scenario: 16 leaves under the same 4 spines.
    big = hp.topology_file(16, 16, 4, 10, 3000)
    assert "Nodes 256\n" in big and "Podsize 256\n" in big and big.endswith("Radix_Down 16\nDownlink_Latency_ns 3000\nSwitch_Latency_ns 0\n")


def test_topology_file_refuses_what_htsim_cannot_express() -> None:
    with pytest.raises(hp.HtsimPeerError, match="whole Gb/s"):
        hp.topology_file(2, 16, 4, 12.5, 3000)
    with pytest.raises(hp.HtsimPeerError, match="multiple of spines"):
        hp.topology_file(2, 10, 4, 10, 3000)


def test_connection_matrix_shifts_ids_and_truncates_starts_to_microseconds() -> None:
    flows = hp.read_flows(FLOWS)
    assert flows[2] == (2, 2, 22, 0.0000206, 500000, 1)
    text = hp.connection_matrix(flows, 32)
    lines = text.splitlines()
    assert lines[:2] == ["Nodes 32", "Connections 4"]
    assert lines[2] == "0->20 id 1 start 0 size 2000"  # htsim rejects flow id 0
    assert lines[3] == "1->21 id 2 start 10 size 30000"  # 10.4 us -> 10
    assert lines[4] == "2->22 id 3 start 20 size 500000"  # 20.6 us -> 20, as htsim truncates
    assert lines[5] == "17->4 id 4 start 123456 size 1500000"
    # From whole nanoseconds: 204 us is not 203.99999999999997 us.
    assert hp.htsim_start_us(0.000204) == 204 and hp.htsim_start_us(0.000203999) == 203
    with pytest.raises(hp.HtsimPeerError, match="distinct hosts"):
        hp.connection_matrix([(0, 3, 3, 0.0, 100, 0)], 32)
    with pytest.raises(hp.HtsimPeerError, match="distinct hosts"):
        hp.connection_matrix([(0, 3, 32, 0.0, 100, 0)], 32)


def test_connection_matrix_of_the_s1_flow_list() -> None:
    path = PEER_BENCH / "flows_L2_ws_l04_50ms_noincast.txt"
    if not path.exists():
        pytest.skip("shared/data/peer-bench is not on this machine")
    flows = hp.read_flows(path.read_text())
    lines = hp.connection_matrix(flows, 32).splitlines()
    assert lines[1] == "Connections 105" and len(lines) == 107
    assert lines[2] == "15->22 id 1 start 203 size 4691799"  # 203.898 us, truncated


# htsim_uec's lines, as UecSrc::checkFinished prints them (uec.cpp), around other output.
HTSIM_STDOUT = """Nodes: 32 Connections: 4 Triggers: 0 Failures: 0
Starting simulation
Flow Uec_0_20 flowId 1 Uec_0_20 finished at 27.4 total messages 1 total packets 2 RTS 0 total bytes 2872 in_flight now 0 fair_inc 0
Flow Uec_2_22 flowId 3 Uec_2_22 finished at 482.125 total messages 1 total packets 349 RTS 0 total bytes 501164 in_flight now 0
Flow Uec_1_21 flowId 2 Uec_1_21 finished at 65.0335 total messages 1 total packets 21 RTS 0 total bytes 30156 in_flight now 0
..........|
Done
New: 372 Rtx: 3 RTS: 0 Bounced: 0 ACKs: 370 NACKs: 0 Pulls: 0 sleek_pkts: 0
"""


def test_parse_finished_and_counts() -> None:
    assert hp.parse_finished(HTSIM_STDOUT) == {1: 27.4, 3: 482.125, 2: 65.0335}
    counts = hp.parse_counts(HTSIM_STDOUT)
    assert counts["rtx_pkts"] == 3 and counts["new_pkts"] == 372 and counts["nacks"] == 0
    assert hp.parse_counts("no summary") == {}


def test_parse_finished_reads_a_line_after_progress_dots() -> None:
    # htsim prints its progress dots without a newline: with its DCTCP print gone (the quiet
    # build), a `finished` line can follow them on the same line.
    text = "..Flow Uec_2_22 flowId 3 Uec_2_22 finished at 482.125 total messages 1\n"
    assert hp.parse_finished(text) == {3: 482.125}
    assert hp.parse_finished("x.Flow Uec_2_22 flowId 3 Uec_2_22 finished at 1.0\n") == {}


# The statement as UEC htsim's uec.cpp has it (commit 40ccb0526bb6), with its neighbours.
UEC_DCTCP = """void UecSrc::updateCwndOnAck_DCTCP(bool skip, simtime_picosec rtt, mem_b newly_acked_bytes) {
    cout << timeAsUs(eventlist().now()) << " DCTCP start " << _name << " cwnd " << _cwnd
         << " with params skip " << skip << " acked bytes " << newly_acked_bytes << endl;

    if (skip == false)  // additive increase, 1 PKT /RTT
    {
        _cwnd += newly_acked_bytes * _mtu / _cwnd;
"""


def test_the_dctcp_debugging_print_and_nothing_else_is_removed() -> None:
    text, n = hp.without_dctcp_print(UEC_DCTCP)
    assert n == 1
    assert text == UEC_DCTCP.replace(UEC_DCTCP.splitlines(keepends=True)[1] + UEC_DCTCP.splitlines(keepends=True)[2], "")
    assert hp.without_dctcp_print(text) == (text, 0)
    other = '    cout << timeAsUs(eventlist().now()) << " flowid " << _flow.flow_id() << endl;\n'
    assert hp.without_dctcp_print("{\n" + other) == ("{\n" + other, 0)


def test_quiet_source_mirrors_the_checkout_and_rewrites_only_what_changed(tmp_path: Path) -> None:
    sim, dest = tmp_path / "sim", tmp_path / "src"
    (sim / "datacenter").mkdir(parents=True)
    (sim / "uec.cpp").write_text(UEC_DCTCP)
    (sim / "CMakeLists.txt").write_text("project(htsim)\n")
    (sim / "gone.cpp").write_text("int x;\n")
    (sim / "datacenter" / "htsim_uec").symlink_to(tmp_path / "elsewhere")  # CMake's link: left out
    assert hp.quiet_source(sim, dest)
    assert "DCTCP start" not in (dest / "uec.cpp").read_text() and "_cwnd += " in (dest / "uec.cpp").read_text()
    assert (dest / "CMakeLists.txt").read_text() == "project(htsim)\n"
    assert not (dest / "datacenter" / "htsim_uec").exists()
    os.utime(dest / "CMakeLists.txt", ns=(1, 1))  # untouched if its bytes are the same
    (sim / "gone.cpp").unlink()
    (sim / "new.cpp").write_text("int y;\n")
    assert hp.quiet_source(sim, dest)
    assert (dest / "CMakeLists.txt").stat().st_mtime_ns == 1
    assert sorted(p.name for p in dest.rglob("*") if p.is_file()) == ["CMakeLists.txt", "new.cpp", "uec.cpp"]
    (sim / "uec.cpp").write_text("int z;\n")  # another htsim: built as it is
    assert not hp.quiet_source(sim, dest) and (dest / "uec.cpp").read_text() == "int z;\n"


def test_fct_lines_are_our_record_format(tmp_path: Path) -> None:
    flows = hp.read_flows(FLOWS)
    lines = hp.fct_lines(flows, hp.parse_finished(HTSIM_STDOUT), 10.0, 3000)
    assert lines[0].startswith("# id src dst start_s size_bytes incast fct_ns ideal_ns slowdown")
    out = tmp_path / "fct.txt"
    out.write_text("\n".join(lines) + "\n")
    df = read_peer_fct(out).set_index("id")
    assert list(df.index) == [0, 1, 2, 3]
    # FCT from the start htsim used (whole us): 27.4 us - 0; 65.0335 us - 10 us; 482.125 - 20.
    assert df.loc[0, "fct_ns"] == 27400 and df.loc[1, "fct_ns"] == 55034 and df.loc[2, "fct_ns"] == 462125
    # ideal = 8 link delays + size at line rate (data/peer-bench/README.md).
    assert df.loc[0, "ideal_ns"] == 24000 + 1600 and df.loc[2, "ideal_ns"] == 24000 + 400000
    assert df.loc[0, "slowdown"] == pytest.approx(27400 / 25600, rel=1e-5)
    assert bool(df.loc[2, "incast"]) and df.loc[2, "finished"]
    # Flow 3 never finished: fct -1, as in the committed peer files.
    assert not df.loc[3, "finished"] and df.loc[3, "fct_ns"] == -1


def test_committed_htsim_results_match_the_conversion() -> None:
    """The committed htsim FCTs (fct/S1_htsim_uec.txt) are in the same record format."""
    path = PEER_BENCH / "fct" / "S1_htsim_uec.txt"
    if not path.exists():
        pytest.skip("shared/data/peer-bench is not on this machine")
    df = read_peer_fct(path)
    assert len(df) == 105
    ideal = [hp.ideal_ns(int(s), 10, 3000) for s in df["size_bytes"]]
    assert list(df["ideal_ns"]) == [int(x) for x in ideal]  # truncated to whole ns


def _scenario(tmp_path: Path) -> Scenario:
    return flow_list_scenario(tmp_path, FLOWS.replace("0.1234565", "0.0001"), "htsim_agreement")


def test_htsim_args_follow_the_scenario(tmp_path: Path) -> None:
    args = htsim_args(_scenario(tmp_path))
    kv = dict(zip(args[::2], args[1::2]))
    assert kv["--leaves"] == "2" and kv["--hosts-per-leaf"] == "16" and kv["--spines"] == "4"
    assert kv["--rate-gbps"] == "10.0" and kv["--delay-ns"] == "3000" and kv["--stop-s"] == "0.05"
    assert kv["--ecn-k-pkts"] == "10"
    # ns3_compat's static 350,000 B per port: htsim gets 233 packets of 1,500 B, as committed.
    assert int(kv["--buffer-per-port-bytes"]) // hp.MTU_BYTES == 233


def test_compare_without_htsim_skips_it_with_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTSIM_DIR", raising=False)
    plan, reason = _htsim_plan(_scenario(tmp_path), None, None)
    assert plan is None and reason is not None
    assert "HTSIM_DIR is not set" in reason and "uet-htsim" in reason and "\n" not in reason
    # ... and the table says so in one line.
    table = pd.DataFrame({"slacknet": [1.0], "ns-3": [2.0], "ratio": [2.0]}, index=["all: p50 slowdown"])
    cmp = Comparison(scenario="x", table=table, slacknet=pd.DataFrame(), ns3=pd.DataFrame(),
                     skipped={"htsim": reason})  # fmt: skip
    text = render(cmp)
    assert "htsim" not in text.splitlines()[0]  # no htsim columns
    skip_lines = [ln for ln in text.splitlines() if ln.startswith("htsim: skipped: HTSIM_DIR is not set")]
    assert len(skip_lines) == 1
    assert cmp.to_json()["skipped"] == {"htsim": reason}


def test_compare_with_a_wrong_htsim_dir_fails_before_running(tmp_path: Path) -> None:
    with pytest.raises(CompareError, match="not a UEC htsim checkout"):
        compare(_scenario(tmp_path), tmp_path / "out", htsim_dir=tmp_path)
    assert not (tmp_path / "out").exists()


def test_find_checkout_accepts_the_repo_root_or_its_sim_folder(tmp_path: Path) -> None:
    sim = tmp_path / "uet" / "htsim" / "sim"
    (sim / "datacenter").mkdir(parents=True)
    (sim / "datacenter" / "main_uec.cpp").write_text("")
    (sim / "CMakeLists.txt").write_text("")
    for given in (tmp_path / "uet", tmp_path / "uet" / "htsim", sim):
        assert hp.find_checkout(given) == sim.resolve()
    assert not hp.is_installed(tmp_path / "uet")  # nothing built for this tree


def test_render_with_htsim_columns() -> None:
    table = pd.DataFrame(
        {"slacknet": [1.5, 2.0], "ns-3": [1.6, 20.0], "ratio": [1.6 / 1.5, 10.0],
         "htsim": [1.4, 1.0], "htsim ratio": [1.4 / 1.5, 0.5]},
        index=["short: p50 slowdown", "wall time (s)"],
    )  # fmt: skip
    cmp = Comparison(scenario="x", table=table, slacknet=pd.DataFrame(), ns3=pd.DataFrame(),
                     htsim=pd.DataFrame(), htsim_info={"rtx_pkts": 7},
                     only_finished_vs_htsim={"slacknet": [3], "htsim": []})  # fmt: skip
    text = render(cmp).splitlines()
    assert text[0].split()[-2:] == ["htsim", "htsim/slacknet"]
    wall = next(ln for ln in text if ln.startswith("wall time (s)"))
    assert wall.split()[-2:] == ["1.000", "0.500"]
    assert "only in htsim: 0" in "\n".join(text) and "retransmitted 7 packets" in " ".join(text)


@needs_htsim
def test_htsim_end_to_end_on_a_handful_of_flows(tmp_path: Path) -> None:
    sc = load_scenario(REPO / "experiments" / "compare" / "s1.toml")
    flows = tmp_path / "flows.txt"
    flows.write_text(FLOWS.replace("0.1234565", "0.0001"))
    res = hp.run(flows, tmp_path / "fct.txt", leaves=2, stop_s=0.05)
    assert res["flows"] == 4 and res["finished"] == 4 and res["wall_s"] > 0
    df = read_peer_fct(tmp_path / "fct.txt").set_index("id")
    # A lone 2 KB flow takes about its ideal time (htsim measures at the sender: + the ACK).
    assert 1.0 <= df.loc[0, "slowdown"] < 1.6
    assert all(math.isfinite(x) for x in df["slowdown"])
    assert sc.topology.kind == "leaf_spine" and os.path.exists(res["log"])


@needs_htsim
def test_htsim_reproduces_the_committed_s1_run(tmp_path: Path) -> None:
    """data/peer-bench's htsim results came from the same configuration (per-flow ECMP, seed 1):
    every finish time is the same, so FCTs differ only by the start's sub-microsecond part,
    which the committed file subtracts and we do not (htsim starts the flow at the truncated
    microsecond)."""
    flows = PEER_BENCH / "flows_L2_ws_l04_50ms_noincast.txt"
    ref = PEER_BENCH / "fct" / "S1_htsim_uec.txt"
    if not ref.exists():
        pytest.skip("shared/data/peer-bench is not on this machine")
    res = hp.run(flows, tmp_path / "S1.txt", stop_s=0.1)
    assert res["finished"] == 105
    mine = read_peer_fct(tmp_path / "S1.txt").set_index("id")
    theirs = read_peer_fct(ref).set_index("id")
    start_ns = (mine["start_s"] * 1e9).round()
    frac_ns = start_ns - (start_ns // 1000) * 1000
    assert ((mine["fct_ns"] - frac_ns - theirs["fct_ns"]).abs() <= 1).all()


def _per_seed_with_htsim() -> pd.DataFrame:
    """A per-seed table as compare_seeds writes it with htsim: one row per (seed, simulator)."""
    values = {
        "short_p50": {"slacknet": [1.0, 1.2], "ns-3": [1.1, 1.3], "htsim": [0.8, 0.9]},
        "long_p99": {"slacknet": [2.0, 2.2], "ns-3": [2.1, 2.3], "htsim": [2.1, 2.5]},
    }
    rows = []
    for i in range(2):
        for sim in ("slacknet", "ns-3", "htsim"):
            row: dict[str, object] = {"seed": i + 1, "simulator": sim}
            for cls in CLASSES:
                for q in (50, 95, 99):
                    row[f"{cls}_p{q}"] = math.nan
                row[f"{cls}_flows"] = row[f"{cls}_finished"] = 10.0
            for col, per_sim in values.items():
                row[col] = per_sim[sim][i]
            for col in ("wall_s", "events", "events_per_s", "peak_rss_mb", "drops", "ecn_marks", "load_before"):
                row[col] = {"slacknet": 1.0, "ns-3": 50.0, "htsim": 2.0}[sim]
            rows.append(row)
    return pd.DataFrame(rows)


def test_seeds_with_htsim_get_their_own_ratio_and_verdict() -> None:
    per_seed = _per_seed_with_htsim()
    agg = aggregate_seeds(per_seed).set_index(["class", "percentile"])
    r = agg.loc[("short", "p50")]
    assert r["htsim_mean"] == pytest.approx(0.85) and r["htsim_ratio"] == pytest.approx(0.85 / 1.1)
    assert r["htsim_verdict"] == "DIFFER" and r["verdict"] == "overlap"  # ns-3 vs slacknet unchanged
    assert agg.loc[("long", "p99"), "htsim_verdict"] == "overlap"
    means = _seed_means(per_seed)
    assert means.loc["wall time (s)", "htsim ratio"] == 2.0 and means.loc["wall time (s)", "ratio"] == 50.0
    cmp = SeedComparison(scenario="synthetic", seeds=[1, 2], runs=[], per_seed=per_seed,
                         slowdown=aggregate_seeds(per_seed), means=means)  # fmt: skip
    text = render(cmp)
    assert "in every simulator" in text and "1 of 2 rows agree with htsim" in text
    wall = next(ln for ln in text.splitlines() if ln.startswith("wall time (s)"))
    assert wall.split()[-2:] == ["2.000", "2.000"]
    # Without htsim rows, the tables are as before: no htsim columns.
    two = per_seed[per_seed["simulator"] != "htsim"]
    assert "htsim_mean" not in aggregate_seeds(two).columns and "htsim" not in _seed_means(two).columns


def _ns3_installed() -> bool:
    from slacknet.compare import ns3peer_path

    return bool(load_script("ns3peer", ns3peer_path()).is_installed())


@needs_htsim
@pytest.mark.skipif(not _ns3_installed(), reason="ns-3.44 peer not installed (bench/peers/ns3/ns3peer.py ensure)")
def test_compare_with_htsim_end_to_end(tmp_path: Path) -> None:
    cmp = compare(_scenario(tmp_path), tmp_path / "out")  # the checkout comes from $HTSIM_DIR
    assert cmp.htsim is not None and not cmp.skipped
    assert {"htsim", "htsim ratio"} <= set(cmp.table.columns)
    assert cmp.table.loc["all: finished", "htsim"] == 4 and cmp.only_finished_vs_htsim == {"slacknet": [], "htsim": []}
    assert cmp.wall_s["htsim"] > 0 and math.isnan(cmp.table.loc["drops (packets)", "htsim"])
    text = render(cmp)
    assert text.splitlines()[0].split()[-2:] == ["htsim", "htsim/slacknet"] and "-paths 1 -seed 1" in text
    assert "htsim" in cmp.to_json()["wall_s"] and (tmp_path / "out" / "htsim_fct.txt").exists()
