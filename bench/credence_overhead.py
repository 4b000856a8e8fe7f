"""Credence's cost over Dynamic Thresholds on identical traffic (issue 9 target: at most +10%).

Runs the 256-host leaf-spine of the Credence evaluation (experiments/credence/bench.toml:
16 x 16 hosts, 4 spines, 10 Gb/s, 5.12 KB per port per Gbps, web search at load 0.4 plus
incast) once with DT and once with Credence (built-in forest), alternating, REPS times each,
and prints the median simulation wall time of each, their ratio, and the ratio of wall time per
event (the two policies drop different packets, so their runs differ by a few events).

Wall time is noisy on a shared machine, so the script also counts instructions: if valgrind
is installed, it runs the native binary (target/release/slacknet-sim; `make bench-credence`
builds it) under callgrind on a shorter version of the same scenario, DT and Credence side by
side, and prints their instruction counts and ratio. The shorter version keeps everything but
the length: 20 ms of arrivals instead of 50 and a 60 ms stop instead of 150 (about 2.5 min of
callgrind per policy). Without valgrind it says so and reports the wall ratio only.

    python bench/credence_overhead.py [REPS]
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import slacknet
from slacknet.config import Credence, DynamicThresholds, ForestOracle

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # bench/: _cli (on the path when run as a script)
    sys.path.insert(0, str(HERE))
from _cli import interruptible, positive_int, stop  # noqa: E402

ROOT = HERE.parent
BENCH_TOML = ROOT / "experiments" / "credence" / "bench.toml"
TARGET = 1.10
ADMISSION = {"DT": '{ policy = "dynamic_thresholds" }', "Credence": '{ policy = "credence" }'}
# The callgrind runs' scenario: bench.toml with shorter arrivals and stop time.
SHORT = {"duration_ms = 50.0": "duration_ms = 20.0", "stop_ms = 150": "stop_ms = 60"}


def scenario_text(admission: str, short: bool) -> str:
    """bench.toml with `admission` under [switch] and, if `short`, the shorter length."""
    text = BENCH_TOML.read_text()
    edits = {"[switch]\n": f"[switch]\nadmission = {admission}\n", **(SHORT if short else {})}
    for old, new in edits.items():
        if old not in text:
            raise SystemExit(f"{BENCH_TOML} no longer contains {old!r}: update this script")
        text = text.replace(old, new)
    return text


def wall_ratio(reps: int) -> None:
    base = slacknet.Scenario.from_toml(BENCH_TOML)
    variants = {
        "DT": base.model_copy(update={"switch": base.switch.model_copy(update={"admission": DynamicThresholds()})}),
        "Credence": base.model_copy(
            update={"switch": base.switch.model_copy(update={"admission": Credence(oracle=ForestOracle())})}
        ),
    }
    # The callgrind runs' TOML, at full length, must be the scenario timed here.
    for name, sc in variants.items():
        if slacknet.Scenario.from_toml_text(scenario_text(ADMISSION[name], False), BENCH_TOML.parent) != sc:
            raise SystemExit(f"the generated {name} scenario differs from the timed one: update this script")
    walls: dict[str, list[float]] = {k: [] for k in variants}
    events: dict[str, int] = {}
    for _ in range(reps):
        for name, sc in variants.items():
            res = slacknet.run(sc)
            walls[name].append(res.summary["wall_time_s"])
            events[name] = res.summary["events"]
    med = {k: statistics.median(v) for k, v in walls.items()}
    for k in variants:
        print(f"{k:<10} median wall {med[k]:.3f} s over {reps} runs  ({events[k] / 1e6:.2f} M events)")
    ratio = med["Credence"] / med["DT"]
    per_event = (med["Credence"] / events["Credence"]) / (med["DT"] / events["DT"])
    print(f"Credence / DT wall time:    {ratio:.3f} (target <= {TARGET:.2f}); per event: {per_event:.3f}")


def instruction_ratio() -> None:
    if shutil.which("valgrind") is None:
        print("Credence / DT instructions: not measured (valgrind is not installed); the wall ratio above is all")
        return
    target_dir = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    binary = target_dir / "release" / "slacknet-sim"
    if not binary.exists():
        raise SystemExit(f"{binary} is missing: cargo build --release -p slacknet-sim (make bench-credence does)")
    with tempfile.TemporaryDirectory(prefix="credence_bench_") as tmp:
        runs: dict[str, tuple[Path, subprocess.Popen[str]]] = {}
        counts = {}
        try:
            for name, admission in ADMISSION.items():
                toml = Path(tmp) / f"{name}.toml"
                toml.write_text(scenario_text(admission, True))
                out = Path(tmp) / f"{name}.callgrind"
                cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(binary), str(toml)]
                runs[name] = (out, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
            for name, (out, proc) in runs.items():
                _, err = proc.communicate()
                if proc.returncode != 0:
                    raise SystemExit(f"callgrind run of {name} failed:\n{err[-2000:]}")
                m = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
                if m is None:
                    raise SystemExit(f"no instruction total in {out}")
                counts[name] = int(m.group(1))
        finally:  # one run failed, or Ctrl-C: the other must not go on for minutes
            stop(*(proc for _, proc in runs.values()))
    for k, n in counts.items():
        print(f"{k:<10} {n / 1e6:,.1f} M instructions (callgrind, 20 ms of arrivals, 60 ms stop)")
    ratio = counts["Credence"] / counts["DT"]
    print(f"Credence / DT instructions: {ratio:.3f} (target <= {TARGET:.2f})")


@interruptible
def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1:
        print(f"bench-credence: {len(args)} arguments: give at most one, REPS (default 5)", file=sys.stderr)
        return 2
    given = args[0] if args else "5"
    reps = positive_int(given)
    if reps is None:
        print(f"bench-credence: REPS = {given}: give a whole number of runs per policy, at least 1 "
              "(5 is the default: the median of five)", file=sys.stderr)
        return 2
    wall_ratio(reps)
    instruction_ratio()
    return 0


if __name__ == "__main__":
    sys.exit(main())
