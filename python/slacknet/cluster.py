"""Sweeps on a cluster: the runs of :func:`~slacknet.sweep.run_sweep` on Dask or Ray workers.

One simulation runs on one core; a sweep's runs are independent, so they fan out: over this
machine's cores by default, or over a cluster that is already running (DESIGN.md, "Scaling
out")::

    slacknet sweep study.toml --cluster tcp://head:8786     # a Dask scheduler
    slacknet sweep study.toml --cluster ray://head:10001    # a Ray cluster (``ray``: the local one)

or, from Python, ``run_sweep(sweep, out, cluster="tcp://head:8786")``, ``cluster=client`` (a
``distributed.Client`` you opened) or ``cluster=executor`` (any
:class:`concurrent.futures.Executor`).

What a user can count on:

- **Nothing to share but slacknet.** A worker receives the resolved scenario (JSON) and sends
  back the run's :class:`~slacknet.Results`; this process saves each into the sweep's folder,
  atomically, as it arrives, and resumes, tabulates and fails runs exactly as a local sweep
  does. Files a scenario names (a flow list, a CDF, a Credence model) are read by the worker at
  the path the sweep resolved, so they must be at that path on every node (a shared
  filesystem); a worker that cannot read one fails that run with the path in its error.
- **One version.** Every worker must run this slacknet version: a Dask cluster is asked
  before anything runs (a worker without slacknet, or with another version, is one error
  naming it), and every run checks again where it runs (Ray, or workers that joined later),
  failing that run with both versions named. Results of two versions never mix in one table.
- **As many runs at once as the cluster has cores** (``jobs`` caps it): the Dask workers'
  threads, or Ray's ``CPU`` resources, counted when the sweep starts. A Dask worker may run
  several simulations in threads (the simulator releases the interpreter).
- **Failures are rows.** A run that raises is a ``failed`` row whose error names the host it ran
  on; a run whose worker dies is retried by the cluster (Dask: on up to three workers, then
  ``KilledWorker``; Ray: not retried) and then failed. Ctrl-C or SIGTERM cancels the runs not
  started and closes the connection; the runs already running on a Dask worker finish there
  and are discarded (Dask cannot stop a running task), Ray's are killed.

Dask comes with ``pip install 'slacknet[cluster]'`` (``distributed``), Ray with
``pip install 'slacknet[ray]'``; install the same on every node.
"""

from __future__ import annotations

import os
import socket
import warnings
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from . import _native

__all__ = ["ClusterError", "RunFailed", "Cluster", "connect"]

#: How long to wait for a Dask scheduler to answer and for its first worker, in seconds.
CONNECT_TIMEOUT_S = 15.0


class ClusterError(ValueError):
    """The cluster named cannot run the sweep: no scheduler answers at the address, it has no
    workers, a worker lacks slacknet or runs another version, or the library for it is not
    installed. The message is one line, ``cluster = <value>: <message>``, naming the address
    and the fix. Raised before any run."""

    def __init__(self, value: str, message: str) -> None:
        self.value = value
        """The cluster as given (an address, or the repr of an object)."""
        self.message = message
        """What is wrong and how to fix it."""
        super().__init__(f"cluster = {value}: {message}")


class RunFailed(RuntimeError):
    """A run failed on a worker; the message names the error and the host (a sweep row's
    ``error``)."""


@dataclass
class Cluster:
    """An open connection to a cluster: ``executor`` runs the sweep's runs, ``cores`` is how
    many it runs at once by default, ``cancel`` stops submitted runs on an interrupt."""

    executor: Executor
    cores: int
    cancel: Callable[[list[Future[Any]]], None]


def _first_line(e: BaseException) -> str:
    """The first line of ``e``'s message (a sweep row's error), or ``no message``."""
    text = str(e).strip()
    return text.splitlines()[0] if text else "no message"


def worker_info() -> tuple[str, str, str, str]:
    """(host, slacknet version, native extension version, engine digest) of the process that
    calls it (run on each worker before a sweep; the digest is ``_native.engine_sha256()``)."""
    from . import __version__

    return socket.gethostname(), __version__, _native.version(), _native.engine_sha256()


