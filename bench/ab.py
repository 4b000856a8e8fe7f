"""`make bench-ab`: two builds of `slacknet-sim` timed against each other, alternately (issue 15).

On a shared machine a whole run's time moves with the other tenants by more than one
optimisation step gains (the same binary took 127-199 s on the k = 16 run within hours), so
timing a build before and after a change in two separate runs says little. This runs build A,
then build B, then A again, ``--runs`` times on each scenario, so that both see the same load,
and prints each run's CPU seconds (user + system of the child, from ``getrusage``), the
minimum and median of each build, in how many pairs B was faster, and B's median against A's.

It also compares the two builds' printouts less their timing lines (events, packet-hops,
slowdown, drops, marks, ...): an optimisation that changes them changed the simulation, which
the table says in its last column (``same`` or ``DIFFERENT``; exit code 1 if any differs).

    python bench/ab.py --runs 7 /tmp/sim-before target/release/slacknet-sim experiments/compare/ls256.toml

Bad arguments (a build that is not an executable file, a scenario that does not exist, fewer
than one run) get one line naming the argument and exit code 2; Ctrl-C, one line (``interrupted``)
and exit code 130.
"""

from __future__ import annotations

import os
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

_BENCH = str(Path(__file__).resolve().parent)  # bench/: _cli and scale_table (on the path when run as a script)
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
from _cli import Parser, UsageError, interruptible, positive_int  # noqa: E402
from scale_table import field as printed_field, run_binary  # noqa: E402

# Lines of `slacknet-sim`'s printout that measure the machine, not the simulation.
TIMING_PREFIXES = ("wall time", "cpu time", "events/s", "packet-hops/s", "peak memory")


@dataclass
class Side:
    """One build's runs of one scenario."""

    cpu_s: list[float] = field(default_factory=list)
    printout: str | None = None


def results_of(printout: str) -> str:
    """The printout less the lines that measure the machine."""
    keep = [ln for ln in printout.splitlines() if not ln.strip().startswith(TIMING_PREFIXES)]
    return "\n".join(keep)


def run_once(binary: Path, scenario: Path, name: str = "build") -> tuple[float, str]:
    """Run `binary` on `scenario`; its CPU seconds (user + system) and its printout. UsageError
    if it fails or prints no simulator summary (then it is not a slacknet-sim, and its times and
    an empty printout "agreeing" with the other build's would say nothing)."""
    try:
        _, cpu, printout = run_binary(binary, scenario, cwd=scenario.parent)
        printed_field(printout, "events")
    except RuntimeError as e:
        if "printed no 'events' line" in str(e):
            raise UsageError(f"{name} = {binary}: printed no 'events' line on {scenario.name}, so it is not a "
                             "slacknet-sim; give the path of a slacknet-sim binary") from None
        raise UsageError(str(e)) from None
    return cpu, printout


def check_args(a: Path, b: Path, scenarios: list[Path], runs: int | str) -> int:
    """The number of runs; UsageError naming a bad argument."""
    for name, binary in (("BUILD_A", a), ("BUILD_B", b)):
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            raise UsageError(f"{name} = {binary}: not an executable file; give the path of a slacknet-sim binary "
                             "(copy target/release/slacknet-sim aside before rebuilding)")
    for s in scenarios:
        if not s.is_file():
            raise UsageError(f"SCENARIO = {s}: no such file; give a scenario TOML such as experiments/compare/ls256.toml")
    n = positive_int(runs)
    if n is None:
        raise UsageError(f"--runs = {runs}: must be a whole number, at least 1 (7 is a good number on a shared machine)")
    return n


def compare(a: Path, b: Path, scenario: Path, runs: int, out=sys.stdout) -> bool:
    """Alternate A and B `runs` times on `scenario` and print the table; whether the results agree."""
    sides = {"A": Side(), "B": Side()}
    for i in range(runs):
        for name, binary in (("A", a), ("B", b)):
            cpu, printout = run_once(binary, scenario, f"BUILD_{name}")
            side = sides[name]
            side.cpu_s.append(cpu)
            if side.printout is None:
                side.printout = printout
        print(f"  pair {i + 1}: A {sides['A'].cpu_s[-1]:.3f} s  B {sides['B'].cpu_s[-1]:.3f} s", file=out, flush=True)
    ca, cb = sides["A"].cpu_s, sides["B"].cpu_s
    same = results_of(sides["A"].printout or "") == results_of(sides["B"].printout or "")
    b_faster = sum(y < x for x, y in zip(ca, cb))
    ma, mb = statistics.median(ca), statistics.median(cb)
    print(
        f"{scenario.name}: A min {min(ca):.3f} median {ma:.3f} s | B min {min(cb):.3f} median {mb:.3f} s | "
        f"B faster in {b_faster}/{runs} pairs | B/A median {mb / ma if ma > 0 else float('nan'):.3f} | "
        f"results {'same' if same else 'DIFFERENT'}",
        file=out,
        flush=True,
    )
    return same


@interruptible
def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="bench/ab.py", description=__doc__.split("\n\n")[0])
    p.add_argument("build_a", type=Path, metavar="BUILD_A", help="the build before (a slacknet-sim binary)")
    p.add_argument("build_b", type=Path, metavar="BUILD_B", help="the build after")
    p.add_argument("scenarios", type=Path, nargs="+", metavar="SCENARIO", help="scenario TOML files")
    p.add_argument("--runs", default="7", help="runs of each build per scenario, alternated (default 7)")
    args = p.parse_args(argv)
    try:
        runs = check_args(args.build_a, args.build_b, args.scenarios, args.runs)
        print(f"A = {args.build_a}\nB = {args.build_b}\n{runs} alternated runs each; CPU seconds (user + system)")
        agree = [compare(args.build_a.resolve(), args.build_b.resolve(), s.resolve(), runs) for s in args.scenarios]
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0 if all(agree) else 1


if __name__ == "__main__":
    sys.exit(main())
