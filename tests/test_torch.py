"""slacknet.torch: PyTorch gradients through the parameter server over real sockets on
loopback. Every replica's gradients become the exact mean when reliable, the aggregate as the
masks say under loss, a real model trains data-parallel through it, DistributedDataParallel with
the hook ends where DDP's own all-reduce ends, and bad arguments are clear errors before anything
is sent. Skipped without PyTorch (not installed by `make install`, for its size: `make
test-torch` installs it and runs these)."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (`make test-torch` installs it and runs these)")

from slacknet import mltol  # noqa: E402
from slacknet.collective import ParameterServer, Worker  # noqa: E402
from slacknet.net import Endpoint, Faults, Received  # noqa: E402
from slacknet.torch import BoundedLossState, allreduce_gradients, bounded_loss_hook  # noqa: E402

# Real packets through real sockets, timed: `make test` runs these tests after the others, one at a time.
pytestmark = pytest.mark.realtime

LOCAL = "127.0.0.1:0"
torch.set_num_threads(1)


def _setup(n: int, *, p: float = 1.0, loss: float = 0.0) -> tuple[ParameterServer, list[Worker]]:
    server = ParameterServer(Endpoint(LOCAL, faults=Faults(loss=loss, seed=99) if loss else None), n, p=p)
    workers = [Worker(Endpoint(LOCAL, faults=Faults(loss=loss, seed=i) if loss else None), server.endpoint.address, p=p)
               for i in range(n)]
    return server, workers


class _Serving:
    """The server serving rounds in a thread until the block ends; errors surface at the end.

    The end waits for the round in progress (its replies can take up to the server's deadline),
    so that ``server.rounds`` counts every round a worker saw end: joining for 10 s once read 5
    rounds where the workers had seen 6, on a loaded machine. ``lossy``: the last round's reply
    may end in the server's TimeoutError (the round counts) when a worker had its reply, exited,
    and the datagram that would have told the server so was lost: no one is left to resend it."""

    def __init__(self, server: ParameterServer, *, lossy: bool = False) -> None:
        self.server, self.errors, self.stop = server, list[BaseException](), threading.Event()
        self.lossy = lossy
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.server.serve_round(timeout=0.2)
            except TimeoutError:
                continue
            except BaseException as e:  # surfaced in __exit__
                self.errors.append(e)
                return

    def __enter__(self) -> _Serving:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(self.server.deadline + 15)
        assert not self.thread.is_alive(), "the server's round did not end within its deadline"
        errors = self.errors
        if self.lossy:
            errors = [e for e in errors if not (isinstance(e, TimeoutError) and "the round counts" in str(e))]
        assert not errors, errors


def _net(seed: int = 0, dtype: Any = None) -> Any:
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    return net if dtype is None else net.to(dtype)


def _backward(net: Any, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    dtype = next(net.parameters()).dtype
    x = torch.randn(16, 64, generator=g).to(dtype)
    y = torch.randint(0, 10, (16,), generator=g)
    net.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(net(x).float(), y).backward()


def _flat_grads(net: Any) -> np.ndarray:
    return torch.cat([q.grad.reshape(-1).float() for q in net.parameters()]).numpy()


def _all(workers: list[Worker], call: Callable[[int], Received]) -> list[Received]:
    with ThreadPoolExecutor(len(workers)) as pool:
        return list(pool.map(call, range(len(workers))))


def test_every_replica_gets_the_exact_mean_of_the_gradients() -> None:
    server, workers = _setup(3)
    nets = [_net() for _ in workers]
    for i, net in enumerate(nets):
        _backward(net, seed=10 + i)
    before = np.stack([_flat_grads(net) for net in nets])
    want = (before.astype(np.float64).sum(axis=0) / 3).astype(np.float32)  # as the server combines
    with _Serving(server):
        got = _all(workers, lambda i: allreduce_gradients(nets[i], workers[i], timeout=20))
    assert len(want) == 64 * 32 + 32 + 32 * 10 + 10 == len(got[0].array)
    for net, rec in zip(nets, got):
        assert rec.fraction == 1.0 and not rec.missing.any()
        assert (_flat_grads(net) == want).all()  # in the parameters' order, each in its shape
        assert all(q.grad.shape == q.shape for q in net.parameters())


def test_under_loss_the_gradients_are_the_aggregate_with_zeros_where_it_lost_values() -> None:
    p = 0.8
    server, workers = _setup(2, p=p, loss=0.1)
    # A larger layer than _net's: with 8 datagrams a gradient, 10% loss surely costs something.
    nets = [torch.nn.Linear(200, 100) for _ in workers]
    for i, net in enumerate(nets):
        _backward_linear(net, 20 + i)
    with _Serving(server):
        got = _all(workers, lambda i: allreduce_gradients(nets[i], workers[i], timeout=20))
    for net, rec in zip(nets, got):
        flat = _flat_grads(net)
        assert rec.fraction >= p and (flat == rec.array).all() and (flat[rec.missing] == 0).all()
    assert any(rec.missing.any() for rec in got)  # the loss was felt


def _backward_linear(net: Any, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    net.zero_grad(set_to_none=True)
    net(torch.randn(8, 200, generator=g)).square().mean().backward()


def test_a_parameter_without_a_gradient_sends_zeros_and_gets_the_aggregate() -> None:
    server, workers = _setup(2)
    nets = [_net() for _ in workers]
    _backward(nets[0], seed=1)
    _backward(nets[1], seed=2)
    nets[1][2].bias.grad = None  # not used in worker 1's step
    want_bias = nets[0][2].bias.grad.clone() / 2
    with _Serving(server):
        _all(workers, lambda i: allreduce_gradients(list(nets[i].parameters()), workers[i], timeout=20))
    for net in nets:
        assert torch.equal(net[2].bias.grad, want_bias)


def _embedding_net(seed: int = 0) -> Any:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Embedding(50, 8, sparse=True), torch.nn.Flatten(), torch.nn.Linear(24, 4))


def _embedding_backward(net: Any, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    net.zero_grad(set_to_none=True)
    net(torch.randint(0, 50, (5, 3), generator=g)).square().mean().backward()


def test_sparse_gradients_travel_dense_and_come_back_sparse() -> None:
    # nn.Embedding(sparse=True): each worker touched other rows; the aggregate is the exact mean
    # of the dense gradients, returned as a sparse COO gradient of the rows any worker touched,
    # and SparseAdam (which refuses dense gradients) steps with it.
    server, workers = _setup(2)
    nets = [_embedding_net() for _ in workers]
    for i, net in enumerate(nets):
        _embedding_backward(net, seed=40 + i)
    assert all(net[0].weight.grad.layout == torch.sparse_coo for net in nets)
    dense = [torch.cat([q.grad.to_dense().reshape(-1) for q in net.parameters()]).numpy() for net in nets]
    want = ((dense[0].astype(np.float64) + dense[1]) / 2).astype(np.float32)
    rows = [set(net[0].weight.grad.coalesce().indices()[0].tolist()) for net in nets]
    assert rows[0] != rows[1]
    with _Serving(server):
        got = _all(workers, lambda i: allreduce_gradients(nets[i], workers[i], timeout=20))
    for net, rec in zip(nets, got):
        emb = net[0].weight.grad
        assert emb.layout == torch.sparse_coo and emb.sparse_dim() == 1 and emb.shape == (50, 8)
        assert set(emb.coalesce().indices()[0].tolist()) == rows[0] | rows[1]
        flat = torch.cat([q.grad.to_dense().reshape(-1) for q in net.parameters()]).numpy()
        assert (flat == want).all() and rec.fraction == 1.0
        torch.optim.SparseAdam([net[0].weight]).step()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_gradients_travel_and_come_back_in_their_type(dtype: str) -> None:
    t = getattr(torch, dtype)
    server, workers = _setup(2)
    nets = [_net(dtype=t) for _ in workers]
    for i, net in enumerate(nets):
        _backward(net, seed=30 + i)
    before = np.stack([_flat_grads(net) for net in nets]).astype(np.float64)
    with _Serving(server):
        _all(workers, lambda i: allreduce_gradients(nets[i], workers[i], timeout=20))
    want = torch.from_numpy(before.mean(axis=0).astype(np.float32)).to(t)
    for net in nets:
        assert all(q.grad.dtype == t for q in net.parameters())
        got = torch.cat([q.grad.reshape(-1) for q in net.parameters()])
        # float16 is summed in float64 and rounded once; bfloat16 travels as float32 (exact).
        assert torch.equal(got, want)


def test_bad_arguments_are_clear_errors_before_anything_is_sent() -> None:
    server, workers = _setup(1)
    w = workers[0]
    with pytest.raises(TypeError, match=r"parameters\[0\] is torch.float64.*model.float\(\)"):
        allreduce_gradients(_net(dtype=torch.float64), w)
    mixed = _net()
    mixed[2].to(torch.float16)
    with pytest.raises(TypeError, match=r"parameters\[2\] is torch.float16 and parameters\[0\] torch.float32"):
        allreduce_gradients(mixed, w)
    with pytest.raises(ValueError, match="none that requires a gradient"):
        allreduce_gradients(_net().requires_grad_(False), w)
    with pytest.raises(TypeError, match=r"parameters\[1\]: str, not a tensor"):
        allreduce_gradients([torch.zeros(3, requires_grad=True), "x"], w)
    with pytest.raises(TypeError, match="parameters: int"):
        allreduce_gradients(3, w)
    with pytest.raises(TypeError, match="worker: str; give a slacknet.collective.Worker"):
        allreduce_gradients(_net(), "127.0.0.1:1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout = -1.0"):
        allreduce_gradients(_net(), w, timeout=-1)
    with pytest.raises(TypeError, match="worker: NoneType"):
        BoundedLossState(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"register_comm_hook\(BoundedLossState\(worker\), bounded_loss_hook\)"):
        bounded_loss_hook(w, None)  # type: ignore[arg-type]
    assert server.endpoint.recv_array(0.3) is None  # nothing reached the server


def test_no_aggregate_in_time_is_a_timeout_and_the_gradients_stay() -> None:
    _, workers = _setup(2)  # nobody serves
    net = _net()
    _backward(net, seed=5)
    before = _flat_grads(net).copy()
    with pytest.raises(TimeoutError, match="no aggregate of round 0 from 127.0.0.1"):
        allreduce_gradients(net, workers[0], timeout=0.5)
    assert (_flat_grads(net) == before).all()


def test_a_torch_model_trains_data_parallel_through_the_server_under_loss() -> None:
    # A torch MLP (64-32-10, ReLU) on scikit-learn's digits, four workers through real sockets
    # with SGD: reliable, then with 10% datagram loss each way at p = 0.7 (the receiver
    # completes at 70%, so about 29% of each gradient and of each reply is abandoned), with the
    # packets sent shuffled (the default) and, as the ablation, in index order. Measured in
    # three runs: reliable accuracy 0.936 on every replica; shuffled 0.79-0.91 (replica mean
    # 0.84-0.87), every layer missing 26-32% of its values; index order 0.68-0.83 (replica
    # mean 0.77-0.80), the first layer missing 17%, the output layer's weights 87%: what p
    # leaves out is always the vector's tail, and the last layer barely learns.
    x_tr, y_tr, x_val, y_val = (torch.from_numpy(np.asarray(a)) for a in mltol._digits())
    x_tr, x_val, y_tr, y_val = x_tr.float(), x_val.float(), y_tr.long(), y_val.long()
    n, batch, steps = 4, 32, 120
    acc, missed, spread, last_layer = {}, {}, {}, {}
    for p, loss, order in ((1.0, 0.0, "shuffled"), (0.7, 0.1, "shuffled"), (0.7, 0.1, "index")):
        faults = (lambda s: Faults(loss=loss, seed=s)) if loss else (lambda s: None)
        server = ParameterServer(Endpoint(LOCAL, faults=faults(99), send_order=order), n, p=p)
        workers = [Worker(Endpoint(LOCAL, faults=faults(i), send_order=order), server.endpoint.address, p=p)
                   for i in range(n)]
        nets = [_net(seed=0) for _ in workers]
        opts = [torch.optim.SGD(net.parameters(), lr=0.3) for net in nets]
        batches = torch.randperm(len(x_tr), generator=torch.Generator().manual_seed(1))
        lost = np.zeros(64 * 32 + 32 + 32 * 10 + 10)

        def step(i: int, s: int) -> Received:
            at = (s * n + i) * batch % (len(batches) - batch)
            idx = batches[at:at + batch]
            opts[i].zero_grad()
            torch.nn.functional.cross_entropy(nets[i](x_tr[idx]), y_tr[idx]).backward()
            got = allreduce_gradients(nets[i], workers[i], timeout=20)
            opts[i].step()
            return got

        with _Serving(server):
            for s in range(steps):
                for got in _all(workers, lambda i: step(i, s)):
                    lost += got.missing
        key = (p, order)
        lost /= steps * n
        with torch.no_grad():
            acc[key] = float(np.mean([(net(x_val).argmax(1) == y_val).float().mean() for net in nets]))
            spread[key] = max(float((a - b).abs().max()) for net in nets[1:]
                              for a, b in zip(nets[0].parameters(), net.parameters()))
        missed[key] = float(lost.mean())
        last_layer[key] = float(lost[2080:2400].mean())  # the output layer's weights
    assert missed[1.0, "shuffled"] == 0 and spread[1.0, "shuffled"] == 0  # reliable: every replica the same
    for order in ("shuffled", "index"):
        assert 0.1 < missed[0.7, order] <= 0.3 and spread[0.7, order] > 0  # the loss was felt, within 1 - p
    assert acc[1.0, "shuffled"] > 0.9 and acc[0.7, "shuffled"] > 0.8
    assert last_layer[0.7, "shuffled"] < 0.4 < 0.8 < last_layer[0.7, "index"]
    assert acc[0.7, "index"] < acc[0.7, "shuffled"] < acc[1.0, "shuffled"]


def _ddp_rank(rank: int, world: int, init: str, server: str | None, p: float, loss: float, steps: int,
              out: Any, sparse: bool = False) -> None:
    """One rank of a DDP run (a spawned process): a model (``sparse``: a sparse embedding before
    its first layer), rank-specific batches, SGD; puts its final parameters (and the hook's
    counters) on ``out``."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        torch.manual_seed(rank)  # different replicas: DDP's broadcast from rank 0 makes them one
        model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
        if sparse:
            model = torch.nn.Sequential(torch.nn.Embedding(100, 16, sparse=True), torch.nn.Flatten(), *model)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        state = None
        if server is not None:
            faults = Faults(loss=loss, seed=rank) if loss else None
            state = BoundedLossState(Worker(Endpoint(LOCAL, faults=faults), server, p=p), timeout=30)
            ddp.register_comm_hook(state, bounded_loss_hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(100 + rank)
        for _ in range(steps):
            x, y = torch.randn(16, 64, generator=g), torch.randint(0, 10, (16,), generator=g)
            if sparse:
                x = torch.randint(0, 100, (16, 4), generator=g)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(ddp(x), y).backward()
            opt.step()
        counters = None if state is None else (state.rounds, state.values, state.missing_values)
        out.put((rank, [q.detach().numpy().copy() for q in model.parameters()], counters))
    finally:
        dist.destroy_process_group()


def _ddp(tmp: Path, name: str, server: ParameterServer | None, *, p: float = 1.0, loss: float = 0.0,
         steps: int = 6, sparse: bool = False) -> dict[int, Any]:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    address = None if server is None else server.endpoint.address
    procs = [ctx.Process(target=_ddp_rank, args=(r, 2, f"file://{tmp / name}", address, p, loss, steps, out, sparse))
             for r in range(2)]
    for proc in procs:
        proc.start()
    try:
        got = dict((r, (params, counters)) for r, params, counters in (out.get(timeout=120) for _ in procs))
    finally:
        for proc in procs:
            proc.join(30)
            if proc.is_alive():
                proc.kill()
    assert [proc.exitcode for proc in procs] == [0, 0]
    return got


def test_ddp_with_the_hook_ends_where_ddp_s_own_allreduce_ends(tmp_path: Path) -> None:
    plain = _ddp(tmp_path, "plain", None)
    server, _ = _setup(2)
    with _Serving(server):
        hooked = _ddp(tmp_path, "hooked", server)
    assert server.rounds >= 6  # one round per bucket per step: the hook did the reduction
    for r in (0, 1):
        rounds, values, missing = hooked[r][1]
        assert rounds == server.rounds and values == rounds * (64 * 32 + 32 + 32 * 10 + 10) and missing == 0
        for a, b, c in zip(plain[r][0], hooked[r][0], hooked[1 - r][0]):
            assert np.array_equal(b, c)  # the replicas stay one
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)  # the mean, rounded once or twice


def test_ddp_with_the_hook_and_a_sparse_embedding_ends_where_ddp_s_own_allreduce_ends(tmp_path: Path) -> None:
    # DDP gives the sparse embedding's gradient a bucket of its own, the sparse tensor: the hook
    # sends it dense and hands it back sparse, and training ends where gloo's sparse all-reduce
    # ends it.
    plain = _ddp(tmp_path, "plain", None, sparse=True)
    server, _ = _setup(2)
    with _Serving(server):
        hooked = _ddp(tmp_path, "hooked", server, sparse=True)
    for r in (0, 1):
        rounds, values, missing = hooked[r][1]
        assert rounds == server.rounds >= 12 and missing == 0  # the embedding's bucket and the rest's, each step
        for a, b, c in zip(plain[r][0], hooked[r][0], hooked[1 - r][0]):
            assert np.array_equal(b, c)
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_ddp_with_the_hook_under_loss_abandons_at_most_1_minus_p(tmp_path: Path) -> None:
    p = 0.7
    server, _ = _setup(2, p=p, loss=0.1)
    with _Serving(server, lossy=True):
        got = _ddp(tmp_path, "lossy", server, p=p, loss=0.1)
    for r in (0, 1):
        rounds, values, missing = got[r][1]
        assert rounds == server.rounds >= 6 and 0 <= missing <= (1 - p) * values
        assert all(np.isfinite(a).all() for a in got[r][0])
    assert sum(got[r][1][2] for r in (0, 1)) > 0  # the loss was felt