def run_remote(scenario_json: str, version: str, engine: str) -> tuple[Any, dict[str, float]]:
    """One run on a worker: ``(Results, metrics)``. Raises :class:`RunFailed`, naming this host,
    if this worker's slacknet is not ``version``, its engine not built from the sources of
    ``engine`` (a ``_native.engine_sha256()``), or the run fails."""
    from . import __version__
    from .sim import run
    from .sweep import run_metrics

    host = socket.gethostname()
    if __version__ != version:
        raise RunFailed(f"the worker on {host} runs slacknet {__version__}, this sweep {version}: install the "
                        "same version on every worker")
    if _native.engine_sha256() != engine:
        raise RunFailed(f"the worker on {host} runs an engine built from other sources (engine "
                        f"{_native.engine_sha256()[:12]}, this sweep {engine[:12]}): install the same build on "
                        "every worker")
    try:
        # Paths in the resolved scenario are absolute (the sweep resolved them where it was read).
        res = run(_native.validate_json(scenario_json, str(Path.cwd())))
        return res, run_metrics(res)
    except Exception as e:  # noqa: BLE001 - any failure of the run is the row's error, named here
        raise RunFailed(f"{type(e).__name__} on {host}: {_first_line(e)}") from None


def _is_ray(address: str) -> bool:
    return address == "ray" or address.startswith("ray://")


@contextmanager
def connect(cluster: Any) -> Iterator[Cluster]:
    """Open ``cluster`` for a sweep and close what was opened here when done: a Dask scheduler
    address (``tcp://host:8786``; any address ``distributed.Client`` takes), ``"ray"`` (the Ray
    cluster this machine belongs to) or ``"ray://host:10001"``, a ``distributed.Client``, any
    :class:`concurrent.futures.Executor`, or a :class:`Cluster` opened before (several sweeps on
    one connection: ``slacknet reproduce --cluster``). Raises :class:`ClusterError` (see there)."""
    if isinstance(cluster, Cluster):  # opened by the caller, who closes it
        yield cluster
        return
    if isinstance(cluster, Executor):
        cores = getattr(cluster, "_max_workers", None)  # a ThreadPool's or ProcessPool's size
        cores = cores if isinstance(cores, int) and cores > 0 else (os.cpu_count() or 1)
        yield Cluster(cluster, cores, _cancel_futures)
        return
    if isinstance(cluster, str):
        if not cluster.strip():
            raise ClusterError(repr(cluster), "name a Dask scheduler (tcp://host:8786) or a Ray cluster (ray, "
                               "ray://host:10001)")
        if _is_ray(cluster):
            with _ray(cluster) as c:
                yield c
        else:
            with _dask_address(cluster) as c:
                yield c
        return
    if type(cluster).__name__ == "Client" and type(cluster).__module__.startswith("distributed"):
        yield _dask_cluster(cluster, str(getattr(cluster.scheduler, "address", None) or repr(cluster)))
        return
    raise ClusterError(repr(cluster), "not a cluster; give a Dask scheduler address (tcp://host:8786), "
                       "'ray' or 'ray://host:10001', a distributed.Client or a concurrent.futures.Executor")


def _cancel_futures(futures: list[Future[Any]]) -> None:
    for f in futures:
        f.cancel()


# -- Dask --


@contextmanager
def _dask_address(address: str) -> Iterator[Cluster]:
    try:
        from distributed import Client
    except ImportError:
        raise ClusterError(address, "dask.distributed is not installed here; pip install "
                           "'slacknet[cluster]' (on every node)") from None
    _check_dask_address(address)
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as e:
        raise ClusterError(address, f"no Dask scheduler answered there within {CONNECT_TIMEOUT_S:g} s "
                           f"({type(e).__name__}: {_first_line(e)}); start one (`dask scheduler`, then `dask worker "
                           "ADDRESS` on each node) or fix the address") from None
    try:
        yield _dask_cluster(client, address)
    finally:
        client.close()


