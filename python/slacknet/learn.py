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
import numbers
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from . import _native
from .config import LongestQueueDrop, Scenario, is_seed, load_scenario, spec_error
from .results import replace_atomic, write_text_atomic

__all__ = [
    "FEATURES",
    "ALL_FEATURES",
    "LABEL_COLUMNS",
    "MIN_POSITIVE_FRACTION",
    "RarePositivesWarning",
    "TraceTruncatedWarning",
    "TrainReport",
    "trace",
    "train",
    "export_forest",
    "write_trace",
    "check_trace",
    "check_trace_out",
    "check_forest_out",
    "eta_bound",
    "MAX_TREES",
    "MAX_DEPTH",
]

#: The paper's features (§4.1: "queue length and shared buffer occupancy").
FEATURES = ("queue_len", "occupancy")
#: Every feature a trace records (the forest format accepts any subset).
ALL_FEATURES = ("queue_len", "avg_queue_len", "occupancy", "avg_occupancy")
#: The columns of a decision trace, in order.
TRACE_COLUMNS = ("switch", "time_ps", "queue", *ALL_FEATURES, "dropped")
#: The ``format`` of the model files :func:`export_forest` writes.
FOREST_FORMAT = "slacknet-forest/1"
#: The columns :func:`train` needs of a trace besides its features: where each arrival was
#: (Theorem 2's N is the most queues of one switch) and its label.
LABEL_COLUMNS = ("switch", "queue", "dropped")
#: Below this fraction of dropped packets a trace has too few positives to learn from.
MIN_POSITIVE_FRACTION = 0.001
#: The most trees and the deepest trees :func:`train` fits (the paper: 4 of depth 4). Without a
#: bound, ``trees = 10**9`` allocated until memory ran out, and a depth beyond C's ``ssize_t``
#: was scikit-learn's ``OverflowError``.
MAX_TREES = 1000
MAX_DEPTH = 1000


class RarePositivesWarning(UserWarning):
    """The trace has too few drops to learn when LQD drops (train on heavier load or bursts)."""


