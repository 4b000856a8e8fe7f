"""Run one scenario: validate once with Rust, drive ``_native.Simulation`` in chunks, collect results.

A scenario is parsed and validated exactly once per run, by Rust, which reads every file input
then and hands back an opaque :class:`~slacknet._native.ValidScenario`; the simulation is
built from that without validating or reading anything again.

The event loop runs in Rust with the interpreter released; Python only wakes between chunks
of events to take the records of the flows that ended (so that the simulator frees their
state: its memory follows the flows in flight, not every flow ever started), update the
optional progress bar and let Ctrl-C through.
"""

from __future__ import annotations

import numbers
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pydantic

from . import _native
from ._native import SpecError
from .config import Scenario, _check_toml_syntax, _read_text, is_seed, spec_error
from .results import Results

__all__ = ["run", "validate", "trace_flow", "DEFAULT_CHUNK_EVENTS"]

#: Events per call into Rust. Large enough that the Python side costs nothing measurable,
#: small enough that the progress bar and Ctrl-C respond within a fraction of a second.
DEFAULT_CHUNK_EVENTS = 200_000

ScenarioLike = Scenario | _native.ValidScenario | dict[str, Any] | str | os.PathLike[str] | None


def _check_chunk_events(chunk_events: int) -> None:
    """``TypeError``/``ValueError`` unless ``chunk_events`` is an integer from 1 to 2^64 - 1."""
    # Checked first: 1.5 ran as 1, "7" as 7 and True as 1; 2^64 failed after the network was
    # built with the native call's bare OverflowError, infinity and NaN with int()'s.
    if isinstance(chunk_events, bool) or not isinstance(chunk_events, numbers.Integral):
        raise TypeError(f"chunk_events = {chunk_events!r}: give an integer, e.g. {DEFAULT_CHUNK_EVENTS}")
    if chunk_events >= 2**64:
        raise ValueError(f"chunk_events = {chunk_events}: must be at most 2^64 - 1, e.g. {DEFAULT_CHUNK_EVENTS}")
    if chunk_events < 1:  # it ran as 1, one event per call into Rust, without saying so
        raise ValueError(f"chunk_events = {chunk_events}: must be at least 1 (events per call into Rust), e.g. "
                         f"{DEFAULT_CHUNK_EVENTS}")


def _with_seed(valid: _native.ValidScenario, seed: Any) -> _native.ValidScenario:
    """``valid`` with its seed overridden by ``seed`` (``None``: as it is), a ``SpecError``
    naming ``seed`` unless it is an integer in [0, 2^64 - 1]."""
    if seed is None:
        return valid
    # The native call would raise a bare OverflowError for these.
    if not is_seed(seed):
        raise spec_error("seed", repr(seed), "must be an integer in [0, 2^64 - 1], e.g. seed=2")
    return valid.with_seed(int(seed))


def run(
    scenario: ScenarioLike = None,
    *,
    seed: int | None = None,
    progress: bool = False,
    out_dir: str | os.PathLike[str] | None = None,
    chunk_events: int = DEFAULT_CHUNK_EVENTS,
) -> Results:
    """Run one simulation and return its :class:`~slacknet.Results`.

    ``scenario`` is a :class:`~slacknet.Scenario`, a dict of its tables, a path to a TOML (or
    ``.json``) scenario file, a scenario validated before (:func:`validate`), or ``None`` for
    the built-in default; it is validated once, by Rust. ``seed`` overrides the scenario's seed
    (an integer in [0, 2^64 - 1]).
    ``progress`` shows a progress bar on stderr. ``out_dir``, if given, saves the results there
    (:meth:`~slacknet.Results.save`). ``chunk_events`` is how many events Rust runs between
    returns to Python, an integer from 1 to 2^64 - 1 (default :data:`DEFAULT_CHUNK_EVENTS`).

    Raises :class:`~slacknet.SpecError` if the scenario or ``seed`` is invalid,
    :class:`~slacknet.SimError` if it cannot be run, what :func:`validate` raises for a
    scenario it cannot read, :class:`~slacknet.ResultsError` if ``out_dir`` is a folder
    the results may not replace, and ``TypeError`` or ``ValueError`` for a ``chunk_events`` that
    is not an integer from 1 to 2^64 - 1 (before anything is read).
    """
    _check_chunk_events(chunk_events)
    valid = _with_seed(validate(scenario), seed)
    sim = _native.Simulation(valid)
    chunk = int(chunk_events)
    taken = _TakenRecords()
    t0 = time.perf_counter()
    if progress:
        _run_with_progress(sim, valid.name, chunk, taken)
    else:
        while sim.advance(chunk):
            taken.take(sim)
    # The run is done: this takes every record left.
    taken.take(sim)
    wall = time.perf_counter() - t0

    raw = sim.results()
    records = taken.frame()
    res = Results.from_native(raw, scenario=valid.to_json(), wall_time_s=wall, records=records)
    if out_dir is not None:
        res.save(out_dir)
    return res


