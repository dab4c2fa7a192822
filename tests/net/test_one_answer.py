"""One answer: the version kclient names is the version it sends, for current Kafka.

Brokers advertise franz-go's tables of Kafka 4.0, 4.1 and 4.2 (an independent
source: tests/data/franz_go_kversion.json, written by
``tools/crosscheck_kversion.py --write-tables``) or kclient's own 4.3 profile.
For every API the view calls available, ``version_for``, ``request`` to a
broker and ``request(cluster_wide=True)`` must name and send the same version;
what was sent is read from the emulated broker's own capture of the wire, not
from kclient's bookkeeping.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from kclient.emulator import BrokerSpec, EmulatedBroker, EmulatedCluster
from kclient.errors import KClientError
from kclient.net import Client
from kclient.protocol.constants import ApiKey
from tests.waiting import until

pytestmark = pytest.mark.timeout(120)

TABLES_FILE = Path(__file__).resolve().parent.parent / "data" / "franz_go_kversion.json"
TABLES: dict[str, dict[str, list[int]]] = json.loads(TABLES_FILE.read_text())["releases"]
CASES: list[tuple[str, dict[int, tuple[int, int]] | None]] = [
    *((f"franz-go {release}", {int(k): (v[0], v[1]) for k, v in table.items()})
      for release, table in TABLES.items()),
    ("kclient 4.3", None),
]


async def _live(client: Client, node_id: int) -> None:
    """Wait (bounded) until the client has a live connection to ``node_id`` again."""
    slot = client._supervisor.slots[node_id]
    await until(lambda: slot.live is not None, f"a live connection to broker {node_id}")


async def _sent(client: Client, broker: EmulatedBroker, key: int,
                body: dict[str, Any] | None = None, **how: Any) -> tuple[int, Any]:
    """Send ``key`` (an empty body by default); return the version the broker received,
    and the body it decoded (``None`` for ApiVersions, answered before decoding)."""
    await _live(client, broker.node_id)
    assert broker.captured is not None
    received, captured = len(broker.received), len(broker.captured)
    with contextlib.suppress(KClientError):  # zero-length frames for what it does not serve
        await client.request(key, body or {}, broker=broker.node_id, **how)
    versions = [version for api, version in broker.received[received:] if api == key]
    assert versions, f"API {key} never reached the broker"
    bodies = [body for api, _, body in broker.captured[captured:] if api == key]
    return versions[-1], bodies[-1] if bodies else None


@pytest.mark.parametrize(("label", "table"), CASES, ids=[label for label, _ in CASES])
async def test_named_version_is_the_sent_version(label: str,
                                                 table: dict[int, tuple[int, int]] | None
                                                 ) -> None:
    specs = [BrokerSpec("4.3", "zero-length-for-unknown", apis=table, capture=True)
             for _ in range(2)]
    async with EmulatedCluster(specs) as cluster, \
            Client(cluster.bootstrap_servers, metadata_refresh_interval=None) as client:
        broker = cluster.brokers[0]
        checked: dict[str, int] = {}
        for key, support in client.view.api_ranges().items():
            if not support.available or key in (ApiKey.SASL_HANDSHAKE,
                                                ApiKey.SASL_AUTHENTICATE):
                continue
            named = client.version_for(key)
            assert named == client.version_for(key, broker=broker.node_id), support.name
            # acks=1: the emulator, like Kafka, never answers a Produce with acks=0.
            sent = {"acks": 1} if key == ApiKey.PRODUCE else None
            for how in ({}, {"cluster_wide": True}):
                version, body = await _sent(client, broker, key, sent, **how)
                assert version == named, (label, support.name, how)
                if key == ApiKey.LIST_OFFSETS:
                    assert body.replica_id == -1
            checked[support.name] = named
        assert checked["AddPartitionsToTxn"] <= 3
        assert len(checked) > 40, checked


async def test_topics_named_without_ids_are_sent_below_the_topic_id_versions() -> None:
    """Produce 13 and Fetch 13 name topics by id only: a body that gives names goes at 12."""
    table = dict(CASES[1][1] or {})  # franz-go 4.1: Produce 0-13, Fetch 4-18
    spec = BrokerSpec("4.3", "zero-length-for-unknown", apis=table, capture=True)
    async with EmulatedCluster([spec]) as cluster, \
            Client(cluster.bootstrap_servers, metadata_refresh_interval=None) as client:
        broker = cluster.brokers[0]
        # acks=1: the emulator, like Kafka, never answers a Produce with acks=0.
        by_name: dict[str, Any] = {"acks": 1, "topic_data": [{"name": "orders",
                                                              "partition_data": []}]}
        by_id: dict[str, Any] = {"acks": 1, "topic_data": [{"topic_id": uuid.uuid4(),
                                                            "partition_data": []}]}
        assert client.version_for("Produce") == 13
        for how in ({}, {"cluster_wide": True}):
            assert (await _sent(client, broker, ApiKey.PRODUCE, by_name, **how))[0] == 12
            version, body = await _sent(client, broker, ApiKey.PRODUCE, by_id, **how)
            assert version == 13 and body.topic_data[0].topic_id == by_id["topic_data"][0][
                "topic_id"]
        fetch = {"topics": [{"topic": "orders", "partitions": []}]}
        assert (await _sent(client, broker, ApiKey.FETCH, fetch))[0] == 12

