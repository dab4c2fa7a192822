"""The shipped specs in schemas/ are exactly what tools/gen_schemas.py makes of ../shared's
spec corpora (message/, message-4.x/ and Kafka 4.2.0's and 4.3.0's release specs),
every version reads as each corpus that has it, and they load lazily: listing them
parses nothing, using one parses that one."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from kclient.errors import UnknownMessageError
from kclient.protocol import Registry, default_catalog, default_registry, encode
from kclient.protocol.schema import MessageSpec, parse_spec, parse_versions, strip_comments

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = REPO_ROOT / "schemas"


def _gen_schemas() -> ModuleType:
    tools = str(REPO_ROOT / "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    spec = importlib.util.spec_from_file_location("gen_schemas", REPO_ROOT / "tools" /
                                                  "gen_schemas.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_specs_match_a_fresh_generation(shared_dir: Path) -> None:
    tool = _gen_schemas()
    fresh = tool.shipped_specs(shared_dir)
    shipped = {p.name for p in SCHEMAS.glob("*.json")} - {"api_catalog.json"}
    assert shipped == set(fresh), "schemas/ is stale: run python tools/gen_schemas.py"
    stale = [name for name, spec in fresh.items()
             if (SCHEMAS / name).read_text() != tool.render(spec)]
    assert not stale, f"stale: {stale[:5]}; run python tools/gen_schemas.py"


def _corpus_names(shared_dir: Path, corpus: str) -> dict[tuple[object, ...], str]:
    """(apiKey, type), or the name for headers -> message name, of one corpus."""
    found: dict[tuple[object, ...], str] = {}
    for path in (shared_dir / "kafka-specs" / corpus).glob("*.json"):
        if path.stem.endswith(("Request", "Response", "Header")):
            raw = json.loads(strip_comments(path.read_text()))
            found[(raw["apiKey"], raw["type"]) if "apiKey" in raw else (raw["name"],)] = path.stem
    return found


CORPORA = ("message", "message-4.x", "message-4.2.0", "message-4.3.0")


def test_every_request_and_response_of_every_corpus_is_shipped(shared_dir: Path) -> None:
    """Under its newest name: Kafka renamed key 74 (ListClientMetricsResources ->
    ListConfigResources), which is one spec."""
    names = [_corpus_names(shared_dir, c) for c in CORPORA]
    expected = {k: v for found in names for k, v in found.items()}
    assert set(expected.values()) == set(default_registry().names())
    assert len(expected) == 188
    old, new = names[0], names[-1]
    renamed = {old[k]: new[k] for k in old.keys() & new.keys() if old[k] != new[k]}
    assert renamed == {"ListClientMetricsResourcesRequest": "ListConfigResourcesRequest",
                       "ListClientMetricsResourcesResponse": "ListConfigResourcesResponse"}


def _corpus_spec(shared_dir: Path, corpus: str, name: str) -> MessageSpec:
    path = shared_dir / "kafka-specs" / corpus / f"{name}.json"
    return parse_spec(path.read_text(), str(path))


def test_each_shipped_version_reads_as_every_corpus_that_has_it(shared_dir: Path) -> None:
    """Every version of every shipped spec has the wire layout of the corpus its
    provenance takes it from (names included) and of each corpus it lists as
    identical (bytes only: Kafka renamed a few fields): the removed versions keep
    their old fields, the new versions get the new ones."""
    tool = _gen_schemas()
    names = {c: {v: k for k, v in _corpus_names(shared_dir, c).items()} for c in CORPORA}
    by_key = {c: {k: n for n, k in names[c].items()} for c in names}
    checked = 0
    for path in sorted(SCHEMAS.glob("*.json")):
        if path.name == "api_catalog.json":
            continue
        shipped = parse_spec(path.read_text(), str(path))
        provenance = json.loads(path.read_text())["provenance"]
        key = next(k for c in names for n, k in names[c].items() if n == shipped.name)
        sources = {c: _corpus_spec(shared_dir, c, by_key[c][key])
                   for c in names if key in by_key[c]}
        for version in shipped.versions:
            origins = [c for c, text in provenance["layout"].items()
                       if version in parse_versions(text, path.name, c)]
            assert len(origins) == 1, (path.name, version)
            assert (tool.wire_layout(shipped, version)
                    == tool.wire_layout(sources[origins[0]], version)), (path.name, version)
            checked += 1
            for corpus, text in provenance.get("identical_in", {}).items():
                if version in parse_versions(text, path.name, corpus):
                    assert (tool.wire_layout(shipped, version, False)
                            == tool.wire_layout(sources[corpus], version, False)), (
                        path.name, version, corpus)
                    checked += 1
    # Every (message, version) of every corpus, each checked once per corpus.
    assert checked > 2000


def test_the_tool_counts_the_versions_several_corpora_have(shared_dir: Path) -> None:
    """1,660 (message, version) pairs, the consumer protocol's and control records' data
    included, are in two corpora and identical on the wire; two more differ in a
    field's name only (Vote v0-v1: Kafka renamed CandidateEpoch/CandidateId, KIP-996),
    two are key 74's under its two names, and one early-access version the 2024 corpus
    marked unstable changed before Kafka released it."""
    counts = _gen_schemas().merged_specs(shared_dir)[1]
    assert counts == {"messages": 188, "overlapping_pairs": 1660, "renamed_pairs": 2,
                      "renamed_fields": 2, "unstable_replaced": 1}


def _two_corpora(shared_dir: Path, tmp_path: Path, tool: ModuleType, names: list[str]) -> None:
    for corpus in tool.CORPORA:
        (tmp_path / "kafka-specs" / corpus).mkdir(parents=True)
        for name in names:
            source = shared_dir / "kafka-specs" / corpus / f"{name}.json"
            if source.is_file() and corpus in ("message", "message-4.3.0"):
                (tmp_path / "kafka-specs" / corpus / source.name).write_text(source.read_text())
    (tmp_path / "kafka-releases").mkdir()
    (tmp_path / "kafka-releases" / "broker-api-versions.json").write_text(
        (shared_dir / "kafka-releases" / "broker-api-versions.json").read_text())


def test_a_version_whose_layout_differs_between_the_corpora_stops_the_tool(
        shared_dir: Path, tmp_path: Path) -> None:
    tool = _gen_schemas()
    _two_corpora(shared_dir, tmp_path, tool, ["RequestHeader", "ResponseHeader"])
    newer = tmp_path / "kafka-specs" / "message-4.3.0" / "ResponseHeader.json"
    newer.write_text(newer.read_text().replace('"int32"', '"int64"'))
    with pytest.raises(SystemExit, match=r"ResponseHeader v0: its wire layout in message "
                                         r"differs from message-4\.3\.0's"):
        tool.merged_specs(tmp_path)


def test_a_planted_difference_in_a_new_group_api_stops_the_tool(
        shared_dir: Path, tmp_path: Path) -> None:
    """A version both release corpora have (ConsumerGroupHeartbeat v1) must be the same
    in 4.2.0 as in 4.3.0: one field's type changed in 4.2.0 stops the tool."""
    tool = _gen_schemas()
    for corpus in tool.CORPORA:
        (tmp_path / "kafka-specs" / corpus).mkdir(parents=True)
    for corpus in ("message-4.2.0", "message-4.3.0"):
        for name in ("ConsumerGroupHeartbeatRequest", "ConsumerGroupHeartbeatResponse"):
            source = shared_dir / "kafka-specs" / corpus / f"{name}.json"
            text = source.read_text()
            if corpus == "message-4.2.0" and name.endswith("Request"):
                planted = text.replace('"name": "RebalanceTimeoutMs", "type": "int32"',
                                       '"name": "RebalanceTimeoutMs", "type": "int64"')
                assert planted != text
                text = planted
            (tmp_path / "kafka-specs" / corpus / source.name).write_text(text)
    (tmp_path / "kafka-releases").mkdir()
    (tmp_path / "kafka-releases" / "broker-api-versions.json").write_text(
        (shared_dir / "kafka-releases" / "broker-api-versions.json").read_text())
    with pytest.raises(SystemExit, match=r"ConsumerGroupHeartbeatRequest v0: its wire layout "
                                         r"in message-4\.2\.0 differs from message-4\.3\.0's"):
        tool.merged_specs(tmp_path)


