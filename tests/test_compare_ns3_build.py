"""The ns-3 peer run against a user's own ns-3.44 build instead of the PyPI wheel (which has
logging and asserts compiled in): finding the build and its profile, and `slacknet compare
--ns3-dir` / `$NS3_DIR` passing it to the runner. Fake build trees and fake peers: no ns-3 is
compiled here."""

from __future__ import annotations

from pathlib import Path

import pytest

from slacknet.compare import (
    CompareError,
    _ns3_build_args,
    _peer_args,
    _prr_note,
    compare,
    compare_seeds,
    ns3peer_path,
    render,
)

from .conftest import flow_list_scenario, load_script
from .fake_peers import fake_python, runs

MODULES = ("core", "network", "internet", "point-to-point", "traffic-control")


np3 = load_script("ns3peer_build", ns3peer_path())


def fake_build(src: Path, suffix: str = "", modules: tuple[str, ...] = MODULES, cache: str | None = None) -> Path:
    """An ns-3.44 source tree as `./ns3 build` leaves it: build/include/ns3, build/lib, and the
    configure step's cmake-cache/CMakeCache.txt (``cache``, if given)."""
    (src / "build" / "include" / "ns3").mkdir(parents=True)
    (src / "build" / "include" / "ns3" / "core-module.h").write_text("")
    (src / "build" / "lib").mkdir()
    for m in modules:
        (src / "build" / "lib" / f"libns3.44-{m}{suffix}.so").write_text("")
    if cache is not None:
        (src / "cmake-cache").mkdir()
        (src / "cmake-cache" / "CMakeCache.txt").write_text(cache)
    return src


def test_a_build_is_found_from_its_source_tree_or_its_build_folder(tmp_path: Path) -> None:
    src = fake_build(tmp_path / "ns-3.44")
    assert np3.find_build(src) == (src / "build", "")
    assert np3.find_build(src / "build") == (src / "build", "")
    opt = fake_build(tmp_path / "opt", suffix="-optimized")
    assert np3.find_build(opt) == (opt / "build", "-optimized")
    cmd = np3._compile_cmd("g++", opt / "build", tmp_path / "dc_bench", "-optimized", True)
    assert f"-lns3.44-traffic-control-optimized" in cmd and f"-Wl,-rpath,{opt / 'build' / 'lib'}" in cmd


def test_what_is_missing_from_a_build_is_named(tmp_path: Path) -> None:
    with pytest.raises(np3.Ns3PeerError, match=r"not a built ns-3\.44 tree .*cmake -S \. -B cmake-cache"):
        np3.find_build(tmp_path)
    partial = fake_build(tmp_path / "partial", modules=("core", "network", "internet"))
    with pytest.raises(np3.Ns3PeerError, match="the build has no point-to-point, traffic-control module"):
        np3.find_build(partial)
    empty = tmp_path / "empty"
    (empty / "build" / "include" / "ns3").mkdir(parents=True)
    (empty / "build" / "include" / "ns3" / "core-module.h").write_text("")
    with pytest.raises(np3.Ns3PeerError, match=r"has no libns3\.44-core\*\.so"):
        np3.find_build(empty)


def test_the_build_says_its_profile_logging_and_asserts(tmp_path: Path) -> None:
    release = fake_build(tmp_path / "rel", cache="// comment\nCMAKE_BUILD_TYPE:STRING=release\nNS3_LOG:BOOL=OFF\n")
    assert np3.describe_build(*np3.find_build(release)) == (
        f"ns-3.44 built at {release / 'build'} (profile release, logging off, asserts off)")
    wheel_like = fake_build(tmp_path / "wl", cache="CMAKE_BUILD_TYPE:STRING=release\nNS3_LOG:BOOL=ON\nNS3_ASSERT:BOOL=ON\n")
    assert "(profile release, logging on, asserts on)" in np3.describe_build(*np3.find_build(wheel_like))
    debug = fake_build(tmp_path / "dbg", suffix="-debug", cache="CMAKE_BUILD_TYPE:STRING=debug\n")
    assert "(profile debug, logging on, asserts on)" in np3.describe_build(*np3.find_build(debug))
    bare = fake_build(tmp_path / "bare", suffix="-optimized")
    assert "(profile optimized by its library names; no CMakeCache.txt found)" in np3.describe_build(*np3.find_build(bare))
    assert "logging and asserts compiled in" in np3.WHEEL


def test_a_build_configured_elsewhere_says_what_its_core_library_holds(tmp_path: Path) -> None:
    # No CMakeCache.txt beside the build (configured with another -B): logging and asserts are
    # read from the strings that only they put into the core library (the PyPI wheel's has both,
    # a release build's neither; checked against both on 2026-11-27).
    core = lambda src, suffix="": src / "build" / "lib" / f"libns3.44-core{suffix}.so"  # noqa: E731
    plain = fake_build(tmp_path / "plain")
    core(plain).write_bytes(b"\x7fELF..." + b"_ZN3ns320DefaultSimulatorImpl15ProcessOneEventEv\0" * 3)
    assert np3.describe_build(*np3.find_build(plain)).endswith(
        "(profile release by its library names, logging off, asserts off by its core library's strings; "
        "no CMakeCache.txt found)")
    both = fake_build(tmp_path / "both", suffix="-default")
    core(both, "-default").write_bytes(b"\x7fELF\0ProcessOneEvent\0x\0NS_ASSERT failed, cond=\"\0")
    assert "logging on, asserts on by its core library's strings" in np3.describe_build(*np3.find_build(both))
    asserts = fake_build(tmp_path / "asserts")
    core(asserts).write_bytes(b"\0NS_ASSERT failed, cond=\"\0")
    assert "logging off, asserts on" in np3.describe_build(*np3.find_build(asserts))


