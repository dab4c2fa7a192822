"""Record batches for emulator tests, built by kafka-python's record builders (real bytes,
real CRCs), and Produce / Fetch request bodies around them."""

from __future__ import annotations

import struct
import uuid

import pytest


def record_batch(count: int = 1, *, producer_id: int = -1, epoch: int = -1,
                 sequence: int = -1, transactional: bool = False, magic: int = 2,
                 codec: int = 0, value: bytes = b"v") -> bytes:
    """A record batch (magic 2) or message set (magic 0/1) of ``count`` records.

    ``codec`` 4 (zstd, which the venv cannot compress) marks an uncompressed batch as
    zstd in its attributes: enough for the checks that read the attributes only.
    """
    records = pytest.importorskip("kafka.record.default_records")
    legacy = pytest.importorskip("kafka.record.legacy_records")
    if magic < 2:
        builder = legacy.LegacyRecordBatchBuilder(magic=magic, compression_type=codec,
                                                  batch_size=1 << 20)
        for i in range(count):
            builder.append(i, timestamp=1000 + i if magic else None, key=None, value=value)
        return bytes(builder.build())
    built = records.DefaultRecordBatchBuilder(
        magic=2, compression_type=0 if codec == 4 else codec, is_transactional=transactional,
        producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
        batch_size=1 << 20)
    for i in range(count):
        built.append(i, timestamp=1000 + i, key=None, value=value, headers=[])
    data = bytearray(built.build())
    if codec == 4:
        attributes = struct.unpack_from(">h", data, 21)[0]
        struct.pack_into(">h", data, 21, attributes | 4)
    return bytes(data)


def produce_body(topic: str, records: bytes, *, transactional_id: str | None = None,
                 partition: int = 0, acks: int = -1) -> dict[str, object]:
    return {"acks": acks, "timeout_ms": 1000, "transactional_id": transactional_id,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": records}]}]}


def fetch_body(topic: str, offset: int = 0, *, isolation: int = 0,
               partition: int = 0) -> dict[str, object]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": isolation, "topics": [
                {"topic": topic, "topic_id": uuid.UUID(int=0), "partitions": [
                    {"partition": partition, "fetch_offset": offset,
                     "partition_max_bytes": 1 << 20, "current_leader_epoch": -1,
                     "log_start_offset": -1}]}]}
