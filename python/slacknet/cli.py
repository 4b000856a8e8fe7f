"""The ``slacknet`` command line.

    slacknet run [SCENARIO] [--out DIR] [--seed N] [--progress | --no-progress] [--no-plot]
    slacknet validate [SCENARIO]
    slacknet summary RESULTS_DIR
    slacknet plot RESULTS_DIR [--out DIR]
    slacknet compare SCENARIO [--out DIR] [--htsim DIR] [--ns3-dir DIR] [--ns3-recovery prr|classic] [--hash-seeds N | --hash-seeds a,b,...] [--same-paths] [--repeat N]
    slacknet sweep SWEEP [--out DIR] [--jobs N] [--cluster ADDRESS]
    slacknet credence trace SCENARIO --out TRACE.parquet
    slacknet credence train TRACE... --out MODEL.json
    slacknet reproduce PAPER [--experiments DIR] [--full] [--only ID,...] [--seeds S,...] [--out DIR] [--jobs N]
                       [--cluster ADDRESS]
    slacknet reproduce --list [--experiments DIR]
    slacknet reproduce coflow [--full] [--trace FILE] [--out DIR]
    slacknet ml tolerance [--models mlp,cnn,rnn,mf] [--policy zero_fill,rescale] [--seeds 1,2,3]
                          [--p-step 0.05] [--max-epochs N] [--out DIR] [--quick]
    slacknet ml profile [--models mlp,cnn,rnn,mf] [--repeats 30] [--tolerance SUMMARY.csv] [--out FILE]
    slacknet net tc --dev IFACE [--rate 10gbit] [--mtu 1500] [--buffer-bytes 1500000] [--classes 8]
                    [--form htb|prio] [--link-header-bytes 14] [--apply] [--delete]

Without SCENARIO, ``run`` and ``validate`` use the built-in default scenario. ``run`` writes
``results/<scenario name>/<run id>/`` (run id = start time + short hash of the resolved
scenario) unless ``--out`` is given.

``net tc`` prints the shell script (``tc`` commands) that gives IFACE's egress NetApprox's
slack-based switch queues, the simulator's ``netapprox_slack`` preset (see :mod:`slacknet.nettc`);
``--apply`` runs it (as root), ``--delete`` removes the configuration.

Errors in the user's input (an invalid scenario, a missing file, a folder that is not a results
folder or fails its manifest check, an output folder that is not a results folder, an ``--out``
that is empty, inside a results folder, through a file or where nothing can be created (checked
by every subcommand before it runs anything), a ``sweep --out`` folder that is neither new, empty
nor an earlier sweep's, a sweep of more than 100,000 runs, a bad ``net
tc`` option or a ``tc`` command that fails under ``--apply``) print one
line ``error: <key> = <value>: <message>`` (and, for scenarios, a hint) on stderr and exit with
status 2; usage errors also exit 2. ``sweep`` exits with status 1 if any of its runs failed
(after running all the others; their reasons are in ``sweep.csv``), and with 130 on Ctrl-C or
143 on SIGTERM, having stopped its workers; ``sweep --out`` with the same folder resumes it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import hashlib
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from . import __version__
from ._native import SimError, SpecError
from .compare import CompareError
from .results import ResultsError

__all__ = ["main", "EXIT_USER_ERROR", "EXIT_RUNS_FAILED"]

#: Exit status for any error in the user's input.
EXIT_USER_ERROR = 2
#: Exit status of a sweep some of whose runs failed.
EXIT_RUNS_FAILED = 1
#: The most loss probabilities `ml tolerance --p-step` may give (a step of 0.001); each is a
#: training run per model, policy and seed.
MAX_P_POINTS = 1001


class InputError(ValueError):
    """A command's input is unusable (the message says why); exit status 2."""

_SPEC_HINT = (
    "`slacknet validate` without a file prints the built-in default scenario with its keys and "
    "their defaults; the README's Scenarios table lists every key; examples/*.toml has more"
)