def validate(scenario: ScenarioLike = None) -> _native.ValidScenario:
    """Parse and validate ``scenario`` once, in Rust: a :class:`~slacknet.Scenario`, a dict of
    the scenario's tables (as a TOML file would give them), a path to a TOML (or ``.json``)
    file, or ``None`` for the built-in default (an already validated scenario is returned as it
    is). Relative paths in a dict or a ``Scenario`` are relative to the working directory.
    Returns the opaque validated scenario that :func:`run` takes.

    Raises :class:`~slacknet.SpecError` naming the key (for a dict too: the first problem
    pydantic found, and how many more), ``FileNotFoundError`` for a missing file, ``ValueError`` for a string of TOML text instead of a path, and ``TypeError`` for
    anything else."""
    if isinstance(scenario, _native.ValidScenario):
        return scenario
    if isinstance(scenario, dict):
        tree = scenario
        try:
            scenario = Scenario.model_validate(tree)
        except pydantic.ValidationError as e:
            raise _dict_error(e, tree) from None
    if isinstance(scenario, Scenario):
        return _native.validate_json(scenario.to_json(), str(Path.cwd()))
    if scenario is None:
        return _native.validate_toml(_native.default_scenario_toml(), str(Path.cwd()))
    if not isinstance(scenario, (str, os.PathLike)):
        raise TypeError(
            f"scenario: a Scenario, a dict, a path to a TOML or JSON file, or None, not {type(scenario).__name__}"
        )
    if isinstance(scenario, str) and "\n" in scenario:
        raise ValueError(
            "scenario: this looks like TOML text, not a path to a file: "
            "use slacknet.Scenario.from_toml_text(text) and pass the Scenario"
        )
    p = Path(scenario)
    text = _read_text(p)
    base = str(p.resolve().parent)
    if p.suffix.lower() == ".json":
        return _native.validate_json(text, base)
    _check_toml_syntax(text, str(p))
    return _native.validate_toml(text, base)


def _dict_error(e: pydantic.ValidationError, tree: dict[str, Any]) -> SpecError:
    """The first problem pydantic found in a scenario dict, as the :class:`SpecError` a TOML
    file with the same tables gets: its dotted key (a tagged table's tag, which pydantic puts
    in the path, left out), its value and what is wrong, and how many more there are. A key
    that is not one (a typo) is reported first, as the TOML reader reports it: with the keys
    that table takes (pydantic said only "topology: field required" for ``{"topolgy": ...}``)."""
    if any(err["type"] == "extra_forbidden" for err in e.errors()):
        try:
            _native.validate_json(json.dumps(tree), os.getcwd())
        except SpecError as native:
            message = str(getattr(native, "message", ""))
            if "unknown field" in message:
                # The position is in JSON made here, not in anything the user wrote.
                message = re.sub(r" at line \d+ column \d+$", "", message)
                return spec_error(str(getattr(native, "key", "scenario")), getattr(native, "value", None), message)
        except (TypeError, ValueError, OverflowError, RecursionError):
            pass  # not JSON (numpy values, say): pydantic's account below
    first = e.errors()[0]
    key, node = "", tree  # type: str, Any
    for part in first["loc"]:
        if isinstance(part, int):
            key += f"[{part}]"
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            continue
        if isinstance(node, dict) and part not in node and part in (node.get("kind"), node.get("policy")):
            continue  # the union's tag, not a key
        key += f".{part}" if key else str(part)
        node = node.get(part) if isinstance(node, dict) else None
    value = None if first["type"] == "missing" else repr(first.get("input"))[:80]
    more = len(e.errors()) - 1
    message = first["msg"][0].lower() + first["msg"][1:] + (f" (and {more} more problem{'s' * (more > 1)})" if more else "")
    return spec_error(key or "scenario", value, message)


class _TakenRecords:
    """The records taken during a run (``Simulation.take_records``), kept as column chunks
    and put in record order once, at the end, one column at a time (so that the run's peak
    memory is about one copy of the records, not three)."""

    def __init__(self) -> None:
        self.chunks: dict[str, list[Any]] = {}

    def take(self, sim: _native.Simulation) -> None:
        for name, col in sim.take_records().items():
            if isinstance(col, tuple):
                dtype, raw = col
                values: Any = np.frombuffer(raw, dtype=np.dtype(dtype))
            else:
                values = np.array(col, dtype=object)
            self.chunks.setdefault(name, []).append(values)

    def frame(self) -> pd.DataFrame:
        """Every record taken, in record order (by ``row``), without ``row``."""
        order = np.argsort(np.concatenate(self.chunks.pop("row")), kind="stable")
        data: dict[str, Any] = {}
        for name in list(self.chunks):
            col = np.concatenate(self.chunks.pop(name))[order]
            # Strings as `_columns_to_frame` makes them (pandas infers the string dtype).
            data[name] = pd.Series(col, dtype=None if len(col) else object) if col.dtype == object else col
        return pd.DataFrame(data, copy=False)


