"""`make bench-targets`: issue 15's performance targets next to what this machine measures now,
and whether each holds.

The targets:

- **ls256**: the 256-host comparison scenario (`experiments/compare/ls256.toml`, 1,425 flows) at
  least 5x faster than UEC htsim and 150x faster than ns-3.44, each measured in the same run on
  the same flows;
- **k16**: the k = 16 fat-tree (`experiments/scale/fat_tree_k16.toml`: 1,024 hosts at 100 Gbit/s,
  10 ms) in under 60 s and under 150 MB of peak memory on one core.

How each is measured, and what decides:

- ls256 is `slacknet compare --repeat R` (`slacknet.compare.compare(..., repeat=R)`): every
  simulator runs R times, alternated (slacknet, ns-3, htsim, slacknet, ...), so that all see the
  machine's same load; a ratio is the peer's median wall time over slacknet's. slacknet's wall
  time is the simulation's inside the Python API (what `slacknet compare` reports; `make
  install-pgo` or `PGO=1` makes that the profile-guided extension), the peers' are their whole
  processes. Without an htsim checkout (`--htsim DIR` or `$HTSIM_DIR`) the htsim line says
  "skipped" and the rest runs.
- k16 runs the simulator binary R times (`slacknet-sim SCENARIO`; it is single-threaded, so one
  core) and reads the `cpu time`, `wall time` and `peak memory` lines it prints (parsed by
  `bench/scale_table.py`). The time target is decided by the median of the CPU seconds (user +
  system): they are the one core's work, which other tenants of a shared machine inflate less
  than wall time (they still slow a memory-bound run through the shared cache and memory: on
  2026-11-27 one morning's builds took 56-59 s at 5 am and 74-92 s at 6:40). The minimum and
  the median wall time are printed beside it. The memory target is decided by the largest run.
- Where both peers ran, a line under the comparison says how they compared with each other in
  that run and what each speed-up target is in the other peer's terms (`peer_context`): the two
  targets ask the same only where ns-3 takes 30x htsim's time. On 2026-11-27 it took 29x htsim
  (without htsim's per-ACK debugging print, bench/peers/htsim/README.md); with the print, 19x on
  a quiet machine and 32x on a busy one: ns-3's run is memory-bound, and other tenants slow it
  most (README, "The targets pull apart").
- The ns-3 target names the ns-3 it was measured against: "(PyPI wheel)", the default, which
  has logging and asserts compiled in, or "(own build)" with ``--ns3-dir``/``$NS3_DIR``; the
  comparison's table says which build and profile.
- **The machine, measured beside the runs.** Before and after the k16 runs a pointer chase
  (`bench/memlat.c`, built with the system's `cc` into `target/bench/`) times one dependent load
  over 256 MiB (the memory's latency, what the k16 run waits on), over 16 MiB (whether a large
  last-level cache serves a working set of the 256-host run's size: 17-35 MB) and over 256 KiB (a
  core's cache); the line `machine:` prints all three, so that a slow run can be told from a slow
  machine (on 2026-11-28 one VM took 325 ns and 4.2 ns, and the k16 run 99-110 s, where it had
  run in 56-60 s two days before). Without a C compiler the line says so and the rest runs;
  `--no-calibration` leaves it out.
- **Which machine.** The first line, `processor:`, names the processor and its caches as Linux
  reports them (`/proc/cpuinfo`, `/sys/devices/system/cpu/cpu0/cache`): on 2026-11-29 one VM (AMD,
  32 MiB L3) ran every simulator in about half the time of another (Intel at 2.1 GHz, a 300 MiB
  L3 shared with the host's other tenants, where the 256 MiB chase above is partly in the L3),
  so figures from different machines are read apart.
- **The median decides.** This machine's speed drifts by 10-20% within minutes, so one run
  decides nothing near a threshold; with R = 3 one outlier run moves the verdict neither way.

    python bench/targets.py [--runs 3] [--only ls256|k16] [--binary target/release/slacknet-sim] [--no-calibration]
                            [--htsim DIR] [--ns3-dir DIR] [--out DIR] [--ls256-scenario TOML] [--k16-scenario TOML]

ns-3 takes about 60 s per ls256 run here, the k = 16 run about 60 s: with R = 3 about 6-7
minutes in all (`--only k16` needs no ns-3). The table goes to stdout, each run's progress to
stderr. Bad arguments (a binary that is missing or not executable, `--runs` below 1 or not a
whole number, a missing scenario) are one line and exit code 2, as is a comparison that cannot
run; a simulator run that fails, exit code 1. Otherwise the exit code is 0 whether the targets
hold or not: the table says. Ctrl-C stops it with one line (``interrupted``) and exit code 130.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

_BENCH = str(Path(__file__).resolve().parent)  # bench/: _cli and scale_table (on the path when run as a script)
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
from _cli import Parser, UsageError, interruptible, positive_int  # noqa: E402
from scale_table import field, run_binary  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release" / "slacknet-sim"
LS256 = ROOT / "experiments" / "compare" / "ls256.toml"
K16 = ROOT / "experiments" / "scale" / "fat_tree_k16.toml"

#: Issue 15's thresholds.
HTSIM_SPEEDUP = 5.0
NS3_SPEEDUP = 150.0
K16_SECONDS = 60.0
K16_MB = 150.0

NO_HTSIM = "skipped: no htsim checkout (HTSIM_DIR)"

#: The machine's calibration: a pointer chase, its source and where it is built.
MEMLAT_SRC = ROOT / "bench" / "memlat.c"
MEMLAT_BIN = ROOT / "target" / "bench" / "memlat"
#: Buffer sizes (KiB) and dependent loads of the chase: 256 MiB, far beyond any cache here
#: (about 2 s at 300 ns a load); 16 MiB, within a large shared L3 if one serves this core (0.6 s
#: at 300 ns; on 2026-11-30 an Intel VM whose sysfs names a 300 MiB L3 took about 40 ns over 2-4
#: MiB and 150-170 ns over 8-16 MiB, quiet: none does there beyond a few MiB); and 256 KiB,
#: within a core's L2 (0.2 s).
MEMORY_KIB, MEMORY_HOPS = 256 << 10, 5_000_000
MID_KIB, MID_HOPS = 16 << 10, 2_000_000
CACHE_KIB, CACHE_HOPS = 256, 50_000_000


@dataclass
class Calibration:
    """Nanoseconds one dependent load took over a buffer far beyond the caches, over one of a
    large last-level cache's size, and over one within a core's cache."""

    memory_ns: float
    mid_ns: float
    cache_ns: float


def build_memlat(src: Path = MEMLAT_SRC, out: Path = MEMLAT_BIN) -> Path:
    """The pointer chase, built with the system's C compiler if missing or older than its
    source; RuntimeError naming what is missing if it cannot be."""
    if out.is_file() and out.stat().st_mtime >= src.stat().st_mtime:
        return out
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        raise RuntimeError("no C compiler (cc, or $CC) to build bench/memlat.c")
    out.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([cc, "-O2", "-o", str(out), str(src)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{cc} could not build bench/memlat.c: {(proc.stderr or proc.stdout).strip()[-300:]}")
    return out


def chase_ns(binary: Path, kib: int, hops: int) -> float:
    """One run of the chase: nanoseconds a dependent load over `kib` KiB."""
    proc = subprocess.run([str(binary), str(kib), str(hops)], capture_output=True, text=True, timeout=600)
    try:
        ns = float(proc.stdout.strip())
    except ValueError:
        ns = math.nan
    if proc.returncode != 0 or not (ns > 0 and math.isfinite(ns)):
        raise RuntimeError(f"{binary} {kib} {hops} failed: {(proc.stderr or proc.stdout).strip()[-200:]}")
    return ns


def calibrate(memory: tuple[int, int] = (MEMORY_KIB, MEMORY_HOPS),
              mid: tuple[int, int] = (MID_KIB, MID_HOPS),
              cache: tuple[int, int] = (CACHE_KIB, CACHE_HOPS)) -> Calibration | str:
    """This machine's dependent-load latency over a large, a middle-sized and a small buffer, or
    why not (a string: the calibration is context, never a reason for the benchmark to fail)."""
    try:
        binary = build_memlat()
        return Calibration(memory_ns=chase_ns(binary, *memory), mid_ns=chase_ns(binary, *mid),
                           cache_ns=chase_ns(binary, *cache))
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        return f"skipped: {e}"


def calibration_line(before: Calibration | str, after: Calibration | str) -> str:
    """The `machine:` line printed with the k16 runs."""
    def one(c: Calibration | str) -> str:
        if isinstance(c, str):
            return c
        return (f"{c.memory_ns:.0f} ns over {kib_text(f'{MEMORY_KIB}K')}, {c.mid_ns:.0f} ns over "
                f"{kib_text(f'{MID_KIB}K')}, {c.cache_ns:.1f} ns over {kib_text(f'{CACHE_KIB}K')}")
    return (f"machine: one dependent load (bench/memlat.c) took {one(before)} before the k16 runs; "
            f"{one(after)} after")


def kib_text(size: str) -> str:
    """A cache size as sysfs writes it ("48K", "2048K", "300M") in KiB or, when whole, MiB."""
    m = re.fullmatch(r"(\d+)([KMG]?)", size)
    if m is None:
        return size
    kib = int(m[1]) * {"": 1 / 1024, "K": 1, "M": 1024, "G": 1 << 20}[m[2]]
    return f"{kib // 1024:.0f} MiB" if kib >= 1024 and kib % 1024 == 0 else f"{kib:g} KiB"


def describe_machine(cpuinfo: Path = Path("/proc/cpuinfo"),
                     caches: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> str:
    """The `processor:` line: the processor's model name, how many logical CPUs, and the first
    CPU's caches with the CPUs that share each, as Linux reports them (on a VM, what the host
    lets it see). Rows measured on different machines differ by more than any one change (twice
    the time on one VM as on another, on 2026-11-29), so the output names which machine it
    came from. Parts Linux does not report are said to be unknown, never an error."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except (OSError, ValueError):
        text = ""
    models = re.findall(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    cpus = len(re.findall(r"^processor\s*:", text, re.MULTILINE))
    # No "model name" (Linux on Arm, or no /proc): the architecture at least.
    name = models[0].strip() if models else f"unknown {platform.machine() or 'kind of'} processor"
    line = f"processor: {name}, {plural(cpus, 'logical CPU')}" if cpus else f"processor: {name}"
    found = []
    for index in sorted(caches.glob("index*")):
        try:
            level, kind, size = ((index / f).read_text().strip() for f in ("level", "type", "size"))
            shared = (index / "shared_cpu_list").read_text().strip()
        except (OSError, ValueError):
            continue
        label = f"L{level}" + {"Data": "d", "Instruction": "i"}.get(kind, "")
        found.append(f"{label} {kib_text(size)} (CPUs {shared})")
    return f"{line}; caches: {', '.join(found)}" if found else f"{line}; caches: unknown"


@dataclass
class Verdict:
    """One target: what it asks, what was measured, and whether it holds (yes, no or n/a)."""

    target: str
    measured: str
    holds: str


@dataclass
class K16Run:
    """One run of the simulator binary: seconds and megabytes as it printed them."""

    cpu_s: float
    wall_s: float
    peak_mb: float


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def times(ratio: float) -> str:
    """A speed-up as printed: two decimals below 10x, so that 4.97x never shows as a 5.0x that
    does not hold."""
    return f"{ratio:.0f}x" if ratio >= 10 else f"{ratio:.2f}x"


def ls256_verdicts(cmp: Any, label: str = "ls256") -> list[Verdict]:
    """The two speed-up targets from a `slacknet.compare.Comparison` (medians of its runs)."""
    me = cmp.wall_s["slacknet"]
    out = []
    # Which ns-3: the PyPI wheel has logging and asserts compiled in (a release build of one's own,
    # --ns3-dir, is 1.35-1.43x faster), so the target says which one it was measured against.
    build = cmp.ns3_build
    ns3 = "ns-3.44" + (" (PyPI wheel)" if build.startswith("the PyPI wheel") else " (own build)" if build else "")
    for peer, name, need in (("htsim", "htsim", HTSIM_SPEEDUP), ("ns-3", ns3, NS3_SPEEDUP)):
        target = f"{label}: >= {need:g}x faster than {name}"
        if peer not in cmp.wall_s:
            why = cmp.skipped.get(peer, "it did not run")
            no_checkout = why.startswith("HTSIM_DIR is not set")
            out.append(Verdict(target, NO_HTSIM if no_checkout else f"skipped: {why}", "n/a"))
            continue
        ratio = cmp.wall_s[peer] / me
        measured = f"{me:.3g} s vs {cmp.wall_s[peer]:.3g} s (median of {cmp.repeat}): {times(ratio)}"
        out.append(Verdict(target, measured, "yes" if ratio >= need else "no"))
    return out


def peer_context(cmp: Any) -> str | None:
    """How this run's two peers compare, and what each speed-up target means in the other
    peer's terms: the two targets ask the same only where ns-3 takes NS3_SPEEDUP / HTSIM_SPEEDUP
    (30) times htsim's time. None unless both peers ran."""
    if not {"ns-3", "htsim"} <= cmp.wall_s.keys() or cmp.wall_s["htsim"] <= 0:
        return None
    r = cmp.wall_s["ns-3"] / cmp.wall_s["htsim"]
    return (f"peers in this run: ns-3 took {r:.1f}x htsim's time, so {HTSIM_SPEEDUP:g}x htsim = "
            f"{HTSIM_SPEEDUP * r:.0f}x ns-3 and {NS3_SPEEDUP:g}x ns-3 = {times(NS3_SPEEDUP / r)} htsim "
            f"(the two targets ask the same where ns-3 takes {NS3_SPEEDUP / HTSIM_SPEEDUP:g}x htsim's time)")


def k16_verdicts(runs: list[K16Run], label: str) -> list[Verdict]:
    """The time target (median CPU seconds decide) and the memory target (the largest run)."""
    cpu = [r.cpu_s for r in runs]
    med = statistics.median(cpu)
    measured = (f"CPU min {min(cpu):.1f} / median {med:.1f} s of {len(runs)}; "
                f"wall median {statistics.median(r.wall_s for r in runs):.1f} s")
    verdicts = [Verdict(f"{label}: < {K16_SECONDS:g} s", measured, f"{'yes' if med < K16_SECONDS else 'no'} (median)")]
    mem = [r.peak_mb for r in runs if not math.isnan(r.peak_mb)]
    if mem:
        verdicts.append(Verdict(f"{label}: < {K16_MB:g} MB", f"{max(mem):.0f} MB (max of {len(runs)})",
                                "yes" if max(mem) < K16_MB else "no"))
    else:
        verdicts.append(Verdict(f"{label}: < {K16_MB:g} MB", "not measured (the binary printed no peak memory)", "n/a"))
    return verdicts


def render(verdicts: list[Verdict]) -> str:
    w1 = max(40, *(len(v.target) + 2 for v in verdicts))
    w2 = max(40, *(len(v.measured) + 2 for v in verdicts))
    lines = [f"{'target':<{w1}}{'measured':<{w2}}holds"]
    lines += [f"{v.target:<{w1}}{v.measured:<{w2}}{v.holds}" for v in verdicts]
    held = sum(v.holds.startswith("yes") for v in verdicts)
    skipped = sum(v.holds == "n/a" for v in verdicts)
    lines.append(f"{held} of {len(verdicts) - skipped} targets hold" + (f" ({skipped} not measured)" if skipped else "")
                 + "; medians decide (CPU seconds for k = 16), memory the largest run")
    return "\n".join(lines)


def number(line: str) -> float:
    """The leading number of a printed value (`63.2 MB`, `59.10 s (user + system)`); NaN for `n/a`."""
    head = line.split()[0]
    return math.nan if head == "n/a" else float(head)


def run_k16(binary: Path, scenario: Path) -> K16Run:
    """One run of `binary` on `scenario`: the CPU, wall and peak-memory lines it printed (CPU
    from ``getrusage`` if it printed `n/a`)."""
    _, cpu_rusage, out = run_binary(binary, scenario, cwd=scenario.parent)
    try:
        cpu = number(field(out, "cpu time"))
        return K16Run(cpu_s=cpu_rusage if math.isnan(cpu) else cpu, wall_s=number(field(out, "wall time")),
                      peak_mb=number(field(out, "peak memory")))
    except (ValueError, IndexError):  # a line without a number: not a slacknet-sim printout
        raise RuntimeError(f"{binary} printed a 'cpu time', 'wall time' or 'peak memory' line without a number "
                           f"on {scenario.name}; is it a slacknet-sim?") from None


def k16_label(scenario: Path) -> str:
    return "k=16 fat-tree 10 ms" if scenario.resolve() == K16.resolve() else f"k16 on {scenario.name}"


def measure_k16(binary: Path, scenario: Path, runs: int, say: Callable[[str], None]) -> list[Verdict]:
    samples = []
    for i in range(runs):
        samples.append(run_k16(binary, scenario))
        r = samples[-1]
        say(f"k16 run {i + 1}/{runs}: CPU {r.cpu_s:.2f} s, wall {r.wall_s:.2f} s, {r.peak_mb:.1f} MB")
    return k16_verdicts(samples, k16_label(scenario))


def measure_ls256(scenario: Path, out: Path, runs: int, htsim_dir: str | None, say: Callable[[str], None],
                  python: str | None = None, ns3_dir: str | None = None) -> tuple[list[Verdict], str]:
    """`slacknet compare --repeat runs` on `scenario` into `out`: the verdicts and the comparison's
    table as printed, with the peers' context line (`peer_context`) under it. `python` is the
    interpreter of the child runs (tests give a fake peer)."""
    from slacknet import SpecError
    from slacknet.compare import CompareError, compare, render as render_comparison

    try:
        cmp = compare(scenario, out, python=python, htsim_dir=htsim_dir, repeat=runs,
                      progress=lambda msg: say(f"ls256 {msg}"), ns3_dir=ns3_dir)
    except (CompareError, SpecError) as e:
        raise UsageError(f"ls256: {e}") from None
    label = "ls256" if scenario.resolve() == LS256.resolve() else f"ls256 on {scenario.name}"
    context = peer_context(cmp)
    return ls256_verdicts(cmp, label), render_comparison(cmp) + (f"\n{context}" if context else "")


def check_args(args: argparse.Namespace) -> int:
    """The number of runs; UsageError for a bad argument of a part that will run."""
    runs = positive_int(args.runs)
    if runs is None:
        raise UsageError(f"--runs {args.runs}: give a whole number of runs, at least 1 (3 is the default: "
                         "the median of three)")
    if args.only != "ls256":
        if not (args.binary.is_file() and os.access(args.binary, os.X_OK)):
            raise UsageError(f"--binary {args.binary}: not an executable file; run `cargo build --release -p "
                             "slacknet-sim` (or `make pgo` for target/pgo/slacknet-sim) first")
        if not args.k16_scenario.is_file():
            raise UsageError(f"--k16-scenario {args.k16_scenario}: no such file; give a scenario TOML")
    if args.only != "k16" and not args.ls256_scenario.is_file():
        raise UsageError(f"--ls256-scenario {args.ls256_scenario}: no such file; give a leaf-spine scenario TOML")
    return runs


@interruptible
def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="bench/targets.py", description=__doc__.split("\n\n")[0], error_prefix="bench-targets")
    p.add_argument("--runs", default="3", metavar="R",
                   help="runs of each simulator per part, alternated in ls256 (default 3); the median decides")
    p.add_argument("--only", choices=("ls256", "k16"), help="run one part (k16 needs no ns-3)")
    p.add_argument("--binary", type=Path, default=BIN,
                   help="the slacknet-sim for k16 (default target/release/slacknet-sim; "
                   "make PGO=1: target/pgo/slacknet-sim)")
    p.add_argument("--htsim", metavar="DIR", default=None,
                   help="UEC htsim checkout for ls256 (default $HTSIM_DIR; without either its line is skipped)")
    p.add_argument("--ns3-dir", metavar="DIR", default=None,
                   help="a built ns-3.44 source tree for ls256 instead of the PyPI wheel (default $NS3_DIR; "
                   "the wheel has logging and asserts compiled in)")
    p.add_argument("--out", type=Path, default=Path("results") / "targets" / "ls256",
                   help="folder for the ls256 comparison's files (default results/targets/ls256)")
    p.add_argument("--ls256-scenario", type=Path, default=LS256, metavar="TOML",
                   help="the ls256 scenario (default experiments/compare/ls256.toml)")
    p.add_argument("--k16-scenario", type=Path, default=K16, metavar="TOML",
                   help="the k16 scenario (default experiments/scale/fat_tree_k16.toml; a shorter one to try it)")
    p.add_argument("--no-calibration", action="store_true",
                   help="do not time the machine's memory (bench/memlat.c) before and after the k16 runs")
    args = p.parse_args(argv)

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    try:
        runs = check_args(args)
        verdicts: list[Verdict] = []
        print(describe_machine())
        if args.only != "k16":
            say(f"ls256: slacknet compare {args.ls256_scenario} --repeat {runs}...")
            found, table = measure_ls256(args.ls256_scenario, args.out, runs, args.htsim, say, ns3_dir=args.ns3_dir)
            verdicts += found
            print(f"ls256: each simulator {plural(runs, 'time')}, alternated; files in {args.out}")
            print(table)
            print()
        if args.only != "ls256":
            each = " (about a minute each)" if args.k16_scenario.resolve() == K16.resolve() else ""
            say(f"k16: {args.binary} {args.k16_scenario}, {plural(runs, 'run')}{each}...")
            before = None if args.no_calibration else calibrate()
            verdicts += measure_k16(args.binary.resolve(), args.k16_scenario.resolve(), runs, say)
            after = None if args.no_calibration else calibrate()
            print(f"k16: {args.binary} {args.k16_scenario}, {plural(runs, 'run')}, one at a time")
            if before is not None and after is not None:
                print(calibration_line(before, after))
    except UsageError as e:
        print(f"bench-targets: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"bench-targets: {e}", file=sys.stderr)
        return 1
    print(render(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
