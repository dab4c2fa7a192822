"""The emulator refuses what Kafka refuses: the rules table, and the produce / fetch rules on
the wire for the releases whose answers differ (a closed connection or an error code)."""

from __future__ import annotations

import itertools
import re
import time
from pathlib import Path

import pytest

from kclient.emulator import EmulatedBroker, EmulatedCluster, ThreadedEmulator
from kclient.emulator.rules import RULES, check_fetch, release_at_least, rule
from kclient.errors import KClientError
from kclient.net import Connection
from kclient.protocol.constants import ApiKey
from kclient.protocol.constants import ErrorCode as E

from .batches import fetch_body, produce_body, record_batch

pytestmark = pytest.mark.timeout(30)
TESTS = Path(__file__).parent


def test_every_rule_has_a_source_and_an_existing_test() -> None:
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    for item in RULES:
        assert item.source and item.refuses and item.answers, item.name
        for test in item.tests:
            path, _, function = test.partition("::")
            text = (TESTS.parent.parent / path).read_text()
            assert re.search(rf"^(async )?def {function}\(", text, re.M), test
        releases = [a.since for a in item.answers]
        assert all(release_at_least(b, a) for a, b in itertools.pairwise(releases))


def test_answers_by_era() -> None:
    magic = rule("produce-magic")
    assert magic.answer("0.10.2") is None
    assert magic.answer("2.0").code is None  # type: ignore[union-attr]  # closes
    assert magic.answer("2.3").code == E.CORRUPT_MESSAGE  # type: ignore[union-attr]
    assert magic.answer("3.7-kraft").code == E.INVALID_RECORD  # type: ignore[union-attr]


async def _produce(release: str, records: bytes, version: int) -> int:
    """The partition error of a Produce to a broker of ``release`` (-2: it closed)."""
    async with EmulatedBroker(1, release) as broker, Connection("127.0.0.1",
                                                                broker.port) as conn:
        broker.state.create_topic("t", 1)
        try:
            answer = await conn.request("Produce", produce_body("t", records), version)
        except KClientError:
            return -2
        code: int = answer.responses[0].partition_responses[0].error_code
        stored = broker.state.topics["t"].partitions[0].high_watermark
        assert (stored > 0) == (code == E.NONE)
        return code


@pytest.mark.parametrize(("release", "expected"), [("2.0", -2), ("2.2", E.CORRUPT_MESSAGE),
                                                   ("3.9", E.INVALID_RECORD)])
async def test_produce_magic_1_in_v3(release: str, expected: int) -> None:
    assert await _produce(release, record_batch(2, magic=1), 3) == expected
    assert await _produce(release, record_batch(2, magic=1), 2) == E.NONE  # v2 takes it


async def test_record_batches_before_0_11() -> None:
    assert await _produce("0.10.2", record_batch(2), 2) == E.CORRUPT_MESSAGE
    assert await _produce("0.10.2", record_batch(2, magic=1), 2) == E.NONE
    assert await _produce("0.11", record_batch(2), 2) == E.NONE


@pytest.mark.parametrize(("release", "expected"), [("0.11", -2), ("2.4", E.INVALID_RECORD)])
async def test_produce_two_batches_in_v3(release: str, expected: int) -> None:
    assert await _produce(release, record_batch(1) + record_batch(1), 3) == expected
    assert await _produce(release, b"", 3) == expected


@pytest.mark.parametrize(("release", "version", "expected"), [
    ("2.1", 6, -2), ("3.9", 6, E.UNSUPPORTED_COMPRESSION_TYPE), ("3.9", 7, E.NONE),
    ("4.0", 3, E.UNSUPPORTED_COMPRESSION_TYPE)])
async def test_zstd_needs_produce_v7(release: str, version: int, expected: int) -> None:
    assert await _produce(release, record_batch(2, codec=4), version) == expected


async def test_zstd_before_2_1_is_unknown() -> None:
    assert await _produce("2.0", record_batch(2, codec=4), 6) == E.UNKNOWN_SERVER_ERROR
    assert await _produce("2.0", record_batch(2), 6) == E.NONE


async def test_transactional_batch_without_transactional_id() -> None:
    records = record_batch(1, producer_id=7, epoch=0, sequence=0, transactional=True)
    assert await _produce("3.9", records, 9) == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


