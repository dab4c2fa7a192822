"""Kafka 4's group protocols with real clients on emulated clusters, and what went on the wire.

librdkafka (confluent-kafka) with ``group.protocol=consumer`` (KIP-848): consumers of one
group share the partitions, a third one joins and partitions move to it, every message
is consumed once.  librdkafka's share consumer (KIP-932, confluent-kafka 2.15+): two
members share a topic's records, a released record is delivered again, every record is
accepted once.  kclient's own ``request()`` drives a share group through its life.  Each
test checks that every (API, version) the client sent is the one kclient predicted: the
library's profile (:func:`tests.emulator.real_clients.unpredicted`) or ``version_for``.
The clusters run at their release's default feature levels (a fresh cluster of 4.0
finalizes ``group.version`` 1, of 4.2 ``share.version`` 1).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from kclient.emulator import BrokerSpec, EmulatedCluster, ThreadedEmulator
from kclient.emulator.records import read_record_set
from kclient.errors import ConfigError
from kclient.negotiation.clients import client_lines, client_profile
from kclient.net import Client
from kclient.protocol.catalog import default_catalog
from kclient.protocol.constants import ApiKey, ErrorCode
from tests.emulator.real_clients import merged_table, unpredicted
from tests.emulator.test_emulator_apis import batch
from tests.waiting import wait_until

pytestmark = pytest.mark.timeout(120)

TOPIC = "jobs"
#: Longest wait for a rebalance or for the messages (each test stays well under it).
DEADLINE = 30.0


def _librdkafka_profile() -> Any:
    """The profile whose versions the librdkafka under test must send.  The newest
    profiled line (2.15, read at v2.15.0) stands for a newer installed librdkafka here:
    its consumer-protocol and share-consumer requests are built with the same version
    ranges (ConsumerGroupHeartbeat 1, ShareGroupHeartbeat/ShareFetch/ShareAcknowledge 1
    in src/rdkafka_request.c and src/rdkafka_fetcher.c), and any other version it sends
    that the line does not predict fails the test."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    installed = confluent_kafka.libversion()[0]
    newest = client_lines("librdkafka")[-1]
    if tuple(int(p) for p in installed.split(".")[:2]) < (2, 10):
        pytest.skip(f"librdkafka {installed} has no KIP-848 consumer (2.10+)")
    try:
        return client_profile(f"librdkafka=={installed}")
    except ConfigError:
        return newest


def _produce(bootstrap: str, count: int, prefix: str, partitions: int) -> None:
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    common = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000}
    admin = AdminClient(common)
    if TOPIC not in admin.list_topics(timeout=10).topics:
        for future in admin.create_topics([NewTopic(TOPIC, partitions, 1)]).values():
            future.result(10)
    producer = confluent_kafka.Producer({**common, "linger.ms": 5})
    for i in range(count):
        producer.produce(TOPIC, key=f"{prefix}{i}", value=f"{prefix}{i}".encode())
    assert producer.flush(15) == 0


def test_librdkafka_consumers_share_a_kip848_group_and_a_third_takes_partitions() -> None:
    import confluent_kafka

    profile = _librdkafka_profile()
    with ThreadedEmulator(EmulatedCluster(["4.0", "4.0"])) as emulator:
        bootstrap = emulator.bootstrap_servers
        _produce(bootstrap, 30, "a", partitions=6)
        config = {"bootstrap.servers": bootstrap, "group.id": "kip848",
                  "group.protocol": "consumer", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "socket.timeout.ms": 5000}
        consumers: list[Any] = []
        got: dict[bytes, list[int]] = {}

        def join() -> None:
            consumer = confluent_kafka.Consumer(config)
            consumer.subscribe([TOPIC])
            consumers.append(consumer)

        def poll_all() -> None:
            for index, consumer in enumerate(consumers):
                batch_ = [m for m in consumer.consume(100, 0.05) if m.error() is None]
                for message in batch_:
                    got.setdefault(message.value(), []).append(index)
                if batch_:  # committed before the next poll may revoke a partition
                    consumer.commit(asynchronous=False)

        def owned() -> list[set[int]]:
            return [{tp.partition for tp in c.assignment()} for c in consumers]

        def balanced(size: int) -> bool:
            poll_all()
            parts = owned()
            return (sorted(map(len, parts)) == [size] * len(parts)
                    and set().union(*parts) == set(range(6)))

        try:
            join()
            join()
            wait_until(lambda: balanced(3), "two consumers share the six partitions", DEADLINE)
            wait_until(lambda: len(got) == 30 or poll_all(), "the first 30 messages", DEADLINE)
            before = owned()
            join()
            wait_until(lambda: balanced(2), "three consumers share the partitions", DEADLINE)
            assert all(len(after - was) == 0 for after, was in zip(owned(), before, strict=False))
            _produce(bootstrap, 30, "b", partitions=6)
            wait_until(lambda: len(got) == 60 or poll_all(), "all 60 messages", DEADLINE)
            assert any(index == 2 for readers in got.values() for index in readers)
        finally:
            for consumer in consumers:
                consumer.close()
        assert sorted(got) == sorted(f"{p}{i}".encode() for p in "ab" for i in range(30))
        assert all(len(readers) == 1 for readers in got.values()), "consumed twice"
        group = emulator.cluster.state.consumer.groups["kip848"]
        assert group.members == {} and group.group_epoch >= 3
        sent = merged_table(emulator)
        assert sent[ApiKey.CONSUMER_GROUP_HEARTBEAT] == [1]
        assert ApiKey.JOIN_GROUP not in sent and min(sent[ApiKey.OFFSET_COMMIT]) >= 9
        assert unpredicted(profile, emulator) == []


