"""Sweeps on a cluster (slacknet.cluster): Dask and Ray workers give the same rows and results
as local worker processes; failures are rows naming the host; a cluster that cannot run the
sweep is one error before anything is written."""

from __future__ import annotations

import socket
import subprocess
import sys
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pandas as pd
import pytest

import slacknet
import slacknet.cluster
import slacknet.sim
from slacknet.cli import main
from slacknet.cluster import ClusterError, RunFailed, check_workers, connect, run_remote
from slacknet.results import Results, read_manifest
from slacknet.sweep import METRIC_COLUMNS, expand, load_sweep, run_sweep

from .test_sweep import BASE, SWEEP, sweep_file  # noqa: F401 - a fixture

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (the test extra has it)")


@pytest.fixture(scope="module")
def dask_address() -> Iterator[str]:
    """A scheduler and two worker processes of one thread each on this machine, as a cluster
    of other machines would be reached: by address."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as lc:
        yield lc.scheduler_address


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """The same sweep run by local worker processes, the reference."""
    d = tmp_path_factory.mktemp("local")
    (d / "base.toml").write_text(BASE)
    (d / "sweep.toml").write_text(SWEEP)
    out = d / "out"
    return out, run_sweep(load_sweep(d / "sweep.toml"), out, jobs=2)


def _same_rows(a: pd.DataFrame, b: pd.DataFrame) -> None:
    cols = [c for c in a.columns if c not in ("wall_s",)]
    pd.testing.assert_frame_equal(a[cols], b[cols])


def test_dask_cluster_gives_the_local_rows_and_results(sweep_file: Path, local_sweep: tuple[Path, pd.DataFrame],
                                                      dask_address: str) -> None:
    # (local_sweep first: its worker processes are forked before the cluster's threads exist)
    out = sweep_file.parent / "out"
    table = run_sweep(load_sweep(sweep_file), out, cluster=dask_address)
    assert list(table["status"]) == ["ok"] * 8 and not table["reused"].any()
    local_out, local = local_sweep
    _same_rows(table, local)
    assert (table["wall_s"] > 0).all()
    for r in expand(load_sweep(sweep_file)):
        mine, ref = Results.load(out / r.variant), Results.load(local_out / r.variant)
        pd.testing.assert_frame_equal(mine.records, ref.records)
        m = read_manifest(out / r.variant)
        assert (m.seed, m.slacknet_version) == (r.seed, slacknet.__version__)
    # The table on disk is the one returned.
    disk = pd.read_csv(out / "sweep.csv")
    assert list(disk["variant"]) == list(table["variant"]) and list(disk["status"]) == ["ok"] * 8
    pd.testing.assert_series_equal(disk["short_p95"], table["short_p95"])


def test_dask_cluster_resumes_what_ran_before(sweep_file: Path, dask_address: str) -> None:
    out = sweep_file.parent / "out"
    with ThreadPoolExecutor(2) as ex:  # not forked worker processes: this process runs the cluster's threads
        first = run_sweep(load_sweep(sweep_file), out, cluster=ex)
    gone = ["DT__load=0.6__seed=2", "LQD__load=0.2__seed=1"]
    for v in gone:
        for f in (out / v).iterdir():
            f.unlink()
        (out / v).rmdir()
    again = run_sweep(load_sweep(sweep_file), out, cluster=dask_address)
    assert sorted(again.loc[~again["reused"], "variant"]) == sorted(gone)
    assert list(again["status"]) == ["ok"] * 8
    _same_rows(again.drop(columns="reused"), first.drop(columns="reused"))


def test_cli_sweep_on_a_dask_cluster(sweep_file: Path, dask_address: str) -> None:
    out = sweep_file.parent / "cli"
    p = subprocess.run([sys.executable, "-m", "slacknet.cli", "sweep", str(sweep_file), "--out", str(out),
                        "--cluster", dask_address, "--jobs", "3"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("  done ") == 8
    assert "LQD" in p.stdout and f"results: {out}" in p.stdout
    assert list(pd.read_csv(out / "sweep.csv")["status"]) == ["ok"] * 8


def test_a_client_object_and_its_worker_check(sweep_file: Path, dask_address: str) -> None:
    with distributed.Client(dask_address, set_as_default=False) as client:
        infos = client.run(slacknet.cluster.worker_info)
        assert len(infos) == 2
        for info in infos.values():
            assert tuple(info) == (socket.gethostname(), slacknet.__version__, slacknet._native.version(),
                                   slacknet._native.engine_sha256())
        table = run_sweep(load_sweep(sweep_file), sweep_file.parent / "out", cluster=client, jobs=1)
        assert list(table["status"]) == ["ok"] * 8
        assert client.status == "running"  # a client the caller opened stays open


def test_another_version_on_a_worker_is_refused_by_name(sweep_file: Path) -> None:
    engine = slacknet._native.engine_sha256()
    want = (slacknet.__version__, slacknet._native.version(), engine)
    check_workers("tcp://x:1", {"tcp://10.0.0.2:40001": ("n2", *want)}, want)
    with pytest.raises(ClusterError) as e:
        check_workers("tcp://x:1", {"tcp://10.0.0.2:40001": ("n2", *want),
                                    "tcp://10.0.0.3:40001": ("n3", "0.0.1", want[1], engine)}, want)
    assert str(e.value) == (f"cluster = tcp://x:1: worker tcp://10.0.0.3:40001 (on n3) runs slacknet 0.0.1 (native "
                            f"{want[1]}), this sweep {want[0]} (native {want[1]}): install the same version on "
                            "every worker")
    # The same version built from other sources (a developer's tree) may give other results.
    with pytest.raises(ClusterError) as e:
        check_workers("tcp://x:1", {"tcp://10.0.0.3:40001": ("n3", *want[:2], "ab" * 32)}, want)
    assert str(e.value) == (f"cluster = tcp://x:1: worker tcp://10.0.0.3:40001 (on n3) runs slacknet {want[0]} built "
                            f"from other sources (engine {'ab' * 6}, this sweep {engine[:12]}): install the same "
                            "build on every worker")
    # And a worker that joins later: its run checks again, where it runs.
    run = expand(load_sweep(sweep_file))[0]
    with pytest.raises(RunFailed, match=rf"^the worker on {socket.gethostname()} runs slacknet "
                       rf"{slacknet.__version__}, this sweep 9\.9\.9: install the same version on every worker$"):
        run_remote(run.scenario_json, "9.9.9", engine)
    with pytest.raises(RunFailed, match=rf"^the worker on {socket.gethostname()} runs an engine built from other "
                       rf"sources \(engine {engine[:12]}, this sweep {'ab' * 6}\): install the same build on every worker$"):
        run_remote(run.scenario_json, slacknet.__version__, "ab" * 32)


def test_a_failed_run_is_a_row_naming_its_host(sweep_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = slacknet.sim.run

    def flaky(valid: Any, **kw: Any) -> Any:
        if '"lqd"' in valid.to_json():
            raise slacknet.SimError("switch 3: the model ran out of patience")
        return real(valid, **kw)

    monkeypatch.setattr(slacknet.sim, "run", flaky)
    out = sweep_file.parent / "out"
    with ThreadPoolExecutor(2) as ex:  # any concurrent.futures executor is a cluster
        table = run_sweep(load_sweep(sweep_file), out, cluster=ex)
    lqd = table["variant"].str.startswith("LQD")
    assert list(table.loc[~lqd, "status"]) == ["ok"] * 4 and list(table.loc[lqd, "status"]) == ["failed"] * 4
    host = socket.gethostname()
    assert set(table.loc[lqd, "error"]) == {f"SimError on {host}: switch 3: the model ran out of patience"}
    assert table.loc[lqd, list(METRIC_COLUMNS)].isna().all().all()
    assert not any((out / v).exists() for v in table.loc[lqd, "variant"])


class _DyingExecutor(ThreadPoolExecutor):
    """Every run's worker dies (as the cluster reports it)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        f: Future[Any] = Future()
        f.set_exception(RuntimeError("Attempted to run task on 3 different workers, but all those workers died\n..."))
        return f