def test_a_gap_between_the_corpora_stops_the_tool(shared_dir: Path, tmp_path: Path) -> None:
    tool = _gen_schemas()
    _two_corpora(shared_dir, tmp_path, tool, [])
    old = json.loads(strip_comments(
        (shared_dir / "kafka-specs" / "message" / "ProduceRequest.json").read_text()))
    old["validVersions"] = "0-1"
    (tmp_path / "kafka-specs" / "message" / "ProduceRequest.json").write_text(json.dumps(old))
    source = shared_dir / "kafka-specs" / "message-4.3.0" / "ProduceRequest.json"
    (tmp_path / "kafka-specs" / "message-4.3.0" / source.name).write_text(source.read_text())
    with pytest.raises(SystemExit, match=r"ProduceRequest: the corpora's versions .* gap"):
        tool.merged_specs(tmp_path)


def test_a_release_marking_stable_what_a_newer_corpus_marks_unstable_stops_the_tool(
        shared_dir: Path, tmp_path: Path) -> None:
    """InitProducerId 6 is unstable in 4.3.0: a 4.2.0 that called it stable (with a
    v6 of the same layout) would contradict it, and the tool says so."""
    tool = _gen_schemas()
    _two_corpora(shared_dir, tmp_path, tool, ["InitProducerIdRequest",
                                               "InitProducerIdResponse"])
    for name in ("InitProducerIdRequest", "InitProducerIdResponse"):
        text = (shared_dir / "kafka-specs" / "message-4.3.0" / f"{name}.json").read_text()
        text = text.replace('"latestVersionUnstable": true,', "")
        (tmp_path / "kafka-specs" / "message-4.2.0" / f"{name}.json").write_text(text)
    with pytest.raises(SystemExit, match=r"InitProducerIdRequest v6: message-4\.2\.0 \(a "
                                         r"release\) marks it stable but message-4\.3\.0 "
                                         "marks it unstable"):
        tool.merged_specs(tmp_path)


