"""The emulated cluster's partition logs (kclient.emulator.log) and committed offsets
(kclient.emulator.offsets): Kafka's topic rules, reads by offset and time, bounds."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.emulator.log import (
    MAX_PARTITIONS,
    PartitionLog,
    TopicError,
    TopicStore,
    creation_records,
    topic_name_problem,
)
from kclient.emulator.offsets import MAX_OFFSET_METADATA, OffsetStore
from kclient.emulator.records import Batch
from kclient.protocol.constants import ErrorCode


def batch(count: int = 1, timestamp: int = 0, size: int = 70) -> Batch:
    data = struct.pack(">qi", 0, size - 12) + b"\x00" * 4 + b"\x02" + b"\x00" * (size - 17)
    return Batch(2, 0, count, timestamp, data)


@pytest.mark.parametrize(("name", "problem"), [
    ("", "empty string"),
    (".", "'.' is not allowed"),
    ("..", "'..' is not allowed"),
    ("a" * 250, "250 characters long"),
    ("a\x00b", "'\\x00'"),
    ("a\nb", "'\\n'"),
    ("é", "'é'"),
    ("__consumer_offsets", "internal"),
    ("__transaction_state", "internal"),
    (3, "is text"),
])
def test_names_kafka_refuses(name: object, problem: str) -> None:
    found = topic_name_problem(name)
    assert found is not None and problem in found
    assert len(found) < 120  # a long name is never echoed whole


@pytest.mark.parametrize("name", ["a", "orders", "a.b_c-D9", "x" * 249, "__private"])
def test_names_kafka_takes(name: str) -> None:
    assert topic_name_problem(name) is None


def test_creating_checks_names_counts_collisions_and_the_partition_bound() -> None:
    store = TopicStore()
    store.create("a.b", 2)
    for name, count, code in [("a.b", 1, ErrorCode.TOPIC_ALREADY_EXISTS),
                              ("a_b", 1, ErrorCode.INVALID_TOPIC_EXCEPTION),
                              ("", 1, ErrorCode.INVALID_TOPIC_EXCEPTION),
                              ("__consumer_offsets", 1, ErrorCode.INVALID_REQUEST),
                              ("c", 0, ErrorCode.INVALID_PARTITIONS),
                              ("c", MAX_PARTITIONS, ErrorCode.POLICY_VIOLATION)]:
        with pytest.raises(TopicError) as info:
            store.create(name, count)
        assert info.value.code == code, name
    assert [t.name for t in store] == ["a.b"] and store.partition_count == 2
    store.delete("a.b")
    store.create("a_b", 1)  # no collision once the other is gone
    assert store.partition_count == 1


def test_one_request_makes_at_most_ten_thousand_records() -> None:
    assert creation_records([(2_147_483_647, 0)]) > 10_000
    assert creation_records([(9_998, 1)]) == 10_000


def test_batches_get_offsets_and_are_read_from_an_offset() -> None:
    log = PartitionLog()
    assert log.append([batch(3), batch(2)]) == 0
    assert log.append([batch(1)]) == 5
    assert log.high_watermark == 6
    assert [(s.base, s.last) for s in log.batches_from(4)] == [(3, 4), (5, 5)]
    data = log.read(0, 1)  # one batch at least, as Kafka since KIP-74
    assert struct.unpack_from(">q", data)[0] == 0 and len(data) == 70


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5, 50), max_size=30), st.integers(-10, 60))
def test_a_timestamp_finds_the_first_batch_reaching_it(stamps: list[int], wanted: int) -> None:
    log = PartitionLog()
    log.append([batch(2, ts) for ts in stamps])
    expected = next((2 * i for i, ts in enumerate(stamps) if ts >= wanted), log.high_watermark)
    assert log.offset_for_timestamp(wanted) == expected
    best = max(range(len(stamps)), key=lambda i: (stamps[i], -i), default=None)
    assert log.max_timestamp() == ((-1, -1) if best is None or stamps[best] < 0
                                   else (stamps[best], 2 * best + 1))


def test_the_cluster_keeps_at_most_its_stored_bytes_oldest_first() -> None:
    store = TopicStore(max_stored_bytes=1000)
    first, second = store.create("a", 1).partitions[0], store.create("b", 1).partitions[0]
    for _ in range(10):
        first.append([batch()])
    for _ in range(10):
        second.append([batch()])
    assert store.stored_bytes == 980  # 14 batches of 70 bytes
    assert (first.log_start_offset, len(first)) == (6, 4)  # a's batches were the oldest
    assert (second.log_start_offset, len(second)) == (0, 10)
    assert first.read(0, 1 << 20)[:8] == struct.pack(">q", 6)
    for _ in range(5):
        second.append([batch()])
    assert (first.log_start_offset, len(first), second.log_start_offset) == (10, 0, 1)
    store.delete("b")
    assert store.stored_bytes == 0


def test_offsets_are_kept_per_group_and_bounded_like_kafka() -> None:
    offsets = OffsetStore()
    assert offsets.commit("g", "t", 0, 5, 1, "meta") == ErrorCode.NONE
    assert offsets.commit("g", "t", 1, 6, metadata="x" * (MAX_OFFSET_METADATA + 1)) == (
        ErrorCode.OFFSET_METADATA_TOO_LARGE)
    assert list(offsets.committed("g")) == [("t", 0)]
    assert offsets.get("g", "t", 0) is not None and offsets.has_offsets("g")
    offsets.delete_topic("t")
    assert not offsets.has_offsets("g") and list(offsets.group_ids()) == []