def test_a_run_whose_worker_died_is_failed_with_the_clusters_reason(sweep_file: Path) -> None:
    with _DyingExecutor(1) as ex:
        table = run_sweep(load_sweep(sweep_file), sweep_file.parent / "out", cluster=ex)
    assert set(table["status"]) == {"failed"}
    assert set(table["error"]) == {"RuntimeError: Attempted to run task on 3 different workers, but all those "
                                   "workers died"}


def test_no_scheduler_is_one_error_and_no_folder(sweep_file: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(slacknet.cluster, "CONNECT_TIMEOUT_S", 0.5)
    monkeypatch.chdir(sweep_file.parent)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for out in (["--out", "given"], []):
        assert main(["sweep", str(sweep_file), "--cluster", f"tcp://127.0.0.1:{port}", *out]) == 2
        err = capsys.readouterr().err.splitlines()
        assert err[-1].startswith(f"error: --cluster = tcp://127.0.0.1:{port}: no Dask scheduler answered there "
                                  "within 0.5 s (")
        assert err[-1].endswith("start one (`dask scheduler`, then `dask worker ADDRESS` on each node) or fix the "
                                "address")
        assert not (sweep_file.parent / "given").exists()
        assert not list((sweep_file.parent / "results").glob("*/*"))


def test_what_is_not_a_cluster_is_refused(sweep_file: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ClusterError, match=r"^cluster = 42: not a cluster; give a Dask scheduler address"):
        run_sweep(load_sweep(sweep_file), sweep_file.parent / "out", cluster=42)
    assert not (sweep_file.parent / "out").exists()
    monkeypatch.chdir(sweep_file.parent)
    assert main(["sweep", str(sweep_file), "--out", "o", "--cluster", " "]) == 2
    assert not (sweep_file.parent / "o").exists()
    assert capsys.readouterr().err.endswith("error: --cluster = ' ': name a Dask scheduler (tcp://host:8786) or a Ray "
                                            "cluster (ray, ray://host:10001)\n")
    for address, why in [("garbage", "missing port number in address 'garbage'"),
                         ("tcp://head:99999", "port 99999 is not in 1-65535"),
                         ("foo://head:1", "unknown address scheme 'foo' (known schemes: ")]:
        with pytest.raises(ClusterError) as e:
            with connect(address):
                pass
        assert str(e.value).startswith(f"cluster = {address}: not a Dask scheduler address ({why}")
        assert str(e.value).endswith("); give it as tcp://host:8786 (or ray, ray://host:10001 for Ray)")
    assert main(["sweep", str(sweep_file), "--out", "o", "--cluster", "head"]) == 2
    assert capsys.readouterr().err.endswith("error: --cluster = head: not a Dask scheduler address (missing port "
                                            "number in address 'head'); give it as tcp://host:8786 (or ray, "
                                            "ray://host:10001 for Ray)\n")
    assert not (sweep_file.parent / "o").exists()
    # Without the library for it: the extra to install.
    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ClusterError, match=r"^cluster = ray://head:10001: Ray is not installed here; pip install "
                       r"'slacknet\[ray\]' \(on every node\)$"):
        with connect("ray://head:10001"):
            pass
    with pytest.raises(ClusterError, match=r"^cluster = tcp://head:8786: dask.distributed is not installed here; "
                       r"pip install 'slacknet\[cluster\]' \(on every node\)$"):
        with connect("tcp://head:8786"):
            pass


