"""The adapters' settings are accepted by the real libraries (emulated clusters, tansu)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from kclient import SyncClient
from kclient.adapters import ConfigAdvice, cluster_facts, confluent, kafka_python
from kclient.adapters import aiokafka as aiokafka_adapter
from kclient.emulator import BrokerSpec, EmulatedCluster, ThreadedEmulator
from kclient.negotiation import (
    ApplicationVersions,
    BrokerVersions,
    ClusterView,
    fallback_broker,
    release_profile,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

# The oldest broker's release; every cluster also has a 4.1 broker.
RELEASES = ["0.10.2", "2.0", "2.8", "3.9", "4.1"]
ZSTD_FROM = (2, 1)
IDEMPOTENCE_FROM = (0, 11)


def _tuple(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


@pytest.fixture(params=RELEASES, scope="module")
def mixed(request: pytest.FixtureRequest) -> Iterator[tuple[str, ThreadedEmulator, SyncClient]]:
    release = str(request.param)
    emulator = ThreadedEmulator(EmulatedCluster([release, "4.1"], cluster_id=f"ad-{release}"))
    with emulator, SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None) as kc:
        yield release, emulator, kc


def test_import_kclient_imports_no_kafka_library() -> None:
    code = ("import sys, kclient, kclient.adapters; "
            "bad = [m for m in ('confluent_kafka', 'kafka', 'aiokafka') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_confluent_producer_config_constructs_and_reads_metadata(mixed: tuple[
        str, ThreadedEmulator, SyncClient]) -> None:
    ck = pytest.importorskip("confluent_kafka")
    release, emulator, kc = mixed
    advice = confluent.producer_config(kc)
    settings = advice.settings
    wants_zstd = _tuple(release) >= ZSTD_FROM and confluent.librdkafka_has("zstd")
    assert (settings["compression.type"] == "zstd") == wants_zstd
    assert settings["compression.type"] in ("zstd", "lz4")  # both brokers are 0.10+
    assert settings["enable.idempotence"] is (_tuple(release) >= IDEMPOTENCE_FROM)
    assert "api.version.request" not in settings
    assert set(advice.reasons) >= set(settings)
    producer = ck.Producer({"bootstrap.servers": emulator.bootstrap_servers,
                            "log_level": 0, **settings})
    metadata = producer.list_topics(timeout=15)
    assert sorted(metadata.brokers) == [1, 2]


def test_confluent_consumer_config_constructs(mixed: tuple[str, ThreadedEmulator, SyncClient]
                                              ) -> None:
    ck = pytest.importorskip("confluent_kafka")
    release, emulator, kc = mixed
    advice = confluent.consumer_config(kc)
    if release == "4.1":
        # A fresh 4.1 cluster finalizes group.version 1: the KIP-848 protocol is on.
        assert advice.settings["group.protocol"] == "consumer"
        assert "ConsumerGroupProtocol is available" in advice.reasons["group.protocol"]
    else:
        # A cluster being upgraded from an older release keeps its levels (none
        # finalized), so the classic protocol stays.
        assert "group.protocol" not in advice.settings
        assert "ConsumerGroupProtocol is unavailable" in advice.reasons["group.protocol"]
    consumer = ck.Consumer({"bootstrap.servers": emulator.bootstrap_servers,
                            "group.id": "adapters", "log_level": 0, **advice.settings})
    try:
        # The emulator has no group coordinator: librdkafka's FindCoordinator closes a
        # connection now and then (as a broker does on a request it does not know),
        # which can cut a metadata call short; a bounded retry keeps the test honest.
        for attempt in range(3):
            try:
                brokers = sorted(consumer.list_topics(timeout=15).brokers)
                break
            except ck.KafkaException:
                if attempt == 2:
                    raise
        assert brokers == [1, 2]
    finally:
        consumer.close()


def test_kafka_python_kwargs_construct_and_fetch_metadata(mixed: tuple[
        str, ThreadedEmulator, SyncClient]) -> None:
    kafka = pytest.importorskip("kafka")
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    release, emulator, kc = mixed
    advice = kafka_python.producer_kwargs(kc)
    assert advice.settings["api_version"] == _tuple(release)
    assert advice.settings["enable_idempotence"] is (_tuple(release) >= IDEMPOTENCE_FROM)
    expected_codec = next(c for c in ("zstd", "lz4", "snappy", "gzip")
                          if kafka_python.kafka_python_has(c)
                          and (c != "zstd" or _tuple(release) >= ZSTD_FROM))
    assert advice.settings["compression_type"] == expected_codec
    producer = kafka.KafkaProducer(bootstrap_servers=emulator.bootstrap_servers,
                                   request_timeout_ms=10000, **advice.settings)
    producer.close(timeout=5)
    consumer_advice = kafka_python.consumer_kwargs(kc)
    consumer = kafka.KafkaConsumer(bootstrap_servers=emulator.bootstrap_servers,
                                   request_timeout_ms=10000, **consumer_advice.settings)
    try:
        assert consumer.topics() == set()
    finally:
        consumer.close()


def test_aiokafka_kwargs_start_a_producer(mixed: tuple[str, ThreadedEmulator, SyncClient]
                                          ) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    release, emulator, kc = mixed
    advice = aiokafka_adapter.producer_kwargs(kc)
    assert "api_version" not in advice.settings
    assert "no-op" in advice.reasons["api_version"]
    settings = advice.settings
    assert settings["enable_idempotence"] is (_tuple(release) >= IDEMPOTENCE_FROM)
    settings["enable_idempotence"] = False  # the emulator has no producer ids to hand out

    async def run() -> list[int]:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=emulator.bootstrap_servers,
                                             request_timeout_ms=10000, **settings)
        await asyncio.wait_for(producer.start(), 20)
        try:
            return sorted(b.nodeId for b in producer.client.cluster.brokers())
        finally:
            await asyncio.wait_for(producer.stop(), 20)

    assert asyncio.run(run()) == [1, 2]


def test_unknown_verdict_enables_nothing() -> None:
    silent = BrokerVersions(2, "127.0.0.1", 9, error="connection refused")
    view = ClusterView((fallback_broker("4.1", 1, "127.0.0.1", 9092), silent))
    facts = cluster_facts(view)
    assert facts.oldest_release().number is None
    for advice in (confluent.producer_config(view), kafka_python.producer_kwargs(view),
                   aiokafka_adapter.producer_kwargs(view)):
        assert isinstance(advice, ConfigAdvice)
        idempotence = next(k for k in advice.reasons if "idempotence" in k)
        assert advice.settings[idempotence] is False
        assert "unknown" in advice.reasons[idempotence]
        codec = next(k for k in advice.settings if "compression" in k)
        assert advice.settings[codec] in ("snappy", "gzip")  # zstd and lz4 unknown
        assert "ZSTD is unknown" in advice.reasons[codec]
        assert any("not answered" in w for w in advice.warnings)
    assert "api_version" not in kafka_python.producer_kwargs(view).settings
    assert "probes" in kafka_python.producer_kwargs(view).reasons["api_version"]


def test_legacy_broker_turns_api_version_request_off() -> None:
    ck = pytest.importorskip("confluent_kafka")
    emulator = ThreadedEmulator(EmulatedCluster(["0.9.0:legacy", "2.8"]))
    with emulator, SyncClient(emulator.bootstrap_servers, api_version_fallback="0.9.0",
                              metadata_refresh_interval=None) as kc:
        advice = confluent.producer_config(kc)
        assert advice.settings["api.version.request"] is False
        assert advice.settings["broker.version.fallback"] == "0.9.0"
        assert any("deprecated" in w for w in advice.warnings)
        ck.Producer({"bootstrap.servers": emulator.bootstrap_servers, "log_level": 0,
                     **advice.settings})
        assert kafka_python.producer_kwargs(kc).settings["api_version"] == (0, 9)


def test_consumer_group_protocol_when_group_version_is_finalized() -> None:
    ck = pytest.importorskip("confluent_kafka")
    spec = BrokerSpec("4.1", finalized_features={"group.version": (1, 1)},
                      supported_features={"group.version": (0, 1)})
    emulator = ThreadedEmulator(EmulatedCluster([spec, spec]))
    with emulator, SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None) as kc:
        advice = confluent.consumer_config(kc)
    assert advice.settings["group.protocol"] == "consumer"
    consumer = ck.Consumer({"bootstrap.servers": emulator.bootstrap_servers,
                            "group.id": "kip848", "log_level": 0, **advice.settings})
    consumer.close()


# -- tansu: a real broker takes the settings end to end ------------------------------------


def test_kafka_python_round_trip_on_tansu(tansu: object) -> None:
    kafka = pytest.importorskip("kafka")
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    bootstrap = tansu.bootstrap  # type: ignore[attr-defined]
    with SyncClient(bootstrap, metadata_refresh_interval=None) as kc:
        producer_advice = kafka_python.producer_kwargs(kc)
        consumer_advice = kafka_python.consumer_kwargs(kc)
    topic = f"adapters-{uuid.uuid4().hex[:8]}"
    admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000,
                                   **consumer_advice.settings)
    try:
        admin.create_topics([kafka.admin.NewTopic(topic, 1, 1)])
    finally:
        admin.close()
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10000,
                                   **producer_advice.settings)
    try:
        producer.send(topic, b"hello from kclient").get(timeout=20)
    finally:
        producer.close(timeout=10)
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap,
                                   auto_offset_reset="earliest", consumer_timeout_ms=1000,
                                   request_timeout_ms=10000, **consumer_advice.settings)
    try:
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while not values and time.monotonic() < deadline:
            values.extend(r.value for r in consumer)
    finally:
        consumer.close()
    assert values == [b"hello from kclient"]


def test_confluent_round_trip_on_tansu(tansu: object) -> None:
    ck = pytest.importorskip("confluent_kafka")
    bootstrap = tansu.bootstrap  # type: ignore[attr-defined]
    with SyncClient(bootstrap, metadata_refresh_interval=None) as kc:
        producer_advice = confluent.producer_config(kc)
        consumer_advice = confluent.consumer_config(kc)
    topic = f"adapters-{uuid.uuid4().hex[:8]}"
    admin = ck.admin.AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    for future in admin.create_topics([ck.admin.NewTopic(topic, 1, 1)],
                                      request_timeout=15).values():
        future.result(timeout=20)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0,
                            **producer_advice.settings})
    producer.produce(topic, b"hello from kclient")
    assert producer.flush(20) == 0
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": topic,
                            "auto.offset.reset": "earliest", "log_level": 0,
                            **consumer_advice.settings})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        message = None
        while message is None and time.monotonic() < deadline:
            polled = consumer.poll(1.0)
            if polled is not None and polled.error() is None:
                message = polled
    finally:
        consumer.close()
    assert message is not None and message.value() == b"hello from kclient"


@pytest.mark.parametrize(("adapter", "library", "packages"), [
    (kafka_python, "kafka-python", {"zstd": "zstandard", "lz4": "lz4",
                                    "snappy": "python-snappy"}),
    (aiokafka_adapter, "aiokafka", {"zstd": "cramjam", "lz4": "cramjam", "snappy": "cramjam"}),
])
def test_a_codec_the_library_cannot_use_names_the_missing_package(
        adapter: object, library: str, packages: dict[str, str]) -> None:
    """The real cause: not "kafka-python lacks zstd" but the package it imports for zstd."""
    import importlib.util

    pytest.importorskip("kafka" if library == "kafka-python" else "aiokafka")
    view = ClusterView([BrokerVersions(1, "h", 9092, release_profile("3.9"))],
                       ApplicationVersions.from_catalog(), name="c")
    advice = adapter.producer_kwargs(view)  # type: ignore[attr-defined]
    reason = advice.reasons["compression_type"]
    order = ("zstd", "lz4", "snappy", "gzip")
    chosen = order.index(advice.settings["compression_type"])
    has = adapter.kafka_python_has if library == "kafka-python" else (  # type: ignore[attr-defined]
        adapter.aiokafka_has)  # type: ignore[attr-defined]
    for codec in ("zstd", "lz4", "snappy"):
        package = packages[codec]
        said = (f"not {codec}: the {package} package {library} needs for it is not installed "
                f"(pip install {package})")
        # kafka-python's snappy module is python-snappy's "snappy"; the others match.
        module = {"python-snappy": "snappy"}.get(package, package)
        installed = importlib.util.find_spec(module) is not None
        assert has(codec) is installed, (codec, package)
        # A codec before the chosen one is skipped with its cause; the cluster (3.9)
        # takes every codec, so the package is the only cause.
        assert (said in reason) is (not installed and order.index(codec) < chosen), reason
    assert packages == adapter.CODEC_PACKAGES  # type: ignore[attr-defined]
    assert "lacks it" not in reason
