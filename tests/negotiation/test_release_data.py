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


def _profile(name: str) -> dict[int, list[int]]:
    entry = next(r for r in _shipped()["releases"] if r["name"] == name)
    return {int(k): v for k, v in entry["apis"].items()}


# What KRaft brokers advertised as they start for the keys the profiles once got
# wrong, as read from Apache Kafka's source at the release tags (2.8.0 ... 3.3.0): key
# -> profile -> [min, max] or None.  55 DescribeQuorum, 57 UpdateFeatures (3.0 and 3.1
# brokers drop it after their first request forwarded to the controller), 58 Envelope,
# 64 UnregisterBroker.
KRAFT_FROM_SOURCE: dict[int, dict[str, list[int] | None]] = {
    55: {"2.8-kraft": [0, 0], "3.0-kraft": [0, 0], "3.1-kraft": [0, 0], "3.2-kraft": [0, 0],
         "3.3-kraft": [0, 1]},
    57: {"2.8-kraft": None, "3.0-kraft": [0, 0], "3.1-kraft": [0, 0], "3.2-kraft": [0, 0],
         "3.3-kraft": [0, 1]},
    58: {"2.8-kraft": [0, 0], "3.0-kraft": [0, 0], "3.1-kraft": [0, 0], "3.2-kraft": None,
         "3.3-kraft": None},
    64: {"2.8-kraft": [0, 0], "3.0-kraft": None, "3.1-kraft": None, "3.2-kraft": None,
         "3.3-kraft": [0, 0]},
}


@pytest.mark.parametrize("key", sorted(KRAFT_FROM_SOURCE))
def test_kraft_profiles_follow_kafkas_source(key: int) -> None:
    for name, expected in KRAFT_FROM_SOURCE[key].items():
        assert _profile(name).get(key) == expected, (name, key)


def test_kraft_evidence_names_tag_file_and_finding() -> None:
    source = _shipped()["provenance"]["kafka_source"]
    assert "crosscheck_kafka_source.py" in source["check"]
    evidence = source["evidence"]
    covered = {int(item["keys"].split()[0]) for item in evidence}
    assert set(KRAFT_FROM_SOURCE) <= covered
    for item in evidence:
        assert item["tags"] and item["file"] and item["says"] and item["releases"]
    # No cross-check verdict still says franz-go is wrong where Kafka's source agrees with it.
    for entry in _shipped()["provenance"]["cross_check"]["disagreements"]:
        assert not entry["keys"].startswith(("57 ", "58 ")), entry


def test_update_features_on_kraft_3_0_and_3_1_is_settled_from_the_source() -> None:
    """An outside check found UpdateFeatures advertised by KRaft 3.0 and 3.1 brokers
    where the profiles started it at 3.2: Kafka's source at 3.0.0/3.1.0 says a broker
    advertises it until its first request forwarded to the controller (which does not
    serve it) and drops it after. The profiles describe the broker as it starts, and
    the evidence says both states."""
    assert _profile("2.8-kraft").get(57) is None
    assert _profile("3.0-kraft")[57] == _profile("3.1-kraft")[57] == [0, 0]
    evidence = next(item for item in _shipped()["provenance"]["kafka_source"]["evidence"]
                    if item["keys"].startswith("57 "))
    assert "ApiVersionManager.scala" in evidence["file"]
    assert "first forwarded request" in evidence["says"]
    assert "filterApis" in evidence["says"] and "ControllerApis" in evidence["says"]
    since = next(item for item in _shipped()["provenance"]["kraft_since"] if item["key"] == 57)
    assert since["from"] == "3.0"


def test_advertised_but_rejected_versions_carry_their_source() -> None:
    accepted = _shipped()["accepted_min"]
    assert accepted["0"]["from"] == "4.0" and accepted["0"]["min"] == 3
    assert "message-4.x/ProduceRequest.json" in accepted["0"]["source"]


def test_generator_refuses_an_unrecorded_advertised_but_rejected_version(
        shared_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gen = _gen_data()
    monkeypatch.setattr(gen, "ACCEPTED_MIN", {})
    refused = r"api key 0 from v0 but the message-4\.x spec starts at v3"
    with pytest.raises(SystemExit, match=refused):
        gen.build_releases(shared_dir)


def test_fresh_cluster_feature_levels_of_each_4x_release_carry_their_sources() -> None:
    """A freshly formatted 4.0 cluster finalizes group.version 1 and transaction.version 2;
    eligible.leader.replicas.version 1 from 4.1; share.version and streams.version 1
    from 4.2 (4.1: share groups a preview, off); earlier releases are not modelled."""
    from kclient.negotiation import release_feature_levels

    levels = {r["name"]: r.get("feature_levels") for r in _shipped()["releases"]}
    assert {name for name, value in levels.items() if value is not None} == {
        "4.0", "4.1", "4.2", "4.3"}
    finalized = {name: release_feature_levels(name).finalized
                 for name in ("4.0", "4.1", "4.2", "4.3")}
    assert finalized["4.0"] == {"metadata.version": 25, "kraft.version": 1,
                                "transaction.version": 2, "group.version": 1}
    assert finalized["4.1"]["eligible.leader.replicas.version"] == 1
    assert "share.version" not in finalized["4.1"] and "streams.version" not in finalized["4.1"]
    assert finalized["4.2"]["share.version"] == finalized["4.2"]["streams.version"] == 1
    assert [finalized[r]["metadata.version"] for r in finalized] == [25, 27, 29, 30]
    assert "share.version" not in release_feature_levels("4.0").supported
    assert "streams.version" not in release_feature_levels("4.1").supported
    assert release_feature_levels("3.9").finalized == {}
    sources = _shipped()["provenance"]["feature_levels"]["sources"]
    named = {name.strip() for item in sources for name in item["features"].split(",")}
    assert named == {"metadata.version", "kraft.version", "transaction.version",
                     "group.version", "eligible.leader.replicas.version", "share.version",
                     "streams.version"}
    assert all(item["how"] and item["says"] for item in sources)
