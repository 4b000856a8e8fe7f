"""Approximate analytics over the real transport: ApproxLib's framework side (NetApprox §3.3, §6).

NetApprox leaves two jobs to the framework that sits on ApproxLib: translate the user's error
bound ``e_max`` into a minimal message sampling rate (MSR) per group, and estimate the answer
and its error from the messages that arrived (§6, "Batch data-processing frameworks": "we use
well understood sampling theory [...] to estimate the error based on the mean and variance of
the received data"). This module does both for a table of numbers::

    from slacknet.approx import send_table, recv_table
    # sender: each zone a group (stratified sampling, §3.3.2); the MSRs keep the 95% interval
    # of the total fare within 2% of it
    report = send_table(tx, "10.0.0.2:7000", trips, e_max=0.02, column="fare", by="zone")
    # receiver
    sample = recv_table(rx)
    sample.total("fare")            # Estimate: value, stderr, low, high (95%), relative_error
    sample.mean("tip", where=sample.frame["fare"] > 20)
    sample.by_stratum("fare")       # one row per zone
    sample.frame, sample.weights    # the records that arrived and each one's expansion weight

How it works (the contract the receiver's estimates rest on):

- Each stratum's records are put into messages in a random order (``seed``), so whichever
  messages the network loses, those that arrive are a simple random sample of the stratum's
  messages. This matters: ATP loses messages by position, not at random (on loopback with
  random datagram loss it gave up early messages and delivered late ones), and a table sorted
  by time or by value would otherwise lose one end of it.
- One ATP job carries the table: group 0 is a manifest (the column names, the name of the
  ``by`` column, and each stratum's label, message count and record count; MSR 1, so it
  always arrives), group ``g + 1`` the messages of stratum ``g`` with that stratum's MSR.
- Estimates are the separate ratio estimator of cluster sampling (Lohr, *Sampling: Design and
  Analysis*, §4.1 and §5.2; the messages are the sampled clusters, their record counts the
  auxiliary variable whose stratum totals the manifest gives): a stratum's total of ``y`` is
  ``R_g * sum(t_i) / sum(r_i)`` over its messages that arrived (``t_i`` the message's sum of
  ``y``, ``r_i`` its records), with variance ``M_g**2 (1 - m_g/M_g) s_e**2 / m_g`` (residuals
  ``e_i = t_i - B_g r_i``; ``M_g`` messages, ``m_g`` arrived); strata add up. Means and
  domain means (``where``) are ratios of two such totals, linearized. Intervals use Student's
  t with Satterthwaite's degrees of freedom for the sum of the strata's variances (at most
  the messages arrived less one per stratum sampled, fewer when a stratum of few messages
  dominates the variance; per stratum in :meth:`Sample.by_stratum`); a domain mean's come from
  the messages that hold domain records (at most those less one per stratum that has any, Korn
  & Graubard §5.2) and its linearized variance is corrected for their few (``Sample._ratio``).
  A stratum with one message of several arrived has no variance estimate (its interval is
  infinite), nor has a domain mean whose records arrived in one message per stratum; a stratum
  with none has no estimate (NaN).
- A stratum that lost messages but shows no variation (a rare domain none of whose records
  arrived, a column constant in it) has a variance estimate of 0 that is no evidence; its
  interval is the exact hypergeometric bound on how many of its records that did not arrive
  could differ (valid because the shuffle makes the records that arrived a simple random sample
  of the stratum's), times how far each could (1 for a count; the range of the column's values
  that arrived otherwise, infinite if they show none), joined to the other strata's t interval
  by MOVER; such an interval may be asymmetric (``count(where=rare)`` of 0: ``[0, high]``).
- The MSR for ``e_max`` (``send_table(..., e_max=, column=)``) comes from the same variance
  with the sender's full data: with a common sampling fraction ``f`` the variance is
  ``(1 - f) / f * A`` with ``A = sum_g M_g S_g**2``, so ``q * sqrt(V) <= e_max * |T|`` holds
  for ``f >= A / (A + (e_max |T| / q)**2)`` (``q`` the t quantile of the messages ``f``
  delivers: raised until they agree); each stratum needs at least two messages (or all it
  has) so that its variance can be estimated. The planned error (``Plan.planned_error``) is
  computed with the counts ATP must deliver, ``ceil(MSR * M_g)``, and is at most ``e_max``.
- For jobs that repeat (streaming windows, §6), :class:`MsrController` starts at the paper's
  heuristic ``MSR = 1 - e_max`` and sets each next window's MSR from the variance of the
  window that arrived.

Every parse of received bytes is bounded and checked; a message that breaks the format is an
:class:`ApproxFormatError` naming the message and what is wrong, never another exception.
"""

from __future__ import annotations

import asyncio
import json
import math
import numbers
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from scipy.stats import hypergeom, t as student_t  # type: ignore[import-untyped]

from .net import Endpoint, Job, JobReport, _integer, _number

__all__ = ["ApproxFormatError", "Estimate", "MsrController", "Plan", "Sample", "TableReport",
           "pack", "recv_table", "recv_table_async", "send_table", "send_table_async", "unpack"]

MAGIC = b"SNAT"
VERSION = 1
_MANIFEST, _DATA = 0, 1
#: Group 0 is the manifest, so a job has at most the transport's 1,024 groups less one strata.
MAX_STRATA = 1023
MAX_COLUMNS = 256
MAX_NAME_BYTES = 255
MAX_LABEL_BYTES = 256
#: A message holds at most this many records (the transport's own bound is 2^20 packets).
MAX_RECORDS_PER_MESSAGE = 1 << 20
#: The default message's values: at most one packet of the real transport (its ATP payload,
#: 1,452-byte datagrams less a 48-byte header, less this module's 16-byte header), so that a
#: stratum has many messages (sampling units) and a lost datagram costs one message.
_TARGET_MESSAGE_BYTES = 1452 - 48 - 16
_MANIFEST_HEAD = struct.Struct("<4sBBHI")  # magic, version, kind, columns, strata
_STRATUM = struct.Struct("<QQH")           # messages, records, label length
_DATA_HEAD = struct.Struct("<4sBBHII")     # magic, version, kind, reserved, stratum, records
_NAME = struct.Struct("<H")
_EXACT_FLOAT_INT = 2**53


class ApproxFormatError(ValueError):
    """A received job that is not a well-formed table of this module (or contradicts itself)."""


# --------------------------------------------------------------------------------------------
# Estimates


@dataclass(frozen=True)
class Estimate:
    """An estimated quantity: ``value``, its standard error ``stderr`` (the design's variance
    estimate) and the interval ``[low, high]`` at ``confidence``; ``relative_error`` is the
    interval's larger half-width over ``|value|`` (the quantity ``e_max`` bounds). ``messages``
    of ``messages_total`` data messages arrived; ``exact`` when nothing was estimated (every
    message of the strata counted arrived, or the quantity is known from the manifest).

    The interval is ``value ± t * stderr`` unless a stratum that lost messages shows no
    variation (a rare domain that no record of it that arrived is in, say, or a column constant
    in it): its variance estimate is then 0 although the records that did not arrive may
    differ, so the interval adds that stratum's exact bound on how many of them could (see
    :func:`_flat_bound`) and may be asymmetric (``count(where=rare)`` of 0 is ``[0, high]`` with
    ``high > 0``); ``stderr`` stays the design's (0 for such a stratum alone) and is not the
    interval's half-width then. An interval not ``exact`` has width 0 only where so few records
    are missing that even one of them differing is less likely than the interval's tail."""

    value: float
    stderr: float
    low: float
    high: float
    confidence: float
    relative_error: float
    messages: int
    messages_total: int
    exact: bool = False

    def __str__(self) -> str:
        if self.exact:
            return f"{self.value:.6g} (exact)"
        up, down = self.high - self.value, self.value - self.low
        if up == down or math.isnan(up) or math.isnan(down):
            return f"{self.value:.6g} ± {up:.3g} ({self.confidence:.0%})"
        return f"{self.value:.6g} +{up:.3g}/-{down:.3g} ({self.confidence:.0%})"


