"""Round trips over the whole shared corpus, and unknown tagged fields kept across them.

For every spec in ../shared/kafka-specs (message/ and test-message/) at every
valid version, values drawn from the spec itself must survive
``decode(encode(v)) == v`` and the bytes ``encode(decode(b)) == b``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kclient.errors import EncodeError
from kclient.protocol import decode, default_registry, encode, message_class, write_uvarint
from tests.conftest import skip_without_shared

from .corpus import SPECS_DIR, corpus_cases, corpus_registry
from .strategies import message_values

_SETTINGS = settings(max_examples=8, deadline=None, database=None,
                     suppress_health_check=[HealthCheck.too_slow,
                                            HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize(("name", "version"), corpus_cases())
@_SETTINGS
@given(data=st.data())
def test_round_trip_every_message_every_version(name: str, version: int,
                                                data: st.DataObject) -> None:
    registry = corpus_registry()
    spec = registry.spec(name)
    codec = registry.codec(name, version)
    value = codec.message_class.from_value(data.draw(message_values(spec, version)))
    encoded = codec.encode(value)
    decoded = codec.decode(encoded)
    assert decoded == value
    assert codec.encode(decoded) == encoded


def test_corpus_cases_cover_every_version() -> None:
    skip_without_shared(SPECS_DIR, "the 190 Kafka message specs this test counts")
    cases = corpus_cases()
    names = {c.values[0] for c in cases}  # type: ignore[attr-defined]
    assert len(names) == 190
    # spot checks that every version is there, not just the newest
    pairs = {c.values for c in cases}  # type: ignore[attr-defined]
    assert {("ApiVersionsResponse", v) for v in range(5)} <= pairs
    assert {("MetadataRequest", v) for v in range(13)} <= pairs


# -- unknown tagged fields --------------------------------------------------------------


def _tags(*items: tuple[int, bytes]) -> bytes:
    out = bytearray(write_uvarint(len(items)))
    for tag, payload in items:
        out += write_uvarint(tag) + write_uvarint(len(payload)) + payload
    return bytes(out)


def _api_versions_v3(top_tags: bytes, entry_tags: bytes) -> bytes:
    """ApiVersionsResponse v3 by hand: error 0, one api (18, 0-4), throttle 0, given tags."""
    return (b"\x00\x00"                     # error_code
            + b"\x02"                       # compact array of 1
            + b"\x00\x12\x00\x00\x00\x04"   # api_key 18, min 0, max 4
            + entry_tags
            + b"\x00\x00\x00\x00"           # throttle_time_ms
            + top_tags)


def test_unknown_tags_kept_on_decode_and_written_back() -> None:
    # Known tags 0 (SupportedFeatures, empty) and 1 (FinalizedFeaturesEpoch = 5),
    # then unknown tags 7 and 300 (a two-byte uvarint tag); the entry struct has
    # no tagged fields of its own but carries unknown tag 2.
    known_epoch = b"\x00\x00\x00\x00\x00\x00\x00\x05"
    data = _api_versions_v3(
        top_tags=_tags((0, b"\x01"), (1, known_epoch), (7, b"\xde\xad"), (300, b"")),
        entry_tags=_tags((2, b"\x2a")),
    )
    message: Any = decode("ApiVersionsResponse", 3, data)
    assert message.finalized_features_epoch == 5
    assert message.supported_features == []
    assert dict(message.unknown_tags) == {7: b"\xde\xad", 300: b""}
    assert dict(message.api_keys[0].unknown_tags) == {2: b"\x2a"}
    # Re-encoding writes them back in ascending order among the known tags, and
    # tag 0 too: it holds its default (empty) but was on the wire.
    assert encode("ApiVersionsResponse", 3, message) == data
    # Plain values show the unknown tags, at every level, and carry them back.
    plain = message.to_dict()
    assert plain["unknown_tags"] == {7: b"\xde\xad", 300: b""}
    assert plain["api_keys"][0]["unknown_tags"] == {2: b"\x2a"}
    # A message built from plain values omits the default-valued tag 0.
    rebuilt = message_class("ApiVersionsResponse").from_value(plain)
    expected = _api_versions_v3(
        top_tags=_tags((1, known_epoch), (7, b"\xde\xad"), (300, b"")),
        entry_tags=_tags((2, b"\x2a")),
    )
    assert encode("ApiVersionsResponse", 3, rebuilt) == expected
    assert rebuilt == message  # where tags came from is not part of the value


def test_plain_values_without_unknown_tags_have_no_extra_key() -> None:
    message: Any = decode("ApiVersionsResponse", 3, _api_versions_v3(_tags(), _tags()))
    assert "unknown_tags" not in message.to_dict()
    assert "unknown_tags" not in message.api_keys[0].to_dict()


@pytest.mark.parametrize(("value", "reason"), [
    ({-1: b""}, "not a tag number"),
    ({"seven": b""}, "not a tag number"),
    ({2**31: b""}, "not a tag number"),
    ({7: "dead"}, "must be bytes"),
    ([(7, b"")], "must map tag numbers"),
])
def test_unknown_tags_from_plain_values_are_checked(value: object, reason: str) -> None:
    cls = message_class("ApiVersionsResponse")
    with pytest.raises(EncodeError, match=reason):
        cls.from_value({"error_code": 0, "unknown_tags": value})


def test_unknown_tags_given_as_text_keys_are_written() -> None:
    cls = message_class("ApiVersionsResponse")
    value = cls.from_value({"unknown_tags": {"9": b"\x01"}})
    assert encode("ApiVersionsResponse", 3, value).endswith(_tags((9, b"\x01")))


def test_unknown_tag_below_known_tags_keeps_its_place() -> None:
    registry = corpus_registry()
    if "SimpleExampleMessage" not in registry:
        pytest.fail(f"{SPECS_DIR}/test-message lacks SimpleExampleMessage")
    codec = registry.codec("SimpleExampleMessage", 2)
    base = codec.message_class.from_value({"my_int16": 7})
    encoded = codec.encode(base)
    # The message ends with the top-level tag section: count 1, tag 2, size 2, 7.
    assert encoded.endswith(_tags((2, b"\x00\x07")))
    # Kafka's generated code never writes tag 10 for this message; a newer peer might.
    with_unknown = encoded[: -len(_tags((2, b"\x00\x07")))] + _tags((2, b"\x00\x07"),
                                                                    (10, b"\x01\x02\x03"))
    decoded = codec.decode(with_unknown)
    assert dict(decoded.unknown_tags) == {10: b"\x01\x02\x03"}
    assert decoded.my_int16 == 7  # type: ignore[attr-defined]
    assert codec.encode(decoded) == with_unknown
    # Equality includes unknown tags: the message without them is different.
    assert decoded != base


def test_tags_on_a_middle_array_element_take_the_general_path() -> None:
    # Arrays of fixed-width structs are decoded in one pass while every element's
    # tag section is empty; an element with tags (here the second of three)
    # must make the decoder re-read the whole array element by element.
    entry = b"\x00\x12\x00\x00\x00\x04"
    data = (b"\x00\x00" + b"\x04"
            + b"\x00\x03\x00\x00\x00\x0c" + b"\x00"
            + entry + _tags((5, b"\x01\x02"))
            + b"\x00\x00\x00\x00\x00\x0b" + b"\x00"
            + b"\x00\x00\x00\x00" + b"\x00")
    message: Any = decode("ApiVersionsResponse", 3, data)
    assert [(a.api_key, a.max_version) for a in message.api_keys] == [(3, 12), (18, 4), (0, 11)]
    assert [dict(a.unknown_tags) for a in message.api_keys] == [{}, {5: b"\x01\x02"}, {}]
    assert message.throttle_time_ms == 0
    assert encode("ApiVersionsResponse", 3, message) == data
    # The same array without tags on any element decodes to the same fields.
    plain = data.replace(_tags((5, b"\x01\x02")), b"\x00")
    untagged = [a.to_dict() for a in message.api_keys]
    del untagged[1]["unknown_tags"]
    assert [a.to_dict() for a in decode("ApiVersionsResponse", 3, plain).api_keys] == untagged  # type: ignore[attr-defined]


def test_decoded_uuids_are_ordinary_uuids() -> None:
    # The decoder fills uuid.UUID's slots directly instead of calling its
    # constructor; the result must behave exactly like a constructed one.
    topic_id = uuid.UUID("5f1c1e4a-2b3c-4d5e-8f90-a1b2c3d4e5f6")
    data = encode("MetadataResponse", 12, {"topics": [{"name": "t", "topic_id": topic_id}]})
    decoded: Any = decode("MetadataResponse", 12, data).topics[0].topic_id  # type: ignore[attr-defined]
    assert type(decoded) is uuid.UUID
    assert decoded == topic_id and hash(decoded) == hash(topic_id)
    assert str(decoded) == str(topic_id) and decoded.bytes == topic_id.bytes
    assert decoded.is_safe == uuid.SafeUUID.unknown
    with pytest.raises(TypeError):
        decoded.int = 0


def test_default_valued_tags_on_the_wire_are_written_back() -> None:
    # Some brokers (tansu) write every tagged field, defaults included.
    every_default = _tags((0, b"\x01"), (1, b"\xff" * 8), (2, b"\x01"), (3, b"\x00"))
    data = _api_versions_v3(top_tags=every_default, entry_tags=b"\x00")
    message: Any = decode("ApiVersionsResponse", 3, data)
    plain: Any = decode("ApiVersionsResponse", 3, _api_versions_v3(b"\x00", b"\x00"))
    assert message == plain  # same values ...
    assert encode("ApiVersionsResponse", 3, message) == data  # ... but their own bytes
    assert encode("ApiVersionsResponse", 3, message.to_dict()) == encode(
        "ApiVersionsResponse", 3, plain)
    # A changed value is written whether or not its tag was seen.
    plain.zk_migration_ready = True
    assert encode("ApiVersionsResponse", 3, plain).endswith(_tags((3, b"\x01")))


# -- the shipped specs (schemas/, with the extensions past the corpus) -------------------

_SHIPPED = [pytest.param(name, version, id=f"{name}-v{version}")
            for name in default_registry().names()
            for version in default_registry().spec(name).versions]


@pytest.mark.parametrize(("name", "version"), _SHIPPED)
@settings(max_examples=3, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_every_shipped_message_every_version(name: str, version: int,
                                                        data: st.DataObject) -> None:
    registry = default_registry()
    codec = registry.codec(name, version)
    value = codec.message_class.from_value(data.draw(message_values(registry.spec(name),
                                                                    version)))
    encoded = codec.encode(value)
    decoded = codec.decode(encoded)
    assert decoded == value
    assert codec.encode(decoded) == encoded


def test_every_shipped_message_and_version_is_a_case() -> None:
    assert len(_SHIPPED) == sum(len(spec.versions) for spec in default_registry())
    assert len({p.values[0] for p in _SHIPPED}) == 188  # type: ignore[attr-defined]