def _check_dask_address(address: str) -> None:
    """ClusterError for an address Dask cannot parse (checked first: a ``Client`` that fails on
    one leaves an error of its own on stderr at exit)."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(address)
        get_backend(scheme)
        if scheme in ("tcp", "tls", "ws", "wss"):
            _, port = parse_host_port(location)
            if not 0 < port < 65536:
                raise ValueError(f"port {port} is not in 1-65535")
    except (ValueError, TypeError) as e:
        raise ClusterError(address, f"not a Dask scheduler address ({_first_line(e)}); give it as "
                           "tcp://host:8786 (or ray, ray://host:10001 for Ray)") from None


def _dask_cluster(client: Any, name: str) -> Cluster:
    """Check every worker of ``client`` (slacknet importable, this version) and wrap it."""
    from . import __version__

    try:
        client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as e:
        raise ClusterError(name, "the scheduler has no workers (none joined within "
                           f"{CONNECT_TIMEOUT_S:g} s: {type(e).__name__}); start some (`dask worker ADDRESS`)") from None
    try:
        infos = client.run(worker_info)
    except Exception as e:  # noqa: BLE001 - a worker that cannot import slacknet raises what it raises
        raise ClusterError(name, f"a worker could not report its slacknet ({type(e).__name__}: "
                           f"{_first_line(e)}); install slacknet {__version__} on every worker") from None
    check_workers(name, {str(w): tuple(i) for w, i in infos.items()},
                  (__version__, _native.version(), _native.engine_sha256()))
    cores = sum(int(n) for n in client.nthreads().values())
    executor = client.get_executor(pure=False)
    return Cluster(executor, max(1, cores), _cancel_futures)


def check_workers(name: str, infos: dict[str, tuple[str, ...]], want: tuple[str, str, str]) -> None:
    """Raise :class:`ClusterError` naming the first worker whose (slacknet, native, engine) in
    ``infos`` (worker -> (host, slacknet, native, engine), as :func:`worker_info` gives) are not
    ``want``: another version, or the same version built from other sources (a developer's
    build), whose results may differ."""
    for worker, (host, version, native, engine) in sorted(infos.items()):
        if (version, native) != want[:2]:
            raise ClusterError(name, f"worker {worker} (on {host}) runs slacknet {version} (native "
                               f"{native}), this sweep {want[0]} (native {want[1]}): install the same version on "
                               "every worker")
        if engine != want[2]:
            raise ClusterError(name, f"worker {worker} (on {host}) runs slacknet {version} built from other "
                               f"sources (engine {engine[:12]}, this sweep {want[2][:12]}): install the same "
                               "build on every worker")


# -- Ray --


@contextmanager
def _ray(address: str) -> Iterator[Cluster]:
    try:
        import ray
    except ImportError:
        raise ClusterError(address, "Ray is not installed here; pip install 'slacknet[ray]' (on every "
                           "node)") from None
    started = not ray.is_initialized()
    if started:
        try:
            with warnings.catch_warnings():  # Ray Client warns of its timeout before raising it
                warnings.simplefilter("ignore")
                ray.init(address="auto" if address == "ray" else address, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError, OSError) as e:
            raise ClusterError(address, f"no Ray cluster answered ({type(e).__name__}: "
                               f"{_first_line(e)}); start one (`ray start --head`) or fix the address"
                               f"{_ray_auth_hint(address)}") from None
    try:
        cores = int(ray.cluster_resources().get("CPU", 1))
        executor = _RayExecutor(ray)
        yield Cluster(executor, max(1, cores), executor.cancel)
    finally:
        if started:
            ray.shutdown()


def _ray_auth_hint(address: str) -> str:
    """What to add to a failed Ray Client connection: a cluster that requires token
    authentication (Ray 2.59 and later turn it on for `ray start`) lets a client without its
    token time out, as an unreachable one does. (The token as the string RAY_AUTH_TOKEN, which
    Ray also reads, connected but never started the client's session with Ray 2.60 here; from
    a file it did.)"""
    if not address.startswith("ray://") or os.environ.get("RAY_AUTH_MODE") == "token":
        return ""
    return ("; if the cluster requires token authentication (Ray 2.59 and later turn it on for `ray start`), "
            "set RAY_AUTH_MODE=token here, with the cluster's token in ~/.ray/auth_token or the file "
            "RAY_AUTH_TOKEN_PATH names")


class _RayExecutor(Executor):
    """``submit`` as a Ray task (one CPU, not retried); its result as a concurrent future."""

    def __init__(self, ray: Any) -> None:
        self._ray = ray
        self._task = ray.remote(num_cpus=1, max_retries=0)(run_remote)
        self._refs: dict[Future[Any], Any] = {}

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if fn is not run_remote or kwargs:
            raise TypeError("this executor runs slacknet's sweep runs only")
        ref = self._task.remote(*args)
        fut: Future[Any] = ref.future()
        self._refs[fut] = ref
        fut.add_done_callback(lambda f: self._refs.pop(f, None))
        return fut

    def cancel(self, futures: list[Future[Any]]) -> None:
        for f in futures:
            ref = self._refs.pop(f, None)
            if ref is not None:
                self._ray.cancel(ref, force=True)
