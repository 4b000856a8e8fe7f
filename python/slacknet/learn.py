"""Credence's drop oracle: LQD decision traces, random-forest training, export.

Credence (NSDI'24, §3.4 and §4.1) predicts whether push-out LQD would drop a packet. Its
training data are packet-level traces of every switch running LQD: for each arrival, the queue
length, the shared-buffer occupancy, their averages over one base RTT, and whether LQD
eventually dropped the packet (on arrival, or pushed out later). :func:`trace` runs a scenario
under LQD and returns that table; :func:`train` fits scikit-learn's
``RandomForestClassifier`` (by default 4 trees of depth 4 on queue length and occupancy, the
paper's choice) and reports accuracy, precision, recall, F1 and the bound of Theorem 2 on the
error function eta; :func:`export_forest` writes the ``slacknet-forest/1`` JSON that the
simulator evaluates natively (``crates/sim/src/credence/forest.rs``).
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from . import _native
from .config import LongestQueueDrop, Scenario, load_scenario

__all__ = [
    "FEATURES",
    "ALL_FEATURES",
    "LABEL_COLUMNS",
    "MIN_POSITIVE_FRACTION",
    "RarePositivesWarning",
    "TrainReport",
    "trace",
    "train",
    "export_forest",
    "eta_bound",
]

#: The paper's features (§4.1: "queue length and shared buffer occupancy").
FEATURES = ("queue_len", "occupancy")
#: Every feature a trace records (the forest format accepts any subset).
ALL_FEATURES = ("queue_len", "avg_queue_len", "occupancy", "avg_occupancy")
#: The columns :func:`train` needs of a trace besides its features: where each arrival was
#: (Theorem 2's N is the most queues of one switch) and its label.
LABEL_COLUMNS = ("switch", "queue", "dropped")
#: Below this fraction of dropped packets a trace has too few positives to learn from.
MIN_POSITIVE_FRACTION = 0.001


class RarePositivesWarning(UserWarning):
    """The trace has too few drops to learn when LQD drops (train on heavier load or bursts)."""


def trace(
    scenario: Scenario | str | os.PathLike[str] | None,
    *,
    seed: int | None = None,
    chunk_events: int = 500_000,
) -> pd.DataFrame:
    """Run ``scenario`` with LQD (push-out) as every switch's buffer policy and return one row
    per switch arrival: ``switch``, ``time_ps``, ``queue``, the four features of
    :data:`ALL_FEATURES` (bytes) and ``dropped`` (LQD dropped or pushed it out). ``scenario`` is
    a :class:`~slacknet.Scenario`, a scenario file or ``None`` (the built-in default);
    ``seed`` overrides its seed; ``chunk_events`` is how many events run per call into Rust.

    Raises :class:`~slacknet.SpecError` for an invalid scenario and ``FileNotFoundError``."""
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    sw = sc.switch.model_copy(update={"admission": LongestQueueDrop()})
    update: dict[str, Any] = {"switch": sw}
    if seed is not None:
        update["seed"] = seed
    sc = sc.model_copy(update=update)
    sim = _native.Simulation(_native.validate_json(sc.to_json(), str(Path.cwd())))
    sim.enable_decision_trace()
    while sim.advance(chunk_events):
        pass
    cols = sim.decision_trace()
    df = pd.DataFrame({k: np.frombuffer(raw, dtype=np.dtype(dt)) for k, (dt, raw) in cols.items()})
    df["dropped"] = df["dropped"].astype(bool)
    return df


def eta_bound(tp: int, fp: int, tn: int, fn: int, num_queues: int) -> float:
    """Theorem 2's upper bound on the error function: ``(TN + FP) / (TN - min((N-1) FN, TN))``
    from the confusion counts ``tp``, ``fp``, ``tn``, ``fn`` and ``num_queues`` (N), infinite
    when the denominator is 0. ``1 / eta`` is the paper's "error score"."""
    denom = tn - min((num_queues - 1) * fn, tn)
    return math.inf if denom <= 0 else (tn + fp) / denom


@dataclass
class TrainReport:
    """What :func:`train` learnt and how well it predicts held-out packets."""

    model: Any
    """The fitted ``sklearn.ensemble.RandomForestClassifier``."""
    features: tuple[str, ...]
    """The features it was trained on, in order."""
    metrics: dict[str, float] = field(default_factory=dict)
    """accuracy, precision, recall, f1, tp, fp, tn, fn, eta_bound, error_score (1/eta),
    positive_fraction, train_rows, test_rows."""

    def render(self) -> str:
        """The metrics as aligned text."""
        m = self.metrics
        lines = [
            f"features         {', '.join(self.features)}",
            f"rows             {int(m['train_rows'])} train / {int(m['test_rows'])} test "
            f"({m['positive_fraction'] * 100:.3f}% dropped by LQD)",
            f"accuracy         {m['accuracy']:.4f}",
            f"precision        {m['precision']:.4f}",
            f"recall           {m['recall']:.4f}",
            f"F1               {m['f1']:.4f}",
            f"confusion        TP {int(m['tp'])}  FP {int(m['fp'])}  TN {int(m['tn'])}  FN {int(m['fn'])}",
            f"eta bound (Th.2) {m['eta_bound']:.4f}   error score 1/eta {m['error_score']:.4f}",
        ]
        return "\n".join(lines)


