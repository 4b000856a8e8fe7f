"""What a run produced, as pandas DataFrames, and its on-disk layout.

A results folder holds ``scenario.json`` (the resolved scenario), ``records.parquet`` (one row
per flow), ``apps.parquet`` (one row per completed application-level unit: job, iteration,
round, coflow, relayed block; with its ideal completion time where one is defined),
``switches.parquet``, ``queues.parquet``, ``occupancy.parquet``, ``links.parquet`` (bytes
and packets per link), ``summary.json`` (totals, wall time, rates, seed, slacknet version and
git hash) and ``manifest.json``; with ``[run.timeseries]`` also ``queue_series.parquet`` and
``transfer_series.parquet`` (:attr:`Results.queue_series`, :attr:`Results.transfer_series`;
a run without them reads them as empty tables with their columns); with NetApprox jobs
(``approx_jobs``) ``groups.parquet``, one row per group of each job (:attr:`Results.groups`;
empty otherwise). Plots (``*.png``) may sit
beside them: they are drawn from the folder and are not part of it.

A folder is either complete and consistent or absent:

- :meth:`Results.save` writes into a temporary sibling, ``.<name>.tmp-<pid>-<random>``,
  writes ``manifest.json`` last and renames the folder into place. An existing folder is
  replaced by renaming it aside (``.<name>.old-<pid>-<random>``), renaming the new one in and
  removing the old, so an interruption leaves the old folder, the new one, or none at ``name``;
  never a mixture. Only an earlier run's folder (by its manifest, or one of a slacknet older
  than the manifest) holding nothing but results files and plots, or an empty folder, is
  replaced: anything else is refused (:func:`check_save_target`); so is a :class:`Results`
  whose tables, summary or scenario :meth:`Results.load` would refuse, before anything is
  written. A save removes the temporary folders of its own name that a process no longer
  running left behind.
- ``manifest.json`` (:class:`Manifest`) names the format and its version, the slacknet
  version, the SHA-256 of the resolved scenario (:func:`scenario_sha256`), the seed, and every
  file with its size and SHA-256. Every reader checks it (:func:`verify_results`) and refuses
  a folder without one (written by a slacknet older than the manifest: re-run it), with a
  file missing, added, or of another size or hash, or a temporary folder, with a one-line
  :class:`ResultsError` that says what to do. Since a manifest can be made to match a
  hand-edited folder, readers also refuse what no run writes: a FIFO, device or folder in
  place of a file (never opened), a manifest over 16 MiB or a JSON file over 64 MiB, a
  manifest whose scenario hash or seed is not its ``scenario.json``'s, a table column missing
  or of another type, a finished flow whose slowdown is not a positive number, a time series
  of a flow not in ``records``, and a summary without its counts. A column added since the
  format (``switches.occ_samples``) may be absent.

Times in the native columns are integer picoseconds (``*_ps``); :attr:`Results.records` adds
float microsecond columns ``start_us``, ``fct_us`` and ``ideal_fct_us`` (``fct_us`` is NaN for
unfinished flows); :attr:`Results.apps` adds ``start_us``, ``duration_us`` and ``ideal_us``
(NaN where the application defines no ideal).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

import numpy as np
import pandas as pd

from .config import FileTooLargeError, NotRegularFileError, Scenario, read_bounded

__all__ = [
    "MANIFEST",
    "RESULT_FILES",
    "SERIES_FILES",
    "GROUP_FILES",
    "Manifest",
    "Results",
    "ResultsError",
    "check_save_target",
    "is_results_folder",
    "read_manifest",
    "scenario_sha256",
    "verify_results",
    "write_csv_atomic",
    "replace_atomic",
    "write_text_atomic",
]

#: The files :meth:`Results.save` always writes, besides :data:`MANIFEST`.
RESULT_FILES = (
    "scenario.json",
    "records.parquet",
    "apps.parquet",
    "switches.parquet",
    "queues.parquet",
    "occupancy.parquet",
    "links.parquet",
    "summary.json",
)

#: The time-series files :meth:`Results.save` writes when the run had ``[run.timeseries]``.
SERIES_FILES = ("queue_series.parquet", "transfer_series.parquet")
#: Written when the run has rows for it: NetApprox jobs' groups (:attr:`Results.groups`).
GROUP_FILES = ("groups.parquet",)

#: The manifest of a results folder, written last.
MANIFEST = "manifest.json"
#: What ``format`` says in every manifest, and the version of the layout it describes.
MANIFEST_FORMAT = "slacknet-results"
MANIFEST_VERSION = 1

_SERIES = ("queue_series", "transfer_series")
_TABLES = ("records", "apps", "groups", "switches", "queues", "occupancy", "links") + _SERIES
#: Plots drawn from a folder may sit in it; they are not results and not in the manifest.
_PLOT_SUFFIX = ".png"
#: The scratch folders of a save: ``.<name>.tmp-<pid>-<random>`` while writing, and
#: ``.<name>.old-<pid>-<random>`` for the folder it replaces.
_SCRATCH = re.compile(r"^\.(?P<name>.+)\.(?:tmp|old)-(?P<pid>\d+)-[0-9a-f]{8}$")
#: An engine digest as ``_native.engine_sha256()`` gives it.
_HEX64 = re.compile(r"[0-9a-f]{64}")
#: The largest ``manifest.json`` read (one is a few kB), and the largest ``scenario.json`` or
#: ``summary.json`` (a resolved scenario from a scenario file of at most 16 MB, indented).
_MANIFEST_MAX_BYTES = 1 << 24
_JSON_MAX_BYTES = 1 << 26
#: Columns a table of a format-1 folder may lack: added since, and read without them.
#: ``occ_samples``: :func:`~slacknet.analysis.switch_table` tells unsampled switches by the
#: ``occupancy`` table instead. ``tail_probes`` (2026-11-29): absent, not zero, from a folder
#: written before it was counted.
_OPTIONAL_COLUMNS = {"switches": ("occ_samples",), "records": ("tail_probes",)}
#: The summary's counts that readers (``slacknet summary``, ``repr``) use, and its rates.
_SUMMARY_REQUIRED = ("num_flows", "finished_flows")
_SUMMARY_FLOATS = ("wall_time_s", "events_per_s", "packet_hops_per_s", "sim_time_ms")

T = TypeVar("T")


class ResultsError(ValueError):
    """A results folder is missing, incomplete, changed after it was written, or not one; or
    a save would replace a folder that is not one. The message is one line naming the folder
    or file and what to do."""


@dataclass(frozen=True)
class Manifest:
    """What ``manifest.json`` records about a results folder (format version
    :data:`MANIFEST_VERSION`): the ``slacknet_version`` that wrote it, the resolved
    scenario's ``scenario_sha256``, the ``seed``, the ``files`` and the ``engine_sha256`` of
    the engine that ran it."""

    slacknet_version: str
    scenario_sha256: str
    """:func:`scenario_sha256` of the folder's ``scenario.json``."""
    seed: int
    files: dict[str, tuple[int, str]]
    """Every file of the folder but the manifest and plots: name -> (bytes, SHA-256 hex)."""
    engine_sha256: str | None = None
    """SHA-256 of the sources the engine that ran it was built from
    (``slacknet._native.engine_sha256()`` where it ran; ``crates/py/build.rs`` says which
    files), or None: written before slacknet recorded it, or the summary saved lacked it. A
    sweep reuses a folder only if this is the running engine's."""

    def to_json(self) -> str:
        """The manifest as ``manifest.json`` holds it."""
        return json.dumps(
            {
                "format": MANIFEST_FORMAT,
                "format_version": MANIFEST_VERSION,
                "slacknet_version": self.slacknet_version,
                "scenario_sha256": self.scenario_sha256,
                "seed": self.seed,
                "engine_sha256": self.engine_sha256,
                "files": {n: {"bytes": b, "sha256": h} for n, (b, h) in sorted(self.files.items())},
            },
            indent=2,
        ) + "\n"


