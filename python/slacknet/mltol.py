"""Loss tolerance of data-parallel SGD, measured on real training (issue 12; the bounded-loss
transport paper, APNet'19, §2.2 and Tables 2-4).

Data-parallel SGD is simulated in-process. Each step, a minibatch is split into ``num_workers``
equal shards; every worker computes the gradient of its shard's mean loss. Each worker's gradient
vector is cut into packets of ``values_per_packet`` consecutive values (a packet never splits a
value; 1460-byte payloads of float32 give 365 values, the default) and every packet is lost
independently with probability ``p`` (a seeded numpy ``Generator``, separate from the one that
shuffles data and initialises weights). The aggregator combines what arrived with a receiver
policy and the model takes a plain SGD step (fixed learning rate, no momentum or weight decay, as
the paper's Table 5 setup says):

* ``zero_fill``: a missing value counts as 0, so coordinate i gets ``sum(arrived g_w[i]) / W``
  (what the paper does);
* ``rescale``: coordinate i is averaged over the workers whose packet for it arrived,
  ``sum(arrived g_w[i]) / n_i``, and is 0 if none arrived (``n_i = 0``).

INVARIANT: at ``p = 0`` every packet arrives and both policies compute ``G.sum(axis=0) / W`` on
the same gradients, so training is bit-for-bit ordinary data-parallel SGD (tests pin this).

The measurement (§2.2): train each model at every p of a grid (0 to 1 in steps of 0.05 by
default) with fixed seeds. A run *converges* when its validation loss falls to the model's
target (``ModelSpec.target_loss``, the paper's "validation loss decreases to a model-specific
threshold") within ``max_epochs``; ``epochs`` is the first epoch (counted from 1, checked at the
end of every epoch) at which it does. Then, per model, policy and seed:

* ``x1``: the largest p such that every grid point from 0 to p converged in at most the lossless
  run's epochs plus a tolerance (``max(1, ceil(0.1 * base))`` epochs: "same epochs", with the
  granularity of whole epochs);
* ``x2``: the largest p such that every grid point from 0 to p converged at all.

Both are read as thresholds over the contiguous range from 0 (the paper: "for all p, when
p <= x1 ..."), so a lucky isolated p above a failure does not count.

Models (in the spirit of Table 2; all data ship inside scikit-learn, nothing is downloaded):

* ``mlp``: 64-32-10 tanh multi-layer perceptron on ``sklearn.datasets.load_digits``
  (hand-derived gradients, numpy only);
* ``mf``: matrix factorisation ``R ~ U V^T`` (rank 8) of a synthetic rank-5 200 x 150 matrix
  with Gaussian noise, 30% of entries observed, trained on squared error of observed entries
  (hand-derived gradients, numpy only);
* ``cnn``: one 3x3 convolution (8 filters) + ReLU + 2x2 average pooling + dense softmax on the
  8x8 digit images (gradients by ``autograd``, the ``ml`` extra);
* ``rnn``: an Elman (tanh) RNN with 32 hidden units reading each digit image row by row, 8 steps
  of 8 pixels, classifying from the last state (gradients by ``autograd``, the ``ml`` extra).

The models are far smaller than the paper's (ResNet20, LSTM seq2seq): a few thousand parameters
make only a handful of packets per worker, so the loss granularity is coarse.
"""

from __future__ import annotations

import io
import math
import numbers
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from .results import write_csv_atomic

__all__ = [
    "POLICIES",
    "MODELS",
    "PAPER_TABLE3",
    "PAPER_FIGURE2_X2",
    "MissingExtraError",
    "MODEL_SPECS",
    "ModelSpec",
    "Problem",
    "RunResult",
    "ToleranceConfig",
    "packet_bounds",
    "aggregate",
    "train",
    "tolerance",
    "summarize",
    "p_grid",
    "profile",
    "with_tolerance",
    "figure4_points",
    "read_summary",
    "check_tolerance_out",
    "check_profile_out",
    "write_tolerance",
    "MAX_SUMMARY_BYTES",
    "write_csv_atomic",
]

#: Receiver policies for the values of lost packets.
POLICIES = ("zero_fill", "rescale")
#: Model names, in the order of the paper's Table 3 where it has them.
MODELS = ("rnn", "mlp", "mf", "cnn")
#: The paper's loss tolerance bound x1 per model: Table 3 ("Different models tolerates different
#: loss"): RNN 0.10, MLP 0.15, MF 0.35, CNN 0.15.
PAPER_TABLE3: dict[str, float] = {"rnn": 0.10, "mlp": 0.15, "mf": 0.35, "cnn": 0.15}
#: x2 where the paper gives it: §2.2 and Figure 2, (x1, x2) = (15%, 55%) for MLP, (10%, 90%) for RNN.
PAPER_FIGURE2_X2: dict[str, float] = {"mlp": 0.55, "rnn": 0.90}
#: Payload values per packet: a 1460-byte payload of float32 values.
DEFAULT_VALUES_PER_PACKET = 1460 // 4


class MissingExtraError(ImportError):
    """A model needs an optional dependency that is not installed (the message names the extra)."""


# ---------------------------------------------------------------------------------------------
# Arguments: checked where they enter, naming the argument (a numpy integer is an integer; a
# boolean, a float or a string is not: ``num_workers=0`` divided by zero, ``seeds="12"`` ran the
# seeds 1 and 2, ``models="mlp"`` was refused as the model ``m``).


def _int_arg(name: str, v: Any, lo: int, hi: int | None = None, example: int = 1) -> int:
    """``v`` as an ``int`` if it is a whole number (not a boolean) in ``[lo, hi]``; else
    ``TypeError`` or ``ValueError`` naming ``name``."""
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} = {v!r}: give an integer, e.g. {example}")
    n = int(v)
    if n < lo or (hi is not None and n > hi):
        bound = f"at least {lo}" if hi is None else f"between {lo} and {hi}"
        if hi == 2**64 - 1:
            bound = f"between {lo} and 2^64 - 1"
        raise ValueError(f"{name} = {n}: must be {bound}, e.g. {example}")
    return n


