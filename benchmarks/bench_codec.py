"""Codec speed: kclient vs kafka-python on the same bytes, in the same run.

Messages: an ApiVersionsResponse v3 (every API key, tagged feature fields)
and a MetadataResponse v12 with 100 brokers and 1,000 topics x 10 partitions.
For each, decode and encode are timed (best of several repeats) for both
libraries, and kclient's encode once more from plain dicts; the printed ratio
is kafka-python time / kclient time (higher is better for kclient).
Goals: decode >= 3x, encode >= 2x.

A second table gives the decode ceiling of every case: kafka-python's decode
time over the time to build kclient's decoded objects from values already
decoded (generated code that allocates each object and fills its slots, parsing
nothing), timed in the same interleaved runs.  No decoder that returns these
objects can beat that ratio; the "building" column is the share of kclient's
decode spent on that irreducible object creation.

A third table gives the decode memory amplification of every case: the
tracemalloc peak of one decode divided by the message's size in bytes, for
kclient and for kafka-python on the same bytes (what a hostile or merely large
answer costs in memory per byte received).
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
import uuid
from collections.abc import Callable
from typing import Any

from kclient.protocol import Message, decode, encode
from kclient.protocol.catalog import default_catalog
from kclient.protocol.compiled import _PAUSE_GC_ABOVE


def api_versions_v3() -> dict[str, Any]:
    return {
        "error_code": 0,
        "api_keys": [
            {"api_key": info.key, "min_version": info.min_version,
             "max_version": info.max_version}
            for info in default_catalog()
        ],
        "throttle_time_ms": 0,
        "supported_features": [
            {"name": name, "min_version": 0, "max_version": hi}
            for name, hi in (("metadata.version", 27), ("group.version", 1),
                             ("kraft.version", 1), ("transaction.version", 2))
        ],
        "finalized_features_epoch": 1234,
        "finalized_features": [
            {"name": name, "max_version_level": hi, "min_version_level": hi}
            for name, hi in (("metadata.version", 21), ("group.version", 1),
                             ("transaction.version", 2))
        ],
        "zk_migration_ready": False,
    }


def metadata_v12(brokers: int = 100, topics: int = 1000, partitions: int = 10) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "brokers": [
            {"node_id": i, "host": f"broker-{i}.kafka.internal.example", "port": 9092,
             "rack": f"rack-{i % 3}"}
            for i in range(brokers)
        ],
        "cluster_id": "kclient-bench-cluster",
        "controller_id": 1,
        "topics": [
            {
                "error_code": 0,
                "name": f"topic-{t:05d}",
                "topic_id": uuid.UUID(int=t + 1),
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": p,
                        "leader_id": (t + p) % brokers,
                        "leader_epoch": 7,
                        "replica_nodes": [(t + p + r) % brokers for r in range(3)],
                        "isr_nodes": [(t + p + r) % brokers for r in range(3)],
                        "offline_replicas": [],
                    }
                    for p in range(partitions)
                ],
                "topic_authorized_operations": -2147483648,
            }
            for t in range(topics)
        ],
    }


def kafka_python_class(name: str) -> Any:
    """kafka-python 3's class for message ``name`` (its protocol modules hold ~100)."""
    import importlib

    for module in ("metadata", "admin", "consumer", "producer", "sasl"):
        found = getattr(importlib.import_module(f"kafka.protocol.{module}"), name, None)
        if found is not None:
            return found
    raise SystemExit(f"kafka-python has no class for {name}")


