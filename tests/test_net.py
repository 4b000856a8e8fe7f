"""slacknet.net: the bounded-loss transport over real UDP sockets on loopback, from Python:
reliable and bounded-loss transfers with an exact missing mask, float16, asyncio, errors, and
the GIL released while waiting."""

from __future__ import annotations

import _thread
import asyncio
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from slacknet.net import Endpoint, Faults, Received, TransportError

# Real packets through real sockets, timed: `make test` runs these tests after the others, one at a time.
pytestmark = pytest.mark.realtime

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


def test_the_default_endpoint_answers_from_the_address_it_was_reached_at() -> None:
    # The default bind is 0.0.0.0; reached at 127.0.0.2, it replied from 127.0.0.1 and the
    # sender, which knew no such peer, timed out blaming the receiver.
    rx, tx = Endpoint(), Endpoint(LOCAL)
    there = f"127.0.0.2:{rx.address.rsplit(':', 1)[1]}"
    x = np.arange(1, 30_001, dtype=np.float32)
    r = tx.send_array(there, x, deadline=10)
    got = rx.recv_array(timeout=10)
    assert got is not None and r.outcome == "complete" and (got.array == x).all()
    assert tx.stats()["num_unknown"] == 0
    # Taking the message gave its receive memory back.
    assert rx.stats()["receive_memory_bytes"] == 0


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
    # sender never needs them. In index order, so that they are the last packets sent too
    # (shuffled, a sender at p = 0.9 may stop before sending some of them at all).
    x = (np.arange(351 * 100) % 1000).astype(np.float32)
    tail = tuple(351 * i for i in range(95, 100))
    for p in (1.0, 0.9):
        rx, tx = Endpoint(LOCAL), Endpoint(LOCAL, faults=Faults(drop_first_tx=tail), send_order="index")
        r = tx.send_array(rx.address, x, p=p, deadline=20)
        got = rx.recv_array(timeout=10)
        assert got is not None
        _check(x, got, p)
        assert tx.stats()["fault_dropped"] == 5
        if p == 1.0:
            assert r.outcome == "complete" and got.ranges == [] and r.packets_retx >= 5


def test_a_tail_loss_probe_ends_a_lost_tail_before_the_timeout() -> None:
    # As above, reliable, with a 2 s minimum timeout: without the probe the send waits it out
    # (one timeout); with it the lost tail is found from the probe's acknowledgement, round
    # trips after the last progress, and no timeout fires.
    x = (np.arange(351 * 100) % 1000).astype(np.float32)
    tail = tuple(351 * i for i in range(95, 100))
    took = {}
    for probe in (False, True):
        rx = Endpoint(LOCAL)
        tx = Endpoint(LOCAL, faults=Faults(drop_first_tx=tail), send_order="index", rto_us=2_000_000,
                      tail_probe=probe)
        r = tx.send_array(rx.address, x, p=1.0, deadline=20)
        got = rx.recv_array(timeout=10)
        assert got is not None and (got.array == x).all() and r.outcome == "complete"
        assert r.timeouts == (0 if probe else 1), r
        took[probe] = r.elapsed_s
    assert took[False] >= 2.0 and took[True] < 1.0, took
    with pytest.raises(TypeError, match="tail_probe"):
        Endpoint(LOCAL, tail_probe=1)  # type: ignore[arg-type]


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
    with pytest.raises(TimeoutError, match="deadline exceeded .*the peer acknowledged nothing: is a receiver bound"):
        tx.send_array(f"127.0.0.1:{silent.getsockname()[1]}", np.ones(100, np.float32), deadline=0.2)
    silent.close()


