"""The group APIs of Kafka 4's protocols, translated to the emulated cluster's coordinators.

ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848,
:mod:`kclient.emulator.consumer_groups`).  Each handler takes what it sees of the
broker (:class:`~kclient.emulator.apis.Served`), the request version and the
decoded header and body, and returns the response body.

Whether a protocol is on is Kafka's own switch, read from the broker's finalized
feature levels (KIP-584) at each request, as ``KafkaApis`` reads them: a broker
advertises these APIs by its release, and answers UNSUPPORTED_VERSION in the
response when the level is missing (``isConsumerGroupProtocolEnabled``: a
finalized ``group.version`` of 1 or more).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kclient.emulator.apis import NO_OPERATIONS, Handler, Served
from kclient.protocol.constants import ApiKey, ErrorCode

__all__ = ["GROUP_HANDLERS", "GROUP_VERSION", "feature_level"]

Body = dict[str, Any]
#: The feature that switches the consumer group protocol on (Kafka's ``GroupVersion``).
GROUP_VERSION = "group.version"
#: The host Kafka reports for a member (the client's address as ``InetAddress.toString``).
_CLIENT_HOST = "/127.0.0.1"


def feature_level(broker: Served, name: str) -> int:
    """The level of feature ``name`` the broker's cluster finalized (0: not finalized)."""
    levels = broker.finalized_features.get(name)
    return int(levels[1]) if levels is not None else 0


async def consumer_group_heartbeat(broker: Served, version: int, header: Any,
                                   request: Any) -> Body | None:
    if feature_level(broker, GROUP_VERSION) < 1:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION,
                "error_message": None, "member_id": None, "member_epoch": 0,
                "heartbeat_interval_ms": 0, "assignment": None}
    state = broker.state
    owned = None if request.topic_partitions is None else [
        (tp.topic_id, list(tp.partitions)) for tp in request.topic_partitions]
    body = state.coordination.run(lambda now: state.consumer.heartbeat(
        now, version=version, group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch, instance_id=request.instance_id,
        rack_id=request.rack_id, rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=request.subscribed_topic_names,
        subscribed_topic_regex=request.subscribed_topic_regex if version >= 1 else None,
        server_assignor=request.server_assignor, owned=owned,
        client_id=header.client_id or "", client_host=_CLIENT_HOST))
    return {"throttle_time_ms": 0, **body}


async def consumer_group_describe(broker: Served, version: int, header: Any,
                                  request: Any) -> Body | None:
    if feature_level(broker, GROUP_VERSION) < 1:
        groups: list[Body] = [
            {"error_code": ErrorCode.UNSUPPORTED_VERSION, "error_message": None,
             "group_id": group_id, "group_state": "", "group_epoch": 0, "assignment_epoch": 0,
             "assignor_name": "", "members": []} for group_id in request.group_ids]
    else:
        groups = broker.state.consumer.describe(request.group_ids, version)
    for group in groups:
        group["authorized_operations"] = NO_OPERATIONS
    return {"throttle_time_ms": 0, "groups": groups}


#: The handler of each Kafka 4 group API the emulator answers.
GROUP_HANDLERS: Mapping[int, Handler] = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_group_describe,
}
