"""PyTorch gradients through the bounded-loss parameter server of :mod:`slacknet.collective`.

The bounded-loss ML paper's point (``shared/papers/bounded-loss-transport-for-ml.txt`` §3) in
a PyTorch training loop: each step's gradients go to a :class:`~slacknet.collective.
ParameterServer` over the real transport with completion fraction ``p``, so a step waits for a
fraction ``p`` of the gradient, not for the last lost packet, and the values that did not
arrive are zero in the update (the paper's zero-fill: no update there). Two ways in:

* any training loop, no ``torch.distributed`` needed: after ``loss.backward()``, call
  :func:`allreduce_gradients` with the model and a :class:`~slacknet.collective.Worker`; every
  parameter's ``.grad`` becomes the workers' aggregate::

      from slacknet.collective import Worker
      from slacknet.net import Endpoint
      from slacknet.torch import allreduce_gradients
      worker = Worker(Endpoint(), "10.0.0.1:7100", p=0.9)
      for x, y in loader:
          opt.zero_grad()
          loss_fn(model(x), y).backward()
          got = allreduce_gradients(model, worker)     # got.missing: what did not arrive
          opt.step()

* ``DistributedDataParallel``, as a communication hook (PyTorch's ``register_comm_hook``):
  DDP still broadcasts the initial parameters over its process group, and each gradient bucket
  goes through the parameter server instead of the group's all-reduce::

      from slacknet.torch import BoundedLossState, bounded_loss_hook
      ddp = torch.nn.parallel.DistributedDataParallel(model)
      state = BoundedLossState(Worker(Endpoint(), "10.0.0.1:7100", p=0.9))
      ddp.register_comm_hook(state, bounded_loss_hook)
      # state.rounds, state.values, state.missing_values: what the hook has done

The server is :class:`~slacknet.collective.ParameterServer` with one worker per rank, serving
one round per call of :func:`allreduce_gradients` and, with DDP, one round per gradient bucket
of every step (in the order DDP reduces them, which is the same on every rank). Its policy
decides what a value some workers' gradients did not deliver becomes (``"zero_fill"``,
``"rescale"``); a worker applies what it got, zero where its reply lost values, so replicas
drift apart under loss by the updates each missed (a server with ``p=1`` avoids that; the
module doc of :mod:`slacknet.collective` says more).

Gradients travel as float32 or float16, as the parameters are; bfloat16 gradients travel as
float32 (exact: every bfloat16 is a float32) and the aggregate is rounded back to bfloat16, as
any bfloat16 reduction is. float64 gradients are refused (the transport carries at most 32-bit
floats; sending them as float32 would round every gradient without saying so): train in
float32, or convert the model with ``model.float()``.

Sparse gradients (``nn.Embedding(sparse=True)``; DDP gives each a bucket of its own) travel
dense and come back sparse, with the aggregate's nonzero rows (every row some worker touched),
so ``SparseAdam`` still steps: the transport loses value ranges, and in an index list a lost
range would misplace values rather than leave zeros. Each step then sends the table's dense
size, as a dense embedding would.

Needs PyTorch (``pip install torch``, or the ``torch`` extra of slacknet); importing this
module without it is an ``ImportError`` that says so.
"""

# No `from __future__ import annotations` here: DistributedDataParallel.register_comm_hook
# compares the hook's annotations with the real classes, and would refuse strings.

from collections.abc import Iterable
from typing import Any

import numpy as np

from .collective import Worker, _wait
from .net import Received

try:
    import torch
    import torch.distributed as _dist
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError("slacknet.torch needs PyTorch: install it with `pip install torch` (or the torch extra: "
                      "`pip install 'slacknet[torch]'`)") from _e

__all__ = ["BoundedLossState", "allreduce_gradients", "bounded_loss_hook"]

# The gradient types the transport carries, and what bfloat16 travels as.
_WIRE = {torch.float32: np.float32, torch.float16: np.float16, torch.bfloat16: np.float32}