def train(
    traces: pd.DataFrame | Sequence[pd.DataFrame],
    *,
    trees: int = 4,
    depth: int = 4,
    features: Sequence[str] = FEATURES,
    test_fraction: float = 0.4,
    seed: int = 1,
    num_queues: int | None = None,
) -> TrainReport:
    """Fit a random forest that predicts LQD's drops and score it on a held-out split
    (``test_fraction``; the paper uses a 0.6 train split). ``traces`` is what :func:`trace`
    returns, or several such frames (concatenated); the forest has ``trees`` trees of at most
    ``depth`` levels over ``features`` (names of :data:`ALL_FEATURES`, default
    :data:`FEATURES`); ``seed`` seeds the split and the forest. ``num_queues`` (N in Theorem 2)
    defaults to the most queues seen at one switch in the trace. Returns a
    :class:`TrainReport`. Warns with :class:`RarePositivesWarning` when drops are too rare to
    learn from; raises ``ValueError`` for an unknown feature, a frame that is not a decision
    trace, or one of fewer than 10 rows."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_score, recall_score
    from sklearn.model_selection import train_test_split

    df = traces if isinstance(traces, pd.DataFrame) else pd.concat(list(traces), ignore_index=True)
    feats = tuple(features)
    bad = [f for f in feats if f not in ALL_FEATURES]
    if bad:
        raise ValueError(f"unknown feature {bad[0]!r}: choose from {', '.join(ALL_FEATURES)}")
    missing = [c for c in (*LABEL_COLUMNS, *feats) if c not in df.columns]
    if missing:
        raise ValueError(f"not a decision trace (no column {', '.join(missing)}): train on what trace() returns")
    if len(df) < 10:
        raise ValueError(f"a trace of {len(df)} rows is too small to train on")
    y = df["dropped"].to_numpy(dtype=bool).astype(np.int64)
    positives = float(y.mean())
    if positives < MIN_POSITIVE_FRACTION or y.sum() < 20:
        warnings.warn(
            f"only {y.sum()} of {len(y)} packets ({positives * 100:.4f}%) were dropped by LQD: too "
            "few to learn from; trace a heavier scenario (the paper trains on web search at load "
            "0.8 with incast bursts of 75% of the buffer)",
            RarePositivesWarning,
            stacklevel=2,
        )
    x = df[list(feats)].to_numpy(dtype=np.float64)
    stratify = y if 0 < y.sum() < len(y) and min(y.sum(), len(y) - y.sum()) >= 2 else None
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, random_state=seed, stratify=stratify)
    clf = RandomForestClassifier(n_estimators=trees, max_depth=depth, random_state=seed, n_jobs=1)
    clf.fit(x_tr, y_tr)
    pred = clf.predict(x_te)
    tn, fp, fn, tp = (int(v) for v in confusion_matrix(y_te, pred, labels=[0, 1]).ravel())
    n = num_queues or int(df.groupby("switch")["queue"].max().max() + 1)
    eta = eta_bound(tp, fp, tn, fn, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undefined precision with no predicted drops is 0
        metrics = {
            "accuracy": float(accuracy_score(y_te, pred)),
            "precision": float(precision_score(y_te, pred, zero_division=0)),
            "recall": float(recall_score(y_te, pred, zero_division=0)),
            "f1": float(f1_score(y_te, pred, zero_division=0)),
        }
    metrics.update(
        tp=tp, fp=fp, tn=tn, fn=fn, eta_bound=eta, error_score=0.0 if math.isinf(eta) else 1 / eta,
        positive_fraction=positives, train_rows=len(y_tr), test_rows=len(y_te),
    )
    return TrainReport(model=clf, features=feats, metrics=metrics)


def export_forest(report: TrainReport, path: str | os.PathLike[str]) -> Path:
    """Write the forest of ``report`` to ``path`` as ``slacknet-forest/1`` JSON (see the module
    docs) and return the path. Raises ``ValueError`` if the forest never saw a drop."""
    clf = report.model
    classes = [int(c) for c in clf.classes_]
    if 1 not in classes:
        raise ValueError("the forest never saw a drop (class 1): it cannot predict one")
    doc = {
        "format": "slacknet-forest/1",
        "features": list(report.features),
        "vote": "mean_proba",
        "threshold": 0.5,
        "drop_class": classes.index(1),
        "trees": [
            {k: getattr(e.tree_, k).tolist() for k in ("children_left", "children_right", "feature", "threshold", "value")}
            for e in clf.estimators_
        ],
        "training": {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in report.metrics.items()},
    }
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    return p