def test_ns3_dir_comes_from_the_argument_or_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NS3_DIR", raising=False)
    assert _ns3_build_args(None) == []
    assert _ns3_build_args(tmp_path) == ["--ns3-dir", str(tmp_path.resolve())]
    monkeypatch.setenv("NS3_DIR", str(tmp_path))
    assert _ns3_build_args(None) == ["--ns3-dir", str(tmp_path.resolve())]
    with pytest.raises(CompareError, match=r"--ns3-dir .*nope: no such folder; .* leave it unset to run the PyPI wheel"):
        _ns3_build_args(tmp_path / "nope")


def test_compare_runs_the_given_build_and_says_which_ns3_ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTSIM_DIR", raising=False)
    monkeypatch.delenv("NS3_DIR", raising=False)
    py, log = fake_python(tmp_path, {"ns-3": [50.0], "htsim": [2.0]})
    sc = flow_list_scenario(tmp_path, "# id src dst start_s size_bytes incast\n0 0 20 0.0 2000 0\n", "tiny")
    cmp = compare(sc, tmp_path / "wheel", python=str(py))
    assert cmp.ns3_build == "fake wheel" and "ns-3: fake wheel" in render(cmp)
    build = tmp_path / "my-ns3"
    build.mkdir()
    cmp = compare(sc, tmp_path / "built", python=str(py), ns3_dir=build)
    assert cmp.ns3_build == f"fake build at {build.resolve()}"
    assert f"ns-3: fake build at {build.resolve()}" in render(cmp)
    assert cmp.to_json()["ns3_build"] == cmp.ns3_build
    assert runs(log) == ["slacknet", "ns-3"] * 2


def test_ns3_recovery_reaches_the_runner_and_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ns3_recovery = "classic"` (`--ns3-recovery classic`) runs ns-3 with TcpClassicRecovery
    (dc_bench's `--recovery=classic`), says so under the table and in comparison.json; the
    default passes nothing, so ns-3 runs its own default (PRR); anything else is refused before
    anything runs or is written."""
    monkeypatch.delenv("HTSIM_DIR", raising=False)
    monkeypatch.delenv("NS3_DIR", raising=False)
    py, log = fake_python(tmp_path, {"ns-3": [50.0], "htsim": [2.0]})
    sc = flow_list_scenario(tmp_path, "# id src dst start_s size_bytes incast\n0 0 20 0.0 2000 0\n", "tiny")
    assert not any(a.startswith("--recovery") for a in _peer_args(sc))
    assert _peer_args(sc, ns3_recovery="classic")[-1] == "--recovery=classic"
    cmp = compare(sc, tmp_path / "classic", python=str(py), ns3_recovery="classic")
    assert cmp.ns3_build == "fake wheel (given --recovery=classic)" and cmp.to_json()["ns3_recovery"] == "classic"
    assert "recovery: TcpClassicRecovery (--ns3-recovery classic)" in render(cmp)
    cmp = compare(sc, tmp_path / "prr", python=str(py))
    assert cmp.ns3_build == "fake wheel" and "recovery: TcpPrrRecovery (ns-3's default)" in render(cmp)
    for bad in ("fast", None, 1):
        with pytest.raises(CompareError, match=r"ns3_recovery = .*: give \"prr\" .* or \"classic\""):
            compare(sc, tmp_path / "bad", python=str(py), ns3_recovery=bad)  # type: ignore[arg-type]
        with pytest.raises(CompareError, match="ns3_recovery"):
            compare_seeds(sc, tmp_path / "bad", [1, 2], python=str(py), ns3_recovery=bad)  # type: ignore[arg-type]
    assert not (tmp_path / "bad").exists()
    assert runs(log) == ["slacknet", "ns-3"] * 2
    seeds = compare_seeds(sc, tmp_path / "seeds", [1, 2], python=str(py), ns3_recovery="classic")
    assert all(r.ns3_build.endswith("(given --recovery=classic)") for r in seeds.runs)
    assert "ns-3 recovery: TcpClassicRecovery" in render(seeds) and seeds.to_json()["ns3_recovery"] == "classic"


def test_a_lossy_comparison_against_ns3_s_prr_says_how_to_compare_like_for_like() -> None:
    """Where either simulator dropped packets and ns-3 ran its default PRR, a note under the
    table names `--ns3-recovery classic`; without drops, or with classic recovery, none."""
    assert _prr_note([0.0, 0.0], "prr") == [] and _prr_note([float("nan"), 0.0], "prr") == []
    assert _prr_note([3.0, 5.0], "classic") == []
    note = " ".join(_prr_note([0.0, 12.0], "prr"))
    assert note.startswith("note: packets were dropped") and "--ns3-recovery classic" in note
