"""slacknet.mltol: packetization, the receiver policies, lossless equivalence, determinism, gradient
checks and a reduced tolerance run (MLP and MF: numpy only; the CNN/RNN need the ml extra)."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from slacknet import mltol
from slacknet.cli import main

HAS_AUTOGRAD = importlib.util.find_spec("autograd") is not None


@pytest.mark.parametrize("d, vpp", [(0, 365), (1, 365), (365, 365), (366, 365), (2410, 365), (10, 3), (7, 1)])
def test_packets_never_split_a_value_and_cover_every_index_once(d: int, vpp: int) -> None:
    b = mltol.packet_bounds(d, vpp)
    covered = np.zeros(d, dtype=int)
    for start, end in b:
        assert 0 < end - start <= vpp
        covered[start:end] += 1
    assert (covered == 1).all()
    if len(b):
        assert b[0, 0] == 0 and b[-1, 1] == d
        assert (b[1:, 0] == b[:-1, 1]).all()  # consecutive
    assert len(b) == -(-d // vpp)


def test_zero_fill_and_rescale_hand_computed() -> None:
    # 3 workers, 5 values, 2 values per packet: packets [0,2), [2,4), [4,5).
    g = np.array([[1.0, 2.0, 3.0, 4.0, 5.0],
                  [10.0, 20.0, 30.0, 40.0, 50.0],
                  [100.0, 200.0, 300.0, 400.0, 500.0]])
    arrived = np.array([[True, False, True],
                        [True, True, False],
                        [False, True, False]])
    zf = mltol.aggregate(g, arrived, 2, "zero_fill")
    np.testing.assert_array_equal(zf, np.array([11.0, 22.0, 330.0, 440.0, 5.0]) / 3)
    rs = mltol.aggregate(g, arrived, 2, "rescale")
    np.testing.assert_array_equal(rs, np.array([11.0 / 2, 22.0 / 2, 330.0 / 2, 440.0 / 2, 5.0]))
    none = np.zeros_like(arrived)
    np.testing.assert_array_equal(mltol.aggregate(g, none, 2, "rescale"), np.zeros(5))
    np.testing.assert_array_equal(mltol.aggregate(g, none, 2, "zero_fill"), np.zeros(5))
    with pytest.raises(ValueError, match="policy"):
        mltol.aggregate(g, arrived, 2, "bogus")


@pytest.mark.parametrize("name, loss_grad", [("mlp", mltol.mlp_loss_grad), ("mf", mltol.mf_loss_grad)])
def test_hand_gradients_match_finite_differences(name: str, loss_grad: object) -> None:
    prob = mltol.MODEL_SPECS[name].build()
    theta = prob.init(np.random.default_rng(3))
    x, y = prob.x_train[:20], prob.y_train[:20]
    _, g = loss_grad(theta, x, y)  # type: ignore[operator]
    rng = np.random.default_rng(4)
    # the MF gradient is sparse: check coordinates it touches as well as random ones
    idx = np.concatenate([rng.choice(theta.size, 15, replace=False), np.flatnonzero(g)[:15]])
    eps = 1e-6
    for i in idx:
        tp, tm = theta.copy(), theta.copy()
        tp[i] += eps
        tm[i] -= eps
        fd = (loss_grad(tp, x, y)[0] - loss_grad(tm, x, y)[0]) / (2 * eps)  # type: ignore[operator]
        assert fd == pytest.approx(g[i], rel=1e-4, abs=1e-7), (name, i)


@pytest.mark.parametrize("policy", mltol.POLICIES)
def test_lossless_is_plain_data_parallel_sgd_bit_for_bit(policy: str) -> None:
    spec = mltol.MODEL_SPECS["mlp"]
    prob = spec.build()
    got = mltol.train(prob, spec, p=0.0, policy=policy, seed=5, max_epochs=2, stop_at_target=False)
    # the reference: the same seeds, the mean of the workers' gradients, no packets at all
    data_ss, _ = np.random.SeedSequence(5).spawn(2)
    rng = np.random.default_rng(data_ss)
    theta = prob.init(rng)
    w, b = 4, spec.batch_per_worker
    n = len(prob.y_train)
    history = []
    for _ in range(2):
        order = rng.permutation(n)
        for s in range(n // (w * b)):
            idx = order[s * w * b:(s + 1) * w * b].reshape(w, b)
            grads = prob.worker_grads(theta, prob.x_train[idx], prob.y_train[idx])
            theta = theta - spec.lr * (grads.sum(axis=0) / w)
        history.append(prob.evaluate(theta, prob.x_val, prob.y_val)[0])
    assert got.history == tuple(history)


def test_loss_changes_training_and_full_loss_stops_it() -> None:
    spec = mltol.MODEL_SPECS["mf"]
    prob = spec.build()
    a = mltol.train(prob, spec, p=0.0, policy="zero_fill", seed=1, max_epochs=2, stop_at_target=False)
    b = mltol.train(prob, spec, p=0.3, policy="zero_fill", seed=1, max_epochs=2, stop_at_target=False)
    c = mltol.train(prob, spec, p=1.0, policy="rescale", seed=1, max_epochs=2, stop_at_target=False)
    assert a.history != b.history
    assert c.history[0] == c.history[1]  # nothing arrives: the model never moves
    assert c.epochs is None


def _tiny(**kw: object) -> mltol.ToleranceConfig:
    return dataclasses.replace(mltol.ToleranceConfig.quick(), models=("mlp", "mf"), **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def quick_runs() -> pd.DataFrame:
    return mltol.tolerance(_tiny())


def test_quick_run_finds_bounds(quick_runs: pd.DataFrame) -> None:
    assert len(quick_runs) == 2 * 2 * 1 * 6
    assert set(quick_runs.columns) >= {"model", "policy", "seed", "p", "converged", "epochs", "val_loss"}
    s = mltol.summarize(quick_runs)
    assert len(s) == 4
    assert s["num_seeds_no_baseline"].sum() == 0  # every lossless run converges
    assert (s["x1_mean"] <= s["x2_mean"]).all()
    zf = s[s["policy"] == "zero_fill"]
    assert (zf["x2_mean"] < 1.0).any()
    # not only p = 1 (nothing arrives) fails: some model stops converging at a p < 1
    assert (zf["x2_mean"] < 0.8).any()
    assert (s["x2_mean"] > 0.0).any()  # some loss is tolerated at all
    assert "0.15" in mltol.render(s)  # the paper's Table 3 alongside


def test_same_seed_same_table(quick_runs: pd.DataFrame) -> None:
    again = mltol.tolerance(_tiny())
    pd.testing.assert_frame_equal(quick_runs, again)
    other = mltol.tolerance(dataclasses.replace(_tiny(seeds=(2,)), models=("mlp",), policies=("zero_fill",)))
    mine = quick_runs[(quick_runs["model"] == "mlp") & (quick_runs["policy"] == "zero_fill")]
    assert not np.array_equal(mine["val_loss"].to_numpy(), other["val_loss"].to_numpy())


def test_x1_x2_definitions() -> None:
    def runs(eps: list[int | None]) -> pd.DataFrame:
        ps = [round(0.1 * i, 10) for i in range(len(eps))]
        return pd.DataFrame({"model": "m", "policy": "zero_fill", "seed": 1, "p": ps,
                             "converged": [e is not None for e in eps],
                             "epochs": pd.array(eps, dtype="Int64")})

    s = mltol.summarize(runs([10, 11, 12, 11, 20, None, 15]))  # allowed: 10 + 1
    assert (s["x1_mean"][0], s["x2_mean"][0]) == (0.1, 0.4)
    s = mltol.summarize(runs([None, 3, 3]))
    assert np.isnan(s["x1_mean"][0]) and s["num_seeds_no_baseline"][0] == 1


def test_p_grid() -> None:
    g = mltol.p_grid(0.05)
    assert len(g) == 21 and g[0] == 0.0 and g[-1] == 1.0 and 0.15 in g
    assert mltol.p_grid(0.3) == [0.0, 0.3, 0.6, 0.9]
    with pytest.raises(ValueError):
        mltol.p_grid(0.0)


def test_cli_quick_writes_csvs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tol"
    # Names are case-insensitive on the command line.
    rc = main(["ml", "tolerance", "--quick", "--models", "MLP", "--policy", "Zero_Fill", "--p-step", "0.5",
               "--out", str(out)])
    assert rc == 0
    assert "paper x1" in capsys.readouterr().out
    runs = pd.read_csv(out / "runs.csv")
    assert list(runs["p"]) == [0.0, 0.5, 1.0]
    assert len(pd.read_csv(out / "summary.csv")) == 1
    assert not list(out.glob(".*tmp*"))  # written atomically, no leftovers


@pytest.mark.parametrize("argv, needle", [
    (["--models", "mlp,bogus"], "--models = bogus"),
    (["--models", ","], "--models"),
    (["--models", "mlp,mlp"], "twice"),
    (["--models", "mlp,MLP"], "twice"),
    (["--policy", "drop"], "--policy = drop"),
    (["--p-step", "0"], "--p-step = 0.0"),
    (["--p-step", "1.5"], "--p-step = 1.5"),
    (["--p-step", "x"], "--p-step"),
    (["--p-step", "1e-12"], "--p-step = 1e-12: gives 1000000000001 values of p from 0 to 1, more than 1001"),
    (["--seeds", "1,1"], "--seeds"),
    (["--max-epochs", "0"], "--max-epochs = 0"),
    (["--max-epochs", "5000"], "--max-epochs = 5000"),
])
def test_cli_bad_arguments_exit_2_with_one_line(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Refused before the grid is listed (10^12 points for --p-step 1e-12: MemoryError).
    monkeypatch.setattr(mltol, "p_grid", lambda step: pytest.fail("the grid was built"))
    assert main(["ml", "tolerance", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert needle in err[-1]


def test_missing_extra_message(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import builtins

    real = builtins.__import__

    def no_autograd(name: str, *a: object, **k: object) -> object:
        if name.startswith("autograd"):
            raise ImportError(name)
        return real(name, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_autograd)
    with pytest.raises(mltol.MissingExtraError, match=r"slacknet\[ml\]"):
        mltol.MODEL_SPECS["rnn"].build()
    assert main(["ml", "tolerance", "--quick", "--models", "mlp,rnn"]) == 2
    err = capsys.readouterr().err
    assert "--models = rnn" in err and "slacknet[ml]" in err
    # Without --models the default list is what holds the model: the message says so, and
    # names the list that would run.
    assert main(["ml", "tolerance", "--quick"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--models (default mlp,cnn,rnn,mf) includes cnn" in err[0], err
    assert "slacknet[ml]" in err[0] and err[0].endswith("--models mlp,mf"), err


@pytest.mark.skipif(not HAS_AUTOGRAD, reason="needs the ml extra (autograd)")
@pytest.mark.parametrize("name", ["cnn", "rnn"])
def test_autograd_models_give_each_worker_its_own_gradient(name: str) -> None:
    prob = mltol.MODEL_SPECS[name].build()
    theta = prob.init(np.random.default_rng(1))
    xs, ys = prob.x_train[:8].reshape(2, 4, -1), prob.y_train[:8].reshape(2, 4)
    g = prob.worker_grads(theta, xs, ys)
    assert g.shape == (2, theta.size)
    # finite differences of worker 1's loss on a few coordinates
    rng = np.random.default_rng(2)
    eps = 1e-6
    for i in rng.choice(theta.size, 8, replace=False):
        tp, tm = theta.copy(), theta.copy()
        tp[i] += eps
        tm[i] -= eps
        fd = (prob.evaluate(tp, xs[1], ys[1])[0] - prob.evaluate(tm, xs[1], ys[1])[0]) / (2 * eps)
        assert fd == pytest.approx(g[1, i], rel=1e-4, abs=1e-7)


def test_profile_measures_size_and_compute() -> None:
    prof = mltol.profile(("mlp", "mf"), repeats=3)
    assert list(prof["model"]) == ["mlp", "mf"]
    # Sizes are exact: 64-32-10 with biases; MF (200 + 150) x rank 8; float32 gradients.
    assert list(prof["params"]) == [64 * 32 + 32 + 32 * 10 + 10, (200 + 150) * 8]
    assert (prof["gradient_bytes"] == 4 * prof["params"]).all()
    assert (prof["compute_us"] > 0).all()
    line = prof["gradient_bytes"] * 8 / 40e9 * 1e6
    assert np.allclose(prof["line_us"], line, rtol=1e-3)
    assert np.allclose(prof["ratio"], prof["compute_us"] / line, rtol=1e-2)
    with pytest.raises(ValueError, match="repeats"):
        mltol.profile(("mlp",), repeats=0)


def _summary(**x1: float) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "policy": "zero_fill", "x1_min": v, "x1_mean": v + 0.05} for m, v in x1.items()])


def test_figure4_points_scale_every_model_by_the_cnns_factor() -> None:
    prof = pd.DataFrame({"model": ["cnn", "mlp"], "params": [1000, 3000], "gradient_bytes": [4000, 12000],
                         "ratio": [100.0, 10.0]})
    pts = mltol.figure4_points(mltol.with_tolerance(prof, _summary(cnn=0.15, mlp=0.1))).set_index("model")
    scale = mltol.RESNET20_PARAMS / 1000
    assert pts.loc["cnn", "model_bytes"] == round(4000 * scale) and pts.loc["mlp", "model_bytes"] == round(12000 * scale)
    # The ratio is kept: compute = ratio x the scaled gradient's time at 40 Gb/s.
    assert pts.loc["cnn", "job_compute_us"] == pytest.approx(100 * 4000 * scale * 8 / 40e9 * 1e6, abs=0.1)
    assert pts.loc["mlp", "job_compute_us"] == pytest.approx(10 * 12000 * scale * 8 / 40e9 * 1e6, abs=0.1)
    assert pts.loc["cnn", "complete_fraction"] == 0.85 and pts.loc["mlp", "complete_fraction"] == 0.9
    with pytest.raises(ValueError, match="no zero_fill row for mlp"):
        mltol.with_tolerance(prof, _summary(cnn=0.15))
    with pytest.raises(ValueError, match="cnn row"):
        mltol.figure4_points(mltol.with_tolerance(prof[prof["model"] == "mlp"], _summary(mlp=0.1)))


def test_the_committed_figure4_points_come_from_the_committed_measurements() -> None:
    # experiments/mlt/fig4_models.toml's model axis is figure4_points(models.csv), and
    # models.csv's x1 agree with the tolerance table in the README (min over seeds, zero-fill).
    import tomllib

    from .conftest import REPO

    folder = REPO / "experiments" / "mlt"
    models = pd.read_csv(folder / "models.csv")
    pts = mltol.figure4_points(models).set_index("model")
    sweep = tomllib.loads((folder / "fig4_models.toml").read_text())
    axis = next(a for a in sweep["axis"] if a.get("name") == "model")
    for label, value in zip(axis["labels"], axis["values"]):
        row = pts.loc[label.lower()]
        assert value["workload[0].model_bytes"] == row["model_bytes"], label
        assert value["workload[0].job_compute_us"] == pytest.approx(row["job_compute_us"]), label
        assert value["workload[0].complete_fraction"] == pytest.approx(row["complete_fraction"]), label
    assert dict(zip(models["model"], models["x1_min"])) == {"mlp": 0.1, "cnn": 0.15, "rnn": 0.25, "mf": 0.2}


@pytest.mark.parametrize("argv, needle", [
    (["--models", "bogus"], "--models = bogus"),
    (["--repeats", "0"], "--repeats = 0"),
    (["--tolerance", "/nonexistent/summary.csv"], "--tolerance = /nonexistent/summary.csv"),
])
def test_cli_profile_bad_arguments_exit_2(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ml", "profile", "--models", "mlp", *argv]) == 2
    assert needle in capsys.readouterr().err.strip().splitlines()[-1]


def test_cli_profile_with_tolerance_writes_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = tmp_path / "summary.csv"
    _summary(mlp=0.1, mf=0.2).to_csv(summary, index=False)
    out = tmp_path / "models.csv"
    assert main(["ml", "profile", "--models", "mlp,mf", "--repeats", "2", "--tolerance", str(summary),
                 "--out", str(out)]) == 0
    t = pd.read_csv(out)
    assert list(t["model"]) == ["mlp", "mf"] and list(t["x1_min"]) == [0.1, 0.2]
    text = capsys.readouterr().out
    # Without cnn there are no Figure 4 points, and it says why (it said nothing).
    assert "ratio" in text and "Figure 4's points are not printed" in text and "add cnn to --models" in text