def _worker(worker: Any) -> Worker:
    if not isinstance(worker, Worker):
        raise TypeError(f"worker: {type(worker).__name__}; give a slacknet.collective.Worker, e.g. "
                        'Worker(Endpoint(), "10.0.0.1:7100", p=0.9)')
    return worker


def _wire_dtype(dtype: Any, what: str) -> Any:
    wire = _WIRE.get(dtype)
    if wire is None:
        fix = "train in float32 (model.float())" if dtype == torch.float64 else "use float32, float16 or bfloat16"
        raise TypeError(f"{what} is {dtype}: the transport carries float32 and float16 gradients (bfloat16 as "
                        f"float32); {fix}")
    return wire


def _exchange(worker: Worker, flat: Any, timeout: float | None) -> tuple[Any, Received]:
    """Send the 1-D tensor ``flat`` through ``worker`` and return the aggregate as a tensor of
    ``flat``'s type and device, with the :class:`~slacknet.net.Received` it came in."""
    wire = _wire_dtype(flat.dtype, "the gradient")
    host = flat.detach().to(device="cpu", dtype=torch.float32 if flat.dtype == torch.bfloat16 else flat.dtype)
    got = worker.allreduce(np.ascontiguousarray(host.numpy(), dtype=wire), timeout=timeout)
    if len(got.array) != flat.numel():  # the server combines equal lengths only; never trust a peer
        raise RuntimeError(f"the aggregate from {got.peer} has {len(got.array)} values for a gradient of "
                           f"{flat.numel()}")
    out = torch.from_numpy(np.asarray(got.array, dtype=wire)).to(device=flat.device, dtype=flat.dtype)
    return out, got


def _dense(grad: Any) -> Any:
    """``grad`` as a strided tensor: a sparse gradient (``nn.Embedding(sparse=True)``) travels
    dense, since the transport's loss is of value ranges, which an index list would turn into
    wrong rows rather than zeros."""
    return grad if grad.layout == torch.strided else grad.to_dense()


def _like(aggregate: Any, grad: Any) -> Any:
    """The dense ``aggregate`` in ``grad``'s layout: a sparse COO gradient comes back sparse
    with as many sparse dimensions (an embedding's rows), holding the aggregate's nonzero ones,
    so that an optimizer that needs sparse gradients (``SparseAdam``) still gets them."""
    if grad.layout == torch.strided:
        return aggregate
    if grad.layout == torch.sparse_coo:
        return aggregate.to_sparse(sparse_dim=grad.sparse_dim())
    return aggregate.to_sparse(layout=grad.layout)


def _parameters(parameters: Any) -> list[Any]:
    if isinstance(parameters, torch.nn.Module):
        parameters = parameters.parameters()
    elif isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    if not isinstance(parameters, Iterable):
        raise TypeError(f"parameters: {type(parameters).__name__}; give a torch.nn.Module or its parameters()")
    params = []
    for i, q in enumerate(parameters):
        if not isinstance(q, torch.Tensor):
            raise TypeError(f"parameters[{i}]: {type(q).__name__}, not a tensor; give a torch.nn.Module or its "
                            "parameters()")
        if q.requires_grad:
            params.append(q)
    if not params:
        raise ValueError("parameters: none that requires a gradient; give the model whose gradients to aggregate")
    return params


