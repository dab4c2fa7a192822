"""Fields set at a version that lacks them: refused like Kafka's Java client, or dropped on
request and reported; and errors carried by responses, raised as typed exceptions."""

from __future__ import annotations

import uuid

import pytest

from kclient.errors import EncodeError, FieldVersionError, KafkaResponseError
from kclient.protocol import ErrorCode, decode, encode, message_class
from kclient.protocol.versioncheck import check_request


def test_a_set_field_the_version_lacks_is_refused_with_where_and_what_to_do() -> None:
    with pytest.raises(FieldVersionError) as raised:
        check_request("DescribeClusterRequest", 1, {"include_fenced_brokers": True},
                      broker="node 3 (127.0.0.1:9092)", broker_max=1)
    error = raised.value
    assert isinstance(error, EncodeError)
    assert (error.field, error.version, error.first_version) == ("include_fenced_brokers", 1, 2)
    assert error.broker == "node 3 (127.0.0.1:9092)"
    text = str(error)
    assert "DescribeClusterRequest v1" in text and "up to v1" in text
    assert "drop_unsupported=True" in text


def test_default_values_and_supported_versions_pass() -> None:
    _, dropped = check_request("DescribeClusterRequest", 1,
                                     {"include_fenced_brokers": False})
    assert dropped == ()
    _, dropped = check_request("DescribeClusterRequest", 2, {"include_fenced_brokers": True})
    assert dropped == ()


def test_nested_fields_are_found_with_their_path() -> None:
    partitions = [{"partition": 0}, {"partition": 1, "last_fetched_epoch": 4}]
    body = {"topics": [{"topic": "a"}, {"topic": "b", "partitions": partitions}]}
    with pytest.raises(FieldVersionError) as raised:
        check_request("FetchRequest", 11, body)
    assert raised.value.field == "topics[1].partitions[1].last_fetched_epoch"
    assert raised.value.first_version == 12
    check_request("FetchRequest", 12, body)


def test_a_removed_field_says_it_exists_in_older_versions_only() -> None:
    with pytest.raises(FieldVersionError, match=r"exists in v8-10 only") as raised:
        check_request("MetadataRequest", 11, {"include_cluster_authorized_operations": True})
    assert raised.value.first_version is None


def test_dropping_is_opt_in_and_recorded() -> None:
    body = {"topics": [], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": True}
    with pytest.raises(FieldVersionError) as raised:
        check_request("MetadataRequest", 3, body, drop=["allow_auto_topic_creation"])
    assert raised.value.field == "include_topic_authorized_operations"
    _, dropped = check_request("MetadataRequest", 3, body, drop=True)
    assert [d.path for d in dropped] == ["allow_auto_topic_creation",
                                         "include_topic_authorized_operations"]
    assert dropped[0].first_version == 4 and not dropped[0].ignorable


def test_ignorable_fields_are_dropped_as_kafka_does_but_reported() -> None:
    # MetadataRequest's per-topic TopicId (v10+) is ignorable in the spec.
    topic = message_class("MetadataRequest").child("topics")
    assert topic is not None
    field = topic.field("topic_id")
    assert field is not None and field.ignorable
    body = {"topics": [{"name": "t", "topic_id": uuid.UUID(int=5)}]}
    _, dropped = check_request("MetadataRequest", 9, body)
    assert [(d.path, d.ignorable) for d in dropped] == [("topics[0].topic_id", True)]


def test_top_level_error_raises_a_typed_error() -> None:
    wire = encode("FindCoordinatorResponse", 2, {"error_code": 15, "error_message": "later"})
    response = decode("FindCoordinatorResponse", 2, wire)
    with pytest.raises(KafkaResponseError) as raised:
        response.raise_for_error()  # type: ignore[attr-defined]
    error = raised.value
    assert error.error is ErrorCode.COORDINATOR_NOT_AVAILABLE and error.retriable
    assert error.errors == (("<top>", ErrorCode.COORDINATOR_NOT_AVAILABLE),)
    assert "COORDINATOR_NOT_AVAILABLE (15)" in str(error) and "later" in str(error)
    assert error.response is response


def test_per_item_errors_are_collected_with_their_path() -> None:
    body = {"topics": [{"name": "ok", "error_code": 0},
                       {"name": "dup", "error_code": 36},
                       {"name": "bad", "error_code": 37}]}
    response = decode("CreateTopicsResponse", 5, encode("CreateTopicsResponse", 5, body))
    with pytest.raises(KafkaResponseError) as raised:
        response.raise_for_error()  # type: ignore[attr-defined]
    assert raised.value.errors == (("topics[name=dup]", ErrorCode.TOPIC_ALREADY_EXISTS),
                                   ("topics[name=bad]", ErrorCode.INVALID_PARTITIONS))
    assert not raised.value.retriable


def test_partition_errors_inside_topics() -> None:
    body = {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "error_code": 0}, {"partition_index": 1, "error_code": 6}]}]}
    response = decode("ListOffsetsResponse", 5, encode("ListOffsetsResponse", 5, body))
    with pytest.raises(KafkaResponseError) as raised:
        response.raise_for_error()  # type: ignore[attr-defined]
    assert raised.value.errors == (("topics[name=t].partitions[partition_index=1]",
                                    ErrorCode.NOT_LEADER_OR_FOLLOWER),)


def test_no_error_returns_quietly() -> None:
    response = decode("InitProducerIdResponse", 4,
                      encode("InitProducerIdResponse", 4, {"producer_id": 7}))
    assert response.raise_for_error() is None  # type: ignore[attr-defined, func-returns-value]
    assert response.dropped_fields == ()
