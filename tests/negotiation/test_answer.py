"""Reading an ApiVersions answer into ranges and features (kclient.negotiation.answer)."""

from __future__ import annotations

from typing import Any

import pytest

from kclient.errors import ProtocolError
from kclient.negotiation import VersionRange
from kclient.negotiation.answer import (
    CACHE_MAX_BODY,
    answer_cache_info,
    broker_versions,
    read_api_versions,
    summarise_response,
)
from kclient.protocol import encode, message_class


def response(**fields: Any) -> Any:
    body = {"error_code": 0, "api_keys": [], "throttle_time_ms": 0, **fields}
    return message_class("ApiVersionsResponse").from_value(body)


def keys(*entries: tuple[int, int, int]) -> list[dict[str, int]]:
    return [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in entries]


def test_ranges_features_and_epoch_are_read() -> None:
    answer = summarise_response(response(
        api_keys=keys((3, 0, 12), (18, 0, 4), (0, 3, 11)),
        supported_features=[{"name": "group.version", "min_version": 0, "max_version": 1}],
        finalized_features=[{"name": "metadata.version", "min_version_level": 21,
                             "max_version_level": 21}],
        finalized_features_epoch=42))
    assert list(answer.apis) == [0, 3, 18]
    assert answer.apis[0] == VersionRange(3, 11)
    assert answer.key18 == (0, 4)
    assert answer.supported_features == {"group.version": VersionRange(0, 1)}
    assert answer.finalized_features == {"metadata.version": VersionRange(21, 21)}
    assert answer.finalized_features_epoch == 42
    versions = broker_versions(answer, 7, "127.0.0.1", 9092, rack="r1", handshake=["a", "b"])
    assert (versions.node_id, versions.rack, versions.handshake) == (7, "r1", ("a", "b"))
    assert versions.finalized_level("metadata.version") == 21
    assert versions.source == "api_versions" and versions.software is None


def test_v0_answers_have_no_features() -> None:
    answer = summarise_response(response(api_keys=keys((18, 0, 2))))
    assert (answer.supported_features, answer.finalized_features_epoch) == ({}, -1)


@pytest.mark.parametrize(("fields", "message"), [
    ({"api_keys": keys((0, 4, 2))}, r"Produce \(key 0\) with versions 4-2 \(min above max\)"),
    ({"api_keys": keys((1, -2, 5))}, r"Fetch \(key 1\) with versions -2-5 \(negative"),
    ({"api_keys": keys((999, 1, 0))}, r"UNKNOWN\(999\) \(key 999\)"),
    ({"api_keys": keys((-1, 0, 1))}, "lists API key -1"),
    ({"api_keys": keys((3, 0, 12), (3, 0, 13))}, r"Metadata \(key 3\) twice, with versions "
                                                  "0-12 and 0-13"),
    ({"supported_features": [{"name": "f", "min_version": 2, "max_version": 1}]},
     "supported feature 'f' with versions 2-1"),
    ({"finalized_features": [
        {"name": "m", "min_version_level": 1, "max_version_level": 2},
        {"name": "m", "min_version_level": 1, "max_version_level": 3}]},
     "finalized feature 'm' twice"),
])
def test_impossible_answers_are_protocol_errors(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        summarise_response(response(**fields))


def test_identical_repeats_are_kept_once() -> None:
    answer = summarise_response(response(api_keys=keys((3, 0, 12), (3, 0, 12))))
    assert dict(answer.apis) == {3: VersionRange(0, 12)}


def test_each_distinct_body_is_decoded_once_and_errors_are_not_cached() -> None:
    good = encode("ApiVersionsResponse", 3, {"error_code": 0, "api_keys": keys((18, 0, 4))})
    bad = encode("ApiVersionsResponse", 3, {"error_code": 0, "api_keys": keys((18, 4, 0))})
    first = read_api_versions(3, good)
    misses = answer_cache_info().misses
    assert read_api_versions(3, bytes(good)) is first
    assert answer_cache_info().misses == misses
    for _ in range(2):
        with pytest.raises(ProtocolError, match="min above max"):
            read_api_versions(3, bad)
    assert answer_cache_info().misses == misses + 2
    with pytest.raises(TypeError):
        first.apis[0] = VersionRange(0, 1)  # type: ignore[index]


def test_oversized_answers_are_decoded_but_never_cached() -> None:
    many = keys(*((key, 0, 3) for key in range(3000)))  # far above any real broker
    body = encode("ApiVersionsResponse", 3, {"error_code": 0, "api_keys": many})
    assert len(body) > CACHE_MAX_BODY
    size = answer_cache_info().currsize
    first = read_api_versions(3, body)
    assert len(first.apis) == 3000
    assert read_api_versions(3, body) is not first  # decoded again, nothing kept
    assert answer_cache_info().currsize == size
