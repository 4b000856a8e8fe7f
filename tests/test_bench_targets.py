"""`bench/targets.py` (`make bench-targets`): issue 15's targets against measured figures. Fake
simulator binaries (shell scripts printing the lines `slacknet-sim` prints) stand in for the
k = 16 runs and fake peers (tests/fake_peers.py) for ns-3 and htsim, so the tests are fast and
know the answers."""

from __future__ import annotations

import importlib.util
import platform
import re
import stat
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from slacknet.compare import Comparison

from .conftest import flow_list_scenario
from .fake_peers import fake_python, runs

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ROOT / "bench" / "targets.py"


def targets_module() -> ModuleType:
    sys.path.insert(0, str(TARGETS.parent))  # it imports scale_table from its folder
    try:
        spec = importlib.util.spec_from_file_location("bench_targets", TARGETS)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # its dataclasses look their module up
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(TARGETS.parent))
    return mod


def fake_sim(path: Path, cpu_s: list[float], mem_mb: float = 63.2) -> Path:
    """A `slacknet-sim` whose k-th run prints ``cpu_s[k]`` CPU seconds (a second more of wall)."""
    counter = path.with_suffix(".count")
    cases = "\n".join(f"  {i}) cpu={c}; wall={c + 1};;" for i, c in enumerate(cpu_s))
    path.write_text(
        "#!/bin/sh\n"
        f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}\n"
        f'case "$n" in\n{cases}\nesac\n'
        "echo 'scenario          fake'\n"
        "echo 'flows             10 (10 finished)'\n"
        "echo 'events            1000'\n"
        "echo 'packet-hops       800'\n"
        'echo "wall time         $wall s (setup 0.001 s)"\n'
        'echo "cpu time          $cpu s (user + system)"\n'
        "echo 'events/s          1.0e3 (per CPU s)'\n"
        f"echo 'peak memory       {mem_mb} MB'\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def targets(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TARGETS), *map(str, args)], capture_output=True, text=True, cwd=cwd)


def scenario(tmp_path: Path) -> Path:
    p = tmp_path / "k16_short.toml"
    p.write_text("")  # the fake binary reads nothing
    return p


@pytest.mark.parametrize(("cpu", "holds"), [([61.0, 58.1, 59.2], "yes (median)"), ([58.0, 60.5, 61.0], "no (median)")])
def test_k16_median_cpu_decides(tmp_path: Path, cpu: list[float], holds: str) -> None:
    sim = fake_sim(tmp_path / "sim", cpu)
    proc = targets("--only", "k16", "--runs", 3, "--binary", sim, "--k16-scenario", scenario(tmp_path), "--no-calibration")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    time_line = next(ln for ln in lines if ln.startswith("k16 on k16_short.toml: < 60 s"))
    lo, med = min(cpu), sorted(cpu)[1]
    assert f"CPU min {lo:.1f} / median {med:.1f} s of 3; wall median {med + 1:.1f} s" in time_line
    assert time_line.rstrip().endswith(holds)
    mem_line = next(ln for ln in lines if ln.startswith("k16 on k16_short.toml: < 150 MB"))
    assert "63 MB (max of 3)" in mem_line and mem_line.rstrip().endswith("yes")
    assert lines[-1].startswith(f"{2 if holds.startswith('yes') else 1} of 2 targets hold")
    assert proc.stderr.count("k16 run ") == 3  # progress, one line a run


