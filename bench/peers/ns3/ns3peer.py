#!/usr/bin/env python3
"""ns-3.44 reference peer for slacknet benchmarks (stdlib only).

Runs a slacknet flow list (``id src dst start_s size_bytes incast``) through
``dc_bench.cc`` -- a leaf-spine DCTCP scenario compiled against the PyPI
``ns3==3.44.post0`` wheel -- and writes FCTs in slacknet's record format
(``id src dst start_s size_bytes incast fct_ns ideal_ns slowdown``).

Nothing here is needed to install or test slacknet itself.  First use creates
a private venv at ``~/.cache/slacknet/ns3-3.44/venv`` (``$SLACKNET_NS3_HOME``), pip-installs
the wheel there and compiles ``build/dc_bench`` next to it.

The wheel has ns-3's logging and asserts compiled in, which makes it 1.35-1.43x slower than
ns-3.44 built from source with its release profile (README.md). ``ns3_dir`` (``--ns3-dir DIR``,
``$NS3_DIR``) compiles ``dc_bench`` against such a build instead: an ns-3.44 source tree that
was built (its ``build/`` folder, with ``include/ns3`` and ``lib``, is used) or that ``build/``
folder itself; :func:`describe_build` says which profile it was built with.

CLI (stdout is exactly one JSON line; progress goes to stderr)::

    python bench/peers/ns3/ns3peer.py ensure
    python bench/peers/ns3/ns3peer.py run --flows F --out O [--leaves 2] [--stop-s 0.1] ...
    python bench/peers/ns3/ns3peer.py summarize O [O2 ...]

Python::

    import ns3peer
    if ns3peer.is_installed(): ...
    ns3peer.ensure()                          # -> Path of the dc_bench binary
    ns3peer.run("flows.txt", "fct.txt", stop_s=0.1)
    # -> {"wall_s": 7.5, "peak_rss_mb": 37.2, "out": "/abs/fct.txt", ...}
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import math
import mmap
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Iterator, Sequence

HERE = Path(__file__).resolve().parent
if str(HERE.parents[1]) not in sys.path:  # bench/, for _cli (stdlib only, as this runner)
    sys.path.insert(0, str(HERE.parents[1]))
import _cli  # noqa: E402

NS3_VERSION = "3.44.post0"
NS3_LIB_PREFIX = "ns3.44"
SOURCE = HERE / "dc_bench.cc"
# The private ns-3 install lives outside the checkout (default ~/.cache/slacknet/ns3-3.44, or
# $SLACKNET_NS3_HOME), so every clone on a machine, CI's fresh clones included, shares one
# install and the agreement test runs wherever ns-3 was installed once.
NS3_HOME = Path(os.environ.get("SLACKNET_NS3_HOME") or Path.home() / ".cache" / "slacknet" / "ns3-3.44")
VENV = NS3_HOME / "venv"
BUILD_DIR = NS3_HOME / "build"
BINARY = BUILD_DIR / "dc_bench"
LOCK = NS3_HOME / ".ensure.lock"
NS3_MODULES = ("core", "network", "internet", "point-to-point", "traffic-control")


class Ns3PeerError(RuntimeError):
    """Anything that stops the ns-3 peer from being installed or run."""


class Ns3PeerUsage(Ns3PeerError):
    """A bad argument (a folder that is not a built ns-3.44, a flow list or record file that is
    missing, empty or malformed): exit code 2 from the CLI."""


def _log(msg: str) -> None:
    print(f"[ns3peer] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Installation
# --------------------------------------------------------------------------


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def _ns3_root() -> Path | None:
    """The ``ns3`` folder of the installed wheel (include/ + lib64/), if any."""
    for hdr in sorted(VENV.glob("lib*/python3*/site-packages/ns3/include/ns3/core-module.h")):
        return hdr.parents[2]
    return None


def _ns3_libdir(root: Path, suffix: str = "") -> Path:
    for name in ("lib64", "lib"):
        d = root / name
        if (d / f"lib{NS3_LIB_PREFIX}-core{suffix}.so").exists():
            return d
    raise Ns3PeerError(f"no lib{NS3_LIB_PREFIX}-core{suffix}.so under {root}/lib64 or {root}/lib")


def _compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++")
    if not cxx or not shutil.which(cxx):
        raise Ns3PeerError(
            "g++ not found: the ns-3 peer compiles dc_bench.cc against the ns3 wheel. "
            "Install a C++20 compiler (e.g. `apt-get install g++`) or set CXX."
        )
    return cxx


def _compile_cmd(cxx: str, root: Path, out: Path, suffix: str = "", absolute_rpath: bool = False) -> list[str]:
    libdir = _ns3_libdir(root, suffix)
    # $ORIGIN-relative rpath for the wheel: the binary keeps working if the checkout moves; a
    # user's own build stays where it is.
    rpath = str(libdir) if absolute_rpath else "$ORIGIN/" + os.path.relpath(libdir, BUILD_DIR)
    return [
        cxx, "-O2", "-std=c++20", "-w",
        "-I", str(root / "include"),
        str(SOURCE), "-o", str(out),
        "-L", str(libdir), f"-Wl,-rpath,{rpath}",
        *[f"-l{NS3_LIB_PREFIX}-{m}{suffix}" for m in NS3_MODULES],
    ]  # fmt: skip


def find_build(ns3_dir: str | os.PathLike[str]) -> tuple[Path, str]:
    """The output folder of a user's ns-3.44 build (``include/ns3/core-module.h`` and
    ``lib/libns3.44-core<suffix>.so``) given its source tree or that folder, and the library
    suffix of its profile (``""`` for release, ``-optimized``, ``-default``, ``-debug``).
    Raises Ns3PeerError naming what is missing."""
    given = Path(ns3_dir).expanduser().resolve()
    for root in (given / "build", given):
        if (root / "include" / "ns3" / "core-module.h").is_file():
            cores = sorted((root / "lib").glob(f"lib{NS3_LIB_PREFIX}-core*.so"))
            if not cores:
                raise Ns3PeerUsage(
                    f"--ns3-dir {given}: {root / 'lib'} has no lib{NS3_LIB_PREFIX}-core*.so; build ns-3.44 "
                    "there first (with at least the core, network, internet, point-to-point and traffic-control "
                    "modules)")
            suffix = cores[0].name[len(f"lib{NS3_LIB_PREFIX}-core"):-len(".so")]
            missing = [m for m in NS3_MODULES if not (root / "lib" / f"lib{NS3_LIB_PREFIX}-{m}{suffix}.so").is_file()]
            if missing:
                raise Ns3PeerUsage(f"--ns3-dir {given}: the build has no {', '.join(missing)} module; enable "
                                   f"{';'.join(NS3_MODULES)} in NS3_ENABLED_MODULES and build again")
            return root, suffix
    raise Ns3PeerUsage(
        f"--ns3-dir {given}: not a built ns-3.44 tree (no build/include/ns3/core-module.h under it or in it); "
        "configure and build ns-3.44 there, e.g. `cmake -S . -B cmake-cache -DCMAKE_BUILD_TYPE=release "
        "-DNS3_ENABLED_MODULES=\"core;network;internet;point-to-point;traffic-control\"` and "
        "`cmake --build cmake-cache`")


def describe_build(root: Path, suffix: str) -> str:
    """How a user's ns-3 build was configured, from the CMakeCache.txt of its configure step
    (next to ``root``, in ``cmake-cache/`` as ``./ns3 configure`` puts it, or in ``root``)."""
    for cache in (root / "CMakeCache.txt", root.parent / "cmake-cache" / "CMakeCache.txt"):
        if cache.is_file():
            vals: dict[str, str] = {}
            for line in cache.read_text(errors="replace").splitlines():
                key, sep, value = line.partition("=")
                if sep and not line.startswith(("//", "#")):
                    vals[key.split(":")[0]] = value
            profile = vals.get("CMAKE_BUILD_TYPE", "?").lower()
            on = lambda k: "on" if vals.get(k, "OFF").upper() in ("ON", "1", "TRUE") or profile == "debug" else "off"  # noqa: E731
            return f"ns-3.44 built at {root} (profile {profile}, logging {on('NS3_LOG')}, asserts {on('NS3_ASSERT')})"
    profile = suffix.lstrip("-") or "release"
    compiled = _compiled_in(root, suffix)
    return f"ns-3.44 built at {root} (profile {profile} by its library names{compiled}; no CMakeCache.txt found)"


#: Strings in ns-3.44's core library only when logging (a function name that
#: `NS_LOG_FUNCTION` prints in `DefaultSimulatorImpl::ProcessOneEvent`) or asserts
#: (`NS_ASSERT`'s message) are compiled in: both are in the PyPI wheel's, neither in a release
#: build's.
LOG_MARK = b"\0ProcessOneEvent\0"
ASSERT_MARK = b"NS_ASSERT failed, cond="


def _compiled_in(root: Path, suffix: str) -> str:
    """", logging on|off, asserts on|off by its core library's strings" for a build configured
    elsewhere (no CMakeCache.txt to read), or "" if the library cannot be read. The file (found
    where the compile step finds it, `_ns3_libdir`) is mapped, not read into memory."""
    try:
        core = _ns3_libdir(root, suffix) / f"lib{NS3_LIB_PREFIX}-core{suffix}.so"
        with open(core, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as lib:
            on = lambda mark: "on" if lib.find(mark) >= 0 else "off"  # noqa: E731
            return f", logging {on(LOG_MARK)}, asserts {on(ASSERT_MARK)} by its core library's strings"
    except (Ns3PeerError, OSError, ValueError):  # missing, unreadable, or empty (mmap refuses 0 bytes)
        return ""


#: What the wheel is (the default peer).
WHEEL = f"the PyPI wheel ns3=={NS3_VERSION} (release profile with logging and asserts compiled in)"


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Serialise ensure() across processes (parallel `run`s share one venv)."""
    NS3_HOME.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _install_ns3() -> Path:
    if not _venv_python().exists():
        _log(f"creating venv {VENV}")
        r = subprocess.run(
            [sys.executable, "-m", "venv", str(VENV)], capture_output=True, text=True
        )
        if r.returncode != 0:
            raise Ns3PeerError(
                f"`{sys.executable} -m venv {VENV}` failed (is the venv/ensurepip module "
                f"installed?):\n{r.stderr.strip()[-2000:]}"
            )
    root = _ns3_root()
    if root is None:
        # --no-deps: the wheel's only dependency is cppyy (the Python bindings),
        # which dc_bench.cc does not need and which builds C++ from source.
        cmd = [str(_venv_python()), "-m", "pip", "install", "--disable-pip-version-check",
               "--no-deps", f"ns3=={NS3_VERSION}"]  # fmt: skip
        _log(f"installing ns3=={NS3_VERSION} into {VENV} (a few minutes): {shlex.join(cmd)}")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            tail = (r.stdout + r.stderr).strip()[-3000:]
            raise Ns3PeerError(f"pip install ns3=={NS3_VERSION} failed (exit {r.returncode}):\n{tail}")
        root = _ns3_root()
        if root is None:
            raise Ns3PeerError(f"ns3=={NS3_VERSION} installed but no ns3/include/ns3/core-module.h in {VENV}")
    return root


