"""The group APIs of Kafka 4's protocols, translated to the emulated cluster's coordinators.

ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848,
:mod:`kclient.emulator.consumer_groups`); ShareGroupHeartbeat, ShareGroupDescribe,
ShareFetch, ShareAcknowledge and the share-group offset APIs (KIP-932,
:mod:`kclient.emulator.share_groups`, :mod:`kclient.emulator.share_partitions`);
StreamsGroupHeartbeat and StreamsGroupDescribe (KIP-1071,
:mod:`kclient.emulator.streams_groups`).  Each handler takes what it sees of the broker
(:class:`~kclient.emulator.served.Served`), the request version and the decoded header
and body, and returns the response body.

Whether a protocol is on is Kafka's own switch, read from the broker's finalized
feature levels (KIP-584) at each request, as ``KafkaApis`` reads them: a broker
advertises these APIs by its release, and answers UNSUPPORTED_VERSION in the
response when the level is missing (``isConsumerGroupProtocolEnabled``: a finalized
``group.version`` of 1 or more; ``isShareGroupProtocolEnabled``: ``share.version``
1 or more; ``isStreamsGroupProtocolEnabled``: ``streams.version`` 1 or more).  A
ShareFetch waits for records as a Fetch does (up to its ``MaxWaitMs``, at most
:data:`~kclient.emulator.apis.MAX_FETCH_WAIT`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kclient.emulator.apis import MAX_FETCH_WAIT, NO_OPERATIONS
from kclient.emulator.log import LEADER_EPOCH, TopicError
from kclient.emulator.served import Handler, Served
from kclient.emulator.share_partitions import FINAL_EPOCH, INITIAL_EPOCH, AckBatch
from kclient.emulator.state import ClusterState
from kclient.emulator.streams_groups import Subtopology, TopicInfo, Topology, error_body
from kclient.protocol.constants import ApiKey, ErrorCode

__all__ = ["GROUP_HANDLERS", "GROUP_VERSION", "SHARE_VERSION", "STREAMS_VERSION",
           "feature_level"]

Body = dict[str, Any]
#: The feature that switches the consumer group protocol on (Kafka's ``GroupVersion``).
GROUP_VERSION = "group.version"
#: The feature that switches share groups on (Kafka's ``ShareVersion``).
SHARE_VERSION = "share.version"
#: The feature that switches streams groups on (Kafka's ``StreamsVersion``).
STREAMS_VERSION = "streams.version"
#: How often a waiting ShareFetch looks again for records whose locks expired.
_SHARE_FETCH_POLL = 0.1
#: ShareFetch v0 has no MaxRecords: the most records it acquires (a consumer's default).
_DEFAULT_MAX_RECORDS = 500
#: The host Kafka reports for a member (the client's address as ``InetAddress.toString``).
_CLIENT_HOST = "/127.0.0.1"


def feature_level(broker: Served, name: str) -> int:
    """The level of feature ``name`` the broker's cluster finalized (0: not finalized)."""
    levels = broker.finalized_features.get(name)
    return int(levels[1]) if levels is not None else 0


def _described(broker: Served, feature: str, group_ids: Sequence[str], missing: Body,
               describe: Callable[[], list[Body]]) -> Body:
    """A ...GroupDescribe answer: ``describe()``'s groups, or UNSUPPORTED_VERSION for each
    group (with ``missing``'s fields) while ``feature`` is not finalized at 1 or more."""
    if feature_level(broker, feature) < 1:
        groups = [{"error_code": ErrorCode.UNSUPPORTED_VERSION, "error_message": None,
                   "group_id": group_id, "group_state": "", "group_epoch": 0,
                   "assignment_epoch": 0, "members": [], **missing} for group_id in group_ids]
    else:
        groups = describe()
    for group in groups:
        group["authorized_operations"] = NO_OPERATIONS
    return {"throttle_time_ms": 0, "groups": groups}


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
    return _described(broker, GROUP_VERSION, request.group_ids, {"assignor_name": ""},
                      lambda: broker.state.consumer.describe(request.group_ids, version))


