"""slacknet.config: the Credence-paper admission policies mirror Rust's AdmissionSpec."""

from __future__ import annotations

import json
from pathlib import Path

import pydantic
import pytest

import slacknet
from slacknet import _native
from slacknet.config import Scenario

FAT_TREE = {"topology": {"kind": "fat_tree", "k": 4, "rate_gbps": 10}}

FOREST = {
    "format": "slacknet-forest/1",
    "features": ["queue_len", "occupancy"],
    "trees": [
        {
            "children_left": [1, -1, -1],
            "children_right": [2, -1, -1],
            "feature": [1, -2, -2],
            "threshold": [500000.0, -2.0, -2.0],
            "value": [[[5, 5]], [[5, 0]], [[0, 5]]],
        }
    ],
}


@pytest.mark.parametrize(
    "admission",
    [
        slacknet.Harmonic(),
        slacknet.ActiveBufferManagement(),
        slacknet.ActiveBufferManagement(alpha_first_rtt=8.0, base_rtt_us=12.5, congested_bytes=3000),
        slacknet.ActiveBufferManagement(first_rtt_bytes=43800),
        slacknet.FollowLqd(),
        slacknet.Credence(oracle=slacknet.AlwaysAcceptOracle()),
        slacknet.Credence(
            oracle=slacknet.FlipOracle(inner=slacknet.AlwaysDropOracle(), p=0.01, seed=3), base_rtt_us=8.0
        ),
    ],
    ids=lambda a: a.policy,
)
def test_policy_round_trips_through_rust(admission: slacknet.Admission, tmp_path: Path) -> None:
    sc = Scenario.model_validate({**FAT_TREE, "switch": {"admission": admission.model_dump(exclude_none=True)}})
    via_rust = json.loads(_native.resolve_json(sc.to_json(), str(tmp_path)))
    assert via_rust == json.loads(sc.to_json())
    assert Scenario.model_validate(via_rust).switch.admission == admission


def test_defaults_match_rust(tmp_path: Path) -> None:
    sc = Scenario.model_validate({**FAT_TREE, "switch": {"admission": {"policy": "abm"}}})
    via_rust = json.loads(_native.resolve_json(sc.to_json(), str(tmp_path)))
    assert via_rust["switch"]["admission"] == {"policy": "abm", "alpha_first_rtt": 64.0, "congested_bytes": 28000}


def test_forest_path_is_resolved_against_the_scenario_folder(tmp_path: Path) -> None:
    (tmp_path / "forest.json").write_text(json.dumps(FOREST))
    oracle = {"kind": "flip", "p": 0.1, "inner": {"kind": "forest", "path": "forest.json"}}
    sc = Scenario.model_validate({**FAT_TREE, "switch": {"admission": {"policy": "credence", "oracle": oracle}}})
    r = sc.resolve(tmp_path)
    adm = r.switch.admission
    assert isinstance(adm, slacknet.Credence) and isinstance(adm.oracle, slacknet.FlipOracle)
    inner = adm.oracle.inner
    assert isinstance(inner, slacknet.ForestOracle)
    assert Path(inner.path).is_absolute() and Path(inner.path).name == "forest.json"


@pytest.mark.parametrize(
    ("admission", "key"),
    [
        ({"policy": "credence", "oracle": {"kind": "forest", "path": "missing.json"}}, "switch.admission.oracle.path"),
        (
            {"policy": "credence", "oracle": {"kind": "flip", "p": 2.0, "inner": {"kind": "always_drop"}}},
            "switch.admission.oracle.p",
        ),
        ({"policy": "abm", "congested_bytes": 0}, "switch.admission.congested_bytes"),
    ],
)
def test_rust_names_the_bad_key(admission: dict, key: str, tmp_path: Path) -> None:
    sc = Scenario.model_validate({**FAT_TREE, "switch": {"admission": admission}})
    with pytest.raises(slacknet.SpecError) as ei:
        sc.resolve(tmp_path)
    assert ei.value.key == key


@pytest.mark.parametrize(
    "admission",
    [
        {"policy": "credence", "oracle": {"kind": "perfect"}},
        {"policy": "follow_lqd", "oracle": {"kind": "always_drop"}},
        {"policy": "abm", "alpha": 0.5},
    ],
)
def test_pydantic_rejects_what_rust_rejects(admission: dict) -> None:
    with pytest.raises(pydantic.ValidationError):
        Scenario.model_validate({**FAT_TREE, "switch": {"admission": admission}})


def test_credence_defaults_to_the_built_in_forest(tmp_path: Path) -> None:
    sc = Scenario.model_validate({**FAT_TREE, "switch": {"admission": {"policy": "credence"}}})
    r = sc.resolve(tmp_path)
    assert isinstance(r.switch.admission, slacknet.Credence)
    assert r.switch.admission.oracle == slacknet.ForestOracle(path="default")
