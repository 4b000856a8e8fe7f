"""Scenario models: pydantic mirrors of the Rust ``sim::Spec`` schema (``crates/sim/src/spec.rs``).

Rust owns the schema, the validation and the error messages. These models exist so that Python
users can build, inspect and modify scenarios with types and completion, and so that results
carry a typed copy of the scenario they came from. Field names, defaults and the unknown-key
policy (``extra="forbid"``) match the Rust structs exactly; ``tests/test_config.py`` checks this by
round-tripping every committed example through both sides.

Loading always goes through Rust: :meth:`Scenario.from_toml` sends the TOML *text* to
``_native.resolve_toml``, which parses, validates and fills every default (applying the
scenario's ``profile`` beneath its keys), and the resolved JSON is then read into these models.
A scenario built in Python is validated by Rust the same way (:meth:`Scenario.resolve`); its
``to_json`` carries only the keys that were set, so a profile applies beneath them there too.
Python never merges profiles or checks values itself: Rust owns that.

``None`` means "absent": optional keys that are ``None`` are left out of :meth:`Scenario.to_json`,
as Rust leaves them out of its JSON (see :class:`QueueSpec` for the one key where that matters).
"""

from __future__ import annotations

import json
import numbers
import errno
import os
import stat
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from . import _native
from ._native import SpecError

__all__ = [
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
    "DEFAULT_BASE_RTT_US",
    "HostSpec",
    "TransportSpec",
    "DctcpTransport",
    "NewRenoTransport",
    "PowerTcpTransport",
    "UdpTransport",
    "ExpressPassTransport",
    "AeolusTransport",
    "Workload",
    "PoissonWorkload",
    "IncastWorkload",
    "FlowListWorkload",
    "FlowsWorkload",
    "FlowEntry",
    "ClosedLoopWorkload",
    "BarrierWorkload",
    "RelayWorkload",
    "TrainingWorkload",
    "ApproxGroup",
    "ApproxJobsWorkload",
    "AtpTransport",
    "PfabricTransport",
    "MltTransport",
    "RunSpec",
    "TimeseriesSpec",
    "MAX_QUEUES",
    "DEFAULT_ECN_THRESHOLD_BYTES",
    "default_scenario_toml",
    "load_scenario",
    "spec_error",
]

#: The most queues an egress port supports (``sim::spec::MAX_QUEUES``).
MAX_QUEUES = 8
#: Default DCTCP marking threshold: 65 full-size packets (DCTCP paper §3.4).
DEFAULT_ECN_THRESHOLD_BYTES = 65 * 1500
#: Base RTT of ABM and Credence when neither the scenario nor the simulator gives one
#: (``sim::spec::DEFAULT_BASE_RTT_US``: Credence's evaluation topology, §4.1).
DEFAULT_BASE_RTT_US = 25.2



def not_a_number(v: Any, what: str, example: str) -> Any:
    """Refuse what pydantic's lax numbers would take for a number although a file could not
    give it as one: a boolean (``True`` as 1: ``leaves = true`` ran one leaf) and a numeric
    string (``"2"``, ``"0.5"``, ``"inf"``; a TOML file's ``leaves = "2"`` is refused), each with
    its fix (``what`` the number is, ``example`` what to give instead of a boolean). Any other
    string gets pydantic's own "not a valid number"; a numpy number, which users pass, stays
    welcome."""
    if isinstance(v, bool):
        raise ValueError(f"a boolean is not a {what}: give {example}")
    if isinstance(v, str):
        try:
            float(v)
        except ValueError:
            return v
        raise ValueError(f"a string is not a {what}: give the number itself, {v} without quotes")
    return v


def _not_bool(v: Any) -> Any:
    return not_a_number(v, "count", "a whole number")


U64 = Annotated[int, BeforeValidator(_not_bool), Field(ge=0, le=2**64 - 1)]
U32 = Annotated[int, BeforeValidator(_not_bool), Field(ge=0, le=2**32 - 1)]
U8 = Annotated[int, BeforeValidator(_not_bool), Field(ge=0, le=255)]


def _not_bool_number(v: Any) -> Any:
    # ``load = True`` in a dict ran at load 1; Rust refuses it in a file.
    return not_a_number(v, "number", "one, e.g. 0.5")


#: Every float of the scenario models (ints and numpy numbers accepted, booleans not).
F64 = Annotated[float, BeforeValidator(_not_bool_number)]


