"""Hostile inputs to the benchmark commands (audit): the Makefile's bench targets, the bench/
scripts and the peer runners' argument handling, flow lists and record files. Every bad input
is one line naming what is wrong, exit code 2; a run that fails is an error, never a figure.
Nothing here runs a real benchmark or a real peer: fake binaries and tiny files only."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import load_script

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
NS3PEER = BENCH / "peers" / "ns3" / "ns3peer.py"
HTSIMPEER = BENCH / "peers" / "htsim" / "htsimpeer.py"
GEN_FLOWS = BENCH / "peers" / "ns3" / "gen_flows.py"


def script(path: Path, *args: object, env: dict[str, str] | None = None, cwd: Path | None = None,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(path), *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def one_line_error(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    """Assert `proc` failed with `code` and one stderr line (no traceback) holding `needles`."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def executable(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# ---------------------------------------------------------------- bench/ab.py (make bench-ab)


def test_ab_refuses_a_build_that_is_not_a_slacknet_sim(tmp_path: Path) -> None:
    """BUILD_A=/bin/true (any program that runs and prints no simulator summary) was timed, and
    two such builds 'agreed' ("results same", exit 0) on printouts that were both empty."""
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    silent = executable(tmp_path / "true", "exit 0\n")
    proc = script(BENCH / "ab.py", "--runs", 1, silent, silent, scenario)
    line = one_line_error(proc, 2, "BUILD_A", str(silent), "slacknet-sim")
    assert "results same" not in proc.stdout and "B/A median" not in proc.stdout, (line, proc.stdout)


@pytest.mark.parametrize("runs", ["x", "", "2.5", "-1"])
def test_ab_runs_not_a_whole_number_is_one_line(tmp_path: Path, runs: str) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    build = executable(tmp_path / "sim", "echo 'events 1'\n")
    proc = script(BENCH / "ab.py", "--runs", runs, build, build, scenario)
    one_line_error(proc, 2, f"--runs = {runs}:", "whole number")


# ---------------------------------------------------- bench/scale_table.py (bench-scale-table)


def test_scale_table_a_binary_that_prints_nothing_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    silent = executable(tmp_path / "true", "exit 0\n")
    proc = script(BENCH / "scale_table.py", "--binary", silent, "--k", 4, "--ms", 0.01)
    one_line_error(proc, 1, "bench-scale-table: --binary", "'events'")


def test_scale_table_a_failing_binary_is_exit_1_without_a_traceback(tmp_path: Path) -> None:
    bad = executable(tmp_path / "bad", "echo 'error: broken' >&2\nexit 3\n")
    proc = script(BENCH / "scale_table.py", "--binary", bad, "--k", 4, "--ms", 0.01)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "exit 3" in proc.stderr and "broken" in proc.stderr


def test_scale_table_bad_argument_is_one_line() -> None:
    one_line_error(script(BENCH / "scale_table.py", "--k", "x"), 2, "bench-scale-table:", "--k", "'x'")


# ---------------------------------------------------- bench/targets.py (make bench-targets)


def test_targets_a_garbled_timing_line_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    sim = executable(tmp_path / "sim", "echo 'events 1'\necho 'cpu time          fast'\n"
                     "echo 'wall time         1.0 s'\necho 'peak memory       9 MB'\n")
    k16 = tmp_path / "k16.toml"
    k16.write_text("")
    proc = script(BENCH / "targets.py", "--only", "k16", "--runs", 1, "--binary", sim, "--k16-scenario", k16)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "slacknet-sim" in proc.stderr and "holds" not in proc.stdout