async def test_fetch_of_a_zstd_topic() -> None:
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        created = await conn.request("CreateTopics", {"topics": [
            {"name": "z", "num_partitions": 1, "replication_factor": 1, "configs": [
                {"name": "compression.type", "value": "zstd"}]},
            {"name": "plain", "num_partitions": 1, "replication_factor": 1}],
            "timeout_ms": 1000}, 7)
        assert [t.error_code for t in created.topics] == [0, 0]
        for name in ("z", "plain"):
            answer = await conn.request("Produce", produce_body(name, record_batch(
                2, codec=4)), 9)
            assert answer.responses[0].partition_responses[0].error_code == E.NONE
        for version, zstd_topic in ((4, E.UNSUPPORTED_COMPRESSION_TYPE),
                                    (9, E.UNSUPPORTED_COMPRESSION_TYPE), (10, E.NONE)):
            refused = await conn.request("Fetch", fetch_body("z"), version)
            part = refused.responses[0].partitions[0]
            assert part.error_code == zstd_topic, version
            assert bool(part.records) == (zstd_topic == E.NONE)
            plain = await conn.request("Fetch", fetch_body("plain"), version)
            assert plain.responses[0].partitions[0].error_code == E.NONE  # default topic
            assert plain.responses[0].partitions[0].records


def test_kafka_python_fetch_v8_reads_a_default_topic_but_not_a_zstd_one() -> None:
    """kafka-python told ``api_version=(2, 0, 0)`` fetches with v8, as a 2.0-era client
    does: Kafka serves it a topic configured compression.type=producer (the default) and
    refuses a zstd topic with UNSUPPORTED_COMPRESSION_TYPE (KIP-110)."""
    kafka = pytest.importorskip("kafka")
    from kclient.emulator.records import read_record_set

    def consume(bootstrap: str, topic: str) -> list[bytes]:
        consumer = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap,
                                       api_version=(2, 0, 0), auto_offset_reset="earliest",
                                       request_timeout_ms=5000)
        got: list[bytes] = []
        try:
            until = time.monotonic() + 10
            while not got and time.monotonic() < until:
                for records in consumer.poll(200).values():
                    got.extend(r.value for r in records)
        finally:
            consumer.close()
        return got

    with ThreadedEmulator(EmulatedCluster(["3.9"])) as emulator:
        state = emulator.cluster.state
        for name, configs in (("plain", {}), ("z", {"compression.type": "zstd"})):
            state.create_topic(name, 1, configs=configs)
            state.topics[name].partitions[0].append(read_record_set(record_batch(1)))
        assert consume(emulator.bootstrap_servers, "plain") == [b"v"]
        with pytest.raises(kafka.errors.UnsupportedCompressionTypeError):
            consume(emulator.bootstrap_servers, "z")
        fetches = {v for b in emulator.cluster.brokers for k, v in b.received
                   if k == ApiKey.FETCH}
        assert fetches == {8}


async def test_fetch_v3_of_magic_2_batches() -> None:
    async with EmulatedBroker(1, "2.0") as broker, Connection("127.0.0.1", broker.port) as conn:
        broker.state.create_topic("t", 1)
        broker.state.create_topic("old", 1)
        await conn.request("Produce", produce_body("t", record_batch(1)), 6)
        await conn.request("Produce", produce_body("old", record_batch(1, magic=1)), 2)
        for version, expected in ((3, E.UNSUPPORTED_VERSION), (4, E.NONE)):
            answer = await conn.request("Fetch", fetch_body("t"), version)
            assert answer.responses[0].partitions[0].error_code == expected
        old = await conn.request("Fetch", fetch_body("old"), 3)  # magic 1 is readable
        assert old.responses[0].partitions[0].error_code == E.NONE
    assert check_fetch(3, "producer", [2], [4], "2.0") == E.UNSUPPORTED_COMPRESSION_TYPE
    assert check_fetch(1, "producer", [1], [0], "2.0") == E.UNSUPPORTED_VERSION


def test_the_api_reference_lists_every_rule() -> None:
    page = (TESTS.parent.parent / "docs" / "reference" / "python-api.md").read_text()
    section = page[page.index("### What the emulator refuses"):]
    section = section[:section.index("### What the emulator does not model")]
    listed = re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.M)
    assert listed == [r.name for r in RULES]