def scenario_sha256(scenario_json: str) -> str:
    """SHA-256 (hex) of a resolved scenario's JSON text ``scenario_json`` in canonical form (keys sorted, no
    whitespace), so that only its content counts: the key that identifies a run with its seed."""
    canonical = json.dumps(json.loads(scenario_json), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def read_manifest(directory: str | os.PathLike[str]) -> Manifest:
    """The manifest of a results folder, without checking its files against it (that is
    :func:`verify_results`). Raises :class:`ResultsError` if there is none or it is damaged."""
    d = Path(directory)
    if _SCRATCH.match(d.name):
        raise ResultsError(f"{d} is the temporary folder of an interrupted save, not results: remove it")
    if not d.is_dir():
        if os.path.lexists(d):
            inside = f": give the folder that holds it, {d.parent}" if is_results_folder(d.parent) else (
                ": give the folder `slacknet run` wrote")
            raise ResultsError(f"{d} is a file, not a results folder{inside}")
        raise ResultsError(f"no such results folder: {d}")
    path = d / MANIFEST
    if not path.is_file():
        if os.path.lexists(path):  # a FIFO, a folder, a device or a broken link
            raise ResultsError(f"{path} is {_kind(path)}, not a file: re-run to write the folder again")
        if all((d / f).is_file() for f in ("scenario.json", "records.parquet", "summary.json")):
            raise ResultsError(f"{d} was written by a slacknet older than results manifests (no {MANIFEST}): "
                               "re-run its scenario.json to write it again")
        raise ResultsError(f"{d} is not a slacknet results folder (no {MANIFEST})")
    return _parse_manifest(path)


def is_results_folder(directory: str | os.PathLike[str]) -> bool:
    """Whether ``directory`` is a results folder by its own account: it holds a
    ``manifest.json`` of this format (complete or not; :func:`verify_results` checks that).
    Cheap enough to ask of every folder above an output path."""
    path = Path(directory) / MANIFEST
    try:
        if not path.is_file() or path.stat().st_size > _MANIFEST_MAX_BYTES:  # a manifest is a few kB
            return False
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nesting too deep for json
        return False
    return isinstance(raw, dict) and raw.get("format") == MANIFEST_FORMAT


def verify_results(directory: str | os.PathLike[str]) -> Manifest:
    """Check a results folder against its manifest and return the manifest: every file it
    lists is there with its size and SHA-256, and nothing else is (but plots). Raises
    :class:`ResultsError` saying what is wrong and what to do."""
    d = Path(directory)
    manifest = read_manifest(d)
    present = {p.name for p in d.iterdir() if p.name != MANIFEST and not _is_plot(p)}
    missing, extra = sorted(manifest.files.keys() - present), sorted(present - manifest.files.keys())
    if missing:
        raise ResultsError(f"{d / missing[0]} is missing ({MANIFEST} lists it): the folder is incomplete; "
                           "re-run to write it again")
    if extra:
        raise ResultsError(f"{d / extra[0]} is not in {MANIFEST}: it was added after the run; remove it or re-run")
    for name, (size, digest) in sorted(manifest.files.items()):
        f = d / name
        st = os.stat(f)
        if not stat.S_ISREG(st.st_mode):  # hashing a FIFO or /dev/zero would never end
            raise ResultsError(f"{f} is {_kind(f)}, not a file: the folder was changed after the run; "
                               "re-run to write the folder again")
        actual = st.st_size
        if actual != size:
            raise ResultsError(f"{f} has {actual} bytes, {MANIFEST} says {size}: it was truncated or changed "
                               "after the run; re-run to write the folder again")
        if _sha256(f) != digest:
            raise ResultsError(f"{f} does not match its SHA-256 in {MANIFEST}: it was changed after the run; "
                               "re-run to write the folder again")
    # A sweep reuses a folder by these two (sweep._finished_before): they must be the folder's.
    text = _scenario_text(d / "scenario.json")
    digest = _read(d / "scenario.json", lambda _: scenario_sha256(text))
    if digest != manifest.scenario_sha256:
        raise ResultsError(f"{d / MANIFEST} gives scenario_sha256 {manifest.scenario_sha256[:12]}..., but scenario.json "
                           f"hashes to {digest[:12]}...: it was changed after the run; re-run to write the folder again")
    seed = _read(d / "scenario.json", lambda _: json.loads(text)["seed"])
    if seed != manifest.seed:
        raise ResultsError(f"{d / MANIFEST} gives seed {manifest.seed}, but scenario.json has {seed!r}: it was changed "
                           "after the run; re-run to write the folder again")
    return manifest


def check_save_target(directory: str | os.PathLike[str]) -> None:
    """Raise :class:`ResultsError` unless :meth:`Results.save` may write ``directory``: it
    does not exist, or it is a folder holding only what a results folder holds (the files of
    an earlier run, also of an older slacknet, plots, or nothing), which the save replaces."""
    d = Path(directory)
    if not os.path.lexists(d):
        return
    if d.is_symlink() or not d.is_dir():
        raise ResultsError(f"cannot write results to {d}: it is not a folder but a file or link; "
                           "choose another output folder")
    entries = sorted(d.iterdir())
    foreign = [p.name for p in entries if not _is_result_file(p)]
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise ResultsError(f"refusing to replace {d}: it holds {foreign[0]!r}{more}, which a results folder "
                           "does not; choose a new output folder or an earlier run's")
    # Names alone do not make a folder ours: a folder of pictures (*.png) or one holding only
    # the user's own scenario.json is not results. It must say so by its manifest, or hold
    # what every folder of a slacknet older than the manifest held.
    older = all((d / f).is_file() for f in ("scenario.json", "records.parquet", "summary.json"))
    if entries and not older and not is_results_folder(d):
        more = f" and {len(entries) - 1} more" if len(entries) > 1 else ""
        raise ResultsError(f"refusing to replace {d}: it holds {entries[0].name!r}{more} but no {MANIFEST}, so no run "
                           "wrote it; choose a new output folder or an earlier run's")


def _parse_manifest(path: Path) -> Manifest:
    try:
        raw = json.loads(_read_bounded(path, _MANIFEST_MAX_BYTES).decode("utf-8"))
    except (ValueError, OSError, RecursionError) as e:  # RecursionError: nesting too deep for json
        raise ResultsError(f"{path} cannot be read ({_first_line(e)}): re-run to write the folder again") from None
    if not isinstance(raw, dict) or raw.get("format") != MANIFEST_FORMAT:
        raise ResultsError(f"{path} is not a slacknet results manifest: re-run to write the folder again")
    version = raw.get("format_version")
    if isinstance(version, int) and version > MANIFEST_VERSION:
        raise ResultsError(f"{path.parent} was written by a newer slacknet ({raw.get('slacknet_version')}, "
                           f"results format {version}): upgrade slacknet to read it")
    try:
        if version != MANIFEST_VERSION:
            raise ValueError(f"unknown format_version {version!r}")
        files = {str(n): (_whole(e["bytes"], "bytes"), str(e["sha256"])) for n, e in raw["files"].items()}
        engine = _engine_digest(raw.get("engine_sha256"))  # absent in folders written before it was recorded
        manifest = Manifest(str(raw["slacknet_version"]), str(raw["scenario_sha256"]), _whole(raw["seed"], "seed"),
                            files, engine)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ResultsError(f"{path} is damaged ({type(e).__name__}: {_first_line(e)}): "
                           "re-run to write the folder again") from None
    unknown = sorted(manifest.files.keys() - set(RESULT_FILES + SERIES_FILES + GROUP_FILES))
    absent = [f for f in RESULT_FILES if f not in manifest.files]
    if unknown or absent:
        what = f"lists {unknown[0]}, which no results folder holds" if unknown else f"does not list {absent[0]}"
        raise ResultsError(f"{path} {what}: re-run to write the folder again")
    return manifest


def _whole(value: object, key: str) -> int:
    """``value`` if it is a whole number of at least 0 (not a bool, not a float); else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key} = {value!r} is not a whole number")
    return value


def _kind(path: Path) -> str:
    """What ``path`` is, for a message about something that should be a regular file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "a broken link" if os.path.islink(path) else "unreadable"
    return _mode_kind(mode)


def _mode_kind(mode: int) -> str:
    for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def _read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, if it holds at most ``limit``: a FIFO or device
    never blocks the reader, and a huge file is not read into memory (OSError otherwise)."""
    try:
        return read_bounded(path, limit)
    except NotRegularFileError as e:
        raise OSError(f"{_mode_kind(e.mode)}, not a file") from None
    except FileTooLargeError:
        raise OSError(f"larger than {limit >> 20} MiB") from None


def _is_plot(p: Path) -> bool:
    return p.suffix == _PLOT_SUFFIX and p.is_file()


def _is_result_file(p: Path) -> bool:
    return not p.is_symlink() and p.is_file() and (p.name in RESULT_FILES + SERIES_FILES + GROUP_FILES + (MANIFEST,) or _is_plot(p))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fsync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _sealed(path: Path) -> tuple[int, str]:
    """Size and SHA-256 of a file just written, after flushing it to disk."""
    _fsync(path)
    return path.stat().st_size, _sha256(path)


def _fsync_dir(d: Path) -> None:
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _scratch_name(name: str, kind: str) -> str:
    return f".{name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}"


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def _remove_stale_scratch(parent: Path, name: str) -> None:
    """Remove the scratch folders of earlier saves to ``parent/name`` by processes that are
    no longer running (interrupted saves)."""
    for p in parent.iterdir():
        m = _SCRATCH.match(p.name)
        if m and m["name"] == name and p.is_dir() and not p.is_symlink() and not _is_running(int(m["pid"])):
            shutil.rmtree(p, ignore_errors=True)


def write_csv_atomic(df: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write ``df`` as CSV to a temporary name beside ``path``, then rename it over ``path``,
    so that an interrupted write never leaves a partial table there."""
    return replace_atomic(path, lambda tmp: df.to_csv(tmp, index=False))


def write_text_atomic(text: str, path: str | os.PathLike[str]) -> Path:
    """Write ``text`` (UTF-8) to ``path`` as :func:`write_csv_atomic` writes a table."""
    return replace_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def replace_atomic(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """``write(tmp)`` a temporary file beside ``path`` (``.<name>.tmp-<pid>``), flush it to disk,
    then rename it over ``path``: ``path`` is the old file or the new one, never part of one
    (a link at ``path`` is replaced, not written through). A write that fails removes its
    temporary file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)
    return path


def _move_into_place(tmp: Path, final: Path) -> None:
    """Rename the complete folder ``tmp`` to ``final``. An existing ``final`` is renamed
    aside first and removed after, so ``final`` is always the old folder, the new one, or
    absent (if the process dies between the two renames; the next save cleans up)."""
    if not os.path.lexists(final):
        os.rename(tmp, final)
    else:
        aside = final.parent / _scratch_name(final.name, "old")
        os.rename(final, aside)
        try:
            os.rename(tmp, final)
        except BaseException:
            os.rename(aside, final)
            raise
        shutil.rmtree(aside, ignore_errors=True)
    _fsync_dir(final.parent)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _read(path: Path, read: Callable[[Path], T]) -> T:
    """``read(path)`` for a file that passed the manifest check. Whatever its parser raises
    (pandas, pyarrow, pydantic or json), the folder is not what slacknet wrote."""
    try:
        return read(path)
    except Exception as e:
        raise ResultsError(f"{path} cannot be read as slacknet wrote it ({_first_line(e)}): "
                           "re-run to write the folder again") from None


def _json_object(path: Path) -> dict[str, Any]:
    value = json.loads(_read_bounded(path, _JSON_MAX_BYTES).decode("utf-8"))
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def _scenario_text(path: Path) -> str:
    """The text of a folder's ``scenario.json`` (bounded; ResultsError if it cannot be read)."""
    return _read(path, lambda p: _read_bounded(p, _JSON_MAX_BYTES).decode("utf-8"))


def _read_summary(path: Path) -> dict[str, Any]:
    summary = _json_object(path)
    _check_summary(summary)
    return summary


def _check_summary(summary: Mapping[str, Any]) -> None:
    """ValueError naming the first value of ``summary`` that is not of the type the simulator
    gives it (a count a whole number, a flag a bool, a rate a number), or a count readers need
    that it lacks."""
    from . import _native

    for key in _SUMMARY_REQUIRED:
        if key not in summary:
            raise ValueError(f"no {key!r}")
    for key, kind in _native.empty_results()["summary"].items():
        value = summary.get(key)
        if value is None and key not in _SUMMARY_REQUIRED:
            continue  # a key added since the folder was written
        if isinstance(kind, bool):
            if not isinstance(value, bool):
                raise ValueError(f"{key} = {value!r} is not true or false")
        else:
            _whole(value, key)
    _engine_digest(summary.get("engine_sha256"))
    if summary["finished_flows"] > summary["num_flows"]:
        raise ValueError(f"finished_flows = {summary['finished_flows']} is more than num_flows = {summary['num_flows']}")
    for key in _SUMMARY_FLOATS:
        value = summary.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(f"{key} = {value!r} is not a number")


#: What a simulator column's dtype kind admits in a table read back, and its name.
_ADMITS = {"u": ("iu", "whole numbers"), "i": ("iu", "whole numbers"), "f": ("f", "numbers"), "b": ("b", "booleans")}


def _read_table(path: Path) -> pd.DataFrame:
    """A table of the folder, with at least the columns the simulator gives it, each of its
    type (:func:`_check_table`). Read through a file object: pyarrow refuses a path that is
    not UTF-8."""
    with open(path, "rb") as f:
        frame = pd.read_parquet(f, engine="pyarrow")
    _check_table(path.stem, frame)
    return frame


def _check_table(table: str, frame: object) -> None:
    """ValueError naming the first column of the simulator's table ``table`` that ``frame``
    lacks (but :data:`_OPTIONAL_COLUMNS`), has twice or holds as another type (an integer
    column as floats or text, a flag as text, ...). Extra columns are allowed."""
    from . import _native

    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"a {type(frame).__name__}, not a DataFrame")
    twice = frame.columns[frame.columns.duplicated()]
    if len(twice):
        raise ValueError(f"column {twice[0]!r} twice")
    for name, col in _native.empty_results()[table].items():
        if name not in frame.columns:
            if name in _OPTIONAL_COLUMNS.get(table, ()):
                continue
            raise ValueError(f"no column {name!r}")
        dtype = frame[name].dtype
        if isinstance(col, tuple):
            kinds, what = _ADMITS[np.dtype(col[0]).kind]
            if not isinstance(dtype, np.dtype) or dtype.kind not in kinds:
                raise ValueError(f"column {name!r} holds {dtype}, not {what}")
        elif not (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)) or (
            pd.api.types.infer_dtype(frame[name], skipna=False) not in ("string", "empty")
        ):
            raise ValueError(f"column {name!r} holds {pd.api.types.infer_dtype(frame[name], skipna=False)}, not text")


