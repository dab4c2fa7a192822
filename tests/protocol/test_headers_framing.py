"""Request/response headers with Kafka's special cases, and incremental framing.

Expected bytes are written out by hand from the rules in DESIGN.md §3, so a
wrong header choice cannot hide behind a symmetric encode/decode.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.errors import (
    EncodeError,
    FrameTooLargeError,
    ProtocolError,
    TruncatedMessageError,
    UnknownMessageError,
    UnknownRequestError,
)
from kclient.protocol import (
    FrameDecoder,
    decode,
    decode_request,
    decode_request_header,
    decode_response,
    decode_response_body,
    decode_response_with_layout,
    encode,
    encode_request,
    encode_response,
    frame,
    is_flexible,
    request_header_version,
    response_header_version,
)
from kclient.protocol.constants import ApiKey
from tests.conftest import skip_without_shared

from .corpus import SPECS_DIR, corpus_registry


def _v1_header(key: int, version: int, correlation: int, client_id: bytes | None) -> bytes:
    head = struct.pack(">hhi", key, version, correlation)
    if client_id is None:
        return head + b"\xff\xff"
    return head + struct.pack(">h", len(client_id)) + client_id


# -- which header version ---------------------------------------------------------------


@pytest.mark.parametrize(("key", "version", "expected"), [
    (18, 0, 1), (18, 2, 1), (18, 3, 2), (18, 4, 2),      # ApiVersions: flexible from 3
    (3, 0, 1), (3, 8, 1), (3, 9, 2), (3, 13, 2),         # Metadata: flexible from 9
    (7, 0, 0), (7, 1, 1), (7, 3, 2),                     # ControlledShutdown: v0 has header v0
    (0, 8, 1), (0, 9, 2),                                # Produce (catalog only, no spec shipped)
    (36, 1, 1), (36, 2, 2),                              # SaslAuthenticate
])
def test_request_header_version(key: int, version: int, expected: int) -> None:
    assert request_header_version(key, version) == expected
    assert is_flexible(key, version) == (expected == 2)


@pytest.mark.parametrize(("key", "version", "expected"), [
    (18, 0, 0), (18, 3, 0), (18, 4, 0),   # ApiVersions: always v0
    (3, 8, 0), (3, 9, 1), (3, 12, 1),
    (36, 1, 0), (36, 2, 1),
])
def test_response_header_version(key: int, version: int, expected: int) -> None:
    assert response_header_version(key, version) == expected


# -- request headers on the wire --------------------------------------------------------


def test_request_header_v1_bytes() -> None:
    wire = encode_request(18, 2, 0x01020304, "kclient", {})
    assert wire == _v1_header(18, 2, 0x01020304, b"kclient")


def test_request_header_v2_keeps_a_non_compact_client_id() -> None:
    body = {"client_software_name": "kclient", "client_software_version": "1.0"}
    wire = encode_request(18, 3, 7, "kclient", body)
    # int16 length 7 (not the compact uvarint 8), then the empty tag section
    expected_header = _v1_header(18, 3, 7, b"kclient") + b"\x00"
    assert wire == expected_header + b"\x08kclient\x041.0\x00"
    assert wire[8:10] == b"\x00\x07"
    header, body_message = decode_request(wire)
    assert header.to_dict() == {"request_api_key": 18, "request_api_version": 3,
                                "correlation_id": 7, "client_id": "kclient"}
    assert body_message == decode("ApiVersionsRequest", 3, wire[len(expected_header):])


def test_request_header_v2_null_client_id() -> None:
    wire = encode_request(3, 12, 1, None, {"topics": None})
    assert wire.startswith(_v1_header(3, 12, 1, None) + b"\x00")
    header, _ = decode_request(wire)
    assert header.to_dict()["client_id"] is None


def test_non_ascii_client_id_length_counts_bytes() -> None:
    wire = encode_request(18, 0, 1, "клиент", {})
    assert wire == _v1_header(18, 0, 1, "клиент".encode())


def test_controlled_shutdown_v0_uses_header_v0() -> None:
    skip_without_shared(SPECS_DIR, "ControlledShutdown's spec, which kclient does not ship")
    registry = corpus_registry()
    wire = encode_request(7, 0, 9, "ignored-in-v0", {"broker_id": 5}, registry=registry)
    assert wire == struct.pack(">hhi", 7, 0, 9) + struct.pack(">i", 5)
    header, body = decode_request(wire, registry=registry)
    assert header.to_dict()["correlation_id"] == 9
    assert body.to_dict()["broker_id"] == 5
    # v1 is back to header v1, with the client id
    wire = encode_request(7, 1, 9, "kc", {"broker_id": 5}, registry=registry)
    assert wire == _v1_header(7, 1, 9, b"kc") + struct.pack(">i", 5)


def test_decode_request_header_returns_body_offset() -> None:
    wire = encode_request(3, 9, 4, "x", {"topics": []})
    header, offset = decode_request_header(wire)
    assert header.to_dict()["request_api_version"] == 9
    assert offset == len(_v1_header(3, 9, 4, b"x")) + 1


def test_short_request_header() -> None:
    with pytest.raises(TruncatedMessageError) as info:
        decode_request_header(b"\x00\x12\x00")
    assert info.value.offset == 3


def test_decode_request_trailing_bytes_when_strict() -> None:
    wire = encode_request(18, 1, 1, "c", {}) + b"\x00"
    with pytest.raises(ProtocolError) as info:
        decode_request(wire, strict=True)
    assert info.value.offset == len(wire) - 1


# -- response headers -------------------------------------------------------------------


def test_api_versions_response_header_is_v0_even_when_flexible() -> None:
    body = {"api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    wire = encode_response(18, 3, 0x0A0B0C0D, body)
    # correlation id, then the body straight away: no header tag section
    assert wire == b"\x0a\x0b\x0c\x0d" + encode("ApiVersionsResponse", 3, body)
    correlation, decoded = decode_response(18, 3, wire)
    assert correlation == 0x0A0B0C0D
    assert decoded.to_dict()["api_keys"] == body["api_keys"]


def test_metadata_response_header_v0_and_v1() -> None:
    body: dict[str, Any] = {"brokers": [], "topics": []}
    assert encode_response(3, 8, 3, body) == b"\x00\x00\x00\x03" + encode("MetadataResponse", 8,
                                                                          body)
    assert encode_response(3, 9, 3, body) == (b"\x00\x00\x00\x03\x00"
                                              + encode("MetadataResponse", 9, body))


def test_response_header_v1_with_tags_is_read() -> None:
    body = encode("MetadataResponse", 9, {"brokers": [], "topics": []})
    wire = b"\x00\x00\x00\x03" + b"\x01\x05\x02\xbe\xef" + body  # one unknown header tag
    correlation, decoded = decode_response(3, 9, wire)
    assert correlation == 3
    assert decoded == decode("MetadataResponse", 9, body)


def _api_versions_v0_error(ranges: list[tuple[int, int, int]]) -> bytes:
    out = struct.pack(">hi", 35, len(ranges))
    for key, low, high in ranges:
        out += struct.pack(">hhh", key, low, high)
    return out


@pytest.mark.parametrize("asked", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("ranges", [[(18, 0, 2)], []], ids=["kip511", "old-broker"])
def test_unsupported_version_error_body_is_read_as_v0(asked: int,
                                                      ranges: list[tuple[int, int, int]]) -> None:
    wire = struct.pack(">i", 11) + _api_versions_v0_error(ranges)
    correlation, body = decode_response(18, asked, wire)
    assert correlation == 11
    data = body.to_dict()
    assert data["error_code"] == 35
    assert [(a["api_key"], a["min_version"], a["max_version"])
            for a in data["api_keys"]] == ranges


@pytest.mark.parametrize("asked", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("ranges", [[(18, 0, 2)], []], ids=["kip511", "old-broker"])
def test_error_35_is_encoded_in_the_v0_layout_whatever_was_asked(
        asked: int, ranges: list[tuple[int, int, int]]) -> None:
    error = {"error_code": 35, "throttle_time_ms": 0, "api_keys": [
        {"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in ranges]}
    wire = encode_response(18, asked, 9, error)
    # Header v0 (the correlation id alone), then the hand-written v0 body.
    assert wire == struct.pack(">i", 9) + _api_versions_v0_error(ranges)
    # kclient reads its own bytes back, through both response decoders.
    correlation, body, layout = decode_response_with_layout(18, asked, wire)
    assert (correlation, layout, body.error_code) == (9, 0, 35)  # type: ignore[attr-defined]
    assert decode_response(18, asked, wire)[1] == body
    assert decode_response_body(18, asked, wire[4:]) == (body, 0)
    assert decode("ApiVersionsResponse", asked, wire[4:]) == body
    # The same message as a plain message class instance takes the same path.
    message = decode("ApiVersionsResponse", 0, wire[4:])
    assert encode_response(18, asked, 9, message) == wire


@pytest.mark.parametrize("asked", [1, 2, 3, 4])
def test_body_only_decode_falls_back_to_v0_only_for_error_answers(asked: int) -> None:
    # A successful answer keeps the asked layout: a v0 success handed in as v<asked>
    # is an error, as is a v<asked> body cut where it would still parse as v0.
    ok = encode("ApiVersionsResponse", 0, {"error_code": 0, "api_keys": [
        {"api_key": 18, "min_version": 0, "max_version": 4}]})
    with pytest.raises(ProtocolError):
        decode_response_body(18, asked, ok)
    # Any error code in the v0 layout is read as v0, as Kafka's Java client reads it.
    other = encode("ApiVersionsResponse", 0, {"error_code": 33, "api_keys": []})
    assert decode_response_body(18, asked, other)[1] == 0
    # A body that parses in the asked layout is read so, even carrying error 35.
    own = encode("ApiVersionsResponse", asked, {"error_code": 35, "api_keys": []})
    assert decode_response_body(18, asked, own)[1] == asked
    # Other messages never fall back.
    metadata = encode("MetadataResponse", 0, {"brokers": [], "topics": []})
    with pytest.raises(ProtocolError):
        decode_response_body(3, 1, metadata)


def test_other_errors_use_the_asked_layout() -> None:
    # error 33 (UNSUPPORTED_SASL_MECHANISM, anything but 35) in a v3 body
    body = encode("ApiVersionsResponse", 3, {"error_code": 33, "api_keys": []})
    correlation, decoded = decode_response(18, 3, struct.pack(">i", 2) + body)
    assert (correlation, decoded.to_dict()["error_code"]) == (2, 33)
    # (these bytes are not a valid v0 body, so the v3 layout was really used)
    with pytest.raises(ProtocolError):
        decode("ApiVersionsResponse", 0, body)


def test_response_round_trip_with_header() -> None:
    body = {"throttle_time_ms": 3, "brokers": [{"node_id": 1, "host": "h", "port": 1}],
            "cluster_id": "c", "controller_id": 1, "topics": []}
    for version in (1, 9, 12):
        correlation, decoded = decode_response(3, version, encode_response(3, version, 42, body))
        assert correlation == 42
        assert decoded.to_dict()["brokers"][0]["host"] == "h"


# -- framing ----------------------------------------------------------------------------


def test_frame_prefix() -> None:
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert frame(b"") == b"\x00\x00\x00\x00"


def test_zero_size_frame_yields_empty_bytes() -> None:
    decoder = FrameDecoder()
    decoder.feed(b"\x00\x00\x00\x00")
    assert next(decoder) == b""
    assert decoder.buffered == 0
    with pytest.raises(StopIteration):
        next(decoder)


def test_partial_frame_waits_for_more() -> None:
    decoder = FrameDecoder()
    decoder.feed(b"\x00\x00\x00\x05ab")
    assert list(decoder) == []
    assert decoder.buffered == 6
    decoder.feed(b"cde\x00")
    assert list(decoder) == [b"abcde"]
    assert decoder.buffered == 1


@settings(max_examples=200, deadline=None, database=None)
@given(payloads=st.lists(st.binary(max_size=40), max_size=8), data=st.data())
def test_frames_split_across_any_feed_boundaries(payloads: list[bytes],
                                                 data: st.DataObject) -> None:
    stream = b"".join(frame(p) for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    decoder = FrameDecoder(max_frame_size=64)
    received: list[bytes] = []
    start = 0
    for cut in [*cuts, len(stream)]:
        decoder.feed(memoryview(stream)[start:cut])
        received.extend(decoder)
        start = cut
    assert received == payloads
    assert decoder.buffered == 0


@pytest.mark.parametrize(("head", "says"), [
    (b"HTTP/1.1 400 Bad Request\r\n", "this address is a web server or proxy; check the port"),
    (bytes.fromhex("15030300020246"), "this listener expects TLS; connect with TLS (tls)"),
])
def test_a_peer_that_is_not_kafka_is_named_without_a_byte_offset(head: bytes, says: str
                                                                  ) -> None:
    """The first bytes say what the peer speaks: a user message, not decoder wording."""
    decoder = FrameDecoder()
    decoder.feed(head)
    with pytest.raises(FrameTooLargeError) as info:
        next(decoder)
    assert str(info.value).endswith(says) and info.value.offset is None


def test_an_oversized_kafka_frame_names_its_offset() -> None:
    decoder = FrameDecoder(max_frame_size=64)
    decoder.feed(frame(b"ok") + b"\x00\x01\x00\x00")
    assert next(decoder) == b"ok"
    with pytest.raises(FrameTooLargeError) as info:
        next(decoder)
    assert info.value.offset == 6
    assert str(info.value) == ("frame of 65536 bytes exceeds the maximum of 64 bytes (raise "
                               "max_frame_size if this peer really sends such frames) at "
                               "offset 6")


def test_request_trailing_bytes_are_ignored_like_a_broker_unless_strict() -> None:
    # librdkafka 2.x pads its MetadataRequest v12 with three bytes; Kafka brokers
    # ignore what follows the body, and so does the server-side decoder.
    wire = bytes.fromhex("0003000c00000003000772646b61666b610000000000010000")
    header, body = decode_request(wire)
    assert header.client_id == "rdkafka"  # type: ignore[attr-defined]
    assert body.topics is None  # type: ignore[attr-defined]
    with pytest.raises(ProtocolError, match="3 unexpected trailing bytes"):
        decode_request(wire, strict=True)


# -- requests a server has no schema for ------------------------------------------------


def test_unknown_api_versions_version_carries_the_header() -> None:
    # ApiVersions v9 (newer than any spec): a broker must still answer with error
    # 35 in the v0 layout under the client's correlation id.
    wire = _v1_header(18, 9, 77, b"newer-client") + b"\x00\x01\x02"
    with pytest.raises(UnknownRequestError, match=r"ApiVersions \(key 18\) v9") as info:
        decode_request(wire)
    header: Any = info.value.header
    assert (header.request_api_key, header.request_api_version) == (18, 9)
    assert (header.correlation_id, header.client_id) == (77, "newer-client")
    answer = encode_response(18, 0, header.correlation_id, {"error_code": 35, "api_keys": [
        {"api_key": 18, "min_version": 0, "max_version": 4}]})
    correlation_id, body = decode_response(18, 9, answer)
    assert correlation_id == 77 and body.error_code == 35  # type: ignore[attr-defined]


@pytest.mark.parametrize(("key", "what"), [(88, r"StreamsGroupHeartbeat \(key 88\)"),
                                         (999, "API key 999")])
def test_unknown_api_key_or_unshipped_spec_carries_the_header(key: int, what: str) -> None:
    wire = _v1_header(key, 3, 5, None) + b"\x00" * 8
    with pytest.raises(UnknownRequestError, match=what) as info:
        decode_request(wire)
    assert isinstance(info.value, UnknownMessageError)  # callers catching the parent still work
    assert info.value.header.correlation_id == 5  # type: ignore[attr-defined]
    assert info.value.header.client_id is None  # type: ignore[attr-defined]


def test_unknown_request_with_a_truncated_header_is_a_protocol_error() -> None:
    with pytest.raises(TruncatedMessageError):
        decode_request(struct.pack(">hhi", 999, 0, 1) + b"\x00")


def test_next_size_announces_a_frame_before_its_body_arrives() -> None:
    decoder = FrameDecoder(max_frame_size=1 << 20)
    assert decoder.next_size() is None
    decoder.feed(b"\x00\x00")
    assert decoder.next_size() is None  # half a size prefix says nothing yet
    decoder.feed(b"\x00\x05abc")
    assert decoder.next_size() == 5 and decoder.offset == 0
    assert next(decoder, None) is None  # the body is still incomplete
    decoder.feed(b"de" + frame(b"xyz")[:4])
    assert next(decoder) == b"abcde"
    assert decoder.offset == 9 and decoder.next_size() == 3


@pytest.mark.parametrize("version", ["3", True, -1, 3.0])
def test_a_version_that_is_not_an_api_version_is_a_typed_error(version: object) -> None:
    """encode_response/decode_response(version="3") raised TypeError; encode_request with
    True encoded v1 as if asked."""
    with pytest.raises((UnknownMessageError, EncodeError)):
        encode_request(ApiKey.METADATA, version, 0, "kclient",  # type: ignore[arg-type]
                       {"topics": []})
    with pytest.raises(UnknownMessageError, match="a version must be a whole number"):
        encode_response(ApiKey.METADATA, version, 0, {})  # type: ignore[arg-type]
    with pytest.raises(UnknownMessageError, match="a version must be a whole number"):
        decode_response(ApiKey.METADATA, version, bytes(8))  # type: ignore[arg-type]