def family_cases() -> list[tuple[str, str, int, dict[str, Any], int]]:
    """One representative request per API family: (label, message, version, value, loops).

    Sizes are those of a busy application: 50 topics x 20 partitions for the
    per-partition requests, 100 topics or resources for the admin ones.
    """
    partitions = range(20)
    topics = [f"orders.events.{t:03d}" for t in range(50)]
    return [
        ("Fetch v12 (consume)", "FetchRequest", 12, {
            "ReplicaId": -1, "MaxWaitMs": 500, "MinBytes": 1, "MaxBytes": 52428800,
            "IsolationLevel": 1, "SessionId": 0, "SessionEpoch": -1,
            "Topics": [{"Topic": t, "Partitions": [
                {"Partition": p, "CurrentLeaderEpoch": 7, "FetchOffset": 123456789 + p,
                 "LastFetchedEpoch": 6, "LogStartOffset": -1, "PartitionMaxBytes": 1048576}
                for p in partitions]} for t in topics],
            "ForgottenTopicsData": [], "RackId": "eu-west-1a"}, 200),
        ("ListOffsets v8 (consume)", "ListOffsetsRequest", 8, {
            "ReplicaId": -1, "IsolationLevel": 1, "Topics": [{"Name": t, "Partitions": [
                {"PartitionIndex": p, "CurrentLeaderEpoch": 7, "Timestamp": -1}
                for p in partitions]} for t in topics]}, 200),
        ("OffsetCommit v8 (groups)", "OffsetCommitRequest", 8, {
            "GroupId": "orders-service", "GenerationIdOrMemberEpoch": 42,
            "MemberId": "consumer-1-5f0c", "GroupInstanceId": None,
            "Topics": [{"Name": t, "Partitions": [
                {"PartitionIndex": p, "CommittedOffset": 123456789 + p,
                 "CommittedLeaderEpoch": 7, "CommittedMetadata": ""}
                for p in partitions]} for t in topics]}, 200),
        ("JoinGroup v9 (groups)", "JoinGroupRequest", 9, {
            "GroupId": "orders-service", "SessionTimeoutMs": 45000,
            "RebalanceTimeoutMs": 300000, "MemberId": "", "GroupInstanceId": None,
            "ProtocolType": "consumer", "Protocols": [
                {"Name": name, "Metadata": bytes(range(256)) * 4}
                for name in ("range", "cooperative-sticky")], "Reason": None}, 5000),
        ("CreateTopics v7 (admin)", "CreateTopicsRequest", 7, {
            "Topics": [{"Name": f"new.topic.{t:03d}", "NumPartitions": 12,
                        "ReplicationFactor": 3, "Assignments": [],
                        "Configs": [{"Name": "retention.ms", "Value": "604800000"},
                                    {"Name": "cleanup.policy", "Value": "delete"}]}
                       for t in range(100)],
            "timeoutMs": 30000, "validateOnly": False}, 500),
        ("DescribeConfigs v4 (admin)", "DescribeConfigsRequest", 4, {
            "Resources": [{"ResourceType": 2, "ResourceName": f"topic.{t:03d}",
                           "ConfigurationKeys": None} for t in range(100)],
            "IncludeSynonyms": False, "IncludeDocumentation": False}, 1000),
        ("InitProducerId v4 (transactions)", "InitProducerIdRequest", 4, {
            "TransactionalId": "orders-tx-7", "TransactionTimeoutMs": 60000,
            "ProducerId": -1, "ProducerEpoch": -1}, 20000),
    ]


def best_of_pair(ours: Callable[[], object], theirs: Callable[[], object], repeat: int,
                 number: int) -> tuple[float, float]:
    """Best time per call of each function; repeats alternate between the two so
    that a change of machine load during the run hits both sides alike."""
    best = best_of((ours, theirs), repeat, number)
    return best[0], best[1]


def best_of(functions: tuple[Callable[[], object], ...], repeat: int,
            number: int) -> list[float]:
    """Best time per call of each function, the repeats alternating between them."""
    best = [float("inf")] * len(functions)
    for _ in range(repeat):
        for side, fn in enumerate(functions):
            started = time.perf_counter()
            for _ in range(number):
                fn()
            best[side] = min(best[side], (time.perf_counter() - started) / number)
    return best


def object_builder(message: Message, size: int) -> Callable[[], Message]:
    """A function building an object tree equal to ``message`` from its values.

    Generated code in the decoders' style (each object allocated without
    ``__init__``, its slots filled, lists of structs filled in inlined loops)
    with every scalar, string and bytes value given: what a decoder that parsed
    nothing would still have to do.  Like kclient's decode, it pauses the
    cyclic collector for messages of ``_PAUSE_GC_ABOVE`` bytes or more.
    """
    # The slots the decoder set, per class (all instances of a class set the same).
    slots: dict[type[Message], tuple[str, ...]] = {}

    def values(obj: Message) -> tuple[Any, ...]:
        cls = type(obj)
        declared: tuple[str, ...] = cls.__slots__
        names = slots.setdefault(cls, tuple(n for n in declared if hasattr(obj, n)))
        out = []
        for name in names:
            value = getattr(obj, name)
            if isinstance(value, Message):
                value = values(value)
            elif isinstance(value, list) and name in cls._children:
                value = [values(item) for item in value]
            out.append(value)
        return tuple(out)

    flat = values(message)
    env: dict[str, Any] = {"_value": flat}
    lines = ["def _build(_value=_value):"]
    counter = iter(range(1_000_000))

    def emit(cls: type[Message], source: str, target: str, pad: str) -> None:
        k = next(counter)
        env[f"_new{k}"] = type.__dict__["__call__"].__get__(cls)
        declared: tuple[str, ...] = cls.__slots__
        names = slots.get(cls) or tuple(n for n in declared if n != "_dropped")
        local = [f"v{k}_{i}" for i in range(len(names))]
        lines.append(f"{pad}{', '.join(local)}, = {source}")
        for name, var in zip(names, local, strict=True):
            child = cls._children.get(name)
            if child is None:
                continue
            inner = f"e{k}_{name}"
            lines.append(f"{pad}if type({var}) is list:")
            lines.append(f"{pad}    l{k}_{name} = []")
            lines.append(f"{pad}    for i{k}_{name} in {var}:")
            emit(child, f"i{k}_{name}", inner, pad + "        ")
            lines.append(f"{pad}        l{k}_{name}.append({inner})")
            lines.append(f"{pad}    {var} = l{k}_{name}")
            lines.append(f"{pad}elif type({var}) is tuple:")
            emit(child, var, inner, pad + "    ")
            lines.append(f"{pad}    {var} = {inner}")
        lines.append(f"{pad}{target} = _new{k}()")
        lines.extend(f"{pad}{target}.{name} = {var}"
                     for name, var in zip(names, local, strict=True))

    emit(type(message), "_value", "o", "    ")
    lines.append("    return o")
    exec(compile("\n".join(lines) + "\n", "<bench object builder>", "exec"), env)
    build: Callable[[], Message] = env["_build"]
    if build() != message:
        raise SystemExit("the object builder does not rebuild the decoded message")
    if size < _PAUSE_GC_ABOVE:
        return build

    def paused() -> Message:
        gc.disable()
        try:
            return build()
        finally:
            gc.enable()
    return paused


