"""The transactional APIs on the wire: what each release answers (KIP-890's checks, the
errors of older request versions), read_committed and read_uncommitted fetches, stable
offsets, transaction version 2 and the timeout timer."""

from __future__ import annotations

from typing import Any

import pytest

from kclient.emulator import EmulatedBroker, EmulatedCluster
from kclient.emulator.served import coordinator_for
from kclient.net import Connection
from kclient.protocol.constants import ErrorCode as E
from tests.waiting import until

from .batches import fetch_body, produce_body, record_batch

pytestmark = pytest.mark.timeout(30)
TXN = "txn"


async def init(conn: Connection, version: int = 1, timeout_ms: int = 60_000,
               txn: str = TXN) -> tuple[int, int]:
    answer = await conn.request("InitProducerId", {"transactional_id": txn,
                                                   "transaction_timeout_ms": timeout_ms},
                                version)
    assert answer.error_code == E.NONE
    return answer.producer_id, answer.producer_epoch


async def add(conn: Connection, pid: int, epoch: int, topic: str = "out",
              partitions: tuple[int, ...] = (0,), version: int = 1) -> list[int]:
    answer = await conn.request("AddPartitionsToTxn", {
        "v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [
            {"name": topic, "partitions": list(partitions)}]}, version)
    return [p.partition_error_code for t in answer.results_by_topic_v3_and_below
            for p in t.results_by_partition]


async def produce(conn: Connection, pid: int, epoch: int, sequence: int, version: int,
                  topic: str = "out", partition: int = 0) -> Any:
    answer = await conn.request("Produce", produce_body(topic, record_batch(
        2, producer_id=pid, epoch=epoch, sequence=sequence, transactional=True),
        transactional_id=TXN, partition=partition), version)
    return answer.responses[0].partition_responses[0]


async def end(conn: Connection, pid: int, epoch: int, commit: bool, version: int = 1) -> Any:
    return await conn.request("EndTxn", {"transactional_id": TXN, "producer_id": pid,
                                         "producer_epoch": epoch, "committed": commit},
                              version)


@pytest.mark.parametrize(("release", "version", "expected"), [
    ("3.5", 9, E.NONE), ("3.6", 9, E.INVALID_TXN_STATE), ("3.9", 10, E.INVALID_TXN_STATE),
    ("3.9", 11, E.TRANSACTION_ABORTABLE), ("4.0", 11, E.TRANSACTION_ABORTABLE),
    ("4.0", 12, E.NONE)])
async def test_produce_to_a_partition_not_added(release: str, version: int,
                                                expected: int) -> None:
    """KIP-890: a transactional batch for a partition not in the transaction is refused from
    3.6 (verification); Produce v12 (transaction version 2) adds the partition itself."""
    async with EmulatedBroker(1, release) as broker, Connection("127.0.0.1",
                                                                broker.port) as conn:
        broker.state.create_topic("out", 1)
        pid, epoch = await init(conn)
        part = await produce(conn, pid, epoch, 0, version)
        assert part.error_code == expected
        txn = broker.state.transactions.transactions[TXN]
        assert (("out", 0) in txn.partitions) == (version >= 12)
        # Once added, the batch goes in.
        if expected != E.NONE:
            assert await add(conn, pid, epoch) == [E.NONE]
            assert (await produce(conn, pid, epoch, 0, version)).error_code == E.NONE


async def test_not_the_coordinator() -> None:
    async with EmulatedCluster(["3.9", "3.9", "3.9"]) as cluster:
        first = cluster.brokers[0]
        txn = next(f"t{i}" for i in range(100)
                   if coordinator_for(first, f"t{i}").node_id != first.node_id)  # type: ignore[union-attr]
        async with Connection("127.0.0.1", first.port) as conn:
            answer = await conn.request("InitProducerId", {
                "transactional_id": txn, "transaction_timeout_ms": 1000}, 1)
            assert answer.error_code == E.NOT_COORDINATOR
            found = await conn.request("FindCoordinator", {"key": txn, "key_type": 1}, 2)
        async with Connection("127.0.0.1", found.port) as right:
            assert (await right.request("InitProducerId", {
                "transactional_id": txn, "transaction_timeout_ms": 1000}, 1)).error_code == 0


async def _txn_offset_commit(conn: Connection, pid: int, epoch: int, version: int) -> int:
    answer = await conn.request("TxnOffsetCommit", {
        "transactional_id": TXN, "group_id": "g", "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None, "topics": [
            {"name": "in", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                           "committed_metadata": ""}]}]}, version)
    code: int = answer.topics[0].partitions[0].error_code
    return code


@pytest.mark.parametrize(("release", "version", "expected"), [
    ("2.0", 1, E.NONE), ("3.6", 3, E.INVALID_TXN_STATE), ("3.9", 4, E.TRANSACTION_ABORTABLE),
    ("4.0", 5, E.NONE)])
async def test_txn_offset_commit_without_add_offsets(release: str, version: int,
                                                     expected: int) -> None:
    async with EmulatedBroker(1, release) as broker, Connection("127.0.0.1",
                                                                broker.port) as conn:
        broker.state.create_topic("in", 1)
        pid, epoch = await init(conn)
        assert await _txn_offset_commit(conn, pid, epoch, version) == expected
        if expected == E.NONE:  # pending until the transaction commits
            assert broker.state.offsets.unstable("g", "in", 0)
            assert broker.state.offsets.get("g", "in", 0) is None
            if version >= 5:  # transaction version 2: the group joined by itself
                assert (await end(conn, pid, epoch, True, 5)).error_code == E.NONE
                committed = broker.state.offsets.get("g", "in", 0)
                assert committed is not None and committed.offset == 5


