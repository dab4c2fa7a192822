"""The adapters judge with the installed library's profile: they never advise what it cannot do."""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import logging
import re

import pytest

from kclient import Client, SyncClient
from kclient.adapters import aiokafka as aiokafka_adapter
from kclient.adapters import cluster_facts, confluent, kafka_python
from kclient.emulator import BrokerSpec, EmulatedCluster, ThreadedEmulator
from kclient.errors import ConfigError, UnsupportedVersionError
from kclient.installed import installed_profile, installed_version, resolve_application
from kclient.negotiation import BrokerVersions, ClusterView, fallback_broker
from kclient.negotiation.clients import (
    application_for,
    client_profile,
    judge_for_client,
    known_clients,
)
from kclient.negotiation.releases import release_profile
from kclient.negotiation.verdict import Verdict
from kclient.protocol.constants import ApiKey


def _no_initproducerid_v0() -> ClusterView:
    """A 4.0 broker that takes InitProducerId v1-v5 only (kclient's own range would use v5)."""
    base = fallback_broker("4.0", 1, "b1", 9092)
    broker = BrokerVersions(1, "b1", 9092, {**base.apis, ApiKey.INIT_PRODUCER_ID: (1, 5)})
    return ClusterView([broker])


def test_aiokafka_idempotence_is_not_advised_where_v0_is_not_taken() -> None:
    pytest.importorskip("aiokafka")
    view = _no_initproducerid_v0()
    # kclient itself could use idempotence here ...
    assert cluster_facts(view).gate("IdempotentProducer")[0]
    # ... aiokafka, which sends InitProducerId v0 only, cannot.
    advice = aiokafka_adapter.producer_kwargs(view)
    assert advice.settings["enable_idempotence"] is False
    reason = advice.reasons["enable_idempotence"]
    assert "IdempotentProducer is unavailable" in reason
    assert "InitProducerId" in reason and "aiokafka" in reason


def test_aiokafka_idempotence_is_advised_where_v0_is_taken() -> None:
    pytest.importorskip("aiokafka")
    view = ClusterView([fallback_broker("4.0", 1, "b1", 9092),
                        fallback_broker("2.8", 2, "b2", 9092)])
    advice = aiokafka_adapter.producer_kwargs(view)
    assert advice.settings["enable_idempotence"] is True
    version = importlib.metadata.version("aiokafka")
    assert f"for aiokafka {version}" in advice.reasons["enable_idempotence"]


def test_kafka_python_and_librdkafka_judge_with_their_own_profiles() -> None:
    pytest.importorskip("kafka")
    ck = pytest.importorskip("confluent_kafka")
    view = _no_initproducerid_v0()
    # kafka-python 3.x sends InitProducerId 0-4 and librdkafka 0-4: v1-v4 are shared.
    assert kafka_python.producer_kwargs(view).settings["enable_idempotence"] is True
    assert confluent.producer_config(view).settings["enable.idempotence"] is True
    assert installed_version("confluent-kafka") == str(ck.libversion()[0])


def test_a_library_that_does_not_use_a_feature_never_gets_it() -> None:
    view = ClusterView([fallback_broker("4.0", 1, "b1", 9092)])
    facts = cluster_facts(view, profile=client_profile("kafka-python==2.0.2"))
    usable, why = facts.gate("IdempotentProducer")
    assert not usable and "kafka-python 2.0.2 does not use IdempotentProducer" in why


def test_resolve_application_accepts_the_documented_forms() -> None:
    pytest.importorskip("aiokafka")
    aiokafka = application_for("aiokafka==0.14.0")
    assert resolve_application(None) is None
    assert resolve_application(aiokafka) is aiokafka
    assert resolve_application(client_profile("aiokafka==0.14.0")) == aiokafka
    assert resolve_application("installed:aiokafka") == installed_profile("aiokafka").application()
    with pytest.raises(ConfigError, match="not a Python library"):
        resolve_application("installed:kafkajs")
    with pytest.raises(ConfigError, match="application must be a client"):
        resolve_application(3)  # type: ignore[arg-type]


def test_client_answers_for_the_application_it_names() -> None:
    emulator = ThreadedEmulator(EmulatedCluster(["4.0", "2.8"], cluster_id="profiles"))
    with emulator, SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None,
                              application="aiokafka==0.14.0") as kc:
        assert kc.version_for("InitProducerId") == 0
        assert kc.version_for("Produce") == 7
        assert kc.supports("IdempotentProducer")
        assert "available" in kc.explain("IdempotentProducer")
    with emulator, SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None) as kc:
        assert kc.version_for("InitProducerId") > 0  # kclient's own range


def test_client_refuses_application_with_version_limits() -> None:
    with pytest.raises(ConfigError, match="give one or the other"):
        Client("127.0.0.1:9", application="aiokafka==0.14.0", max_versions={"Produce": 3})


def test_cluster_view_takes_a_client_as_the_application() -> None:
    view = ClusterView([fallback_broker("3.9", 1, "b1", 9092)], application_for("kafkajs==2.2.4"))
    support = view.api_support("Fetch")
    assert support.state is Verdict.AVAILABLE and support.version == 11


