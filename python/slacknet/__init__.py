"""slacknet: a fast, deterministic packet-level datacenter network simulator.

The simulator is written in Rust (``slacknet._native``); this package holds the user-facing
parts: scenario models (:mod:`slacknet.config`), :func:`run`, :class:`Results` as pandas
DataFrames, summaries (:mod:`slacknet.analysis`), plots (:mod:`slacknet.plot`) and the
``slacknet`` command line (:mod:`slacknet.cli`). The real transport over UDP is
:mod:`slacknet.net`, and approximate analytics on it (tables sent under an error bound,
estimates with intervals) :mod:`slacknet.approx`, gradient aggregation :mod:`slacknet.collective`
and its PyTorch hook :mod:`slacknet.torch` (needs PyTorch, which is not a dependency).

>>> import slacknet
>>> res = slacknet.run("examples/fat_tree_k4.toml", seed=2)   # doctest: +SKIP
>>> res.records[["size_bytes", "fct_us", "slowdown"]].describe()  # doctest: +SKIP
"""

from __future__ import annotations

from importlib import metadata as _metadata

from . import _native
from ._native import SimError, SpecError
from .config import (
    MAX_QUEUES,
    QUEUE_PRESETS,
    Admission,
    CompleteSharing,
    DynamicThresholds,
    FatTreeTopology,
    FlowEntry,
    FlowListWorkload,
    FlowsWorkload,
    ClosedLoopWorkload,
    BarrierWorkload,
    RelayWorkload,
    TrainingWorkload,
    ApproxGroup,
    ApproxJobsWorkload,
    AtpTransport,
    ExpressPassTransport,
    AeolusTransport,
    PfabricTransport,
    MltTransport,
    HostSpec,
    IncastWorkload,
    LeafSpineTopology,
    PoissonWorkload,
    QueueSpec,
    QueuePreset,
    RoutingSpec,
    RunSpec,
    TimeseriesSpec,
    Scenario,
    StaticPartitioning,
    LongestQueueDrop,
    Harmonic,
    ActiveBufferManagement,
    FollowLqd,
    Credence,
    Oracle,
    ForestOracle,
    AlwaysAcceptOracle,
    AlwaysDropOracle,
    FlipOracle,
    SwitchSpec,
    Topology,
    TransportSpec,
    DctcpTransport,
    NewRenoTransport,
    PowerTcpTransport,
    UdpTransport,
    Workload,
    default_scenario_toml,
    load_scenario,
)


def _version() -> str:
    try:
        return _metadata.version("slacknet")
    except _metadata.PackageNotFoundError:
        return _native.version()


__version__: str = _version()

# Imported after __version__: results records it in summary.json.
from .results import Results, ResultsError  # noqa: E402
from .sim import run, trace_flow  # noqa: E402

__all__ = [
    "__version__",
    "run",
    "trace_flow",
    "load_scenario",
    "default_scenario_toml",
    "Results",
    "ResultsError",
    "SpecError",
    "SimError",
    "Scenario",
    "Topology",
    "LeafSpineTopology",
    "FatTreeTopology",
    "RoutingSpec",
    "SwitchSpec",
    "QueueSpec",
    "QueuePreset",
    "QUEUE_PRESETS",
    "Admission",
    "CompleteSharing",
    "DynamicThresholds",
    "StaticPartitioning",
    "LongestQueueDrop",
    "Harmonic",
    "ActiveBufferManagement",
    "FollowLqd",
    "Credence",
    "Oracle",
    "ForestOracle",
    "AlwaysAcceptOracle",
    "AlwaysDropOracle",
    "FlipOracle",
    "HostSpec",
    "TransportSpec",
    "DctcpTransport",
    "NewRenoTransport",
    "PowerTcpTransport",
    "UdpTransport",
    "Workload",
    "PoissonWorkload",
    "IncastWorkload",
    "FlowListWorkload",
    "FlowsWorkload",
    "ClosedLoopWorkload",
    "BarrierWorkload",
    "RelayWorkload",
    "TrainingWorkload",
    "ApproxGroup",
    "ApproxJobsWorkload",
    "AtpTransport",
    "ExpressPassTransport",
    "AeolusTransport",
    "PfabricTransport",
    "MltTransport",
    "FlowEntry",
    "RunSpec",
    "TimeseriesSpec",
    "MAX_QUEUES",
]