def decode_amplification(decode_once: Callable[[], object], size: int) -> float:
    """Peak bytes traced while decoding once, per byte of input (result kept alive)."""
    gc.collect()
    tracemalloc.start()
    try:
        result = decode_once()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak / size


AMPLIFICATION: list[tuple[str, float, float]] = []
# (case, building time, kafka-python decode time, kclient decode time)
CEILING: list[tuple[str, float, float, float]] = []


def run_case(label: str, name: str, version: int, value: dict[str, Any], number: int,
             repeat: int) -> list[tuple[str, float, float]]:
    kp_cls = kafka_python_class(name)
    data = encode(name, version, value)
    kp_message = kp_cls.decode(data, version=version)
    try:
        kp_message.header  # noqa: B018
    except AttributeError:
        kp_message._header = None  # kafka-python's decode skips __init__, which sets it
    kp_bytes = kp_message.encode(version=version)
    if kp_bytes != data:
        raise SystemExit(f"{label}: kafka-python and kclient disagree on the bytes")
    ours = decode(name, version, data)
    if encode(name, version, ours) != data:
        raise SystemExit(f"{label}: kclient does not round-trip")
    AMPLIFICATION.append((f"{label} ({len(data):,} B)",
                          decode_amplification(lambda: decode(name, version, data), len(data)),
                          decode_amplification(lambda: kp_cls.decode(data, version=version),
                                               len(data))))
    rows = []
    ours_decode, theirs_decode, building = best_of(
        (lambda: decode(name, version, data), lambda: kp_cls.decode(data, version=version),
         object_builder(ours, len(data))), repeat, number)
    rows.append((f"{label} decode ({len(data):,} B)", ours_decode, theirs_decode))
    CEILING.append((label, building, theirs_decode, ours_decode))
    ours_encode, theirs_encode = best_of_pair(
        lambda: encode(name, version, ours), lambda: kp_message.encode(version=version),
        repeat, number)
    rows.append((f"{label} encode ({len(data):,} B)", ours_encode, theirs_encode))
    # Encoding straight from plain dicts includes building the message objects;
    # kafka-python's side still starts from its ready objects, so this ratio is
    # the conservative one.
    plain = ours.to_dict()  # snake_case names, as applications write them
    ours_plain, theirs_encode = best_of_pair(
        lambda: encode(name, version, plain), lambda: kp_message.encode(version=version),
        repeat, number)
    rows.append((f"{label} encode from dict", ours_plain, theirs_encode))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks codec", description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    rows = run_case("ApiVersionsResponse v3", "ApiVersionsResponse", 3, api_versions_v3(),
                    max(1, 2000 // scale), args.repeat)
    rows += run_case("MetadataResponse v12", "MetadataResponse", 12, metadata_v12(),
                     max(1, 5 // scale), args.repeat)
    for label, name, version, value, loops in family_cases():
        rows += run_case(label, name, version, value, max(1, loops // scale), args.repeat)
    print(f"{'case':44} {'kclient':>12} {'kafka-python':>14} {'ratio':>8}")
    for label, ours, theirs in rows:
        print(f"{label:44} {ours * 1e3:10.3f}ms {theirs * 1e3:12.3f}ms {theirs / ours:7.2f}x")
    print("goal: decode >= 3x, encode >= 2x (ratio = kafka-python time / kclient time)")
    print()
    print(f"{'decode ceiling':44} {'building':>12} {'ceiling':>14} {'share':>8}")
    for label, building, theirs, ours in CEILING:
        print(f"{label:44} {building * 1e3:10.3f}ms {theirs / building:13.2f}x "
              f"{building / ours:7.0%}")
    print("building = making kclient's decoded objects from given values (no parsing); "
          "ceiling = kafka-python decode / building; share = building / kclient decode")
    print()
    print(f"{'decode memory amplification':44} {'kclient':>12} {'kafka-python':>14}")
    for label, ours_amp, theirs_amp in AMPLIFICATION:
        print(f"{label:44} {ours_amp:10.1f}B/B {theirs_amp:12.1f}B/B")
    values = sorted(a for _, a, _ in AMPLIFICATION)
    print(f"kclient: median {values[len(values) // 2]:.1f} B/B, worst {values[-1]:.1f} B/B "
          "(peak traced bytes during one decode per input byte)")


if __name__ == "__main__":
    main()