# -- share groups ------------------------------------------------------------------------------
def _share_off(broker: Served) -> bool:
    return feature_level(broker, SHARE_VERSION) < 1


async def share_group_heartbeat(broker: Served, version: int, header: Any,
                                request: Any) -> Body | None:
    if _share_off(broker):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION,
                "error_message": None, "member_id": None, "member_epoch": 0,
                "heartbeat_interval_ms": 0, "assignment": None}
    state = broker.state
    body = state.coordination.run(lambda now: state.share.heartbeat(
        now, group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch, rack_id=request.rack_id,
        subscribed_topic_names=request.subscribed_topic_names,
        client_id=header.client_id or "", client_host=_CLIENT_HOST))
    return {"throttle_time_ms": 0, **body}


async def share_group_describe(broker: Served, version: int, header: Any,
                               request: Any) -> Body | None:
    return _described(broker, SHARE_VERSION, request.group_ids, {"assignor_name": ""},
                      lambda: broker.state.share.describe(request.group_ids))


def _acks(topics: Any) -> dict[tuple[uuid.UUID, int], list[AckBatch]]:
    out: dict[tuple[uuid.UUID, int], list[AckBatch]] = {}
    for topic in topics:
        for part in topic.partitions:
            if part.acknowledgement_batches:
                out[(topic.topic_id, part.partition_index)] = [
                    (b.first_offset, b.last_offset, list(b.acknowledge_types))
                    for b in part.acknowledgement_batches]
    return out


class _Leaders:
    """Partition leaders as a share response reports them (NOT_LEADER_OR_FOLLOWER)."""

    def __init__(self, broker: Served) -> None:
        self.broker = broker
        self.endpoints: dict[int, Body] = {}

    def error(self, state: ClusterState, topic_id: uuid.UUID, index: int) -> tuple[int, Body]:
        topic = state.topics_by_id.get(topic_id)
        if topic is None or not 0 <= index < len(topic.partitions):
            return ErrorCode.UNKNOWN_TOPIC_ID, {"leader_id": -1, "leader_epoch": -1}
        leader = ClusterState.leader(topic, index, [b.node_id for b in self.broker.listed()])
        if leader == self.broker.node_id:
            return ErrorCode.NONE, {"leader_id": leader, "leader_epoch": LEADER_EPOCH}
        for entry in self.broker.listed():
            if entry.node_id == leader:
                self.endpoints[leader] = {"node_id": leader, "host": entry.host,
                                          "port": entry.port, "rack": None}
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, {"leader_id": leader,
                                                  "leader_epoch": LEADER_EPOCH}

    def listed(self) -> list[Body]:
        return [self.endpoints[k] for k in sorted(self.endpoints)]


def _share_body(lock: int | None, code: int = ErrorCode.NONE, message: str | None = None,
                by_topic: Mapping[uuid.UUID, list[Body]] | None = None,
                leaders: _Leaders | None = None) -> Body:
    """A ShareFetch or ShareAcknowledge answer; ``lock`` is AcquisitionLockTimeoutMs (None:
    a version without it)."""
    body: Body = {"throttle_time_ms": 0, "error_code": code, "error_message": message,
                  "responses": [{"topic_id": t, "partitions": parts}
                                for t, parts in (by_topic or {}).items()],
                  "node_endpoints": leaders.listed() if leaders is not None else []}
    if lock is not None:
        body["acquisition_lock_timeout_ms"] = lock
    return body


