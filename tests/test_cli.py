"""slacknet.cli: happy paths, and bad input gives one clear line and exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slacknet.cli import main

from .conftest import SERIES_TOML, TINY_TOML

GOOD = """
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 4
spines = 2
host_rate_gbps = 10
fabric_rate_gbps = 10

[[workload]]
kind = "poisson"
cdf = "google_rpc"
load = 0.2
duration_ms = 0.5
"""


def _write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# (scenario text or None for a missing file, key that must be named, value that must be named)
BAD_CASES = {
    "unknown_key": (GOOD.replace("spines = 2", "spines = 2\nspine_count = 3"), "topology", "spine_count"),
    "load_1.5": (GOOD.replace("load = 0.2", "load = 1.5"), "workload[0].load", "1.5"),
    "zero_rate": (GOOD.replace("host_rate_gbps = 10", "host_rate_gbps = 0"), "topology.host_rate_gbps", "0"),
    "nine_queues": (GOOD + "\n[switch]\nqueues = [{},{},{},{},{},{},{},{},{}]\n", "switch.queues", "9 entries"),
    "missing_cdf": (GOOD.replace('"google_rpc"', '"no_such.cdf"'), "workload[0].cdf", "no_such.cdf"),
    "wrong_type": (GOOD + '\n[transport]\nkind = "dctcp"\nmss_bytes = "big"\n', "transport.mss_bytes", '"big"'),
    "toml_syntax": (GOOD.replace("[topology]", "[topology"), "s.toml", "line 2"),
    "nonexistent_path": (None, "no such scenario file", "nope.toml"),
    "timeseries_unknown_key": (GOOD + "\n[run.timeseries]\ninterval_us = 5\nevery_us = 1\n", "run.timeseries", "every_us"),
    "timeseries_interval": (GOOD + "\n[run.timeseries]\ninterval_us = -1\n", "run.timeseries.interval_us", "-1"),
    "timeseries_too_many_rows": (
        GOOD + "\n[run]\nstop_ms = 1000\n[run.timeseries]\ninterval_us = 0.001\n",
        "run.timeseries.interval_us",
        "rows",
    ),
    # Issue 8: arithmetic never wraps, nothing is accepted that cannot fit.
    "delay_213_days": (
        GOOD.replace("spines = 2", "spines = 2\nhost_delay_ns = 18400000000000000"),
        "topology.host_delay_ns",
        "18400000000000000",
    ),
    "rate_rounds_to_zero": (GOOD.replace("host_rate_gbps = 10", "host_rate_gbps = 1e-10"), "topology.host_rate_gbps", "1 Mb/s"),
    "rto_near_u64_max": (
        GOOD + '\n[transport]\nkind = "dctcp"\nmin_rto_us = 9223372036854775\nmax_rto_us = 9223372036854775\n',
        "transport.min_rto_us",
        "9223372036854775",
    ),
    "header_near_u32_max": (
        GOOD + '\n[transport]\nkind = "udp"\nheader_bytes = 4294967295\n',
        "transport.header_bytes",
        "4294967295",
    ),
    "start_near_end_of_clock": (
        GOOD + '\n[[workload]]\nkind = "flows"\nflows = [{ src = 0, dst = 7, size_bytes = 1, start_ns = 9223372036854775807 }]\n',
        "workload[1].flows[0].start_ns",
        "9223372036854775807",
    ),
    "dt_alpha_in_the_policy": (
        GOOD + '\n[switch]\nadmission = { policy = "dynamic_thresholds", alpha = 0.5 }\n',
        "switch.admission.alpha",
        "dt_alpha",
    ),
    "fat_tree_too_large": (
        '[topology]\nkind = "fat_tree"\nk = 128\nrate_gbps = 10\n\n[[workload]]' + GOOD.split("[[workload]]")[1],
        "topology.k",
        "GB",
    ),
    "too_many_flows": (GOOD.replace("duration_ms = 0.5", "duration_ms = 1e8"), "workload[0].duration_ms", "flows"),
    "too_many_samples": (GOOD + "\n[run]\nstop_ms = 1e6\nsample_interval_us = 0.001\n", "run.sample_interval_us", "samples"),
    # Accepted by `validate` before, refused by `run` when it built the incast.
    "incast_other_leaf_fan_in": (
        GOOD + '\n[[workload]]\nkind = "incast"\nquery_rate_per_host = 10\nfan_in = 5\nburst_bytes = 5000\n'
        'senders = "other_leaf"\nduration_ms = 0.5\n',
        "workload[1].fan_in",
        "other_leaf",
    ),
}


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_bad_scenario_exits_2_with_one_clear_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, key, value = BAD_CASES[case]
    path = tmp_path / "nope.toml" if text is None else _write(tmp_path, text)
    for command in (["run", str(path), "--out", str(tmp_path / "out")], ["validate", str(path)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err
        first = err.splitlines()[0]
        assert first.startswith("error: ")
        assert key in first and value in first, first
        assert not (tmp_path / "out").exists()


def test_bad_input_in_a_real_process_has_no_traceback(tmp_path: Path) -> None:
    p = _write(tmp_path, GOOD.replace("load = 0.2", "load = 1.5"))
    proc = subprocess.run(
        [sys.executable, "-m", "slacknet.cli", "run", str(p)],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: workload[0].load = 1.5: ")
    assert "Traceback" not in proc.stderr
    assert "hint:" in proc.stderr


def test_the_scenario_hint_comes_only_with_a_scenario_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A sweep file's own key and a --flow id were followed by the hint about scenario keys.
    sweep = _write(tmp_path, 'name = "s"\n', "sweep.toml")
    assert main(["sweep", str(sweep)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: base: a sweep needs") and "hint:" not in err, err
    scen = _write(tmp_path, TINY_TOML)
    assert main(["trace", str(scen), "--flow", "999999"]) == 2
    assert "hint:" not in capsys.readouterr().err
    assert main(["validate", str(_write(tmp_path, TINY_TOML.replace("[topology]", "[topolgy]"), "typo.toml"))]) == 2
    assert "hint:" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["frobnicate"]) == 2
    assert main(["run", "--seed", "abc"]) == 2
    assert main(["run", "--seed", "-1"]) == 2
    assert main(["plot"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_bad_results_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["plot", str(tmp_path / "missing")], ["plot", str(tmp_path)], ["summary", str(tmp_path)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "Traceback" not in err


def test_damaged_results_dir_in_a_real_process_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["run", str(_write(tmp_path, TINY_TOML)), "--out", str(out), "--no-plot", "--no-progress"]) == 0
    records = out / "records.parquet"
    records.write_bytes(records.read_bytes()[: records.stat().st_size // 2])  # truncated
    for command in (["summary", str(out)], ["plot", str(out)]):
        proc = subprocess.run([sys.executable, "-m", "slacknet.cli", *command],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
        assert "records.parquet has" in proc.stderr and "re-run" in proc.stderr
    assert not (out / "slowdown_cdf.png").exists()


def test_run_refuses_an_out_folder_that_is_not_results_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work")
    assert main(["run", str(_write(tmp_path, TINY_TOML)), "--out", str(home)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: refusing to replace") and captured.err.count("\n") == 1
    assert captured.out == ""  # nothing ran
    assert [p.name for p in home.iterdir()] == ["thesis.tex"]


def test_run_writes_results_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _write(tmp_path, TINY_TOML)
    out = tmp_path / "out"
    assert main(["run", str(p), "--out", str(out), "--seed", "3", "--no-progress"]) == 0
    stdout = capsys.readouterr().out
    assert "FCT slowdown" in stdout and "events/s" in stdout and "packet-hops" in stdout
    assert f"results: {out}" in stdout
    for f in ("records.parquet", "summary.json", "scenario.json", "slowdown_cdf.png", "slowdown_by_size.png"):
        assert (out / f).is_file(), f
    assert json.loads((out / "summary.json").read_text())["seed"] == 3


def test_run_default_folder_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    p = _write(tmp_path, TINY_TOML)
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(p), "--no-plot"]) == 0
    runs = list((tmp_path / "results" / "tiny").iterdir())
    assert len(runs) == 1
    run_id = runs[0].name
    assert len(run_id.split("-")) == 3  # date-time-hash
    assert not (runs[0] / "slowdown_cdf.png").exists()
    assert str(Path("results") / "tiny" / run_id) in capsys.readouterr().out


def test_two_default_runs_in_one_second_keep_both_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The folder is named by the start second and the scenario's hash: the second of two runs
    # of one scenario in one second replaced the first's results.
    import datetime as dt

    import slacknet.cli as cli

    monkeypatch.setattr(cli, "_now", lambda: dt.datetime(2026, 11, 28, 12, 0, 0))
    p = _write(tmp_path, TINY_TOML)
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(p), "--no-plot", "--no-progress", "--seed", "1"]) == 0
    assert main(["run", str(p), "--no-plot", "--no-progress", "--seed", "1"]) == 0
    runs = sorted(d.name for d in (tmp_path / "results" / "tiny").iterdir())
    assert len(runs) == 2 and runs[1] == runs[0] + "-2", runs
    for r in runs:
        assert (tmp_path / "results" / "tiny" / r / "records.parquet").is_file()


# File inputs that `validate` must read as `run` does: (file name, contents, key, value).
FILE_CASES = {
    "zero_mean_cdf": ("zero.cdf", "0 0\n0 1\n", "workload[0].cdf", "mean flow size is 0"),
    "huge_cdf": ("huge.cdf", "100 0.5\n2e12 1\n", "workload[0].cdf", "2000000000000"),
    "bad_flow_list": ("flows.txt", "0 0 7 0.5 10 0\n1 0 7 2e6 10 0\n", "workload[0].path", "line 2"),
}


@pytest.mark.parametrize("case", list(FILE_CASES))
def test_validate_reads_every_file_as_run_does(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name, contents, key, value = FILE_CASES[case]
    (tmp_path / name).write_text(contents)
    if name.endswith(".txt"):
        text = GOOD.split("[[workload]]")[0] + f'[[workload]]\nkind = "flow_list"\npath = "{name}"\n'
    else:
        text = GOOD.replace('"google_rpc"', f'"{name}"')
    path = _write(tmp_path, text)
    lines = []
    for command in (["validate", str(path)], ["run", str(path), "--out", str(tmp_path / "out"), "--no-plot"]):
        assert main(command) == 2
        first = capsys.readouterr().err.splitlines()[0]
        assert key in first and value in first, first
        lines.append(first)
    assert lines[0] == lines[1], "validate and run must refuse with the same error"


def test_validate_accepts_what_run_runs_and_prints_what_run_saves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sizes.cdf").write_text("100 0.5\n2000 1\n")
    path = _write(tmp_path, GOOD.replace('"google_rpc"', '"sizes.cdf"'))
    assert main(["validate", str(path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--no-plot", "--no-progress"]) == 0
    capsys.readouterr()
    assert printed == json.loads((out / "scenario.json").read_text())


def test_validate_prints_resolved_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(_write(tmp_path, GOOD))]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["transport"]["kind"] == "dctcp" and d["seed"] == 1
    assert main(["validate"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "default"


def test_plot_and_summary_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["run", str(_write(tmp_path, TINY_TOML)), "--out", str(out), "--no-plot"]) == 0
    capsys.readouterr()
    assert main(["plot", str(out), "--out", str(tmp_path / "plots")]) == 0
    printed = capsys.readouterr().out.split()
    assert len(printed) == 2 and all(Path(p).stat().st_size > 0 for p in printed)
    assert main(["summary", str(out)]) == 0
    assert "Switches by tier" in capsys.readouterr().out


def test_console_script_entry_point(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("slacknet")
    if not exe.exists():
        pytest.skip("slacknet console script not installed next to this interpreter")
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0 and proc.stdout.startswith("slacknet ")


def test_plot_command_draws_time_series(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["run", str(_write(tmp_path, SERIES_TOML)), "--out", str(out), "--no-plot"]) == 0
    assert (out / "queue_series.parquet").is_file() and (out / "transfer_series.parquet").is_file()
    capsys.readouterr()
    assert main(["plot", str(out)]) == 0
    printed = [Path(p).name for p in capsys.readouterr().out.split()]
    assert printed == ["slowdown_cdf.png", "slowdown_by_size.png", "queue_series.png", "transfer_cwnd.png"]
    assert all((out / p).stat().st_size > 5_000 for p in printed)


def test_flows_that_give_up_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Four senders into one port of a one-packet buffer, and senders that give up at their
    # first retransmission timeout: the summary must say how many did not finish, and why.
    p = _write(
        tmp_path,
        """
