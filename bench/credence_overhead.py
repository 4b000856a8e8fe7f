"""Credence's cost over Dynamic Thresholds on identical traffic (issue target: at most +10%).

Runs the 256-host leaf-spine of the Credence evaluation (experiments/credence/bench.toml:
16 x 16 hosts, 4 spines, 10 Gb/s, 5.12 KB per port per Gbps, web search at load 0.4 plus
incast) once with DT and once with Credence (built-in forest), alternating, REPS times each,
and prints the median simulation wall time of each, their ratio, and the ratio of wall time per
event (the two policies drop different packets, so their runs differ by a few events).

    python bench/credence_overhead.py [REPS]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import slacknet
from slacknet.config import Credence, DynamicThresholds, ForestOracle

HERE = Path(__file__).resolve().parent


def main() -> int:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    base = slacknet.Scenario.from_toml(HERE.parent / "experiments" / "credence" / "bench.toml")
    variants = {
        "DT": base.model_copy(update={"switch": base.switch.model_copy(update={"admission": DynamicThresholds()})}),
        "Credence": base.model_copy(
            update={"switch": base.switch.model_copy(update={"admission": Credence(oracle=ForestOracle())})}
        ),
    }
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
    print(f"Credence / DT wall time: {ratio:.3f} (target <= 1.10); per event: {per_event:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