def _needs_build(binary: Path, stamp_path: Path, stamp: str) -> bool:
    if not binary.exists() or not stamp_path.exists():
        return True
    if SOURCE.stat().st_mtime > binary.stat().st_mtime:
        return True
    return stamp_path.read_text() != stamp


def ensure(ns3_dir: str | os.PathLike[str] | None = None) -> Path:
    """Install ns-3.44 into the private venv and (re)build dc_bench if needed; with
    ``ns3_dir``, build dc_bench against that ns-3.44 build instead (module docs).

    Returns the path of the dc_bench binary.  Raises Ns3PeerError with a
    readable message if g++ is missing, pip fails or the build fails.
    """
    if not SOURCE.exists():
        raise Ns3PeerError(f"missing {SOURCE}")
    cxx = _compiler()
    with _locked():
        if ns3_dir is None:
            root, suffix, binary, absolute = _install_ns3(), "", BINARY, False
        else:
            root, suffix = find_build(ns3_dir)
            binary = BUILD_DIR / f"dc_bench-{hashlib.sha1(str(root).encode()).hexdigest()[:12]}"
            absolute = True
        stamp_path = binary.with_name(binary.name + ".cmd")
        tmp = BUILD_DIR / f".{binary.name}.{os.getpid()}.tmp"
        cmd = _compile_cmd(cxx, root, tmp, suffix, absolute)
        stamp = shlex.join(_compile_cmd(cxx, root, binary, suffix, absolute))
        if _needs_build(binary, stamp_path, stamp):
            BUILD_DIR.mkdir(parents=True, exist_ok=True)
            _log(f"compiling {SOURCE.name} -> {binary}")
            try:
                r = subprocess.run(cmd, capture_output=True, text=True)
            except BaseException:  # Ctrl-C: no half-written binary left behind
                tmp.unlink(missing_ok=True)
                raise
            if r.returncode != 0:
                tmp.unlink(missing_ok=True)
                raise Ns3PeerError(
                    f"compiling dc_bench.cc failed (exit {r.returncode}):\n"
                    f"{shlex.join(cmd)}\n{r.stderr.strip()[-4000:]}"
                )
            os.replace(tmp, binary)  # atomic: concurrent readers never see half a file
            stamp_path.write_text(stamp)
    return binary


