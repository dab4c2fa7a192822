"""The emulator is a server: no client, buggy or hostile, can stop it, stall its other
brokers or grow it without bound (../shared/DESIGN.md section 8; issue #47).

Each test is one reproduction from the reliability audit, on loopback; each failed
(hung, allocated without bound, or kept state forever) before the fix.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import struct
import zlib
from collections.abc import Awaitable
from typing import Any, TypeVar

import pytest

from kclient.emulator import EmulatedBroker, EmulatedCluster
from kclient.emulator.classic_groups import GroupSettings
from kclient.emulator.inbound import ServerLimits
from kclient.emulator.records import Batch
from kclient.emulator.state import ClusterState
from kclient.net import Connection
from kclient.protocol import encode_request, frame
from tests.waiting import until

pytestmark = pytest.mark.timeout(60)

T = TypeVar("T")
MiB = 1024 * 1024


def rss() -> int:
    """This process's resident memory now, in bytes."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def within(seconds: float, work: Awaitable[T], what: str) -> T:
    try:
        async with asyncio.timeout(seconds):
            return await work
    except TimeoutError:
        raise AssertionError(f"{what}: no answer within {seconds:g} s") from None


def legacy_gzip(inner: bytes) -> bytes:
    """A magic 1 message whose gzip'd value holds ``inner`` (the CRC is not checked)."""
    value = inner
    body = struct.pack(">bbq", 1, 1, 0) + struct.pack(">i", -1)
    body += struct.pack(">i", len(value)) + value
    return struct.pack(">qi", 0, len(body) + 4) + struct.pack(">I", 0) + body


def produce_body(records: bytes, topic: str = "t") -> dict[str, Any]:
    return {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": records}]}]}


@pytest.mark.parametrize("size", [-12, -24])
async def test_a_negative_inner_message_size_is_refused_and_every_broker_still_answers(
        size: int) -> None:
    # Before: the walk never moved (-12) or walked backwards (-24) on the event loop;
    # no broker of the process answered again.
    inner = struct.pack(">qi", 0, size) + b"\x00" * 40
    async with EmulatedCluster(["3.9", "3.9"]) as cluster:
        cluster.state.create_topic("t", 1)
        ids = sorted(x.node_id for x in cluster.brokers)
        leader = next(b for b in cluster.brokers
                      if ClusterState.leader(cluster.state.topics["t"], 0, ids) == b.node_id)
        other = next(b for b in cluster.brokers if b is not leader)
        async with Connection("127.0.0.1", leader.port) as conn:
            answer = await within(5, conn.request(
                "Produce", produce_body(legacy_gzip(gzip.compress(inner))), 2), "Produce")
        assert answer.responses[0].partition_responses[0].error_code == 2  # CORRUPT_MESSAGE
        async with Connection("127.0.0.1", other.port) as conn:
            assert conn.version_for("Metadata") is not None


async def test_a_gzip_bomb_is_refused_without_growing_the_process_or_stalling_others() -> None:
    # 160 MiB of zeros after one inner message: about 160 KB on the wire.  Before: the
    # whole of it was inflated at once on the event loop (+1,027 MB for a 510 KB bomb).
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = squeeze.compress(struct.pack(">qiIbb", 0, 1 << 30, 0, 1, 0))
    for _ in range(160):
        bomb += squeeze.compress(bytes(MiB))
    bomb += squeeze.flush()
    async with EmulatedBroker(1, "3.9") as broker:
        broker.state.create_topic("t", 1)
        before = rss()
        async with Connection("127.0.0.1", broker.port) as bomber, \
                Connection("127.0.0.1", broker.port) as other:
            produce = asyncio.ensure_future(bomber.request(
                "Produce", produce_body(legacy_gzip(bomb)), 2))
            for _ in range(20):  # the other connection is served meanwhile
                await within(2, other.request("Metadata", {"topics": []}, 1), "Metadata")
            answer = await within(20, produce, "Produce")
        assert answer.responses[0].partition_responses[0].error_code == 2
        assert rss() - before < 64 * MiB


async def test_a_fetch_naming_one_partition_many_times_gets_it_once() -> None:
    # Before: 200 copies of the partition's data (a 200 MB answer for 1 MB stored).
    async with EmulatedBroker(1, "3.9") as broker, \
            Connection("127.0.0.1", broker.port) as conn:
        broker.state.create_topic("t", 1)
        log = broker.state.topics["t"].partitions[0]
        data = struct.pack(">qi", 0, 49) + b"\x00" * 4 + b"\x02" + b"\x00" * 44
        log.append([Batch(2, 0, 1, 0, data) for _ in range(16_000)])  # ~1 MB stored
        partition = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 2**31 - 1,
                     "current_leader_epoch": -1, "log_start_offset": -1}
        fetched = await within(10, conn.request("Fetch", {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 2**31 - 1,
            "topics": [{"topic": "t", "partitions": [partition] * 200}]}, 11), "Fetch")
        parts = fetched.responses[0].partitions
        assert len(parts) == 1 and len(parts[0].records) == 16_000 * 61


