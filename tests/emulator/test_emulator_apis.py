"""The emulator's everyday APIs on the wire: produce/fetch, offsets, groups, coordinators,
producer ids, topics, and what it does with versions and APIs it does not serve."""

from __future__ import annotations

import asyncio
import logging
import struct
import time
import uuid

import pytest

from kclient.emulator import EmulatedBroker, EmulatedCluster
from kclient.emulator.classic_groups import GroupSettings
from kclient.emulator.log import PartitionLog
from kclient.emulator.records import RecordsError, read_record_set
from kclient.emulator.state import ClusterState
from kclient.net import Connection
from kclient.protocol import encode_request

pytestmark = pytest.mark.timeout(30)


def batch(count: int, timestamp: int = 1000, payload: bytes = b"") -> bytes:
    """A v2 record batch header for ``count`` records (the CRC is not checked)."""
    body = payload or b"r" * count
    rest = struct.pack(">ibIhiqqqhii", -1, 2, 0, 0, count - 1, timestamp, timestamp, -1, -1,
                       -1, count) + body
    # rest starts at partitionLeaderEpoch: batchLength counts from there.
    return struct.pack(">qi", 0, len(rest)) + rest


def base_offsets(records: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(records):
        base, size = struct.unpack_from(">qi", records, pos)
        out.append(base)
        pos += 12 + size
    return out


def produce_body(topic: str, records: bytes, acks: int = -1,
                 partition: int = 0) -> dict[str, object]:
    return {"acks": acks, "timeout_ms": 1000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": records}]}]}


def fetch_body(topic: str, offset: int, max_bytes: int = 1 << 20, wait: int = 0,
               topic_id: uuid.UUID | None = None) -> dict[str, object]:
    return {"replica_id": -1, "max_wait_ms": wait, "min_bytes": 1, "max_bytes": 1 << 20,
            "topics": [{"topic": topic, "topic_id": topic_id or uuid.UUID(int=0), "partitions": [
                {"partition": 0, "fetch_offset": offset, "partition_max_bytes": max_bytes,
                 "current_leader_epoch": -1, "log_start_offset": -1}]}]}


async def test_produce_assigns_offsets_and_fetch_returns_the_batches() -> None:
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        created = await conn.request("CreateTopics", {"topics": [
            {"name": "t", "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 1000}, 7)
        topic_id = created.topics[0].topic_id
        assert created.topics[0].error_code == 0 and topic_id != uuid.UUID(int=0)
        # Two batches in one partition: only Produce < v3 may carry them (produce-one-batch).
        first = await conn.request("Produce", produce_body("t", batch(3) + batch(2)), 2)
        part = first.responses[0].partition_responses[0]
        assert (part.error_code, part.base_offset) == (0, 0)
        second = await conn.request("Produce", produce_body("t", batch(2, timestamp=5000)), 9)
        assert second.responses[0].partition_responses[0].base_offset == 5

        fetched = await conn.request("Fetch", fetch_body("t", 0), 12)
        data = fetched.responses[0].partitions[0]
        assert (data.error_code, data.high_watermark, data.log_start_offset) == (0, 7, 0)
        assert base_offsets(data.records) == [0, 3, 5]
        # The patched header: partition leader epoch 0, the rest as produced.
        assert data.records[12:17] == struct.pack(">ib", 0, 2)
        by_id = await conn.request("Fetch", fetch_body("", 4, topic_id=topic_id), 16)
        assert base_offsets(by_id.responses[0].partitions[0].records) == [3, 5]
        small = await conn.request("Fetch", fetch_body("t", 0, max_bytes=10), 12)
        assert base_offsets(small.responses[0].partitions[0].records) == [0]  # one at least
        beyond = await conn.request("Fetch", fetch_body("t", 8), 12)
        assert beyond.responses[0].partitions[0].error_code == 1  # OFFSET_OUT_OF_RANGE

        found = []
        for ts in (-2, -1, -3, 2000, 5000, 5001):
            offsets = await conn.request("ListOffsets", {"replica_id": -1, "topics": [
                {"name": "t", "partitions": [{"partition_index": 0, "timestamp": ts}]}]}, 7)
            part = offsets.topics[0].partitions[0]
            found.append((part.offset, part.timestamp))
        assert found == [(0, -1), (7, -1), (6, 5000), (5, 2000), (5, 5000), (7, 5001)]
        # A partition listed twice: INVALID_REQUEST for both, as Kafka answers.
        twice = await conn.request("ListOffsets", {"replica_id": -1, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "timestamp": ts}
                                         for ts in (-2, -1)]}]}, 7)
        assert [p.error_code for p in twice.topics[0].partitions] == [42, 42]


async def test_fetch_waits_for_data_produced_through_another_connection() -> None:
    async with EmulatedCluster(["3.9"]) as cluster:
        port = cluster.brokers[0].port
        cluster.state.create_topic("t", 1)
        async with Connection("127.0.0.1", port) as consumer, \
                Connection("127.0.0.1", port) as producer:
            started = time.monotonic()
            waiting = asyncio.ensure_future(
                consumer.request("Fetch", fetch_body("t", 0, wait=10000), 12))
            await producer.request("Produce", produce_body("t", batch(1)), 9)
            fetched = await asyncio.wait_for(waiting, 8)
            assert base_offsets(fetched.responses[0].partitions[0].records) == [0]
            assert time.monotonic() - started < 8  # woken by the append, not max_wait_ms


async def _raw(port: int, *requests: bytes) -> list[int]:
    """Send framed requests on one socket; the correlation ids answered, in order."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for request in requests:
            writer.write(struct.pack(">i", len(request)) + request)
        await writer.drain()
        answered = []
        while True:
            try:
                size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 3))[0]
            except (asyncio.IncompleteReadError, TimeoutError):
                return answered
            answered.append(struct.unpack(">i", (await reader.readexactly(size))[:4])[0])
    finally:
        writer.close()
        await writer.wait_closed()


async def test_acks_0_gets_no_answer_and_the_next_request_does() -> None:
    async with EmulatedBroker(1, "3.9") as broker:
        broker.state.create_topic("t", 1)
        answered = await _raw(
            broker.port, encode_request(0, 9, 1, "raw", produce_body("t", batch(2), acks=0)),
            encode_request(3, 1, 2, "raw", {"topics": None}))
        assert answered == [2]
        assert broker.state.topics["t"].partitions[0].high_watermark == 2


async def test_produce_v2_on_4_0_is_unsupported_version_and_v3_works() -> None:
    async with EmulatedBroker(1, "4.0") as broker, Connection("127.0.0.1", broker.port) as conn:
        broker.state.create_topic("t", 1)
        old = await conn.request("Produce", produce_body("t", batch(1)), 2)
        assert old.responses[0].partition_responses[0].error_code == 35
        assert broker.state.topics["t"].partitions[0].high_watermark == 0
        new = await conn.request("Produce", produce_body("t", batch(1)), 3)
        assert new.responses[0].partition_responses[0].error_code == 0


def test_legacy_message_sets_get_offsets() -> None:
    def message(value: bytes) -> bytes:
        body = struct.pack(">bbq", 1, 0, 1234) + struct.pack(">i", -1)
        body += struct.pack(">i", len(value)) + value
        return struct.pack(">qi", 0, len(body) + 4) + struct.pack(">I", 0) + body

    log = PartitionLog()
    log.high_watermark = 10
    assert log.append(read_record_set(message(b"a") + message(b"bb"))) == 10
    stored = list(log.batches_from(10))
    assert [(s.base, s.last, s.batch.max_timestamp) for s in stored] == [(10, 10, 1234),
                                                                          (11, 11, 1234)]
    assert [struct.unpack_from(">q", s.data)[0] for s in stored] == [10, 11]
    with pytest.raises(RecordsError, match="claims"):
        read_record_set(batch(2)[:-1])


async def test_garbage_records_are_corrupt_message() -> None:
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        broker.state.create_topic("t", 1)
        answer = await conn.request("Produce", produce_body("t", b"\x00" * 20), 9)
        part = answer.responses[0].partition_responses[0]
        assert part.error_code == 2 and "shorter than its header" in part.error_message


async def test_an_api_it_does_not_emulate_closes_with_one_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kclient.emulator")
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        with pytest.raises(Exception, match="closed"):
            await conn.request("DeleteRecords", {"topics": [], "timeout_ms": 1000}, 2)
    warnings = [r.getMessage() for r in caplog.records if r.name == "kclient.emulator"]
    assert warnings == ["emulated broker 1 (Kafka 3.9) closes the connection on DeleteRecords "
                        "(key 21) v2: the emulator does not emulate this API"]


async def test_leaders_are_spread_and_a_follower_refuses_produce() -> None:
    async with EmulatedCluster(["3.9", "3.9", "3.9"]) as cluster:
        cluster.state.create_topic("t", 3)
        async with Connection("127.0.0.1", cluster.brokers[0].port) as conn:
            meta = await conn.request("Metadata", {"topics": [{"name": "t"}]}, 12)
            leaders = {p.partition_index: p.leader_id for p in meta.topics[0].partitions}
            assert sorted(leaders.values()) == [1, 2, 3]
            elsewhere = next(i for i, leader in leaders.items() if leader != 1)
            answer = await conn.request("Produce", produce_body("t", batch(1),
                                                               partition=elsewhere), 9)
            assert answer.responses[0].partition_responses[0].error_code == 6


async def test_metadata_auto_creates_asked_topics_but_not_internal_ones() -> None:
    async with EmulatedBroker(1, "2.0") as broker, Connection("127.0.0.1", broker.port) as conn:
        meta = await conn.request("Metadata", {"topics": [{"name": "new"}, {"name": "__x"}],
                                               "allow_auto_topic_creation": True}, 6)
        assert [(t.name, t.error_code, len(t.partitions)) for t in meta.topics] == [
            ("new", 0, 1), ("__x", 3, 0)]
        everything = await conn.request("Metadata", {"topics": None}, 6)
        assert [t.name for t in everything.topics] == ["new"]


async def test_a_classic_group_from_join_to_leave() -> None:
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        broker.state.create_topic("t", 2)
        coordinator = await conn.request("FindCoordinator", {"key_type": 0,
                                                             "coordinator_keys": ["g", "h"]}, 4)
        assert [(c.key, c.node_id, c.port) for c in coordinator.coordinators] == [
            ("g", 1, broker.port), ("h", 1, broker.port)]
        join = {"group_id": "g", "session_timeout_ms": 6000, "rebalance_timeout_ms": 6000,
                "member_id": "", "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b"m"}]}
        first = await conn.request("JoinGroup", join, 5)
        assert first.error_code == 79 and first.member_id  # MEMBER_ID_REQUIRED
        joined = await conn.request("JoinGroup", {**join, "member_id": first.member_id}, 5)
        assert (joined.error_code, joined.generation_id, joined.leader) == (
            0, 1, first.member_id)
        assert [(m.member_id, m.metadata) for m in joined.members] == [(first.member_id, b"m")]
        synced = await conn.request("SyncGroup", {
            "group_id": "g", "generation_id": 1, "member_id": first.member_id,
            "assignments": [{"member_id": first.member_id, "assignment": b"a"}]}, 3)
        assert (synced.error_code, synced.assignment) == (0, b"a")
        beat = {"group_id": "g", "generation_id": 1, "member_id": first.member_id}
        assert (await conn.request("Heartbeat", beat, 3)).error_code == 0
        assert (await conn.request("Heartbeat", {**beat, "generation_id": 7}, 3)
                ).error_code == 22  # ILLEGAL_GENERATION
        commit = await conn.request("OffsetCommit", {
            "group_id": "g", "generation_id_or_member_epoch": 1, "member_id": first.member_id,
            "topics": [{"name": "t", "partitions": [
                {"partition_index": 1, "committed_offset": 42, "committed_metadata": "x"}]}]}, 8)
        assert commit.topics[0].partitions[0].error_code == 0
        grouped = await conn.request("OffsetFetch", {"groups": [
            {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]}]}, 8)
        assert [(p.partition_index, p.committed_offset, p.metadata)
                for p in grouped.groups[0].topics[0].partitions] == [(0, -1, ""), (1, 42, "x")]
        every = await conn.request("OffsetFetch", {"group_id": "g", "topics": None}, 5)
        assert [(t.name, [p.committed_offset for p in t.partitions])
                for t in every.topics] == [("t", [42])]
        left = await conn.request("LeaveGroup", {"group_id": "g", "members": [
            {"member_id": first.member_id}]}, 3)
        assert left.members[0].error_code == 0
        assert (await conn.request("Heartbeat", beat, 3)).error_code == 25  # UNKNOWN_MEMBER


async def test_two_members_rebalance_and_the_leader_assigns() -> None:
    async with EmulatedBroker(1, "2.0") as broker, \
            Connection("127.0.0.1", broker.port) as one, \
            Connection("127.0.0.1", broker.port) as two:
        join = {"group_id": "g", "session_timeout_ms": 6000, "rebalance_timeout_ms": 3000,
                "member_id": "", "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}]}
        a, b = await asyncio.gather(one.request("JoinGroup", join, 3),
                                    two.request("JoinGroup", join, 3))
        assert a.generation_id == b.generation_id == 1 and a.leader == b.leader
        leader, follower = (a, b) if a.member_id == a.leader else (b, a)
        assert sorted(m.member_id for m in leader.members) == sorted([a.member_id, b.member_id])
        assert follower.members == []
        leader_conn, follower_conn = (one, two) if leader is a else (two, one)
        sync = {"group_id": "g", "generation_id": 1}
        got_follower, got_leader = await asyncio.gather(
            follower_conn.request("SyncGroup", {**sync, "member_id": follower.member_id,
                                                "assignments": []}, 2),
            leader_conn.request("SyncGroup", {
                **sync, "member_id": leader.member_id, "assignments": [
                    {"member_id": leader.member_id, "assignment": b"L"},
                    {"member_id": follower.member_id, "assignment": b"F"}]}, 2))
        assert (got_leader.assignment, got_follower.assignment) == (b"L", b"F")


async def test_producer_ids_count_up_and_transactional_ids_bump_the_epoch() -> None:
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        body = {"transactional_id": None, "transaction_timeout_ms": 1000}
        first = await conn.request("InitProducerId", body, 4)
        second = await conn.request("InitProducerId", body, 4)
        assert second.producer_id == first.producer_id + 1 and first.producer_epoch == 0
        tx = {"transactional_id": "tx", "transaction_timeout_ms": 1000}
        one = await conn.request("InitProducerId", tx, 4)
        again = await conn.request("InitProducerId", tx, 4)
        assert (again.producer_id, again.producer_epoch) == (one.producer_id, 1)


async def test_create_topics_refuses_duplicates_and_impossible_replication() -> None:
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        topics = [{"name": "t", "num_partitions": 2, "replication_factor": 1},
                  {"name": "t", "num_partitions": 2, "replication_factor": 1},
                  {"name": "u", "num_partitions": 1, "replication_factor": 3}]
        answer = await conn.request("CreateTopics", {"topics": topics, "timeout_ms": 1000}, 5)
        assert [t.error_code for t in answer.topics] == [0, 36, 38]
        assert sorted(broker.state.topics) == ["t"]


async def test_fetch_sessions_are_never_created_and_unknown_ones_are_refused() -> None:
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        broker.state.create_topic("t", 1)
        full = await conn.request("Fetch", {**fetch_body("t", 0), "session_id": 0,
                                            "session_epoch": 0}, 12)
        assert (full.error_code, full.session_id) == (0, 0)
        unknown = await conn.request("Fetch", {**fetch_body("t", 0), "session_id": 7,
                                               "session_epoch": 1}, 12)
        assert unknown.error_code == 70  # FETCH_SESSION_ID_NOT_FOUND


async def test_a_silent_member_expires_and_the_other_is_told_to_rejoin() -> None:
    # A session timeout below Kafka's group.min.session.timeout.ms, allowed here.
    state = ClusterState(group_settings=GroupSettings(min_session_timeout_ms=100))
    async with EmulatedBroker(1, "3.9", state=state) as broker, \
            Connection("127.0.0.1", broker.port) as one, \
            Connection("127.0.0.1", broker.port) as two:
        join = {"group_id": "g", "session_timeout_ms": 300, "rebalance_timeout_ms": 3000,
                "member_id": "", "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}]}
        a, b = await asyncio.gather(one.request("JoinGroup", join, 3),
                                    two.request("JoinGroup", join, 3))
        leader, other = (a, b) if a.member_id == a.leader else (b, a)
        await asyncio.gather(*(
            conn.request("SyncGroup", {"group_id": "g", "generation_id": 1,
                                       "member_id": m.member_id, "assignments": []}, 2)
            for conn, m in ((one, a), (two, b))))
        # Only the leader keeps heartbeating; the other falls silent.
        beat = {"group_id": "g", "generation_id": 1, "member_id": leader.member_id}
        conn = one if leader is a else two
        deadline = time.monotonic() + 10
        code = 0
        while code == 0 and time.monotonic() < deadline:  # each heartbeat paces the next
            code = (await conn.request("Heartbeat", beat, 3)).error_code
        assert code == 27  # REBALANCE_IN_PROGRESS
        group = broker.state.groups["g"]
        assert list(group.members) == [leader.member_id]
        rejoined = await conn.request("JoinGroup", {**join, "member_id": leader.member_id}, 3)
        assert rejoined.generation_id == 2 and [m.member_id for m in rejoined.members] == [
            leader.member_id]
        assert other.member_id not in group.members


async def test_topics_groups_and_epochs_are_listed_and_deleted() -> None:
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        broker.state.create_topic("t", 1)
        await conn.request("Produce", produce_body("t", batch(4)), 9)
        epochs = await conn.request("OffsetForLeaderEpoch", {"topics": [
            {"topic": "t", "partitions": [{"partition": 0, "leader_epoch": 0,
                                           "current_leader_epoch": 0}]}]}, 4)
        assert [(p.leader_epoch, p.end_offset) for p in epochs.topics[0].partitions] == [(0, 4)]
        await conn.request("OffsetCommit", {"group_id": "standalone",
                                            "generation_id_or_member_epoch": -1, "topics": [
                                                {"name": "t", "partitions": [
                                                    {"partition_index": 0,
                                                     "committed_offset": 2}]}]}, 8)
        listed = await conn.request("ListGroups", {}, 4)
        assert [(g.group_id, g.group_state) for g in listed.groups] == [("standalone", "Empty")]
        described = await conn.request("DescribeGroups", {"groups": ["standalone", "none"]}, 5)
        assert [(g.group_id, g.group_state) for g in described.groups] == [
            ("standalone", "Empty"), ("none", "Dead")]
        deleted = await conn.request("DeleteTopics", {"topic_names": ["t", "u"],
                                                      "timeout_ms": 1000}, 5)
        assert [(r.name, r.error_code) for r in deleted.responses] == [("t", 0), ("u", 3)]
        assert broker.state.topics == {}
