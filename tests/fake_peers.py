"""Fake ns-3 and htsim peers for `slacknet compare` tests that need no real peer.

`compare(..., python=fake_python(...))` runs every child through the interpreter it is given:
slacknet as ``python -c <script running slacknet.cli> run ...`` and each peer as ``python <peer>.py run ...``.
The fake interpreter hands slacknet to the real one (so slacknet really runs) and answers for
the peers itself: ``ensure`` succeeds, ``run`` writes an FCT file for the flow list in the peer
record format (FCT = 1.5 x the line-rate time plus 20 us, so every flow finishes) and prints the
runner's result line with the next of the wall times it was given (the ns-3 one says which
ns-3 ran: ``fake wheel``, or ``fake build at DIR`` when it was given ``--ns3-dir DIR``). Every run appends the
simulator's name to a log, so a test can read the order in which they ran.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

SCRIPT = """\
#!{real}
import json, os, sys

REAL, LOG, WALLS, VARY = {real!r}, {log!r}, json.loads({walls!r}), {vary!r}
args = sys.argv[1:]
if args[:2] == ["-m", "slacknet.cli"] or (args[:1] == ["-c"] and "slacknet.cli" in args[1]):
    with open(LOG, "a") as f:
        f.write("slacknet\\n")
    os.execv(REAL, [REAL, *args])
who = "ns-3" if os.path.basename(args[0]) == "ns3peer.py" else "htsim"
if args[1] == "ensure":
    print(json.dumps({{"binary": "fake"}}))
    sys.exit(0)
assert args[1] == "run", args
opt = {{args[i]: args[i + 1] for i in range(2, len(args) - 1) if args[i].startswith("--")}}
done = open(LOG).read().split().count(who) if os.path.exists(LOG) else 0
with open(LOG, "a") as f:
    f.write(who + "\\n")
lines = ["# id src dst start_s size_bytes incast fct_ns ideal_ns slowdown"]
for line in open(opt["--flows"]):
    if not line.strip() or line.lstrip().startswith("#"):
        continue
    i, src, dst, start, size, incast = line.split()[:6]
    ideal = 24000 + int(size) * 8 / 10
    fct = 1.5 * ideal + 20000 + (done if who in VARY else 0)
    lines.append(f"{{i}} {{src}} {{dst}} {{start}} {{size}} {{incast}} {{fct:.0f}} {{ideal:.0f}} {{fct / ideal:.6f}}")
open(opt["--out"], "w").write("\\n".join(lines) + "\\n")
walls = WALLS[who]
result = {{"wall_s": walls[done % len(walls)], "drops": 0, "events": 1000000, "peak_rss_mb": 20.0 + done}}
if who == "ns-3":
    result["ns3"] = "fake build at " + opt["--ns3-dir"] if "--ns3-dir" in opt else "fake wheel"
    if "--recovery=classic" in args:
        result["ns3"] += " (given --recovery=classic)"
print(json.dumps(result))
"""


def fake_python(tmp_path: Path, walls: dict[str, list[float]], vary: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """An interpreter for ``compare(python=...)``: slacknet runs for real, the peers are fakes
    whose ``k``-th run (from 0) reports ``walls[peer][k]`` seconds of wall time (cycling
    through the list) and ``20 + k`` MB of peak memory; a peer named in ``vary`` adds ``k`` ns
    to every FCT of its ``k``-th run. Returns the interpreter and the log of runs."""
    log = tmp_path / "runs.log"
    path = tmp_path / "fake-python"
    path.write_text(SCRIPT.format(real=sys.executable, log=str(log), walls=json.dumps(walls), vary=list(vary)))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path, log


def runs(log: Path) -> list[str]:
    """The simulators in the order they ran."""
    return log.read_text().split() if log.exists() else []
