"""The everyday APIs an emulated broker answers: requests translated to the cluster's parts.

Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, FindCoordinator, the classic
group APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups,
ListGroups), OffsetCommit, OffsetFetch, CreateTopics and DeleteTopics, each at
every version kclient's specs describe (the broker only lets through the versions
its release advertises); the transaction and topic-config APIs are in
:mod:`kclient.emulator.txn_apis`.  What a broker of the release refuses, the handlers
refuse through :mod:`kclient.emulator.rules`.  Every handler takes what it
sees of the broker (:class:`Served`), the request version and the decoded header
and body, turns them into calls on the cluster's pure parts
(:class:`~kclient.emulator.state.ClusterState`: partition logs, offsets, group
coordinators), and returns the response body as a dict of snake_case field names,
or None for a request Kafka does not answer (Produce with acks=0).  What a client
controls is bounded the way Kafka bounds it: a Fetch's answer by ``fetch.max.bytes``
(55 MiB, Kafka's default, for every version) with duplicate partitions merged as
Kafka merges them; a ListOffsets naming a partition twice gets INVALID_REQUEST for
it (Kafka's ``ReplicaManager.fetchOffset``); the rest in the modules of each part.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kclient.emulator.configs import config_problem
from kclient.emulator.log import (
    LEADER_EPOCH,
    MAX_RECORDS_PER_OPERATION,
    Topic,
    TopicError,
    creation_records,
)
from kclient.emulator.producers import SequenceError
from kclient.emulator.records import (
    Batch,
    RecordsError,
    has_compressed_legacy,
    read_record_set,
)
from kclient.emulator.rules import (
    Refusal,
    check_fetch,
    check_produce_records,
    check_transactional_id,
    producer_policy,
    release_at_least,
    verification_error,
)
from kclient.emulator.served import (
    Body,
    Handler,
    Served,
    coordinator_for,
    fences_on_timeout,
    node_ids,
)
from kclient.emulator.state import ClusterState
from kclient.protocol.constants import ApiKey, ErrorCode

__all__ = ["FETCH_MAX_BYTES", "HANDLERS", "NO_OPERATIONS", "UNSUPPORTED_VERSION_ANSWERS",
           "WAITING_APIS", "Served", "metadata_topics", "produce_error_body"]

_ZERO_UUID = uuid.UUID(int=0)
#: "Authorized operations" not asked for (Kafka's Integer.MIN_VALUE).
NO_OPERATIONS = -2147483648
#: The longest a Fetch waits for data, whatever max_wait_ms asks (bounded serving).
MAX_FETCH_WAIT = 5.0
#: Kafka's ``fetch.max.bytes`` default: the most one Fetch answer carries.
FETCH_MAX_BYTES = 55 * 1024 * 1024
#: Produced record sets larger than this, or holding a compressed magic 0/1 message
#: (which the emulator inflates), are read in a worker thread, so that one
#: connection's large (or hostile) Produce does not stall the other connections.
_READ_IN_THREAD = 64 * 1024
_LATEST, _EARLIEST, _MAX_TIMESTAMP = -1, -2, -3


def _topic(state: ClusterState, name: str | None, topic_id: uuid.UUID | None,
           version_uses_id: bool) -> Topic | None:
    if version_uses_id:
        return state.topics_by_id.get(topic_id or _ZERO_UUID)
    return state.topics.get(name or "")


def _unknown_topic(version_uses_id: bool) -> int:
    return ErrorCode.UNKNOWN_TOPIC_ID if version_uses_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class _Leading:
    """Which partitions the broker leads, with the cluster's node ids read once per request."""

    def __init__(self, broker: Served) -> None:
        self.node_id = broker.node_id
        self.nodes = node_ids(broker)

    def error(self, topic: Topic | None, index: int, uses_id: bool) -> int:
        """NONE when this broker leads ``index`` of ``topic``, else the error Kafka gives."""
        if topic is None:
            return _unknown_topic(uses_id)
        if not 0 <= index < len(topic.partitions):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if ClusterState.leader(topic, index, self.nodes) != self.node_id:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.NONE


