"""`bench/pgo.py` (`make pgo`, `make install-pgo`): its training set is valid and disjoint from
what the benchmarks time, bad arguments are refused with one line and exit code 2, and the
user's RUSTFLAGS are kept. The builds themselves take minutes and are measured by `make bench-ab`
(README, "Performance"), not here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from slacknet.config import load_scenario

from .conftest import load_script

ROOT = Path(__file__).resolve().parent.parent
PGO = ROOT / "bench" / "pgo.py"


def pgo_module():
    return load_script("pgo", PGO)


def test_every_training_scenario_exists_and_validates() -> None:
    pgo = pgo_module()
    paths = pgo.training_set(ROOT)
    assert len(paths) == len(pgo.TRAINING) >= 5
    for p in paths:
        load_scenario(p)


def test_no_benchmarked_scenario_is_in_the_training_set() -> None:
    # A profile trained on the timed scenarios would flatter them: the benchmarks' scenarios
    # (everything the Makefile's bench targets and the peer comparisons run) stay out.
    pgo = pgo_module()
    makefile = (ROOT / "Makefile").read_text()
    timed = set(re.findall(r"experiments/[\w/]+\.toml", makefile))
    assert "experiments/compare/ls256.toml" in timed and "experiments/scale/fat_tree_k16.toml" in timed
    assert not timed & set(pgo.TRAINING)
    assert not [t for t in pgo.TRAINING if t.startswith(("experiments/compare/", "experiments/scale/", "experiments/peer_bench/"))]


def test_a_missing_training_scenario_is_named(tmp_path: Path) -> None:
    pgo = pgo_module()
    with pytest.raises(pgo.UsageError, match="training scenario missing: .*experiments/pgo/leaf_spine.toml"):
        pgo.training_set(tmp_path)


def test_a_bad_profdata_path_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, str(PGO), "binary", "--profdata", str(tmp_path / "nope")],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: --profdata = {tmp_path / 'nope'}: not an executable file; give the path of llvm-profdata "
        "or leave it out to use the Rust toolchain's"
    ]
    r = subprocess.run([sys.executable, str(PGO), "everything"], capture_output=True, text=True)
    assert r.returncode == 2 and "invalid choice: 'everything'" in r.stderr


def test_the_users_rustflags_come_first(monkeypatch: pytest.MonkeyPatch) -> None:
    pgo = pgo_module()
    monkeypatch.setenv("RUSTFLAGS", " -Ctarget-cpu=native ")
    assert pgo.rustflags(["-Cprofile-use=/x"]) == "-Ctarget-cpu=native -Cprofile-use=/x"
    monkeypatch.delenv("RUSTFLAGS")
    assert pgo.rustflags(["-Cprofile-generate=/y"]) == "-Cprofile-generate=/y"


def test_without_rustc_on_path_it_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    # The interpreter by its full path; a PATH that holds no Rust toolchain.
    r = subprocess.run([sys.executable, str(PGO), "binary"], capture_output=True, text=True,
                       env={"PATH": str(tmp_path)})
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: rustc ") and "put rustc on PATH" in lines[0]


def test_the_scale_table_refuses_a_binary_it_cannot_run(tmp_path: Path) -> None:
    plain = tmp_path / "slacknet-sim"
    plain.write_text("not a program")
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "scale_table.py"), "--binary", str(plain), "--k", "4"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"bench-scale-table: --binary {plain}: not an executable file; run `cargo build --release -p slacknet-sim` "
        "(or `make pgo` for target/pgo/slacknet-sim) first"
    ]


def test_the_inputs_digest_follows_what_a_build_is_made_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A kept build is reused only while its digest matches: every input must move it, and what
    # cargo writes (any `target/` folder) must not.
    pgo = pgo_module()
    monkeypatch.delenv("RUSTFLAGS", raising=False)
    for name, text in [("Cargo.toml", "[workspace]\n"), ("Cargo.lock", "# lock\n"), ("crates/a/src/lib.rs", "fn f() {}\n"),
                       ("crates/a/target/junk", "x"), ("examples/e.toml", "e = 1\n"), ("experiments/pgo/p.toml", "p = 1\n")]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    base = pgo.inputs_digest(tmp_path, "binary", "rustc 1.95.0")
    assert base == pgo.inputs_digest(tmp_path, "binary", "rustc 1.95.0")
    (tmp_path / "crates/a/target/junk").write_text("y")
    assert pgo.inputs_digest(tmp_path, "binary", "rustc 1.95.0") == base
    assert pgo.inputs_digest(tmp_path, "extension", "rustc 1.95.0") != base
    assert pgo.inputs_digest(tmp_path, "binary", "rustc 1.96.0") != base
    monkeypatch.setenv("RUSTFLAGS", "-Ctarget-cpu=native")
    assert pgo.inputs_digest(tmp_path, "binary", "rustc 1.95.0") != base
    monkeypatch.delenv("RUSTFLAGS")
    for name in ["crates/a/src/lib.rs", "Cargo.lock", "examples/e.toml", "experiments/pgo/p.toml"]:
        before = (tmp_path / name).read_text()
        (tmp_path / name).write_text(before + "// changed\n")
        assert pgo.inputs_digest(tmp_path, "binary", "rustc 1.95.0") != base, name
        (tmp_path / name).write_text(before)
    (tmp_path / "crates/a/src/new.rs").write_text("")
    assert pgo.inputs_digest(tmp_path, "binary", "rustc 1.95.0") != base


def test_a_build_is_current_only_with_its_own_digest_written_after_it(tmp_path: Path) -> None:
    pgo = pgo_module()
    exe = tmp_path / "slacknet-sim"
    assert not pgo.is_current(exe, "abc")
    exe.write_text("binary")
    assert not pgo.is_current(exe, "abc")  # no digest: an interrupted build, never taken for done
    pgo.write_stamp(exe, "abc")
    assert pgo.is_current(exe, "abc") and not pgo.is_current(exe, "abd")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slacknet-sim", "slacknet-sim.inputs"]
    exe.unlink()
    assert not pgo.is_current(exe, "abc")
