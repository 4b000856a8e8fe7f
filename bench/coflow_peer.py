"""Our coflow schedulers against the reference simulator, coflowsim (Java), in the same run.

For each coflowsim scheduler asked for: coflowsim's CPU and wall time over the whole FB2010
trace, ours in the idealised model (the scheduler's counterpart: FAIR -> fair, DARK -> dclas,
...) and in the coflowsim-compatible mode, each with the ratio to coflowsim, and whether the
compatible mode's CCTs equal the output coflowsim printed in this run, coflow for coflow.

    python bench/coflow_peer.py COFLOWSIM_DIR [ALGO ...]

COFLOWSIM_DIR is a checkout of github.com/coflow/coflowsim (nothing of it is needed to install
or test slacknet); it is compiled with ``javac`` into ``target/bench-coflowsim``. ALGO: FAIR,
PFP, FIFO, SCF, NCF, LCF, SEBF, DARK (default: all; coflowsim takes from half a minute to
about ten minutes each on this machine). The trace comes from ``$SLACKNET_COFLOW_TRACE`` or
``../shared/data/coflow`` found upward, as for ``slacknet reproduce coflow``. Exit code 2 with
one line on a bad argument or a missing tool; Ctrl-C, one line (``interrupted``) and exit code 130.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

from slacknet import coflow

_BENCH = str(Path(__file__).resolve().parent)  # bench/: _cli (on the path when run as a script)
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
import _cli  # noqa: E402

OURS = {"FAIR": "fair", "PFP": "pfp", "FIFO": "fifo", "SCF": "scf", "NCF": "ncf", "LCF": "lcf",
        "SEBF": "sebf", "DARK": "dclas"}


def die(msg: str) -> NoReturn:
    _cli.die("coflow_peer", msg)


def cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def build(src: Path, out: Path) -> None:
    java_files = sorted(str(p) for p in (src / "src" / "main" / "java").rglob("*.java"))
    if not java_files:
        die(f"COFLOWSIM_DIR = {src}: no src/main/java/**/*.java; point it at a coflowsim checkout")
    if shutil.which("javac") is None or shutil.which("java") is None:
        die("javac and java are needed (apt-get install default-jdk-headless)")
    # A fresh folder: classes left by an earlier build (of another checkout) must not run as this one's.
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["javac", "-nowarn", "-d", str(out), *java_files], capture_output=True, text=True)
    if r.returncode != 0:
        die(f"javac failed:\n{r.stderr[-2000:]}")


@_cli.interruptible
def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        die("usage: python bench/coflow_peer.py COFLOWSIM_DIR [ALGO ...]")
    src = Path(args[0])
    algos = [a.upper() for a in args[1:]] or list(OURS)
    bad = [a for a in algos if a not in OURS]
    if bad:
        die(f"ALGO = {bad[0]}: not a coflowsim scheduler; expected one of {', '.join(OURS)}")
    try:
        trace = coflow.find_trace()
    except coflow.CoflowError as e:
        die(str(e))
    classes = Path("target/bench-coflowsim")
    build(src, classes)
    print(f"trace {trace}; coflowsim from {src} (javac), slacknet release build; CPU seconds")
    print("| scheduler | coflowsim cpu s | wall s | idealised | cpu s | coflowsim / ours | "
          "compatible mode cpu s | coflowsim / ours | exact CCTs vs this run's coflowsim |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for a in algos:
            out = Path(tmp) / f"{a}.out"
            c0, w0 = cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
            with out.open("w") as f:
                r = subprocess.run(["java", "-cp", str(classes), "coflowsim.CoflowSim", a, "COFLOW-BENCHMARK",
                                    str(trace)], stdout=f, stderr=subprocess.PIPE, text=True)
            java_cpu, java_wall = cpu(resource.RUSAGE_CHILDREN) - c0, time.perf_counter() - w0
            if r.returncode != 0:
                die(f"coflowsim {a} failed: {r.stderr[-1000:]}")
            c0 = cpu(resource.RUSAGE_SELF)
            coflow.run_trace(trace, scheduler=OURS[a])
            ideal_cpu = cpu(resource.RUSAGE_SELF) - c0
            c0 = cpu(resource.RUSAGE_SELF)
            df = coflow.run_coflowsim(trace, a, reference=out)
            compat_cpu = cpu(resource.RUSAGE_SELF) - c0
            print(f"| {a} | {java_cpu:.1f} | {java_wall:.1f} | {OURS[a]} | {ideal_cpu:.2f} | "
                  f"{java_cpu / max(ideal_cpu, 1e-9):.2f}x | {compat_cpu:.1f} | "
                  f"{java_cpu / max(compat_cpu, 1e-9):.2f}x | {df.attrs['exact']} of {df.attrs['compared']} |",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
