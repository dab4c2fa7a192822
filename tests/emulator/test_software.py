"""The emulator keeps the client software of every connection, as Kafka's socket server does.

Requests are built byte by byte here (KIP-511 names in ApiVersions v3), so what is
recorded is checked against the wire, not against kclient's own client.
"""

from __future__ import annotations

import asyncio
import struct

import pytest

from kclient.emulator import EmulatedBroker, EmulatedCluster
from kclient.emulator.inbound import ServerLimits
from kclient.negotiation.software import ClientSoftware
from kclient.net import Connection
from tests.waiting import until

pytestmark = pytest.mark.timeout(30)


def _api_versions(version: int, name: bytes = b"raw", soft: bytes = b"1.0", cid: int = 1
                  ) -> bytes:
    client_id = b"raw-test"
    header = struct.pack(">hhih", 18, version, cid, len(client_id)) + client_id
    if version < 3:
        return header
    body = bytes([len(name) + 1]) + name + bytes([len(soft) + 1]) + soft + b"\x00"
    return header + b"\x00" + body


def _metadata_v1(cid: int = 2) -> bytes:
    client_id = b"raw-test"
    return struct.pack(">hhih", 3, 1, cid, len(client_id)) + client_id + struct.pack(">i", -1)


async def _session(port: int, *payloads: bytes) -> list[bytes | None]:
    """Send frames one after the other on one connection; each answer (None: closed)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answers: list[bytes | None] = []
    try:
        for payload in payloads:
            writer.write(struct.pack(">i", len(payload)) + payload)
            await writer.drain()
            try:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                answers.append(await reader.readexactly(size))
            except asyncio.IncompleteReadError:
                answers.append(None)
                break
    finally:
        writer.close()
        await writer.wait_closed()
    return answers


async def _until_closed(broker: EmulatedBroker) -> None:
    await until(lambda: not broker.open_connections, "every connection closed", timeout=5)


async def test_named_and_nameless_connections_and_their_requests() -> None:
    async with EmulatedBroker(1, "3.9") as broker:
        await _session(broker.port, _api_versions(3, b"my-app", b"2.1.0"), _metadata_v1())
        await _session(broker.port, _api_versions(3, b"my-app", b"2.1.0"), _metadata_v1())
        await _session(broker.port, _api_versions(0), _metadata_v1())
        await _session(broker.port, _metadata_v1())  # no ApiVersions at all: unknown too
        await _until_closed(broker)
    seen = broker.software.seen
    app = seen[ClientSoftware("my-app", "2.1.0")]
    assert (app.connections, app.open, dict(app.requests)) == (2, 0, {(18, 3): 2, (3, 1): 2})
    unknown = seen[ClientSoftware("unknown", "unknown")]
    assert (unknown.connections, unknown.open, dict(unknown.requests)) == (
        2, 0, {(18, 0): 1, (3, 1): 2})


async def test_a_name_kafka_refuses_gets_invalid_request_and_stays_unknown() -> None:
    async with EmulatedBroker(1, "3.9") as broker:
        answer, metadata = await _session(broker.port, _api_versions(3, b"bad name!", b"1"),
                                          _metadata_v1())
        await _until_closed(broker)
    assert answer is not None and metadata is not None
    cid, error = struct.unpack_from(">ih", answer)  # response header v0, then error_code
    assert (cid, error) == (1, 42)  # INVALID_REQUEST, as KafkaApis answers
    assert set(broker.software.seen) == {ClientSoftware("unknown", "unknown")}


async def test_a_valid_name_is_still_answered_with_the_brokers_versions() -> None:
    async with EmulatedBroker(1, "3.9") as broker:
        (answer,) = await _session(broker.port, _api_versions(3, b"ok", b"1"))
    assert answer is not None and struct.unpack_from(">ih", answer) == (1, 0)


async def test_the_connections_open_now_are_counted_and_the_log_is_bounded() -> None:
    limits = ServerLimits(client_software=2)
    async with EmulatedBroker(1, "3.9", limits=limits) as broker:
        held = Connection("127.0.0.1", broker.port, client_software=("held", "1.0"))
        await held.connect()
        try:
            assert broker.software.seen[ClientSoftware("held", "1.0")].open == 1
            for name in (b"second", b"third", b"fourth"):
                await _session(broker.port, _api_versions(3, name, b"1"))
        finally:
            await held.close()
        await _until_closed(broker)
    assert set(broker.software.seen) == {ClientSoftware("held", "1.0"),
                                         ClientSoftware("second", "1")}
    assert broker.software.dropped == 2
    assert broker.software.seen[ClientSoftware("held", "1.0")].open == 0


async def test_the_cluster_adds_up_its_brokers_into_inventory_records(tmp_path: object) -> None:
    async with EmulatedCluster(["3.9", "4.0"], cluster_id="lab") as cluster:
        for broker in cluster.brokers:
            await _session(broker.port, _api_versions(3, b"my-app", b"2.1.0"), _metadata_v1())
        await asyncio.gather(*(_until_closed(b) for b in cluster.brokers))
    (use,) = cluster.inventory()
    assert (use.cluster, use.software, use.connections, use.complete) == (
        "lab", ClientSoftware("my-app", "2.1.0"), 2, True)
    assert use.requests == {(3, 1): 2, (18, 3): 2} and use.seen_in == "kclient's emulator"
    assert cluster.inventory("prod")[0].cluster == "prod"
