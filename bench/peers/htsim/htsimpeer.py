#!/usr/bin/env python3
"""UEC htsim reference peer for slacknet benchmarks (stdlib only).

Runs a slacknet flow list (``id src dst start_s size_bytes incast``) through UEC htsim's
``htsim_uec -sender_cc_algo dctcp`` on the same leaf-spine, and writes FCTs in slacknet's
record format (``id src dst start_s size_bytes incast fct_ns ideal_ns slowdown``), like
``bench/peers/ns3/ns3peer.py`` does for ns-3.44.

Nothing here is needed to install or test slacknet, and nothing of htsim is in this
repository: the user points to a checkout of UEC htsim (github.com/ultraethernet/uet-htsim;
the repository root, its ``htsim/`` folder or ``htsim/sim/``) with ``$HTSIM_DIR`` or
``--htsim DIR``. ``ensure`` builds ``htsim_uec`` from it with CMake and make into a cache
outside the checkout, ``~/.cache/slacknet/htsim-<commit>-quiet`` (``$SLACKNET_HTSIM_HOME``
replaces ``~/.cache/slacknet``), so the checkout stays clean and each commit is built once.

What is timed is htsim's simulation, not a debugging print: its DCTCP writes a line per ACK
with ``std::endl`` (``UecSrc::updateCwndOnAck_DCTCP``: ``... " DCTCP start " ... << endl``), a
flushed write per line, 390,000 on the 256-host comparison run, 0.67-0.70 s of its 3.24-3.28 s
(2026-11-27). ``ensure`` therefore builds from a copy of the checkout's ``sim/`` folder with that
one statement removed (:func:`quiet_source`; nothing else differs, and every ``finished at``
line is the same); ``as_shipped=True`` (``ensure --as-shipped``, ``run --as-shipped``) builds
the checkout as it is, into ``htsim-<commit>``.

The conversions are plain functions, tested without htsim (``tests/test_compare_htsim.py``):

- :func:`connection_matrix`: flow list -> htsim connection matrix (``src->dst id I start T
  size B``; flow ids shifted by one since htsim forbids id 0; ``start`` in whole microseconds,
  truncated as htsim itself would, see :func:`htsim_start_us`);
- :func:`topology_file`: leaf-spine -> htsim's fat-tree topology file (two tiers, one pod);
- :func:`parse_finished` and :func:`fct_lines`: htsim's ``Flow ... flowId I ... finished at
  T`` lines -> our per-flow records.

CLI (stdout is exactly one JSON line; progress goes to stderr)::

    python bench/peers/htsim/htsimpeer.py ensure [--htsim DIR]
    python bench/peers/htsim/htsimpeer.py run --flows F --out O [--leaves 2] [--stop-s 0.1] ...
    python bench/peers/htsim/htsimpeer.py summarize O [O2 ...]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
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

CACHE = Path(os.environ.get("SLACKNET_HTSIM_HOME") or Path.home() / ".cache" / "slacknet")
BINARY_NAME = "htsim_uec"

#: htsim's MTU for our runs: the whole packet (its UEC header is 64 B, so 1,436 B of payload).
MTU_BYTES = 1500


class HtsimPeerError(RuntimeError):
    """Anything that stops the htsim peer from being found, built or run."""


class HtsimPeerUsage(HtsimPeerError):
    """A bad argument (a folder that is not a checkout, a bad flow list): exit code 2 from the CLI."""


def _log(msg: str) -> None:
    print(f"[htsimpeer] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Finding and building the checkout
# --------------------------------------------------------------------------


def find_checkout(htsim_dir: str | os.PathLike[str] | None = None) -> Path:
    """The ``sim/`` folder (the one with ``CMakeLists.txt`` and ``datacenter/main_uec.cpp``)
    of the checkout given by ``htsim_dir`` or ``$HTSIM_DIR``.

    Raises HtsimPeerError with a one-line reason when neither is set or the folder is not a
    UEC htsim checkout."""
    given = htsim_dir if htsim_dir is not None else os.environ.get("HTSIM_DIR")
    if not given:
        raise HtsimPeerUsage(
            "HTSIM_DIR is not set: point it (or --htsim) to a checkout of UEC htsim "
            "(github.com/ultraethernet/uet-htsim)"
        )
    root = Path(given).expanduser().resolve()
    for sim in (root / "htsim" / "sim", root / "sim", root):
        if (sim / "datacenter" / "main_uec.cpp").is_file() and (sim / "CMakeLists.txt").is_file():
            return sim
    raise HtsimPeerUsage(
        f"HTSIM_DIR / --htsim {root}: not a UEC htsim checkout (no htsim/sim/datacenter/main_uec.cpp with a "
        "CMakeLists.txt); give a checkout of github.com/ultraethernet/uet-htsim"
    )


def checkout_id(sim: Path) -> str:
    """Build-cache key of a checkout: its commit (12 hex digits), with ``-dirty`` when it has
    local changes, or a hash of its path when it is not a git work tree."""
    try:
        head = subprocess.run(["git", "-C", str(sim), "rev-parse", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(sim), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head[:12] + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "path-" + hashlib.sha1(str(sim).encode()).hexdigest()[:12]


def _cache_dir(cid: str, as_shipped: bool) -> Path:
    """The build folder of a checkout with id `cid` (`checkout_id`)."""
    return CACHE / f"htsim-{cid}{'' if as_shipped else '-quiet'}"


def build_dir(sim: Path, as_shipped: bool = False) -> Path:
    return _cache_dir(checkout_id(sim), as_shipped)


def binary_path(sim: Path, as_shipped: bool = False) -> Path:
    return build_dir(sim, as_shipped) / "datacenter" / BINARY_NAME


#: The per-ACK debugging print of htsim_uec's DCTCP (uec.cpp, ``updateCwndOnAck_DCTCP``): one
#: statement, from ``cout`` to its ``;``, that prints ``... DCTCP start <name> cwnd ...``.
DCTCP_PRINT = re.compile(r'\n[ \t]*cout\s*<<\s*timeAsUs\(eventlist\(\)\.now\(\)\)\s*<<\s*" DCTCP start "[^;]*;')
#: The file that holds it, relative to ``sim/``.
DCTCP_FILE = "uec.cpp"


def without_dctcp_print(source: str) -> tuple[str, int]:
    """``source`` with the DCTCP debugging print removed, and how many statements were removed."""
    return DCTCP_PRINT.subn("", source)


def quiet_source(sim: Path, dest: Path) -> bool:
    """Mirror the checkout's ``sim/`` folder into ``dest`` with the DCTCP debugging print
    removed from ``uec.cpp``; True if it was there. Only files whose bytes differ are written
    (and files gone from the checkout removed), so make rebuilds what changed."""
    # Symbolic links are left out: htsim's CMake links datacenter/htsim_uec to the binary it
    # builds, in the folder it builds from.
    wanted: dict[Path, bytes] = {}
    for f in sim.rglob("*"):
        if f.is_file() and not f.is_symlink() and ".git" not in f.relative_to(sim).parts:
            wanted[f.relative_to(sim)] = f.read_bytes()
    removed = 0
    if Path(DCTCP_FILE) in wanted:
        text, removed = without_dctcp_print(wanted[Path(DCTCP_FILE)].decode("utf-8", "surrogateescape"))
        wanted[Path(DCTCP_FILE)] = text.encode("utf-8", "surrogateescape")
    dest.mkdir(parents=True, exist_ok=True)
    for f in [p for p in dest.rglob("*") if p.is_file() and not p.is_symlink()]:
        if f.relative_to(dest) not in wanted:
            f.unlink()
    for rel, data in wanted.items():
        target = dest / rel
        if target.is_file() and target.read_bytes() == data:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return removed > 0


@contextlib.contextmanager
def _locked(dirpath: Path) -> Iterator[None]:
    """Serialise builds of one cache folder across processes."""
    dirpath.mkdir(parents=True, exist_ok=True)
    with open(dirpath / ".ensure.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run_build(cmd: list[str], what: str) -> None:
    _log(f"{what}: {shlex.join(cmd)}")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stdout + r.stderr).strip()[-4000:]
        raise HtsimPeerError(f"{what} failed (exit {r.returncode}): {shlex.join(cmd)}\n{tail}")


def ensure(htsim_dir: str | os.PathLike[str] | None = None, as_shipped: bool = False) -> Path:
    """Build ``htsim_uec`` from the checkout into its cache folder if needed; return the binary.

    Without its DCTCP debugging print unless ``as_shipped`` (module docs). A clean commit that
    was built once is not looked at again; a dirty tree, or one that is not a git work tree, is
    re-made every time (make is incremental). Raises HtsimPeerError if cmake or a C++17 compiler
    is missing or the build fails."""
    sim = find_checkout(htsim_dir)
    cid = checkout_id(sim)
    build = _cache_dir(cid, as_shipped)
    binary = build / "datacenter" / BINARY_NAME
    is_pinned = not (cid.endswith("-dirty") or cid.startswith("path-"))
    if binary.exists() and is_pinned:
        return binary
    for tool in ("cmake", "make"):
        if not shutil.which(tool):
            raise HtsimPeerError(f"{tool} not found: building htsim needs cmake, make and a C++17 compiler")
    with _locked(build):
        source = sim
        if not as_shipped:
            source = build.with_name(build.name + "-src")
            if not quiet_source(sim, source):
                _log(f"no DCTCP debugging print found in {sim / DCTCP_FILE}: building it as it is")
        if not (build / "CMakeCache.txt").exists():
            _run_build(["cmake", "-S", str(source), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"],
                       "configuring htsim")
        jobs = str(max(1, min(4, os.cpu_count() or 1)))
        _log(f"building {BINARY_NAME} into {build} (a few minutes the first time)")
        _run_build(["make", "-C", str(build), f"-j{jobs}", BINARY_NAME], f"building {BINARY_NAME}")
    if not binary.exists():
        raise HtsimPeerError(f"the build finished but {binary} is missing")
    return binary


def is_installed(htsim_dir: str | os.PathLike[str] | None = None, as_shipped: bool = False) -> bool:
    """True when a checkout is given and its ``htsim_uec`` is built."""
    try:
        return binary_path(find_checkout(htsim_dir), as_shipped).exists()
    except HtsimPeerError:
        return False


# --------------------------------------------------------------------------
# Conversions (pure; tested without htsim)
# --------------------------------------------------------------------------


def read_flows(text: str) -> list[tuple[int, int, int, float, int, int]]:
    """Parse a flow list: ``(id, src, dst, start_s, size_bytes, incast)`` per line."""
    flows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        f = line.split()
        expected = f"flow list line {n}: {line.strip()!r}: expected `id src dst start_s size_bytes [incast]`"
        if len(f) < 5:
            raise HtsimPeerUsage(expected)
        try:
            incast = int(f[5]) if len(f) > 5 else 0
            flow = (int(f[0]), int(f[1]), int(f[2]), float(f[3]), int(f[4]), incast)
        except ValueError:
            raise HtsimPeerUsage(f"{expected} (whole numbers, start_s in seconds)") from None
        if not (math.isfinite(flow[3]) and flow[3] >= 0):
            raise HtsimPeerUsage(f"flow list line {n}: start_s {f[3]}: give a time in seconds, at least 0")
        flows.append(flow)
    return flows


def htsim_start_us(start_s: float) -> int:
    """The start time htsim gets for a flow starting at ``start_s``: whole microseconds.

    htsim_uec starts a connection at ``timeFromUs((uint32_t)start)`` (uec.cpp,
    ``UecSrc::connectPort``): it truncates, so a flow starts up to 1 us early. We write that
    truncated value ourselves (from whole nanoseconds, so float noise cannot move a start across
    a microsecond) and measure FCTs from it (:func:`fct_lines`)."""
    return round(start_s * 1e9) // 1000


def connection_matrix(flows: Sequence[tuple[int, int, int, float, int, int]], num_hosts: int) -> str:
    """htsim connection matrix for ``flows`` on ``num_hosts`` hosts.

    Flow ``i`` becomes htsim flow id ``i + 1`` (htsim rejects id 0); ``start`` is in whole
    microseconds (:func:`htsim_start_us`)."""
    lines = [f"Nodes {num_hosts}", f"Connections {len(flows)}"]
    for fid, src, dst, start_s, size, _incast in flows:
        if not (0 <= src < num_hosts and 0 <= dst < num_hosts) or src == dst:
            raise HtsimPeerUsage(f"flow {fid}: src {src} / dst {dst} not two distinct hosts of 0..{num_hosts - 1}")
        if size <= 0 or size >= 2**31:
            raise HtsimPeerUsage(f"flow {fid}: size {size} B outside htsim's 1..2^31-1")
        lines.append(f"{src}->{dst} id {fid + 1} start {htsim_start_us(start_s)} size {size}")
    return "\n".join(lines) + "\n"


def topology_file(leaves: int, hosts_per_leaf: int, spines: int, rate_gbps: float, delay_ns: int) -> str:
    """htsim's topology file for our leaf-spine: a two-tier fat tree with one pod, ``leaves``
    ToRs of ``hosts_per_leaf`` hosts and ``spines`` uplinks each, and ``spines`` top switches
    with one link to every ToR; one rate and one delay on every link, no switch latency."""
    for name, v in (("leaves", leaves), ("hosts_per_leaf", hosts_per_leaf), ("spines", spines)):
        if int(v) < 1:
            raise HtsimPeerUsage(f"{name} = {v}: the leaf-spine needs at least 1")
    if not (math.isfinite(float(rate_gbps)) and rate_gbps > 0) or float(rate_gbps) != int(rate_gbps):
        raise HtsimPeerUsage(f"htsim topology files take whole Gb/s, not {rate_gbps}")
    if hosts_per_leaf % spines:
        raise HtsimPeerUsage(
            f"htsim needs hosts_per_leaf ({hosts_per_leaf}) to be a multiple of spines ({spines}): "
            "its oversubscription factor is an integer"
        )
    n = leaves * hosts_per_leaf
    rate = int(rate_gbps)
    return (
        f"Nodes {n}\nTiers 2\nPodsize {n}\n\n"
        f"Tier 0\nDownlink_speed_Gbps {rate}\nRadix_Down {hosts_per_leaf}\nRadix_Up {spines}\n"
        f"Downlink_Latency_ns {int(delay_ns)}\nSwitch_Latency_ns 0\nOversubscribed {hosts_per_leaf // spines}\n\n"
        f"Tier 1\nDownlink_speed_Gbps {rate}\nRadix_Down {leaves}\nDownlink_Latency_ns {int(delay_ns)}\n"
        "Switch_Latency_ns 0\n"
    )


# htsim prints progress dots without a newline, so a line may start with some.
_FINISHED = re.compile(r"^\.*Flow \S+ flowId (\d+) .*? finished at ([0-9.eE+-]+)")
_COUNTS = re.compile(r"^New: (\d+) Rtx: (\d+) RTS: (\d+) Bounced: (\d+) ACKs: (\d+) NACKs: (\d+)")


def parse_finished(stdout: str) -> dict[int, float]:
    """htsim flow id -> time (us) at which the sender saw the last byte acknowledged, from
    htsim_uec's ``Flow <name> flowId <id> <name> finished at <us> ...`` lines."""
    done: dict[int, float] = {}
    for line in stdout.splitlines():
        m = _FINISHED.match(line)
        if m:
            done.setdefault(int(m.group(1)), float(m.group(2)))
    return done


