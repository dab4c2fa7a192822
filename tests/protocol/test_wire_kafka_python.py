"""Byte-exact agreement with an independent implementation: kafka-python 3.x.

The same message is built with kafka-python's protocol classes and with
kclient; the bytes must be identical and each side must decode the other's
bytes to the same values.  Two kafka-python codecs are used: its schema-driven
classes (``kafka.protocol.metadata``, every version) and its older hand-written
structs (``kafka.protocol.old``), which share no code with any spec loader.

Where kafka-python models a field differently, the builder below adapts the
value, never the bytes: it renames Metadata's *AuthorizedOperations fields to
``authorized_operations`` and holds them as a set of bit positions (with the
"absent" value -2**31 as None), and it holds the all-zero uuid as None.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.protocol import (
    decode,
    decode_response,
    default_registry,
    encode,
    encode_request,
    encode_response,
    read_uvarint,
    write_uvarint,
)

from .kafka_python_values import kp_build
from .strategies import message_values

kp_metadata = pytest.importorskip("kafka.protocol.metadata")
kp_old_api_versions = pytest.importorskip("kafka.protocol.old.api_versions")
kp_old_metadata = pytest.importorskip("kafka.protocol.old.metadata")
kp_old_types = pytest.importorskip("kafka.protocol.old.types")

pytestmark = pytest.mark.integration

KP_CLASSES: dict[str, Any] = {
    "ApiVersionsRequest": kp_metadata.ApiVersionsRequest,
    "ApiVersionsResponse": kp_metadata.ApiVersionsResponse,
    "MetadataRequest": kp_metadata.MetadataRequest,
    "MetadataResponse": kp_metadata.MetadataResponse,
}

CASES = [
    *((name, v) for name in ("ApiVersionsRequest", "ApiVersionsResponse") for v in range(5)),
    *(("MetadataRequest", v) for v in (0, 1, 4, 5, 8, 9, 10, 12, 13)),
    *(("MetadataResponse", v) for v in (0, 1, 2, 5, 7, 8, 9, 10, 12, 13)),
]


def _check_both_ways(name: str, version: int, values: Mapping[str, Any]) -> None:
    cls = KP_CLASSES[name]
    ours = encode(name, version, values)
    theirs = kp_build(cls, version, values).encode()
    assert ours == theirs, f"{name} v{version}: kclient {ours.hex()} != kafka-python {theirs.hex()}"
    assert decode(name, version, theirs) == decode(name, version, ours)
    assert decode(name, version, theirs).to_dict() == {
        **default_registry().message_class(name)().to_dict(),
        **decode(name, version, ours).to_dict()}
    # kafka-python reads a non-zero ApiVersions error code as a v0 body (any error,
    # where Kafka only does so for 35); compare its decoding where that cannot apply.
    if name != "ApiVersionsResponse" or values.get("error_code") == 0:
        assert cls.decode(ours, version=version) == kp_build(cls, version, values)


@pytest.mark.parametrize(("name", "version"), [pytest.param(n, v, id=f"{n}-v{v}")
                                               for n, v in CASES])
@settings(max_examples=25, deadline=None, database=None)
@given(data=st.data())
def test_generated_messages_match_kafka_python(name: str, version: int,
                                               data: st.DataObject) -> None:
    values = data.draw(message_values(default_registry().spec(name), version))
    _check_both_ways(name, version, values)


# -- realistic messages, with headers --------------------------------------------------


def _api_versions_response(version: int) -> dict[str, Any]:
    values: dict[str, Any] = {
        "error_code": 0,
        "api_keys": [{"api_key": key, "min_version": 0, "max_version": 3 + key % 9}
                     for key in range(70)],
    }
    if version >= 1:
        values["throttle_time_ms"] = 25
    if version >= 3:
        values.update(
            supported_features=[{"name": "metadata.version", "min_version": 1,
                                 "max_version": 21},
                                {"name": "kraft.version", "min_version": 0, "max_version": 1}],
            finalized_features_epoch=42,
            finalized_features=[{"name": "metadata.version", "max_version_level": 21,
                                 "min_version_level": 21}],
            zk_migration_ready=True,
        )
    return values


def _metadata_response(version: int) -> dict[str, Any]:
    brokers = [{"node_id": n, "host": f"broker-{n}.example", "port": 9092 + n}
               for n in range(3)]
    if version >= 1:
        for broker in brokers:
            broker["rack"] = f"rack-{broker['node_id']}"
    topic: dict[str, Any] = {
        "error_code": 0, "name": "orders",
        "partitions": [{"error_code": 0, "partition_index": p, "leader_id": p % 3,
                        "replica_nodes": [0, 1, 2], "isr_nodes": [p % 3]} for p in range(4)],
    }
    values: dict[str, Any] = {"brokers": brokers, "topics": [topic]}
    if version >= 1:
        values["controller_id"] = 1
        topic["is_internal"] = False
    if version >= 2:
        values["cluster_id"] = "kclient-cluster"
    if version >= 3:
        values["throttle_time_ms"] = 0
    if version >= 5:
        for partition in topic["partitions"]:
            partition["offline_replicas"] = [2]
    if version >= 7:
        for partition in topic["partitions"]:
            partition["leader_epoch"] = 7
    if version >= 8:
        topic["topic_authorized_operations"] = 0b1010_1000
    if 8 <= version <= 10:
        values["cluster_authorized_operations"] = 0b11_0000_0000
    if version >= 10:
        topic["topic_id"] = uuid.UUID("5b0e4a44-4bcb-4a5c-9c0e-2a8bd7b0b0f1")
    return values


def _check_exchange(api: str, key: int, version: int, correlation_id: int,
                    client_id: str | None, request: dict[str, Any],
                    response: dict[str, Any]) -> None:
    """Request and response with headers: our bytes equal kafka-python's, and back."""
    kp_request = kp_build(KP_CLASSES[f"{api}Request"], version, request)
    kp_request.with_header(correlation_id=correlation_id, client_id=client_id)
    assert encode_request(key, version, correlation_id, client_id, request) == (
        kp_request.encode(header=True))
    kp_response = kp_build(KP_CLASSES[f"{api}Response"], version, response)
    kp_response.with_header(correlation_id=correlation_id)
    wire = kp_response.encode(header=True)
    assert encode_response(key, version, correlation_id, response) == wire
    decoded_id, body = decode_response(key, version, wire)
    assert decoded_id == correlation_id
    assert body == default_registry().message_class(f"{api}Response").from_value(response)


