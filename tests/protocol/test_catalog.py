from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kclient.errors import SchemaError, UnknownMessageError
from kclient.protocol.catalog import default_catalog, load_catalog


def test_catalog_covers_every_key_a_broker_can_advertise() -> None:
    catalog = default_catalog()
    assert [info.key for info in catalog] == list(range(93))
    assert all(info.min_version <= info.max_version for info in catalog)
    assert all(info.about for info in catalog)


def test_lookup_by_name_key_and_text() -> None:
    catalog = default_catalog()
    assert catalog.resolve("ApiVersions").key == 18
    assert catalog.resolve("apiversions").key == 18
    assert catalog.resolve(18).name == "ApiVersions"
    assert catalog.resolve("3").name == "Metadata"
    assert catalog.name_of(999) == "UNKNOWN(999)"
    with pytest.raises(UnknownMessageError, match="NoSuchApi"):
        catalog.resolve("NoSuchApi")


def test_flexible_versions_follow_kip_482() -> None:
    catalog = default_catalog()
    api_versions = catalog.resolve("ApiVersions")
    assert not api_versions.is_flexible(2)
    assert api_versions.is_flexible(3)
    assert catalog.resolve("SaslHandshake").flexible_from is None


def test_catalog_matches_shared_specs(shared_dir: Path) -> None:
    """Every request of both spec corpora is known by its name (or an old name), and
    the codec describes every version it has; the default range reaches its newest
    stable one."""
    import re

    catalog = default_catalog()
    releases = json.loads((shared_dir / "kafka-releases" / "broker-api-versions.json").read_text())
    aliases = releases.get("api_name_aliases", {})
    for corpus in ("message", "message-4.x"):
        for spec_path in (shared_dir / "kafka-specs" / corpus).glob("*Request.json"):
            spec = json.loads(re.sub(r"^\s*//.*$", "", spec_path.read_text(), flags=re.M))
            info = catalog.by_key(spec["apiKey"])
            assert info is not None, spec_path.name
            names = {info.name, *aliases.get(str(info.key), [])}
            assert spec["name"].removesuffix("Request") in names
            low, _, high_text = spec["validVersions"].partition("-")
            high = int(high_text or low)
            assert info.codec_versions is not None, spec_path.name
            assert info.codec_versions[0] <= int(low) and high <= info.codec_versions[1]
            if spec.get("latestVersionUnstable"):
                high -= 1
            if high >= int(low):
                assert info.max_version >= high, spec_path.name


def test_broken_catalog_file_is_a_schema_error(tmp_path: Path) -> None:
    bad = tmp_path / "catalog.json"
    bad.write_text('{"apis": [{"key": 0}]}')
    with pytest.raises(SchemaError, match=r"apis\[0\]"):
        load_catalog(bad)
    bad.write_text("not json")
    with pytest.raises(SchemaError, match="cannot read"):
        load_catalog(bad)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_a_catalog_or_spec_file_that_is_a_fifo_is_refused_not_read(tmp_path: Path) -> None:
    """load_catalog / load_file read the path as given: a FIFO blocked for good."""
    from kclient.protocol.registry import Registry

    fifo = tmp_path / "MetadataRequest.json"
    os.mkfifo(fifo)
    with pytest.raises(SchemaError, match=r"the API catalog is a FIFO \(named pipe\)"):
        load_catalog(fifo)
    with pytest.raises(SchemaError, match=r"the message spec is a FIFO \(named pipe\)"):
        Registry().load_file(fifo)


def test_controller_only_keys_come_from_the_spec_listeners() -> None:
    catalog = default_catalog()
    controller_only = {info.name for info in catalog if info.controller_only}
    assert {"Vote", "BeginQuorumEpoch", "BrokerRegistration", "BrokerHeartbeat",
            "FetchSnapshot"} <= controller_only
    # Served by brokers (or ZooKeeper brokers) too: shown by default.
    assert not controller_only & {"Produce", "ApiVersions", "LeaderAndIsr", "Envelope",
                                  "DescribeQuorum", "AlterPartition"}


def test_regenerated_catalog_matches_the_shipped_file(shared_dir: Path) -> None:
    import importlib.util

    from tests.conftest import REPO_ROOT

    spec = importlib.util.spec_from_file_location("gen_data", REPO_ROOT / "tools" / "gen_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shipped = json.loads((REPO_ROOT / "schemas" / "api_catalog.json").read_text())
    assert module.build_catalog(shared_dir) == shipped, (
        "schemas/api_catalog.json is stale: run python tools/gen_data.py")


def test_a_former_api_name_finds_the_renamed_key() -> None:
    catalog = default_catalog()
    info = catalog.resolve("ListClientMetricsResources")
    assert info.key == 74 and info.name == "ListConfigResources"
    assert info.former_names == ("ListClientMetricsResources",)
    assert catalog.by_name("listclientmetricsresources") is info
    assert catalog.name_of(74) == "ListConfigResources"
