"""The transaction coordinator, pure, on synthetic time: epochs, fencing, timeouts, markers,
transaction version 2 (KIP-890); and the markers' effect on logs and offsets."""

from __future__ import annotations

import pytest

from kclient.emulator.records import read_record_set
from kclient.emulator.state import ClusterState
from kclient.emulator.transactions import (
    MAX_EPOCH,
    TransactionCoordinator,
    TransactionSettings,
    TxnState,
)
from kclient.protocol.constants import ErrorCode as E

from .batches import record_batch

TP = ("out", 0)


def started(coordinator: TransactionCoordinator, txn: str = "t", timeout_ms: int = 60_000,
            ) -> tuple[int, int]:
    result = coordinator.init_producer_id(0.0, txn, timeout_ms)
    assert result.error == E.NONE
    return result.producer_id, result.producer_epoch


def test_idempotent_producers_get_new_ids_and_transactional_ids_keep_theirs() -> None:
    c = TransactionCoordinator()
    first, second = (c.init_producer_id(0, None, 0) for _ in range(2))
    assert (first.producer_epoch, second.producer_epoch) == (0, 0)
    assert second.producer_id == first.producer_id + 1
    # KIP-360: an idempotent producer giving its id and epoch still gets a new id.
    assert c.init_producer_id(0, None, 0, (first.producer_id, 0)).producer_id > second.producer_id
    pid, epoch = started(c)
    again = c.init_producer_id(0, "t", 60_000)
    assert (again.producer_id, again.producer_epoch) == (pid, epoch + 1)


def test_a_second_producer_fences_the_first() -> None:
    c = TransactionCoordinator()
    pid, epoch = started(c)
    assert c.add_partitions(1, "t", pid, epoch, [TP]) == E.NONE
    # The new producer's InitProducerId aborts the open transaction and says retry.
    assert c.init_producer_id(2, "t", 60_000).error == E.CONCURRENT_TRANSACTIONS
    [markers] = c.drain_markers()
    assert (markers.commit, markers.producer_epoch, markers.partitions) == (False, epoch + 1,
                                                                           {TP})
    c.complete(markers)
    retry = c.init_producer_id(3, "t", 60_000)
    assert (retry.error, retry.producer_epoch) == (E.NONE, epoch + 2)
    # The zombie is fenced everywhere.
    assert c.add_partitions(4, "t", pid, epoch, [TP]) == E.PRODUCER_FENCED
    assert c.add_partitions(4, "t", pid, epoch, groups=["g"]) == E.PRODUCER_FENCED
    assert c.end_txn(4, "t", pid, epoch, True)[0] == E.PRODUCER_FENCED
    assert c.add_partitions(4, "t", pid + 1, retry.producer_epoch, [TP]) == (
        E.INVALID_PRODUCER_ID_MAPPING)
    assert c.add_partitions(4, "other", pid, epoch, [TP]) == E.INVALID_PRODUCER_ID_MAPPING


def test_timeout_above_the_maximum() -> None:
    c = TransactionCoordinator(TransactionSettings(max_timeout_ms=1000))
    assert c.init_producer_id(0, "t", 1001).error == E.INVALID_TRANSACTION_TIMEOUT
    assert c.init_producer_id(0, "t", 0).error == E.INVALID_TRANSACTION_TIMEOUT
    assert c.init_producer_id(0, "", 100).error == E.INVALID_REQUEST
    assert c.init_producer_id(0, "t", 1000).error == E.NONE


def test_commit_of_an_empty_transaction() -> None:
    c = TransactionCoordinator()
    pid, epoch = started(c)
    assert c.end_txn(0, "t", pid, epoch, True) == (E.INVALID_TXN_STATE, -1, -1)
    c.add_partitions(1, "t", pid, epoch, [TP])
    assert c.end_txn(2, "t", pid, epoch, True) == (E.NONE, -1, -1)
    assert c.transactions["t"].state is TxnState.PREPARE_COMMIT
    assert c.end_txn(2, "t", pid, epoch, True)[0] == E.CONCURRENT_TRANSACTIONS
    [markers] = c.drain_markers()
    c.complete(markers)
    assert c.end_txn(3, "t", pid, epoch, True)[0] == E.NONE  # a retry
    assert c.end_txn(3, "t", pid, epoch, False)[0] == E.INVALID_TXN_STATE


