"""The real transport from Python: the bounded-loss protocol of the simulator, unchanged,
over UDP sockets (``crates/udp``; issue 13).

An :class:`Endpoint` is one UDP socket with its own event-loop thread in Rust. Send a float
array so that it completes once a fraction ``p`` of its values arrived, and receive arrays
with the mask of the values that did not (the bounded-loss ML paper's §3.2)::

    from slacknet.net import Endpoint
    rx = Endpoint("0.0.0.0:7000")                    # on the receiving machine
    got = rx.recv_array()                            # blocks; got.array, got.missing
    tx = Endpoint()                                  # on the sending machine
    tx.send_array("10.0.0.2:7000", grads, p=0.9)    # returns once 90% of it arrived

Missing values are zero in ``array`` (the paper's zero-fill); ``missing`` is a boolean mask
(``True`` where the value did not arrive, numpy's masked-array convention) and ``ranges`` the
same as sorted ``[start, stop)`` index ranges. ``p = 1`` is a reliable transfer.

NetApprox's jobs (ATP, ApproxLib's interface, §3.3): a job is messages in groups, each group
with a minimal sampling rate (MSR, the fraction of its messages that must arrive; 1 = all,
reliably); the sender goes as fast as the groups' slack allows and gives up on the rest::

    report = tx.send_job("10.0.0.2:7000", [(0, b"..."), (1, b"...")], msr=[1.0, 0.7])
    job = rx.recv_job()      # job.messages {id: (group, bytes)}, job.lost [ids]

Every blocking call releases the GIL and can be interrupted with Ctrl-C; the ``*_async``
variants run it in the event loop's default executor, so they can be awaited.

Fault injection (loss, duplication, delay, reordering, exact drops by send index), seeded and
off by default, applies to what an endpoint sends: pass ``faults=Faults(...)``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _native
from ._native import TransportError

__all__ = ["Endpoint", "Faults", "GroupReport", "Job", "JobReport", "Received", "SendReport", "TransportError"]

#: numpy dtypes the transport carries, by value width.
_DTYPES: dict[int, np.dtype[Any]] = {4: np.dtype("<f4"), 2: np.dtype("<f2")}


@dataclass(frozen=True)
class Faults:
    """Faults injected into what an endpoint sends (all off by default). ``loss``,
    ``duplicate`` and ``reorder`` are probabilities; ``reorder_delay_us`` how long a reordered
    datagram is held back; ``delay_us`` extra delay for every datagram; ``drop_nth`` datagrams
    to drop by send index (from 0, every datagram counted); ``drop_first_tx`` bounded-loss data
    packets to drop on their first transmission only, by their first value index (packet ``i``
    of an array starts at ``i * values_per_packet``; 351 values of 4 bytes by default): a lost
    tail whose resends get through; ``seed`` the injector's RNG seed."""

    loss: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    reorder_delay_us: float = 0.0
    delay_us: float = 0.0
    drop_nth: tuple[int, ...] = ()
    drop_first_tx: tuple[int, ...] = ()
    seed: int = 0


@dataclass(frozen=True)
class SendReport:
    """How a send ended: ``outcome`` ("complete": every value acknowledged, or "enough": at
    least the fraction p), ``elapsed_s``, and what the sender put on the wire."""

    outcome: str
    elapsed_s: float
    packets_sent: int
    packets_retx: int
    bytes_sent: int
    timeouts: int


@dataclass(frozen=True)
class Received:
    """A received array: the values (zero where missing), the mask of missing values
    (``True`` = missing), the missing index ranges, the sender and timing."""

    array: np.ndarray
    missing: np.ndarray
    ranges: list[tuple[int, int]]
    peer: str
    received_values: int
    elapsed_s: float
    conn: int = field(default=0)

    @property
    def fraction(self) -> float:
        """The fraction of the values that arrived."""
        return self.received_values / max(1, len(self.array))

    def as_masked(self) -> np.ma.MaskedArray:
        """The values as a numpy masked array (missing values masked)."""
        return np.ma.MaskedArray(self.array, mask=self.missing)