@pytest.mark.parametrize("count", [2**31 - 1, 1_000_000, 9_999])
async def test_create_topics_is_bounded_like_the_kraft_controller(count: int) -> None:
    # Before: 2147483647 partitions allocated until memory ran out; 1,000,000 took +878 MB.
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        created = await within(10, conn.request("CreateTopics", {"topics": [
            {"name": "big", "num_partitions": count, "replication_factor": 1}],
            "timeout_ms": 1000}, 5), "CreateTopics")
        result = created.topics[0]
        if count > 10_000:
            assert result.error_code == 44  # POLICY_VIOLATION
            assert "excessively large" in result.error_message
            assert broker.state.topics == {}
        else:
            assert result.error_code == 0 and len(broker.state.topics["big"].partitions) == count


async def test_partial_frames_wait_for_the_queued_bytes_pool_instead_of_growing() -> None:
    # Before: 8 connections x 90 MB of partial frames took +721 MB.  Here the pool is
    # 64 MiB: frames beyond it are not read (their senders wait) and small requests pass.
    limits = ServerLimits(queued_request_bytes=64 * MiB, stall_timeout=30)
    async with EmulatedCluster(["3.9"], limits=limits) as cluster:
        broker = cluster.brokers[0]
        before = rss()
        writers = []
        chunk = bytes(MiB)
        for _ in range(8):
            _, writer = await asyncio.open_connection("127.0.0.1", broker.port)
            writer.write(struct.pack(">i", 48 * MiB))
            writers.append(writer)
        loop = asyncio.get_running_loop()
        end = loop.time() + 8
        for _ in range(40):  # up to 40 MiB each, 320 MiB in all, for at most 8 s
            if loop.time() > end:
                break
            for writer in writers:  # the test's own side buffers at most a chunk each
                if writer.transport.get_write_buffer_size() < MiB:
                    writer.write(chunk)
            with contextlib.suppress(TimeoutError):  # muted connections do not drain
                async with asyncio.timeout(0.1):
                    await asyncio.gather(*(w.drain() for w in writers))
        async with Connection("127.0.0.1", broker.port) as conn:
            assert await within(5, conn.request("Metadata", {"topics": []}, 1), "Metadata")
        assert cluster.pool.used <= 64 * MiB
        assert rss() - before < 200 * MiB  # 64 MiB of frames, plus socket buffers
        for writer in writers:
            writer.transport.abort()
        await until(lambda: cluster.pool.used == 0, "the pool is given back", 10)


async def test_a_connection_stalling_on_a_partial_frame_is_closed() -> None:
    limits = ServerLimits(stall_timeout=0.3)
    async with EmulatedCluster(["3.9"], limits=limits) as cluster:
        reader, writer = await asyncio.open_connection("127.0.0.1", cluster.brokers[0].port)
        writer.write(struct.pack(">i", 1000) + b"\x00" * 10)
        assert await within(5, reader.read(), "the broker closes") == b""
        await until(lambda: cluster.pool.used == 0, "the pool is given back")
        writer.close()


