"""Produced record sets read as a broker reads them (kclient.emulator.records): every size
a client controls is bounded, and what Kafka refuses is refused with Kafka's error code."""

from __future__ import annotations

import gzip
import struct
import time
import tracemalloc
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.emulator.records import (
    MAX_INFLATED_BYTES,
    RecordsError,
    read_record_set,
)
from kclient.protocol.constants import ErrorCode

pytestmark = pytest.mark.timeout(30)


def legacy(value: bytes | None, *, magic: int = 1, codec: int = 0, offset: int = 0,
           timestamp: int = 1234, key: bytes | None = None) -> bytes:
    """One magic 0/1 message (the CRC is not checked by the emulator)."""
    body = struct.pack(">bb", magic, codec)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    return struct.pack(">qi", offset, len(body) + 4) + struct.pack(">I", 0) + body


def inner_message(size: int) -> bytes:
    """An inner message header claiming ``size`` bytes (with crc, magic 1, attributes 0)."""
    return struct.pack(">qi", 0, size) + struct.pack(">Ibb", 0, 1, 0)


def v2_batch(count: int, attributes: int = 0, producer_id: int = -1) -> bytes:
    rest = struct.pack(">ibIhiqqqhii", -1, 2, 0, attributes, count - 1, 5, 7, producer_id, 0,
                       0, count) + b"r" * count
    return struct.pack(">qi", 0, len(rest)) + rest


@pytest.mark.parametrize("size", [-12, -24, -1, 0, 13])
def test_an_inner_message_size_that_would_not_move_the_walk_is_corrupt(size: int) -> None:
    # Today's main spun forever on -12 (the walk stood still) and walked backwards on -24.
    wrapper = legacy(gzip.compress(inner_message(size) + b"x" * 64), codec=1)
    started = time.perf_counter()
    with pytest.raises(RecordsError, match="smaller than the 14-byte minimum") as info:
        read_record_set(wrapper)
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE
    assert time.perf_counter() - started < 1.0


def test_a_gzip_bomb_stops_at_the_inflation_bound_without_holding_it() -> None:
    # An inner message claiming 1 GiB, then 72 MiB of zeros: about 70 KB compressed.
    inner = inner_message(1 << 30) + bytes(1 << 20)
    pieces = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    body = pieces.compress(inner)
    for _ in range(71):
        body += pieces.compress(bytes(1 << 20))
    body += pieces.flush()
    wrapper = legacy(body, codec=1)
    tracemalloc.start()
    try:
        with pytest.raises(RecordsError, match="inflates to more than") as info:
            read_record_set(wrapper, max_message_bytes=len(wrapper) + 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE
    assert peak < 8 * 1024 * 1024  # pieces of 64 KiB, never the 64 MiB bound itself
    assert MAX_INFLATED_BYTES == 64 * 1024 * 1024


def test_a_gzip_wrapper_counts_its_inner_messages() -> None:
    inner = b"".join(legacy(b"v%d" % i, offset=i) for i in range(5))
    batches = read_record_set(legacy(gzip.compress(inner), codec=1))
    assert [(b.magic, b.codec, b.count) for b in batches] == [(1, 1, 5)]


@pytest.mark.parametrize(("inner", "what"), [
    (legacy(b"v", codec=1), "itself compressed"),
    (legacy(b"v", magic=0), "inner message of magic 0"),
])
def test_inner_messages_are_uncompressed_and_of_the_wrappers_magic(inner: bytes,
                                                                   what: str) -> None:
    with pytest.raises(RecordsError, match=what) as info:
        read_record_set(legacy(gzip.compress(inner), codec=1))
    assert info.value.code == ErrorCode.INVALID_RECORD


def test_a_batch_over_max_message_bytes_is_message_too_large() -> None:
    batch = v2_batch(100)
    assert read_record_set(batch, max_message_bytes=len(batch))[0].count == 100
    with pytest.raises(RecordsError, match=r"max\.message\.bytes") as info:
        read_record_set(batch, max_message_bytes=len(batch) - 1)
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE


def test_v2_batches_carry_their_flags() -> None:
    batch = read_record_set(v2_batch(3, attributes=0x10 | 4, producer_id=77))[0]
    assert (batch.count, batch.codec_name, batch.transactional, batch.control,
            batch.producer_id, batch.max_timestamp) == (3, "zstd", True, False, 77, 7)


@pytest.mark.parametrize(("records", "match"), [
    (b"\x00" * 10, "less than a batch header"),
    (struct.pack(">qi", 0, -5) + b"\x00" * 20, "claims -5 bytes"),
    (struct.pack(">qi", 0, 99) + b"\x00" * 20, "claims 99 bytes"),
    (struct.pack(">qib", 0, 9, 0) + b"\x00" * 8, "shorter than its header"),
    (struct.pack(">qiIb", 0, 5, 0, 7) + b"\x00", "unknown record magic 7"),
])
def test_malformed_record_sets_are_corrupt_message(records: bytes, match: str) -> None:
    with pytest.raises(RecordsError, match=match) as info:
        read_record_set(records)
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 4))
def test_any_bytes_are_read_or_refused_with_a_code(data: bytes, codec: int) -> None:
    for records in (data, legacy(data, codec=codec), legacy(gzip.compress(data), codec=1)):
        try:
            batches = read_record_set(records)
        except RecordsError as exc:
            assert exc.code in (ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD,
                                ErrorCode.MESSAGE_TOO_LARGE)
        else:
            assert sum(len(b.data) for b in batches) == len(records)
