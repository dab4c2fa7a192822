"""The shipped release data: regenerated from ../shared it is unchanged; it is consistent."""

from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import REPO_ROOT

DATA = REPO_ROOT / "kclient" / "negotiation" / "releases.json"


def _gen_data() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_data", REPO_ROOT / "tools" / "gen_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _shipped() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text())
    return data


def test_regenerated_data_matches_the_shipped_file(shared_dir: Path) -> None:
    fresh = _gen_data().build_releases(shared_dir)
    assert json.loads(json.dumps(fresh)) == _shipped(), (
        "kclient/negotiation/releases.json is stale: run python tools/gen_data.py")


def test_provenance_names_inputs_tool_and_cross_check() -> None:
    provenance = _shipped()["provenance"]
    assert provenance["tool"] == "tools/gen_data.py"
    assert any("broker-api-versions.json" in i for i in provenance["inputs"])
    assert any("listeners" in i for i in provenance["inputs"])
    assert provenance["kraft_since"] and provenance["kraft_only"]
    disagreements = provenance["cross_check"]["disagreements"]
    assert disagreements and all(d["verdict"] and d["keys"] for d in disagreements)


def _lineages() -> dict[str, list[dict[str, Any]]]:
    releases = _shipped()["releases"]
    return {mode: [r for r in releases if r["mode"] == mode] for mode in ("zookeeper", "kraft")}


def test_max_versions_never_decrease_within_a_lineage_unless_explained() -> None:
    explained = {(e["mode"], e["from"], e["to"], e["key"])
                 for e in _shipped()["provenance"]["lineage_exceptions"] if e["why"]}
    found = set()
    for mode, lineage in _lineages().items():
        assert len(lineage) > 10
        for older, newer in itertools.pairwise(lineage):
            for key, rng in older["apis"].items():
                now = newer["apis"].get(key)
                if now is None or now[1] < rng[1]:
                    found.add((mode, older["name"], newer["name"], int(key)))
    assert found <= explained, f"unexplained decreases: {sorted(found - explained)}"
    assert explained <= found, f"listed exceptions that do not happen: {sorted(explained - found)}"


def test_each_release_of_both_modes_has_one_profile_per_mode() -> None:
    lineages = _lineages()
    zk = {r["release"] for r in lineages["zookeeper"]}
    kraft = {r["release"] for r in lineages["kraft"]}
    both = sorted(zk & kraft, key=lambda n: tuple(int(p) for p in n.split(".")))
    assert both[0] == "2.8" and both[-1] == "3.9"
    assert all(r["name"] == f"{r['release']}-kraft" for r in lineages["kraft"]
               if r["release"] in zk)


@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_lineages_are_in_release_order(mode: str) -> None:
    numbers = [tuple(int(p) for p in r["release"].split(".")) for r in _lineages()[mode]]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
