"""The transaction and topic-config APIs an emulated broker answers: requests translated.

InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit go to
the cluster's transaction coordinator (:mod:`kclient.emulator.transactions`) and its
offsets (:mod:`kclient.emulator.offsets`); the markers the coordinator queues are
written by the state after each call (:meth:`~kclient.emulator.state.ClusterState.
write_markers`).  DescribeConfigs, AlterConfigs and IncrementalAlterConfigs read and
set topic configs (:mod:`kclient.emulator.configs`); the emulator models topic configs
only and answers other resources as Kafka answers a resource type it does not serve
(INVALID_REQUEST, with a message).  Like :mod:`kclient.emulator.apis`, every handler
only translates: the rules live in the coordinator and :mod:`kclient.emulator.rules`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kclient.emulator.configs import TOPIC_CONFIGS, config_problem
from kclient.emulator.log import Topic
from kclient.emulator.rules import coordinator_error, release_at_least, verification_error
from kclient.emulator.served import (
    Body,
    Handler,
    Served,
    coordinator_for,
    fences_on_timeout,
)
from kclient.protocol.constants import ApiKey, ErrorCode

__all__ = ["CONFIG_HANDLERS", "TRANSACTION_HANDLERS"]

_TOPIC_RESOURCE = 2
_SET, _DELETE, _APPEND, _SUBTRACT = 0, 1, 2, 3
#: DescribeConfigs v3+ config types (Kafka's ``ConfigType``).
_CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "long": 5, "double": 6, "list": 7}
_TOPIC_CONFIG, _DEFAULT_CONFIG = 1, 5


def _not_coordinator(broker: Served, transactional_id: str | None) -> bool:
    """True when ``transactional_id``'s coordinator is another broker (NOT_COORDINATOR)."""
    if not transactional_id:
        return False
    node = coordinator_for(broker, transactional_id)
    return node is None or node.node_id != broker.node_id


# -- InitProducerId -------------------------------------------------------------------------------
async def init_producer_id(broker: Served, version: int, header: Any,
                           request: Any) -> Body | None:
    state = broker.state
    body: Body = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": -1,
                  "producer_epoch": -1, "ongoing_txn_producer_id": -1,
                  "ongoing_txn_producer_epoch": -1}
    producer_id = request.producer_id if version >= 3 else -1
    epoch = request.producer_epoch if version >= 3 else -1
    transactional_id = request.transactional_id
    if (producer_id == -1) != (epoch == -1):
        body["error_code"] = ErrorCode.INVALID_REQUEST
    elif version >= 6 and (request.enable2_pc or request.keep_prepared_txn):
        # Two-phase commit (KIP-939) needs transaction.two.phase.commit.enable, off by default.
        body["error_code"] = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif _not_coordinator(broker, transactional_id):
        body["error_code"] = ErrorCode.NOT_COORDINATOR
    else:
        expected = (producer_id, epoch) if producer_id != -1 else None
        result = state.coordination.run(lambda now: state.transactions.init_producer_id(
            now, transactional_id, request.transaction_timeout_ms, expected))
        body.update(error_code=coordinator_error(result.error, "InitProducerId", version,
                                                 broker.release),
                    producer_id=result.producer_id, producer_epoch=result.producer_epoch)
    return body


# -- AddPartitionsToTxn ---------------------------------------------------------------------------
def _partition_errors(broker: Served, topics: Any) -> dict[tuple[str, int], int]:
    """UNKNOWN_TOPIC_OR_PARTITION for every partition the cluster does not have."""
    errors: dict[tuple[str, int], int] = {}
    for wanted in topics:
        topic = broker.state.topics.get(wanted.name)
        for index in wanted.partitions:
            if topic is None or not 0 <= index < len(topic.partitions):
                errors[(wanted.name, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return errors


def _add_one(broker: Served, version: int, transactional_id: str, producer_id: int,
             epoch: int, topics: Any, verify_only: bool) -> list[Body]:
    """One transaction of an AddPartitionsToTxn: its results by topic."""
    state = broker.state
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    errors: dict[tuple[str, int], int] = {}
    unknown = _partition_errors(broker, topics)
    if _not_coordinator(broker, transactional_id):
        errors = dict.fromkeys(wanted, ErrorCode.NOT_COORDINATOR)
    elif unknown:
        # Kafka attempts none of them when one is unknown.
        errors = {tp: unknown.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
    elif verify_only:
        for tp in wanted:
            errors[tp] = state.transactions.verify(transactional_id, producer_id, epoch, tp)
    else:
        code = state.coordination.run(lambda now: state.transactions.add_partitions(
            now, transactional_id, producer_id, epoch, wanted, 0, fences_on_timeout(broker)))
        errors = dict.fromkeys(wanted, coordinator_error(code, "AddPartitionsToTxn", version,
                                                         broker.release))
    results: dict[str, list[Body]] = {}
    for (name, index), code in errors.items():
        results.setdefault(name, []).append({"partition_index": index,
                                             "partition_error_code": code})
    return [{"name": name, "results_by_partition": parts} for name, parts in results.items()]


async def add_partitions_to_txn(broker: Served, version: int, header: Any,
                                request: Any) -> Body | None:
    if version <= 3:
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _add_one(
            broker, version, request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id, request.v3_and_below_producer_epoch,
            request.v3_and_below_topics, False)}
    # v4+ (KIP-890) is the brokers' batched form; without an authorizer Kafka serves it
    # to anyone, as here.
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results_by_transaction": [
        {"transactional_id": txn.transactional_id, "topic_results": _add_one(
            broker, version, txn.transactional_id, txn.producer_id, txn.producer_epoch,
            txn.topics, txn.verify_only)}
        for txn in request.transactions]}