def test_installed_librdkafka_sends_what_its_profile_predicts() -> None:
    """A live capture from librdkafka's own protocol log against an emulated 4.0 + 2.8 cluster."""
    ck = pytest.importorskip("confluent_kafka")
    profile = installed_profile("librdkafka")
    lines: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger("tests.librdkafka.capture")
    logger.addHandler(Capture())
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    emulator = ThreadedEmulator(EmulatedCluster(["4.0", "2.8"], cluster_id="capture"))
    with emulator, SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None) as kc:
        brokers = {b.address: b for b in kc.view.brokers}
        producer = ck.Producer({"bootstrap.servers": emulator.bootstrap_servers,
                                "debug": "protocol", "logger": logger})
        producer.list_topics(timeout=10)
        producer.flush(1)
        del producer
    sent = [(m.group(1), m.group(2), int(m.group(3))) for line in lines
            if (m := re.search(r"(\d+\.\d+\.\d+\.\d+:\d+)/\w+: Sent (\w+)Request \(v(\d+)", line))]
    assert sent, "librdkafka logged no request"
    seen = set()
    for address, name, version in sent:
        broker = brokers[address]
        key = {"ApiVersion": ApiKey.API_VERSIONS, "Metadata": ApiKey.METADATA}[name]
        cell = profile.apis[key]
        assert cell.range.min <= version <= cell.range.max
        expected = judge_for_client(profile, [broker], key).version
        if key == ApiKey.API_VERSIONS:
            assert version == cell.range.max  # it starts at its newest (v3)
        else:  # the highest both speak, or 10 when librdkafka leaves topic ids out
            assert version in (expected, 10), (address, name, version, expected)
        seen.add(name)
    assert seen == {"ApiVersion", "Metadata"}


async def _idempotent_send(bootstrap: str) -> str | None:
    """Start a real idempotent aiokafka producer and send one record: None, or the failure."""
    aiokafka = importlib.import_module("aiokafka")
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True,
                                         request_timeout_ms=5000)
    try:
        async with asyncio.timeout(30):
            await producer.start()
            await producer.send_and_wait("profiles", b"x")
    except Exception as exc:  # the library's own failure is the evidence
        return f"{type(exc).__name__}: {exc}"
    finally:
        async with asyncio.timeout(30):
            await producer.stop()
    return None


@pytest.mark.integration
def test_real_aiokafka_fails_exactly_where_the_adapter_withholds_idempotence() -> None:
    pytest.importorskip("aiokafka")
    profile = installed_profile("aiokafka")
    apis = {k: (r.min, r.max) for k, r in release_profile("4.0").items()}
    no_v0 = {**apis, ApiKey.INIT_PRODUCER_ID: (1, 5)}
    for spec, works in ((BrokerSpec("4.0", capture=True), True),
                        (BrokerSpec("4.0", apis=no_v0, capture=True), False)):
        cluster = EmulatedCluster([spec], cluster_id="aiokafka-idempotence")
        with ThreadedEmulator(cluster) as emulator:
            with SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None) as kc:
                advice = aiokafka_adapter.producer_kwargs(kc)
                broker = kc.view.brokers[0]
            captured = cluster.brokers[0].captured
            assert captured is not None
            captured.clear()  # from here on, only what aiokafka sends
            failure = asyncio.run(_idempotent_send(emulator.bootstrap_servers))
        assert advice.settings["enable_idempotence"] is works, advice.reasons
        assert (failure is None) is works, failure
        if not works:
            assert failure is not None and "InitProducerId" in failure
        # What the real library put on the wire is what its profile predicts.
        sent = {(key, version) for key, version, _ in captured}
        assert (ApiKey.PRODUCE, 7) in sent or not works
        for key, version in sent:
            assert version == judge_for_client(profile, [broker], key).version, (key, version)


@pytest.mark.integration
def test_real_kafka_python_sends_what_its_profile_predicts() -> None:
    kafka = pytest.importorskip("kafka")
    profile = installed_profile("kafka-python")
    cluster = EmulatedCluster([BrokerSpec("4.0", capture=True)], cluster_id="kafka-python")
    with ThreadedEmulator(cluster) as emulator:
        with SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None) as kc:
            advice = kafka_python.producer_kwargs(kc)
            broker = kc.view.brokers[0]
        captured = cluster.brokers[0].captured
        assert captured is not None
        captured.clear()  # from here on, only what kafka-python sends
        producer = kafka.KafkaProducer(bootstrap_servers=emulator.bootstrap_servers,
                                       enable_idempotence=advice.settings["enable_idempotence"],
                                       request_timeout_ms=5000, max_block_ms=10000)
        try:
            producer.send("profiles", b"x").get(timeout=15)
        finally:
            producer.close(timeout=5)
    sent = {(key, version) for key, version, _ in captured}
    assert {ApiKey.PRODUCE, ApiKey.METADATA, ApiKey.INIT_PRODUCER_ID} <= {k for k, _ in sent}
    for key, version in sent:
        assert version == judge_for_client(profile, [broker], key).version, (key, version)


@pytest.mark.integration
@pytest.mark.parametrize("release", ["2.0", "3.9", "4.0"])
def test_python_api_for_each_client_agrees_with_its_profile(release: str) -> None:
    keys = (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA, ApiKey.INIT_PRODUCER_ID,
            ApiKey.JOIN_GROUP, ApiKey.OFFSET_COMMIT, ApiKey.CONSUMER_GROUP_HEARTBEAT)
    checked = 0
    with ThreadedEmulator(EmulatedCluster([release], cluster_id=f"api-{release}")) as emulator:
        for library in known_clients():
            profile = client_profile(library)
            with SyncClient(emulator.bootstrap_servers, metadata_refresh_interval=None,
                            application=library) as kc:
                brokers = list(kc.view.brokers)
                for key in keys:
                    if key not in profile.apis:
                        continue
                    expected = judge_for_client(profile, brokers, key).version
                    checked += 1
                    if expected is None:
                        with pytest.raises(UnsupportedVersionError):
                            kc.version_for(key)
                    else:
                        assert kc.version_for(key) == expected, (library, release, key)
    assert checked >= 6 * len(known_clients())
