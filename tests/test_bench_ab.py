"""`bench/ab.py` (`make bench-ab`): two builds alternated, their printouts compared, bad
arguments refused. Fake builds (shell scripts) stand in for `slacknet-sim`, so the test is
fast and knows the answers."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AB = ROOT / "bench" / "ab.py"


def fake_build(path: Path, events: int, log: Path) -> Path:
    """A 'build' that logs its name, then prints a printout with `events` and some timings."""
    path.write_text(
        "#!/bin/sh\n"
        f"echo {path.name} >> {log}\n"
        "echo 'scenario          fake'\n"
        f"echo 'events            {events}'\n"
        f"echo 'wall time         0.0{events % 7} s (setup 0.000 s)'\n"
        "echo 'cpu time          0.01 s (user + system)'\n"
        f"echo 'events/s          {events}.5 (per wall s)'\n"
        "echo 'peak memory       7.5 MB'\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def ab(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(AB), *map(str, args)], capture_output=True, text=True)


def two_builds(tmp_path: Path, events_a: int, events_b: int) -> tuple[Path, Path, Path, Path]:
    """Builds `a` and `b` printing these event counts, an empty scenario, and their run log."""
    log = tmp_path / "order.log"
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    return fake_build(tmp_path / "a", events_a, log), fake_build(tmp_path / "b", events_b, log), scenario, log


def test_alternates_the_builds_and_compares_results(tmp_path: Path) -> None:
    a, b, scenario, log = two_builds(tmp_path, 100, 100)
    proc = ab("--runs", 3, a, b, scenario)
    assert proc.returncode == 0, proc.stderr
    assert log.read_text().split() == ["a", "b"] * 3
    summary = proc.stdout.strip().splitlines()[-1]
    assert summary.startswith("s.toml: A min") and "pairs" in summary and summary.endswith("results same")


def test_different_results_are_reported_and_fail(tmp_path: Path) -> None:
    a, b, scenario, _ = two_builds(tmp_path, 100, 101)
    proc = ab("--runs", 1, a, b, scenario)
    assert proc.returncode == 1
    assert proc.stdout.strip().endswith("results DIFFERENT")


def test_bad_arguments_exit_2_naming_them(tmp_path: Path) -> None:
    log = tmp_path / "order.log"
    a = fake_build(tmp_path / "a", 1, log)
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    cases = [
        ((tmp_path / "missing", a, scenario), "BUILD_A"),
        ((a, scenario, scenario), "BUILD_B"),  # not executable
        ((a, a, tmp_path / "nope.toml"), "SCENARIO"),
        (("--runs", 0, a, a, scenario), "--runs = 0"),
    ]
    for args, names in cases:
        proc = ab(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and names in lines[0], proc.stderr
    assert not log.exists(), "nothing ran"


def test_a_failing_build_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_text("#!/bin/sh\necho 'error: broken' >&2\nexit 3\n")
    bad.chmod(bad.stat().st_mode | stat.S_IXUSR)
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    proc = ab("--runs", 1, bad, bad, scenario)
    assert proc.returncode == 2
    assert "failed" in proc.stderr and "exit 3" in proc.stderr and "broken" in proc.stderr