def test_shipped_specs_carry_no_upstream_prose() -> None:
    for path in SCHEMAS.glob("*Re*.json"):
        text = path.read_text()
        data = json.loads(text)

        stack = list(data.get("fields", []))
        while stack:
            item = stack.pop()
            assert "about" not in item, f"{path.name}: {item['name']} has a description"
            stack.extend(item.get("fields", []))
        assert "//" not in text


def test_versions_of_every_corpus_are_shipped() -> None:
    """The removed versions (KIP-896) stay, the versions added since 2024 are there,
    and an unstable version is decoded but not in the catalog's range."""
    registry = default_registry()
    for name, (lo, hi) in {"ProduceRequest": (0, 13), "FetchResponse": (0, 18),
                           "ListOffsetsRequest": (0, 11), "MetadataResponse": (0, 13),
                           "DescribeClusterRequest": (0, 2), "OffsetCommitRequest": (0, 10),
                           "InitProducerIdRequest": (0, 6),
                           "ListConfigResourcesResponse": (0, 1),
                           "ConsumerGroupHeartbeatRequest": (0, 1),
                           "ShareFetchRequest": (0, 2), "StreamsGroupHeartbeatResponse": (0, 0),
                           "DeleteShareGroupOffsetsRequest": (0, 0)}.items():
        assert (registry.spec(name).valid.lo, registry.spec(name).valid.hi) == (lo, hi), name
    assert registry.spec("InitProducerIdRequest").latest_version_unstable
    assert not registry.spec("EndTxnRequest").latest_version_unstable  # stable in 4.x
    # The 2024 corpus marked ConsumerGroupHeartbeat v1 unstable; Kafka 4.0 released it.
    assert not registry.spec("ConsumerGroupHeartbeatRequest").latest_version_unstable
    info = default_catalog().resolve("InitProducerId")
    assert (info.min_version, info.max_version) == (0, 5)
    assert info.codec_versions == (0, 6) and info.sendable == (0, 5)
    assert encode("InitProducerIdRequest", 6, {"transactional_id": None,
                                                "transaction_timeout_ms": 1})
    produce = json.loads((SCHEMAS / "ProduceRequest.json").read_text())["provenance"]
    assert produce["layout"] == {"message": "0-2", "message-4.3.0": "3-13"}
    assert produce["identical_in"] == {"message": "3-11", "message-4.x": "3-13",
                                       "message-4.2.0": "3-13"}
    assert produce["stable_since"]["4.0"] == "12" and "unstable" not in produce
    assert encode("ProduceRequest", 0, {"acks": 1, "timeout_ms": 1})
    assert encode("CreateTopicsRequest", 7, {"topics": [{"name": "t", "num_partitions": 1,
                                                          "replication_factor": 1}]})


