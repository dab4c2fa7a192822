"""The shipped specs in schemas/ are exactly what tools/gen_schemas.py makes of ../shared,
and they load lazily: listing them parses nothing, using one parses that one."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from kclient.errors import UnknownMessageError
from kclient.protocol import Registry, default_catalog, default_registry, encode

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


def test_every_request_and_response_of_the_corpus_is_shipped(shared_dir: Path) -> None:
    corpus = {p.stem for p in (shared_dir / "kafka-specs" / "message").glob("*.json")
              if p.stem.endswith(("Request", "Response", "Header"))}
    assert corpus <= set(default_registry().names())
    assert len(corpus) == 178


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


def test_the_extensions_past_the_corpus_are_kept() -> None:
    registry = default_registry()
    assert registry.spec("MetadataResponse").valid.hi == 13
    assert registry.spec("DescribeClusterRequest").valid.hi == 2
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
    newest = default_registry().spec("ProduceRequest").valid.hi
    catalog_max = default_catalog().by_name("Produce").max_version  # type: ignore[union-attr]
    assert catalog_max > newest
    with pytest.raises(UnknownMessageError, match="newer than the Kafka specs"):
        default_registry().codec("ProduceRequest", catalog_max)


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