async def test_list_offsets_naming_a_partition_many_times_is_invalid_not_slow() -> None:
    # Before: 20,000 lookups of one partition, each scanning 50,000 batches: 16.5 s with
    # every broker of the process stalled.  Kafka answers duplicates with INVALID_REQUEST.
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        broker.state.create_topic("t", 1)
        data = struct.pack(">qi", 0, 49) + b"\x00" * 4 + b"\x02" + b"\x00" * 44
        broker.state.topics["t"].partitions[0].append(
            [Batch(2, 0, 1, ts, data) for ts in range(50_000)])
        listed = await within(10, conn.request("ListOffsets", {"replica_id": -1, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "timestamp": 49_999}] * 20_000}]},
            5), "ListOffsets")
        assert {p.error_code for p in listed.topics[0].partitions} == {42}  # INVALID_REQUEST
        one = await conn.request("ListOffsets", {"replica_id": -1, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "timestamp": 49_999}]}]}, 5)
        assert one.topics[0].partitions[0].offset == 49_999


async def test_the_request_logs_keep_only_the_newest_entries() -> None:
    # Before: 300,000 ApiVersions grew the logs by 41.5 MB, without end.
    limits = ServerLimits(request_log=500, logged_connections=4, requests_per_connection=50)
    async with EmulatedBroker(1, "3.9", limits=limits) as broker:
        for _ in range(10):
            reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
            request = frame(encode_request(18, 0, 1, "c", {}))
            writer.write(request * 200)
            for _ in range(200):
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                await reader.readexactly(size)
            writer.close()
        assert len(broker.received) <= 500 and broker.received[-1] == (18, 0)
        assert len(broker.received_by_connection) <= 4
        assert all(len(seen) <= 50 for seen in broker.received_by_connection)


async def test_member_ids_handed_out_expire_when_never_used() -> None:
    # Before: every JoinGroup with an empty member id left a pending id forever.
    state = ClusterState(group_settings=GroupSettings(min_session_timeout_ms=100))
    async with EmulatedBroker(1, "3.9", state=state) as broker, \
            Connection("127.0.0.1", broker.port) as conn:
        for _ in range(50):
            answer = await conn.request("JoinGroup", {
                "group_id": "g", "session_timeout_ms": 200, "rebalance_timeout_ms": 1000,
                "member_id": "", "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}]}, 5)
            assert answer.error_code == 79  # MEMBER_ID_REQUIRED
        assert len(state.groups["g"].pending) == 50
        await until(lambda: not state.groups["g"].pending, "pending member ids expire", 5)


async def test_a_join_waiting_for_a_rebalance_is_dropped_when_its_client_goes() -> None:
    # Before: the parked JoinGroup kept its socket for the client's rebalance timeout.
    async with EmulatedBroker(1, "3.9") as broker, \
            Connection("127.0.0.1", broker.port) as first:
        join = {"group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 60_000,
                "member_id": "", "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}]}
        leader = await first.request("JoinGroup", join, 3)
        await first.request("SyncGroup", {"group_id": "g", "generation_id": 1,
                                          "member_id": leader.member_id, "assignments": []}, 2)
        _, writer = await asyncio.open_connection("127.0.0.1", broker.port)
        writer.write(frame(encode_request(11, 3, 7, "gone", join)))  # waits for the leader
        await until(lambda: broker.state.coordination.waiting == 1, "the join is parked")
        writer.transport.abort()
        await until(lambda: broker.state.coordination.waiting == 0
                    and broker.open_connections == 1, "the parked join is dropped", 5)


async def test_a_broker_stopping_drops_its_parked_requests() -> None:
    async with EmulatedBroker(1, "3.9") as broker:
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
        writer.write(frame(encode_request(11, 3, 1, "c", {
            "group_id": "g", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 60_000,
            "member_id": "", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]})))
        await until(lambda: broker.state.coordination.waiting == 1, "the join is parked")
    assert broker.open_connections == 0 and broker.state.coordination.waiting == 0
    assert await within(5, reader.read(), "the connection closes") == b""
    writer.close()
