"""`bench/_cli.py`, what the bench scripts share on the command line: one-line argument errors
with exit code 2, and Ctrl-C as one line, ``interrupted``, with exit code 130, no child process
left running and no half-written result. Every script still starts, from another folder too,
and its entry point turns a KeyboardInterrupt in its work into exit code 130. Nothing here runs
a benchmark: the work functions are replaced by ones that raise, and the children are sleeps."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"

#: Every script, with how its entry point is named.
SCRIPTS = {
    "ab": (BENCH / "ab.py", "main"),
    "approx_loopback": (BENCH / "approx_loopback.py", "main"),
    "collective_testbed": (BENCH / "collective_testbed.py", "main"),
    "coflow_peer": (BENCH / "coflow_peer.py", "main"),
    "credence_overhead": (BENCH / "credence_overhead.py", "main"),
    "credence_regime": (BENCH / "credence_regime.py", "main"),
    "pgo": (BENCH / "pgo.py", "main"),
    "scale_table": (BENCH / "scale_table.py", "main"),
    "sim_vs_testbed": (BENCH / "sim_vs_testbed.py", "main"),
    "sweep_scaling": (BENCH / "sweep_scaling.py", "main"),
    "targets": (BENCH / "targets.py", "main"),
    "udp_lossy": (BENCH / "udp_lossy.py", "main"),
    "gen_flows": (BENCH / "peers" / "ns3" / "gen_flows.py", "main"),
    "ns3peer": (BENCH / "peers" / "ns3" / "ns3peer.py", "_main"),
    "htsimpeer": (BENCH / "peers" / "htsim" / "htsimpeer.py", "_main"),
}


def load(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Script ``name`` loaded from its path as a test loads it (``bench/`` not on the path
    beforehand), registered while the test runs (dataclasses look their module up)."""
    path, _ = SCRIPTS[name] if name in SCRIPTS else (BENCH / f"{name}.py", "")
    spec = importlib.util.spec_from_file_location(f"bench_cli_{name}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, mod)
    spec.loader.exec_module(mod)
    return mod


def executable(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def assert_interrupted(code: object, err: str) -> None:
    """Exit code 130 and one line for it, after any progress lines; no traceback."""
    assert code == 130, err
    assert err.strip().splitlines()[-1:] == ["interrupted"] and "Traceback" not in err, err


def is_running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "zombie" not in fh.read().lower()
    except FileNotFoundError:
        return False


# ------------------------------------------------------------------------- the shared module


def test_parser_errors_are_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    cli = load("_cli", monkeypatch)
    for kwargs, prefix in (({}, "error"), ({"error_prefix": "bench-x"}, "bench-x")):
        p = cli.Parser(prog="x.py", **kwargs)
        p.add_argument("--n", type=int)
        with pytest.raises(SystemExit) as e:
            p.parse_args(["--n", "many"])
        assert e.value.code == 2
        assert capsys.readouterr().err.splitlines() == [f"{prefix}: argument --n: invalid int value: 'many'"]


def test_positive_int_takes_whole_numbers_of_at_least_one(monkeypatch: pytest.MonkeyPatch) -> None:
    cli = load("_cli", monkeypatch)
    assert [cli.positive_int(v) for v in ("1", "7", 3, " 2")] == [1, 7, 3, 2]
    assert [cli.positive_int(v) for v in ("0", "-1", "x", "", "2.5")] == [None] * 5


def test_interruptible_turns_ctrl_c_into_one_line_and_130(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    cli = load("_cli", monkeypatch)

    @cli.interruptible
    def main(code: int, interrupt: bool) -> int:
        if interrupt:
            raise KeyboardInterrupt
        return code

    assert main(3, False) == 3 and capsys.readouterr().err == ""
    assert_interrupted(main(3, True), capsys.readouterr().err)


def test_stop_kills_and_reaps_children(monkeypatch: pytest.MonkeyPatch) -> None:
    cli = load("_cli", monkeypatch)
    running = subprocess.Popen(["sleep", "30"])
    ended = subprocess.Popen(["true"])
    ended.wait()
    cli.stop(running, ended, None)
    assert running.returncode == -signal.SIGKILL and not is_running(running.pid)


# ---------------------------------------------------------- every script starts, from anywhere


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_every_script_loads_by_path_from_another_folder(tmp_path: Path, name: str) -> None:
    """As the tests load them (importlib, bench/ not on the path) and from another folder: the
    import of `_cli` finds bench/ by the script's own path."""
    path, entry = SCRIPTS[name]
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('m', {str(path)!r})\n"
            "mod = importlib.util.module_from_spec(spec); sys.modules['m'] = mod; spec.loader.exec_module(mod)\n"
            f"assert callable(mod.{entry}) and mod.{entry}.__wrapped__\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(("name", "args", "code", "needle"), [
    ("ab", ["--help"], 0, "usage: bench/ab.py"),
    ("ab", ["--runs"], 2, "error: argument --runs: expected one argument"),
    ("approx_loopback", ["--help"], 0, "usage: bench/approx_loopback.py"),
    ("approx_loopback", ["--records", "10"], 2, "error: --records 10: give 1,000 to 50,000,000"),
    ("coflow_peer", [], 2, "coflow_peer: usage: python bench/coflow_peer.py"),
    ("credence_overhead", ["x"], 2, "bench-credence: REPS = x:"),
    ("credence_regime", ["--help"], 0, "usage: "),
    ("pgo", ["--help"], 0, "usage: "),
    ("scale_table", ["--help"], 0, "usage: bench/scale_table.py"),
    ("scale_table", ["--k", "x"], 2, "bench-scale-table: argument --k: invalid int value: 'x'"),
    ("sweep_scaling", ["--help"], 0, "usage: bench/sweep_scaling.py"),
    ("sweep_scaling", ["--runs", "0"], 2, "bench-sweep: --runs 0: a whole number of runs from 1 to 10000"),
    ("sweep_scaling", ["--ms", "0"], 2, "bench-sweep: --ms 0.0: simulated milliseconds in (0, 1000]"),
    ("targets", ["--help"], 0, "usage: bench/targets.py"),
    ("targets", ["--runs", "0"], 2, "bench-targets: --runs 0: give a whole number"),
    ("udp_lossy", ["--runs", "0"], 2, "bench-udp-lossy: --runs 0:"),
    ("gen_flows", ["--help"], 0, "usage: gen_flows.py"),
    ("gen_flows", [], 2, "gen_flows: the following arguments are required: --sizes-from, --out"),
    ("ns3peer", ["--help"], 0, "usage: ns3peer.py"),
    ("htsimpeer", ["--help"], 0, "usage: htsimpeer.py"),
])
def test_scripts_run_from_another_folder(tmp_path: Path, name: str, args: list[str], code: int,
                                         needle: str) -> None:
    """Run as the Makefile runs them, from another working directory: help, or one line and
    exit code 2 for a bad argument (never a benchmark run)."""
    proc = subprocess.run([sys.executable, str(SCRIPTS[name][0]), *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    if code == 0:
        assert proc.stdout.startswith(needle), proc.stdout
    else:
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(needle), proc.stderr


# ------------------------------------------------------------------------------------ Ctrl-C


def _ab(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod, "compare", interrupt)
    sim, scenario = executable(tmp / "sim", "echo 'events 1'\n"), tmp / "s.toml"
    scenario.write_text("")
    return lambda: mod.main(["--runs", "1", str(sim), str(sim), str(scenario)])


def _scale_table(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod, "run", interrupt)
    sim = executable(tmp / "sim", "exit 0\n")
    return lambda: mod.main(["--binary", str(sim), "--k", "4", "--ms", "0.01"])


def _targets(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod, "measure_k16", interrupt)
    sim, scenario = executable(tmp / "sim", "exit 0\n"), tmp / "k16.toml"
    scenario.write_text("")
    return lambda: mod.main(["--only", "k16", "--runs", "1", "--binary", str(sim), "--k16-scenario", str(scenario)])


def _approx_loopback(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod, "_table", interrupt)
    return lambda: mod.main(["--records", "1000", "--runs", "1"])


def _coflow_peer(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod.coflow, "find_trace", interrupt)
    return lambda: mod.main([str(tmp), "FAIR"])


def _credence_overhead(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod, "wall_ratio", interrupt)
    return lambda: mod.main(["1"])


def _credence_regime(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod, "measure", interrupt)
    return lambda: mod.main(["--stage", "oat", "--out", str(tmp / "grid.csv")])


def _pgo(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod, "find_profdata", interrupt)
    return lambda: mod.main(["binary"])


def _sim_vs_testbed(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod.testbed, "available", interrupt)
    return lambda: mod.main()


def _collective_testbed(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod.testbed, "available", interrupt)
    return lambda: mod.main([])


def _udp_lossy(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod.testbed, "available", interrupt)
    return lambda: mod.main([])


def _gen_flows(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod, "read_sizes", interrupt)
    return lambda: mod.main(["--sizes-from", str(tmp / "f.txt"), "--out", str(tmp / "out.txt")])


def _ns3peer(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod, "ensure", interrupt)
    return lambda: mod._main(["ensure"])


def _htsimpeer(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod, "ensure", interrupt)
    return lambda: mod._main(["ensure", "--htsim", str(tmp)])


def _sweep_scaling(mod: ModuleType, tmp: Path, mp: pytest.MonkeyPatch) -> Callable[[], object]:
    mp.setattr(mod, "_timed", interrupt)
    return lambda: mod.main(["--runs", "1", "--ms", "1"])


def interrupt(*args: Any, **kwargs: Any) -> Any:
    raise KeyboardInterrupt


INTERRUPTED_WORK = {"ab": _ab, "scale_table": _scale_table, "targets": _targets,
                    "approx_loopback": _approx_loopback, "coflow_peer": _coflow_peer,
                    "credence_overhead": _credence_overhead, "credence_regime": _credence_regime, "pgo": _pgo,
                    "sim_vs_testbed": _sim_vs_testbed, "sweep_scaling": _sweep_scaling, "collective_testbed": _collective_testbed, "udp_lossy": _udp_lossy, "gen_flows": _gen_flows,
                    "ns3peer": _ns3peer, "htsimpeer": _htsimpeer}


def test_every_script_has_a_ctrl_c_case() -> None:
    assert sorted(INTERRUPTED_WORK) == sorted(SCRIPTS)


@pytest.mark.parametrize("name", sorted(INTERRUPTED_WORK))
def test_ctrl_c_in_the_work_is_one_line_and_exit_130(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str], name: str) -> None:
    mod = load(name, monkeypatch)
    call = INTERRUPTED_WORK[name](mod, tmp_path, monkeypatch)
    capsys.readouterr()
    code = call()
    assert_interrupted(code, capsys.readouterr().err)


def test_sigint_stops_the_script_and_its_child(tmp_path: Path) -> None:
    """A real SIGINT, to the script alone (not its process group, which a terminal's Ctrl-C
    also reaches): the build it is timing is stopped, one line, exit code 130."""
    pid_file = tmp_path / "pid"
    sim = executable(tmp_path / "sim", f"echo $$ > {pid_file}\nexec sleep 30\n")
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    proc = subprocess.Popen([sys.executable, str(SCRIPTS["ab"][0]), "--runs", "1", str(sim), str(sim), str(scenario)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 20
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline and proc.poll() is None, "the build did not start"
            time.sleep(0.05)
        child = int(pid_file.read_text())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert_interrupted(proc.returncode, err)
    time.sleep(0.2)
    assert not is_running(child)


# ---------------------------------------------------- no half-written result looks whole


@pytest.mark.parametrize("runner", ["ns3peer", "htsimpeer"])
def test_an_interrupted_peer_run_stops_the_peer_and_leaves_no_records(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str],
                                                                     runner: str) -> None:
    mod = load(runner, monkeypatch)
    pid_file = tmp_path / "pid"
    # A peer that writes half its records (dc_bench's --out=, or nothing: htsimpeer writes its
    # own), then runs on.
    fake = executable(tmp_path / "peer", f"echo $$ > {pid_file}\n"
                      'for a; do case $a in --out=*) echo "0 0 20 0.0 2000 0 41600" > "${a#--out=}";; esac; done\n'
                      "exec sleep 30\n")
    monkeypatch.setattr(mod, "ensure", lambda *a, **k: fake)
    flows = tmp_path / "flows.txt"
    flows.write_text("0 0 20 0.0 2000 0\n")
    out = tmp_path / "fct.txt"

    def ctrl_c_while_waiting(pid: int, options: int) -> Any:
        deadline = time.monotonic() + 20
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline, "the peer did not start"
            time.sleep(0.05)
        time.sleep(0.1)
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "wait4", ctrl_c_while_waiting)
    code = mod._main(["run", "--flows", str(flows), "--out", str(out)])
    assert_interrupted(code, capsys.readouterr().err)
    assert not is_running(int(pid_file.read_text()))
    assert not out.exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_an_interrupted_grid_write_keeps_the_last_whole_grid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    mod = load("credence_regime", monkeypatch)
    out = tmp_path / "grid.csv"
    mod.write_csv(pd.DataFrame({"key": ["a"], "x": [1.0]}), out)
    whole = out.read_text()
    real = pd.DataFrame.to_csv

    def cut_short(self: pd.DataFrame, path: Any, **kw: Any) -> None:
        real(self.head(1), path, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(pd.DataFrame, "to_csv", cut_short)
    with pytest.raises(KeyboardInterrupt):
        mod.write_csv(pd.DataFrame({"key": ["a", "b"], "x": [1.0, 2.0]}), out)
    assert out.read_text() == whole
    assert [p.name for p in tmp_path.iterdir()] == ["grid.csv"]


def test_an_interrupted_flow_list_is_not_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    mod = load("gen_flows", monkeypatch)
    src = tmp_path / "f.txt"
    src.write_text("0 1 20 0.1 1000 0\n")
    monkeypatch.setattr(os, "replace", interrupt)
    code = mod.main(["--sizes-from", str(src), "--out", str(tmp_path / "out.txt"), "--leaves", "2",
                     "--hosts-per-leaf", "4", "--window-s", "0.0001"])
    assert_interrupted(code, capsys.readouterr().err)
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


class _FakeTestbed:
    """A stand-in for slacknet.testbed.Testbed: ``python`` runs ``scripts[host]`` locally."""

    def __init__(self, scripts: dict[int, str]) -> None:
        self.scripts = scripts

    def __call__(self, **_: Any) -> _FakeTestbed:
        return self

    def __enter__(self) -> _FakeTestbed:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def address(self, host: int) -> str:
        return f"10.0.0.{host + 1}"

    def python(self, host: int, script: Path, *args: str, stdout: Any = None) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-c", self.scripts[host]], stdout=stdout, text=True)


@pytest.mark.parametrize("rx, tx, says", [
    ("import time; print('ready', flush=True); time.sleep(30)", "import sys; sys.exit(3)",
     r"the sender at p = 1 failed \(exit code 3, last line 'none'"),
    ("import time; print('ready', flush=True); time.sleep(30)", "print('Traceback: boom')",
     r"the sender at p = 1 failed \(exit code 0, last line 'Traceback: boom'"),
    ("import sys; sys.exit(1)", "print(1.0)", r"the receiver did not start \(it said ''"),
])
def test_sim_vs_testbed_a_failing_child_is_one_line_and_exit_1(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str],
                                                               rx: str, tx: str, says: str) -> None:
    # It was an IndexError (no time printed) or an AssertionError (no "ready") traceback.
    mod = load("sim_vs_testbed", monkeypatch)
    monkeypatch.setattr(mod.testbed, "available", lambda: None)
    monkeypatch.setattr(mod.testbed, "Testbed", _FakeTestbed({0: tx, 1: rx}))
    assert mod.main() == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bench-sim-vs-testbed: ")
    assert re.search(says, err[0]), err[0]


@pytest.mark.parametrize("args, says", [
    (["--workers", "0"], "--workers 0: give a whole number, at least 1"),
    (["--values", "x"], "--values x: give a whole number, at least 1"),
    (["--p", "1.0"], r"--p 1.0: give fractions in \(0, 1\)"),
    (["--p", "0.9,nope"], r"--p 0.9,nope: give fractions"),
    (["--flood", "-1"], "--flood -1: give the competing UDP"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bench_collective_bad_arguments_are_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 args: list[str], says: str) -> None:
    mod = load("collective_testbed", monkeypatch)
    monkeypatch.setattr(mod.testbed, "available", lambda: pytest.fail("checked before the testbed"))
    with pytest.raises(SystemExit) as ei:
        mod.main(args)
    err = capsys.readouterr().err.strip().splitlines()
    assert ei.value.code == 2 and len(err) == 1 and err[0].startswith("bench-collective: ")
    assert re.search(says, err[0]), err[0]