def test_a_timed_out_transaction_is_aborted_and_its_producer_fenced() -> None:
    c = TransactionCoordinator()
    pid, epoch = started(c, timeout_ms=1000)
    c.add_partitions(10.0, "t", pid, epoch, [TP], fence_on_timeout=True)
    assert c.next_deadline() == 11.0
    c.tick(10.9)
    assert c.drain_markers() == []
    c.tick(11.0)
    [markers] = c.drain_markers()
    assert not markers.commit and markers.producer_epoch == epoch + 1
    c.complete(markers)
    assert c.next_deadline() is None
    assert c.end_txn(12, "t", pid, epoch, True)[0] == E.PRODUCER_FENCED


def test_kafka_0_11_aborts_a_timed_out_transaction_without_fencing() -> None:
    c = TransactionCoordinator()
    pid, epoch = started(c, timeout_ms=1000)
    c.add_partitions(0.0, "t", pid, epoch, [TP], fence_on_timeout=False)
    c.tick(5.0)
    [markers] = c.drain_markers()
    assert markers.producer_epoch == epoch
    c.complete(markers)
    assert c.end_txn(6, "t", pid, epoch, False)[0] == E.NONE  # CompleteAbort + abort


def test_transaction_version_2_bumps_the_epoch_at_every_end() -> None:
    c = TransactionCoordinator()
    pid, epoch = started(c)
    c.add_partitions(0, "t", pid, epoch, [TP], client_version=2)
    assert c.end_txn(1, "t", pid, epoch, True, client_version=2) == (E.NONE, pid, epoch + 1)
    [markers] = c.drain_markers()
    assert markers.commit and markers.producer_epoch == epoch + 1
    c.complete(markers)
    # A retry with the old epoch is answered as done; the old epoch is fenced otherwise.
    assert c.end_txn(2, "t", pid, epoch, True, client_version=2) == (E.NONE, pid, epoch + 1)
    assert c.end_txn(2, "t", pid, epoch, False, client_version=2)[0] == E.INVALID_TXN_STATE
    assert c.add_partitions(2, "t", pid, epoch, [TP]) == E.PRODUCER_FENCED
    # An abort with nothing added bumps the epoch too; a commit of nothing is refused.
    assert c.end_txn(3, "t", pid, epoch + 1, True, client_version=2)[0] == E.INVALID_TXN_STATE
    assert c.end_txn(3, "t", pid, epoch + 1, False, 2) == (E.NONE, pid, epoch + 2)
    c.complete(c.drain_markers()[0])


def test_an_exhausted_epoch_rotates_the_producer_id() -> None:
    c = TransactionCoordinator()
    pid, _ = started(c)
    c.transactions["t"].producer_epoch = MAX_EPOCH - 1
    rotated = c.init_producer_id(0, "t", 60_000)
    assert rotated.producer_id != pid and rotated.producer_epoch == 0


def test_kip_360_init_with_the_current_id_and_epoch() -> None:
    c = TransactionCoordinator()
    pid, epoch = started(c)
    bumped = c.init_producer_id(1, "t", 60_000, (pid, epoch))
    assert (bumped.error, bumped.producer_id, bumped.producer_epoch) == (E.NONE, pid, epoch + 1)
    # A retry of that call (its answer lost) gets the same epoch; an older one is fenced.
    assert c.init_producer_id(2, "t", 60_000, (pid, epoch)).producer_epoch == epoch + 1
    assert c.init_producer_id(2, "t", 60_000, (pid + 7, epoch)).error == E.PRODUCER_FENCED