def _share_session(broker: Served, request: Any, lock: int | None, *,
                   fetch: bool) -> tuple[Body | None, Any]:
    """The checks a ShareFetch (``fetch``) or ShareAcknowledge passes before its share
    session is used: an error answer, or None and the session."""
    group_id, member_id = request.group_id, request.member_id or ""
    epoch = request.share_session_epoch
    if _share_off(broker):
        return _share_body(lock, ErrorCode.UNSUPPORTED_VERSION), None
    if not group_id:
        return _share_body(lock, ErrorCode.INVALID_GROUP_ID), None
    if fetch and not member_id:
        return _share_body(lock, ErrorCode.INVALID_REQUEST, "MemberId can't be empty."), None
    if fetch and epoch == INITIAL_EPOCH and _acks(request.topics):
        return _share_body(lock, ErrorCode.INVALID_REQUEST,
                           "Acknowledge data present on initial fetch request"), None
    state = broker.state
    code, session = state.coordination.run(lambda now: state.share_partitions.session(
        group_id, member_id, broker.node_id, epoch, fetch=fetch))
    if code != ErrorCode.NONE or session is None:
        return _share_body(lock, code), None
    return None, session


def _apply_acks(state: ClusterState, now: float, group_id: str, member_id: str,
                acks: dict[tuple[uuid.UUID, int], list[AckBatch]], renew: bool,
                leaders: _Leaders) -> dict[tuple[uuid.UUID, int], tuple[int, str | None]]:
    results: dict[tuple[uuid.UUID, int], tuple[int, str | None]] = {}
    for (topic_id, index), batches in acks.items():
        code, _leader = leaders.error(state, topic_id, index)
        if code != ErrorCode.NONE:
            results[(topic_id, index)] = (code, None)
            continue
        results[(topic_id, index)] = state.share_partitions.acknowledge(
            now, group_id, member_id, topic_id, index, batches, renew_allowed=renew)
    return results


async def share_fetch(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    state = broker.state
    manager = state.share_partitions
    lock = manager.settings.record_lock_duration_ms if version >= 1 else None
    refused, session = _share_session(broker, request, 0 if version >= 1 else None, fetch=True)
    if refused is not None:
        return refused
    group_id, member_id = request.group_id, request.member_id
    session.partitions |= {(t.topic_id, p.partition_index) for t in request.topics
                           for p in t.partitions}
    session.partitions -= {(t.topic_id, p) for t in request.forgotten_topics_data
                           for p in t.partitions}
    acks = _acks(request.topics)
    leaders = _Leaders(broker)
    renew = version >= 2 and bool(request.is_renew_ack)
    ack_results = state.coordination.run(lambda now: _apply_acks(
        state, now, group_id, member_id, acks, renew, leaders))
    acquired: dict[tuple[uuid.UUID, int], list[Any]] = {}
    if request.share_session_epoch == FINAL_EPOCH:
        state.coordination.run(lambda now: manager.close_session(
            group_id, member_id, broker.node_id))
    elif not renew:
        max_records = request.max_records if version >= 1 else _DEFAULT_MAX_RECORDS
        deadline = time.monotonic() + min(max(request.max_wait_ms, 0) / 1000, MAX_FETCH_WAIT)
        while True:
            appended = state.appended()
            acquired = state.coordination.run(lambda now: _acquire(
                state, now, group_id, member_id, sorted(session.partitions,
                                                        key=lambda k: (str(k[0]), k[1])),
                max_records, leaders))
            remaining = deadline - time.monotonic()
            if any(acquired.values()) or remaining <= 0 or not broker.running:
                break
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(remaining, _SHARE_FETCH_POLL)):
                    await appended.wait()
    max_bytes = request.max_bytes if request.max_bytes > 0 else 2**31 - 1
    by_topic: dict[uuid.UUID, list[Body]] = {}
    keys = sorted(set(acks) | set(acquired) | {(t.topic_id, p.partition_index)
                                               for t in request.topics for p in t.partitions},
                  key=lambda k: (str(k[0]), k[1]))
    used = 0
    for topic_id, index in keys:
        code, leader = leaders.error(state, topic_id, index)
        ranges = acquired.get((topic_id, index), [])
        records = manager.records_bytes(topic_id, index, ranges, max(max_bytes - used, 1))
        used += len(records)
        ack_code, ack_message = ack_results.get((topic_id, index), (ErrorCode.NONE, None))
        by_topic.setdefault(topic_id, []).append({
            "partition_index": index, "error_code": code, "error_message": None,
            "acknowledge_error_code": ack_code, "acknowledge_error_message": ack_message,
            "current_leader": leader, "records": records,
            "acquired_records": [{"first_offset": r.first_offset, "last_offset": r.last_offset,
                                  "delivery_count": r.delivery_count} for r in ranges]})
    return _share_body(lock, by_topic=by_topic, leaders=leaders)