def test_librdkafka_share_consumers_share_records_and_a_released_one_comes_back() -> None:
    import confluent_kafka

    if not hasattr(confluent_kafka, "ShareConsumer"):
        pytest.skip("confluent-kafka has a share consumer from 2.15.0")
    profile = _librdkafka_profile()
    cluster = EmulatedCluster(["4.2", "4.2"])
    cluster.state.share.set_auto_offset_reset("queue", "earliest")
    with ThreadedEmulator(cluster) as emulator:
        bootstrap = emulator.bootstrap_servers
        _produce(bootstrap, 0, "m", partitions=3)  # the topic, empty
        config = {"bootstrap.servers": bootstrap, "group.id": "queue",
                  "share.acknowledgement.mode": "explicit", "socket.timeout.ms": 5000}
        consumers = [confluent_kafka.ShareConsumer(config) for _ in range(2)]
        accepted: dict[bytes, list[int]] = {}
        deliveries: dict[bytes, list[int]] = {}

        def poll_all() -> None:
            for index, consumer in enumerate(consumers):
                messages = [m for m in consumer.poll(0.1) if m.error() is None]
                for message in messages:
                    value = message.value()
                    deliveries.setdefault(value, []).append(message.delivery_count())
                    if value == b"m3" and len(deliveries[value]) == 1:
                        consumer.acknowledge(message, confluent_kafka.AcknowledgeType.RELEASE)
                    else:
                        accepted.setdefault(value, []).append(index)
                        consumer.acknowledge(message)
                if messages:
                    consumer.commit_sync(10)

        group = emulator.cluster.state.share

        shared: list[set[int]] = []

        def both_assigned() -> bool:
            poll_all()
            members = group.groups["queue"].members if "queue" in group.groups else {}
            epoch = group.groups["queue"].assignment_epoch if members else -1
            if len(members) != 2 or not all(m.member_epoch == epoch and m.assigned
                                            for m in members.values()):
                return False
            shared[:] = [set().union(*m.assigned.values()) for m in members.values()]
            return True

        try:
            for consumer in consumers:
                consumer.subscribe([TOPIC])
            # Both members hold partitions (2 and 1 of 3) before the records come.
            wait_until(both_assigned, "both members assigned", DEADLINE)
            _produce(bootstrap, 30, "m", partitions=3)
            wait_until(lambda: len(accepted) == 30 or poll_all(), "every record accepted",
                       DEADLINE)
        finally:
            for consumer in consumers:
                consumer.close()
        assert sorted(accepted) == sorted(f"m{i}".encode() for i in range(30))
        assert all(len(who) == 1 for who in accepted.values()), "accepted twice"
        assert deliveries[b"m3"] == [1, 2]  # released once, delivered again
        # The simple assignor split the three partitions between the two members (which of
        # them fetches a record first is up to them: a broker does not check assignments).
        assert sorted(map(len, shared)) == [1, 2] and set().union(*shared) == {0, 1, 2}
        state = emulator.cluster.state
        assert state.share.groups["queue"].members == {}
        assert all(p.start_offset == p.next_offset and not p.records
                   for p in state.share_partitions.partitions.values())
        sent = merged_table(emulator)
        assert [sent[k] for k in (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH,
                                  ApiKey.SHARE_ACKNOWLEDGE) if k in sent][:2] == [[1], [1]]
        assert unpredicted(profile, emulator) == []