@pytest.mark.parametrize("version", range(5))
def test_api_versions_exchange_with_headers(version: int) -> None:
    request = ({"client_software_name": "kclient", "client_software_version": "0.1.0"}
               if version >= 3 else {})
    _check_exchange("ApiVersions", 18, version, 77, "kclient-test", request,
                    _api_versions_response(version))


@pytest.mark.parametrize("version", [0, 1, 2, 5, 7, 8, 9, 10, 12, 13])
def test_metadata_exchange_with_headers(version: int) -> None:
    request: dict[str, Any] = {"topics": [{"name": "orders"}, {"name": "payments"}]}
    if version >= 4:
        request["allow_auto_topic_creation"] = False
    if 8 <= version <= 10:
        request["include_cluster_authorized_operations"] = True
    _check_exchange("Metadata", 3, version, 5, None, request, _metadata_response(version))


@pytest.mark.parametrize("version", range(5))
def test_error_35_answer_agrees_with_kafka_python(version: int) -> None:
    """kclient's error-35 answer at any asked version is the v0 body kafka-python writes,
    and kafka-python reads kclient's bytes (it takes any error body as v0) as kclient does."""
    keys = [{"api_key": 18, "min_version": 0, "max_version": 3}]
    error = {"error_code": 35, "api_keys": keys}
    ours = encode_response(18, version, 12, error)
    kp_v0 = kp_build(KP_CLASSES["ApiVersionsResponse"], 0, error)
    kp_v0.with_header(correlation_id=12)
    assert ours == kp_v0.encode(header=True)
    theirs = KP_CLASSES["ApiVersionsResponse"].decode(ours[4:], version=version)
    assert theirs.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in theirs.api_keys] == [(18, 0, 3)]
    assert decode_response(18, version, ours)[1] == default_registry().message_class(
        "ApiVersionsResponse").from_value(error)


# -- kafka-python's hand-written structs ------------------------------------------------


