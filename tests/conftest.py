"""Shared fixtures: paths and tiny scenarios (each runs in well under a second)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

import slacknet

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.toml"))
#: Every committed scenario file: examples and experiment specs (sweep files, which name a
#: `base` scenario and axes, and reproduction descriptions, `reproduce.toml`, are not).
SCENARIO_FILES = EXAMPLES + sorted(
    p
    for p in (REPO / "experiments").glob("**/*.toml")
    if "[[axis]]" not in p.read_text(encoding="utf-8") and p.name != "reproduce.toml"
)
#: Every committed reproduction description.
DESCRIPTION_FILES = sorted((REPO / "experiments").glob("*/reproduce.toml"))
#: Every committed sweep file.
SWEEP_FILES = sorted(
    p for p in (REPO / "experiments").glob("**/*.toml") if "[[axis]]" in p.read_text(encoding="utf-8")
)

#: 8 hosts, random (seeded) Poisson traffic and one incast workload: exercises every table.
TINY_TOML = """
name = "tiny"
seed = 7

[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
host_rate_gbps = 10.0
fabric_rate_gbps = 10.0

[[workload]]
kind = "poisson"
cdf = "fb_hadoop"
load = 0.3
duration_ms = 2.0

[[workload]]
kind = "incast"
query_rate_per_host = 500.0
fan_in = 4
burst_bytes = 200000
duration_ms = 2.0
"""


#: A 2-leaf, 4-host leaf-spine without a workload (each test adds its own).
SMALL_NET = """
name = "small"

[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 2
spines = 1
host_rate_gbps = 10.0
fabric_rate_gbps = 10.0
"""


#: 3 DCTCP senders into one receiver behind one switch, with time series every 5 us.
SERIES_TOML = """
name = "series"

[topology]
kind = "leaf_spine"
leaves = 1
hosts_per_leaf = 4
spines = 0
host_rate_gbps = 10.0
fabric_rate_gbps = 10.0

[switch]
buffer_bytes = 2000000
queues = [{ ecn_threshold_bytes = 30000 }]

[[workload]]
kind = "flows"
flows = [
  { src = 1, dst = 0, size_bytes = 1000000 },
  { src = 2, dst = 0, size_bytes = 500000 },
  { src = 3, dst = 0, size_bytes = 200000, start_ns = 100000 },
]

[run.timeseries]
interval_us = 5.0
"""


@pytest.fixture(scope="session")
def series_results() -> slacknet.Results:
    return slacknet.run(slacknet.Scenario.from_toml_text(SERIES_TOML))


@pytest.fixture
def tiny_scenario() -> slacknet.Scenario:
    return slacknet.Scenario.from_toml_text(TINY_TOML)


@pytest.fixture
def tiny_toml(tmp_path: Path) -> Path:
    p = tmp_path / "tiny.toml"
    p.write_text(TINY_TOML)
    return p


@pytest.fixture(scope="session")
def tiny_results() -> slacknet.Results:
    return slacknet.run(slacknet.Scenario.from_toml_text(TINY_TOML))


def flow_list_scenario(tmp_path: Path, flows_text: str, name: str) -> slacknet.Scenario:
    """The peer-comparison tests' scenario: a 2-leaf, 32-host, 4-spine leaf-spine at 10 Gbit/s
    (3 us per hop, ns-3-compatible profile, flow-index routing) replaying `flows_text` (the
    format of `shared/data/peer-bench/flows_*.txt`) for 50 ms."""
    flows = tmp_path / "flows.txt"
    flows.write_text(flows_text)
    toml = f"""
name = "{name}"
profile = "ns3_compat"
[routing]
mode = "flow_index"
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 16
spines = 4
host_rate_gbps = 10
fabric_rate_gbps = 10
host_delay_ns = 3000
fabric_delay_ns = 3000
[[workload]]
kind = "flow_list"
path = "{flows}"
[run]
stop_ms = 50
"""
    return slacknet.Scenario.from_toml_text(toml, tmp_path)


def load_script(name: str, path: Path) -> ModuleType:
    """A script that is not a package module (a peer runner, a bench script) loaded as the
    module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
