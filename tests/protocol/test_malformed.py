"""Malformed input: every failure is a ProtocolError subclass that names a byte offset.

Never IndexError, struct.error, MemoryError or a hang, and a length prefix that
claims more than the data holds is refused before anything of that size is
allocated.
"""

from __future__ import annotations

import struct
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.errors import (
    FrameTooLargeError,
    InvalidLengthError,
    InvalidTaggedFieldsError,
    InvalidVarintError,
    ProtocolError,
    TruncatedMessageError,
)
from kclient.protocol import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameDecoder,
    decode,
    decode_response,
    encode,
    frame,
    read_uvarint,
    write_uvarint,
)

from .test_wire_kafka_python import _api_versions_response, _metadata_response

VALID = {
    # v1 and v3: the one-pass decoding of fixed-width struct arrays without and
    # with per-element tag sections
    "ApiVersionsResponse-v1": ("ApiVersionsResponse", 1, _api_versions_response(1)),
    "ApiVersionsResponse-v3": ("ApiVersionsResponse", 3, _api_versions_response(3)),
    "MetadataResponse-v5": ("MetadataResponse", 5, _metadata_response(5)),
    "MetadataResponse-v12": ("MetadataResponse", 12, _metadata_response(12)),
}


def _protocol_error(call: Callable[[], object], data_length: int) -> ProtocolError:
    """Run ``call``; it must raise a ProtocolError whose offset lies within the data."""
    with pytest.raises(ProtocolError) as info:
        call()
    error = info.value
    assert isinstance(error.offset, int), f"{type(error).__name__} without an offset: {error}"
    assert 0 <= error.offset <= data_length, f"offset {error.offset} outside 0..{data_length}"
    assert f"offset {error.offset}" in str(error)
    return error


