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

Every blocking call releases the GIL and can be interrupted with Ctrl-C (an interrupted send
stops sending); the ``*_async`` variants wait in a daemon thread, so they can be awaited, and
a cancelled one loses nothing (a receive's result goes to the next receive; a send stops).
``Endpoint.close()``, or ``with Endpoint(...) as ep:``, stops an endpoint at once.

Fault injection (loss, duplication, delay, reordering, exact drops by send index), seeded and
off by default, applies to what an endpoint sends: pass ``faults=Faults(...)``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import numbers
import threading
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _native
from ._native import TransportError

__all__ = ["Endpoint", "Faults", "GroupReport", "Job", "JobReport", "Received", "SendReport", "TransportError"]

#: numpy dtypes the transport carries, by value width.
_DTYPES: dict[int, np.dtype[Any]] = {4: np.dtype("<f4"), 2: np.dtype("<f2")}
_U64 = 2**64 - 1
_PEER = '"10.0.0.2:7000"'


def _number(name: str, v: Any) -> float:
    """``v`` as a float, or ``TypeError`` naming ``name`` (a bool or a string is no number here:
    ``p=True`` or ``deadline="3"`` is a slip, not a value)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} = {v!r}: give a number, not {type(v).__name__}")
    return float(v)


def _text(name: str, v: Any, example: str) -> str:
    """``v`` if it is a string, else ``TypeError`` naming ``name`` (the native layer's says only
    "'None' is not an instance of 'str'")."""
    if not isinstance(v, str):
        raise TypeError(f"{name} = {v!r:.60}: give a string, e.g. {example}")
    return v


def _flag(name: str, v: Any) -> bool:
    """``v`` if it is a bool, else ``TypeError`` naming ``name`` (``1`` or ``"yes"`` is a slip)."""
    if not isinstance(v, bool):
        raise TypeError(f"{name} = {v!r:.60}: give True or False")
    return v


def _timeout(v: Any) -> float | None:
    return None if v is None else _number("timeout", v)


def _integer(name: str, v: Any, lo: int, hi: int) -> int:
    """``v`` as an int in ``[lo, hi]``, else ``TypeError``/``ValueError`` naming ``name`` (the
    native layer's own refusal is a bare ``OverflowError`` naming nothing)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} = {v!r}: give an integer, not {type(v).__name__}")
    n = int(v)
    if not lo <= n <= hi:
        raise ValueError(f"{name} = {n}: must be at least {lo} and at most {hi}")
    return n


def _optional_integer(name: str, v: Any, lo: int, hi: int) -> int | None:
    return None if v is None else _integer(name, v, lo, hi)


def _optional_number(name: str, v: Any) -> float | None:
    return None if v is None else _number(name, v)


def _msrs(msr: Any) -> list[float]:
    """``msr`` (one number, or a sequence of numbers) as a list of floats, naming a bad one."""
    if isinstance(msr, (Mapping, Set)):
        # A dict's iteration gives its keys: {0: 1.0, 1: 0.5} ran as MSRs [0, 1], and group 0
        # lost messages it needed without an error.
        raise TypeError(f"msr: a {type(msr).__name__}; give one number, or a sequence with group g's MSR at "
                        "index g, e.g. msr=[1.0, 0.5]")
    if isinstance(msr, (str, bytes)) or not hasattr(msr, "__iter__"):
        return [_number("msr", msr)]
    return [_number(f"msr[{g}]", m) for g, m in enumerate(msr)]


def _wait_s(timeout: float | None) -> float | None:
    """A checked receive timeout as Python's own waits take it: at most
    ``threading.TIMEOUT_MAX`` (about 292 years; more is refused there), ``None`` forever."""
    return None if timeout is None else min(timeout, threading.TIMEOUT_MAX)


def _in_thread(fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Run ``fn`` in a daemon thread of its own; its result (or exception) in the future.
    A daemon thread, so that an event loop closing does not wait for a native call it cannot
    cancel."""
    f: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def run() -> None:
        try:
            f.set_result(fn())
        except BaseException as e:  # noqa: BLE001 - handed to the waiter
            f.set_exception(e)

    threading.Thread(target=run, daemon=True, name="slacknet-wait").start()
    return f


def _wait(handle: _native.SendHandle | _native.JobHandle) -> Any:
    """A transfer's end; interrupted (Ctrl-C, any exception), the transfer is cancelled, so
    that it does not go on sending until its deadline."""
    try:
        return handle.wait()
    except BaseException:
        handle.cancel()
        raise


async def _await(handle: _native.SendHandle | _native.JobHandle) -> Any:
    """A transfer's end, awaited (the wait in a daemon thread, so that a closing event loop does
    not wait for it); cancelled, the transfer is cancelled too."""
    waited = asyncio.wrap_future(_in_thread(handle.wait))
    try:
        return await asyncio.shield(waited)
    except BaseException:
        handle.cancel()
        # The wait ends with the cancellation's error, which nobody awaits any more.
        waited.add_done_callback(lambda w: w.cancelled() or w.exception())
        raise


def _job_messages(messages: Any) -> list[tuple[int, bytes]]:
    """``messages`` as ``(group, bytes)`` pairs, naming the first bad one: a group is an integer
    in 0..65535, a payload any bytes-like object (``bytes(5)`` would be five zero bytes)."""
    if isinstance(messages, (str, bytes, dict)) or not hasattr(messages, "__iter__"):
        what = "a dict" if isinstance(messages, dict) else type(messages).__name__
        raise TypeError(f"messages[0]: {what}; give a sequence of (group, bytes) pairs")
    out = []
    for i, m in enumerate(messages):
        if isinstance(m, (str, bytes)) or not isinstance(m, (tuple, list)) or len(m) != 2:
            raise TypeError(f"messages[{i}]: {m!r:.60}; give a (group, bytes) pair")
        g, data = m
        if isinstance(g, bool) or not isinstance(g, numbers.Integral):
            raise TypeError(f"messages[{i}]: group {g!r}; give an integer, the index of its msr")
        if not 0 <= int(g) <= 65535:
            raise ValueError(f"messages[{i}]: group {int(g)}; groups are 0 to 65535, indices into msr")
        if isinstance(data, str) or not _is_buffer(data):
            raise TypeError(f"messages[{i}]: the payload is {type(data).__name__}; give bytes (or another "
                            "bytes-like object: bytearray, memoryview, a numpy array)")
        out.append((int(g), memoryview(data).tobytes()))
    return out


def _is_buffer(data: Any) -> bool:
    try:
        memoryview(data)
    except TypeError:
        return False
    return True


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
    least the fraction p), ``elapsed_s``, and what the sender put on the wire
    (``packets_sent``, ``packets_retx``, ``bytes_sent``) and its retransmission ``timeouts``."""

    outcome: str
    elapsed_s: float
    packets_sent: int
    packets_retx: int
    bytes_sent: int
    timeouts: int


@dataclass(frozen=True)
class Received:
    """A received array: the values (``array``, zero where missing), the mask of missing
    values (``missing``, ``True`` = missing), the missing index ranges (``ranges``), the
    sender (``peer``, "ip:port", and ``conn``, its connection id), how many values arrived
    (``received_values``), ``elapsed_s`` and the sender's ``tag`` (:meth:`Endpoint.send_array`)."""

    array: np.ndarray
    missing: np.ndarray
    ranges: list[tuple[int, int]]
    peer: str
    received_values: int
    elapsed_s: float
    conn: int = field(default=0)
    tag: int = field(default=0)

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
    or "given_up"), ``elapsed_s``, per-group reports (``groups``, :class:`GroupReport`, by
    group index) and the packets sent (``packets_sent``, ``packets_retx``)."""

    outcome: str
    elapsed_s: float
    groups: list[GroupReport]
    packets_sent: int
    packets_retx: int


@dataclass(frozen=True)
class Job:
    """A received job: ``messages`` by id (``(group, bytes)``), the ``lost`` message ids (None
    if the sender's end-of-job notice never arrived), the sender (``peer``, "ip:port", and
    ``conn``, its connection id) and ``total``, the job's message count (None as for ``lost``)."""

    peer: str
    conn: int
    messages: dict[int, tuple[int, bytes]]
    lost: list[int] | None
    total: int | None


class Endpoint:
    """One UDP socket of the real transport and its event loop.

    ``bind`` is "ip:port" (port 0: any free port). ``max_message_bytes`` and
    ``max_receive_memory_bytes`` bound what peers can make it allocate (a message is charged
    what arrived of it, its whole size once a sixteenth did, so a size a peer only claims costs
    nothing; ``stats()["receive_memory_bytes"]`` is the charge now); ``linger_ms`` is how
    long a receiver keeps acknowledging after handing a message up; ``rto_us`` the minimum
    retransmission timeout (1 to 10^12 microseconds); ``line_rate_gbps`` the rate ATP sends at most (its R_max, default
    10); ``cc`` the bounded-loss transport's window law for arrays this endpoint sends:
    ``"dctcp"`` (the paper's, for switches that mark ECN) or ``"cubic"`` (RFC 9438, Linux's
    default TCP law: use it where the path's queues drop rather than mark and the competing
    traffic is ordinary TCP); ``send_order`` the order in which an array's packets are first
    sent: ``"shuffled"`` (default: a random order per array, so the values that a send with
    ``p < 1`` leaves missing are random packets of the array) or ``"index"`` (in order: they are
    the array's tail, the last ``1 - p`` of it even without any loss, since the receiver
    completes as soon as a fraction ``p`` arrived); ``tail_probe`` adds a tail-loss probe to
    the bounded-loss transport (RFC 8985 §7; off by default, as in the paper): two smoothed
    RTTs without progress send one probe whose acknowledgement shows what the tail lost, so a
    lost tail costs round trips instead of a retransmission timeout; ``min_receive_fraction`` is
    this receiver's floor on what a peer may leave missing (in [0, 1]; default none): an array
    whose sender's ``p`` asks for fewer than ``ceil(min_receive_fraction * n)`` of its ``n``
    values is refused (``stats()["num_refused_below_floor"]``; the sender's ``send_array``
    raises ``TimeoutError`` at its deadline, naming this knob among what to check), so a sender
    with a small ``p``, by mistake or on purpose, cannot hand this endpoint's application an
    array that is mostly zeros; ``faults`` a :class:`Faults` to inject into
    what it sends (default: none). The bounds, timeouts and rates left ``None`` take the transport's defaults.

    Raises ``ValueError`` for a bad argument (an address that is not "ip:port", an unknown
    ``cc`` or ``send_order``), ``TypeError`` for one of the wrong type, and :class:`TransportError` if the
    socket cannot be bound.
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
        send_order: str = "shuffled",
        tail_probe: bool = False,
        min_receive_fraction: float | None = None,
    ) -> None:
        if faults is not None and not isinstance(faults, Faults):
            raise TypeError(f"faults = {faults!r:.60}: give a Faults(...) (or None for none)")
        f = faults or Faults()
        # Messages of jobs not yet ended, by (peer, job id).
        self._pending: dict[tuple[str, int], dict[int, tuple[int, bytes]]] = {}
        # One job gatherer at a time: two threads pulling one queue split a job's messages
        # (a job came back with 199 of 200 messages and lost = []).
        self._job_lock = threading.Lock()
        # The native receive of an awaiting call that was cancelled, still running or done:
        # the next call takes its result first instead of losing it.
        self._orphan: concurrent.futures.Future[Any] | None = None
        self._job_orphan: concurrent.futures.Future[Any] | None = None
        self._node = _native.Node(
            _text("bind", bind, '"0.0.0.0:7000"'),
            loss=_number("loss", f.loss),
            duplicate=_number("duplicate", f.duplicate),
            reorder=_number("reorder", f.reorder),
            reorder_delay_us=_number("reorder_delay_us", f.reorder_delay_us),
            delay_us=_number("delay_us", f.delay_us),
            drop_nth=[_integer(f"drop_nth[{i}]", n, 0, _U64) for i, n in enumerate(f.drop_nth)],
            drop_first_tx=[_integer(f"drop_first_tx[{i}]", n, 0, 2**32 - 1) for i, n in enumerate(f.drop_first_tx)],
            seed=_integer("seed", f.seed, 0, _U64),
            max_message_bytes=_optional_integer("max_message_bytes", max_message_bytes, 1, _U64),
            max_receive_memory_bytes=_optional_integer("max_receive_memory_bytes", max_receive_memory_bytes, 1, _U64),
            linger_ms=_optional_number("linger_ms", linger_ms),
            # 1e6 s, the simulator's bound on any time (a larger RTO only waits for the deadline).
            rto_us=_optional_integer("rto_us", rto_us, 1, 10**12),
            line_rate_gbps=_optional_number("line_rate_gbps", line_rate_gbps),
            cc=_text("cc", cc, '"dctcp"'),
            send_order=_text("send_order", send_order, '"shuffled"'),
            tail_probe=_flag("tail_probe", tail_probe),
            min_receive_fraction=_optional_number("min_receive_fraction", min_receive_fraction),
        )

    @property
    def address(self) -> str:
        """The address peers send to, "ip:port"."""
        return self._node.address

    def close(self) -> dict[str, int]:
        """Close the endpoint: its socket and event loop stop at once, transfers still running
        end with :class:`TransportError`, a receive waiting in another thread returns with
        one, and messages not yet taken are dropped. Returns the final counters (again on a
        second call). ``with Endpoint(...) as ep:`` closes it at the block's end; an endpoint
        no longer referenced is closed when collected."""
        return self._node.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._node.closed

    def __enter__(self) -> Endpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def capabilities(self) -> dict[str, Any]:
        """What the kernel offers the socket (GSO/GRO segments, TOS, buffer sizes)."""
        return self._node.capabilities()

    def stats(self) -> dict[str, int]:
        """The endpoint's counters (datagrams sent, received, malformed, refused, ...) and
        ``receive_memory_bytes``, the receive memory in use now."""
        return self._node.stats()

    def send_array(self, peer: str, array: Any, *, p: float = 1.0, deadline: float = 30.0,
                   tag: int = 0) -> SendReport:
        """Send a 1-D float32 or float16 array to ``peer`` ("ip:port"); return once the
        receiver holds at least the fraction ``p`` of its values (``p = 1``: all). ``tag``, an
        integer in [0, 2^32 - 1], travels in every packet and is the receiver's
        :attr:`Received.tag` (a label of the application's: a round number, say). Raises
        ``ValueError`` for a bad argument (``TypeError`` for one not a number, such as ``p="0.9"``;
        a peer this endpoint cannot reach, port 0 or the other IP family, is a bad argument) and
        ``TimeoutError`` after ``deadline`` seconds. Interrupted (Ctrl-C), the transfer stops:
        nothing more is sent for it."""
        return self._report(_wait(self._start(peer, array, p, deadline, tag)))

    async def send_array_async(self, peer: str, array: Any, *, p: float = 1.0, deadline: float = 30.0,
                               tag: int = 0) -> SendReport:
        """:meth:`send_array`, awaitable (same arguments, result and errors). Cancelled, the
        transfer stops: nothing more is sent for it."""
        return self._report(await _await(self._start(peer, array, p, deadline, tag)))

    def recv_array(self, timeout: float | None = None) -> Received | None:
        """The next array a peer sent (``None`` after ``timeout`` seconds; ``0``: only what has
        arrived; ``None`` timeout: wait forever)."""
        timeout = self._checked_timeout(timeout)
        orphan = self._take_orphan("_orphan", timeout)
        if orphan is not None:
            return self._received(orphan)
        return self._received(self._node.recv(timeout))

    async def recv_array_async(self, timeout: float | None = None) -> Received | None:
        """:meth:`recv_array`, awaitable (same arguments and result). Cancelled, it loses
        nothing: the array its receive was waiting for goes to the next receive call."""
        timeout = self._checked_timeout(timeout)
        return self._received(await self._await_recv("_orphan", lambda: self._node.recv(timeout), timeout))

    def _checked_timeout(self, v: Any) -> float | None:
        """A receive's ``timeout``, refused as the native receive refuses it (naming it) before
        a lock or a cancelled call's receive would wait on it."""
        timeout = _timeout(v)
        # What the native side refuses (NaN, negative, infinite, beyond its clock): refused there.
        if timeout is not None and not 0 <= timeout < 2**64:
            self._node.recv(timeout)  # raises
        return timeout

    def _take_orphan(self, slot: str, timeout: float | None) -> Any:
        """The result of a cancelled awaiting call's receive (``slot``: ``_orphan`` or
        ``_job_orphan``), waiting for it up to ``timeout``; ``None`` if there is none or it had
        nothing (a receive still running stays for the next call)."""
        f = getattr(self, slot)
        if f is None:
            return None
        try:
            raw = f.result(_wait_s(timeout))
        except concurrent.futures.TimeoutError:
            return None
        setattr(self, slot, None)
        return raw

    async def _await_recv(self, slot: str, call: Callable[[], Any], timeout: float | None) -> Any:
        """``call`` (a blocking receive) in a thread, awaited; if the awaiting task is cancelled,
        the receive goes on and its result waits in ``slot`` for the next call. A cancelled
        call's receive still running is awaited first."""
        f = getattr(self, slot)
        if f is not None:
            try:
                raw = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(f)), _wait_s(timeout))
            except (asyncio.TimeoutError, TimeoutError):
                return None
            setattr(self, slot, None)
            if raw is not None:
                return raw
        f = _in_thread(call)
        try:
            return await asyncio.shield(asyncio.wrap_future(f))
        except asyncio.CancelledError:
            setattr(self, slot, f)
            raise

    def send_job(self, peer: str, messages: Any, *, msr: Any, deadline: float = 30.0) -> JobReport:
        """Send a job of ``messages``, ``(group, bytes)`` pairs, to ``peer``; group ``g`` must
        deliver at least the fraction ``msr[g]`` of its messages (``msr`` a sequence, or one
        number for a single group 0). Returns when every group has what it needs. Raises
        ``ValueError`` for a bad argument (``TypeError`` for a payload not bytes-like or a group
        not an integer) and ``TimeoutError`` after ``deadline`` seconds."""
        return self._job_report(_wait(self._start_job(peer, messages, msr, deadline)))

    def _start_job(self, peer: str, messages: Any, msr: Any, deadline: float) -> _native.JobHandle:
        msrs = _msrs(msr)
        msgs = _job_messages(messages)
        return self._node.send_job(_text("peer", peer, _PEER), msrs, msgs, _number("deadline", deadline))

    @staticmethod
    def _job_report(d: dict[str, Any] | None) -> JobReport:
        if d is None:
            raise TransportError("the job did not end")
        return JobReport(d["outcome"], d["elapsed_s"], [GroupReport(**g) for g in d["groups"]],
                         d["packets_sent"], d["packets_retx"])

    async def send_job_async(self, peer: str, messages: Any, *, msr: Any, deadline: float = 30.0) -> JobReport:
        """:meth:`send_job`, awaitable (same arguments, result and errors). Cancelled, the job
        stops: nothing more is sent for it."""
        return self._job_report(await _await(self._start_job(peer, messages, msr, deadline)))

    async def recv_job_async(self, timeout: float | None = None) -> Job | None:
        """:meth:`recv_job`, awaitable (same arguments and result). Cancelled, it loses
        nothing: the job it was gathering goes to the next receive call."""
        timeout = self._checked_timeout(timeout)
        job: Job | None = await self._await_recv("_job_orphan", lambda: self._gather_job(timeout), timeout)
        return job

    def recv_job(self, timeout: float | None = None) -> Job | None:
        """The next job a peer sends, gathered until its end (``None`` if nothing arrives
        within ``timeout`` seconds of the previous event; ``None`` timeout: wait forever).
        Messages of jobs from several peers at once are kept apart by (peer, job id). Calls
        from several threads take turns (each waits up to its ``timeout`` for the one before)."""
        timeout = self._checked_timeout(timeout)
        job: Job | None = self._take_orphan("_job_orphan", timeout)
        return job if job is not None else self._gather_job(timeout)

    def _gather_job(self, timeout: float | None) -> Job | None:
        wait = _wait_s(timeout)
        if not self._job_lock.acquire(timeout=-1 if wait is None else wait):
            return None
        try:
            return self._gather_job_locked(timeout)
        finally:
            self._job_lock.release()

    def _gather_job_locked(self, timeout: float | None) -> Job | None:
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

    def _start(self, peer: str, array: Any, p: float, deadline: float, tag: int = 0) -> _native.SendHandle:
        tag = _integer("tag", tag, 0, 2**32 - 1)
        a = np.asarray(array)
        if a.ndim != 1:
            raise ValueError(f"array: {a.ndim}-dimensional; give a 1-D array (ravel() it first)")
        # Either byte order: the values go on the wire little-endian.
        if a.dtype.kind != "f" or a.dtype.itemsize not in _DTYPES:
            raise ValueError(f"array: dtype {a.dtype}; give float32 or float16 values (astype(np.float32))")
        if a.size == 0:
            raise ValueError("array: empty; give at least one value")
        vb = a.dtype.itemsize
        data = np.ascontiguousarray(a, dtype=_DTYPES[vb]).tobytes()
        peer = _text("peer", peer, _PEER)
        return self._node.send_values(peer, data, vb, _number("p", p), _number("deadline", deadline), tag)

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
                        d["elapsed_s"], d["conn"], d["tag"])
