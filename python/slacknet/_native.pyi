"""The native core of slacknet (``crates/py``). Private: use the ``slacknet`` package.

Checked against the compiled module by ``python -m mypy.stubtest slacknet._native``
(``tests/test_stubs.py``).
"""

from collections.abc import Sequence
from typing import Any, final

__all__ = [
    "SpecError",
    "SimError",
    "Simulation",
    "ValidScenario",
    "validate_toml",
    "validate_json",
    "resolve_toml",
    "resolve_json",
    "default_scenario_toml",
    "profile_defaults",
    "credence_figure14",
    "version",
    "engine_sha256",
    "empty_results",
    "coflow_inter",
    "coflowsim_run",
    "coflow_intra",
    "coflow_packet",
    "coflow_shuffle",
    "coflow_broadcast",
    "TransportError",
    "Node",
    "SendHandle",
    "JobHandle",
]

class SpecError(ValueError):
    """The scenario is wrong: a key is unknown, has the wrong type, or its value is out of range."""

    key: str
    """Dotted path of the offending key, such as ``workload[0].load`` (``<root>`` for the
    whole document, or the file name for a TOML syntax error)."""
    value: str | None
    """The offending value as written, or ``None`` when the text did not parse."""
    message: str
    """What is wrong and how to fix it."""

class SimError(RuntimeError):
    """A valid scenario could not be run (for example a CDF file is malformed)."""

    key: str
    """The scenario key at fault (``<internal>`` for a simulator bug)."""
    message: str
    """What went wrong."""

@final
class ValidScenario:
    """A scenario Rust has parsed and validated once, with every file input read: what
    :class:`Simulation` runs. Opaque; read it back with :meth:`to_json`."""

    def to_json(self) -> str:
        """The resolved scenario as JSON (every default filled in, paths absolute)."""

    def with_seed(self, seed: int) -> ValidScenario:
        """The same scenario with another master seed."""

    @property
    def name(self) -> str:
        """The scenario's name."""

    @property
    def seed(self) -> int:
        """The scenario's master seed."""

def validate_toml(text: str, base_dir: str) -> ValidScenario:
    """Parse and validate a TOML scenario once (relative paths against ``base_dir``).
    Raises :class:`SpecError`."""

def validate_json(text: str, base_dir: str) -> ValidScenario:
    """Parse and validate a JSON scenario once. Raises :class:`SpecError`."""

def resolve_toml(text: str, base_dir: str) -> str:
    """Parse and validate a TOML scenario; return the resolved scenario as JSON (every default
    filled in, relative paths made absolute against ``base_dir``). Raises :class:`SpecError`."""

def resolve_json(text: str, base_dir: str) -> str:
    """Parse and validate a JSON scenario; return the resolved scenario as JSON.
    Raises :class:`SpecError`."""

def default_scenario_toml() -> str:
    """The built-in default scenario as TOML text."""

def profile_defaults(name: str) -> str:
    """The defaults a model profile (``"default"``, ``"ns3_compat"``) applies beneath a
    scenario's own keys, as JSON (a partial scenario). Raises :class:`SpecError` for an unknown
    name."""

def credence_figure14(seeds: Sequence[int] | None = None) -> dict[str, Any]:
    """Credence's Figure 14 in the discrete-time model of Appendix A on the arrival sequence
    of each seed (default: 1 to 30), as columns: ``seed``, ``flip_probability`` (0, 0.1, ...,
    1), ``admission`` (``"Credence"``, ``"DT q+size<=alpha*free"`` or ``"DT q<alpha*free"``:
    DT under the Credence artifact's rule and under Choudhury and Hahne's, its ratio repeated
    at every flip probability) and ``lqd_over_alg`` (LQD's throughput over the policy's). A
    numeric column is a ``(numpy dtype, little-endian bytes)`` pair, ``admission`` a list."""

def version() -> str:
    """Version of the native extension."""

def engine_sha256() -> str:
    """SHA-256 (hex) of the sources the engine was built from (``crates/py/build.rs``)."""

def coflow_inter(
    trace: str,
    scheduler: str,
    max_coflows: int | None = None,
    port_mbps: float | None = None,
    record_flows: bool = False,
) -> dict[str, Any]:
    """The coflow trace at ``trace`` (its first ``max_coflows`` coflows) on a non-blocking
    fabric under ``scheduler`` in the idealised event-driven model: ``{"coflows": columns,
    "events": int, "seconds": float}``. ``ValueError`` for a bad name, trace or parameter."""

def coflowsim_run(
    trace: str, algo: str, max_coflows: int | None = None, reference: str | None = None
) -> dict[str, Any]:
    """The trace in the coflowsim-compatible mode under ``algo``: ``{"coflows": columns,
    "seconds": float}``, with ``"compared"``, ``"exact"``, ``"max_rel_diff"`` given a
    ``reference`` output file."""