def _acquire(state: ClusterState, now: float, group_id: str, member_id: str,
             partitions: list[tuple[uuid.UUID, int]], max_records: int,
             leaders: _Leaders) -> dict[tuple[uuid.UUID, int], list[Any]]:
    out: dict[tuple[uuid.UUID, int], list[Any]] = {}
    left = max_records
    for topic_id, index in partitions:
        if leaders.error(state, topic_id, index)[0] != ErrorCode.NONE or left <= 0:
            continue
        got = state.share_partitions.acquire(now, group_id, member_id, topic_id, index, left)
        left -= sum(r.last_offset - r.first_offset + 1 for r in got)
        if got:
            out[(topic_id, index)] = got
    return out


async def share_acknowledge(broker: Served, version: int, header: Any,
                            request: Any) -> Body | None:
    state = broker.state
    manager = state.share_partitions
    lock = manager.settings.record_lock_duration_ms if version >= 2 else None
    refused, _session = _share_session(broker, request, 0 if version >= 2 else None,
                                       fetch=False)
    if refused is not None:
        return refused
    group_id, member_id = request.group_id, request.member_id or ""
    leaders = _Leaders(broker)
    renew = version >= 2 and bool(request.is_renew_ack)
    results = state.coordination.run(lambda now: _apply_acks(
        state, now, group_id, member_id, _acks(request.topics), renew, leaders))
    if request.share_session_epoch == FINAL_EPOCH:
        state.coordination.run(lambda now: manager.close_session(
            group_id, member_id, broker.node_id))
    by_topic: dict[uuid.UUID, list[Body]] = {}
    for (topic_id, index), (ack_code, message) in results.items():
        _code, leader = leaders.error(state, topic_id, index)
        by_topic.setdefault(topic_id, []).append({
            "partition_index": index, "error_code": ack_code, "error_message": message,
            "current_leader": leader})
    return _share_body(lock, by_topic=by_topic, leaders=leaders)


async def describe_share_group_offsets(broker: Served, version: int, header: Any,
                                       request: Any) -> Body | None:
    groups = []
    for group in request.groups:
        if _share_off(broker):
            groups.append({"group_id": group.group_id, "topics": [],
                           "error_code": ErrorCode.UNSUPPORTED_VERSION, "error_message": None})
            continue
        wanted = None if group.topics is None else [
            (t.topic_name, list(t.partitions)) for t in group.topics]
        described = broker.state.share.describe_offsets(group.group_id, wanted)
        if version < 1:
            for topic in described["topics"]:
                for part in topic["partitions"]:
                    del part["lag"]
        groups.append(described)
    return {"throttle_time_ms": 0, "groups": groups}


async def alter_share_group_offsets(broker: Served, version: int, header: Any,
                                    request: Any) -> Body | None:
    if _share_off(broker):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION,
                "error_message": None, "responses": []}
    state = broker.state
    wanted = [(t.topic_name, [(p.partition_index, p.start_offset) for p in t.partitions])
              for t in request.topics]
    body = state.coordination.run(lambda now: state.share.alter_offsets(request.group_id, wanted))
    return {"throttle_time_ms": 0, **body}


async def delete_share_group_offsets(broker: Served, version: int, header: Any,
                                     request: Any) -> Body | None:
    if _share_off(broker):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION,
                "error_message": None, "responses": []}
    state = broker.state
    body = state.coordination.run(lambda now: state.share.delete_offsets(
        request.group_id, [t.topic_name for t in request.topics]))
    return {"throttle_time_ms": 0, **body}