def test_a_ray_cluster_gives_the_local_rows(sweep_file: Path, local_sweep: tuple[Path, pd.DataFrame]) -> None:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'slacknet[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        table = run_sweep(load_sweep(sweep_file), sweep_file.parent / "out", cluster="ray")
    finally:
        ray.shutdown()
    _same_rows(table, local_sweep[1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_ray_client_connection_gives_the_local_rows(sweep_file: Path, local_sweep: tuple[Path, pd.DataFrame],
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--cluster ray://host:port` through Ray Client to a cluster started by `ray start` with
    token authentication (Ray's default for `ray start` since 2.59): with RAY_AUTH_MODE=token
    and the token's file where the sweep runs, the same rows as local workers."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'slacknet[ray]')")
    ray_cli = Path(sys.executable).parent / "ray"
    port, client_port = _free_port(), _free_port()
    # In a process of their own: Ray reads the mode once, at its first use in a process.
    (tmp_path / "token").write_text("slacknet-test-" + "ab" * 16)
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "token"))
    subprocess.run([str(ray_cli), "start", "--head", f"--port={port}", f"--ray-client-server-port={client_port}",
                    "--num-cpus=2", "--include-dashboard=false"], check=True, capture_output=True, timeout=180)
    try:
        out = tmp_path / "out"
        for _ in range(3):
            p = subprocess.run([sys.executable, "-m", "slacknet.cli", "sweep", str(sweep_file), "--out", str(out),
                                "--cluster", f"ray://127.0.0.1:{client_port}"], capture_output=True, text=True,
                               timeout=300)
            # Ray 2.60's client proxy now and then fails to start a client's own server (its log:
            # "SpecificServer startup failed", the child's gRPC poller on a bad descriptor), seen
            # in about 1 of 4 runs right after the test above shut its local cluster down; the
            # sweep refuses before making its folder, so the same command runs again.
            if "Initialization failure from server" not in p.stderr:
                break
    finally:
        subprocess.run([str(ray_cli), "stop", "--force"], capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    _same_rows(pd.read_csv(out / "sweep.csv"), pd.read_csv(local_sweep[0] / "sweep.csv"))


def test_a_failed_ray_client_connection_names_token_authentication(monkeypatch: pytest.MonkeyPatch) -> None:
    # A client without the cluster's token times out as for an unreachable address (Ray 2.60),
    # and Ray warned of it on stderr before raising: one error, naming the likely fix.
    class FakeRay:
        @staticmethod
        def is_initialized() -> bool:
            return False

        @staticmethod
        def init(**kw: Any) -> None:
            warnings.warn("Ray Client connection timed out.", UserWarning, stacklevel=1)
            raise ConnectionError("ray client connection timeout")

    monkeypatch.setitem(sys.modules, "ray", FakeRay)
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Ray's warning must not escape
        with pytest.raises(ClusterError) as e:
            with connect("ray://head:10001"):
                pass
    assert str(e.value) == ("cluster = ray://head:10001: no Ray cluster answered (ConnectionError: ray client "
                            "connection timeout); start one (`ray start --head`) or fix the address; if the cluster "
                            "requires token authentication (Ray 2.59 and later turn it on for `ray start`), set "
                            "RAY_AUTH_MODE=token here, with the cluster's token in ~/.ray/auth_token or the "
                            "file RAY_AUTH_TOKEN_PATH names")
    # With the mode set, or for the cluster this machine is on, the hint does not apply.
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    for address in ("ray://head:10001", "ray"):
        if address == "ray":
            monkeypatch.delenv("RAY_AUTH_MODE")
        with pytest.raises(ClusterError) as e:
            with connect(address):
                pass
        assert str(e.value).endswith("start one (`ray start --head`) or fix the address"), str(e.value)


def test_reproduce_on_a_dask_cluster(tmp_path: Path, dask_address: str, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from slacknet.reproduce import load_paper, reproduce

    from .test_reproduce_spec import SERIES_TOML, TINY_TOML, TOY, TOY_SWEEP

    exp = tmp_path / "experiments"
    (exp / "toy").mkdir(parents=True)
    for name, text in (("base.toml", TINY_TOML), ("sweep.toml", TOY_SWEEP), ("reproduce.toml", TOY),
                       ("series.toml", SERIES_TOML)):
        (exp / "toy" / name).write_text(text)
    assert main(["reproduce", "toy", "--experiments", str(exp), "--out", str(tmp_path / "c"),
                 "--cluster", dask_address]) == 0
    assert "[holds   ] Figure 1: LQD's incast p95 is within 100x DT's" in capsys.readouterr().out
    with ThreadPoolExecutor(2) as ex:  # the reference, in this process (no fork beside the cluster's threads)
        ref = reproduce(load_paper(exp, "toy"), tmp_path / "r", cluster=ex)
    _same_rows(pd.read_csv(tmp_path / "c" / "load.csv"), pd.read_csv(tmp_path / "r" / "load.csv"))
    assert len(ref.figures["load"]) == 4
    # A cluster that cannot run it: one error naming --cluster, before any folder.
    assert main(["reproduce", "toy", "--experiments", str(exp), "--out", str(tmp_path / "x"),
                 "--cluster", "head"]) == 2
    assert capsys.readouterr().err == ("error: --cluster = head: not a Dask scheduler address (missing port number "
                                       "in address 'head'); give it as tcp://host:8786 (or ray, ray://host:10001 "
                                       "for Ray)\n")
    assert not (tmp_path / "x").exists()
    # The coflow reproduction runs no sweep: the option is refused, as --jobs is.
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "coflow", "--cluster", dask_address]) == 2
    assert "--cluster: not used by the coflow reproduction" in capsys.readouterr().err


def test_bench_sweep_times_three_ways_and_checks_they_agree() -> None:
    """`make bench-sweep` on a tiny sweep: one local worker, one per core and a Dask cluster give
    the same table (the script exits 1 otherwise) and it prints the figures."""
    p = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "bench" / "sweep_scaling.py"),
                        "--runs", "2", "--ms", "2"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[-1] == "every table identical but wall_s: yes"
    assert any(line.startswith("local, 1 worker") for line in lines)
    assert any(line.startswith("Dask cluster, ") for line in lines)
    assert any(line.startswith("Dask: ") and "one run's results sent back:" in line for line in lines)


def test_a_finished_sweep_resumed_needs_no_cluster(sweep_file: Path) -> None:
    out = sweep_file.parent / "out"
    with ThreadPoolExecutor(2) as ex:
        first = run_sweep(load_sweep(sweep_file), out, cluster=ex)
    # Nothing is left to run: the (unreachable) cluster is not asked.
    again = run_sweep(load_sweep(sweep_file), out, cluster="tcp://127.0.0.1:9")
    assert again["reused"].all()
    _same_rows(again.drop(columns="reused"), first.drop(columns="reused"))
