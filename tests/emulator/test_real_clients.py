"""Real Kafka clients complete a metadata call against the emulator.

librdkafka (confluent-kafka) and kafka-python are independent implementations of
the protocol: if they accept the emulator's ApiVersions and Metadata answers, the
emulator speaks real Kafka.
"""

from __future__ import annotations

import logging

import pytest

from kclient.emulator import EmulatedCluster, ThreadedEmulator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

RELEASES = ["2.8", "3.9", "4.1"]


@pytest.fixture(params=RELEASES)
def emulated(request: pytest.FixtureRequest) -> ThreadedEmulator:
    release = str(request.param)
    emulator = ThreadedEmulator(EmulatedCluster([release, release], cluster_id=f"emu-{release}"))
    emulator.start()
    request.addfinalizer(emulator.stop)
    return emulator


def test_confluent_kafka_lists_topics(emulated: ThreadedEmulator) -> None:
    admin_module = pytest.importorskip("confluent_kafka.admin")
    admin = admin_module.AdminClient({
        "bootstrap.servers": emulated.cluster.brokers[0].address,
        "api.version.request": True,
        "socket.timeout.ms": 5000,
        "log_level": 0,
    })
    metadata = admin.list_topics(timeout=15)
    assert sorted(metadata.brokers) == [1, 2]
    assert {(b.host, b.port) for b in metadata.brokers.values()} == {
        ("127.0.0.1", b.port) for b in emulated.cluster.brokers}
    assert metadata.cluster_id == emulated.cluster.cluster_id
    assert metadata.topics == {}
    # librdkafka asked ApiVersions first, then Metadata.
    received = emulated.cluster.brokers[0].received
    assert received[0][0] == 18 and any(key == 3 for key, _ in received)


def test_kafka_python_fetches_metadata(emulated: ThreadedEmulator) -> None:
    kafka = pytest.importorskip("kafka")
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    client = kafka.KafkaAdminClient(
        bootstrap_servers=emulated.cluster.brokers[0].address,
        request_timeout_ms=10000,
    )
    try:
        assert client.list_topics() == []
        brokers = client._client.cluster.brokers()
        assert sorted((b.node_id, b.host, b.port) for b in brokers) == [
            (b.node_id, "127.0.0.1", b.port) for b in emulated.cluster.brokers]
    finally:
        client.close()
    keys = {key for b in emulated.cluster.brokers for key, _ in b.received}
    assert 18 in keys and 3 in keys
