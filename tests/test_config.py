"""slacknet.config: the pydantic mirror of sim::Spec agrees with Rust on names and defaults."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pydantic
import pytest

import slacknet
from slacknet import _native
from slacknet.config import Scenario

from .conftest import EXAMPLES, REPO, SCENARIO_FILES, TINY_TOML

# Every workload kind and both topologies, with only the required keys: Rust and Python must
# fill in the same defaults everywhere else.
MINIMAL_LEAF_SPINE = """
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 40

[[workload]]
kind = "poisson"
cdf = "websearch"
load = 0.5
duration_ms = 1

[[workload]]
kind = "incast"
query_rate_per_host = 10
fan_in = 3
burst_bytes = 30000
duration_ms = 1

[[workload]]
kind = "flows"
flows = [{ src = 0, dst = 5, size_bytes = 1000 }]
"""

MINIMAL_FAT_TREE = """
[topology]
kind = "fat_tree"
k = 4
rate_gbps = 10
"""

EVERY_SECTION = """
name = "every-section"
seed = 3

[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
links_per_spine = 2
host_rate_gbps = 10
fabric_rate_gbps = 40
host_delay_ns = 500
fabric_delay_ns = 700

[routing]
mode = "spray"

[switch]
buffer_bytes = 1000000
scheduler = "round_robin"
admission = { policy = "static" }
queues = [{ ecn_threshold_bytes = 1000, cap_bytes = 50000, dt_alpha = 2.0 }, { dt_alpha = 0.25 }]

[host]
nic_buffer_bytes = 500000
ecn_threshold_bytes = 30000

[transport]
kind = "udp"
rate_gbps = 5.0

[[workload]]
kind = "incast"
query_rate_per_host = 10
fan_in = 3
burst_buffer_fraction = 0.25
senders = "other_leaf"
start_ms = 0.5
duration_ms = 1
prio = 1

[run]
stop_ms = 10.0
sample_interval_us = 0

[run.timeseries]
interval_us = 2.5
transfers = false
nics = false
switches = [0, 3]
"""

# NetApprox's queue preset (Rust expands it) and background traffic moved between classes.
NETAPPROX = MINIMAL_LEAF_SPINE.replace("duration_ms = 1\n", "duration_ms = 1\nprio_schedule = [[0, 4], [590.5, 3]]\n") + """
[switch]
buffer_bytes = 1500000
queues = "netapprox_slack"
"""

# ATP and NetApprox's jobs with only their required keys (and an entry with its own transport).
ATP_JOBS = MINIMAL_LEAF_SPINE + """
[transport]
kind = "atp"

[[workload]]
kind = "approx_jobs"
trace = "fbkv"
scheme = "atp"
msr = 0.5
messages = 10

[[workload]]
kind = "approx_jobs"
trace = "fbhd"
scheme = "early_send"
msr = 0.9
messages = 5
receiver = 0
transport = { kind = "dctcp" }
"""

# ExpressPass and Aeolus with only their required keys (the switch halves they need), and an
# ExpressPass entry with its own transport.
AEOLUS = MINIMAL_LEAF_SPINE + """
[routing]
mode = "symmetric_ecmp"

[switch]
credit_queue_pkts = 8
selective_drop_bytes = 8000

[transport]
kind = "aeolus"

[[workload]]
kind = "incast"
query_rate_per_host = 100
fan_in = 3
burst_bytes = 60000
duration_ms = 1
transport = { kind = "expresspass", w_min = 0.02 }
"""

# pFabric's hosts with only `kind` (Rust and Python fill the same defaults) and its switch ports.
PFABRIC = MINIMAL_LEAF_SPINE + """
[transport]
kind = "pfabric"

[switch]
scheduler = "pfabric"
admission = { policy = "complete_sharing" }
queues = [{ cap_bytes = 36000 }]

[host]
scheduler = "pfabric"
"""

# The time-series table with only its required key: Rust and Python fill the same defaults.
MINIMAL_TIMESERIES = MINIMAL_FAT_TREE + """
[run.timeseries]
interval_us = 10
"""


def _python_side(text: str) -> Scenario:
    """Load TOML with Python's defaults only (no Rust involved)."""
    return Scenario.model_validate(tomllib.loads(text))


BUILTIN_CDFS = {"websearch", "fb_hadoop", "google_rpc"}


def _resolve_paths(d: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """What Rust does to file names: relative paths become absolute, built-in names stay."""
    for w in d.get("workload", []):
        for key in ("cdf", "path"):
            if key in w and w[key] not in BUILTIN_CDFS:
                w[key] = str((base_dir / w[key]).resolve())
    return d


def _assert_same_defaults(text: str, base_dir: Path) -> None:
    py = _python_side(text)
    if py.profile != "default" or isinstance(py.switch.queues, str):
        # Python knows no profile's defaults and expands no queue preset (Rust owns both):
        # what Python sends is what the file set, and Rust resolves it exactly as it resolves
        # the file.
        via_rust = json.loads(_native.resolve_json(py.to_json(), str(base_dir)))
        assert via_rust == json.loads(_native.resolve_toml(text, str(base_dir)))
        assert json.loads(Scenario.model_validate_json(json.dumps(via_rust)).to_json()) == via_rust
        return
    py_dump: dict[str, Any] = _resolve_paths(json.loads(py.to_json()), base_dir)
    # Python -> JSON -> Rust -> JSON
    via_rust = json.loads(_native.resolve_json(py.to_json(), str(base_dir)))
    assert via_rust == py_dump
    # Rust's own reading of the TOML fills the same defaults as Python's.
    from_rust = json.loads(_native.resolve_toml(text, str(base_dir)))
    assert from_rust == py_dump
    # And the resolved JSON reads back into the models unchanged.
    assert json.loads(Scenario.model_validate_json(json.dumps(from_rust)).to_json()) == from_rust


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_committed_scenario_round_trips_through_rust(path: Path) -> None:
    _assert_same_defaults(path.read_text(), path.parent)


def test_there_are_examples() -> None:
    names = {p.name for p in EXAMPLES}
    assert {
        "leaf_spine_websearch.toml",
        "fat_tree_k4.toml",
        "incast_small_buffer.toml",
        "multi_queue_rr.toml",
        "udp_line_rate.toml",
    } <= names


@pytest.mark.parametrize(
    "text",
    [MINIMAL_LEAF_SPINE, MINIMAL_FAT_TREE, EVERY_SECTION, TINY_TOML, _native.default_scenario_toml(), MINIMAL_TIMESERIES, NETAPPROX, ATP_JOBS, PFABRIC, AEOLUS],
    ids=["minimal_leaf_spine", "minimal_fat_tree", "every_section", "tiny", "builtin_default", "minimal_timeseries", "netapprox", "atp_jobs", "pfabric", "aeolus"],
)
def test_python_defaults_equal_rust_defaults(text: str, tmp_path: Path) -> None:
    _assert_same_defaults(text, tmp_path)


def test_flow_list_path_is_resolved_against_the_scenario_folder(tmp_path: Path) -> None:
    (tmp_path / "flows.txt").write_text("0 0 1 0.0 1000 0\n")
    (tmp_path / "s.toml").write_text(
        MINIMAL_FAT_TREE + '\n[[workload]]\nkind = "flow_list"\npath = "flows.txt"\n'
    )
    sc = Scenario.from_toml(tmp_path / "s.toml")
    wl = sc.workload[0]
    assert isinstance(wl, slacknet.FlowListWorkload)
    assert Path(wl.path).is_absolute() and Path(wl.path).name == "flows.txt"
    assert wl.prio == 0


def test_default_scenario_matches_builtin_text() -> None:
    d = Scenario.default()
    assert d.name == "default"
    assert isinstance(d.topology, slacknet.LeafSpineTopology)
    assert d.num_hosts == 32
    assert d == Scenario.from_toml_text(slacknet.default_scenario_toml())


@pytest.mark.parametrize(
    "data",
    [
        {"topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 10}, "colour": "blue"},
        {"topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 10, "radix": 4}},
        {"topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 10}, "transport": {"mss": 1000}},
        {"topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 10}, "switch": {"queues": [{"k": 1}]}},
        {"topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 10}, "switch": {"admission": {"policy": "pushout_everything"}}},
        {"topology": {"kind": "torus", "k": 4}},
        {"topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 10}, "workload": [{"kind": "poisson", "cdf": "x"}]},
        {"topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 10}, "run": {"timeseries": {"interval_us": 1, "every": 2}}},
        {"topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 10}, "run": {"timeseries": {"queues": True}}},
        {"topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 10}, "transport": {"kind": "pfabric", "rto": 45}},
        {"topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 10}, "switch": {"scheduler": "pfabric_fifo"}},
    ],
)
def test_pydantic_rejects_unknown_keys_and_kinds(data: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        Scenario.model_validate(data)


def test_validate_assignment() -> None:
    sc = Scenario.from_toml_text(MINIMAL_FAT_TREE)
    with pytest.raises(pydantic.ValidationError):
        sc.seed = -1


def test_rust_errors_carry_key_value_message() -> None:
    text = MINIMAL_LEAF_SPINE.replace("load = 0.5", "load = 1.5")
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml_text(text)
    e = ei.value
    assert isinstance(e, ValueError)
    assert e.key == "workload[0].load"
    assert e.value == "1.5"
    assert "(0, 1]" in e.message
    assert str(e).startswith("workload[0].load = 1.5: ")


def test_pfabric_mirror_and_its_rust_checks() -> None:
    sc = Scenario.from_toml_text(PFABRIC)
    t = sc.transport
    assert isinstance(t, slacknet.PfabricTransport)
    assert (t.init_cwnd_pkts, t.rto_us, t.max_cwnd_pkts, t.probe_after_timeouts) == (None, None, 1024, 5)
    assert sc.switch.scheduler == "pfabric" and sc.host.scheduler == "pfabric"
    # Rust refuses a pFabric port with two queues, a shared-buffer policy that drops first, and
    # an initial window beyond the largest; each error names the key and the fix.
    two_queues = PFABRIC.replace("queues = [{ cap_bytes = 36000 }]", "queues = [{}, {}]")
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml_text(two_queues)
    assert ei.value.key == "switch.queues" and "exactly one queue" in ei.value.message
    dt = PFABRIC.replace('admission = { policy = "complete_sharing" }\n', "")
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml_text(dt)
    assert ei.value.key == "switch.admission" and "complete_sharing" in ei.value.message
    big = PFABRIC.replace('kind = "pfabric"\n', 'kind = "pfabric"\ninit_cwnd_pkts = 2000\n', 1)
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml_text(big)
    assert ei.value.key == "transport.init_cwnd_pkts" and ei.value.value == "2000"
    bad_rto = PFABRIC.replace('kind = "pfabric"\n', 'kind = "pfabric"\nrto_us = -1.0\n', 1)
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml_text(bad_rto)
    assert ei.value.key == "transport.rto_us"


MLT = MINIMAL_LEAF_SPINE + """
[transport]
kind = "mlt"
complete_fraction = 0.85
value_bytes = 2
"""


def test_mlt_mirror_and_its_rust_checks() -> None:
    sc = Scenario.from_toml_text(MLT)
    t = sc.transport
    assert isinstance(t, slacknet.MltTransport)
    assert (t.complete_fraction, t.value_bytes, t.init_cwnd_pkts, t.rto_us, t.dupack_threshold) == (0.85, 2, 10, 10_000, 3)
    # Python -> JSON -> Rust -> JSON keeps every key.
    again = Scenario.from_toml_text(MLT)
    assert again.transport == t
    # Rust refuses a fraction outside (0, 1] and a value width other than 2 or 4, naming the
    # key, the value and the fix.
    for bad, key in [
        ("complete_fraction = 0.85", "transport.complete_fraction"),
        ("complete_fraction = 1.5", "transport.complete_fraction"),
    ]:
        text = MLT.replace("complete_fraction = 0.85", bad.replace("0.85", "0.0") if bad.endswith("0.85") else bad)
        with pytest.raises(slacknet.SpecError) as ei:
            Scenario.from_toml_text(text)
        assert ei.value.key == key and "(0, 1]" in ei.value.message
    with pytest.raises(Exception):
        slacknet.MltTransport(value_bytes=8)  # type: ignore[arg-type]
    text = MLT.replace("value_bytes = 2", "value_bytes = 2\ng = 0.0")
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml_text(text)
    assert ei.value.key == "transport.g"
    # The window law: DCTCP by default, CUBIC on request; anything else is refused by name.
    assert t.cc == "dctcp"
    cubic = Scenario.from_toml_text(MLT + 'cc = "cubic"\n')
    assert cubic.transport.cc == "cubic"  # type: ignore[union-attr]
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml_text(MLT + 'cc = "bbr"\n')
    assert ei.value.key == "transport.cc" and "bbr" in str(ei.value)
    # The send order: shuffled by default, index on request; anything else refused by name.
    assert t.send_order == "shuffled"
    assert Scenario.from_toml_text(MLT + 'send_order = "index"\n').transport.send_order == "index"  # type: ignore[union-attr]
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml_text(MLT + 'send_order = "random"\n')
    assert ei.value.key == "transport.send_order" and "random" in str(ei.value)
    # The tail-loss probe: off by default (the paper has none), a boolean only.
    assert t.tail_probe is False
    assert Scenario.from_toml_text(MLT + "tail_probe = true\n").transport.tail_probe is True  # type: ignore[union-attr]
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml_text(MLT + 'tail_probe = "yes"\n')
    assert ei.value.key == "transport.tail_probe"


def test_unknown_key_error_names_key_and_line() -> None:
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml_text(MINIMAL_FAT_TREE + "\n[transport]\nkind = \"dctcp\"\nmss = 1000\n")
    assert ei.value.key == "transport.mss"
    assert ei.value.value is None
    assert "unknown field" in ei.value.message and "line" in ei.value.message


def test_toml_syntax_error_is_a_spec_error_with_line(tmp_path: Path) -> None:
    p = tmp_path / "broken.toml"
    p.write_text("[topology\nkind = 1\n")
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml(p)
    assert ei.value.key == str(p)
    assert "line 1" in ei.value.message


def test_missing_file() -> None:
    with pytest.raises(FileNotFoundError):
        Scenario.from_toml("/nonexistent/scenario.toml")


def test_python_built_scenario_resolves(tmp_path: Path) -> None:
    cdf = tmp_path / "sizes.cdf"
    cdf.write_text("1000 0\n2000 1\n")
    sc = Scenario(
        name="py",
        topology=slacknet.FatTreeTopology(k=4, rate_gbps=10),
        workload=[slacknet.PoissonWorkload(cdf="sizes.cdf", load=0.2, duration_ms=1)],
    )
    r = sc.resolve(tmp_path)
    wl = r.workload[0]
    assert isinstance(wl, slacknet.PoissonWorkload)
    assert wl.cdf == str(cdf.resolve())
    assert r.switch.queues == [slacknet.QueueSpec(ecn_threshold_bytes=97_500)]
    # A Python-built scenario that Rust rejects raises SpecError, not a pydantic error.
    bad = sc.model_copy(update={"switch": slacknet.SwitchSpec(queues=[slacknet.QueueSpec()] * 9)})
    with pytest.raises(slacknet.SpecError) as ei:
        bad.resolve(tmp_path)
    assert ei.value.key == "switch.queues"


def test_to_json_leaves_out_none() -> None:
    sc = Scenario.from_toml_text(MINIMAL_FAT_TREE)
    d = json.loads(sc.to_json())
    assert "buffer_bytes" not in d["switch"] and "stop_ms" not in d["run"]
    assert d["switch"]["admission"] == {"policy": "dynamic_thresholds"}
    assert d["switch"]["queues"] == [{"ecn_threshold_bytes": 97500, "dt_alpha": 1.0}]


def test_ns3_compat_profile_matches_rust_from_python_and_toml(tmp_path):
    """A profile's defaults sit beneath the keys given, identically in Python and Rust."""
    topo = slacknet.LeafSpineTopology(
        leaves=2, hosts_per_leaf=4, spines=2, host_rate_gbps=10, fabric_rate_gbps=10
    )
    built = Scenario(profile="ns3_compat", topology=topo, transport=slacknet.DctcpTransport(mss_bytes=1000))
    # Python does not merge profiles: Rust applies the profile beneath the keys given.
    sc = built.resolve(tmp_path)
    assert sc.transport.mss_bytes == 1000  # the user's key wins
    assert isinstance(sc.transport, slacknet.DctcpTransport)
    assert sc.transport.handshake and sc.transport.header_bytes == 54
    assert sc.transport.limited_transmit  # ns-3's TcpSocketBase::LimitedTransmit
    assert sc.transport.sack  # ns-3's TcpSocketBase::Sack
    assert not Scenario(topology=topo, transport=slacknet.DctcpTransport()).resolve(tmp_path).transport.limited_transmit
    assert isinstance(sc.switch.admission, slacknet.StaticPartitioning)
    assert sc.switch.admission.port_bytes == 350_000
    assert sc.host.ecn_threshold_bytes == 14_000
    assert sc.resolve(tmp_path) == sc
    # A UDP scenario under the profile takes only the keys UDP has.
    udp = Scenario(profile="ns3_compat", topology=topo, transport=slacknet.UdpTransport()).resolve(tmp_path)
    assert isinstance(udp.transport, slacknet.UdpTransport) and udp.transport.header_bytes == 54
    toml = (
        'profile = "ns3_compat"\n[topology]\nkind = "leaf_spine"\nleaves = 2\nhosts_per_leaf = 4\n'
        "spines = 2\nhost_rate_gbps = 10\nfabric_rate_gbps = 10\n[transport]\nmss_bytes = 1000\n"
    )
    assert Scenario.from_toml_text(toml, tmp_path) == sc


#: The bounded-loss ML scenario, whose DCTCP baseline loses packets: where the TCP keys show.
MLT_REDUCED = Path(__file__).parent.parent / "experiments" / "mlt" / "base_reduced.toml"


def _mlt_rtos(seed: int, **keys: bool) -> int:
    """The timeouts of the bounded-loss ML scenario's DCTCP baseline with these TCP keys set."""
    sc = Scenario.from_toml(MLT_REDUCED)
    for k, v in keys.items():
        setattr(sc.transport, k, v)
    return int(slacknet.run(sc, seed=seed).records["num_rtos"].sum())


def _assert_needs_sack(key: str) -> None:
    """`key` on without `sack` is refused, naming the key and the fix."""
    with pytest.raises(slacknet.SpecError) as ei:
        _mlt_rtos(2, **{key: True})
    assert ei.value.key == f"transport.{key}" and "transport.sack = true" in ei.value.message


def test_limited_transmit_reaches_the_transport() -> None:
    """`limited_transmit` changes a lossy run (the bounded-loss ML scenario's DCTCP baseline,
    seed 1: its segments on duplicate ACKs turn two of six timeouts into fast retransmits), and
    leaves a run without duplicate ACKs as it was."""
    assert isinstance(Scenario.from_toml(MLT_REDUCED).transport, slacknet.DctcpTransport)
    rtos = {lt: _mlt_rtos(1, limited_transmit=lt) for lt in (False, True)}
    assert rtos == {False: 6, True: 4}, rtos


def test_sack_reaches_the_transport() -> None:
    """`sack` changes a lossy run (the bounded-loss ML scenario's DCTCP baseline, seed 2: six
    timeouts without, three with), is off by default, and is refused as anything but a switch."""
    base = Scenario.from_toml(MLT_REDUCED)
    assert isinstance(base.transport, slacknet.DctcpTransport) and not base.transport.sack
    rtos = {sack: _mlt_rtos(2, sack=sack) for sack in (False, True)}
    assert rtos == {False: 6, True: 3}, rtos
    with pytest.raises(ValueError, match="sack"):
        slacknet.DctcpTransport(sack="yes")


def test_rack_tlp_reaches_the_transport() -> None:
    """`rack_tlp` (RACK-TLP, RFC 8985) is off by default, needs `sack` (refused without it,
    naming the key and the fix), and changes a lossy run: the bounded-loss ML scenario's DCTCP
    baseline, seed 2, three timeouts with SACK alone and none with RACK-TLP too (a lost tail
    is found by a probe and RACK's timing instead of the 10 ms timer): the records' tail_probes
    count three probes, none without it."""
    base = Scenario.from_toml(MLT_REDUCED)
    assert isinstance(base.transport, slacknet.DctcpTransport) and not base.transport.rack_tlp
    got = {}
    for rack in (False, True):
        sc = Scenario.from_toml(MLT_REDUCED)
        sc.transport.sack = True
        sc.transport.rack_tlp = rack  # type: ignore[union-attr]
        rec = slacknet.run(sc, seed=2).records
        got[rack] = (int(rec["num_rtos"].sum()), int(rec["tail_probes"].sum()))
    assert got == {False: (3, 0), True: (0, 3)}, got
    _assert_needs_sack("rack_tlp")


def test_prr_reaches_the_transport() -> None:
    """`prr` (PRR in fast recovery, RFC 9937) is off by default, needs `sack` (refused without
    it, naming the key and the fix), and changes a lossy run: the bounded-loss ML scenario's
    DCTCP baseline with SACK, seed 2, three timeouts without and seven with (its windows are a
    few segments, where PRR sends only what each ACK delivers and leaves less in flight)."""
    base = Scenario.from_toml(MLT_REDUCED)
    assert isinstance(base.transport, slacknet.DctcpTransport) and not base.transport.prr
    rtos = {prr: _mlt_rtos(2, sack=True, prr=prr) for prr in (False, True)}
    assert rtos == {False: 3, True: 7}, rtos
    _assert_needs_sack("prr")


def test_slow_start_reaches_the_transport() -> None:
    """`slow_start = false` (the Credence artifact's DCTCP, ns-3.39 with `m_useSS = false`)
    grows the window by one segment a round from the first window on: one 300-segment flow on
    an idle path with 400 us of propagation takes 17 rounds (10, 11, ..., 25, then 20) instead
    of slow start's 5 (10, 20, 40, 80, then 150), so it finishes 12 round trips later, less the
    130 segments' serialization the longer last round of slow start took. PowerTCP refuses
    it."""
    text = """
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 2
spines = 1
host_rate_gbps = 10
fabric_rate_gbps = 10
host_delay_ns = 50000
fabric_delay_ns = 50000
[transport]
kind = "KIND"
[[workload]]
kind = "flows"
flows = [{ src = 0, dst = 3, size_bytes = 438000 }]
"""
    assert slacknet.DctcpTransport().slow_start and slacknet.NewRenoTransport().slow_start
    seg_us, ack_us = 1500 * 8 / 10e3, 40 * 8 / 10e3  # serialization at 10 Gb/s
    rtt_us = 8 * 50 + 4 * seg_us + 4 * ack_us  # four links each way, store and forward
    for kind in ("dctcp", "newreno"):
        fct_us = {}
        for ss in (True, False):
            sc = Scenario.from_toml_text(text.replace("KIND", kind))
            sc.transport.slow_start = ss  # type: ignore[union-attr]
            rec = slacknet.run(sc).records
            assert int(rec["num_rtos"].sum()) == 0 and int(rec["retx_segments"].sum()) == 0
            fct_us[ss] = float(rec["fct_ps"].iloc[0]) / 1e6
        assert fct_us[False] - fct_us[True] == pytest.approx(12 * rtt_us - 130 * seg_us, rel=1e-3), (kind, fct_us)
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml_text(text.replace('kind = "KIND"', 'kind = "power_tcp"\nslow_start = false'))
    assert ei.value.key == "transport.slow_start" and "PowerTCP" in ei.value.message


def test_toml_text_given_as_a_path_is_named_as_such(tmp_path: Path) -> None:
    # It raised OSError "File name too long" with the whole text as the name.
    with pytest.raises(FileNotFoundError, match=r"^no such scenario file: what was given is 3 lines of text, not a "
                       r"path; give the scenario file's path \(TOML text goes to Scenario.from_toml_text\)$"):
        Scenario.from_toml('[topology]\nkind = "fat_tree"\n')
    with pytest.raises(FileNotFoundError, match=r"^no such scenario file: a path of 5000 characters is too long"):
        Scenario.from_toml("x" * 5000)


def test_dctcp_loss_response_reaches_the_transport(tmp_path: Path) -> None:
    """`loss_response` is "halve" by default and "alpha" under ns3_compat (ns-3.44's TcpDctcp),
    and changes a lossy run: the lossy S2 comparison's incast responses, whose windows are cut
    by alpha/2 instead of halved after a loss, finish with a p95 slowdown of about 155 (ns-3:
    155) where halving gives about 304 (252 before ns3_compat read ECE from new ACKs only)."""
    assert slacknet.DctcpTransport().loss_response == "halve"
    base = Scenario.from_toml(Path(__file__).parent.parent / "experiments" / "compare" / "s2_lossy.toml")
    assert base.resolve(tmp_path).transport.loss_response == "alpha"  # type: ignore[union-attr]
    p95 = {}
    for lr in ("halve", "alpha"):
        sc = base.model_copy(update={"transport": slacknet.DctcpTransport(loss_response=lr)})
        rec = slacknet.run(sc).records
        p95[lr] = float(rec[rec["incast"]]["slowdown"].quantile(0.95))
    assert 285 < p95["halve"] < 320 and 150 < p95["alpha"] < 165, p95
    with pytest.raises(ValueError, match="loss_response"):
        slacknet.DctcpTransport(loss_response="third")  # type: ignore[arg-type]


def test_dctcp_loss_in_cwr_ns3_reaches_the_transport(tmp_path: Path) -> None:
    """`loss_in_cwr = "ns3"` (ns-3.44's CA_CWR: PRR after an ECN cut, no fast recovery for a
    loss found then, lost segments resent in bursts) is off by default and under ns3_compat,
    and on the lossy S2 comparison drops and retransmits far more, as ns-3 does (ns-3 with
    350 KB NICs: 1,386 port drops; slacknet about 750 with "recovery", 1,100-1,250 with "ns3")."""
    assert slacknet.DctcpTransport().loss_in_cwr == "recovery"
    base = Scenario.from_toml(Path(__file__).parent.parent / "experiments" / "compare" / "s2_lossy.toml")
    resolved = base.resolve(tmp_path)
    assert resolved.transport.loss_in_cwr == "recovery"  # type: ignore[union-attr]
    got = {}
    for mode in ("recovery", "ns3"):
        sc = resolved.model_copy(update={"transport": resolved.transport.model_copy(update={"loss_in_cwr": mode})})
        r = slacknet.run(sc)
        got[mode] = (r.summary["switch_drops"], int(r.records["retx_segments"].sum()))
    assert got["ns3"][0] > 1.3 * got["recovery"][0] and got["ns3"][1] > 1.3 * got["recovery"][1], got
    with pytest.raises(ValueError, match="loss_in_cwr"):
        slacknet.DctcpTransport(loss_in_cwr="linux")  # type: ignore[arg-type]


def test_dctcp_ece_only_on_new_acks_reaches_the_transport(tmp_path: Path) -> None:
    """`ece_only_on_new_acks` (ns-3.44 reads ECE only from ACKs that advance SND.UNA) is off by
    default and on under ns3_compat; on the lossy S2 comparison more incast responses finish
    without a timeout with it (their duplicate ACKs echo marks; cutting on them leaves no room for
    limited transmit: README, "Under loss"), and runs without a duplicate ACK do not move."""
    assert slacknet.DctcpTransport().ece_only_on_new_acks is False
    base = Scenario.from_toml(Path(__file__).parent.parent / "experiments" / "compare" / "s2_lossy.toml")
    resolved = base.resolve(tmp_path)
    assert resolved.transport.ece_only_on_new_acks is True  # type: ignore[union-attr]
    survivors = {False: 0, True: 0}
    for only_new in (False, True):
        for seed in (1, 2, 3, 4):  # hashed ECMP: uneven uplinks (flow_index shares them evenly)
            sc = resolved.model_copy(
                update={
                    "transport": resolved.transport.model_copy(update={"ece_only_on_new_acks": only_new}),
                    "routing": resolved.routing.model_copy(update={"mode": "ecmp", "hash_seed": seed}),
                }
            )
            rec = slacknet.run(sc).records
            survivors[only_new] += int((rec[rec["incast"]]["num_rtos"] == 0).sum())
    # Measured 54 and 63 of 192 (ns-3.44 with its classic recovery on the same paths: 74).
    assert survivors[True] >= survivors[False] + 5, survivors
    lossless = Scenario.from_toml(Path(__file__).parent.parent / "experiments" / "compare" / "s2.toml").resolve(tmp_path)
    fct = {}
    for only_new in (False, True):
        sc = lossless.model_copy(
            update={"transport": lossless.transport.model_copy(update={"ece_only_on_new_acks": only_new})}
        )
        fct[only_new] = slacknet.run(sc).records["fct_ps"].tolist()
    assert fct[True] == fct[False]
    with pytest.raises(ValueError, match="ece_only_on_new_acks"):
        slacknet.DctcpTransport(ece_only_on_new_acks="yes")  # type: ignore[arg-type]


def test_unknown_profile_is_a_spec_error():
    with pytest.raises(slacknet.SpecError) as ei:
        slacknet._native.profile_defaults("ns4")
    assert ei.value.key == "profile"


def _netapprox_queues(mtu: int, buffer: int) -> list[slacknet.QueueSpec]:
    """``netapprox_slack`` written out: queue 0 marks at 65 MTU and holds the buffer minus
    28 MTU; queue k (1..7) holds 8 - k MTU."""
    return [slacknet.QueueSpec(ecn_threshold_bytes=65 * mtu, cap_bytes=buffer - 28 * mtu)] + [
        slacknet.QueueSpec(cap_bytes=(8 - k) * mtu) for k in range(1, 8)
    ]


def test_netapprox_slack_preset_is_expanded_by_rust(tmp_path: Path) -> None:
    topo = slacknet.FatTreeTopology(k=4, rate_gbps=10)
    sc = Scenario(topology=topo, switch=slacknet.SwitchSpec(buffer_bytes=1_500_000, queues="netapprox_slack"))
    assert json.loads(sc.to_json())["switch"]["queues"] == "netapprox_slack"
    with pytest.raises(ValueError, match="resolve"):
        sc.switch.queue_list()
    r = sc.resolve(tmp_path)
    assert r.switch.queues == _netapprox_queues(1500, 1_500_000)
    assert r.switch.queue_list()[0].cap_bytes == 1_458_000
    assert isinstance(r.switch.admission, slacknet.CompleteSharing)
    assert r.resolve(tmp_path) == r
    # Jumbo frames: the MTU is the transport's full packet; an admission policy given is kept.
    jumbo = sc.model_copy(
        update={
            "transport": slacknet.DctcpTransport(mss_bytes=8960),
            "switch": slacknet.SwitchSpec(buffer_bytes=1_500_000, queues="netapprox_slack", admission=slacknet.LongestQueueDrop()),
        }
    ).resolve(tmp_path)
    assert jumbo.switch.queues == _netapprox_queues(9000, 1_500_000)
    assert isinstance(jumbo.switch.admission, slacknet.LongestQueueDrop)
    # From TOML, the same.
    toml = MINIMAL_FAT_TREE + '[switch]\nbuffer_bytes = 1500000\nqueues = "netapprox_slack"\n'
    assert Scenario.from_toml_text(toml, tmp_path) == r


def test_netapprox_slack_errors_name_switch_queues(tmp_path: Path) -> None:
    topo = slacknet.FatTreeTopology(k=4, rate_gbps=10)
    # Python knows the preset names; Rust lists the same ones.
    with pytest.raises(pydantic.ValidationError):
        slacknet.SwitchSpec(queues="netapprox")
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario.from_toml_text(MINIMAL_FAT_TREE + '[switch]\nbuffer_bytes = 1500000\nqueues = "netapprox"\n', tmp_path)
    assert ei.value.key == "switch.queues" and ei.value.value == '"netapprox"'
    assert all(f'"{name}"' in ei.value.message for name in slacknet.QUEUE_PRESETS)
    assert slacknet.QUEUE_PRESETS == ("netapprox_slack",)
    # Without one buffer size for every switch, Rust refuses and says how to fix it.
    for switch in (
        slacknet.SwitchSpec(queues="netapprox_slack"),
        slacknet.SwitchSpec(queues="netapprox_slack", buffer_per_port_per_gbps=5120),
    ):
        with pytest.raises(slacknet.SpecError) as ei:
            Scenario(topology=topo, switch=switch).resolve(tmp_path)
        assert ei.value.key == "switch.queues" and ei.value.value == '"netapprox_slack"'
        assert "set switch.buffer_bytes, e.g. 1500000" in ei.value.message


def test_prio_schedule_round_trips_and_rust_checks_it(tmp_path: Path) -> None:
    topo = slacknet.FatTreeTopology(k=4, rate_gbps=10)
    wl = slacknet.PoissonWorkload(cdf="websearch", load=0.1, duration_ms=1, prio=4, prio_schedule=[(0, 3), (590.5, 2)])
    inc = slacknet.IncastWorkload(query_rate_per_host=10, fan_in=2, burst_bytes=2000, duration_ms=1, prio_schedule=[(100, 6)])
    r = Scenario(topology=topo, workload=[wl, inc]).resolve(tmp_path)
    assert r.workload[0] == wl and r.workload[1] == inc
    assert json.loads(r.to_json())["workload"][0]["prio_schedule"] == [[0.0, 3], [590.5, 2]]
    # Classes are 0..255 in Python too; Rust checks the times.
    with pytest.raises(pydantic.ValidationError):
        slacknet.PoissonWorkload(cdf="websearch", load=0.1, duration_ms=1, prio_schedule=[(0, 256)])
    bad = wl.model_copy(update={"prio_schedule": [(100, 3), (100, 2)]})
    with pytest.raises(slacknet.SpecError) as ei:
        Scenario(topology=topo, workload=[bad]).resolve(tmp_path)
    assert ei.value.key == "workload[0].prio_schedule[1]"
    assert "strictly increasing" in ei.value.message


@pytest.mark.parametrize(
    ("switch", "transport", "key", "fix"),
    [
        ("", 'kind = "expresspass"', "transport.kind", "switch.credit_queue_pkts"),
        ("credit_queue_pkts = 8", 'kind = "aeolus"', "transport.kind", "switch.selective_drop_bytes"),
        ("credit_queue_pkts = 0", 'kind = "expresspass"', "switch.credit_queue_pkts", "between 1 and"),
        ("credit_queue_pkts = 8", 'kind = "expresspass"\nunscheduled_bytes = 1000', "transport.unscheduled_bytes", "aeolus"),
        ("credit_queue_pkts = 8\nselective_drop_bytes = 8000", 'kind = "aeolus"\ntarget_loss = 1.5', "transport.target_loss", "(0, 1)"),
        ("credit_queue_pkts = 8\nselective_drop_bytes = 8000", 'kind = "aeolus"\nw_min = 0.9', "transport.w_min", "w_max"),
        ("credit_queue_pkts = 8\nselective_drop_bytes = 8000", 'kind = "aeolus"', "routing.mode", "symmetric_ecmp"),
    ],
)
def test_expresspass_and_aeolus_errors_name_key_value_and_fix(
    switch: str, transport: str, key: str, fix: str, tmp_path: Path
) -> None:
    routing = '[routing]\nmode = "symmetric_ecmp"\n' if key != "routing.mode" else ""
    text = MINIMAL_LEAF_SPINE + f"\n{routing}[switch]\n{switch}\n\n[transport]\n{transport}\n"
    with pytest.raises(slacknet.SpecError) as e:
        _native.resolve_toml(text, str(tmp_path))
    assert key in str(e.value) and fix in str(e.value), str(e.value)


def test_aeolus_defaults_mirror_rust(tmp_path: Path) -> None:
    sc = _python_side(AEOLUS)
    assert isinstance(sc.transport, slacknet.AeolusTransport)
    assert (sc.transport.mss_bytes, sc.transport.header_bytes, sc.transport.unscheduled_bytes) == (1454, 84, None)
    assert (sc.switch.credit_queue_pkts, sc.switch.selective_drop_bytes) == (8, 8000)
    with pytest.raises(pydantic.ValidationError):
        slacknet.ExpressPassTransport.model_validate({"kind": "expresspass", "unscheduled_bytes": 1})
