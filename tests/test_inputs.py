"""Hostile and careless inputs to the Python API: one clear exception naming what is wrong,
never a run that quietly does something else (the CLI's side is in test_cli.py)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import numpy as np
import pydantic
import pytest

import slacknet
from slacknet import SpecError, config, mltol
from slacknet.config import Scenario
from slacknet.reproduce_spec import ReproduceError, load_description
from slacknet.sim import validate

from .conftest import TINY_TOML


def tiny(tmp_path: Path) -> Path:
    p = tmp_path / "tiny.toml"
    p.write_text(TINY_TOML)
    return p


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_a_scenario_refuses_non_finite_floats(bad: float) -> None:
    # JSON has no NaN or infinity: they were written as null, which Rust reads as absent (an
    # infinite stop time ran with no stop time at all).
    d = tomllib.loads(TINY_TOML)
    d.setdefault("run", {})["stop_ms"] = bad
    with pytest.raises(pydantic.ValidationError, match="finite"):
        Scenario.model_validate(d)
    s = Scenario.model_validate(tomllib.loads(TINY_TOML))
    with pytest.raises(pydantic.ValidationError, match="finite"):
        s.topology.host_rate_gbps = bad  # type: ignore[union-attr]


def test_a_bad_dict_is_a_spec_error_naming_the_key() -> None:
    # It was pydantic's ValidationError, listing every problem with a link to pydantic's site,
    # which a caller catching SpecError (as for a file) missed.
    d = tomllib.loads(TINY_TOML)
    d["topology"]["leaves"] = "x"
    with pytest.raises(SpecError) as e:
        slacknet.run(d)
    assert e.value.key == "topology.leaves" and e.value.value == "'x'", str(e.value)  # no tag in the key
    assert "valid integer" in str(e.value) and "pydantic" not in str(e.value)
    d = tomllib.loads(TINY_TOML)
    d["workload"][0]["load"] = True
    del d["topology"]["leaves"]
    with pytest.raises(SpecError, match=r"^topology\.leaves: field required \(and 1 more problem\)$"):
        validate(d)
    # pydantic's lax floats ran `load = True` at load 1 (Rust refuses it in a file).
    d = tomllib.loads(TINY_TOML)
    d["workload"][0]["load"] = True
    with pytest.raises(SpecError, match=r"^workload\[0\]\.load = True: .*a boolean is not a number"):
        validate(d)
    d["workload"][0]["load"] = np.float32(0.25)  # a numpy number stays welcome
    plain = tomllib.loads(TINY_TOML)
    plain["workload"][0]["load"] = 0.25
    assert validate(d).to_json() == validate(plain).to_json()


def test_validate_takes_a_dict_and_refuses_other_types(tmp_path: Path) -> None:
    from_file = validate(tiny(tmp_path))
    from_dict = validate(tomllib.loads(TINY_TOML))
    assert from_dict.to_json() == from_file.to_json()
    with pytest.raises(TypeError, match="not int"):
        validate(5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="from_toml_text"):
        validate(TINY_TOML)


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, True, "3"])
def test_run_refuses_a_seed_out_of_range(tmp_path: Path, seed: object) -> None:
    with pytest.raises(SpecError, match=r"seed = .*: must be an integer in \[0, 2\^64 - 1\]"):
        slacknet.run(tiny(tmp_path), seed=seed)  # type: ignore[arg-type]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_or_device_is_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "s.toml"
    os.mkfifo(fifo)
    # Reading would block forever; it is refused before it is opened.
    with pytest.raises(OSError, match="not a scenario file but a FIFO"):
        Scenario.from_toml(fifo)
    if Path("/dev/zero").exists():
        with pytest.raises(OSError, match="not a scenario file but a device"):
            validate("/dev/zero")


def test_a_huge_file_is_refused_at_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tiny(tmp_path)
    monkeypatch.setattr(config, "MAX_SCENARIO_BYTES", len(TINY_TOML.encode()) - 1)
    with pytest.raises(OSError, match="larger than"):
        Scenario.from_toml(p)
    monkeypatch.setattr(config, "MAX_SCENARIO_BYTES", len(TINY_TOML.encode()))
    assert Scenario.from_toml(p).name == "tiny"


def test_deeply_nested_toml_is_an_error_not_a_recursion(tmp_path: Path) -> None:
    p = tmp_path / "deep.toml"
    p.write_text("name = " + "[" * 2000 + "]" * 2000 + "\n")
    with pytest.raises(SpecError, match="nested too deeply"):
        validate(p)


def test_a_description_that_is_not_text_is_a_reproduce_error(tmp_path: Path) -> None:
    d = tmp_path / "p3"
    d.mkdir()
    (d / "reproduce.toml").write_bytes(bytes(range(128, 256)) * 8)
    with pytest.raises(ReproduceError, match="not UTF-8"):
        load_description(d / "reproduce.toml")


def test_the_loss_grid_is_bounded_before_it_is_built() -> None:
    assert len(mltol.p_grid(mltol.MIN_P_STEP)) == 1001
    with pytest.raises(ValueError, match="at least 0.001"):
        mltol.p_grid(1e-12)


def test_a_boolean_is_not_a_count() -> None:
    # pydantic's lax integers took `leaves = true` as one leaf; a numpy integer stays welcome.
    d = tomllib.loads(TINY_TOML)
    d["topology"]["leaves"] = True
    with pytest.raises(pydantic.ValidationError, match="a boolean is not a count"):
        Scenario.model_validate(d)
    d["topology"]["leaves"] = np.int64(3)
    assert Scenario.model_validate(d).topology.leaves == 3  # type: ignore[union-attr]
    s = Scenario.model_validate(tomllib.loads(TINY_TOML))
    with pytest.raises(pydantic.ValidationError, match="a boolean is not a count"):
        s.seed = True


def test_a_string_is_not_a_number() -> None:
    # pydantic's lax numbers read "2" as 2 and "0.5" as 0.5, where a TOML file's `leaves = "2"`
    # is refused: a dict now gets the same answer as the file.
    d = tomllib.loads(TINY_TOML)
    d["topology"]["leaves"] = "2"
    with pytest.raises(SpecError, match=r"^topology\.leaves = '2': .*a string is not a count"):
        validate(d)
    d = tomllib.loads(TINY_TOML)
    d["workload"][0]["load"] = "0.3"
    with pytest.raises(SpecError, match=r"^workload\[0\]\.load = '0\.3': .*a string is not a number"):
        validate(d)
    d["workload"][0]["load"] = "lots"  # not a number at all: pydantic's own words
    with pytest.raises(SpecError, match=r"^workload\[0\]\.load = 'lots': .*valid number"):
        validate(d)
    text = TINY_TOML.replace("leaves = 2", 'leaves = "2"')
    with pytest.raises(SpecError, match=r"topology\.leaves"):
        validate(Scenario.from_toml_text(text, Path(".")).model_dump())


def test_a_switch_takes_only_a_boolean() -> None:
    # pydantic's lax booleans read "yes", "off", 1 and 0 as switches (`tail_probe="yes"` turned
    # the probe on); the TOML path refuses them, and now so does a dict. numpy's stay welcome.
    for v in ["yes", "true", "off", 1, 0, 1.0]:
        d = tomllib.loads(TINY_TOML)
        d["transport"] = {"kind": "mlt", "tail_probe": v}
        with pytest.raises(SpecError, match=r"^transport\.tail_probe = .*is not a boolean: give true or false"):
            validate(d)
        with pytest.raises(pydantic.ValidationError, match="is not a boolean"):
            config.AtpTransport(rate_control=v)  # type: ignore[arg-type]
    d = tomllib.loads(TINY_TOML)
    d["transport"] = {"kind": "mlt", "tail_probe": np.True_}
    plain = tomllib.loads(TINY_TOML)
    plain["transport"] = {"kind": "mlt", "tail_probe": True}
    assert validate(d).to_json() == validate(plain).to_json()
    assert config.AtpTransport(rate_control=None).rate_control is None  # absent: the variant's
    assert config.AtpTransport(dynamic_tlr=np.False_).dynamic_tlr is False  # type: ignore[arg-type]
    t = config.DctcpTransport()
    with pytest.raises(pydantic.ValidationError, match="is not a boolean"):
        t.handshake = "no"  # type: ignore[assignment]