def test_verify_says_whether_a_partition_is_in_the_transaction() -> None:
    c = TransactionCoordinator()
    pid, epoch = started(c)
    assert c.verify("t", pid, epoch, TP) == E.TRANSACTION_ABORTABLE
    c.add_partitions(0, "t", pid, epoch, [TP])
    assert c.verify("t", pid, epoch, TP) == E.NONE
    assert c.verify("t", pid, epoch, ("out", 1)) == E.TRANSACTION_ABORTABLE
    assert c.verify("t", pid, epoch, group="g") == E.TRANSACTION_ABORTABLE
    c.add_partitions(0, "t", pid, epoch, groups=["g"])
    assert c.verify("t", pid, epoch, group="g") == E.NONE


def _transactional_batch(pid: int, epoch: int, sequence: int, count: int = 2) -> bytes:
    return record_batch(count, producer_id=pid, epoch=epoch, sequence=sequence,
                        transactional=True)


def test_markers_end_transactions_in_the_logs_and_the_offsets() -> None:
    state = ClusterState()
    topic = state.create_topic("out", 1)
    log = topic.partitions[0]
    c = state.transactions
    pid, epoch = started(c)
    c.add_partitions(0, "t", pid, epoch, [TP])
    c.add_partitions(0, "t", pid, epoch, groups=["g"])
    log.append(read_record_set(_transactional_batch(pid, epoch, 0)))
    state.offsets.commit_pending("g", pid, "in", 0, 42)
    assert (log.high_watermark, log.last_stable_offset) == (2, 0)
    assert state.offsets.unstable("g", "in", 0) and state.offsets.get("g", "in", 0) is None
    c.end_txn(1, "t", pid, epoch, False)
    state.write_markers()
    assert (log.high_watermark, log.last_stable_offset) == (3, 3)
    assert [(t.first_offset, t.last_offset) for t in log.producers.aborted_between(0, 3)] == [
        (0, 2)]
    assert state.offsets.get("g", "in", 0) is None and not state.offsets.unstable("g", "in", 0)
    assert c.transactions["t"].state is TxnState.COMPLETE_ABORT
    # The next transaction commits: its records and offsets become visible.
    c.add_partitions(2, "t", pid, epoch, [TP])
    c.add_partitions(2, "t", pid, epoch, groups=["g"])
    log.append(read_record_set(_transactional_batch(pid, epoch, 2)))
    state.offsets.commit_pending("g", pid, "in", 0, 42)
    assert log.last_stable_offset == 3
    c.end_txn(3, "t", pid, epoch, True)
    state.write_markers()
    assert (log.high_watermark, log.last_stable_offset) == (6, 6)
    assert log.producers.aborted_between(3, 6) == []
    committed = state.offsets.get("g", "in", 0)
    assert committed is not None and committed.offset == 42
    # The markers are control batches a client reads as such.
    from kafka.record.default_records import DefaultRecordBatch

    marker = next(b for b in log.batches_from(5))
    parsed = DefaultRecordBatch(bytearray(marker.data))
    assert parsed.is_control_batch and parsed.validate_crc() and parsed.producer_id == pid


def test_pending_offsets_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from kclient.emulator import offsets

    monkeypatch.setattr(offsets, "MAX_PENDING_OFFSETS", 2)
    store = offsets.OffsetStore()
    assert store.commit_pending("g", 1, "t", 0, 5) == E.NONE
    assert store.commit_pending("g", 1, "t", 0, 6) == E.NONE  # the same partition again
    assert store.commit_pending("g", 2, "t", 0, 5) == E.NONE
    assert store.commit_pending("g", 3, "t", 0, 5) == E.UNKNOWN_SERVER_ERROR
    store.end_transaction("g", 1, True)
    assert store.commit_pending("g", 3, "t", 0, 5) == E.NONE
    assert store.get("g", "t", 0) == offsets.CommittedOffset(6)