def _old(module: Any, name: str, version: int) -> Any:
    return getattr(module, f"{name}_v{version}")


@pytest.mark.parametrize("version", range(5))
def test_api_versions_against_hand_written_structs(version: int) -> None:
    keys = [(0, 0, 11), (3, 0, 12), (18, 0, 4)]
    if version >= 3:
        old_response = _old(kp_old_api_versions, "ApiVersionsResponse", version)(
            error_code=0, api_keys=[(*k, {}) for k in keys], throttle_time_ms=10)
        old_request = _old(kp_old_api_versions, "ApiVersionsRequest", version)(
            client_software_name="kafka-python", client_software_version="3.0.12")
        request = {"client_software_name": "kafka-python",
                   "client_software_version": "3.0.12"}
    else:
        fields: dict[str, Any] = {"error_code": 0, "api_keys": keys}
        if version >= 1:
            fields["throttle_time_ms"] = 10
        old_response = _old(kp_old_api_versions, "ApiVersionsResponse", version)(**fields)
        old_request = _old(kp_old_api_versions, "ApiVersionsRequest", version)()
        request = {}
    response = {"error_code": 0, "throttle_time_ms": 10 if version >= 1 else 0,
                "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi}
                             for k, lo, hi in keys]}
    assert encode("ApiVersionsResponse", version, response) == old_response.encode()
    assert encode("ApiVersionsRequest", version, request) == old_request.encode()
    decoded: Any = decode("ApiVersionsResponse", version, old_response.encode())
    assert [(a.api_key, a.min_version, a.max_version) for a in decoded.api_keys] == keys


@pytest.mark.parametrize("version", [0, 1, 5])
def test_metadata_against_hand_written_structs(version: int) -> None:
    values = _metadata_response(version)
    brokers = [tuple(b.values()) for b in values["brokers"]]
    partitions = [tuple(p.values()) for p in values["topics"][0]["partitions"]]
    topic: tuple[Any, ...]
    if version == 0:
        topic = (0, "orders", partitions)
        old = _old(kp_old_metadata, "MetadataResponse", 0)(brokers, [topic])
    else:
        topic = (0, "orders", False, partitions)
        args: list[Any] = [brokers, 1, [topic]]
        if version >= 2:
            args.insert(1, "kclient-cluster")
        if version >= 3:
            args.insert(0, 0)
        old = _old(kp_old_metadata, "MetadataResponse", version)(*args)
    assert encode("MetadataResponse", version, values) == old.encode()
    request_topics = ["orders"]
    old_request = (_old(kp_old_metadata, "MetadataRequest", version)(request_topics, False)
                   if version >= 4 else
                   _old(kp_old_metadata, "MetadataRequest", version)(request_topics))
    request: dict[str, Any] = {"topics": [{"name": "orders"}]}
    if version >= 4:
        request["allow_auto_topic_creation"] = False
    assert encode("MetadataRequest", version, request) == old_request.encode()


# -- KIP-482 unsigned varints -----------------------------------------------------------


def test_kip482_example() -> None:
    assert write_uvarint(300) == b"\xac\x02"
    assert read_uvarint(b"\xac\x02", 0) == (300, 2)


@pytest.mark.parametrize(("value", "size"), [
    (0, 1), (1, 1), (127, 1), (128, 2), (16383, 2), (16384, 3), (2**21 - 1, 3), (2**21, 4),
    (2**28 - 1, 4), (2**28, 5), (2**31 - 1, 5), (2**32 - 1, 5),
])
def test_uvarint_boundaries_match_kafka_python(value: int, size: int) -> None:
    data = write_uvarint(value)
    assert len(data) == size
    assert data == kp_old_types.UnsignedVarInt32.encode(value)
    assert all(b & 0x80 for b in data[:-1]) and not data[-1] & 0x80
    assert read_uvarint(b"\xff" + data + b"\x00", 1) == (value, 1 + size)
    if value < 2**31:
        assert kp_old_types.UnsignedVarInt32.decode(io.BytesIO(data)) == value


@settings(max_examples=200, deadline=None, database=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_uvarint_round_trip(value: int) -> None:
    data = write_uvarint(value)
    assert read_uvarint(data, 0) == (value, len(data))