def _make_dry(*args: str) -> subprocess.CompletedProcess[str]:
    """``make -n`` of this Makefile as a user would type it, also under ``make test``: without
    the parent make's MAKEFLAGS and MAKELEVEL (which add "Entering directory" lines and the
    parent's variables)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}
    return subprocess.run(["make", "--no-print-directory", "-n", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.mark.parametrize(("var", "needle"), [
    ("TARGETS_ONLY=bogus", "TARGETS_ONLY=bogus"),
    ("TARGETS_ONLY=k16 ls256", "TARGETS_ONLY=k16 ls256"),
    ("TARGETS_RUNS=0", "TARGETS_RUNS=0"),
    ("TARGETS_RUNS=x", "TARGETS_RUNS=x"),
    ("TARGETS_RUNS=", "TARGETS_RUNS=:"),
])
def test_make_bench_targets_refuses_bad_variables_before_anything_runs(var: str, needle: str) -> None:
    """Before: install, the builds and the ns-3 install (minutes) ran, then bench/targets.py
    refused the value. `make -n` is a dry run: nothing is built or run either way."""
    proc = _make_dry("bench-targets", var)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == "", "refused before any command"
    assert f"bench-targets: {needle}" in proc.stderr


def test_make_bench_targets_accepts_good_variables() -> None:
    for extra in ([], ["TARGETS_ONLY=k16", "TARGETS_RUNS=5"], ["TARGETS_ONLY=ls256"]):
        proc = _make_dry("bench-targets", *extra)
        assert proc.returncode == 0, (extra, proc.stderr)
        assert "bench/targets.py" in proc.stdout


# ------------------------------------------ bench/credence_overhead.py, bench/udp_lossy.py


@pytest.mark.parametrize("reps", ["x", "0", "-2"])
def test_credence_overhead_bad_reps_is_one_line(reps: str) -> None:
    proc = script(BENCH / "credence_overhead.py", reps)
    one_line_error(proc, 2, f"REPS = {reps}:", "at least 1")


@pytest.mark.parametrize(("args", "needle"), [(("--runs", 0), "--runs 0"), (("--mb", -1), "--mb -1"),
                                              (("--flood", "nan"), "--flood nan")])
def test_udp_lossy_bad_arguments_are_refused_before_the_testbed(args: tuple[object, ...], needle: str) -> None:
    one_line_error(script(BENCH / "udp_lossy.py", *args), 2, needle)


# ------------------------------------------------------------- bench/peers/ns3/gen_flows.py


@pytest.mark.parametrize(("flows", "args", "needle"), [
    (None, (), "--sizes-from"),  # missing file
    ("0 1 2 0.1\n", (), "line 1"),  # short line
    ("0 1 2 0.1 big 0\n", (), "line 1"),
    ("# nothing\n", (), "no non-incast flows"),
    ("0 1 20 0.1 1000 0\n", ("--leaves", 1), "--leaves 1"),  # was a hang: no other leaf
    ("0 1 20 0.1 1000 0\n", ("--load", -1), "--load -1"),  # was a hang: time ran backwards
    ("0 1 20 0.1 1000 0\n", ("--load", 0), "--load 0"),
    ("0 1 20 0.1 1000 0\n", ("--hosts-per-leaf", 0), "--hosts-per-leaf 0"),
    ("0 1 20 0.1 1000 0\n", ("--leaves", "x"), "--leaves"),
])
def test_gen_flows_bad_input_is_one_line(tmp_path: Path, flows: str | None, args: tuple[object, ...],
                                         needle: str) -> None:
    src = tmp_path / "flows.txt"
    if flows is not None:
        src.write_text(flows)
    proc = script(GEN_FLOWS, "--sizes-from", src, "--out", tmp_path / "out.txt", *args, timeout=20)
    one_line_error(proc, 2, "gen_flows:", needle)
    assert not (tmp_path / "out.txt").exists()


def test_gen_flows_still_generates(tmp_path: Path) -> None:
    src = tmp_path / "flows.txt"
    src.write_text("# id src dst start_s size_bytes incast\n0 1 20 0.1 1000 0\n1 2 3 0.1 50 1\n")
    out = tmp_path / "out.txt"
    proc = script(GEN_FLOWS, "--sizes-from", src, "--out", out, "--leaves", 2, "--hosts-per-leaf", 4,
                  "--window-s", 0.0001)
    assert proc.returncode == 0, proc.stderr
    rows = [ln.split() for ln in out.read_text().splitlines() if not ln.startswith("#")]
    assert rows and all(r[4] == "1000" and int(r[1]) // 4 != int(r[2]) // 4 for r in rows)


# ------------------------------------------------------------------ the peer runners' CLIs


def peer_env(tmp_path: Path) -> dict[str, str]:
    """Caches under tmp_path (never ~/.cache) and no peer folders from the environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("HTSIM_DIR", "NS3_DIR")}
    env.update(SLACKNET_NS3_HOME=str(tmp_path / "ns3home"), SLACKNET_HTSIM_HOME=str(tmp_path / "htsimhome"),
               CXX="true")
    return env


@pytest.mark.parametrize("runner", [NS3PEER, HTSIMPEER])
def test_summarize_a_truncated_record_file_is_one_line(tmp_path: Path, runner: Path) -> None:
    """A record file cut short (a run killed while writing) was a traceback (IndexError)."""
    rec = tmp_path / "fct.txt"
    rec.write_text("# id src dst start_s size_bytes incast fct_ns ideal_ns slowdown\n"
                   "0 0 20 0.0 2000 0 41600 25600 1.625\n1 0 21 0.0 20")
    proc = script(runner, "summarize", rec, env=peer_env(tmp_path))
    one_line_error(proc, 2, str(rec), "line 3", "cut short")


@pytest.mark.parametrize(("folder", "what"), [("missing", "no such"), ("file", "a file"), ("other", "another project")])
def test_a_peer_folder_that_is_not_a_peer_is_exit_2_naming_the_variable(tmp_path: Path, folder: str,
                                                                         what: str) -> None:
    given = tmp_path / folder
    if folder == "file":
        given.write_text("x")
    elif folder == "other":
        (given / "src").mkdir(parents=True)
        (given / "CMakeLists.txt").write_text("project(other)\n")
    env = peer_env(tmp_path)
    one_line_error(script(HTSIMPEER, "ensure", "--htsim", given, env=env), 2, "HTSIM_DIR / --htsim", str(given),
                   "not a UEC htsim checkout")
    one_line_error(script(NS3PEER, "ensure", "--ns3-dir", given, env=env), 2, "--ns3-dir", str(given),
                   "not a built ns-3.44 tree")