def _confidence(confidence: Any) -> float:
    c = _real("confidence", confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence = {c!r}: must be in (0, 1), e.g. 0.95 for a 95% interval")
    return c


def _quantile(confidence: float, dof: float) -> float:
    """The two-sided quantile of Student's t with ``dof`` degrees of freedom (the normal one when
    there are none to speak of: every stratum whole, or a variance that is infinite anyway)."""
    q = (1.0 + confidence) / 2.0
    if dof >= 1:
        return float(student_t.ppf(q, dof))
    return NormalDist().inv_cdf(q)


def _dof(var: np.ndarray, m: np.ndarray, big_m: np.ndarray, held: np.ndarray | None = None) -> float:
    """Satterthwaite's effective degrees of freedom of the sum of the strata's variance estimates
    ``var`` (each with ``m_g - 1`` of its own), over the strata that were sampled (not whole):
    between the fewest of one stratum and the design's messages arrived less one per stratum.
    The design's count alone would let a stratum of two messages that dominates the variance
    borrow the degrees of freedom of a large, quiet one (a 95% interval that held the truth 60%
    of the time); Satterthwaite's gives it about its own.

    ``held``: for a domain estimate, per stratum the messages arrived that hold records of the
    domain; the degrees of freedom are then at most those messages less one per sampled stratum
    that has any (Korn & Graubard, *Analysis of Health Surveys*, 1999, §5.2: a domain's
    variance estimate is made of the PSUs that hold domain members, the others contribute only
    zeros; Stata's default for subpopulations), 0 where each such stratum has one. The design's
    count gave a domain seen in two messages of 40 arrived the quantile of 38 degrees of freedom
    instead of 1 (the small-table Monte Carlo: domain means' "95%" intervals held the truth
    77-90% of the time)."""
    part = (m < big_m) & (m >= 2)
    d, v = m[part] - 1.0, var[part]
    if not len(d):
        return 0.0
    if held is None:
        cap = math.inf
    else:
        h = held[part]
        h = h[h >= 1]
        cap = float(np.sum(h) - len(h))
    s = float(np.sum(v))
    if not math.isfinite(s) or s <= 0.0:  # no variance, or none that a quantile could widen
        return min(cap, float(np.sum(d)))
    w = v / s
    return min(cap, max(float(np.min(d)), min(float(np.sum(d)), 1.0 / float(np.sum(w * w / d)))))


def _estimate(value: float, var: float, confidence: float, z: float, m: int, big_m: int,
              known: bool = False, up: float = 0.0, down: float = 0.0, floor: float = -math.inf,
              ceil: float = math.inf) -> Estimate:
    """``known``: nothing was estimated (the strata counted arrived whole, or the manifest says).

    ``up`` and ``down``: the bounds of strata that lost messages but show no variation, how far
    above and below ``value`` the records that did not arrive could take it (:func:`_flat_bound`);
    they join the t interval of the other strata by MOVER (Zou & Donner 2008, "Construction of
    confidence limits about effect measures: a general approach", Stat. Med. 27: the limits of a
    sum of independent parts are ``value ± sqrt(sum of each part's squared distance to its
    limit)``), so a flat stratum alone gives exactly its bound and the interval is never
    narrower than ``value ± z * stderr``. ``floor`` and ``ceil``: what the quantity certainly
    lies between (a count: the domain records that arrived, and those plus every record that
    did not); the widening stops there."""
    se = math.sqrt(var) if var >= 0 and not math.isnan(value) else math.nan
    half = z * se
    low, high = value - half, value + half
    if (up > 0 or down > 0) and not math.isnan(half):
        # CORRECTNESS: only widens (max/min with the t limits); never past a certain bound.
        high = max(high, min(value + math.sqrt(half * half + up * up), ceil))
        low = min(low, max(value - math.sqrt(half * half + down * down), floor))
    wide = max(high - value, value - low)
    if math.isnan(value) or math.isnan(wide):
        rel = math.nan
    elif wide == 0.0:
        rel = 0.0
    else:
        rel = wide / abs(value) if value != 0 else math.inf
    return Estimate(value, se, low, high, confidence, rel, m, big_m, known and se == 0.0 and wide == 0.0)


def _hypergeom_upper(x: np.ndarray, n: np.ndarray, big_n: np.ndarray, alpha: float) -> np.ndarray:
    """Exact one-sided upper confidence bounds on ``K``, the records of a kind among a stratum's
    ``big_n``, from ``x`` of that kind among ``n`` drawn without replacement: the largest ``K``
    with ``P(X <= x | K) > alpha`` (the finite-population Clopper-Pearson bound; for ``x = 0``
    ``C(N - K, n) / C(N, n) > alpha``, about ``N (1 - alpha**(1/n))``, the "rule of three"'s
    ``3 N / n`` at ``alpha = 0.05``). Binary search: ``P(X <= x | K)`` falls as ``K`` grows."""
    lo = x.astype(np.int64)
    hi = (x + big_n - n).astype(np.int64)
    while np.any(lo < hi):
        mid = (lo + hi + 1) // 2
        ok = hypergeom.cdf(x, big_n, mid, n) > alpha
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid - 1)
    return lo.astype(np.float64)