async def test_reads_without_isolation_level_are_uncommitted() -> None:
    async with EmulatedBroker(1, "2.0") as broker, Connection("127.0.0.1",
                                                              broker.port) as conn:
        broker.state.create_topic("out", 1)
        pid, epoch = await init(conn)
        await add(conn, pid, epoch)
        assert (await produce(conn, pid, epoch, 0, 6)).error_code == E.NONE
        # Open transaction: read_committed sees nothing yet, read_uncommitted all of it.
        committed = (await conn.request("Fetch", fetch_body("out", isolation=1), 4)
                     ).responses[0].partitions[0]
        assert (committed.records, committed.last_stable_offset,
                committed.high_watermark) == (b"", 0, 2)
        uncommitted = (await conn.request("Fetch", fetch_body("out", isolation=0), 4)
                       ).responses[0].partitions[0]
        assert uncommitted.records and uncommitted.aborted_transactions is None

        async def latest(version: int) -> int:
            body: dict[str, object] = {"replica_id": -1, "topics": [
                {"name": "out", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}
            if version >= 2:
                body["isolation_level"] = 1  # read_committed
            answer = await conn.request("ListOffsets", body, version)
            offset: int = answer.topics[0].partitions[0].offset
            return offset

        # ListOffsets v1 has no isolation level: the high watermark.
        assert (await latest(2), await latest(1)) == (0, 2)
        assert (await end(conn, pid, epoch, False)).error_code == E.NONE
        aborted = (await conn.request("Fetch", fetch_body("out", isolation=1), 4)
                   ).responses[0].partitions[0]
        assert aborted.last_stable_offset == aborted.high_watermark == 3
        assert [(t.producer_id, t.first_offset) for t in aborted.aborted_transactions] == [
            (pid, 0)]


async def test_offset_fetch_require_stable() -> None:
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1",
                                                              broker.port) as conn:
        broker.state.create_topic("in", 1)
        pid, epoch = await init(conn)
        await conn.request("AddOffsetsToTxn", {"transactional_id": TXN, "producer_id": pid,
                                               "producer_epoch": epoch, "group_id": "g"}, 1)
        assert await _txn_offset_commit(conn, pid, epoch, 3) == E.NONE
        wanted = {"group_id": "g", "topics": [{"name": "in", "partition_indexes": [0]}]}
        for stable, expected in ((True, E.UNSTABLE_OFFSET_COMMIT), (False, E.NONE)):
            fetched = await conn.request("OffsetFetch", {**wanted, "require_stable": stable}, 7)
            part = fetched.topics[0].partitions[0]
            assert (part.error_code, part.committed_offset) == (expected, -1)
        assert (await end(conn, pid, epoch, True)).error_code == E.NONE
        fetched = await conn.request("OffsetFetch", {**wanted, "require_stable": True}, 7)
        assert fetched.topics[0].partitions[0].committed_offset == 5


@pytest.mark.parametrize(("release", "version", "expected"), [
    ("2.6", 1, E.INVALID_PRODUCER_EPOCH), ("3.9", 1, E.INVALID_PRODUCER_EPOCH),
    ("3.9", 2, E.PRODUCER_FENCED)])
async def test_fenced_error_by_release_and_version(release: str, version: int,
                                                   expected: int) -> None:
    async with EmulatedBroker(1, release) as broker, Connection("127.0.0.1",
                                                                broker.port) as conn:
        broker.state.create_topic("out", 1)
        pid, epoch = await init(conn)
        await init(conn)  # a second producer takes the transactional id
        assert await add(conn, pid, epoch, version=version) == [expected]
        assert (await end(conn, pid, epoch, True, version)).error_code == expected


async def test_transaction_version_2_on_the_wire() -> None:
    """EndTxn v5 ends with an epoch bump and returns the new epoch; the next transaction's
    Produce v12 starts at sequence 0 under it."""
    async with EmulatedBroker(1, "4.0") as broker, Connection("127.0.0.1",
                                                              broker.port) as conn:
        broker.state.create_topic("out", 1)
        pid, epoch = await init(conn, version=5)
        assert (await produce(conn, pid, epoch, 0, 12)).error_code == E.NONE
        ended = await end(conn, pid, epoch, True, 5)
        assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (0, pid, epoch + 1)
        assert (await produce(conn, pid, epoch, 2, 12)).error_code == E.INVALID_PRODUCER_EPOCH
        assert (await produce(conn, pid, epoch + 1, 0, 12)).error_code == E.NONE
        # AddPartitionsToTxn v4+ (the brokers' form) verifies without adding.
        answer = await conn.request("AddPartitionsToTxn", {"transactions": [
            {"transactional_id": TXN, "producer_id": pid, "producer_epoch": epoch + 1,
             "verify_only": True, "topics": [{"name": "out", "partitions": [0]}]}]}, 4)
        [result] = answer.results_by_transaction
        assert result.topic_results[0].results_by_partition[0].partition_error_code == 0


async def test_a_timed_out_transaction_is_aborted_by_the_timer() -> None:
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1",
                                                              broker.port) as conn:
        broker.state.create_topic("out", 1)
        pid, epoch = await init(conn, timeout_ms=200)
        await add(conn, pid, epoch)
        assert (await produce(conn, pid, epoch, 0, 9)).error_code == E.NONE
        log = broker.state.topics["out"].partitions[0]
        await until(lambda: log.last_stable_offset != 0, "the timer aborts it", timeout=5)
        assert log.last_stable_offset == log.high_watermark == 3
        assert (await end(conn, pid, epoch, True, 2)).error_code == E.PRODUCER_FENCED
        assert (await produce(conn, pid, epoch, 2, 9)).error_code == E.INVALID_PRODUCER_EPOCH
