"""Results folders that slacknet did not write as they are (hand-edited with a manifest made to
match, FIFOs and devices in place of files, another version's), and saves that must not
leave a folder that only looks valid or delete what is not results.

A "resealed" folder has its manifest rewritten to match the damage, as someone editing a
table by hand and fixing the hashes would: the manifest check alone cannot tell.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest

import slacknet
from slacknet import analysis
from slacknet.plot import plot_queue_series, plot_results, plot_slowdown_cdf, size_bins
from slacknet.results import MANIFEST, write_text_atomic

from .conftest import SERIES_TOML, TINY_TOML


def _reseal(d: Path) -> None:
    m = json.loads((d / MANIFEST).read_text())
    files = {}
    for p in sorted(d.iterdir()):
        if p.name == MANIFEST:
            continue
        data = p.read_bytes() if p.is_file() else b""  # a FIFO or device: listed as empty
        files[p.name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    m["files"] = files
    (d / MANIFEST).write_text(json.dumps(m))


def _rewrite(table: str, change: Callable[[pd.DataFrame], pd.DataFrame]) -> Callable[[Path], None]:
    def damage(d: Path) -> None:
        path = d / f"{table}.parquet"
        change(pd.read_parquet(path)).to_parquet(path, index=False)

    return damage


def _fifo(name: str) -> Callable[[Path], None]:
    def damage(d: Path) -> None:
        (d / name).unlink()
        os.mkfifo(d / name)

    return damage


def _link(name: str, target: str) -> Callable[[Path], None]:
    def damage(d: Path) -> None:
        (d / name).unlink()
        os.symlink(target, d / name)

    return damage


def _edit_summary(**values: object) -> Callable[[Path], None]:
    def damage(d: Path) -> None:
        s = json.loads((d / "summary.json").read_text())
        s.update(values)
        (d / "summary.json").write_text(json.dumps(s))

    return damage


def _edit_manifest(old: str, new: str) -> Callable[[Path], None]:
    def damage(d: Path) -> None:
        (d / MANIFEST).write_text((d / MANIFEST).read_text().replace(old, new))

    return damage


def _sparse_manifest(d: Path) -> None:
    with open(d / MANIFEST, "r+b") as f:
        f.truncate(1 << 32)  # 4 GiB of holes: read whole, it took the memory


#: Damage (resealed or not), and what the one-line refusal says. Before: every one of these
#: loaded as valid (types and values are what summary and plot then printed or drew, or
#: crashed on with a traceback), hung (FIFOs, /dev/zero), or ran out of memory.
HOSTILE: dict[str, tuple[Callable[[Path], object], bool, str]] = {
    # Loaded, and summary counted every flow as finished ("False" is a true string).
    "flag_as_text": (_rewrite("records", lambda r: r.assign(finished=r["finished"].astype(str))), True,
                     "records.parquet cannot be read as slacknet wrote it .column 'finished' holds str, not booleans."),
    # Loaded; plot raised "Data cannot be log-scaled" with a traceback.
    "size_with_nan": (_rewrite("records", lambda r: r.assign(size_bytes=np.where(r.index % 2, np.nan, r["size_bytes"]))),
                      True, "column 'size_bytes' holds float64, not whole numbers"),
    "slowdown_nan": (_rewrite("records", lambda r: r.assign(slowdown=np.nan)), True,
                     "a finished flow has slowdown nan, not a positive number"),
    # summary: ValueError traceback (int('a')).
    "count_as_text": (_rewrite("switches", lambda s: s.assign(drops_admission="a")), True,
                      "switches.parquet .*column 'drops_admission' holds str"),
    # plot: IndexError traceback.
    "series_of_a_flow_not_in_records": (_rewrite("transfer_series", lambda t: t.assign(flow=np.uint32(10**6))), True,
                                        "transfer_series.parquet .*samples flow 1000000, but records has 3 flows"),
    # summary: KeyError / TypeError tracebacks.
    "summary_without_counts": (lambda d: (d / "summary.json").write_text("{}"), True, "summary.json .*no 'num_flows'"),
    "summary_count_as_text": (_edit_summary(finished_flows="many"), True, "finished_flows = 'many' is not a whole number"),
    "summary_more_finished_than_flows": (_edit_summary(finished_flows=10**6), True, "more than num_flows"),
    # Tracebacks (RecursionError), from load and from every --out check above a folder.
    "manifest_nested_deep": (lambda d: (d / MANIFEST).write_text("[" * 100_000 + "]" * 100_000), False,
                             "manifest.json cannot be read .maximum recursion"),
    # Read whole into memory (summary hung reading it).
    "manifest_huge": (_sparse_manifest, False, "manifest.json cannot be read .larger than 16 MiB."),
    # Said "no manifest.json".
    "manifest_fifo": (_fifo(MANIFEST), False, "manifest.json is a FIFO, not a file"),
    # Hung for ever hashing the FIFO or /dev/zero (size 0, as the lying manifest says).
    "table_fifo": (_fifo("records.parquet"), True, "records.parquet is a FIFO, not a file"),
    "json_devzero": (_link("summary.json", "/dev/zero"), True, "summary.json is a device, not a file"),
    # Loaded: a sweep would reuse it as a run of the seed and scenario its manifest claims.
    "manifest_claims_another_seed": (_edit_manifest('"seed": 3', '"seed": 4'), False,
                                     "manifest.json gives seed 4, but scenario.json has 3"),
    "manifest_claims_another_scenario": (lambda d: (d / "scenario.json").write_text(
        (d / "scenario.json").read_text().replace('"name": "series"', '"name": "other"')), True,
        "manifest.json gives scenario_sha256 [0-9a-f]{12}..., but scenario.json hashes to"),
    "manifest_seed_bool": (_edit_manifest('"seed": 3', '"seed": true'), False, "seed = True is not a whole number"),
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = SERIES_TOML.replace('name = "series"', 'name = "series"\nseed = 3')
    return slacknet.run(slacknet.Scenario.from_toml_text(text)).save(tmp_path_factory.mktemp("src") / "run")


def _copy(saved: Path, to: Path) -> Path:
    to.mkdir()
    for p in saved.iterdir():
        (to / p.name).write_bytes(p.read_bytes())
    return to


@pytest.mark.parametrize("damage", list(HOSTILE))
def test_hostile_folders_are_refused_in_one_line(damage: str, saved: Path, tmp_path: Path) -> None:
    d = _copy(saved, tmp_path / "run")
    do, reseal, message = HOSTILE[damage]
    do(d)
    if reseal:
        _reseal(d)
    with pytest.raises(slacknet.ResultsError, match=message) as ei:
        slacknet.Results.load(d)
    assert "\n" not in str(ei.value)
    slacknet.results.is_results_folder(d)  # asked of every folder above an --out: never raises


HOSTILE_CLI = """
import sys
from slacknet.cli import main
sys.exit(main([sys.argv[1], sys.argv[2]]))
"""


@pytest.mark.parametrize("command", ["summary", "plot"])
def test_cli_on_a_fifo_in_a_folder_exits_2_without_hanging(command: str, saved: Path, tmp_path: Path) -> None:
    d = _copy(saved, tmp_path / "run")
    _fifo("scenario.json")(d)
    _reseal(d)
    proc = subprocess.run([sys.executable, "-c", HOSTILE_CLI, command, str(d)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1 and "scenario.json is a FIFO" in proc.stderr


def test_a_folder_saved_before_occ_samples_still_loads(saved: Path, tmp_path: Path) -> None:
    # switch_table falls back on the occupancy table for such folders (7aeaeec), but load
    # refused them: "no column 'occ_samples'".
    d = _copy(saved, tmp_path / "run")
    _rewrite("switches", lambda s: s.drop(columns="occ_samples"))(d)
    _reseal(d)
    r = slacknet.Results.load(d)
    assert "occ_samples" not in r.switches.columns
    assert len(analysis.switch_table(r.switches, r.occupancy)) > 0


def test_a_path_that_is_not_utf8_loads(saved: Path, tmp_path: Path) -> None:
    # pyarrow refused the path: "cannot be read as slacknet wrote it ... surrogates not allowed".
    d = _copy(saved, Path(os.fsdecode(bytes(tmp_path) + b"/run\xff")))
    assert slacknet.Results.load(d).num_flows == 3


def test_queue_series_plot_memory_follows_the_rows(saved: Path, tmp_path: Path) -> None:
    # A sample at 2^62 ps with a 5 us interval: the dense grid wanted 6.7 TiB.
    d = _copy(saved, tmp_path / "run")
    _rewrite("queue_series", lambda q: q.assign(
        time_ps=np.where(q.index == 0, np.uint64(2**62), q["time_ps"]).astype("uint64")))(d)
    _reseal(d)
    assert plot_queue_series(slacknet.Results.load(d), tmp_path / "q.png").stat().st_size > 5_000


def test_queue_series_plot_draws_the_dense_curve() -> None:
    # The corners drawn are those of the dense curve (every sample, 0 where the series has no
    # row), without its redundant points.
    from slacknet.plot import _sparse_steps

    dense = np.zeros(12)
    idx = np.array([2, 3, 7, 11])
    dense[idx] = [5.0, 6.0, 7.0, 8.0]
    x, y = _sparse_steps(idx, dense[idx], 11)
    held = [y[np.searchsorted(x, k, side="right") - 1] for k in range(12)]
    assert held == dense.tolist()
    assert x.tolist() == [0, 2, 3, 4, 7, 8, 11]


def test_plot_replaces_a_link_instead_of_writing_through_it(saved: Path, tmp_path: Path) -> None:
    d = _copy(saved, tmp_path / "run")
    victim = tmp_path / "notes.txt"
    victim.write_text("mine")
    os.symlink(victim, d / "slowdown_cdf.png")  # was written through: notes.txt became a PNG
    plot_results(d)
    assert victim.read_text() == "mine"
    assert not (d / "slowdown_cdf.png").is_symlink() and (d / "slowdown_cdf.png").read_bytes()[:4] == b"\x89PNG"


def test_an_interrupted_plot_leaves_the_earlier_png_and_no_scratch(saved: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    d = _copy(saved, tmp_path / "run")
    plot_results(d)
    before = (d / "slowdown_cdf.png").read_bytes()

    def half(fig: Figure, path: Path, **kw: object) -> None:
        Path(path).write_bytes(b"\x89PNG half")
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", half)
    with pytest.raises(KeyboardInterrupt):
        plot_results(d)
    assert (d / "slowdown_cdf.png").read_bytes() == before
    assert sorted(p.name for p in d.iterdir() if p.name.startswith(".")) == []
    slacknet.Results.load(d)


def test_an_interrupted_atomic_write_leaves_the_old_file_and_no_scratch(tmp_path: Path) -> None:
    path = write_text_atomic("old\n", tmp_path / "sweep.json")

    class Boom(Exception):
        pass

    def half(tmp: Path) -> None:
        tmp.write_text("ne")
        raise Boom

    with pytest.raises(Boom):
        slacknet.results.replace_atomic(path, half)
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["sweep.json"]


@pytest.mark.parametrize("content", ["pictures", "own_scenario"])
def test_save_refuses_a_folder_of_results_names_that_no_run_wrote(
    content: str, saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before, any *.png or results file name made a folder replaceable: `--out ~/Pictures`
    # deleted the pictures, `--out exp` the user's own exp/scenario.json.
    d = tmp_path / "mine"
    d.mkdir()
    files = {"holiday.png": b"\x89PNG mine", "slowdown_cdf.png": b"\x89PNG mine too"} if content == "pictures" else {
        "scenario.json": b'{"name": "mine"}'}
    for name, data in files.items():
        (d / name).write_bytes(data)
    res = slacknet.Results.load(saved)
    with pytest.raises(slacknet.ResultsError, match=f"refusing to replace {d}: it holds .* but no manifest.json") as ei:
        res.save(d)
    assert "\n" not in str(ei.value)
    assert {p.name: p.read_bytes() for p in d.iterdir()} == files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]
    from slacknet.cli import main

    assert main(["run", str(tmp_path / "x.toml"), "--out", str(d)]) == 2  # refused before reading the scenario
    assert capsys.readouterr().err.startswith(f"error: refusing to replace {d}")


SAVE_DAMAGE: dict[str, tuple[Callable[[slacknet.Results], None], str]] = {
    "records_without_a_column": (lambda r: setattr(r, "records", r.records.drop(columns="slowdown")),
                                 "Results.records is not a run's table .no column 'slowdown'."),
    "switches_with_text_counts": (lambda r: setattr(r, "switches", r.switches.assign(ecn_marks="x")),
                                  "Results.switches .*column 'ecn_marks' holds"),
    "summary_without_counts": (lambda r: r.summary.pop("num_flows"), "Results.summary is not a run's summary"),
    "series_of_a_flow_not_in_records": (lambda r: setattr(r, "records", r.records.iloc[:1]),
                                        "Results.transfer_series .*records has 1 flows"),
}


@pytest.mark.parametrize("damage", list(SAVE_DAMAGE))
def test_save_refuses_tables_load_would_refuse(damage: str, saved: Path, tmp_path: Path) -> None:
    # Before, save wrote them with a matching manifest: a folder that looked valid and that
    # load then refused (or, for the types, loaded and summarised wrongly).
    res = slacknet.Results.load(saved)
    do, message = SAVE_DAMAGE[damage]
    do(res)
    with pytest.raises(slacknet.ResultsError, match=message) as ei:
        res.save(tmp_path / "run")
    assert "\n" not in str(ei.value)
    assert list(tmp_path.iterdir()) == []


def _records(**cols: object) -> pd.DataFrame:
    base = {"size_bytes": np.array([1000, 2_000_000], dtype=np.uint64), "incast": [False, False],
            "finished": [True, True], "slowdown": [1.5, 2.0]}
    base.update(cols)
    return pd.DataFrame(base)


ANALYSIS_INPUTS: dict[str, tuple[Callable[[], object], str]] = {
    # KeyError 'finished' / 'slowdown'.
    "fct_table_of_an_empty_frame": (lambda: analysis.fct_table(pd.DataFrame()), "records has no column 'finished'"),
    "fct_table_of_links": (lambda: analysis.fct_table(pd.DataFrame({"link": [1]})), "records has no column"),
    # Counted as finished (NaN is true).
    "fct_table_finished_nan": (lambda: analysis.fct_table(_records(finished=[True, np.nan])),
                               "records.finished holds NaN, not booleans"),
    # A p99 of NaN, printed as "-" as if no flow had finished.
    "fct_table_finished_without_slowdown": (lambda: analysis.fct_table(_records(slowdown=[1.5, np.nan])),
                                            "flow at row 1 finished with slowdown nan"),
    # ValueError: Data cannot be log-scaled (from matplotlib, with the size NaN).
    "size_bins_size_nan": (lambda: size_bins(_records(size_bytes=[np.nan, 5.0])), "records.size_bytes holds NaN"),
    # KeyError 'drops_pushout'.
    "switch_table_without_a_column": (lambda: analysis.switch_table(pd.DataFrame({"switch": [0], "tier": ["leaf"]})),
                                      "switches has no column 'drops_admission'"),
    # ValueError: cannot convert float NaN to integer.
    "switch_table_with_nan": (lambda: analysis.switch_table(_switches(ecn_marks=[np.nan])), "switches.ecn_marks holds NaN"),
    # KeyError 'kind'.
    "app_table_without_kind": (lambda: analysis.app_table(pd.DataFrame({"app": [0], "duration_ps": [5],
                                                                        "slowdown": [1.0]})),
                               "apps has no column 'kind'"),
}


def _switches(**cols: object) -> pd.DataFrame:
    base: dict[str, object] = {"switch": [0], "tier": ["leaf"]}
    for c in ("drops_admission", "drops_queue_cap", "drops_pushout", "ecn_marks", "occ_p99_bytes",
              "max_occupancy_bytes", "buffer_bytes", "occ_samples"):
        base[c] = [1]
    base.update(cols)
    return pd.DataFrame(base)


@pytest.mark.parametrize("case", list(ANALYSIS_INPUTS))
def test_analysis_of_frames_that_are_not_a_runs_names_table_and_column(case: str) -> None:
    call, message = ANALYSIS_INPUTS[case]
    with pytest.raises(ValueError, match=message):
        call()


def test_plot_of_a_finished_flow_without_slowdown_says_so(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="flow at row 0 finished with slowdown inf"):
        plot_slowdown_cdf(_records(slowdown=[np.inf, 2.0]), tmp_path / "cdf.png")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_written_before_tail_probes_were_counted_still_loads(tmp_path: Path) -> None:
    """records.parquet without `tail_probes` (folders written before 2026-11-29) loads, without
    the column (its count is unknown, not zero); a folder lacking another column is refused."""
    d = slacknet.run(slacknet.Scenario.from_toml_text(TINY_TOML)).save(tmp_path / "old")
    _rewrite("records", lambda r: r.drop(columns="tail_probes"))(d)
    _reseal(d)
    r = slacknet.Results.load(d)
    assert "tail_probes" not in r.records.columns and r.num_flows > 0
    _rewrite("records", lambda r: r.drop(columns="retx_segments"))(d)
    _reseal(d)
    with pytest.raises(slacknet.ResultsError, match="retx_segments"):
        slacknet.Results.load(d)