def _hash_seeds(text: str) -> list[int]:
    from .compare import parse_hash_seeds

    try:
        return parse_hash_seeds(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="slacknet",
        description="slacknet: a fast, deterministic packet-level datacenter network simulator.",
    )
    p.add_argument("--version", action="version", version=f"slacknet {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    r = sub.add_parser("run", help="run a scenario and save its results", description="Run a scenario.")
    r.add_argument("scenario", nargs="?", metavar="SCENARIO", help="scenario TOML (default: built-in)")
    r.add_argument("--out", metavar="DIR", help="results folder (default: results/<name>/<run id>)")
    r.add_argument("--seed", type=_seed, metavar="N", help="override the scenario's seed")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show the progress bar even when stderr is not a terminal")
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    r.add_argument("--no-plot", action="store_true", help="do not write plots")

    v = sub.add_parser("validate", help="validate a scenario and print it resolved, as JSON",
                       description="Validate a scenario; print it resolved, with its profile and defaults filled in "
                       "(an unset switch buffer stays unset: each switch is sized from its ports).")
    v.add_argument("scenario", nargs="?", metavar="SCENARIO", help="scenario TOML (default: built-in)")

    ft = sub.add_parser(
        "trace", help="run a scenario and follow one flow's packets (sends, queues, drops, timeouts)",
        description="Run SCENARIO and print what happened to one transfer's packets: sends, retransmissions, "
        "drops by place and cause, timeouts; --out writes every row (CSV, or Parquet for a .parquet name): "
        "time_ps, event (send, enqueue, drop, receive, timeout), to_receiver, seq, ack, flags, len, size, ce, "
        "link, switch (-1: a host NIC), queue_bytes, cause, cwnd_bytes (slacknet.trace_flow documents each).")
    ft.add_argument("scenario", metavar="SCENARIO", help="scenario TOML")
    ft.add_argument("--flow", type=_flow_id, required=True, metavar="ID",
                    help="the transfer's id (the records' id column: a flow list's own id)")
    ft.add_argument("--out", metavar="FILE", help="write every row here (.csv or .parquet)")
    ft.add_argument("--seed", type=_seed, metavar="N", help="override the scenario's seed")

    s = sub.add_parser("summary", help="print the summary tables of a results folder")
    s.add_argument("results", metavar="RESULTS_DIR")

    c = sub.add_parser(
        "compare",
        help="replay a scenario's flows in slacknet, ns-3.44 and UEC htsim and compare them",
        description="Replay one flow list in slacknet and in ns-3.44 (installed privately on first "
        "use; needs a source checkout), and in UEC htsim when a checkout of it is given (--htsim "
        "or $HTSIM_DIR; built once per commit under ~/.cache/slacknet), and print FCT slowdowns, "
        "drops and wall times side by side.",
    )
    c.add_argument("scenario", metavar="SCENARIO", help="leaf-spine scenario TOML (e.g. experiments/compare/s1.toml)")
    c.add_argument("--out", metavar="DIR",
                   help="output folder (default: results/compare/<name>, with --hash-seeds <name>_seeds)")
    c.add_argument("--htsim", metavar="DIR",
                   help="checkout of UEC htsim (github.com/ultraethernet/uet-htsim) to run as a second "
                   "peer (default: $HTSIM_DIR; without either, htsim is skipped)")
    c.add_argument("--ns3-dir", metavar="DIR",
                   help="a built ns-3.44 source tree to run instead of the PyPI wheel, which has logging "
                   "and asserts compiled in (default: $NS3_DIR; bench/peers/ns3/README.md)")
    c.add_argument("--ns3-recovery", choices=("prr", "classic"), default="prr",
                   help="ns-3's TCP recovery ops: prr (its default TcpPrrRecovery, which paces fast recovery and "
                   "DCTCP's ECN cut by PRR) or classic (TcpClassicRecovery: cwnd = ssthresh at once, the recovery "
                   "slacknet's TCP models unless transport.prr is set); see the README's \"Under loss\"")
    c.add_argument(
        "--hash-seeds", type=_hash_seeds, metavar="SEEDS",
        help="run each simulator once per ECMP hash seed (hashed ECMP in both, also for a "
        "flow_index scenario) and report every percentile as mean, sd and min-max over the seeds "
        "with a verdict per row; SEEDS is a count N (seeds 1..N) or a list such as 1,2,3",
    )
    c.add_argument(
        "--same-paths", action="store_true",
        help="route ns-3 by slacknet's own ECMP hash (its peer program's --ecmp=slacknet), so that every "
        "flow takes the same spine in both simulators: with --hash-seeds each seed then compares like "
        "for like; for a routing.mode = \"ecmp\" scenario with its routing.hash_seed (a flow_index "
        "scenario always routes alike; htsim keeps its own hash)",
    )
    c.add_argument(
        "--repeat", metavar="N", default="1",
        help="run each simulator N times (default 1), alternated (slacknet, ns-3, htsim, slacknet, ...) "
        "so that all see the machine's same load, and report each one's median wall time (and the "
        "events/s and ratios from it) and its largest peak memory; every run's wall time goes to "
        "comparison.json. slacknet's runs must give identical records (else an error: a bug). With "
        "--hash-seeds, each seed is repeated N times",
    )

    sw = sub.add_parser(
        "sweep",
        help="run every variant of a sweep file in parallel and tabulate their metrics",
        description="Expand a sweep (a base scenario and axes of values) into runs, run them on "
        "all cores and print one row of metrics per run (also written to sweep.csv).",
    )
    sw.add_argument("sweep", metavar="SWEEP", help="sweep TOML")
    sw.add_argument("--out", metavar="DIR",
                    help="output folder (default: a new results/<sweep name>/<start time>): a new or empty "
                    "folder, or this sweep's earlier one (it holds sweep.csv, and sweep.json naming the sweep), "
                    "which resumes it: its finished runs are "
                    "reused; any other folder is refused")
    sw.add_argument("--jobs", type=int, metavar="N", help="parallel runs, at least 1 (default: one per core, or "
                    "the cluster's cores with --cluster)")
    sw.add_argument("--cluster", metavar="ADDRESS",
                    help="run on a cluster: a Dask scheduler (tcp://host:8786; pip install 'slacknet[cluster]') or "
                    "a Ray cluster (ray for the local one, ray://host:10001; pip install 'slacknet[ray]'), every "
                    "worker with this slacknet version; results come back here")

    cr = sub.add_parser("credence", help="Credence's drop oracle: trace LQD, train a forest")
    crs = cr.add_subparsers(dest="credence_command", metavar="ACTION", required=True)
    t = crs.add_parser(
        "trace",
        help="run a scenario under LQD and write one row per switch arrival (features, fate)",
        description="Run SCENARIO with LQD (push-out) at every switch and write its decision trace "
        "as Parquet: switch, time_ps, queue, queue_len, avg_queue_len, occupancy, avg_occupancy "
        "(bytes) and dropped.",
    )
    t.add_argument("scenario", metavar="SCENARIO")
    t.add_argument("--out", metavar="FILE", required=True, help="Parquet file to write")
    t.add_argument("--seed", type=_seed, metavar="N", help="override the scenario's seed")
    tr = crs.add_parser(
        "train",
        help="train a random forest on LQD traces and export it for the simulator",
        description="Fit scikit-learn's RandomForestClassifier on decision traces, report accuracy, "
        "precision, recall, F1 and Theorem 2's bound on eta, and write the slacknet-forest/1 JSON.",
    )
    tr.add_argument("traces", nargs="+", metavar="TRACE", help="Parquet traces from `slacknet credence trace`")
    tr.add_argument("--out", metavar="FILE", required=True, help="forest JSON to write")
    tr.add_argument("--trees", type=int, default=4, help="number of trees (default 4, the paper's)")
    tr.add_argument("--depth", type=int, default=4, help="maximum depth (default 4, the paper's)")
    tr.add_argument("--features", default="queue_len,occupancy",
                    help="comma-separated features (default: queue_len,occupancy, the paper's)")
    tr.add_argument("--seed", type=int, default=1, help="seed of the split and the forest")

    rp = sub.add_parser(
        "reproduce",
        help="reproduce a reference paper's evaluation as its experiment description says",
        description="Make the figures of a paper's evaluation and check its claims, as described in "
        "EXPERIMENTS/PAPER/reproduce.toml (format: experiments/README.md): print every table, write a "
        "CSV and a PNG per figure and say which of the paper's claims hold.",
    )
    rp.add_argument("paper", nargs="?", metavar="PAPER",
                    help="a paper of the experiments folder, e.g. credence; or coflow (the coflow models on "
                    "the FB2010 trace: takes only --full, --out and --trace)")
    rp.add_argument("--list", action="store_true", help="list the papers of the experiments folder and exit")
    rp.add_argument("--experiments", metavar="DIR",
                    help="the experiments folder (default: experiments/ in the working directory)")
    rp.add_argument("--full", action="store_true", help="the paper's scale (the description's full base; long)")
    rp.add_argument("--out", metavar="DIR", help="output folder (default: results/reproduce/PAPER[-full])")
    rp.add_argument("--jobs", type=int, metavar="N", help="parallel runs, at least 1 (default: one per core, or "
                    "the cluster's cores with --cluster)")
    rp.add_argument("--cluster", metavar="ADDRESS",
                    help="run the figures' sweeps on a cluster, as `slacknet sweep --cluster` (a Dask scheduler "
                    "tcp://host:8786, ray, or ray://host:10001)")
    rp.add_argument("--only", metavar="IDS", help="comma-separated figure ids to make (default: all)")
    rp.add_argument("--seeds", metavar="SEEDS", type=_seed_list,
                    help="comma-separated seeds, each point run once per seed (default: the description's)")
    rp.add_argument("--trace", metavar="FILE",
                    help="coflow only: the FB2010 coflow trace (default: $SLACKNET_COFLOW_TRACE, else "
                    "../shared/data/coflow/FB2010-1Hr-150-0.txt found upward)")

    ml = sub.add_parser("ml", help="distributed training under gradient packet loss (issue 12)")
    mls = ml.add_subparsers(dest="ml_command", metavar="ACTION", required=True)
    mt = mls.add_parser(
        "tolerance",
        help="measure each model's loss tolerance bounds x1 and x2 (bounded-loss paper §2.2)",
        description="Train models data-parallel (4 workers) with every worker's gradient cut into "
        "packets lost at random with probability p, for p from 0 to 1, and report per model and "
        "receiver policy x1 (largest p converging in the lossless run's epochs) and x2 (largest p "
        "still converging), next to the paper's Table 3. Writes runs.csv and summary.csv.",
    )
    mt.add_argument("--models", metavar="NAMES", default=None,
                    help="comma-separated models among mlp,cnn,rnn,mf (default: all; cnn and rnn need "
                    "the ml extra: pip install 'slacknet[ml]')")
    mt.add_argument("--policy", metavar="NAMES", default=None,
                    help="comma-separated receiver policies among zero_fill,rescale (default: both)")
    mt.add_argument("--seeds", metavar="SEEDS", type=_seed_list, default=None,
                    help="comma-separated seeds (default 1,2,3; --quick: 1)")
    mt.add_argument("--p-step", metavar="STEP", type=float, default=None,
                    help="step of the loss probability grid from 0 to 1 (default 0.05; --quick: 0.2)")
    mt.add_argument("--max-epochs", metavar="N", type=int, default=None,
                    help="epochs a run may take to converge (default: 30 per model, --quick: 12; the paper "
                    "trains 100)")
    mt.add_argument("--out", metavar="DIR", help="output folder (default: results/ml-tolerance[-quick])")
    mt.add_argument("--quick", action="store_true",
                    help="reduced run: p in steps of 0.2, seed 1, at most 12 epochs per run")

    mp = mls.add_parser(
        "profile",
        help="measure each model's size and compute time per iteration (Figure 4's inputs)",
        description="Time each model's per-worker gradient on this machine and report its parameters, "
        "gradient bytes, compute time per iteration and compute-to-communication ratio (compute time "
        "over the gradient's time at 40 Gb/s). With --tolerance (a summary.csv of `slacknet ml "
        "tolerance`), add each model's x1 (zero_fill) and print Figure 4's per-model scenario keys, "
        "as experiments/mlt/fig4_models.toml uses them. Wall-clock: varies by machine and run.",
    )
    mp.add_argument("--models", metavar="NAMES", default=None,
                    help="comma-separated models among mlp,cnn,rnn,mf (default: all; cnn and rnn need the "
                    "ml extra)")
    mp.add_argument("--repeats", type=int, default=30, metavar="N", help="timed steps per model (default 30)")
    mp.add_argument("--tolerance", metavar="SUMMARY_CSV",
                    help="summary.csv of `slacknet ml tolerance`: add x1 and print Figure 4's points")
    mp.add_argument("--out", metavar="FILE", help="write the table as CSV (default: print only)")

    net = sub.add_parser("net", help="configure real interfaces like the simulator's switches")
    nets = net.add_subparsers(dest="net_command", metavar="ACTION", required=True)
    tc = nets.add_parser(
        "tc",
        help="print (or apply) the Linux tc configuration of NetApprox's slack-based switch queues",
        description="Print a shell script of tc commands that gives IFACE's egress NetApprox's switch queues "
        "(the simulator's netapprox_slack preset): class k, marked with DSCP CSk (TOS byte 32k), at priority k, "
        "holding classes - k MTU (class 0: the rest of the buffer). --apply runs the commands (as root); "
        "--delete removes the configuration. python/slacknet/nettc.py explains every parameter.",
    )
    tc.add_argument("--dev", required=True, metavar="IFACE", help="the interface whose egress to configure")
    tc.add_argument("--rate", default="10gbit", metavar="RATE",
                    help="the link rate in tc's units (bit, kbit, mbit, gbit, tbit; a bare number is bit/s; "
                    "default 10gbit); htb shapes to it, so give what the interface really carries")
    tc.add_argument("--mtu", type=int, default=1500, metavar="BYTES",
                    help="the largest IP packet (the simulator's mss_bytes + header_bytes; default 1500)")
    tc.add_argument("--buffer-bytes", type=int, default=1_500_000, metavar="BYTES",
                    help="the port's buffer, split as the simulator splits switch.buffer_bytes (default 1500000, "
                    "NetApprox §7.1)")
    tc.add_argument("--classes", type=int, default=8, metavar="N",
                    help="number of priority classes, 2 to 8 (default 8, NetApprox's)")
    tc.add_argument("--form", choices=("htb", "prio"), default="htb",
                    help="htb (default): strict priority approximated by htb, for kernels without the prio qdisc; "
                    "prio: the prio qdisc, exact but unshaped")
    tc.add_argument("--link-header-bytes", type=int, default=14, metavar="BYTES",
                    help="bytes a qdisc counts per packet beyond the IP packet (default 14, Ethernet and veth; "
                    "0 on a layer-3 device such as tun or wireguard)")
    tc.add_argument("--apply", action="store_true", help="run the commands (needs root) instead of printing them")
    tc.add_argument("--delete", action="store_true", help="remove the configuration (the root qdisc) instead")

    pl = sub.add_parser("plot", help="plot a results folder", description="Write the standard plots.")
    pl.add_argument("results", metavar="RESULTS_DIR")
    pl.add_argument("--out", metavar="DIR", help="where to write the PNGs (default: RESULTS_DIR)")
    return p


def _seed(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= v < 2**64:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2^64 - 1: {text}")
    return v


def _seed_list(text: str) -> list[int]:
    seeds = [_seed(s.strip()) for s in text.split(",") if s.strip()]
    if not seeds:
        raise argparse.ArgumentTypeError(f"give at least one seed, e.g. 21,22,23: {text!r}")
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"a seed is listed twice: {text}")
    return seeds


def _safe_name(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return s or "scenario"


def _now() -> _dt.datetime:
    """The local time (one place, so that a test can freeze it without patching the datetime
    module for every library in the process)."""
    return _dt.datetime.now()


def _run_id(resolved_json: str, started: _dt.datetime) -> str:
    digest = hashlib.sha256(resolved_json.encode()).hexdigest()[:8]
    return f"{started:%Y%m%d-%H%M%S}-{digest}"


def _new_folder(parent: Path, stem: str) -> Path:
    """A folder named ``stem`` under ``parent`` that did not exist (``stem-2``, ``-3``, ... if it
    did), created here so that no other process takes it."""
    parent.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        p = parent / (stem if n == 1 else f"{stem}-{n}")
        try:
            p.mkdir()
            return p
        except FileExistsError:
            n += 1


def _check_out(value: str | None, *, option: str = "--out", kind: str = "folder",
               may_be_results: bool = False) -> Path | None:
    """An output path (``--out``) checked before anything runs; ``None`` if not given. Refused,
    naming the option: an empty path (``Path("")`` is the working folder itself, which ``run``
    would replace), a file where a folder must be (or the reverse, for ``kind = "file"``), a
    path inside a results folder (an added file or folder fails its manifest check), and a
    place where nothing can be created. ``may_be_results``: the folder may itself be a results
    folder (``run`` replaces one; ``plot`` adds PNGs, which a results folder may hold)."""
    from .results import is_results_folder

    if value is None:
        return None
    if not value:
        raise InputError(f"{option} = '': an empty path (it would mean the working folder itself); "
                         f"name the output {kind}")
    full = Path(os.path.abspath(value))
    if os.path.lexists(full):
        if kind == "folder" and not full.is_dir():
            raise InputError(f"{option} = {value}: it is a file, not a folder; choose a new output folder")
        if kind == "file" and full.is_dir():
            raise InputError(f"{option} = {value}: it is a folder, not a file; name the file to write in it")
        if kind == "folder" and not may_be_results and is_results_folder(full):
            raise InputError(f"{option} = {value}: it is one run's results folder, which files added to it would "
                             "break (it would fail its manifest check); choose a new output folder")
    nearest = None  # the deepest folder above `full` that exists: where the output is created
    for above in reversed(full.parents):
        if not os.path.lexists(above):
            break
        if not above.is_dir():
            raise InputError(f"{option} = {value}: {above} is a file, not a folder; choose an output {kind} elsewhere")
        if is_results_folder(above):
            beside = above.parent / f"{above.name}-{full.relative_to(above).parts[0]}"
            raise InputError(f"{option} = {value}: it is inside the results folder {above}, which it would break "
                             f"(the folder would fail its manifest check); choose a folder beside it, e.g. {beside}")
        nearest = above
    if nearest is not None:
        # Tried, not asked: access(2) says yes to root everywhere (/proc included), and a save
        # that cannot create its folder fails only after the whole run, naming its hidden
        # temporary folder instead of --out.
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".slacknet-out-check-", dir=nearest))
        except OSError as e:
            raise InputError(f"{option} = {value}: nothing can be created in {nearest} ({e.strerror or e}); "
                             "choose a folder you can write to") from None
    return Path(value)