def test_close_stops_the_endpoint_and_everything_waiting_on_it() -> None:
    # A receive waiting in another thread and a send to a silent peer, both with 30 s to go,
    # end with TransportError as soon as their endpoints close; then nothing more is accepted.
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    rx, tx = Endpoint(LOCAL), Endpoint(LOCAL)
    errors: list[BaseException] = []

    def wait(call: Callable[[], object]) -> None:
        try:
            call()
        except BaseException as e:  # the test reads what it was
            errors.append(e)

    threads = [
        threading.Thread(target=wait, args=(lambda: rx.recv_array(timeout=30),)),
        threading.Thread(target=wait, args=(lambda: tx.send_array(f"127.0.0.1:{silent.getsockname()[1]}",
                                                                  np.ones(100, np.float32), deadline=30),)),
    ]
    for t in threads:
        t.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    stats = rx.close()
    tx.close()
    for t in threads:
        t.join(timeout=10)
    assert time.monotonic() - t0 < 5 and not any(t.is_alive() for t in threads)
    assert len(errors) == 2 and all(isinstance(e, TransportError) and "closed" in str(e) for e in errors), errors
    assert rx.closed and stats["num_received"] == 0 and rx.close() == stats
    with pytest.raises(TransportError, match="the endpoint is closed"):
        rx.recv_array(timeout=0)
    with pytest.raises(TransportError, match="the endpoint is closed"):
        tx.send_array(rx.address, np.ones(10, np.float32))
    silent.close()


def _sent_after(ep: Endpoint, wait: float = 0.3) -> int:
    """Datagrams ``ep`` sends in ``wait`` seconds from 0.1 s from now (its loop's turn to see
    a cancellation)."""
    time.sleep(0.1)
    before = ep.stats()["num_sent"]
    time.sleep(wait)
    return ep.stats()["num_sent"] - before


