"""Building messages from plain values: ``Message.from_value`` and ``encode(name, v, dict)``.

``from_value`` has a generated fast path for plain dicts of snake_case fields and
a general path for everything else (Kafka field names, other mappings, tuples).
Both must build the same message; the general path is the oracle here, reached
by handing every level over as a read-only mapping proxy instead of a dict.
"""

from __future__ import annotations

import types
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kclient.errors import EncodeError
from kclient.protocol import default_registry, encode, message_class

from .strategies import message_values

# Every shipped message at every version; a few examples each keeps the run short.
_SHIPPED = [pytest.param(spec.name, version, id=f"{spec.name}-v{version}")
            for spec in sorted(default_registry(), key=lambda s: s.name)
            for version in spec.versions]


def _proxied(value: Any) -> Any:
    """The same data with every dict replaced by a mapping proxy (never the fast path)."""
    if isinstance(value, dict):
        return types.MappingProxyType({k: _proxied(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_proxied(v) for v in value]
    return value


@pytest.mark.parametrize(("name", "version"), _SHIPPED)
@settings(max_examples=3, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fast_and_general_paths_build_the_same_message(name: str, version: int,
                                                       data: st.DataObject) -> None:
    registry = default_registry()
    cls = registry.message_class(name)
    plain = data.draw(message_values(registry.spec(name), version))
    built = cls.from_value(plain)
    assert built == cls.from_value(_proxied(plain))
    assert built.to_dict() == cls.from_value(built.to_dict()).to_dict()
    assert encode(name, version, plain) == encode(name, version, built)


def test_kafka_field_names_and_snake_case_build_the_same_message() -> None:
    cls = message_class("MetadataResponse")
    by_attr = cls.from_value({"brokers": [{"node_id": 1, "host": "h", "port": 9}],
                              "cluster_id": "c"})
    by_kafka = cls.from_value({"Brokers": [{"NodeId": 1, "Host": "h", "Port": 9}],
                               "ClusterId": "c"})
    assert by_attr == by_kafka
    assert by_attr.brokers[0].node_id == 1  # type: ignore[attr-defined]


def test_struct_arrays_accept_tuples_and_ready_made_elements() -> None:
    cls = message_class("MetadataResponse")
    broker_cls = type(cls.from_value({"brokers": [{}]}).brokers[0])  # type: ignore[attr-defined]
    ready = broker_cls(node_id=2, host="b", port=2)
    built = cls.from_value({"brokers": ({"node_id": 1, "host": "a", "port": 1}, ready)})
    assert [b.node_id for b in built.brokers] == [1, 2]  # type: ignore[attr-defined]
    assert built.brokers[1] is ready  # type: ignore[attr-defined]


def test_a_message_instance_is_returned_as_is() -> None:
    cls = message_class("ApiVersionsRequest")
    message = cls(client_software_name="app")
    assert cls.from_value(message) is message


def test_missing_fields_get_fresh_defaults() -> None:
    cls = message_class("MetadataResponse")
    first, second = cls.from_value({}), cls.from_value({})
    assert first.brokers == [] and first.topics == []  # type: ignore[attr-defined]
    first.brokers.append(1)  # type: ignore[attr-defined]
    assert second.brokers == []  # type: ignore[attr-defined]


def test_null_stays_null() -> None:
    cls = message_class("MetadataRequest")
    assert cls.from_value({"topics": None}).topics is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(("value", "reason"), [
    ({"no_such_field": 1}, r"has no field 'no_such_field' \(fields: topics, "),
    ([("topics", None)], "must be built from a mapping, got list"),
    ("topics", "must be built from a mapping, got str"),
    ({"topics": [{"name": "t", "bogus": 1}]}, "MetadataRequestTopic has no field 'bogus'"),
])
def test_bad_values_name_the_field_or_type(value: object, reason: str) -> None:
    with pytest.raises(EncodeError, match=reason):
        message_class("MetadataRequest").from_value(value)


def test_a_message_of_another_type_is_refused() -> None:
    other = message_class("ApiVersionsRequest")()
    with pytest.raises(EncodeError, match="expected MetadataRequest, got ApiVersionsRequest"):
        message_class("MetadataRequest").from_value(other)


# -- uuid fields -----------------------------------------------------------------------


def _metadata_with_topic_id(topic_id: object) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": 1,
            "topics": [{"error_code": 0, "name": "t", "topic_id": topic_id,
                        "is_internal": False, "partitions": [],
                        "topic_authorized_operations": 0}]}


def test_a_uuid_field_takes_a_uuid_or_its_text() -> None:
    import uuid

    value = uuid.UUID("5d6f1a2e-0000-4000-8000-0123456789ab")
    expected = encode("MetadataResponse", 12, _metadata_with_topic_id(value))
    assert value.bytes in expected
    for text in (str(value), value.hex, f"urn:uuid:{value}", str(value).upper()):
        assert encode("MetadataResponse", 12, _metadata_with_topic_id(text)) == expected


class _HasBytes:
    """Not a UUID, yet it has ``.bytes`` (once encoded as is: 3 bytes on the wire)."""

    bytes = b"abc"


@pytest.mark.parametrize(("value", "fragment"), [
    (_HasBytes(), "takes a uuid.UUID or its text form, not _HasBytes"),
    (b"\x00" * 16, "not bytes"),
    (42, "not int"),
    ("not-a-uuid", "'not-a-uuid' is not a UUID"),
    ("", "'' is not a UUID"),
])
def test_a_uuid_field_refuses_anything_else(value: object, fragment: str) -> None:
    with pytest.raises(EncodeError, match="uuid field TopicId") as info:
        encode("MetadataResponse", 12, _metadata_with_topic_id(value))
    assert fragment in str(info.value)