def _check_jobs(jobs: int | None) -> None:
    if jobs is not None and jobs < 1:
        raise InputError(f"--jobs = {jobs}: must be at least 1; leave --jobs out for one run per core")


def _cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .analysis import render_summary
    from .config import load_scenario
    from .results import check_save_target
    from .sim import run

    if _check_out(args.out, may_be_results=True) is not None:  # refused before the run, not after
        check_save_target(args.out)
    scenario = load_scenario(args.scenario)
    if args.seed is not None:
        scenario = scenario.model_copy(update={"seed": args.seed})
    started = _now()
    progress = sys.stderr.isatty() if args.progress is None else bool(args.progress)
    res = run(scenario, progress=progress)

    if args.out is not None:
        out = Path(args.out)
    else:
        # A new folder, claimed now: two runs of one scenario in the same second (a shell
        # loop, the same seed) had the same id, and the second replaced the first's results.
        out = _new_folder(Path("results") / _safe_name(res.scenario.name), _run_id(res.scenario.to_json(), started))
    res.save(out)
    plots = []
    if not args.no_plot:
        from .plot import plot_results

        plots = plot_results(res, out)

    console = Console()
    for table in render_summary(res.records, res.switches, res.apps, res.occupancy):
        console.print(table)
    s = res.summary
    print(_finished_line(s) + f"; simulated {_fmt3(s['sim_time_ms'])} ms in {s['wall_time_s']:.2f} s wall")
    print(
        f"{s['events'] / 1e6:.2f} M events at {s['events_per_s'] / 1e6:.2f} M events/s, "
        f"{s['packet_hops'] / 1e6:.2f} M packet-hops at {s['packet_hops_per_s'] / 1e6:.2f} M/s"
    )
    for flag, what, key in (
        ("occupancy_truncated", "occupancy sampling", "run.sample_interval_us"),
        ("timeseries_truncated", "the time series", "run.timeseries.interval_us"),
    ):
        if s.get(flag):
            print(f"warning: {what} stopped at its row limit before the run ended; raise {key} or set run.stop_ms")
    if plots:
        print("plots: " + ", ".join(p.name for p in plots))
    print(f"results: {out}")
    return 0


