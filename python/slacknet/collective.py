"""Gradient aggregation over the real transport: a parameter server and its workers.

The bounded-loss ML paper's parameter-server pattern (``shared/papers/bounded-loss-transport-
for-ml.txt`` §3.1) on :mod:`slacknet.net`, for any framework that can hand over its gradient
as one float32 (or float16) vector. Each round every worker sends its gradient to the server
with completion fraction ``p`` (the bounded-loss transport returns once that fraction arrived
and abandons what only a timeout would recover, §3.2); the server combines what arrived with a
receiver policy and sends the result back to every worker with the same ``p``; a worker gets
the aggregate with the mask of its values that did not arrive (zero there: no update, the
paper's zero-fill)::

    from slacknet.collective import ParameterServer, Worker
    from slacknet.net import Endpoint
    server = ParameterServer(Endpoint("0.0.0.0:7100"), workers=4, p=0.9)   # on the server
    while True:
        server.serve_round()
    worker = Worker(Endpoint(), "10.0.0.1:7100", p=0.9)                     # on each worker
    got = worker.allreduce(grad)          # a net.Received: got.array (the mean), got.missing

Policies (the same two as ``slacknet ml tolerance``, ``mltol.POLICIES``): ``"zero_fill"``
divides each value's sum over the gradients whose value arrived by the number of workers (a
missing value counts as zero, as the paper does); ``"rescale"`` divides it by how many of them
arrived (an unbiased mean of those that did; a value no worker's gradient delivered is 0).

Each worker applies the aggregate to its own replica of the model, so a value missing at one
worker is an update that replica did not get: under loss the replicas drift apart (the
paper's parameter server has the same property: a parameter that did not arrive keeps its old
value). A server with ``p=1`` sends every reply whole and keeps the replicas identical while
the workers' gradients still arrive bounded-loss.

A round is a barrier: the server waits for one gradient from each of ``workers`` distinct
peers, and a worker waits for the server's reply before it can send again. Every array carries
its round number (the transport's ``tag``), so rounds never mix: the server takes a worker's
gradient only for the round it gathers (a second one of that round replaces the first: a
resend after the worker's ``TimeoutError``), answers one for the round before with that
round's aggregate again (the worker missed the reply), and drops others (counted in
``RoundReport.ignored``); a worker takes only the reply of its own round. A gradient of another
length or type than the round's first is a :class:`CollectiveError` naming the peer (the round
is dropped then: the gradients heard are discarded and their workers get no reply); a round that
does not gather within ``timeout`` is a ``TimeoutError`` naming how many workers were heard, and
stays open: the next ``serve_round`` goes on gathering it with the gradients already heard
(starting afresh would combine the late worker's gradient with the next round's of the others).
After a worker's ``TimeoutError``, call ``allreduce`` again with the same gradient: it resends
it for the same round, or returns the round's aggregate at once if it came in the meantime.

Who counts as a worker: without ``peers`` the server takes the first ``workers`` distinct
addresses that send it an array, so any host that can reach its port can take a worker's place
and put its numbers into the mean. Give ``peers``, the workers' addresses as the server sees
them (after NAT; a worker bound to port 0 has a new port each run), and arrays from anyone else
are dropped and counted (``RoundReport.ignored``). A worker takes as the aggregate only an
array from the server's address with its round's number; replies of other rounds and arrays
from others are dropped and counted (``Worker.ignored``). Round numbers count modulo 2^32.

Values are summed in float64 and the mean cast back to the gradients' type: a mean is never
larger than the largest value, so float16 gradients cannot overflow to inf in the sum. NaN and
inf are carried as IEEE arithmetic gives them (a NaN or inf in one worker's gradient is one in
every replica's aggregate, as mixed-precision loss scaling expects to see it).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from .net import Endpoint, Received, SendReport, _integer, _number, _text

__all__ = ["CollectiveError", "ParameterServer", "POLICIES", "RoundReport", "Worker"]

#: Receiver policies for values that did not arrive (as :data:`slacknet.mltol.POLICIES`).
POLICIES = ("zero_fill", "rescale")
#: At most this many workers per server.
MAX_WORKERS = 1024
# Round numbers travel as the transport's 32-bit tag.
_TAGS = 2**32


class CollectiveError(RuntimeError):
    """A round that cannot be combined (gradients of different lengths or types), or a worker or
    server used from two threads at once."""


def _p(v: Any) -> float:
    p = _number("p", v)
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p = {p}: must be in (0, 1], the fraction of each gradient that must arrive (1: all)")
    return p


def _deadline(v: Any) -> float:
    d = _number("deadline", v)
    if not 0.0 < d < 1e6:
        raise ValueError(f"deadline = {d}: give seconds, more than 0 and less than 10^6")
    return d


def _wait(v: Any) -> float | None:
    """A receive ``timeout``: None, or seconds in [0, 10^6), checked before anything is sent (the
    transport checks it only when it waits: after a worker's gradient went out)."""
    if v is None:
        return None
    t = _number("timeout", v)
    if not 0.0 <= t < 1e6:
        raise ValueError(f"timeout = {t}: give seconds, at least 0 and less than 10^6, or None to wait for ever")
    return t


_Addr = tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]


