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
  that does not set them.

Each entry names its source.  Versions a broker advertises but rejects are
release knowledge (:mod:`kclient.negotiation.releases`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kclient.protocol.constants import ApiKey

__all__ = ["CLIENT_FIELD_VALUES", "CLIENT_MAX_VERSIONS", "ClientRule", "with_client_values"]


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
        "AddPartitionsToTxnRequest.Builder.forClient caps at 3, and a broker asks for "
        "cluster-level rights for 4+"),
}

#: Per (API key, field as kclient names it), the value a client sends.
CLIENT_FIELD_VALUES: Mapping[tuple[int, str], ClientRule] = {
    (ApiKey.LIST_OFFSETS, "replica_id"): ClientRule(
        -1, "ListOffsetsRequest spec: -1 when the request comes from a consumer (the "
        "default 0 is broker 0, a follower: isolation level ignored, log-end offset "
        "instead of the high watermark); Java's ListOffsetsRequest.CONSUMER_REPLICA_ID "
        "and kafka-python send -1"),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, "replica_id"): ClientRule(
        -1, "OffsetForLeaderEpochRequest spec: -1 for a consumer (the default -2 is a "
        "debug consumer allowed past the high watermark); Java's "
        "OffsetsForLeaderEpochRequest.Builder.forConsumer sends -1"),
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
