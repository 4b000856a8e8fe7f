"""Hostile and mistaken inputs to `slacknet ml`, `slacknet credence` and the testbed, through the
command line and the Python API (audit): each is one clear error naming the argument, exit status
2 on the command line, and no file of the user's replaced. Kept fast: the MF model, one epoch,
traces of a few hundred rows."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd
import pytest

from slacknet import learn, mltol, testbed
from slacknet.cli import main

from .test_learn import HEAVY


@contextlib.contextmanager
def _guard(seconds: int = 20) -> Iterator[None]:
    """Fail instead of hanging (a FIFO read waits for a writer for ever)."""
    def fail(*_: Any) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


# ---------------------------------------------------------------------------------------------
# mltol: the Python API


@pytest.fixture(scope="module")
def mf() -> tuple[mltol.ModelSpec, mltol.Problem]:
    spec = mltol.MODEL_SPECS["mf"]
    return spec, spec.build()


@pytest.mark.parametrize("kw, exc, match", [
    ({"num_workers": 0}, ValueError, "num_workers = 0: must be at least 1"),  # was ZeroDivisionError
    # Was a run in which no minibatch fit, reported as "did not converge" after training nothing.
    ({"num_workers": 10**6}, ValueError, r"num_workers = 1000000: a minibatch of 1000000 x 64 examples is more "
                                         r"than model mf's \d+ training examples; at most 113"),
    ({"num_workers": -1}, ValueError, "num_workers = -1: "),
    ({"max_epochs": 0}, ValueError, "max_epochs = 0: must be at least 1"),  # was 0 epochs: "not converged"
    ({"max_epochs": 1.5}, TypeError, "max_epochs = 1.5: give an integer"),
    ({"values_per_packet": 1.5}, TypeError, "values_per_packet = 1.5: give an integer"),
    ({"values_per_packet": 0}, ValueError, "values_per_packet = 0: must be at least 1"),
    ({"p": True}, TypeError, "p = True: give a number"),  # was p = 1
    ({"p": "0.1"}, TypeError, "p = '0.1': give a number"),
    ({"seed": -1}, ValueError, r"seed = -1: must be between 0 and 2\^64 - 1"),  # was numpy's message
    ({"seed": 1.5}, TypeError, "seed = 1.5: give an integer"),
])
def test_train_refuses_arguments_it_cannot_run(kw: dict[str, Any], exc: type, match: str,
                                                mf: tuple[mltol.ModelSpec, mltol.Problem]) -> None:
    spec, prob = mf
    args: dict[str, Any] = {"p": 0.1, "policy": "zero_fill", "seed": 1, "max_epochs": 1, **kw}
    with pytest.raises(exc, match=match):
        mltol.train(prob, spec, **args)


def test_train_takes_numpy_numbers(mf: tuple[mltol.ModelSpec, mltol.Problem]) -> None:
    spec, prob = mf
    a = mltol.train(prob, spec, p=0.1, policy="zero_fill", seed=2, max_epochs=1)
    b = mltol.train(prob, spec, p=np.float64(0.1), policy="zero_fill",
                    seed=np.int64(2), max_epochs=np.int32(1), num_workers=np.int64(4))  # type: ignore[arg-type]
    assert a.history == b.history and a.epochs_run == b.epochs_run


@pytest.mark.parametrize("kw, exc, match", [
    ({"seeds": ()}, ValueError, r"seeds = \(\): empty"),  # was KeyError: 'epochs'
    ({"models": ()}, ValueError, r"models = \(\): empty"),
    ({"models": "mf"}, TypeError, "models = 'mf': give a tuple of model names"),  # was "model = m: unknown"
    ({"policies": "rescale"}, TypeError, "policies = 'rescale': give a tuple"),  # was "policy = r"
    ({"seeds": 1}, TypeError, "seeds = 1: give a tuple of integers"),
    ({"seeds": (1, 1)}, ValueError, "listed twice"),  # each run was counted twice
    ({"models": ("mf", "mf")}, ValueError, "listed twice"),
    ({"models": ("MF",)}, ValueError, "'MF' is unknown; choose from mlp, mf, cnn, rnn"),
    ({"seeds": (True,)}, TypeError, "seeds = True: give an integer"),  # was seed 1
    ({"p_step": True}, TypeError, "p step = True: give a number"),  # was a step of 1
    ({"num_workers": 0}, ValueError, "num_workers = 0: "),
    ({"max_epochs": 0}, ValueError, "max_epochs = 0: "),
])
def test_tolerance_refuses_a_config_before_training(kw: dict[str, Any], exc: type, match: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mltol, "train", lambda *a, **k: pytest.fail("trained"))
    config = dataclasses.replace(mltol.ToleranceConfig.quick(models=("mf",), policies=("zero_fill",)), **kw)
    with pytest.raises(exc, match=match):
        mltol.tolerance(config)


def test_summarize_and_profile_name_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="not a tolerance table .no column model"):
        mltol.summarize(pd.DataFrame())  # was KeyError: 'model'
    with pytest.raises(TypeError, match="models = 'mf': give a tuple"):
        mltol.profile("mf", repeats=1)  # was "model = m: unknown"
    with pytest.raises(ValueError, match="num_workers = 0: "):
        mltol.profile(("mf",), repeats=1, num_workers=0)  # was numpy's "need at least one array to stack"
    with pytest.raises(TypeError, match="repeats = True: "):
        mltol.profile(("mf",), repeats=True)
    with pytest.raises(TypeError, match="values_per_packet = 1.5: "):
        mltol.packet_bounds(10, 1.5)  # type: ignore[arg-type]  # was packets of [0, 1.5), [1, 2.5), ...


def _prof() -> pd.DataFrame:
    return pd.DataFrame({"model": ["cnn", "mlp"], "params": [1000, 3000], "gradient_bytes": [4000, 12000],
                         "ratio": [100.0, 10.0]})


def test_with_tolerance_and_figure4_refuse_what_is_no_tolerance() -> None:
    two = pd.DataFrame({"model": ["cnn", "mlp", "mlp"], "policy": "zero_fill", "x1_min": [0.1, 0.1, 0.2],
                        "x1_mean": [0.1, 0.1, 0.2]})
    with pytest.raises(ValueError, match="2 zero_fill rows for mlp, not one"):
        mltol.with_tolerance(_prof(), two)  # was TypeError: float() of a Series
    big = pd.DataFrame({"model": ["cnn", "mlp"], "policy": "zero_fill", "x1_min": [0.1, 7.0], "x1_mean": 0.1})
    with pytest.raises(ValueError, match=r"x1_min of mlp = 7.0: a loss tolerance is a probability"):
        mltol.with_tolerance(_prof(), big)  # was a complete_fraction of -6
    nan = pd.DataFrame({"model": ["cnn", "mlp"], "policy": "zero_fill", "x1_min": [0.1, np.nan],
                        "x1_mean": [0.1, np.nan]})
    table = mltol.with_tolerance(_prof(), nan)  # kept: n/a is what summarize says without a baseline
    with pytest.raises(ValueError, match="x1 of mlp is unknown"):
        mltol.figure4_points(table)  # was complete_fraction NaN, a scenario key no run can take


# ---------------------------------------------------------------------------------------------
# slacknet ml: the command line


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_cli_profile_tolerance_must_be_a_small_regular_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    # Both hung: pandas waited for a FIFO's writer, and read /dev/zero until memory ran out.
    cases = [(fifo, "a FIFO, not a file"), (tmp_path, "a folder, not a file")]
    if Path("/dev/zero").exists():
        cases.append((Path("/dev/zero"), "a device or special file, not a file"))
    big = tmp_path / "big.csv"
    big.write_bytes(b"model,policy,x1_min,x1_mean\n" + b"#" * mltol.MAX_SUMMARY_BYTES)
    cases.append((big, "larger than 1 MB"))
    for path, what in cases:
        with _guard():
            assert main(["ml", "profile", "--models", "mlp", "--repeats", "1", "--tolerance", str(path)]) == 2
        assert f"--tolerance = {path}: {what}" in _one_line(capsys)
    dup = tmp_path / "dup.csv"
    dup.write_text("model,policy,x1_min,x1_mean\nmlp,zero_fill,0.1,0.1\nmlp,zero_fill,0.2,0.2\n")
    assert main(["ml", "profile", "--models", "mlp", "--repeats", "1", "--tolerance", str(dup)]) == 2  # traceback
    assert "2 zero_fill rows for mlp" in _one_line(capsys)
    # The summary's rows are checked before the models are timed (seconds each, wasted before).
    timed: list[object] = []
    monkeypatch.setattr(mltol, "profile", lambda *a, **k: timed.append(a))
    assert main(["ml", "profile", "--models", "mlp", "--repeats", "1", "--tolerance", str(dup)]) == 2
    assert timed == [] and "2 zero_fill rows for mlp" in _one_line(capsys)


def test_cli_ml_never_replaces_a_users_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "runs.csv").write_text("my own runs\n")
    argv = ["ml", "tolerance", "--quick", "--models", "mf", "--policy", "zero_fill", "--p-step", "1",
            "--max-epochs", "1"]
    assert main([*argv, "--out", str(mine)]) == 2  # was replaced after training
    assert "it holds a runs.csv that is not an earlier tolerance run's" in _one_line(capsys)
    assert (mine / "runs.csv").read_text() == "my own runs\n"
    # An earlier tolerance run's folder is replaced, and other files in it are left alone.
    out = tmp_path / "tol"
    out.mkdir()
    (out / "README").write_text("kept\n")
    assert main([*argv, "--out", str(out)]) == 0
    assert main([*argv, "--out", str(out), "--seeds", "2"]) == 0
    assert list(pd.read_csv(out / "runs.csv")["seed"]) == [2, 2]
    assert (out / "README").read_text() == "kept\n"
    capsys.readouterr()
    notes = tmp_path / "notes.txt"
    notes.write_text("model,policy\n")
    assert main(["ml", "profile", "--models", "mlp", "--repeats", "1", "--out", str(notes)]) == 2
    assert "it exists and is not an earlier profile's table" in _one_line(capsys)
    assert notes.read_text() == "model,policy\n"
    table = tmp_path / "models.csv"
    assert main(["ml", "profile", "--models", "mlp", "--repeats", "1", "--out", str(table)]) == 0
    assert main(["ml", "profile", "--models", "mf", "--repeats", "1", "--out", str(table)]) == 0
    assert list(pd.read_csv(table)["model"]) == ["mf"]


def test_an_interrupted_write_never_pairs_one_runs_summary_with_anothers(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    runs = pd.DataFrame({"model": ["mf"], "policy": "zero_fill", "seed": 1, "p": 0.0, "converged": True,
                         "epochs": 1, "epochs_run": 1, "val_loss": 0.1, "val_acc": np.nan})
    mltol.write_tolerance(runs, mltol.summarize(runs), tmp_path)
    real = mltol.write_csv_atomic

    def die_before_summary(df: pd.DataFrame, path: Path) -> Path:
        if Path(path).name == "summary.csv":
            raise KeyboardInterrupt
        return real(df, path)

    monkeypatch.setattr(mltol, "write_csv_atomic", die_before_summary)
    with pytest.raises(KeyboardInterrupt):
        mltol.write_tolerance(runs.assign(seed=2), mltol.summarize(runs.assign(seed=2)), tmp_path)
    assert not (tmp_path / "summary.csv").exists()  # not the earlier run's beside the new runs


# ---------------------------------------------------------------------------------------------
# learn: the Python API


def _trace(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    t = pd.DataFrame({"switch": np.zeros(n, dtype=np.uint32), "time_ps": np.arange(n, dtype=np.uint64),
                      "queue": rng.integers(0, 4, n).astype(np.uint32),
                      "queue_len": rng.integers(0, 1000, n).astype(np.float64),
                      "avg_queue_len": 0.0, "occupancy": rng.integers(0, 5000, n).astype(np.float64),
                      "avg_occupancy": 0.0})
    t["dropped"] = t["occupancy"] > 4000
    return t


@pytest.mark.parametrize("kw, exc, match", [
    # Each was scikit-learn's message, naming its own parameter (n_estimators, max_depth, ...).
    ({"trees": 0}, ValueError, "trees = 0: must be between 1 and 1000"),
    ({"trees": 10**9}, ValueError, "trees = 1000000000: must be between 1 and 1000"),  # ran out of memory
    ({"trees": True}, TypeError, "trees = True: give an integer"),  # was one tree
    ({"depth": 2**70}, ValueError, "depth = 1180591620717411303424: must be between 1 and 1000"),  # OverflowError
    ({"seed": -1}, ValueError, r"seed = -1: must be between 0 and 2\^32 - 1"),
    ({"test_fraction": 0}, ValueError, "test_fraction = 0: must be between 0 and 1"),
    ({"test_fraction": float("nan")}, ValueError, "test_fraction = nan: "),
    ({"test_fraction": 0.999}, ValueError, "test_fraction = 0.999: leaves 0 of the 400 rows to train on"),
    ({"num_queues": 0}, ValueError, "num_queues = 0: must be at least 1"),  # was taken as None
    ({"num_queues": -3}, ValueError, "num_queues = -3: "),  # was a bound of a negative N
    ({"features": "queue_len"}, TypeError, "features = 'queue_len': give a sequence"),  # was "unknown feature 'q'"
    ({"features": []}, ValueError, r"features = \(\): give at least one"),
    ({"features": ["queue_len", "queue_len"]}, ValueError, "listed twice"),
])
def test_train_checks_its_arguments(kw: dict[str, Any], exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        learn.train(_trace(), **kw)


@pytest.mark.parametrize("column, values, match", [
    # Strings were all true (every packet a drop), NaN too.
    ("dropped", lambda t: np.where(t["dropped"], "True", "False"), "column dropped holds 'True' "),
    ("dropped", lambda t: np.where(t["dropped"], 1.0, np.nan), "column dropped holds missing values"),
    ("dropped", lambda t: t["dropped"].astype(int) * 2, r"column dropped holds 2 \(int64\)"),
    # An infinite queue raised OverflowError (a traceback on the command line), NaN a ValueError
    # about converting NaN, a negative one gave Theorem 2 a negative N.
    ("queue", lambda t: np.inf, "column queue holds inf"),
    ("queue", lambda t: np.nan, "column queue holds missing values"),
    ("queue", lambda t: -5, r"column queue holds -5 \(int64\)"),
    # A NaN feature trained a forest whose missing-value branches the file cannot hold.
    ("queue_len", lambda t: np.where(t.index % 10 == 0, np.nan, t["queue_len"]),
     "feature queue_len holds 40 values that are not finite numbers"),
    ("occupancy", lambda t: np.inf, "feature occupancy holds 400 values that are not finite"),
])
def test_train_refuses_values_no_trace_holds(column: str, values: Any, match: str) -> None:
    t = _trace()
    t[column] = values(t)
    with pytest.raises(ValueError, match=f"not a decision trace: {match}"):
        learn.train(t)


def test_train_takes_numpy_numbers_and_integer_labels() -> None:
    t = _trace()
    a = learn.train(t, trees=2, seed=3, test_fraction=0.3).metrics
    labels = t.assign(dropped=t["dropped"].astype(np.int8))
    b = learn.train(labels, trees=np.int64(2), seed=np.uint32(3), test_fraction=0.3).metrics  # type: ignore[arg-type]
    assert a == b
    learn.train(t, trees=2, test_fraction=np.float32(0.3))  # type: ignore[arg-type]  # was refused by scikit-learn


def test_trace_checks_seed_and_chunk_before_running(tmp_path: Path) -> None:
    from slacknet import SpecError

    sc = tmp_path / "s.toml"
    sc.write_text(HEAVY)
    for seed in (True, -1, 2**64):  # True ran as seed 1; 2^64 was sent to Rust as a float
        with pytest.raises(SpecError, match=r"seed = .*: must be an integer in \[0, 2\^64 - 1\]"):
            learn.trace(sc, seed=seed)
    with _guard(), pytest.raises(ValueError, match="chunk_events = 0: must be between 1"):
        learn.trace(sc, chunk_events=0)  # advanced 0 events a call, for ever
    with pytest.raises(TypeError, match="chunk_events = True: "):
        learn.trace(sc, chunk_events=True)


def test_export_forest_replaces_only_a_forest(tmp_path: Path) -> None:
    report = learn.train(_trace(), trees=2)
    mine = tmp_path / "mine.json"
    mine.write_text('{"a": 1}\n')
    with pytest.raises(ValueError, match="it exists and is not a slacknet-forest/1 model"):
        learn.export_forest(report, mine)
    assert mine.read_text() == '{"a": 1}\n'
    with pytest.raises(ValueError, match="it is a folder, not a file"):
        learn.export_forest(report, tmp_path)
    model = learn.export_forest(report, tmp_path / "m.json")
    learn.export_forest(learn.train(_trace(), trees=3), model)  # an earlier model is replaced
    assert len(json.loads(model.read_text())["trees"]) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "mine.json"]  # no temporary left


# ---------------------------------------------------------------------------------------------
# slacknet credence: the command line


def test_cli_credence_never_replaces_a_users_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scen = tmp_path / "heavy.toml"
    scen.write_text(HEAVY)
    trace = tmp_path / "t.parquet"
    _trace().to_parquet(trace, index=False)
    for command, args, what in (("trace", [str(scen)], "a decision trace"),
                                ("train", [str(trace)], "a slacknet-forest/1 model")):
        for victim in (scen, tmp_path / "t.parquet" if command == "train" else tmp_path / "other.json"):
            if not victim.exists():
                victim.write_text('{"format": "slacknet-forest/1"}')
            before = victim.read_bytes()
            assert main(["credence", command, *args, "--out", str(victim)]) == 2  # were overwritten
            assert f"--out = {victim}: it exists and is not {what}" in _one_line(capsys)
            assert victim.read_bytes() == before


def test_cli_credence_train_names_the_trace_whose_values_are_wrong(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.parquet"
    _trace().to_parquet(good, index=False)
    bad = tmp_path / "bad.parquet"
    _trace().assign(queue=np.inf).to_parquet(bad, index=False)
    assert main(["credence", "train", str(good), str(bad), "--out", str(tmp_path / "m.json")]) == 2  # traceback
    assert f"TRACE = {bad}: not a decision trace: column queue holds inf" in _one_line(capsys)
    assert main(["credence", "train", str(good), "--out", str(tmp_path / "m.json"), "--trees", "100000"]) == 2
    assert "--trees = 100000: at most 1000" in _one_line(capsys)
    odd = tmp_path / os.fsdecode(b"t\xff.parquet")  # a name that is not UTF-8: pyarrow refused to open it
    odd.write_bytes(good.read_bytes())
    assert main(["credence", "train", str(odd), "--out", str(tmp_path / "m.json")]) == 0


# ---------------------------------------------------------------------------------------------
# testbed (no root needed: nothing here builds namespaces)


def test_testbed_takes_numpy_integers_and_checks_every_host() -> None:
    tb = testbed.Testbed(np.int64(3))  # type: ignore[arg-type]  # was "give an integer"
    # Was "host 1: this testbed has hosts 0 to 2".
    assert tb.hosts == 3 and tb.address(np.int64(1)) == "10.77.0.2"  # type: ignore[arg-type]
    for host in (-1, 3):  # popen(-1) ran in the last host, egress_drops(-1) read its port
        with pytest.raises(IndexError, match=f"host {host}: this testbed has hosts 0 to 2"):
            tb.popen(host, ["true"])
        with pytest.raises(IndexError, match=f"host {host}: "):
            tb.egress_drops(host)
    with pytest.raises(TypeError, match="rate = True: give tc's spelling"):
        testbed.Testbed(2, rate=True)  # type: ignore[arg-type]
    d = testbed.TcpTailDrop(tb, np.int64(0), np.int64(80), np.uint8(121))  # type: ignore[arg-type]
    assert (d.host, d.dport, d.marker) == (0, 80, 121)


def test_testbed_outside_its_with_block_says_so() -> None:
    # egress_drops answered {} and egress_stats "" (tc failed: no such namespace), which read as
    # "nothing dropped".
    tb = testbed.Testbed(2)
    with pytest.raises(RuntimeError, match="the testbed is not built"):
        tb.egress_drops(0)
    with pytest.raises(RuntimeError, match="the testbed is not built"):
        tb.egress_stats(1)
    with pytest.raises(RuntimeError, match="the testbed is not built"):
        tb.popen(0, ["true"])


def test_a_namespace_close_cannot_remove_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # close() ignored a failed `ip netns del`: the namespaces stayed without a word.
    import subprocess

    def failing_ip(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(["ip", *args], 1, "", "Cannot remove namespace: Device or resource busy")

    monkeypatch.setattr(testbed, "_ip", failing_ip)
    tb = testbed.Testbed(2)
    tb._made = ["snA", "snB"]
    with pytest.raises(RuntimeError, match=r"ip netns del snB: Cannot remove namespace: Device or resource busy; "
                                           r"the testbed's namespaces snB snA are left: remove them with"):
        tb.close()
    assert tb._made == []
    # Leaving the with block by an exception: that exception is the one raised, the leftovers a warning.
    tb._made = ["snA"]
    with pytest.warns(RuntimeWarning, match="namespaces snA are left"):
        assert tb.__exit__(KeyError, KeyError("x"), None) is None  # not swallowed, not replaced