def _seed_arg(name: str, v: Any) -> int:
    return _int_arg(name, v, 0, 2**64 - 1, example=1)


def _real_arg(name: str, v: Any, example: float) -> float:
    """``v`` as a ``float`` if it is a real number (not a boolean); else ``TypeError``."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} = {v!r}: give a number, e.g. {example}")
    return float(v)


def _names_arg(name: str, v: Any, allowed: Sequence[Any], what: str) -> tuple[Any, ...]:
    """``v``, a non-empty list or tuple of distinct members of ``allowed``, as a tuple."""
    if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple)):
        raise TypeError(f"{name} = {v!r}: give a tuple of {what}, e.g. {(allowed[0],)!r}")
    if not v:
        raise ValueError(f"{name} = (): empty; give at least one of {', '.join(map(str, allowed))}")
    for x in v:
        if x not in allowed:
            raise ValueError(f"{name}: {x!r} is unknown; choose from {', '.join(map(str, allowed))}")
    if len(set(v)) != len(v):
        raise ValueError(f"{name} = {tuple(v)!r}: a name is listed twice (its runs would be counted twice)")
    return tuple(v)


def _check_workers(name: str, spec: ModelSpec, problem: Problem, num_workers: int) -> None:
    """At least one minibatch per epoch (else an epoch trains nothing and the run is reported as
    not converging, which it never tried to)."""
    n = len(problem.y_train)
    most = n // spec.batch_per_worker
    if num_workers > most:
        raise ValueError(f"{name} = {num_workers}: a minibatch of {num_workers} x {spec.batch_per_worker} "
                         f"examples is more than model {spec.name}'s {n} training examples; at most {most}, e.g. 4")


# ---------------------------------------------------------------------------------------------
# Packets and aggregation


def packet_bounds(num_values: int, values_per_packet: int) -> np.ndarray:
    """The ``[start, end)`` value ranges of the packets carrying a vector of ``num_values``
    values, shape ``(num_packets, 2)``.

    POSTCONDITION: ranges are consecutive, cover ``0..num_values`` exactly once, and each holds
    whole values (at most ``values_per_packet``); only the last may be short.
    """
    for name, v in (("num_values", num_values), ("values_per_packet", values_per_packet)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} = {v!r}: give an integer")
    if num_values < 0 or values_per_packet < 1:
        raise ValueError(f"need num_values >= 0 and values_per_packet >= 1, got {num_values}, {values_per_packet}")
    starts = np.arange(0, num_values, values_per_packet, dtype=np.int64)
    ends = np.minimum(starts + values_per_packet, num_values)
    return np.stack([starts, ends], axis=1)


def aggregate(grads: np.ndarray, arrived: np.ndarray, values_per_packet: int, policy: str) -> np.ndarray:
    """Combine worker gradients ``grads`` (shape ``(W, D)``) given which packets arrived
    (``arrived``, bool, shape ``(W, num_packets)``) with a receiver ``policy`` (module doc),
    packets of ``values_per_packet`` values; returns the aggregated gradient, shape ``(D,)``.
    Raises ``ValueError`` for an ``arrived`` of the wrong shape or an unknown ``policy``."""
    w, d = grads.shape
    bounds = packet_bounds(d, values_per_packet)
    if arrived.shape != (w, len(bounds)):
        raise ValueError(f"arrived has shape {arrived.shape}, expected {(w, len(bounds))}")
    mask = np.repeat(arrived, bounds[:, 1] - bounds[:, 0], axis=1).astype(grads.dtype)
    total: np.ndarray = (grads * mask).sum(axis=0)
    if policy == "zero_fill":
        return np.asarray(total / w)
    if policy == "rescale":
        n: np.ndarray = mask.sum(axis=0)
        # n == 0 only where no worker's packet arrived; total is 0 there too.
        return np.asarray(total / np.maximum(n, 1.0))
    raise ValueError(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}")


# ---------------------------------------------------------------------------------------------
# Models


@dataclass(frozen=True)
class Problem:
    """A model bound to its data: flat parameters, per-worker gradients and validation metrics."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    init: Callable[[np.random.Generator], np.ndarray]
    #: ``(theta, xs, ys) -> G``: one gradient row per worker shard (``xs``: ``(W, b, ...)``).
    worker_grads: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    #: ``(theta, x, y) -> (loss, accuracy or nan)``.
    evaluate: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[float, float]]


@dataclass(frozen=True)
class ModelSpec:
    """One model of the measurement and its training setup."""

    name: str
    description: str
    lr: float
    batch_per_worker: int
    #: Converged when the validation loss is at most this.
    target_loss: float
    max_epochs: int
    needs: str | None  # optional extra the model needs, or None
    build: Callable[[], Problem] = field(repr=False, compare=False)


def _digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float64)
    y = d.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(y))  # one fixed split for every seed
    n_val = 360
    return x[order[n_val:]], y[order[n_val:]], x[order[:n_val]], y[order[:n_val]]