def is_installed() -> bool:
    """True when the venv with ns-3 and the compiled binary are present."""
    return _venv_python().exists() and _ns3_root() is not None and BINARY.exists()


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def _parse_summary(stdout: str) -> dict:
    """Parse dc_bench's `key=value ...` summary line (events, finished, ...)."""
    info: dict = {}
    for line in stdout.splitlines():
        if line.startswith("flows="):
            for kv in line.split():
                k, _, v = kv.partition("=")
                try:
                    info[k] = int(v)
                except ValueError:
                    try:
                        info[k] = float(v)
                    except ValueError:
                        info[k] = v
    return info


def run(
    flows: str | os.PathLike,
    out: str | os.PathLike,
    leaves: int = 2,
    hosts_per_leaf: int = 16,
    spines: int = 4,
    rate_gbps: float = 10,
    delay_ns: int = 3000,
    buffer_per_port_bytes: int = 350000,
    ecn_k_pkts: int = 10,
    stop_s: float | None = None,
    *,
    ecmp_seed: int = 1,
    timeout_s: float | None = None,
    extra_args: Sequence[str] = (),
    ns3_dir: str | os.PathLike[str] | None = None,
) -> dict:
    """Run one flow list through ns-3.44 and write the FCT record file ``out``.

    ``stop_s=None`` lets the run go until every flow has finished (at most
    last start + 10 s of simulated time); with ``stop_s`` flows still running
    then get ``fct_ns = -1``.  The run always ends early once every flow has
    finished.  ``extra_args`` are passed to dc_bench verbatim (e.g.
    ``["--ecmp=flowid", "--fctAt=sender"]``; see ``dc_bench --PrintHelp``).

    Returns ``{"wall_s", "peak_rss_mb", "out", ...}``: wall time of the
    simulator process (perf_counter around it, excluding install/compile),
    its own peak RSS (os.wait4 rusage of that child only), and dc_bench's
    summary: ``flows``, ``finished``, ``events`` (ns-3 events executed),
    ``ecn_marks``, ``drops``, ``sim_end_s``, ``run_wall_s`` (Simulator::Run only), and
    ``ns3``, which ns-3 ran: the wheel, or the build at ``ns3_dir`` (module docs).
    """
    binary = ensure(ns3_dir)
    ns3 = WHEEL if ns3_dir is None else describe_build(*find_build(ns3_dir))
    flows = Path(flows).resolve()
    out = Path(out).resolve()
    if not flows.is_file():
        raise Ns3PeerUsage(f"flow list not found: {flows}")
    with open(flows, errors="replace") as fh:
        if not any(line.strip() and not line.lstrip().startswith("#") for line in fh):
            # dc_bench would run (in milliseconds) and a wall time of nothing would be reported.
            raise Ns3PeerUsage(f"flow list {flows} has no flows; give one with at least one flow")
    out.parent.mkdir(parents=True, exist_ok=True)
    # dc_bench writes its records beside ``out`` under another name, renamed to ``out`` once the
    # run has succeeded: a run cut short (Ctrl-C, a timeout, a crash) leaves no records file that
    # looks whole.
    tmp_out = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    cmd = [
        str(binary),
        f"--flows={flows}",
        f"--out={tmp_out}",
        f"--leaves={int(leaves)}",
        f"--hostsPerLeaf={int(hosts_per_leaf)}",
        f"--spines={int(spines)}",
        f"--rateGbps={float(rate_gbps)!r}",
        f"--delayNs={int(delay_ns)}",
        f"--bufferBytes={int(buffer_per_port_bytes)}",
        f"--ecnK={int(ecn_k_pkts)}",
        f"--ecmpSeed={int(ecmp_seed)}",
        *([f"--stopS={float(stop_s)!r}"] if stop_s is not None else []),
        *extra_args,
    ]
    log_path = out.with_name(out.name + ".log")
    try:
        child = _cli.run_timed(cmd, log_path, timeout_s)
        text, wall, usage = child.text, child.wall_s, child.usage
        if child.timed_out:
            raise TimeoutError(f"dc_bench exceeded {timeout_s} s; partial log in {log_path}")
        if child.returncode != 0:
            raise Ns3PeerError(
                f"dc_bench failed (exit {child.returncode}): {shlex.join(cmd)}\n{text.strip()[-3000:]}"
            )
        if tmp_out.exists():
            os.replace(tmp_out, out)
    finally:
        tmp_out.unlink(missing_ok=True)
    result = {
        "wall_s": round(wall, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024.0, 1),  # Linux: KiB
        "out": str(out),
        "ns3": ns3,
    }
    for k, v in _parse_summary(text).items():
        result.setdefault(k, v)
    result["log"] = str(log_path)
    return result