def test_an_interrupted_or_cancelled_send_stops_sending() -> None:
    # A send to a silent peer with 30 s to go, interrupted by Ctrl-C (sync) or cancelled
    # (asyncio): before, it went on sending until its deadline, and asyncio.run waited for it.
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    to = f"127.0.0.1:{silent.getsockname()[1]}"
    tx = Endpoint(LOCAL)
    # A test run started as a background job of a shell (`make test &`, nohup) inherits SIGINT
    # ignored, Python then installs no handler, and `interrupt_main` does nothing (the send ran
    # to its 30 s deadline in such a run): give this test the terminal's behaviour.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.3, _thread.interrupt_main).start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            tx.send_array(to, np.ones(1000, np.float32), deadline=30)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - t0 < 5
    assert _sent_after(tx) == 0

    async def cancel_after(coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    for coro in (tx.send_array_async(to, np.ones(1000, np.float32), deadline=30),
                 tx.send_job_async(to, [(0, b"x" * 3000)] * 4, msr=1.0, deadline=30)):
        t0 = time.monotonic()
        asyncio.run(cancel_after(coro))
        assert time.monotonic() - t0 < 5
        assert _sent_after(tx) == 0
    silent.close()


def test_an_endpoint_is_a_context_manager() -> None:
    with Endpoint(LOCAL) as rx, Endpoint(LOCAL) as tx:
        tx.send_array(rx.address, np.ones(1000, np.float32))
        got = rx.recv_array(timeout=10)
        assert got is not None and not rx.closed
    assert rx.closed and tx.closed


def test_a_receiver_refusing_a_message_too_large_for_it_is_named_in_the_timeout() -> None:
    # The protocol has no refusal: the receiver drops what exceeds its max_message_bytes, and
    # the sender's TimeoutError names that setting among what to check.
    rx = Endpoint(LOCAL, max_message_bytes=100)
    with pytest.raises(TimeoutError, match="acknowledged nothing.*max_message_bytes"):
        Endpoint(LOCAL).send_array(rx.address, np.ones(1000, np.float32), deadline=0.2)


def test_a_receiver_floor_refuses_an_array_whose_p_asks_for_less() -> None:
    # The sender's p alone decides when an array is complete; a receiver with a floor of 0.9
    # refuses one sent with p = 0.5 (nothing handed up, counted, the sender's TimeoutError names
    # the knob) and takes one sent with p = 0.9 (at least 90% of its values, by its report).
    rx = Endpoint(LOCAL, min_receive_fraction=0.9)
    tx = Endpoint(LOCAL)
    x = np.arange(1, 5001, dtype=np.float32)
    with pytest.raises(TimeoutError, match="acknowledged nothing.*min_receive_fraction"):
        tx.send_array(rx.address, x, p=0.5, deadline=0.3)
    assert rx.recv_array(timeout=0.05) is None
    st = rx.stats()
    assert st["num_refused_below_floor"] > 0 and st["num_refused"] == st["num_refused_below_floor"], st
    r = tx.send_array(rx.address, x, p=0.9, deadline=20)
    got = rx.recv_array(timeout=10)
    assert got is not None and got.fraction >= 0.9 and r.outcome in ("enough", "complete")
    assert rx.stats()["num_refused"] == st["num_refused"]


@pytest.mark.parametrize("call, match", [
    (lambda e: e.send_array("127.0.0.1:9", np.ones(4, np.float64)), "float32 or float16"),
    (lambda e: e.send_array("127.0.0.1:9", np.ones((2, 2), np.float32)), "1-D"),
    (lambda e: e.send_array("127.0.0.1:9", np.ones(4, np.float32), p=0), "p = 0"),
    (lambda e: e.send_array("127.0.0.1:9", np.ones(4, np.float32), p=1.5), "p = 1.5"),
    (lambda e: e.send_array("nowhere", np.ones(4, np.float32)), "peer = \"nowhere\""),
    (lambda e: e.send_array("127.0.0.1:9", np.ones(4, np.float32), deadline=-1), "deadline = -1"),
    (lambda e: e.send_array("127.0.0.1:9", np.array([], np.float32)), "array: empty"),
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
    with pytest.raises(ValueError, match='send_order = "random".*"shuffled".*"index"'):
        Endpoint(LOCAL, send_order="random")
    with pytest.raises(TypeError, match="send_order"):
        Endpoint(LOCAL, send_order=1)  # type: ignore[arg-type]
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
    with pytest.raises(ValueError, match="msr = 1.5: "):
        e.send_job("127.0.0.1:9", [(0, b"x")], msr=1.5)
    with pytest.raises(ValueError, match="no such group"):
        e.send_job("127.0.0.1:9", [(1, b"x")], msr=[1.0])
    with pytest.raises(ValueError, match="messages"):
        e.send_job("127.0.0.1:9", [], msr=1.0)


# ---------------------------------------------------------------------------------------------
# Hostile arguments (audit of the API surface): each is one exception naming the argument, its
# value and the fix, raised before anything is sent; none is a panic, a hang, or a timeout.

X4 = np.ones(4, np.float32)


@pytest.mark.parametrize("kw, exc, match", [
    # Integers out of their type's range (they were a bare OverflowError naming nothing).
    ({"max_message_bytes": -1}, ValueError, "max_message_bytes = -1: .*at least 1"),
    ({"max_message_bytes": 2**70}, ValueError, "max_message_bytes = 1180591620717411303424"),
    ({"max_message_bytes": 0}, ValueError, "max_message_bytes = 0: .*at least 1"),
    ({"max_receive_memory_bytes": 0}, ValueError, "max_receive_memory_bytes = 0: .*at least 1"),
    ({"rto_us": -5}, ValueError, "rto_us = -5"),
    ({"rto_us": 1.5}, TypeError, "rto_us = 1.5: .*integer"),
    # Accepted up to 2^64 - 1: a lossy send then only waited for its deadline.
    ({"rto_us": 10**12 + 1}, ValueError, "rto_us = 1000000000001: .*at most 1000000000000"),
    ({"faults": Faults(seed=-1)}, ValueError, "seed = -1"),
    ({"faults": Faults(drop_nth=(-1,))}, ValueError, r"drop_nth\[0\] = -1"),
    ({"faults": Faults(drop_first_tx=(2**40,))}, ValueError, r"drop_first_tx\[0\] = 1099511627776"),
    ({"faults": "x"}, TypeError, "faults = 'x': give a Faults"),
    ({"cc": None}, TypeError, "cc = None: give a string"),  # was "'None' is not an instance of 'str'"
    # linger_ms is milliseconds: the message said "-1000 ... microseconds".
    ({"linger_ms": -1}, ValueError, "linger_ms = -1.0: .*milliseconds"),
    ({"linger_ms": 1e300}, ValueError, "linger_ms = 1e300: "),
    ({"faults": Faults(reorder_delay_us=1e30)}, ValueError, "reorder_delay_us = 1e30: "),
    # A rate that rounds to 0 bit/s was accepted, and a job then sent one packet and timed out.
    ({"line_rate_gbps": 1e-12}, ValueError, r"line_rate_gbps = 1e-12: .*0\.001"),
    ({"faults": Faults(loss=2.0)}, ValueError, "^loss = 2.0: "),
    ({"min_receive_fraction": 1.5}, ValueError, r"^min_receive_fraction = 1.5: .*\[0, 1\]"),
    ({"min_receive_fraction": float("nan")}, ValueError, r"^min_receive_fraction = NaN: "),
    ({"min_receive_fraction": "0.9"}, TypeError, "min_receive_fraction = '0.9': give a number"),
])
def test_bad_endpoint_settings_name_the_argument(kw: dict[str, object], exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        Endpoint(LOCAL, **kw)  # type: ignore[arg-type]


def test_a_bind_the_kernel_refuses_names_the_address() -> None:
    # Was "socket: Address already in use (os error 98)", naming neither the argument nor the address.
    busy = Endpoint(LOCAL)
    with pytest.raises(TransportError, match=f'bind = "{busy.address}": .*in use.*port 0') as e:
        Endpoint(busy.address)
    assert e.value.errno == 98
    with pytest.raises(TransportError, match=r'^\[Errno 99\] bind = "192.0.2.1:0": [^(]*not an address of this host'):
        Endpoint("192.0.2.1:0")
    with pytest.raises(TypeError, match="bind = None: give a string"):
        Endpoint(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("peer, match", [
    # Each was a TimeoutError after the whole deadline: nothing can answer.
    ("127.0.0.1:0", 'peer = "127.0.0.1:0": port 0'),
    ("[::1]:7000", r'peer = "\[::1\]:7000": an IPv6 address, but this endpoint is bound to IPv4'),
    ("255.255.255.255:7000", 'peer = "255.255.255.255:7000": a multicast or broadcast address'),
    ("224.0.0.1:7000", 'peer = "224.0.0.1:7000": a multicast or broadcast address'),
])
def test_a_peer_that_cannot_be_reached_is_refused_at_once(peer: str, match: str) -> None:
    e = Endpoint(LOCAL)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match=match):
        e.send_array(peer, X4, deadline=5)
    with pytest.raises(ValueError, match=match):
        e.send_job(peer, [(0, b"x")], msr=1.0, deadline=5)
    assert time.monotonic() - t0 < 1


def test_an_ipv6_endpoint_refuses_an_ipv4_peer() -> None:
    e = Endpoint("[::1]:0")
    with pytest.raises(ValueError, match='peer = "127.0.0.1:7000": an IPv4 address, but this endpoint is bound to '
                                         'IPv6'):
        e.send_array("127.0.0.1:7000", X4, deadline=5)


@pytest.mark.parametrize("kw, exc, match", [
    ({"p": True}, TypeError, "p = True: "),
    ({"p": "0.9"}, TypeError, "p = '0.9': "),
    ({"p": None}, TypeError, "p = None: "),
    ({"p": 2.0**1000}, ValueError, r"p = 1\.0715086071862673e301: "),
    ({"deadline": True}, TypeError, "deadline = True: "),
    ({"peer": None}, TypeError, "peer = None: give a string"),
    ({"deadline": "3"}, TypeError, "deadline = '3': "),
    # 1e-12 s is positive: the message said it was not.
    ({"deadline": 1e-12}, ValueError, "deadline = 1e-12: .*at least 1e-09"),
    ({"deadline": 1e300}, ValueError, "deadline = 1e300: .*at most"),
    ({"deadline": float("inf")}, ValueError, "deadline = inf: .*finite"),
])
def test_bad_send_numbers_name_the_argument(kw: dict[str, object], exc: type, match: str) -> None:
    e = Endpoint(LOCAL)
    with pytest.raises(exc, match=match):
        e.send_array(**{"peer": "127.0.0.1:9", "array": X4, **kw})  # type: ignore[arg-type]


def test_an_empty_array_is_named_array() -> None:
    with pytest.raises(ValueError, match="array: empty"):
        Endpoint(LOCAL).send_array("127.0.0.1:9", np.zeros(0, np.float32))


def test_float32_of_either_byte_order_is_sent() -> None:
    # '>f4' is float32: it was refused with "dtype >f4; give float32".
    rx, tx = Endpoint(LOCAL), Endpoint(LOCAL)
    x = np.arange(1000, dtype=">f4")
    tx.send_array(rx.address, x, deadline=5)
    got = rx.recv_array(timeout=5)
    assert got is not None and got.array.dtype == np.float32 and (got.array == x).all()


def test_nan_and_inf_values_pass_unchanged() -> None:
    rx, tx = Endpoint(LOCAL), Endpoint(LOCAL)
    x = np.array([np.nan, 1, -np.inf, np.inf, -0.0], np.float32)
    tx.send_array(rx.address, x, deadline=5)
    got = rx.recv_array(timeout=5)
    assert got is not None and got.array.tobytes() == x.tobytes()


@pytest.mark.parametrize("timeout, exc, match", [
    (-1, ValueError, "timeout = -1.0: .*None"),
    (float("nan"), ValueError, "timeout = NaN: "),
    (float("inf"), ValueError, "timeout = inf: .*None"),
    (True, TypeError, "timeout = True: "),
    ("1", TypeError, "timeout = '1': "),
])
def test_bad_receive_timeouts_name_the_argument(timeout: object, exc: type, match: str) -> None:
    # A negative timeout returned None at once, as 0 does.
    e = Endpoint(LOCAL)
    for call in (e.recv_array, e.recv_job):
        with pytest.raises(exc, match=match):
            call(timeout)  # type: ignore[arg-type]


@pytest.mark.parametrize("messages, msr, exc, match", [
    # Each was accepted, or an error naming nothing (OverflowError, "too many values to unpack").
    ([(0, 5)], 1.0, TypeError, r"messages\[0\]: the payload is int"),
    ([(0, "abc")], 1.0, TypeError, r"messages\[0\]: the payload is str"),
    ([(0, [1, 2])], 1.0, TypeError, r"messages\[0\]: the payload is list"),
    ([(0, None)], 1.0, TypeError, r"messages\[0\]: the payload is NoneType"),
    ([(-1, b"x")], 1.0, ValueError, r"messages\[0\]: group -1"),
    ([(65536, b"x")], 1.0, ValueError, r"messages\[0\]: group 65536"),
    ([(2**64, b"x")], 1.0, ValueError, r"messages\[0\]: group 18446744073709551616"),
    ([(0.5, b"x")], 1.0, TypeError, r"messages\[0\]: group 0.5"),
    ([("0", b"x")], 1.0, TypeError, r"messages\[0\]: group '0'"),
    ([(True, b"x")], [1.0, 1.0], TypeError, r"messages\[0\]: group True"),
    ([(0, b"x", 3)], 1.0, TypeError, r"messages\[0\]: .*\(group, bytes\) pair"),
    ([b"xx"], 1.0, TypeError, r"messages\[0\]: .*\(group, bytes\) pair"),
    ({0: b"x"}, 1.0, TypeError, r"messages\[0\]: .*\(group, bytes\) pair"),
    ([(0, b"x")], "1", TypeError, "msr = '1'"),
    ([(0, b"x")], ["0.5"], TypeError, r"msr\[0\] = '0.5'"),
    ([(0, b"x")], True, TypeError, "msr = True"),
    ([(0, b"x")], None, TypeError, "msr = None"),
    # MSR 0 for every group with messages: was "messages = 0: the job is closed".
    ([(0, b"x")], 0.0, ValueError, "msr = .*MSR above 0"),
    ([(0, b"x"), (0, b"y")], [0.0, 1.0], ValueError, "msr = .*MSR above 0"),
])
def test_bad_jobs_name_the_message_or_msr(messages: object, msr: object, exc: type, match: str) -> None:
    e = Endpoint(LOCAL)
    with pytest.raises(exc, match=match):
        e.send_job("127.0.0.1:9", messages, msr=msr, deadline=1)


def test_job_payloads_may_be_any_bytes_like_object() -> None:
    rx, tx = Endpoint(LOCAL), Endpoint(LOCAL)
    msgs = [(0, b"ab"), (0, bytearray(b"cd")), (0, memoryview(b"ef")), (0, np.frombuffer(b"gh", np.uint8))]
    tx.send_job(rx.address, msgs, msr=1.0, deadline=5)
    job = rx.recv_job(timeout=5)
    assert job is not None and job.messages == {0: (0, b"ab"), 1: (0, b"cd"), 2: (0, b"ef"), 3: (0, b"gh")}


def test_a_receive_timeout_beyond_the_clock_waits_like_none() -> None:
    # recv_array(timeout=1e19) panicked ("overflow when adding duration to instant", pyo3's
    # PanicException); a timeout past what the clock holds is now no limit, as None is.
    e = Endpoint(LOCAL)
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(e.recv_array(timeout=1e19)), daemon=True)
    t.start()
    t.join(0.3)
    assert t.is_alive() and got == []  # still waiting, no exception
    Endpoint(LOCAL).send_array(e.address, X4, deadline=5)
    t.join(5)
    assert len(got) == 1 and isinstance(got[0], Received)


def test_what_p_leaves_out_is_random_packets_unless_the_index_order_is_asked_for() -> None:
    # No loss at all: the receiver completes at 70% and the sender stops, so about 30% of each
    # array is missing. Shuffled (the default), every part of the array misses about equally
    # often; in index order, always the tail and never the head.
    rx = Endpoint(LOCAL)
    x = np.ones(20_000, np.float32)  # 57 packets
    missed = {}
    for order in ("shuffled", "index"):
        tx = Endpoint(LOCAL, send_order=order)
        total = np.zeros(len(x))
        for _ in range(20):
            tx.send_array(rx.address, x, p=0.7)
            got = rx.recv_array(timeout=10)
            assert got is not None and 0.7 <= got.fraction < 1
            total += got.missing
        missed[order] = [float(part.mean()) / 20 for part in np.array_split(total, 5)]
    assert missed["index"][0] == 0 and missed["index"][-1] > 0.9, missed
    assert all(0.1 < m < 0.5 for m in missed["shuffled"]), missed


def test_a_tag_travels_with_the_array() -> None:
    rx, tx = Endpoint(LOCAL), Endpoint(LOCAL)
    for tag in (0, 7, 2**32 - 1):
        tx.send_array(rx.address, np.ones(5000, np.float32), p=0.9, tag=tag)
        got = rx.recv_array(timeout=10)
        assert got is not None and got.tag == tag
    with pytest.raises(ValueError, match=r"tag = 4294967296: must be at least 0 and at most 4294967295"):
        tx.send_array(rx.address, np.ones(4, np.float32), tag=2**32)
    with pytest.raises(TypeError, match="tag = '1': give an integer"):
        tx.send_array(rx.address, np.ones(4, np.float32), tag="1")  # type: ignore[arg-type]


@pytest.mark.parametrize("msr", [{0: 1.0, 1: 0.5}, {1.0, 0.5}])
def test_msr_given_as_a_dict_or_set_is_refused_not_read_as_its_keys(msr: object) -> None:
    # A dict's keys ran as the MSRs: group 0 asked for all its messages and lost 28 of 100.
    tx = Endpoint("127.0.0.1:0")
    with pytest.raises(TypeError, match="msr: a (dict|set); give one number, or a sequence"):
        tx.send_job("127.0.0.1:9", [(0, b"x"), (1, b"y")], msr=msr)


def test_jobs_gathered_from_two_threads_come_whole() -> None:
    # Two threads pulling one queue split jobs: 7 of 30 came back with 199 of 200 messages and
    # lost = [], 7 messages stranded.
    rx, tx = Endpoint("127.0.0.1:0"), Endpoint("127.0.0.1:0")
    jobs: list = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            j = rx.recv_job(timeout=0.2)
            if j is not None:
                jobs.append(j)

    threads = [threading.Thread(target=loop) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(15):
            tx.send_job(rx.address, [(0, bytes(200)) for _ in range(200)], msr=1.0, deadline=20)
        deadline = time.monotonic() + 10
        while len(jobs) < 15 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert len(jobs) == 15
    assert all(len(j.messages) == 200 and not j.lost for j in jobs)
    assert not any(rx._pending.values())


def test_a_cancelled_async_receive_loses_nothing() -> None:
    rx, tx = Endpoint("127.0.0.1:0"), Endpoint("127.0.0.1:0")
    x = np.arange(1000, dtype=np.float32)

    async def main() -> tuple:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(rx.recv_array_async(), 0.3)
        await tx.send_array_async(rx.address, x)
        got = await rx.recv_array_async(timeout=5)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(rx.recv_job_async(), 0.3)
        await tx.send_job_async(rx.address, [(0, b"abc")], msr=1.0)
        job = await rx.recv_job_async(timeout=5)
        return got, job

    got, job = asyncio.run(main())
    assert got is not None and np.array_equal(got.array, x)
    assert job is not None and list(job.messages.values()) == [(0, b"abc")]
    # The sync call takes a cancelled call's result too.
    async def cancel_one() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(rx.recv_array_async(), 0.3)

    asyncio.run(cancel_one())
    tx.send_array(rx.address, x)
    again = rx.recv_array(timeout=5)
    assert again is not None and np.array_equal(again.array, x)