def _softmax_xent(logits: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy and its gradient with respect to ``logits``."""
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    prob = e / e.sum(axis=-1, keepdims=True)
    n = len(y)
    loss = float(-np.log(prob[np.arange(n), y] + 1e-300).mean())
    g = prob
    g[np.arange(n), y] -= 1.0
    return loss, g / n


# MLP: 64 -> 32 (tanh) -> 10, hand-derived gradients.
_MLP_SHAPES = ((64, 32), (32,), (32, 10), (10,))


def _unflatten(theta: np.ndarray, shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    out, i = [], 0
    for s in shapes:
        n = int(np.prod(s))
        out.append(theta[..., i:i + n].reshape(theta.shape[:-1] + s))
        i += n
    return out


def _num(shapes: Sequence[tuple[int, ...]]) -> int:
    return sum(int(np.prod(s)) for s in shapes)


def mlp_loss_grad(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy of the MLP on ``(x, y)`` and its gradient (hand-derived backprop)."""
    w1, b1, w2, b2 = _unflatten(theta, _MLP_SHAPES)
    h = np.tanh(x @ w1 + b1)
    loss, dz = _softmax_xent(h @ w2 + b2, y)
    dw2 = h.T @ dz
    db2 = dz.sum(axis=0)
    dh = (dz @ w2.T) * (1.0 - h * h)
    dw1 = x.T @ dh
    db1 = dh.sum(axis=0)
    return loss, np.concatenate([dw1.ravel(), db1, dw2.ravel(), db2])


def _mlp() -> Problem:
    xt, yt, xv, yv = _digits()

    def init(rng: np.random.Generator) -> np.ndarray:
        w1 = rng.normal(0, 1 / math.sqrt(64), (64, 32))
        w2 = rng.normal(0, 1 / math.sqrt(32), (32, 10))
        return np.concatenate([w1.ravel(), np.zeros(32), w2.ravel(), np.zeros(10)])

    def grads(theta: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        return np.stack([mlp_loss_grad(theta, xs[i], ys[i])[1] for i in range(len(xs))])

    def evaluate(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        w1, b1, w2, b2 = _unflatten(theta, _MLP_SHAPES)
        logits = np.tanh(x @ w1 + b1) @ w2 + b2
        loss, _ = _softmax_xent(logits, y)
        return loss, float((logits.argmax(axis=1) == y).mean())

    return Problem(xt, yt, xv, yv, init, grads, evaluate)


# MF: synthetic rank-5 matrix, rank-8 factors, hand-derived gradients.
_MF_USERS, _MF_ITEMS, _MF_RANK, _MF_TRUE_RANK = 200, 150, 8, 5


def mf_loss_grad(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean squared error of ``U[u] . V[i]`` against ratings ``y`` for entries ``x = (u, i)``,
    and its gradient with respect to the flat ``(U, V)``."""
    u_f, v_f = _unflatten(theta, ((_MF_USERS, _MF_RANK), (_MF_ITEMS, _MF_RANK)))
    u, i = x[:, 0].astype(np.int64), x[:, 1].astype(np.int64)
    err = (u_f[u] * v_f[i]).sum(axis=1) - y
    n = len(y)
    gu = np.zeros_like(u_f)
    gv = np.zeros_like(v_f)
    np.add.at(gu, u, (2.0 / n) * err[:, None] * v_f[i])
    np.add.at(gv, i, (2.0 / n) * err[:, None] * u_f[u])
    return float((err * err).mean()), np.concatenate([gu.ravel(), gv.ravel()])


def _mf() -> Problem:
    rng = np.random.default_rng(12)  # the matrix is fixed; seeds vary init, order and losses
    a = rng.normal(0, 1, (_MF_USERS, _MF_TRUE_RANK))
    b = rng.normal(0, 1, (_MF_ITEMS, _MF_TRUE_RANK))
    r = a @ b.T / math.sqrt(_MF_TRUE_RANK) + rng.normal(0, 0.1, (_MF_USERS, _MF_ITEMS))
    observed = np.argwhere(rng.random(r.shape) < 0.3)
    observed = observed[rng.permutation(len(observed))]
    ratings = r[observed[:, 0], observed[:, 1]]
    n_val = len(observed) // 5
    xt, yt = observed[n_val:].astype(np.float64), ratings[n_val:]
    xv, yv = observed[:n_val].astype(np.float64), ratings[:n_val]

    def init(g: np.random.Generator) -> np.ndarray:
        return g.normal(0, 0.3, _num(((_MF_USERS, _MF_RANK), (_MF_ITEMS, _MF_RANK))))

    def grads(theta: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        return np.stack([mf_loss_grad(theta, xs[i], ys[i])[1] for i in range(len(xs))])

    def evaluate(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        return mf_loss_grad(theta, x, y)[0], float("nan")

    return Problem(xt, yt, xv, yv, init, grads, evaluate)


def _autograd() -> Any:
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        raise MissingExtraError(
            "needs the autograd package: install the ml extra, pip install 'slacknet[ml]'"
        ) from None
    return autograd, anp


def _xent_autograd(anp: Any, logits: Any, y: np.ndarray) -> Any:
    """Mean cross-entropy per worker: ``logits`` ``(W, b, C)``, ``y`` ``(W, b)`` -> ``(W,)``."""
    z = logits - anp.max(logits, axis=-1, keepdims=True)
    logp = z - anp.log(anp.sum(anp.exp(z), axis=-1, keepdims=True))
    onehot = np.eye(logits.shape[-1])[y]
    return -anp.mean(anp.sum(logp * onehot, axis=-1), axis=-1)


def _autograd_problem(
    forward: Callable[[Any, Any, np.ndarray], Any],
    shapes: Sequence[tuple[int, ...]],
    init: Callable[[np.random.Generator], np.ndarray],
    prep: Callable[[np.ndarray], np.ndarray],
) -> Problem:
    """A classification problem whose per-worker gradients come from one ``autograd`` call: the
    parameters are stacked once per worker, ``(W, D)``, and the gradient of the sum of the
    workers' losses with respect to that stack is exactly each worker's own gradient row."""
    autograd, anp = _autograd()
    xt, yt, xv, yv = _digits()
    xt, xv = prep(xt), prep(xv)

    def total_loss(stack: Any, xs: np.ndarray, ys: np.ndarray) -> Any:
        params = _unflatten(stack, shapes)
        return anp.sum(_xent_autograd(anp, forward(anp, params, xs), ys))

    g = autograd.grad(total_loss)

    def grads(theta: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        stack = np.broadcast_to(theta, (len(xs), theta.size)).copy()
        return np.asarray(g(stack, xs, ys))

    def evaluate(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        logits = np.asarray(forward(np, _unflatten(theta[None, :], shapes), x[None]))
        loss = float(_xent_autograd(np, logits, y[None])[0])
        return loss, float((logits[0].argmax(axis=-1) == y).mean())

    return Problem(xt, yt, xv, yv, init, grads, evaluate)


# CNN: 3x3 conv (8 filters, valid) on 8x8 -> ReLU -> 2x2 average pool (3x3x8) -> dense 10.
_CNN_F = 8
_CNN_SHAPES = ((9, _CNN_F), (_CNN_F,), (9 * _CNN_F, 10), (10,))


def _im2col(x: np.ndarray) -> np.ndarray:
    """``(N, 64)`` images -> ``(N, 36, 9)`` 3x3 patches (valid convolution)."""
    img = x.reshape(-1, 8, 8)
    cols = [img[:, r:r + 6, c:c + 6].reshape(-1, 36) for r in range(3) for c in range(3)]
    return np.stack(cols, axis=-1)


def _cnn_forward(anp: Any, params: list[Any], x: np.ndarray) -> Any:
    wc, bc, wd, bd = params  # each with a leading worker axis
    w = x.shape[0]
    h = anp.maximum(anp.matmul(x.reshape(w, -1, 9), wc) + bc[:, None, :], 0.0)  # (W, b*36, F)
    h = h.reshape(w, -1, 3, 2, 3, 2, _CNN_F)
    h = anp.mean(anp.mean(h, axis=5), axis=3).reshape(w, -1, 9 * _CNN_F)
    return anp.matmul(h, wd) + bd[:, None, :]


def _cnn() -> Problem:
    def init(rng: np.random.Generator) -> np.ndarray:
        wc = rng.normal(0, 1 / 3, (9, _CNN_F))
        wd = rng.normal(0, 1 / math.sqrt(9 * _CNN_F), (9 * _CNN_F, 10))
        return np.concatenate([wc.ravel(), np.full(_CNN_F, 0.1), wd.ravel(), np.zeros(10)])

    return _autograd_problem(_cnn_forward, _CNN_SHAPES, init, _im2col)


# RNN: Elman tanh, 32 hidden units, 8 steps of 8 pixels (image rows), softmax on the last state.
_RNN_H = 32
_RNN_SHAPES = ((8, _RNN_H), (_RNN_H, _RNN_H), (_RNN_H,), (_RNN_H, 10), (10,))


def _rnn_forward(anp: Any, params: list[Any], x: np.ndarray) -> Any:
    wx, wh, bh, wo, bo = params
    seq = x.reshape(x.shape[0], x.shape[1], 8, 8)  # (W, b, step, pixel)
    h = anp.zeros((x.shape[0], x.shape[1], _RNN_H))
    for t in range(8):
        h = anp.tanh(anp.matmul(seq[:, :, t, :], wx) + anp.matmul(h, wh) + bh[:, None, :])
    return anp.matmul(h, wo) + bo[:, None, :]


def _rnn() -> Problem:
    def init(rng: np.random.Generator) -> np.ndarray:
        wx = rng.normal(0, 1 / math.sqrt(8), (8, _RNN_H))
        wh = rng.normal(0, 0.5 / math.sqrt(_RNN_H), (_RNN_H, _RNN_H))
        wo = rng.normal(0, 1 / math.sqrt(_RNN_H), (_RNN_H, 10))
        return np.concatenate([wx.ravel(), wh.ravel(), np.zeros(_RNN_H), wo.ravel(), np.zeros(10)])

    return _autograd_problem(_rnn_forward, _RNN_SHAPES, init, lambda x: x)


#: The models, with learning rates and convergence targets (validation loss) chosen so that the
#: lossless run converges in a handful of epochs; cross-entropy for the classifiers, mean squared
#: error for MF (noise variance 0.01 bounds it below).
MODEL_SPECS: dict[str, ModelSpec] = {
    "mlp": ModelSpec("mlp", "MLP 64-32-10 on sklearn digits", 0.5, 8, 0.15, 30, None, _mlp),
    "mf": ModelSpec("mf", "MF rank 8 of a synthetic 200x150 rank-5 matrix", 15.0, 64, 0.05, 30, None, _mf),
    "cnn": ModelSpec("cnn", "CNN conv3x3x8-pool-dense on sklearn digits 8x8", 0.3, 8, 0.25, 30, "ml", _cnn),
    "rnn": ModelSpec("rnn", "Elman RNN-32 over digit rows (8 steps x 8 px)", 0.25, 8, 0.30, 30, "ml", _rnn),
}


# ---------------------------------------------------------------------------------------------
# Training


@dataclass(frozen=True)
class RunResult:
    """One training run: ``epochs`` to converge (None if it did not), ``epochs_run``, the final
    validation metrics (``val_loss``, ``val_acc``: NaN for a model without accuracy) and the
    validation loss after each epoch run (``history``; ``inf`` where it diverged)."""

    epochs: int | None
    epochs_run: int
    val_loss: float
    val_acc: float
    history: tuple[float, ...]


def train(
    problem: Problem,
    spec: ModelSpec,
    *,
    p: float,
    policy: str,
    seed: int,
    num_workers: int = 4,
    values_per_packet: int = DEFAULT_VALUES_PER_PACKET,
    max_epochs: int | None = None,
    stop_at_target: bool = True,
) -> RunResult:
    """Train ``problem`` data-parallel with packet loss ``p`` and receiver ``policy`` (one of
    :data:`POLICIES`), with ``spec``'s learning rate, batch and target (``problem`` is
    ``spec.build()``; :data:`MODEL_SPECS` has each model's). ``seed`` seeds the data order,
    the initial weights and the losses; ``num_workers`` shards each minibatch;
    ``values_per_packet`` sizes the packets; ``max_epochs`` overrides ``spec.max_epochs``;
    ``stop_at_target`` ends the run at the first epoch that converges (else it runs them all).
    Returns a :class:`RunResult`. Raises ``ValueError`` for ``p`` outside [0, 1], an unknown
    ``policy``, a ``seed`` outside [0, 2^64 - 1], ``num_workers``, ``values_per_packet`` or
    ``max_epochs`` below 1, or more workers than give one minibatch per epoch; ``TypeError`` for
    an argument that is not a number (a boolean is none)."""
    p = _real_arg("p", p, 0.1)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p = {p}: must be within [0, 1]")
    if not isinstance(policy, str) or policy not in POLICIES:
        raise ValueError(f"policy = {policy}: choose from {', '.join(POLICIES)}")
    seed = _seed_arg("seed", seed)
    num_workers = _int_arg("num_workers", num_workers, 1, example=4)
    values_per_packet = _int_arg("values_per_packet", values_per_packet, 1, example=DEFAULT_VALUES_PER_PACKET)
    if max_epochs is not None:
        max_epochs = _int_arg("max_epochs", max_epochs, 1, example=30)
    _check_workers("num_workers", spec, problem, num_workers)
    data_ss, loss_ss = np.random.SeedSequence(seed).spawn(2)
    data_rng = np.random.default_rng(data_ss)
    loss_rng = np.random.default_rng(loss_ss)
    theta = problem.init(data_rng)
    limit = spec.max_epochs if max_epochs is None else max_epochs
    loss, acc = problem.evaluate(theta, problem.x_val, problem.y_val)
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging run is reported, not warned about
        return _epochs(problem, spec, theta, policy, p, num_workers, values_per_packet, limit, stop_at_target,
                       data_rng, loss_rng, loss, acc)


def _epochs(problem: Problem, spec: ModelSpec, theta: np.ndarray, policy: str, p: float, num_workers: int,
            values_per_packet: int, limit: int, stop_at_target: bool, data_rng: np.random.Generator,
            loss_rng: np.random.Generator, loss: float, acc: float) -> RunResult:
    n = len(problem.y_train)
    batch = spec.batch_per_worker * num_workers
    steps = n // batch  # the last partial minibatch is dropped so every shard is equal
    num_packets = len(packet_bounds(theta.size, values_per_packet))
    history: list[float] = []
    epochs: int | None = None
    for epoch in range(1, limit + 1):
        order = data_rng.permutation(n)
        for s in range(steps):
            idx = order[s * batch:(s + 1) * batch].reshape(num_workers, spec.batch_per_worker)
            g = problem.worker_grads(theta, problem.x_train[idx], problem.y_train[idx])
            arrived = loss_rng.random((num_workers, num_packets)) >= p
            theta = theta - spec.lr * aggregate(g, arrived, values_per_packet, policy)
        loss, acc = problem.evaluate(theta, problem.x_val, problem.y_val)
        if not np.isfinite(loss):
            history.append(float("inf"))
            break  # diverged: it cannot converge any more
        history.append(loss)
        if epochs is None and loss <= spec.target_loss:
            epochs = epoch
            if stop_at_target:
                break
    return RunResult(epochs, len(history), float(loss), float(acc), tuple(history))


# ---------------------------------------------------------------------------------------------
# The measurement


@dataclass(frozen=True)
class ToleranceConfig:
    """What ``tolerance`` measures; defaults are the full run of ``slacknet ml tolerance``."""

    models: tuple[str, ...] = ("mlp", "cnn", "rnn", "mf")
    policies: tuple[str, ...] = POLICIES
    seeds: tuple[int, ...] = (1, 2, 3)
    p_step: float = 0.05
    num_workers: int = 4
    values_per_packet: int = DEFAULT_VALUES_PER_PACKET
    #: Overrides every model's ``max_epochs`` when set.
    max_epochs: int | None = None

    @classmethod
    def quick(cls, **kw: Any) -> "ToleranceConfig":
        """The reduced run (``--quick``): p in steps of 0.2, one seed, at most 12 epochs;
        ``kw`` overrides any field."""
        base = cls(seeds=(1,), p_step=0.2, max_epochs=12)
        return replace(base, **kw)


#: The finest loss-rate step :func:`p_grid` takes (1,000 points).
MIN_P_STEP = 0.001


def p_grid(step: float) -> list[float]:
    """0, step, 2 step, ... up to 1 (inclusive when 1 is a multiple of ``step``). Raises
    ``ValueError`` for a ``step`` outside (0, 1] or below :data:`MIN_P_STEP`, ``TypeError`` for
    one that is not a number."""
    step = _real_arg("p step", step, 0.05)
    if not 0.0 < step <= 1.0:
        raise ValueError(f"p step = {step}: must be in (0, 1], e.g. 0.05")
    # Checked before the grid is built: every point is a training run per model, seed and
    # policy, and a step of 1e-12 would ask for 10^12 of them.
    if step < MIN_P_STEP:
        raise ValueError(f"p step = {step}: at least {MIN_P_STEP} ({int(1 / MIN_P_STEP)} points), e.g. 0.05")
    n = int(math.floor(1.0 / step + 1e-9))
    return [round(i * step, 10) for i in range(n + 1)]


def epochs_tolerance(base_epochs: int) -> int:
    """Extra epochs still counted as "the same epochs" as the lossless run's ``base_epochs``."""
    return max(1, math.ceil(0.1 * base_epochs))


def tolerance(
    config: ToleranceConfig,
    *,
    on_run: Callable[[dict[str, Any]], None] | None = None,
) -> pd.DataFrame:
    """Train every model x policy x seed x p of ``config``; one row per run.

    Columns: model, policy, seed, p, converged, epochs (nullable int), epochs_run, val_loss,
    val_acc. Raises ``MissingExtraError`` before training if a model's extra is missing, and
    ``TypeError`` or ``ValueError`` naming the field for a ``config`` that cannot run: models,
    policies or seeds that are not a non-empty tuple of distinct known names (seeds: integers
    in [0, 2^64 - 1]), a bad ``p_step`` (:func:`p_grid`), ``num_workers``, ``values_per_packet``
    or ``max_epochs`` below 1, or more workers than give a model one minibatch per epoch.
    """
    _names_arg("models", config.models, tuple(MODEL_SPECS), "model names")
    _names_arg("policies", config.policies, POLICIES, "policy names")
    if isinstance(config.seeds, (str, bytes)) or not isinstance(config.seeds, (list, tuple)):
        raise TypeError(f"seeds = {config.seeds!r}: give a tuple of integers, e.g. (1, 2, 3)")
    if not config.seeds:
        raise ValueError("seeds = (): empty; give at least one, e.g. (1, 2, 3)")
    seeds = [_seed_arg("seeds", s) for s in config.seeds]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds = {tuple(config.seeds)!r}: a seed is listed twice (its runs would be counted twice)")
    _int_arg("num_workers", config.num_workers, 1, example=4)
    _int_arg("values_per_packet", config.values_per_packet, 1, example=DEFAULT_VALUES_PER_PACKET)
    if config.max_epochs is not None:
        _int_arg("max_epochs", config.max_epochs, 1, example=30)
    grid = p_grid(config.p_step)
    problems = {m: MODEL_SPECS[m].build() for m in config.models}  # MissingExtraError up front
    for m in config.models:
        _check_workers("num_workers", MODEL_SPECS[m], problems[m], config.num_workers)
    rows: list[dict[str, Any]] = []
    for m in config.models:
        spec = MODEL_SPECS[m]
        for pol in config.policies:
            for seed in config.seeds:
                for p in grid:
                    r = train(problems[m], spec, p=p, policy=pol, seed=seed,
                              num_workers=config.num_workers, values_per_packet=config.values_per_packet,
                              max_epochs=config.max_epochs)
                    row = {"model": m, "policy": pol, "seed": seed, "p": p, "converged": r.epochs is not None,
                           "epochs": r.epochs, "epochs_run": r.epochs_run, "val_loss": r.val_loss,
                           "val_acc": r.val_acc}
                    rows.append(row)
                    if on_run is not None:
                        on_run(row)
    df = pd.DataFrame(rows)
    df["epochs"] = df["epochs"].astype("Int64")
    return df


def _x1_x2(runs: pd.DataFrame) -> tuple[float, float, int | None]:
    """x1, x2 and the lossless epochs for one model x policy x seed (rows sorted by p)."""
    runs = runs.sort_values("p")
    base = runs[runs["p"] == 0.0]
    if base.empty or not bool(base["converged"].iloc[0]):
        return float("nan"), float("nan"), None
    base_epochs = int(base["epochs"].iloc[0])
    allowed = base_epochs + epochs_tolerance(base_epochs)
    x1 = x2 = 0.0
    same = True
    for p, conv, ep in zip(runs["p"], runs["converged"], runs["epochs"]):
        if not conv:
            break
        x2 = float(p)
        same = same and int(ep) <= allowed
        if same:
            x1 = float(p)
    return x1, x2, base_epochs


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Per model and policy, from the :func:`tolerance` table ``runs``: x1 and x2 as mean, min
    and max over seeds, the lossless epochs, and the paper's x1 (Table 3) and x2 (Figure 2, MLP
    and RNN only). A seed whose lossless run did not converge gives NaN (and counts in
    ``num_seeds_no_baseline``). Columns: model, policy, num_seeds, x1_mean, x1_min, x1_max,
    x2_mean, x2_min, x2_max, base_epochs_mean, num_seeds_no_baseline, paper_x1, paper_x2.
    Raises ``ValueError`` for a table without :func:`tolerance`'s columns."""
    missing = [c for c in ("model", "policy", "seed", "p", "converged", "epochs") if c not in runs.columns]
    if missing:
        raise ValueError(f"not a tolerance table (no column {', '.join(missing)}): summarize what tolerance() returns")
    out = []
    for (m, pol), g in runs.groupby(["model", "policy"], sort=False):
        per = [_x1_x2(s) for _, s in g.groupby("seed", sort=True)]
        x1 = np.array([a for a, _, _ in per])
        x2 = np.array([b for _, b, _ in per])
        base = [c for _, _, c in per if c is not None]
        ok = ~np.isnan(x1)
        row: dict[str, Any] = {"model": m, "policy": pol, "num_seeds": len(per)}
        for name, v in (("x1", x1[ok]), ("x2", x2[ok])):
            row[f"{name}_mean"] = float(v.mean()) if len(v) else float("nan")
            row[f"{name}_min"] = float(v.min()) if len(v) else float("nan")
            row[f"{name}_max"] = float(v.max()) if len(v) else float("nan")
        row["base_epochs_mean"] = float(np.mean(base)) if base else float("nan")
        row["num_seeds_no_baseline"] = int((~ok).sum())
        row["paper_x1"] = PAPER_TABLE3.get(str(m), float("nan"))
        row["paper_x2"] = PAPER_FIGURE2_X2.get(str(m), float("nan"))
        out.append(row)
    return pd.DataFrame(out)


def render(summary: pd.DataFrame) -> str:
    """The summary as a plain-text table, ours next to the paper's."""
    lines = [f"{'model':<6} {'policy':<10} {'x1 mean [min-max]':<20} {'x2 mean [min-max]':<20} "
             f"{'base ep':>7}  {'paper x1 (T3)':>13} {'paper x2 (F2)':>13}"]

    def rng(r: Any, k: str) -> str:
        if math.isnan(r[f"{k}_mean"]):
            return "n/a (no baseline)"
        return f"{r[f'{k}_mean']:.2f} [{r[f'{k}_min']:.2f}-{r[f'{k}_max']:.2f}]"

    def num(v: float) -> str:
        return "-" if math.isnan(v) else f"{v:.2f}"

    for _, r in summary.iterrows():
        lines.append(f"{r['model']:<6} {r['policy']:<10} {rng(r, 'x1'):<20} {rng(r, 'x2'):<20} "
                     f"{num(r['base_epochs_mean']):>7}  {num(r['paper_x1']):>13} {num(r['paper_x2']):>13}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Figure 4's per-model inputs: each model's measured x1 and compute-to-communication ratio

#: The §3.1 fabric's line rate, against which a gradient's communication time is counted.
LINE_RATE_BPS = 40e9
#: ResNet20's parameter count (He et al. 2016, Table 6: 0.27 M), Table 2's CNN. Figure 4's
#: per-model points scale every model by one factor so that our CNN has this many parameters.
RESNET20_PARAMS = 270_000


def profile(models: Sequence[str] = ("mlp", "cnn", "rnn", "mf"), *, repeats: int = 30, seed: int = 1,
            num_workers: int = 4) -> pd.DataFrame:
    """Each model's size and compute time per iteration, measured on this machine.

    Columns: model, params, gradient_bytes (float32), compute_us (one worker's gradient of its
    shard: the median over ``repeats`` timed steps, after one warm-up, of the time to compute all
    ``num_workers`` gradients divided by ``num_workers``), line_us (the gradient at
    :data:`LINE_RATE_BPS`) and ratio = compute_us / line_us, the compute-to-communication ratio
    that does not depend on the model's scale when compute grows with the parameters. Wall-clock
    times: they vary from machine to machine and run to run (numpy on a CPU, not the paper's GPUs).

    ``models`` are names of :data:`MODEL_SPECS`; ``seed`` seeds the weights and the batch.
    Raises ``ValueError`` for an unknown or repeated model, ``repeats`` or ``num_workers`` below
    1 (or more workers than one minibatch holds examples) or a ``seed`` out of range, ``TypeError``
    for models that are not a tuple of names or counts that are not integers, and
    :class:`MissingExtraError` for a model whose extra is not installed.
    """
    import time

    models = _names_arg("models", models, tuple(MODEL_SPECS), "model names")
    repeats = _int_arg("repeats", repeats, 1, example=30)
    seed = _seed_arg("seed", seed)
    num_workers = _int_arg("num_workers", num_workers, 1, example=4)
    rows = []
    for m in models:
        spec = MODEL_SPECS[m]
        problem = spec.build()
        _check_workers("num_workers", spec, problem, num_workers)
        rng = np.random.default_rng(seed)
        theta = problem.init(rng)
        b = spec.batch_per_worker
        idx = rng.permutation(len(problem.y_train))[:num_workers * b].reshape(num_workers, b)
        xs, ys = problem.x_train[idx], problem.y_train[idx]
        problem.worker_grads(theta, xs, ys)  # warm-up (autograd traces, numpy caches)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            problem.worker_grads(theta, xs, ys)
            times.append(time.perf_counter() - t0)
        compute_us = float(np.median(times)) / num_workers * 1e6
        grad_bytes = 4 * int(theta.size)
        line_us = grad_bytes * 8 / LINE_RATE_BPS * 1e6
        rows.append({"model": m, "params": int(theta.size), "gradient_bytes": grad_bytes,
                     "compute_us": round(compute_us, 2), "line_us": round(line_us, 4),
                     "ratio": round(compute_us / line_us, 2)})
    return pd.DataFrame(rows)


def with_tolerance(prof: pd.DataFrame, summary: pd.DataFrame, policy: str = "zero_fill") -> pd.DataFrame:
    """``prof`` (a :func:`profile` table) with each model's measured x1 under ``policy`` from
    the :func:`summarize` table ``summary``: ``x1_min`` (what every seed tolerated: Figure 4's
    p is ``1 - x1_min``) and ``x1_mean``, and a ``policy`` column. Raises ``ValueError`` if
    ``summary`` has no ``policy`` row for one of ``prof``'s models, more than one, or an x1 that
    is a number outside [0, 1] (NaN, a model without a converging lossless run, is kept)."""
    s = summary[summary["policy"] == policy].set_index("model")
    missing = [m for m in prof["model"] if m not in s.index]
    if missing:
        raise ValueError(f"the tolerance summary has no {policy} row for {', '.join(missing)}: "
                         f"run slacknet ml tolerance with those models")
    for m in prof["model"]:
        if s.index.to_list().count(m) > 1:
            raise ValueError(f"the tolerance summary has {s.index.to_list().count(m)} {policy} rows for {m}, "
                             "not one: give one tolerance run's summary.csv")
        for col in ("x1_min", "x1_mean"):
            v = pd.to_numeric(pd.Series([s.loc[m, col]]), errors="coerce").iloc[0]
            if pd.isna(v) and not pd.isna(s.loc[m, col]):
                raise ValueError(f"{col} of {m} = {s.loc[m, col]!r}: not a number; give the summary.csv of "
                                 "slacknet ml tolerance")
            if not pd.isna(v) and not 0.0 <= float(v) <= 1.0:
                raise ValueError(f"{col} of {m} = {v}: a loss tolerance is a probability, within [0, 1]; give the "
                                 "summary.csv of slacknet ml tolerance")
    out = prof.copy()
    out["x1_min"] = [float(s.loc[m, "x1_min"]) for m in prof["model"]]
    out["x1_mean"] = [round(float(s.loc[m, "x1_mean"]), 4) for m in prof["model"]]
    out["policy"] = policy
    return out


def figure4_points(models: pd.DataFrame) -> pd.DataFrame:
    """Figure 4's per-model scenario keys from a :func:`with_tolerance` table (four models).

    Every model is scaled by one factor, so that our CNN has ResNet20's parameter count
    (:data:`RESNET20_PARAMS`): ``model_bytes`` = its gradient bytes times that factor, and
    ``job_compute_us`` = its measured ratio times the scaled gradient's time at
    :data:`LINE_RATE_BPS` (the ratio stays the measured one); ``complete_fraction`` =
    ``1 - x1_min``. Columns: model, model_bytes, job_compute_us, complete_fraction (keys of a
    training entry). Raises ``ValueError`` without a cnn row or for an unknown (NaN) x1."""
    by = models.set_index("model")
    if "cnn" not in by.index:
        raise ValueError("Figure 4's points are scaled by the CNN's size: the table needs a cnn row "
                         "(pip install 'slacknet[ml]')")
    unknown = [str(m) for m, x in by["x1_min"].items() if pd.isna(x)]
    if unknown:
        # complete_fraction = 1 - NaN is no fraction: the point cannot be a scenario key.
        raise ValueError(f"x1 of {', '.join(unknown)} is unknown (n/a: no seed's lossless run converged), so "
                         "Figure 4 has no point for it; run slacknet ml tolerance again with more --max-epochs")
    scale = RESNET20_PARAMS / float(by.loc["cnn", "params"])
    rows = []
    for m, r in by.iterrows():
        model_bytes = int(round(float(r["gradient_bytes"]) * scale))
        compute_us = round(float(r["ratio"]) * model_bytes * 8 / LINE_RATE_BPS * 1e6, 1)
        rows.append({"model": m, "model_bytes": model_bytes, "job_compute_us": compute_us,
                     "complete_fraction": round(1.0 - float(r["x1_min"]), 4)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Reading and writing the command's files

#: The most bytes a tolerance summary read by :func:`read_summary` may have (one row per model
#: and policy: a few hundred bytes).
MAX_SUMMARY_BYTES = 1 << 20
#: The first line of each CSV ``slacknet ml`` writes: an existing file is replaced only if it
#: starts so (an earlier output of the same kind), never a file of the user's.
RUNS_HEADER = "model,policy,seed,p,converged,epochs,epochs_run,val_loss,val_acc"
SUMMARY_HEADER = "model,policy,num_seeds,x1_mean,"
PROFILE_HEADER = "model,params,gradient_bytes,compute_us,line_us,ratio"


def read_summary(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The :func:`summarize` table a tolerance run wrote as ``summary.csv``: a regular file of at
    most :data:`MAX_SUMMARY_BYTES` (a FIFO waited for a writer for ever and ``/dev/zero`` was read
    until memory ran out), UTF-8 CSV with the columns model, policy, x1_min and x1_mean. Raises
    ``OSError`` if it cannot be read as such a file and ``ValueError`` for its content; each
    message starts with ``path``."""
    import stat

    from .config import FileTooLargeError, NotRegularFileError, read_bounded

    try:
        data = read_bounded(path, MAX_SUMMARY_BYTES)
    except NotRegularFileError as e:
        what = ("a folder" if stat.S_ISDIR(e.mode) else "a FIFO" if stat.S_ISFIFO(e.mode)
                else "a device or special file")
        raise OSError(f"{path}: {what}, not a file") from None
    except FileTooLargeError:
        raise OSError(f"{path}: larger than {MAX_SUMMARY_BYTES // 2**20} MB, too large to be a tolerance summary") from None
    except OSError as e:
        raise OSError(f"{path}: cannot read it ({e.strerror or e})") from None
    try:
        summary = pd.read_csv(io.StringIO(data.decode("utf-8")))
    except (ValueError, pd.errors.ParserError) as e:  # UnicodeDecodeError and EmptyDataError included
        raise ValueError(f"{path}: cannot read it as a CSV ({e})") from None
    need = {"model", "policy", "x1_min", "x1_mean"}
    if not need <= set(summary.columns):
        raise ValueError(f"{path}: not a tolerance summary (needs the columns {', '.join(sorted(need))})")
    return summary


def _ours(path: Path, header: str) -> bool:
    """Whether ``path`` is a regular file whose first line starts with ``header``."""
    if path.is_symlink() or not path.is_file():
        return False
    with open(path, "rb") as f:
        return f.read(len(header)).decode("utf-8", errors="replace") == header


def check_tolerance_out(folder: str | os.PathLike[str]) -> None:
    """Raise ``ValueError`` unless a tolerance run may write ``runs.csv`` and ``summary.csv``
    into ``folder``: each is absent or an earlier tolerance run's (other files are left alone)."""
    for name, header in (("runs.csv", RUNS_HEADER), ("summary.csv", SUMMARY_HEADER)):
        p = Path(folder) / name
        if os.path.lexists(p) and not _ours(p, header):
            raise ValueError(f"{folder}: it holds a {name} that is not an earlier tolerance run's, which the "
                             "results would replace; choose a new output folder")


def check_profile_out(path: str | os.PathLike[str]) -> None:
    """Raise ``ValueError`` unless :func:`profile`'s table may be written to ``path``: absent, or
    an earlier profile's CSV."""
    p = Path(path)
    if os.path.lexists(p) and not _ours(p, PROFILE_HEADER):
        raise ValueError(f"{path}: it exists and is not an earlier profile's table, which writing would "
                         "replace; name a new file")


def write_tolerance(runs: pd.DataFrame, summary: pd.DataFrame, folder: str | os.PathLike[str]) -> None:
    """Write ``runs.csv`` and ``summary.csv`` into ``folder`` (:func:`check_tolerance_out` first),
    each atomically. An earlier run's summary is removed before the new runs are written, so an
    interruption between the two never leaves one run's summary beside another's runs."""
    check_tolerance_out(folder)
    old = Path(folder) / "summary.csv"
    if old.is_file():
        old.unlink()
    write_csv_atomic(runs, Path(folder) / "runs.csv")
    write_csv_atomic(summary, Path(folder) / "summary.csv")