def _finished_line(s: dict[str, Any]) -> str:
    """``finished/flows flows finished``, and why the others did not (:func:`_not_finished`)."""
    return f"{s['finished_flows']}/{s['num_flows']} flows finished" + _not_finished(s)


def _fmt3(x: float) -> str:
    """Three decimals, or three significant digits below 0.001, so that a small value (a run
    stopped after a few hundred nanoseconds, in ms; a sweep's axis value) does not read as 0."""
    return f"{x:.3g}" if 0 < abs(x) < 1e-3 else f"{x:.3f}"


def _not_finished(s: dict[str, Any]) -> str:
    """Why the flows that did not finish did not: given up, cut off by the stop time, or
    (unreliable transports) data lost."""
    parts = []
    given_up = int(s.get("given_up_flows", 0))
    if given_up:
        parts.append(f"{given_up} gave up after max_retries timeouts without progress")
    rest = int(s["num_flows"]) - int(s["finished_flows"]) - given_up
    if s.get("stopped_early"):
        parts.append("stopped early at run.stop_ms" + (f", {rest} unfinished" if rest else ""))
    elif rest:
        parts.append(f"{rest} unfinished (unreliable data lost)")
    elif not int(s["num_flows"]):
        parts.append("the workload started no flow")
    return f" ({'; '.join(parts)})" if parts else ""


def _cmd_validate(args: argparse.Namespace) -> int:
    from .config import load_scenario
    from .sim import validate

    # Exactly the steps `run` takes before it simulates: load the file (Rust parses, validates
    # and reads every file it names), then validate what `run` hands the simulator. What this
    # accepts, `run` runs; what it prints is the resolved scenario `run` saves (scenario.json).
    scenario = load_scenario(args.scenario)
    valid = validate(scenario)
    sys.stdout.write(valid.to_json() + "\n")
    return 0


