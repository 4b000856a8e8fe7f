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
peers, and a worker waits for the server's reply before it can send again, so rounds never mix.
A worker that sends twice in one round, or a gradient of another length or type than the
round's first, is a :class:`CollectiveError` naming the peer; a round that does not gather
within ``timeout`` is a ``TimeoutError`` naming how many workers were heard.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from .net import Endpoint, Received, SendReport, _integer, _number, _text

__all__ = ["CollectiveError", "ParameterServer", "POLICIES", "RoundReport", "Worker"]

#: Receiver policies for values that did not arrive (as :data:`slacknet.mltol.POLICIES`).
POLICIES = ("zero_fill", "rescale")
#: At most this many workers per server (one reply thread each).
MAX_WORKERS = 1024


class CollectiveError(RuntimeError):
    """A round that cannot be combined: a worker sent twice, or gradients that do not match."""


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


@dataclass(frozen=True)
class RoundReport:
    """One round at the server: the ``peers`` in the order they were heard, the fraction of each
    one's gradient that arrived (``arrived``), their ``missing`` masks (shape ``(workers,
    values)``, ``True`` = did not arrive), ``lost_everywhere`` (values no worker delivered),
    how each reply went (``replies``, :class:`~slacknet.net.SendReport` by peer), and the
    round's ``gather_s`` and ``elapsed_s`` (from the first gradient heard to the last reply)."""

    peers: list[str]
    arrived: list[float]
    missing: np.ndarray
    lost_everywhere: int
    replies: list[SendReport]
    gather_s: float
    elapsed_s: float


class ParameterServer:
    """The server of a parameter-server all-reduce on ``endpoint``, for ``workers`` workers.

    ``p``: the completion fraction of the replies it sends (the workers choose their own for
    what they send); ``policy``: ``"zero_fill"`` or ``"rescale"`` (module doc); ``deadline``:
    seconds each reply may take. Raises ``ValueError``/``TypeError`` naming a bad argument."""

    def __init__(self, endpoint: Endpoint, workers: int, *, p: float = 1.0, policy: str = "zero_fill",
                 deadline: float = 30.0) -> None:
        if not isinstance(endpoint, Endpoint):
            raise TypeError(f"endpoint: {type(endpoint).__name__}; give a slacknet.net.Endpoint")
        self.endpoint = endpoint
        self.workers = _integer("workers", workers, 1, MAX_WORKERS)
        self.p = _p(p)
        if not isinstance(policy, str) or policy not in POLICIES:
            raise ValueError(f"policy = {policy!r:.60}: give one of {', '.join(map(repr, POLICIES))}")
        self.policy = policy
        self.deadline = _deadline(deadline)
        self.rounds = 0

    def serve_round(self, timeout: float | None = None) -> RoundReport:
        """Gather one gradient from each worker, combine them and send the result back to each.
        ``timeout``: seconds to wait for each next gradient (None: for ever). Raises
        ``TimeoutError`` if a gradient does not come in time, :class:`CollectiveError` for a
        round that cannot be combined (nothing is sent back then)."""
        timeout = None if timeout is None else _number("timeout", timeout)
        got: dict[str, Received] = {}
        t_first = time.perf_counter()
        while len(got) < self.workers:
            r = self.endpoint.recv_array(timeout)
            if r is None:
                raise TimeoutError(f"round {self.rounds}: heard {len(got)} of {self.workers} workers "
                                   f"({', '.join(got) or 'none'}) within {timeout} s of the last")
            if not got:
                t_first = time.perf_counter()
            if r.peer in got:
                raise CollectiveError(f"round {self.rounds}: {r.peer} sent a second gradient before the round "
                                      "ended (one per round: a worker waits for the reply before it sends again)")
            first = next(iter(got.values()), r)
            if r.array.dtype != first.array.dtype or len(r.array) != len(first.array):
                raise CollectiveError(f"round {self.rounds}: {r.peer} sent {len(r.array)} {r.array.dtype} values where "
                                      f"{first.peer} sent {len(first.array)} {first.array.dtype}; every worker "
                                      "must send the same shape of gradient")
            got[r.peer] = r
        gather = time.perf_counter() - t_first
        peers = list(got)
        grads = np.stack([got[q].array for q in peers]).astype(np.float64)
        missing = np.stack([got[q].missing for q in peers])
        # Missing values are zero in each array (the transport's zero-fill), so the sum is over
        # the values that arrived.
        total = grads.sum(axis=0)
        if self.policy == "zero_fill":
            agg = total / len(peers)
        else:
            agg = total / np.maximum(1, (~missing).sum(axis=0))
        out = agg.astype(got[peers[0]].array.dtype)
        with ThreadPoolExecutor(max_workers=len(peers)) as pool:
            replies = list(pool.map(lambda q: self.endpoint.send_array(q, out, p=self.p, deadline=self.deadline),
                                    peers))
        self.rounds += 1
        return RoundReport(peers, [got[q].fraction for q in peers], missing, int(missing.all(axis=0).sum()),
                           replies, gather, time.perf_counter() - t_first)


class Worker:
    """A worker of a parameter-server all-reduce: ``endpoint`` (used for nothing else), the
    ``server``'s "ip:port", the completion fraction ``p`` of the gradients it sends, and
    ``deadline`` seconds for each send."""

    def __init__(self, endpoint: Endpoint, server: str, *, p: float = 1.0, deadline: float = 30.0) -> None:
        if not isinstance(endpoint, Endpoint):
            raise TypeError(f"endpoint: {type(endpoint).__name__}; give a slacknet.net.Endpoint")
        self.endpoint = endpoint
        self.server = _text("server", server, '"10.0.0.1:7100"')
        self.p = _p(p)
        self.deadline = _deadline(deadline)

    def allreduce(self, grad: Any, timeout: float | None = 60.0) -> Received:
        """Send ``grad`` (a 1-D float32 or float16 array) and return the server's aggregate of the
        round (:class:`~slacknet.net.Received`: ``array``, zero where ``missing``). Raises what
        :meth:`Endpoint.send_array` raises, and ``TimeoutError`` if no reply comes within
        ``timeout`` seconds of the send (None: wait for ever)."""
        timeout = None if timeout is None else _number("timeout", timeout)
        self.endpoint.send_array(self.server, grad, p=self.p, deadline=self.deadline)
        got = self.endpoint.recv_array(timeout)
        if got is None:
            raise TimeoutError(f"no aggregate from {self.server} within {timeout} s of sending the gradient (is the "
                               "server serving rounds, for this many workers?)")
        return got