def _addr(text: str) -> _Addr:
    """An "ip:port" ("[v6]:port", as the transport names peers) as a comparable key; an IPv4
    address mapped into IPv6 is the IPv4 one. ``ValueError`` (caught by callers) if it is not."""
    host, _, port = text.rpartition(":")
    return _key(host, port)


def _key(host: Any, port: Any) -> _Addr:
    ip = ipaddress.ip_address(str(host).strip("[]").split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    n = int(port)
    if not 0 < n < 65536:
        raise ValueError(f"port {n}")
    return ip, n


def _remaining(until: float | None) -> float | None:
    """Seconds left until the monotonic time ``until`` (None: for ever), 0 once passed."""
    return None if until is None else max(0.0, until - time.monotonic())


@dataclass(frozen=True)
class RoundReport:
    """One round at the server: the ``peers`` in the order they were heard, the fraction of each
    one's gradient that arrived (``arrived``), their ``missing`` masks (shape ``(workers,
    values)``, ``True`` = did not arrive), ``lost_everywhere`` (values no worker delivered),
    how each reply went (``replies``, :class:`~slacknet.net.SendReport` by peer), and the
    round's ``gather_s`` and ``elapsed_s`` (from the first gradient heard to the last reply),
    how many arrays it dropped (``ignored``: from addresses not in the server's ``peers``, or of
    no round it could use), how many gradients replaced a worker's earlier one of this round
    (``resent``), the ``round`` number, and how many workers got the previous round's aggregate
    again (``replayed``)."""

    peers: list[str]
    arrived: list[float]
    missing: np.ndarray
    lost_everywhere: int
    replies: list[SendReport]
    gather_s: float
    elapsed_s: float
    ignored: int = 0
    resent: int = 0
    round: int = 0
    replayed: int = 0


class ParameterServer:
    """The server of a parameter-server all-reduce on ``endpoint``, for ``workers`` workers.

    ``p``: the completion fraction of the replies it sends (the workers choose their own for
    what they send); ``policy``: ``"zero_fill"`` or ``"rescale"`` (module doc); ``deadline``:
    seconds each reply may take; ``peers``: the workers' "ip:port" addresses as the server sees
    them (``workers`` of them), to drop arrays from anyone else (None: the first ``workers``
    addresses heard are the workers). Raises ``ValueError``/``TypeError`` naming a bad argument.
    One round at a time: a second thread's ``serve_round`` is a :class:`CollectiveError`."""

    def __init__(self, endpoint: Endpoint, workers: int, *, p: float = 1.0, policy: str = "zero_fill",
                 deadline: float = 30.0, peers: Any = None) -> None:
        if not isinstance(endpoint, Endpoint):
            raise TypeError(f"endpoint: {type(endpoint).__name__}; give a slacknet.net.Endpoint")
        self.endpoint = endpoint
        self.workers = _integer("workers", workers, 1, MAX_WORKERS)
        self.p = _p(p)
        if not isinstance(policy, str) or policy not in POLICIES:
            raise ValueError(f"policy = {policy!r:.60}: give one of {', '.join(map(repr, POLICIES))}")
        self.policy = policy
        self.deadline = _deadline(deadline)
        self.peers: set[_Addr] | None = None
        if peers is not None:
            if isinstance(peers, (str, bytes)) or not hasattr(peers, "__iter__"):
                raise TypeError(f"peers = {peers!r:.60}: give a list of \"ip:port\" strings, or None")
            self.peers = set()
            for i, q in enumerate(peers):
                if i >= self.workers:  # an endless iterable ends here
                    raise ValueError(f"peers: more than workers = {self.workers} addresses; give one per worker")
                try:
                    self.peers.add(_addr(_text(f"peers[{i}]", q, '"10.0.0.2:7101"')))
                except ValueError:
                    raise ValueError(f"peers[{i}] = {q!r:.60}: not \"ip:port\"; give the address the server sees the "
                                     'worker send from, e.g. "10.0.0.2:7101"') from None
            if len(self.peers) != self.workers:
                raise ValueError(f"peers: {len(self.peers)} distinct addresses for workers = {self.workers}; give "
                                 "one address per worker")
        self.rounds = 0
        # The round being gathered (kept across a TimeoutError) and when its first gradient came.
        self._got: dict[str, Received] = {}
        self._t_first = 0.0
        # The previous round's aggregate and workers: sent again to a worker that missed it, by
        # sends waited for when the round ends (a round that times out does not wait on them).
        self._last: tuple[np.ndarray, set[str]] | None = None
        self._replays: list[Any] = []
        # The round's ignored, resent and replayed arrays (kept across a TimeoutError).
        self._counts: Counter[str] = Counter()
        self._busy = threading.Lock()

    def serve_round(self, timeout: float | None = None) -> RoundReport:
        """Gather one gradient from each worker, combine them and send the result back to each.
        ``timeout``: seconds to wait for each next gradient (None: for ever). Raises
        ``TimeoutError`` if a gradient does not come in time (the round stays open: the next
        call goes on gathering it), :class:`CollectiveError` for a round that cannot be combined
        (nothing is sent back then and the round is dropped). If a reply fails, the others are
        still sent and the round counts; then it raises ``TimeoutError`` naming the workers whose
        reply timed out (another error of a reply is raised as it is, with a note naming the
        worker)."""
        timeout = _wait(timeout)
        if not self._busy.acquire(blocking=False):
            raise CollectiveError("serve_round is already running in another thread; serve one round at a time")
        try:
            return self._serve(timeout)
        finally:
            self._busy.release()

    def _serve(self, timeout: float | None) -> RoundReport:
        got = self._got
        counts = self._counts
        tag = self.rounds % _TAGS
        until = None if timeout is None else time.monotonic() + timeout
        while len(got) < self.workers:
            r = self.endpoint.recv_array(_remaining(until))
            if r is None:
                raise TimeoutError(f"round {self.rounds}: heard {len(got)} of {self.workers} workers "
                                   f"({', '.join(got) or 'none'}) within {timeout} s of the last; the round stays "
                                   "open (call serve_round again to go on gathering it)")
            if self.peers is not None and _addr(r.peer) not in self.peers:
                counts["ignored"] += 1  # not a worker: dropped, and the clock goes on running
                continue
            if r.tag != tag:
                last = self._last
                if last is not None and r.tag == (tag - 1) % _TAGS and r.peer in last[1]:
                    # It missed the previous round's reply and resent: that aggregate again.
                    try:
                        self._replays = [h for h in self._replays if not self._ended(h)]  # in flight only
                        self._replays.append(self.endpoint._start(r.peer, last[0], self.p, self.deadline, r.tag))
                        counts["replayed"] += 1
                    except Exception:  # noqa: BLE001 - best effort; it will time out and retry
                        counts["ignored"] += 1
                else:
                    counts["ignored"] += 1  # of no round this server can use
                continue
            if not got:
                self._t_first = time.perf_counter()
            first = next((v for q, v in got.items() if q != r.peer), r)
            heard = len(got)
            if r.peer in got:
                counts["resent"] += 1  # a resend for this round after the worker's TimeoutError
                del got[r.peer]
            if r.array.dtype != first.array.dtype or len(r.array) != len(first.array):
                got.clear()
                raise CollectiveError(f"round {self.rounds}: {r.peer} sent {len(r.array)} {r.array.dtype} values where "
                                      f"{first.peer} sent {len(first.array)} {first.array.dtype}; every worker "
                                      f"must send the same shape of gradient (the round's {heard} gradients are "
                                      "dropped and their workers get no reply)")
            got[r.peer] = r
            until = None if timeout is None else time.monotonic() + timeout
        self._got = {}
        self._counts = Counter()
        t_first = self._t_first
        gather = time.perf_counter() - t_first
        peers = list(got)
        missing = np.stack([got[q].missing for q in peers])
        # Missing values are zero in each array (the transport's zero-fill), so the sum is over
        # the values that arrived. One float64 vector (not a float64 copy of every gradient);
        # inf - inf is NaN, as IEEE says, without numpy's warning.
        total = np.zeros(len(missing[0]), dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            for q in peers:
                total += got[q].array
            if self.policy == "zero_fill":
                agg = total / len(peers)
            else:
                agg = total / np.maximum(1, (~missing).sum(axis=0))
            out = agg.astype(got[peers[0]].array.dtype)
        # Every reply started at once and waited for in turn: no thread per worker.
        handles: dict[str, Any] = {}
        failed: dict[str, BaseException] = {}
        for q in peers:
            try:
                handles[q] = self.endpoint._start(q, out, self.p, self.deadline, tag)
            except Exception as e:  # noqa: BLE001 - reported below, after the others' replies
                failed[q] = e
        self._last = (out, set(peers))
        replies: list[SendReport] = []
        for q, h in handles.items():
            try:
                replies.append(Endpoint._report(h.wait()))
            except Exception as e:  # noqa: BLE001 - as above
                failed[q] = e
        replays, self._replays = self._replays, []
        self._reap(replays)
        n = self.rounds
        self.rounds += 1
        if failed:
            others = len(peers) - len(failed)
            if all(isinstance(e, TimeoutError) for e in failed.values()):
                raise TimeoutError(f"round {n}: the reply to {', '.join(failed)} did not complete within deadline = "
                                   f"{self.deadline} s (worker gone, or its endpoint refuses it); the other {others} "
                                   "got theirs and the round counts") from next(iter(failed.values()))
            bad, err = next((q, e) for q, e in failed.items() if not isinstance(e, TimeoutError))
            err.add_note(f"round {n}: replying to {bad} (of {len(failed)} failed replies: {', '.join(failed)}); the "
                         f"other {others} got theirs and the round counts")
            raise err
        return RoundReport(peers, [got[q].fraction for q in peers], missing, int(missing.all(axis=0).sum()),
                           replies, gather, time.perf_counter() - t_first, counts["ignored"], counts["resent"], n,
                           counts["replayed"])

    @staticmethod
    def _ended(handle: Any) -> bool:
        """Whether a send has ended (completed or failed), without waiting."""
        try:
            return handle.wait(0) is not None
        except Exception:  # noqa: BLE001 - failed: ended
            return True

    @staticmethod
    def _reap(handles: list[Any]) -> None:
        """Wait for the previous round's aggregates sent again (best effort: a worker that is
        gone makes its own call time out and retry)."""
        for h in handles:
            try:
                h.wait()
            except Exception:  # noqa: BLE001 - see above
                pass


class Worker:
    """A worker of a parameter-server all-reduce: ``endpoint`` (used for nothing else), the
    ``server``'s "ip:port" (or "host:port", resolved here: a name that does not resolve is a
    ``ValueError``), the completion fraction ``p`` of the gradients it sends, and ``deadline``
    seconds for each send. ``ignored`` counts the arrays it dropped: from others than the
    server, or received before it sent (a reply that came after a ``TimeoutError``)."""

    def __init__(self, endpoint: Endpoint, server: str, *, p: float = 1.0, deadline: float = 30.0) -> None:
        if not isinstance(endpoint, Endpoint):
            raise TypeError(f"endpoint: {type(endpoint).__name__}; give a slacknet.net.Endpoint")
        self.endpoint = endpoint
        self.server = _text("server", server, '"10.0.0.1:7100"')
        host, _, port = self.server.rpartition(":")
        if port.isdigit() and not 1 <= int(port) <= 65535:
            # getaddrinfo takes the port modulo 2^16: "…:99999" became port 34463.
            raise ValueError(f"server = {self.server!r:.60}: port {port} is not a UDP port; give 1 to 65535, e.g. "
                             '"10.0.0.1:7100"')
        try:
            infos = socket.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_DGRAM)
            self._server = {_key(a[4][0], a[4][1]) for a in infos}
        except (OSError, ValueError, UnicodeError) as e:
            raise ValueError(f"server = {self.server!r:.60}: not an address ({e}); give \"host:port\", e.g. "
                             '"10.0.0.1:7100"') from None
        self.p = _p(p)
        self.deadline = _deadline(deadline)
        self.ignored = 0
        #: The round this worker takes part in next (rounds it completed), modulo 2^32 on the wire.
        self.round = 0
        self._busy = threading.Lock()

    def allreduce(self, grad: Any, timeout: float | None = 60.0) -> Received:
        """Send ``grad`` (a 1-D float32 or float16 array) and return the server's aggregate of the
        round (:class:`~slacknet.net.Received`: ``array``, zero where ``missing``). Raises what
        :meth:`Endpoint.send_array` raises, ``TimeoutError`` if no reply comes within
        ``timeout`` seconds of the send (None: wait for ever; checked before anything is sent,
        as ``grad`` is; the round stays this worker's: call again with the same gradient to resend
        it, or to take the aggregate if it came meanwhile), and :class:`CollectiveError` if
        another thread is in ``allreduce`` on this worker (one round at a time)."""
        timeout = _wait(timeout)
        if timeout == 0:
            raise ValueError("timeout = 0: the reply comes only after the server has every gradient; give seconds "
                             "(more than 0), or None to wait for ever")
        if not self._busy.acquire(blocking=False):
            raise CollectiveError(f"allreduce on {self.endpoint.address} is already running in another thread: a "
                                  "worker takes part in one round at a time (call it from one thread, or give each "
                                  "thread its own Worker and Endpoint)")
        try:
            tag = self.round % _TAGS
            # What is here already: this round's aggregate if it came after an earlier call of
            # this round timed out (then it is the answer, and nothing is sent again), else late
            # replies of other rounds or strangers' arrays, dropped.
            for _ in range(MAX_WORKERS):
                got = self.endpoint.recv_array(0)
                if got is None:
                    break
                if self._ours(got, tag):
                    self.round += 1
                    return got
                self.ignored += 1
            self.endpoint.send_array(self.server, grad, p=self.p, deadline=self.deadline, tag=tag)
            until = None if timeout is None else time.monotonic() + timeout
            while True:
                got = self.endpoint.recv_array(_remaining(until))
                if got is None:
                    raise TimeoutError(f"no aggregate of round {self.round} from {self.server} within {timeout} s of "
                                       "sending the gradient (is the server serving rounds, for this many workers? "
                                       "call allreduce again with the same gradient to resend it)")
                if self._ours(got, tag):
                    self.round += 1
                    return got
                self.ignored += 1
        finally:
            self._busy.release()

    def _ours(self, got: Received, tag: int) -> bool:
        """Whether ``got`` is the server's aggregate of the round tagged ``tag``."""
        return _addr(got.peer) in self._server and got.tag == tag