def _cmd_summary(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .analysis import render_summary
    from .results import Results

    res = Results.load(args.results)
    console = Console()
    for table in render_summary(res.records, res.switches, res.apps, res.occupancy):
        console.print(table)
    print(_finished_line(res.summary))
    return 0


def _repeat(text: str) -> int:
    """``compare --repeat``: a whole number of runs, at least 1 (InputError otherwise)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise InputError(f"--repeat = {text}: give a whole number of runs per simulator, at least 1 "
                         "(e.g. --repeat 3), or leave it out for one run each")
    return n


def _cmd_compare(args: argparse.Namespace) -> int:
    from .compare import compare, compare_seeds, render
    from .config import load_scenario

    repeat = _repeat(args.repeat)  # refused before anything is loaded or run
    _check_out(args.out)
    runs = f", each {repeat} times alternated (median wall times)" if repeat > 1 else ""
    progress = (lambda msg: print(msg, file=sys.stderr, flush=True)) if repeat > 1 else None
    sc = load_scenario(args.scenario)
    out = Path(args.out) if args.out else Path("results") / "compare" / _safe_name(sc.name)
    if args.hash_seeds is not None:
        if not args.out:  # beside the single run's folder, not over it
            out = out.with_name(out.name + "_seeds")
        seeds = args.hash_seeds
        print(f"comparing {sc.name}: slacknet, ns-3.44 and (if given) UEC htsim on the same flows, once per ECMP hash seed "
              f"({', '.join(map(str, seeds))}){runs}, one run at a time (ns-3 may take minutes per seed)...",
              file=sys.stderr)
        scmp = compare_seeds(sc, out, seeds, progress=lambda msg: print(msg, file=sys.stderr, flush=True),
                             htsim_dir=args.htsim, repeat=repeat, ns3_dir=args.ns3_dir,
                             ns3_recovery=args.ns3_recovery, same_paths=args.same_paths)
        print(render(scmp))
        print(f"plot: {out / 'compare_cdf.png'} (every seed, faded)")
        print(f"per-seed numbers: {out / 'per_seed.csv'}; summary: {out / 'seeds_summary.csv'}")
        print(f"results: {out}")
        return 0
    print(f"comparing {sc.name}: slacknet, ns-3.44 and (if given) UEC htsim on the same flows{runs} "
          "(ns-3 may take minutes)...", file=sys.stderr)
    cmp = compare(sc, out, htsim_dir=args.htsim, repeat=repeat, progress=progress, ns3_dir=args.ns3_dir,
                  ns3_recovery=args.ns3_recovery, same_paths=args.same_paths)
    print(render(cmp))
    print(f"plot: {out / 'compare_cdf.png'}")
    print(f"results: {out}")
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    import pandas as pd

    from .cluster import ClusterError
    from .sweep import SweepRun, check_sweep_target, describe_size, load_sweep, num_runs, run_sweep

    _check_jobs(args.jobs)
    given = _check_out(args.out)
    sweep = load_sweep(args.sweep)  # refuses a sweep of more than MAX_RUNS runs, before listing them
    if given is not None:  # a new folder, an empty one or this sweep's earlier one; refused before anything runs
        check_sweep_target(given, name=f"--out = {args.out}", sweep_name=sweep.name)
    n = num_runs(sweep)
    if given is not None:
        out = given
    else:
        out = _new_folder(Path("results") / _safe_name(sweep.name), f"{_now():%Y%m%d-%H%M%S}")
    # Said before the runs are listed and checked, which takes a while for thousands.
    print(f"sweep {sweep.name}: {n} runs ({describe_size(sweep)}) into {out}", file=sys.stderr, flush=True)

    def done(run: SweepRun, row: dict[str, object]) -> None:
        if row["reused"]:
            print(f"  reused {run.variant} (finished before)", file=sys.stderr)
        elif row["status"] == "ok":
            print(f"  done {run.variant} ({row['wall_s']:.2f} s)", file=sys.stderr)
        else:
            print(f"  FAILED {run.variant}: {row['error']}", file=sys.stderr)

    try:
        table = run_sweep(sweep, out, jobs=args.jobs, on_done=done, cluster=args.cluster)
    except ClusterError as e:  # raised before run_sweep writes into the folder
        if given is None:
            with contextlib.suppress(OSError):
                out.rmdir()  # the new folder made above, still empty
        raise InputError(f"--cluster = {e.value}: {e.message}") from None
    except (KeyboardInterrupt, SystemExit):
        print(f"stopped: the finished runs are kept in {out}; run the same command with --out {out} "
              "to resume", file=sys.stderr)
        raise
    cols = [c for c in table.columns if c not in ("variant", "reused", "error")]
    with pd.option_context("display.width", 200, "display.max_columns", 50, "display.float_format", _fmt3):
        print(table[cols].to_string(index=False))
    reused = int(table["reused"].sum())
    if reused:
        print(f"reused {reused} of {len(table)} runs finished before in {out}")
    print(f"results: {out}")
    failed = table[table["status"] == "failed"]
    if len(failed):
        for variant, error in zip(failed["variant"], failed["error"]):
            print(f"failed: {variant}: {error}", file=sys.stderr)
        print(f"error: {len(failed)} of {len(table)} runs failed (the status and error columns of "
              f"{out / 'sweep.csv'}); fix the cause and run the same command with --out {out} to run only those",
              file=sys.stderr)
        return EXIT_RUNS_FAILED
    return 0


def _flow_id(text: str) -> int:
    """``--flow``: a transfer id, an integer in [0, 2^64 - 1]."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a transfer id, an integer (the records' id column)") from None
    if not 0 <= v < 2**64:
        raise argparse.ArgumentTypeError(f"{text}: a transfer id is an integer in [0, 2^64 - 1]")
    return v


#: The columns of a flow trace, in order (`slacknet.trace_flow`).
_FLOW_TRACE_COLUMNS = ["time_ps", "event", "to_receiver", "seq", "ack", "flags", "len", "size", "ce", "link",
                       "switch", "queue_bytes", "cause", "cwnd_bytes"]


def _is_flow_trace(p: Path) -> bool:
    """Whether ``p`` is a flow trace this command wrote (which writing again may replace)."""
    try:
        if p.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(p).names) == _FLOW_TRACE_COLUMNS
        with p.open("r", encoding="utf-8", errors="replace") as f:
            return f.readline(4096).rstrip("\r\n").split(",") == _FLOW_TRACE_COLUMNS
    except (OSError, ValueError, ImportError):
        return False


