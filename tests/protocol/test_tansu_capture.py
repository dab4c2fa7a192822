"""Byte-exact against a real broker: tansu's answers decode and re-encode to the same bytes.

Requests go out on a plain socket (no kclient.net), answers are split with
FrameDecoder, decoded with decode_response and encoded again with
encode_response: the result must equal what tansu sent, header included.
One ApiVersions v3 answer is kept in tests/data so that check also runs offline.

tansu writes ApiVersionsResponse v3+'s four tagged fields even when they hold
their defaults (TANSU_DEFAULT_TAGS), where Kafka's generated code omits them.
A decoded message remembers which known tags were on the wire, so re-encoding
it reproduces tansu's bytes exactly; a message built from plain values omits
default-valued tags like Kafka (checked on the same answers).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from kclient.protocol import FrameDecoder, decode_response, encode_request, encode_response, frame
from tests.conftest import TansuBroker

CAPTURE = Path(__file__).resolve().parent.parent / "data" / "tansu_apiversions_v3_response.hex"
CAPTURE_CORRELATION_ID = 3
TOPIC = "kclient-protocol-test"

# ApiVersionsResponse top-level tags as tansu writes them: count 4, then
# 0 SupportedFeatures = [] (compact array, 1 byte), 1 FinalizedFeaturesEpoch = -1
# (int64), 2 FinalizedFeatures = [], 3 ZkMigrationReady = false.
TANSU_DEFAULT_TAGS = (b"\x04" + b"\x00\x01\x01" + b"\x01\x08" + b"\xff" * 8
                      + b"\x02\x01\x01" + b"\x03\x01\x00")


def _exchange(broker: TansuBroker, api_key: int, version: int, correlation_id: int,
              body: dict[str, Any]) -> bytes:
    """Send one request, return the payload of the one response frame (no size prefix)."""
    request = encode_request(api_key, version, correlation_id, "kclient-test", body)
    decoder = FrameDecoder(max_frame_size=1 << 20)
    with socket.create_connection((broker.host, broker.port), timeout=10) as sock:
        sock.sendall(frame(request))
        for _ in range(1000):  # bounded: a response is a few hundred bytes
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError(f"tansu closed the connection after {api_key} v{version}")
            decoder.feed(chunk)
            for payload in decoder:
                return payload
    raise AssertionError("no complete response frame from tansu")


def _check_exact(api_key: int, version: int, correlation_id: int, payload: bytes) -> Any:
    received_id, body = decode_response(api_key, version, payload)
    assert received_id == correlation_id
    assert encode_response(api_key, version, correlation_id, body) == payload
    assert body.unknown_tags == {}
    if api_key == 18 and version >= 3:
        assert payload.endswith(TANSU_DEFAULT_TAGS)
        # Built afresh from plain values, the defaults are left out (as Kafka does):
        # the same bytes with an empty top-level tag section.
        rebuilt = encode_response(api_key, version, correlation_id, body.to_dict())
        assert rebuilt == payload[: -len(TANSU_DEFAULT_TAGS)] + b"\x00"
    return body


def _api_versions_body(version: int) -> dict[str, Any]:
    if version >= 3:
        return {"client_software_name": "kclient", "client_software_version": "0.1.0"}
    return {}


@pytest.mark.integration
@pytest.mark.timeout(60)
@pytest.mark.parametrize("version", range(5))
def test_live_api_versions(tansu: TansuBroker, version: int) -> None:
    payload = _exchange(tansu, 18, version, 100 + version, _api_versions_body(version))
    body = _check_exact(18, version, 100 + version, payload)
    assert body.error_code == 0
    ranges = {a.api_key: (a.min_version, a.max_version) for a in body.api_keys}
    assert ranges[18][0] == 0 and ranges[18][1] >= 3
    assert 3 in ranges


def _metadata_requests(version: int) -> list[dict[str, Any]]:
    every: dict[str, Any] = {"topics": [] if version == 0 else None}
    # tansu creates a topic it is asked about (even with auto-creation off), which
    # gives an answer with a topic id and partitions to compare.
    named: dict[str, Any] = {"topics": [{"name": TOPIC}]}
    if version >= 4:
        every["allow_auto_topic_creation"] = False
        named["allow_auto_topic_creation"] = False
    return [every, named]


@pytest.mark.integration
@pytest.mark.timeout(60)
@pytest.mark.parametrize("version", [0, 1, 4, 5, 8, 9, 10, 12])
def test_live_metadata(tansu: TansuBroker, version: int) -> None:
    for index, request in enumerate(_metadata_requests(version)):
        payload = _exchange(tansu, 3, version, 200 + index, request)
        body = _check_exact(3, version, 200 + index, payload)
        assert [(b.host, b.port) for b in body.brokers] == [(tansu.host, tansu.port)]
        if request["topics"]:
            assert [t.name for t in body.topics] == [TOPIC]
            assert body.topics[0].partitions
            if version >= 10:
                assert body.topics[0].topic_id.int != 0


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_live_v3_answer_agrees_with_capture(tansu: TansuBroker) -> None:
    live = _exchange(tansu, 18, 3, CAPTURE_CORRELATION_ID, _api_versions_body(3))
    _, live_body = decode_response(18, 3, live)
    _, saved_body = decode_response(18, 3, bytes.fromhex(CAPTURE.read_text()))
    # tansu lists its APIs in no fixed order; compare them as a set.  A failure
    # here after a tansu upgrade means the capture should be taken again.
    assert sorted(live_body.to_dict()["api_keys"], key=lambda a: a["api_key"]) == sorted(
        saved_body.to_dict()["api_keys"], key=lambda a: a["api_key"])


# -- offline ----------------------------------------------------------------------------


def test_saved_capture_decodes_and_re_encodes_exactly() -> None:
    payload = bytes.fromhex(CAPTURE.read_text())
    # header v0 (no tag section) even though v3 is flexible
    assert payload[:4] == CAPTURE_CORRELATION_ID.to_bytes(4, "big")
    body = _check_exact(18, 3, CAPTURE_CORRELATION_ID, payload)
    data = body.to_dict()
    assert data["error_code"] == 0
    ranges = {a["api_key"]: (a["min_version"], a["max_version"]) for a in data["api_keys"]}
    assert len(ranges) == len(data["api_keys"]) == 36
    assert ranges[18] == (0, 4)
    assert ranges[3] == (0, 12)
    assert ranges[0] == (0, 11)
    assert data["finalized_features_epoch"] == -1
    assert data["supported_features"] == [] and data["finalized_features"] == []
    # every byte is accounted for: the same capture cut short is refused
    with pytest.raises(Exception) as info:
        decode_response(18, 3, payload[:-1])
    assert type(info.value).__name__ == "TruncatedMessageError"