# -- Produce -------------------------------------------------------------------------------
async def _read_records(data: bytes, max_message_bytes: int) -> list[Any]:
    if len(data) > _READ_IN_THREAD or has_compressed_legacy(data):
        return await asyncio.to_thread(read_record_set, data, max_message_bytes)
    return read_record_set(data, max_message_bytes)


async def produce(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    state, uses_id, leading = broker.state, version >= 13, _Leading(broker)
    transactional_id = request.transactional_id if version >= 3 else None
    # Read every partition's records first (large ones in a worker thread), then check and
    # append them without awaiting, so that no other request runs between the two.
    read: list[tuple[Any, Topic | None, list[tuple[Any, int, list[Batch], str | None]]]] = []
    for data in request.topic_data:
        topic = _topic(state, data.name, data.topic_id, uses_id)
        partitions = []
        for part in data.partition_data:
            code = leading.error(topic, part.index, uses_id)
            batches: list[Batch] = []
            message = None
            if code == ErrorCode.NONE and topic is not None:
                try:
                    batches = await _read_records(bytes(part.records or b""),
                                                  topic.max_message_bytes)
                    check_produce_records(version, batches, broker.release)
                except RecordsError as exc:
                    code, message = exc.code, str(exc)
                except Refusal as exc:
                    if exc.code is None:
                        raise  # this release closes the connection
                    code, message = exc.code, exc.detail
            partitions.append((part, code, batches, message))
        read.append((data, topic, partitions))
    try:
        check_transactional_id([b for _, _, parts in read for _, _, bs, _ in parts for b in bs],
                               transactional_id, broker.release)
    except Refusal as exc:
        return None if request.acks == 0 else produce_error_body(request, int(exc.code or 0))
    responses = []
    appended = False
    for data, topic, parts in read:
        answers: list[Body] = []
        for part, code, batches, message in parts:
            base = -1
            if code == ErrorCode.NONE and topic is not None:
                if topic.name in state.topics and part.index < len(topic.partitions):
                    code, message, base = _append(broker, version, transactional_id, topic,
                                                  part.index, batches)
                    appended = appended or (code == ErrorCode.NONE)
                else:  # deleted while the records were read
                    code = _unknown_topic(uses_id)
            log_start = topic.partitions[part.index].log_start_offset if (
                topic is not None and code == ErrorCode.NONE) else -1
            answers.append({"index": part.index, "error_code": code, "base_offset": base,
                            "log_append_time_ms": -1, "log_start_offset": log_start,
                            "record_errors": [], "error_message": message})
        responses.append({"name": data.name, "topic_id": data.topic_id,
                          "partition_responses": answers})
    if appended:
        state.notify_appended()
    if request.acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}


def _append(broker: Served, version: int, transactional_id: str | None, topic: Topic,
            index: int, batches: list[Batch]) -> tuple[int, str | None, int]:
    """Check ``batches`` against the partition's producer state and the transaction
    coordinator, then append them: ``(error, message, base offset)``."""
    log = topic.partitions[index]
    policy = producer_policy(broker.release)
    for batch in batches:
        if batch.transactional and transactional_id is not None and (
                not log.producers.has_open_transaction(batch.producer_id)):
            code = _verify(broker, version, transactional_id, batch, (topic.name, index))
            if code != ErrorCode.NONE:
                return code, "Partition was not added to the transaction", -1
        try:
            duplicate = log.producers.check(batch, policy)
        except SequenceError as exc:
            return exc.code, str(exc), -1
        if duplicate is not None and len(batches) == 1:
            return ErrorCode.NONE, None, duplicate
    return ErrorCode.NONE, None, log.append(batches)