def parse_counts(stdout: str) -> dict[str, int]:
    """The packet counts htsim_uec prints at the end (``New: .. Rtx: ..``), or ``{}``."""
    for line in reversed(stdout.splitlines()):
        m = _COUNTS.match(line)
        if m:
            keys = ("new_pkts", "rtx_pkts", "rts_pkts", "bounced_pkts", "acks", "nacks")
            return {k: int(v) for k, v in zip(keys, m.groups())}
    return {}


def ideal_ns(size: int, rate_gbps: float, delay_ns: int) -> float:
    """The peer-bench ideal FCT: the longest path's base RTT (8 link delays) plus the size at
    line rate (``24000 + size*8/10`` ns for 3 us, 10 Gb/s; data/peer-bench/README.md)."""
    return 8 * delay_ns + size * 8 / rate_gbps


def fct_lines(
    flows: Sequence[tuple[int, int, int, float, int, int]],
    finished_us: dict[int, float],
    rate_gbps: float,
    delay_ns: int,
) -> list[str]:
    """Our record lines for ``flows`` from htsim's finish times (keyed by htsim id = id + 1).

    ``fct_ns`` = finish - the start htsim used (:func:`htsim_start_us`), the time htsim took
    for the flow; -1 if unfinished. (data/peer-bench's committed htsim files subtract the
    list's exact start instead, so their FCTs are shorter by the start's sub-microsecond part.)
    htsim prints the finish time in microseconds to 6 significant digits, so FCTs are exact to
    about 0.1 us for finishes between 10 and 100 ms."""
    out = ["# id src dst start_s size_bytes incast fct_ns ideal_ns slowdown (fct_ns=-1: unfinished; htsim_uec)"]
    for fid, src, dst, start_s, size, incast in flows:
        ideal = ideal_ns(size, rate_gbps, delay_ns)
        t = finished_us.get(fid + 1)
        if t is None:
            fct, sd = -1, -1.0
        else:
            fct = round(t * 1e3 - htsim_start_us(start_s) * 1e3)
            sd = fct / ideal
        # ideal_ns is written truncated to whole ns, as in data/peer-bench's files.
        out.append(f"{fid} {src} {dst} {start_s:.9g} {size} {incast} {fct} {int(ideal)} {sd:.6g}")
    return out


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def run(
    flows: str | os.PathLike[str],
    out: str | os.PathLike[str],
    leaves: int = 2,
    hosts_per_leaf: int = 16,
    spines: int = 4,
    rate_gbps: float = 10,
    delay_ns: int = 3000,
    buffer_per_port_bytes: int = 233 * MTU_BYTES,
    ecn_k_pkts: int = 10,
    stop_s: float | None = None,
    *,
    ecmp_seed: int = 1,
    paths: int | None = 1,
    htsim_dir: str | os.PathLike[str] | None = None,
    timeout_s: float | None = None,
    extra_args: Sequence[str] = (),
    as_shipped: bool = False,
) -> dict:
    """Run one flow list through ``htsim_uec -sender_cc_algo dctcp`` and write ``out``.

    Switch ports hold ``buffer_per_port_bytes // 1500`` packets of 1,500 B (static, per port),
    mark ECN above ``ecn_k_pkts`` packets, and drop instead of trimming. ``paths`` is htsim's
    ``-paths``, the path entropies per flow: 1 (the default) is per-flow ECMP, every packet of a
    flow hashed onto one spine by the switches, as ns-3's ECMP; ``None`` keeps htsim's default
    (64 entropies per flow, packets spread over the spines). ``ecmp_seed`` is htsim's ``-seed``
    (its hash; default 1). With these defaults, the S1 and S2 flow lists reproduce
    data/peer-bench's committed htsim results exactly (README.md). ``stop_s=None`` runs until
    every flow has finished (at most last start + 10 s); htsim stops by itself once no traffic
    is left. ``as_shipped`` runs the checkout's htsim_uec with its DCTCP debugging print (module
    docs); the default build has it removed.

    Returns ``{"wall_s", "peak_rss_mb", "out", "flows", "finished", "rtx_pkts", ...}``: the
    wall time of the htsim process (excluding the build), its peak RSS (os.wait4 rusage of
    that child only) and the packet counts htsim prints. htsim reports no event count and no
    drop count (``rtx_pkts``, the retransmitted packets, is the closest it prints)."""
    binary = ensure(htsim_dir, as_shipped)
    flows_path = Path(flows).resolve()
    out = Path(out).resolve()
    if not flows_path.is_file():
        raise HtsimPeerUsage(f"flow list not found: {flows_path}")
    flow_recs = read_flows(flows_path.read_text())
    if not flow_recs:
        # htsim would run (in milliseconds) and a wall time of nothing would be reported.
        raise HtsimPeerUsage(f"flow list {flows_path} has no flows; give one with at least one flow")
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.with_suffix("")
    cm = stem.with_name(stem.name + ".cm")
    topo = stem.with_name(stem.name + ".topo")
    cm.write_text(connection_matrix(flow_recs, leaves * hosts_per_leaf))
    topo.write_text(topology_file(leaves, hosts_per_leaf, spines, rate_gbps, delay_ns))
    if stop_s is None:
        stop_s = max((f[3] for f in flow_recs), default=0.0) + 10.0
    elif not (math.isfinite(stop_s) and stop_s > 0):
        raise HtsimPeerUsage(f"stop_s {stop_s}: give a positive time in seconds, or leave it out to run every flow to its end")
    end_us = int(round(stop_s * 1e6))
    if end_us >= 2**31:
        raise HtsimPeerUsage(f"stop_s {stop_s} is beyond htsim's -end range (2^31 us)")
    queue_pkts = int(buffer_per_port_bytes) // MTU_BYTES
    cmd = [
        str(binary),
        "-tm", str(cm),
        "-topo", str(topo),
        "-linkspeed", str(int(round(float(rate_gbps) * 1000))),  # Mb/s: the NICs' rate
        "-mtu", str(MTU_BYTES),
        "-q", str(queue_pkts),
        "-ecn", str(int(ecn_k_pkts)), str(int(ecn_k_pkts)),
        "-disable_trim",
        "-sender_cc_algo", "dctcp",
        "-end", str(end_us),
        "-o", str(stem.with_name(stem.name + ".htsim.dat")),
        "-seed", str(int(ecmp_seed)),
        *(["-paths", str(int(paths))] if paths is not None else []),
        *extra_args,
    ]  # fmt: skip
    log_path = out.with_name(out.name + ".log")
    child = _cli.run_timed(cmd, log_path, timeout_s, cwd=out.parent)
    text, wall, usage = child.text, child.wall_s, child.usage
    if child.timed_out:
        raise TimeoutError(f"htsim_uec exceeded {timeout_s} s; partial log in {log_path}")
    if child.returncode != 0:
        raise HtsimPeerError(f"htsim_uec failed (exit {child.returncode}): {shlex.join(cmd)}\n{text.strip()[-3000:]}")
    finished = parse_finished(text)
    # Written beside ``out`` under another name, then renamed: cut short (Ctrl-C), no records
    # file that looks whole is left.
    tmp_out = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        tmp_out.write_text("\n".join(fct_lines(flow_recs, finished, rate_gbps, delay_ns)) + "\n")
        os.replace(tmp_out, out)
    finally:
        tmp_out.unlink(missing_ok=True)
    result: dict = {
        "wall_s": round(wall, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024.0, 1),  # Linux: KiB
        "out": str(out),
        "flows": len(flow_recs),
        "finished": sum(1 for f in flow_recs if f[0] + 1 in finished),
        "cmd": shlex.join(cmd),
        "log": str(log_path),
        "as_shipped": as_shipped,
    }
    result.update(parse_counts(text))
    return result


