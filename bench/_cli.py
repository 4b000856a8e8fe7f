"""What the bench scripts share on the command line: argument errors in one line with exit code
2, whole-number arguments, and Ctrl-C as one line with exit code 130.

Every script under ``bench/`` (and ``bench/peers/*/``) imports this module as ``_cli``, putting
``bench/`` on ``sys.path`` first if it is not there (run as ``python bench/x.py`` it is; run as
``python bench/peers/ns3/x.py``, or loaded by a test from its path, it is not). Stdlib only: the
peer runners promise to need nothing else.

Ctrl-C contract (``interruptible``): a script's ``main`` stops every child process it holds
(``stop``) and removes any half-written result on the way out of the work it interrupts, in
``finally`` or ``except BaseException`` blocks; the decorator only turns the interrupt that
reaches ``main`` into one line, ``interrupted``, and exit code 130. Children started with
``subprocess.run`` need nothing: ``run`` kills its child when interrupted.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NoReturn, ParamSpec, TypeVar

#: The exit code of a run stopped by Ctrl-C: 128 + SIGINT, as a shell reports it.
INTERRUPTED = 130

_P = ParamSpec("_P")
_R = TypeVar("_R")


class UsageError(Exception):
    """A bad argument: the message names it and the fix."""


def die(prefix: str, message: str) -> NoReturn:
    """Print ``<prefix>: <message>`` to stderr and exit with code 2 (a bad argument)."""
    print(f"{prefix}: {message}", file=sys.stderr)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    """argparse, with its errors in one line (``<error_prefix>: <message>``, without the usage)
    and exit code 2, like the scripts' own argument errors."""

    def __init__(self, *args: Any, error_prefix: str = "error", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.error_prefix = error_prefix

    def error(self, message: str) -> NoReturn:
        die(self.error_prefix, message)


def positive_int(value: str | int) -> int | None:
    """``value`` as an int if it is a whole number of at least 1 (a count of runs), else None,
    so that the caller names the argument in its own words."""
    try:
        n = int(value)
    except ValueError:
        return None
    return n if n >= 1 else None


def stop(*procs: subprocess.Popen[Any] | None) -> None:
    """Kill the child processes that are still running and wait for every one, so that none is
    left running (or unreaped) when the script ends early. Safe on ended ones and on None."""
    for proc in procs:
        if proc is not None and proc.poll() is None:
            proc.kill()
    for proc in procs:
        if proc is not None:
            proc.wait()


def interruptible(main: Callable[_P, _R]) -> Callable[_P, _R | int]:
    """``main``, except that Ctrl-C inside it prints one line, ``interrupted``, to stderr and
    returns exit code 130 instead of ending in a traceback (module docs: ``main`` has stopped its
    children by then)."""

    @functools.wraps(main)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R | int:
        try:
            return main(*args, **kwargs)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr, flush=True)
            return INTERRUPTED

    return wrapper


@dataclass
class Timed:
    """What :func:`run_timed` measured of one child: its exit code, wall seconds, resource usage
    (``ru_maxrss`` in KiB on Linux), its output (stdout and stderr together) and whether the
    timeout killed it."""

    returncode: int
    wall_s: float
    usage: resource.struct_rusage
    text: str
    timed_out: bool


def run_timed(cmd: list[str], log_path: Path, timeout_s: float | None = None, cwd: Path | None = None) -> Timed:
    """Run ``cmd`` with its output in ``log_path`` and measure it: the wall time and the
    resource usage of this child alone (``os.wait4``, not the whole process tree's), killed after
    ``timeout_s`` seconds if given. A Ctrl-C (or any error) while it runs stops it first: a peer
    simulator must not run on after the script ends."""
    with open(log_path, "w+") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd)
        timer = None
        timed_out = threading.Event()
        if timeout_s is not None:
            def _kill() -> None:
                timed_out.set()
                proc.kill()

            timer = threading.Timer(timeout_s, _kill)
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)  # rusage of this child only
        except BaseException:
            stop(proc)
            raise
        finally:
            if timer is not None:
                timer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        return Timed(proc.returncode, wall, usage, log.read(), timed_out.is_set())