def _cmd_trace(args: argparse.Namespace) -> int:
    from .results import replace_atomic
    from .sim import trace_flow

    out = _check_out(args.out, kind="file")
    if out is not None and out.suffix.lower() not in (".csv", ".parquet"):
        raise InputError(f"--out = {args.out}: a flow trace is written as CSV or Parquet, chosen by the name; "
                         "name the file *.csv or *.parquet")
    if out is not None and os.path.lexists(out) and not (out.is_file() and not out.is_symlink() and _is_flow_trace(out)):
        raise InputError(f"--out = {args.out}: it exists and is not a flow trace, which writing would replace; "
                         "name a new file")
    df = trace_flow(args.scenario, args.flow, seed=args.seed)
    sends = df[df.event == "send"]
    data = sends[sends.to_receiver & (sends["len"] > 0)]
    drops = df[df.event == "drop"]
    got = df[(df.event == "receive") & df.to_receiver]
    print(f"flow              {args.flow}")
    if len(data):
        first, last = int(data.time_ps.iloc[0]), int(got.time_ps.iloc[-1]) if len(got) else None
        span = f"{(last - first) / 1e6:.3f} us" if last is not None else "never arrived"
        print(f"data              {len(data)} segments sent ({len(data) - data.seq.nunique()} retransmissions), "
              f"first at {first / 1e9:.6f} ms; last arrival after {span}")
    print(f"acks              {int((~sends.to_receiver).sum())} sent by the receiver")
    where = drops.assign(place=drops.switch.map(lambda s: "host NIC" if s < 0 else f"switch {s}"))
    by = ", ".join(f"{n} at {pl} ({c})" for (pl, c), n in where.groupby(["place", "cause"], observed=True).size().items())
    print(f"drops             {len(drops)}" + (f": {by}" if by else ""))
    print(f"timeouts          {int((df.event == 'timeout').sum())}")
    print(f"ce marked         {int(got.ce.sum())} of {len(got)} arrivals at the receiver")
    if df.attrs.get("truncated"):
        print("note: the trace reached 512 MiB and stopped recording", file=sys.stderr)
    if out is not None:
        if out.suffix.lower() == ".parquet":
            replace_atomic(out, lambda tmp: df.to_parquet(tmp, index=False))
        else:
            replace_atomic(out, lambda tmp: df.to_csv(tmp, index=False))
        print(f"rows              {len(df)}: {out}")
    return 0


def _cmd_credence(args: argparse.Namespace) -> int:
    import warnings

    from .learn import RarePositivesWarning, check_forest_out, check_trace_out, export_forest, trace, train, write_trace

    out = _check_out(args.out, kind="file")
    assert out is not None  # required by the parser
    try:  # before tracing or training: a file of the user's at --out would be replaced
        (check_trace_out if args.credence_command == "trace" else check_forest_out)(out)
    except ValueError as e:
        raise InputError(f"--out = {e}") from None
    if args.credence_command == "trace":
        from .learn import TraceTruncatedWarning

        with warnings.catch_warnings(record=True) as full:
            warnings.simplefilter("always", TraceTruncatedWarning)
            df = trace(args.scenario, seed=args.seed)
        write_trace(df, out)  # atomically: an interrupted write left half a Parquet file
        drops = int(df["dropped"].sum())
        print(f"{len(df)} switch arrivals, {drops} dropped by LQD ({drops / max(len(df), 1) * 100:.3f}%)")
        for w in full:  # one line, not Python's warning with its source line
            print(f"note: {w.message}", file=sys.stderr)
        print(f"trace: {out}")
        return 0
    import pandas as pd

    from .learn import ALL_FEATURES, LABEL_COLUMNS, MAX_DEPTH, MAX_TREES, check_trace

    # Checked here, not left to scikit-learn, whose messages name its own parameters.
    for option, value, most in (("--trees", args.trees, MAX_TREES), ("--depth", args.depth, MAX_DEPTH)):
        if value < 1:
            raise InputError(f"{option} = {value}: must be at least 1, e.g. 4 (the paper's)")
        if value > most:  # 10^9 trees allocated until memory ran out
            raise InputError(f"{option} = {value}: at most {most}, e.g. 4 (the paper's)")
    if not 0 <= args.seed < 2**32:
        raise InputError(f"--seed = {args.seed}: must be between 0 and 2^32 - 1, e.g. 1")
    features = [f.strip() for f in args.features.split(",") if f.strip()]
    needed = (*LABEL_COLUMNS, *(f for f in features if f in ALL_FEATURES))  # train() names an unknown feature
    frames = []
    for p in args.traces:
        if not Path(p).is_file():
            what = ("no such file" if not os.path.lexists(p) else
                    "a folder, not a decision trace" if Path(p).is_dir() else "not a regular file")
            raise InputError(f"TRACE = {p}: {what}; give a Parquet file that `slacknet credence trace` wrote")
        try:
            with open(p, "rb") as f:  # opened here: pyarrow refused a name that is not UTF-8
                frame = pd.read_parquet(f)
        except (OSError, ValueError) as e:
            raise InputError(f"cannot read trace {p}: {e}") from None
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise InputError(f"TRACE = {p}: not a decision trace (no column {', '.join(missing)}); give a Parquet "
                             "file that `slacknet credence trace` wrote")
        try:  # each file's values, so that the message names the file
            check_trace(frame, [f for f in features if f in ALL_FEATURES])
        except ValueError as e:
            raise InputError(f"TRACE = {p}: {e}; give a Parquet file that `slacknet credence trace` wrote") from None
        frames.append(frame)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RarePositivesWarning)
        try:
            report = train(frames, trees=args.trees, depth=args.depth,
                           features=features, seed=args.seed)
        except ValueError as e:
            raise InputError(str(e)) from None
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    print(report.render())
    try:
        path = export_forest(report, out)
    except ValueError as e:
        raise InputError(str(e)) from None
    print(f"model: {path}")
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .reproduce import ReproduceError, experiments_folder, list_papers, load_paper, render, reproduce

    _check_out(args.out)
    if args.paper == "coflow":  # before --jobs is checked: the coflow reproduction refuses it whatever its value
        return _reproduce_coflow(args)
    _check_jobs(args.jobs)
    if args.trace is not None:
        raise InputError(f"--trace = {args.trace}: only `slacknet reproduce coflow` reads a coflow trace")
    exp = experiments_folder(args.experiments)
    if args.list or args.paper is None:
        if not exp.is_dir():
            raise InputError(f"no experiments folder {exp}: run from a source checkout (its top folder) "
                             "or pass --experiments DIR")
        papers = list_papers(exp)
        if not args.list:
            raise InputError(f"name a paper to reproduce; the papers in {exp} are: {', '.join(papers) or 'none'}")
        if not papers:
            print(f"no papers in {exp} (folders holding reproduce.toml)", file=sys.stderr)
        for name in sorted([*papers, "coflow"]):
            print(name)
        return 0
    try:
        paper = load_paper(exp, args.paper)
        only = [f.strip() for f in args.only.split(",") if f.strip()] if args.only is not None else None
        if only == []:  # `--only ""` or `--only ,` made every figure
            raise InputError(f"--only = {args.only!r}: names no figure; give figure ids, e.g. --only "
                             f"{next(iter(paper.description.figure), 'fig7')}, or leave it out for all")
        out = Path(args.out) if args.out else Path("results") / "reproduce" / (
            f"{_safe_name(paper.name)}-full" if args.full else _safe_name(paper.name))
        t0 = time.perf_counter()
        report = reproduce(
            paper, out, full=args.full, jobs=args.jobs, only=only, seeds=args.seeds,
            on_done=lambda name: print(f"  {name} done", file=sys.stderr), cluster=args.cluster,
        )
    except ReproduceError as e:
        raise InputError(str(e)) from None
    print(render(report))
    print(f"results: {out} (CSV and PNG per figure); took {time.perf_counter() - t0:.0f} s")
    return 0