def coflow_intra(quick: bool = True) -> dict[str, Any]:
    """The shuffle table and broadcast Figures 4.7-4.11 with their shape checks, as tables."""

def coflow_shuffle(
    senders: Sequence[int],
    receivers: Sequence[int],
    bytes: Sequence[Sequence[float]],
    mechanism: str,
    racks: int,
    hosts_per_rack: int,
    host_gbps: float,
    cross_rack_gbps: float | None = None,
    seed: int = 1,
    packet: bool = False,
    transport_toml: str | None = None,
) -> dict[str, Any]:
    """One shuffle at flow or packet level: ``{"flows": columns, "completion_s", "gamma_s"}``
    (and ``"packet"`` statistics)."""

def coflow_broadcast(
    sender: int,
    receivers: Sequence[int],
    bytes: float,
    mechanism: str,
    racks: int,
    hosts_per_rack: int,
    host_gbps: float,
    cross_rack_gbps: float | None = None,
    block_bytes: float | None = None,
    seed: int = 1,
    packet: bool = False,
    transport_toml: str | None = None,
) -> dict[str, Any]:
    """One broadcast at flow or packet level: ``{"receivers": columns, "completion_s",
    "lower_bound_s", "transfers"}`` (and ``"packet"`` statistics)."""

def coflow_packet(quick: bool = True) -> dict[str, Any]:
    """The shuffle scenarios and broadcasts at flow and packet level side by side:
    ``shuffle``, ``broadcast`` and ``checks`` tables."""

def empty_results() -> dict[str, Any]:
    """The results of a run that produced nothing, in the format of
    :meth:`Simulation.results`: every table with its columns and dtypes and no rows."""

@final
class Simulation:
    """A running simulation of one resolved scenario.

    Construct it, call :meth:`advance` until it returns ``False``, then :meth:`results`.
    One call at a time: a call made while another thread's call on the same object is
    running (:meth:`advance`, :meth:`results`, :meth:`take_records` and
    :meth:`decision_trace` let other threads run) raises :class:`SimError` with key
    ``Simulation``.
    """

    def __new__(cls, scenario: ValidScenario, *, trace_flow: int | None = None) -> Simulation:
        """Build the network and the applications of a validated scenario; nothing is
        validated or read again. Raises :class:`SimError`. ``trace_flow``: the id of a
        transfer whose packets to trace from its start (:meth:`flow_trace`)."""

    def flow_trace(self) -> dict[str, tuple[str, bytes] | list[str]]:
        """The traced transfer's rows so far, as columns (``slacknet.trace_flow`` makes the
        DataFrame)."""

    def flow_trace_started(self) -> bool:
        """Whether the traced transfer has started."""

    def flow_trace_truncated(self) -> bool:
        """Whether the flow trace reached its cap (512 MiB of rows) and stopped recording."""

    def advance(self, max_events: int) -> bool:
        """Process up to ``max_events`` events (an integer from 1 to 2^64 - 1) with the
        interpreter released; ``True`` while work remains. Ctrl-C raises
        ``KeyboardInterrupt`` within a fraction of a second and leaves the simulation whole
        (advance again to go on). Raises ``TypeError`` for a ``max_events`` that is not an
        integer and ``ValueError`` for one out of range."""

    def flow_list_text(self) -> str:
        """The run's flows as a flow list (``id src dst start_s size_bytes incast`` per line,
        start times to the picosecond), the input format of a ``flow_list`` workload and of
        the peer simulators. Raises ``SimError`` if an application of the scenario reacts to
        the network (its flows are only known by running it)."""

    def enable_decision_trace(self) -> None:
        """Record every switch arrival (its features and eventual fate), the training data
        of Credence's drop oracle. Only before the first event: raises :class:`SimError`
        after :meth:`advance` ran any."""

    def decision_trace_truncated(self) -> bool:
        """Whether the decision trace reached its cap (512 MiB of rows, about 9.6 M) and
        stopped recording: its rows are the run's first arrivals, each with its true fate."""

    def decision_trace(self) -> dict[str, Any]:
        """The decision trace as columns ``switch``, ``time_ps``, ``queue``, ``queue_len``,
        ``avg_queue_len``, ``occupancy``, ``avg_occupancy`` (bytes) and ``dropped``, each
        ``(numpy dtype str, little-endian bytes)``."""

    def results(self) -> dict[str, Any]:
        """Results so far: ``records``, ``apps``, ``groups``, ``switches``, ``queues``, ``occupancy``, ``links``,
        ``queue_series`` and ``transfer_series`` (each a dict ``{column: (numpy dtype str,
        little-endian bytes) | list[str]}``; the two series have no rows without
        ``[run.timeseries]``) and ``summary`` (a dict of totals)."""

    def take_records(self) -> dict[str, Any]:
        """Take the records of the flows that ended (every record left once the run is done),
        so that the simulator frees their state: the columns of ``results()["records"]`` plus
        ``row`` (each record's row in the records of a run that takes nothing; rows come in the
        order the flows ended). ``results()`` then reports only the records not taken."""

    @property
    def now_ps(self) -> int:
        """Simulated time now, picoseconds."""

    @property
    def events(self) -> int:
        """Events processed so far."""

    @property
    def packet_hops(self) -> int:
        """Packet transmissions over links so far."""

    @property
    def num_flows(self) -> int:
        """Flows started so far (applications start them as the run goes: 0 before
        :meth:`advance`)."""

    @property
    def finished_flows(self) -> int:
        """Flows completed so far."""

    @property
    def horizon_ps(self) -> int:
        """Estimated end time for progress display, picoseconds."""

    @property
    def is_done(self) -> bool:
        """Whether the run is over."""

