"""The everyday APIs an emulated broker answers, on top of a :class:`ClusterState`.

Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, FindCoordinator, the classic
group APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups,
ListGroups), OffsetCommit, OffsetFetch, InitProducerId, CreateTopics and
DeleteTopics, each at every version kclient's specs describe (the broker only
lets through the versions its release advertises).  Every handler takes the
broker, the request version and the decoded header and body, and returns the
response body as a dict of snake_case field names, or None for a request Kafka
does not answer (Produce with acks=0).  Modelled on franz-go's kfake.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
import zlib
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from kclient.emulator.state import LEADER_EPOCH, ClusterState, RecordsError, Topic
from kclient.protocol.constants import ApiKey, ErrorCode

if TYPE_CHECKING:
    from kclient.emulator.broker import EmulatedBroker

__all__ = ["HANDLERS", "NO_OPERATIONS", "UNSUPPORTED_VERSION_ANSWERS", "metadata_topics",
           "produce_error_body"]

Body = dict[str, Any]
Handler = Callable[["EmulatedBroker", int, Any, Any], Awaitable[Body | None]]
_ZERO_UUID = uuid.UUID(int=0)
#: "Authorized operations" not asked for (Kafka's Integer.MIN_VALUE).
NO_OPERATIONS = -2147483648
#: The longest a Fetch waits for data, whatever max_wait_ms asks (bounded serving).
MAX_FETCH_WAIT = 5.0
_LATEST, _EARLIEST, _MAX_TIMESTAMP = -1, -2, -3


def _node_ids(broker: EmulatedBroker) -> list[int]:
    return [b.node_id for b in broker.listed()]


def _topic(state: ClusterState, name: str | None, topic_id: uuid.UUID | None,
           version_uses_id: bool) -> Topic | None:
    if version_uses_id:
        return state.topics_by_id.get(topic_id or _ZERO_UUID)
    return state.topics.get(name or "")


def _unknown_topic(version_uses_id: bool) -> int:
    return ErrorCode.UNKNOWN_TOPIC_ID if version_uses_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _partition_error(broker: EmulatedBroker, topic: Topic | None, index: int,
                     uses_id: bool) -> int:
    """NONE when this broker leads ``index`` of ``topic``, else the error Kafka gives."""
    if topic is None:
        return _unknown_topic(uses_id)
    if not 0 <= index < len(topic.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if ClusterState.leader(topic, index, _node_ids(broker)) != broker.node_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return ErrorCode.NONE


# -- Produce -------------------------------------------------------------------------------
async def produce(broker: EmulatedBroker, version: int, header: Any, request: Any) -> Body | None:
    state, uses_id = broker.state, version >= 13
    responses = []
    appended = False
    for data in request.topic_data:
        topic = _topic(state, data.name, data.topic_id, uses_id)
        partitions = []
        for part in data.partition_data:
            code = _partition_error(broker, topic, part.index, uses_id)
            base, message = -1, None
            if code == ErrorCode.NONE and topic is not None:
                try:
                    base = topic.partitions[part.index].append(bytes(part.records or b""))
                    appended = True
                except RecordsError as exc:
                    code, message = ErrorCode.CORRUPT_MESSAGE, str(exc)
            log_start = topic.partitions[part.index].log_start_offset if (
                topic is not None and code == ErrorCode.NONE) else -1
            partitions.append({"index": part.index, "error_code": code, "base_offset": base,
                               "log_append_time_ms": -1, "log_start_offset": log_start,
                               "record_errors": [], "error_message": message})
        responses.append({"name": data.name, "topic_id": data.topic_id,
                          "partition_responses": partitions})
    if appended:
        state.notify_appended()
    if request.acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}


def produce_error_body(request: Any, code: int) -> Body:
    """A Produce response giving ``code`` to every partition (Kafka's answer to a
    version it advertises but rejects)."""
    return {"throttle_time_ms": 0, "responses": [
        {"name": data.name, "topic_id": data.topic_id, "partition_responses": [
            {"index": p.index, "error_code": code, "base_offset": -1,
             "log_append_time_ms": -1, "log_start_offset": -1}
            for p in data.partition_data]}
        for data in request.topic_data]}


#: Builders of the answer Kafka gives to a version it advertises but rejects, by API key.
UNSUPPORTED_VERSION_ANSWERS: Mapping[int, Callable[[Any, int], Body]] = {
    ApiKey.PRODUCE: produce_error_body,
}


# -- Fetch ------------------------------------------------------------------------------------
def _fetch_once(broker: EmulatedBroker, version: int, request: Any) -> tuple[Body, int]:
    state, uses_id = broker.state, version >= 13
    budget = request.max_bytes if version >= 3 and request.max_bytes > 0 else 2**31 - 1
    total = 0
    responses = []
    for wanted in request.topics:
        topic = _topic(state, wanted.topic, wanted.topic_id, uses_id)
        partitions = []
        for part in wanted.partitions:
            code = _partition_error(broker, topic, part.partition, uses_id)
            records, hwm, start = b"", -1, -1
            if code == ErrorCode.NONE and topic is not None:
                log = topic.partitions[part.partition]
                hwm, start = log.high_watermark, log.log_start_offset
                if not start <= part.fetch_offset <= hwm:
                    code = ErrorCode.OFFSET_OUT_OF_RANGE
                elif budget - total > 0 or total == 0:
                    limit = min(part.partition_max_bytes, budget - total)
                    records = log.read(part.fetch_offset, max(limit, 1))
                    total += len(records)
            partitions.append({
                "partition_index": part.partition, "error_code": code, "high_watermark": hwm,
                "last_stable_offset": hwm, "log_start_offset": start,
                "aborted_transactions": [], "preferred_read_replica": -1, "records": records})
        responses.append({"topic": wanted.topic, "topic_id": wanted.topic_id,
                          "partitions": partitions})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0,
            "responses": responses}, total


async def fetch(broker: EmulatedBroker, version: int, header: Any, request: Any) -> Body | None:
    # Sessions (KIP-227): the emulator never creates one (session id 0 in every answer),
    # so clients keep sending full requests; an unknown session is an error, as in Kafka.
    if version >= 7 and request.session_id != 0:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                "session_id": 0, "responses": []}
    deadline = time.monotonic() + min(max(request.max_wait_ms, 0) / 1000, MAX_FETCH_WAIT)
    while True:
        appended = broker.state.appended()
        body, size = _fetch_once(broker, version, request)
        remaining = deadline - time.monotonic()
        if size >= max(request.min_bytes, 1) or remaining <= 0 or not broker.running:
            return body
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(remaining):
                await appended.wait()


# -- ListOffsets / OffsetForLeaderEpoch -----------------------------------------------------------
async def list_offsets(broker: EmulatedBroker, version: int, header: Any,
                       request: Any) -> Body | None:
    topics = []
    for wanted in request.topics:
        topic = broker.state.topics.get(wanted.name)
        partitions = []
        for part in wanted.partitions:
            code = _partition_error(broker, topic, part.partition_index, False)
            offset, timestamp = -1, -1
            if code == ErrorCode.NONE and topic is not None:
                log = topic.partitions[part.partition_index]
                if part.timestamp == _LATEST:
                    offset = log.high_watermark
                elif part.timestamp == _EARLIEST:
                    offset = log.log_start_offset
                elif part.timestamp == _MAX_TIMESTAMP:
                    timestamp, offset = log.max_timestamp()
                else:
                    offset, timestamp = log.offset_for_timestamp(part.timestamp), part.timestamp
            partitions.append({
                "partition_index": part.partition_index, "error_code": code,
                "old_style_offsets": [] if offset < 0 else [offset][:max(part.max_num_offsets, 0)],
                "timestamp": timestamp, "offset": offset, "leader_epoch": LEADER_EPOCH})
        topics.append({"name": wanted.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


async def offset_for_leader_epoch(broker: EmulatedBroker, version: int, header: Any,
                                  request: Any) -> Body | None:
    topics = []
    for wanted in request.topics:
        topic = broker.state.topics.get(wanted.topic)
        partitions = []
        for part in wanted.partitions:
            code = _partition_error(broker, topic, part.partition, False)
            end = -1
            if code == ErrorCode.NONE and topic is not None:
                end = topic.partitions[part.partition].high_watermark
            partitions.append({"error_code": code, "partition": part.partition,
                               "leader_epoch": LEADER_EPOCH if end >= 0 else -1,
                               "end_offset": end})
        topics.append({"topic": wanted.topic, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


# -- Metadata / topics ---------------------------------------------------------------------
def metadata_topics(broker: EmulatedBroker, version: int, request: Any) -> list[Body]:
    """The topics part of a Metadata answer (auto-creating topics the client asks for)."""
    state = broker.state
    wanted = getattr(request, "topics", None)
    if wanted is None or (version == 0 and not wanted):
        chosen: list[tuple[str | None, uuid.UUID | None, Topic | None]] = [
            (t.name, t.topic_id, t) for t in state.topics.values()]
    else:
        allow = version < 4 or bool(request.allow_auto_topic_creation)
        chosen = []
        for item in wanted:
            name = item.name
            topic_id = item.topic_id if version >= 10 else None
            if name is None and topic_id:
                topic = state.topics_by_id.get(topic_id)
            else:
                topic = state.topics.get(name or "")
                if (topic is None and name and allow and state.auto_create_topics
                        and not name.startswith("__")):
                    topic = state.create_topic(name)
            chosen.append((name, topic_id, topic))
    nodes = _node_ids(broker)
    out: list[Body] = []
    for name, topic_id, topic in chosen:
        if topic is None:
            out.append({"error_code": (ErrorCode.UNKNOWN_TOPIC_ID if name is None
                                       else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                        "name": name, "topic_id": topic_id or _ZERO_UUID, "is_internal": False,
                        "partitions": [], "topic_authorized_operations": NO_OPERATIONS})
            continue
        partitions = []
        for index in range(len(topic.partitions)):
            leader = ClusterState.leader(topic, index, nodes)
            partitions.append({
                "error_code": ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                "partition_index": index, "leader_id": leader, "leader_epoch": LEADER_EPOCH,
                "replica_nodes": [leader], "isr_nodes": [leader], "offline_replicas": []})
        out.append({"error_code": ErrorCode.NONE, "name": topic.name, "topic_id": topic.topic_id,
                    "is_internal": False, "partitions": partitions,
                    "topic_authorized_operations": NO_OPERATIONS})
    return out


async def create_topics(broker: EmulatedBroker, version: int, header: Any,
                        request: Any) -> Body | None:
    state = broker.state
    results = []
    for wanted in request.topics:
        code, message = ErrorCode.NONE, None
        count = wanted.num_partitions
        replicas = wanted.replication_factor
        if wanted.assignments:
            count, replicas = len(wanted.assignments), len(wanted.assignments[0].broker_ids)
        nodes = len(_node_ids(broker))
        if count == -1:
            count = state.default_partitions
        if replicas == -1:
            replicas = 1
        topic_id = _ZERO_UUID
        if wanted.name in state.topics:
            code, message = ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{wanted.name}' already exists."
        elif not wanted.name or wanted.name in (".", "..") or len(wanted.name) > 249:
            code, message = ErrorCode.INVALID_TOPIC_EXCEPTION, "Invalid topic name."
        elif count < 1:
            code = ErrorCode.INVALID_PARTITIONS
            message = "Number of partitions must be larger than 0."
        elif replicas < 1 or replicas > nodes:
            code = ErrorCode.INVALID_REPLICATION_FACTOR
            message = (f"Replication factor: {replicas} larger than available brokers: {nodes}."
                       if replicas > nodes else "Replication factor must be larger than 0.")
        elif not request.validate_only:
            topic = state.create_topic(wanted.name, count, replicas,
                                       {c.name: c.value for c in wanted.configs})
            topic_id = topic.topic_id
        results.append({
            "name": wanted.name, "topic_id": topic_id, "error_code": code, "error_message": message,
            "num_partitions": count if code == ErrorCode.NONE else -1,
            "replication_factor": replicas if code == ErrorCode.NONE else -1,
            "configs": [] if code == ErrorCode.NONE else None})
    return {"throttle_time_ms": 0, "topics": results}


async def delete_topics(broker: EmulatedBroker, version: int, header: Any,
                        request: Any) -> Body | None:
    state = broker.state
    wanted: list[tuple[str | None, uuid.UUID]] = (
        [(t.name, t.topic_id) for t in request.topics] if version >= 6
        else [(name, _ZERO_UUID) for name in request.topic_names])
    results = []
    for name, topic_id in wanted:
        if name is None and topic_id in state.topics_by_id:
            name = state.topics_by_id[topic_id].name
        topic = state.topics.get(name or "")
        code = ErrorCode.NONE if topic is not None else (
            ErrorCode.UNKNOWN_TOPIC_ID if name is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if topic is not None:
            state.delete_topic(topic.name)
            topic_id = topic.topic_id
        results.append({"name": name, "topic_id": topic_id, "error_code": code,
                        "error_message": None})
    return {"throttle_time_ms": 0, "responses": results}


# -- coordinators and groups -----------------------------------------------------------------
def coordinator_for(broker: EmulatedBroker, key: str) -> Any:
    """The broker (as listed) that coordinates group or transactional id ``key``."""
    listed = sorted(broker.listed(), key=lambda b: b.node_id)
    return listed[zlib.crc32(key.encode()) % len(listed)] if listed else None


async def find_coordinator(broker: EmulatedBroker, version: int, header: Any,
                           request: Any) -> Body | None:
    keys = list(request.coordinator_keys) if version >= 4 else [request.key]
    found = []
    for key in keys:
        node = coordinator_for(broker, key)
        if node is None:
            found.append({"key": key, "node_id": -1, "host": "", "port": -1,
                          "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                          "error_message": "no broker is running"})
        else:
            found.append({"key": key, "node_id": node.node_id, "host": node.host,
                          "port": node.port, "error_code": ErrorCode.NONE,
                          "error_message": None})
    if version >= 4:
        return {"throttle_time_ms": 0, "coordinators": found}
    first = found[0]
    return {"throttle_time_ms": 0, "error_code": first["error_code"],
            "error_message": first["error_message"], "node_id": first["node_id"],
            "host": first["host"], "port": first["port"]}


async def join_group(broker: EmulatedBroker, version: int, header: Any,
                     request: Any) -> Body | None:
    session = request.session_timeout_ms
    rebalance = request.rebalance_timeout_ms if version >= 1 else session
    answer = await broker.state.join(
        request.group_id, request.member_id,
        request.group_instance_id if version >= 5 else None, header.client_id or "",
        request.protocol_type, [(p.name, bytes(p.metadata)) for p in request.protocols],
        session, rebalance, require_known_member=version >= 4)
    body: Body = {"throttle_time_ms": 0, "generation_id": -1, "protocol_type": None,
                  "protocol_name": None if version >= 7 else "", "leader": "",
                  "skip_assignment": False, "member_id": request.member_id, "members": []}
    body.update(answer)
    if version < 7 and body["protocol_name"] is None:
        body["protocol_name"] = ""
    return body


async def sync_group(broker: EmulatedBroker, version: int, header: Any,
                     request: Any) -> Body | None:
    code, assignment = await broker.state.sync(
        request.group_id, request.member_id, request.generation_id,
        {a.member_id: bytes(a.assignment) for a in request.assignments})
    group = broker.state.groups.get(request.group_id)
    return {"throttle_time_ms": 0, "error_code": code,
            "protocol_type": group.protocol_type if group else None,
            "protocol_name": group.protocol if group else None, "assignment": assignment}


async def heartbeat(broker: EmulatedBroker, version: int, header: Any,
                    request: Any) -> Body | None:
    code = broker.state.heartbeat(request.group_id, request.member_id, request.generation_id)
    return {"throttle_time_ms": 0, "error_code": code}


async def leave_group(broker: EmulatedBroker, version: int, header: Any,
                      request: Any) -> Body | None:
    if version < 3:
        code = broker.state.leave(request.group_id, [request.member_id])[0]
        return {"throttle_time_ms": 0, "error_code": code, "members": []}
    ids = [m.member_id for m in request.members]
    codes = broker.state.leave(request.group_id, ids)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "members": [
        {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "error_code": c}
        for m, c in zip(request.members, codes, strict=True)]}


async def describe_groups(broker: EmulatedBroker, version: int, header: Any,
                          request: Any) -> Body | None:
    out = []
    for group_id in request.groups:
        group = broker.state.groups.get(group_id)
        if group is None:
            out.append({"error_code": ErrorCode.NONE, "group_id": group_id, "group_state": "Dead",
                        "protocol_type": "", "protocol_data": "", "members": [],
                        "authorized_operations": NO_OPERATIONS})
            continue
        out.append({"error_code": ErrorCode.NONE, "group_id": group_id,
                    "group_state": group.state, "protocol_type": group.protocol_type or "",
                    "protocol_data": group.protocol or "", "members": [
                        {"member_id": m.member_id, "group_instance_id": m.instance_id,
                         "client_id": m.client_id, "client_host": "/127.0.0.1",
                         "member_metadata": dict(m.protocols).get(group.protocol or "", b""),
                         "member_assignment": m.assignment} for m in group.members.values()],
                    "authorized_operations": NO_OPERATIONS})
    return {"throttle_time_ms": 0, "groups": out}


async def list_groups(broker: EmulatedBroker, version: int, header: Any,
                      request: Any) -> Body | None:
    states = set(request.states_filter) if version >= 4 else set()
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": [
        {"group_id": g.group_id, "protocol_type": g.protocol_type or "", "group_state": g.state,
         "group_type": "classic"}
        for g in broker.state.groups.values() if not states or g.state in states]}


async def offset_commit(broker: EmulatedBroker, version: int, header: Any,
                        request: Any) -> Body | None:
    state, uses_id = broker.state, version >= 10
    generation = request.generation_id_or_member_epoch if version >= 1 else -1
    member_id = request.member_id if version >= 1 else ""
    code = state.check_commit(request.group_id, member_id, generation)
    group = state.group(request.group_id) if request.group_id else None
    topics = []
    for wanted in request.topics:
        topic = _topic(state, wanted.name, wanted.topic_id, uses_id)
        partitions = []
        for part in wanted.partitions:
            part_code = code
            if part_code == ErrorCode.NONE:
                if topic is None:
                    part_code = _unknown_topic(uses_id)
                elif not 0 <= part.partition_index < len(topic.partitions):
                    part_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if part_code == ErrorCode.NONE and group is not None and topic is not None:
                epoch = part.committed_leader_epoch if version >= 6 else -1
                group.offsets[(topic.name, part.partition_index)] = (
                    part.committed_offset, epoch, part.committed_metadata)
            partitions.append({"partition_index": part.partition_index, "error_code": part_code})
        topics.append({"name": wanted.name, "topic_id": wanted.topic_id, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _fetched_offsets(state: ClusterState, group_id: str, wanted: Any, uses_id: bool,
                     grouped: bool) -> list[Body]:
    group = state.groups.get(group_id)
    offsets = group.offsets if group is not None else {}
    if wanted is None:
        by_topic: dict[str, list[int]] = {}
        for topic_name, index in sorted(offsets):
            by_topic.setdefault(topic_name, []).append(index)
        items: list[tuple[str | None, uuid.UUID | None, list[int]]] = [
            (key, state.topics[key].topic_id if key in state.topics else _ZERO_UUID, idx)
            for key, idx in by_topic.items()]
    else:
        items = [(t.name, getattr(t, "topic_id", None), list(t.partition_indexes))
                 for t in wanted]
    out = []
    for name, topic_id, indexes in items:
        topic = _topic(state, name, topic_id, uses_id)
        real = topic.name if topic is not None else name or ""
        partitions = []
        for index in indexes:
            offset, epoch, metadata = offsets.get((real, index), (-1, -1, ""))
            partitions.append({"partition_index": index, "committed_offset": offset,
                               "committed_leader_epoch": epoch, "metadata": metadata,
                               "error_code": ErrorCode.NONE})
        item: Body = {"name": name, "partitions": partitions}
        if grouped:  # only the v8+ (groups) layout has topic ids
            item["topic_id"] = topic_id or _ZERO_UUID
        out.append(item)
    return out


async def offset_fetch(broker: EmulatedBroker, version: int, header: Any,
                       request: Any) -> Body | None:
    state = broker.state
    if version >= 8:
        return {"throttle_time_ms": 0, "groups": [
            {"group_id": g.group_id, "error_code": ErrorCode.NONE,
             "topics": _fetched_offsets(state, g.group_id, g.topics, version >= 10, True)}
            for g in request.groups]}
    wanted = request.topics if (version >= 2 or request.topics) else None
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "topics": _fetched_offsets(state, request.group_id, wanted, False, False)}


async def init_producer_id(broker: EmulatedBroker, version: int, header: Any,
                           request: Any) -> Body | None:
    producer_id = request.producer_id if version >= 3 else -1
    epoch = request.producer_epoch if version >= 3 else -1
    pid, new_epoch = broker.state.init_producer_id(request.transactional_id, producer_id, epoch)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": pid,
            "producer_epoch": new_epoch, "ongoing_txn_producer_id": -1,
            "ongoing_txn_producer_epoch": -1}


#: The handler of each API the emulator answers beyond the handshake and Metadata.
HANDLERS: Mapping[int, Handler] = {
    ApiKey.PRODUCE: produce,
    ApiKey.FETCH: fetch,
    ApiKey.LIST_OFFSETS: list_offsets,
    ApiKey.OFFSET_COMMIT: offset_commit,
    ApiKey.OFFSET_FETCH: offset_fetch,
    ApiKey.FIND_COORDINATOR: find_coordinator,
    ApiKey.JOIN_GROUP: join_group,
    ApiKey.HEARTBEAT: heartbeat,
    ApiKey.LEAVE_GROUP: leave_group,
    ApiKey.SYNC_GROUP: sync_group,
    ApiKey.DESCRIBE_GROUPS: describe_groups,
    ApiKey.LIST_GROUPS: list_groups,
    ApiKey.CREATE_TOPICS: create_topics,
    ApiKey.DELETE_TOPICS: delete_topics,
    ApiKey.INIT_PRODUCER_ID: init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch,
}