def test_the_share_group_early_access_v0_is_decoded_never_sent() -> None:
    """ShareGroupHeartbeat v0 (Kafka 4.0's early access, unstable, gone in 4.1) comes
    from the 2024 corpus and stays decodable; v1, stable since 4.1, is what kclient sends."""
    shipped = json.loads((SCHEMAS / "ShareGroupHeartbeatRequest.json").read_text())
    assert shipped["provenance"]["layout"] == {"message": "0", "message-4.3.0": "1"}
    assert shipped["provenance"]["unstable"] == "0"
    assert shipped["provenance"]["stable_since"] == {"4.1": "1"}
    assert "latestVersionUnstable" not in shipped
    info = default_catalog().resolve("ShareGroupHeartbeat")
    assert info.codec_versions == (0, 1) and info.sendable == (1, 1)
    assert encode("ShareGroupHeartbeatRequest", 0, {"group_id": "g", "member_id": "m"})


def test_listing_parses_nothing_and_one_use_parses_one(tmp_path: Path) -> None:
    registry = Registry()
    assert registry.index_directory(SCHEMAS) == 188
    assert len(registry._specs) == 0  # nothing parsed yet
    assert "CreateTopicsRequest" in registry and len(registry) == 188
    registry.codec("CreateTopicsRequest", 7)
    assert set(registry._specs) == {"CreateTopicsRequest"}


def _registry_without(tmp_path: Path, names: set[str], cap: dict[str, str] | None = None
                      ) -> Registry:
    """A registry of the shipped specs less ``names`` (a kclient built from older
    specs), with the ``validVersions`` of some capped."""
    for path in SCHEMAS.glob("*Re*.json"):
        if path.stem in names:
            continue
        data = json.loads(path.read_text())
        if path.stem in (cap or {}):
            data["validVersions"] = (cap or {})[path.stem]
        (tmp_path / path.name).write_text(json.dumps(data))
    registry = Registry()
    registry.index_directory(tmp_path)
    return registry


def test_an_api_newer_than_the_specs_says_when_kafka_added_it(tmp_path: Path) -> None:
    info = default_catalog().by_name("StreamsGroupHeartbeat")
    assert info is not None and info.since == "4.2"
    registry = _registry_without(tmp_path, {"StreamsGroupHeartbeatRequest"})
    with pytest.raises(UnknownMessageError) as raised:
        registry.spec("StreamsGroupHeartbeatRequest")
    text = str(raised.value)
    assert "Apache Kafka 4.2" in text and "key 88" in text
    assert "kclient.protocol.load_directory" in text


def test_a_version_newer_than_the_specs_says_what_to_do(tmp_path: Path) -> None:
    # A kclient whose ShareGroupHeartbeat spec stops at the early-access v0, asked
    # for v1 (which brokers from 4.1 advertise).
    registry = _registry_without(tmp_path, set(), {"ShareGroupHeartbeatRequest": "0"})
    assert default_catalog().resolve("ShareGroupHeartbeat").max_version == 1
    with pytest.raises(UnknownMessageError, match="newer than the Kafka specs"):
        registry.codec("ShareGroupHeartbeatRequest", 1)


def test_a_misspelt_name_points_at_the_naming_rule() -> None:
    with pytest.raises(UnknownMessageError, match="MetadataRequest, not Metadata"):
        default_registry().spec("CreateTopic")


def test_import_and_a_first_version_for_parse_no_spec() -> None:
    import subprocess
    import sys

    script = (
        "import kclient\n"
        "from kclient import SyncClient\n"
        "from kclient.negotiation import ApplicationVersions, BrokerVersions, VersionRange\n"
        "from kclient.protocol.registry import default_registry\n"
        "broker = BrokerVersions(node_id=1, host='h', port=1, "
        "apis={19: VersionRange(0, 7)})\n"
        "assert ApplicationVersions.from_catalog().require_version('CreateTopics', broker) == 7\n"
        "print(default_registry.cache_info().currsize)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=REPO_ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"  # the registry was never even listed


def test_a_renamed_message_points_at_its_new_name() -> None:
    with pytest.raises(UnknownMessageError, match="Kafka renamed API ListClientMetricsResources "
                                                  r"\(key 74\) to ListConfigResources; use "
                                                  "ListConfigResourcesRequest"):
        default_registry().spec("ListClientMetricsResourcesRequest")