def _reproduce_coflow(args: argparse.Namespace) -> int:
    """`slacknet reproduce coflow`: the flow-level coflow models (not a reproduce.toml paper)."""
    from . import coflow

    for flag in ("list", "experiments", "only", "seeds", "jobs", "cluster"):
        if getattr(args, flag) is not None and getattr(args, flag) is not False:  # --jobs 0 == False
            raise InputError(f"--{flag}: not used by the coflow reproduction (it runs every table once, "
                             "deterministically, and reads no experiments folder); remove it")
    out = Path(args.out) if args.out else Path("results") / "reproduce" / ("coflow-full" if args.full else "coflow")
    t0 = time.perf_counter()
    try:
        report = coflow.reproduce(out, full=args.full, trace=args.trace)
    except coflow.CoflowError as e:
        # The API names its parameters; here they are options.
        text = str(e)
        for param, option in (("out_dir = ", "--out = "), ("trace = ", "--trace = ")):
            if text.startswith(param):
                text = option + text[len(param):]
        raise InputError(text) from None
    print(report.render())
    print(f"results: {out} (CSV per table, report.txt); took {time.perf_counter() - t0:.0f} s")
    return 0


def _names(key: str, text: str | None, allowed: Sequence[str], default: Sequence[str]) -> tuple[str, ...]:
    if text is None:
        return tuple(default)
    # Case-insensitive, as coflow's mechanisms and schedulers are (the allowed names are lower case).
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if not names:
        raise InputError(f"{key} = {text!r}: empty; give a comma-separated list from {','.join(allowed)}")
    for n in names:
        if n not in allowed:
            raise InputError(f"{key} = {n}: unknown; choose from {','.join(allowed)}")
    if len(set(names)) != len(names):
        raise InputError(f"{key} = {text}: a name is listed twice")
    return tuple(names)


def _ml_models(args: argparse.Namespace) -> tuple[str, ...]:
    """``--models``, by name (:func:`_ml_extras` checks they can be built)."""
    from . import mltol

    return _names("--models", args.models, tuple(mltol.MODEL_SPECS), ("mlp", "cnn", "rnn", "mf"))


def _ml_extras(models: tuple[str, ...], given: bool) -> None:
    """Refuse a model whose optional extra is missing (after the other arguments were checked,
    so that a bad argument is reported as itself). ``given``: the user named the models (else
    the message says the default list holds the model, and which list would run)."""
    from . import mltol

    for m in models:
        if mltol.MODEL_SPECS[m].needs is not None:
            try:
                mltol.MODEL_SPECS[m].build()
            except mltol.MissingExtraError as e:
                if given:
                    raise InputError(f"--models = {m}: {e}; or leave {m} out of --models") from None
                runnable = ",".join(n for n in models if mltol.MODEL_SPECS[n].needs is None)
                raise InputError(
                    f"--models (default {','.join(models)}) includes {m}: {e}; "
                    f"or run without it: --models {runnable}"
                ) from None


def _cmd_ml_profile(args: argparse.Namespace) -> int:
    import pandas as pd

    from . import mltol

    if _check_out(args.out, kind="file") is not None:
        try:
            mltol.check_profile_out(args.out)
        except ValueError as e:
            raise InputError(f"--out = {e}") from None
    models = _ml_models(args)
    if args.repeats < 1:
        raise InputError(f"--repeats = {args.repeats}: must be at least 1, e.g. 30")
    _ml_extras(models, args.models is not None)
    summary = None
    if args.tolerance is not None:
        try:
            summary = mltol.read_summary(args.tolerance)  # a regular file, bounded: a FIFO hung
        except (OSError, ValueError) as e:
            raise InputError(f"--tolerance = {e}; give the summary.csv that `slacknet ml tolerance` wrote") from None
        try:  # its rows for these models, before the seconds of timing them
            mltol.with_tolerance(pd.DataFrame({"model": list(models)}), summary)
        except ValueError as e:
            raise InputError(f"--tolerance = {args.tolerance}: {e}") from None
    table = mltol.profile(models, repeats=args.repeats)
    if summary is not None:
        try:
            table = mltol.with_tolerance(table, summary)
        except ValueError as e:
            raise InputError(f"--tolerance = {args.tolerance}: {e}") from None
    print(table.to_string(index=False))
    print("compute_us: one worker's gradient per iteration (median, this machine); ratio: compute_us over "
          "the gradient's time at 40 Gb/s")
    if summary is not None and "cnn" in models:
        try:
            pts = mltol.figure4_points(table)
        except ValueError as e:
            raise InputError(f"--tolerance = {args.tolerance}: {e}") from None
        print("\nFigure 4's per-model points (experiments/mlt/fig4_models.toml):")
        print(pts.to_string(index=False))
    elif summary is not None:
        print("\nFigure 4's points are not printed: every model is scaled by the cnn's size (ResNet20's parameters); add cnn to --models")
    if args.out:
        mltol.write_csv_atomic(table, Path(args.out))
        print(f"wrote {args.out}")
    return 0