def _check_rows(tables: Mapping[str, pd.DataFrame | None]) -> tuple[str, str] | None:
    """The first table, and what is wrong, whose values no run gives and readers cannot use:
    a finished flow whose slowdown is not a positive number (plots draw it on a log axis), a
    transfer sample of a flow not in ``records``."""
    records = tables["records"]
    assert records is not None
    sd = records["slowdown"].to_numpy(dtype=np.float64)[records["finished"].to_numpy(dtype=bool)]
    bad = ~(np.isfinite(sd) & (sd > 0))
    if bad.any():
        return "records", f"a finished flow has slowdown {sd[bad][0]}, not a positive number"
    ts = tables.get("transfer_series")
    if ts is not None and len(ts):
        flow = ts["flow"].to_numpy()
        if flow.min() < 0 or flow.max() >= len(records):
            f = flow.max() if flow.max() >= len(records) else flow.min()
            return "transfer_series", f"it samples flow {f}, but records has {len(records)} flows"
    return None


def _columns_to_frame(cols: Mapping[str, Any]) -> pd.DataFrame:
    data: dict[str, Any] = {}
    for name, col in cols.items():
        if isinstance(col, tuple):
            dtype, raw = col
            data[name] = np.frombuffer(raw, dtype=np.dtype(dtype))
        else:
            data[name] = pd.Series(list(col), dtype=object if not len(col) else None)
    return pd.DataFrame(data)