@contextmanager
def _no_big_allocation(limit: int = 1 << 20) -> Iterator[None]:
    """Fail if the block allocates more than ``limit`` bytes at once or takes over 1 s."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < limit, f"peak allocation {peak} bytes"
    assert elapsed < 1.0, f"took {elapsed:.2f} s"


# -- truncation at every offset ---------------------------------------------------------


@pytest.mark.parametrize("case", sorted(VALID))
def test_truncated_at_every_offset(case: str) -> None:
    name, version, values = VALID[case]
    data = encode(name, version, values)
    assert decode(name, version, data).to_dict()["error_code"] == 0
    kinds: set[str] = set()
    for cut in range(len(data)):
        error = _protocol_error(partial(decode, name, version, data[:cut]), cut)
        kinds.add(type(error).__name__)
    # A cut inside a length-prefixed item is a length error, elsewhere truncation.
    assert kinds <= {"TruncatedMessageError", "InvalidLengthError"}
    assert "TruncatedMessageError" in kinds


def test_truncated_response_through_decode_response() -> None:
    body = encode("ApiVersionsResponse", 3, _api_versions_response(3))
    wire = struct.pack(">i", 9) + body
    for cut in range(len(wire)):
        _protocol_error(partial(decode_response, 18, 3, wire[:cut]), cut)


# -- lengths ----------------------------------------------------------------------------

# MetadataRequest v1: topics (int32 count, nullable) of {name: int16-length string}
# MetadataResponse v0: brokers (int32 count) of {node_id, host string, port}, topics


def test_negative_string_length() -> None:
    data = struct.pack(">ih", 1, -5)
    error = _protocol_error(lambda: decode("MetadataRequest", 1, data), len(data))
    assert isinstance(error, InvalidLengthError)
    assert error.offset == 4


def test_null_where_null_is_not_allowed() -> None:
    string = struct.pack(">ih", 1, -1)  # topic name null; names are not nullable in v1
    assert isinstance(_protocol_error(lambda: decode("MetadataRequest", 1, string),
                                      len(string)), InvalidLengthError)
    array = struct.pack(">ii", -1, 0)  # brokers null in MetadataResponse v0
    error = _protocol_error(lambda: decode("MetadataResponse", 0, array), len(array))
    assert isinstance(error, InvalidLengthError) and error.offset == 0


def test_negative_array_length() -> None:
    data = struct.pack(">ii", -2, 0)
    error = _protocol_error(lambda: decode("MetadataResponse", 0, data), len(data))
    assert isinstance(error, InvalidLengthError) and error.offset == 0


def test_null_topics_allowed_where_nullable() -> None:
    assert decode("MetadataRequest", 1, struct.pack(">i", -1)).to_dict()["topics"] is None


@pytest.mark.parametrize(("name", "version", "data", "offset"), [
    # int32 array count 2**31-1 with nothing after it
    ("MetadataResponse", 0, struct.pack(">i", 2**31 - 1), 0),
    # the same with a few bytes of elements
    ("MetadataResponse", 0, struct.pack(">i", 2**31 - 1) + b"\x00" * 12, 0),
    # compact array count 2**31 - 1 (uvarint 2**31)
    ("ApiVersionsResponse", 3, b"\x00\x00" + write_uvarint(2**31), 2),
    # compact string of 2**32 - 2 bytes (largest 5-byte uvarint)
    ("ApiVersionsRequest", 3, write_uvarint(2**32 - 1) + b"abc", 0),
    # int16 string length 32767 with 3 bytes of data
    ("MetadataRequest", 1, struct.pack(">ih", 1, 32767) + b"abc", 4),
    # int32 bytes length 2**31-1 (SaslAuthenticateRequest v0 auth_bytes)
    ("SaslAuthenticateRequest", 0, struct.pack(">i", 2**31 - 1) + b"\x00" * 8, 0),
    # compact bytes length 2**31-1 (SaslAuthenticateRequest v2)
    ("SaslAuthenticateRequest", 2, write_uvarint(2**31) + b"\x00" * 8, 0),
], ids=["array-int32", "array-int32-some-data", "array-compact", "string-compact",
        "string-int16", "bytes-int32", "bytes-compact"])
def test_oversized_lengths_fail_fast_without_allocating(name: str, version: int, data: bytes,
                                                        offset: int) -> None:
    with _no_big_allocation():
        error = _protocol_error(lambda: decode(name, version, data), len(data))
    assert isinstance(error, InvalidLengthError), repr(error)
    assert error.offset == offset


def test_oversized_nested_array_inside_valid_prefix() -> None:
    # One broker, then a topic whose partition array claims 2**31-1 entries.
    prefix = struct.pack(">i", 1) + struct.pack(">ih", 1, 1) + b"h" + struct.pack(">i", 9092)
    topics = struct.pack(">i", 1) + struct.pack(">hh", 0, 1) + b"t"
    data = prefix + topics + struct.pack(">i", 2**31 - 1)
    with _no_big_allocation():
        error = _protocol_error(lambda: decode("MetadataResponse", 0, data), len(data))
    assert isinstance(error, InvalidLengthError)
    assert error.offset == len(prefix) + len(topics)


# -- varints ----------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [1, 2, 5])
def test_varint_longer_than_five_bytes(extra: int) -> None:
    varint = b"\x80" * (4 + extra) + b"\x01"
    with pytest.raises(InvalidVarintError) as info:
        read_uvarint(varint, 0)
    assert info.value.offset == 0
    data = b"\x00\x00" + varint  # where the api_keys count belongs
    error = _protocol_error(lambda: decode("ApiVersionsResponse", 3, data), len(data))
    assert isinstance(error, InvalidVarintError) and error.offset == 2


def test_long_varint_in_tag_section() -> None:
    body = encode("ApiVersionsResponse", 3, {"api_keys": []})
    assert body.endswith(b"\x00")  # empty tag section
    for bad_section in (b"\x81\x80\x80\x80\x80\x00",         # the count
                        b"\x01" + b"\xff" * 6,               # a tag number
                        b"\x01\x00" + b"\x80" * 5 + b"\x00"):  # a size
        data = body[:-1] + bad_section
        error = _protocol_error(partial(decode, "ApiVersionsResponse", 3, data),
                                len(data))
        assert isinstance(error, InvalidVarintError)
        assert error.offset is not None and error.offset >= len(body) - 1


def test_five_byte_varint_is_fine() -> None:
    assert read_uvarint(b"\x80\x80\x80\x80\x01", 0) == (2**28, 5)
    with pytest.raises(TruncatedMessageError):
        read_uvarint(b"\x80\x80", 0)


# -- tagged fields ----------------------------------------------------------------------


def _with_tags(*items: tuple[int, bytes]) -> bytes:
    body = encode("ApiVersionsResponse", 3, {"api_keys": []})
    section = bytearray(write_uvarint(len(items)))
    for tag, payload in items:
        section += write_uvarint(tag) + write_uvarint(len(payload)) + payload
    return body[:-1] + bytes(section)


EPOCH = struct.pack(">q", 3)


@pytest.mark.parametrize(("items", "bad_index"), [
    (((1, EPOCH), (0, b"\x01")), 1),              # known tags out of order
    (((1, EPOCH), (1, EPOCH)), 1),                # known tag repeated
    (((9, b""), (8, b"")), 1),                    # unknown tags out of order
    (((9, b"\x01"), (9, b"\x02")), 1),            # unknown tag repeated
    (((0, b"\x01"), (7, b""), (3, b"\x00")), 2),  # a known tag after an unknown one
])
def test_tags_out_of_order_or_repeated(items: tuple[tuple[int, bytes], ...],
                                       bad_index: int) -> None:
    data = _with_tags(*items)
    error = _protocol_error(lambda: decode("ApiVersionsResponse", 3, data), len(data))
    assert isinstance(error, InvalidTaggedFieldsError)
    good_prefix = _with_tags(*items[:bad_index])
    # offset = where the offending tag starts: after the good items
    # (the count byte differs, but is one byte in both)
    assert error.offset == len(good_prefix)


def test_tagged_field_size_running_past_the_end() -> None:
    data = _with_tags((1, EPOCH))[:-3]
    error = _protocol_error(lambda: decode("ApiVersionsResponse", 3, data), len(data))
    assert isinstance(error, TruncatedMessageError)


def test_tagged_field_size_not_matching_its_content() -> None:
    data = _with_tags((1, EPOCH + b"\x00"))  # an int64 declared as 9 bytes
    _protocol_error(lambda: decode("ApiVersionsResponse", 3, data), len(data))


# -- trailing bytes, bad text -----------------------------------------------------------


@pytest.mark.parametrize("case", sorted(VALID))
def test_trailing_bytes(case: str) -> None:
    name, version, values = VALID[case]
    data = encode(name, version, values)
    error = _protocol_error(lambda: decode(name, version, data + b"\x00\x01"), len(data) + 2)
    assert error.offset == len(data)
    assert "trailing" in str(error)


def test_trailing_bytes_after_a_response_body() -> None:
    wire = struct.pack(">i", 1) + encode("MetadataResponse", 1, _metadata_response(1)) + b"\x00"
    error = _protocol_error(lambda: decode_response(3, 1, wire), len(wire))
    assert error.offset == len(wire) - 1


def test_invalid_utf8_in_a_string() -> None:
    data = struct.pack(">ih", 1, 2) + b"\xff\xfe"
    _protocol_error(lambda: decode("MetadataRequest", 1, data), len(data))


# -- fuzzing: anything at all decodes or raises ProtocolError ---------------------------


def _decode_or_protocol_error(name: str, version: int, data: bytes) -> None:
    try:
        decode(name, version, data)
    except ProtocolError as error:
        assert isinstance(error.offset, int) and 0 <= error.offset <= len(data), repr(error)


@settings(max_examples=150, deadline=None, database=None)
@given(case=st.sampled_from(sorted(VALID)), data=st.data())
def test_mutated_valid_messages(case: str, data: st.DataObject) -> None:
    name, version, values = VALID[case]
    encoded = bytearray(encode(name, version, values))
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(encoded) - 1))
        encoded[index] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(encoded)))
    _decode_or_protocol_error(name, version, bytes(encoded[:cut]))


@settings(max_examples=150, deadline=None, database=None)
@given(name_version=st.sampled_from([("ApiVersionsResponse", 0), ("ApiVersionsResponse", 3),
                                     ("MetadataResponse", 1), ("MetadataResponse", 12),
                                     ("MetadataRequest", 12), ("ApiVersionsRequest", 4)]),
       data=st.binary(max_size=64))
def test_random_bytes(name_version: tuple[str, int], data: bytes) -> None:
    _decode_or_protocol_error(*name_version, data)


# -- framing ----------------------------------------------------------------------------


def test_frame_size_above_max_is_refused_from_the_prefix_alone() -> None:
    decoder = FrameDecoder(max_frame_size=1024)
    decoder.feed(struct.pack(">i", 1025))  # only the four size bytes
    with pytest.raises(FrameTooLargeError) as info:
        next(decoder)
    assert info.value.offset == 0
    assert "1025" in str(info.value) and "max_frame_size" in str(info.value)
    # poisoned: later calls repeat the error instead of reading garbage
    with pytest.raises(FrameTooLargeError):
        decoder.feed(b"\x00" * 10)
    with pytest.raises(FrameTooLargeError):
        next(decoder)


def test_huge_frame_prefix_with_default_max_allocates_nothing() -> None:
    decoder = FrameDecoder()
    assert decoder.max_frame_size == DEFAULT_MAX_FRAME_SIZE == 100 * 1024 * 1024
    with _no_big_allocation():
        decoder.feed(struct.pack(">i", 2**31 - 1))
        with pytest.raises(FrameTooLargeError):
            next(decoder)
    assert decoder.buffered == 4


def test_frame_at_exactly_the_max_is_accepted() -> None:
    decoder = FrameDecoder(max_frame_size=8)
    decoder.feed(frame(b"12345678"))
    assert list(decoder) == [b"12345678"]


def test_negative_frame_size() -> None:
    decoder = FrameDecoder()
    decoder.feed(frame(b"ok") + struct.pack(">i", -7))
    assert next(decoder) == b"ok"
    with pytest.raises(InvalidLengthError) as info:
        next(decoder)
    assert info.value.offset == 6  # counted from the start of the stream


def test_error_offset_counts_stream_bytes() -> None:
    decoder = FrameDecoder(max_frame_size=16)
    decoder.feed(frame(b"a" * 10) + frame(b""))
    assert list(decoder) == [b"a" * 10, b""]
    decoder.feed(struct.pack(">i", 17))
    with pytest.raises(FrameTooLargeError) as info:
        next(decoder)
    assert info.value.offset == 14 + 4


def test_bad_max_frame_size() -> None:
    with pytest.raises(ValueError):
        FrameDecoder(max_frame_size=0)


def test_two_byte_compact_lengths_are_read_inline_and_checked_like_the_others() -> None:
    # SaslAuthenticateRequest v2: AuthBytes (compact bytes), then the tag section.
    for size in (127, 128, 1000, 16382, 16383):  # 1-, 2- and 3-byte length varints
        data = encode("SaslAuthenticateRequest", 2, {"auth_bytes": b"x" * size})
        message = decode("SaslAuthenticateRequest", 2, data)
        assert message.auth_bytes == b"x" * size  # type: ignore[attr-defined]
    data = encode("SaslAuthenticateRequest", 2, {"auth_bytes": b"x" * 1000})
    assert data[:2] == bytes([0xE9, 0x07])  # 1001 as a varint
    # A two-byte length claiming more than is left is refused where the length starts.
    error = _protocol_error(lambda: decode("SaslAuthenticateRequest", 2, data[:500]), 500)
    assert isinstance(error, InvalidLengthError) and error.offset == 0
    # Cut after the length's first byte, or inside a longer varint: truncated, offset 0.
    for cut in (data[:1], bytes([0x80, 0x80])):
        error = _protocol_error(partial(decode, "SaslAuthenticateRequest", 2, cut), len(cut))
        assert isinstance(error, TruncatedMessageError) and error.offset == 0