def _run_with_progress(sim: _native.Simulation, name: str, chunk: int, taken: _TakenRecords) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[sim]}"),
        TextColumn("{task.fields[rate]}"),
        TextColumn("{task.fields[flows]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True, refresh_per_second=8) as bar:
        # The bar tracks simulated time up to the horizon (stop time or end of arrivals);
        # past it the run drains the remaining flows and the label says so.
        horizon = max(sim.horizon_ps, 1)
        task = bar.add_task(name, total=horizon, sim="", rate="", flows="")
        t0 = time.perf_counter()
        more = True
        while more:
            more = sim.advance(chunk)
            if more:
                taken.take(sim)
            now = sim.now_ps
            dt = time.perf_counter() - t0
            if now <= horizon:
                sim_text = f"{now / 1e9:.2f}/{horizon / 1e9:.2f} ms"
            else:
                sim_text = f"{now / 1e9:.2f} ms, draining"
            bar.update(
                task,
                completed=min(now, horizon),
                sim=sim_text,
                rate=f"{sim.events / dt / 1e6:.1f} M ev/s" if dt > 0 else "",
                flows=f"{sim.finished_flows}/{sim.num_flows} flows",
            )
        bar.update(task, completed=horizon)
    sys.stderr.flush()


def trace_flow(
    scenario: ScenarioLike,
    flow: int,
    *,
    seed: int | None = None,
    chunk_events: int = DEFAULT_CHUNK_EVENTS,
) -> pd.DataFrame:
    """Run ``scenario`` and return one transfer's packet-level history as a DataFrame: every
    segment its endpoints send and receive, every queue its packets (data and ACKs) enter or
    are dropped at, and every retransmission timeout of its sender, in the order they happen.

    ``flow`` is the transfer's ``id`` in the run's records (a flow list's own id, else the
    order in which the run started it). ``scenario`` and ``seed`` are as :func:`run`'s; the run
    is the same run (tracing changes nothing in it).

    Columns: ``time_ps``; ``event`` (``send``: an endpoint handed the segment to its NIC;
    ``enqueue``: it entered the queue of ``link`` (a ``links`` row), a host NIC's if ``switch``
    is -1, with ``queue_bytes`` waiting there; ``drop``: it was refused or pushed out there, for
    ``cause`` (``admission``, ``queue_cap``, ``selective``, ``pushout``, ``credit``, ``nic``);
    ``receive``: it reached its endpoint; ``timeout``: the sender's retransmission timer
    fired); ``to_receiver`` (data and SYNs ``True``, ACKs ``False``); ``seq`` (payload offset),
    ``ack`` and ``flags`` (TCP: SYN 1, ACK 2, FIN 4, ECE 8, CWR 16; 0 otherwise) and ``len``
    (payload bytes) on ``send`` and ``receive`` rows; ``size`` (bytes on the wire); ``ce`` (a CE
    mark: as delivered on ``receive``, as it arrived elsewhere); ``cwnd_bytes`` (the sender's
    congestion window after the event, on rows of its own sends and of what it received).
    ``df.attrs``: ``flow``, ``truncated`` (the trace reached 512 MiB and stopped).

    The sender's side is what the ns-3 peer's ``--traceFlow`` writes for the same flow
    (``bench/peers/ns3/README.md``), so a difference between the simulators can be followed
    packet by packet.

    Raises :class:`~slacknet.SpecError` (key ``flow``) if ``flow`` is not an integer in [0,
    2^64 - 1] or no transfer of the run has that id, and what :func:`run` raises.
    """
    if isinstance(flow, bool) or not isinstance(flow, numbers.Integral) or not 0 <= flow < 2**64:
        raise spec_error("flow", repr(flow), "must be a transfer id, an integer in [0, 2^64 - 1] (the records' id "
                         "column), e.g. flow=3")
    _check_chunk_events(chunk_events)
    valid = _with_seed(validate(scenario), seed)
    sim = _native.Simulation(valid, trace_flow=int(flow))
    while sim.advance(int(chunk_events)):
        pass
    if not sim.flow_trace_started():
        raise spec_error("flow", str(int(flow)), f"no transfer of this run has the id {int(flow)} ({sim.num_flows} "
                         "transfers started); ids are the records' id column (a flow list's own ids)")
    cols = sim.flow_trace()
    df = pd.DataFrame({
        k: np.frombuffer(v[1], dtype=np.dtype(v[0])) if isinstance(v, tuple) else pd.Categorical(v)
        for k, v in cols.items()
    })
    df.attrs["flow"] = int(flow)
    df.attrs["truncated"] = bool(sim.flow_trace_truncated())
    return df