def summarize(path: str | os.PathLike[str]) -> dict:
    """Per-class slowdown percentiles of a record file (the same table as ns3peer.py)."""
    sys.path.insert(0, str(HERE.parent / "ns3"))
    import ns3peer  # stdlib-only sibling

    try:
        return ns3peer.summarize(path)
    except ns3peer.Ns3PeerError as e:
        raise HtsimPeerUsage(str(e)) from None


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


@_cli.interruptible
def _main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="htsimpeer.py", description=(__doc__ or "").split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("ensure", help="build htsim_uec from $HTSIM_DIR (or --htsim) into the cache")
    e.add_argument("--htsim", metavar="DIR", help="UEC htsim checkout (default: $HTSIM_DIR)")
    e.add_argument("--as-shipped", action="store_true", help="keep htsim's per-ACK DCTCP debugging print")
    i = sub.add_parser("is-installed", help="print whether a checkout is given and its htsim_uec is built")
    i.add_argument("--htsim", metavar="DIR")
    i.add_argument("--as-shipped", action="store_true")
    r = sub.add_parser("run", help="run a flow list through htsim_uec")
    r.add_argument("--htsim", metavar="DIR", help="UEC htsim checkout (default: $HTSIM_DIR)")
    r.add_argument("--flows", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--leaves", type=int, default=2)
    r.add_argument("--hosts-per-leaf", type=int, default=16)
    r.add_argument("--spines", type=int, default=4)
    r.add_argument("--rate-gbps", type=float, default=10)
    r.add_argument("--delay-ns", type=int, default=3000)
    r.add_argument("--buffer-per-port-bytes", type=int, default=233 * MTU_BYTES)
    r.add_argument("--ecn-k-pkts", type=int, default=10)
    r.add_argument("--stop-s", type=float, default=None)
    r.add_argument("--ecmp-seed", type=int, default=1, help="htsim's -seed (its ECMP hash; default 1)")
    r.add_argument("--paths", type=int, default=1,
                   help="htsim's -paths, path entropies per flow (default 1: per-flow ECMP; 0: htsim's default)")
    r.add_argument("--timeout-s", type=float, default=None)
    r.add_argument("--as-shipped", action="store_true", help="keep htsim's per-ACK DCTCP debugging print (timed with it)")
    r.add_argument("extra", nargs="*", help="after `--`: extra htsim_uec flags, e.g. -- -load_balancing_algo reps")
    s = sub.add_parser("summarize", help="per-class slowdown percentiles of record files")
    s.add_argument("files", nargs="+")
    a = ap.parse_args(list(argv) if argv is not None else None)
    try:
        if a.cmd == "ensure":
            print(json.dumps({"binary": str(ensure(a.htsim, a.as_shipped))}))
        elif a.cmd == "is-installed":
            print(json.dumps({"installed": is_installed(a.htsim, a.as_shipped)}))
        elif a.cmd == "run":
            res = run(
                a.flows, a.out, leaves=a.leaves, hosts_per_leaf=a.hosts_per_leaf,
                spines=a.spines, rate_gbps=a.rate_gbps, delay_ns=a.delay_ns,
                buffer_per_port_bytes=a.buffer_per_port_bytes, ecn_k_pkts=a.ecn_k_pkts,
                stop_s=a.stop_s, ecmp_seed=a.ecmp_seed, paths=a.paths or None, htsim_dir=a.htsim,
                timeout_s=a.timeout_s, extra_args=a.extra, as_shipped=a.as_shipped,
            )  # fmt: skip
            print(json.dumps(res))
        elif a.cmd == "summarize":
            print(json.dumps({f: summarize(f) for f in a.files}))
    except (HtsimPeerError, TimeoutError, OSError) as e:
        print(f"htsimpeer: error: {e}", file=sys.stderr)
        return 2 if isinstance(e, HtsimPeerUsage) else 1
    return 0


if __name__ == "__main__":
    sys.exit(_main())
