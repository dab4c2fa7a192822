"""The shipped specs in schemas/ are exactly what tools/gen_schemas.py makes of ../shared's
two spec corpora (message/ and message-4.x/), every version reads as the corpus it
comes from, and they load lazily: listing them parses nothing, using one parses that one."""

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


def test_every_request_and_response_of_both_corpora_is_shipped(shared_dir: Path) -> None:
    """Under its newest name: Kafka renamed key 74 (ListClientMetricsResources ->
    ListConfigResources), which is one spec."""
    old, new = (_corpus_names(shared_dir, c) for c in ("message", "message-4.x"))
    expected = {**old, **new}
    assert set(expected.values()) == set(default_registry().names())
    assert len(expected) == 178
    renamed = {old[k]: new[k] for k in old.keys() & new.keys() if old[k] != new[k]}
    assert renamed == {"ListClientMetricsResourcesRequest": "ListConfigResourcesRequest",
                       "ListClientMetricsResourcesResponse": "ListConfigResourcesResponse"}


def _corpus_spec(shared_dir: Path, corpus: str, name: str) -> MessageSpec:
    path = shared_dir / "kafka-specs" / corpus / f"{name}.json"
    return parse_spec(path.read_text(), str(path))


def test_each_shipped_version_reads_as_the_corpus_it_comes_from(shared_dir: Path) -> None:
    """Every version of every shipped spec has the wire layout of the corpus its
    provenance names, and of both corpora where it says both: the removed versions
    keep their old fields, the new versions get the new ones."""
    tool = _gen_schemas()
    names = {c: {v: k for k, v in _corpus_names(shared_dir, c).items()}
             for c in ("message", "message-4.x")}
    checked = 0
    for path in sorted(SCHEMAS.glob("*.json")):
        if path.name == "api_catalog.json":
            continue
        shipped = parse_spec(path.read_text(), str(path))
        provenance = json.loads(path.read_text())["provenance"]
        by_key = {c: {k: n for n, k in names[c].items()} for c in names}
        key = next(k for c in names for n, k in names[c].items() if n == shipped.name)
        sources = {c: _corpus_spec(shared_dir, c, by_key[c][key])
                   for c in names if key in by_key[c]}
        for version in shipped.versions:
            origins = [c for c, text in provenance.items() if c != "both"
                       and version in parse_versions(text, path.name, c)]
            assert len(origins) == 1, (path.name, version)
            if "both" in provenance and version in parse_versions(provenance["both"], "", ""):
                origins = list(sources)
                assert len(origins) == 2
            for corpus in origins:
                names_too = sources[corpus].name == shipped.name
                assert (tool.wire_layout(shipped, version, names_too)
                        == tool.wire_layout(sources[corpus], version, names_too)), (
                    path.name, version, corpus)
                checked += 1
    # Every (message, version) of either corpus, the ones in both checked twice.
    assert checked > 1000


def test_the_tool_counts_the_versions_both_corpora_have(shared_dir: Path) -> None:
    """456 (message, version) pairs, the consumer protocol's data included, are in both
    corpora and identical on the wire; two more are key 74's, under its two names."""
    counts = _gen_schemas().merged_specs(shared_dir)[1]
    assert counts["overlapping_pairs"] == 456
    assert counts["renamed_pairs"] == 2


def test_a_version_whose_layout_differs_between_the_corpora_stops_the_tool(
        shared_dir: Path, tmp_path: Path) -> None:
    tool = _gen_schemas()
    for corpus in tool.CORPORA:
        (tmp_path / "kafka-specs" / corpus).mkdir(parents=True)
        for name in ("RequestHeader", "ResponseHeader"):
            source = shared_dir / "kafka-specs" / corpus / f"{name}.json"
            (tmp_path / "kafka-specs" / corpus / source.name).write_text(source.read_text())
    newer = tmp_path / "kafka-specs" / "message-4.x" / "ResponseHeader.json"
    newer.write_text(newer.read_text().replace('"int32"', '"int64"'))
    with pytest.raises(SystemExit, match=r"ResponseHeader v0: its wire layout in message "
                                         r"differs from message-4\.x's"):
        tool.merged_specs(tmp_path)