class TraceTruncatedWarning(UserWarning):
    """The run had more switch arrivals than a decision trace keeps (512 MiB of rows, about
    9.6 M): the trace holds the first ones, each with its true fate (shorten the run)."""


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

    Raises :class:`~slacknet.SpecError` for an invalid scenario or ``seed``, ``FileNotFoundError``,
    and ``TypeError`` or ``ValueError`` for a ``chunk_events`` that is not an integer of at least 1
    (0 advanced nothing, for ever)."""
    if seed is not None and not is_seed(seed):
        # Checked here: model_copy does not validate, so True ran as seed 1 and 2^64 was sent as a float.
        raise spec_error("seed", repr(seed), "must be an integer in [0, 2^64 - 1], e.g. seed=2")
    if isinstance(chunk_events, bool) or not isinstance(chunk_events, numbers.Integral):
        raise TypeError(f"chunk_events = {chunk_events!r}: give an integer, e.g. 500000")
    if not 1 <= chunk_events < 2**64:
        raise ValueError(f"chunk_events = {chunk_events}: must be between 1 and 2^64 - 1, e.g. 500000")
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    sw = sc.switch.model_copy(update={"admission": LongestQueueDrop()})
    update: dict[str, Any] = {"switch": sw}
    if seed is not None:
        update["seed"] = int(seed)
    sc = sc.model_copy(update=update)
    sim = _native.Simulation(_native.validate_json(sc.to_json(), str(Path.cwd())))
    sim.enable_decision_trace()
    while sim.advance(int(chunk_events)):
        pass
    cols = sim.decision_trace()
    df = pd.DataFrame({k: np.frombuffer(raw, dtype=np.dtype(dt)) for k, (dt, raw) in cols.items()})
    df["dropped"] = df["dropped"].astype(bool)
    df.attrs["truncated"] = bool(sim.decision_trace_truncated())
    if df.attrs["truncated"]:
        last = int(df["time_ps"].max()) if len(df) else 0
        warnings.warn(TraceTruncatedWarning(
            f"the decision trace is full at {len(df)} rows (512 MiB): it holds the switch arrivals up to "
            f"{last / 1e9:.3f} ms of the run, each with its true fate; shorten the run (run.stop_ms) for a whole one"),
            stacklevel=2)
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
    ``depth`` levels (``None``: no limit) over ``features`` (names of :data:`ALL_FEATURES`, default
    :data:`FEATURES`); ``seed`` seeds the split and the forest. ``num_queues`` (N in Theorem 2)
    defaults to the most queues seen at one switch in the trace. Returns a
    :class:`TrainReport`. Warns with :class:`RarePositivesWarning` when drops are too rare to
    learn from; raises ``ValueError`` for an unknown or repeated feature, a frame that is not a
    decision trace (a missing column; ``dropped`` not boolean or 0/1; ``switch`` or ``queue`` not
    whole numbers from 0; a feature not a finite number), one of fewer than 10 rows, ``trees``
    or ``depth`` outside 1 to :data:`MAX_TREES` / :data:`MAX_DEPTH`, a ``seed`` outside
    [0, 2^32 - 1], a ``test_fraction`` outside (0, 1) or a ``num_queues`` below 1, and
    ``TypeError`` for arguments of the wrong type (a boolean is no number; features are a
    sequence of names, not one string)."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_score, recall_score
    from sklearn.model_selection import train_test_split

    # Checked here, not left to scikit-learn, whose messages name its own parameters.
    for name, v, hi in (("trees", trees, MAX_TREES), ("depth", depth, MAX_DEPTH)):
        if name == "depth" and v is None:  # scikit-learn's "no limit"
            continue
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} = {v!r}: give an integer, e.g. 4 (the paper's)")
        if not 1 <= v <= hi:
            raise ValueError(f"{name} = {v}: must be between 1 and {hi}, e.g. 4 (the paper's)")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed = {seed!r}: give an integer, e.g. 1")
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed = {seed}: must be between 0 and 2^32 - 1, e.g. 1")
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, numbers.Real):
        raise TypeError(f"test_fraction = {test_fraction!r}: give a number, e.g. 0.4")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction = {test_fraction}: must be between 0 and 1 (exclusive), e.g. 0.4")
    if num_queues is not None:
        if isinstance(num_queues, bool) or not isinstance(num_queues, numbers.Integral):
            raise TypeError(f"num_queues = {num_queues!r}: give an integer, e.g. 8, or None for the trace's")
        if num_queues < 1:
            raise ValueError(f"num_queues = {num_queues}: must be at least 1, e.g. 8, or None for the trace's")
    if isinstance(features, (str, bytes)):
        raise TypeError(f"features = {features!r}: give a sequence of names, e.g. {FEATURES!r}")
    feats = tuple(features)
    bad = [f for f in feats if f not in ALL_FEATURES]
    if bad:
        raise ValueError(f"unknown feature {bad[0]!r}: choose from {', '.join(ALL_FEATURES)}")
    if not feats:
        raise ValueError(f"features = (): give at least one of {', '.join(ALL_FEATURES)}")
    if len(set(feats)) != len(feats):
        raise ValueError(f"features = {feats!r}: a feature is listed twice")
    if isinstance(traces, pd.DataFrame):
        df = traces
    else:
        frames = list(traces)
        if not frames:
            raise ValueError("traces = []: give at least one decision trace (what trace() returns)")
        for i, f in enumerate(frames):
            if not isinstance(f, pd.DataFrame):
                raise TypeError(f"traces[{i}] = {type(f).__name__}: give DataFrames that trace() returns")
        df = pd.concat(frames, ignore_index=True)
    missing = [c for c in (*LABEL_COLUMNS, *feats) if c not in df.columns]
    if missing:
        raise ValueError(f"not a decision trace (no column {', '.join(missing)}): train on what trace() returns")
    if len(df) < 10:
        raise ValueError(f"a trace of {len(df)} rows is too small to train on")
    _check_trace_values(df, feats)
    num_test = math.ceil(float(test_fraction) * len(df))  # scikit-learn's split
    if not 1 <= num_test < len(df):
        raise ValueError(f"test_fraction = {test_fraction}: leaves {len(df) - num_test} of the {len(df)} rows to "
                         f"train on and {num_test} to test on; give a fraction that leaves both some, e.g. 0.4")
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
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=float(test_fraction), random_state=int(seed),
                                              stratify=stratify)
    clf = RandomForestClassifier(n_estimators=int(trees), max_depth=None if depth is None else int(depth),
                                 random_state=int(seed), n_jobs=1)
    clf.fit(x_tr, y_tr)
    pred = clf.predict(x_te)
    tn, fp, fn, tp = (int(v) for v in confusion_matrix(y_te, pred, labels=[0, 1]).ravel())
    n = num_queues or int(df.groupby("switch")["queue"].max().max()) + 1
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


def check_trace(df: pd.DataFrame, features: Sequence[str] = FEATURES) -> None:
    """Raise ``ValueError`` unless ``df`` is a decision trace :func:`train` can learn ``features``
    from: it has the columns of :data:`LABEL_COLUMNS` and ``features``, with the values
    :func:`trace` writes (see :func:`train`)."""
    missing = [c for c in (*LABEL_COLUMNS, *features) if c not in df.columns]
    if missing:
        raise ValueError(f"not a decision trace (no column {', '.join(missing)}): train on what trace() returns")
    _check_trace_values(df, features)


def _check_trace_values(df: pd.DataFrame, feats: Sequence[str]) -> None:
    """The values of a decision trace are what :func:`trace` writes: strings in ``dropped`` were
    all true (a drop), a NaN ``queue`` or an infinite one raised ``OverflowError``, a negative one
    gave Theorem 2 a negative N, and a NaN feature trained a forest whose missing-value branches
    the exported file cannot hold (the simulator evaluates it differently from scikit-learn)."""
    d = df["dropped"]
    if not pd.api.types.is_bool_dtype(d):
        if not pd.api.types.is_numeric_dtype(d) or not d.isin((0, 1)).all():
            raise ValueError(f"not a decision trace: column dropped holds {_example(d)}, not true/false (or 0/1)")
    for c in ("switch", "queue"):
        col = df[c]
        if not pd.api.types.is_integer_dtype(col) or pd.api.types.is_bool_dtype(col) or (col < 0).any():
            raise ValueError(f"not a decision trace: column {c} holds {_example(col)}, not whole numbers from 0")
    for c in feats:
        col = df[c]
        if pd.api.types.is_bool_dtype(col) or not pd.api.types.is_numeric_dtype(col):
            raise ValueError(f"not a decision trace: feature {c} holds {_example(col)}, not numbers")
        bad = ~np.isfinite(col.to_numpy(dtype=np.float64))
        if bad.any():
            raise ValueError(f"not a decision trace: feature {c} holds {int(bad.sum())} values that are not finite "
                             f"numbers (e.g. {col[bad].iloc[0]})")


def _example(col: pd.Series) -> str:
    """A value of ``col`` that shows what it holds, and its type."""
    vals = col.dropna()
    if len(vals) < len(col):
        return f"missing values ({col.dtype})"
    v = col.iloc[0]
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        odd = vals[(vals < 0) | ~vals.isin((0, 1))] if col.name == "dropped" else vals[vals < 0]
        v = odd.iloc[0] if len(odd) else v
    return f"{v.item() if isinstance(v, np.generic) else v!r} ({col.dtype})"


def _check_out(path: str | os.PathLike[str], what: str, kind: str, ours: Callable[[Path], bool]) -> None:
    """Raise ``ValueError`` unless ``path`` is absent or a regular file ``ours`` recognises as
    an earlier output (``what``, e.g. "trace"; ``kind`` its description, e.g. "a decision
    trace"), which writing replaces. Any other file, a folder or a special file is the user's
    and is left alone."""
    p = Path(path)
    if not os.path.lexists(p):
        return
    if p.is_dir():
        raise ValueError(f"{path}: it is a folder, not a file; name the {what} file to write in it")
    if not (p.is_file() and not p.is_symlink() and ours(p)):
        raise ValueError(f"{path}: it exists and is not {kind}, which writing would replace; name a new file")


def _is_forest(p: Path) -> bool:
    if p.stat().st_size > 1 << 26:
        return False
    try:
        return bool(json.loads(p.read_bytes()).get("format") == FOREST_FORMAT)
    except (ValueError, AttributeError, RecursionError):
        return False


def _is_trace(p: Path) -> bool:
    import pyarrow.parquet as pq

    try:
        return set(TRACE_COLUMNS) <= set(pq.read_schema(p).names)
    except (OSError, ValueError):
        return False


def check_forest_out(path: str | os.PathLike[str]) -> None:
    """Raise ``ValueError`` unless a forest may be written to ``path``: it is absent, or a
    ``slacknet-forest/1`` file (an earlier model, which the new one replaces). Any other file,
    a folder or a special file is the user's and is left alone."""
    _check_out(path, "model", f"a {FOREST_FORMAT} model", _is_forest)


def check_trace_out(path: str | os.PathLike[str]) -> None:
    """Raise ``ValueError`` unless a decision trace may be written to ``path``: absent, or a
    Parquet file with a decision trace's columns (an earlier trace). The name must end in
    ``.parquet``: the trace is written as Parquet whatever the name says."""
    _check_out(path, "trace", "a decision trace", _is_trace)
    if Path(path).suffix.lower() != ".parquet":
        raise ValueError(f"{path}: a decision trace is written as Parquet; name the file *.parquet")


def write_trace(df: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write the decision trace ``df`` as Parquet to ``path`` (:func:`check_trace_out` first),
    through a temporary file beside it renamed into place: an interrupted write never leaves
    half a trace. Returns the path."""
    check_trace_out(path)
    return replace_atomic(path, lambda tmp: df.to_parquet(tmp, index=False))


def export_forest(report: TrainReport, path: str | os.PathLike[str]) -> Path:
    """Write the forest of ``report`` to ``path`` as ``slacknet-forest/1`` JSON (see the module
    docs) and return the path, atomically (a temporary file renamed into place). Raises
    ``ValueError`` if the forest never saw a drop, or if ``path`` is a folder or a file that is
    not such a model (:func:`check_forest_out`: the user's, never replaced)."""
    check_forest_out(path)
    clf = report.model
    classes = [int(c) for c in clf.classes_]
    if 1 not in classes:
        raise ValueError("the forest never saw a drop (class 1): it cannot predict one")
    doc = {
        "format": FOREST_FORMAT,
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
    return write_text_atomic(json.dumps(doc) + "\n", path)