def _verify(broker: Served, version: int, transactional_id: str, batch: Batch,
            partition: tuple[str, int]) -> int:
    """KIP-890: a leader checks with the coordinator that a transactional batch's partition
    is in the producer's transaction (3.6+); Produce v12+ adds it instead (4.0+)."""
    if not release_at_least(broker.release, "3.6"):
        return ErrorCode.NONE
    state = broker.state
    if version >= 12:
        code = state.coordination.run(lambda now: state.transactions.add_partitions(
            now, transactional_id, batch.producer_id, batch.producer_epoch, [partition], 2,
            fences_on_timeout(broker)))
        return verification_error(code, broker.release, True, True)
    code = state.coordination.run(lambda now: state.transactions.verify(
        transactional_id, batch.producer_id, batch.producer_epoch, partition))
    return verification_error(code, broker.release, version >= 11, False)


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
def _fetch_wanted(request: Any, uses_id: bool) -> list[tuple[Any, list[Any]]]:
    """The request's topics and partitions with duplicates merged (the last one wins, in
    the place of the first, as Kafka's map of fetch partitions keeps them)."""
    topics: dict[object, tuple[Any, dict[int, Any]]] = {}
    for wanted in request.topics:
        key = wanted.topic_id if uses_id else wanted.topic
        entry = topics.setdefault(key, (wanted, {}))
        for part in wanted.partitions:
            entry[1][part.partition] = part
    return [(wanted, list(parts.values())) for wanted, parts in topics.values()]


def _fetch_once(broker: Served, version: int, request: Any) -> tuple[Body, int]:
    state, uses_id, leading = broker.state, version >= 13, _Leading(broker)
    asked = request.max_bytes if version >= 3 and request.max_bytes > 0 else FETCH_MAX_BYTES
    budget = min(asked, FETCH_MAX_BYTES)
    # A Fetch < v4 carries no isolation level: it reads uncommitted (rule fetch-isolation).
    committed = version >= 4 and request.isolation_level == 1
    total = 0
    responses = []
    for wanted, parts in _fetch_wanted(request, uses_id):
        topic = _topic(state, wanted.topic, wanted.topic_id, uses_id)
        partitions = []
        for part in parts:
            code = leading.error(topic, part.partition, uses_id)
            records, hwm, start, stable = b"", -1, -1, -1
            aborted: list[Body] | None = None
            if code == ErrorCode.NONE and topic is not None:
                log = topic.partitions[part.partition]
                hwm, start, stable = (log.high_watermark, log.log_start_offset,
                                      log.last_stable_offset)
                if not start <= part.fetch_offset <= hwm:
                    code = ErrorCode.OFFSET_OUT_OF_RANGE
                elif budget - total > 0 or total == 0:
                    limit = min(part.partition_max_bytes, budget - total)
                    records, end, read = log.read_batches(part.fetch_offset, max(limit, 1),
                                                          stable if committed else None)
                    code = check_fetch(version, topic.compression_type,
                                       [b.batch.magic for b in read],
                                       [b.batch.codec for b in read], broker.release)
                    if code != ErrorCode.NONE:
                        records = b""
                    elif committed:
                        aborted = [{"producer_id": t.producer_id, "first_offset": t.first_offset}
                                   for t in log.producers.aborted_between(part.fetch_offset, end)]
                    total += len(records)
            partitions.append({
                "partition_index": part.partition, "error_code": code, "high_watermark": hwm,
                "last_stable_offset": stable, "log_start_offset": start,
                "aborted_transactions": aborted, "preferred_read_replica": -1,
                "records": records})
        responses.append({"topic": wanted.topic, "topic_id": wanted.topic_id,
                          "partitions": partitions})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0,
            "responses": responses}, total