def test_a_gap_between_the_corpora_stops_the_tool(shared_dir: Path, tmp_path: Path) -> None:
    tool = _gen_schemas()
    for corpus in tool.CORPORA:
        (tmp_path / "kafka-specs" / corpus).mkdir(parents=True)
    old = json.loads(strip_comments(
        (shared_dir / "kafka-specs" / "message" / "ProduceRequest.json").read_text()))
    old["validVersions"] = "0-1"
    (tmp_path / "kafka-specs" / "message" / "ProduceRequest.json").write_text(json.dumps(old))
    source = shared_dir / "kafka-specs" / "message-4.x" / "ProduceRequest.json"
    (tmp_path / "kafka-specs" / "message-4.x" / source.name).write_text(source.read_text())
    with pytest.raises(SystemExit, match=r"ProduceRequest: the corpora's versions .* gap"):
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


def test_versions_of_both_corpora_are_shipped() -> None:
    """The removed versions (KIP-896) stay, the versions added since 2024 are there,
    and an unstable newest version is decoded but not in the catalog's range."""
    registry = default_registry()
    for name, (lo, hi) in {"ProduceRequest": (0, 13), "FetchResponse": (0, 18),
                           "ListOffsetsRequest": (0, 11), "MetadataResponse": (0, 13),
                           "DescribeClusterRequest": (0, 2), "OffsetCommitRequest": (0, 10),
                           "InitProducerIdRequest": (0, 6),
                           "ListConfigResourcesResponse": (0, 1)}.items():
        assert (registry.spec(name).valid.lo, registry.spec(name).valid.hi) == (lo, hi), name
    assert registry.spec("InitProducerIdRequest").latest_version_unstable
    assert not registry.spec("EndTxnRequest").latest_version_unstable  # stable in 4.x
    info = default_catalog().resolve("InitProducerId")
    assert (info.min_version, info.max_version) == (0, 5)
    assert info.codec_versions == (0, 6) and info.sendable == (0, 5)
    assert encode("InitProducerIdRequest", 6, {"transactional_id": None,
                                                "transaction_timeout_ms": 1})
    produce = json.loads((SCHEMAS / "ProduceRequest.json").read_text())["provenance"]
    assert produce == {"message": "0-2", "message-4.x": "3-13", "both": "3-11"}
    assert encode("ProduceRequest", 0, {"acks": 1, "timeout_ms": 1})
    assert encode("CreateTopicsRequest", 7, {"topics": [{"name": "t", "num_partitions": 1,
                                                          "replication_factor": 1}]})


def test_listing_parses_nothing_and_one_use_parses_one(tmp_path: Path) -> None:
    registry = Registry()
    assert registry.index_directory(SCHEMAS) == 178
    assert len(registry._specs) == 0  # nothing parsed yet
    assert "CreateTopicsRequest" in registry and len(registry) == 178
    registry.codec("CreateTopicsRequest", 7)
    assert set(registry._specs) == {"CreateTopicsRequest"}


def test_an_api_newer_than_the_specs_says_when_kafka_added_it() -> None:
    info = default_catalog().by_name("StreamsGroupHeartbeat")
    assert info is not None and info.since == "4.2"
    with pytest.raises(UnknownMessageError) as raised:
        default_registry().spec("StreamsGroupHeartbeatRequest")
    text = str(raised.value)
    assert "Apache Kafka 4.2" in text and "key 88" in text
    assert "kclient.protocol.load_directory" in text


def test_a_version_newer_than_the_specs_says_what_to_do() -> None:
    # ShareGroupHeartbeat: the specs have the unstable early-access v0 only, brokers
    # from 4.1 advertise v1 (the catalog keeps their range: sendable is None).
    newest = default_registry().spec("ShareGroupHeartbeatRequest").valid.hi
    info = default_catalog().resolve("ShareGroupHeartbeat")
    assert info.sendable is None and info.max_version > newest
    with pytest.raises(UnknownMessageError, match="newer than the Kafka specs"):
        default_registry().codec("ShareGroupHeartbeatRequest", info.max_version)


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