def allreduce_gradients(parameters: Any, worker: Worker, *, timeout: float | None = 60.0) -> Received:
    """Replace the gradients of ``parameters`` (a ``torch.nn.Module`` or an iterable of its
    tensors; those that require a gradient, in order) with the aggregate of every worker's:
    one round of the parameter server, through ``worker``. A parameter without a gradient
    (``.grad`` None: not used in this step) sends zeros and gets the aggregate like the others,
    so every worker sends the same vector. Every worker must call this with the same model's
    parameters in the same order (the server refuses gradients of other lengths).

    Returns the :class:`~slacknet.net.Received` the aggregate came in: ``missing`` (the
    concatenated parameters' values that did not arrive, zero in the new gradients) and
    ``fraction``. Raises ``TypeError``/``ValueError`` for bad arguments (a parameter of another
    type than float32, float16 or bfloat16, or of mixed types) before anything is sent, and what
    :meth:`~slacknet.collective.Worker.allreduce` raises (``TimeoutError`` after ``timeout``
    seconds without the aggregate; the gradients are unchanged then)."""
    worker = _worker(worker)
    timeout = _wait(timeout)
    params = _parameters(parameters)
    dtype = params[0].dtype
    _wire_dtype(dtype, "parameters[0]")
    for i, q in enumerate(params):
        if q.dtype != dtype:
            raise TypeError(f"parameters[{i}] is {q.dtype} and parameters[0] {dtype}: give parameters of one type "
                            "(one call per type)")
    device = params[0].device
    with torch.no_grad():
        flat = torch.cat([(_dense(q.grad) if q.grad is not None else torch.zeros_like(q)).reshape(-1).to(device)
                          for q in params])
        out, got = _exchange(worker, flat, timeout)
        start = 0
        for q in params:
            n = q.numel()
            piece = out[start:start + n].view_as(q).to(q.device)
            if q.grad is None:
                q.grad = piece.clone()
            elif q.grad.layout != torch.strided:
                q.grad = _like(piece, q.grad)
            else:
                q.grad.copy_(piece)
            start += n
    return got


class BoundedLossState:
    """The state of :func:`bounded_loss_hook` on one rank: its ``worker`` (a
    :class:`~slacknet.collective.Worker` to the parameter server) and ``timeout`` (seconds to
    wait for each bucket's aggregate; None: for ever). Counts what the hook did: ``rounds``
    (buckets sent), ``values`` (gradient values sent), ``missing_values`` (values of the
    aggregates that did not arrive, zero in the update) and ``last`` (the last bucket's
    :class:`~slacknet.net.Received`)."""

    def __init__(self, worker: Worker, *, timeout: float | None = 60.0) -> None:
        self.worker = _worker(worker)
        self.timeout = _wait(timeout)
        self.rounds = 0
        self.values = 0
        self.missing_values = 0
        self.last: Received | None = None

    @property
    def missing_fraction(self) -> float:
        """The fraction of the aggregates' values that did not arrive, over every bucket so far."""
        return self.missing_values / max(1, self.values)

    def __repr__(self) -> str:
        return (f"BoundedLossState(server={self.worker.server!r}, p={self.worker.p}, rounds={self.rounds}, "
                f"missing={self.missing_fraction:.2%})")


def bounded_loss_hook(state: BoundedLossState, bucket: _dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """A ``DistributedDataParallel`` communication hook: the bucket's flattened gradients go to
    the parameter server through ``state.worker`` (one round per bucket) and the bucket becomes
    the aggregate (zero where its values did not arrive). Register it with
    ``ddp.register_comm_hook(BoundedLossState(worker), bounded_loss_hook)``. An error of the
    round (a ``TimeoutError``, a :class:`~slacknet.collective.CollectiveError`) is raised from
    ``backward()``."""
    if not isinstance(state, BoundedLossState):
        raise TypeError(f"state: {type(state).__name__}; register the hook with "
                        "ddp.register_comm_hook(BoundedLossState(worker), bounded_loss_hook)")
    buf = bucket.buffer()
    # DDP gives a sparse gradient (nn.Embedding(sparse=True)) a bucket of its own, the sparse
    # tensor itself: it travels dense and comes back in its layout.
    out, got = _exchange(state.worker, _dense(buf).reshape(-1), state.timeout)
    out = _like(out.view_as(buf), buf)
    state.rounds += 1
    state.values += len(got.array)
    state.missing_values += int(got.missing.sum())
    state.last = got
    fut: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    fut.set_result(out)
    return fut