def _only_bool(v: Any) -> Any:
    """Take only a boolean (a numpy one included) where a switch belongs: pydantic's lax
    booleans read ``"yes"``, ``"off"``, ``1`` and ``0`` as switches (``tail_probe="no"`` is
    false but ``tail_probe="nope"`` an error; Rust refuses all of them in a file)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    raise ValueError(f"{v!r} is not a boolean: give true or false")


#: Every switch of the scenario models: ``True``/``False`` (or a numpy boolean), nothing else.
Bool = Annotated[bool, BeforeValidator(_only_bool)]


def is_seed(v: Any) -> bool:
    """Whether ``v`` is a seed (``Scenario.seed``'s rule): a whole number from 0 to 2^64 - 1,
    a numpy integer included, a boolean or a float not."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) and 0 <= int(v) < 2**64


class _Model(BaseModel):
    # CORRECTNESS: no NaN or infinity in any float: JSON has neither, so they would be written
    # as `null`, which Rust reads as "absent" (an infinite stop time ran with no stop time).
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


# --- topology -------------------------------------------------------------------------------


class LeafSpineTopology(_Model):
    """Two-tier leaf-spine. Oversubscription follows from the numbers:
    ``hosts_per_leaf * host_rate / (spines * links_per_spine * fabric_rate)``."""

    kind: Literal["leaf_spine"] = "leaf_spine"
    leaves: U32
    hosts_per_leaf: U32
    spines: U32
    links_per_spine: U32 = 1
    host_rate_gbps: F64
    fabric_rate_gbps: F64
    host_delay_ns: U64 = 1000
    fabric_delay_ns: U64 = 1000


class FatTreeTopology(_Model):
    """Three-tier k-ary fat-tree: k pods, (k/2)^2 cores, k^3/4 hosts; one rate and delay."""

    kind: Literal["fat_tree"] = "fat_tree"
    k: U32
    rate_gbps: F64
    delay_ns: U64 = 1000


Topology = Annotated[Union[LeafSpineTopology, FatTreeTopology], Field(discriminator="kind")]


# --- routing, switch, host ------------------------------------------------------------------


class RoutingSpec(_Model):
    """Path selection among equal-cost paths: per-flow ``ecmp`` (stable hash), per-packet
    ``spray``, ``flow_index`` (flow index mod paths, both directions; reproducible by other
    simulators for A/B comparisons), or ``symmetric_ecmp`` (a per-flow hash, the same member
    index at every switch: both directions take one path, as ExpressPass's credits need)."""

    mode: Literal["ecmp", "spray", "flow_index", "symmetric_ecmp"] = "ecmp"
    hash_seed: U64 = 0


class QueueSpec(_Model):
    """One queue of an egress port. Without ``ecn_threshold_bytes`` the queue never marks.
    (Without a ``queues`` key the switch has one queue marking at
    :data:`DEFAULT_ECN_THRESHOLD_BYTES`.)"""

    ecn_threshold_bytes: U64 | None = None
    cap_bytes: U64 | None = None
    dt_alpha: F64 = 1.0


#: A named queue configuration ``switch.queues`` may give instead of a list
#: (``sim::spec::QueuePreset``). Rust expands it into the explicit list when it resolves the
#: scenario, so a resolved scenario always holds the list. ``"netapprox_slack"``: NetApprox's 8
#: strict-priority queues (§5.2, §7.1); queue 0 marks ECN at 65 MTU and holds the buffer minus
#: 28 MTU, queue ``k`` in 1..7 holds ``8 - k`` MTU and drops the rest; needs
#: ``switch.buffer_bytes``; complete sharing unless the scenario sets ``admission``.
QueuePreset = Literal["netapprox_slack"]
#: Every queue preset name.
QUEUE_PRESETS: tuple[str, ...] = get_args(QueuePreset)


class CompleteSharing(_Model):
    """Accept while the shared buffer has room."""

    policy: Literal["complete_sharing"] = "complete_sharing"


class DynamicThresholds(_Model):
    """Dynamic Thresholds (Choudhury and Hahne) with per-queue ``dt_alpha``."""

    policy: Literal["dynamic_thresholds"] = "dynamic_thresholds"


class LongestQueueDrop(_Model):
    """Longest Queue Drop: accept everything; when full, push out from the tail of the longest
    queue."""

    policy: Literal["lqd"] = "lqd"


class StaticPartitioning(_Model):
    """Each egress port owns ``port_bytes`` (default: the buffer / ports) bytes. With
    ``port_bytes`` and no buffer key, a switch's buffer is ports x ``port_bytes``."""

    policy: Literal["static"] = "static"
    port_bytes: U64 | None = None


class Harmonic(_Model):
    """Harmonic (Kesselman and Mansour): with queues sorted by length, the ``i`` longest
    together hold at most ``B * H_i / H_N`` (``H_i`` the harmonic numbers)."""

    policy: Literal["harmonic"] = "harmonic"


class ActiveBufferManagement(_Model):
    """ABM (Addanki et al., SIGCOMM'22): queue ``i`` of class ``p`` may hold
    ``alpha_p / n_p * (B - Q) * mu_i / b``, with ``alpha_p`` the class's ``dt_alpha``,
    ``n_p`` its congested queues (longer than ``congested_bytes``) and ``mu_i / b`` the
    queue's normalized dequeue rate, both refreshed once per ``base_rtt_us`` (absent: the
    network's base RTT, else :data:`DEFAULT_BASE_RTT_US`). First-RTT packets use
    ``alpha_first_rtt``: those starting in a flow's first ``first_rtt_bytes`` (absent: one
    round trip of propagation at the host link rate, the Credence artifact's ``RTTBytes``, so
    fewer bytes as the RTT falls: the paper's "ABM is sensitive to RTT")."""

    policy: Literal["abm"] = "abm"
    alpha_first_rtt: F64 = 64.0
    base_rtt_us: F64 | None = None
    congested_bytes: U64 = 20 * 1400
    first_rtt_bytes: U64 | None = None


class FollowLqd(_Model):
    """FollowLQD (Credence, Algorithm 2): drop-tail that follows LQD's queue lengths as
    thresholds, without predictions."""

    policy: Literal["follow_lqd"] = "follow_lqd"


class ForestOracle(_Model):
    """A scikit-learn random forest exported to JSON (format ``slacknet-forest/1``, see
    ``crates/sim/src/credence/forest.rs``); ``path`` is relative to the scenario's folder, or
    ``"default"``: the built-in model trained on ``experiments/credence/train.toml``."""

    kind: Literal["forest"] = "forest"
    path: str = "default"


class AlwaysAcceptOracle(_Model):
    """Never predicts a drop."""

    kind: Literal["always_accept"] = "always_accept"


class AlwaysDropOracle(_Model):
    """Always predicts a drop."""

    kind: Literal["always_drop"] = "always_drop"


class FlipOracle(_Model):
    """Flips ``inner``'s predictions with probability ``p`` (seeded by ``seed``, absent: the
    scenario seed; each switch draws its own stream)."""

    kind: Literal["flip"] = "flip"
    inner: Oracle
    p: F64
    seed: U64 | None = None


Oracle = Annotated[
    Union[ForestOracle, AlwaysAcceptOracle, AlwaysDropOracle, FlipOracle],
    Field(discriminator="kind"),
]
FlipOracle.model_rebuild()


class Credence(_Model):
    """Credence (NSDI'24, Algorithm 1): FollowLQD's thresholds, a safeguard that accepts while
    every queue is below ``B / N``, and a drop ``oracle`` consulted when the thresholds allow.
    ``base_rtt_us`` is the averaging time of the oracle's features (absent: as for ABM). The
    default oracle is the built-in random forest."""

    policy: Literal["credence"] = "credence"
    oracle: Oracle = Field(default_factory=lambda: ForestOracle())
    base_rtt_us: F64 | None = None


Admission = Annotated[
    Union[
        CompleteSharing,
        DynamicThresholds,
        StaticPartitioning,
        LongestQueueDrop,
        Harmonic,
        ActiveBufferManagement,
        FollowLqd,
        Credence,
    ],
    Field(discriminator="policy"),
]


class SwitchSpec(_Model):
    """One shared buffer per switch, up to :data:`MAX_QUEUES` queues per egress port.

    Give at most one of ``buffer_bytes`` and ``buffer_per_port_per_gbps`` (neither: 5120 B per
    port per Gbps). ``queues`` is a list of :class:`QueueSpec`, or a :data:`QueuePreset` name
    that Rust expands into the list when it resolves the scenario (Python does not expand it:
    call :meth:`Scenario.resolve`)."""

    buffer_bytes: U64 | None = None
    buffer_per_port_per_gbps: F64 | None = None
    scheduler: Literal["strict_priority", "round_robin", "pfabric"] = "strict_priority"
    admission: Admission = Field(default_factory=DynamicThresholds)
    queues: list[QueueSpec] | QueuePreset = Field(
        default_factory=lambda: [QueueSpec(ecn_threshold_bytes=DEFAULT_ECN_THRESHOLD_BYTES)]
    )
    #: ExpressPass's per-port credit queue (§3.1): credits wait apart from data, at most this
    #: many, paced at one per credit + largest-packet serialization (~5% of the link). Needed
    #: by ``expresspass`` and ``aeolus`` transports (8 is ExpressPass's choice).
    credit_queue_pkts: U32 | None = None
    #: Aeolus's selective dropping (§3.2): unscheduled packets are dropped while their queue
    #: holds more than this many bytes. Needed by the ``aeolus`` transport (e.g. 8000).
    selective_drop_bytes: U64 | None = None

    def queue_list(self) -> list[QueueSpec]:
        """The queues as a list: those of a resolved scenario (raises ``ValueError`` while
        ``queues`` is still a preset name; :meth:`Scenario.resolve` expands it)."""
        if isinstance(self.queues, str):
            raise ValueError(f"switch.queues = {self.queues!r} is a preset: resolve the scenario first")
        return self.queues


class HostSpec(_Model):
    """Host NIC queue: byte cap (absent: unbounded), ECN threshold (absent: the switches'
    first-queue threshold), whether NICs mark at all (default yes), how the NIC orders its
    flows' packets (``"per_flow_rr"``, the default: one FIFO per flow, deficit round robin
    among them, as Linux's ``fq``; ``"fifo"``; or ``"pfabric"``, pFabric's priority order) and
    TCP Small Queues backpressure: a sender
    is not asked for another packet while its bytes waiting at its NIC plus one full packet
    would exceed ``tsq_pkts`` full packets (``mss_bytes + header_bytes`` each; default 2;
    ``0`` turns it off). The ``ns3_compat`` profile sets ``"fifo"`` and ``0``."""

    nic_buffer_bytes: U64 | None = None
    ecn_threshold_bytes: U64 | None = None
    ecn_marking: Bool = True
    scheduler: Literal["fifo", "per_flow_rr", "pfabric"] = "per_flow_rr"
    tsq_pkts: U32 = 2


class _TcpKeys(_Model):
    """The reliable byte stream's keys, shared by every TCP kind (``sim::spec::TcpKeys``)."""

    mss_bytes: U32 = 1460
    header_bytes: U32 = 40
    init_cwnd_pkts: U32 = 10
    init_cwnd_covers_transfer: Bool = False
    ack_prio: U8 | None = None
    min_rto_us: U64 = 10_000
    init_rto_us: U64 = 10_000
    max_rto_us: U64 = 1_000_000
    max_retries: U32 = 15
    dupack_threshold: U32 = 3
    limited_transmit: Bool = False
    sack: Bool = False
    rack_tlp: Bool = False
    prr: Bool = False
    slow_start: Bool = True
    delayed_ack_segments: U32 = 0
    delayed_ack_timeout_us: U64 = 40
    handshake: Bool = False


class DctcpTransport(_TcpKeys):
    """DCTCP: TCP with DCTCP's window law (EWMA gain ``g``, initial ``init_alpha``); a loss
    halves the window (``loss_response = "halve"``, RFC 8257 §3.5, Linux) or cuts it as a mark
    does (``"alpha"``, ns-3.44's ``TcpDctcp``; the ``ns3_compat`` profile's). A loss found while
    the window is being cut for ECN marks starts fast recovery (``loss_in_cwr = "recovery"``,
    RFC 6675, Linux) or, as in ns-3.44's ``CA_CWR`` (``"ns3"``), no recovery: the SACK
    scoreboard's lost segments are resent within cwnd - pipe, a resend lost again waits for the
    timer, and an ECE during fast recovery ends it with an ECN cut. ``ece_only_on_new_acks``
    reads the echo only from ACKs that advance ``SND.UNA``, as ns-3.44's ``TcpSocketBase`` does
    (the ``ns3_compat`` profile's), where RFC 3168 and Linux also cut on a duplicate ACK's."""

    kind: Literal["dctcp"] = "dctcp"
    g: F64 = 1.0 / 16.0
    init_alpha: F64 = 1.0
    loss_response: Literal["halve", "alpha"] = "halve"
    loss_in_cwr: Literal["recovery", "ns3"] = "recovery"
    ece_only_on_new_acks: Bool = False


class NewRenoTransport(_TcpKeys):
    """TCP NewReno (loss-based, no ECN)."""

    kind: Literal["newreno"] = "newreno"


class PowerTcpTransport(_TcpKeys):
    """PowerTCP on in-band telemetry: EWMA weight ``gamma``, additive increase ``beta_bytes``
    (absent: the host BDP / 10). Base RTT and NIC rate come from the topology."""

    kind: Literal["power_tcp"] = "power_tcp"
    gamma: F64 = 0.9
    beta_bytes: U64 | None = None


class UdpTransport(_Model):
    """Unreliable UDP at line rate or ``rate_gbps``."""

    kind: Literal["udp"] = "udp"
    mss_bytes: U32 = 1460
    header_bytes: U32 = 40
    rate_gbps: F64 | None = None


class AtpTransport(_Model):
    """ATP, NetApprox's approximate transport (Xia et al.): a plain flow is a job of
    ``message_bytes`` messages (absent: one packet each) with sampling rate ``msr``; the
    ``approx_jobs`` workload starts jobs of its own. ``variant`` picks one of the paper's
    ablations (``full``, ``base``, ``rc``, ``mrdf``, ``fix_tlr``, ``fix_prio``); the four
    mechanism keys (``rate_control``, ``dynamic_tlr``, ``dynamic_prio``, ``sched``) override it
    one by one. ``init_rtt_us`` absent: the network's base RTT."""

    kind: Literal["atp"] = "atp"
    mss_bytes: U32 = 1424
    header_bytes: U32 = 76
    variant: Literal["full", "base", "rc", "mrdf", "fix_tlr", "fix_prio"] = "full"
    rate_control: Bool | None = None
    dynamic_tlr: Bool | None = None
    dynamic_prio: Bool | None = None
    sched: Literal["mrdf", "in_order", "new_first"] | None = None
    on_loss: Literal["give_up", "resend"] = "give_up"
    m: F64 = 0.125
    init_rtt_us: F64 | None = None
    classes: U8 = 8
    ack_prio: U8 = 0
    message_bytes: U64 | None = None
    msr: F64 = 1.0
    max_silent_epochs: U32 = 10_000
    rate_gbps: F64 | None = None


class _ExpressPassKeys(_Model):
    mss_bytes: U32 = 1454
    header_bytes: U32 = 84
    target_loss: F64 = 0.125
    w_init: F64 = 1.0 / 16.0
    w_min: F64 = 0.01
    w_max: F64 = 0.5
    init_rate: F64 = 1.0 / 16.0
    init_rtt_us: F64 | None = None
    rto_us: U64 = 1000
    max_retries: U32 = 15


class ExpressPassTransport(_ExpressPassKeys):
    """ExpressPass (Cho et al., SIGCOMM'17): the receiver paces credits, the sender answers each
    with one data packet, Algorithm 1 adapts the credit rate to credit loss. 84-byte credits
    and 1538-byte data frames by default. Needs ``switch.credit_queue_pkts``;
    ``init_rtt_us`` absent: the network's base RTT."""

    kind: Literal["expresspass"] = "expresspass"


class AeolusTransport(_ExpressPassKeys):
    """Aeolus (Hu et al., SIGCOMM'20) on ExpressPass: ``unscheduled_bytes`` (absent: one BDP)
    leave unscheduled in the first RTT, switches drop them first, a probe finds the lost ones.
    Needs ``switch.credit_queue_pkts`` and ``switch.selective_drop_bytes``."""

    kind: Literal["aeolus"] = "aeolus"
    unscheduled_bytes: U64 | None = None


class PfabricTransport(_Model):
    """pFabric's hosts (Alizadeh et al., SIGCOMM'13 §4.2): each data packet carries its flow's
    remaining size as its priority, for ``switch.scheduler = "pfabric"``; minimal rate control
    (per-packet selective ACKs, additive increase, a fixed RTO that resets the window to one
    packet, probe mode after ``probe_after_timeouts`` timeouts in a row). ``init_cwnd_pkts``
    absent: one BDP of the hosts' links over the network's base RTT; ``rto_us`` absent: three
    base RTTs."""

    kind: Literal["pfabric"] = "pfabric"
    mss_bytes: U32 = 1460
    header_bytes: U32 = 40
    init_cwnd_pkts: U32 | None = None
    max_cwnd_pkts: U32 = 1024
    rto_us: F64 | None = None
    probe_after_timeouts: U32 = 5


class MltTransport(_Model):
    """The bounded-loss transport for distributed ML (Xia et al., APNet'19): a flow of S bytes
    is a message of S / ``value_bytes`` values (4 or 2 bytes each; a packet never splits a
    value and carries its index range); the receiver completes once a fraction
    ``complete_fraction`` of the values arrived and reports the missing index ranges. Losses
    found by duplicate ACKs are resent; losses found only by the retransmission timer (RFC
    6298 over the measured RTT, between ``rto_us`` and ``max_rto_us``) are abandoned while the
    bound allows. The window law ``cc`` is DCTCP's (``g``, ``init_alpha``; the paper's) or
    ``"cubic"`` (RFC 9438, Linux's default TCP law, as the real transport offers for paths
    whose queues drop rather than mark). ``send_order`` is the order of first transmissions:
    ``"shuffled"`` (a random order per message, so the values missing at completion are random
    packets) or ``"index"`` (in order: they are the message's tail). ``tail_probe`` adds a
    tail-loss probe (RFC 8985 §7; not in the paper): two smoothed RTTs without progress send
    one probe, so that a lost tail is found in round trips instead of a timeout. Not reliable
    unless ``complete_fraction = 1``."""

    kind: Literal["mlt"] = "mlt"
    mss_bytes: U32 = 1460
    header_bytes: U32 = 40
    value_bytes: Literal[2, 4] = 4
    complete_fraction: F64 = 0.9
    init_cwnd_pkts: U32 = 10
    cc: Literal["dctcp", "cubic"] = "dctcp"
    g: F64 = 1.0 / 16.0
    init_alpha: F64 = 1.0
    rto_us: U64 = 10_000
    max_rto_us: U64 = 1_000_000
    dupack_threshold: U32 = 3
    send_order: Literal["shuffled", "index"] = "shuffled"
    tail_probe: Bool = False


#: The transport every flow uses: a tagged choice on ``kind``, each with its own keys only.
TransportSpec = Annotated[
    Union[
        DctcpTransport,
        NewRenoTransport,
        PowerTcpTransport,
        UdpTransport,
        AtpTransport,
        PfabricTransport,
        ExpressPassTransport,
        AeolusTransport,
        MltTransport,
    ],
    Field(discriminator="kind"),
]


# --- workload -------------------------------------------------------------------------------


class PoissonWorkload(_Model):
    """Poisson flow arrivals at a target load with sizes from a CDF (a built-in name such as
    ``websearch``, ``fb_hadoop``, ``google_rpc``, or a file path). ``prio_schedule =
    [(t_us, prio), ...]`` changes the class of the flows started from ``t_us`` on (simulated
    time; ``prio`` before the first entry; times strictly increasing); a flow keeps the class
    it started with."""

    kind: Literal["poisson"] = "poisson"
    cdf: str
    load: F64
    load_reference: Literal["host_link", "leaf_uplink"] = "host_link"
    destinations: Literal["uniform", "other_leaf", "permutation"] = "uniform"
    start_ms: F64 = 0.0
    duration_ms: F64
    prio: U8 = 0
    prio_schedule: list[tuple[F64, U8]] | None = None
    transport: TransportSpec | None = None


class IncastWorkload(_Model):
    """Incast queries: each makes ``fan_in`` senders answer with ``burst / fan_in`` bytes.
    ``prio_schedule`` moves the responses of later queries between classes, as for
    :class:`PoissonWorkload`."""

    kind: Literal["incast"] = "incast"
    query_rate_per_host: F64
    fan_in: U32
    burst_bytes: U64 | None = None
    burst_buffer_fraction: F64 | None = None
    senders: Literal["random", "other_leaf"] = "random"
    start_ms: F64 = 0.0
    duration_ms: F64
    prio: U8 = 0
    prio_schedule: list[tuple[F64, U8]] | None = None
    transport: TransportSpec | None = None


class FlowListWorkload(_Model):
    """Replay a flow list file (``id src dst start_s size_bytes incast`` per line)."""

    kind: Literal["flow_list"] = "flow_list"
    path: str
    prio: U8 = 0
    transport: TransportSpec | None = None


class FlowEntry(_Model):
    """One inline flow."""

    src: U32
    dst: U32
    size_bytes: U64
    start_ns: U64 = 0
    prio: U8 = 0
    incast: Bool = False


class FlowsWorkload(_Model):
    """Flows given inline."""

    kind: Literal["flows"] = "flows"
    flows: list[FlowEntry]
    transport: TransportSpec | None = None


class ClosedLoopWorkload(_Model):
    """A closed loop per host pair ``[src, dst]``: the next transfer of ``size_bytes`` starts
    when the previous one is delivered (after ``think_us``), ``count`` transfers each."""

    kind: Literal["closed_loop"] = "closed_loop"
    pairs: list[tuple[U32, U32]]
    size_bytes: U64
    count: U32
    think_us: F64 = 0.0
    prio: U8 = 0
    transport: TransportSpec | None = None


class BarrierWorkload(_Model):
    """Rounds separated by a barrier: compute for ``compute_us``, start every transfer, wait
    for the last; ``rounds`` times (the shape of a training iteration or a shuffle)."""

    kind: Literal["barrier"] = "barrier"
    transfers: list[FlowEntry]
    rounds: U32
    compute_us: F64 = 0.0
    transport: TransportSpec | None = None


class RelayWorkload(_Model):
    """``blocks`` blocks of ``block_bytes`` relayed along ``chain``: each host forwards a block
    to the next once it has it (the shape of a chain broadcast)."""

    kind: Literal["relay"] = "relay"
    chain: list[U32]
    block_bytes: U64
    blocks: U32
    transport: TransportSpec | None = None


class TrainingWorkload(_Model):
    """Data-parallel training (the bounded-loss ML paper, §3.1): ``iterations`` of a compute
    phase (``compute_us``) and the synchronisation of ``model_bytes`` per worker among
    ``workers``, by a parameter server (``pattern = "ps"``, ``server``: push to it, then pull)
    or a ring all-reduce (``"ring"``: 2 (N - 1) chunk steps), with a barrier. One
    ``iteration`` row per iteration in :attr:`slacknet.Results.apps`. ``complete_fraction``
    is the fraction p of every gradient the model needs (``1 - x1``): a bounded-loss transport
    (``kind = "mlt"``) completes this entry's transfers at p instead of its own
    ``complete_fraction``; reliable transports are unchanged. ``job_compute_us`` is the compute
    per iteration the job time (``train_time_us``, the paper's eq. (1)) counts in place of the
    simulated ``compute_us`` (absent: ``compute_us``)."""

    kind: Literal["training"] = "training"
    pattern: Literal["ps", "ring"]
    workers: list[U32]
    server: U32 | None = None
    model_bytes: U64
    iterations: U32
    compute_us: F64 = 0.0
    job_compute_us: F64 | None = None
    start_us: F64 = 0.0
    prio: U8 = 0
    complete_fraction: F64 | None = None
    transport: TransportSpec | None = None


class ApproxGroup(_Model):
    """One group of an ``approx_jobs`` job: its ``share`` of the messages and its ``msr``."""

    share: F64
    msr: F64


class ApproxJobsWorkload(_Model):
    """NetApprox's jobs (§7.1): every sender runs ``jobs_per_host`` jobs of ``messages``
    messages one after another, sizes and gaps from ``trace`` (``fbkv`` or ``fbhd``), each job
    to a random other host (all-to-all) or to ``receiver`` (all-to-one), sent by ``scheme``:
    ``atp`` (over an ATP transport), ``early_send`` or ``sample_send`` (over a reliable kind: a TCP kind, pFabric, ExpressPass or Aeolus) or
    ``udp``. Every job needs ``msr`` of its messages, or has ``groups`` (1 to 8, each a
    ``share`` of the messages with its own ``msr``; the shares sum to 1). One ``job`` row per
    job in :attr:`slacknet.Results.apps`, one row per group of it in
    :attr:`slacknet.Results.groups`."""

    kind: Literal["approx_jobs"] = "approx_jobs"
    trace: Literal["fbkv", "fbhd"]
    scheme: Literal["atp", "early_send", "sample_send", "udp"]
    msr: F64 | None = None
    groups: list[ApproxGroup] | None = None
    messages: U64
    jobs_per_host: U32 = 1
    load: F64 | None = None
    senders: list[U32] | None = None
    receiver: U32 | None = None
    start_us: F64 = 0.0
    think_us: F64 = 0.0
    prio: U8 = 0
    udp_timeout_us: F64 = 1000.0
    transport: TransportSpec | None = None


Workload = Annotated[
    Union[
        PoissonWorkload,
        IncastWorkload,
        FlowListWorkload,
        FlowsWorkload,
        ClosedLoopWorkload,
        BarrierWorkload,
        RelayWorkload,
        TrainingWorkload,
        ApproxJobsWorkload,
    ],
    Field(discriminator="kind"),
]


class TimeseriesSpec(_Model):
    """``[run.timeseries]``: every ``interval_us``, the length of every non-empty queue
    (switch ports and, with ``nics``, host NICs; ``switches`` limits the switches) and the state
    of every transfer in flight (``max_transfers`` keeps the first that many). Absent: off.
    See :attr:`slacknet.Results.queue_series` and :attr:`slacknet.Results.transfer_series`."""

    interval_us: F64
    queues: Bool = True
    transfers: Bool = True
    nics: Bool = True
    switches: list[U32] | None = None
    max_transfers: U64 | None = None


class RunSpec(_Model):
    """Run control: optional stop time, the buffer occupancy sampling period, where a TCP
    flow's completion time is measured (``sender``: ACK of the last byte; ``receiver``: last
    byte received), and the optional time series."""

    stop_ms: F64 | None = None
    sample_interval_us: F64 = 10.0
    fct_at: Literal["sender", "receiver"] = "sender"
    timeseries: TimeseriesSpec | None = None


# --- scenario -------------------------------------------------------------------------------


def spec_error(key: str, value: str | None, message: str) -> SpecError:
    """Build a :class:`SpecError` with the same attributes the native module sets: ``key``
    (the offending key), ``value`` (its value as text, or ``None``) and ``message`` (what is
    wrong); its text is ``"key = value: message"`` (``"key: message"`` without a value). Returns
    the error; the caller raises it."""
    text = f"{key}: {message}" if value is None else f"{key} = {value}: {message}"
    err = SpecError(text)
    err.key = key
    err.value = value
    err.message = message
    return err


class Scenario(_Model):
    """A whole scenario (``sim::Spec``). Load one with :meth:`from_toml` or :meth:`default`,
    or build one in Python; :func:`slacknet.run` runs it."""

    name: str = "scenario"
    seed: U64 = 1
    profile: Literal["default", "ns3_compat"] = "default"
    topology: Topology
    routing: RoutingSpec = Field(default_factory=RoutingSpec)
    switch: SwitchSpec = Field(default_factory=SwitchSpec)
    host: HostSpec = Field(default_factory=HostSpec)
    transport: TransportSpec = Field(default_factory=DctcpTransport)
    workload: list[Workload] = Field(default_factory=list)
    run: RunSpec = Field(default_factory=RunSpec)

    # -- loading (always through Rust) --

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> Scenario:
        """Load, validate and resolve the TOML scenario file ``path``. Relative paths in it (CDF files,
        flow lists) are relative to the file's folder.

        Raises ``FileNotFoundError`` and :class:`SpecError` (naming the key and value)."""
        p = Path(path)
        text = _read_text(p)
        return cls.from_toml_text(text, p.resolve().parent, source=str(p))

    @classmethod
    def from_toml_text(
        cls, text: str, base_dir: str | os.PathLike[str] | None = None, *, source: str = "<toml>"
    ) -> Scenario:
        """Validate and resolve TOML text; relative paths are relative to ``base_dir``
        (default: the working directory). ``source`` names the text in syntax errors.

        Raises :class:`SpecError` (a TOML syntax error, or naming the key and value)."""
        _check_toml_syntax(text, source)
        resolved = _native.resolve_toml(text, _base(base_dir))
        return cls.model_validate_json(resolved)

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> Scenario:
        """Load, validate and resolve the JSON scenario file ``path`` (such as a results
        folder's ``scenario.json``). Relative paths in it are relative to the file's folder.

        Raises ``FileNotFoundError`` and :class:`SpecError` (naming the key and value)."""
        p = Path(path)
        return cls.from_json_text(_read_text(p), p.resolve().parent)

    @classmethod
    def from_json_text(cls, text: str, base_dir: str | os.PathLike[str] | None = None) -> Scenario:
        """Validate and resolve JSON text (the format of :meth:`to_json`); relative paths are
        relative to ``base_dir`` (default: the working directory).

        Raises :class:`SpecError` (naming the key and value)."""
        return cls.model_validate_json(_native.resolve_json(text, _base(base_dir)))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Scenario:
        """Load the scenario file ``path``: ``.json`` as JSON (:meth:`from_json`), anything
        else as TOML (:meth:`from_toml`). Raises what they raise."""
        if Path(path).suffix.lower() == ".json":
            return cls.from_json(path)
        return cls.from_toml(path)

    @classmethod
    def default(cls) -> Scenario:
        """The built-in default scenario (what ``slacknet run`` runs without an argument)."""
        return cls.from_toml_text(default_scenario_toml(), source="<built-in default>")

    # -- output --

    def to_json(self, *, indent: int | None = None) -> str:
        """JSON in the Rust schema; absent (``None``) optional keys are left out. ``indent``
        as in :func:`json.dumps` (default ``None``: one line).

        Under the default profile every key is written (these models' defaults are Rust's,
        as ``tests/test_config.py`` checks). Under another profile, or with a queue preset
        (``switch.queues`` a :data:`QueuePreset` name), only the keys that were given are
        written (all of them for a scenario read from Rust; those its builder set, plus every
        ``kind`` and ``policy`` tag, for one built in Python), so that Rust applies the
        profile's defaults beneath them and expands the preset as it would the same file (a
        preset sets complete sharing unless ``switch.admission`` was given): Python never
        merges profiles or expands presets itself."""
        if self.profile == "default" and not isinstance(self.switch.queues, str):
            return self.model_dump_json(exclude_none=True, indent=indent)
        return json.dumps(_plain(self), indent=indent)

    def resolve(self, base_dir: str | os.PathLike[str] | None = None) -> Scenario:
        """Validate with Rust and return the resolved copy (defaults filled, relative paths
        made absolute against ``base_dir``, default the working directory).

        Raises :class:`SpecError`."""
        return self.from_json_text(self.to_json(), base_dir)

    @property
    def num_hosts(self) -> int:
        """Number of hosts of the topology."""
        t = self.topology
        if isinstance(t, LeafSpineTopology):
            return t.leaves * t.hosts_per_leaf
        return t.k**3 // 4


def _plain(v: Any) -> Any:
    """A model as a plain dict of the keys that were set, plus its union tags
    (``kind``/``policy`` fields typed with a single literal), recursively."""
    if isinstance(v, BaseModel):
        out = {k: _plain(getattr(v, k)) for k in type(v).model_fields if k in v.model_fields_set}
        out = {k: x for k, x in out.items() if x is not None}
        for tag in ("kind", "policy"):
            field = type(v).model_fields.get(tag)
            if field is not None and len(get_args(field.annotation)) == 1:
                out[tag] = getattr(v, tag)
        return out
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def variant_fields(tag: str, value: Any) -> set[str] | None:
    """The keys of the variant of a tagged table (``kind`` or ``policy``) named ``value``, or
    ``None`` if no such variant is known."""
    for union in (Topology, TransportSpec, Workload, Admission, Oracle):
        for member in get_args(get_args(union)[0]):
            field = member.model_fields.get(tag)
            if field is not None and get_args(field.annotation) == (value,):
                return set(member.model_fields)
    return None


def default_scenario_toml() -> str:
    """The built-in default scenario as TOML text."""
    return _native.default_scenario_toml()


def load_scenario(path: str | os.PathLike[str] | None = None) -> Scenario:
    """Load the scenario file ``path`` (TOML, or JSON by suffix, :meth:`Scenario.load`);
    ``None`` gives the built-in default. Raises ``FileNotFoundError`` and :class:`SpecError`
    (naming the key and value)."""
    if path is None:
        return Scenario.default()
    return Scenario.load(path)


def _base(base_dir: str | os.PathLike[str] | None) -> str:
    return str(Path(base_dir) if base_dir is not None else Path.cwd())


def _check_toml_syntax(text: str, source: str) -> None:
    """A TOML syntax error as a :class:`SpecError` naming the file (Rust names the keys)."""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise spec_error(source, None, f"invalid TOML: {e}") from None
    except RecursionError:
        # `tomllib` parses nested arrays and inline tables recursively.
        raise spec_error(source, None, "invalid TOML: arrays or tables nested too deeply") from None


#: The largest scenario file read (bytes): scenarios are a few kB; flow lists and traces are
#: separate files that Rust reads itself.
MAX_SCENARIO_BYTES = 16 * 2**20


def _read_text(p: Path) -> str:
    """A scenario file's text (:func:`read_text_file`, at most :data:`MAX_SCENARIO_BYTES`)."""
    return read_text_file(p, "scenario file", MAX_SCENARIO_BYTES)


class NotRegularFileError(OSError):
    """:func:`read_bounded` found no regular file: ``mode`` is what is there (``st_mode``)."""

    def __init__(self, path: str | os.PathLike[str], mode: int) -> None:
        super().__init__(f"not a regular file: {path}")
        self.mode = mode


class FileTooLargeError(OSError):
    """:func:`read_bounded` found a file larger than its ``limit``."""


def read_bounded(p: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file ``p`` if it holds at most ``limit``. Anything else is
    refused before it is opened (opening a FIFO waits for a writer; a device such as
    ``/dev/zero`` never ends), and again on the open file, which is opened without blocking in
    case the path changed in between; the file is read only up to the bound. Raises
    :class:`NotRegularFileError`, :class:`FileTooLargeError` and what ``os.stat`` raises; each
    caller words them for what it reads."""
    mode = os.stat(p).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(p, mode)
    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(f.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(p, mode)
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(f"larger than {limit} bytes: {p}")
    return data


def read_text_file(p: Path, what: str, limit: int) -> str:
    """The UTF-8 text of the file ``p`` (a ``what``: "scenario file", "sweep file"), a regular
    file of at most ``limit`` bytes (:func:`read_bounded`). Raises ``FileNotFoundError``,
    ``IsADirectoryError``, ``OSError`` and :class:`SpecError` (not UTF-8)."""
    name = os.fspath(p)
    if "\n" in name:  # TOML text where a path belongs (it raised "File name too long")
        raise FileNotFoundError(f"no such {what}: what was given is {name.count(chr(10)) + 1} lines of text, not a "
                                f"path; give the {what}'s path (TOML text goes to Scenario.from_toml_text)")
    try:
        data = read_bounded(p, limit)
    except FileNotFoundError:
        raise FileNotFoundError(f"no such {what}: {p}") from None
    except NotRegularFileError as e:
        if stat.S_ISDIR(e.mode):
            raise IsADirectoryError(f"not a {what} but a folder: {p}") from None
        raise OSError(f"not a {what} but a {_file_kind(e.mode)}: {p}; give the {what}") from None
    except FileTooLargeError:
        size = f"{limit // 2**20} MB" if limit >= 2**20 else f"{limit} bytes"
        raise OSError(f"{what} {p} is larger than {size}, too large to be one; give the {what}") from None
    except OSError as e:
        if e.errno != errno.ENAMETOOLONG:
            raise
        raise FileNotFoundError(f"no such {what}: a path of {len(name)} characters is too long for this system "
                                f"({name[:40]}...)") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise spec_error(str(p), None, f"not UTF-8 text: {e}") from None


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"