async def test_kclient_request_drives_a_share_group_through_its_life() -> None:
    cluster = EmulatedCluster(["4.2"], default_partitions=1)
    async with cluster:
        broker = cluster.brokers[0]
        topic = cluster.state.create_topic("q", 1)
        topic.partitions[0].append(read_record_set(batch(3), 1 << 20))
        member = str(uuid.uuid4())
        async with Client(cluster.bootstrap_servers) as client:
            # A new group starts at the latest offset: an admin moves it to the start first.
            altered = await client.request("AlterShareGroupOffsets", {
                "group_id": "sg", "topics": [{"topic_name": "q", "partitions": [
                    {"partition_index": 0, "start_offset": 0}]}]})
            assert altered.error_code == 0 and altered.responses[0].partitions[0].error_code == 0
            joined = await client.request("ShareGroupHeartbeat", {
                "group_id": "sg", "member_id": member, "member_epoch": 0,
                "subscribed_topic_names": ["q"]})
            assert (joined.error_code, joined.member_epoch) == (0, 1)
            assert joined.assignment.topic_partitions[0].partitions == [0]

            def fetch(epoch: int, acks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
                return {"group_id": "sg", "member_id": member, "share_session_epoch": epoch,
                        "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 1 << 20,
                        "max_records": 10, "batch_size": 10, "forgotten_topics_data": [],
                        "topics": [{"topic_id": topic.topic_id, "partitions": [
                            {"partition_index": 0, "acknowledgement_batches": acks or []}]}]}

            first = await client.request("ShareFetch", fetch(0))
            part = first.responses[0].partitions[0]
            assert [(r.first_offset, r.last_offset, r.delivery_count)
                    for r in part.acquired_records] == [(0, 2, 1)]
            assert part.records and first.acquisition_lock_timeout_ms == 30_000
            # Accept 0 and 2, release 1: it comes back in the same answer, delivered twice.
            second = await client.request("ShareFetch", fetch(1, [
                {"first_offset": 0, "last_offset": 2, "acknowledge_types": [1, 2, 1]}]))
            part = second.responses[0].partitions[0]
            assert part.acknowledge_error_code == 0
            assert [(r.first_offset, r.last_offset, r.delivery_count)
                    for r in part.acquired_records] == [(1, 1, 2)]
            done = await client.request("ShareAcknowledge", {
                "group_id": "sg", "member_id": member, "share_session_epoch": -1,
                "topics": [{"topic_id": topic.topic_id, "partitions": [
                    {"partition_index": 0, "acknowledgement_batches": [
                        {"first_offset": 1, "last_offset": 1, "acknowledge_types": [1]}]}]}]})
            assert done.responses[0].partitions[0].error_code == 0
            offsets = await client.request("DescribeShareGroupOffsets", {
                "groups": [{"group_id": "sg", "topics": None}]})
            [described] = offsets.groups[0].topics[0].partitions
            assert (described.start_offset, described.lag) == (3, 0)
            group = await client.request("ShareGroupDescribe", {"group_ids": ["sg"]})
            assert [m.member_id for m in group.groups[0].members] == [member]
            left = await client.request("ShareGroupHeartbeat", {
                "group_id": "sg", "member_id": member, "member_epoch": -1})
            assert (left.error_code, left.member_epoch) == (0, -1)
            refused = await client.request("OffsetCommit", {
                "group_id": "sg", "generation_id_or_member_epoch": -1, "member_id": "",
                "topics": [{"name": "q", "partitions": [
                    {"partition_index": 0, "committed_offset": 1}]}]})
            assert refused.topics[0].partitions[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
            predicted = {default_catalog().resolve(n).key: client.version_for(n) for n in (
                "AlterShareGroupOffsets", "ShareGroupHeartbeat", "ShareFetch",
                "ShareAcknowledge", "DescribeShareGroupOffsets", "ShareGroupDescribe")}
        sent = {k: v for k, v in broker.received if k in predicted}
        assert sent == predicted


def test_a_kip848_consumer_fails_where_group_version_is_off() -> None:
    """A 4.0 cluster upgraded from 3.x keeps group.version 0: ConsumerGroupHeartbeat is
    answered UNSUPPORTED_VERSION, as Kafka answers it, and librdkafka stops fatally."""
    import confluent_kafka

    _librdkafka_profile()
    cluster = EmulatedCluster([BrokerSpec("4.0", finalized_features={"group.version": (0, 0)})])
    with ThreadedEmulator(cluster) as emulator:
        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": emulator.bootstrap_servers, "group.id": "off",
            "group.protocol": "consumer", "socket.timeout.ms": 5000})
        errors: list[Any] = []
        try:
            consumer.subscribe(["t"])
            deadline = time.monotonic() + DEADLINE
            while not errors and time.monotonic() < deadline:
                errors += [m.error() for m in consumer.consume(10, 0.1) if m.error()]
        finally:
            consumer.close()
        assert errors and errors[0].code() == confluent_kafka.KafkaError._FATAL, errors
        assert "ConsumerGroupHeartbeat fatal error: Broker: API version not supported" in str(
            errors[0])
        assert emulator.cluster.state.consumer.groups == {}