@dataclass(frozen=True)
class GroupReport:
    """One group of a job at the sender: its ``messages``, how many were ``required``
    (ceil(MSR x messages)), ``delivered`` and ``lost`` (given up)."""

    messages: int
    required: int
    delivered: int
    lost: int


@dataclass(frozen=True)
class JobReport:
    """How a job ended at the sender: ``outcome`` ("complete", "enough": every group its MSR,
    or "given_up"), ``elapsed_s``, per-group reports and packets."""

    outcome: str
    elapsed_s: float
    groups: list[GroupReport]
    packets_sent: int
    packets_retx: int


@dataclass(frozen=True)
class Job:
    """A received job: ``messages`` by id (``(group, bytes)``), the ``lost`` message ids (None
    if the sender's end-of-job notice never arrived) and the sender."""

    peer: str
    conn: int
    messages: dict[int, tuple[int, bytes]]
    lost: list[int] | None
    total: int | None


class Endpoint:
    """One UDP socket of the real transport and its event loop.

    ``bind`` is "ip:port" (port 0: any free port). ``max_message_bytes`` and
    ``max_receive_memory_bytes`` bound what peers can make it allocate; ``linger_ms`` is how
    long a receiver keeps acknowledging after handing a message up; ``rto_us`` the minimum
    retransmission timeout; ``line_rate_gbps`` the rate ATP sends at most (its R_max, default
    10); ``cc`` the bounded-loss transport's window law for arrays this endpoint sends:
    ``"dctcp"`` (the paper's, for switches that mark ECN) or ``"cubic"`` (RFC 9438, Linux's
    default TCP law: use it where the path's queues drop rather than mark and the competing
    traffic is ordinary TCP).
    """

    def __init__(
        self,
        bind: str = "0.0.0.0:0",
        *,
        faults: Faults | None = None,
        max_message_bytes: int | None = None,
        max_receive_memory_bytes: int | None = None,
        linger_ms: float | None = None,
        rto_us: int | None = None,
        line_rate_gbps: float | None = None,
        cc: str = "dctcp",
    ) -> None:
        f = faults or Faults()
        # Messages of jobs not yet ended, by (peer, job id).
        self._pending: dict[tuple[str, int], dict[int, tuple[int, bytes]]] = {}
        self._node = _native.Node(
            bind,
            loss=f.loss,
            duplicate=f.duplicate,
            reorder=f.reorder,
            reorder_delay_us=f.reorder_delay_us,
            delay_us=f.delay_us,
            drop_nth=list(f.drop_nth),
            drop_first_tx=list(f.drop_first_tx),
            seed=f.seed,
            max_message_bytes=max_message_bytes,
            max_receive_memory_bytes=max_receive_memory_bytes,
            linger_ms=linger_ms,
            rto_us=rto_us,
            line_rate_gbps=line_rate_gbps,
            cc=cc,
        )

    @property
    def address(self) -> str:
        """The address peers send to, "ip:port"."""
        return self._node.address

    def capabilities(self) -> dict[str, Any]:
        """What the kernel offers the socket (GSO/GRO segments, TOS, buffer sizes)."""
        return self._node.capabilities()

    def stats(self) -> dict[str, int]:
        """The endpoint's counters (datagrams sent, received, malformed, refused, ...)."""
        return self._node.stats()

    def send_array(self, peer: str, array: Any, *, p: float = 1.0, deadline: float = 30.0) -> SendReport:
        """Send a 1-D float32 or float16 array to ``peer`` ("ip:port"); return once the
        receiver holds at least the fraction ``p`` of its values (``p = 1``: all). Raises
        ``ValueError`` for a bad argument and ``TimeoutError`` after ``deadline`` seconds."""
        return self._report(self._start(peer, array, p, deadline).wait())

    async def send_array_async(self, peer: str, array: Any, *, p: float = 1.0, deadline: float = 30.0) -> SendReport:
        """:meth:`send_array`, awaitable."""
        handle = self._start(peer, array, p, deadline)
        loop = asyncio.get_running_loop()
        return self._report(await loop.run_in_executor(None, handle.wait))

    def recv_array(self, timeout: float | None = None) -> Received | None:
        """The next array a peer sent (``None`` after ``timeout`` seconds; ``None`` timeout:
        wait forever)."""
        return self._received(self._node.recv(timeout))

    async def recv_array_async(self, timeout: float | None = None) -> Received | None:
        """:meth:`recv_array`, awaitable."""
        loop = asyncio.get_running_loop()
        return self._received(await loop.run_in_executor(None, self._node.recv, timeout))

    def send_job(self, peer: str, messages: Any, *, msr: Any, deadline: float = 30.0) -> JobReport:
        """Send a job of ``messages``, ``(group, bytes)`` pairs, to ``peer``; group ``g`` must
        deliver at least the fraction ``msr[g]`` of its messages (``msr`` a sequence, or one
        number for a single group 0). Returns when every group has what it needs. Raises
        ``ValueError`` for a bad argument and ``TimeoutError`` after ``deadline`` seconds."""
        msrs = [float(msr)] if isinstance(msr, (int, float)) else [float(m) for m in msr]
        msgs = [(int(g), bytes(b)) for g, b in messages]
        d = self._node.send_job(peer, msrs, msgs, float(deadline)).wait()
        if d is None:
            raise TransportError("the job did not end")
        return JobReport(d["outcome"], d["elapsed_s"], [GroupReport(**g) for g in d["groups"]],
                         d["packets_sent"], d["packets_retx"])

    async def send_job_async(self, peer: str, messages: Any, *, msr: Any, deadline: float = 30.0) -> JobReport:
        """:meth:`send_job`, awaitable."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: self.send_job(peer, messages, msr=msr, deadline=deadline))

    async def recv_job_async(self, timeout: float | None = None) -> Job | None:
        """:meth:`recv_job`, awaitable."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.recv_job, timeout)

    def recv_job(self, timeout: float | None = None) -> Job | None:
        """The next job a peer sends, gathered until its end (``None`` if nothing arrives
        within ``timeout`` seconds of the previous event; ``None`` timeout: wait forever).
        Messages of jobs from several peers at once are kept apart by (peer, job id)."""
        pending = self._pending
        while True:
            e = self._node.recv_job(timeout)
            if e is None:
                return None
            key = (e["peer"], e["conn"])
            if e["kind"] == "message":
                pending.setdefault(key, {})[e["msg"]] = (e["group"], e["data"])
                continue
            msgs = pending.pop(key, {})
            return Job(e["peer"], e["conn"], msgs, e["lost"], e["total"])

    def _start(self, peer: str, array: Any, p: float, deadline: float) -> _native.SendHandle:
        a = np.asarray(array)
        if a.ndim != 1:
            raise ValueError(f"array: {a.ndim}-dimensional; give a 1-D array (ravel() it first)")
        if a.dtype not in (np.float32, np.float16):
            raise ValueError(f"array: dtype {a.dtype}; give float32 or float16 values (astype(np.float32))")
        vb = a.dtype.itemsize
        data = np.ascontiguousarray(a, dtype=_DTYPES[vb]).tobytes()
        return self._node.send_values(peer, data, vb, float(p), float(deadline))

    @staticmethod
    def _report(d: dict[str, Any] | None) -> SendReport:
        if d is None:  # wait() without a timeout returns only at the end
            raise TransportError("the transfer did not end")
        return SendReport(**d)

    @staticmethod
    def _received(d: dict[str, Any] | None) -> Received | None:
        if d is None:
            return None
        arr = np.frombuffer(d["data"], dtype=_DTYPES[d["value_bytes"]]).copy()
        missing = np.zeros(d["total_values"], dtype=bool)
        for a, b in d["missing"]:
            missing[a:b] = True
        return Received(arr, missing, [tuple(r) for r in d["missing"]], d["peer"], d["received_values"],
                        d["elapsed_s"], d["conn"])
