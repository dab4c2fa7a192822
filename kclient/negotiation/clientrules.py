"""What a client sends that the message specs alone do not say, as data with sources.

Kafka's specs describe every version of a message, for every sender.  Some of
it is for brokers only, and some defaults are a broker's; a client that follows
the specs alone would send follower requests or versions a broker reserves for
its peers.  These rules are what Kafka's own clients do:

* :data:`CLIENT_MAX_VERSIONS` -- versions above these are for broker-to-broker
  use and are never chosen for a client request (the application's default
  range stops there; an explicit ``version=`` still sends them);
* :data:`CLIENT_FIELD_VALUES` -- fields whose client value differs from the
  spec's default; :func:`with_client_values` fills them into a request body
  that does not set them;
* :data:`TOPIC_ID_VERSIONS` -- from these versions a request names its topics
  by id only (the name field is gone); :func:`topic_name_cap` keeps a request
  whose topics carry names but no ids below them (the newer versions would drop them).

Each entry names its source.  Versions a broker advertises but rejects are
release knowledge (:mod:`kclient.negotiation.releases`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import attrs

from kclient.protocol.constants import ApiKey

__all__ = [
    "CLIENT_FIELD_VALUES",
    "CLIENT_MAX_VERSIONS",
    "TOPIC_ID_VERSIONS",
    "ClientRule",
    "topic_name_cap",
    "with_client_values",
]


@attrs.frozen
class ClientRule:
    """One rule: its value and where it comes from."""

    value: int
    source: str


#: Per API key, the newest version a client sends.
CLIENT_MAX_VERSIONS: Mapping[int, ClientRule] = {
    ApiKey.ADD_PARTITIONS_TO_TXN: ClientRule(
        3, "KIP-890: the AddPartitionsToTxnRequest spec reserves versions 4 and later for "
        "brokers (verifying a transaction on a partition leader's behalf); Java's "
        "AddPartitionsToTxnRequest.Builder.forClient caps at LAST_CLIENT_VERSION = 3 "
        "(apache/kafka 1eb7644, clients/.../requests/AddPartitionsToTxnRequest.java), and a "
        "broker asks for cluster-level rights for 4+"),
}

#: Per (API key, field as kclient names it), the value a client sends.
CLIENT_FIELD_VALUES: Mapping[tuple[int, str], ClientRule] = {
    (ApiKey.LIST_OFFSETS, "replica_id"): ClientRule(
        -1, "ListOffsetsRequest spec: -1 when the request comes from a consumer (the "
        "default 0 is broker 0, a follower: isolation level ignored, log-end offset "
        "instead of the high watermark); Java's ListOffsetsRequest.Builder.forConsumer sends "
        "CONSUMER_REPLICA_ID = -1 (apache/kafka 1eb7644), and so does kafka-python"),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, "replica_id"): ClientRule(
        -1, "OffsetForLeaderEpochRequest spec: -1 for a consumer (the default -2 is a "
        "debug consumer allowed past the high watermark); Java's "
        "OffsetsForLeaderEpochRequest.Builder.forConsumer sets CONSUMER_REPLICA_ID = -1 "
        "(apache/kafka 1eb7644)"),
}

_BY_API: dict[int, tuple[tuple[str, str, int], ...]] = {}
for (_key, _field), _rule in CLIENT_FIELD_VALUES.items():
    _kafka = "".join(part.capitalize() for part in _field.split("_"))
    _BY_API[_key] = (*_BY_API.get(_key, ()), (_field, _kafka, _rule.value))
del _key, _field, _rule, _kafka


def with_client_values(key: int, body: Any) -> Any:
    """``body`` with the client values of API ``key`` filled in where it does not set them.

    Only top-level fields of a mapping body are filled (a field named either as
    kclient names it, ``replica_id``, or as Kafka does, ``ReplicaId``, counts
    as set); any other body is returned as given.
    """
    fields = _BY_API.get(key)
    if not fields or not isinstance(body, Mapping):
        return body
    missing = {snake: value for snake, kafka, value in fields
               if snake not in body and kafka not in body}
    return {**body, **missing} if missing else body


#: Per API key: the first version whose topics are named by id alone, and the
#: path to the topic lists in the body (each step a field as kclient names it).
TOPIC_ID_VERSIONS: Mapping[int, tuple[ClientRule, tuple[tuple[str, ...], ...]]] = {
    ApiKey.PRODUCE: (ClientRule(
        13, "ProduceRequest spec (Kafka 4.x): 'Version 13 replaces topic names with topic "
        "IDs (KIP-516)'; the name field is ignorable there, so a body without ids would "
        "lose its topics"),
        (("topic_data",),)),
    ApiKey.FETCH: (ClientRule(
        13, "FetchRequest spec: v13 replaces Topic with TopicId (KIP-516); Java's "
        "AbstractFetch caps Fetch at 12 unless the fetch session can use topic ids "
        "(apache/kafka 1eb7644, clients/.../consumer/internals/AbstractFetch.java)"),
        (("topics",), ("forgotten_topics_data",))),
    ApiKey.OFFSET_COMMIT: (ClientRule(
        10, "OffsetCommitRequest spec (Kafka 4.x): 'Version 10 adds support for topic ids "
        "and removes support for topic names (KIP-848)'"),
        (("topics",),)),
    ApiKey.OFFSET_FETCH: (ClientRule(
        10, "OffsetFetchRequest spec (Kafka 4.x): 'Version 10 adds support for topic ids "
        "and removes support for topic names (KIP-848)'"),
        (("groups", "topics"),)),
}

_ZERO_ID = uuid.UUID(int=0)


def _has_topic_id(value: Any) -> bool:
    """True for a topic id that is set: a non-zero UUID or its text form."""
    if isinstance(value, uuid.UUID):
        return value != _ZERO_ID
    if isinstance(value, str):
        try:
            return uuid.UUID(value) != _ZERO_ID
        except ValueError:
            return bool(value)  # not a UUID: the encoder refuses it with its own error
    return False


def _kafka_name(field: str) -> str:
    return "".join(part.capitalize() for part in field.split("_"))


def _get(item: Mapping[str, Any], field: str) -> Any:
    return item.get(field, item.get(_kafka_name(field)))


def _topics(body: Any, path: tuple[str, ...]) -> list[Any]:
    """The entries at ``path`` in ``body`` (lists flattened), skipping what is not a mapping."""
    level = [body]
    for field in path:
        found: list[Any] = []
        for item in level:
            if isinstance(item, Mapping) and isinstance(value := _get(item, field), list):
                found.extend(value)
        level = found
    return level


def topic_name_cap(key: int, body: Any) -> int | None:
    """The highest version of API ``key`` that can carry ``body``'s topics, or ``None``.

    ``None`` unless ``body`` (a mapping) names some topic without a topic id in an
    API whose newer versions name topics by id alone (:data:`TOPIC_ID_VERSIONS`):
    those versions would drop the name and send an empty id, so the request
    stays below them.
    """
    rule = TOPIC_ID_VERSIONS.get(key)
    if rule is None or not isinstance(body, Mapping):
        return None
    first, paths = rule
    for path in paths:
        for topic in _topics(body, path):
            if isinstance(topic, Mapping) and not _has_topic_id(_get(topic, "topic_id")):
                return first.value - 1
    return None