def _residuals(t: np.ndarray, r: np.ndarray, stratum: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stratum of ``k``: the messages ``m``, the ratio ``B_g = sum(t_i) / sum(r_i)`` of the
    message sums ``t`` to their record counts ``r``, and the variance ``s_e**2`` of the
    residuals ``t_i - B_g r_i`` (divisor ``m - 1``; not finite where ``m < 2``)."""
    m = np.bincount(stratum, minlength=k).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        b = np.bincount(stratum, weights=t, minlength=k) / np.bincount(stratum, weights=r, minlength=k)
        e = t - b[stratum] * r
        s2 = np.bincount(stratum, weights=e * e, minlength=k) / (m - 1.0)
    return m, b, s2


def _strat_total(t: np.ndarray, r: np.ndarray, stratum: np.ndarray, big_m: np.ndarray,
                 big_r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per stratum, the separate ratio estimator of the total of ``t`` (message sums) with the
    record counts ``r`` as auxiliary (totals ``big_r``) and its variance estimate; NaN for a
    stratum with no message, infinite variance for one with a single message of several."""
    m, b, s2 = _residuals(t, r, stratum, len(big_m))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        total = big_r * b
        var = big_m * big_m * (1.0 - m / big_m) * s2 / m
    full = m == big_m
    var[full] = 0.0
    var[(m == 1) & ~full] = math.inf
    total[m == 0] = math.nan
    var[m == 0] = math.nan
    # A stratum without records (never sent) contributes exactly nothing.
    none = big_m == 0
    total[none] = 0.0
    var[none] = 0.0
    return total, var


def _flat_bound(z: np.ndarray, row_stratum: np.ndarray, t: np.ndarray, r: np.ndarray, stratum: np.ndarray,
                big_m: np.ndarray, big_r: np.ndarray, lo: float, hi: float,
                confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Per stratum, how far above (``up``) and below (``down``) its estimated total of the
    per-record values ``z`` the records that did not arrive could take it, where the stratum
    lost messages but its residual variance is 0 (every message that arrived fits the ratio
    line ``t_i = B_g r_i``: a rare domain none of whose records arrived, a column constant in the
    stratum); 0 elsewhere, where the t interval holds.

    Why: ``s_e**2 = 0`` from ``m_g`` messages is no evidence that the stratum's messages do not
    vary (a domain in 1% of the records is absent from 20 random ones 82% of the time), so the
    interval ``± t * 0`` claims a certainty the sample does not have (the audit's Monte Carlo:
    such domain counts held the truth 61-75% of the time). Because :func:`pack` shuffles each
    stratum's records into messages, the records that arrived are a simple random sample of the
    stratum's ``R_g``, whichever messages were lost; so of the records whose value is not the
    ratio's ``B_g`` (``x_g`` of the ``n_g`` that arrived, usually none), the stratum holds at most
    the exact hypergeometric bound ``K_g`` (:func:`_hypergeom_upper`, one tail of the two-sided
    ``confidence`` as Clopper-Pearson's), ``K_g - x_g`` of them among those that did not arrive,
    each differing from ``B_g`` by at most ``hi - B_g`` (above) or ``B_g - lo`` (below). ``lo``,
    ``hi``: the range a record's ``z`` can take: ``[0, 1]`` for a domain count (so the count's
    bound is exact), the range the sample shows otherwise (an assumption: a record that did not
    arrive may lie beyond it; infinite where the sample shows no range at all)."""
    k = len(big_m)
    m, b, s2 = _residuals(t, r, stratum, k)
    scale = np.zeros(k)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN or huge sums: not flat, their own estimate says so
        np.maximum.at(scale, stratum, np.abs(t))
        # A residual variance at rounding level of the message sums is none (a constant 0.1: its
        # sums are 0.1 r_i only to rounding).
        flat = (m >= 2) & (m < big_m) & (s2 <= (1e-12 * scale) ** 2)
    up, down = np.zeros(k), np.zeros(k)
    if not flat.any():
        return up, down
    n = np.bincount(stratum, weights=r, minlength=k)
    zscale = np.zeros(k)
    with np.errstate(invalid="ignore", over="ignore"):
        np.maximum.at(zscale, row_stratum, np.abs(z))
        off = np.abs(z - b[row_stratum]) > 1e-12 * np.maximum(zscale, np.abs(b))[row_stratum]
    x = np.bincount(row_stratum, weights=off, minlength=k)
    g = np.flatnonzero(flat)
    unseen = _hypergeom_upper(x[g], n[g], big_r[g], (1.0 - confidence) / 2.0) - x[g]
    with np.errstate(invalid="ignore"):
        up[g] = np.where(unseen > 0, unseen * np.maximum(hi - b[g], 0.0), 0.0)
        down[g] = np.where(unseen > 0, unseen * np.maximum(b[g] - lo, 0.0), 0.0)
    return up, down


def _range(y: np.ndarray, with_zero: bool) -> tuple[float, float]:
    """The range of the finite values ``y`` (with 0 if ``with_zero``: a record outside a domain
    contributes 0), or ``(-inf, inf)`` where they show none: nothing says how far a record
    that did not arrive could lie from them."""
    f = y[np.isfinite(y)]
    if with_zero:
        f = np.append(f, 0.0)
    if not len(f) or f.min() == f.max():
        return -math.inf, math.inf
    return float(f.min()), float(f.max())


# --------------------------------------------------------------------------------------------
# The sender: a table into messages


@dataclass(frozen=True)
class Plan:
    """A table cut into one ATP job: ``messages`` (``(group, bytes)`` pairs for
    :meth:`Endpoint.send_job`), ``msr`` per group (group 0 the manifest, MSR 1), the strata's
    ``labels`` (``[None]`` for an unstratified table), ``stratum_messages`` and ``stratum_records``,
    and, when a ``column`` was given, ``planned_error``: the relative half-width of its total's
    interval if ATP delivers exactly ``ceil(msr * messages)`` of each stratum."""

    messages: list[tuple[int, bytes]]
    msr: list[float]
    labels: list[Any]
    stratum_messages: list[int]
    stratum_records: list[int]
    planned_error: float | None


@dataclass(frozen=True)
class TableReport:
    """What :func:`send_table` sent (``plan``) and how the job ended (``job``)."""

    plan: Plan
    job: JobReport


def _real(name: str, v: Any) -> float:
    """``v`` as a finite float (``net``'s number check, and finite)."""
    x = _number(name, v)
    if not math.isfinite(x):
        raise ValueError(f"{name} = {x}: must be finite")
    return x


def _columns(table: Any) -> dict[str, np.ndarray]:
    """``table`` (a DataFrame, or a mapping of names to 1-D arrays) as named 1-D arrays."""
    if isinstance(table, pd.DataFrame):
        items = [(c, table[c].to_numpy()) for c in table.columns]
        if len(set(table.columns)) != len(table.columns):
            raise ValueError("table: two columns share a name; give each column its own")
    elif isinstance(table, Mapping):
        series = [(c, v) for c, v in table.items() if isinstance(v, pd.Series)]
        for c, v in series[1:]:
            if not v.index.equals(series[0][1].index):
                raise ValueError(f"table[{c!r:.60}]: a Series whose index is not table[{series[0][0]!r:.60}]'s, so "
                                 "their records would pair up by position, not label; give pd.DataFrame(table) "
                                 "(which aligns them) or arrays")
        items = []
        for c, v in table.items():
            try:
                items.append((c, np.asarray(v)))
            except ValueError:
                raise ValueError(f"table[{c!r:.60}]: not an array of values (rows of different lengths?); give one "
                                 "value per record") from None
    else:
        raise TypeError(f"table: {type(table).__name__}; give a pandas DataFrame or a dict of column name "
                        "to 1-D array")
    if not items:
        raise ValueError("table: no columns; give at least one column of numbers")
    out: dict[str, np.ndarray] = {}
    n = None
    for c, a in items:
        if not isinstance(c, str):
            raise TypeError(f"table: column name {c!r:.60}; column names must be text")
        if not c or len(c.encode()) > MAX_NAME_BYTES:
            raise ValueError(f"table: column name {c!r:.60}: give a name of 1 to {MAX_NAME_BYTES} bytes")
        if a.ndim != 1:
            raise ValueError(f"table[{c!r}]: {a.ndim}-dimensional; give one value per record")
        if n is not None and len(a) != n:
            raise ValueError(f"table[{c!r}]: {len(a)} values where the first column has {n}; "
                             "give every column one value per record")
        n = len(a)
        out[c] = a
    if not n:
        raise ValueError("table: no records; give at least one")
    return out


def _numbers(name: str, a: np.ndarray) -> np.ndarray:
    kind = a.dtype.kind
    if kind == "b":
        return a.astype(np.float64)
    if kind in "iu":
        if a.size and int(np.abs(a.astype(np.float64)).max()) > _EXACT_FLOAT_INT:
            raise ValueError(f"table[{name!r}]: integers beyond 2**53, which 64-bit floats do not hold "
                             "exactly; scale them or drop the column")
        return a.astype(np.float64)
    if kind == "f":
        return a.astype(np.float64)
    raise TypeError(f"table[{name!r}]: {a.dtype} values; this layer carries numbers (booleans, integers, "
                    "floats): drop the column, encode it as numbers, or name it as `by`")


def _label(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, float) and math.isnan(v):
        raise ValueError("by: a record's stratum is missing (None or NaN); give every record a value")
    if not isinstance(v, (str, int, float, bool)):
        raise TypeError(f"by: a stratum value {v!r:.60} ({type(v).__name__}); give text or numbers")
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"by: a stratum value {v}; give finite numbers")
    if len(json.dumps(v).encode()) > MAX_LABEL_BYTES:
        raise ValueError(f"by: a stratum value {v!r:.60}... longer than {MAX_LABEL_BYTES} bytes")
    return v


def _msr_values(msr: Any, labels: list[Any]) -> list[float]:
    k = len(labels)
    if isinstance(msr, np.ndarray) and msr.ndim == 0:
        msr = msr[()]
    if isinstance(msr, Mapping):
        unknown = [g for g in msr if g not in labels]
        if unknown:
            raise ValueError(f"msr: {unknown[0]!r:.60} is not a stratum; strata: {labels[:8]!r:.200}")
        missing = [g for g in labels if g not in msr]
        if missing:
            raise ValueError(f"msr: no value for stratum {missing[0]!r:.60}; give one for every stratum")
        vals = [_real(f"msr[{g!r}]", msr[g]) for g in labels]
    elif isinstance(msr, (str, bytes)) or not isinstance(msr, (numbers.Real, Sequence, np.ndarray)):
        raise TypeError(f"msr = {msr!r:.60}: give a number, one per stratum, or a dict of stratum to number")
    elif isinstance(msr, numbers.Real):
        vals = [_real("msr", msr)] * k
    else:
        if len(msr) != k:
            raise ValueError(f"msr: {len(msr)} values for {k} strata; give one per stratum (or one number)")
        vals = [_real(f"msr[{i}]", m) for i, m in enumerate(msr)]
    for i, m in enumerate(vals):
        if not 0.0 < m <= 1.0:
            raise ValueError(f"msr = {m} (stratum {labels[i]!r:.60}): must be in (0, 1]; 1 delivers every "
                             "message")
    return vals


def _needed_fraction(big_m: np.ndarray, s2: np.ndarray, total: float, e_max: float, z: float) -> float:
    """The common sampling fraction f with z * sqrt((1 - f) / f * sum_g M_g S_g^2) <= e_max |T|."""
    a = float(np.sum(big_m * s2))
    if a == 0.0 or z == 0.0:  # no variance, or a confidence so low that its interval has no width
        return 0.0
    b = (e_max * abs(total) / z) ** 2
    if b == 0.0:
        return 1.0
    return a / (a + b)


def _delivered(big_m: np.ndarray, msr: Sequence[float]) -> np.ndarray:
    """The messages ATP must deliver per stratum: ceil(MSR x M_g), at least two (or all)."""
    return np.array([min(mm, max(2, math.ceil(f * mm))) for f, mm in zip(msr, big_m)], dtype=np.float64)


def _planned_vars(big_m: np.ndarray, s2: np.ndarray, m: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        v: np.ndarray = np.nan_to_num(np.where(m >= big_m, 0.0, big_m * big_m * (1.0 - m / big_m) * s2 / m))
    return v


def _planned_half(big_m: np.ndarray, s2: np.ndarray, m: np.ndarray, confidence: float) -> tuple[float, float]:
    """The quantile and the variance of the total if ``m`` messages of each stratum arrive."""
    v = _planned_vars(big_m, s2, m)
    return _quantile(confidence, _dof(v, m, big_m)), float(np.sum(v))


def _plan_fraction(big_m: np.ndarray, s2: np.ndarray, total: float, e_max: float, confidence: float) -> float:
    """The common sampling fraction that keeps the interval of the total within ``e_max``, with
    Student's t for the degrees of freedom the fraction itself gives: raised until the quantile
    of what it delivers no longer asks for more (each step's quantile is that of fewer
    messages than the next will deliver, so the result errs on the safe side)."""
    f = 0.0
    for _ in range(64):
        q, _ = _planned_half(big_m, s2, _delivered(big_m, [f] * len(big_m)), confidence)
        g = _needed_fraction(big_m, s2, total, e_max, q)
        if g <= f:
            break
        f = g
    return min(1.0, f)


def pack(table: Any, *, e_max: float | None = None, column: str | None = None, msr: Any = None,
         by: str | None = None, confidence: float = 0.95, records_per_message: int | None = None,
         seed: int = 0) -> Plan:
    """Cut ``table`` into the messages of one ATP job (:class:`Plan`), without sending.

    ``table``: a DataFrame or a dict of 1-D arrays, its columns numbers (booleans, integers up
    to 2**53, floats) except ``by``. ``by``: the column whose values are the strata (at most
    1,023), each its own group; absent: one stratum. Give either ``e_max`` (a bound on the
    relative error of ``column``'s total at ``confidence``, in (0, 1)) or ``msr`` (one number
    in (0, 1], one per stratum in label order, or a dict of label to number); either way each
    stratum's MSR is raised to deliver at least two of its messages (all if it has fewer), so
    that every stratum has a variance estimate. ``records_per_message`` defaults to as many as
    fill one datagram of the real transport (1,388 bytes of values); ``seed`` orders the
    records into messages."""
    cols = _columns(table)
    seed = _integer("seed", seed, 0, 2**64 - 1)
    n = len(next(iter(cols.values())))
    if by is not None:
        if not isinstance(by, str) or by not in cols:
            raise ValueError(f"by = {by!r:.60}: not a column; columns: {list(cols)[:12]!r:.300}")
        keys = pd.Series(cols.pop(by))
        if keys.isna().any():
            raise ValueError(f"by = {by!r}: a record's stratum is missing (None or NaN); give every record a value")
        try:
            codes, uniques = pd.factorize(keys, sort=True)
        except TypeError:
            raise ValueError(f"by = {by!r}: values of more than one type (such as text and numbers), which do "
                             "not sort; give values of one type") from None
        if len(uniques) > MAX_STRATA:
            raise ValueError(f"by = {by!r}: {len(uniques)} distinct values; at most {MAX_STRATA} strata "
                             "(one transport group each): stratify by a coarser column")
        labels = [_label(v) for v in uniques]
        if len({json.dumps(v) for v in labels}) != len(labels):
            raise ValueError(f"by = {by!r}: two stratum values are equal once written (such as 1 and 1.0 or "
                             "True); give values of one type")
        codes = np.asarray(codes, dtype=np.int64)
    else:
        labels, codes = [None], np.zeros(n, dtype=np.int64)
    if not cols:
        raise ValueError(f"table: only the `by` column {by!r}; give at least one column of numbers")
    names = list(cols)
    values = np.column_stack([_numbers(c, cols[c]) for c in names])  # (n, c)
    c = len(names)
    if c > MAX_COLUMNS:
        raise ValueError(f"table: {c} columns; at most {MAX_COLUMNS}: send fewer")
    if records_per_message is None:
        rpm = max(1, _TARGET_MESSAGE_BYTES // (8 * c))
    else:
        rpm = _integer("records_per_message", records_per_message, 1, MAX_RECORDS_PER_MESSAGE)
    if (e_max is None) == (msr is None):
        raise ValueError("give e_max (a bound on the relative error of `column`'s total, e.g. 0.05) or msr "
                         "(the fraction of messages that must arrive), not " + ("both" if msr is not None else
                                                                                   "neither"))
    if column is not None and (not isinstance(column, str) or column not in names):
        raise ValueError(f"column = {column!r:.60}: not a column of numbers; columns: {names[:12]!r:.300}")
    if e_max is not None:
        e = _real("e_max", e_max)
        if not 0.0 < e < 1.0:
            raise ValueError(f"e_max = {e}: must be in (0, 1), a fraction of the total (0.05: within 5%)")
        if column is None:
            raise ValueError(f"e_max: give `column`, the column whose total it bounds; columns: {names[:12]!r:.300}")
    conf = _confidence(confidence)

    rng = np.random.default_rng(seed)
    k = len(labels)
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(k + 1))
    big_m = np.zeros(k, dtype=np.float64)
    big_r = np.zeros(k, dtype=np.int64)
    bodies: list[list[bytes]] = []
    parts_t: list[np.ndarray] = []  # per stratum, each message's sum of `column`
    parts_r: list[np.ndarray] = []  # per stratum, each message's records
    ci = names.index(column) if column is not None else 0
    for g in range(k):
        vg = values[rng.permutation(order[starts[g]:starts[g + 1]])]  # the stratum's rows, shuffled
        rg = len(vg)
        full, rest = divmod(rg, rpm)
        out: list[bytes] = []
        if full:
            # Every full message of the stratum at once: its header, then its values column by column.
            block = np.empty((full, _DATA_HEAD.size + 8 * c * rpm), dtype=np.uint8)
            block[:, :_DATA_HEAD.size] = np.frombuffer(_DATA_HEAD.pack(MAGIC, VERSION, _DATA, 0, g, rpm), np.uint8)
            cols_major = vg[:full * rpm].reshape(full, rpm, c).transpose(0, 2, 1)
            block[:, _DATA_HEAD.size:] = np.ascontiguousarray(cols_major, dtype="<f8").reshape(full, -1).view(np.uint8)
            buf, width = block.tobytes(), block.shape[1]
            out = [buf[j * width:(j + 1) * width] for j in range(full)]
        if rest:
            tail = np.ascontiguousarray(vg[full * rpm:].T, dtype="<f8").tobytes()
            out.append(_DATA_HEAD.pack(MAGIC, VERSION, _DATA, 0, g, rest) + tail)
        bodies.append(out)
        big_m[g], big_r[g] = len(out), rg
        if column is not None:
            at = np.arange(0, rg, rpm)
            with np.errstate(invalid="ignore", over="ignore"):
                parts_t.append(np.add.reduceat(vg[:, ci], at))
            parts_r.append(np.minimum(rpm, rg - at).astype(np.float64))

    planned: float | None = None
    s2 = np.zeros(k)
    total = 0.0
    if column is not None:
        t, r = np.concatenate(parts_t), np.concatenate(parts_r)
        _, _, s2 = _residuals(t, r, np.repeat(np.arange(k), big_m.astype(np.int64)), k)
        s2 = np.where(big_m > 1, s2, 0.0)
        total = float(t.sum())
        if not math.isfinite(total) or not np.isfinite(s2).all():
            raise ValueError(f"column = {column!r}: holds NaN or infinite values (or sums beyond floats); "
                             "clean them first")
    if e_max is not None:
        if total == 0.0:
            raise ValueError(f"column = {column!r}: sums to 0, so an error relative to its total means "
                             "nothing; give msr instead")
        msrs = [_plan_fraction(big_m, s2, total, float(e_max), conf)] * k
    else:
        msrs = _msr_values(msr, labels)
    # At least two messages of each stratum (or all it has), so that each has a variance estimate.
    msrs = [float(min(1.0, max(f, 2.0 / mm))) for f, mm in zip(msrs, big_m)]
    msrs = [1.0 if math.ceil(f * mm) >= mm else f for f, mm in zip(msrs, big_m)]  # all of it: say so
    if column is not None:
        m = _delivered(big_m, msrs)
        q, v = _planned_half(big_m, s2, m, conf)
        half = q * math.sqrt(v)
        planned = half / abs(total) if total != 0 else math.nan

    head = bytearray(_MANIFEST_HEAD.pack(MAGIC, VERSION, _MANIFEST, c, k))
    for name in names:
        nb = name.encode()
        head += _NAME.pack(len(nb)) + nb
    bb = (by or "").encode()
    head += _NAME.pack(len(bb)) + bb
    for g in range(k):
        lb = json.dumps(labels[g]).encode()
        head += _STRATUM.pack(int(big_m[g]), int(big_r[g]), len(lb)) + lb
    messages: list[tuple[int, bytes]] = [(0, bytes(head))]
    for g, out in enumerate(bodies):
        messages.extend((g + 1, body) for body in out)
    return Plan(messages, [1.0] + msrs, labels if by is not None else [None],
                [int(x) for x in big_m], [int(x) for x in big_r], planned)


def send_table(endpoint: Endpoint, peer: str, table: Any, *, deadline: float = 30.0, **plan: Any) -> TableReport:
    """:func:`pack` ``table`` (same keywords) and send it to ``peer`` as one ATP job; returns once
    every stratum has the messages its MSR asks for. Errors as :meth:`Endpoint.send_job`'s."""
    if not isinstance(endpoint, Endpoint):
        raise TypeError(f"endpoint: {type(endpoint).__name__}; give a slacknet.net.Endpoint")
    p = pack(table, **plan)
    return TableReport(p, endpoint.send_job(peer, p.messages, msr=p.msr, deadline=deadline))


async def send_table_async(endpoint: Endpoint, peer: str, table: Any, *, deadline: float = 30.0,
                           **plan: Any) -> TableReport:
    """:func:`send_table`, awaitable (same arguments, result and errors). Cancelled, the job
    stops: nothing more is sent for it."""
    if not isinstance(endpoint, Endpoint):
        raise TypeError(f"endpoint: {type(endpoint).__name__}; give a slacknet.net.Endpoint")
    loop = asyncio.get_running_loop()
    # Packing is the CPU's work (off the event loop); the send is awaited as the endpoint's.
    p = await loop.run_in_executor(None, lambda: pack(table, **plan))
    return TableReport(p, await endpoint.send_job_async(peer, p.messages, msr=p.msr, deadline=deadline))


# --------------------------------------------------------------------------------------------
# The receiver: messages into a sample


def _fail(what: str) -> ApproxFormatError:
    return ApproxFormatError(f"received table: {what}")


def _parse_manifest(data: bytes) -> tuple[list[str], str, list[Any], np.ndarray, np.ndarray]:
    if len(data) < _MANIFEST_HEAD.size:
        raise _fail(f"the manifest (message 0) is {len(data)} bytes, shorter than its header")
    magic, version, kind, c, k = _MANIFEST_HEAD.unpack_from(data)
    if magic != MAGIC or kind != _MANIFEST:
        raise _fail("message 0 is not a manifest of slacknet.approx (was the job sent with send_table?)")
    if version != VERSION:
        raise _fail(f"the manifest is version {version}; this slacknet reads version {VERSION}")
    if not 1 <= c <= MAX_COLUMNS or not 1 <= k <= MAX_STRATA:
        raise _fail(f"the manifest names {c} columns and {k} strata (1-{MAX_COLUMNS} and 1-{MAX_STRATA})")
    at = _MANIFEST_HEAD.size
    names: list[str] = []
    for i in range(c):
        if at + _NAME.size > len(data):
            raise _fail(f"the manifest ends inside column {i}'s name")
        (ln,) = _NAME.unpack_from(data, at)
        at += _NAME.size
        if not 1 <= ln <= MAX_NAME_BYTES or at + ln > len(data):
            raise _fail(f"the manifest's column {i} has a name of {ln} bytes (1-{MAX_NAME_BYTES}, within the message)")
        try:
            names.append(data[at:at + ln].decode())
        except UnicodeDecodeError:
            raise _fail(f"the manifest's column {i} name is not UTF-8") from None
        at += ln
    if at + _NAME.size > len(data):
        raise _fail("the manifest ends before the name of its strata's column")
    (ln,) = _NAME.unpack_from(data, at)
    at += _NAME.size
    if ln > MAX_NAME_BYTES or at + ln > len(data):
        raise _fail(f"the manifest's strata column has a name of {ln} bytes (0-{MAX_NAME_BYTES}, within the message)")
    try:
        by = data[at:at + ln].decode()
    except UnicodeDecodeError:
        raise _fail("the manifest's strata column name is not UTF-8") from None
    at += ln
    if len(set(names)) != c or by in names:
        raise _fail("the manifest names a column twice")
    labels: list[Any] = []
    big_m = np.zeros(k, dtype=np.float64)
    big_r = np.zeros(k, dtype=np.float64)
    for g in range(k):
        if at + _STRATUM.size > len(data):
            raise _fail(f"the manifest ends inside stratum {g}")
        mg, rg, ln = _STRATUM.unpack_from(data, at)
        at += _STRATUM.size
        if not 1 <= ln <= MAX_LABEL_BYTES or at + ln > len(data):
            raise _fail(f"the manifest's stratum {g} has a label of {ln} bytes (1-{MAX_LABEL_BYTES}, within the message)")
        try:
            label = json.loads(data[at:at + ln].decode())
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise _fail(f"the manifest's stratum {g} label is not JSON") from None
        if label is not None and not isinstance(label, (str, int, float, bool)):
            raise _fail(f"the manifest's stratum {g} label is a {type(label).__name__}, not text or a number")
        at += ln
        if not 1 <= mg <= rg or rg > mg * MAX_RECORDS_PER_MESSAGE or mg > 2**24:
            raise _fail(f"the manifest's stratum {g} has {mg} messages for {rg} records")
        labels.append(label)
        big_m[g], big_r[g] = mg, rg
    if at != len(data):
        raise _fail(f"the manifest has {len(data) - at} bytes after its last stratum")
    if (by == "") != (labels == [None]):
        raise _fail("the manifest's strata and their column do not match (labels without a column, or the reverse)")
    if by:
        # What pack writes: labels of text or finite numbers, no two equal (1, 1.0 and true are).
        for g, label in enumerate(labels):
            if label is None or isinstance(label, float) and not math.isfinite(label):
                raise _fail(f"the manifest's stratum {g} label is {label!r}, not text or a finite number")
        if len(set(labels)) != k:
            raise _fail("the manifest labels two strata alike (such as 1, 1.0 or true)")
    return names, by, labels, big_m, big_r


def unpack(job: Job) -> Sample:
    """The :class:`Sample` a received job (:meth:`Endpoint.recv_job`) holds. Raises
    :class:`ApproxFormatError` if it is not a table that :func:`pack` made, or contradicts itself
    (which a sender that is not this module's, or a hostile one, could send)."""
    if not isinstance(job, Job):
        raise TypeError(f"job: {type(job).__name__}; give a slacknet.net.Job (from Endpoint.recv_job)")
    if not isinstance(job.messages, dict):
        raise TypeError(f"job.messages: {type(job.messages).__name__}; give a dict of message id to (group, bytes), "
                        "as Endpoint.recv_job does")
    for i, v in job.messages.items():
        if (isinstance(i, bool) or not isinstance(i, int) or not isinstance(v, tuple) or len(v) != 2
                or isinstance(v[0], bool) or not isinstance(v[0], int) or not isinstance(v[1], (bytes, bytearray))):
            raise TypeError(f"job.messages[{i!r:.60}] = {v!r:.60}: give message ids (int) to (group (int), bytes) "
                            "pairs, as Endpoint.recv_job does")
    first = job.messages.get(0)
    if first is None or first[0] != 0:
        raise _fail("message 0, the manifest, did not arrive in group 0 (the job ended before it could, or "
                    "was not sent with send_table)")
    names, by, labels, big_m, big_r = _parse_manifest(first[1])
    c, k = len(names), len(labels)
    if job.total is not None and job.total != 1 + int(big_m.sum()):
        raise _fail(f"the job has {job.total} messages, its manifest {1 + int(big_m.sum())}")
    # The messages of stratum g are the job's ids first[g] to first[g + 1] - 1 (pack's order).
    first_id = 1 + np.concatenate(([0], np.cumsum(big_m))).astype(np.int64)
    ids = sorted(i for i in job.messages if i != 0)
    strata = np.empty(len(ids), dtype=np.int64)
    counts = np.empty(len(ids), dtype=np.int64)
    blocks: list[np.ndarray] = []
    for j, i in enumerate(ids):
        group, data = job.messages[i]
        if len(data) < _DATA_HEAD.size:
            raise _fail(f"message {i} is {len(data)} bytes, shorter than its header")
        magic, version, kind, reserved, g, r = _DATA_HEAD.unpack_from(data)
        if magic != MAGIC or version != VERSION or kind != _DATA or reserved != 0:
            raise _fail(f"message {i} is not a data message of version {VERSION}")
        if g >= k or group != g + 1 or not first_id[g] <= i < first_id[g + 1]:
            raise _fail(f"message {i} is of stratum {g} in group {group}; the manifest has {k} strata, "
                        "stratum g in group g + 1 with message ids "
                        + (f"{first_id[g]} to {first_id[g + 1] - 1}" if g < k else "after the manifest's"))
        if not 1 <= r <= MAX_RECORDS_PER_MESSAGE or len(data) != _DATA_HEAD.size + 8 * c * r:
            raise _fail(f"message {i} holds {len(data) - _DATA_HEAD.size} bytes of values for {r} records of "
                        f"{c} columns")
        strata[j], counts[j] = g, r
        blocks.append(np.frombuffer(data, dtype="<f8", offset=_DATA_HEAD.size).reshape(c, r))
    got_m = np.bincount(strata, minlength=k)
    got_r = np.bincount(strata, weights=counts, minlength=k)
    # pack cuts every stratum into messages of the same size (the job's records per message),
    # the last one shorter or not; so no message holds more, at most one per stratum holds fewer
    # than the largest that arrived, and once a stratum's two messages arrived the size is known.
    r_max = int(counts.max()) if len(counts) else 0
    short = np.bincount(strata, weights=counts < r_max, minlength=k)
    size_known = bool((got_m >= 2).any())
    for g in range(k):
        if (got_m[g] > big_m[g] or got_r[g] + (big_m[g] - got_m[g]) > big_r[g]
                or (got_m[g] == big_m[g] and got_r[g] != big_r[g])):
            raise _fail(f"stratum {g} arrived as {got_m[g]} messages of {int(got_r[g])} records; its manifest "
                        f"says {int(big_m[g])} of {int(big_r[g])}")
        if short[g] > 1 or (big_m[g] - 1) * r_max >= big_r[g] or size_known and big_r[g] > big_m[g] * r_max:
            raise _fail(f"stratum {g}: its manifest's {int(big_m[g])} messages of {int(big_r[g])} records do not "
                        f"fit the messages that arrived (of {r_max} records at most, every stratum's messages but "
                        "its last as large)")
    values = np.concatenate(blocks, axis=1) if blocks else np.zeros((c, 0))
    frame = pd.DataFrame({name: values[i].astype(np.float64) for i, name in enumerate(names)})
    return Sample(frame, names, by or None, labels, strata, counts, big_m, big_r, job)


class Sample:
    """The records of a table that arrived, and estimates of the whole table from them.

    ``frame``: the records that arrived (one row each, in the order of their messages; with the
    ``by`` column when the table was stratified). ``weights``: each record's expansion weight
    (its stratum's records over those that arrived), so ``(frame[c] * weights).sum()`` is
    :meth:`total`'s value. ``strata``: a DataFrame of each stratum's messages and records, sent
    and arrived. ``complete``: every message arrived. ``lost``: the lost message ids as the
    sender reported them (None if its end-of-job notice did not arrive)."""

    def __init__(self, frame: pd.DataFrame, names: list[str], by: str | None, labels: list[Any], strata: np.ndarray,
                 counts: np.ndarray, big_m: np.ndarray, big_r: np.ndarray, job: Job) -> None:
        self._names, self._labels = names, labels
        self._msg_stratum, self._msg_records = strata, counts
        self._big_m, self._big_r = big_m, big_r
        self._row_msg = np.repeat(np.arange(len(counts)), counts)
        self._row_stratum = strata[self._row_msg] if len(counts) else np.zeros(0, dtype=np.int64)
        #: The column the table was stratified by (its values are the strata), or None.
        self.by = by
        if by is not None:
            table = np.empty(len(labels), dtype=object)
            table[:] = labels
            frame[by] = pd.Series(table[self._row_stratum], dtype=object)
        self.frame = frame
        got_m = np.bincount(strata, minlength=len(labels))
        got_r = np.bincount(strata, weights=counts, minlength=len(labels))
        self._got_m = got_m.astype(np.float64)  # messages arrived, per stratum
        self._got_r = got_r.astype(np.float64)  # records arrived, per stratum
        self.strata = pd.DataFrame({"messages": big_m.astype(np.int64), "messages_arrived": got_m,
                                    "records": big_r.astype(np.int64), "records_arrived": got_r.astype(np.int64)},
                                   index=pd.Index(labels, name=by or "stratum"))
        self.complete = bool((got_m == big_m).all())
        self.lost = job.lost
        self.peer = job.peer
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            w = big_r / got_r
        self.weights = pd.Series(w[self._row_stratum], index=frame.index, name="weight")

    def __repr__(self) -> str:
        arrived = int(self.strata["records_arrived"].sum())
        return (f"<Sample {arrived:,} of {int(self._big_r.sum()):,} records ({len(self._msg_records):,} of "
                f"{int(self._big_m.sum()):,} messages) in {len(self._labels)} strata, columns {self._names!r:.200}>")

    # -- what the estimators are made of

    def _values(self, column: str, where: Any) -> np.ndarray:
        if not isinstance(column, str) or column not in self._names:
            raise ValueError(f"column = {column!r:.60}: not a column of the table; columns: {self._names[:12]!r:.300}")
        y = self.frame[column].to_numpy(dtype=np.float64)
        # A record outside `where` adds nothing, even a NaN or an infinity (NaN * 0 would be NaN).
        out: np.ndarray = np.where(self._mask(where) != 0, y, 0.0)
        return out

    def _mask(self, where: Any) -> np.ndarray:
        n = len(self.frame)
        if where is None:
            return np.ones(n)
        if callable(where):
            where = where(self.frame)
        if isinstance(where, pd.Series) and not where.index.equals(self.frame.index):
            # A Series says which record each value is for: take it by its index, not its order.
            idx = where.index
            if len(idx) != n or not idx.is_unique or not idx.isin(self.frame.index).all():
                raise ValueError(f"where: a Series whose index ({len(idx)} labels, {list(idx[:3])!r:.60}...) is not "
                                 f"the sample's (sample.frame.index, {n} records); build it from sample.frame")
            where = where.reindex(self.frame.index)
        m = np.asarray(where)
        if m.dtype != bool or m.shape != (n,):
            raise ValueError(f"where: {m.dtype} values of shape {m.shape}; give a boolean mask over the sample's "
                             f"{n} records (e.g. sample.frame['x'] > 1) or a function of the frame that returns one")
        return m.astype(np.float64)

    def _msg_sums(self, per_row: np.ndarray) -> np.ndarray:
        return np.bincount(self._row_msg, weights=per_row, minlength=len(self._msg_records))

    def _total_parts(self, per_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _strat_total(self._msg_sums(per_row), self._msg_records.astype(np.float64), self._msg_stratum,
                            self._big_m, self._big_r)

    def _flat(self, per_row: np.ndarray, lo: float, hi: float, confidence: float) -> tuple[np.ndarray, np.ndarray]:
        """Per stratum, :func:`_flat_bound` of the per-record values ``per_row`` in ``[lo, hi]``."""
        return _flat_bound(per_row, self._row_stratum, self._msg_sums(per_row), self._msg_records.astype(np.float64),
                           self._msg_stratum, self._big_m, self._big_r, lo, hi, confidence)

    def _count_bounds(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per stratum, what a domain count certainly lies between: the domain's records that
        arrived, and those plus every record that did not."""
        seen = np.bincount(self._row_stratum, weights=mask, minlength=len(self._labels))
        return seen, seen + (self._big_r - self._got_r)

    def _counts(self) -> tuple[int, int]:
        return len(self._msg_records), int(self._big_m.sum())

    def _whole(self, stratum: int | None = None) -> bool:
        """Every message of the strata counted (all, or ``stratum``) arrived."""
        sel = slice(None) if stratum is None else slice(stratum, stratum + 1)
        return bool((self._got_m[sel] == self._big_m[sel]).all())

    def _z(self, c: float, var: np.ndarray, stratum: int | None = None, held: np.ndarray | None = None) -> float:
        """The quantile of an interval whose strata's variance estimates are ``var`` (of a domain
        estimate whose records the messages ``held`` per stratum hold: see :func:`_dof`)."""
        sel = slice(None) if stratum is None else slice(stratum, stratum + 1)
        dof = _dof(var[sel], self._got_m[sel], self._big_m[sel], None if held is None else held[sel])
        if held is not None and dof < 1 and float(np.sum(var[sel])) > 0:
            return math.inf  # a variance estimate with no degrees of freedom: it bounds nothing
        return _quantile(c, dof)

    # -- estimates

    def total(self, column: str, *, where: Any = None, confidence: float = 0.95) -> Estimate:
        """The table's total of ``column`` (over the records ``where`` holds). A stratum that lost
        messages and shows no variation widens the interval by its bound (:func:`_flat_bound`)."""
        c = _confidence(confidence)
        per_row = self._values(column, where)
        tot, var = self._total_parts(per_row)
        up, down = self._flat(per_row, *_range(self.frame[column].to_numpy(dtype=np.float64), where is not None), c)
        return _estimate(float(tot.sum()), float(var.sum()), c, self._z(c, var), *self._counts(), self._whole(),
                         float(np.hypot.reduce(up)), float(np.hypot.reduce(down)))

    def count(self, *, where: Any = None, confidence: float = 0.95) -> Estimate:
        """How many of the table's records ``where`` holds for (exact without ``where``). A stratum
        that lost messages and none (or all) of whose records that arrived are in the domain adds
        its exact bound to the interval, never beyond what the count certainly lies between."""
        c = _confidence(confidence)
        if where is None:
            return _estimate(float(self._big_r.sum()), 0.0, c, _quantile(c, 0.0), *self._counts(), True)
        mask = self._mask(where)
        tot, var = self._total_parts(mask)
        up, down = self._flat(mask, 0.0, 1.0, c)
        floor, ceil = self._count_bounds(mask)
        return _estimate(float(tot.sum()), float(var.sum()), c, self._z(c, var), *self._counts(), self._whole(),
                         float(np.hypot.reduce(up)), float(np.hypot.reduce(down)), float(floor.sum()),
                         float(ceil.sum()))

    def mean(self, column: str, *, where: Any = None, confidence: float = 0.95) -> Estimate:
        """The mean of ``column`` over the table's records (those ``where`` holds for): the ratio of
        two estimated totals, its variance linearized (Lohr §4.1); a stratum that lost messages
        and shows no variation widens the interval by its bound (:func:`_flat_bound`). A domain
        none of whose records arrived has a NaN mean: unknown, in ``(-inf, inf)``, if messages
        were lost; exact (the domain is empty) if none was."""
        c = _confidence(confidence)
        y = self._values(column, where)
        x = self._mask(where)
        return self._ratio(y, x, c, None, self._span(column))

    def _span(self, column: str) -> tuple[float, float]:
        """The range of ``column``'s values that arrived (:func:`_range`)."""
        return _range(self.frame[column].to_numpy(dtype=np.float64), False)

    def _ratio(self, y: np.ndarray, x: np.ndarray, confidence: float, stratum: int | None,
               span: tuple[float, float]) -> Estimate:
        """The ratio of the totals of ``y`` and ``x`` (a domain mean), of ``stratum`` or all;
        ``span``: the range of the column's values (for strata that show no variation)."""
        ty, _ = self._total_parts(y)
        tx, _ = self._total_parts(x)
        sel = slice(None) if stratum is None else slice(stratum, stratum + 1)
        num, den = float(ty[sel].sum()), float(tx[sel].sum())
        if den == 0:
            # No record of the domain arrived. If every message counted here did, the domain is
            # empty: its mean does not exist (NaN, as pandas' mean of nothing) and nothing was
            # estimated. Otherwise the records that did not arrive may hold it, with any value:
            # the mean is unknown and its interval the whole line (it was NaN, which no
            # comparison with a truth holds for, as though the interval had missed).
            m, big_m = self._counts()
            if self._whole(stratum):
                return Estimate(math.nan, math.nan, math.nan, math.nan, confidence, math.nan, m, big_m, True)
            return Estimate(math.nan, math.inf, -math.inf, math.inf, confidence, math.inf, m, big_m)
        q = num / den
        if math.isnan(q):
            return _estimate(math.nan, math.nan, confidence, math.nan, *self._counts())
        lin = np.where(x != 0, y - q * x, 0.0)
        _, var = self._total_parts(lin)
        # A flat stratum's records that did not arrive could hold the domain (or leave it), each
        # adding between lo - q and hi - q to the linearized numerator (0: outside the domain).
        lo, hi = span[0] - q, span[1] - q
        if np.any(x == 0):
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        up, down = self._flat(lin, lo, hi, confidence)
        # The linearized variance comes from the messages of sampled strata that hold records of
        # the domain; if one message holds all of them (and no whole stratum any), its residual
        # is 0 by construction, not by evidence: one cluster says nothing of the spread.
        whole = (self._got_m == self._big_m)[self._msg_stratum]
        ours = np.ones(len(whole), dtype=bool) if stratum is None else self._msg_stratum == stratum
        held = (self._msg_sums(x) != 0) & ours
        if np.sum(held & ~whole) == 1 and not np.any(held & whole):
            var = np.full_like(var, math.inf)
        # Small-sample correction of the linearized variance of a domain mean: the ratio's
        # linearization divides the squared residuals of the stratum's m_g messages by m_g - 1,
        # but only the h_g that hold domain records vary about the domain mean, so it is biased
        # low by about (h_g - 1) / h_g (Lohr §4.3: for a simple random sample the linearized
        # variance of a domain mean is the unbiased (1 - f) s_d^2 / n_d times
        # (n_d - 1) / n_d * n / (n - 1)); scaled by h_g / (h_g - 1) * (m_g - 1) / m_g, which for
        # one-record messages in one stratum is exactly that unbiased variance, and 1 where every
        # message holds the domain (a plain mean) or one does (no estimate to correct: see _dof).
        h = np.bincount(self._msg_stratum, weights=held, minlength=len(self._labels))
        with np.errstate(divide="ignore", invalid="ignore"):
            fix = np.where(h >= 2, h / (h - 1.0) * (self._got_m - 1.0) / self._got_m, 1.0)
        var = var * fix
        z = self._z(confidence, var, stratum, h)
        return _estimate(q, float(var[sel].sum()) / (den * den), confidence, z, *self._counts(), self._whole(stratum),
                         float(np.hypot.reduce(up[sel])) / abs(den), float(np.hypot.reduce(down[sel])) / abs(den))

    def by_stratum(self, column: str | None = None, *, agg: str = "total", where: Any = None,
                   confidence: float = 0.95) -> pd.DataFrame:
        """One row per stratum: ``agg`` ("total", "mean" or "count"; count needs no ``column``)
        with its ``stderr``, ``low``, ``high`` and ``relative_error``, and the stratum's
        messages and those that arrived."""
        c = _confidence(confidence)
        if agg not in ("total", "mean", "count"):
            raise ValueError(f"agg = {agg!r:.60}: give 'total', 'mean' or 'count'")
        if agg != "count" and column is None:
            raise ValueError(f"by_stratum(agg={agg!r}) needs a column; columns: {self._names[:12]!r:.300}")
        rows = []
        k = len(self._labels)
        if agg == "mean":
            y, x = self._values(column, where), self._mask(where)  # type: ignore[arg-type]
            span = self._span(column)  # type: ignore[arg-type]
            ests = [self._ratio(y, x, c, g, span) for g in range(k)]
        else:
            per_row = self._mask(where) if agg == "count" else self._values(column, where)  # type: ignore[arg-type]
            up = down = np.zeros(k)
            floor, ceil = np.full(k, -math.inf), np.full(k, math.inf)
            if agg == "count" and where is None:
                tot, var = self._big_r.astype(np.float64), np.zeros(k)  # known from the manifest
            else:
                tot, var = self._total_parts(per_row)
                if agg == "count":
                    up, down = self._flat(per_row, 0.0, 1.0, c)
                    floor, ceil = self._count_bounds(per_row)
                else:
                    span = _range(self.frame[column].to_numpy(dtype=np.float64), where is not None)
                    up, down = self._flat(per_row, *span, c)
            ests = [_estimate(float(tot[g]), float(var[g]), c, self._z(c, var, g), *self._counts(), False,
                              float(up[g]), float(down[g]), float(floor[g]), float(ceil[g])) for g in range(k)]
        for g, e in enumerate(ests):
            rows.append({"estimate": e.value, "stderr": e.stderr, "low": e.low, "high": e.high,
                         "relative_error": e.relative_error, "messages": int(self._big_m[g]),
                         "messages_arrived": int(self._got_m[g])})
        return pd.DataFrame(rows, index=self.strata.index)

    def variance_components(self, column: str) -> tuple[np.ndarray, float]:
        """Per stratum, the estimated variance ``S_g**2`` of ``column``'s message sums about the
        stratum's ratio line (what the MSR for an error bound depends on), and the estimated
        total: what :class:`MsrController` plans the next window's MSR from."""
        y = self._values(column, None)
        m, _, s2 = _residuals(self._msg_sums(y), self._msg_records.astype(np.float64), self._msg_stratum,
                              len(self._labels))
        tot, _ = self._total_parts(y)
        return np.where(m > 1, s2, math.nan), float(tot.sum())


def recv_table(endpoint: Endpoint, timeout: float | None = None) -> Sample | None:
    """The next table a peer sends (:func:`send_table`), as a :class:`Sample` (None if nothing
    arrives within ``timeout`` seconds of the previous message; None: wait forever)."""
    if not isinstance(endpoint, Endpoint):
        raise TypeError(f"endpoint: {type(endpoint).__name__}; give a slacknet.net.Endpoint")
    job = endpoint.recv_job(timeout)
    return None if job is None else unpack(job)


async def recv_table_async(endpoint: Endpoint, timeout: float | None = None) -> Sample | None:
    """:func:`recv_table`, awaitable (same arguments and result). Cancelled, it loses
    nothing: the table it was receiving goes to the next receive call
    (:meth:`~slacknet.net.Endpoint.recv_job_async`'s rule)."""
    if not isinstance(endpoint, Endpoint):
        raise TypeError(f"endpoint: {type(endpoint).__name__}; give a slacknet.net.Endpoint")
    job = await endpoint.recv_job_async(timeout)
    return None if job is None else unpack(job)


# --------------------------------------------------------------------------------------------
# Jobs that repeat


class MsrController:
    """The MSR for each next window of a repeating job (§6: start from a heuristic, then "use
    well understood sampling theory [...] to estimate the error based on the mean and variance
    of the received data [and] adjust MSR to make the error closer to e_max").

    ``msr`` starts at ``initial`` (default the paper's heuristic ``1 - e_max``: 0.9 for 10%).
    :meth:`update` takes the window that arrived and sets ``msr`` to the common sampling
    fraction at which a window like it would meet ``e_max`` at ``confidence`` (the same formula
    as :func:`pack`'s), at least ``lowest``. Pass ``msr=controller.msr`` to the next
    :func:`send_table`."""

    def __init__(self, e_max: float, column: str, *, confidence: float = 0.95, initial: float | None = None,
                 lowest: float = 0.01) -> None:
        self.e_max = _real("e_max", e_max)
        if not 0.0 < self.e_max < 1.0:
            raise ValueError(f"e_max = {self.e_max}: must be in (0, 1), a fraction of the total")
        if not isinstance(column, str):
            raise TypeError(f"column = {column!r:.60}: give the name of the column whose total e_max bounds")
        self.column = column
        self.confidence = _confidence(confidence)
        self.lowest = _real("lowest", lowest)
        if not 0.0 < self.lowest <= 1.0:
            raise ValueError(f"lowest = {self.lowest}: must be in (0, 1]")
        start = 1.0 - self.e_max if initial is None else _real("initial", initial)
        if not 0.0 < start <= 1.0:
            raise ValueError(f"initial = {start}: must be in (0, 1]")
        self.msr = max(self.lowest, start)

    def update(self, sample: Sample) -> float:
        """Set and return the next window's MSR from ``sample``, the window that arrived. A window
        whose variance cannot be estimated (a stratum with fewer than two messages arrived)
        leaves the MSR at 1, which will give it one."""
        if not isinstance(sample, Sample):
            raise TypeError(f"sample: {type(sample).__name__}; give the Sample of the last window")
        s2, total = sample.variance_components(self.column)
        big_m = sample._big_m
        if np.isnan(s2[big_m > 1]).any() or not math.isfinite(total):
            self.msr = 1.0
        elif total == 0.0:
            raise ValueError(f"column {self.column!r} totals 0 in this window, so an error relative to it means "
                             "nothing; set msr yourself")
        else:
            f = _plan_fraction(big_m, np.nan_to_num(s2), total, self.e_max, self.confidence)
            self.msr = min(1.0, max(self.lowest, f))
        return self.msr