def _add_derived(records: pd.DataFrame) -> pd.DataFrame:
    if records.empty and "fct_ps" not in records.columns:
        return records
    r = records
    r["start_us"] = r["start_ps"].to_numpy(dtype=np.float64) / 1e6
    fct = r["fct_ps"].to_numpy(dtype=np.float64)
    r["fct_us"] = np.where(r["finished"].to_numpy(dtype=bool), fct / 1e6, np.nan)
    r["ideal_fct_us"] = r["ideal_fct_ps"].to_numpy(dtype=np.float64) / 1e6
    return r


def _add_app_derived(apps: pd.DataFrame) -> pd.DataFrame:
    if "start_ps" not in apps.columns:
        return apps
    apps["start_us"] = apps["start_ps"].to_numpy(dtype=np.float64) / 1e6
    apps["duration_us"] = apps["duration_ps"].to_numpy(dtype=np.float64) / 1e6
    ideal = apps["ideal_ps"].to_numpy(dtype=np.float64)
    apps["ideal_us"] = np.where(ideal >= 0, ideal / 1e6, np.nan)
    return apps


def _git_hash() -> str | None:
    """The commit of the slacknet source tree this package runs from, if it is a checkout."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{out}-dirty" if dirty else out or None


def _engine_digest(value: Any) -> str | None:
    """``value`` if it is an engine digest (``_native.engine_sha256()``) or None; ValueError
    naming it otherwise."""
    if value is not None and not (isinstance(value, str) and _HEX64.fullmatch(value)):
        raise ValueError(f"engine_sha256 = {value!r} is not a SHA-256 in hex")
    return value


def _version() -> str:
    from . import __version__

    return __version__


def _empty_table(name: str) -> pd.DataFrame:
    """Table ``name`` with its columns and dtypes and no rows, as the simulator defines it."""
    from . import _native

    return _columns_to_frame(_native.empty_results()[name])


class Results:
    """The outcome of one run: flow records, application-unit records, switch counters, queue
    maxima, occupancy samples, per-link counters, the optional time series, a summary dict and
    the resolved scenario.

    :attr:`groups`: one row per group of every NetApprox job in :attr:`apps` (``app``,
    ``unit`` as there, ``group``, ``msr``, ``messages``, ``messages_required``,
    ``messages_delivered``, ``loss_rate`` = 1 - delivered / messages and ``loss_allowance`` =
    1 - required / messages, the bound the loss stays within for every scheme but UDP);
    empty without such jobs. The job's row in :attr:`apps` reports its worst group.

    The time series (``[run.timeseries]``; empty tables with the same columns when off), one
    row per sample and item, times in integer picoseconds:

    - :attr:`queue_series`: one row per *non-empty* queue at each sample (sparse: a queue
      missing at a sample time was empty): ``time_ps``, ``link`` (egress link id), ``node``
      (the transmitting node), ``switch`` (switch index, ``-1`` for a host NIC), ``queue``
      (class), ``bytes`` (waiting; the packet being serialized is not counted).
    - :attr:`transfer_series`: one row per transfer in flight at each sample (from its start
      until its completion time is measured): ``time_ps``, ``flow`` (its row in
      :attr:`records`), ``cwnd_bytes`` (0 without a window), ``rate_bps`` (the pacing rate or
      rate cap where the sender enforces one, ``is_paced``; else an estimate: ``cwnd / srtt``,
      NaN before the first RTT sample, or the NIC rate of an unpaced UDP source), ``is_paced``,
      ``srtt_ps``, ``sent_bytes`` (payload sent, retransmissions included),
      ``delivered_bytes`` (distinct payload at the receiver), then one float column per
      transport-specific value the simulator declares, NaN for transports without it:
      ``alpha`` (DCTCP's alpha in [0, 1]), and for ATP (its group 0) ``tlr`` (the target loss
      rate of the current epoch), ``loss`` (the loss rate measured at the last epoch end) and
      ``class`` (the switch class its data is sent in).

    Built by :func:`~slacknet.run` or :meth:`load`; the keyword arguments are the tables
    above, ``summary``, and ``scenario``: a :class:`~slacknet.Scenario` or the resolved
    scenario's JSON text. ``apps``, ``groups``,
    ``queue_series`` and ``transfer_series`` left out are empty tables with their columns.
    """

    records: pd.DataFrame
    apps: pd.DataFrame
    groups: pd.DataFrame
    switches: pd.DataFrame
    queues: pd.DataFrame
    occupancy: pd.DataFrame
    links: pd.DataFrame
    queue_series: pd.DataFrame
    transfer_series: pd.DataFrame
    summary: dict[str, Any]

    def __init__(
        self,
        *,
        records: pd.DataFrame,
        switches: pd.DataFrame,
        queues: pd.DataFrame,
        occupancy: pd.DataFrame,
        links: pd.DataFrame,
        summary: dict[str, Any],
        scenario: Scenario | str,
        apps: pd.DataFrame | None = None,
        groups: pd.DataFrame | None = None,
        queue_series: pd.DataFrame | None = None,
        transfer_series: pd.DataFrame | None = None,
    ) -> None:
        self.records = records
        self.apps = apps if apps is not None else _add_app_derived(_empty_table("apps"))
        self.groups = groups if groups is not None else _empty_table("groups")
        self.queue_series = queue_series if queue_series is not None else _empty_table("queue_series")
        self.transfer_series = transfer_series if transfer_series is not None else _empty_table("transfer_series")
        self.switches = switches
        self.queues = queues
        self.occupancy = occupancy
        self.links = links
        self.summary = summary
        # The resolved scenario as Rust wrote it; typed (a pydantic Scenario) on first access.
        self._scenario: Scenario | None = scenario if isinstance(scenario, Scenario) else None
        self._scenario_json = scenario.to_json(indent=2) if isinstance(scenario, Scenario) else scenario

    @property
    def scenario(self) -> Scenario:
        """The resolved scenario the run came from (every default filled in)."""
        if self._scenario is None:
            self._scenario = Scenario.model_validate_json(self._scenario_json)
        return self._scenario

    @classmethod
    def from_native(
        cls,
        raw: Mapping[str, Any],
        *,
        scenario: Scenario | str,
        wall_time_s: float,
        records: pd.DataFrame | None = None,
    ) -> Results:
        """Wrap what ``_native.Simulation.results()`` returned; ``scenario`` is the resolved
        scenario (a :class:`Scenario` or the JSON text of ``ValidScenario.to_json()``).
        ``records``, if given, are the run's records taken during the run
        (``Simulation.take_records``, in record order), used instead of ``raw``'s.
        ``wall_time_s`` is the run's wall-clock time, from which the summary's rates are
        computed."""
        meta = json.loads(scenario) if isinstance(scenario, str) else {"seed": scenario.seed, "name": scenario.name}
        tables = {t: _columns_to_frame(raw[t]) for t in _TABLES if t != "records" or records is None}
        if records is not None:
            tables["records"] = records
        tables["records"] = _add_derived(tables["records"])
        tables["apps"] = _add_app_derived(tables["apps"])
        summary = dict(raw["summary"])
        wall = max(float(wall_time_s), 1e-9)
        summary["wall_time_s"] = float(wall_time_s)
        summary["events_per_s"] = summary.get("events", 0) / wall
        summary["packet_hops_per_s"] = summary.get("packet_hops", 0) / wall
        summary["sim_time_ms"] = summary.get("sim_end_ps", 0) / 1e9
        summary["seed"] = meta["seed"]
        summary["scenario"] = meta["name"]
        from . import _native

        summary["slacknet_version"] = _version()
        summary["engine_sha256"] = _native.engine_sha256()
        summary["git_hash"] = _git_hash()
        return cls(scenario=scenario, summary=summary, **tables)

    # -- persistence --

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the results folder, atomically (see the module docs), and return its path.

        Raises :class:`ResultsError`, writing nothing, if ``directory`` exists and is not a
        results folder (:func:`check_save_target`), or if a table, the summary or the scenario
        is not what a run gives (a folder :meth:`load` would refuse)."""
        final = Path(os.path.abspath(directory))
        self._check_savable(final)
        check_save_target(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_scratch(final.parent, final.name)
        tmp = final.parent / _scratch_name(final.name, "tmp")
        tmp.mkdir()
        try:
            self._write(tmp)
            _move_into_place(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return Path(directory)

    def _check_savable(self, final: Path) -> None:
        """ResultsError naming the first table, the summary or the scenario that :meth:`load`
        would refuse: a folder that only looks valid is never written."""
        def refuse(what: str, problem: str) -> ResultsError:
            return ResultsError(f"cannot save results to {final}: {what} {problem}; save the tables "
                                "slacknet.run returned (extra columns are kept)")

        tables = {t: getattr(self, t) for t in _TABLES}
        for t, frame in tables.items():
            try:
                _check_table(t, frame)
            except ValueError as e:
                raise refuse(f"Results.{t}", f"is not a run's table ({e})") from None
        try:
            if not isinstance(self.summary, Mapping):
                raise TypeError(f"a {type(self.summary).__name__}, not a dict")
            _check_summary(self.summary)
            json.dumps(self.summary, default=_json_default)
        except (TypeError, ValueError) as e:
            raise refuse("Results.summary", f"is not a run's summary ({e})") from None
        try:
            scenario = json.loads(self._scenario_json)
            if not isinstance(scenario, dict) or not isinstance(scenario.get("seed"), int):
                raise ValueError("no seed")
        except (TypeError, ValueError, RecursionError) as e:
            raise refuse("the scenario", f"is not a resolved scenario's JSON ({_first_line(e)})") from None
        wrong = _check_rows(tables)
        if wrong is not None:
            raise refuse(f"Results.{wrong[0]}", f"is not a run's table ({wrong[1]})")

    def _write(self, d: Path) -> None:
        """Every file of the folder into the empty folder ``d``, the manifest last."""
        # The scenario as the run resolved it, even if `scenario` was changed since.
        text = self._scenario_json.rstrip() + "\n"
        (d / "scenario.json").write_text(text, encoding="utf-8")
        for t in _TABLES:
            frame: pd.DataFrame = getattr(self, t)
            if t in _SERIES and frame.empty and not self.has_timeseries:
                continue
            if t == "groups" and frame.empty:
                continue
            frame.to_parquet(d / f"{t}.parquet", engine="pyarrow", index=False)
        (d / "summary.json").write_text(
            json.dumps(self.summary, indent=2, sort_keys=True, default=_json_default) + "\n",
            encoding="utf-8",
        )
        manifest = Manifest(
            slacknet_version=_version(),
            scenario_sha256=scenario_sha256(text),
            seed=int(json.loads(text)["seed"]),
            files={p.name: _sealed(p) for p in sorted(d.iterdir())},
            engine_sha256=_engine_digest(self.summary.get("engine_sha256")),  # _check_savable checked it
        )
        (d / MANIFEST).write_text(manifest.to_json(), encoding="utf-8")
        _fsync(d / MANIFEST)
        _fsync_dir(d)

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Results:
        """Read a folder written by :meth:`save`, after checking it against its manifest
        (:func:`verify_results`). Raises :class:`ResultsError` (one line: what is wrong and
        what to do) if it is not a complete results folder as slacknet wrote it."""
        d = Path(directory)
        manifest = verify_results(d)
        text = _scenario_text(d / "scenario.json")
        scenario = _read(d / "scenario.json", lambda _: Scenario.model_validate_json(text))
        summary = _read(d / "summary.json", _read_summary)
        tables = {
            t: _read(d / f"{t}.parquet", _read_table) if f"{t}.parquet" in manifest.files else None for t in _TABLES
        }
        wrong = _check_rows(tables)
        if wrong is not None:
            raise ResultsError(f"{d / (wrong[0] + '.parquet')} cannot be read as slacknet wrote it ({wrong[1]}): "
                               "re-run to write the folder again")
        res = cls(scenario=text, summary=summary, **tables)
        res._scenario = scenario
        return res

    # -- conveniences --

    @property
    def num_flows(self) -> int:
        """Flows in the run."""
        return len(self.records)

    @property
    def has_timeseries(self) -> bool:
        """Whether the run sampled time series (its scenario has ``[run.timeseries]``)."""
        return self.scenario.run.timeseries is not None

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<Results {s.get('scenario', '?')!r}: {s.get('finished_flows', '?')}/"
            f"{s.get('num_flows', '?')} flows finished, {s.get('events', '?')} events, "
            f"{s.get('wall_time_s', float('nan')):.3g} s wall>"
        )


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")