# --------------------------------------------------------------------------
# Summaries (the per-class table of README.md)
# --------------------------------------------------------------------------

CLASSES = ("short", "mid", "long", "incast", "all")


def flow_class(size: int, incast: int) -> str:
    """short < 100 KB, long >= 1 MB, mid in between (non-incast); incast."""
    if incast:
        return "incast"
    if size < 100_000:
        return "short"
    if size >= 1_000_000:
        return "long"
    return "mid"


def _pct(sorted_vals: list[float], q: float) -> float | None:
    """Percentile with linear interpolation (numpy's default)."""
    if not sorted_vals:
        return None
    k = (len(sorted_vals) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (k - lo)


def read_records(path: str | os.PathLike) -> list[dict]:
    """The records of a peer's FCT file; Ns3PeerUsage naming the file and line if one is not a
    whole record (a run cut short leaves a truncated last line)."""
    recs = []
    with open(path, errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            f = line.split()
            try:
                if len(f) < 9:
                    raise ValueError
                recs.append({
                    "id": int(f[0]), "src": int(f[1]), "dst": int(f[2]), "start_s": float(f[3]),
                    "size": int(f[4]), "incast": int(f[5]), "fct_ns": float(f[6]),
                    "ideal_ns": float(f[7]), "slowdown": float(f[8]),
                })  # fmt: skip
            except ValueError:
                raise Ns3PeerUsage(
                    f"{path}: line {n}: {line.strip()[:80]!r} is not a record (`id src dst start_s size_bytes "
                    "incast fct_ns ideal_ns slowdown`); was the run cut short? Run it again") from None
    return recs


def summarize(path: str | os.PathLike) -> dict:
    """Per class: flows, finished, p50/p95/p99 slowdown of finished flows (None if none)."""
    recs = read_records(path)
    res = {}
    for c in CLASSES:
        rs = [r for r in recs if c == "all" or flow_class(r["size"], r["incast"]) == c]
        sd = sorted(r["slowdown"] for r in rs if r["fct_ns"] >= 0)
        res[c] = {
            "flows": len(rs),
            "finished": len(sd),
            "p50": _pct(sd, 0.50),
            "p95": _pct(sd, 0.95),
            "p99": _pct(sd, 0.99),
        }
    return res


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


@_cli.interruptible
def _main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="ns3peer.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("ensure", help="install ns-3.44 into the private venv and build dc_bench")
    e.add_argument("--ns3-dir", metavar="DIR", default=os.environ.get("NS3_DIR") or None,
                   help="build dc_bench against this ns-3.44 build instead of the wheel (default: $NS3_DIR)")
    sub.add_parser("is-installed", help="print whether venv + binary are present")
    r = sub.add_parser("run", help="run a flow list through ns-3.44")
    r.add_argument("--flows", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--leaves", type=int, default=2)
    r.add_argument("--hosts-per-leaf", type=int, default=16)
    r.add_argument("--spines", type=int, default=4)
    r.add_argument("--rate-gbps", type=float, default=10)
    r.add_argument("--delay-ns", type=int, default=3000)
    r.add_argument("--buffer-per-port-bytes", type=int, default=350000)
    r.add_argument("--ecn-k-pkts", type=int, default=10)
    r.add_argument("--stop-s", type=float, default=None)
    r.add_argument("--ecmp-seed", type=int, default=1)
    r.add_argument("--timeout-s", type=float, default=None)
    r.add_argument("--ns3-dir", metavar="DIR", default=os.environ.get("NS3_DIR") or None,
                   help="run dc_bench built against this ns-3.44 build instead of the wheel (default: $NS3_DIR)")
    r.add_argument("extra", nargs="*", help="after `--`: extra dc_bench flags, e.g. -- --ecmp=flowid")
    s = sub.add_parser("summarize", help="per-class slowdown percentiles of record files")
    s.add_argument("files", nargs="+")
    a = ap.parse_args(list(argv) if argv is not None else None)
    try:
        if a.cmd == "ensure":
            print(json.dumps({"binary": str(ensure(a.ns3_dir))}))
        elif a.cmd == "is-installed":
            print(json.dumps({"installed": is_installed()}))
        elif a.cmd == "run":
            res = run(
                a.flows, a.out, leaves=a.leaves, hosts_per_leaf=a.hosts_per_leaf,
                spines=a.spines, rate_gbps=a.rate_gbps, delay_ns=a.delay_ns,
                buffer_per_port_bytes=a.buffer_per_port_bytes, ecn_k_pkts=a.ecn_k_pkts,
                stop_s=a.stop_s, ecmp_seed=a.ecmp_seed, timeout_s=a.timeout_s,
                extra_args=a.extra, ns3_dir=a.ns3_dir,
            )  # fmt: skip
            print(json.dumps(res))
        elif a.cmd == "summarize":
            print(json.dumps({f: summarize(f) for f in a.files}))
    except (Ns3PeerError, TimeoutError, OSError) as e:
        print(f"ns3peer: error: {e}", file=sys.stderr)
        return 2 if isinstance(e, Ns3PeerUsage) else 1
    return 0


if __name__ == "__main__":
    sys.exit(_main())