name = "give_up"
[topology]
kind = "leaf_spine"
leaves = 1
hosts_per_leaf = 5
spines = 0
host_rate_gbps = 10.0
fabric_rate_gbps = 10.0
[switch]
buffer_bytes = 1600
[transport]
kind = "newreno"
max_retries = 0
[[workload]]
kind = "flows"
flows = [
  { src = 0, dst = 4, size_bytes = 100000, start_ns = 0 },
  { src = 1, dst = 4, size_bytes = 100000, start_ns = 0 },
  { src = 2, dst = 4, size_bytes = 100000, start_ns = 0 },
  { src = 3, dst = 4, size_bytes = 100000, start_ns = 0 },
]
""",
    )
    out = tmp_path / "out"
    assert main(["run", str(p), "--out", str(out), "--no-progress", "--no-plot"]) == 0
    stdout = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    n = summary["given_up_flows"]
    assert n > 0
    done = summary["finished_flows"]
    assert f"{done}/4 flows finished ({n} gave up after max_retries timeouts without progress)" in stdout


# -- output paths (--out) --------------------------------------------------------------------

#: Every subcommand that takes --out, with arguments it is checked with before anything else.
OUT_COMMANDS = {
    "run": ["run", "s.toml"],
    "plot": ["plot", "results"],
    "sweep": ["sweep", "sweep.toml"],
    "compare": ["compare", "s.toml"],
    "reproduce": ["reproduce", "credence"],
    "reproduce_coflow": ["reproduce", "coflow"],
    "ml_tolerance": ["ml", "tolerance", "--models", "mlp"],
    "ml_profile": ["ml", "profile", "--models", "mlp"],
    "credence_trace": ["credence", "trace", "s.toml"],
    "credence_train": ["credence", "train", "t.parquet"],
}


@pytest.mark.parametrize("command", list(OUT_COMMANDS))
def test_an_empty_out_is_refused_everywhere(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    # `run --out ""` replaced the working folder itself; `plot --out ""` wrote into it.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("mine")
    assert main([*OUT_COMMANDS[command], "--out", ""]) == 2
    kind = "file" if command in ("ml_profile", "credence_trace", "credence_train") else "folder"
    assert capsys.readouterr().err == (f"error: --out = '': an empty path (it would mean the working folder itself); "
                                       f"name the output {kind}\n")
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


@pytest.fixture()
def results_dir(tmp_path: Path, tiny_results) -> Path:  # type: ignore[no-untyped-def]
    return tiny_results.save(tmp_path / "x")


@pytest.mark.parametrize("argv, inside", [
    (["plot", "{x}", "--out", "{x}/plots"], "plots"),
    (["run", "{toml}", "--out", "{x}/sub", "--no-plot"], "sub"),
    (["sweep", "{toml}", "--out", "{x}/sweep"], "sweep"),
    (["credence", "trace", "{toml}", "--out", "{x}/t.parquet"], "t.parquet"),
    (["ml", "tolerance", "--models", "mlp", "--out", "{x}/deeper/ml"], "deeper"),
])
def test_an_out_inside_a_results_folder_is_refused(argv: list[str], inside: str, results_dir: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # It broke the folder: `slacknet summary x` then said `x/plots is not in manifest.json`.
    toml = _write(tmp_path, TINY_TOML)
    args = [a.format(x=results_dir, toml=toml) for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    out = args[args.index("--out") + 1]
    assert err == (f"error: --out = {out}: it is inside the results folder {results_dir}, which it would break (the "
                   f"folder would fail its manifest check); choose a folder beside it, e.g. {results_dir}-{inside}\n")
    assert main(["summary", str(results_dir)]) == 0
    # Plots beside the results, in the folder itself, are still welcome.
    assert main(["plot", str(results_dir), "--out", str(results_dir)]) == 0


def test_an_out_that_is_or_goes_through_a_file_names_out(tmp_path: Path, results_dir: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # It said `File exists: .../afile`.
    toml, afile = _write(tmp_path, TINY_TOML), _write(tmp_path, "x", "afile")
    for argv, message in (
        (["run", str(toml), "--out", f"{afile}/sub"], f"{afile} is a file, not a folder; choose an output folder elsewhere"),
        (["plot", str(results_dir), "--out", str(afile)], "it is a file, not a folder; choose a new output folder"),
        (["sweep", str(toml), "--out", str(afile)], "it is a file, not a folder; choose a new output folder"),
        (["credence", "trace", str(toml), "--out", str(tmp_path)], "it is a folder, not a file"),
        (["credence", "trace", str(toml), "--out", str(tmp_path / "t.csv")],
         "a decision trace is written as Parquet; name the file *.parquet"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --out = {argv[-1]}: {message}") and err.count("\n") == 1, err
    assert afile.read_text() == "x"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_an_out_where_nothing_can_be_created_names_out_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It ran, then said `No such file or directory: /proc/.x.tmp-<pid>-...`.
    assert main(["run", str(_write(tmp_path, TINY_TOML)), "--out", "/proc/x", "--no-plot"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: --out = /proc/x: nothing can be created in /proc (")
    assert captured.err.endswith("); choose a folder you can write to\n") and captured.out == ""


def test_summary_and_plot_of_a_file_say_it_is_a_file(results_dir: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # They said `no such results folder`.
    afile = _write(tmp_path, "x", "afile")
    for command in ("summary", "plot"):
        assert main([command, str(results_dir / "records.parquet")]) == 2
        assert capsys.readouterr().err == (f"error: {results_dir / 'records.parquet'} is a file, not a results folder: "
                                           f"give the folder that holds it, {results_dir}\n")
        assert main([command, str(afile)]) == 2
        assert capsys.readouterr().err == (f"error: {afile} is a file, not a results folder: give the folder "
                                           "`slacknet run` wrote\n")
