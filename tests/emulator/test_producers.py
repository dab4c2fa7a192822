"""A partition's producer state (epochs, sequences, duplicates), pure, and on the wire with
kafka-python's idempotent producer where a real client shows the rule."""

from __future__ import annotations

import pytest

from kclient.emulator import EmulatedBroker
from kclient.emulator.log import PartitionLog
from kclient.emulator.producers import ProducerPolicy, SequenceError
from kclient.emulator.records import read_record_set
from kclient.emulator.rules import producer_policy
from kclient.net import Connection
from kclient.protocol.constants import ErrorCode as E

from .batches import produce_body, record_batch

pytestmark = pytest.mark.timeout(30)
PID = 4000


def append(log: PartitionLog, epoch: int, sequence: int, count: int = 2,
           policy: ProducerPolicy | None = None, transactional: bool = False) -> int:
    """Check and append one batch as a leader does; its base offset (a duplicate's first)."""
    [batch] = read_record_set(record_batch(count, producer_id=PID, epoch=epoch,
                                           sequence=sequence, transactional=transactional))
    duplicate = log.producers.check(batch, policy or ProducerPolicy())
    return duplicate if duplicate is not None else log.append([batch])


def code_of(log: PartitionLog, epoch: int, sequence: int, **kwargs: object) -> int:
    with pytest.raises(SequenceError) as raised:
        append(log, epoch, sequence, **kwargs)  # type: ignore[arg-type]
    return raised.value.code


def test_an_older_epoch_is_fenced() -> None:
    log = PartitionLog()
    append(log, 3, 0)
    assert code_of(log, 2, 2) == E.INVALID_PRODUCER_EPOCH


def test_a_gap_in_sequences_is_out_of_order() -> None:
    log = PartitionLog()
    assert append(log, 0, 0) == 0
    assert append(log, 0, 2) == 2
    assert code_of(log, 0, 7) == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    # A new epoch starts at sequence 0.
    assert code_of(log, 1, 4) == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert append(log, 1, 0) == 4


def test_a_duplicate_gets_the_first_offset() -> None:
    log = PartitionLog()
    append(log, 0, 0)
    append(log, 0, 2)
    assert append(log, 0, 0) == 0 and log.high_watermark == 4  # not stored twice
    # Kafka 0.11 answered DUPLICATE_SEQUENCE_NUMBER instead.
    assert code_of(log, 0, 2, policy=producer_policy("0.11")) == E.DUPLICATE_SEQUENCE_NUMBER


def test_unknown_producer_by_release() -> None:
    for release, refused in (("0.11", False), ("1.0", True), ("2.4", True), ("2.5", False),
                             ("3.9", False)):
        log = PartitionLog()
        policy = producer_policy(release)
        if refused:
            assert code_of(log, 0, 5, policy=policy) == E.UNKNOWN_PRODUCER_ID, release
        else:
            assert append(log, 0, 5, policy=policy) == 0, release


def test_plain_batch_inside_a_transaction() -> None:
    log = PartitionLog()
    append(log, 0, 0, transactional=True)
    assert log.last_stable_offset == 0 and log.high_watermark == 2
    assert code_of(log, 0, 2) == E.INVALID_TXN_STATE


async def test_idempotent_produce_on_the_wire() -> None:
    async with EmulatedBroker(1, "3.9") as broker, Connection("127.0.0.1", broker.port) as conn:
        broker.state.create_topic("t", 1)

        async def produce(epoch: int, sequence: int) -> tuple[int, int]:
            answer = await conn.request("Produce", produce_body("t", record_batch(
                2, producer_id=PID, epoch=epoch, sequence=sequence)), 9)
            part = answer.responses[0].partition_responses[0]
            return part.error_code, part.base_offset

        assert await produce(1, 0) == (E.NONE, 0)
        assert await produce(1, 0) == (E.NONE, 0)  # the retry of a lost answer
        assert await produce(1, 5) == (E.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
        assert await produce(0, 2) == (E.INVALID_PRODUCER_EPOCH, -1)
        assert await produce(1, 2) == (E.NONE, 2)


def test_kafka_python_idempotent_producer_keeps_its_sequences() -> None:
    """A real idempotent producer's batches pass the checks, in order, once each."""
    kafka = pytest.importorskip("kafka")
    from kclient.emulator import EmulatedCluster, ThreadedEmulator

    with ThreadedEmulator(EmulatedCluster(["3.9"])) as emulator:
        emulator.cluster.state.create_topic("t", 1)
        producer = kafka.KafkaProducer(bootstrap_servers=emulator.bootstrap_servers,
                                       enable_idempotence=True, linger_ms=1,
                                       request_timeout_ms=5000)
        try:
            for i in range(30):
                producer.send("t", f"m{i}".encode())
                if i % 7 == 0:
                    producer.flush(5)
            producer.flush(5)
        finally:
            producer.close(5)
        assert emulator.cluster.state.topics["t"].partitions[0].high_watermark == 30


def test_producers_past_the_bound_are_forgotten_oldest_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kclient.emulator import producers

    monkeypatch.setattr(producers, "MAX_PRODUCERS", 3)
    log = PartitionLog()
    for pid in range(5):
        [batch] = read_record_set(record_batch(1, producer_id=pid, epoch=0, sequence=0,
                                               transactional=pid == 0))
        log.producers.check(batch, ProducerPolicy())
        log.append([batch])
    # Producer 0 has an open transaction: kept; 1 and 2 were forgotten.
    assert sorted(log.producers.producer_ids) == [0, 3, 4]
    assert log.last_stable_offset == 0
