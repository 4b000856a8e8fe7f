"""Hostile and mistaken inputs to `slacknet reproduce <paper>` and `slacknet compare` (audit):
each is one clear error naming the key or option, the value and the fix (exit status 2 from
the CLI), before anything is written, and no user file is written over."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from slacknet.cli import main
from slacknet.compare import CompareError, compare, compare_seeds
from slacknet.reproduce import list_papers, load_description, load_paper, reproduce
from slacknet.reproduce_spec import ReproduceError

from .conftest import REPO, flow_list_scenario
from .fake_peers import fake_python, runs
from .test_reproduce_spec import _edit, experiments, refusal  # noqa: F401  (the toy paper fixture)

FLOWS = "0 0 16 0.0 10000 0\n1 1 17 0.0 20000 0\n"


# ---- the description -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "old, new, needles",
    [
        # A figure id names files in --out: "../x" wrote x.csv, x.png and the runs beside it.
        ("[figure.load]", '[figure."../../escaped"]', ['figure."../../escaped"', "letters, digits"]),
        ("[figure.load]", '[figure."/tmp/x"]', ['figure."/tmp/x"', "letters, digits"]),
        ("[figure.load]", '[figure.""]', ['figure.""', "letters, digits"]),
        # NaN made a claim fail whatever the numbers (`want <= nan`), infinity hold.
        ("at_most = 100.0", "at_most = nan", ["claim[0].check[0].at_most = NaN", "finite"]),
        ("at_most = 100.0", "at_most = inf", ["claim[0].check[0].at_most = Infinity", "finite"]),
        ("at = 0.2", "at = -inf", ["claim[1].check[0].at = -Infinity", "finite"]),
        # A boolean was read as 1.
        ("at_most = 100.0", "at_most = true", ["claim[0].check[0].at_most = true", "a boolean is not a number"]),
        ('caption = "loads"', 'caption = "loads"\ndigits = true', ["figure.load.digits = true", "boolean"]),
        # Seeds are checked where they are written, not by the first run (after others ran).
        ('reduced = "base.toml"', 'reduced = "base.toml"\nseeds = [true]', ["base.seeds[0] = true", "0 to 2^64 - 1"]),
        ('reduced = "base.toml"', 'reduced = "base.toml"\nseeds = [-1]', ["base.seeds[0] = -1", "0 to 2^64 - 1"]),
        ('reduced = "base.toml"', 'reduced = "base.toml"\nseeds = [2.0]', ["base.seeds[0] = 2.0", "whole number"]),
        ('reduced = "base.toml"', 'reduced = "base.toml"\nseeds = [18446744073709551616]',
         ["base.seeds[0] = 18446744073709551616", "2^64 - 1"]),
        ('reduced = "base.toml"', 'reduced = "base.toml"\nseeds = [3, 4, 3]', ["base.seeds[2] = 3", "listed twice"]),
    ],
)
def test_a_hostile_description_value_is_one_clear_error(experiments: Path, old: str, new: str,  # noqa: F811
                                                         needles: list[str]) -> None:
    assert "Value error" not in refusal(experiments, old, new, needles)


def test_figure_ids_whose_files_would_collide_are_refused(experiments: Path) -> None:  # noqa: F811
    # A figure `load` may write load_cdf.csv: a figure `load_cdf` would write over it.
    text = (experiments / "toy" / "reproduce.toml").read_text()
    block = text[text.index("[figure.load]"):text.index("[[claim]]")]
    _edit(experiments, "[[claim]]", block.replace("[figure.load]", "[figure.load_cdf]") + "\n[[claim]]")
    with pytest.raises(ReproduceError, match=r"figure.load_cdf: its files would be figure load.s load_cdf.csv: choose another id"):
        load_paper(experiments, "toy")


def test_a_description_that_is_not_a_file_is_refused_without_hanging(tmp_path: Path) -> None:
    exp = tmp_path / "experiments"
    for name in ("fifo", "zero", "dir"):
        (exp / name).mkdir(parents=True)
    os.mkfifo(exp / "fifo" / "reproduce.toml")
    (exp / "zero" / "reproduce.toml").symlink_to("/dev/zero")
    (exp / "dir" / "reproduce.toml").mkdir()
    (exp / "big").mkdir()
    (exp / "big" / "reproduce.toml").write_bytes(b"#" * (16 * 2**20 + 1))
    # None of them is listed as a paper.
    assert list_papers(exp) == ["big"]
    result: dict[str, str] = {}

    def attempt() -> None:
        for name, needle in (("fifo", "a FIFO"), ("zero", "a device"), ("dir", "a folder"), ("big", "larger than 16 MB")):
            try:
                load_paper(exp, name)
            except ReproduceError as e:
                result[name] = str(e)
                assert needle in str(e) and str(exp / name / "reproduce.toml") in str(e), e
            try:
                load_description(exp / name / "reproduce.toml")
            except ReproduceError as e:
                assert needle in str(e), e

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "reading a FIFO or /dev/zero as a description hung"
    assert set(result) == {"fifo", "zero", "dir", "big"}, result


# ---- the output folder ------------------------------------------------------------------------


def test_reproduce_writes_only_into_a_new_empty_or_earlier_reproductions_folder(
    experiments: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    # A folder of the user's holding a file named as a figure's table: it was written over.
    home = tmp_path / "home"
    home.mkdir()
    (home / "load.csv").write_text("precious\n")
    (home / "notes.txt").write_text("mine\n")
    assert main(["reproduce", "toy", "--experiments", str(experiments), "--out", str(home), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out = ") and "'notes.txt'" in err and "choose a new output folder" in err
    assert (home / "load.csv").read_text() == "precious\n" and sorted(os.listdir(home)) == ["load.csv", "notes.txt"]
    # The same through the API, and a folder of another kind (one run's results) or a file.
    paper = load_paper(experiments, "toy")
    with pytest.raises(ReproduceError, match=r"--out = .*home: it holds 'notes.txt'"):
        reproduce(paper, home, jobs=1)
    with pytest.raises(ReproduceError, match=r"--out = '': an empty path"):
        reproduce(paper, "", jobs=1)
    (tmp_path / "f").write_text("x")
    with pytest.raises(ReproduceError, match=r"exists and is not a folder"):
        reproduce(paper, tmp_path / "f", jobs=1)
    # A sweep figure's folder that is not a sweep's is refused before any figure is made.
    (tmp_path / "o" / "load").mkdir(parents=True)
    (tmp_path / "o" / "load" / "x").write_text("mine\n")
    with pytest.raises(ReproduceError, match=r"o/load \(figure load's runs\): it holds 'x'"):
        reproduce(paper, tmp_path / "o", jobs=1)
    assert sorted(os.listdir(tmp_path / "o")) == ["load"]
    # A new folder, then the same again (an earlier reproduction's: its runs are reused).
    out = tmp_path / "new"
    first = reproduce(paper, out, jobs=1)
    again = reproduce(paper, out, jobs=1)
    assert first.figures["load"].drop(columns="reused").equals(again.figures["load"].drop(columns="reused"))
    assert again.figures["load"]["reused"].all()
    assert sorted(os.listdir(out)) == ["load", "load.csv", "load.png", "reproduction.json"]  # no temporary file left
    # Another paper with the same figure ids (pfabric's and credence's fig8): its files would be
    # written over these, which names alone did not show. The marker says whose the folder is.
    shutil.copytree(experiments / "toy", experiments / "twin")
    with pytest.raises(ReproduceError, match=r"--out = .*new: it holds a reproduction of toy's, whose figure files a "
                                             r"reproduction of twin would be written over"):
        reproduce(load_paper(experiments, "twin"), out, jobs=1)
    assert reproduce(load_paper(experiments, "twin"), tmp_path / "twin", jobs=1).figures["load"] is not None


def test_reproduce_arguments_of_the_wrong_kind_are_refused(experiments: Path, tmp_path: Path) -> None:  # noqa: F811
    paper = load_paper(experiments, "toy")
    out = tmp_path / "o"
    for kwargs, error, needle in [
        (dict(only="load"), TypeError, "only = 'load': a list of figure ids, e.g. ['load']"),
        (dict(seeds=[True]), ReproduceError, "--seeds[0] = True"),
        (dict(seeds=[1.5]), ReproduceError, "--seeds[0] = 1.5"),
        (dict(seeds=[-1]), ReproduceError, "--seeds[0] = -1"),
        (dict(seeds=[1, 1]), ReproduceError, "--seeds[1] = 1: is listed twice"),
        (dict(seeds=[]), ReproduceError, "--seeds = []: empty"),
        (dict(seeds="12"), TypeError, "seeds = '12': a list of seeds"),
        (dict(jobs=0), ReproduceError, "--jobs = 0: must be at least 1"),
        (dict(jobs=True), TypeError, "jobs = True"),
        (dict(full="yes"), TypeError, "full = 'yes'"),
    ]:
        with pytest.raises(error) as ei:
            reproduce(paper, out, **kwargs)  # type: ignore[arg-type]
        assert needle in str(ei.value), (kwargs, str(ei.value))
    assert not out.exists()  # refused before anything was written


# ---- compare ----------------------------------------------------------------------------------


def test_compare_writes_only_into_a_new_empty_or_earlier_comparisons_folder(tmp_path: Path) -> None:
    py, log = fake_python(tmp_path, {"ns-3": [1.0], "htsim": [0.5]})
    sc = flow_list_scenario(tmp_path, FLOWS, "hostile")
    home = tmp_path / "home"
    home.mkdir()
    (home / "comparison.json.mine").write_text("precious\n")
    (home / "flows.txt").write_text("my flows\n")
    for call in (lambda: compare(sc, home, python=str(py)), lambda: compare_seeds(sc, home, [1, 2], python=str(py))):
        with pytest.raises(CompareError, match=r"--out = .*home: it holds 'comparison.json.mine' and 1 more and is "
                           r"not an earlier comparison's folder"):
            call()
    assert sorted(os.listdir(home)) == ["comparison.json.mine", "flows.txt"] and runs(log) == []
    with pytest.raises(CompareError, match=r"--out = '': an empty path"):
        compare(sc, "", python=str(py))
    # An earlier comparison's folder is replaced; no temporary file is left.
    out = tmp_path / "out"
    compare(sc, out, python=str(py))
    compare(sc, out, python=str(py))
    assert not [n for n in os.listdir(out) if n.startswith(".")]
    seeds = tmp_path / "seeds"
    compare_seeds(sc, seeds, [1, 2], python=str(py))
    compare_seeds(sc, seeds, [1, 2], python=str(py))


def test_compare_refuses_empty_or_missing_peer_folders_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    py, log = fake_python(tmp_path, {"ns-3": [1.0], "htsim": [0.5]})
    sc = flow_list_scenario(tmp_path, FLOWS, "peers")
    out = tmp_path / "out"
    monkeypatch.delenv("HTSIM_DIR", raising=False)
    monkeypatch.delenv("NS3_DIR", raising=False)
    # An empty path silently meant "no htsim" / "the wheel".
    with pytest.raises(CompareError, match=r"--htsim = '': an empty path; give a checkout of UEC htsim"):
        compare(sc, out, python=str(py), htsim_dir="")
    with pytest.raises(CompareError, match=r"--ns3-dir = '': an empty path"):
        compare(sc, out, python=str(py), ns3_dir="")
    with pytest.raises(CompareError, match=r"HTSIM_DIR / --htsim .*nope: no such folder"):
        compare(sc, out, python=str(py), htsim_dir=tmp_path / "nope")
    with pytest.raises(CompareError, match=r"NS3_DIR / --ns3-dir .*flows.txt: not a folder"):
        compare(sc, out, python=str(py), ns3_dir=tmp_path / "flows.txt")
    assert not out.exists() and runs(log) == []
    # The CLI: one line, exit status 2.
    assert main(["compare", str(REPO / "experiments" / "compare" / "s2.toml"), "--ns3-dir", "", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "error: --ns3-dir = '': an empty path" in err and "Traceback" not in err and not out.exists()


def test_a_users_ns3_build_is_checked_before_slacknet_runs(tmp_path: Path) -> None:
    # The fake peer's `ensure` refuses the folder as the real runner does for one that is not
    # an ns-3 build: compare says so in one line, before slacknet runs or anything is written.
    py, log = fake_python(tmp_path, {"ns-3": [1.0], "htsim": [0.5]})
    text = py.read_text().replace('if args[1] == "ensure":\n',
                                  'if args[1] == "ensure" and "--ns3-dir" in args:\n'
                                  '    print("ns3peer: error: --ns3-dir X: not a built ns-3.44 tree", file=sys.stderr)\n'
                                  '    sys.exit(1)\nif args[1] == "ensure":\n')
    py.write_text(text)
    sc = flow_list_scenario(tmp_path, FLOWS, "ns3dir")
    out = tmp_path / "out"
    with pytest.raises(CompareError, match=r"^the ns-3 peer could not be built: --ns3-dir X: not a built ns-3.44 "
                       r"tree$"):
        compare(sc, out, python=str(py), ns3_dir=tmp_path)
    assert runs(log) == [] and not out.exists()


@pytest.mark.parametrize("only", ["", ",", " , "])
def test_an_only_that_names_no_figure_is_refused(experiments: Path, tmp_path: Path, only: str,  # noqa: F811
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # `--only ""` was read as no --only at all: every figure was made.
    out = tmp_path / "o"
    assert main(["reproduce", "toy", "--experiments", str(experiments), "--only", only, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --only = {only!r}: names no figure; give figure ids, e.g. --only ") and not out.exists()
