"""The native module matches python/slacknet/_native.pyi (mypy.stubtest), and the package's
public names exist."""

from __future__ import annotations

import subprocess
import sys

import pytest

import slacknet


def test_stubtest() -> None:
    pytest.importorskip("mypy.stubtest")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "slacknet._native"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_public_names() -> None:
    for name in slacknet.__all__:
        assert hasattr(slacknet, name), name
    assert issubclass(slacknet.SpecError, ValueError)
    assert issubclass(slacknet.SimError, RuntimeError)
    assert slacknet.SpecError.__module__ == "slacknet._native"


def test_version() -> None:
    from slacknet import _native

    assert slacknet.__version__ == _native.version()


def test_the_package_type_checks() -> None:
    # mypy over python/slacknet with the project's settings (pyproject.toml [tool.mypy]).
    pytest.importorskip("mypy")
    from .conftest import REPO

    proc = subprocess.run(
        [sys.executable, "-m", "mypy", str(REPO / "python" / "slacknet")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