class TransportError(OSError):
    """The real transport failed: a socket call, or the node was closed."""

@final
class Node:
    """A node of the real transport: one UDP socket and its event loop (a Rust thread)."""

    def __new__(
        cls,
        bind: str = "0.0.0.0:0",
        *,
        loss: float = 0.0,
        duplicate: float = 0.0,
        reorder: float = 0.0,
        reorder_delay_us: float = 0.0,
        delay_us: float = 0.0,
        drop_nth: Sequence[int] = ...,
        drop_first_tx: Sequence[int] = ...,
        seed: int = 0,
        max_message_bytes: int | None = None,
        max_receive_memory_bytes: int | None = None,
        linger_ms: float | None = None,
        rto_us: int | None = None,
        line_rate_gbps: float | None = None,
        cc: str = "dctcp",
        send_order: str = "shuffled",
        tail_probe: bool = False,
        min_receive_fraction: float | None = None,
    ) -> Node:
        """Bind to ``bind`` ("ip:port"; port 0: any free port) with the fault injector's
        knobs (all off by default) and the receive limits. Raises ValueError or
        :class:`TransportError`."""

    @property
    def address(self) -> str:
        """The address peers send to, "ip:port"."""

    def capabilities(self) -> dict[str, Any]:
        """What the kernel offers the socket: gso_segments, gro_segments, has_tos,
        send_buffer_bytes, recv_buffer_bytes."""

    def send_values(self, peer: str, data: bytes, value_bytes: int, p: float, deadline_s: float,
                    tag: int = 0) -> SendHandle:
        """Start sending ``data`` (whole values of ``value_bytes`` bytes) to ``peer``, ending once
        the fraction ``p`` of the values arrived. Raises ValueError for a bad argument."""

    def recv(self, timeout_s: float | None = None) -> dict[str, Any] | None:
        """The next message a peer sent (peer, conn, value_bytes, data, total_values,
        received_values, missing, elapsed_s), or None after ``timeout_s`` seconds."""

    def send_job(self, peer: str, msrs: Sequence[float], messages: Sequence[tuple[int, bytes]], deadline_s: float) -> JobHandle:
        """Start an ATP job to ``peer``: ``messages`` as (group, bytes) pairs, group ``g``
        needing at least the fraction ``msrs[g]`` of its messages. Raises ValueError."""

    def recv_job(self, timeout_s: float | None = None) -> dict[str, Any] | None:
        """The next event of a job a peer sends: kind "message" (peer, conn, msg, group,
        data) or "end" (peer, conn, total, lost), or None after ``timeout_s`` seconds."""

    def stats(self) -> dict[str, int]:
        """Counters of the node."""

    def close(self) -> dict[str, int]:
        """Stop the node (running transfers end with an error, messages not yet taken are
        dropped, the socket closes); returns the final counters, again on later calls."""

    @property
    def closed(self) -> bool:
        """Whether the node was closed."""

@final
class SendHandle:
    """A send in progress."""

    def wait(self, timeout_s: float | None = None) -> dict[str, Any] | None:
        """The transfer's end (outcome, elapsed_s, packets_sent, packets_retx, bytes_sent,
        timeouts), or None if ``timeout_s`` passed first. Raises TimeoutError past the
        transfer's deadline."""

    def cancel(self) -> None:
        """Stop the transfer, from any thread: nothing more is sent; a wait raises
        TransportError. A transfer already over keeps its result."""

@final
class JobHandle:
    """An ATP job in progress."""

    def wait(self, timeout_s: float | None = None) -> dict[str, Any] | None:
        """The job's end (outcome, elapsed_s, groups, packets_sent, packets_retx), or None if
        ``timeout_s`` passed first. Raises TimeoutError past the job's deadline."""

    def cancel(self) -> None:
        """Stop the job, as :meth:`SendHandle.cancel`."""