def test_htsim_flow_list_with_a_bad_value_names_the_line() -> None:
    hp = load_script("htsimpeer_hostile", HTSIMPEER)
    with pytest.raises(hp.HtsimPeerUsage, match=r"flow list line 2: '0 0 20 x 2000 0'"):
        hp.read_flows("# id src dst start_s size_bytes incast\n0 0 20 x 2000 0\n")
    with pytest.raises(hp.HtsimPeerUsage, match="line 1: start_s nan"):
        hp.read_flows("0 0 20 nan 2000 0\n")
    with pytest.raises(hp.HtsimPeerUsage, match="spines = 0"):
        hp.topology_file(2, 16, 0, 10, 3000)


@pytest.mark.parametrize("runner", ["ns3", "htsim"])
def test_an_empty_flow_list_is_refused_not_timed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  runner: str) -> None:
    """An empty flow list ran the peer on nothing and reported its wall time (0.02-0.04 s)."""
    ran = tmp_path / "ran"
    fake = executable(tmp_path / "peer", f"touch {ran}\necho 'flows=0 finished=0'\n")
    flows = tmp_path / "flows.txt"
    flows.write_text("# id src dst start_s size_bytes incast\n\n")
    if runner == "ns3":
        mod = load_script("ns3peer_hostile", NS3PEER)
        monkeypatch.setattr(mod, "ensure", lambda ns3_dir=None: fake)
        with pytest.raises(mod.Ns3PeerUsage, match="has no flows"):
            mod.run(flows, tmp_path / "out.txt")
        assert mod._main(["run", "--flows", str(flows), "--out", str(tmp_path / "out.txt")]) == 2
    else:
        mod = load_script("htsimpeer_hostile", HTSIMPEER)
        monkeypatch.setattr(mod, "ensure", lambda htsim_dir=None, as_shipped=False: fake)
        with pytest.raises(mod.HtsimPeerUsage, match="has no flows"):
            mod.run(flows, tmp_path / "out.txt")
        assert mod._main(["run", "--flows", str(flows), "--out", str(tmp_path / "out.txt")]) == 2
    assert not ran.exists(), "the peer did not run"


# ----------------------------------------------------- bench/approx_loopback.py (bench-approx)
@pytest.mark.parametrize("args, needle", [
    (["--records", "10"], "--records 10"),
    (["--loss", "0.9"], "--loss 0.9"),
    (["--runs", "0"], "--runs 0"),
    (["--bounds", "0.1,x"], "--bounds '0.1,x'"),
    (["--bounds", "0.1,2"], "must be in (0, 1)"),
    (["--records", "many"], "--records"),
    (["--testbed", "--flood", "-1"], "--flood -1"),
])
def test_approx_bench_bad_arguments_are_one_line(args: list[str], needle: str) -> None:
    one_line_error(script(BENCH / "approx_loopback.py", *args), 2, needle)


def test_approx_bench_a_failing_receiver_or_send_is_one_line_exit_1(monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A receiver that raised printed its thread's traceback and then an IndexError's (got[0]);
    a send that failed was reported, then the process waited up to 60 s for the receiver."""
    import threading

    from slacknet import approx
    from slacknet.net import Endpoint

    mod = load_script("approx_loopback_hostile", BENCH / "approx_loopback.py")

    def bad_receiver(endpoint: object, timeout: float | None = None) -> None:
        raise approx.ApproxFormatError("received table: garbled")

    def bad_send(self: object, *a: object, **k: object) -> None:
        raise TimeoutError("the job did not end within 120 s")

    def waiting_receiver(endpoint: object, timeout: float | None = None) -> None:
        gate.wait(30)

    monkeypatch.setattr(approx, "recv_table", bad_receiver)
    assert mod.main(["--records", "1000", "--runs", "1", "--bounds", "0.1"]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["error: reliable (msr 1): the transfer failed: the receiver failed: "
                                        "ApproxFormatError: received table: garbled"], err
    gate = threading.Event()
    monkeypatch.setattr(approx, "recv_table", waiting_receiver)
    monkeypatch.setattr(Endpoint, "send_job", bad_send)
    try:
        assert mod.main(["--records", "1000", "--runs", "1", "--bounds", "0.1"]) == 1
        assert "the job did not end" in capsys.readouterr().err
        lingering = [t for t in threading.enumerate() if t.is_alive() and not t.daemon and t is not threading.main_thread()]
        assert not lingering, lingering  # the interpreter would wait for them at exit
    finally:
        gate.set()