async def fetch(broker: Served, version: int, header: Any, request: Any) -> Body | None:
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
async def list_offsets(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    leading = _Leading(broker)
    seen: dict[tuple[str, int], int] = {}
    for wanted in request.topics:
        for part in wanted.partitions:
            key = (wanted.name, part.partition_index)
            seen[key] = seen.get(key, 0) + 1
    topics = []
    for wanted in request.topics:
        topic = broker.state.topics.get(wanted.name)
        partitions = []
        for part in wanted.partitions:
            code = leading.error(topic, part.partition_index, False)
            if seen[(wanted.name, part.partition_index)] > 1:
                code = ErrorCode.INVALID_REQUEST
            offset, timestamp = -1, -1
            if code == ErrorCode.NONE and topic is not None:
                log = topic.partitions[part.partition_index]
                if part.timestamp == _LATEST:
                    # ListOffsets < v2 carries no isolation level: uncommitted.
                    offset = (log.last_stable_offset if version >= 2
                              and request.isolation_level == 1 else log.high_watermark)
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


async def offset_for_leader_epoch(broker: Served, version: int, header: Any,
                                  request: Any) -> Body | None:
    leading = _Leading(broker)
    topics = []
    for wanted in request.topics:
        topic = broker.state.topics.get(wanted.topic)
        partitions = []
        for part in wanted.partitions:
            code = leading.error(topic, part.partition, False)
            end = -1
            if code == ErrorCode.NONE and topic is not None:
                end = topic.partitions[part.partition].high_watermark
            partitions.append({"error_code": code, "partition": part.partition,
                               "leader_epoch": LEADER_EPOCH if end >= 0 else -1,
                               "end_offset": end})
        topics.append({"topic": wanted.topic, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


# -- Metadata / topics ---------------------------------------------------------------------
def metadata_topics(broker: Served, version: int, request: Any) -> list[Body]:
    """The topics part of a Metadata answer (auto-creating topics the client asks for)."""
    state = broker.state
    wanted = getattr(request, "topics", None)
    errors: dict[int, int] = {}
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
                    try:
                        topic = state.create_topic(name)
                    except TopicError as exc:
                        errors[len(chosen)] = exc.code
            chosen.append((name, topic_id, topic))
    nodes = node_ids(broker)
    out: list[Body] = []
    for index, (name, topic_id, topic) in enumerate(chosen):
        if topic is None:
            code = errors.get(index, ErrorCode.UNKNOWN_TOPIC_ID if name is None
                              else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            out.append({"error_code": code, "name": name, "topic_id": topic_id or _ZERO_UUID,
                        "is_internal": False, "partitions": [],
                        "topic_authorized_operations": NO_OPERATIONS})
            continue
        partitions = []
        for partition in range(len(topic.partitions)):
            leader = ClusterState.leader(topic, partition, nodes)
            partitions.append({
                "error_code": ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                "partition_index": partition, "leader_id": leader, "leader_epoch": LEADER_EPOCH,
                "replica_nodes": [leader], "isr_nodes": [leader], "offline_replicas": []})
        out.append({"error_code": ErrorCode.NONE, "name": topic.name, "topic_id": topic.topic_id,
                    "is_internal": False, "partitions": partitions,
                    "topic_authorized_operations": NO_OPERATIONS})
    return out


_TOO_LARGE = "Unable to perform excessively large batch operation."


async def create_topics(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    state = broker.state
    nodes = len(node_ids(broker))
    plans = []
    for wanted in request.topics:
        count, replicas = wanted.num_partitions, wanted.replication_factor
        if wanted.assignments:
            count, replicas = len(wanted.assignments), len(wanted.assignments[0].broker_ids)
        plans.append((wanted, state.default_partitions if count == -1 else count,
                      1 if replicas == -1 else replicas))
    too_large = creation_records([(count, len(wanted.configs)) for wanted, count, _ in plans]
                                 ) > MAX_RECORDS_PER_OPERATION
    results = []
    for wanted, count, replicas in plans:
        code: int = ErrorCode.NONE
        message, topic_id = None, _ZERO_UUID
        try:
            if too_large:
                raise TopicError(_TOO_LARGE, ErrorCode.POLICY_VIOLATION)
            state.logs.check_new(wanted.name, count)
            for config in wanted.configs:
                problem = config_problem(config.name, config.value, broker.release)
                if problem is not None:
                    raise TopicError(problem, ErrorCode.INVALID_CONFIG)
            if replicas < 1 or replicas > nodes:
                raise TopicError(
                    f"Replication factor: {replicas} larger than available brokers: {nodes}."
                    if replicas > nodes else "Replication factor must be larger than 0.",
                    ErrorCode.INVALID_REPLICATION_FACTOR)
            if not request.validate_only:
                topic_id = state.create_topic(wanted.name, count, replicas,
                                              {c.name: c.value for c in wanted.configs}).topic_id
        except TopicError as exc:
            code, message = exc.code, str(exc)
        ok = code == ErrorCode.NONE
        results.append({
            "name": wanted.name, "topic_id": topic_id, "error_code": code, "error_message": message,
            "num_partitions": count if ok else -1, "replication_factor": replicas if ok else -1,
            "configs": [] if ok else None})
    return {"throttle_time_ms": 0, "topics": results}


async def delete_topics(broker: Served, version: int, header: Any, request: Any) -> Body | None:
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
async def find_coordinator(broker: Served, version: int, header: Any,
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


def _instance_id(request: Any, version: int, since: int) -> str | None:
    return request.group_instance_id if version >= since else None


async def join_group(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    state = broker.state
    session = request.session_timeout_ms
    rebalance = request.rebalance_timeout_ms if version >= 1 else session
    answer = await state.coordination.park(lambda now, ref: state.classic.join(
        now, ref, group_id=request.group_id, member_id=request.member_id,
        instance_id=_instance_id(request, version, 5), client_id=header.client_id or "",
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        session_timeout_ms=session, rebalance_timeout_ms=rebalance,
        require_known_member=version >= 4))
    body: Body = {"throttle_time_ms": 0, "generation_id": -1, "protocol_type": None,
                  "protocol_name": None, "leader": "", "skip_assignment": False,
                  "member_id": request.member_id, "members": []}
    body.update(answer)
    if version < 7 and body["protocol_name"] is None:
        body["protocol_name"] = ""
    return body


async def sync_group(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    state = broker.state
    answer = await state.coordination.park(lambda now, ref: state.classic.sync(
        now, ref, group_id=request.group_id, member_id=request.member_id,
        instance_id=_instance_id(request, version, 3), generation=request.generation_id,
        protocol_type=request.protocol_type if version >= 5 else None,
        protocol_name=request.protocol_name if version >= 5 else None,
        assignments={a.member_id: bytes(a.assignment) for a in request.assignments}))
    body: Body = {"throttle_time_ms": 0, "protocol_type": None, "protocol_name": None,
                  "assignment": b""}
    body.update(answer)
    return body


async def heartbeat(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    state = broker.state
    code = state.coordination.run(lambda now: state.classic.heartbeat(
        now, group_id=request.group_id, member_id=request.member_id,
        instance_id=_instance_id(request, version, 3), generation=request.generation_id))
    return {"throttle_time_ms": 0, "error_code": code}


async def leave_group(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    state = broker.state
    members = ([(request.member_id, None)] if version < 3
               else [(m.member_id, m.group_instance_id) for m in request.members])
    top, codes = state.coordination.run(
        lambda now: state.classic.leave(now, request.group_id, members))
    if version < 3:
        return {"throttle_time_ms": 0, "error_code": codes[0], "members": []}
    return {"throttle_time_ms": 0, "error_code": top, "members": [
        {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "error_code": c}
        for m, c in zip(request.members, codes, strict=True)]}


async def describe_groups(broker: Served, version: int, header: Any,
                          request: Any) -> Body | None:
    out = []
    for group_id in request.groups:
        group = broker.state.groups.get(group_id)
        if group is None:
            # A group of another type, or none: Kafka describes it as Dead, and from v6
            # (KIP-1043) answers GROUP_ID_NOT_FOUND with a message.
            held = broker.state.holder(group_id)
            empty = held is None and broker.state.offsets.has_offsets(group_id)
            code, message = ErrorCode.NONE, None
            if version >= 6 and not empty:
                code = ErrorCode.GROUP_ID_NOT_FOUND
                message = (f"Group {group_id} is not a classic group." if held
                           else f"Group {group_id} not found.")
            out.append({"error_code": code, "error_message": message, "group_id": group_id,
                        "group_state": "Empty" if empty else "Dead", "protocol_type": "",
                        "protocol_data": "", "members": [],
                        "authorized_operations": NO_OPERATIONS})
            continue
        out.append({"error_code": ErrorCode.NONE, "group_id": group_id,
                    "group_state": group.state, "protocol_type": group.protocol_type or "",
                    "protocol_data": group.protocol or "", "members": [
                        {"member_id": m.member_id, "group_instance_id": m.instance_id,
                         "client_id": m.client_id, "client_host": "/127.0.0.1",
                         "member_metadata": m.metadata(group.protocol),
                         "member_assignment": m.assignment} for m in group.members.values()],
                    "authorized_operations": NO_OPERATIONS})
    return {"throttle_time_ms": 0, "groups": out}


async def list_groups(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    states = set(request.states_filter) if version >= 4 else set()
    types = {t.lower() for t in request.types_filter} if version >= 5 else set()
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": [
        {"group_id": group_id, "protocol_type": protocol_type, "group_state": group_state,
         "group_type": group_type}
        for group_id, protocol_type, group_state, group_type in broker.state.listed_groups()
        if (not states or group_state in states) and (not types or group_type in types)]}


async def offset_commit(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    state, uses_id = broker.state, version >= 10
    generation = request.generation_id_or_member_epoch if version >= 1 else -1
    member_id = request.member_id if version >= 1 else ""
    code: int
    if not request.group_id:
        code = ErrorCode.INVALID_GROUP_ID
    else:
        code = state.coordination.run(lambda now: state.commit_error(
            now, request.group_id, member_id, _instance_id(request, version, 7), generation,
            version))
    topics = []
    for wanted in request.topics:
        topic = _topic(state, wanted.name, wanted.topic_id, uses_id)
        partitions = []
        for part in wanted.partitions:
            part_code: int = code
            if part_code == ErrorCode.NONE:
                if topic is None:
                    part_code = _unknown_topic(uses_id)
                elif not 0 <= part.partition_index < len(topic.partitions):
                    part_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if part_code == ErrorCode.NONE and topic is not None:
                part_code = state.offsets.commit(
                    request.group_id, topic.name, part.partition_index, part.committed_offset,
                    part.committed_leader_epoch if version >= 6 else -1,
                    part.committed_metadata)
            partitions.append({"partition_index": part.partition_index, "error_code": part_code})
        topics.append({"name": wanted.name, "topic_id": wanted.topic_id, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _fetched_offsets(state: ClusterState, group_id: str, wanted: Any, uses_id: bool,
                     grouped: bool, require_stable: bool = False) -> list[Body]:
    offsets = state.offsets.committed(group_id)
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
            found = offsets.get((real, index))
            code: int = ErrorCode.NONE
            if require_stable and state.offsets.unstable(group_id, real, index):
                code, found = ErrorCode.UNSTABLE_OFFSET_COMMIT, None  # KIP-447
            partitions.append({
                "partition_index": index,
                "committed_offset": found.offset if found else -1,
                "committed_leader_epoch": found.leader_epoch if found else -1,
                "metadata": found.metadata if found else "", "error_code": code})
        item: Body = {"name": name, "partitions": partitions}
        if grouped:  # only the v8+ (groups) layout has topic ids
            item["topic_id"] = topic_id or _ZERO_UUID
        out.append(item)
    return out


async def offset_fetch(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    state = broker.state
    stable = version >= 7 and request.require_stable
    if version >= 8:
        groups = []
        for g in request.groups:
            # v9+ names the member: a consumer group checks its epoch (validateOffsetFetch).
            code = (state.fetch_error(g.group_id, g.member_id, g.member_epoch) if version >= 9
                    else ErrorCode.NONE)
            groups.append({"group_id": g.group_id, "error_code": code, "topics": [] if code else
                           _fetched_offsets(state, g.group_id, g.topics, version >= 10, True,
                                            stable)})
        return {"throttle_time_ms": 0, "groups": groups}
    wanted = request.topics if (version >= 2 or request.topics) else None
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "topics": _fetched_offsets(state, request.group_id, wanted, False, False, stable)}


# The transaction coordinator's APIs and the topic config APIs have their own module; it
# reads the helpers above, so it is imported here, after them.
from kclient.emulator.txn_apis import CONFIG_HANDLERS, TRANSACTION_HANDLERS  # noqa: E402

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
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch,
    **TRANSACTION_HANDLERS,
    **CONFIG_HANDLERS,
}

#: The APIs whose answer may wait (a parked JoinGroup/SyncGroup, a Fetch or ShareFetch
#: waiting for data): when the client goes away meanwhile, the answer is abandoned.  The others do
#: their (bounded) work to the end, as Kafka's handlers finish requests already read.
WAITING_APIS = frozenset({ApiKey.FETCH, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP,
                          ApiKey.SHARE_FETCH})