def test_k16_memory_over_the_target(tmp_path: Path) -> None:
    fake_sim(tmp_path / "sim", [10.0], mem_mb=151.0)
    scenario(tmp_path)
    # Paths relative to where it was started (the runs themselves start in the scenario's folder).
    proc = targets("--only", "k16", "--runs", 1, "--binary", "./sim", "--k16-scenario", "k16_short.toml", "--no-calibration",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    mem_line = next(ln for ln in proc.stdout.splitlines() if "< 150 MB" in ln)
    assert "151 MB (max of 1)" in mem_line and mem_line.rstrip().endswith("no")


def test_bad_arguments_are_one_line_and_exit_code_2(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("not a program")
    sim = fake_sim(tmp_path / "sim", [1.0])
    k16 = scenario(tmp_path)
    k16_with = ("--only", "k16", "--k16-scenario", k16, "--binary")
    cases = [
        ((*k16_with, tmp_path / "missing"), f"bench-targets: --binary {tmp_path / 'missing'}: not an executable file"),
        ((*k16_with, plain), f"bench-targets: --binary {plain}: not an executable"),
        ((*k16_with, sim, "--runs", 0), "bench-targets: --runs 0: give a whole number"),
        ((*k16_with, sim, "--runs", "x"), "bench-targets: --runs x: give a whole number"),
        (("--only", "k16", "--binary", sim, "--k16-scenario", tmp_path / "no.toml"), "bench-targets: --k16-scenario"),
        (("--only", "all"), "bench-targets: argument --only: invalid choice: 'all'"),
        (("--only", "ls256", "--ls256-scenario", tmp_path / "no.toml"), "bench-targets: --ls256-scenario"),
    ]
    for args, start in cases:
        proc = targets(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(start), (args, proc.stderr)
    assert not tmp_path.joinpath("sim.count").exists(), "nothing ran"


def test_a_failing_run_is_exit_code_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_text("#!/bin/sh\necho 'error: broken' >&2\nexit 3\n")
    bad.chmod(bad.stat().st_mode | stat.S_IXUSR)
    proc = targets("--only", "k16", "--runs", 1, "--binary", bad, "--k16-scenario", scenario(tmp_path), "--no-calibration")
    assert proc.returncode == 1 and "exit 3" in proc.stderr and "broken" in proc.stderr


def _comparison(walls: dict[str, float], skipped: dict[str, str] | None = None) -> Comparison:
    return Comparison(scenario="ls256", table=pd.DataFrame(), slacknet=pd.DataFrame(), ns3=pd.DataFrame(),
                      wall_s=walls, repeat=3, skipped=skipped or {})


def test_the_machine_is_timed_before_and_after_the_k16_runs(tmp_path: Path) -> None:
    # A pointer chase over 256 MiB, 16 MiB and 256 KiB, built from bench/memlat.c, beside the verdicts.
    sim = fake_sim(tmp_path / "sim", [50.0])
    proc = targets("--only", "k16", "--runs", 1, "--binary", sim, "--k16-scenario", scenario(tmp_path))
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("machine: "))
    one = r"\d+ ns over 256 MiB, \d+ ns over 16 MiB, [\d.]+ ns over 256 KiB"
    assert re.fullmatch(rf"machine: one dependent load \(bench/memlat\.c\) took {one} before the k16 runs; {one} after",
                        line), line


def test_the_calibration_measures_or_says_why_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = targets_module()
    got = t.calibrate(memory=(8192, 200_000), mid=(1024, 200_000), cache=(64, 200_000))
    assert isinstance(got, t.Calibration), got
    assert 0 < got.cache_ns < 1e4 and 0 < got.mid_ns < 1e5 and 0 < got.memory_ns < 1e5
    # Built once, rebuilt when the source is newer; a missing compiler is a reason, not a crash.
    src = tmp_path / "memlat.c"
    src.write_text(t.MEMLAT_SRC.read_text())
    out = tmp_path / "bin" / "memlat"
    monkeypatch.setenv("CC", "no-such-compiler")
    with pytest.raises(RuntimeError, match="no C compiler"):
        t.build_memlat(src, out)
    monkeypatch.delenv("CC")
    assert t.build_memlat(src, out) == out
    assert t.chase_ns(out, 64, 1000) > 0
    with pytest.raises(RuntimeError, match="give 1 to"):
        t.chase_ns(out, 0, 1000)  # the chase's own argument check, exit code 2
    monkeypatch.setattr(t, "build_memlat", lambda: (_ for _ in ()).throw(RuntimeError("no C compiler (cc)")))
    assert t.calibrate() == "skipped: no C compiler (cc)"
    assert t.calibration_line("skipped: x", got).startswith("machine: one dependent load (bench/memlat.c) took "
                                                            "skipped: x before the k16 runs; ")


def test_ls256_verdicts_are_ratios_of_medians() -> None:
    t = targets_module()
    v = t.ls256_verdicts(_comparison({"slacknet": 0.68, "ns-3": 61.5, "htsim": 3.23}))
    assert [(x.target, x.measured, x.holds) for x in v] == [
        ("ls256: >= 5x faster than htsim", "0.68 s vs 3.23 s (median of 3): 4.75x", "no"),
        ("ls256: >= 150x faster than ns-3.44", "0.68 s vs 61.5 s (median of 3): 90x", "no"),
    ]
    v = t.ls256_verdicts(_comparison({"slacknet": 0.4, "ns-3": 61.5, "htsim": 2.0}))
    assert [x.holds for x in v] == ["yes", "yes"]  # exactly 5x holds
    # Just short of 5x: printed as such, never rounded up to a "5.0x" that does not hold.
    v = t.ls256_verdicts(_comparison({"slacknet": 0.634, "ns-3": 65.1, "htsim": 3.15}))
    assert (v[0].measured.endswith("4.97x"), v[0].holds) == (True, "no")
    v = t.ls256_verdicts(_comparison({"slacknet": 0.5, "ns-3": 80.0}, {"htsim": "HTSIM_DIR is not set: point it ..."}))
    assert (v[0].measured, v[0].holds) == ("skipped: no htsim checkout (HTSIM_DIR)", "n/a")
    text = t.render(v)
    assert text.splitlines()[-1].startswith("1 of 1 targets hold (1 not measured)")
    # The ns-3 target names the ns-3 it was measured against.
    cmp = _comparison({"slacknet": 0.5, "ns-3": 80.0, "htsim": 2.0})
    cmp.ns3_build = "the PyPI wheel ns3==3.44.post0 (release profile with logging and asserts compiled in)"
    assert t.ls256_verdicts(cmp)[1].target == "ls256: >= 150x faster than ns-3.44 (PyPI wheel)"
    cmp.ns3_build = "ns-3.44 built at /opt/ns-3.44/build (profile release, logging off, asserts off)"
    assert t.ls256_verdicts(cmp)[1].target == "ls256: >= 150x faster than ns-3.44 (own build)"


def test_peer_context_restates_each_target_in_the_other_peers_terms() -> None:
    t = targets_module()
    line = t.peer_context(_comparison({"slacknet": 0.6, "ns-3": 61.5, "htsim": 3.075}))
    assert line == ("peers in this run: ns-3 took 20.0x htsim's time, so 5x htsim = 100x ns-3 and 150x ns-3 = "
                    "7.50x htsim (the two targets ask the same where ns-3 takes 30x htsim's time)")
    # Where ns-3 takes 30x htsim's time the two targets are one.
    line = t.peer_context(_comparison({"slacknet": 0.6, "ns-3": 90.0, "htsim": 3.0}))
    assert "5x htsim = 150x ns-3 and 150x ns-3 = 5.00x htsim" in line
    assert t.peer_context(_comparison({"slacknet": 0.5, "ns-3": 80.0}, {"htsim": "HTSIM_DIR is not set"})) is None


def test_ls256_through_compare_with_fake_peers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTSIM_DIR", raising=False)
    t = targets_module()
    py, log = fake_python(tmp_path, {"ns-3": [90.0, 30.0, 60.0], "htsim": [9.0, 1.0, 2.0]})
    flows = flow_list_scenario(tmp_path, "# id src dst start_s size_bytes incast\n0 0 20 0.0 2000 0\n", "tiny")
    toml = tmp_path / "tiny.json"
    toml.write_text(flows.to_json())
    messages: list[str] = []
    verdicts, table = t.measure_ls256(toml, tmp_path / "out", 3, str(tmp_path), messages.append, python=str(py))
    assert runs(log) == ["slacknet", "ns-3", "htsim"] * 3
    assert [m.split(":")[0] for m in messages] == ["ls256 run 1/3", "ls256 run 2/3", "ls256 run 3/3"]
    assert "wall time (s), median of 3" in table
    assert table.splitlines()[-1].startswith("peers in this run: ns-3 took 30.0x htsim's time, so 5x htsim = 150x ns-3")
    htsim, ns3 = verdicts
    assert htsim.target == "ls256 on tiny.json: >= 5x faster than htsim" and "vs 2 s (median of 3)" in htsim.measured
    assert "vs 60 s (median of 3)" in ns3.measured and ns3.holds in ("yes", "no")


def test_the_output_names_the_machine(tmp_path: Path) -> None:
    # The processor and each cache with the CPUs sharing it, from files as Linux writes them; what
    # is missing or unreadable is "unknown", never an error.
    t = targets_module()
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Example CPU 9000\n\nprocessor\t: 1\nmodel name\t: Example CPU 9000\n")
    caches = tmp_path / "cache"
    for i, (level, kind, size, shared) in enumerate([(1, "Data", "48K", "0"), (2, "Unified", "2048K", "0"),
                                                     (3, "Unified", "300M", "0-1")]):
        d = caches / f"index{i}"
        d.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
            (d / name).write_text(f"{value}\n")
    assert t.describe_machine(cpuinfo, caches) == ("processor: Example CPU 9000, 2 logical CPUs; caches: L1d 48 KiB "
                                                   "(CPUs 0), L2 2 MiB (CPUs 0), L3 300 MiB (CPUs 0-1)")
    (caches / "index1" / "size").unlink()  # a cache without its size is left out
    assert "L2" not in t.describe_machine(cpuinfo, caches)
    (caches / "index0" / "type").write_bytes(b"\xff\xfe")  # nor is one whose files are not text
    assert t.describe_machine(cpuinfo, caches) == ("processor: Example CPU 9000, 2 logical CPUs; caches: "
                                                   "L3 300 MiB (CPUs 0-1)")
    assert t.describe_machine(tmp_path / "none", tmp_path / "none") == (f"processor: unknown {platform.machine()} "
                                                                       "processor; caches: unknown")
    assert [t.kib_text(x) for x in ("48K", "1536K", "300M", "1G", "odd")] == ["48 KiB", "1536 KiB", "300 MiB",
                                                                             "1024 MiB", "odd"]
    sim = fake_sim(tmp_path / "sim", [50.0])
    proc = targets("--only", "k16", "--runs", 1, "--binary", sim, "--k16-scenario", scenario(tmp_path),
                   "--no-calibration")
    assert proc.returncode == 0 and proc.stdout.startswith("processor: "), proc.stdout