# -- AddOffsetsToTxn / EndTxn ---------------------------------------------------------------------
async def add_offsets_to_txn(broker: Served, version: int, header: Any,
                             request: Any) -> Body | None:
    state = broker.state
    if _not_coordinator(broker, request.transactional_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_COORDINATOR}
    code = state.coordination.run(lambda now: state.transactions.add_partitions(
        now, request.transactional_id, request.producer_id, request.producer_epoch, (), 0,
        fences_on_timeout(broker), groups=[request.group_id]))
    return {"throttle_time_ms": 0,
            "error_code": coordinator_error(code, "AddOffsetsToTxn", version, broker.release)}


async def end_txn(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    state = broker.state
    if _not_coordinator(broker, request.transactional_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_COORDINATOR,
                "producer_id": -1, "producer_epoch": -1}
    # EndTxn v5+ is a transaction version 2 client (KafkaApis.handleEndTxnRequest, 4.0).
    code, producer_id, epoch = state.coordination.run(lambda now: state.transactions.end_txn(
        now, request.transactional_id, request.producer_id, request.producer_epoch,
        request.committed, 2 if version >= 5 else 0))
    return {"throttle_time_ms": 0,
            "error_code": coordinator_error(code, "EndTxn", version, broker.release),
            "producer_id": producer_id, "producer_epoch": epoch}


# -- TxnOffsetCommit ------------------------------------------------------------------------------
def _txn_offset_commit_error(broker: Served, version: int, request: Any) -> int:
    """The error of the whole TxnOffsetCommit before its offsets are stored (NONE: store)."""
    state = broker.state
    if version >= 5:  # transaction version 2: the group's offsets join the transaction
        code = state.coordination.run(lambda now: state.transactions.add_partitions(
            now, request.transactional_id, request.producer_id, request.producer_epoch, (), 2,
            fences_on_timeout(broker), groups=[request.group_id]))
        return verification_error(code, broker.release, True, True,
                                  "txn-offset-commit-unadded")
    if not release_at_least(broker.release, "3.6"):
        return ErrorCode.NONE  # no verification before KIP-890 part 1
    code = state.coordination.run(lambda now: state.transactions.verify(
        request.transactional_id, request.producer_id, request.producer_epoch,
        group=request.group_id))
    return verification_error(code, broker.release, version >= 4, False,
                              "txn-offset-commit-unadded")


async def txn_offset_commit(broker: Served, version: int, header: Any,
                            request: Any) -> Body | None:
    state = broker.state
    code = _txn_offset_commit_error(broker, version, request)
    if code == ErrorCode.NONE and version >= 3:
        code = state.coordination.run(lambda now: state.commit_error(
            now, request.group_id, request.member_id, request.group_instance_id,
            request.generation_id, version, transactional=True))
    topics = []
    for wanted in request.topics:
        topic = state.topics.get(wanted.name)
        partitions = []
        for part in wanted.partitions:
            part_code: int = code
            if part_code == ErrorCode.NONE:
                if topic is None or not 0 <= part.partition_index < len(topic.partitions):
                    part_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    part_code = state.offsets.commit_pending(
                        request.group_id, request.producer_id, wanted.name,
                        part.partition_index, part.committed_offset,
                        part.committed_leader_epoch if version >= 2 else -1,
                        part.committed_metadata)
            partitions.append({"partition_index": part.partition_index,
                               "error_code": part_code})
        topics.append({"name": wanted.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


#: The transaction coordinator's APIs.
TRANSACTION_HANDLERS: Mapping[int, Handler] = {
    ApiKey.INIT_PRODUCER_ID: init_producer_id,
    ApiKey.ADD_PARTITIONS_TO_TXN: add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: add_offsets_to_txn,
    ApiKey.END_TXN: end_txn,
    ApiKey.TXN_OFFSET_COMMIT: txn_offset_commit,
}


# -- topic configs --------------------------------------------------------------------------------
def _resource_error(broker: Served, resource: Any) -> tuple[int, str | None, Topic | None]:
    if resource.resource_type != _TOPIC_RESOURCE:
        return (ErrorCode.INVALID_REQUEST, f"Unsupported resource type "
                f"{resource.resource_type}: the emulator models topic configs only", None)
    topic = broker.state.topics.get(resource.resource_name)
    if topic is None:
        return (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"Topic {resource.resource_name} does not exist", None)
    return ErrorCode.NONE, None, topic


async def describe_configs(broker: Served, version: int, header: Any,
                           request: Any) -> Body | None:
    synonyms = version >= 1 and request.include_synonyms
    results = []
    for resource in request.resources:
        code, message, topic = _resource_error(broker, resource)
        configs = []
        if topic is not None:
            names = (sorted(TOPIC_CONFIGS) if resource.configuration_keys is None
                     else [n for n in resource.configuration_keys if n in TOPIC_CONFIGS])
            for name in names:
                set_here = name in topic.configs
                value = topic.configs[name] if set_here else TOPIC_CONFIGS[name].default
                source = _TOPIC_CONFIG if set_here else _DEFAULT_CONFIG
                configs.append({
                    "name": name, "value": value, "read_only": False,
                    "config_source": source, "is_default": not set_here,
                    "is_sensitive": False,
                    "synonyms": [{"name": name, "value": value, "source": source}]
                    if synonyms else [],
                    "config_type": _CONFIG_TYPES[TOPIC_CONFIGS[name].type],
                    "documentation": None})
        results.append({"error_code": code, "error_message": message,
                        "resource_type": resource.resource_type,
                        "resource_name": resource.resource_name, "configs": configs})
    return {"throttle_time_ms": 0, "results": results}


def _alter(broker: Served, request: Any, incremental: bool) -> Body:
    responses = []
    for resource in request.resources:
        code, message, topic = _resource_error(broker, resource)
        if topic is not None:
            configs = dict(topic.configs) if incremental else {}
            for item in resource.configs:
                operation = item.config_operation if incremental else _SET
                definition = TOPIC_CONFIGS.get(item.name)
                if operation in (_APPEND, _SUBTRACT) and (
                        definition is not None and definition.type != "list"):
                    code, message = (ErrorCode.INVALID_CONFIG, f"Config value append is not "
                                     f"allowed for config key: {item.name}")
                    break
                current = [v for v in (configs.get(item.name) or "").split(",") if v]
                values = [v for v in (item.value or "").split(",") if v]
                if operation == _DELETE:
                    configs.pop(item.name, None)
                    continue
                if operation == _APPEND:
                    value: str | None = ",".join(current + [v for v in values
                                                            if v not in current])
                elif operation == _SUBTRACT:
                    value = ",".join(v for v in current if v not in values)
                elif operation == _SET:
                    value = item.value
                else:
                    code, message = ErrorCode.INVALID_REQUEST, f"Unknown operation {operation}"
                    break
                problem = config_problem(item.name, value, broker.release)
                if problem is not None:
                    code, message = ErrorCode.INVALID_CONFIG, problem
                    break
                configs[item.name] = value
            if code == ErrorCode.NONE and not request.validate_only:
                topic.configs = configs
        responses.append({"error_code": code, "error_message": message,
                          "resource_type": resource.resource_type,
                          "resource_name": resource.resource_name})
    return {"throttle_time_ms": 0, "responses": responses}


async def alter_configs(broker: Served, version: int, header: Any, request: Any) -> Body | None:
    return _alter(broker, request, incremental=False)


async def incremental_alter_configs(broker: Served, version: int, header: Any,
                                    request: Any) -> Body | None:
    return _alter(broker, request, incremental=True)


#: The topic config APIs.
CONFIG_HANDLERS: Mapping[int, Handler] = {
    ApiKey.DESCRIBE_CONFIGS: describe_configs,
    ApiKey.ALTER_CONFIGS: alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs,
}