def _cmd_ml(args: argparse.Namespace) -> int:
    import dataclasses

    from . import mltol

    if args.ml_command == "profile":
        return _cmd_ml_profile(args)
    _check_out(args.out)
    out = Path(args.out) if args.out else Path("results") / ("ml-tolerance-quick" if args.quick else "ml-tolerance")
    try:  # before training, not after: a runs.csv or summary.csv of the user's would be replaced
        mltol.check_tolerance_out(out)
    except ValueError as e:
        raise InputError(f"--out = {e}") from None
    models = _ml_models(args)
    policies = _names("--policy", args.policy, mltol.POLICIES, mltol.POLICIES)
    config = mltol.ToleranceConfig.quick() if args.quick else mltol.ToleranceConfig()
    config = dataclasses.replace(config, models=models, policies=policies)
    if args.seeds is not None:
        config = dataclasses.replace(config, seeds=tuple(args.seeds))
    if args.max_epochs is not None:
        if not 1 <= args.max_epochs <= 1000:
            raise InputError(f"--max-epochs = {args.max_epochs}: must be between 1 and 1000, e.g. 100")
        config = dataclasses.replace(config, max_epochs=args.max_epochs)
    if args.p_step is not None:
        if not 0.0 < args.p_step <= 1.0:
            raise InputError(f"--p-step = {args.p_step}: must be in (0, 1], e.g. 0.05")
        # Counted before mltol.p_grid lists them: 1e-12 would list 10^12 and run out of memory.
        points = math.floor(1.0 / args.p_step + 1e-9) + 1
        if points > MAX_P_POINTS:
            raise InputError(f"--p-step = {args.p_step}: gives {points} values of p from 0 to 1, more than "
                             f"{MAX_P_POINTS}; use a step of at least {1 / (MAX_P_POINTS - 1):g}, e.g. 0.05")
        config = dataclasses.replace(config, p_step=args.p_step)
    _ml_extras(models, args.models is not None)
    grid = mltol.p_grid(config.p_step)
    total = len(models) * len(policies) * len(config.seeds) * len(grid)
    print(f"training {total} runs: models {','.join(models)}, policies {','.join(policies)}, seeds "
          f"{','.join(map(str, config.seeds))}, p in 0..1 step {config.p_step}", file=sys.stderr)
    t0 = time.perf_counter()
    last_p = grid[-1]

    def done(row: dict[str, Any]) -> None:
        if row["p"] == last_p:
            print(f"  {row['model']} {row['policy']} seed {row['seed']} done", file=sys.stderr, flush=True)

    runs = mltol.tolerance(config, on_run=done)
    summary = mltol.summarize(runs)
    mltol.write_tolerance(runs, summary, out)
    print(mltol.render(summary))
    print("x1: largest p whose runs from 0 to p all converge within the lossless epochs (+10%, at least +1); "
          "x2: largest p whose runs from 0 to p all converge; paper x1 from Table 3, x2 from Figure 2")
    print(f"results: {out} (runs.csv, summary.csv); took {time.perf_counter() - t0:.0f} s")
    return 0


def _cmd_net(args: argparse.Namespace) -> int:
    from . import nettc

    try:
        if args.delete:
            commands = nettc.delete_commands(args.dev)
            header = [f"Removes the root qdisc of {args.dev} (what `slacknet net tc` configured); the kernel's "
                      "default returns."]
        else:
            cfg = nettc.TcConfig(
                dev=nettc.check_dev(args.dev), rate_bps=nettc.parse_rate(args.rate), mtu=args.mtu,
                buffer_bytes=args.buffer_bytes, classes=args.classes, form=args.form,
                link_header_bytes=args.link_header_bytes,
            )
            commands = nettc.setup_commands(cfg)
            header = nettc.header_lines(cfg)
        if not args.apply:
            sys.stdout.write(nettc.render_script(commands, header))
            return 0
        rollback = () if args.delete else nettc.delete_commands(args.dev)[1:]
        nettc.apply(commands, rollback=rollback)
    except nettc.TcConfigError as e:
        raise InputError(str(e)) from None
    except nettc.TcApplyError as e:
        # A kernel without the form's root qdisc is the choice of --form's fault; anything else, --apply's.
        where = f"--form = {args.form}" if e.missing in ("htb", "prio") else "--apply"
        raise InputError(f"{where}: {e}") from None
    # Quoted: a name the kernel allows may hold shell metacharacters ("a;b").
    import shlex

    dev = shlex.quote(args.dev)
    if args.delete:
        print(f"removed the configuration of {dev}")
    else:
        print(f"configured {dev}: {args.form}, {args.classes} classes (`tc -s class show dev {dev}` "
              "shows each class's counters)")
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from .plot import plot_results

    _check_out(args.out, may_be_results=True)
    for p in plot_results(args.results, args.out):
        print(p)
    return 0


def _is_scenario_key(key: str) -> bool:
    """Whether ``key`` (``workload[0].load``, ``<root>``) names a place in a scenario."""
    import json

    from .config import Scenario

    root = re.split(r"[.\[]", key, maxsplit=1)[0]
    if root in ("<root>", ""):
        return True
    return root in json.loads(Scenario.default().to_json())


def _describe(e: BaseException, source: str | None, command: str | None = None) -> tuple[str, str | None]:
    """The one-line message and an optional hint for an error in the user's input."""
    where = f" (in {source})" if source else ""
    if isinstance(e, SpecError):
        key = getattr(e, "key", None)
        if key == source:
            where = ""
        value = getattr(e, "value", None)
        message = getattr(e, "message", None)
        if key is None or message is None:
            return f"{e}{where}", _SPEC_HINT
        head = f"{key} = {value}" if value is not None else f"{key}"
        # The hint is about scenario keys: not for a sweep file's own keys or a --flow id.
        hint = _SPEC_HINT if command not in ("sweep", "trace") or _is_scenario_key(str(key)) else None
        return f"{head}: {message}{where}", hint
    if isinstance(e, SimError):
        key = getattr(e, "key", None)
        message = getattr(e, "message", None)
        text = f"{key}: {message}" if key is not None and message is not None else str(e)
        return f"{text}{where}", None
    if isinstance(e, ResultsError):
        return str(e), None
    if isinstance(e, OSError) and e.filename is not None:
        return f"{e.strerror or e}: {e.filename}", None
    return str(e), None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``slacknet`` command; returns the exit status."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: --help / --version (0) or a usage error (2)
        return e.code if isinstance(e.code, int) else EXIT_USER_ERROR
    handlers = {
        "run": _cmd_run,
        "validate": _cmd_validate,
        "trace": _cmd_trace,
        "summary": _cmd_summary,
        "plot": _cmd_plot,
        "compare": _cmd_compare,
        "sweep": _cmd_sweep,
        "credence": _cmd_credence,
        "reproduce": _cmd_reproduce,
        "ml": _cmd_ml,
        "net": _cmd_net,
    }
    source = getattr(args, "scenario", None) or getattr(args, "sweep", None) or getattr(args, "results", None)
    try:
        return handlers[args.command](args)
    except (SpecError, SimError, ResultsError, CompareError, InputError, OSError) as e:
        line, hint = _describe(e, source if isinstance(e, (SpecError, SimError)) else None, args.command)
        print(f"error: {line}", file=sys.stderr)
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
