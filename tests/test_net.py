"""slacknet.net: the bounded-loss transport over real UDP sockets on loopback, from Python:
reliable and bounded-loss transfers with an exact missing mask, float16, asyncio, errors, and
the GIL released while waiting."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import numpy as np
import pytest

from slacknet.net import Endpoint, Faults, Received, TransportError

LOCAL = "127.0.0.1:0"


def _check(sent: np.ndarray, got: Received, p: float) -> None:
    assert got.array.dtype == sent.dtype and len(got.array) == len(sent)
    assert got.received_values == int((~got.missing).sum()) >= int(np.ceil(p * len(sent)))
    assert (got.array[~got.missing] == sent[~got.missing]).all()
    assert (got.array[got.missing] == 0).all()
    rebuilt = np.zeros(len(sent), dtype=bool)
    for a, b in got.ranges:
        rebuilt[a:b] = True
    assert (rebuilt == got.missing).all()


def test_a_reliable_array_arrives_whole() -> None:
    rx, tx = Endpoint(LOCAL), Endpoint(LOCAL)
    x = np.random.default_rng(1).standard_normal(200_000).astype(np.float32)
    r = tx.send_array(rx.address, x)
    got = rx.recv_array(timeout=10)
    assert got is not None and r.outcome == "complete"
    assert got.ranges == [] and (got.array == x).all() and got.fraction == 1.0
    assert got.peer == tx.address


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_with_loss_it_completes_at_p_with_an_exact_mask(dtype: type) -> None:
    rx = Endpoint(LOCAL)
    tx = Endpoint(LOCAL, faults=Faults(loss=0.15, seed=4))
    x = (np.arange(60_000) % 1000 + 1).astype(dtype)
    r = tx.send_array(rx.address, x, p=0.8)
    got = rx.recv_array(timeout=10)
    assert got is not None and r.outcome in ("enough", "complete")
    _check(x, got, 0.8)
    assert tx.stats()["fault_dropped"] > 0
    assert isinstance(got.as_masked(), np.ma.MaskedArray)


def test_the_cubic_window_law_completes_at_p_with_an_exact_mask() -> None:
    # The same loss and guarantees under CUBIC's window law (RFC 9438) instead of DCTCP's.
    rx = Endpoint(LOCAL)
    tx = Endpoint(LOCAL, faults=Faults(loss=0.1, seed=7), cc="cubic")
    x = (np.arange(200_000) % 977 + 1).astype(np.float32)
    r = tx.send_array(rx.address, x, p=0.9)
    got = rx.recv_array(timeout=10)
    assert got is not None and r.outcome in ("enough", "complete")
    _check(x, got, 0.9)
    assert tx.stats()["fault_dropped"] > 0
    whole = tx.send_array(rx.address, x)
    got = rx.recv_array(timeout=10)
    assert got is not None and whole.outcome == "complete" and (got.array == x).all()


def test_a_lost_tail_of_first_transmissions() -> None:
    # 100 packets of 351 values (1,452-byte datagrams); the first transmissions of the last 5
    # are dropped, and only those: a reliable send resends them and completes; at p = 0.9 the
    # sender never needs them.
    x = (np.arange(351 * 100) % 1000).astype(np.float32)
    tail = tuple(351 * i for i in range(95, 100))
    for p in (1.0, 0.9):
        rx, tx = Endpoint(LOCAL), Endpoint(LOCAL, faults=Faults(drop_first_tx=tail))
        r = tx.send_array(rx.address, x, p=p, deadline=20)
        got = rx.recv_array(timeout=10)
        assert got is not None
        _check(x, got, p)
        assert tx.stats()["fault_dropped"] == 5
        if p == 1.0:
            assert r.outcome == "complete" and got.ranges == [] and r.packets_retx >= 5


def test_asyncio() -> None:
    async def main() -> tuple[object, Received | None]:
        rx, tx = Endpoint(LOCAL), Endpoint(LOCAL)
        x = np.ones(10_000, dtype=np.float32)
        return await asyncio.gather(tx.send_array_async(rx.address, x, p=0.9), rx.recv_array_async(timeout=10))

    report, got = asyncio.run(main())
    assert got is not None and got.fraction >= 0.9


def test_jobs_with_asyncio() -> None:
    async def main() -> tuple[object, object]:
        rx, tx = Endpoint(LOCAL), Endpoint(LOCAL)
        msgs = [(0, b"a" * 3000), (0, b"b" * 10)]
        return await asyncio.gather(tx.send_job_async(rx.address, msgs, msr=1.0), rx.recv_job_async(timeout=10))

    report, job = asyncio.run(main())
    assert job is not None and job.messages == {0: (0, b"a" * 3000), 1: (0, b"b" * 10)} and job.lost == []


def test_the_gil_is_released_while_waiting() -> None:
    rx = Endpoint(LOCAL)
    ticks = []
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.005)

    t = threading.Thread(target=count)
    t.start()
    assert rx.recv_array(timeout=0.3) is None  # nothing sent: waits 0.3 s, then None
    stop.set()
    t.join()
    assert len(ticks) > 20, "the other thread ran while recv_array waited"


def test_a_peer_that_never_answers_times_out() -> None:
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    tx = Endpoint(LOCAL)
    with pytest.raises(TimeoutError, match="deadline"):
        tx.send_array(f"127.0.0.1:{silent.getsockname()[1]}", np.ones(100, np.float32), deadline=0.2)
    silent.close()


@pytest.mark.parametrize("call, match", [
    (lambda e: e.send_array("127.0.0.1:9", np.ones(4, np.float64)), "float32 or float16"),
    (lambda e: e.send_array("127.0.0.1:9", np.ones((2, 2), np.float32)), "1-D"),
    (lambda e: e.send_array("127.0.0.1:9", np.ones(4, np.float32), p=0), "p = 0"),
    (lambda e: e.send_array("127.0.0.1:9", np.ones(4, np.float32), p=1.5), "p = 1.5"),
    (lambda e: e.send_array("nowhere", np.ones(4, np.float32)), "peer = \"nowhere\""),
    (lambda e: e.send_array("127.0.0.1:9", np.ones(4, np.float32), deadline=-1), "deadline = -1"),
    (lambda e: e.send_array("127.0.0.1:9", np.array([], np.float32)), "data"),
])
def test_bad_arguments_are_one_clear_value_error(call: object, match: str) -> None:
    e = Endpoint(LOCAL)
    with pytest.raises(ValueError, match=match):
        call(e)  # type: ignore[operator]


def test_bad_endpoint_settings() -> None:
    with pytest.raises(ValueError, match="bind"):
        Endpoint("not an address")
    with pytest.raises(ValueError, match="loss = 2"):
        Endpoint(LOCAL, faults=Faults(loss=2.0))
    with pytest.raises(ValueError, match="rto_us = 0"):
        Endpoint(LOCAL, rto_us=0)
    with pytest.raises(ValueError, match='cc = "reno".*"dctcp".*"cubic"'):
        Endpoint(LOCAL, cc="reno")
    with pytest.raises(TransportError):
        busy = Endpoint(LOCAL)
        Endpoint(busy.address)  # the address is taken


def test_a_job_meets_every_groups_msr_and_reports_what_it_lost() -> None:
    rx = Endpoint(LOCAL)
    tx = Endpoint(LOCAL, faults=Faults(loss=0.2, seed=2))
    messages = [(i % 2, bytes([i % 250 + 1]) * 2000) for i in range(100)]
    report = tx.send_job(rx.address, messages, msr=[1.0, 0.7])
    job = rx.recv_job(timeout=10)
    assert job is not None and job.peer == tx.address and job.total == 100
    assert report.outcome in ("complete", "enough")
    for g, (rep, msr) in enumerate(zip(report.groups, [1.0, 0.7])):
        assert rep.messages == 50 and rep.delivered >= rep.required == int(np.ceil(msr * 50))
        arrived = sum(1 for gg, _ in job.messages.values() if gg == g)
        assert arrived >= rep.required
    assert job.lost is not None and sorted(list(job.messages) + job.lost) == list(range(100))
    for i, (g, data) in job.messages.items():
        assert (g, data) == messages[i]


def test_bad_jobs_are_one_clear_value_error() -> None:
    e = Endpoint(LOCAL)
    with pytest.raises(ValueError, match="msrs"):
        e.send_job("127.0.0.1:9", [(0, b"x")], msr=1.5)
    with pytest.raises(ValueError, match="no such group"):
        e.send_job("127.0.0.1:9", [(1, b"x")], msr=[1.0])
    with pytest.raises(ValueError, match="messages"):
        e.send_job("127.0.0.1:9", [], msr=1.0)