# -- streams groups ------------------------------------------------------------------------------
def _topic_info(info: Any) -> TopicInfo:
    return TopicInfo(info.name, info.partitions, info.replication_factor,
                     tuple((c.key, c.value) for c in info.topic_configs))


def _topology(wire: Any) -> Topology | None:
    if wire is None:
        return None
    return Topology(wire.epoch, tuple(Subtopology(
        s.subtopology_id, tuple(s.source_topics), tuple(s.repartition_sink_topics),
        tuple(_topic_info(i) for i in s.state_changelog_topics),
        tuple(_topic_info(i) for i in s.repartition_source_topics),
        tuple(tuple(g.source_topics) for g in s.copartition_groups))
        for s in wire.subtopologies))


def _task_ids(listed: Any) -> list[tuple[str, list[int]]] | None:
    return None if listed is None else [(t.subtopology_id, list(t.partitions)) for t in listed]


def _task_offsets(listed: Any) -> list[tuple[str, int, int]] | None:
    return None if listed is None else [(t.subtopology_id, t.partition, t.offset)
                                        for t in listed]


async def streams_group_heartbeat(broker: Served, version: int, header: Any,
                                  request: Any) -> Body | None:
    state = broker.state
    if feature_level(broker, STREAMS_VERSION) < 1:
        return {"throttle_time_ms": 0, **error_body(ErrorCode.UNSUPPORTED_VERSION, None)}
    wire = request.topology
    endpoint = request.user_endpoint
    beat = state.coordination.run(lambda now: state.streams.heartbeat(
        now, group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch,
        endpoint_information_epoch=request.endpoint_information_epoch,
        instance_id=request.instance_id, rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms, topology=_topology(wire),
        source_topic_regex=wire is not None and any(
            s.source_topic_regex for s in wire.subtopologies),
        active_tasks=_task_ids(request.active_tasks),
        standby_tasks=_task_ids(request.standby_tasks),
        warmup_tasks=_task_ids(request.warmup_tasks), process_id=request.process_id,
        user_endpoint=None if endpoint is None else (endpoint.host, endpoint.port),
        client_tags=None if request.client_tags is None else [
            (kv.key, kv.value) for kv in request.client_tags],
        task_offsets=_task_offsets(request.task_offsets),
        task_end_offsets=_task_offsets(request.task_end_offsets),
        shutdown_application=bool(request.shutdown_application),
        client_id=header.client_id or "", client_host=_CLIENT_HOST))
    for name, partitions, factor, configs in beat.create:
        # Kafka's broker creates the internal topics the coordinator asks for.
        with contextlib.suppress(TopicError):
            state.create_topic(name, partitions, max(factor, 1), configs)
    return {"throttle_time_ms": 0, **beat.body}


async def streams_group_describe(broker: Served, version: int, header: Any,
                                 request: Any) -> Body | None:
    return _described(broker, STREAMS_VERSION, request.group_ids, {"topology": None},
                      lambda: broker.state.streams.describe(request.group_ids))


#: The handler of each Kafka 4 group API the emulator answers.
GROUP_HANDLERS: Mapping[int, Handler] = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_group_describe,
    ApiKey.SHARE_GROUP_HEARTBEAT: share_group_heartbeat,
    ApiKey.SHARE_GROUP_DESCRIBE: share_group_describe,
    ApiKey.SHARE_FETCH: share_fetch,
    ApiKey.SHARE_ACKNOWLEDGE: share_acknowledge,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: describe_share_group_offsets,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: alter_share_group_offsets,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: delete_share_group_offsets,
    ApiKey.STREAMS_GROUP_HEARTBEAT: streams_group_heartbeat,
    ApiKey.STREAMS_GROUP_DESCRIBE: streams_group_describe,
}
